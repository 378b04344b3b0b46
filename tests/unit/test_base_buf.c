/*
 * DESIGN: unit tests for src/base/buf — growable buffer, JSON string escaping, string views,
 * edit distance and the "did you mean" picker.
 *
 * Growth is checked byte for byte against an independent expectation; JSON escaping against
 * literal expected output for every class of byte (controls, quote, backslash, UTF-8);
 * ck_closest at both sides of each length threshold. Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"

static void test_buf_empty_detach_is_empty_string(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_buf_t buf;
  ck_buf_init(&buf);
  assert_int_equal(buf.len, 0);
  char *s = ck_buf_detach(&buf);
  assert_non_null(s);
  assert_string_equal(s, "");
  assert_null(buf.data);
  ck_free(s);
  ck_buf_fini(&buf);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void test_buf_append_grows_and_keeps_bytes(void **state) {
  ck_buf_t buf;
  ck_buf_init(&buf);
  for (int i = 0; i < 10000; i++) {
    ck_buf_putc(&buf, (char)('a' + i % 26));
    assert_int_equal(buf.len, (size_t)i + 1);
    assert_true(buf.cap > buf.len); /* room for the terminator */
    assert_int_equal(buf.data[buf.len], 0);
  }
  for (int i = 0; i < 10000; i++) assert_int_equal(buf.data[i], 'a' + i % 26);
  assert_int_equal(strlen(buf.data), 10000);
  assert_int_equal(buf.cap & (buf.cap - 1), 0); /* doubles from 64: a power of two */
  ck_buf_fini(&buf);
  assert_null(buf.data);
  assert_int_equal(buf.len, 0);
}

static void test_buf_append_binary_and_puts(void **state) {
  ck_buf_t buf;
  ck_buf_init(&buf);
  ck_buf_append(&buf, "a\0b", 3);
  assert_int_equal(buf.len, 3);
  assert_memory_equal(buf.data, "a\0b", 4);
  ck_buf_append(&buf, NULL, 0);
  assert_int_equal(buf.len, 3);
  ck_buf_puts(&buf, "cd");
  assert_memory_equal(buf.data, "a\0bcd", 6);
  char big[300];
  memset(big, 'q', sizeof big);
  ck_buf_append(&buf, big, sizeof big); /* one append larger than two doublings */
  assert_int_equal(buf.len, 305);
  assert_memory_equal(buf.data + 5, big, sizeof big);
  assert_int_equal(buf.data[305], 0);
  ck_buf_fini(&buf);
}

static void test_buf_reset_keeps_memory(void **state) {
  ck_buf_t buf;
  ck_buf_init(&buf);
  ck_buf_puts(&buf, "hello");
  char *data = buf.data;
  size_t cap = buf.cap;
  ck_buf_reset(&buf);
  assert_int_equal(buf.len, 0);
  assert_ptr_equal(buf.data, data);
  assert_int_equal(buf.cap, cap);
  assert_string_equal(buf.data, "");
  ck_buf_puts(&buf, "x");
  assert_string_equal(buf.data, "x");
  ck_buf_fini(&buf);
}

static void test_buf_reserve_avoids_realloc(void **state) {
  ck_buf_t buf;
  ck_buf_init(&buf);
  ck_buf_reserve(&buf, 1000);
  assert_true(buf.cap >= 1001);
  char *data = buf.data;
  int64_t allocs = ck_mem_stats().total_allocs;
  for (int i = 0; i < 1000; i++) ck_buf_putc(&buf, 'r');
  assert_ptr_equal(buf.data, data);
  assert_int_equal(ck_mem_stats().total_allocs, allocs);
  ck_buf_fini(&buf);
}

static void test_buf_printf_appends_and_grows(void **state) {
  ck_buf_t buf;
  ck_buf_init(&buf);
  ck_buf_printf(&buf, "%s=%d", "parallelism", 8);
  assert_string_equal(buf.data, "parallelism=8");
  ck_buf_printf(&buf, ", %s", "");
  ck_buf_printf(&buf, "%c", '!');
  assert_string_equal(buf.data, "parallelism=8, !");
  ck_buf_t expect;
  ck_buf_init(&expect);
  ck_buf_puts(&expect, "parallelism=8, !");
  for (int i = 0; i < 500; i++) {
    ck_buf_printf(&buf, "[%04d:%s]", i, "some-longer-text-to-force-growth");
    char one[64];
    snprintf(one, sizeof one, "[%04d:%s]", i, "some-longer-text-to-force-growth");
    ck_buf_puts(&expect, one);
  }
  assert_int_equal(buf.len, expect.len);
  assert_string_equal(buf.data, expect.data);
  assert_int_equal(strlen(buf.data), buf.len);
  /* a single printf far larger than the current capacity */
  ck_buf_reset(&buf);
  ck_buf_printf(&buf, "%5000d|", 7);
  assert_int_equal(buf.len, 5001);
  assert_int_equal(buf.data[4999], '7');
  assert_int_equal(buf.data[5000], '|');
  assert_int_equal(buf.data[5001], 0);
  ck_buf_fini(&buf);
  ck_buf_fini(&expect);
}

