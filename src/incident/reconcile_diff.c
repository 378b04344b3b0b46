/*
 * DESIGN: see reconcile.h — row sets of canonical cells and the multiset comparison.
 *
 * Both sides are sorted by key, then by the whole row, so one merge walks every key once:
 * for each key, its expected rows E and the rows read A. Each expected row takes its exact
 * copies in A (equal rows are adjacent): none is a miss, one a match, more a duplicate (the
 * copies beyond the first). The rows of A equal to no expected row are "others". A key with
 * no row read is missing; an expected row without a copy takes one of the others as its
 * changed version; others left over are unexpected. Nothing is decided by counts or totals:
 * two sets of equal size and sum over different rows differ here.
 */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "incident/reconcile.h"

const char *ck_diff_kind_name(ck_diff_kind_t kind) {
  static const char *const names[] = {"missing", "changed", "duplicated", "unexpected"};
  return kind < CK_DIFF_NKINDS ? names[kind] : "?";
}

void ck_rowset_init(ck_rowset_t *set, int ncols, int nkeys, const int *keys) {
  memset(set, 0, sizeof *set);
  set->ncols = ncols;
  set->nkeys = nkeys;
  set->keys = keys;
  ck_arena_init(&set->arena, 1 << 16);
}

void ck_rowset_fini(ck_rowset_t *set) {
  ck_free(set->rows);
  ck_arena_fini(&set->arena);
  memset(set, 0, sizeof *set);
}

ck_rrow_t *ck_rowset_add(ck_rowset_t *set) {
  if (set->n == set->cap) {
    set->cap = set->cap ? set->cap * 2 : 256;
    set->rows = ck_realloc(set->rows, set->cap * sizeof *set->rows);
  }
  ck_rrow_t *r = &set->rows[set->n++];
  r->cells = ck_arena_zalloc(&set->arena, (size_t)(set->ncols ? set->ncols : 1) * sizeof(ck_cell_t));
  r->origin = -1;
  return r;
}

int ck_rrow_key_cmp(const ck_rowset_t *set, const ck_rrow_t *a, const ck_rrow_t *b) {
  for (int k = 0; k < set->nkeys; k++) {
    int c = ck_cell_cmp(&a->cells[set->keys[k]], &b->cells[set->keys[k]]);
    if (c) return c;
  }
  return 0;
}

int ck_rrow_cmp(const ck_rowset_t *set, const ck_rrow_t *a, const ck_rrow_t *b) {
  int c = ck_rrow_key_cmp(set, a, b);
  for (int i = 0; !c && i < set->ncols; i++) c = ck_cell_cmp(&a->cells[i], &b->cells[i]);
  return c;
}

bool ck_rrow_eq(const ck_rowset_t *set, const ck_rrow_t *a, const ck_rrow_t *b) {
  for (int i = 0; i < set->ncols; i++)
    if (!ck_cell_eq(&a->cells[i], &b->cells[i])) return false;
  return true;
}

/* qsort has no context argument: the set being sorted, one sort at a time (one thread). */
static const ck_rowset_t *sorting;
static int sort_cmp(const void *a, const void *b) { return ck_rrow_cmp(sorting, a, b); }

void ck_rowset_sort(ck_rowset_t *set) {
  sorting = set;
  if (set->n > 1) qsort(set->rows, set->n, sizeof *set->rows, sort_cmp);
  sorting = NULL;
}

static void emit(ck_diff_fn fn, void *arg, ck_diff_counts_t *counts, ck_diff_kind_t kind,
                 const ck_rrow_t *e, const ck_rrow_t *a, int64_t copies) {
  counts->n[kind] += kind == CK_DIFF_DUPLICATED ? copies - 1 : 1;
  if (!fn) return;
  ck_diff_item_t item = {kind, e, a, copies};
  fn(arg, &item);
}

void ck_diff_rows(const ck_rowset_t *exp, const ck_rowset_t *act, ck_diff_fn fn, void *arg,
                  ck_diff_counts_t *counts) {
  memset(counts, 0, sizeof *counts);
  size_t i = 0, j = 0;
  bool *used = ck_calloc(act->n ? act->n : 1, 1); /* rows of A taken as copies or changes */
  while (i < exp->n || j < act->n) {
    int c = i >= exp->n ? 1 : j >= act->n ? -1 : ck_rrow_key_cmp(exp, &exp->rows[i], &act->rows[j]);
    if (c > 0) { /* a key nobody expected: every row of it is unexpected */
      emit(fn, arg, counts, CK_DIFF_UNEXPECTED, NULL, &act->rows[j], 1);
      j++;
      continue;
    }
    /* the key's runs: E = exp[i, ie), A = act[j, je) (empty when c < 0) */
    size_t ie = i + 1, je = j;
    while (ie < exp->n && ck_rrow_key_cmp(exp, &exp->rows[i], &exp->rows[ie]) == 0) ie++;
    if (c == 0)
      while (je < act->n && ck_rrow_key_cmp(exp, &exp->rows[i], &act->rows[je]) == 0) je++;
    counts->keys++;
    if (je == j) {
      for (size_t e = i; e < ie; e++) emit(fn, arg, counts, CK_DIFF_MISSING, &exp->rows[e], NULL, 0);
      i = ie;
      continue;
    }
    /* exact copies first */
    size_t *unmatched = ck_malloc((ie - i) * sizeof *unmatched);
    size_t nun = 0;
    for (size_t e = i; e < ie; e++) {
      int64_t copies = 0;
      const ck_rrow_t *first = NULL;
      for (size_t a = j; a < je; a++)
        if (!used[a] && ck_rrow_eq(exp, &exp->rows[e], &act->rows[a])) {
          used[a] = true;
          if (!first) first = &act->rows[a];
          copies++;
          if (e + 1 < ie && ck_rrow_eq(exp, &exp->rows[e], &exp->rows[e + 1])) break; /* one each */
        }
      if (!copies) unmatched[nun++] = e;
      else counts->matched++;
      if (copies > 1) emit(fn, arg, counts, CK_DIFF_DUPLICATED, &exp->rows[e], first, copies);
    }
    /* the others: changed versions of the unmatched, then unexpected */
    size_t u = 0;
    for (size_t a = j; a < je; a++) {
      if (used[a]) continue;
      if (u < nun) emit(fn, arg, counts, CK_DIFF_CHANGED, &exp->rows[unmatched[u++]], &act->rows[a], 0);
      else emit(fn, arg, counts, CK_DIFF_UNEXPECTED, NULL, &act->rows[a], 1);
    }
    for (; u < nun; u++) emit(fn, arg, counts, CK_DIFF_MISSING, &exp->rows[unmatched[u]], NULL, 0);
    ck_free(unmatched);
    i = ie;
    j = je;
  }
  ck_free(used);
}

int64_t ck_diff_reads(const ck_rowset_t *a, const ck_rowset_t *b, const ck_rrow_t **where) {
  size_t n = a->n < b->n ? a->n : b->n;
  for (size_t i = 0; i < n; i++)
    if (ck_rrow_cmp(a, &a->rows[i], &b->rows[i]) != 0) {
      /* the smaller of the two keys is where they first differ */
      const ck_rrow_t *x = ck_rrow_key_cmp(a, &a->rows[i], &b->rows[i]) <= 0 ? &a->rows[i] : &b->rows[i];
      *where = x;
      return (int64_t)i;
    }
  if (a->n == b->n) return -1;
  *where = a->n > n ? &a->rows[n] : &b->rows[n];
  return (int64_t)n;
}
