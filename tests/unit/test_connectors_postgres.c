/*
 * DESIGN: unit tests for the PostgreSQL sink's pure pieces (connectors/postgres.h), no server:
 * the COPY text encoding of every type (NULL, escapes, float specials, decimals, timestamps
 * with and without a zone, before year 1), which PostgreSQL column types hold which SQL type,
 * the password-free description of a connection string or URI, the prepared-transaction
 * names, and the connector's descriptor, option table and plan-time check. The sink against a
 * real server is test_connectors_postgres_server.c. Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>

#include "connectors/connectors.h"
#include "connectors/postgres.h"
#include "test_connectors_util.h"

static char *copy_rows(const ck_batch_t *b, const uint8_t *tz) {
  ck_buf_t out;
  ck_buf_init(&out);
  for (size_t i = 0; i < b->nrows; i++) ck_pg_copy_row(b, i, tz, &out);
  return ck_buf_detach(&out);
}

static void test_copy_text_encodes_every_type(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_schema_t s = t_schema(&arena, "a BOOLEAN, b INT, c BIGINT, d FLOAT, e DOUBLE, "
                                   "f DECIMAL(10,2), g VARCHAR, h TIMESTAMP, i TIMESTAMP");
  ck_batch_t *b = t_batch(&s);
  /* row 0: ordinary values */
  ck_col_append_bool(&b->cols[0], true);
  ck_col_append_i32(&b->cols[1], -2147483647 - 1);
  ck_col_append_i64(&b->cols[2], INT64_MAX);
  ck_col_append_f32(&b->cols[3], 0.1f);
  ck_col_append_f64(&b->cols[4], 0.1);
  ck_col_append_dec(&b->cols[5], -1230);
  const char *tricky = "tab\there\nline\\back\rcr \"q\" 'a' \xc3\xa9\xe2\x82\xac";
  ck_col_append_str(&b->cols[6], tricky, strlen(tricky));
  ck_col_append_i64(&b->cols[7], 1700000000123);
  ck_col_append_i64(&b->cols[8], 1700000000123);
  /* row 1: NULLs, an empty string, specials */
  ck_col_append_bool(&b->cols[0], false);
  ck_col_append_null(&b->cols[1]);
  ck_col_append_i64(&b->cols[2], 0);
  ck_col_append_f32(&b->cols[3], -INFINITY);
  ck_col_append_f64(&b->cols[4], NAN);
  ck_col_append_dec(&b->cols[5], 5);
  ck_col_append_str(&b->cols[6], "", 0);
  ck_col_append_i64(&b->cols[7], -62135596800000 - 86400000); /* 0000-12-31 = 1 BC */
  ck_col_append_null(&b->cols[8]);
  /* row 2: a string that is exactly "\N" must not read back as NULL */
  ck_col_append_null(&b->cols[0]);
  ck_col_append_i32(&b->cols[1], 7);
  ck_col_append_i64(&b->cols[2], -1);
  ck_col_append_f32(&b->cols[3], 3.0e38f);
  ck_col_append_f64(&b->cols[4], 1e300);
  ck_col_append_dec(&b->cols[5], 100);
  ck_col_append_str(&b->cols[6], "\\N", 2);
  ck_col_append_i64(&b->cols[7], -1);
  ck_col_append_i64(&b->cols[8], 0);
  ck_batch_seal(b);
  uint8_t tz[9] = {0, 0, 0, 0, 0, 0, 0, 0, 1};
  char *got = copy_rows(b, tz);
  const char *want =
      "t\t-2147483648\t9223372036854775807\t0.100000001\t0.10000000000000001\t-12.30\t"
      "tab\\there\\nline\\\\back\\rcr \"q\" 'a' \xc3\xa9\xe2\x82\xac\t"
      "2023-11-14 22:13:20.123\t2023-11-14 22:13:20.123+00\n"
      "f\t\\N\t0\t-Infinity\tNaN\t0.05\t\t0001-12-31 00:00:00.000 BC\t\\N\n"
      "\\N\t7\t-1\t3.00000001e+38\t1.0000000000000001e+300\t1.00\t\\\\N\t"
      "1969-12-31 23:59:59.999\t"
      "1970-01-01 00:00:00.000+00\n";
  assert_string_equal(got, want);
  ck_free(got);
  /* without the zone array no timestamp gets "+00" */
  got = copy_rows(b, NULL);
  assert_null(strstr(got, "+00"));
  ck_free(got);
  ck_batch_free(b);
  ck_arena_fini(&arena);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* numeric(p, s) as PostgreSQL encodes it in atttypmod */
