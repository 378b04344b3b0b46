/*
 * DESIGN: see coordinator.h.
 *
 * State: workers (by number, never reused within one coordinator run) and jobs (by id), under
 * co->mu. A job's current deployment has an id that is also the data plane's session (the
 * epoch in its high bits), the worker number of each slot, and per participating worker
 * whether it deployed and whether it ended. Frames of an older deployment are ignored.
 *
 * Job states: CREATED (waiting for slots for its first deployment), RUNNING, RESTARTING
 * (shown as awaiting_restart in the log: the old deployment is being cancelled, or the job
 * waits for capacity), CANCELLING, and the terminal FINISHED, FAILED, CANCELLED.
 */
#include "cluster/coordinator.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/redact.h"
#include "base/thread.h"
#include "base/time.h"
#include "checkpoint/coord.h"
#include "checkpoint/lineage.h"
#include "cluster/http.h"
#include "cluster/jobplan.h"
#include "cluster/opmetrics.h"
#include "cluster/proto.h"
#include "runtime/metrics.h"
#include "sql/planner.h"

#define LOG_WATCH "coordinator.watchdog"
#define LOG_RESTART "coordinator.restart"
#define LOG_CO "coordinator"
#define MAX_CONNS 256
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

static const char *const status_names[] = {"CREATED",    "RUNNING",  "RESTARTING", "CANCELLING",
                                           "FINISHED",   "FAILED",   "CANCELLED"};

static bool terminal(job_status_t s) { return s >= JOB_FINISHED; }

typedef enum { CONN_NEW, CONN_WORKER, CONN_CLI } conn_kind_t;

typedef struct conn {
  ck_proto_conn_t pc;
  conn_kind_t kind;
  int worker; /* CONN_WORKER: its number */
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

typedef struct job {
  int64_t id;
  char *name, *sql, *error, *guarantee;
  int parallelism;
  job_status_t status;
  int attempt;            /* restarts so far (lifetime) */
  int error_count;
  ck_jobplan_t plan;
  char dir[PATH_MAX];     /* its checkpoint directory */
  ck_store_t store;
  bool store_open;
  ck_ckpt_coord_t ck;
  int64_t used_ids;       /* highest checkpoint id any deployment handed out */
  int64_t restore_id;     /* of the current deployment */
  int64_t rewind_below;   /* next deployment restores below this (a sink's lost commit) */
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

typedef struct co {
  ck_coordinator_opts_t o;
  ck_mutex_t mu;
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
  ck_http_t *http;
  int64_t started_ms, last_tick;
  int64_t checkpoints_completed_total, restarts_total, workers_lost_total;
} co_t;

/* ================================================================ HA: epoch, manifests */

static int write_durable(const char *path, const char *data, size_t n, ck_error_t *err) {
  char tmp[PATH_MAX + 8];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ck_error_set(err, CK_EIO, "could not write '%s': %s", tmp, strerror(errno));
  bool ok = write(fd, data, n) == (ssize_t)n && fsync(fd) == 0;
  close(fd);
  if (!ok || rename(tmp, path))
    return ck_error_set(err, CK_EIO, "could not write '%s': %s", path, strerror(errno));
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) {
    *slash = 0;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) fsync(dfd), close(dfd);
  }
  return 0;
}

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  ck_buf_t b;
  ck_buf_init(&b);
  char chunk[8192];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) ck_buf_append(&b, chunk, n);
  fclose(f);
  if (!b.data) ck_buf_reserve(&b, 0), b.data[0] = 0;
  return ck_buf_detach(&b);
}

static void manifest_path(const co_t *co, int64_t id, char *out, size_t n) {
  snprintf(out, n, "%s/jobs/job-%lld.manifest", co->o.ha_dir, (long long)id);
}

/* The job's manifest: what a coordinator taking over needs to run it again. The SQL is stored
 * redacted (base/redact.h): a credential written inline never reaches the disk. Such a job
 * ("redacted 1") cannot be run again from its manifest; recover_jobs fails it, saying why. */
static void save_manifest(co_t *co, const job_t *job) {
  if (!co->o.ha_dir) return;
  ck_buf_t sql;
  ck_buf_init(&sql);
  bool redacted = ck_redact_sql(job->sql, strlen(job->sql), &sql, NULL);
  ck_buf_t b;
  ck_buf_init(&b);
  ck_buf_printf(&b, "clink-job 1\nid %lld\nparallelism %d\nstatus %s\nattempt %d\n%sname ",
                (long long)job->id, job->parallelism, status_names[job->status], job->attempt,
                redacted ? "redacted 1\n" : "");
  ck_buf_puts(&b, job->name);
  ck_buf_puts(&b, "\nsql\n");
  ck_buf_puts(&b, sql.data);
  ck_buf_fini(&sql);
  char path[PATH_MAX];
  manifest_path(co, job->id, path, sizeof path);
  ck_error_t err;
  ck_error_clear(&err);
  if (write_durable(path, b.data, b.len, &err))
    CK_LOG_ERR(LOG_CO, "job_id=%lld: %s", (long long)job->id, err.message);
  ck_buf_fini(&b);
}

static int take_ha_dir(co_t *co, ck_error_t *err) {
  char path[PATH_MAX];
  mkdir(co->o.ha_dir, 0755);
  snprintf(path, sizeof path, "%s/jobs", co->o.ha_dir);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/leader.lock", co->o.ha_dir);
  co->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (co->lock_fd < 0)
    return ck_error_set(err, CK_EIO, "could not open the leader lock '%s': %s", path,
                        strerror(errno));
  if (flock(co->lock_fd, LOCK_EX | LOCK_NB)) {
    CK_LOG_INFO(LOG_CO, "another coordinator holds the leader lock '%s': standing by", path);
    if (flock(co->lock_fd, LOCK_EX))
      return ck_error_set(err, CK_EIO, "could not take the leader lock '%s': %s", path,
                          strerror(errno));
  }
  snprintf(path, sizeof path, "%s/epoch", co->o.ha_dir);
  char *text = read_text(path);
  uint64_t epoch = text ? strtoull(text, NULL, 10) : 0;
  ck_free(text);
  co->epoch = epoch + 1;
  char num[32];
  int n = snprintf(num, sizeof num, "%llu\n", (unsigned long long)co->epoch);
  int rc = write_durable(path, num, (size_t)n, err);
  if (rc) return rc;
  CK_LOG_INFO(LOG_CO, "leader of HA directory '%s' with epoch %llu", co->o.ha_dir,
              (unsigned long long)co->epoch);
  return 0;
}

