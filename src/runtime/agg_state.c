/*
 * DESIGN: the containers behind the aggregation operator's state (see agg.h): the string
 * pool, DISTINCT value sets, the entry slab with its open-addressing index, and the window
 * records with their firing heap. They know nothing about keys, aggregates or batches; the
 * operator (agg_op.c) gives entries their meaning.
 *
 * Memory: everything is ck_malloc'd and owned by the operator instance; *_bytes report the
 * capacity held, for op->metrics.state_bytes. Threads: the owning subtask's thread only.
 */
#include "runtime/agg.h"

#include "base/alloc.h"

/* ---- string pool ---- */

void ck_agg_pool_init(ck_agg_pool_t *pool) { memset(pool, 0, sizeof *pool); }

void ck_agg_pool_fini(ck_agg_pool_t *pool) {
  ck_free(pool->data);
  memset(pool, 0, sizeof *pool);
}

int ck_agg_pool_add(ck_agg_pool_t *pool, const char *s, size_t n, ck_agg_sref_t *out,
                    ck_error_t *err) {
  if (n == 0) {
    *out = (ck_agg_sref_t){0, 0};
    return 0;
  }
  if (pool->len + n > UINT32_MAX)
    return ck_error_set(err, CK_EUNSUPPORTED,
                        "could not keep aggregation state: its strings exceed 4 GiB");
  if (pool->len + n > pool->cap) {
    size_t inside = pool->data && s >= pool->data && s < pool->data + pool->len
                        ? (size_t)(s - pool->data) + 1
                        : 0;
    size_t cap = pool->cap ? pool->cap : 4096;
    while (cap < pool->len + n) cap *= 2;
    pool->data = ck_realloc(pool->data, cap);
    pool->cap = cap;
    if (inside) s = pool->data + inside - 1;
  }
  memcpy(pool->data + pool->len, s, n);
  *out = (ck_agg_sref_t){(uint32_t)pool->len, (uint32_t)n};
  pool->len += n;
  pool->live += n;
  return 0;
}

void ck_agg_pool_release(ck_agg_pool_t *pool, ck_agg_sref_t ref) {
  ck_assert(pool->live >= ref.len);
  pool->live -= ref.len;
}

/* ---- DISTINCT value sets ---- */

static uint64_t dset_hash(int vw, bool is_str, const char *p, size_t n) {
  return ck_hash64(p, is_str ? n : (size_t)vw, 0x64697374ULL);
}

ck_agg_dset_t *ck_agg_dset_new(void) { return ck_calloc(1, sizeof(ck_agg_dset_t)); }

void ck_agg_dset_free(ck_agg_dset_t *set) {
  if (!set) return;
  ck_free(set->index);
  ck_free(set->vals);
  ck_free(set->sdata);
  ck_free(set);
}

const char *ck_agg_dset_get(const ck_agg_dset_t *set, int vw, bool is_str, uint32_t i,
                            size_t *n) {
  const char *v = set->vals + (size_t)i * (size_t)vw;
  if (!is_str) return v;
  ck_agg_sref_t r = ck_agg_ldref(v);
  *n = r.len;
  return set->sdata ? set->sdata + r.off : "";
}

static void dset_grow_index(ck_agg_dset_t *set, int vw, bool is_str) {
  uint32_t cap = set->icap ? set->icap * 2 : 8;
  ck_free(set->index);
  set->index = ck_calloc(cap, sizeof *set->index);
  set->icap = cap;
  for (uint32_t i = 0; i < set->count; i++) {
    size_t n = 0;
    const char *p = ck_agg_dset_get(set, vw, is_str, i, &n);
    uint32_t j = (uint32_t)dset_hash(vw, is_str, p, n) & (cap - 1);
    while (set->index[j]) j = (j + 1) & (cap - 1);
    set->index[j] = i + 1;
  }
}

bool ck_agg_dset_add(ck_agg_dset_t *set, int vw, bool is_str, const char *p, size_t n) {
  if ((uint64_t)(set->count + 1) * 4 > (uint64_t)set->icap * 3) dset_grow_index(set, vw, is_str);
  uint32_t mask = set->icap - 1;
  uint32_t j = (uint32_t)dset_hash(vw, is_str, p, n) & mask;
  for (; set->index[j]; j = (j + 1) & mask) {
    size_t m = 0;
    const char *q = ck_agg_dset_get(set, vw, is_str, set->index[j] - 1, &m);
    if (is_str ? (m == n && memcmp(p, q, n) == 0) : memcmp(p, q, (size_t)vw) == 0) return false;
  }
  if (set->count == set->vcap) {
    set->vcap = set->vcap ? set->vcap * 2 : 4;
    set->vals = ck_realloc(set->vals, (size_t)set->vcap * (size_t)vw);
  }
  char *slot = set->vals + (size_t)set->count * (size_t)vw;
  if (is_str) {
    if (set->slen + n > set->scap) {
      size_t cap = set->scap ? set->scap : 64;
      while (cap < set->slen + n) cap *= 2;
      set->sdata = ck_realloc(set->sdata, cap);
      set->scap = cap;
    }
    if (n) memcpy(set->sdata + set->slen, p, n);
    ck_agg_stref(slot, (ck_agg_sref_t){(uint32_t)set->slen, (uint32_t)n});
    set->slen += n;
  } else {
    memcpy(slot, p, (size_t)vw);
  }
  set->index[j] = ++set->count;
  return true;
}

