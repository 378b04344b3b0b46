/*
 * DESIGN: the aggregation operator — windowed (TUMBLE, HOP, SESSION, CUMULATE) and
 * unwindowed GROUP BY — over the compact state described in agg.h.
 *
 * Windowed: each record is folded into every window of its event time that has not fired; a
 * record with no open window left is counted once in metrics.late_dropped, and so is a record
 * whose event time is NULL (it belongs to no window). A watermark W fires every window with
 * end + allowed_lateness <= W: rows come out ordered by (window end, window start, key) in
 * batches of up to CK_BATCH_ROWS, HAVING drops rows, the state is freed, then W is forwarded
 * (a watermark that does not advance is neither acted on nor forwarded). A row that carries the
 * watermark it arrived under (batch.h, wms) is taken as if that watermark had come as a
 * message just before it: due windows fire first, then the row is late or not against it —
 * so lateness depends on each partition's record order, never on where a batch ended; the
 * message that follows the batch forwards it. Sessions merge as
 * Flink's do: a record opens [ts, ts+gap) and absorbs every open session of its key that
 * touches it (inclusive bounds), so out-of-order records bridge sessions; a record that
 * touches no open session and whose own window is already complete is late.
 *
 * Unwindowed: an upsert changelog keyed by the group key. After each input batch, every group
 * whose output row changed emits, in the order of the rows that first changed the groups,
 * INSERT the first time (or the first time after a DELETE), UPDATE_AFTER later; a HAVING that
 * stops passing emits DELETE carrying the values last emitted; a row equal to the one last
 * emitted emits nothing. Watermarks are forwarded. With spec->emit_final (a bounded query,
 * `clink state-query`) the groups touched are kept marked until the end-of-input watermark,
 * which emits every group's row once, without row kinds.
 *
 * Arithmetic: integer sums accumulate exactly in __int128 and are range-checked against BIGINT
 * when a result is emitted (so a partial sum may leave BIGINT when the total does not, and
 * whether a job fails never depends on arrival order or parallelism); decimals exact in
 * __int128 and bounded by DECIMAL(38), AVG of decimals rounded half away from zero, double sums
 * in double-double (plus a count of 2^1000 units) so they depend neither on arrival order nor,
 * for failing, on partial sums. No input is ever Infinity or NaN (expr.h), and a double SUM
 * past DOUBLE's range is CK_EEVAL at emit like integer overflow, never Infinity. NULL arguments are ignored, SUM/AVG/MIN/MAX of no values is NULL, COUNT of nothing
 * is 0.
 *
 * FIRST_VALUE / LAST_VALUE / LISTAGG follow arrival order: every row folded gets the next
 * number of agg->seq (a row folded into several HOP/CUMULATE windows keeps the order there
 * too), so within a subtask the result is a function of its input order alone; at parallelism
 * > 1 a key's rows all reach one subtask, in the order of their source partition. NULLs are
 * skipped (Flink's); no value gives NULL. When sessions merge, FIRST/LAST keep the value with
 * the lower / higher arrival number, and LISTAGG joins the earlier-starting session's text
 * before the later one's (DISTINCT: the surviving session's values, then the absorbed one's
 * new values). APPROX_COUNT_DISTINCT keeps HyperLogLog registers (agg.h): merging is the
 * registers' maximum, so its estimate does not depend on order or on merges at all.
 *
 * Threads: one instance per subtask, called only on that subtask's thread.
 * Memory: all state is owned by the instance (see agg.h) and freed by close(); emitted
 * batches are handed to op->out.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "runtime/agg.h"
#include "runtime/udf.h"
#include "runtime/decimal.h"

#define POOL_COMPACT_MIN (64 * 1024)

/* ---- values ---- */

int ck_agg_vcat_width(ck_agg_vcat_t cat) {
  switch (cat) {
    case CK_AGG_V_BOOL: return 1;
    case CK_AGG_V_DEC: return 16;
    default: return 8;
  }
}

/* Canonical fixed-width bytes of a non-string value; -0.0 folds into 0.0 so keys and DISTINCT
 * agree with ck_key_hash. */
static void val_bytes(ck_agg_vcat_t cat, const ck_value_t *v, char *out) {
  switch (cat) {
    case CK_AGG_V_BOOL: out[0] = v->v.b ? 1 : 0; break;
    case CK_AGG_V_INT: ck_agg_st64(out, v->v.i); break;
    case CK_AGG_V_FLOAT: ck_agg_stf(out, v->v.f == 0 ? 0.0 : v->v.f); break;
    case CK_AGG_V_DEC: ck_agg_st128(out, v->v.dec); break;
    case CK_AGG_V_STR: ck_assert(!"strings have no fixed bytes"); break;
  }
}

void ck_agg_val_load(const ck_agg_t *agg, ck_agg_vcat_t cat, ck_type_t type, const char *p,
                     ck_value_t *out) {
  memset(out, 0, sizeof *out);
  out->type = type;
  switch (cat) {
    case CK_AGG_V_BOOL: out->v.b = p[0] != 0; break;
    case CK_AGG_V_INT: out->v.i = ck_agg_ld64(p); break;
    case CK_AGG_V_FLOAT: out->v.f = ck_agg_ldf(p); break;
    case CK_AGG_V_DEC: out->v.dec = ck_agg_ld128(p); break;
    case CK_AGG_V_STR: {
      ck_agg_sref_t r = ck_agg_ldref(p);
      out->v.s.ptr = ck_agg_pool_str(&agg->pool, r);
      out->v.s.len = r.len;
      break;
    }
  }
}

/* Total order within a category: NaN above every other double, strings bytewise. */
static int val_cmp(ck_agg_vcat_t cat, const ck_value_t *a, const ck_value_t *b) {
  switch (cat) {
    case CK_AGG_V_BOOL: return (int)a->v.b - (int)b->v.b;
    case CK_AGG_V_INT: return (a->v.i > b->v.i) - (a->v.i < b->v.i);
    case CK_AGG_V_FLOAT: {
      bool na = isnan(a->v.f), nb = isnan(b->v.f);
      if (na || nb) return (int)na - (int)nb;
      return (a->v.f > b->v.f) - (a->v.f < b->v.f);
    }
    case CK_AGG_V_DEC: return (a->v.dec > b->v.dec) - (a->v.dec < b->v.dec);
    case CK_AGG_V_STR: {
      size_t n = a->v.s.len < b->v.s.len ? a->v.s.len : b->v.s.len;
      int c = n ? memcmp(a->v.s.ptr, b->v.s.ptr, n) : 0;
      if (c) return c < 0 ? -1 : 1;
      return (a->v.s.len > b->v.s.len) - (a->v.s.len < b->v.s.len);
    }
  }
  return 0;
}

/* Same output value (NULLs equal, doubles bit for bit). */
static bool val_same(ck_agg_vcat_t cat, const ck_value_t *a, const ck_value_t *b) {
  if (a->is_null || b->is_null) return a->is_null == b->is_null;
  if (cat == CK_AGG_V_FLOAT) return memcmp(&a->v.f, &b->v.f, sizeof(double)) == 0;
  return val_cmp(cat, a, b) == 0;
}

/* Double sums are kept as an unevaluated pair hi + lo (double-double, |lo| <= ulp(hi)/2) and
 * added with exact TwoSum steps. Whenever the exact running sum spans at most ~106 bits — any
 * realistic data — the pair is exact, so SUM and AVG of doubles do not depend on the order the
 * rows arrived in (parallelism, exchange interleaving, session merges).
 *
 * A third part, an int64 count `big` of 2^1000 units, keeps a running sum that passes DOUBLE's
 * range from overflowing: the sum is big·2^1000 + hi + lo, and only the result is checked when
 * it is emitted. So 1e308 + 1e308 - 1e308 is 1e308 in every order, like SUM of BIGINT. */
#define DD_UNIT 0x1p1000

static void dd_set(char *p, char *big, double x) {
  ck_agg_stf(p, x);
  ck_agg_stf(p + 8, 0.0);
  ck_agg_st64(big, 0);
}

/* x = xb·2^1000 + xr with |xr| < 2^1000, both parts exact (xb is an integer below 2^25). */
static double dd_cut(double x, int64_t *xb) {
  double b = trunc(x * 0x1p-1000);
  *xb = (int64_t)b;
  return x - b * DD_UNIT;
}

static void dd_add(char *p, char *big, double x) {
  double hi = ck_agg_ldf(p), lo = ck_agg_ldf(p + 8);
  double s = hi + x;
  if (!(fabs(s) < 0x1p1020)) { /* near or past DOUBLE's range: move whole 2^1000s into big */
    int64_t hb, xb;
    hi = dd_cut(hi, &hb);
    x = dd_cut(x, &xb);
    ck_agg_st64(big, ck_agg_ld64(big) + hb + xb);
    s = hi + x;
  }
  double bb = s - hi, e = (hi - (s - bb)) + (x - bb); /* s + e == hi + x exactly */
  double t = e + lo;
  double h2 = s + t, b2 = h2 - s;
  ck_agg_stf(p, h2);
  ck_agg_stf(p + 8, (s - (h2 - b2)) + (t - b2));
}

static void split(double a, double *hi, double *lo) {
  double c = 134217729.0 * a; /* 2^27 + 1 */
  *hi = c - (c - a);
  *lo = a - *hi;
}

/* The sum as a double; false when it is past DOUBLE's range. */
static bool dd_value(const char *p, const char *big, double *out) {
  int64_t b = ck_agg_ld64(big);
  /* counted in units of 2^1000 so that no intermediate overflows: b·2^1000 may pass the range
   * when the total (b + hi/2^1000)·2^1000 does not */
  *out = b ? ((double)b + ck_agg_ldf(p) * 0x1p-1000) * DD_UNIT : ck_agg_ldf(p);
  return isfinite(*out);
}

/* (big·2^1000 + hi + lo) / n, rounded once more than the exact quotient at most when big is 0
 * (a few roundings otherwise); false when the mean is past DOUBLE's range. */
static bool dd_div(const char *p, const char *big, int64_t n, double *out) {
  int64_t b = ck_agg_ld64(big);
  if (b) {
    *out = ((double)b + (ck_agg_ldf(p) + ck_agg_ldf(p + 8)) * 0x1p-1000) / (double)n * DD_UNIT;
    return isfinite(*out);
  }
  double hi = ck_agg_ldf(p), lo = ck_agg_ldf(p + 8), d = (double)n, q = hi / d;
  *out = q;
  if (!isfinite(134217729.0 * q)) return true;
  double qh, ql, dh, dl, prod = q * d;
  split(q, &qh, &ql);
  split(d, &dh, &dl);
  double perr = ((qh * dh - prod) + qh * dl + ql * dh) + ql * dl; /* q·d == prod + perr */
  double r = ((hi - prod) - perr) + lo;
  *out = q + r / d;
  return true;
}

