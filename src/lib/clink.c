/*
 * DESIGN: libclink — the engine behind include/clink/clink.h.
 *
 * An engine is a catalog and a set of jobs. The catalog is every CREATE TABLE statement of
 * every script run so far (their ASTs, kept in the arena each script was parsed into, which
 * lives as long as the engine: the graphs point into them) and, per table, what the host can
 * do with it: a `push` table has a host queue the host fills, a `collect` table one it reads
 * (connectors/hostio.h). A script is checked as a whole before anything of it takes effect
 * (the catalog and the new statements planned once without queries, then every INSERT planned
 * alone with the tables declared before it), so a script with an error leaves no trace.
 *
 * A job is one INSERT (or one clink_query SELECT, whose print sink is pointed at a collect
 * queue of its own) planned into its own graph and run the way `clink run` runs a script:
 * ck_job_run over the local deployment (job/job.h, job/local.h), on a thread of the job's
 * own, with the restore point chosen first when the engine checkpoints (into
 * <checkpoint_dir>/job-<id>). The deployment is wrapped so that a cancel and the deployment's
 * release never overlap (the executor a cancel reaches is alive). The job's end ends its
 * collect queues: the end of stream, or the error that ended the job; a cancel aborts them at
 * once, so a sink blocked on a full queue unwinds.
 *
 * With options.one_job (`clink run` goes through here) a script is planned whole into one
 * graph, exactly as the embedded run plans it, its job is named after the script, has no host
 * (push and collect refuse to open, as under `clink run`) and checkpoints into checkpoint_dir
 * itself; its end logs `clink run`'s summary line. clink_job_stop drains where
 * clink_job_cancel aborts.
 *
 * Locks: e->mu guards the catalog, the job list and every job's done/status; job->cmu guards
 * the deployment's executor against release. No lock is held while waiting on a queue or
 * joining a thread.
 */
#include "clink/clink.h"

#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/arena.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/thread.h"
#include "base/time.h"
#include "checkpoint/lineage.h"
#include "checkpoint/store.h"
#include "clink/version.h"
#include "connectors/connectors.h"
#include "connectors/hostio.h"
#include "job/job.h"
#include "job/local.h"
#include "job/policy.h"
#include "lib/lib_internal.h"
#include "runtime/metrics.h"
#include "runtime/exec.h"
#include "runtime/plan.h"
#include "sql/parser.h"
#include "sql/planner.h"

enum { T_OTHER, T_PUSH, T_COLLECT };

typedef struct ltable {
  const char *name;     /* the AST's */
  int kind;
  ck_schema_t schema;   /* in the engine's arena */
  ck_hostq_t *q;        /* push, collect */
  bool reader, writer;  /* collect: a stream reads it, a job writes it; push: a job reads it */
  bool closed;          /* push: clink_push_close */
} ltable_t;

typedef struct jqueue {
  const char *table;
  ck_hostq_t *q;
  bool sink;
  int mode;        /* sink: CK_HOSTQ_APPEND or CK_HOSTQ_CHANGELOG, from the plan */
  char *key;       /* sink, changelog: its upsert key as JSON, or NULL when the rows lost it */
} jqueue_t;

struct clink_job {
  ck_host_t host; /* first: the connectors' view (ctx.host) */
  clink_engine_t *e;
  int64_t id;
  char name[32];
  char dir[4096];
  ck_arena_t arena;      /* the SQL text, the query's generated table name */
  ck_graph_t *graph;
  ck_buf_t desc;
  ck_job_local_t local;
  ck_job_t job;
  ck_mutex_t cmu;        /* the executor against release, see DESIGN */
  bool cancel_asked;     /* under cmu */
  ck_thread_t thread;
  jqueue_t *queues;
  int nqueues;
  /* under e->mu */
  bool done, detached;
  int pins;              /* callers using the handle outside e->mu: not reaped */
  clink_job_status_t status;
  int rc;
  char *error;           /* rendered, or NULL */
  int err_line, err_col;
  ck_exec_totals_t totals;
};

struct clink_engine {
  clink_options_t o;
  char *ckdir;
  ck_mutex_t mu;
  ck_cond_t cv;          /* a job ended */
  ck_arena_t arena;      /* schemas, table names */
  ck_arena_t **scripts;  /* every accepted script's arena (the catalog's ASTs) */
  int nscripts;
  const ck_stmt_t **ddl;
  int nddl;
  ltable_t *tables;
  int ntables;
  clink_job_t **jobs;
  int njobs;
  int64_t next_id;
  bool closing;
  bool log_hook;         /* this engine set the process's log callback */
  char *script_name, *capture_dir; /* the options' copies */
  void (*on_exec)(void *ctx, ck_exec_t *ex); /* lib_internal.h */
  void *on_exec_ctx;
};

/* ---------------------------------------------------------------- errors */

/* The calling thread's last error: in msg, or when longer (a SQL excerpt of a very long line)
 * in big, a heap copy freed by the thread's next shorter error or its engine's close. */
static _Thread_local struct {
  const clink_engine_t *e;
  char msg[8192];
  char *big;
  int line, col;
} last;

static const char *last_text(void) { return last.big ? last.big : last.msg; }

