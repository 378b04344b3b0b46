/*
 * DESIGN: unit tests for src/runtime/batch_wire — the binary form batches take between
 * processes.
 *
 * Round trips compare the decoded batch with the original cell by cell (types, NULLs, values
 * bit for bit, string bytes, row kinds), for every type, for whole batches and for slices that
 * start off a byte boundary of the validity bitmap. Robustness: every truncation of a valid
 * encoding and thousands of seeded random byte flips — both as they are (the checksum must
 * catch them) and with the checksum recomputed (the structural checks must) — give CK_EDECODE
 * or a batch that is safe to read, never a crash: these tests are meant to run under ASan.
 * Threads: main only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/crc32c.h"
#include "runtime/batch.h"
#include "runtime/batch_wire.h"

/* ---- helpers ---- */

static const ck_type_t every_type[] = {
    {CK_T_BOOL, 0, 0},    {CK_T_INT32, 0, 0},   {CK_T_INT64, 0, 0},
    {CK_T_FLOAT32, 0, 0}, {CK_T_FLOAT64, 0, 0}, {CK_T_DECIMAL, 10, 2},
    {CK_T_DECIMAL, 38, 6}, {CK_T_STRING, 0, 0}, {CK_T_TIMESTAMP, 0, 0},
    {CK_T_NULL, 0, 0},
};
enum { NTYPES = (int)CK_ARRAY_LEN(every_type) };

static const char *const strings[] = {
    "", "a", "grüße", "日本語テキスト", "emoji 🚀🎉", "", "x y z", "ñ", "a longer string of text"};

static ck_i128 big_decimal(size_t i) {
  /* values beyond 64 bits, both signs: ±(10^37 - i) */
  ck_i128 v = ck_pow10_i128(37) - (ck_i128)i;
  return (i & 1) ? -v : v;
}

/* rows rows of every type; row i is NULL in column c when (i + c) % 7 == 3; kinds cycle
 * through all four when with_kinds. */
static ck_batch_t *make_batch(size_t rows, bool with_nulls, bool with_kinds) {
  ck_batch_t *batch = ck_batch_new(NTYPES, every_type, 0);
  for (size_t i = 0; i < rows; i++) {
    for (int c = 0; c < NTYPES; c++) {
      ck_col_t *col = &batch->cols[c];
      if ((with_nulls && (i + (size_t)c) % 7 == 3) || col->type.id == CK_T_NULL) {
        ck_col_append_null(col);
        continue;
      }
      switch (col->type.id) {
        case CK_T_BOOL: ck_col_append_bool(col, i % 3 == 0); break;
        case CK_T_INT32: ck_col_append_i32(col, (int32_t)(i * 2654435761u)); break;
        case CK_T_INT64: ck_col_append_i64(col, (int64_t)i * -1000000007LL + INT64_MAX / 3); break;
        case CK_T_FLOAT32: ck_col_append_f32(col, (float)i * 0.25f - 3.5f); break;
        case CK_T_FLOAT64: ck_col_append_f64(col, (double)i / 7.0 - 1e300 * (i == 5)); break;
        case CK_T_DECIMAL:
          ck_col_append_dec(col, col->type.precision == 38 ? big_decimal(i)
                                                           : (ck_i128)i * 12345 - 99999);
          break;
        case CK_T_STRING: {
          const char *s = strings[i % CK_ARRAY_LEN(strings)];
          ck_col_append_str(col, s, strlen(s));
          break;
        }
        case CK_T_TIMESTAMP: ck_col_append_i64(col, 1700000000000LL + (int64_t)i * 1001); break;
        case CK_T_NULL: break;
      }
    }
  }
  ck_batch_seal(batch);
  if (with_kinds)
    for (size_t i = 0; i < rows; i++) ck_batch_set_kind(batch, i, (ck_row_kind_t)(i % 4));
  return batch;
}

