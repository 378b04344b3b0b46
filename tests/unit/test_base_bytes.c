/*
 * DESIGN: unit tests for src/base/bytes.h — the one set of fixed-width and varint readers and
 * writers. Oracles are written out byte by byte here (the LEB128 and zigzag examples of the
 * Kafka and protobuf documentation), not computed with the functions under test: every width
 * and byte order stores the expected bytes and loads them back; varints round-trip at every
 * length boundary (0, 127/128, 2^14 - 1/2^14, ..., 2^63, UINT64_MAX) with the expected length;
 * zigzag maps 0, -1, 1, -2 ... INT64_MIN as documented; truncated and over-long input is
 * refused without moving the cursor, and the bounds-checked cursor's failure is sticky.
 * Threads: the main thread.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "base/buf.h"
#include "base/bytes.h"

static void test_fixed_width_byte_order(void **state) {
  (void)state;
  uint8_t b[8];
  ck_put_le16(b, 0x0102);
  assert_memory_equal(b, "\x02\x01", 2);
  ck_put_be16(b, 0x0102);
  assert_memory_equal(b, "\x01\x02", 2);
  ck_put_le32(b, 0x01020304u);
  assert_memory_equal(b, "\x04\x03\x02\x01", 4);
  ck_put_be32(b, 0x01020304u);
  assert_memory_equal(b, "\x01\x02\x03\x04", 4);
  ck_put_le64(b, 0x0102030405060708ull);
  assert_memory_equal(b, "\x08\x07\x06\x05\x04\x03\x02\x01", 8);
  ck_put_be64(b, 0x0102030405060708ull);
  assert_memory_equal(b, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);

  const uint8_t in[9] = {0xff, 0x80, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0xfe};
  /* unaligned loads, high bits set */
  assert_int_equal(ck_get_le16(in + 1), 0x0180);
  assert_int_equal(ck_get_be16(in + 1), 0x8001);
  assert_int_equal(ck_get_le32(in + 1), 0x03020180u);
  assert_int_equal(ck_get_be32(in + 1), 0x80010203u);
  assert_int_equal(ck_get_le64(in + 1), 0xfe06050403020180ull);
  assert_int_equal(ck_get_be64(in + 1), 0x80010203040506feull);
  assert_int_equal(ck_get_le_n(in, 3), 0x0180ffu);
  assert_int_equal(ck_get_le_n(in + 1, 8), 0xfe06050403020180ull);

  uint8_t n[8] = {0};
  ck_put_le_n(n, 0xaabbccddeeull, 3);
  assert_memory_equal(n, "\xee\xdd\xcc\x00", 4);

  const uint64_t edge[] = {0, 1, 0x7f, 0x80, 0xff, 0xffff, 0xffffffffull, UINT64_MAX};
  for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) {
    ck_put_le64(b, edge[i]);
    assert_int_equal(ck_get_le64(b), edge[i]);
    ck_put_be64(b, edge[i]);
    assert_int_equal(ck_get_be64(b), edge[i]);
    ck_put_le32(b, (uint32_t)edge[i]);
    assert_int_equal(ck_get_le32(b), (uint32_t)edge[i]);
    ck_put_be16(b, (uint16_t)edge[i]);
    assert_int_equal(ck_get_be16(b), (uint16_t)edge[i]);
  }
}

static void test_buf_appends(void **state) {
  (void)state;
  ck_buf_t b;
  ck_buf_init(&b);
  ck_buf_put_u8(&b, 0xab);
  ck_buf_put_le16(&b, 0x0102);
  ck_buf_put_be16(&b, 0x0102);
  ck_buf_put_le32(&b, 0x01020304u);
  ck_buf_put_be32(&b, 0x01020304u);
  ck_buf_put_le64(&b, 1);
  ck_buf_put_be64(&b, 1);
  ck_buf_put_le_n(&b, 0x030201, 3);
  const char want[] = "\xab\x02\x01\x01\x02\x04\x03\x02\x01\x01\x02\x03\x04"
                      "\x01\x00\x00\x00\x00\x00\x00\x00"
                      "\x00\x00\x00\x00\x00\x00\x00\x01"
                      "\x01\x02\x03";
  assert_int_equal(b.len, sizeof want - 1);
  assert_memory_equal(b.data, want, sizeof want - 1);
  ck_buf_fini(&b);
}

