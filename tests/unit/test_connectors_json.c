/*
 * DESIGN: unit tests for the JSON format (connectors/format_json.c): the decoder on every
 * column type, escapes and unicode, NULLs and missing fields, name matching, every class of
 * error with its message, all-or-nothing rollback (the batch is byte-for-byte unchanged after
 * a bad record), invalid UTF-8 and oversized records; the encoder's exact output (key order,
 * number formatting, changelog op). Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include "test_connectors_util.h"

typedef struct fx {
  ck_arena_t arena;
  ck_schema_t schema;
  ck_decoder_t *dec;
  ck_batch_t *batch;
  ck_error_t err;
  int64_t blocks;
} fx_t;

static fx_t *fx_new(const char *spec) {
  fx_t *f = calloc(1, sizeof *f);
  f->blocks = ck_mem_stats().live_blocks;
  ck_arena_init(&f->arena, 4096);
  f->schema = t_schema(&f->arena, spec);
  f->dec = ck_decoder_new(CK_FORMAT_JSON, &f->schema, NULL);
  f->batch = t_batch(&f->schema);
  return f;
}

static void fx_free(fx_t *f) {
  ck_batch_free(f->batch);
  ck_decoder_free(f->dec);
  ck_arena_fini(&f->arena);
  assert_int_equal(ck_mem_stats().live_blocks, f->blocks); /* nothing leaked */
  free(f);
}

static int dec(fx_t *f, const char *rec) {
  ck_error_clear(&f->err);
  return ck_decoder_decode(f->dec, rec, strlen(rec), f->batch, &f->err);
}

static void dec_ok(fx_t *f, const char *rec) {
  int rc = dec(f, rec);
  if (rc) fprintf(stderr, "unexpected error for %s: %s\n", rec, f->err.message);
  assert_int_equal(rc, 0);
}

static void dec_err(fx_t *f, const char *rec, const char *msg) {
  int rc = dec(f, rec);
  assert_int_equal(rc, CK_EDECODE);
  assert_int_equal(f->err.code, CK_EDECODE);
  if (!strstr(f->err.message, msg))
    fail_msg("error for %s is \"%s\", expected it to contain \"%s\"", rec, f->err.message, msg);
}

static void assert_str_at(const ck_col_t *col, size_t i, const char *expect, size_t n) {
  assert_true(ck_col_valid(col, i));
  size_t len;
  const char *s = ck_col_str(col, i, &len);
  assert_int_equal(len, n);
  assert_memory_equal(s, expect, n);
}

/* A batch's full observable contents, for "unchanged" checks. */
static char *snapshot_of(fx_t *f) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_buf_printf(&b, "nrows=%zu", f->batch->nrows);
  for (int c = 0; c < f->batch->ncols; c++) {
    const ck_col_t *col = &f->batch->cols[c];
    ck_buf_printf(&b, "|c%d len=%zu data=%zu:", c, col->len, col->data_len);
    for (size_t i = 0; i < col->len; i++) ck_buf_putc(&b, ck_col_valid(col, i) ? 'v' : 'n');
  }
  char *rows = t_batch_json(&f->schema, f->batch);
  ck_buf_puts(&b, "\n");
  ck_buf_puts(&b, rows);
  ck_free(rows);
  /* validity of the slots just past the rows: a rolled-back NULL must not linger there */
  for (int c = 0; c < f->batch->ncols; c++) {
    const ck_col_t *col = &f->batch->cols[c];
    for (size_t i = col->len; i < col->cap && i < col->len + 8; i++)
      ck_buf_putc(&b, ck_col_valid(col, i) ? 'V' : 'N');
  }
  return ck_buf_detach(&b);
}

#define ALL_TYPES "i INT, b BIGINT, d DOUBLE, f FLOAT, m DECIMAL(10,2), s VARCHAR, t BOOLEAN, ts TIMESTAMP"

static void test_json_every_type(void **state) {
  fx_t *f = fx_new(ALL_TYPES);
  dec_ok(f, "{\"i\": -2147483648, \"b\": 9223372036854775807, \"d\": 18.25, \"f\": 0.1, "
            "\"m\": 12.3, \"s\": \"sensor-01\", \"t\": true, \"ts\": 1772352000000}");
  dec_ok(f, "{\"i\":2147483647,\"b\":-9223372036854775808,\"d\":-1e-3,\"f\":-2.5e2,"
            "\"m\":-0.07,\"s\":\"\",\"t\":false,\"ts\":0}");
  ck_batch_t *b = f->batch;
  assert_int_equal(b->nrows, 2);
  for (int c = 0; c < b->ncols; c++) assert_int_equal(b->cols[c].len, 2);
  assert_int_equal(ck_col_i32(&b->cols[0], 0), INT32_MIN);
  assert_int_equal(ck_col_i32(&b->cols[0], 1), INT32_MAX);
  assert_true(ck_col_i64(&b->cols[1], 0) == INT64_MAX);
  assert_true(ck_col_i64(&b->cols[1], 1) == INT64_MIN);
  assert_true(ck_col_f64(&b->cols[2], 0) == 18.25);
  assert_true(ck_col_f64(&b->cols[2], 1) == -0.001);
  assert_true(ck_col_f32(&b->cols[3], 0) == 0.1f);
  assert_true(ck_col_f32(&b->cols[3], 1) == -250.0f);
  assert_true(ck_col_dec(&b->cols[4], 0) == 1230);
  assert_true(ck_col_dec(&b->cols[4], 1) == -7);
  assert_str_at(&b->cols[5], 0, "sensor-01", 9);
  assert_str_at(&b->cols[5], 1, "", 0);
  assert_true(ck_col_bool(&b->cols[6], 0));
  assert_false(ck_col_bool(&b->cols[6], 1));
  assert_true(ck_col_i64(&b->cols[7], 0) == 1772352000000LL);
  assert_true(ck_col_i64(&b->cols[7], 1) == 0);
  for (int c = 0; c < b->ncols; c++) {
    assert_true(ck_col_valid(&b->cols[c], 0));
    assert_true(ck_col_valid(&b->cols[c], 1));
  }
  fx_free(f);
}

