/*
 * DESIGN: internals of the aggregation operator (agg_op.c, agg_state.c, agg_snap.c).
 *
 * The operator itself is built by ck_agg_op_init (op.h); nothing outside src/runtime/agg_*.c
 * needs this header. It describes the compact state the operator keeps:
 *
 *   - groups: one fixed-size *entry* per (window, key) — or per key when unwindowed — in a
 *     slab of equal-sized slots (ck_agg_tab_t), addressed by 32-bit index. An entry is a
 *     13-byte header (next, window id, hash tag, flags), a bitmap (key NULLs, "has a value"
 *     per SUM/MIN/MAX, NULLs of the last emitted row), the key columns inline at fixed width
 *     (strings as 8-byte references into the string pool), one flat accumulator per call and,
 *     unwindowed only, the values last emitted. The offsets live in ck_agg_t (key_off,
 *     acc[].off …), computed once by ck_agg_op_init.
 *   - an open-addressing index of 8-byte slots (entry index + 32-bit hash tag) over the
 *     entries; the tag is also kept in the entry so removal needs no rehash.
 *   - windows: one record per distinct [start, end) shared by all keys (tumble, hop,
 *     cumulate), or one per session. Entries of a window are chained through `next`. A binary
 *     heap ordered by (end, start) finds the windows a watermark completes.
 *   - strings (keys, MIN/MAX of VARCHAR, last emitted MIN/MAX) in one append-only pool,
 *     compacted when at least half of it (and 64 KiB) is garbage; DISTINCT values in a small
 *     hash set per (group, call) that owns its own bytes. State never points into a batch.
 *
 * Sessions: the index holds one *directory* entry per key (flags CK_AGG_F_KEY) whose `wid`
 * heads the chain of that key's open sessions (window.knext); each session is a window record
 * whose single accumulator entry (flags CK_AGG_F_ACC) is not indexed and takes its key from the
 * directory entry (window.dir).
 *
 * Pointers into the slab or the pool are invalidated by any allocation from them: code keeps
 * indices and re-fetches.
 *
 * Threads: one operator instance per subtask, used only on that subtask's thread.
 */
#ifndef CK_RUNTIME_AGG_H
#define CK_RUNTIME_AGG_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/error.h"
#include "base/hash.h"
#include "runtime/op.h"

#define CK_AGG_NONE UINT32_MAX

