/*
 * DESIGN: unit tests for src/runtime/exec — the executor, driven by hand-built job graphs
 * (source → [agg] → sink) over a FAKE connector defined here.
 *
 * The fake source is scripted by the test through the world `W`: which subtasks own how many
 * partitions, which of them are silent, how many batches the test has granted ("credits"), and
 * when input ends. A source with nothing to do waits on W_cv up to the executor's poll timeout
 * and returns CK_SRC_IDLE, so it never spins and wakes as soon as the test changes its script.
 * The capturing sink stores every row as text ("key|ts|v") under W_mu, can be held inside
 * write() by the test (backpressure), and can fail on a chosen write (error propagation).
 *
 * Every wait is on W_cv with a deadline, never a sleep: a broken executor fails an assertion
 * at its deadline, and a hung ck_exec_wait aborts the process loudly instead of hanging ctest.
 * Threads: the cmocka thread (the test), the executor's subtask threads (fake source/sink
 * callbacks), and one waiter thread per job that runs ck_exec_wait. Everything they share is
 * in W, under W_mu. Every test ends with the counted heap back at its starting level.
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

#include "base/alloc.h"
#include "base/arena.h"
#include "base/thread.h"
#include "base/time.h"
#include "runtime/batch.h"
#include "runtime/connector.h"
#include "runtime/exec.h"
#include "runtime/graph.h"
#include "runtime/op.h"

enum {
  WAIT_LIMIT_MS = 20000, /* far beyond any healthy wait, even under ASan on a busy machine */
  QUIET_MS = 300,        /* how long "nothing happens" is watched for */
  MAXSUB = 8,
  MAXP = 128,            /* max_parallelism (key groups) of every graph here */
};

/* ================================================================= the world */

typedef struct row {
  int subtask;
  uint8_t kind;
  char text[96];
} row_t;

typedef struct fsrc fsrc_t;
typedef int (*poll_fn)(fsrc_t *s, ck_batch_t *batch, int max_rows, int timeout_ms, int *part,
                       ck_error_t *err);

struct fsrc {
  int subtask, parallelism, nparts;
  int64_t batches; /* batches this instance produced */
  int64_t polls;
};

/* W_mu guards W; W_cv is broadcast on every change of it. */
static ck_mutex_t W_mu;
static ck_cond_t W_cv;

static struct {
  /* source script */
  poll_fn poll;
  int nparts[MAXSUB];     /* partitions per source subtask */
  bool silent[MAXSUB];    /* subtask never delivers data */
  int64_t credits;        /* batches the sources may still produce; -1: unlimited */
  bool end;               /* sources return CK_SRC_END once out of credits */
  int rows_per_batch;
  int64_t ts_step;        /* event time of batch n is n * ts_step */
  int nkeys;              /* keys "k00".."k<nkeys-1>" */
  int64_t v_base;         /* added to every v of poll_credit */
  int64_t range_rows;     /* poll_range: global rows 0..range_rows-1 */
  int fail_poll_at;       /* poll_fail: the poll that fails */
  /* source observations */
  int64_t polls[MAXSUB];
  int64_t src_rows[MAXSUB];
  int64_t data_batches;
  bool src_ended[MAXSUB];
  int src_open, src_close;
  /* sink script */
  bool hold[MAXSUB];      /* write() blocks while set */
  int fail_subtask;       /* -1: none */
  int fail_on_write;      /* that subtask's n-th write fails (1-based) */
  bool fail_after_other;  /* another subtask's first write waits for the failer's close, then fails too */
  bool teardown;          /* a failed test is being cleaned up: stop waiting for anything */
  bool fail_open;         /* sink open() fails */
  bool fail_finish;       /* sink finish() fails */
  /* sink observations */
  int writes[MAXSUB];
  int in_write[MAXSUB];
  int sink_open, sink_close, finish[MAXSUB];
  row_t *rows;
  int nrows, caprows;
} W;

static void world_reset(void) {
  ck_mutex_lock(&W_mu);
  free(W.rows);
  memset(&W, 0, sizeof W);
  W.fail_subtask = -1;
  W.rows_per_batch = 1;
  W.ts_step = 10;
  W.nkeys = 1;
  for (int i = 0; i < MAXSUB; i++) W.nparts[i] = 1;
  ck_mutex_unlock(&W_mu);
}

static int group_setup(void **state) {
  ck_mutex_init(&W_mu);
  ck_cond_init(&W_cv);
  world_reset();
  return 0;
}

static int group_teardown(void **state) {
  free(W.rows);
  W.rows = NULL;
  ck_cond_fini(&W_cv);
  ck_mutex_fini(&W_mu);
  return 0;
}

static void world_set(int64_t *field, int64_t v) {
  ck_mutex_lock(&W_mu);
  *field = v;
  ck_cond_broadcast(&W_cv);
  ck_mutex_unlock(&W_mu);
}

static void world_flag(bool *field, bool v) {
  ck_mutex_lock(&W_mu);
  *field = v;
  ck_cond_broadcast(&W_cv);
  ck_mutex_unlock(&W_mu);
}

/* Waits on W_cv until pred(arg) holds (checked under W_mu) or ms pass; returns pred. */
static bool wait_for(bool (*pred)(void *), void *arg, int64_t ms) {
  int64_t deadline = ck_mono_ms() + ms;
  ck_mutex_lock(&W_mu);
  bool ok;
  while (!(ok = pred(arg)))
    if (!ck_cond_wait_until(&W_cv, &W_mu, deadline)) {
      ok = pred(arg);
      break;
    }
  ck_mutex_unlock(&W_mu);
  return ok;
}

static bool pred_rows_at_least(void *arg) { return W.nrows >= *(int *)arg; }
static bool pred_polls0_at_least(void *arg) { return W.polls[0] >= *(int64_t *)arg; }
static bool pred_polls_grew(void *arg) {
  const int64_t *before = arg;
  for (int s = 0; s < MAXSUB; s++)
    if (W.polls[s] > before[s]) return true;
  return false;
}
static bool pred_in_write(void *arg) { return W.in_write[*(int *)arg] > 0; }
static bool pred_credits_spent(void *arg) { return W.credits == 0; }
static bool pred_data_batches_at_least(void *arg) { return W.data_batches >= *(int64_t *)arg; }

static int64_t polls_of(int subtask) {
  ck_mutex_lock(&W_mu);
  int64_t n = W.polls[subtask];
  ck_mutex_unlock(&W_mu);
  return n;
}

static void polls_copy(int64_t *out) {
  ck_mutex_lock(&W_mu);
  memcpy(out, W.polls, sizeof W.polls);
  ck_mutex_unlock(&W_mu);
}

static int world_nrows(void) {
  ck_mutex_lock(&W_mu);
  int n = W.nrows;
  ck_mutex_unlock(&W_mu);
  return n;
}

/* ================================================================= fake source */

