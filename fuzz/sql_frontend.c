/*
 * DESIGN: libFuzzer target for the SQL front end (src/sql/: tokenizer, parser, binder,
 * planner) and the expression walks the planner uses (src/runtime/expr.c): arbitrary bytes as
 * a SQL script, parsed and planned, never executed.
 *
 * Two connectors stand in for the real ones, so planning does no I/O and every table can be
 * read and written: 'fuzz' (source and sink; the common options, and 'path' and 'format',
 * which it ignores) and 'print' (the sink of a bare SELECT). The seeds under
 * fuzz/corpus/sql_frontend/ are tests/sql's scripts with connector 'file' made 'fuzz'.
 *
 * Properties checked, besides "no crash, no leak, no undefined behaviour, no stack overflow"
 * under ASan+UBSan:
 *   - parse and plan return 0 or a negative CK_E… code; on an error the message is set, and a
 *     positioned error's line:column lies inside the script (line <= lines in it);
 *   - the error renders (ck_sql_render_error) without crashing, and its first line starts
 *     "<fuzz>:" or "error:";
 *   - a planned graph describes itself (ck_graph_describe, which prints every expression) and
 *     the description is the same when the script is parsed and planned a second time (the
 *     planner is a pure function of the text);
 *   - parsing is deterministic: the same input gives the same error (code, line, column,
 *     message) both times.
 *
 * Build and run: scripts/fuzz.sh sql_frontend [SECONDS] (see fuzz/README.md).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"
#include "runtime/connector.h"
#include "sql/parser.h"
#include "sql/planner.h"

/* the file connector's option names, so the seeds (tests/sql with 'file' made 'fuzz') plan */
static const ck_opt_def_t fuzz_options[] = {
    {"path", CK_OPT_STRING, NULL, NULL, false, "ignored"},
    {"format", CK_OPT_STRING, NULL, NULL, false, "ignored"},
    {NULL, 0, NULL, NULL, false, NULL}};
static const ck_opt_def_t no_options[] = {{NULL, 0, NULL, NULL, false, NULL}};
static const ck_source_ops_t fuzz_source_ops;
static const ck_sink_ops_t fuzz_sink_ops;

static const ck_connector_t fuzz_conn = {
    .name = "fuzz", .description = "fuzz target stand-in", .source_options = fuzz_options,
    .sink_options = fuzz_options, .source = &fuzz_source_ops, .sink = &fuzz_sink_ops,
    .sink_guarantee = CK_GUARANTEE_AT_LEAST_ONCE, .bounded = true};
static const ck_connector_t print_conn = {
    .name = "print", .description = "stdout stand-in", .sink_options = no_options,
    .sink = &fuzz_sink_ops, .sink_guarantee = CK_GUARANTEE_NONE};

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  ck_connector_register(&fuzz_conn);
  ck_connector_register(&print_conn);
  return 0;
}

typedef struct outcome {
  int rc;
  ck_error_t err;
  ck_buf_t desc; /* the graph's description when planned */
} outcome_t;

static void plan_once(const char *sql, size_t len, outcome_t *o) {
  ck_arena_t arena;
  ck_arena_init(&arena, 0);
  ck_script_t script;
  ck_graph_t *graph = NULL;
  ck_error_clear(&o->err);
  ck_buf_init(&o->desc);
  o->rc = ck_sql_parse_n(sql, len, &arena, &script, &o->err);
  if (!o->rc) {
    ck_plan_opts_t opts = {2, 16};
    o->rc = ck_sql_plan(&script, &opts, &graph, &o->err);
  }
  if (!o->rc) {
    ck_graph_describe(graph, &o->desc);
    ck_buf_t g;
    ck_buf_init(&g);
    ck_graph_guarantee(graph, true, &g);
    ck_buf_fini(&g);
    ck_graph_free(graph);
  }
  ck_arena_fini(&arena);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* a NUL-terminated copy: the parser reads the terminator as the end of the last token */
  char *sql = malloc(size + 1);
  memcpy(sql, data, size);
  sql[size] = 0;
  int lines = 1;
  for (size_t i = 0; i < size; i++) lines += sql[i] == '\n';

  outcome_t a, b;
  plan_once(sql, size, &a);
  plan_once(sql, size, &b);
  if (a.rc > 0 || (a.rc && !a.err.code)) abort();
  if (a.rc != b.rc || a.err.code != b.err.code || a.err.line != b.err.line ||
      a.err.column != b.err.column || strcmp(a.err.message, b.err.message) != 0)
    abort();
  if (a.rc) {
    if (!a.err.message[0]) abort();
    if (a.err.line < 0 || a.err.line > lines || a.err.column < 0) abort();
    ck_buf_t msg;
    ck_buf_init(&msg);
    ck_sql_render_error(sql, "<fuzz>", &a.err, &msg);
    if (!msg.data || (strncmp(msg.data, "<fuzz>:", 7) != 0 && strncmp(msg.data, "error:", 6) != 0))
      abort();
    ck_buf_fini(&msg);
  } else if (a.desc.len != b.desc.len || memcmp(a.desc.data, b.desc.data, a.desc.len) != 0) {
    abort();
  }
  ck_buf_fini(&a.desc);
  ck_buf_fini(&b.desc);
  free(sql);
  return 0;
}
