/*
 * DESIGN: unit tests for src/checkpoint/coord — the checkpoint decisions the embedded run and
 * the cluster coordinator share.
 *
 * A coordinator over a store in a fresh temporary directory is driven with explicit times, so
 * every rule is checked at its boundary: the first trigger waits one interval; ids start above
 * ids_above and only grow; one checkpoint in flight at a time; COMPLETED is written (durably,
 * in the store) only by the last task's ack; a stale ack is ignored; CONFIRMED only after
 * every sink's commit (at completion when there are no sinks); a checkpoint past its timeout
 * is abandoned and the next one gets a new id; once every source is done, the next trigger is
 * the final one, and nothing is triggered after it — not even when it is abandoned (its sources
 * ended after its barrier): then the deployment cannot finish, and ck_ckpt_coord_final_error
 * says so, naming it. Threads: the main thread only.
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
#include "checkpoint/coord.h"

typedef struct fx {
  char dir[64];
  ck_store_t store;
} fx_t;

static int setup(void **state) {
  fx_t *f = calloc(1, sizeof *f);
  snprintf(f->dir, sizeof f->dir, "/tmp/ck-coord-XXXXXX");
  if (!mkdtemp(f->dir)) return -1;
  ck_error_t err;
  ck_error_clear(&err);
  if (ck_store_open(f->dir, &f->store, &err)) return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx_t *f = *state;
  ck_store_close(&f->store);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
  if (system(cmd)) return -1;
  free(f);
  return 0;
}

static int64_t tick(ck_ckpt_coord_t *c, int64_t now, bool *final) {
  int64_t wake;
  bool fin = false;
  int64_t id = ck_ckpt_coord_tick(c, now, &fin, &wake);
  /* the next deadline, never a poll: the periodic trigger, the in-flight timeout, or a nap */
  assert_true(wake > now);
  if (c->pending) assert_int_equal(wake, c->pending_since + c->timeout_ms + 1);
  else if (!(c->final_id && c->sources_at_end >= c->nsources) && now < c->next_at)
    assert_int_equal(wake, c->next_at);
  if (final) *final = fin;
  return id;
}

static void test_triggers_acks_complete_and_confirm(void **state) {
  fx_t *f = *state;
  ck_error_t err;
  ck_error_clear(&err);
  ck_ckpt_coord_t c;
  /* 3 tasks, 1 of them a sink, 1 a source; ids above 40 (an earlier run's) */
  ck_ckpt_coord_init(&c, &f->store, 3, 1, 1, 40, 0, 1000, 5000, 2, 0);
  bool final;
  assert_int_equal(tick(&c, 999, &final), 0); /* one interval first */
  assert_int_equal(tick(&c, 1000, &final), 41);
  assert_false(final);
  assert_int_equal(tick(&c, 2500, NULL), 0); /* one in flight at a time */
  assert_int_equal(ck_ckpt_coord_ack(&c, 41, &err), 0);
  assert_int_equal(ck_ckpt_coord_ack(&c, 40, &err), 0); /* stale: not counted */
  assert_int_equal(ck_ckpt_coord_ack(&c, 41, &err), 0);
  assert_false(ck_store_marked(&f->store, "completed", 41));
  assert_int_equal(ck_ckpt_coord_ack(&c, 41, &err), 1); /* the last ack completes it */
  assert_true(ck_store_marked(&f->store, "completed", 41));
  assert_false(ck_store_marked(&f->store, "confirmed", 41)); /* the sink has not committed */
  assert_int_equal(c.last_completed, 41);
  assert_int_equal(ck_ckpt_coord_ack(&c, 41, &err), 0); /* a late duplicate changes nothing */
  assert_int_equal(ck_ckpt_coord_committed(&c, 41, &err), 1);
  assert_true(ck_store_marked(&f->store, "confirmed", 41));
  assert_int_equal(c.last_confirmed, 41);
  /* it took longer than the interval: the next waits a full interval from now */
  assert_int_equal(tick(&c, 2600, NULL), 0);
  assert_int_equal(tick(&c, 3599, NULL), 0);
  assert_int_equal(tick(&c, 3600, NULL), 42);
}