static int set_last(clink_engine_t *e, int code, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int set_last(clink_engine_t *e, int code, int line, int col, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(last.msg, sizeof last.msg, fmt, ap);
  va_end(ap);
  ck_free(last.big);
  last.big = NULL;
  if (n >= (int)sizeof last.msg) {
    last.big = ck_malloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(last.big, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  last.e = e;
  last.line = line;
  last.col = col;
  return code;
}

/* err rendered as the SQL front end does (file:line:col, the line, a caret, the hint) when it
 * has a position in sql, else as "error: message / detail / hint". */
static void render(const ck_error_t *err, const char *sql, const char *name, bool always,
                   ck_buf_t *out) {
  if (sql && (err->line > 0 || always)) { /* always: one_job renders as `clink run` did */
    ck_sql_render_error(sql, name, err, out);
  } else {
    char msg[2048];
    ck_error_format(err, msg, sizeof msg);
    ck_buf_puts(out, msg);
  }
  while (out->len && out->data[out->len - 1] == '\n') out->data[--out->len] = 0;
}

static int fail_err(clink_engine_t *e, const ck_error_t *err, const char *sql) {
  ck_buf_t b;
  ck_buf_init(&b);
  render(err, sql, e->script_name, e->o.one_job, &b);
  int code = err->code ? err->code : CK_EINTERNAL;
  set_last(e, code, err->line, err->column, "%s", b.data);
  ck_buf_fini(&b);
  return code;
}

const char *clink_last_error(clink_engine_t *e, int *line, int *column) {
  bool mine = last.e == e;
  if (line) *line = mine ? last.line : 0;
  if (column) *column = mine ? last.col : 0;
  return mine ? last_text() : "";
}

/* ---------------------------------------------------------------- options, logging */

/* The first layout's size (0.1: up to collect_batches): what clink_options_init, the
 * function, fills for the programs built against it. */
#define OPTIONS_V1_SIZE offsetof(clink_options_t, script_name)

void clink_options_init_size(clink_options_t *o, size_t size) {
  clink_options_t d;
  memset(&d, 0, sizeof d);
  d.parallelism = 1;
  d.max_parallelism = 128;
  d.checkpoint_interval_ms = 10000;
  d.log_level = CLINK_LOG_WARN;
  d.collect_batches = 16;
  d.max_restarts = -1;
  if (size < OPTIONS_V1_SIZE) size = OPTIONS_V1_SIZE; /* never less than the first layout */
  memset(o, 0, size);
  if (size > sizeof d) size = sizeof d; /* a newer program's: the fields this library knows */
  d.size = size;
  memcpy(o, &d, size);
}

void(clink_options_init)(clink_options_t *o) { clink_options_init_size(o, OPTIONS_V1_SIZE); }

int clink_abi_version(void) { return CLINK_ABI_VERSION; }
const char *clink_version(void) { return CLINK_VERSION; }

static clink_log_fn host_log_fn;
static void *host_log_ctx;

static void log_trampoline(void *ctx, ck_log_level_t level, const char *line) {
  (void)ctx;
  if (host_log_fn) host_log_fn(host_log_ctx, (clink_log_level_t)level, line);
}

void clink_arrow_bytes(int64_t *copied, int64_t *in_place) {
  if (copied) *copied = atomic_load(&ck_arrow_bytes_copied);
  if (in_place) *in_place = atomic_load(&ck_arrow_bytes_in_place);
}

/* ---------------------------------------------------------------- the engine */

int clink_engine_open(const clink_options_t *in, clink_engine_t **out, char *errbuf,
                      size_t err_len) {
  *out = NULL;
  clink_options_t o;
  clink_options_init(&o);
  if (in) memcpy(&o, in, in->size && in->size < sizeof o ? in->size : sizeof o);
  o.size = sizeof o;
  const char *why = NULL;
  if (o.parallelism < 1 || o.parallelism > 32768) why = "parallelism must be 1 to 32768";
  else if (o.max_parallelism < 1 || o.max_parallelism > 32768)
    why = "max_parallelism must be 1 to 32768";
  else if (o.parallelism > o.max_parallelism) why = "parallelism is above max_parallelism";
  else if (o.checkpoint_interval_ms < 1) why = "checkpoint_interval_ms must be at least 1";
  else if (o.log_level < CLINK_LOG_OFF || o.log_level > CLINK_LOG_DEBUG)
    why = "log_level is not one of CLINK_LOG_OFF … CLINK_LOG_DEBUG";
  else if (o.max_memory < 0) why = "max_memory may not be negative";
  else if (o.checkpoint_timeout_ms < 0 || o.checkpoints_retained < 0 || o.capture_records < 0 ||
           o.progress_interval_ms < 0)
    why = "checkpoint_timeout_ms, checkpoints_retained, capture_records and "
          "progress_interval_ms may not be negative";
  else if (o.one_job && o.checkpoint_dir == NULL && o.fresh) why = "fresh needs a checkpoint_dir";
  if (why) {
    if (errbuf && err_len) snprintf(errbuf, err_len, "could not open the engine: %s", why);
    return CLINK_EINVAL;
  }
  if (o.collect_batches < 1) o.collect_batches = 16;
  ck_connectors_register_all();
  ck_log_set_level((ck_log_level_t)o.log_level);
  host_log_ctx = o.log_ctx;
  host_log_fn = o.log_fn;
  ck_log_set_hook(o.log_fn ? log_trampoline : NULL, NULL);
  clink_engine_t *e = ck_calloc(1, sizeof *e);
  e->log_hook = o.log_fn != NULL;
  e->o = o;
  if (o.checkpoint_dir) {
    e->ckdir = ck_strdup(o.checkpoint_dir);
    e->o.checkpoint_dir = e->ckdir;
  }
  e->script_name = ck_strdup(o.script_name ? o.script_name : "<sql>");
  e->o.script_name = e->script_name;
  if (o.capture_dir) e->o.capture_dir = e->capture_dir = ck_strdup(o.capture_dir);
  if (!e->o.capture_records) e->o.capture_records = 10000;
  e->o.log_fn = NULL; /* set once, process-wide */
  ck_mutex_init(&e->mu);
  ck_cond_init(&e->cv);
  ck_arena_init(&e->arena, 0);
  e->next_id = 1;
  *out = e;
  return 0;
}

static ltable_t *find_table(clink_engine_t *e, const char *name) {
  for (int i = 0; i < e->ntables; i++)
    if (ck_streq_i(e->tables[i].name, name)) return &e->tables[i];
  return NULL;
}

static const char *conn_of(const ck_stmt_t *st) {
  for (int i = 0; i < st->noptions; i++)
    if (strcmp(st->opt_keys[i], "connector") == 0) return st->opt_values[i];
  return "";
}

static void add_table(clink_engine_t *e, const ck_stmt_t *st) {
  if (find_table(e, st->table)) return; /* IF NOT EXISTS of a table we have */
  e->tables = ck_realloc(e->tables, sizeof *e->tables * (size_t)(e->ntables + 1));
  ltable_t *t = &e->tables[e->ntables++];
  memset(t, 0, sizeof *t);
  t->name = st->table;
  const char *c = conn_of(st);
  t->kind = ck_streq_i(c, "push") ? T_PUSH : ck_streq_i(c, "collect") ? T_COLLECT : T_OTHER;
  t->schema = ck_schema_make(&e->arena, st->ncolumns);
  for (int i = 0; i < st->ncolumns; i++) {
    t->schema.names[i] = st->columns[i].name;
    t->schema.types[i] = st->columns[i].type;
  }
  if (t->kind != T_OTHER) t->q = ck_hostq_new(e->o.collect_batches);
}

/* ---------------------------------------------------------------- jobs */

static ck_hostq_t *job_queue(ck_host_t *h, const char *table, bool sink) {
  clink_job_t *j = (clink_job_t *)h;
  for (int i = 0; i < j->nqueues; i++)
    if (j->queues[i].sink == sink && ck_streq_i(j->queues[i].table, table)) return j->queues[i].q;
  return NULL;
}

static jqueue_t *job_add_queue(clink_job_t *j, const char *table, ck_hostq_t *q, bool sink) {
  j->queues = ck_realloc(j->queues, sizeof *j->queues * (size_t)(j->nqueues + 1));
  ck_hostq_ref(q);
  j->queues[j->nqueues] = (jqueue_t){table, q, sink, CK_HOSTQ_APPEND, NULL};
  return &j->queues[j->nqueues++];
}

/* the local deployment, with the executor guarded against a concurrent cancel */
static int lib_deploy(void *dep, const ck_job_point_t *point, ck_error_t *err) {
  clink_job_t *j = dep;
  ck_mutex_lock(&j->cmu);
  int rc = ck_job_local_ops.deploy(&j->local, point, err);
  ck_mutex_unlock(&j->cmu);
  return rc;
}

static int lib_start(void *dep, ck_error_t *err) {
  clink_job_t *j = dep;
  int rc = ck_job_local_ops.start(&j->local, err);
  ck_mutex_lock(&j->cmu);
  if (!rc && j->cancel_asked) ck_job_local_ops.cancel(&j->local, false, "cancelled by the host");
  else if (!rc && j->job.stopping) ck_job_local_ops.cancel(&j->local, true, NULL); /* drain */
  ck_mutex_unlock(&j->cmu);
  return rc;
}

static void lib_cancel(void *dep, bool drain, const char *why) {
  clink_job_t *j = dep;
  ck_mutex_lock(&j->cmu);
  ck_job_local_ops.cancel(&j->local, drain, why);
  ck_mutex_unlock(&j->cmu);
}

static int lib_wait(void *dep, ck_job_outcome_t *out, ck_error_t *err) {
  clink_job_t *j = dep;
  return ck_job_local_ops.wait(&j->local, out, err);
}

static void lib_release(void *dep) {
  clink_job_t *j = dep;
  ck_mutex_lock(&j->cmu);
  ck_job_local_ops.release(&j->local);
  ck_mutex_unlock(&j->cmu);
}

static const ck_job_ops_t lib_ops = {
    .kind = "local",
    .deploy = lib_deploy,
    .start = lib_start,
    .cancel = lib_cancel,
    .wait = lib_wait,
    .release = lib_release,
};

static void *job_main(void *arg) {
  clink_job_t *j = arg;
  ck_error_t err;
  ck_error_clear(&err);
  int rc = 0;
  clink_engine_t *e = j->e;
  if (j->job.dir) {
    rc = ck_job_restore_point(j->job.dir, &j->job.identity, e->o.fresh != 0, 0, 0, 0,
                              &j->job.point, &err);
    j->job.have_point = rc == 0;
  }
  if (!rc) {
    ck_buf_t g, manifest;
    ck_buf_init(&g);
    ck_buf_init(&manifest);
    ck_graph_guarantee(j->graph, j->job.dir != NULL, &g);
    CK_LOG_INFO("job", "job delivery guarantee: %s", g.data);
    /* the job manifest beside the checkpoints, for incident bundles (docs/incidents.md) */
    ck_job_manifest_t jm = {j->graph, 0,
                            e->o.one_job && e->o.script_name ? e->o.script_name : j->name,
                            e->o.parallelism, j->job.identity.ntasks,
                            j->local.eopts.ckpt.fingerprint, g.data};
    ck_job_manifest_json(&jm, &manifest);
    j->job.manifest = manifest.data;
    ck_buf_fini(&g);
    rc = ck_job_run(&j->job, &err);
    j->job.manifest = NULL;
    ck_buf_fini(&manifest);
  }
  ck_mutex_lock(&j->cmu);
  bool cancelled = j->cancel_asked;
  ck_mutex_unlock(&j->cmu);
  char *text = NULL;
  if (rc && !cancelled) {
    ck_buf_t b;
    ck_buf_init(&b);
    render(&err, NULL, NULL, false, &b);
    text = ck_strdup(b.data);
    ck_buf_fini(&b);
  }
  /* closing the engine marks the job stopping and fails its tables in one hold of e->mu: a
   * job that ends because of the mark leaves the tables' "the engine was closed" in place */
  ck_mutex_lock(&j->e->mu);
  bool closing = j->e->closing;
  ck_mutex_unlock(&j->e->mu);
  for (int i = 0; i < j->nqueues; i++) {
    jqueue_t *q = &j->queues[i];
    if (closing) { /* a query's own queue is not one of the engine's tables: fail it alike */
      ck_hostq_abort(q->q, CK_EIO, "the engine was closed");
      continue;
    }
    if (!q->sink) { /* nobody takes the host's batches any more */
      ck_hostq_abort(q->q, CK_ECANCELLED, "the job reading this table ended");
      continue;
    }
    if (cancelled) ck_hostq_abort(q->q, CK_ECANCELLED, "the job was cancelled");
    else if (rc) ck_hostq_end(q->q, rc, text);
    else ck_hostq_end(q->q, 0, NULL);
  }
  if (e->o.one_job && j->job.started) { /* `clink run`'s summary */
    ck_exec_totals_t tot = j->job.outcome.totals;
    CK_LOG_INFO("job", "%s: %lld records read, %lld written, %lld late records dropped, %lld "
                "undecodable records skipped, %lld records without event time skipped, %lld "
                "checkpoints", rc && !cancelled ? "failed" : j->job.stopping ? "stopped" : "finished",
                (long long)tot.source_records, (long long)tot.sink_records,
                (long long)tot.late_dropped, (long long)tot.decode_skipped,
                (long long)tot.no_event_time, (long long)tot.checkpoints_completed);
  }
  ck_mutex_lock(&e->mu);
  j->done = true;
  /* a job that failed on a timeout of its own (a checkpoint not complete in time) must not
   * read as clink_job_wait's "still running" */
  j->rc = cancelled ? CLINK_ECANCELLED : rc == CLINK_ETIMEOUT ? CLINK_EJOBTIMEOUT : rc;
  j->status = cancelled ? CLINK_JOB_CANCELLED : rc ? CLINK_JOB_FAILED : CLINK_JOB_FINISHED;
  j->error = text;
  j->err_line = err.line;
  j->err_col = err.column;
  j->totals = j->job.outcome.totals;
  ck_cond_broadcast(&e->cv);
  ck_mutex_unlock(&e->mu);
  if (!e->o.one_job)
    CK_LOG_INFO("job", "%s %s: %lld records read, %lld written", j->name,
                clink_job_status_name(j->status), (long long)j->totals.source_records,
                (long long)j->totals.sink_records);
  return NULL;
}

static void job_free(clink_job_t *j) {
  for (int i = 0; i < j->nqueues; i++) {
    ck_hostq_unref(j->queues[i].q);
    ck_free(j->queues[i].key);
  }
  ck_free(j->queues);
  ck_free(j->error);
  ck_buf_fini(&j->desc);
  ck_graph_free(j->graph);
  ck_arena_fini(&j->arena);
  ck_mutex_fini(&j->cmu);
  ck_free(j);
}

/* Joins and frees the jobs the host let go of that have ended. Under e->mu. */
static void reap(clink_engine_t *e) {
  int k = 0;
  for (int i = 0; i < e->njobs; i++) {
    clink_job_t *j = e->jobs[i];
    if (j->detached && j->done && !j->pins) {
      ck_thread_join(&j->thread);
      job_free(j);
    } else {
      e->jobs[k++] = j;
    }
  }
  e->njobs = k;
}

static clink_job_t *job_new(clink_engine_t *e, ck_graph_t *graph) {
  clink_job_t *j = ck_calloc(1, sizeof *j);
  j->host.queue = job_queue;
  j->e = e;
  j->graph = graph;
  ck_arena_init(&j->arena, 0);
  ck_buf_init(&j->desc);
  ck_mutex_init(&j->cmu);
  return j;
}

/* Numbers j, wires its deployment and starts its thread. Under e->mu. */
static int job_start(clink_engine_t *e, clink_job_t *j) {
  j->id = e->next_id++;
  snprintf(j->name, sizeof j->name, "job-%lld", (long long)j->id);
  ck_plan_identity(j->graph, &j->desc);
  j->local.graph = j->graph;
  j->local.eopts.job_name = e->o.one_job ? e->script_name : j->name;
  j->local.eopts.max_memory = e->o.max_memory;
  j->local.eopts.host = e->o.one_job ? NULL : &j->host; /* one_job: no host tables */
  j->local.eopts.capture = (ck_capture_opts_t){e->o.capture_dir, e->o.capture_records};
  j->local.eopts.ckpt.timeout_ms = e->o.checkpoint_timeout_ms;
  j->local.eopts.ckpt.retain = e->o.checkpoints_retained;
  j->local.eopts.ckpt.tolerable_failed = e->o.tolerable_failed_checkpoints;
  j->local.progress_ms = e->o.progress_interval_ms;
  j->local.on_exec = e->on_exec;
  j->local.on_exec_ctx = e->on_exec_ctx;
  const char *dir = NULL;
  if (e->ckdir && e->o.one_job) { /* the directory is the job's own, as `clink run`'s */
    dir = e->ckdir;
    j->local.eopts.ckpt.dir = dir;
    j->local.eopts.ckpt.interval_ms = e->o.checkpoint_interval_ms;
    j->local.eopts.ckpt.fingerprint = ck_lineage_fingerprint(j->desc.data);
  } else if (e->ckdir) {
    snprintf(j->dir, sizeof j->dir, "%s/%s", e->ckdir, j->name);
    if (!ck_store_is_remote(e->ckdir)) { /* an S3 store has no directories to make */
      mkdir(e->ckdir, 0777);
      mkdir(j->dir, 0777);
    }
    dir = j->dir;
    j->local.eopts.ckpt.dir = dir;
    j->local.eopts.ckpt.interval_ms = e->o.checkpoint_interval_ms;
    j->local.eopts.ckpt.fingerprint = ck_lineage_fingerprint(j->desc.data);
  }
  j->job = (ck_job_t){
      .dir = dir,
      .identity = {j->desc.data, e->o.parallelism, ck_exec_task_count(j->graph),
                   ck_exec_rigid_sink(j->graph)},
      .fresh = e->o.fresh != 0,
      .max_restarts = e->o.max_restarts < 0 ? CK_JOB_RESTARTS_DEFAULT : e->o.max_restarts,
      .ops = &lib_ops,
      .dep = j,
  };
  j->status = CLINK_JOB_RUNNING;
  e->jobs = ck_realloc(e->jobs, sizeof *e->jobs * (size_t)(e->njobs + 1));
  e->jobs[e->njobs++] = j;
  if (ck_thread_start(&j->thread, j->name, job_main, j)) {
    e->njobs--;
    return CK_EINTERNAL;
  }
  return 0;
}

/* ---------------------------------------------------------------- update streams */

/* The agg key a column of node id's output carries through calcs (a column or a cast of one),
 * or -1; *agg receives the aggregation it comes from. */
static int key_origin(const ck_graph_t *g, int id, int col, const ck_node_t **agg) {
  for (;;) {
    const ck_node_t *n = &g->nodes[id];
    if (n->kind == CK_NODE_AGG) {
      *agg = n;
      return col < n->u.agg.nkeys ? col : -1;
    }
    if (n->kind != CK_NODE_CALC || col < 0 || col >= n->u.calc.nexprs || n->input < 0) return -1;
    const ck_expr_t *x = n->u.calc.exprs[col];
    while (x->kind == CK_EX_CAST && x->nargs == 1) x = x->args[0];
    if (x->kind != CK_EX_COLUMN) return -1;
    col = x->column;
    id = n->input;
  }
}

static void json_str(ck_buf_t *b, const char *s) {
  ck_buf_puts(b, "\"");
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') ck_buf_printf(b, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) ck_buf_printf(b, "\\u%04x", (unsigned char)*s);
    else ck_buf_printf(b, "%c", *s);
  }
  ck_buf_puts(b, "\"");
}

/* The upsert key of an update stream's sink: the names of the sink columns that carry every
 * GROUP BY key of the aggregation producing the changes, as a JSON array in key order ("[]"
 * for a global aggregate), or NULL when the rows do not carry the whole key (then a host
 * cannot tell which row an update replaces). */
static char *upsert_key(const ck_graph_t *g, const ck_node_t *sink) {
  const ck_node_t *agg = NULL;
  int ncols = sink->u.conn.schema.ncols, *of_key = ck_calloc((size_t)ncols + 1, sizeof *of_key);
  for (int c = 0; c < ncols; c++) {
    int in = sink->u.conn.col_map ? sink->u.conn.col_map[c] : c;
    of_key[c] = in < 0 || sink->input < 0 ? -1 : key_origin(g, sink->input, in, &agg);
  }
  char *out = NULL;
  if (agg) {
    ck_buf_t b;
    ck_buf_init(&b);
    ck_buf_puts(&b, "[");
    bool whole = true;
    for (int k = 0; k < agg->u.agg.nkeys && whole; k++) {
      int c = 0;
      while (c < ncols && of_key[c] != k) c++;
      if (c == ncols) whole = false;
      else {
        if (k) ck_buf_puts(&b, ", ");
        json_str(&b, sink->u.conn.schema.names[c]);
      }
    }
    ck_buf_puts(&b, "]");
    if (whole) out = ck_strdup(b.data);
    ck_buf_fini(&b);
  }
  ck_free(of_key);
  return out;
}

/* Fixes the stream shape of every collect table j writes (it was checked by bind_tables). */
static void fix_modes(clink_job_t *j) {
  for (int i = 0; i < j->nqueues; i++)
    if (j->queues[i].sink) ck_hostq_mode(j->queues[i].q, j->queues[i].mode, j->queues[i].key, NULL);
}

/* The push and collect tables j's graph reads and writes: bound to j and marked taken, or an
 * error (a table another job has, a collect table already read as an append-only stream
 * that this job would write an update stream into). Under e->mu. */
static int check_mode(clink_engine_t *e, const char *table, const ck_schema_t *s, ck_hostq_t *q,
                      int mode) {
  if (mode == CK_HOSTQ_CHANGELOG && ck_schema_find(s, CK_ARROW_OP) >= 0)
    return set_last(e, CLINK_EINVAL, 0, 0, "could not start the job: collect table '%s' has a "
                    "column named '%s', the name its update stream gives the row kinds; rename "
                    "the column", table, CK_ARROW_OP);
  int fixed = ck_hostq_mode(q, CK_HOSTQ_UNSET, NULL, NULL);
  if (fixed != CK_HOSTQ_UNSET && fixed != mode)
    return set_last(e, CLINK_EINVAL, 0, 0, "could not start the job: it writes an update stream "
                    "(row kinds) into collect table '%s', whose reader already took its schema "
                    "as append-only rows; call clink_collect (or read the stream's schema) after "
                    "starting the job that writes the table", table);
  return 0;
}

static int bind_tables(clink_engine_t *e, clink_job_t *j) {
  int rc;
  for (int i = 0; i < j->graph->nnodes; i++) {
    const ck_node_t *n = &j->graph->nodes[i];
    if (n->kind != CK_NODE_SOURCE && n->kind != CK_NODE_SINK) continue;
    bool sink = n->kind == CK_NODE_SINK;
    if (n->u.conn.connector != (sink ? &ck_collect_connector : &ck_push_connector)) continue;
    if (job_queue(&j->host, n->u.conn.table, sink)) continue; /* twice in one job */
    ltable_t *t = find_table(e, n->u.conn.table);
    if (!t || !t->q)
      return set_last(e, CK_EINTERNAL, 0, 0, "internal error: table '%s' has no host queue",
                      n->u.conn.table);
    if (sink ? t->writer : t->reader)
      return set_last(e, CLINK_EEXISTS, 0, 0, "could not start the job: another job %s %s "
                      "table '%s' (one job per push or collect table)",
                      sink ? "writes" : "reads", sink ? "collect" : "push", t->name);
    if (!sink && t->closed)
      return set_last(e, CLINK_ECLOSED, 0, 0, "could not start the job: push table '%s' "
                      "is closed", t->name);
    int mode = sink && n->changelog ? CK_HOSTQ_CHANGELOG : CK_HOSTQ_APPEND;
    if (sink && (rc = check_mode(e, t->name, &n->u.conn.schema, t->q, mode))) return rc;
    if (sink) t->writer = true;
    else t->reader = true;
    jqueue_t *jq = job_add_queue(j, t->name, t->q, sink);
    jq->mode = mode;
    if (mode == CK_HOSTQ_CHANGELOG) jq->key = upsert_key(j->graph, n);
  }
  return 0;
}

static void unbind_tables(clink_engine_t *e, clink_job_t *j) {
  for (int i = 0; i < j->nqueues; i++) {
    ltable_t *t = find_table(e, j->queues[i].table);
    if (!t || t->q != j->queues[i].q) continue;
    if (j->queues[i].sink) t->writer = false;
    else t->reader = false;
  }
}

/* ---------------------------------------------------------------- scripts */

/* A declaration the engine keeps for later scripts: CREATE TABLE and CREATE FUNCTION. */
static bool is_ddl(const ck_stmt_t *st) {
  return st->kind == CK_STMT_CREATE_TABLE || st->kind == CK_STMT_CREATE_FUNCTION;
}

/* catalog + stmts[0..upto) of the script's CREATE TABLEs, then `query` if not NULL */
static void build_script(clink_engine_t *e, const ck_script_t *s, int upto,
                         const ck_stmt_t *query, ck_arena_t *arena, ck_script_t *out) {
  out->stmts = ck_arena_alloc(arena, sizeof(ck_stmt_t *) * (size_t)(e->nddl + s->nstmts + 2));
  out->nstmts = 0;
  for (int i = 0; i < e->nddl; i++) out->stmts[out->nstmts++] = (ck_stmt_t *)e->ddl[i];
  for (int i = 0; i < upto; i++)
    if (is_ddl(s->stmts[i])) out->stmts[out->nstmts++] = s->stmts[i];
  if (query) out->stmts[out->nstmts++] = (ck_stmt_t *)query;
}

/* Plans the DDL of the catalog and s without a query: the only error is "nothing to run". */
static int check_ddl(clink_engine_t *e, const ck_script_t *s, ck_arena_t *arena,
                     ck_error_t *err) {
  ck_script_t all;
  build_script(e, s, s->nstmts, NULL, arena, &all);
  ck_plan_opts_t po = {e->o.parallelism, e->o.max_parallelism};
  ck_graph_t *g = NULL;
  int rc = ck_sql_plan(&all, &po, &g, err);
  if (!rc) ck_graph_free(g);
  if (rc == CK_EINVAL && err->line == 0 && strncmp(err->message, "nothing to run", 14) == 0) {
    ck_error_clear(err);
    rc = 0;
  }
  return rc;
}

typedef struct planned {
  ck_graph_t **graphs;
  int n;
} planned_t;

/* Parses and checks sql, and plans each query (select: only one bare SELECT, else only
 * INSERTs) into graphs. On success *arena holds the script (to keep if it is accepted). */
static int prepare(clink_engine_t *e, const char *sql, size_t len, bool select, ck_arena_t **arena_out,
                   ck_script_t *script, planned_t *p) {
  ck_error_t err;
  ck_error_clear(&err);
  ck_arena_t *arena = ck_calloc(1, sizeof *arena);
  ck_arena_init(arena, 0);
  memset(p, 0, sizeof *p);
  int rc = ck_sql_parse_n(sql, len, arena, script, &err);
  if (rc) goto fail;
  int nq = 0;
  for (int i = 0; i < script->nstmts; i++) {
    const ck_stmt_t *st = script->stmts[i];
    if (is_ddl(st)) continue;
    nq++;
    if (select && (st->kind != CK_STMT_SELECT || nq > 1)) {
      rc = ck_error_set_at(&err, CK_EUNSUPPORTED, st->pos.line, st->pos.column,
                           "clink_query runs one bare SELECT (with CREATE TABLEs before it)");
      ck_error_hint(&err, "run INSERT INTO … SELECT with clink_exec");
      goto fail;
    }
    if (!select && st->kind == CK_STMT_SELECT && !e->o.one_job) {
      rc = ck_error_set_at(&err, CK_EUNSUPPORTED, st->pos.line, st->pos.column,
                           "a bare SELECT returns rows: run it with clink_query");
      ck_error_hint(&err, "or INSERT its rows INTO a table with connector = 'collect'");
      goto fail;
    }
  }
  if (select && nq == 0) {
    rc = ck_error_set(&err, CK_EINVAL, "nothing to run: the script has no SELECT");
    goto fail;
  }
  ck_plan_opts_t po = {e->o.parallelism, e->o.max_parallelism};
  if (e->o.one_job && !select) { /* the whole script, one graph: `clink run`'s plan */
    ck_script_t all;
    all.stmts = ck_arena_alloc(arena, sizeof(ck_stmt_t *) * (size_t)(e->nddl + script->nstmts + 1));
    all.nstmts = 0;
    for (int i = 0; i < e->nddl; i++) all.stmts[all.nstmts++] = (ck_stmt_t *)e->ddl[i];
    for (int i = 0; i < script->nstmts; i++) all.stmts[all.nstmts++] = script->stmts[i];
    p->graphs = ck_calloc(2, sizeof *p->graphs);
    if ((rc = ck_sql_plan(&all, &po, &p->graphs[0], &err))) goto fail;
    p->n = 1;
    *arena_out = arena;
    return 0;
  }
  if ((rc = check_ddl(e, script, arena, &err))) goto fail;
  p->graphs = ck_calloc((size_t)nq + 1, sizeof *p->graphs);
  for (int i = 0; i < script->nstmts; i++) {
    const ck_stmt_t *st = script->stmts[i];
    if (is_ddl(st)) continue;
    ck_script_t one;
    build_script(e, script, i, st, arena, &one);
    if ((rc = ck_sql_plan(&one, &po, &p->graphs[p->n], &err))) goto fail;
    p->n++;
  }
  *arena_out = arena;
  return 0;
fail:
  for (int i = 0; i < p->n; i++) ck_graph_free(p->graphs[i]);
  ck_free(p->graphs);
  memset(p, 0, sizeof *p);
  rc = fail_err(e, &err, sql);
  ck_arena_fini(arena);
  ck_free(arena);
  return rc;
}

static void accept_script(clink_engine_t *e, ck_arena_t *arena, const ck_script_t *s) {
  e->scripts = ck_realloc(e->scripts, sizeof *e->scripts * (size_t)(e->nscripts + 1));
  e->scripts[e->nscripts++] = arena;
  for (int i = 0; i < s->nstmts; i++) {
    if (!is_ddl(s->stmts[i])) continue;
    e->ddl = ck_realloc(e->ddl, sizeof *e->ddl * (size_t)(e->nddl + 1));
    e->ddl[e->nddl++] = s->stmts[i];
    if (s->stmts[i]->kind == CK_STMT_CREATE_TABLE) add_table(e, s->stmts[i]);
  }
}

static void drop_arena(ck_arena_t *arena) {
  ck_arena_fini(arena);
  ck_free(arena);
}

int clink_exec(clink_engine_t *e, const char *sql, clink_job_t **jobs, int max_jobs,
               int *njobs) {
  return clink_exec_len(e, sql, sql ? strlen(sql) : 0, jobs, max_jobs, njobs);
}

int clink_exec_len(clink_engine_t *e, const char *sql, size_t len, clink_job_t **jobs,
                   int max_jobs, int *njobs) {
  if (njobs) *njobs = 0;
  if (!e || !sql) return set_last(e, CLINK_EINVAL, 0, 0, "clink_exec: no engine or no SQL");
  ck_mutex_lock(&e->mu);
  int rc;
  if (e->closing) {
    rc = set_last(e, CLINK_ECLOSED, 0, 0, "the engine is closing");
    goto out;
  }
  reap(e);
  ck_arena_t *arena = NULL;
  ck_script_t script;
  planned_t p;
  if ((rc = prepare(e, sql, len, false, &arena, &script, &p))) goto out;
  accept_script(e, arena, &script); /* the tables, so the jobs' push/collect tables bind */
  clink_job_t **made = ck_calloc((size_t)p.n + 1, sizeof *made);
  for (int i = 0; i < p.n; i++) made[i] = job_new(e, p.graphs[i]);
  for (int i = 0; i < p.n && !rc && !e->o.one_job; i++) rc = bind_tables(e, made[i]);
  if (rc) {
    for (int i = 0; i < p.n; i++) {
      unbind_tables(e, made[i]);
      job_free(made[i]);
    }
  } else {
    for (int i = 0; i < p.n && !e->o.one_job; i++) fix_modes(made[i]);
    for (int i = 0; i < p.n; i++) {
      if ((rc = job_start(e, made[i]))) {
        set_last(e, rc, 0, 0, "could not start a thread for the job");
        for (int k = i; k < p.n; k++) job_free(made[k]);
        break;
      }
      if (jobs && i < max_jobs) jobs[i] = made[i];
      else made[i]->detached = true;
      if (njobs) *njobs = i + 1;
    }
  }
  ck_free(made);
  ck_free(p.graphs);
out:
  ck_mutex_unlock(&e->mu);
  return rc;
}

/* ---------------------------------------------------------------- Arrow streams */

typedef struct lstream {
  ck_hostq_t *q;
  ck_arena_t arena;
  ck_schema_t schema;
  char error[CK_ERR_MSG + 2 * CK_ERR_TEXT + 32];
} lstream_t;

/* The stream's shape: the job writing its table fixed it; before any does, asking fixes it as
 * append-only (hostio.h, ck_hostq_mode). */
static int st_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
  lstream_t *l = s->private_data;
  const char *key = NULL;
  int mode = ck_hostq_mode(l->q, CK_HOSTQ_APPEND, NULL, &key);
  ck_arrow_schema_export(&l->schema, mode == CK_HOSTQ_CHANGELOG, key, out);
  return 0;
}

static int st_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  lstream_t *l = s->private_data;
  ck_error_t err;
  ck_error_clear(&err);
  ck_batch_t *b = NULL;
  int rc = ck_hostq_get(l->q, &b, -1, NULL, &err);
  if (rc == 1) { /* a batch: its writer fixed the shape before it ran */
    ck_arrow_batch_export(b, ck_hostq_mode(l->q, CK_HOSTQ_UNSET, NULL, NULL) == CK_HOSTQ_CHANGELOG,
                          out);
    return 0;
  }
  if (rc == 3) {
    memset(out, 0, sizeof *out); /* release NULL: the end of the stream */
    return 0;
  }
  ck_error_format(&err, l->error, sizeof l->error);
  if (strncmp(l->error, "error: ", 7) == 0) memmove(l->error, l->error + 7, strlen(l->error) - 6);
  return rc == CK_ECANCELLED ? ECANCELED : EIO;
}

