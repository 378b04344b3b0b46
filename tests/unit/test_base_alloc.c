/*
 * DESIGN: unit tests for src/base/alloc — the counting heap wrappers.
 *
 * Every test takes a snapshot of ck_mem_stats before it allocates and asserts exact deltas
 * after, so a wrapper that forgets to count (or counts twice) fails. Out-of-memory paths abort
 * by design; they run in a forked child and the test asserts the child died of SIGABRT.
 * Threads: the main thread, plus four workers in the counter-atomicity test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/thread.h"

static ck_mem_stats_t delta(ck_mem_stats_t before) {
  ck_mem_stats_t now = ck_mem_stats();
  return (ck_mem_stats_t){now.live_bytes - before.live_bytes, now.live_blocks - before.live_blocks,
                          now.total_allocs - before.total_allocs};
}

static void assert_delta(ck_mem_stats_t before, int64_t bytes, int64_t blocks, int64_t allocs) {
  ck_mem_stats_t d = delta(before);
  assert_int_equal(d.live_bytes, bytes);
  assert_int_equal(d.live_blocks, blocks);
  assert_int_equal(d.total_allocs, allocs);
}

static void test_alloc_malloc_free_counts_exact(void **state) {
  ck_mem_stats_t st = ck_mem_stats();
  char *a = ck_malloc(100);
  assert_delta(st, 100, 1, 1);
  char *b = ck_malloc(7);
  assert_delta(st, 107, 2, 2);
  memset(a, 'a', 100); /* the whole requested size is usable (ASan checks the bounds) */
  memset(b, 'b', 7);
  ck_free(a);
  assert_delta(st, 7, 1, 2);
  ck_free(b);
  assert_delta(st, 0, 0, 2);
}

static void test_alloc_zero_size_is_a_block(void **state) {
  ck_mem_stats_t st = ck_mem_stats();
  void *p = ck_malloc(0);
  assert_non_null(p);
  assert_delta(st, 0, 1, 1);
  ck_free(p);
  assert_delta(st, 0, 0, 1);
}

static void test_alloc_free_null_is_noop(void **state) {
  ck_mem_stats_t st = ck_mem_stats();
  ck_free(NULL);
  assert_delta(st, 0, 0, 0);
}

static void test_alloc_blocks_are_16_aligned(void **state) {
  void *p[33];
  for (size_t i = 0; i < CK_ARRAY_LEN(p); i++) {
    p[i] = ck_malloc(i);
    assert_int_equal((uintptr_t)p[i] % 16, 0);
  }
  for (size_t i = 0; i < CK_ARRAY_LEN(p); i++) ck_free(p[i]);
}

static void test_alloc_calloc_zeroes_and_counts(void **state) {
  ck_mem_stats_t st = ck_mem_stats();
  /* dirty the heap first so zeroing is not an accident of fresh pages */
  unsigned char *dirty = ck_malloc(4096);
  memset(dirty, 0xA5, 4096);
  ck_free(dirty);
  st = ck_mem_stats();
  unsigned char *p = ck_calloc(64, 63);
  assert_delta(st, 64 * 63, 1, 1);
  for (size_t i = 0; i < 64 * 63; i++) assert_int_equal(p[i], 0);
  ck_free(p);
  assert_delta(st, 0, 0, 1);
}

static void test_alloc_realloc_adjusts_bytes_not_blocks(void **state) {
  ck_mem_stats_t st = ck_mem_stats();
  char *p = ck_realloc(NULL, 10); /* NULL: behaves as malloc */
  assert_delta(st, 10, 1, 1);
  memcpy(p, "0123456789", 10);
  p = ck_realloc(p, 5000);
  assert_delta(st, 5000, 1, 1);
  assert_memory_equal(p, "0123456789", 10);
  memset(p + 10, 'x', 4990);
  p = ck_realloc(p, 3);
  assert_delta(st, 3, 1, 1);
  assert_memory_equal(p, "012", 3);
  ck_free(p);
  assert_delta(st, 0, 0, 1);
}

