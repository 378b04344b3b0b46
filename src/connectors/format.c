/*
 * DESIGN: format dispatch and the helpers every format shares: UTF-8 validation (with a
 * 32-then-8-bytes-at-a-time ASCII fast path, since almost every record is ASCII), column rollback for
 * all-or-nothing records, integer and float text, and the one number grammar both decoders
 * read numbers with (JSON's). See format.h for the formats themselves.
 * Threads: none of its own; everything here is called on the owning subtask's thread.
 */
#include "connectors/format.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "base/alloc.h"
#include "connectors/format_impl.h"

int ck_format_parse(const char *name, const char *who, ck_format_kind_t *out, ck_error_t *err) {
  if (!name || strcmp(name, "json") == 0) {
    *out = CK_FORMAT_JSON;
    return 0;
  }
  if (strcmp(name, "csv") == 0) {
    *out = CK_FORMAT_CSV;
    return 0;
  }
  ck_error_set(err, CK_EOPTION, "%s does not support format '%s'", who, name);
  ck_error_hint(err, "use format 'json' or 'csv'");
  return CK_EOPTION;
}

const char *ck_format_name(ck_format_kind_t kind) {
  return kind == CK_FORMAT_CSV ? "csv" : "json";
}

/* ---- decoders ---- */

ck_decoder_t *ck_decoder_new(ck_format_kind_t kind, const ck_schema_t *schema,
                             const ck_options_t *opts) {
  static const ck_opt_def_t defs[] = {CK_FORMAT_OPTION_DEFS, {NULL, 0, NULL, NULL, false, NULL}};
  if (kind == CK_FORMAT_CSV)
    return ck_format_csv_decoder_new(schema, ck_opt_bool(opts, defs, "csv.header"));
  return ck_format_json_decoder_new(schema);
}

void ck_decoder_free(ck_decoder_t *dec) {
  if (dec) dec->ops->free(dec);
}

bool ck_decoder_multiline(const ck_decoder_t *dec) { return dec->multiline; }
bool ck_decoder_wants_header(const ck_decoder_t *dec) { return dec->wants_header; }

int ck_decoder_header(ck_decoder_t *dec, const char *rec, size_t len, ck_error_t *err) {
  if (!dec->ops->header) return 0;
  return dec->ops->header(dec, rec, len, err);
}

static int check_length(size_t len, ck_error_t *err) {
  if (len > CK_FORMAT_MAX_RECORD)
    return ck_error_set(err, CK_EDECODE, "record of %zu bytes exceeds the limit of %zu bytes",
                        len, CK_FORMAT_MAX_RECORD);
  return 0;
}

int ck_format_utf8_error(const char *rec, size_t at, ck_error_t *err) {
  return ck_error_set(err, CK_EDECODE, "invalid UTF-8 at byte offset %zu (byte 0x%02x)", at,
                      (unsigned)(unsigned char)rec[at]);
}

int ck_format_check_record(const char *rec, size_t len, ck_error_t *err) {
  int rc = check_length(len, err);
  if (rc) return rc;
  size_t bad = ck_format_utf8_invalid_at(rec, len);
  return bad < len ? ck_format_utf8_error(rec, bad, err) : 0;
}

int ck_decoder_decode(ck_decoder_t *dec, const char *rec, size_t len, ck_batch_t *batch,
                      ck_error_t *err) {
  int rc = dec->checks_utf8 ? check_length(len, err) : ck_format_check_record(rec, len, err);
  return rc ? rc : dec->ops->decode(dec, rec, len, batch, err);
}

/* ---- encoders ---- */

ck_encoder_t *ck_encoder_new(ck_format_kind_t kind, const ck_schema_t *schema) {
  if (kind == CK_FORMAT_CSV) return ck_format_csv_encoder_new(schema);
  return ck_format_json_encoder_new(schema);
}

void ck_encoder_free(ck_encoder_t *enc) {
  if (enc) enc->ops->free(enc);
}

void ck_encoder_row(ck_encoder_t *enc, const ck_batch_t *batch, size_t i, ck_buf_t *out) {
  enc->ops->row(enc, batch, i, out);
}

void ck_encoder_batch(ck_encoder_t *enc, const ck_batch_t *batch, ck_buf_t *out) {
  for (size_t i = 0; i < batch->nrows; i++) {
    enc->ops->row(enc, batch, i, out);
    ck_buf_putc(out, '\n');
  }
}

void ck_encoder_header(ck_encoder_t *enc, ck_buf_t *out) {
  if (enc->ops->header) enc->ops->header(enc, out);
}

/* ---- shared helpers ---- */

size_t ck_format_utf8_invalid_at(const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < len) {
#ifdef __SSE2__
    if (i + 32 <= len) { /* ASCII text, 32 bytes at a time */
      __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
      __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + i + 16));
      if (!_mm_movemask_epi8(_mm_or_si128(a, b))) {
        i += 32;
        continue;
      }
    }
#endif
    if (i + 8 <= len) {
      uint64_t w;
      memcpy(&w, p + i, 8);
      if (!(w & 0x8080808080808080ULL)) {
        i += 8;
        continue;
      }
    }
    if (p[i] < 0x80) {
      i++;
      continue;
    }
    size_t k = ck_format_utf8_seq(p + i, len - i);
    if (!k) return i;
    i += k;
  }
  return len;
}

