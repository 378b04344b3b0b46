/*
 * DESIGN: see alloc.h. Each block carries a 16-byte header holding its size and its memory
 * account's id, so ck_free and ck_realloc keep the live-byte counters exact (the process's and
 * the account's, whichever thread frees it) without a side table.
 */
#include "base/alloc.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"

#define CK_HDR 16

static _Atomic int64_t live_bytes, live_blocks, total_allocs;

typedef struct account {
  _Atomic int64_t live, peak, limit; /* peak and limit: above base */
  _Atomic int64_t base;               /* live when the account was taken (blocks left over) */
  atomic_bool used, over;
} account_t;
static account_t accounts[CK_MEM_ACCOUNTS]; /* [0] is "none": never used */
static _Thread_local int cur_account;

static inline void charge(int id, int64_t n) {
  if (!id) return;
  account_t *a = &accounts[id];
  int64_t now = atomic_fetch_add_explicit(&a->live, n, memory_order_relaxed) + n;
  if (n <= 0) return;
  now -= atomic_load_explicit(&a->base, memory_order_relaxed);
  int64_t peak = atomic_load_explicit(&a->peak, memory_order_relaxed);
  while (now > peak &&
         !atomic_compare_exchange_weak_explicit(&a->peak, &peak, now, memory_order_relaxed,
                                                memory_order_relaxed)) {
  }
  int64_t limit = atomic_load_explicit(&a->limit, memory_order_relaxed);
  if (limit && now > limit) atomic_store_explicit(&a->over, true, memory_order_relaxed);
}

static inline void put_hdr(unsigned char *base, size_t n, int id) {
  int64_t acct = id;
  memcpy(base, &n, sizeof n);
  memcpy(base + 8, &acct, sizeof acct);
}

static inline int hdr_account(const unsigned char *base) {
  int64_t acct;
  memcpy(&acct, base + 8, sizeof acct);
  return (int)acct;
}

static _Noreturn void oom(size_t n) {
  fprintf(stderr, "clink: out of memory allocating %zu bytes\n", n);
  abort();
}

void *ck_malloc(size_t n) {
  if (n > SIZE_MAX - CK_HDR) oom(n); /* n + CK_HDR would wrap to a tiny block */
  unsigned char *p = malloc(n + CK_HDR);
  if (!p) oom(n);
  int id = cur_account;
  put_hdr(p, n, id);
  charge(id, (int64_t)n);
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
  int id = hdr_account(base); /* the block stays its first owner's */
  unsigned char *q = realloc(base, n + CK_HDR);
  if (!q) oom(n);
  put_hdr(q, n, id);
  charge(id, (int64_t)n - (int64_t)old);
  atomic_fetch_add(&live_bytes, (int64_t)n - (int64_t)old);
  return q + CK_HDR;
}

void ck_free(void *p) {
  if (!p) return;
  unsigned char *base = (unsigned char *)p - CK_HDR;
  size_t n;
  memcpy(&n, base, sizeof n);
  charge(hdr_account(base), -(int64_t)n);
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

/* ---- memory accounts ---- */

int ck_mem_account_new(int64_t limit) {
  for (int id = 1; id < CK_MEM_ACCOUNTS; id++) {
    bool free_slot = false;
    if (!atomic_compare_exchange_strong(&accounts[id].used, &free_slot, true)) continue;
    /* blocks a previous owner left behind keep counting here: start from what is live */
    atomic_store(&accounts[id].over, false);
    atomic_store(&accounts[id].base, atomic_load(&accounts[id].live));
    atomic_store(&accounts[id].peak, 0);
    atomic_store(&accounts[id].limit, limit > 0 ? limit : 0);
    return id;
  }
  return 0;
}

void ck_mem_account_free(int id) {
  if (id <= 0 || id >= CK_MEM_ACCOUNTS) return;
  atomic_store(&accounts[id].limit, 0);
  atomic_store(&accounts[id].over, false);
  atomic_store(&accounts[id].used, false);
}

void ck_mem_account_enter(int id) { cur_account = id > 0 && id < CK_MEM_ACCOUNTS ? id : 0; }

int64_t ck_mem_account_live(int id) {
  return id > 0 && id < CK_MEM_ACCOUNTS
             ? atomic_load(&accounts[id].live) - atomic_load(&accounts[id].base)
             : 0;
}

int64_t ck_mem_account_peak(int id) {
  return id > 0 && id < CK_MEM_ACCOUNTS ? atomic_load(&accounts[id].peak) : 0;
}

bool ck_mem_over(void) {
  return cur_account && atomic_load_explicit(&accounts[cur_account].over, memory_order_relaxed);
}

int ck_mem_over_error(struct ck_error *err) {
  account_t *a = &accounts[cur_account];
  long long mib = 1024 * 1024;
  /* the peak: it is what passed the limit (frees since may have brought the live bytes back) */
  long long peak = (long long)atomic_load(&a->peak);
  long long limit = (long long)atomic_load(&a->limit);
  ck_error_set(err, CK_ENOMEM, "job memory exceeded %lld MiB (limit %lld MiB)",
               (peak + mib - 1) / mib, limit / mib);
  ck_error_detail(err, "the job's state, windows and in-flight batches reached %lld bytes; it "
                  "is stopped before the machine runs out of memory", peak);
  ck_error_hint(err, "raise --max-memory, or bound the state: fewer distinct keys, smaller or "
                "fewer windows per record, a smaller allowed_lateness_ms");
  return CK_ENOMEM;
}

/* The first number in the line of /proc/meminfo that starts with key, in kB; 0 when absent. */
static int64_t meminfo_kb(const char *key) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  int64_t v = 0;
  size_t kl = strlen(key);
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, key, kl)) {
      v = strtoll(line + kl, NULL, 10);
      break;
    }
  fclose(f);
  return v;
}

static int64_t read_number_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char buf[64] = "";
  int64_t v = 0;
  if (fgets(buf, sizeof buf, f) && isdigit((unsigned char)buf[0])) v = strtoll(buf, NULL, 10);
  fclose(f);
  return v; /* "max" (no limit) reads as 0 */
}

int64_t ck_mem_default_limit(void) {
  int64_t total = meminfo_kb("MemTotal:") * 1024;
  if (total <= 0) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    total = pages > 0 && page > 0 ? (int64_t)pages * page : 0;
  }
  int64_t cg = read_number_file("/sys/fs/cgroup/memory.max"); /* cgroup v2 */
  if (!cg) cg = read_number_file("/sys/fs/cgroup/memory/memory.limit_in_bytes"); /* v1 */
  if (cg > 0 && (total <= 0 || cg < total)) total = cg;
  return total > 0 ? total / 10 * 8 : 0;
}

bool ck_mem_parse_size(const char *s, int64_t *out) {
  if (!s || !isdigit((unsigned char)*s)) return false;
  char *end;
  double v = strtod(s, &end);
  int shift = 0;
  switch (toupper((unsigned char)*end)) {
    case 0: break;
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    default: return false;
  }
  if (*end) {
    end++;
    if (!strcmp(end, "iB") || !strcmp(end, "B") || !strcmp(end, "ib") || !strcmp(end, "b"))
      end += strlen(end);
    if (*end) return false;
  }
  v *= (double)((int64_t)1 << shift);
  if (!(v >= 1) || v > 9.2e18) return false;
  *out = (int64_t)v;
  return true;
}