static const char *st_error(struct ArrowArrayStream *s) {
  lstream_t *l = s->private_data;
  return l->error[0] ? l->error : NULL;
}

static void st_release(struct ArrowArrayStream *s) {
  lstream_t *l = s->private_data;
  if (!l) return;
  /* the rows have nowhere to go now: a job still writing them fails instead of waiting for
   * ever (CK_EINVAL: the policy does not restart it into the same dead end) */
  ck_hostq_abort(l->q, CK_EINVAL, "the stream reading this table was released before its end");
  ck_hostq_unref(l->q);
  ck_arena_fini(&l->arena);
  ck_free(l);
  s->private_data = NULL;
  s->release = NULL;
}

static void stream_init(struct ArrowArrayStream *out, ck_hostq_t *q, const ck_schema_t *schema) {
  lstream_t *l = ck_calloc(1, sizeof *l);
  ck_hostq_ref(q);
  l->q = q;
  ck_arena_init(&l->arena, 0);
  l->schema = ck_schema_make(&l->arena, schema->ncols);
  for (int i = 0; i < schema->ncols; i++) {
    l->schema.names[i] = ck_arena_strdup(&l->arena, schema->names[i]);
    l->schema.types[i] = schema->types[i];
  }
  *out = (struct ArrowArrayStream){st_schema, st_next, st_error, st_release, l};
}

