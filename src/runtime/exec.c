/*
 * DESIGN: see exec.h.
 *
 * Threads: one per subtask. A subtask owns its operators, its source or sink instance and the
 * receiving end of its input channel; it touches nothing of another subtask except by pushing
 * messages into that subtask's channel. The exec struct's shared fields are the stop flag and
 * the first error (under err_mu).
 *
 * Watermarks: a source subtask tracks the largest event time per partition; its watermark is
 * the least over partitions (an idle partition does not count; a subtask whose partitions are
 * all idle sends IDLE). A receiving subtask takes the least over its senders, ignoring idle
 * ones and counting ended ones as done. Watermarks only move forward. A table's computed
 * columns (DDL `name AS expr`, PROCTIME()) are added to each polled batch by its source subtask
 * (compute_columns) before rows without event time are dropped and watermarks are read, so a
 * computed column can be the event time; the connector only ever sees the physical columns.
 *
 * Checkpoints (DESIGN §4): an in-process coordinator thread (or, in a worker, the coordinator's
 * TRIGGER frame through ck_exec_trigger) triggers checkpoint N with a MSG_TRIGGER to each source
 * subtask; the message wakes the source out of its connector's poll (the wake fd), and the
 * source snapshots its position and its chain's state into a buffer, hands it to the writer
 * thread and sends BARRIER(N) to every downstream subtask; the writer makes the file durable
 * and only then acknowledges. A receiving subtask aligns: once a sender delivered BARRIER(N),
 * that sender's later messages are held back (stashed, in arrival order) until every sender
 * that has not ended delivered it; then it snapshots (acknowledged by the writer as above),
 * forwards the barrier and replays the stash. When every subtask acknowledged N, the
 * acknowledging thread (the writer) writes the COMPLETED marker and sends MSG_COMMIT(N) to each
 * sink subtask (in a worker: the COMMIT frame, ck_exec_complete), which commits on its own
 * thread as soon as it takes the message; the last one writes CONFIRMED. Control messages are
 * taken before the data queued in a channel, and no wait of a subtask has a timeout: it is
 * woken by a message or by the job's failure. One checkpoint is in flight at a time; whether
 * a trigger or a commit is of the final checkpoint is decided by checkpoint/coord.c and rides
 * on the message. When every source is done reading — end of input, or ck_exec_stop — they
 * wait for one final checkpoint, taken after the last output (the maximal watermark's windows
 * included), and sinks commit it before they finish: a job that ends or is stopped leaves
 * nothing uncommitted, and a rerun after it resumes exactly there. A final checkpoint that is
 * abandoned (its timeout) cannot be taken again by sources that ended: the coordinator thread
 * fails the job with coord.c's error naming it, and the job's policy restarts it.
 *
 * Interval evidence (capture/evidence.h, with --capture-dir): a sink subtask's barrier work
 * ends with its account of the interval encoded (sink_evidence, on its thread); the writer
 * thread writes epoch-<N>.sink.json after the snapshot is durable and before acknowledging, so
 * an acknowledgement implies the evidence, and a write that fails fails the checkpoint.
 */
#include "runtime/exec.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/thread.h"
#include "base/time.h"
#include "capture/evidence.h"
#include "checkpoint/coord.h"
#include "checkpoint/fault.h"
#include "checkpoint/store.h"
#include "checkpoint/trace.h"
#include "runtime/metrics.h"

/* What a subtask receives on its channel, and from whom. The data kinds travel in band (their
 * order relative to the batches is the protocol) and may cross the network (ck_exec_deliver:
 * their numbers are the wire's); the control kinds stay in this process and are taken before
 * any data waiting in the channel. */
typedef enum msg_kind {
  MSG_BATCH,     /* upstream subtask → receiver: rows (batch) */
  MSG_WATERMARK, /* upstream subtask → receiver: the sender's event time reached value */
  MSG_IDLE,      /* upstream subtask → receiver: the sender is idle, do not wait for it */
  MSG_BARRIER,   /* upstream subtask → receiver: checkpoint value's cut in the sender's stream */
  MSG_END,       /* upstream subtask → receiver: the sender has finished */
  MSG_TRIGGER,   /* checkpoint driver (coordinator thread, or ck_exec_trigger) → source subtask:
                  * take checkpoint value now; final: the last one, the source then ends */
  MSG_COMMIT,    /* checkpoint driver (the thread that completed it, or ck_exec_complete) → sink
                  * subtask: COMPLETED-value is durable, commit it; final: then finish */
} msg_kind_t;

typedef struct msg {
  msg_kind_t kind;
  int sender;
  ck_batch_t *batch;
  int64_t value;
  void *link;  /* arrived over the network: the credit to return once consumed */
  bool final;  /* MSG_TRIGGER, MSG_COMMIT */
} msg_t;

/* A bounded multi-producer, single-consumer queue of data messages, and beside it an unbounded
 * one of control messages (a few at a time: one checkpoint is in flight) that the consumer
 * takes first. A source subtask has only the control queue, and its wake fd (an eventfd its
 * connector's poll waits on too) is written with every control message. Every wait is
 * untimed: a failure of the job wakes them all (wake_all). */
typedef struct chan {
  ck_mutex_t mu;
  ck_cond_t not_empty, not_full;
  msg_t *ring;
  int cap, head, count;
  msg_t *ctl;
  int nctl, ctl_cap;
  int wake_fd;  /* sources: readable while a control message may be waiting; -1 otherwise */
} chan_t;

typedef struct task task_t;

/* A snapshot (or a CONFIRMED marker) for the writer thread to make durable. */
typedef struct write_job {
  struct write_job *next;
  task_t *task;
  int64_t id;
  bool confirm; /* write confirmed-<id> instead of a snapshot */
  ck_buf_t file;
  /* the chain's state, copied out at the barrier; encoded into `file` on the writer thread */
  ck_buf_t *bufs;
  ck_snap_section_t *sections;
  int nsections;
  /* a sink's interval evidence (capture/evidence.h), written before the acknowledgement */
  char *ev_path;
  ck_buf_t ev_text;
} write_job_t;
typedef struct exec_seg seg_t;

/* One link of a subtask's chain: where stage i's output goes. */
typedef struct stage {
  task_t *task;
  int index; /* position in the segment's node list */
} stage_t;

struct exec_seg {
  int first, last;  /* node ids, inclusive; a linear chain */
  int parallelism;
  int down;         /* downstream segment, -1 when the chain ends in a sink */
  task_t *tasks;
};

struct task {
  struct ck_exec *ex;
  seg_t *seg;
  int subtask;
  int nstages;
  ck_op_t *ops;     /* one per stage (unused for source and sink stages) */
  stage_t *stages;
  ck_source_t source;
  bool has_source, source_open;
  ck_sink_t sink;
  bool has_sink, sink_open;
  chan_t in;        /* unused for source segments */
  int nsenders, nended;
  int64_t *sender_wm;
  uint8_t *sender_idle;
  int64_t wm;       /* last watermark delivered into the chain */
  int rr;           /* rebalance cursor */
  int64_t sink_records, source_records, skipped, time_skipped;
  int64_t no_time;  /* runtime check: rows without event time a source produced, skipped */
  ck_thread_t thread;
  /* checkpoints */
  int index;                  /* in the job: snapshot directory v1/<index> */
  int64_t triggered;          /* sources: newest checkpoint taken (MSG_TRIGGER) */
  bool final_taken;           /* sources: that one was the final checkpoint */
  int64_t commit_upto;        /* sinks: newest completed checkpoint to commit (MSG_COMMIT) */
  int64_t final_commit;       /* sinks: the final checkpoint, once released; 0 until then */
  int64_t committed;          /* sinks: newest checkpoint committed */
  /* sinks, for the interval evidence: the barrier before the open interval in this run (the
   * restored checkpoint at first, 0 for a fresh start), the rows taken before it, the last
   * watermark the sink stage was given */
  int64_t ev_prev, ev_records, sink_wm;
  bool sink_has_wm;
  uint8_t *blocked;           /* receivers: sender delivered the barrier being aligned */
  int nblocked;
  int64_t aligning;           /* the barrier id being aligned, 0 when none */
  msg_t *stash;               /* messages of blocked senders, in arrival order */
  int nstash, stash_cap;
  bool finished;
  bool local;                 /* runs in this process (always, unless opts.remote places it) */
  ck_capture_rec_t **cap;     /* per stage: its recorder (capture/capture.h), NULL when off */
  int input;                  /* the sender of the message being handled (receivers) */
  bool started;               /* its thread was started */
  /* metrics, read by ck_exec_metrics from another thread */
  _Atomic int64_t *rows_in;   /* per stage: rows delivered into it */
  _Atomic int64_t rows_out;   /* rows the chain's last stage passed on (exchange or sink) */
  _Atomic int64_t blocked_ns; /* time spent waiting on a full channel or for credit */
  _Atomic int64_t wm_pub;     /* the watermark, published */
  _Atomic int64_t *late_pub;  /* per stage: its late_dropped, published after each call */
  _Atomic int64_t *state_pub; /* per stage: state_entries, state_bytes, likewise */
  _Atomic int64_t skipped_pub, time_skipped_pub; /* the source's, published after each poll */
};

struct ck_exec {
  const ck_graph_t *graph;
  ck_exec_opts_t opts;
  int nsegs;
  seg_t *segs;
  atomic_int stop;    /* sources stop reading (drain) */
  atomic_int failed;  /* a subtask failed: everyone unwinds */
  ck_mutex_t err_mu;
  ck_error_t err;
  ck_exec_totals_t totals;
  /* checkpoint coordination (ckpt_mu): the rules live in checkpoint/coord.c; embedded, this
   * process drives them (coordinator thread + acknowledgements); in a cluster worker, the
   * events go to opts.report and decisions come back through ck_exec_trigger/_complete. Either
   * way a decision reaches a subtask as a message (MSG_TRIGGER, MSG_COMMIT) on its channel,
   * carrying whether it is the final checkpoint: the subtasks keep no copy of coord.c's state */
  bool checkpointing;
  bool remote_coord;          /* opts.report: a coordinator elsewhere decides */
  char attempt[24];           /* this execution's attempt id (random), for the evidence */
  ck_store_t store;
  int ntasks, nsinks;
  task_t **all;               /* every task by index (remote ones included, never run here) */
  ck_thread_t coord_thread;
  ck_mutex_t ckpt_mu;
  ck_cond_t ckpt_cv;
  ck_ckpt_coord_t coord;      /* embedded only */
  int64_t last_triggered;     /* highest checkpoint id seen here */
  atomic_int any_finished;    /* a subtask reached the end of its input */
  ck_thread_t writer;         /* makes snapshots durable (wr_mu) */
  bool writer_started, coord_started;
  ck_mutex_t wr_mu;
  ck_cond_t wr_cv;
  write_job_t *wr_head, *wr_tail;
  bool wr_stop;
  int nsources;
  int sources_starting;       /* local sources not past their start (under ckpt_mu) */
  atomic_int done;            /* every subtask has exited */
  atomic_int stopped_sources; /* sources that stopped because of ck_exec_stop */
  int mem_account;            /* its subtask threads' allocations (0: none) */
  const ck_plan_t *plan;      /* opts.plan, or own_plan built from the graph */
  ck_plan_t own_plan;
  ck_capture_t *capture;      /* opts.capture: the job's recorder settings, NULL when off */
};

