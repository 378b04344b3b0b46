/*
 * DESIGN: see coordinator.h. This file is the control loop — its poll over the control port,
 * the workers' frames about deployments, timers, placement, deployments, checkpoints and
 * restarts. The control port's connections, worker registration and the CLI's requests are
 * conns.c, the REST API rest.c, HA (leader lock, epoch, manifests) ha.c and ha_zk.c, a
 * submission's checks and planning admit.c; the state all of them share is coordinator_int.h.
 *
 * State: workers (by number, never reused within one coordinator run) and jobs (by id), under
 * co->mu. A job's current deployment has an id that is also the data plane's session (the
 * epoch in its high bits), the worker number of each slot, and per participating worker
 * whether it deployed and whether it ended. Frames of an older deployment are ignored.
 *
 * The job's lifecycle is the job module's state machine (job/job.h, job->life), the one the
 * embedded run uses: this file feeds it events (all DEPLOYED: ck_job_start; a failure of the
 * deployment: ck_job_ended, which asks the policy and logs the decision) and is its
 * deployment — the remote one, ck_co_remote_ops, whose verbs are frames to the workers. It
 * keeps what only a cluster has: placement, waiting for slots, and waiting for the workers to
 * confirm a cancel before the next deployment.
 *
 * Job states: CREATED (waiting for slots for its first deployment), RUNNING, RESTARTING
 * (shown as awaiting_restart in the log: the old deployment is being cancelled, or the job
 * waits for capacity), CANCELLING, and the terminal FINISHED, FAILED, CANCELLED.
 */
#include "cluster/coordinator_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/thread.h"
#include "base/time.h"
#include "checkpoint/coord.h"
#include "checkpoint/lineage.h"
#include "checkpoint/trace.h"
#include "cluster/http.h"
#include "cluster/jobplan.h"
#include "cluster/proto.h"
#include "job/job.h"
#include "job/policy.h"
#include "runtime/exec.h"

#define LOG_WATCH "coordinator.watchdog"
#define LOG_RESTART "coordinator.restart"
#define LOG_CO "coordinator"
/* ================================================================ jobs */

/* The manifest (ha.c) of a job whose state changed: one name for the many call sites. */
static void save_manifest(co_t *co, const job_t *job) { ck_co_ha_save_manifest(co, job); }

static void send_to(co_t *co, int worker, int type, const ck_buf_t *payload) {
  worker_t *w = find_worker(co, worker);
  if (!w || !w->alive || !w->conn) return;
  ck_error_t err;
  ck_error_clear(&err);
  if (ck_proto_send(&w->conn->pc, type, co->epoch, payload, &err))
    CK_LOG_WARN(LOG_CO, "could not send %s to %s: %s", ck_proto_type_name(type), w->id,
                err.message);
}

static void send_deployment(co_t *co, job_t *job, int type, int64_t a, int64_t b, bool with_b) {
  ck_buf_t p;
  ck_buf_init(&p);
  ck_proto_put_i64(&p, job->deployment);
  if (type != CK_PROTO_CANCEL) ck_proto_put_i64(&p, a);
  if (with_b) ck_proto_put_u8(&p, (uint8_t)b);
  for (int i = 0; i < job->nparts; i++)
    if (!job->parts[i].ended) send_to(co, job->parts[i].worker, type, &p);
  ck_buf_fini(&p);
}

static int total_free(const co_t *co) {
  int f = 0;
  for (int i = 0; i < co->nworkers; i++) f += free_slots(co, i);
  return f;
}

static void clear_deployment(job_t *job) {
  for (int i = 0; i < job->nparts; i++) ck_free(job->parts[i].metrics);
  ck_free(job->parts);
  ck_free(job->slot_worker);
  job->parts = NULL;
  job->slot_worker = NULL;
  job->nparts = 0;
  job->deployment = 0;
  job->started = false;
}

static void set_error(job_t *job, const char *msg) {
  ck_free(job->error);
  size_t n = strlen(msg);
  job->error = ck_malloc(n + 1);
  memcpy(job->error, msg, n + 1);
  job->error_count++;
}

/* The job ends (status terminal): the job module's state machine was told already, and for
 * FINISHED did the finish protocol. */
static void finish_job(co_t *co, job_t *job, job_status_t status, const char *why) {
  if (job->store_open) {
    ck_job_ids_used(&job->life, job->ck.last_completed);
    ck_job_ids_used(&job->life, job->ck.next_id);
  }
  clear_deployment(job);
  job->status = status;
  if (status == JOB_FAILED) {
    if (why) set_error(job, why);
    CK_LOG_ERR(LOG_CO, "job_id=%lld failed: %s", (long long)job->id, why ? why : "");
  } else {
    CK_LOG_INFO(LOG_CO, "job_id=%lld %s", (long long)job->id, status == JOB_FINISHED
                ? "finished" : "cancelled");
  }
  save_manifest(co, job);
}

