/*
 * DESIGN: columnar batches, laid out like Arrow.
 *
 * A batch is the unit that travels between operators: up to CK_BATCH_ROWS rows, one column per
 * field. Each column has a validity bitmap (bit i set = row i is not NULL; the bitmap may be
 * NULL when every row is valid), a fixed-width value array (see types.h) and, for STRING,
 * int32 offsets[n+1] into a byte buffer — the Arrow layout, so a column can be exported through
 * the Arrow C Data Interface without copying.
 *
 * A batch may carry a row-kind array (changelog streams: insert / update-before / update-after /
 * delete); NULL means every row is an insert.
 *
 * A batch may also carry the watermark in effect before each row (wms, non-decreasing): a
 * source moves its watermark after every record, not after every poll, so whether a record is
 * late is a function of its partition's record order alone, never of where a batch ended. An
 * operator that acts on time (window aggregates) advances its watermark to wms[i] before row
 * i; the others only carry the array through their selections. NULL means every row is under
 * the watermark the operator last received.
 *
 * Memory: a batch owns every buffer of its columns (ck_malloc'd); ck_batch_free releases all.
 * A batch belongs to one thread at a time; it changes hands through a channel.
 */
#ifndef CK_RUNTIME_BATCH_H
#define CK_RUNTIME_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/types.h"

#define CK_BATCH_ROWS 1024

typedef enum ck_row_kind {
  CK_ROW_INSERT = 0,
  CK_ROW_UPDATE_BEFORE = 1,
  CK_ROW_UPDATE_AFTER = 2,
  CK_ROW_DELETE = 3,
} ck_row_kind_t;

typedef struct ck_col {
  ck_type_t type;
  size_t len;          /* rows */
  size_t cap;          /* rows the value/validity arrays can hold */
  uint8_t *validity;   /* NULL = all valid; else (cap+7)/8 bytes */
  void *values;        /* cap * width bytes; STRING: int32 offsets, cap+1 entries */
  char *data;          /* STRING bytes */
  size_t data_len, data_cap;
} ck_col_t;

typedef struct ck_batch {
  int ncols;
  size_t nrows;
  ck_col_t *cols;
  uint8_t *kinds; /* NULL = all CK_ROW_INSERT; else nrows entries of ck_row_kind_t */
  int64_t *wms;   /* NULL = none; else nrows entries: the watermark in effect before row i */
} ck_batch_t;

/* Columns */
void ck_col_init(ck_col_t *col, ck_type_t type, size_t cap);
void ck_col_fini(ck_col_t *col);
void ck_col_reserve(ck_col_t *col, size_t rows);
void ck_col_clear(ck_col_t *col); /* len = 0, memory kept */
static inline bool ck_col_valid(const ck_col_t *col, size_t i) {
  return !col->validity || (col->validity[i >> 3] >> (i & 7)) & 1;
}
void ck_col_set_null(ck_col_t *col, size_t i); /* materialises the bitmap if needed */
/* Appending (grows as needed). */
void ck_col_append_null(ck_col_t *col);
void ck_col_append_bool(ck_col_t *col, bool v);
void ck_col_append_f32(ck_col_t *col, float v);
void ck_col_append_f64(ck_col_t *col, double v);
void ck_col_append_dec(ck_col_t *col, ck_i128 v);
/* The hot appends (decoders call them per value) are inline, below. */
static inline void ck_col_append_i32(ck_col_t *col, int32_t v);
static inline void ck_col_append_i64(ck_col_t *col, int64_t v); /* INT64, TIMESTAMP */
static inline void ck_col_append_str(ck_col_t *col, const char *s, size_t n);
/* Room for a string of up to n bytes after col's bytes, to be written in place and then
 * appended as the next row by ck_col_str_commit with its length (at most n). A reserve that is
 * never committed appends nothing. */