static bool dec_fits38(ck_i128 v) {
  ck_i128 lim = ck_pow10_i128(CK_DECIMAL_MAX_PRECISION);
  return v < lim && v > -lim;
}

/* ---- entries: keys ---- */

uint32_t ck_agg_tag(uint64_t key_hash, uint32_t salt) {
  return (uint32_t)ck_hash_u64(key_hash ^ ((uint64_t)salt * 0x9E3779B97F4A7C15ULL));
}

uint32_t ck_agg_key_entry(const ck_agg_t *agg, uint32_t idx) {
  if (!agg->session) return idx;
  return agg->wins.wins[ck_agg_ld32(ck_agg_entry(agg, idx) + CK_AGG_E_WID)].dir;
}

static bool key_eq_row(const ck_agg_t *agg, const char *e, const ck_batch_t *b, const int *cols,
                       size_t row) {
  const char *bits = e + agg->bits_off;
  for (int k = 0; k < agg->nkeys; k++) {
    const ck_col_t *col = &b->cols[cols[k]];
    bool rnull = !ck_col_valid(col, row);
    if (rnull != ck_agg_bit(bits, k)) return false;
    if (rnull) continue;
    const char *p = e + agg->key_off[k];
    if (agg->key_cat[k] == CK_AGG_V_STR) {
      size_t n;
      const char *s = ck_col_str(col, row, &n);
      ck_agg_sref_t r = ck_agg_ldref(p);
      if (r.len != n || (n && memcmp(ck_agg_pool_str(&agg->pool, r), s, n) != 0)) return false;
    } else {
      ck_value_t v;
      char buf[16];
      ck_col_get_value(col, row, &v);
      val_bytes(agg->key_cat[k], &v, buf);
      if (memcmp(p, buf, (size_t)ck_agg_vcat_width(agg->key_cat[k])) != 0) return false;
    }
  }
  return true;
}

static int key_store_row(ck_agg_t *agg, uint32_t idx, const ck_batch_t *b, const int *cols,
                         size_t row, ck_error_t *err) {
  for (int k = 0; k < agg->nkeys; k++) {
    const ck_col_t *col = &b->cols[cols[k]];
    char *e = ck_agg_entry(agg, idx);
    if (!ck_col_valid(col, row)) {
      ck_agg_setbit(e + agg->bits_off, k, true);
      continue;
    }
    if (agg->key_cat[k] == CK_AGG_V_STR) {
      size_t n;
      const char *s = ck_col_str(col, row, &n);
      ck_agg_sref_t r;
      int rc = ck_agg_pool_add(&agg->pool, s, n, &r, err);
      if (rc) return rc;
      ck_agg_stref(e + agg->key_off[k], r);
    } else {
      ck_value_t v;
      ck_col_get_value(col, row, &v);
      val_bytes(agg->key_cat[k], &v, e + agg->key_off[k]);
    }
  }
  return 0;
}

static int key_cmp(const ck_agg_t *agg, uint32_t ka, uint32_t kb) {
  const char *a = ck_agg_entry(agg, ka), *b = ck_agg_entry(agg, kb);
  for (int k = 0; k < agg->nkeys; k++) {
    bool na = ck_agg_bit(a + agg->bits_off, k), nb = ck_agg_bit(b + agg->bits_off, k);
    if (na || nb) {
      if (na != nb) return na ? -1 : 1; /* NULL first */
      continue;
    }
    ck_value_t va, vb;
    ck_agg_val_load(agg, agg->key_cat[k], agg->key_types[k], a + agg->key_off[k], &va);
    ck_agg_val_load(agg, agg->key_cat[k], agg->key_types[k], b + agg->key_off[k], &vb);
    int c = val_cmp(agg->key_cat[k], &va, &vb);
    if (c) return c;
  }
  return 0;
}

int ck_agg_group(ck_agg_t *agg, uint32_t tag, uint32_t wid, const ck_batch_t *b,
                 const int *cols, size_t row, bool create, uint8_t flags, uint32_t *out,
                 bool *created, ck_error_t *err) {
  ck_agg_tab_t *tab = &agg->tab;
  *created = false;
  if (tab->icap) {
    size_t mask = tab->icap - 1;
    for (size_t j = tag & mask; tab->slots[j].idx1; j = (j + 1) & mask) {
      if (tab->slots[j].tag != tag) continue;
      uint32_t idx = tab->slots[j].idx1 - 1;
      const char *e = ck_agg_entry(agg, idx);
      if (agg->shared && ck_agg_ld32(e + CK_AGG_E_WID) != wid) continue;
      if (key_eq_row(agg, e, b, cols, row)) {
        *out = idx;
        return 0;
      }
    }
  }
  *out = CK_AGG_NONE;
  if (!create) return 0;
  uint32_t idx = ck_agg_tab_alloc(tab);
  char *e = ck_agg_entry(agg, idx);
  ck_agg_st32(e + CK_AGG_E_WID, wid);
  ck_agg_st32(e + CK_AGG_E_TAG, tag);
  ck_agg_st32(e + CK_AGG_E_NEXT, CK_AGG_NONE);
  int rc = key_store_row(agg, idx, b, cols, row, err);
  e = ck_agg_entry(agg, idx);
  e[CK_AGG_E_FLAGS] = (char)(e[CK_AGG_E_FLAGS] | flags | CK_AGG_F_KEY);
  if (rc) {
    ck_agg_entry_release(agg, idx);
    ck_agg_tab_free(tab, idx);
    return rc;
  }
  ck_agg_index_insert(tab, idx, tag);
  *out = idx;
  *created = true;
  return 0;
}

/* ---- entries: accumulators ---- */

static const char *const fn_names[] = {"COUNT(*)", "COUNT", "SUM", "AVG", "MIN", "MAX",
                                       "FIRST_VALUE", "LAST_VALUE", "LISTAGG",
                                       "APPROX_COUNT_DISTINCT", "a user-defined aggregate"};

/* ---- HyperLogLog (APPROX_COUNT_DISTINCT) ---- */

static void hll_add(uint8_t *regs, uint64_t h) {
  uint32_t i = (uint32_t)(h >> (64 - CK_AGG_HLL_P));
  uint64_t w = h << CK_AGG_HLL_P;
  uint8_t rank = w ? (uint8_t)(__builtin_clzll(w) + 1) : (uint8_t)(64 - CK_AGG_HLL_P + 1);
  if (rank > regs[i]) regs[i] = rank;
}

int64_t ck_agg_hll_estimate(const uint8_t *r) {
  const double m = CK_AGG_HLL_M;
  double sum = 0;
  uint32_t zeros = 0;
  for (uint32_t i = 0; i < CK_AGG_HLL_M; i++) {
    sum += ldexp(1.0, -(int)r[i]);
    zeros += r[i] == 0;
  }
  double est = 0.7213 / (1 + 1.079 / m) * m * m / sum;
  if (est <= 2.5 * m && zeros) est = m * log(m / zeros); /* linear counting */
  return (int64_t)llround(est);
}

/* The hash HyperLogLog takes of a value: its canonical bytes (strings: their bytes). */
static uint64_t hll_hash(ck_agg_vcat_t cat, const ck_value_t *v) {
  if (cat == CK_AGG_V_STR) return ck_hash64(v->v.s.ptr, v->v.s.len, CK_AGG_HLL_SEED);
  char buf[16];
  val_bytes(cat, v, buf);
  return ck_hash64(buf, (size_t)ck_agg_vcat_width(cat), CK_AGG_HLL_SEED);
}

static ck_agg_sbuf_t *acc_sbuf(const char *p) {
  ck_agg_sbuf_t *sb;
  memcpy(&sb, p, sizeof sb);
  return sb;
}

/* Appends [sep] s to LISTAGG's text at p (sep only when there is text already; at_front puts
 * s before it instead). */
static int sbuf_append(ck_agg_t *agg, char *p, const char *sep, const char *s, size_t n,
                       bool at_front, ck_error_t *err) {
  ck_agg_sbuf_t *sb = acc_sbuf(p);
  size_t sl = sb ? strlen(sep) : 0, old = sb ? sb->len : 0, need = old + sl + n;
  if (need > CK_AGG_LISTAGG_MAX) {
    int rc = ck_error_set(err, CK_EEVAL, "could not aggregate: LISTAGG's text for one group "
                          "would be %zu bytes, more than %d", need, CK_AGG_LISTAGG_MAX);
    ck_error_hint(err, "group by more keys, or aggregate a shorter value");
    return rc;
  }
  if (!sb || sb->cap < need) {
    size_t cap = sb ? (size_t)sb->cap * 2 : 16;
    while (cap < need) cap *= 2;
    if (cap > CK_AGG_LISTAGG_MAX) cap = CK_AGG_LISTAGG_MAX;
    size_t before = sb ? sb->cap : 0;
    sb = ck_realloc(sb, sizeof *sb + cap);
    if (before == 0) sb->len = 0;
    sb->cap = (uint32_t)cap;
    agg->dset_bytes += cap - before;
    memcpy(p, &sb, sizeof sb);
  }
  if (at_front) {
    memmove(sb->data + n + sl, sb->data, old);
    memcpy(sb->data, s, n);
    memcpy(sb->data + n, sep, sl);
  } else {
    memcpy(sb->data + old, sep, sl);
    memcpy(sb->data + old + sl, s, n);
  }
  sb->len = (uint32_t)need;
  return 0;
}

/* FIRST_VALUE / LAST_VALUE: value v with arrival number seq into call c of entry idx. */
static int firstlast_store(ck_agg_t *agg, uint32_t idx, int c, const ck_value_t *v, int64_t seq,
                           ck_error_t *err) {
  const ck_agg_acc_t *a = &agg->acc[c];
  char *e = ck_agg_entry(agg, idx);
  char *p = e + a->off;
  int vw = ck_agg_vcat_width(a->acat);
  if (a->acat == CK_AGG_V_STR) {
    ck_agg_sref_t r;
    int rc = ck_agg_pool_add(&agg->pool, v->v.s.ptr, v->v.s.len, &r, err);
    if (rc) return rc;
    e = ck_agg_entry(agg, idx);
    p = e + a->off;
    if (ck_agg_bit(e + agg->bits_off, a->has_bit)) ck_agg_pool_release(&agg->pool, ck_agg_ldref(p));
    ck_agg_stref(p, r);
  } else {
    val_bytes(a->acat, v, p);
    if (a->acat == CK_AGG_V_FLOAT) ck_agg_stf(p, v->v.f);
  }
  ck_agg_st64(p + vw, seq);
  ck_agg_setbit(e + agg->bits_off, a->has_bit, true);
  return 0;
}

static const char *call_name(const ck_agg_t *agg, int c) { return fn_names[agg->acc[c].call->fn]; }

