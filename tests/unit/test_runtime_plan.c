/*
 * DESIGN: unit tests for the physical plan and the serialised job graph (runtime/plan.h).
 *
 * - every SQL golden case (every .sql under tests/sql) that plans, at parallelism 1 and 3,
 *   round-trips: serialise → deserialise → serialise is byte-identical, the decoded graph
 *   makes the same physical plan and the same fingerprint;
 * - a 100,000-term chain of first operands round-trips (no recursion along it);
 * - decoding never runs a connector's plan-time check (a registered test connector counts);
 * - the masked forms hold no credential, keep the fingerprint across a password change and are
 *   refused as a runnable plan; every truncation of an encoding is refused, never a crash;
 * - task numbers, slots and edges of a keyed pipeline are what the snapshot layout
 *   (v1/<task>) and the executor expect.
 * Threads: main only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "connectors/connectors.h"
#include "runtime/exec.h"
#include "runtime/plan.h"
#include "sql/parser.h"
#include "sql/planner.h"

static ck_arena_t arena; /* the parsed script, which the graph points into */

static int plan_sql(const char *sql, int parallelism, ck_graph_t **graph, ck_error_t *err) {
  ck_arena_fini(&arena);
  ck_arena_init(&arena, 0);
  ck_script_t script;
  ck_error_clear(err);
  *graph = NULL;
  ck_plan_opts_t po = {parallelism, 128};
  int rc = ck_sql_parse(sql, &arena, &script, err);
  if (!rc) rc = ck_sql_plan(&script, &po, graph, err);
  return rc;
}

/* encode → decode → encode, byte for byte; the decoded graph's plan and identity are equal. */
static void assert_round_trip(const ck_graph_t *graph, const char *what) {
  ck_buf_t a, b, ia, ib;
  ck_buf_init(&a);
  ck_buf_init(&b);
  ck_buf_init(&ia);
  ck_buf_init(&ib);
  ck_plan_encode(graph, 0, &a);
  ck_graph_t *back = NULL;
  ck_error_t err;
  ck_error_clear(&err);
  int rc = ck_plan_decode(a.data, a.len, &back, &err);
  if (rc) fail_msg("%s: decode failed: %s", what, err.message);
  ck_plan_encode(back, 0, &b);
  if (a.len != b.len || memcmp(a.data, b.data, a.len))
    fail_msg("%s: the second encoding differs (%zu vs %zu bytes)", what, a.len, b.len);
  ck_plan_identity(graph, &ia);
  ck_plan_identity(back, &ib);
  assert_string_equal(ia.data, ib.data);
  ck_plan_t pa, pb;
  ck_plan_build(graph, &pa);
  ck_plan_build(back, &pb);
  assert_true(ck_plan_eq(&pa, &pb));
  ck_plan_fini(&pa);
  ck_plan_fini(&pb);
  ck_graph_free(back);
  ck_buf_fini(&a);
  ck_buf_fini(&b);
  ck_buf_fini(&ia);
  ck_buf_fini(&ib);
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  ck_buf_t b;
  ck_buf_init(&b);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) ck_buf_append(&b, chunk, n);
  fclose(f);
  ck_buf_reserve(&b, 1);
  b.data[b.len] = 0;
  return ck_buf_detach(&b);
}

static int planned_cases;

/* Every *.sql of dir (and its subdirectories), planned from dir as `clink run` would be. */
static void round_trip_dir(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  char saved[PATH_MAX];
  assert_non_null(getcwd(saved, sizeof saved));
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t n = strlen(e->d_name);
    if (e->d_type == DT_DIR) {
      round_trip_dir(path);
      continue;
    }
    if (n < 5 || strcmp(e->d_name + n - 4, ".sql")) continue;
    char *sql = read_file(path);
    assert_non_null(sql);
    assert_int_equal(chdir(dir), 0); /* data/… paths are relative to the script */
    for (int par = 1; par <= 3; par += 2) {
      ck_graph_t *graph;
      ck_error_t err;
      if (plan_sql(sql, par, &graph, &err)) continue; /* a case that must fail to plan */
      char what[PATH_MAX + 32];
      snprintf(what, sizeof what, "%s at parallelism %d", path, par);
      assert_round_trip(graph, what);
      ck_graph_free(graph);
      planned_cases++;
    }
    assert_int_equal(chdir(saved), 0);
    ck_free(sql);
  }
  closedir(d);
}

