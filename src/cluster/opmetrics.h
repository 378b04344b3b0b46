/*
 * DESIGN: the metrics table (runtime/metrics.h) on the coordinator's `/metrics` (Prometheus
 * text) and in docs/cluster.md. The rows come from the table; operator rows' values come from the JSON arrays workers send with
 * each heartbeat (ck_exec_metrics_json: one flat object per operator and subtask, each metric
 * under its key). One family per metric: a HELP and TYPE line, then one sample per operator and
 * subtask labelled job, node, operator, subtask and worker. Touches only its arguments: any
 * thread (the coordinator calls it under its lock).
 */
#ifndef CK_CLUSTER_OPMETRICS_H
#define CK_CLUSTER_OPMETRICS_H

#include <stdint.h>

#include "base/buf.h"

/* The HELP and TYPE lines of metric m (any row of runtime/metrics.h's table). */
void ck_opmetrics_prom_header(ck_buf_t *out, int m);
/* Operator metric m's samples of job `job` from one worker's heartbeat array (json may be
 * NULL). */
void ck_opmetrics_prom_samples(ck_buf_t *out, int m, int64_t job, const char *worker,
                               const char *json);
/* The table for docs/cluster.md: every row, operator, job and cluster metrics alike. */
void ck_opmetrics_markdown(ck_buf_t *out);

#endif
