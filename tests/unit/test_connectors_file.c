/*
 * DESIGN: unit tests for connector='file' (connectors/file.c) over temporary directories made
 * with mkdtemp: glob and directory listing in sorted order, one file per poll, partition
 * assignment at parallelism 2 and 3, on_decode_error fail (file:line in the message) and skip
 * (counted, logged, reading goes on), oversized lines, CSV records spanning lines, exact
 * resume after snapshot/restore (also across a CSV header and before open), corrupt state;
 * the sink's truncate-on-fresh versus append-on-restore, per-subtask paths and CSV header.
 * Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "base/log.h"
#include "connectors/connectors.h"
#include "test_connectors_util.h"

typedef struct fx {
  char *dir;
  ck_arena_t arena;
  ck_schema_t schema;
  int64_t blocks;
} fx_t;

static int setup(void **state) {
  fx_t *f = calloc(1, sizeof *f);
  f->blocks = ck_mem_stats().live_blocks;
  f->dir = t_tmpdir();
  ck_arena_init(&f->arena, 4096);
  f->schema = t_schema(&f->arena, "id BIGINT, name VARCHAR");
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx_t *f = *state;
  t_rmtree(f->dir);
  ck_free(f->dir);
  ck_arena_fini(&f->arena);
  assert_int_equal(ck_mem_stats().live_blocks, f->blocks); /* nothing leaked */
  free(f);
  return 0;
}

static char *fpath(fx_t *f, const char *name) {
  return ck_arena_printf(&f->arena, "%s/%s", f->dir, name);
}

static void put(fx_t *f, const char *name, const char *content) { t_writes(fpath(f, name), content); }

static ck_source_t mk_src(fx_t *f, const ck_options_t *opts, int subtask, int par) {
  ck_source_t src = {ck_file_connector.source, {"t", &f->schema, opts, subtask, par, "job"}, NULL};
  return src;
}

/* Polls until END with max_rows per poll; returns every row as JSON lines, and the sequence
 * of partitions polled as a string like "0,0,1," (one entry per DATA poll). */
static char *drain(fx_t *f, ck_source_t *src, int max_rows, int max_polls, ck_buf_t *parts) {
  ck_buf_t out;
  ck_buf_init(&out);
  ck_batch_t *batch = t_batch(&f->schema);
  ck_error_t err;
  ck_error_clear(&err);
  for (int polls = 0; max_polls < 0 || polls < max_polls; polls++) {
    int partition = -1;
    ck_batch_clear(batch);
    int rc = src->ops->poll(src, batch, max_rows, 100, &partition, &err);
    if (rc < 0) fail_msg("poll failed: %s", err.message);
    if (rc == CK_SRC_END) break;
    assert_int_equal(rc, CK_SRC_DATA);
    assert_true(batch->nrows > 0 && batch->nrows <= (size_t)max_rows);
    if (parts) ck_buf_printf(parts, "%d,", partition);
    char *rows = t_batch_json(&f->schema, batch);
    ck_buf_puts(&out, rows);
    ck_free(rows);
  }
  ck_batch_free(batch);
  return ck_buf_detach(&out);
}

static void open_ok(ck_source_t *src) {
  ck_error_t err;
  ck_error_clear(&err);
  int rc = src->ops->open(src, &err);
  if (rc) fail_msg("open failed: %s", err.message);
}

static void test_file_glob_sorted_one_file_per_poll(void **state) {
  fx_t *f = *state;
  put(f, "b.json", "{\"id\":3,\"name\":\"b1\"}\n{\"id\":4,\"name\":\"b2\"}\n");
  put(f, "a.json", "{\"id\":1,\"name\":\"a1\"}\n\n  \n{\"id\":2,\"name\":\"a2\"}\r\n");
  put(f, "c.json", "{\"id\":5,\"name\":\"c1\"}"); /* no final newline */
  put(f, "notes.txt", "not json\n");
  mkdir(fpath(f, "sub.json"), 0755); /* a directory matching the glob is not a file */
  ck_options_t opts = t_opts(&f->arena, "path", fpath(f, "*.json"), NULL);
  ck_source_t src = mk_src(f, &opts, 0, 1);
  open_ok(&src);
  assert_int_equal(src.ops->npartitions(&src), 3);
  ck_buf_t parts;
  ck_buf_init(&parts);
  char *rows = drain(f, &src, 100, -1, &parts);
  assert_string_equal(rows,
                      "{\"id\":1,\"name\":\"a1\"}\n{\"id\":2,\"name\":\"a2\"}\n"
                      "{\"id\":3,\"name\":\"b1\"}\n{\"id\":4,\"name\":\"b2\"}\n"
                      "{\"id\":5,\"name\":\"c1\"}\n");
  assert_string_equal(parts.data, "0,1,2,"); /* never two files in one poll */
  /* END stays END */
  ck_batch_t *batch = t_batch(&f->schema);
  ck_error_t err;
  ck_error_clear(&err);
  int p;
  assert_int_equal(src.ops->poll(&src, batch, 10, 0, &p, &err), CK_SRC_END);
  assert_int_equal(src.ops->skipped(&src), 0);
  ck_batch_free(batch);
  ck_buf_fini(&parts);
  ck_free(rows);
  src.ops->close(&src);
}

