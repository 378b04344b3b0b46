/*
 * DESIGN: unit tests for src/runtime/types — type names and widths, decimal text in both
 * directions, the shortest round-trip double format, and TIMESTAMP(3) text.
 *
 * Expected text is literal; the double format is also checked against strtod over a spread
 * of bit patterns, so "shortest" and "round-trips" are both tested. Threads: main only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "runtime/types.h"

static char text[256];

static const char *dfmt(double d) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_double_format(d, &b);
  snprintf(text, sizeof text, "%s", b.data);
  ck_buf_fini(&b);
  return text;
}

static const char *decfmt(ck_i128 v, int scale) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_decimal_format(v, scale, &b);
  snprintf(text, sizeof text, "%s", b.data);
  ck_buf_fini(&b);
  return text;
}

/* Parses s at (p, s) and formats the result back, or "FAIL". */
static const char *decround(const char *s, int p, int sc) {
  ck_i128 v;
  if (!ck_decimal_parse(s, strlen(s), p, sc, &v)) return "FAIL";
  return decfmt(v, sc);
}

static void test_type_names_and_widths(void **state) {
  char buf[48];
  assert_string_equal(ck_type_name(CK_TYPE(CK_T_INT32), buf, sizeof buf), "INT");
  assert_string_equal(ck_type_name(CK_TYPE(CK_T_INT64), buf, sizeof buf), "BIGINT");
  assert_string_equal(ck_type_name(CK_TYPE(CK_T_FLOAT64), buf, sizeof buf), "DOUBLE");
  assert_string_equal(ck_type_name(CK_TYPE(CK_T_STRING), buf, sizeof buf), "VARCHAR");
  assert_string_equal(ck_type_name(CK_TYPE(CK_T_TIMESTAMP), buf, sizeof buf), "TIMESTAMP(3)");
  assert_string_equal(ck_type_name(ck_type_timestamp(0, 0), buf, sizeof buf), "TIMESTAMP(0)");
  assert_string_equal(ck_type_name(ck_type_timestamp(6, CK_TS_LTZ), buf, sizeof buf),
                      "TIMESTAMP_LTZ(6)");
  assert_string_equal(ck_type_name(ck_type_timestamp(3, CK_TS_EPOCH), buf, sizeof buf),
                      "TIMESTAMP(3)");
  /* every TIMESTAMP is one physical type: presentation does not make two types */
  assert_true(ck_type_eq(ck_type_timestamp(9, CK_TS_LTZ), CK_TYPE(CK_T_TIMESTAMP)));
  assert_string_equal(ck_type_name((ck_type_t){CK_T_DECIMAL, 10, 2}, buf, sizeof buf),
                      "DECIMAL(10, 2)");
  assert_int_equal(ck_type_width(CK_TYPE(CK_T_DECIMAL)), 16);
  assert_int_equal(ck_type_width(CK_TYPE(CK_T_INT32)), 4);
  assert_int_equal(ck_type_width(CK_TYPE(CK_T_TIMESTAMP)), 8);
  assert_int_equal(ck_type_width(CK_TYPE(CK_T_STRING)), 0);
  assert_true(ck_type_eq((ck_type_t){CK_T_DECIMAL, 10, 2}, (ck_type_t){CK_T_DECIMAL, 10, 2}));
  assert_false(ck_type_eq((ck_type_t){CK_T_DECIMAL, 10, 2}, (ck_type_t){CK_T_DECIMAL, 10, 3}));
  assert_true(ck_type_is_numeric((ck_type_t){CK_T_DECIMAL, 10, 2}));
  assert_false(ck_type_is_numeric(CK_TYPE(CK_T_BOOL)));
  assert_false(ck_type_is_integer(CK_TYPE(CK_T_TIMESTAMP)));
}

static void test_double_format_shortest(void **state) {
  assert_string_equal(dfmt(18), "18");
  assert_string_equal(dfmt(18.5), "18.5");
  assert_string_equal(dfmt(0.1), "0.1");
  assert_string_equal(dfmt(100), "100");
  assert_string_equal(dfmt(-2.5), "-2.5");
  assert_string_equal(dfmt(1e21), "1e+21");
  assert_string_equal(dfmt(1e20), "100000000000000000000");
  assert_string_equal(dfmt(123e18), "123000000000000000000");
  assert_string_equal(dfmt(1.5e21), "1.5e+21");
  assert_string_equal(dfmt(0.000001), "0.000001");
  assert_string_equal(dfmt(1.5e-7), "1.5e-7");
  assert_string_equal(dfmt(1e-7), "1e-7");
  assert_string_equal(dfmt(0.1 + 0.2), "0.30000000000000004");
  assert_string_equal(dfmt(123456789.125), "123456789.125");
  assert_string_equal(dfmt(-0.0), "-0");
  assert_string_equal(dfmt(0.0), "0");
  assert_string_equal(dfmt(5e-324), "5e-324");
  assert_string_equal(dfmt(1.7976931348623157e308), "1.7976931348623157e+308");
  assert_string_equal(dfmt(NAN), "NaN");
  assert_string_equal(dfmt(INFINITY), "Infinity");
  assert_string_equal(dfmt(-INFINITY), "-Infinity");
}

