/*
 * DESIGN: user-defined functions in C below the SQL surface (tests/sql/test_udf.py has the
 * SQL side): a plan with a UDF survives the cluster's wire format (encode → decode → encode,
 * byte for byte) and the decoding process loads the library itself, so a plan whose library
 * a worker cannot open is refused naming the library; and libclink (include/clink/clink.h)
 * runs CREATE FUNCTION scripts as `clink run` does. The sample library's path comes from CMake
 * (CK_UDF_SAMPLE: tests/udf's target).
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

#include "base/alloc.h"
#include "base/arena.h"
#include "base/buf.h"
#include "clink/clink.h"
#include "connectors/connectors.h"
#include "runtime/plan.h"
#include "sql/parser.h"
#include "sql/planner.h"

static char dir[] = "/tmp/ck_udf_test_XXXXXX";

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void copy_file(const char *from, const char *to) {
  FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
  assert_non_null(a);
  assert_non_null(b);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, a)) > 0) assert_int_equal(fwrite(buf, 1, n, b), n);
  fclose(a);
  fclose(b);
}

static char *script(const char *lib, const char *in, const char *out) {
  static char sql[4096];
  snprintf(sql, sizeof sql,
           "CREATE TABLE t (id BIGINT, s VARCHAR) WITH (connector = 'file', path = '%s', "
           "format = 'json');\n"
           "CREATE TABLE o (id BIGINT, p BIGINT, sh VARCHAR) WITH (connector = 'file', "
           "path = '%s', format = 'json');\n"
           "CREATE FUNCTION plus_one AS 'plus_one_udf' USING '%s' LANGUAGE C;\n"
           "CREATE FUNCTION shout AS 'shout_udf' USING '%s' LANGUAGE C;\n"
           "INSERT INTO o SELECT id, plus_one(id) AS p, shout(s) AS sh FROM t;\n",
           in, out, lib, lib);
  return sql;
}

static void test_plan_wire_loads_the_library_where_it_is_decoded(void **state) {
  (void)state;
  char lib[256], in[256], out[256];
  /* a copy under a name of the same length as a path that does not exist */
  snprintf(lib, sizeof lib, "%s/libA.so", dir);
  snprintf(in, sizeof in, "%s/in.json", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  copy_file(CK_UDF_SAMPLE, lib);
  write_text(in, "{\"id\":1,\"s\":\"a\"}\n");
  ck_arena_t arena;
  ck_arena_init(&arena, 0);
  ck_script_t s;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_sql_parse(script(lib, in, out), &arena, &s, &err), 0);
  ck_graph_t *g = NULL;
  ck_plan_opts_t po = {2, 128};
  int rc = ck_sql_plan(&s, &po, &g, &err);
  if (rc) fail_msg("plan failed: %s", err.message);
  ck_buf_t a, b;
  ck_buf_init(&a);
  ck_buf_init(&b);
  ck_plan_encode(g, 0, &a);
  ck_graph_t *back = NULL;
  rc = ck_plan_decode(a.data, a.len, &back, &err);
  if (rc) fail_msg("decode failed: %s", err.message);
  ck_plan_encode(back, 0, &b);
  assert_int_equal(a.len, b.len);
  assert_memory_equal(a.data, b.data, a.len);
  ck_graph_free(back);
  /* the same plan naming a library that is not there: what a worker without it sees */
  size_t n = strlen(lib), moved = 0;
  for (size_t i = 0; i + n <= a.len; i++)
    if (!memcmp(a.data + i, lib, n)) {
      a.data[i + n - 4] = 'B'; /* libA.so -> libB.so */
      moved++;
    }
  assert_true(moved >= 1);
  ck_error_clear(&err);
  back = NULL;
  rc = ck_plan_decode(a.data, a.len, &back, &err);
  assert_int_not_equal(rc, 0);
  assert_null(back);
  char libb[256];
  snprintf(libb, sizeof libb, "%s/libB.so", dir);
  if (!strstr(err.message, "could not load function 'plus_one' from library") ||
      !strstr(err.message, libb))
    fail_msg("unexpected error: %s", err.message);
  ck_buf_fini(&a);
  ck_buf_fini(&b);
  ck_graph_free(g);
  ck_arena_fini(&arena);
}

static void test_libclink_runs_a_udf_script(void **state) {
  (void)state;
  char in[256], out[256];
  snprintf(in, sizeof in, "%s/lib_in.json", dir);
  snprintf(out, sizeof out, "%s/lib_out", dir);
  write_text(in, "{\"id\":1,\"s\":\"abc\"}\n{\"id\":41,\"s\":null}\n");
  clink_options_t o;
  clink_options_init(&o);
  clink_engine_t *e = NULL;
  char ebuf[512];
  assert_int_equal(clink_engine_open(&o, &e, ebuf, sizeof ebuf), 0);
  clink_job_t *jobs[2] = {0};
  int n = 0;
  if (clink_exec(e, script(CK_UDF_SAMPLE, in, out), jobs, 2, &n) || n != 1)
    fail_msg("clink_exec: %s", clink_last_error(e, NULL, NULL));
  assert_int_equal(clink_job_wait(jobs[0], 60000), 0);
  assert_int_equal(clink_job_status(jobs[0]), CLINK_JOB_FINISHED);
  /* a second script of the same engine may use the functions the first created */
  int line = 0, column = 0;
  assert_int_not_equal(clink_exec(e, "INSERT INTO o SELECT id, plus_one(s) AS p FROM t",
                                  jobs + 1, 1, &n), 0);
  const char *msg = clink_last_error(e, &line, &column);
  if (!strstr(msg, "function plus_one takes BIGINT as argument 1, not VARCHAR"))
    fail_msg("unexpected error: %s", msg);
  assert_int_equal(line, 1);
  assert_int_equal(column, 26);
  clink_engine_close(e);
  /* the file sink's output: every row, with the functions' values */
  char cmd[600];
  snprintf(cmd, sizeof cmd, "cat %s* 2>/dev/null | sort", out);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  char got[1024] = {0};
  size_t len = fread(got, 1, sizeof got - 1, p);
  pclose(p);
  got[len] = 0;
  assert_string_equal(got, "{\"id\":1,\"p\":2,\"sh\":\"ABC!\"}\n{\"id\":41,\"p\":42,\"sh\":null}\n");
}

static int setup(void **state) {
  (void)state;
  ck_connectors_register_all();
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plan_wire_loads_the_library_where_it_is_decoded),
      cmocka_unit_test(test_libclink_runs_a_udf_script),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
