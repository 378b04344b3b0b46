/*
 * DESIGN: the sample UDF library of the tests (tests/sql/test_udf.py): scalar functions written
 * against include/clink/udf.h only, as a user would, plus deliberately wrong descriptors whose
 * refusal the golden error tests check. Built by CMake as libclink_udf_sample.so.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clink/udf.h"

#define VALID(c, i) (!(c)->validity || ((c)->validity[(i) >> 3] >> ((i) & 7)) & 1)
#define SET_NULL(r, i) ((r)->validity[(i) >> 3] &= (uint8_t) ~(1u << ((i) & 7)))

/* plus_one(BIGINT) -> BIGINT: x + 1 (NULL in, NULL out, by the engine). */
static int plus_one(const clink_udf_column_t *args, int nargs, clink_udf_result_t *res) {
  (void)nargs;
  const int64_t *x = args[0].values;
  int64_t *out = res->values;
  for (uint32_t i = 0; i < res->len; i++) out[i] = (int64_t)((uint64_t)x[i] + 1);
  return 0;
}

/* shout(VARCHAR) -> VARCHAR: ASCII letters in upper case, then '!'. */
static int shout(const clink_udf_column_t *args, int nargs, clink_udf_result_t *res) {
  (void)nargs;
  const int32_t *off = args[0].values;
  char buf[4096];
  for (uint32_t i = 0; i < res->len; i++) {
    if (!VALID(&args[0], i)) {
      SET_NULL(res, i);
      continue;
    }
    size_t n = (size_t)(off[i + 1] - off[i]);
    if (n + 1 > sizeof buf) {
      snprintf(res->error, res->error_cap, "a value of %zu bytes is too long", n);
      return 1;
    }
    for (size_t k = 0; k < n; k++) buf[k] = (char)toupper((unsigned char)args[0].data[off[i] + k]);
    buf[n] = '!';
    if (res->put_string(res, i, buf, n + 1)) return 1;
  }
  return 0;
}

/* safe_div(DOUBLE, DOUBLE) -> DOUBLE: a / b, NULL when b is 0 or either is NULL. */
static int safe_div(const clink_udf_column_t *args, int nargs, clink_udf_result_t *res) {
  (void)nargs;
  const double *a = args[0].values, *b = args[1].values;
  double *out = res->values;
  for (uint32_t i = 0; i < res->len; i++) {
    if (!VALID(&args[0], i) || !VALID(&args[1], i) || b[i] == 0) SET_NULL(res, i);
    else out[i] = a[i] / b[i];
  }
  return 0;
}

/* no_negatives(BIGINT) -> BIGINT: x, and fails on a negative x. */
static int no_negatives(const clink_udf_column_t *args, int nargs, clink_udf_result_t *res) {
  (void)nargs;
  const int64_t *x = args[0].values;
  int64_t *out = res->values;
  for (uint32_t i = 0; i < res->len; i++) {
    if (!VALID(&args[0], i)) continue;
    if (x[i] < 0) {
      snprintf(res->error, res->error_cap, "negative value %lld", (long long)x[i]);
      return 1;
    }
    out[i] = x[i];
  }
  return 0;
}

/* next_second(TIMESTAMP(3)) -> TIMESTAMP(3): ts + 1 s (NULL in, NULL out). */
static int next_second(const clink_udf_column_t *args, int nargs, clink_udf_result_t *res) {
  (void)nargs;
  const int64_t *ts = args[0].values;
  int64_t *out = res->values;
  for (uint32_t i = 0; i < res->len; i++) out[i] = ts[i] + 1000;
  return 0;
}

/* is_even(INT) -> BOOLEAN: NULL for NULL. */
static int is_even(const clink_udf_column_t *args, int nargs, clink_udf_result_t *res) {
  (void)nargs;
  const int32_t *x = args[0].values;
  uint8_t *out = res->values;
  for (uint32_t i = 0; i < res->len; i++) {
    if (!VALID(&args[0], i)) SET_NULL(res, i);
    else out[i] = (uint8_t)(x[i] % 2 == 0);
  }
  return 0;
}

