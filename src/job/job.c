/*
 * DESIGN: see job.h — the lifecycle's state machine (both shapes), the blocking loop of the
 * embedded run over it, the restore point and its one log line, the finish protocol. The
 * machine asks job/policy.h for every decision; it owns no rule of its own.
 */
#include "job/job.h"

#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/time.h"
#include "checkpoint/lineage.h"
#include "checkpoint/store.h"

static const char *const state_names[] = {"PLANNED", "DEPLOYING", "RUNNING", "FAILING",
                                          "FINISHED", "STOPPED",   "FAILED"};

const char *ck_job_state_name(ck_job_state_t state) {
  return state >= 0 && state <= CK_JOB_FAILED ? state_names[state] : "?";
}

static void set_state(ck_job_t *job, ck_job_state_t state) {
  CK_LOG_DEBUG("job", "state %s -> %s", ck_job_state_name(job->state), ck_job_state_name(state));
  job->state = state;
}

int ck_job_restore_point(const char *dir, const ck_job_identity_t *id, bool fresh,
                         int64_t below, int64_t used, int64_t job_id, ck_job_point_t *out,
                         ck_error_t *err) {
  ck_lineage_t lin;
  ck_lineage_opts_t lo = {id->desc, id->parallelism, fresh && !below, below, id->ntasks,
                         id->rigid_sink};
  int rc = ck_lineage_start(dir, &lo, &lin, err);
  if (rc) return rc;
  out->restore_id = lin.restore_id;
  out->ids_above = lin.ids_above > used ? lin.ids_above : used;
  char tag[40] = "";
  if (job_id > 0) snprintf(tag, sizeof tag, "job_id=%lld ", (long long)job_id);
  if (lin.restore_id)
    CK_LOG_INFO("job", "%srestore point: checkpoint %lld (latest_completed=%lld "
                "latest_confirmed=%lld run_base=%lld): %s", tag, (long long)lin.restore_id,
                (long long)lin.latest_completed, (long long)lin.latest_confirmed,
                (long long)lin.run_base, lin.why);
  else
    CK_LOG_INFO("job", "%sstarting fresh (%s); new checkpoints are numbered above %lld", tag,
                lin.why, (long long)out->ids_above);
  return 0;
}

int ck_job_finish(const char *dir, bool input_ended, ck_error_t *err) {
  if (!dir || !input_ended) return 0;
  return ck_lineage_clean_finish(dir, err);
}

void ck_job_error_line(const ck_error_t *err, char *out, int len) {
  char full[1024];
  ck_error_format(err, full, sizeof full);
  const char *p = strncmp(full, "error: ", 7) == 0 ? full + 7 : full;
  snprintf(out, (size_t)len, "%s", p);
  for (char *nl = strchr(out, '\n'); nl; nl = strchr(nl, '\n')) *nl = ' ';
}

int ck_job_deploy(ck_job_t *job, ck_error_t *err) {
  bool first = job->deployments == 0;
  set_state(job, CK_JOB_DEPLOYING);
  if (!(first && job->have_point)) {
    memset(&job->point, 0, sizeof job->point);
    int rc = job->dir ? ck_job_restore_point(job->dir, &job->identity, first && job->fresh,
                                             job->below, job->used, job->job_id, &job->point,
                                             err)
                      : 0;
    if (rc) {
      set_state(job, CK_JOB_FAILED);
      return rc;
    }
  }
  if (job->dir && job->manifest) { /* the job manifest, for incident bundles */
    ck_store_t store = {0};
    int rc = ck_store_open(job->dir, &store, err);
    if (!rc) rc = ck_store_write(&store, CK_JOB_MANIFEST, job->manifest, strlen(job->manifest),
                                 err);
    if (store.root) ck_store_close(&store);
    if (rc) return rc;
  }
  job->below = 0;
  job->deployments++;
  memset(&job->outcome, 0, sizeof job->outcome);
  return job->ops->deploy(job->dep, &job->point, err);
}

int ck_job_start(ck_job_t *job, ck_error_t *err) {
  int rc = job->ops->start(job->dep, err);
  if (rc) return rc;
  set_state(job, CK_JOB_RUNNING);
  job->started++;
  return 0;
}

void ck_job_ids_used(ck_job_t *job, int64_t id) {
  if (id > job->used) job->used = id;
}

ck_job_state_t ck_job_ended(ck_job_t *job, int rc, ck_error_t *err, ck_job_decision_t *out) {
  ck_job_decision_t d = {.verdict = CK_JOB_FAIL};
  ck_job_ids_used(job, job->outcome.totals.last_triggered);
  if (!rc) {
    if (job->stopping) {
      set_state(job, CK_JOB_STOPPED);
    } else {
      rc = ck_job_finish(job->dir, job->outcome.totals.input_ended, err);
      set_state(job, rc ? CK_JOB_FAILED : CK_JOB_FINISHED);
    }
    if (out) *out = d;
    return job->state;
  }
  set_state(job, CK_JOB_FAILING);
  ck_job_failure_t f = {rc, err->retriable, job->stopping != 0, job->dir != NULL,
                        job->point.restore_id};
  d = ck_job_policy_decide(job->max_restarts, job->restarts, &f);
  char why[1024];
  ck_job_error_line(err, why, sizeof why);
  if (f.checkpointing && !f.stopping) ck_job_decision_log(&d, job->job_id, why);
  switch (d.verdict) {
    case CK_JOB_GIVE_UP: { /* counted as the attempt it would have been (the REST API's count) */
      job->restarts = d.attempt;
      char msg[CK_ERR_MSG];
      ck_job_give_up_message(&d, why, msg, sizeof msg);
      ck_error_clear(err);
      ck_error_set(err, rc, "%s", msg);
      set_state(job, CK_JOB_FAILED);
      break;
    }
    case CK_JOB_FAIL:
      set_state(job, CK_JOB_FAILED);
      break;
    case CK_JOB_REWIND: /* uses no restart, waits for nothing */
      job->below = d.rewind_below;
      job->backoff_ms = 0;
      break;
    case CK_JOB_RESTART:
      job->restarts = d.attempt;
      job->backoff_ms = d.backoff_ms;
      break;
  }
  if (out) *out = d;
  return job->state;
}

int ck_job_run(ck_job_t *job, ck_error_t *err) {
  set_state(job, CK_JOB_PLANNED);
  for (;;) {
    int rc = ck_job_deploy(job, err);
    if (rc && job->state == CK_JOB_FAILED) break; /* no restore point: nothing was deployed */
    if (!rc) rc = ck_job_start(job, err);
    if (!rc) {
      if (job->stopping) job->ops->cancel(job->dep, true, NULL); /* a Ctrl-C before there was a job */
      rc = job->ops->wait(job->dep, &job->outcome, err);
    }
    ck_job_state_t next = ck_job_ended(job, rc, err, NULL);
    /* the deployment, and any checkpoint it had in flight, is abandoned as a whole */
    job->ops->release(job->dep);
    if (next != CK_JOB_FAILING) break;
    ck_error_clear(err);
    ck_sleep_ms(job->backoff_ms);
  }
  return job->state == CK_JOB_FAILED ? (err->code ? err->code : CK_EINTERNAL) : 0;
}

void ck_job_stop(ck_job_t *job) {
  job->stopping = 1;
  if (job->state == CK_JOB_RUNNING) job->ops->cancel(job->dep, true, NULL);
}
