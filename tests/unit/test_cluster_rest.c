/*
 * DESIGN: unit tests for the coordinator's REST request path without sockets — the guard and
 * the submit body reader, through a detached coordinator (ck_coordinator_detached_new) — and
 * a replay of the REST fuzz target's seed corpus (fuzz/rest_request.c is compiled in here, its
 * properties abort on a violation), so every ctest run checks the corpus still holds.
 *
 * Bodies are handed over in heap buffers of exactly their length plus the one NUL the HTTP
 * layer guarantees, so under ASan a read past a body's end is a report, not luck.
 * Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "cluster/coordinator.h"
#include "cluster/http.h"

/* The fuzz target itself: its LLVMFuzzerTestOneInput replays the seeds below. */
#include "../../fuzz/rest_request.c"

#define SQL                                                                                   \
  "CREATE TABLE g (k BIGINT, ts BIGINT) WITH (connector = 'datagen', rows = '10', "         \
  "'fields.k.kind' = 'sequence', 'fields.k.start' = '0', 'fields.k.end' = '3', "            \
  "event_time_column = 'ts');\n"                                                            \
  "CREATE TABLE out (k BIGINT, n BIGINT) WITH (connector = 'file', "                        \
  "path = '/tmp/clink-unit-rest-never-written.json');\n"                                              \
  "INSERT INTO out SELECT k, COUNT(*) AS n FROM g GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k;"

/* SQL as a JSON string: newlines escaped. */
static void put_sql_json(ck_buf_t *b) {
  for (const char *p = SQL; *p; p++) {
    if (*p == '\n') ck_buf_puts(b, "\\n");
    else if (*p == '\'') ck_buf_puts(b, "\\u0027"); /* exercise \u escapes */
    else ck_buf_putc(b, *p);
  }
}

static int post(ck_coordinator_t *co, const char *path, const char *body, size_t len,
                const char *ctype, const char *auth, ck_buf_t *answer) {
  char *exact = malloc(len + 1);
  assert_non_null(exact);
  memcpy(exact, body, len);
  exact[len] = 0;
  ck_http_req_t req = {.method = "POST", .path = path, .query = "", .body = exact,
                       .body_len = len, .authorization = auth, .content_type = ctype};
  ck_http_resp_t resp;
  ck_http_resp_init(&resp);
  ck_coordinator_detached_http(co, &req, &resp);
  int status = resp.status;
  if (answer) {
    ck_buf_reset(answer);
    if (resp.body.len) ck_buf_append(answer, resp.body.data, resp.body.len);
  }
  if (status >= 400 && strncmp(resp.body.data, "{\"error\":\"", 10) != 0)
    fail_msg("a %d without a JSON error: %s", status, resp.body.data);
  ck_http_resp_fini(&resp);
  free(exact);
  return status;
}

static ck_coordinator_t *detached(const char *host, const char *token) {
  ck_coordinator_opts_t o = {.host = host, .http_port = -1,
                             .checkpoint_dir = "/tmp/clink-unit-rest", .auth_token = token};
  return ck_coordinator_detached_new(&o);
}

