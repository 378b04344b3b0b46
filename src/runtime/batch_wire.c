/*
 * DESIGN: see batch_wire.h for the layout and its guarantees.
 *
 * Encoding reserves the upper-bound size once, then appends; fixed-width value arrays are
 * copied as they are on little-endian hosts and byte-swapped element by element elsewhere.
 * Decoding walks a cursor (pos, end) that refuses to step past the end, so each check names
 * the part of the encoding that is missing.
 */
#include "runtime/batch_wire.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "base/crc32c.h"

#define HDR_SIZE 16u
#define COL_HDR_SIZE 4u
#define CRC_SIZE 4u
#define FLAG_KINDS 0x01u
#define FLAG_WMS 0x02u
#define COL_FLAG_VALIDITY 0x01u

static size_t vbytes(size_t rows) { return (rows + 7) / 8; }

/* ------------------------------------------------------------------ encoding ---- */

/* count elements of width bytes each, as little-endian. */
static void put_le_array(ck_buf_t *out, const void *src, size_t count, size_t width) {
  if (!CK_HOST_BE || width == 1) {
    ck_buf_append(out, src, count * width);
    return;
  }
  const uint8_t *p = src;
  uint8_t tmp[16];
  for (size_t i = 0; i < count; i++, p += width) {
    for (size_t b = 0; b < width; b++) tmp[b] = p[width - 1 - b];
    ck_buf_append(out, tmp, width);
  }
}

static void get_le_array(void *dst, const uint8_t *src, size_t count, size_t width) {
  if (!CK_HOST_BE || width == 1) {
    if (count) memcpy(dst, src, count * width);
    return;
  }
  uint8_t *p = dst;
  for (size_t i = 0; i < count; i++, p += width, src += width)
    for (size_t b = 0; b < width; b++) p[b] = src[width - 1 - b];
}

static bool range_has_null(const ck_col_t *col, size_t from, size_t n) {
  if (!col->validity) return false;
  for (size_t i = from; i < from + n; i++)
    if (!ck_col_valid(col, i)) return true;
  return false;
}

static bool range_has_kind(const ck_batch_t *batch, size_t from, size_t n) {
  if (!batch->kinds) return false;
  for (size_t i = from; i < from + n; i++)
    if (batch->kinds[i] != CK_ROW_INSERT) return true;
  return false;
}

/* Bits [from, from+n) of the column's bitmap, rebased to bit 0; bits past n are zero. */
static void put_validity(ck_buf_t *out, const ck_col_t *col, size_t from, size_t n) {
  size_t nb = vbytes(n);
  ck_buf_reserve(out, nb);
  uint8_t *dst = (uint8_t *)out->data + out->len;
  const uint8_t *src = col->validity;
  size_t first = from >> 3, last = (from + n - 1) >> 3; /* source bytes we may read */
  unsigned sh = (unsigned)(from & 7);
  for (size_t j = 0; j < nb; j++) {
    unsigned v = src[first + j] >> sh;
    if (sh && first + j + 1 <= last) v |= (unsigned)src[first + j + 1] << (8 - sh);
    dst[j] = (uint8_t)v;
  }
  if (n & 7) dst[nb - 1] &= (uint8_t)((1u << (n & 7)) - 1);
  out->len += nb;
  out->data[out->len] = 0;
}

static size_t col_size(const ck_col_t *col, size_t from, size_t n, bool validity) {
  size_t s = COL_HDR_SIZE + (validity ? vbytes(n) : 0);
  if (col->type.id == CK_T_STRING) {
    const int32_t *off = col->values;
    s += (n + 1) * 4 + (size_t)(off[from + n] - off[from]);
  } else {
    s += n * ck_type_width(col->type);
  }
  return s;
}

size_t ck_batch_wire_size(const ck_batch_t *batch, size_t from, size_t n) {
  ck_assert(from + n <= batch->nrows);
  size_t s = HDR_SIZE + CRC_SIZE + (batch->kinds ? n : 0) + (batch->wms ? n * 8 : 0);
  for (int c = 0; c < batch->ncols; c++)
    s += col_size(&batch->cols[c], from, n, batch->cols[c].validity != NULL);
  return s;
}