/* ================================================================ jobs */

static job_t *find_job(co_t *co, int64_t id) {
  for (int i = 0; i < co->njobs; i++)
    if (co->jobs[i]->id == id) return co->jobs[i];
  return NULL;
}

static worker_t *find_worker(co_t *co, int num) {
  return num >= 0 && num < co->nworkers ? co->workers[num] : NULL;
}

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

static int slots_used(const co_t *co, int worker) {
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

static int free_slots(const co_t *co, int worker) {
  const worker_t *w = co->workers[worker];
  if (!w->alive) return 0;
  int f = w->slots - slots_used(co, worker);
  return f > 0 ? f : 0;
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

static void finish_job(co_t *co, job_t *job, job_status_t status, const char *why) {
  if (job->store_open) {
    if (job->ck.last_completed > job->used_ids) job->used_ids = job->ck.last_completed;
    if (job->ck.next_id > job->used_ids) job->used_ids = job->ck.next_id;
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
  if (status == JOB_FINISHED && job->input_ended) {
    ck_error_t err;
    ck_error_clear(&err);
    if (ck_lineage_clean_finish(job->dir, &err))
      CK_LOG_WARN(LOG_CO, "job_id=%lld: %s", (long long)job->id, err.message);
  }
  save_manifest(co, job);
}

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

  /* the restore point: the same rule as an embedded rerun */
  ck_lineage_t lin;
  ck_error_t err;
  ck_error_clear(&err);
  int rc = job->rewind_below
               ? ck_lineage_begin_below(job->dir, job->plan.desc.data, job->parallelism,
                                        job->rewind_below, job->plan.ntasks, &lin, &err)
               : ck_lineage_begin(job->dir, job->plan.desc.data, job->parallelism, false,
                                  job->plan.ntasks, &lin, &err);
  if (rc) {
    clear_deployment(job);
    finish_job(co, job, JOB_FAILED, err.message);
    return true;
  }
  job->rewind_below = 0;
  int64_t ids_above = lin.ids_above > job->used_ids ? lin.ids_above : job->used_ids;
  job->restore_id = lin.restore_id;
  if (job->attempt > 0 || job->status == JOB_RESTARTING) {
    int survivors = 0;
    for (int i = 0; i < co->nworkers; i++) survivors += co->workers[i]->alive;
    CK_LOG_INFO(LOG_RESTART, "job_id=%lld attempt=%d survivors=%d tasks=%d", (long long)job->id,
                job->attempt, survivors, job->plan.ntasks);
  }
  if (lin.restore_id)
    CK_LOG_INFO(LOG_RESTART, "job_id=%lld restore point: checkpoint %lld (latest_completed=%lld "
                "latest_confirmed=%lld tracked=%lld)", (long long)job->id,
                (long long)lin.restore_id, (long long)lin.latest_completed,
                (long long)lin.latest_confirmed, (long long)lin.run_base);
  else
    CK_LOG_INFO(LOG_RESTART, "job_id=%lld starting fresh (%s); new checkpoints are numbered "
                "above %lld", (long long)job->id, lin.why, (long long)ids_above);
  if (!job->store_open) {
    if (ck_store_open(job->dir, &job->store, &err)) {
      clear_deployment(job);
      finish_job(co, job, JOB_FAILED, err.message);
      return true;
    }
    job->store_open = true;
  }
  ck_ckpt_coord_init(&job->ck, &job->store, job->plan.ntasks, job->plan.nsinks,
                     job->plan.nsources, ids_above, lin.restore_id,
                     co->o.checkpoint_interval_ms, 0, 0, ck_mono_ms());
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
    ck_proto_put_str(&p, job->sql);
    ck_proto_put_u32(&p, (uint32_t)job->parallelism);
    ck_proto_put_u32(&p, (uint32_t)job->plan.graph->max_parallelism);
    ck_proto_put_str(&p, job->dir);
    ck_proto_put_i64(&p, lin.restore_id);
    ck_proto_put_i64(&p, ids_above);
    ck_proto_put_i64(&p, (int64_t)job->plan.fingerprint);
    ck_proto_put_u32(&p, (uint32_t)job->parts[i].worker);
    ck_proto_put_u32(&p, (uint32_t)job->plan.nslots);
    for (int s = 0; s < job->plan.nslots; s++) ck_proto_put_u32(&p, (uint32_t)job->slot_worker[s]);
    send_to(co, job->parts[i].worker, CK_PROTO_DEPLOY, &p);
  }
  ck_buf_fini(&p);
  job->status = JOB_RUNNING;
  save_manifest(co, job);
  return true;
}

/* The current deployment cannot go on: cancel it everywhere, and restart the job from its
 * restore point once every worker stopped it (or the budget is spent: fail). */
static void restart(co_t *co, job_t *job, const char *why, bool counts) {
  if (terminal(job->status) || job->status == JOB_CANCELLING) return;
  if (job->store_open && job->ck.next_id > job->used_ids) job->used_ids = job->ck.next_id;
  if (counts) {
    job->attempt++;
    co->restarts_total++;
    set_error(job, why);
  }
  if (job->attempt > co->o.max_restarts) {
    for (int i = 0; i < job->nparts; i++) job->parts[i].ended = true; /* after the cancel */
    send_deployment(co, job, CK_PROTO_CANCEL, 0, 0, false);
    char msg[CK_ERR_MSG];
    snprintf(msg, sizeof msg, "gave up after %d restarts; the last failure: %s",
             co->o.max_restarts, why);
    finish_job(co, job, JOB_FAILED, msg);
    return;
  }
  int drain = 0;
  for (int i = 0; i < job->nparts; i++) {
    worker_t *w = find_worker(co, job->parts[i].worker);
    if (!w || !w->alive) job->parts[i].ended = true;
    drain += !job->parts[i].ended;
  }
  CK_LOG_INFO(LOG_WATCH, "job_id=%lld awaiting_restart (attempt %d/%d) drain_expected=%d: %s",
              (long long)job->id, job->attempt, co->o.max_restarts, drain, why);
  if (job->deployment) send_deployment(co, job, CK_PROTO_CANCEL, 0, 0, false);
  job->status = JOB_RESTARTING;
  job->cancel_deadline = ck_mono_ms() + CANCEL_WAIT_MS;
  /* the first restart at once; later ones back off a little more each time */
  job->restart_at = ck_mono_ms() + (counts && job->attempt > 1 ? 100LL * (job->attempt - 1) : 0);
  save_manifest(co, job);
}

static void worker_lost(co_t *co, worker_t *w, const char *why) {
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
        restart(co, job, msg, job->status != JOB_RESTARTING);
        break;
      }
  }
}