static void append(ck_batch_t *b, const char *key, int64_t ts, int64_t v) {
  ck_col_append_str(&b->cols[0], key, strlen(key));
  ck_col_append_i64(&b->cols[1], ts);
  ck_col_append_i64(&b->cols[2], v);
}

static int fsrc_open(ck_source_t *src, ck_error_t *err) {
  fsrc_t *s = ck_calloc(1, sizeof *s);
  s->subtask = src->ctx.subtask;
  s->parallelism = src->ctx.parallelism;
  ck_mutex_lock(&W_mu);
  s->nparts = W.nparts[s->subtask];
  W.src_open++;
  ck_mutex_unlock(&W_mu);
  src->impl = s;
  return 0;
}

static int fsrc_npartitions(ck_source_t *src) { return ((fsrc_t *)src->impl)->nparts; }

static int fsrc_poll(ck_source_t *src, ck_batch_t *batch, int max_rows, int timeout_ms,
                     int *part, ck_error_t *err) {
  fsrc_t *s = src->impl;
  s->polls++;
  ck_mutex_lock(&W_mu);
  W.polls[s->subtask]++;
  ck_cond_broadcast(&W_cv);
  ck_mutex_unlock(&W_mu);
  int r = W.poll(s, batch, max_rows, timeout_ms, part, err);
  ck_mutex_lock(&W_mu);
  if (r == CK_SRC_END) W.src_ended[s->subtask] = true;
  if (r == CK_SRC_DATA) {
    W.src_rows[s->subtask] += (int64_t)batch->cols[0].len;
    W.data_batches++;
  }
  ck_cond_broadcast(&W_cv);
  ck_mutex_unlock(&W_mu);
  return r;
}

static int fsrc_snapshot(ck_source_t *src, ck_buf_t *out, ck_error_t *err) { return 0; }
static int fsrc_restore(ck_source_t *src, const void *d, size_t n, ck_error_t *err) { return 0; }

static void fsrc_close(ck_source_t *src) {
  ck_free(src->impl);
  src->impl = NULL;
  ck_mutex_lock(&W_mu);
  W.src_close++;
  ck_cond_broadcast(&W_cv);
  ck_mutex_unlock(&W_mu);
}

/* Batch n of a subtask (one per granted credit): rows_per_batch rows of partition 0 with event
 * time n * ts_step, key k<n % nkeys>, v = subtask * 1e9 + running row number. A silent
 * subtask, or one out of credits, waits for the script to change until the poll timeout. */
static int poll_credit(fsrc_t *s, ck_batch_t *batch, int max_rows, int timeout_ms, int *part,
                       ck_error_t *err) {
  int64_t deadline = ck_mono_ms() + timeout_ms;
  ck_mutex_lock(&W_mu);
  for (;;) {
    bool may = !W.silent[s->subtask] && s->nparts > 0 && W.credits != 0;
    if (may) break;
    if (W.end) {
      ck_mutex_unlock(&W_mu);
      return CK_SRC_END;
    }
    if (!ck_cond_wait_until(&W_cv, &W_mu, deadline)) {
      ck_mutex_unlock(&W_mu);
      return CK_SRC_IDLE;
    }
  }
  if (W.credits > 0) W.credits--;
  int rows = W.rows_per_batch < max_rows ? W.rows_per_batch : max_rows;
  int nkeys = W.nkeys;
  int64_t v_base = W.v_base;
  int64_t ts = s->batches * W.ts_step;
  ck_cond_broadcast(&W_cv);
  ck_mutex_unlock(&W_mu);
  for (int j = 0; j < rows; j++) {
    char key[16];
    snprintf(key, sizeof key, "k%02d", (int)(s->batches % nkeys));
    append(batch, key, ts, v_base + (int64_t)s->subtask * 1000000000 + s->batches * rows + j);
  }
  s->batches++;
  *part = 0;
  return CK_SRC_DATA;
}

/* A bounded generator: subtask s of P produces the global rows i ≡ s (mod P) of
 * 0..range_rows-1 in order, key k<i % nkeys>, ts = i, v = i, in batches of up to 64 rows;
 * every third poll is IDLE. */
static int poll_range(fsrc_t *s, ck_batch_t *batch, int max_rows, int timeout_ms, int *part,
                      ck_error_t *err) {
  if (s->polls % 3 == 0) return CK_SRC_IDLE;
  int64_t i = s->subtask + s->batches * 64 * s->parallelism;
  if (i >= W.range_rows) return CK_SRC_END;
  int n = 0;
  for (; i < W.range_rows && n < 64 && n < max_rows; i += s->parallelism, n++) {
    char key[16];
    snprintf(key, sizeof key, "k%02d", (int)(i % W.nkeys));
    append(batch, key, i, i);
  }
  s->batches++;
  *part = 0;
  return CK_SRC_DATA;
}

/* Unbounded data until the fail_poll_at-th poll of subtask 0, which fails. */
static int poll_fail(fsrc_t *s, ck_batch_t *batch, int max_rows, int timeout_ms, int *part,
                     ck_error_t *err) {
  if (s->subtask == 0 && s->polls == W.fail_poll_at)
    return ck_error_set(err, CK_EDECODE,
                        "could not decode record at partition 0, offset %lld: bad JSON",
                        (long long)s->batches);
  return poll_credit(s, batch, max_rows, timeout_ms, part, err);
}

static const ck_source_ops_t fake_source_ops = {
    .open = fsrc_open,
    .npartitions = fsrc_npartitions,
    .poll = fsrc_poll,
    .snapshot = fsrc_snapshot,
    .restore = fsrc_restore,
    .close = fsrc_close,
};

/* ================================================================= capturing sink */

static int fsink_open(ck_sink_t *sink, bool restored, ck_error_t *err) {
  ck_mutex_lock(&W_mu);
  W.sink_open++;
  bool fail = W.fail_open;
  ck_mutex_unlock(&W_mu);
  if (fail) return ck_error_set(err, CK_ECONNECT, "could not connect to fake sink: refused");
  return 0;
}

static void row_text(const ck_batch_t *b, size_t i, char *out, size_t cap) {
  size_t used = 0;
  out[0] = 0;
  for (int c = 0; c < b->ncols; c++) {
    const ck_col_t *col = &b->cols[c];
    char v[64];
    if (!ck_col_valid(col, i)) snprintf(v, sizeof v, "null");
    else if (col->type.id == CK_T_STRING) {
      size_t n;
      const char *s = ck_col_str(col, i, &n);
      snprintf(v, sizeof v, "%.*s", (int)n, s);
    } else if (col->type.id == CK_T_INT32) {
      snprintf(v, sizeof v, "%d", ck_col_i32(col, i));
    } else {
      snprintf(v, sizeof v, "%lld", (long long)ck_col_i64(col, i));
    }
    int w = snprintf(out + used, cap - used, "%s%s", c ? "|" : "", v);
    if (w > 0) used += (size_t)w;
    if (used >= cap) break;
  }
}