int clink_stream_poll(struct ArrowArrayStream *s, int64_t timeout_ms) {
  if (!s || s->get_next != st_next || !s->private_data) return CLINK_EINVAL;
  lstream_t *l = s->private_data;
  return ck_hostq_wait_ready(l->q, timeout_ms) ? 1 : 0;
}

int clink_collect(clink_engine_t *e, const char *table, struct ArrowArrayStream *out) {
  if (!e || !table || !out) return set_last(e, CLINK_EINVAL, 0, 0, "clink_collect: a NULL argument");
  ck_mutex_lock(&e->mu);
  int rc = 0;
  ltable_t *t = find_table(e, table);
  if (!t) rc = set_last(e, CLINK_ENOTFOUND, 0, 0, "could not collect table '%s': no such table", table);
  else if (t->kind != T_COLLECT)
    rc = set_last(e, CLINK_EINVAL, 0, 0, "could not collect table '%s': its connector is not "
                  "'collect'", table);
  else if (t->reader)
    rc = set_last(e, CLINK_EEXISTS, 0, 0, "could not collect table '%s': a stream reads it "
                  "already (one reader per table)", table);
  else if (e->closing) rc = set_last(e, CLINK_ECLOSED, 0, 0, "the engine is closing");
  if (!rc) {
    t->reader = true;
    stream_init(out, t->q, &t->schema);
  }
  ck_mutex_unlock(&e->mu);
  return rc;
}

