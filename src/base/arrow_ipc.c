/* DESIGN: see arrow_ipc.h.
 *
 * The flatbuffers are built front to back: a table's vtable is written just before it, and
 * what a table refers to (strings, vectors, other tables) after it, the referring offset
 * patched once the target's place is known (a flatbuffer offset is unsigned and points
 * forward, a table's vtable offset is signed). Every scalar sits at a multiple of its size
 * from the start of the flatbuffer, which itself starts at a multiple of 8 in the stream, as
 * the flatbuffers verifier in other readers requires.
 *
 * An encapsulated message: u32 0xFFFFFFFF, i32 metadata size (the flatbuffer padded so that
 * the body starts at a multiple of 8), the Message flatbuffer, the body. End of stream:
 * 0xFFFFFFFF 0x00000000.
 */
#include "base/arrow_ipc.h"

#include <string.h>

#include "base/bytes.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "Arrow buffers are written as the values are in memory (little endian)");

/* Schema.fbs / Message.fbs numbers */
enum { MSG_V5 = 4 };
enum { HDR_SCHEMA = 1, HDR_DICTIONARY_BATCH = 2, HDR_RECORD_BATCH = 3 };
enum { TYPE_INT = 2, TYPE_FLOAT = 3, TYPE_BINARY = 4, TYPE_UTF8 = 5 };
enum { PREC_DOUBLE = 2 };

/* ---------------------------------------------------------------- flatbuffer writing */

typedef struct fbw {
  ck_buf_t *b;
  size_t base; /* where the flatbuffer starts in b */
} fbw_t;

static size_t fb_pos(const fbw_t *w) { return w->b->len - w->base; }

static void fb_pad_to(fbw_t *w, size_t align) {
  static const char zero[8] = {0};
  size_t r = fb_pos(w) % align;
  if (r) ck_buf_append(w->b, zero, align - r);
}

static void fb_put(fbw_t *w, const void *p, size_t n) { ck_buf_append(w->b, p, n); }
static void fb_u32(fbw_t *w, uint32_t v) { fb_put(w, &v, 4); }

/* Makes the u32 at flatbuffer position at point to position target (> at). */
static void fb_patch(fbw_t *w, size_t at, size_t target) {
  uint32_t v = (uint32_t)(target - at);
  memcpy(w->b->data + w->base + at, &v, 4);
}

typedef struct fb_fld {
  int id;
  int size;   /* 1, 2, 4 or 8 for a scalar; 0 for an offset (4 bytes, patched later) */
  uint64_t v; /* the scalar's bits */
} fb_fld_t;

/* Writes a table of n fields; at[i] receives the position of field i (for offsets to patch).
 * Returns the table's position. */
static size_t fb_table(fbw_t *w, const fb_fld_t *f, int n, size_t *at) {
  int nslots = 0;
  for (int i = 0; i < n; i++)
    if (f[i].id + 1 > nslots) nslots = f[i].id + 1;
  fb_pad_to(w, 2);
  size_t vt = fb_pos(w);
  size_t vtsize = 4 + 2 * (size_t)nslots;
  size_t table = (vt + vtsize + 7) / 8 * 8;
  uint16_t slot[CK_ARROW_MAX_FIELDS + 8] = {0};
  size_t pos = table + 4;
  size_t fpos[16];
  for (int i = 0; i < n; i++) {
    size_t sz = f[i].size ? (size_t)f[i].size : 4;
    pos = (pos + sz - 1) / sz * sz;
    fpos[i] = pos;
    slot[f[i].id] = (uint16_t)(pos - table);
    pos += sz;
  }
  uint16_t hdr[2] = {(uint16_t)vtsize, (uint16_t)(pos - table)};
  fb_put(w, hdr, 4);
  fb_put(w, slot, 2 * (size_t)nslots);
  while (fb_pos(w) < table) ck_buf_putc(w->b, 0);
  int32_t soff = (int32_t)(table - vt);
  fb_put(w, &soff, 4);
  for (int i = 0; i < n; i++) {
    while (fb_pos(w) < fpos[i]) ck_buf_putc(w->b, 0);
    if (f[i].size) fb_put(w, &f[i].v, (size_t)f[i].size);
    else fb_u32(w, 0);
    if (at) at[i] = fpos[i];
  }
  return table;
}

