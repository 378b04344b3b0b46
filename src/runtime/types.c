/* DESIGN: see types.h. */
#include "runtime/types.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unicode/stringoptions.h>
#include <unicode/ustring.h>

#include "base/alloc.h"

size_t ck_type_width(ck_type_t t) {
  switch (t.id) {
    case CK_T_NULL: return 1;
    case CK_T_BOOL: return 1;
    case CK_T_INT32: return 4;
    case CK_T_INT64: return 8;
    case CK_T_FLOAT32: return 4;
    case CK_T_FLOAT64: return 8;
    case CK_T_DECIMAL: return 16;
    case CK_T_STRING: return 0;
    case CK_T_TIMESTAMP: return 8;
  }
  return 0;
}

bool ck_type_eq(ck_type_t a, ck_type_t b) {
  if (a.id != b.id) return false;
  return a.id != CK_T_DECIMAL || (a.precision == b.precision && a.scale == b.scale);
}

bool ck_type_is_numeric(ck_type_t t) { return t.id >= CK_T_INT32 && t.id <= CK_T_DECIMAL; }
bool ck_type_is_integer(ck_type_t t) { return t.id == CK_T_INT32 || t.id == CK_T_INT64; }

const char *ck_type_name(ck_type_t t, char *out, size_t n) {
  const char *s = "NULL";
  switch (t.id) {
    case CK_T_NULL: s = "NULL"; break;
    case CK_T_BOOL: s = "BOOLEAN"; break;
    case CK_T_INT32: s = "INT"; break;
    case CK_T_INT64: s = "BIGINT"; break;
    case CK_T_FLOAT32: s = "FLOAT"; break;
    case CK_T_FLOAT64: s = "DOUBLE"; break;
    case CK_T_STRING: s = "VARCHAR"; break;
    case CK_T_TIMESTAMP:
      if (ck_type_is_date(t)) {
        snprintf(out, n, "DATE");
        return out;
      }
      if (ck_type_is_time(t)) {
        snprintf(out, n, "TIME(%d)", t.precision ? t.precision - 1 : 0);
        return out;
      }
      snprintf(out, n, "%s(%d)", ck_type_ts_ltz(t) ? "TIMESTAMP_LTZ" : "TIMESTAMP",
               ck_type_ts_precision(t));
      return out;
    case CK_T_DECIMAL:
      snprintf(out, n, "DECIMAL(%d, %d)", t.precision, t.scale);
      return out;
  }
  snprintf(out, n, "%s", s);
  return out;
}

/* Shortest round-trip digits, laid out as JavaScript's Number#toString does: plain decimal
 * notation for 1e-7 < |d| < 1e21, exponent notation ("1e+21", "1.5e-7") outside. */
void ck_double_format(double d, ck_buf_t *out) {
  if (isnan(d)) {
    ck_buf_puts(out, "NaN");
    return;
  }
  if (isinf(d)) {
    ck_buf_puts(out, d > 0 ? "Infinity" : "-Infinity");
    return;
  }
  if (d == 0) {
    ck_buf_puts(out, signbit(d) ? "-0" : "0");
    return;
  }
  char tmp[40];
  for (int prec = 0; prec <= 16; prec++) {
    snprintf(tmp, sizeof tmp, "%.*e", prec, d);
    if (strtod(tmp, NULL) == d) break;
  }
  /* tmp is "[-]D[.DDD]e±XX": collect the digits and the exponent */
  const char *p = tmp;
  if (*p == '-') {
    ck_buf_putc(out, '-');
    p++;
  }
  char digits[24];
  int k = 0;
  for (; *p && *p != 'e'; p++)
    if (*p != '.') digits[k++] = *p;
  while (k > 1 && digits[k - 1] == '0') k--;
  int e10 = atoi(p + 1); /* d = D.DDD × 10^e10 */
  int nexp = e10 + 1;    /* d = 0.DDDD × 10^nexp */
  if (k <= nexp && nexp <= 21) {
    ck_buf_append(out, digits, (size_t)k);
    for (int z = k; z < nexp; z++) ck_buf_putc(out, '0');
  } else if (0 < nexp && nexp <= 21) {
    ck_buf_append(out, digits, (size_t)nexp);
    ck_buf_putc(out, '.');
    ck_buf_append(out, digits + nexp, (size_t)(k - nexp));
  } else if (-6 < nexp && nexp <= 0) {
    ck_buf_puts(out, "0.");
    for (int z = 0; z < -nexp; z++) ck_buf_putc(out, '0');
    ck_buf_append(out, digits, (size_t)k);
  } else {
    ck_buf_putc(out, digits[0]);
    if (k > 1) {
      ck_buf_putc(out, '.');
      ck_buf_append(out, digits + 1, (size_t)(k - 1));
    }
    ck_buf_printf(out, "e%c%d", e10 < 0 ? '-' : '+', e10 < 0 ? -e10 : e10);
  }
}