int clink_query(clink_engine_t *e, const char *sql, struct ArrowArrayStream *out,
                clink_job_t **job) {
  if (job) *job = NULL;
  if (!e || !sql || !out) return set_last(e, CLINK_EINVAL, 0, 0, "clink_query: a NULL argument");
  ck_mutex_lock(&e->mu);
  int rc;
  if (e->closing) {
    rc = set_last(e, CLINK_ECLOSED, 0, 0, "the engine is closing");
    goto out;
  }
  reap(e);
  ck_arena_t *arena = NULL;
  ck_script_t script;
  planned_t p;
  if ((rc = prepare(e, sql, strlen(sql), true, &arena, &script, &p))) goto out;
  accept_script(e, arena, &script);
  clink_job_t *j = job_new(e, p.graphs[0]);
  ck_free(p.graphs);
  ck_node_t *sink = NULL;
  for (int i = 0; i < j->graph->nnodes; i++)
    if (j->graph->nodes[i].kind == CK_NODE_SINK) sink = &j->graph->nodes[i];
  ck_hostq_t *q = ck_hostq_new(e->o.collect_batches);
  sink->u.conn.connector = &ck_collect_connector;
  sink->u.conn.table = ck_arena_printf(&j->arena, "query-%lld", (long long)e->next_id);
  jqueue_t *jq = job_add_queue(j, sink->u.conn.table, q, true);
  jq->mode = sink->changelog ? CK_HOSTQ_CHANGELOG : CK_HOSTQ_APPEND;
  if (sink->changelog) jq->key = upsert_key(j->graph, sink);
  if ((rc = check_mode(e, "(the query's result)", &sink->u.conn.schema, q, jq->mode)) ||
      (rc = bind_tables(e, j))) {
    unbind_tables(e, j);
    job_free(j);
    ck_hostq_unref(q);
    goto out;
  }
  fix_modes(j);
  stream_init(out, q, &sink->u.conn.schema);
  ck_hostq_unref(q);
  if ((rc = job_start(e, j))) {
    out->release(out);
    job_free(j);
    set_last(e, rc, 0, 0, "could not start a thread for the job");
    goto out;
  }
  if (job) *job = j;
  else j->detached = true;
out:
  ck_mutex_unlock(&e->mu);
  return rc;
}

