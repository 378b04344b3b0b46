/*
 * DESIGN: unit tests for src/base/crc32c — the snapshot checksum.
 *
 * The standard check value pins the polynomial and reflection; a bit-at-a-time reference
 * written here independently checks every length and alignment that reaches the slicing-by-8
 * path and its byte tail; incremental use must equal one shot at every split point.
 * Threads: the main thread, plus workers racing the one-time table build.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "base/crc32c.h"
#include "base/thread.h"

/* Bitwise CRC-32C (reflected polynomial 0x82F63B78), independent of the table code. */
static uint32_t ref_crc32c(uint32_t crc, const unsigned char *p, size_t n) {
  crc = ~crc;
  for (size_t i = 0; i < n; i++) {
    crc ^= p[i];
    for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
  }
  return ~crc;
}

static void fill(unsigned char *p, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    p[i] = (unsigned char)(seed >> 16);
  }
}

static void test_crc32c_check_value(void **state) {
  assert_int_equal(ck_crc32c(0, "123456789", 9), 0xE3069283u);
  assert_int_equal(ref_crc32c(0, (const unsigned char *)"123456789", 9), 0xE3069283u);
}

static void test_crc32c_known_vectors(void **state) {
  /* RFC 3720 (iSCSI) B.4 test vectors */
  unsigned char buf[32];
  memset(buf, 0, sizeof buf);
  assert_int_equal(ck_crc32c(0, buf, 32), 0x8A9136AAu);
  memset(buf, 0xFF, sizeof buf);
  assert_int_equal(ck_crc32c(0, buf, 32), 0x62A8AB43u);
  for (int i = 0; i < 32; i++) buf[i] = (unsigned char)i;
  assert_int_equal(ck_crc32c(0, buf, 32), 0x46DD794Eu);
  for (int i = 0; i < 32; i++) buf[i] = (unsigned char)(31 - i);
  assert_int_equal(ck_crc32c(0, buf, 32), 0x113FDB5Cu);
}

static void test_crc32c_zero_length(void **state) {
  assert_int_equal(ck_crc32c(0, "", 0), 0);
  assert_int_equal(ck_crc32c(0, NULL, 0), 0);
  /* zero bytes leave a running value unchanged */
  uint32_t c = ck_crc32c(0, "abc", 3);
  assert_int_equal(ck_crc32c(c, "xyz", 0), c);
  assert_int_equal(ck_crc32c(0xDEADBEEFu, NULL, 0), 0xDEADBEEFu);
}

static void test_crc32c_matches_reference_all_lengths_and_alignments(void **state) {
  unsigned char data[600];
  fill(data, sizeof data, 42);
  for (size_t off = 0; off < 8; off++)
    for (size_t n = 0; n + off <= 300; n++) {
      uint32_t want = ref_crc32c(0, data + off, n);
      uint32_t got = ck_crc32c(0, data + off, n);
      if (got != want) fail_msg("offset %zu length %zu: got %08x, want %08x", off, n, got, want);
      got = ck_crc32c_portable(0, data + off, n);
      if (got != want)
        fail_msg("tables, offset %zu length %zu: got %08x, want %08x", off, n, got, want);
      /* continuing from a running value, both ways */
      uint32_t seed = ref_crc32c(0, data, off);
      want = ref_crc32c(seed, data + off, n);
      if (ck_crc32c(seed, data + off, n) != want || ck_crc32c_portable(seed, data + off, n) != want)
        fail_msg("continued at %zu, length %zu: a way differs from the reference", off, n);
    }
  assert_int_equal(ck_crc32c(0, data, sizeof data), ref_crc32c(0, data, sizeof data));
}

static void test_crc32c_incremental_equals_one_shot(void **state) {
  unsigned char data[257];
  fill(data, sizeof data, 7);
  uint32_t whole = ck_crc32c(0, data, sizeof data);
  assert_int_equal(whole, ref_crc32c(0, data, sizeof data));
  for (size_t cut = 0; cut <= sizeof data; cut++) {
    uint32_t c = ck_crc32c(0, data, cut);
    c = ck_crc32c(c, data + cut, sizeof data - cut);
    if (c != whole) fail_msg("split at %zu: got %08x, want %08x", cut, c, whole);
  }
  /* many small uneven pieces */
  uint32_t c = 0;
  size_t pos = 0, step = 1;
  while (pos < sizeof data) {
    size_t n = step < sizeof data - pos ? step : sizeof data - pos;
    c = ck_crc32c(c, data + pos, n);
    pos += n;
    step = step % 13 + 1;
  }
  assert_int_equal(c, whole);
}

static void test_crc32c_detects_single_bit_flips(void **state) {
  unsigned char data[64];
  fill(data, sizeof data, 99);
  uint32_t base = ck_crc32c(0, data, sizeof data);
  for (size_t bit = 0; bit < sizeof data * 8; bit++) {
    data[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    assert_int_not_equal(ck_crc32c(0, data, sizeof data), base);
    data[bit / 8] ^= (unsigned char)(1u << (bit % 8));
  }
}

static void *crc_worker(void *arg) {
  uint32_t *out = arg;
  *out = ck_crc32c(0, "123456789", 9);
  return NULL;
}

static void test_crc32c_concurrent_first_use(void **state) {
  /* tables are built once; callers racing the first use all get the right answer */
  enum { N = 8 };
  ck_thread_t th[N] = {0};
  uint32_t out[N] = {0};
  for (int i = 0; i < N; i++)
    assert_int_equal(ck_thread_start(&th[i], "crc", crc_worker, &out[i]), 0);
  for (int i = 0; i < N; i++) ck_thread_join(&th[i]);
  for (int i = 0; i < N; i++) assert_int_equal(out[i], 0xE3069283u);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crc32c_concurrent_first_use), /* first: the tables are not built yet */
      cmocka_unit_test(test_crc32c_check_value),
      cmocka_unit_test(test_crc32c_known_vectors),
      cmocka_unit_test(test_crc32c_zero_length),
      cmocka_unit_test(test_crc32c_matches_reference_all_lengths_and_alignments),
      cmocka_unit_test(test_crc32c_incremental_equals_one_shot),
      cmocka_unit_test(test_crc32c_detects_single_bit_flips),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
