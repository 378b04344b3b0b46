/*
 * DESIGN: unit tests for the multiset comparison of src/incident/reconcile_diff.c: rows whole,
 * key by key, into the four kinds of difference (missing, changed, duplicated, unexpected),
 * with sets built by hand. Equal counts and totals over different rows fail; the order rows
 * arrive in decides nothing; two reads of the same keys compared as multisets.
 * Threads: the main thread.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "incident/reconcile.h"

static const int KEYS[] = {0};

/* rows "key:value" pairs as (INT key, INT value) */
static void fill(ck_rowset_t *s, const int64_t (*rows)[2], int n) {
  ck_rowset_init(s, 2, 1, KEYS);
  for (int i = 0; i < n; i++) {
    ck_rrow_t *r = ck_rowset_add(s);
    r->cells[0].kind = CK_CELL_INT;
    r->cells[0].v.i = rows[i][0];
    r->cells[1].kind = CK_CELL_INT;
    r->cells[1].v.i = rows[i][1];
    r->origin = i;
  }
  ck_rowset_sort(s);
}

typedef struct seen {
  int n;
  ck_diff_kind_t kind[16];
  int64_t key[16], copies[16];
} seen_t;

static int on_item(void *arg, const ck_diff_item_t *it) {
  seen_t *s = arg;
  if (s->n < 16) {
    const ck_rrow_t *r = it->expected ? it->expected : it->actual;
    s->kind[s->n] = it->kind;
    s->key[s->n] = (int64_t)r->cells[0].v.i;
    s->copies[s->n] = it->copies;
    s->n++;
  }
  return 0;
}

static void test_faithful_in_any_order(void **state) {
  (void)state;
  static const int64_t e[][2] = {{1, 10}, {2, 20}, {3, 30}};
  static const int64_t a[][2] = {{3, 30}, {1, 10}, {2, 20}};
  ck_rowset_t E, A;
  fill(&E, e, 3);
  fill(&A, a, 3);
  seen_t s = {0};
  ck_diff_counts_t c;
  ck_diff_rows(&E, &A, on_item, &s, &c);
  assert_int_equal(s.n, 0);
  assert_int_equal(c.matched, 3);
  assert_int_equal(c.keys, 3);
  ck_rowset_fini(&E);
  ck_rowset_fini(&A);
}

static void test_four_kinds(void **state) {
  (void)state;
  /* 1 matched; 2 missing; 3 changed; 4 duplicated (3 copies); 5 changed and one more
   * unexpected; 9 read but never expected: unexpected */
  static const int64_t e[][2] = {{1, 10}, {2, 20}, {3, 30}, {4, 40}, {5, 50}};
  static const int64_t a[][2] = {{1, 10}, {3, 31}, {4, 40}, {4, 40}, {4, 40},
                                 {5, 51}, {5, 52}, {9, 90}};
  ck_rowset_t E, A;
  fill(&E, e, 5);
  fill(&A, a, 8);
  seen_t s = {0};
  ck_diff_counts_t c;
  ck_diff_rows(&E, &A, on_item, &s, &c);
  assert_int_equal(c.n[CK_DIFF_MISSING], 1);
  assert_int_equal(c.n[CK_DIFF_CHANGED], 2);
  assert_int_equal(c.n[CK_DIFF_DUPLICATED], 2); /* the copies beyond the first */
  assert_int_equal(c.n[CK_DIFF_UNEXPECTED], 2);
  assert_int_equal(c.matched, 2); /* 1 and 4 */
  assert_int_equal(s.n, 6);
  assert_int_equal(s.kind[0], CK_DIFF_MISSING);
  assert_int_equal(s.key[0], 2);
  assert_int_equal(s.kind[1], CK_DIFF_CHANGED);
  assert_int_equal(s.key[1], 3);
  assert_int_equal(s.kind[2], CK_DIFF_DUPLICATED);
  assert_int_equal(s.key[2], 4);
  assert_int_equal(s.copies[2], 3);
  assert_int_equal(s.kind[3], CK_DIFF_CHANGED);
  assert_int_equal(s.key[3], 5);
  assert_int_equal(s.kind[4], CK_DIFF_UNEXPECTED);
  assert_int_equal(s.key[4], 5);
  assert_int_equal(s.kind[5], CK_DIFF_UNEXPECTED);
  assert_int_equal(s.key[5], 9);
  ck_rowset_fini(&E);
  ck_rowset_fini(&A);
}

static void test_equal_counts_and_totals_over_different_rows_fail(void **state) {
  (void)state;
  /* same count (2), same sum of values (30) and of keys (3): different rows */
  static const int64_t e[][2] = {{1, 10}, {2, 20}};
  static const int64_t a[][2] = {{1, 20}, {2, 10}};
  ck_rowset_t E, A;
  fill(&E, e, 2);
  fill(&A, a, 2);
  ck_diff_counts_t c;
  ck_diff_rows(&E, &A, NULL, NULL, &c);
  assert_int_equal(c.n[CK_DIFF_CHANGED], 2);
  assert_int_equal(c.matched, 0);
  ck_rowset_fini(&E);
  ck_rowset_fini(&A);
}

static void test_two_reads(void **state) {
  (void)state;
  static const int64_t a[][2] = {{1, 10}, {2, 20}};
  static const int64_t b[][2] = {{2, 20}, {1, 10}};
  static const int64_t c[][2] = {{1, 10}, {2, 21}};
  static const int64_t d[][2] = {{1, 10}, {2, 20}, {2, 20}};
  ck_rowset_t A, B, C, D;
  fill(&A, a, 2);
  fill(&B, b, 2);
  fill(&C, c, 2);
  fill(&D, d, 3);
  const ck_rrow_t *w = NULL;
  assert_int_equal(ck_diff_reads(&A, &B, &w), -1);
  assert_true(ck_diff_reads(&A, &C, &w) >= 0);
  assert_true(w->cells[0].v.i == 2);
  assert_true(ck_diff_reads(&A, &D, &w) >= 0); /* one more copy is a difference */
  assert_true(w->cells[0].v.i == 2);
  ck_rowset_fini(&A);
  ck_rowset_fini(&B);
  ck_rowset_fini(&C);
  ck_rowset_fini(&D);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_faithful_in_any_order),
      cmocka_unit_test(test_four_kinds),
      cmocka_unit_test(test_equal_counts_and_totals_over_different_rows_fail),
      cmocka_unit_test(test_two_reads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