static inline char *ck_col_str_reserve(ck_col_t *col, size_t n);
static inline void ck_col_str_commit(ck_col_t *col, size_t n);
void ck_col_grow_data(ck_col_t *col, size_t n); /* room for n more string bytes */
void ck_col_append_value(ck_col_t *col, const ck_value_t *v); /* v->type must match col */
/* Appends row i of src (same type) to dst. */
void ck_col_append_from(ck_col_t *dst, const ck_col_t *src, size_t i);
/* Typed access (no NULL check). */
static inline int32_t ck_col_i32(const ck_col_t *c, size_t i) { return ((const int32_t *)c->values)[i]; }
static inline int64_t ck_col_i64(const ck_col_t *c, size_t i) { return ((const int64_t *)c->values)[i]; }
static inline double ck_col_f64(const ck_col_t *c, size_t i) { return ((const double *)c->values)[i]; }
static inline float ck_col_f32(const ck_col_t *c, size_t i) { return ((const float *)c->values)[i]; }
static inline bool ck_col_bool(const ck_col_t *c, size_t i) { return ((const uint8_t *)c->values)[i] != 0; }
static inline ck_i128 ck_col_dec(const ck_col_t *c, size_t i) {
  ck_i128 v;
  __builtin_memcpy(&v, (const char *)c->values + i * 16, 16);
  return v;
}
static inline const char *ck_col_str(const ck_col_t *c, size_t i, size_t *len) {
  const int32_t *off = c->values;
  *len = (size_t)(off[i + 1] - off[i]);
  return c->data + off[i];
}
static inline void ck_col_append_i32(ck_col_t *col, int32_t v) {
  if (col->len >= col->cap) ck_col_reserve(col, col->len + 1);
  ((int32_t *)col->values)[col->len++] = v;
}
static inline void ck_col_append_i64(ck_col_t *col, int64_t v) {
  if (col->len >= col->cap) ck_col_reserve(col, col->len + 1);
  ((int64_t *)col->values)[col->len++] = v;
}
static inline char *ck_col_str_reserve(ck_col_t *col, size_t n) {
  if (col->len >= col->cap) ck_col_reserve(col, col->len + 1);
  if (col->data_len + n > col->data_cap) ck_col_grow_data(col, n);
  return col->data ? col->data + col->data_len : NULL; /* NULL + 0 is undefined: n is 0 here */
}
static inline void ck_col_str_commit(ck_col_t *col, size_t n) {
  col->data_len += n; /* within what ck_col_str_reserve made room for */
  ((int32_t *)col->values)[col->len + 1] = (int32_t)col->data_len;
  col->len++;
}
static inline void ck_col_append_str(ck_col_t *col, const char *s, size_t n) {
  char *o = ck_col_str_reserve(col, n);
  if (n) __builtin_memcpy(o, s, n);
  ck_col_str_commit(col, n);
}

/* Row i as a value (strings point into the column). */
void ck_col_get_value(const ck_col_t *col, size_t i, ck_value_t *out);

/* Batches */
ck_batch_t *ck_batch_new(int ncols, const ck_type_t *types, size_t cap);
void ck_batch_free(ck_batch_t *batch);
void ck_batch_clear(ck_batch_t *batch); /* every column emptied, memory kept */
/* Sets nrows from the columns (they must agree) after appending column-wise. */
void ck_batch_seal(ck_batch_t *batch);
void ck_batch_set_kind(ck_batch_t *batch, size_t row, ck_row_kind_t kind); /* after seal */
static inline ck_row_kind_t ck_batch_kind(const ck_batch_t *b, size_t i) {
  return b->kinds ? (ck_row_kind_t)b->kinds[i] : CK_ROW_INSERT;
}
/* Row selections. A selection of rows (sel[i] != 0: keep row i) is turned once into runs of
 * consecutive kept rows, then applied column at a time: fixed-width values and row kinds are
 * copied a run at a time, STRING offsets are rebased and their bytes copied a run at a time
 * into one buffer sized up front. */
typedef struct ck_run {
  uint32_t start, len;
} ck_run_t;
/* Fills runs (room for n / 2 + 1) from sel[0..n); returns how many, and the rows kept. */
size_t ck_sel_runs(const uint8_t *sel, size_t n, ck_run_t *runs, size_t *kept);
/* Initialises dst as the rows of src in runs (kept rows in all), same type and NULLs. */
void ck_col_gather(ck_col_t *dst, const ck_col_t *src, const ck_run_t *runs, size_t nruns,
                   size_t kept);
/* A new batch of the rows of src in runs, with their row kinds. need (NULL: every column)
 * says which columns to copy; the others are left without buffers (len 0, only their type):
 * for a caller that reads only the needed ones, not for passing on. */
ck_batch_t *ck_batch_gather(const ck_batch_t *src, const ck_run_t *runs, size_t nruns,
                            size_t kept, const bool *need);
/* Gives dst (kept rows) the row kinds and row watermarks of the rows of src in runs (NULL: the
 * first kept rows of src), when src has them. */
void ck_batch_carry_rows(ck_batch_t *dst, const ck_batch_t *src, const ck_run_t *runs,
                         size_t nruns, size_t kept);
/* A new batch holding the rows of src whose sel[i] is true (same columns). */
ck_batch_t *ck_batch_filter(const ck_batch_t *src, const uint8_t *sel);
/* Appends row i of src to dst (same column types), with its row kind. */
void ck_batch_append_row(ck_batch_t *dst, const ck_batch_t *src, size_t i);

#endif