/* ---- the remote deployment: the job module's deployment interface (job/job.h) over the
 *      workers' frames; dep is the job. No wait: a deployment's end arrives as frames (ENDED,
 *      a worker lost) and is fed to ck_job_ended. */

static int remote_deploy(void *dep, const ck_job_point_t *point, ck_error_t *err) {
  job_t *job = dep;
  co_t *co = job->co;
  if (!job->store_open) {
    int rc = ck_store_open(job->dir, &job->store, err);
    if (rc) return rc;
    job->store_open = true;
  }
  ck_ckpt_coord_init(&job->ck, &job->store, job->plan.ntasks, job->plan.nsinks,
                     job->plan.nsources, point->ids_above, point->restore_id,
                     co->o.checkpoint_interval_ms, co->o.checkpoint_timeout_ms,
                     co->o.checkpoints_retained, ck_mono_ms());
  job->deployment = (int64_t)((co->epoch & 0x7fffff) << 40) | ++co->deploy_seq;
  job->started = false;
  job->input_ended = true;
  job->failed_this_deployment = false;
  ck_buf_t p;
  ck_buf_init(&p);
  for (int i = 0; i < job->nparts; i++) {
    ck_buf_reset(&p);
    ck_proto_put_i64(&p, job->deployment);
    ck_proto_put_i64(&p, job->id);
    ck_proto_put_str(&p, job->name);
    ck_proto_put_bytes(&p, job->plan.wire.data, job->plan.wire.len); /* the job graph */
    ck_proto_put_str(&p, job->dir);
    ck_proto_put_i64(&p, point->restore_id);
    ck_proto_put_i64(&p, point->ids_above);
    ck_proto_put_i64(&p, (int64_t)job->plan.fingerprint);
    ck_proto_put_u32(&p, (uint32_t)job->parts[i].worker);
    ck_proto_put_u32(&p, (uint32_t)job->plan.nslots);
    for (int s = 0; s < job->plan.nslots; s++) ck_proto_put_u32(&p, (uint32_t)job->slot_worker[s]);
    ck_proto_put_str(&p, job->capture_dir); /* the job's flight recorder ("": the worker's) */
    ck_proto_put_i64(&p, job->capture_records);
    send_to(co, job->parts[i].worker, CK_PROTO_DEPLOY, &p);
  }
  ck_buf_fini(&p);
  return 0;
}

/* Every participant deployed: START, with where each worker's data port is. */
static int remote_start(void *dep, ck_error_t *err) {
  job_t *job = dep;
  co_t *co = job->co;
  ck_buf_t p;
  ck_buf_init(&p);
  ck_proto_put_i64(&p, job->deployment);
  ck_proto_put_u32(&p, (uint32_t)co->nworkers);
  for (int w = 0; w < co->nworkers; w++) {
    part_t *pt = NULL;
    for (int i = 0; i < job->nparts; i++)
      if (job->parts[i].worker == w) pt = &job->parts[i];
    ck_proto_put_str(&p, co->workers[w]->host);
    ck_proto_put_u32(&p, pt ? (uint32_t)pt->data_port : 0);
  }
  for (int i = 0; i < job->nparts; i++) send_to(co, job->parts[i].worker, CK_PROTO_START, &p);
  ck_buf_fini(&p);
  job->started = true;
  job->ck.next_at = ck_mono_ms() + job->ck.interval_ms;
  return 0;
}

static void remote_trigger(void *dep, int64_t id, bool final) {
  job_t *job = dep;
  send_deployment(job->co, job, CK_PROTO_TRIGGER, id, final, true);
}

static void remote_commit(void *dep, int64_t id) {
  job_t *job = dep;
  send_deployment(job->co, job, CK_PROTO_COMMIT, id, ck_ckpt_coord_final_done(&job->ck), true);
}

/* Workers cancel (a drain is a cancel too: a cluster job is stopped by cancelling it). */
static void remote_cancel(void *dep, bool drain, const char *why) {
  job_t *job = dep;
  if (job->deployment) send_deployment(job->co, job, CK_PROTO_CANCEL, 0, 0, false);
}

static void remote_release(void *dep) { clear_deployment(dep); }

static const ck_job_ops_t ck_co_remote_ops = {
    .kind = "remote",
    .deploy = remote_deploy,
    .start = remote_start,
    .trigger = remote_trigger,
    .commit = remote_commit,
    .cancel = remote_cancel,
    .wait = NULL,
    .release = remote_release,
};

static void job_failed(co_t *co, job_t *job, int rc, bool retriable, const char *why);

