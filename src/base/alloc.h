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

#include <stdbool.h>
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

/* ---- memory accounts: the job-level memory guard ----
 * An account counts the live bytes of the blocks allocated while it was the calling thread's
 * current account (a job's subtask threads enter its account), wherever they are freed: the
 * block's header names its account. With a limit, an allocation that takes the account past it
 * marks the account over its limit (sticky until the account is freed); the allocation itself
 * still succeeds — callers never check for NULL — and the job's threads, which check
 * ck_mem_over() at every batch, fail the job with ck_mem_over_error's message instead of
 * growing. Up to CK_MEM_ACCOUNTS accounts exist at once; id 0 is "no account". Only memory
 * that goes through these wrappers is counted (not librdkafka's or libpq's own). Any thread. */
#define CK_MEM_ACCOUNTS 64
/* A new account with limit bytes (0: none); 0 when every account is taken. */
int ck_mem_account_new(int64_t limit);
void ck_mem_account_free(int id);
/* The calling thread's allocations are charged to id from now on (0: to none). */
void ck_mem_account_enter(int id);
int64_t ck_mem_account_live(int id);
int64_t ck_mem_account_peak(int id);
/* Whether the calling thread's account went past its limit. One relaxed load when it has none. */
bool ck_mem_over(void);
/* CK_ENOMEM: "job memory exceeded N MiB (limit L MiB)" with the hint, for the calling
 * thread's account. */
struct ck_error;
int ck_mem_over_error(struct ck_error *err);
/* The default job limit: 80% of the machine's memory or of the cgroup's limit, if lower. */
int64_t ck_mem_default_limit(void);
/* Parses a size: bytes, or a number with K, M, G or T (KiB, MiB… and KB, MB… mean the same
 * powers of 1024); false when it is not one. */
bool ck_mem_parse_size(const char *s, int64_t *out);

/* A bug, not an error: print file:line and abort. */
#define ck_assert(cond)                                                                  \
  do {                                                                                   \
    if (!(cond)) ck_assert_fail(#cond, __FILE__, __LINE__);                              \
  } while (0)
_Noreturn void ck_assert_fail(const char *what, const char *file, int line);

#define CK_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
