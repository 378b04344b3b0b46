/*
 * DESIGN: unit tests for src/base/time — the monotonic and wall clocks.
 *
 * Monotonic time must never go backwards and its ms and ns views must agree; wall time must
 * be a plausible epoch-ms value that agrees with the C library's time(). ck_sleep_ms is the
 * feature under test in one case (it sleeps at least as long as asked), not synchronisation.
 * Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <time.h>

#include "base/time.h"

static void test_time_mono_non_decreasing(void **state) {
  int64_t prev_ns = ck_mono_ns(), prev_ms = ck_mono_ms();
  assert_true(prev_ns > 0);
  for (int i = 0; i < 200000; i++) {
    int64_t ns = ck_mono_ns(), ms = ck_mono_ms();
    if (ns < prev_ns)
      fail_msg("ck_mono_ns went backwards: %lld -> %lld", (long long)prev_ns, (long long)ns);
    if (ms < prev_ms)
      fail_msg("ck_mono_ms went backwards: %lld -> %lld", (long long)prev_ms, (long long)ms);
    prev_ns = ns;
    prev_ms = ms;
  }
}

static void test_time_mono_ms_matches_ns(void **state) {
  int64_t ns0 = ck_mono_ns();
  int64_t ms = ck_mono_ms();
  int64_t ns1 = ck_mono_ns();
  assert_true(ms >= ns0 / 1000000);
  assert_true(ms <= ns1 / 1000000);
}

static void test_time_mono_advances(void **state) {
  /* spin (no sleep) until the clock moves by at least 2 ms, with a generous bound */
  int64_t start = ck_mono_ns();
  int64_t now = start;
  long spins = 0;
  while (now - start < 2000000 && spins < 2000000000L) now = ck_mono_ns(), spins++;
  assert_true(now - start >= 2000000);
}

static void test_time_wall_plausible(void **state) {
  int64_t wall = ck_wall_ms();
  assert_true(wall > 1577836800000LL); /* after 2020-01-01 */
  assert_true(wall < 4102444800000LL); /* before 2100-01-01 */
  int64_t c = (int64_t)time(NULL) * 1000;
  int64_t diff = wall - c;
  assert_true(diff > -2000 && diff < 2000); /* same clock as time(), in ms not s or us */
}

static int64_t realtime_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_time_wall_has_ms_resolution(void **state) {
  /* bracketed by the realtime clock read in ms on either side: a value rounded to seconds
   * (or off by a unit) falls outside */
  for (int i = 0; i < 1000; i++) {
    int64_t before = realtime_ms();
    int64_t wall = ck_wall_ms();
    int64_t after = realtime_ms();
    if (wall < before || wall > after)
      fail_msg("ck_wall_ms %lld outside [%lld, %lld]", (long long)wall, (long long)before,
               (long long)after);
  }
}

static void test_time_sleep_at_least_requested(void **state) {
  int64_t t0 = ck_mono_ns();
  ck_sleep_ms(25);
  int64_t slept = ck_mono_ns() - t0;
  assert_true(slept >= 25 * 1000000LL);
  assert_true(slept < 5000 * 1000000LL);
  t0 = ck_mono_ns();
  ck_sleep_ms(1100); /* over a second: the seconds field of the timespec is used */
  slept = ck_mono_ns() - t0;
  assert_true(slept >= 1100 * 1000000LL);
  t0 = ck_mono_ns();
  ck_sleep_ms(0);
  assert_true(ck_mono_ns() - t0 < 1000 * 1000000LL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_time_mono_non_decreasing),
      cmocka_unit_test(test_time_mono_ms_matches_ns),
      cmocka_unit_test(test_time_mono_advances),
      cmocka_unit_test(test_time_wall_plausible),
      cmocka_unit_test(test_time_wall_has_ms_resolution),
      cmocka_unit_test(test_time_sleep_at_least_requested),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
