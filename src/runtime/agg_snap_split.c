/*
 * DESIGN: the aggregation operator's snapshot encoding (agg_snap.c) cut into entries for the
 * snapshot file's rows (checkpoint/store.h), and each entry decoded for `clink state-cat`.
 *
 * It reads nothing but the encoding: the shape at its head (window, key types, calls) says how
 * long each record is, so the same code serves the writer (no operator at hand on the writer
 * path's row loop) and the tools (no plan at all). Entries, in encoding order:
 *   <raw>          "CKAG", version, shape, watermark, record count (the header)
 *   win / group    one per record (windowed / unwindowed): its bytes from the key group on,
 *                  user_key the group key as JSON (one key: the value, several: an array)
 * so the concatenation of the entries' values is the encoding, byte for byte.
 * Decoded (JSON): the header gives window kind and sizes, key and call types, maximum
 * parallelism, watermark and the number of entries; a record its window bounds, key and each
 * accumulator (COUNT's count; SUM's sum; AVG's sum, count and average; MIN/MAX's value; the
 * DISTINCT values) and, unwindowed, the values last emitted.
 * Threads: any; no state.
 */
#include <stdio.h>

#include "base/alloc.h"
#include "checkpoint/store.h"
#include "runtime/agg.h"
#include "runtime/types.h"

#define MAX_COLS 256

typedef struct shape {
  int version;
  int wkind;
  int nkeys, ncalls;
  ck_type_t ktype[MAX_COLS];
  ck_agg_vcat_t kcat[MAX_COLS];
  struct call {
    int fn;
    bool distinct;
    ck_type_t arg, res;
    ck_agg_acc_kind_t kind;
    ck_agg_vcat_t acat, rcat;
  } call[MAX_COLS];
} shape_t;

typedef struct rdr {
  const uint8_t *p;
  size_t n, off;
  bool bad;
} rdr_t;

static const uint8_t *take(rdr_t *r, size_t n) {
  if (r->bad || r->n - r->off < n) {
    r->bad = true;
    return NULL;
  }
  const uint8_t *p = r->p + r->off;
  r->off += n;
  return p;
}
static uint64_t get_n(rdr_t *r, size_t n) {
  uint64_t v = 0;
  const uint8_t *p = take(r, n);
  if (p) memcpy(&v, p, n);
  return v;
}

static ck_type_t get_type(rdr_t *r) {
  ck_type_t t;
  memset(&t, 0, sizeof t);
  t.id = (ck_type_id_t)get_n(r, 1);
  t.precision = (uint8_t)get_n(r, 1);
  t.scale = (uint8_t)get_n(r, 1);
  return t;
}

/* The accumulator kind planned for a call (as agg_op.c's plan_call picks it). */
static ck_agg_acc_kind_t kind_of(int fn, ck_type_t arg) {
  bool integer = arg.id == CK_T_INT32 || arg.id == CK_T_INT64;
  bool dec = arg.id == CK_T_DECIMAL;
  switch (fn) {
    case CK_AGG_SUM: return integer ? CK_AGG_A_SUM_I : dec ? CK_AGG_A_SUM_D : CK_AGG_A_SUM_F;
    case CK_AGG_AVG: return integer ? CK_AGG_A_AVG_I : dec ? CK_AGG_A_AVG_D : CK_AGG_A_AVG_F;
    case CK_AGG_MIN:
    case CK_AGG_MAX: return CK_AGG_A_MINMAX;
    default: return CK_AGG_A_COUNT;
  }
}

static const char *const FN_NAMES[] = {"COUNT(*)", "COUNT", "SUM", "AVG", "MIN", "MAX"};
static const char *const WIN_NAMES[] = {"none", "tumble", "hop", "session", "cumulate"};

static void json_i128(ck_buf_t *j, ck_i128 v) {
  char tmp[48];
  int n = (int)sizeof tmp;
  bool neg = v < 0;
  unsigned __int128 u = neg ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
  if (u >> 64 == 0) { /* 64-bit division: the common case, and much cheaper */
    uint64_t w = (uint64_t)u;
    do {
      tmp[--n] = (char)('0' + (int)(w % 10));
      w /= 10;
    } while (w);
  } else {
    do {
      tmp[--n] = (char)('0' + (int)(u % 10));
      u /= 10;
    } while (u);
  }
  if (neg) tmp[--n] = '-';
  ck_buf_append(j, tmp + n, sizeof tmp - (size_t)n);
}

static void json_f64(ck_buf_t *j, double v) {
  if (v != v || v == 1.0 / 0.0 || v == -1.0 / 0.0) ck_buf_printf(j, "\"%g\"", v);
  else ck_buf_printf(j, "%.17g", v);
}

