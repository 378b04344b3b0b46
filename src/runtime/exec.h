/*
 * DESIGN: the executor — runs a job graph on threads in this process.
 *
 * The graph's nodes are cut into segments at every non-forward edge (or change of
 * parallelism) by the physical plan (runtime/plan.h), which also numbers the tasks; each
 * segment runs as `parallelism` subtasks, one thread each, with the
 * segment's operators chained inside the thread. Between segments, bounded channels carry
 * typed messages — batch, watermark, idle, barrier, end — in band, so their order relative to
 * data is the protocol. A full channel blocks its producer (backpressure); nothing is dropped.
 * The checkpoint driver's decisions — trigger (to sources) and commit (to sinks) — are typed
 * messages on the same channels, taken before queued data (the kinds and their directions are
 * listed in exec.c).
 *
 * Lifecycle: ck_exec_start spawns every thread; ck_exec_wait joins them and reports the first
 * error any subtask hit; ck_exec_stop asks sources to stop reading (the in-flight records are
 * still processed and sinks flushed — Ctrl-C's drain) and is async-signal-safe.
 */
#ifndef CK_RUNTIME_EXEC_H
#define CK_RUNTIME_EXEC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"

#include "base/error.h"
#include "capture/capture.h"
#include "runtime/graph.h"
#include "runtime/op.h"
#include "runtime/plan.h"

typedef struct ck_exec ck_exec_t;

/* Checkpointing (DESIGN §4). dir NULL: off. */
typedef struct ck_exec_ckpt {
  const char *dir;        /* --checkpoint-dir */
  int64_t interval_ms;    /* between the end of one checkpoint and the next trigger */
  int64_t timeout_ms;     /* a checkpoint not complete by then is aborted */
  int64_t ids_above;      /* new checkpoint ids are above this (every id on disk) */
  int64_t restore_id;     /* restore every subtask from this completed checkpoint; 0: fresh */
  uint64_t fingerprint;   /* the job graph's, written into every snapshot */
  int retain;             /* completed checkpoints kept on disk (default 3) */
  int tolerable_failed;   /* checkpoints in a row that could not be stored, aborted while the
                             job runs on (one more fails it); 0: the first fails the job */
} ck_exec_ckpt_t;

/* A worker of a cluster: the checkpoint events of this process's subtasks go to a
 * coordinator elsewhere, whose decisions come back through ck_exec_trigger / ck_exec_complete.
 * Callbacks run on the executor's threads (writer thread for ack, subtask threads for the
 * others) and must not block for long. */
typedef struct ck_exec_report {
  void *ctx;
  void (*ack)(void *ctx, int64_t id, int task);       /* task's snapshot of id is durable */
  void (*source_done)(void *ctx, int task);           /* a source task is done reading */
  void (*committed)(void *ctx, int64_t id, int task); /* a sink task committed id */
} ck_exec_report_t;

/* Placement across processes: subtask p of every segment runs on worker
 * slot_worker[p % nslots]; this process is worker `self` and runs only its own. Records for a
 * subtask elsewhere go through send (blocking while the link has no credit, returning
 * CK_ECANCELLED once *cancel is set; takes the batch); records that arrive for a subtask here
 * are handed to ck_exec_deliver, and `consumed` returns their credit once taken off the
 * channel. */
typedef struct ck_exec_remote {
  void *ctx;
  int self;
  const int *slot_worker;
  int nslots;
  int (*send)(void *ctx, int worker, int sender_task, int sender, int dest_task, int kind,
              int64_t value, ck_batch_t *batch, const atomic_int *cancel, ck_error_t *err);
  void (*consumed)(void *ctx, void *link);
} ck_exec_remote_t;

