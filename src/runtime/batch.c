/* DESIGN: see batch.h. Growth doubles capacity; the validity bitmap is created lazily, on the
 * first NULL, with every earlier row marked valid. */
#include "runtime/batch.h"

#include <string.h>

#include "base/alloc.h"

static size_t vbytes(size_t rows) { return (rows + 7) / 8; }

void ck_col_init(ck_col_t *col, ck_type_t type, size_t cap) {
  memset(col, 0, sizeof *col);
  col->type = type;
  ck_col_reserve(col, cap ? cap : 16);
}

void ck_col_fini(ck_col_t *col) {
  ck_free(col->validity);
  ck_free(col->values);
  ck_free(col->data);
  memset(col, 0, sizeof *col);
}

void ck_col_reserve(ck_col_t *col, size_t rows) {
  if (rows <= col->cap && col->values) return;
  size_t cap = col->cap ? col->cap : 16;
  while (cap < rows) cap *= 2;
  if (col->type.id == CK_T_STRING) {
    col->values = ck_realloc(col->values, (cap + 1) * sizeof(int32_t));
    if (col->cap == 0) ((int32_t *)col->values)[0] = 0;
  } else {
    col->values = ck_realloc(col->values, cap * ck_type_width(col->type));
  }
  if (col->validity) {
    size_t old = vbytes(col->cap);
    col->validity = ck_realloc(col->validity, vbytes(cap));
    memset(col->validity + old, 0xff, vbytes(cap) - old);
  }
  col->cap = cap;
}

void ck_col_clear(ck_col_t *col) {
  col->len = 0;
  col->data_len = 0;
  if (col->type.id == CK_T_STRING && col->values) ((int32_t *)col->values)[0] = 0;
  if (col->validity) memset(col->validity, 0xff, vbytes(col->cap));
}

void ck_col_set_null(ck_col_t *col, size_t i) {
  if (!col->validity) {
    col->validity = ck_malloc(vbytes(col->cap));
    memset(col->validity, 0xff, vbytes(col->cap));
  }
  col->validity[i >> 3] &= (uint8_t) ~(1u << (i & 7));
}

static inline void *slot(ck_col_t *col) {
  if (col->len >= col->cap) ck_col_reserve(col, col->len + 1);
  return (char *)col->values + col->len * ck_type_width(col->type);
}

void ck_col_append_null(ck_col_t *col) {
  if (col->type.id == CK_T_STRING) {
    ck_col_append_str(col, "", 0);
  } else {
    memset(slot(col), 0, ck_type_width(col->type));
    col->len++;
  }
  ck_col_set_null(col, col->len - 1);
}

void ck_col_append_bool(ck_col_t *col, bool v) {
  *(uint8_t *)slot(col) = v ? 1 : 0;
  col->len++;
}
void ck_col_append_i32(ck_col_t *col, int32_t v) {
  *(int32_t *)slot(col) = v;
  col->len++;
}
void ck_col_append_i64(ck_col_t *col, int64_t v) {
  *(int64_t *)slot(col) = v;
  col->len++;
}
void ck_col_append_f32(ck_col_t *col, float v) {
  *(float *)slot(col) = v;
  col->len++;
}
void ck_col_append_f64(ck_col_t *col, double v) {
  *(double *)slot(col) = v;
  col->len++;
}
void ck_col_append_dec(ck_col_t *col, ck_i128 v) {
  memcpy(slot(col), &v, 16);
  col->len++;
}

void ck_col_append_str(ck_col_t *col, const char *s, size_t n) {
  if (col->len >= col->cap) ck_col_reserve(col, col->len + 1);
  if (col->data_len + n > col->data_cap) {
    size_t cap = col->data_cap ? col->data_cap : 256;
    while (cap < col->data_len + n) cap *= 2;
    col->data = ck_realloc(col->data, cap);
    col->data_cap = cap;
  }
  if (n) memcpy(col->data + col->data_len, s, n);
  col->data_len += n;
  int32_t *off = col->values;
  off[col->len + 1] = (int32_t)col->data_len;
  col->len++;
}

void ck_col_append_value(ck_col_t *col, const ck_value_t *v) {
  if (v->is_null) {
    ck_col_append_null(col);
    return;
  }
  switch (col->type.id) {
    case CK_T_NULL: ck_col_append_null(col); break;
    case CK_T_BOOL: ck_col_append_bool(col, v->v.b); break;
    case CK_T_INT32: ck_col_append_i32(col, (int32_t)v->v.i); break;
    case CK_T_INT64:
    case CK_T_TIMESTAMP: ck_col_append_i64(col, v->v.i); break;
    case CK_T_FLOAT32: ck_col_append_f32(col, (float)v->v.f); break;
    case CK_T_FLOAT64: ck_col_append_f64(col, v->v.f); break;
    case CK_T_DECIMAL: ck_col_append_dec(col, v->v.dec); break;
    case CK_T_STRING: ck_col_append_str(col, v->v.s.ptr, v->v.s.len); break;
  }
}