void ck_batch_wire_encode(const ck_batch_t *batch, size_t from, size_t n, ck_buf_t *out) {
  ck_assert(from + n <= batch->nrows);
  ck_assert(n <= UINT32_MAX && batch->ncols >= 0);
  size_t start = out->len;
  ck_buf_reserve(out, ck_batch_wire_size(batch, from, n));
  bool kinds = range_has_kind(batch, from, n);
  ck_buf_put_le32(out, CK_BATCH_WIRE_MAGIC);
  ck_buf_put_u8(out, CK_BATCH_WIRE_VERSION);
  ck_buf_put_u8(out, (uint8_t)((kinds ? FLAG_KINDS : 0) | (batch->wms ? FLAG_WMS : 0)));
  ck_buf_put_le16(out, 0);
  ck_buf_put_le32(out, (uint32_t)batch->ncols);
  ck_buf_put_le32(out, (uint32_t)n);
  for (int c = 0; c < batch->ncols; c++) {
    const ck_col_t *col = &batch->cols[c];
    ck_assert(col->len >= from + n);
    bool validity = range_has_null(col, from, n);
    bool decimal = col->type.id == CK_T_DECIMAL;
    ck_buf_put_u8(out, (uint8_t)col->type.id);
    ck_buf_put_u8(out, decimal ? col->type.precision : 0);
    ck_buf_put_u8(out, decimal ? col->type.scale : 0);
    ck_buf_put_u8(out, validity ? COL_FLAG_VALIDITY : 0);
    if (validity) put_validity(out, col, from, n);
    if (col->type.id == CK_T_STRING) {
      const int32_t *off = col->values;
      int32_t base = off[from];
      for (size_t i = 0; i <= n; i++) ck_buf_put_le32(out, (uint32_t)(off[from + i] - base));
      ck_buf_append(out, col->data ? col->data + base : "", (size_t)(off[from + n] - base));
    } else {
      size_t w = ck_type_width(col->type);
      put_le_array(out, (const char *)col->values + from * w, n, w);
    }
  }
  if (kinds) ck_buf_append(out, batch->kinds + from, n);
  if (batch->wms) put_le_array(out, batch->wms + from, n, sizeof *batch->wms);
  ck_buf_put_le32(out, ck_crc32c(0, out->data + start, out->len - start));
}

