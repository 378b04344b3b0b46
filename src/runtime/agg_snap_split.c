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
 * so the concatenation of the entries' values is the encoding, byte for byte. In the snapshot
 * file a record's row leaves out its key group (the first 4 bytes: the key_group column) and
 * its key (user_key), and ck_agg_snap_joiner puts the record back together from the three
 * columns: the key parsed back from its JSON by the key types of the header. A key whose JSON
 * would not give its bytes back (a float that is NaN or infinite, a decimal the text does not
 * round-trip) makes the writer keep the whole encoding as one row instead. Millions of records
 * go through here, so the common shape has its own paths both ways: windowed records with
 * fixed-width accumulators and integer keys are cut without a parse of their accumulators,
 * their keys printed two digits a step, and go to the writer in runs of up to 1024 records
 * (ck_snap_run_t: no call and no check per row there; a NULL key ends a run); and restore takes a run of rows at once
 * (ck_snap_joiner.rows), one integer key parsed and each record written straight into the
 * output, every other shape a row at a time (join_row).
 * Decoded (JSON): the header gives window kind and sizes, key and call types, maximum
 * parallelism, watermark and the number of entries; a record its window bounds, key and each
 * accumulator (COUNT's count; SUM's sum; AVG's sum, count and average; MIN/MAX's value; the
 * DISTINCT values) and, unwindowed, the values last emitted.
 * Threads: any; no state.
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/arrow_ipc.h"
#include "base/bytes.h"
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
    case CK_AGG_FIRST_VALUE:
    case CK_AGG_LAST_VALUE: return CK_AGG_A_FIRSTLAST;
    case CK_AGG_LISTAGG: return CK_AGG_A_LISTAGG;
    case CK_AGG_APPROX_COUNT_DISTINCT: return CK_AGG_A_HLL;
    case CK_AGG_UDF: return CK_AGG_A_UDF;
    default: return CK_AGG_A_COUNT;
  }
}

