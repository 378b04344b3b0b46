/*
 * DESIGN: the hand-written Avro writer (src/base/avro.c) against bytes from the Avro
 * specification's own examples (zigzag longs, a string, a union's branch) and worked out from
 * its description of the object container (magic, metadata map, sync marker, block framing).
 * When CK_AVRO_OUT_DIR names a directory, container files with random records (null and
 * deflate codec, several blocks) and a JSON file of the records each must hold are left there
 * for tests/checkpoint/test_state_export.py, which reads them with fastavro.
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
#include <zlib.h>

#include "base/avro.h"

static void expect(const ck_buf_t *b, const uint8_t *want, size_t n) {
  assert_int_equal(b->len, n);
  assert_memory_equal(b->data, want, n);
}

static void test_zigzag_longs(void **state) {
  (void)state;
  /* the specification's table: 0 → 00, -1 → 01, 1 → 02, -2 → 03, 2 → 04, -64 → 7f,
   * 64 → 80 01 */
  const struct {
    int64_t v;
    uint8_t bytes[10];
    size_t n;
  } cases[] = {
      {0, {0x00}, 1},         {-1, {0x01}, 1},        {1, {0x02}, 1},
      {-2, {0x03}, 1},        {2, {0x04}, 1},         {-64, {0x7f}, 1},
      {64, {0x80, 0x01}, 2},  {-65, {0x81, 0x01}, 2}, {8191, {0xfe, 0x7f}, 2},
      {INT64_MAX, {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10},
      {INT64_MIN, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ck_buf_t b;
    ck_buf_init(&b);
    ck_avro_put_long(&b, cases[i].v);
    expect(&b, cases[i].bytes, cases[i].n);
    ck_buf_fini(&b);
  }
}

static void test_strings_bytes_unions_primitives(void **state) {
  (void)state;
  ck_buf_t b;
  ck_buf_init(&b);
  ck_avro_put_string(&b, "foo"); /* the specification's example: 06 66 6f 6f */
  expect(&b, (const uint8_t[]){0x06, 'f', 'o', 'o'}, 4);
  ck_buf_reset(&b);
  ck_avro_put_bytes(&b, "", 0); /* empty: the length 0 alone */
  expect(&b, (const uint8_t[]){0x00}, 1);
  ck_buf_reset(&b);
  /* ["null","string"]: null is the branch 0 alone; "a" is branch 1 (02), then 02 61 */
  ck_avro_put_union(&b, 0);
  ck_avro_put_union(&b, 1);
  ck_avro_put_string(&b, "a");
  expect(&b, (const uint8_t[]){0x00, 0x02, 0x02, 'a'}, 4);
  ck_buf_reset(&b);
  ck_avro_put_bool(&b, 1);
  ck_avro_put_bool(&b, 0);
  ck_avro_put_double(&b, 1.0); /* IEEE 754 little endian: 00 … f0 3f */
  expect(&b, (const uint8_t[]){0x01, 0x00, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, 10);
  ck_buf_fini(&b);
}

static const uint8_t SYNC[CK_AVRO_SYNC] = {0xde, 0xad, 0xbe, 0xef, 1, 2,  3,  4,
                                           5,    6,    7,    8,    9, 10, 11, 12};

static void test_container_framing(void **state) {
  (void)state;
  ck_buf_t out;
  ck_buf_init(&out);
  ck_avro_writer_t w;
  ck_arrow_kv_t meta[] = {{"k", "v"}};
  ck_avro_begin(&w, &out, "\"long\"", CK_AVRO_NULL, meta, 1, SYNC);
  ck_avro_put_long(ck_avro_record(&w), 1);
  ck_avro_put_long(ck_avro_record(&w), -1);
  assert_int_equal(ck_avro_flush(&w, NULL), 0);
  assert_int_equal(ck_avro_flush(&w, NULL), 0); /* no records: no block */
  ck_avro_put_long(ck_avro_record(&w), 64);
  assert_int_equal(ck_avro_finish(&w, NULL), 0);
  ck_buf_t want;
  ck_buf_init(&want);
  ck_buf_append(&want, "Obj\x01", 4);
  /* the metadata: a map block of 3 entries (long 3 = 06), keys and values as strings, 0 */
  ck_buf_append(&want, "\x06", 1);
  ck_buf_append(&want, "\x16" "avro.schema" "\x0c" "\"long\"", 1 + 11 + 1 + 6);
  ck_buf_append(&want, "\x14" "avro.codec" "\x08" "null", 1 + 10 + 1 + 4);
  ck_buf_append(&want, "\x02" "k" "\x02" "v", 4);
  ck_buf_append(&want, "\x00", 1);
  ck_buf_append(&want, SYNC, 16);
  /* block 1: 2 records (04), 2 bytes (04), 02 01, the sync; block 2: 1 record, 2 bytes */
  ck_buf_append(&want, "\x04\x04\x02\x01", 4);
  ck_buf_append(&want, SYNC, 16);
  ck_buf_append(&want, "\x02\x04\x80\x01", 4);
  ck_buf_append(&want, SYNC, 16);
  expect(&out, (const uint8_t *)want.data, want.len);
  ck_buf_fini(&want);
  ck_buf_fini(&out);
}

static void test_deflate_block_is_raw_deflate(void **state) {
  (void)state;
  ck_buf_t out;
  ck_buf_init(&out);
  ck_avro_writer_t w;
  ck_avro_begin(&w, &out, "\"string\"", CK_AVRO_DEFLATE, NULL, 0, SYNC);
  for (int i = 0; i < 100; i++) ck_avro_put_string(ck_avro_record(&w), "hello, hello, hello");
  assert_int_equal(ck_avro_finish(&w, NULL), 0);
  /* after the header (ending with the sync): count 100 (c8 01), the size, the bytes, sync */
  const uint8_t *p = (const uint8_t *)out.data;
  size_t at = 0;
  for (size_t i = 0; i + 16 <= out.len; i++)
    if (memcmp(p + i, SYNC, 16) == 0) {
      at = i + 16;
      break;
    }
  assert_true(at > 0);
  assert_int_equal(p[at], 0xc8);
  assert_int_equal(p[at + 1], 0x01);
  size_t size = 0, shift = 0, q = at + 2;
  do {
    size |= (size_t)(p[q] & 0x7f) << shift;
    shift += 7;
  } while (p[q++] & 0x80);
  size >>= 1; /* zigzag of a positive long */
  assert_int_equal(q + size + 16, out.len);
  assert_memory_equal(p + q + size, SYNC, 16);
  /* zlib inflates it raw (window bits -15) into the 100 encoded strings */
  uint8_t plain[4096];
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  assert_int_equal(inflateInit2(&zs, -15), Z_OK);
  zs.next_in = (Bytef *)(p + q);
  zs.avail_in = (uInt)size;
  zs.next_out = plain;
  zs.avail_out = sizeof plain;
  assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
  assert_int_equal(zs.total_out, 100 * 20);
  inflateEnd(&zs);
  assert_int_equal(plain[0], 0x26); /* 19 bytes: long 19 = 0x26 */
  assert_memory_equal(plain + 1, "hello, hello, hello", 19);
  ck_buf_fini(&out);
}

/* Files for fastavro: a record of every kind the Iceberg writer uses. */
static uint64_t rng = 0x243F6A8885A308D3ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static const char SCHEMA[] =
    "{\"type\":\"record\",\"name\":\"r\",\"fields\":["
    "{\"name\":\"i\",\"type\":\"int\"},{\"name\":\"l\",\"type\":\"long\"},"
    "{\"name\":\"s\",\"type\":\"string\"},{\"name\":\"b\",\"type\":\"bytes\"},"
    "{\"name\":\"u\",\"type\":[\"null\",\"long\"]},{\"name\":\"t\",\"type\":\"boolean\"},"
    "{\"name\":\"d\",\"type\":\"double\"},"
    "{\"name\":\"e\",\"type\":{\"type\":\"record\",\"name\":\"empty\",\"fields\":[]}}]}";

static void test_files_for_fastavro(void **state) {
  (void)state;
  const char *dir = getenv("CK_AVRO_OUT_DIR");
  for (int f = 0; f < 8; f++) {
    ck_buf_t out, json;
    ck_buf_init(&out);
    ck_buf_init(&json);
    ck_avro_writer_t w;
    ck_arrow_kv_t meta[] = {{"file", "x"}};
    uint8_t sync[16];
    for (int i = 0; i < 16; i++) sync[i] = (uint8_t)next();
    ck_avro_begin(&w, &out, SCHEMA, f % 2 ? CK_AVRO_DEFLATE : CK_AVRO_NULL, meta, 1, sync);
    int n = (int)(next() % 500);
    ck_buf_puts(&json, "[");
    for (int r = 0; r < n; r++) {
      ck_buf_t *b = ck_avro_record(&w);
      int32_t i = (int32_t)next();
      int64_t l = r % 9 == 0 ? INT64_MIN : r % 9 == 1 ? INT64_MAX : (int64_t)next();
      char s[200];
      size_t sn = next() % 200;
      for (size_t k = 0; k < sn; k++) s[k] = (char)('a' + next() % 26);
      s[sn] = 0;
      bool has = next() % 3;
      int64_t u = (int64_t)next() >> (next() % 60);
      bool t = next() % 2;
      double d = (double)(int64_t)next() / 1024.0;
      ck_avro_put_long(b, i);
      ck_avro_put_long(b, l);
      ck_avro_put_string(b, s);
      ck_avro_put_bytes(b, s, sn / 2);
      ck_avro_put_union(b, has);
      if (has) ck_avro_put_long(b, u);
      ck_avro_put_bool(b, t);
      ck_avro_put_double(b, d);
      ck_buf_printf(&json, "%s{\"i\":%d,\"l\":%lld,\"s\":\"%s\",\"b\":\"%.*s\",\"u\":", r ? "," : "",
                    i, (long long)l, s, (int)(sn / 2), s);
      if (has) ck_buf_printf(&json, "%lld", (long long)u);
      else ck_buf_puts(&json, "null");
      ck_buf_printf(&json, ",\"t\":%s,\"d\":%.17g,\"e\":{}}", t ? "true" : "false", d);
      if (next() % 50 == 0) assert_int_equal(ck_avro_flush(&w, NULL), 0); /* more blocks */
    }
    ck_buf_puts(&json, "]");
    assert_int_equal(ck_avro_finish(&w, NULL), 0);
    assert_memory_equal(out.data, "Obj\x01", 4);
    if (dir) {
      char path[4096];
      snprintf(path, sizeof path, "%s/avro-%d.avro", dir, f);
      FILE *fp = fopen(path, "wb");
      assert_non_null(fp);
      fwrite(out.data, 1, out.len, fp);
      fclose(fp);
      snprintf(path, sizeof path, "%s/avro-%d.json", dir, f);
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
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_zigzag_longs),
      cmocka_unit_test(test_strings_bytes_unions_primitives),
      cmocka_unit_test(test_container_framing),
      cmocka_unit_test(test_deflate_block_is_raw_deflate),
      cmocka_unit_test(test_files_for_fastavro),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
