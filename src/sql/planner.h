/*
 * DESIGN: from a parsed script to a job graph.
 *
 * The binder keeps a catalog of the script's CREATE TABLE statements, resolves every name of
 * each INSERT/SELECT against it (unknown names get "did you mean"), types every expression
 * through the constructors in runtime/expr.h, and plans each query as one linear pipeline:
 *
 *   source ─▶ calc (WHERE, projection or the aggregate's inputs)
 *          ─hash by key─▶ agg (window, aggregates, HAVING) ─▶ calc (SELECT list) ─▶ sink
 *
 * A window table function in FROM (TUMBLE(TABLE t, DESCRIPTOR(ts), …), HOP, CUMULATE) is
 * planned as the GROUP BY window it stands for, into the same graph. A bare SELECT gets a print
 * sink. All pipelines of a script go into one graph and run as one job. Everything the planner
 * refuses is refused here, before anything starts.
 */
#ifndef CK_SQL_PLANNER_H
#define CK_SQL_PLANNER_H

#include "base/error.h"
#include "runtime/graph.h"
#include "sql/ast.h"

typedef struct ck_plan_opts {
  int parallelism;     /* default 1 */
  int max_parallelism; /* key groups; default 128 */
} ck_plan_opts_t;

/* Plans every query of the script into a new graph (freed with ck_graph_free, graph.h). */
int ck_sql_plan(const ck_script_t *script, const ck_plan_opts_t *opts, ck_graph_t **out,
                ck_error_t *err);

/* A printable identity of the job graph — every node, schema, option and expression, but
 * not its parallelism — for the checkpoint fingerprint. */
void ck_graph_describe(const ck_graph_t *graph, ck_buf_t *out);

/* The job's end-to-end guarantee, as the coordinator states it at submission:
 * "STATE_EXACTLY_ONCE_OUTPUT_AT_LEAST_ONCE (limited by sink 'clickhouse_sink')". */
void ck_graph_guarantee(const ck_graph_t *graph, bool checkpointing, ck_buf_t *out);

#endif
