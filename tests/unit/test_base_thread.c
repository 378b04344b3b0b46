/*
 * DESIGN: unit tests for src/base/thread — mutex, condition variable with monotonic
 * deadlines, and named threads.
 *
 * Every wait in these tests is on a condition with a deadline, never a sleep: a broken wakeup
 * fails the test at its deadline instead of hanging it. Threads: the main thread plus one
 * helper per test (producer, signaller or named worker), joined before the test returns.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "base/thread.h"
#include "base/time.h"

enum { WAIT_LIMIT_MS = 10000 }; /* far beyond any healthy wait, even under ASan */

/* ---- producer/consumer over a bounded ring ---- */

enum { RING = 4, ITEMS = 20000 };

typedef struct queue {
  ck_mutex_t mu;
  ck_cond_t not_empty, not_full;
  uint32_t ring[RING];
  size_t head, len;
  bool timed_out; /* producer gave up waiting for room */
} queue_t;

static void *producer(void *arg) {
  queue_t *q = arg;
  for (uint32_t i = 1; i <= ITEMS; i++) {
    ck_mutex_lock(&q->mu);
    int64_t deadline = ck_mono_ms() + WAIT_LIMIT_MS;
    while (q->len == RING) {
      if (!ck_cond_wait_until(&q->not_full, &q->mu, deadline) && q->len == RING) {
        q->timed_out = true;
        ck_cond_signal(&q->not_empty);
        ck_mutex_unlock(&q->mu);
        return NULL;
      }
    }
    q->ring[(q->head + q->len) % RING] = i;
    q->len++;
    ck_cond_signal(&q->not_empty);
    ck_mutex_unlock(&q->mu);
  }
  return NULL;
}

static void test_thread_producer_consumer(void **state) {
  queue_t q;
  memset(&q, 0, sizeof q);
  ck_mutex_init(&q.mu);
  ck_cond_init(&q.not_empty);
  ck_cond_init(&q.not_full);
  ck_thread_t th = {0};
  assert_int_equal(ck_thread_start(&th, "producer", producer, &q), 0);
  uint64_t sum = 0;
  uint32_t expect = 1;
  bool stalled = false;
  while (expect <= ITEMS && !stalled) {
    ck_mutex_lock(&q.mu);
    int64_t deadline = ck_mono_ms() + WAIT_LIMIT_MS;
    while (q.len == 0 && !q.timed_out) {
      if (!ck_cond_wait_until(&q.not_empty, &q.mu, deadline) && q.len == 0) {
        stalled = true;
        break;
      }
    }
    while (q.len > 0) { /* take everything available, in order */
      uint32_t v = q.ring[q.head];
      q.head = (q.head + 1) % RING;
      q.len--;
      if (v != expect) {
        ck_mutex_unlock(&q.mu);
        fail_msg("item out of order: got %u, want %u", v, expect);
      }
      expect++;
      sum += v;
    }
    if (q.timed_out) stalled = true;
    ck_cond_signal(&q.not_full);
    ck_mutex_unlock(&q.mu);
  }
  ck_thread_join(&th);
  assert_false(stalled);
  assert_false(q.timed_out);
  assert_int_equal(expect, ITEMS + 1);
  assert_int_equal(sum, (uint64_t)ITEMS * (ITEMS + 1) / 2);
  ck_cond_fini(&q.not_empty);
  ck_cond_fini(&q.not_full);
  ck_mutex_fini(&q.mu);
}

/* ---- mutual exclusion ---- */

typedef struct counter {
  ck_mutex_t mu;
  long value;
} counter_t;

enum { INCREMENTS = 200000 };

static void *incrementer(void *arg) {
  counter_t *c = arg;
  for (int i = 0; i < INCREMENTS; i++) {
    ck_mutex_lock(&c->mu);
    long v = c->value; /* read-modify-write that loses updates without the lock */
    c->value = v + 1;
    ck_mutex_unlock(&c->mu);
  }
  return NULL;
}

