/*
 * DESIGN: the one table of metrics. Every metric clink exports is a row here: its scope (per
 * operator and subtask, per job, or one for the cluster), its key in
 * `/api/v1/jobs/:id/operators` (and in the worker's heartbeat; operator rows only), its
 * Prometheus name and kind on the coordinator's `/metrics`, its unit, its phrase in the
 * embedded run's progress line (ck_metrics_progress_line; NULL: not summed there), where it is
 * counted, and its help text — which also makes the table in docs/cluster.md
 * (`clink coordinator --metrics-markdown`; a test keeps them equal, and another that every row
 * is on `/metrics`). A metric added here shows up on every route at once; a row's value is
 * filled in where the row says it is counted.
 *
 * Operator rows come first (OP in the table), so their ids 0..CK_OPM_COUNT-1 index the
 * per-stage arrays of runtime/exec.c. Their values are published by the subtask's own thread
 * (relaxed atomics in exec.c) and read from any thread while the job runs; job and cluster
 * rows (CO) are the coordinator's, read under its lock (cluster/rest.c).
 */
#ifndef CK_RUNTIME_METRICS_H
#define CK_RUNTIME_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

typedef enum ck_metric_scope {
  CK_METRIC_OPERATOR, /* one sample per operator and subtask: job, node, operator, subtask,
                         worker labels */
  CK_METRIC_JOB,      /* one sample per job: job label */
  CK_METRIC_CLUSTER,  /* one sample */
} ck_metric_scope_t;

/* OP(id, key, prometheus name, kind, unit, progress phrase, where counted, help): an operator
 * row; CO(id, scope, prometheus name, kind, unit, where counted, help): a job or cluster row.
 * Operator rows first. */
#define CK_METRIC_TABLE(OP, CO)                                                                   \
  OP(CK_OPM_RECORDS_IN, "records_in", "clink_operator_records_in_total", "counter", "records",   \
     NULL, "runtime/exec.c",                                                                      \
     "Records delivered into the operator (a source: records it read).")                         \
  OP(CK_OPM_RECORDS_OUT, "records_out", "clink_operator_records_out_total", "counter",           \
     "records", NULL, "runtime/exec.c", "Records the operator passed on.")                        \
  OP(CK_OPM_LATE_DROPPED, "late_dropped", "clink_operator_late_dropped_total", "counter",        \
     "records", "late records dropped", "runtime/agg_op.c",                                       \
     "Records a window operator dropped because every window they belong to had already "        \
     "fired.")                                                                                    \
  OP(CK_OPM_DECODE_SKIPPED, "decode_skipped", "clink_operator_decode_skipped_total", "counter",  \
     "records", "undecodable records skipped", "runtime/exec.c",                                  \
     "Records a source could not decode, skipped under on_decode_error = 'skip'.")               \
  OP(CK_OPM_NO_EVENT_TIME, "no_event_time", "clink_operator_no_event_time_total", "counter",     \
     "records", "records without event time skipped", "runtime/exec.c",                           \
     "Records whose event_time_column was missing or NULL, skipped under event_time_null = "     \
     "'skip'.")                                                                                   \
  OP(CK_OPM_WATERMARK, "watermark", "clink_operator_watermark_ms", "gauge", "ms since the epoch",\
     NULL, "runtime/exec.c",                                                                      \
     "The operator's watermark (null, and no sample, before the first).")                        \
  OP(CK_OPM_BACKPRESSURE_MS, "backpressure_ms", "clink_operator_backpressure_ms_total",          \
     "counter", "ms", NULL, "runtime/exec.c",                                                     \
     "Time the subtask spent blocked on a full channel or waiting for credit.")                   \
  OP(CK_OPM_STATE_ENTRIES, "state_entries", "clink_operator_state_entries", "gauge", "entries",  \
     NULL, "runtime/agg_op.c",                                                                    \
     "Groups and windows an aggregating operator holds open (0 for an operator without "         \
     "state).")                                                                                   \
  OP(CK_OPM_STATE_BYTES, "state_bytes", "clink_operator_state_bytes", "gauge", "bytes", NULL,    \
     "runtime/agg_op.c",                                                                          \
     "Memory an aggregating operator's state takes: tables, string pool, windows (0 for an "     \
     "operator without state).")                                                                  \
  CO(CK_M_WORKERS, CK_METRIC_CLUSTER, "clink_workers", "gauge", "workers",                        \
     "cluster/coordinator.c", "Workers registered and alive.")                                    \
  CO(CK_M_WORKERS_LOST, CK_METRIC_CLUSTER, "clink_workers_lost_total", "counter", "workers",      \
     "cluster/coordinator.c", "Workers declared lost.")                                           \
  CO(CK_M_RESTARTS, CK_METRIC_CLUSTER, "clink_job_restarts_total", "counter", "restarts",         \
     "cluster/coordinator.c", "Job restarts.")                                                    \
  CO(CK_M_CHECKPOINTS, CK_METRIC_CLUSTER, "clink_checkpoints_completed_total", "counter",        \
     "checkpoints", "cluster/coordinator.c", "Checkpoints completed.")                            \
  CO(CK_M_JOB_STATUS, CK_METRIC_JOB, "clink_job_status", "gauge", "1",                            \
     "cluster/coordinator.c", "1 for the job's current status (its status label).")              \
  CO(CK_M_JOB_LAST_CHECKPOINT, CK_METRIC_JOB, "clink_job_last_checkpoint", "gauge",               \
     "checkpoint id", "checkpoint/coord.c", "Newest completed checkpoint id.")                     \
  CO(CK_M_JOB_RESTARTS, CK_METRIC_JOB, "clink_job_restarts", "gauge", "restarts",                 \
     "cluster/coordinator.c", "Restarts of the job so far.")

#define CK_METRIC_OP_ID(id, key, prom, kind, unit, phrase, where, help) id,
#define CK_METRIC_NONE(...)
typedef enum ck_op_metric_id {
  CK_METRIC_TABLE(CK_METRIC_OP_ID, CK_METRIC_NONE)
  CK_OPM_COUNT /* operator rows */
} ck_op_metric_id_t;

#define CK_METRIC_CO_ID(id, scope, prom, kind, unit, where, help) id,
typedef enum ck_metric_id {
  CK_M_FIRST_CO = CK_OPM_COUNT - 1,
  CK_METRIC_TABLE(CK_METRIC_NONE, CK_METRIC_CO_ID)
  CK_METRIC_COUNT /* every row */
} ck_metric_id_t;
#undef CK_METRIC_OP_ID
#undef CK_METRIC_CO_ID

typedef struct ck_metric_def {
  ck_metric_scope_t scope;
  const char *key;    /* JSON key in /api/v1/jobs/:id/operators (operator rows), or NULL */
  const char *prom;   /* Prometheus metric name */
  const char *kind;   /* "counter" or "gauge" */
  const char *unit;
  const char *phrase; /* in the progress line ("12 late records dropped"), or NULL */
  const char *where;  /* the file (under src/) that counts it */
  const char *help;
} ck_metric_def_t;

/* Indexed by ck_op_metric_id_t and ck_metric_id_t: CK_METRIC_COUNT rows. */
extern const ck_metric_def_t ck_metric_defs[];
/* Appends the progress line: "R records read, W written" then ", N <phrase>" for every row
 * with a phrase, N from sum (indexed by operator id, summed over the job's subtasks). */
void ck_metrics_progress_line(ck_buf_t *out, int64_t read, int64_t written,
                              const int64_t sum[CK_OPM_COUNT]);

#endif
