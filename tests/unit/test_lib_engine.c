/*
 * DESIGN: unit tests for libclink (include/clink/clink.h) through its public functions only:
 * a push table → TUMBLE window → collect table pipeline checked against sums computed here,
 * errors with their SQL position, backpressure (an unread collect stream holds its job and
 * nothing is dropped), a cancel while the stream's reader is blocked, an engine closed with
 * its jobs running and a stream still open, clink_query, the Arrow types of a batch, and a
 * GROUP BY's changelog (row kinds on the stream) applied and compared with sums computed here.
 *
 * The host's Arrow batches are built here by hand (the C data interface, with a release that
 * frees them), so the test depends on no Arrow library. Every wait has a deadline; under ASan
 * the leak checker at exit shows that engines, jobs, streams and batches are all freed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clink/clink.h"

enum { DEADLINE_MS = 30000 };

/* ---------------------------------------------------------------- host batches */

typedef struct hb {
  int n;
  const void *bufs[3][3];
  struct ArrowArray kids[3], *kidp[3];
  struct ArrowSchema skids[3], *skidp[3];
  const void *top_bufs[1];
  int32_t *off;
  char *bytes;
  int64_t *ts;
  double *v;
  int refs; /* the array's and the schema's */
} hb_t;

static void hb_unref(hb_t *h) {
  if (--h->refs) return;
  free(h->off);
  free(h->bytes);
  free(h->ts);
  free(h->v);
  free(h);
}
static void kid_release(struct ArrowArray *a) { a->release = NULL; }
static void arr_release(struct ArrowArray *a) {
  hb_t *h = a->private_data;
  for (int i = 0; i < 3; i++) h->kids[i].release = NULL;
  a->release = NULL;
  hb_unref(h);
}
static void skid_release(struct ArrowSchema *s) { s->release = NULL; }
static void sch_release(struct ArrowSchema *s) {
  hb_t *h = s->private_data;
  for (int i = 0; i < 3; i++) h->skids[i].release = NULL;
  s->release = NULL;
  hb_unref(h);
}

/* A batch (k VARCHAR, ts BIGINT, v DOUBLE) of rows i0 … i0+n-1 of the test's data set:
 * key "k<i mod 5>", ts = 1000 + 37 * i ms, v = i / 4. */
static void make_batch(int i0, int n, struct ArrowArray *a, struct ArrowSchema *s) {
  hb_t *h = calloc(1, sizeof *h);
  h->n = n;
  h->off = calloc((size_t)n + 1, 4);
  h->bytes = calloc((size_t)n * 3 + 1, 1);
  h->ts = calloc((size_t)n + 1, 8);
  h->v = calloc((size_t)n + 1, 8);
  for (int r = 0; r < n; r++) {
    int i = i0 + r;
    memcpy(h->bytes + h->off[r], "k", 1);
    h->bytes[h->off[r] + 1] = (char)('0' + i % 5);
    h->off[r + 1] = h->off[r] + 2;
    h->ts[r] = 1000 + 37 * (int64_t)i;
    h->v[r] = i / 4.0;
  }
  const char *fmt[3] = {"u", "l", "g"}, *name[3] = {"k", "ts", "v"};
  h->bufs[0][1] = h->off;
  h->bufs[0][2] = h->bytes;
  h->bufs[1][1] = h->ts;
  h->bufs[2][1] = h->v;
  for (int c = 0; c < 3; c++) {
    h->kids[c] = (struct ArrowArray){.length = n, .n_buffers = c ? 2 : 3, .buffers = h->bufs[c],
                                     .release = kid_release};
    h->kidp[c] = &h->kids[c];
    h->skids[c] = (struct ArrowSchema){.format = fmt[c], .name = name[c],
                                       .flags = ARROW_FLAG_NULLABLE, .release = skid_release};
    h->skidp[c] = &h->skids[c];
  }
  h->refs = 2;
  *a = (struct ArrowArray){.length = n, .n_buffers = 1, .buffers = h->top_bufs, .n_children = 3,
                           .children = h->kidp, .release = arr_release, .private_data = h};
  *s = (struct ArrowSchema){.format = "+s", .name = "", .n_children = 3, .children = h->skidp,
                            .release = sch_release, .private_data = h};
}

static clink_engine_t *open_engine(int parallelism, int collect_batches) {
  clink_options_t o;
  clink_options_init(&o);
  o.parallelism = parallelism;
  o.collect_batches = collect_batches;
  o.log_level = CLINK_LOG_ERROR;
  clink_engine_t *e = NULL;
  char err[256];
  assert_int_equal(clink_engine_open(&o, &e, err, sizeof err), 0);
  return e;
}

static const char *PIPELINE =
    "CREATE TABLE src (k VARCHAR, ts BIGINT, v DOUBLE)\n"
    "  WITH (connector = 'push', event_time_column = 'ts', watermark_lag_ms = '0');\n"
    "CREATE TABLE out (window_start BIGINT, k VARCHAR, n BIGINT, total DOUBLE)\n"
    "  WITH (connector = 'collect');\n"
    "INSERT INTO out SELECT window_start, k, COUNT(*) AS n, SUM(v) AS total\n"
    "  FROM src GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k;\n";

