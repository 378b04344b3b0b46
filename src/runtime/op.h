/*
 * DESIGN: the operator interface inside a subtask.
 *
 * Operators are push-based and chained: a subtask's thread hands each batch to the first
 * operator, which calls ck_op_emit to pass its output to the next (or to the subtask's output
 * channel). Watermarks travel the same way: an operator receives watermark(wm), emits whatever
 * the watermark completes, then forwards the watermark with ck_op_emit_watermark. A watermark W
 * promises that no later record has event time < W. The runtime delivers CK_WATERMARK_MAX at
 * the end of a bounded input, so everything fires.
 *
 * Snapshots: at a barrier the runtime calls snapshot() on each operator, in chain order, after
 * every record before the barrier was processed; restore() gets those bytes back before any
 * record. The encoding is the operator's own, versioned inside.
 *
 * Threads: one operator instance per subtask, called only on that subtask's thread.
 */
#ifndef CK_RUNTIME_OP_H
#define CK_RUNTIME_OP_H

#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "checkpoint/store.h"
#include "runtime/batch.h"
#include "runtime/graph.h"

#define CK_WATERMARK_MIN INT64_MIN
#define CK_WATERMARK_MAX INT64_MAX

typedef struct ck_op ck_op_t;

/* Where an operator's output goes: the next operator in the chain or the channel writer. */
typedef struct ck_out {
  /* Takes ownership of batch. */
  int (*batch)(void *ctx, ck_batch_t *batch, ck_error_t *err);
  int (*watermark)(void *ctx, int64_t wm, ck_error_t *err);
  void *ctx;
} ck_out_t;

typedef struct ck_op_metrics {
  int64_t records_in, records_out;
  int64_t late_dropped;   /* records whose window had already fired */
  int64_t watermark;      /* last watermark received */
  int64_t state_entries;  /* open groups/windows */
  int64_t state_bytes;
} ck_op_metrics_t;

typedef struct ck_op_ops {
  int (*open)(ck_op_t *op, ck_error_t *err);
  /* batch is borrowed: copy what must outlive the call. */
  int (*process)(ck_op_t *op, const ck_batch_t *batch, ck_error_t *err);
  int (*watermark)(ck_op_t *op, int64_t wm, ck_error_t *err);
  int (*snapshot)(ck_op_t *op, ck_buf_t *out, ck_error_t *err);
  int (*restore)(ck_op_t *op, const void *data, size_t len, ck_error_t *err);
  void (*close)(ck_op_t *op);
} ck_op_ops_t;

struct ck_op {
  const ck_op_ops_t *ops;
  const ck_node_t *node;  /* the graph node this instance runs */
  int subtask, parallelism, max_parallelism;
  ck_out_t out;
  ck_op_metrics_t metrics;
  void *impl;
};

static inline int ck_op_emit(ck_op_t *op, ck_batch_t *batch, ck_error_t *err) {
  op->metrics.records_out += (int64_t)batch->nrows;
  return op->out.batch(op->out.ctx, batch, err);
}
static inline int ck_op_emit_watermark(ck_op_t *op, int64_t wm, ck_error_t *err) {
  return op->out.watermark(op->out.ctx, wm, err);
}

/* Constructors: fill op->ops and op->impl from op->node (the caller set node, subtask,
 * parallelism, max_parallelism and out). */
int ck_calc_op_init(ck_op_t *op, ck_error_t *err);
int ck_agg_op_init(ck_op_t *op, ck_error_t *err);

/* The aggregation operator's snapshot encoding cut into snapshot-file entries (a
 * ck_snap_split_fn of checkpoint/store.h; agg_snap_split.c). */
int ck_agg_snap_split(const void *data, size_t len, bool decode, ck_snap_emit_fn emit, void *ctx,
                      ck_error_t *err);
/* Its inverse: a record put back together from its snapshot row (the key group and key columns
 * and the rest of the record); ck_snap_decode's joiner. */
extern const ck_snap_joiner_t ck_agg_snap_joiner;

#endif