/* Every prefix of a valid body is refused with a reason; only the whole body submits. */
static void test_rest_submit_body_cut_anywhere(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_buf_t body, answer;
  ck_buf_init(&body);
  ck_buf_init(&answer);
  ck_buf_puts(&body, " {\"name\": \"caf\\u00e9 \\ud83d\\ude00\", \"sql\": \"");
  put_sql_json(&body);
  ck_buf_puts(&body, "\", \"parallelism\": 2}");
  ck_coordinator_t *co = detached("127.0.0.1", NULL);
  for (size_t len = 0; len < body.len; len++) {
    int status = post(co, "/api/v1/jobs/sql", body.data, len, "application/json", NULL, &answer);
    if (status != 400) fail_msg("a body cut at %zu of %zu bytes gave %d: %s", len, body.len,
                                status, answer.data);
  }
  int status = post(co, "/api/v1/jobs/sql", body.data, body.len, "application/json", NULL,
                    &answer);
  if (status != 201) fail_msg("the whole body gave %d: %s", status, answer.data);
  assert_non_null(strstr(answer.data, "\"id\":1"));
  ck_coordinator_detached_free(co);
  ck_buf_fini(&body);
  ck_buf_fini(&answer);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* Bodies that are refused for what they hold, each with its reason. */
static void test_rest_submit_bodies_refused_with_a_reason(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  static const struct {
    const char *body;
    size_t len; /* 0: strlen */
    const char *why;
  } cases[] = {
      {"", 0, "the body must be a JSON object (it is empty)"},
      {"{\"sql\": \"SELECT 1\\u0000 AND 2\"}", 0, "a NUL character (\\\\u0000) at offset 17"},
      {"{\"sql\": \"SELECT 1\0 AND 2\"}", 25, "a NUL byte at offset 17"},
      {"{\"sql\": \"\\ud800x\"}", 0, "an unpaired surrogate \\\\ud800"},
      {"{\"sql\": \"\\udc00\"}", 0, "an unpaired surrogate \\\\udc00"},
      {"{\"sql\": \"\\u12g4\"}", 0, "needs four hex digits"},
      {"{\"sql\": \"\\q\"}", 0, "an invalid escape '\\\\q'"},
      {"{\"sql\": \"x\"} {}", 0, "something follows the object at offset 13"},
      {"{\"sql\": \"x\", \"parallelism\": 4097}", 0, "from 1 to 4096"},
      {"{\"sql\": \"x\", \"parallelism\": 99999999999999999999}", 0, "from 1 to 4096"},
      {"{\"sql\": \"x\", \"parallelism\": -1}", 0, "from 1 to 4096"},
      {"{\"sql\": \"x\", \"name\": \"a\\nb\"}", 0, "byte 2 is the control character U+000A"},
      {"{\"sql\": \"x\", \"name\": \"\\u009b[1m\"}", 0, "control character U+009B"},
      {"{\"sql\": \"x\", \"name\": \"\\udbff\\udfff\"}", 0, "SQL"}, /* a valid name: the SQL fails */
      {"{\"name\": \"n\"}", 0, "needs a non-empty \\\"sql\\\""},
      {"{\"sql\": 5}", 0, "'sql' must be a JSON string"},
      {"{\"extra\": 1}", 0, "unknown field 'extra'"},
  };
  ck_coordinator_t *co = detached("127.0.0.1", NULL);
  ck_buf_t answer;
  ck_buf_init(&answer);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    size_t len = cases[i].len ? cases[i].len : strlen(cases[i].body);
    int status = post(co, "/api/v1/jobs/sql", cases[i].body, len, "application/json", NULL,
                      &answer);
    if (status != 400 || (strcmp(cases[i].why, "SQL") && !strstr(answer.data, cases[i].why)))
      fail_msg("case %zu: %d %s (expected 400 with \"%s\")", i, status, answer.data,
               cases[i].why);
  }
  ck_buf_fini(&answer);
  ck_coordinator_detached_free(co);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* The guard in front of the coordinator's routes: content type, token, refused writes. */
static void test_rest_guard_of_the_coordinator(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_buf_t body;
  ck_buf_init(&body);
  ck_buf_puts(&body, "{\"sql\": \"");
  put_sql_json(&body);
  ck_buf_puts(&body, "\"}");
  const char *p = "/api/v1/jobs/sql";

  ck_coordinator_t *co = detached("127.0.0.1", NULL);
  assert_int_equal(post(co, p, body.data, body.len, "text/plain", NULL, NULL), 415);
  assert_int_equal(post(co, p, body.data, body.len, NULL, NULL, NULL), 415);
  assert_int_equal(post(co, "/api/v1/jobs/1/cancel", "", 0, NULL, NULL, NULL), 415);
  assert_int_equal(post(co, p, body.data, body.len, "application/json", NULL, NULL), 201);
  assert_int_equal(post(co, "/api/v1/jobs/1/cancel", "", 0, "application/json", NULL, NULL), 200);
  ck_coordinator_detached_free(co);

  co = detached("0.0.0.0", NULL); /* non-loopback, no token: writes refused */
  assert_int_equal(post(co, p, body.data, body.len, "application/json", NULL, NULL), 403);
  ck_coordinator_detached_free(co);

  co = detached("0.0.0.0", "t0k");
  assert_int_equal(post(co, p, body.data, body.len, "application/json", NULL, NULL), 401);
  assert_int_equal(post(co, p, body.data, body.len, "application/json", "Bearer t0", NULL), 401);
  assert_int_equal(post(co, p, body.data, body.len, "application/json", "Bearer t0k", NULL),
                   201);
  ck_coordinator_detached_free(co);
  ck_buf_fini(&body);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* Every seed of the fuzz target, through the target (its properties abort on a violation). */
static void test_rest_fuzz_seeds_hold(void **state) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", __FILE__);
  char *slash = strrchr(dir, '/');
  assert_non_null(slash);
  snprintf(slash, sizeof dir - (size_t)(slash - dir), "/../../fuzz/corpus/rest_request");
  DIR *d = opendir(dir);
  if (!d) fail_msg("no seed corpus at %s", dir);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "rb");
    if (!f) continue;
    ck_buf_t in;
    ck_buf_init(&in);
    char chunk[4096];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) ck_buf_append(&in, chunk, got);
    fclose(f);
    LLVMFuzzerTestOneInput((const uint8_t *)in.data, in.len);
    ck_buf_fini(&in);
    n++;
  }
  closedir(d);
  if (n < 20) fail_msg("only %d seeds in %s", n, dir);
}

int main(void) {
  ck_log_set_level(CK_LOG_OFF);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rest_submit_body_cut_anywhere),
      cmocka_unit_test(test_rest_submit_bodies_refused_with_a_reason),
      cmocka_unit_test(test_rest_guard_of_the_coordinator),
      cmocka_unit_test(test_rest_fuzz_seeds_hold),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