int clink_table_stats(clink_engine_t *e, const char *table, clink_table_stats_t *out) {
  if (!e || !table || !out || out->size < offsetof(clink_table_stats_t, rows_out) + sizeof(int64_t))
    return set_last(e, CLINK_EINVAL, 0, 0, "clink_table_stats: a NULL argument or a stats "
                    "struct without its size");
  ck_mutex_lock(&e->mu);
  int rc = 0;
  ltable_t *t = find_table(e, table);
  ck_hostq_t *q = t ? t->q : NULL;
  if (!t) rc = set_last(e, CLINK_ENOTFOUND, 0, 0, "could not read the statistics of table '%s': "
                        "no such table", table);
  else if (!q)
    rc = set_last(e, CLINK_EINVAL, 0, 0, "could not read the statistics of table '%s': its "
                  "connector is neither 'push' nor 'collect'", table);
  else ck_hostq_ref(q);
  ck_mutex_unlock(&e->mu);
  if (rc) return rc;
  ck_hostq_stats_t st;
  ck_hostq_stats(q, &st);
  ck_hostq_unref(q);
  size_t size = out->size < sizeof *out ? out->size : sizeof *out;
  clink_table_stats_t full = {sizeof *out, st.capacity, st.queued, st.blocked, st.batches_in,
                              st.batches_out, st.rows_in, st.rows_out};
  memcpy(out, &full, size);
  out->size = size;
  return 0;
}

