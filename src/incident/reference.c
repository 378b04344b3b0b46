/*
 * DESIGN: see reference.h. The fingerprint text here and in python/clink-reference/scope.py
 * are one format (docs/incidents.md); tests/incident/test_reference.py holds the two to the
 * same bytes.
 */
#include "incident/reference.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/digest.h"
#include "incident/bundle_int.h"

/* ---- the fingerprint text */

static int field(ck_buf_t *out, const ck_json_t *v, const char *what, ck_error_t *err) {
  ck_buf_putc(out, ' ');
  if (ck_json_is_null(v)) {
    ck_buf_putc(out, '-');
    return 0;
  }
  int64_t i;
  if (ck_json_int(v, &i)) {
    ck_buf_printf(out, "%lld", (long long)i);
    return 0;
  }
  const char *s = ck_json_str(v);
  if (!s) return ck_error_set(err, CK_EINVAL, "the scope's %s is neither a string, an integer nor null", what);
  if (!*s) {
    ck_buf_putc(out, '-');
    return 0;
  }
  for (const char *p = s; *p; p++)
    if (isspace((unsigned char)*p))
      return ck_error_set(err, CK_EINVAL, "the scope's %s \"%s\" holds white space", what, s);
  ck_buf_puts(out, s);
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_part(const void *a, const void *b) {
  int64_t x = ck_json_get_int(*(const ck_json_t *const *)a, "partition", 0);
  int64_t y = ck_json_get_int(*(const ck_json_t *const *)b, "partition", 0);
  return (x > y) - (x < y);
}

int ck_reference_fingerprint_text(const ck_json_t *scope, int ncols, const ck_reference_col_t *cols,
                                  ck_buf_t *out, ck_error_t *err) {
  int rc = 0;
  const char **atts = NULL;
  const ck_json_t **parts = NULL;
  ck_buf_puts(out, CK_REFERENCE_FP_HEAD "\njob");
  const ck_json_t *job = ck_json_get(scope, "job");
  if ((rc = field(out, ck_json_get(job, "id"), "job id", err)) ||
      (rc = field(out, ck_json_get(job, "fingerprint"), "job fingerprint", err)))
    goto fail;
  ck_buf_puts(out, "\ncheckpoint");
  if ((rc = field(out, ck_json_get(scope, "checkpoint"), "checkpoint", err))) goto fail;
  ck_buf_puts(out, "\nstart");
  const ck_json_t *start = ck_json_get(scope, "start");
  if ((rc = field(out, ck_json_get(start, "checkpoint"), "start checkpoint", err)) ||
      (rc = field(out, ck_json_get(start, "restored_from"), "restored_from", err)))
    goto fail;
  ck_buf_putc(out, '\n');
  /* every distinct attempt, sorted */
  const ck_json_t *sinks = ck_json_get(scope, "sinks");
  int cap = 1;
  for (int i = 0; sinks && i < sinks->n; i++) {
    const ck_json_t *st = ck_json_get(sinks->items[i], "subtasks");
    cap += st ? st->n : 0;
  }
  atts = calloc((size_t)cap, sizeof *atts);
  int na = 0;
  const char *a0 = ck_json_get_str(scope, "attempt");
  if (a0 && *a0) atts[na++] = a0;
  for (int i = 0; sinks && i < sinks->n; i++) {
    const ck_json_t *st = ck_json_get(sinks->items[i], "subtasks");
    for (int j = 0; st && j < st->n; j++) {
      const char *a = ck_json_get_str(st->items[j], "attempt");
      if (a && *a) atts[na++] = a;
    }
  }
  qsort(atts, (size_t)na, sizeof *atts, cmp_str);
  for (int i = 0; i < na; i++) {
    if (i && strcmp(atts[i], atts[i - 1]) == 0) continue;
    for (const char *p = atts[i]; *p; p++)
      if (isspace((unsigned char)*p)) {
        rc = ck_error_set(err, CK_EINVAL, "the scope's attempt \"%s\" holds white space", atts[i]);
        goto fail;
      }
    ck_buf_printf(out, "attempt %s\n", atts[i]);
  }
  const ck_json_t *ivs = ck_json_get(scope, "intervals");
  for (int i = 0; ivs && i < ivs->n; i++) {
    ck_buf_puts(out, "interval");
    if ((rc = field(out, ck_json_get(ivs->items[i], "checkpoint"), "interval", err)) ||
        (rc = field(out, ck_json_get(ivs->items[i], "previous_barrier"), "previous_barrier", err)))
      goto fail;
    ck_buf_putc(out, '\n');
  }
  const ck_json_t *srcs = ck_json_get(scope, "sources");
  for (int i = 0; srcs && i < srcs->n; i++) {
    const ck_json_t *s = srcs->items[i];
    const char *conn = ck_json_get_str(s, "connector");
    if (!conn || strcmp(conn, "kafka") != 0) continue;
    const ck_json_t *op = ck_json_get(s, "op");
    ck_buf_puts(out, "source");
    if ((rc = field(out, op, "source op", err)) ||
        (rc = field(out, ck_json_get(s, "topic"), "topic", err)) ||
        (rc = field(out, ck_json_get(s, "cluster_id"), "cluster id", err)) ||
        (rc = field(out, ck_json_get(s, "topic_id"), "topic id", err)))
      goto fail;
    const char *iso = ck_json_get_str(s, "isolation_level");
    ck_buf_printf(out, " %s\n", iso && *iso ? iso : "read_committed");
    const ck_json_t *ps = ck_json_get(s, "partitions");
    int np = ps && ps->kind == CK_JSON_ARRAY ? ps->n : 0;
    free(parts);
    parts = calloc((size_t)np + 1, sizeof *parts);
    for (int j = 0; j < np; j++) parts[j] = ps->items[j];
    qsort(parts, (size_t)np, sizeof *parts, cmp_part);
    for (int j = 0; j < np; j++) {
      ck_buf_puts(out, "partition");
      if ((rc = field(out, op, "source op", err)) ||
          (rc = field(out, ck_json_get(parts[j], "partition"), "partition", err)) ||
          (rc = field(out, ck_json_get(parts[j], "from"), "from", err)) ||
          (rc = field(out, ck_json_get(parts[j], "to"), "to", err)))
        goto fail;
      ck_buf_putc(out, '\n');
    }
  }
  for (int i = 0; i < ncols; i++) {
    const char *n = cols[i].name, *t = cols[i].type;
    if (!n || !*n || !t || !*t) {
      rc = ck_error_set(err, CK_EINVAL, "column %d has no name or type", i + 1);
      goto fail;
    }
    for (const char *p = n; *p; p++)
      if (isspace((unsigned char)*p)) {
        rc = ck_error_set(err, CK_EINVAL, "the column name \"%s\" holds white space", n);
        goto fail;
      }
    ck_buf_printf(out, "column %s ", n);
    for (const char *p = t; *p; p++)
      if (*p != ' ') ck_buf_putc(out, *p);
    ck_buf_printf(out, " %s\n", cols[i].key ? "key" : "-");
  }
fail:
  free(atts);
  free(parts);
  return rc;
}

/* ---- reading the artifact */

static int bad(ck_error_t *err, const char *path, const char *fmt, const char *what) {
  return ck_error_set(err, CK_EDECODE, "could not read the reference artifact %s: %s%s", path, fmt,
                      what ? what : "");
}

static void hex_of(const char *p, size_t n, char out[65]) { ck_sha256_hex(p, n, out); }

int ck_reference_read(const char *path, ck_reference_t *ref, ck_error_t *err) {
  memset(ref, 0, sizeof *ref);
  ck_arena_init(&ref->arena, 1 << 16);
  ck_buf_init(&ref->text);
  int rc = ck_bundle_read_file(path, &ref->text, err);
  if (rc) return rc;
  const char *d = ref->text.data ? ref->text.data : "";
  size_t n = ref->text.len;
  if (n == 0 || d[n - 1] != '\n') return bad(err, path, "unfinished (the last line has no end of line)", NULL);
  /* the lines: [0, n-1) split on '\n' */
  size_t nl = 0;
  for (size_t i = 0; i < n; i++) nl += d[i] == '\n';
  if (nl < 2) return bad(err, path, "unfinished (no end line)", NULL);
  size_t *start = ck_arena_alloc(&ref->arena, (nl + 1) * sizeof *start);
  size_t k = 0;
  start[k++] = 0;
  for (size_t i = 0; i < n; i++)
    if (d[i] == '\n') start[k++] = i + 1;
  /* line j is d[start[j], start[j+1]-1) */
  size_t last = nl - 1;
  ck_json_t *end = NULL, *hdr = NULL;
  ck_error_t jerr;
  ck_error_clear(&jerr);
  if (ck_json_parse(d + start[last], start[last + 1] - 1 - start[last], &ref->arena, &end, &jerr) ||
      !ck_json_get_str(end, "end") || strcmp(ck_json_get_str(end, "end"), CK_REFERENCE_FORMAT) != 0)
    return bad(err, path, "unfinished (the last line is not the end line)", NULL);
  ck_error_clear(&jerr);
  if (ck_json_parse(d, start[1] - 1, &ref->arena, &hdr, &jerr))
    return bad(err, path, "line 1 is not JSON: ", jerr.message);
  const char *fmt = ck_json_get_str(hdr, "format");
  if (!fmt || strcmp(fmt, CK_REFERENCE_FORMAT) != 0)
    return bad(err, path, "not a reference artifact: its format is not " CK_REFERENCE_FORMAT, NULL);
  if (ck_json_get_int(hdr, "version", -1) != CK_REFERENCE_VERSION)
    return bad(err, path, "an artifact version this clink does not read (it reads 1)", NULL);
  char hex[65];
  hex_of(d, start[1] - 1, hex);
  const char *hh = ck_json_get_str(end, "header_sha256");
  if (!hh || strcmp(hh, hex) != 0) return bad(err, path, "the header does not match the end line's hash", NULL);
  hex_of(d + start[1], start[last] - start[1], hex);
  const char *rh = ck_json_get_str(end, "rows_sha256");
  if (!rh || strcmp(rh, hex) != 0) return bad(err, path, "the rows do not match the end line's hash", NULL);
  ref->nrows = (int64_t)last - 1;
  if (ck_json_get_int(end, "rows", -1) != ref->nrows)
    return bad(err, path, "the row count is not the end line's", NULL);
  ref->header = hdr;
  ref->fingerprint = ck_json_get_str(hdr, "fingerprint");
  const char *st = ck_json_get_str(hdr, "status");
  ref->complete = st && strcmp(st, "complete") == 0;
  ref->incomplete = ck_json_get(hdr, "incomplete");
  ref->recorded = ck_json_get(hdr, "reference");
  ref->read = ck_json_get(hdr, "read");
  const ck_json_t *cols = ck_json_get(hdr, "columns");
  if (!cols || cols->kind != CK_JSON_ARRAY || cols->n == 0)
    return bad(err, path, "the header has no columns", NULL);
  ref->ncols = cols->n;
  ref->cols = ck_arena_zalloc(&ref->arena, (size_t)cols->n * sizeof *ref->cols);
  for (int i = 0; i < cols->n; i++) {
    ref->cols[i].name = ck_json_get_str(cols->items[i], "name");
    ref->cols[i].type = ck_json_get_str(cols->items[i], "type");
    ref->cols[i].key = ck_json_get_bool(cols->items[i], "key", false);
    if (!ref->cols[i].name || !ref->cols[i].type) return bad(err, path, "a column without a name or type", NULL);
  }
  const char *stext = ck_json_get_str(hdr, "scope");
  ck_json_t *scope = NULL;
  ck_error_clear(&jerr);
  if (!stext || ck_json_parse(stext, ck_json_get(hdr, "scope")->len, &ref->arena, &scope, &jerr))
    return bad(err, path, "the header's scope is not a scope document", NULL);
  ref->scope = scope;
  ck_buf_t fp;
  ck_buf_init(&fp);
  rc = ck_reference_fingerprint_text(scope, ref->ncols, ref->cols, &fp, err);
  if (!rc) {
    hex_of(fp.data, fp.len, hex);
    if (!ref->fingerprint || strcmp(ref->fingerprint, hex) != 0)
      rc = bad(err, path, "the fingerprint is not its scope's", NULL);
  }
  ck_buf_fini(&fp);
  if (rc) return rc;
  ref->rows = ck_arena_zalloc(&ref->arena, (size_t)(ref->nrows + 1) * sizeof *ref->rows);
  for (int64_t r = 0; r < ref->nrows; r++) {
    ck_json_t *row = NULL;
    size_t j = (size_t)r + 1;
    ck_error_clear(&jerr);
    if (ck_json_parse(d + start[j], start[j + 1] - 1 - start[j], &ref->arena, &row, &jerr) ||
        row->kind != CK_JSON_ARRAY || row->n != ref->ncols) {
      char where[64];
      snprintf(where, sizeof where, "%lld", (long long)j + 1);
      return ck_error_set(err, CK_EDECODE,
                          "could not read the reference artifact %s: line %s is not a row of %d cells",
                          path, where, ref->ncols);
    }
    ref->rows[r] = row;
  }
  return 0;
}

void ck_reference_fini(ck_reference_t *ref) {
  ck_buf_fini(&ref->text);
  ck_arena_fini(&ref->arena);
  memset(ref, 0, sizeof *ref);
}

/* ---- binding */

static const char *const fp_names[][2] = {
    {"job", "the job (id and fingerprint)"}, {"checkpoint", "the checkpoint"},
    {"start", "the start (checkpoint, restored_from)"}, {"attempt", "the run attempts"},
    {"interval", "the intervals"}, {"source", "a source's log (topic, cluster id, topic id, isolation level)"},
    {"partition", "a partition's range"}, {"column", "the output columns"},
};

static void line_at(const ck_buf_t *b, size_t *pos, const char **s, size_t *n) {
  const char *d = b->data ? b->data : "";
  *s = d + *pos;
  const char *e = memchr(*s, '\n', b->len - *pos);
  *n = e ? (size_t)(e - *s) : b->len - *pos;
  *pos += *n + (e ? 1 : 0);
}

int ck_reference_bind(const ck_reference_t *ref, const ck_json_t *bundle_scope, ck_error_t *err) {
  ck_buf_t a, b;
  ck_buf_init(&a);
  ck_buf_init(&b);
  int rc = ck_reference_fingerprint_text(ref->scope, ref->ncols, ref->cols, &a, err);
  if (!rc) rc = ck_reference_fingerprint_text(bundle_scope, ref->ncols, ref->cols, &b, err);
  if (!rc && (a.len != b.len || memcmp(a.data, b.data, a.len) != 0)) {
    size_t pa = 0, pb = 0;
    const char *la = "", *lb = "";
    size_t na = 0, nb = 0;
    while (pa < a.len || pb < b.len) {
      line_at(&a, &pa, &la, &na);
      line_at(&b, &pb, &lb, &nb);
      if (na != nb || memcmp(la, lb, na) != 0) break;
    }
    const char *what = "the scope";
    const char *l = na ? la : lb;
    for (size_t i = 0; i < sizeof fp_names / sizeof fp_names[0]; i++) {
      size_t k = strlen(fp_names[i][0]);
      if (strncmp(l, fp_names[i][0], k) == 0 && l[k] == ' ') what = fp_names[i][1];
    }
    rc = ck_error_set(err, CK_ESTATE,
                      "the reference is for another scope: %s differs (the artifact's \"%.*s\", "
                      "the bundle's \"%.*s\")",
                      what, (int)na, na ? la : "(none)", (int)nb, nb ? lb : "(none)");
  }
  ck_buf_fini(&a);
  ck_buf_fini(&b);
  return rc;
}

/* ---- cells */

static bool parse_i128(const char *s, __int128 *out) {
  bool neg = *s == '-';
  if (neg) s++;
  if (!*s) return false;
  unsigned __int128 v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return false;
    if (v > ((unsigned __int128)1 << 126) / 5) return false; /* well past every supported width */
    v = v * 10 + (unsigned)(*s - '0');
  }
  *out = neg ? -(__int128)v : (__int128)v;
  return true;
}