/* Submits a job: plans it (refusing bad SQL with its position), states its guarantee. */
static int submit(co_t *co, const char *name, const char *sql, int parallelism, int64_t *id,
                  ck_error_t *err) {
  if (parallelism < 1 || parallelism > 4096)
    return ck_error_set(err, CK_EINVAL, "parallelism must be from 1 to 4096, not %d",
                        parallelism);
  job_t *job = ck_calloc(1, sizeof *job);
  char fname[256];
  snprintf(fname, sizeof fname, "%s", name && *name ? name : "<submitted>");
  int rc = ck_jobplan_init(&job->plan, sql, fname, parallelism, 128, err);
  if (rc) {
    ck_free(job);
    return rc;
  }
  job->id = co->next_job_id++;
  job->parallelism = parallelism;
  size_t n = strlen(sql);
  job->sql = ck_malloc(n + 1);
  memcpy(job->sql, sql, n + 1);
  char defname[64];
  snprintf(defname, sizeof defname, "job-%lld", (long long)job->id);
  const char *nm = name && *name ? name : defname;
  job->name = ck_malloc(strlen(nm) + 1);
  memcpy(job->name, nm, strlen(nm) + 1);
  snprintf(job->dir, sizeof job->dir, "%s/job-%lld", co->o.checkpoint_dir, (long long)job->id);
  ck_buf_t g;
  ck_buf_init(&g);
  ck_graph_guarantee(job->plan.graph, true, &g);
  job->guarantee = ck_buf_detach(&g);
  job->status = JOB_CREATED;
  co->jobs = ck_realloc(co->jobs, sizeof *co->jobs * (size_t)(co->njobs + 1));
  co->jobs[co->njobs++] = job;
  CK_LOG_INFO("coordinator.guarantee", "job_id=%lld job delivery guarantee: %s",
              (long long)job->id, job->guarantee);
  CK_LOG_INFO(LOG_CO, "job_id=%lld submitted: '%s', parallelism %d, %d task(s)",
              (long long)job->id, job->name, parallelism, job->plan.ntasks);
  save_manifest(co, job);
  deploy(co, job);
  *id = job->id;
  return 0;
}

static int cancel_job(co_t *co, int64_t id, ck_error_t *err) {
  job_t *job = find_job(co, id);
  if (!job) return ck_error_set(err, CK_ENOTFOUND, "no job %lld", (long long)id);
  if (terminal(job->status)) return 0;
  CK_LOG_INFO(LOG_CO, "job_id=%lld cancelling", (long long)id);
  if (!job->deployment) {
    finish_job(co, job, JOB_CANCELLED, NULL);
    return 0;
  }
  send_deployment(co, job, CK_PROTO_CANCEL, 0, 0, false);
  job->status = JOB_CANCELLING;
  job->cancel_deadline = ck_mono_ms() + CANCEL_WAIT_MS;
  return 0;
}

/* Rewrites a manifest with status FAILED, so no later takeover tries the job again. */
static void mark_unrecoverable(co_t *co, const char *path) {
  char *text = read_text(path); /* whole: the caller's copy was cut at its SQL */
  const char *st = text ? strstr(text, "\nstatus ") : NULL;
  if (!st) {
    ck_free(text);
    return;
  }
  const char *eol = strchr(st + 1, '\n');
  ck_buf_t b;
  ck_buf_init(&b);
  ck_buf_append(&b, text, (size_t)(st - text));
  ck_buf_puts(&b, "\nstatus FAILED");
  if (eol) ck_buf_puts(&b, eol);
  ck_error_t err;
  ck_error_clear(&err);
  if (write_durable(path, b.data, b.len, &err)) CK_LOG_ERR(LOG_CO, "%s", err.message);
  ck_buf_fini(&b);
  ck_free(text);
  (void)co;
}

/* Loads the jobs a previous coordinator left in the HA directory. */
static void recover_jobs(co_t *co) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/jobs", co->o.ha_dir);
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    long long id;
    char tail[16];
    if (sscanf(e->d_name, "job-%lld.%15s", &id, tail) != 2 || strcmp(tail, "manifest")) continue;
    char path[PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    char *text = read_text(path);
    if (!text) continue;
    int par = 1, attempt = 0;
    char status[32] = "";
    char *sql = strstr(text, "\nsql\n");
    char *name = strstr(text, "\nname ");
    char *p;
    if ((p = strstr(text, "\nparallelism "))) par = atoi(p + 13);
    if ((p = strstr(text, "\nattempt "))) attempt = atoi(p + 9);
    if ((p = strstr(text, "\nstatus "))) sscanf(p + 8, "%31s", status);
    if (!sql || !name || strncmp(text, "clink-job 1\n", 12)) {
      CK_LOG_WARN(LOG_CO, "ignoring the unreadable job manifest '%s'", path);
      ck_free(text);
      continue;
    }
    *sql = 0;
    char *nl = strchr(name + 6, '\n');
    if (nl) *nl = 0;
    if (id >= co->next_job_id) co->next_job_id = id + 1;
    bool done = !strcmp(status, "FINISHED") || !strcmp(status, "FAILED") ||
                !strcmp(status, "CANCELLED");
    if (done) {
      ck_free(text);
      continue;
    }
    if (strstr(text, "\nredacted 1\n")) { /* its credentials were never stored */
      CK_LOG_ERR(LOG_CO, "could not recover job %lld ('%s'): its SQL holds credentials, which "
                 "the HA manifest does not keep; submit it again, giving them through "
                 "password_env (read where the job runs) so a takeover can rerun it", id,
                 name + 6);
      mark_unrecoverable(co, path);
      ck_free(text);
      continue;
    }
    int64_t save_next = co->next_job_id;
    co->next_job_id = id;
    int64_t got;
    ck_error_t err;
    ck_error_clear(&err);
    co->o.max_restarts += 0;
    if (submit(co, name + 6, sql + 5, par, &got, &err)) {
      CK_LOG_ERR(LOG_CO, "could not recover job %lld: %s", id, err.message);
    } else {
      job_t *job = find_job(co, got);
      job->attempt = attempt;
      CK_LOG_INFO(LOG_CO, "job_id=%lld recovered from the HA directory", (long long)got);
      if (job->status == JOB_CREATED) job->status = JOB_RESTARTING;
    }
    co->next_job_id = save_next > co->next_job_id ? save_next : co->next_job_id;
    ck_free(text);
  }
  closedir(d);
}