/* Tries to place and deploy the job now. Returns true when deployed (or failed for good). */
static bool deploy(co_t *co, job_t *job) {
  int need = job->plan.nslots;
  int free_total = total_free(co);
  if (free_total < need) {
    if (!job->capacity_logged) {
      CK_LOG_INFO(LOG_RESTART, "job_id=%lld restart waiting for capacity: %d task(s) need "
                  "%d slot(s), %d free; a worker re-registration re-fires this restart",
                  (long long)job->id, job->plan.ntasks, need, free_total);
      job->capacity_logged = true;
    }
    return false;
  }
  job->capacity_logged = false;
  /* where each slot goes: spread over the workers with the most free slots first */
  int *avail = ck_calloc((size_t)co->nworkers + 1, sizeof(int));
  for (int i = 0; i < co->nworkers; i++) avail[i] = free_slots(co, i);
  job->slot_worker = ck_calloc((size_t)need, sizeof(int));
  for (int s = 0; s < need; s++) {
    int best = -1;
    for (int i = 0; i < co->nworkers; i++)
      if (avail[i] > 0 && (best < 0 || avail[i] > avail[best])) best = i;
    job->slot_worker[s] = best;
    avail[best]--;
  }
  ck_free(avail);
  job->parts = ck_calloc((size_t)need, sizeof *job->parts);
  job->nparts = 0;
  for (int s = 0; s < need; s++) {
    bool seen = false;
    for (int i = 0; i < job->nparts; i++) seen |= job->parts[i].worker == job->slot_worker[s];
    if (!seen) job->parts[job->nparts++].worker = job->slot_worker[s];
  }

  /* the job module's state machine: the restore point (the same rule and log line as an
   * embedded run), then remote_deploy's DEPLOY frames */
  ck_error_t err;
  ck_error_clear(&err);
  if (job->life.restarts > 0 || job->status == JOB_RESTARTING) {
    int survivors = 0;
    for (int i = 0; i < co->nworkers; i++) survivors += co->workers[i]->alive;
    CK_LOG_INFO(LOG_RESTART, "job_id=%lld attempt=%d survivors=%d tasks=%d", (long long)job->id,
                job->life.restarts, survivors, job->plan.ntasks);
  }
  if (ck_job_deploy(&job->life, &err)) {
    clear_deployment(job); /* nothing was sent: no worker has a part to cancel */
    if (job->life.state == CK_JOB_FAILED) finish_job(co, job, JOB_FAILED, err.message);
    else job_failed(co, job, err.code, err.retriable, err.message); /* as any deployment's */
    return true;
  }
  job->status = JOB_RUNNING;
  save_manifest(co, job);
  return true;
}

/* The current deployment cannot go on and the job's policy said to deploy again: cancel it
 * everywhere, and deploy the job again from its restore point once every worker stopped it
 * and the backoff passed (tick). */
static void restart(co_t *co, job_t *job, const char *why, int64_t backoff) {
  if (terminal(job->status) || job->status == JOB_CANCELLING) return;
  int drain = 0;
  for (int i = 0; i < job->nparts; i++) {
    worker_t *w = find_worker(co, job->parts[i].worker);
    if (!w || !w->alive) job->parts[i].ended = true;
    drain += !job->parts[i].ended;
  }
  CK_LOG_INFO(LOG_WATCH, "job_id=%lld awaiting_restart drain_expected=%d: %s",
              (long long)job->id, drain, why);
  job->life.ops->cancel(job, false, why);
  job->status = JOB_RESTARTING;
  job->cancel_deadline = ck_mono_ms() + CANCEL_WAIT_MS;
  job->restart_at = ck_mono_ms() + backoff;
  save_manifest(co, job);
}

/* The running deployment failed with rc (why: the failure, one line): the job module's state
 * machine asks the policy (job/policy.h, as for an embedded run) and logs the decision; this
 * restarts, rewinds, or fails the job by what it answers. */
static void job_failed(co_t *co, job_t *job, int rc, bool retriable, const char *why) {
  if (terminal(job->status) || job->status == JOB_CANCELLING) return;
  if (job->store_open) ck_job_ids_used(&job->life, job->ck.next_id);
  ck_error_t err;
  ck_error_clear(&err);
  ck_error_set(&err, rc, "%s", why);
  err.retriable = retriable;
  ck_job_decision_t d;
  ck_job_state_t next = ck_job_ended(&job->life, rc, &err, &d);
  if (d.verdict == CK_JOB_RESTART || d.verdict == CK_JOB_GIVE_UP) {
    co->restarts_total++;
    set_error(job, why);
  }
  if (next == CK_JOB_FAILING) {
    restart(co, job, why, job->life.backoff_ms);
    return;
  }
  job->life.ops->cancel(job, false, why); /* to the participants still running */
  finish_job(co, job, JOB_FAILED, err.message);
}

void ck_co_worker_lost(co_t *co, worker_t *w, const char *why) {
  if (!w->alive) return;
  w->alive = false;
  co->workers_lost_total++;
  CK_LOG_WARN(LOG_WATCH, "worker lost: %s (%s)", w->id, why);
  for (int j = 0; j < co->njobs; j++) {
    job_t *job = co->jobs[j];
    if (!job->deployment) continue;
    for (int i = 0; i < job->nparts; i++)
      if (job->parts[i].worker == w->num) {
        job->parts[i].ended = true;
        char msg[256];
        snprintf(msg, sizeof msg, "worker lost: %s", w->id);
        if (job->status == JOB_CANCELLING) break;
        if (job->status == JOB_RESTARTING) restart(co, job, msg, 0); /* one more to drain */
        else job_failed(co, job, CK_ECONNECT, true, msg);
        break;
      }
  }
}

