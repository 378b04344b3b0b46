/*
 * DESIGN: unit tests for the flight recorder (src/capture/): what a recorder is given — batches
 * with NULLs, strings, decimals, booleans, floats and row kinds, watermarks, idleness and a
 * barrier — comes back from the file the barrier wrote, value for value and in order, through
 * the reader; the interval's summary counts it; a bound on records truncates and says so while
 * control events are still kept; a NULL recorder (capture off) summarises as disarmed.
 * Threads: the main thread only.
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
#include "capture/capture.h"
#include "cli/cli.h"
#include "connectors/connectors.h"
#include "runtime/plan.h"
#include "sql/parser.h"
#include "sql/planner.h"

static const char *SQL =
    "CREATE TABLE g (k BIGINT, s VARCHAR, d DECIMAL(10,2), b BOOLEAN, f FLOAT, i INT) WITH "
    "(connector = 'datagen', rows = '1');\n"
    "CREATE TABLE o (k BIGINT, s VARCHAR, d DECIMAL(10,2), b BOOLEAN, f FLOAT, i INT) WITH "
    "(connector = 'file', path = '/dev/null');\n"
    "INSERT INTO o SELECT k, s, d, b, f, i FROM g;\n";

typedef struct fx {
  ck_arena_t arena;
  ck_graph_t *graph;
  ck_plan_t plan;
  const ck_node_t *sink;
  char dir[64];
} fx_t;

static void setup(fx_t *fx) {
  ck_connectors_register_all();
  ck_arena_init(&fx->arena, 0);
  ck_script_t script;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_sql_parse_n(SQL, strlen(SQL), &fx->arena, &script, &err), 0);
  ck_plan_opts_t popts = {1, 128};
  assert_int_equal(ck_sql_plan(&script, &popts, &fx->graph, &err), 0);
  ck_plan_build(fx->graph, &fx->plan);
  fx->sink = NULL;
  for (int i = 0; i < fx->graph->nnodes; i++)
    if (fx->graph->nodes[i].kind == CK_NODE_SINK) fx->sink = &fx->graph->nodes[i];
  assert_non_null(fx->sink);
  snprintf(fx->dir, sizeof fx->dir, "/tmp/ck-capture-unit-%d", (int)getpid());
}

static void teardown(fx_t *fx) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", fx->dir);
  assert_int_equal(system(cmd), 0);
  ck_plan_fini(&fx->plan);
  ck_graph_free(fx->graph);
  ck_arena_fini(&fx->arena);
}

/* Five rows: row 1 all NULL, row 3 an update-after, strings of several lengths (one empty). */
static ck_batch_t *make_batch(const ck_node_t *sink) {
  const ck_schema_t *in = &sink->out_schema;
  ck_batch_t *b = ck_batch_new(in->ncols, in->types, 8);
  for (int r = 0; r < 5; r++) {
    if (r == 1) {
      for (int c = 0; c < in->ncols; c++) ck_col_append_null(&b->cols[c]);
    } else {
      char s[16];
      int n = snprintf(s, sizeof s, "%.*s", r, "abcdef");
      ck_col_append_i64(&b->cols[0], -7 * r);
      ck_col_append_str(&b->cols[1], s, (size_t)n);
      ck_col_append_dec(&b->cols[2], (ck_i128)12345 * r - 99);
      ck_col_append_bool(&b->cols[3], r % 2);
      ck_col_append_f32(&b->cols[4], 0.25f * (float)r);
      ck_col_append_i32(&b->cols[5], INT32_MIN + r);
    }
    b->nrows++;
  }
  b->kinds = ck_calloc(5, 1);
  b->kinds[3] = CK_ROW_UPDATE_AFTER;
  ck_batch_seal(b);
  return b;
}

static void render(const ck_batch_t *b, const ck_node_t *sink, ck_buf_t *out) {
  for (size_t r = 0; r < b->nrows; r++) {
    ck_capture_row_json(b, r, sink->out_schema.names, out);
    ck_buf_putc(out, '\n');
  }
}

static void read_file(const char *path, ck_buf_t *out) {
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_cli_read_file(path, out, &err), 0);
}