/* New jobs get ids above every job-<id> directory already in the checkpoint directory: a new
 * submission must never resume (or be refused by) the checkpoints of an earlier job that had
 * the same id under a coordinator without --ha-dir. */
static void skip_used_job_ids(co_t *co) {
  DIR *d = opendir(co->o.checkpoint_dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    long long id;
    char tail;
    if (sscanf(e->d_name, "job-%lld%c", &id, &tail) == 1 && id >= co->next_job_id &&
        !find_job(co, id))
      co->next_job_id = id + 1;
  }
  closedir(d);
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
  ck_buf_t p;
  ck_buf_init(&p);
  ck_proto_put_i64(&p, job->deployment);
  ck_proto_put_u32(&p, (uint32_t)co->nworkers);
  for (int w = 0; w < co->nworkers; w++) {
    part_t *pt = part_of(job, w);
    ck_proto_put_str(&p, co->workers[w]->host);
    ck_proto_put_u32(&p, pt ? (uint32_t)pt->data_port : 0);
  }
  for (int i = 0; i < job->nparts; i++) send_to(co, job->parts[i].worker, CK_PROTO_START, &p);
  ck_buf_fini(&p);
  job->started = true;
  job->ck.next_at = ck_mono_ms() + job->ck.interval_ms;
  CK_LOG_INFO(LOG_CO, "job_id=%lld running on %d worker(s)", (long long)job->id, job->nparts);
}

/* A participant stopped its part of the deployment. */
static void part_ended(co_t *co, job_t *job, part_t *pt, int rc, bool retriable,
                       const char *error) {
  pt->ended = true;
  if (job->status == JOB_RUNNING && rc) {
    if (rc == CK_EREWIND && job->restore_id > 0) {
      CK_LOG_WARN(LOG_RESTART, "job_id=%lld: %s; restoring the checkpoint before %lld",
                  (long long)job->id, error, (long long)job->restore_id);
      job->rewind_below = job->restore_id;
      restart(co, job, error, false);
    } else if (retriable || rc == CK_EIO || rc == CK_ECONNECT || rc == CK_ETIMEOUT ||
               rc == CK_ECANCELLED) {
      restart(co, job, error, true);
    } else {
      for (int i = 0; i < job->nparts; i++)
        if (!job->parts[i].ended) {
          send_deployment(co, job, CK_PROTO_CANCEL, 0, 0, false);
          break;
        }
      finish_job(co, job, JOB_FAILED, error);
    }
    return;
  }
  for (int i = 0; i < job->nparts; i++)
    if (!job->parts[i].ended) return;
  if (job->status == JOB_RUNNING) finish_job(co, job, JOB_FINISHED, NULL);
  else if (job->status == JOB_CANCELLING) finish_job(co, job, JOB_CANCELLED, NULL);
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
        send_deployment(co, job, CK_PROTO_COMMIT, id, 0, false);
      } else if (rc < 0) {
        restart(co, job, err.message, true);
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
        if (last > job->used_ids) job->used_ids = last;
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

static void reply(conn_t *c, int rc, int64_t value, const char *text) {
  ck_buf_t p;
  ck_buf_init(&p);
  ck_proto_put_u32(&p, (uint32_t)rc);
  ck_proto_put_i64(&p, value);
  ck_proto_put_str(&p, text);
  (void)ck_proto_send(&c->pc, CK_PROTO_REPLY, 0, &p, NULL);
  ck_buf_fini(&p);
}

static void jobs_json(co_t *co, ck_buf_t *out);

static void on_cli_frame(co_t *co, conn_t *c, ck_proto_frame_t *f) {
  ck_proto_reader_t *r = &f->body;
  ck_error_t err;
  ck_error_clear(&err);
  if (f->type == CK_PROTO_SUBMIT) {
    char *name = ck_proto_str(r), *sql = ck_proto_str(r);
    int par = (int)ck_proto_u32(r);
    int64_t id = 0;
    int rc = r->bad ? ck_error_set(&err, CK_EPROTO, "a malformed SUBMIT frame")
                    : submit(co, name, sql, par, &id, &err);
    job_t *job = rc ? NULL : find_job(co, id);
    reply(c, rc, id, rc ? err.message : job->guarantee);
    ck_free(name);
    ck_free(sql);
  } else if (f->type == CK_PROTO_LIST) {
    ck_buf_t b;
    ck_buf_init(&b);
    jobs_json(co, &b);
    reply(c, 0, co->njobs, b.data);
    ck_buf_fini(&b);
  } else if (f->type == CK_PROTO_CANCEL_JOB) {
    int64_t id = ck_proto_i64(r);
    int rc = cancel_job(co, id, &err);
    reply(c, rc, id, rc ? err.message : "cancelling");
  } else {
    reply(c, CK_EPROTO, 0, "unexpected frame");
  }
}

static void on_register(co_t *co, conn_t *c, ck_proto_frame_t *f) {
  ck_proto_reader_t *r = &f->body;
  char *id = ck_proto_str(r);
  int slots = (int)ck_proto_u32(r);
  char *host = ck_proto_str(r);
  int http_port = (int)ck_proto_u32(r), pid = (int)ck_proto_u32(r);
  if (r->bad || slots < 1 || !*id) {
    ck_free(id);
    ck_free(host);
    reply(c, CK_EPROTO, 0, "a malformed REGISTER frame");
    return;
  }
  /* a worker id registering again replaces its lost (or stale) self */
  for (int i = 0; i < co->nworkers; i++) {
    worker_t *old = co->workers[i];
    if (old->alive && !strcmp(old->id, id)) {
      if (old->conn) old->conn->kind = CONN_NEW, old->conn->worker = -1;
      worker_lost(co, old, "registered again");
      old->conn = NULL;
    }
  }
  worker_t *w = ck_calloc(1, sizeof *w);
  w->num = co->nworkers;
  w->id = id;
  w->host = host;
  w->slots = slots;
  w->http_port = http_port;
  w->pid = pid;
  w->conn = c;
  w->alive = true;
  w->last_hb = w->registered_at = ck_mono_ms();
  co->workers = ck_realloc(co->workers, sizeof *co->workers * (size_t)(co->nworkers + 1));
  co->workers[co->nworkers++] = w;
  c->kind = CONN_WORKER;
  c->worker = w->num;
  ck_buf_t p;
  ck_buf_init(&p);
  ck_proto_put_u32(&p, (uint32_t)w->num);
  ck_proto_put_u32(&p, (uint32_t)co->o.heartbeat_ms);
  (void)ck_proto_send(&c->pc, CK_PROTO_REGISTERED, co->epoch, &p, NULL);
  ck_buf_fini(&p);
  CK_LOG_INFO(LOG_CO, "worker registered: %s (%d slot%s, pid %d)", id, slots,
              slots == 1 ? "" : "s", pid);
}

static void close_conn(co_t *co, int i, const char *why) {
  conn_t *c = co->conns[i];
  if (c->kind == CONN_WORKER) {
    worker_t *w = find_worker(co, c->worker);
    if (w && w->conn == c) {
      worker_lost(co, w, why);
      w->conn = NULL;
    }
  }
  ck_proto_conn_fini(&c->pc);
  ck_free(c);
  co->conns[i] = co->conns[--co->nconns];
}

/* ================================================================ timers */

static void tick(co_t *co) {
  int64_t now = ck_mono_ms();
  int64_t limit = (int64_t)co->o.heartbeat_ms * co->o.missed_heartbeats;
  /* this loop itself was held up (a submission's plan-time checks reach out to ClickHouse):
   * heartbeats that arrived meanwhile are still unread, which is not the workers' fault */
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
      worker_lost(co, w, why);
      for (int k = 0; k < co->nconns; k++)
        if (co->conns[k] == w->conn) {
          w->conn->kind = CONN_NEW;
          close_conn(co, k, why);
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
      if (id) send_deployment(co, job, CK_PROTO_TRIGGER, id, final, true);
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
      if (job->deployment) clear_deployment(job);
      if (now >= job->restart_at) deploy(co, job);
    }
  }
}