__attribute__((visibility("default"))) const clink_udf_t next_second_udf = {
    CLINK_UDF_ABI_VERSION, sizeof(clink_udf_t), "next_second", CLINK_UDF_SCALAR,
    CLINK_UDF_NULL_IN_NULL_OUT, 1, {CLINK_UDF_TIMESTAMP}, CLINK_UDF_TIMESTAMP, next_second};
__attribute__((visibility("default"))) const clink_udf_t is_even_udf = {
    CLINK_UDF_ABI_VERSION, sizeof(clink_udf_t), "is_even", CLINK_UDF_SCALAR, 0, 1,
    {CLINK_UDF_INT}, CLINK_UDF_BOOLEAN, is_even};
__attribute__((visibility("default"))) const clink_udf_t plus_one_udf = {
    CLINK_UDF_ABI_VERSION, sizeof(clink_udf_t), "plus_one", CLINK_UDF_SCALAR,
    CLINK_UDF_NULL_IN_NULL_OUT, 1, {CLINK_UDF_BIGINT}, CLINK_UDF_BIGINT, plus_one};
__attribute__((visibility("default"))) const clink_udf_t shout_udf = {
    CLINK_UDF_ABI_VERSION, sizeof(clink_udf_t), "shout", CLINK_UDF_SCALAR, 0, 1,
    {CLINK_UDF_VARCHAR}, CLINK_UDF_VARCHAR, shout};
__attribute__((visibility("default"))) const clink_udf_t safe_div_udf = {
    CLINK_UDF_ABI_VERSION, sizeof(clink_udf_t), "safe_div", CLINK_UDF_SCALAR, 0, 2,
    {CLINK_UDF_DOUBLE, CLINK_UDF_DOUBLE}, CLINK_UDF_DOUBLE, safe_div};
__attribute__((visibility("default"))) const clink_udf_t no_negatives_udf = {
    CLINK_UDF_ABI_VERSION, sizeof(clink_udf_t), "no_negatives", CLINK_UDF_SCALAR,
    CLINK_UDF_NULL_IN_NULL_OUT, 1, {CLINK_UDF_BIGINT}, CLINK_UDF_BIGINT, no_negatives};

/* Wrong on purpose: the golden errors in tests/sql/udf check their refusals. */
__attribute__((visibility("default"))) const clink_udf_t future_abi_udf = {
    CLINK_UDF_ABI_VERSION + 1, sizeof(clink_udf_t), "future", CLINK_UDF_SCALAR, 0, 1,
    {CLINK_UDF_BIGINT}, CLINK_UDF_BIGINT, plus_one};
__attribute__((visibility("default"))) const clink_udf_t bad_type_udf = {
    CLINK_UDF_ABI_VERSION, sizeof(clink_udf_t), "bad_type", CLINK_UDF_SCALAR, 0, 1, {42},
    CLINK_UDF_BIGINT, plus_one};
__attribute__((visibility("default"))) const clink_udf_t incomplete_udf = {
    CLINK_UDF_ABI_VERSION, sizeof(clink_udf_t), "incomplete", CLINK_UDF_AGGREGATE, 0, 1,
    {CLINK_UDF_BIGINT}, CLINK_UDF_BIGINT, NULL, 8};

/* ---- aggregates ---- */