static int overflow(ck_agg_t *agg, int c, const char *type, ck_error_t *err) {
  int rc = ck_error_set(err, CK_EEVAL, "could not aggregate: %s over input column %d overflows %s",
                        call_name(agg, c), agg->acc[c].call->arg_col, type);
  if (strcmp(type, "DOUBLE") == 0)
    ck_error_detail(err, "the total is past +-1.7976931348623157e308; clink never produces "
                         "Infinity");
  else
    ck_error_hint(err, "cast the argument to a wider type, e.g. DECIMAL(38, 0) or DOUBLE");
  return rc;
}

static ck_agg_dset_t *acc_set(const char *e, const ck_agg_acc_t *a) {
  ck_agg_dset_t *set;
  memcpy(&set, e + a->set_off, sizeof set);
  return set;
}

int ck_agg_acc_add_value(ck_agg_t *agg, uint32_t idx, int c, const ck_value_t *v,
                         ck_error_t *err) {
  const ck_agg_acc_t *a = &agg->acc[c];
  char *e = ck_agg_entry(agg, idx);
  char *bits = e + agg->bits_off;
  char *p = e + a->off;
  if (a->distinct) {
    ck_agg_dset_t *set = acc_set(e, a);
    if (!set) {
      set = ck_agg_dset_new();
      memcpy(e + a->set_off, &set, sizeof set);
    }
    int vw = ck_agg_vcat_width(a->acat);
    size_t before = ck_agg_dset_bytes(set, vw);
    bool added;
    if (a->acat == CK_AGG_V_STR) {
      added = ck_agg_dset_add(set, vw, true, v->v.s.ptr, v->v.s.len);
    } else {
      char buf[16];
      val_bytes(a->acat, v, buf);
      added = ck_agg_dset_add(set, vw, false, buf, 0);
    }
    agg->dset_bytes += ck_agg_dset_bytes(set, vw) - before;
    if (!added) return 0;
  }
  switch (a->kind) {
    case CK_AGG_A_COUNT: ck_agg_st64(p, ck_agg_ld64(p) + 1); break;
    case CK_AGG_A_SUM_I: { /* exact in 128 bits; BIGINT is checked at emit */
      ck_i128 s = v->v.i;
      if (ck_agg_bit(bits, a->has_bit) && __builtin_add_overflow(ck_agg_ld128(p), s, &s))
        return overflow(agg, c, "BIGINT", err);
      ck_agg_st128(p, s);
      ck_agg_setbit(bits, a->has_bit, true);
      break;
    }
    case CK_AGG_A_SUM_D: {
      ck_i128 s = v->v.dec;
      if (ck_agg_bit(bits, a->has_bit) &&
          (__builtin_add_overflow(ck_agg_ld128(p), v->v.dec, &s) || !dec_fits38(s)))
        return overflow(agg, c, "DECIMAL(38)", err);
      ck_agg_st128(p, s);
      ck_agg_setbit(bits, a->has_bit, true);
      break;
    }
    case CK_AGG_A_SUM_F:
      if (ck_agg_bit(bits, a->has_bit)) dd_add(p, p + 16, v->v.f);
      else dd_set(p, p + 16, v->v.f);
      ck_agg_setbit(bits, a->has_bit, true);
      break;
    case CK_AGG_A_AVG_I:
    case CK_AGG_A_AVG_D: {
      ck_i128 add = a->kind == CK_AGG_A_AVG_I ? (ck_i128)v->v.i : v->v.dec, s;
      if (__builtin_add_overflow(ck_agg_ld128(p), add, &s)) return overflow(agg, c, "DECIMAL", err);
      ck_agg_st128(p, s);
      ck_agg_st64(p + 16, ck_agg_ld64(p + 16) + 1);
      break;
    }
    case CK_AGG_A_AVG_F:
      if (ck_agg_ld64(p + 16)) dd_add(p, p + 24, v->v.f);
      else dd_set(p, p + 24, v->v.f);
      ck_agg_st64(p + 16, ck_agg_ld64(p + 16) + 1);
      break;
    case CK_AGG_A_UDF:
      if (!ck_agg_bit(bits, a->has_bit)) ck_udf_agg_create(a->call->udf, p);
      ck_agg_setbit(bits, a->has_bit, true);
      return ck_udf_agg_add(a->call->udf, p, v, err);
    case CK_AGG_A_MINMAX: {
      if (ck_agg_bit(bits, a->has_bit)) {
        ck_value_t cur;
        ck_agg_val_load(agg, a->acat, a->call->arg_type, p, &cur);
        int cmp = val_cmp(a->acat, v, &cur);
        if (a->is_min ? cmp >= 0 : cmp <= 0) break;
      }
      if (a->acat == CK_AGG_V_STR) {
        ck_agg_sref_t r;
        int rc = ck_agg_pool_add(&agg->pool, v->v.s.ptr, v->v.s.len, &r, err);
        if (rc) return rc;
        e = ck_agg_entry(agg, idx);
        p = e + a->off;
        if (ck_agg_bit(e + agg->bits_off, a->has_bit))
          ck_agg_pool_release(&agg->pool, ck_agg_ldref(p));
        ck_agg_stref(p, r);
      } else {
        val_bytes(a->acat, v, p);
        if (a->acat == CK_AGG_V_FLOAT) ck_agg_stf(p, v->v.f); /* keep -0.0 as given */
      }
      ck_agg_setbit(e + agg->bits_off, a->has_bit, true);
      break;
    }
    case CK_AGG_A_FIRSTLAST:
      if (a->is_min && ck_agg_bit(bits, a->has_bit)) break; /* FIRST_VALUE has one */
      return firstlast_store(agg, idx, c, v, agg->seq, err);
    case CK_AGG_A_LISTAGG: {
      char tmp[64];
      const char *s = v->v.s.ptr;
      size_t n = v->v.s.len;
      if (a->acat != CK_AGG_V_STR) { /* planned for strings only; kept total */
        n = (size_t)snprintf(tmp, sizeof tmp, "%lld", (long long)v->v.i);
        s = tmp;
      }
      return sbuf_append(agg, p, a->call->sep ? a->call->sep : ",", s, n, false, err);
    }
    case CK_AGG_A_HLL: {
      uint8_t *regs;
      memcpy(&regs, p, sizeof regs);
      if (!regs) {
        regs = ck_calloc(CK_AGG_HLL_M, 1);
        memcpy(p, &regs, sizeof regs);
        agg->dset_bytes += CK_AGG_HLL_M;
      }
      hll_add(regs, hll_hash(a->acat, v));
      break;
    }
  }
  return 0;
}

static int acc_add_row(ck_agg_t *agg, uint32_t idx, const ck_batch_t *b, size_t row,
                       ck_error_t *err) {
  for (int c = 0; c < agg->ncalls; c++) {
    const ck_agg_acc_t *a = &agg->acc[c];
    if (a->call->fn == CK_AGG_COUNT_STAR) {
      char *p = ck_agg_entry(agg, idx) + a->off;
      ck_agg_st64(p, ck_agg_ld64(p) + 1);
      continue;
    }
    const ck_col_t *col = &b->cols[a->call->arg_col];
    if (!ck_col_valid(col, row)) continue;
    ck_value_t v;
    ck_col_get_value(col, row, &v);
    int rc = ck_agg_acc_add_value(agg, idx, c, &v, err);
    if (rc) return rc;
  }
  agg->seq++;
  return 0;
}

/* Folds session src into dst (both accumulator entries); src_first: src's session starts
 * before dst's (LISTAGG puts its text first). */
static int acc_merge(ck_agg_t *agg, uint32_t dst, uint32_t src, bool src_first,
                     ck_error_t *err) {
  for (int c = 0; c < agg->ncalls; c++) {
    const ck_agg_acc_t *a = &agg->acc[c];
    const char *s = ck_agg_entry(agg, src);
    if (a->distinct) {
      const ck_agg_dset_t *set = acc_set(s, a);
      bool is_str = a->acat == CK_AGG_V_STR;
      int vw = ck_agg_vcat_width(a->acat);
      for (uint32_t i = 0; set && i < set->count; i++) {
        ck_value_t v;
        size_t n = 0;
        const char *p = ck_agg_dset_get(set, vw, is_str, i, &n);
        if (is_str) {
          memset(&v, 0, sizeof v);
          v.type = a->call->arg_type;
          v.v.s.ptr = p;
          v.v.s.len = n;
        } else {
          ck_agg_val_load(agg, a->acat, a->call->arg_type, p, &v);
        }
        int rc = ck_agg_acc_add_value(agg, dst, c, &v, err);
        if (rc) return rc;
      }
      continue;
    }
    const char *sp = s + a->off;
    bool shas = a->has_bit >= 0 && ck_agg_bit(s + agg->bits_off, a->has_bit);
    char *d = ck_agg_entry(agg, dst);
    char *dp = d + a->off;
    ck_value_t v;
    memset(&v, 0, sizeof v);
    switch (a->kind) {
      case CK_AGG_A_COUNT: ck_agg_st64(dp, ck_agg_ld64(dp) + ck_agg_ld64(sp)); break;
      case CK_AGG_A_SUM_F:
      case CK_AGG_A_AVG_F: {
        bool dhas = a->kind == CK_AGG_A_SUM_F ? ck_agg_bit(d + agg->bits_off, a->has_bit)
                                              : ck_agg_ld64(dp + 16) != 0;
        if (a->kind == CK_AGG_A_SUM_F ? !shas : ck_agg_ld64(sp + 16) == 0) break;
        int boff = a->kind == CK_AGG_A_SUM_F ? 16 : 24;
        if (dhas) {
          dd_add(dp, dp + boff, ck_agg_ldf(sp));
          dd_add(dp, dp + boff, ck_agg_ldf(sp + 8));
          ck_agg_st64(dp + boff, ck_agg_ld64(dp + boff) + ck_agg_ld64(sp + boff));
        } else {
          memcpy(dp, sp, 16);
          memcpy(dp + boff, sp + boff, 8);
        }
        if (a->kind == CK_AGG_A_SUM_F) ck_agg_setbit(d + agg->bits_off, a->has_bit, true);
        else ck_agg_st64(dp + 16, ck_agg_ld64(dp + 16) + ck_agg_ld64(sp + 16));
        break;
      }
      case CK_AGG_A_SUM_I: {
        if (!shas) break;
        ck_i128 sum = ck_agg_ld128(sp);
        if (ck_agg_bit(d + agg->bits_off, a->has_bit) &&
            __builtin_add_overflow(ck_agg_ld128(dp), sum, &sum))
          return overflow(agg, c, "BIGINT", err);
        ck_agg_st128(dp, sum);
        ck_agg_setbit(d + agg->bits_off, a->has_bit, true);
        break;
      }
      case CK_AGG_A_SUM_D:
      case CK_AGG_A_MINMAX: {
        if (!shas) break;
        ck_type_t t = a->call->arg_type;
        /* a MIN/MAX string stays in the pool: ck_agg_pool_add copes with that */
        ck_agg_val_load(agg, a->kind == CK_AGG_A_MINMAX ? a->acat : a->rcat, t, sp, &v);
        int rc = ck_agg_acc_add_value(agg, dst, c, &v, err);
        if (rc) return rc;
        break;
      }
      case CK_AGG_A_FIRSTLAST: {
        if (!shas) break;
        int64_t sseq = ck_agg_ld64(sp + ck_agg_vcat_width(a->acat));
        int64_t dseq = ck_agg_ld64(dp + ck_agg_vcat_width(a->acat));
        if (ck_agg_bit(d + agg->bits_off, a->has_bit) && (a->is_min ? dseq <= sseq : dseq >= sseq))
          break;
        ck_agg_val_load(agg, a->acat, a->call->arg_type, sp, &v); /* may point into the pool */
        int rc = firstlast_store(agg, dst, c, &v, sseq, err);
        if (rc) return rc;
        break;
      }
      case CK_AGG_A_LISTAGG: {
        const ck_agg_sbuf_t *sb = acc_sbuf(sp);
        if (!sb) break;
        int rc = sbuf_append(agg, dp, a->call->sep ? a->call->sep : ",", sb->data, sb->len,
                             src_first, err);
        if (rc) return rc;
        break;
      }
      case CK_AGG_A_HLL: {
        uint8_t *sr, *dr;
        memcpy(&sr, sp, sizeof sr);
        memcpy(&dr, dp, sizeof dr);
        if (!sr) break;
        if (!dr) {
          dr = ck_calloc(CK_AGG_HLL_M, 1);
          memcpy(dp, &dr, sizeof dr);
          agg->dset_bytes += CK_AGG_HLL_M;
        }
        for (uint32_t i = 0; i < CK_AGG_HLL_M; i++)
          if (sr[i] > dr[i]) dr[i] = sr[i];
        break;
      }
      case CK_AGG_A_UDF:
        if (!shas) break;
        if (!ck_agg_bit(d + agg->bits_off, a->has_bit)) {
          ck_udf_agg_create(a->call->udf, dp);
          ck_agg_setbit(d + agg->bits_off, a->has_bit, true);
        }
        {
          int rc = ck_udf_agg_merge(a->call->udf, dp, sp, err);
          if (rc) return rc;
        }
        break;
      case CK_AGG_A_AVG_I:
      case CK_AGG_A_AVG_D: {
        ck_i128 sum;
        if (__builtin_add_overflow(ck_agg_ld128(dp), ck_agg_ld128(sp), &sum))
          return overflow(agg, c, "DECIMAL", err);
        ck_agg_st128(dp, sum);
        ck_agg_st64(dp + 16, ck_agg_ld64(dp + 16) + ck_agg_ld64(sp + 16));
        break;
      }
    }
  }
  return 0;
}

