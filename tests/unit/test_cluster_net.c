/*
 * DESIGN: unit tests for src/cluster/net — the data plane between worker processes, with two
 * (or three) ck_net_t instances in this process talking over 127.0.0.1.
 *
 * The receiving side is an "inbox": the deliver callback (on the net's I/O thread) appends to
 * a list under a mutex and signals a condition; the test thread or a consumer thread takes
 * messages out and calls ck_net_consumed when it chooses to, which is how backpressure is
 * steered. Every wait is on a condition with a deadline, never a sleep used as
 * synchronisation: a broken wakeup fails the test at its deadline instead of hanging it. A
 * "still blocked" claim is a bounded wait that must time out, after the receiver has shown it
 * processed everything sent before. Threads: the test thread, each net's I/O thread, and per
 * test a few sender / consumer threads, all joined before the test returns; every test ends
 * with the live heap block count it started with.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/thread.h"
#include "base/time.h"
#include "cluster/net.h"

enum { WAIT_LIMIT_MS = 20000 }; /* far beyond any healthy wait, even under ASan */

/* ---- the receiving side ---- */

typedef struct msg {
  struct msg *next;
  int dest, sender, kind;
  int64_t value;
  ck_batch_t *batch;
  ck_net_link_t *link; /* NULL when the callback consumed it already */
} msg_t;

typedef struct inbox {
  ck_mutex_t mu;
  ck_cond_t cv;
  msg_t *head, *tail;
  size_t queued, delivered;
  ck_net_t *net;      /* set under mu once started; for auto_consume */
  bool auto_consume;  /* the callback returns the credit itself, at once */
} inbox_t;

static void inbox_init(inbox_t *in, bool auto_consume) {
  memset(in, 0, sizeof *in);
  ck_mutex_init(&in->mu);
  ck_cond_init(&in->cv);
  in->auto_consume = auto_consume;
}

static void msg_free(msg_t *m) {
  ck_batch_free(m->batch);
  ck_free(m);
}

static void inbox_fini(inbox_t *in) {
  while (in->head) {
    msg_t *m = in->head;
    in->head = m->next;
    msg_free(m);
  }
  ck_cond_fini(&in->cv);
  ck_mutex_fini(&in->mu);
}

static void on_deliver(void *ctx, int dest_task, int sender, int kind, int64_t value,
                       ck_batch_t *batch, ck_net_link_t *link) {
  inbox_t *in = ctx;
  msg_t *m = ck_calloc(1, sizeof *m);
  *m = (msg_t){NULL, dest_task, sender, kind, value, batch, link};
  ck_mutex_lock(&in->mu);
  if (in->auto_consume) {
    ck_net_consumed(in->net, link); /* allowed from the callback: it never blocks */
    m->link = NULL;
  }
  if (in->tail) in->tail->next = m;
  else in->head = m;
  in->tail = m;
  in->queued++;
  in->delivered++;
  ck_cond_broadcast(&in->cv);
  ck_mutex_unlock(&in->mu);
}

/* The next message, or NULL when none came by the deadline. */
static msg_t *inbox_pop(inbox_t *in, int64_t deadline) {
  ck_mutex_lock(&in->mu);
  while (!in->head)
    if (!ck_cond_wait_until(&in->cv, &in->mu, deadline) && !in->head) break;
  msg_t *m = in->head;
  if (m) {
    in->head = m->next;
    if (!in->head) in->tail = NULL;
    in->queued--;
  }
  ck_mutex_unlock(&in->mu);
  return m;
}

static size_t inbox_wait_delivered(inbox_t *in, size_t n, int64_t deadline) {
  ck_mutex_lock(&in->mu);
  while (in->delivered < n)
    if (!ck_cond_wait_until(&in->cv, &in->mu, deadline)) break;
  size_t got = in->delivered;
  ck_mutex_unlock(&in->mu);
  return got;
}

static size_t inbox_delivered(inbox_t *in) {
  ck_mutex_lock(&in->mu);
  size_t n = in->delivered;
  ck_mutex_unlock(&in->mu);
  return n;
}

static ck_net_t *start_net(uint64_t session, int credits, inbox_t *in) {
  ck_net_t *net = NULL;
  ck_error_t err = {0};
  int rc = ck_net_start("127.0.0.1", 0, session, credits, on_deliver, in, &net, &err);
  if (rc) fail_msg("ck_net_start: %s", err.message);
  assert_true(ck_net_port(net) > 0);
  ck_mutex_lock(&in->mu);
  in->net = net;
  ck_mutex_unlock(&in->mu);
  return net;
}