static int fsink_write(ck_sink_t *sink, const ck_batch_t *batch, ck_error_t *err) {
  int st = sink->ctx.subtask;
  int64_t deadline = ck_mono_ms() + WAIT_LIMIT_MS;
  ck_mutex_lock(&W_mu);
  W.in_write[st]++;
  int nth = ++W.writes[st];
  ck_cond_broadcast(&W_cv);
  while (W.hold[st] && ck_cond_wait_until(&W_cv, &W_mu, deadline)) {
  }
  int rc = 0;
  if (st == W.fail_subtask && nth == W.fail_on_write) {
    if (W.fail_after_other) /* the other subtask must be inside its write before we fail */
      for (int o = 0; o < MAXSUB; o++)
        if (o != st && o < sink->ctx.parallelism)
          while (!W.in_write[o] && !W.teardown && ck_cond_wait_until(&W_cv, &W_mu, deadline)) {
          }
    rc = ck_error_set(err, CK_EIO, "could not write to fake sink %d: disk on fire", st);
  } else if (W.fail_after_other && W.fail_subtask >= 0 && st != W.fail_subtask && nth == 1) {
    /* a second failure, strictly after the first one was recorded (the failer closed) */
    while (W.sink_close == 0 && !W.teardown && ck_cond_wait_until(&W_cv, &W_mu, deadline)) {
    }
    rc = ck_error_set(err, CK_EREMOTE, "second failure in fake sink %d", st);
  }
  if (!rc) {
    for (size_t i = 0; i < batch->nrows; i++) {
      if (W.nrows == W.caprows) {
        W.caprows = W.caprows ? W.caprows * 2 : 256;
        W.rows = realloc(W.rows, sizeof *W.rows * (size_t)W.caprows);
      }
      row_t *r = &W.rows[W.nrows++];
      r->subtask = st;
      r->kind = (uint8_t)ck_batch_kind(batch, i);
      row_text(batch, i, r->text, sizeof r->text);
    }
  }
  W.in_write[st]--;
  ck_cond_broadcast(&W_cv);
  ck_mutex_unlock(&W_mu);
  return rc;
}

static int fsink_prepare(ck_sink_t *sink, int64_t ckpt, ck_buf_t *out, ck_error_t *err) {
  return 0;
}
static int fsink_commit(ck_sink_t *sink, int64_t ckpt, ck_error_t *err) { return 0; }

static int fsink_finish(ck_sink_t *sink, ck_error_t *err) {
  ck_mutex_lock(&W_mu);
  W.finish[sink->ctx.subtask]++;
  bool fail = W.fail_finish;
  ck_cond_broadcast(&W_cv);
  ck_mutex_unlock(&W_mu);
  if (fail) return ck_error_set(err, CK_EIO, "could not flush fake sink: out of space");
  return 0;
}

static void fsink_close(ck_sink_t *sink) {
  ck_mutex_lock(&W_mu);
  W.sink_close++;
  ck_cond_broadcast(&W_cv);
  ck_mutex_unlock(&W_mu);
}

static const ck_sink_ops_t fake_sink_ops = {
    .open = fsink_open,
    .write = fsink_write,
    .prepare = fsink_prepare,
    .commit = fsink_commit,
    .finish = fsink_finish,
    .close = fsink_close,
};

static const ck_connector_t fake_connector = {
    .name = "fake_exec_test",
    .description = "scripted source and capturing sink of test_runtime_exec",
    .source = &fake_source_ops,
    .sink = &fake_sink_ops,
    .sink_guarantee = CK_GUARANTEE_AT_LEAST_ONCE,
};

/* ================================================================= graphs */

static ck_graph_t *graph_new(void) {
  ck_graph_t *g = ck_calloc(1, sizeof *g);
  ck_arena_init(&g->arena, 0);
  g->nodes = ck_arena_zalloc(&g->arena, sizeof *g->nodes * 8);
  g->max_parallelism = MAXP;
  return g;
}

static void graph_free(ck_graph_t *g) {
  ck_arena_fini(&g->arena);
  ck_free(g);
}

static ck_node_t *graph_add(ck_graph_t *g, ck_node_kind_t kind, const char *name, int parallelism,
                            ck_edge_kind_t edge) {
  ck_node_t *n = &g->nodes[g->nnodes];
  n->id = g->nnodes++;
  n->kind = kind;
  n->name = name;
  n->parallelism = parallelism;
  n->input = n->id - 1;
  n->edge = edge;
  return n;
}

/* Source columns: k STRING, ts BIGINT (event time when event_time), v BIGINT. */
static ck_node_t *add_source(ck_graph_t *g, int parallelism, bool event_time, int64_t idle_ms) {
  ck_node_t *n = graph_add(g, CK_NODE_SOURCE, "fake_source", parallelism, CK_EDGE_FORWARD);
  ck_schema_t s = ck_schema_make(&g->arena, 3);
  s.names[0] = "k", s.types[0] = CK_TYPE(CK_T_STRING);
  s.names[1] = "ts", s.types[1] = CK_TYPE(CK_T_INT64);
  s.names[2] = "v", s.types[2] = CK_TYPE(CK_T_INT64);
  n->out_schema = s;
  n->u.conn.connector = &fake_connector;
  n->u.conn.table = "src";
  n->u.conn.schema = s;
  n->u.conn.event_time_col = event_time ? 1 : -1;
  n->u.conn.idle_timeout_ms = idle_ms;
  return n;
}

/* GROUP BY k [, TUMBLE(ts, window_ms)] → k, [window_start, window_end,] COUNT(*), SUM(v).
 * window_ms 0: unwindowed (an update stream). */
static ck_node_t *add_agg(ck_graph_t *g, int parallelism, ck_edge_kind_t edge, int64_t window_ms) {
  ck_node_t *n = graph_add(g, CK_NODE_AGG, window_ms ? "window_agg" : "group_agg", parallelism,
                           edge);
  ck_agg_spec_t *a = &n->u.agg;
  a->nkeys = 1;
  a->key_cols = ck_arena_zalloc(&g->arena, sizeof(int));
  a->key_cols[0] = 0;
  if (edge == CK_EDGE_HASH) n->nkeys = 1, n->key_cols = a->key_cols;
  a->ncalls = 2;
  a->calls = ck_arena_zalloc(&g->arena, sizeof *a->calls * 2);
  a->calls[0] = (ck_agg_call_t){CK_AGG_COUNT_STAR, false, -1, CK_TYPE(CK_T_INT64),
                                CK_TYPE(CK_T_INT64)};
  a->calls[1] = (ck_agg_call_t){CK_AGG_SUM, false, 2, CK_TYPE(CK_T_INT64), CK_TYPE(CK_T_INT64)};
  if (window_ms) {
    a->window.kind = CK_WIN_TUMBLE;
    a->window.size = window_ms;
    a->window.time_col = 1;
  }
  n->changelog = window_ms == 0;
  int nout = window_ms ? 5 : 3, c = 0;
  ck_schema_t s = ck_schema_make(&g->arena, nout);
  s.names[c] = "k", s.types[c++] = CK_TYPE(CK_T_STRING);
  if (window_ms) {
    s.names[c] = "window_start", s.types[c++] = CK_TYPE(CK_T_TIMESTAMP);
    s.names[c] = "window_end", s.types[c++] = CK_TYPE(CK_T_TIMESTAMP);
  }
  s.names[c] = "cnt", s.types[c++] = CK_TYPE(CK_T_INT64);
  s.names[c] = "total", s.types[c++] = CK_TYPE(CK_T_INT64);
  n->out_schema = s;
  return n;
}