/* A string; returns its position. */
static size_t fb_string(fbw_t *w, const char *s, size_t n) {
  fb_pad_to(w, 4);
  size_t at = fb_pos(w);
  fb_u32(w, (uint32_t)n);
  fb_put(w, s, n);
  ck_buf_putc(w->b, 0);
  return at;
}

/* A vector of n offsets (to patch: element i at the returned position + 4 + 4 i). */
static size_t fb_vec_offsets(fbw_t *w, int n) {
  fb_pad_to(w, 4);
  size_t at = fb_pos(w);
  fb_u32(w, (uint32_t)n);
  for (int i = 0; i < n; i++) fb_u32(w, 0);
  return at;
}

/* A vector of n 16-byte structs (two i64 each), aligned to 8. */
static size_t fb_vec_structs16(fbw_t *w, const int64_t *pairs, int n) {
  fb_pad_to(w, 4);
  if ((fb_pos(w) + 4) % 8) fb_u32(w, 0);
  size_t at = fb_pos(w);
  fb_u32(w, (uint32_t)n);
  fb_put(w, pairs, 16 * (size_t)n);
  return at;
}

/* Starts a message: the prefix, then a flatbuffer whose root is patched by fb_root. */
static size_t msg_begin(ck_buf_t *out, fbw_t *w) {
  uint32_t cont = 0xFFFFFFFFu;
  ck_buf_append(out, &cont, 4);
  size_t size_at = out->len;
  ck_buf_append(out, &cont, 4); /* the metadata size, set by msg_end */
  w->b = out;
  w->base = out->len;
  fb_u32(w, 0); /* root offset */
  return size_at;
}

static void msg_end(ck_buf_t *out, fbw_t *w, size_t size_at) {
  fb_pad_to(w, 8);
  int32_t size = (int32_t)(out->len - w->base);
  memcpy(out->data + size_at, &size, 4);
}

/* The Message table with its header table at hdr_pos... written before the header: returns
 * the position of the header offset to patch. */
static size_t msg_table(fbw_t *w, int hdr_type, int64_t body_len) {
  fb_fld_t f[] = {{0, 2, MSG_V5}, {1, 1, (uint64_t)hdr_type}, {2, 0, 0},
                  {3, 8, (uint64_t)body_len}};
  size_t at[4];
  size_t t = fb_table(w, f, 4, at);
  fb_patch(w, 0, t);
  return at[2];
}

/* ---------------------------------------------------------------- schema */

static void write_type(fbw_t *w, ck_arrow_type_t type, size_t patch_at) {
  size_t t;
  switch (type) {
    case CK_ARROW_UINT16:
    case CK_ARROW_UINT32:
    case CK_ARROW_INT64: {
      int bits = type == CK_ARROW_UINT16 ? 16 : type == CK_ARROW_UINT32 ? 32 : 64;
      fb_fld_t f[] = {{0, 4, (uint64_t)bits}, {1, 1, type == CK_ARROW_INT64}};
      t = fb_table(w, f, 2, NULL);
      break;
    }
    case CK_ARROW_FLOAT64: {
      fb_fld_t f[] = {{0, 2, PREC_DOUBLE}};
      t = fb_table(w, f, 1, NULL);
      break;
    }
    default:
      t = fb_table(w, NULL, 0, NULL); /* Utf8, Binary: no fields */
      break;
  }
  fb_patch(w, patch_at, t);
}

static int type_id(ck_arrow_type_t type) {
  switch (type) {
    case CK_ARROW_UINT16:
    case CK_ARROW_UINT32:
    case CK_ARROW_INT64: return TYPE_INT;
    case CK_ARROW_FLOAT64: return TYPE_FLOAT;
    case CK_ARROW_UTF8:
    case CK_ARROW_DICT_UTF8: return TYPE_UTF8; /* the values' type; the field says dictionary */
    case CK_ARROW_BINARY: return TYPE_BINARY;
  }
  return 0;
}

/* DictionaryEncoding { id (0), indexType (1): Int { bitWidth 8, is_signed } } for the field. */
static void write_dict_encoding(fbw_t *w, int64_t id, size_t patch_at) {
  fb_fld_t df[] = {{0, 8, (uint64_t)id}, {1, 0, 0}};
  size_t dat[2];
  size_t d = fb_table(w, df, 2, dat);
  fb_patch(w, patch_at, d);
  fb_fld_t itf[] = {{0, 4, 8}, {1, 1, 1}};
  fb_patch(w, dat[1], fb_table(w, itf, 2, NULL));
}

