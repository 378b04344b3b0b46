/*
 * DESIGN: unit tests for src/incident/cells.h — the reconciliation's own cell rules (record
 * 015, "Comparing"), each side built by hand: a recorded SQL value (a runtime column) and a
 * ClickHouse native column of the target type, with the expected canonical values written out.
 * Integers exact (UInt64 above INT64_MAX too), floats by IEEE-754 bits (every NaN one value,
 * -0.0 ≠ +0.0, Float32 from a DOUBLE only when exact), Decimal by the unscaled integer at the
 * column's scale (12.30 and 12.3 one value), DateTime/DateTime64 ticks from epoch ms, Date by
 * days, strings by bytes (an embedded NUL, a prefix), NULL only equal to NULL, an inexact value
 * equal to nothing, and unsupported types refused by name.
 * Threads: the main thread.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "base/arena.h"
#include "incident/cells.h"
#include "runtime/batch.h"

static ck_arena_t arena;

static int setup(void **state) {
  (void)state;
  ck_arena_init(&arena, 4096);
  return 0;
}
static int teardown(void **state) {
  (void)state;
  ck_arena_fini(&arena);
  return 0;
}

static ck_type_t T(ck_type_id_t id) { return (ck_type_t){id, 0, 0}; }
static ck_type_t DEC(int p, int s) { return (ck_type_t){CK_T_DECIMAL, (uint8_t)p, (uint8_t)s}; }

static void rule(ck_type_t sql, const char *ch, ck_cell_rule_t *r) {
  char why[256];
  int rc = ck_cell_rule_init(sql, ch, r, why, sizeof why);
  if (rc) fail_msg("rule %s: %s", ch, why);
}

/* The cell of one recorded value (col holds one row). */
static ck_cell_t sql_cell(const ck_cell_rule_t *r, ck_col_t *col) {
  ck_cell_t c;
  ck_cell_from_sql(r, col, 0, &arena, &c);
  ck_col_fini(col);
  return c;
}

static ck_cell_t sql_i64(const ck_cell_rule_t *r, int64_t v) {
  ck_col_t col;
  ck_col_init(&col, r->sql, 1);
  ck_col_append_i64(&col, v);
  return sql_cell(r, &col);
}

static ck_cell_t sql_f64(const ck_cell_rule_t *r, double v) {
  ck_col_t col;
  ck_col_init(&col, r->sql, 1);
  if (r->sql.id == CK_T_FLOAT32) ck_col_append_f32(&col, (float)v);
  else ck_col_append_f64(&col, v);
  return sql_cell(r, &col);
}

static ck_cell_t sql_dec(const ck_cell_rule_t *r, __int128 v) {
  ck_col_t col;
  ck_col_init(&col, r->sql, 1);
  ck_col_append_dec(&col, v);
  return sql_cell(r, &col);
}

static ck_cell_t sql_str(const ck_cell_rule_t *r, const char *s, size_t n) {
  ck_col_t col;
  ck_col_init(&col, r->sql, 1);
  ck_col_append_str(&col, s, n);
  return sql_cell(r, &col);
}

static ck_cell_t sql_null(const ck_cell_rule_t *r) {
  ck_col_t col;
  ck_col_init(&col, r->sql, 1);
  ck_col_append_null(&col);
  return sql_cell(r, &col);
}

/* The cell of one ClickHouse value given as its native little-endian bytes. */
static ck_cell_t ch_fixed(const ck_cell_rule_t *r, const void *le, bool null) {
  ck_ch_block_t b;
  ck_ch_block_init(&b);
  assert_int_equal(ck_ch_block_add_col(&b, "c", r->ch_name, NULL), 0);
  ck_ch_col_t *col = &b.cols[0];
  if (null) ck_ch_col_put_null(col);
  else if (col->type.base == CK_CH_STRING) ck_ch_col_put_str(col, le, strlen(le));
  else ck_ch_col_put_wide(col, le, ck_ch_type_width(&col->type));
  ck_cell_t c;
  ck_cell_from_ch(r, col, 0, &arena, &c);
  ck_ch_block_fini(&b);
  return c;
}

static ck_cell_t ch_i64(const ck_cell_rule_t *r, int64_t v) {
  uint8_t le[16] = {0};
  memcpy(le, &v, 8);
  if (v < 0) memset(le + 8, 0xff, 8);
  return ch_fixed(r, le, false);
}

static ck_cell_t ch_f64(const ck_cell_rule_t *r, double v) {
  uint8_t le[8];
  if (r->ch.base == CK_CH_FLOAT32) {
    float f = (float)v;
    memcpy(le, &f, 4);
  } else {
    memcpy(le, &v, 8);
  }
  return ch_fixed(r, le, false);
}

