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
#include <netdb.h>
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
#include "checkpoint/trace.h"
#include "cluster/http.h"
#include "cluster/jobplan.h"
#include "cluster/opmetrics.h"
#include "cluster/proto.h"
#include "runtime/exec.h"
#include "runtime/metrics.h"
#include "sql/planner.h"

#define LOG_WATCH "coordinator.watchdog"
#define LOG_RESTART "coordinator.restart"
#define LOG_CO "coordinator"
#define MAX_CONNS 1024        /* registered workers plus MAX_UNREGISTERED others */
#define MAX_UNREGISTERED 32   /* connections that are not a registered worker (CLI, anyone) */
#define HANDSHAKE_MS 5000     /* a new connection's first frame must be whole within this */
#define CLI_IDLE_MS 30000     /* a CLI connection silent this long is closed */
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

static const char *const status_names[] = {"CREATED",    "RUNNING",  "RESTARTING", "CANCELLING",
                                           "FINISHED",   "FAILED",   "CANCELLED"};

static bool terminal(job_status_t s) { return s >= JOB_FINISHED; }

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
  ck_http_t *http;
  planner_t *planners[MAX_PLANNING];
  int nplanners;
  int64_t started_ms, last_tick;
  int64_t checkpoints_completed_total, restarts_total, workers_lost_total;
} co_t;

/* ================================================================ HA: epoch, manifests */

/* Writes path durably (temporary name, fsync, rename, fsync the directory), mode 0600: the
 * files of the HA directory hold job definitions, credentials included. */
static int write_durable(const char *path, const char *data, size_t n, ck_error_t *err) {
  char tmp[PATH_MAX + 8];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return ck_error_set(err, CK_EIO, "could not write '%s': %s", tmp, strerror(errno));
  /* a leftover temporary file keeps its old mode through O_TRUNC */
  bool ok = fchmod(fd, 0600) == 0 && write(fd, data, n) == (ssize_t)n && fsync(fd) == 0;
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

static char *read_text(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  ck_buf_t b;
  ck_buf_init(&b);
  char chunk[8192];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) ck_buf_append(&b, chunk, n);
  fclose(f);
  ck_buf_reserve(&b, 0);
  b.data[b.len] = 0;
  if (len) *len = b.len;
  return ck_buf_detach(&b);
}

static void manifest_path(const co_t *co, int64_t id, char *out, size_t n) {
  snprintf(out, n, "%s/jobs/job-%lld.manifest", co->o.ha_dir, (long long)id);
}

/*
 * The job's manifest: what a coordinator taking over needs to run it again. Format 2: lines
 * "clink-job 2", "id N", "parallelism N", "status S", "attempt N", "redacted 1" when the SQL
 * held a credential, then "name <bytes>\n" followed by exactly that many bytes and a newline,
 * and "sql <bytes>\n" likewise — so no content of the name or the SQL can move a field.
 * Written 0600 in a 0700 directory. The SQL is stored redacted (base/redact.h): a credential
 * written inline never reaches the disk. Such a job cannot be run again from its manifest;
 * recover_jobs fails it, saying why.
 */
static void save_manifest(co_t *co, const job_t *job) {
  if (!co->o.ha_dir) return;
  ck_buf_t sql;
  ck_buf_init(&sql);
  bool redacted = ck_redact_sql(job->sql, strlen(job->sql), &sql, NULL);
  ck_buf_t b;
  ck_buf_init(&b);
  ck_buf_printf(&b, "clink-job 2\nid %lld\nparallelism %d\nstatus %s\nattempt %d\n%s",
                (long long)job->id, job->parallelism, status_names[job->status], job->attempt,
                redacted ? "redacted 1\n" : "");
  ck_buf_printf(&b, "name %zu\n", strlen(job->name));
  ck_buf_puts(&b, job->name);
  ck_buf_printf(&b, "\nsql %zu\n", sql.len);
  ck_buf_append(&b, sql.data, sql.len);
  ck_buf_putc(&b, '\n');
  ck_buf_fini(&sql);
  char path[PATH_MAX];
  manifest_path(co, job->id, path, sizeof path);
  ck_error_t err;
  ck_error_clear(&err);
  if (write_durable(path, b.data, b.len, &err))
    CK_LOG_ERR(LOG_CO, "job_id=%lld: %s", (long long)job->id, err.message);
  ck_buf_fini(&b);
}

/* A directory of the HA directory: created 0700, or narrowed to 0700 when it exists. */
static int private_dir(const char *path, ck_error_t *err) {
  if (mkdir(path, 0700) && errno != EEXIST)
    return ck_error_set(err, CK_EIO, "could not create the HA directory '%s': %s", path,
                        strerror(errno));
  struct stat st;
  if (stat(path, &st) || !S_ISDIR(st.st_mode))
    return ck_error_set(err, CK_EIO, "could not use the HA directory '%s': it is not a "
                        "directory", path);
  if ((st.st_mode & 077) && chmod(path, st.st_mode & 0700)) {
    ck_error_set(err, CK_EIO, "could not make the HA directory '%s' private (mode 0700): %s",
                 path, strerror(errno));
    ck_error_hint(err, "It holds job definitions with their credentials; run the coordinator "
                       "as the directory's owner or give it a directory of its own.");
    return CK_EIO;
  }
  return 0;
}