void ck_arrow_write_schema(ck_buf_t *out, const ck_arrow_field_t *fields, int nfields,
                           const ck_arrow_kv_t *meta, int nmeta, size_t *value_at) {
  fbw_t w;
  size_t size_at = msg_begin(out, &w);
  size_t hdr_at = msg_table(&w, HDR_SCHEMA, 0);
  /* Schema { endianness = Little (default), fields (1), custom_metadata (2) } */
  fb_fld_t sf[] = {{1, 0, 0}, {2, 0, 0}};
  size_t sat[2];
  size_t schema = fb_table(&w, sf, nmeta ? 2 : 1, sat);
  fb_patch(&w, hdr_at, schema);
  size_t vec = fb_vec_offsets(&w, nfields);
  fb_patch(&w, sat[0], vec);
  for (int i = 0; i < nfields; i++) {
    /* Field { name (0), nullable (1), type_type (2), type (3), dictionary (4), children (5) } */
    bool dict = fields[i].type == CK_ARROW_DICT_UTF8;
    fb_fld_t ff[] = {{0, 0, 0}, {1, 1, fields[i].nullable},
                     {2, 1, (uint64_t)type_id(fields[i].type)},
                     {3, 0, 0}, {5, 0, 0}, {4, 0, 0}};
    size_t fat[6];
    size_t field = fb_table(&w, ff, dict ? 6 : 5, fat);
    fb_patch(&w, vec + 4 + 4 * (size_t)i, field);
    fb_patch(&w, fat[0], fb_string(&w, fields[i].name, strlen(fields[i].name)));
    write_type(&w, fields[i].type, fat[3]);
    fb_patch(&w, fat[4], fb_vec_offsets(&w, 0));
    if (dict) write_dict_encoding(&w, i, fat[5]);
  }
  if (nmeta) {
    size_t mvec = fb_vec_offsets(&w, nmeta);
    fb_patch(&w, sat[1], mvec);
    for (int i = 0; i < nmeta; i++) {
      fb_fld_t kf[] = {{0, 0, 0}, {1, 0, 0}};
      size_t kat[2];
      size_t kv = fb_table(&w, kf, 2, kat);
      fb_patch(&w, mvec + 4 + 4 * (size_t)i, kv);
      fb_patch(&w, kat[0], fb_string(&w, meta[i].key, strlen(meta[i].key)));
      size_t vs = fb_string(&w, meta[i].value, strlen(meta[i].value));
      fb_patch(&w, kat[1], vs);
      if (value_at) value_at[i] = w.base + vs + 4;
    }
  }
  msg_end(out, &w, size_at);
}

/* ---------------------------------------------------------------- record batches */

static int type_width(ck_arrow_type_t type) {
  switch (type) {
    case CK_ARROW_UINT16: return 2;
    case CK_ARROW_UINT32: return 4;
    case CK_ARROW_INT64:
    case CK_ARROW_FLOAT64: return 8;
    case CK_ARROW_DICT_UTF8: return 1; /* the int8 indices */
    default: return 0;
  }
}

void ck_arrow_batch_init(ck_arrow_batch_t *batch, const ck_arrow_field_t *fields, int nfields) {
  memset(batch, 0, sizeof *batch);
  batch->ncols = nfields;
  for (int i = 0; i < nfields; i++) {
    batch->cols[i].type = fields[i].type;
    ck_buf_init(&batch->cols[i].data);
    ck_buf_init(&batch->cols[i].offsets);
    ck_buf_init(&batch->cols[i].validity);
  }
  ck_arrow_batch_reset(batch);
}

void ck_arrow_batch_fini(ck_arrow_batch_t *batch) {
  for (int i = 0; i < batch->ncols; i++) {
    ck_buf_fini(&batch->cols[i].data);
    ck_buf_fini(&batch->cols[i].offsets);
    ck_buf_fini(&batch->cols[i].validity);
  }
}

void ck_arrow_batch_reset(ck_arrow_batch_t *batch) {
  batch->nrows = 0;
  for (int i = 0; i < batch->ncols; i++) {
    ck_buf_reset(&batch->cols[i].data);
    ck_buf_reset(&batch->cols[i].offsets);
    ck_buf_reset(&batch->cols[i].validity);
    batch->cols[i].null_count = 0;
    if (!type_width(batch->cols[i].type)) {
      int32_t zero = 0;
      ck_buf_append(&batch->cols[i].offsets, &zero, 4);
    }
  }
}