static void test_integers_exact(void **state) {
  (void)state;
  ck_cell_rule_t r;
  rule(T(CK_T_INT64), "Int64", &r);
  ck_cell_t a = sql_i64(&r, -42), b = ch_i64(&r, -42), c = ch_i64(&r, 42);
  assert_true(ck_cell_eq(&a, &b));
  assert_false(ck_cell_eq(&a, &c));
  /* UInt64 above INT64_MAX: the server's bits read unsigned */
  rule(DEC(20, 0), "UInt64", &r);
  uint64_t big = 18446744073709551615ull;
  ck_cell_t s = sql_dec(&r, (__int128)big), h = ch_fixed(&r, &big, false);
  assert_int_equal(h.kind, CK_CELL_INT);
  assert_true(h.v.i == (__int128)big);
  assert_true(ck_cell_eq(&s, &h));
  /* a recorded value the column cannot hold is equal to nothing */
  rule(T(CK_T_INT64), "Int8", &r);
  ck_cell_t o = sql_i64(&r, 300);
  assert_int_equal(o.kind, CK_CELL_INEXACT);
  ck_cell_t w = ch_fixed(&r, "\x2c", false); /* 300 wrapped to 44 */
  assert_false(ck_cell_eq(&o, &w));
  assert_false(ck_cell_eq(&o, &o));
  /* BOOLEAN into UInt8 */
  rule(T(CK_T_BOOL), "UInt8", &r);
  ck_col_t col;
  ck_col_init(&col, r.sql, 1);
  ck_col_append_bool(&col, true);
  ck_cell_t t = sql_cell(&r, &col), one = ch_fixed(&r, "\x01", false);
  assert_true(ck_cell_eq(&t, &one));
}

static void test_floats_by_bits(void **state) {
  (void)state;
  ck_cell_rule_t r;
  rule(T(CK_T_FLOAT64), "Float64", &r);
  ck_cell_t pz = sql_f64(&r, 0.0), nz = ch_f64(&r, -0.0), z = ch_f64(&r, 0.0);
  assert_true(ck_cell_eq(&pz, &z));
  assert_false(ck_cell_eq(&pz, &nz)); /* -0.0 ≠ +0.0, though they compare equal as doubles */
  /* every NaN is one value: a quiet NaN recorded, a NaN with another payload read */
  uint64_t odd = 0x7ff0000000000123ull;
  double nan2;
  memcpy(&nan2, &odd, 8);
  ck_cell_t n1 = sql_f64(&r, NAN), n2 = ch_f64(&r, nan2);
  assert_true(ck_cell_eq(&n1, &n2));
  /* the next double up is a change */
  ck_cell_t x = sql_f64(&r, 0.1), y = ch_f64(&r, nextafter(0.1, 1.0));
  assert_false(ck_cell_eq(&x, &y));
  /* Float32: a DOUBLE that float holds exactly is one value, one it does not is inexact */
  rule(T(CK_T_FLOAT64), "Float32", &r);
  ck_cell_t h = sql_f64(&r, 0.5), hh = ch_f64(&r, 0.5);
  assert_true(ck_cell_eq(&h, &hh));
  ck_cell_t tenth = sql_f64(&r, 0.1);
  assert_int_equal(tenth.kind, CK_CELL_INEXACT);
  /* an integer written as Float64 */
  rule(T(CK_T_INT64), "Float64", &r);
  ck_cell_t i = sql_i64(&r, 3), f = ch_f64(&r, 3.0);
  assert_true(ck_cell_eq(&i, &f));
  ck_cell_t big = sql_i64(&r, (1LL << 53) + 1); /* no double holds it */
  assert_int_equal(big.kind, CK_CELL_INEXACT);
}

static void test_decimal_unscaled_at_the_column_scale(void **state) {
  (void)state;
  ck_cell_rule_t r;
  /* the row's 12.30 (DECIMAL(10, 2)) and the server's 12.3 at its scale 4: 123000 */
  rule(DEC(10, 2), "Decimal(12, 4)", &r);
  int64_t v = 123000; /* Decimal(12, 4) is a Decimal64 */
  ck_cell_t s = sql_dec(&r, 1230), h = ch_fixed(&r, &v, false);
  assert_true(ck_cell_eq(&s, &h));
  int64_t v2 = 123001;
  ck_cell_t h2 = ch_fixed(&r, &v2, false);
  assert_false(ck_cell_eq(&s, &h2));
  /* a scale the column does not have room for is inexact, never rounded */
  rule(DEC(10, 4), "Decimal(10, 2)", &r);
  ck_cell_t d = sql_dec(&r, 12345); /* 1.2345 */
  assert_int_equal(d.kind, CK_CELL_INEXACT);
  ck_cell_t e = sql_dec(&r, 12300); /* 1.2300 → 123 at scale 2 */
  assert_int_equal(e.kind, CK_CELL_INT);
  assert_true(e.v.i == 123);
  /* Decimal128 by its 16 bytes */
  rule(DEC(38, 2), "Decimal(38, 2)", &r);
  __int128 big = (__int128)1 << 100;
  uint8_t le[16];
  memcpy(le, &big, 16);
  ck_cell_t a = sql_dec(&r, big), b = ch_fixed(&r, le, false);
  assert_true(ck_cell_eq(&a, &b));
  ck_buf_t j;
  ck_buf_init(&j);
  rule(DEC(10, 2), "Decimal(10, 2)", &r);
  ck_cell_t neg = sql_dec(&r, -5);
  ck_cell_json(&r, &neg, &j);
  assert_string_equal(j.data, "\"-0.05\"");
  ck_buf_fini(&j);
}

