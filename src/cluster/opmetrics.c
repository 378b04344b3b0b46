/* DESIGN: see opmetrics.h. */
#include "cluster/opmetrics.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/metrics.h"

void ck_opmetrics_prom_header(ck_buf_t *out, int m) {
  const ck_metric_def_t *d = &ck_metric_defs[m];
  ck_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", d->prom, d->help, d->prom, d->kind);
}

/* The value of "key": inside the object [p, end): its first byte, or NULL. */
static const char *field(const char *p, const char *end, const char *key) {
  size_t kl = strlen(key);
  for (const char *q = p; q + kl + 3 <= end; q++) {
    if (*q != '"' || strncmp(q + 1, key, kl) != 0 || q[kl + 1] != '"' || q[kl + 2] != ':')
      continue;
    return q + kl + 3;
  }
  return NULL;
}

/* A label value: the JSON string at v (escapes kept as they are, which Prometheus reads the
 * same way for \\ and \"), or a JSON number. */
static void put_label(ck_buf_t *out, const char *name, const char *v, const char *end) {
  ck_buf_printf(out, "%s=\"", name);
  if (v && v < end && *v == '"') {
    for (const char *q = v + 1; q < end && *q != '"'; q++) {
      if (*q == '\\' && q + 1 < end) {
        if (q[1] == '"' || q[1] == '\\' || q[1] == 'n') ck_buf_append(out, q, 2);
        q++;
        continue;
      }
      ck_buf_putc(out, *q);
    }
  } else if (v) {
    for (const char *q = v; q < end && (*q == '-' || (*q >= '0' && *q <= '9')); q++)
      ck_buf_putc(out, *q);
  }
  ck_buf_putc(out, '"');
}

static void put_plain_label(ck_buf_t *out, const char *name, const char *s) {
  ck_buf_printf(out, "%s=\"", name);
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\') ck_buf_putc(out, '\\');
    if (*s == '\n') {
      ck_buf_puts(out, "\\n");
      continue;
    }
    ck_buf_putc(out, *s);
  }
  ck_buf_putc(out, '"');
}

void ck_opmetrics_prom_samples(ck_buf_t *out, int m, int64_t job, const char *worker,
                               const char *json) {
  const ck_metric_def_t *d = &ck_metric_defs[m];
  for (const char *p = json ? strchr(json, '{') : NULL; p; p = strchr(p, '{')) {
    /* the objects are flat: the next '}' outside a string ends this one */
    const char *end = p + 1;
    for (bool str = false; *end && (str || *end != '}'); end++) {
      if (str && *end == '\\' && end[1]) end++;
      else if (*end == '"') str = !str;
    }
    if (!*end) break;
    const char *v = field(p, end, d->key);
    if (v && (*v == '-' || (*v >= '0' && *v <= '9'))) {
      ck_buf_printf(out, "%s{job=\"%lld\",", d->prom, (long long)job);
      put_label(out, "node", field(p, end, "node"), end);
      ck_buf_putc(out, ',');
      put_label(out, "operator", field(p, end, "name"), end);
      ck_buf_putc(out, ',');
      put_label(out, "subtask", field(p, end, "subtask"), end);
      ck_buf_putc(out, ',');
      put_plain_label(out, "worker", worker);
      ck_buf_printf(out, "} %lld\n", strtoll(v, NULL, 10));
    }
    p = end + 1;
  }
}

void ck_opmetrics_markdown(ck_buf_t *out) {
  static const char *const scopes[] = {"operator", "job", "cluster"};
  ck_buf_puts(out, "| Prometheus (`/metrics`) | Per | Key (operators route) | Kind | Unit | "
                   "Counted in | Meaning |\n|---|---|---|---|---|---|---|\n");
  for (int m = 0; m < CK_METRIC_COUNT; m++) {
    const ck_metric_def_t *d = &ck_metric_defs[m];
    ck_buf_printf(out, "| `%s` | %s | ", d->prom, scopes[d->scope]);
    if (d->key) ck_buf_printf(out, "`%s`", d->key);
    else ck_buf_puts(out, "—");
    ck_buf_printf(out, " | %s | %s | `src/%s` | %s |\n", d->kind, d->unit, d->where, d->help);
  }
}
