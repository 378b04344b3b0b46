/*
 * DESIGN: unit tests for src/base/arena — the region allocator.
 *
 * Checks the promises of arena.h: 16-byte alignment, allocations that never overlap, reset
 * that frees the extra blocks but keeps one default-size block usable, oversized requests
 * that get their own block without wasting the current one, and printf/strdup helpers.
 * Memory accounting is checked through ck_mem_stats, so a leaked block fails the test even
 * before ASan's leak check runs. Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "base/alloc.h"
#include "base/arena.h"

static int64_t live_bytes(void) { return ck_mem_stats().live_bytes; }
static int64_t live_blocks(void) { return ck_mem_stats().live_blocks; }

static void test_arena_alloc_aligned_16(void **state) {
  ck_arena_t arena;
  ck_arena_init(&arena, 1024);
  for (size_t n = 0; n < 200; n++) {
    void *p = ck_arena_alloc(&arena, n);
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % 16, 0);
  }
  assert_int_equal((uintptr_t)ck_arena_alloc(&arena, 100000) % 16, 0); /* oversized too */
  ck_arena_fini(&arena);
}

static void test_arena_allocations_do_not_overlap(void **state) {
  ck_arena_t arena;
  ck_arena_init(&arena, 512);
  enum { N = 300 };
  unsigned char *p[N];
  size_t len[N];
  for (int i = 0; i < N; i++) {
    len[i] = (size_t)(i * 7 % 150) + 1;
    p[i] = ck_arena_alloc(&arena, len[i]);
    memset(p[i], i & 0xff, len[i]);
  }
  for (int i = 0; i < N; i++)
    for (size_t k = 0; k < len[i]; k++) assert_int_equal(p[i][k], i & 0xff);
  ck_arena_fini(&arena);
}

static void test_arena_used_bytes_rounds_to_16(void **state) {
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_arena_alloc(&arena, 1);
  assert_int_equal(arena.used_bytes, 16);
  ck_arena_alloc(&arena, 17);
  assert_int_equal(arena.used_bytes, 48);
  ck_arena_alloc(&arena, 0);
  assert_int_equal(arena.used_bytes, 64);
  ck_arena_fini(&arena);
  assert_int_equal(arena.used_bytes, 0);
}

static void test_arena_consecutive_small_allocs_share_a_block(void **state) {
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  int64_t blocks = live_blocks();
  char *a = ck_arena_alloc(&arena, 10);
  char *b = ck_arena_alloc(&arena, 10);
  assert_ptr_equal(b, a + 16);
  assert_int_equal(live_blocks() - blocks, 1);
  ck_arena_fini(&arena);
}

static void test_arena_zalloc_zeroes_reused_memory(void **state) {
  ck_arena_t arena;
  ck_arena_init(&arena, 1024);
  unsigned char *p = ck_arena_alloc(&arena, 256);
  memset(p, 0xEE, 256);
  ck_arena_reset(&arena);
  unsigned char *z = ck_arena_zalloc(&arena, 256);
  assert_ptr_equal(z, p); /* the kept block is reused from its start */
  for (int i = 0; i < 256; i++) assert_int_equal(z[i], 0);
  ck_arena_fini(&arena);
}

static void test_arena_reset_keeps_first_block_usable(void **state) {
  int64_t base_bytes = live_bytes(), base_blocks = live_blocks();
  ck_arena_t arena;
  ck_arena_init(&arena, 1024);
  char *first = ck_arena_alloc(&arena, 32);
  for (int i = 0; i < 100; i++) memset(ck_arena_alloc(&arena, 100), 'x', 100); /* spill */
  assert_true(live_blocks() - base_blocks > 5);
  ck_arena_reset(&arena);
  assert_int_equal(arena.used_bytes, 0);
  assert_int_equal(live_blocks() - base_blocks, 1);
  int64_t one_block = live_bytes() - base_bytes;
  assert_true(one_block >= 1024 && one_block < 1024 + 128);
  char *again = ck_arena_alloc(&arena, 32);
  assert_ptr_equal(again, first);
  strcpy(again, "still usable");
  assert_string_equal(again, "still usable");
  for (int i = 0; i < 100; i++) memset(ck_arena_alloc(&arena, 100), 'y', 100);
  ck_arena_reset(&arena);
  ck_arena_reset(&arena); /* twice in a row is harmless */
  assert_int_equal(live_blocks() - base_blocks, 1);
  ck_arena_fini(&arena);
  assert_int_equal(live_bytes(), base_bytes);
  assert_int_equal(live_blocks(), base_blocks);
}