static void test_double_format_round_trips(void **state) {
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  for (int i = 0; i < 20000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift */
    double d;
    memcpy(&d, &x, sizeof d);
    if (!isfinite(d)) continue;
    const char *s = dfmt(d);
    if (strtod(s, NULL) != d) fail_msg("%s does not read back as %.17g", s, d);
    /* shortest: one significant digit fewer never reads back */
    if (!strchr(s, 'e') && !strchr(s, '.')) continue; /* integers are padded with zeros */
    int sig = 0;
    bool started = false;
    for (const char *p = s; *p && *p != 'e'; p++) {
      if (*p >= '1' && *p <= '9') started = true;
      sig += started && *p >= '0' && *p <= '9';
    }
    if (sig < 2) continue;
    char shorter[40];
    snprintf(shorter, sizeof shorter, "%.*e", sig - 2, d);
    if (strtod(shorter, NULL) == d) fail_msg("%s is not the shortest (%s)", s, shorter);
  }
}

static void test_decimal_format(void **state) {
  assert_string_equal(decfmt(-1230, 2), "-12.30");
  assert_string_equal(decfmt(5, 2), "0.05");
  assert_string_equal(decfmt(-5, 2), "-0.05");
  assert_string_equal(decfmt(0, 3), "0.000");
  assert_string_equal(decfmt(42, 0), "42");
  assert_string_equal(decfmt(-42, 0), "-42");
  ck_i128 big = ck_pow10_i128(38) - 1;
  assert_string_equal(decfmt(big, 0), "99999999999999999999999999999999999999");
  assert_string_equal(decfmt(-big, 38), "-0.99999999999999999999999999999999999999");
}

static void test_decimal_parse(void **state) {
  assert_string_equal(decround("12.3", 10, 2), "12.30");
  assert_string_equal(decround("-0.5", 10, 2), "-0.50");
  assert_string_equal(decround("7", 10, 2), "7.00");
  assert_string_equal(decround(" 7 ", 10, 2), "7.00");
  assert_string_equal(decround("+.25", 10, 2), "0.25");
  assert_string_equal(decround("1.", 10, 2), "1.00");
  assert_string_equal(decround("000123.4500", 5, 2), "123.45");
  /* more digits than the scale: half away from zero */
  assert_string_equal(decround("0.125", 10, 2), "0.13");
  assert_string_equal(decround("-0.125", 10, 2), "-0.13");
  assert_string_equal(decround("0.12499", 10, 2), "0.12");
  assert_string_equal(decround("9.995", 3, 2), "FAIL"); /* rounds to 10.00: too wide */
  assert_string_equal(decround("9.995", 4, 2), "10.00");
  assert_string_equal(decround("0.004", 3, 2), "0.00");
  /* exponents */
  assert_string_equal(decround("1e2", 10, 2), "100.00");
  assert_string_equal(decround("1.5E-1", 10, 2), "0.15");
  assert_string_equal(decround("-2.5e-3", 10, 2), "0.00");
  assert_string_equal(decround("2.5e-3", 10, 3), "0.003");
  assert_string_equal(decround("1e+21", 25, 0), "1000000000000000000000");
  assert_string_equal(decround("1e-400", 10, 2), "0.00");
  assert_string_equal(decround("0e999999", 10, 2), "0.00");
  assert_string_equal(decround("1e999999", 38, 0), "FAIL");
  /* precision */
  assert_string_equal(decround("12345", 4, 0), "FAIL");
  assert_string_equal(decround("1234", 4, 0), "1234");
  assert_string_equal(decround("123.4", 4, 2), "FAIL");
  assert_string_equal(decround("99999999999999999999999999999999999999", 38, 0),
                      "99999999999999999999999999999999999999");
  assert_string_equal(decround("100000000000000000000000000000000000000", 38, 0), "FAIL");
  /* not numbers */
  static const char *bad[] = {"", " ", "abc", ".", "-", "1.2.3", "1e", "1e+", "e5", "1 2",
                              "0x10", "NaN", "--1", "1,5"};
  for (size_t i = 0; i < CK_ARRAY_LEN(bad); i++)
    if (strcmp(decround(bad[i], 10, 2), "FAIL") != 0) fail_msg("'%s' parsed", bad[i]);
}