static void test_buf_detach_transfers_ownership(void **state) {
  ck_buf_t buf;
  ck_buf_init(&buf);
  ck_buf_puts(&buf, "owned");
  char *s = ck_buf_detach(&buf);
  assert_string_equal(s, "owned");
  assert_null(buf.data);
  assert_int_equal(buf.len, 0);
  assert_int_equal(buf.cap, 0);
  ck_buf_puts(&buf, "new"); /* the buffer is reusable and independent */
  assert_string_equal(buf.data, "new");
  assert_string_equal(s, "owned");
  ck_free(s);
  ck_buf_fini(&buf);
}

static void json(const char *in, size_t n, const char *expect) {
  ck_buf_t buf;
  ck_buf_init(&buf);
  ck_buf_puts(&buf, "x:");
  ck_buf_put_json_str(&buf, in, n);
  assert_string_equal(buf.data + 2, expect);
  assert_int_equal(buf.len, 2 + strlen(expect));
  ck_buf_fini(&buf);
}

static void test_buf_json_plain(void **state) {
  json("", 0, "\"\"");
  json("hello world", 11, "\"hello world\"");
  json("abcdef", 3, "\"abc\""); /* honours n, not the terminator */
}

static void test_buf_json_quote_and_backslash(void **state) {
  json("say \"hi\"", 8, "\"say \\\"hi\\\"\"");
  json("C:\\tmp\\", 7, "\"C:\\\\tmp\\\\\"");
  json("\"", 1, "\"\\\"\"");
  json("\\", 1, "\"\\\\\"");
  json("/", 1, "\"/\""); /* solidus needs no escape */
}

static void test_buf_json_named_controls(void **state) {
  json("a\nb\rc\td\be\ff", 11, "\"a\\nb\\rc\\td\\be\\ff\"");
}

static void test_buf_json_other_controls_as_unicode(void **state) {
  json("\x01", 1, "\"\\u0001\"");
  json("\x1f", 1, "\"\\u001f\"");
  json("a\x1b[0m", 5, "\"a\\u001b[0m\"");
  json("\0", 1, "\"\\u0000\""); /* embedded NUL */
  json("\x7f", 1, "\"\x7f\"");   /* DEL is not a JSON control character */
  json(" ", 1, "\" \"");         /* 0x20 is the first plain byte */
  /* every byte below 0x20 is escaped and nothing raw below 0x20 is left in the output */
  char all[32];
  for (int i = 0; i < 32; i++) all[i] = (char)i;
  ck_buf_t buf;
  ck_buf_init(&buf);
  ck_buf_put_json_str(&buf, all, sizeof all);
  for (size_t i = 0; i < buf.len; i++) assert_true((unsigned char)buf.data[i] >= 0x20);
  ck_buf_fini(&buf);
}

static void test_buf_json_utf8_passthrough(void **state) {
  const char *s = "h\xc3\xa9llo \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80"; /* héllo 日本 😀 */
  char expect[64];
  snprintf(expect, sizeof expect, "\"%s\"", s);
  json(s, strlen(s), expect);
}

static void test_buf_json_long_mixed(void **state) {
  ck_buf_t buf, expect;
  ck_buf_init(&buf);
  ck_buf_init(&expect);
  ck_buf_t in;
  ck_buf_init(&in);
  ck_buf_putc(&expect, '"');
  for (int i = 0; i < 2000; i++) {
    ck_buf_puts(&in, "ab\"c\n");
    ck_buf_puts(&expect, "ab\\\"c\\n");
  }
  ck_buf_putc(&expect, '"');
  ck_buf_put_json_str(&buf, in.data, in.len);
  assert_int_equal(buf.len, expect.len);
  assert_string_equal(buf.data, expect.data);
  ck_buf_fini(&buf);
  ck_buf_fini(&expect);
  ck_buf_fini(&in);
}

static void test_buf_str_views(void **state) {
  assert_true(ck_str_eq(CK_STR("abc"), ck_str_of("abc")));
  assert_false(ck_str_eq(CK_STR("abc"), CK_STR("abd")));
  assert_false(ck_str_eq(CK_STR("abc"), CK_STR("ab")));
  assert_true(ck_str_eq((ck_str_t){NULL, 0}, CK_STR("")));
  assert_true(ck_str_ieq(CK_STR("SeLeCt"), CK_STR("select")));
  assert_false(ck_str_ieq(CK_STR("select"), CK_STR("selects")));
  assert_false(ck_str_ieq(CK_STR("select"), CK_STR("selecd")));
  assert_true(ck_streq_i("KAFKA", "kafka"));
  assert_false(ck_streq_i("kafka", "kafk"));
  assert_int_equal(ck_str_of("four").len, 4);
}