size_t ck_batch_wire_rows_fitting(const ck_batch_t *batch, size_t from, size_t max_bytes) {
  if (from >= batch->nrows) return 0;
  size_t left = batch->nrows - from;
  if (ck_batch_wire_size(batch, from, left) <= max_bytes) return left;
  /* size(k) grows with k: the largest k in [1, left) that fits, by bisection. */
  size_t lo = 1, hi = left - 1;
  if (ck_batch_wire_size(batch, from, 1) > max_bytes) return 1;
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    if (ck_batch_wire_size(batch, from, mid) <= max_bytes) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/* ------------------------------------------------------------------ decoding ---- */

typedef struct cursor {
  const uint8_t *pos, *end;
  ck_error_t *err;
} cursor_t;

static int corrupt(ck_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int corrupt(ck_error_t *err, const char *fmt, ...) {
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ck_error_set(err, CK_EDECODE, "could not decode batch: %s", msg);
  ck_error_hint(err, "sender and receiver must run the same clink build; a corrupt or "
                     "truncated batch means the connection or the sender is broken");
  return CK_EDECODE;
}

/* Takes n bytes for `what`, or fails naming it. */
static const uint8_t *take(cursor_t *cur, uint64_t n, const char *what) {
  uint64_t left = (uint64_t)(cur->end - cur->pos);
  if (n > left) {
    corrupt(cur->err, "truncated in %s: needs %" PRIu64 " bytes, %" PRIu64 " left", what, n,
            left);
    return NULL;
  }
  const uint8_t *p = cur->pos;
  cur->pos += n;
  return p;
}

static int decode_column(cursor_t *cur, int c, size_t n, ck_col_t *col) {
  char what[64];
  snprintf(what, sizeof what, "the header of column %d", c + 1);
  const uint8_t *h = take(cur, COL_HDR_SIZE, what);
  if (!h) return CK_EDECODE;
  if (h[0] > CK_T_TIMESTAMP) return corrupt(cur->err, "%s has unknown type id %u", what, h[0]);
  ck_type_t type = {(ck_type_id_t)h[0], h[1], h[2]};
  uint8_t flags = h[3];
  if (type.id == CK_T_DECIMAL) {
    if (type.precision > CK_DECIMAL_MAX_PRECISION || type.scale > CK_DECIMAL_MAX_PRECISION)
      return corrupt(cur->err, "%s has DECIMAL(%u, %u), beyond precision %d", what,
                     type.precision, type.scale, CK_DECIMAL_MAX_PRECISION);
  } else if (type.precision || type.scale) {
    return corrupt(cur->err, "%s has precision %u and scale %u on a type without them", what,
                   type.precision, type.scale);
  }
  if (flags & ~COL_FLAG_VALIDITY)
    return corrupt(cur->err, "%s has unknown flags 0x%02x", what, flags);

  const uint8_t *validity = NULL;
  if (flags & COL_FLAG_VALIDITY) {
    snprintf(what, sizeof what, "the validity bitmap of column %d", c + 1);
    if (!(validity = take(cur, vbytes(n), what))) return CK_EDECODE;
  }
  const uint8_t *values = NULL, *data = NULL;
  size_t data_len = 0;
  if (type.id == CK_T_STRING) {
    snprintf(what, sizeof what, "the string offsets of column %d", c + 1);
    if (!(values = take(cur, ((uint64_t)n + 1) * 4, what))) return CK_EDECODE;
    uint32_t prev = ck_get_le32(values);
    if (prev != 0)
      return corrupt(cur->err, "%s start at %" PRIu32 ", not 0", what, prev);
    for (size_t i = 1; i <= n; i++) {
      uint32_t o = ck_get_le32(values + 4 * i);
      if (o < prev)
        return corrupt(cur->err, "%s go backwards at row %zu (to %" PRIu32 ")", what, i, o);
      prev = o;
    }
    if (prev > INT32_MAX)
      return corrupt(cur->err, "%s end at %" PRIu32 ", beyond the %d bytes a column holds",
                     what, prev, INT32_MAX);
    data_len = prev;
    snprintf(what, sizeof what, "the string bytes of column %d", c + 1);
    if (!(data = take(cur, data_len, what))) return CK_EDECODE;
  } else {
    snprintf(what, sizeof what, "the values of column %d", c + 1);
    if (!(values = take(cur, (uint64_t)n * ck_type_width(type), what))) return CK_EDECODE;
    if (type.id == CK_T_BOOL) {
      for (size_t i = 0; i < n; i++)
        if (values[i] > 1)
          return corrupt(cur->err, "%s hold %u at row %zu, not a boolean", what, values[i],
                         i + 1);
    }
  }

  /* Everything checked: materialise the column. */
  ck_col_init(col, type, n);
  if (type.id == CK_T_STRING) {
    int32_t *off = col->values;
    for (size_t i = 0; i <= n; i++) off[i] = (int32_t)ck_get_le32(values + 4 * i);
    if (data_len) {
      col->data = ck_malloc(data_len);
      memcpy(col->data, data, data_len);
    }
    col->data_len = col->data_cap = data_len;
  } else {
    get_le_array(col->values, values, n, ck_type_width(type));
  }
  if (validity) {
    size_t nb = vbytes(col->cap);
    col->validity = ck_malloc(nb);
    memset(col->validity, 0xff, nb);
    memcpy(col->validity, validity, vbytes(n));
    if (n & 7) col->validity[vbytes(n) - 1] |= (uint8_t)(0xffu << (n & 7));
  }
  col->len = n;
  return 0;
}

int ck_batch_wire_decode(const void *data, size_t len, ck_batch_t **out, ck_error_t *err) {
  *out = NULL;
  const uint8_t *p = data;
  if (len < HDR_SIZE + CRC_SIZE)
    return corrupt(err, "too short: %zu bytes, the smallest batch is %u", len,
                   HDR_SIZE + CRC_SIZE);
  uint32_t magic = ck_get_le32(p);
  if (magic != CK_BATCH_WIRE_MAGIC)
    return corrupt(err, "not an encoded batch: bad magic 0x%08" PRIx32 " (expected 0x%08x)",
                   magic, CK_BATCH_WIRE_MAGIC);
  if (p[4] != CK_BATCH_WIRE_VERSION)
    return corrupt(err, "unsupported encoding version %u (this build reads version %d)", p[4],
                   CK_BATCH_WIRE_VERSION);
  uint32_t want = ck_get_le32(p + len - CRC_SIZE), got = ck_crc32c(0, p, len - CRC_SIZE);
  if (want != got)
    return corrupt(err, "checksum mismatch: stored 0x%08" PRIx32 ", computed 0x%08" PRIx32,
                   want, got);
  uint8_t flags = p[5];
  if (flags & ~(FLAG_KINDS | FLAG_WMS))
    return corrupt(err, "unknown header flags 0x%02x", flags);
  if (p[6] || p[7])
    return corrupt(err, "non-zero reserved header field 0x%02x%02x", p[7], p[6]);
  uint32_t ncols = ck_get_le32(p + 8), nrows = ck_get_le32(p + 12);
  cursor_t cur = {p + HDR_SIZE, p + len - CRC_SIZE, err};
  /* Every column takes at least its header: bounds the allocation below by the input. */
  if ((uint64_t)ncols * COL_HDR_SIZE > (uint64_t)(cur.end - cur.pos) || ncols > INT32_MAX)
    return corrupt(err, "column count out of range: %" PRIu32 " columns cannot fit in %zu bytes",
                   ncols, (size_t)(cur.end - cur.pos));

  ck_batch_t *batch = ck_calloc(1, sizeof *batch);
  batch->ncols = (int)ncols;
  batch->cols = ck_calloc(ncols ? ncols : 1, sizeof *batch->cols);
  int rc = 0;
  for (uint32_t c = 0; c < ncols && rc == 0; c++)
    rc = decode_column(&cur, (int)c, nrows, &batch->cols[c]);
  if (rc) goto fail;
  if (flags & FLAG_KINDS) {
    const uint8_t *kinds = take(&cur, nrows, "the row kinds");
    if (!kinds) {
      rc = CK_EDECODE;
      goto fail;
    }
    for (uint32_t i = 0; i < nrows; i++) {
      if (kinds[i] > CK_ROW_DELETE) {
        rc = corrupt(err, "the row kinds hold %u at row %" PRIu32 ", not a row kind", kinds[i],
                     i + 1);
        goto fail;
      }
    }
    batch->kinds = ck_malloc(nrows ? nrows : 1);
    if (nrows) memcpy(batch->kinds, kinds, nrows);
  }
  if (flags & FLAG_WMS) {
    const uint8_t *wms = take(&cur, (size_t)nrows * 8, "the row watermarks");
    if (!wms) {
      rc = CK_EDECODE;
      goto fail;
    }
    batch->wms = ck_malloc(nrows ? (size_t)nrows * 8 : 1);
    get_le_array(batch->wms, wms, nrows, 8);
    for (uint32_t i = 1; i < nrows; i++) {
      if (batch->wms[i] < batch->wms[i - 1]) {
        rc = corrupt(err, "the row watermarks go back at row %" PRIu32 " (%" PRId64 " after %"
                     PRId64 ")", i + 1, batch->wms[i], batch->wms[i - 1]);
        goto fail;
      }
    }
  }
  if (cur.pos != cur.end) {
    rc = corrupt(err, "%zu trailing bytes after the last part", (size_t)(cur.end - cur.pos));
    goto fail;
  }
  batch->nrows = nrows;
  *out = batch;
  return 0;

fail:
  ck_batch_free(batch);
  return rc;
}