/* The second half, under co->mu: gives the job its id, states its guarantee, deploys it. */
static int64_t add_job(co_t *co, job_t *job) {
  job->id = co->next_job_id++;
  if (!job->name) {
    char defname[64];
    snprintf(defname, sizeof defname, "job-%lld", (long long)job->id);
    job->name = ck_malloc(strlen(defname) + 1);
    memcpy(job->name, defname, strlen(defname) + 1);
  }
  snprintf(job->dir, sizeof job->dir, "%s/job-%lld", co->o.checkpoint_dir, (long long)job->id);
  /* the job module's state machine, over this job's remote deployment (restarts: 0, or a
   * recovered job's count so far) */
  job->co = co;
  job->life.dir = job->dir;
  job->life.identity = (ck_job_identity_t){job->plan.desc.data, job->parallelism,
                                           job->plan.ntasks, ck_exec_rigid_sink(job->plan.graph)};
  job->life.max_restarts = co->o.max_restarts;
  job->life.ops = &ck_co_remote_ops;
  job->life.dep = job;
  job->life.job_id = job->id;
  ck_buf_t jm;
  ck_buf_init(&jm);
  ck_job_manifest_json(&(ck_job_manifest_t){job->plan.graph, job->id, job->name,
                                           job->parallelism, job->plan.ntasks,
                                           job->plan.fingerprint, job->guarantee}, &jm);
  job->manifest = ck_buf_detach(&jm);
  job->life.manifest = job->manifest;
  co->jobs = ck_realloc(co->jobs, sizeof *co->jobs * (size_t)(co->njobs + 1));
  co->jobs[co->njobs++] = job;
  CK_LOG_INFO("coordinator.guarantee", "job_id=%lld job delivery guarantee: %s",
              (long long)job->id, job->guarantee);
  CK_LOG_INFO(LOG_CO, "job_id=%lld submitted: '%s', parallelism %d, %d task(s)",
              (long long)job->id, job->name, job->parallelism, job->plan.ntasks);
  if (job->capture_dir)
    CK_LOG_INFO(LOG_CO, "job_id=%lld records its operators' input under %s on its workers "
                "(capture records %lld)", (long long)job->id, job->capture_dir,
                (long long)job->capture_records);
  save_manifest(co, job);
  deploy(co, job);
  return job->id;
}

int ck_co_job_plan_add(co_t *co, const char *name, const char *sql, int parallelism,
                       const ck_co_job_opts_t *jo, int64_t *id, const char **guarantee,
                       ck_error_t *err) {
  job_t *job;
  int rc = ck_co_job_plan(co, name, sql, NULL, 0, parallelism, jo, &job, err);
  ck_mutex_lock(&co->mu);
  if (rc) return rc;
  *id = add_job(co, job);
  *guarantee = job->guarantee;
  return 0;
}

int ck_co_job_submit(co_t *co, const char *name, const char *sql, int parallelism,
                     const ck_co_job_opts_t *jo, int64_t *id, const char **guarantee,
                     ck_error_t *err) {
  ck_mutex_unlock(&co->mu);
  return ck_co_job_plan_add(co, name, sql, parallelism, jo, id, guarantee, err);
}

int ck_co_job_cancel(co_t *co, int64_t id, ck_error_t *err) {
  job_t *job = find_job(co, id);
  if (!job) return ck_error_set(err, CK_ENOTFOUND, "no job %lld", (long long)id);
  if (terminal(job->status)) return 0;
  CK_LOG_INFO(LOG_CO, "job_id=%lld cancelling", (long long)id);
  if (!job->deployment) {
    finish_job(co, job, JOB_CANCELLED, NULL);
    return 0;
  }
  job->life.stopping = 1; /* the user's: the state machine ends STOPPED, never restarts */
  job->life.ops->cancel(job, false, "cancelled");
  job->status = JOB_CANCELLING;
  job->cancel_deadline = ck_mono_ms() + CANCEL_WAIT_MS;
  return 0;
}

void ck_co_job_recover(co_t *co, int64_t id, const char *name, const char *sql,
                       const void *plan, size_t plan_len, int parallelism, int attempt,
                       const ck_co_job_opts_t *jo) {
  job_t *job;
  ck_error_t err;
  ck_error_clear(&err);
  /* without co->mu */
  int rc = ck_co_job_plan(co, name, sql, plan, plan_len, parallelism, jo, &job, &err);
  ck_mutex_lock(&co->mu);
  if (rc) {
    CK_LOG_ERR(LOG_CO, "could not recover job %lld: %s", (long long)id, err.message);
  } else {
    job->life.restarts = attempt;
    job->status = JOB_RESTARTING; /* deploys now, or once there are slots */
    int64_t save_next = co->next_job_id;
    co->next_job_id = id;
    add_job(co, job);
    co->next_job_id = save_next > co->next_job_id ? save_next : co->next_job_id;
    CK_LOG_INFO(LOG_CO, "job_id=%lld recovered from the HA %s", (long long)id,
                co->zk ? "manifests on ZooKeeper" : "directory");
  }
  ck_mutex_unlock(&co->mu);
}