/* One value of category cat and type t: as JSON into j (when j is not NULL). */
static void get_value(rdr_t *r, ck_agg_vcat_t cat, ck_type_t t, ck_buf_t *j) {
  if (cat == CK_AGG_V_STR) {
    uint32_t len = (uint32_t)get_n(r, 4);
    const uint8_t *s = take(r, len);
    if (j) ck_buf_put_json_str(j, s ? (const char *)s : "", s ? len : 0);
    return;
  }
  int w = ck_agg_vcat_width(cat);
  const uint8_t *p = take(r, (size_t)w);
  if (!j) return;
  if (!p) {
    ck_buf_puts(j, "null");
    return;
  }
  switch (cat) {
    case CK_AGG_V_BOOL: ck_buf_puts(j, p[0] ? "true" : "false"); break;
    case CK_AGG_V_INT: {
      int64_t v;
      memcpy(&v, p, 8);
      json_i128(j, v);
      break;
    }
    case CK_AGG_V_FLOAT: {
      double v;
      memcpy(&v, p, 8);
      json_f64(j, v);
      break;
    }
    case CK_AGG_V_DEC: {
      ck_i128 v;
      memcpy(&v, p, 16);
      ck_buf_putc(j, '"');
      ck_decimal_format(v, t.scale, j);
      ck_buf_putc(j, '"');
      break;
    }
    default: break;
  }
}

static int64_t get_i64(rdr_t *r) { return (int64_t)get_n(r, 8); }
static ck_i128 get_i128(rdr_t *r) {
  ck_i128 v = 0;
  const uint8_t *p = take(r, 16);
  if (p) memcpy(&v, p, 16);
  return v;
}
static double get_f64(rdr_t *r) {
  double v = 0;
  const uint8_t *p = take(r, 8);
  if (p) memcpy(&v, p, 8);
  return v;
}

/* A double-double sum with its count of 2^1000 units, as JSON. */
static void json_ddsum(ck_buf_t *j, double hi, double lo, int64_t big) {
  json_f64(j, hi + lo);
  if (big) ck_buf_printf(j, ",\"big\":%lld", (long long)big);
}

static void get_acc(rdr_t *r, const shape_t *sh, const struct call *c, ck_buf_t *j) {
  if (j) ck_buf_printf(j, "{\"fn\":\"%s\"", FN_NAMES[c->fn >= 0 && c->fn <= 5 ? c->fn : 1]);
  bool v1 = sh->version == 1;
  switch (c->kind) {
    case CK_AGG_A_COUNT: {
      int64_t n = get_i64(r);
      if (j) ck_buf_printf(j, ",\"count\":%lld", (long long)n);
      break;
    }
    case CK_AGG_A_SUM_I:
    case CK_AGG_A_SUM_D: {
      bool has = get_n(r, 1);
      ck_i128 s = c->kind == CK_AGG_A_SUM_I && v1 ? (ck_i128)get_i64(r) : get_i128(r);
      if (!j) break;
      ck_buf_puts(j, ",\"sum\":");
      if (!has) ck_buf_puts(j, "null");
      else if (c->kind == CK_AGG_A_SUM_I) json_i128(j, s);
      else {
        ck_buf_putc(j, '"');
        ck_decimal_format(s, c->res.scale, j);
        ck_buf_putc(j, '"');
      }
      break;
    }
    case CK_AGG_A_SUM_F: {
      bool has = get_n(r, 1);
      double hi = get_f64(r), lo = get_f64(r);
      int64_t big = v1 ? 0 : get_i64(r);
      if (!j) break;
      ck_buf_puts(j, ",\"sum\":");
      if (!has) ck_buf_puts(j, "null");
      else json_ddsum(j, hi, lo, big);
      break;
    }
    case CK_AGG_A_AVG_I:
    case CK_AGG_A_AVG_D: {
      ck_i128 s = get_i128(r);
      int64_t n = get_i64(r);
      if (!j) break;
      ck_buf_puts(j, ",\"sum\":");
      if (c->kind == CK_AGG_A_AVG_I) json_i128(j, s);
      else {
        ck_buf_putc(j, '"');
        ck_decimal_format(s, c->arg.scale, j);
        ck_buf_putc(j, '"');
      }
      ck_buf_printf(j, ",\"count\":%lld,\"avg\":", (long long)n);
      if (n) json_f64(j, (double)s / (double)n / (c->kind == CK_AGG_A_AVG_D ?
                                                   (double)ck_pow10_i128(c->arg.scale) : 1.0));
      else ck_buf_puts(j, "null");
      break;
    }
    case CK_AGG_A_AVG_F: {
      double hi = get_f64(r), lo = get_f64(r);
      int64_t n = get_i64(r), big = v1 ? 0 : get_i64(r);
      if (!j) break;
      ck_buf_puts(j, ",\"sum\":");
      json_ddsum(j, hi, lo, big);
      ck_buf_printf(j, ",\"count\":%lld,\"avg\":", (long long)n);
      if (n && !big) json_f64(j, (hi + lo) / (double)n);
      else ck_buf_puts(j, "null");
      break;
    }
    case CK_AGG_A_MINMAX: {
      bool has = get_n(r, 1);
      if (j) ck_buf_puts(j, ",\"value\":");
      if (has) get_value(r, c->acat, c->arg, j);
      else if (j) ck_buf_puts(j, "null");
      break;
    }
  }
  if (c->distinct) {
    uint32_t n = (uint32_t)get_n(r, 4);
    if (j) ck_buf_puts(j, ",\"distinct\":[");
    for (uint32_t i = 0; i < n && !r->bad; i++) {
      if (j && i) ck_buf_putc(j, ',');
      get_value(r, c->acat, c->arg, j);
    }
    if (j) ck_buf_putc(j, ']');
  }
  if (j) ck_buf_putc(j, '}');
}

