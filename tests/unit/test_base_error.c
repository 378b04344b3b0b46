/*
 * DESIGN: unit tests for src/base/error — the error-code table and rich errors.
 *
 * The table is walked through its own X-macro, so every code is checked for its name, its
 * default message and the message style (lower case, no trailing period). Rich errors are
 * checked for first-error-wins, position, detail and hint, NULL tolerance, truncation and the
 * rendered "error: / detail: / hint:" text. Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <string.h>

#include "base/error.h"

static void test_error_table_names_and_messages(void **state) {
  struct row {
    int code;
    const char *name, *msg;
  };
  static const struct row rows[] = {
#define CK_X_ROW(name, num, msg) {num, #name, msg},
      CK_ERROR_TABLE(CK_X_ROW)
#undef CK_X_ROW
  };
  size_t n = sizeof rows / sizeof rows[0];
  assert_true(n >= 20);
  for (size_t i = 0; i < n; i++) {
    assert_string_equal(ck_error_name(rows[i].code), rows[i].name);
    assert_string_equal(ck_error_default(rows[i].code), rows[i].msg);
    assert_int_equal(strncmp(rows[i].name, "CK_", 3), 0);
    /* codes are 0, -1, -2, … with no gaps or duplicates */
    assert_int_equal(rows[i].code, -(int)i);
    /* message style: lower case first letter, no trailing period */
    size_t len = strlen(rows[i].msg);
    assert_true(len > 0);
    assert_false(isupper((unsigned char)rows[i].msg[0]));
    assert_int_not_equal(rows[i].msg[len - 1], '.');
  }
  assert_string_equal(ck_error_name(CK_ESYNTAX), "CK_ESYNTAX");
  assert_string_equal(ck_error_default(CK_ESYNTAX), "syntax error");
  assert_string_equal(ck_error_name(CK_OK), "CK_OK");
  assert_int_equal(CK_EINTERNAL, -19);
}

static void test_error_unknown_code(void **state) {
  assert_string_equal(ck_error_name(-9999), "CK_EUNKNOWN");
  assert_string_equal(ck_error_default(-9999), "unknown error");
  assert_string_equal(ck_error_name(1), "CK_EUNKNOWN");
}

static void test_error_set_records_and_returns_code(void **state) {
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(err.code, 0);
  int rc = ck_error_set(&err, CK_EIO, "could not open file \"%s\": %s", "in.csv", "no such file");
  assert_int_equal(rc, CK_EIO);
  assert_int_equal(err.code, CK_EIO);
  assert_string_equal(err.message, "could not open file \"in.csv\": no such file");
  assert_int_equal(err.line, 0);
  assert_int_equal(err.column, 0);
  assert_string_equal(err.detail, "");
  assert_string_equal(err.hint, "");
}

static void test_error_first_error_wins(void **state) {
  ck_error_t err;
  ck_error_clear(&err);
  ck_error_set_at(&err, CK_ESYNTAX, 3, 14, "syntax error at or near \"%s\"", "FORM");
  int rc = ck_error_set(&err, CK_EINTERNAL, "later failure");
  assert_int_equal(rc, CK_EINTERNAL); /* the caller still propagates its own code */
  rc = ck_error_set_at(&err, CK_ETYPE, 9, 9, "another");
  assert_int_equal(rc, CK_ETYPE);
  assert_int_equal(err.code, CK_ESYNTAX);
  assert_string_equal(err.message, "syntax error at or near \"FORM\"");
  assert_int_equal(err.line, 3);
  assert_int_equal(err.column, 14);
  /* clear makes room for a new error */
  ck_error_clear(&err);
  assert_int_equal(err.code, 0);
  assert_string_equal(err.message, "");
  ck_error_set(&err, CK_ETIMEOUT, "timed out waiting for %d workers", 2);
  assert_int_equal(err.code, CK_ETIMEOUT);
  assert_string_equal(err.message, "timed out waiting for 2 workers");
}

static void test_error_null_out_param(void **state) {
  assert_int_equal(ck_error_set(NULL, CK_EIO, "ignored %d", 1), CK_EIO);
  assert_int_equal(ck_error_set_at(NULL, CK_ESYNTAX, 1, 2, "ignored"), CK_ESYNTAX);
  ck_error_detail(NULL, "ignored");
  ck_error_hint(NULL, "ignored");
  ck_error_clear(NULL);
}

