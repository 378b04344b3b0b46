/*
 * DESIGN: unit tests for the aggregation operator (src/runtime/agg_*.c).
 *
 * Each test builds an agg node (out_schema + ck_agg_spec_t) in an arena, starts the operator
 * with ck_agg_op_init, points op->out at a capturing sink and drives it directly with batches
 * and watermarks. Everything the operator emits is rendered as text, one line per row
 * ("+I 1 0 10 2 3": row kind, then the columns) or per watermark ("wm 10"), and compared
 * with the exact expected text, so a wrong value, order, row kind, missing or extra row, or a
 * watermark forwarded too early fails with both texts printed. Snapshot tests run the same
 * input through the original operator and through a fresh one restored from its snapshot and
 * require identical output. Every test checks that the heap returns to where it started.
 *
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

#include "base/alloc.h"
#include <math.h>

#include "runtime/agg.h"
#include "runtime/expr.h"
#include "runtime/op.h"
#include "test_runtime_util.h"

#define NUL INT64_MIN /* a NULL cell in the int64 row helpers */
#define MAXK 4
#define MAXC 12

static const ck_type_t I64 = {CK_T_INT64, 0, 0};
static const ck_type_t I32 = {CK_T_INT32, 0, 0};
static const ck_type_t TS = {CK_T_TIMESTAMP, 0, 0};
static const ck_type_t F64 = {CK_T_FLOAT64, 0, 0};
static const ck_type_t F32 = {CK_T_FLOAT32, 0, 0};
static const ck_type_t STR = {CK_T_STRING, 0, 0};
static const ck_type_t BOOL_T = {CK_T_BOOL, 0, 0};
static ck_type_t dec(int p, int s) { return (ck_type_t){CK_T_DECIMAL, (uint8_t)p, (uint8_t)s}; }

/* ---- fixture: an agg node, its operator and a capturing output ---- */

typedef struct fx {
  ck_arena_t arena;
  ck_node_t node;
  ck_op_t op;
  ck_error_t err;
  /* spec under construction */
  ck_window_spec_t win;
  int64_t lateness;
  int nkeys, key_cols[MAXK];
  ck_type_t key_types[MAXK];
  int ncalls;
  ck_agg_call_t calls[MAXC];
  const ck_expr_t *having;
  /* capture */
  ck_buf_t log;
  bool quiet;          /* count rows instead of rendering them */
  int64_t rows, batches, max_batch, last_key;
  bool sorted;         /* quiet: column 0 ascended across every row */
  int64_t mem_blocks;  /* heap blocks live before the test */
} fx_t;

static int cap_batch(void *ctx, ck_batch_t *batch, ck_error_t *err) {
  fx_t *f = ctx;
  static const char *const kinds[] = {"+I", "-U", "+U", "-D"};
  f->batches++;
  if ((int64_t)batch->nrows > f->max_batch) f->max_batch = (int64_t)batch->nrows;
  for (size_t i = 0; i < batch->nrows; i++) {
    f->rows++;
    if (f->quiet) {
      int64_t k = ck_col_i64(&batch->cols[0], i);
      if (f->rows > 1 && k <= f->last_key) f->sorted = false;
      f->last_key = k;
      continue;
    }
    ck_buf_puts(&f->log, kinds[ck_batch_kind(batch, i)]);
    for (int c = 0; c < batch->ncols; c++) {
      ck_buf_putc(&f->log, ' ');
      t_render(&f->log, &batch->cols[c], i);
    }
    ck_buf_putc(&f->log, '\n');
  }
  ck_batch_free(batch);
  return 0;
}

static int cap_wm(void *ctx, int64_t wm, ck_error_t *err) {
  fx_t *f = ctx;
  if (!f->quiet) ck_buf_printf(&f->log, "wm %lld\n", (long long)wm);
  return 0;
}

static void fx_init(fx_t *f, ck_win_kind_t kind) {
  memset(f, 0, sizeof *f);
  f->mem_blocks = ck_mem_stats().live_blocks;
  ck_arena_init(&f->arena, 0);
  ck_buf_init(&f->log);
  f->win.kind = kind;
  f->win.time_col = 1;
  f->sorted = true;
}

static void fx_key(fx_t *f, int col, ck_type_t type) {
  f->key_cols[f->nkeys] = col;
  f->key_types[f->nkeys++] = type;
}

static ck_type_t result_type(ck_agg_fn_t fn, ck_type_t arg) {
  switch (fn) {
    case CK_AGG_COUNT_STAR:
    case CK_AGG_COUNT: return I64;
    case CK_AGG_SUM:
      if (arg.id == CK_T_DECIMAL) return dec(38, arg.scale);
      return arg.id == CK_T_FLOAT32 || arg.id == CK_T_FLOAT64 ? F64 : I64;
    case CK_AGG_AVG:
      if (arg.id == CK_T_DECIMAL) return dec(38, arg.scale > 6 ? arg.scale : 6);
      return F64;
    case CK_AGG_LISTAGG: return STR;
    case CK_AGG_APPROX_COUNT_DISTINCT: return I64;
    default: return arg;
  }
}

static void fx_call(fx_t *f, ck_agg_fn_t fn, bool distinct, int col, ck_type_t arg) {
  ck_agg_call_t *c = &f->calls[f->ncalls++];
  c->fn = fn;
  c->distinct = distinct;
  c->arg_col = fn == CK_AGG_COUNT_STAR ? -1 : col;
  c->arg_type = fn == CK_AGG_COUNT_STAR ? I64 : arg;
  c->result_type = result_type(fn, c->arg_type);
}

/* Output column i of the node being built (for HAVING). */
static int out_col(const fx_t *f, int call) {
  return f->nkeys + (f->win.kind != CK_WIN_NONE ? 2 : 0) + call;
}

static int fx_try_start(fx_t *f, int subtask, int parallelism) {
  ck_node_t *n = &f->node;
  ck_agg_spec_t *s = &n->u.agg;
  n->id = 1;
  n->kind = CK_NODE_AGG;
  n->name = "window_agg";
  n->parallelism = parallelism;
  n->changelog = f->win.kind == CK_WIN_NONE;
  s->nkeys = f->nkeys;
  s->key_cols = ck_arena_alloc(&f->arena, sizeof(int) * MAXK);
  memcpy(s->key_cols, f->key_cols, sizeof(int) * MAXK);
  s->ncalls = f->ncalls;
  s->calls = ck_arena_alloc(&f->arena, sizeof(ck_agg_call_t) * MAXC);
  memcpy(s->calls, f->calls, sizeof(ck_agg_call_t) * MAXC);
  s->window = f->win;
  s->allowed_lateness_ms = f->lateness;
  s->having = f->having;
  int nout = out_col(f, f->ncalls);
  n->out_schema = ck_schema_make(&f->arena, nout);
  int c = 0;
  for (int k = 0; k < f->nkeys; k++) n->out_schema.types[c++] = f->key_types[k];
  if (f->win.kind != CK_WIN_NONE) {
    n->out_schema.types[c++] = TS;
    n->out_schema.types[c++] = TS;
  }
  for (int i = 0; i < f->ncalls; i++) n->out_schema.types[c++] = f->calls[i].result_type;
  f->op.node = n;
  f->op.subtask = subtask;
  f->op.parallelism = parallelism;
  f->op.max_parallelism = 128;
  f->op.out = (ck_out_t){cap_batch, cap_wm, f};
  int rc = ck_agg_op_init(&f->op, &f->err);
  if (rc == 0) assert_int_equal(f->op.ops->open(&f->op, &f->err), 0);
  return rc;
}

static void fx_start(fx_t *f) {
  int rc = fx_try_start(f, 0, 1);
  if (rc) fprintf(stderr, "init failed: %s\n", f->err.message);
  assert_int_equal(rc, 0);
}

static void fx_close(fx_t *f) {
  if (f->op.impl) f->op.ops->close(&f->op);
  ck_buf_fini(&f->log);
  ck_arena_fini(&f->arena);
}

static void fx_fini(fx_t *f) {
  fx_close(f);
  assert_int_equal(ck_mem_stats().live_blocks, f->mem_blocks); /* nothing leaked */
}

/* Asserts the text emitted since the last check, then forgets it. */
static void expect(fx_t *f, const char *want) {
  assert_string_equal(f->log.data ? f->log.data : "", want);
  ck_buf_reset(&f->log);
  if (f->log.data) f->log.data[0] = 0;
}

static void wm(fx_t *f, int64_t w) {
  assert_int_equal(f->op.ops->watermark(&f->op, w, &f->err), 0);
}

static int process(fx_t *f, ck_batch_t *b) {
  ck_batch_seal(b);
  int rc = f->op.ops->process(&f->op, b, &f->err);
  ck_batch_free(b);
  return rc;
}

static void append_i64(ck_col_t *col, int64_t v) {
  if (v == NUL) ck_col_append_null(col);
  else if (col->type.id == CK_T_INT32) ck_col_append_i32(col, (int32_t)v);
  else ck_col_append_i64(col, v);
}

/* Rows of (key BIGINT, ts TIMESTAMP, v BIGINT); NUL marks NULL. */
static void push(fx_t *f, size_t n, const int64_t (*rows)[3]) {
  ck_type_t types[3] = {I64, TS, I64};
  ck_batch_t *b = ck_batch_new(3, types, n);
  for (size_t i = 0; i < n; i++)
    for (int c = 0; c < 3; c++) append_i64(&b->cols[c], rows[i][c]);
  int rc = process(f, b);
  if (rc) fprintf(stderr, "process failed: %s\n", f->err.message);
  assert_int_equal(rc, 0);
}
#define PUSH(f, ...)                                                     \
  do {                                                                   \
    static const int64_t rows_[][3] = {__VA_ARGS__};                     \
    push((f), sizeof rows_ / sizeof rows_[0], rows_);                    \
  } while (0)

