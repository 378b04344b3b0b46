/*
 * DESIGN: the coordinator's state, shared by the files that make up the coordinator and by no
 * one else: coordinator.c (the control loop: connections, frames, timers, placement,
 * deployments, restarts), rest.c (the REST API's routes and handlers) and ha.c (the leader
 * lock, the epoch and the job manifests of --ha-dir). coordinator.h is the public face.
 *
 * Everything here is under co->mu (ck_coordinator_t's mutex), except what is fixed before any
 * thread but the starting one runs (co->o, co->epoch, co->guard, co->refuse_writes).
 */
#ifndef CK_CLUSTER_COORDINATOR_INT_H
#define CK_CLUSTER_COORDINATOR_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "base/thread.h"
#include "checkpoint/coord.h"
#include "checkpoint/store.h"
#include "cluster/coordinator.h"
#include "cluster/http.h"
#include "cluster/jobplan.h"
#include "cluster/proto.h"
#include "job/job.h"

#define MAX_CONNS 1024        /* registered workers plus MAX_UNREGISTERED others */
#define MAX_PLANNING 8        /* control-port submissions being planned at once */

#define CANCEL_WAIT_MS 15000

typedef enum {
  JOB_CREATED,
  JOB_RUNNING,
  JOB_RESTARTING,
  JOB_CANCELLING,
  JOB_FINISHED,
  JOB_FAILED,
  JOB_CANCELLED,
} job_status_t;

static inline const char *status_name(job_status_t s) {
  static const char *const names[] = {"CREATED",  "RUNNING", "RESTARTING", "CANCELLING",
                                      "FINISHED", "FAILED",  "CANCELLED"};
  return names[s];
}

static inline bool terminal(job_status_t s) { return s >= JOB_FINISHED; }

typedef enum { CONN_NEW, CONN_WORKER, CONN_CLI } conn_kind_t;

typedef struct conn {
  ck_proto_conn_t pc;
  conn_kind_t kind;
  int worker;          /* CONN_WORKER: its number */
  int64_t opened_ms;   /* accepted */
  int64_t last_ms;     /* its last whole frame (opened_ms before the first) */
  bool planning;       /* a planner thread will answer its SUBMIT: do not free it */
  bool closed;         /* taken out of conns while planning: the planner frees it */
} conn_t;

typedef struct worker {
  int num;
  char *id, *host;
  int slots, http_port, pid;
  conn_t *conn;     /* NULL once lost */
  bool alive;
  int64_t last_hb, registered_at;
} worker_t;

/* A participant of the current deployment. */
typedef struct part {
  int worker;
  bool deployed, ended;
  int data_port;
  char *metrics; /* its last heartbeat's JSON array for this deployment */
} part_t;

/* What a submission sets for its job beyond its SQL and parallelism (docs/cluster.md,
 * "Per-job options"): sent to its workers in every DEPLOY, kept in its HA manifest. */
typedef struct ck_co_job_opts {
  const char *capture_dir;  /* the job's flight recorder on its workers (capture/capture.h);
                               NULL or "": the workers' own --capture-dir, if any */
  int64_t capture_records;  /* its --capture-records; 0: the workers' */
} ck_co_job_opts_t;

typedef struct job {
  int64_t id;
  char *name, *sql, *error, *guarantee;
  char *manifest; /* the job manifest (job/job.h), written at every deployment */
  int parallelism;
  char *capture_dir;      /* ck_co_job_opts_t's, NULL: none */
  int64_t capture_records;
  job_status_t status;
  ck_job_t life;          /* the job module's state machine (job/job.h): restarts, the
                             restore point, ids used; its deployment is this job's remote
                             one (coordinator.c's ck_co_remote_ops, dep = this job) */
  struct co *co;
  int error_count;
  ck_jobplan_t plan;
  char dir[PATH_MAX];     /* its checkpoint directory */
  ck_store_t store;
  bool store_open;
  ck_ckpt_coord_t ck;
  /* the current deployment */
  int64_t deployment;     /* 0: none */
  bool started;
  int *slot_worker;       /* nslots */
  part_t *parts;
  int nparts;
  int64_t cancel_deadline;
  bool capacity_logged, input_ended, failed_this_deployment;
  int64_t records_in, records_out;
  int64_t restart_at;     /* a restart not before (backoff) */
} job_t;

typedef struct planner planner_t;