/* ---------------------------------------------------------------- the pipeline */

enum { ROWS = 5000, WINDOWS = 200 };

static void test_push_tumble_collect(void **state) {
  for (int par = 1; par <= 2; par++) {
    clink_engine_t *e = open_engine(par, 4);
    clink_job_t *job = NULL;
    int nj = 0;
    assert_int_equal(clink_exec(e, PIPELINE, &job, 1, &nj), 0);
    assert_int_equal(nj, 1);
    assert_int_equal(clink_job_status(job), CLINK_JOB_RUNNING);
    struct ArrowArrayStream st;
    assert_int_equal(clink_collect(e, "out", &st), 0);
    for (int i = 0; i < ROWS; i += 700) {
      struct ArrowArray a;
      struct ArrowSchema s;
      make_batch(i, i + 700 > ROWS ? ROWS - i : 700, &a, &s);
      assert_int_equal(clink_push(e, "src", &a, &s), 0);
      assert_null(a.release); /* moved */
    }
    assert_int_equal(clink_push_close(e, "src"), 0);

    /* the oracle: count and sum per (window, key), computed from the data set's rule */
    static int64_t want_n[WINDOWS][5];
    static double want_sum[WINDOWS][5];
    static int64_t got_n[WINDOWS][5];
    static double got_sum[WINDOWS][5];
    memset(want_n, 0, sizeof want_n);
    memset(want_sum, 0, sizeof want_sum);
    memset(got_n, 0, sizeof got_n);
    memset(got_sum, 0, sizeof got_sum);
    for (int i = 0; i < ROWS; i++) {
      int64_t w = (1000 + 37 * (int64_t)i) / 1000;
      want_n[w][i % 5]++;
      want_sum[w][i % 5] += i / 4.0;
    }
    struct ArrowSchema sch;
    assert_int_equal(st.get_schema(&st, &sch), 0);
    assert_string_equal(sch.format, "+s");
    assert_int_equal(sch.n_children, 4);
    assert_string_equal(sch.children[0]->name, "window_start");
    assert_string_equal(sch.children[0]->format, "l");
    assert_string_equal(sch.children[1]->format, "u");
    assert_string_equal(sch.children[3]->format, "g");
    sch.release(&sch);
    int rows = 0;
    for (;;) {
      struct ArrowArray a;
      assert_int_equal(st.get_next(&st, &a), 0);
      if (!a.release) break;
      assert_int_equal(a.n_children, 4);
      const int64_t *ws = a.children[0]->buffers[1];
      const int32_t *off = a.children[1]->buffers[1];
      const char *kb = a.children[1]->buffers[2];
      const int64_t *n = a.children[2]->buffers[1];
      const double *tot = a.children[3]->buffers[1];
      for (int64_t r = 0; r < a.length; r++) {
        int64_t w = ws[r] / 1000;
        assert_true(w >= 0 && w < WINDOWS);
        assert_int_equal(off[r + 1] - off[r], 2);
        int k = kb[off[r] + 1] - '0';
        assert_true(k >= 0 && k < 5);
        assert_int_equal(got_n[w][k], 0); /* each (window, key) once */
        got_n[w][k] = n[r];
        got_sum[w][k] = tot[r];
        rows++;
      }
      a.release(&a);
    }
    int expect_rows = 0;
    for (int w = 0; w < WINDOWS; w++)
      for (int k = 0; k < 5; k++) {
        expect_rows += want_n[w][k] > 0;
        assert_int_equal(got_n[w][k], want_n[w][k]);
        assert_true(got_sum[w][k] == want_sum[w][k]);
      }
    assert_int_equal(rows, expect_rows);
    st.release(&st);
    assert_int_equal(clink_job_wait(job, DEADLINE_MS), 0);
    assert_int_equal(clink_job_status(job), CLINK_JOB_FINISHED);
    int64_t read = 0, written = 0;
    clink_job_counts(job, &read, &written);
    assert_int_equal(read, ROWS);
    assert_int_equal(written, expect_rows);
    assert_int_equal(clink_await_all(e, DEADLINE_MS), 0);
    clink_engine_close(e);
  }
}

/* ---------------------------------------------------------------- errors */