/* Asserts rows [from, from+n) of want equal rows [0, n) of got, cell by cell. */
static void assert_rows_equal(const ck_batch_t *want, size_t from, size_t n,
                              const ck_batch_t *got) {
  assert_int_equal(got->ncols, want->ncols);
  assert_int_equal(got->nrows, n);
  for (int c = 0; c < want->ncols; c++) {
    const ck_col_t *a = &want->cols[c], *b = &got->cols[c];
    assert_int_equal(b->type.id, a->type.id);
    assert_true(ck_type_eq(a->type, b->type));
    assert_int_equal(b->len, n);
    for (size_t i = 0; i < n; i++) {
      bool va = ck_col_valid(a, from + i), vb = ck_col_valid(b, i);
      if (va != vb) fail_msg("column %d row %zu: valid %d, decoded %d", c, from + i, va, vb);
      if (!va) continue;
      if (a->type.id == CK_T_STRING) {
        size_t la, lb;
        const char *sa = ck_col_str(a, from + i, &la), *sb = ck_col_str(b, i, &lb);
        assert_int_equal(lb, la);
        assert_memory_equal(sb, sa, la);
      } else {
        size_t w = ck_type_width(a->type);
        if (memcmp((const char *)a->values + (from + i) * w, (const char *)b->values + i * w,
                   w) != 0)
          fail_msg("column %d row %zu: value differs", c, from + i);
      }
    }
  }
  for (size_t i = 0; i < n; i++) assert_int_equal(ck_batch_kind(got, i), ck_batch_kind(want, from + i));
}

/* Reads every cell of a decoded batch (ASan checks each access is in bounds). */
static uint64_t touch_every_cell(const ck_batch_t *batch) {
  uint64_t sum = 0;
  for (int c = 0; c < batch->ncols; c++) {
    const ck_col_t *col = &batch->cols[c];
    assert_int_equal(col->len, batch->nrows);
    for (size_t i = 0; i < col->len; i++) {
      ck_value_t v;
      ck_col_get_value(col, i, &v);
      if (v.is_null) continue;
      if (col->type.id == CK_T_STRING)
        for (size_t k = 0; k < v.v.s.len; k++) sum += (uint8_t)v.v.s.ptr[k];
      else
        sum += (uint64_t)v.v.i;
    }
  }
  for (size_t i = 0; i < batch->nrows; i++) sum += ck_batch_kind(batch, i);
  return sum;
}

static void fix_crc(char *p, size_t len) {
  uint32_t crc = ck_crc32c(0, p, len - 4);
  for (int b = 0; b < 4; b++) p[len - 4 + (size_t)b] = (char)(crc >> (8 * b));
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void) { /* xorshift64*: seeded, so a failure reproduces */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ULL;
}

/* ---- round trips ---- */