/* ================================================================ REST */

static void job_json(co_t *co, const job_t *job, ck_buf_t *out) {
  ck_buf_printf(out, "{\"id\":%lld,\"name\":", (long long)job->id);
  ck_buf_put_json_str(out, job->name, strlen(job->name));
  ck_buf_printf(out, ",\"status\":\"%s\",\"error_count\":%d,\"restarts\":%d,\"parallelism\":%d,"
                "\"tasks\":%d,\"guarantee\":", status_names[job->status], job->error_count,
                job->attempt, job->parallelism, job->plan.ntasks);
  ck_buf_put_json_str(out, job->guarantee, strlen(job->guarantee));
  ck_buf_printf(out, ",\"last_checkpoint\":%lld,\"restore_point\":%lld,\"error\":",
                (long long)(job->store_open ? job->ck.last_completed : 0),
                (long long)job->restore_id);
  if (job->error) ck_buf_put_json_str(out, job->error, strlen(job->error));
  else ck_buf_puts(out, "null");
  ck_buf_puts(out, ",\"workers\":[");
  for (int i = 0; i < job->nparts; i++) {
    worker_t *w = find_worker(co, job->parts[i].worker);
    if (i) ck_buf_putc(out, ',');
    ck_buf_put_json_str(out, w->id, strlen(w->id));
  }
  ck_buf_puts(out, "]}");
}

static void jobs_json(co_t *co, ck_buf_t *out) {
  ck_buf_puts(out, "{\"jobs\":[");
  for (int j = 0; j < co->njobs; j++) {
    if (j) ck_buf_putc(out, ',');
    job_json(co, co->jobs[j], out);
  }
  ck_buf_puts(out, "]}");
}

static job_t *route_job(co_t *co, const char *const *params, ck_http_resp_t *resp) {
  int64_t id;
  if (ck_http_param_id(params[0], &id)) {
    ck_http_error(resp, 400, "'%s' is not a job id", params[0]);
    return NULL;
  }
  job_t *job = find_job(co, id);
  if (!job) ck_http_error(resp, 404, "no job %lld", (long long)id);
  return job;
}

static void r_health(void *ctx, const ck_http_req_t *req, const char *const *params,
                     ck_http_resp_t *resp) {
  co_t *co = ctx;
  ck_buf_printf(&resp->body, "{\"status\":\"ok\",\"role\":\"coordinator\",\"epoch\":%llu}",
                (unsigned long long)co->epoch);
}

static void r_jobs(void *ctx, const ck_http_req_t *req, const char *const *params,
                   ck_http_resp_t *resp) {
  jobs_json(ctx, &resp->body);
}

static void r_job(void *ctx, const ck_http_req_t *req, const char *const *params,
                  ck_http_resp_t *resp) {
  job_t *job = route_job(ctx, params, resp);
  if (job) job_json(ctx, job, &resp->body);
}

