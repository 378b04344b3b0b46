/*
 * DESIGN: unit tests for row selection on batches (src/runtime/batch.c: ck_sel_runs,
 * ck_col_gather, ck_batch_gather, ck_batch_filter) and for the calc operator built on them
 * (src/runtime/calc_op.c).
 *
 * The batch tests build a source batch with a column of every type, each cell a pure function
 * of (column, row) with its own NULL pattern (none and no bitmap, a bitmap without NULLs,
 * sparse, dense, a run of NULLs, NULL and empty strings) and row kinds. They filter it with
 * many selections — all, none, alternating, runs, pseudo-random, bytes other than 1, at sizes
 * around the 8-row words and past CK_BATCH_ROWS — and check every cell of the result against
 * the function at the source row it must come from, so a wrong row, value, NULL, string byte
 * or row kind fails naming the column and both rows. A row appended after filtering checks
 * the result is an ordinary batch (capacity, bitmap tail, kinds).
 *
 * The calc tests drive the operator directly (as test_runtime_agg.c does) over a Nexmark-q0
 * shaped input and compare the rendered output with text written from the same functions,
 * not from the operator's input batch. Every test checks the heap returns to where it started.
 *
 * Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "runtime/expr.h"
#include "runtime/op.h"
#include "test_runtime_util.h"

static const ck_type_t BOOL_T = {CK_T_BOOL, 0, 0};
static const ck_type_t I32 = {CK_T_INT32, 0, 0};
static const ck_type_t I64 = {CK_T_INT64, 0, 0};
static const ck_type_t F32 = {CK_T_FLOAT32, 0, 0};
static const ck_type_t F64 = {CK_T_FLOAT64, 0, 0};
static const ck_type_t DEC = {CK_T_DECIMAL, 30, 4};
static const ck_type_t STR = {CK_T_STRING, 0, 0};
static const ck_type_t TS = {CK_T_TIMESTAMP, 0, 0};

/* ---- the every-type source: cell (c, i) is a function of c and i ---- */

enum { C_BOOL, C_I32, C_I64, C_F32, C_F64, C_DEC, C_STR, C_TS, NCOLS };

static ck_type_t col_type(int c) {
  static const ck_type_t *const types[NCOLS] = {&BOOL_T, &I32, &I64, &F32, &F64, &DEC, &STR, &TS};
  return *types[c];
}

static bool cell_null(int c, size_t i) {
  switch (c) {
    case C_BOOL: return false; /* no bitmap at all */
    case C_I32: return i % 3 == 0;
    case C_I64: return i % 37 == 5; /* sparse: most bitmap bytes all valid */
    case C_F32: return i % 2 == 1;
    case C_F64: return false;       /* a bitmap, but no NULL in it */
    case C_DEC: return i % 11 == 0;
    case C_STR: return i % 13 == 4;
    case C_TS: return i >= 100 && i < 200; /* a run of NULLs */
  }
  return false;
}

static bool v_bool(size_t i) { return (i * 5) % 3 == 0; }
static int32_t v_i32(size_t i) { return (int32_t)((i * 1000003u) % 2000000u) - 1000000; }
static int64_t v_i64(size_t i) { return (int64_t)i * 1000000007 - 5; }
static float v_f32(size_t i) { return (float)i * 0.5f - 3.25f; }
static double v_f64(size_t i) { return (double)i / 3.0; }
static ck_i128 v_dec(size_t i) { return ((ck_i128)i << 70) - (ck_i128)i * 7; }
static int64_t v_ts(size_t i) { return 1700000000000 + (int64_t)i * 1000; }
/* i % 7 bytes: every 7th string is empty. */
static size_t v_str(size_t i, char *buf) {
  size_t n = i % 7;
  for (size_t k = 0; k < n; k++) buf[k] = (char)('a' + (i + k) % 26);
  return n;
}
static ck_row_kind_t v_kind(size_t i) { return (ck_row_kind_t)((i / 3) % 4); }

