/*
 * DESIGN: see jobplan.h.
 */
#include "cluster/jobplan.h"

#include <string.h>

#include "checkpoint/lineage.h"
#include "connectors/connectors.h"
#include "runtime/exec.h"
#include "sql/parser.h"
#include "sql/planner.h"

int ck_jobplan_init(ck_jobplan_t *jp, const char *sql, const char *filename, int parallelism,
                    int max_parallelism, ck_error_t *err) {
  memset(jp, 0, sizeof *jp);
  ck_connectors_register_all();
  ck_arena_init(&jp->arena, 0);
  ck_buf_init(&jp->desc);
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
  ck_graph_describe(jp->graph, &jp->desc);
  jp->fingerprint = ck_lineage_fingerprint(jp->desc.data);
  jp->ntasks = ck_exec_task_count(jp->graph);
  ck_exec_task_roles(jp->graph, &jp->nsources, &jp->nsinks);
  jp->nslots = 1;
  for (int i = 0; i < jp->graph->nnodes; i++)
    if (jp->graph->nodes[i].parallelism > jp->nslots) jp->nslots = jp->graph->nodes[i].parallelism;
  return 0;
}

void ck_jobplan_fini(ck_jobplan_t *jp) {
  if (jp->graph) ck_graph_free(jp->graph);
  jp->graph = NULL;
  ck_buf_fini(&jp->desc);
  ck_arena_fini(&jp->arena);
}
