/*
 * DESIGN: unit tests for src/incident/reference.h — the audit's reader of a reference artifact,
 * on the artifact python/clink-reference writes (tests/fixtures/reference/artifact.ndjson, made
 * by make.py; the library's own test requires the same bytes): the C fingerprint text equals
 * the library's (the header's fingerprint checks out), the cells come back under the
 * comparison's rules (NaN, -0.0, bytes that are not UTF-8, inexact values, NULL, Decimal
 * unscaled), and an unfinished, truncated or altered file is refused naming why; the binding
 * to a bundle's scope names the first field that differs.
 * Threads: the main thread.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "incident/bundle_int.h"
#include "incident/reference.h"

#define FIX CK_TEST_FIXTURES "/reference/"

static char tmpdir[] = "/tmp/ck_reference_XXXXXX";

static int setup(void **state) {
  (void)state;
  assert_non_null(mkdtemp(tmpdir));
  return 0;
}
static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  assert_int_equal(system(cmd), 0);
  return 0;
}

static void slurp(const char *path, ck_buf_t *b) {
  ck_error_t err;
  ck_error_clear(&err);
  ck_buf_init(b);
  assert_int_equal(ck_bundle_read_file(path, b, &err), 0);
}

static const char *write_variant(const char *name, const char *data, size_t n) {
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  fclose(f);
  return path;
}

static void test_the_librarys_artifact_reads_and_its_cells_follow_the_rules(void **state) {
  (void)state;
  ck_reference_t ref;
  ck_error_t err;
  ck_error_clear(&err);
  int rc = ck_reference_read(FIX "artifact.ndjson", &ref, &err);
  if (rc) fail_msg("%s", err.message);
  assert_true(ref.complete);
  assert_int_equal(ref.ncols, 7);
  assert_int_equal(ref.nrows, 3);
  assert_string_equal(ref.cols[4].type, "Decimal(10, 2)");
  assert_true(ref.cols[0].key);
  assert_string_equal(ck_json_get_str(ref.recorded, "implementation"), "tests/fixtures/reference/make.py");

  ck_cell_rule_t rules[7];
  const char *types[7] = {"Int64", "Nullable(String)", "Float64", "Float32", "Decimal(10, 2)",
                          "DateTime64(3)", "Date"};
  ck_type_t sql[7] = {{CK_T_INT64, 0, 0},    {CK_T_STRING, 0, 0},    {CK_T_FLOAT64, 0, 0},
                      {CK_T_FLOAT64, 0, 0},  {CK_T_DECIMAL, 10, 2},  {CK_T_TIMESTAMP, 0, 0},
                      {CK_T_INT32, 0, 0}};
  char why[256];
  for (int i = 0; i < 7; i++) assert_int_equal(ck_cell_rule_init(sql[i], types[i], &rules[i], why, sizeof why), 0);
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_cell_t c[7];
  assert_int_equal(ck_reference_row_cells(&ref, 0, rules, &arena, c, &err), 0);
  assert_int_equal(c[0].kind, CK_CELL_INT);
  assert_true(c[0].v.i == 1);
  assert_int_equal(c[1].kind, CK_CELL_BYTES);
  assert_int_equal(c[1].len, 5);
  assert_memory_equal(c[1].v.bytes, "alpha", 5);
  assert_true(c[2].kind == CK_CELL_F64 && c[2].v.bits == 0x3fe0000000000000ull);
  assert_true(c[3].kind == CK_CELL_F32 && c[3].v.bits == 0x3e800000u);
  assert_true(c[4].kind == CK_CELL_INT && c[4].v.i == 1230);
  assert_true(c[5].v.i == 1704067200000);
  assert_true(c[6].v.i == 19723);
  assert_int_equal(ck_reference_row_cells(&ref, 1, rules, &arena, c, &err), 0);
  assert_int_equal(c[1].kind, CK_CELL_NULL);
  assert_true(c[2].v.bits == 0x7ff8000000000000ull);  /* every NaN one value */
  assert_true(c[3].v.bits == 0x80000000u);            /* -0.0 kept */
  assert_true(c[4].v.i == -1);
  assert_int_equal(ck_reference_row_cells(&ref, 2, rules, &arena, c, &err), 0);
  assert_int_equal(c[1].len, 2);
  assert_memory_equal(c[1].v.bytes, "\xff\x00", 2);
  assert_int_equal(c[3].kind, CK_CELL_INEXACT);
  assert_int_equal(c[4].kind, CK_CELL_INEXACT);
  assert_false(ck_cell_eq(&c[4], &c[4])); /* equal to nothing, itself included */
  ck_arena_fini(&arena);

  /* bound to its own scope; refused for another checkpoint / range, naming the field */
  ck_buf_t st;
  slurp(FIX "scope.json", &st);
  ck_arena_t a2;
  ck_arena_init(&a2, 4096);
  ck_json_t *scope = NULL;
  assert_int_equal(ck_json_parse(st.data, st.len, &a2, &scope, &err), 0);
  assert_int_equal(ck_reference_bind(&ref, scope, &err), 0);
  ck_buf_t other;
  ck_buf_init(&other);
  const char *p = strstr(st.data, "\"checkpoint\": 7");
  assert_non_null(p);
  ck_buf_append(&other, st.data, (size_t)(p - st.data));
  ck_buf_puts(&other, "\"checkpoint\": 8");
  ck_buf_puts(&other, p + strlen("\"checkpoint\": 7"));
  ck_json_t *s8 = NULL;
  assert_int_equal(ck_json_parse(other.data, other.len, &a2, &s8, &err), 0);
  ck_error_clear(&err);
  assert_int_equal(ck_reference_bind(&ref, s8, &err), CK_ESTATE);
  assert_non_null(strstr(err.message, "the checkpoint differs"));
  assert_non_null(strstr(err.message, "the artifact's \"checkpoint 7\", the bundle's \"checkpoint 8\""));
  ck_buf_reset(&other);
  p = strstr(st.data, "\"to\": 17");
  assert_non_null(p);
  ck_buf_append(&other, st.data, (size_t)(p - st.data));
  ck_buf_puts(&other, "\"to\": 18");
  ck_buf_puts(&other, p + strlen("\"to\": 17"));
  assert_int_equal(ck_json_parse(other.data, other.len, &a2, &s8, &err), 0);
  ck_error_clear(&err);
  assert_int_equal(ck_reference_bind(&ref, s8, &err), CK_ESTATE);
  assert_non_null(strstr(err.message, "a partition's range differs"));
  ck_buf_fini(&other);
  ck_buf_fini(&st);
  ck_arena_fini(&a2);
  ck_reference_fini(&ref);
}