/* value, its encoding (LEB128), its length */
typedef struct {
  uint64_t v;
  const char *enc;
  size_t len;
} uv_case_t;

static const uv_case_t uv_cases[] = {
    {0, "\x00", 1},
    {1, "\x01", 1},
    {127, "\x7f", 1},
    {128, "\x80\x01", 2},
    {300, "\xac\x02", 2},
    {16383, "\xff\x7f", 2},
    {16384, "\x80\x80\x01", 3},
    {(1ull << 21) - 1, "\xff\xff\x7f", 3},
    {1ull << 21, "\x80\x80\x80\x01", 4},
    {(1ull << 28) - 1, "\xff\xff\xff\x7f", 4},
    {1ull << 28, "\x80\x80\x80\x80\x01", 5},
    {(1ull << 35) - 1, "\xff\xff\xff\xff\x7f", 5},
    {(1ull << 56) - 1, "\xff\xff\xff\xff\xff\xff\xff\x7f", 8},
    {1ull << 56, "\x80\x80\x80\x80\x80\x80\x80\x80\x01", 9},
    {(1ull << 63) - 1, "\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 9},
    {1ull << 63, "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 10},
    {UINT64_MAX, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10},
};

static void test_uvarint_round_trip_at_every_boundary(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof uv_cases / sizeof *uv_cases; i++) {
    const uv_case_t *c = &uv_cases[i];
    uint8_t raw[CK_VARINT_MAX];
    assert_int_equal(ck_uvarint_put(raw, c->v), c->len);
    assert_memory_equal(raw, c->enc, c->len);
    assert_int_equal(ck_uvarint_len(c->v), c->len);
    ck_buf_t b;
    ck_buf_init(&b);
    ck_buf_put_uvarint(&b, c->v);
    assert_int_equal(b.len, c->len);
    assert_memory_equal(b.data, c->enc, c->len);
    /* back, with a trailing byte that must stay unread */
    ck_buf_putc(&b, 0x55);
    const uint8_t *p = (const uint8_t *)b.data, *end = p + b.len;
    uint64_t v = 12345;
    assert_true(ck_uvarint_get(&p, end, &v));
    assert_int_equal(v, c->v);
    assert_ptr_equal(p, (const uint8_t *)b.data + c->len);
    assert_int_equal(ck_uvarint_peek(b.data, b.len, &v), (int)c->len);
    assert_int_equal(v, c->v);
    ck_rd_t r = ck_rd_of(b.data, b.len);
    assert_int_equal(ck_rd_uvarint(&r), c->v);
    assert_int_equal(ck_rd_u8(&r), 0x55);
    assert_false(r.bad);
    ck_buf_fini(&b);
  }
}

static void test_truncated_and_overlong_varints_are_refused(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof uv_cases / sizeof *uv_cases; i++) {
    const uv_case_t *c = &uv_cases[i];
    const uint8_t *enc = (const uint8_t *)c->enc;
    for (size_t cut = 0; cut < c->len; cut++) { /* every proper prefix */
      const uint8_t *p = enc;
      uint64_t u = 7;
      int64_t s = 7;
      assert_false(ck_uvarint_get(&p, enc + cut, &u));
      assert_ptr_equal(p, enc);
      assert_false(ck_varint_get(&p, enc + cut, &s));
      assert_ptr_equal(p, enc);
      assert_int_equal(ck_uvarint_peek(enc, cut, &u), 0); /* need more */
      ck_rd_t r = ck_rd_of(enc, cut);
      assert_int_equal(ck_rd_uvarint(&r), 0);
      assert_true(r.bad);
    }
  }
  /* eleven continuation bytes: longer than any 64-bit varint */
  const uint8_t lng[11] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
  const uint8_t *p = lng;
  uint64_t u;
  int64_t s;
  assert_int_equal(ck_uvarint_peek(lng, sizeof lng, &u), -1);
  assert_int_equal(ck_uvarint_peek(lng, 10, &u), -1); /* ten bytes, all continued */
  assert_int_equal(ck_uvarint_peek(lng, 9, &u), 0);
  assert_false(ck_uvarint_get(&p, lng + sizeof lng, &u));
  assert_false(ck_varint_get(&p, lng + sizeof lng, &s));
  assert_ptr_equal(p, lng);
}

