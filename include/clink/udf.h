/*
 * clink user-defined functions in C: the one header a UDF library includes.
 *
 * A library is a shared object that exports one descriptor (a `const clink_udf_t`) per
 * function under the symbol the script names:
 *
 *   CREATE FUNCTION plus_one AS 'plus_one_udf' USING 'lib/libmyudfs.so' LANGUAGE C;
 *
 * clink dlopens the library when the script is planned (and on every cluster worker that runs
 * the job), reads the descriptor and checks it against this header: the ABI version, the name
 * (the SQL name, compared without regard to ASCII case), the kind and the argument and result
 * types; a call's arguments are then checked against the types. Any mismatch refuses the
 * script, naming the function, the library and what differs.
 *
 * A scalar function is vectorised: it is called once per batch of up to 1,024 rows with one
 * input column per argument and fills one output column. An aggregate function folds values
 * into an accumulator per group through the callbacks at the end of clink_udf_t; the engine
 * checkpoints accumulators through its serialise / deserialise. Columns are laid out as Arrow's:
 * a validity bitmap (bit i, least significant first, set = row i is not NULL; a NULL pointer =
 * every row valid), a value array, and for VARCHAR int32 offsets[len + 1] into UTF-8 bytes.
 *
 * Stability: a library built against CLINK_UDF_ABI_VERSION N loads in every clink whose
 * header has the same N; the layouts below only grow at their ends, behind `struct_size`.
 * Threads: a function may be called by several subtask threads at once; it must not keep
 * mutable global state without its own locking. The engine never unloads a library.
 *
 * The library needs nothing from clink at link time: the header declares no function, only
 * types; everything the engine offers a function comes through the pointers it passes.
 */
#ifndef CLINK_UDF_H
#define CLINK_UDF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CLINK_UDF_ABI_VERSION 1

/* The SQL types a function can take and return, and how a column of each is held. */
typedef enum clink_udf_type {
  CLINK_UDF_BOOLEAN = 1,   /* uint8_t 0 / 1 */
  CLINK_UDF_INT = 2,       /* int32_t */
  CLINK_UDF_BIGINT = 3,    /* int64_t */
  CLINK_UDF_DOUBLE = 4,    /* double, finite */
  CLINK_UDF_VARCHAR = 5,   /* int32_t offsets[len + 1] into data (UTF-8) */
  CLINK_UDF_TIMESTAMP = 6, /* int64_t epoch milliseconds, UTC (TIMESTAMP(3)) */
} clink_udf_type_t;

typedef enum clink_udf_kind {
  CLINK_UDF_SCALAR = 1,
  CLINK_UDF_AGGREGATE = 2, /* an aggregate: the accumulator callbacks below */
} clink_udf_kind_t;

/* Flags of a descriptor. */
#define CLINK_UDF_NULL_IN_NULL_OUT 1u /* a row with a NULL argument is NULL without asking the
                                       * function (it is still in the batch; its output is
                                       * ignored) */

/* One input column (read only). */
typedef struct clink_udf_column {
  int32_t type;            /* clink_udf_type_t */
  uint32_t len;            /* rows */
  const uint8_t *validity; /* NULL: every row valid */
  const void *values;
  const char *data;        /* VARCHAR bytes */
} clink_udf_column_t;

/* The output column. On entry every row is valid and fixed-width values are zero; the
 * function writes values[i] and clears validity bit i for a NULL. A VARCHAR result is built
 * with put_string, rows in increasing order (a row never put is the empty string). */
typedef struct clink_udf_result {
  int32_t type;
  uint32_t len;
  uint8_t *validity;       /* (len + 7) / 8 bytes */
  void *values;            /* fixed-width types: len values; VARCHAR: NULL */
  /* VARCHAR only: row `row` is the n bytes at s (UTF-8). Returns 0, or -1 when the row is
   * not after the last one put or the text is not UTF-8 (the call should then fail). */
  int (*put_string)(struct clink_udf_result *result, uint32_t row, const char *s, size_t n);
  char *error;             /* a function that fails writes its reason here (NUL-terminated) */
  size_t error_cap;
  void *engine;            /* the engine's; do not touch */
} clink_udf_result_t;

/* Called per batch; returns 0, or non-zero after writing result->error: the job stops with
 * that message, naming the function. */
typedef int (*clink_udf_scalar_fn)(const clink_udf_column_t *args, int nargs,
                                   clink_udf_result_t *result);

#define CLINK_UDF_MAX_ARGS 16
/* The largest accumulator an aggregate may declare (bytes held per group in the state). */
#define CLINK_UDF_MAX_ACC 256

/* The descriptor a library exports under the symbol of `AS 'symbol'`. */
typedef struct clink_udf {
  uint32_t abi_version; /* CLINK_UDF_ABI_VERSION */
  uint32_t struct_size; /* sizeof(clink_udf_t) */
  const char *name;     /* the function's SQL name */
  int32_t kind;         /* clink_udf_kind_t */
  uint32_t flags;       /* CLINK_UDF_NULL_IN_NULL_OUT, … */
  int32_t nargs;        /* 0 to CLINK_UDF_MAX_ARGS */
  int32_t arg_types[CLINK_UDF_MAX_ARGS];
  int32_t result_type;
  clink_udf_scalar_fn scalar; /* CLINK_UDF_SCALAR */
  /* CLINK_UDF_AGGREGATE: one argument, a non-VARCHAR result; the accumulator is acc_size
   * bytes inside the engine's state, which it moves with memcpy (so it must not point into
   * itself; it may own heap memory, freed by destroy). NULL argument values are skipped, as
   * for the built-in aggregates; a group with no non-NULL value gives NULL without asking
   * get. Every callback returns 0, or non-zero to stop the job (create and destroy cannot
   * fail). State in checkpoints is the serialise form, so it should not depend on the build. */
  uint32_t acc_size; /* 1 to CLINK_UDF_MAX_ACC */
  void (*create)(void *acc); /* acc is zeroed before */
  /* folds row `row` of the argument column (never NULL there) into acc */
  int (*add)(void *acc, const clink_udf_column_t *arg, uint32_t row);
  /* folds other into acc: windows that merge (sessions) and state restored at another
   * parallelism may need it */
  int (*merge)(void *acc, const void *other);
  /* writes the result into row `row` of result (one row long) */
  int (*get)(const void *acc, clink_udf_result_t *result, uint32_t row);
  /* the checkpoint form: writes at most cap bytes to out and returns how many (cap is at
   * least acc_size; a form longer than cap is -(the length needed)) */
  int64_t (*serialise)(const void *acc, void *out, size_t cap);
  /* reads n bytes of what serialise wrote into a created acc */
  int (*deserialise)(void *acc, const void *in, size_t n);
  void (*destroy)(void *acc); /* may be NULL */
} clink_udf_t;

#ifdef __cplusplus
}
#endif

#endif
