/*
 * DESIGN: a submitted SQL script planned into a job graph — the one way the coordinator (to
 * validate, fingerprint and state the guarantee) and every worker (to run its subtasks) turn
 * the same text into the same graph. The job graph travels as its SQL text plus the
 * parallelism; each side plans it, and the fingerprint of the planned graph must match the
 * coordinator's, so a worker can never run a different graph than the one submitted.
 */
#ifndef CK_CLUSTER_JOBPLAN_H
#define CK_CLUSTER_JOBPLAN_H

#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"
#include "runtime/graph.h"

typedef struct ck_jobplan {
  ck_arena_t arena;      /* the parsed script */
  ck_graph_t *graph;
  ck_buf_t desc;         /* ck_graph_describe */
  uint64_t fingerprint;  /* of desc, as checkpoints record it */
  int ntasks, nsources, nsinks, nslots;
} ck_jobplan_t;

/* Errors come rendered with line:column (the SQL's own error rendering) in err->message. */
int ck_jobplan_init(ck_jobplan_t *jp, const char *sql, const char *filename, int parallelism,
                    int max_parallelism, ck_error_t *err);
void ck_jobplan_fini(ck_jobplan_t *jp);

#endif