static int numeric_mod(int p, int s) { return ((p << 16) | (s & 0x7ff)) + 4; }

static void test_type_fits_only_without_loss(void **state) {
  ck_type_t i32 = CK_TYPE(CK_T_INT32), i64 = CK_TYPE(CK_T_INT64), f32 = CK_TYPE(CK_T_FLOAT32),
            f64 = CK_TYPE(CK_T_FLOAT64), str = CK_TYPE(CK_T_STRING), ts = CK_TYPE(CK_T_TIMESTAMP),
            b = CK_TYPE(CK_T_BOOL), dec = {CK_T_DECIMAL, 10, 2};
  assert_true(ck_pg_type_fits(b, "bool", -1));
  assert_false(ck_pg_type_fits(b, "int4", -1));
  assert_true(ck_pg_type_fits(i32, "int4", -1));
  assert_true(ck_pg_type_fits(i32, "int8", -1));
  assert_true(ck_pg_type_fits(i32, "float8", -1));
  assert_false(ck_pg_type_fits(i32, "int2", -1));
  assert_false(ck_pg_type_fits(i32, "float4", -1));
  assert_true(ck_pg_type_fits(i32, "numeric", -1));
  assert_true(ck_pg_type_fits(i32, "numeric", numeric_mod(10, 0)));
  assert_false(ck_pg_type_fits(i32, "numeric", numeric_mod(9, 0)));
  assert_true(ck_pg_type_fits(i64, "int8", -1));
  assert_false(ck_pg_type_fits(i64, "int4", -1));
  assert_false(ck_pg_type_fits(i64, "float8", -1));
  assert_true(ck_pg_type_fits(i64, "numeric", numeric_mod(19, 0)));
  assert_false(ck_pg_type_fits(i64, "numeric", numeric_mod(20, 2)));
  assert_false(ck_pg_type_fits(i64, "numeric", numeric_mod(25, -2))); /* rounds to hundreds */
  assert_true(ck_pg_type_fits(f32, "float4", -1));
  assert_true(ck_pg_type_fits(f32, "float8", -1));
  assert_true(ck_pg_type_fits(f64, "float8", -1));
  assert_false(ck_pg_type_fits(f64, "float4", -1));
  assert_false(ck_pg_type_fits(f64, "numeric", -1));
  assert_true(ck_pg_type_fits(dec, "numeric", -1));
  assert_true(ck_pg_type_fits(dec, "numeric", numeric_mod(10, 2)));
  assert_true(ck_pg_type_fits(dec, "numeric", numeric_mod(12, 3)));
  assert_false(ck_pg_type_fits(dec, "numeric", numeric_mod(10, 1)));  /* fewer fraction digits */
  assert_false(ck_pg_type_fits(dec, "numeric", numeric_mod(9, 2)));   /* fewer integer digits */
  assert_false(ck_pg_type_fits(dec, "float8", -1));
  assert_true(ck_pg_type_fits(str, "text", -1));
  assert_true(ck_pg_type_fits(str, "varchar", 14));
  assert_false(ck_pg_type_fits(str, "bpchar", 14));
  assert_false(ck_pg_type_fits(str, "int8", -1));
  assert_true(ck_pg_type_fits(ts, "timestamp", -1));
  assert_true(ck_pg_type_fits(ts, "timestamptz", 3));
  assert_true(ck_pg_type_fits(ts, "timestamp", 6));
  assert_false(ck_pg_type_fits(ts, "timestamp", 0));                  /* drops milliseconds */
  assert_false(ck_pg_type_fits(ts, "int8", -1));
  assert_false(ck_pg_type_fits(ts, "date", -1));
}