/* The common layout: key col 0, event time col 1, COUNT(*) and SUM(col 2). */
static void fx_count_sum(fx_t *f, ck_win_kind_t kind) {
  fx_init(f, kind);
  fx_key(f, 0, I64);
  fx_call(f, CK_AGG_COUNT_STAR, false, -1, I64);
  fx_call(f, CK_AGG_SUM, false, 2, I64);
}

/* ---- tumbling windows ---- */

static void test_agg_tumble_fires_at_window_end_in_order(void **state) {
  fx_t f;
  fx_count_sum(&f, CK_WIN_TUMBLE);
  f.win.size = 10;
  fx_start(&f);
  PUSH(&f, {2, 1, 10}, {1, 5, 1}, {1, 9, 2}, {1, 10, 4}, {2, -1, 100}, {1, -10, 7});
  expect(&f, "");
  assert_int_equal(f.op.metrics.records_in, 6);
  assert_int_equal(f.op.metrics.state_entries, 5);
  wm(&f, 9); /* [-10, 0) is complete, [0, 10) is not: 9 can still come */
  expect(&f, "+I 1 -10 0 1 7\n+I 2 -10 0 1 100\nwm 9\n");
  wm(&f, 10); /* a watermark exactly at the end fires */
  expect(&f, "+I 1 0 10 2 3\n+I 2 0 10 1 10\nwm 10\n");
  wm(&f, 10); /* nothing new: not forwarded again */
  wm(&f, 7);  /* watermarks never go back */
  expect(&f, "");
  assert_int_equal(f.op.metrics.state_entries, 1);
  wm(&f, CK_WATERMARK_MAX);
  expect(&f, "+I 1 10 20 1 4\nwm 9223372036854775807\n");
  assert_int_equal(f.op.metrics.state_entries, 0);
  assert_int_equal(f.op.metrics.records_out, 5);
  assert_int_equal(f.op.metrics.late_dropped, 0);
  assert_int_equal(f.op.metrics.watermark, CK_WATERMARK_MAX);
  fx_fini(&f);
}

static void test_agg_tumble_late_records_dropped_and_counted(void **state) {
  fx_t f;
  fx_count_sum(&f, CK_WIN_TUMBLE);
  f.win.size = 10;
  fx_start(&f);
  PUSH(&f, {1, 3, 1});
  wm(&f, 10);
  expect(&f, "+I 1 0 10 1 1\nwm 10\n");
  PUSH(&f, {1, 5, 2}, {1, 10, 3}, {1, NUL, 4}, {1, 9, 5}); /* 5, 9: late; NULL time: dropped */
  assert_int_equal(f.op.metrics.late_dropped, 3);
  wm(&f, 20);
  expect(&f, "+I 1 10 20 1 3\nwm 20\n");
  fx_fini(&f);
}

static void test_agg_tumble_allowed_lateness(void **state) {
  fx_t f;
  fx_count_sum(&f, CK_WIN_TUMBLE);
  f.win.size = 10;
  f.lateness = 5;
  fx_start(&f);
  PUSH(&f, {1, 3, 1});
  wm(&f, 14); /* [0, 10) waits until 10 + 5 */
  expect(&f, "wm 14\n");
  PUSH(&f, {1, 7, 2}); /* behind the watermark but within lateness: counted */
  assert_int_equal(f.op.metrics.late_dropped, 0);
  wm(&f, 15);
  expect(&f, "+I 1 0 10 2 3\nwm 15\n");
  PUSH(&f, {1, 8, 4}, {1, 12, 8});
  assert_int_equal(f.op.metrics.late_dropped, 1);
  wm(&f, 24);
  expect(&f, "wm 24\n");
  wm(&f, 25);
  expect(&f, "+I 1 10 20 1 8\nwm 25\n");
  fx_fini(&f);
}

static void test_agg_tumble_many_groups_batches_sorted(void **state) {
  fx_t f;
  fx_count_sum(&f, CK_WIN_TUMBLE);
  f.win.size = 1000;
  fx_start(&f);
  f.quiet = true;
  enum { N = 3000 };
  ck_type_t types[3] = {I64, TS, I64};
  ck_batch_t *b = ck_batch_new(3, types, N); /* one input batch larger than CK_BATCH_ROWS */
  for (int i = 0; i < N; i++) {
    ck_col_append_i64(&b->cols[0], N - i); /* keys arrive descending */
    ck_col_append_i64(&b->cols[1], i % 1000);
    ck_col_append_i64(&b->cols[2], 1);
  }
  assert_int_equal(process(&f, b), 0);
  wm(&f, 1000);
  assert_int_equal(f.rows, N);
  assert_int_equal(f.batches, 3); /* 1024 + 1024 + 952 */
  assert_int_equal(f.max_batch, CK_BATCH_ROWS);
  assert_true(f.sorted);
  fx_fini(&f);
}

static void test_agg_window_without_keys(void **state) {
  fx_t f, g;
  fx_init(&f, CK_WIN_TUMBLE);
  f.win.size = 10;
  fx_call(&f, CK_AGG_COUNT_STAR, false, -1, I64);
  fx_call(&f, CK_AGG_SUM, false, 2, I64);
  fx_start(&f);
  PUSH(&f, {7, 1, 1}, {8, 2, 2}, {9, 12, 4});
  ck_buf_t snap;
  ck_buf_init(&snap);
  assert_int_equal(f.op.ops->snapshot(&f.op, &snap, &f.err), 0);
  g = f; /* same spec, fresh operator */
  memset(&g.op, 0, sizeof g.op);
  ck_buf_init(&g.log);
  ck_arena_init(&g.arena, 0);
  fx_start(&g);
  assert_int_equal(g.op.ops->restore(&g.op, snap.data, snap.len, &g.err), 0);
  wm(&f, 20);
  wm(&g, 20);
  expect(&f, "+I 0 10 2 3\n+I 10 20 1 4\nwm 20\n");
  expect(&g, "+I 0 10 2 3\n+I 10 20 1 4\nwm 20\n");
  ck_buf_fini(&snap);
  fx_close(&g);
  fx_fini(&f);
}

/* ---- hopping, session and cumulating windows ---- */

static void test_agg_hop_windows_and_partial_lateness(void **state) {
  fx_t f;
  fx_count_sum(&f, CK_WIN_HOP);
  f.win.size = 10;
  f.win.slide = 5;
  fx_start(&f);
  PUSH(&f, {1, 7, 1}, {1, -3, 2}, {2, 4, 3});
  wm(&f, 10);
  expect(&f,
         "+I 1 -10 0 1 2\n"
         "+I 1 -5 5 1 2\n+I 2 -5 5 1 3\n"
         "+I 1 0 10 1 1\n+I 2 0 10 1 3\n"
         "wm 10\n");
  PUSH(&f, {1, 8, 10}); /* [0, 10) fired but [5, 15) is open: not late */
  assert_int_equal(f.op.metrics.late_dropped, 0);
  PUSH(&f, {1, 2, 20}); /* both of its windows fired: late, counted once */
  assert_int_equal(f.op.metrics.late_dropped, 1);
  wm(&f, 15);
  expect(&f, "+I 1 5 15 2 11\nwm 15\n");
  assert_int_equal(f.op.metrics.state_entries, 0);
  fx_fini(&f);
}

static void test_agg_session_out_of_order_merge(void **state) {
  fx_t f;
  fx_count_sum(&f, CK_WIN_SESSION);
  f.win.gap = 10;
  fx_start(&f);
  PUSH(&f, {1, 0, 1}, {1, 22, 2}, {2, 5, 100});
  assert_int_equal(f.op.metrics.state_entries, 3); /* k1 [0,10) [22,32), k2 [5,15) */
  PUSH(&f, {1, 11, 4});                            /* [11, 21): touches neither */
  assert_int_equal(f.op.metrics.state_entries, 4);
  PUSH(&f, {1, 10, 8}); /* bridges [0,10) and [11,21) */
  assert_int_equal(f.op.metrics.state_entries, 3);
  wm(&f, 15);
  expect(&f, "+I 2 5 15 1 100\nwm 15\n");
  PUSH(&f, {1, 21, 16}); /* bridges [0,21) and [22,32) */
  assert_int_equal(f.op.metrics.state_entries, 1);
  wm(&f, 31);
  expect(&f, "wm 31\n");
  PUSH(&f, {3, 15, 1000}); /* complete on its own, no open session to join: late */
  assert_int_equal(f.op.metrics.late_dropped, 1);
  PUSH(&f, {1, 6, 32}); /* behind the watermark, but joins the open session (as Flink) */
  assert_int_equal(f.op.metrics.late_dropped, 1);
  wm(&f, 32);
  expect(&f, "+I 1 0 32 6 63\nwm 32\n");
  assert_int_equal(f.op.metrics.state_entries, 0);
  PUSH(&f, {5, 100, 1}, {4, 100, 2}, {4, 105, 3}, {5, 200, 4});
  wm(&f, CK_WATERMARK_MAX);
  expect(&f,
         "+I 5 100 110 1 1\n+I 4 100 115 2 5\n+I 5 200 210 1 4\n"
         "wm 9223372036854775807\n");
  fx_fini(&f);
}

