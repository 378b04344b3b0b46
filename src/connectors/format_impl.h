/*
 * DESIGN: what the format implementations (format_json.c, format_csv.c) share with the
 * dispatch in format.c — the decoder and encoder base structs and their vtables. Private to
 * src/connectors/; connectors use format.h.
 */
#ifndef CK_CONNECTORS_FORMAT_IMPL_H
#define CK_CONNECTORS_FORMAT_IMPL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "connectors/format.h"

typedef struct ck_decoder_ops {
  int (*decode)(ck_decoder_t *dec, const char *rec, size_t len, ck_batch_t *batch,
                ck_error_t *err);
  int (*header)(ck_decoder_t *dec, const char *rec, size_t len, ck_error_t *err);
  void (*free)(ck_decoder_t *dec);
} ck_decoder_ops_t;

struct ck_decoder {
  const ck_decoder_ops_t *ops;
  const ck_schema_t *schema;
  bool multiline;    /* records may hold line breaks inside quotes */
  bool wants_header; /* the first record of a file is a header */
  bool checks_utf8;  /* decode() checks UTF-8 itself, failing with ck_format_utf8_error at the
                      * first bad byte as ck_format_check_record would */
};

/* The error ck_format_check_record gives for a bad byte at offset `at` of rec. */
int ck_format_utf8_error(const char *rec, size_t at, ck_error_t *err);

typedef struct ck_encoder_ops {
  void (*row)(ck_encoder_t *enc, const ck_batch_t *batch, size_t i, ck_buf_t *out);
  void (*header)(ck_encoder_t *enc, ck_buf_t *out);
  void (*free)(ck_encoder_t *enc);
} ck_encoder_ops_t;

struct ck_encoder {
  const ck_encoder_ops_t *ops;
  const ck_schema_t *schema;
};

ck_decoder_t *ck_format_json_decoder_new(const ck_schema_t *schema);
ck_decoder_t *ck_format_csv_decoder_new(const ck_schema_t *schema, bool header);
ck_encoder_t *ck_format_json_encoder_new(const ck_schema_t *schema);
ck_encoder_t *ck_format_csv_encoder_new(const ck_schema_t *schema);

/* Rolls every column of batch back to `row` rows (a record that failed half way). */
void ck_format_rollback(ck_batch_t *batch, size_t row);
/* Row count of batch as the columns see it (the row a new record will occupy). */
static inline size_t ck_format_row0(const ck_batch_t *batch) {
  return batch->ncols ? batch->cols[0].len : batch->nrows;
}
/* "expected an integer", "expected a number", … for a column type. */
const char *ck_format_expected(ck_type_t type);
/* A token for an error message: at most 40 bytes, elided with "..." beyond. */
void ck_format_token(const char *s, size_t n, char *out, size_t out_len);

/* ---- the one number grammar of every format: JSON's,
 *      -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
 * No '+', no leading zeros, no hex, no NaN or Infinity; a value past the column type's range
 * (1e999 for DOUBLE) is an error, never Infinity. ---- */

/* A scanned number: its text and what it looks like. */
typedef struct ck_num {
  const char *s;
  size_t n;
  bool neg, frac, exp;
  uint64_t mant;  /* significant digits, up to 19 of them */
  bool truncated; /* more significant digits than mant holds */
  int exp10;      /* value = mant * 10^exp10 (when !truncated) */
  uint64_t ipart; /* integer part, valid when !ibig */
  bool ibig;      /* integer part above UINT64_MAX */
} ck_num_t;

static inline bool ck_format_is_digit(char c) { return c >= '0' && c <= '9'; }

/* The number's text, NUL-terminated, in scratch (for strtod). */
const char *ck_format_num_text(const ck_num_t *num, ck_buf_t *scratch);

/* Scans the longest number of the grammar at p (before end). 0, or -1 with *why ("expected a
 * digit", …) and *at, the first byte that does not fit. What follows the number is the
 * caller's to judge. Inline: it is on the JSON decoder's hot path. */
