/*
 * DESIGN: unit tests for the CSV format (connectors/format_csv.c): RFC 4180 quoting (commas,
 * doubled quotes and line breaks inside quotes), NULL versus empty string, positional and
 * header-name mapping, errors with messages and rollback, and the encoder's exact output.
 * Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_connectors_util.h"

typedef struct fx {
  ck_arena_t arena;
  ck_schema_t schema;
  ck_options_t opts;
  ck_decoder_t *dec;
  ck_batch_t *batch;
  ck_error_t err;
  int64_t blocks;
} fx_t;

static fx_t *fx_new(const char *spec, bool header) {
  fx_t *f = calloc(1, sizeof *f);
  f->blocks = ck_mem_stats().live_blocks;
  ck_arena_init(&f->arena, 4096);
  f->schema = t_schema(&f->arena, spec);
  f->opts = t_opts(&f->arena, "csv.header", header ? "true" : "false", NULL);
  f->dec = ck_decoder_new(CK_FORMAT_CSV, &f->schema, &f->opts);
  f->batch = t_batch(&f->schema);
  return f;
}

static void fx_free(fx_t *f) {
  ck_batch_free(f->batch);
  ck_decoder_free(f->dec);
  ck_arena_fini(&f->arena);
  assert_int_equal(ck_mem_stats().live_blocks, f->blocks);
  free(f);
}

static int dec(fx_t *f, const char *rec) {
  ck_error_clear(&f->err);
  return ck_decoder_decode(f->dec, rec, strlen(rec), f->batch, &f->err);
}

static void dec_ok(fx_t *f, const char *rec) {
  int rc = dec(f, rec);
  if (rc) fail_msg("unexpected error for [%s]: %s", rec, f->err.message);
}

static void dec_err(fx_t *f, const char *rec, const char *msg) {
  assert_int_equal(dec(f, rec), CK_EDECODE);
  if (!strstr(f->err.message, msg))
    fail_msg("error for [%s] is \"%s\", expected \"%s\"", rec, f->err.message, msg);
}

static void rows_are(fx_t *f, const char *expect) {
  char *got = t_batch_json(&f->schema, f->batch);
  assert_string_equal(got, expect);
  ck_free(got);
}

static void test_csv_positional_every_type(void **state) {
  fx_t *f = fx_new("i INT, b BIGINT, d DOUBLE, f FLOAT, m DECIMAL(10,2), s VARCHAR, t BOOLEAN, ts TIMESTAMP", false);
  assert_true(ck_decoder_multiline(f->dec));
  assert_false(ck_decoder_wants_header(f->dec));
  dec_ok(f, "-2147483648,9223372036854775807,18.25,0.5,12.345,sensor-01,true,1772352000000");
  dec_ok(f, " 7 ,-1, 1e3 ,-0.25, -0.5 ,\" spaced , quoted \",FALSE,0\r\n");
  rows_are(f,
           "{\"b\":9223372036854775807,\"d\":18.25,\"f\":0.5,\"i\":-2147483648,\"m\":12.35,\"s\":\"sensor-01\",\"t\":true,\"ts\":\"2026-03-01 08:00:00.000\"}\n"
           "{\"b\":-1,\"d\":1000,\"f\":-0.25,\"i\":7,\"m\":-0.50,\"s\":\" spaced , quoted \",\"t\":false,\"ts\":\"1970-01-01 00:00:00.000\"}\n");
  fx_free(f);
}

/* A TIMESTAMP field is ISO 8601 / SQL text or epoch milliseconds; a bad one names the field
 * and quotes the value. */