/* ---- batches ---- */

static ck_batch_t *make_batch(int seed, size_t rows) {
  ck_type_t t[] = {CK_TYPE(CK_T_INT64), CK_TYPE(CK_T_STRING), {CK_T_DECIMAL, 30, 4},
                   CK_TYPE(CK_T_FLOAT64), CK_TYPE(CK_T_BOOL), CK_TYPE(CK_T_TIMESTAMP)};
  ck_batch_t *batch = ck_batch_new(6, t, rows);
  for (size_t i = 0; i < rows; i++) {
    int64_t k = seed * 100000 + (int64_t)i;
    ck_col_append_i64(&batch->cols[0], k);
    char s[64];
    int n = snprintf(s, sizeof s, "row %lld · ключ %zu", (long long)k, i % 5);
    if (i % 9 == 4) ck_col_append_null(&batch->cols[1]);
    else ck_col_append_str(&batch->cols[1], s, (size_t)n);
    ck_col_append_dec(&batch->cols[2], (ck_i128)k * ck_pow10_i128(20) + 1);
    ck_col_append_f64(&batch->cols[3], (double)k / 3.0);
    if (i % 4 == 1) ck_col_append_null(&batch->cols[4]);
    else ck_col_append_bool(&batch->cols[4], i & 1);
    ck_col_append_i64(&batch->cols[5], 1700000000000LL + k);
  }
  ck_batch_seal(batch);
  for (size_t i = 0; i < rows; i++)
    if (i % 3 == 2) ck_batch_set_kind(batch, i, CK_ROW_UPDATE_AFTER);
  return batch;
}

static void assert_batches_equal(const ck_batch_t *want, const ck_batch_t *got) {
  assert_non_null(got);
  assert_int_equal(got->ncols, want->ncols);
  assert_int_equal(got->nrows, want->nrows);
  for (int c = 0; c < want->ncols; c++) {
    const ck_col_t *a = &want->cols[c], *b = &got->cols[c];
    assert_true(ck_type_eq(a->type, b->type));
    for (size_t i = 0; i < want->nrows; i++) {
      assert_int_equal(ck_col_valid(b, i), ck_col_valid(a, i));
      if (!ck_col_valid(a, i)) continue;
      if (a->type.id == CK_T_STRING) {
        size_t la, lb;
        const char *sa = ck_col_str(a, i, &la), *sb = ck_col_str(b, i, &lb);
        assert_int_equal(lb, la);
        assert_memory_equal(sb, sa, la);
      } else {
        size_t w = ck_type_width(a->type);
        assert_memory_equal((const char *)b->values + i * w, (const char *)a->values + i * w, w);
      }
    }
  }
  for (size_t i = 0; i < want->nrows; i++)
    assert_int_equal(ck_batch_kind(got, i), ck_batch_kind(want, i));
}

static int send_ctl(ck_net_t *net, int port, int sender_task, int dest, int kind, int64_t v,
                    const atomic_int *cancel, ck_error_t *err) {
  return ck_net_send(net, "127.0.0.1", port, sender_task, sender_task % 4, dest, kind, v, NULL,
                     cancel, err);
}

/* ---- every kind, in order ---- */