static void test_json_doubles_round_exactly(void **state) {
  fx_t *f = fx_new("d DOUBLE");
  const char *nums[] = {"0.1", "0.3", "123456.789", "1e22", "1e23", "4.9e-324", "1.7976931348623157e308",
                        "2.2250738585072014e-308", "9007199254740993", "123456789012345678901234567890",
                        "0.000000000000000000000000000001", "-0", "3.141592653589793238462643383279"};
  for (size_t i = 0; i < CK_ARRAY_LEN(nums); i++) {
    char rec[128];
    snprintf(rec, sizeof rec, "{\"d\":%s}", nums[i]);
    dec_ok(f, rec);
    double got = ck_col_f64(&f->batch->cols[0], i), want = strtod(nums[i], NULL);
    if (memcmp(&got, &want, sizeof got) != 0) fail_msg("%s decoded as %.17g, want %.17g", nums[i], got, want);
  }
  dec_err(f, "{\"d\":1e400}", "field 'd': 1e400 is out of range for DOUBLE");
  fx_free(f);
}

/* The same not-numbers the CSV test refuses (one grammar, format.c): each is a syntax error. */
static void test_json_number_grammar_refuses_what_csv_refuses(void **state) {
  fx_t *f = fx_new("d DOUBLE");
  static const char *const bad[] = {"NaN", "Infinity", "-Infinity", "0x10", "+5", "007",
                                    "-01", "1.", ".5", "1e", "1e+", "--1"};
  for (size_t i = 0; i < CK_ARRAY_LEN(bad); i++) {
    char rec[64];
    snprintf(rec, sizeof rec, "{\"d\":%s}", bad[i]);
    assert_int_equal(dec(f, rec), CK_EDECODE);
  }
  dec_err(f, "{\"d\":-1e999}", "field 'd': -1e999 is out of range for DOUBLE");
  fx_free(f);
  f = fx_new("r FLOAT");
  dec_err(f, "{\"r\":1e39}", "field 'r': 1e39 is out of range for FLOAT");
  fx_free(f);
}

static void test_json_decimal_from_text(void **state) {
  fx_t *f = fx_new("m DECIMAL(10,2)");
  dec_ok(f, "{\"m\":12.345}");     /* rounds half away from zero */
  dec_ok(f, "{\"m\":-0.005}");
  dec_ok(f, "{\"m\":1.5e2}");      /* exponent shifts the point */
  dec_ok(f, "{\"m\":25E-3}");
  dec_ok(f, "{\"m\":99999999.99}");
  dec_ok(f, "{\"m\":0.1}");
  const ck_col_t *c = &f->batch->cols[0];
  assert_true(ck_col_dec(c, 0) == 1235);
  assert_true(ck_col_dec(c, 1) == -1);
  assert_true(ck_col_dec(c, 2) == 15000);
  assert_true(ck_col_dec(c, 3) == 3);
  assert_true(ck_col_dec(c, 4) == 9999999999LL);
  assert_true(ck_col_dec(c, 5) == 10); /* exact: no binary floating point on the way */
  dec_err(f, "{\"m\":123456789.5}", "field 'm': 123456789.5 does not fit DECIMAL(10, 2)");
  dec_err(f, "{\"m\":1e9}", "field 'm': 1e9 does not fit DECIMAL(10, 2)");
  dec_err(f, "{\"m\":\"12.5\"}", "field 'm': expected a number, found string");
  fx_free(f);
}

/* A TIMESTAMP column reads ISO 8601 and SQL text (zone offsets moved to UTC, 'T' or a blank,
 * seconds and fraction optional, fraction kept to the millisecond) as well as epoch numbers;
 * the values are checked against epoch milliseconds worked out by hand. */
static void test_json_timestamp_text(void **state) {
  (void)state;
  fx_t *f = fx_new("ts TIMESTAMP(3), l TIMESTAMP_LTZ(3)");
  static const struct { const char *text; int64_t ms; } cases[] = {
      {"2026-03-01 08:00:00", 1772352000000},
      {"2026-03-01T08:00:00", 1772352000000},
      {"2026-03-01T08:00:00Z", 1772352000000},
      {"2026-03-01 08:00:00.123", 1772352000123},
      {"2026-03-01T08:00:00.1234567Z", 1772352000123},
      {"2026-03-01T08:00:00.5", 1772352000500},
      {"2026-03-01T10:30:00+02:30", 1772352000000},
      {"2026-03-01T10:30:00+0230", 1772352000000},
      {"2026-03-01T03:00:00-05", 1772352000000},
      {"2026-03-01 08:00", 1772352000000},
      {"2026-03-01", 1772323200000},
      {"1969-12-31 23:59:59.999", -1},
  };
  char rec[200];
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    snprintf(rec, sizeof rec, "{\"ts\":\"%s\",\"l\":\"%s\"}", cases[i].text, cases[i].text);
    dec_ok(f, rec);
    size_t row = f->batch->nrows - 1;
    if (ck_col_i64(&f->batch->cols[0], row) != cases[i].ms ||
        ck_col_i64(&f->batch->cols[1], row) != cases[i].ms)
      fail_msg("'%s' read as %lld, expected %lld", cases[i].text,
               (long long)ck_col_i64(&f->batch->cols[0], row), (long long)cases[i].ms);
  }
  dec_ok(f, "{\"ts\":1772352000000,\"l\":-1}");
  assert_true(ck_col_i64(&f->batch->cols[0], f->batch->nrows - 1) == 1772352000000);
  fx_free(f);
}