static void test_csv_timestamp_text(void **state) {
  (void)state;
  fx_t *f = fx_new("id INT, ts TIMESTAMP(3)", false);
  dec_ok(f, "1,2026-03-01 08:00:00.123");
  dec_ok(f, "2,2026-03-01T10:00:00+02:00");
  dec_ok(f, "3,\"2026-03-01T08:00:00Z\"");
  dec_ok(f, "4,-1");
  dec_ok(f, "5, 1772352000000 ");
  rows_are(f,
           "{\"id\":1,\"ts\":\"2026-03-01 08:00:00.123\"}\n"
           "{\"id\":2,\"ts\":\"2026-03-01 08:00:00.000\"}\n"
           "{\"id\":3,\"ts\":\"2026-03-01 08:00:00.000\"}\n"
           "{\"id\":4,\"ts\":\"1969-12-31 23:59:59.999\"}\n"
           "{\"id\":5,\"ts\":\"2026-03-01 08:00:00.000\"}\n");
  dec_err(f, "6,2026-13-01 00:00:00", "field 'ts': not a timestamp (expected 'yyyy-MM-dd HH:mm:ss[.SSS]' or ISO 8601, or epoch milliseconds), found '2026-13-01 00:00:00'");
  dec_err(f, "7,soon", "field 'ts': not a timestamp");
  fx_free(f);
}

static void test_csv_quoting(void **state) {
  fx_t *f = fx_new("a VARCHAR, b VARCHAR, c INT", false);
  dec_ok(f, "\"he said \"\"hi\"\"\",\"line\nbreak, and comma\",\"42\"");
  dec_ok(f, "\"\",plain \"inner\" quotes,");
  dec_ok(f, ",,");
  const ck_batch_t *b = f->batch;
  rows_are(f,
           "{\"a\":\"he said \\\"hi\\\"\",\"b\":\"line\\nbreak, and comma\",\"c\":42}\n"
           "{\"a\":\"\",\"b\":\"plain \\\"inner\\\" quotes\",\"c\":null}\n"
           "{\"a\":\"\",\"b\":\"\",\"c\":null}\n");
  /* an empty unquoted VARCHAR field is the empty string, not NULL; an empty INT is NULL */
  assert_true(ck_col_valid(&b->cols[0], 2));
  assert_true(ck_col_valid(&b->cols[1], 2));
  assert_false(ck_col_valid(&b->cols[2], 2));
  fx_free(f);
}

static void test_csv_errors_and_rollback(void **state) {
  fx_t *f = fx_new("n INT, s VARCHAR, d DOUBLE", false);
  dec_ok(f, "1,one,1.5");
  char *before = t_batch_json(&f->schema, f->batch);
  size_t data_len = f->batch->cols[1].data_len;
  dec_err(f, "2,two", "expected 3 fields, found 2");
  dec_err(f, "2,two,2.5,extra", "expected 3 fields, found 4");
  dec_err(f, "abc,two,2.5", "field 'n': expected an integer, found 'abc'");
  dec_err(f, "2,two,2.5x", "field 'd': expected a number, found '2.5x'");
  dec_err(f, "2,two,1e999", "field 'd': out of range for DOUBLE, found '1e999'");
  dec_err(f, "99999999999,two,2.5", "field 'n': out of range for INT, found '99999999999'");
  dec_err(f, "\"\",two,2.5", "field 'n': expected an integer, found ''"); /* quoted empty: not NULL */
  dec_err(f, "2,\"unterminated,2.5", "malformed CSV: field 2 has an opening quote but no closing quote");
  dec_err(f, "2,\"q\"x,2.5", "malformed CSV: field 2 has 'x' after its closing quote");
  dec_err(f, "2,\xff,2.5", "invalid UTF-8 at byte offset 2");
  /* "two" was appended to s before d failed: it must be gone */
  char *after = t_batch_json(&f->schema, f->batch);
  assert_string_equal(after, before);
  assert_int_equal(f->batch->nrows, 1);
  for (int c = 0; c < 3; c++) assert_int_equal(f->batch->cols[c].len, 1);
  assert_int_equal(f->batch->cols[1].data_len, data_len);
  ck_free(before);
  ck_free(after);
  dec_ok(f, ",x,");
  rows_are(f, "{\"d\":1.5,\"n\":1,\"s\":\"one\"}\n{\"d\":null,\"n\":null,\"s\":\"x\"}\n");
  fx_free(f);
}

