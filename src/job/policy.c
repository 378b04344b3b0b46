/*
 * DESIGN: see policy.h. The table below is the one place that says which failures restart a
 * job; the two shapes used to differ here (the coordinator also restarted on CK_ECANCELLED,
 * the embedded run did not; budgets 10 and 3; backoffs 100 ms × (n − 1) and 200 ms × n).
 *
 * The rule, once: a failure restarts when a second deployment from the restore point can get
 * past it — the world changed (a connection, a disk, a timeout, a peer) — and fails the job
 * when the same records and the same options would meet it again (bad SQL or options, a
 * record that does not decode under 'fail', a type or an expression error, damaged checkpoint
 * state, the memory limit, a bug). Before the table, two inputs win: a user stopping the job
 * is never overruled by a restart, and a job without checkpoints has nothing to restart from.
 * A failure whose component marked it retriable restarts whatever its code (the component
 * knows, e.g. a ClickHouse server answering "too many parts"). CK_ECANCELLED restarts: a
 * cancel the user asked for never reaches the policy (the job is stopping), so one that does
 * came from outside the job's own decision — a worker that lost its coordinator, a deployment
 * torn down under a peer — and the next deployment does not meet it.
 */
#include "job/policy.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"

#define FAIL CK_JOB_FAIL
#define RESTART CK_JOB_RESTART
#define REWIND CK_JOB_REWIND

const ck_job_rule_t ck_job_rules[] = {
    /* code            verdict  reason (for FAIL: why a restart would not help) */
    {CK_EIO,           RESTART, "an I/O error (a disk, a socket, a checkpoint step that failed) may not happen again"},
    {CK_ECONNECT,      RESTART, "the system it could not reach may be back"},
    {CK_ETIMEOUT,      RESTART, "the system that did not answer in time may answer now"},
    {CK_ECANCELLED,    RESTART, "a cancel the user did not ask for (a peer or a worker's coordinator went away)"},
    {CK_EREWIND,       REWIND,  "a sink's commit of the restore point was lost: the checkpoint before it runs that interval again"},
    {CK_EINVAL,        FAIL,    "an invalid argument is the same in the next deployment"},
    {CK_EUSAGE,        FAIL,    "bad usage is the same in the next deployment"},
    {CK_ESYNTAX,       FAIL,    "the SQL does not change"},
    {CK_EBIND,         FAIL,    "the SQL does not change"},
    {CK_ETYPE,         FAIL,    "the SQL and the data's types do not change"},
    {CK_EUNSUPPORTED,  FAIL,    "what is not supported stays so"},
    {CK_EOPTION,       FAIL,    "the options do not change"},
    {CK_EDECODE,       FAIL,    "the same record would be read again from the restore point"},
    {CK_ENOTFOUND,     FAIL,    "what was not found will not be found by a restart"},
    {CK_EEXISTS,       FAIL,    "what exists will exist again"},
    {CK_EPROTO,        FAIL,    "the peer would break the protocol the same way"},
    {CK_EREMOTE,       FAIL,    "the remote system refused it and did not say a retry can help"},
    {CK_ESTATE,        FAIL,    "the restore would read the same unusable checkpoint state"},
    {CK_EEVAL,         FAIL,    "the same records would meet the same expression error"},
    {CK_EINTERNAL,     FAIL,    "an internal error is a bug a restart would hit again"},
    {CK_ENOMEM,        FAIL,    "the restored state would pass the same memory limit"},
};
const int ck_job_nrules = (int)(sizeof ck_job_rules / sizeof ck_job_rules[0]);

const ck_job_rule_t *ck_job_rule(int code) {
  for (int i = 0; i < ck_job_nrules; i++)
    if (ck_job_rules[i].code == code) return &ck_job_rules[i];
  return NULL;
}

int64_t ck_job_policy_backoff_ms(int attempt) {
  if (attempt <= 1) return 0;
  int64_t ms = (int64_t)CK_JOB_BACKOFF_STEP_MS * (attempt - 1);
  return ms < CK_JOB_BACKOFF_MAX_MS ? ms : CK_JOB_BACKOFF_MAX_MS;
}

ck_job_decision_t ck_job_policy_charge(int budget, int used) {
  ck_job_decision_t d = {.budget = budget, .attempt = used + 1};
  if (d.attempt > budget) {
    d.verdict = CK_JOB_GIVE_UP;
  } else {
    d.verdict = CK_JOB_RESTART;
    d.backoff_ms = ck_job_policy_backoff_ms(d.attempt);
  }
  return d;
}

ck_job_decision_t ck_job_policy_decide(int budget, int used, const ck_job_failure_t *f) {
  ck_job_decision_t d = {.verdict = CK_JOB_FAIL, .budget = budget, .attempt = used};
  if (f->stopping) {
    d.reason = "the job is being stopped";
    return d;
  }
  if (!f->checkpointing) {
    d.reason = "the job takes no checkpoints to restart from (give it a --checkpoint-dir)";
    return d;
  }
  const ck_job_rule_t *rule = ck_job_rule(f->code);
  ck_job_verdict_t v = rule ? rule->verdict : CK_JOB_FAIL;
  if (v == CK_JOB_REWIND) {
    if (f->restore_id > 0) {
      d.verdict = CK_JOB_REWIND;
      d.rewind_below = f->restore_id;
      return d;
    }
    d.reason = "it started fresh, so there is no earlier checkpoint to rewind to";
    return d;
  }
  if (v == CK_JOB_RESTART || f->retriable) return ck_job_policy_charge(budget, used);
  d.reason = rule ? rule->reason : "an error the policy does not know is not restarted";
  return d;
}

void ck_job_decision_line(const ck_job_decision_t *d, const char *why, ck_buf_t *out) {
  size_t from = out->len;
  switch (d->verdict) {
    case CK_JOB_RESTART:
      ck_buf_printf(out, "the job failed (%s); restarting from its last checkpoint (attempt %d/%d) "
                    "in %lld ms", why, d->attempt, d->budget, (long long)d->backoff_ms);
      break;
    case CK_JOB_REWIND:
      ck_buf_printf(out, "the job failed (%s); restoring the checkpoint before %lld (a rewind: "
                    "no restart used)", why, (long long)d->rewind_below);
      break;
    case CK_JOB_GIVE_UP:
      ck_buf_printf(out, "the job failed (%s); not restarting: its %d restart(s) are used up",
                    why, d->budget);
      break;
    case CK_JOB_FAIL:
      ck_buf_printf(out, "the job failed (%s); not restarting: %s", why, d->reason);
      break;
  }
  for (size_t i = from; i < out->len; i++) /* one line, whatever the error's text holds */
    if (out->data[i] == '\n') out->data[i] = ' ';
}

void ck_job_decision_log(const ck_job_decision_t *d, int64_t job_id, const char *why) {
  ck_buf_t line;
  ck_buf_init(&line);
  if (job_id > 0) ck_buf_printf(&line, "job_id=%lld ", (long long)job_id);
  ck_job_decision_line(d, why, &line);
  if (d->verdict == CK_JOB_RESTART || d->verdict == CK_JOB_REWIND)
    CK_LOG_WARN("job", "%s", line.data);
  else
    CK_LOG_ERR("job", "%s", line.data);
  ck_buf_fini(&line);
}

void ck_job_give_up_message(const ck_job_decision_t *d, const char *why, char *out,
                            int out_len) {
  snprintf(out, (size_t)out_len, "gave up after %d restarts; the last failure: %s", d->budget,
           why);
}