/* How long a source's connector may wait for rows before the source looks at its partitions'
 * idleness again (idle_timeout_ms). Not a control latency: a control message, ck_exec_stop and
 * the job's failure cut the wait short through the wake descriptor. */
enum { SOURCE_POLL_MS = 100 };

/* ---------------------------------------------------------------- channels */

/* wake_fd: true for a source subtask's channel (an eventfd for its connector's poll). */
static void chan_init(chan_t *c, int cap, bool wake_fd) {
  ck_mutex_init(&c->mu);
  ck_cond_init(&c->not_empty);
  ck_cond_init(&c->not_full);
  c->ring = ck_calloc((size_t)cap, sizeof *c->ring);
  c->cap = cap;
  c->head = c->count = 0;
  c->wake_fd = -1;
  if (wake_fd && (c->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
    CK_LOG_WARN("exec", "could not create a wake-up descriptor for a source subtask: %s; its "
                "checkpoint triggers wait for the end of its connector's poll (%d ms at most)",
                strerror(errno), (int)SOURCE_POLL_MS);
}

static void chan_fini(chan_t *c) {
  if (!c->ring) return;
  for (int i = 0; i < c->count; i++) ck_batch_free(c->ring[(c->head + i) % c->cap].batch);
  ck_free(c->ring);
  ck_free(c->ctl);
  if (c->wake_fd >= 0) close(c->wake_fd);
  ck_mutex_fini(&c->mu);
  ck_cond_fini(&c->not_empty);
  ck_cond_fini(&c->not_full);
}

/* Makes the source's poll return (any thread; async-signal-safe: one write). */
static void chan_wake(const chan_t *c) {
  if (c->wake_fd < 0) return;
  uint64_t one = 1;
  ssize_t w = write(c->wake_fd, &one, sizeof one); /* a full counter is still readable */
  (void)w;
}

/* The source's thread, before it looks at its control queue: a message pushed after this
 * writes the fd again, so a wake-up is never lost. */
static void chan_unwake(const chan_t *c) {
  if (c->wake_fd < 0) return;
  uint64_t n;
  ssize_t r = read(c->wake_fd, &n, sizeof n);
  (void)r;
}

/* A control message: never blocks (the checkpoint protocol keeps the queue to a few). */
static void chan_push_ctl(chan_t *c, msg_t m) {
  ck_mutex_lock(&c->mu);
  if (c->nctl == c->ctl_cap) {
    c->ctl_cap = c->ctl_cap ? c->ctl_cap * 2 : 4;
    c->ctl = ck_realloc(c->ctl, sizeof *c->ctl * (size_t)c->ctl_cap);
  }
  c->ctl[c->nctl++] = m;
  ck_cond_signal(&c->not_empty);
  ck_mutex_unlock(&c->mu);
  chan_wake(c);
}

/* Blocks while full. Returns CK_ECANCELLED (and frees the batch) when the job failed. */
static int chan_push(struct ck_exec *ex, chan_t *c, msg_t m) {
  ck_mutex_lock(&c->mu);
  while (c->count == c->cap) {
    if (atomic_load(&ex->failed)) {
      ck_mutex_unlock(&c->mu);
      ck_batch_free(m.batch);
      return CK_ECANCELLED;
    }
    ck_cond_wait(&c->not_full, &c->mu); /* a pop, or wake_all */
  }
  c->ring[(c->head + c->count) % c->cap] = m;
  c->count++;
  ck_cond_signal(&c->not_empty);
  ck_mutex_unlock(&c->mu);
  return 0;
}

/* A message that arrived over the network: never blocks — its sender held a credit, so the
 * space is owed; the ring grows past its capacity if local senders filled it meanwhile. */
static void chan_push_force(chan_t *c, msg_t m) {
  ck_mutex_lock(&c->mu);
  if (c->count == c->cap) {
    msg_t *ring = ck_calloc((size_t)c->cap * 2, sizeof *ring);
    for (int i = 0; i < c->count; i++) ring[i] = c->ring[(c->head + i) % c->cap];
    ck_free(c->ring);
    c->ring = ring;
    c->head = 0;
    c->cap *= 2;
  }
  c->ring[(c->head + c->count) % c->cap] = m;
  c->count++;
  ck_cond_signal(&c->not_empty);
  ck_mutex_unlock(&c->mu);
}

/* The next message, control ones first; waits for one when `wait` (CK_ETIMEOUT when not and
 * there is none). CK_ECANCELLED once the job failed. */
static int chan_pop(struct ck_exec *ex, chan_t *c, msg_t *m, bool wait) {
  ck_mutex_lock(&c->mu);
  while (wait && c->count == 0 && c->nctl == 0 && !atomic_load(&ex->failed))
    ck_cond_wait(&c->not_empty, &c->mu); /* a push, or wake_all */
  if (atomic_load(&ex->failed)) {
    ck_mutex_unlock(&c->mu);
    return CK_ECANCELLED;
  }
  if (c->nctl) {
    *m = c->ctl[0];
    memmove(c->ctl, c->ctl + 1, sizeof *c->ctl * (size_t)--c->nctl);
    ck_mutex_unlock(&c->mu);
    return 0;
  }
  if (c->count == 0) {
    ck_mutex_unlock(&c->mu);
    return CK_ETIMEOUT;
  }
  *m = c->ring[c->head];
  c->head = (c->head + 1) % c->cap;
  c->count--;
  ck_cond_signal(&c->not_full);
  ck_mutex_unlock(&c->mu);
  return 0;
}

/* The job failed (ex->failed is set): every wait of a subtask on a channel, of a source in its
 * poll, and of the coordinator thread returns and sees it. Any thread, no lock held. */
static void wake_all(struct ck_exec *ex) {
  for (int i = 0; i < ex->ntasks; i++) {
    task_t *t = ex->all[i];
    if (!t || !t->local) continue; /* every local subtask has its channel (ck_exec_new) */
    ck_mutex_lock(&t->in.mu);
    ck_cond_broadcast(&t->in.not_empty);
    ck_cond_broadcast(&t->in.not_full);
    ck_mutex_unlock(&t->in.mu);
    chan_wake(&t->in);
  }
  ck_mutex_lock(&ex->ckpt_mu);
  ck_cond_broadcast(&ex->ckpt_cv);
  ck_mutex_unlock(&ex->ckpt_mu);
}

/* ---------------------------------------------------------------- errors */

/* The job fails with rc (err: its first error, kept). Any thread, no lock held. */
static int exec_fail(struct ck_exec *ex, int rc, const ck_error_t *err) {
  if (rc == CK_ECANCELLED && atomic_load(&ex->failed)) return rc;
  ck_mutex_lock(&ex->err_mu);
  if (!ex->err.code) {
    if (err && err->code) ex->err = *err;
    else ck_error_set(&ex->err, rc, "%s", ck_error_default(rc));
  }
  ck_mutex_unlock(&ex->err_mu);
  if (!atomic_exchange(&ex->failed, 1)) wake_all(ex);
  return rc;
}

static int task_fail(task_t *t, int rc, const ck_error_t *err) { return exec_fail(t->ex, rc, err); }

/* ---------------------------------------------------------------- the chain */

static const ck_node_t *stage_node(const task_t *t, int i) {
  return &t->ex->graph->nodes[t->seg->first + i];
}

static int exchange_batch(task_t *t, ck_batch_t *batch, ck_error_t *err);
static int exchange_control(task_t *t, msg_kind_t kind, int64_t value);

/* Publishes stage i's operator counters for ck_exec_metrics (runtime/metrics.h). Its own
 * subtask's thread. */
static void publish_stage(task_t *t, int i) {
  const ck_op_metrics_t *m = &t->ops[i].metrics;
  atomic_store_explicit(&t->late_pub[i], m->late_dropped, memory_order_relaxed);
  atomic_store_explicit(&t->state_pub[2 * i], m->state_entries, memory_order_relaxed);
  atomic_store_explicit(&t->state_pub[2 * i + 1], m->state_bytes, memory_order_relaxed);
}

/* Delivers a batch to stage i of the chain (or past its end, to the exchange). Takes it. */
static int deliver_batch(task_t *t, int i, ck_batch_t *batch, ck_error_t *err) {
  if (ck_mem_over()) { /* the memory guard: at every batch, on every subtask thread */
    ck_batch_free(batch);
    return ck_mem_over_error(err);
  }
  if (i >= t->nstages) return exchange_batch(t, batch, err);
  const ck_node_t *n = stage_node(t, i);
  int rc = 0;
  atomic_fetch_add_explicit(&t->rows_in[i], (int64_t)batch->nrows, memory_order_relaxed);
  ck_capture_batch(t->cap[i], batch, i == 0 ? t->input : 0);
  if (n->kind == CK_NODE_SINK) {
    /* an update stream says so on every row, inserts included, so a reader can tell */
    if (n->changelog && !batch->kinds && batch->nrows) batch->kinds = ck_calloc(batch->nrows, 1);
    t->sink_records += (int64_t)batch->nrows;
    if (batch->nrows && t->sink.ops->take) return t->sink.ops->take(&t->sink, batch, err);
    if (batch->nrows) rc = t->sink.ops->write(&t->sink, batch, err);
  } else {
    rc = t->ops[i].ops->process(&t->ops[i], batch, err);
    publish_stage(t, i);
  }
  ck_batch_free(batch);
  return rc;
}

static int deliver_watermark(task_t *t, int i, int64_t wm, ck_error_t *err) {
  if (i == 0 || (i == 1 && t->has_source)) atomic_store_explicit(&t->wm_pub, wm, memory_order_relaxed);
  if (i >= t->nstages) return exchange_control(t, MSG_WATERMARK, wm);
  const ck_node_t *n = stage_node(t, i);
  ck_capture_event(t->cap[i], CK_CAPTURE_WATERMARK, wm, i == 0 ? t->input : 0);
  if (n->kind == CK_NODE_SINK) {
    t->sink_wm = wm, t->sink_has_wm = true;
    return 0;
  }
  t->ops[i].metrics.watermark = wm;
  int rc = t->ops[i].ops->watermark(&t->ops[i], wm, err);
  publish_stage(t, i);
  return rc;
}

static int stage_out_batch(void *ctx, ck_batch_t *batch, ck_error_t *err) {
  stage_t *s = ctx;
  return deliver_batch(s->task, s->index + 1, batch, err);
}

static int stage_out_watermark(void *ctx, int64_t wm, ck_error_t *err) {
  stage_t *s = ctx;
  return deliver_watermark(s->task, s->index + 1, wm, err);
}

/* ---------------------------------------------------------------- exchange */

/* One message from task t to task dest: into dest's channel when it runs here (blocking while
 * the channel is full), else over the network (blocking while the link has no credit). Takes
 * the batch. The time spent blocked is t's backpressure. */
static int push_to(task_t *t, task_t *dest, msg_t m, ck_error_t *err) {
  struct ck_exec *ex = t->ex;
  int64_t t0 = ck_mono_ns();
  int rc;
  if (dest->local) {
    rc = chan_push(ex, &dest->in, m);
  } else {
    const ck_exec_remote_t *r = ex->opts.remote;
    ck_error_t local;
    ck_error_clear(&local);
    rc = r->send(r->ctx, r->slot_worker[dest->subtask % r->nslots], t->index, m.sender,
                 dest->index, (int)m.kind, m.value, m.batch, &ex->failed, err ? err : &local);
    if (rc && !err) task_fail(t, rc, &local);
  }
  int64_t waited = ck_mono_ns() - t0;
  if (waited > 1000000) atomic_fetch_add_explicit(&t->blocked_ns, waited, memory_order_relaxed);
  return rc;
}

static int exchange_batch(task_t *t, ck_batch_t *batch, ck_error_t *err) {
  struct ck_exec *ex = t->ex;
  if (t->seg->down < 0 || batch->nrows == 0) {
    ck_batch_free(batch);
    return 0;
  }
  atomic_fetch_add_explicit(&t->rows_out, (int64_t)batch->nrows, memory_order_relaxed);
  seg_t *d = &ex->segs[t->seg->down];
  const ck_node_t *dn = &ex->graph->nodes[d->first];
  if (d->parallelism == 1)
    return push_to(t, &d->tasks[0], (msg_t){MSG_BATCH, t->subtask, batch, 0, NULL}, err);
  if (dn->edge != CK_EDGE_HASH) {
    int target = t->rr++ % d->parallelism;
    if (dn->edge == CK_EDGE_FORWARD && t->seg->parallelism == d->parallelism) target = t->subtask;
    return push_to(t, &d->tasks[target], (msg_t){MSG_BATCH, t->subtask, batch, 0, NULL}, err);
  }
  /* by key group */
  int P = d->parallelism;
  ck_batch_t **parts = ck_calloc((size_t)P, sizeof *parts);
  ck_type_t types[batch->ncols ? batch->ncols : 1];
  for (int c = 0; c < batch->ncols; c++) types[c] = batch->cols[c].type;
  for (size_t r = 0; r < batch->nrows; r++) {
    uint64_t h = ck_key_hash(batch, dn->key_cols, dn->nkeys, r);
    int kg = ck_key_group(h, ex->graph->max_parallelism);
    int s = ck_key_group_subtask(kg, ex->graph->max_parallelism, P);
    if (!parts[s]) parts[s] = ck_batch_new(batch->ncols, types, batch->nrows / (size_t)P + 16);
    ck_batch_append_row(parts[s], batch, r);
  }
  ck_batch_free(batch);
  int rc = 0;
  for (int s = 0; s < P; s++) {
    if (!parts[s]) continue;
    if (rc) {
      ck_batch_free(parts[s]);
      continue;
    }
    ck_batch_seal(parts[s]);
    rc = push_to(t, &d->tasks[s], (msg_t){MSG_BATCH, t->subtask, parts[s], 0, NULL}, err);
  }
  ck_free(parts);
  return rc;
}

static int exchange_control(task_t *t, msg_kind_t kind, int64_t value) {
  struct ck_exec *ex = t->ex;
  if (t->seg->down < 0) return 0;
  seg_t *d = &ex->segs[t->seg->down];
  for (int s = 0; s < d->parallelism; s++) {
    int rc = push_to(t, &d->tasks[s], (msg_t){kind, t->subtask, NULL, value, NULL}, NULL);
    if (rc) return rc;
  }
  return 0;
}


/* ---------------------------------------------------------------- checkpoints */

static void writer_push(struct ck_exec *ex, write_job_t *job) {
  ck_mutex_lock(&ex->wr_mu);
  if (ex->wr_tail) ex->wr_tail->next = job;
  else ex->wr_head = job;
  ex->wr_tail = job;
  ck_cond_signal(&ex->wr_cv);
  ck_mutex_unlock(&ex->wr_mu);
}

/* Sinks of this process may commit `id` (COMPLETED-id is durable; final: it is the final
 * checkpoint): MSG_COMMIT to each. Under ckpt_mu, so that no trigger of a later checkpoint
 * (ck_ckpt_coord_tick, also under it) goes out before: MSG_COMMIT N is in a sink's control
 * queue before BARRIER N+1 can reach it, and control messages are taken first, so the sink
 * commits N before it prepares N+1 (a source with a sink: its queue holds them in order). */
static void release_commits_locked(struct ck_exec *ex, int64_t id, bool final) {
  for (int i = 0; i < ex->ntasks; i++)
    if (ex->all[i]->has_sink && ex->all[i]->local)
      chan_push_ctl(&ex->all[i]->in, (msg_t){MSG_COMMIT, -1, NULL, id, NULL, final});
  ck_cond_broadcast(&ex->ckpt_cv);
}

/* Task t's snapshot of id is durable (on the writer thread). */
static int ack_checkpoint(task_t *t, int64_t id, ck_error_t *err) {
  struct ck_exec *ex = t->ex;
  if (ex->remote_coord) {
    ex->opts.report->ack(ex->opts.report->ctx, id, t->index);
    return 0;
  }
  ck_mutex_lock(&ex->ckpt_mu);
  int rc = ck_ckpt_coord_ack(&ex->coord, id, err);
  if (rc == 1) {
    release_commits_locked(ex, id, ck_ckpt_coord_final_done(&ex->coord));
    ck_ckpt_coord_prune(&ex->coord); /* while the sinks commit */
  }
  ck_mutex_unlock(&ex->ckpt_mu);
  return rc < 0 ? rc : 0;
}

static int maybe_commit(task_t *t, ck_error_t *err);

/* A sink stage's interval evidence for checkpoint id (stage i), encoded on the sink's thread
 * (path, text); the writer thread writes it before it acknowledges (capture/evidence.h). With
 * --capture-dir only. An account the sink cannot give fails the barrier. */
static int sink_evidence(task_t *t, int i, int64_t id, char **path_out, ck_buf_t *text,
                         ck_error_t *err) {
  struct ck_exec *ex = t->ex;
  const ck_node_t *node = stage_node(t, i);
  ck_buf_t account;
  ck_buf_init(&account);
  int rc = t->sink.ops->account ? t->sink.ops->account(&t->sink, id, &account, err) : 0;
  if (rc) {
    ck_buf_fini(&account);
    return rc;
  }
  ck_evidence_t ev = {
      .op = node->id, .op_name = node->name, .table = t->sink.ctx.table,
      .connector = node->u.conn.connector ? node->u.conn.connector->name : NULL,
      .subtask = t->subtask, .task = t->index, .checkpoint = id, .previous = t->ev_prev,
      .restored_from = ex->opts.ckpt.restore_id, .attempt = ex->attempt,
      .has_watermark = t->sink_has_wm, .watermark = t->sink_wm,
      .records = t->sink_records - t->ev_records,
      .account = account.len ? account.data : NULL, .account_len = account.len};
  ck_capture_last(t->cap[i], &ev.capture); /* the interval ck_capture_barrier just closed */
  char path[4096];
  ck_evidence_path(ex->opts.capture.dir, node->id, t->subtask, id, path, sizeof path);
  *path_out = ck_strdup(path);
  ck_evidence_encode(&ev, text);
  ck_buf_fini(&account);
  t->ev_prev = id;
  t->ev_records = t->sink_records;
  return 0;
}

/* Snapshots the whole chain of this subtask for checkpoint id and sends the barrier on. A
 * sink first commits what was released before (a sink has one interval awaiting commit at
 * most: preparing N+1 while N's commit waits lets N+1's state drop N's rows, and a lost commit
 * of N is then rewound over output another sink already committed; docs/protocol.md, F1). */
static int take_checkpoint(task_t *t, int64_t id, ck_error_t *err) {
  struct ck_exec *ex = t->ex;
  ck_snap_section_t sections[64];
  ck_buf_t bufs[64];
  int n = 0, rc = maybe_commit(t, err), sink_stage = -1;
  if (rc) return rc;
  CK_TRACE("barrier", "ckpt=%lld sink=%d", (long long)id, (int)t->has_sink);
  for (int i = 0; i < t->nstages && n < 64 && !rc; i++) {
    const ck_node_t *node = stage_node(t, i);
    ck_buf_init(&bufs[n]);
    uint8_t kind;
    if (node->kind == CK_NODE_SOURCE) {
      kind = CK_SNAP_SOURCE;
      rc = t->source.ops->snapshot(&t->source, &bufs[n], err);
    } else if (node->kind == CK_NODE_SINK) {
      kind = CK_SNAP_SINK;
      ck_fault(CK_FAULT_BEFORE_PREPARE);
      rc = t->sink.ops->prepare(&t->sink, id, &bufs[n], err);
      sink_stage = i;
      if (!rc) CK_TRACE("prepare", "ckpt=%lld", (long long)id);
      if (!rc) ck_fault(CK_FAULT_AFTER_PREPARE);
    } else {
      kind = CK_SNAP_OP;
      rc = t->ops[i].ops->snapshot(&t->ops[i], &bufs[n], err);
    }
    if (!rc) ck_capture_barrier(t->cap[i], id, NULL); /* closes the stage's epoch id */
    sections[n] = (ck_snap_section_t){(uint32_t)node->id, kind, bufs[n].data ? bufs[n].data : "",
                                      bufs[n].len, node->name,
                                      node->kind == CK_NODE_AGG ? ck_agg_snap_split : NULL};
    n++;
  }
  char *ev_path = NULL;
  ck_buf_t ev_text;
  ck_buf_init(&ev_text);
  if (!rc && sink_stage >= 0 && ex->opts.capture.dir)
    rc = sink_evidence(t, sink_stage, id, &ev_path, &ev_text, err);
  if (!rc) {
    /* the state is copied out; encoding, write and fsync happen on the writer thread, which
     * acknowledges once the file is durable, while this subtask goes on with the next records */
    write_job_t *job = ck_calloc(1, sizeof *job);
    job->task = t;
    job->id = id;
    ck_buf_init(&job->file);
    job->bufs = ck_malloc(sizeof *job->bufs * (size_t)(n ? n : 1));
    job->sections = ck_malloc(sizeof *job->sections * (size_t)(n ? n : 1));
    memcpy(job->bufs, bufs, sizeof *bufs * (size_t)n); /* the sections point into their blocks */
    memcpy(job->sections, sections, sizeof *sections * (size_t)n);
    job->nsections = n;
    job->ev_path = ev_path;
    job->ev_text = ev_text;
    writer_push(ex, job);
    n = 0; /* the job owns the buffers now */
  } else {
    ck_free(ev_path);
    ck_buf_fini(&ev_text);
  }
  for (int i = 0; i < n; i++) ck_buf_fini(&bufs[i]);
  if (!rc) rc = exchange_control(t, MSG_BARRIER, id);
  if (!rc && t->has_source) /* bench/control reads these timestamps */
    CK_LOG_DEBUG("checkpoint", "subtask %d injected barrier %lld at_us=%lld", t->index,
                 (long long)id, (long long)(ck_mono_ns() / 1000));
  return rc;
}

/* The writer thread: snapshot files and markers become durable here, in order, and the
 * acknowledgement (and so the completion of a checkpoint) follows each snapshot's fsync. */
static int write_snapshot(write_job_t *job, ck_error_t *err) {
  task_t *t = job->task;
  struct ck_exec *ex = t->ex;
  if (job->confirm) { /* a sink committed job->id */
    ck_mutex_lock(&ex->ckpt_mu);
    int rc = ck_ckpt_coord_committed(&ex->coord, job->id, err);
    ck_mutex_unlock(&ex->ckpt_mu);
    return rc < 0 ? rc : 0;
  }
  char rel[128];
  ck_snap_path(t->index, job->id, rel, sizeof rel);
  int rc = ck_fault_err(CK_FAULT_BEFORE_SNAPSHOT_WRITE, err);
  bool injected = rc != 0; /* the fault point's "fail": the job rewinds (fault.h), always */
  if (!rc)
    ck_snap_encode(job->id, ex->opts.ckpt.fingerprint, t->index, job->sections, job->nsections,
                   &job->file);
  if (!rc) rc = ck_store_write(&ex->store, rel, job->file.data, job->file.len, err);
  if (rc) {
    err->retriable = true; /* the checkpoint fails; a restart rewinds to the last one */
    ck_error_detail(err, "subtask %d could not write its snapshot for checkpoint %lld", t->index,
                    (long long)job->id);
    CK_TRACE("snapshot_failed", "dir=%s task=%d ckpt=%lld", ex->store.root, t->index, (long long)job->id);
    if (ex->remote_coord || injected) return rc; /* a cluster's worker: the job fails, as before */
    /* the checkpoint aborts and the job runs on, as long as such failures are tolerated */
    ck_error_t ferr;
    ck_error_clear(&ferr);
    ck_mutex_lock(&ex->ckpt_mu);
    int frc = ck_ckpt_coord_store_failed(&ex->coord, job->id, err, ck_mono_ms(), &ferr);
    ck_cond_broadcast(&ex->ckpt_cv);
    ck_mutex_unlock(&ex->ckpt_mu);
    if (frc) *err = ferr;
    return frc;
  }
  CK_TRACE("snapshot_durable", "dir=%s task=%d ckpt=%lld", ex->store.root, t->index, (long long)job->id);
  if (job->ev_path) { /* the sink's interval evidence: before the acknowledgement, or none */
    rc = ck_evidence_write(job->ev_path, job->ev_text.data, job->ev_text.len, err);
    if (rc) {
      err->retriable = true; /* the checkpoint fails, as a snapshot that cannot be written */
      ck_error_hint(err, "checkpoint %lld is not acknowledged without its evidence; the job "
                    "rewinds to its last completed checkpoint", (long long)job->id);
      return rc;
    }
  }
  ck_fault(CK_FAULT_AFTER_SNAPSHOT_WRITE);
  return ack_checkpoint(t, job->id, err);
}

static void *writer_main(void *arg) {
  struct ck_exec *ex = arg;
  ck_mutex_lock(&ex->wr_mu);
  for (;;) {
    while (!ex->wr_head && !ex->wr_stop) ck_cond_wait(&ex->wr_cv, &ex->wr_mu);
    write_job_t *job = ex->wr_head;
    if (!job) break; /* stopped and drained */
    ex->wr_head = job->next;
    if (!ex->wr_head) ex->wr_tail = NULL;
    ck_mutex_unlock(&ex->wr_mu);
    ck_error_t err;
    ck_error_clear(&err);
    int rc = atomic_load(&ex->failed) ? 0 : write_snapshot(job, &err);
    if (rc) task_fail(job->task, rc, &err);
    ck_buf_fini(&job->file);
    ck_buf_fini(&job->ev_text);
    ck_free(job->ev_path);
    for (int i = 0; i < job->nsections; i++) ck_buf_fini(&job->bufs[i]);
    ck_free(job->bufs);
    ck_free(job->sections);
    ck_free(job);
    ck_mutex_lock(&ex->wr_mu);
  }
  ck_mutex_unlock(&ex->wr_mu);
  return NULL;
}

/* Sinks: commit what the newest completed checkpoint covers, on the sink's own thread. */
static int maybe_commit(task_t *t, ck_error_t *err) {
  if (!t->has_sink || !t->sink_open) return 0;
  int64_t upto = t->commit_upto;
  if (upto <= t->committed) return 0;
  CK_LOG_DEBUG("checkpoint", "subtask %d commits checkpoint %lld at_us=%lld", t->index,
               (long long)upto, (long long)(ck_mono_ns() / 1000));
  ck_fault(CK_FAULT_BEFORE_COMMIT);
  int rc = t->sink.ops->commit(&t->sink, upto, err);
  if (rc) return rc;
  CK_TRACE("commit", "ckpt=%lld", (long long)upto);
  ck_fault(CK_FAULT_AFTER_COMMIT);
  t->committed = upto;
  struct ck_exec *ex = t->ex;
  if (ex->remote_coord) {
    ex->opts.report->committed(ex->opts.report->ctx, upto, t->index);
    return 0;
  }
  /* counted (and CONFIRMED written) on the writer thread, behind the snapshots queued before */
  write_job_t *job = ck_calloc(1, sizeof *job);
  job->task = t;
  job->id = upto;
  job->confirm = true;
  writer_push(ex, job);
  return 0;
}

/* Restores this subtask's chain from its snapshot of the restore checkpoint. */
static int restore_task(task_t *t, ck_error_t *err) {
  struct ck_exec *ex = t->ex;
  int64_t id = ex->opts.ckpt.restore_id;
  char rel[128];
  ck_snap_path(t->index, id, rel, sizeof rel);
  ck_buf_t file;
  ck_buf_init(&file);
  int rc = ck_store_read(&ex->store, rel, &file, err);
  char path[4400];
  ck_store_path(&ex->store, rel, path, sizeof path);
  if (rc == CK_ENOTFOUND)
    rc = ck_error_set(err, CK_ESTATE, "could not restore checkpoint %lld: snapshot file '%s' of "
                      "subtask %d is missing", (long long)id, path, t->index);
  ck_snap_section_t sections[64];
  int n = 0;
  ck_buf_t parts; /* the components' encodings, put together from the file's rows */
  ck_buf_init(&parts);
  if (!rc)
    rc = ck_snap_decode_in_place(file.data, file.len, id, ex->opts.ckpt.fingerprint, t->index,
                                 &ck_agg_snap_joiner, sections, 64, &n, &parts, err);
  if (rc == CK_ESTATE && n == 0)
    ck_error_detail(err, "the file is '%s'; a rerun falls back to an older checkpoint when the "
                    "job's sinks allow it", path);
  for (int k = 0; k < n && !rc; k++) {
    for (int i = 0; i < t->nstages && !rc; i++) {
      const ck_node_t *node = stage_node(t, i);
      if ((uint32_t)node->id != sections[k].node) continue;
      if (node->kind == CK_NODE_SOURCE)
        rc = t->source.ops->restore(&t->source, sections[k].data, sections[k].len, err);
      else if (node->kind == CK_NODE_SINK)
        rc = t->sink.ops->recover ? t->sink.ops->recover(&t->sink, id, sections[k].data,
                                                         sections[k].len, err)
                                  : 0;
      else
        rc = t->ops[i].ops->restore(&t->ops[i], sections[k].data, sections[k].len, err);
    }
  }
  ck_buf_fini(&file);
  ck_buf_fini(&parts);
  t->committed = id;
  return rc;
}

/* Hands checkpoint id to every local source: MSG_TRIGGER (final: the last one). Under
 * ckpt_mu. */
static void trigger_sources(struct ck_exec *ex, int64_t id, bool final) {
  if (id > ex->last_triggered) ex->last_triggered = id;
  for (int i = 0; i < ex->ntasks; i++)
    if (ex->all[i]->has_source && ex->all[i]->local)
      chan_push_ctl(&ex->all[i]->in, (msg_t){MSG_TRIGGER, -1, NULL, id, NULL, final});
}

/* The embedded coordinator: asks coord.c what to trigger, when an event (a checkpoint
 * completed, a source done, the end) or coord.c's next deadline wakes it. A final checkpoint
 * it abandoned fails the job (coord.h: the deployment cannot finish; the policy restarts it). */
static void *coordinator_main(void *arg) {
  struct ck_exec *ex = arg;
  ck_mutex_lock(&ex->ckpt_mu);
  while (!atomic_load(&ex->failed) && !atomic_load(&ex->done)) {
    bool final;
    int64_t wake_at;
    int64_t id = ck_ckpt_coord_tick(&ex->coord, ck_mono_ms(), &final, &wake_at);
    ck_error_t ferr;
    ck_error_clear(&ferr);
    int frc = ck_ckpt_coord_final_error(&ex->coord, &ferr);
    if (frc) {
      ck_mutex_unlock(&ex->ckpt_mu); /* exec_fail wakes every waiter, under ckpt_mu too */
      exec_fail(ex, frc, &ferr);
      return NULL;
    }
    if (id) {
      CK_LOG_DEBUG("checkpoint", "checkpoint %lld triggered at_us=%lld", (long long)id,
                   (long long)(ck_mono_ns() / 1000));
      trigger_sources(ex, id, final);
      continue;
    }
    ck_cond_wait_until(&ex->ckpt_cv, &ex->ckpt_mu, wake_at);
  }
  ck_mutex_unlock(&ex->ckpt_mu);
  return NULL;
}

void ck_exec_trigger(ck_exec_t *ex, int64_t id, bool final) {
  ck_mutex_lock(&ex->ckpt_mu);
  trigger_sources(ex, id, final);
  ck_mutex_unlock(&ex->ckpt_mu);
}

void ck_exec_complete(ck_exec_t *ex, int64_t id, bool final) {
  ck_mutex_lock(&ex->ckpt_mu);
  release_commits_locked(ex, id, final);
  ck_mutex_unlock(&ex->ckpt_mu);
}

/* A control message, on the subtask's thread: a trigger is taken at once (a newer one
 * replaces an older one not yet taken, and says whether it is the final one); a commit
 * raises what the sink commits, at once. */
static int handle_ctl(task_t *t, msg_t m, ck_error_t *err) {
  if (m.kind == MSG_TRIGGER) {
    if (m.value <= t->triggered) return 0;
    t->triggered = m.value;
    t->final_taken = m.final;
    return take_checkpoint(t, m.value, err);
  }
  if (m.value > t->commit_upto) t->commit_upto = m.value;
  if (m.final && m.value > t->final_commit) t->final_commit = m.value;
  return maybe_commit(t, err);
}

/* A sink is done with checkpoints: it committed the final one. */
static bool sink_final_committed(const task_t *t) {
  return t->final_commit && t->committed >= t->final_commit;
}

/* ---------------------------------------------------------------- subtasks */

static int open_task(task_t *t, ck_error_t *err) {
  for (int i = 0; i < t->nstages; i++) {
    const ck_node_t *n = stage_node(t, i);
    t->cap[i] = ck_capture_rec_new(t->ex->capture, n, t->subtask, t->index);
    /* a source with computed columns hands its connector the physical ones alone */
    const ck_schema_t *schema = n->kind == CK_NODE_SOURCE && n->u.conn.ncomputed
                                    ? &n->u.conn.phys
                                    : &n->u.conn.schema;
    ck_conn_ctx_t ctx = {n->u.conn.table, schema, &n->u.conn.options, t->subtask,
                         t->seg->parallelism, t->ex->opts.job_name,
                         n->kind == CK_NODE_SOURCE && t->in.wake_fd >= 0 ? &t->in.wake_fd : NULL,
                         t->ex->opts.host};
    int rc = 0;
    bool restoring = t->ex->checkpointing && t->ex->opts.ckpt.restore_id > 0;
    if (n->kind == CK_NODE_SOURCE) {
      t->source.ops = n->u.conn.connector->source;
      t->source.ctx = ctx;
      rc = t->source.ops->open(&t->source, err);
      t->source_open = rc == 0 || t->source.impl; /* a half-open source is closed too */
    } else if (n->kind == CK_NODE_SINK) {
      t->sink.ops = n->u.conn.connector->sink;
      t->sink.ctx = ctx;
      rc = t->sink.ops->open(&t->sink, restoring, err);
      t->sink_open = rc == 0 || t->sink.impl; /* a half-open sink is closed too */
    } else {
      ck_op_t *op = &t->ops[i];
      op->node = n;
      op->subtask = t->subtask;
      op->parallelism = t->seg->parallelism;
      op->max_parallelism = t->ex->graph->max_parallelism;
      op->out = (ck_out_t){stage_out_batch, stage_out_watermark, &t->stages[i]};
      rc = n->kind == CK_NODE_CALC ? ck_calc_op_init(op, err) : ck_agg_op_init(op, err);
      if (!rc) rc = op->ops->open(op, err);
      if (rc) op->ops = NULL;
    }
    if (rc) return rc;
  }
  if (t->ex->checkpointing && t->ex->opts.ckpt.restore_id > 0) {
    int64_t t0 = ck_mono_ns();
    int rc = restore_task(t, err);
    CK_LOG_DEBUG("checkpoint", "subtask %d restored checkpoint %lld in %.1f ms", t->index,
                 (long long)t->ex->opts.ckpt.restore_id, (double)(ck_mono_ns() - t0) / 1e6);
    return rc;
  }
  return 0;
}

/* The source's skip counters, into the task and its published copies (source thread). */
static void publish_source_counts(task_t *t) {
  if (!t->source_open) return;
  if (t->source.ops->skipped) t->skipped = t->source.ops->skipped(&t->source);
  t->time_skipped = t->no_time;
  if (t->source.ops->time_skipped) t->time_skipped += t->source.ops->time_skipped(&t->source);
  atomic_store_explicit(&t->skipped_pub, t->skipped, memory_order_relaxed);
  atomic_store_explicit(&t->time_skipped_pub, t->time_skipped, memory_order_relaxed);
}

static void close_task(task_t *t) {
  publish_source_counts(t);
  for (int i = 0; i < t->nstages; i++)
    if (t->ops[i].ops) t->ops[i].ops->close(&t->ops[i]), t->ops[i].ops = NULL;
  if (t->source_open) t->source.ops->close(&t->source), t->source_open = false;
  if (t->sink_open) t->sink.ops->close(&t->sink), t->sink_open = false;
}

/* Ends the chain: sinks flush; END goes downstream. */
static int finish_task(task_t *t, ck_error_t *err) {
  struct ck_exec *ex = t->ex;
  /* a sink commits the final checkpoint before it finishes: wait for its MSG_COMMIT */
  while (ex->checkpointing && t->has_sink && !sink_final_committed(t)) {
    msg_t m;
    int rc = chan_pop(ex, &t->in, &m, true);
    if (rc) return rc;
    if (m.kind == MSG_TRIGGER || m.kind == MSG_COMMIT) {
      if ((rc = handle_ctl(t, m, err))) return rc;
      continue;
    }
    ck_batch_free(m.batch); /* every sender has ended: no data can come */
    if (m.link) ex->opts.remote->consumed(ex->opts.remote->ctx, m.link);
  }
  if (atomic_load(&ex->failed)) return CK_ECANCELLED;
  t->finished = true;
  atomic_store(&t->ex->any_finished, 1);
  if (t->has_sink && t->sink_open) {
    int rc = t->sink.ops->finish(&t->sink, err);
    if (rc) return rc;
  }
  for (int i = 0; i < t->nstages; i++) ck_capture_finish(t->cap[i], NULL); /* epoch-final */
  return exchange_control(t, MSG_END, 0);
}


/* event_time_null for sources that do not check it themselves (the file and kafka connectors
 * do, naming the record): a row whose event time is NULL is skipped and counted (skip) or
 * fails the job naming the table and partition (fail). Source thread. */
static int drop_rows_without_time(task_t *t, const ck_conn_spec_t *spec, int part, bool skip,
                                  ck_batch_t **batch, ck_error_t *err) {
  const ck_col_t *c = &(*batch)->cols[spec->event_time_col];
  size_t n = (*batch)->nrows, missing = 0;
  if (!c->validity) return 0;
  for (size_t i = 0; i < n; i++) missing += !ck_col_valid(c, i);
  if (!missing) return 0;
  const char *col = spec->schema.names[spec->event_time_col];
  if (!skip) {
    ck_error_set(err, CK_EDECODE, "a record of table '%s' (partition %d of subtask %d) has no "
                 "event time: its event_time_column '%s' is NULL", spec->table, part, t->subtask,
                 col);
    ck_error_hint(err, "event_time_null = 'skip' counts and skips such records instead");
    return CK_EDECODE;
  }
  uint8_t *keep = ck_malloc(n ? n : 1);
  for (size_t i = 0; i < n; i++) keep[i] = ck_col_valid(c, i);
  ck_batch_t *kept = ck_batch_filter(*batch, keep);
  ck_free(keep);
  ck_batch_free(*batch);
  *batch = kept;
  t->no_time += (int64_t)missing;
  if (t->no_time == (int64_t)missing || t->no_time % 10000 < (int64_t)missing)
    CK_LOG_WARN("job", "table '%s': skipped %lld records without event time so far (column '%s' "
                "is NULL)", spec->table, (long long)t->no_time, col);
  return 0;
}

/* A source's computed columns (DDL `name AS expr`, `proc AS PROCTIME()`): the polled batch of
 * physical columns becomes one of the table's columns, the expressions evaluated over it and
 * the processing-time column set to the clock now, before event time is read from it. Source
 * thread. */
static int compute_columns(const ck_conn_spec_t *spec, ck_batch_t **batch, ck_error_t *err) {
  ck_batch_t *phys = *batch;
  ck_batch_t *full = ck_batch_new(spec->schema.ncols, spec->schema.types, phys->nrows);
  int rc = 0;
  for (int c = 0; c < spec->schema.ncols && !rc; c++) {
    if (spec->computed[c]) {
      ck_col_fini(&full->cols[c]);
      rc = ck_expr_eval(spec->computed[c], phys, &full->cols[c], err);
      if (rc) ck_col_init(&full->cols[c], spec->schema.types[c], 0);
    } else if (c == spec->proctime_col) {
      int64_t now = ck_wall_ms();
      for (size_t i = 0; i < phys->nrows; i++) ck_col_append_i64(&full->cols[c], now);
    }
  }
  if (rc) {
    ck_error_detail(err, "in a computed column of table '%s'", spec->table);
    ck_batch_free(full);
    return rc;
  }
  for (int p = 0; p < spec->phys.ncols; p++) { /* the physical columns move over */
    ck_col_t tmp = full->cols[spec->phys_col[p]];
    full->cols[spec->phys_col[p]] = phys->cols[p];
    phys->cols[p] = tmp;
  }
  full->nrows = phys->nrows;
  ck_batch_free(phys);
  *batch = full;
  return 0;
}

/* Every source subtask of this process says what it has (one without partitions its IDLE)
 * before any of them polls: a receiver hears an empty sender's idleness before the first row
 * of the others, so a row's watermark does not depend on which thread started first. A job's
 * failure or stop ends the wait. (Sources in other workers are not waited for.) */
static void source_start(task_t *t) {
  struct ck_exec *ex = t->ex;
  ck_mutex_lock(&ex->ckpt_mu);
  ex->sources_starting--;
  ck_cond_broadcast(&ex->ckpt_cv);
  while (ex->sources_starting > 0 && !atomic_load(&ex->failed) && !atomic_load(&ex->stop))
    ck_cond_wait(&ex->ckpt_cv, &ex->ckpt_mu);
  ck_mutex_unlock(&ex->ckpt_mu);
}

/* A partition's watermark: its largest event time less the lag (MIN before its first). */
static int64_t part_watermark(int64_t max, const ck_conn_spec_t *spec) {
  return max == CK_WATERMARK_MIN ? CK_WATERMARK_MIN : max - spec->watermark_lag_ms;
}

/* Moves partition part's largest event time over the rows of batch (all from part), and gives
 * the batch the watermark in effect before each of its rows (batch.h, wms) where it is newer
 * than the one last delivered: the least over the partitions that are not idle, with part's
 * own taken over the rows before. The watermark after the batch is then delivered as a
 * message, as before; this makes the rows in between see it move after every record. */
static void row_watermarks(task_t *t, const ck_conn_spec_t *spec, ck_batch_t *batch, int part,
                           int64_t *part_max, const int64_t *part_seen, int nparts, int64_t now) {
  int64_t others = CK_WATERMARK_MAX;
  for (int p = 0; p < nparts; p++) {
    if (p == part || (spec->idle_timeout_ms > 0 && now - part_seen[p] >= spec->idle_timeout_ms))
      continue;
    int64_t pw = part_watermark(part_max[p], spec);
    if (pw < others) others = pw;
  }
  const ck_col_t *c = &batch->cols[spec->event_time_col];
  int64_t mx = part_max[part];
  int64_t *wms = NULL;
  for (size_t i = 0; i < batch->nrows; i++) {
    int64_t w = part_watermark(mx, spec);
    if (w > others) w = others;
    if (w > t->wm && !wms) {
      wms = ck_malloc(batch->nrows * sizeof *wms);
      for (size_t j = 0; j < i; j++) wms[j] = t->wm;
    }
    if (wms) wms[i] = w > t->wm ? w : t->wm;
    if (!ck_col_valid(c, i)) continue;
    int64_t v = c->type.id == CK_T_INT32 ? ck_col_i32(c, i) : ck_col_i64(c, i);
    if (v > mx) mx = v;
  }
  part_max[part] = mx;
  ck_free(batch->wms);
  batch->wms = wms;
}

static int run_source(task_t *t, ck_error_t *err) {
  struct ck_exec *ex = t->ex;
  const ck_node_t *n = stage_node(t, 0);
  const ck_conn_spec_t *spec = &n->u.conn;
  int nparts = t->source.ops->npartitions(&t->source);
  int64_t *part_max = ck_malloc(sizeof(int64_t) * (size_t)(nparts ? nparts : 1));
  int64_t *part_seen = ck_malloc(sizeof(int64_t) * (size_t)(nparts ? nparts : 1));
  int64_t now = ck_mono_ms();
  for (int p = 0; p < nparts; p++) part_max[p] = CK_WATERMARK_MIN, part_seen[p] = now;
  bool idle_sent = false;
  int rc = 0;
  /* the connector fills the physical columns (all of them unless some are computed) */
  const ck_schema_t *polled = spec->ncomputed ? &spec->phys : &spec->schema;
  ck_type_t *types = polled->types;
  /* string bytes the last batch held per column: the next batch starts with that much room,
   * instead of growing from nothing by doubling (a realloc and a copy each time) */
  int ncols = polled->ncols;
  size_t *str_room = ck_calloc((size_t)(ncols ? ncols : 1), sizeof *str_room);
  bool event_time = spec->event_time_col >= 0;
  const char *null_policy = ck_opt_str(&spec->options, ck_source_common_options, "event_time_null");
  bool skip_no_time = null_policy && strcmp(null_policy, "skip") == 0;
  int64_t poll_rows = ck_opt_int(&spec->options, ck_source_common_options, "poll_rows");
  if (poll_rows < 1 || poll_rows > CK_BATCH_ROWS) poll_rows = CK_BATCH_ROWS; /* planner checks */
  if (event_time && nparts == 0) {
    rc = exchange_control(t, MSG_IDLE, 0); /* nothing to read here: never hold others back */
    idle_sent = true;
  }
  source_start(t);
  while (!rc) {
    if (atomic_load(&ex->failed)) break;
    if (ck_mem_over()) {
      rc = ck_mem_over_error(err);
      break;
    }
    if (atomic_load(&ex->stop)) {
      atomic_fetch_add(&ex->stopped_sources, 1);
      break;
    }
    /* triggers and commits, in the order they were sent (a commit of N comes before the
     * trigger of N+1: a sink has one interval's transaction awaiting commit at most) */
    chan_unwake(&t->in);
    msg_t m;
    while (!rc && (rc = chan_pop(ex, &t->in, &m, false)) == 0) rc = handle_ctl(t, m, err);
    if (rc == CK_ETIMEOUT) rc = 0;
    if (rc) break;
    ck_batch_t *batch = ck_batch_new(ncols, types, CK_BATCH_ROWS);
    for (int c = 0; c < ncols; c++)
      if (str_room[c]) (void)ck_col_str_reserve(&batch->cols[c], str_room[c]);
    int part = 0;
    int r = t->source.ops->poll(&t->source, batch, (int)poll_rows, SOURCE_POLL_MS, &part, err);
    if (r < 0) {
      ck_batch_free(batch);
      rc = r;
      break;
    }
    if (r == CK_SRC_END) {
      ck_batch_free(batch);
      if (event_time) rc = deliver_watermark(t, 1, CK_WATERMARK_MAX, err);
      break;
    }
    now = ck_mono_ms();
    publish_source_counts(t);
    if (r == CK_SRC_DATA && spec->ncomputed && (rc = compute_columns(spec, &batch, err))) {
      ck_batch_free(batch);
      break;
    }
    if (r == CK_SRC_DATA && event_time &&
        (rc = drop_rows_without_time(t, spec, part, skip_no_time, &batch, err))) {
      ck_batch_free(batch);
      break;
    }
    if (r == CK_SRC_DATA) {
      ck_batch_seal(batch);
      t->source_records += (int64_t)batch->nrows;
      for (int c = 0; c < ncols && !spec->ncomputed; c++)
        if (types[c].id == CK_T_STRING)
          str_room[c] = batch->cols[c].data_len + batch->cols[c].data_len / 8;
      if (event_time && part >= 0 && part < nparts) {
        part_seen[part] = now;
        row_watermarks(t, spec, batch, part, part_max, part_seen, nparts, now);
      }
      rc = deliver_batch(t, 1, batch, err);
      if (rc) break;
    } else {
      ck_batch_free(batch);
    }
    if (!event_time) continue;
    /* the subtask's watermark: least over partitions that are not idle */
    int64_t wm = CK_WATERMARK_MAX;
    int active = 0;
    for (int p = 0; p < nparts; p++) {
      if (spec->idle_timeout_ms > 0 && now - part_seen[p] >= spec->idle_timeout_ms) continue;
      active++;
      int64_t pw = part_watermark(part_max[p], spec);
      if (pw < wm) wm = pw;
    }
    if (active == 0) {
      if (!idle_sent) rc = exchange_control(t, MSG_IDLE, 0), idle_sent = true;
      continue;
    }
    if (wm > t->wm || (idle_sent && wm >= t->wm)) {
      idle_sent = false;
      if (wm > t->wm) t->wm = wm;
      rc = deliver_watermark(t, 1, t->wm, err);
    }
  }
  ck_free(part_max);
  ck_free(str_room);
  ck_free(part_seen);
  if (!rc && ex->checkpointing) {
    /* done reading: take checkpoints until the final one, then end */
    CK_TRACE("source_done", "read=%lld", (long long)t->source_records);
    if (ex->remote_coord) {
      ex->opts.report->source_done(ex->opts.report->ctx, t->index);
    } else {
      ck_mutex_lock(&ex->ckpt_mu);
      ck_ckpt_coord_source_done(&ex->coord);
      ck_cond_broadcast(&ex->ckpt_cv);
      ck_mutex_unlock(&ex->ckpt_mu);
    }
    while (!rc && !t->final_taken) {
      msg_t m;
      if (!(rc = chan_pop(ex, &t->in, &m, true))) rc = handle_ctl(t, m, err);
    }
  }
  return rc;
}

static int64_t senders_watermark(const task_t *t, bool *all_idle) {
  int64_t wm = CK_WATERMARK_MAX;
  int counted = 0;
  for (int s = 0; s < t->nsenders; s++) {
    if (t->sender_idle[s]) continue;
    counted++;
    if (t->sender_wm[s] < wm) wm = t->sender_wm[s];
  }
  *all_idle = counted == 0;
  return wm;
}

/* A batch from sender carries the watermark before each row at its sender (batch.h); here a
 * row is under the least of that and every other sender's (not idle), and never under less
 * than what was delivered already. Drops the array when no row would see a newer one. */
static void receiver_row_watermarks(const task_t *t, int sender, ck_batch_t *batch) {
  int64_t others = CK_WATERMARK_MAX;
  for (int s = 0; s < t->nsenders; s++)
    if (s != sender && !t->sender_idle[s] && t->sender_wm[s] < others) others = t->sender_wm[s];
  bool newer = false;
  for (size_t i = 0; i < batch->nrows; i++) {
    int64_t w = batch->wms[i] < others ? batch->wms[i] : others;
    if (w > t->wm) newer = true;
    else w = t->wm;
    batch->wms[i] = w;
  }
  if (!newer) {
    ck_free(batch->wms);
    batch->wms = NULL;
  }
}

static void stash_push(task_t *t, msg_t m) {
  if (t->nstash == t->stash_cap) {
    t->stash_cap = t->stash_cap ? t->stash_cap * 2 : 64;
    t->stash = ck_realloc(t->stash, sizeof *t->stash * (size_t)t->stash_cap);
  }
  t->stash[t->nstash++] = m;
}

static int handle_msg(task_t *t, msg_t m, bool *ended, ck_error_t *err);

/* Every sender that has not ended delivered the barrier: snapshot, forward, replay. */
static int maybe_aligned(task_t *t, bool *ended, ck_error_t *err) {
  if (!t->aligning || t->nblocked < t->nsenders - t->nended) return 0;
  int64_t id = t->aligning;
  int rc = take_checkpoint(t, id, err);
  t->aligning = 0;
  t->nblocked = 0;
  memset(t->blocked, 0, (size_t)t->nsenders);
  if (rc) return rc;
  msg_t *replay = t->stash;
  int n = t->nstash;
  t->stash = NULL;
  t->nstash = t->stash_cap = 0;
  for (int i = 0; i < n; i++) {
    if (rc) {
      ck_batch_free(replay[i].batch);
      continue;
    }
    rc = handle_msg(t, replay[i], ended, err);
  }
  ck_free(replay);
  return rc;
}

static int handle_msg(task_t *t, msg_t m, bool *ended, ck_error_t *err) {
  if (m.sender >= 0 && t->blocked[m.sender]) {
    stash_push(t, m); /* aligned barriers: this sender waits for the others */
    return 0;
  }
  int rc = 0;
  t->input = m.sender;
  switch (m.kind) {
    case MSG_BATCH:
      if (m.batch->wms) receiver_row_watermarks(t, m.sender, m.batch);
      return deliver_batch(t, 0, m.batch, err);
    case MSG_WATERMARK:
    case MSG_IDLE: {
      if (m.kind == MSG_WATERMARK) {
        if (m.value > t->sender_wm[m.sender]) t->sender_wm[m.sender] = m.value;
        t->sender_idle[m.sender] = 0;
      } else {
        t->sender_idle[m.sender] = 1;
        ck_capture_event(t->cap[0], CK_CAPTURE_IDLE, 0, m.sender);
      }
      bool all_idle;
      int64_t wm = senders_watermark(t, &all_idle);
      if (all_idle) {
        /* pass idleness on so the next exchange does not wait for us either */
        rc = exchange_control(t, MSG_IDLE, 0);
      } else if (wm > t->wm) {
        t->wm = wm;
        rc = deliver_watermark(t, 0, wm, err);
      }
      return rc;
    }
    case MSG_BARRIER:
      if (t->aligning && m.value != t->aligning) {
        /* a newer barrier while aligning an older one: the older was abandoned upstream */
        CK_LOG_DEBUG("checkpoint", "subtask %d: barrier %lld overtakes %lld", t->index,
                     (long long)m.value, (long long)t->aligning);
      }
      if (!t->aligning || m.value > t->aligning) t->aligning = m.value;
      t->blocked[m.sender] = 1;
      t->nblocked++;
      return maybe_aligned(t, ended, err);
    case MSG_TRIGGER:
    case MSG_COMMIT: return 0; /* taken by the loops (handle_ctl), never stashed */
    case MSG_END: {
      /* an ended sender holds nothing back any more */
      t->sender_idle[m.sender] = 0;
      t->sender_wm[m.sender] = CK_WATERMARK_MAX;
      if (++t->nended == t->nsenders) {
        *ended = true;
        return 0;
      }
      bool all_idle;
      int64_t wm = senders_watermark(t, &all_idle);
      if (!all_idle && wm > t->wm) {
        t->wm = wm;
        rc = deliver_watermark(t, 0, wm, err);
      }
      return rc ? rc : maybe_aligned(t, ended, err);
    }
  }
  return 0;
}

static int run_receiver(task_t *t, ck_error_t *err) {
  int rc = 0;
  bool ended = false;
  while (!rc && !ended) {
    msg_t m;
    rc = chan_pop(t->ex, &t->in, &m, true);
    if (rc) break;
    if (m.kind == MSG_TRIGGER || m.kind == MSG_COMMIT) {
      rc = handle_ctl(t, m, err);
      continue;
    }
    if (m.link) { /* its sender may send one more */
      const ck_exec_remote_t *r = t->ex->opts.remote;
      r->consumed(r->ctx, m.link);
      m.link = NULL;
    }
    rc = handle_msg(t, m, &ended, err);
  }
  return rc;
}

static void *task_main(void *arg) {
  task_t *t = arg;
  ck_mem_account_enter(t->ex->mem_account); /* the job's memory guard counts this thread */
  ck_error_t err;
  ck_error_clear(&err);
  ck_trace_context(t->ex->checkpointing ? t->ex->store.root : NULL, t->index);
  int rc = open_task(t, &err);
  if (!rc && t->ex->checkpointing) CK_TRACE("recover", "ckpt=%lld sink=%d", (long long)t->ex->opts.ckpt.restore_id, (int)t->has_sink);
  if (!rc) rc = t->has_source ? run_source(t, &err) : run_receiver(t, &err);
  if (!rc) rc = finish_task(t, &err);
  if (rc) task_fail(t, rc, &err);
  close_task(t);
  ck_mem_account_enter(0);
  return NULL;
}

/* ---------------------------------------------------------------- setup */

/* Task counts come from the physical plan (runtime/plan.h), the one place they are made. */
int ck_exec_task_count(const ck_graph_t *graph) {
  ck_plan_t plan;
  ck_plan_build(graph, &plan);
  int n = plan.ntasks;
  ck_plan_fini(&plan);
  return n;
}

const char *ck_exec_rigid_sink(const ck_graph_t *graph) {
  for (int i = 0; i < graph->nnodes; i++) {
    const ck_node_t *n = &graph->nodes[i];
    if (n->kind != CK_NODE_SINK) continue;
    const ck_connector_t *conn = n->u.conn.connector;
    const char *asked = ck_options_get(&n->u.conn.options, "delivery_guarantee");
    if (conn->sink_guarantee == CK_GUARANTEE_EXACTLY_ONCE && asked &&
        strcmp(asked, "exactly_once") == 0 && !conn->sink_rewinds)
      return n->name;
  }
  return NULL;
}

void ck_exec_task_roles(const ck_graph_t *graph, int *nsources, int *nsinks) {
  ck_plan_t plan;
  ck_plan_build(graph, &plan);
  *nsources = plan.nsources;
  *nsinks = plan.nsinks;
  ck_plan_fini(&plan);
}

int ck_exec_new(const ck_graph_t *graph, const ck_exec_opts_t *opts, ck_exec_t **out,
                ck_error_t *err) {
  struct ck_exec *ex = ck_calloc(1, sizeof *ex);
  ex->graph = graph;
  if (opts) ex->opts = *opts;
  if (ex->opts.channel_capacity <= 0) ex->opts.channel_capacity = 16;
  if (!ex->opts.job_name) ex->opts.job_name = "clink";
  if (ex->opts.max_memory > 0 && !(ex->mem_account = ck_mem_account_new(ex->opts.max_memory)))
    CK_LOG_WARN("job", "%s: no memory account is free (%d jobs in this process): the job runs "
                "without its memory guard", ex->opts.job_name, CK_MEM_ACCOUNTS - 1);
  ck_mutex_init(&ex->err_mu);
  ck_mutex_init(&ex->ckpt_mu);
  ck_cond_init(&ex->ckpt_cv);
  ck_mutex_init(&ex->wr_mu);
  ck_cond_init(&ex->wr_cv);
  if (!(ex->plan = ex->opts.plan)) {
    ck_plan_build(graph, &ex->own_plan);
    ex->plan = &ex->own_plan;
  }
  const ck_plan_t *plan = ex->plan;
  ex->nsegs = plan->nsegs;
  ex->segs = ck_calloc((size_t)plan->nsegs + 1, sizeof *ex->segs);
  for (int s = 0; s < plan->nsegs; s++)
    ex->segs[s] = (seg_t){plan->segs[s].first, plan->segs[s].last, plan->segs[s].parallelism,
                          plan->segs[s].down, NULL};
  ex->checkpointing = ex->opts.ckpt.dir != NULL;
  ex->remote_coord = ex->checkpointing && ex->opts.report != NULL;
  uint64_t nonce = 0;
  if (getrandom(&nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce)
    nonce = (uint64_t)ck_wall_ms() * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32;
  snprintf(ex->attempt, sizeof ex->attempt, "%016llx", (unsigned long long)nonce);
  if (ex->checkpointing) {
    int rc = ck_store_open(ex->opts.ckpt.dir, &ex->store, err);
    if (rc) {
      ck_free(ex->segs);
      ck_plan_fini(&ex->own_plan);
      ck_mutex_fini(&ex->err_mu);
      ck_mutex_fini(&ex->ckpt_mu);
      ck_cond_fini(&ex->ckpt_cv);
      ck_mutex_fini(&ex->wr_mu);
      ck_cond_fini(&ex->wr_cv);
      ck_free(ex);
      return rc;
    }
    ex->last_triggered = ex->opts.ckpt.ids_above;
  }
  const ck_exec_remote_t *remote = ex->opts.remote;
  ex->ntasks = plan->ntasks;
  ex->all = ck_calloc((size_t)ex->ntasks, sizeof *ex->all);
  int total_sinks = 0, total_sources = 0;
  for (int s = 0; s < ex->nsegs; s++) {
    seg_t *seg = &ex->segs[s];
    const ck_node_t *first = &graph->nodes[seg->first];
    int nsenders = plan->segs[s].nsenders;
    seg->tasks = ck_calloc((size_t)seg->parallelism, sizeof *seg->tasks);
    for (int p = 0; p < seg->parallelism; p++) {
      task_t *t = &seg->tasks[p];
      t->ex = ex;
      t->seg = seg;
      t->subtask = p;
      t->nstages = seg->last - seg->first + 1;
      t->ops = ck_calloc((size_t)t->nstages, sizeof *t->ops);
      t->stages = ck_calloc((size_t)t->nstages, sizeof *t->stages);
      t->cap = ck_calloc((size_t)t->nstages, sizeof *t->cap);
      t->rows_in = ck_calloc((size_t)t->nstages, sizeof *t->rows_in);
      t->late_pub = ck_calloc((size_t)t->nstages, sizeof *t->late_pub);
      t->state_pub = ck_calloc(2 * (size_t)t->nstages, sizeof *t->state_pub);
      for (int i = 0; i < t->nstages; i++) t->stages[i] = (stage_t){t, i};
      t->has_source = first->kind == CK_NODE_SOURCE;
      t->has_sink = graph->nodes[seg->last].kind == CK_NODE_SINK;
      t->wm = CK_WATERMARK_MIN;
      atomic_store(&t->wm_pub, CK_WATERMARK_MIN);
      t->ev_prev = ex->opts.ckpt.restore_id; /* the interval evidence's first previous barrier */
      t->index = ck_plan_task(plan, s, p);
      t->local = !remote || remote->slot_worker[ck_plan_slot(plan, p) % remote->nslots] ==
                                remote->self;
      ex->all[t->index] = t;
      total_sinks += t->has_sink;
      total_sources += t->has_source;
      if (!t->local) continue;
      ex->nsinks += t->has_sink;
      ex->nsources += t->has_source;
      ex->sources_starting += t->has_source;
      /* a source's channel carries only control messages */
      chan_init(&t->in, t->has_source ? 1 : ex->opts.channel_capacity, t->has_source);
      if (!t->has_source) {
        t->nsenders = nsenders;
        t->sender_wm = ck_calloc((size_t)(nsenders ? nsenders : 1), sizeof(int64_t));
        t->sender_idle = ck_calloc((size_t)(nsenders ? nsenders : 1), 1);
        for (int k = 0; k < nsenders; k++) t->sender_wm[k] = CK_WATERMARK_MIN;
        t->blocked = ck_calloc((size_t)(nsenders ? nsenders : 1), 1);
      }
    }
  }
  if (ex->checkpointing && !ex->remote_coord)
    ck_ckpt_coord_init(&ex->coord, &ex->store, ex->ntasks, total_sinks, total_sources,
                       ex->opts.ckpt.ids_above, ex->opts.ckpt.restore_id, ex->opts.ckpt.interval_ms,
                       ex->opts.ckpt.timeout_ms, ex->opts.ckpt.retain, ck_mono_ms());
  if (ex->checkpointing && !ex->remote_coord)
    ex->coord.tolerable_failed = ex->opts.ckpt.tolerable_failed;
  int rc = ck_capture_open(&ex->opts.capture, graph, plan, ex->opts.ckpt.fingerprint,
                           ex->checkpointing ? ex->opts.ckpt.restore_id : 0, &ex->capture, err);
  if (rc) {
    ck_exec_free(ex);
    return rc;
  }
  *out = ex;
  return 0;
}

int ck_exec_run(ck_exec_t *ex, ck_error_t *err) {
  for (int s = 0; s < ex->nsegs; s++)
    for (int p = 0; p < ex->segs[s].parallelism; p++) {
      task_t *t = &ex->segs[s].tasks[p];
      if (!t->local) continue;
      char name[32];
      snprintf(name, sizeof name, "ck-%d.%d", s % 1000, p % 1000);
      if (ck_thread_start(&t->thread, name, task_main, t)) {
        task_fail(t, CK_EINTERNAL, NULL);
        ck_error_set(err, CK_EINTERNAL, "could not start a thread for subtask %d of segment %d",
                     p, s);
        continue;
      }
      t->started = true;
    }
  if (ex->checkpointing) {
    if (ck_thread_start(&ex->writer, "ck-writer", writer_main, ex) == 0) ex->writer_started = true;
    else task_fail(ex->all[0], CK_EINTERNAL, NULL);
    if (!ex->remote_coord) {
      if (ck_thread_start(&ex->coord_thread, "ck-checkpoint", coordinator_main, ex) == 0)
        ex->coord_started = true;
      else task_fail(ex->all[0], CK_EINTERNAL, NULL);
    }
  }
  return 0;
}

int ck_exec_start(const ck_graph_t *graph, const ck_exec_opts_t *opts, ck_exec_t **out,
                  ck_error_t *err) {
  int rc = ck_exec_new(graph, opts, out, err);
  if (!rc) rc = ck_exec_run(*out, err);
  return rc;
}

void ck_exec_stop(ck_exec_t *ex) {
  atomic_store(&ex->stop, 1);
  for (int i = 0; i < ex->ntasks; i++) /* sources see it now, not at their poll's end */
    if (ex->all[i] && ex->all[i]->local && ex->all[i]->has_source) chan_wake(&ex->all[i]->in);
  ck_mutex_lock(&ex->ckpt_mu); /* and so does one waiting for the others to start */
  ck_cond_broadcast(&ex->ckpt_cv);
  ck_mutex_unlock(&ex->ckpt_mu);
}

void ck_exec_cancel(ck_exec_t *ex, const char *why) {
  ck_mutex_lock(&ex->err_mu);
  if (!ex->err.code) ck_error_set(&ex->err, CK_ECANCELLED, "%s", why);
  ck_mutex_unlock(&ex->err_mu);
  atomic_store(&ex->failed, 1);
  wake_all(ex);
}

void ck_exec_deliver(ck_exec_t *ex, int dest_task, int sender, int kind, int64_t value,
                     ck_batch_t *batch, void *link) {
  task_t *t = dest_task >= 0 && dest_task < ex->ntasks ? ex->all[dest_task] : NULL;
  if (!t || !t->local || t->has_source || sender < 0 || sender >= t->nsenders ||
      kind < MSG_BATCH || kind > MSG_END) {
    CK_LOG_WARN("exec", "dropped a network message for task %d from subtask %d: no such "
                "receiver here", dest_task, sender);
    ck_batch_free(batch);
    if (link) ex->opts.remote->consumed(ex->opts.remote->ctx, link);
    return;
  }
  chan_push_force(&t->in, (msg_t){(msg_kind_t)kind, sender, batch, value, link});
}

int ck_exec_wait(ck_exec_t *ex, ck_error_t *err) {
  for (int s = 0; s < ex->nsegs; s++)
    for (int p = 0; p < ex->segs[s].parallelism; p++) {
      task_t *t = &ex->segs[s].tasks[p];
      if (!t->started) continue;
      ck_thread_join(&t->thread);
      t->started = false;
      ex->totals.source_records += t->source_records;
      ex->totals.sink_records += t->sink_records;
      for (int i = 0; i < t->nstages; i++) ex->totals.late_dropped += t->ops[i].metrics.late_dropped;
      ex->totals.decode_skipped += t->skipped;
      ex->totals.no_event_time += t->time_skipped;
    }
  atomic_store(&ex->done, 1);
  if (ex->checkpointing) {
    ck_mutex_lock(&ex->ckpt_mu);
    ck_cond_broadcast(&ex->ckpt_cv);
    ck_mutex_unlock(&ex->ckpt_mu);
    if (ex->coord_started) ck_thread_join(&ex->coord_thread);
    ex->coord_started = false;
    ck_mutex_lock(&ex->wr_mu);
    ex->wr_stop = true;
    ck_cond_signal(&ex->wr_cv);
    ck_mutex_unlock(&ex->wr_mu);
    if (ex->writer_started) ck_thread_join(&ex->writer); /* drains what is queued first */
    ex->writer_started = false;
  }
  ex->totals.checkpoints_completed = ex->coord.completed_count;
  ex->totals.last_checkpoint = ex->remote_coord ? 0 : ex->coord.last_completed;
  ex->totals.last_triggered = ex->remote_coord ? ex->last_triggered : ex->coord.next_id;
  ex->totals.input_ended = !ex->err.code && atomic_load(&ex->stopped_sources) == 0;
  if (ex->err.code) {
    if (err && !err->code) *err = ex->err;
    return ex->err.code;
  }
  return 0;
}

ck_exec_totals_t ck_exec_totals(const ck_exec_t *ex) { return ex->totals; }

/* Stage i of task t's values, by the metrics table's ids; has[id] false when it has none (a
 * watermark before the first). Any thread. */
static void stage_metrics(task_t *t, int i, int64_t v[CK_OPM_COUNT], bool has[CK_OPM_COUNT]) {
  const ck_node_t *n = stage_node(t, i);
  for (int m = 0; m < CK_OPM_COUNT; m++) v[m] = 0, has[m] = true;
  int64_t in = atomic_load_explicit(&t->rows_in[i], memory_order_relaxed);
  int64_t outr = i + 1 < t->nstages ? atomic_load_explicit(&t->rows_in[i + 1], memory_order_relaxed)
                 : n->kind == CK_NODE_SINK ? in
                                           : atomic_load_explicit(&t->rows_out, memory_order_relaxed);
  if (n->kind == CK_NODE_SOURCE) in = outr; /* read from the outside */
  v[CK_OPM_RECORDS_IN] = in;
  v[CK_OPM_RECORDS_OUT] = outr;
  v[CK_OPM_LATE_DROPPED] = atomic_load_explicit(&t->late_pub[i], memory_order_relaxed);
  if (n->kind == CK_NODE_SOURCE) {
    v[CK_OPM_DECODE_SKIPPED] = atomic_load_explicit(&t->skipped_pub, memory_order_relaxed);
    v[CK_OPM_NO_EVENT_TIME] = atomic_load_explicit(&t->time_skipped_pub, memory_order_relaxed);
  }
  v[CK_OPM_WATERMARK] = atomic_load_explicit(&t->wm_pub, memory_order_relaxed);
  has[CK_OPM_WATERMARK] = v[CK_OPM_WATERMARK] != CK_WATERMARK_MIN;
  v[CK_OPM_BACKPRESSURE_MS] = atomic_load_explicit(&t->blocked_ns, memory_order_relaxed) / 1000000;
  v[CK_OPM_STATE_ENTRIES] = atomic_load_explicit(&t->state_pub[2 * i], memory_order_relaxed);
  v[CK_OPM_STATE_BYTES] = atomic_load_explicit(&t->state_pub[2 * i + 1], memory_order_relaxed);
}

void ck_exec_metrics_json(ck_exec_t *ex, ck_buf_t *out) {
  ck_buf_putc(out, '[');
  bool first = true;
  for (int k = 0; k < ex->ntasks; k++) {
    task_t *t = ex->all[k];
    if (!t->local) continue;
    for (int i = 0; i < t->nstages; i++) {
      const ck_node_t *n = stage_node(t, i);
      int64_t v[CK_OPM_COUNT];
      bool has[CK_OPM_COUNT];
      stage_metrics(t, i, v, has);
      if (!first) ck_buf_putc(out, ',');
      first = false;
      ck_buf_printf(out, "{\"node\":%d,\"name\":", n->id);
      ck_buf_put_json_str(out, n->name, strlen(n->name));
      ck_buf_printf(out, ",\"subtask\":%d,\"task\":%d", t->subtask, t->index);
      for (int m = 0; m < CK_OPM_COUNT; m++) {
        ck_buf_printf(out, ",\"%s\":", ck_metric_defs[m].key);
        if (has[m]) ck_buf_printf(out, "%lld", (long long)v[m]);
        else ck_buf_puts(out, "null");
      }
      ck_buf_putc(out, '}');
    }
  }
  ck_buf_putc(out, ']');
}

void ck_exec_metrics_sum(ck_exec_t *ex, int64_t sum[], int64_t *read,
                         int64_t *written) {
  for (int m = 0; m < CK_OPM_COUNT; m++) sum[m] = 0;
  *read = *written = 0;
  for (int k = 0; k < ex->ntasks; k++) {
    task_t *t = ex->all[k];
    if (!t->local) continue;
    for (int i = 0; i < t->nstages; i++) {
      int64_t v[CK_OPM_COUNT];
      bool has[CK_OPM_COUNT];
      stage_metrics(t, i, v, has);
      for (int m = 0; m < CK_OPM_COUNT; m++)
        if (ck_metric_defs[m].phrase) sum[m] += v[m];
      const ck_node_t *n = stage_node(t, i);
      if (n->kind == CK_NODE_SOURCE) *read += v[CK_OPM_RECORDS_OUT];
      if (n->kind == CK_NODE_SINK) *written += v[CK_OPM_RECORDS_IN];
    }
  }
}

void ck_exec_free(ck_exec_t *ex) {
  if (!ex) return;
  for (int s = 0; s < ex->nsegs; s++) {
    seg_t *seg = &ex->segs[s];
    for (int p = 0; p < seg->parallelism; p++) {
      task_t *t = &seg->tasks[p];
      for (int i = 0; t->in.ring && i < t->in.count; i++) {
        msg_t *m = &t->in.ring[(t->in.head + i) % t->in.cap];
        if (m->link) ex->opts.remote->consumed(ex->opts.remote->ctx, m->link);
      }
      chan_fini(&t->in);
      for (int i = 0; i < t->nstages; i++) ck_capture_rec_free(t->cap[i]);
      ck_free(t->cap);
      ck_free(t->ops);
      ck_free(t->stages);
      ck_free(t->rows_in);
      ck_free(t->late_pub);
      ck_free(t->state_pub);
      ck_free(t->sender_wm);
      ck_free(t->sender_idle);
      ck_free(t->blocked);
      for (int i = 0; i < t->nstash; i++) ck_batch_free(t->stash[i].batch);
      ck_free(t->stash);
    }
    ck_free(seg->tasks);
  }
  ck_free(ex->segs);
  ck_plan_fini(&ex->own_plan);
  ck_free(ex->all);
  ck_capture_close(ex->capture);
  if (ex->checkpointing) ck_store_close(&ex->store);
  ck_mutex_fini(&ex->err_mu);
  ck_mutex_fini(&ex->ckpt_mu);
  ck_cond_fini(&ex->ckpt_cv);
  ck_mutex_fini(&ex->wr_mu);
  ck_cond_fini(&ex->wr_cv);
  /* last: what the subtask threads allocated is freed by now, and credited to the account */
  ck_mem_account_free(ex->mem_account);
  ck_free(ex);
}
