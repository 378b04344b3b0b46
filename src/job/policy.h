/*
 * DESIGN: the one restart and rewind policy of a job — the same decision in both shapes.
 *
 * An embedded `clink run` (job/job.c over a local deployment) and a cluster coordinator
 * (cluster/coordinator.c over its workers) both end up here when a deployment of a job ends
 * with an error, and ask one question: restart from the restore point, rewind below it, or
 * fail. The answer comes from one table (policy.c) with a row for every error class of
 * base/error.h, plus two facts that hold for every row:
 *
 *   budget    restarts a job may use in its lifetime (CK_JOB_RESTARTS_DEFAULT = 10 in both
 *             shapes, `--max-restarts` for either); the failure after the last one fails the
 *             job: "gave up after N restarts; the last failure: …". A rewind uses none.
 *   backoff   before restart number n: 0 ms for the first (a lost worker comes back at once),
 *             then CK_JOB_BACKOFF_STEP_MS × (n − 1), never more than CK_JOB_BACKOFF_MAX_MS.
 *
 * Each decision has one log line, formatted here (ck_job_decision_line) and logged under
 * "[job]" by both shapes, a cluster job's prefixed with "job_id=N ", so a grep for the line
 * finds both.
 *
 * Threads: any; everything here is a pure function of its arguments except the logging.
 */
#ifndef CK_JOB_POLICY_H
#define CK_JOB_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"

#define CK_JOB_RESTARTS_DEFAULT 10   /* lifetime restarts of a job, both shapes */
#define CK_JOB_RESTARTS_MAX 1000     /* the most --max-restarts accepts */
#define CK_JOB_BACKOFF_STEP_MS 100   /* added per restart after the first */
#define CK_JOB_BACKOFF_MAX_MS 5000   /* the longest wait before a restart */

typedef enum ck_job_verdict {
  CK_JOB_FAIL,     /* the job fails with the error (a restart would meet it again) */
  CK_JOB_RESTART,  /* restart from the restore point; uses one restart of the budget */
  CK_JOB_REWIND,   /* restart from the checkpoint before the restore point; uses none */
  CK_JOB_GIVE_UP,  /* it could restart, but the budget is spent: the job fails */
} ck_job_verdict_t;

/* One row of the policy table: what a failure of this class leads to, and why. */
typedef struct ck_job_rule {
  int code;                 /* a CK_E… code of base/error.h */
  ck_job_verdict_t verdict; /* CK_JOB_FAIL, CK_JOB_RESTART or CK_JOB_REWIND */
  const char *reason;       /* why, as the log line's end: "…; not restarting: <reason>" */
} ck_job_rule_t;

/* The table, one row per error code (tests check that every code has exactly one). */
extern const ck_job_rule_t ck_job_rules[];
extern const int ck_job_nrules;
/* The row of code, or NULL for a code the table does not know (treated as CK_JOB_FAIL). */
const ck_job_rule_t *ck_job_rule(int code);

/* A deployment's end, as the policy sees it. */
typedef struct ck_job_failure {
  int code;            /* the error (not 0) */
  bool retriable;      /* the failing component said a retry can cure it (ck_error_t) */
  bool stopping;       /* the user is stopping or cancelling the job: never restart */
  bool checkpointing;  /* the job has checkpoints to restart from (embedded without
                          --checkpoint-dir: no) */
  int64_t restore_id;  /* the deployment's restore point (0: it started fresh) */
} ck_job_failure_t;

typedef struct ck_job_decision {
  ck_job_verdict_t verdict;
  int attempt;         /* restarts used, this one included (RESTART, GIVE_UP: used + 1) */
  int budget;
  int64_t backoff_ms;  /* wait this long before redeploying */
  int64_t rewind_below; /* REWIND: restore a checkpoint below this */
  const char *reason;  /* FAIL: the rule's reason */
} ck_job_decision_t;

/* What happens after failure f of a job that has used `used` of `budget` restarts. */
ck_job_decision_t ck_job_policy_decide(int budget, int used, const ck_job_failure_t *f);
/* A failure that is restartable by its nature (a lost worker, a failed checkpoint): RESTART
 * or GIVE_UP, by the budget alone. */
ck_job_decision_t ck_job_policy_charge(int budget, int used);
/* The wait before restart number `attempt` (1 = the first). */
int64_t ck_job_policy_backoff_ms(int attempt);

/* The decision's one log line (without the "[job] " prefix and a job id), e.g.
 * "the job failed (WHY); restarting from its last checkpoint (attempt 1/10) in 0 ms". */
void ck_job_decision_line(const ck_job_decision_t *d, const char *why, ck_buf_t *out);
/* Logs that line under "[job]" (warning for RESTART and REWIND, error otherwise), prefixed
 * "job_id=N " when job_id > 0 (a cluster job). */
void ck_job_decision_log(const ck_job_decision_t *d, int64_t job_id, const char *why);
/* The job's error after GIVE_UP: "gave up after N restarts; the last failure: WHY". */
void ck_job_give_up_message(const ck_job_decision_t *d, const char *why, char *out,
                            int out_len);

#endif