/* New jobs get ids above every job-<id> directory already in the checkpoint directory: a new
 * submission must never resume (or be refused by) the checkpoints of an earlier job that had
 * the same id under a coordinator without --ha-dir. */
static int used_job_id(void *ctx, const char *name) {
  co_t *co = ctx;
  long long id;
  char tail;
  if (sscanf(name, "job-%lld%c", &id, &tail) == 1 && id >= co->next_job_id && !find_job(co, id))
    co->next_job_id = id + 1;
  return 0;
}

static int skip_used_job_ids(co_t *co, ck_error_t *err) {
  return ck_store_dir_names(co->o.checkpoint_dir, used_job_id, co, err);
}

/* ================================================================ frames */

static part_t *part_of(job_t *job, int worker) {
  for (int i = 0; i < job->nparts; i++)
    if (job->parts[i].worker == worker) return &job->parts[i];
  return NULL;
}

/* The job and participant a worker's deployment frame is about, or NULL (stale). */
static job_t *job_of_deployment(co_t *co, int64_t dep, int worker, part_t **part) {
  for (int j = 0; j < co->njobs; j++) {
    job_t *job = co->jobs[j];
    if (job->deployment == dep && dep) {
      *part = part_of(job, worker);
      return *part ? job : NULL;
    }
  }
  return NULL;
}

static void start_if_deployed(co_t *co, job_t *job) {
  for (int i = 0; i < job->nparts; i++)
    if (!job->parts[i].deployed) return;
  ck_error_t err;
  ck_error_clear(&err);
  (void)ck_job_start(&job->life, &err); /* remote_start: START frames; it cannot fail */
  CK_LOG_INFO(LOG_CO, "job_id=%lld running on %d worker(s)", (long long)job->id, job->nparts);
}

/* A participant stopped its part of the deployment. */
static void part_ended(co_t *co, job_t *job, part_t *pt, int rc, bool retriable,
                       const char *error) {
  pt->ended = true;
  if (job->status == JOB_RUNNING && rc) {
    job_failed(co, job, rc, retriable, error);
    return;
  }
  for (int i = 0; i < job->nparts; i++)
    if (!job->parts[i].ended) return;
  if (job->status != JOB_RUNNING && job->status != JOB_CANCELLING) return;
  /* every participant ended without error: the state machine's end (the finish protocol) */
  ck_error_t err;
  ck_error_clear(&err);
  job->life.outcome.totals.input_ended = job->input_ended;
  ck_job_state_t next = ck_job_ended(&job->life, 0, &err, NULL);
  if (next == CK_JOB_FAILED) finish_job(co, job, JOB_FAILED, err.message);
  else finish_job(co, job, job->status == JOB_RUNNING ? JOB_FINISHED : JOB_CANCELLED, NULL);
}

