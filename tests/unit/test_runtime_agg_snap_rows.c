/*
 * DESIGN: unit tests for the aggregation's rows in a snapshot file (format 3.0: a record's row
 * leaves out its key group and key, which the key_group and user_key columns hold, and
 * ck_agg_snap_joiner puts it back together). Aggregation encodings are built here byte by byte
 * (agg_snap.c's layout, version 2, as docs/state.md gives it) for key types of every kind —
 * one integer (the writer's fast path), a string with quotes, backslashes, control and high
 * bytes beside a NULL integer, booleans, decimals, floats, no key at all — then encoded with
 * ck_snap_encode and restored with ck_snap_decode and ck_snap_decode_in_place: the restored
 * encoding must be the original, byte for byte; and random keys (integers at every magnitude
 * and both extremes, strings of quotes, escapes and UTF-8, decimals, NULLs, several columns)
 * over several record batches, through the writer's and the joiner's fast paths for one
 * integer key and their general paths. Rows are counted with the Arrow reader: split
 * shapes have a row per record; a float key that is NaN keeps the encoding whole (one row).
 * Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "base/arrow_ipc.h"
#include "checkpoint/store.h"
#include "runtime/graph.h"
#include "runtime/op.h"
#include "runtime/types.h"

static void put(ck_buf_t *b, const void *p, size_t n) { ck_buf_append(b, p, n); }
static void u8(ck_buf_t *b, uint8_t v) { put(b, &v, 1); }
static void u16(ck_buf_t *b, uint16_t v) { put(b, &v, 2); }
static void u32(ck_buf_t *b, uint32_t v) { put(b, &v, 4); }
static void i64(ck_buf_t *b, int64_t v) { put(b, &v, 8); }
static void type(ck_buf_t *b, int id, int prec, int scale) {
  u8(b, (uint8_t)id), u8(b, (uint8_t)prec), u8(b, (uint8_t)scale);
}

/* The header: window kind, key types (id, precision, scale triples), COUNT(*), n records. */
static void header(ck_buf_t *b, int wkind, const int *keys, int nkeys, uint64_t n) {
  put(b, "CKAG", 4);
  u16(b, 2);
  u8(b, (uint8_t)wkind);
  i64(b, wkind ? 1000 : 0), i64(b, 0), i64(b, 0), i64(b, 0);
  u16(b, (uint16_t)nkeys);
  for (int k = 0; k < nkeys; k++) type(b, keys[3 * k], keys[3 * k + 1], keys[3 * k + 2]);
  u16(b, 1);
  u8(b, 0), u8(b, 0); /* COUNT(*) */
  type(b, CK_T_INT64, 0, 0), type(b, CK_T_INT64, 0, 0);
  u32(b, 128);
  i64(b, 5000);
  put(b, &n, 8);
}

/* A record's head (key group, window when windowed) and tail (count, emitted when not). */
static void rec_head(ck_buf_t *b, int wkind, uint32_t kg, int64_t start) {
  u32(b, kg);
  if (wkind) i64(b, start), i64(b, start + 1000);
}
static void rec_tail(ck_buf_t *b, int wkind, int64_t count) {
  i64(b, count);
  if (wkind) return;
  u8(b, count % 2); /* emitted or not */
  if (count % 2) u8(b, 0), i64(b, count - 1);
}

