/* DESIGN: see types.h. */
#include "runtime/types.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    case CK_T_TIMESTAMP: s = "TIMESTAMP(3)"; break;
    case CK_T_DECIMAL:
      snprintf(out, n, "DECIMAL(%d, %d)", t.precision, t.scale);
      return out;
  }
  snprintf(out, n, "%s", s);
  return out;
}

ck_i128 ck_pow10_i128(int n) {
  ck_i128 r = 1;
  for (int i = 0; i < n; i++) r *= 10;
  return r;
}

void ck_decimal_format(ck_i128 v, int scale, ck_buf_t *out) {
  char digits[64];
  int nd = 0;
  bool neg = v < 0;
  unsigned __int128 u = neg ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
  do {
    digits[nd++] = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u);
  while (nd <= scale) digits[nd++] = '0';
  if (neg) ck_buf_putc(out, '-');
  for (int i = nd - 1; i >= 0; i--) {
    ck_buf_putc(out, digits[i]);
    if (i == scale && scale > 0) ck_buf_putc(out, '.');
  }
}

bool ck_decimal_parse(const char *s, size_t n, int precision, int scale, ck_i128 *out) {
  size_t i = 0;
  while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
  while (n > i && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
  bool neg = false;
  if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
  ck_i128 v = 0;
  int frac = 0, digits = 0, intdigits = 0;
  bool seen_dot = false, any = false, round_up = false, dropped = false;
  for (; i < n; i++) {
    char c = s[i];
    if (c == '.' && !seen_dot) {
      seen_dot = true;
      continue;
    }
    if (c < '0' || c > '9') return false;
    any = true;
    if (seen_dot && frac >= scale) {
      if (!dropped) round_up = c >= '5';
      dropped = true;
      continue;
    }
    if (seen_dot) frac++;
    else if (v != 0 || c != '0') intdigits++;
    v = v * 10 + (c - '0');
    if (v != 0) digits++;
    if (intdigits > precision - scale) return false;
  }
  if (!any) return false;
  (void)digits;
  while (frac < scale) v *= 10, frac++;
  if (round_up) v += 1;
  if (v >= ck_pow10_i128(precision)) return false;
  *out = neg ? -v : v;
  return true;
}

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
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, d);
    if (strtod(tmp, NULL) == d) break;
  }
  ck_buf_puts(out, tmp);
}
