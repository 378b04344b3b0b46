/*
 * DESIGN: unit tests for src/base/redact — the one redaction rule. Each case gives an input
 * holding a known password and asserts the exact output: the password is gone, "***" stands in
 * its place, everything else (and so every line and most columns) is as it was, and the
 * tracked offset of a caret still points at the same token.
 * Threads: the main thread.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/log.h"
#include "base/redact.h"

static char *sql_of(const char *in, size_t *track) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_redact_sql(in, strlen(in), &b, track);
  return ck_buf_detach(&b);
}

static char *text_of(const char *in) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_redact_text(in, strlen(in), &b);
  return ck_buf_detach(&b);
}

#define ASSERT_SQL(in, want)                  \
  do {                                        \
    char *got_ = sql_of(in, NULL);            \
    assert_string_equal(got_, want);          \
    ck_free(got_);                            \
  } while (0)

#define ASSERT_TEXT(in, want)                 \
  do {                                        \
    char *got_ = text_of(in);                 \
    assert_string_equal(got_, want);          \
    ck_free(got_);                            \
  } while (0)

static void test_secret_names(void **state) {
  const char *yes[] = {"password", "PASSWORD", "sasl.password", "kafka.sasl.password",
                       "ssl.key.password", "kafka.ssl.keystore.password", "client_secret",
                       "sasl.oauthbearer.client.secret", "auth_token", "token", "secret",
                       "sslpassword", "ssl.key.pem", "kafka.sasl.jaas.config", "api_key",
                       "private.key", "credentials", "pwd", "aws.access-key"};
  const char *no[] = {"password_env", "token_file", "ssl.key.location", "dsn", "user",
                      "connector", "key", "key.format", "fields.id.kind", "table", "topic",
                      "passwords_are_fine_to_count", "tokens_per_second_x"};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
    if (!ck_redact_is_secret_name(yes[i], strlen(yes[i]))) fail_msg("'%s' is a secret", yes[i]);
  for (size_t i = 0; i < sizeof no / sizeof *no; i++)
    if (ck_redact_is_secret_name(no[i], strlen(no[i]))) fail_msg("'%s' is no secret", no[i]);
}

static void test_sql_with_options(void **state) {
  ASSERT_SQL("CREATE TABLE t (a INT) WITH (connector = 'clickhouse', password = 'Hunter2-ch-pw',"
             " user = 'u')",
             "CREATE TABLE t (a INT) WITH (connector = 'clickhouse', password = '***',"
             " user = 'u')");
  ASSERT_SQL("WITH (kafka.sasl.password='k-Secret-1', kafka.ssl.key.password = 'x')",
             "WITH (kafka.sasl.password='***', kafka.ssl.key.password = '***')");
  ASSERT_SQL("WITH ('password' = 'quoted-key-pw', \"token\" = 'tok')",
             "WITH ('password' = '***', \"token\" = '***')");
  /* a value with quotes and a line break: the line count holds */
  ASSERT_SQL("WITH (password = 'it''s a\nsecret', b = 'x')",
             "WITH (password = '***\n', b = 'x')");
  /* unterminated: to the end */
  ASSERT_SQL("WITH (password = 'never-closed", "WITH (password = '***");
  /* not a secret: kept; password_env names a variable */
  ASSERT_SQL("WITH (password_env = 'PGPASS', fields.password.kind = 'random')",
             "WITH (password_env = 'PGPASS', fields.password.kind = 'random')");
}

static void test_sql_connection_strings(void **state) {
  ASSERT_SQL("WITH (dsn = 'host=db port=5432 password=Pg-Secret-9 user=app')",
             "WITH (dsn = 'host=db port=5432 password=*** user=app')");
  ASSERT_SQL("WITH (dsn = 'password=''a b c'' host=db')", "WITH (dsn = 'password=''***'' host=db')");
  ASSERT_SQL("WITH (dsn = 'postgresql://app:Uri-Secret-7@db:5432/x?sslmode=off')",
             "WITH (dsn = 'postgresql://app:***@db:5432/x?sslmode=off')");
  ASSERT_SQL("WITH (dsn = 'postgresql://app@db/x?password=q-Secret&sslmode=off')",
             "WITH (dsn = 'postgresql://app@db/x?password=***&sslmode=off')");
  ASSERT_SQL("SELECT 'postgres://u:pw-in-select@h/d' FROM t",
             "SELECT 'postgres://u:***@h/d' FROM t");
  /* a URI without a password, and one with a user only: unchanged */
  ASSERT_SQL("WITH (dsn = 'postgresql://app@db:5432/x', url = 'http://h:80/p')",
             "WITH (dsn = 'postgresql://app@db:5432/x', url = 'http://h:80/p')");
  /* comments are shown in excerpts too */
  ASSERT_SQL("-- password=Comment-Pw1 here\nSELECT 1",
             "-- password=*** here\nSELECT 1");
}

