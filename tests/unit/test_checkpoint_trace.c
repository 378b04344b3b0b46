/*
 * DESIGN: unit tests for src/checkpoint/trace — the protocol trace formal/check-trace reads.
 *
 * With CLINK_PROTOCOL_TRACE_DIR pointing at a fresh directory, four threads emit 2,000 events
 * each at once, each under its own context (dir, subtask); the one file the process writes
 * must hold 8,000 whole lines, seq 1..8000 in file order with ts never going back, each
 * line's thread's context fields unless the event names its own, integers as JSON numbers,
 * other values as strings with quotes escaped. Threads: four emitters, then the main thread.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint/trace.h"

enum { THREADS = 4, EACH = 2000 };

static void *emitter(void *arg) {
  int t = (int)(intptr_t)arg;
  char dir[32];
  snprintf(dir, sizeof dir, "/ck/%d/v1", t);
  ck_trace_context(dir, t);
  for (int i = 0; i < EACH; i++) {
    if (i % 2) CK_TRACE("barrier", "ckpt=%d sink=1", i);
    else CK_TRACE("snapshot_durable", "dir=/other task=%d ckpt=%d note=a\"b", 100 + t, i);
  }
  return NULL;
}

static void test_lines_whole_ordered_with_context(void **state) {
  (void)state;
  char dir[64];
  snprintf(dir, sizeof dir, "/tmp/ck-trace-XXXXXX");
  assert_non_null(mkdtemp(dir));
  setenv("CLINK_PROTOCOL_TRACE_DIR", dir, 1);
  assert_true(ck_trace_enabled());
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++)
    assert_int_equal(pthread_create(&th[t], NULL, emitter, (void *)(intptr_t)t), 0);
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);

  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  char path[600] = "";
  int files = 0;
  while ((e = readdir(d)))
    if (strstr(e->d_name, ".ndjson")) {
      snprintf(path, sizeof path, "%s/%.255s", dir, e->d_name);
      files++;
    }
  closedir(d);
  assert_int_equal(files, 1);
  char want[64];
  snprintf(want, sizeof want, "-%d.ndjson", (int)getpid());
  assert_non_null(strstr(path, want));
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char line[4096];
  long long n = 0, last_ts = 0;
  int per_thread[THREADS] = {0};
  while (fgets(line, sizeof line, f)) {
    n++;
    size_t len = strlen(line);
    assert_true(len > 2 && line[len - 1] == '\n' && line[len - 2] == '}');
    long long seq = 0, ts = 0;
    assert_int_equal(sscanf(line, "{\"seq\":%lld,\"ts\":%lld,", &seq, &ts), 2);
    assert_int_equal(seq, n);
    assert_true(ts >= last_ts);
    last_ts = ts;
    int t = -1, ckpt = -1;
    if (strstr(line, "\"event\":\"barrier\"")) {
      char *p = strstr(line, "\"dir\":\"/ck/");
      assert_non_null(p);
      t = p[11] - '0';
      char tail[64];
      snprintf(tail, sizeof tail, "/v1\",\"task\":%d,\"ckpt\":", t);
      p = strstr(line, tail);
      assert_non_null(p);
      assert_int_equal(sscanf(p + strlen(tail), "%d", &ckpt), 1);
      assert_true(ckpt % 2 == 1);
      assert_non_null(strstr(line, "\"sink\":1}"));
    } else {
      assert_non_null(strstr(line, "\"event\":\"snapshot_durable\",\"dir\":\"/other\",\"task\":10"));
      assert_null(strstr(line, "/ck/"));
      assert_non_null(strstr(line, "\"note\":\"a\\\"b\"}"));
      char *p = strstr(line, "\"task\":10");
      t = p[9] - '0';
    }
    assert_true(t >= 0 && t < THREADS);
    per_thread[t]++;
  }
  fclose(f);
  assert_int_equal(n, THREADS * EACH);
  for (int t = 0; t < THREADS; t++) assert_int_equal(per_thread[t], EACH);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lines_whole_ordered_with_context),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
