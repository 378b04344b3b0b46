/*
 * DESIGN: the sample UDF library of the tests (tests/sql/test_udf.py): scalar functions written
 * against include/clink/udf.h only, as a user would, plus deliberately wrong descriptors whose
 * refusal the golden error tests check. Built by CMake as libclink_udf_sample.so.
 */
#include <ctype.h>
#include <stdio.h>
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
__attribute__((visibility("default"))) const clink_udf_t my_sum_udf = {
    CLINK_UDF_ABI_VERSION, sizeof(clink_udf_t), "my_sum", CLINK_UDF_AGGREGATE, 0, 1,
    {CLINK_UDF_BIGINT}, CLINK_UDF_BIGINT, NULL};