static void test_error_detail_and_hint(void **state) {
  ck_error_t err;
  ck_error_clear(&err);
  ck_error_set(&err, CK_EOPTION, "invalid option \"%s\"", "paralelism");
  ck_error_detail(&err, "The option is set in %s.", "job.sql");
  ck_error_hint(&err, "Did you mean \"%s\"?", "parallelism");
  assert_string_equal(err.detail, "The option is set in job.sql.");
  assert_string_equal(err.hint, "Did you mean \"parallelism\"?");
  /* the first detail and hint win too */
  ck_error_detail(&err, "second detail");
  ck_error_hint(&err, "second hint");
  assert_string_equal(err.detail, "The option is set in job.sql.");
  assert_string_equal(err.hint, "Did you mean \"parallelism\"?");
}

static void test_error_message_truncated_safely(void **state) {
  ck_error_t err;
  ck_error_clear(&err);
  char long_text[2000];
  memset(long_text, 'm', sizeof long_text - 1);
  long_text[sizeof long_text - 1] = 0;
  ck_error_set(&err, CK_EIO, "%s", long_text);
  assert_int_equal(strlen(err.message), CK_ERR_MSG - 1);
  ck_error_detail(&err, "%s", long_text);
  ck_error_hint(&err, "%s", long_text);
  assert_int_equal(strlen(err.detail), CK_ERR_TEXT - 1);
  assert_int_equal(strlen(err.hint), CK_ERR_TEXT - 1);
}

static void test_error_format_full(void **state) {
  ck_error_t err;
  ck_error_clear(&err);
  ck_error_set(&err, CK_ECONNECT, "could not connect to kafka broker \"%s\"", "b1:9092");
  ck_error_detail(&err, "Connection refused.");
  ck_error_hint(&err, "Check that the broker is running.");
  char out[512];
  ck_error_format(&err, out, sizeof out);
  assert_string_equal(out, "error: could not connect to kafka broker \"b1:9092\"\n"
                           "detail: Connection refused.\n"
                           "hint: Check that the broker is running.");
}

static void test_error_format_parts_optional(void **state) {
  ck_error_t err;
  char out[256];
  ck_error_clear(&err);
  ck_error_set(&err, CK_EBIND, "column \"x\" does not exist");
  ck_error_format(&err, out, sizeof out);
  assert_string_equal(out, "error: column \"x\" does not exist");
  ck_error_hint(&err, "Check the spelling.");
  ck_error_format(&err, out, sizeof out);
  assert_string_equal(out, "error: column \"x\" does not exist\nhint: Check the spelling.");
  /* an empty message falls back to the table's default for the code */
  ck_error_clear(&err);
  ck_error_set(&err, CK_ETIMEOUT, "%s", "");
  ck_error_format(&err, out, sizeof out);
  assert_string_equal(out, "error: timed out");
}

static void test_error_format_truncates_to_buffer(void **state) {
  ck_error_t err;
  ck_error_clear(&err);
  ck_error_set(&err, CK_EIO, "could not write file");
  ck_error_detail(&err, "disk full");
  ck_error_hint(&err, "free some space");
  char out[64];
  for (int len = 1; len <= 64; len++) {
    memset(out, '#', sizeof out);
    ck_error_format(&err, out, len);
    size_t n = strlen(out); /* NUL-terminated within len (ASan checks no write past it) */
    assert_true(n < (size_t)len);
    for (int k = len; k < 64; k++) assert_int_equal(out[k], '#');
    const char *full = "error: could not write file\ndetail: disk full\nhint: free some space";
    assert_memory_equal(out, full, n); /* always a prefix of the whole text */
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_error_table_names_and_messages),
      cmocka_unit_test(test_error_unknown_code),
      cmocka_unit_test(test_error_set_records_and_returns_code),
      cmocka_unit_test(test_error_first_error_wins),
      cmocka_unit_test(test_error_null_out_param),
      cmocka_unit_test(test_error_detail_and_hint),
      cmocka_unit_test(test_error_message_truncated_safely),
      cmocka_unit_test(test_error_format_full),
      cmocka_unit_test(test_error_format_parts_optional),
      cmocka_unit_test(test_error_format_truncates_to_buffer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