size_t ck_agg_dset_bytes(const ck_agg_dset_t *set, int vw) {
  if (!set) return 0;
  return sizeof *set + (size_t)set->icap * sizeof *set->index + (size_t)set->vcap * (size_t)vw +
         set->scap;
}

/* ---- entries and their index ---- */

void ck_agg_tab_init(ck_agg_tab_t *tab, uint32_t esize) {
  memset(tab, 0, sizeof *tab);
  tab->esize = esize;
  tab->free_head = CK_AGG_NONE;
}

void ck_agg_tab_fini(ck_agg_tab_t *tab) {
  ck_free(tab->slab);
  ck_free(tab->slots);
  ck_agg_tab_init(tab, tab->esize);
}

uint32_t ck_agg_tab_alloc(ck_agg_tab_t *tab) {
  uint32_t idx;
  if (tab->free_head != CK_AGG_NONE) {
    idx = tab->free_head;
    tab->free_head = ck_agg_ld32(ck_agg_tab_entry(tab, idx) + CK_AGG_E_NEXT);
  } else {
    if (tab->nslab == tab->slab_cap) {
      ck_assert(tab->slab_cap < UINT32_MAX / 2);
      tab->slab_cap = tab->slab_cap ? tab->slab_cap * 2 : 256;
      tab->slab = ck_realloc(tab->slab, (size_t)tab->slab_cap * tab->esize);
    }
    idx = tab->nslab++;
  }
  char *e = ck_agg_tab_entry(tab, idx);
  memset(e, 0, tab->esize);
  e[CK_AGG_E_FLAGS] = CK_AGG_F_USED;
  tab->live++;
  return idx;
}

void ck_agg_tab_free(ck_agg_tab_t *tab, uint32_t idx) {
  char *e = ck_agg_tab_entry(tab, idx);
  ck_assert(e[CK_AGG_E_FLAGS] & CK_AGG_F_USED);
  e[CK_AGG_E_FLAGS] = 0;
  ck_agg_st32(e + CK_AGG_E_NEXT, tab->free_head);
  tab->free_head = idx;
  tab->live--;
  if (tab->live == 0 && tab->icount == 0) ck_agg_tab_fini(tab); /* give the memory back */
}

static void index_put(ck_agg_slot_t *slots, size_t cap, ck_agg_slot_t s) {
  size_t j = s.tag & (cap - 1);
  while (slots[j].idx1) j = (j + 1) & (cap - 1);
  slots[j] = s;
}

void ck_agg_index_insert(ck_agg_tab_t *tab, uint32_t idx, uint32_t tag) {
  if ((tab->icount + 1) * 4 > tab->icap * 3) {
    size_t cap = tab->icap ? tab->icap * 2 : 64;
    ck_assert(cap <= ((size_t)1 << 32));
    ck_agg_slot_t *slots = ck_calloc(cap, sizeof *slots);
    for (size_t i = 0; i < tab->icap; i++)
      if (tab->slots[i].idx1) index_put(slots, cap, tab->slots[i]);
    ck_free(tab->slots);
    tab->slots = slots;
    tab->icap = cap;
  }
  index_put(tab->slots, tab->icap, (ck_agg_slot_t){idx + 1, tag});
  tab->icount++;
}

void ck_agg_index_remove(ck_agg_tab_t *tab, uint32_t idx, uint32_t tag) {
  size_t mask = tab->icap - 1, i = tag & mask;
  while (tab->slots[i].idx1 != idx + 1) {
    ck_assert(tab->slots[i].idx1 != 0);
    i = (i + 1) & mask;
  }
  /* backward-shift deletion: no tombstones */
  for (size_t k = i;;) {
    k = (k + 1) & mask;
    if (!tab->slots[k].idx1) break;
    size_t home = tab->slots[k].tag & mask;
    if (((k - home) & mask) >= ((k - i) & mask)) {
      tab->slots[i] = tab->slots[k];
      i = k;
    }
  }
  tab->slots[i] = (ck_agg_slot_t){0, 0};
  tab->icount--;
}

size_t ck_agg_tab_bytes(const ck_agg_tab_t *tab) {
  return (size_t)tab->slab_cap * tab->esize + tab->icap * sizeof(ck_agg_slot_t);
}

/* ---- windows and the firing heap ---- */

void ck_agg_wins_init(ck_agg_wins_t *ws, bool shared) {
  memset(ws, 0, sizeof *ws);
  ws->free_head = CK_AGG_NONE;
  ws->last_wid = CK_AGG_NONE;
  ws->shared = shared;
  ck_hmap_init(&ws->by_range);
}