/* ---------------------------------------------------------------- push */

int clink_push(clink_engine_t *e, const char *table, struct ArrowArray *array,
               struct ArrowSchema *schema) {
  int rc = 0;
  ck_hostq_t *q = NULL;
  const char *name = NULL;
  ck_schema_t s = {0};
  if (e && table) {
    ck_mutex_lock(&e->mu);
    ltable_t *t = find_table(e, table);
    if (!t) rc = set_last(e, CLINK_ENOTFOUND, 0, 0, "could not push into table '%s': no such table", table);
    else if (t->kind != T_PUSH)
      rc = set_last(e, CLINK_EINVAL, 0, 0, "could not push into table '%s': its connector is "
                    "not 'push'", table);
    else if (t->closed)
      rc = set_last(e, CLINK_ECLOSED, 0, 0, "could not push into table '%s': it was closed", table);
    else if (e->closing) rc = set_last(e, CLINK_ECLOSED, 0, 0, "the engine is closing");
    if (!rc) {
      q = t->q;
      ck_hostq_ref(q);
      s = t->schema;
      name = t->name;
    }
    ck_mutex_unlock(&e->mu);
  } else {
    rc = set_last(e, CLINK_EINVAL, 0, 0, "clink_push: no engine or no table");
  }
  if (rc) {
    if (array && array->release) array->release(array);
    if (schema && schema->release) schema->release(schema);
    return rc;
  }
  ck_error_t err;
  ck_error_clear(&err);
  ck_batch_t *b = NULL;
  rc = ck_arrow_batch_import(array, schema, &s, name, &b, &err);
  if (!rc && b->nrows) rc = ck_hostq_put(q, b, &err);
  else ck_batch_free(b);
  if (rc) {
    if (rc == CK_ECANCELLED) {
      rc = set_last(e, CLINK_ECLOSED, 0, 0, "could not push into table '%s': %s", table,
                    err.message);
    } else {
      fail_err(e, &err, NULL);
    }
  }
  ck_hostq_unref(q);
  return rc;
}

int clink_push_close(clink_engine_t *e, const char *table) {
  if (!e || !table) return set_last(e, CLINK_EINVAL, 0, 0, "clink_push_close: a NULL argument");
  ck_mutex_lock(&e->mu);
  int rc = 0;
  ltable_t *t = find_table(e, table);
  if (!t || t->kind != T_PUSH)
    rc = set_last(e, t ? CLINK_EINVAL : CLINK_ENOTFOUND, 0, 0,
                  "could not close table '%s': %s", table, t ? "its connector is not 'push'" : "no such table");
  else if (!t->closed) {
    t->closed = true;
    ck_hostq_end(t->q, 0, NULL);
  }
  ck_mutex_unlock(&e->mu);
  return rc;
}

/* ---------------------------------------------------------------- job handles */

static const char *const status_names[] = {"RUNNING", "FINISHED", "CANCELLED", "FAILED"};

const char *clink_job_status_name(clink_job_status_t s) {
  return s >= CLINK_JOB_RUNNING && s <= CLINK_JOB_FAILED ? status_names[s] : "?";
}

clink_job_status_t clink_job_status(clink_job_t *j) {
  ck_mutex_lock(&j->e->mu);
  clink_job_status_t s = j->status;
  ck_mutex_unlock(&j->e->mu);
  return s;
}

int64_t clink_job_id(clink_job_t *j) { return j->id; }