static int take_ha_dir(co_t *co, ck_error_t *err) {
  char path[PATH_MAX];
  int rc = private_dir(co->o.ha_dir, err);
  snprintf(path, sizeof path, "%s/jobs", co->o.ha_dir);
  if (!rc) rc = private_dir(path, err);
  if (rc) return rc;
  snprintf(path, sizeof path, "%s/leader.lock", co->o.ha_dir);
  co->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (co->lock_fd < 0)
    return ck_error_set(err, CK_EIO, "could not open the leader lock '%s': %s", path,
                        strerror(errno));
  (void)fchmod(co->lock_fd, 0600); /* one left by an older version may be 0644 */
  if (flock(co->lock_fd, LOCK_EX | LOCK_NB)) {
    CK_LOG_INFO(LOG_CO, "another coordinator holds the leader lock '%s': standing by", path);
    if (flock(co->lock_fd, LOCK_EX))
      return ck_error_set(err, CK_EIO, "could not take the leader lock '%s': %s", path,
                          strerror(errno));
  }
  snprintf(path, sizeof path, "%s/epoch", co->o.ha_dir);
  char *text = read_text(path, NULL);
  uint64_t epoch = text ? strtoull(text, NULL, 10) : 0;
  ck_free(text);
  co->epoch = epoch + 1;
  char num[32];
  int n = snprintf(num, sizeof num, "%llu\n", (unsigned long long)co->epoch);
  rc = write_durable(path, num, (size_t)n, err);
  if (rc) return rc;
  CK_TRACE("leader", "ha_dir=%s epoch=%llu", co->o.ha_dir, (unsigned long long)co->epoch);
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
  ck_lineage_opts_t lo = {job->plan.desc.data, job->parallelism, false, job->rewind_below,
                         job->plan.ntasks, ck_exec_rigid_sink(job->plan.graph)};
  int rc = ck_lineage_start(job->dir, &lo, &lin, &err);
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

/*
 * A job name is shown in logs, the REST API and `clink list`, and stored in the HA manifest:
 * 1 to CK_JOB_NAME_MAX bytes of valid UTF-8 without control characters (C0, DEL, C1), so it
 * can neither forge a log line nor move a field of the manifest. Returns 0, or CK_EINVAL
 * with err saying what is wrong and where.
 */
#define CK_JOB_NAME_MAX 128
static int check_job_name(const char *name, ck_error_t *err) {
  size_t n = strlen(name);
  if (n > CK_JOB_NAME_MAX) {
    ck_error_set(err, CK_EINVAL, "could not accept the job name: it is %zu bytes long, the "
                 "limit is %d", n, CK_JOB_NAME_MAX);
    ck_error_hint(err, "Give a shorter --name.");
    return CK_EINVAL;
  }
  const unsigned char *p = (const unsigned char *)name;
  for (size_t i = 0; i < n;) {
    unsigned c = p[i];
    size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
               : (c & 0xf8) == 0xf0 ? 4 : 0;
    unsigned cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; k++) {
      ok = (p[i + k] & 0xc0) == 0x80;
      cp = cp << 6 | (p[i + k] & 0x3f);
    }
    static const unsigned min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    if (ok) ok = cp >= min_cp[len] && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff);
    if (!ok) {
      ck_error_set(err, CK_EINVAL, "could not accept the job name: byte %zu is not valid "
                   "UTF-8", i + 1);
      ck_error_hint(err, "Give a --name of printable characters.");
      return CK_EINVAL;
    }
    if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) {
      ck_error_set(err, CK_EINVAL, "could not accept the job name: byte %zu is the "
                   "control character U+%04X", i + 1, cp);
      ck_error_hint(err, "A job name is shown in logs and stored in manifests: give one of "
                         "printable characters, without line breaks or tabs.");
      return CK_EINVAL;
    }
    i += len;
  }
  return 0;
}

/*
 * A submission's first half: checks the name and parallelism and plans the SQL (refusing bad
 * SQL with its position) into a new job with no id. Touches no coordinator state: runs
 * WITHOUT co->mu (plan-time checks may wait on the network), one at a time under plan_mu
 * (the planner is not known to be reentrant). *out is the caller's until add_job.
 */
