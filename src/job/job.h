/*
 * DESIGN: the job — one home for what happens to a job between its plan and its end, for both
 * shapes (DESIGN.md §1: the embedded run is the cluster run in one process).
 *
 * Lifecycle (docs/architecture.md draws it):
 *
 *   PLANNED ─▶ DEPLOYING ─▶ RUNNING ─▶ FINISHED | STOPPED
 *                  ▲           │
 *                  │           ▼ a deployment ended with an error
 *                  │        FAILING ── the policy (job/policy.h) ──▶ FAILED
 *                  │           │ RESTART (after its backoff) or REWIND
 *                  └───────────┘ choose the restore point again
 *
 * Deploying a job means choosing its restore point (ck_job_restore_point: checkpoint/
 * lineage.h's rule, with one log line for both shapes), then asking a *deployment* to build
 * the subtasks from it and start them. A deployment is anything behind ck_job_ops_t: the
 * local deployment (job/local.c: every subtask on threads of this process, runtime/exec.h)
 * is what `clink run` uses; the cluster's remote deployment (cluster/coordinator.c) places
 * subtasks on workers and speaks the same verbs in frames (DEPLOY, START, TRIGGER, COMMIT,
 * CANCEL; cluster/proto.h).
 *
 * One state machine drives both: ck_job_deploy (restore point, then the deployment's deploy),
 * ck_job_start, and ck_job_ended, fed how a deployment ended, which asks the policy and
 * returns what comes next — FINISHED or STOPPED (the finish protocol done), FAILED (the job's
 * error in err), or FAILING (deploy again after job->backoff_ms; a rewind restores below the
 * failed restore point). ck_job_run is that machine for a caller that may block: the
 * embedded run. The coordinator's control loop cannot block, so it feeds the same functions
 * from its frames and timers (a worker's ENDED, a worker lost, a final checkpoint abandoned)
 * and redeploys once the old deployment drained and the backoff passed.
 *
 * Finish protocol (ck_job_finish): a job that ended without error and whose every source
 * reached the end of its input leaves a clean-finish record, so the next run of the same
 * pipeline on the same directory starts afresh instead of resuming at the end; a stopped or
 * cancelled job leaves none (it resumes). Ids handed out by a failed deployment stay used:
 * the next restore point numbers new checkpoints above them (DESIGN.md §4.1).
 *
 * Threads: ck_job_run on the caller's thread (the CLI's main thread); ck_job_stop from any
 * thread or a signal handler. The step functions on one thread at a time (the coordinator:
 * under its lock).
 */
#ifndef CK_JOB_JOB_H
#define CK_JOB_JOB_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "job/policy.h"
#include "runtime/exec.h"

typedef enum ck_job_state {
  CK_JOB_PLANNED,
  CK_JOB_DEPLOYING,
  CK_JOB_RUNNING,
  CK_JOB_FAILING,
  CK_JOB_FINISHED,
  CK_JOB_STOPPED,
  CK_JOB_FAILED,
} ck_job_state_t;

const char *ck_job_state_name(ck_job_state_t state); /* "RUNNING" */

/* What the restore rule must know of a job (checkpoint/lineage.h). */
typedef struct ck_job_identity {
  const char *desc;        /* a printable identity of the job graph (ck_graph_describe) */
  int parallelism;
  int ntasks;              /* subtasks: snapshot folders v1/0 … v1/ntasks-1 */
  const char *rigid_sink;  /* ck_exec_rigid_sink, or NULL */
} ck_job_identity_t;

/* Where a deployment starts. */
typedef struct ck_job_point {
  int64_t restore_id;  /* restore this completed checkpoint; 0: start fresh */
  int64_t ids_above;   /* number new checkpoints above this */
} ck_job_point_t;

/*
 * The restore point of the job checkpointing into dir: fresh (only on a first deployment and
 * only when asked), below (not 0: a rewind, restore only below it), used (ids handed out by
 * earlier deployments: new ids go above them too). Logs the one line, prefixed
 * "job_id=N " when job_id > 0:
 *   [job] restore point: checkpoint 7 (latest_completed=7 latest_confirmed=7 run_base=0): WHY
 *   [job] starting fresh (WHY); new checkpoints are numbered above 13
 */
int ck_job_restore_point(const char *dir, const ck_job_identity_t *id, bool fresh,
                         int64_t below, int64_t used, int64_t job_id, ck_job_point_t *out,
                         ck_error_t *err);

/* err as one line for a decision's log line and a job's error: "message detail: … hint: …". */
void ck_job_error_line(const ck_error_t *err, char *out, int len);

/* The finish protocol: records a clean finish in dir when the job's input ended. */
int ck_job_finish(const char *dir, bool input_ended, ck_error_t *err);

/* The job manifest (job/manifest.c; docs/incidents.md): <dir>/v1/CK_JOB_MANIFEST, written by
 * ck_job_deploy at every deployment when job->manifest is set. */
