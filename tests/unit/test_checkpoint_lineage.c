/*
 * DESIGN: unit tests for the restore rule (src/checkpoint/lineage.c) over checkpoint
 * directories built by hand, so each case is exactly the one named.
 *
 * Many checkpoints: 10,000 and 100,000 completed markers on disk (created directly, newest
 * first, so the newest is never among the first names a directory listing happens to return),
 * only the newest three with snapshot files (as retention leaves them): the rerun restores the
 * newest. Pruning: a coordinator completing 100 checkpoints keeps _meta bounded; the id floor
 * keeps ids above every id used even when every marker and snapshot is gone. Damage: a
 * damaged newest snapshot, missing snapshot files and a task directory replaced by a file are
 * refused with the file's path, never a fresh start; through ck_lineage_start the fallback to
 * the newest restorable checkpoint happens exactly when the sinks allow it.
 * Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "checkpoint/coord.h"
#include "checkpoint/lineage.h"
#include "checkpoint/store.h"

#define JOB "a test job graph"

typedef struct fx {
  char dir[80];
  ck_store_t store;
} fx_t;

static int setup(void **state) {
  fx_t *f = calloc(1, sizeof *f);
  /* tmpfs where there is one: 100,000 files are made in well under a second there */
  snprintf(f->dir, sizeof f->dir, "%s/ck-lineage-XXXXXX",
           access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
  if (!mkdtemp(f->dir)) return -1;
  ck_error_t err;
  ck_error_clear(&err);
  /* a first run: the directory now belongs to JOB */
  ck_lineage_t lin;
  if (ck_lineage_begin(f->dir, JOB, 1, false, 1, &lin, &err)) return -1;
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

/* An empty marker file, made directly (not durably: fast, and the same to a reader). */
static void touch(fx_t *f, const char *rel) {
  char path[512];
  snprintf(path, sizeof path, "%s/v1/%s", f->dir, rel);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  close(fd);
}

static void marker(fx_t *f, const char *kind, int64_t id) {
  char rel[64];
  snprintf(rel, sizeof rel, "_meta/%s-%lld", kind, (long long)id);
  touch(f, rel);
}

/* A valid snapshot of `task` for checkpoint id, with one source section. */
static void snapshot(fx_t *f, int task, int64_t id) {
  ck_buf_t file;
  ck_buf_init(&file);
  ck_snap_section_t sec = {.node = 1, .kind = CK_SNAP_SOURCE, .data = "pos", .len = 3};
  ck_snap_encode(id, ck_lineage_fingerprint(JOB), task, &sec, 1, &file);
  char rel[128];
  ck_snap_path(task, id, rel, sizeof rel);
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_store_write(&f->store, rel, file.data, file.len, &err), 0);
  ck_buf_fini(&file);
}

static void checkpoint(fx_t *f, int64_t id, int ntasks, bool confirmed) {
  for (int t = 0; t < ntasks; t++) snapshot(f, t, id);
  marker(f, "completed", id);
  if (confirmed) marker(f, "confirmed", id);
}

static int count_meta(fx_t *f, const char *prefix) {
  char path[512];
  snprintf(path, sizeof path, "%s/v1/_meta", f->dir);
  DIR *d = opendir(path);
  assert_non_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.' && strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
  closedir(d);
  return n;
}

static void many_then_resume(fx_t *f, int64_t count) {
  /* newest first: a listing in creation order or its reverse both start far from it */
  for (int64_t id = count; id >= 1; id--) marker(f, "completed", id);
  for (int64_t id = count - 2; id <= count; id++) snapshot(f, 0, id);
  ck_lineage_t lin;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_lineage_begin(f->dir, JOB, 1, false, 1, &lin, &err), 0);
  assert_int_equal(lin.restore_id, count);
  assert_int_equal(lin.latest_completed, count);
  assert_int_equal(lin.ids_above, count);
}

static void test_ten_thousand_checkpoints_resume_from_the_newest(void **state) {
  many_then_resume(*state, 10000);
}

static void test_hundred_thousand_checkpoints_resume_from_the_newest(void **state) {
  many_then_resume(*state, 100000);
}

static void drive(ck_ckpt_coord_t *c, int n, int64_t *now) {
  ck_error_t err;
  ck_error_clear(&err);
  for (int i = 0; i < n; i++) {
    bool fin;
    int64_t wake;
    int64_t id = 0;
    for (int k = 0; k < 3 && !id; k++) {
      *now += c->interval_ms;
      id = ck_ckpt_coord_tick(c, *now, &fin, &wake);
    }
    assert_true(id > 0);
    for (int t = 0; t < c->ntasks; t++) {
      char rel[128];
      ck_snap_path(t, id, rel, sizeof rel);
      assert_int_equal(ck_store_write(c->store, rel, "x", 1, &err), 0);
      assert_int_equal(ck_ckpt_coord_ack(c, id, &err), t == c->ntasks - 1 ? 1 : 0);
    }
    ck_ckpt_coord_prune(c); /* as the drivers do once the sinks are told */
    assert_int_equal(ck_ckpt_coord_committed(c, id, &err), 1);
  }
}