static int plan_job(co_t *co, const char *name, const char *sql, int parallelism, job_t **out,
                    ck_error_t *err) {
  *out = NULL;
  if (parallelism < 1 || parallelism > 4096)
    return ck_error_set(err, CK_EINVAL, "parallelism must be from 1 to 4096, not %d",
                        parallelism);
  if (name && *name && check_job_name(name, err)) return CK_EINVAL;
  job_t *job = ck_calloc(1, sizeof *job);
  char fname[256];
  snprintf(fname, sizeof fname, "%s", name && *name ? name : "<submitted>");
  ck_mutex_lock(&co->plan_mu);
  int rc = ck_jobplan_init(&job->plan, sql, fname, parallelism, 128, err);
  ck_mutex_unlock(&co->plan_mu);
  if (rc) {
    ck_free(job);
    return rc;
  }
  job->parallelism = parallelism;
  size_t n = strlen(sql);
  job->sql = ck_malloc(n + 1);
  memcpy(job->sql, sql, n + 1);
  if (name && *name) {
    job->name = ck_malloc(strlen(name) + 1);
    memcpy(job->name, name, strlen(name) + 1);
  }
  ck_buf_t g;
  ck_buf_init(&g);
  ck_graph_guarantee(job->plan.graph, true, &g);
  job->guarantee = ck_buf_detach(&g);
  job->status = JOB_CREATED;
  *out = job;
  return 0;
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
  co->jobs = ck_realloc(co->jobs, sizeof *co->jobs * (size_t)(co->njobs + 1));
  co->jobs[co->njobs++] = job;
  CK_LOG_INFO("coordinator.guarantee", "job_id=%lld job delivery guarantee: %s",
              (long long)job->id, job->guarantee);
  CK_LOG_INFO(LOG_CO, "job_id=%lld submitted: '%s', parallelism %d, %d task(s)",
              (long long)job->id, job->name, job->parallelism, job->plan.ntasks);
  save_manifest(co, job);
  deploy(co, job);
  return job->id;
}

/* Both halves at once, under co->mu: only for recovering jobs at start, before any worker
 * or client is served. */
