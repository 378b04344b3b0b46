/*
 * DESIGN: the one home of DECIMAL: its text (parse and format), powers of ten, THE rounding
 * rule, and the arithmetic (+ − × ÷ % and rescaling) that SQL expressions use
 * (runtime/expr_eval.c calls it once per row; it keeps no arithmetic of its own).
 *
 * A DECIMAL(p, s) value is an unscaled 128-bit integer v meaning v / 10^s, |v| < 10^p, p <= 38.
 *
 * Arithmetic is exact, then rounded once: each operation first tries 128 bits; a sum, product
 * or quotient that does not fit 128 bits on the way is finished in 256-bit arithmetic
 * (ck_u256_t: a magnitude of four 64-bit words), rounded to the result scale by the rule below
 * and checked against the result precision — a result of 10^p or more is CK_DEC_OVERFLOW (the
 * caller's error, like integer overflow), a zero divisor of / and % is CK_DEC_NULL (SQL NULL).
 * The result type (its precision and scale) is the binder's choice (sql/), given here.
 *
 * Rounding: half away from zero, everywhere a decimal result has fewer digits than the exact
 * value — parsing text or a double's shortest text with more digits than the scale, CAST to a
 * smaller scale, + − × ÷ % below, ROUND(x, d) of decimals and of integers with
 * d < 0, and AVG / SUM of decimals (runtime/agg_op.c). docs/sql.md promises it (ROUND) and
 * Flink's DECIMAL (Java's RoundingMode.HALF_UP on the magnitude) does the same: 2.5 → 3,
 * -2.5 → -3, 2.4999 → 2. Every one of those computes a magnitude quotient and a remainder and
 * asks ck_dec_round_away whether to add one to the magnitude; the sign is applied after.
 *
 * Threads: pure functions.
 */
#ifndef CK_RUNTIME_DECIMAL_H
#define CK_RUNTIME_DECIMAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "runtime/types.h"

typedef unsigned __int128 ck_u128;

/* The rounding rule: a magnitude quotient with remainder rem of a division by den (rem < den)
 * rounds up (away from zero) when rem is at least half of den. */
static inline bool ck_dec_round_away(ck_u128 rem, ck_u128 den) { return rem >= den - rem; }

/* num / den (magnitudes, den > 0) rounded by the rule. */
static inline ck_u128 ck_dec_div_round(ck_u128 num, ck_u128 den) {
  return num / den + ck_dec_round_away(num % den, den);
}

/* 10^n, n in [0, 38]. */
extern const ck_u128 ck_dec_p10[39];
ck_i128 ck_pow10_i128(int n);
/* |v| (for every v, the most negative included). */
static inline ck_u128 ck_dec_abs(ck_i128 v) { return v < 0 ? (ck_u128)0 - (ck_u128)v : (ck_u128)v; }

/* ---- arithmetic */

typedef struct ck_u256 {
  uint64_t w[4]; /* least significant first */
} ck_u256_t;

static inline ck_u256_t ck_u256_of(ck_u128 x) {
  return (ck_u256_t){{(uint64_t)x, (uint64_t)(x >> 64), 0, 0}};
}
/* a *= 10^k (k >= 0); false when it no longer fits 256 bits. */
bool ck_u256_mul_p10(ck_u256_t *a, int k);
/* a = a / 10^k, rounded by the rule (a is a magnitude). */
void ck_u256_div_p10_round(ck_u256_t *a, int k);
/* Magnitude m at scale `from` → the signed unscaled value at scale `to` (rounded by the rule
 * when to < from) in *out; false when it does not fit precision p. */
bool ck_dec_finish(ck_u256_t m, bool neg, int from, int to, int p, ck_i128 *out);
/* v at scale from → scale to, precision p (rounded by the rule when the scale shrinks). */
bool ck_dec_rescale(ck_i128 v, int from, int to, int p, ck_i128 *out);

/* An operation's types: operand scales s1 and s2, result scale s and precision p. */
typedef struct ck_dec_op {
  int s1, s2, s, p;
  int S;               /* + − %: the common scale of the exact result, max(s1, s2) */
  ck_u128 m1, m2;      /* 10^(S − s1), 10^(S − s2) */
} ck_dec_op_t;

ck_dec_op_t ck_dec_op(int s1, int s2, int s, int p);

enum { CK_DEC_OK = 0, CK_DEC_OVERFLOW = 1, CK_DEC_NULL = 2 };

/* a OP b (unscaled at o's s1 and s2) → *r at o's s and p: CK_DEC_OK, CK_DEC_OVERFLOW, or for
 * / and % by zero CK_DEC_NULL. % takes the sign of a (SQL's MOD, as C's %). */
int ck_dec_add(const ck_dec_op_t *o, ck_i128 a, ck_i128 b, ck_i128 *r);
int ck_dec_sub(const ck_dec_op_t *o, ck_i128 a, ck_i128 b, ck_i128 *r);
int ck_dec_mul(const ck_dec_op_t *o, ck_i128 a, ck_i128 b, ck_i128 *r);
int ck_dec_div(const ck_dec_op_t *o, ck_i128 a, ck_i128 b, ck_i128 *r);
int ck_dec_mod(const ck_dec_op_t *o, ck_i128 a, ck_i128 b, ck_i128 *r);
/* Decimal text for an unscaled value at a scale ("-12.30"). */
void ck_decimal_format(ck_i128 unscaled, int scale, ck_buf_t *out);
/* Parses "12.3", "-0.5", "7" into an unscaled value at scale; rounds by the rule when the text
 * has more digits than the scale; false when it is not a number or overflows p. */
bool ck_decimal_parse(const char *s, size_t n, int precision, int scale, ck_i128 *out);

#endif