static void test_alloc_strdup_strndup_count_terminator(void **state) {
  ck_mem_stats_t st = ck_mem_stats();
  char *s = ck_strdup("hello");
  assert_string_equal(s, "hello");
  assert_delta(st, 6, 1, 1);
  char *t = ck_strndup("hello, world", 5);
  assert_string_equal(t, "hello");
  assert_delta(st, 12, 2, 2);
  char *e = ck_strdup("");
  assert_string_equal(e, "");
  assert_delta(st, 13, 3, 3);
  ck_free(s);
  ck_free(t);
  ck_free(e);
  assert_delta(st, 0, 0, 3);
}

enum { WORKERS = 4, ROUNDS = 5000 };

static void *churn(void *arg) {
  (void)arg;
  for (int i = 0; i < ROUNDS; i++) {
    void *p = ck_malloc((size_t)(i % 97) + 1);
    p = ck_realloc(p, (size_t)(i % 131) + 1);
    ck_free(p);
  }
  return NULL;
}

static void test_alloc_counters_exact_across_threads(void **state) {
  ck_mem_stats_t st = ck_mem_stats();
  ck_thread_t th[WORKERS] = {0};
  for (int i = 0; i < WORKERS; i++)
    assert_int_equal(ck_thread_start(&th[i], "churn", churn, NULL), 0);
  for (int i = 0; i < WORKERS; i++) ck_thread_join(&th[i]);
  assert_delta(st, 0, 0, (int64_t)WORKERS * ROUNDS);
}

/* Runs fn in a child with stderr silenced; returns the signal that ended it, or 0. */
static int die_signal(void (*fn)(void)) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 2);
    fn();
    _exit(0);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static volatile size_t huge = SIZE_MAX - 4;

static void malloc_huge(void) { ck_free(ck_malloc(huge)); }
static void realloc_huge(void) { ck_free(ck_realloc(ck_malloc(8), huge)); }
static void calloc_overflow(void) { ck_free(ck_calloc(SIZE_MAX / 2, 4)); }

static void test_alloc_size_overflow_aborts(void **state) {
  /* a size near SIZE_MAX must not wrap around the header into a tiny block */
  assert_int_equal(die_signal(malloc_huge), SIGABRT);
  assert_int_equal(die_signal(realloc_huge), SIGABRT);
  assert_int_equal(die_signal(calloc_overflow), SIGABRT);
}

static void assert_false_fn(void) { ck_assert(1 + 1 == 3); }

static void test_alloc_ck_assert_aborts(void **state) {
  assert_int_equal(die_signal(assert_false_fn), SIGABRT);
  ck_assert(1 + 1 == 2); /* a true assertion returns */
}

/* ---- memory accounts (the job-level memory guard) ---- */

static void *free_on_other_thread(void *p) {
  ck_free(p); /* this thread has no account: the block still credits its own */
  return NULL;
}

static void test_account_counts_its_threads_blocks_wherever_freed(void **state) {
  int id = ck_mem_account_new(0);
  assert_true(id > 0);
  char *before = ck_malloc(10); /* not charged: no account entered yet */
  ck_mem_account_enter(id);
  char *a = ck_malloc(1000);
  assert_int_equal(ck_mem_account_live(id), 1000);
  a = ck_realloc(a, 3000);
  assert_int_equal(ck_mem_account_live(id), 3000);
  ck_mem_account_enter(0);
  char *b = ck_malloc(50); /* not charged either */
  assert_int_equal(ck_mem_account_live(id), 3000);
  ck_thread_t th;
  assert_int_equal(ck_thread_start(&th, "freer", free_on_other_thread, a), 0);
  ck_thread_join(&th);
  assert_int_equal(ck_mem_account_live(id), 0);
  assert_int_equal(ck_mem_account_peak(id), 3000);
  ck_free(before);
  ck_free(b);
  ck_mem_account_free(id);
}