/* TIMESTAMP is written as Flink's SQL text, TIMESTAMP_LTZ with a trailing Z, and the window
 * bounds of a window over a BIGINT column (CK_TS_EPOCH) as the epoch number they always were. */
static void test_json_timestamp_encode(void **state) {
  (void)state;
  ck_arena_t arena;
  ck_arena_init(&arena, 0);
  ck_schema_t s = ck_schema_make(&arena, 3);
  s.names[0] = "a", s.names[1] = "b", s.names[2] = "c";
  s.types[0] = ck_type_timestamp(3, 0);
  s.types[1] = ck_type_timestamp(3, CK_TS_LTZ);
  s.types[2] = ck_type_timestamp(3, CK_TS_EPOCH);
  ck_batch_t *b = ck_batch_new(3, s.types, 2);
  for (int c = 0; c < 3; c++) ck_col_append_i64(&b->cols[c], 1772352000123);
  for (int c = 0; c < 3; c++) ck_col_append_null(&b->cols[c]);
  b->nrows = 2;
  ck_encoder_t *enc = ck_encoder_new(CK_FORMAT_JSON, &s);
  ck_buf_t out;
  ck_buf_init(&out);
  ck_encoder_batch(enc, b, &out);
  ck_buf_putc(&out, 0);
  assert_string_equal(out.data, "{\"a\":\"2026-03-01 08:00:00.123\",\"b\":\"2026-03-01 08:00:00.123Z\",\"c\":1772352000123}\n"
                                "{\"a\":null,\"b\":null,\"c\":null}\n");
  ck_encoder_free(enc);
  ck_buf_reset(&out);
  enc = ck_encoder_new(CK_FORMAT_CSV, &s);
  ck_encoder_batch(enc, b, &out);
  ck_buf_putc(&out, 0);
  assert_string_equal(out.data, "2026-03-01 08:00:00.123,2026-03-01 08:00:00.123Z,1772352000123\n,,\n");
  ck_encoder_free(enc);
  ck_buf_fini(&out);
  ck_batch_free(b);
  ck_arena_fini(&arena);
}

static void test_json_integer_errors(void **state) {
  fx_t *f = fx_new("i INT, b BIGINT, ts TIMESTAMP, t BOOLEAN");
  dec_err(f, "{\"i\":1.5}", "field 'i': expected an integer, found 1.5");
  dec_err(f, "{\"i\":1e3}", "field 'i': expected an integer, found 1e3");
  dec_err(f, "{\"i\":2147483648}", "field 'i': 2147483648 is out of range for INT");
  dec_err(f, "{\"i\":-2147483649}", "field 'i': -2147483649 is out of range for INT");
  dec_err(f, "{\"b\":9223372036854775808}", "field 'b': 9223372036854775808 is out of range for BIGINT");
  dec_err(f, "{\"b\":123456789012345678901234567890}", "out of range for BIGINT");
  dec_err(f, "{\"b\":\"12\"}", "field 'b': expected an integer, found string");
  dec_err(f, "{\"ts\":\"yesterday\"}", "field 'ts': 'yesterday' is not a timestamp");
  dec_err(f, "{\"ts\":\"2026-02-30 00:00:00\"}", "field 'ts': '2026-02-30 00:00:00' is not a timestamp");
  dec_err(f, "{\"ts\":\"2026-03-01 10:00:00+25:00\"}", "is not a timestamp");
  dec_err(f, "{\"ts\":1.5}", "field 'ts': expected a timestamp");
  dec_err(f, "{\"ts\":true}", "field 'ts': expected a timestamp (text or integer epoch milliseconds), found boolean");
  dec_err(f, "{\"t\":1}", "field 't': expected a boolean, found number");
  dec_err(f, "{\"t\":\"true\"}", "field 't': expected a boolean, found string");
  dec_err(f, "{\"i\":[1]}", "field 'i': expected an integer, found array");
  dec_err(f, "{\"i\":{\"v\":1}}", "field 'i': expected an integer, found object");
  assert_int_equal(f->batch->nrows, 0);
  for (int c = 0; c < f->batch->ncols; c++) assert_int_equal(f->batch->cols[c].len, 0);
  fx_free(f);
}

static void test_json_the_spec_example_message(void **state) {
  fx_t *f = fx_new("sensor_id VARCHAR, ts BIGINT, temp_c DOUBLE");
  dec_err(f, "{\"sensor_id\": \"sensor-03\", \"ts\": 1772352000000, \"temp_c\": \"19.1\"}",
          "field 'temp_c': expected a number, found string");
  assert_string_equal(f->err.message, "field 'temp_c': expected a number, found string");
  fx_free(f);
}

