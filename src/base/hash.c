/*
 * DESIGN: see hash.h. ck_hash64 is a small multiply-mix hash over 8-byte words (in the style of
 * wyhash/murmur finalisers); stable across platforms of the same endianness, which is all the
 * key-group mapping needs since snapshots record key groups, not hashes. The map uses linear
 * probing with backward-shift deletion, so there are no tombstones.
 */
#include "base/hash.h"

#include <string.h>

#include "base/alloc.h"

static inline uint64_t rd64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static inline uint64_t mix(uint64_t a, uint64_t b) {
  __uint128_t r = (__uint128_t)a * b;
  return (uint64_t)r ^ (uint64_t)(r >> 64);
}

uint64_t ck_hash64(const void *data, size_t n, uint64_t seed) {
  const unsigned char *p = data;
  const uint64_t k1 = 0xa0761d6478bd642fULL, k2 = 0xe7037ed1a0b428dbULL;
  uint64_t h = seed ^ mix(seed ^ k1, (uint64_t)n ^ k2);
  while (n >= 8) {
    h = mix(h ^ rd64(p), k2) ^ k1;
    p += 8;
    n -= 8;
  }
  uint64_t tail = 0;
  for (size_t i = 0; i < n; i++) tail |= (uint64_t)p[i] << (8 * i);
  h = mix(h ^ tail ^ ((uint64_t)n << 56), k1);
  return ck_hash_u64(h);
}

void ck_hmap_init(ck_hmap_t *map) {
  map->slots = NULL;
  map->cap = map->count = 0;
}

void ck_hmap_fini(ck_hmap_t *map) {
  for (size_t i = 0; i < map->cap; i++)
    if (map->slots[i].hash) ck_free(map->slots[i].key);
  ck_free(map->slots);
  ck_hmap_init(map);
}

static uint64_t key_hash(const void *key, size_t len) {
  uint64_t h = ck_hash64(key, len, 0x636c696e6bULL);
  return h ? h : 1;
}

static void grow(ck_hmap_t *map) {
  size_t old_cap = map->cap;
  ck_hmap_entry_t *old = map->slots;
  map->cap = old_cap ? old_cap * 2 : 16;
  map->slots = ck_calloc(map->cap, sizeof *map->slots);
  for (size_t i = 0; i < old_cap; i++) {
    if (!old[i].hash) continue;
    size_t j = old[i].hash & (map->cap - 1);
    while (map->slots[j].hash) j = (j + 1) & (map->cap - 1);
    map->slots[j] = old[i];
  }
  ck_free(old);
}

static ck_hmap_entry_t *find(const ck_hmap_t *map, uint64_t h, const void *key, size_t len) {
  if (!map->cap) return NULL;
  size_t j = h & (map->cap - 1);
  while (map->slots[j].hash) {
    ck_hmap_entry_t *e = &map->slots[j];
    if (e->hash == h && e->key_len == len && (!len || memcmp(e->key, key, len) == 0)) return e;
    j = (j + 1) & (map->cap - 1);
  }
  return NULL;
}

void **ck_hmap_put(ck_hmap_t *map, const void *key, size_t key_len, bool *created) {
  uint64_t h = key_hash(key, key_len);
  ck_hmap_entry_t *e = find(map, h, key, key_len);
  if (e) {
    if (created) *created = false;
    return &e->value;
  }
  if ((map->count + 1) * 4 > map->cap * 3) grow(map);
  size_t j = h & (map->cap - 1);
  while (map->slots[j].hash) j = (j + 1) & (map->cap - 1);
  e = &map->slots[j];
  e->hash = h;
  e->key = ck_malloc(key_len ? key_len : 1);
  if (key_len) memcpy(e->key, key, key_len); /* an empty key may come with a NULL pointer */
  e->key_len = key_len;
  e->value = NULL;
  map->count++;
  if (created) *created = true;
  return &e->value;
}

void *ck_hmap_get(const ck_hmap_t *map, const void *key, size_t key_len) {
  ck_hmap_entry_t *e = find(map, key_hash(key, key_len), key, key_len);
  return e ? e->value : NULL;
}

bool ck_hmap_del(ck_hmap_t *map, const void *key, size_t key_len, void **old_value) {
  ck_hmap_entry_t *e = find(map, key_hash(key, key_len), key, key_len);
  if (!e) return false;
  if (old_value) *old_value = e->value;
  ck_free(e->key);
  size_t mask = map->cap - 1, i = (size_t)(e - map->slots), j = i;
  for (;;) { /* backward-shift deletion keeps every probe chain unbroken */
    j = (j + 1) & mask;
    if (!map->slots[j].hash) break;
    size_t home = map->slots[j].hash & mask;
    if (((j - home) & mask) >= ((j - i) & mask)) {
      map->slots[i] = map->slots[j];
      i = j;
    }
  }
  map->slots[i].hash = 0;
  map->count--;
  return true;
}

bool ck_hmap_next(const ck_hmap_t *map, size_t *it, const ck_hmap_entry_t **entry) {
  while (*it < map->cap) {
    const ck_hmap_entry_t *e = &map->slots[(*it)++];
    if (e->hash) {
      *entry = e;
      return true;
    }
  }
  return false;
}
