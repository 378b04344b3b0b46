/*
 * DESIGN: unit tests for the SQL front end on very wide scripts (issue 12, section 5):
 * planning is linear in the number of SELECT items, table columns and sink columns.
 *
 * A 200,000-item SELECT, a 200,000-column CREATE TABLE + INSERT and a 50,000-key GROUP BY
 * whose SELECT names every key again are parsed and planned (no execution). The old pairwise name checks did about 2 * 10^10 name comparisons here (half an
 * hour under ASan); the linear ones take a few CPU-seconds. A limit of 60 s of this process's
 * own CPU time (ITIMER_PROF, which a loaded machine does not run down) turns a quadratic loop
 * into a failure without a wall-clock assertion. Also
 * checked: the duplicates those loops were there to find are still found, with positions.
 * Threads: main only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "connectors/connectors.h"
#include "sql/parser.h"
#include "sql/planner.h"

enum { WIDE = 200000 };

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "test_sql_plan_linear: planning used more than 60 CPU-seconds (quadratic?)\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(1);
}

static ck_arena_t arena; /* the parsed script, which the graph points into */

static void cpu_limit(int seconds) {
  struct itimerval it = {.it_value = {.tv_sec = seconds}};
  setitimer(ITIMER_PROF, &it, NULL);
}

/* Parses and plans sql; returns the error code (0) and leaves the message in err. */
static int plan(const char *sql, ck_graph_t **graph, ck_error_t *err) {
  ck_arena_fini(&arena);
  ck_arena_init(&arena, 0);
  ck_script_t script;
  ck_error_clear(err);
  *graph = NULL;
  int rc = ck_sql_parse(sql, &arena, &script, err);
  if (!rc) rc = ck_sql_plan(&script, NULL, graph, err);
  return rc;
}

static void test_a_wide_select_plans_in_linear_time(void **state) {
  (void)state;
  ck_buf_t sql;
  ck_buf_init(&sql);
  ck_buf_puts(&sql, "CREATE TABLE t (id INT, s VARCHAR) WITH (connector = 'file', path = 'x.json', "
                    "format = 'json');\nSELECT ");
  for (int i = 0; i < WIDE; i++) ck_buf_printf(&sql, "%sid + %d AS c%d", i ? ", " : "", i, i);
  ck_buf_puts(&sql, " FROM t;\n");
  cpu_limit(60);
  ck_graph_t *graph;
  ck_error_t err;
  int rc = plan(sql.data, &graph, &err);
  cpu_limit(0);
  if (rc) fail_msg("%s", err.message);
  const ck_node_t *sink = &graph->nodes[graph->nnodes - 1];
  assert_int_equal(sink->kind, CK_NODE_SINK);
  assert_int_equal(sink->out_schema.ncols, WIDE);
  assert_string_equal(sink->out_schema.names[WIDE - 1], "c199999");
  ck_graph_free(graph);
  ck_buf_fini(&sql);
}

static void test_a_wide_table_and_insert_plan_in_linear_time(void **state) {
  (void)state;
  ck_buf_t sql;
  ck_buf_init(&sql);
  ck_buf_puts(&sql, "CREATE TABLE src (id INT) WITH (connector = 'file', path = 'x.json', format = 'json');\n"
                    "CREATE TABLE wide (");
  for (int i = 0; i < WIDE; i++) ck_buf_printf(&sql, "%sC%d BIGINT", i ? ", " : "", i);
  ck_buf_puts(&sql, ") WITH (connector = 'file', path = 'out.json', format = 'json');\n"
                    "INSERT INTO wide SELECT ");
  /* in reverse order, so matching by name cannot be a walk in step */
  for (int i = WIDE - 1; i >= 0; i--)
    ck_buf_printf(&sql, "%sid AS c%d", i < WIDE - 1 ? ", " : "", i);
  ck_buf_puts(&sql, " FROM src;\n");
  cpu_limit(60);
  ck_graph_t *graph;
  ck_error_t err;
  int rc = plan(sql.data, &graph, &err);
  cpu_limit(0);
  if (rc) fail_msg("%s", err.message);
  const ck_node_t *sink = &graph->nodes[graph->nnodes - 1];
  assert_int_equal(sink->kind, CK_NODE_SINK);
  assert_int_equal(sink->u.conn.schema.ncols, WIDE);
  /* the projection before the sink puts query column WIDE-1-i into sink column i */
  const ck_node_t *cast = &graph->nodes[graph->nnodes - 2];
  assert_int_equal(cast->kind, CK_NODE_CALC);
  assert_int_equal(cast->u.calc.nexprs, WIDE);
  ck_buf_t e;
  ck_buf_init(&e);
  ck_expr_to_string(cast->u.calc.exprs[0], &e);
  assert_string_equal(e.data, "CAST($199999 AS BIGINT)");
  ck_buf_fini(&e);
  ck_graph_free(graph);
  ck_buf_fini(&sql);
}

