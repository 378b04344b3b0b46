/*
 * DESIGN: the calc operator — WHERE then the projection, column at a time.
 *
 * The predicate is evaluated over the whole input batch into a selection, turned once into
 * runs of kept rows (batch.h). When every row passes, the projections read the input as is.
 * Otherwise a projection that is a bare column reference is gathered straight from the input
 * into its output column (one copy), and the others are evaluated over a filtered batch that
 * holds only the input columns they read — found once by walking their trees — so a column
 * no projection reads (or only the predicate, which saw the unfiltered batch) is never copied.
 *
 * Stateless: snapshot writes nothing. Row kinds and row watermarks pass through unchanged, so a
 * changelog stays a changelog and a row keeps the watermark it arrived under. Runs on its subtask's thread only; the per-batch scratch (selection, runs) and
 * the column mask belong to the operator instance, from open to close.
 */
#include <string.h>

#include "base/alloc.h"
#include "runtime/op.h"

typedef struct calc {
  bool reads_wm;   /* a tree has CURRENT_WATERMARK: every batch gets its row watermarks */
  int64_t wm;      /* the last watermark received (CK_WATERMARK_MIN before the first) */
  int ncols;       /* input columns `need` was computed for; -1 before the first filtered batch */
  bool *need;      /* input columns the computed (not bare-column) projections read */
  bool any_need;   /* some projection is computed: the filtered batch is needed */
  uint8_t *sel;    /* scratch for one batch: room for `cap` rows */
  ck_run_t *runs;  /* room for cap / 2 + 1 runs */
  size_t cap;
} calc_t;

static bool is_bare_column(const ck_expr_t *e) {
  return e->kind == CK_EX_COLUMN && e->type.id != CK_T_NULL;
}

/* Loops down first operands and recurses into the others (a chain may be very long; see
 * runtime/expr.h). */
static void mark_columns(const ck_expr_t *e, bool *need, int ncols) {
  for (;;) {
    if (e->kind == CK_EX_COLUMN) {
      ck_assert(e->column >= 0 && e->column < ncols);
      need[e->column] = true;
    }
    if (e->nargs == 0) return;
    for (int i = 1; i < e->nargs; i++) mark_columns(e->args[i], need, ncols);
    e = e->args[0];
  }
}

/* The columns the computed projections read, for an input of ncols columns. */
static void plan_columns(calc_t *calc, const ck_calc_spec_t *spec, int ncols) {
  if (calc->ncols == ncols) return;
  ck_free(calc->need);
  calc->need = ck_calloc((size_t)(ncols ? ncols : 1), sizeof *calc->need);
  calc->any_need = false;
  for (int i = 0; i < spec->nexprs; i++) {
    if (is_bare_column(spec->exprs[i])) continue;
    mark_columns(spec->exprs[i], calc->need, ncols);
    calc->any_need = true;
  }
  calc->ncols = ncols;
}

static void scratch_reserve(calc_t *calc, size_t rows) {
  if (rows <= calc->cap) return;
  calc->sel = ck_realloc(calc->sel, rows);
  calc->runs = ck_realloc(calc->runs, (rows / 2 + 1) * sizeof *calc->runs);
  calc->cap = rows;
}

/* Whether a tree reads the row watermark (CURRENT_WATERMARK); the walk is mark_columns'. */
static bool reads_watermark(const ck_expr_t *e) {
  for (; e; e = e->nargs ? e->args[0] : NULL) {
    if (e->kind == CK_EX_WATERMARK) return true;
    for (int i = 1; i < e->nargs; i++)
      if (reads_watermark(e->args[i])) return true;
  }
  return false;
}

static int calc_open(ck_op_t *op, ck_error_t *err) {
  calc_t *calc = ck_calloc(1, sizeof *calc);
  const ck_calc_spec_t *spec = &op->node->u.calc;
  calc->wm = CK_WATERMARK_MIN;
  calc->reads_wm = spec->filter && reads_watermark(spec->filter);
  for (int i = 0; i < spec->nexprs && !calc->reads_wm; i++)
    calc->reads_wm = reads_watermark(spec->exprs[i]);
  calc->ncols = -1;
  scratch_reserve(calc, CK_BATCH_ROWS);
  op->impl = calc;
  return 0;
}