typedef struct ck_exec_opts {
  const char *job_name;
  int channel_capacity; /* messages per channel; default 16 */
  ck_exec_ckpt_t ckpt;
  const ck_exec_report_t *report; /* NULL: embedded, this process coordinates checkpoints */
  const ck_exec_remote_t *remote; /* NULL: every subtask runs here */
  /* The graph's physical plan (segments, task numbers, slots), kept alive by the caller until
   * ck_exec_free; NULL: the executor builds it from the graph (ck_plan_build). */
  const ck_plan_t *plan;
  /* The job's memory guard (base/alloc.h accounts): the bytes its subtask threads hold may not
   * pass this; the job fails with CK_ENOMEM naming it instead (0: no limit). */
  int64_t max_memory;
  /* Handed to every source and sink as ck_conn_ctx_t.host (libclink's job); NULL otherwise. */
  void *host;
  /* The flight recorder (capture/capture.h): what every operator subtask consumed, per
   * checkpoint interval, under capture.dir (NULL: off). */
  ck_capture_opts_t capture;
} ck_exec_opts_t;

/* Subtasks the graph runs as (snapshot directories v1/0 … v1/n-1): ck_plan_build's ntasks. */
int ck_exec_task_count(const ck_graph_t *graph);
/* The name of a sink that runs exactly once and cannot take back output it committed (its
 * connector's sink_rewinds is false), or NULL: what the restore rule needs to know before it
 * falls back to an older checkpoint (checkpoint/lineage.h). */
const char *ck_exec_rigid_sink(const ck_graph_t *graph);
/* Of those, how many read a source and how many end in a sink (the plan's nsources, nsinks). */
void ck_exec_task_roles(const ck_graph_t *graph, int *nsources, int *nsinks);

int ck_exec_start(const ck_graph_t *graph, const ck_exec_opts_t *opts, ck_exec_t **out,
                  ck_error_t *err);
/* ck_exec_start in two steps, for a worker: after new, channels exist (network deliveries may
 * arrive) but no thread runs; run starts them. */
int ck_exec_new(const ck_graph_t *graph, const ck_exec_opts_t *opts, ck_exec_t **out,
                ck_error_t *err);
int ck_exec_run(ck_exec_t *ex, ck_error_t *err);
void ck_exec_stop(ck_exec_t *ex); /* async-signal-safe */
/* Fails the execution with CK_ECANCELLED and `why`: every subtask unwinds. */
void ck_exec_cancel(ck_exec_t *ex, const char *why);
/* With opts.report: the coordinator triggered checkpoint id (final: the last one, every source
 * being done), or declared it complete so sinks commit it (final: it is the final one, after
 * which they finish). Each becomes a message to the subtasks concerned. Any thread. */
void ck_exec_trigger(ck_exec_t *ex, int64_t id, bool final);
void ck_exec_complete(ck_exec_t *ex, int64_t id, bool final);
/* A message from another process for local task dest_task (see ck_exec_remote_t). */
void ck_exec_deliver(ck_exec_t *ex, int dest_task, int sender, int kind, int64_t value,
                     ck_batch_t *batch, void *link);
/* Per operator and subtask of this process, as a JSON array: node, name, subtask, task, then
 * every metric of runtime/metrics.h's table under its key. Any thread, while running. */
void ck_exec_metrics_json(ck_exec_t *ex, ck_buf_t *out);
/* Live sums over this process's subtasks, by runtime/metrics.h's ids (only metrics with a
 * summary phrase are summed), and the records sources read and sinks took. Any thread. */
void ck_exec_metrics_sum(ck_exec_t *ex, int64_t sum[], int64_t *read, int64_t *written);
int ck_exec_wait(ck_exec_t *ex, ck_error_t *err);
void ck_exec_free(ck_exec_t *ex);

/* Totals over every subtask, for the end-of-job summary and tests. Valid after wait. */
typedef struct ck_exec_totals {
  int64_t source_records;
  int64_t sink_records;
  int64_t late_dropped;
  int64_t decode_skipped;
  int64_t no_event_time;   /* records without event time skipped (event_time_null='skip') */
  int64_t checkpoints_completed;
  int64_t last_checkpoint; /* id of the newest completed checkpoint, 0 if none */
  int64_t last_triggered;  /* the highest checkpoint id this execution handed out */
  bool input_ended;        /* every source reached the end of its input (not stopped) */
} ck_exec_totals_t;
ck_exec_totals_t ck_exec_totals(const ck_exec_t *ex);

#endif