static void test_buf_edit_distance(void **state) {
  assert_int_equal(ck_edit_distance("", ""), 0);
  assert_int_equal(ck_edit_distance("abc", ""), 3);
  assert_int_equal(ck_edit_distance("", "abcd"), 4);
  assert_int_equal(ck_edit_distance("kitten", "sitting"), 3);
  assert_int_equal(ck_edit_distance("sitting", "kitten"), 3);
  assert_int_equal(ck_edit_distance("flaw", "lawn"), 2);
  assert_int_equal(ck_edit_distance("select", "selcet"), 1); /* a swap of neighbours = 1 edit */
  assert_int_equal(ck_edit_distance("rnu", "run"), 1);
  assert_int_equal(ck_edit_distance("ab", "ba"), 1);
  assert_int_equal(ck_edit_distance("abc", "ca"), 3); /* no edit of a swapped pair again */
  assert_int_equal(ck_edit_distance("insert", "insrt"), 1);
  assert_int_equal(ck_edit_distance("SELECT", "select"), 0); /* case-insensitive */
  assert_int_equal(ck_edit_distance("abc", "xyz"), 3);
}

static void test_buf_edit_distance_long_strings(void **state) {
  char a[101], b[101];
  memset(a, 'a', 100);
  a[100] = 0;
  memcpy(b, a, sizeof a);
  assert_int_equal(ck_edit_distance(a, b), 0);
  b[50] = 'b';
  assert_int_equal(ck_edit_distance(a, b), 1);
  b[100 - 1] = 0; /* one shorter as well */
  assert_int_equal(ck_edit_distance(a, b), 2);
  assert_int_equal(ck_edit_distance("a", a), 99);
}

static void test_buf_closest_picks_nearest(void **state) {
  const char *const words[] = {"select", "insert", "delete", "create"};
  assert_string_equal(ck_closest("selct", words, 4), "select");
  assert_string_equal(ck_closest("INSRET", words, 4), "insert");
  assert_string_equal(ck_closest("delete", words, 4), "delete");
  assert_null(ck_closest("zzzzzz", words, 4));
  assert_null(ck_closest("select", words, 0));
  const char *const ties[] = {"cat", "bat"};
  assert_string_equal(ck_closest("hat", ties, 2), "cat"); /* first of equals */
}

static void test_buf_closest_thresholds(void **state) {
  /* word length <= 3: at most 1 edit */
  const char *const c3[] = {"from"};
  assert_string_equal(ck_closest("frm", c3, 1), "from"); /* 1 */
  const char *const c3b[] = {"fxyz"};
  assert_null(ck_closest("fro", c3b, 1)); /* 3 */
  const char *const c3c[] = {"abx"};
  assert_null(ck_closest("ayz", c3c, 1)); /* 2 */
  /* word length 4..6: at most 2 edits */
  const char *const c4[] = {"abyz"};
  assert_string_equal(ck_closest("abcd", c4, 1), "abyz"); /* 2 */
  const char *const c6[] = {"abcxyz"};
  assert_null(ck_closest("abcdef", c6, 1)); /* distance 3, len 6: limit 2 */
  const char *const c6b[] = {"abcdyz"};
  assert_string_equal(ck_closest("abcdef", c6b, 1), "abcdyz"); /* 2 */
  /* word length >= 7: at most 3 edits */
  const char *const c7[] = {"abcdxyz"};
  assert_string_equal(ck_closest("abcdefg", c7, 1), "abcdxyz"); /* 3 */
  const char *const c7b[] = {"abcwxyz"};
  assert_null(ck_closest("abcdefg", c7b, 1)); /* 4 */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_buf_empty_detach_is_empty_string),
      cmocka_unit_test(test_buf_append_grows_and_keeps_bytes),
      cmocka_unit_test(test_buf_append_binary_and_puts),
      cmocka_unit_test(test_buf_reset_keeps_memory),
      cmocka_unit_test(test_buf_reserve_avoids_realloc),
      cmocka_unit_test(test_buf_printf_appends_and_grows),
      cmocka_unit_test(test_buf_detach_transfers_ownership),
      cmocka_unit_test(test_buf_json_plain),
      cmocka_unit_test(test_buf_json_quote_and_backslash),
      cmocka_unit_test(test_buf_json_named_controls),
      cmocka_unit_test(test_buf_json_other_controls_as_unicode),
      cmocka_unit_test(test_buf_json_utf8_passthrough),
      cmocka_unit_test(test_buf_json_long_mixed),
      cmocka_unit_test(test_buf_str_views),
      cmocka_unit_test(test_buf_edit_distance),
      cmocka_unit_test(test_buf_edit_distance_long_strings),
      cmocka_unit_test(test_buf_closest_picks_nearest),
      cmocka_unit_test(test_buf_closest_thresholds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