static void on_worker_frame(co_t *co, worker_t *w, ck_proto_frame_t *f) {
  ck_proto_reader_t *r = &f->body;
  if (f->type == CK_PROTO_HEARTBEAT) {
    w->last_hb = ck_mono_ms();
    uint32_t n = ck_proto_u32(r);
    for (uint32_t i = 0; i < n && !r->bad; i++) {
      int64_t dep = ck_proto_i64(r);
      char *metrics = ck_proto_str(r);
      part_t *pt;
      job_t *job = job_of_deployment(co, dep, w->num, &pt);
      if (job) {
        ck_free(pt->metrics);
        pt->metrics = metrics;
      } else {
        ck_free(metrics);
      }
    }
    return;
  }
  int64_t dep = ck_proto_i64(r);
  part_t *pt = NULL;
  job_t *job = job_of_deployment(co, dep, w->num, &pt);
  ck_error_t err;
  ck_error_clear(&err);
  switch (f->type) {
    case CK_PROTO_DEPLOYED: {
      int port = (int)ck_proto_u32(r);
      int rc = (int)(int32_t)ck_proto_u32(r);
      char *msg = ck_proto_str(r);
      if (job && !r->bad) {
        if (rc) {
          char full[CK_ERR_MSG];
          snprintf(full, sizeof full, "%s could not deploy: %s", w->id, msg);
          part_ended(co, job, pt, rc, false, full);
        } else {
          pt->deployed = true;
          pt->data_port = port;
          if (job->status == JOB_RUNNING) start_if_deployed(co, job);
        }
      }
      ck_free(msg);
      break;
    }
    case CK_PROTO_ACK: {
      int64_t id = ck_proto_i64(r);
      (void)ck_proto_u32(r);
      if (!job || r->bad || job->status != JOB_RUNNING) break;
      int rc = ck_ckpt_coord_ack(&job->ck, id, &err);
      if (rc == 1) {
        co->checkpoints_completed_total++;
        job->life.ops->commit(job, id);
        ck_ckpt_coord_prune(&job->ck);
      } else if (rc < 0) {
        job_failed(co, job, rc, true, err.message); /* COMPLETED not written: restartable */
      }
      break;
    }
    case CK_PROTO_SOURCE_DONE:
      if (job && job->status == JOB_RUNNING) ck_ckpt_coord_source_done(&job->ck);
      break;
    case CK_PROTO_COMMITTED: {
      int64_t id = ck_proto_i64(r);
      if (!job || r->bad) break;
      if (ck_ckpt_coord_committed(&job->ck, id, &err) < 0)
        CK_LOG_WARN(LOG_CO, "job_id=%lld: %s", (long long)job->id, err.message);
      break;
    }
    case CK_PROTO_ENDED: {
      int rc = (int)(int32_t)ck_proto_u32(r);
      bool retriable = ck_proto_u8(r);
      bool input_ended = ck_proto_u8(r);
      int64_t last = ck_proto_i64(r);
      int64_t rin = ck_proto_i64(r), rout = ck_proto_i64(r);
      char *msg = ck_proto_str(r);
      if (job && !r->bad) {
        ck_job_ids_used(&job->life, last);
        job->records_in += rin;
        job->records_out += rout;
        job->input_ended &= input_ended;
        char full[CK_ERR_MSG];
        snprintf(full, sizeof full, "%s: %s", w->id, msg);
        part_ended(co, job, pt, rc, retriable, full);
      }
      ck_free(msg);
      break;
    }
    default:
      CK_LOG_WARN(LOG_CO, "%s sent an unexpected %s frame", w->id, ck_proto_type_name(f->type));
  }
}

/* ================================================================ timers */

static void tick(co_t *co) {
  int64_t now = ck_mono_ms();
  ck_co_conns_expire(co, now);
  int64_t limit = (int64_t)co->o.heartbeat_ms * co->o.missed_heartbeats;
  /* this loop itself was held up (it never plans, but a slow disk under a deploy's restore
   * point choice, or a machine short of CPU, can stall it): heartbeats that arrived meanwhile
   * are still unread, which is not the workers' fault */
  if (co->last_tick && now - co->last_tick > co->o.heartbeat_ms)
    for (int i = 0; i < co->nworkers; i++)
      if (co->workers[i]->alive && co->workers[i]->last_hb < now - co->o.heartbeat_ms)
        co->workers[i]->last_hb = now - co->o.heartbeat_ms;
  co->last_tick = now;
  for (int i = 0; i < co->nworkers; i++) {
    worker_t *w = co->workers[i];
    if (w->alive && now - w->last_hb > limit) {
      char why[96];
      snprintf(why, sizeof why, "no heartbeat for %lld ms", (long long)(now - w->last_hb));
      ck_co_worker_lost(co, w, why);
      for (int k = 0; k < co->nconns; k++)
        if (co->conns[k] == w->conn) {
          w->conn->kind = CONN_NEW;
          ck_co_conn_close(co, k, why);
          break;
        }
      w->conn = NULL;
    }
  }
  for (int j = 0; j < co->njobs; j++) {
    job_t *job = co->jobs[j];
    if (job->status == JOB_RUNNING && job->started) {
      bool final;
      int64_t wake;
      int64_t id = ck_ckpt_coord_tick(&job->ck, now, &final, &wake);
      if (id) job->life.ops->trigger(job, id, final);
      ck_error_t ferr;
      ck_error_clear(&ferr);
      int frc = ck_ckpt_coord_final_error(&job->ck, &ferr);
      if (frc) { /* the sources ended: this deployment cannot finish (checkpoint/coord.h) */
        char why[CK_ERR_MSG];
        ck_job_error_line(&ferr, why, sizeof why);
        job_failed(co, job, frc, ferr.retriable, why);
      }
    } else if (job->status == JOB_RESTARTING || job->status == JOB_CANCELLING ||
               job->status == JOB_CREATED) {
      bool drained = true;
      for (int i = 0; i < job->nparts; i++) drained &= job->parts[i].ended;
      if (!drained && now > job->cancel_deadline) {
        CK_LOG_WARN(LOG_RESTART, "job_id=%lld: workers did not confirm the cancellation within "
                    "%d ms; going on without them", (long long)job->id, CANCEL_WAIT_MS);
        for (int i = 0; i < job->nparts; i++) job->parts[i].ended = true;
        drained = true;
      }
      if (!drained) continue;
      if (job->status == JOB_CANCELLING) {
        finish_job(co, job, JOB_CANCELLED, NULL);
        continue;
      }
      if (job->deployment) job->life.ops->release(job);
      if (now >= job->restart_at) deploy(co, job);
    }
  }
}

