/*
 * DESIGN: region allocator.
 *
 * Memory belongs to a lifetime (job, task, batch, request, checkpoint). An arena hands out
 * pointers from large blocks and frees them all at once on reset/fini. Allocations are 16-byte
 * aligned. An arena is owned by one thread at a time; it has no lock.
 */
#ifndef CK_BASE_ARENA_H
#define CK_BASE_ARENA_H

#include <stddef.h>

typedef struct ck_arena_block ck_arena_block_t;

typedef struct ck_arena {
  ck_arena_block_t *head;  /* current block; older blocks chained behind it */
  size_t block_size;       /* default size of a new block */
  size_t used_bytes;       /* bytes handed out since the last reset */
} ck_arena_t;

void ck_arena_init(ck_arena_t *arena, size_t block_size);
void ck_arena_fini(ck_arena_t *arena);
/* Frees every block but the first one of the default size, which is kept for reuse. */
void ck_arena_reset(ck_arena_t *arena);
void *ck_arena_alloc(ck_arena_t *arena, size_t n);
void *ck_arena_zalloc(ck_arena_t *arena, size_t n);
char *ck_arena_strdup(ck_arena_t *arena, const char *s);
char *ck_arena_strndup(ck_arena_t *arena, const char *s, size_t n);
char *ck_arena_printf(ck_arena_t *arena, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