static void r_operators(void *ctx, const ck_http_req_t *req, const char *const *params,
                        ck_http_resp_t *resp) {
  co_t *co = ctx;
  job_t *job = route_job(co, params, resp);
  if (!job) return;
  ck_buf_printf(&resp->body, "{\"id\":%lld,\"status\":\"%s\",\"operators\":[",
                (long long)job->id, status_names[job->status]);
  bool first = true;
  for (int i = 0; i < job->nparts; i++) {
    const char *m = job->parts[i].metrics;
    if (!m || strlen(m) < 3) continue; /* "[]" */
    worker_t *w = find_worker(co, job->parts[i].worker);
    /* the worker's array, each object tagged with the worker's id */
    const char *p = m + 1;
    while (*p && *p != ']') {
      const char *end = strchr(p, '}');
      if (!end) break;
      if (!first) ck_buf_putc(&resp->body, ',');
      first = false;
      ck_buf_append(&resp->body, p, (size_t)(end - p));
      ck_buf_puts(&resp->body, ",\"worker\":");
      ck_buf_put_json_str(&resp->body, w->id, strlen(w->id));
      ck_buf_putc(&resp->body, '}');
      p = end + 1;
      if (*p == ',') p++;
    }
  }
  ck_buf_puts(&resp->body, "]}");
}

static void r_checkpoints(void *ctx, const ck_http_req_t *req, const char *const *params,
                          ck_http_resp_t *resp) {
  job_t *job = route_job(ctx, params, resp);
  if (!job) return;
  const ck_ckpt_coord_t *c = &job->ck;
  bool open = job->store_open;
  ck_buf_printf(&resp->body, "{\"id\":%lld,\"directory\":", (long long)job->id);
  ck_buf_put_json_str(&resp->body, job->dir, strlen(job->dir));
  ck_buf_printf(&resp->body, ",\"latest_completed\":%lld,\"latest_confirmed\":%lld,"
                "\"in_flight\":%lld,\"completed_this_run\":%lld,\"restore_point\":%lld,"
                "\"checkpoints\":[", (long long)(open ? c->last_completed : 0),
                (long long)(open ? c->last_confirmed : 0), (long long)(open ? c->pending : 0),
                (long long)(open ? c->completed_count : 0), (long long)job->restore_id);
  bool first = true;
  if (open) {
    int64_t hi = c->last_completed;
    for (int64_t id = hi; id > 0 && id > hi - 10; id--) {
      bool done = ck_store_marked(&job->store, "completed", id);
      if (!done) continue;
      bool conf = ck_store_marked(&job->store, "confirmed", id);
      if (!first) ck_buf_putc(&resp->body, ',');
      first = false;
      ck_buf_printf(&resp->body, "{\"id\":%lld,\"status\":\"%s\"}", (long long)id,
                    conf ? "CONFIRMED" : "COMPLETED");
    }
  }
  ck_buf_puts(&resp->body, "]}");
}

static void r_workers(void *ctx, const ck_http_req_t *req, const char *const *params,
                      ck_http_resp_t *resp) {
  co_t *co = ctx;
  int64_t now = ck_mono_ms();
  ck_buf_puts(&resp->body, "{\"workers\":[");
  bool first = true;
  for (int i = 0; i < co->nworkers; i++) {
    worker_t *w = co->workers[i];
    if (!first) ck_buf_putc(&resp->body, ',');
    first = false;
    ck_buf_puts(&resp->body, "{\"id\":");
    ck_buf_put_json_str(&resp->body, w->id, strlen(w->id));
    ck_buf_printf(&resp->body, ",\"status\":\"%s\",\"slots\":%d,\"free_slots\":%d,\"pid\":%d,"
                  "\"last_heartbeat_ms_ago\":%lld}", w->alive ? "REGISTERED" : "LOST", w->slots,
                  free_slots(co, i), w->pid, (long long)(now - w->last_hb));
  }
  ck_buf_puts(&resp->body, "]}");
}

/* A tiny reader for the submit body: {"sql": "...", "name": "...", "parallelism": 2}. */
static const char *json_skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

static const char *json_string(const char *p, ck_buf_t *out) {
  if (*p != '"') return NULL;
  for (p++; *p && *p != '"'; p++) {
    if (*p != '\\') {
      ck_buf_putc(out, *p);
      continue;
    }
    p++;
    switch (*p) {
      case 'n': ck_buf_putc(out, '\n'); break;
      case 't': ck_buf_putc(out, '\t'); break;
      case 'r': ck_buf_putc(out, '\r'); break;
      case 'b': ck_buf_putc(out, '\b'); break;
      case 'f': ck_buf_putc(out, '\f'); break;
      case 'u': {
        unsigned v = 0;
        for (int i = 1; i <= 4; i++) {
          char h = p[i];
          if (!h) return NULL;
          v = v * 16 + (unsigned)(h >= 'a' ? h - 'a' + 10 : h >= 'A' ? h - 'A' + 10 : h - '0');
        }
        p += 4;
        if (v < 0x80) ck_buf_putc(out, (char)v);
        else if (v < 0x800) {
          ck_buf_putc(out, (char)(0xc0 | (v >> 6)));
          ck_buf_putc(out, (char)(0x80 | (v & 0x3f)));
        } else {
          ck_buf_putc(out, (char)(0xe0 | (v >> 12)));
          ck_buf_putc(out, (char)(0x80 | ((v >> 6) & 0x3f)));
          ck_buf_putc(out, (char)(0x80 | (v & 0x3f)));
        }
        break;
      }
      case 0: return NULL;
      default: ck_buf_putc(out, *p);
    }
  }
  if (*p != '"') return NULL;
  if (!out->data) ck_buf_reserve(out, 0), out->data[0] = 0;
  return p + 1;
}

