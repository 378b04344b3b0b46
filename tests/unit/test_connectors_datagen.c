/*
 * DESIGN: unit tests for connector='datagen' (connectors/datagen.c): output is a pure function
 * of (seed, row index) — identical across runs, and the union of the subtasks' rows at any
 * parallelism equals the parallelism-1 rows; sequence/random/choice/null_rate semantics;
 * bounded END; snapshot/restore resumes exactly; pacing by rows_per_second sleeps rather than
 * spins; check() rejects bad generator options with helpful messages.
 * Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <time.h>

#include "base/time.h"
#include "connectors/connectors.h"
#include "test_connectors_util.h"

#define SPEC "id BIGINT, ts TIMESTAMP, temp DOUBLE, n INT, name VARCHAR, sensor VARCHAR, ok BOOLEAN, m DECIMAL(8,2), f FLOAT"

typedef struct fx {
  ck_arena_t arena;
  ck_schema_t schema;
  ck_options_t opts;
  int64_t blocks;
} fx_t;

static fx_t *fx_new(const char *spec, ...) {
  fx_t *f = calloc(1, sizeof *f);
  f->blocks = ck_mem_stats().live_blocks;
  ck_arena_init(&f->arena, 4096);
  f->schema = t_schema(&f->arena, spec);
  va_list ap;
  int n = 0;
  va_start(ap, spec);
  while (va_arg(ap, const char *)) n++;
  va_end(ap);
  f->opts.n = n / 2;
  f->opts.keys = ck_arena_zalloc(&f->arena, sizeof(char *) * (size_t)(n + 1));
  f->opts.values = ck_arena_zalloc(&f->arena, sizeof(char *) * (size_t)(n + 1));
  va_start(ap, spec);
  for (int i = 0; i < f->opts.n; i++) {
    f->opts.keys[i] = va_arg(ap, const char *);
    f->opts.values[i] = va_arg(ap, const char *);
  }
  va_end(ap);
  return f;
}

static void fx_free(fx_t *f) {
  ck_arena_fini(&f->arena);
  assert_int_equal(ck_mem_stats().live_blocks, f->blocks);
  free(f);
}

static ck_source_t mk(fx_t *f, int subtask, int par) {
  ck_source_t src = {ck_datagen_connector.source, {"gen", &f->schema, &f->opts, subtask, par, "job"}, NULL};
  ck_error_t err;
  ck_error_clear(&err);
  int rc = src.ops->open(&src, &err);
  if (rc) fail_msg("open failed: %s", err.message);
  return src;
}

/* Polls up to max_polls times (or until END) with max_rows each; rows appended to out as JSON. */
static int pull(fx_t *f, ck_source_t *src, int max_rows, int max_polls, ck_buf_t *out) {
  ck_batch_t *batch = t_batch(&f->schema);
  ck_error_t err;
  ck_error_clear(&err);
  int rc = 0;
  for (int i = 0; max_polls < 0 || i < max_polls; i++) {
    int p = -1;
    ck_batch_clear(batch);
    rc = src->ops->poll(src, batch, max_rows, 1000, &p, &err);
    assert_true(rc > 0);
    if (rc == CK_SRC_END) break;
    assert_int_equal(p, 0);
    for (size_t r = 0; r < batch->nrows; r++) {
      char *row = t_row_json(&f->schema, batch, r);
      ck_buf_puts(out, row);
      ck_buf_putc(out, '\n');
      ck_free(row);
    }
  }
  ck_batch_free(batch);
  return rc;
}

/* Splits JSON lines into an array (pointers into text, which is modified). */
static int lines_of(char *text, char **lines, int max) {
  int n = 0;
  for (char *p = text; *p && n < max;) {
    char *nl = strchr(p, '\n');
    *nl = 0;
    lines[n++] = p;
    p = nl + 1;
  }
  return n;
}