/* round(|num| * 10^k / n) by the rounding rule, sign of num; false past DECIMAL(38). */
static bool dec_avg(ck_i128 num, int64_t n, int k, ck_i128 *out) {
  static const ck_i128 min128 = (ck_i128)((unsigned __int128)1 << 127);
  if (num == min128) return false; /* the one value without a magnitude */
  bool neg = num < 0;
  ck_i128 a = neg ? -num : num, q = a / n, r = a % n;
  for (int i = 0; i < k; i++) {
    ck_i128 r10 = r * 10;
    if (__builtin_mul_overflow(q, 10, &q) || __builtin_add_overflow(q, r10 / n, &q)) return false;
    r = r10 % n;
  }
  if (ck_dec_round_away((ck_u128)r, (ck_u128)n)) q++; /* the one rule: runtime/decimal.h */
  if (!dec_fits38(q)) return false;
  *out = neg ? -q : q;
  return true;
}

/* A deliberately wrong COUNT (one too many) when CLINK_MUTANT=agg_count_plus_one: the bug
 * tests/capture plants to show that a test `clink replay --emit-test` wrote catches a change in
 * an operator (docs/replay.md). Read once; 0 otherwise. */
static int64_t mutant_count(void) {
  static _Atomic int cached = -1;
  int v = cached;
  if (v < 0) {
    const char *m = getenv("CLINK_MUTANT");
    v = m && strcmp(m, "agg_count_plus_one") == 0;
    cached = v;
  }
  return v;
}

/* The output value of call c for entry idx, typed as the call's result. */
static int acc_result(ck_agg_t *agg, uint32_t idx, int c, ck_value_t *out, ck_error_t *err) {
  const ck_agg_acc_t *a = &agg->acc[c];
  const char *e = ck_agg_entry(agg, idx);
  const char *p = e + a->off;
  bool has = a->has_bit >= 0 && ck_agg_bit(e + agg->bits_off, a->has_bit);
  memset(out, 0, sizeof *out);
  out->type = a->call->result_type;
  switch (a->kind) {
    case CK_AGG_A_COUNT: out->v.i = ck_agg_ld64(p) + mutant_count(); return 0;
    case CK_AGG_A_SUM_I: {
      ck_i128 sum = ck_agg_ld128(p);
      out->is_null = !has;
      if (has && (sum > INT64_MAX || sum < INT64_MIN)) return overflow(agg, c, "BIGINT", err);
      out->v.i = (int64_t)sum;
      return 0;
    }
    case CK_AGG_A_SUM_F:
      out->is_null = !has;
      if (has && !dd_value(p, p + 16, &out->v.f)) return overflow(agg, c, "DOUBLE", err);
      return 0;
    case CK_AGG_A_SUM_D: {
      out->is_null = !has;
      if (!has) return 0;
      int k = a->call->result_type.scale - a->call->arg_type.scale;
      if (!dec_avg(ck_agg_ld128(p), 1, k, &out->v.dec))
        return overflow(agg, c, "DECIMAL(38)", err);
      return 0;
    }
    case CK_AGG_A_AVG_I:
    case CK_AGG_A_AVG_D:
    case CK_AGG_A_AVG_F: {
      int64_t n = ck_agg_ld64(p + 16);
      out->is_null = n == 0;
      if (n == 0) return 0;
      if (a->kind == CK_AGG_A_AVG_F) {
        if (!dd_div(p, p + 24, n, &out->v.f)) return overflow(agg, c, "DOUBLE", err);
      } else if (a->kind == CK_AGG_A_AVG_I) out->v.f = (double)ck_agg_ld128(p) / (double)n;
      else if (!dec_avg(ck_agg_ld128(p), n, a->call->result_type.scale - a->call->arg_type.scale,
                        &out->v.dec))
        return overflow(agg, c, "DECIMAL(38)", err);
      return 0;
    }
    case CK_AGG_A_MINMAX:
    case CK_AGG_A_FIRSTLAST:
      if (!has) {
        out->is_null = true;
        return 0;
      }
      ck_agg_val_load(agg, a->acat, a->call->result_type, p, out);
      return 0;
    case CK_AGG_A_LISTAGG: {
      const ck_agg_sbuf_t *sb = acc_sbuf(p);
      out->is_null = !sb;
      if (sb) {
        out->v.s.ptr = sb->data;
        out->v.s.len = sb->len;
      }
      return 0;
    }
    case CK_AGG_A_HLL: {
      const uint8_t *regs;
      memcpy(&regs, p, sizeof regs);
      out->v.i = regs ? ck_agg_hll_estimate(regs) : 0;
      return 0;
    }
    case CK_AGG_A_UDF:
      if (!has) {
        out->is_null = true;
        return 0;
      }
      return ck_udf_agg_get(a->call->udf, p, out, err);
  }
  return 0;
}

void ck_agg_entry_release(ck_agg_t *agg, uint32_t idx) {
  char *e = ck_agg_entry(agg, idx);
  uint8_t flags = (uint8_t)e[CK_AGG_E_FLAGS];
  const char *bits = e + agg->bits_off;
  if (flags & CK_AGG_F_KEY)
    for (int k = 0; k < agg->nkeys; k++)
      if (agg->key_cat[k] == CK_AGG_V_STR && !ck_agg_bit(bits, k))
        ck_agg_pool_release(&agg->pool, ck_agg_ldref(e + agg->key_off[k]));
  for (int c = 0; c < agg->ncalls; c++) {
    const ck_agg_acc_t *a = &agg->acc[c];
    if (flags & CK_AGG_F_ACC) {
      if ((a->kind == CK_AGG_A_MINMAX || a->kind == CK_AGG_A_FIRSTLAST) &&
          a->acat == CK_AGG_V_STR && ck_agg_bit(bits, a->has_bit))
        ck_agg_pool_release(&agg->pool, ck_agg_ldref(e + a->off));
      if (a->kind == CK_AGG_A_LISTAGG || a->kind == CK_AGG_A_HLL) {
        void *owned;
        memcpy(&owned, e + a->off, sizeof owned);
        if (owned)
          agg->dset_bytes -= a->kind == CK_AGG_A_HLL ? CK_AGG_HLL_M
                                                     : ((ck_agg_sbuf_t *)owned)->cap;
        ck_free(owned);
        memset(e + a->off, 0, sizeof owned);
      }
      if (a->kind == CK_AGG_A_UDF && ck_agg_bit(bits, a->has_bit)) {
        ck_udf_agg_destroy(a->call->udf, e + a->off);
        ck_agg_setbit((char *)bits, a->has_bit, false);
      }
      if (a->distinct) {
        ck_agg_dset_t *set = acc_set(e, a);
        agg->dset_bytes -= ck_agg_dset_bytes(set, ck_agg_vcat_width(a->acat));
        ck_agg_dset_free(set);
        memset(e + a->set_off, 0, sizeof set);
      }
    }
    if ((flags & CK_AGG_F_EMITTED) && a->rcat == CK_AGG_V_STR && !ck_agg_bit(bits, a->emit_bit))
      ck_agg_pool_release(&agg->pool, ck_agg_ldref(e + a->emit_off));
  }
  e[CK_AGG_E_FLAGS] = (char)(flags & ~(CK_AGG_F_KEY | CK_AGG_F_ACC | CK_AGG_F_EMITTED));
}

/* ---- metrics and pool compaction ---- */

void ck_agg_update_metrics(ck_agg_t *agg) {
  ck_op_metrics_t *m = &agg->op->metrics;
  m->state_entries = agg->groups;
  m->state_bytes = (int64_t)(sizeof *agg + ck_agg_tab_bytes(&agg->tab) + agg->pool.cap +
                             ck_agg_wins_bytes(&agg->wins) + agg->dset_bytes +
                             agg->dirty_cap * sizeof *agg->dirty);
}

static int move_ref(ck_agg_pool_t *to, const ck_agg_pool_t *from, char *p, ck_error_t *err) {
  ck_agg_sref_t r = ck_agg_ldref(p), nr;
  int rc = ck_agg_pool_add(to, ck_agg_pool_str(from, r), r.len, &nr, err);
  if (!rc) ck_agg_stref(p, nr);
  return rc;
}