static void test_file_directory_path_and_batches(void **state) {
  fx_t *f = *state;
  ck_buf_t content;
  ck_buf_init(&content);
  for (int i = 0; i < 2500; i++) ck_buf_printf(&content, "{\"id\":%d,\"name\":\"n%d\"}\n", i, i);
  put(f, "big.json", content.data);
  ck_options_t opts = t_opts(&f->arena, "path", f->dir, NULL);
  ck_source_t src = mk_src(f, &opts, 0, 1);
  open_ok(&src);
  ck_buf_t parts;
  ck_buf_init(&parts);
  char *rows = drain(f, &src, 1024, -1, &parts);
  assert_string_equal(rows, content.data);
  assert_string_equal(parts.data, "0,0,0,"); /* 1024 + 1024 + 452 */
  ck_free(rows);
  ck_buf_fini(&parts);
  ck_buf_fini(&content);
  src.ops->close(&src);
}

static void test_file_parallelism_assigns_file_i_to_subtask_i_mod_p(void **state) {
  fx_t *f = *state;
  put(f, "f0.json", "{\"id\":0}\n");
  put(f, "f1.json", "{\"id\":1}\n");
  put(f, "f2.json", "{\"id\":2}\n{\"id\":22}\n");
  ck_options_t opts = t_opts(&f->arena, "path", fpath(f, "f*.json"), NULL);
  const char *expect2[] = {"{\"id\":0,\"name\":null}\n{\"id\":2,\"name\":null}\n{\"id\":22,\"name\":null}\n",
                           "{\"id\":1,\"name\":null}\n"};
  for (int s = 0; s < 2; s++) {
    ck_source_t src = mk_src(f, &opts, s, 2);
    open_ok(&src);
    assert_int_equal(src.ops->npartitions(&src), s == 0 ? 2 : 1);
    char *rows = drain(f, &src, 100, -1, NULL);
    assert_string_equal(rows, expect2[s]);
    ck_free(rows);
    src.ops->close(&src);
  }
  /* parallelism 4: subtask 3 owns nothing and ends at once */
  ck_source_t idle = mk_src(f, &opts, 3, 4);
  open_ok(&idle);
  assert_int_equal(idle.ops->npartitions(&idle), 0);
  ck_batch_t *batch = t_batch(&f->schema);
  ck_error_t err;
  ck_error_clear(&err);
  int p;
  assert_int_equal(idle.ops->poll(&idle, batch, 10, 0, &p, &err), CK_SRC_END);
  assert_int_equal(batch->nrows, 0);
  ck_batch_free(batch);
  idle.ops->close(&idle);
}

static void test_file_decode_error_fail_names_file_and_line(void **state) {
  fx_t *f = *state;
  put(f, "in.json", "{\"id\":1}\n\n{\"id\":\"two\"}\n{\"id\":3}\n");
  const char *path = fpath(f, "in.json");
  ck_options_t opts = t_opts(&f->arena, "path", path, NULL); /* on_decode_error defaults to fail */
  ck_source_t src = mk_src(f, &opts, 0, 1);
  open_ok(&src);
  ck_batch_t *batch = t_batch(&f->schema);
  ck_error_t err;
  ck_error_clear(&err);
  int p;
  int rc = src.ops->poll(&src, batch, 100, 0, &p, &err);
  /* the good row before the bad one may be handed out first; then the error */
  if (rc == CK_SRC_DATA) {
    assert_int_equal(batch->nrows, 1);
    rc = src.ops->poll(&src, batch, 100, 0, &p, &err);
  }
  assert_int_equal(rc, CK_EDECODE);
  char want[512];
  snprintf(want, sizeof want, "could not decode record at %s:3: field 'id': expected an integer, found string", path);
  assert_string_equal(err.message, want);
  ck_batch_free(batch);
  src.ops->close(&src);
}

