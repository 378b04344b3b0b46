/*
 * DESIGN: unit tests for the window table functions (issue 21): FROM TABLE(TUMBLE|HOP|
 * CUMULATE(TABLE t, DESCRIPTOR(ts), …)) GROUP BY window_start, window_end, … is planned as the
 * GROUP BY window it stands for. The golden plan is the legacy query's: both scripts are
 * parsed and planned (no execution) and their graph descriptions (ck_graph_describe, the
 * checkpoint fingerprint's text) must be equal, HOP's Flink order (slide, size) turned into
 * clink's (size, slide). Also: window_time is window_end - 1 ms of window_end's type, and a
 * script planned twice (the planner rewrites window_time in the parse tree) plans the same.
 * Threads: main only.
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
#include "base/buf.h"
#include "connectors/connectors.h"
#include "sql/parser.h"
#include "sql/planner.h"

#define TABLE                                                                                  \
  "CREATE TABLE t (k VARCHAR, x BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL "  \
  "'1' SECOND) WITH (connector = 'file', path = 'x.json', format = 'json');\n"

/* Parses and plans sql into its description; returns the error code (0). */
static int describe(const char *sql, int parallelism, ck_buf_t *out, ck_error_t *err) {
  ck_arena_t arena;
  ck_arena_init(&arena, 0);
  ck_script_t script;
  ck_error_clear(err);
  ck_plan_opts_t opts = {.parallelism = parallelism, .max_parallelism = 128};
  ck_graph_t *graph = NULL;
  int rc = ck_sql_parse(sql, &arena, &script, err);
  if (!rc) rc = ck_sql_plan(&script, &opts, &graph, err);
  if (!rc) {
    ck_graph_describe(graph, out);
    /* a second plan of the same parse tree gives the same graph */
    ck_graph_t *again = NULL;
    ck_buf_t d2;
    ck_buf_init(&d2);
    rc = ck_sql_plan(&script, &opts, &again, err);
    if (!rc) {
      ck_graph_describe(again, &d2);
      assert_string_equal(out->data, d2.data);
      ck_graph_free(again);
    }
    ck_buf_fini(&d2);
    ck_graph_free(graph);
  }
  ck_arena_fini(&arena);
  return rc;
}

static void test_tvf_plans_as_the_group_by_window(void **state) {
  (void)state;
  static const struct { const char *tvf, *legacy; } cases[] = {
      {"SELECT k, window_start, window_end, COUNT(*) AS n, SUM(x) AS s FROM TABLE(TUMBLE(TABLE "
       "t, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end, k;",
       "SELECT k, window_start, window_end, COUNT(*) AS n, SUM(x) AS s FROM t GROUP BY "
       "TUMBLE(ts, INTERVAL '10' SECOND), k;"},
      {"SELECT window_end, MAX(x) AS m FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' "
       "DAY, INTERVAL '8' HOUR)) AS w WHERE x > 0 GROUP BY w.window_end, w.window_start;",
       "SELECT window_end, MAX(x) AS m FROM t AS w WHERE x > 0 GROUP BY TUMBLE(ts, INTERVAL "
       "'1' DAY, INTERVAL '8' HOUR);"},
      {"SELECT k, window_start, COUNT(*) AS n FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL "
       "'5' SECOND, INTERVAL '1' MINUTE)) GROUP BY k, window_start, window_end HAVING COUNT(*) "
       "> 1;",
       "SELECT k, window_start, COUNT(*) AS n FROM t GROUP BY k, HOP(ts, INTERVAL '1' MINUTE, "
       "INTERVAL '5' SECOND) HAVING COUNT(*) > 1;"},
      {"SELECT window_start, window_end, AVG(x) AS a FROM TABLE(CUMULATE(TABLE t, "
       "DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND, -INTERVAL '1' SECOND)) "
       "GROUP BY window_start, window_end;",
       "SELECT window_start, window_end, AVG(x) AS a FROM t GROUP BY CUMULATE(ts, INTERVAL '2' "
       "SECOND, INTERVAL '10' SECOND, -INTERVAL '1' SECOND);"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    for (int p = 1; p <= 4; p += 3) {
      ck_buf_t a, b;
      ck_buf_init(&a);
      ck_buf_init(&b);
      ck_error_t err;
      char sql[2048];
      snprintf(sql, sizeof sql, TABLE "%s", cases[i].tvf);
      if (describe(sql, p, &a, &err)) fail_msg("case %zu: %s", i, err.message);
      snprintf(sql, sizeof sql, TABLE "%s", cases[i].legacy);
      if (describe(sql, p, &b, &err)) fail_msg("case %zu legacy: %s", i, err.message);
      assert_string_equal(a.data, b.data);
      ck_buf_fini(&a);
      ck_buf_fini(&b);
    }
  }
}

static void test_window_time_is_window_end_less_a_millisecond(void **state) {
  (void)state;
  ck_buf_t a, b;
  ck_buf_init(&a);
  ck_buf_init(&b);
  ck_error_t err;
  if (describe(TABLE "SELECT window_time, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE t, "
               "DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end "
               "HAVING window_time > window_start;", 1, &a, &err))
    fail_msg("%s", err.message);
  if (describe(TABLE "SELECT TIMESTAMPADD(MILLISECOND, -1, window_end) AS window_time, "
               "COUNT(*) AS n FROM t GROUP BY TUMBLE(ts, INTERVAL '10' SECOND) HAVING "
               "TIMESTAMPADD(MILLISECOND, -1, window_end) > window_start;", 1, &b, &err))
    fail_msg("%s", err.message);
  assert_string_equal(a.data, b.data);
  ck_buf_fini(&a);
  ck_buf_fini(&b);
}

int main(void) {
  /* the file connector wants its input to exist when the job is planned */
  char dir[] = "/tmp/test_sql_window_tvf.XXXXXX";
  if (!mkdtemp(dir) || chdir(dir) != 0) return 1;
  FILE *f = fopen("x.json", "w");
  if (!f) return 1;
  fclose(f);
  ck_connectors_register_all();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tvf_plans_as_the_group_by_window),
      cmocka_unit_test(test_window_time_is_window_end_less_a_millisecond),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  unlink("x.json");
  if (chdir("/") == 0) rmdir(dir);
  return failed;
}
