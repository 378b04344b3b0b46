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
  CK_EX_UDF,     /* a user-defined function in C, `udf`(args) (runtime/udf.h) */
} ck_expr_kind_t;

/* Functions and operators: the one table. Adding a function is one row here, its typing rule
 * (expr.c, ty_*) and its kernel (expr_eval.c, k_*); the planner's name lookup, the arity
 * check, the error messages and docs/sql.md's function table (test_runtime_expr_fn_table
 * checks it) all read the row. Columns:
 *   id, display name (messages, EXPLAIN), min and max arguments (-1: any number),
 *   typing rule, kernel (0: evaluated by expr_eval.c's own code: AND/OR short-circuit, the
 *   NULL tests, COALESCE, NULLIF), the SQL name and an alias it is called by (0: reached by
 *   operator syntax only), and for a called function its signature and a one-line doc.
 * Operators come first, up to SIMILAR TO (fn_is_operator). A call whose kernel is 0 and is not one of
 * those is rewritten by ck_expr_call (IF becomes a CASE). */
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
  X(LIKE, "LIKE", 2, 3, ty_like, k_like, 0, 0, 0, 0)                                               \
  X(SIMILAR, "SIMILAR TO", 2, 3, ty_like, k_similar, 0, 0, 0, 0)                                    \
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
  X(TRIM, "TRIM", 1, 2, ty_strings, k_trim, "TRIM", 0, "TRIM(s[, chars])",                         \
    "s without leading and trailing characters that are in chars (a space by default); also "      \
    "`TRIM(BOTH chars FROM s)`, and LEADING or TRAILING for one end")                              \
  X(LTRIM, "LTRIM", 1, 2, ty_strings, k_trim, "LTRIM", 0, "LTRIM(s[, chars])",                     \
    "s without leading characters that are in chars (a space by default)")                         \
  X(RTRIM, "RTRIM", 1, 2, ty_strings, k_trim, "RTRIM", 0, "RTRIM(s[, chars])",                     \
    "s without trailing characters that are in chars (a space by default)")                        \
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
    "the square root of x, a DOUBLE")                                                              \
  X(IF, "IF", 3, 3, ty_if, 0, "IF", 0, "IF(cond, a, b)",                                           \
    "a when cond is TRUE, else b (also when cond is NULL); a and b are coerced to their common "   \
    "type")                                                                                        \
  X(POSITION, "POSITION", 2, 2, ty_locate, k_locate, "POSITION", 0, "POSITION(sub IN s)",          \
    "the position (from 1, in characters) of the first sub in s, 0 when there is none, an INT")    \
  X(LOCATE, "LOCATE", 2, 3, ty_locate, k_locate, "LOCATE", 0, "LOCATE(sub, s[, from])",            \
    "the position of the first sub in s at or after character from (1 by default); 0 when there "  \
    "is none or from < 1")                                                                         \
  X(INSTR, "INSTR", 2, 2, ty_locate, k_locate, "INSTR", 0, "INSTR(s, sub)",                        \
    "the position of the first sub in s: LOCATE with its arguments swapped")                       \
  X(LEFT, "LEFT", 2, 2, ty_str_int, k_left_right, "LEFT", 0, "LEFT(s, n)",                         \
    "the first n characters of s; '' when n < 0")                                                  \
  X(RIGHT, "RIGHT", 2, 2, ty_str_int, k_left_right, "RIGHT", 0, "RIGHT(s, n)",                     \
    "the last n characters of s; '' when n < 0")                                                   \
  X(LPAD, "LPAD", 3, 3, ty_pad, k_pad, "LPAD", 0, "LPAD(s, len, pad)",                             \
    "s padded on the left with pad to len characters, or cut to its first len; NULL when len < 0 " \
    "or pad is ''")                                                                                \
  X(RPAD, "RPAD", 3, 3, ty_pad, k_pad, "RPAD", 0, "RPAD(s, len, pad)",                             \
    "s padded on the right with pad to len characters, or cut to its first len; NULL when len "    \
    "< 0 "                                                                                         \
    "or pad is ''")                                                                                \
  X(REPEAT, "REPEAT", 2, 2, ty_str_int, k_repeat, "REPEAT", 0, "REPEAT(s, n)",                     \
    "s repeated n times; '' when n <= 0 (a result over 16 MiB stops the job)")                     \
  X(REVERSE, "REVERSE", 1, 1, ty_strings, k_reverse, "REVERSE", 0, "REVERSE(s)",                   \
    "the characters (code points) of s in reverse order")                                          \
  X(INITCAP, "INITCAP", 1, 1, ty_strings, k_initcap, "INITCAP", 0, "INITCAP(s)",                   \
    "s with each word's first letter in upper case and its other letters in lower case (a word "   \
    "is "                                                                                          \
    "a run of ASCII letters and digits)")                                                          \
  X(CONCAT_WS, "CONCAT_WS", 2, -1, ty_strings, k_concat_ws, "CONCAT_WS", 0,                        \
    "CONCAT_WS(sep, s, ...)",                                                                      \
    "the strings that are not NULL joined with sep; NULL when sep is NULL")                        \
  X(OVERLAY, "OVERLAY", 3, 4, ty_overlay, k_overlay, "OVERLAY", 0,                                 \
    "OVERLAY(s PLACING r FROM start [FOR len])",                                                   \
    "s with len characters from character start on replaced by r (len: r's length by default)")    \
  X(REGEXP, "REGEXP", 2, 2, ty_regexp, k_regexp, "REGEXP", 0, "REGEXP(s, regex)",                  \
    "TRUE when some part of s matches regex (ICU regular expressions, see below)")                 \
  X(REGEXP_EXTRACT, "REGEXP_EXTRACT", 2, 3, ty_regexp, k_regexp, "REGEXP_EXTRACT", 0,              \
    "REGEXP_EXTRACT(s, regex[, group])",                                                           \
    "group number group (0, the whole match, by default) of the first match of regex in s; NULL "  \
    "when nothing matches or there is no such group")                                              \
  X(REGEXP_REPLACE, "REGEXP_REPLACE", 3, 3, ty_regexp, k_regexp, "REGEXP_REPLACE", 0,              \
    "REGEXP_REPLACE(s, regex, replacement)",                                                       \
    "s with every match of regex replaced by replacement, in which `$n` stands for group n and "   \
    "`\\` quotes the next character")                                                              \
  X(TO_BASE64, "TO_BASE64", 1, 1, ty_strings, k_base64, "TO_BASE64", 0, "TO_BASE64(s)",            \
    "the bytes of s in base64 (RFC 4648, with padding)")                                           \
  X(FROM_BASE64, "FROM_BASE64", 1, 1, ty_strings, k_base64, "FROM_BASE64", 0, "FROM_BASE64(s)",    \
    "the text base64 s encodes; NULL when s is not base64 or the bytes are not UTF-8")             \
  X(MD5, "MD5", 1, 1, ty_strings, k_digest, "MD5", 0, "MD5(s)",                                    \
    "the MD5 digest of s's bytes as 32 lower-case hex digits")                                     \
  X(SHA256, "SHA256", 1, 1, ty_strings, k_digest, "SHA256", 0, "SHA256(s)",                        \
    "the SHA-256 digest of s's bytes as 64 lower-case hex digits")                                 \
  X(HEX, "HEX", 1, 1, ty_hex, k_hex, "HEX", 0, "HEX(x)",                                           \
    "an integer in hexadecimal (two's complement in 64 bits when negative) or a string's bytes, "  \
    "in upper case")                                                                               \
  X(TRUNCATE, "TRUNCATE", 1, 2, ty_round, k_round, "TRUNCATE", 0, "TRUNCATE(x[, digits])",         \
    "x cut toward zero to digits places (0 by default; negative: left of the point)")              \
  X(SIGN, "SIGN", 1, 1, ty_same_numeric, k_sign, "SIGN", 0, "SIGN(x)",                             \
    "-1, 0 or 1 as x is negative, zero or positive, of x's type")                                  \
  X(LN, "LN", 1, 1, ty_doubles, k_math, "LN", 0, "LN(x)", "the natural logarithm of x, a DOUBLE")  \
  X(LOG, "LOG", 1, 2, ty_doubles, k_math, "LOG", 0, "LOG([base, ]x)",                              \
    "the logarithm of x to base (e by default), a DOUBLE")                                         \
  X(LOG10, "LOG10", 1, 1, ty_doubles, k_math, "LOG10", 0, "LOG10(x)",                              \
    "the base-10 logarithm of x, a DOUBLE")                                                        \
  X(LOG2, "LOG2", 1, 1, ty_doubles, k_math, "LOG2", 0, "LOG2(x)",                                  \
    "the base-2 logarithm of x, a DOUBLE")                                                         \
  X(EXP, "EXP", 1, 1, ty_doubles, k_math, "EXP", 0, "EXP(x)", "e to the power x, a DOUBLE")        \
  X(SIN, "SIN", 1, 1, ty_doubles, k_math, "SIN", 0, "SIN(x)", "the sine of x radians")             \
  X(COS, "COS", 1, 1, ty_doubles, k_math, "COS", 0, "COS(x)", "the cosine of x radians")           \
  X(TAN, "TAN", 1, 1, ty_doubles, k_math, "TAN", 0, "TAN(x)", "the tangent of x radians")          \
  X(COT, "COT", 1, 1, ty_doubles, k_math, "COT", 0, "COT(x)", "the cotangent of x radians")        \
  X(ASIN, "ASIN", 1, 1, ty_doubles, k_math, "ASIN", 0, "ASIN(x)",                                  \
    "the arc sine of x, in radians (x in [-1, 1])")                                                \
  X(ACOS, "ACOS", 1, 1, ty_doubles, k_math, "ACOS", 0, "ACOS(x)",                                  \
    "the arc cosine of x, in radians (x in [-1, 1])")                                              \
  X(ATAN, "ATAN", 1, 1, ty_doubles, k_math, "ATAN", 0, "ATAN(x)",                                  \
    "the arc tangent of x, in radians")                                                            \
  X(ATAN2, "ATAN2", 2, 2, ty_doubles, k_math, "ATAN2", 0, "ATAN2(y, x)",                           \
    "the angle of the point (x, y), in radians")                                                   \
  X(SINH, "SINH", 1, 1, ty_doubles, k_math, "SINH", 0, "SINH(x)", "the hyperbolic sine of x")      \
  X(COSH, "COSH", 1, 1, ty_doubles, k_math, "COSH", 0, "COSH(x)", "the hyperbolic cosine of x")    \
  X(TANH, "TANH", 1, 1, ty_doubles, k_math, "TANH", 0, "TANH(x)", "the hyperbolic tangent of x")   \
  X(DEGREES, "DEGREES", 1, 1, ty_doubles, k_math, "DEGREES", 0, "DEGREES(x)",                      \
    "x radians in degrees")                                                                        \
  X(RADIANS, "RADIANS", 1, 1, ty_doubles, k_math, "RADIANS", 0, "RADIANS(x)",                      \
    "x degrees in radians")                                                                        \
  X(PI, "PI", 0, 0, ty_doubles, k_math, "PI", 0, "PI()", "π, a DOUBLE")                            \
  X(E, "E", 0, 0, ty_doubles, k_math, "E", 0, "E()", "e, the base of the natural logarithm")       \
  X(EXTRACT, "EXTRACT", 2, 2, ty_time_unit, k_time, "EXTRACT", 0, "EXTRACT(unit FROM ts)",         \
    "a field of ts as a BIGINT: YEAR, QUARTER, MONTH, WEEK (ISO), DAY, DOY, DOW (1 = Sunday), "    \
    "HOUR, MINUTE, SECOND, MILLISECOND, EPOCH (seconds)")                                          \
  X(DATE_TRUNC, "DATE_TRUNC", 2, 2, ty_time_unit, k_time, "DATE_TRUNC", 0,                         \
    "DATE_TRUNC(unit, ts)",                                                                        \
    "ts rounded down to a whole unit (YEAR, QUARTER, MONTH, WEEK from Monday, DAY, HOUR, MINUTE, " \
    "SECOND, MILLISECOND); also `FLOOR(ts TO unit)`")                                              \
  X(TIMESTAMPADD, "TIMESTAMPADD", 3, 3, ty_time_unit, k_time, "TIMESTAMPADD", 0,                   \
    "TIMESTAMPADD(unit, n, ts)",                                                                   \
    "ts plus n units (months and years keep the day, clipped to the month's last)")                \
  X(TIMESTAMPDIFF, "TIMESTAMPDIFF", 3, 3, ty_time_unit, k_time, "TIMESTAMPDIFF", 0,                \
    "TIMESTAMPDIFF(unit, ts1, ts2)",                                                               \
    "the number of whole units from ts1 to ts2, an INT (negative when ts2 is earlier)")            \
  X(DATE_FORMAT, "DATE_FORMAT", 2, 2, ty_date_format, k_time, "DATE_FORMAT", 0,                    \
    "DATE_FORMAT(ts, format)",                                                                     \
    "ts as text in format, a Java date pattern (`yyyy-MM-dd HH:mm:ss.SSS`, see below)")            \
  X(TO_TIMESTAMP, "TO_TIMESTAMP", 1, 2, ty_date_format, k_time, "TO_TIMESTAMP", 0,                 \
    "TO_TIMESTAMP(s[, format])",                                                                   \
    "the TIMESTAMP text s gives in format (`yyyy-MM-dd HH:mm:ss` by default); NULL when it does "  \
    "not parse")                                                                                   \
  X(TO_DATE, "TO_DATE", 1, 2, ty_date_format, k_time, "TO_DATE", 0, "TO_DATE(s[, format])",      \
    "the DATE text s gives in format (`yyyy-MM-dd` by default; a time of day in it is dropped); "  \
    "NULL when it does not parse")                                                                 \
  X(JSON_OBJECT, "JSON_OBJECT", 1, -1, ty_json_build, k_json_build, "JSON_OBJECT", 0,              \
    "JSON_OBJECT(KEY k VALUE v, ... [NULL|ABSENT ON NULL])",                                       \
    "a JSON object of the keys (VARCHAR, not NULL) and values; a NULL value is null, or left out " \
    "with ABSENT ON NULL")                                                                         \
  X(JSON_ARRAY, "JSON_ARRAY", 1, -1, ty_json_build, k_json_build, "JSON_ARRAY", 0,                 \
    "JSON_ARRAY(v, ... [NULL|ABSENT ON NULL])",                                                    \
    "a JSON array of the values; a NULL value is left out, or null with NULL ON NULL")             \
  X(JSON_VALUE, "JSON_VALUE", 2, 2, ty_json, k_json, "JSON_VALUE", 0, "JSON_VALUE(json, path)",    \
    "the scalar at path in the JSON text json, as a VARCHAR (a string unquoted); NULL when json "  \
    "is not JSON, or the path names nothing, a null, an object or an array")                       \
  X(JSON_QUERY, "JSON_QUERY", 2, 2, ty_json, k_json, "JSON_QUERY", 0, "JSON_QUERY(json, path)",    \
    "the object or array at path, as compact JSON text; NULL for anything else")                   \
  X(JSON_EXISTS, "JSON_EXISTS", 2, 2, ty_json, k_json, "JSON_EXISTS", 0,                           \
    "JSON_EXISTS(json, path)",                                                                     \
    "TRUE when path names a value in json (FALSE also when json is not JSON)")

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
  const struct ck_udf *udf; /* CK_EX_UDF: loaded for the life of the process (runtime/udf.h) */
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
/* A call of a user-defined function: checks the arity and coerces each argument to the type
 * the function's descriptor declares (an INT into a BIGINT argument; a VARCHAR into a BIGINT
 * one is a type error naming the function, the argument and both types). Never constant: a
 * UDF runs per batch, not at bind time. */
ck_expr_t *ck_expr_udf(ck_arena_t *arena, const struct ck_udf *udf, ck_expr_t **args, int nargs,
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

/* Checks the typing rules make at bind time (expr_eval.c owns what they check). Each returns
 * 0, or -1 with the reason in why. */
/* A regular expression as REGEXP* compile it (ICU). */
int ck_expr_regex_check(const char *pattern, size_t n, char *why, size_t cap);
/* A DATE_FORMAT / TO_TIMESTAMP pattern. */
int ck_date_pattern_check(const char *pattern, size_t n, char *why, size_t cap);
/* The time unit called `name` (case-insensitive), or -1; the fields DOW, DOY and EPOCH only
 * when `extract`. */
int ck_time_unit_lookup(const char *name, size_t n, bool extract);
/* A SIMILAR TO pattern with its ESCAPE (esc NULL: none). */
int ck_similar_check(const char *pattern, size_t n, const char *esc, size_t en, char *why,
                     size_t cap);
/* A JSON_VALUE / JSON_QUERY / JSON_EXISTS path. */
int ck_json_path_check(const char *path, size_t n, char *why, size_t cap);
/* Code points in n bytes of UTF-8. */
size_t ck_utf8_chars(const char *s, size_t n);

#endif
