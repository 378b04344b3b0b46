/*
 * DESIGN: bound scalar expressions, their typing rules and column-at-a-time evaluation.
 *
 * The SQL binder resolves names and builds trees with the constructors below; the
 * constructors own the typing rules: they check argument types, insert implicit CASTs so every
 * operator sees operands of one agreed type, fix the result type, and report a type error that
 * names both types. The evaluator then never coerces: it computes one output column per node
 * over a whole batch, children first.
 *
 * Semantics (Flink-compatible unless noted):
 *   - three-valued logic: NULL AND FALSE = FALSE, NULL OR TRUE = TRUE, otherwise NULL in → NULL.
 *   - integer / integer is integer division truncating toward zero; x / 0 and MOD(x, 0) are NULL
 *     (DuckDB's choice, not Flink's exception: a stream should not die on one row).
 *   - integer overflow and an unparseable CAST are evaluation errors (CK_EEVAL) naming the value.
 *   - no value is ever ±Infinity or NaN: a floating-point result that would be one (overflow,
 *     SQRT of a negative number, POWER without a real result) is CK_EEVAL too, and CAST refuses
 *     text that reads as one (docs/sql.md has the table).
 *   - numeric widening: INT32 < INT64 < DECIMAL < FLOAT64 (FLOAT32 widens to FLOAT64 when mixed).
 *     DECIMAL arithmetic: + and − scale max(s1,s2), precision max(p1−s1,p2−s2)+scale+1;
 *     × scale s1+s2, precision p1+p2; ÷ scale max(6, s1+p2+1), precision p1−s1+s2+scale;
 *     precision capped at 38 (scale reduced to fit). INT32 is DECIMAL(10,0), INT64 DECIMAL(19,0).
 *   - TIMESTAMP compares with TIMESTAMP and with integers (as epoch ms).
 *   - No wall-clock functions exist: output is a function of the input.
 *
 * Walks: a tree may be a long chain along first operands (a + b + c + … is built left-deep,
 * 100,000 terms deep), and its other nesting is bounded by the SQL parser (CK_SQL_MAX_DEPTH).
 * Every walk here and in the evaluator therefore loops down first operands (args[0]) with an
 * explicit stack and recurses only into the other arguments, so no walk's recursion depends
 * on a chain's length; `size` bounds what a walk costs (the planner refuses huge trees).
 *
 * Memory: expression nodes live in the arena given to the constructors (the job's lifetime).
 * Evaluation allocates only the output columns, which the caller owns.
 * Threads: a tree is immutable after binding and may be evaluated by many subtasks at once.
 */
#ifndef CK_RUNTIME_EXPR_H
#define CK_RUNTIME_EXPR_H

#include "base/arena.h"
#include "base/error.h"
#include "runtime/batch.h"
#include "runtime/types.h"

typedef enum ck_expr_kind {
  CK_EX_COLUMN,  /* input column `column` of the batch */
  CK_EX_LITERAL, /* `literal` (strings copied into the arena) */
  CK_EX_CALL,    /* fn(args) */
  CK_EX_CAST,    /* args[0] cast to `type` */
  CK_EX_CASE,    /* args = when1, then1, when2, then2, …, [else] (has_else) — searched CASE */
  CK_EX_IN,      /* args[0] IN (args[1..]) ; negated for NOT IN */
  CK_EX_WATERMARK, /* CURRENT_WATERMARK(time column): the watermark the row arrived under
                    * (batch wms), NULL before the first; of `type`, a TIMESTAMP */
} ck_expr_kind_t;

/* Functions and operators: the one table. Adding a function is one row here, its typing rule
 * (expr.c, ty_*) and its kernel (expr_eval.c, k_*); the planner's name lookup, the arity
 * check, the error messages and docs/sql.md's function table (test_runtime_expr_fn_table
 * checks it) all read the row. Columns:
 *   id, display name (messages, EXPLAIN), min and max arguments (-1: any number),
 *   typing rule, kernel (0: evaluated by expr_eval.c's own code: AND/OR short-circuit, the
 *   NULL tests, COALESCE, NULLIF), the SQL name and an alias it is called by (0: reached by
 *   operator syntax only), and for a called function its signature and a one-line doc.
 * Operators come first, up to LIKE (fn_is_operator). */