/* Projects the rows of batch in runs (kept rows in all), or every row when runs is NULL. */
static int project(ck_op_t *op, const ck_batch_t *batch, const ck_run_t *runs, size_t nruns,
                   size_t kept, ck_error_t *err) {
  calc_t *calc = op->impl;
  const ck_calc_spec_t *spec = &op->node->u.calc;
  ck_batch_t *filtered = NULL;
  const ck_batch_t *in = batch;
  if (runs) {
    plan_columns(calc, spec, batch->ncols);
    if (calc->any_need) in = filtered = ck_batch_gather(batch, runs, nruns, kept, calc->need);
  }
  ck_batch_t *out = ck_calloc(1, sizeof *out);
  out->ncols = spec->nexprs;
  out->cols = ck_calloc((size_t)(spec->nexprs ? spec->nexprs : 1), sizeof *out->cols);
  for (int i = 0; i < spec->nexprs; i++) {
    const ck_expr_t *e = spec->exprs[i];
    if (runs && is_bare_column(e)) {
      ck_assert(e->column >= 0 && e->column < batch->ncols);
      const ck_col_t *col = &batch->cols[e->column];
      ck_assert(col->type.id == e->type.id && col->len >= batch->nrows);
      ck_col_gather(&out->cols[i], col, runs, nruns, kept);
      continue;
    }
    int rc = ck_expr_eval(e, in, &out->cols[i], err);
    if (rc) {
      out->ncols = i;
      ck_batch_free(out);
      ck_batch_free(filtered);
      return rc;
    }
  }
  out->nrows = kept;
  ck_batch_carry_rows(out, batch, runs, nruns, kept);
  ck_batch_free(filtered);
  return ck_op_emit(op, out, err);
}

static int calc_filter_project(ck_op_t *op, const ck_batch_t *batch, ck_error_t *err);

/* A batch without row watermarks arrived wholly under the last one received: for
 * CURRENT_WATERMARK the rows are given it (the array then travels on, as any batch's does). */
static int calc_process(ck_op_t *op, const ck_batch_t *batch, ck_error_t *err) {
  calc_t *calc = op->impl;
  if (!calc->reads_wm || batch->wms || !batch->nrows) return calc_filter_project(op, batch, err);
  ck_batch_t view = *batch;
  view.wms = ck_malloc(batch->nrows * sizeof *view.wms);
  for (size_t i = 0; i < batch->nrows; i++) view.wms[i] = calc->wm;
  int rc = calc_filter_project(op, &view, err);
  ck_free(view.wms);
  return rc;
}

static int calc_filter_project(ck_op_t *op, const ck_batch_t *batch, ck_error_t *err) {
  calc_t *calc = op->impl;
  const ck_calc_spec_t *spec = &op->node->u.calc;
  size_t n = batch->nrows;
  op->metrics.records_in += (int64_t)n;
  if (n == 0) return 0;
  if (!spec->filter) return project(op, batch, NULL, 0, n, err);
  scratch_reserve(calc, n);
  int rc = ck_expr_eval_filter(spec->filter, batch, calc->sel, err);
  if (rc) return rc;
  size_t kept, nruns = ck_sel_runs(calc->sel, n, calc->runs, &kept);
  if (kept == 0) return 0;
  if (kept == n) return project(op, batch, NULL, 0, n, err);
  return project(op, batch, calc->runs, nruns, kept, err);
}

static int calc_watermark(ck_op_t *op, int64_t wm, ck_error_t *err) {
  op->metrics.watermark = wm;
  calc_t *calc = op->impl;
  if (calc && wm > calc->wm) calc->wm = wm;
  return ck_op_emit_watermark(op, wm, err);
}

static int calc_snapshot(ck_op_t *op, ck_buf_t *out, ck_error_t *err) { return 0; }
static int calc_restore(ck_op_t *op, const void *d, size_t n, ck_error_t *err) { return 0; }

static void calc_close(ck_op_t *op) {
  calc_t *calc = op->impl;
  if (!calc) return;
  ck_free(calc->need);
  ck_free(calc->sel);
  ck_free(calc->runs);
  ck_free(calc);
  op->impl = NULL;
}

static const ck_op_ops_t calc_ops = {calc_open,     calc_process, calc_watermark,
                                     calc_snapshot, calc_restore, calc_close};

int ck_calc_op_init(ck_op_t *op, ck_error_t *err) {
  op->ops = &calc_ops;
  op->impl = NULL;
  return 0;
}