static ck_node_t *add_sink(ck_graph_t *g, int parallelism, ck_edge_kind_t edge) {
  ck_node_t *n = graph_add(g, CK_NODE_SINK, "fake_sink", parallelism, edge);
  const ck_node_t *in = &g->nodes[n->input];
  n->out_schema = in->out_schema;
  n->changelog = in->changelog;
  n->u.conn.connector = &fake_connector;
  n->u.conn.table = "snk";
  n->u.conn.schema = in->out_schema;
  n->u.conn.event_time_col = -1;
  n->u.conn.col_map = ck_arena_zalloc(&g->arena, sizeof(int) * (size_t)in->out_schema.ncols);
  for (int i = 0; i < in->out_schema.ncols; i++) n->u.conn.col_map[i] = i;
  return n;
}

/* ================================================================= jobs */

typedef struct job {
  ck_graph_t *graph; /* owned: freed with the job */
  ck_exec_t *ex;
  ck_thread_t waiter;
  int rc;
  ck_error_t err;
  bool done;
} job_t;

/* The one job a test runs at a time. Static, not on the test's stack: a failed assertion
 * leaves the test function while the job may still run, and the teardown stops it. */
static job_t JOB;
static bool job_active;

static void *job_waiter(void *arg) {
  job_t *j = arg;
  ck_error_t err;
  ck_error_clear(&err);
  int rc = ck_exec_wait(j->ex, &err);
  ck_mutex_lock(&W_mu);
  j->rc = rc;
  j->err = err;
  j->done = true;
  ck_cond_broadcast(&W_cv);
  ck_mutex_unlock(&W_mu);
  return NULL;
}

/* Starts the graph (the job owns it from here on). */
static job_t *job_start(ck_graph_t *g, int channel_capacity) {
  job_t *j = &JOB;
  memset(j, 0, sizeof *j);
  j->graph = g;
  job_active = true;
  ck_error_t err;
  ck_error_clear(&err);
  ck_exec_opts_t opts = {.job_name = "test", .channel_capacity = channel_capacity};
  int rc = ck_exec_start(g, &opts, &j->ex, &err);
  if (rc) fail_msg("ck_exec_start failed: %d %s", rc, err.message);
  assert_int_equal(ck_thread_start(&j->waiter, "exec-waiter", job_waiter, j), 0);
  return j;
}

static bool pred_job_done(void *arg) { return ((job_t *)arg)->done; }

/* Waits for ck_exec_wait to return; a job still running after the limit is a hang, and the
 * process aborts (its threads cannot be reclaimed). */
static int job_finish(job_t *j, int64_t limit_ms) {
  if (!wait_for(pred_job_done, j, limit_ms)) {
    fprintf(stderr, "FATAL: ck_exec_wait did not return within %lld ms: the job hangs\n",
            (long long)limit_ms);
    abort();
  }
  ck_thread_join(&j->waiter);
  return j->rc;
}

static void job_free(job_t *j) {
  ck_exec_free(j->ex);
  j->ex = NULL;
  graph_free(j->graph);
  j->graph = NULL;
  job_active = false;
}

/* After every test: a job a failed assertion left running is stopped and reclaimed, so the
 * next test starts from a quiet world. */
static int test_teardown(void **state) {
  if (job_active) {
    ck_mutex_lock(&W_mu);
    W.teardown = true;
    W.end = true;
    W.credits = 0;
    memset(W.hold, 0, sizeof W.hold);
    ck_cond_broadcast(&W_cv);
    ck_mutex_unlock(&W_mu);
    ck_exec_stop(JOB.ex);
    job_finish(&JOB, WAIT_LIMIT_MS);
    job_free(&JOB);
  }
  world_reset();
  return 0;
}

/* ================================================================= row helpers */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The captured rows' texts, sorted, joined by '\n' (a multiset). Caller frees. */
static char *rows_sorted(void) {
  ck_mutex_lock(&W_mu);
  const char **v = malloc(sizeof *v * (size_t)(W.nrows + 1));
  size_t len = 1;
  for (int i = 0; i < W.nrows; i++) v[i] = W.rows[i].text, len += strlen(v[i]) + 1;
  qsort(v, (size_t)W.nrows, sizeof *v, cmp_str);
  char *out = malloc(len);
  out[0] = 0;
  size_t used = 0;
  for (int i = 0; i < W.nrows; i++) used += (size_t)sprintf(out + used, "%s\n", v[i]);
  ck_mutex_unlock(&W_mu);
  free(v);
  return out;
}

static bool has_row(const char *text) {
  ck_mutex_lock(&W_mu);
  bool found = false;
  for (int i = 0; i < W.nrows && !found; i++) found = strcmp(W.rows[i].text, text) == 0;
  ck_mutex_unlock(&W_mu);
  return found;
}

static void expect_row(const char *text) {
  if (!has_row(text)) {
    char *all = rows_sorted();
    print_error("expected the sink to hold row '%s'; it holds:\n%s", text, all);
    free(all);
    fail();
  }
}

static int64_t heap_blocks(void) { return ck_mem_stats().live_blocks; }

/* ================================================================= watermarks */

typedef enum layout {
  ONE_SUBTASK_TWO_PARTITIONS, /* source p=1 owning partitions 0 and 1; all chained */
  TWO_SUBTASKS,               /* source p=2, one partition each, gathered into agg p=1 */
} layout_t;

/* Partition 0 (of subtask 0) delivers one row per credit at ts 0, 10, 20, …; the other
 * partition never delivers. */
static ck_graph_t *silent_partition_graph(layout_t layout, int64_t idle_ms) {
  world_reset();
  W.poll = poll_credit;
  if (layout == ONE_SUBTASK_TWO_PARTITIONS) {
    W.nparts[0] = 2;
  } else {
    W.silent[1] = true;
  }
  ck_graph_t *g = graph_new();
  int p = layout == ONE_SUBTASK_TWO_PARTITIONS ? 1 : 2;
  add_source(g, p, true, idle_ms);
  add_agg(g, 1, p == 1 ? CK_EDGE_FORWARD : CK_EDGE_GATHER, 100);
  add_sink(g, 1, CK_EDGE_FORWARD);
  return g;
}

