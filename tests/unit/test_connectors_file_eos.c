/*
 * DESIGN: unit tests for the file sink's exactly-once mode (connectors/file.c,
 * delivery_guarantee = 'exactly_once'), driven through the sink ops the executor calls, over
 * mkdtemp directories. A "crash" is closing the sink without commit (what close() leaves is
 * what a killed process leaves: staged files on disk), and a rerun is a new sink opened with
 * restored = true and given recover(R, state of R).
 *
 * Covered: rows stay staged (hidden file) until commit; commit promotes every prepared
 * interval up to N in order; an empty interval stages nothing; recover re-commits what R's
 * commit may not have done — including a half-appended commit — and drops intervals after R
 * and their staged files; a commit that finished is not repeated; a file changed outside the
 * job is an error; a failed open leaves nothing allocated (the executor never closes it); a
 * fresh open truncates and removes stale staging files but not those of another output;
 * finish without checkpoints writes everything; the CSV header is written once; the
 * at-least-once mode stages nothing. Every test ends at zero live blocks.
 * Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "connectors/connectors.h"
#include "test_connectors_util.h"

typedef struct fx {
  char *dir, *out;
  ck_arena_t arena;
  ck_schema_t schema;
  ck_options_t opts;
  int64_t blocks;
} fx_t;

static int setup(void **state) {
  fx_t *f = calloc(1, sizeof *f);
  f->blocks = ck_mem_stats().live_blocks;
  f->dir = t_tmpdir();
  f->out = t_path(f->dir, "out.json");
  ck_arena_init(&f->arena, 4096);
  f->schema = t_schema(&f->arena, "id BIGINT, name VARCHAR");
  f->opts = t_opts(&f->arena, "path", f->out, "delivery_guarantee", "exactly_once", NULL);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx_t *f = *state;
  t_rmtree(f->dir);
  ck_free(f->dir);
  ck_free(f->out);
  ck_arena_fini(&f->arena);
  assert_int_equal(ck_mem_stats().live_blocks, f->blocks); /* nothing leaked */
  free(f);
  return 0;
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

/* The JSON lines rows(from, n) encode to. */
static char *lines(int from, int n) {
  ck_buf_t b;
  ck_buf_init(&b);
  for (int i = 0; i < n; i++)
    ck_buf_printf(&b, "{\"id\":%d,\"name\":\"r%d\"}\n", from + i, from + i);
  if (!b.data) ck_buf_puts(&b, "");
  return ck_buf_detach(&b);
}

static ck_sink_t mk_sink(fx_t *f, const ck_options_t *opts, int subtask, int par) {
  return (ck_sink_t){ck_file_connector.sink, {"t", &f->schema, opts, subtask, par, "job"}, NULL};
}

static void write_ok(fx_t *f, ck_sink_t *sink, int from, int n) {
  t_sink_write(sink, rows(f, from, n));
}

static void assert_file(const char *path, const char *want) {
  char *got = t_read(path, NULL);
  if (!got) fail_msg("'%s' does not exist", path);
  if (strcmp(got, want)) fail_msg("'%s' holds:\n%s\nwant:\n%s", path, got, want);
  ck_free(got);
}

static bool exists(const fx_t *f, const char *name) {
  char *p = t_path(f->dir, name);
  bool e = access(p, F_OK) == 0;
  ck_free(p);
  return e;
}

/* Every entry of the directory, sorted, joined by ' '. */
static char *listing(const fx_t *f) {
  DIR *d = opendir(f->dir);
  char *names[64];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < 64)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) names[n++] = ck_strdup(e->d_name);
  closedir(d);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (strcmp(names[i], names[j]) > 0) {
        char *t = names[i];
        names[i] = names[j];
        names[j] = t;
      }
  ck_buf_t b;
  ck_buf_init(&b);
  ck_buf_puts(&b, "");
  for (int i = 0; i < n; i++) {
    ck_buf_printf(&b, "%s%s", i ? " " : "", names[i]);
    ck_free(names[i]);
  }
  return ck_buf_detach(&b);
}

static void assert_listing(const fx_t *f, const char *want) {
  char *got = listing(f);
  if (strcmp(got, want)) fail_msg("directory holds '%s', want '%s'", got, want);
  ck_free(got);
}