static int maybe_compact(ck_agg_t *agg, ck_error_t *err) {
  ck_agg_pool_t *old = &agg->pool;
  size_t garbage = old->len - old->live;
  if (garbage < POOL_COMPACT_MIN || garbage < old->live) return 0;
  ck_agg_pool_t np;
  ck_agg_pool_init(&np);
  int rc = 0;
  for (uint32_t i = 0; i < agg->tab.nslab && !rc; i++) {
    char *e = ck_agg_entry(agg, i);
    uint8_t flags = (uint8_t)e[CK_AGG_E_FLAGS];
    const char *bits = e + agg->bits_off;
    if (!(flags & CK_AGG_F_USED)) continue;
    if (flags & CK_AGG_F_KEY)
      for (int k = 0; k < agg->nkeys && !rc; k++)
        if (agg->key_cat[k] == CK_AGG_V_STR && !ck_agg_bit(bits, k))
          rc = move_ref(&np, old, e + agg->key_off[k], err);
    for (int c = 0; c < agg->ncalls && !rc; c++) {
      const ck_agg_acc_t *a = &agg->acc[c];
      if ((flags & CK_AGG_F_ACC) &&
          (a->kind == CK_AGG_A_MINMAX || a->kind == CK_AGG_A_FIRSTLAST) &&
          a->acat == CK_AGG_V_STR && ck_agg_bit(bits, a->has_bit))
        rc = move_ref(&np, old, e + a->off, err);
      if (!rc && (flags & CK_AGG_F_EMITTED) && a->rcat == CK_AGG_V_STR &&
          !ck_agg_bit(bits, a->emit_bit))
        rc = move_ref(&np, old, e + a->emit_off, err);
    }
  }
  if (rc) { /* cannot happen: the new pool is smaller than the old one */
    ck_agg_pool_fini(&np);
    return rc;
  }
  ck_agg_pool_fini(old);
  *old = np;
  return 0;
}

/* ---- output rows ---- */

/* Appends entry idx's keys (from its key entry) to the first nkeys columns of out. */
static void append_keys(const ck_agg_t *agg, ck_batch_t *out, uint32_t idx) {
  const char *ke = ck_agg_entry(agg, ck_agg_key_entry(agg, idx));
  for (int k = 0; k < agg->nkeys; k++) {
    if (ck_agg_bit(ke + agg->bits_off, k)) {
      ck_col_append_null(&out->cols[k]);
      continue;
    }
    ck_value_t v;
    ck_agg_val_load(agg, agg->key_cat[k], agg->key_types[k], ke + agg->key_off[k], &v);
    ck_col_append_value(&out->cols[k], &v);
  }
}

/* Appends the current output row of entry idx (keys, window bounds, results). */
static int append_row(ck_agg_t *agg, ck_batch_t *out, uint32_t idx, ck_error_t *err) {
  append_keys(agg, out, idx);
  int col = agg->nkeys;
  if (agg->windowed) {
    const ck_agg_win_t *w = &agg->wins.wins[ck_agg_ld32(ck_agg_entry(agg, idx) + CK_AGG_E_WID)];
    ck_col_append_i64(&out->cols[col++], w->start);
    ck_col_append_i64(&out->cols[col++], w->end);
  }
  for (int c = 0; c < agg->ncalls; c++) {
    ck_value_t v;
    int rc = acc_result(agg, idx, c, &v, err);
    if (rc) return rc;
    ck_col_append_value(&out->cols[col++], &v);
  }
  return 0;
}

static int emit(ck_agg_t *agg, ck_batch_t *batch, ck_error_t *err) {
  if (batch->nrows == 0) {
    ck_batch_free(batch);
    return 0;
  }
  return ck_op_emit(agg->op, batch, err);
}

/* Applies HAVING to a sealed batch: the rows that pass, in a new batch (batch is freed). */
static int having_filter(ck_agg_t *agg, ck_batch_t **batch, ck_error_t *err) {
  if (!agg->spec->having || (*batch)->nrows == 0) return 0;
  uint8_t *sel = ck_malloc((*batch)->nrows);
  int rc = ck_expr_eval_filter(agg->spec->having, *batch, sel, err);
  if (!rc) {
    ck_batch_t *kept = ck_batch_filter(*batch, sel);
    ck_batch_free(*batch);
    *batch = kept;
  }
  ck_free(sel);
  return rc;
}

/* ---- windowed: assigning records ---- */

static int64_t floor_to(int64_t ts, int64_t size) {
  int64_t m = ts % size;
  if (m < 0) m += size;
  int64_t r;
  return __builtin_sub_overflow(ts, m, &r) ? INT64_MIN : r;
}

/* The start of the window of `size` holding ts when windows start at offset + k * size
 * (Flink's window offset: ts - (ts - offset) mod size). */
static int64_t floor_off(int64_t ts, int64_t size, int64_t offset) {
  if (!offset) return floor_to(ts, size);
  int64_t m = (ts % size - offset % size) % size;
  if (m < 0) m += size;
  int64_t r;
  return __builtin_sub_overflow(ts, m, &r) ? INT64_MIN : r;
}

static bool is_late(const ck_agg_t *agg, int64_t end) {
  return ck_agg_sat_add(end, agg->lateness) <= agg->wm;
}

static bool read_time(const ck_col_t *col, size_t row, int64_t *ts) {
  if (!ck_col_valid(col, row)) return false;
  *ts = col->type.id == CK_T_INT32 ? ck_col_i32(col, row) : ck_col_i64(col, row);
  return true;
}

static int add_to_window(ck_agg_t *agg, uint64_t kh, int64_t start, int64_t end,
                         const ck_batch_t *b, size_t row, ck_error_t *err) {
  uint32_t wid = ck_agg_wins_get(&agg->wins, start, end), idx;
  bool created;
  int rc = ck_agg_group(agg, ck_agg_tag(kh, wid), wid, b, agg->spec->key_cols, row, true,
                        CK_AGG_F_ACC, &idx, &created, err);
  if (rc) return rc;
  if (created) {
    ck_agg_win_t *w = &agg->wins.wins[wid];
    ck_agg_st32(ck_agg_entry(agg, idx) + CK_AGG_E_NEXT, w->head);
    w->head = idx;
    agg->groups++;
  }
  return acc_add_row(agg, idx, b, row, err);
}

static int fire(ck_agg_t *agg, ck_error_t *err);

/* Before row `row` of b: the watermark it arrived under, when it is newer, fires what it
 * completes (see the DESIGN comment). */
static int advance_to_row(ck_agg_t *agg, const ck_batch_t *b, size_t row, ck_error_t *err) {
  if (!b->wms || b->wms[row] <= agg->wm) return 0;
  agg->wm = b->wms[row];
  /* the heap's first item is the earliest a window can be due (a stale one earlier still) */
  const ck_agg_wins_t *ws = &agg->wins;
  if (!ws->nheap || ck_agg_sat_add(ws->heap[0].end, agg->lateness) > agg->wm) return 0;
  return fire(agg, err);
}

static int process_windows(ck_agg_t *agg, const ck_batch_t *b, ck_error_t *err) {
  const ck_window_spec_t *ws = &agg->spec->window;
  const ck_col_t *tcol = &b->cols[ws->time_col];
  for (size_t row = 0; row < b->nrows; row++) {
    if (ck_mem_over()) return ck_mem_over_error(err); /* a record may open many windows */
    int rc = advance_to_row(agg, b, row, err);
    if (rc) return rc;
    int64_t ts;
    if (!read_time(tcol, row, &ts)) {
      agg->op->metrics.late_dropped++;
      continue;
    }
    uint64_t kh = ck_key_hash(b, agg->spec->key_cols, agg->nkeys, row);
    bool any = false;
    if (agg->kind == CK_WIN_TUMBLE) {
      int64_t start = floor_off(ts, ws->size, ws->offset), end = ck_agg_sat_add(start, ws->size);
      if (!is_late(agg, end)) {
        any = true;
        rc = add_to_window(agg, kh, start, end, b, row, err);
      }
    } else if (agg->kind == CK_WIN_HOP) {
      int64_t lo = ck_agg_sat_add(ts, -ws->size);
      for (int64_t start = floor_off(ts, ws->slide, ws->offset); start > lo && !rc;
           start -= ws->slide) {
        int64_t end = ck_agg_sat_add(start, ws->size);
        if (is_late(agg, end)) break; /* earlier starts end earlier still */
        any = true;
        rc = add_to_window(agg, kh, start, end, b, row, err);
        if ((uint64_t)start - (uint64_t)INT64_MIN < (uint64_t)ws->slide) break;
      }
    } else { /* CUMULATE */
      int64_t s = floor_off(ts, ws->size, ws->offset), last = ck_agg_sat_add(s, ws->size);
      for (int64_t k = (ts - s) / ws->step + 1; !rc; k++) {
        int64_t end = k > (last - s) / ws->step ? last : s + k * ws->step;
        if (end > ts && !is_late(agg, end)) {
          any = true;
          rc = add_to_window(agg, kh, s, end, b, row, err);
        }
        if (end == last) break;
      }
    }
    if (rc) return rc;
    if (!any) agg->op->metrics.late_dropped++;
  }
  return 0;
}

/* ---- sessions ---- */

static void session_unlink(ck_agg_t *agg, uint32_t dir, uint32_t wid) {
  char *d = ck_agg_entry(agg, dir);
  uint32_t cur = ck_agg_ld32(d + CK_AGG_E_WID), prev = CK_AGG_NONE;
  while (cur != wid) {
    ck_assert(cur != CK_AGG_NONE);
    prev = cur;
    cur = agg->wins.wins[cur].knext;
  }
  uint32_t next = agg->wins.wins[wid].knext;
  if (prev == CK_AGG_NONE) ck_agg_st32(d + CK_AGG_E_WID, next);
  else agg->wins.wins[prev].knext = next;
}

static void free_dir_if_empty(ck_agg_t *agg, uint32_t dir) {
  char *d = ck_agg_entry(agg, dir);
  if (ck_agg_ld32(d + CK_AGG_E_WID) != CK_AGG_NONE) return;
  ck_agg_index_remove(&agg->tab, dir, ck_agg_ld32(d + CK_AGG_E_TAG));
  ck_agg_entry_release(agg, dir);
  ck_agg_tab_free(&agg->tab, dir);
}

uint32_t ck_agg_session_new(ck_agg_t *agg, uint32_t dir, int64_t start, int64_t end) {
  uint32_t wid = ck_agg_wins_new(&agg->wins, start, end);
  uint32_t idx = ck_agg_tab_alloc(&agg->tab);
  char *e = ck_agg_entry(agg, idx);
  e[CK_AGG_E_FLAGS] = (char)(e[CK_AGG_E_FLAGS] | CK_AGG_F_ACC);
  ck_agg_st32(e + CK_AGG_E_WID, wid);
  ck_agg_st32(e + CK_AGG_E_NEXT, CK_AGG_NONE);
  ck_agg_st32(e + CK_AGG_E_TAG, 0);
  char *d = ck_agg_entry(agg, dir);
  ck_agg_win_t *w = &agg->wins.wins[wid];
  w->head = idx;
  w->dir = dir;
  w->knext = ck_agg_ld32(d + CK_AGG_E_WID);
  ck_agg_st32(d + CK_AGG_E_WID, wid);
  agg->groups++;
  return wid;
}

