/*
 * DESIGN: see cityhash.h. Loads are little-endian and unaligned (memcpy), so the result is
 * the same on every host. Below 128 bytes the hash is the "CityMurmur" construction; from 128
 * bytes on, the 56-byte-state loop over 128-byte chunks and a tail of up to four 32-byte
 * chunks read back from the end.
 */
#include "connectors/clickhouse/cityhash.h"

#include <string.h>

static const uint64_t K0 = 0xc3a5c85c97cb3127ULL;
static const uint64_t K1 = 0xb492b66fbe98f273ULL;
static const uint64_t K2 = 0x9ae16a3b2f90404fULL;
static const uint64_t K3 = 0xc949d7c7509e6557ULL;

static uint64_t load64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static uint32_t load32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rot(uint64_t v, int s) { return s == 0 ? v : (v >> s) | (v << (64 - s)); }
static uint64_t rot1(uint64_t v, int s) { return (v >> s) | (v << (64 - s)); } /* s in 1..63 */
static uint64_t shift_mix(uint64_t v) { return v ^ (v >> 47); }

static uint64_t hash16(uint64_t lo, uint64_t hi) {
  const uint64_t mul = 0x9ddfea08eb382d69ULL;
  uint64_t a = (lo ^ hi) * mul;
  a ^= a >> 47;
  uint64_t b = (hi ^ a) * mul;
  b ^= b >> 47;
  return b * mul;
}

static uint64_t hash_0_to_16(const uint8_t *s, size_t len) {
  if (len > 8) {
    uint64_t a = load64(s), b = load64(s + len - 8);
    return hash16(a, rot1(b + len, (int)len)) ^ b;
  }
  if (len >= 4) {
    uint64_t a = load32(s);
    return hash16(len + (a << 3), load32(s + len - 4));
  }
  if (len > 0) {
    uint32_t y = (uint32_t)s[0] + ((uint32_t)s[len >> 1] << 8);
    uint32_t z = (uint32_t)len + ((uint32_t)s[len - 1] << 2);
    return shift_mix((uint64_t)y * K2 ^ (uint64_t)z * K3) * K2;
  }
  return K2;
}

typedef struct pair64 {
  uint64_t a, b;
} pair64_t;

static pair64_t weak32(const uint8_t *s, uint64_t a, uint64_t b) {
  uint64_t w = load64(s), x = load64(s + 8), y = load64(s + 16), z = load64(s + 24);
  a += w;
  b = rot(b + a + z, 21);
  uint64_t c = a;
  a += x;
  a += y;
  b += rot(a, 44);
  return (pair64_t){a + z, b + c};
}

static ck_city128_t city_murmur(const uint8_t *s, size_t len, ck_city128_t seed) {
  uint64_t a = seed.first, b = seed.second, c, d;
  long long l = (long long)len - 16;
  if (l <= 0) {
    a = shift_mix(a * K1) * K1;
    c = b * K1 + hash_0_to_16(s, len);
    d = shift_mix(a + (len >= 8 ? load64(s) : c));
  } else {
    c = hash16(load64(s + len - 8) + K1, a);
    d = hash16(b + len, c + load64(s + len - 16));
    a += d;
    do {
      a ^= shift_mix(load64(s) * K1) * K1;
      a *= K1;
      b ^= a;
      c ^= shift_mix(load64(s + 8) * K1) * K1;
      c *= K1;
      d ^= c;
      s += 16;
      l -= 16;
    } while (l > 0);
  }
  a = hash16(a, c);
  b = hash16(d, b);
  return (ck_city128_t){a ^ b, hash16(b, a)};
}

ck_city128_t ck_cityhash128_seed(const void *data, size_t len, ck_city128_t seed) {
  const uint8_t *s = data;
  if (len < 128) return city_murmur(s, len, seed);
  pair64_t v, w;
  uint64_t x = seed.first, y = seed.second, z = len * K1;
  v.a = rot(y ^ K1, 49) * K1 + load64(s);
  v.b = rot(v.a, 42) * K1 + load64(s + 8);
  w.a = rot(y + z, 35) * K1 + x;
  w.b = rot(x + load64(s + 88), 53) * K1;
  do {
    for (int half = 0; half < 2; half++) {
      x = rot(x + y + v.a + load64(s + 16), 37) * K1;
      y = rot(y + v.b + load64(s + 48), 42) * K1;
      x ^= w.b;
      y ^= v.a;
      z = rot(z ^ w.a, 33);
      v = weak32(s, v.b * K1, x + w.a);
      w = weak32(s + 32, z + w.b, y);
      uint64_t t = z;
      z = x;
      x = t;
      s += 64;
    }
    len -= 128;
  } while (len >= 128);
  y += rot(w.a, 37) * K0 + z;
  x += rot(v.a + z, 49) * K0;
  for (size_t done = 0; done < len;) {
    done += 32;
    y = rot(y - x, 42) * K0 + v.b;
    w.a += load64(s + len - done + 16);
    x = rot(x, 49) * K0 + w.a;
    w.a += v.a;
    v = weak32(s + len - done, v.a, v.b);
  }
  x = hash16(x, v.a);
  y = hash16(y, w.a);
  return (ck_city128_t){hash16(x + v.b, w.b) + y, hash16(x + w.b, y + v.b)};
}

ck_city128_t ck_cityhash128(const void *data, size_t len) {
  const uint8_t *s = data;
  if (len >= 16)
    return ck_cityhash128_seed(s + 16, len - 16, (ck_city128_t){load64(s) ^ K3, load64(s + 8)});
  if (len >= 8)
    return ck_cityhash128_seed(NULL, 0,
                               (ck_city128_t){load64(s) ^ (len * K0), load64(s + len - 8) ^ K1});
  return ck_cityhash128_seed(s, len, (ck_city128_t){K0, K1});
}