/* Days since 1970-01-01 of a proleptic Gregorian date, and back (H. Hinnant's algorithms). */
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

void ck_timestamp_format(int64_t ms, ck_buf_t *out) {
  int64_t days = ms / 86400000, rem = ms % 86400000;
  if (rem < 0) rem += 86400000, days--;
  int64_t y;
  int m, d;
  civil_from_days(days, &y, &m, &d);
  ck_buf_printf(out, "%04lld-%02d-%02d %02d:%02d:%02d.%03d", (long long)y, m, d,
                (int)(rem / 3600000), (int)(rem / 60000 % 60), (int)(rem / 1000 % 60),
                (int)(rem % 1000));
}

static bool take_digits(const char *s, size_t n, size_t *i, int min, int max, int64_t *v) {
  int k = 0;
  *v = 0;
  while (*i < n && k < max && s[*i] >= '0' && s[*i] <= '9') *v = *v * 10 + (s[(*i)++] - '0'), k++;
  return k >= min;
}

static bool timestamp_parse(const char *s, size_t n, bool zones, int64_t *out) {
  size_t i = 0;
  while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
  while (n > i && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
  int64_t y, mo, d, h = 0, mi = 0, sec = 0, ms = 0, offset_ms = 0;
  if (!take_digits(s, n, &i, 4, 6, &y) || i >= n || s[i++] != '-') return false;
  if (!take_digits(s, n, &i, 1, 2, &mo) || i >= n || s[i++] != '-') return false;
  if (!take_digits(s, n, &i, 1, 2, &d)) return false;
  if (i < n && (s[i] == ' ' || s[i] == 'T')) {
    i++;
    if (!take_digits(s, n, &i, 1, 2, &h) || i >= n || s[i++] != ':') return false;
    if (!take_digits(s, n, &i, 1, 2, &mi)) return false;
    if (i < n && s[i] == ':') {
      i++;
      if (!take_digits(s, n, &i, 1, 2, &sec)) return false;
      if (i < n && s[i] == '.') {
        i++;
        int64_t frac;
        size_t at = i;
        if (!take_digits(s, n, &i, 1, 9, &frac)) return false;
        for (size_t k = i - at; k < 3; k++) frac *= 10;
        for (size_t k = i - at; k > 3; k--) frac /= 10; /* TIMESTAMP(3): truncate */
        ms = frac;
      }
    }
    if (i < n && s[i] == 'Z') i++;
    else if (zones && i < n && (s[i] == '+' || s[i] == '-')) {
      int sign = s[i++] == '-' ? -1 : 1;
      int64_t oh, om = 0;
      size_t at = i;
      if (!take_digits(s, n, &i, 2, 2, &oh)) return false;
      if (i < n && s[i] == ':') i++;
      if (i < n && !take_digits(s, n, &i, 2, 2, &om)) return false;
      if (oh > 18 || om > 59 || i - at < 2) return false;
      offset_ms = sign * (oh * 60 + om) * 60000;
    }
  }
  if (i != n) return false;
  static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || sec > 59)
    return false;
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo == 2 && d == 29 && !leap) return false;
  *out = ((days_from_civil(y, (int)mo, (int)d) * 24 + h) * 60 + mi) * 60000 + sec * 1000 + ms -
         offset_ms;
  return true;
}

bool ck_timestamp_parse(const char *s, size_t n, int64_t *out) {
  return timestamp_parse(s, n, false, out);
}

bool ck_timestamp_parse_iso(const char *s, size_t n, int64_t *out) {
  return timestamp_parse(s, n, true, out);
}

int64_t ck_days_from_civil(int64_t y, int m, int d) { return days_from_civil(y, m, d); }

void ck_date_format(int64_t ms, ck_buf_t *out) {
  int64_t days = ms / CK_MS_PER_DAY;
  if (ms % CK_MS_PER_DAY < 0) days--;
  int64_t y;
  int m, d;
  civil_from_days(days, &y, &m, &d);
  ck_buf_printf(out, "%04lld-%02d-%02d", (long long)y, m, d);
}

