/*
 * DESIGN: the one home of DECIMAL's rules that more than one place needs: its text (parse and
 * format), powers of ten, and THE rounding rule.
 *
 * A DECIMAL(p, s) value is an unscaled 128-bit integer v meaning v / 10^s, |v| < 10^p, p <= 38.
 *
 * Rounding: half away from zero, everywhere a decimal result has fewer digits than the exact
 * value — parsing text or a double's shortest text with more digits than the scale, CAST to a
 * smaller scale, * and / (runtime/expr_eval.c), ROUND(x, d) of decimals and of integers with
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

/* 10^n as a 128-bit integer, n in [0, 38]. */
ck_i128 ck_pow10_i128(int n);
/* Decimal text for an unscaled value at a scale ("-12.30"). */
void ck_decimal_format(ck_i128 unscaled, int scale, ck_buf_t *out);
/* Parses "12.3", "-0.5", "7" into an unscaled value at scale; rounds by the rule when the text
 * has more digits than the scale; false when it is not a number or overflows p. */
bool ck_decimal_parse(const char *s, size_t n, int precision, int scale, ck_i128 *out);

#endif
