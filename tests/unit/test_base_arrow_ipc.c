/*
 * DESIGN: unit tests for the hand-written Arrow IPC stream writer and reader
 * (src/base/arrow_ipc.c): a stream of every column type (a dictionary-encoded one with its
 * dictionary batch) with metadata and two batches (one empty) reads back value for value; a
 * dictionary index outside its dictionary is refused; the metadata value offsets point at the values; every
 * truncation and every single-byte change of a stream is refused or read without reading
 * outside it (ASan checks); a foreign type is refused naming the field. That pyarrow and
 * DuckDB read what the writer makes is tests/cli/test_state.py's part (CK_ARROW_TEST_OUT
 * names a file this test leaves for it).
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

#include "base/arrow_ipc.h"

static const ck_arrow_field_t FIELDS[] = {
    {"a_u16", CK_ARROW_UINT16}, {"b_u32", CK_ARROW_UINT32}, {"c_i64", CK_ARROW_INT64},
    {"d_f64", CK_ARROW_FLOAT64}, {"e_utf8", CK_ARROW_UTF8}, {"f_bin", CK_ARROW_BINARY},
    {"g_dict", CK_ARROW_DICT_UTF8},
};
#define NF 7
static const char *const DICT[] = {"<raw>", "win", "group"};

static void build(ck_buf_t *out, int rows, size_t *value_at) {
  ck_arrow_kv_t meta[] = {{"k1", "v-one"}, {"crc", "00000000"}};
  ck_arrow_write_schema(out, FIELDS, NF, meta, 2, value_at);
  ck_arrow_write_dictionary(out, 6, DICT, 3);
  ck_arrow_batch_t b;
  ck_arrow_batch_init(&b, FIELDS, NF);
  for (int i = 0; i < rows; i++) {
    char s[32];
    int n = snprintf(s, sizeof s, "row-%d", i);
    ck_arrow_put_u16(&b, 0, (uint16_t)(65535 - i));
    ck_arrow_put_u32(&b, 1, (uint32_t)i * 3u);
    ck_arrow_put_i64(&b, 2, -(int64_t)i * 1000000000000LL);
    ck_arrow_put_f64(&b, 3, i / 4.0);
    ck_arrow_put_bytes(&b, 4, s, (size_t)n);
    ck_arrow_put_bytes(&b, 5, s, (size_t)(i % 3)); /* empty values too */
    ck_arrow_put_dict(&b, 6, (uint8_t)(i * 7 % 3));
    ck_arrow_batch_row(&b);
  }
  ck_arrow_write_batch(out, &b);
  ck_arrow_batch_reset(&b);
  ck_arrow_write_batch(out, &b); /* an empty batch */
  ck_arrow_batch_fini(&b);
  ck_arrow_write_eos(out);
}

static void test_round_trip(void **state) {
  (void)state;
  ck_buf_t out;
  ck_buf_init(&out);
  size_t at[2];
  build(&out, 1000, at);
  assert_memory_equal(out.data + at[1], "00000000", 8);
  assert_memory_equal(out.data + at[0], "v-one", 5);
  const char *path = getenv("CK_ARROW_TEST_OUT");
  if (path) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(out.data, 1, out.len, f);
    fclose(f);
  }
  ck_arrow_reader_t r;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_arrow_reader_open(&r, out.data, out.len, &err), 0);
  assert_int_equal(r.nfields, NF);
  assert_string_equal(r.fields[4].name, "e_utf8");
  assert_int_equal(r.fields[3].type, CK_ARROW_FLOAT64);
  assert_string_equal(ck_arrow_reader_meta(&r, "k1"), "v-one");
  assert_int_equal(r.meta_value_at[1], at[1]);
  assert_null(ck_arrow_reader_meta(&r, "nope"));
  assert_int_equal(ck_arrow_reader_field(&r, "f_bin"), 5);
  assert_int_equal(ck_arrow_reader_next(&r, &err), 1);
  assert_int_equal(r.nrows, 1000);
  for (int i = 0; i < 1000; i++) {
    char s[32];
    int n = snprintf(s, sizeof s, "row-%d", i);
    assert_int_equal(ck_arrow_get_u16(&r, 0, i), 65535 - i);
    assert_int_equal(ck_arrow_get_u32(&r, 1, i), (uint32_t)i * 3u);
    assert_true(ck_arrow_get_i64(&r, 2, i) == -(int64_t)i * 1000000000000LL);
    assert_true(ck_arrow_get_f64(&r, 3, i) == i / 4.0);
    size_t len;
    const uint8_t *p = ck_arrow_get_bytes(&r, 4, i, &len);
    assert_int_equal(len, n);
    assert_memory_equal(p, s, len);
    ck_arrow_get_bytes(&r, 5, i, &len);
    assert_int_equal(len, i % 3);
    p = ck_arrow_get_dict(&r, 6, i, &len);
    assert_int_equal(len, strlen(DICT[i * 7 % 3]));
    assert_memory_equal(p, DICT[i * 7 % 3], len);
  }
  assert_int_equal(ck_arrow_reader_next(&r, &err), 1);
  assert_int_equal(r.nrows, 0);
  assert_int_equal(ck_arrow_reader_next(&r, &err), 0);
  assert_true(r.eos);
  ck_buf_fini(&out);
}

