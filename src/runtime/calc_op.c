/*
 * DESIGN: the calc operator — WHERE then the projection, column at a time.
 * Stateless: snapshot writes nothing. Row kinds pass through unchanged, so a changelog stays a
 * changelog. Runs on its subtask's thread only.
 */
#include <string.h>

#include "base/alloc.h"
#include "runtime/op.h"

static int calc_open(ck_op_t *op, ck_error_t *err) { return 0; }

static int calc_process(ck_op_t *op, const ck_batch_t *batch, ck_error_t *err) {
  const ck_calc_spec_t *spec = &op->node->u.calc;
  op->metrics.records_in += (int64_t)batch->nrows;
  if (batch->nrows == 0) return 0;
  ck_batch_t *filtered = NULL;
  const ck_batch_t *in = batch;
  if (spec->filter) {
    uint8_t *sel = ck_malloc(batch->nrows);
    int rc = ck_expr_eval_filter(spec->filter, batch, sel, err);
    if (rc) {
      ck_free(sel);
      return rc;
    }
    size_t kept = 0;
    for (size_t i = 0; i < batch->nrows; i++) kept += sel[i];
    if (kept == 0) {
      ck_free(sel);
      return 0;
    }
    if (kept < batch->nrows) in = filtered = ck_batch_filter(batch, sel);
    ck_free(sel);
  }
  ck_batch_t *out = ck_calloc(1, sizeof *out);
  out->ncols = spec->nexprs;
  out->cols = ck_calloc((size_t)(spec->nexprs ? spec->nexprs : 1), sizeof *out->cols);
  for (int i = 0; i < spec->nexprs; i++) {
    const ck_expr_t *e = spec->exprs[i];
    int rc = ck_expr_eval(e, in, &out->cols[i], err);
    if (rc) {
      out->ncols = i;
      ck_batch_free(out);
      ck_batch_free(filtered);
      return rc;
    }
  }
  out->nrows = in->nrows;
  if (in->kinds) {
    out->kinds = ck_malloc(in->nrows);
    memcpy(out->kinds, in->kinds, in->nrows);
  }
  ck_batch_free(filtered);
  return ck_op_emit(op, out, err);
}

static int calc_watermark(ck_op_t *op, int64_t wm, ck_error_t *err) {
  op->metrics.watermark = wm;
  return ck_op_emit_watermark(op, wm, err);
}

static int calc_snapshot(ck_op_t *op, ck_buf_t *out, ck_error_t *err) { return 0; }
static int calc_restore(ck_op_t *op, const void *d, size_t n, ck_error_t *err) { return 0; }
static void calc_close(ck_op_t *op) {}

static const ck_op_ops_t calc_ops = {calc_open,     calc_process, calc_watermark,
                                     calc_snapshot, calc_restore, calc_close};

int ck_calc_op_init(ck_op_t *op, ck_error_t *err) {
  op->ops = &calc_ops;
  op->impl = NULL;
  return 0;
}
