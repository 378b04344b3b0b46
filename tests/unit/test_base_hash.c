/*
 * DESIGN: unit tests for src/base/hash — ck_hash64 and the open-addressing map.
 *
 * ck_hash64 routes keys to key groups on every path, so its values are pinned: a change to the
 * function must be deliberate and will fail here. Distribution is checked over 128 buckets
 * (low and high bits) for 100k keys. The map is checked against an independent reference
 * (an array indexed by key number) through puts, deletes and iteration, and with keys chosen
 * to share a home slot — including a chain that wraps around the end of the table — so
 * backward-shift deletion is exercised on real collisions. Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/hash.h"

/* ---- ck_hash64 ---- */

static void test_hash_known_values(void **state) {
  static const struct {
    const char *key;
    uint64_t seed0, seed1;
  } pinned[] = {
      {"", 0xa3d6493d5e69dca7ULL, 0xcf781522ed036c36ULL},
      {"a", 0xe435534be8e20a46ULL, 0xb63e6852dea08130ULL},
      {"abc", 0x43d30492d965bb9eULL, 0xa01ba688fcd4154cULL},
      {"12345678", 0xfe6f0757396df825ULL, 0x5eb82358f550f813ULL},
      {"hello, world", 0xc8eaca92c75d778eULL, 0x1d9211d133b88b10ULL},
      {"the quick brown fox jumps over the lazy dog", 0xc628e029c33de4c7ULL,
       0x53491fc436fc5856ULL},
  };
  for (int round = 0; round < 3; round++) { /* stable across calls */
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++) {
      size_t n = strlen(pinned[i].key);
      assert_int_equal(ck_hash64(pinned[i].key, n, 0), pinned[i].seed0);
      assert_int_equal(ck_hash64(pinned[i].key, n, 1), pinned[i].seed1);
    }
  }
}

static void test_hash_u64_is_murmur_finaliser(void **state) {
  assert_int_equal(ck_hash_u64(0), 0);
  assert_int_equal(ck_hash_u64(1), 0xb456bcfc34c2cb2cULL); /* MurmurHash3 fmix64(1) */
  assert_int_equal(ck_hash_u64(42), 0x810879608e4259ccULL);
}

static void test_hash_independent_of_alignment(void **state) {
  const char *key = "alignment-does-not-matter-for-hashing";
  size_t n = strlen(key);
  uint64_t want = ck_hash64(key, n, 7);
  char copy[64 + 8];
  for (size_t off = 0; off < 8; off++) {
    memset(copy, 0xCC, sizeof copy);
    memcpy(copy + off, key, n);
    assert_int_equal(ck_hash64(copy + off, n, 7), want);
  }
}

static void test_hash_sensitive_to_every_input(void **state) {
  unsigned char key[40];
  for (size_t i = 0; i < sizeof key; i++) key[i] = (unsigned char)i;
  uint64_t base = ck_hash64(key, sizeof key, 0);
  assert_int_not_equal(ck_hash64(key, sizeof key, 1), base); /* seed */
  for (size_t i = 0; i < sizeof key; i++) {                  /* every byte, head and tail */
    key[i] ^= 1;
    assert_int_not_equal(ck_hash64(key, sizeof key, 0), base);
    key[i] ^= 1;
  }
  /* length matters even when the extra bytes are zero */
  unsigned char zeros[16] = {0};
  for (size_t n = 0; n < 16; n++)
    assert_int_not_equal(ck_hash64(zeros, n, 0), ck_hash64(zeros, n + 1, 0));
}

static void check_buckets(const unsigned *counts, unsigned nkeys) {
  double mean = (double)nkeys / 128;
  for (int b = 0; b < 128; b++) {
    if (counts[b] < 0.8 * mean || counts[b] > 1.2 * mean)
      fail_msg("bucket %d holds %u keys; mean %.1f, allowed 80%%..120%%", b, counts[b], mean);
  }
}

static void test_hash_distribution_string_keys(void **state) {
  enum { N = 100000 };
  unsigned low[128] = {0}, high[128] = {0};
  char key[32];
  for (unsigned i = 0; i < N; i++) {
    int n = snprintf(key, sizeof key, "user-%u", i);
    uint64_t h = ck_hash64(key, (size_t)n, 0);
    low[h % 128]++;
    high[h >> 57]++;
  }
  check_buckets(low, N);
  check_buckets(high, N);
}

