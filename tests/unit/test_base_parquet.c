/*
 * DESIGN: round trips of the hand-written Parquet writer (src/base/parquet.c) with random
 * schemas: 1 to 12 columns of random types and names, about half of them optional, 0 to 3 row
 * groups of 0 to 3000 rows, random values (empty and long strings, extreme integers, NaN-free
 * doubles), random NULL patterns per optional column and group (none, all, scattered at a
 * random density, long runs, alternating), pages uncompressed or zstd, and metadata. The
 * hybrid encoding of definition levels is also checked against bytes worked out by hand.
 * Here: every file is well formed as far as C can tell (magics, footer length, one page per
 * column and group in order). When CK_PARQUET_FUZZ_DIR names a directory, each file and a
 * JSON file of the values it must hold are left there for tests/checkpoint/test_state.py, which
 * reads them back with pyarrow, DuckDB and Polars. Seeded, so a failure repeats.
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

#include "base/parquet.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

#define FILES 60

/* A NULL pattern for one optional column of one group: valid[r] 0 where row r is NULL. */
static void null_pattern(uint8_t *valid, int rows) {
  int kind = (int)(next() % 5);
  int density = (int)(next() % 101), run = 1 + (int)(next() % 40);
  for (int r = 0; r < rows; r++) {
    switch (kind) {
      case 0: valid[r] = 1; break;                                     /* none */
      case 1: valid[r] = 0; break;                                     /* all */
      case 2: valid[r] = (int)(next() % 100) >= density; break;        /* scattered */
      case 3: valid[r] = (r / run) % 2 == 0; break;                    /* runs */
      default: valid[r] = r % 2 == 1; break;                           /* alternating */
    }
  }
}

static void json_bytes(ck_buf_t *j, const char *p, size_t n) { /* as an array of bytes */
  ck_buf_putc(j, '[');
  for (size_t i = 0; i < n; i++) ck_buf_printf(j, "%s%u", i ? "," : "", (unsigned char)p[i]);
  ck_buf_putc(j, ']');
}

static void test_random_schemas(void **state) {
  (void)state;
  const char *dir = getenv("CK_PARQUET_FUZZ_DIR");
  for (int f = 0; f < FILES; f++) {
    int nf = 1 + (int)(next() % 12);
    ck_arrow_field_t fields[12];
    char names[12][16];
    bool optional[12];
    for (int c = 0; c < nf; c++) {
      snprintf(names[c], sizeof names[c], "c%d_%u", c, (unsigned)(next() % 1000));
      fields[c] = (ck_arrow_field_t){names[c], (ck_arrow_type_t)(next() % 6)};
      optional[c] = next() % 2;
    }
    bool zstd = next() % 2;
    ck_buf_t out, json;
    ck_buf_init(&out);
    ck_buf_init(&json);
    ck_parquet_writer_t w;
    ck_parquet_begin(&w, &out, fields, nf);
    if (zstd) ck_parquet_set_codec(&w, CK_PARQUET_ZSTD);
    for (int c = 0; c < nf; c++) {
      ck_parquet_col_t col = {.optional = optional[c]};
      ck_parquet_set_column(&w, c, &col);
    }
    ck_buf_printf(&json, "{\"codec\":\"%s\",\"columns\":[", zstd ? "ZSTD" : "UNCOMPRESSED");
    for (int c = 0; c < nf; c++)
      ck_buf_printf(&json, "%s[\"%s\",%d,%s]", c ? "," : "", names[c], (int)fields[c].type,
                    optional[c] ? "true" : "false");
    ck_buf_puts(&json, "],\"rows\":[");
    static uint8_t valid_rows[12][3000];
    const uint8_t *valid[12];
    int groups = (int)(next() % 4), nrows = 0;
    ck_arrow_batch_t b;
    ck_arrow_batch_init(&b, fields, nf);
    for (int g = 0; g < groups; g++) {
      int rows = (int)(next() % 3001);
      for (int c = 0; c < nf; c++) {
        valid[c] = optional[c] ? valid_rows[c] : NULL;
        if (optional[c]) null_pattern(valid_rows[c], rows);
      }
      for (int r = 0; r < rows; r++, nrows++) {
        ck_buf_puts(&json, nrows ? ",[" : "[");
        for (int c = 0; c < nf; c++) {
          uint64_t v = next();
          if (c) ck_buf_putc(&json, ',');
          bool null = valid[c] && !valid[c][r];
          if (null) { /* a placeholder value in the batch, null in what it must read */
            ck_buf_puts(&json, "null");
            v = 0x5555555555555555ull;
          }
          ck_buf_t *j = null ? NULL : &json;
          switch (fields[c].type) {
            case CK_ARROW_UINT16:
              ck_arrow_put_u16(&b, c, (uint16_t)v);
              if (j) ck_buf_printf(j, "%u", (unsigned)(uint16_t)v);
              break;
            case CK_ARROW_UINT32:
              ck_arrow_put_u32(&b, c, (uint32_t)v);
              if (j) ck_buf_printf(j, "%u", (uint32_t)v);
              break;
            case CK_ARROW_INT64: {
              int64_t x = v % 7 == 0 ? INT64_MIN : v % 7 == 1 ? INT64_MAX : (int64_t)v;
              ck_arrow_put_i64(&b, c, x);
              if (j) ck_buf_printf(j, "%lld", (long long)x);
              break;
            }
            case CK_ARROW_FLOAT64: {
              double x = (double)(int64_t)v / 1e6;
              ck_arrow_put_f64(&b, c, x);
              if (j) ck_buf_printf(j, "%.17g", x);
              break;
            }
            default: {
              char s[300];
              size_t n = v % 5 == 0 ? 0 : (size_t)(v % 290);
              for (size_t i = 0; i < n; i++)
                s[i] = fields[c].type == CK_ARROW_UTF8 ? (char)('a' + next() % 26)
                                                       : (char)(next() & 0xFF);
              ck_arrow_put_bytes(&b, c, s, n);
              if (j) json_bytes(j, s, n);
              break;
            }
          }
        }
        ck_buf_putc(&json, ']');
        ck_arrow_batch_row(&b);
      }
      ck_parquet_write_group_nulls(&w, &b, valid);
      ck_arrow_batch_reset(&b);
    }
    ck_arrow_batch_fini(&b);
    ck_buf_printf(&json, "],\"groups\":%d}", groups);
    ck_arrow_kv_t meta[] = {{"fuzz.file", names[0]}, {"empty", ""}};
    int groups_written = w.ngroups;
    ck_parquet_finish(&w, meta, 1 + f % 2);
    /* well formed: magics, and a footer length that lands inside the file */
    assert_memory_equal(out.data, "PAR1", 4);
    assert_memory_equal(out.data + out.len - 4, "PAR1", 4);
    uint32_t flen;
    memcpy(&flen, out.data + out.len - 8, 4);
    assert_true(flen > 0 && flen <= out.len - 12);
    assert_true(groups_written <= groups);
    if (dir) {
      char path[4096];
      snprintf(path, sizeof path, "%s/fuzz-%02d.parquet", dir, f);
      FILE *fp = fopen(path, "wb");
      assert_non_null(fp);
      fwrite(out.data, 1, out.len, fp);
      fclose(fp);
      snprintf(path, sizeof path, "%s/fuzz-%02d.json", dir, f);
      fp = fopen(path, "wb");
      assert_non_null(fp);
      fwrite(json.data, 1, json.len, fp);
      fclose(fp);
    }
    ck_buf_fini(&out);
    ck_buf_fini(&json);
  }
}