/* my_sum(BIGINT) -> BIGINT: the sum (wrapping), with the count kept beside it. */
typedef struct sum_acc {
  int64_t sum, n;
} sum_acc_t;
static void sum_create(void *acc) { (void)acc; }
static int sum_add(void *acc, const clink_udf_column_t *arg, uint32_t row) {
  sum_acc_t *a = acc;
  a->sum = (int64_t)((uint64_t)a->sum + (uint64_t)((const int64_t *)arg->values)[row]);
  a->n++;
  return 0;
}
static int sum_merge(void *acc, const void *other) {
  if (getenv("CK_UDF_SAMPLE_MERGE_FAILS")) return 1; /* tests/sql/test_udf.py: merge is called */
  sum_acc_t *a = acc;
  const sum_acc_t *b = other;
  a->sum = (int64_t)((uint64_t)a->sum + (uint64_t)b->sum);
  a->n += b->n;
  return 0;
}
static int sum_get(const void *acc, clink_udf_result_t *res, uint32_t row) {
  ((int64_t *)res->values)[row] = ((const sum_acc_t *)acc)->sum;
  return 0;
}
static int64_t sum_serialise(const void *acc, void *out, size_t cap) {
  if (cap < 16) return -16;
  memcpy(out, acc, 16);
  return 16;
}
static int sum_deserialise(void *acc, const void *in, size_t n) {
  if (n != 16) return 1;
  memcpy(acc, in, 16);
  return 0;
}

/* uniq_count(BIGINT) -> BIGINT: how many distinct values, in a heap array the accumulator
 * owns (so destroy, serialise and deserialise all matter). */
typedef struct uniq_acc {
  int64_t *vals;
  uint32_t n, cap;
} uniq_acc_t;
static void uniq_create(void *acc) { (void)acc; }
static int uniq_put(uniq_acc_t *a, int64_t v) {
  for (uint32_t i = 0; i < a->n; i++)
    if (a->vals[i] == v) return 0;
  if (a->n == a->cap) {
    uint32_t cap = a->cap ? a->cap * 2 : 8;
    int64_t *vals = realloc(a->vals, cap * sizeof *vals);
    if (!vals) return 1;
    a->vals = vals;
    a->cap = cap;
  }
  a->vals[a->n++] = v;
  return 0;
}
static int uniq_add(void *acc, const clink_udf_column_t *arg, uint32_t row) {
  return uniq_put(acc, ((const int64_t *)arg->values)[row]);
}
static int uniq_merge(void *acc, const void *other) {
  const uniq_acc_t *b = other;
  for (uint32_t i = 0; i < b->n; i++)
    if (uniq_put(acc, b->vals[i])) return 1;
  return 0;
}
static int uniq_get(const void *acc, clink_udf_result_t *res, uint32_t row) {
  ((int64_t *)res->values)[row] = ((const uniq_acc_t *)acc)->n;
  return 0;
}
static int64_t uniq_serialise(const void *acc, void *out, size_t cap) {
  const uniq_acc_t *a = acc;
  size_t need = 4 + (size_t)a->n * 8;
  if (cap < need) return -(int64_t)need;
  memcpy(out, &a->n, 4);
  if (a->n) memcpy((char *)out + 4, a->vals, (size_t)a->n * 8);
  return (int64_t)need;
}
static int uniq_deserialise(void *acc, const void *in, size_t n) {
  uint32_t count;
  if (n < 4) return 1;
  memcpy(&count, in, 4);
  if (n != 4 + (size_t)count * 8) return 1;
  for (uint32_t i = 0; i < count; i++) {
    int64_t v;
    memcpy(&v, (const char *)in + 4 + (size_t)i * 8, 8);
    if (uniq_put(acc, v)) return 1;
  }
  return 0;
}
static void uniq_destroy(void *acc) {
  uniq_acc_t *a = acc;
  free(a->vals);
  a->vals = NULL;
  a->n = a->cap = 0;
}

/* longest(VARCHAR) -> INT: the greatest length in bytes. */
static int longest_add(void *acc, const clink_udf_column_t *arg, uint32_t row) {
  const int32_t *off = arg->values;
  int32_t len = off[row + 1] - off[row], *best = acc;
  if (len > *best) *best = len;
  return 0;
}
static int longest_merge(void *acc, const void *other) {
  int32_t *best = acc;
  if (*(const int32_t *)other > *best) *best = *(const int32_t *)other;
  return 0;
}
static int longest_get(const void *acc, clink_udf_result_t *res, uint32_t row) {
  ((int32_t *)res->values)[row] = *(const int32_t *)acc;
  return 0;
}
static int64_t longest_serialise(const void *acc, void *out, size_t cap) {
  if (cap < 4) return -4;
  memcpy(out, acc, 4);
  return 4;
}
static int longest_deserialise(void *acc, const void *in, size_t n) {
  if (n != 4) return 1;
  memcpy(acc, in, 4);
  return 0;
}

