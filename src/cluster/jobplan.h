/*
 * DESIGN: a job's plan as the cluster handles it — the job graph, its physical plan
 * (runtime/plan.h), its serialised form and its fingerprint.
 *
 * The coordinator plans the submitted SQL once (ck_jobplan_init: parse, bind, the connectors'
 * plan-time checks) and ships the serialised graph (`wire`) in DEPLOY; a worker builds the
 * same plan from those bytes (ck_jobplan_decode) without the SQL front end and without any
 * plan-time check, so nothing on a worker connects anywhere before its subtasks open. The
 * fingerprint is made from the graph's identity encoding (credentials masked, parallelism
 * left out: runtime/plan.h); a worker refuses a DEPLOY whose graph does not have the
 * fingerprint the coordinator sent, and one whose bytes do not encode back to themselves.
 */
#ifndef CK_CLUSTER_JOBPLAN_H
#define CK_CLUSTER_JOBPLAN_H

#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"
#include "runtime/graph.h"
#include "runtime/plan.h"

typedef struct ck_jobplan {
  ck_arena_t arena;      /* the parsed script (ck_jobplan_init) */
  ck_graph_t *graph;
  ck_plan_t phys;        /* segments, task numbers, slots */
  ck_buf_t wire;         /* the serialised graph, credentials included: what DEPLOY carries */
  ck_buf_t desc;         /* ck_plan_identity: the text checkpoints fingerprint */
  uint64_t fingerprint;  /* of desc, as checkpoints record it */
  int ntasks, nsources, nsinks, nslots; /* phys's */
} ck_jobplan_t;

/* Plans SQL (coordinator; jobplan_sql.c, library ck_coordinator). Errors come rendered with
 * line:column (the SQL's own error rendering) in err->message. */
int ck_jobplan_init(ck_jobplan_t *jp, const char *sql, const char *filename, int parallelism,
                    int max_parallelism, ck_error_t *err);
/* Builds the plan from a serialised graph (worker): CK_EPROTO when the bytes are not one this
 * version encodes back to the same bytes, or ck_plan_decode's errors. */
int ck_jobplan_decode(ck_jobplan_t *jp, const void *wire, size_t len, ck_error_t *err);
void ck_jobplan_fini(ck_jobplan_t *jp);

/* For the two ways above: an empty plan, and what both share once the graph exists (the
 * physical plan and the fingerprint). */
void ck_jobplan_init_empty(ck_jobplan_t *jp);
void ck_jobplan_finish(ck_jobplan_t *jp);

#endif