static void expect_refused(const char *name, const char *data, size_t n, const char *why) {
  ck_reference_t ref;
  ck_error_t err;
  ck_error_clear(&err);
  int rc = ck_reference_read(write_variant(name, data, n), &ref, &err);
  ck_reference_fini(&ref);
  assert_int_equal(rc, CK_EDECODE);
  if (!strstr(err.message, why)) fail_msg("%s: wanted \"%s\" in \"%s\"", name, why, err.message);
}

static void test_unfinished_and_altered_artifacts_are_refused(void **state) {
  (void)state;
  ck_buf_t b;
  slurp(FIX "artifact.ndjson", &b);
  /* without its end line */
  const char *last = b.data + b.len - 2;
  while (last > b.data && *last != '\n') last--;
  expect_refused("noend", b.data, (size_t)(last - b.data + 1), "unfinished (the last line is not the end line)");
  expect_refused("nonl", b.data, b.len - 1, "unfinished (the last line has no end of line)");
  /* a row changed */
  ck_buf_t v;
  ck_buf_init(&v);
  ck_buf_append(&v, b.data, b.len);
  char *alpha = strstr(v.data, "\"alpha\"");
  assert_non_null(alpha);
  alpha[1] = 'A';
  expect_refused("row", v.data, v.len, "the rows do not match the end line's hash");
  /* the header changed (its checkpoint, inside the scope string) */
  ck_buf_reset(&v);
  ck_buf_append(&v, b.data, b.len);
  char *ck = strstr(v.data, "\\\"checkpoint\\\": 7");
  assert_non_null(ck);
  ck[strlen("\\\"checkpoint\\\": ")] = '8';
  expect_refused("hdr", v.data, v.len, "the header does not match the end line's hash");
  /* an empty file */
  expect_refused("empty", "", 0, "unfinished");
  ck_buf_fini(&v);
  ck_buf_fini(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_the_librarys_artifact_reads_and_its_cells_follow_the_rules),
      cmocka_unit_test(test_unfinished_and_altered_artifacts_are_refused),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