static int submit(co_t *co, const char *name, const char *sql, int parallelism, int64_t *id,
                  ck_error_t *err) {
  job_t *job;
  int rc = plan_job(co, name, sql, parallelism, &job, err);
  if (!rc) *id = add_job(co, job);
  return rc;
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
  char *text = read_text(path, NULL); /* whole: the caller's copy was cut in place */
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

/* A manifest line "<key> <value>\n" at *p: the value's start (and *p moves past the line),
 * or NULL. */
static char *manifest_line(char **p, const char *end, const char *key) {
  size_t k = strlen(key);
  char *nl = memchr(*p, '\n', (size_t)(end - *p));
  if (!nl || (size_t)(nl - *p) <= k || strncmp(*p, key, k) || (*p)[k] != ' ') return NULL;
  *nl = 0;
  char *v = *p + k + 1;
  *p = nl + 1;
  return v;
}

/* A field "<key> <length>\n<length bytes>\n": the bytes, NUL-terminated in place. */
static char *manifest_field(char **p, const char *end, const char *key) {
  char *v = manifest_line(p, end, key);
  if (!v) return NULL;
  char *e;
  unsigned long long n = strtoull(v, &e, 10);
  if (e == v || *e || n >= (unsigned long long)(end - *p)) return NULL;
  char *field = *p;
  if (field[n] != '\n' || memchr(field, 0, (size_t)n)) return NULL;
  field[n] = 0;
  *p = field + n + 1;
  return field;
}

/* Reads a manifest (format 2, or the line-based format 1 of older versions) in place. */
static int parse_manifest(char *text, size_t len, int *par, int *attempt, char *status,
                          bool *redacted, const char **name, const char **sql) {
  char *end = text + len, *p = text, *v;
  *redacted = false;
  if (len > 12 && !strncmp(text, "clink-job 1\n", 12)) { /* the SQL ran to the end */
    char *sqlp = strstr(text, "\nsql\n"), *namep = strstr(text, "\nname ");
    if (!sqlp || !namep || namep > sqlp) return -1;
    if ((v = strstr(text, "\nparallelism ")) && v < sqlp) *par = atoi(v + 13);
    if ((v = strstr(text, "\nattempt ")) && v < sqlp) *attempt = atoi(v + 9);
    if ((v = strstr(text, "\nstatus ")) && v < sqlp) sscanf(v + 8, "%31s", status);
    if ((v = strstr(text, "\nredacted 1\n")) && v < sqlp) *redacted = true;
    *sqlp = 0;
    char *nl = strchr(namep + 6, '\n');
    if (nl) *nl = 0;
    *name = namep + 6;
    *sql = sqlp + 5;
    return 0;
  }
  if (!(v = manifest_line(&p, end, "clink-job")) || strcmp(v, "2")) return -1;
  if (!manifest_line(&p, end, "id")) return -1;
  if (!(v = manifest_line(&p, end, "parallelism"))) return -1;
  *par = atoi(v);
  if (!(v = manifest_line(&p, end, "status"))) return -1;
  snprintf(status, 32, "%s", v);
  if (!(v = manifest_line(&p, end, "attempt"))) return -1;
  *attempt = atoi(v);
  char *q = p;
  if ((v = manifest_line(&q, end, "redacted")) && !strcmp(v, "1")) {
    *redacted = true;
    p = q;
  } else if (v) {
    return -1;
  }
  if (!(*name = manifest_field(&p, end, "name"))) return -1;
  if (!(*sql = manifest_field(&p, end, "sql"))) return -1;
  return p == end ? 0 : -1;
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
    size_t len = 0;
    char *text = read_text(path, &len);
    if (!text) continue;
    (void)chmod(path, 0600); /* one written by an older version may be 0644 */
    int par = 1, attempt = 0;
    char status[32] = "";
    const char *name = NULL, *sql = NULL;
    bool redacted = false;
    if (parse_manifest(text, len, &par, &attempt, status, &redacted, &name, &sql)) {
      CK_LOG_WARN(LOG_CO, "ignoring the unreadable job manifest '%s'", path);
      ck_free(text);
      continue;
    }
    if (id >= co->next_job_id) co->next_job_id = id + 1;
    bool done = !strcmp(status, "FINISHED") || !strcmp(status, "FAILED") ||
                !strcmp(status, "CANCELLED");
    if (done) {
      ck_free(text);
      continue;
    }
    if (redacted) { /* its credentials were never stored */
      CK_LOG_ERR(LOG_CO, "could not recover job %lld ('%s'): its SQL holds credentials, which "
                 "the HA manifest does not keep; submit it again, giving them through "
                 "password_env (read where the job runs) so a takeover can rerun it", id,
                 name);
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
    if (submit(co, name, sql, par, &got, &err)) {
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

/*
 * The first field of every CLI frame is the token. True when the request may go on; false
 * when it was answered with the refusal: a token that differs from CLINK_AUTH_TOKEN (when
 * the coordinator has one), or a state-changing request (writes) on a coordinator that
 * refuses them (a non-loopback address without a token).
 */
static bool cli_allowed(co_t *co, conn_t *c, ck_proto_reader_t *r, bool writes) {
  size_t n;
  char *tok = ck_proto_strn(r, &n);
  bool ok = false;
  if (r->bad)
    reply(c, CK_EPROTO, 0, "a malformed request frame (from an older clink?)");
  else if (co->o.auth_token && !ck_http_token_equal(tok, n, co->o.auth_token))
    reply(c, CK_EINVAL, 0, n ? "could not accept the request: the token is not valid for this "
                               "cluster; set CLINK_AUTH_TOKEN to the coordinator's"
                             : "could not accept the request: this coordinator needs a token; "
                               "set CLINK_AUTH_TOKEN to the coordinator's");
  else if (writes && co->refuse_writes)
    reply(c, CK_EINVAL, 0, "could not accept the request: this coordinator listens on a "
                           "non-loopback address without a token, so it refuses to submit or "
                           "cancel jobs; start it with CLINK_AUTH_TOKEN set (and the same "
                           "variable here), or bind it to 127.0.0.1");
  else
    ok = true;
  ck_free(tok);
  return ok;
}

/* A control-port SUBMIT being planned on its own thread (plan_job), then added under co->mu
 * and answered on its connection. */
struct planner {
  co_t *co;
  conn_t *c;
  char *name, *sql;
  int par;
  ck_thread_t th;
  bool done; /* under co->mu: the control loop may join it */
};

static void *planner_main(void *arg) {
  planner_t *pl = arg;
  co_t *co = pl->co;
  ck_error_t err;
  ck_error_clear(&err);
  job_t *job = NULL;
  int rc = plan_job(co, pl->name, pl->sql, pl->par, &job, &err);
  ck_mutex_lock(&co->mu);
  int64_t id = rc ? 0 : add_job(co, job);
  conn_t *c = pl->c;
  c->planning = false;
  if (c->closed) { /* the client went away meanwhile; the job stays submitted */
    ck_proto_conn_fini(&c->pc);
    ck_free(c);
  } else {
    c->last_ms = ck_mono_ms();
    reply(c, rc, id, rc ? err.message : job->guarantee);
  }
  pl->done = true;
  ck_mutex_unlock(&co->mu);
  return NULL;
}

static void planner_free(planner_t *pl) {
  ck_thread_join(&pl->th);
  ck_free(pl->name);
  ck_free(pl->sql);
  ck_free(pl);
}

/* Under co->mu: joins the planners that are done (all of them when wait: at the end). */
static void reap_planners(co_t *co, bool wait) {
  for (int i = 0; i < co->nplanners;) {
    planner_t *pl = co->planners[i];
    if (!pl->done && wait) {
      ck_mutex_unlock(&co->mu);
      struct pollfd none;
      (void)poll(&none, 0, 20);
      ck_mutex_lock(&co->mu);
      continue;
    }
    if (!pl->done) {
      i++;
      continue;
    }
    co->planners[i] = co->planners[--co->nplanners];
    planner_free(pl);
  }
}

static void on_cli_frame(co_t *co, conn_t *c, ck_proto_frame_t *f) {
  ck_proto_reader_t *r = &f->body;
  ck_error_t err;
  ck_error_clear(&err);
  if (c->planning) {
    reply(c, CK_EPROTO, 0, "one request at a time: the SUBMIT on this connection is still "
                           "being planned");
  } else if (f->type == CK_PROTO_SUBMIT) {
    if (!cli_allowed(co, c, r, true)) return;
    size_t name_len, sql_len;
    char *name = ck_proto_strn(r, &name_len), *sql = ck_proto_strn(r, &sql_len);
    int par = (int)ck_proto_u32(r);
    const char *bad = r->bad ? "could not accept the job: a malformed SUBMIT frame"
                    : name_len != strlen(name) ? "could not accept the job: its name holds a "
                                                 "NUL character"
                    : sql_len != strlen(sql) ? "could not accept the job: its SQL holds a NUL "
                                               "character"
                    : co->nplanners >= MAX_PLANNING ? "could not accept the job now: the "
                                                      "coordinator is planning 8 jobs already; "
                                                      "submit it again in a moment"
                    : NULL;
    if (bad) {
      reply(c, CK_EINVAL, 0, bad);
      ck_free(name);
      ck_free(sql);
      return;
    }
    planner_t *pl = ck_calloc(1, sizeof *pl);
    *pl = (planner_t){.co = co, .c = c, .name = name, .sql = sql, .par = par};
    c->planning = true;
    if (ck_thread_start(&pl->th, "ck-planner", planner_main, pl)) {
      c->planning = false;
      reply(c, CK_EINTERNAL, 0, "could not start a thread to plan the job");
      ck_free(name);
      ck_free(sql);
      ck_free(pl);
      return;
    }
    co->planners[co->nplanners++] = pl;
  } else if (f->type == CK_PROTO_LIST) {
    if (!cli_allowed(co, c, r, false)) return;
    ck_buf_t b;
    ck_buf_init(&b);
    jobs_json(co, &b);
    reply(c, 0, co->njobs, b.data);
    ck_buf_fini(&b);
  } else if (f->type == CK_PROTO_CANCEL_JOB) {
    if (!cli_allowed(co, c, r, true)) return;
    int64_t id = ck_proto_i64(r);
    int rc = r->bad ? ck_error_set(&err, CK_EPROTO, "a malformed CANCEL_JOB frame")
                    : cancel_job(co, id, &err);
    reply(c, rc, id, rc ? err.message : "cancelling");
  } else {
    reply(c, CK_EPROTO, 0, "unexpected frame");
  }
}

/* The connection of a registered worker has been closed by its peer (a kill closes it at once,
 * but its end of stream may still be unread in this round of the loop). */
static bool conn_hung_up(const conn_t *c) {
  struct pollfd pfd = {.fd = c->pc.fd, .events = POLLIN | POLLRDHUP};
  return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static void close_conn(co_t *co, int i, const char *why);

static void on_register(co_t *co, conn_t *c, ck_proto_frame_t *f) {
  ck_proto_reader_t *r = &f->body;
  char *id = ck_proto_str(r);
  int slots = (int)ck_proto_u32(r);
  char *host = ck_proto_str(r);
  int http_port = (int)ck_proto_u32(r), pid = (int)ck_proto_u32(r);
  size_t tok_len;
  char *tok = ck_proto_strn(r, &tok_len);
  bool tok_ok = !co->o.auth_token || ck_http_token_equal(tok, tok_len, co->o.auth_token);
  ck_free(tok);
  if (r->bad || slots < 1 || !*id) {
    ck_free(id);
    ck_free(host);
    reply(c, CK_EPROTO, 0, "a malformed REGISTER frame");
    return;
  }
  if (!tok_ok) {
    CK_LOG_WARN(LOG_CO, "refused a worker registration with a wrong or missing token (pid %d)",
                pid);
    ck_free(id);
    ck_free(host);
    reply(c, CK_EINVAL, 0, "the token is not valid for this cluster: start the worker with "
                           "CLINK_AUTH_TOKEN set to the coordinator's");
    return;
  }
  if (check_job_name(id, &(ck_error_t){0})) {
    ck_free(id);
    ck_free(host);
    reply(c, CK_EINVAL, 0, "a worker id must be printable UTF-8 of at most 128 bytes");
    return;
  }
  /* A worker id belongs to one live worker: a second one is refused (never the first
   * deposed: it would keep running its subtasks, unsupervised). A registered worker whose
   * connection has closed is lost now, and its id is free again. */
  for (int i = 0; i < co->nworkers; i++) {
    worker_t *old = co->workers[i];
    if (!old->alive || strcmp(old->id, id)) continue;
    if (old->conn && conn_hung_up(old->conn)) {
      for (int k = 0; k < co->nconns; k++)
        if (co->conns[k] == old->conn) {
          close_conn(co, k, "the peer closed the connection");
          break;
        }
      continue;
    }
    char msg[512];
    snprintf(msg, sizeof msg, "a worker with the id '%s' is already registered and alive (pid "
             "%d, registered %lld s ago): give every worker its own --id", id, old->pid,
             (long long)((ck_mono_ms() - old->registered_at) / 1000));
    CK_LOG_WARN(LOG_CO, "refused a second worker '%s' (pid %d): the id belongs to the live "
                "worker of pid %d", id, pid, old->pid);
    ck_free(id);
    ck_free(host);
    reply(c, CK_EEXISTS, 0, msg);
    return;
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
  c->pc.max_frame = c->pc.max_submit = 0; /* a registered worker's heartbeats may be large */
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
  co->conns[i] = co->conns[--co->nconns];
  if (c->planning) { /* its planner answers, sees closed, and frees it */
    c->closed = true;
    shutdown(c->pc.fd, SHUT_RDWR);
    return;
  }
  ck_proto_conn_fini(&c->pc);
  ck_free(c);
}

/* Counts the connections that are not a registered worker's. */
static int unregistered(const co_t *co) {
  int n = 0;
  for (int i = 0; i < co->nconns; i++) n += co->conns[i]->kind != CONN_WORKER;
  return n;
}

/*
 * Control loop: accepts what is waiting (at most 64 a round). A registered worker's
 * connection is never refused or evicted for others: at most MAX_UNREGISTERED connections
 * that are not one (the CLI, workers before REGISTER, anyone) are kept; a new one past that
 * evicts the oldest of them not waiting for a plan. New connections read frames of at most
 * CK_PROTO_MAX_UNREGISTERED bytes (SUBMIT: CK_PROTO_MAX_SUBMIT) until they register.
 */
static void accept_conns(co_t *co) {
  for (int round = 0; round < 64 && co->nconns < MAX_CONNS; round++) {
    int fd = accept4(co->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return; /* EAGAIN: nothing more waits (the listening socket is non-blocking) */
    if (unregistered(co) >= MAX_UNREGISTERED) {
      int oldest = -1;
      for (int i = 0; i < co->nconns; i++) {
        const conn_t *o = co->conns[i];
        if (o->kind != CONN_WORKER && !o->planning &&
            (oldest < 0 || o->last_ms < co->conns[oldest]->last_ms))
          oldest = i;
      }
      if (oldest < 0) {
        close(fd);
        continue;
      }
      CK_LOG_DEBUG(LOG_CO, "%d connections are not registered workers: closing the one idle "
                   "longest for a new one", MAX_UNREGISTERED);
      close_conn(co, oldest, "evicted for a newer connection");
    }
    int one = 1; /* control frames are small and latency matters: no Nagle */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    conn_t *c = ck_calloc(1, sizeof *c);
    ck_proto_conn_init(&c->pc, fd);
    c->pc.max_frame = CK_PROTO_MAX_UNREGISTERED;
    c->pc.max_submit = CK_PROTO_MAX_SUBMIT;
    c->kind = CONN_NEW;
    c->worker = -1;
    c->opened_ms = c->last_ms = ck_mono_ms();
    co->conns[co->nconns++] = c;
  }
}

/* Control loop: closes connections that sent no whole frame within HANDSHAKE_MS of being
 * accepted, and CLI connections silent for CLI_IDLE_MS (workers have heartbeats). */
static void expire_conns(co_t *co, int64_t now) {
  for (int i = 0; i < co->nconns;) {
    const conn_t *c = co->conns[i];
    bool late = !c->planning &&
                ((c->kind == CONN_NEW && now - c->opened_ms > HANDSHAKE_MS) ||
                 (c->kind == CONN_CLI && now - c->last_ms > CLI_IDLE_MS));
    if (late) close_conn(co, i, c->kind == CONN_NEW ? "no request within the handshake time"
                                                    : "idle");
    else i++;
  }
}

/* ================================================================ timers */

static void tick(co_t *co) {
  int64_t now = ck_mono_ms();
  expire_conns(co, now);
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

/* Called without co->mu (on_http): reads only what is fixed before the server starts. */
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

/*
 * A tiny reader for the submit body: {"sql": "...", "name": "...", "parallelism": 2}. Every
 * read is bounded by the body's length (json_t.end), never by a NUL: a body may be empty, hold
 * NULs, or stop in the middle of a token.
 */
typedef struct json {
  const char *p, *end, *start;
} json_t;

static void json_skip_ws(json_t *j) {
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
    j->p++;
}

static int json_peek(const json_t *j) { return j->p < j->end ? (unsigned char)*j->p : -1; }

static int json_hex4(json_t *j, unsigned *v) {
  if (j->end - j->p < 4) return -1;
  *v = 0;
  for (int i = 0; i < 4; i++) {
    char h = j->p[i];
    int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
          : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
    if (d < 0) return -1;
    *v = *v * 16 + (unsigned)d;
  }
  j->p += 4;
  return 0;
}

static void json_put_utf8(ck_buf_t *out, unsigned v) {
  if (v < 0x80) {
    ck_buf_putc(out, (char)v);
  } else if (v < 0x800) {
    ck_buf_putc(out, (char)(0xc0 | (v >> 6)));
    ck_buf_putc(out, (char)(0x80 | (v & 0x3f)));
  } else if (v < 0x10000) {
    ck_buf_putc(out, (char)(0xe0 | (v >> 12)));
    ck_buf_putc(out, (char)(0x80 | ((v >> 6) & 0x3f)));
    ck_buf_putc(out, (char)(0x80 | (v & 0x3f)));
  } else {
    ck_buf_putc(out, (char)(0xf0 | (v >> 18)));
    ck_buf_putc(out, (char)(0x80 | ((v >> 12) & 0x3f)));
    ck_buf_putc(out, (char)(0x80 | ((v >> 6) & 0x3f)));
    ck_buf_putc(out, (char)(0x80 | (v & 0x3f)));
  }
}

/* A JSON string into out (NUL-terminated). 0, or -1 with why: malformed, or a NUL character
 * in it (the SQL and names are C strings: a NUL would silently end them). */
static int json_string(json_t *j, ck_buf_t *out, char *why, size_t whylen) {
  if (json_peek(j) != '"') return snprintf(why, whylen, "expected a JSON string"), -1;
  for (j->p++; j->p < j->end && *j->p != '"'; j->p++) {
    size_t at = (size_t)(j->p - j->start);
    if (*j->p == 0)
      return snprintf(why, whylen, "a NUL byte at offset %zu of the body, inside a string", at),
             -1;
    if (*j->p != '\\') {
      ck_buf_putc(out, *j->p);
      continue;
    }
    if (++j->p == j->end) break;
    switch (*j->p) {
      case 'n': ck_buf_putc(out, '\n'); break;
      case 't': ck_buf_putc(out, '\t'); break;
      case 'r': ck_buf_putc(out, '\r'); break;
      case 'b': ck_buf_putc(out, '\b'); break;
      case 'f': ck_buf_putc(out, '\f'); break;
      case '"': case '\\': case '/': ck_buf_putc(out, *j->p); break;
      case 'u': {
        j->p++;
        unsigned v, lo;
        if (json_hex4(j, &v))
          return snprintf(why, whylen, "a \\u escape at offset %zu needs four hex digits", at),
                 -1;
        if (v >= 0xd800 && v < 0xdc00) { /* a surrogate pair */
          if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
            return snprintf(why, whylen, "an unpaired surrogate \\u%04x at offset %zu", v, at),
                   -1;
          j->p += 2;
          if (json_hex4(j, &lo) || lo < 0xdc00 || lo > 0xdfff)
            return snprintf(why, whylen, "an unpaired surrogate \\u%04x at offset %zu", v, at),
                   -1;
          v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
        } else if (v >= 0xdc00 && v < 0xe000) {
          return snprintf(why, whylen, "an unpaired surrogate \\u%04x at offset %zu", v, at), -1;
        }
        if (v == 0)
          return snprintf(why, whylen, "a NUL character (\\u0000) at offset %zu of the body, "
                          "inside a string", at), -1;
        json_put_utf8(out, v);
        j->p--; /* the loop steps past the last hex digit */
        break;
      }
      default:
        return snprintf(why, whylen, "an invalid escape '\\%c' at offset %zu",
                        *j->p >= 0x20 && *j->p < 0x7f ? *j->p : '?', at), -1;
    }
  }
  if (j->p >= j->end) return snprintf(why, whylen, "an unterminated string"), -1;
  j->p++;
  ck_buf_reserve(out, 0);
  out->data[out->len] = 0;
  return 0;
}

static int parse_submit(const char *body, size_t len, ck_buf_t *sql, ck_buf_t *name, int *par,
                        char *why, size_t whylen) {
  json_t j = {body, body + len, body};
  char sub[160];
  json_skip_ws(&j);
  if (json_peek(&j) != '{')
    return snprintf(why, whylen, "the body must be a JSON object%s",
                    len ? "" : " (it is empty)"), -1;
  j.p++;
  json_skip_ws(&j);
  while (json_peek(&j) != '}') {
    ck_buf_t key;
    ck_buf_init(&key);
    if (json_string(&j, &key, sub, sizeof sub)) {
      ck_buf_fini(&key);
      return snprintf(why, whylen, "malformed JSON: expected a quoted key (%s)", sub), -1;
    }
    json_skip_ws(&j);
    if (json_peek(&j) != ':') {
      ck_buf_fini(&key);
      return snprintf(why, whylen, "malformed JSON: expected ':'"), -1;
    }
    j.p++;
    json_skip_ws(&j);
    if (!strcmp(key.data, "sql") || !strcmp(key.data, "name")) {
      ck_buf_t *dst = key.data[0] == 's' ? sql : name;
      ck_buf_reset(dst);
      if (json_string(&j, dst, sub, sizeof sub)) {
        snprintf(why, whylen, "'%s' must be a JSON string: %s", key.data, sub);
        ck_buf_fini(&key);
        return -1;
      }
    } else if (!strcmp(key.data, "parallelism")) {
      long v = 0;
      int digits = 0;
      while (j.p < j.end && *j.p >= '0' && *j.p <= '9' && digits < 6)
        v = v * 10 + (*j.p++ - '0'), digits++;
      if (!digits || v < 1 || v > 4096 || (j.p < j.end && *j.p >= '0' && *j.p <= '9')) {
        ck_buf_fini(&key);
        return snprintf(why, whylen, "'parallelism' must be a whole number from 1 to 4096"), -1;
      }
      *par = (int)v;
    } else {
      snprintf(why, whylen, "unknown field '%.64s' (expected sql, name, parallelism)",
               key.data);
      ck_buf_fini(&key);
      return -1;
    }
    ck_buf_fini(&key);
    json_skip_ws(&j);
    if (json_peek(&j) == ',') j.p++, json_skip_ws(&j);
    else if (json_peek(&j) != '}')
      return snprintf(why, whylen, json_peek(&j) < 0 ? "malformed JSON: unterminated object"
                                                     : "malformed JSON: expected ',' or '}'"),
             -1;
  }
  j.p++;
  json_skip_ws(&j);
  if (j.p != j.end)
    return snprintf(why, whylen, "malformed JSON: something follows the object at offset %zu",
                    (size_t)(j.p - j.start)), -1;
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
  if (parse_submit(req->body, req->body_len, &sql, &name, &par, why, sizeof why)) {
    ck_http_error(resp, 400, "%s", why);
  } else {
    ck_error_t err;
    ck_error_clear(&err);
    job_t *job;
    /* called with co->mu held (on_http): planning may wait on the network, never under it */
    ck_mutex_unlock(&co->mu);
    int rc = plan_job(co, name.data, sql.data, par, &job, &err);
    ck_mutex_lock(&co->mu);
    if (rc) {
      ck_http_error(resp, 400, "%s", err.message);
    } else {
      int64_t id = add_job(co, job);
      resp->status = 201;
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

/* libmicrohttpd's threads (one per connection): every route runs under co->mu, except that
 * r_submit releases it while it plans, and health, which reads only the epoch (fixed before
 * the server starts), takes no lock: it answers even while the control loop is held up. */
static void on_http(void *ctx, const ck_http_req_t *req, ck_http_resp_t *resp) {
  co_t *co = ctx;
  bool health = req->path && !strcmp(req->path, "/api/v1/health") &&
                !ck_http_method_writes(req->method);
  if (!health) ck_mutex_lock(&co->mu);
  ck_http_dispatch(ck_coordinator_routes, ck_coordinator_nroutes, &co->guard, co, req, resp);
  if (!health) ck_mutex_unlock(&co->mu);
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

/* True when every address host names is a loopback one (127.0.0.0/8, ::1, ::ffff:127.x). */
static bool host_is_loopback(const char *host) {
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
  if (getaddrinfo(host, NULL, &hints, &ai) || !ai) return false;
  bool all = true;
  for (struct addrinfo *a = ai; a; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      uint32_t v = ntohl(((struct sockaddr_in *)a->ai_addr)->sin_addr.s_addr);
      all &= (v >> 24) == 127;
    } else if (a->ai_family == AF_INET6) {
      const struct in6_addr *v6 = &((struct sockaddr_in6 *)a->ai_addr)->sin6_addr;
      all &= IN6_IS_ADDR_LOOPBACK(v6) ||
             (IN6_IS_ADDR_V4MAPPED(v6) && v6->s6_addr[12] == 127);
    } else {
      all = false;
    }
  }
  freeaddrinfo(ai);
  return all;
}

ck_coordinator_t *ck_coordinator_detached_new(const ck_coordinator_opts_t *opts) {
  co_t *co = ck_calloc(1, sizeof *co);
  co->o = *opts;
  if (!co->o.host) co->o.host = "127.0.0.1";
  if (co->o.max_restarts <= 0) co->o.max_restarts = 10;
  if (co->o.heartbeat_ms <= 0) co->o.heartbeat_ms = 500;
  if (co->o.missed_heartbeats <= 0) co->o.missed_heartbeats = 3;
  if (co->o.auth_token && !*co->o.auth_token) co->o.auth_token = NULL;
  co->o.ha_dir = NULL;
  co->listen_fd = co->lock_fd = -1;
  co->next_job_id = co->epoch = 1;
  co->started_ms = ck_mono_ms();
  ck_mutex_init(&co->mu);
  ck_mutex_init(&co->plan_mu);
  co->refuse_writes = !co->o.auth_token && !host_is_loopback(co->o.host);
  co->guard = (ck_http_guard_t){.token = co->o.auth_token, .refuse_writes = co->refuse_writes,
                                .json_writes = true};
  return co;
}

void ck_coordinator_detached_http(ck_coordinator_t *co, const ck_http_req_t *req,
                                  ck_http_resp_t *resp) {
  on_http(co, req, resp);
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
  if (co->o.max_restarts <= 0) co->o.max_restarts = 10;
  if (co->o.heartbeat_ms <= 0) co->o.heartbeat_ms = 500;
  if (co->o.missed_heartbeats <= 0) co->o.missed_heartbeats = 3;
  if (co->o.auth_token && !*co->o.auth_token) co->o.auth_token = NULL;
  co->listen_fd = co->lock_fd = -1;
  co->next_job_id = 1;
  co->epoch = 1;
  co->started_ms = ck_mono_ms();
  ck_mutex_init(&co->mu);
  ck_mutex_init(&co->plan_mu);
  mkdir(co->o.checkpoint_dir, 0755);
  int rc = co->o.ha_dir ? take_ha_dir(co, err) : 0;
  if (!rc) rc = ck_sock_listen(co->o.host, co->o.port, &co->listen_fd, err);
  if (!rc) (void)fcntl(co->listen_fd, F_SETFL, fcntl(co->listen_fd, F_GETFL) | O_NONBLOCK);
  co->refuse_writes = !co->o.auth_token && !host_is_loopback(co->o.host);
  co->guard = (ck_http_guard_t){.token = co->o.auth_token, .refuse_writes = co->refuse_writes,
                                .json_writes = true};
  if (!rc && co->o.http_port >= 0)
    rc = ck_http_start(co->o.host, co->o.http_port, on_http, co, &co->http, err);
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
  if (co->o.ha_dir) recover_jobs(co);
  skip_used_job_ids(co);
  ck_mutex_unlock(&co->mu);

  while (!*stop) {
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
    if (pr > 0 && (pfds[0].revents & POLLIN)) accept_conns(co);
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
      if (fr) /* its index may have moved: a frame's handling can close other connections */
        for (int x = 0; x < co->nconns; x++)
          if (co->conns[x] == c) {
            close_conn(co, x, e.message[0] ? e.message : "connection closed");
            break;
          }
    }
    tick(co);
    reap_planners(co, false);
    ck_mutex_unlock(&co->mu);
  }
  CK_LOG_INFO(LOG_CO, "stopping");
  ck_mutex_lock(&co->mu);
  reap_planners(co, true); /* a submission being planned is answered first */
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