/* Encodes data as one section, counts its rows, restores it both ways: the same bytes. */
static int64_t round_trip(const ck_buf_t *data) {
  ck_snap_section_t sec = {.node = 3, .kind = CK_SNAP_OP, .data = data->data, .len = data->len,
                           .name = "window_agg", .split = ck_agg_snap_split};
  ck_buf_t file;
  ck_buf_init(&file);
  ck_snap_encode(9, 0x77, 1, &sec, 1, &file);
  ck_arrow_reader_t r;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_arrow_reader_open(&r, file.data, file.len, &err), 0);
  int64_t rows = 0;
  int rc;
  while ((rc = ck_arrow_reader_next(&r, &err)) == 1) rows += r.nrows;
  assert_int_equal(rc, 0);
  for (int in_place = 0; in_place < 2; in_place++) {
    ck_buf_t copy, scratch;
    ck_buf_init(&copy);
    ck_buf_init(&scratch);
    ck_buf_append(&copy, file.data, file.len);
    ck_snap_section_t out[2];
    int n = 0;
    rc = in_place ? ck_snap_decode_in_place(copy.data, copy.len, 9, 0x77, 1, &ck_agg_snap_joiner,
                                            out, 2, &n, &scratch, &err)
                  : ck_snap_decode(copy.data, copy.len, 9, 0x77, 1, &ck_agg_snap_joiner, out, 2,
                                   &n, &scratch, &err);
    if (rc) fail_msg("decode: %s", err.message);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].node, 3);
    assert_int_equal(out[0].len, data->len);
    assert_memory_equal(out[0].data, data->data, data->len);
    ck_buf_fini(&copy);
    ck_buf_fini(&scratch);
  }
  ck_buf_fini(&file);
  return rows;
}

static void test_one_integer_key_windowed(void **state) {
  (void)state;
  const int keys[] = {CK_T_INT64, 0, 0};
  ck_buf_t b;
  ck_buf_init(&b);
  int64_t vals[] = {0, 1, -1, 42, INT64_MAX, INT64_MIN, 1234567890123LL};
  int n = (int)(sizeof vals / sizeof vals[0]);
  header(&b, CK_WIN_TUMBLE, keys, 1, (uint64_t)n + 1);
  for (int i = 0; i < n; i++) {
    rec_head(&b, CK_WIN_TUMBLE, (uint32_t)i, 1000 * i);
    u8(&b, 0), i64(&b, vals[i]);
    rec_tail(&b, CK_WIN_TUMBLE, i + 1);
  }
  rec_head(&b, CK_WIN_TUMBLE, 127, 0); /* a NULL key */
  u8(&b, 1);
  rec_tail(&b, CK_WIN_TUMBLE, 3);
  assert_int_equal(round_trip(&b), n + 2);
  ck_buf_fini(&b);
}

static void test_string_and_null_keys_unwindowed(void **state) {
  (void)state;
  const int keys[] = {CK_T_STRING, 0, 0, CK_T_INT64, 0, 0, CK_T_BOOL, 0, 0};
  const char *strs[] = {"sensor-01", "", "a\"b\\c", "tab\there\nnl\x01\x1f", "\xc3\xa9\xff\x80",
                        "/slash/"};
  int n = (int)(sizeof strs / sizeof strs[0]);
  ck_buf_t b;
  ck_buf_init(&b);
  header(&b, CK_WIN_NONE, keys, 3, (uint64_t)n);
  for (int i = 0; i < n; i++) {
    rec_head(&b, CK_WIN_NONE, (uint32_t)(i * 11 % 128), 0);
    uint32_t len = (uint32_t)strlen(strs[i]);
    u8(&b, 0), u32(&b, len), put(&b, strs[i], len);
    if (i % 2) u8(&b, 1); /* NULL */
    else u8(&b, 0), i64(&b, -i);
    u8(&b, 0), u8(&b, (uint8_t)(i % 2));
    rec_tail(&b, CK_WIN_NONE, i + 1);
  }
  assert_int_equal(round_trip(&b), n + 1);
  ck_buf_fini(&b);
}