static void test_zigzag(void **state) {
  (void)state;
  const struct {
    int64_t v;
    uint64_t z;
  } zz[] = {{0, 0},       {-1, 1},          {1, 2},         {-2, 3},
            {63, 126},    {-64, 127},       {64, 128},      {2147483647, 4294967294ull},
            {-2147483648LL, 4294967295ull}, {INT64_MAX, UINT64_MAX - 1},
            {INT64_MIN, UINT64_MAX}};
  for (size_t i = 0; i < sizeof zz / sizeof *zz; i++) {
    assert_int_equal(ck_zigzag_encode(zz[i].v), zz[i].z);
    assert_int_equal(ck_zigzag_decode(zz[i].z), zz[i].v);
    ck_buf_t b;
    ck_buf_init(&b);
    ck_buf_put_varint(&b, zz[i].v);
    assert_int_equal(b.len, ck_uvarint_len(zz[i].z));
    const uint8_t *p = (const uint8_t *)b.data;
    int64_t v = 99;
    assert_true(ck_varint_get(&p, p + b.len, &v));
    assert_int_equal(v, zz[i].v);
    assert_ptr_equal(p, (const uint8_t *)b.data + b.len);
    ck_buf_fini(&b);
  }
  /* Kafka's null length -1 is the single byte 0x01; 64 (0x80 0x01) takes the two-byte path */
  const uint8_t m1[] = {0x01}, two[] = {0x80, 0x01}, three[] = {0x80, 0x80, 0x01};
  const uint8_t *p = m1;
  int64_t v;
  assert_true(ck_varint_get(&p, m1 + 1, &v));
  assert_int_equal(v, -1);
  p = two;
  assert_true(ck_varint_get(&p, two + 2, &v));
  assert_int_equal(v, 64);
  p = three;
  assert_true(ck_varint_get(&p, three + 3, &v));
  assert_int_equal(v, 8192);
  assert_ptr_equal(p, three + 3);
}

static void test_cursor_is_bounds_checked_and_sticky(void **state) {
  (void)state;
  const uint8_t in[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07};
  ck_rd_t r = ck_rd_of(in, sizeof in);
  assert_int_equal(ck_rd_be16(&r), 0x0102);
  assert_int_equal(ck_rd_le32(&r), 0x06050403u);
  assert_int_equal(ck_rd_left(&r), 1);
  assert_int_equal(ck_rd_le16(&r), 0); /* one byte left: refused */
  assert_true(r.bad);
  assert_int_equal(ck_rd_u8(&r), 0); /* sticky, though a byte is there */
  assert_null(ck_rd_take(&r, 0));
  assert_int_equal(ck_rd_left(&r), 1);

  r = ck_rd_of(in, sizeof in);
  assert_int_equal(ck_rd_be64(&r), 0);
  assert_true(r.bad);
  r = ck_rd_of(in, sizeof in);
  assert_ptr_equal(ck_rd_take(&r, 7), in);
  assert_false(r.bad);
  assert_int_equal(ck_rd_left(&r), 0);

  const uint8_t *p = in;
  uint64_t v64;
  uint32_t v32;
  assert_false(ck_take_le64(&p, in + sizeof in, &v64));
  assert_ptr_equal(p, in);
  assert_true(ck_take_le32(&p, in + sizeof in, &v32));
  assert_int_equal(v32, 0x04030201u);
  assert_false(ck_take_le32(&p, in + sizeof in, &v32));
  assert_ptr_equal(p, in + 4);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixed_width_byte_order),
      cmocka_unit_test(test_buf_appends),
      cmocka_unit_test(test_uvarint_round_trip_at_every_boundary),
      cmocka_unit_test(test_truncated_and_overlong_varints_are_refused),
      cmocka_unit_test(test_zigzag),
      cmocka_unit_test(test_cursor_is_bounds_checked_and_sticky),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