int clink_job_wait(clink_job_t *j, int64_t timeout_ms) {
  clink_engine_t *e = j->e;
  int64_t deadline = timeout_ms < 0 ? -1 : ck_mono_ms() + timeout_ms;
  ck_mutex_lock(&e->mu);
  while (!j->done) {
    if (deadline < 0) ck_cond_wait(&e->cv, &e->mu);
    else if (!ck_cond_wait_until(&e->cv, &e->mu, deadline) && ck_mono_ms() >= deadline) break;
  }
  int rc = j->done ? j->rc : CLINK_ETIMEOUT;
  ck_mutex_unlock(&e->mu);
  return rc;
}

void clink_job_cancel(clink_job_t *j) {
  ck_mutex_lock(&j->e->mu);
  bool done = j->done;
  ck_mutex_unlock(&j->e->mu);
  if (done) return;
  ck_mutex_lock(&j->cmu);
  j->cancel_asked = true;
  j->job.stopping = 1; /* the policy never restarts a job being stopped */
  ck_mutex_unlock(&j->cmu);
  /* a sink blocked on a full queue unwinds at once; so does a stream's reader */
  for (int i = 0; i < j->nqueues; i++)
    if (j->queues[i].sink) ck_hostq_abort(j->queues[i].q, CK_ECANCELLED, "the job was cancelled");
  lib_cancel(j, false, "cancelled by the host");
}

void clink_job_stop(clink_job_t *j) {
  ck_mutex_lock(&j->e->mu);
  bool done = j->done;
  ck_mutex_unlock(&j->e->mu);
  if (done) return;
  ck_mutex_lock(&j->cmu); /* the deployment's executor is alive while cmu is held */
  j->job.stopping = 1;  /* ck_job_run drains a deployment that starts after this */
  if (j->job.state == CK_JOB_RUNNING) ck_job_local_ops.cancel(&j->local, true, NULL);
  ck_mutex_unlock(&j->cmu);
}

void ck_lib_set_on_exec(clink_engine_t *e, void (*fn)(void *ctx, ck_exec_t *ex), void *ctx) {
  ck_mutex_lock(&e->mu);
  e->on_exec = fn;
  e->on_exec_ctx = ctx;
  ck_mutex_unlock(&e->mu);
}

const char *clink_job_error(clink_job_t *j, int *line, int *column) {
  ck_mutex_lock(&j->e->mu);
  const char *s = j->done ? j->error : NULL;
  if (line) *line = s ? j->err_line : 0;
  if (column) *column = s ? j->err_col : 0;
  ck_mutex_unlock(&j->e->mu);
  return s;
}

void clink_job_counts(clink_job_t *j, int64_t *read, int64_t *written) {
  int64_t r = 0, w = 0;
  ck_mutex_lock(&j->e->mu);
  bool done = j->done;
  if (done) {
    r = j->totals.source_records;
    w = j->totals.sink_records;
  }
  ck_mutex_unlock(&j->e->mu);
  if (!done) {
    ck_mutex_lock(&j->cmu);
    if (j->local.ex) {
      int64_t sum[CK_OPM_COUNT];
      ck_exec_metrics_sum(j->local.ex, sum, &r, &w);
    }
    ck_mutex_unlock(&j->cmu);
  }
  if (read) *read = r;
  if (written) *written = w;
}

void clink_job_free(clink_job_t *j) {
  if (!j) return;
  clink_engine_t *e = j->e;
  ck_mutex_lock(&e->mu);
  j->detached = true;
  reap(e); /* may free j */
  ck_mutex_unlock(&e->mu);
}

int clink_await_all(clink_engine_t *e, int64_t timeout_ms) {
  int64_t deadline = timeout_ms < 0 ? -1 : ck_mono_ms() + timeout_ms;
  ck_mutex_lock(&e->mu);
  int rc = 0;
  for (;;) {
    bool all = true;
    for (int i = 0; i < e->njobs; i++) all &= e->jobs[i]->done;
    if (all) break;
    if (deadline < 0) ck_cond_wait(&e->cv, &e->mu);
    else if (!ck_cond_wait_until(&e->cv, &e->mu, deadline) && ck_mono_ms() >= deadline) {
      rc = CLINK_ETIMEOUT;
      break;
    }
  }
  for (int i = 0; i < e->njobs && !rc; i++)
    if (e->jobs[i]->done && e->jobs[i]->rc) rc = e->jobs[i]->rc;
  if (rc && rc != CLINK_ETIMEOUT) {
    for (int i = 0; i < e->njobs; i++)
      if (e->jobs[i]->rc == rc) {
        set_last(e, rc, e->jobs[i]->err_line, e->jobs[i]->err_col, "%s: %s", e->jobs[i]->name,
                 e->jobs[i]->error ? e->jobs[i]->error : "cancelled");
        break;
      }
  }
  ck_mutex_unlock(&e->mu);
  return rc;
}

/* The running jobs, for a cancel outside the lock: the engine keeps them until close. */
void clink_cancel_all(clink_engine_t *e) {
  ck_mutex_lock(&e->mu);
  int n = e->njobs;
  clink_job_t **js = ck_calloc((size_t)n + 1, sizeof *js);
  if (n) memcpy(js, e->jobs, sizeof *js * (size_t)n);
  for (int i = 0; i < n; i++) js[i]->pins++; /* not reaped while we hold it */
  ck_mutex_unlock(&e->mu);
  for (int i = 0; i < n; i++) clink_job_cancel(js[i]);
  ck_mutex_lock(&e->mu);
  for (int i = 0; i < n; i++) js[i]->pins--;
  ck_mutex_unlock(&e->mu);
  ck_free(js);
}

void clink_engine_close(clink_engine_t *e) {
  if (!e) return;
  ck_mutex_lock(&e->mu);
  e->closing = true;
  /* every job is being stopped before its queues fail, so none takes that for a failure to
   * restart from */
  for (int i = 0; i < e->njobs; i++) {
    clink_job_t *j = e->jobs[i];
    ck_mutex_lock(&j->cmu);
    j->cancel_asked = true;
    j->job.stopping = 1;
    ck_mutex_unlock(&j->cmu);
  }
  for (int i = 0; i < e->ntables; i++)
    if (e->tables[i].q) ck_hostq_abort(e->tables[i].q, CK_EIO, "the engine was closed");
  ck_mutex_unlock(&e->mu);
  clink_cancel_all(e);
  for (int i = 0; i < e->njobs; i++) ck_thread_join(&e->jobs[i]->thread);
  for (int i = 0; i < e->njobs; i++) job_free(e->jobs[i]);
  ck_free(e->jobs);
  for (int i = 0; i < e->ntables; i++) ck_hostq_unref(e->tables[i].q);
  ck_free(e->tables);
  ck_free(e->ddl);
  for (int i = 0; i < e->nscripts; i++) drop_arena(e->scripts[i]);
  ck_free(e->scripts);
  ck_arena_fini(&e->arena);
  ck_cond_fini(&e->cv);
  ck_mutex_fini(&e->mu);
  ck_free(e->ckdir);
  ck_free(e->script_name);
  ck_free(e->capture_dir);
  if (e->log_hook && host_log_ctx == e->o.log_ctx) /* its callback may go with it */
    ck_log_set_hook(NULL, NULL);
  if (last.e == e) {
    last.e = NULL;
    ck_free(last.big);
    last.big = NULL;
  }
  ck_free(e);
}