/* Reads a whole stream; the result does not matter, only that nothing outside it is read. */
static int read_all(const char *p, size_t n) {
  ck_arrow_reader_t r;
  ck_error_t err;
  ck_error_clear(&err);
  int rc = ck_arrow_reader_open(&r, p, n, &err);
  while (rc == 0 && (rc = ck_arrow_reader_next(&r, &err)) == 1) {
    for (int c = 0; c < r.nfields; c++)
      for (int64_t i = 0; i < r.nrows; i++) {
        size_t len;
        if (r.fields[c].type == CK_ARROW_UTF8 || r.fields[c].type == CK_ARROW_BINARY)
          (void)ck_arrow_get_bytes(&r, c, i, &len);
        if (r.fields[c].type == CK_ARROW_DICT_UTF8) (void)ck_arrow_get_dict(&r, c, i, &len);
      }
    rc = 0;
  }
  if (rc < 0) assert_non_null(strstr(err.message, "Arrow"));
  return rc;
}

static void test_damage_is_refused_not_overread(void **state) {
  (void)state;
  ck_buf_t out;
  ck_buf_init(&out);
  build(&out, 5, NULL);
  for (size_t n = 0; n < out.len; n++) { /* each truncation, in a block of its own size */
    char *copy = malloc(n ? n : 1);
    memcpy(copy, out.data, n);
    int rc = read_all(copy, n);
    if (n < 16) assert_true(rc < 0);
    free(copy);
  }
  char *copy = malloc(out.len);
  for (size_t i = 0; i < out.len; i++)
    for (int bit = 0; bit < 8; bit += 3) {
      memcpy(copy, out.data, out.len);
      copy[i] ^= (char)(1 << bit);
      (void)read_all(copy, out.len);
    }
  free(copy);
  ck_buf_fini(&out);
}

static void test_foreign_type_is_refused_by_name(void **state) {
  (void)state;
  ck_buf_t out;
  ck_buf_init(&out);
  ck_arrow_field_t f[] = {{"weird", CK_ARROW_UINT16}};
  ck_arrow_write_schema(&out, f, 1, NULL, 0, NULL);
  /* make the uint16 a uint8: bitWidth 16 -> 8 (the Int table is the last thing written
   * but the empty children vector, so its bitWidth is the last 0x10 0x00 0x00 0x00) */
  size_t last = 0;
  for (size_t i = 0; i + 4 <= out.len; i++)
    if (memcmp(out.data + i, "\x10\0\0\0", 4) == 0) last = i;
  assert_true(last > 0);
  out.data[last] = 8;
  ck_arrow_reader_t r;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_arrow_reader_open(&r, out.data, out.len, &err), CK_EUNSUPPORTED);
  assert_non_null(strstr(err.message, "'weird'"));
  ck_buf_fini(&out);
}

static void test_dictionary_index_outside_is_refused(void **state) {
  (void)state;
  ck_buf_t out;
  ck_buf_init(&out);
  ck_arrow_field_t f[] = {{"slot", CK_ARROW_DICT_UTF8}};
  ck_arrow_write_schema(&out, f, 1, NULL, 0, NULL);
  ck_arrow_write_dictionary(&out, 0, DICT, 3);
  ck_arrow_batch_t b;
  ck_arrow_batch_init(&b, f, 1);
  ck_arrow_put_dict(&b, 0, 2);
  ck_arrow_batch_row(&b);
  ck_arrow_put_dict(&b, 0, 3); /* one past the dictionary */
  ck_arrow_batch_row(&b);
  ck_arrow_write_batch(&out, &b);
  ck_arrow_batch_fini(&b);
  ck_arrow_write_eos(&out);
  ck_arrow_reader_t r;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_arrow_reader_open(&r, out.data, out.len, &err), 0);
  assert_int_equal(r.fields[0].type, CK_ARROW_DICT_UTF8);
  assert_true(ck_arrow_reader_next(&r, &err) < 0);
  assert_non_null(strstr(err.message, "dictionary index"));
  ck_buf_fini(&out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dictionary_index_outside_is_refused),
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_damage_is_refused_not_overread),
      cmocka_unit_test(test_foreign_type_is_refused_by_name),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