static void test_time_ticks_and_days(void **state) {
  (void)state;
  ck_cell_rule_t r;
  /* TIMESTAMP(3) into DateTime64(6): ms × 1000 */
  rule(T(CK_T_TIMESTAMP), "DateTime64(6)", &r);
  int64_t ticks = 1700000000123LL * 1000;
  ck_cell_t s = sql_i64(&r, 1700000000123LL), h = ch_fixed(&r, &ticks, false);
  assert_true(ck_cell_eq(&s, &h));
  /* into DateTime64(0): only whole seconds are exact */
  rule(T(CK_T_TIMESTAMP), "DateTime64(0)", &r);
  assert_int_equal(sql_i64(&r, 1700000000123LL).kind, CK_CELL_INEXACT);
  ck_cell_t whole = sql_i64(&r, 1700000000000LL);
  assert_true(whole.kind == CK_CELL_INT && whole.v.i == 1700000000);
  /* BIGINT seconds into DateTime, u32 */
  rule(T(CK_T_INT64), "DateTime", &r);
  uint32_t secs = 1700000000u;
  ck_cell_t a = sql_i64(&r, 1700000000), b = ch_fixed(&r, &secs, false);
  assert_true(ck_cell_eq(&a, &b));
  assert_int_equal(sql_i64(&r, -1).kind, CK_CELL_INEXACT); /* before 1970: not a DateTime */
  /* days into Date, u16 */
  rule(T(CK_T_INT32), "Date", &r);
  uint16_t days = 19700;
  ck_col_t col;
  ck_col_init(&col, r.sql, 1);
  ck_col_append_i32(&col, 19700);
  ck_cell_t d = sql_cell(&r, &col), dd = ch_fixed(&r, &days, false);
  assert_true(ck_cell_eq(&d, &dd));
}

static void test_strings_by_bytes(void **state) {
  (void)state;
  ck_cell_rule_t r;
  rule(T(CK_T_STRING), "LowCardinality(String)", &r);
  ck_cell_t a = sql_str(&r, "ab\0c", 4), b = sql_str(&r, "ab", 2), c = sql_str(&r, "ab\0c", 4);
  assert_true(ck_cell_eq(&a, &c));
  assert_false(ck_cell_eq(&a, &b));
  assert_true(ck_cell_cmp(&b, &a) < 0); /* a prefix sorts first */
  rule(T(CK_T_STRING), "String", &r);
  ck_cell_t s = sql_str(&r, "é", strlen("é")), h = ch_fixed(&r, "é", false),
            e = ch_fixed(&r, "e", false);
  assert_true(ck_cell_eq(&s, &h));
  assert_false(ck_cell_eq(&s, &e));
}

static void test_null_equals_only_null(void **state) {
  (void)state;
  ck_cell_rule_t r;
  rule(T(CK_T_INT64), "Nullable(Int64)", &r);
  ck_cell_t n = sql_null(&r), hn = ch_fixed(&r, NULL, true), zero = ch_i64(&r, 0);
  assert_true(ck_cell_eq(&n, &hn));
  assert_false(ck_cell_eq(&n, &zero));
  rule(T(CK_T_STRING), "Nullable(String)", &r);
  ck_cell_t sn = sql_null(&r), empty = ch_fixed(&r, "", false);
  assert_false(ck_cell_eq(&sn, &empty));
}

static void test_unsupported_types_by_name(void **state) {
  (void)state;
  ck_cell_rule_t r;
  char why[256];
  assert_int_equal(ck_cell_rule_init(T(CK_T_STRING), "FixedString(4)", &r, why, sizeof why),
                   CK_EUNSUPPORTED);
  assert_non_null(strstr(why, "FixedString(4)"));
  assert_int_equal(ck_cell_rule_init(T(CK_T_STRING), "Array(String)", &r, why, sizeof why),
                   CK_EUNSUPPORTED);
  assert_non_null(strstr(why, "Array(String)"));
  assert_int_equal(ck_cell_rule_init(T(CK_T_STRING), "UUID", &r, why, sizeof why),
                   CK_EUNSUPPORTED);
  /* a pairing the sink never writes has no rule either */
  assert_int_equal(ck_cell_rule_init(T(CK_T_STRING), "Int64", &r, why, sizeof why),
                   CK_EUNSUPPORTED);
  assert_non_null(strstr(why, "VARCHAR"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_integers_exact, setup, teardown),
      cmocka_unit_test_setup_teardown(test_floats_by_bits, setup, teardown),
      cmocka_unit_test_setup_teardown(test_decimal_unscaled_at_the_column_scale, setup, teardown),
      cmocka_unit_test_setup_teardown(test_time_ticks_and_days, setup, teardown),
      cmocka_unit_test_setup_teardown(test_strings_by_bytes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_null_equals_only_null, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unsupported_types_by_name, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
