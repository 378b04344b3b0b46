/* An empty translation unit so a module with no sources yet still builds a library. */
typedef int ck_empty_unit_t;