static void test_every_golden_case_round_trips_byte_identical(void **state) {
  (void)state;
  char here[PATH_MAX];
  snprintf(here, sizeof here, "%s", __FILE__);
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/../sql", dirname(here));
  planned_cases = 0;
  round_trip_dir(dir);
  /* 20 top-level cases plan at both parallelisms, and some of errors/ (which fail later) */
  print_message("%d golden plans round-tripped\n", planned_cases);
  if (planned_cases < 40) fail_msg("only %d golden plans round-tripped", planned_cases);
}

static void test_a_long_chain_of_first_operands_round_trips(void **state) {
  (void)state;
  enum { TERMS = 100000 };
  ck_buf_t sql;
  ck_buf_init(&sql);
  ck_buf_puts(&sql, "CREATE TABLE t (x BIGINT) WITH (connector = 'datagen', rows = '1');\n"
                    "SELECT x");
  for (int i = 1; i < TERMS; i++) ck_buf_puts(&sql, " + x");
  ck_buf_puts(&sql, " AS s FROM t;\n");
  ck_graph_t *graph;
  ck_error_t err;
  int rc = plan_sql(sql.data, 1, &graph, &err);
  if (rc) fail_msg("the chain did not plan: %s", err.message);
  assert_round_trip(graph, "a chain of 100,000 terms");
  ck_graph_free(graph);
  ck_buf_fini(&sql);
}

/* ---- a connector whose plan-time check counts its calls */
static int checks;
static int counting_check(const ck_schema_t *schema, const ck_options_t *opts, bool as_sink,
                          ck_error_t *err) {
  (void)schema, (void)opts, (void)as_sink, (void)err;
  checks++;
  return 0;
}
static const ck_opt_def_t counting_options[] = {
    {"host", CK_OPT_STRING, "127.0.0.1", NULL, false, "where the check would connect"},
    {"password", CK_OPT_STRING, NULL, NULL, false, "a credential"},
    {NULL, 0, NULL, NULL, false, NULL}};
static const ck_sink_ops_t counting_sink_ops; /* never opened here */
static const ck_connector_t counting = {
    .name = "counting_check", .description = "a test connector",
    .sink_options = counting_options, .sink = &counting_sink_ops,
    .sink_guarantee = CK_GUARANTEE_AT_LEAST_ONCE, .check = counting_check};

static const char *const counting_sql =
    "CREATE TABLE src (k INT, v BIGINT) WITH (connector = 'datagen', rows = '10');\n"
    "CREATE TABLE out (k INT, n BIGINT) WITH (connector = 'counting_check', host = '10.9.9.9', "
    "password = 'PASSWORD_SLOT');\n"
    "INSERT INTO out SELECT k, COUNT(*) AS n FROM src GROUP BY k;\n";

static int plan_counting(const char *password, int par, ck_graph_t **graph) {
  char *sql = ck_malloc(strlen(counting_sql) + 64);
  const char *slot = strstr(counting_sql, "PASSWORD_SLOT");
  sprintf(sql, "%.*s%s%s", (int)(slot - counting_sql), counting_sql, password,
          slot + strlen("PASSWORD_SLOT"));
  ck_error_t err;
  int rc = plan_sql(sql, par, graph, &err);
  if (rc) fail_msg("could not plan: %s", err.message);
  ck_free(sql);
  return rc;
}