static void test_json_string_escapes_and_unicode(void **state) {
  fx_t *f = fx_new("s VARCHAR");
  dec_ok(f, "{\"s\":\"q\\\"b\\\\s\\/n\\nr\\rt\\tb\\bf\\f\"}");
  dec_ok(f, "{\"s\":\"\\u00e9\\u65e5\\uD83D\\uDE00\\u0041\"}"); /* é 日 😀 A */
  dec_ok(f, "{\"s\":\"h\xc3\xa9llo \xf0\x9f\x98\x80\"}");          /* raw UTF-8 passes through */
  dec_ok(f, "{\"s\":\"nul\\u0000inside\"}");
  dec_ok(f, "{\"s\":\"{\\\"not\\\": \\\"parsed\\\"}\"}");
  const ck_col_t *c = &f->batch->cols[0];
  assert_str_at(c, 0, "q\"b\\s/n\nr\rt\tb\bf\f", 16);
  assert_str_at(c, 1, "\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80" "A", 10);
  assert_str_at(c, 2, "h\xc3\xa9llo \xf0\x9f\x98\x80", 11);
  assert_str_at(c, 3, "nul\0inside", 10);
  assert_str_at(c, 4, "{\"not\": \"parsed\"}", 17);
  dec_err(f, "{\"s\":\"\\uD83D\"}", "unpaired UTF-16 high surrogate");
  dec_err(f, "{\"s\":\"\\uD83Dx\"}", "unpaired UTF-16 high surrogate");
  dec_err(f, "{\"s\":\"\\uDE00\"}", "unpaired UTF-16 low surrogate");
  dec_err(f, "{\"s\":\"\\u12G4\"}", "four hex digits");
  dec_err(f, "{\"s\":\"\\x\"}", "invalid escape");
  dec_err(f, "{\"s\":\"a\tb\"}", "control characters must be escaped");
  dec_err(f, "{\"s\":\"abc}", "unterminated string");
  assert_int_equal(f->batch->nrows, 5);
  fx_free(f);
}

/* The decoder's fast paths (strings scanned 16 bytes at a time, escapes unescaped in one pass,
 * expected keys matched in schema order, plain integers): every length and escape position
 * around the 16-byte steps, keys in any order, integers at their edges. */
static void test_json_fast_paths_agree_with_the_rules(void **state) {
  fx_t *f = fx_new("a BIGINT, s VARCHAR, i INT");
  size_t rows = 0;
  for (int len = 0; len <= 40; len++) {
    for (int at = -1; at < len; at++) { /* at: where a \n escape replaces a letter, -1 none */
      char want[64], rec[160];
      char *w = want, *r = rec;
      r += sprintf(r, "{\"i\": 7, \"s\": \"");
      for (int k = 0; k < len; k++) {
        if (k == at) {
          *r++ = '\\', *r++ = 'n';
          *w++ = '\n';
        } else {
          *r++ = *w++ = (char)('a' + k % 26);
        }
      }
      *w = 0;
      sprintf(r, "\", \"a\":-%d}", len); /* keys in another order than the schema's */
      dec_ok(f, rec);
      const ck_col_t *c = &f->batch->cols[1];
      assert_str_at(c, rows, want, strlen(want));
      assert_true(ck_col_i64(&f->batch->cols[0], rows) == -len);
      assert_int_equal(ck_col_i32(&f->batch->cols[2], rows), 7);
      rows++;
    }
  }
  /* an escape as the very last thing in the record */
  dec_ok(f, "{\"s\":\"end\\\"\"}");
  assert_str_at(&f->batch->cols[1], rows++, "end\"", 4);
  dec_ok(f, "{\"a\":-0,\"i\":-0}");
  assert_true(ck_col_i64(&f->batch->cols[0], rows) == 0);
  assert_int_equal(ck_col_i32(&f->batch->cols[2], rows), 0);
  rows++;
  dec_ok(f, "{ \"a\" : 9223372036854775807 , \"i\" : -2147483648 }");
  assert_true(ck_col_i64(&f->batch->cols[0], rows) == INT64_MAX);
  assert_int_equal(ck_col_i32(&f->batch->cols[2], rows), INT32_MIN);
  rows++;
  dec_err(f, "{\"a\":01}", "");
  dec_err(f, "{\"a\":-}", "");
  dec_err(f, "{\"i\":2147483648}", "out of range for INT");
  assert_int_equal(f->batch->nrows, rows);
  fx_free(f);
}

static void test_json_string_column_takes_any_value_as_text(void **state) {
  fx_t *f = fx_new("s VARCHAR");
  dec_ok(f, "{\"s\": {\"a\": [1, \"}\", {\"b\": null}]} }");
  dec_ok(f, "{\"s\": 12.50}");
  dec_ok(f, "{\"s\": true}");
  dec_ok(f, "{\"s\": [] }");
  const ck_col_t *c = &f->batch->cols[0];
  assert_str_at(c, 0, "{\"a\": [1, \"}\", {\"b\": null}]}", strlen("{\"a\": [1, \"}\", {\"b\": null}]}"));
  assert_str_at(c, 1, "12.50", 5);
  assert_str_at(c, 2, "true", 4);
  assert_str_at(c, 3, "[]", 2);
  fx_free(f);
}

static void test_json_nulls_missing_and_extra_fields(void **state) {
  fx_t *f = fx_new("a INT, s VARCHAR, d DOUBLE");
  dec_ok(f, "{\"a\": null, \"s\": null, \"d\": null}");
  dec_ok(f, "{}");
  dec_ok(f, "{\"zzz\": [1, {\"x\": \"y\\u00e9\"}, [[]]], \"s\": \"v\", \"more\": {\"a\": 5}, \"n\": -1.5e3, \"t\": true, \"u\": null}");
  dec_ok(f, "  \t{ \"d\" : 2.5 , \"a\" : 7 }  \r\n");
  const ck_batch_t *b = f->batch;
  assert_int_equal(b->nrows, 4);
  for (int c = 0; c < 3; c++) {
    assert_false(ck_col_valid(&b->cols[c], 0));
    assert_false(ck_col_valid(&b->cols[c], 1));
  }
  assert_false(ck_col_valid(&b->cols[0], 2)); /* the nested "a" is not the column */
  assert_str_at(&b->cols[1], 2, "v", 1);
  assert_false(ck_col_valid(&b->cols[2], 2));
  assert_int_equal(ck_col_i32(&b->cols[0], 3), 7);
  assert_false(ck_col_valid(&b->cols[1], 3));
  assert_true(ck_col_f64(&b->cols[2], 3) == 2.5);
  fx_free(f);
}