/* ---- unaligned little helpers (entries are packed) ---- */
static inline int64_t ck_agg_ld64(const char *p) { int64_t v; memcpy(&v, p, 8); return v; }
static inline void ck_agg_st64(char *p, int64_t v) { memcpy(p, &v, 8); }
static inline uint32_t ck_agg_ld32(const char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline void ck_agg_st32(char *p, uint32_t v) { memcpy(p, &v, 4); }
static inline double ck_agg_ldf(const char *p) { double v; memcpy(&v, p, 8); return v; }
static inline void ck_agg_stf(char *p, double v) { memcpy(p, &v, 8); }
static inline ck_i128 ck_agg_ld128(const char *p) { ck_i128 v; memcpy(&v, p, 16); return v; }
static inline void ck_agg_st128(char *p, ck_i128 v) { memcpy(p, &v, 16); }
static inline bool ck_agg_bit(const char *bits, int i) { return (bits[i >> 3] >> (i & 7)) & 1; }
static inline void ck_agg_setbit(char *bits, int i, bool on) {
  if (on) bits[i >> 3] = (char)(bits[i >> 3] | (1 << (i & 7)));
  else bits[i >> 3] = (char)(bits[i >> 3] & ~(1 << (i & 7)));
}

/* ---- string pool ---- */

typedef struct ck_agg_sref {
  uint32_t off, len;
} ck_agg_sref_t;

typedef struct ck_agg_pool {
  char *data;
  size_t len, cap;
  size_t live; /* bytes still referenced; len - live is garbage */
} ck_agg_pool_t;

void ck_agg_pool_init(ck_agg_pool_t *pool);
void ck_agg_pool_fini(ck_agg_pool_t *pool);
/* Copies n bytes (s may point into the pool itself). Fails past 4 GiB of live strings. */
int ck_agg_pool_add(ck_agg_pool_t *pool, const char *s, size_t n, ck_agg_sref_t *out,
                    ck_error_t *err);
void ck_agg_pool_release(ck_agg_pool_t *pool, ck_agg_sref_t ref);
static inline const char *ck_agg_pool_str(const ck_agg_pool_t *pool, ck_agg_sref_t ref) {
  return pool->data ? pool->data + ref.off : "";
}
static inline ck_agg_sref_t ck_agg_ldref(const char *p) {
  ck_agg_sref_t r;
  memcpy(&r, p, 8);
  return r;
}
static inline void ck_agg_stref(char *p, ck_agg_sref_t r) { memcpy(p, &r, 8); }

/* ---- DISTINCT value sets ---- */

/* Values are canonical bytes of width `vw` (1, 8 or 16); strings (is_str) are stored in the
 * set's own byte buffer and compared by content. Dense value array + index of idx+1. */
typedef struct ck_agg_dset {
  uint32_t count, vcap;
  uint32_t icap;      /* power of two */
  uint32_t *index;    /* value index + 1, 0 = empty */
  char *vals;         /* count * vw bytes; strings: (off, len) pairs into sdata */
  char *sdata;
  size_t slen, scap;
} ck_agg_dset_t;

ck_agg_dset_t *ck_agg_dset_new(void);
void ck_agg_dset_free(ck_agg_dset_t *set);
/* Adds a value; true when it was not there yet. Fixed width: p points to vw bytes. */
bool ck_agg_dset_add(ck_agg_dset_t *set, int vw, bool is_str, const char *p, size_t n);
/* Value i: fixed width returns a pointer to vw bytes; strings set *n. */
const char *ck_agg_dset_get(const ck_agg_dset_t *set, int vw, bool is_str, uint32_t i,
                            size_t *n);
size_t ck_agg_dset_bytes(const ck_agg_dset_t *set, int vw);

/* ---- entries and their index ---- */

enum {
  CK_AGG_E_NEXT = 0,  /* uint32: next entry of the window / free list */
  CK_AGG_E_WID = 4,   /* uint32: window id (session directory: first session) */
  CK_AGG_E_TAG = 8,   /* uint32: hash tag in the index */
  CK_AGG_E_FLAGS = 12,
  CK_AGG_E_HDR = 13,
};

enum {
  CK_AGG_F_USED = 1,     /* slot allocated */
  CK_AGG_F_KEY = 2,      /* owns its key (and its key strings) */
  CK_AGG_F_ACC = 4,      /* owns accumulators */
  CK_AGG_F_DIRTY = 8,    /* unwindowed: changed in the current batch */
  CK_AGG_F_EMITTED = 16, /* unwindowed: its last emitted row is live downstream */
};

typedef struct ck_agg_slot {
  uint32_t idx1; /* entry index + 1; 0 = empty */
  uint32_t tag;
} ck_agg_slot_t;

typedef struct ck_agg_tab {
  uint32_t esize;
  char *slab;
  uint32_t nslab, slab_cap; /* high-water mark and capacity, in entries */
  uint32_t free_head;
  uint32_t live;            /* allocated entries */
  ck_agg_slot_t *slots;
  size_t icap, icount;      /* icap: power of two (0 before the first insert) */
} ck_agg_tab_t;

void ck_agg_tab_init(ck_agg_tab_t *tab, uint32_t esize);
void ck_agg_tab_fini(ck_agg_tab_t *tab);
/* A zeroed entry with flags CK_AGG_F_USED. May move the slab. */
uint32_t ck_agg_tab_alloc(ck_agg_tab_t *tab);
void ck_agg_tab_free(ck_agg_tab_t *tab, uint32_t idx);
static inline char *ck_agg_tab_entry(const ck_agg_tab_t *tab, uint32_t idx) {
  return tab->slab + (size_t)idx * tab->esize;
}
void ck_agg_index_insert(ck_agg_tab_t *tab, uint32_t idx, uint32_t tag);
void ck_agg_index_remove(ck_agg_tab_t *tab, uint32_t idx, uint32_t tag);
size_t ck_agg_tab_bytes(const ck_agg_tab_t *tab);

/* ---- windows and the firing heap ---- */

typedef struct ck_agg_win {
  int64_t start, end;
  uint32_t head;  /* first entry (chained through CK_AGG_E_NEXT) */
  uint32_t gen;   /* bumped on reuse, so stale heap items are recognised */
  uint32_t knext; /* session: next session of the same key; free list otherwise */
  uint32_t dir;   /* session: the key's directory entry */
  bool alive;
} ck_agg_win_t;

typedef struct ck_agg_heap_item {
  int64_t end, start;
  uint32_t wid, gen;
} ck_agg_heap_item_t;

typedef struct ck_agg_wins {
  ck_agg_win_t *wins;
  uint32_t n, cap, free_head, live;
  ck_agg_heap_item_t *heap;
  size_t nheap, heap_cap;
  ck_hmap_t by_range; /* (start, end) → wid + 1, for windows shared by all keys */
  bool shared;
  uint32_t last_wid;  /* one-entry lookup cache for shared windows */
} ck_agg_wins_t;

void ck_agg_wins_init(ck_agg_wins_t *ws, bool shared);
void ck_agg_wins_fini(ck_agg_wins_t *ws);
/* Shared windows: the window [start, end), created (and scheduled) when absent. */
uint32_t ck_agg_wins_get(ck_agg_wins_t *ws, int64_t start, int64_t end);
/* A new window record (sessions), scheduled on the heap. Every live window has exactly one
 * heap item; a session may only grow (end later, start earlier) after it was scheduled. */
uint32_t ck_agg_wins_new(ck_agg_wins_t *ws, int64_t start, int64_t end);
void ck_agg_wins_free(ck_agg_wins_t *ws, uint32_t wid);
/* Pops the earliest window with end + lateness <= wm (saturating); false when there is none.
 * Stale items of freed windows are skipped; an item for a window whose extent changed is
 * re-pushed with its current extent. */
bool ck_agg_wins_pop_due(ck_agg_wins_t *ws, int64_t wm, int64_t lateness, uint32_t *wid);
size_t ck_agg_wins_bytes(const ck_agg_wins_t *ws);

/* Saturating int64 addition (window ends near the end of time, lateness). */
static inline int64_t ck_agg_sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

/* ---- the operator instance ---- */

/* Canonical categories of a value held in state: BOOL 1 byte, INT (INT32, INT64, TIMESTAMP)
 * int64, FLOAT (FLOAT32, FLOAT64) double, DEC __int128, STR a pool reference. */
typedef enum ck_agg_vcat {
  CK_AGG_V_BOOL,
  CK_AGG_V_INT,
  CK_AGG_V_FLOAT,
  CK_AGG_V_DEC,
  CK_AGG_V_STR,
} ck_agg_vcat_t;

typedef enum ck_agg_acc_kind {
  CK_AGG_A_COUNT,  /* int64 n */
  CK_AGG_A_SUM_I,  /* int128 sum (+ has bit), range-checked against BIGINT at emit */
  CK_AGG_A_SUM_D,  /* int128 sum (+ has bit) */
  CK_AGG_A_SUM_F,  /* double-double sum hi, lo, i64 count of 2^1000s (+ has bit) */
  CK_AGG_A_AVG_I,  /* int128 sum, int64 n */
  CK_AGG_A_AVG_D,  /* int128 sum, int64 n */
  CK_AGG_A_AVG_F,  /* double-double sum hi, lo, int64 n, i64 count of 2^1000s */
  CK_AGG_A_MINMAX, /* canonical value (+ has bit) */
  CK_AGG_A_FIRSTLAST, /* canonical value, i64 arrival number (+ has bit) */
  CK_AGG_A_LISTAGG,   /* ck_agg_sbuf_t * (NULL: no value yet) */
  CK_AGG_A_HLL,       /* uint8_t * to CK_AGG_HLL_M registers (NULL: no value yet) */
  CK_AGG_A_UDF,    /* a user-defined aggregate's acc_size bytes (+ has bit: created) */
} ck_agg_acc_kind_t;

/* LISTAGG's accumulator: the joined text so far, owned by the entry. */
typedef struct ck_agg_sbuf {
  uint32_t len, cap;
  char data[];
} ck_agg_sbuf_t;

/* APPROX_COUNT_DISTINCT: HyperLogLog with 2^12 one-byte registers (standard error
 * 1.04 / sqrt(4096) = 1.6%), over ck_hash64 of the value's canonical bytes with its own seed. */
#define CK_AGG_HLL_P 12
#define CK_AGG_HLL_M (1u << CK_AGG_HLL_P)
#define CK_AGG_LISTAGG_MAX (64 * 1024 * 1024) /* bytes of LISTAGG text per group */
#define CK_AGG_HLL_SEED 0x686c6c2d636c6e6bULL
/* The estimate over registers r (Flajolet et al. with the small-range linear count). */
int64_t ck_agg_hll_estimate(const uint8_t *r);

/* The category a value of type t is held in. */
static inline ck_agg_vcat_t ck_agg_vcat_of(ck_type_t t) {
  switch (t.id) {
    case CK_T_BOOL: return CK_AGG_V_BOOL;
    case CK_T_FLOAT32:
    case CK_T_FLOAT64: return CK_AGG_V_FLOAT;
    case CK_T_DECIMAL: return CK_AGG_V_DEC;
    case CK_T_STRING: return CK_AGG_V_STR;
    default: return CK_AGG_V_INT;
  }
}

/* The category of an accumulator's result, given its argument's (acat). */
static inline ck_agg_vcat_t ck_agg_rcat_of(ck_agg_acc_kind_t k, ck_agg_vcat_t acat) {
  switch (k) {
    case CK_AGG_A_COUNT:
    case CK_AGG_A_SUM_I: return CK_AGG_V_INT;
    case CK_AGG_A_SUM_D:
    case CK_AGG_A_AVG_D: return CK_AGG_V_DEC;
    case CK_AGG_A_MINMAX:
    case CK_AGG_A_FIRSTLAST: return acat;
    case CK_AGG_A_LISTAGG: return CK_AGG_V_STR;
    case CK_AGG_A_HLL: return CK_AGG_V_INT;
    default: return CK_AGG_V_FLOAT; /* SUM_F, AVG_I, AVG_F */
  }
}

typedef struct ck_agg_acc {
  ck_agg_acc_kind_t kind;
  const ck_agg_call_t *call;
  bool is_min;
  bool distinct;       /* keeps a DISTINCT value set (COUNT/SUM/AVG) */
  ck_agg_vcat_t acat;  /* category of the argument */
  ck_agg_vcat_t rcat;  /* category of the result */
  uint32_t off;        /* accumulator */
  uint32_t set_off;    /* ck_agg_dset_t * when distinct */
  int has_bit;         /* -1 when unused */
  uint32_t emit_off;   /* unwindowed: value last emitted */
  int emit_bit;        /* unwindowed: its NULL bit */
} ck_agg_acc_t;

typedef struct ck_agg {
  ck_op_t *op;
  const ck_agg_spec_t *spec;
  ck_win_kind_t kind;
  bool windowed, session, shared; /* shared: tumble/hop/cumulate windows */
  int64_t lateness;
  int nkeys;
  ck_type_t *key_types;
  ck_agg_vcat_t *key_cat;
  uint32_t *key_off;
  int *key_ident;       /* 0..nkeys-1: the key columns of a key-only batch */
  int ncalls;
  ck_agg_acc_t *acc;
  uint32_t bits_off, esize;
  uint32_t acc_end;     /* end of the accumulators (unwindowed: start of the emitted values) */
  char *scratch;        /* esize bytes: an entry's accumulators before a row */
  int nout;
  const ck_type_t *out_types;
  int maxp;
  ck_agg_tab_t tab;
  ck_agg_pool_t pool;
  ck_agg_wins_t wins;
  int64_t wm;           /* the watermark acted on: the last message's, or a row's (batch.h wms) */
  int64_t wm_sent;      /* the last watermark forwarded (a row's watermark is not forwarded) */
  struct ck_batch *fired; /* windowed: fired rows not yet emitted (one batch's worth at most) */
  int64_t groups;       /* entries holding accumulators */
  size_t dset_bytes;
  uint32_t *dirty;      /* unwindowed: entries changed by the current batch, in order */
  size_t ndirty, dirty_cap;
  int restores;
  bool inplace;         /* a call's accumulator changes behind a pointer (LISTAGG, HLL), so
                         * comparing an entry's bytes does not tell whether it changed */
  int64_t seq;          /* arrival number of the next row (FIRST_VALUE / LAST_VALUE) */
  ck_error_t *snap_err;  /* while a snapshot writes accumulators: where a UDF's failure goes */
  bool snap_failed;
  bool udf_calls;        /* some call is a user-defined aggregate (CK_AGG_A_UDF) */
} ck_agg_t;

static inline char *ck_agg_entry(const ck_agg_t *agg, uint32_t idx) {
  return ck_agg_tab_entry(&agg->tab, idx);
}
int ck_agg_vcat_width(ck_agg_vcat_t cat);
/* The entry holding idx's key (itself, or a session's directory entry). */
uint32_t ck_agg_key_entry(const ck_agg_t *agg, uint32_t idx);
/* A value in canonical form (pool strings resolved), typed `type`. */
void ck_agg_val_load(const ck_agg_t *agg, ck_agg_vcat_t cat, ck_type_t type, const char *p,
                     ck_value_t *out);
/* Hash tag of a key hash in the index (salt: window id, 0 when unwindowed or a session). */
uint32_t ck_agg_tag(uint64_t key_hash, uint32_t salt);
/* Finds (or, with create, adds) the indexed entry for the key in row `row` of b's `cols`;
 * CK_AGG_NONE when absent and not created. New entries get `flags` and `wid`. */
int ck_agg_group(ck_agg_t *agg, uint32_t tag, uint32_t wid, const ck_batch_t *b,
                 const int *cols, size_t row, bool create, uint8_t flags, uint32_t *out,
                 bool *created, ck_error_t *err);
/* Folds one non-NULL argument value into call c of entry idx (DISTINCT-aware). */
int ck_agg_acc_add_value(ck_agg_t *agg, uint32_t idx, int c, const ck_value_t *v,
                         ck_error_t *err);
/* Frees what entry idx owns (strings, value sets); the slot itself stays allocated. */
void ck_agg_entry_release(ck_agg_t *agg, uint32_t idx);
void ck_agg_update_metrics(ck_agg_t *agg);
/* A new session [start, end) of the key in directory entry dir, with an empty accumulator
 * entry (the window's head); returns its window id. */
uint32_t ck_agg_session_new(ck_agg_t *agg, uint32_t dir, int64_t start, int64_t end);

/* agg_snap.c */
int ck_agg_snapshot(ck_op_t *op, ck_buf_t *out, ck_error_t *err);
int ck_agg_restore(ck_op_t *op, const void *data, size_t len, ck_error_t *err);

#endif
