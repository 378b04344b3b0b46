/*
 * DESIGN: unit tests for src/runtime/decimal.h — the one rounding rule (half away from zero on
 * the magnitude) and DECIMAL text. Ties, just-below-ties and just-above-ties, at small and at
 * 38-digit magnitudes, by division and by parsing text with more digits than the scale; the
 * expected values are written out by hand. tests/sql/decimal_rounding.sql checks that every
 * SQL path (ROUND, CAST, /, *, parsing, ROUND of integers) gives the same answers.
 * Threads: the main thread.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "runtime/decimal.h"

static void test_division_rounds_half_away_from_zero(void **state) {
  (void)state;
  assert_true(ck_dec_div_round(5, 2) == 3);   /* 2.5 */
  assert_true(ck_dec_div_round(7, 2) == 4);   /* 3.5: not to even */
  assert_true(ck_dec_div_round(249, 100) == 2);
  assert_true(ck_dec_div_round(250, 100) == 3);
  assert_true(ck_dec_div_round(251, 100) == 3);
  assert_true(ck_dec_div_round(1, 3) == 0);
  assert_true(ck_dec_div_round(2, 3) == 1);
  assert_true(ck_dec_div_round(0, 7) == 0);
  assert_false(ck_dec_round_away(4, 10));
  assert_true(ck_dec_round_away(5, 10));
  assert_false(ck_dec_round_away(0, 1));
  /* 38 digits: (10^38 - 1) / 2 is ...999.5 */
  ck_u128 max38 = (ck_u128)ck_pow10_i128(38) - 1;
  assert_true(ck_dec_div_round(max38, 2) == max38 / 2 + 1);
  assert_true(ck_dec_div_round(max38 - 1, 2) == (max38 - 1) / 2);
}

static ck_i128 parse(const char *s, int p, int scale) {
  ck_i128 v = 12345;
  if (!ck_decimal_parse(s, strlen(s), p, scale, &v)) fail_msg("could not parse '%s'", s);
  return v;
}

static void test_parse_rounds_by_the_same_rule(void **state) {
  (void)state;
  assert_true(parse("2.5", 10, 0) == 3);
  assert_true(parse("-2.5", 10, 0) == -3);
  assert_true(parse("2.4999", 10, 0) == 2);
  assert_true(parse("-2.4999", 10, 0) == -2);
  assert_true(parse("0.05", 10, 1) == 1);
  assert_true(parse("-0.05", 10, 1) == -1);
  assert_true(parse("0.049", 10, 1) == 0);
  assert_true(parse("1.005", 10, 2) == 101);
  assert_true(parse("25e-1", 10, 0) == 3);
  assert_true(parse("9.95", 3, 1) == 100); /* rounds up into the last digit p allows */
  ck_i128 v;
  assert_false(ck_decimal_parse("99.95", 5, 3, 1, &v)); /* 100.0 does not fit DECIMAL(3, 1) */
}

static void test_format(void **state) {
  (void)state;
  ck_buf_t b;
  ck_buf_init(&b);
  ck_decimal_format(-5, 2, &b);
  assert_string_equal(b.data, "-0.05");
  ck_buf_reset(&b);
  ck_decimal_format(1230, 2, &b);
  assert_string_equal(b.data, "12.30");
  ck_buf_reset(&b);
  ck_decimal_format(7, 0, &b);
  assert_string_equal(b.data, "7");
  ck_buf_fini(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_division_rounds_half_away_from_zero),
      cmocka_unit_test(test_parse_rounds_by_the_same_rule),
      cmocka_unit_test(test_format),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