static void held_back_without_idle_timeout(layout_t layout) {
  int64_t blocks = heap_blocks();
  ck_graph_t *g = silent_partition_graph(layout, 0);
  world_set(&W.credits, 30); /* ts 0..290: windows [0,100) and [100,200) are complete */
  job_t *job = job_start(g, 4);
  assert_true(wait_for(pred_credits_spent, NULL, WAIT_LIMIT_MS));
  /* several more polls: after each the executor recomputed the watermark */
  int64_t more = polls_of(0) + 3;
  assert_true(wait_for(pred_polls0_at_least, &more, WAIT_LIMIT_MS));
  int one = 1;
  bool fired = wait_for(pred_rows_at_least, &one, QUIET_MS);
  if (fired) {
    char *all = rows_sorted();
    print_error("a silent partition must hold the watermark back, yet windows fired:\n%s", all);
    free(all);
    fail();
  }
  world_flag(&W.end, true); /* end of input: the maximal watermark fires everything */
  assert_int_equal(job_finish(job, WAIT_LIMIT_MS), 0);
  assert_int_equal(world_nrows(), 3);
  expect_row("k00|0|100|10|45");
  expect_row("k00|100|200|10|145");
  expect_row("k00|200|300|10|245");
  job_free(job);
  world_reset();
  assert_int_equal(heap_blocks(), blocks);
}

static void test_exec_silent_partition_holds_windows_back(void **state) {
  held_back_without_idle_timeout(ONE_SUBTASK_TWO_PARTITIONS);
}

static void test_exec_silent_subtask_holds_windows_back(void **state) {
  held_back_without_idle_timeout(TWO_SUBTASKS);
}

static void fire_with_idle_timeout(layout_t layout) {
  int64_t blocks = heap_blocks();
  ck_graph_t *g = silent_partition_graph(layout, 50);
  job_t *job = job_start(g, 4);
  /* grant one batch at a time until a window fires; partition 0 keeps delivering meanwhile */
  int64_t deadline = ck_mono_ms() + WAIT_LIMIT_MS, granted = 0;
  int want = 1;
  while (world_nrows() < 2 && ck_mono_ms() < deadline) {
    if (granted < 1000) {
      ck_mutex_lock(&W_mu);
      W.credits++;
      ck_cond_broadcast(&W_cv);
      ck_mutex_unlock(&W_mu);
      granted++;
    }
    want = world_nrows() + 1;
    wait_for(pred_rows_at_least, &want, 5);
  }
  ck_mutex_lock(&W_mu);
  int nrows = W.nrows;
  bool ended = W.src_ended[0] || W.src_ended[1];
  int64_t delivered = W.src_rows[0];
  ck_mutex_unlock(&W_mu);
  if (nrows < 2)
    fail_msg("with idle_timeout_ms=50 the silent partition must stop holding windows back; "
             "after %lld rows over %d ms no second window fired",
             (long long)delivered, WAIT_LIMIT_MS);
  assert_false(ended); /* they fired while input was still flowing */
  expect_row("k00|0|100|10|45");
  expect_row("k00|100|200|10|145");
  /* the partition still delivers after the windows fired */
  int64_t before[MAXSUB];
  polls_copy(before);
  ck_mutex_lock(&W_mu);
  W.credits += 5;
  ck_cond_broadcast(&W_cv);
  ck_mutex_unlock(&W_mu);
  assert_true(wait_for(pred_polls_grew, before, WAIT_LIMIT_MS));
  world_flag(&W.end, true);
  assert_int_equal(job_finish(job, WAIT_LIMIT_MS), 0);
  /* every record is in exactly one fired window: nothing was late or lost (the job's threads
   * are joined: W is the test's alone, no lock, so a failed assertion leaves none held) */
  int64_t counted = 0, records = W.src_rows[0];
  for (int i = 0; i < W.nrows; i++) {
    long long a, b, cnt, tot;
    char k[8];
    assert_int_equal(sscanf(W.rows[i].text, "%7[^|]|%lld|%lld|%lld|%lld", k, &a, &b, &cnt, &tot),
                     5);
    counted += cnt;
  }
  assert_int_equal(counted, records);
  assert_int_equal(ck_exec_totals(job->ex).late_dropped, 0);
  job_free(job);
  world_reset();
  assert_int_equal(heap_blocks(), blocks);
}

static void test_exec_idle_partition_lets_windows_fire(void **state) {
  fire_with_idle_timeout(ONE_SUBTASK_TWO_PARTITIONS);
}

static void test_exec_idle_subtask_lets_windows_fire(void **state) {
  fire_with_idle_timeout(TWO_SUBTASKS);
}

/* A source subtask that owns no partition says IDLE at once: it never holds the watermark,
 * even without idle_timeout_ms. */
static void test_exec_zero_partition_subtask_does_not_hold_watermark(void **state) {
  int64_t blocks = heap_blocks();
  world_reset();
  W.poll = poll_credit;
  W.nparts[1] = 0;
  ck_graph_t *g = graph_new();
  add_source(g, 2, true, 0);
  add_agg(g, 1, CK_EDGE_GATHER, 100);
  add_sink(g, 1, CK_EDGE_FORWARD);
  world_set(&W.credits, 25); /* ts 0..240 */
  job_t *job = job_start(g, 4);
  int two = 2;
  bool fired = wait_for(pred_rows_at_least, &two, WAIT_LIMIT_MS);
  ck_mutex_lock(&W_mu);
  bool ended = W.src_ended[0] || W.src_ended[1];
  ck_mutex_unlock(&W_mu);
  if (!fired) fail_msg("a subtask with zero partitions held the watermark back");
  assert_false(ended);
  expect_row("k00|0|100|10|45");
  expect_row("k00|100|200|10|145");
  world_flag(&W.end, true);
  assert_int_equal(job_finish(job, WAIT_LIMIT_MS), 0);
  assert_int_equal(world_nrows(), 3);
  expect_row("k00|200|300|5|110");
  assert_int_equal(W.polls[1] > 0, 1); /* subtask 1 ran and was polled */
  job_free(job);
  world_reset();
  assert_int_equal(heap_blocks(), blocks);
}

/* ================================================================= parallelism */

enum { RANGE_ROWS = 3000, RANGE_KEYS = 37 };

/* Runs GROUP BY k [, TUMBLE(ts, 100)] with src_p source subtasks and p aggregation subtasks;
 * returns the sorted rows (final per key for the unwindowed update stream). Checks key routing
 * on the way. */