/* The hybrid encoding of definition levels, against bytes worked out from the format's
 * description (a run header is a ULEB128: count << 1 for an RLE run, groups << 1 | 1 for
 * bit-packed groups of 8, least significant bit first). */
static void expect_levels(const char *pattern, const uint8_t *want, size_t n) {
  uint8_t lv[256];
  size_t k = strlen(pattern);
  for (size_t i = 0; i < k; i++) lv[i] = pattern[i] == '1';
  ck_buf_t out;
  ck_buf_init(&out);
  ck_parquet_levels(lv, (int64_t)k, &out);
  assert_int_equal(out.len, n);
  assert_memory_equal(out.data, want, n);
  ck_buf_fini(&out);
}

static void test_definition_levels_hybrid_encoding(void **state) {
  (void)state;
  /* ten 1s: one RLE run, header 10 << 1 = 20, the value in one byte */
  expect_levels("1111111111", (const uint8_t[]){0x14, 0x01}, 2);
  /* 1 0 1 0 1: one bit-packed group (header 1 << 1 | 1), bits 0, 2, 4 set, padded */
  expect_levels("10101", (const uint8_t[]){0x03, 0x15}, 2);
  /* 8 zeros then 13 ones: RLE 8 x 0 (header 0x10), RLE 13 x 1 (header 0x1a) */
  expect_levels("000000001111111111111", (const uint8_t[]){0x10, 0x00, 0x1a, 0x01}, 4);
  /* two mixed groups, then a run of 8 ones that starts at a group boundary */
  expect_levels("1100000001010101" "11111111",
                (const uint8_t[]){0x05, 0x03, 0xaa, 0x10, 0x01}, 5);
  /* 200 zeros: the RLE count 200 << 1 = 400 needs a two-byte varint */
  char many[201];
  memset(many, '0', 200);
  many[200] = 0;
  expect_levels(many, (const uint8_t[]){0x90, 0x03, 0x00}, 3);
  expect_levels("", (const uint8_t[]){0}, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_random_schemas),
                                     cmocka_unit_test(test_definition_levels_hybrid_encoding)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
