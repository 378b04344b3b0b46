/*
 * DESIGN: unit tests for the job's lifecycle state machine (src/job/job.c) — the one both
 * shapes drive: an event-fed deployment (no wait, as the coordinator's remote one) through
 * ck_job_deploy / ck_job_start / ck_job_ended, and the blocking ck_job_run over a deployment
 * whose wait returns the same failures, make the same decisions: the same restarts with the
 * same backoffs, the same give-up error, the restore point numbered above every id handed
 * out, and the finish protocol's clean-finish record only on a finish. A fake deployment
 * records each verb it was asked for. The expectations (budget 2, backoffs 0 and 100 ms) are
 * the documented policy (docs/architecture.md), written here by hand.
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
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "job/job.h"

typedef struct fake {
  int deploys, starts, waits, releases;
  int64_t last_ids_above;
  int fail_waits; /* wait: CK_EIO this many times, then 0 */
} fake_t;

static int f_deploy(void *dep, const ck_job_point_t *point, ck_error_t *err) {
  fake_t *f = dep;
  f->deploys++;
  f->last_ids_above = point->ids_above;
  return 0;
}
static int f_start(void *dep, ck_error_t *err) { ((fake_t *)dep)->starts++; return 0; }
static void f_cancel(void *dep, bool drain, const char *why) {}
static int f_wait(void *dep, ck_job_outcome_t *out, ck_error_t *err) {
  fake_t *f = dep;
  f->waits++;
  out->totals.last_triggered = 10 * f->waits; /* ids this deployment handed out */
  out->totals.input_ended = true;
  if (f->waits <= f->fail_waits) {
    ck_error_set(err, CK_EIO, "disk went away");
    return CK_EIO;
  }
  return 0;
}
static void f_release(void *dep) { ((fake_t *)dep)->releases++; }

static const ck_job_ops_t event_ops = {"event", f_deploy, f_start, NULL, NULL, f_cancel, NULL,
                                       f_release};
static const ck_job_ops_t blocking_ops = {"blocking", f_deploy, f_start, NULL, NULL, f_cancel,
                                          f_wait, f_release};

static char dir_a[64], dir_b[64];

static int setup(void **state) {
  snprintf(dir_a, sizeof dir_a, "/tmp/clink-jobsm-a-XXXXXX");
  snprintf(dir_b, sizeof dir_b, "/tmp/clink-jobsm-b-XXXXXX");
  if (!mkdtemp(dir_a) || !mkdtemp(dir_b)) return -1;
  return 0;
}

static int teardown(void **state) {
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir_a, dir_b);
  return system(cmd) == 0 ? 0 : -1;
}

static ck_job_t job_over(const char *dir, const ck_job_ops_t *ops, fake_t *f) {
  ck_job_t job = {.dir = dir, .identity = {"a job", 1, 1, NULL}, .max_restarts = 2, .ops = ops,
                  .dep = f};
  return job;
}

static bool clean_finish(const char *dir) {
  char p[200];
  snprintf(p, sizeof p, "%s/v1/_meta/clean-finish", dir);
  return access(p, F_OK) == 0;
}

/* The coordinator's way: events, no wait. */
static void test_an_event_fed_deployment_restarts_then_gives_up(void **state) {
  fake_t f = {0};
  ck_job_t job = job_over(dir_a, &event_ops, &f);
  ck_error_t err;
  ck_error_clear(&err);
  int64_t want_backoff[] = {0, 100};
  for (int attempt = 1; attempt <= 2; attempt++) {
    assert_int_equal(ck_job_deploy(&job, &err), 0);
    assert_int_equal(job.state, CK_JOB_DEPLOYING);
    assert_int_equal(ck_job_start(&job, &err), 0);
    assert_int_equal(job.state, CK_JOB_RUNNING);
    ck_job_ids_used(&job, 10 * attempt);
    ck_error_set(&err, CK_EIO, "disk went away");
    ck_job_decision_t d;
    assert_int_equal(ck_job_ended(&job, CK_EIO, &err, &d), CK_JOB_FAILING);
    assert_int_equal(d.verdict, CK_JOB_RESTART);
    assert_int_equal(job.restarts, attempt);
    assert_int_equal(job.backoff_ms, want_backoff[attempt - 1]);
    ck_error_clear(&err);
  }
  assert_int_equal(ck_job_deploy(&job, &err), 0);
  assert_true(f.last_ids_above >= 20); /* above every id the failed deployments handed out */
  assert_int_equal(ck_job_start(&job, &err), 0);
  ck_error_set(&err, CK_EIO, "disk went away");
  assert_int_equal(ck_job_ended(&job, CK_EIO, &err, NULL), CK_JOB_FAILED);
  assert_string_equal(err.message, "gave up after 2 restarts; the last failure: disk went away");
  assert_int_equal(f.deploys, 3);
  assert_int_equal(f.starts, 3);
  assert_false(clean_finish(dir_a));
}

/* The embedded way: ck_job_run blocks in wait; the same failures, the same decisions. */
static void test_the_blocking_loop_makes_the_same_decisions(void **state) {
  fake_t f = {.fail_waits = 2};
  ck_job_t job = job_over(dir_b, &blocking_ops, &f);
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_job_run(&job, &err), 0); /* two restarts (0 + 100 ms), then a finish */
  assert_int_equal(job.state, CK_JOB_FINISHED);
  assert_int_equal(job.restarts, 2);
  assert_int_equal(f.deploys, 3);
  assert_int_equal(f.releases, 3);
  assert_true(f.last_ids_above >= 20);
  assert_true(clean_finish(dir_b)); /* the finish protocol ran */

  fake_t g = {.fail_waits = 3};
  ck_job_t again = job_over(dir_b, &blocking_ops, &g);
  again.fresh = true;
  ck_error_clear(&err);
  assert_int_equal(ck_job_run(&again, &err), CK_EIO);
  assert_int_equal(again.state, CK_JOB_FAILED);
  assert_string_equal(err.message, "gave up after 2 restarts; the last failure: disk went away");
}

static void test_a_stopped_job_leaves_no_clean_finish(void **state) {
  fake_t f = {0};
  ck_job_t job = job_over(dir_a, &event_ops, &f);
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_job_deploy(&job, &err), 0);
  assert_int_equal(ck_job_start(&job, &err), 0);
  job.stopping = 1;
  job.outcome.totals.input_ended = true;
  assert_int_equal(ck_job_ended(&job, 0, &err, NULL), CK_JOB_STOPPED);
  assert_false(clean_finish(dir_a));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_an_event_fed_deployment_restarts_then_gives_up, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_the_blocking_loop_makes_the_same_decisions, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_a_stopped_job_leaves_no_clean_finish, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
