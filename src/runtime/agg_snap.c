/*
 * DESIGN: snapshot and restore of the aggregation operator's state.
 *
 * Encoding (little endian, version 2; version 1, still read, had SUM of integers as an i64 and
 * no `big` part in SUM/AVG of doubles):
 *   "CKAG" u16 version
 *   shape: u8 window kind, i64 size, slide, gap, step; u16 nkeys, per key (u8 type, u8 p,
 *          u8 s); u16 ncalls, per call (u8 fn, u8 distinct, arg type, result type as above);
 *          u32 max_parallelism — restore refuses a snapshot of a different shape
 *   i64 watermark
 *   u64 record count, then one record per group (per session; per window and key):
 *     u32 key group (ck_key_group of ck_key_hash of the key, so state can be redistributed)
 *     windowed: i64 window start, i64 window end
 *     per key: u8 is_null, then the value unless NULL
 *     per call: its accumulator — COUNT i64; SUM u8 has + i128 (integers and decimals) |
 *               f64 hi, f64 lo, i64 big (the sum is big·2^1000 + hi + lo);
 *               AVG i128 sum, i64 n | f64 hi, f64 lo, i64 n, i64 big; MIN/MAX u8 has + value;
 *               FIRST_VALUE/LAST_VALUE u8 has + i64 arrival number + value when has;
 *               LISTAGG u8 has + u32 length + text; APPROX_COUNT_DISTINCT u8 has, when has
 *               u16 count of non-zero registers + (u16 register, u8 rank) each;
 *               DISTINCT: u32 count + the values
 *     unwindowed: u8 emitted; when set, per call u8 is_null + the value last emitted
 *   A value is its canonical state form: BOOL 1 byte, integers and TIMESTAMP i64, floats f64,
 *   DECIMAL i128 unscaled, VARCHAR u32 length + bytes.
 *
 * Restore may be called once per snapshot of the old subtasks (rescaling): records of key
 * groups this subtask does not own are skipped, the rest are added to the state, and the
 * watermark becomes the least of the restored ones. Nothing before the first record is taken
 * on trust: a truncated or foreign snapshot is CK_ESTATE.
 *
 * Threads: the subtask's thread, between batches.
 */
#include "base/alloc.h"
#include "base/bytes.h"
#include "runtime/agg.h"
#include "runtime/udf.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the snapshot encoding copies little-endian values as they are in memory");

#define SNAP_VERSION 2

/* ---- writing ---- */

static void put(ck_buf_t *b, const void *p, size_t n) { ck_buf_append(b, p, n); }
static void put_i64(ck_buf_t *b, int64_t v) { ck_buf_put_le64(b, (uint64_t)v); }
static void put_type(ck_buf_t *b, ck_type_t t) {
  ck_buf_put_u8(b, (uint8_t)t.id);
  ck_buf_put_u8(b, t.precision);
  ck_buf_put_u8(b, t.scale);
}

/* A canonical slot (see agg.h) as its encoded value. */
static void put_slot(ck_buf_t *b, const ck_agg_t *agg, ck_agg_vcat_t cat, const char *p) {
  if (cat == CK_AGG_V_STR) {
    ck_agg_sref_t r = ck_agg_ldref(p);
    ck_buf_put_le32(b, r.len);
    put(b, ck_agg_pool_str(&agg->pool, r), r.len);
  } else {
    put(b, p, (size_t)ck_agg_vcat_width(cat));
  }
}

static void put_shape(ck_buf_t *b, const ck_agg_t *agg) {
  const ck_window_spec_t *w = &agg->spec->window;
  ck_buf_put_u8(b, (uint8_t)w->kind);
  put_i64(b, w->size);
  put_i64(b, w->slide);
  put_i64(b, w->gap);
  put_i64(b, w->step);
  ck_buf_put_le16(b, (uint16_t)agg->nkeys);
  for (int k = 0; k < agg->nkeys; k++) put_type(b, agg->key_types[k]);
  ck_buf_put_le16(b, (uint16_t)agg->ncalls);
  for (int c = 0; c < agg->ncalls; c++) {
    const ck_agg_acc_t *a = &agg->acc[c];
    ck_buf_put_u8(b, (uint8_t)a->call->fn);
    ck_buf_put_u8(b, a->distinct);
    put_type(b, a->call->arg_type);
    put_type(b, a->call->result_type);
  }
  ck_buf_put_le32(b, (uint32_t)agg->maxp);
}

