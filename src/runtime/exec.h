/*
 * DESIGN: the executor — runs a job graph on threads in this process.
 *
 * The graph's nodes are cut into segments at every non-forward edge (or change of
 * parallelism); each segment runs as `parallelism` subtasks, one thread each, with the
 * segment's operators chained inside the thread. Between segments, bounded channels carry
 * typed messages — batch, watermark, idle, barrier, end — in band, so their order relative to
 * data is the protocol. A full channel blocks its producer (backpressure); nothing is dropped.
 *
 * Lifecycle: ck_exec_start spawns every thread; ck_exec_wait joins them and reports the first
 * error any subtask hit; ck_exec_stop asks sources to stop reading (the in-flight records are
 * still processed and sinks flushed — Ctrl-C's drain) and is async-signal-safe.
 */
#ifndef CK_RUNTIME_EXEC_H
#define CK_RUNTIME_EXEC_H

#include <stdint.h>

#include "base/error.h"
#include "runtime/graph.h"
#include "runtime/op.h"

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
} ck_exec_ckpt_t;

typedef struct ck_exec_opts {
  const char *job_name;
  int channel_capacity; /* messages per channel; default 16 */
  ck_exec_ckpt_t ckpt;
} ck_exec_opts_t;

/* Subtasks the graph runs as (snapshot directories v1/0 … v1/n-1). */
int ck_exec_task_count(const ck_graph_t *graph);

int ck_exec_start(const ck_graph_t *graph, const ck_exec_opts_t *opts, ck_exec_t **out,
                  ck_error_t *err);
void ck_exec_stop(ck_exec_t *ex); /* async-signal-safe */
int ck_exec_wait(ck_exec_t *ex, ck_error_t *err);
void ck_exec_free(ck_exec_t *ex);

/* Totals over every subtask, for the end-of-job summary and tests. Valid after wait. */
typedef struct ck_exec_totals {
  int64_t source_records;
  int64_t sink_records;
  int64_t late_dropped;
  int64_t decode_skipped;
  int64_t checkpoints_completed;
  int64_t last_checkpoint; /* id of the newest completed checkpoint, 0 if none */
  int64_t last_triggered;  /* the highest checkpoint id this execution handed out */
  bool input_ended;        /* every source reached the end of its input (not stopped) */
} ck_exec_totals_t;
ck_exec_totals_t ck_exec_totals(const ck_exec_t *ex);

#endif