static const char *const FN_NAMES[] = {"COUNT(*)", "COUNT", "SUM", "AVG", "MIN", "MAX",
                                       "FIRST_VALUE", "LAST_VALUE", "LISTAGG",
                                       "APPROX_COUNT_DISTINCT", "UDF"};
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
  if (j) ck_buf_printf(j, "{\"fn\":\"%s\"", FN_NAMES[c->fn >= 0 && c->fn <= CK_AGG_FN_LAST ? c->fn : 1]);
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
    case CK_AGG_A_FIRSTLAST: {
      bool has = get_n(r, 1);
      int64_t seq = get_i64(r);
      if (j) ck_buf_printf(j, ",\"arrival\":%lld,\"value\":", (long long)seq);
      if (has) get_value(r, c->acat, c->arg, j);
      else if (j) ck_buf_puts(j, "null");
      break;
    }
    case CK_AGG_A_LISTAGG: {
      bool has = get_n(r, 1);
      if (j) ck_buf_puts(j, ",\"text\":");
      if (has) get_value(r, CK_AGG_V_STR, c->arg, j);
      else if (j) ck_buf_puts(j, "null");
      break;
    }
    case CK_AGG_A_HLL: {
      bool has = get_n(r, 1);
      uint8_t regs[CK_AGG_HLL_M];
      memset(regs, 0, sizeof regs);
      uint32_t n = has ? (uint32_t)get_n(r, 2) : 0;
      for (uint32_t i = 0; i < n && !r->bad; i++) {
        uint32_t at = (uint32_t)get_n(r, 2);
        uint8_t rank = (uint8_t)get_n(r, 1);
        if (at < CK_AGG_HLL_M) regs[at] = rank;
      }
      if (j) ck_buf_printf(j, ",\"registers\":%u,\"estimate\":%lld", n,
                           (long long)(has ? ck_agg_hll_estimate(regs) : 0));
      break;
    }
    case CK_AGG_A_UDF: { /* u8 has, u32 length + the function's own bytes (shown in hex) */
      bool has = get_n(r, 1);
      uint32_t n = has ? (uint32_t)get_n(r, 4) : 0;
      const uint8_t *p = has ? take(r, n) : NULL;
      if (j) {
        ck_buf_puts(j, ",\"state\":");
        if (!p) {
          ck_buf_puts(j, "null");
        } else {
          ck_buf_putc(j, '"');
          for (uint32_t i = 0; i < n; i++) ck_buf_printf(j, "%02x", p[i]);
          ck_buf_putc(j, '"');
        }
      }
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

typedef struct header {
  int64_t size, slide, gap, step, wm;
  uint32_t maxp;
  uint64_t count;
} header_t;

/* The encoding's header (after the magic) into sh and h; 0, or CK_ESTATE. */
static int read_header(rdr_t *r, shape_t *sh, header_t *h, ck_error_t *err) {
  sh->version = (int)get_n(r, 2);
  if (sh->version < 1 || sh->version > 2)
    return ck_error_set(err, CK_ESTATE, "could not read aggregation state: its version %d is "
                        "unknown (this clink reads versions 1 and 2)", sh->version);
  sh->wkind = (int)get_n(r, 1);
  h->size = get_i64(r), h->slide = get_i64(r), h->gap = get_i64(r), h->step = get_i64(r);
  sh->nkeys = (int)get_n(r, 2);
  if (sh->nkeys > MAX_COLS) return bad_encoding(err, "it has too many keys");
  for (int k = 0; k < sh->nkeys; k++) {
    sh->ktype[k] = get_type(r);
    sh->kcat[k] = ck_agg_vcat_of(sh->ktype[k]);
  }
  sh->ncalls = (int)get_n(r, 2);
  if (sh->ncalls > MAX_COLS) return bad_encoding(err, "it has too many aggregates");
  for (int c = 0; c < sh->ncalls; c++) {
    struct call *cl = &sh->call[c];
    cl->fn = (int)get_n(r, 1);
    cl->distinct = get_n(r, 1);
    cl->arg = get_type(r);
    cl->res = get_type(r);
    cl->kind = kind_of(cl->fn, cl->arg);
    cl->acat = ck_agg_vcat_of(cl->arg);
    cl->rcat = ck_agg_rcat_of(cl->kind, cl->acat);
    if (cl->kind == CK_AGG_A_UDF) cl->rcat = ck_agg_vcat_of(cl->res);
  }
  h->maxp = (uint32_t)get_n(r, 4);
  h->wm = get_i64(r);
  h->count = get_n(r, 8);
  if (r->bad) return bad_encoding(err, "its header is truncated");
  return 0;
}

/* Whether the JSON of a key value (at key[0..n)) gives its bytes (p) back: true but for floats
 * that are not finite and decimals whose text does not parse to the same value. */
static bool key_round_trips(ck_agg_vcat_t cat, ck_type_t t, const uint8_t *p, const char *json,
                            size_t n) {
  if (cat == CK_AGG_V_FLOAT) {
    double v;
    memcpy(&v, p, 8);
    return v == v && v != 1.0 / 0.0 && v != -1.0 / 0.0;
  }
  if (cat == CK_AGG_V_DEC) {
    ck_i128 v, back;
    memcpy(&v, p, 16);
    return n >= 2 && ck_decimal_parse(json + 1, n - 2, t.precision, t.scale, &back) && back == v;
  }
  return true;
}

/* The bytes of a record's accumulators when they are the same for every record (v2; no MIN/MAX
 * and no DISTINCT), else -1. */
static int fixed_acc_len(const shape_t *sh) {
  if (sh->version != 2) return -1;
  int n = 0;
  for (int c = 0; c < sh->ncalls; c++) {
    const struct call *cl = &sh->call[c];
    if (cl->distinct) return -1;
    switch (cl->kind) {
      case CK_AGG_A_COUNT: n += 8; break;
      case CK_AGG_A_SUM_I:
      case CK_AGG_A_SUM_D: n += 1 + 16; break;
      case CK_AGG_A_SUM_F: n += 1 + 8 + 8 + 8; break;
      case CK_AGG_A_AVG_I:
      case CK_AGG_A_AVG_D: n += 16 + 8; break;
      case CK_AGG_A_AVG_F: n += 8 + 8 + 8 + 8; break;
      default: return -1;
    }
  }
  return n;
}

/* v as decimal text at p (at most 20 bytes); returns its length. Two digits a step, from a
 * table, straight to their place (the writer prints a key a record). */
static size_t put_i64_text(char *p, int64_t v) {
  static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233"
                              "34353637383940414243444546474849505152535455565758596061626364656667"
                              "6869707172737475767778798081828384858687888990919293949596979899";
  static const uint64_t pow10[20] = {1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull,
                                     1000000ull, 10000000ull, 100000000ull, 1000000000ull,
                                     10000000000ull, 100000000000ull, 1000000000000ull,
                                     10000000000000ull, 100000000000000ull,
                                     1000000000000000ull, 10000000000000000ull,
                                     100000000000000000ull, 1000000000000000000ull,
                                     10000000000000000000ull};
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  size_t neg = v < 0;
  size_t t = ((size_t)(64 - __builtin_clzll(u | 1)) * 1233) >> 12; /* log10(u), or one more */
  size_t nd = t + (u >= pow10[t]);                                   /* u's digits (0: none) */
  if (!nd) nd = 1;
  if (neg) p[0] = '-';
  char *q = p + neg + nd;
  while (u >= 100) {
    unsigned d = (unsigned)(u % 100);
    u /= 100;
    q -= 2;
    memcpy(q, pairs + 2 * d, 2);
  }
  if (u >= 10) memcpy(q - 2, pairs + 2 * u, 2);
  else q[-1] = (char)('0' + u);
  return neg + nd;
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
  header_t h;
  int rc = read_header(&r, sh, &h, err);
  if (rc) goto done;
  int64_t size = h.size, slide = h.slide, gap = h.gap, step = h.step, wm = h.wm;
  uint32_t maxp = h.maxp;
  uint64_t count = h.count;
  if (!emit) goto done; /* the version only */
  bool windowed = sh->wkind != CK_WIN_NONE;
  ck_snap_entry_t e = {CK_SNAP_RAW, "<raw>", "", 0, data, r.off, NULL, 0, 0, 0, 0};
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
  /* the writer's path for windowed records whose accumulators are of fixed width (no MIN/MAX,
   * no DISTINCT): the accumulators are skipped as one block, the integer keys printed directly */
  int acc_len = windowed && !decode ? fixed_acc_len(sh) : -1;
  bool int_keys = true;
  for (int k = 0; k < sh->nkeys; k++) int_keys &= sh->kcat[k] == CK_AGG_V_INT;
  if (acc_len >= 0 && int_keys) {
    /* records whose keys are all set have one length: they go to the writer in runs
     * (ck_snap_run_t), their keys printed one after the other; a record with a NULL key ends
     * the run and goes alone */
    enum { RUN = 1024 };
    size_t kmax = 24 * (size_t)sh->nkeys + 4; /* a record's key JSON at most */
    size_t full = 20 + 9 * (size_t)sh->nkeys + (size_t)acc_len;
    uint32_t *koff = ck_malloc(sizeof *koff * (RUN + 1));
    char *keys = ck_malloc(kmax * RUN);
    ck_snap_run_t run = {0, full, keys, koff};
    size_t run_at = r.off;
    koff[0] = 0;
    const uint8_t *base = data;
    for (uint64_t i = 0; i < count && !rc; i++) {
      size_t at = r.off;
      if (r.n - at < 20 + (size_t)sh->nkeys + (size_t)acc_len) {
        rc = bad_encoding(err, "a record is truncated");
        break;
      }
      uint32_t kg;
      memcpy(&kg, base + at, 4);
      size_t p = at + 20;
      char *kj = keys + koff[run.n];
      size_t kn = 0;
      bool nulls = false;
      if (sh->nkeys != 1) kj[kn++] = '[';
      for (int k = 0; k < sh->nkeys; k++) {
        if (k) kj[kn++] = ',';
        if (p >= r.n) {
          rc = bad_encoding(err, "a record is truncated");
          break;
        }
        if (base[p++]) {
          memcpy(kj + kn, "null", 4);
          kn += 4;
          nulls = true;
          continue;
        }
        if (r.n - p < 8) {
          rc = bad_encoding(err, "a record is truncated");
          break;
        }
        int64_t v;
        memcpy(&v, base + p, 8);
        p += 8;
        kn += put_i64_text(kj + kn, v);
      }
      if (rc) break;
      if (sh->nkeys != 1) kj[kn++] = ']';
      size_t key_to = p - at;
      if (r.n - p < (size_t)acc_len) {
        rc = bad_encoding(err, "a record is truncated");
        break;
      }
      r.off = p + (size_t)acc_len;
      if (!nulls) {
        koff[run.n + 1] = koff[run.n] + (uint32_t)kn;
        if (++run.n < RUN) continue;
      }
      if (run.n) { /* the run so far (kj, when not in it, stays where it is) */
        ck_snap_entry_t e = {CK_SNAP_RAW, "win", NULL, 0, base + run_at, (size_t)run.n * full,
                             NULL, 0, 4, 20, 20 + 9 * (size_t)sh->nkeys, &run};
        memcpy(&e.key_group, base + run_at, 4);
        e.key_group &= 0xFFFF;
        rc = emit(ctx, &e, err);
        run.n = 0;
      }
      if (nulls && !rc) {
        ck_snap_entry_t rec = {(int)kg, "win", kj, kn, base + at, r.off - at, NULL, 0,
                               4, 20, key_to, NULL};
        rc = emit(ctx, &rec, err);
      }
      koff[0] = 0;
      run_at = r.off;
    }
    if (run.n && !rc) {
      ck_snap_entry_t e = {CK_SNAP_RAW, "win", NULL, 0, base + run_at, (size_t)run.n * full,
                           NULL, 0, 4, 20, 20 + 9 * (size_t)sh->nkeys, &run};
      memcpy(&e.key_group, base + run_at, 4);
      e.key_group &= 0xFFFF;
      rc = emit(ctx, &e, err);
    }
    ck_free(koff);
    ck_free(keys);
    count = 0; /* done */
  }
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
    size_t key_from = r.off - at;
    if (sh->nkeys != 1) ck_buf_putc(&key, '[');
    for (int k = 0; k < sh->nkeys; k++) {
      if (k) ck_buf_putc(&key, ',');
      if (get_n(&r, 1)) {
        ck_buf_puts(&key, "null");
        continue;
      }
      size_t vat = r.off, jat = key.len;
      get_value(&r, sh->kcat[k], sh->ktype[k], &key);
      if (!decode && !r.bad &&
          !key_round_trips(sh->kcat[k], sh->ktype[k], r.p + vat, key.data + jat, key.len - jat)) {
        rc = bad_encoding(err, "a key's JSON does not give its value back");
        goto done;
      }
    }
    if (sh->nkeys != 1) ck_buf_putc(&key, ']');
    size_t key_to = r.off - at;
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
                           j ? json.len : 0, 4, key_from, key_to};
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

/* ---------------------------------------------------------------- the joiner */

typedef struct join {
  shape_t sh;
  bool windowed;
} join_t;

static void *join_open(const void *head, size_t len) {
  rdr_t r = {head, len, 0, false};
  const uint8_t *magic = take(&r, 4);
  if (!magic || memcmp(magic, "CKAG", 4) != 0) return NULL;
  join_t *j = ck_calloc(1, sizeof *j);
  ck_error_t err;
  ck_error_clear(&err);
  header_t h;
  if (read_header(&r, &j->sh, &h, &err) || r.off != len) { /* not split: kept whole */
    ck_free(j);
    return NULL;
  }
  j->windowed = j->sh.wkind != CK_WIN_NONE;
  return j;
}

static void join_close(void *state) { ck_free(state); }

/* A JSON integer at *p (< end) into v. */
static bool parse_int(const uint8_t **p, const uint8_t *end, int64_t *v) {
  const uint8_t *q = *p;
  bool neg = q < end && *q == '-';
  if (neg) q++;
  uint64_t u = 0;
  const uint8_t *digits = q;
  while (q < end && *q >= '0' && *q <= '9') {
    if (u > (UINT64_MAX - 9) / 10) return false;
    u = u * 10 + (uint64_t)(*q++ - '0');
  }
  if (q == digits || u > (uint64_t)INT64_MAX + neg) return false;
  *v = neg ? (int64_t)(0 - u) : (int64_t)u;
  *p = q;
  return true;
}

/* A JSON string at *p, as ck_buf_put_json_str wrote it, appended to out (its bytes). */
static bool parse_str(const uint8_t **p, const uint8_t *end, ck_buf_t *out) {
  const uint8_t *q = *p;
  if (q >= end || *q++ != '"') return false;
  const uint8_t *run = q;
  while (q < end && *q != '"') {
    if (*q != '\\') {
      q++;
      continue;
    }
    ck_buf_append(out, run, (size_t)(q - run));
    if (end - q < 2) return false;
    char c = (char)q[1], b;
    q += 2;
    switch (c) {
      case '"': b = '"'; break;
      case '\\': b = '\\'; break;
      case '/': b = '/'; break;
      case 'n': b = '\n'; break;
      case 'r': b = '\r'; break;
      case 't': b = '\t'; break;
      case 'b': b = '\b'; break;
      case 'f': b = '\f'; break;
      case 'u': { /* \u00XX: one byte (the writer escapes control bytes only) */
        unsigned v = 0;
        if (end - q < 4) return false;
        for (int i = 0; i < 4; i++) {
          int d = q[i] >= '0' && q[i] <= '9' ? q[i] - '0' : q[i] >= 'a' && q[i] <= 'f' ?
                  q[i] - 'a' + 10 : q[i] >= 'A' && q[i] <= 'F' ? q[i] - 'A' + 10 : -1;
          if (d < 0) return false;
          v = v * 16 + (unsigned)d;
        }
        if (v > 0xFF) return false;
        b = (char)v;
        q += 4;
        break;
      }
      default: return false;
    }
    ck_buf_putc(out, b);
    run = q;
  }
  if (q >= end) return false;
  ck_buf_append(out, run, (size_t)(q - run));
  *p = q + 1;
  return true;
}

/* One key value's JSON at *p as the encoding has it (null flag, value) appended to out. */
static bool parse_key(const uint8_t **p, const uint8_t *end, ck_agg_vcat_t cat, ck_type_t t,
                      ck_buf_t *out) {
  const uint8_t *q = *p;
  if (end - q >= 4 && memcmp(q, "null", 4) == 0) {
    ck_buf_putc(out, 1);
    *p = q + 4;
    return true;
  }
  ck_buf_putc(out, 0);
  switch (cat) {
    case CK_AGG_V_INT: {
      int64_t v;
      if (!parse_int(p, end, &v)) return false;
      ck_buf_append(out, &v, 8);
      return true;
    }
    case CK_AGG_V_BOOL:
      if (end - q >= 4 && memcmp(q, "true", 4) == 0) ck_buf_putc(out, 1), *p = q + 4;
      else if (end - q >= 5 && memcmp(q, "false", 5) == 0) ck_buf_putc(out, 0), *p = q + 5;
      else return false;
      return true;
    case CK_AGG_V_FLOAT: {
      char tmp[64];
      size_t n = 0;
      while (q + n < end && n < sizeof tmp - 1 && q[n] != ',' && q[n] != ']') n++;
      memcpy(tmp, q, n);
      tmp[n] = 0;
      char *e;
      double v = strtod(tmp, &e);
      if (e == tmp || (size_t)(e - tmp) != n) return false;
      ck_buf_append(out, &v, 8);
      *p = q + n;
      return true;
    }
    case CK_AGG_V_DEC: {
      const uint8_t *s = q + 1, *close = s;
      if (q >= end || *q != '"') return false;
      while (close < end && *close != '"') close++;
      ck_i128 v;
      if (close >= end ||
          !ck_decimal_parse((const char *)s, (size_t)(close - s), t.precision, t.scale, &v))
        return false;
      ck_buf_append(out, &v, 16);
      *p = close + 1;
      return true;
    }
    case CK_AGG_V_STR: {
      size_t at = out->len;
      uint32_t n = 0;
      ck_buf_append(out, &n, 4);
      if (!parse_str(p, end, out)) return false;
      n = (uint32_t)(out->len - at - 4);
      memcpy(out->data + at, &n, 4);
      return true;
    }
  }
  return false;
}

static int join_row(void *state, int key_group, const uint8_t *key, size_t key_len,
                    const uint8_t *value, size_t value_len, ck_buf_t *out, ck_error_t *err) {
  const join_t *j = state;
  const shape_t *sh = &j->sh;
  size_t start = out->len;
  ck_buf_reserve(out, 4 + value_len + key_len + 17 * (size_t)sh->nkeys);
  uint32_t kg = (uint32_t)key_group;
  memcpy(out->data + out->len, &kg, 4);
  out->len += 4;
  size_t head = j->windowed ? 16 : 0; /* the window's bounds come before the key */
  if (value_len < head) goto bad;
  memcpy(out->data + out->len, value, head);
  out->len += head;
  const uint8_t *p = key, *end = key + key_len;
  if (sh->nkeys == 1 && sh->kcat[0] == CK_AGG_V_INT && key_len && key_len < 21 &&
      *p != 'n') { /* the common key: one integer */
    int64_t v;
    if (!parse_int(&p, end, &v) || p != end) goto bad;
    out->data[out->len] = 0;
    memcpy(out->data + out->len + 1, &v, 8);
    out->len += 9;
  } else {
    if (sh->nkeys != 1 && (p >= end || *p++ != '[')) goto bad;
    for (int k = 0; k < sh->nkeys; k++) {
      if (k && (p >= end || *p++ != ',')) goto bad;
      if (!parse_key(&p, end, sh->kcat[k], sh->ktype[k], out)) goto bad;
    }
    if (sh->nkeys != 1 && (p >= end || *p++ != ']')) goto bad;
    if (p != end) goto bad;
  }
  ck_buf_append(out, value + head, value_len - head);
  return 0;
bad:
  out->len = start;
  return ck_error_set(err, CK_ESTATE, "its key %.*s is not one of the aggregation's keys",
                      (int)(key_len < 80 ? key_len : 80), (const char *)key);
}

/* The whole JSON integer p[0..n) (as put_i64_text writes it: at most 19 digits) into v. */
static inline bool parse_i64_whole(const uint8_t *p, size_t n, int64_t *v) {
  size_t i = n && p[0] == '-';
  bool neg = i;
  if (i == n || n - i > 19) return false;
  uint64_t u = 0;
  for (; i < n; i++) {
    unsigned d = (unsigned)p[i] - '0';
    if (d > 9) return false;
    u = u * 10 + d;
  }
  if (u > (uint64_t)INT64_MAX + neg) return false;
  *v = neg ? (int64_t)(0 - u) : (int64_t)u;
  return true;
}

/* One row of the common shape (one integer key) appended to out, which has room for it
 * (value_len + 13 bytes); false when its key is not one integer (null, or not as the writer
 * prints it). head: the bytes of the value before the key (16 windowed, 0 not). */
static inline __attribute__((always_inline)) bool join_int_row(ck_buf_t *out, size_t head,
                                                               uint32_t kg, const uint8_t *key,
                                                               size_t kn, const uint8_t *v,
                                                               size_t vn) {
  int64_t x;
  if (vn < head || !kn || kn > 20 || key[0] == 'n' || !parse_i64_whole(key, kn, &x)) return false;
  uint8_t *o = (uint8_t *)out->data + out->len;
  memcpy(o, &kg, 4);
  memcpy(o + 4, v, head);
  o[4 + head] = 0;
  memcpy(o + 5 + head, &x, 8);
  ck_arrow_copy_short(o + 13 + head, v + head, vn - head);
  out->len += 13 + vn;
  return true;
}

/* A run of rows: for the common shape (one integer key) straight into out, no call per row;
 * a row that path does not take (and every row of other shapes) goes through join_row. */
static int join_rows(void *state, const ck_snap_rows_t *rs, ck_buf_t *out, ck_error_t *err) {
  const join_t *j = state;
  const shape_t *sh = &j->sh;
  bool one_int = sh->nkeys == 1 && sh->kcat[0] == CK_AGG_V_INT;
  if (one_int) /* a record is its row's value, 4 bytes of key group and at most 9 of key */
    ck_buf_reserve(out, (size_t)(rs->val_off[rs->n] - rs->val_off[0]) + 13 * (size_t)rs->n);
  for (int64_t i = 0; i < rs->n; i++) {
    const uint8_t *key = rs->key_data + rs->key_off[i], *v = rs->val_data + rs->val_off[i];
    size_t kn = (size_t)(rs->key_off[i + 1] - rs->key_off[i]);
    size_t vn = (size_t)(rs->val_off[i + 1] - rs->val_off[i]);
    uint32_t kg = ck_get_le16(rs->key_group + 2 * i);
    if (one_int && (j->windowed ? join_int_row(out, 16, kg, key, kn, v, vn)
                                : join_int_row(out, 0, kg, key, kn, v, vn)))
      continue;
    int rc = join_row(state, (int)kg, key, kn, v, vn, out, err);
    if (rc) return rc;
    if (one_int) ck_buf_reserve(out, (size_t)(rs->val_off[rs->n] - rs->val_off[i + 1]) +
                                         13 * (size_t)(rs->n - i - 1));
  }
  if (out->data) out->data[out->len] = 0;
  return 0;
}

const ck_snap_joiner_t ck_agg_snap_joiner = {
    .open = join_open, .row = join_row, .rows = join_rows, .close = join_close};
