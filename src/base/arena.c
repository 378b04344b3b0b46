/* DESIGN: see arena.h. Blocks are singly linked, newest first; an oversized request gets a
 * block of its own so a large allocation never wastes the current block. */
#include "base/arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"

struct ck_arena_block {
  ck_arena_block_t *next;
  size_t cap, used;
  _Alignas(16) unsigned char data[];
};

void ck_arena_init(ck_arena_t *arena, size_t block_size) {
  arena->head = NULL;
  arena->block_size = block_size ? block_size : 64 * 1024;
  arena->used_bytes = 0;
}

void ck_arena_fini(ck_arena_t *arena) {
  ck_arena_block_t *b = arena->head;
  while (b) {
    ck_arena_block_t *next = b->next;
    ck_free(b);
    b = next;
  }
  arena->head = NULL;
  arena->used_bytes = 0;
}

void ck_arena_reset(ck_arena_t *arena) {
  /* keep the oldest block of the default size; oversized blocks can sit anywhere in the chain
   * (even behind the first block), so the tail alone is not a safe choice */
  ck_arena_block_t *keep = NULL;
  for (ck_arena_block_t *b = arena->head; b; b = b->next)
    if (b->cap == arena->block_size) keep = b;
  ck_arena_block_t *b = arena->head;
  while (b) {
    ck_arena_block_t *next = b->next;
    if (b != keep) ck_free(b);
    b = next;
  }
  if (keep) {
    keep->next = NULL;
    keep->used = 0;
  }
  arena->head = keep;
  arena->used_bytes = 0;
}

void *ck_arena_alloc(ck_arena_t *arena, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (n == 0) n = 16;
  ck_arena_block_t *b = arena->head;
  if (!b || b->cap - b->used < n) {
    size_t cap = n > arena->block_size / 4 ? n : arena->block_size;
    ck_arena_block_t *nb = ck_malloc(sizeof *nb + cap);
    nb->cap = cap;
    nb->used = 0;
    if (b && cap == n && b->cap - b->used >= 16 * 1024) {
      /* oversized: slot it behind the current block so the current one stays in use */
      nb->next = b->next;
      b->next = nb;
      nb->used = n;
      arena->used_bytes += n;
      return nb->data;
    }
    nb->next = b;
    arena->head = b = nb;
  }
  void *p = b->data + b->used;
  b->used += n;
  arena->used_bytes += n;
  return p;
}

void *ck_arena_zalloc(ck_arena_t *arena, size_t n) {
  void *p = ck_arena_alloc(arena, n);
  memset(p, 0, n);
  return p;
}

char *ck_arena_strndup(ck_arena_t *arena, const char *s, size_t n) {
  char *d = ck_arena_alloc(arena, n + 1);
  memcpy(d, s, n);
  d[n] = 0;
  return d;
}

char *ck_arena_strdup(ck_arena_t *arena, const char *s) {
  return ck_arena_strndup(arena, s, strlen(s));
}

char *ck_arena_printf(ck_arena_t *arena, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *d = ck_arena_alloc(arena, (size_t)n + 1);
  vsnprintf(d, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return d;
}