size_t ck_arrow_batch_bytes(const ck_arrow_batch_t *batch) {
  size_t n = 0;
  for (int i = 0; i < batch->ncols; i++)
    n += batch->cols[i].data.len + batch->cols[i].offsets.len;
  return n;
}

static size_t pad8(size_t n) { return (n + 7) / 8 * 8; }

/* A RecordBatch message (dict_id < 0), or a DictionaryBatch of id dict_id whose data is batch. */
static void write_batch_msg(ck_buf_t *out, const ck_arrow_batch_t *batch, int64_t dict_id) {
  /* the body: per column a validity buffer (empty: no nulls), then offsets and data */
  int64_t bufs[CK_ARROW_MAX_FIELDS * 3 * 2];
  int64_t nodes[CK_ARROW_MAX_FIELDS * 2];
  int nb = 0;
  size_t body = 0;
  for (int i = 0; i < batch->ncols; i++) {
    const ck_arrow_col_t *c = &batch->cols[i];
    nodes[2 * i] = batch->nrows;
    nodes[2 * i + 1] = c->null_count;
    size_t vlen = c->null_count ? c->validity.len : 0;
    bufs[2 * nb] = (int64_t)body, bufs[2 * nb + 1] = (int64_t)vlen, nb++;
    body += pad8(vlen);
    if (!type_width(c->type)) {
      bufs[2 * nb] = (int64_t)body, bufs[2 * nb + 1] = (int64_t)c->offsets.len, nb++;
      body += pad8(c->offsets.len);
    }
    bufs[2 * nb] = (int64_t)body, bufs[2 * nb + 1] = (int64_t)c->data.len, nb++;
    body += pad8(c->data.len);
  }
  fbw_t w;
  size_t size_at = msg_begin(out, &w);
  size_t hdr_at = msg_table(&w, dict_id < 0 ? HDR_RECORD_BATCH : HDR_DICTIONARY_BATCH,
                            (int64_t)body);
  if (dict_id >= 0) { /* DictionaryBatch { id (0), data (1), isDelta (2) = false } */
    fb_fld_t df[] = {{0, 8, (uint64_t)dict_id}, {1, 0, 0}};
    size_t dat[2];
    fb_patch(&w, hdr_at, fb_table(&w, df, 2, dat));
    hdr_at = dat[1];
  }
  /* RecordBatch { length (0), nodes (1), buffers (2) } */
  fb_fld_t rf[] = {{0, 8, (uint64_t)batch->nrows}, {1, 0, 0}, {2, 0, 0}};
  size_t rat[3];
  size_t rb = fb_table(&w, rf, 3, rat);
  fb_patch(&w, hdr_at, rb);
  fb_patch(&w, rat[1], fb_vec_structs16(&w, nodes, batch->ncols));
  fb_patch(&w, rat[2], fb_vec_structs16(&w, bufs, nb));
  msg_end(out, &w, size_at);
  static const char zero[8] = {0};
  for (int i = 0; i < batch->ncols; i++) {
    const ck_arrow_col_t *c = &batch->cols[i];
    if (c->null_count) {
      ck_buf_append(out, c->validity.data, c->validity.len);
      ck_buf_append(out, zero, pad8(c->validity.len) - c->validity.len);
    }
    if (!type_width(c->type)) {
      ck_buf_append(out, c->offsets.data, c->offsets.len);
      ck_buf_append(out, zero, pad8(c->offsets.len) - c->offsets.len);
    }
    if (c->data.len) ck_buf_append(out, c->data.data, c->data.len);
    ck_buf_append(out, zero, pad8(c->data.len) - c->data.len);
  }
}

void ck_arrow_write_batch(ck_buf_t *out, const ck_arrow_batch_t *batch) {
  write_batch_msg(out, batch, -1);
}

void ck_arrow_write_dictionary(ck_buf_t *out, int field, const char *const *values, int n) {
  static const ck_arrow_field_t one = {"values", CK_ARROW_UTF8};
  ck_arrow_batch_t b;
  ck_arrow_batch_init(&b, &one, 1);
  for (int i = 0; i < n; i++) {
    ck_arrow_put_bytes(&b, 0, values[i], strlen(values[i]));
    ck_arrow_batch_row(&b);
  }
  write_batch_msg(out, &b, field);
  ck_arrow_batch_fini(&b);
}

