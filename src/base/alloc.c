/*
 * DESIGN: see alloc.h. Each block carries a 16-byte header holding its size so ck_free and
 * ck_realloc can keep the live-byte counter exact without a side table.
 */
#include "base/alloc.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK_HDR 16

static _Atomic int64_t live_bytes, live_blocks, total_allocs;

static _Noreturn void oom(size_t n) {
  fprintf(stderr, "clink: out of memory allocating %zu bytes\n", n);
  abort();
}

void *ck_malloc(size_t n) {
  if (n > SIZE_MAX - CK_HDR) oom(n); /* n + CK_HDR would wrap to a tiny block */
  unsigned char *p = malloc(n + CK_HDR);
  if (!p) oom(n);
  memcpy(p, &n, sizeof n);
  atomic_fetch_add(&live_bytes, (int64_t)n);
  atomic_fetch_add(&live_blocks, 1);
  atomic_fetch_add(&total_allocs, 1);
  return p + CK_HDR;
}

void *ck_calloc(size_t count, size_t n) {
  if (n && count > SIZE_MAX / n) oom(SIZE_MAX);
  void *p = ck_malloc(count * n);
  memset(p, 0, count * n);
  return p;
}

void *ck_realloc(void *p, size_t n) {
  if (!p) return ck_malloc(n);
  if (n > SIZE_MAX - CK_HDR) oom(n);
  unsigned char *base = (unsigned char *)p - CK_HDR;
  size_t old;
  memcpy(&old, base, sizeof old);
  unsigned char *q = realloc(base, n + CK_HDR);
  if (!q) oom(n);
  memcpy(q, &n, sizeof n);
  atomic_fetch_add(&live_bytes, (int64_t)n - (int64_t)old);
  return q + CK_HDR;
}

void ck_free(void *p) {
  if (!p) return;
  unsigned char *base = (unsigned char *)p - CK_HDR;
  size_t n;
  memcpy(&n, base, sizeof n);
  atomic_fetch_sub(&live_bytes, (int64_t)n);
  atomic_fetch_sub(&live_blocks, 1);
  free(base);
}

char *ck_strndup(const char *s, size_t n) {
  char *d = ck_malloc(n + 1);
  memcpy(d, s, n);
  d[n] = 0;
  return d;
}

char *ck_strdup(const char *s) { return ck_strndup(s, strlen(s)); }

ck_mem_stats_t ck_mem_stats(void) {
  ck_mem_stats_t st = {atomic_load(&live_bytes), atomic_load(&live_blocks),
                       atomic_load(&total_allocs)};
  return st;
}

void ck_assert_fail(const char *what, const char *file, int line) {
  fprintf(stderr, "clink: internal error: assertion '%s' failed at %s:%d\n", what, file, line);
  abort();
}