static const char *tsfmt(int64_t ms) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_timestamp_format(ms, &b);
  snprintf(text, sizeof text, "%s", b.data);
  ck_buf_fini(&b);
  return text;
}

static void test_timestamp_text(void **state) {
  assert_string_equal(tsfmt(0), "1970-01-01 00:00:00.000");
  assert_string_equal(tsfmt(-1), "1969-12-31 23:59:59.999");
  assert_string_equal(tsfmt(1704164645678), "2024-01-02 03:04:05.678");
  assert_string_equal(tsfmt(951782400000), "2000-02-29 00:00:00.000");
  int64_t ms;
  assert_true(ck_timestamp_parse("2024-01-02 03:04:05.678", 23, &ms));
  assert_int_equal(ms, 1704164645678);
  assert_true(ck_timestamp_parse("2024-01-02T03:04:05.6789Z", 25, &ms));
  assert_int_equal(ms, 1704164645678); /* truncated to milliseconds */
  assert_true(ck_timestamp_parse("2024-01-02 03:04:05.6", 21, &ms));
  assert_int_equal(ms, 1704164645600);
  assert_true(ck_timestamp_parse("2024-01-02", 10, &ms));
  assert_int_equal(ms, 1704153600000);
  assert_true(ck_timestamp_parse(" 2024-1-2 3:04 ", 15, &ms));
  assert_int_equal(ms, 1704164640000);
  assert_true(ck_timestamp_parse("1969-12-31 23:59:59.999", 23, &ms));
  assert_int_equal(ms, -1);
  assert_true(ck_timestamp_parse("2000-02-29", 10, &ms));
  assert_int_equal(ms, 951782400000);
  static const char *bad[] = {"", "2024", "2024-01", "2023-02-29", "2024-13-01", "2024-01-32",
                              "2024-01-02 24:00", "2024-01-02 10:60", "2024-01-02 10:00:61",
                              "2024-01-02x", "2024-01-02 10", "2024-01-02 10:00:00.", "abc"};
  for (size_t i = 0; i < CK_ARRAY_LEN(bad); i++)
    if (ck_timestamp_parse(bad[i], strlen(bad[i]), &ms)) fail_msg("'%s' parsed", bad[i]);
  /* round trip over a range of instants, before and after the epoch */
  for (int64_t t = -5000000000000; t < 5000000000000; t += 123456789013) {
    char buf[sizeof text];
    memcpy(buf, tsfmt(t), sizeof buf);
    assert_true(ck_timestamp_parse(buf, strlen(buf), &ms));
    assert_int_equal(ms, t);
  }
}

static bool ieq(const char *a, const char *b) { return ck_utf8_ieq(a, strlen(a), b, strlen(b)); }

static void test_utf8_ieq_folds_full_unicode_case(void **state) {
  assert_true(ieq("Temp", "tEMP"));
  assert_false(ieq("temp", "temps"));
  assert_true(ieq("gr\xc3\xb6\xc3\x9f" "e", "GR\xc3\x96SSE"));     /* größe = GRÖSSE */
  assert_true(ieq("\xce\xa3\xce\x91\xce\xa3", "\xcf\x83\xce\xb1\xcf\x82")); /* ΣΑΣ = σας */
  assert_false(ieq("\xc3\xa9", "e"));                                  /* é is not e */
  assert_false(ieq("\xff", "\xfe"));                                   /* invalid UTF-8: bytes */
  assert_true(ieq("\xff" "A", "\xff" "a"));
  char longa[600], longb[600]; /* past the stack buffers */
  for (int i = 0; i < 299; i++) memcpy(longa + 2 * i, "\xc3\xa9", 2), memcpy(longb + 2 * i, "\xc3\x89", 2);
  longa[598] = longb[598] = 0;
  assert_true(ieq(longa, longb));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_type_names_and_widths),
      cmocka_unit_test(test_double_format_shortest),
      cmocka_unit_test(test_double_format_round_trips),
      cmocka_unit_test(test_decimal_format),
      cmocka_unit_test(test_decimal_parse),
      cmocka_unit_test(test_timestamp_text),
      cmocka_unit_test(test_utf8_ieq_folds_full_unicode_case),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