static void test_pruning_keeps_meta_bounded_and_the_id_floor_survives(void **state) {
  fx_t *f = *state;
  /* an older clink's directory: 5,000 markers that were never pruned */
  for (int64_t id = 1; id <= 5000; id++) marker(f, "completed", id);
  ck_ckpt_coord_t c;
  int64_t now = 0;
  ck_ckpt_coord_init(&c, &f->store, 2, 1, 2, 5000, 0, 10, 1000, 3, now);
  drive(&c, 100, &now);
  assert_int_equal(c.last_completed, 5100);
  assert_true(count_meta(f, "completed-") <= 4);
  assert_true(count_meta(f, "confirmed-") <= 4);
  assert_true(count_meta(f, "") <= 12);
  assert_int_equal(ck_store_max_id(&f->store), 5100);
  assert_int_equal(ck_store_latest(&f->store, "completed"), 5100);
  /* every marker and snapshot gone (pruned, or deleted by hand): ids still never go back */
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'/v1/0 '%s'/v1/1 '%s'/v1/_meta/c*", f->dir, f->dir, f->dir);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(ck_store_max_id(&f->store), 5100);
  ck_lineage_t lin;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_lineage_begin(f->dir, JOB, 1, true, 2, &lin, &err), 0);
  assert_int_equal(lin.ids_above, 5100);
  assert_int_equal(lin.run_base, 5100);
}

static void test_damaged_newest_snapshot_is_refused_naming_the_file(void **state) {
  fx_t *f = *state;
  for (int64_t id = 1; id <= 3; id++) checkpoint(f, id, 2, true);
  char path[512];
  snprintf(path, sizeof path, "%s/v1/1/checkpoint-3.snap", f->dir);
  FILE *fp = fopen(path, "r+b");
  assert_non_null(fp);
  fseek(fp, 40, SEEK_SET);
  fputc('!', fp);
  fclose(fp);
  ck_lineage_t lin;
  ck_error_t err;
  ck_error_clear(&err);
  /* what the sinks allow is not known here: no fallback over committed output */
  assert_int_equal(ck_lineage_begin(f->dir, JOB, 1, false, 2, &lin, &err), CK_ESTATE);
  assert_non_null(strstr(err.message, path));
  assert_non_null(strstr(err.message, "damaged"));
  assert_non_null(strstr(err.detail, "checkpoint 2 can be restored"));
  assert_non_null(strstr(err.detail, "was committed"));
  assert_non_null(strstr(err.hint, "completed-3"));
  assert_int_equal(lin.restore_id, 0);
}

static void test_missing_snapshots_are_refused_never_a_fresh_start(void **state) {
  fx_t *f = *state;
  for (int64_t id = 1; id <= 3; id++) checkpoint(f, id, 1, true);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'/v1/0 && echo oops > '%s'/v1/0", f->dir, f->dir);
  assert_int_equal(system(cmd), 0);
  ck_lineage_t lin;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_lineage_begin(f->dir, JOB, 1, false, 1, &lin, &err), CK_ESTATE);
  char path[512];
  snprintf(path, sizeof path, "%s/v1/0/checkpoint-3.snap", f->dir);
  assert_non_null(strstr(err.message, path));
  assert_non_null(strstr(err.message, "Not a directory"));
  assert_non_null(strstr(err.hint, "--fresh"));
  /* snapshots deleted, the directory still there */
  snprintf(cmd, sizeof cmd, "rm -f '%s'/v1/0 && mkdir '%s'/v1/0", f->dir, f->dir);
  assert_int_equal(system(cmd), 0);
  ck_error_clear(&err);
  assert_int_equal(ck_lineage_begin(f->dir, JOB, 1, false, 1, &lin, &err), CK_ESTATE);
  assert_non_null(strstr(err.message, "is missing"));
  /* --fresh is the way out */
  ck_error_clear(&err);
  assert_int_equal(ck_lineage_begin(f->dir, JOB, 1, true, 1, &lin, &err), 0);
  assert_int_equal(lin.restore_id, 0);
  assert_int_equal(lin.run_base, 3);
}

static void test_no_completed_checkpoint_starts_fresh(void **state) {
  fx_t *f = *state;
  snapshot(f, 0, 1); /* taken, never completed */
  ck_lineage_t lin;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_lineage_begin(f->dir, JOB, 1, false, 1, &lin, &err), 0);
  assert_int_equal(lin.restore_id, 0);
  assert_int_equal(lin.ids_above, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_ten_thousand_checkpoints_resume_from_the_newest,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_hundred_thousand_checkpoints_resume_from_the_newest,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_pruning_keeps_meta_bounded_and_the_id_floor_survives,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_damaged_newest_snapshot_is_refused_naming_the_file,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_missing_snapshots_are_refused_never_a_fresh_start,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_no_completed_checkpoint_starts_fresh, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