static void test_batches_and_events_round_trip(void **state) {
  (void)state;
  fx_t fx;
  setup(&fx);
  ck_error_t err;
  ck_error_clear(&err);
  ck_capture_opts_t o = {fx.dir, 0};
  ck_capture_t *cap;
  assert_int_equal(ck_capture_open(&o, fx.graph, &fx.plan, 0xabcdefULL, 4, &cap, &err), 0);
  ck_capture_rec_t *rec = ck_capture_rec_new(cap, fx.sink, 0, 2);
  assert_non_null(rec);
  ck_batch_t *b = make_batch(fx.sink);
  ck_capture_event(rec, CK_CAPTURE_WATERMARK, 1000, 0);
  ck_capture_batch(rec, b, 3);
  ck_capture_event(rec, CK_CAPTURE_IDLE, 0, 1);
  ck_capture_batch(rec, b, 0);
  ck_capture_summary_t s;
  ck_capture_barrier(rec, 5, &s);
  assert_int_equal(s.state, CK_CAPTURE_WRITTEN);
  assert_int_equal(s.epoch, 5);
  assert_int_equal(s.from_checkpoint, 4);
  assert_int_equal(s.records_seen, 10);
  assert_int_equal(s.records_stored, 10);
  assert_false(s.truncated);
  assert_non_null(strstr(s.path, "/op-"));
  assert_non_null(strstr(s.path, "/subtask-0/epoch-5.cap"));

  ck_buf_t file, want, got;
  ck_buf_init(&file);
  ck_buf_init(&want);
  ck_buf_init(&got);
  read_file(s.path, &file);
  ck_capture_reader_t *r;
  assert_int_equal(ck_capture_reader_open(file.data, file.len, &r, &err), 0);
  const ck_capture_header_t *h = ck_capture_reader_header(r);
  assert_int_equal(h->epoch, 5);
  assert_int_equal(h->from_checkpoint, 4);
  assert_int_equal(h->task, 2);
  assert_int_equal(h->records_seen, 10);
  assert_true(h->plan_fingerprint == 0xabcdefULL);
  assert_int_equal(h->ncols, 6);
  static const int kinds[] = {CK_CAPTURE_WATERMARK, CK_CAPTURE_RECORD, CK_CAPTURE_IDLE,
                              CK_CAPTURE_RECORD, CK_CAPTURE_BARRIER};
  static const int inputs[] = {0, 3, 1, 0, 0};
  static const int64_t values[] = {1000, 0, 0, 0, 5};
  render(b, fx.sink, &want);
  for (int i = 0; i < 5; i++) {
    ck_capture_item_t item;
    assert_int_equal(ck_capture_reader_next(r, &item, &err), 1);
    assert_int_equal(item.kind, kinds[i]);
    assert_int_equal(item.input, inputs[i]);
    if (item.kind != CK_CAPTURE_RECORD) {
      assert_int_equal(item.value, values[i]);
      assert_null(item.batch);
      continue;
    }
    ck_buf_reset(&got);
    render(item.batch, fx.sink, &got);
    assert_int_equal(got.len, want.len);
    assert_memory_equal(got.data, want.data, want.len);
    assert_int_equal(item.batch->kinds[3], CK_ROW_UPDATE_AFTER);
    ck_batch_free(item.batch);
  }
  ck_capture_item_t end;
  assert_int_equal(ck_capture_reader_next(r, &end, &err), 0);
  ck_capture_reader_free(r);
  /* the row with every column NULL renders so, and the rendering is what capture-cat shows */
  assert_non_null(strstr(want.data, "{\"k\":null,\"s\":null,\"d\":null,\"b\":null,\"f\":null,\"i\":null}"));
  assert_non_null(strstr(want.data, "\"__kind\":\"+U\",\"k\":-21,\"s\":\"abc\",\"d\":\"369.36\""));

  /* the next interval starts from checkpoint 5; with nothing in it, it is empty */
  ck_capture_finish(rec, &s);
  assert_int_equal(s.state, CK_CAPTURE_EMPTY);
  assert_true(s.epoch == CK_CAPTURE_EPOCH_FINAL);
  assert_int_equal(s.from_checkpoint, 5);
  assert_non_null(strstr(s.path, "epoch-final.cap"));
  ck_capture_summary_t last;
  ck_capture_last(rec, &last);
  assert_int_equal(last.state, CK_CAPTURE_EMPTY);
  ck_batch_free(b);
  ck_capture_rec_free(rec);
  ck_capture_close(cap);
  ck_buf_fini(&file);
  ck_buf_fini(&want);
  ck_buf_fini(&got);
  teardown(&fx);
}