void ck_format_col_truncate(ck_col_t *col, size_t row) {
  if (col->len <= row) return;
  if (col->type.id == CK_T_STRING) col->data_len = (size_t)((int32_t *)col->values)[row];
  if (col->validity)
    for (size_t i = row; i < col->len; i++) col->validity[i >> 3] |= (uint8_t)(1u << (i & 7));
  col->len = row;
}

void ck_format_rollback(ck_batch_t *batch, size_t row) {
  for (int c = 0; c < batch->ncols; c++) ck_format_col_truncate(&batch->cols[c], row);
}

void ck_format_put_i64(ck_buf_t *out, int64_t v) {
  char tmp[24];
  int n = 0;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    tmp[n++] = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u);
  if (v < 0) tmp[n++] = '-';
  ck_buf_reserve(out, (size_t)n);
  for (int i = n - 1; i >= 0; i--) out->data[out->len++] = tmp[i];
  out->data[out->len] = 0;
}

void ck_format_put_float(ck_buf_t *out, float f) {
  if (isnan(f)) {
    ck_buf_puts(out, "NaN");
    return;
  }
  if (isinf(f)) {
    ck_buf_puts(out, f > 0 ? "Infinity" : "-Infinity");
    return;
  }
  if (f == 0) {
    ck_buf_puts(out, signbit(f) ? "-0" : "0");
    return;
  }
  char tmp[40];
  for (int prec = 1; prec <= 9; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, (double)f);
    if (strtof(tmp, NULL) == f) break;
  }
  ck_buf_puts(out, tmp);
}

const char *ck_format_expected(ck_type_t type) {
  switch (type.id) {
    case CK_T_BOOL: return "expected a boolean";
    case CK_T_INT32:
    case CK_T_INT64: return "expected an integer";
    case CK_T_FLOAT32:
    case CK_T_FLOAT64:
    case CK_T_DECIMAL: return "expected a number";
    case CK_T_TIMESTAMP:
      if (ck_type_is_date(type)) return "expected a date as text, 'yyyy-MM-dd'";
      if (ck_type_is_time(type)) return "expected a time of day as text, 'HH:mm:ss[.SSS]'";
      return "expected a timestamp (text or integer epoch milliseconds)";
    case CK_T_STRING: return "expected a string";
    case CK_T_NULL: return "expected null";
  }
  return "expected a value";
}

void ck_format_token(const char *s, size_t n, char *out, size_t out_len) {
  if (n > 40) snprintf(out, out_len, "%.37s...", s);
  else snprintf(out, out_len, "%.*s", (int)n, s);
}

/* ---- numbers: one grammar for every format (format_impl.h) ---- */

const char *ck_format_num_text(const ck_num_t *num, ck_buf_t *scratch) {
  ck_buf_reset(scratch);
  ck_buf_append(scratch, num->s, num->n);
  return scratch->data;
}

int ck_format_num_int(const ck_num_t *num, ck_type_id_t id, int64_t *out) {
  if (num->frac || num->exp) return -1;
  uint64_t lim = id == CK_T_INT32 ? (num->neg ? 2147483648ULL : 2147483647ULL)
                                  : (num->neg ? 9223372036854775808ULL : 9223372036854775807ULL);
  if (num->ibig || num->ipart > lim) return -2;
  *out = num->neg ? (int64_t)(0 - num->ipart) : (int64_t)num->ipart;
  return 0;
}

bool ck_format_num_plain(const ck_num_t *num, ck_buf_t *scratch, const char **s, size_t *n) {
  if (!num->exp) {
    *s = num->s;
    *n = num->n;
    return true;
  }
  const char *p = num->s, *e = num->s + num->n;
  char digits[1100];
  size_t nd = 0;
  int point = 0; /* digits before the decimal point */
  bool seen_dot = false;
  if (*p == '-') p++;
  for (; p < e && *p != 'e' && *p != 'E'; p++) {
    if (*p == '.') {
      seen_dot = true;
      continue;
    }
    if (nd == 0 && *p == '0') { /* leading zero: shifts the point instead */
      if (seen_dot) point--;
      continue;
    }
    if (nd < sizeof digits) digits[nd++] = *p, point += !seen_dot;
    else if (!seen_dot) point++;
  }
  long ex = strtol(ck_format_num_text(num, scratch) + (p - num->s) + 1, NULL, 10);
  ck_buf_t *b = scratch;
  ck_buf_reset(b);
  if (num->neg) ck_buf_putc(b, '-');
  if (nd == 0) {
    ck_buf_putc(b, '0');
  } else {
    long pp = (long)point + ex;
    if (pp > 60) return false;
    if (pp >= (long)nd) {
      ck_buf_append(b, digits, nd);
      for (long i = (long)nd; i < pp; i++) ck_buf_putc(b, '0');
    } else if (pp > 0) {
      ck_buf_append(b, digits, (size_t)pp);
      ck_buf_putc(b, '.');
      ck_buf_append(b, digits + pp, nd - (size_t)pp);
    } else if (pp < -60) {
      ck_buf_putc(b, '0'); /* below every scale: rounds to zero */
    } else {
      ck_buf_append(b, "0.", 2);
      for (long i = 0; i < -pp; i++) ck_buf_putc(b, '0');
      ck_buf_append(b, digits, nd);
    }
  }
  *s = b->data;
  *n = b->len;
  return true;
}