static void test_file_decode_error_skip_counts_and_logs(void **state) {
  fx_t *f = *state;
  put(f, "in.json", "{\"id\":1}\nnot json\n{\"id\":\"x\"}\n{\"id\":4}\n{\"id\":5.5}\n");
  ck_options_t opts = t_opts(&f->arena, "path", fpath(f, "in.json"), "on_decode_error", "skip", NULL);
  ck_source_t src = mk_src(f, &opts, 0, 1);
  char *log = fpath(f, "log.txt");
  int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ck_log_set_fd(fd);
  open_ok(&src);
  char *rows = drain(f, &src, 100, -1, NULL);
  ck_log_set_fd(-1);
  close(fd);
  assert_string_equal(rows, "{\"id\":1,\"name\":null}\n{\"id\":4,\"name\":null}\n");
  assert_int_equal(src.ops->skipped(&src), 3);
  char *text = t_read(log, NULL);
  char want[512];
  snprintf(want, sizeof want, "skipped record at %s:2: malformed JSON", fpath(f, "in.json"));
  if (!strstr(text, want)) fail_msg("log lacks \"%s\":\n%s", want, text);
  snprintf(want, sizeof want, "%s:5: field 'id': expected an integer, found 5.5", fpath(f, "in.json"));
  if (!strstr(text, want)) fail_msg("log lacks \"%s\":\n%s", want, text);
  ck_free(text);
  ck_free(rows);
  src.ops->close(&src);
}

static void test_file_oversized_line(void **state) {
  fx_t *f = *state;
  size_t big = CK_FORMAT_MAX_RECORD * 3 + 17; /* longer than the read buffer */
  ck_buf_t content;
  ck_buf_init(&content);
  ck_buf_puts(&content, "{\"id\":1}\n{\"id\":2,\"name\":\"");
  for (size_t i = 0; i < big; i++) ck_buf_putc(&content, 'x');
  ck_buf_puts(&content, "\"}\n{\"id\":3}\n");
  put(f, "big.json", content.data);
  ck_buf_fini(&content);
  ck_options_t skip = t_opts(&f->arena, "path", fpath(f, "big.json"), "on_decode_error", "skip", NULL);
  ck_source_t src = mk_src(f, &skip, 0, 1);
  ck_log_set_level(CK_LOG_OFF);
  open_ok(&src);
  char *rows = drain(f, &src, 100, -1, NULL);
  ck_log_set_level(CK_LOG_INFO);
  assert_string_equal(rows, "{\"id\":1,\"name\":null}\n{\"id\":3,\"name\":null}\n");
  assert_int_equal(src.ops->skipped(&src), 1);
  ck_free(rows);
  src.ops->close(&src);

  ck_options_t fail = t_opts(&f->arena, "path", fpath(f, "big.json"), NULL);
  src = mk_src(f, &fail, 0, 1);
  open_ok(&src);
  ck_batch_t *batch = t_batch(&f->schema);
  ck_error_t err;
  ck_error_clear(&err);
  int p, rc;
  while ((rc = src.ops->poll(&src, batch, 100, 0, &p, &err)) == CK_SRC_DATA) {
  }
  assert_int_equal(rc, CK_EDECODE);
  assert_non_null(strstr(err.message, "big.json:2: record exceeds the limit of 1048576 bytes"));
  ck_batch_free(batch);
  src.ops->close(&src);
}