static void test_rows_are_staged_until_commit(void **state) {
  fx_t *f = *state;
  assert_int_equal(ck_file_connector.sink_guarantee, CK_GUARANTEE_EXACTLY_ONCE);
  ck_sink_t sink = mk_sink(f, &f->opts, 0, 1);
  t_sink_open(&sink, false);
  ck_buf_t st;
  ck_buf_init(&st);
  write_ok(f, &sink, 1, 3);
  assert_listing(f, "out.json");                 /* buffered until the barrier (or 1 MiB) */
  t_sink_prepare(&sink, 1, &st);
  assert_true(st.len > 0);
  assert_file(f->out, "");                       /* not visible before the commit */
  assert_listing(f, ".out.json.1.staging out.json");
  char *want = lines(1, 3);
  char *sp = t_path(f->dir, ".out.json.1.staging");
  assert_file(sp, want);                         /* durable beside the output */
  ck_free(sp);
  t_sink_commit(&sink, 1);
  assert_file(f->out, want);
  assert_listing(f, "out.json");
  t_sink_commit(&sink, 1);                           /* idempotent */
  assert_file(f->out, want);
  ck_free(want);
  t_sink_finish(&sink);
  sink.ops->close(&sink);
  ck_buf_fini(&st);
}

static void test_a_large_interval_spills_to_the_pending_file(void **state) {
  fx_t *f = *state;
  ck_sink_t sink = mk_sink(f, &f->opts, 0, 1);
  t_sink_open(&sink, false);
  ck_buf_t st;
  ck_buf_init(&st);
  for (int i = 0; i < 60; i++) write_ok(f, &sink, 1 + i * 1000, 1000); /* ~2 MiB */
  assert_listing(f, ".out.json.pending.staging out.json");
  assert_file(f->out, "");
  t_sink_prepare(&sink, 9, &st);
  assert_listing(f, ".out.json.9.staging out.json");
  t_sink_commit(&sink, 9);
  char *want = lines(1, 60000);
  assert_file(f->out, want);
  ck_free(want);
  t_sink_finish(&sink);
  sink.ops->close(&sink);
  ck_buf_fini(&st);
}

static void test_commit_promotes_every_interval_up_to_n_in_order(void **state) {
  fx_t *f = *state;
  ck_sink_t sink = mk_sink(f, &f->opts, 0, 1);
  t_sink_open(&sink, false);
  ck_buf_t st;
  ck_buf_init(&st);
  write_ok(f, &sink, 1, 2);
  t_sink_prepare(&sink, 4, &st);
  t_sink_prepare(&sink, 5, &st);                     /* empty: stages nothing */
  assert_false(exists(f, ".out.json.5.staging"));
  write_ok(f, &sink, 3, 2);
  t_sink_prepare(&sink, 6, &st);
  write_ok(f, &sink, 5, 1);
  t_sink_prepare(&sink, 7, &st);
  t_sink_commit(&sink, 6);                           /* 4 and 6, not 7 */
  char *want = lines(1, 4);
  assert_file(f->out, want);
  ck_free(want);
  assert_listing(f, ".out.json.7.staging out.json");
  t_sink_commit(&sink, 7);
  want = lines(1, 5);
  assert_file(f->out, want);
  ck_free(want);
  assert_listing(f, "out.json");
  t_sink_finish(&sink);
  sink.ops->close(&sink);
  ck_buf_fini(&st);
}

/* The crash cases: R's commit not done, half done, done; an interval after R prepared. */
static void test_recover_recommits_and_drops_what_follows(void **state) {
  fx_t *f = *state;
  ck_sink_t a = mk_sink(f, &f->opts, 0, 1);
  t_sink_open(&a, false);
  ck_buf_t s1, s2, tmp;
  ck_buf_init(&s1);
  ck_buf_init(&s2);
  ck_buf_init(&tmp);
  write_ok(f, &a, 1, 2);
  t_sink_prepare(&a, 1, &s1);
  t_sink_commit(&a, 1);
  write_ok(f, &a, 3, 2);
  t_sink_prepare(&a, 2, &s2);                        /* 2 completes, its commit never runs */
  write_ok(f, &a, 5, 2);
  t_sink_prepare(&a, 3, &tmp);                       /* 3 never completes */
  write_ok(f, &a, 7, 1);                         /* the open interval */
  ck_error_t err;
  ck_error_clear(&err);
  a.ops->close(&a);                              /* the crash */
  char *pending = t_path(f->dir, ".out.json.pending.staging");
  t_writes(pending, "{\"id\":7}\n");              /* as a flush of the open interval leaves it */
  ck_free(pending);
  assert_listing(f, ".out.json.2.staging .out.json.3.staging .out.json.pending.staging out.json");

  /* rerun 1 restores 2: commits 2, drops 3 and the open interval */
  ck_sink_t b = mk_sink(f, &f->opts, 0, 1);
  t_sink_open(&b, true);
  t_sink_recover(&b, 2, &s2);
  char *want = lines(1, 4);
  assert_file(f->out, want);
  assert_listing(f, "out.json");
  b.ops->close(&b);

  /* rerun 2 restores 2 again (e.g. killed before its next checkpoint): nothing changes */
  ck_sink_t c = mk_sink(f, &f->opts, 0, 1);
  t_sink_open(&c, true);
  t_sink_recover(&c, 2, &s2);
  assert_file(f->out, want);
  ck_free(want);
  /* and it goes on from there */
  write_ok(f, &c, 5, 2);
  t_sink_prepare(&c, 4, &tmp);
  t_sink_commit(&c, 4);
  assert_int_equal(c.ops->finish(&c, &err), 0);
  c.ops->close(&c);
  want = lines(1, 6);
  assert_file(f->out, want);
  ck_free(want);
  ck_buf_fini(&s1);
  ck_buf_fini(&s2);
  ck_buf_fini(&tmp);
}

