/* DESIGN: see crc32c.h. On x86-64 CPUs with SSE4.2 (every one since 2008) the CRC32
 * instruction computes CRC32C itself, 8 bytes at a time; elsewhere, tables (slicing by 8).
 * The choice and the tables are made once, thread-safely, on first use. */
#include "base/crc32c.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

static uint32_t table[8][256];
static bool use_hw;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void build(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++) table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
#if defined(__x86_64__)
  __builtin_cpu_init();
  use_hw = __builtin_cpu_supports("sse4.2");
#endif
}

/* crc is the running register (already inverted). */
static uint32_t crc_tables(uint32_t crc, const unsigned char *p, size_t n) {
  while (n >= 8) {
    uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
          table[4][lo >> 24] ^ table[3][p[4]] ^ table[2][p[5]] ^ table[1][p[6]] ^ table[0][p[7]];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const unsigned char *p,
                                                        size_t n) {
  uint64_t c = crc;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
  }
  uint32_t c32 = (uint32_t)c;
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}
#endif

uint32_t ck_crc32c(uint32_t crc, const void *data, size_t n) {
  pthread_once(&once, build);
#if defined(__x86_64__)
  if (use_hw) return ~crc_hw(~crc, data, n);
#endif
  return ~crc_tables(~crc, data, n);
}

uint32_t ck_crc32c_portable(uint32_t crc, const void *data, size_t n) {
  pthread_once(&once, build);
  return ~crc_tables(~crc, data, n);
}