static void test_datagen_union_over_parallelism_equals_single(void **state) {
  fx_t *f = fx_new(SPEC, "rows", "97", "seed", "42", "fields.id.kind", "sequence",
                   "fields.ts.start", "1772352000000", "fields.ts.step", "1000",
                   "fields.sensor.kind", "choice", "fields.sensor.values", "sensor-01, sensor-02,sensor-03",
                   "fields.n.start", "-5", "fields.n.end", "5", "fields.name.null_rate", "0.3",
                   "fields.m.start", "-10.5", "fields.m.end", "10.5", NULL);
  ck_buf_t single;
  ck_buf_init(&single);
  ck_source_t s1 = mk(f, 0, 1);
  assert_int_equal(s1.ops->npartitions(&s1), 1);
  assert_int_equal(pull(f, &s1, 10, -1, &single), CK_SRC_END);
  s1.ops->close(&s1);
  char *lines1[200];
  int n1 = lines_of(single.data, lines1, 200);
  assert_int_equal(n1, 97);
  for (int par = 2; par <= 4; par++) {
    char *merged[200] = {0};
    int total = 0;
    ck_buf_t outs[4];
    for (int s = 0; s < par; s++) {
      ck_buf_init(&outs[s]);
      ck_source_t src = mk(f, s, par);
      assert_int_equal(pull(f, &src, 7, -1, &outs[s]), CK_SRC_END);
      src.ops->close(&src);
      char *lines[200];
      int n = lines_of(outs[s].data, lines, 200);
      for (int i = 0; i < n; i++) {
        /* subtask s makes rows s, s+P, …: the i-th line is global row s + i*P */
        int g = s + i * par;
        assert_true(g < 97);
        assert_null(merged[g]);
        merged[g] = lines[i];
      }
      total += n;
    }
    assert_int_equal(total, 97);
    for (int g = 0; g < 97; g++) assert_string_equal(merged[g], lines1[g]);
    for (int s = 0; s < par; s++) ck_buf_fini(&outs[s]);
  }
  /* spot checks on the values themselves */
  assert_non_null(strstr(lines1[0], "\"id\":0,"));
  assert_non_null(strstr(lines1[0], "\"ts\":\"2026-03-01 08:00:00.000\""));
  assert_non_null(strstr(lines1[96], "\"id\":96,"));
  assert_non_null(strstr(lines1[96], "\"ts\":\"2026-03-01 08:01:36.000\""));
  ck_buf_fini(&single);
  fx_free(f);
}

static void test_datagen_same_seed_same_rows_other_seed_differs(void **state) {
  char *out[3];
  const char *seeds[3] = {"7", "7", "8"};
  for (int k = 0; k < 3; k++) {
    fx_t *f = fx_new("a BIGINT, b DOUBLE, c VARCHAR", "rows", "50", "seed", seeds[k], NULL);
    ck_buf_t b;
    ck_buf_init(&b);
    ck_source_t src = mk(f, 0, 1);
    pull(f, &src, 13, -1, &b);
    src.ops->close(&src);
    out[k] = strdup(b.data);
    ck_buf_fini(&b);
    fx_free(f);
  }
  assert_true(strlen(out[0]) > 50 * 20);
  assert_string_equal(out[0], out[1]);
  assert_string_not_equal(out[0], out[2]);
  for (int k = 0; k < 3; k++) free(out[k]);
}