static char *run_keyed(int src_p, int p, int64_t window_ms) {
  world_reset();
  W.poll = poll_range;
  W.range_rows = RANGE_ROWS;
  W.nkeys = RANGE_KEYS;
  ck_graph_t *g = graph_new();
  add_source(g, src_p, true, 0);
  add_agg(g, p, CK_EDGE_HASH, window_ms);
  add_sink(g, p, CK_EDGE_FORWARD); /* chained: the sink subtask is the agg subtask */
  job_t *job = job_start(g, 4);
  assert_int_equal(job_finish(job, WAIT_LIMIT_MS), 0);
  ck_exec_totals_t tot = ck_exec_totals(job->ex);
  assert_int_equal(tot.source_records, RANGE_ROWS);
  assert_int_equal(tot.late_dropped, 0);

  /* every key on exactly one subtask: the one ck_key_group_subtask names */
  int owner[RANGE_KEYS];
  for (int k = 0; k < RANGE_KEYS; k++) owner[k] = -1;
  bool used[MAXSUB] = {false};
  ck_type_t kt = CK_TYPE(CK_T_STRING);
  int key_col = 0;
  /* the job's threads are joined: W is the test's alone (no lock held across assertions) */
  for (int i = 0; i < W.nrows; i++) {
    const row_t *r = &W.rows[i];
    int k = atoi(r->text + 1);
    assert_in_range(k, 0, RANGE_KEYS - 1);
    ck_batch_t *one = ck_batch_new(1, &kt, 1);
    ck_col_append_str(&one->cols[0], r->text, 3);
    ck_batch_seal(one);
    int kg = ck_key_group(ck_key_hash(one, &key_col, 1, 0), MAXP);
    ck_batch_free(one);
    int want = ck_key_group_subtask(kg, MAXP, p);
    if (r->subtask != want)
      fail_msg("key %.3s (key group %d) reached subtask %d of %d; the routing function says %d",
               r->text, kg, r->subtask, p, want);
    if (owner[k] >= 0 && owner[k] != r->subtask)
      fail_msg("key %.3s reached subtasks %d and %d", r->text, owner[k], r->subtask);
    owner[k] = r->subtask;
    used[r->subtask] = true;
  }
  /* the update stream: keep each key's latest row only (it lives on one subtask, in order) */
  if (!window_ms) {
    int n = 0;
    for (int i = 0; i < W.nrows; i++) {
      bool later = false;
      for (int j = i + 1; j < W.nrows && !later; j++)
        later = strncmp(W.rows[i].text, W.rows[j].text, 4) == 0;
      if (!later) W.rows[n++] = W.rows[i];
    }
    W.nrows = n;
  }
  int nused = 0;
  for (int s = 0; s < MAXSUB; s++) nused += used[s];
  if (p > 1 && nused < 2) fail_msg("at parallelism %d every key went to one subtask", p);
  char *rows = rows_sorted();
  job_free(job);
  return rows;
}

/* The expected result, computed here from the generator's definition. */
static char *expected_keyed(int64_t window_ms) {
  ck_mutex_lock(&W_mu);
  W.nrows = 0;
  ck_mutex_unlock(&W_mu);
  int64_t nwin = window_ms ? (RANGE_ROWS + window_ms - 1) / window_ms : 1;
  for (int k = 0; k < RANGE_KEYS; k++)
    for (int64_t w = 0; w < nwin; w++) {
      int64_t cnt = 0, sum = 0;
      for (int64_t i = 0; i < RANGE_ROWS; i++)
        if (i % RANGE_KEYS == k && (!window_ms || i / window_ms == w)) cnt++, sum += i;
      if (!cnt) continue;
      ck_mutex_lock(&W_mu);
      if (W.nrows == W.caprows) {
        W.caprows = W.caprows ? W.caprows * 2 : 256;
        W.rows = realloc(W.rows, sizeof *W.rows * (size_t)W.caprows);
      }
      row_t *r = &W.rows[W.nrows++];
      if (window_ms)
        snprintf(r->text, sizeof r->text, "k%02d|%lld|%lld|%lld|%lld", k,
                 (long long)(w * window_ms), (long long)((w + 1) * window_ms), (long long)cnt,
                 (long long)sum);
      else
        snprintf(r->text, sizeof r->text, "k%02d|%lld|%lld", k, (long long)cnt, (long long)sum);
      ck_mutex_unlock(&W_mu);
    }
  return rows_sorted();
}

static void keyed_same_at_every_parallelism(int64_t window_ms) {
  int64_t blocks = heap_blocks();
  char *expected = expected_keyed(window_ms);
  world_reset();
  /* {source subtasks, aggregation subtasks}: equal, and fan-in/fan-out across the exchange */
  const int ps[][2] = {{1, 1}, {2, 2}, {4, 4}, {3, 2}, {1, 4}};
  for (size_t i = 0; i < CK_ARRAY_LEN(ps); i++) {
    char *got = run_keyed(ps[i][0], ps[i][1], window_ms);
    bool same = strcmp(got, expected) == 0;
    if (!same)
      print_error("parallelism %d → %d gave:\n%s\nexpected:\n%s", ps[i][0], ps[i][1], got,
                  expected);
    free(got);
    if (!same) {
      free(expected);
      fail();
    }
  }
  free(expected);
  world_reset();
  assert_int_equal(heap_blocks(), blocks);
}

static void test_exec_keyed_window_agg_same_at_parallelism_1_2_4(void **state) {
  keyed_same_at_every_parallelism(100);
}

static void test_exec_keyed_group_agg_same_at_parallelism_1_2_4(void **state) {
  keyed_same_at_every_parallelism(0);
}

/* The routing function itself: key groups map onto subtasks in contiguous, balanced ranges
 * covering every subtask. */
static void test_exec_key_group_ranges_contiguous(void **state) {
  const int ps[] = {1, 2, 3, 4, 7, 128};
  for (size_t i = 0; i < CK_ARRAY_LEN(ps); i++) {
    int p = ps[i], count[128] = {0}, prev = 0;
    for (int kg = 0; kg < MAXP; kg++) {
      int s = ck_key_group_subtask(kg, MAXP, p);
      assert_in_range(s, prev, p - 1); /* non-decreasing: contiguous ranges */
      count[s]++;
      prev = s;
    }
    for (int s = 0; s < p; s++) assert_in_range(count[s], MAXP / p, MAXP / p + 1);
  }
  for (uint64_t h = 0; h < 1000; h++) assert_in_range(ck_key_group(h * 0x9e3779b97f4a7c15ULL, MAXP), 0, MAXP - 1);
}

/* ================================================================= backpressure */