static void test_hash_distribution_integer_keys(void **state) {
  enum { N = 100000 };
  unsigned low[128] = {0}, high[128] = {0}, strided[128] = {0};
  for (uint64_t i = 0; i < N; i++) {
    uint64_t h = ck_hash64(&i, sizeof i, 0);
    low[h % 128]++;
    high[h >> 57]++;
    uint64_t s = i * 128; /* keys that all agree in their low bits */
    strided[ck_hash64(&s, sizeof s, 0) % 128]++;
  }
  check_buckets(low, N);
  check_buckets(high, N);
  check_buckets(strided, N);
}

/* ---- ck_hmap ---- */

static int key_of(char *out, size_t cap, unsigned i) { return snprintf(out, cap, "key:%u", i); }

static void test_hmap_empty(void **state) {
  ck_hmap_t map;
  ck_hmap_init(&map);
  assert_null(ck_hmap_get(&map, "x", 1));
  assert_false(ck_hmap_del(&map, "x", 1, NULL));
  size_t it = 0;
  const ck_hmap_entry_t *e;
  assert_false(ck_hmap_next(&map, &it, &e));
  ck_hmap_fini(&map);
}

static void test_hmap_put_get_overwrite(void **state) {
  ck_hmap_t map;
  ck_hmap_init(&map);
  bool created = false;
  void **slot = ck_hmap_put(&map, "alpha", 5, &created);
  assert_true(created);
  assert_null(*slot);
  *slot = (void *)(uintptr_t)1;
  slot = ck_hmap_put(&map, "alpha", 5, &created);
  assert_false(created);
  assert_ptr_equal(*slot, (void *)(uintptr_t)1);
  *slot = (void *)(uintptr_t)2;
  assert_ptr_equal(ck_hmap_get(&map, "alpha", 5), (void *)(uintptr_t)2);
  assert_int_equal(map.count, 1);
  /* prefixes and extensions are different keys */
  assert_null(ck_hmap_get(&map, "alph", 4));
  assert_null(ck_hmap_get(&map, "alphab", 6));
  ck_hmap_put(&map, "beta", 4, NULL); /* created may be NULL */
  assert_int_equal(map.count, 2);
  ck_hmap_fini(&map);
}

static void test_hmap_copies_keys(void **state) {
  ck_hmap_t map;
  ck_hmap_init(&map);
  char key[8] = "mutable";
  *ck_hmap_put(&map, key, 7, NULL) = (void *)(uintptr_t)7;
  memcpy(key, "changed", 7);
  assert_ptr_equal(ck_hmap_get(&map, "mutable", 7), (void *)(uintptr_t)7);
  assert_null(ck_hmap_get(&map, key, 7));
  ck_hmap_fini(&map);
}

static void test_hmap_binary_keys(void **state) {
  ck_hmap_t map;
  ck_hmap_init(&map);
  *ck_hmap_put(&map, "a\0b", 3, NULL) = (void *)(uintptr_t)1;
  *ck_hmap_put(&map, "a\0c", 3, NULL) = (void *)(uintptr_t)2;
  *ck_hmap_put(&map, "a", 1, NULL) = (void *)(uintptr_t)3;
  assert_int_equal(map.count, 3);
  assert_ptr_equal(ck_hmap_get(&map, "a\0b", 3), (void *)(uintptr_t)1);
  assert_ptr_equal(ck_hmap_get(&map, "a\0c", 3), (void *)(uintptr_t)2);
  assert_ptr_equal(ck_hmap_get(&map, "a", 1), (void *)(uintptr_t)3);
  ck_hmap_fini(&map);
}

static void test_hmap_zero_length_keys(void **state) {
  ck_hmap_t map;
  ck_hmap_init(&map);
  bool created = false;
  *ck_hmap_put(&map, "", 0, &created) = (void *)(uintptr_t)10;
  assert_true(created);
  *ck_hmap_put(&map, "\0", 1, &created) = (void *)(uintptr_t)11;
  assert_true(created); /* one NUL byte is not the empty key */
  assert_ptr_equal(ck_hmap_get(&map, "", 0), (void *)(uintptr_t)10);
  assert_ptr_equal(ck_hmap_get(&map, "other-pointer", 0), (void *)(uintptr_t)10);
  /* an empty view may carry a NULL pointer (ck_str_t {NULL, 0}) */
  assert_ptr_equal(ck_hmap_get(&map, NULL, 0), (void *)(uintptr_t)10);
  ck_hmap_put(&map, NULL, 0, &created);
  assert_false(created);
  void *old = NULL;
  assert_true(ck_hmap_del(&map, NULL, 0, &old));
  assert_ptr_equal(old, (void *)(uintptr_t)10);
  assert_null(ck_hmap_get(&map, "", 0));
  assert_ptr_equal(ck_hmap_get(&map, "\0", 1), (void *)(uintptr_t)11);
  ck_hmap_put(&map, NULL, 0, &created);
  assert_true(created);
  assert_int_equal(map.count, 2);
  ck_hmap_fini(&map);
}