static void test_decimal_float_and_no_keys(void **state) {
  (void)state;
  const int keys[] = {CK_T_DECIMAL, 12, 2, CK_T_FLOAT64, 0, 0};
  ck_buf_t b;
  ck_buf_init(&b);
  ck_i128 decs[] = {0, 5, -123456, (ck_i128)999999999999LL};
  double fl[] = {0.0, -2.5, 1e300, 0.1};
  header(&b, CK_WIN_TUMBLE, keys, 2, 4);
  for (int i = 0; i < 4; i++) {
    rec_head(&b, CK_WIN_TUMBLE, (uint32_t)i, 0);
    u8(&b, 0), put(&b, &decs[i], 16);
    u8(&b, 0), put(&b, &fl[i], 8);
    rec_tail(&b, CK_WIN_TUMBLE, 2);
  }
  assert_int_equal(round_trip(&b), 5);
  ck_buf_fini(&b);
  ck_buf_init(&b); /* no key: GROUP BY a window only */
  header(&b, CK_WIN_TUMBLE, NULL, 0, 2);
  for (int i = 0; i < 2; i++) rec_head(&b, CK_WIN_TUMBLE, 0, 1000 * i), rec_tail(&b, 1, 9);
  assert_int_equal(round_trip(&b), 3);
  ck_buf_fini(&b);
}

static void test_a_nan_key_keeps_the_encoding_whole(void **state) {
  (void)state;
  const int keys[] = {CK_T_FLOAT64, 0, 0};
  ck_buf_t b;
  ck_buf_init(&b);
  double vals[] = {1.5, 0.0 / 0.0};
  header(&b, CK_WIN_TUMBLE, keys, 1, 2);
  for (int i = 0; i < 2; i++) {
    rec_head(&b, CK_WIN_TUMBLE, 1, 0);
    u8(&b, 0), put(&b, &vals[i], 8);
    rec_tail(&b, CK_WIN_TUMBLE, 1);
  }
  assert_int_equal(round_trip(&b), 1);
  ck_buf_fini(&b);
}

/* A deterministic generator (xorshift64), so a failure repeats. */
static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}

/* Integers where printing and parsing go wrong: 0, ±1, each power of ten and its neighbours,
 * the extremes, and any 64-bit value at any magnitude. */
static int64_t rnd_int(uint64_t *s) {
  uint64_t r = rnd(s);
  switch (r % 4) {
    case 0: {
      const int64_t edge[] = {0, 1, -1, 9, 10, 99, 100, INT64_MAX, INT64_MIN, INT64_MAX - 1,
                              INT64_MIN + 1};
      return edge[rnd(s) % (sizeof edge / sizeof edge[0])];
    }
    case 1: {
      int64_t p = 1;
      for (int k = (int)(rnd(s) % 19); k > 0; k--) p *= 10;
      int64_t v = p + (int64_t)(rnd(s) % 3) - 1;
      return rnd(s) % 2 ? -v : v;
    }
    default: return (int64_t)(rnd(s) >> (rnd(s) % 64)) * (rnd(s) % 2 ? -1 : 1);
  }
}

/* Random records of the key types keys (ids only: INT64, STRING, DECIMAL(18, 3)) with NULLs
 * one key in eight, restored byte for byte, a row per record. */
static void random_round_trip(int wkind, const int *ids, int nkeys, int n, uint64_t seed) {
  int keys[3 * 8];
  for (int k = 0; k < nkeys; k++) {
    keys[3 * k] = ids[k];
    keys[3 * k + 1] = ids[k] == CK_T_DECIMAL ? 18 : 0;
    keys[3 * k + 2] = ids[k] == CK_T_DECIMAL ? 3 : 0;
  }
  static const char alphabet[] = "ab\"\\/\n\t\x01\x1f \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xff{}[],:0";
  ck_buf_t b;
  ck_buf_init(&b);
  header(&b, wkind, keys, nkeys, (uint64_t)n);
  uint64_t s = seed;
  for (int i = 0; i < n; i++) {
    rec_head(&b, wkind, (uint32_t)(rnd(&s) % 128), (int64_t)(rnd(&s) % 100) * 1000);
    for (int k = 0; k < nkeys; k++) {
      if (rnd(&s) % 8 == 0) {
        u8(&b, 1); /* NULL */
        continue;
      }
      u8(&b, 0);
      if (ids[k] == CK_T_INT64) {
        i64(&b, rnd_int(&s));
      } else if (ids[k] == CK_T_DECIMAL) { /* within DECIMAL(18, 3) */
        ck_i128 v = (ck_i128)(rnd(&s) % 1000000000000000000ull) * (rnd(&s) % 2 ? -1 : 1);
        put(&b, &v, 16);
      } else {
        char str[40];
        uint32_t len = (uint32_t)(rnd(&s) % sizeof str);
        for (uint32_t c = 0; c < len; c++) str[c] = alphabet[rnd(&s) % (sizeof alphabet - 1)];
        u32(&b, len), put(&b, str, len);
      }
    }
    rec_tail(&b, wkind, (int64_t)(rnd(&s) % 1000));
  }
  assert_int_equal(round_trip(&b), n + 1);
  ck_buf_fini(&b);
}