static void test_exec_backpressure_blocks_source_and_loses_nothing(void **state) {
  int64_t blocks = heap_blocks();
  world_reset();
  W.poll = poll_credit;
  W.credits = 200;
  W.end = true; /* bounded: 200 batches, then END */
  W.rows_per_batch = 3;
  W.hold[0] = true;
  ck_graph_t *g = graph_new();
  add_source(g, 1, false, 0);
  add_sink(g, 1, CK_EDGE_REBALANCE); /* its own thread, behind a channel */
  enum { CAP = 2 };
  job_t *job = job_start(g, CAP);
  int zero = 0;
  assert_true(wait_for(pred_in_write, &zero, WAIT_LIMIT_MS));
  /* one batch in the sink, CAP in the channel, one in the blocked push: then no more polls */
  int64_t limit = CAP + 2;
  assert_true(wait_for(pred_polls0_at_least, &limit, WAIT_LIMIT_MS));
  int64_t before[MAXSUB];
  polls_copy(before);
  bool grew = wait_for(pred_polls_grew, before, QUIET_MS);
  int64_t polls = polls_of(0);
  if (grew || polls > limit)
    fail_msg("a held sink behind a channel of %d must block the source; it polled %lld times",
             CAP, (long long)polls);
  world_flag(&W.hold[0], false);
  assert_int_equal(job_finish(job, WAIT_LIMIT_MS), 0);
  /* every batch arrived, once, in order */
  assert_int_equal(W.nrows, 600);
  for (int i = 0; i < 600; i++) {
    long long v = 0;
    sscanf(strrchr(W.rows[i].text, '|') + 1, "%lld", &v);
    if (v != i) fail_msg("row %d at the sink carries v=%lld", i, v);
  }
  assert_int_equal(W.finish[0], 1);
  ck_exec_totals_t tot = ck_exec_totals(job->ex);
  assert_int_equal(tot.source_records, 600);
  assert_int_equal(tot.sink_records, 600);
  job_free(job);
  world_reset();
  assert_int_equal(heap_blocks(), blocks);
}

/* ================================================================= errors */

static void test_exec_sink_error_fails_job_first_error_wins(void **state) {
  int64_t blocks = heap_blocks();
  world_reset();
  W.poll = poll_credit;
  W.credits = -1; /* unbounded sources */
  W.rows_per_batch = 4;
  W.fail_subtask = 0;
  W.fail_on_write = 3;
  W.fail_after_other = true; /* subtask 1 fails too, after subtask 0's error was recorded */
  ck_graph_t *g = graph_new();
  add_source(g, 2, false, 0);
  add_sink(g, 2, CK_EDGE_REBALANCE);
  job_t *job = job_start(g, 2);
  int rc = job_finish(job, WAIT_LIMIT_MS);
  assert_int_equal(rc, CK_EIO);
  assert_int_equal(job->err.code, CK_EIO);
  assert_string_equal(job->err.message, "could not write to fake sink 0: disk on fire");
  assert_int_equal(W.sink_close, 2); /* every thread unwound and closed what it opened */
  assert_int_equal(W.src_close, 2);
  assert_int_equal(W.finish[0] + W.finish[1], 0); /* a failed job does not finish its sinks */
  job_free(job);
  world_reset();
  assert_int_equal(heap_blocks(), blocks);
}

static void test_exec_operator_error_fails_job(void **state) {
  int64_t blocks = heap_blocks();
  world_reset();
  W.poll = poll_credit;
  W.credits = -1;
  W.rows_per_batch = 2;
  W.nkeys = 3;
  W.v_base = INT64_MAX / 8; /* SUM(v) of a key overflows BIGINT on its 9th row */
  ck_graph_t *g = graph_new();
  add_source(g, 2, false, 0);
  add_agg(g, 2, CK_EDGE_HASH, 0);
  add_sink(g, 1, CK_EDGE_GATHER);
  job_t *job = job_start(g, 1);
  int rc = job_finish(job, WAIT_LIMIT_MS);
  assert_int_equal(rc, CK_EEVAL);
  if (!strstr(job->err.message, "SUM over input column 2 overflows BIGINT"))
    fail_msg("unexpected error: %s", job->err.message);
  assert_int_equal(W.src_close, 2);
  assert_int_equal(W.sink_close, 1);
  assert_int_equal(W.finish[0], 0);
  job_free(job);
  world_reset();
  assert_int_equal(heap_blocks(), blocks);
}

static void test_exec_source_error_fails_job(void **state) {
  int64_t blocks = heap_blocks();
  world_reset();
  W.poll = poll_fail;
  W.fail_poll_at = 20;
  W.credits = -1;
  W.rows_per_batch = 8;
  W.nkeys = 3;
  ck_graph_t *g = graph_new();
  add_source(g, 2, true, 0);
  add_agg(g, 2, CK_EDGE_HASH, 100);
  add_sink(g, 1, CK_EDGE_GATHER);
  job_t *job = job_start(g, 1);
  int rc = job_finish(job, WAIT_LIMIT_MS);
  assert_int_equal(rc, CK_EDECODE);
  assert_non_null(strstr(job->err.message, "could not decode record at partition 0"));
  assert_int_equal(W.src_close, 2);
  assert_int_equal(W.sink_close, 1);
  job_free(job);
  world_reset();
  assert_int_equal(heap_blocks(), blocks);
}

/* A sink that cannot open fails the job; the unbounded sources upstream notice and exit. */
static void test_exec_sink_open_error_fails_job(void **state) {
  int64_t blocks = heap_blocks();
  world_reset();
  W.poll = poll_credit;
  W.credits = -1;
  W.fail_open = true;
  ck_graph_t *g = graph_new();
  add_source(g, 2, true, 0);
  add_agg(g, 2, CK_EDGE_HASH, 100);
  add_sink(g, 1, CK_EDGE_GATHER);
  job_t *job = job_start(g, 2);
  int rc = job_finish(job, WAIT_LIMIT_MS);
  assert_int_equal(rc, CK_ECONNECT);
  assert_string_equal(job->err.message, "could not connect to fake sink: refused");
  assert_int_equal(W.src_close, 2);
  assert_int_equal(W.sink_close, 0); /* it never opened */
  job_free(job);
  world_reset();
  assert_int_equal(heap_blocks(), blocks);
}

/* finish() is part of the job: a sink that cannot flush at the end fails it. */
static void test_exec_sink_finish_error_fails_job(void **state) {
  int64_t blocks = heap_blocks();
  world_reset();
  W.poll = poll_range;
  W.range_rows = 500;
  W.nkeys = 5;
  W.fail_finish = true;
  ck_graph_t *g = graph_new();
  add_source(g, 2, false, 0);
  add_sink(g, 1, CK_EDGE_REBALANCE);
  job_t *job = job_start(g, 4);
  int rc = job_finish(job, WAIT_LIMIT_MS);
  assert_int_equal(rc, CK_EIO);
  assert_string_equal(job->err.message, "could not flush fake sink: out of space");
  assert_int_equal(W.nrows, 500); /* every row was written before the end failed */
  assert_int_equal(W.finish[0], 1);
  assert_int_equal(W.sink_close, 1);
  job_free(job);
  world_reset();
  assert_int_equal(heap_blocks(), blocks);
}

/* ================================================================= stop */

static ck_exec_t *volatile signal_target;

static void on_usr1(int sig) {
  (void)sig;
  if (signal_target) ck_exec_stop(signal_target); /* from a signal handler, as Ctrl-C does */
}