static void put_acc(ck_buf_t *b, const ck_agg_t *agg, const char *e, int c) {
  const ck_agg_acc_t *a = &agg->acc[c];
  const char *p = e + a->off;
  bool has = a->has_bit >= 0 && ck_agg_bit(e + agg->bits_off, a->has_bit);
  switch (a->kind) {
    case CK_AGG_A_COUNT: put(b, p, 8); break;
    case CK_AGG_A_SUM_I:
    case CK_AGG_A_SUM_D: ck_buf_put_u8(b, has); put(b, p, 16); break;
    case CK_AGG_A_SUM_F: ck_buf_put_u8(b, has); put(b, p, 24); break;
    case CK_AGG_A_AVG_I:
    case CK_AGG_A_AVG_D: put(b, p, 24); break;
    case CK_AGG_A_AVG_F: put(b, p, 32); break;
    case CK_AGG_A_MINMAX:
      ck_buf_put_u8(b, has);
      if (has) put_slot(b, agg, a->acat, p);
      break;
    case CK_AGG_A_FIRSTLAST:
      ck_buf_put_u8(b, has);
      put(b, p + ck_agg_vcat_width(a->acat), 8);
      if (has) put_slot(b, agg, a->acat, p);
      break;
    case CK_AGG_A_LISTAGG: {
      const ck_agg_sbuf_t *sb;
      memcpy(&sb, p, sizeof sb);
      ck_buf_put_u8(b, sb != NULL);
      if (sb) {
        ck_buf_put_le32(b, sb->len);
        put(b, sb->data, sb->len);
      }
      break;
    }
    case CK_AGG_A_HLL: {
      const uint8_t *regs;
      memcpy(&regs, p, sizeof regs);
      ck_buf_put_u8(b, regs != NULL);
      if (!regs) break;
      uint16_t n = 0;
      for (uint32_t i = 0; i < CK_AGG_HLL_M; i++) n = (uint16_t)(n + (regs[i] != 0));
      ck_buf_put_le16(b, n);
      for (uint32_t i = 0; i < CK_AGG_HLL_M; i++)
        if (regs[i]) {
          ck_buf_put_le16(b, (uint16_t)i);
          ck_buf_put_u8(b, regs[i]);
        }
      break;
    }
    case CK_AGG_A_UDF: /* u8 has, then u32 length + the function's serialised form */
      ck_buf_put_u8(b, has);
      if (has && ck_udf_agg_serialise(a->call->udf, p, b, agg->snap_err) && agg->snap_err)
        ((ck_agg_t *)agg)->snap_failed = true; /* put_acc reads the state: only this flag */
      break;
  }
  if (a->distinct) {
    const ck_agg_dset_t *set;
    memcpy(&set, e + a->set_off, sizeof set);
    uint32_t n = set ? set->count : 0;
    bool is_str = a->acat == CK_AGG_V_STR;
    int vw = ck_agg_vcat_width(a->acat);
    ck_buf_put_le32(b, n);
    for (uint32_t i = 0; i < n; i++) {
      size_t len = 0;
      const char *v = ck_agg_dset_get(set, vw, is_str, i, &len);
      if (is_str) {
        ck_buf_put_le32(b, (uint32_t)len);
        put(b, v, len);
      } else {
        put(b, v, (size_t)vw);
      }
    }
  }
}

/* Row 0 of kb := the key held by entry ke. */
static void key_to_batch(const ck_agg_t *agg, ck_batch_t *kb, uint32_t ke) {
  const char *e = ck_agg_entry(agg, ke);
  ck_batch_clear(kb);
  for (int k = 0; k < agg->nkeys; k++) {
    if (ck_agg_bit(e + agg->bits_off, k)) {
      ck_col_append_null(&kb->cols[k]);
      continue;
    }
    ck_value_t v;
    ck_agg_val_load(agg, agg->key_cat[k], agg->key_types[k], e + agg->key_off[k], &v);
    ck_col_append_value(&kb->cols[k], &v);
  }
  kb->nrows = 1;
}

