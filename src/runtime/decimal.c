/* DESIGN: see decimal.h. */
#include "runtime/decimal.h"

#include <stdint.h>

#include "base/alloc.h"

typedef ck_u128 u128;
typedef ck_i128 i128;
#define P10 ck_dec_p10
#define uabs ck_dec_abs

ck_i128 ck_pow10_i128(int n) { return (ck_i128)P10[n]; }

#define E19 ((u128)10000000000000000000ULL)
const ck_u128 ck_dec_p10[39] = {
    1ULL, 10ULL, 100ULL, 1000ULL,
    10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
    100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL,
    1000000000000ULL, 10000000000000ULL, 100000000000000ULL, 1000000000000000ULL,
    10000000000000000ULL, 100000000000000000ULL, 1000000000000000000ULL, 10000000000000000000ULL,
    E19 * 10ULL, E19 * 100ULL, E19 * 1000ULL, E19 * 10000ULL,
    E19 * 100000ULL, E19 * 1000000ULL, E19 * 10000000ULL, E19 * 100000000ULL,
    E19 * 1000000000ULL, E19 * 10000000000ULL, E19 * 100000000000ULL, E19 * 1000000000000ULL,
    E19 * 10000000000000ULL, E19 * 100000000000000ULL, E19 * 1000000000000000ULL,
    E19 * 10000000000000000ULL, E19 * 100000000000000000ULL, E19 * 1000000000000000000ULL,
    E19 * 10000000000000000000ULL,
};

/* ---- 256-bit magnitudes */

static bool u256_small(const ck_u256_t *a) { return !a->w[2] && !a->w[3]; }
static u128 u256_lo(const ck_u256_t *a) { return ((u128)a->w[1] << 64) | a->w[0]; }

static int u256_cmp(const ck_u256_t *a, const ck_u256_t *b) {
  for (int i = 3; i >= 0; i--)
    if (a->w[i] != b->w[i]) return a->w[i] < b->w[i] ? -1 : 1;
  return 0;
}

static ck_u256_t u256_add(ck_u256_t a, ck_u256_t b) {
  u128 carry = 0;
  for (int i = 0; i < 4; i++) {
    u128 s = (u128)a.w[i] + b.w[i] + carry;
    a.w[i] = (uint64_t)s;
    carry = s >> 64;
  }
  return a;
}

static ck_u256_t u256_sub(ck_u256_t a, ck_u256_t b) { /* a >= b */
  uint64_t borrow = 0;
  for (int i = 0; i < 4; i++) {
    uint64_t x = a.w[i], y = b.w[i];
    uint64_t d = x - y - borrow;
    borrow = (x < y) || (x == y && borrow) ? 1 : 0;
    a.w[i] = d;
  }
  return a;
}

static ck_u256_t u256_mul(u128 a, u128 b) {
  uint64_t a0 = (uint64_t)a, a1 = (uint64_t)(a >> 64), b0 = (uint64_t)b, b1 = (uint64_t)(b >> 64);
  u128 p00 = (u128)a0 * b0, p01 = (u128)a0 * b1, p10 = (u128)a1 * b0, p11 = (u128)a1 * b1;
  u128 mid = (p00 >> 64) + (uint64_t)p01 + (uint64_t)p10;
  u128 hi = (mid >> 64) + (p01 >> 64) + (p10 >> 64) + p11;
  return (ck_u256_t){{(uint64_t)p00, (uint64_t)mid, (uint64_t)hi, (uint64_t)(hi >> 64)}};
}

static bool u256_mul64(ck_u256_t *a, uint64_t m) {
  u128 carry = 0;
  for (int i = 0; i < 4; i++) {
    u128 p = (u128)a->w[i] * m + carry;
    a->w[i] = (uint64_t)p;
    carry = p >> 64;
  }
  return carry == 0;
}

static uint64_t u256_div64(ck_u256_t *a, uint64_t d) {
  u128 rem = 0;
  for (int i = 3; i >= 0; i--) {
    u128 cur = (rem << 64) | a->w[i];
    a->w[i] = (uint64_t)(cur / d);
    rem = cur % d;
  }
  return (uint64_t)rem;
}

