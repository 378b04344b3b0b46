/*
 * DESIGN: the one table of per-operator metrics. Every live counter an operator instance has
 * is a row here: its key in `/api/v1/jobs/:id/operators` (and in the worker's heartbeat), its
 * Prometheus name and kind on the coordinator's `/metrics`, its phrase in the embedded run's
 * progress line and end-of-job summary, and its help text — which also makes the table in
 * docs/cluster.md (`clink coordinator --metrics-markdown`; a test keeps them equal). A counter
 * added here shows up on every route at once.
 *
 * Values are published by the subtask's own thread (relaxed atomics in exec.c) and read from
 * any thread while the job runs.
 */
#ifndef CK_RUNTIME_METRICS_H
#define CK_RUNTIME_METRICS_H

#include <stdbool.h>
#include <stddef.h>

/* X(id, key, prometheus name, kind, summary phrase (NULL: not summed), help) */
#define CK_OP_METRIC_TABLE(X)                                                                     \
  X(CK_OPM_RECORDS_IN, "records_in", "clink_operator_records_in_total", "counter", NULL,          \
    "Records delivered into the operator (a source: records it read).")                          \
  X(CK_OPM_RECORDS_OUT, "records_out", "clink_operator_records_out_total", "counter", NULL,       \
    "Records the operator passed on.")                                                            \
  X(CK_OPM_LATE_DROPPED, "late_dropped", "clink_operator_late_dropped_total", "counter",          \
    "late records dropped",                                                                       \
    "Records a window operator dropped because every window they belong to had already fired.") \
  X(CK_OPM_DECODE_SKIPPED, "decode_skipped", "clink_operator_decode_skipped_total", "counter",    \
    "undecodable records skipped",                                                                \
    "Records a source could not decode, skipped under on_decode_error = 'skip'.")                 \
  X(CK_OPM_NO_EVENT_TIME, "no_event_time", "clink_operator_no_event_time_total", "counter",       \
    "records without event time skipped",                                                         \
    "Records whose event_time_column was missing or NULL, skipped under event_time_null = "       \
    "'skip'.")                                                                                    \
  X(CK_OPM_WATERMARK, "watermark", "clink_operator_watermark_ms", "gauge", NULL,                  \
    "The operator's watermark in epoch milliseconds (null, and no sample, before the first).")    \
  X(CK_OPM_BACKPRESSURE_MS, "backpressure_ms", "clink_operator_backpressure_ms_total", "counter", \
    NULL, "Milliseconds the subtask spent blocked on a full channel or waiting for credit.")

typedef enum ck_op_metric_id {
#define CK_OPM_ENUM(id, key, prom, kind, phrase, help) id,
  CK_OP_METRIC_TABLE(CK_OPM_ENUM)
#undef CK_OPM_ENUM
  CK_OPM_COUNT
} ck_op_metric_id_t;

typedef struct ck_op_metric_def {
  const char *key;    /* JSON key in /api/v1/jobs/:id/operators */
  const char *prom;   /* Prometheus metric name */
  const char *kind;   /* "counter" or "gauge" */
  const char *phrase; /* in the progress line and summary ("12 late records dropped"), or NULL */
  const char *help;
} ck_op_metric_def_t;

extern const ck_op_metric_def_t ck_op_metric_defs[CK_OPM_COUNT];

#endif