static bool parse_bits(const char *s, int digits, uint64_t *out) {
  if (s[0] != '0' || s[1] != 'x' || (int)strlen(s + 2) != digits) return false;
  uint64_t v = 0;
  for (const char *p = s + 2; *p; p++) {
    int h = isdigit((unsigned char)*p) ? *p - '0' : (*p >= 'a' && *p <= 'f') ? *p - 'a' + 10 : -1;
    if (h < 0) return false;
    v = v << 4 | (uint64_t)h;
  }
  *out = v;
  return true;
}

int ck_reference_row_cells(const ck_reference_t *ref, int64_t row, const ck_cell_rule_t *rules,
                           ck_arena_t *arena, ck_cell_t *out, ck_error_t *err) {
  const ck_json_t *r = ref->rows[row];
  for (int c = 0; c < ref->ncols; c++) {
    const ck_json_t *v = r->items[c];
    ck_cell_t *o = &out[c];
    memset(o, 0, sizeof *o);
    const char *s = ck_json_str(v);
    bool ok = true;
    if (ck_json_is_null(v)) {
      o->kind = CK_CELL_NULL;
    } else if (v->kind == CK_JSON_OBJECT && ck_json_get(v, "inexact")) {
      o->kind = CK_CELL_INEXACT;
    } else if (rules[c].cls == CK_CELLS_STRING) {
      const char *hex = ck_json_get_str(v, "hex");
      o->kind = CK_CELL_BYTES;
      if (s) {
        o->len = (uint32_t)v->len;
        o->v.bytes = ck_arena_strndup(arena, s, v->len);
      } else if (hex && strlen(hex) % 2 == 0) {
        size_t n = strlen(hex) / 2;
        char *b = ck_arena_alloc(arena, n + 1);
        for (size_t i = 0; i < n && ok; i++) {
          uint64_t x;
          char two[5] = {'0', 'x', hex[2 * i], hex[2 * i + 1], 0};
          ok = parse_bits(two, 2, &x);
          b[i] = (char)x;
        }
        o->len = (uint32_t)n;
        o->v.bytes = b;
      } else {
        ok = false;
      }
    } else if (!s) {
      ok = false;
    } else if (rules[c].cls == CK_CELLS_F32) {
      o->kind = CK_CELL_F32;
      ok = parse_bits(s, 8, &o->v.bits);
    } else if (rules[c].cls == CK_CELLS_F64) {
      o->kind = CK_CELL_F64;
      ok = parse_bits(s, 16, &o->v.bits);
    } else {
      o->kind = CK_CELL_INT;
      ok = parse_i128(s, &o->v.i);
    }
    if (!ok)
      return ck_error_set(err, CK_EDECODE,
                          "the reference's row %lld, column %s: not a canonical %s cell",
                          (long long)row + 1, ref->cols[c].name, rules[c].ch_name);
  }
  return 0;
}