/* a *= 10^k; false when it no longer fits 256 bits. */
bool ck_u256_mul_p10(ck_u256_t *a, int k) {
  while (k > 0) {
    int c = k > 19 ? 19 : k;
    if (!u256_mul64(a, (uint64_t)P10[c])) return false;
    k -= c;
  }
  return true;
}

/* a = a / 10^k rounded by the one rule (runtime/decimal.h: half away from zero; a is a
 * magnitude): the digits below the last dropped one cannot change it. */
void ck_u256_div_p10_round(ck_u256_t *a, int k) {
  if (k <= 0) return;
  if (k > 78) {
    *a = ck_u256_of(0);
    return;
  }
  for (int m = k - 1; m > 0;) {
    int c = m > 19 ? 19 : m;
    u256_div64(a, (uint64_t)P10[c]);
    m -= c;
  }
  if (ck_dec_round_away(u256_div64(a, 10), 10)) *a = u256_add(*a, ck_u256_of(1));
}

/* Long division, for the rare quotients that do not fit 128 bits. */
static void u256_divmod(ck_u256_t n, ck_u256_t d, ck_u256_t *q, ck_u256_t *r) {
  ck_u256_t quo = ck_u256_of(0), rem = ck_u256_of(0);
  int top = 255;
  while (top >= 0 && !((n.w[top >> 6] >> (top & 63)) & 1)) top--;
  for (int bit = top; bit >= 0; bit--) {
    for (int i = 3; i > 0; i--) rem.w[i] = (rem.w[i] << 1) | (rem.w[i - 1] >> 63);
    rem.w[0] = (rem.w[0] << 1) | ((n.w[bit >> 6] >> (bit & 63)) & 1);
    if (u256_cmp(&rem, &d) >= 0) {
      rem = u256_sub(rem, d);
      quo.w[bit >> 6] |= 1ULL << (bit & 63);
    }
  }
  *q = quo;
  *r = rem;
}

/* Magnitude m at scale `from` → signed unscaled value at scale `to` with precision p. */
bool ck_dec_finish(ck_u256_t m, bool neg, int from, int to, int p, i128 *out) {
  if (to < from) ck_u256_div_p10_round(&m, from - to);
  else if (to > from && !ck_u256_mul_p10(&m, to - from)) return false;
  if (!u256_small(&m)) return false;
  u128 v = u256_lo(&m);
  if (v >= P10[p]) return false;
  *out = neg ? -(i128)v : (i128)v;
  return true;
}

/* Rescales an unscaled decimal (rounding half away from zero when the scale shrinks). */
bool ck_dec_rescale(i128 v, int from, int to, int p, i128 *out) {
  if (from == to) {
    if (uabs(v) >= P10[p]) return false;
    *out = v;
    return true;
  }
  return ck_dec_finish(ck_u256_of(uabs(v)), v < 0, from, to, p, out);
}

ck_dec_op_t ck_dec_op(int s1, int s2, int s, int p) {
  ck_dec_op_t o = {.s1 = s1, .s2 = s2, .s = s, .p = p, .S = s1 > s2 ? s1 : s2};
  o.m1 = P10[o.S - s1];
  o.m2 = P10[o.S - s2];
  return o;
}

static int dec_add(const ck_dec_op_t *o, i128 a, i128 b, bool sub, i128 *r) {
  i128 x, y, z;
  if (o->S == o->s && !__builtin_mul_overflow(a, (i128)o->m1, &x) &&
      !__builtin_mul_overflow(b, (i128)o->m2, &y) &&
      !(sub ? __builtin_sub_overflow(x, y, &z) : __builtin_add_overflow(x, y, &z))) {
    if (uabs(z) >= P10[o->p]) return CK_DEC_OVERFLOW;
    *r = z;
    return CK_DEC_OK;
  }
  ck_u256_t A = ck_u256_of(uabs(a)), B = ck_u256_of(uabs(b));
  ck_u256_mul_p10(&A, o->S - o->s1); /* at most 77 digits: cannot overflow */
  ck_u256_mul_p10(&B, o->S - o->s2);
  bool na = a < 0, nb = (b < 0) != sub, neg;
  ck_u256_t m;
  if (na == nb) {
    m = u256_add(A, B);
    neg = na;
  } else if (u256_cmp(&A, &B) >= 0) {
    m = u256_sub(A, B);
    neg = na;
  } else {
    m = u256_sub(B, A);
    neg = nb;
  }
  return ck_dec_finish(m, neg, o->S, o->s, o->p, r) ? CK_DEC_OK : CK_DEC_OVERFLOW;
}