static inline int ck_format_scan_number(const char *p, const char *end, ck_num_t *num,
                                        const char **why, const char **at) {
  memset(num, 0, sizeof *num);
  num->s = p;
  if (p < end && *p == '-') num->neg = true, p++;
  if (p >= end || !ck_format_is_digit(*p)) {
    *at = p;
    *why = "expected a digit";
    return -1;
  }
  if (*p == '0') {
    p++;
  } else {
    /* up to 19 digits cannot overflow 64 bits; a 20th is checked; more is big */
    const char *ds = p;
    uint64_t v = 0;
    while (p < end && ck_format_is_digit(*p) && p - ds < 19) v = v * 10 + (uint64_t)(*p++ - '0');
    num->mant = v;
    if (p < end && ck_format_is_digit(*p)) {
      unsigned d = (unsigned)(*p - '0');
      if (v > 1844674407370955161ULL || (v == 1844674407370955161ULL && d > 5)) num->ibig = true;
      else v = v * 10 + d;
      while (p < end && ck_format_is_digit(*p)) p++, num->exp10++;
      num->truncated = true; /* mant holds the first 19 digits, exp10 counts the rest */
      if (p - ds > 20) num->ibig = true;
    }
    num->ipart = v;
  }
  if (p < end && *p == '.') {
    num->frac = true;
    p++;
    if (p >= end || !ck_format_is_digit(*p)) {
      *at = p;
      *why = "expected a digit after the decimal point";
      return -1;
    }
    while (p < end && ck_format_is_digit(*p)) {
      if (num->mant < 1000000000000000000ULL && !num->truncated) {
        num->mant = num->mant * 10 + (uint64_t)(*p - '0');
        num->exp10--;
      } else {
        num->truncated = true;
      }
      p++;
    }
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    num->exp = true;
    p++;
    bool eneg = false;
    if (p < end && (*p == '+' || *p == '-')) eneg = *p++ == '-';
    if (p >= end || !ck_format_is_digit(*p)) {
      *at = p;
      *why = "expected a digit in the exponent";
      return -1;
    }
    int e = 0;
    while (p < end && ck_format_is_digit(*p)) {
      if (e < 100000) e = e * 10 + (*p - '0');
      p++;
    }
    num->exp10 += eneg ? -e : e;
  }
  num->n = (size_t)(p - num->s);
  return 0;
}

static const double ck_format_pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The number as a double / float, correctly rounded; false when it is past the type's range. */
static inline bool ck_format_num_double(const ck_num_t *num, ck_buf_t *scratch, double *out) {
  double d;
  if (!num->truncated && num->mant <= (1ULL << 53) && num->exp10 >= -22 && num->exp10 <= 22) {
    d = (double)num->mant; /* exact: both operands are, and IEEE rounds the result once */
    d = num->exp10 < 0 ? d / ck_format_pow10_exact[-num->exp10] : d * ck_format_pow10_exact[num->exp10];
    if (num->neg) d = -d;
  } else {
    d = strtod(ck_format_num_text(num, scratch), NULL);
  }
  *out = d;
  return isfinite(d);
}

static inline bool ck_format_num_float(const ck_num_t *num, ck_buf_t *scratch, float *out) {
  float f;
  if (!num->truncated && num->mant <= (1ULL << 24) && num->exp10 >= -10 && num->exp10 <= 10) {
    f = (float)num->mant;
    f = num->exp10 < 0 ? f / (float)ck_format_pow10_exact[-num->exp10] : f * (float)ck_format_pow10_exact[num->exp10];
    if (num->neg) f = -f;
  } else {
    f = strtof(ck_format_num_text(num, scratch), NULL);
  }
  *out = f;
  return isfinite(f);
}
/* The number as an integer of type id (INT32, INT64 or TIMESTAMP): 0, -1 when it has a fraction
 * or an exponent, -2 when it is out of range. */
int ck_format_num_int(const ck_num_t *num, ck_type_id_t id, int64_t *out);
/* Plain decimal text for a number with an exponent ("1.5e3" -> "1500", in scratch), for
 * ck_decimal_parse. False when the value has more than 60 integer digits (it fits no DECIMAL). */
bool ck_format_num_plain(const ck_num_t *num, ck_buf_t *scratch, const char **s, size_t *n);

#endif