static void test_random_keys_round_trip(void **state) {
  (void)state;
  const int one[] = {CK_T_INT64};
  const int two[] = {CK_T_INT64, CK_T_INT64};
  const int mixed[] = {CK_T_STRING, CK_T_DECIMAL, CK_T_INT64};
  /* one integer key, windowed: the writer's and the joiner's fast paths, over several record
   * batches (about 1 MiB each), so the in-place restore moves output across batches */
  random_round_trip(CK_WIN_TUMBLE, one, 1, 60000, 1);
  random_round_trip(CK_WIN_NONE, one, 1, 20000, 2); /* the joiner's fast path, unwindowed */
  random_round_trip(CK_WIN_TUMBLE, two, 2, 20000, 3);
  random_round_trip(CK_WIN_TUMBLE, mixed, 3, 20000, 4);
  random_round_trip(CK_WIN_NONE, mixed, 3, 20000, 5);
}

/* Every row of a file: its key group, user_key and value, "kg|key|hex(value)\n" in order. */
static void rows_text(const ck_buf_t *file, ck_buf_t *out) {
  ck_arrow_reader_t r;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_arrow_reader_open(&r, file->data, file->len, &err), 0);
  int rc;
  while ((rc = ck_arrow_reader_next(&r, &err)) == 1)
    for (int64_t i = 0; i < r.nrows; i++) {
      size_t kn, vn;
      const uint8_t *k = ck_arrow_get_bytes(&r, 3, i, &kn), *v = ck_arrow_get_bytes(&r, 4, i, &vn);
      ck_buf_printf(out, "%u|%.*s|", (unsigned)ck_arrow_get_u16(&r, 1, i), (int)kn,
                    (const char *)k);
      for (size_t j = 0; j < vn; j++) ck_buf_printf(out, "%02x", v[j]);
      ck_buf_putc(out, '\n');
    }
  assert_int_equal(rc, 0);
}

/* The writer takes the common shape's records in runs (ck_snap_run_t): the rows are those of
 * a record at a time all the same — runs cut at 1024 records and by NULL keys (first, at the
 * cut, just after it, last) — each row its record's key group, key and the rest. */
