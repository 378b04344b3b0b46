/* DESIGN: see batch.h. Growth doubles capacity; the validity bitmap is created lazily, on the
 * first NULL, with every earlier row marked valid. Filtering (ck_col_gather) copies a column
 * at a time from runs of kept rows, one typed loop per width, never value by value through
 * the append path. */
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

void ck_col_grow_data(ck_col_t *col, size_t n) {
  size_t cap = col->data_cap ? col->data_cap : 256;
  while (cap < col->data_len + n) cap *= 2;
  col->data = ck_realloc(col->data, cap);
  col->data_cap = cap;
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
  ck_free(b->wms);
  ck_free(b);
}

void ck_batch_clear(ck_batch_t *b) {
  for (int i = 0; i < b->ncols; i++) ck_col_clear(&b->cols[i]);
  b->nrows = 0;
  ck_free(b->kinds);
  b->kinds = NULL;
  ck_free(b->wms);
  b->wms = NULL;
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

/* ---- selections ---- */

static inline uint64_t load64(const uint8_t *p) {
  uint64_t w;
  memcpy(&w, p, 8);
  return w;
}
/* True when some byte of w is zero. */
static inline bool has_zero_byte(uint64_t w) {
  return ((w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull) != 0;
}

/* Branch-free over mixed bytes (a selection from a predicate is often random), 8 rows at a
 * time over words that are all dropped or all kept. runs[nruns] always holds the run open at
 * row i, or scratch when none is, hence the one slot of room past the last run. */
size_t ck_sel_runs(const uint8_t *sel, size_t n, ck_run_t *runs, size_t *kept) {
  ck_assert(n <= UINT32_MAX);
  size_t nruns = 0, total = 0, i = 0;
  uint32_t start = 0;
  unsigned prev = 0;
  while (i < n) {
    if (i + 8 <= n) {
      uint64_t w = load64(sel + i);
      if (!prev && w == 0) {
        i += 8;
        continue;
      }
      if (prev && !has_zero_byte(w)) {
        runs[nruns].len += 8;
        total += 8;
        i += 8;
        continue;
      }
    }
    size_t end = i + 8 < n ? i + 8 : n;
    for (; i < end; i++) {
      unsigned cur = sel[i] != 0;
      start ^= (start ^ (uint32_t)i) & (0u - (cur & ~prev)); /* a run starts here */
      nruns += prev & ~cur & 1u; /* the open run ended at i - 1 */
      runs[nruns] = (ck_run_t){start, (uint32_t)(i + 1 - start)};
      total += cur;
      prev = cur;
    }
  }
  *kept = total;
  return nruns + prev;
}

typedef struct w16 {
  uint64_t lo, hi;
} w16_t;

/* Short runs element by element, long ones with one memcpy. */
#define GATHER_FIXED(T)                                                          \
  do {                                                                           \
    const T *s = src->values;                                                    \
    T *d = dst->values;                                                          \
    for (size_t r = 0; r < nruns; r++) {                                         \
      const T *from = s + runs[r].start;                                         \
      size_t len = runs[r].len;                                                  \
      if (len < 8)                                                               \
        for (size_t k = 0; k < len; k++) d[k] = from[k];                         \
      else                                                                       \
        memcpy(d, from, len * sizeof(T));                                        \
      d += len;                                                                  \
    }                                                                            \
  } while (0)

static void gather_fixed(ck_col_t *dst, const ck_col_t *src, const ck_run_t *runs,
                         size_t nruns) {
  switch (ck_type_width(src->type)) {
    case 1: GATHER_FIXED(uint8_t); break;
    case 4: GATHER_FIXED(uint32_t); break;
    case 8: GATHER_FIXED(uint64_t); break;
    case 16: GATHER_FIXED(w16_t); break;
    default: ck_assert(!"unexpected column width");
  }
}

/* Offsets rebased run by run; the bytes of a run are contiguous in src, so one memcpy each. */
static void gather_str(ck_col_t *dst, const ck_col_t *src, const ck_run_t *runs, size_t nruns) {
  const int32_t *so = src->values;
  int32_t *d = dst->values;
  size_t bytes = 0;
  for (size_t r = 0; r < nruns; r++)
    bytes += (size_t)(so[runs[r].start + runs[r].len] - so[runs[r].start]);
  if (bytes) {
    dst->data = ck_malloc(bytes);
    dst->data_cap = bytes;
  }
  d[0] = 0;
  d++;
  int32_t pos = 0;
  for (size_t r = 0; r < nruns; r++) {
    const int32_t *from = so + runs[r].start;
    size_t len = runs[r].len;
    int32_t nb = from[len] - from[0], shift = pos - from[0];
    if (nb) memcpy(dst->data + pos, src->data + from[0], (size_t)nb);
    for (size_t k = 0; k < len; k++) d[k] = from[k + 1] + shift;
    d += len;
    pos += nb;
  }
  dst->data_len = bytes;
}

/* The bitmap is kept only when a kept row is NULL; bytes of valid rows are skipped whole. */
static void gather_validity(ck_col_t *dst, const ck_col_t *src, const ck_run_t *runs,
                            size_t nruns) {
  const uint8_t *sv = src->validity;
  uint8_t *v = ck_malloc(vbytes(dst->cap));
  memset(v, 0xff, vbytes(dst->cap));
  size_t j = 0, nulls = 0;
  for (size_t r = 0; r < nruns; r++) {
    size_t i = runs[r].start, end = i + runs[r].len;
    while (i < end) {
      if (!(i & 7) && i + 8 <= end && sv[i >> 3] == 0xff) {
        i += 8;
        j += 8;
        continue;
      }
      if (!((sv[i >> 3] >> (i & 7)) & 1)) {
        v[j >> 3] &= (uint8_t) ~(1u << (j & 7));
        nulls++;
      }
      i++;
      j++;
    }
  }
  if (nulls) dst->validity = v;
  else ck_free(v);
}

void ck_col_gather(ck_col_t *dst, const ck_col_t *src, const ck_run_t *runs, size_t nruns,
                   size_t kept) {
  ck_col_init(dst, src->type, kept);
  if (src->type.id == CK_T_STRING) gather_str(dst, src, runs, nruns);
  else gather_fixed(dst, src, runs, nruns);
  dst->len = kept;
  if (src->validity) gather_validity(dst, src, runs, nruns);
}

ck_batch_t *ck_batch_gather(const ck_batch_t *src, const ck_run_t *runs, size_t nruns,
                            size_t kept, const bool *need) {
  ck_batch_t *b = ck_calloc(1, sizeof *b);
  b->ncols = src->ncols;
  b->cols = ck_calloc((size_t)(src->ncols ? src->ncols : 1), sizeof *b->cols);
  for (int c = 0; c < src->ncols; c++) {
    if (!need || need[c]) ck_col_gather(&b->cols[c], &src->cols[c], runs, nruns, kept);
    else b->cols[c].type = src->cols[c].type;
  }
  b->nrows = kept;
  ck_batch_carry_rows(b, src, runs, nruns, kept);
  return b;
}

static void *carry(const void *src, size_t width, const ck_run_t *runs, size_t nruns,
                   size_t kept) {
  char *out = ck_malloc(kept ? kept * width : 1), *d = out;
  if (!runs) {
    memcpy(out, src, kept * width);
    return out;
  }
  for (size_t r = 0; r < nruns; r++) {
    memcpy(d, (const char *)src + runs[r].start * width, runs[r].len * width);
    d += runs[r].len * width;
  }
  return out;
}

void ck_batch_carry_rows(ck_batch_t *dst, const ck_batch_t *src, const ck_run_t *runs,
                         size_t nruns, size_t kept) {
  if (src->kinds) dst->kinds = carry(src->kinds, 1, runs, nruns, kept);
  if (src->wms) dst->wms = carry(src->wms, sizeof *src->wms, runs, nruns, kept);
}

ck_batch_t *ck_batch_filter(const ck_batch_t *src, const uint8_t *sel) {
  ck_run_t local[CK_BATCH_ROWS / 2 + 1];
  size_t room = src->nrows / 2 + 1;
  ck_run_t *runs = room <= CK_ARRAY_LEN(local) ? local : ck_malloc(room * sizeof *runs);
  size_t kept, nruns = ck_sel_runs(sel, src->nrows, runs, &kept);
  ck_batch_t *out = ck_batch_gather(src, runs, nruns, kept, NULL);
  if (runs != local) ck_free(runs);
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
  if (src->wms) {
    /* grows with the first column's capacity, as kinds; rows appended before the first one
     * that had a watermark were under the receiver's last watermark, the least possible */
    size_t cap = dst->ncols ? dst->cols[0].cap : dst->nrows;
    if (row >= cap) cap = row + 1;
    if (!dst->wms) {
      dst->wms = ck_malloc(cap * sizeof *dst->wms);
      for (size_t r = 0; r < row; r++) dst->wms[r] = INT64_MIN;
    } else {
      dst->wms = ck_realloc(dst->wms, cap * sizeof *dst->wms);
    }
    dst->wms[row] = src->wms[i];
  } else if (dst->wms) {
    size_t cap = dst->ncols ? dst->cols[0].cap : dst->nrows;
    if (row >= cap) cap = row + 1;
    dst->wms = ck_realloc(dst->wms, cap * sizeof *dst->wms);
    dst->wms[row] = row ? dst->wms[row - 1] : INT64_MIN;
  }
}
