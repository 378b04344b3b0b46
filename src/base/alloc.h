/*
 * DESIGN: counting heap wrappers.
 *
 * Every heap allocation in clink goes through ck_malloc/ck_calloc/ck_realloc/ck_free so the
 * bytes and blocks live at any moment are a metric (per process; per operator later via the
 * arena that owns the memory). Out of memory is not an error we recover from: the wrappers
 * abort with a message, so callers never check for NULL.
 *
 * Threads: any. The counters are atomics; no locks.
 */
#ifndef CK_BASE_ALLOC_H
#define CK_BASE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

void *ck_malloc(size_t n);
void *ck_calloc(size_t count, size_t n);
void *ck_realloc(void *p, size_t n);
void ck_free(void *p);
char *ck_strdup(const char *s);
char *ck_strndup(const char *s, size_t n);

typedef struct ck_mem_stats {
  int64_t live_bytes;   /* bytes allocated and not yet freed */
  int64_t live_blocks;  /* blocks allocated and not yet freed */
  int64_t total_allocs; /* allocations since start */
} ck_mem_stats_t;

ck_mem_stats_t ck_mem_stats(void);

/* A bug, not an error: print file:line and abort. */
#define ck_assert(cond)                                                                  \
  do {                                                                                   \
    if (!(cond)) ck_assert_fail(#cond, __FILE__, __LINE__);                              \
  } while (0)
_Noreturn void ck_assert_fail(const char *what, const char *file, int line);

#define CK_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