bool ck_date_parse(const char *s, size_t n, int64_t *out) {
  size_t i = 0;
  while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
  while (n > i && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
  for (size_t k = i; k < n; k++)
    if (s[k] == ' ' || s[k] == 'T') return false; /* a date and nothing else */
  return timestamp_parse(s + i, n - i, false, out);
}

void ck_time_format(int64_t ms, int precision, ck_buf_t *out) {
  ms %= CK_MS_PER_DAY;
  if (ms < 0) ms += CK_MS_PER_DAY;
  ck_buf_printf(out, "%02d:%02d:%02d", (int)(ms / 3600000), (int)(ms / 60000 % 60),
                (int)(ms / 1000 % 60));
  if (precision > 0) {
    char frac[4];
    snprintf(frac, sizeof frac, "%03d", (int)(ms % 1000));
    ck_buf_putc(out, '.');
    ck_buf_append(out, frac, (size_t)(precision < 3 ? precision : 3));
  }
}

bool ck_time_parse(const char *s, size_t n, int64_t *out) {
  char buf[48];
  size_t i = 0;
  while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
  if (n - i > 32) return false;
  for (size_t k = i; k < n; k++)
    if (s[k] == '-' || s[k] == '+' || s[k] == 'Z' || s[k] == 'T') return false;
  int len = snprintf(buf, sizeof buf, "1970-01-01 %.*s", (int)(n - i), s + i);
  return timestamp_parse(buf, (size_t)len, false, out);
}

bool ck_datetime_parse_text(ck_type_t type, const char *s, size_t n, int64_t *ms) {
  if (ck_type_is_date(type)) return ck_date_parse(s, n, ms);
  if (ck_type_is_time(type)) {
    if (!ck_time_parse(s, n, ms)) return false;
    *ms = ck_time_truncate(type, *ms);
    return true;
  }
  return ck_timestamp_parse_iso(s, n, ms);
}

void ck_timestamp_format_typed(ck_type_t type, int64_t epoch_ms, ck_buf_t *out) {
  if (ck_type_is_date(type)) {
    ck_date_format(epoch_ms, out);
    return;
  }
  if (ck_type_is_time(type)) {
    ck_time_format(epoch_ms, type.precision ? type.precision - 1 : 0, out);
    return;
  }
  ck_timestamp_format(epoch_ms, out);
  if (ck_type_ts_ltz(type)) ck_buf_putc(out, 'Z');
}

/* Into UTF-16 for ICU: false on invalid UTF-8. *out is buf or a ck_malloc'd block. */
static bool to_utf16(const char *s, size_t n, UChar *buf, int32_t cap, UChar **out, int32_t *len) {
  UErrorCode st = U_ZERO_ERROR;
  *out = buf;
  if (n > INT32_MAX / 2) return false;
  u_strFromUTF8(buf, cap, len, s, (int32_t)n, &st);
  if (st == U_BUFFER_OVERFLOW_ERROR) {
    *out = ck_malloc(sizeof(UChar) * (size_t)(*len + 1));
    st = U_ZERO_ERROR;
    u_strFromUTF8(*out, *len + 1, len, s, (int32_t)n, &st);
  }
  if (U_FAILURE(st)) {
    if (*out != buf) ck_free(*out);
    *out = NULL;
    return false;
  }
  return true;
}

bool ck_utf8_ieq(const char *a, size_t na, const char *b, size_t nb) {
  bool ascii = true;
  for (size_t i = 0; i < na && ascii; i++) ascii = (unsigned char)a[i] < 0x80;
  for (size_t i = 0; i < nb && ascii; i++) ascii = (unsigned char)b[i] < 0x80;
  if (ascii) return ck_str_ieq((ck_str_t){a, na}, (ck_str_t){b, nb});
  UChar ba[128], bb[128], *ua, *ub;
  int32_t la, lb;
  bool eq;
  if (!to_utf16(a, na, ba, 128, &ua, &la)) return ck_str_ieq((ck_str_t){a, na}, (ck_str_t){b, nb});
  if (!to_utf16(b, nb, bb, 128, &ub, &lb)) {
    eq = ck_str_ieq((ck_str_t){a, na}, (ck_str_t){b, nb});
  } else {
    UErrorCode st = U_ZERO_ERROR;
    eq = u_strCaseCompare(ua, la, ub, lb, U_FOLD_CASE_DEFAULT, &st) == 0 && U_SUCCESS(st);
    if (ub != bb) ck_free(ub);
  }
  if (ua != ba) ck_free(ua);
  return eq;
}