void ck_arrow_write_eos(ck_buf_t *out) {
  uint32_t eos[2] = {0xFFFFFFFFu, 0};
  ck_buf_append(out, eos, 8);
}

/* ---------------------------------------------------------------- flatbuffer reading */

/* A view of one flatbuffer; every access is checked against its length. */
typedef struct fbr {
  const uint8_t *p;
  size_t len;
  bool bad;
} fbr_t;

static uint64_t rd(fbr_t *r, size_t at, size_t n) {
  uint64_t v = 0;
  if (r->bad || at > r->len || r->len - at < n) {
    r->bad = true;
    return 0;
  }
  v = ck_get_le_n(r->p + at, (int)n);
  return v;
}

/* Where field id of the table at t is, or 0 when absent. */
static size_t fb_field(fbr_t *r, size_t t, int id) {
  int32_t soff = (int32_t)rd(r, t, 4);
  int64_t vt = (int64_t)t - soff;
  if (vt < 0 || (size_t)vt >= r->len) {
    r->bad = true;
    return 0;
  }
  size_t vtsize = rd(r, (size_t)vt, 2);
  if (4 + 2 * (size_t)id >= vtsize) return 0;
  size_t o = rd(r, (size_t)vt + 4 + 2 * (size_t)id, 2);
  return o ? t + o : 0;
}

static uint64_t fb_scalar(fbr_t *r, size_t t, int id, size_t n, uint64_t dflt) {
  size_t at = fb_field(r, t, id);
  return at ? rd(r, at, n) : dflt;
}

/* Follows the offset in field id (0 when absent). */
static size_t fb_ref(fbr_t *r, size_t t, int id) {
  size_t at = fb_field(r, t, id);
  if (!at) return 0;
  size_t target = at + rd(r, at, 4);
  if (target >= r->len) r->bad = true;
  return r->bad ? 0 : target;
}

/* The string at s: its bytes (NUL-ended), or NULL. */
static const char *fb_str(fbr_t *r, size_t s, size_t *n) {
  if (!s) return NULL;
  size_t len = rd(r, s, 4);
  if (r->bad || len > r->len - s - 4 || len + 4 >= r->len - s || r->p[s + 4 + len] != 0) {
    r->bad = true;
    return NULL;
  }
  if (n) *n = len;
  return (const char *)r->p + s + 4;
}

/* The length of the vector at v, checked to fit elements of width w. */
static size_t fb_vec_len(fbr_t *r, size_t v, size_t w) {
  if (!v) return 0;
  size_t n = rd(r, v, 4);
  if (r->bad || n > (r->len - v - 4) / w) {
    r->bad = true;
    return 0;
  }
  return n;
}

/* Element i of a vector of tables. */
static size_t fb_vec_table(fbr_t *r, size_t v, size_t i) {
  size_t at = v + 4 + 4 * i;
  size_t t = at + rd(r, at, 4);
  if (t >= r->len) r->bad = true;
  return r->bad ? 0 : t;
}

/* ---------------------------------------------------------------- reading */

static int bad(ck_error_t *err, const char *what, size_t off) {
  return ck_error_set(err, CK_EDECODE, "not a readable Arrow IPC stream: %s (at byte %zu)", what,
                      off);
}

/* The message at r->off: its flatbuffer in *fb, the body's offset and length. 0 at the end
 * of stream, 1 with a message, CK_EDECODE. */
