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

typedef struct ck_exec_opts {
  const char *job_name;
  int channel_capacity; /* messages per channel; default 16 */
} ck_exec_opts_t;

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
} ck_exec_totals_t;
ck_exec_totals_t ck_exec_totals(const ck_exec_t *ex);

#endif