int ck_agg_snapshot(ck_op_t *op, ck_buf_t *out, ck_error_t *err) {
  ck_agg_t *agg = op->impl;
  put(out, "CKAG", 4);
  ck_buf_put_le16(out, SNAP_VERSION);
  put_shape(out, agg);
  put_i64(out, agg->wm);
  size_t count_at = out->len;
  uint64_t count = 0;
  put(out, &count, 8);
  ck_batch_t *kb = ck_batch_new(agg->nkeys, agg->key_types, 1);
  for (uint32_t idx = 0; idx < agg->tab.nslab; idx++) {
    const char *e = ck_agg_entry(agg, idx);
    if (!(e[CK_AGG_E_FLAGS] & CK_AGG_F_USED) || !(e[CK_AGG_E_FLAGS] & CK_AGG_F_ACC)) continue;
    uint32_t ke = ck_agg_key_entry(agg, idx);
    key_to_batch(agg, kb, ke);
    uint64_t kh = ck_key_hash(kb, agg->key_ident, agg->nkeys, 0);
    ck_buf_put_le32(out, (uint32_t)ck_key_group(kh, agg->maxp));
    if (agg->windowed) {
      const ck_agg_win_t *w = &agg->wins.wins[ck_agg_ld32(e + CK_AGG_E_WID)];
      put_i64(out, w->start);
      put_i64(out, w->end);
    }
    const char *k = ck_agg_entry(agg, ke);
    for (int i = 0; i < agg->nkeys; i++) {
      bool null = ck_agg_bit(k + agg->bits_off, i);
      ck_buf_put_u8(out, null);
      if (!null) put_slot(out, agg, agg->key_cat[i], k + agg->key_off[i]);
    }
    agg->snap_err = err;
    for (int c = 0; c < agg->ncalls; c++) put_acc(out, agg, e, c);
    agg->snap_err = NULL;
    if (agg->snap_failed) {
      agg->snap_failed = false;
      ck_batch_free(kb);
      return err->code ? err->code : CK_EEVAL;
    }
    if (!agg->windowed) {
      bool emitted = e[CK_AGG_E_FLAGS] & CK_AGG_F_EMITTED;
      ck_buf_put_u8(out, emitted);
      for (int c = 0; c < agg->ncalls && emitted; c++) {
        const ck_agg_acc_t *a = &agg->acc[c];
        bool null = ck_agg_bit(e + agg->bits_off, a->emit_bit);
        ck_buf_put_u8(out, null);
        if (!null) put_slot(out, agg, a->rcat, e + a->emit_off);
      }
    }
    count++;
  }
  ck_batch_free(kb);
  ck_put_le64(out->data + count_at, count);
  return 0;
}

/* ---- reading ---- */

typedef ck_rd_t rd_t; /* sticky bad on a short read (base/bytes.h) */

static const char *take(rd_t *r, size_t n) { return (const char *)ck_rd_take(r, n); }
static int64_t get_i64(rd_t *r) { return (int64_t)ck_rd_le64(r); }
static bool get_type_eq(rd_t *r, ck_type_t t) {
  uint8_t id = ck_rd_u8(r), p = ck_rd_u8(r), s = ck_rd_u8(r);
  return id == (uint8_t)t.id && p == t.precision && s == t.scale;
}

/* Copies n bytes into p (zeroes on a short read). */
static void get_into(rd_t *r, char *p, size_t n) {
  const char *s = take(r, n);
  if (s) memcpy(p, s, n);
  else memset(p, 0, n);
}

/* An encoded value into canonical slot p of entry idx (strings into the pool). */
static int get_slot(rd_t *r, ck_agg_t *agg, ck_agg_vcat_t cat, uint32_t idx, uint32_t off,
                    ck_error_t *err) {
  if (cat != CK_AGG_V_STR) {
    get_into(r, ck_agg_entry(agg, idx) + off, (size_t)ck_agg_vcat_width(cat));
    return 0;
  }
  uint32_t len = ck_rd_le32(r);
  const char *s = take(r, len);
  if (!s) return 0;
  ck_agg_sref_t ref;
  int rc = ck_agg_pool_add(&agg->pool, s, len, &ref, err);
  if (!rc) ck_agg_stref(ck_agg_entry(agg, idx) + off, ref);
  return rc;
}