static void test_agg_session_same_bounds_ordered_by_key(void **state) {
  fx_t f;
  fx_count_sum(&f, CK_WIN_SESSION);
  f.win.gap = 10;
  fx_start(&f);
  PUSH(&f, {9, 50, 1}, {3, 50, 2}, {7, 50, 3}, {3, 52, 4}, {9, 52, 5}, {7, 52, 6});
  wm(&f, 100);
  expect(&f, "+I 3 50 62 2 6\n+I 7 50 62 2 9\n+I 9 50 62 2 6\nwm 100\n");
  fx_fini(&f);
}

static void test_agg_session_merge_keeps_distinct_and_min(void **state) {
  fx_t f;
  fx_init(&f, CK_WIN_SESSION);
  f.win.gap = 10;
  fx_key(&f, 0, I64);
  fx_call(&f, CK_AGG_COUNT, true, 2, I64);
  fx_call(&f, CK_AGG_MIN, false, 2, I64);
  fx_call(&f, CK_AGG_MAX, false, 2, I64);
  fx_call(&f, CK_AGG_AVG, false, 2, I64);
  fx_start(&f);
  PUSH(&f, {1, 0, 5}, {1, 1, 7}, {1, 30, 5}, {1, 31, 3}); /* [0,11) and [30,41) */
  PUSH(&f, {1, 10, 7});                                   /* [0, 20) */
  PUSH(&f, {1, 20, NUL});                                 /* bridges it and [30, 41) */
  assert_int_equal(f.op.metrics.state_entries, 1);
  wm(&f, 41);
  expect(&f, "+I 1 0 41 3 3 7 5.4\nwm 41\n");
  fx_fini(&f);
}

static void test_agg_cumulate_windows(void **state) {
  fx_t f;
  fx_count_sum(&f, CK_WIN_CUMULATE);
  f.win.step = 5;
  f.win.size = 15;
  fx_start(&f);
  PUSH(&f, {1, 7, 1}, {1, 0, 2}, {1, 14, 4}, {1, -1, 8});
  wm(&f, 10);
  expect(&f, "+I 1 -15 0 1 8\n+I 1 0 5 1 2\n+I 1 0 10 2 3\nwm 10\n");
  PUSH(&f, {1, 12, 16});
  wm(&f, 15);
  expect(&f, "+I 1 0 15 4 23\nwm 15\n");
  PUSH(&f, {1, 9, 32}); /* [0, 10) and [0, 15) both fired */
  assert_int_equal(f.op.metrics.late_dropped, 1);
  fx_fini(&f);
}

/* ---- aggregate functions ---- */

static void test_agg_functions_with_nulls(void **state) {
  fx_t f;
  fx_init(&f, CK_WIN_TUMBLE);
  f.win.size = 10;
  fx_key(&f, 0, I64);
  fx_call(&f, CK_AGG_COUNT_STAR, false, -1, I64);
  fx_call(&f, CK_AGG_COUNT, false, 2, I64);
  fx_call(&f, CK_AGG_SUM, false, 2, I64);
  fx_call(&f, CK_AGG_AVG, false, 2, I64);
  fx_call(&f, CK_AGG_MIN, false, 2, I64);
  fx_call(&f, CK_AGG_MAX, false, 2, I64);
  fx_start(&f);
  PUSH(&f, {1, 0, 3}, {1, 1, NUL}, {2, 1, NUL}, {1, 2, -5}, {2, 3, NUL}, {1, 4, 4});
  wm(&f, 10);
  expect(&f,
         "+I 1 0 10 4 3 2 0.6666666666666666 -5 4\n"
         "+I 2 0 10 2 0 null null null null\n"
         "wm 10\n");
  fx_fini(&f);
}

static void test_agg_functions_over_other_types(void **state) {
  fx_t f;
  fx_init(&f, CK_WIN_TUMBLE);
  f.win.size = 10;
  fx_key(&f, 0, I64);
  fx_call(&f, CK_AGG_SUM, false, 2, F64);
  fx_call(&f, CK_AGG_AVG, false, 2, F64);
  fx_call(&f, CK_AGG_MIN, false, 2, F64);
  fx_call(&f, CK_AGG_MAX, false, 2, F64);
  fx_call(&f, CK_AGG_SUM, false, 3, I32);
  fx_call(&f, CK_AGG_AVG, false, 3, I32);
  fx_call(&f, CK_AGG_MIN, false, 4, BOOL_T);
  fx_call(&f, CK_AGG_MAX, false, 4, BOOL_T);
  fx_call(&f, CK_AGG_MIN, false, 5, TS);
  fx_call(&f, CK_AGG_MAX, false, 5, TS);
  fx_call(&f, CK_AGG_MAX, false, 6, F32);
  fx_call(&f, CK_AGG_MIN, false, 3, I32);
  fx_start(&f);
  ck_type_t types[7] = {I64, TS, F64, I32, BOOL_T, TS, F32};
  ck_batch_t *b = ck_batch_new(7, types, 4);
  double d[] = {1.5, -2.25, 0, 4};
  int32_t i32[] = {2000000000, 2000000000, -7, 1};
  for (int r = 0; r < 4; r++) {
    ck_col_append_i64(&b->cols[0], 1);
    ck_col_append_i64(&b->cols[1], r);
    if (r == 2) ck_col_append_null(&b->cols[2]);
    else ck_col_append_f64(&b->cols[2], d[r]);
    ck_col_append_i32(&b->cols[3], i32[r]); /* the sum passes INT32's range: BIGINT */
    if (r == 3) ck_col_append_null(&b->cols[4]);
    else ck_col_append_bool(&b->cols[4], r == 1);
    ck_col_append_i64(&b->cols[5], 1000 - r * 300);
    ck_col_append_f32(&b->cols[6], (float)d[r] / 2);
  }
  assert_int_equal(process(&f, b), 0);
  wm(&f, 10);
  expect(&f,
         "+I 1 0 10 3.25 1.0833333333333333 -2.25 4 3999999994 999999998.5 false true 100 1000 "
         "2 -7\nwm 10\n");
  fx_fini(&f);
}

static void test_agg_double_sums_do_not_depend_on_order(void **state) {
  fx_t f;
  fx_init(&f, CK_WIN_TUMBLE);
  f.win.size = 10;
  fx_key(&f, 0, I64);
  fx_call(&f, CK_AGG_SUM, false, 2, F64);
  fx_call(&f, CK_AGG_AVG, false, 2, F64);
  fx_start(&f);
  /* the same seven values in three orders; naive summation gives 3.74159, 4 and others */
  static const double v[] = {1e16, 1.0, -1e16, 3.14159, 0.1, 0.2, 0.3};
  static const int order[3][7] = {
      {0, 1, 2, 3, 4, 5, 6}, {6, 5, 4, 3, 2, 1, 0}, {3, 0, 4, 2, 6, 1, 5}};
  ck_type_t types[3] = {I64, TS, F64};
  ck_batch_t *b = ck_batch_new(3, types, 21);
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < 7; i++) {
      ck_col_append_i64(&b->cols[0], k);
      ck_col_append_i64(&b->cols[1], i);
      ck_col_append_f64(&b->cols[2], v[order[k][i]]);
    }
  assert_int_equal(process(&f, b), 0);
  wm(&f, 10);
  /* the exact sum and mean, rounded once (Python: math.fsum, Fraction) */
  expect(&f,
         "+I 0 0 10 4.7415899999999995 0.67737\n"
         "+I 1 0 10 4.7415899999999995 0.67737\n"
         "+I 2 0 10 4.7415899999999995 0.67737\n"
         "wm 10\n");
  fx_fini(&f);
}

static ck_batch_t *dec_batch(ck_type_t t, size_t n, const int64_t *keys, const char *const *vals) {
  ck_type_t types[3] = {I64, TS, t};
  ck_batch_t *b = ck_batch_new(3, types, n);
  for (size_t i = 0; i < n; i++) {
    ck_col_append_i64(&b->cols[0], keys[i]);
    ck_col_append_i64(&b->cols[1], 0);
    if (!vals[i]) {
      ck_col_append_null(&b->cols[2]);
      continue;
    }
    ck_i128 v;
    assert_true(ck_decimal_parse(vals[i], strlen(vals[i]), t.precision, t.scale, &v));
    ck_col_append_dec(&b->cols[2], v);
  }
  return b;
}

static void test_agg_decimal_sum_avg_exact_and_rounded(void **state) {
  fx_t f;
  fx_init(&f, CK_WIN_TUMBLE);
  f.win.size = 10;
  fx_key(&f, 0, I64);
  fx_call(&f, CK_AGG_SUM, false, 2, dec(10, 2));
  fx_call(&f, CK_AGG_AVG, false, 2, dec(10, 2));
  fx_call(&f, CK_AGG_MIN, false, 2, dec(10, 2));
  fx_call(&f, CK_AGG_MAX, false, 2, dec(10, 2));
  fx_start(&f);
  int64_t keys[] = {1, 1, 1, 2, 2, 2, 3, 3, 3, 4};
  const char *vals[] = {"1.00", "2.00", "2.00", "-1.00", "-2.00", "-2.00",
                        "0.10", "0.10", "0.13", NULL};
  assert_int_equal(process(&f, dec_batch(dec(10, 2), 10, keys, vals)), 0);
  wm(&f, 10);
  expect(&f,
         "+I 1 0 10 5.00 1.666667 1.00 2.00\n"
         "+I 2 0 10 -5.00 -1.666667 -2.00 -1.00\n"
         "+I 3 0 10 0.33 0.110000 0.10 0.13\n"
         "+I 4 0 10 null null null null\n"
         "wm 10\n");
  fx_fini(&f);
}