static ck_batch_t *source_new(size_t n, bool kinds) {
  ck_type_t types[NCOLS];
  for (int c = 0; c < NCOLS; c++) types[c] = col_type(c);
  ck_batch_t *b = ck_batch_new(NCOLS, types, n);
  for (size_t i = 0; i < n; i++) {
    for (int c = 0; c < NCOLS; c++) {
      ck_col_t *col = &b->cols[c];
      if (cell_null(c, i)) {
        ck_col_append_null(col);
        continue;
      }
      char s[8];
      switch (c) {
        case C_BOOL: ck_col_append_bool(col, v_bool(i)); break;
        case C_I32: ck_col_append_i32(col, v_i32(i)); break;
        case C_I64: ck_col_append_i64(col, v_i64(i)); break;
        case C_F32: ck_col_append_f32(col, v_f32(i)); break;
        case C_F64: ck_col_append_f64(col, v_f64(i)); break;
        case C_DEC: ck_col_append_dec(col, v_dec(i)); break;
        case C_STR: ck_col_append_str(col, s, v_str(i, s)); break;
        case C_TS: ck_col_append_i64(col, v_ts(i)); break;
      }
    }
  }
  ck_col_t *f64 = &b->cols[C_F64]; /* a bitmap that marks every row valid */
  f64->validity = ck_malloc((f64->cap + 7) / 8);
  memset(f64->validity, 0xff, (f64->cap + 7) / 8);
  ck_batch_seal(b);
  if (kinds)
    for (size_t i = 0; i < n; i++) ck_batch_set_kind(b, i, v_kind(i));
  return b;
}

#define CELL_FAIL(what, ...)                                                              \
  fail_msg("column %d, row %zu (source row %zu): " what, c, j, i, __VA_ARGS__)

/* Row j of col must be source cell (c, i). */
static void check_cell(const ck_col_t *col, int c, size_t j, size_t i) {
  bool want_null = cell_null(c, i), is_null = !ck_col_valid(col, j);
  if (want_null != is_null) CELL_FAIL("NULL is %d, expected %d", is_null, want_null);
  if (is_null) return;
  switch (c) {
    case C_BOOL:
      if (ck_col_bool(col, j) != v_bool(i))
        CELL_FAIL("%d, expected %d", ck_col_bool(col, j), v_bool(i));
      break;
    case C_I32:
      if (ck_col_i32(col, j) != v_i32(i)) CELL_FAIL("%d, expected %d", ck_col_i32(col, j), v_i32(i));
      break;
    case C_I64:
      if (ck_col_i64(col, j) != v_i64(i))
        CELL_FAIL("%lld, expected %lld", (long long)ck_col_i64(col, j), (long long)v_i64(i));
      break;
    case C_F32:
      if (ck_col_f32(col, j) != v_f32(i)) CELL_FAIL("%g, expected %g", ck_col_f32(col, j), v_f32(i));
      break;
    case C_F64:
      if (ck_col_f64(col, j) != v_f64(i)) CELL_FAIL("%g, expected %g", ck_col_f64(col, j), v_f64(i));
      break;
    case C_DEC:
      if (ck_col_dec(col, j) != v_dec(i))
        CELL_FAIL("high word %lld, expected %lld", (long long)(ck_col_dec(col, j) >> 64),
                  (long long)(v_dec(i) >> 64));
      break;
    case C_STR: {
      char want[8];
      size_t wn = v_str(i, want), n;
      const char *s = ck_col_str(col, j, &n);
      if (n != wn || (n && memcmp(s, want, n)))
        CELL_FAIL("'%.*s', expected '%.*s'", (int)n, s, (int)wn, want);
      break;
    }
    case C_TS:
      if (ck_col_i64(col, j) != v_ts(i))
        CELL_FAIL("%lld, expected %lld", (long long)ck_col_i64(col, j), (long long)v_ts(i));
      break;
  }
}

/* out must hold source rows idx[0..kept) of src, in order, with their kinds; columns outside
 * need (when given) must be left empty. */
static void check_filtered(const ck_batch_t *out, const ck_batch_t *src, const size_t *idx,
                           size_t kept, const bool *need) {
  assert_int_equal(out->ncols, NCOLS);
  assert_int_equal(out->nrows, kept);
  for (int c = 0; c < NCOLS; c++) {
    const ck_col_t *col = &out->cols[c];
    assert_int_equal(col->type.id, col_type(c).id);
    if (need && !need[c]) {
      assert_int_equal(col->len, 0);
      assert_null(col->values);
      continue;
    }
    assert_int_equal(col->len, kept);
    assert_true(col->cap >= kept);
    if (c == C_STR) {
      const int32_t *off = col->values;
      assert_int_equal(off[0], 0);
      assert_int_equal(off[kept], col->data_len);
    }
    for (size_t j = 0; j < kept; j++) check_cell(col, c, j, idx[j]);
  }
  for (size_t j = 0; j < kept; j++)
    if (ck_batch_kind(out, j) != ck_batch_kind(src, idx[j]))
      fail_msg("row %zu (source row %zu): kind %d, expected %d", j, idx[j], ck_batch_kind(out, j),
               ck_batch_kind(src, idx[j]));
  if (!src->kinds) assert_null(out->kinds);
}

