/*
 * The incident tools' own readers (src/incident/json.c, sha256.c): the JSON reader takes what
 * the engine writes (escapes, \u and surrogate pairs, int64 bounds, nesting) and refuses damaged
 * or hostile text with an error, never a crash; SHA-256 matches the FIPS 180-4 test vectors,
 * across the one- and two-block padding boundary.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "base/arena.h"
#include "base/error.h"
#include "incident/bundle.h"
#include "incident/json.h"

static const ck_json_t *parse(ck_arena_t *a, const char *text) {
  ck_json_t *v = NULL;
  ck_error_t err;
  ck_error_clear(&err);
  int rc = ck_json_parse(text, strlen(text), a, &v, &err);
  if (rc) fail_msg("could not parse %s: %s", text, err.message);
  return v;
}

static int refuse(ck_arena_t *a, const char *text) {
  ck_json_t *v = NULL;
  ck_error_t err;
  ck_error_clear(&err);
  int rc = ck_json_parse(text, strlen(text), a, &v, &err);
  if (rc) assert_non_null(strstr(err.message, "could not read JSON"));
  return rc;
}

static void test_reads_what_the_engine_writes(void **state) {
  (void)state;
  ck_arena_t a;
  ck_arena_init(&a, 0);
  const ck_json_t *v = parse(&a, " {\"format\":\"clink-sink-evidence\",\"version\":1,"
                                 "\"n\":-9223372036854775808,\"big\":9223372036854775808,"
                                 "\"f\":1.5e3,\"t\":true,\"z\":null,\"s\":\"a\\\"b\\\\c\\n\\u00e9\\ud83d\\ude00\","
                                 "\"arr\":[1,[2,{}],[]],\"format\":\"second\"} ");
  assert_string_equal(ck_json_get_str(v, "format"), "clink-sink-evidence"); /* first wins */
  assert_int_equal(ck_json_get_int(v, "version", 0), 1);
  int64_t x = 0;
  assert_true(ck_json_int(ck_json_get(v, "n"), &x));
  assert_true(x == INT64_MIN);
  assert_false(ck_json_int(ck_json_get(v, "big"), &x)); /* past int64: a number, not an int */
  assert_true(ck_json_get(v, "big")->num > 9.2e18);
  assert_false(ck_json_int(ck_json_get(v, "f"), &x));
  assert_true(ck_json_get(v, "f")->num == 1500.0);
  assert_true(ck_json_get_bool(v, "t", false));
  assert_true(ck_json_is_null(ck_json_get(v, "z")) && ck_json_is_null(ck_json_get(v, "absent")));
  assert_string_equal(ck_json_get_str(v, "s"), "a\"b\\c\n\xc3\xa9\xf0\x9f\x98\x80");
  const ck_json_t *arr = ck_json_get(v, "arr");
  assert_int_equal(arr->n, 3);
  assert_int_equal(ck_json_at(arr, 1)->kind, CK_JSON_ARRAY);
  assert_int_equal(ck_json_at(ck_json_at(arr, 1), 1)->kind, CK_JSON_OBJECT);
  assert_null(ck_json_at(arr, 3));
  assert_int_equal(ck_json_get_int(v, "s", -7), -7); /* another kind: the default */
  ck_arena_fini(&a);
}

static void test_refuses_damaged_and_hostile_text(void **state) {
  (void)state;
  ck_arena_t a;
  ck_arena_init(&a, 0);
  const char *bad[] = {"", "{", "{\"a\":1", "{\"a\" 1}", "[1,]", "[1 2]", "\"open", "\"\\x\"",
                       "\"\\u12\"", "tru", "{\"a\":1}}", "-", "1e", "{1:2}", "\"a\nb\""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    if (!refuse(&a, bad[i])) fail_msg("accepted %s", bad[i]);
  char deep[CK_JSON_MAX_DEPTH * 2 + 8];
  memset(deep, '[', sizeof deep - 1);
  deep[sizeof deep - 1] = 0;
  assert_true(refuse(&a, deep) != 0); /* nested past the bound: an error, not a stack overflow */
  ck_arena_fini(&a);
}

static void test_sha256_matches_the_fips_vectors(void **state) {
  (void)state;
  char hex[65];
  ck_sha256_hex("", 0, hex);
  assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  ck_sha256_hex("abc", 3, hex);
  assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes */
  ck_sha256_hex(m, strlen(m), hex);
  assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  static char million[1000000];
  memset(million, 'a', sizeof million);
  ck_sha256_hex(million, sizeof million, hex);
  assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reads_what_the_engine_writes),
      cmocka_unit_test(test_refuses_damaged_and_hostile_text),
      cmocka_unit_test(test_sha256_matches_the_fips_vectors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