static void test_net_every_kind_in_order(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  inbox_t a_in, b_in;
  inbox_init(&a_in, false);
  inbox_init(&b_in, false);
  ck_net_t *a = start_net(42, 8, &a_in), *b = start_net(42, 8, &b_in);
  int port = ck_net_port(b);
  ck_error_t err = {0};
  struct {
    int kind;
    int64_t value;
    int seed; /* batches: make_batch(seed, rows) */
    size_t rows;
  } plan[] = {
      {CK_NET_BATCH, 0, 1, 100},        {CK_NET_WATERMARK, 1700000000123LL, 0, 0},
      {CK_NET_IDLE, 0, 0, 0},           {CK_NET_BATCH, 0, 2, 1},
      {CK_NET_BARRIER, 7, 0, 0},        {CK_NET_BATCH, 0, 3, 0},
      {CK_NET_WATERMARK, INT64_MIN, 0, 0}, {CK_NET_END, 0, 0, 0},
  };
  const size_t n = CK_ARRAY_LEN(plan);
  for (size_t i = 0; i < n; i++) {
    ck_batch_t *batch = plan[i].kind == CK_NET_BATCH ? make_batch(plan[i].seed, plan[i].rows)
                                                     : NULL;
    int rc = ck_net_send(a, "127.0.0.1", port, 5, 1, 9, plan[i].kind, plan[i].value, batch, NULL,
                         &err);
    if (rc) fail_msg("send %zu: %s", i, err.message);
  }
  for (size_t i = 0; i < n; i++) {
    msg_t *m = inbox_pop(&b_in, ck_mono_ms() + WAIT_LIMIT_MS);
    if (!m) fail_msg("message %zu of %zu did not arrive", i + 1, n);
    assert_int_equal(m->kind, plan[i].kind);
    assert_int_equal(m->dest, 9);
    assert_int_equal(m->sender, 1);
    assert_non_null(m->link);
    if (plan[i].kind == CK_NET_BATCH) {
      ck_batch_t *want = make_batch(plan[i].seed, plan[i].rows);
      assert_batches_equal(want, m->batch);
      ck_batch_free(want);
    } else {
      assert_null(m->batch);
      assert_true(m->value == plan[i].value);
    }
    ck_net_consumed(b, m->link);
    msg_free(m);
  }
  /* the other direction works too, on its own connection */
  assert_int_equal(send_ctl(b, ck_net_port(a), 3, 4, CK_NET_BARRIER, 99, NULL, &err), 0);
  msg_t *m = inbox_pop(&a_in, ck_mono_ms() + WAIT_LIMIT_MS);
  assert_non_null(m);
  assert_int_equal(m->kind, CK_NET_BARRIER);
  assert_int_equal(m->value, 99);
  assert_int_equal(m->dest, 4);
  msg_free(m);
  assert_int_equal(inbox_delivered(&a_in), 1);
  ck_net_free(a);
  ck_net_free(b);
  inbox_fini(&a_in);
  inbox_fini(&b_in);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* ---- backpressure and cancel: a sender thread with a progress counter ---- */

typedef struct sender {
  ck_net_t *net;
  int port, count, sender_task, dest;
  atomic_int cancel;
  ck_mutex_t mu;
  ck_cond_t cv;
  int progress; /* sends that returned 0 */
  int rc;       /* the first failing send's code */
  bool done;
  ck_error_t err;
} sender_t;

static void *sender_main(void *arg) {
  sender_t *s = arg;
  int rc = 0;
  for (int i = 1; i <= s->count && rc == 0; i++) {
    ck_error_t err = {0};
    rc = send_ctl(s->net, s->port, s->sender_task, s->dest, CK_NET_WATERMARK, i, &s->cancel,
                  &err);
    ck_mutex_lock(&s->mu);
    if (rc == 0) s->progress++;
    else s->err = err;
    s->rc = rc;
    ck_cond_broadcast(&s->cv);
    ck_mutex_unlock(&s->mu);
  }
  ck_mutex_lock(&s->mu);
  s->done = true;
  ck_cond_broadcast(&s->cv);
  ck_mutex_unlock(&s->mu);
  return NULL;
}

static void sender_init(sender_t *s, ck_net_t *net, int port, int count) {
  memset(s, 0, sizeof *s);
  s->net = net;
  s->port = port;
  s->count = count;
  s->sender_task = 2;
  s->dest = 6;
  atomic_init(&s->cancel, 0);
  ck_mutex_init(&s->mu);
  ck_cond_init(&s->cv);
}

/* Waits until progress reaches n (or the sender finished); returns progress. */
static int sender_wait_progress(sender_t *s, int n, int64_t deadline) {
  ck_mutex_lock(&s->mu);
  while (s->progress < n && !s->done)
    if (!ck_cond_wait_until(&s->cv, &s->mu, deadline)) break;
  int p = s->progress;
  ck_mutex_unlock(&s->mu);
  return p;
}

static bool sender_wait_done(sender_t *s, int64_t deadline) {
  ck_mutex_lock(&s->mu);
  while (!s->done)
    if (!ck_cond_wait_until(&s->cv, &s->mu, deadline)) break;
  bool done = s->done;
  ck_mutex_unlock(&s->mu);
  return done;
}

static void test_net_credit_backpressure(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  inbox_t a_in, b_in;
  inbox_init(&a_in, false);
  inbox_init(&b_in, false);
  ck_net_t *a = start_net(7, 8, &a_in);
  ck_net_t *b = start_net(7, 2, &b_in); /* the receiver grants 2 credits per link */
  sender_t s;
  sender_init(&s, a, ck_net_port(b), 3);
  ck_thread_t th = {0};
  assert_int_equal(ck_thread_start(&th, "sender", sender_main, &s), 0);

  /* two go through; the receiver holds both and consumes none */
  assert_int_equal(inbox_wait_delivered(&b_in, 2, ck_mono_ms() + WAIT_LIMIT_MS), 2);
  assert_int_equal(sender_wait_progress(&s, 2, ck_mono_ms() + WAIT_LIMIT_MS), 2);
  /* the third send is blocked on credit: it neither returns nor arrives */
  assert_int_equal(sender_wait_progress(&s, 3, ck_mono_ms() + 300), 2);
  assert_int_equal(inbox_wait_delivered(&b_in, 3, ck_mono_ms() + 100), 2);
  assert_int_equal(s.rc, 0);

  /* consuming one returns one credit: the third goes through */
  msg_t *m = inbox_pop(&b_in, ck_mono_ms() + WAIT_LIMIT_MS);
  assert_non_null(m);
  assert_int_equal(m->value, 1);
  ck_net_consumed(b, m->link);
  msg_free(m);
  assert_int_equal(sender_wait_progress(&s, 3, ck_mono_ms() + WAIT_LIMIT_MS), 3);
  assert_int_equal(inbox_wait_delivered(&b_in, 3, ck_mono_ms() + WAIT_LIMIT_MS), 3);
  for (int64_t v = 2; v <= 3; v++) {
    m = inbox_pop(&b_in, ck_mono_ms() + WAIT_LIMIT_MS);
    assert_non_null(m);
    assert_int_equal(m->value, v);
    assert_int_equal(m->dest, 6);
    ck_net_consumed(b, m->link);
    msg_free(m);
  }
  assert_true(sender_wait_done(&s, ck_mono_ms() + WAIT_LIMIT_MS));
  ck_thread_join(&th);
  assert_int_equal(s.rc, 0);
  ck_mutex_fini(&s.mu);
  ck_cond_fini(&s.cv);
  ck_net_free(a);
  ck_net_free(b);
  inbox_fini(&a_in);
  inbox_fini(&b_in);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void test_net_cancel_blocked_sender(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  inbox_t a_in, b_in;
  inbox_init(&a_in, false);
  inbox_init(&b_in, false);
  ck_net_t *a = start_net(8, 8, &a_in);
  ck_net_t *b = start_net(8, 1, &b_in);
  sender_t s;
  sender_init(&s, a, ck_net_port(b), 2);
  ck_thread_t th = {0};
  assert_int_equal(ck_thread_start(&th, "sender", sender_main, &s), 0);
  assert_int_equal(inbox_wait_delivered(&b_in, 1, ck_mono_ms() + WAIT_LIMIT_MS), 1);
  assert_int_equal(sender_wait_progress(&s, 1, ck_mono_ms() + WAIT_LIMIT_MS), 1);
  assert_int_equal(sender_wait_progress(&s, 2, ck_mono_ms() + 200), 1); /* blocked */
  int64_t t0 = ck_mono_ms();
  atomic_store(&s.cancel, 1);
  assert_true(sender_wait_done(&s, ck_mono_ms() + WAIT_LIMIT_MS));
  int64_t took = ck_mono_ms() - t0;
  ck_thread_join(&th);
  if (s.rc != CK_ECANCELLED) fail_msg("rc %d: %s", s.rc, s.err.message);
  assert_int_equal(s.progress, 1);
  assert_true(took < 2000); /* polled every 100 ms, not at some far timeout */
  /* a cancel while waiting for credit wrote nothing: the link still works */
  msg_t *m = inbox_pop(&b_in, ck_mono_ms() + WAIT_LIMIT_MS);
  assert_non_null(m);
  assert_int_equal(m->value, 1);
  ck_net_consumed(b, m->link);
  msg_free(m);
  ck_error_t err = {0};
  assert_int_equal(send_ctl(a, ck_net_port(b), 2, 6, CK_NET_END, 77, NULL, &err), 0);
  m = inbox_pop(&b_in, ck_mono_ms() + WAIT_LIMIT_MS);
  assert_non_null(m);
  assert_int_equal(m->kind, CK_NET_END);
  assert_int_equal(m->value, 77);
  msg_free(m);
  assert_int_equal(inbox_delivered(&b_in), 2); /* the cancelled one never arrived */
  ck_mutex_fini(&s.mu);
  ck_cond_fini(&s.cv);
  ck_net_free(a);
  ck_net_free(b);
  inbox_fini(&a_in);
  inbox_fini(&b_in);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* ---- an oversized batch is split, never lost ---- */

static void test_net_oversized_batch_is_split(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  inbox_t a_in, b_in;
  inbox_init(&a_in, false);
  inbox_init(&b_in, true); /* the callback consumes: the sender is never stuck on credit */
  ck_net_t *a = start_net(9, 4, &a_in), *b = start_net(9, 4, &b_in);
  enum { ROWS = 6000, WIDTH = 1000 };
  ck_type_t t[] = {CK_TYPE(CK_T_INT64), CK_TYPE(CK_T_STRING)};
  ck_batch_t *batch = ck_batch_new(2, t, ROWS);
  char text[WIDTH];
  for (int i = 0; i < ROWS; i++) {
    for (int k = 0; k < WIDTH; k++) text[k] = (char)('a' + (i + k) % 26);
    ck_col_append_i64(&batch->cols[0], i);
    ck_col_append_str(&batch->cols[1], text, (size_t)(i % 2 ? WIDTH : WIDTH / 2));
    if (i % 1000 == 999) ck_col_set_null(&batch->cols[1], (size_t)i);
  }
  ck_batch_seal(batch); /* ≈ 4.5 MiB of strings */
  ck_error_t err = {0};
  int port = ck_net_port(b);
  int rc = ck_net_send(a, "127.0.0.1", port, 1, 0, 2, CK_NET_BATCH, 0, batch, NULL, &err);
  if (rc) fail_msg("send: %s", err.message);
  assert_int_equal(send_ctl(a, port, 1, 2, CK_NET_END, 0, NULL, &err), 0);
  int next = 0, frames = 0;
  for (;;) {
    msg_t *m = inbox_pop(&b_in, ck_mono_ms() + WAIT_LIMIT_MS);
    if (!m) fail_msg("stalled after %d rows in %d frames", next, frames);
    if (m->kind == CK_NET_END) {
      msg_free(m);
      break;
    }
    assert_int_equal(m->kind, CK_NET_BATCH);
    assert_true(m->batch->nrows >= 1);
    frames++;
    for (size_t i = 0; i < m->batch->nrows; i++, next++) {
      assert_int_equal(ck_col_i64(&m->batch->cols[0], i), next); /* once, in order */
      if (next % 1000 == 999) {
        assert_false(ck_col_valid(&m->batch->cols[1], i));
        continue;
      }
      size_t n;
      const char *s = ck_col_str(&m->batch->cols[1], i, &n);
      assert_int_equal(n, next % 2 ? WIDTH : WIDTH / 2);
      for (size_t k = 0; k < n; k++)
        if (s[k] != (char)('a' + ((size_t)next + k) % 26)) fail_msg("row %d byte %zu", next, k);
    }
    msg_free(m);
  }
  assert_int_equal(next, ROWS);
  assert_true(frames >= 5); /* ≈ 4.5 MiB in frames of at most 1 MiB */
  ck_net_free(a);
  ck_net_free(b);
  inbox_fini(&a_in);
  inbox_fini(&b_in);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* ---- many messages, two senders, two receiving tasks, random consumer pacing ---- */

enum { MANY_PER_SENDER = 10000, DEST0 = 10 };

typedef struct many_sender {
  ck_net_t *net;
  int port, task;
  int rc;
  ck_error_t err;
} many_sender_t;

static void *many_sender_main(void *arg) {
  many_sender_t *s = arg;
  int64_t seq[2] = {0, 0}; /* per link */
  for (int i = 0; i < MANY_PER_SENDER && s->rc == 0; i++) {
    int d = (i * 7 + s->task) % 3 == 0 ? 1 : 0; /* an uneven mix of the two links */
    ck_type_t t[] = {CK_TYPE(CK_T_INT64), CK_TYPE(CK_T_INT32)};
    ck_batch_t *batch = ck_batch_new(2, t, 4);
    size_t rows = 1 + (size_t)(i % 3);
    for (size_t r = 0; r < rows; r++) {
      ck_col_append_i64(&batch->cols[0], seq[d]++);
      ck_col_append_i32(&batch->cols[1], s->task);
    }
    ck_batch_seal(batch);
    s->rc = ck_net_send(s->net, "127.0.0.1", s->port, s->task, s->task, DEST0 + d,
                        CK_NET_BATCH, 0, batch, NULL, &s->err);
  }
  for (int d = 0; d < 2 && s->rc == 0; d++)
    s->rc = send_ctl(s->net, s->port, s->task, DEST0 + d, CK_NET_END, seq[d], NULL, &s->err);
  return NULL;
}

static uint64_t rng = 0x243f6a8885a308d3ULL;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static void test_net_many_messages_nothing_lost(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  inbox_t a_in, b_in;
  inbox_init(&a_in, false);
  inbox_init(&b_in, false);
  ck_net_t *a = start_net(10, 8, &a_in), *b = start_net(10, 8, &b_in);
  many_sender_t senders[2];
  ck_thread_t th[2] = {{0}};
  for (int i = 0; i < 2; i++) {
    senders[i] = (many_sender_t){a, ck_net_port(b), i, 0, {0}};
    assert_int_equal(ck_thread_start(&th[i], "many", many_sender_main, &senders[i]), 0);
  }
  /* the test thread consumes: sometimes at once, sometimes holding several messages back,
   * sometimes pausing, so credits run out and come back in every pattern */
  int64_t next[2][2] = {{0, 0}, {0, 0}}; /* [sender task][dest - DEST0] */
  int ends = 0;
  size_t batches = 0;
  msg_t *held[8];
  int nheld = 0;
  while (ends < 4) {
    msg_t *m = inbox_pop(&b_in, ck_mono_ms() + WAIT_LIMIT_MS);
    if (!m) fail_msg("stalled after %zu batches", batches);
    int d = m->dest - DEST0;
    assert_true(d == 0 || d == 1);
    int s = m->sender;
    assert_true(s == 0 || s == 1);
    if (m->kind == CK_NET_END) {
      assert_int_equal(m->value, next[s][d]); /* every row before the end arrived */
      ends++;
    } else {
      assert_int_equal(m->kind, CK_NET_BATCH);
      for (size_t r = 0; r < m->batch->nrows; r++) {
        int64_t got = ck_col_i64(&m->batch->cols[0], r);
        if (got != next[s][d])
          fail_msg("link %d→%d: row %lld where %lld was next", s, DEST0 + d, (long long)got,
                   (long long)next[s][d]);
        next[s][d]++;
        assert_int_equal(ck_col_i32(&m->batch->cols[1], r), s);
      }
      batches++;
    }
    held[nheld++] = m;
    uint64_t r = rnd();
    if (nheld == (int)CK_ARRAY_LEN(held) || r % 4 != 0 || m->kind == CK_NET_END) {
      for (int i = 0; i < nheld; i++) {
        ck_net_consumed(b, held[i]->link);
        msg_free(held[i]);
      }
      nheld = 0;
    }
    if (r % 97 == 0) ck_sleep_ms(1); /* pacing, not synchronisation */
  }
  for (int i = 0; i < nheld; i++) {
    ck_net_consumed(b, held[i]->link);
    msg_free(held[i]);
  }
  for (int i = 0; i < 2; i++) {
    ck_thread_join(&th[i]);
    if (senders[i].rc) fail_msg("sender %d: %s", i, senders[i].err.message);
  }
  assert_int_equal(batches, 2 * MANY_PER_SENDER);
  assert_int_equal(inbox_delivered(&b_in), 2 * MANY_PER_SENDER + 4);
  ck_net_free(a);
  ck_net_free(b);
  inbox_fini(&a_in);
  inbox_fini(&b_in);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* ---- sessions ---- */

static int raw_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  return fd;
}

static void raw_send_hdr(int fd, uint64_t session, int kind, int64_t value) {
  ck_net_hdr_t h = {CK_NET_MAGIC, CK_NET_VERSION, (uint8_t)kind, 0, session, 1, 0, 2, 0, value};
  uint8_t raw[CK_NET_HDR_SIZE];
  ck_net_hdr_encode(&h, raw);
  assert_int_equal(send(fd, raw, sizeof raw, MSG_NOSIGNAL), (ssize_t)sizeof raw);
}

/* Reads n bytes (0 when the peer closed first, -1 on timeout or error). */
static ssize_t raw_read(int fd, void *p, size_t n, int64_t deadline) {
  size_t got = 0;
  while (got < n) {
    struct pollfd pfd = {fd, POLLIN, 0};
    int left = (int)(deadline - ck_mono_ms());
    if (left <= 0 || poll(&pfd, 1, left) <= 0) return -1;
    ssize_t r = recv(fd, (char *)p + got, n - got, 0);
    if (r == 0) return 0;
    if (r < 0) return errno == ECONNRESET ? 0 : -1;
    got += (size_t)r;
  }
  return (ssize_t)got;
}

static void test_net_wrong_session_refused(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  FILE *log = tmpfile();
  assert_non_null(log);
  ck_log_set_fd(fileno(log));
  inbox_t a_in, b_in;
  inbox_init(&a_in, false);
  inbox_init(&b_in, false);
  ck_net_t *a = start_net(0x1111, 8, &a_in), *b = start_net(0x2222, 8, &b_in);
  int port = ck_net_port(b);

  /* a whole process of another deployment: its connection is refused, with the reason */
  ck_error_t err = {0};
  int rc = send_ctl(a, port, 1, 2, CK_NET_WATERMARK, 5, NULL, &err);
  assert_int_equal(rc, CK_EPROTO);
  assert_non_null(strstr(err.message, "0000000000002222"));
  assert_non_null(strstr(err.message, "refused"));

  /* a raw peer: a good handshake and frame are delivered... */
  int fd = raw_connect(port);
  raw_send_hdr(fd, 0x2222, CK_NET_HELLO, 0);
  uint8_t raw[CK_NET_HDR_SIZE];
  assert_int_equal(raw_read(fd, raw, sizeof raw, ck_mono_ms() + WAIT_LIMIT_MS), CK_NET_HDR_SIZE);
  ck_net_hdr_t h;
  ck_net_hdr_decode(raw, &h);
  assert_int_equal(h.kind, CK_NET_HELLO_OK);
  assert_int_equal(h.value, 8);
  raw_send_hdr(fd, 0x2222, CK_NET_WATERMARK, 7);
  assert_int_equal(inbox_wait_delivered(&b_in, 1, ck_mono_ms() + WAIT_LIMIT_MS), 1);
  /* ...a frame of another session on the same connection is dropped and the connection
   * closed: the raw peer sees the end of the stream (a credit may come before it) */
  raw_send_hdr(fd, 0x3333, CK_NET_WATERMARK, 8);
  ssize_t r;
  while ((r = raw_read(fd, raw, sizeof raw, ck_mono_ms() + WAIT_LIMIT_MS)) > 0) {
  }
  assert_int_equal(r, 0);
  close(fd);
  msg_t *m = inbox_pop(&b_in, ck_mono_ms() + WAIT_LIMIT_MS);
  assert_non_null(m);
  assert_int_equal(m->value, 7);
  ck_net_consumed(b, m->link); /* its connection is gone: a harmless no-op */
  msg_free(m);

  /* a raw HELLO of another session gets REFUSE, then the end of the stream */
  fd = raw_connect(port);
  raw_send_hdr(fd, 0x4444, CK_NET_HELLO, 0);
  assert_int_equal(raw_read(fd, raw, sizeof raw, ck_mono_ms() + WAIT_LIMIT_MS), CK_NET_HDR_SIZE);
  ck_net_hdr_decode(raw, &h);
  assert_int_equal(h.kind, CK_NET_REFUSE);
  assert_int_equal(raw_read(fd, raw, 1, ck_mono_ms() + WAIT_LIMIT_MS), 0);
  close(fd);

  /* garbage instead of a header: closed too */
  fd = raw_connect(port);
  char junk[CK_NET_HDR_SIZE];
  memset(junk, 'G', sizeof junk);
  assert_int_equal(send(fd, junk, sizeof junk, MSG_NOSIGNAL), (ssize_t)sizeof junk);
  assert_int_equal(raw_read(fd, raw, 1, ck_mono_ms() + WAIT_LIMIT_MS), 0);
  close(fd);

  assert_int_equal(inbox_delivered(&b_in), 1); /* only the good frame */
  ck_net_free(a);
  ck_net_free(b);
  inbox_fini(&a_in);
  inbox_fini(&b_in);
  ck_log_set_fd(-1);
  /* each rejection is in the log, naming what was wrong */
  char text[8192] = {0};
  rewind(log);
  size_t n = fread(text, 1, sizeof text - 1, log);
  fclose(log);
  assert_true(n > 0);
  if (!strstr(text, "refused a peer of deployment session 0000000000001111"))
    fail_msg("log: %s", text);
  assert_non_null(strstr(text, "dropped a frame of deployment session 0000000000003333"));
  assert_non_null(strstr(text, "refused a peer of deployment session 0000000000004444"));
  assert_non_null(strstr(text, "bad magic"));
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* ---- peers that are not there ---- */

static void test_net_unreachable_peer(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  /* a port that is bound but not listening refuses connections (and stays ours meanwhile) */
  int hold = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(hold, (struct sockaddr *)&sa, sizeof sa), 0);
  socklen_t salen = sizeof sa;
  getsockname(hold, (struct sockaddr *)&sa, &salen);
  int port = ntohs(sa.sin_port);

  inbox_t a_in;
  inbox_init(&a_in, false);
  ck_net_t *a = start_net(11, 8, &a_in);
  ck_net_set_connect_timeout(a, 300);
  ck_error_t err = {0};
  int64_t t0 = ck_mono_ms();
  int rc = ck_net_send(a, "127.0.0.1", port, 0, 0, 1, CK_NET_BATCH, 0, make_batch(1, 10), NULL,
                       &err);
  int64_t took = ck_mono_ms() - t0;
  assert_int_equal(rc, CK_ECONNECT);
  char where[64];
  snprintf(where, sizeof where, "127.0.0.1:%d", port);
  if (!strstr(err.message, where)) fail_msg("message: %s", err.message);
  assert_true(err.retriable);
  assert_true(took >= 250);  /* it retried for the whole timeout... */
  assert_true(took < 4000);  /* ...and not for the default one */
  ck_net_free(a);
  inbox_fini(&a_in);
  close(hold);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void test_net_peer_gone(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  inbox_t a_in, b_in;
  inbox_init(&a_in, false);
  inbox_init(&b_in, false);
  ck_net_t *a = start_net(12, 8, &a_in), *b = start_net(12, 2, &b_in);
  int port = ck_net_port(b);
  ck_error_t err = {0};
  assert_int_equal(send_ctl(a, port, 0, 1, CK_NET_WATERMARK, 1, NULL, &err), 0);
  assert_int_equal(inbox_wait_delivered(&b_in, 1, ck_mono_ms() + WAIT_LIMIT_MS), 1);
  ck_net_free(b); /* the receiving process goes away */
  /* the sender finds out — at the latest when its credits run out — and never hangs */
  int rc = 0, sends = 0;
  int64_t deadline = ck_mono_ms() + WAIT_LIMIT_MS;
  while (rc == 0 && ck_mono_ms() < deadline) {
    err = (ck_error_t){0};
    rc = send_ctl(a, port, 0, 1, CK_NET_WATERMARK, 2 + sends, NULL, &err);
    sends++;
  }
  assert_int_equal(rc, CK_ECONNECT);
  assert_true(sends <= 2);
  /* and it stays failed: a broken connection is not silently reopened */
  err = (ck_error_t){0};
  assert_int_equal(send_ctl(a, port, 0, 1, CK_NET_END, 0, NULL, &err), CK_ECONNECT);
  assert_non_null(strstr(err.message, "broke"));
  ck_net_free(a);
  inbox_fini(&a_in);
  inbox_fini(&b_in);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void test_net_bad_arguments(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  inbox_t in;
  inbox_init(&in, false);
  ck_net_t *net = NULL;
  ck_error_t err = {0};
  assert_int_equal(ck_net_start("127.0.0.1", 0, 1, 0, on_deliver, &in, &net, &err), CK_EINVAL);
  assert_null(net);
  net = start_net(13, 8, &in);
  /* a control kind with a batch, a batch kind without one: refused, the batch freed */
  err = (ck_error_t){0};
  assert_int_equal(ck_net_send(net, "127.0.0.1", ck_net_port(net), 0, 0, 1, CK_NET_END, 0,
                               make_batch(1, 3), NULL, &err),
                   CK_EINVAL);
  err = (ck_error_t){0};
  assert_int_equal(ck_net_send(net, "127.0.0.1", ck_net_port(net), 0, 0, 1, CK_NET_BATCH, 0,
                               NULL, NULL, &err),
                   CK_EINVAL);
  /* a process may send to itself */
  err = (ck_error_t){0};
  assert_int_equal(send_ctl(net, ck_net_port(net), 0, 1, CK_NET_IDLE, 0, NULL, &err), 0);
  msg_t *m = inbox_pop(&in, ck_mono_ms() + WAIT_LIMIT_MS);
  assert_non_null(m);
  assert_int_equal(m->kind, CK_NET_IDLE);
  msg_free(m);
  ck_net_free(net);
  inbox_fini(&in);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_net_every_kind_in_order),
      cmocka_unit_test(test_net_credit_backpressure),
      cmocka_unit_test(test_net_cancel_blocked_sender),
      cmocka_unit_test(test_net_oversized_batch_is_split),
      cmocka_unit_test(test_net_many_messages_nothing_lost),
      cmocka_unit_test(test_net_wrong_session_refused),
      cmocka_unit_test(test_net_unreachable_peer),
      cmocka_unit_test(test_net_peer_gone),
      cmocka_unit_test(test_net_bad_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