static void test_errors_carry_position(void **state) {
  clink_engine_t *e = open_engine(1, 4);
  int line = -1, col = -1;
  /* a syntax error on line 2, column 8 */
  assert_int_equal(clink_exec(e, "CREATE TABLE a (x BIGINT) WITH (connector = 'push');\n"
                                 "INSERT INTOO b SELECT x FROM a;", NULL, 0, NULL),
                   CLINK_ESYNTAX);
  const char *msg = clink_last_error(e, &line, &col);
  assert_int_equal(line, 2);
  assert_int_equal(col, 8);
  assert_non_null(strstr(msg, "<sql>:2:8"));
  /* nothing of a failed script stays: table a is not declared */
  assert_int_equal(clink_exec(e, "CREATE TABLE o (x BIGINT) WITH (connector = 'collect');\n"
                                 "INSERT INTO o SELECT x FROM a;", NULL, 0, NULL),
                   CLINK_EBIND);
  clink_last_error(e, &line, &col);
  assert_int_equal(line, 2);
  assert_int_equal(col, 29);
  /* an unknown column, after a script that declared the tables */
  assert_int_equal(clink_exec(e, "CREATE TABLE a (x BIGINT) WITH (connector = 'push');", NULL, 0,
                              NULL), 0);
  assert_int_equal(clink_exec(e, "CREATE TABLE o (x BIGINT) WITH (connector = 'collect');\n"
                                 "INSERT INTO o\n  SELECT y FROM a;", NULL, 0, NULL),
                   CLINK_EBIND);
  msg = clink_last_error(e, &line, &col);
  assert_int_equal(line, 3);
  assert_int_equal(col, 10);
  assert_non_null(strstr(msg, "y"));
  /* a bare SELECT is clink_query's */
  assert_int_equal(clink_exec(e, "SELECT x FROM a;", NULL, 0, NULL), CLINK_EUNSUPPORTED);
  clink_last_error(e, &line, &col);
  assert_int_equal(line, 1);
  /* push errors: a type that does not convert, a table that is not push */
  assert_int_equal(clink_exec(e, "CREATE TABLE p (k BIGINT, ts BIGINT, v DOUBLE) WITH "
                                 "(connector = 'push');", NULL, 0, NULL), 0);
  struct ArrowArray a;
  struct ArrowSchema s;
  make_batch(0, 3, &a, &s);
  assert_int_equal(clink_push(e, "p", &a, &s), CLINK_ETYPE);
  assert_null(a.release);
  assert_non_null(strstr(clink_last_error(e, NULL, NULL), "column 'k' has Arrow type 'u'"));
  make_batch(0, 3, &a, &s);
  assert_int_equal(clink_push(e, "nope", &a, &s), CLINK_ENOTFOUND);
  assert_null(a.release);
  assert_null(s.release);
  char err[256];
  clink_options_t o;
  clink_options_init(&o);
  o.parallelism = 0;
  clink_engine_t *bad = NULL;
  assert_int_equal(clink_engine_open(&o, &bad, err, sizeof err), CLINK_EINVAL);
  assert_null(bad);
  assert_non_null(strstr(err, "parallelism"));
  assert_int_equal(clink_abi_version(), CLINK_ABI_VERSION);
  clink_engine_close(e);
}

/* ---------------------------------------------------------------- blocking and cancel */

typedef struct reader {
  struct ArrowArrayStream *st;
  int rc, batches;
  int64_t rows;
  char error[512];
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
} reader_t;

static void *read_all(void *arg) {
  reader_t *r = arg;
  int rc;
  for (;;) {
    struct ArrowArray a;
    rc = r->st->get_next(r->st, &a);
    if (rc || !a.release) break;
    r->batches++;
    r->rows += a.length;
    a.release(&a);
  }
  if (rc) snprintf(r->error, sizeof r->error, "%s", r->st->get_last_error(r->st));
  pthread_mutex_lock(&r->mu);
  r->rc = rc;
  r->done = true;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

static bool reader_wait(reader_t *r, int ms) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&r->mu);
  while (!r->done && pthread_cond_timedwait(&r->cv, &r->mu, &ts) == 0) {}
  bool d = r->done;
  pthread_mutex_unlock(&r->mu);
  return d;
}

static const char *PASS =
    "CREATE TABLE src (k VARCHAR, ts BIGINT, v DOUBLE) WITH (connector = 'push');\n"
    "CREATE TABLE out (k VARCHAR, ts BIGINT, v DOUBLE) WITH (connector = 'collect');\n"
    "INSERT INTO out SELECT k, ts, v FROM src;\n";