enum { MANY = 50000 };

/* Checks map holds exactly the keys i with present[i], each with value i + 1. */
static void check_against_reference(const ck_hmap_t *map, const bool *present, unsigned n) {
  char key[32];
  size_t expect_count = 0;
  for (unsigned i = 0; i < n; i++) {
    int len = key_of(key, sizeof key, i);
    void *v = ck_hmap_get(map, key, (size_t)len);
    if (present[i]) {
      expect_count++;
      if (v != (void *)(uintptr_t)(i + 1)) fail_msg("key %s: got %p, want %u", key, v, i + 1);
    } else if (v) {
      fail_msg("deleted key %s still maps to %p", key, v);
    }
  }
  assert_int_equal(map->count, expect_count);
  /* iteration visits each live key exactly once */
  unsigned char *seen = ck_calloc(n, 1);
  size_t visits = 0;
  const ck_hmap_entry_t *e;
  for (size_t it = 0; ck_hmap_next(map, &it, &e);) {
    uintptr_t v = (uintptr_t)e->value;
    assert_in_range(v, 1, n);
    unsigned i = (unsigned)(v - 1);
    assert_true(present[i]);
    int len = key_of(key, sizeof key, i);
    assert_int_equal(e->key_len, (size_t)len);
    assert_memory_equal(e->key, key, (size_t)len);
    assert_int_equal(seen[i], 0);
    seen[i] = 1;
    visits++;
  }
  assert_int_equal(visits, expect_count);
  ck_free(seen);
}

static void test_hmap_many_keys_put_get_del(void **state) {
  int64_t base_bytes = ck_mem_stats().live_bytes;
  ck_hmap_t map;
  ck_hmap_init(&map);
  bool *present = ck_calloc(MANY, sizeof *present);
  char key[32];
  for (unsigned i = 0; i < MANY; i++) {
    int len = key_of(key, sizeof key, i);
    bool created = false;
    *ck_hmap_put(&map, key, (size_t)len, &created) = (void *)(uintptr_t)(i + 1);
    assert_true(created);
    present[i] = true;
  }
  assert_true(map.count * 4 <= map.cap * 3); /* load factor kept at or under 3/4 */
  check_against_reference(&map, present, MANY);
  /* delete in a scattered order: every key with i % 3 != 0 */
  for (unsigned k = 0; k < MANY; k++) {
    unsigned i = (unsigned)(((uint64_t)k * 7919) % MANY); /* 7919 is prime: a permutation */
    if (i % 3 == 0) continue;
    int len = key_of(key, sizeof key, i);
    void *old = NULL;
    assert_true(ck_hmap_del(&map, key, (size_t)len, &old));
    assert_ptr_equal(old, (void *)(uintptr_t)(i + 1));
    assert_false(ck_hmap_del(&map, key, (size_t)len, NULL)); /* already gone */
    present[i] = false;
  }
  check_against_reference(&map, present, MANY);
  /* put the deleted keys back */
  for (unsigned i = 0; i < MANY; i++) {
    if (present[i]) continue;
    int len = key_of(key, sizeof key, i);
    bool created = false;
    *ck_hmap_put(&map, key, (size_t)len, &created) = (void *)(uintptr_t)(i + 1);
    assert_true(created);
    present[i] = true;
  }
  check_against_reference(&map, present, MANY);
  ck_free(present);
  ck_hmap_fini(&map);
  assert_null(map.slots);
  assert_int_equal(map.count, 0);
  assert_int_equal(ck_mem_stats().live_bytes, base_bytes); /* fini frees every key */
}

/* Home slot of key i in a map of capacity cap, read from the map's own entry hash. */
static size_t home_slot(unsigned i, size_t cap) {
  ck_hmap_t probe;
  ck_hmap_init(&probe);
  char key[32];
  int len = key_of(key, sizeof key, i);
  ck_hmap_put(&probe, key, (size_t)len, NULL);
  const ck_hmap_entry_t *e = NULL;
  size_t it = 0;
  assert_true(ck_hmap_next(&probe, &it, &e));
  size_t home = (size_t)(e->hash & (cap - 1));
  ck_hmap_fini(&probe);
  return home;
}