typedef struct co {
  ck_coordinator_opts_t o;
  ck_mutex_t mu;
  ck_mutex_t plan_mu;   /* one plan at a time (never held with mu) */
  bool refuse_writes;   /* a non-loopback bind without a token: no submit/cancel */
  ck_http_guard_t guard;
  uint64_t epoch;
  int64_t deploy_seq;
  int listen_fd;
  conn_t *conns[MAX_CONNS];
  int nconns;
  worker_t **workers;
  int nworkers;
  job_t **jobs;
  int njobs;
  int64_t next_job_id;
  int lock_fd;
  struct ck_zk *zk;      /* --ha zookeeper://…: the session (ha_zk.c); NULL: none */
  char *zk_path;
  char zk_member[128];   /* this coordinator's member of <path>/leader */
  int zk_fence_version;  /* <path>/epoch's version this leader's write gave it */
  bool deposed;          /* a fenced write was refused: no longer the leader */
  ck_http_t *http;
  planner_t *planners[MAX_PLANNING];
  int nplanners;
  int64_t started_ms, last_tick;
  int64_t checkpoints_completed_total, restarts_total, workers_lost_total;
} co_t;

/* Lookups and slot counts, under co->mu. */
static inline job_t *find_job(co_t *co, int64_t id) {
  for (int i = 0; i < co->njobs; i++)
    if (co->jobs[i]->id == id) return co->jobs[i];
  return NULL;
}

static inline worker_t *find_worker(co_t *co, int num) {
  return num >= 0 && num < co->nworkers ? co->workers[num] : NULL;
}

static inline int slots_used(const co_t *co, int worker) {
  int used = 0;
  for (int j = 0; j < co->njobs; j++) {
    const job_t *job = co->jobs[j];
    if (!job->deployment) continue;
    for (int i = 0; i < job->nparts; i++) {
      if (job->parts[i].worker != worker || job->parts[i].ended) continue;
      for (int s = 0; s < job->plan.nslots; s++) used += job->slot_worker[s] == worker;
    }
  }
  return used;
}

static inline int free_slots(const co_t *co, int worker) {
  const worker_t *w = co->workers[worker];
  if (!w->alive) return 0;
  int f = w->slots - slots_used(co, worker);
  return f > 0 ? f : 0;
}

/* ---- coordinator.c, for rest.c and ha.c */

/* Called WITHOUT co->mu: plans the job (one plan at a time, under co->plan_mu), then takes
 * co->mu, adds and deploys it. Returns with co->mu held: 0 with *id and *guarantee (the
 * job's, valid while co->mu is held), or an error. */
int ck_co_job_plan_add(co_t *co, const char *name, const char *sql, int parallelism,
                       const ck_co_job_opts_t *jo, int64_t *id, const char **guarantee,
                       ck_error_t *err);
/* Called with co->mu held: plans the job WITHOUT co->mu (plan-time checks may wait on the
 * network; planning is serialised by co->plan_mu), then adds and deploys it under co->mu.
 * 0 with *id and *guarantee (the job's, valid while co->mu is held), or an error. */
int ck_co_job_submit(co_t *co, const char *name, const char *sql, int parallelism,
                     const ck_co_job_opts_t *jo, int64_t *id, const char **guarantee,
                     ck_error_t *err);
/* The per-job options' checks (a submission's, before planning): 0, or CK_EINVAL why. */
int ck_co_job_opts_check(const ck_co_job_opts_t *jo, ck_error_t *err);
/* A job name (and a worker id) is 1 to 128 bytes of UTF-8 without control characters. */
int ck_co_job_check_name(const char *name, ck_error_t *err);
/* admit.c: checks a submission and plans its SQL (wire non-NULL: decodes a recovered job's
 * serialised plan; the SQL is then only shown) into a new job without an id, *out the
 * caller's. WITHOUT co->mu; one plan at a time under co->plan_mu. */
int ck_co_job_plan(co_t *co, const char *name, const char *sql, const void *wire,
                   size_t wire_len, int parallelism, const ck_co_job_opts_t *jo, job_t **out,
                   ck_error_t *err);
/* Under co->mu: the worker is lost (its connection closed, or its heartbeats stopped); the
 * jobs it took part in restart. */
void ck_co_worker_lost(co_t *co, worker_t *w, const char *why);
/* Under co->mu: cancels job id (0 when it has ended already), or CK_ENOTFOUND. */
int ck_co_job_cancel(co_t *co, int64_t id, ck_error_t *err);