static void test_datagen_generators(void **state) {
  fx_t *f = fx_new("seq BIGINT, wrap INT, r INT, d DOUBLE, c VARCHAR, s VARCHAR, nul INT, b BOOLEAN, dec DECIMAL(6,2), fs DOUBLE",
                   "rows", "2000", "fields.seq.kind", "sequence", "fields.seq.start", "100", "fields.seq.step", "-3",
                   "fields.wrap.kind", "sequence", "fields.wrap.start", "1", "fields.wrap.end", "3",
                   "fields.r.start", "10", "fields.r.end", "12", "fields.d.start", "0.5", "fields.d.end", "1.5",
                   "fields.c.kind", "choice", "fields.c.values", "x,y", "fields.s.length", "6",
                   "fields.nul.null_rate", "0.5", "fields.b.kind", "sequence",
                   "fields.dec.kind", "sequence", "fields.dec.start", "1.25", "fields.dec.step", "0.5",
                   "fields.fs.kind", "sequence", "fields.fs.start", "0.5", "fields.fs.step", "0.25", NULL);
  ck_source_t src = mk(f, 0, 1);
  ck_batch_t *batch = t_batch(&f->schema);
  ck_error_t err;
  ck_error_clear(&err);
  int p;
  assert_int_equal(src.ops->poll(&src, batch, 5000, 0, &p, &err), CK_SRC_DATA);
  assert_int_equal(batch->nrows, 2000);
  int nulls = 0, seen_r[3] = {0}, seen_c[2] = {0};
  for (size_t i = 0; i < 2000; i++) {
    assert_int_equal(ck_col_i64(&batch->cols[0], i), 100 - 3 * (int64_t)i);
    assert_int_equal(ck_col_i32(&batch->cols[1], i), 1 + (int)(i % 3));
    int r = ck_col_i32(&batch->cols[2], i);
    assert_in_range(r, 10, 12);
    seen_r[r - 10]++;
    double d = ck_col_f64(&batch->cols[3], i);
    assert_true(d >= 0.5 && d < 1.5);
    size_t n;
    const char *c = ck_col_str(&batch->cols[4], i, &n);
    assert_int_equal(n, 1);
    assert_true(c[0] == 'x' || c[0] == 'y');
    seen_c[c[0] - 'x']++;
    const char *s = ck_col_str(&batch->cols[5], i, &n);
    assert_int_equal(n, 6);
    for (size_t k = 0; k < n; k++) assert_true((s[k] >= 'a' && s[k] <= 'z') || (s[k] >= '0' && s[k] <= '9'));
    nulls += !ck_col_valid(&batch->cols[6], i);
    assert_int_equal(ck_col_bool(&batch->cols[7], i), (i & 1) != 0);
    assert_true(ck_col_dec(&batch->cols[8], i) == 125 + 50 * (ck_i128)i);
    assert_true(ck_col_f64(&batch->cols[9], i) == 0.5 + 0.25 * (double)i);
  }
  for (int k = 0; k < 3; k++) assert_in_range(seen_r[k], 500, 830); /* each of 3 values ~667 */
  for (int k = 0; k < 2; k++) assert_in_range(seen_c[k], 850, 1150);
  assert_in_range(nulls, 850, 1150);
  for (int c = 0; c < batch->ncols; c++)
    if (c != 6) /* only the column with a null_rate has NULLs */
      for (size_t i = 0; i < 2000; i++) assert_true(ck_col_valid(&batch->cols[c], i));
  assert_int_equal(src.ops->poll(&src, batch, 10, 0, &p, &err), CK_SRC_END);
  ck_batch_free(batch);
  src.ops->close(&src);
  fx_free(f);
}

static void test_datagen_bounds(void **state) {
  fx_t *f = fx_new("a BIGINT", "rows", "0", NULL);
  ck_source_t src = mk(f, 0, 1);
  ck_buf_t b;
  ck_buf_init(&b);
  assert_int_equal(pull(f, &src, 10, -1, &b), CK_SRC_END);
  assert_int_equal(b.len, 0);
  src.ops->close(&src);
  fx_free(f);
  /* rows=3 at parallelism 5: subtasks 3 and 4 end at once; 0..2 make one row each */
  f = fx_new("a BIGINT", "rows", "3", "fields.a.kind", "sequence", NULL);
  for (int s = 0; s < 5; s++) {
    ck_buf_reset(&b);
    ck_source_t x = mk(f, s, 5);
    assert_int_equal(pull(f, &x, 10, -1, &b), CK_SRC_END);
    char want[32];
    snprintf(want, sizeof want, "{\"a\":%d}\n", s);
    assert_string_equal(b.data ? b.data : "", s < 3 ? want : "");
    x.ops->close(&x);
  }
  ck_buf_fini(&b);
  fx_free(f);
  /* unbounded: keeps going */
  f = fx_new("a BIGINT", NULL);
  ck_source_t u = mk(f, 0, 1);
  ck_buf_t ub;
  ck_buf_init(&ub);
  assert_int_equal(pull(f, &u, 1000, 5, &ub), CK_SRC_DATA);
  char *lines[6000];
  assert_int_equal(lines_of(ub.data, lines, 6000), 5000);
  ck_buf_fini(&ub);
  u.ops->close(&u);
  fx_free(f);
}

