/*
 * DESIGN: see jobplan.h. The worker's half: a plan from the serialised graph, without the SQL
 * front end (the coordinator's ck_jobplan_init is jobplan_sql.c, in its own library).
 */
#include "cluster/jobplan.h"

#include <string.h>

#include "checkpoint/lineage.h"
#include "connectors/connectors.h"

void ck_jobplan_finish(ck_jobplan_t *jp) {
  ck_plan_build(jp->graph, &jp->phys);
  ck_plan_identity(jp->graph, &jp->desc);
  jp->fingerprint = ck_lineage_fingerprint(jp->desc.data);
  jp->ntasks = jp->phys.ntasks;
  jp->nsources = jp->phys.nsources;
  jp->nsinks = jp->phys.nsinks;
  jp->nslots = jp->phys.nslots;
}

void ck_jobplan_init_empty(ck_jobplan_t *jp) {
  memset(jp, 0, sizeof *jp);
  ck_connectors_register_all();
  ck_arena_init(&jp->arena, 0);
  ck_buf_init(&jp->desc);
  ck_buf_init(&jp->wire);
}

int ck_jobplan_decode(ck_jobplan_t *jp, const void *wire, size_t len, ck_error_t *err) {
  ck_jobplan_init_empty(jp);
  int rc = ck_plan_decode(wire, len, &jp->graph, err);
  if (!rc) {
    ck_plan_encode(jp->graph, 0, &jp->wire);
    if (jp->wire.len != len || memcmp(jp->wire.data, wire, len))
      rc = ck_error_set(err, CK_EPROTO, "could not build the job graph: the serialised graph "
                        "does not encode back to the same bytes here (a different clink "
                        "version?)");
  }
  if (rc) {
    ck_jobplan_fini(jp);
    return rc;
  }
  ck_jobplan_finish(jp);
  return 0;
}

void ck_jobplan_fini(ck_jobplan_t *jp) {
  if (jp->graph) ck_graph_free(jp->graph);
  jp->graph = NULL;
  ck_plan_fini(&jp->phys);
  ck_buf_fini(&jp->wire);
  ck_buf_fini(&jp->desc);
  ck_arena_fini(&jp->arena);
}