static void test_file_csv_multiline_records_and_line_numbers(void **state) {
  fx_t *f = *state;
  /* a quote inside an unquoted field is a plain character: it must not swallow the next line */
  put(f, "in.csv", "id,name\n1,\"two\nline\"\n2,\"has \"\"quotes\"\"\"\r\nx,bad\n3,stray\"quote\n4,\"\"\n");
  ck_options_t opts = t_opts(&f->arena, "path", fpath(f, "in.csv"), "format", "csv",
                             "csv.header", "true", "on_decode_error", "skip", NULL);
  int fd = open(fpath(f, "log.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ck_log_set_fd(fd);
  ck_source_t src = mk_src(f, &opts, 0, 1);
  open_ok(&src);
  char *rows = drain(f, &src, 100, -1, NULL);
  ck_log_set_fd(-1);
  close(fd);
  assert_string_equal(rows, "{\"id\":1,\"name\":\"two\\nline\"}\n{\"id\":2,\"name\":\"has \\\"quotes\\\"\"}\n"
                            "{\"id\":3,\"name\":\"stray\\\"quote\"}\n{\"id\":4,\"name\":\"\"}\n");
  assert_int_equal(src.ops->skipped(&src), 1);
  char *log = t_read(fpath(f, "log.txt"), NULL);
  assert_non_null(strstr(log, "in.csv:5: field 'id': expected an integer, found 'x'")); /* line 5: the record on line 2 spans 2 lines */
  ck_free(log);
  ck_free(rows);
  src.ops->close(&src);
}

/* Reads `first_polls` polls of 2 rows, snapshots, and resumes in a fresh instance. */
static void resume_case(fx_t *f, const ck_options_t *opts, int par, int first_polls, bool restore_before_open) {
  for (int s = 0; s < par; s++) {
    ck_source_t a = mk_src(f, opts, s, par);
    open_ok(&a);
    char *whole = drain(f, &a, 2, -1, NULL);
    a.ops->close(&a);

    ck_source_t b = mk_src(f, opts, s, par);
    open_ok(&b);
    char *head = drain(f, &b, 2, first_polls, NULL);
    ck_buf_t snap;
    ck_buf_init(&snap);
    ck_error_t err;
    ck_error_clear(&err);
    assert_int_equal(b.ops->snapshot(&b, &snap, &err), 0);
    /* reading on past the snapshot must not matter to the restored copy */
    char *ignored = drain(f, &b, 2, 1, NULL);
    ck_free(ignored);
    b.ops->close(&b);

    ck_source_t c = mk_src(f, opts, s, par);
    if (restore_before_open) {
      assert_int_equal(c.ops->restore(&c, snap.data, snap.len, &err), 0);
      open_ok(&c);
    } else {
      open_ok(&c);
      assert_int_equal(c.ops->restore(&c, snap.data, snap.len, &err), 0);
    }
    char *tail = drain(f, &c, 2, -1, NULL);
    c.ops->close(&c);
    ck_buf_t joined;
    ck_buf_init(&joined);
    ck_buf_puts(&joined, head);
    ck_buf_puts(&joined, tail);
    assert_string_equal(joined.data, whole); /* every row exactly once, in order */
    assert_true(strlen(head) > 0);
    assert_true(strlen(tail) > 0);
    ck_buf_fini(&joined);
    ck_buf_fini(&snap);
    ck_free(whole);
    ck_free(head);
    ck_free(tail);
  }
}

static void test_file_snapshot_restore_resumes_exactly(void **state) {
  fx_t *f = *state;
  for (int k = 0; k < 3; k++) {
    ck_buf_t b;
    ck_buf_init(&b);
    for (int i = 0; i < 5; i++) ck_buf_printf(&b, "{\"id\":%d,\"name\":\"f%d\"}\n", k * 10 + i, k);
    char name[32];
    snprintf(name, sizeof name, "part-%d.json", k);
    put(f, name, b.data);
    ck_buf_fini(&b);
  }
  ck_options_t opts = t_opts(&f->arena, "path", fpath(f, "part-*.json"), NULL);
  resume_case(f, &opts, 1, 1, false); /* mid first file */
  resume_case(f, &opts, 1, 3, false); /* at the end of the first file */
  resume_case(f, &opts, 1, 4, true);  /* inside the second file; restore before open */
  resume_case(f, &opts, 2, 2, false);
}

static void test_file_snapshot_restore_csv_header(void **state) {
  fx_t *f = *state;
  put(f, "a.csv", "name,id\nx,1\ny,2\nz,3\n\"multi\nline\",4\nw,5\n");
  ck_options_t opts = t_opts(&f->arena, "path", fpath(f, "a.csv"), "format", "csv", "csv.header", "true", NULL);
  resume_case(f, &opts, 1, 1, false);
  resume_case(f, &opts, 1, 2, true);
}

static void test_file_restore_rejects_corrupt_state(void **state) {
  fx_t *f = *state;
  put(f, "a.json", "{\"id\":1}\n");
  ck_options_t opts = t_opts(&f->arena, "path", fpath(f, "a.json"), NULL);
  ck_source_t src = mk_src(f, &opts, 0, 1);
  open_ok(&src);
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(src.ops->restore(&src, "\x09", 1, &err), CK_ESTATE);
  assert_non_null(strstr(err.message, "unknown state version 9"));
  ck_buf_t snap;
  ck_buf_init(&snap);
  assert_int_equal(src.ops->snapshot(&src, &snap, &err), 0);
  ck_error_clear(&err);
  assert_int_equal(src.ops->restore(&src, snap.data, snap.len - 1, &err), CK_ESTATE);
  assert_non_null(strstr(err.message, "truncated or corrupt"));
  ck_buf_fini(&snap);
  src.ops->close(&src);
}

/* Snapshots a.json after two rows; restores a fresh instance after `change` rewrote it. */
static int restore_after(fx_t *f, const char *content, const void *state, size_t len,
                         ck_error_t *err, char **rows) {
  put(f, "a.json", content);
  ck_options_t opts = t_opts(&f->arena, "path", fpath(f, "a.json"), NULL);
  ck_source_t c = mk_src(f, &opts, 0, 1);
  open_ok(&c);
  ck_error_clear(err);
  int rc = c.ops->restore(&c, state, len, err);
  if (!rc && rows) *rows = drain(f, &c, 10, -1, NULL);
  c.ops->close(&c);
  return rc;
}

static void test_file_restore_checks_the_file_at_its_position(void **state) {
  fx_t *f = *state;
  const char *orig = "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n{\"id\":4}\n";
  put(f, "a.json", orig);
  ck_options_t opts = t_opts(&f->arena, "path", fpath(f, "a.json"), NULL);
  ck_source_t b = mk_src(f, &opts, 0, 1);
  open_ok(&b);
  char *head = drain(f, &b, 2, 1, NULL);
  assert_string_equal(head, "{\"id\":1,\"name\":null}\n{\"id\":2,\"name\":null}\n");
  ck_free(head);
  ck_buf_t snap;
  ck_buf_init(&snap);
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(b.ops->snapshot(&b, &snap, &err), 0);
  b.ops->close(&b);
  char *path = fpath(f, "a.json"), *rows = NULL;
  /* unchanged, or grown after the position: resumes */
  assert_int_equal(restore_after(f, "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n{\"id\":4}\n{\"id\":5}\n",
                                 snap.data, snap.len, &err, &rows), 0);
  assert_string_equal(rows, "{\"id\":3,\"name\":null}\n{\"id\":4,\"name\":null}\n"
                            "{\"id\":5,\"name\":null}\n");
  ck_free(rows);
  /* truncated below the position */
  assert_int_equal(restore_after(f, "{\"id\":1}\n", snap.data, snap.len, &err, NULL), CK_ESTATE);
  assert_non_null(strstr(err.message, path));
  assert_non_null(strstr(err.message, "at byte 18 (line 3): it is now 9 bytes long"));
  assert_non_null(strstr(err.hint, "--fresh"));
  /* the same size, one byte before the position changed */
  assert_int_equal(restore_after(f, "{\"id\":1}\n{\"id\":7}\n{\"id\":3}\n{\"id\":4}\n", snap.data,
                                 snap.len, &err, NULL), CK_ESTATE);
  assert_non_null(strstr(err.message, "its contents before that position changed"));
  /* shifted: a line added at the start */
  assert_int_equal(restore_after(f, "{\"id\":0}\n{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n{\"id\":4}\n",
                                 snap.data, snap.len, &err, NULL), CK_ESTATE);
  assert_non_null(strstr(err.message, path));
  ck_buf_fini(&snap);
  /* a version 1 position (no fingerprint, an older clink) still restores; its size is checked */
  ck_buf_t v1;
  ck_buf_init(&v1);
  ck_buf_putc(&v1, 1);
  ck_buf_putc(&v1, 1);                  /* one file */
  ck_buf_putc(&v1, (char)strlen(path)); /* a short path: one varint byte */
  ck_buf_puts(&v1, path);
  ck_buf_putc(&v1, 18); /* offset */
  ck_buf_putc(&v1, 2);  /* lines */
  ck_buf_putc(&v1, 0);  /* not done */
  assert_true(strlen(path) < 128);
  assert_int_equal(restore_after(f, orig, v1.data, v1.len, &err, &rows), 0);
  assert_string_equal(rows, "{\"id\":3,\"name\":null}\n{\"id\":4,\"name\":null}\n");
  ck_free(rows);
  assert_int_equal(restore_after(f, "{\"id\":1}\n", v1.data, v1.len, &err, NULL), CK_ESTATE);
  assert_non_null(strstr(err.message, "it is now 9 bytes long"));
  ck_buf_fini(&v1);
}

static void test_file_check(void **state) {
  fx_t *f = *state;
  ck_error_t err;
  ck_error_clear(&err);
  ck_options_t none = t_opts(&f->arena, "path", fpath(f, "*.json"), NULL);
  assert_int_equal(ck_file_connector.check(&f->schema, &none, false, &err), CK_ENOTFOUND);
  assert_non_null(strstr(err.message, "no file matches path"));
  put(f, "a.json", "{}\n");
  ck_error_clear(&err);
  assert_int_equal(ck_file_connector.check(&f->schema, &none, false, &err), 0);
  ck_options_t avro = t_opts(&f->arena, "path", fpath(f, "*.json"), "format", "avro", NULL);
  assert_int_equal(ck_file_connector.check(&f->schema, &avro, false, &err), CK_EOPTION);
  assert_string_equal(err.message, "the file connector does not support format 'avro'");
  ck_options_t nodir = t_opts(&f->arena, "path", fpath(f, "missing/out.json"), NULL);
  ck_error_clear(&err);
  assert_int_equal(ck_file_connector.check(&f->schema, &nodir, true, &err), CK_ENOTFOUND);
  ck_options_t okdir = t_opts(&f->arena, "path", fpath(f, "out.json"), NULL);
  ck_error_clear(&err);
  assert_int_equal(ck_file_connector.check(&f->schema, &okdir, true, &err), 0);
  /* open fails the same way when nothing matches */
  ck_options_t gone = t_opts(&f->arena, "path", fpath(f, "*.csv"), NULL);
  ck_source_t src = mk_src(f, &gone, 0, 1);
  ck_error_clear(&err);
  assert_int_equal(src.ops->open(&src, &err), CK_ENOTFOUND);
  src.ops->close(&src);
}

/* ---- sink ---- */

static ck_batch_t *rows_batch(fx_t *f, int from, int n) {
  ck_batch_t *b = t_batch(&f->schema);
  for (int i = from; i < from + n; i++) {
    ck_col_append_i64(&b->cols[0], i);
    char s[16];
    int len = snprintf(s, sizeof s, "r%d", i);
    ck_col_append_str(&b->cols[1], s, (size_t)len);
  }
  ck_batch_seal(b);
  return b;
}

static void sink_run(fx_t *f, const ck_options_t *opts, int subtask, int par, bool restored, int from, int n) {
  ck_sink_t sink = {ck_file_connector.sink, {"t", &f->schema, opts, subtask, par, "job"}, NULL};
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(sink.ops->open(&sink, restored, &err), 0);
  ck_batch_t *b = rows_batch(f, from, n);
  assert_int_equal(sink.ops->write(&sink, b, &err), 0);
  ck_buf_t state;
  ck_buf_init(&state);
  assert_int_equal(sink.ops->prepare(&sink, 1, &state, &err), 0);
  assert_int_equal(sink.ops->commit(&sink, 1, &err), 0);
  assert_int_equal(sink.ops->write(&sink, b, &err), 0);
  assert_int_equal(sink.ops->finish(&sink, &err), 0);
  sink.ops->close(&sink);
  ck_buf_fini(&state);
  ck_batch_free(b);
}

static void test_file_sink_truncates_fresh_and_appends_after_restore(void **state) {
  fx_t *f = *state;
  const char *out = fpath(f, "out.json");
  t_writes(out, "stale line from an earlier run\n");
  ck_options_t opts = t_opts(&f->arena, "path", out, NULL);
  sink_run(f, &opts, 0, 1, false, 1, 2);
  char *text = t_read(out, NULL);
  assert_string_equal(text,
                      "{\"id\":1,\"name\":\"r1\"}\n{\"id\":2,\"name\":\"r2\"}\n"
                      "{\"id\":1,\"name\":\"r1\"}\n{\"id\":2,\"name\":\"r2\"}\n");
  ck_free(text);
  sink_run(f, &opts, 0, 1, true, 3, 1); /* restored: appends */
  text = t_read(out, NULL);
  assert_string_equal(text,
                      "{\"id\":1,\"name\":\"r1\"}\n{\"id\":2,\"name\":\"r2\"}\n"
                      "{\"id\":1,\"name\":\"r1\"}\n{\"id\":2,\"name\":\"r2\"}\n"
                      "{\"id\":3,\"name\":\"r3\"}\n{\"id\":3,\"name\":\"r3\"}\n");
  ck_free(text);
  sink_run(f, &opts, 0, 1, false, 9, 1); /* fresh again: truncates */
  text = t_read(out, NULL);
  assert_string_equal(text, "{\"id\":9,\"name\":\"r9\"}\n{\"id\":9,\"name\":\"r9\"}\n");
  ck_free(text);
}

static void test_file_sink_restored_cuts_a_torn_last_line(void **state) {
  fx_t *f = *state;
  const char *out = fpath(f, "torn.json");
  t_writes(out, "{\"id\":1,\"name\":\"r1\"}\n{\"id\":2,\"na");
  ck_options_t opts = t_opts(&f->arena, "path", out, NULL);
  sink_run(f, &opts, 0, 1, true, 3, 1);
  char *text = t_read(out, NULL);
  assert_string_equal(text, "{\"id\":1,\"name\":\"r1\"}\n{\"id\":3,\"name\":\"r3\"}\n"
                            "{\"id\":3,\"name\":\"r3\"}\n");
  ck_free(text);
  t_writes(out, "{\"id\":2,\"na"); /* no whole line at all */
  sink_run(f, &opts, 0, 1, true, 4, 1);
  text = t_read(out, NULL);
  assert_string_equal(text, "{\"id\":4,\"name\":\"r4\"}\n{\"id\":4,\"name\":\"r4\"}\n");
  ck_free(text);
}

static void test_file_sink_parallel_paths_and_csv_header(void **state) {
  fx_t *f = *state;
  const char *out = fpath(f, "out.csv");
  ck_options_t opts = t_opts(&f->arena, "path", out, "format", "csv", "csv.header", "true", NULL);
  sink_run(f, &opts, 0, 2, false, 1, 1);
  sink_run(f, &opts, 1, 2, false, 2, 1);
  sink_run(f, &opts, 1, 2, true, 3, 1); /* the header is not repeated on append */
  char *t0 = t_read(fpath(f, "out.csv-0"), NULL), *t1 = t_read(fpath(f, "out.csv-1"), NULL);
  assert_null(t_read(out, NULL));
  assert_string_equal(t0, "id,name\n1,r1\n1,r1\n");
  assert_string_equal(t1, "id,name\n2,r2\n2,r2\n3,r3\n3,r3\n");
  ck_free(t0);
  ck_free(t1);
}

static void test_file_sink_output_reads_back(void **state) {
  fx_t *f = *state;
  const char *out = fpath(f, "round.json");
  ck_options_t sopts = t_opts(&f->arena, "path", out, NULL);
  sink_run(f, &sopts, 0, 1, false, 100, 50);
  ck_source_t src = mk_src(f, &sopts, 0, 1);
  open_ok(&src);
  char *rows = drain(f, &src, 1000, -1, NULL);
  char *text = t_read(out, NULL);
  assert_string_equal(rows, text);
  ck_free(rows);
  ck_free(text);
  src.ops->close(&src);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(test_file_glob_sorted_one_file_per_poll),
      T(test_file_directory_path_and_batches),
      T(test_file_parallelism_assigns_file_i_to_subtask_i_mod_p),
      T(test_file_decode_error_fail_names_file_and_line),
      T(test_file_decode_error_skip_counts_and_logs),
      T(test_file_oversized_line),
      T(test_file_csv_multiline_records_and_line_numbers),
      T(test_file_snapshot_restore_resumes_exactly),
      T(test_file_snapshot_restore_csv_header),
      T(test_file_restore_rejects_corrupt_state),
      T(test_file_restore_checks_the_file_at_its_position),
      T(test_file_check),
      T(test_file_sink_truncates_fresh_and_appends_after_restore),
      T(test_file_sink_restored_cuts_a_torn_last_line),
      T(test_file_sink_parallel_paths_and_csv_header),
      T(test_file_sink_output_reads_back),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