#define CK_FN_TABLE(X)                                                                             \
  X(ADD, "+", 2, 2, ty_arith, k_arith, 0, 0, 0, 0)                                                 \
  X(SUB, "-", 2, 2, ty_arith, k_arith, 0, 0, 0, 0)                                                 \
  X(MUL, "*", 2, 2, ty_arith, k_arith, 0, 0, 0, 0)                                                 \
  X(DIV, "/", 2, 2, ty_arith, k_arith, 0, 0, 0, 0)                                                 \
  X(MOD, "MOD", 2, 2, ty_arith, k_arith, "MOD", 0, "MOD(a, b)",                                    \
    "the remainder of a / b, with the sign of a (also `a % b`); NULL when b is 0")                 \
  X(NEG, "unary -", 1, 1, ty_same_numeric, k_neg_abs, 0, 0, 0, 0)                                  \
  X(EQ, "=", 2, 2, ty_compare, k_compare, 0, 0, 0, 0)                                              \
  X(NE, "<>", 2, 2, ty_compare, k_compare, 0, 0, 0, 0)                                             \
  X(LT, "<", 2, 2, ty_compare, k_compare, 0, 0, 0, 0)                                              \
  X(LE, "<=", 2, 2, ty_compare, k_compare, 0, 0, 0, 0)                                             \
  X(GT, ">", 2, 2, ty_compare, k_compare, 0, 0, 0, 0)                                              \
  X(GE, ">=", 2, 2, ty_compare, k_compare, 0, 0, 0, 0)                                             \
  X(AND, "AND", 2, -1, ty_bools, 0, 0, 0, 0, 0)                                                    \
  X(OR, "OR", 2, -1, ty_bools, 0, 0, 0, 0, 0)                                                      \
  X(NOT, "NOT", 1, 1, ty_bools, k_not, 0, 0, 0, 0)                                                 \
  X(IS_NULL, "IS NULL", 1, 1, ty_null_test, 0, 0, 0, 0, 0)                                         \
  X(IS_NOT_NULL, "IS NOT NULL", 1, 1, ty_null_test, 0, 0, 0, 0, 0)                                 \
  X(IS_TRUE, "IS TRUE", 1, 1, ty_bools, 0, 0, 0, 0, 0)                                             \
  X(IS_FALSE, "IS FALSE", 1, 1, ty_bools, 0, 0, 0, 0, 0)                                           \
  X(LIKE, "LIKE", 2, 2, ty_like, k_like, 0, 0, 0, 0)                                               \
  X(COALESCE, "COALESCE", 1, -1, ty_unify, 0, "COALESCE", 0, "COALESCE(x, ...)",                   \
    "the first argument that is not NULL (all coerced to their common type)")                      \
  X(NULLIF, "NULLIF", 2, 2, ty_unify, 0, "NULLIF", 0, "NULLIF(a, b)",                              \
    "NULL when a = b, else a")                                                                     \
  X(UPPER, "UPPER", 1, 1, ty_strings, k_case_conv, "UPPER", 0, "UPPER(s)",                         \
    "s in upper case (full Unicode case mapping)")                                                 \
  X(LOWER, "LOWER", 1, 1, ty_strings, k_case_conv, "LOWER", 0, "LOWER(s)",                         \
    "s in lower case (full Unicode case mapping)")                                                 \
  X(CHAR_LENGTH, "CHAR_LENGTH", 1, 1, ty_char_length, k_char_length, "CHAR_LENGTH",                \
    "CHARACTER_LENGTH", "CHAR_LENGTH(s)", "the number of characters (code points) of s, an INT")   \
  X(SUBSTRING, "SUBSTRING", 2, 3, ty_substring, k_substring, "SUBSTRING", "SUBSTR",                \
    "SUBSTRING(s, start[, len])",                                                                  \
    "len characters of s from character start (counted from 1; also `SUBSTRING(s FROM start "      \
    "[FOR len])`)")                                                                                \
  X(CONCAT, "CONCAT", 1, -1, ty_strings, k_concat, "CONCAT", 0, "CONCAT(s, ...)",                  \
    "the strings joined, as the concatenation operator does; NULL when any is NULL")               \
  X(TRIM, "TRIM", 1, 1, ty_strings, k_trim, "TRIM", 0, "TRIM(s)",                                  \
    "s without leading and trailing spaces")                                                       \
  X(LTRIM, "LTRIM", 1, 1, ty_strings, k_trim, "LTRIM", 0, "LTRIM(s)",                              \
    "s without leading spaces")                                                                    \
  X(RTRIM, "RTRIM", 1, 1, ty_strings, k_trim, "RTRIM", 0, "RTRIM(s)",                              \
    "s without trailing spaces")                                                                   \
  X(REPLACE, "REPLACE", 3, 3, ty_strings, k_replace, "REPLACE", 0, "REPLACE(s, from, to)",         \
    "s with every occurrence of from replaced by to")                                              \
  X(SPLIT_INDEX, "SPLIT_INDEX", 3, 3, ty_split_index, k_split_index, "SPLIT_INDEX", 0,             \
    "SPLIT_INDEX(s, delimiter, index)", "piece number index (from 0) of s split at delimiter")     \
  X(ABS, "ABS", 1, 1, ty_same_numeric, k_neg_abs, "ABS", 0, "ABS(x)",                              \
    "the absolute value of x, of x's type")                                                        \
  X(ROUND, "ROUND", 1, 2, ty_round, k_round, "ROUND", 0, "ROUND(x[, digits])",                     \
    "x rounded half away from zero to digits places (0 by default; negative: left of the "         \
    "point)")                                                                                      \
  X(FLOOR, "FLOOR", 1, 1, ty_floor_ceil, k_floor_ceil, "FLOOR", 0, "FLOOR(x)",                     \
    "the largest integral value not above x")                                                      \
  X(CEIL, "CEIL", 1, 1, ty_floor_ceil, k_floor_ceil, "CEIL", "CEILING", "CEIL(x)",                 \
    "the smallest integral value not below x")                                                     \
  X(POWER, "POWER", 2, 2, ty_doubles, k_power_sqrt, "POWER", "POW", "POWER(x, y)",                 \
    "x to the power y, a DOUBLE")                                                                  \
  X(SQRT, "SQRT", 1, 1, ty_doubles, k_power_sqrt, "SQRT", 0, "SQRT(x)",                            \
    "the square root of x, a DOUBLE")

