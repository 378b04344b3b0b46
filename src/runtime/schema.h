/*
 * DESIGN: a named, typed row layout (a table's columns, an operator's output).
 * Names are stored as written in CREATE TABLE or as aliases; lookups are case-insensitive.
 */
#ifndef CK_RUNTIME_SCHEMA_H
#define CK_RUNTIME_SCHEMA_H

#include "base/arena.h"
#include "runtime/types.h"

typedef struct ck_schema {
  int ncols;
  const char **names;
  ck_type_t *types;
} ck_schema_t;

ck_schema_t ck_schema_make(ck_arena_t *arena, int ncols);
int ck_schema_find(const ck_schema_t *schema, const char *name); /* -1 when absent */

#endif