static void test_bound_truncates_but_keeps_events(void **state) {
  (void)state;
  fx_t fx;
  setup(&fx);
  ck_error_t err;
  ck_error_clear(&err);
  ck_capture_opts_t o = {fx.dir, 7};
  ck_capture_t *cap;
  assert_int_equal(ck_capture_open(&o, fx.graph, &fx.plan, 1, 0, &cap, &err), 0);
  ck_capture_rec_t *rec = ck_capture_rec_new(cap, fx.sink, 1, 1);
  ck_batch_t *b = make_batch(fx.sink);
  ck_capture_batch(rec, b, 0);
  ck_capture_batch(rec, b, 0); /* 2 of these 5 fit */
  ck_capture_batch(rec, b, 0); /* none of these */
  ck_capture_event(rec, CK_CAPTURE_WATERMARK, 77, 0);
  ck_capture_summary_t s;
  ck_capture_barrier(rec, 1, &s);
  assert_int_equal(s.records_seen, 15);
  assert_int_equal(s.records_stored, 7);
  assert_true(s.truncated);
  ck_buf_t file;
  ck_buf_init(&file);
  read_file(s.path, &file);
  ck_capture_reader_t *r;
  assert_int_equal(ck_capture_reader_open(file.data, file.len, &r, &err), 0);
  assert_true(ck_capture_reader_header(r)->truncated);
  size_t rows = 0;
  bool wm = false, barrier = false;
  ck_capture_item_t item;
  while (ck_capture_reader_next(r, &item, &err) == 1) {
    if (item.batch) rows += item.batch->nrows, ck_batch_free(item.batch);
    wm |= item.kind == CK_CAPTURE_WATERMARK && item.value == 77;
    barrier |= item.kind == CK_CAPTURE_BARRIER && item.value == 1;
  }
  assert_int_equal(rows, 7);
  assert_true(wm && barrier);
  ck_capture_reader_free(r);
  ck_buf_fini(&file);
  ck_batch_free(b);
  ck_capture_rec_free(rec);
  ck_capture_close(cap);
  teardown(&fx);
}

/* a run without checkpoints is one interval: its watermarks are bounded too */
static void test_bound_holds_for_watermarks(void **state) {
  (void)state;
  fx_t fx;
  setup(&fx);
  ck_error_t err;
  ck_error_clear(&err);
  ck_capture_opts_t o = {fx.dir, 7};
  ck_capture_t *cap;
  assert_int_equal(ck_capture_open(&o, fx.graph, &fx.plan, 1, 0, &cap, &err), 0);
  ck_capture_rec_t *rec = ck_capture_rec_new(cap, fx.sink, 0, 1);
  for (int i = 0; i < 10; i++) ck_capture_event(rec, CK_CAPTURE_WATERMARK, i, 0);
  ck_capture_summary_t s;
  ck_capture_finish(rec, &s);
  assert_int_equal(s.state, CK_CAPTURE_EMPTY);
  assert_true(s.truncated);
  ck_buf_t file;
  ck_buf_init(&file);
  read_file(s.path, &file);
  ck_capture_reader_t *r;
  assert_int_equal(ck_capture_reader_open(file.data, file.len, &r, &err), 0);
  int wms = 0, ends = 0;
  ck_capture_item_t item;
  while (ck_capture_reader_next(r, &item, &err) == 1) {
    wms += item.kind == CK_CAPTURE_WATERMARK;
    ends += item.kind == CK_CAPTURE_END;
  }
  assert_int_equal(wms, 7);
  assert_int_equal(ends, 1);
  ck_capture_reader_free(r);
  ck_buf_fini(&file);
  ck_capture_rec_free(rec);
  ck_capture_close(cap);
  teardown(&fx);
}

static void test_off_is_disarmed(void **state) {
  (void)state;
  ck_capture_t *cap = (ck_capture_t *)1;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_capture_open(NULL, NULL, NULL, 0, 0, &cap, &err), 0);
  assert_null(cap);
  ck_capture_summary_t s;
  ck_capture_batch(NULL, NULL, 0);
  ck_capture_barrier(NULL, 3, &s);
  assert_int_equal(s.state, CK_CAPTURE_DISARMED);
  assert_int_equal(s.epoch, 3);
  assert_string_equal(ck_capture_state_name(s.state), "disarmed");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_batches_and_events_round_trip),
      cmocka_unit_test(test_bound_truncates_but_keeps_events),
      cmocka_unit_test(test_bound_holds_for_watermarks),
      cmocka_unit_test(test_off_is_disarmed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
