/* DESIGN: see schema.h. */
#include "runtime/schema.h"

#include "base/buf.h"

ck_schema_t ck_schema_make(ck_arena_t *arena, int ncols) {
  ck_schema_t s;
  s.ncols = ncols;
  s.names = ck_arena_zalloc(arena, sizeof(char *) * (size_t)(ncols ? ncols : 1));
  s.types = ck_arena_zalloc(arena, sizeof(ck_type_t) * (size_t)(ncols ? ncols : 1));
  return s;
}

int ck_schema_find(const ck_schema_t *schema, const char *name) {
  for (int i = 0; i < schema->ncols; i++)
    if (ck_streq_i(schema->names[i], name)) return i;
  return -1;
}