static void test_agg_decimal_avg_rounds_half_away_from_zero(void **state) {
  fx_t f;
  fx_init(&f, CK_WIN_TUMBLE);
  f.win.size = 10;
  fx_key(&f, 0, I64);
  fx_call(&f, CK_AGG_AVG, false, 2, dec(12, 6));
  fx_start(&f);
  int64_t keys[] = {1, 1, 2, 2, 3, 3, 3};
  const char *vals[] = {"0.000001", "0", "-0.000001", "0", "0.000001", "0", "0"};
  assert_int_equal(process(&f, dec_batch(dec(12, 6), 7, keys, vals)), 0);
  wm(&f, 10);
  /* 0.0000005 → 0.000001, -0.0000005 → -0.000001, 0.00000033 → 0.000000 */
  expect(&f, "+I 1 0 10 0.000001\n+I 2 0 10 -0.000001\n+I 3 0 10 0.000000\nwm 10\n");
  fx_fini(&f);
}

static void test_agg_overflow_is_an_error(void **state) {
  fx_t f;
  fx_count_sum(&f, CK_WIN_NONE);
  fx_start(&f);
  PUSH(&f, {1, 0, INT64_MAX - 1}, {1, 0, 1});
  expect(&f, "+I 1 2 9223372036854775807\n");
  ck_type_t types[3] = {I64, TS, I64};
  ck_batch_t *b = ck_batch_new(3, types, 1);
  ck_col_append_i64(&b->cols[0], 1);
  ck_col_append_i64(&b->cols[1], 0);
  ck_col_append_i64(&b->cols[2], 1);
  assert_int_equal(process(&f, b), CK_EEVAL);
  assert_int_equal(f.err.code, CK_EEVAL);
  assert_non_null(strstr(f.err.message, "overflows BIGINT"));
  fx_fini(&f);

  fx_init(&f, CK_WIN_NONE);
  fx_key(&f, 0, I64);
  fx_call(&f, CK_AGG_SUM, false, 2, dec(38, 0));
  fx_start(&f);
  int64_t keys[] = {1, 1};
  const char *vals[] = {"60000000000000000000000000000000000000",
                        "40000000000000000000000000000000000000"}; /* 10^38: 39 digits */
  assert_int_equal(process(&f, dec_batch(dec(38, 0), 2, keys, vals)), CK_EEVAL);
  assert_non_null(strstr(f.err.message, "overflows DECIMAL(38)"));
  fx_fini(&f);
}

/* SUM of integers accumulates exactly and is checked when it is emitted: a partial sum past
 * BIGINT is no error when the total fits, whatever order the rows arrive in (one batch, several,
 * session merges), and a total past BIGINT still is. */
static void test_agg_sum_bigint_checked_at_emit_not_on_partial_sums(void **state) {
  fx_t f;
  fx_count_sum(&f, CK_WIN_TUMBLE);
  f.win.size = 10;
  fx_start(&f);
  PUSH(&f, {1, 0, INT64_MAX}, {1, 1, 1}, {1, 2, -2},   /* partial sum MAX + 1 */
           {2, 0, -2}, {2, 1, INT64_MAX}, {2, 2, 1},   /* never past MAX */
           {3, 0, 1}, {3, 1, INT64_MAX}, {3, 2, -2},   /* partial sum MAX + 1 */
           {4, 0, INT64_MIN + 1}, {4, 1, -2}, {4, 2, 2}); /* partial sum MIN - 1 */
  /* (INT64_MIN itself marks NULL in PUSH) */
  PUSH(&f, {5, 0, INT64_MAX}, {5, 1, INT64_MAX});
  PUSH(&f, {5, 2, INT64_MIN + 1}, {5, 3, INT64_MIN + 1}, {5, 4, 5}); /* 2·MAX + 2·(MIN+1) + 5 */
  wm(&f, 10);
  expect(&f,
         "+I 1 0 10 3 9223372036854775806\n"
         "+I 2 0 10 3 9223372036854775806\n"
         "+I 3 0 10 3 9223372036854775806\n"
         "+I 4 0 10 3 -9223372036854775807\n"
         "+I 5 0 10 5 5\n"
         "wm 10\n");
  PUSH(&f, {6, 10, INT64_MAX}, {6, 11, 1});
  assert_int_equal(f.op.ops->watermark(&f.op, 20, &f.err), CK_EEVAL);
  assert_string_equal(f.err.message, "could not aggregate: SUM over input column 2 overflows BIGINT");
  fx_fini(&f);

  /* sessions: the partial sums of two sessions merged by a third record */
  fx_count_sum(&f, CK_WIN_SESSION);
  f.win.gap = 10;
  fx_start(&f);
  PUSH(&f, {1, 0, INT64_MAX}, {1, 20, 1});
  PUSH(&f, {1, 10, -2});
  wm(&f, CK_WATERMARK_MAX);
  expect(&f, "+I 1 0 30 3 9223372036854775806\nwm 9223372036854775807\n");
  fx_fini(&f);

  /* unwindowed: the row emitted after a batch is what must fit */
  fx_count_sum(&f, CK_WIN_NONE);
  fx_start(&f);
  PUSH(&f, {1, 0, INT64_MAX}, {1, 0, 1}, {1, 0, -2});
  expect(&f, "+I 1 3 9223372036854775806\n");
  fx_fini(&f);
}

/* DOUBLE sums never become Infinity, and like SUM of BIGINT they are checked when emitted: a
 * running sum past DOUBLE's range is no error when the total fits, in any order (also through
 * session merges); AVG of values near the limit is their mean; a total past the range is an
 * error like integer overflow (inputs are never Infinity or NaN, expr.h). */
static void double_rows(fx_t *f, size_t n, const int64_t *keys, const int64_t *ts, const double *v) {
  ck_type_t types[3] = {I64, TS, F64};
  ck_batch_t *b = ck_batch_new(3, types, n);
  for (size_t i = 0; i < n; i++) {
    ck_col_append_i64(&b->cols[0], keys[i]);
    ck_col_append_i64(&b->cols[1], ts[i]);
    ck_col_append_f64(&b->cols[2], v[i]);
  }
  assert_int_equal(process(f, b), 0);
}

static void test_agg_double_sums_past_the_range_are_checked_at_emit(void **state) {
  fx_t f;
  fx_init(&f, CK_WIN_TUMBLE);
  f.win.size = 10;
  fx_key(&f, 0, I64);
  fx_call(&f, CK_AGG_SUM, false, 2, F64);
  fx_call(&f, CK_AGG_AVG, false, 2, F64);
  fx_start(&f);
  const double M = 1.7976931348623157e308;
  int64_t keys[] = {1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 5, 5, 5};
  int64_t ts[] = {0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 0, 1, 2};
  double v[] = {1e308, 1e308, -1e308,  /* partial sum 2e308 */
                -1e308, 1e308, 1e308,  /* never past the range */
                M, M, -M,              /* partial sum 2·MAX */
                M, M,                  /* AVG: MAX; SUM: past the range, asked below */
                -1e308, -1e308, 1e308}; /* partial -2e308 */
  double_rows(&f, 11, keys, ts, v);
  double_rows(&f, 3, keys + 11, ts + 11, v + 11);
  /* key 4's SUM is 2·MAX: the window fails when it fires */
  ck_error_clear(&f.err);
  assert_int_equal(f.op.ops->watermark(&f.op, 10, &f.err), CK_EEVAL);
  assert_string_equal(f.err.message, "could not aggregate: SUM over input column 2 overflows DOUBLE");
  fx_fini(&f);

  fx_init(&f, CK_WIN_TUMBLE);
  f.win.size = 10;
  fx_key(&f, 0, I64);
  fx_call(&f, CK_AGG_SUM, false, 2, F64);
  fx_call(&f, CK_AGG_AVG, false, 2, F64);
  fx_start(&f);
  double_rows(&f, 9, keys, ts, v);
  double_rows(&f, 3, keys + 11, ts + 11, v + 11);
  wm(&f, 10);
  expect(&f,
         "+I 1 0 10 1e+308 3.333333333333333e+307\n"
         "+I 2 0 10 1e+308 3.333333333333333e+307\n"
         "+I 3 0 10 1.7976931348623157e+308 5.992310449541053e+307\n"
         "+I 5 0 10 -1e+308 -3.333333333333333e+307\n"
         "wm 10\n");
  fx_fini(&f);

  /* sessions merged by a bridging record, and a snapshot taken while the sum is past the range */
  fx_t g;
  fx_init(&f, CK_WIN_SESSION);
  f.win.gap = 10;
  fx_key(&f, 0, I64);
  fx_call(&f, CK_AGG_SUM, false, 2, F64);
  fx_call(&f, CK_AGG_AVG, false, 2, F64);
  fx_start(&f);
  int64_t sk[] = {1, 1, 1}, st[] = {0, 20, 10};
  double sv[] = {M, M, -M};
  double_rows(&f, 2, sk, st, sv);
  ck_buf_t snap;
  ck_buf_init(&snap);
  assert_int_equal(f.op.ops->snapshot(&f.op, &snap, &f.err), 0);
  fx_init(&g, CK_WIN_SESSION);
  g.win.gap = 10;
  fx_key(&g, 0, I64);
  fx_call(&g, CK_AGG_SUM, false, 2, F64);
  fx_call(&g, CK_AGG_AVG, false, 2, F64);
  fx_start(&g);
  assert_int_equal(g.op.ops->restore(&g.op, snap.data, snap.len, &g.err), 0);
  for (fx_t *x = &f; x; x = x == &f ? &g : NULL) {
    double_rows(x, 1, sk + 2, st + 2, sv + 2);
    wm(x, CK_WATERMARK_MAX);
    expect(x, "+I 1 0 30 1.7976931348623157e+308 5.992310449541053e+307\nwm 9223372036854775807\n");
  }
  ck_buf_fini(&snap);
  fx_close(&g);
  fx_fini(&f);
}