static bool shape_matches(rd_t *r, const ck_agg_t *agg) {
  const ck_window_spec_t *w = &agg->spec->window;
  bool ok = ck_rd_u8(r) == (uint8_t)w->kind;
  ok &= get_i64(r) == w->size;
  ok &= get_i64(r) == w->slide;
  ok &= get_i64(r) == w->gap;
  ok &= get_i64(r) == w->step;
  ok &= ck_rd_le16(r) == (uint16_t)agg->nkeys;
  for (int k = 0; ok && k < agg->nkeys; k++) ok &= get_type_eq(r, agg->key_types[k]);
  ok &= ck_rd_le16(r) == (uint16_t)agg->ncalls;
  for (int c = 0; ok && c < agg->ncalls; c++) {
    const ck_agg_acc_t *a = &agg->acc[c];
    ok &= ck_rd_u8(r) == (uint8_t)a->call->fn;
    ok &= ck_rd_u8(r) == (uint8_t)a->distinct;
    ok &= get_type_eq(r, a->call->arg_type);
    ok &= get_type_eq(r, a->call->result_type);
  }
  ok &= ck_rd_le32(r) == (uint32_t)agg->maxp;
  return ok && !r->bad;
}

/* Decodes one record's keys into row 0 of kb. */
static void get_key(rd_t *r, const ck_agg_t *agg, ck_batch_t *kb) {
  ck_batch_clear(kb);
  for (int k = 0; k < agg->nkeys; k++) {
    ck_col_t *col = &kb->cols[k];
    if (ck_rd_u8(r)) {
      ck_col_append_null(col);
      continue;
    }
    if (agg->key_cat[k] == CK_AGG_V_STR) {
      uint32_t len = ck_rd_le32(r);
      const char *s = take(r, len);
      ck_col_append_str(col, s ? s : "", s ? len : 0);
      continue;
    }
    char buf[16] = {0};
    get_into(r, buf, (size_t)ck_agg_vcat_width(agg->key_cat[k]));
    ck_value_t v;
    ck_agg_val_load(agg, agg->key_cat[k], agg->key_types[k], buf, &v);
    ck_col_append_value(col, &v);
  }
  kb->nrows = 1;
}

static int corrupt(ck_error_t *err, const char *detail);

/* LISTAGG's text or APPROX_COUNT_DISTINCT's registers, owned by the entry. */
static int get_owned(rd_t *r, ck_agg_t *agg, uint32_t idx, int c, ck_error_t *err) {
  const ck_agg_acc_t *a = &agg->acc[c];
  if (!ck_rd_u8(r)) return 0;
  if (a->kind == CK_AGG_A_LISTAGG) {
    uint32_t len = ck_rd_le32(r);
    if (len > CK_AGG_LISTAGG_MAX) return corrupt(err, "a LISTAGG text is too long");
    const char *s = take(r, len);
    if (!s) return 0;
    ck_agg_sbuf_t *sb = ck_malloc(sizeof *sb + (len ? len : 1));
    sb->len = len;
    sb->cap = len ? len : 1;
    memcpy(sb->data, s, len);
    memcpy(ck_agg_entry(agg, idx) + a->off, &sb, sizeof sb);
    agg->dset_bytes += sb->cap;
    return 0;
  }
  uint8_t *regs = ck_calloc(CK_AGG_HLL_M, 1);
  memcpy(ck_agg_entry(agg, idx) + a->off, &regs, sizeof regs);
  agg->dset_bytes += CK_AGG_HLL_M;
  uint16_t n = ck_rd_le16(r);
  for (uint16_t i = 0; i < n && !r->bad; i++) {
    uint16_t at = ck_rd_le16(r);
    uint8_t rank = ck_rd_u8(r);
    if (at >= CK_AGG_HLL_M || rank > 64 - CK_AGG_HLL_P + 1)
      return corrupt(err, "a HyperLogLog register is out of range");
    regs[at] = rank;
  }
  return 0;
}