static void test_thread_mutex_excludes(void **state) {
  counter_t c = {.value = 0};
  ck_mutex_init(&c.mu);
  ck_thread_t a = {0}, b = {0};
  assert_int_equal(ck_thread_start(&a, "inc-a", incrementer, &c), 0);
  assert_int_equal(ck_thread_start(&b, "inc-b", incrementer, &c), 0);
  ck_thread_join(&a);
  ck_thread_join(&b);
  assert_int_equal(c.value, 2L * INCREMENTS);
  ck_mutex_fini(&c.mu);
}

/* ---- ck_cond_wait_until ---- */

static void test_thread_wait_until_times_out_near_deadline(void **state) {
  ck_mutex_t mu;
  ck_cond_t cv;
  ck_mutex_init(&mu);
  ck_cond_init(&cv);
  ck_mutex_lock(&mu);
  int64_t start_ns = ck_mono_ns();
  int64_t deadline = ck_mono_ms() + 200;
  bool r;
  int wakeups = 0;
  /* nobody signals: any true return is a spurious wakeup, which must not outlive the deadline */
  while ((r = ck_cond_wait_until(&cv, &mu, deadline)) && ck_mono_ms() < deadline + 2000) wakeups++;
  int64_t waited_ms = (ck_mono_ns() - start_ns) / 1000000;
  ck_mutex_unlock(&mu);
  assert_false(r);
  assert_true(wakeups < 100);
  /* deadline is in whole ms of the monotonic clock: at most 1 ms early */
  assert_true(waited_ms >= 199);
  assert_true(waited_ms < 200 + 1500);
  assert_true(ck_mono_ms() >= deadline);
  ck_cond_fini(&cv);
  ck_mutex_fini(&mu);
}

static void test_thread_wait_until_past_deadline_returns_false_at_once(void **state) {
  ck_mutex_t mu;
  ck_cond_t cv;
  ck_mutex_init(&mu);
  ck_cond_init(&cv);
  ck_mutex_lock(&mu);
  int64_t t0 = ck_mono_ns();
  assert_false(ck_cond_wait_until(&cv, &mu, ck_mono_ms() - 1000));
  assert_false(ck_cond_wait_until(&cv, &mu, 0));
  assert_true(ck_mono_ns() - t0 < 1000 * 1000000LL);
  ck_mutex_unlock(&mu); /* the mutex is held again on return: unlock succeeds (ck_assert) */
  ck_cond_fini(&cv);
  ck_mutex_fini(&mu);
}

typedef struct flag {
  ck_mutex_t mu;
  ck_cond_t cv;
  bool set;
} flag_t;

static void *signaller(void *arg) {
  flag_t *f = arg;
  ck_mutex_lock(&f->mu); /* only possible once the main thread is inside its wait */
  f->set = true;
  ck_cond_signal(&f->cv);
  ck_mutex_unlock(&f->mu);
  return NULL;
}

static void *broadcaster(void *arg) {
  flag_t *f = arg;
  ck_mutex_lock(&f->mu);
  f->set = true;
  ck_cond_broadcast(&f->cv);
  ck_mutex_unlock(&f->mu);
  return NULL;
}

static void wait_for_flag(void *(*fn)(void *)) {
  flag_t f = {.set = false};
  ck_mutex_init(&f.mu);
  ck_cond_init(&f.cv);
  ck_mutex_lock(&f.mu);
  ck_thread_t th = {0};
  assert_int_equal(ck_thread_start(&th, "signal", fn, &f), 0);
  int64_t start = ck_mono_ms();
  int64_t deadline = start + WAIT_LIMIT_MS;
  bool r = true;
  while (!f.set && (r = ck_cond_wait_until(&f.cv, &f.mu, deadline))) {
  }
  int64_t waited = ck_mono_ms() - start;
  bool set = f.set;
  ck_mutex_unlock(&f.mu);
  ck_thread_join(&th);
  assert_true(set);
  assert_true(r);                         /* woken by the signal, reported as such */
  assert_true(waited < WAIT_LIMIT_MS / 2); /* and well before the deadline */
  ck_cond_fini(&f.cv);
  ck_mutex_fini(&f.mu);
}

