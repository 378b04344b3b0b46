/*
 * DESIGN: the job graph — what the planner produces and the runtime executes.
 *
 * A job graph is data: nodes (source, calc, agg, sink) with their parameters, each with one
 * input edge (forward, hash by key columns, rebalance or gather) and a parallelism. The
 * planner (sql/planner.h) builds it from the SQL and describes it as text (ck_graph_describe),
 * whose hash is the fingerprint checkpoints record. The embedded run hands the graph to the
 * executor in memory. The cluster does not ship a graph: the coordinator sends the SQL text and
 * the parallelism, and every worker plans the same graph from them (cluster/jobplan.h), its
 * fingerprint checked against the coordinator's. Nodes joined by a forward edge at equal
 * parallelism are chained into one subtask thread.
 *
 * Memory: everything hangs off graph->arena (the job's lifetime).
 */
#ifndef CK_RUNTIME_GRAPH_H
#define CK_RUNTIME_GRAPH_H

#include "base/arena.h"
#include "runtime/connector.h"
#include "runtime/expr.h"
#include "runtime/schema.h"

typedef enum ck_node_kind {
  CK_NODE_SOURCE,
  CK_NODE_CALC, /* filter, then projection */
  CK_NODE_AGG,  /* windowed or unwindowed grouped aggregation */
  CK_NODE_SINK,
} ck_node_kind_t;

typedef enum ck_edge_kind {
  CK_EDGE_FORWARD,   /* subtask i → subtask i (chained when parallelism is equal) */
  CK_EDGE_HASH,      /* by key group of the key columns */
  CK_EDGE_REBALANCE, /* round robin */
  CK_EDGE_GATHER,    /* every upstream subtask → the single downstream subtask */
} ck_edge_kind_t;

typedef enum ck_win_kind {
  CK_WIN_NONE = 0,
  CK_WIN_TUMBLE,   /* size */
  CK_WIN_HOP,      /* size, slide: windows of `size` starting every `slide` */
  CK_WIN_SESSION,  /* gap */
  CK_WIN_CUMULATE, /* step, size: [s, s+step), [s, s+2·step) … [s, s+size) */
} ck_win_kind_t;

typedef struct ck_window_spec {
  ck_win_kind_t kind;
  int64_t size, slide, gap, step; /* milliseconds */
  int64_t offset;                 /* TUMBLE/HOP/CUMULATE: windows start at offset + k * size
                                   * (k * slide), Flink's window offset; 0 by default */
  int time_col;                   /* input column holding event time (epoch ms) */
} ck_window_spec_t;

typedef enum ck_agg_fn {
  CK_AGG_COUNT_STAR,
  CK_AGG_COUNT,
  CK_AGG_SUM,
  CK_AGG_AVG,
  CK_AGG_MIN,
  CK_AGG_MAX,
  CK_AGG_FIRST_VALUE,   /* the first non-NULL value by arrival (agg_op.c) */
  CK_AGG_LAST_VALUE,    /* the last non-NULL value by arrival */
  CK_AGG_LISTAGG,       /* non-NULL values joined by `sep`, in arrival order */
  CK_AGG_APPROX_COUNT_DISTINCT, /* HyperLogLog estimate of COUNT(DISTINCT x) */
  CK_AGG_UDF,             /* a user-defined aggregate in C: `udf` (runtime/udf.h) */
} ck_agg_fn_t;
#define CK_AGG_FN_LAST CK_AGG_UDF

typedef struct ck_agg_call {
  ck_agg_fn_t fn;
  bool distinct;          /* COUNT(DISTINCT x) (and SUM/AVG DISTINCT) */
  int arg_col;            /* input column, -1 for COUNT(*) */
  ck_type_t arg_type;
  ck_type_t result_type;  /* COUNT: BIGINT; SUM: BIGINT for integers, DECIMAL(38,s) for
                             DECIMAL(p,s), DOUBLE for floats; AVG: DOUBLE for integers and
                             floats, DECIMAL(38, max(6,s)) for decimals; MIN/MAX: arg type */
  const char *sep;        /* LISTAGG: the separator (',' when not given); NULL otherwise */
  const struct ck_udf *udf; /* CK_AGG_UDF: loaded for the life of the process */
} ck_agg_call_t;