static int parse_submit(const char *body, ck_buf_t *sql, ck_buf_t *name, int *par,
                        char *why, size_t whylen) {
  const char *p = json_skip_ws(body);
  if (*p != '{') return snprintf(why, whylen, "the body must be a JSON object"), -1;
  p = json_skip_ws(p + 1);
  while (*p && *p != '}') {
    ck_buf_t key;
    ck_buf_init(&key);
    p = json_string(p, &key);
    if (!p) {
      ck_buf_fini(&key);
      return snprintf(why, whylen, "malformed JSON: expected a quoted key"), -1;
    }
    p = json_skip_ws(p);
    if (*p != ':') {
      ck_buf_fini(&key);
      return snprintf(why, whylen, "malformed JSON: expected ':'"), -1;
    }
    p = json_skip_ws(p + 1);
    if (!strcmp(key.data, "sql") || !strcmp(key.data, "name")) {
      ck_buf_t *dst = key.data[0] == 's' ? sql : name;
      ck_buf_reset(dst);
      p = json_string(p, dst);
      if (!p) {
        snprintf(why, whylen, "'%s' must be a JSON string", key.data);
        ck_buf_fini(&key);
        return -1;
      }
    } else if (!strcmp(key.data, "parallelism")) {
      char *end;
      long v = strtol(p, &end, 10);
      if (end == p || v < 1 || v > 4096) {
        ck_buf_fini(&key);
        return snprintf(why, whylen, "'parallelism' must be a whole number from 1 to 4096"), -1;
      }
      *par = (int)v;
      p = end;
    } else {
      snprintf(why, whylen, "unknown field '%s' (expected sql, name, parallelism)", key.data);
      ck_buf_fini(&key);
      return -1;
    }
    ck_buf_fini(&key);
    p = json_skip_ws(p);
    if (*p == ',') p = json_skip_ws(p + 1);
    else if (*p != '}') return snprintf(why, whylen, "malformed JSON: expected ',' or '}'"), -1;
  }
  if (*p != '}') return snprintf(why, whylen, "malformed JSON: unterminated object"), -1;
  if (!sql->len) return snprintf(why, whylen, "the body needs a non-empty \"sql\""), -1;
  return 0;
}

static void r_submit(void *ctx, const ck_http_req_t *req, const char *const *params,
                     ck_http_resp_t *resp) {
  co_t *co = ctx;
  ck_buf_t sql, name;
  ck_buf_init(&sql);
  ck_buf_init(&name);
  int par = 1;
  char why[256];
  if (parse_submit(req->body, &sql, &name, &par, why, sizeof why)) {
    ck_http_error(resp, 400, "%s", why);
  } else {
    ck_error_t err;
    ck_error_clear(&err);
    int64_t id;
    if (submit(co, name.data, sql.data, par, &id, &err)) {
      ck_http_error(resp, 400, "%s", err.message);
    } else {
      resp->status = 201;
      job_t *job = find_job(co, id);
      ck_buf_printf(&resp->body, "{\"id\":%lld,\"guarantee\":", (long long)id);
      ck_buf_put_json_str(&resp->body, job->guarantee, strlen(job->guarantee));
      ck_buf_putc(&resp->body, '}');
    }
  }
  ck_buf_fini(&sql);
  ck_buf_fini(&name);
}

static void r_cancel(void *ctx, const ck_http_req_t *req, const char *const *params,
                     ck_http_resp_t *resp) {
  co_t *co = ctx;
  job_t *job = route_job(co, params, resp);
  if (!job) return;
  ck_error_t err;
  ck_error_clear(&err);
  cancel_job(co, job->id, &err);
  ck_buf_printf(&resp->body, "{\"id\":%lld,\"status\":\"%s\"}", (long long)job->id,
                status_names[job->status]);
}

static void r_metrics(void *ctx, const ck_http_req_t *req, const char *const *params,
                      ck_http_resp_t *resp) {
  co_t *co = ctx;
  resp->content_type = "text/plain; version=0.0.4";
  ck_buf_t *b = &resp->body;
  int alive = 0;
  for (int i = 0; i < co->nworkers; i++) alive += co->workers[i]->alive;
  ck_buf_printf(b, "# HELP clink_workers Workers registered and alive.\n# TYPE clink_workers "
                "gauge\nclink_workers %d\n", alive);
  ck_buf_printf(b, "# HELP clink_workers_lost_total Workers declared lost.\n# TYPE "
                "clink_workers_lost_total counter\nclink_workers_lost_total %lld\n",
                (long long)co->workers_lost_total);
  ck_buf_printf(b, "# HELP clink_job_restarts_total Job restarts.\n# TYPE "
                "clink_job_restarts_total counter\nclink_job_restarts_total %lld\n",
                (long long)co->restarts_total);
  ck_buf_printf(b, "# HELP clink_checkpoints_completed_total Checkpoints completed.\n# TYPE "
                "clink_checkpoints_completed_total counter\n"
                "clink_checkpoints_completed_total %lld\n",
                (long long)co->checkpoints_completed_total);
  ck_buf_puts(b, "# HELP clink_job_status 1 for the job's current status.\n# TYPE "
              "clink_job_status gauge\n");
  for (int j = 0; j < co->njobs; j++)
    ck_buf_printf(b, "clink_job_status{job=\"%lld\",status=\"%s\"} 1\n",
                  (long long)co->jobs[j]->id, status_names[co->jobs[j]->status]);
  ck_buf_puts(b, "# HELP clink_job_last_checkpoint Newest completed checkpoint id.\n# TYPE "
              "clink_job_last_checkpoint gauge\n");
  for (int j = 0; j < co->njobs; j++)
    ck_buf_printf(b, "clink_job_last_checkpoint{job=\"%lld\"} %lld\n", (long long)co->jobs[j]->id,
                  (long long)(co->jobs[j]->store_open ? co->jobs[j]->ck.last_completed : 0));
  ck_buf_puts(b, "# HELP clink_job_restarts Restarts of the job so far.\n# TYPE "
              "clink_job_restarts gauge\n");
  for (int j = 0; j < co->njobs; j++)
    ck_buf_printf(b, "clink_job_restarts{job=\"%lld\"} %d\n", (long long)co->jobs[j]->id,
                  co->jobs[j]->attempt);
  /* per operator and subtask, from the workers' last heartbeats (runtime/metrics.h) */
  for (int m = 0; m < CK_OPM_COUNT; m++) {
    ck_opmetrics_prom_header(b, m);
    for (int j = 0; j < co->njobs; j++)
      for (int i = 0; i < co->jobs[j]->nparts; i++) {
        worker_t *w = find_worker(co, co->jobs[j]->parts[i].worker);
        ck_opmetrics_prom_samples(b, m, co->jobs[j]->id, w ? w->id : "",
                                  co->jobs[j]->parts[i].metrics);
      }
  }
}

