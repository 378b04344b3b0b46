/*
 * DESIGN: the reconciliation's session (src/incident/reconcile_read.c) against the real
 * ClickHouse servers of both tested lines (18.16 and 26.9, CLINK_CLICKHOUSE_PORT and
 * CLINK_CLICKHOUSE26_PORT): read only twice over — through the very session the reconciliation
 * reads with, an INSERT and a CREATE are refused by the server with code 164 (READONLY) and the
 * table is unchanged, while a SELECT works; bounded — a result past max_result_rows, a
 * statement past max_execution_time and a server slower than the client's receive timeout each
 * fail the statement whole, as a bound (ck_rdest_bound), and nothing of the answer is kept; and
 * key literals that try to break out of their quotes are read as data.
 * A plain client (no readonly) makes and drops the scratch table. Threads: the main thread.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connectors/clickhouse/ch_client.h"
#include "incident/reconcile_read.h"

static const char *const PORTS[] = {"CLINK_CLICKHOUSE_PORT", "CLINK_CLICKHOUSE26_PORT"};

static int port_of(int line) {
  const char *p = getenv(PORTS[line]);
  if (!p) fail_msg("%s is not set: eval \"$(scripts/services.sh env)\" first", PORTS[line]);
  return atoi(p);
}

static ck_ch_client_t *admin(int port) {
  ck_ch_conf_t cc = {.host = "127.0.0.1", .port = port, .user = "default", .password = "",
                     .connect_timeout_ms = 5000, .receive_timeout_ms = 30000,
                     .send_timeout_ms = 30000};
  ck_ch_client_t *c = NULL;
  ck_error_t err = {0};
  if (ck_ch_client_open(&cc, &c, &err)) fail_msg("admin connection: %s", err.message);
  return c;
}

static void admin_sql(ck_ch_client_t *c, const char *sql) {
  ck_error_t err = {0};
  if (ck_ch_query(c, sql, NULL, 0, NULL, NULL, &err)) fail_msg("%s: %s", sql, err.message);
}

static void session(int port, int64_t max_rows, int max_exec, int recv_ms, ck_rdest_t *d) {
  ck_rdest_conf_t conf = {.host = "127.0.0.1", .port = port, .user = "clink",
                          .password = "clink", .max_rows = max_rows,
                          .max_execution_s = max_exec, .receive_timeout_ms = recv_ms};
  ck_error_t err = {0};
  if (ck_rdest_open(d, &conf, &err)) fail_msg("reconcile session: %s", err.message);
}

static int count_rows(void *arg, const ck_ch_block_t *b, ck_error_t *err) {
  (void)err;
  *(int64_t *)arg += (int64_t)b->rows;
  return 0;
}

static void one_line(int line) {
  int port = port_of(line);
  char table[64], sql[512];
  snprintf(table, sizeof table, "default.rcn_ro_%d_%d", (int)getpid(), line);
  ck_ch_client_t *a = admin(port);
  snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", table);
  admin_sql(a, sql);
  snprintf(sql, sizeof sql, "CREATE TABLE %s (id Int64, s String) ENGINE = MergeTree ORDER BY id",
           table);
  admin_sql(a, sql);
  snprintf(sql, sizeof sql, "INSERT INTO %s SELECT number, 'x' FROM system.numbers LIMIT 3", table);
  admin_sql(a, sql);

  ck_rdest_t d;
  session(port, 1000, 30, 30000, &d);
  int64_t rows = 0;
  ck_error_t err = {0};
  snprintf(sql, sizeof sql, "SELECT id, s FROM %s", table);
  assert_int_equal(ck_rdest_query(&d, sql, count_rows, &rows, &err), 0);
  assert_int_equal(rows, 3);
  /* a write through the same session: refused by the server, READONLY */
  ck_error_clear(&err);
  snprintf(sql, sizeof sql, "INSERT INTO %s SELECT 99, 'w'", table);
  assert_int_not_equal(ck_rdest_query(&d, sql, NULL, NULL, &err), 0);
  assert_int_equal(err.origin_code, 164);
  assert_false(ck_rdest_bound(&err));
  if (!d.client) session(port, 1000, 30, 30000, &d);
  ck_error_clear(&err);
  snprintf(sql, sizeof sql, "CREATE TABLE %s_w (a Int8) ENGINE = Memory", table);
  assert_int_not_equal(ck_rdest_query(&d, sql, NULL, NULL, &err), 0);
  assert_int_equal(err.origin_code, 164);
  if (!d.client) session(port, 1000, 30, 30000, &d);
  ck_error_clear(&err);
  snprintf(sql, sizeof sql, "ALTER TABLE %s DELETE WHERE 1", table);
  assert_int_not_equal(ck_rdest_query(&d, sql, NULL, NULL, &err), 0);
  assert_int_equal(err.origin_code, 164);
  ck_rdest_close(&d);
  /* nothing was written: the plain client still reads the 3 rows */
  rows = 0;
  snprintf(sql, sizeof sql, "SELECT id FROM %s", table);
  err = (ck_error_t){0};
  assert_int_equal(ck_ch_query(a, sql, NULL, 0, count_rows, &rows, &err), 0);
  assert_int_equal(rows, 3);

  /* a literal that tries to end its quotes is one string value */
  session(port, 1000, 30, 30000, &d);
  ck_buf_t q;
  ck_buf_init(&q);
  ck_buf_printf(&q, "SELECT id FROM %s WHERE s = ", table);
  const char evil[] = "x' OR 1 = 1 OR s = '\\' --\n\x01";
  ck_rdest_quote_str(evil, sizeof evil - 1, &q);
  rows = 0;
  ck_error_clear(&err);
  assert_int_equal(ck_rdest_query(&d, q.data, count_rows, &rows, &err), 0);
  assert_int_equal(rows, 0);
  ck_buf_fini(&q);
  ck_rdest_close(&d);

  /* bounds: rows past max_result_rows fail whole */
  session(port, 10, 30, 30000, &d);
  rows = 0;
  ck_error_clear(&err);
  assert_int_not_equal(ck_rdest_query(&d, "SELECT number FROM system.numbers LIMIT 100000",
                                      count_rows, &rows, &err), 0);
  assert_true(ck_rdest_bound(&err));
  ck_rdest_close(&d);
  /* past max_execution_time */
  session(port, 1000, 1, 30000, &d);
  ck_error_clear(&err);
  assert_int_not_equal(ck_rdest_query(&d, "SELECT count() FROM system.numbers WHERE number % 7 = 3",
                                      NULL, NULL, &err),
                       0);
  assert_true(ck_rdest_bound(&err));
  ck_rdest_close(&d);
  /* a server slower than the client's own receive timeout */
  session(port, 1000, 30, 300, &d);
  ck_error_clear(&err);
  assert_int_not_equal(ck_rdest_query(&d, "SELECT sleep(2)", NULL, NULL, &err), 0);
  assert_true(ck_rdest_bound(&err));
  assert_null(d.client); /* out of step: never reused */
  ck_rdest_close(&d);

  snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", table);
  admin_sql(a, sql);
  ck_ch_client_free(a);
}

static void test_clickhouse_18_16(void **state) {
  (void)state;
  one_line(0);
}

static void test_clickhouse_26_9(void **state) {
  (void)state;
  one_line(1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_clickhouse_18_16),
      cmocka_unit_test(test_clickhouse_26_9),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