static void test_hmap_delete_under_collisions(void **state) {
  /* A table of 16 slots holds up to 12 keys. Choose keys whose home slots are 14, 15 and 0,
   * so their probe chains overlap and wrap around the end of the table. */
  enum { CAP = 16, PICK = 12 };
  unsigned keys[PICK];
  size_t homes[PICK];
  const size_t want_home[PICK] = {14, 14, 14, 15, 15, 15, 15, 0, 0, 0, 14, 0};
  bool used[4096] = {false};
  for (int k = 0; k < PICK; k++) {
    unsigned i = 0;
    while (used[i] || home_slot(i, CAP) != want_home[k]) {
      i++;
      assert_true(i < 4096);
    }
    used[i] = true;
    keys[k] = i;
    homes[k] = want_home[k];
  }
  char key[32];
  /* every key deleted alone, and every order of deletion by rotation */
  for (int first = 0; first < PICK; first++) {
    ck_hmap_t map;
    ck_hmap_init(&map);
    for (int k = 0; k < PICK; k++) {
      int len = key_of(key, sizeof key, keys[k]);
      *ck_hmap_put(&map, key, (size_t)len, NULL) = (void *)(uintptr_t)(keys[k] + 1);
    }
    assert_int_equal(map.cap, CAP); /* all twelve share one small table */
    /* the chain really is crowded: at least one key lives away from its home slot */
    int displaced = 0;
    for (size_t s = 0; s < map.cap; s++)
      if (map.slots[s].hash && (map.slots[s].hash & (CAP - 1)) != s) displaced++;
    assert_true(displaced >= 8);
    /* iteration over the crowded table (slots 14, 15, 0, … in use) visits each key once */
    int visits[PICK] = {0}, total = 0;
    const ck_hmap_entry_t *e;
    for (size_t it = 0; ck_hmap_next(&map, &it, &e);) {
      total++;
      for (int k = 0; k < PICK; k++)
        if (e->value == (void *)(uintptr_t)(keys[k] + 1)) visits[k]++;
    }
    assert_int_equal(total, PICK);
    for (int k = 0; k < PICK; k++) assert_int_equal(visits[k], 1);
    bool present[4096] = {false};
    for (int k = 0; k < PICK; k++) present[keys[k]] = true;
    for (int step = 0; step < PICK; step++) {
      int k = (first + step * 5) % PICK; /* 5 is coprime with 12: visits all */
      int len = key_of(key, sizeof key, keys[k]);
      void *old = NULL;
      assert_true(ck_hmap_del(&map, key, (size_t)len, &old));
      assert_ptr_equal(old, (void *)(uintptr_t)(keys[k] + 1));
      present[keys[k]] = false;
      for (int r = 0; r < PICK; r++) {
        len = key_of(key, sizeof key, keys[r]);
        void *v = ck_hmap_get(&map, key, (size_t)len);
        if (present[keys[r]] && v != (void *)(uintptr_t)(keys[r] + 1))
          fail_msg("after deleting key %u (home %zu), key %u (home %zu) is lost", keys[k],
                   homes[k], keys[r], homes[r]);
        if (!present[keys[r]] && v) fail_msg("deleted key %u is still found", keys[r]);
      }
      assert_int_equal(map.count, (size_t)(PICK - step - 1));
    }
    for (size_t s = 0; s < map.cap; s++) assert_int_equal(map.slots[s].hash, 0);
    ck_hmap_fini(&map);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hash_known_values),
      cmocka_unit_test(test_hash_u64_is_murmur_finaliser),
      cmocka_unit_test(test_hash_independent_of_alignment),
      cmocka_unit_test(test_hash_sensitive_to_every_input),
      cmocka_unit_test(test_hash_distribution_string_keys),
      cmocka_unit_test(test_hash_distribution_integer_keys),
      cmocka_unit_test(test_hmap_empty),
      cmocka_unit_test(test_hmap_put_get_overwrite),
      cmocka_unit_test(test_hmap_copies_keys),
      cmocka_unit_test(test_hmap_binary_keys),
      cmocka_unit_test(test_hmap_zero_length_keys),
      cmocka_unit_test(test_hmap_many_keys_put_get_del),
      cmocka_unit_test(test_hmap_delete_under_collisions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