static void test_thread_wait_until_returns_true_when_signalled(void **state) {
  wait_for_flag(signaller);
}

static void test_thread_wait_until_returns_true_when_broadcast(void **state) {
  wait_for_flag(broadcaster);
}

static void *blocking_waiter(void *arg) {
  flag_t *f = arg;
  ck_mutex_lock(&f->mu);
  while (!f->set) ck_cond_wait(&f->cv, &f->mu);
  ck_mutex_unlock(&f->mu);
  return NULL;
}

static void test_thread_cond_wait_wakes_all_on_broadcast(void **state) {
  flag_t f = {.set = false};
  ck_mutex_init(&f.mu);
  ck_cond_init(&f.cv);
  ck_thread_t th[3] = {{0}};
  for (int i = 0; i < 3; i++)
    assert_int_equal(ck_thread_start(&th[i], "waiter", blocking_waiter, &f), 0);
  ck_mutex_lock(&f.mu);
  f.set = true;
  ck_cond_broadcast(&f.cv);
  ck_mutex_unlock(&f.mu);
  for (int i = 0; i < 3; i++) ck_thread_join(&th[i]); /* hangs (ctest timeout) if one is missed */
  for (int i = 0; i < 3; i++) assert_false(th[i].started);
  ck_cond_fini(&f.cv);
  ck_mutex_fini(&f.mu);
}

/* ---- named threads ---- */

typedef struct named {
  flag_t go;
  char name[32];
} named_t;

static void *read_own_name(void *arg) {
  named_t *n = arg;
  ck_mutex_lock(&n->go.mu);
  int64_t deadline = ck_mono_ms() + WAIT_LIMIT_MS;
  while (!n->go.set && ck_cond_wait_until(&n->go.cv, &n->go.mu, deadline)) {
  }
  ck_mutex_unlock(&n->go.mu);
  /* the name is set by ck_thread_start after pthread_create: read it once told to */
  pthread_getname_np(pthread_self(), n->name, sizeof n->name);
  return NULL;
}

static void test_thread_name_truncated_to_15(void **state) {
  named_t n;
  memset(&n, 0, sizeof n);
  ck_mutex_init(&n.go.mu);
  ck_cond_init(&n.go.cv);
  ck_thread_t th = {0};
  assert_false(th.started);
  assert_int_equal(ck_thread_start(&th, "checkpoint-coordinator", read_own_name, &n), 0);
  assert_true(th.started);
  ck_mutex_lock(&n.go.mu);
  n.go.set = true;
  ck_cond_signal(&n.go.cv);
  ck_mutex_unlock(&n.go.mu);
  ck_thread_join(&th);
  assert_false(th.started);
  ck_thread_join(&th); /* joining twice is harmless */
  assert_string_equal(n.name, "checkpoint-coor");
  ck_cond_fini(&n.go.cv);
  ck_mutex_fini(&n.go.mu);
}

static void test_thread_join_unstarted_is_noop(void **state) {
  ck_thread_t th = {0};
  ck_thread_join(&th);
  assert_false(th.started);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_thread_producer_consumer),
      cmocka_unit_test(test_thread_mutex_excludes),
      cmocka_unit_test(test_thread_wait_until_times_out_near_deadline),
      cmocka_unit_test(test_thread_wait_until_past_deadline_returns_false_at_once),
      cmocka_unit_test(test_thread_wait_until_returns_true_when_signalled),
      cmocka_unit_test(test_thread_wait_until_returns_true_when_broadcast),
      cmocka_unit_test(test_thread_cond_wait_wakes_all_on_broadcast),
      cmocka_unit_test(test_thread_name_truncated_to_15),
      cmocka_unit_test(test_thread_join_unstarted_is_noop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
