/*
 * DESIGN: see jobplan.h.
 */
#include "cluster/jobplan.h"

#include <string.h>

#include "checkpoint/lineage.h"
#include "connectors/connectors.h"
#include "sql/parser.h"
#include "sql/planner.h"

/* What both ways share once the graph exists: the physical plan and the fingerprint. */
static void finish(ck_jobplan_t *jp) {
  ck_plan_build(jp->graph, &jp->phys);
  ck_plan_identity(jp->graph, &jp->desc);
  jp->fingerprint = ck_lineage_fingerprint(jp->desc.data);
  jp->ntasks = jp->phys.ntasks;
  jp->nsources = jp->phys.nsources;
  jp->nsinks = jp->phys.nsinks;
  jp->nslots = jp->phys.nslots;
}

static void init_empty(ck_jobplan_t *jp) {
  memset(jp, 0, sizeof *jp);
  ck_connectors_register_all();
  ck_arena_init(&jp->arena, 0);
  ck_buf_init(&jp->desc);
  ck_buf_init(&jp->wire);
}

int ck_jobplan_init(ck_jobplan_t *jp, const char *sql, const char *filename, int parallelism,
                    int max_parallelism, ck_error_t *err) {
  init_empty(jp);
  ck_script_t script;
  ck_plan_opts_t popts = {parallelism > 0 ? parallelism : 1,
                          max_parallelism > 0 ? max_parallelism : 128};
  int rc = ck_sql_parse(sql, &jp->arena, &script, err);
  if (!rc) rc = ck_sql_plan(&script, &popts, &jp->graph, err);
  if (rc) {
    ck_buf_t msg;
    ck_buf_init(&msg);
    ck_sql_render_error(sql, filename, err, &msg);
    while (msg.len && msg.data[msg.len - 1] == '\n') msg.data[--msg.len] = 0;
    int code = err->code ? err->code : rc;
    ck_error_clear(err);
    ck_error_set(err, code, "%s", msg.data);
    ck_buf_fini(&msg);
    ck_jobplan_fini(jp);
    return rc;
  }
  ck_plan_encode(jp->graph, 0, &jp->wire);
  finish(jp);
  return 0;
}

int ck_jobplan_decode(ck_jobplan_t *jp, const void *wire, size_t len, ck_error_t *err) {
  init_empty(jp);
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
  finish(jp);
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