static void test_recover_redoes_a_half_appended_commit(void **state) {
  fx_t *f = *state;
  ck_sink_t a = mk_sink(f, &f->opts, 0, 1);
  t_sink_open(&a, false);
  ck_buf_t s1, s2;
  ck_buf_init(&s1);
  ck_buf_init(&s2);
  write_ok(f, &a, 1, 3);
  t_sink_prepare(&a, 1, &s1);
  t_sink_commit(&a, 1);
  write_ok(f, &a, 4, 3);
  t_sink_prepare(&a, 2, &s2);
  a.ops->close(&a);
  /* the crash came in the middle of commit(2)'s append: part of the rows, and a torn line */
  char *head = lines(1, 3), *more = lines(4, 3);
  ck_buf_t torn;
  ck_buf_init(&torn);
  ck_buf_puts(&torn, head);
  ck_buf_append(&torn, more, strlen(more) / 2 + 3);
  t_write(f->out, torn.data, torn.len);
  ck_buf_fini(&torn);
  ck_sink_t b = mk_sink(f, &f->opts, 0, 1);
  t_sink_open(&b, true);
  t_sink_recover(&b, 2, &s2);
  char *want = lines(1, 6);
  assert_file(f->out, want);
  assert_listing(f, "out.json");
  b.ops->close(&b);
  /* the same file with garbage where interval 2 should be: rewritten too */
  char *bad = ck_strdup(want);
  bad[strlen(head) + 2] = 'X';
  t_write(f->out, bad, strlen(bad));
  char *sp = t_path(f->dir, ".out.json.2.staging");
  t_write(sp, more, strlen(more));               /* as if the unlink had not been durable */
  ck_sink_t c = mk_sink(f, &f->opts, 0, 1);
  t_sink_open(&c, true);
  t_sink_recover(&c, 2, &s2);
  assert_file(f->out, want);
  c.ops->close(&c);
  ck_free(sp);
  ck_free(bad);
  ck_free(want);
  ck_free(head);
  ck_free(more);
  ck_buf_fini(&s1);
  ck_buf_fini(&s2);
}

static void test_recover_refuses_a_file_changed_outside_the_job(void **state) {
  fx_t *f = *state;
  ck_sink_t a = mk_sink(f, &f->opts, 0, 1);
  t_sink_open(&a, false);
  ck_buf_t s1;
  ck_buf_init(&s1);
  write_ok(f, &a, 1, 3);
  t_sink_prepare(&a, 1, &s1);
  t_sink_commit(&a, 1);
  a.ops->close(&a);
  t_writes(f->out, "{\"id\":1}\n"); /* someone truncated it */
  ck_sink_t b = mk_sink(f, &f->opts, 0, 1);
  t_sink_open(&b, true);
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(b.ops->recover(&b, 1, s1.data, s1.len, &err), CK_ESTATE);
  assert_non_null(strstr(err.message, "short of the"));
  assert_non_null(strstr(err.message, f->out));
  b.ops->close(&b);
  /* a corrupt state */
  ck_sink_t c = mk_sink(f, &f->opts, 0, 1);
  t_sink_open(&c, true);
  ck_error_clear(&err);
  assert_int_equal(c.ops->recover(&c, 1, s1.data, s1.len - 1, &err), CK_ESTATE);
  ck_error_clear(&err);
  assert_int_equal(c.ops->recover(&c, 7, s1.data, s1.len, &err), CK_ESTATE); /* not 7's state */
  c.ops->close(&c);
  ck_buf_fini(&s1);
}

static void test_fresh_open_truncates_and_removes_only_own_staging(void **state) {
  fx_t *f = *state;
  t_writes(f->out, "old\n");
  const char *names[] = {".out.json.3.staging", ".out.json.pending.staging",
                         ".out.json-1.3.staging", ".out.json.x3.staging", "out.json.3.staging",
                         ".out.json.12"};
  for (size_t i = 0; i < CK_ARRAY_LEN(names); i++) {
    char *p = t_path(f->dir, names[i]);
    t_writes(p, "stale\n");
    ck_free(p);
  }
  ck_sink_t sink = mk_sink(f, &f->opts, 0, 1);
  t_sink_open(&sink, false);
  assert_file(f->out, "");
  assert_listing(f, ".out.json-1.3.staging .out.json.12 .out.json.x3.staging out.json "
                    "out.json.3.staging");
  sink.ops->close(&sink);
}