/* ================================================================ the loop */

static void free_all(co_t *co) {
  for (int i = 0; i < co->nconns; i++) {
    ck_proto_conn_fini(&co->conns[i]->pc);
    ck_free(co->conns[i]);
  }
  for (int i = 0; i < co->nworkers; i++) {
    ck_free(co->workers[i]->id);
    ck_free(co->workers[i]->host);
    ck_free(co->workers[i]);
  }
  ck_free(co->workers);
  for (int j = 0; j < co->njobs; j++) {
    job_t *job = co->jobs[j];
    clear_deployment(job);
    if (job->store_open) ck_store_close(&job->store);
    ck_jobplan_fini(&job->plan);
    ck_free(job->name);
    ck_free(job->sql);
    ck_free(job->capture_dir);
    ck_free(job->error);
    ck_free(job->guarantee);
    ck_free(job->manifest);
    ck_free(job);
  }
  ck_free(co->jobs);
  if (co->listen_fd >= 0) close(co->listen_fd);
  if (co->lock_fd >= 0) close(co->lock_fd);
  if (co->zk) ck_co_hazk_release(co);
}

ck_coordinator_t *ck_coordinator_detached_new(const ck_coordinator_opts_t *opts) {
  co_t *co = ck_calloc(1, sizeof *co);
  co->o = *opts;
  if (!co->o.host) co->o.host = "127.0.0.1";
  if (co->o.max_restarts < 0) co->o.max_restarts = CK_JOB_RESTARTS_DEFAULT;
  if (co->o.heartbeat_ms <= 0) co->o.heartbeat_ms = 500;
  if (co->o.missed_heartbeats <= 0) co->o.missed_heartbeats = 3;
  if (co->o.auth_token && !*co->o.auth_token) co->o.auth_token = NULL;
  co->o.ha_dir = NULL;
  co->listen_fd = co->lock_fd = -1;
  co->next_job_id = co->epoch = 1;
  co->started_ms = ck_mono_ms();
  ck_mutex_init(&co->mu);
  ck_mutex_init(&co->plan_mu);
  co->refuse_writes = !co->o.auth_token && !ck_co_host_is_loopback(co->o.host);
  co->guard = (ck_http_guard_t){.token = co->o.auth_token, .refuse_writes = co->refuse_writes,
                                .json_writes = true};
  return co;
}

void ck_coordinator_detached_http(ck_coordinator_t *co, const ck_http_req_t *req,
                                  ck_http_resp_t *resp) {
  ck_co_rest_serve(co, req, resp);
}

void ck_coordinator_detached_free(ck_coordinator_t *co) {
  if (!co) return;
  free_all(co);
  ck_mutex_fini(&co->plan_mu);
  ck_mutex_fini(&co->mu);
  ck_free(co);
}