static void test_datagen_snapshot_restore(void **state) {
  fx_t *f = fx_new("a BIGINT, s VARCHAR", "rows", "100", "seed", "3", NULL);
  for (int par = 1; par <= 2; par++) {
    for (int s = 0; s < par; s++) {
      ck_buf_t whole, head, tail;
      ck_buf_init(&whole);
      ck_buf_init(&head);
      ck_buf_init(&tail);
      ck_source_t a = mk(f, s, par);
      pull(f, &a, 9, -1, &whole);
      a.ops->close(&a);
      ck_source_t b = mk(f, s, par);
      pull(f, &b, 9, 2, &head);
      ck_buf_t snap;
      ck_buf_init(&snap);
      ck_error_t err;
      ck_error_clear(&err);
      assert_int_equal(b.ops->snapshot(&b, &snap, &err), 0);
      b.ops->close(&b);
      /* restore before open, as the runtime may do */
      ck_source_t c = {ck_datagen_connector.source, {"gen", &f->schema, &f->opts, s, par, "job"}, NULL};
      assert_int_equal(c.ops->restore(&c, snap.data, snap.len, &err), 0);
      assert_int_equal(c.ops->open(&c, &err), 0);
      pull(f, &c, 9, -1, &tail);
      c.ops->close(&c);
      ck_buf_puts(&head, tail.data);
      assert_string_equal(head.data, whole.data);
      /* a state taken at another parallelism is refused */
      ck_source_t d = mk(f, 0, 3);
      ck_error_clear(&err);
      assert_int_equal(d.ops->restore(&d, snap.data, snap.len, &err), CK_ESTATE);
      assert_non_null(strstr(err.message, "parallelism"));
      ck_error_clear(&err);
      assert_int_equal(d.ops->restore(&d, "\x01\x80", 2, &err), CK_ESTATE);
      d.ops->close(&d);
      ck_buf_fini(&snap);
      ck_buf_fini(&whole);
      ck_buf_fini(&head);
      ck_buf_fini(&tail);
    }
  }
  fx_free(f);
}

static void test_datagen_rows_per_second_paces_without_spinning(void **state) {
  fx_t *f = fx_new("a BIGINT", "rows", "41", "rows_per_second", "200", NULL);
  ck_source_t src = mk(f, 0, 1);
  ck_batch_t *batch = t_batch(&f->schema);
  ck_error_t err;
  ck_error_clear(&err);
  int64_t t0 = ck_mono_ms();
  clock_t c0 = clock();
  int rows = 0, rc, p, idle = 0;
  while ((rc = src.ops->poll(&src, batch, 1000, 20, &p, &err)) != CK_SRC_END) {
    if (rc == CK_SRC_IDLE) idle++;
    rows = (int)batch->nrows;
  }
  int64_t wall = ck_mono_ms() - t0;
  double cpu_ms = (double)(clock() - c0) * 1000.0 / CLOCKS_PER_SEC;
  assert_int_equal(rows, 41);
  /* 41 rows at 200/s: the last is due 200 ms after the first */
  if (wall < 190 || wall > 2000) fail_msg("41 rows at 200/s took %lld ms", (long long)wall);
  if (cpu_ms > wall * 0.5) fail_msg("pacing burned %.0f ms of CPU in %lld ms", cpu_ms, (long long)wall);
  /* a zero timeout never sleeps: it returns IDLE at once when no row is due */
  fx_t *slow = fx_new("a BIGINT", "rows_per_second", "1", NULL);
  ck_source_t z = mk(slow, 0, 1);
  ck_batch_clear(batch);
  assert_int_equal(z.ops->poll(&z, batch, 1000, 0, &p, &err), CK_SRC_DATA); /* row 0 is due at once */
  ck_batch_clear(batch);
  int64_t t1 = ck_mono_ms();
  /* row 1 is due a second later: had the poll slept until then it would return DATA */
  assert_int_equal(z.ops->poll(&z, batch, 1000, 0, &p, &err), CK_SRC_IDLE);
  assert_int_equal(batch->nrows, 0);
  /* a timeout caps the sleep: IDLE after about 30 ms, not a second */
  assert_int_equal(z.ops->poll(&z, batch, 1000, 30, &p, &err), CK_SRC_IDLE);
  int64_t waited = ck_mono_ms() - t1;
  if (waited < 25 || waited > 600) fail_msg("a 30 ms timeout waited %lld ms", (long long)waited);
  z.ops->close(&z);
  fx_free(slow);
  /* parallelism 2 shares the rate: each subtask makes 100/s */
  fx_t *g = fx_new("a BIGINT", "rows_per_second", "200", NULL);
  ck_source_t h = mk(g, 1, 2);
  int64_t t2 = ck_mono_ms();
  int made = 0;
  while (ck_mono_ms() - t2 < 200) {
    ck_batch_clear(batch);
    if (h.ops->poll(&h, batch, 1000, 10, &p, &err) == CK_SRC_DATA) made += (int)batch->nrows;
  }
  assert_in_range(made, 17, 30); /* ~20 rows in 200 ms (plus the first, due at once) */
  h.ops->close(&h);
  fx_free(g);
  ck_batch_free(batch);
  src.ops->close(&src);
  fx_free(f);
}

