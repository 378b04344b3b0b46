/*
 * DESIGN: user-defined functions in C (include/clink/udf.h is their public side).
 *
 * ck_udf_load opens a shared library (dlopen, RTLD_NOW | RTLD_LOCAL), finds the descriptor
 * under the named symbol and checks it against the ABI this clink was built with: version,
 * size, name, kind, arity, argument and result types. A loaded function is kept in one
 * process-wide registry keyed by (name, symbol, path) and never unloaded: expression trees of
 * any number of graphs point at it, planners on any thread load through it (one mutex), and a
 * library's code stays mapped for as long as any subtask might call it.
 *
 * ck_udf_eval runs a scalar function over one batch's argument columns: it lends the function
 * the columns as they are (their Arrow layout is the ABI's), masks rows the caller does not
 * need as NULL, and checks what comes back (VARCHAR as UTF-8, DOUBLE finite), so a function
 * cannot put into the engine a value no built-in could.
 *
 * Threads: load on any thread (locked); eval on many subtask threads at once (no shared state).
 */
#ifndef CK_RUNTIME_UDF_H
#define CK_RUNTIME_UDF_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/error.h"
#include "runtime/batch.h"
#include "runtime/types.h"

#include "clink/udf.h"

typedef struct ck_udf {
  const char *name;   /* as the script wrote it */
  const char *symbol;
  const char *path;
  const clink_udf_t *desc;
  int nargs;
  ck_type_t args[CLINK_UDF_MAX_ARGS];
  ck_type_t result;
  bool aggregate; /* CLINK_UDF_AGGREGATE: desc->acc_size bytes of accumulator per group */
} ck_udf_t;

/* Loads (or finds already loaded) function `name` from symbol in the library at path. On
 * failure err names the function, the library and what is wrong (no position: the caller
 * places it). */
int ck_udf_load(const char *name, const char *symbol, const char *path, const ck_udf_t **out,
                ck_error_t *err);

/* Evaluates udf over n rows: args[i] holds at least n rows of udf->args[i]; rows where live is
 * 0 (live NULL: every row) are given to the function as NULL and come out NULL. out is
 * initialised here (udf->result); CK_EEVAL on the function's failure. */
int ck_udf_eval(const ck_udf_t *udf, const ck_col_t *const *args, size_t n, const uint8_t *live,
                ck_col_t *out, ck_error_t *err);

/* Aggregates (udf->aggregate), for the aggregation operator: acc is desc->acc_size bytes of
 * its state. create zeroes and creates; add folds one non-NULL value of udf->args[0]; get
 * gives the result typed udf->result; serialise appends u32 length + the function's form. */
void ck_udf_agg_create(const ck_udf_t *udf, void *acc);
void ck_udf_agg_destroy(const ck_udf_t *udf, void *acc);
int ck_udf_agg_add(const ck_udf_t *udf, void *acc, const ck_value_t *v, ck_error_t *err);
int ck_udf_agg_merge(const ck_udf_t *udf, void *acc, const void *other, ck_error_t *err);
int ck_udf_agg_get(const ck_udf_t *udf, const void *acc, ck_value_t *out, ck_error_t *err);
int ck_udf_agg_serialise(const ck_udf_t *udf, const void *acc, ck_buf_t *out, ck_error_t *err);
int ck_udf_agg_deserialise(const ck_udf_t *udf, void *acc, const void *p, size_t n,
                           ck_error_t *err);

/* The SQL name of a UDF type code, or NULL when the code is not one. */
const char *ck_udf_type_name(int32_t code);

#endif