static void test_arena_reset_of_empty_arena(void **state) {
  int64_t base_blocks = live_blocks();
  ck_arena_t arena;
  ck_arena_init(&arena, 0); /* 0 picks the default block size */
  assert_true(arena.block_size > 0);
  ck_arena_reset(&arena);
  assert_int_equal(live_blocks(), base_blocks);
  assert_non_null(ck_arena_alloc(&arena, 8));
  ck_arena_fini(&arena);
  assert_int_equal(live_blocks(), base_blocks);
}

static void test_arena_oversized_does_not_waste_current_block(void **state) {
  ck_arena_t arena;
  ck_arena_init(&arena, 64 * 1024);
  char *a = ck_arena_alloc(&arena, 100);
  unsigned char *big = ck_arena_alloc(&arena, 1 << 20);
  assert_int_equal((uintptr_t)big % 16, 0);
  memset(big, 0x5A, 1 << 20); /* the whole range is ours (ASan checks the bounds) */
  char *b = ck_arena_alloc(&arena, 16);
  assert_ptr_equal(b, a + 112); /* small allocations continue in the first block */
  assert_int_equal(arena.used_bytes, 112 + (1 << 20) + 16);
  assert_int_equal(big[0], 0x5A);
  assert_int_equal(big[(1 << 20) - 1], 0x5A);
  ck_arena_fini(&arena);
}

static void test_arena_oversized_in_small_arena(void **state) {
  int64_t base_bytes = live_bytes();
  ck_arena_t arena;
  ck_arena_init(&arena, 256);
  for (int i = 0; i < 10; i++) {
    size_t n = (size_t)10000 * (size_t)(i + 1);
    unsigned char *p = ck_arena_alloc(&arena, n);
    memset(p, i, n);
    assert_int_equal(p[n - 1], i);
  }
  assert_true(live_bytes() - base_bytes >= 550000);
  ck_arena_fini(&arena);
  assert_int_equal(live_bytes(), base_bytes);
}

static void test_arena_reset_releases_oversized_blocks(void **state) {
  int64_t base_bytes = live_bytes();
  ck_arena_t arena;
  ck_arena_init(&arena, 64 * 1024);
  char *first = ck_arena_alloc(&arena, 100);
  memset(ck_arena_alloc(&arena, 1 << 20), 1, 1 << 20);
  ck_arena_reset(&arena);
  /* a one-off large allocation must not stay pinned by the arena after reset */
  int64_t kept = live_bytes() - base_bytes;
  assert_true(kept >= 64 * 1024 && kept < 64 * 1024 + 128);
  assert_ptr_equal(ck_arena_alloc(&arena, 100), first);
  ck_arena_fini(&arena);
  assert_int_equal(live_bytes(), base_bytes);
}

static void test_arena_strdup_strndup(void **state) {
  ck_arena_t arena;
  ck_arena_init(&arena, 128);
  const char *src = "stream processing";
  char *d = ck_arena_strdup(&arena, src);
  assert_ptr_not_equal(d, src);
  assert_string_equal(d, src);
  char *n = ck_arena_strndup(&arena, "abcdef", 3);
  assert_string_equal(n, "abc");
  assert_string_equal(ck_arena_strdup(&arena, ""), "");
  assert_string_equal(d, src); /* earlier copies untouched */
  ck_arena_fini(&arena);
}

static void test_arena_printf(void **state) {
  ck_arena_t arena;
  ck_arena_init(&arena, 64);
  char *s = ck_arena_printf(&arena, "%s-%d-%05.1f", "task", 42, 3.14159);
  assert_string_equal(s, "task-42-003.1");
  assert_string_equal(ck_arena_printf(&arena, "%s", ""), "");
  /* longer than the block size: needs its own block */
  char expect[1001];
  memset(expect, 'z', 1000);
  expect[1000] = 0;
  char *l = ck_arena_printf(&arena, "%.*s", 1000, expect);
  assert_int_equal(strlen(l), 1000);
  assert_string_equal(l, expect);
  assert_string_equal(s, "task-42-003.1");
  ck_arena_fini(&arena);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_arena_alloc_aligned_16),
      cmocka_unit_test(test_arena_allocations_do_not_overlap),
      cmocka_unit_test(test_arena_used_bytes_rounds_to_16),
      cmocka_unit_test(test_arena_consecutive_small_allocs_share_a_block),
      cmocka_unit_test(test_arena_zalloc_zeroes_reused_memory),
      cmocka_unit_test(test_arena_reset_keeps_first_block_usable),
      cmocka_unit_test(test_arena_reset_of_empty_arena),
      cmocka_unit_test(test_arena_oversized_does_not_waste_current_block),
      cmocka_unit_test(test_arena_oversized_in_small_arena),
      cmocka_unit_test(test_arena_reset_releases_oversized_blocks),
      cmocka_unit_test(test_arena_strdup_strndup),
      cmocka_unit_test(test_arena_printf),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