static void test_json_names_match_case_insensitively(void **state) {
  fx_t *f = fx_new("sensorId VARCHAR, Temp DOUBLE");
  dec_ok(f, "{\"SENSORID\":\"x\",\"temp\":1.5}");
  dec_ok(f, "{\"Temp\":2.5,\"sensorId\":\"y\"}");          /* out of order */
  dec_ok(f, "{\"sensor\\u0049d\":\"esc\"}");               /* escaped key */
  const ck_batch_t *b = f->batch;
  assert_str_at(&b->cols[0], 0, "x", 1);
  assert_true(ck_col_f64(&b->cols[1], 0) == 1.5);
  assert_str_at(&b->cols[0], 1, "y", 1);
  assert_true(ck_col_f64(&b->cols[1], 1) == 2.5);
  assert_str_at(&b->cols[0], 2, "esc", 3);
  assert_false(ck_col_valid(&b->cols[1], 2));
  fx_free(f);
}

/* Names fold with Unicode case folding, not ASCII only (UPPER/LOWER's ICU): GRÖSSE is größe. */
static void test_json_names_match_with_unicode_case_folding(void **state) {
  fx_t *f = fx_new("gr\xc3\xb6\xc3\x9f" "e DOUBLE, \xc3\xa9t\xc3\xa9 INT");   /* größe, été */
  dec_ok(f, "{\"GR\xc3\x96SSE\":1.5,\"\xc3\x89T\xc3\x89\":2}");               /* GRÖSSE, ÉTÉ */
  dec_ok(f, "{\"Gr\xc3\xb6sse\":2.5,\"\xc3\xa9t\xc3\xa8\":3}");               /* Grösse; étè is another word */
  const ck_batch_t *b = f->batch;
  assert_true(ck_col_f64(&b->cols[0], 0) == 1.5);
  assert_int_equal(ck_col_i32(&b->cols[1], 0), 2);
  assert_true(ck_col_f64(&b->cols[0], 1) == 2.5);
  assert_false(ck_col_valid(&b->cols[1], 1));
  fx_free(f);
}

static void test_json_repeated_field_last_wins(void **state) {
  fx_t *f = fx_new("s VARCHAR, n INT");
  dec_ok(f, "{\"s\":\"first\",\"n\":null,\"s\":\"second\",\"n\":3}");
  dec_ok(f, "{\"n\":4}");
  const ck_batch_t *b = f->batch;
  assert_int_equal(b->cols[0].len, 2);
  assert_str_at(&b->cols[0], 0, "second", 6);
  assert_int_equal(ck_col_i32(&b->cols[1], 0), 3);
  assert_true(ck_col_valid(&b->cols[1], 0)); /* the earlier null was undone */
  assert_false(ck_col_valid(&b->cols[0], 1));
  assert_int_equal(b->cols[0].data_len, 6);
  fx_free(f);
}

static void test_json_bad_record_leaves_batch_unchanged(void **state) {
  fx_t *f = fx_new("a INT, s VARCHAR, d DOUBLE, n BIGINT");
  dec_ok(f, "{\"a\":1,\"s\":\"one\",\"d\":1.5,\"n\":10}");
  dec_ok(f, "{\"a\":2,\"s\":\"two\",\"n\":20}");
  char *before = snapshot_of(f);
  /* each fails after some columns were appended: a NULL, a string, a number */
  const char *bad[] = {
      "{\"a\":null,\"s\":\"long string that was appended\",\"d\":\"x\"}",
      "{\"s\":\"abc\",\"a\":3,\"d\":2.0,\"n\":1.5}",
      "{\"a\":null,\"s\":null,\"d\":null,\"n\":null,\"x\":[1,2}",
      "{\"a\":4,\"s\":\"t\"} trailing",
      "{\"a\":5,\"s\":\"\xff\"}",
      "{\"a\":6,\"s\":\"dup\",\"s\":7,\"d\":\"bad\"}",
  };
  for (size_t i = 0; i < CK_ARRAY_LEN(bad); i++) {
    assert_int_equal(dec(f, bad[i]), CK_EDECODE);
    char *after = snapshot_of(f);
    if (strcmp(before, after) != 0) fail_msg("record %zu changed the batch:\n%s\nvs\n%s", i, before, after);
    ck_free(after);
  }
  ck_free(before);
  /* the next good record lands in row 2 with its own values, and a column omitted there is NULL */
  dec_ok(f, "{\"a\":3,\"s\":\"three\",\"d\":3.5}");
  char *row = t_row_json(&f->schema, f->batch, 2);
  assert_string_equal(row, "{\"a\":3,\"d\":3.5,\"n\":null,\"s\":\"three\"}");
  ck_free(row);
  assert_int_equal(f->batch->nrows, 3);
  fx_free(f);
}

