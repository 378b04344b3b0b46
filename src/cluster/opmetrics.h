/*
 * DESIGN: the operators' live counters on the coordinator's `/metrics` (Prometheus text). The
 * rows come from runtime/metrics.h's table; the values from the JSON arrays workers send with
 * each heartbeat (ck_exec_metrics_json: one flat object per operator and subtask, each metric
 * under its key). One family per metric: a HELP and TYPE line, then one sample per operator and
 * subtask labelled job, node, operator, subtask and worker. Touches only its arguments: any
 * thread (the coordinator calls it under its lock).
 */
#ifndef CK_CLUSTER_OPMETRICS_H
#define CK_CLUSTER_OPMETRICS_H

#include <stdint.h>

#include "base/buf.h"

/* The HELP and TYPE lines of metric m (a ck_op_metric_id_t). */
void ck_opmetrics_prom_header(ck_buf_t *out, int m);
/* Metric m's samples of job `job` from one worker's heartbeat array (json may be NULL). */
void ck_opmetrics_prom_samples(ck_buf_t *out, int m, int64_t job, const char *worker,
                               const char *json);
/* The table for docs/cluster.md: key, Prometheus name, kind, help. */
void ck_opmetrics_markdown(ck_buf_t *out);

#endif