static void test_sql_tracks_a_position(void **state) {
  const char *in = "WITH (password = 'Long-Password-123', rowz = '5')";
  size_t at = (size_t)(strstr(in, "rowz") - in);
  char *out = sql_of(in, &at);
  assert_string_equal(out, "WITH (password = '***', rowz = '5')");
  assert_int_equal(at, (size_t)(strstr(out, "rowz") - out));
  ck_free(out);
  /* inside the masked value: where the mask starts */
  at = (size_t)(strstr(in, "Password-123") - in);
  out = sql_of(in, &at);
  assert_int_equal(at, (size_t)(strstr(out, "***") - out));
  ck_free(out);
}

static void test_text_and_remembered_values(void **state) {
  ASSERT_TEXT("could not connect to postgresql://app:Text-Secret-1@db/x: refused",
              "could not connect to postgresql://app:***@db/x: refused");
  ASSERT_TEXT("dsn 'host=db password=Text-Secret-2' failed", "dsn 'host=db password=***' failed");
  ASSERT_TEXT("sasl.password=\"Text Secret 3\" rejected", "sasl.password=\"***\" rejected");
  ASSERT_TEXT("no secret here: a = b, x == y", "no secret here: a = b, x == y");
  /* once seen, a value is masked wherever it appears again */
  ASSERT_SQL("WITH (password = 'Remember-Me-42')", "WITH (password = '***')");
  ASSERT_TEXT("option 'x' must be an integer, not 'Remember-Me-42'",
              "option 'x' must be an integer, not '***'");
  ck_redact_remember("short", 5); /* too short to search for */
  ASSERT_TEXT("a short word", "a short word");
  ck_buf_t b;
  ck_buf_init(&b);
  ck_redact_option("ssl.key.password", "Opt-Secret-55", &b);
  assert_string_equal(b.data, "***");
  ck_buf_reset(&b);
  ck_redact_option("dsn", "user=a password=Opt-Secret-56", &b);
  assert_string_equal(b.data, "user=a password=***");
  ck_buf_fini(&b);
  ASSERT_TEXT("echo Opt-Secret-55 and Opt-Secret-56", "echo *** and ***");
}

static void test_errors_and_logs_are_redacted_at_the_source(void **state) {
  ck_redact_remember("Err-Secret-777", 14);
  ck_error_t err;
  ck_error_clear(&err);
  ck_error_set(&err, CK_EIO, "could not connect with 'host=h password=Err-Inline-1': %s",
               "server said Err-Secret-777 is wrong");
  ck_error_detail(&err, "uri postgresql://u:Err-Inline-2@h/d");
  ck_error_hint(&err, "check Err-Secret-777");
  assert_null(strstr(err.message, "Err-Inline-1"));
  assert_null(strstr(err.message, "Err-Secret-777"));
  assert_null(strstr(err.detail, "Err-Inline-2"));
  assert_null(strstr(err.hint, "Err-Secret-777"));
  assert_non_null(strstr(err.message, "password=***"));
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  ck_log_set_fd(fds[1]);
  CK_LOG_ERR("test", "connecting to postgresql://u:Log-Inline-3@h/d with Err-Secret-777");
  ck_log_set_fd(-1);
  char line[512] = "";
  ssize_t n = read(fds[0], line, sizeof line - 1);
  assert_true(n > 0);
  line[n] = 0;
  assert_string_equal(line, "[test] error: connecting to postgresql://u:***@h/d with ***\n");
  close(fds[0]);
  close(fds[1]);
}

/* Random inputs over the characters the scanners care about: no crash or overflow (ASan), the
 * output is one NUL-terminated string, in place the result fits its buffer, and a tracked
 * offset stays inside the output. Deterministic (a fixed seed). */
static void test_random_inputs_never_break_the_scanners(void **state) {
  static const char alphabet[] = "pasword=' \"\n:/@?&-*tokenkey._\\xyz";
  uint64_t seed = 0x5eed;
  char in[96];
  for (int iter = 0; iter < 20000; iter++) {
    size_t n = 0, len = (size_t)(seed % 90);
    for (; n < len; n++) {
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      in[n] = alphabet[(seed >> 33) % (sizeof alphabet - 1)];
    }
    in[n] = 0;
    size_t at = n ? (size_t)(seed % n) : 0;
    ck_buf_t b;
    ck_buf_init(&b);
    ck_redact_sql(in, n, &b, &at);
    assert_non_null(b.data);
    assert_true(at <= b.len);
    assert_int_equal(strlen(b.data), b.len);
    ck_buf_reset(&b);
    ck_redact_text(in, n, &b);
    assert_non_null(b.data);
    assert_int_equal(strlen(b.data), b.len);
    ck_buf_fini(&b);
    char copy[96];
    memcpy(copy, in, n + 1);
    ck_redact_inplace(copy, sizeof copy);
    assert_true(strlen(copy) < sizeof copy);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_secret_names),
      cmocka_unit_test(test_sql_with_options),
      cmocka_unit_test(test_sql_connection_strings),
      cmocka_unit_test(test_sql_tracks_a_position),
      cmocka_unit_test(test_text_and_remembered_values),
      cmocka_unit_test(test_errors_and_logs_are_redacted_at_the_source),
      cmocka_unit_test(test_random_inputs_never_break_the_scanners),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
