/*
 * DESIGN: see jobplan.h — the coordinator's half: plans submitted SQL (the SQL front end and
 * the connectors' plan-time checks). It is the one file of src/cluster/ that needs sql/, and
 * it lives in the coordinator's library (ck_coordinator), which the worker's does not link.
 */
#include "cluster/jobplan.h"

#include "sql/parser.h"
#include "sql/planner.h"

int ck_jobplan_init(ck_jobplan_t *jp, const char *sql, const char *filename, int parallelism,
                    int max_parallelism, ck_error_t *err) {
  ck_jobplan_init_empty(jp);
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
  ck_jobplan_finish(jp);
  return 0;
}