/* Aggregation over an input whose columns are already computed by an upstream calc:
 * output columns = keys (in key_cols order), then window_start, window_end (TIMESTAMP, only when
 * windowed), then one column per aggregate call. */
typedef struct ck_agg_spec {
  int nkeys;
  int *key_cols;
  int ncalls;
  ck_agg_call_t *calls;
  ck_window_spec_t window;
  int64_t allowed_lateness_ms;
  /* HAVING over the output layout above, or NULL. Windowed: fired rows failing it are dropped.
   * Unwindowed: decides insert / update / delete of the group's row in the changelog. */
  const ck_expr_t *having;
  /* Unwindowed over a bounded input (clink state-query): no changelog; each group's row is
   * emitted once, as a plain insert without a row kind, when the end-of-input watermark
   * (CK_WATERMARK_MAX) arrives. Never set by the planner; not in the plan's wire form. */
  bool emit_final;
} ck_agg_spec_t;

typedef struct ck_calc_spec {
  const ck_expr_t *filter; /* NULL: keep every row */
  int nexprs;              /* projections, producing out_schema */
  ck_expr_t **exprs;
} ck_calc_spec_t;

typedef struct ck_conn_spec {
  const ck_connector_t *connector;
  const char *table;
  ck_schema_t schema;      /* the table's declared columns */
  ck_options_t options;
  /* sources: */
  int event_time_col;      /* -1: no event time (processing order only, no windows fire early) */
  int64_t watermark_lag_ms;
  int64_t idle_timeout_ms; /* 0: partitions never go idle */
  /* computed columns (DDL `name AS expr`, `proc AS PROCTIME()`); the source subtask appends
   * them to each polled batch before event time is read. 0: none, the fields below unset */
  int ncomputed;
  ck_expr_t **computed;    /* per schema column: its expression over phys, or NULL */
  int proctime_col;        /* the column set to the wall clock when a batch is polled, or -1 */
  ck_schema_t phys;        /* the columns the connector reads (its ctx schema) */
  int *phys_col;           /* phys column i is schema column phys_col[i] */
  /* sinks: */
  int *col_map;            /* sink column i ← input column col_map[i], or -1 for NULL */
} ck_conn_spec_t;

typedef struct ck_node {
  int id;
  ck_node_kind_t kind;
  const char *name;        /* "kafka_source", "window_agg", "clickhouse_sink" … */
  int parallelism;
  int input;               /* upstream node id, -1 for a source */
  ck_edge_kind_t edge;     /* how records reach this node from input */
  int nkeys;               /* CK_EDGE_HASH: key columns of the input node's output */
  int *key_cols;
  ck_schema_t out_schema;  /* sink: its input layout */
  bool changelog;          /* output rows carry row kinds (update stream) */
  union {
    ck_conn_spec_t conn;   /* SOURCE, SINK */
    ck_calc_spec_t calc;
    ck_agg_spec_t agg;
  } u;
} ck_node_t;

typedef struct ck_graph {
  ck_arena_t arena;
  int nnodes;
  ck_node_t *nodes;        /* topological order: inputs before their consumers */
  int max_parallelism;     /* key groups (default 128) */
} ck_graph_t;

/* Frees a graph the planner or ck_plan_decode (runtime/plan.h) made, and its arena. */
void ck_graph_free(ck_graph_t *graph);

/* Key group of a key hash, and the subtask owning a key group (contiguous ranges, as Flink). */
static inline int ck_key_group(uint64_t key_hash, int max_parallelism) {
  return (int)(key_hash % (uint64_t)max_parallelism);
}
static inline int ck_key_group_subtask(int key_group, int max_parallelism, int parallelism) {
  return key_group * parallelism / max_parallelism;
}
/* Hash of row i's key columns: the one routing function (exchange, state, restore). */
uint64_t ck_key_hash(const ck_batch_t *batch, const int *key_cols, int nkeys, size_t row);

#endif