void ck_col_append_from(ck_col_t *dst, const ck_col_t *src, size_t i) {
  if (!ck_col_valid(src, i)) {
    ck_col_append_null(dst);
    return;
  }
  if (src->type.id == CK_T_STRING) {
    size_t n;
    const char *s = ck_col_str(src, i, &n);
    ck_col_append_str(dst, s, n);
    return;
  }
  size_t w = ck_type_width(src->type);
  memcpy(slot(dst), (const char *)src->values + i * w, w);
  dst->len++;
}

void ck_col_get_value(const ck_col_t *col, size_t i, ck_value_t *out) {
  memset(out, 0, sizeof *out);
  out->type = col->type;
  if (!ck_col_valid(col, i)) {
    out->is_null = true;
    return;
  }
  switch (col->type.id) {
    case CK_T_NULL: out->is_null = true; break;
    case CK_T_BOOL: out->v.b = ck_col_bool(col, i); break;
    case CK_T_INT32: out->v.i = ck_col_i32(col, i); break;
    case CK_T_INT64:
    case CK_T_TIMESTAMP: out->v.i = ck_col_i64(col, i); break;
    case CK_T_FLOAT32: out->v.f = ck_col_f32(col, i); break;
    case CK_T_FLOAT64: out->v.f = ck_col_f64(col, i); break;
    case CK_T_DECIMAL: out->v.dec = ck_col_dec(col, i); break;
    case CK_T_STRING: out->v.s.ptr = ck_col_str(col, i, &out->v.s.len); break;
  }
}

ck_batch_t *ck_batch_new(int ncols, const ck_type_t *types, size_t cap) {
  ck_batch_t *b = ck_calloc(1, sizeof *b);
  b->ncols = ncols;
  b->cols = ck_calloc((size_t)(ncols ? ncols : 1), sizeof *b->cols);
  for (int i = 0; i < ncols; i++) ck_col_init(&b->cols[i], types[i], cap);
  return b;
}

void ck_batch_free(ck_batch_t *b) {
  if (!b) return;
  for (int i = 0; i < b->ncols; i++) ck_col_fini(&b->cols[i]);
  ck_free(b->cols);
  ck_free(b->kinds);
  ck_free(b);
}

void ck_batch_clear(ck_batch_t *b) {
  for (int i = 0; i < b->ncols; i++) ck_col_clear(&b->cols[i]);
  b->nrows = 0;
  ck_free(b->kinds);
  b->kinds = NULL;
}

void ck_batch_seal(ck_batch_t *b) {
  b->nrows = b->ncols ? b->cols[0].len : b->nrows;
  for (int i = 1; i < b->ncols; i++) ck_assert(b->cols[i].len == b->nrows);
}

void ck_batch_set_kind(ck_batch_t *b, size_t row, ck_row_kind_t kind) {
  if (!b->kinds) {
    if (kind == CK_ROW_INSERT) return;
    b->kinds = ck_calloc(b->nrows ? b->nrows : 1, 1);
  }
  b->kinds[row] = (uint8_t)kind;
}

ck_batch_t *ck_batch_filter(const ck_batch_t *src, const uint8_t *sel) {
  size_t n = 0;
  for (size_t i = 0; i < src->nrows; i++) n += sel[i] != 0;
  ck_type_t types[src->ncols ? src->ncols : 1];
  for (int c = 0; c < src->ncols; c++) types[c] = src->cols[c].type;
  ck_batch_t *out = ck_batch_new(src->ncols, types, n);
  for (size_t i = 0; i < src->nrows; i++)
    if (sel[i]) ck_batch_append_row(out, src, i);
  return out;
}

void ck_batch_append_row(ck_batch_t *dst, const ck_batch_t *src, size_t i) {
  for (int c = 0; c < src->ncols; c++) ck_col_append_from(&dst->cols[c], &src->cols[c], i);
  size_t row = dst->nrows++;
  ck_row_kind_t k = ck_batch_kind(src, i);
  if (k != CK_ROW_INSERT || dst->kinds) {
    if (!dst->kinds) {
      dst->kinds = ck_calloc(dst->cols[0].cap ? dst->cols[0].cap : 1, 1);
    }
    /* kinds grows with the first column's capacity */
    size_t cap = dst->ncols ? dst->cols[0].cap : dst->nrows;
    if (row >= cap) cap = row + 1;
    dst->kinds = ck_realloc(dst->kinds, cap);
    dst->kinds[row] = (uint8_t)k;
  }
}