static void test_finish_without_checkpoints_writes_everything(void **state) {
  fx_t *f = *state;
  ck_sink_t sink = mk_sink(f, &f->opts, 0, 1);
  t_sink_open(&sink, false);
  write_ok(f, &sink, 1, 2);
  write_ok(f, &sink, 3, 2);
  t_sink_finish(&sink);
  sink.ops->close(&sink);
  char *want = lines(1, 4);
  assert_file(f->out, want);
  ck_free(want);
  assert_listing(f, "out.json");
  /* a prepared interval still uncommitted at finish is a protocol error, not silently lost */
  ck_sink_t b = mk_sink(f, &f->opts, 0, 1);
  t_sink_open(&b, false);
  ck_buf_t st;
  ck_buf_init(&st);
  write_ok(f, &b, 1, 1);
  t_sink_prepare(&b, 1, &st);
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(b.ops->finish(&b, &err), CK_EINTERNAL);
  b.ops->close(&b);
  ck_buf_fini(&st);
}

static void test_parallel_paths_csv_header_once(void **state) {
  fx_t *f = *state;
  ck_options_t opts = t_opts(&f->arena, "path", f->out, "delivery_guarantee", "exactly_once",
                             "format", "csv", "csv.header", "true", NULL);
  ck_buf_t st;
  ck_buf_init(&st);
  ck_sink_t a = mk_sink(f, &opts, 1, 2);
  t_sink_open(&a, false);
  write_ok(f, &a, 1, 1);
  t_sink_prepare(&a, 1, &st);
  assert_true(exists(f, ".out.json-1.1.staging"));
  t_sink_commit(&a, 1);
  a.ops->close(&a);
  ck_sink_t b = mk_sink(f, &opts, 1, 2);
  t_sink_open(&b, true);
  t_sink_recover(&b, 1, &st);
  write_ok(f, &b, 2, 1);
  t_sink_prepare(&b, 2, &st);
  t_sink_commit(&b, 2);
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(b.ops->finish(&b, &err), 0);
  b.ops->close(&b);
  char *p = t_path(f->dir, "out.json-1");
  assert_file(p, "id,name\n1,r1\n2,r2\n");
  ck_free(p);
  assert_listing(f, "out.json-1");
  ck_buf_fini(&st);
}

static void test_a_failed_open_leaves_nothing_behind(void **state) {
  fx_t *f = *state;
  ck_options_t opts = t_opts(&f->arena, "path", f->dir, "delivery_guarantee", "exactly_once",
                             NULL); /* a directory */
  ck_options_t alo = t_opts(&f->arena, "path", f->dir, NULL);
  for (int eos = 0; eos < 2; eos++) {
    ck_sink_t sink = mk_sink(f, eos ? &opts : &alo, 0, 1);
    ck_error_t err;
    ck_error_clear(&err);
    assert_int_equal(sink.ops->open(&sink, false, &err), CK_EIO);
    assert_non_null(strstr(err.message, "could not open file"));
    assert_null(sink.impl); /* the executor never closes it: teardown counts the blocks */
  }
}

static void test_at_least_once_mode_stages_nothing(void **state) {
  fx_t *f = *state;
  ck_options_t opts = t_opts(&f->arena, "path", f->out, NULL);
  ck_sink_t sink = mk_sink(f, &opts, 0, 1);
  t_sink_open(&sink, false);
  ck_buf_t st;
  ck_buf_init(&st);
  write_ok(f, &sink, 1, 2);
  t_sink_prepare(&sink, 1, &st);
  char *want = lines(1, 2);
  assert_file(f->out, want);                     /* durable at the barrier, no commit needed */
  ck_free(want);
  assert_listing(f, "out.json");
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(sink.ops->recover(&sink, 1, st.data, st.len, &err), 0);
  assert_int_equal(sink.ops->finish(&sink, &err), 0);
  sink.ops->close(&sink);
  ck_buf_fini(&st);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(test_rows_are_staged_until_commit),
      T(test_a_large_interval_spills_to_the_pending_file),
      T(test_commit_promotes_every_interval_up_to_n_in_order),
      T(test_recover_recommits_and_drops_what_follows),
      T(test_recover_redoes_a_half_appended_commit),
      T(test_recover_refuses_a_file_changed_outside_the_job),
      T(test_fresh_open_truncates_and_removes_only_own_staging),
      T(test_finish_without_checkpoints_writes_everything),
      T(test_parallel_paths_csv_header_once),
      T(test_a_failed_open_leaves_nothing_behind),
      T(test_at_least_once_mode_stages_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