static void test_a_wide_group_by_plans_in_linear_time(void **state) {
  (void)state;
  enum { KEYS = 50000 };
  ck_buf_t sql;
  ck_buf_init(&sql);
  ck_buf_puts(&sql, "CREATE TABLE t (id INT, s VARCHAR) WITH (connector = 'file', path = 'x.json', "
                    "format = 'json');\nSELECT ");
  /* every item is a GROUP BY key written again, found among 50,000 keys (in reverse order),
   */
  for (int i = KEYS - 1; i >= 0; i--) ck_buf_printf(&sql, "ID + %d AS c%d, ", i, i);
  ck_buf_puts(&sql, "COUNT(*) AS n FROM t GROUP BY ");
  for (int i = 0; i < KEYS; i++) ck_buf_printf(&sql, "%sid + %d", i ? ", " : "", i);
  ck_buf_puts(&sql, ";\n");
  cpu_limit(60);
  ck_graph_t *graph;
  ck_error_t err;
  int rc = plan(sql.data, &graph, &err);
  cpu_limit(0);
  if (rc) fail_msg("%s", err.message);
  const ck_node_t *post = &graph->nodes[graph->nnodes - 2];
  assert_int_equal(post->kind, CK_NODE_CALC);
  assert_int_equal(post->u.calc.nexprs, KEYS + 1);
  /* item 0 is key KEYS-1: column KEYS-1 of the aggregation's output; the count follows the keys */
  ck_buf_t e;
  ck_buf_init(&e);
  ck_expr_to_string(post->u.calc.exprs[0], &e);
  ck_expr_to_string(post->u.calc.exprs[KEYS - 1], &e);
  ck_expr_to_string(post->u.calc.exprs[KEYS], &e);
  assert_string_equal(e.data, "$49999$0$50000");
  ck_buf_fini(&e);
  ck_graph_free(graph);
  ck_buf_fini(&sql);
}

static void test_duplicates_are_still_found(void **state) {
  (void)state;
  static const struct { const char *sql, *msg; int line, col; } cases[] = {
      {"CREATE TABLE t (id INT, s VARCHAR, ID BIGINT) WITH (connector = 'file', path = 'x');\n"
       "SELECT id FROM t;",
       "column 'ID' is declared twice in table 't'", 1, 36},
      {"CREATE TABLE t (id INT) WITH (connector = 'file', path = 'x', path = 'y');\n"
       "SELECT id FROM t;",
       "option 'path' is given twice", 1, 63},
      {"CREATE TABLE t (id INT, s VARCHAR) WITH (connector = 'file', path = 'x.json', format = 'json');\n"
       "SELECT id, s, s AS \"ID\" FROM t;",
       "the query outputs two columns named 'ID'", 2, 15},
      {"CREATE TABLE t (id INT) WITH (connector = 'file', path = 'x.json', format = 'json');\n"
       "CREATE TABLE o (a INT, b INT) WITH (connector = 'file', path = 'o.json', format = 'json');\n"
       "INSERT INTO o SELECT id AS a, id AS c FROM t;",
       "table 'o' has no column 'c' for the query's column 2", 3, 31},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ck_graph_t *graph;
    ck_error_t err;
    int rc = plan(cases[i].sql, &graph, &err);
    assert_int_not_equal(rc, 0);
    assert_string_equal(err.message, cases[i].msg);
    assert_int_equal(err.line, cases[i].line);
    assert_int_equal(err.column, cases[i].col);
  }
}

int main(void) {
  signal(SIGPROF, on_alarm);
  /* the file connector wants its input to exist when the job is planned */
  char dir[] = "/tmp/test_sql_plan_linear.XXXXXX";
  if (!mkdtemp(dir) || chdir(dir) != 0) return 1;
  FILE *f = fopen("x.json", "w");
  if (!f) return 1;
  fclose(f);
  ck_connectors_register_all();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_a_wide_select_plans_in_linear_time),
      cmocka_unit_test(test_a_wide_table_and_insert_plan_in_linear_time),
      cmocka_unit_test(test_a_wide_group_by_plans_in_linear_time),
      cmocka_unit_test(test_duplicates_are_still_found),
  };
  ck_arena_init(&arena, 0);
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  ck_arena_fini(&arena);
  unlink("x.json");
  if (chdir("/") == 0) rmdir(dir);
  return failed;
}
