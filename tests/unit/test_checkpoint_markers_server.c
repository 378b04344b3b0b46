/*
 * DESIGN: markers are written exactly once (ck_store_mark through the store's create: link()
 * on disk, a PUT with If-None-Match: * on S3) — a second writer of the same checkpoint id is
 * refused with CK_EEXISTS naming the marker, and the first writer's marker stays. Checked on a
 * local directory and on SeaweedFS (scripts/services.sh; CLINK_S3_* from `services.sh env`,
 * a prefix of this run's own in the shared bucket): one after the other, and eight threads
 * racing for the same id, of which exactly one wins.
 * Threads: the main thread, and the racers.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint/store.h"

static const char *env(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v)
    fail_msg("%s is not set: start the services and export their settings first: "
             "scripts/services.sh start && eval \"$(scripts/services.sh env)\"", name);
  return v;
}

static void open_store(bool s3, char *dir, size_t cap, ck_store_t *st) {
  static int seq;
  if (s3) {
    setenv("AWS_ACCESS_KEY_ID", env("CLINK_S3_ACCESS_KEY"), 1);
    setenv("AWS_SECRET_ACCESS_KEY", env("CLINK_S3_SECRET_KEY"), 1);
    setenv("AWS_ENDPOINT_URL_S3", env("CLINK_S3_ENDPOINT"), 1);
    setenv("AWS_REGION", "us-east-1", 1);
    snprintf(dir, cap, "s3://%s/unit-markers-%ld-%d-%d", env("CLINK_S3_BUCKET"),
             (long)time(NULL), (int)getpid(), ++seq);
  } else {
    snprintf(dir, cap, "/tmp/ck-markers-XXXXXX");
    if (!mkdtemp(dir)) fail_msg("mkdtemp");
  }
  ck_error_t err;
  ck_error_clear(&err);
  if (ck_store_open(dir, st, &err)) fail_msg("%s", err.message);
}

static void cleanup(bool s3, const char *dir) {
  if (s3) return; /* a few empty objects under a prefix of their own */
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) fail_msg("%s", cmd);
}

static void second_writer_is_refused(bool s3) {
  char dir[256];
  ck_store_t st;
  open_store(s3, dir, sizeof dir, &st);
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_store_mark(&st, "completed", 5, &err), 0);
  assert_true(ck_store_marked(&st, "completed", 5));
  ck_error_clear(&err);
  assert_int_equal(ck_store_mark(&st, "completed", 5, &err), CK_EEXISTS);
  assert_non_null(strstr(err.message, "checkpoint 5 completed"));
  assert_non_null(strstr(err.message, "marked already"));
  assert_true(ck_store_marked(&st, "completed", 5));
  /* another kind and another id are markers of their own */
  ck_error_clear(&err);
  assert_int_equal(ck_store_mark(&st, "confirmed", 5, &err), 0);
  assert_int_equal(ck_store_mark(&st, "completed", 6, &err), 0);
  assert_int_equal(ck_store_latest(&st, "completed"), 6);
  ck_store_close(&st);
  cleanup(s3, dir);
}

static void test_second_writer_refused_on_disk(void **state) {
  (void)state;
  second_writer_is_refused(false);
}

static void test_second_writer_refused_on_s3(void **state) {
  (void)state;
  second_writer_is_refused(true);
}

typedef struct race {
  ck_store_t *st;
  pthread_barrier_t *go;
  int rc;
} race_t;

static void *racer(void *arg) {
  race_t *r = arg;
  ck_error_t err;
  ck_error_clear(&err);
  pthread_barrier_wait(r->go);
  r->rc = ck_store_mark(r->st, "completed", 9, &err);
  return NULL;
}

static void one_of_racers_wins(bool s3) {
  char dir[256];
  ck_store_t st;
  open_store(s3, dir, sizeof dir, &st);
  enum { N = 8 };
  pthread_t th[N];
  race_t r[N];
  pthread_barrier_t go;
  pthread_barrier_init(&go, NULL, N);
  for (int i = 0; i < N; i++) {
    r[i] = (race_t){.st = &st, .go = &go, .rc = -1};
    pthread_create(&th[i], NULL, racer, &r[i]);
  }
  int won = 0, refused = 0;
  for (int i = 0; i < N; i++) {
    pthread_join(th[i], NULL);
    won += r[i].rc == 0;
    refused += r[i].rc == CK_EEXISTS;
  }
  pthread_barrier_destroy(&go);
  assert_int_equal(won, 1);
  assert_int_equal(refused, N - 1);
  ck_store_close(&st);
  cleanup(s3, dir);
}

static void test_racers_on_disk(void **state) {
  (void)state;
  one_of_racers_wins(false);
}

static void test_racers_on_s3(void **state) {
  (void)state;
  one_of_racers_wins(true);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_second_writer_refused_on_disk),
      cmocka_unit_test(test_racers_on_disk),
      cmocka_unit_test(test_second_writer_refused_on_s3),
      cmocka_unit_test(test_racers_on_s3),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