static void test_agg_distinct(void **state) {
  fx_t f;
  fx_init(&f, CK_WIN_TUMBLE);
  f.win.size = 10;
  fx_key(&f, 0, I64);
  fx_call(&f, CK_AGG_COUNT, true, 2, I64);
  fx_call(&f, CK_AGG_SUM, true, 2, I64);
  fx_call(&f, CK_AGG_AVG, true, 2, I64);
  fx_call(&f, CK_AGG_COUNT, false, 2, I64);
  fx_call(&f, CK_AGG_COUNT, true, 3, STR);
  fx_call(&f, CK_AGG_COUNT, true, 4, F64);
  fx_start(&f);
  ck_type_t types[5] = {I64, TS, I64, STR, F64};
  ck_batch_t *b = ck_batch_new(5, types, 8);
  int64_t v[] = {1, 2, 2, NUL, 1, 3, 2};
  const char *s[] = {"a", "b", "a", "", NULL, "ab", "b"};
  double d[] = {0.0, -0.0, 1.5, 1.5, 2, 2, 0}; /* -0.0 and 0.0 are one value */
  for (int i = 0; i < 7; i++) {
    ck_col_append_i64(&b->cols[0], 1);
    ck_col_append_i64(&b->cols[1], i);
    append_i64(&b->cols[2], v[i]);
    if (s[i]) ck_col_append_str(&b->cols[3], s[i], strlen(s[i]));
    else ck_col_append_null(&b->cols[3]);
    ck_col_append_f64(&b->cols[4], d[i]);
  }
  assert_int_equal(process(&f, b), 0);
  wm(&f, 10);
  expect(&f, "+I 1 0 10 3 6 2 6 4 3\nwm 10\n");
  assert_int_equal(f.op.metrics.state_entries, 0);
  fx_fini(&f);
}

static ck_batch_t *str_batch(size_t n, const char *const *keys, const int64_t *ts,
                             const char *const *vals) {
  ck_type_t types[3] = {STR, TS, STR};
  ck_batch_t *b = ck_batch_new(3, types, n);
  for (size_t i = 0; i < n; i++) {
    if (keys[i]) ck_col_append_str(&b->cols[0], keys[i], strlen(keys[i]));
    else ck_col_append_null(&b->cols[0]);
    ck_col_append_i64(&b->cols[1], ts[i]);
    if (vals[i]) ck_col_append_str(&b->cols[2], vals[i], strlen(vals[i]));
    else ck_col_append_null(&b->cols[2]);
  }
  return b;
}

