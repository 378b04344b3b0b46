/*
 * DESIGN: unit tests for the fallback of the restore rule (ck_lineage_start): when the newest
 * completed checkpoint cannot be restored, the newest one that can is restored exactly when
 * the job's sinks allow it — no rigid sink (at-least-once sinks, and exactly-once ones that
 * take back what they committed after it) — and refused otherwise, saying whether the output
 * after it was committed (CONFIRMED) or may have been. Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/lineage.h"
#include "checkpoint/store.h"

#define JOB "a test job graph"

typedef struct fx {
  char dir[64];
  ck_store_t store;
} fx_t;

static int setup(void **state) {
  fx_t *f = calloc(1, sizeof *f);
  snprintf(f->dir, sizeof f->dir, "/tmp/ck-fallback-XXXXXX");
  if (!mkdtemp(f->dir)) return -1;
  ck_error_t err;
  ck_error_clear(&err);
  ck_lineage_t lin;
  if (ck_lineage_begin(f->dir, JOB, 1, false, 2, &lin, &err)) return -1;
  if (ck_store_open(f->dir, &f->store, &err)) return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx_t *f = *state;
  ck_store_close(&f->store);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
  if (system(cmd)) return -1;
  free(f);
  return 0;
}

/* Checkpoints 1..n of two subtasks, completed (and confirmed up to `confirmed`). */
static void checkpoints(fx_t *f, int64_t n, int64_t confirmed) {
  ck_error_t err;
  ck_error_clear(&err);
  for (int64_t id = 1; id <= n; id++) {
    for (int t = 0; t < 2; t++) {
      ck_buf_t file;
      ck_buf_init(&file);
      ck_snap_section_t sec = {.node = 1, .kind = CK_SNAP_SOURCE, .data = "pos", .len = 3};
      ck_snap_encode(id, ck_lineage_fingerprint(JOB), t, &sec, 1, &file);
      char rel[128];
      ck_snap_path(t, id, rel, sizeof rel);
      assert_int_equal(ck_store_write(&f->store, rel, file.data, file.len, &err), 0);
      ck_buf_fini(&file);
    }
    assert_int_equal(ck_store_mark(&f->store, "completed", id, &err), 0);
    if (id <= confirmed) assert_int_equal(ck_store_mark(&f->store, "confirmed", id, &err), 0);
  }
}

static void damage(fx_t *f, int task, int64_t id) {
  char path[512];
  snprintf(path, sizeof path, "%s/v1/%d/checkpoint-%lld.snap", f->dir, task, (long long)id);
  FILE *fp = fopen(path, "r+b");
  assert_non_null(fp);
  fseek(fp, -2, SEEK_END);
  fputc('~', fp);
  fclose(fp);
}

static int start(fx_t *f, const char *rigid, ck_lineage_t *lin, ck_error_t *err) {
  ck_lineage_opts_t o = {JOB, 1, false, 0, 2, rigid};
  ck_error_clear(err);
  return ck_lineage_start(f->dir, &o, lin, err);
}

static void test_falls_back_when_no_sink_is_rigid(void **state) {
  fx_t *f = *state;
  checkpoints(f, 4, 4);
  damage(f, 0, 4);
  damage(f, 1, 3);
  ck_lineage_t lin;
  ck_error_t err;
  assert_int_equal(start(f, NULL, &lin, &err), 0);
  assert_int_equal(lin.restore_id, 2);
  assert_int_equal(lin.latest_completed, 4);
  assert_int_equal(lin.ids_above, 4);
  assert_string_equal(lin.why, "fell back from checkpoint 4, which cannot be restored");
}

static void test_a_rigid_sink_refuses_over_committed_output(void **state) {
  fx_t *f = *state;
  checkpoints(f, 3, 3);
  damage(f, 1, 3);
  ck_lineage_t lin;
  ck_error_t err;
  assert_int_equal(start(f, "kafka_out", &lin, &err), CK_ESTATE);
  assert_non_null(strstr(err.message, "v1/1/checkpoint-3.snap"));
  assert_non_null(strstr(err.detail, "sink 'kafka_out'"));
  assert_non_null(strstr(err.detail, "was committed"));
  assert_int_equal(lin.restore_id, 0);
}

static void test_a_rigid_sink_refuses_when_the_commit_is_in_doubt(void **state) {
  fx_t *f = *state;
  checkpoints(f, 3, 2); /* 3 completed; whether its commit happened is not on record */
  damage(f, 0, 3);
  ck_lineage_t lin;
  ck_error_t err;
  assert_int_equal(start(f, "kafka_out", &lin, &err), CK_ESTATE);
  assert_non_null(strstr(err.detail, "may have been committed"));
  /* the remedy the hint names works: without the marker, 2 is the newest and restores */
  char path[512];
  snprintf(path, sizeof path, "%s/v1/_meta/completed-3", f->dir);
  assert_non_null(strstr(err.hint, path));
  assert_int_equal(remove(path), 0);
  assert_int_equal(start(f, "kafka_out", &lin, &err), 0);
  assert_int_equal(lin.restore_id, 2);
  assert_int_equal(lin.ids_above, 3); /* 3's snapshots keep its id used */
}

static void test_an_intact_newest_is_restored_whatever_the_sinks(void **state) {
  fx_t *f = *state;
  checkpoints(f, 3, 3);
  damage(f, 0, 2);
  ck_lineage_t lin;
  ck_error_t err;
  assert_int_equal(start(f, "kafka_out", &lin, &err), 0);
  assert_int_equal(lin.restore_id, 3);
  assert_string_equal(lin.why, "resuming its own last completed checkpoint");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_falls_back_when_no_sink_is_rigid, setup, teardown),
      cmocka_unit_test_setup_teardown(test_a_rigid_sink_refuses_over_committed_output, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_a_rigid_sink_refuses_when_the_commit_is_in_doubt,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_an_intact_newest_is_restored_whatever_the_sinks,
                                      setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