static void test_account_over_its_limit_is_flagged_not_refused(void **state) {
  int id = ck_mem_account_new(1 << 20);
  assert_true(id > 0);
  ck_mem_account_enter(id);
  char *small = ck_malloc(1000);
  assert_false(ck_mem_over());
  char *big = ck_malloc((1 << 20) + 1); /* past the limit: still a usable block */
  memset(big, 1, (1 << 20) + 1);
  assert_true(ck_mem_over());
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_mem_over_error(&err), CK_ENOMEM);
  assert_non_null(strstr(err.message, "job memory exceeded 2 MiB (limit 1 MiB)"));
  assert_non_null(strstr(err.hint, "raise --max-memory"));
  ck_free(big);
  assert_true(ck_mem_over()); /* sticky: the job is failing */
  ck_free(small);
  ck_mem_account_enter(0);
  assert_false(ck_mem_over());
  ck_mem_account_free(id);
  /* a fresh account starts clean */
  int again = ck_mem_account_new(1 << 20);
  ck_mem_account_enter(again);
  assert_false(ck_mem_over());
  ck_mem_account_enter(0);
  ck_mem_account_free(again);
}

static void test_accounts_run_out_and_come_back(void **state) {
  int ids[CK_MEM_ACCOUNTS];
  int n = 0;
  while (n < CK_MEM_ACCOUNTS && (ids[n] = ck_mem_account_new(0)) > 0) n++;
  assert_int_equal(n, CK_MEM_ACCOUNTS - 1); /* id 0 is "none" */
  assert_int_equal(ck_mem_account_new(0), 0);
  ck_mem_account_free(ids[3]);
  assert_int_equal(ck_mem_account_new(0), ids[3]);
  for (int i = 0; i < n; i++) ck_mem_account_free(ids[i]);
}

static void test_sizes_parse_and_default_limit(void **state) {
  int64_t v = 0;
  assert_true(ck_mem_parse_size("512M", &v));
  assert_int_equal(v, 512LL << 20);
  assert_true(ck_mem_parse_size("4GiB", &v));
  assert_int_equal(v, 4LL << 30);
  assert_true(ck_mem_parse_size("1.5g", &v));
  assert_int_equal(v, 3LL << 29);
  assert_true(ck_mem_parse_size("1048576", &v));
  assert_int_equal(v, 1048576);
  assert_true(ck_mem_parse_size("64KB", &v));
  assert_int_equal(v, 64 << 10);
  assert_false(ck_mem_parse_size("", &v));
  assert_false(ck_mem_parse_size("12Q", &v));
  assert_false(ck_mem_parse_size("-5M", &v));
  assert_false(ck_mem_parse_size("M", &v));
  assert_false(ck_mem_parse_size("5Mx", &v));
  assert_false(ck_mem_parse_size("0", &v));
  /* 80% of the machine's memory (or the cgroup's limit): more than nothing, less than all */
  int64_t def = ck_mem_default_limit();
  assert_true(def > (64LL << 20));
  assert_true(def < (int64_t)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_alloc_malloc_free_counts_exact),
      cmocka_unit_test(test_alloc_zero_size_is_a_block),
      cmocka_unit_test(test_alloc_free_null_is_noop),
      cmocka_unit_test(test_alloc_blocks_are_16_aligned),
      cmocka_unit_test(test_alloc_calloc_zeroes_and_counts),
      cmocka_unit_test(test_alloc_realloc_adjusts_bytes_not_blocks),
      cmocka_unit_test(test_alloc_strdup_strndup_count_terminator),
      cmocka_unit_test(test_alloc_counters_exact_across_threads),
      cmocka_unit_test(test_alloc_size_overflow_aborts),
      cmocka_unit_test(test_alloc_ck_assert_aborts),
      cmocka_unit_test(test_account_counts_its_threads_blocks_wherever_freed),
      cmocka_unit_test(test_account_over_its_limit_is_flagged_not_refused),
      cmocka_unit_test(test_accounts_run_out_and_come_back),
      cmocka_unit_test(test_sizes_parse_and_default_limit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