static void test_json_invalid_utf8(void **state) {
  fx_t *f = fx_new("s VARCHAR");
  dec_err(f, "{\"s\":\"a\xff\"}", "invalid UTF-8 at byte offset 7");
  dec_err(f, "{\"s\":\"\xc0\xaf\"}", "invalid UTF-8");         /* overlong '/' */
  dec_err(f, "{\"s\":\"\xe0\x80\xaf\"}", "invalid UTF-8");     /* overlong, 3 bytes */
  dec_err(f, "{\"s\":\"\xed\xa0\x80\"}", "invalid UTF-8");     /* encoded surrogate */
  dec_err(f, "{\"s\":\"\xf4\x90\x80\x80\"}", "invalid UTF-8"); /* above U+10FFFF */
  dec_err(f, "{\"s\":\"\xe6\x97\"}", "invalid UTF-8");         /* truncated sequence */
  dec_err(f, "{\"other\":\"\x80\",\"s\":\"ok\"}", "invalid UTF-8"); /* even in ignored fields */
  assert_int_equal(f->batch->nrows, 0);
  assert_int_equal(f->batch->cols[0].len, 0);
  dec_ok(f, "{\"s\":\"\xf4\x8f\xbf\xbf\xef\xbf\xbf\"}"); /* U+10FFFF and U+FFFF are fine */
  fx_free(f);
}

/* Integers of every length from 1 to 19 digits, signed or not, followed by each kind of byte
 * that can end one, near and far from the end of the record: the same values as strtoll
 * (the fast path takes up to eight digits at a time; 19 digits go the general way). */
static void test_json_integers_of_every_length(void **state) {
  fx_t *f = fx_new("n BIGINT, s VARCHAR");
  const char *digits = "9182736450918273645";
  const char *tails[] = {"}", ",\"s\":\"x\"}", " }", "\t,\"s\":\"0123456789\"}"};
  char rec[128], num[32];
  size_t row = 0;
  for (int len = 1; len <= 19; len++)
    for (int neg = 0; neg < 2; neg++)
      for (size_t t = 0; t < sizeof tails / sizeof *tails; t++) {
        snprintf(num, sizeof num, "%s%.*s", neg ? "-" : "", len, digits);
        snprintf(rec, sizeof rec, "{\"n\":%s%s", num, tails[t]);
        dec_ok(f, rec);
        assert_int_equal(ck_col_i64(&f->batch->cols[0], row), strtoll(num, NULL, 10));
        row++;
      }
  dec_err(f, "{\"n\":12345678901234567890}", "n"); /* 20 digits: out of range */
  dec_ok(f, "{\"n\":0}");
  dec_err(f, "{\"n\":1234567.5e1}", "expected an integer"); /* the general path says so */
  fx_free(f);
}

/* The JSON decoder checks UTF-8 where it scans strings, not in a pass before: every place a
 * bad byte can sit still gives the same error, at the first bad byte, before any other. */
static void test_json_utf8_checked_in_place(void **state) {
  fx_t *f = fx_new("s VARCHAR, n BIGINT");
  dec_err(f, "{\"s\":\"abc\\n\xc3\"}", "invalid UTF-8 at byte offset 11 (byte 0xc3)");
  dec_err(f, "{\"s\xff\":\"x\"}", "invalid UTF-8 at byte offset 3");      /* in a key */
  dec_err(f, "{\"s\":\"x\"\xff}", "invalid UTF-8 at byte offset 8");      /* between fields */
  dec_err(f, "{\"o\":{\"a\":[1,\"\xe6\x97\"]},\"s\":\"x\"}", "invalid UTF-8 at byte offset 14");
  dec_err(f, "{\"n\":\"text\",\"s\":\"\x80\"}", "invalid UTF-8 at byte offset 17"); /* after a type error */
  dec_err(f, "{\"n\":1x\xff}", "invalid UTF-8 at byte offset 7");          /* after a syntax error */
  dec_err(f, "\xef\xbb\xbf{\"s\":\"x\"}", "expected a JSON object");       /* a BOM is not JSON */
  assert_int_equal(f->batch->nrows, 0);
  /* valid characters of every length, alone, between escapes, and past 16-byte chunks */
  dec_ok(f, "{\"s\":\"\xc3\xa9\\t\xe6\xbc\xa2\\u00e9\xf0\x9f\x98\x80 0123456789abcdef\xc3\xa9\",\"n\":1}");
  dec_ok(f, "{\"s\":\"0123456789abcdef0123456789\xe2\x82\xac\"}");
  assert_int_equal(f->batch->nrows, 2);
  size_t n;
  const char *v = ck_col_str(&f->batch->cols[0], 0, &n);
  const char want[] = "\xc3\xa9\t\xe6\xbc\xa2\xc3\xa9\xf0\x9f\x98\x80 0123456789abcdef\xc3\xa9";
  assert_int_equal(n, sizeof want - 1);
  assert_memory_equal(v, want, n);
  v = ck_col_str(&f->batch->cols[0], 1, &n);
  assert_int_equal(n, 29);
  assert_memory_equal(v, "0123456789abcdef0123456789\xe2\x82\xac", 29);
  fx_free(f);
}

/* The ASCII fast paths (32 and 8 bytes at a time) must still stop at the exact byte: a bad
 * byte, or a valid multi-byte character, at every position of a long record. */