const ck_http_route_t ck_coordinator_routes[] = {
    {"GET", "/api/v1/health", true, r_health, "liveness: 200 while the coordinator runs"},
    {"GET", "/api/v1/jobs", false, r_jobs, "every job: id, name, status, error_count, restarts, guarantee"},
    {"POST", "/api/v1/jobs/sql", false, r_submit, "submit {\"sql\":…, \"name\":…, \"parallelism\":…}; 201 {\"id\":…}"},
    {"GET", "/api/v1/jobs/:id", false, r_job, "one job, with its last error and its workers"},
    {"GET", "/api/v1/jobs/:id/operators", false, r_operators, "per operator and subtask: records in/out, late, skipped, without event time, watermark, backpressure"},
    {"GET", "/api/v1/jobs/:id/checkpoints", false, r_checkpoints, "latest completed/confirmed, in flight, recent checkpoints"},
    {"POST", "/api/v1/jobs/:id/cancel", false, r_cancel, "cancel the job"},
    {"GET", "/api/v1/workers", false, r_workers, "registered workers, slots, heartbeats"},
    {"GET", "/metrics", false, r_metrics, "Prometheus text format"},
};
const size_t ck_coordinator_nroutes = sizeof ck_coordinator_routes / sizeof *ck_coordinator_routes;

static void on_http(void *ctx, const ck_http_req_t *req, ck_http_resp_t *resp) {
  co_t *co = ctx;
  ck_mutex_lock(&co->mu);
  ck_http_dispatch(ck_coordinator_routes, ck_coordinator_nroutes, co->o.auth_token, co, req,
                   resp);
  ck_mutex_unlock(&co->mu);
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
    ck_free(job->error);
    ck_free(job->guarantee);
    ck_free(job);
  }
  ck_free(co->jobs);
  if (co->listen_fd >= 0) close(co->listen_fd);
  if (co->lock_fd >= 0) close(co->lock_fd);
}

int ck_coordinator_main(const ck_coordinator_opts_t *opts, volatile sig_atomic_t *stop,
                        ck_error_t *err) {
  co_t *co = ck_calloc(1, sizeof *co);
  co->o = *opts;
  if (!co->o.host) co->o.host = "127.0.0.1";
  if (co->o.max_restarts <= 0) co->o.max_restarts = 10;
  if (co->o.heartbeat_ms <= 0) co->o.heartbeat_ms = 500;
  if (co->o.missed_heartbeats <= 0) co->o.missed_heartbeats = 3;
  if (co->o.auth_token && !*co->o.auth_token) co->o.auth_token = NULL;
  co->listen_fd = co->lock_fd = -1;
  co->next_job_id = 1;
  co->epoch = 1;
  co->started_ms = ck_mono_ms();
  ck_mutex_init(&co->mu);
  mkdir(co->o.checkpoint_dir, 0755);
  int rc = co->o.ha_dir ? take_ha_dir(co, err) : 0;
  if (!rc) rc = ck_sock_listen(co->o.host, co->o.port, &co->listen_fd, err);
  if (!rc && co->o.http_port >= 0)
    rc = ck_http_start(co->o.host, co->o.http_port, on_http, co, &co->http, err);
  if (rc) goto out;
  CK_LOG_INFO(LOG_CO, "listening on %s:%d (control) and %s:%d (REST API), checkpoints in '%s'",
              co->o.host, ck_sock_port(co->listen_fd), co->o.host,
              co->http ? ck_http_port(co->http) : -1, co->o.checkpoint_dir);
  ck_mutex_lock(&co->mu);
  if (co->o.ha_dir) recover_jobs(co);
  skip_used_job_ids(co);
  ck_mutex_unlock(&co->mu);

  while (!*stop) {
    struct pollfd pfds[MAX_CONNS + 1];
    ck_mutex_lock(&co->mu);
    int n = co->nconns;
    conn_t *polled[MAX_CONNS];
    pfds[0] = (struct pollfd){.fd = co->listen_fd, .events = POLLIN};
    for (int i = 0; i < n; i++) {
      polled[i] = co->conns[i];
      pfds[i + 1] = (struct pollfd){.fd = co->conns[i]->pc.fd, .events = POLLIN};
    }
    ck_mutex_unlock(&co->mu);
    int pr = poll(pfds, (nfds_t)n + 1, 50);
    ck_mutex_lock(&co->mu);
    if (pr > 0 && (pfds[0].revents & POLLIN)) {
      int fd = accept4(co->listen_fd, NULL, NULL, SOCK_CLOEXEC);
      if (fd >= 0 && co->nconns < MAX_CONNS) {
        int one = 1; /* control frames are small and latency matters: no Nagle */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conn_t *c = ck_calloc(1, sizeof *c);
        ck_proto_conn_init(&c->pc, fd);
        c->kind = CONN_NEW;
        c->worker = -1;
        co->conns[co->nconns++] = c;
      } else if (fd >= 0) {
        close(fd);
      }
    }
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
        if (c->kind == CONN_NEW) {
          if (f.type == CK_PROTO_REGISTER) on_register(co, c, &f);
          else c->kind = CONN_CLI;
        }
        if (c->kind == CONN_CLI) on_cli_frame(co, c, &f);
        else if (c->kind == CONN_WORKER && f.type != CK_PROTO_REGISTER) {
          worker_t *w = find_worker(co, c->worker);
          if (w && w->alive) on_worker_frame(co, w, &f);
        }
      }
      if (!fr && got < 0) fr = got;
      if (fr) close_conn(co, i, e.message[0] ? e.message : "connection closed");
    }
    tick(co);
    ck_mutex_unlock(&co->mu);
  }
  CK_LOG_INFO(LOG_CO, "stopping");
  /* jobs keep their checkpoints; workers cancel their work when the connection goes */
out:
  if (co->http) ck_http_stop(co->http);
  free_all(co);
  ck_mutex_fini(&co->mu);
  ck_free(co);
  return rc;
}
