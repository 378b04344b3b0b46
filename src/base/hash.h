/*
 * DESIGN: hashing and a byte-keyed hash map.
 *
 * ck_hash64 is the one hash function of the engine: key groups, the keyed exchange and state
 * lookup all use it, so routing agrees on every path. ck_hmap_t is an open-addressing map from
 * byte strings to a pointer-sized value; it copies keys into its own storage. One owner thread.
 */
#ifndef CK_BASE_HASH_H
#define CK_BASE_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

uint64_t ck_hash64(const void *p, size_t n, uint64_t seed);
static inline uint64_t ck_hash_u64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

typedef struct ck_hmap_entry {
  uint64_t hash;  /* 0 marks an empty slot (real hashes are forced non-zero) */
  char *key;
  size_t key_len;
  void *value;
} ck_hmap_entry_t;

typedef struct ck_hmap {
  ck_hmap_entry_t *slots;
  size_t cap;   /* power of two */
  size_t count;
} ck_hmap_t;

void ck_hmap_init(ck_hmap_t *map);
void ck_hmap_fini(ck_hmap_t *map); /* frees keys, not values */
/* Returns the slot for key, creating it (value NULL) when absent; *created says which. */
void **ck_hmap_put(ck_hmap_t *map, const void *key, size_t key_len, bool *created);
void *ck_hmap_get(const ck_hmap_t *map, const void *key, size_t key_len);
bool ck_hmap_del(ck_hmap_t *map, const void *key, size_t key_len, void **old_value);
/* Iteration: for (size_t it = 0; ck_hmap_next(map, &it, &e);) */
bool ck_hmap_next(const ck_hmap_t *map, size_t *it, const ck_hmap_entry_t **entry);

#endif