static void test_batch_wire_round_trip_every_type(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_batch_t *batch = make_batch(200, true, true);
  ck_buf_t buf;
  ck_buf_init(&buf);
  ck_batch_wire_encode(batch, 0, batch->nrows, &buf);
  assert_true(buf.len <= ck_batch_wire_size(batch, 0, batch->nrows));
  ck_batch_t *got = NULL;
  ck_error_t err = {0};
  int rc = ck_batch_wire_decode(buf.data, buf.len, &got, &err);
  if (rc) fail_msg("decode: %s", err.message);
  assert_rows_equal(batch, 0, batch->nrows, got);
  /* 128-bit decimals survive beyond 64 bits, and multibyte strings byte for byte */
  assert_true(ck_col_dec(&got->cols[6], 0) == big_decimal(0));
  assert_true(ck_col_dec(&got->cols[6], 1) == big_decimal(1));
  size_t n;
  const char *s = ck_col_str(&got->cols[7], 12, &n);
  assert_int_equal(n, strlen("日本語テキスト"));
  assert_memory_equal(s, "日本語テキスト", n);
  /* decoded batches are ordinary batches: they can grow */
  ck_batch_append_row(got, batch, 5);
  assert_int_equal(got->nrows, 201);
  ck_batch_free(got);
  ck_batch_free(batch);
  ck_buf_fini(&buf);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void test_batch_wire_slices(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_batch_t *batch = make_batch(150, true, true);
  ck_buf_t buf;
  ck_buf_init(&buf);
  /* every start within two bitmap bytes, several lengths: shifts and partial last bytes */
  const size_t lens[] = {0, 1, 7, 8, 9, 33, 64};
  for (size_t from = 0; from < 20; from++) {
    for (size_t k = 0; k < CK_ARRAY_LEN(lens); k++) {
      ck_buf_reset(&buf);
      ck_batch_wire_encode(batch, from, lens[k], &buf);
      ck_batch_t *got = NULL;
      ck_error_t err = {0};
      if (ck_batch_wire_decode(buf.data, buf.len, &got, &err))
        fail_msg("slice [%zu, +%zu): %s", from, lens[k], err.message);
      assert_rows_equal(batch, from, lens[k], got);
      ck_batch_free(got);
    }
  }
  /* a slice from the middle, as the network sends a split batch */
  ck_buf_reset(&buf);
  ck_batch_wire_encode(batch, 61, 50, &buf);
  ck_batch_t *got = NULL;
  ck_error_t err = {0};
  assert_int_equal(ck_batch_wire_decode(buf.data, buf.len, &got, &err), 0);
  assert_rows_equal(batch, 61, 50, got);
  /* string offsets were rebased: the slice's first string starts at 0 */
  assert_int_equal(((int32_t *)got->cols[7].values)[0], 0);
  ck_batch_free(got);
  ck_batch_free(batch);
  ck_buf_fini(&buf);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void test_batch_wire_omits_absent_nulls_and_kinds(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_batch_t *plain = make_batch(64, false, false);
  ck_batch_t *nulls = make_batch(64, true, true);
  ck_batch_t *inserts = make_batch(64, true, false);
  ck_buf_t a, b;
  ck_buf_init(&a);
  ck_buf_init(&b);
  ck_batch_wire_encode(inserts, 0, 64, &a);
  ck_batch_wire_encode(nulls, 0, 64, &b);
  assert_int_equal(b.len, a.len + 64); /* one byte per row kind, only when there are kinds */
  ck_buf_reset(&a);
  ck_batch_wire_encode(plain, 0, 64, &a);
  ck_batch_t *got = NULL;
  ck_error_t err = {0};
  assert_int_equal(ck_batch_wire_decode(a.data, a.len, &got, &err), 0);
  assert_null(got->kinds);
  for (int c = 0; c < got->ncols; c++)
    if (got->cols[c].type.id != CK_T_NULL) assert_null(got->cols[c].validity);
  assert_rows_equal(plain, 0, 64, got);
  ck_batch_free(got);
  /* one row of the NULL-laden batch, a row with no NULL (column 0 is NULL when i % 7 == 3;
   * row 0 has NULLs only in column 3) and an insert: nothing extra is written */
  ck_buf_reset(&b);
  ck_batch_wire_encode(nulls, 0, 1, &b);
  assert_int_equal(ck_batch_wire_decode(b.data, b.len, &got, &err), 0);
  assert_null(got->kinds);
  assert_null(got->cols[0].validity);
  assert_non_null(got->cols[3].validity);
  assert_rows_equal(nulls, 0, 1, got);
  ck_batch_free(got);
  ck_batch_free(plain);
  ck_batch_free(nulls);
  ck_batch_free(inserts);
  ck_buf_fini(&a);
  ck_buf_fini(&b);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void test_batch_wire_empty_batches(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_buf_t buf;
  ck_buf_init(&buf);
  ck_batch_t *none = ck_batch_new(0, NULL, 0);
  ck_batch_wire_encode(none, 0, 0, &buf);
  ck_batch_t *got = NULL;
  ck_error_t err = {0};
  assert_int_equal(ck_batch_wire_decode(buf.data, buf.len, &got, &err), 0);
  assert_int_equal(got->ncols, 0);
  assert_int_equal(got->nrows, 0);
  ck_batch_free(got);
  ck_batch_t *batch = make_batch(0, true, false);
  ck_buf_reset(&buf);
  ck_batch_wire_encode(batch, 0, 0, &buf);
  assert_int_equal(ck_batch_wire_decode(buf.data, buf.len, &got, &err), 0);
  assert_rows_equal(batch, 0, 0, got);
  ck_batch_free(got);
  ck_batch_free(batch);
  ck_batch_free(none);
  ck_buf_fini(&buf);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void test_batch_wire_rows_fitting(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_type_t t[] = {CK_TYPE(CK_T_INT64), CK_TYPE(CK_T_STRING)};
  ck_batch_t *batch = ck_batch_new(2, t, 0);
  char text[300];
  memset(text, 'q', sizeof text);
  for (int i = 0; i < 1000; i++) {
    ck_col_append_i64(&batch->cols[0], i);
    ck_col_append_str(&batch->cols[1], text, (size_t)(i * 7) % sizeof text);
  }
  ck_batch_seal(batch);
  size_t whole = ck_batch_wire_size(batch, 0, 1000);
  assert_int_equal(ck_batch_wire_rows_fitting(batch, 0, whole), 1000);
  assert_int_equal(ck_batch_wire_rows_fitting(batch, 0, whole - 1), 999);
  assert_int_equal(ck_batch_wire_rows_fitting(batch, 0, 1), 1); /* at least one */
  assert_int_equal(ck_batch_wire_rows_fitting(batch, 1000, 1 << 20), 0);
  /* chunking by a limit covers every row once, each chunk fits and is maximal */
  const size_t limit = 16 * 1024;
  ck_buf_t buf;
  ck_buf_init(&buf);
  size_t from = 0, chunks = 0;
  while (from < batch->nrows) {
    size_t n = ck_batch_wire_rows_fitting(batch, from, limit);
    assert_true(n >= 1);
    ck_buf_reset(&buf);
    ck_batch_wire_encode(batch, from, n, &buf);
    assert_true(buf.len <= limit);
    if (from + n < batch->nrows) assert_true(ck_batch_wire_size(batch, from, n + 1) > limit);
    ck_batch_t *got = NULL;
    ck_error_t err = {0};
    assert_int_equal(ck_batch_wire_decode(buf.data, buf.len, &got, &err), 0);
    assert_rows_equal(batch, from, n, got);
    ck_batch_free(got);
    from += n;
    chunks++;
  }
  assert_int_equal(from, 1000);
  assert_true(chunks >= whole / limit);
  ck_buf_fini(&buf);
  ck_batch_free(batch);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* ---- robustness ---- */

static void test_batch_wire_every_truncation_fails(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_batch_t *batch = make_batch(40, true, true);
  ck_buf_t buf;
  ck_buf_init(&buf);
  ck_batch_wire_encode(batch, 3, 30, &buf);
  for (size_t len = 0; len < buf.len; len++) {
    /* an exact-size copy, so ASan sees any read past the given length */
    char *copy = ck_malloc(len ? len : 1);
    memcpy(copy, buf.data, len);
    for (int fixed = 0; fixed < 2; fixed++) {
      if (fixed && len >= 20) fix_crc(copy, len); /* past the checksum, into the structure */
      ck_batch_t *got = (ck_batch_t *)1;
      ck_error_t err = {0};
      int rc = ck_batch_wire_decode(copy, len, &got, &err);
      if (rc != CK_EDECODE) fail_msg("truncated to %zu of %zu: rc %d", len, buf.len, rc);
      assert_null(got);
      assert_non_null(strstr(err.message, "could not decode batch"));
    }
    ck_free(copy);
  }
  ck_batch_free(batch);
  ck_buf_fini(&buf);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void test_batch_wire_random_flips_never_crash(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_batch_t *batch = make_batch(60, true, true);
  ck_buf_t buf;
  ck_buf_init(&buf);
  ck_batch_wire_encode(batch, 5, 50, &buf);
  char *copy = ck_malloc(buf.len);
  int caught_by_crc = 0, rejected = 0, accepted = 0;
  for (int iter = 0; iter < 6000; iter++) {
    memcpy(copy, buf.data, buf.len);
    int flips = 1 + (int)(rnd() % 4);
    for (int f = 0; f < flips; f++) {
      size_t at = rnd() % (buf.len - 4);
      uint8_t mask = (uint8_t)(1 + rnd() % 255);
      copy[at] = (char)(copy[at] ^ mask);
    }
    bool fixed = iter % 2 == 1;
    if (fixed) fix_crc(copy, buf.len);
    ck_batch_t *got = NULL;
    ck_error_t err = {0};
    int rc = ck_batch_wire_decode(copy, buf.len, &got, &err);
    if (rc == 0) {
      assert_true(fixed); /* without the fix-up the checksum must catch every flip */
      touch_every_cell(got);
      /* a batch that decoded is well formed: it encodes and decodes again */
      ck_buf_t again;
      ck_buf_init(&again);
      ck_batch_wire_encode(got, 0, got->nrows, &again);
      ck_batch_t *back = NULL;
      assert_int_equal(ck_batch_wire_decode(again.data, again.len, &back, &err), 0);
      assert_rows_equal(got, 0, got->nrows, back);
      ck_batch_free(back);
      ck_buf_fini(&again);
      ck_batch_free(got);
      accepted++;
    } else {
      assert_int_equal(rc, CK_EDECODE);
      assert_null(got);
      assert_true(err.message[0] != 0);
      if (!fixed) caught_by_crc++; /* checksum, or magic and version checked before it */
      else rejected++;
    }
  }
  assert_int_equal(caught_by_crc, 3000);
  /* flips in values are legal batches, flips in the structure are not: both happened */
  assert_true(accepted > 0);
  assert_true(rejected > 0);
  ck_free(copy);
  ck_batch_free(batch);
  ck_buf_fini(&buf);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* Sets one byte of a valid encoding (checksum fixed up when fix) and expects a message
 * naming the fault. */
static void expect_error(const ck_buf_t *buf, size_t at, uint8_t value, bool fix,
                         const char *needle) {
  char *copy = ck_malloc(buf->len);
  memcpy(copy, buf->data, buf->len);
  copy[at] = (char)value;
  if (fix) fix_crc(copy, buf->len);
  ck_batch_t *got = NULL;
  ck_error_t err = {0};
  assert_int_equal(ck_batch_wire_decode(copy, buf->len, &got, &err), CK_EDECODE);
  if (!strstr(err.message, needle)) fail_msg("expected \"%s\" in: %s", needle, err.message);
  assert_null(got);
  ck_free(copy);
}

static void test_batch_wire_errors_name_the_fault(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_type_t t[] = {CK_TYPE(CK_T_BOOL), CK_TYPE(CK_T_STRING)};
  ck_batch_t *batch = ck_batch_new(2, t, 0);
  ck_col_append_bool(&batch->cols[0], true);
  ck_col_append_str(&batch->cols[1], "ab", 2);
  ck_col_append_bool(&batch->cols[0], false);
  ck_col_append_str(&batch->cols[1], "cd", 2);
  ck_batch_seal(batch);
  ck_buf_t buf;
  ck_buf_init(&buf);
  ck_batch_wire_encode(batch, 0, 2, &buf);
  /* layout: header 0..15 · column 1 header at 16, booleans at 20, 21 · column 2 header at 22,
   * offsets at 26, 30, 34, bytes at 38..41 · checksum at 42 */
  assert_int_equal(buf.len, 46);
  expect_error(&buf, 0, 'X', false, "bad magic");
  expect_error(&buf, 4, 9, false, "version 9");
  expect_error(&buf, 39, 'z', false, "checksum mismatch");
  expect_error(&buf, 5, 0x80, true, "unknown header flags");
  expect_error(&buf, 6, 1, true, "reserved");
  expect_error(&buf, 8, 3, true, "truncated in the header of column 3");
  expect_error(&buf, 8, 200, true, "column count out of range");
  expect_error(&buf, 12, 200, true, "truncated in the values of column 1");
  expect_error(&buf, 16, 42, true, "column 1 has unknown type id 42");
  expect_error(&buf, 17, 5, true, "precision 5");
  expect_error(&buf, 19, 4, true, "unknown flags");
  expect_error(&buf, 21, 2, true, "not a boolean");
  expect_error(&buf, 26, 1, true, "start at 1");
  expect_error(&buf, 30, 9, true, "go backwards");
  expect_error(&buf, 34, 3, true, "trailing bytes");
  expect_error(&buf, 34, 9, true, "truncated in the string bytes of column 2");
  ck_batch_free(batch);
  ck_buf_fini(&buf);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* Row watermarks (batch.h wms) travel with their rows: a slice keeps its rows' values, and a
 * decreasing array (a watermark that goes back) is refused naming the row. */
static void test_batch_wire_row_watermarks(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_type_t t[] = {CK_TYPE(CK_T_INT64)};
  ck_batch_t *batch = ck_batch_new(1, t, 0);
  for (int i = 0; i < 10; i++) ck_col_append_i64(&batch->cols[0], i);
  ck_batch_seal(batch);
  batch->wms = ck_malloc(10 * sizeof *batch->wms);
  for (int i = 0; i < 10; i++) batch->wms[i] = 1000 + 10 * (i / 3);
  ck_buf_t buf;
  ck_buf_init(&buf);
  ck_batch_wire_encode(batch, 4, 5, &buf);
  ck_batch_t *got = NULL;
  ck_error_t err = {0};
  assert_int_equal(ck_batch_wire_decode(buf.data, buf.len, &got, &err), 0);
  assert_non_null(got->wms);
  for (int i = 0; i < 5; i++) assert_int_equal(got->wms[i], batch->wms[4 + i]);
  ck_batch_free(got);
  /* rows 4..8 hold 1010 1010 1020 1020 1020 at 8 bytes each after the values and before the
   * checksum: make row 3 of the slice go back, recompute the checksum */
  size_t at = buf.len - 4 - 5 * 8 + 2 * 8;
  uint8_t *p = (uint8_t *)buf.data;
  p[at] = 0;
  uint32_t crc = ck_crc32c(0, p, buf.len - 4);
  memcpy(p + buf.len - 4, &crc, 4);
  got = NULL;
  assert_int_equal(ck_batch_wire_decode(buf.data, buf.len, &got, &err), CK_EDECODE);
  assert_non_null(strstr(err.message, "row watermarks go back at row 3"));
  assert_null(got);
  /* a filter and a row-by-row copy (the keyed exchange) keep each row's watermark */
  uint8_t sel[10] = {1, 0, 0, 1, 1, 0, 0, 1, 0, 1};
  ck_batch_t *kept = ck_batch_filter(batch, sel);
  const int64_t want[] = {1000, 1010, 1010, 1020, 1030};
  assert_int_equal(kept->nrows, 5);
  for (int i = 0; i < 5; i++) assert_int_equal(kept->wms[i], want[i]);
  ck_batch_t *copy = ck_batch_new(1, t, 2);
  for (size_t i = 0; i < kept->nrows; i++) ck_batch_append_row(copy, kept, i);
  ck_batch_seal(copy);
  for (int i = 0; i < 5; i++) assert_int_equal(copy->wms[i], want[i]);
  ck_batch_free(copy);
  ck_batch_free(kept);
  ck_batch_free(batch);
  ck_buf_fini(&buf);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_batch_wire_round_trip_every_type),
      cmocka_unit_test(test_batch_wire_slices),
      cmocka_unit_test(test_batch_wire_omits_absent_nulls_and_kinds),
      cmocka_unit_test(test_batch_wire_empty_batches),
      cmocka_unit_test(test_batch_wire_rows_fitting),
      cmocka_unit_test(test_batch_wire_every_truncation_fails),
      cmocka_unit_test(test_batch_wire_random_flips_never_crash),
      cmocka_unit_test(test_batch_wire_errors_name_the_fault),
      cmocka_unit_test(test_batch_wire_row_watermarks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
