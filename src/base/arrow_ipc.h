/*
 * DESIGN: a small Arrow IPC stream writer and reader (the columnar format's "streaming format":
 * a Schema message, RecordBatch messages, the end-of-stream marker), written by hand — the
 * flatbuffers of Schema.fbs and Message.fbs are built and read field by field, no library.
 *
 * What it covers is what clink writes: flat schemas of columns of the types in ck_arrow_type_t
 * (nullable ones with a validity bitmap: the flight recorder's, capture/capture.h), schema-level
 * key/value metadata, uncompressed bodies, metadata version V5, little endian. Every buffer in
 * a body starts at a multiple of 8 bytes. One dictionary-encoded type: CK_ARROW_DICT_UTF8, a
 * utf8 column whose rows are int8 indices into a dictionary the stream carries in a
 * DictionaryBatch message (its id: the field's index) between the schema and the first record
 * batch; readers see a dictionary<int8, string> column. The reader reads streams this writer
 * made and any other stream of those types (other types, other index widths, delta
 * dictionaries or nested fields are refused with their name); every offset and index it
 * follows is bounds-checked, so a damaged or foreign file is an error, never a crash.
 *
 * Users: checkpoint snapshots (checkpoint/store.c; docs/state.md). Nothing here knows them.
 * Threads: none of its own; a writer, batch or reader belongs to its caller's thread.
 */
#ifndef CK_BASE_ARROW_IPC_H
#define CK_BASE_ARROW_IPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/bytes.h"
#include "base/error.h"

typedef enum ck_arrow_type {
  CK_ARROW_UINT16,
  CK_ARROW_UINT32,
  CK_ARROW_INT64,
  CK_ARROW_FLOAT64,
  CK_ARROW_UTF8,
  CK_ARROW_BINARY,
  CK_ARROW_DICT_UTF8, /* utf8 values, int8 indices into the field's dictionary */
} ck_arrow_type_t;

#define CK_ARROW_MAX_DICT 127 /* values in one dictionary (int8 indices) */

#define CK_ARROW_MAX_FIELDS 32
#define CK_ARROW_MAX_META 32

typedef struct ck_arrow_field {
  const char *name;
  ck_arrow_type_t type;
  bool nullable; /* the schema says so; a batch's column may then carry a validity bitmap */
} ck_arrow_field_t;

typedef struct ck_arrow_kv {
  const char *key, *value;
} ck_arrow_kv_t;

/* ---- writing ---- */

/* Appends the Schema message. When value_at is not NULL, value_at[i] receives the offset in
 * out of meta[i].value's first byte (so a caller may fill a fixed-width value in afterwards,
 * e.g. a checksum over the finished stream). */
void ck_arrow_write_schema(ck_buf_t *out, const ck_arrow_field_t *fields, int nfields,
                           const ck_arrow_kv_t *meta, int nmeta, size_t *value_at);

/* The columns of one record batch being built. */
typedef struct ck_arrow_col {
  ck_arrow_type_t type;
  ck_buf_t data;    /* fixed-width values, or the bytes of variable-width ones */
  ck_buf_t offsets; /* UTF8/BINARY: int32 offsets, nrows + 1 of them */
  /* NULLs: null_count > 0 writes validity (bit i set = row i is not NULL, at least
   * (nrows + 7) / 8 bytes; a NULL row still has its value slot, any bytes); 0: no bitmap */
  ck_buf_t validity;
  int64_t null_count;
} ck_arrow_col_t;

typedef struct ck_arrow_batch {
  int ncols;
  ck_arrow_col_t cols[CK_ARROW_MAX_FIELDS];
  int64_t nrows;
} ck_arrow_batch_t;

void ck_arrow_batch_init(ck_arrow_batch_t *batch, const ck_arrow_field_t *fields, int nfields);
void ck_arrow_batch_fini(ck_arrow_batch_t *batch);
void ck_arrow_batch_reset(ck_arrow_batch_t *batch); /* no rows; memory kept */
/* memcpy for the short variable-length copies of a row loop: inline, no call up to 32 bytes
 * (d and s do not overlap). */