/* CSV reads numbers by the same grammar as JSON (one scanner in format.c): no NaN, Infinity,
 * hex, '+', leading zeros or bare points; a value past the type's range is an error. */
static void test_csv_number_grammar_is_jsons(void **state) {
  fx_t *f = fx_new("n INT, d DOUBLE, r FLOAT, m DECIMAL(10,2)", false);
  static const char *const not_numbers[] = {"NaN", "nan", "Infinity", "-Infinity", "inf",
                                            "0x10", "+5", "007", "-01", "1.", ".5", "1e",
                                            "1e+", "--1", "1_000", "1,5", "0.5.5", "- 1"};
  char rec[96], msg[96];
  for (size_t i = 0; i < sizeof not_numbers / sizeof *not_numbers; i++) {
    const char *x = not_numbers[i];
    if (strchr(x, ',')) snprintf(rec, sizeof rec, "1,\"%s\",0,0", x);
    else snprintf(rec, sizeof rec, "1,%s,0,0", x);
    snprintf(msg, sizeof msg, "field 'd': expected a number, found '%s'", x);
    dec_err(f, rec, msg);
    snprintf(rec, sizeof rec, "1,0,%s,0", x);
    if (!strchr(x, ',')) dec_err(f, rec, "field 'r': expected a number");
    snprintf(rec, sizeof rec, "1,0,0,%s", x);
    if (!strchr(x, ',')) dec_err(f, rec, "field 'm': expected a number that fits DECIMAL(10, 2)");
    snprintf(rec, sizeof rec, "%s,0,0,0", x);
    if (!strchr(x, ',')) dec_err(f, rec, "field 'n': expected an integer");
  }
  dec_err(f, "1,1e999,0,0", "field 'd': out of range for DOUBLE, found '1e999'");
  dec_err(f, "1,-1e999,0,0", "field 'd': out of range for DOUBLE, found '-1e999'");
  dec_err(f, "1,0,1e39,0", "field 'r': out of range for FLOAT, found '1e39'");
  dec_err(f, "1.0,0,0,0", "field 'n': expected an integer, found '1.0'");
  dec_err(f, "1e2,0,0,0", "field 'n': expected an integer, found '1e2'");
  dec_ok(f, "-0,0.5e-2,3.4028234e38,1.5E1");
  dec_ok(f, "0,-1.7976931348623157e308,1e-50, -2.125 ");
  rows_are(f,
           "{\"d\":0.005,\"m\":15.00,\"n\":0,\"r\":3.4028235e+38}\n"
           "{\"d\":-1.7976931348623157e+308,\"m\":-2.13,\"n\":0,\"r\":0}\n");
  fx_free(f);
}

static void test_csv_header_maps_by_name(void **state) {
  fx_t *f = fx_new("sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE, missing INT", true);
  assert_true(ck_decoder_wants_header(f->dec));
  ck_error_t err;
  ck_error_clear(&err);
  const char *hdr = "TEMP_C,extra,\"sensor_id\",ts\r\n";
  assert_int_equal(ck_decoder_header(f->dec, hdr, strlen(hdr), &err), 0);
  dec_ok(f, "19.1,ignored,sensor-03,1772352000000");
  dec_ok(f, ",x,sensor-04,");
  rows_are(f,
           "{\"missing\":null,\"sensor_id\":\"sensor-03\",\"temp_c\":19.1,\"ts\":1772352000000}\n"
           "{\"missing\":null,\"sensor_id\":\"sensor-04\",\"temp_c\":null,\"ts\":null}\n");
  dec_err(f, "1,2,3", "expected 4 fields as in the header, found 3");
  assert_int_equal(f->batch->nrows, 2);
  fx_free(f);
}

static void test_csv_header_names_fold_unicode_case(void **state) {
  fx_t *f = fx_new("stra\xc3\x9f" "e VARCHAR, \xc3\xa9t\xc3\xa9 INT", true); /* straße, été */
  ck_error_t err;
  ck_error_clear(&err);
  const char *hdr = "\xc3\x89T\xc3\x89,STRASSE\n";                            /* ÉTÉ, STRASSE */
  assert_int_equal(ck_decoder_header(f->dec, hdr, strlen(hdr), &err), 0);
  dec_ok(f, "7,x");
  rows_are(f, "{\"stra\xc3\x9f" "e\":\"x\",\"\xc3\xa9t\xc3\xa9\":7}\n");
  fx_free(f);
}