/* heap_sum(BIGINT) -> BIGINT: a sum kept only in heap memory the accumulator points at, so
 * adding a value changes no byte of the accumulator itself. */
typedef struct heap_acc {
  int64_t *sum;
} heap_acc_t;
static void heap_create(void *acc) { ((heap_acc_t *)acc)->sum = calloc(1, sizeof(int64_t)); }
static int heap_add(void *acc, const clink_udf_column_t *arg, uint32_t row) {
  int64_t *s = ((heap_acc_t *)acc)->sum;
  if (!s) return 1;
  *s = (int64_t)((uint64_t)*s + (uint64_t)((const int64_t *)arg->values)[row]);
  return 0;
}
static int heap_merge(void *acc, const void *other) {
  int64_t *s = ((heap_acc_t *)acc)->sum, *o = ((const heap_acc_t *)other)->sum;
  if (!s || !o) return 1;
  *s = (int64_t)((uint64_t)*s + (uint64_t)*o);
  return 0;
}
static int heap_get(const void *acc, clink_udf_result_t *res, uint32_t row) {
  ((int64_t *)res->values)[row] = *((const heap_acc_t *)acc)->sum;
  return 0;
}
static int64_t heap_serialise(const void *acc, void *out, size_t cap) {
  if (cap < 8) return -8;
  memcpy(out, ((const heap_acc_t *)acc)->sum, 8);
  return 8;
}
static int heap_deserialise(void *acc, const void *in, size_t n) {
  if (n != 8 || !((heap_acc_t *)acc)->sum) return 1;
  memcpy(((heap_acc_t *)acc)->sum, in, 8);
  return 0;
}
static void heap_destroy(void *acc) {
  free(((heap_acc_t *)acc)->sum);
  ((heap_acc_t *)acc)->sum = NULL;
}

__attribute__((visibility("default"))) const clink_udf_t heap_sum_udf = {
    CLINK_UDF_ABI_VERSION, sizeof(clink_udf_t), "heap_sum", CLINK_UDF_AGGREGATE, 0, 1,
    {CLINK_UDF_BIGINT}, CLINK_UDF_BIGINT, NULL, sizeof(heap_acc_t), heap_create, heap_add,
    heap_merge, heap_get, heap_serialise, heap_deserialise, heap_destroy};
__attribute__((visibility("default"))) const clink_udf_t my_sum_udf = {
    CLINK_UDF_ABI_VERSION, sizeof(clink_udf_t), "my_sum", CLINK_UDF_AGGREGATE, 0, 1,
    {CLINK_UDF_BIGINT}, CLINK_UDF_BIGINT, NULL, sizeof(sum_acc_t), sum_create, sum_add,
    sum_merge, sum_get, sum_serialise, sum_deserialise, NULL};
__attribute__((visibility("default"))) const clink_udf_t uniq_count_udf = {
    CLINK_UDF_ABI_VERSION, sizeof(clink_udf_t), "uniq_count", CLINK_UDF_AGGREGATE, 0, 1,
    {CLINK_UDF_BIGINT}, CLINK_UDF_BIGINT, NULL, sizeof(uniq_acc_t), uniq_create, uniq_add,
    uniq_merge, uniq_get, uniq_serialise, uniq_deserialise, uniq_destroy};
__attribute__((visibility("default"))) const clink_udf_t longest_udf = {
    CLINK_UDF_ABI_VERSION, sizeof(clink_udf_t), "longest", CLINK_UDF_AGGREGATE, 0, 1,
    {CLINK_UDF_VARCHAR}, CLINK_UDF_INT, NULL, sizeof(int32_t), uniq_create, longest_add,
    longest_merge, longest_get, longest_serialise, longest_deserialise, NULL};