int ck_dec_mul(const ck_dec_op_t *o, i128 a, i128 b, i128 *r) {
  int down = o->s1 + o->s2 - o->s;
  i128 x;
  if (!__builtin_mul_overflow(a, b, &x)) {
    u128 m = uabs(x);
    if (down > 0) m = ck_dec_div_round(m, P10[down]);
    if (m >= P10[o->p]) return CK_DEC_OVERFLOW;
    *r = x < 0 ? -(i128)m : (i128)m;
    return CK_DEC_OK;
  }
  ck_u256_t m = u256_mul(uabs(a), uabs(b));
  return ck_dec_finish(m, (a < 0) != (b < 0), o->s1 + o->s2, o->s, o->p, r) ? CK_DEC_OK : CK_DEC_OVERFLOW;
}

int ck_dec_div(const ck_dec_op_t *o, i128 a, i128 b, i128 *r) {
  if (b == 0) return CK_DEC_NULL;
  int e = o->s - o->s1 + o->s2; /* >= 0 by the typing rules */
  ck_assert(e >= 0);
  u128 ua = uabs(a), ub = uabs(b), num, q;
  bool neg = (a < 0) != (b < 0);
  if (e <= 38 && !__builtin_mul_overflow(ua, P10[e], &num)) {
    q = ck_dec_div_round(num, ub);
    if (q >= P10[o->p]) return CK_DEC_OVERFLOW;
  } else {
    ck_u256_t n = ck_u256_of(ua), qq, rr;
    if (!ck_u256_mul_p10(&n, e)) return CK_DEC_OVERFLOW; /* the quotient exceeds 10^38 anyway */
    u256_divmod(n, ck_u256_of(ub), &qq, &rr);
    u128 rem = u256_lo(&rr);
    if (ck_dec_round_away(rem, ub)) qq = u256_add(qq, ck_u256_of(1));
    if (!u256_small(&qq) || u256_lo(&qq) >= P10[o->p]) return CK_DEC_OVERFLOW;
    q = u256_lo(&qq);
  }
  *r = neg ? -(i128)q : (i128)q;
  return CK_DEC_OK;
}

int ck_dec_mod(const ck_dec_op_t *o, i128 a, i128 b, i128 *r) {
  if (b == 0) return CK_DEC_NULL;
  u128 x, y;
  if (!__builtin_mul_overflow(uabs(a), o->m1, &x) && !__builtin_mul_overflow(uabs(b), o->m2, &y)) {
    u128 m = x % y;
    return ck_dec_finish(ck_u256_of(m), a < 0, o->S, o->s, o->p, r) ? CK_DEC_OK : CK_DEC_OVERFLOW;
  }
  ck_u256_t A = ck_u256_of(uabs(a)), B = ck_u256_of(uabs(b)), q, rem;
  ck_u256_mul_p10(&A, o->S - o->s1);
  ck_u256_mul_p10(&B, o->S - o->s2);
  u256_divmod(A, B, &q, &rem);
  return ck_dec_finish(rem, a < 0, o->S, o->s, o->p, r) ? CK_DEC_OK : CK_DEC_OVERFLOW;
}

int ck_dec_add(const ck_dec_op_t *o, i128 a, i128 b, i128 *r) { return dec_add(o, a, b, false, r); }
int ck_dec_sub(const ck_dec_op_t *o, i128 a, i128 b, i128 *r) { return dec_add(o, a, b, true, r); }

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