static inline void ck_arrow_copy_short(void *d, const void *s, size_t n) {
  uint8_t *dp = d;
  const uint8_t *sp = s;
  if (n > 32) {
    memcpy(dp, sp, n);
  } else if (n >= 16) {
    uint8_t a[16], b[16];
    memcpy(a, sp, 16);
    memcpy(b, sp + n - 16, 16);
    memcpy(dp, a, 16);
    memcpy(dp + n - 16, b, 16);
  } else if (n >= 8) {
    uint64_t a, b;
    memcpy(&a, sp, 8);
    memcpy(&b, sp + n - 8, 8);
    memcpy(dp, &a, 8);
    memcpy(dp + n - 8, &b, 8);
  } else if (n >= 4) {
    uint32_t a, b;
    memcpy(&a, sp, 4);
    memcpy(&b, sp + n - 4, 4);
    memcpy(dp, &a, 4);
    memcpy(dp + n - 4, &b, 4);
  } else if (n) {
    uint8_t a = sp[0], b = sp[n / 2], c = sp[n - 1];
    dp[0] = a, dp[n / 2] = b, dp[n - 1] = c;
  }
}
/* One value of the current row into column col (of the matching type); then ck_arrow_batch_row
 * when every column has its value. Inline: a snapshot writes millions of rows. */
static inline void ck_arrow_col_put_(ck_buf_t *b, const void *p, size_t n) {
  if (b->len + n >= b->cap) ck_buf_reserve(b, n);
  ck_arrow_copy_short(b->data + b->len, p, n);
  b->len += n;
}
static inline void ck_arrow_put_u16(ck_arrow_batch_t *batch, int col, uint16_t v) {
  ck_arrow_col_put_(&batch->cols[col].data, &v, 2);
}
static inline void ck_arrow_put_u32(ck_arrow_batch_t *batch, int col, uint32_t v) {
  ck_arrow_col_put_(&batch->cols[col].data, &v, 4);
}
static inline void ck_arrow_put_i64(ck_arrow_batch_t *batch, int col, int64_t v) {
  ck_arrow_col_put_(&batch->cols[col].data, &v, 8);
}
static inline void ck_arrow_put_f64(ck_arrow_batch_t *batch, int col, double v) {
  ck_arrow_col_put_(&batch->cols[col].data, &v, 8);
}
/* A value in two parts (p then q; q may be NULL when m is 0). */
static inline void ck_arrow_put_bytes2(ck_arrow_batch_t *batch, int col, const void *p, size_t n,
                                       const void *q, size_t m) {
  ck_arrow_col_t *c = &batch->cols[col];
  if (c->data.len + n + m >= c->data.cap) ck_buf_reserve(&c->data, n + m);
  ck_arrow_copy_short(c->data.data + c->data.len, p, n);
  ck_arrow_copy_short(c->data.data + c->data.len + n, q, m);
  c->data.len += n + m;
  int32_t end = (int32_t)c->data.len;
  ck_arrow_col_put_(&c->offsets, &end, 4);
}
static inline void ck_arrow_put_bytes(ck_arrow_batch_t *batch, int col, const void *p, size_t n) {
  ck_arrow_put_bytes2(batch, col, p, n, NULL, 0);
}
/* A CK_ARROW_DICT_UTF8 value: its index in the field's dictionary. */
static inline void ck_arrow_put_dict(ck_arrow_batch_t *batch, int col, uint8_t index) {
  ck_arrow_col_put_(&batch->cols[col].data, &index, 1);
}
static inline void ck_arrow_batch_row(ck_arrow_batch_t *batch) { batch->nrows++; }
/* Bytes the batch's body holds so far (to cut batches at a size). */
size_t ck_arrow_batch_bytes(const ck_arrow_batch_t *batch);

/* Appends a RecordBatch message holding batch's rows. */
void ck_arrow_write_batch(ck_buf_t *out, const ck_arrow_batch_t *batch);
/* Appends the DictionaryBatch of the CK_ARROW_DICT_UTF8 field at index field of the schema:
 * its n values (n <= CK_ARROW_MAX_DICT), index i for values[i]. Once, after the schema and
 * before the first record batch. */
void ck_arrow_write_dictionary(ck_buf_t *out, int field, const char *const *values, int n);
/* Appends the end-of-stream marker. */
void ck_arrow_write_eos(ck_buf_t *out);

/* ---- reading ---- */

typedef struct ck_arrow_rcol {
  const uint8_t *validity; /* NULL: no row is NULL; else bit i set = row i is not NULL */
  int64_t null_count;
  const uint8_t *data;    /* values (DICT_UTF8: the int8 indices), or the variable-width bytes */
  const int32_t *offsets; /* UTF8/BINARY */
  size_t data_len;
} ck_arrow_rcol_t;