static int process_sessions(ck_agg_t *agg, const ck_batch_t *b, ck_error_t *err) {
  int64_t gap = agg->spec->window.gap;
  const ck_col_t *tcol = &b->cols[agg->spec->window.time_col];
  for (size_t row = 0; row < b->nrows; row++) {
    int rc = advance_to_row(agg, b, row, err);
    if (rc) return rc;
    int64_t ts;
    if (!read_time(tcol, row, &ts)) {
      agg->op->metrics.late_dropped++;
      continue;
    }
    int64_t end = ck_agg_sat_add(ts, gap);
    bool late = is_late(agg, end);
    uint64_t kh = ck_key_hash(b, agg->spec->key_cols, agg->nkeys, row);
    uint32_t dir;
    bool created;
    rc = ck_agg_group(agg, ck_agg_tag(kh, 0), CK_AGG_NONE, b, agg->spec->key_cols, row,
                          !late, 0, &dir, &created, err);
    if (rc) return rc;
    /* absorb every open session touching [ts, end] (inclusive, as Flink) into the first */
    uint32_t surv = CK_AGG_NONE, prev = CK_AGG_NONE;
    uint32_t cur = CK_AGG_NONE;
    if (dir != CK_AGG_NONE) cur = ck_agg_ld32(ck_agg_entry(agg, dir) + CK_AGG_E_WID);
    int64_t ns = ts, ne = end;
    while (cur != CK_AGG_NONE) {
      ck_agg_win_t *w = &agg->wins.wins[cur];
      uint32_t next = w->knext;
      if (w->start <= end && w->end >= ts) {
        if (w->start < ns) ns = w->start;
        if (w->end > ne) ne = w->end;
        if (surv == CK_AGG_NONE) {
          surv = cur;
          prev = cur;
        } else {
          uint32_t victim = w->head;
          rc = acc_merge(agg, agg->wins.wins[surv].head, victim,
                         w->start < agg->wins.wins[surv].start, err);
          if (rc) return rc;
          if (prev == CK_AGG_NONE) ck_agg_st32(ck_agg_entry(agg, dir) + CK_AGG_E_WID, next);
          else agg->wins.wins[prev].knext = next;
          ck_agg_entry_release(agg, victim);
          ck_agg_tab_free(&agg->tab, victim);
          ck_agg_wins_free(&agg->wins, cur);
          agg->groups--;
        }
      } else {
        prev = cur;
      }
      cur = next;
    }
    if (surv == CK_AGG_NONE) {
      if (late) {
        agg->op->metrics.late_dropped++;
        continue;
      }
      surv = ck_agg_session_new(agg, dir, ns, ne);
    } else {
      agg->wins.wins[surv].start = ns;
      agg->wins.wins[surv].end = ne;
    }
    rc = acc_add_row(agg, agg->wins.wins[surv].head, b, row, err);
    if (rc) return rc;
  }
  return 0;
}

/* ---- windowed: firing ---- */

static int fired_cmp(const void *pa, const void *pb, void *ctx) {
  const ck_agg_t *agg = ctx;
  uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
  const ck_agg_win_t *wa = &agg->wins.wins[ck_agg_ld32(ck_agg_entry(agg, a) + CK_AGG_E_WID)];
  const ck_agg_win_t *wb = &agg->wins.wins[ck_agg_ld32(ck_agg_entry(agg, b) + CK_AGG_E_WID)];
  if (wa->end != wb->end) return wa->end < wb->end ? -1 : 1;
  if (wa->start != wb->start) return wa->start < wb->start ? -1 : 1;
  int c = key_cmp(agg, ck_agg_key_entry(agg, a), ck_agg_key_entry(agg, b));
  if (c) return c;
  return (a > b) - (a < b);
}

static void free_window(ck_agg_t *agg, uint32_t wid) {
  ck_agg_win_t *w = &agg->wins.wins[wid];
  if (agg->session) {
    uint32_t idx = w->head, dir = w->dir;
    session_unlink(agg, dir, wid);
    ck_agg_entry_release(agg, idx);
    ck_agg_tab_free(&agg->tab, idx);
    agg->groups--;
    free_dir_if_empty(agg, dir);
  } else {
    for (uint32_t idx = w->head; idx != CK_AGG_NONE;) {
      char *e = ck_agg_entry(agg, idx);
      uint32_t next = ck_agg_ld32(e + CK_AGG_E_NEXT);
      ck_agg_index_remove(&agg->tab, idx, ck_agg_ld32(e + CK_AGG_E_TAG));
      ck_agg_entry_release(agg, idx);
      ck_agg_tab_free(&agg->tab, idx);
      agg->groups--;
      idx = next;
    }
  }
  ck_agg_wins_free(&agg->wins, wid);
}

/* Emits the fired rows gathered so far (HAVING applied). Windows fired by several rows'
 * watermarks within one input batch leave as one output batch, not one per firing; they are
 * emitted before the operator forwards a watermark or takes its next batch, so nothing
 * downstream can tell. */
static int emit_fired(ck_agg_t *agg, ck_error_t *err) {
  ck_batch_t *batch = agg->fired;
  agg->fired = NULL;
  if (!batch) return 0;
  ck_batch_seal(batch);
  int rc = having_filter(agg, &batch, err);
  if (rc) {
    ck_batch_free(batch);
    return rc;
  }
  return emit(agg, batch, err);
}

/* Fires every window the watermark completed, in (end, start, key) order, into agg->fired. */
static int fire(ck_agg_t *agg, ck_error_t *err) {
  uint32_t *wids = NULL, *rows = NULL, wid;
  size_t nw = 0, capw = 0, nr = 0, capr = 0;
  int rc = 0;
  while (ck_agg_wins_pop_due(&agg->wins, agg->wm, agg->lateness, &wid)) {
    if (nw == capw) {
      capw = capw ? capw * 2 : 16;
      wids = ck_realloc(wids, capw * sizeof *wids);
    }
    wids[nw++] = wid;
    for (uint32_t idx = agg->wins.wins[wid].head; idx != CK_AGG_NONE;
         idx = agg->session ? CK_AGG_NONE : ck_agg_ld32(ck_agg_entry(agg, idx) + CK_AGG_E_NEXT)) {
      if (nr == capr) {
        capr = capr ? capr * 2 : 64;
        rows = ck_realloc(rows, capr * sizeof *rows);
      }
      rows[nr++] = idx;
    }
  }
  if (nr) qsort_r(rows, nr, sizeof *rows, fired_cmp, agg);
  for (size_t i = 0; i < nr && !rc; i++) {
    if (!agg->fired) agg->fired = ck_batch_new(agg->nout, agg->out_types, CK_BATCH_ROWS);
    rc = append_row(agg, agg->fired, rows[i], err);
    if (rc) { /* a row half appended: the gathered rows cannot leave */
      ck_batch_free(agg->fired);
      agg->fired = NULL;
    } else if (++agg->fired->nrows == CK_BATCH_ROWS) {
      rc = emit_fired(agg, err);
    }
  }
  for (size_t i = 0; i < nw; i++) free_window(agg, wids[i]);
  ck_free(wids);
  ck_free(rows);
  return rc;
}

/* ---- unwindowed: the changelog ---- */

/* Folds the batch into its groups and lists, in the order of their first change, the groups
 * whose accumulators changed (a new group counts as changed: its row has never been emitted). */
static int process_groups(ck_agg_t *agg, const ck_batch_t *b, ck_error_t *err) {
  size_t span = agg->acc_end - agg->bits_off; /* has-bits and accumulators */
  for (size_t row = 0; row < b->nrows; row++) {
    uint64_t kh = ck_key_hash(b, agg->spec->key_cols, agg->nkeys, row);
    uint32_t idx;
    bool created;
    int rc = ck_agg_group(agg, ck_agg_tag(kh, 0), 0, b, agg->spec->key_cols, row, true,
                          CK_AGG_F_ACC, &idx, &created, err);
    if (rc) return rc;
    if (created) agg->groups++;
    bool dirty = ck_agg_entry(agg, idx)[CK_AGG_E_FLAGS] & CK_AGG_F_DIRTY;
    if (!dirty && !created) memcpy(agg->scratch, ck_agg_entry(agg, idx) + agg->bits_off, span);
    rc = acc_add_row(agg, idx, b, row, err);
    if (rc) return rc;
    char *e = ck_agg_entry(agg, idx);
    /* a UDF's accumulator or LISTAGG's/HLL's may change only in memory it owns: its group is
     * always a candidate (flush_changes still emits only rows whose values changed) */
    if (dirty || (!created && !agg->inplace && !agg->udf_calls &&
                  memcmp(agg->scratch, e + agg->bits_off, span) == 0))
      continue;
    e[CK_AGG_E_FLAGS] = (char)(e[CK_AGG_E_FLAGS] | CK_AGG_F_DIRTY);
    if (agg->ndirty == agg->dirty_cap) {
      agg->dirty_cap = agg->dirty_cap ? agg->dirty_cap * 2 : 64;
      agg->dirty = ck_realloc(agg->dirty, agg->dirty_cap * sizeof *agg->dirty);
    }
    agg->dirty[agg->ndirty++] = idx;
  }
  return 0;
}

static void emitted_release(ck_agg_t *agg, uint32_t idx) {
  char *e = ck_agg_entry(agg, idx);
  for (int c = 0; c < agg->ncalls; c++) {
    const ck_agg_acc_t *a = &agg->acc[c];
    if (a->rcat == CK_AGG_V_STR && !ck_agg_bit(e + agg->bits_off, a->emit_bit))
      ck_agg_pool_release(&agg->pool, ck_agg_ldref(e + a->emit_off));
  }
  e[CK_AGG_E_FLAGS] = (char)(e[CK_AGG_E_FLAGS] & ~CK_AGG_F_EMITTED);
}

static void emitted_load(const ck_agg_t *agg, uint32_t idx, int c, ck_value_t *v) {
  const ck_agg_acc_t *a = &agg->acc[c];
  const char *e = ck_agg_entry(agg, idx);
  if (ck_agg_bit(e + agg->bits_off, a->emit_bit)) {
    memset(v, 0, sizeof *v);
    v->type = a->call->result_type;
    v->is_null = true;
    return;
  }
  ck_agg_val_load(agg, a->rcat, a->call->result_type, e + a->emit_off, v);
}