static void test_decoding_runs_no_plan_time_check(void **state) {
  (void)state;
  ck_connector_register(&counting);
  ck_graph_t *graph;
  checks = 0;
  plan_counting("s3cret-password-1", 2, &graph);
  assert_int_equal(checks, 1); /* the planner (the coordinator) checks once */
  ck_buf_t wire;
  ck_buf_init(&wire);
  ck_plan_encode(graph, 0, &wire);
  for (int worker = 0; worker < 3; worker++) {
    ck_graph_t *back;
    ck_error_t err;
    ck_error_clear(&err);
    assert_int_equal(ck_plan_decode(wire.data, wire.len, &back, &err), 0);
    ck_graph_free(back);
  }
  assert_int_equal(checks, 1); /* no decode checked again */
  ck_buf_fini(&wire);
  ck_graph_free(graph);
}

static bool contains(const ck_buf_t *b, const char *needle) {
  size_t n = strlen(needle);
  for (size_t i = 0; i + n <= b->len; i++)
    if (!memcmp(b->data + i, needle, n)) return true;
  return false;
}

/* The three encodings of the counting job (graphs point into the script's arena, which the
 * next plan frees: encode at once). */
static void encode_counting(const char *password, int par, ck_buf_t *plain, ck_buf_t *masked,
                            ck_buf_t *identity) {
  ck_graph_t *graph;
  plan_counting(password, par, &graph);
  ck_plan_encode(graph, 0, plain);
  ck_plan_encode(graph, CK_PLAN_WIRE_REDACT, masked);
  ck_plan_identity(graph, identity);
  ck_graph_free(graph);
}

static void test_masked_forms_hold_no_credential_and_are_not_runnable(void **state) {
  (void)state;
  ck_connector_register(&counting);
  ck_buf_t b[9];
  for (int i = 0; i < 9; i++) ck_buf_init(&b[i]);
  encode_counting("s3cret-password-1", 2, &b[0], &b[1], &b[2]);
  encode_counting("rotated-password-2", 2, &b[3], &b[4], &b[5]);
  encode_counting("s3cret-password-1", 3, &b[6], &b[7], &b[8]);
  assert_true(contains(&b[0], "s3cret-password-1")); /* what a worker needs to connect */
  assert_false(contains(&b[1], "s3cret-password-1"));
  assert_true(contains(&b[1], "***"));
  assert_false(contains(&b[2], "s3cret-password-1"));
  assert_string_equal(b[2].data, b[5].data); /* rotating a password keeps the checkpoints */
  assert_string_equal(b[2].data, b[8].data); /* parallelism is checked on its own (lineage.h) */
  assert_true(b[0].len != b[3].len || memcmp(b[0].data, b[3].data, b[0].len));
  ck_graph_t *back = NULL;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_plan_decode(b[1].data, b[1].len, &back, &err), CK_EPROTO);
  assert_non_null(strstr(err.message, "masked"));
  assert_null(back);
  for (int i = 0; i < 9; i++) ck_buf_fini(&b[i]);
}

static void test_every_truncation_and_a_foreign_connector_are_refused(void **state) {
  (void)state;
  ck_graph_t *graph;
  ck_error_t err;
  assert_int_equal(plan_sql("CREATE TABLE s (k INT, ts BIGINT, name VARCHAR) WITH "
                            "(connector = 'datagen', rows = '5', event_time_column = 'ts');\n"
                            "SELECT k, window_start, COUNT(*) AS n, SUM(ts) AS t FROM s "
                            "WHERE k > 1 AND k IN (2, 3) AND name <> 'x' GROUP BY "
                            "TUMBLE(ts, INTERVAL '1' SECOND), k HAVING COUNT(*) > 0;\n",
                            2, &graph, &err), 0);
  ck_buf_t wire;
  ck_buf_init(&wire);
  ck_plan_encode(graph, 0, &wire);
  for (size_t cut = 0; cut < wire.len; cut++) {
    ck_graph_t *back = NULL;
    ck_error_clear(&err);
    int rc = ck_plan_decode(wire.data, cut, &back, &err);
    if (rc != CK_EPROTO) fail_msg("a cut at %zu of %zu bytes gave %d", cut, wire.len, rc);
    assert_null(back);
  }
  /* a byte flipped anywhere is refused or decodes into something in range (never a crash) */
  for (size_t at = 0; at < wire.len; at++) {
    wire.data[at] ^= 0x5a;
    ck_graph_t *back = NULL;
    ck_error_clear(&err);
    if (ck_plan_decode(wire.data, wire.len, &back, &err) == 0) ck_graph_free(back);
    wire.data[at] ^= 0x5a;
  }
  /* a connector this process does not have is named */
  char *p = NULL;
  for (size_t i = 0; i + 11 <= wire.len && !p; i++) /* the connector's name: str "datagen" */
    if (!memcmp(wire.data + i, "\7\0\0\0datagen", 11)) p = wire.data + i + 4;
  assert_non_null(p);
  memcpy(p, "nosuchc", 7);
  ck_graph_t *back = NULL;
  ck_error_clear(&err);
  assert_int_equal(ck_plan_decode(wire.data, wire.len, &back, &err), CK_ENOTFOUND);
  assert_non_null(strstr(err.message, "nosuchc"));
  ck_buf_fini(&wire);
  ck_graph_free(graph);
}