void ck_agg_wins_fini(ck_agg_wins_t *ws) {
  ck_free(ws->wins);
  ck_free(ws->heap);
  ck_hmap_fini(&ws->by_range);
  memset(ws, 0, sizeof *ws);
}

static bool item_less(const ck_agg_heap_item_t *a, const ck_agg_heap_item_t *b) {
  if (a->end != b->end) return a->end < b->end;
  if (a->start != b->start) return a->start < b->start;
  return a->wid < b->wid;
}

static void heap_push(ck_agg_wins_t *ws, uint32_t wid) {
  const ck_agg_win_t *w = &ws->wins[wid];
  if (ws->nheap == ws->heap_cap) {
    ws->heap_cap = ws->heap_cap ? ws->heap_cap * 2 : 16;
    ws->heap = ck_realloc(ws->heap, ws->heap_cap * sizeof *ws->heap);
  }
  ck_agg_heap_item_t it = {w->end, w->start, wid, w->gen};
  size_t i = ws->nheap++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!item_less(&it, &ws->heap[p])) break;
    ws->heap[i] = ws->heap[p];
    i = p;
  }
  ws->heap[i] = it;
}

static void heap_pop(ck_agg_wins_t *ws) {
  ck_agg_heap_item_t last = ws->heap[--ws->nheap];
  size_t i = 0, n = ws->nheap;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && item_less(&ws->heap[c + 1], &ws->heap[c])) c++;
    if (!item_less(&ws->heap[c], &last)) break;
    ws->heap[i] = ws->heap[c];
    i = c;
  }
  if (n) ws->heap[i] = last;
}

uint32_t ck_agg_wins_new(ck_agg_wins_t *ws, int64_t start, int64_t end) {
  uint32_t wid;
  if (ws->free_head != CK_AGG_NONE) {
    wid = ws->free_head;
    ws->free_head = ws->wins[wid].knext;
  } else {
    if (ws->n == ws->cap) {
      ws->cap = ws->cap ? ws->cap * 2 : 16;
      ws->wins = ck_realloc(ws->wins, (size_t)ws->cap * sizeof *ws->wins);
      memset(ws->wins + ws->n, 0, (size_t)(ws->cap - ws->n) * sizeof *ws->wins);
    }
    wid = ws->n++;
  }
  ck_agg_win_t *w = &ws->wins[wid];
  w->start = start;
  w->end = end;
  w->head = w->knext = w->dir = CK_AGG_NONE;
  w->gen++;
  w->alive = true;
  ws->live++;
  heap_push(ws, wid);
  return wid;
}

uint32_t ck_agg_wins_get(ck_agg_wins_t *ws, int64_t start, int64_t end) {
  if (ws->last_wid != CK_AGG_NONE) {
    const ck_agg_win_t *w = &ws->wins[ws->last_wid];
    if (w->start == start && w->end == end) return ws->last_wid;
  }
  int64_t key[2] = {start, end};
  bool created;
  void **slot = ck_hmap_put(&ws->by_range, key, sizeof key, &created);
  if (created) *slot = (void *)(uintptr_t)(ck_agg_wins_new(ws, start, end) + 1);
  ws->last_wid = (uint32_t)((uintptr_t)*slot - 1);
  return ws->last_wid;
}

void ck_agg_wins_free(ck_agg_wins_t *ws, uint32_t wid) {
  ck_agg_win_t *w = &ws->wins[wid];
  ck_assert(w->alive);
  if (ws->shared) {
    int64_t key[2] = {w->start, w->end};
    bool found = ck_hmap_del(&ws->by_range, key, sizeof key, NULL);
    ck_assert(found);
  }
  if (ws->last_wid == wid) ws->last_wid = CK_AGG_NONE;
  w->alive = false;
  w->knext = ws->free_head;
  ws->free_head = wid;
  ws->live--;
}

bool ck_agg_wins_pop_due(ck_agg_wins_t *ws, int64_t wm, int64_t lateness, uint32_t *wid) {
  while (ws->nheap) {
    ck_agg_heap_item_t top = ws->heap[0];
    if (ck_agg_sat_add(top.end, lateness) > wm) return false;
    heap_pop(ws);
    const ck_agg_win_t *w = &ws->wins[top.wid];
    if (!w->alive || w->gen != top.gen) continue; /* freed (and maybe reused) since */
    if (w->end != top.end || w->start != top.start) {
      heap_push(ws, top.wid); /* the session grew after it was scheduled */
      continue;
    }
    *wid = top.wid;
    return true;
  }
  return false;
}

size_t ck_agg_wins_bytes(const ck_agg_wins_t *ws) {
  return (size_t)ws->cap * sizeof(ck_agg_win_t) + ws->heap_cap * sizeof(ck_agg_heap_item_t) +
         ws->by_range.cap * sizeof(ck_hmap_entry_t) + ws->by_range.count * 16;
}
