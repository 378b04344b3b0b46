/*
 * DESIGN: unit tests for the one restart and rewind policy (src/job/policy.c).
 *
 * Every error class of base/error.h is driven through ck_job_policy_decide and checked
 * against an expectation written here by hand (which classes a restart can get past), with
 * the decision's budget, attempt, backoff and its log line compared byte for byte, the line
 * read back from the log's pipe as a user would see it. The budget is spent to the last
 * restart and one more failure gives up. The same default budget serves both shapes (the
 * embedded run and the coordinator took 3 and 10 before).
 * Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/error.h"
#include "base/log.h"
#include "job/policy.h"

/* The expectation, independent of the table: what restarts, what rewinds; the rest fails. */
static ck_job_verdict_t expected(int code) {
  switch (code) {
    case CK_EIO: case CK_ECONNECT: case CK_ETIMEOUT: case CK_ECANCELLED: return CK_JOB_RESTART;
    case CK_EREWIND: return CK_JOB_REWIND;
    default: return CK_JOB_FAIL;
  }
}

static const int all_codes[] = {
#define CK_X_CODE(name, num, msg) name,
    CK_ERROR_TABLE(CK_X_CODE)
#undef CK_X_CODE
};
#define NCODES ((int)(sizeof all_codes / sizeof all_codes[0]))

static ck_job_failure_t failure(int code) {
  ck_job_failure_t f = {.code = code, .checkpointing = true, .restore_id = 7};
  return f;
}

static void line_of(const ck_job_decision_t *d, const char *why, char *out, size_t n) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_job_decision_line(d, why, &b);
  snprintf(out, n, "%s", b.data);
  ck_buf_fini(&b);
}

static void test_every_error_code_has_one_row(void **state) {
  (void)state;
  for (int i = 0; i < NCODES; i++) {
    if (all_codes[i] == CK_OK) continue;
    int rows = 0;
    for (int r = 0; r < ck_job_nrules; r++) rows += ck_job_rules[r].code == all_codes[i];
    if (rows != 1) fail_msg("%s has %d rows in the policy table", ck_error_name(all_codes[i]), rows);
  }
  for (int r = 0; r < ck_job_nrules; r++) {
    assert_non_null(ck_job_rules[r].reason);
    assert_string_not_equal(ck_error_name(ck_job_rules[r].code), "?");
  }
}

static void test_each_error_class_gets_its_decision_and_line(void **state) {
  (void)state;
  for (int i = 0; i < NCODES; i++) {
    int code = all_codes[i];
    if (code == CK_OK) continue;
    ck_job_failure_t f = failure(code);
    ck_job_decision_t d = ck_job_policy_decide(10, 0, &f);
    if (d.verdict != expected(code))
      fail_msg("%s: verdict %d, expected %d", ck_error_name(code), d.verdict, expected(code));
    assert_int_equal(d.budget, 10);
    char line[1024], want[1024];
    line_of(&d, "boom", line, sizeof line);
    switch (d.verdict) {
      case CK_JOB_RESTART:
        assert_int_equal(d.attempt, 1);
        assert_int_equal(d.backoff_ms, 0);
        assert_string_equal(line, "the job failed (boom); restarting from its last checkpoint "
                                  "(attempt 1/10) in 0 ms");
        break;
      case CK_JOB_REWIND:
        assert_int_equal(d.attempt, 0); /* a rewind uses no restart */
        assert_int_equal(d.rewind_below, 7);
        assert_string_equal(line, "the job failed (boom); restoring the checkpoint before 7 "
                                  "(a rewind: no restart used)");
        break;
      default:
        assert_non_null(d.reason);
        snprintf(want, sizeof want, "the job failed (boom); not restarting: %s",
                 ck_job_rule(code)->reason);
        assert_string_equal(line, want);
    }
  }
}

static void test_retriable_flag_restarts_any_class(void **state) {
  (void)state;
  ck_job_failure_t f = failure(CK_EREMOTE);
  assert_int_equal(ck_job_policy_decide(10, 0, &f).verdict, CK_JOB_FAIL);
  f.retriable = true;
  assert_int_equal(ck_job_policy_decide(10, 0, &f).verdict, CK_JOB_RESTART);
}