static int next_message(ck_arrow_reader_t *r, fbr_t *fb, size_t *msg_table_at, size_t *body,
                        int64_t *body_len, ck_error_t *err) {
  if (r->len - r->off < 8) {
    if (r->len == r->off) return 0;
    return bad(err, "the stream ends inside a message prefix", r->off);
  }
  uint32_t cont, size;
  memcpy(&cont, r->p + r->off, 4);
  memcpy(&size, r->p + r->off + 4, 4);
  if (cont != 0xFFFFFFFFu) return bad(err, "a message does not start with 0xFFFFFFFF", r->off);
  if (size == 0) {
    r->off += 8;
    return 0;
  }
  size_t at = r->off + 8;
  if (size > r->len - at) return bad(err, "a message is longer than the stream", r->off);
  *fb = (fbr_t){r->p + at, size, false};
  size_t root = rd(fb, 0, 4);
  if (fb->bad || root >= size) return bad(err, "a message has no root table", r->off);
  *msg_table_at = root;
  if (fb_scalar(fb, root, 0, 2, 0) != MSG_V5)
    return bad(err, "a message is not of metadata version V5", r->off);
  *body_len = (int64_t)fb_scalar(fb, root, 3, 8, 0);
  *body = at + size;
  if (fb->bad || *body_len < 0 || (uint64_t)*body_len > r->len - *body)
    return bad(err, "a message's body is longer than the stream", r->off);
  r->off = *body + (size_t)*body_len;
  return 1;
}

int ck_arrow_reader_open(ck_arrow_reader_t *r, const void *data, size_t len, ck_error_t *err) {
  memset(r, 0, sizeof *r);
  r->p = data;
  r->len = len;
  fbr_t fb;
  size_t msg, body;
  int64_t body_len;
  int rc = next_message(r, &fb, &msg, &body, &body_len, err);
  if (rc < 0) return rc;
  if (rc == 0) return bad(err, "it has no schema", 0);
  if (fb_scalar(&fb, msg, 1, 1, 0) != HDR_SCHEMA)
    return bad(err, "its first message is not a schema", 0);
  size_t schema = fb_ref(&fb, msg, 2);
  size_t fields = fb_ref(&fb, schema, 1);
  size_t nf = fb_vec_len(&fb, fields, 4);
  if (fb.bad || !schema) return bad(err, "its schema is damaged", 0);
  if (nf > CK_ARROW_MAX_FIELDS) return bad(err, "its schema has too many fields", 0);
  for (size_t i = 0; i < nf; i++) {
    size_t f = fb_vec_table(&fb, fields, i);
    const char *name = fb_str(&fb, fb_ref(&fb, f, 0), NULL);
    int tt = (int)fb_scalar(&fb, f, 2, 1, 0);
    size_t type = fb_ref(&fb, f, 3);
    size_t children = fb_ref(&fb, f, 5);
    if (fb.bad || !name || !type) return bad(err, "a field of its schema is damaged", 0);
    if (fb_vec_len(&fb, children, 4) != 0)
      return ck_error_set(err, CK_EUNSUPPORTED, "could not read Arrow field '%s': nested fields "
                          "are not read by this reader", name);
    ck_arrow_type_t t;
    size_t dict = fb_ref(&fb, f, 4);
    if (dict) { /* DictionaryEncoding { id (0), indexType (1) } */
      size_t it = fb_ref(&fb, dict, 1);
      int bits = it ? (int)fb_scalar(&fb, it, 0, 4, 0) : 32; /* absent: int32 */
      if (fb.bad) return bad(err, "a field of its schema is damaged", 0);
      if (tt != TYPE_UTF8 || bits != 8)
        return ck_error_set(err, CK_EUNSUPPORTED, "could not read Arrow field '%s': of the "
                            "dictionary-encoded fields this reader reads utf8 with 8-bit "
                            "indices only", name);
      r->dict_id[i] = (int64_t)fb_scalar(&fb, dict, 0, 8, 0);
      t = CK_ARROW_DICT_UTF8;
    } else if (tt == TYPE_INT) {
      int bits = (int)fb_scalar(&fb, type, 0, 4, 0);
      bool sgn = fb_scalar(&fb, type, 1, 1, 0);
      if (bits == 16 && !sgn) t = CK_ARROW_UINT16;
      else if (bits == 32 && !sgn) t = CK_ARROW_UINT32;
      else if (bits == 64 && sgn) t = CK_ARROW_INT64;
      else
        return ck_error_set(err, CK_EUNSUPPORTED, "could not read Arrow field '%s': %s%d "
                            "integers are not read by this reader", name, sgn ? "int" : "uint",
                            bits);
    } else if (tt == TYPE_FLOAT && fb_scalar(&fb, type, 0, 2, 0) == PREC_DOUBLE) {
      t = CK_ARROW_FLOAT64;
    } else if (tt == TYPE_UTF8) {
      t = CK_ARROW_UTF8;
    } else if (tt == TYPE_BINARY) {
      t = CK_ARROW_BINARY;
    } else {
      return ck_error_set(err, CK_EUNSUPPORTED, "could not read Arrow field '%s': its type "
                          "(Type union member %d) is not read by this reader", name, tt);
    }
    r->fields[i] = (ck_arrow_field_t){name, t, fb_scalar(&fb, f, 1, 1, 0) != 0};
  }
  r->nfields = (int)nf;
  for (size_t i = 0; i < nf; i++)
    for (size_t k = 0; k < i; k++)
      if (r->fields[i].type == CK_ARROW_DICT_UTF8 && r->fields[k].type == CK_ARROW_DICT_UTF8 &&
          r->dict_id[i] == r->dict_id[k])
        return bad(err, "two fields of its schema share a dictionary", 0);
  size_t meta = fb_ref(&fb, schema, 2);
  size_t nm = fb_vec_len(&fb, meta, 4);
  if (nm > CK_ARROW_MAX_META) return bad(err, "its schema has too much metadata", 0);
  for (size_t i = 0; i < nm; i++) {
    size_t kv = fb_vec_table(&fb, meta, i);
    size_t vs = fb_ref(&fb, kv, 1);
    const char *k = fb_str(&fb, fb_ref(&fb, kv, 0), NULL);
    const char *v = fb_str(&fb, vs, NULL);
    if (fb.bad || !k) return bad(err, "its schema metadata is damaged", 0);
    r->meta[i] = (ck_arrow_kv_t){k, v ? v : ""};
    r->meta_value_at[i] = v ? (size_t)((const uint8_t *)v - r->p) : 0;
  }
  r->nmeta = (int)nm;
  if (fb.bad) return bad(err, "its schema is damaged", 0);
  r->schema_end = r->off;
  return 0;
}