static int bad_encoding(ck_error_t *err, const char *what) {
  return ck_error_set(err, CK_ESTATE, "could not read aggregation state: %s", what);
}

int ck_agg_snap_split(const void *data, size_t len, bool decode, ck_snap_emit_fn emit, void *ctx,
                      ck_error_t *err) {
  rdr_t r = {data, len, 0, false};
  const uint8_t *magic = take(&r, 4);
  if (!magic || memcmp(magic, "CKAG", 4) != 0) return bad_encoding(err, "it is not one");
  shape_t *sh = ck_calloc(1, sizeof *sh);
  ck_buf_t key, json;
  ck_buf_init(&key);
  ck_buf_init(&json);
  int rc = 0;
  sh->version = (int)get_n(&r, 2);
  if (sh->version < 1 || sh->version > 2) {
    rc = ck_error_set(err, CK_ESTATE, "could not read aggregation state: its version %d is "
                      "unknown (this clink reads versions 1 and 2)", sh->version);
    goto done;
  }
  sh->wkind = (int)get_n(&r, 1);
  int64_t size = get_i64(&r), slide = get_i64(&r), gap = get_i64(&r), step = get_i64(&r);
  sh->nkeys = (int)get_n(&r, 2);
  if (sh->nkeys > MAX_COLS) {
    rc = bad_encoding(err, "it has too many keys");
    goto done;
  }
  for (int k = 0; k < sh->nkeys; k++) {
    sh->ktype[k] = get_type(&r);
    sh->kcat[k] = ck_agg_vcat_of(sh->ktype[k]);
  }
  sh->ncalls = (int)get_n(&r, 2);
  if (sh->ncalls > MAX_COLS) {
    rc = bad_encoding(err, "it has too many aggregates");
    goto done;
  }
  for (int c = 0; c < sh->ncalls; c++) {
    struct call *cl = &sh->call[c];
    cl->fn = (int)get_n(&r, 1);
    cl->distinct = get_n(&r, 1);
    cl->arg = get_type(&r);
    cl->res = get_type(&r);
    cl->kind = kind_of(cl->fn, cl->arg);
    cl->acat = ck_agg_vcat_of(cl->arg);
    cl->rcat = ck_agg_rcat_of(cl->kind, cl->acat);
  }
  uint32_t maxp = (uint32_t)get_n(&r, 4);
  int64_t wm = get_i64(&r);
  uint64_t count = get_n(&r, 8);
  if (r.bad) {
    rc = bad_encoding(err, "its header is truncated");
    goto done;
  }
  if (!emit) goto done; /* the version only */
  bool windowed = sh->wkind != CK_WIN_NONE;
  ck_snap_entry_t e = {CK_SNAP_RAW, "<raw>", "", 0, data, r.off, NULL, 0};
  if (decode) {
    ck_buf_printf(&json, "{\"state\":\"aggregate\",\"window\":{\"kind\":\"%s\"",
                  WIN_NAMES[sh->wkind >= 0 && sh->wkind <= 4 ? sh->wkind : 0]);
    if (sh->wkind == CK_WIN_TUMBLE) ck_buf_printf(&json, ",\"size_ms\":%lld", (long long)size);
    if (sh->wkind == CK_WIN_HOP)
      ck_buf_printf(&json, ",\"size_ms\":%lld,\"slide_ms\":%lld", (long long)size,
                    (long long)slide);
    if (sh->wkind == CK_WIN_SESSION) ck_buf_printf(&json, ",\"gap_ms\":%lld", (long long)gap);
    if (sh->wkind == CK_WIN_CUMULATE)
      ck_buf_printf(&json, ",\"size_ms\":%lld,\"step_ms\":%lld", (long long)size,
                    (long long)step);
    ck_buf_puts(&json, "},\"keys\":[");
    for (int k = 0; k < sh->nkeys; k++) {
      char tn[48];
      ck_buf_printf(&json, "%s\"%s\"", k ? "," : "", ck_type_name(sh->ktype[k], tn, sizeof tn));
    }
    ck_buf_puts(&json, "],\"aggregates\":[");
    for (int c = 0; c < sh->ncalls; c++) {
      char tn[48];
      const struct call *cl = &sh->call[c];
      ck_buf_printf(&json, "%s{\"fn\":\"%s\",\"distinct\":%s,\"arg\":\"%s\"", c ? "," : "",
                    FN_NAMES[cl->fn >= 0 && cl->fn <= 5 ? cl->fn : 1],
                    cl->distinct ? "true" : "false", ck_type_name(cl->arg, tn, sizeof tn));
      ck_buf_printf(&json, ",\"result\":\"%s\"}", ck_type_name(cl->res, tn, sizeof tn));
    }
    ck_buf_printf(&json, "],\"max_parallelism\":%u,\"watermark\":", maxp);
    if (wm == INT64_MIN) ck_buf_puts(&json, "null");
    else ck_buf_printf(&json, "%lld", (long long)wm);
    ck_buf_printf(&json, ",\"entries\":%llu,\"version\":%d}", (unsigned long long)count,
                  sh->version);
    e.json = json.data;
    e.json_len = json.len;
  }
  rc = emit(ctx, &e, err);
  for (uint64_t i = 0; i < count && !rc; i++) {
    size_t at = r.off;
    ck_buf_reset(&key);
    ck_buf_reset(&json);
    ck_buf_t *j = decode ? &json : NULL;
    int kg = (int)get_n(&r, 4);
    if (j) ck_buf_printf(j, "{\"key_group\":%d", kg);
    if (windowed) {
      int64_t start = get_i64(&r), end = get_i64(&r);
      if (j) ck_buf_printf(j, ",\"window_start\":%lld,\"window_end\":%lld", (long long)start,
                           (long long)end);
    }
    if (sh->nkeys != 1) ck_buf_putc(&key, '[');
    for (int k = 0; k < sh->nkeys; k++) {
      if (k) ck_buf_putc(&key, ',');
      if (get_n(&r, 1)) ck_buf_puts(&key, "null");
      else get_value(&r, sh->kcat[k], sh->ktype[k], &key);
    }
    if (sh->nkeys != 1) ck_buf_putc(&key, ']');
    if (j) {
      ck_buf_puts(j, ",\"key\":");
      ck_buf_append(j, key.data, key.len);
      ck_buf_puts(j, ",\"aggregates\":[");
    }
    for (int c = 0; c < sh->ncalls; c++) {
      if (j && c) ck_buf_putc(j, ',');
      get_acc(&r, sh, &sh->call[c], j);
    }
    if (j) ck_buf_putc(j, ']');
    if (!windowed) {
      bool emitted = get_n(&r, 1);
      if (j) ck_buf_puts(j, ",\"emitted\":");
      if (j && !emitted) ck_buf_puts(j, "null");
      if (j && emitted) ck_buf_putc(j, '[');
      for (int c = 0; c < sh->ncalls && emitted; c++) {
        if (j && c) ck_buf_putc(j, ',');
        if (get_n(&r, 1)) {
          if (j) ck_buf_puts(j, "null");
        } else {
          get_value(&r, sh->call[c].rcat, sh->call[c].res, j);
        }
      }
      if (j && emitted) ck_buf_putc(j, ']');
    }
    if (j) ck_buf_putc(j, '}');
    if (r.bad) {
      rc = bad_encoding(err, "a record is truncated");
      break;
    }
    ck_snap_entry_t rec = {kg, windowed ? "win" : "group", key.data, key.len,
                           (const uint8_t *)data + at, r.off - at, j ? json.data : NULL,
                           j ? json.len : 0};
    rc = emit(ctx, &rec, err);
  }
  if (!rc && r.off != r.n) rc = bad_encoding(err, "it has trailing bytes");
done:;
  int version = sh->version;
  ck_buf_fini(&key);
  ck_buf_fini(&json);
  ck_free(sh);
  return rc ? rc : version;
}