typedef enum ck_fn {
#define CK_X_FN(id, name, min, max, typing, kernel, call, alias, sig, doc) CK_FN_##id,
  CK_FN_TABLE(CK_X_FN)
#undef CK_X_FN
  CK_FN__COUNT
} ck_fn_t;

/* A row of CK_FN_TABLE, for the planner, the docs test and messages. */
typedef struct ck_fn_info {
  const char *name;      /* display name */
  int min_args, max_args; /* max -1: any number */
  const char *call, *alias; /* SQL names it is called by (NULL: none) */
  const char *signature, *doc;
} ck_fn_info_t;

const ck_fn_info_t *ck_fn_info(ck_fn_t fn);
/* The function called by `name` (case-insensitive), or -1. */
int ck_fn_lookup(const char *name);
const char *ck_fn_name(ck_fn_t fn);

typedef struct ck_expr ck_expr_t;
struct ck_expr {
  ck_expr_kind_t kind;
  ck_type_t type;       /* result type */
  int column;           /* CK_EX_COLUMN */
  ck_value_t literal;   /* CK_EX_LITERAL */
  ck_fn_t fn;           /* CK_EX_CALL */
  bool has_else;        /* CK_EX_CASE */
  bool negated;         /* CK_EX_IN: NOT IN; CALL LIKE: NOT LIKE */
  bool constant;        /* reads no column (set by the constructors from the arguments) */
  uint32_t size;        /* nodes a walk of the tree visits: a subtree shared by two parents
                         * (BETWEEN's operand, a simple CASE's) counts twice; saturates */
  int nargs;
  ck_expr_t **args;
};

/* Constructors. On a type error they return NULL and fill err (CK_ETYPE) with a message that
 * names the operator and both types, e.g. "operator + cannot take VARCHAR and INT". */
ck_expr_t *ck_expr_column(ck_arena_t *arena, int column, ck_type_t type);
ck_expr_t *ck_expr_literal(ck_arena_t *arena, const ck_value_t *value); /* copies strings */
/* CURRENT_WATERMARK(…) of the given TIMESTAMP type: reads the batch's row watermarks, which
 * the calc operator fills in for a tree that has one (never constant). */
ck_expr_t *ck_expr_watermark(ck_arena_t *arena, ck_type_t type);
ck_expr_t *ck_expr_call(ck_arena_t *arena, ck_fn_t fn, ck_expr_t **args, int nargs,
                        ck_error_t *err);
/* Explicit CAST: every pair among BOOL, numerics, STRING, TIMESTAMP that SQL allows. */
ck_expr_t *ck_expr_cast(ck_arena_t *arena, ck_expr_t *arg, ck_type_t to, ck_error_t *err);
/* Searched CASE: whens[i]/thens[i], else_ may be NULL (then NULL). Result: common type. */
ck_expr_t *ck_expr_case(ck_arena_t *arena, ck_expr_t **whens, ck_expr_t **thens, int n,
                        ck_expr_t *else_, ck_error_t *err);
ck_expr_t *ck_expr_in(ck_arena_t *arena, ck_expr_t *needle, ck_expr_t **list, int n,
                      bool negated, ck_error_t *err);
/* The common type two operands are coerced to for comparison/CASE/COALESCE; false when none. */
bool ck_type_common(ck_type_t a, ck_type_t b, ck_type_t *out);
/* True when a value of `from` can be assigned to a column of `to` without losing information
 * (sink column matching, INSERT INTO). */
bool ck_type_assignable(ck_type_t from, ck_type_t to);
/* Wraps e in an implicit cast to `to` (no-op when equal). */
ck_expr_t *ck_expr_coerce(ck_arena_t *arena, ck_expr_t *e, ck_type_t to, ck_error_t *err);

/* Evaluates expr over every row of in, into out (initialised here with expr->type; the caller
 * frees it with ck_col_fini). Returns 0 or CK_EEVAL with err naming the row's value. */
int ck_expr_eval(const ck_expr_t *expr, const ck_batch_t *in, ck_col_t *out, ck_error_t *err);
/* Evaluates a BOOLEAN predicate into sel[0..nrows): 1 where it is TRUE (NULL and FALSE are 0). */
int ck_expr_eval_filter(const ck_expr_t *expr, const ck_batch_t *in, uint8_t *sel,
                        ck_error_t *err);
/* True when the tree reads no column (can be folded at bind time); O(1). */
bool ck_expr_is_constant(const ck_expr_t *expr);
/* Writes the tree as SQL-ish text (for EXPLAIN, fingerprints and error messages). */
void ck_expr_to_string(const ck_expr_t *expr, ck_buf_t *out);

#endif