/* The source rows sel selects. */
static size_t sel_rows(const uint8_t *sel, size_t n, size_t *idx) {
  size_t kept = 0;
  for (size_t i = 0; i < n; i++)
    if (sel[i]) idx[kept++] = i;
  return kept;
}

/* Filters a fresh n-row source with sel through ck_batch_filter and checks the result, then
 * appends source rows to it as any batch would be appended to. */
static void filter_and_check(const uint8_t *sel, size_t n, bool kinds) {
  ck_batch_t *src = source_new(n, kinds);
  size_t *idx = malloc((n + 2) * sizeof *idx);
  size_t kept = sel_rows(sel, n, idx);
  ck_batch_t *out = ck_batch_filter(src, sel);
  check_filtered(out, src, idx, kept, NULL);
  /* an ordinary batch afterwards: a NULL-heavy row, then an all-valid one (the bitmap's tail
   * bits past the kept rows must read valid) */
  size_t extra[2] = {0, n > 1 ? 1 : 0};
  for (int k = 0; k < 2; k++) {
    ck_batch_append_row(out, src, extra[k]);
    idx[kept++] = extra[k];
  }
  check_filtered(out, src, idx, kept, NULL);
  ck_batch_free(out);
  ck_batch_free(src);
  free(idx);
}

static uint32_t lcg(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

typedef enum {
  P_ALL, P_NONE, P_EVEN, P_ODD, P_RUNS, P_HALF, P_SPARSE, P_DENSE, P_BYTES, P_FIRST, P_LAST,
  P_LONG, P__COUNT
} pattern_t;

static const char *const PATTERN_NAMES[P__COUNT] = {
    "all", "none", "even", "odd", "runs", "half", "sparse", "dense", "bytes", "first", "last",
    "long"};

static void pattern_fill(pattern_t p, uint8_t *sel, size_t n) {
  uint32_t seed = 12345;
  size_t run = 1, left = 1;
  uint8_t on = 1;
  for (size_t i = 0; i < n; i++) {
    switch (p) {
      case P_ALL: sel[i] = 1; break;
      case P_NONE: sel[i] = 0; break;
      case P_EVEN: sel[i] = i % 2 == 0; break;
      case P_ODD: sel[i] = i % 2 == 1; break;
      case P_RUNS: /* kept and dropped runs of 1, 2, 3, … rows */
        sel[i] = on;
        if (--left == 0) {
          on ^= 1;
          left = on ? ++run : run;
        }
        break;
      case P_HALF: sel[i] = lcg(&seed) % 2; break;
      case P_SPARSE: sel[i] = lcg(&seed) % 20 == 0; break;
      case P_DENSE: sel[i] = lcg(&seed) % 20 != 0; break;
      case P_BYTES: sel[i] = (uint8_t)(i % 3 ? (i * 37) % 255 + 1 : 0); break; /* true is not 1 */
      case P_FIRST: sel[i] = i == 0; break;
      case P_LAST: sel[i] = i == n - 1; break;
      case P_LONG: sel[i] = (i >= 5 && i < 300) || (i >= 512 && i < 1000); break;
      default: break;
    }
  }
}

/* ---- ck_sel_runs ---- */

static void test_sel_runs_exact(void **state) {
  uint8_t sel[40] = {0};
  sel[1] = sel[2] = 1;
  for (int i = 6; i < 23; i++) sel[i] = (uint8_t)(i == 10 ? 200 : 1); /* 17 rows, one of them 200 */
  sel[39] = 1;
  ck_run_t runs[40 / 2 + 1];
  size_t kept, nruns = ck_sel_runs(sel, 40, runs, &kept);
  assert_int_equal(nruns, 3);
  assert_int_equal(kept, 2 + 17 + 1);
  assert_int_equal(runs[0].start, 1);
  assert_int_equal(runs[0].len, 2);
  assert_int_equal(runs[1].start, 6);
  assert_int_equal(runs[1].len, 17);
  assert_int_equal(runs[2].start, 39);
  assert_int_equal(runs[2].len, 1);

  uint8_t all[CK_BATCH_ROWS];
  memset(all, 1, sizeof all);
  nruns = ck_sel_runs(all, CK_BATCH_ROWS, runs, &kept);
  assert_int_equal(nruns, 1);
  assert_int_equal(runs[0].start, 0);
  assert_int_equal(runs[0].len, CK_BATCH_ROWS);
  assert_int_equal(kept, CK_BATCH_ROWS);
  memset(all, 0, sizeof all);
  assert_int_equal(ck_sel_runs(all, CK_BATCH_ROWS, runs, &kept), 0);
  assert_int_equal(kept, 0);
  assert_int_equal(ck_sel_runs(all, 0, runs, &kept), 0);
  assert_int_equal(kept, 0);
}

/* Runs agree with a row-by-row reading of sel for every pattern and size. */
static void test_sel_runs_match_rows(void **state) {
  static const size_t sizes[] = {1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, CK_BATCH_ROWS};
  uint8_t sel[CK_BATCH_ROWS];
  for (size_t s = 0; s < CK_ARRAY_LEN(sizes); s++) {
    for (int p = 0; p < P__COUNT; p++) {
      size_t n = sizes[s];
      pattern_fill((pattern_t)p, sel, n);
      ck_run_t *runs = malloc((n / 2 + 1) * sizeof *runs); /* the documented room, for ASan */
      size_t kept, nruns = ck_sel_runs(sel, n, runs, &kept);
      uint8_t back[CK_BATCH_ROWS] = {0};
      size_t total = 0;
      for (size_t r = 0; r < nruns; r++) {
        assert_true(runs[r].len > 0);
        if (r) assert_true(runs[r].start > runs[r - 1].start + runs[r - 1].len); /* maximal */
        for (size_t k = 0; k < runs[r].len; k++) back[runs[r].start + k] = 1;
        total += runs[r].len;
      }
      assert_int_equal(total, kept);
      for (size_t i = 0; i < n; i++)
        if (back[i] != (sel[i] != 0))
          fail_msg("pattern %s, %zu rows: row %zu is %s", PATTERN_NAMES[p], n, i,
                   back[i] ? "in a run but not selected" : "selected but in no run");
      free(runs);
    }
  }
}

/* ---- ck_batch_filter ---- */

static void test_filter_every_type_every_pattern_1024(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  uint8_t sel[CK_BATCH_ROWS];
  for (int kinds = 0; kinds < 2; kinds++) {
    for (int p = 0; p < P__COUNT; p++) {
      pattern_fill((pattern_t)p, sel, CK_BATCH_ROWS);
      filter_and_check(sel, CK_BATCH_ROWS, kinds);
    }
  }
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* Sizes around the 8-row words of the selection scan and the bitmap, and past CK_BATCH_ROWS
 * (the runs no longer fit on the stack). */
static void test_filter_small_and_large_batches(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  static const size_t sizes[] = {1, 2, 7, 8, 9, 15, 17, 63, 65, 3000};
  static uint8_t sel[3000];
  for (size_t s = 0; s < CK_ARRAY_LEN(sizes); s++)
    for (int p = 0; p < P__COUNT; p++) {
      pattern_fill((pattern_t)p, sel, sizes[s]);
      filter_and_check(sel, sizes[s], true);
    }
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* An empty source filters to an empty batch of the same columns. */
static void test_filter_empty_source(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_batch_t *src = source_new(0, false);
  ck_batch_t *out = ck_batch_filter(src, (const uint8_t *)"");
  check_filtered(out, src, NULL, 0, NULL);
  ck_batch_free(out);
  ck_batch_free(src);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* Only the needed columns are copied; the rest keep their type and no buffer. */
static void test_gather_needed_columns_only(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  uint8_t sel[CK_BATCH_ROWS];
  size_t idx[CK_BATCH_ROWS];
  ck_run_t runs[CK_BATCH_ROWS / 2 + 1];
  static const bool needs[][NCOLS] = {
      {true, false, true, false, true, false, true, false},
      {false, true, false, true, false, true, false, true},
      {false, false, false, false, false, false, false, false},
  };
  for (size_t k = 0; k < CK_ARRAY_LEN(needs); k++) {
    pattern_fill(P_HALF, sel, CK_BATCH_ROWS);
    ck_batch_t *src = source_new(CK_BATCH_ROWS, true);
    size_t kept, nruns = ck_sel_runs(sel, CK_BATCH_ROWS, runs, &kept);
    assert_int_equal(sel_rows(sel, CK_BATCH_ROWS, idx), kept);
    ck_batch_t *out = ck_batch_gather(src, runs, nruns, kept, needs[k]);
    check_filtered(out, src, idx, kept, needs[k]);
    ck_batch_free(out);
    ck_batch_free(src);
  }
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* ---- the calc operator: Nexmark q0's shape ---- */

/* Input: event_type INT, auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR,
 * url VARCHAR, date_time TIMESTAMP, extra VARCHAR. */
enum { Q_ET, Q_AUCTION, Q_BIDDER, Q_PRICE, Q_CHANNEL, Q_URL, Q_DT, Q_EXTRA, Q_NCOLS };

static int32_t q_et(size_t i) { return (i / 3) % 2 == 0 || i % 7 == 0 ? 2 : (int32_t)(i % 2); }
static bool q_bidder_null(size_t i) { return i % 7 == 3; }
static bool q_extra_null(size_t i) { return i % 5 == 1; }
/* url is a number only where event_type = 2: a CAST evaluated on another row fails. */
static void q_url(size_t i, char *buf) {
  if (q_et(i) == 2) snprintf(buf, 32, "%zu", i * 3);
  else snprintf(buf, 32, "u/%zu", i);
}
static void q_extra(size_t i, char *buf) {
  if (i % 5 == 2) buf[0] = 0;
  else snprintf(buf, 32, "x%zu", i);
}

static ck_batch_t *q_batch(size_t first, size_t n, bool kinds) {
  ck_type_t types[Q_NCOLS] = {I32, I64, I64, I64, STR, STR, TS, STR};
  ck_batch_t *b = ck_batch_new(Q_NCOLS, types, n);
  char s[32];
  for (size_t r = 0; r < n; r++) {
    size_t i = first + r;
    ck_col_append_i32(&b->cols[Q_ET], q_et(i));
    ck_col_append_i64(&b->cols[Q_AUCTION], 1000 + (int64_t)i);
    if (q_bidder_null(i)) ck_col_append_null(&b->cols[Q_BIDDER]);
    else ck_col_append_i64(&b->cols[Q_BIDDER], (int64_t)i * 13);
    ck_col_append_i64(&b->cols[Q_PRICE], (int64_t)i * 100);
    snprintf(s, sizeof s, "channel-%zu", i);
    ck_col_append_str(&b->cols[Q_CHANNEL], s, strlen(s));
    q_url(i, s);
    ck_col_append_str(&b->cols[Q_URL], s, strlen(s));
    ck_col_append_i64(&b->cols[Q_DT], 1700000000000 + (int64_t)i);
    q_extra(i, s);
    if (q_extra_null(i)) ck_col_append_null(&b->cols[Q_EXTRA]);
    else ck_col_append_str(&b->cols[Q_EXTRA], s, strlen(s));
  }
  ck_batch_seal(b);
  if (kinds)
    for (size_t r = 0; r < n; r++) ck_batch_set_kind(b, r, v_kind(first + r));
  return b;
}

typedef enum {
  SHAPE_Q0,      /* auction, bidder, price, date_time, extra: bare columns only */
  SHAPE_COMPUTE, /* auction, price + 1, CAST(url AS BIGINT), extra: computed ones too */
} shape_t;

static const char *const KINDS[] = {"+I", "-U", "+U", "-D"};

/* The text the calc operator must emit for rows first..first+n-1 (those passing keep). */
static void q_expected(ck_buf_t *out, shape_t shape, size_t first, size_t n, bool kinds,
                       bool (*keep)(size_t)) {
  char s[32];
  for (size_t i = first; i < first + n; i++) {
    if (!keep(i)) continue;
    ck_buf_printf(out, "%s %lld", KINDS[kinds ? v_kind(i) : CK_ROW_INSERT], 1000 + (long long)i);
    if (shape == SHAPE_Q0) {
      if (q_bidder_null(i)) ck_buf_puts(out, " null");
      else ck_buf_printf(out, " %lld", (long long)i * 13);
      ck_buf_printf(out, " %lld %lld", (long long)i * 100, 1700000000000 + (long long)i);
    } else {
      ck_buf_printf(out, " %lld %lld", (long long)i * 100 + 1, (long long)i * 3);
    }
    q_extra(i, s);
    if (q_extra_null(i)) ck_buf_puts(out, " null\n");
    else ck_buf_printf(out, " '%s'\n", s);
  }
}

static bool keep_et2(size_t i) { return q_et(i) == 2; }
static bool keep_all(size_t i) { return true; }

typedef struct cx {
  ck_arena_t arena;
  ck_node_t node;
  ck_op_t op;
  ck_error_t err;
  ck_buf_t log, want; /* emitted, and expected, since the last check */
  int64_t batches;
  int64_t mem_blocks;
} cx_t;

static int cx_batch(void *ctx, ck_batch_t *batch, ck_error_t *err) {
  cx_t *x = ctx;
  x->batches++;
  for (size_t i = 0; i < batch->nrows; i++) {
    ck_buf_puts(&x->log, KINDS[ck_batch_kind(batch, i)]);
    for (int c = 0; c < batch->ncols; c++) {
      assert_int_equal(batch->cols[c].len, batch->nrows);
      ck_buf_putc(&x->log, ' ');
      t_render(&x->log, &batch->cols[c], i);
    }
    ck_buf_putc(&x->log, '\n');
  }
  ck_batch_free(batch);
  return 0;
}

static int cx_wm(void *ctx, int64_t wm, ck_error_t *err) { return 0; }

static ck_expr_t *q_col(cx_t *x, int col) {
  static const ck_type_t *const types[Q_NCOLS] = {&I32, &I64, &I64, &I64, &STR, &STR, &TS, &STR};
  return ck_expr_column(&x->arena, col, *types[col]);
}

static ck_expr_t *q_call(cx_t *x, ck_fn_t fn, int col, int64_t v) {
  ck_value_t lit = {.type = I64, .is_null = false, .v.i = v};
  ck_expr_t *args[2] = {q_col(x, col), ck_expr_literal(&x->arena, &lit)};
  ck_expr_t *e = ck_expr_call(&x->arena, fn, args, 2, &x->err);
  assert_non_null(e);
  return e;
}

/* A calc node over the q0 input: WHERE filter (NULL: none), projections of the given shape. */
static void cx_start(cx_t *x, shape_t shape, ck_expr_t *filter) {
  ck_calc_spec_t *spec = &x->node.u.calc;
  spec->filter = filter;
  spec->nexprs = shape == SHAPE_Q0 ? 5 : 4;
  spec->exprs = ck_arena_alloc(&x->arena, sizeof(ck_expr_t *) * 5);
  if (shape == SHAPE_Q0) {
    static const int cols[5] = {Q_AUCTION, Q_BIDDER, Q_PRICE, Q_DT, Q_EXTRA};
    for (int i = 0; i < 5; i++) spec->exprs[i] = q_col(x, cols[i]);
  } else {
    spec->exprs[0] = q_col(x, Q_AUCTION);
    spec->exprs[1] = q_call(x, CK_FN_ADD, Q_PRICE, 1);
    spec->exprs[2] = ck_expr_cast(&x->arena, q_col(x, Q_URL), I64, &x->err);
    assert_non_null(spec->exprs[2]);
    spec->exprs[3] = q_col(x, Q_EXTRA);
  }
  x->node.out_schema = ck_schema_make(&x->arena, spec->nexprs);
  for (int i = 0; i < spec->nexprs; i++) x->node.out_schema.types[i] = spec->exprs[i]->type;
  x->op.node = &x->node;
  x->op.parallelism = 1;
  x->op.max_parallelism = 128;
  x->op.out = (ck_out_t){cx_batch, cx_wm, x};
  assert_int_equal(ck_calc_op_init(&x->op, &x->err), 0);
  assert_int_equal(x->op.ops->open(&x->op, &x->err), 0);
}

static void cx_init(cx_t *x) {
  memset(x, 0, sizeof *x);
  x->mem_blocks = ck_mem_stats().live_blocks;
  ck_arena_init(&x->arena, 0);
  ck_buf_init(&x->log);
  ck_buf_init(&x->want);
  x->node.id = 1;
  x->node.kind = CK_NODE_CALC;
  x->node.name = "calc";
  x->node.parallelism = 1;
}

static void cx_fini(cx_t *x) {
  x->op.ops->close(&x->op);
  ck_buf_fini(&x->log);
  ck_buf_fini(&x->want);
  ck_arena_fini(&x->arena);
  assert_int_equal(ck_mem_stats().live_blocks, x->mem_blocks);
}

static void cx_push(cx_t *x, size_t first, size_t n, bool kinds) {
  ck_batch_t *b = q_batch(first, n, kinds);
  int rc = x->op.ops->process(&x->op, b, &x->err);
  if (rc) fail_msg("process failed: %s", x->err.message);
  ck_batch_free(b);
}

static void cx_expect(cx_t *x) {
  assert_string_equal(x->log.data ? x->log.data : "", x->want.data ? x->want.data : "");
  ck_buf_reset(&x->log);
  ck_buf_reset(&x->want);
}

/* q0: WHERE event_type = 2, five bare columns; channel and url (VARCHAR) are read by nothing
 * and event_type only by the predicate. Values, NULLs, empty strings and row kinds survive. */
static void test_calc_q0_bare_projection(void **state) {
  for (int kinds = 0; kinds < 2; kinds++) {
    cx_t x;
    cx_init(&x);
    cx_start(&x, SHAPE_Q0, q_call(&x, CK_FN_EQ, Q_ET, 2));
    cx_push(&x, 0, CK_BATCH_ROWS, kinds);
    q_expected(&x.want, SHAPE_Q0, 0, CK_BATCH_ROWS, kinds, keep_et2);
    cx_push(&x, CK_BATCH_ROWS, 37, kinds);
    q_expected(&x.want, SHAPE_Q0, CK_BATCH_ROWS, 37, kinds, keep_et2);
    cx_expect(&x);
    assert_int_equal(x.batches, 2);
    cx_fini(&x);
  }
}

/* Computed projections read a filtered batch holding only price and url: the values are
 * right, and CAST(url AS BIGINT) is never evaluated on a dropped row (whose url is not a
 * number and would fail the batch). */
static void test_calc_computed_projection_reads_kept_rows_only(void **state) {
  cx_t x;
  cx_init(&x);
  cx_start(&x, SHAPE_COMPUTE, q_call(&x, CK_FN_EQ, Q_ET, 2));
  cx_push(&x, 0, CK_BATCH_ROWS, true);
  q_expected(&x.want, SHAPE_COMPUTE, 0, CK_BATCH_ROWS, true, keep_et2);
  cx_expect(&x);
  cx_fini(&x);
}

/* Every row passing (the input is read as is), no row passing (nothing is emitted), no WHERE;
 * then a batch larger than CK_BATCH_ROWS (the scratch grows) and a small one after it. */
static void test_calc_all_none_and_large_batches(void **state) {
  cx_t x;
  cx_init(&x);
  cx_start(&x, SHAPE_Q0, q_call(&x, CK_FN_GE, Q_AUCTION, 0));
  cx_push(&x, 0, 100, true);
  q_expected(&x.want, SHAPE_Q0, 0, 100, true, keep_all);
  cx_expect(&x);
  cx_fini(&x);

  cx_init(&x);
  cx_start(&x, SHAPE_COMPUTE, q_call(&x, CK_FN_LT, Q_AUCTION, 0));
  cx_push(&x, 0, CK_BATCH_ROWS, true);
  assert_int_equal(x.batches, 0);
  cx_fini(&x);

  cx_init(&x);
  cx_start(&x, SHAPE_Q0, NULL);
  cx_push(&x, 5, 50, false);
  q_expected(&x.want, SHAPE_Q0, 5, 50, false, keep_all);
  cx_expect(&x);
  cx_fini(&x);

  cx_init(&x);
  cx_start(&x, SHAPE_COMPUTE, q_call(&x, CK_FN_EQ, Q_ET, 2));
  cx_push(&x, 0, 3000, true);
  q_expected(&x.want, SHAPE_COMPUTE, 0, 3000, true, keep_et2);
  cx_push(&x, 3000, 9, true);
  q_expected(&x.want, SHAPE_COMPUTE, 3000, 9, true, keep_et2);
  cx_expect(&x);
  assert_int_equal(x.batches, 2);
  cx_fini(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sel_runs_exact),
      cmocka_unit_test(test_sel_runs_match_rows),
      cmocka_unit_test(test_filter_every_type_every_pattern_1024),
      cmocka_unit_test(test_filter_small_and_large_batches),
      cmocka_unit_test(test_filter_empty_source),
      cmocka_unit_test(test_gather_needed_columns_only),
      cmocka_unit_test(test_calc_q0_bare_projection),
      cmocka_unit_test(test_calc_computed_projection_reads_kept_rows_only),
      cmocka_unit_test(test_calc_all_none_and_large_batches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