/* Remembers row i of cand (the entry's current output) as the last emitted row. */
static int emitted_store(ck_agg_t *agg, uint32_t idx, const ck_batch_t *cand, size_t i,
                         ck_error_t *err) {
  if (ck_agg_entry(agg, idx)[CK_AGG_E_FLAGS] & CK_AGG_F_EMITTED) emitted_release(agg, idx);
  for (int c = 0; c < agg->ncalls; c++) {
    const ck_agg_acc_t *a = &agg->acc[c];
    ck_value_t v;
    ck_col_get_value(&cand->cols[agg->nkeys + c], i, &v);
    char *e = ck_agg_entry(agg, idx);
    ck_agg_setbit(e + agg->bits_off, a->emit_bit, v.is_null);
    if (v.is_null) continue;
    if (a->rcat == CK_AGG_V_STR) {
      ck_agg_sref_t r;
      int rc = ck_agg_pool_add(&agg->pool, v.v.s.ptr, v.v.s.len, &r, err);
      if (rc) {
        ck_agg_setbit(e + agg->bits_off, a->emit_bit, true);
        return rc;
      }
      ck_agg_stref(e + a->emit_off, r);
    } else {
      val_bytes(a->rcat, &v, e + a->emit_off);
      if (a->rcat == CK_AGG_V_FLOAT) ck_agg_stf(e + a->emit_off, v.v.f);
    }
  }
  char *e = ck_agg_entry(agg, idx);
  e[CK_AGG_E_FLAGS] = (char)(e[CK_AGG_E_FLAGS] | CK_AGG_F_EMITTED);
  return 0;
}

static bool row_changed(const ck_agg_t *agg, uint32_t idx, const ck_batch_t *cand, size_t i) {
  for (int c = 0; c < agg->ncalls; c++) {
    ck_value_t now, was;
    ck_col_get_value(&cand->cols[agg->nkeys + c], i, &now);
    emitted_load(agg, idx, c, &was);
    if (!val_same(agg->acc[c].rcat, &now, &was)) return true;
  }
  return false;
}

static void clear_dirty(ck_agg_t *agg) {
  for (size_t i = 0; i < agg->ndirty; i++) {
    char *e = ck_agg_entry(agg, agg->dirty[i]);
    e[CK_AGG_E_FLAGS] = (char)(e[CK_AGG_E_FLAGS] & ~CK_AGG_F_DIRTY);
  }
  agg->ndirty = 0;
}

/* Emits the changelog rows of the groups the last batch touched (see the DESIGN comment). */
static int flush_changes(ck_agg_t *agg, ck_error_t *err) {
  int rc = 0;
  for (size_t base = 0; base < agg->ndirty && !rc; base += CK_BATCH_ROWS) {
    size_t m = agg->ndirty - base < CK_BATCH_ROWS ? agg->ndirty - base : CK_BATCH_ROWS;
    const uint32_t *ids = agg->dirty + base;
    ck_batch_t *cand = ck_batch_new(agg->nout, agg->out_types, m), *out = NULL;
    uint8_t *sel = ck_malloc(m), *kinds = ck_malloc(m);
    for (size_t i = 0; i < m && !rc; i++) rc = append_row(agg, cand, ids[i], err);
    if (!rc) {
      ck_batch_seal(cand);
      if (agg->spec->having) rc = ck_expr_eval_filter(agg->spec->having, cand, sel, err);
      else memset(sel, 1, m);
    }
    if (!rc) {
      out = ck_batch_new(agg->nout, agg->out_types, m);
      size_t n = 0;
      for (size_t i = 0; i < m && !rc; i++) {
        uint32_t idx = ids[i];
        bool live = ck_agg_entry(agg, idx)[CK_AGG_E_FLAGS] & CK_AGG_F_EMITTED;
        if (sel[i]) {
          if (live && !row_changed(agg, idx, cand, i)) continue;
          for (int c = 0; c < agg->nout; c++) ck_col_append_from(&out->cols[c], &cand->cols[c], i);
          kinds[n++] = live ? CK_ROW_UPDATE_AFTER : CK_ROW_INSERT;
          rc = emitted_store(agg, idx, cand, i, err);
        } else if (live) {
          append_keys(agg, out, idx);
          for (int c = 0; c < agg->ncalls; c++) {
            ck_value_t v;
            emitted_load(agg, idx, c, &v);
            ck_col_append_value(&out->cols[agg->nkeys + c], &v);
          }
          kinds[n++] = CK_ROW_DELETE;
          emitted_release(agg, idx);
        }
      }
      ck_batch_seal(out);
      if (!agg->spec->emit_final) /* emit_final: every row is a first INSERT */
        for (size_t i = 0; i < n; i++) ck_batch_set_kind(out, i, (ck_row_kind_t)kinds[i]);
    }
    ck_batch_free(cand);
    ck_free(sel);
    ck_free(kinds);
    if (out) {
      if (rc) ck_batch_free(out);
      else rc = emit(agg, out, err);
    }
  }
  clear_dirty(agg);
  return rc;
}

/* ---- the operator ---- */

static int check_input(const ck_agg_t *agg, const ck_batch_t *b, ck_error_t *err) {
  char want[48], got[48];
  for (int k = 0; k < agg->nkeys; k++) {
    int col = agg->spec->key_cols[k];
    if (col < 0 || col >= b->ncols || !ck_type_eq(b->cols[col].type, agg->key_types[k]))
      return ck_error_set(err, CK_EINVAL,
                          "could not aggregate: group key column %d of the input is %s, "
                          "expected %s",
                          col, col >= 0 && col < b->ncols
                                   ? ck_type_name(b->cols[col].type, got, sizeof got)
                                   : "missing",
                          ck_type_name(agg->key_types[k], want, sizeof want));
  }
  for (int c = 0; c < agg->ncalls; c++) {
    const ck_agg_call_t *call = agg->acc[c].call;
    if (call->fn == CK_AGG_COUNT_STAR) continue;
    int col = call->arg_col;
    if (col < 0 || col >= b->ncols || !ck_type_eq(b->cols[col].type, call->arg_type))
      return ck_error_set(err, CK_EINVAL,
                          "could not aggregate: argument column %d of the input is %s, "
                          "expected %s",
                          col, col >= 0 && col < b->ncols
                                   ? ck_type_name(b->cols[col].type, got, sizeof got)
                                   : "missing",
                          ck_type_name(call->arg_type, want, sizeof want));
  }
  if (agg->windowed) {
    int col = agg->spec->window.time_col;
    ck_type_id_t t = col >= 0 && col < b->ncols ? b->cols[col].type.id : CK_T_NULL;
    if (t != CK_T_TIMESTAMP && t != CK_T_INT64 && t != CK_T_INT32)
      return ck_error_set(err, CK_EINVAL,
                          "could not aggregate: event time column %d of the input is not a "
                          "TIMESTAMP or BIGINT",
                          col);
  }
  if (b->kinds)
    for (size_t i = 0; i < b->nrows; i++)
      if (b->kinds[i] != CK_ROW_INSERT)
        return ck_error_set(err, CK_EUNSUPPORTED,
                            "could not aggregate: the input is an update stream (row %zu is "
                            "not an insert); aggregating retractions is not supported",
                            i);
  return 0;
}

static int agg_open(ck_op_t *op, ck_error_t *err) { return 0; }

static int agg_process(ck_op_t *op, const ck_batch_t *batch, ck_error_t *err) {
  ck_agg_t *agg = op->impl;
  op->metrics.records_in += (int64_t)batch->nrows;
  if (batch->nrows == 0) return 0;
  int rc = check_input(agg, batch, err);
  if (rc) return rc;
  if (!agg->windowed) rc = process_groups(agg, batch, err);
  else if (agg->session) rc = process_sessions(agg, batch, err);
  else rc = process_windows(agg, batch, err);
  if (agg->windowed) {
    int frc = emit_fired(agg, err); /* on an error too: nothing stays gathered */
    if (!rc) rc = frc;
  }
  if (!agg->windowed && (rc || !agg->spec->emit_final)) { /* on an error too: no group stays
                                                             marked */
    int frc = rc ? 0 : flush_changes(agg, err);
    if (rc) clear_dirty(agg);
    else rc = frc;
  }
  if (!rc) rc = maybe_compact(agg, err);
  ck_agg_update_metrics(agg);
  return rc;
}

static int agg_watermark(ck_op_t *op, int64_t wm, ck_error_t *err) {
  ck_agg_t *agg = op->impl;
  if (wm <= agg->wm_sent) return 0; /* nothing new: watermarks only advance */
  op->metrics.watermark = wm;
  int rc = 0;
  if (wm > agg->wm) { /* else a row already carried it here */
    agg->wm = wm;
    rc = agg->windowed ? fire(agg, err) : 0;
    int frc = emit_fired(agg, err);
    if (!rc) rc = frc;
  }
  agg->wm_sent = wm;
  if (!rc && !agg->windowed && agg->spec->emit_final && wm == CK_WATERMARK_MAX)
    rc = flush_changes(agg, err); /* the end of a bounded input: every group, once */
  if (!rc) rc = maybe_compact(agg, err);
  ck_agg_update_metrics(agg);
  if (rc) return rc;
  return ck_op_emit_watermark(op, wm, err);
}

static void agg_close(ck_op_t *op) {
  ck_agg_t *agg = op->impl;
  if (!agg) return;
  ck_batch_free(agg->fired);
  for (uint32_t i = 0; i < agg->tab.nslab; i++)
    if (ck_agg_entry(agg, i)[CK_AGG_E_FLAGS] & CK_AGG_F_USED) ck_agg_entry_release(agg, i);
  ck_agg_tab_fini(&agg->tab);
  ck_agg_pool_fini(&agg->pool);
  ck_agg_wins_fini(&agg->wins);
  ck_free(agg->dirty);
  ck_free(agg->scratch);
  ck_free(agg->key_types);
  ck_free(agg->key_cat);
  ck_free(agg->key_off);
  ck_free(agg->key_ident);
  ck_free(agg->acc);
  ck_free(agg);
  op->impl = NULL;
}

static const ck_op_ops_t agg_ops = {
    .open = agg_open,
    .process = agg_process,
    .watermark = agg_watermark,
    .snapshot = ck_agg_snapshot,
    .restore = ck_agg_restore,
    .close = agg_close,
};