static void test_csv_encoder(void **state) {
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_schema_t s = t_schema(&arena, "id BIGINT, name VARCHAR, d DOUBLE, m DECIMAL(6,3), ok BOOLEAN");
  ck_batch_t *b = t_batch(&s);
  ck_col_append_i64(&b->cols[0], 1);
  ck_col_append_str(&b->cols[1], "plain", 5);
  ck_col_append_f64(&b->cols[2], 0.1);
  ck_col_append_dec(&b->cols[3], -1500);
  ck_col_append_bool(&b->cols[4], true);
  ck_col_append_null(&b->cols[0]);
  ck_col_append_str(&b->cols[1], "a,\"b\"\nc", 7);
  ck_col_append_null(&b->cols[2]);
  ck_col_append_null(&b->cols[3]);
  ck_col_append_bool(&b->cols[4], false);
  ck_col_append_i64(&b->cols[0], -3);
  ck_col_append_str(&b->cols[1], "", 0);
  ck_col_append_f64(&b->cols[2], 1e300);
  ck_col_append_dec(&b->cols[3], 7);
  ck_col_append_null(&b->cols[4]);
  ck_batch_seal(b);
  ck_encoder_t *enc = ck_encoder_new(CK_FORMAT_CSV, &s);
  ck_buf_t out;
  ck_buf_init(&out);
  ck_encoder_header(enc, &out);
  ck_encoder_batch(enc, b, &out);
  assert_string_equal(out.data,
                      "id,name,d,m,ok\n"
                      "1,plain,0.1,-1.500,true\n"
                      ",\"a,\"\"b\"\"\nc\",,,false\n"
                      "-3,\"\",1e+300,0.007,\n");
  /* and it reads back to the same rows */
  ck_options_t opts = t_opts(&arena, "csv.header", "true", NULL);
  ck_decoder_t *dec = ck_decoder_new(CK_FORMAT_CSV, &s, &opts);
  ck_batch_t *back = t_batch(&s);
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_decoder_header(dec, "id,name,d,m,ok", 14, &err), 0);
  const char *lines[] = {"1,plain,0.1,-1.500,true", ",\"a,\"\"b\"\"\nc\",,,false", "-3,\"\",1e+300,0.007,"};
  for (int i = 0; i < 3; i++) assert_int_equal(ck_decoder_decode(dec, lines[i], strlen(lines[i]), back, &err), 0);
  char *j1 = t_batch_json(&s, b), *j2 = t_batch_json(&s, back);
  assert_string_equal(j2, j1);
  ck_free(j1);
  ck_free(j2);
  /* changelog rows carry a trailing op field */
  ck_buf_reset(&out);
  ck_batch_set_kind(b, 1, CK_ROW_DELETE);
  ck_encoder_row(enc, b, 1, &out);
  ck_buf_putc(&out, '|');
  ck_encoder_row(enc, b, 0, &out);
  assert_string_equal(out.data, ",\"a,\"\"b\"\"\nc\",,,false,delete|1,plain,0.1,-1.500,true,insert");
  ck_buf_fini(&out);
  ck_encoder_free(enc);
  ck_decoder_free(dec);
  ck_batch_free(back);
  ck_batch_free(b);
  ck_arena_fini(&arena);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_csv_positional_every_type),
      cmocka_unit_test(test_csv_timestamp_text),
      cmocka_unit_test(test_csv_quoting),
      cmocka_unit_test(test_csv_errors_and_rollback),
      cmocka_unit_test(test_csv_number_grammar_is_jsons),
      cmocka_unit_test(test_csv_header_maps_by_name),
      cmocka_unit_test(test_csv_header_names_fold_unicode_case),
      cmocka_unit_test(test_csv_encoder),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
