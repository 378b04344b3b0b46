/*
 * DESIGN: unit tests for src/base/digest — the test vectors of RFC 1321 (MD5) and FIPS 180-2
 * (SHA-256), the empty input, and a one-million-byte input against its published digest.
 * Threads: the main thread.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/digest.h"

static void md5_hex(const char *s, char out[33]) {
  uint8_t md[16];
  ck_md5(s, strlen(s), md);
  ck_hex_lower(md, 16, out);
}

static void test_md5_vectors(void **state) {
  (void)state;
  char h[33];
  md5_hex("", h);
  assert_string_equal(h, "d41d8cd98f00b204e9800998ecf8427e");
  md5_hex("abc", h);
  assert_string_equal(h, "900150983cd24fb0d6963f7d28e17f72");
  md5_hex("12345678901234567890123456789012345678901234567890123456789012345678901234567890", h);
  assert_string_equal(h, "57edf4a22be3c955ac49da2e2107b67a");
}

static void test_sha256_vectors(void **state) {
  (void)state;
  char h[65];
  ck_sha256_hex("", 0, h);
  assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  ck_sha256_hex(NULL, 0, h);
  assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  ck_sha256_hex("abc", 3, h);
  assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  ck_sha256_hex(two, strlen(two), h);
  assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  char *a = malloc(1000000);
  memset(a, 'a', 1000000);
  ck_sha256_hex(a, 1000000, h);
  assert_string_equal(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_md5_vectors),
      cmocka_unit_test(test_sha256_vectors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
