/* DESIGN: see decimal.h. */
#include "runtime/decimal.h"

#include <stdint.h>

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

/* Grammar: [sign] digits [. digits] [e|E [sign] digits], surrounded by optional blanks, with at
 * least one mantissa digit. The value is M × 10^shift at the target scale; digits beyond the
 * scale are dropped, rounded by the one rule: the first dropped digit d, as the remainder d of
 * a division by 10, decides. */
bool ck_decimal_parse(const char *s, size_t n, int precision, int scale, ck_i128 *out) {
  size_t i = 0;
  while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
  while (n > i && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
  bool neg = false;
  if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
  size_t first = SIZE_MAX; /* index in s of the first significant (non-zero) mantissa digit */
  long sig = 0;            /* significant digits from `first` on */
  long frac = 0;           /* mantissa digits after the point */
  bool seen_dot = false, any = false;
  size_t mant_end = i;
  for (; i < n; i++) {
    char c = s[i];
    if (c == '.' && !seen_dot) {
      seen_dot = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    any = true;
    if (seen_dot) frac++;
    if (first == SIZE_MAX && c != '0') first = i;
    if (first != SIZE_MAX) sig++;
  }
  mant_end = i;
  if (!any) return false;
  long exp = 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    bool eneg = false;
    if (i < n && (s[i] == '-' || s[i] == '+')) eneg = s[i++] == '-';
    if (i >= n) return false;
    for (; i < n; i++) {
      if (s[i] < '0' || s[i] > '9') return false;
      if (exp < 100000) exp = exp * 10 + (s[i] - '0');
    }
    if (eneg) exp = -exp;
  }
  if (i != n) return false;
  if (first == SIZE_MAX) { /* zero */
    *out = 0;
    return true;
  }
  long shift = exp - frac + scale; /* unscaled = M × 10^shift */
  long keep = sig + (shift < 0 ? shift : 0);
  if (keep + (shift > 0 ? shift : 0) > precision) return false;
  ck_i128 v = 0;
  long taken = 0;
  bool round_up = false;
  for (size_t j = first; j < mant_end && keep >= 0; j++) {
    if (s[j] == '.') continue;
    if (taken < keep) {
      v = v * 10 + (s[j] - '0');
    } else {
      round_up = ck_dec_round_away((ck_u128)(s[j] - '0'), 10); /* the first dropped digit */
      break;
    }
    taken++;
  }
  if (round_up) v += 1;
  for (long k = 0; k < shift; k++) v *= 10;
  if (v >= ck_pow10_i128(precision)) return false;
  *out = neg ? -v : v;
  return true;
}