static int get_acc(rd_t *r, ck_agg_t *agg, uint32_t idx, int c, int version, ck_error_t *err) {
  const ck_agg_acc_t *a = &agg->acc[c];
  size_t w = 0;
  bool has = false;
  switch (a->kind) {
    case CK_AGG_A_COUNT: w = 8; break;
    case CK_AGG_A_SUM_I:
      has = ck_rd_u8(r);
      if (version == 1) { /* an i64 sum, widened */
        ck_agg_st128(ck_agg_entry(agg, idx) + a->off, (ck_i128)get_i64(r));
        break;
      }
      w = 16;
      break;
    case CK_AGG_A_SUM_D: has = ck_rd_u8(r), w = 16; break;
    case CK_AGG_A_SUM_F: has = ck_rd_u8(r), w = version == 1 ? 16 : 24; break; /* v1: big = 0 */
    case CK_AGG_A_AVG_I:
    case CK_AGG_A_AVG_D: w = 24; break;
    case CK_AGG_A_AVG_F: w = version == 1 ? 24 : 32; break;
    case CK_AGG_A_MINMAX: has = ck_rd_u8(r); break;
    case CK_AGG_A_FIRSTLAST: {
      has = ck_rd_u8(r);
      int64_t seq = get_i64(r);
      ck_agg_st64(ck_agg_entry(agg, idx) + a->off + ck_agg_vcat_width(a->acat), seq);
      if (seq >= agg->seq) agg->seq = seq + 1;
      break;
    }
    case CK_AGG_A_LISTAGG:
    case CK_AGG_A_HLL: {
      int rc = get_owned(r, agg, idx, c, err);
      if (rc) return rc;
      break;
    }
    case CK_AGG_A_UDF: {
      has = ck_rd_u8(r);
      if (!has) break;
      uint32_t n = ck_rd_le32(r);
      const char *p = take(r, n);
      if (!p) {
        has = false; /* truncated: nothing was created (the caller reports the snapshot) */
        break;
      }
      int rc = ck_udf_agg_deserialise(a->call->udf, ck_agg_entry(agg, idx) + a->off, p, n, err);
      if (rc) return rc;
      break;
    }
  }
  if (w) get_into(r, ck_agg_entry(agg, idx) + a->off, w);
  if (a->has_bit >= 0) ck_agg_setbit(ck_agg_entry(agg, idx) + agg->bits_off, a->has_bit, has);
  if ((a->kind == CK_AGG_A_MINMAX || a->kind == CK_AGG_A_FIRSTLAST) && has) {
    int rc = get_slot(r, agg, a->acat, idx, a->off, err);
    if (rc) {
      ck_agg_setbit(ck_agg_entry(agg, idx) + agg->bits_off, a->has_bit, false);
      return rc;
    }
  }
  if (a->distinct) {
    uint32_t n = ck_rd_le32(r);
    bool is_str = a->acat == CK_AGG_V_STR;
    int vw = ck_agg_vcat_width(a->acat);
    ck_agg_dset_t *set = ck_agg_dset_new();
    memcpy(ck_agg_entry(agg, idx) + a->set_off, &set, sizeof set);
    for (uint32_t i = 0; i < n && !r->bad; i++) {
      size_t len = is_str ? ck_rd_le32(r) : (size_t)vw;
      const char *v = take(r, len);
      if (v) ck_agg_dset_add(set, vw, is_str, v, len);
    }
    agg->dset_bytes += ck_agg_dset_bytes(set, vw);
  }
  return 0;
}

static int get_emitted(rd_t *r, ck_agg_t *agg, uint32_t idx, ck_error_t *err) {
  if (!ck_rd_u8(r)) return 0;
  for (int c = 0; c < agg->ncalls; c++) {
    const ck_agg_acc_t *a = &agg->acc[c];
    bool null = ck_rd_u8(r);
    char *e = ck_agg_entry(agg, idx);
    ck_agg_setbit(e + agg->bits_off, a->emit_bit, true);
    e[CK_AGG_E_FLAGS] = (char)(e[CK_AGG_E_FLAGS] | CK_AGG_F_EMITTED);
    if (null) continue;
    int rc = get_slot(r, agg, a->rcat, idx, a->emit_off, err);
    if (rc) return rc;
    ck_agg_setbit(ck_agg_entry(agg, idx) + agg->bits_off, a->emit_bit, false);
  }
  return 0;
}

/* Places a decoded record: the accumulator entry for (window, key of kb), or CK_AGG_NONE when
 * it already exists (a corrupt snapshot). */