static void check_err(const char *spec, const char *msg, const char *hint, ...) {
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_schema_t schema = t_schema(&arena, spec);
  va_list ap;
  int n = 0;
  va_start(ap, hint);
  while (va_arg(ap, const char *)) n++;
  va_end(ap);
  ck_options_t opts = {n / 2, ck_arena_zalloc(&arena, sizeof(char *) * (size_t)(n + 1)),
                       ck_arena_zalloc(&arena, sizeof(char *) * (size_t)(n + 1))};
  va_start(ap, hint);
  for (int i = 0; i < opts.n; i++) {
    opts.keys[i] = va_arg(ap, const char *);
    opts.values[i] = va_arg(ap, const char *);
  }
  va_end(ap);
  ck_error_t err;
  ck_error_clear(&err);
  int rc = ck_datagen_connector.check(&schema, &opts, false, &err);
  if (!msg) {
    if (rc) fail_msg("unexpected error: %s", err.message);
  } else {
    assert_int_equal(rc, CK_EOPTION);
    if (!strstr(err.message, msg)) fail_msg("message \"%s\" lacks \"%s\"", err.message, msg);
    if (hint && !strstr(err.hint, hint)) fail_msg("hint \"%s\" lacks \"%s\"", err.hint, hint);
  }
  ck_arena_fini(&arena);
}

static void test_datagen_check(void **state) {
  check_err("temp DOUBLE", NULL, NULL, "fields.temp.kind", "random", "fields.temp.end", "40", NULL);
  check_err("temp DOUBLE", "names no column of the table", "did you mean column 'temp'?", "fields.tmp.kind", "random", NULL);
  check_err("temp DOUBLE", "unknown datagen setting 'knd'", "did you mean 'fields.temp.kind'?", "fields.temp.knd", "random", NULL);
  check_err("temp DOUBLE", "must be one of sequence|random|choice, not 'gaussian'", NULL, "fields.temp.kind", "gaussian", NULL);
  check_err("c VARCHAR", "has kind choice but no option 'fields.c.values'", NULL, "fields.c.kind", "choice", NULL);
  check_err("n INT", "'x' is not a value of type INT", NULL, "fields.n.kind", "choice", "fields.n.values", "1,x", NULL);
  check_err("n INT", "'fields.n.start' must be a value of type INT, not '3000000000'", NULL, "fields.n.start", "3000000000", NULL);
  check_err("n INT", "start 9 is above end 2", NULL, "fields.n.start", "9", "fields.n.end", "2", NULL);
  check_err("n INT", "'fields.n.step' must not be 0", NULL, "fields.n.kind", "sequence", "fields.n.step", "0", NULL);
  check_err("n INT", "never reaches end", NULL, "fields.n.kind", "sequence", "fields.n.start", "5", "fields.n.end", "1", NULL);
  check_err("n INT", "null_rate' must be a number from 0 to 1", NULL, "fields.n.null_rate", "1.5", NULL);
  check_err("n INT", "must be -1 or at least 0", NULL, "rows", "-2", NULL);
  check_err("n INT", "must look like fields.<column>.<setting>", NULL, "fields.n", "1", NULL);
  check_err("Temp DOUBLE", NULL, NULL, "fields.temp.kind", "sequence", NULL); /* column names are case-insensitive */
}

