/*
 * DESIGN: connector options — the one table per connector of every `WITH (key = 'value')`
 * option it accepts, with type, default and description. The planner validates a table's
 * options against it (an unknown option is an error naming the closest valid one), `clink
 * connectors` prints it, and docs/connectors.md is generated from it.
 */
#ifndef CK_RUNTIME_OPTIONS_H
#define CK_RUNTIME_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/error.h"

typedef enum ck_opt_type {
  CK_OPT_STRING,
  CK_OPT_INT,    /* a base-10 integer (may be negative) */
  CK_OPT_BOOL,   /* true|false */
  CK_OPT_ENUM,   /* one of `choices`, "a|b|c" */
} ck_opt_type_t;

typedef struct ck_opt_def {
  const char *name;
  ck_opt_type_t type;
  const char *default_value; /* NULL: no default */
  const char *choices;       /* CK_OPT_ENUM */
  bool required;
  const char *description;
} ck_opt_def_t;

/* A table's WITH options, as written. */
typedef struct ck_options {
  int n;
  const char **keys;
  const char **values;
} ck_options_t;

const char *ck_options_get(const ck_options_t *opts, const char *key); /* NULL when absent */
/* Typed getters that fall back to the definition's default; they never fail because the
 * options were validated at plan time. */
const char *ck_opt_str(const ck_options_t *opts, const ck_opt_def_t *defs, const char *key);
int64_t ck_opt_int(const ck_options_t *opts, const ck_opt_def_t *defs, const char *key);
bool ck_opt_bool(const ck_options_t *opts, const ck_opt_def_t *defs, const char *key);

/* Checks every option in opts against the NULL-terminated tables (any of them may define it;
 * a key with a prefix ending in '.' in a table, like "kafka.", admits any key under it),
 * checks types and required options. err names the option and the closest valid one. */
int ck_options_validate(const ck_options_t *opts, const ck_opt_def_t *const *tables,
                        int ntables, const char *what, ck_error_t *err);

#endif