/* A job an HA takeover found not ended in its manifest. */
typedef struct ck_co_recovered {
  int64_t id;
  int attempt, par;
  char *name, *sql;
  char *capture_dir;    /* the job's per-job options (NULL: none) */
  int64_t capture_records;
  void *plan; /* the serialised job graph (NULL: plan from sql, an older manifest) */
  size_t plan_len;
  struct ck_co_recovered *next;
} ck_co_recovered_t;

/* Runs a recovered job again under its id, counting its restarts from attempt: called
 * WITHOUT co->mu (on the recovery planner thread); builds it from its serialised plan when the
 * manifest has one (sql then only shown), else plans sql; then adds it under co->mu. */
void ck_co_job_recover(co_t *co, int64_t id, const char *name, const char *sql,
                       const void *plan, size_t plan_len, int parallelism, int attempt,
                       const ck_co_job_opts_t *jo);

/* ---- conns.c: the control port's connections (the control loop, under co->mu) */

void ck_co_conns_accept(co_t *co);                 /* accepts what is waiting */
void ck_co_conns_expire(co_t *co, int64_t now);    /* closes silent ones */
void ck_co_conn_close(co_t *co, int i, const char *why); /* co->conns[i] */
void ck_co_on_register(co_t *co, conn_t *c, ck_proto_frame_t *f);
void ck_co_on_cli_frame(co_t *co, conn_t *c, ck_proto_frame_t *f);
/* Joins the planner threads that are done (all of them when wait: at the end). */
void ck_co_planners_reap(co_t *co, bool wait);
/* Under co->mu: plans and adds the recovered jobs on a thread of their own; takes the list. */
void ck_co_planners_recover(co_t *co, ck_co_recovered_t *list);
/* True when every address host names is a loopback one (127.0.0.0/8, ::1, ::ffff:127.x). */
bool ck_co_host_is_loopback(const char *host);

/* ---- ha.c (with --ha-dir; co->o.ha_dir NULL: none of these is called but save_manifest,
 *      which then does nothing) */

/* Takes the leader lock (waiting, standing by, while another coordinator holds it), raises
 * the epoch durably into co->epoch. On the starting thread, before any other runs. */
int ck_co_ha_take(co_t *co, ck_error_t *err);
/* Writes the job's manifest durably (errors are logged: the job goes on). Under co->mu. */
void ck_co_ha_save_manifest(co_t *co, const job_t *job);
/* The jobs the manifests hold that had not ended, in a list (ck_co_planners_recover plans
 * them); fails, in its manifest, one that cannot run again (its credentials were not
 * stored), and raises co->next_job_id above every manifest's id. Under co->mu, at start. */
ck_co_recovered_t *ck_co_ha_recover(co_t *co);

/* ---- ha_zk.c (with --ha zookeeper://…; co->zk NULL: none of these is called) */

/* Stands for leader on ZooKeeper (waiting, standing by, behind the members before this one)
 * and takes the epoch from this coordinator's member; on the starting thread. */
int ck_co_hazk_take(co_t *co, volatile sig_atomic_t *stop, ck_error_t *err);
/* Writes <path>/jobs/<name>, fenced by the epoch node (CK_ESTATE, and co->deposed, when a
 * newer leader took over or the session expired). Under co->mu. */
int ck_co_hazk_write(co_t *co, const char *name, const char *data, size_t len,
                     ck_error_t *err);
/* A manifest read back: its name, where it lives (for messages), its text (the callee may
 * cut it in place). */
typedef void (*ck_co_manifest_fn)(co_t *co, const char *name, const char *where, char *text,
                                  size_t len, void *ctx);
/* Calls fn on every manifest under <path>/jobs. */
int ck_co_hazk_each(co_t *co, ck_co_manifest_fn fn, void *ctx);
/* True when this coordinator (on ZooKeeper) is no longer the leader: its session expired or a
 * fenced write was refused. Any thread. */
bool ck_co_ha_deposed(co_t *co);
/* True when ZooKeeper declared this coordinator's session expired. */
bool ck_co_ha_session_expired(co_t *co);
/* Ends the session (its member goes: a standby takes over at once). */
void ck_co_hazk_release(co_t *co);

/* ---- rest.c */

/* Answers one REST request (libmicrohttpd's threads, or the detached coordinator's caller):
 * takes co->mu for every route but health. */
void ck_co_rest_serve(void *ctx, const ck_http_req_t *req, ck_http_resp_t *resp);
/* {"jobs":[...]}, as GET /api/v1/jobs and the CLI's LIST answer it. Under co->mu. */
void ck_co_rest_jobs_json(co_t *co, ck_buf_t *out);

#endif