static void test_a_timed_out_checkpoint_is_abandoned(void **state) {
  fx_t *f = *state;
  ck_error_t err;
  ck_error_clear(&err);
  ck_ckpt_coord_t c;
  ck_ckpt_coord_init(&c, &f->store, 2, 0, 1, 0, 0, 100, 1000, 3, 0);
  assert_int_equal(tick(&c, 100, NULL), 1);
  assert_int_equal(ck_ckpt_coord_ack(&c, 1, &err), 0);
  assert_int_equal(tick(&c, 1100, NULL), 0);  /* not yet past the timeout */
  assert_int_equal(tick(&c, 1101, NULL), 0);  /* abandoned here … */
  assert_int_equal(c.pending, 0);
  assert_int_equal(tick(&c, 1201, NULL), 2);  /* … and the next one has a new id */
  assert_int_equal(ck_ckpt_coord_ack(&c, 1, &err), 0); /* the abandoned one's ack: ignored */
  assert_int_equal(ck_ckpt_coord_ack(&c, 2, &err), 0);
  assert_int_equal(ck_ckpt_coord_ack(&c, 2, &err), 1);
  assert_false(ck_store_marked(&f->store, "completed", 1));
  /* no sinks: confirmed as it completes */
  assert_true(ck_store_marked(&f->store, "confirmed", 2));
}

static void test_the_final_checkpoint_follows_every_source(void **state) {
  fx_t *f = *state;
  ck_error_t err;
  ck_error_clear(&err);
  ck_ckpt_coord_t c;
  ck_ckpt_coord_init(&c, &f->store, 2, 1, 2, 7, 7, 1000, 60000, 3, 0);
  assert_int_equal(c.last_completed, 7); /* the restored checkpoint */
  ck_ckpt_coord_source_done(&c);
  bool final;
  assert_int_equal(tick(&c, 10, &final), 0); /* one source still reads: wait the interval */
  ck_ckpt_coord_source_done(&c);
  assert_int_equal(tick(&c, 20, &final), 8); /* every source done: at once, and final */
  assert_true(final);
  assert_false(ck_ckpt_coord_final_done(&c));
  assert_int_equal(tick(&c, 5000, NULL), 0);
  assert_int_equal(ck_ckpt_coord_ack(&c, 8, &err), 0);
  assert_int_equal(ck_ckpt_coord_ack(&c, 8, &err), 1);
  assert_true(ck_ckpt_coord_final_done(&c));
  assert_int_equal(tick(&c, 9000, NULL), 0); /* nothing after the final one */
}

static void test_an_abandoned_final_checkpoint_ends_the_deployment(void **state) {
  fx_t *f = *state;
  ck_ckpt_coord_t c;
  ck_ckpt_coord_init(&c, &f->store, 1, 0, 1, 0, 0, 1000, 500, 3, 0);
  ck_ckpt_coord_source_done(&c);
  bool final;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(tick(&c, 0, &final), 1);
  assert_true(final);
  assert_int_equal(tick(&c, 500, &final), 0);
  assert_int_equal(ck_ckpt_coord_final_error(&c, &err), 0);
  /* timed out: abandoned; its sources ended, so no trigger reaches them — none goes out, and
   * the deployment is told it cannot finish (the job's policy restarts it) */
  assert_int_equal(tick(&c, 501, &final), 0);
  assert_int_equal(tick(&c, 5000, &final), 0);
  assert_int_equal(ck_ckpt_coord_final_error(&c, &err), CK_ETIMEOUT);
  assert_true(err.retriable);
  assert_non_null(strstr(err.message, "could not complete the final checkpoint 1"));
  assert_int_equal(ck_ckpt_coord_ack(&c, 1, &err), 0); /* its late ack completes nothing */
  assert_false(ck_ckpt_coord_final_done(&c));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_triggers_acks_complete_and_confirm, setup, teardown),
      cmocka_unit_test_setup_teardown(test_a_timed_out_checkpoint_is_abandoned, setup, teardown),
      cmocka_unit_test_setup_teardown(test_the_final_checkpoint_follows_every_source, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_an_abandoned_final_checkpoint_ends_the_deployment,
                                      setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