/* Checks a call's argument and result types and picks its accumulator. */
static int plan_call(ck_agg_acc_t *a, const ck_agg_call_t *call, ck_error_t *err) {
  char at[48], rt[48];
  ck_type_t arg = call->arg_type, res = call->result_type;
  bool ok = false;
  a->call = call;
  a->acat = ck_agg_vcat_of(arg);
  a->distinct = call->distinct && call->fn != CK_AGG_COUNT_STAR && call->fn != CK_AGG_MIN &&
                call->fn != CK_AGG_MAX && call->fn != CK_AGG_FIRST_VALUE &&
                call->fn != CK_AGG_LAST_VALUE && call->fn != CK_AGG_APPROX_COUNT_DISTINCT;
  switch (call->fn) {
    case CK_AGG_COUNT_STAR:
    case CK_AGG_COUNT:
      a->kind = CK_AGG_A_COUNT;
      ok = res.id == CK_T_INT64 && (call->fn == CK_AGG_COUNT_STAR || arg.id != CK_T_NULL);
      break;
    case CK_AGG_SUM:
      if (ck_type_is_integer(arg)) a->kind = CK_AGG_A_SUM_I, ok = res.id == CK_T_INT64;
      else if (arg.id == CK_T_DECIMAL)
        a->kind = CK_AGG_A_SUM_D, ok = res.id == CK_T_DECIMAL && res.scale >= arg.scale;
      else if (arg.id == CK_T_FLOAT32 || arg.id == CK_T_FLOAT64)
        a->kind = CK_AGG_A_SUM_F, ok = res.id == CK_T_FLOAT64;
      break;
    case CK_AGG_AVG:
      if (ck_type_is_integer(arg)) a->kind = CK_AGG_A_AVG_I, ok = res.id == CK_T_FLOAT64;
      else if (arg.id == CK_T_DECIMAL)
        a->kind = CK_AGG_A_AVG_D, ok = res.id == CK_T_DECIMAL && res.scale >= arg.scale;
      else if (arg.id == CK_T_FLOAT32 || arg.id == CK_T_FLOAT64)
        a->kind = CK_AGG_A_AVG_F, ok = res.id == CK_T_FLOAT64;
      break;
    case CK_AGG_MIN:
    case CK_AGG_MAX:
      a->kind = CK_AGG_A_MINMAX;
      a->is_min = call->fn == CK_AGG_MIN;
      ok = arg.id != CK_T_NULL && ck_type_eq(arg, res);
      break;
    case CK_AGG_FIRST_VALUE:
    case CK_AGG_LAST_VALUE:
      a->kind = CK_AGG_A_FIRSTLAST;
      a->is_min = call->fn == CK_AGG_FIRST_VALUE;
      ok = arg.id != CK_T_NULL && ck_type_eq(arg, res);
      break;
    case CK_AGG_LISTAGG:
      a->kind = CK_AGG_A_LISTAGG;
      ok = arg.id == CK_T_STRING && res.id == CK_T_STRING;
      break;
    case CK_AGG_APPROX_COUNT_DISTINCT:
      a->kind = CK_AGG_A_HLL;
      ok = arg.id != CK_T_NULL && res.id == CK_T_INT64;
      break;
    case CK_AGG_UDF:
      a->kind = CK_AGG_A_UDF;
      a->distinct = false;
      ok = call->udf && call->udf->aggregate && ck_type_eq(arg, call->udf->args[0]) &&
           ck_type_eq(res, call->udf->result);
      break;
  }
  if ((unsigned)call->fn >= CK_ARRAY_LEN(fn_names))
    return ck_error_set(err, CK_EUNSUPPORTED, "could not plan aggregation: unknown function %d",
                        (int)call->fn);
  if (!ok)
    return ck_error_set(err, CK_EUNSUPPORTED,
                        "could not plan aggregation: %s of %s giving %s is not supported",
                        fn_names[call->fn], ck_type_name(arg, at, sizeof at),
                        ck_type_name(res, rt, sizeof rt));
  a->rcat = ck_agg_rcat_of(a->kind, a->acat);
  if (a->kind == CK_AGG_A_UDF) a->rcat = ck_agg_vcat_of(res);
  return 0;
}

static uint32_t acc_width(const ck_agg_acc_t *a) {
  switch (a->kind) {
    case CK_AGG_A_COUNT: return 8;
    case CK_AGG_A_SUM_I:
    case CK_AGG_A_SUM_D: return 16;
    case CK_AGG_A_SUM_F: return 24; /* hi, lo, big */
    case CK_AGG_A_AVG_I:
    case CK_AGG_A_AVG_D: return 24;
    case CK_AGG_A_AVG_F: return 32; /* hi, lo, n, big */
    case CK_AGG_A_MINMAX: return (uint32_t)ck_agg_vcat_width(a->acat);
    case CK_AGG_A_FIRSTLAST: return (uint32_t)ck_agg_vcat_width(a->acat) + 8; /* value, seq */
    case CK_AGG_A_LISTAGG:
    case CK_AGG_A_HLL: return (uint32_t)sizeof(void *);
    case CK_AGG_A_UDF: return a->call->udf->desc->acc_size;
  }
  return 0;
}

static int check_window(const ck_window_spec_t *w, ck_error_t *err) {
  bool ok = true;
  switch (w->kind) {
    case CK_WIN_NONE: return 0;
    case CK_WIN_TUMBLE: ok = w->size > 0; break;
    case CK_WIN_HOP: ok = w->size > 0 && w->slide > 0; break;
    case CK_WIN_SESSION: ok = w->gap > 0; break;
    case CK_WIN_CUMULATE: ok = w->step > 0 && w->size > 0 && w->step <= w->size; break;
    default: ok = false;
  }
  if (!ok)
    return ck_error_set(err, CK_EINVAL,
                        "could not plan window: size, slide, gap and step must be positive "
                        "(size %lld, slide %lld, gap %lld, step %lld)",
                        (long long)w->size, (long long)w->slide, (long long)w->gap,
                        (long long)w->step);
  return 0;
}

int ck_agg_op_init(ck_op_t *op, ck_error_t *err) {
  const ck_node_t *node = op->node;
  const ck_agg_spec_t *spec = &node->u.agg;
  char t1[48], t2[48];
  if (node->kind != CK_NODE_AGG)
    return ck_error_set(err, CK_EINVAL, "could not start aggregation: node %d is not one",
                        node->id);
  int rc = check_window(&spec->window, err);
  if (rc) return rc;
  bool windowed = spec->window.kind != CK_WIN_NONE;
  int nout = spec->nkeys + (windowed ? 2 : 0) + spec->ncalls;
  if (node->out_schema.ncols != nout)
    return ck_error_set(err, CK_EINVAL,
                        "could not start aggregation: its output has %d columns, expected %d",
                        node->out_schema.ncols, nout);
  if (windowed && (node->out_schema.types[spec->nkeys].id != CK_T_TIMESTAMP ||
                   node->out_schema.types[spec->nkeys + 1].id != CK_T_TIMESTAMP))
    return ck_error_set(err, CK_EINVAL,
                        "could not start aggregation: window_start and window_end must be "
                        "TIMESTAMP columns");

  ck_agg_t *agg = ck_calloc(1, sizeof *agg);
  agg->op = op;
  agg->spec = spec;
  agg->kind = spec->window.kind;
  agg->windowed = windowed;
  agg->session = agg->kind == CK_WIN_SESSION;
  agg->shared = windowed && !agg->session;
  agg->lateness = spec->allowed_lateness_ms > 0 ? spec->allowed_lateness_ms : 0;
  agg->nkeys = spec->nkeys;
  agg->ncalls = spec->ncalls;
  agg->nout = nout;
  agg->out_types = node->out_schema.types;
  agg->maxp = op->max_parallelism > 0 ? op->max_parallelism : 128;
  agg->wm = agg->wm_sent = CK_WATERMARK_MIN;
  size_t nk = (size_t)(agg->nkeys ? agg->nkeys : 1), nc = (size_t)(agg->ncalls ? agg->ncalls : 1);
  agg->key_types = ck_calloc(nk, sizeof *agg->key_types);
  agg->key_cat = ck_calloc(nk, sizeof *agg->key_cat);
  agg->key_off = ck_calloc(nk, sizeof *agg->key_off);
  agg->key_ident = ck_calloc(nk, sizeof *agg->key_ident);
  agg->acc = ck_calloc(nc, sizeof *agg->acc);
  op->impl = agg;

  /* layout: header, bitmap, keys, accumulators, last emitted values */
  int nbits = agg->nkeys;
  for (int c = 0; c < agg->ncalls && !rc; c++) {
    ck_agg_acc_t *a = &agg->acc[c];
    rc = plan_call(a, &spec->calls[c], err);
    if (rc) break;
    ck_type_t col = node->out_schema.types[nout - agg->ncalls + c];
    if (!ck_type_eq(col, spec->calls[c].result_type))
      rc = ck_error_set(err, CK_EINVAL,
                        "could not start aggregation: output column %d is %s but the "
                        "aggregate gives %s",
                        nout - agg->ncalls + c, ck_type_name(col, t1, sizeof t1),
                        ck_type_name(spec->calls[c].result_type, t2, sizeof t2));
    if (a->kind == CK_AGG_A_UDF) agg->udf_calls = true;
    a->has_bit = a->kind == CK_AGG_A_SUM_I || a->kind == CK_AGG_A_SUM_D ||
                         a->kind == CK_AGG_A_SUM_F || a->kind == CK_AGG_A_MINMAX ||
                         a->kind == CK_AGG_A_FIRSTLAST || a->kind == CK_AGG_A_UDF
                     ? nbits++
                     : -1;
  }
  for (int c = 0; c < agg->ncalls && !rc; c++)
    agg->inplace |= agg->acc[c].kind == CK_AGG_A_LISTAGG || agg->acc[c].kind == CK_AGG_A_HLL;
  for (int c = 0; c < agg->ncalls && !rc && !windowed; c++) agg->acc[c].emit_bit = nbits++;
  for (int k = 0; k < agg->nkeys && !rc; k++) {
    agg->key_types[k] = node->out_schema.types[k];
    agg->key_cat[k] = ck_agg_vcat_of(agg->key_types[k]);
    agg->key_ident[k] = k;
    if (agg->key_types[k].id == CK_T_NULL)
      rc = ck_error_set(err, CK_EINVAL, "could not start aggregation: group key %d has no type", k);
  }
  if (rc) {
    agg_close(op);
    return rc;
  }
  op->ops = &agg_ops;
  uint32_t off = CK_AGG_E_HDR;
  agg->bits_off = off;
  off += (uint32_t)(nbits + 7) / 8;
  for (int k = 0; k < agg->nkeys; k++) {
    agg->key_off[k] = off;
    off += (uint32_t)ck_agg_vcat_width(agg->key_cat[k]);
  }
  for (int c = 0; c < agg->ncalls; c++) {
    ck_agg_acc_t *a = &agg->acc[c];
    a->off = off;
    off += acc_width(a);
    if (a->distinct) {
      a->set_off = off;
      off += (uint32_t)sizeof(ck_agg_dset_t *);
    }
  }
  agg->acc_end = off;
  agg->scratch = ck_malloc(off);
  for (int c = 0; c < agg->ncalls && !windowed; c++) {
    ck_agg_acc_t *a = &agg->acc[c];
    a->emit_off = off;
    off += (uint32_t)ck_agg_vcat_width(a->rcat);
  }
  agg->esize = off;
  ck_agg_tab_init(&agg->tab, off);
  ck_agg_pool_init(&agg->pool);
  ck_agg_wins_init(&agg->wins, agg->shared);
  ck_agg_update_metrics(agg);
  return 0;
}