int ck_coordinator_main(const ck_coordinator_opts_t *opts, volatile sig_atomic_t *stop,
                        ck_error_t *err) {
  co_t *co = ck_calloc(1, sizeof *co);
  co->o = *opts;
  if (!co->o.host) co->o.host = "127.0.0.1";
  if (co->o.max_restarts < 0) co->o.max_restarts = CK_JOB_RESTARTS_DEFAULT;
  if (co->o.heartbeat_ms <= 0) co->o.heartbeat_ms = 500;
  if (co->o.missed_heartbeats <= 0) co->o.missed_heartbeats = 3;
  if (co->o.auth_token && !*co->o.auth_token) co->o.auth_token = NULL;
  co->listen_fd = co->lock_fd = -1;
  co->next_job_id = 1;
  co->epoch = 1;
  co->started_ms = ck_mono_ms();
  ck_mutex_init(&co->mu);
  ck_mutex_init(&co->plan_mu);
  if (!ck_store_is_remote(co->o.checkpoint_dir)) mkdir(co->o.checkpoint_dir, 0755);
  int rc = co->o.ha_dir   ? ck_co_ha_take(co, err)
         : co->o.ha_url ? ck_co_hazk_take(co, stop, err)
                        : 0;
  if (rc == CK_ECANCELLED && *stop) { /* stopped while standing by: a clean stop */
    CK_LOG_INFO(LOG_CO, "stopping (stood by, never led)");
    ck_error_clear(err);
    rc = 0;
    goto out;
  }
  if (!rc) rc = ck_sock_listen(co->o.host, co->o.port, &co->listen_fd, err);
  if (!rc) (void)fcntl(co->listen_fd, F_SETFL, fcntl(co->listen_fd, F_GETFL) | O_NONBLOCK);
  co->refuse_writes = !co->o.auth_token && !ck_co_host_is_loopback(co->o.host);
  co->guard = (ck_http_guard_t){.token = co->o.auth_token, .refuse_writes = co->refuse_writes,
                                .json_writes = true};
  if (!rc && co->o.http_port >= 0)
    rc = ck_http_start(co->o.host, co->o.http_port, ck_co_rest_serve, co, &co->http, err);
  if (rc) goto out;
  if (co->refuse_writes)
    CK_LOG_WARN(LOG_CO, "listening on %s, which is not a loopback address, without "
                "CLINK_AUTH_TOKEN: submitting and cancelling jobs is refused (REST 403, and on "
                "the control port) until the coordinator is started with a token; reading "
                "state and registering workers still work", co->o.host);
  CK_LOG_INFO(LOG_CO, "listening on %s:%d (control) and %s:%d (REST API), checkpoints in '%s'",
              co->o.host, ck_sock_port(co->listen_fd), co->o.host,
              co->http ? ck_http_port(co->http) : -1, co->o.checkpoint_dir);
  ck_mutex_lock(&co->mu);
  if (co->o.ha_dir || co->zk) ck_co_planners_recover(co, ck_co_ha_recover(co));
  rc = skip_used_job_ids(co, err); /* ids must not be chosen from part of a listing */
  ck_mutex_unlock(&co->mu);
  if (rc) goto out;

  while (!*stop) {
    if (ck_co_ha_deposed(co)) { /* a standby leads now: act no further (ha_zk.c) */
      rc = ck_error_set(err, CK_ESTATE, "could not stay the leader of '%s': %s; a standby "
                        "coordinator leads with a newer epoch, this one (epoch %llu) stops "
                        "without acting further", co->o.ha_url,
                        ck_co_ha_session_expired(co) ? "the ZooKeeper session expired"
                        : !co->deposed                 ? "ZooKeeper was unreachable for a "
                                                         "whole session timeout"
                        : "a write was refused or given up, fenced",
                        (unsigned long long)co->epoch);
      ck_error_hint(err, "Start it again to stand by; a session expires when the coordinator "
                         "is unreachable or stalled for longer than --ha-session-timeout-ms.");
      break;
    }
    struct pollfd pfds[MAX_CONNS + 1];
    ck_mutex_lock(&co->mu);
    int n = co->nconns;
    conn_t *polled[MAX_CONNS];
    pfds[0] = (struct pollfd){.fd = co->listen_fd,
                              .events = co->nconns < MAX_CONNS ? POLLIN : 0};
    for (int i = 0; i < n; i++) {
      polled[i] = co->conns[i];
      pfds[i + 1] = (struct pollfd){.fd = co->conns[i]->pc.fd, .events = POLLIN};
    }
    ck_mutex_unlock(&co->mu);
    int pr = poll(pfds, (nfds_t)n + 1, 50);
    ck_mutex_lock(&co->mu);
    if (pr > 0 && (pfds[0].revents & POLLIN)) ck_co_conns_accept(co);
    for (int k = 0; pr > 0 && k < n; k++) {
      if (!pfds[k + 1].revents) continue;
      int i = -1;
      for (int x = 0; x < co->nconns; x++)
        if (co->conns[x] == polled[k]) i = x;
      if (i < 0) continue; /* closed meanwhile */
      conn_t *c = co->conns[i];
      ck_error_t e;
      ck_error_clear(&e);
      int fr = ck_proto_fill(&c->pc, &e);
      ck_proto_frame_t f;
      int got;
      while (!fr && (got = ck_proto_next(&c->pc, &f, &e)) == 1) {
        c->last_ms = ck_mono_ms();
        if (c->kind == CONN_NEW) {
          if (f.type == CK_PROTO_REGISTER) ck_co_on_register(co, c, &f);
          else c->kind = CONN_CLI;
        }
        if (c->kind == CONN_CLI) ck_co_on_cli_frame(co, c, &f);
        else if (c->kind == CONN_WORKER && f.type != CK_PROTO_REGISTER) {
          worker_t *w = find_worker(co, c->worker);
          if (w && w->alive) on_worker_frame(co, w, &f);
        }
      }
      if (!fr && got < 0) fr = got;
      if (fr) /* its index may have moved: a frame's handling can close other connections */
        for (int x = 0; x < co->nconns; x++)
          if (co->conns[x] == c) {
            ck_co_conn_close(co, x, e.message[0] ? e.message : "connection closed");
            break;
          }
    }
    if (!ck_co_ha_deposed(co)) tick(co); /* deposed meanwhile (a refused write): not one more act */
    ck_co_planners_reap(co, false);
    ck_mutex_unlock(&co->mu);
  }
  CK_LOG_INFO(LOG_CO, "stopping");
  ck_mutex_lock(&co->mu);
  ck_co_planners_reap(co, true); /* a submission being planned is answered first */
  ck_mutex_unlock(&co->mu);
  /* jobs keep their checkpoints; workers cancel their work when the connection goes */
out:
  if (co->http) ck_http_stop(co->http);
  free_all(co);
  ck_mutex_fini(&co->plan_mu);
  ck_mutex_fini(&co->mu);
  ck_free(co);
  return rc;
}
