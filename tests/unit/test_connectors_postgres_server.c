/*
 * DESIGN: the PostgreSQL sink (connectors/postgres.c) against the real server
 * scripts/services.sh starts, found through CLINK_PG_DSN (a missing variable fails the test,
 * naming it). The tests drive the sink ops the way the executor does and look at the table
 * and pg_prepared_xacts through a separate libpq connection, so every expectation is checked
 * outside the code under test. Each test makes its own table and job name (process id and
 * time), and drops the table and rolls back any transaction of its own at the end. A "crash"
 * is closing a sink without commit: what a killed process leaves (prepared transactions
 * survive; an open one dies with the connection).
 *
 * Covered: exactly once — rows invisible until commit, commit(N) commits every own prepared
 * transaction up to N, an empty interval prepares nothing, recover(R) commits up to R and
 * rolls back after it (idempotently), a fresh open rolls back orphans (also of subtasks the
 * job no longer has), a renamed job keeps its checkpoint's transaction names, two sink nodes
 * writing one table (two INSERT INTO it) keep apart, finish without
 * checkpoints commits; at least once — each batch_rows COPY commits on its own; every type
 * and tricky strings round-trip; open refuses a missing table, a missing column (listing the
 * table's), a type that would lose information (naming both types), an unwritten NOT NULL
 * column, a view; a wrong password is never shown; password_env; update streams refused.
 * Every test ends at zero live blocks.
 *
 * Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <libpq-fe.h>

#include "base/log.h"
#include "base/time.h"
#include "connectors/connectors.h"
#include "test_connectors_util.h"

typedef struct fx {
  PGconn *admin;
  char table[64], job[128];
  ck_arena_t arena;
  ck_schema_t schema;
  ck_options_t eos, alo;
  int64_t blocks;
} fx_t;

static const char *dsn(void) {
  const char *d = getenv("CLINK_PG_DSN");
  if (!d || !*d)
    fail_msg("CLINK_PG_DSN is not set: start the services and export their settings first: "
             "scripts/services.sh start && eval \"$(scripts/services.sh env)\"");
  return d;
}

static PGresult *q(fx_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static PGresult *q(fx_t *f, const char *fmt, ...) {
  char sql[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sql, sizeof sql, fmt, ap);
  va_end(ap);
  PGresult *r = PQexec(f->admin, sql);
  ExecStatusType st = PQresultStatus(r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
    fail_msg("%s: %s", sql, PQresultErrorMessage(r));
  return r;
}

static void exec_sql(fx_t *f, const char *sql) { PQclear(q(f, "%s", sql)); }

/* The single value of a query, as a ck_strdup'd string ("" for NULL). */
static char *scalar(fx_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *scalar(fx_t *f, const char *fmt, ...) {
  char sql[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sql, sizeof sql, fmt, ap);
  va_end(ap);
  PGresult *r = q(f, "%s", sql);
  char *v = ck_strdup(PQntuples(r) ? PQgetvalue(r, 0, 0) : "");
  PQclear(r);
  return v;
}

static long count_rows(fx_t *f) {
  char *v = scalar(f, "SELECT count(*) FROM %s", f->table);
  long n = atol(v);
  ck_free(v);
  return n;
}

/* Prepared transactions holding a lock on this test's table (whoever prepared them). */
#define OWN_PREPARED_SQL                                                                     \
  "FROM pg_prepared_xacts x WHERE EXISTS (SELECT 1 FROM pg_locks t JOIN pg_locks l ON "      \
  "l.virtualtransaction = t.virtualtransaction WHERE t.locktype = 'transactionid' AND "      \
  "t.transactionid = x.transaction AND l.locktype = 'relation' AND "                         \
  "l.relation = to_regclass('%s'))"

static long count_prepared(fx_t *f) {
  char *v = scalar(f, "SELECT count(*) " OWN_PREPARED_SQL, f->table);
  long n = atol(v);
  ck_free(v);
  return n;
}

static int setup(void **state) {
  fx_t *f = calloc(1, sizeof *f);
  f->blocks = ck_mem_stats().live_blocks;
  f->admin = PQconnectdb(dsn());
  if (PQstatus(f->admin) != CONNECTION_OK) fail_msg("connect: %s", PQerrorMessage(f->admin));
  static int seq;
  snprintf(f->table, sizeof f->table, "ckunit_pg_%d_%lld_%d", (int)getpid(),
           (long long)(ck_wall_ms() % 100000000), ++seq);
  snprintf(f->job, sizeof f->job, "/nonexistent/job_%s.sql", f->table);
  exec_sql(f, "SET client_min_messages = warning");
  exec_sql(f, "SET lock_timeout = '20s'"); /* a leftover lock fails the test, never hangs it */
  PQclear(q(f, "CREATE TABLE %s (id bigint, name text, extra int DEFAULT 7)", f->table));
  ck_arena_init(&f->arena, 4096);
  f->schema = t_schema(&f->arena, "id BIGINT, name VARCHAR");
  f->eos = t_opts(&f->arena, "dsn", dsn(), "table", f->table, "delivery_guarantee",
                  "exactly_once", NULL);
  f->alo = t_opts(&f->arena, "dsn", dsn(), "table", f->table, "batch_rows", "2", NULL);
  *state = f;
  return 0;
}

/* Rolls back every prepared transaction on this test's table (a failed test's leftovers). */
static void rollback_own(fx_t *f) {
  PGresult *r = q(f, "SELECT x.gid " OWN_PREPARED_SQL, f->table);
  for (int i = 0; i < PQntuples(r); i++)
    PQclear(q(f, "ROLLBACK PREPARED '%s'", PQgetvalue(r, i, 0)));
  PQclear(r);
}

static int teardown(void **state) {
  fx_t *f = *state;
  rollback_own(f);
  PQclear(q(f, "DROP TABLE IF EXISTS %s", f->table));
  PQfinish(f->admin);
  ck_arena_fini(&f->arena);
  assert_int_equal(ck_mem_stats().live_blocks, f->blocks);
  free(f);
  return 0;
}

static ck_sink_t mk_sink(fx_t *f, const ck_options_t *opts, int subtask, int par) {
  return (ck_sink_t){ck_postgres_connector.sink, {"out", &f->schema, opts, subtask, par, f->job},
                     NULL};
}

static ck_batch_t *rows(fx_t *f, int from, int n) {
  ck_batch_t *b = t_batch(&f->schema);
  char name[32];
  for (int i = 0; i < n; i++) {
    ck_col_append_i64(&b->cols[0], from + i);
    int len = snprintf(name, sizeof name, "r%d", from + i);
    ck_col_append_str(&b->cols[1], name, (size_t)len);
  }
  ck_batch_seal(b);
  return b;
}

static void write_ok(fx_t *f, ck_sink_t *s, int from, int n) {
  t_sink_write(s, rows(f, from, n));
}

/* "1,2,3" — the ids in the table, ascending */
static char *ids(fx_t *f) {
  return scalar(f, "SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM %s", f->table);
}

static void assert_ids(fx_t *f, const char *want) {
  char *got = ids(f);
  if (strcmp(got, want)) fail_msg("table %s holds ids [%s], want [%s]", f->table, got, want);
  ck_free(got);
}

static void test_rows_are_invisible_until_commit(void **state) {
  fx_t *f = *state;
  ck_sink_t s = mk_sink(f, &f->eos, 0, 1);
  t_sink_open(&s, false);
  ck_buf_t st;
  ck_buf_init(&st);
  write_ok(f, &s, 1, 3);
  t_sink_prepare(&s, 1, &st);
  assert_int_equal(count_rows(f), 0);
  assert_int_equal(count_prepared(f), 1);
  write_ok(f, &s, 4, 2);
  t_sink_prepare(&s, 2, &st);
  t_sink_prepare(&s, 3, &st);                /* empty interval: nothing prepared */
  assert_int_equal(count_prepared(f), 2);
  write_ok(f, &s, 6, 1);
  t_sink_prepare(&s, 4, &st);
  t_sink_commit(&s, 2);                      /* 1 and 2, not 4 */
  assert_ids(f, "1,2,3,4,5");
  assert_int_equal(count_prepared(f), 1);
  t_sink_commit(&s, 2);                      /* nothing left up to 2 */
  t_sink_commit(&s, 4);
  assert_ids(f, "1,2,3,4,5,6");
  assert_int_equal(count_prepared(f), 0);
  char *extra = scalar(f, "SELECT string_agg(DISTINCT extra::text, ',') FROM %s", f->table);
  assert_string_equal(extra, "7");       /* unwritten column: its default */
  ck_free(extra);
  t_sink_finish(&s);
  s.ops->close(&s);
  ck_buf_fini(&st);
}

static void test_recover_commits_up_to_r_and_rolls_back_after(void **state) {
  fx_t *f = *state;
  ck_sink_t a = mk_sink(f, &f->eos, 0, 1);
  t_sink_open(&a, false);
  ck_buf_t s1, s2, s3;
  ck_buf_init(&s1);
  ck_buf_init(&s2);
  ck_buf_init(&s3);
  write_ok(f, &a, 1, 2);
  t_sink_prepare(&a, 1, &s1);
  write_ok(f, &a, 3, 2);
  t_sink_prepare(&a, 2, &s2);                /* 1 and 2 completed; the commit never ran */
  write_ok(f, &a, 5, 2);
  t_sink_prepare(&a, 3, &s3);                /* 3 never completed */
  write_ok(f, &a, 7, 5);                 /* the open interval (still buffered) */
  a.ops->close(&a);                      /* the crash */
  assert_int_equal(count_prepared(f), 3);
  assert_int_equal(count_rows(f), 0);

  ck_sink_t b = mk_sink(f, &f->eos, 0, 1);
  t_sink_open(&b, true);
  assert_int_equal(count_prepared(f), 3); /* a restored open leaves them to recover */
  t_sink_recover(&b, 2, &s2);
  assert_ids(f, "1,2,3,4");
  assert_int_equal(count_prepared(f), 0);
  b.ops->close(&b);

  ck_sink_t c = mk_sink(f, &f->eos, 0, 1);
  t_sink_open(&c, true);
  t_sink_recover(&c, 2, &s2);                /* again: nothing changes */
  assert_ids(f, "1,2,3,4");
  write_ok(f, &c, 5, 2);                 /* the replay */
  t_sink_prepare(&c, 4, &s3);
  t_sink_commit(&c, 4);
  t_sink_finish(&c);
  c.ops->close(&c);
  assert_ids(f, "1,2,3,4,5,6");
  ck_buf_fini(&s1);
  ck_buf_fini(&s2);
  ck_buf_fini(&s3);
}

static void test_fresh_open_rolls_back_orphans(void **state) {
  fx_t *f = *state;
  ck_buf_t st, st_other;
  ck_buf_init(&st);
  ck_buf_init(&st_other);
  /* a lineage at parallelism 2 leaves prepared transactions of both subtasks */
  ck_sink_t a0 = mk_sink(f, &f->eos, 0, 2), a1 = mk_sink(f, &f->eos, 1, 2);
  t_sink_open(&a0, false);
  t_sink_open(&a1, false);
  write_ok(f, &a0, 1, 1);
  write_ok(f, &a1, 2, 1);
  t_sink_prepare(&a0, 5, &st);
  t_sink_prepare(&a1, 5, &st);
  a0.ops->close(&a0);
  a1.ops->close(&a1);
  assert_int_equal(count_prepared(f), 2);
  /* another job's transaction on the same table is not ours to touch */
  ck_sink_t other = {ck_postgres_connector.sink, {"out", &f->schema, &f->eos, 0, 1, "/other.sql"},
                     NULL};
  t_sink_open(&other, false);
  write_ok(f, &other, 100, 1);
  t_sink_prepare(&other, 1, &st_other);
  other.ops->close(&other);
  assert_int_equal(count_prepared(f), 3);
  /* the same job started afresh at parallelism 1: subtask 0 rolls back its own and subtask 1's */
  ck_sink_t b = mk_sink(f, &f->eos, 0, 1);
  t_sink_open(&b, false);
  assert_int_equal(count_prepared(f), 1);
  write_ok(f, &b, 3, 1);
  t_sink_prepare(&b, 6, &st);
  t_sink_commit(&b, 6);
  t_sink_finish(&b);
  b.ops->close(&b);
  assert_ids(f, "3");
  /* the other job commits its own */
  ck_sink_t o2 = {ck_postgres_connector.sink, {"out", &f->schema, &f->eos, 0, 1, "/other.sql"},
                  NULL};
  t_sink_open(&o2, true);
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(o2.ops->recover(&o2, 1, st.data, st.len, &err), CK_ESTATE); /* b's state */
  t_sink_recover(&o2, 1, &st_other);
  o2.ops->close(&o2);
  assert_ids(f, "3,100");
  assert_int_equal(count_prepared(f), 0);
  ck_buf_fini(&st);
  ck_buf_fini(&st_other);
}

static void test_renamed_job_keeps_its_checkpoint_names(void **state) {
  fx_t *f = *state;
  ck_buf_t st;
  ck_buf_init(&st);
  ck_sink_t a = mk_sink(f, &f->eos, 0, 1);
  t_sink_open(&a, false);
  write_ok(f, &a, 1, 2);
  t_sink_prepare(&a, 3, &st);
  a.ops->close(&a);
  /* the rerun spells the script's path differently: its own name would not find the
   * transaction, the checkpoint's name does */
  ck_sink_t b = {ck_postgres_connector.sink, {"out", &f->schema, &f->eos, 0, 1, "./elsewhere.sql"},
                 NULL};
  t_sink_open(&b, true);
  t_sink_recover(&b, 3, &st);
  assert_ids(f, "1,2");
  write_ok(f, &b, 3, 1);
  t_sink_prepare(&b, 4, &st);
  assert_non_null(memmem(st.data, st.len, "clink_", 6));
  t_sink_commit(&b, 4);
  t_sink_finish(&b);
  b.ops->close(&b);
  assert_ids(f, "1,2,3");
  assert_int_equal(count_prepared(f), 0);
  ck_buf_fini(&st);
}

/* INSERT INTO the same table twice: two sink nodes with one job, one SQL table, one subtask */
static void test_two_sink_nodes_on_one_table_do_not_collide(void **state) {
  fx_t *f = *state;
  ck_buf_t sa, sb;
  ck_buf_init(&sa);
  ck_buf_init(&sb);
  ck_sink_t a = mk_sink(f, &f->eos, 0, 1), b = mk_sink(f, &f->eos, 0, 1);
  t_sink_open(&a, false);
  t_sink_open(&b, false);
  write_ok(f, &a, 1, 2);
  write_ok(f, &b, 10, 2);
  t_sink_prepare(&a, 1, &sa);
  t_sink_prepare(&b, 1, &sb);
  assert_int_equal(count_prepared(f), 2);
  t_sink_commit(&a, 1);
  t_sink_commit(&b, 1);
  assert_ids(f, "1,2,10,11");
  write_ok(f, &a, 3, 1);
  write_ok(f, &b, 12, 1);
  t_sink_prepare(&a, 2, &sa);
  t_sink_prepare(&b, 2, &sb);
  a.ops->close(&a);                      /* the crash, after checkpoint 2 completed */
  b.ops->close(&b);
  /* the rerun opens them the other way round: each takes its names from its own state */
  ck_sink_t b2 = mk_sink(f, &f->eos, 0, 1), a2 = mk_sink(f, &f->eos, 0, 1);
  t_sink_open(&b2, true);
  t_sink_open(&a2, true);
  t_sink_recover(&b2, 2, &sb);
  assert_ids(f, "1,2,10,11,12");
  t_sink_recover(&a2, 2, &sa);
  assert_ids(f, "1,2,3,10,11,12");
  assert_int_equal(count_prepared(f), 0);
  write_ok(f, &a2, 4, 1);
  write_ok(f, &b2, 13, 1);
  t_sink_prepare(&a2, 3, &sa);
  t_sink_prepare(&b2, 3, &sb);
  t_sink_commit(&b2, 3);
  t_sink_commit(&a2, 3);
  t_sink_finish(&a2);
  t_sink_finish(&b2);
  a2.ops->close(&a2);
  b2.ops->close(&b2);
  assert_ids(f, "1,2,3,4,10,11,12,13");
  ck_buf_fini(&sa);
  ck_buf_fini(&sb);
}

static void test_recover_refuses_a_wrong_state(void **state) {
  fx_t *f = *state;
  ck_buf_t st;
  ck_buf_init(&st);
  ck_sink_t a = mk_sink(f, &f->eos, 0, 1);
  t_sink_open(&a, false);
  write_ok(f, &a, 1, 1);
  t_sink_prepare(&a, 3, &st);
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(a.ops->recover(&a, 4, st.data, st.len, &err), CK_ESTATE);
  ck_error_clear(&err);
  assert_int_equal(a.ops->recover(&a, 3, st.data, st.len - 1, &err), CK_ESTATE);
  ck_error_clear(&err);
  assert_int_equal(a.ops->recover(&a, 3, "\x07", 1, &err), CK_ESTATE);
  a.ops->close(&a);
  ck_buf_fini(&st);
}

static void test_finish_without_checkpoints_commits(void **state) {
  fx_t *f = *state;
  ck_sink_t s = mk_sink(f, &f->eos, 0, 1);
  t_sink_open(&s, false);
  write_ok(f, &s, 1, 3);
  t_sink_finish(&s);
  s.ops->close(&s);
  assert_ids(f, "1,2,3");
  assert_int_equal(count_prepared(f), 0);
}

static void test_at_least_once_commits_each_batch(void **state) {
  fx_t *f = *state;
  ck_sink_t s = mk_sink(f, &f->alo, 0, 1);
  t_sink_open(&s, false);
  ck_buf_t st;
  ck_buf_init(&st);
  write_ok(f, &s, 1, 1);
  assert_int_equal(count_rows(f), 0);    /* below batch_rows = 2 */
  write_ok(f, &s, 2, 2);
  assert_ids(f, "1,2,3");                /* committed on its own */
  write_ok(f, &s, 4, 1);
  t_sink_prepare(&s, 1, &st);
  assert_ids(f, "1,2,3,4");              /* flushed at the barrier */
  assert_int_equal(count_prepared(f), 0);
  t_sink_commit(&s, 1);
  write_ok(f, &s, 5, 1);
  t_sink_finish(&s);
  s.ops->close(&s);
  assert_ids(f, "1,2,3,4,5");
  /* a restored at-least-once sink has nothing to recover */
  ck_sink_t b = mk_sink(f, &f->alo, 0, 1);
  t_sink_open(&b, true);
  t_sink_recover(&b, 1, &st);
  b.ops->close(&b);
  ck_buf_fini(&st);
}

static void test_every_type_round_trips(void **state) {
  fx_t *f = *state;
  exec_sql(f, "SET timezone = 'UTC'");
  char tname[96];
  snprintf(tname, sizeof tname, "%s_types", f->table);
  PQclear(q(f, "CREATE TABLE %s (b boolean, i integer, l bigint, r real, d double precision, "
               "n numeric(12,3), s varchar, t timestamp(3), tz timestamptz)", tname));
  ck_schema_t s = t_schema(&f->arena, "B BOOLEAN, i INT, l BIGINT, r FLOAT, d DOUBLE, "
                                      "n DECIMAL(10,2), s VARCHAR, t TIMESTAMP, tz TIMESTAMP");
  ck_options_t opts = t_opts(&f->arena, "dsn", dsn(), "table", tname, "delivery_guarantee",
                             "exactly_once", NULL);
  ck_sink_t sink = {ck_postgres_connector.sink, {"typed", &s, &opts, 0, 1, f->job}, NULL};
  t_sink_open(&sink, false);
  ck_batch_t *b = t_batch(&s);
  const char *tricky = "a\tb\nc\\d\re \"q\" 'x' \\N \xc3\xa9\xe2\x82\xac";
  ck_col_append_bool(&b->cols[0], true);
  ck_col_append_i32(&b->cols[1], -2147483647 - 1);
  ck_col_append_i64(&b->cols[2], INT64_MIN);
  ck_col_append_f32(&b->cols[3], 0.1f);
  ck_col_append_f64(&b->cols[4], 0.1);
  ck_col_append_dec(&b->cols[5], -99999999);
  ck_col_append_str(&b->cols[6], tricky, strlen(tricky));
  ck_col_append_i64(&b->cols[7], 1700000000123);
  ck_col_append_i64(&b->cols[8], -1);
  for (int c = 0; c < 9; c++) ck_col_append_null(&b->cols[c]);
  ck_batch_seal(b);
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(sink.ops->write(&sink, b, &err), 0);
  ck_batch_free(b);
  ck_buf_t st;
  ck_buf_init(&st);
  t_sink_prepare(&sink, 1, &st);
  t_sink_commit(&sink, 1);
  t_sink_finish(&sink);
  sink.ops->close(&sink);
  ck_buf_fini(&st);
  PGresult *r = q(f, "SELECT b, i, l, r = 0.1::real, d = 0.1::float8, n, s, t, tz, "
                     "(SELECT count(*) FROM %s WHERE b IS NULL AND i IS NULL AND l IS NULL AND "
                     "r IS NULL AND d IS NULL AND n IS NULL AND s IS NULL AND t IS NULL AND tz "
                     "IS NULL) FROM %s WHERE b IS NOT NULL", tname, tname);
  assert_int_equal(PQntuples(r), 1);
  const char *want[] = {"t", "-2147483648", "-9223372036854775808", "t", "t", "-999999.990",
                        tricky, "2023-11-14 22:13:20.123", "1969-12-31 23:59:59.999+00", "1"};
  for (int c = 0; c < 10; c++)
    if (strcmp(PQgetvalue(r, 0, c), want[c]))
      fail_msg("column %d reads back as '%s', want '%s'", c, PQgetvalue(r, 0, c), want[c]);
  PQclear(r);
  PQclear(q(f, "DROP TABLE %s", tname));
}

/* Opens a sink expecting failure; returns the rendered error (ck_free). */
static char *open_fails(fx_t *f, const ck_schema_t *schema, const ck_options_t *opts, int code) {
  ck_sink_t s = {ck_postgres_connector.sink, {"out", schema, opts, 0, 1, f->job}, NULL};
  ck_error_t err;
  ck_error_clear(&err);
  int rc = s.ops->open(&s, false, &err);
  assert_null(s.impl); /* the executor never closes a sink whose open failed: nothing may leak */
  char text[2048];
  ck_error_format(&err, text, sizeof text);
  if (rc != code) fail_msg("open returned %d, want %d: %s", rc, code, text);
  return ck_strdup(text);
}

static void assert_has(const char *text, const char *part) {
  if (!strstr(text, part)) fail_msg("'%s' does not say '%s'", text, part);
}

static void test_open_refuses_what_does_not_fit(void **state) {
  fx_t *f = *state;
  char *e;
  ck_options_t missing = t_opts(&f->arena, "dsn", dsn(), "table", "no_such_table_ckunit", NULL);
  e = open_fails(f, &f->schema, &missing, CK_ENOTFOUND);
  assert_has(e, "table 'no_such_table_ckunit' does not exist");
  ck_free(e);
  ck_schema_t extra = t_schema(&f->arena, "id BIGINT, nme VARCHAR");
  e = open_fails(f, &extra, &f->eos, CK_EBIND);
  assert_has(e, "has no column 'nme'");
  assert_has(e, "its columns are: id, name, extra");
  ck_free(e);
  ck_schema_t wide = t_schema(&f->arena, "id BIGINT, extra BIGINT");
  e = open_fails(f, &wide, &f->eos, CK_ETYPE);
  assert_has(e, "column 'extra'");
  assert_has(e, "is integer");
  assert_has(e, "BIGINT");
  ck_free(e);
  char nn[96];
  snprintf(nn, sizeof nn, "%s_nn", f->table);
  PQclear(q(f, "CREATE TABLE %s (id bigint, must text NOT NULL, fine int NOT NULL DEFAULT 1, "
               "ident bigint GENERATED BY DEFAULT AS IDENTITY)", nn));
  ck_options_t nnopts = t_opts(&f->arena, "dsn", dsn(), "table", nn, NULL);
  ck_schema_t idonly = t_schema(&f->arena, "id BIGINT");
  e = open_fails(f, &idonly, &nnopts, CK_EBIND);
  assert_has(e, "column 'must'");
  assert_has(e, "NOT NULL without a default");
  ck_free(e);
  PQclear(q(f, "DROP TABLE %s", nn));
  char view[96];
  snprintf(view, sizeof view, "%s_v", f->table);
  PQclear(q(f, "CREATE VIEW %s AS SELECT * FROM %s", view, f->table));
  ck_options_t vopts = t_opts(&f->arena, "dsn", dsn(), "table", view, NULL);
  e = open_fails(f, &f->schema, &vopts, CK_EUNSUPPORTED);
  assert_has(e, "is not a table");
  ck_free(e);
  PQclear(q(f, "DROP VIEW %s", view));
}

static void test_passwords_are_never_shown(void **state) {
  fx_t *f = *state;
  /* The test server may trust loopback connections, so a wrong password alone would connect:
   * make the server refuse, and make its refusal quote the secret (the role is named like
   * the password), so the message must be scrubbed. */
  ck_buf_t bad;
  ck_buf_init(&bad);
  ck_buf_printf(&bad, "host=%s port=%s dbname=%s user=Wr0ngPassw0rd_xyz password=Wr0ngPassw0rd_xyz "
                      "connect_timeout=5", PQhost(f->admin), PQport(f->admin), PQdb(f->admin));
  ck_options_t opts = t_opts(&f->arena, "dsn", bad.data, "table", f->table, NULL);
  ck_log_set_level(CK_LOG_OFF); /* the retries' warnings; their text is the same scrubbed one */
  char *e = open_fails(f, &f->schema, &opts, CK_ECONNECT);
  ck_log_set_level(CK_LOG_INFO);
  assert_null(strstr(e, "Wr0ngPassw0rd_xyz"));
  assert_has(e, "could not connect to PostgreSQL at");
  assert_has(e, "***");                       /* the server did quote it */
  ck_free(e);
  /* a URI with a password: the description keeps host, port, database and user only */
  ck_buf_t uri;
  ck_buf_init(&uri);
  ck_buf_printf(&uri, "postgresql://%s:Sekr1t_pw@%s:%s/%s", PQuser(f->admin), PQhost(f->admin),
                PQport(f->admin), PQdb(f->admin));
  ck_options_t uopts = t_opts(&f->arena, "dsn", uri.data, "table", "no_such_table_ckunit", NULL);
  e = open_fails(f, &f->schema, &uopts, CK_ENOTFOUND);
  assert_null(strstr(e, "Sekr1t_pw"));
  assert_has(e, PQuser(f->admin));
  ck_free(e);
  ck_buf_fini(&uri);
  /* password_env is applied, and an unset variable is named */
  setenv("CKUNIT_PG_PASSWORD", PQpass(f->admin), 1);
  ck_buf_reset(&bad);
  ck_buf_printf(&bad, "host=%s port=%s dbname=%s user=%s password=wrong", PQhost(f->admin),
                PQport(f->admin), PQdb(f->admin), PQuser(f->admin));
  ck_options_t envopts = t_opts(&f->arena, "dsn", bad.data, "table", f->table, "password_env",
                                "CKUNIT_PG_PASSWORD", NULL);
  ck_sink_t s = {ck_postgres_connector.sink, {"out", &f->schema, &envopts, 0, 1, f->job}, NULL};
  t_sink_open(&s, false);
  write_ok(f, &s, 1, 1);
  t_sink_finish(&s);
  s.ops->close(&s);
  assert_ids(f, "1");
  unsetenv("CKUNIT_PG_PASSWORD");
  e = open_fails(f, &f->schema, &envopts, CK_EOPTION);
  assert_has(e, "'CKUNIT_PG_PASSWORD'");
  ck_free(e);
  ck_buf_fini(&bad);
}

static void test_update_streams_are_refused(void **state) {
  fx_t *f = *state;
  ck_sink_t s = mk_sink(f, &f->eos, 0, 1);
  t_sink_open(&s, false);
  ck_batch_t *b = rows(f, 1, 2);
  b->kinds = ck_calloc(b->nrows, 1);
  b->kinds[1] = CK_ROW_UPDATE_AFTER;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(s.ops->write(&s, b, &err), CK_EUNSUPPORTED);
  assert_has(err.message, "cannot write an update stream");
  ck_batch_free(b);
  s.ops->close(&s);
  assert_int_equal(count_rows(f), 0);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(test_rows_are_invisible_until_commit),
      T(test_recover_commits_up_to_r_and_rolls_back_after),
      T(test_fresh_open_rolls_back_orphans),
      T(test_renamed_job_keeps_its_checkpoint_names),
      T(test_two_sink_nodes_on_one_table_do_not_collide),
      T(test_recover_refuses_a_wrong_state),
      T(test_finish_without_checkpoints_commits),
      T(test_at_least_once_commits_each_batch),
      T(test_every_type_round_trips),
      T(test_open_refuses_what_does_not_fit),
      T(test_passwords_are_never_shown),
      T(test_update_streams_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