static void test_describe_dsn_never_shows_the_password(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  struct {
    const char *dsn, *want;
  } cases[] = {
      {"postgresql://clink:s3cret@127.0.0.1:21432/clink", "127.0.0.1:21432/clink as clink"},
      {"postgres://u:pw%40x@db.example/app?sslmode=disable", "db.example:default/app as u"},
      {"host=10.0.0.5 port=5433 dbname=app user=bob password=hunter2", "10.0.0.5:5433/app as bob"},
      {"host=/run/pg dbname=x password='a b'", "/run/pg:default/x"},
      {"dbname=only", "default:default/only"},
  };
  for (size_t i = 0; i < CK_ARRAY_LEN(cases); i++) {
    ck_buf_t b;
    ck_buf_init(&b);
    assert_true(ck_pg_describe_dsn(cases[i].dsn, &b));
    assert_string_equal(b.data, cases[i].want);
    ck_buf_fini(&b);
  }
  ck_buf_t b;
  ck_buf_init(&b);
  assert_false(ck_pg_describe_dsn("host=x password=abc nonsense", &b));
  assert_false(ck_pg_describe_dsn("postgresql://u:p@h:notaport/db", &b) && strstr(b.data, "p@"));
  assert_false(ck_pg_describe_dsn("bogus_option=1 password=zzz", &b));
  assert_true(b.len == 0 || !strstr(b.data, "zzz"));
  ck_buf_fini(&b);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void test_gid_names_are_stable_and_own(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  char a[96], b[96], c[96], d[96], job[64];
  ck_pg_gid_prefix("/jobs/a.sql", "out", "public.t", 0, 0, a, sizeof a, job, sizeof job);
  ck_pg_gid_prefix("/jobs/a.sql", "out", "public.t", 0, 0, b, sizeof b, NULL, 0);
  assert_string_equal(a, b);                                /* a rerun finds its own */
  assert_int_equal(strlen(a), strlen("clink_") + 16 + strlen("_0_"));
  assert_int_equal(strncmp(a, "clink_", 6), 0);
  assert_int_equal(strncmp(a, job, strlen(job)), 0);
  assert_string_equal(a + strlen(job), "0_");
  ck_pg_gid_prefix("/jobs/a.sql", "out", "public.t", 0, 1, c, sizeof c, NULL, 0);
  assert_string_not_equal(a, c);
  assert_int_equal(strncmp(a, c, strlen(job)), 0);          /* same job, another subtask */
  ck_pg_gid_prefix("/jobs/b.sql", "out", "public.t", 0, 0, d, sizeof d, NULL, 0);
  assert_string_not_equal(a, d);
  ck_pg_gid_prefix("/jobs/a.sql", "out", "public.u", 0, 0, d, sizeof d, NULL, 0);
  assert_string_not_equal(a, d);
  ck_pg_gid_prefix("/jobs/a.sql", "out2", "public.t", 0, 0, d, sizeof d, NULL, 0);
  assert_string_not_equal(a, d);
  ck_pg_gid_prefix("/jobs/a.sql", "out", "public.t", 1, 0, d, sizeof d, NULL, 0);
  assert_string_not_equal(a, d);                            /* a second sink node */
  char gid[128];
  int64_t ck = 0;
  snprintf(gid, sizeof gid, "%s%d", a, 42);
  assert_true(ck_pg_gid_ckpt(gid, a, &ck));
  assert_int_equal(ck, 42);
  snprintf(gid, sizeof gid, "%s%d", c, 42); /* subtask 1 is not subtask 0's */
  assert_false(ck_pg_gid_ckpt(gid, a, &ck));
  snprintf(gid, sizeof gid, "%s42x", a);
  assert_false(ck_pg_gid_ckpt(gid, a, &ck));
  snprintf(gid, sizeof gid, "%s", a);
  assert_false(ck_pg_gid_ckpt(gid, a, &ck));
  snprintf(gid, sizeof gid, "%s99999999999999999999", a);   /* overflow */
  assert_false(ck_pg_gid_ckpt(gid, a, &ck));
  /* subtask 1 of 11: prefixes never nest */
  ck_pg_gid_prefix("/jobs/a.sql", "out", "public.t", 0, 11, d, sizeof d, NULL, 0);
  snprintf(gid, sizeof gid, "%s5", d);
  char one[96];
  ck_pg_gid_prefix("/jobs/a.sql", "out", "public.t", 0, 1, one, sizeof one, NULL, 0);
  assert_false(ck_pg_gid_ckpt(gid, one, &ck));
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void test_descriptor_options_and_check(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_connectors_register_all();
  const ck_connector_t *c = ck_connector_find("postgres");
  assert_ptr_equal(c, &ck_postgres_connector);
  assert_null(c->source);
  assert_non_null(c->sink);
  assert_non_null(c->sink->recover);
  assert_int_equal(c->sink_guarantee, CK_GUARANTEE_EXACTLY_ONCE);
  for (const ck_opt_def_t *d = c->sink_options; d->name; d++)
    if (!d->description || strlen(d->description) < 15)
      fail_msg("option '%s' is undocumented", d->name);
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_schema_t s = t_schema(&arena, "a BIGINT");
  const ck_opt_def_t *const tables[] = {c->sink_options, ck_sink_common_options};
  ck_error_t err;
  ck_error_clear(&err);
  ck_options_t good = t_opts(&arena, "dsn", "postgresql://u:pw@h/db", "table", "t",
                             "delivery_guarantee", "exactly_once", "batch_rows", "500",
                             "password_env", "PGPW", NULL);
  assert_int_equal(ck_options_validate(&good, tables, 2, "table 'x'", &err), 0);
  assert_int_equal(c->check(&s, &good, true, &err), 0);
  ck_options_t typo = t_opts(&arena, "dsn", "x", "tabel", "t", NULL);
  assert_int_equal(ck_options_validate(&typo, tables, 2, "table 'x'", &err), CK_EOPTION);
  assert_string_equal(err.hint, "did you mean 'table'?");
  struct {
    ck_options_t opts;
    const char *says;
  } bad[] = {
      {t_opts(&arena, "table", "t", NULL), "needs option 'dsn'"},
      {t_opts(&arena, "dsn", "dbname=x", NULL), "needs option 'table'"},
      {t_opts(&arena, "dsn", "nonsense password=letmein", "table", "t", NULL),
       "neither a libpq connection string"},
      {t_opts(&arena, "dsn", "dbname=x", "table", "t", "format", "csv", NULL), "'format'"},
      {t_opts(&arena, "dsn", "dbname=x", "table", "t", "batch_rows", "0", NULL), "batch_rows"},
  };
  for (size_t i = 0; i < CK_ARRAY_LEN(bad); i++) {
    ck_error_clear(&err);
    assert_int_equal(c->check(&s, &bad[i].opts, true, &err), CK_EOPTION);
    if (!strstr(err.message, bad[i].says))
      fail_msg("case %zu: '%s' lacks '%s'", i, err.message, bad[i].says);
    assert_null(strstr(err.message, "letmein"));
  }
  ck_arena_fini(&arena);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_copy_text_encodes_every_type),
      cmocka_unit_test(test_type_fits_only_without_loss),
      cmocka_unit_test(test_describe_dsn_never_shows_the_password),
      cmocka_unit_test(test_gid_names_are_stable_and_own),
      cmocka_unit_test(test_descriptor_options_and_check),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