const char *ck_arrow_reader_meta(const ck_arrow_reader_t *r, const char *key) {
  for (int i = 0; i < r->nmeta; i++)
    if (strcmp(r->meta[i].key, key) == 0) return r->meta[i].value;
  return NULL;
}

int ck_arrow_reader_field(const ck_arrow_reader_t *r, const char *name) {
  for (int i = 0; i < r->nfields; i++)
    if (strcmp(r->fields[i].name, name) == 0) return i;
  return -1;
}

/* The columns of the RecordBatch table at rb (in fb; body at body, body_len bytes long), of
 * the ncols types in types, into cols; the row count in *nrows. */
static int read_columns(ck_arrow_reader_t *r, fbr_t *fb, size_t rb, size_t body,
                        int64_t body_len, const ck_arrow_type_t *types, int ncols,
                        ck_arrow_rcol_t *cols, int64_t *nrows, size_t start, ck_error_t *err) {
  int64_t n = (int64_t)fb_scalar(fb, rb, 0, 8, 0);
  size_t nodes = fb_ref(fb, rb, 1), bufs = fb_ref(fb, rb, 2);
  size_t nn = fb_vec_len(fb, nodes, 16), nb = fb_vec_len(fb, bufs, 16);
  if (fb->bad || !rb || n < 0 || fb_field(fb, rb, 3))
    return bad(err, "a record batch is damaged or compressed", start);
  if ((int)nn != ncols) return bad(err, "a record batch has another number of columns", start);
  size_t bi = 0;
  for (int c = 0; c < ncols; c++) {
    int64_t nulls = (int64_t)rd(fb, nodes + 4 + 16 * (size_t)c + 8, 8);
    if ((int64_t)rd(fb, nodes + 4 + 16 * (size_t)c, 8) != n || nulls < 0 || nulls > n)
      return bad(err, "a column has another length or null count", start);
    int width = type_width(types[c]);
    size_t need = width ? 2 : 3;
    if (bi + need > nb) return bad(err, "a record batch has too few buffers", start);
    const uint8_t *ptr[3];
    size_t blen[3];
    for (size_t k = 0; k < need; k++, bi++) {
      uint64_t o = rd(fb, bufs + 4 + 16 * bi, 8), l = rd(fb, bufs + 4 + 16 * bi + 8, 8);
      if (fb->bad || o > (uint64_t)body_len || l > (uint64_t)body_len - o)
        return bad(err, "a buffer lies outside its record batch", start);
      ptr[k] = r->p + body + o;
      blen[k] = (size_t)l;
    }
    ck_arrow_rcol_t *col = &cols[c];
    col->null_count = nulls;
    col->validity = NULL;
    if (nulls) {
      if (blen[0] < ((size_t)n + 7) / 8)
        return bad(err, "a column's validity bitmap is too short", start);
      col->validity = ptr[0];
    }
    if (width) {
      if (blen[1] < (size_t)n * (size_t)width) return bad(err, "a column is too short", start);
      col->data = ptr[1];
      col->data_len = blen[1];
      col->offsets = NULL;
      if (types[c] == CK_ARROW_DICT_UTF8) { /* every index names a value of the dictionary */
        int64_t nd = r->dicts[c].n;
        uint8_t any = 0;
        for (int64_t i = 0; i < n; i++) any |= (uint8_t)((int8_t)col->data[i] < 0 ||
                                                        (int8_t)col->data[i] >= nd);
        if (any) return bad(err, "a dictionary index is out of its dictionary", start);
      }
      continue;
    }
    if (blen[1] < ((size_t)n + 1) * 4 || ((uintptr_t)ptr[1] & 3))
      return bad(err, "a column's offsets are too short or misaligned", start);
    col->offsets = (const int32_t *)(const void *)ptr[1];
    col->data = ptr[2];
    col->data_len = blen[2];
    int32_t prev = col->offsets[0];
    if (prev < 0) return bad(err, "a column's offsets are damaged", start);
    for (int64_t i = 1; i <= n; i++) {
      int32_t cur = col->offsets[i];
      if (cur < prev || (size_t)cur > blen[2])
        return bad(err, "a column's offsets are damaged", start);
      prev = cur;
    }
  }
  *nrows = n;
  return 0;
}