static void test_runs_give_a_row_per_record(void **state) {
  (void)state;
  const int keys[] = {CK_T_INT64, 0, 0};
  enum { N = 2500 };
  ck_buf_t b, want;
  ck_buf_init(&b);
  ck_buf_init(&want);
  header(&b, CK_WIN_TUMBLE, keys, 1, N);
  ck_buf_printf(&want, "65535||");
  for (size_t j = 0; j < b.len; j++) ck_buf_printf(&want, "%02x", (uint8_t)b.data[j]);
  ck_buf_putc(&want, '\n');
  for (int i = 0; i < N; i++) {
    bool null = i == 0 || i == 1023 || i == 1024 || i == 2047 || i == N - 1;
    int64_t key = (int64_t)i * 7919 - 5000000;
    uint32_t kg = (uint32_t)(i % 128);
    size_t at = b.len;
    rec_head(&b, CK_WIN_TUMBLE, kg, 1000 * (i % 3));
    if (null) u8(&b, 1);
    else u8(&b, 0), i64(&b, key);
    rec_tail(&b, CK_WIN_TUMBLE, i + 1);
    const uint8_t *rec = (const uint8_t *)b.data + at;
    size_t kto = null ? 21 : 29;
    ck_buf_printf(&want, "%u|", kg);
    if (null) ck_buf_puts(&want, "null|");
    else ck_buf_printf(&want, "%lld|", (long long)key);
    for (size_t j = 4; j < 20; j++) ck_buf_printf(&want, "%02x", rec[j]);
    for (size_t j = kto; j < b.len - at; j++) ck_buf_printf(&want, "%02x", rec[j]);
    ck_buf_putc(&want, '\n');
  }
  assert_int_equal(round_trip(&b), N + 1);
  ck_snap_section_t sec = {.node = 3, .kind = CK_SNAP_OP, .data = b.data, .len = b.len,
                           .name = "window_agg", .split = ck_agg_snap_split};
  ck_buf_t file, got;
  ck_buf_init(&file);
  ck_buf_init(&got);
  ck_snap_encode(9, 0x77, 1, &sec, 1, &file);
  rows_text(&file, &got);
  assert_string_equal(got.data, want.data);
  ck_buf_fini(&file);
  ck_buf_fini(&got);
  ck_buf_fini(&want);
  ck_buf_fini(&b);
}

/* A splitter of a made-up encoding: "H" then records of 7 bytes (u32 key group, one key byte,
 * two value bytes), given to the writer as one run. */
static int run_split(const void *data, size_t len, bool decode, ck_snap_emit_fn emit, void *ctx,
                     ck_error_t *err) {
  (void)decode;
  if (!emit) return 1;
  ck_snap_entry_t head = {CK_SNAP_RAW, "<raw>", "", 0, data, 1, NULL, 0, 0, 0, 0, NULL};
  int rc = emit(ctx, &head, err);
  if (rc) return rc;
  static const uint32_t koff[] = {0, 1, 4, 7};
  ck_snap_run_t run = {3, 7, "7\"x\"100", koff};
  ck_snap_entry_t e = {5, "group", NULL, 0, (const uint8_t *)data + 1, len - 1, NULL, 0, 4, 4, 5,
                       &run};
  rc = emit(ctx, &e, err);
  return rc ? rc : 1;
}

static void test_the_writer_takes_a_run_of_records(void **state) {
  (void)state;
  ck_buf_t b, file, got;
  ck_buf_init(&b);
  ck_buf_init(&file);
  ck_buf_init(&got);
  put(&b, "H", 1);
  for (uint32_t i = 0; i < 3; i++) {
    u32(&b, 5 + i);
    u8(&b, 0xEE);
    u8(&b, (uint8_t)(0xA0 + i)), u8(&b, (uint8_t)(0xB0 + i));
  }
  ck_snap_section_t sec = {.node = 4, .kind = CK_SNAP_OP, .data = b.data, .len = b.len,
                           .name = "made_up", .split = run_split};
  ck_snap_encode(9, 0x77, 1, &sec, 1, &file);
  rows_text(&file, &got);
  assert_string_equal(got.data, "65535||48\n5|7|a0b0\n6|\"x\"|a1b1\n7|100|a2b2\n");
  ck_buf_fini(&b);
  ck_buf_fini(&file);
  ck_buf_fini(&got);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_integer_key_windowed),
      cmocka_unit_test(test_string_and_null_keys_unwindowed),
      cmocka_unit_test(test_decimal_float_and_no_keys),
      cmocka_unit_test(test_a_nan_key_keeps_the_encoding_whole),
      cmocka_unit_test(test_random_keys_round_trip),
      cmocka_unit_test(test_runs_give_a_row_per_record),
      cmocka_unit_test(test_the_writer_takes_a_run_of_records),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