static void test_agg_min_max_strings_and_string_keys(void **state) {
  fx_t f;
  fx_init(&f, CK_WIN_TUMBLE);
  f.win.size = 10;
  fx_key(&f, 0, STR);
  fx_call(&f, CK_AGG_MIN, false, 2, STR);
  fx_call(&f, CK_AGG_MAX, false, 2, STR);
  fx_call(&f, CK_AGG_COUNT_STAR, false, -1, I64);
  fx_start(&f);
  const char *keys[] = {"x", "x", "x", "x", "x", "x", NULL, "", "x", "w"};
  int64_t ts[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  const char *vals[] = {"b", "abc", "ab", "", "\xc3\xa9", "z", "q", NULL, NULL, "m"};
  assert_int_equal(process(&f, str_batch(10, keys, ts, vals)), 0);
  wm(&f, 10);
  expect(&f,
         "+I null 0 10 'q' 'q' 1\n"
         "+I '' 0 10 null null 1\n"
         "+I 'w' 0 10 'm' 'm' 1\n"
         "+I 'x' 0 10 '' '\xc3\xa9' 7\n" /* bytewise: 0xc3 sorts after 'z' */
         "wm 10\n");
  fx_fini(&f);
}

/* ---- unwindowed GROUP BY: the changelog ---- */

static void test_agg_unwindowed_changelog_kinds_and_order(void **state) {
  fx_t f;
  fx_init(&f, CK_WIN_NONE);
  fx_key(&f, 0, I64);
  fx_call(&f, CK_AGG_MIN, false, 2, I64);
  fx_call(&f, CK_AGG_MAX, false, 2, I64);
  fx_start(&f);
  PUSH(&f, {1, 0, 1}, {2, 0, 2}, {1, 0, 3});
  expect(&f, "+I 1 1 3\n+I 2 2 2\n");
  PUSH(&f, {1, 0, 2}, {2, 0, 5}, {1, 0, NUL}); /* group 1 unchanged: nothing */
  expect(&f, "+U 2 2 5\n");
  PUSH(&f, {3, 0, NUL});
  expect(&f, "+I 3 null null\n");
  PUSH(&f, {3, 0, 1}, {1, 0, 0}, {2, 0, 9}, {3, 0, 1}); /* first-change order, not key order */
  expect(&f, "+U 3 1 1\n+U 1 0 3\n+U 2 2 9\n");
  PUSH(&f, {1, 0, 2}, {2, 0, 10}, {1, 0, -1}); /* group 1 first changes after group 2 */
  expect(&f, "+U 2 2 10\n+U 1 -1 3\n");
  PUSH(&f, {2, 0, 1}, {2, 0, 0}, {2, 0, 2}); /* several changes in one batch: one row */
  expect(&f, "+U 2 0 10\n");
  wm(&f, 5);
  expect(&f, "wm 5\n");
  assert_int_equal(f.op.metrics.state_entries, 3);
  assert_int_equal(f.op.metrics.records_out, 10);
  fx_fini(&f);
}

static void test_agg_unwindowed_large_batch_split(void **state) {
  fx_t f;
  fx_count_sum(&f, CK_WIN_NONE);
  fx_start(&f);
  f.quiet = true;
  enum { N = 2500 };
  ck_type_t types[3] = {I64, TS, I64};
  ck_batch_t *b = ck_batch_new(3, types, N);
  for (int i = 0; i < N; i++) {
    ck_col_append_i64(&b->cols[0], i / 2 + 1); /* 1250 groups, each touched twice */
    ck_col_append_i64(&b->cols[1], 0);
    ck_col_append_i64(&b->cols[2], i);
  }
  assert_int_equal(process(&f, b), 0);
  assert_int_equal(f.rows, N / 2);
  assert_int_equal(f.batches, 2);
  assert_int_equal(f.max_batch, CK_BATCH_ROWS);
  assert_true(f.sorted); /* first-change order here is ascending key */
  fx_fini(&f);
}

static ck_expr_t *gt_const(fx_t *f, int col, ck_type_t type, int64_t v, ck_fn_t fn) {
  ck_value_t lit = {.type = I64, .is_null = false, .v.i = v};
  ck_expr_t *args[2] = {ck_expr_column(&f->arena, col, type), ck_expr_literal(&f->arena, &lit)};
  ck_expr_t *e = ck_expr_call(&f->arena, fn, args, 2, &f->err);
  assert_non_null(e);
  return e;
}

static void test_agg_unwindowed_having_insert_update_delete(void **state) {
  fx_t f;
  fx_init(&f, CK_WIN_NONE);
  fx_key(&f, 0, I64);
  fx_call(&f, CK_AGG_SUM, false, 2, I64);
  f.having = gt_const(&f, out_col(&f, 0), I64, 10, CK_FN_GT); /* HAVING SUM(v) > 10 */
  fx_start(&f);
  PUSH(&f, {1, 0, 5});
  expect(&f, ""); /* never passed: nothing */
  PUSH(&f, {1, 0, 6});
  expect(&f, "+I 1 11\n");
  PUSH(&f, {1, 0, -3});
  expect(&f, "-D 1 11\n"); /* carries the values last emitted */
  PUSH(&f, {1, 0, 1});
  expect(&f, "");
  PUSH(&f, {1, 0, 5});
  expect(&f, "+I 1 14\n"); /* emitted afresh after the delete */
  PUSH(&f, {1, 0, 1}, {2, 0, 20});
  expect(&f, "+U 1 15\n+I 2 20\n");
  PUSH(&f, {2, 0, 0}, {1, 0, -10}, {3, 0, 1});
  expect(&f, "-D 1 15\n");
  fx_fini(&f);
}

static void test_agg_windowed_having_drops_rows(void **state) {
  fx_t f;
  fx_count_sum(&f, CK_WIN_TUMBLE);
  f.win.size = 10;
  f.having = gt_const(&f, out_col(&f, 0), I64, 2, CK_FN_GE); /* HAVING COUNT(*) >= 2 */
  fx_start(&f);
  PUSH(&f, {1, 0, 1}, {2, 1, 2}, {1, 2, 3}, {3, 3, 4}, {3, 4, 5}, {3, 5, 6});
  wm(&f, 10);
  expect(&f, "+I 1 0 10 2 4\n+I 3 0 10 3 15\nwm 10\n");
  assert_int_equal(f.op.metrics.records_out, 2);
  fx_fini(&f);
}

/* ---- memory ---- */

static void test_agg_state_bytes_per_group(void **state) {
  fx_t f;
  fx_init(&f, CK_WIN_TUMBLE);
  f.win.size = 60000;
  fx_key(&f, 0, I64);
  fx_call(&f, CK_AGG_COUNT_STAR, false, -1, I64);
  fx_start(&f);
  f.quiet = true;
  enum { N = 1000000 };
  ck_type_t types[2] = {I64, TS};
  for (int base = 0; base < N; base += CK_BATCH_ROWS) {
    ck_batch_t *b = ck_batch_new(2, types, CK_BATCH_ROWS);
    for (int i = base; i < N && i < base + CK_BATCH_ROWS; i++) {
      ck_col_append_i64(&b->cols[0], (int64_t)(((uint64_t)i * 2654435761u) % N)); /* shuffled */
      ck_col_append_i64(&b->cols[1], i % 60000);
    }
    assert_int_equal(process(&f, b), 0);
  }
  assert_int_equal(f.op.metrics.state_entries, N);
  double per = (double)f.op.metrics.state_bytes / (double)f.op.metrics.state_entries;
  printf("agg state: %lld bytes for %lld (BIGINT key, COUNT(*)) tumbling groups = %.1f "
         "bytes/group\n",
         (long long)f.op.metrics.state_bytes, (long long)f.op.metrics.state_entries, per);
  assert_true(per < 64.0);
  wm(&f, 60000);
  assert_int_equal(f.rows, N);
  assert_true(f.sorted);
  assert_int_equal(f.op.metrics.state_entries, 0);
  assert_true(f.op.metrics.state_bytes < 64 * 1024); /* the slab and index were given back */
  fx_fini(&f);
}

static void test_agg_string_pool_compacts(void **state) {
  fx_t f;
  fx_init(&f, CK_WIN_NONE);
  fx_key(&f, 0, I64);
  fx_call(&f, CK_AGG_MIN, false, 2, STR);
  fx_start(&f);
  f.quiet = true;
  ck_type_t types[3] = {I64, TS, STR};
  char s[1000];
  memset(s, 'x', sizeof s);
  for (int i = 0; i < 400; i++) { /* every row lowers the MIN: 2 KB of garbage per row */
    ck_batch_t *b = ck_batch_new(3, types, 1);
    snprintf(s, 4, "%03d", 999 - i);
    s[3] = 'x';
    ck_col_append_i64(&b->cols[0], 1);
    ck_col_append_i64(&b->cols[1], 0);
    ck_col_append_str(&b->cols[2], s, sizeof s);
    assert_int_equal(process(&f, b), 0);
  }
  assert_int_equal(f.rows, 400);
  assert_true(f.op.metrics.state_bytes < 200 * 1024); /* not 800 KB of dead strings */
  /* the surviving strings are intact: one more row that does not change the MIN */
  f.quiet = false;
  ck_batch_t *b = ck_batch_new(3, types, 1);
  ck_col_append_i64(&b->cols[0], 1);
  ck_col_append_i64(&b->cols[1], 0);
  ck_col_append_str(&b->cols[2], "9", 1);
  assert_int_equal(process(&f, b), 0);
  expect(&f, "");
  ck_error_t err = {0};
  ck_buf_t snap;
  ck_buf_init(&snap);
  assert_int_equal(f.op.ops->snapshot(&f.op, &snap, &err), 0);
  assert_non_null(memmem(snap.data, snap.len, "600xxxxx", 8));
  ck_buf_fini(&snap);
  fx_fini(&f);
}

/* ---- snapshot and restore ---- */

typedef struct scenario {
  void (*setup)(fx_t *f);
  void (*before)(fx_t *f); /* input before the snapshot */
  void (*after)(fx_t *f);  /* input after it */
} scenario_t;

static void str_rows(fx_t *f, int base, int n, int64_t t0) {
  ck_type_t types[4] = {STR, TS, I64, STR};
  ck_batch_t *b = ck_batch_new(4, types, (size_t)n);
  for (int i = 0; i < n; i++) {
    char k[16], v[16];
    snprintf(k, sizeof k, "key%d", (base + i) % 7);
    snprintf(v, sizeof v, "v%d", (base + i * 3) % 11);
    ck_col_append_str(&b->cols[0], k, strlen(k));
    ck_col_append_i64(&b->cols[1], t0 + (base + i) % 17);
    if ((base + i) % 5 == 0) ck_col_append_null(&b->cols[2]);
    else ck_col_append_i64(&b->cols[2], (base + i) % 4);
    ck_col_append_str(&b->cols[3], v, strlen(v));
  }
  assert_int_equal(process(f, b), 0);
}

static void setup_rich(fx_t *f, ck_win_kind_t kind) {
  fx_init(f, kind);
  fx_key(f, 0, STR);
  fx_call(f, CK_AGG_COUNT_STAR, false, -1, I64);
  fx_call(f, CK_AGG_COUNT, true, 2, I64);
  fx_call(f, CK_AGG_SUM, false, 2, I64);
  fx_call(f, CK_AGG_AVG, false, 2, I64);
  fx_call(f, CK_AGG_MIN, false, 3, STR);
  fx_call(f, CK_AGG_MAX, false, 3, STR);
  fx_call(f, CK_AGG_COUNT, true, 3, STR);
}

static void setup_tumble(fx_t *f) {
  setup_rich(f, CK_WIN_TUMBLE);
  f->win.size = 10;
}
static void setup_hop(fx_t *f) {
  setup_rich(f, CK_WIN_HOP);
  f->win.size = 20;
  f->win.slide = 5;
}
static void setup_cumulate(fx_t *f) {
  setup_rich(f, CK_WIN_CUMULATE);
  f->win.size = 20;
  f->win.step = 5;
  f->lateness = 3;
}
static void setup_session(fx_t *f) {
  setup_rich(f, CK_WIN_SESSION);
  f->win.gap = 4;
}
static void setup_groups(fx_t *f) {
  setup_rich(f, CK_WIN_NONE);
  f->having = gt_const(f, out_col(f, 2), I64, 3, CK_FN_GT); /* SUM > 3 */
}

static void before_windows(fx_t *f) {
  str_rows(f, 0, 40, 0);
  wm(f, 8);
  str_rows(f, 40, 30, 10);
}
static void after_windows(fx_t *f) {
  str_rows(f, 70, 25, 12);
  wm(f, 22);
  str_rows(f, 95, 40, 20);
  str_rows(f, 135, 5, 3); /* mostly late */
  wm(f, CK_WATERMARK_MAX);
}
static void before_groups(fx_t *f) {
  str_rows(f, 0, 13, 0);
  str_rows(f, 13, 21, 0);
}
static void after_groups(fx_t *f) {
  str_rows(f, 34, 9, 0);
  str_rows(f, 43, 30, 0);
  wm(f, 100);
}

static void run_snapshot_scenario(const scenario_t *sc) {
  fx_t a, b;
  sc->setup(&a);
  fx_start(&a);
  sc->before(&a);
  ck_buf_t snap;
  ck_buf_init(&snap);
  assert_int_equal(a.op.ops->snapshot(&a.op, &snap, &a.err), 0);
  assert_true(a.op.metrics.state_entries > 0);
  ck_buf_reset(&a.log);
  if (a.log.data) a.log.data[0] = 0;

  sc->setup(&b);
  fx_start(&b);
  int rc = b.op.ops->restore(&b.op, snap.data, snap.len, &b.err);
  if (rc) fprintf(stderr, "restore failed: %s\n", b.err.message);
  assert_int_equal(rc, 0);
  assert_int_equal(b.op.metrics.state_entries, a.op.metrics.state_entries);

  /* a snapshot of the restored state is byte-identical */
  ck_buf_t snap2;
  ck_buf_init(&snap2);
  assert_int_equal(b.op.ops->snapshot(&b.op, &snap2, &b.err), 0);
  assert_int_equal(snap2.len, snap.len);
  assert_memory_equal(snap2.data, snap.data, snap.len);

  sc->after(&a);
  sc->after(&b);
  assert_true(a.log.len > 0);
  assert_string_equal(b.log.data ? b.log.data : "", a.log.data);
  assert_int_equal(b.op.metrics.state_entries, a.op.metrics.state_entries);
  assert_int_equal(b.op.metrics.late_dropped, a.op.metrics.late_dropped);
  ck_buf_fini(&snap2);
  ck_buf_fini(&snap);
  fx_close(&b);
  fx_fini(&a);
}

/* FIRST_VALUE, LAST_VALUE, LISTAGG (and DISTINCT), APPROX_COUNT_DISTINCT over the rich rows */
static void setup_order(fx_t *f, ck_win_kind_t kind) {
  fx_init(f, kind);
  fx_key(f, 0, STR);
  fx_call(f, CK_AGG_FIRST_VALUE, false, 3, STR);
  fx_call(f, CK_AGG_LAST_VALUE, false, 2, I64);
  fx_call(f, CK_AGG_FIRST_VALUE, false, 2, I64);
  fx_call(f, CK_AGG_LISTAGG, false, 3, STR);
  f->calls[f->ncalls - 1].sep = "+";
  fx_call(f, CK_AGG_LISTAGG, true, 3, STR);
  f->calls[f->ncalls - 1].sep = ",";
  fx_call(f, CK_AGG_APPROX_COUNT_DISTINCT, false, 3, STR);
  fx_call(f, CK_AGG_APPROX_COUNT_DISTINCT, false, 2, I64);
}
static void setup_order_tumble(fx_t *f) {
  setup_order(f, CK_WIN_TUMBLE);
  f->win.size = 10;
}
static void setup_order_hop(fx_t *f) {
  setup_order(f, CK_WIN_HOP);
  f->win.size = 20;
  f->win.slide = 5;
}
static void setup_order_session(fx_t *f) {
  setup_order(f, CK_WIN_SESSION);
  f->win.gap = 4;
}
static void setup_order_groups(fx_t *f) { setup_order(f, CK_WIN_NONE); }

static void test_agg_snapshot_restore_order_aggregates(void **state) {
  run_snapshot_scenario(&(scenario_t){setup_order_tumble, before_windows, after_windows});
  run_snapshot_scenario(&(scenario_t){setup_order_hop, before_windows, after_windows});
  run_snapshot_scenario(&(scenario_t){setup_order_session, before_windows, after_windows});
  run_snapshot_scenario(&(scenario_t){setup_order_groups, before_groups, after_groups});
}

/* Sessions merged by a bridging record: FIRST/LAST by arrival, not by session or time. */
static void test_agg_session_merge_first_last_by_arrival(void **state) {
  fx_t f;
  fx_init(&f, CK_WIN_SESSION);
  f.win.gap = 6;
  fx_key(&f, 0, I64);
  fx_call(&f, CK_AGG_FIRST_VALUE, false, 2, I64);
  fx_call(&f, CK_AGG_LAST_VALUE, false, 2, I64);
  fx_call(&f, CK_AGG_APPROX_COUNT_DISTINCT, false, 2, I64);
  fx_start(&f);
  PUSH(&f, {1, 10, 20}, {1, 0, 10}, {1, 12, NUL});
  PUSH(&f, {1, 5, 30}, {1, 1, NUL}); /* [5, 11) joins [0, 7) and [10, 18) */
  wm(&f, 100);
  expect(&f, "+I 1 0 18 20 30 3\nwm 100\n");
  fx_fini(&f);
}

/* APPROX_COUNT_DISTINCT: HyperLogLog within four standard errors (1.625% each), below its
 * linear-counting threshold (10,240) and past it; a value repeated is not counted again. */
static void test_agg_approx_count_distinct_error_bound(void **state) {
  static const int64_t counts[] = {10, 1000, 20000, 50000};
  for (size_t t = 0; t < sizeof counts / sizeof counts[0]; t++) {
    fx_t f;
    fx_init(&f, CK_WIN_NONE);
    fx_key(&f, 0, I64);
    fx_call(&f, CK_AGG_APPROX_COUNT_DISTINCT, false, 2, I64);
    fx_start(&f);
    f.quiet = true;
    ck_type_t types[3] = {I64, TS, I64};
    for (int rep = 0; rep < 2; rep++) /* the first 1,024 values twice */
      for (int64_t at = 0; at < (rep ? 1 : counts[t]); at += 1024) {
        size_t n = (size_t)(counts[t] - at < 1024 ? counts[t] - at : 1024);
        ck_batch_t *b = ck_batch_new(3, types, n);
        for (size_t i = 0; i < n; i++) {
          ck_col_append_i64(&b->cols[0], 7);
          ck_col_append_i64(&b->cols[1], 0);
          ck_col_append_i64(&b->cols[2], (at + (int64_t)i) * 7919 - 123456789);
        }
        assert_int_equal(process(&f, b), 0);
      }
    const ck_agg_t *agg = f.op.impl;
    char *e = ck_agg_entry(agg, 0);
    const uint8_t *regs;
    memcpy(&regs, e + agg->acc[0].off, sizeof regs);
    int64_t est = ck_agg_hll_estimate(regs), n = counts[t];
    double err = fabs((double)(est - n)) / (double)n;
    if (err > 4 * 0.01625 && llabs(est - n) > 1) {
      fprintf(stderr, "%lld distinct values estimated as %lld\n", (long long)n, (long long)est);
      fail();
    }
    fx_fini(&f);
  }
}

static void test_agg_snapshot_restore_tumble(void **state) {
  run_snapshot_scenario(&(scenario_t){setup_tumble, before_windows, after_windows});
}
static void test_agg_snapshot_restore_hop(void **state) {
  run_snapshot_scenario(&(scenario_t){setup_hop, before_windows, after_windows});
}
static void test_agg_snapshot_restore_cumulate(void **state) {
  run_snapshot_scenario(&(scenario_t){setup_cumulate, before_windows, after_windows});
}
static void test_agg_snapshot_restore_session(void **state) {
  run_snapshot_scenario(&(scenario_t){setup_session, before_windows, after_windows});
}
static void test_agg_snapshot_restore_unwindowed_having(void **state) {
  run_snapshot_scenario(&(scenario_t){setup_groups, before_groups, after_groups});
}

static int line_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The rows of a log (watermark lines dropped), sorted, as one text. */
static char *sorted_rows(const char *text) {
  char *copy = ck_strdup(text ? text : ""), *lines[4096];
  size_t n = 0;
  for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    if (strncmp(l, "wm ", 3) != 0) lines[n++] = l;
  qsort(lines, n, sizeof *lines, line_cmp);
  ck_buf_t out;
  ck_buf_init(&out);
  for (size_t i = 0; i < n; i++) {
    ck_buf_puts(&out, lines[i]);
    ck_buf_putc(&out, '\n');
  }
  ck_free(copy);
  char *s = ck_buf_detach(&out);
  ck_buf_fini(&out);
  return s;
}

static void test_agg_restore_splits_by_key_group(void **state) {
  fx_t a, s0, s1;
  setup_tumble(&a);
  fx_start(&a);
  before_windows(&a);
  ck_buf_t snap;
  ck_buf_init(&snap);
  assert_int_equal(a.op.ops->snapshot(&a.op, &snap, &a.err), 0);
  ck_buf_reset(&a.log);
  setup_tumble(&s0);
  assert_int_equal(fx_try_start(&s0, 0, 2), 0);
  setup_tumble(&s1);
  assert_int_equal(fx_try_start(&s1, 1, 2), 0);
  assert_int_equal(s0.op.ops->restore(&s0.op, snap.data, snap.len, &s0.err), 0);
  assert_int_equal(s1.op.ops->restore(&s1.op, snap.data, snap.len, &s1.err), 0);
  /* each subtask keeps only the key groups it owns: together exactly the original */
  assert_true(s0.op.metrics.state_entries > 0);
  assert_true(s1.op.metrics.state_entries > 0);
  assert_int_equal(s0.op.metrics.state_entries + s1.op.metrics.state_entries,
                   a.op.metrics.state_entries);
  wm(&a, CK_WATERMARK_MAX);
  wm(&s0, CK_WATERMARK_MAX);
  wm(&s1, CK_WATERMARK_MAX);
  ck_buf_puts(&s0.log, s1.log.data ? s1.log.data : "");
  char *want = sorted_rows(a.log.data), *got = sorted_rows(s0.log.data);
  assert_true(strlen(want) > 0);
  assert_string_equal(got, want);
  ck_free(want);
  ck_free(got);
  ck_buf_fini(&snap);
  fx_close(&s1);
  fx_close(&s0);
  fx_fini(&a);
}

static void test_agg_restore_rejects_foreign_or_truncated(void **state) {
  fx_t a, b;
  setup_tumble(&a);
  fx_start(&a);
  before_windows(&a);
  ck_buf_t snap;
  ck_buf_init(&snap);
  assert_int_equal(a.op.ops->snapshot(&a.op, &snap, &a.err), 0);

  setup_hop(&b); /* a different window */
  fx_start(&b);
  assert_int_equal(b.op.ops->restore(&b.op, snap.data, snap.len, &b.err), CK_ESTATE);
  assert_non_null(strstr(b.err.message, "different"));
  fx_close(&b);

  for (size_t cut = 0; cut < snap.len; cut += 1 + cut / 3) {
    setup_tumble(&b);
    fx_start(&b);
    ck_error_clear(&b.err);
    assert_int_equal(b.op.ops->restore(&b.op, snap.data, cut, &b.err), CK_ESTATE);
    fx_close(&b);
  }
  ck_buf_fini(&snap);
  fx_fini(&a);
}

/* Snapshots of version 1 (SUM of integers as an i64) are still restored; new ones are version 2
 * with the sum in 128 bits. The conversion below follows the encoding in agg_snap.c. */
static void test_agg_restore_reads_version_1_sums(void **state) {
  fx_t a, b;
  fx_count_sum(&a, CK_WIN_TUMBLE);
  a.win.size = 10;
  fx_start(&a);
  PUSH(&a, {1, 0, 5}, {1, 1, -12}, {2, 3, INT64_MAX}, {2, 4, 1});
  ck_buf_t v2, v1;
  ck_buf_init(&v2);
  ck_buf_init(&v1);
  assert_int_equal(a.op.ops->snapshot(&a.op, &v2, &a.err), 0);
  uint16_t version;
  memcpy(&version, v2.data + 4, 2);
  assert_int_equal(version, 2);
  /* header 6, shape 1 + 4·8 + 2 + 3 + 2 + 2·8 + 4, watermark 8, count 8 */
  size_t head = 6 + 60 + 8 + 8, rec2 = 4 + 16 + 9 + 8 + 1 + 16;
  uint64_t count;
  memcpy(&count, v2.data + head - 8, 8);
  assert_int_equal(count, 2);
  assert_int_equal(v2.len, head + count * rec2);
  ck_buf_append(&v1, v2.data, head);
  v1.data[4] = 1;
  for (uint64_t r = 0; r < count; r++) {
    const char *rec = v2.data + head + r * rec2;
    ck_i128 sum;
    memcpy(&sum, rec + rec2 - 16, 16);
    int64_t narrow = (int64_t)sum;
    if (sum != (ck_i128)narrow) narrow = INT64_MIN; /* did not fit an i64: unused below */
    ck_buf_append(&v1, rec, rec2 - 16);
    ck_buf_append(&v1, &narrow, 8);
  }
  fx_count_sum(&b, CK_WIN_TUMBLE);
  b.win.size = 10;
  fx_start(&b);
  /* key 2's sum (MAX + 1) has no version 1 form: restore key 1 only */
  ck_buf_t one;
  ck_buf_init(&one);
  ck_buf_append(&one, v1.data, head);
  uint64_t one_count = 0;
  for (uint64_t r = 0; r < count; r++) {
    const char *rec = v1.data + head + r * (rec2 - 8);
    int64_t key;
    memcpy(&key, rec + 4 + 16 + 1, 8);
    if (key != 1) continue;
    ck_buf_append(&one, rec, rec2 - 8);
    one_count++;
  }
  assert_int_equal(one_count, 1);
  memcpy(one.data + head - 8, &one_count, 8);
  int rc = b.op.ops->restore(&b.op, one.data, one.len, &b.err);
  if (rc) fprintf(stderr, "restore failed: %s\n", b.err.message);
  assert_int_equal(rc, 0);
  PUSH(&b, {1, 2, INT64_MAX}); /* -7 + MAX: the restored sum is widened */
  wm(&b, 10);
  expect(&b, "+I 1 0 10 3 9223372036854775800\nwm 10\n");
  /* and an unknown version is refused by number */
  one.data[4] = 3;
  fx_close(&b);
  fx_count_sum(&b, CK_WIN_TUMBLE);
  b.win.size = 10;
  fx_start(&b);
  assert_int_equal(b.op.ops->restore(&b.op, one.data, one.len, &b.err), CK_ESTATE);
  assert_string_equal(b.err.detail, "version 3, this build reads versions 1 to 2");
  ck_buf_fini(&one);
  ck_buf_fini(&v1);
  ck_buf_fini(&v2);
  fx_close(&b);
  fx_fini(&a);

  /* SUM of doubles: version 1 had hi, lo and no count of 2^1000s */
  fx_init(&a, CK_WIN_TUMBLE);
  a.win.size = 10;
  fx_key(&a, 0, I64);
  fx_call(&a, CK_AGG_SUM, false, 2, F64);
  fx_start(&a);
  int64_t dk[] = {1, 1}, dt[] = {0, 1};
  double dv[] = {0.1, 0.2};
  double_rows(&a, 2, dk, dt, dv);
  ck_buf_init(&v2);
  ck_buf_init(&v1);
  assert_int_equal(a.op.ops->snapshot(&a.op, &v2, &a.err), 0);
  head = 6 + (1 + 4 * 8 + 2 + 3 + 2 + 8 + 4) + 8 + 8;
  rec2 = 4 + 16 + 9 + 1 + 24;
  assert_int_equal(v2.len, head + rec2);
  int64_t big;
  memcpy(&big, v2.data + head + rec2 - 8, 8);
  assert_int_equal(big, 0);
  ck_buf_append(&v1, v2.data, head + rec2 - 8);
  v1.data[4] = 1;
  fx_init(&b, CK_WIN_TUMBLE);
  b.win.size = 10;
  fx_key(&b, 0, I64);
  fx_call(&b, CK_AGG_SUM, false, 2, F64);
  fx_start(&b);
  rc = b.op.ops->restore(&b.op, v1.data, v1.len, &b.err);
  if (rc) fprintf(stderr, "restore failed: %s\n", b.err.message);
  assert_int_equal(rc, 0);
  int64_t dk3[] = {1, 1, 1}, dt3[] = {2, 3, 4};
  double dv2[] = {1e308, 1e308, -1e308}; /* the restored sum then passes the range and returns */
  double_rows(&b, 3, dk3, dt3, dv2);
  wm(&b, 10);
  expect(&b, "+I 1 0 10 1e+308\nwm 10\n");
  ck_buf_fini(&v1);
  ck_buf_fini(&v2);
  fx_close(&b);
  fx_fini(&a);
}

/* ---- misuse ---- */

static void test_agg_init_and_input_errors(void **state) {
  fx_t f;
  fx_count_sum(&f, CK_WIN_TUMBLE);
  f.win.size = 0;
  assert_int_equal(fx_try_start(&f, 0, 1), CK_EINVAL);
  fx_fini(&f);

  fx_count_sum(&f, CK_WIN_TUMBLE);
  f.win.size = 10;
  f.calls[1].result_type = F64; /* SUM(BIGINT) is BIGINT */
  assert_int_equal(fx_try_start(&f, 0, 1), CK_EUNSUPPORTED);
  assert_non_null(strstr(f.err.message, "SUM of BIGINT giving DOUBLE"));
  fx_fini(&f);

  fx_count_sum(&f, CK_WIN_TUMBLE);
  f.win.size = 10;
  fx_start(&f);
  ck_type_t types[3] = {I32, TS, I64}; /* the key should be BIGINT */
  ck_batch_t *b = ck_batch_new(3, types, 1);
  ck_col_append_i32(&b->cols[0], 1);
  ck_col_append_i64(&b->cols[1], 0);
  ck_col_append_i64(&b->cols[2], 0);
  assert_int_equal(process(&f, b), CK_EINVAL);
  fx_fini(&f);

  fx_count_sum(&f, CK_WIN_NONE);
  fx_start(&f);
  ck_type_t t3[3] = {I64, TS, I64};
  b = ck_batch_new(3, t3, 1);
  ck_col_append_i64(&b->cols[0], 1);
  ck_col_append_i64(&b->cols[1], 0);
  ck_col_append_i64(&b->cols[2], 0);
  ck_batch_seal(b);
  ck_batch_set_kind(b, 0, CK_ROW_DELETE); /* retractions are refused, not miscounted */
  assert_int_equal(f.op.ops->process(&f.op, b, &f.err), CK_EUNSUPPORTED);
  ck_batch_free(b);
  fx_fini(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_agg_tumble_fires_at_window_end_in_order),
      cmocka_unit_test(test_agg_tumble_late_records_dropped_and_counted),
      cmocka_unit_test(test_agg_tumble_allowed_lateness),
      cmocka_unit_test(test_agg_tumble_many_groups_batches_sorted),
      cmocka_unit_test(test_agg_window_without_keys),
      cmocka_unit_test(test_agg_hop_windows_and_partial_lateness),
      cmocka_unit_test(test_agg_session_out_of_order_merge),
      cmocka_unit_test(test_agg_session_same_bounds_ordered_by_key),
      cmocka_unit_test(test_agg_session_merge_keeps_distinct_and_min),
      cmocka_unit_test(test_agg_cumulate_windows),
      cmocka_unit_test(test_agg_functions_with_nulls),
      cmocka_unit_test(test_agg_functions_over_other_types),
      cmocka_unit_test(test_agg_double_sums_do_not_depend_on_order),
      cmocka_unit_test(test_agg_decimal_sum_avg_exact_and_rounded),
      cmocka_unit_test(test_agg_decimal_avg_rounds_half_away_from_zero),
      cmocka_unit_test(test_agg_overflow_is_an_error),
      cmocka_unit_test(test_agg_sum_bigint_checked_at_emit_not_on_partial_sums),
      cmocka_unit_test(test_agg_double_sums_past_the_range_are_checked_at_emit),
      cmocka_unit_test(test_agg_distinct),
      cmocka_unit_test(test_agg_min_max_strings_and_string_keys),
      cmocka_unit_test(test_agg_unwindowed_changelog_kinds_and_order),
      cmocka_unit_test(test_agg_unwindowed_large_batch_split),
      cmocka_unit_test(test_agg_unwindowed_having_insert_update_delete),
      cmocka_unit_test(test_agg_windowed_having_drops_rows),
      cmocka_unit_test(test_agg_state_bytes_per_group),
      cmocka_unit_test(test_agg_string_pool_compacts),
      cmocka_unit_test(test_agg_snapshot_restore_tumble),
      cmocka_unit_test(test_agg_snapshot_restore_order_aggregates),
      cmocka_unit_test(test_agg_session_merge_first_last_by_arrival),
      cmocka_unit_test(test_agg_approx_count_distinct_error_bound),
      cmocka_unit_test(test_agg_snapshot_restore_hop),
      cmocka_unit_test(test_agg_snapshot_restore_cumulate),
      cmocka_unit_test(test_agg_snapshot_restore_session),
      cmocka_unit_test(test_agg_snapshot_restore_unwindowed_having),
      cmocka_unit_test(test_agg_restore_splits_by_key_group),
      cmocka_unit_test(test_agg_restore_rejects_foreign_or_truncated),
      cmocka_unit_test(test_agg_restore_reads_version_1_sums),
      cmocka_unit_test(test_agg_init_and_input_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