#define CK_JOB_MANIFEST "_meta/job.json"
#define CK_JOB_MANIFEST_FORMAT "clink-job-manifest"
#define CK_JOB_MANIFEST_VERSION 1
typedef struct ck_job_manifest {
  const ck_graph_t *graph;
  int64_t job_id;          /* a cluster job's id; 0: embedded */
  const char *name;
  int parallelism, ntasks;
  uint64_t fingerprint;    /* as the checkpoints record it */
  const char *guarantee;   /* the delivery report, as the job stated it */
} ck_job_manifest_t;
/* The manifest's JSON text (one object and a newline; every option value redacted). */
void ck_job_manifest_json(const ck_job_manifest_t *m, ck_buf_t *out);

/* How a deployment ended. */
typedef struct ck_job_outcome {
  ck_exec_totals_t totals;  /* input_ended, last_triggered, the counters */
} ck_job_outcome_t;

/*
 * The deployment interface. Every entry gets the deployment's own state `dep`.
 *   deploy   build the subtasks to start from point (nothing runs yet)
 *   start    run them
 *   trigger  checkpoint id now (final: every source is done) — NULL when the deployment
 *            drives its own checkpoints (the local one: runtime/exec.c with checkpoint/coord.c)
 *   commit   checkpoint id is COMPLETED: sinks commit it — NULL likewise
 *   cancel   drain: stop reading and flush what is in flight (Ctrl-C; async-signal-safe);
 *            otherwise fail every subtask with CK_ECANCELLED and why
 *   wait     block until the deployment ended: 0, or its first error in err — NULL when the
 *            deployment reports its end as an event (the remote one: ck_job_ended)
 *   release  free what deploy built (the deployment can be deployed again)
 */
typedef struct ck_job_ops {
  const char *kind; /* "local", "remote" */
  int (*deploy)(void *dep, const ck_job_point_t *point, ck_error_t *err);
  int (*start)(void *dep, ck_error_t *err);
  void (*trigger)(void *dep, int64_t id, bool final);
  void (*commit)(void *dep, int64_t id);
  void (*cancel)(void *dep, bool drain, const char *why);
  int (*wait)(void *dep, ck_job_outcome_t *out, ck_error_t *err);
  void (*release)(void *dep);
} ck_job_ops_t;

typedef struct ck_job {
  /* set by the caller */
  const char *dir;              /* checkpoint directory; NULL: no checkpoints, no restart */
  ck_job_identity_t identity;
  bool fresh;                   /* --fresh */
  int max_restarts;             /* the budget (job/policy.h) */
  const ck_job_ops_t *ops;
  void *dep;
  bool have_point;              /* point below is the first deployment's, chosen already */
  int64_t job_id;               /* a cluster job's id: its log lines say "job_id=N "; 0: none */
  int restarts;                 /* restarts used (a recovered cluster job: its count so far) */
  const char *manifest;         /* the job manifest's text (ck_job_manifest_json); NULL: none */
  /* kept by the state machine */
  volatile sig_atomic_t stopping;
  ck_job_state_t state;
  int deployments;              /* deployments begun */
  int started;                  /* deployments that started */
  int64_t used;                 /* highest checkpoint id any deployment handed out */
  int64_t below;                /* the next deployment restores below this (a rewind); 0: any */
  int64_t backoff_ms;           /* FAILING: wait this long before deploying again */
  ck_job_point_t point;         /* of the current (last) deployment (see have_point) */
  ck_job_outcome_t outcome;     /* of the last deployment */
} ck_job_t;

/* ---- the state machine */

/* DEPLOYING: chooses the restore point (unless the first deployment's was chosen: have_point)
 * and asks the deployment to deploy from it. A restore point that cannot be chosen fails the
 * job (state FAILED, its error returned); a deployment that could not deploy returns its
 * error with the state DEPLOYING: give it to ck_job_ended. */
int ck_job_deploy(ck_job_t *job, ck_error_t *err);
/* RUNNING: the deployment runs (ops->start). Its error: give it to ck_job_ended. */
int ck_job_start(ck_job_t *job, ck_error_t *err);
/* Checkpoint ids up to id were handed out (durable record or not): new ones go above. */
void ck_job_ids_used(ck_job_t *job, int64_t id);
/* The current deployment ended: rc 0 (job->outcome says whether the input ended) or its
 * error err. Returns the next state: FINISHED (the finish protocol done), STOPPED, FAILED
 * (err: the job's error — after GIVE_UP "gave up after N restarts; the last failure: …"), or
 * FAILING (deploy again after job->backoff_ms). Logs the policy's decision line; *d (may be
 * NULL) gets the decision. Does not release the deployment. */
ck_job_state_t ck_job_ended(ck_job_t *job, int rc, ck_error_t *err, ck_job_decision_t *d);

/* Runs the job through its lifecycle until it finished, was stopped, or failed for good,
 * blocking in the deployment's wait. Returns 0, or the error that ended it. */
int ck_job_run(ck_job_t *job, ck_error_t *err);
/* Asks the job to drain and stop (Ctrl-C). Async-signal-safe. */
void ck_job_stop(ck_job_t *job);

#endif