static int place(ck_agg_t *agg, ck_batch_t *kb, uint64_t kh, int64_t start, int64_t end,
                 uint32_t *out, ck_error_t *err) {
  bool created;
  uint32_t idx;
  int rc;
  *out = CK_AGG_NONE;
  if (agg->session) {
    uint32_t dir;
    rc = ck_agg_group(agg, ck_agg_tag(kh, 0), CK_AGG_NONE, kb, agg->key_ident, 0, true, 0, &dir,
                      &created, err);
    if (rc) return rc;
    uint32_t wid = ck_agg_session_new(agg, dir, start, end); /* may move agg->wins.wins */
    *out = agg->wins.wins[wid].head;
    return 0;
  }
  uint32_t wid = agg->windowed ? ck_agg_wins_get(&agg->wins, start, end) : 0;
  rc = ck_agg_group(agg, ck_agg_tag(kh, wid), wid, kb, agg->key_ident, 0, true, CK_AGG_F_ACC,
                    &idx, &created, err);
  if (rc || !created) return rc;
  if (agg->windowed) {
    ck_agg_win_t *w = &agg->wins.wins[wid];
    ck_agg_st32(ck_agg_entry(agg, idx) + CK_AGG_E_NEXT, w->head);
    w->head = idx;
  }
  agg->groups++;
  *out = idx;
  return 0;
}

static int corrupt(ck_error_t *err, const char *detail) {
  int rc = ck_error_set(err, CK_ESTATE, "could not restore aggregation state: %s", detail);
  ck_error_hint(err, "restore from a checkpoint taken by the same pipeline, or start with "
                     "--fresh");
  return rc;
}

int ck_agg_restore(ck_op_t *op, const void *data, size_t len, ck_error_t *err) {
  ck_agg_t *agg = op->impl;
  rd_t r = ck_rd_of(data, len);
  const char *magic = take(&r, 4);
  if (!magic || memcmp(magic, "CKAG", 4) != 0)
    return corrupt(err, "the snapshot is not aggregation state");
  uint16_t version = ck_rd_le16(&r);
  if (version < 1 || version > SNAP_VERSION) {
    int rc = corrupt(err, "the snapshot has an unknown version");
    ck_error_detail(err, "version %u, this build reads versions 1 to %d", version, SNAP_VERSION);
    return rc;
  }
  if (!shape_matches(&r, agg))
    return corrupt(err, "the snapshot was taken with different keys, aggregates, window or "
                        "maximum parallelism");
  int64_t wm = get_i64(&r);
  uint64_t count = ck_rd_le64(&r);
  ck_batch_t *kb = ck_batch_new(agg->nkeys, agg->key_types, 1);
  int rc = 0;
  for (uint64_t i = 0; i < count && !rc && !r.bad; i++) {
    int kg = (int)ck_rd_le32(&r);
    int64_t start = 0, end = 0;
    if (agg->windowed) {
      start = get_i64(&r);
      end = get_i64(&r);
    }
    get_key(&r, agg, kb);
    if (r.bad) break;
    uint64_t kh = ck_key_hash(kb, agg->key_ident, agg->nkeys, 0);
    if (ck_key_group(kh, agg->maxp) != kg) {
      rc = corrupt(err, "a record's key group does not match its key");
      break;
    }
    bool keep = op->parallelism <= 1 ||
                ck_key_group_subtask(kg, agg->maxp, op->parallelism) == op->subtask;
    uint32_t idx;
    if (keep) {
      rc = place(agg, kb, kh, start, end, &idx, err);
      if (!rc && idx == CK_AGG_NONE) rc = corrupt(err, "a group appears twice");
      if (rc) break;
    } else { /* decode into a scratch entry, then drop it */
      idx = ck_agg_tab_alloc(&agg->tab);
      char *e = ck_agg_entry(agg, idx);
      e[CK_AGG_E_FLAGS] = (char)(e[CK_AGG_E_FLAGS] | CK_AGG_F_ACC);
    }
    for (int c = 0; c < agg->ncalls && !rc; c++) rc = get_acc(&r, agg, idx, c, version, err);
    if (!rc && !agg->windowed) rc = get_emitted(&r, agg, idx, err);
    if (!keep) {
      ck_agg_entry_release(agg, idx);
      ck_agg_tab_free(&agg->tab, idx);
    }
  }
  ck_batch_free(kb);
  if (!rc && r.bad) rc = corrupt(err, "the snapshot is truncated");
  if (!rc && ck_rd_left(&r)) rc = corrupt(err, "the snapshot has trailing bytes");
  if (!rc) {
    agg->wm = agg->restores++ == 0 || wm < agg->wm ? wm : agg->wm;
    op->metrics.watermark = agg->wm;
  }
  ck_agg_update_metrics(agg);
  return rc;
}