static void test_exec_stop_drains_in_flight_rows(void **state) {
  int64_t blocks = heap_blocks();
  world_reset();
  W.poll = poll_credit;
  W.credits = -1; /* unbounded */
  W.rows_per_batch = 5;
  W.hold[0] = true;
  ck_graph_t *g = graph_new();
  add_source(g, 2, false, 0);
  add_sink(g, 1, CK_EDGE_REBALANCE);
  job_t *job = job_start(g, 4);
  int zero = 0;
  assert_true(wait_for(pred_in_write, &zero, WAIT_LIMIT_MS));
  /* let the channel fill up behind the held sink: one batch in write, four in the channel,
   * one in each source's blocked push */
  int64_t full = 7;
  assert_true(wait_for(pred_data_batches_at_least, &full, WAIT_LIMIT_MS));

  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, &old);
  signal_target = job->ex;
  raise(SIGUSR1);
  signal_target = NULL;
  sigaction(SIGUSR1, &old, NULL);

  world_flag(&W.hold[0], false);
  assert_int_equal(job_finish(job, WAIT_LIMIT_MS), 0);
  assert_true(W.src_ended[0] == false && W.src_ended[1] == false); /* stopped, not ended */
  assert_int_equal(W.finish[0], 1);
  assert_int_equal(W.sink_close, 1);
  assert_int_equal(W.src_close, 2);
  /* everything the sources produced reached the sink, exactly once */
  int64_t produced = W.src_rows[0] + W.src_rows[1];
  assert_true(produced > 0);
  assert_int_equal(W.nrows, produced);
  int64_t seen[2] = {0, 0};
  for (int i = 0; i < W.nrows; i++) {
    long long v = 0;
    sscanf(strrchr(W.rows[i].text, '|') + 1, "%lld", &v);
    int s = (int)(v / 1000000000);
    assert_in_range(s, 0, 1);
    if (v % 1000000000 != seen[s]) fail_msg("subtask %d's row %lld arrived out of turn", s, v);
    seen[s]++;
  }
  assert_int_equal(seen[0], W.src_rows[0]);
  assert_int_equal(seen[1], W.src_rows[1]);
  ck_exec_totals_t tot = ck_exec_totals(job->ex);
  assert_int_equal(tot.source_records, produced);
  assert_int_equal(tot.sink_records, produced);
  job_free(job);
  world_reset();
  assert_int_equal(heap_blocks(), blocks);
}

/* Stop drains through two exchanges: source(2) → hash → GROUP BY k (2) → gather → sink(1).
 * The final row of every key counts every record the sources read. */
static void test_exec_stop_drains_through_keyed_exchange(void **state) {
  int64_t blocks = heap_blocks();
  world_reset();
  W.poll = poll_credit;
  W.credits = -1;
  W.rows_per_batch = 16;
  W.nkeys = 7;
  ck_graph_t *g = graph_new();
  add_source(g, 2, false, 0);
  add_agg(g, 2, CK_EDGE_HASH, 0);
  add_sink(g, 1, CK_EDGE_GATHER);
  job_t *job = job_start(g, 2);
  int some = 50;
  assert_true(wait_for(pred_rows_at_least, &some, WAIT_LIMIT_MS));
  ck_exec_stop(job->ex);
  assert_int_equal(job_finish(job, WAIT_LIMIT_MS), 0);
  assert_int_equal(W.finish[0], 1);
  /* latest row per key (a key lives on one agg subtask, whose output stays in order) */
  int64_t counted = 0, keys = 0;
  for (int i = 0; i < W.nrows; i++) {
    bool later = false;
    for (int j = i + 1; j < W.nrows && !later; j++)
      later = strncmp(W.rows[i].text, W.rows[j].text, 4) == 0;
    if (later) continue;
    long long cnt = 0, tot = 0;
    char k[8];
    assert_int_equal(sscanf(W.rows[i].text, "%7[^|]|%lld|%lld", k, &cnt, &tot), 3);
    counted += cnt;
    keys++;
  }
  int64_t read = W.src_rows[0] + W.src_rows[1];
  assert_int_equal(ck_exec_totals(job->ex).source_records, read);
  if (counted != read)
    fail_msg("after stop the sink's final counts cover %lld records; the sources read %lld",
             (long long)counted, (long long)read);
  assert_int_equal(keys, 7);
  job_free(job);
  world_reset();
  assert_int_equal(heap_blocks(), blocks);
}

/* Stopped before it read anything: still a clean end (finish, END, exit 0). */
static void test_exec_stop_at_once(void **state) {
  int64_t blocks = heap_blocks();
  world_reset();
  W.poll = poll_credit;
  W.credits = -1;
  ck_graph_t *g = graph_new();
  add_source(g, 2, true, 0);
  add_agg(g, 2, CK_EDGE_HASH, 100);
  add_sink(g, 2, CK_EDGE_FORWARD);
  job_t *job = job_start(g, 4);
  ck_exec_stop(job->ex);
  assert_int_equal(job_finish(job, WAIT_LIMIT_MS), 0);
  assert_int_equal(W.finish[0], 1);
  assert_int_equal(W.finish[1], 1);
  assert_int_equal(W.src_close, 2);
  assert_int_equal(W.sink_close, 2);
  assert_false(ck_exec_totals(job->ex).input_ended);
  job_free(job);
  world_reset();
  assert_int_equal(heap_blocks(), blocks);
}

int main(void) {
  ck_connector_register(&fake_connector);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_exec_silent_partition_holds_windows_back, test_teardown),
      cmocka_unit_test_teardown(test_exec_silent_subtask_holds_windows_back, test_teardown),
      cmocka_unit_test_teardown(test_exec_idle_partition_lets_windows_fire, test_teardown),
      cmocka_unit_test_teardown(test_exec_idle_subtask_lets_windows_fire, test_teardown),
      cmocka_unit_test_teardown(test_exec_zero_partition_subtask_does_not_hold_watermark, test_teardown),
      cmocka_unit_test_teardown(test_exec_key_group_ranges_contiguous, test_teardown),
      cmocka_unit_test_teardown(test_exec_keyed_window_agg_same_at_parallelism_1_2_4, test_teardown),
      cmocka_unit_test_teardown(test_exec_keyed_group_agg_same_at_parallelism_1_2_4, test_teardown),
      cmocka_unit_test_teardown(test_exec_backpressure_blocks_source_and_loses_nothing, test_teardown),
      cmocka_unit_test_teardown(test_exec_sink_error_fails_job_first_error_wins, test_teardown),
      cmocka_unit_test_teardown(test_exec_operator_error_fails_job, test_teardown),
      cmocka_unit_test_teardown(test_exec_source_error_fails_job, test_teardown),
      cmocka_unit_test_teardown(test_exec_sink_open_error_fails_job, test_teardown),
      cmocka_unit_test_teardown(test_exec_sink_finish_error_fails_job, test_teardown),
      cmocka_unit_test_teardown(test_exec_stop_drains_in_flight_rows, test_teardown),
      cmocka_unit_test_teardown(test_exec_stop_drains_through_keyed_exchange, test_teardown),
      cmocka_unit_test_teardown(test_exec_stop_at_once, test_teardown),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