static void test_utf8_check_finds_every_position(void **state) {
  char buf[130];
  for (size_t len = 1; len <= sizeof buf; len++)
    for (size_t at = 0; at < len; at++) {
      memset(buf, 'a', len);
      buf[at] = (char)0xff;
      assert_int_equal(ck_format_utf8_invalid_at(buf, len), at);
      if (at + 2 <= len) { /* U+00E9 is valid wherever it sits */
        buf[at] = (char)0xc3, buf[at + 1] = (char)0xa9;
        assert_int_equal(ck_format_utf8_invalid_at(buf, len), len);
        buf[at + 1] = 'a'; /* a lead byte without its continuation */
        assert_int_equal(ck_format_utf8_invalid_at(buf, len), at);
      }
    }
}

static void test_json_oversized_record(void **state) {
  fx_t *f = fx_new("s VARCHAR");
  size_t n = CK_FORMAT_MAX_RECORD + 1;
  char *rec = malloc(n + 1);
  memset(rec, 'a', n);
  memcpy(rec, "{\"s\":\"", 6);
  memcpy(rec + n - 2, "\"}", 2);
  rec[n] = 0;
  dec_err(f, rec, "record of 1048577 bytes exceeds the limit of 1048576 bytes");
  assert_int_equal(f->batch->cols[0].len, 0);
  rec[n - 3] = '"', rec[n - 2] = '}', rec[n - 1] = 0; /* exactly at the limit: accepted */
  dec_ok(f, rec);
  assert_int_equal(f->batch->cols[0].data_len, CK_FORMAT_MAX_RECORD - 8);
  free(rec);
  fx_free(f);
}

static void test_json_malformed(void **state) {
  fx_t *f = fx_new("a INT");
  dec_err(f, "", "expected a JSON object, found the end of the record");
  dec_err(f, "[1,2]", "expected a JSON object, found array");
  dec_err(f, "\"a\"", "expected a JSON object, found string");
  dec_err(f, "null", "expected a JSON object, found null");
  dec_err(f, "not json", "malformed JSON at byte offset 0: expected a JSON object, found 'n'");
  dec_err(f, "{\"a\" 1}", "malformed JSON at byte offset 5: expected ':' after a field name, found '1'");
  dec_err(f, "{\"a\":1,}", "expected a field name in quotes, found '}'");
  dec_err(f, "{\"a\":1 \"b\":2}", "expected ',' or '}'");
  dec_err(f, "{\"a\":01}", "expected ',' or '}', found '1'");
  dec_err(f, "{\"a\":-}", "expected a digit");
  dec_err(f, "{\"a\":1.}", "expected a digit after the decimal point");
  dec_err(f, "{\"a\":1e}", "expected a digit in the exponent");
  dec_err(f, "{\"a\":nul}", "expected a value");
  dec_err(f, "{\"a\":1}{", "expected the end of the record");
  dec_err(f, "{\"x\":[1,2,}", "expected a value");
  dec_err(f, "{\"x\":{\"k\":1]}", "expected ',' or '}'");
  dec_err(f, "{\"a\":1", "expected ',' or '}', found the end of the record");
  /* hostile nesting in a skipped field is refused without recursion */
  char deep[2100];
  strcpy(deep, "{\"x\":");
  for (int i = 0; i < 1000; i++) strcat(deep, "[");
  dec_err(f, deep, "nesting deeper than 512 levels");
  assert_int_equal(f->batch->cols[0].len, 0);
  fx_free(f);
}

/* ---- encoder ---- */

static void test_json_encoder_sorted_keys_and_numbers(void **state) {
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_schema_t s = t_schema(&arena, "sensor_id VARCHAR, readings BIGINT, avg_temp_c DOUBLE");
  ck_batch_t *b = t_batch(&s);
  ck_col_append_str(&b->cols[0], "sensor-01", 9);
  ck_col_append_i64(&b->cols[1], 10);
  ck_col_append_f64(&b->cols[2], 18.0);
  ck_col_append_str(&b->cols[0], "q\"\n\x01", 4);
  ck_col_append_null(&b->cols[1]);
  ck_col_append_f64(&b->cols[2], 18.5);
  ck_col_append_null(&b->cols[0]);
  ck_col_append_i64(&b->cols[1], -9223372036854775807LL - 1);
  ck_col_append_f64(&b->cols[2], NAN);
  ck_batch_seal(b);
  char *out = t_batch_json(&s, b);
  assert_string_equal(out,
                      "{\"avg_temp_c\":18,\"readings\":10,\"sensor_id\":\"sensor-01\"}\n"
                      "{\"avg_temp_c\":18.5,\"readings\":null,\"sensor_id\":\"q\\\"\\n\\u0001\"}\n"
                      "{\"avg_temp_c\":null,\"readings\":-9223372036854775808,\"sensor_id\":null}\n");
  ck_free(out);
  ck_batch_free(b);
  ck_arena_fini(&arena);
}

static void test_json_encoder_every_type(void **state) {
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_schema_t s = t_schema(&arena, "i INT, d DOUBLE, f FLOAT, m DECIMAL(10,2), t BOOLEAN, ts TIMESTAMP, B VARCHAR");
  ck_batch_t *b = t_batch(&s);
  ck_col_append_i32(&b->cols[0], -7);
  ck_col_append_f64(&b->cols[1], 0.1);
  ck_col_append_f32(&b->cols[2], 0.1f);
  ck_col_append_dec(&b->cols[3], 1230);
  ck_col_append_bool(&b->cols[4], true);
  ck_col_append_i64(&b->cols[5], 1772352000000LL);
  ck_col_append_str(&b->cols[6], "\xc3\xa9", 2);
  ck_col_append_i32(&b->cols[0], 0);
  ck_col_append_f64(&b->cols[1], 1e21);
  ck_col_append_f32(&b->cols[2], INFINITY);
  ck_col_append_dec(&b->cols[3], -5);
  ck_col_append_bool(&b->cols[4], false);
  ck_col_append_null(&b->cols[5]);
  ck_col_append_str(&b->cols[6], "", 0);
  ck_batch_seal(b);
  char *out = t_batch_json(&s, b);
  /* byte order: upper-case 'B' sorts before lower-case names */
  assert_string_equal(out,
                      "{\"B\":\"\xc3\xa9\",\"d\":0.1,\"f\":0.1,\"i\":-7,\"m\":12.30,\"t\":true,\"ts\":\"2026-03-01 08:00:00.000\"}\n"
                      "{\"B\":\"\",\"d\":1e+21,\"f\":null,\"i\":0,\"m\":-0.05,\"t\":false,\"ts\":null}\n");
  ck_free(out);
  ck_batch_free(b);
  ck_arena_fini(&arena);
}