static void test_cancel_while_reader_blocked(void **state) {
  clink_engine_t *e = open_engine(1, 4);
  clink_job_t *job;
  assert_int_equal(clink_exec(e, PASS, &job, 1, NULL), 0);
  struct ArrowArrayStream st;
  assert_int_equal(clink_collect(e, "out", &st), 0);
  reader_t r = {.st = &st, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
  pthread_t th;
  pthread_create(&th, NULL, read_all, &r);
  assert_false(reader_wait(&r, 300)); /* nothing pushed: the reader waits in get_next */
  assert_int_equal(clink_job_wait(job, 0), CLINK_ETIMEOUT);
  clink_job_cancel(job);
  assert_true(reader_wait(&r, DEADLINE_MS));
  assert_int_equal(r.rc, ECANCELED);
  assert_non_null(strstr(r.error, "cancelled"));
  assert_int_equal(clink_job_wait(job, DEADLINE_MS), CLINK_ECANCELLED);
  assert_int_equal(clink_job_status(job), CLINK_JOB_CANCELLED);
  clink_job_cancel(job); /* an ended job: nothing happens */
  pthread_join(th, NULL);
  st.release(&st);
  clink_job_free(job);
  clink_engine_close(e);
}

typedef struct pusher {
  clink_engine_t *e;
  int batches, pushed;
  pthread_mutex_t mu;
  bool done;
} pusher_t;

static void *push_all(void *arg) {
  pusher_t *p = arg;
  for (int i = 0; i < p->batches; i++) {
    struct ArrowArray a;
    struct ArrowSchema s;
    make_batch(i * 100, 100, &a, &s);
    if (clink_push(p->e, "src", &a, &s)) break;
    pthread_mutex_lock(&p->mu);
    p->pushed++;
    pthread_mutex_unlock(&p->mu);
  }
  clink_push_close(p->e, "src");
  pthread_mutex_lock(&p->mu);
  p->done = true;
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* Waits up to DEADLINE_MS until table's queue holds `queued` batches (or more) and has at
 * least `blocked` writers waiting for room; false on the deadline. */
static bool wait_stats(clink_engine_t *e, const char *table, int queued, int blocked,
                       clink_table_stats_t *out) {
  for (int waited = 0; waited < DEADLINE_MS; waited += 5) {
    out->size = sizeof *out;
    assert_int_equal(clink_table_stats(e, table, out), 0);
    if (out->queued >= queued && out->blocked >= blocked) return true;
    struct timespec d = {0, 5 * 1000000L};
    nanosleep(&d, NULL); /* a poll interval, not the synchronisation: the condition is */
  }
  return false;
}

/* An unread stream holds the job: its collect queue fills, its sink waits for room, so its
 * source stops taking the host's batches and the pusher waits in clink_push. Reading the
 * stream then gets every row pushed, in order, with its values. */
static void test_backpressure_never_drops(void **state) {
  clink_engine_t *e = open_engine(1, 2);
  clink_job_t *job;
  assert_int_equal(clink_exec(e, PASS, &job, 1, NULL), 0);
  pusher_t p = {.e = e, .batches = 400, .mu = PTHREAD_MUTEX_INITIALIZER};
  pthread_t th;
  pthread_create(&th, NULL, push_all, &p);
  clink_table_stats_t out, src;
  assert_true(wait_stats(e, "out", 2, 1, &out));  /* full, and the job's sink waits */
  assert_int_equal(out.capacity, 2);
  assert_int_equal(out.batches_out, 0);
  assert_true(wait_stats(e, "src", 2, 1, &src));  /* the pusher waits too */
  pthread_mutex_lock(&p.mu);
  int pushed = p.pushed;
  bool done = p.done;
  pthread_mutex_unlock(&p.mu);
  assert_false(done);
  assert_true(pushed < 400);
  assert_int_equal(clink_table_stats(e, "nope", &out), CLINK_ENOTFOUND);
  struct ArrowArrayStream st;
  assert_int_equal(clink_collect(e, "out", &st), 0);
  int64_t row = 0;
  for (;;) {
    struct ArrowArray a;
    assert_int_equal(clink_stream_poll(&st, DEADLINE_MS), 1);
    assert_int_equal(st.get_next(&st, &a), 0);
    if (!a.release) break;
    assert_int_equal(a.n_children, 3);
    const int32_t *off = a.children[0]->buffers[1];
    const char *kb = a.children[0]->buffers[2];
    const int64_t *ts = a.children[1]->buffers[1];
    const double *v = a.children[2]->buffers[1];
    for (int64_t r = 0; r < a.length; r++, row++) { /* the input's rule, row by row */
      char want[3] = {'k', (char)('0' + row % 5), 0};
      assert_int_equal(off[r + 1] - off[r], 2);
      assert_memory_equal(kb + off[r], want, 2);
      assert_int_equal(ts[r], 1000 + 37 * row);
      assert_true(v[r] == row / 4.0);
    }
    a.release(&a);
  }
  assert_int_equal(row, 400 * 100);
  pthread_join(th, NULL);
  assert_int_equal(p.pushed, 400);
  assert_int_equal(clink_job_wait(job, DEADLINE_MS), 0);
  out.size = sizeof out;
  assert_int_equal(clink_table_stats(e, "out", &out), 0);
  assert_int_equal(out.rows_in, 400 * 100);
  assert_int_equal(out.rows_out, 400 * 100);
  assert_int_equal(out.queued, 0);
  st.release(&st);
  clink_engine_close(e);
}

/* ---------------------------------------------------------------- update streams */

/* A batch (k VARCHAR, ts BIGINT, v DOUBLE): key "k<keys[r]>" (one digit), ts = r, v = vals[r]. */
static void make_kv(int n, const int *keys, const double *vals, struct ArrowArray *a,
                    struct ArrowSchema *s) {
  make_batch(0, n, a, s);
  hb_t *h = a->private_data;
  for (int r = 0; r < n; r++) {
    h->bytes[h->off[r] + 1] = (char)('0' + keys[r]);
    h->ts[r] = r;
    h->v[r] = vals[r];
  }
}

static const char *GROUPS =
    "CREATE TABLE src (k VARCHAR, ts BIGINT, v DOUBLE) WITH (connector = 'push');\n"
    "CREATE TABLE totals (k VARCHAR, total DOUBLE, n BIGINT) WITH (connector = 'collect');\n"
    "INSERT INTO totals SELECT k, SUM(v) AS total, COUNT(*) AS n FROM src GROUP BY k\n"
    "  HAVING SUM(v) > 0;\n";

typedef struct changes {
  int64_t kinds[4];          /* rows seen per kind */
  bool live[10];             /* the materialised table: key → row */
  double total[10];
  int64_t n[10];
} changes_t;

/* Reads batches until `rows` more changelog rows arrived (or the end, when rows < 0), applying
 * each to c in order: +I/+U set the key's row, -U/-D remove it. */
static void read_changes(struct ArrowArrayStream *st, changes_t *c, int64_t rows) {
  int64_t got = 0;
  while (rows < 0 || got < rows) {
    assert_int_equal(clink_stream_poll(st, DEADLINE_MS), 1);
    struct ArrowArray a;
    assert_int_equal(st->get_next(st, &a), 0);
    if (!a.release) {
      assert_true(rows < 0);
      return;
    }
    assert_int_equal(a.n_children, 4);
    const struct ArrowArray *op = a.children[0];
    assert_non_null(op->dictionary);
    assert_int_equal(op->dictionary->length, 4);
    assert_memory_equal(op->dictionary->buffers[2], "+I-U+U-D", 8);
    const int8_t *kind = op->buffers[1];
    const int32_t *off = a.children[1]->buffers[1];
    const char *kb = a.children[1]->buffers[2];
    const double *tot = a.children[2]->buffers[1];
    const int64_t *n = a.children[3]->buffers[1];
    for (int64_t r = 0; r < a.length; r++) {
      assert_true(kind[r] >= CLINK_ROW_INSERT && kind[r] <= CLINK_ROW_DELETE);
      int k = kb[off[r] + 1] - '0';
      assert_true(k >= 0 && k < 10);
      c->kinds[kind[r]]++;
      bool set = kind[r] == CLINK_ROW_INSERT || kind[r] == CLINK_ROW_UPDATE_AFTER;
      assert_int_equal(c->live[k], kind[r] != CLINK_ROW_INSERT); /* +I only for a new key */
      c->live[k] = set;
      c->total[k] = tot[r];
      c->n[k] = n[r];
    }
    got += a.length;
    a.release(&a);
  }
}

/* A GROUP BY through a collect table: the stream leads with the row kinds ("__op", int8 codes
 * over "+I" "-U" "+U" "-D", the upsert key in the metadata), deletes and updates arrive, and
 * the changelog applied in order equals the final per-key values computed here from the
 * input. Phases wait for their changes, so each kind shows at any parallelism. */
static void test_group_by_changelog(void **state) {
  for (int par = 1; par <= 2; par++) {
    clink_engine_t *e = open_engine(par, 4);
    clink_job_t *job;
    assert_int_equal(clink_exec(e, GROUPS, &job, 1, NULL), 0);
    struct ArrowArrayStream st;
    assert_int_equal(clink_collect(e, "totals", &st), 0);
    struct ArrowSchema sch;
    assert_int_equal(st.get_schema(&st, &sch), 0);
    assert_int_equal(sch.n_children, 4);
    assert_string_equal(sch.children[0]->name, "__op");
    assert_string_equal(sch.children[0]->format, "c");
    assert_non_null(sch.children[0]->dictionary);
    assert_string_equal(sch.children[0]->dictionary->format, "u");
    assert_string_equal(sch.children[1]->name, "k");
    assert_non_null(sch.metadata);
    int32_t npairs, klen, vlen;
    memcpy(&npairs, sch.metadata, 4);
    memcpy(&klen, sch.metadata + 4, 4);
    memcpy(&vlen, sch.metadata + 8 + klen, 4);
    assert_int_equal(npairs, 1);
    assert_memory_equal(sch.metadata + 8, "clink.upsert_key", (size_t)klen);
    assert_int_equal(vlen, 5);
    assert_memory_equal(sch.metadata + 12 + klen, "[\"k\"]", 5);
    sch.release(&sch);

    double want_total[10] = {0};
    int64_t want_n[10] = {0};
    changes_t c;
    memset(&c, 0, sizeof c);
    int keys[300];
    double vals[300];
    struct ArrowArray a;
    struct ArrowSchema s;
    /* 1: every key once, positive: ten inserts */
    for (int k = 0; k < 10; k++) keys[k] = k, vals[k] = k + 1;
    for (int k = 0; k < 10; k++) want_total[keys[k]] += vals[k], want_n[keys[k]]++;
    make_kv(10, keys, vals, &a, &s);
    assert_int_equal(clink_push(e, "src", &a, &s), 0);
    read_changes(&st, &c, 10);
    assert_int_equal(c.kinds[CLINK_ROW_INSERT], 10);
    /* 2: keys 0-4 fall below zero (HAVING fails: deletes), keys 5-9 grow (updates) */
    for (int k = 0; k < 10; k++) keys[k] = k, vals[k] = k < 5 ? -(k + 6) : 1;
    for (int k = 0; k < 10; k++) want_total[keys[k]] += vals[k], want_n[keys[k]]++;
    make_kv(10, keys, vals, &a, &s);
    assert_int_equal(clink_push(e, "src", &a, &s), 0);
    read_changes(&st, &c, 10);
    assert_int_equal(c.kinds[CLINK_ROW_DELETE], 5);
    assert_int_equal(c.kinds[CLINK_ROW_UPDATE_AFTER], 5);
    /* 3: 900 rows of every sign in three batches, then the end */
    for (int b = 0; b < 3; b++) {
      for (int r = 0; r < 300; r++) {
        int i = b * 300 + r;
        keys[r] = (i * 7) % 10;
        vals[r] = (double)((i * 13) % 11 - 5);
        want_total[keys[r]] += vals[r];
        want_n[keys[r]]++;
      }
      make_kv(300, keys, vals, &a, &s);
      assert_int_equal(clink_push(e, "src", &a, &s), 0);
    }
    assert_int_equal(clink_push_close(e, "src"), 0);
    read_changes(&st, &c, -1);
    int live = 0;
    for (int k = 0; k < 10; k++) {
      assert_int_equal(c.live[k], want_total[k] > 0);
      if (!c.live[k]) continue;
      live++;
      assert_true(c.total[k] == want_total[k]);
      assert_int_equal(c.n[k], want_n[k]);
    }
    assert_true(live > 0 && live < 10); /* the data set leaves both kinds of key */
    st.release(&st);
    assert_int_equal(clink_job_wait(job, DEADLINE_MS), 0);
    clink_engine_close(e);
  }
}

/* A stream whose schema was read before any job wrote its table is append-only: a job that
 * would write an update stream into it is refused, saying why; an append-only job is not. */
static void test_changelog_after_append_schema_refused(void **state) {
  clink_engine_t *e = open_engine(1, 4);
  assert_int_equal(clink_exec(e, "CREATE TABLE src (k VARCHAR, ts BIGINT, v DOUBLE) WITH "
                                 "(connector = 'push');\n"
                                 "CREATE TABLE t (k VARCHAR, n BIGINT) WITH "
                                 "(connector = 'collect');", NULL, 0, NULL), 0);
  struct ArrowArrayStream st;
  assert_int_equal(clink_collect(e, "t", &st), 0);
  struct ArrowSchema sch;
  assert_int_equal(st.get_schema(&st, &sch), 0);
  assert_int_equal(sch.n_children, 2);
  sch.release(&sch);
  assert_int_equal(clink_exec(e, "INSERT INTO t SELECT k, COUNT(*) AS n FROM src GROUP BY k;",
                              NULL, 0, NULL), CLINK_EINVAL);
  assert_non_null(strstr(clink_last_error(e, NULL, NULL), "update stream"));
  assert_int_equal(clink_exec(e, "INSERT INTO t SELECT k, ts AS n FROM src;", NULL, 0, NULL), 0);
  st.release(&st);
  clink_engine_close(e);
}

/* Closing with jobs running: they are cancelled and joined, an open stream then fails with
 * "the engine was closed" and is released afterwards, without leaks. */
static void test_close_with_jobs_running(void **state) {
  clink_engine_t *e = open_engine(2, 4);
  assert_int_equal(clink_exec(e, PASS, NULL, 0, NULL), 0);
  assert_int_equal(clink_exec(e, "CREATE TABLE src2 (k VARCHAR, ts BIGINT, v DOUBLE) WITH "
                                 "(connector = 'push');\n"
                                 "CREATE TABLE out2 (k VARCHAR, n BIGINT) WITH "
                                 "(connector = 'collect');\n"
                                 "INSERT INTO out2 SELECT k, COUNT(*) AS n FROM src2 GROUP BY k;",
                              NULL, 0, NULL), 0);
  struct ArrowArrayStream st;
  assert_int_equal(clink_collect(e, "out", &st), 0);
  struct ArrowArray a;
  struct ArrowSchema s;
  make_batch(0, 10, &a, &s);
  assert_int_equal(clink_push(e, "src", &a, &s), 0);
  struct ArrowArray got;
  assert_int_equal(st.get_next(&st, &got), 0); /* a batch the host keeps past the close */
  assert_non_null(got.release);
  assert_int_equal(got.length, 10);
  assert_int_equal(clink_await_all(e, 100), CLINK_ETIMEOUT);
  clink_engine_close(e);
  const int32_t *off = got.children[0]->buffers[1];
  const char *kb = got.children[0]->buffers[2];
  assert_memory_equal(kb + off[3], "k3", 2);
  got.release(&got);
  struct ArrowArray more;
  assert_int_not_equal(st.get_next(&st, &more), 0);
  assert_non_null(strstr(st.get_last_error(&st), "the engine was closed"));
  st.release(&st);
}

/* clink_query: a bare SELECT as a stream; the stream ends with the job. And the columns
 * leave without a copy: only BOOLEAN bytes are counted as copied. */
static void test_query_stream(void **state) {
  clink_engine_t *e = open_engine(1, 4);
  assert_int_equal(clink_exec(e, "CREATE TABLE src (k VARCHAR, ts BIGINT, v DOUBLE) WITH "
                                 "(connector = 'push');", NULL, 0, NULL), 0);
  struct ArrowArrayStream st;
  clink_job_t *job;
  int64_t copied0, inplace0;
  clink_arrow_bytes(&copied0, &inplace0);
  assert_int_equal(clink_query(e, "SELECT k, v * 2 AS v2, v > 10 AS big FROM src WHERE ts < 1370",
                               &st, &job), 0);
  struct ArrowArray a;
  struct ArrowSchema s;
  make_batch(0, 20, &a, &s); /* ts 1000, 1037, … : rows 0..9 pass */
  assert_int_equal(clink_push(e, "src", &a, &s), 0);
  assert_int_equal(clink_push_close(e, "src"), 0);
  struct ArrowSchema sch;
  assert_int_equal(st.get_schema(&st, &sch), 0);
  assert_string_equal(sch.children[2]->format, "b");
  sch.release(&sch);
  int64_t rows = 0;
  for (;;) {
    struct ArrowArray b;
    assert_int_equal(st.get_next(&st, &b), 0);
    if (!b.release) break;
    const double *v2 = b.children[1]->buffers[1];
    const uint8_t *big = b.children[2]->buffers[1];
    for (int64_t i = 0; i < b.length; i++) {
      assert_true(v2[i] == (rows + i) / 2.0);
      assert_int_equal((big[(i) >> 3] >> (i & 7)) & 1, (rows + i) / 4.0 > 10);
    }
    rows += b.length;
    b.release(&b);
  }
  assert_int_equal(rows, 10);
  int64_t copied, inplace;
  clink_arrow_bytes(&copied, &inplace);
  assert_int_equal(copied - copied0, 10);                       /* the BOOLEAN column's bytes */
  assert_true(inplace - inplace0 >= 10 * 8 + 11 * 4 + 20);      /* the others, in place */
  assert_int_equal(clink_job_wait(job, DEADLINE_MS), 0);
  st.release(&st);
  clink_engine_close(e);
}

/* A push source's watermark follows its event time while the table is open: a window closes
 * (and reaches the collect stream) as soon as a later row passes its end, before any close. */
static void test_windows_fire_while_pushing(void **state) {
  for (int par = 1; par <= 2; par++) {
    clink_engine_t *e = open_engine(par, 4);
    clink_job_t *job;
    assert_int_equal(clink_exec(e, PIPELINE, &job, 1, NULL), 0);
    struct ArrowArrayStream st;
    assert_int_equal(clink_collect(e, "out", &st), 0);
    struct ArrowArray a;
    struct ArrowSchema s;
    make_batch(0, 27, &a, &s); /* ts 1000 … 1962: window [1000, 2000) */
    assert_int_equal(clink_push(e, "src", &a, &s), 0);
    assert_int_equal(clink_stream_poll(&st, 300), 0); /* the window is still open */
    make_batch(100, 1, &a, &s); /* ts 4700: the watermark passes 2000 */
    assert_int_equal(clink_push(e, "src", &a, &s), 0);
    assert_int_equal(clink_stream_poll(&st, DEADLINE_MS), 1);
    int64_t n = 0;
    while (n < 27) {
      assert_int_equal(clink_stream_poll(&st, DEADLINE_MS), 1);
      struct ArrowArray b;
      assert_int_equal(st.get_next(&st, &b), 0);
      assert_non_null(b.release);
      const int64_t *ws = b.children[0]->buffers[1];
      const int64_t *cnt = b.children[2]->buffers[1];
      for (int64_t i = 0; i < b.length; i++) {
        assert_int_equal(ws[i], 1000);
        n += cnt[i];
      }
      b.release(&b);
    }
    assert_int_equal(n, 27);
    assert_int_equal(clink_job_status(job), CLINK_JOB_RUNNING);
    assert_int_equal(clink_stream_poll(NULL, 0), CLINK_EINVAL);
    st.release(&st);
    clink_engine_close(e);
  }
}

/* A collect stream released before its end: the job writing it fails instead of waiting for
 * ever for a reader, and later pushes into its source say the job is gone. */
static void test_released_stream_fails_its_job(void **state) {
  clink_engine_t *e = open_engine(1, 2);
  clink_job_t *job;
  assert_int_equal(clink_exec(e, PASS, &job, 1, NULL), 0);
  struct ArrowArrayStream st;
  assert_int_equal(clink_collect(e, "out", &st), 0);
  st.release(&st);
  int rc = 0;
  for (int i = 0; i < 1000 && rc == 0; i++) {
    struct ArrowArray a;
    struct ArrowSchema s;
    make_batch(i * 10, 10, &a, &s);
    rc = clink_push(e, "src", &a, &s);
  }
  assert_int_equal(rc, CLINK_ECLOSED);
  assert_non_null(strstr(clink_last_error(e, NULL, NULL), "the job reading this table ended"));
  assert_int_equal(clink_job_wait(job, DEADLINE_MS), CLINK_EINVAL);
  assert_int_equal(clink_job_status(job), CLINK_JOB_FAILED);
  assert_non_null(strstr(clink_job_error(job, NULL, NULL), "released before its end"));
  clink_engine_close(e);
}

/* ---------------------------------------------------------------- one_job (`clink run`) */

#include <sys/stat.h>
#include <unistd.h>

/* options.one_job runs a script the way `clink run` does: one job for the whole script,
 * errors naming the script, checkpoints in the directory itself, clink_job_stop draining to
 * FINISHED; push/collect tables have no host there. And clink_options_init, the function,
 * fills only the first layout (a program built against 0.1 has no room for more). */
static void test_one_job_is_clink_run(void **state) {
  clink_options_t o;
  (clink_options_init)(&o);
  assert_int_equal(o.size, offsetof(clink_options_t, script_name));
  clink_options_init(&o);
  assert_int_equal(o.size, sizeof o);
  assert_int_equal(o.max_restarts, -1);
  char dir[] = "/tmp/clink-lib-onejob-XXXXXX";
  assert_non_null(mkdtemp(dir));
  o.one_job = 1;
  o.script_name = "p.sql";
  o.checkpoint_dir = dir;
  o.checkpoint_interval_ms = 50;
  o.log_level = CLINK_LOG_ERROR;
  clink_engine_t *e = NULL;
  char err[256];
  assert_int_equal(clink_engine_open(&o, &e, err, sizeof err), 0);
  int line = 0, col = 0;
  assert_int_equal(clink_exec(e, "CREATE TABLE g (x BIGINT) WITH (connector = 'datagen');\n"
                                 "INSERTT INTO b SELECT x FROM g;", NULL, 0, NULL), CLINK_ESYNTAX);
  const char *msg = clink_last_error(e, &line, &col);
  assert_int_equal(line, 2);
  assert_true(strncmp(msg, "p.sql:2:1: error: ", 18) == 0);
  /* a NUL byte is SQL's business at its position, not the end of the text */
  assert_int_equal(clink_exec_len(e, "CREATE TABLE g (x BIGINT) WITH (connector = 'datagen');\n"
                                     "INSERT INTO b\0", 70, NULL, 0, NULL), CLINK_ESYNTAX);
  clink_last_error(e, &line, &col);
  assert_int_equal(line, 2);
  /* two INSERTs, one job; an unbounded source stopped by the host drains and FINISHES */
  clink_job_t *job = NULL;
  int nj = 0;
  assert_int_equal(clink_exec(e, "CREATE TABLE g (x BIGINT) WITH (connector = 'datagen', "
                                 "rows_per_second = '2000');\n"
                                 "CREATE TABLE b1 (x BIGINT) WITH (connector = 'blackhole');\n"
                                 "CREATE TABLE b2 (x BIGINT) WITH (connector = 'blackhole');\n"
                                 "INSERT INTO b1 SELECT x FROM g;\n"
                                 "INSERT INTO b2 SELECT x FROM g WHERE x > 10;", &job, 2, &nj), 0);
  assert_int_equal(nj, 1);
  char v1[300];
  snprintf(v1, sizeof v1, "%s/v1", dir);
  struct stat sb;
  int waited = 0;
  for (; waited < DEADLINE_MS && stat(v1, &sb) != 0; waited += 10) { /* its first checkpoint */
    struct timespec d = {0, 10 * 1000000L};
    nanosleep(&d, NULL);
  }
  assert_int_equal(stat(v1, &sb), 0); /* <dir>/v1, not <dir>/job-1/v1 */
  assert_int_equal(clink_job_wait(job, 0), CLINK_ETIMEOUT);
  int64_t read = 0, written = 0;
  for (waited = 0; waited < DEADLINE_MS && written < 100; waited += 10) { /* rows flow */
    clink_job_counts(job, &read, &written);
    struct timespec d = {0, 10 * 1000000L};
    nanosleep(&d, NULL);
  }
  clink_job_stop(job);
  assert_int_equal(clink_job_wait(job, DEADLINE_MS), 0);
  assert_int_equal(clink_job_status(job), CLINK_JOB_FINISHED);
  clink_job_counts(job, &read, &written);
  assert_true(read >= 100 && written >= 100); /* it ran, and stopping it ended it FINISHED */
  clink_engine_close(e);
  /* push and collect tables have no host in this mode: the job fails saying so */
  o.checkpoint_dir = NULL;
  o.max_restarts = 0;
  assert_int_equal(clink_engine_open(&o, &e, err, sizeof err), 0);
  clink_job_t *j2 = NULL;
  assert_int_equal(clink_exec(e, "CREATE TABLE g (x BIGINT) WITH (connector = 'datagen');\n"
                                 "CREATE TABLE c (x BIGINT) WITH (connector = 'collect');\n"
                                 "INSERT INTO c SELECT x FROM g;", &j2, 1, NULL), 0);
  assert_int_not_equal(clink_job_wait(j2, DEADLINE_MS), 0);
  assert_non_null(strstr(clink_job_error(j2, NULL, NULL), "embeds clink"));
  clink_engine_close(e);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_push_tumble_collect),
      cmocka_unit_test(test_errors_carry_position),
      cmocka_unit_test(test_cancel_while_reader_blocked),
      cmocka_unit_test(test_backpressure_never_drops),
      cmocka_unit_test(test_close_with_jobs_running),
      cmocka_unit_test(test_query_stream),
      cmocka_unit_test(test_windows_fire_while_pushing),
      cmocka_unit_test(test_released_stream_fails_its_job),
      cmocka_unit_test(test_group_by_changelog),
      cmocka_unit_test(test_changelog_after_append_schema_refused),
      cmocka_unit_test(test_one_job_is_clink_run),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