/* The dictionary of a DICT_UTF8 field, as the stream's DictionaryBatch gave it. */
typedef struct ck_arrow_rdict {
  int64_t n;              /* values; 0 until the dictionary is read */
  const int32_t *offsets; /* n + 1 */
  const uint8_t *data;
} ck_arrow_rdict_t;

typedef struct ck_arrow_reader {
  const uint8_t *p;
  size_t len, off;
  int nfields;
  ck_arrow_field_t fields[CK_ARROW_MAX_FIELDS]; /* names point into the stream (NUL-ended) */
  int nmeta;
  ck_arrow_kv_t meta[CK_ARROW_MAX_META];        /* point into the stream (NUL-ended) */
  size_t meta_value_at[CK_ARROW_MAX_META];      /* offsets of the values in the stream */
  size_t schema_end;                            /* offset just past the Schema message */
  int64_t dict_id[CK_ARROW_MAX_FIELDS];         /* DICT_UTF8 fields: their dictionary's id */
  ck_arrow_rdict_t dicts[CK_ARROW_MAX_FIELDS];  /* DICT_UTF8 fields: their dictionary */
  /* the current batch */
  size_t batch_start; /* offset of its message in the stream */
  int64_t nrows;
  ck_arrow_rcol_t cols[CK_ARROW_MAX_FIELDS];
  bool eos;
} ck_arrow_reader_t;

/* Reads the Schema message of the stream in data (which must outlive the reader). CK_EPARSE
 * with what is wrong when it is not one this reader reads. */
int ck_arrow_reader_open(ck_arrow_reader_t *r, const void *data, size_t len, ck_error_t *err);
/* The value of schema metadata key, or NULL. */
const char *ck_arrow_reader_meta(const ck_arrow_reader_t *r, const char *key);
/* The index of the field called name, or -1. */
int ck_arrow_reader_field(const ck_arrow_reader_t *r, const char *name);
/* The next record batch: 1 (r->nrows, r->cols hold it), 0 at the end-of-stream marker (or the
 * end of the data), CK_EPARSE when a message is damaged. Dictionary batches on the way are read
 * into r->dicts (every index of a batch is checked against its dictionary). */
int ck_arrow_reader_next(ck_arrow_reader_t *r, ck_error_t *err);

static inline bool ck_arrow_valid(const ck_arrow_reader_t *r, int col, int64_t row) {
  const uint8_t *v = r->cols[col].validity;
  return !v || (v[row >> 3] >> (row & 7)) & 1;
}
static inline uint16_t ck_arrow_get_u16(const ck_arrow_reader_t *r, int col, int64_t row) {
  return ck_get_le16(r->cols[col].data + 2 * row); /* Arrow buffers are little endian */
}
static inline uint32_t ck_arrow_get_u32(const ck_arrow_reader_t *r, int col, int64_t row) {
  return ck_get_le32(r->cols[col].data + 4 * row); /* Arrow buffers are little endian */
}
static inline int64_t ck_arrow_get_i64(const ck_arrow_reader_t *r, int col, int64_t row) {
  return (int64_t)ck_get_le64(r->cols[col].data + 8 * row);
}
static inline double ck_arrow_get_f64(const ck_arrow_reader_t *r, int col, int64_t row) {
  double v;
  memcpy(&v, r->cols[col].data + 8 * row, 8);
  return v;
}
/* A DICT_UTF8 value: the string its index names (checked when the batch was read). */
static inline const uint8_t *ck_arrow_get_dict(const ck_arrow_reader_t *r, int col, int64_t row,
                                               size_t *n) {
  const ck_arrow_rdict_t *d = &r->dicts[col];
  int i = (int8_t)r->cols[col].data[row];
  int32_t a, b;
  memcpy(&a, d->offsets + i, 4);
  memcpy(&b, d->offsets + i + 1, 4);
  *n = (size_t)(b - a);
  return d->data + a;
}
static inline const uint8_t *ck_arrow_get_bytes(const ck_arrow_reader_t *r, int col, int64_t row,
                                                size_t *n) {
  int32_t a, b;
  memcpy(&a, r->cols[col].offsets + row, 4);
  memcpy(&b, r->cols[col].offsets + row + 1, 4);
  *n = (size_t)(b - a);
  return r->cols[col].data + a;
}

#endif