static void test_task_numbers_slots_and_edges_of_a_keyed_pipeline(void **state) {
  (void)state;
  ck_graph_t *graph;
  ck_error_t err;
  /* source+calc (3) ─hash─▶ agg+calc+print… print gathers to one subtask */
  assert_int_equal(plan_sql("CREATE TABLE s (k INT, v BIGINT) WITH (connector = 'datagen', "
                            "rows = '5');\nSELECT k, COUNT(*) AS n FROM s GROUP BY k;\n", 3,
                            &graph, &err), 0);
  ck_plan_t plan;
  ck_plan_build(graph, &plan);
  assert_int_equal(plan.nsegs, 3);
  assert_int_equal(plan.nslots, 3);
  /* segment 0 reads the source: tasks 0..2, no senders, feeds segment 1 */
  assert_int_equal(graph->nodes[plan.segs[0].first].kind, CK_NODE_SOURCE);
  assert_int_equal(plan.segs[0].first_task, 0);
  assert_int_equal(plan.segs[0].nsenders, 0);
  assert_int_equal(plan.segs[0].down, 1);
  /* segment 1 aggregates by key: tasks 3..5, each hears the 3 source subtasks */
  assert_int_equal(graph->nodes[plan.segs[1].first].edge, CK_EDGE_HASH);
  assert_int_equal(plan.segs[1].first_task, 3);
  assert_int_equal(plan.segs[1].nsenders, 3);
  assert_int_equal(plan.segs[1].down, 2);
  /* segment 2 is the print sink, gathered into one subtask: task 6 (snapshot v1/6) */
  assert_int_equal(graph->nodes[plan.segs[2].first].edge, CK_EDGE_GATHER);
  assert_int_equal(plan.segs[2].parallelism, 1);
  assert_int_equal(plan.segs[2].first_task, 6);
  assert_int_equal(plan.segs[2].down, -1);
  assert_int_equal(ck_plan_task(&plan, 1, 2), 5);
  assert_int_equal(ck_plan_slot(&plan, 2), 2);
  assert_int_equal(plan.ntasks, 7);
  assert_int_equal(plan.nsources, 3);
  assert_int_equal(plan.nsinks, 1);
  assert_int_equal(ck_exec_task_count(graph), plan.ntasks);
  ck_plan_fini(&plan);
  ck_graph_free(graph);
}

int main(void) {
  ck_connectors_register_all();
  ck_arena_init(&arena, 0);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_golden_case_round_trips_byte_identical),
      cmocka_unit_test(test_a_long_chain_of_first_operands_round_trips),
      cmocka_unit_test(test_decoding_runs_no_plan_time_check),
      cmocka_unit_test(test_masked_forms_hold_no_credential_and_are_not_runnable),
      cmocka_unit_test(test_every_truncation_and_a_foreign_connector_are_refused),
      cmocka_unit_test(test_task_numbers_slots_and_edges_of_a_keyed_pipeline),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  ck_arena_fini(&arena);
  return rc;
}