static void test_stopping_and_no_checkpoints_never_restart(void **state) {
  (void)state;
  ck_job_failure_t f = failure(CK_EIO);
  f.stopping = true;
  assert_int_equal(ck_job_policy_decide(10, 0, &f).verdict, CK_JOB_FAIL);
  f = failure(CK_EIO);
  f.checkpointing = false;
  ck_job_decision_t d = ck_job_policy_decide(10, 0, &f);
  assert_int_equal(d.verdict, CK_JOB_FAIL);
  assert_non_null(strstr(d.reason, "--checkpoint-dir"));
  f = failure(CK_EREWIND);
  f.restore_id = 0; /* fresh: nothing to rewind to */
  assert_int_equal(ck_job_policy_decide(10, 0, &f).verdict, CK_JOB_FAIL);
}

static void test_budget_and_backoff_to_the_last_restart_then_give_up(void **state) {
  (void)state;
  const int64_t backoff[] = {0, 100, 200, 300, 400, 500, 600, 700, 800, 900};
  ck_job_failure_t f = failure(CK_ECONNECT);
  int used = 0;
  for (; used < CK_JOB_RESTARTS_DEFAULT; used++) {
    ck_job_decision_t d = ck_job_policy_decide(CK_JOB_RESTARTS_DEFAULT, used, &f);
    assert_int_equal(d.verdict, CK_JOB_RESTART);
    assert_int_equal(d.attempt, used + 1);
    assert_int_equal(d.backoff_ms, backoff[used]);
  }
  ck_job_decision_t d = ck_job_policy_decide(CK_JOB_RESTARTS_DEFAULT, used, &f);
  assert_int_equal(d.verdict, CK_JOB_GIVE_UP);
  char line[512];
  line_of(&d, "x", line, sizeof line);
  assert_string_equal(line, "the job failed (x); not restarting: its 10 restart(s) are used up");
  ck_job_give_up_message(&d, "x", line, sizeof line);
  assert_string_equal(line, "gave up after 10 restarts; the last failure: x");
  /* a budget of 0: the first failure gives up */
  assert_int_equal(ck_job_policy_decide(0, 0, &f).verdict, CK_JOB_GIVE_UP);
  /* a lost worker is charged the same way */
  assert_int_equal(ck_job_policy_charge(2, 1).verdict, CK_JOB_RESTART);
  assert_int_equal(ck_job_policy_charge(2, 2).verdict, CK_JOB_GIVE_UP);
  /* the backoff stops growing */
  assert_int_equal(ck_job_policy_backoff_ms(1000), CK_JOB_BACKOFF_MAX_MS);
}

static void test_the_same_default_budget_for_both_shapes(void **state) {
  (void)state;
  assert_int_equal(CK_JOB_RESTARTS_DEFAULT, 10);
}

static void test_log_line_as_written(void **state) {
  (void)state;
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  ck_log_set_fd(fds[1]);
  ck_log_set_level(CK_LOG_INFO);
  ck_job_failure_t f = failure(CK_EIO);
  ck_job_decision_t d = ck_job_policy_decide(10, 1, &f);
  ck_job_decision_log(&d, 0, "disk\nfull");   /* embedded: no job id */
  ck_job_decision_log(&d, 4, "disk\nfull");   /* a cluster job */
  f = failure(CK_ESYNTAX);
  d = ck_job_policy_decide(10, 1, &f);
  ck_job_decision_log(&d, 4, "bad");
  ck_log_set_fd(-1);
  char got[2048] = "";
  ssize_t n = read(fds[0], got, sizeof got - 1);
  assert_true(n > 0);
  got[n] = 0;
  char want[2048];
  snprintf(want, sizeof want,
           "[job] warning: the job failed (disk full); restarting from its last checkpoint "
           "(attempt 2/10) in 100 ms\n"
           "[job] warning: job_id=4 the job failed (disk full); restarting from its last "
           "checkpoint (attempt 2/10) in 100 ms\n"
           "[job] error: job_id=4 the job failed (bad); not restarting: %s\n",
           ck_job_rule(CK_ESYNTAX)->reason);
  assert_string_equal(got, want);
  close(fds[0]);
  close(fds[1]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_error_code_has_one_row),
      cmocka_unit_test(test_each_error_class_gets_its_decision_and_line),
      cmocka_unit_test(test_retriable_flag_restarts_any_class),
      cmocka_unit_test(test_stopping_and_no_checkpoints_never_restart),
      cmocka_unit_test(test_budget_and_backoff_to_the_last_restart_then_give_up),
      cmocka_unit_test(test_the_same_default_budget_for_both_shapes),
      cmocka_unit_test(test_log_line_as_written),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