/* A sequence never wraps silently at its column type's limit: refused at plan time when
 * `rows` bounds it, else the rows before the first value that does not fit come out and the
 * next poll fails naming the column. With an end it wraps, as documented. */
static void test_datagen_sequence_that_leaves_its_type(void **state) {
  check_err("n INT", "a sequence from 0 by 1 over 3000000000 rows reaches 2999999999, which does "
            "not fit INT", "fields.n.end", "fields.n.kind", "sequence", "rows", "3000000000", NULL);
  check_err("n INT", "a sequence from 2147483645 by 1 over 4 rows reaches 2147483648, which does "
            "not fit INT", NULL, "fields.n.kind", "sequence", "fields.n.start", "2147483645",
            "rows", "4", NULL);
  check_err("n INT", "from 0 by -1000 over 2147485 rows reaches -2147484000", NULL,
            "fields.n.kind", "sequence", "fields.n.step", "-1000", "rows", "2147485", NULL);
  check_err("n INT", NULL, NULL, "fields.n.kind", "sequence", "fields.n.start", "2147483645",
            "rows", "3", NULL); /* the last row is INT_MAX: fits */
  check_err("b BIGINT", "which does not fit BIGINT", NULL, "fields.b.kind", "sequence",
            "fields.b.start", "9223372036854775807", "rows", "2", NULL);
  check_err("s VARCHAR", "which does not fit VARCHAR", NULL, "fields.s.kind", "sequence",
            "fields.s.start", "9223372036854775807", "rows", "2", NULL);
  check_err("m DECIMAL(4,2)", "reaches 100.00, which does not fit DECIMAL(4, 2)", NULL,
            "fields.m.kind", "sequence", "fields.m.start", "99.99", "fields.m.step", "0.01",
            "rows", "2", NULL);
  check_err("f FLOAT", "which does not fit FLOAT", NULL, "fields.f.kind", "sequence",
            "fields.f.start", "3e38", "fields.f.step", "1e38", "rows", "2", NULL);
  check_err("f FLOAT", "'fields.f.start' must be a value of type FLOAT, not '1e39'", NULL,
            "fields.f.start", "1e39", NULL);
  check_err("n INT", NULL, NULL, "fields.n.kind", "sequence", "fields.n.start", "2147483640",
            "fields.n.end", "2147483647", "rows", "3000000000", NULL); /* wraps at its end */

  /* unbounded: the rows that fit come out, then the job stops at the one that does not */
  fx_t *f = fx_new("n INT", "fields.n.kind", "sequence", "fields.n.start", "2147483645", NULL);
  ck_source_t src = mk(f, 0, 1);
  ck_batch_t *batch = t_batch(&f->schema);
  ck_error_t err;
  ck_error_clear(&err);
  int p;
  assert_int_equal(src.ops->poll(&src, batch, 10, 1000, &p, &err), CK_SRC_DATA);
  assert_int_equal(batch->nrows, 3);
  assert_int_equal(ck_col_i32(&batch->cols[0], 2), INT32_MAX);
  ck_batch_clear(batch);
  assert_int_equal(src.ops->poll(&src, batch, 10, 1000, &p, &err), CK_EEVAL);
  assert_string_equal(err.message, "could not generate row 3 of datagen column 'n': its sequence "
                                   "leaves INT there");
  assert_int_equal(batch->nrows, 0);
  assert_int_equal(batch->cols[0].len, 0);
  ck_batch_free(batch);
  src.ops->close(&src);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_datagen_union_over_parallelism_equals_single),
      cmocka_unit_test(test_datagen_same_seed_same_rows_other_seed_differs),
      cmocka_unit_test(test_datagen_generators),
      cmocka_unit_test(test_datagen_bounds),
      cmocka_unit_test(test_datagen_snapshot_restore),
      cmocka_unit_test(test_datagen_rows_per_second_paces_without_spinning),
      cmocka_unit_test(test_datagen_check),
      cmocka_unit_test(test_datagen_sequence_that_leaves_its_type),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