static void test_json_encoder_changelog_op(void **state) {
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_schema_t s = t_schema(&arena, "z BIGINT, a VARCHAR");
  ck_batch_t *b = t_batch(&s);
  for (int i = 0; i < 4; i++) {
    ck_col_append_i64(&b->cols[0], i);
    ck_col_append_str(&b->cols[1], "k", 1);
  }
  ck_batch_seal(b);
  char *plain = t_batch_json(&s, b); /* no kinds: no op */
  assert_string_equal(plain, "{\"a\":\"k\",\"z\":0}\n{\"a\":\"k\",\"z\":1}\n{\"a\":\"k\",\"z\":2}\n{\"a\":\"k\",\"z\":3}\n");
  ck_free(plain);
  ck_batch_set_kind(b, 1, CK_ROW_UPDATE_BEFORE);
  ck_batch_set_kind(b, 2, CK_ROW_UPDATE_AFTER);
  ck_batch_set_kind(b, 3, CK_ROW_DELETE);
  char *out = t_batch_json(&s, b);
  assert_string_equal(out,
                      "{\"a\":\"k\",\"op\":\"insert\",\"z\":0}\n"
                      "{\"a\":\"k\",\"op\":\"update_before\",\"z\":1}\n"
                      "{\"a\":\"k\",\"op\":\"update\",\"z\":2}\n"
                      "{\"a\":\"k\",\"op\":\"delete\",\"z\":3}\n");
  ck_free(out);
  ck_batch_free(b);
  /* op sorts first and last too */
  ck_schema_t s2 = t_schema(&arena, "p INT");
  ck_batch_t *b2 = t_batch(&s2);
  ck_col_append_i32(&b2->cols[0], 1);
  ck_batch_seal(b2);
  ck_batch_set_kind(b2, 0, CK_ROW_DELETE);
  char *o2 = t_row_json(&s2, b2, 0);
  assert_string_equal(o2, "{\"op\":\"delete\",\"p\":1}");
  ck_free(o2);
  ck_batch_free(b2);
  ck_arena_fini(&arena);
}

static void test_json_roundtrip(void **state) {
  fx_t *f = fx_new(ALL_TYPES);
  const char *rows[] = {
      "{\"b\":-42,\"d\":0.30000000000000004,\"f\":3.4028235e+38,\"i\":1,\"m\":-12345678.90,\"s\":\"\\\"\\\\\\n\\u001f\xe2\x82\xac\",\"t\":true,\"ts\":\"1970-01-01 00:00:00.001\"}",
      "{\"b\":null,\"d\":5e-324,\"f\":-1e-45,\"i\":null,\"m\":0.00,\"s\":null,\"t\":null,\"ts\":\"1969-12-31 23:59:59.999\"}",
  };
  for (int i = 0; i < 2; i++) dec_ok(f, rows[i]);
  for (int i = 0; i < 2; i++) {
    char *out = t_row_json(&f->schema, f->batch, (size_t)i);
    assert_string_equal(out, rows[i]);
    ck_free(out);
  }
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_json_every_type),
      cmocka_unit_test(test_json_doubles_round_exactly),
      cmocka_unit_test(test_json_number_grammar_refuses_what_csv_refuses),
      cmocka_unit_test(test_json_decimal_from_text),
      cmocka_unit_test(test_json_integer_errors),
      cmocka_unit_test(test_json_timestamp_text),
      cmocka_unit_test(test_json_timestamp_encode),
      cmocka_unit_test(test_json_the_spec_example_message),
      cmocka_unit_test(test_json_string_escapes_and_unicode),
      cmocka_unit_test(test_json_fast_paths_agree_with_the_rules),
      cmocka_unit_test(test_json_string_column_takes_any_value_as_text),
      cmocka_unit_test(test_json_nulls_missing_and_extra_fields),
      cmocka_unit_test(test_json_names_match_case_insensitively),
      cmocka_unit_test(test_json_names_match_with_unicode_case_folding),
      cmocka_unit_test(test_json_repeated_field_last_wins),
      cmocka_unit_test(test_json_bad_record_leaves_batch_unchanged),
      cmocka_unit_test(test_json_invalid_utf8),
      cmocka_unit_test(test_utf8_check_finds_every_position),
      cmocka_unit_test(test_json_utf8_checked_in_place),
      cmocka_unit_test(test_json_integers_of_every_length),
      cmocka_unit_test(test_json_oversized_record),
      cmocka_unit_test(test_json_malformed),
      cmocka_unit_test(test_json_encoder_sorted_keys_and_numbers),
      cmocka_unit_test(test_json_encoder_every_type),
      cmocka_unit_test(test_json_encoder_changelog_op),
      cmocka_unit_test(test_json_roundtrip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
