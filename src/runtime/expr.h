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
} ck_expr_kind_t;

/* Functions and operators. Keep the names table in expr.c in the same order. */
#define CK_FN_TABLE(X)                                                                        \
  X(ADD, "+") X(SUB, "-") X(MUL, "*") X(DIV, "/") X(MOD, "MOD") X(NEG, "unary -")            \
  X(EQ, "=") X(NE, "<>") X(LT, "<") X(LE, "<=") X(GT, ">") X(GE, ">=")                       \
  X(AND, "AND") X(OR, "OR") X(NOT, "NOT") X(IS_NULL, "IS NULL") X(IS_NOT_NULL, "IS NOT NULL") \
  X(IS_TRUE, "IS TRUE") X(IS_FALSE, "IS FALSE")                                              \
  X(LIKE, "LIKE") X(COALESCE, "COALESCE") X(NULLIF, "NULLIF")                                \
  X(UPPER, "UPPER") X(LOWER, "LOWER") X(CHAR_LENGTH, "CHAR_LENGTH") X(SUBSTRING, "SUBSTRING") \
  X(CONCAT, "CONCAT") X(TRIM, "TRIM") X(LTRIM, "LTRIM") X(RTRIM, "RTRIM")                    \
  X(REPLACE, "REPLACE") X(SPLIT_INDEX, "SPLIT_INDEX")                                        \
  X(ABS, "ABS") X(ROUND, "ROUND") X(FLOOR, "FLOOR") X(CEIL, "CEIL") X(POWER, "POWER")        \
  X(SQRT, "SQRT")

typedef enum ck_fn {
#define CK_X_FN(id, name) CK_FN_##id,
  CK_FN_TABLE(CK_X_FN)
#undef CK_X_FN
  CK_FN__COUNT
} ck_fn_t;

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