/* A DictionaryBatch (the table at db): the dictionary of the field whose id it names. */
static int read_dictionary(ck_arrow_reader_t *r, fbr_t *fb, size_t db, size_t body,
                           int64_t body_len, size_t start, ck_error_t *err) {
  int64_t id = (int64_t)fb_scalar(fb, db, 0, 8, 0);
  size_t rb = fb_ref(fb, db, 1);
  if (fb->bad || !db || !rb) return bad(err, "a dictionary batch is damaged", start);
  if (fb_scalar(fb, db, 2, 1, 0))
    return ck_error_set(err, CK_EUNSUPPORTED, "could not read an Arrow dictionary batch: delta "
                        "dictionaries are not read by this reader");
  int f = -1;
  for (int i = 0; i < r->nfields; i++)
    if (r->fields[i].type == CK_ARROW_DICT_UTF8 && r->dict_id[i] == id) f = i;
  if (f < 0) return bad(err, "a dictionary batch belongs to no field", start);
  static const ck_arrow_type_t utf8 = CK_ARROW_UTF8;
  ck_arrow_rcol_t col;
  int64_t n;
  int rc = read_columns(r, fb, rb, body, body_len, &utf8, 1, &col, &n, start, err);
  if (rc) return rc;
  if (n > CK_ARROW_MAX_DICT) return bad(err, "a dictionary has more than 127 values", start);
  r->dicts[f] = (ck_arrow_rdict_t){n, col.offsets, col.data};
  return 0;
}

int ck_arrow_reader_next(ck_arrow_reader_t *r, ck_error_t *err) {
  for (;;) {
    if (r->eos) return 0;
    size_t start = r->off;
    fbr_t fb;
    size_t msg, body;
    int64_t body_len;
    int rc = next_message(r, &fb, &msg, &body, &body_len, err);
    if (rc <= 0) {
      r->eos = rc == 0;
      return rc;
    }
    int hdr = (int)fb_scalar(&fb, msg, 1, 1, 0);
    size_t table = fb_ref(&fb, msg, 2);
    if (hdr == HDR_DICTIONARY_BATCH) {
      rc = read_dictionary(r, &fb, table, body, body_len, start, err);
      if (rc) return rc;
      continue;
    }
    if (hdr != HDR_RECORD_BATCH)
      return bad(err, "a message after the schema is not a record batch", start);
    ck_arrow_type_t types[CK_ARROW_MAX_FIELDS];
    for (int c = 0; c < r->nfields; c++) types[c] = r->fields[c].type;
    rc = read_columns(r, &fb, table, body, body_len, types, r->nfields, r->cols, &r->nrows,
                      start, err);
    r->batch_start = start;
    return rc ? rc : 1;
  }
}
