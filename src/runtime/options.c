/* DESIGN: see options.h. */
#include "runtime/options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/redact.h"

const char *ck_options_get(const ck_options_t *opts, const char *key) {
  for (int i = 0; opts && i < opts->n; i++)
    if (strcmp(opts->keys[i], key) == 0) return opts->values[i];
  return NULL;
}

static const ck_opt_def_t *find_def(const ck_opt_def_t *defs, const char *key) {
  for (const ck_opt_def_t *d = defs; d && d->name; d++) {
    size_t n = strlen(d->name);
    bool prefix = n && d->name[n - 1] == '.'; /* "kafka." admits "kafka.<anything>", not itself */
    if (!prefix && strcmp(d->name, key) == 0) return d;
    if (prefix && strncmp(d->name, key, n) == 0 && key[n]) return d;
  }
  return NULL;
}

const char *ck_opt_str(const ck_options_t *opts, const ck_opt_def_t *defs, const char *key) {
  const char *v = ck_options_get(opts, key);
  if (v) return v;
  const ck_opt_def_t *d = find_def(defs, key);
  return d ? d->default_value : NULL;
}

int64_t ck_opt_int(const ck_options_t *opts, const ck_opt_def_t *defs, const char *key) {
  const char *v = ck_opt_str(opts, defs, key);
  return v ? strtoll(v, NULL, 10) : 0;
}

bool ck_opt_bool(const ck_options_t *opts, const ck_opt_def_t *defs, const char *key) {
  const char *v = ck_opt_str(opts, defs, key);
  return v && ck_streq_i(v, "true");
}

static bool parse_int(const char *s) {
  if (!*s) return false;
  char *end;
  errno = 0;
  (void)strtoll(s, &end, 10);
  return errno == 0 && *end == 0;
}

static bool enum_has(const char *choices, const char *v) {
  size_t n = strlen(v);
  for (const char *p = choices; p && *p;) {
    size_t len = strcspn(p, "|");
    if (len == n && strncmp(p, v, n) == 0) return true;
    p += len + (p[len] == '|');
  }
  return false;
}

int ck_options_validate(const ck_options_t *opts, const ck_opt_def_t *const *tables,
                        int ntables, const char *what, ck_error_t *err) {
  /* every credential the options hold is masked wherever it shows up later (base/redact.h) */
  for (int i = 0; i < opts->n; i++) ck_redact_remember_option(opts->keys[i], opts->values[i]);
  for (int i = 0; i < opts->n; i++) {
    const char *key = opts->keys[i], *val = opts->values[i];
    const ck_opt_def_t *d = NULL;
    for (int t = 0; t < ntables && !d; t++) d = find_def(tables[t], key);
    if (!d) {
      const char *names[256];
      size_t n = 0;
      for (int t = 0; t < ntables; t++)
        for (const ck_opt_def_t *x = tables[t]; x && x->name && n < 256; x++) names[n++] = x->name;
      ck_error_set(err, CK_EOPTION, "unknown option '%s' for %s", key, what);
      const char *close = ck_closest(key, names, n);
      if (close) ck_error_hint(err, "did you mean '%s'?", close);
      else ck_error_hint(err, "run 'clink connectors' to list the options");
      return CK_EOPTION;
    }
    switch (d->type) {
      case CK_OPT_INT:
        if (!parse_int(val))
          return ck_error_set(err, CK_EOPTION, "option '%s' of %s must be an integer, not '%s'",
                              key, what, val);
        break;
      case CK_OPT_BOOL:
        if (!ck_streq_i(val, "true") && !ck_streq_i(val, "false"))
          return ck_error_set(err, CK_EOPTION,
                              "option '%s' of %s must be 'true' or 'false', not '%s'", key, what,
                              val);
        break;
      case CK_OPT_ENUM:
        if (!enum_has(d->choices, val)) {
          ck_error_set(err, CK_EOPTION, "option '%s' of %s must be one of %s, not '%s'", key,
                       what, d->choices, val);
          return CK_EOPTION;
        }
        break;
      case CK_OPT_STRING: break;
    }
  }
  for (int t = 0; t < ntables; t++)
    for (const ck_opt_def_t *d = tables[t]; d && d->name; d++)
      if (d->required && !ck_options_get(opts, d->name))
        return ck_error_set(err, CK_EOPTION, "%s needs option '%s' (%s)", what, d->name,
                            d->description);
  return 0;
}
