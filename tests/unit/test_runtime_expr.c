/*
 * DESIGN: unit tests for src/runtime/expr — typing rules, implicit coercions, type errors, and
 * column-at-a-time evaluation of every operator and function.
 *
 * Batches are built by hand from text (NULL pointer = SQL NULL); results are rendered back to
 * text ("1|NULL|3") and compared with literal expectations, so a failing assertion prints both
 * sides. Decimal results are exact digits; errors are checked by code and by the words of the
 * message. Each test runs with a fresh arena and checks that every heap block it made is freed.
 * Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "runtime/expr.h"

/* ---- fixtures --------------------------------------------------------------------------- */

static ck_arena_t A;
static int64_t blocks_before;
static char text[8192];

static int setup(void **state) {
  blocks_before = ck_mem_stats().live_blocks;
  ck_arena_init(&A, 0);
  return 0;
}

static int teardown(void **state) {
  ck_arena_fini(&A);
  assert_int_equal(ck_mem_stats().live_blocks, blocks_before);
  return 0;
}

#define T(id) CK_TYPE(CK_T_##id)
#define DEC(p, s) ((ck_type_t){CK_T_DECIMAL, (p), (s)})

static const char *tname(ck_type_t t) {
  static char buf[4][48];
  static int k;
  k = (k + 1) % 4;
  return ck_type_name(t, buf[k], sizeof buf[k]);
}

/* Appends one value parsed from text (NULL = SQL NULL) to a column of any type. */
static void put(ck_col_t *col, const char *s) {
  if (!s) {
    ck_col_append_null(col);
    return;
  }
  switch (col->type.id) {
    case CK_T_BOOL: ck_col_append_bool(col, strcmp(s, "true") == 0); break;
    case CK_T_INT32: ck_col_append_i32(col, (int32_t)strtol(s, NULL, 10)); break;
    case CK_T_INT64: ck_col_append_i64(col, strtoll(s, NULL, 10)); break;
    case CK_T_FLOAT32: ck_col_append_f32(col, strtof(s, NULL)); break;
    case CK_T_FLOAT64: ck_col_append_f64(col, strtod(s, NULL)); break;
    case CK_T_DECIMAL: {
      ck_i128 v;
      assert_true(ck_decimal_parse(s, strlen(s), col->type.precision, col->type.scale, &v));
      ck_col_append_dec(col, v);
      break;
    }
    case CK_T_STRING: ck_col_append_str(col, s, strlen(s)); break;
    case CK_T_TIMESTAMP: {
      int64_t ms;
      assert_true(ck_timestamp_parse(s, strlen(s), &ms));
      ck_col_append_i64(col, ms);
      break;
    }
    case CK_T_NULL: ck_col_append_null(col); break;
  }
}

static void fill(ck_batch_t *b, int c, const char *const *vals, size_t n) {
  for (size_t i = 0; i < n; i++) put(&b->cols[c], vals[i]);
  for (int k = 0; k < b->ncols; k++)
    if (b->cols[k].len != b->cols[c].len) return; /* sealed once every column is filled */
  ck_batch_seal(b);
}
#define STRS(...) (const char *[]){__VA_ARGS__}
#define NSTRS(...) (sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *))
#define FILL(b, c, ...) fill((b), (c), STRS(__VA_ARGS__), NSTRS(__VA_ARGS__))

static ck_batch_t *batch1(ck_type_t t) { return ck_batch_new(1, &t, 0); }
static ck_batch_t *batch2(ck_type_t t0, ck_type_t t1) {
  ck_type_t ts[2] = {t0, t1};
  return ck_batch_new(2, ts, 0);
}
/* A batch without columns but with n rows, for constant expressions. */
static ck_batch_t *rows(size_t n) {
  ck_batch_t *b = ck_batch_new(0, NULL, 0);
  b->nrows = n;
  return b;
}

/* Row i of a column as text. */
static void cell(const ck_col_t *c, size_t i, ck_buf_t *out) {
  if (!ck_col_valid(c, i)) {
    ck_buf_puts(out, "NULL");
    return;
  }
  switch (c->type.id) {
    case CK_T_NULL: ck_buf_puts(out, "NULL"); break;
    case CK_T_BOOL: ck_buf_puts(out, ck_col_bool(c, i) ? "TRUE" : "FALSE"); break;
    case CK_T_INT32: ck_buf_printf(out, "%d", ck_col_i32(c, i)); break;
    case CK_T_INT64: ck_buf_printf(out, "%lld", (long long)ck_col_i64(c, i)); break;
    case CK_T_FLOAT32: ck_double_format(ck_col_f32(c, i), out); break;
    case CK_T_FLOAT64: ck_double_format(ck_col_f64(c, i), out); break;
    case CK_T_DECIMAL: ck_decimal_format(ck_col_dec(c, i), c->type.scale, out); break;
    case CK_T_STRING: {
      size_t n;
      const char *s = ck_col_str(c, i, &n);
      ck_buf_append(out, s, n);
      break;
    }
    case CK_T_TIMESTAMP: ck_timestamp_format(ck_col_i64(c, i), out); break;
  }
}

/* Evaluates e over b (which it frees) and renders the rows joined by '|'. */
static const char *eval_text(const ck_expr_t *e, ck_batch_t *b) {
  ck_error_t err;
  ck_error_clear(&err);
  ck_col_t out;
  int rc = ck_expr_eval(e, b, &out, &err);
  if (rc) fail_msg("evaluation failed: %s", err.message);
  assert_int_equal(out.len, b->nrows);
  assert_true(ck_type_eq(out.type, e->type));
  ck_buf_t buf;
  ck_buf_init(&buf);
  for (size_t i = 0; i < out.len; i++) {
    if (i) ck_buf_putc(&buf, '|');
    cell(&out, i, &buf);
  }
  snprintf(text, sizeof text, "%s", buf.data ? buf.data : "");
  ck_buf_fini(&buf);
  ck_col_fini(&out);
  ck_batch_free(b);
  return text;
}

/* Evaluates e over b expecting CK_EEVAL; returns the message. */
static const char *eval_error(const ck_expr_t *e, ck_batch_t *b) {
  ck_error_t err;
  ck_error_clear(&err);
  ck_col_t out;
  int rc = ck_expr_eval(e, b, &out, &err);
  assert_int_equal(rc, CK_EEVAL);
  assert_int_equal(err.code, CK_EEVAL);
  ck_col_fini(&out);
  ck_batch_free(b);
  snprintf(text, sizeof text, "%s", err.message);
  return text;
}

static ck_expr_t *col(int i, ck_type_t t) { return ck_expr_column(&A, i, t); }

static ck_expr_t *lit_i32(int32_t v) {
  ck_value_t x = {.type = T(INT32), .v.i = v};
  return ck_expr_literal(&A, &x);
}
static ck_expr_t *lit_i64(int64_t v) {
  ck_value_t x = {.type = T(INT64), .v.i = v};
  return ck_expr_literal(&A, &x);
}
static ck_expr_t *lit_f64(double v) {
  ck_value_t x = {.type = T(FLOAT64), .v.f = v};
  return ck_expr_literal(&A, &x);
}
static ck_expr_t *lit_bool(bool v) {
  ck_value_t x = {.type = T(BOOL), .v.b = v};
  return ck_expr_literal(&A, &x);
}
static ck_expr_t *lit_str(const char *s) {
  ck_value_t x = {.type = T(STRING), .v.s = {s, strlen(s)}};
  return ck_expr_literal(&A, &x);
}
static ck_expr_t *lit_null(void) {
  ck_value_t x = {.type = T(NULL), .is_null = true};
  return ck_expr_literal(&A, &x);
}
static ck_expr_t *lit_dec(const char *s, int p, int sc) {
  ck_value_t x = {.type = DEC(p, sc)};
  assert_true(ck_decimal_parse(s, strlen(s), p, sc, &x.v.dec));
  return ck_expr_literal(&A, &x);
}

static ck_expr_t *callv(ck_fn_t fn, int n, ck_expr_t **args) {
  ck_error_t err;
  ck_error_clear(&err);
  ck_expr_t *e = ck_expr_call(&A, fn, args, n, &err);
  if (!e) fail_msg("could not build %s: %s", ck_fn_name(fn), err.message);
  return e;
}
#define CALL(fn, ...) \
  callv(CK_FN_##fn, (int)(sizeof((ck_expr_t *[]){__VA_ARGS__}) / sizeof(ck_expr_t *)), \
        (ck_expr_t *[]){__VA_ARGS__})

/* Builds a call expecting a type error; returns its message. */
static const char *call_error(ck_fn_t fn, int n, ck_expr_t **args) {
  ck_error_t err;
  ck_error_clear(&err);
  ck_expr_t *e = ck_expr_call(&A, fn, args, n, &err);
  assert_null(e);
  assert_int_equal(err.code, CK_ETYPE);
  snprintf(text, sizeof text, "%s", err.message);
  return text;
}
#define CALL_ERROR(fn, ...) \
  call_error(CK_FN_##fn, (int)(sizeof((ck_expr_t *[]){__VA_ARGS__}) / sizeof(ck_expr_t *)), \
             (ck_expr_t *[]){__VA_ARGS__})

static ck_expr_t *cast(ck_expr_t *e, ck_type_t to) {
  ck_error_t err;
  ck_error_clear(&err);
  ck_expr_t *c = ck_expr_cast(&A, e, to, &err);
  if (!c) fail_msg("could not build CAST: %s", err.message);
  return c;
}

static const char *to_text(const ck_expr_t *e) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_expr_to_string(e, &b);
  snprintf(text, sizeof text, "%s", b.data);
  ck_buf_fini(&b);
  return text;
}

#define assert_type(e, t) assert_string_equal(tname((e)->type), tname(t))

/* ---- typing ----------------------------------------------------------------------------- */

static void test_fn_names_follow_the_table(void **state) {
  assert_string_equal(ck_fn_name(CK_FN_ADD), "+");
  assert_string_equal(ck_fn_name(CK_FN_NE), "<>");
  assert_string_equal(ck_fn_name(CK_FN_NEG), "unary -");
  assert_string_equal(ck_fn_name(CK_FN_IS_NOT_NULL), "IS NOT NULL");
  assert_string_equal(ck_fn_name(CK_FN_SPLIT_INDEX), "SPLIT_INDEX");
  assert_string_equal(ck_fn_name(CK_FN_SQRT), "SQRT");
  assert_string_equal(ck_fn_name(CK_FN__COUNT), "?");
}

static void test_type_common(void **state) {
  ck_type_t t;
  assert_true(ck_type_common(T(INT32), T(INT64), &t));
  assert_string_equal(tname(t), "BIGINT");
  assert_true(ck_type_common(T(INT32), T(FLOAT64), &t));
  assert_string_equal(tname(t), "DOUBLE");
  assert_true(ck_type_common(T(FLOAT32), T(FLOAT32), &t));
  assert_string_equal(tname(t), "FLOAT");
  assert_true(ck_type_common(T(FLOAT32), T(INT32), &t));
  assert_string_equal(tname(t), "DOUBLE");
  assert_true(ck_type_common(T(INT32), DEC(5, 2), &t));
  assert_string_equal(tname(t), "DECIMAL(12, 2)");
  assert_true(ck_type_common(DEC(10, 4), DEC(12, 1), &t));
  assert_string_equal(tname(t), "DECIMAL(15, 4)");
  assert_true(ck_type_common(DEC(10, 2), T(FLOAT64), &t));
  assert_string_equal(tname(t), "DOUBLE");
  assert_true(ck_type_common(T(TIMESTAMP), T(INT64), &t));
  assert_string_equal(tname(t), "TIMESTAMP(3)");
  assert_true(ck_type_common(T(INT32), T(TIMESTAMP), &t));
  assert_string_equal(tname(t), "TIMESTAMP(3)");
  assert_true(ck_type_common(T(NULL), T(STRING), &t));
  assert_string_equal(tname(t), "VARCHAR");
  assert_true(ck_type_common(T(BOOL), T(BOOL), &t));
  assert_string_equal(tname(t), "BOOLEAN");
  assert_false(ck_type_common(T(STRING), T(INT32), &t));
  assert_false(ck_type_common(T(BOOL), T(INT32), &t));
  assert_false(ck_type_common(T(TIMESTAMP), T(STRING), &t));
  assert_false(ck_type_common(T(TIMESTAMP), T(FLOAT64), &t));
}

static void test_type_assignable_table(void **state) {
  static const struct {
    ck_type_t from, to;
    bool ok;
  } cases[] = {
      {T(INT32), T(INT32), true},        {T(INT32), T(INT64), true},
      {T(INT32), T(FLOAT64), true},      {T(INT32), DEC(10, 0), true},
      {T(INT32), DEC(12, 2), true},      {T(INT32), DEC(9, 0), false},
      {T(INT32), DEC(11, 2), false},     {T(INT32), T(FLOAT32), false},
      {T(INT64), T(INT32), false},       {T(INT64), DEC(19, 0), true},
      {T(INT64), DEC(18, 0), false},     {T(INT64), DEC(20, 2), false},
      {T(INT64), T(FLOAT64), true},      {T(INT64), T(TIMESTAMP), true},
      {T(TIMESTAMP), T(INT64), true},    {T(TIMESTAMP), T(INT32), false},
      {T(FLOAT32), T(FLOAT64), true},    {T(FLOAT64), T(FLOAT32), false},
      {T(FLOAT64), DEC(38, 10), false},  {DEC(10, 2), DEC(12, 2), true},
      {DEC(10, 2), DEC(12, 3), true},    {DEC(10, 2), DEC(12, 5), false},
      {DEC(10, 2), DEC(10, 1), false},   {DEC(10, 2), T(FLOAT64), true},
      {DEC(10, 2), T(INT64), false},     {T(INT32), T(STRING), false},
      {T(BOOL), T(STRING), false},       {T(TIMESTAMP), T(STRING), false},
      {T(STRING), T(STRING), true},      {T(STRING), T(INT32), false},
      {T(BOOL), T(INT32), false},        {T(NULL), T(INT32), true},
      {T(NULL), T(STRING), true},
  };
  for (size_t i = 0; i < CK_ARRAY_LEN(cases); i++) {
    bool got = ck_type_assignable(cases[i].from, cases[i].to);
    if (got != cases[i].ok)
      fail_msg("%s -> %s: expected %s", tname(cases[i].from), tname(cases[i].to),
               cases[i].ok ? "assignable" : "not assignable");
  }
}

static void test_arith_result_types_and_coercions(void **state) {
  ck_expr_t *e = CALL(ADD, col(0, T(INT32)), col(1, T(INT64)));
  assert_type(e, T(INT64));
  assert_int_equal(e->args[0]->kind, CK_EX_CAST); /* INT32 widened to BIGINT */
  assert_type(e->args[0], T(INT64));
  assert_int_equal(e->args[1]->kind, CK_EX_COLUMN);

  e = CALL(MUL, col(0, T(INT32)), col(1, T(FLOAT64)));
  assert_type(e, T(FLOAT64));
  assert_type(e->args[0], T(FLOAT64));

  e = CALL(ADD, col(0, T(INT32)), col(1, DEC(5, 2)));
  assert_string_equal(tname(e->type), "DECIMAL(13, 2)"); /* max(10, 3) + 2 + 1 */
  assert_type(e->args[0], DEC(10, 0));

  e = CALL(ADD, col(0, T(FLOAT32)), col(1, T(FLOAT32)));
  assert_type(e, T(FLOAT32));
  e = CALL(ADD, col(0, T(FLOAT32)), col(1, T(INT64)));
  assert_type(e, T(FLOAT64));
  e = CALL(ADD, col(0, DEC(10, 2)), col(1, T(FLOAT32)));
  assert_type(e, T(FLOAT64));

  assert_string_equal(tname(CALL(SUB, col(0, DEC(10, 2)), col(1, DEC(5, 4)))->type),
                      "DECIMAL(13, 4)");
  assert_string_equal(tname(CALL(MUL, col(0, DEC(10, 2)), col(1, DEC(5, 3)))->type),
                      "DECIMAL(15, 5)");
  assert_string_equal(tname(CALL(DIV, col(0, DEC(10, 2)), col(1, DEC(5, 3)))->type),
                      "DECIMAL(19, 8)"); /* s = max(6, 2+5+1), p = 10-2+3+8 */
  assert_string_equal(tname(CALL(DIV, col(0, DEC(10, 2)), col(1, DEC(10, 2)))->type),
                      "DECIMAL(23, 13)");
  assert_string_equal(tname(CALL(MOD, col(0, DEC(10, 2)), col(1, DEC(5, 3)))->type),
                      "DECIMAL(5, 3)");
  /* precision capped at 38, integer digits kept, scale reduced but not below 6 */
  assert_string_equal(tname(CALL(MUL, col(0, DEC(38, 10)), col(1, DEC(38, 10)))->type),
                      "DECIMAL(38, 6)");
  assert_string_equal(tname(CALL(ADD, col(0, DEC(38, 2)), col(1, DEC(38, 2)))->type),
                      "DECIMAL(38, 2)");
  assert_type(CALL(DIV, col(0, T(INT32)), col(1, T(INT32))), T(INT32));
  assert_type(CALL(MOD, col(0, T(INT64)), col(1, T(INT32))), T(INT64));
  assert_type(CALL(NEG, col(0, DEC(7, 3))), DEC(7, 3));
}

static void test_literals_are_folded_when_coerced(void **state) {
  ck_expr_t *e = CALL(ADD, col(0, T(INT64)), lit_i32(1));
  assert_int_equal(e->args[1]->kind, CK_EX_LITERAL);
  assert_type(e->args[1], T(INT64));
  assert_string_equal(to_text(e), "($0 + 1)");

  e = CALL(GT, col(0, DEC(10, 2)), lit_i32(5));
  assert_int_equal(e->args[1]->kind, CK_EX_LITERAL);
  assert_string_equal(to_text(e), "($0 > 5.00)");

  e = CALL(EQ, col(0, T(STRING)), lit_null());
  assert_type(e->args[1], T(STRING));
  assert_true(e->args[1]->literal.is_null);

  e = CALL(LT, col(0, T(TIMESTAMP)), lit_i64(1000));
  assert_type(e->args[1], T(TIMESTAMP));
  assert_string_equal(to_text(e), "($0 < TIMESTAMP '1970-01-01 00:00:01.000')");

  /* a column is never folded: it is cast */
  e = CALL(ADD, col(0, T(INT32)), lit_f64(0.5));
  assert_string_equal(to_text(e), "(CAST($0 AS DOUBLE) + 0.5)");
}

static void test_type_errors_name_operator_and_types(void **state) {
  assert_string_equal(CALL_ERROR(ADD, col(0, T(STRING)), col(1, T(INT32))),
                      "operator + cannot take VARCHAR and INT");
  assert_string_equal(CALL_ERROR(MUL, col(0, T(BOOL)), col(1, DEC(5, 2))),
                      "operator * cannot take BOOLEAN and DECIMAL(5, 2)");
  assert_string_equal(CALL_ERROR(UPPER, col(0, T(INT64))),
                      "function UPPER expects VARCHAR, not BIGINT");
  assert_string_equal(CALL_ERROR(EQ, col(0, T(STRING)), col(1, T(INT32))),
                      "operator = cannot take VARCHAR and INT");
  assert_string_equal(CALL_ERROR(LT, col(0, T(TIMESTAMP)), col(1, T(FLOAT64))),
                      "operator < cannot take TIMESTAMP(3) and DOUBLE");
  assert_string_equal(CALL_ERROR(AND, col(0, T(BOOL)), col(1, T(INT32))),
                      "operator AND expects BOOLEAN, not INT");
  assert_string_equal(CALL_ERROR(NOT, col(0, T(STRING))), "operator NOT expects BOOLEAN, not VARCHAR");
  assert_string_equal(CALL_ERROR(LIKE, col(0, T(INT32)), lit_str("a%")),
                      "operator LIKE cannot take INT and VARCHAR");
  assert_string_equal(CALL_ERROR(COALESCE, col(0, T(INT32)), col(1, T(STRING))),
                      "function COALESCE cannot take INT and VARCHAR");
  assert_string_equal(CALL_ERROR(CONCAT, col(0, T(STRING)), col(1, T(INT32))),
                      "function CONCAT expects VARCHAR, not INT");
  assert_string_equal(CALL_ERROR(ABS, col(0, T(STRING))),
                      "function ABS expects a numeric argument, not VARCHAR");
  assert_string_equal(CALL_ERROR(NEG, col(0, T(BOOL))),
                      "operator unary - expects a numeric argument, not BOOLEAN");
  assert_string_equal(CALL_ERROR(SUBSTRING, col(0, T(STRING)), col(1, T(FLOAT64))),
                      "function SUBSTRING expects an integer as argument 2, not DOUBLE");
  assert_string_equal(CALL_ERROR(SUBSTRING, col(0, T(STRING))),
                      "function SUBSTRING takes 2 to 3 arguments, not 1");
  assert_string_equal(CALL_ERROR(ADD, col(0, T(INT32))), "operator + takes 2 arguments, not 1");
  assert_string_equal(CALL_ERROR(AND, col(0, T(BOOL))),
                      "operator AND takes at least 2 arguments, not 1");
  assert_string_equal(CALL_ERROR(ROUND, col(0, DEC(10, 3)), col(1, T(INT32))),
                      "function ROUND needs a constant number of decimal places for DECIMAL(10, 3)");

  ck_error_t err;
  ck_error_clear(&err);
  assert_null(ck_expr_cast(&A, col(0, T(BOOL)), T(TIMESTAMP), &err));
  assert_int_equal(err.code, CK_ETYPE);
  assert_string_equal(err.message, "cannot cast BOOLEAN to TIMESTAMP(3)");

  ck_error_clear(&err);
  ck_expr_t *whens[] = {col(0, T(BOOL))}, *thens[] = {lit_i32(1)};
  assert_null(ck_expr_case(&A, whens, thens, 1, lit_str("x"), &err));
  assert_int_equal(err.code, CK_ETYPE);
  assert_string_equal(err.message, "CASE cannot mix INT and VARCHAR in its results");

  ck_error_clear(&err);
  ck_expr_t *bad_whens[] = {col(0, T(INT32))};
  assert_null(ck_expr_case(&A, bad_whens, thens, 1, NULL, &err));
  assert_string_equal(err.message, "CASE expects BOOLEAN conditions after WHEN, not INT");

  ck_error_clear(&err);
  ck_expr_t *list[] = {lit_i32(1), lit_str("a")};
  assert_null(ck_expr_in(&A, col(0, T(INT32)), list, 2, true, &err));
  assert_string_equal(err.message, "operator NOT IN cannot take INT and VARCHAR");

  ck_error_clear(&err);
  assert_null(ck_expr_coerce(&A, col(0, T(BOOL)), T(TIMESTAMP), &err));
  assert_string_equal(err.message, "cannot convert BOOLEAN to TIMESTAMP(3)");
}

static void test_is_constant(void **state) {
  assert_true(ck_expr_is_constant(CALL(UPPER, lit_str("a"))));
  assert_true(ck_expr_is_constant(CALL(ADD, lit_i32(1), CALL(ABS, lit_i32(-2)))));
  assert_false(ck_expr_is_constant(CALL(ADD, lit_i32(1), CALL(ABS, col(0, T(INT32))))));
  assert_false(ck_expr_is_constant(col(0, T(INT32))));
  assert_true(ck_expr_is_constant(lit_null()));
}

static void test_to_string(void **state) {
  ck_error_t err;
  ck_error_clear(&err);
  ck_expr_t *whens[] = {CALL(GT, col(0, T(INT32)), lit_i32(1))};
  ck_expr_t *thens[] = {lit_str("it's")};
  ck_expr_t *c = ck_expr_case(&A, whens, thens, 1, lit_str("b"), &err);
  assert_non_null(c);
  assert_string_equal(to_text(c), "CASE WHEN ($0 > 1) THEN 'it''s' ELSE 'b' END");

  ck_expr_t *list[] = {lit_i32(1), lit_null()};
  ck_expr_t *in = ck_expr_in(&A, col(2, T(INT32)), list, 2, true, &err);
  assert_string_equal(to_text(in), "($2 NOT IN (1, NULL))");

  ck_expr_t *like = CALL(LIKE, col(1, T(STRING)), lit_str("a%"));
  like->negated = true;
  assert_string_equal(to_text(like), "($1 NOT LIKE 'a%')");
  assert_string_equal(to_text(CALL(NEG, col(0, T(INT32)))), "(- $0)");
  assert_string_equal(to_text(CALL(IS_NULL, col(0, T(INT32)))), "($0 IS NULL)");
  assert_string_equal(to_text(CALL(NOT, CALL(AND, col(0, T(BOOL)), lit_bool(true)))),
                      "(NOT ($0 AND TRUE))");
  assert_string_equal(to_text(CALL(SUBSTRING, col(0, T(STRING)), lit_i32(2), lit_i32(3))),
                      "SUBSTRING($0, 2, 3)");
  assert_string_equal(to_text(cast(col(3, T(INT32)), DEC(12, 2))), "CAST($3 AS DECIMAL(12, 2))");
  assert_string_equal(to_text(CALL(MOD, col(0, T(INT32)), lit_dec("2.50", 3, 2))),
                      "MOD(CAST($0 AS DECIMAL(10, 0)), 2.50)");
}

/* ---- arithmetic ------------------------------------------------------------------------- */

static void test_int_arithmetic_with_nulls(void **state) {
  static const ck_fn_t fns[] = {CK_FN_ADD, CK_FN_SUB, CK_FN_MUL, CK_FN_DIV, CK_FN_MOD};
  static const char *want[] = {
      "3|NULL|NULL|-5|-9", "-1|NULL|NULL|-9|-5", "2|NULL|NULL|-14|14",
      "0|NULL|NULL|-3|3", "1|NULL|NULL|-1|-1",
  };
  for (size_t f = 0; f < CK_ARRAY_LEN(fns); f++) {
    ck_type_t ty = f % 2 ? T(INT64) : T(INT32);
    ck_batch_t *b = batch2(ty, ty);
    FILL(b, 0, "1", NULL, "7", "-7", "-7");
    FILL(b, 1, "2", "3", NULL, "2", "-2");
    ck_expr_t *args[] = {col(0, ty), col(1, ty)};
    assert_string_equal(eval_text(callv(fns[f], 2, args), b), want[f]);
  }
}

static void test_division_by_zero_is_null(void **state) {
  ck_batch_t *b = batch2(T(INT32), T(INT32));
  FILL(b, 0, "7", "7", "-7");
  FILL(b, 1, "0", "2", "0");
  assert_string_equal(eval_text(CALL(DIV, col(0, T(INT32)), col(1, T(INT32))), b), "NULL|3|NULL");

  b = batch2(T(INT64), T(INT64));
  FILL(b, 0, "7", "7");
  FILL(b, 1, "0", "-2");
  assert_string_equal(eval_text(CALL(MOD, col(0, T(INT64)), col(1, T(INT64))), b), "NULL|1");

  b = batch2(T(FLOAT64), T(FLOAT64));
  FILL(b, 0, "1.5", "1.5", "-1");
  FILL(b, 1, "0", "0.5", "0");
  assert_string_equal(eval_text(CALL(DIV, col(0, T(FLOAT64)), col(1, T(FLOAT64))), b),
                      "NULL|3|NULL");

  b = batch1(DEC(10, 2));
  FILL(b, 0, "1.00", "5.50");
  assert_string_equal(eval_text(CALL(DIV, col(0, DEC(10, 2)), lit_dec("0", 3, 1)), b), "NULL|NULL");

  b = batch1(DEC(10, 2));
  FILL(b, 0, "7.50", "-7.50");
  assert_string_equal(eval_text(CALL(MOD, col(0, DEC(10, 2)), lit_i32(0)), b), "NULL|NULL");

  /* a constant zero divisor is NULL for every row */
  b = batch1(T(INT32));
  FILL(b, 0, "1", "2");
  assert_string_equal(eval_text(CALL(DIV, col(0, T(INT32)), lit_i32(0)), b), "NULL|NULL");
}

static void test_integer_overflow_is_an_error(void **state) {
  ck_batch_t *b = batch1(T(INT32));
  FILL(b, 0, "1", "2147483647");
  assert_string_equal(eval_error(CALL(ADD, col(0, T(INT32)), lit_i32(1)), b),
                      "could not compute 2147483647 + 1: integer overflow, the result does not fit in INT");

  b = batch1(T(INT64));
  FILL(b, 0, "4611686018427387904");
  const char *m = eval_error(CALL(MUL, col(0, T(INT64)), lit_i32(2)), b);
  assert_non_null(strstr(m, "4611686018427387904 * 2"));
  assert_non_null(strstr(m, "BIGINT"));

  b = batch1(T(INT32));
  FILL(b, 0, "-2147483648");
  m = eval_error(CALL(SUB, col(0, T(INT32)), lit_i32(1)), b);
  assert_non_null(strstr(m, "-2147483648 - 1"));

  b = batch1(T(INT32));
  FILL(b, 0, "-2147483648");
  assert_string_equal(eval_error(CALL(NEG, col(0, T(INT32))), b),
                      "could not compute -(-2147483648): integer overflow, the result does not fit in INT");

  b = batch1(T(INT64));
  FILL(b, 0, "-9223372036854775808");
  m = eval_error(CALL(ABS, col(0, T(INT64))), b);
  assert_non_null(strstr(m, "ABS(-9223372036854775808)"));

  b = batch1(T(INT32));
  FILL(b, 0, "-2147483648");
  m = eval_error(CALL(DIV, col(0, T(INT32)), lit_i32(-1)), b);
  assert_non_null(strstr(m, "-2147483648 / -1"));

  /* MOD(MIN, -1) is 0, not an overflow */
  b = batch1(T(INT32));
  FILL(b, 0, "-2147483648");
  assert_string_equal(eval_text(CALL(MOD, col(0, T(INT32)), lit_i32(-1)), b), "0");
}

static void test_overflow_on_null_or_unselected_rows_is_no_error(void **state) {
  /* the overflowing value sits under a NULL: the row is NULL, no error */
  ck_batch_t *b = batch2(T(INT32), T(INT32));
  FILL(b, 0, "2147483647", "5");
  FILL(b, 1, NULL, "1");
  ck_col_t *c0 = &b->cols[0];
  assert_int_equal(ck_col_i32(c0, 0), 2147483647);
  assert_string_equal(eval_text(CALL(ADD, col(0, T(INT32)), col(1, T(INT32))), b), "NULL|6");

  /* the overflowing row is outside the CASE branch that computes it */
  b = batch1(T(INT32));
  FILL(b, 0, "2147483647", "5");
  ck_error_t err;
  ck_error_clear(&err);
  ck_expr_t *whens[] = {CALL(LT, col(0, T(INT32)), lit_i32(100))};
  ck_expr_t *thens[] = {CALL(ADD, col(0, T(INT32)), lit_i32(1))};
  ck_expr_t *c = ck_expr_case(&A, whens, thens, 1, NULL, &err);
  assert_string_equal(eval_text(c, b), "NULL|6");
}

static void test_float_arithmetic(void **state) {
  ck_batch_t *b = batch2(T(FLOAT64), T(FLOAT64));
  FILL(b, 0, "0.1", "-2.5", "1e308");
  FILL(b, 1, "0.2", "4", "10");
  assert_string_equal(eval_text(CALL(ADD, col(0, T(FLOAT64)), col(1, T(FLOAT64))), b),
                      "0.30000000000000004|1.5|1e+308");
  b = batch2(T(FLOAT64), T(FLOAT64));
  FILL(b, 0, "0.1", "-2.5", "1e307");
  FILL(b, 1, "0.2", "4", "10");
  assert_string_equal(eval_text(CALL(MUL, col(0, T(FLOAT64)), col(1, T(FLOAT64))), b),
                      "0.020000000000000004|-10|1e+308");
  b = batch2(T(FLOAT64), T(FLOAT64));
  FILL(b, 0, "7.5", "-7.5");
  FILL(b, 1, "2", "2");
  assert_string_equal(eval_text(CALL(MOD, col(0, T(FLOAT64)), col(1, T(FLOAT64))), b), "1.5|-1.5");

  b = batch2(T(FLOAT32), T(FLOAT32));
  FILL(b, 0, "1.5", "-0.25");
  FILL(b, 1, "0.25", "0.5");
  ck_expr_t *e = CALL(SUB, col(0, T(FLOAT32)), col(1, T(FLOAT32)));
  assert_type(e, T(FLOAT32));
  assert_string_equal(eval_text(e, b), "1.25|-0.75");

  /* INT mixed with DOUBLE computes in DOUBLE: 7 / 2.0 is 3.5, not 3 */
  b = batch1(T(INT32));
  FILL(b, 0, "7");
  assert_string_equal(eval_text(CALL(DIV, col(0, T(INT32)), lit_f64(2.0)), b), "3.5");
}

static void test_decimal_arithmetic_is_exact(void **state) {
  ck_batch_t *b = batch2(DEC(10, 2), DEC(10, 2));
  FILL(b, 0, "0.10", "1.05", "-3.00", "99999999.99");
  FILL(b, 1, "0.20", "2.50", "1.01", "0.01");
  ck_expr_t *e = CALL(ADD, col(0, DEC(10, 2)), col(1, DEC(10, 2)));
  assert_string_equal(tname(e->type), "DECIMAL(11, 2)");
  assert_string_equal(eval_text(e, b), "0.30|3.55|-1.99|100000000.00");

  b = batch2(DEC(10, 2), DEC(10, 2));
  FILL(b, 0, "0.10", "1.05", "-3.00");
  FILL(b, 1, "0.20", "2.50", "1.01");
  e = CALL(MUL, col(0, DEC(10, 2)), col(1, DEC(10, 2)));
  assert_string_equal(tname(e->type), "DECIMAL(20, 4)");
  assert_string_equal(eval_text(e, b), "0.0200|2.6250|-3.0300");

  /* division: scale max(6, s1 + p2 + 1) = 13, rounded half away from zero */
  b = batch2(DEC(10, 2), DEC(10, 2));
  FILL(b, 0, "1.00", "2.00", "-2.00", "10.00");
  FILL(b, 1, "3.00", "3.00", "3.00", "4.00");
  e = CALL(DIV, col(0, DEC(10, 2)), col(1, DEC(10, 2)));
  assert_string_equal(eval_text(e, b), "0.3333333333333|0.6666666666667|-0.6666666666667|2.5000000000000");

  /* mixed scales are aligned: 1.5 - 0.25 */
  b = batch2(DEC(5, 1), DEC(5, 2));
  FILL(b, 0, "1.5", "-1.5");
  FILL(b, 1, "0.25", "0.25");
  assert_string_equal(eval_text(CALL(SUB, col(0, DEC(5, 1)), col(1, DEC(5, 2))), b),
                      "1.25|-1.75");

  /* INT + DECIMAL */
  b = batch1(T(INT32));
  FILL(b, 0, "1", "-4");
  e = CALL(ADD, col(0, T(INT32)), lit_dec("2.50", 5, 2));
  assert_string_equal(eval_text(e, b), "3.50|-1.50");

  /* MOD keeps the dividend's sign */
  b = batch1(DEC(2, 1));
  FILL(b, 0, "7.5", "-7.5");
  e = CALL(MOD, col(0, DEC(2, 1)), lit_i32(2));
  assert_string_equal(tname(e->type), "DECIMAL(2, 1)");
  assert_string_equal(eval_text(e, b), "1.5|-1.5");
}

static void test_decimal_wide_intermediates(void **state) {
  /* the exact product needs more than 128 bits; the rounded result fits DECIMAL(38, 6) */
  ck_batch_t *b = batch2(DEC(38, 10), DEC(38, 10));
  FILL(b, 0, "12345678901234567890.1234567890", "-12345678901234567890.1234567890");
  FILL(b, 1, "2.0000000000", "2.0000000000");
  ck_expr_t *e = CALL(MUL, col(0, DEC(38, 10)), col(1, DEC(38, 10)));
  assert_string_equal(tname(e->type), "DECIMAL(38, 6)");
  assert_string_equal(eval_text(e, b),
                      "24691357802469135780.246914|-24691357802469135780.246914");

  /* the scaled dividend needs more than 128 bits */
  b = batch2(DEC(38, 0), DEC(2, 0));
  FILL(b, 0, "1000000000000000000000000000000000");
  FILL(b, 1, "70");
  e = CALL(DIV, col(0, DEC(38, 0)), col(1, DEC(2, 0)));
  assert_string_equal(tname(e->type), "DECIMAL(38, 6)");
  assert_string_equal(eval_text(e, b), "14285714285714285714285714285714.285714");

  /* sums whose aligned operands overflow 128 bits */
  b = batch2(DEC(38, 20), DEC(38, 0));
  FILL(b, 0, "1.00000050000000000000");
  FILL(b, 1, "12345678901234567890123456789012");
  e = CALL(ADD, col(0, DEC(38, 20)), col(1, DEC(38, 0)));
  assert_string_equal(tname(e->type), "DECIMAL(38, 6)");
  assert_string_equal(eval_text(e, b), "12345678901234567890123456789013.000001");
}

static void test_decimal_rounds_exact_halves_away_from_zero(void **state) {
  /* product fits 128 bits; two digits are dropped: 0.75e-18 → 1e-18 */
  ck_batch_t *b = batch2(DEC(20, 10), DEC(20, 10));
  FILL(b, 0, "0.0000000015", "-0.0000000015", "0.0000000014");
  FILL(b, 1, "0.0000000005", "0.0000000005", "0.0000000001");
  ck_expr_t *e = CALL(MUL, col(0, DEC(20, 10)), col(1, DEC(20, 10)));
  assert_string_equal(tname(e->type), "DECIMAL(38, 18)");
  assert_string_equal(eval_text(e, b),
                      "0.000000000000000001|-0.000000000000000001|0.000000000000000000");

  /* quotient exactly halfway: 1/128 = 0.0078125 */
  b = batch2(DEC(10, 0), DEC(3, 0));
  FILL(b, 0, "1", "-1", "1");
  FILL(b, 1, "128", "128", "-128");
  e = CALL(DIV, col(0, DEC(10, 0)), col(1, DEC(3, 0)));
  assert_string_equal(tname(e->type), "DECIMAL(16, 6)");
  assert_string_equal(eval_text(e, b), "0.007813|-0.007813|-0.007813");

  /* the same on the 256-bit path: 10^33 / 2^40 ends in …0390625 */
  b = batch2(DEC(38, 0), DEC(13, 0));
  FILL(b, 0, "1000000000000000000000000000000000", "-1000000000000000000000000000000000");
  FILL(b, 1, "1099511627776", "1099511627776");
  e = CALL(DIV, col(0, DEC(38, 0)), col(1, DEC(13, 0)));
  assert_string_equal(tname(e->type), "DECIMAL(38, 6)");
  assert_string_equal(eval_text(e, b), "909494701772928237915.039063|-909494701772928237915.039063");
}

static void test_decimal_overflow_is_an_error(void **state) {
  ck_batch_t *b = batch2(DEC(38, 0), DEC(38, 0));
  FILL(b, 0, "10000000000000000000000000000000000000");
  FILL(b, 1, "100");
  const char *m = eval_error(CALL(MUL, col(0, DEC(38, 0)), col(1, DEC(38, 0))), b);
  assert_string_equal(m, "could not compute 10000000000000000000000000000000000000 * 100: decimal "
                         "overflow, the result does not fit in DECIMAL(38, 0)");

  b = batch2(DEC(38, 0), DEC(38, 0));
  FILL(b, 0, "99999999999999999999999999999999999999");
  FILL(b, 1, "1");
  m = eval_error(CALL(ADD, col(0, DEC(38, 0)), col(1, DEC(38, 0))), b);
  assert_non_null(strstr(m, "decimal overflow"));
}

/* ---- comparisons and logic -------------------------------------------------------------- */

static void test_comparisons_over_types(void **state) {
  static const ck_fn_t fns[] = {CK_FN_EQ, CK_FN_NE, CK_FN_LT, CK_FN_LE, CK_FN_GT, CK_FN_GE};
  static const char *want[] = {
      "FALSE|TRUE|FALSE|NULL", "TRUE|FALSE|TRUE|NULL", "TRUE|FALSE|FALSE|NULL",
      "TRUE|TRUE|FALSE|NULL",  "FALSE|FALSE|TRUE|NULL", "FALSE|TRUE|TRUE|NULL",
  };
  static const struct {
    ck_type_t t;
    const char *a[4], *b[4];
  } data[] = {
      {CK_TYPE(CK_T_INT32), {"1", "5", "9", NULL}, {"2", "5", "-9", "1"}},
      {CK_TYPE(CK_T_INT64), {"1", "5", "9", "1"}, {"2", "5", "-9", NULL}},
      {CK_TYPE(CK_T_FLOAT64), {"1.5", "5", "9", NULL}, {"2", "5", "-9", "1"}},
      {CK_TYPE(CK_T_STRING), {"abc", "b", "ba", NULL}, {"abd", "b", "b", "x"}},
      {{CK_T_DECIMAL, 10, 2}, {"1.10", "5.00", "9.99", NULL}, {"1.11", "5.00", "-9.99", "1"}},
      {CK_TYPE(CK_T_TIMESTAMP),
       {"2024-01-01 00:00:00", "2024-01-02", "2024-01-03", NULL},
       {"2024-01-01 00:00:00.001", "2024-01-02", "2024-01-02 23:59:59.999", "2024-01-01"}},
  };
  for (size_t d = 0; d < CK_ARRAY_LEN(data); d++) {
    for (size_t f = 0; f < CK_ARRAY_LEN(fns); f++) {
      ck_batch_t *b = batch2(data[d].t, data[d].t);
      fill(b, 0, data[d].a, 4);
      fill(b, 1, data[d].b, 4);
      ck_expr_t *args[] = {col(0, data[d].t), col(1, data[d].t)};
      const char *got = eval_text(callv(fns[f], 2, args), b);
      if (strcmp(got, want[f]) != 0)
        fail_msg("%s %s: got %s, want %s", tname(data[d].t), ck_fn_name(fns[f]), got, want[f]);
    }
  }
}

static void test_comparisons_coerce_operands(void **state) {
  /* DECIMAL(10,2) vs DECIMAL(5,1): 1.50 = 1.5 */
  ck_batch_t *b = batch2(DEC(10, 2), DEC(5, 1));
  FILL(b, 0, "1.50", "1.55");
  FILL(b, 1, "1.5", "1.5");
  assert_string_equal(eval_text(CALL(EQ, col(0, DEC(10, 2)), col(1, DEC(5, 1))), b), "TRUE|FALSE");

  /* INT vs DOUBLE */
  b = batch1(T(INT32));
  FILL(b, 0, "1", "2");
  assert_string_equal(eval_text(CALL(LT, col(0, T(INT32)), lit_f64(1.5)), b), "TRUE|FALSE");

  /* TIMESTAMP vs BIGINT epoch ms */
  b = batch2(T(TIMESTAMP), T(INT64));
  FILL(b, 0, "1970-01-01 00:00:01", "1970-01-01 00:00:01");
  FILL(b, 1, "1000", "999");
  assert_string_equal(eval_text(CALL(EQ, col(0, T(TIMESTAMP)), col(1, T(INT64))), b), "TRUE|FALSE");

  /* BOOL = BOOL, and a constant on the left */
  b = batch1(T(BOOL));
  FILL(b, 0, "true", "false", NULL);
  assert_string_equal(eval_text(CALL(EQ, lit_bool(true), col(0, T(BOOL))), b), "TRUE|FALSE|NULL");

  /* comparison with a bare NULL is NULL */
  b = batch1(T(INT32));
  FILL(b, 0, "1", "2");
  assert_string_equal(eval_text(CALL(EQ, col(0, T(INT32)), lit_null()), b), "NULL|NULL");
}

/* a/b over the nine combinations of TRUE, FALSE, NULL */
static ck_batch_t *truth_batch(void) {
  ck_batch_t *b = batch2(T(BOOL), T(BOOL));
  FILL(b, 0, "true", "true", "true", "false", "false", "false", NULL, NULL, NULL);
  FILL(b, 1, "true", "false", NULL, "true", "false", NULL, "true", "false", NULL);
  return b;
}

static void test_three_valued_logic_truth_tables(void **state) {
  ck_expr_t *a = col(0, T(BOOL)), *b = col(1, T(BOOL));
  assert_string_equal(eval_text(CALL(AND, a, b), truth_batch()),
                      "TRUE|FALSE|NULL|FALSE|FALSE|FALSE|NULL|FALSE|NULL");
  assert_string_equal(eval_text(CALL(OR, a, b), truth_batch()),
                      "TRUE|TRUE|TRUE|TRUE|FALSE|NULL|TRUE|NULL|NULL");
  assert_string_equal(eval_text(CALL(NOT, a), truth_batch()),
                      "FALSE|FALSE|FALSE|TRUE|TRUE|TRUE|NULL|NULL|NULL");
  assert_string_equal(eval_text(CALL(IS_TRUE, b), truth_batch()),
                      "TRUE|FALSE|FALSE|TRUE|FALSE|FALSE|TRUE|FALSE|FALSE");
  assert_string_equal(eval_text(CALL(IS_FALSE, b), truth_batch()),
                      "FALSE|TRUE|FALSE|FALSE|TRUE|FALSE|FALSE|TRUE|FALSE");
  assert_string_equal(eval_text(CALL(IS_NULL, b), truth_batch()),
                      "FALSE|FALSE|TRUE|FALSE|FALSE|TRUE|FALSE|FALSE|TRUE");
  assert_string_equal(eval_text(CALL(IS_NOT_NULL, a), truth_batch()),
                      "TRUE|TRUE|TRUE|TRUE|TRUE|TRUE|FALSE|FALSE|FALSE");
  /* three operands, and constants on either side */
  assert_string_equal(eval_text(CALL(AND, a, b, lit_bool(true)), truth_batch()),
                      "TRUE|FALSE|NULL|FALSE|FALSE|FALSE|NULL|FALSE|NULL");
  assert_string_equal(eval_text(CALL(OR, lit_null(), a), truth_batch()),
                      "TRUE|TRUE|TRUE|NULL|NULL|NULL|NULL|NULL|NULL");
  assert_string_equal(eval_text(CALL(AND, lit_bool(false), b), truth_batch()),
                      "FALSE|FALSE|FALSE|FALSE|FALSE|FALSE|FALSE|FALSE|FALSE");
}

static void test_and_or_skip_decided_rows(void **state) {
  /* CAST('abc' AS INT) fails, but not on rows AND has already decided */
  ck_expr_t *x = col(0, T(INT32)), *s = col(1, T(STRING));
  ck_expr_t *guarded = CALL(AND, CALL(GT, x, lit_i32(0)), CALL(GT, cast(s, T(INT32)), lit_i32(1)));
  ck_batch_t *b = batch2(T(INT32), T(STRING));
  FILL(b, 0, "0", "2", "3");
  FILL(b, 1, "abc", "5", "1");
  assert_string_equal(eval_text(guarded, b), "FALSE|TRUE|FALSE");

  ck_expr_t *or = CALL(OR, CALL(LE, x, lit_i32(0)), CALL(GT, cast(s, T(INT32)), lit_i32(1)));
  b = batch2(T(INT32), T(STRING));
  FILL(b, 0, "0", "2");
  FILL(b, 1, "abc", "5");
  assert_string_equal(eval_text(or, b), "TRUE|TRUE");

  /* without the guard the same row is an error that names the value */
  b = batch2(T(INT32), T(STRING));
  FILL(b, 0, "0", "2");
  FILL(b, 1, "abc", "5");
  assert_string_equal(eval_error(CALL(GT, cast(s, T(INT32)), lit_i32(1)), b),
                      "could not cast 'abc' to INT");
}

/* ---- CASE, COALESCE, NULLIF, IN ---------------------------------------------------------- */

static void test_case(void **state) {
  ck_error_t err;
  ck_error_clear(&err);
  ck_expr_t *x = col(0, T(INT32));
  ck_expr_t *whens[] = {CALL(LT, x, lit_i32(0)), CALL(EQ, x, lit_i32(0))};
  ck_expr_t *thens[] = {lit_str("neg"), lit_str("zero")};
  ck_expr_t *c = ck_expr_case(&A, whens, thens, 2, lit_str("pos"), &err);
  assert_non_null(c);
  assert_type(c, T(STRING));
  ck_batch_t *b = batch1(T(INT32));
  FILL(b, 0, "-5", "0", "7", NULL);
  assert_string_equal(eval_text(c, b), "neg|zero|pos|pos"); /* NULL < 0 is not TRUE */

  /* no ELSE: NULL */
  c = ck_expr_case(&A, whens, thens, 2, NULL, &err);
  b = batch1(T(INT32));
  FILL(b, 0, "-5", "0", "7");
  assert_string_equal(eval_text(c, b), "neg|zero|NULL");

  /* results of different numeric types meet at the common type */
  ck_expr_t *numthens[] = {lit_i32(1), col(0, T(INT32))};
  c = ck_expr_case(&A, whens, numthens, 2, lit_f64(0.5), &err);
  assert_non_null(c);
  assert_type(c, T(FLOAT64));
  b = batch1(T(INT32));
  FILL(b, 0, "-5", "0", "7");
  assert_string_equal(eval_text(c, b), "1|0|0.5");

  /* the first matching branch wins; a branch only runs where it was chosen */
  ck_expr_t *w2[] = {CALL(NE, x, lit_i32(0)), lit_bool(true)};
  ck_expr_t *t2[] = {CALL(DIV, lit_i32(100), x), lit_i32(-1)};
  c = ck_expr_case(&A, w2, t2, 2, NULL, &err);
  b = batch1(T(INT32));
  FILL(b, 0, "4", "0", NULL);
  assert_string_equal(eval_text(c, b), "25|-1|-1");

  ck_expr_t *s = col(1, T(STRING));
  ck_expr_t *w3[] = {CALL(LIKE, s, lit_str("#%"))};
  ck_expr_t *t3[] = {lit_i32(0)};
  c = ck_expr_case(&A, w3, t3, 1, cast(s, T(INT32)), &err);
  b = batch2(T(INT32), T(STRING));
  FILL(b, 0, "1", "2");
  FILL(b, 1, "#x", "42");
  assert_string_equal(eval_text(c, b), "0|42");
}

static void test_coalesce_and_nullif(void **state) {
  ck_batch_t *b = batch2(T(INT32), T(INT64));
  FILL(b, 0, "1", NULL, NULL);
  FILL(b, 1, "10", "20", NULL);
  ck_expr_t *e = CALL(COALESCE, col(0, T(INT32)), col(1, T(INT64)), lit_i32(-1));
  assert_type(e, T(INT64));
  assert_string_equal(eval_text(e, b), "1|20|-1");

  b = batch1(T(STRING));
  FILL(b, 0, "a", NULL);
  assert_string_equal(eval_text(CALL(COALESCE, lit_null(), col(0, T(STRING))), b), "a|NULL");

  /* later arguments only run where the earlier ones were NULL */
  b = batch2(T(INT32), T(STRING));
  FILL(b, 0, "1", "2");
  FILL(b, 1, "abc", "x");
  assert_string_equal(eval_text(CALL(COALESCE, col(0, T(INT32)), cast(col(1, T(STRING)), T(INT32))), b),
                      "1|2");

  b = batch2(T(INT32), T(INT32));
  FILL(b, 0, "1", "2", NULL, "4");
  FILL(b, 1, "1", "3", "3", NULL);
  e = CALL(NULLIF, col(0, T(INT32)), col(1, T(INT32)));
  assert_string_equal(eval_text(e, b), "NULL|2|NULL|4");

  b = batch1(T(STRING));
  FILL(b, 0, "", "x");
  assert_string_equal(eval_text(CALL(NULLIF, col(0, T(STRING)), lit_str("")), b), "NULL|x");
}

static void test_in_list_null_semantics(void **state) {
  ck_error_t err;
  ck_error_clear(&err);
  ck_expr_t *x = col(0, T(INT32));
  ck_expr_t *plain[] = {lit_i32(1), lit_i32(2)};
  ck_expr_t *with_null[] = {lit_i32(1), lit_null()};
  ck_batch_t *b = batch1(T(INT32));
  FILL(b, 0, "1", "3", NULL);
  assert_string_equal(eval_text(ck_expr_in(&A, x, plain, 2, false, &err), b), "TRUE|FALSE|NULL");
  b = batch1(T(INT32));
  FILL(b, 0, "1", "3", NULL);
  assert_string_equal(eval_text(ck_expr_in(&A, x, with_null, 2, false, &err), b), "TRUE|NULL|NULL");
  b = batch1(T(INT32));
  FILL(b, 0, "1", "3", NULL);
  assert_string_equal(eval_text(ck_expr_in(&A, x, plain, 2, true, &err), b), "FALSE|TRUE|NULL");
  b = batch1(T(INT32));
  FILL(b, 0, "1", "3", NULL);
  assert_string_equal(eval_text(ck_expr_in(&A, x, with_null, 2, true, &err), b), "FALSE|NULL|NULL");

  /* strings, and a column in the list; the list is coerced to the common type */
  ck_expr_t *slist[] = {lit_str("b"), col(1, T(STRING))};
  b = batch2(T(STRING), T(STRING));
  FILL(b, 0, "a", "b", "c");
  FILL(b, 1, "a", "z", "z");
  assert_string_equal(eval_text(ck_expr_in(&A, col(0, T(STRING)), slist, 2, false, &err), b),
                      "TRUE|TRUE|FALSE");
  ck_expr_t *dlist[] = {lit_f64(1.5), lit_i32(2)};
  ck_expr_t *in = ck_expr_in(&A, x, dlist, 2, false, &err);
  assert_type(in->args[0], T(FLOAT64));
  b = batch1(T(INT32));
  FILL(b, 0, "2", "1");
  assert_string_equal(eval_text(in, b), "TRUE|FALSE");
}

/* ---- strings ---------------------------------------------------------------------------- */

static const char *like(const char *s, const char *pattern, bool negated) {
  ck_batch_t *b = batch1(T(STRING));
  FILL(b, 0, s);
  ck_expr_t *e = CALL(LIKE, col(0, T(STRING)), lit_str(pattern));
  e->negated = negated;
  return eval_text(e, b);
}

static void test_like_patterns(void **state) {
  static const struct {
    const char *s, *p;
    bool match;
  } cases[] = {
      {"abc", "abc", true},     {"abc", "ab", false},      {"abc", "a%", true},
      {"abc", "b%", false},     {"abc", "%c", true},       {"abc", "%b", false},
      {"abc", "%b%", true},     {"abc", "%d%", false},     {"abc", "a_c", true},
      {"abc", "a_", false},     {"abc", "___", true},      {"abc", "____", false},
      {"abc", "%", true},       {"", "%", true},           {"", "", true},
      {"", "_", false},         {"abc", "", false},        {"aXbXc", "a%b%c", true},
      {"aXbXd", "a%b%c", false}, {"mississippi", "%iss%ppi", true},
      {"mississippi", "m%s_s%i", true}, {"abcab", "%ab", true},
      {"caf\xc3\xa9", "caf_", true},     /* '_' is one code point, not one byte */
      {"caf\xc3\xa9", "caf__", false},   {"\xc3\xa9t\xc3\xa9", "_t_", true},
      {"100%", "100%", true},   {"a%b", "a%%b", true},
  };
  for (size_t i = 0; i < CK_ARRAY_LEN(cases); i++) {
    const char *got = like(cases[i].s, cases[i].p, false);
    const char *want = cases[i].match ? "TRUE" : "FALSE";
    if (strcmp(got, want) != 0) fail_msg("'%s' LIKE '%s': got %s", cases[i].s, cases[i].p, got);
  }
  assert_string_equal(like("abc", "a%", true), "FALSE");
  assert_string_equal(like("abc", "x%", true), "TRUE");

  /* pattern from a column, NULLs on either side */
  ck_batch_t *b = batch2(T(STRING), T(STRING));
  FILL(b, 0, "abc", "abc", NULL, "xyz");
  FILL(b, 1, "_b_", "%d", "%", NULL);
  assert_string_equal(eval_text(CALL(LIKE, col(0, T(STRING)), col(1, T(STRING))), b),
                      "TRUE|FALSE|NULL|NULL");
}

static const char *str1(ck_expr_t *e, const char *s) {
  ck_batch_t *b = batch1(T(STRING));
  FILL(b, 0, s);
  return eval_text(e, b);
}

static void test_string_functions(void **state) {
  ck_expr_t *s = col(0, T(STRING));
  const char *hello = "h\xc3\xa9llo w\xc3\xb6rld"; /* héllo wörld: 11 code points, 13 bytes */
  assert_string_equal(str1(CALL(UPPER, s), hello), "H\xc3\x89LLO W\xc3\x96RLD"); /* HÉLLO WÖRLD */
  assert_string_equal(str1(CALL(LOWER, s), "MiXeD 123"), "mixed 123");
  assert_string_equal(str1(CALL(CHAR_LENGTH, s), hello), "11");
  assert_string_equal(str1(CALL(CHAR_LENGTH, s), ""), "0");
  assert_string_equal(str1(CALL(SUBSTRING, s, lit_i32(2), lit_i32(3)), hello), "\xc3\xa9ll");
  assert_string_equal(str1(CALL(SUBSTRING, s, lit_i32(8)), hello), "\xc3\xb6rld");
  assert_string_equal(str1(CALL(SUBSTRING, s, lit_i32(0), lit_i32(2)), hello), "h");
  assert_string_equal(str1(CALL(SUBSTRING, s, lit_i32(-1), lit_i32(4)), hello), "h\xc3\xa9");
  assert_string_equal(str1(CALL(SUBSTRING, s, lit_i32(20)), hello), "");
  assert_string_equal(str1(CALL(SUBSTRING, s, lit_i32(2), lit_i32(0)), hello), "");
  assert_string_equal(str1(CALL(SUBSTRING, s, lit_i32(2), lit_i32(-1)), hello), "NULL");
  assert_string_equal(str1(CALL(SUBSTRING, s, lit_i64(11), lit_i64(100)), hello), "d");
  assert_string_equal(str1(CALL(CONCAT, s, lit_str("-"), s), "ab"), "ab-ab");
  assert_string_equal(str1(CALL(CONCAT, s, lit_null()), "ab"), "NULL");
  assert_string_equal(str1(CALL(TRIM, s), "  a b  "), "a b");
  assert_string_equal(str1(CALL(LTRIM, s), "  a b  "), "a b  ");
  assert_string_equal(str1(CALL(RTRIM, s), "  a b  "), "  a b");
  assert_string_equal(str1(CALL(TRIM, s), "   "), "");
  assert_string_equal(str1(CALL(TRIM, s), "\ta "), "\ta"); /* spaces only */
  assert_string_equal(str1(CALL(REPLACE, s, lit_str("a"), lit_str("bb")), "aXaXa"), "bbXbbXbb");
  assert_string_equal(str1(CALL(REPLACE, s, lit_str("aa"), lit_str("")), "aaaaa"), "a");
  assert_string_equal(str1(CALL(REPLACE, s, lit_str(""), lit_str("x")), "abc"), "abc");
  assert_string_equal(str1(CALL(REPLACE, s, lit_str("\xc3\xa9"), lit_str("e")), hello),
                      "hello w\xc3\xb6rld");
  static const char *pieces[] = {"a", "b", "", "c", "NULL"};
  for (int k = 0; k < 5; k++)
    assert_string_equal(str1(CALL(SPLIT_INDEX, s, lit_str(","), lit_i32(k)), "a,b,,c"), pieces[k]);
  assert_string_equal(str1(CALL(SPLIT_INDEX, s, lit_str(","), lit_i32(-1)), "a,b"), "NULL");
  assert_string_equal(str1(CALL(SPLIT_INDEX, s, lit_str("::"), lit_i32(1)), "x::yy::z"), "yy");
  assert_string_equal(str1(CALL(SPLIT_INDEX, s, lit_str(","), lit_i32(0)), "abc"), "abc");
  /* Flink's edge cases: an empty string has no piece; trailing and leading delimiters leave
   * empty pieces; an empty delimiter splits at white space */
  assert_string_equal(str1(CALL(SPLIT_INDEX, s, lit_str(","), lit_i32(0)), ""), "NULL");
  assert_string_equal(str1(CALL(SPLIT_INDEX, s, lit_str(""), lit_i32(0)), ""), "NULL");
  assert_string_equal(str1(CALL(SPLIT_INDEX, s, lit_str(","), lit_i32(1)), "a,"), "");
  assert_string_equal(str1(CALL(SPLIT_INDEX, s, lit_str(","), lit_i32(2)), "a,"), "NULL");
  assert_string_equal(str1(CALL(SPLIT_INDEX, s, lit_str(","), lit_i32(0)), ",a"), "");
  assert_string_equal(str1(CALL(SPLIT_INDEX, s, lit_str(","), lit_i32(1)), ","), "");
  assert_string_equal(str1(CALL(SPLIT_INDEX, s, lit_str(","), lit_i64(INT64_MAX)), "a,b"), "NULL");
  assert_string_equal(str1(CALL(SPLIT_INDEX, s, lit_str(""), lit_i32(1)), "a b\tc"), "b");
  assert_string_equal(str1(CALL(SPLIT_INDEX, s, lit_str(""), lit_i32(2)), "a b\tc"), "c");
  assert_string_equal(str1(CALL(SPLIT_INDEX, s, lit_str(""), lit_i32(1)), "a  b"), "");
  assert_string_equal(str1(CALL(SPLIT_INDEX, s, lit_str(""), lit_i32(1)), "a\xe2\x80\x83" "b"), "b");
  assert_string_equal(str1(CALL(SPLIT_INDEX, s, lit_str(""), lit_i32(0)), "ab"), "ab");
  assert_string_equal(str1(CALL(SPLIT_INDEX, s, lit_str(""), lit_i32(1)), "ab"), "NULL");

  /* NULL propagation across the family */
  ck_batch_t *b = batch1(T(STRING));
  FILL(b, 0, NULL, "Ab");
  assert_string_equal(eval_text(CALL(UPPER, s), b), "NULL|AB");
  b = batch1(T(STRING));
  FILL(b, 0, NULL, "Ab");
  assert_string_equal(eval_text(CALL(CHAR_LENGTH, s), b), "NULL|2");
  b = batch2(T(STRING), T(INT32));
  FILL(b, 0, "abc", "abc", NULL);
  FILL(b, 1, "2", NULL, "1");
  assert_string_equal(eval_text(CALL(SUBSTRING, s, col(1, T(INT32))), b), "bc|NULL|NULL");
}

/* ---- numeric functions ------------------------------------------------------------------ */

static const char *num1(ck_type_t t, ck_expr_t *e, const char *v) {
  ck_batch_t *b = batch1(t);
  FILL(b, 0, v);
  return eval_text(e, b);
}

static void test_numeric_functions(void **state) {
  ck_expr_t *i = col(0, T(INT32)), *l = col(0, T(INT64)), *d = col(0, T(FLOAT64));
  ck_expr_t *m = col(0, DEC(6, 3));
  assert_string_equal(num1(T(INT32), CALL(ABS, i), "-5"), "5");
  assert_string_equal(num1(T(FLOAT64), CALL(ABS, d), "-2.5"), "2.5");
  assert_string_equal(num1(DEC(6, 3), CALL(ABS, m), "-2.345"), "2.345");
  assert_string_equal(num1(DEC(6, 3), CALL(NEG, m), "2.345"), "-2.345");

  /* ROUND: half away from zero */
  assert_string_equal(num1(T(FLOAT64), CALL(ROUND, d), "2.5"), "3");
  assert_string_equal(num1(T(FLOAT64), CALL(ROUND, d), "-2.5"), "-3");
  assert_string_equal(num1(T(FLOAT64), CALL(ROUND, d), "2.4999"), "2");
  assert_string_equal(num1(T(FLOAT64), CALL(ROUND, d, lit_i32(2)), "2.675"), "2.68");
  assert_string_equal(num1(T(FLOAT64), CALL(ROUND, d, lit_i32(2)), "-2.675"), "-2.68");
  assert_string_equal(num1(T(FLOAT64), CALL(ROUND, d, lit_i32(1)), "0.05"), "0.1");
  assert_string_equal(num1(T(FLOAT64), CALL(ROUND, d, lit_i32(2)), "9.999"), "10");
  assert_string_equal(num1(T(FLOAT64), CALL(ROUND, d, lit_i32(-2)), "1234.5678"), "1200");
  assert_string_equal(num1(T(FLOAT64), CALL(ROUND, d, lit_i32(-4)), "1234.5678"), "0");
  assert_string_equal(num1(T(FLOAT64), CALL(ROUND, d, lit_i32(5)), "1.5"), "1.5");
  assert_string_equal(num1(T(INT32), CALL(ROUND, i, lit_i32(-2)), "1250"), "1300");
  assert_string_equal(num1(T(INT32), CALL(ROUND, i, lit_i32(-2)), "-1249"), "-1200");
  assert_string_equal(num1(T(INT32), CALL(ROUND, i, lit_i32(1)), "17"), "17");
  assert_string_equal(num1(T(INT64), CALL(ROUND, l), "17"), "17");

  ck_expr_t *r = CALL(ROUND, m, lit_i32(2));
  assert_string_equal(tname(r->type), "DECIMAL(6, 2)");
  assert_string_equal(num1(DEC(6, 3), r, "2.345"), "2.35");
  assert_string_equal(num1(DEC(6, 3), CALL(ROUND, m, lit_i32(2)), "-2.345"), "-2.35");
  assert_string_equal(num1(DEC(6, 3), CALL(ROUND, m, lit_i32(2)), "999.995"), "1000.00");
  r = CALL(ROUND, m);
  assert_string_equal(tname(r->type), "DECIMAL(4, 0)");
  assert_string_equal(num1(DEC(6, 3), r, "-2.5"), "-3");
  r = CALL(ROUND, m, CALL(NEG, lit_i32(1)));
  assert_string_equal(tname(r->type), "DECIMAL(4, 0)");
  assert_string_equal(num1(DEC(6, 3), r, "125.000"), "130");
  assert_string_equal(tname(CALL(ROUND, m, lit_i32(5))->type), "DECIMAL(6, 3)");

  /* FLOOR / CEIL */
  assert_string_equal(num1(T(FLOAT64), CALL(FLOOR, d), "-1.5"), "-2");
  assert_string_equal(num1(T(FLOAT64), CALL(CEIL, d), "-1.5"), "-1");
  assert_string_equal(num1(T(INT32), CALL(FLOOR, i), "-7"), "-7");
  r = CALL(FLOOR, m);
  assert_string_equal(tname(r->type), "DECIMAL(4, 0)");
  assert_string_equal(num1(DEC(6, 3), r, "-1.500"), "-2");
  assert_string_equal(num1(DEC(6, 3), CALL(FLOOR, m), "1.500"), "1");
  assert_string_equal(num1(DEC(6, 3), CALL(CEIL, m), "1.001"), "2");
  assert_string_equal(num1(DEC(6, 3), CALL(CEIL, m), "-1.999"), "-1");
  assert_string_equal(num1(DEC(6, 3), CALL(CEIL, m), "3.000"), "3");

  /* POWER, SQRT → DOUBLE */
  r = CALL(POWER, i, lit_i32(10));
  assert_type(r, T(FLOAT64));
  assert_string_equal(num1(T(INT32), r, "2"), "1024");
  assert_string_equal(num1(T(FLOAT64), CALL(POWER, d, lit_f64(0.5)), "2.25"), "1.5");
  assert_string_equal(num1(T(FLOAT64), CALL(SQRT, d), "16"), "4");
  assert_string_equal(num1(DEC(6, 3), CALL(SQRT, m), "6.250"), "2.5");
}

/* One rule: no operation yields Infinity or NaN from finite operands; it is an error naming
 * the operation and its values, like integer overflow. Division by zero stays NULL. */
static void test_non_finite_results_are_errors(void **state) {
  ck_expr_t *d = col(0, T(FLOAT64)), *e = col(1, T(FLOAT64)), *f = col(0, T(FLOAT32));
  ck_batch_t *b = batch2(T(FLOAT64), T(FLOAT64));
  FILL(b, 0, "1", "1e308");
  FILL(b, 1, "2", "10");
  assert_string_equal(eval_error(CALL(MUL, d, e), b),
                      "could not compute 1e+308 * 10: floating-point overflow, the result does "
                      "not fit in DOUBLE");
  b = batch2(T(FLOAT64), T(FLOAT64));
  FILL(b, 0, "1.7976931348623157e308");
  FILL(b, 1, "1.7976931348623157e308");
  assert_string_equal(eval_error(CALL(ADD, d, e), b),
                      "could not compute 1.7976931348623157e+308 + 1.7976931348623157e+308: "
                      "floating-point overflow, the result does not fit in DOUBLE");
  b = batch2(T(FLOAT64), T(FLOAT64));
  FILL(b, 0, "-1e308");
  FILL(b, 1, "1e308");
  assert_string_equal(eval_error(CALL(SUB, d, e), b),
                      "could not compute -1e+308 - 1e+308: floating-point overflow, the result "
                      "does not fit in DOUBLE");
  b = batch2(T(FLOAT64), T(FLOAT64));
  FILL(b, 0, "1e300", "1", "0");
  FILL(b, 1, "1e-10", "0", "0");
  assert_string_equal(eval_error(CALL(DIV, d, e), b),
                      "could not compute 1e+300 / 1e-10: floating-point overflow, the result "
                      "does not fit in DOUBLE");
  b = batch2(T(FLOAT64), T(FLOAT64)); /* x / 0 and 0 / 0 are NULL, as for every type */
  FILL(b, 0, "1", "0", "-1");
  FILL(b, 1, "0", "0", "0");
  assert_string_equal(eval_text(CALL(DIV, d, e), b), "NULL|NULL|NULL");
  b = batch2(T(FLOAT32), T(FLOAT32));
  FILL(b, 0, "3e38");
  FILL(b, 1, "3e38");
  assert_string_equal(eval_error(CALL(ADD, f, col(1, T(FLOAT32))), b),
                      "could not compute 3e+38 + 3e+38: floating-point overflow, the result does "
                      "not fit in FLOAT");
  /* functions */
  b = batch1(T(FLOAT64));
  FILL(b, 0, "4", "-1.5");
  assert_string_equal(eval_error(CALL(SQRT, d), b),
                      "could not compute SQRT(-1.5): the square root of a negative number is not "
                      "a real number");
  b = batch1(T(FLOAT64));
  FILL(b, 0, "-1.5");
  assert_string_equal(eval_error(CALL(POWER, d, lit_f64(0.5)), b),
                      "could not compute POWER(-1.5, 0.5): a negative number raised to a "
                      "non-integer power is not a real number");
  b = batch1(T(FLOAT64));
  FILL(b, 0, "0");
  assert_string_equal(eval_error(CALL(POWER, d, lit_f64(-1)), b),
                      "could not compute POWER(0, -1): zero raised to a negative power is "
                      "infinite");
  b = batch1(T(FLOAT64));
  FILL(b, 0, "10");
  assert_string_equal(eval_error(CALL(POWER, d, lit_f64(400)), b),
                      "could not compute POWER(10, 400): floating-point overflow, the result "
                      "does not fit in DOUBLE");
  assert_string_equal(num1(T(FLOAT64), CALL(POWER, d, lit_f64(3)), "-2"), "-8");
  assert_string_equal(num1(T(FLOAT64), CALL(SQRT, d), "-0"), "-0");
  b = batch1(T(FLOAT64));
  FILL(b, 0, "1.7976931348623157e308");
  assert_string_equal(eval_error(CALL(ROUND, d, CALL(NEG, lit_i32(308))), b),
                      "could not compute ROUND(1.7976931348623157e+308, -308): floating-point "
                      "overflow, the result does not fit in DOUBLE");
  /* NULL and unselected rows raise nothing */
  b = batch2(T(FLOAT64), T(FLOAT64));
  FILL(b, 0, "1e308", NULL, "3");
  FILL(b, 1, NULL, "1e308", "2");
  assert_string_equal(eval_text(CALL(MUL, d, e), b), "NULL|NULL|6");
  ck_expr_t *w[] = {CALL(GE, d, lit_f64(0))}, *t[] = {CALL(SQRT, d)};
  ck_error_t err;
  ck_error_clear(&err);
  ck_expr_t *guarded = ck_expr_case(&A, w, t, 1, NULL, &err);
  assert_non_null(guarded);
  b = batch1(T(FLOAT64));
  FILL(b, 0, "-1.5", "2.25");
  assert_string_equal(eval_text(guarded, b), "NULL|1.5");
}

static void test_case_mapping_is_unicode(void **state) {
  ck_expr_t *s = col(0, T(STRING));
  assert_string_equal(str1(CALL(UPPER, s), "stra\xc3\x9f" "e"), "STRASSE"); /* straße */
  assert_string_equal(str1(CALL(LOWER, s), "\xc3\x80\xc3\x89\xc3\x8e"),   /* ÀÉÎ */
                      "\xc3\xa0\xc3\xa9\xc3\xae");
  assert_string_equal(str1(CALL(UPPER, s), "\xce\xb1\xce\xb2\xce\xb3"),   /* αβγ */
                      "\xce\x91\xce\x92\xce\x93");
  /* final sigma, as Java's toLowerCase: ΟΔΟΣ → οδος with ς at the end */
  assert_string_equal(str1(CALL(LOWER, s), "\xce\x9f\xce\x94\xce\x9f\xce\xa3"),
                      "\xce\xbf\xce\xb4\xce\xbf\xcf\x82");
  /* the root locale, not Turkish: i → I, İ → i̇ */
  assert_string_equal(str1(CALL(UPPER, s), "i"), "I");
  assert_string_equal(str1(CALL(LOWER, s), "\xc4\xb0"), "i\xcc\x87");
  /* a result longer than its argument, in a batch that grows */
  ck_batch_t *b = batch1(T(STRING));
  FILL(b, 0, "\xc3\x9f\xc3\x9f\xc3\x9f", NULL, "ab", "\xef\xac\x83"); /* ßßß, ﬃ */
  assert_string_equal(eval_text(CALL(UPPER, s), b), "SSSSSS|NULL|AB|FFI");
  assert_string_equal(str1(CALL(UPPER, s), "\xf0\x9f\x98\x80 \xc3\xa9"), "\xf0\x9f\x98\x80 \xc3\x89");
}

/* ---- CAST ------------------------------------------------------------------------------- */

static const char *cast1(ck_type_t from, const char *v, ck_type_t to) {
  ck_batch_t *b = batch1(from);
  FILL(b, 0, v);
  return eval_text(cast(col(0, from), to), b);
}

static const char *cast1_error(ck_type_t from, const char *v, ck_type_t to) {
  ck_batch_t *b = batch1(from);
  FILL(b, 0, v);
  return eval_error(cast(col(0, from), to), b);
}

static void test_cast_from_string(void **state) {
  assert_string_equal(cast1(T(STRING), " 42 ", T(INT32)), "42");
  assert_string_equal(cast1(T(STRING), "-17", T(INT64)), "-17");
  assert_string_equal(cast1(T(STRING), "1.9", T(INT32)), "1"); /* fraction dropped, as Flink */
  assert_string_equal(cast1(T(STRING), "9223372036854775807", T(INT64)), "9223372036854775807");
  assert_string_equal(cast1_error(T(STRING), "abc", T(INT32)), "could not cast 'abc' to INT");
  assert_string_equal(cast1_error(T(STRING), "", T(INT64)), "could not cast '' to BIGINT");
  assert_string_equal(cast1_error(T(STRING), "12a", T(INT32)), "could not cast '12a' to INT");
  assert_string_equal(cast1_error(T(STRING), "2147483648", T(INT32)),
                      "could not cast '2147483648' to INT: value out of range");
  assert_string_equal(cast1_error(T(STRING), "9223372036854775808", T(INT64)),
                      "could not cast '9223372036854775808' to BIGINT: value out of range");
  assert_string_equal(cast1(T(STRING), "1.5e3", T(FLOAT64)), "1500");
  assert_string_equal(cast1(T(STRING), " -0.25", T(FLOAT64)), "-0.25");
  assert_string_equal(cast1(T(STRING), "0.1", T(FLOAT32)), "0.10000000149011612");
  assert_string_equal(cast1_error(T(STRING), "1.2.3", T(FLOAT64)),
                      "could not cast '1.2.3' to DOUBLE");
  /* no text gives a value that is not finite */
  assert_string_equal(cast1_error(T(STRING), "NaN", T(FLOAT64)), "could not cast 'NaN' to DOUBLE");
  assert_string_equal(cast1_error(T(STRING), "-Infinity", T(FLOAT64)),
                      "could not cast '-Infinity' to DOUBLE");
  assert_string_equal(cast1_error(T(STRING), "inf", T(FLOAT32)), "could not cast 'inf' to FLOAT");
  assert_string_equal(cast1_error(T(STRING), "0x10", T(FLOAT64)), "could not cast '0x10' to DOUBLE");
  assert_string_equal(cast1_error(T(STRING), "1e999", T(FLOAT64)),
                      "could not cast '1e999' to DOUBLE: value out of range");
  assert_string_equal(cast1_error(T(STRING), "1e39", T(FLOAT32)),
                      "could not cast '1e39' to FLOAT: value out of range");
  assert_string_equal(cast1(T(STRING), "TRUE", T(BOOL)), "TRUE");
  assert_string_equal(cast1(T(STRING), " false", T(BOOL)), "FALSE");
  assert_string_equal(cast1_error(T(STRING), "yes", T(BOOL)), "could not cast 'yes' to BOOLEAN");
  assert_string_equal(cast1(T(STRING), "12.345", DEC(5, 2)), "12.35");
  assert_string_equal(cast1(T(STRING), "-12.345", DEC(5, 2)), "-12.35");
  assert_string_equal(cast1(T(STRING), "1.5e2", DEC(5, 1)), "150.0");
  assert_string_equal(cast1_error(T(STRING), "1234.5", DEC(5, 2)),
                      "could not cast '1234.5' to DECIMAL(5, 2)");
  assert_string_equal(cast1(T(STRING), "2024-01-02 03:04:05.678", T(TIMESTAMP)),
                      "2024-01-02 03:04:05.678");
  assert_string_equal(cast1(T(STRING), "2024-01-02T03:04:05Z", T(TIMESTAMP)),
                      "2024-01-02 03:04:05.000");
  assert_string_equal(cast1_error(T(STRING), "2024-13-02", T(TIMESTAMP)),
                      "could not cast '2024-13-02' to TIMESTAMP(3)");
  /* long values are cut short in the message */
  char longv[200];
  memset(longv, 'x', sizeof longv - 1);
  longv[sizeof longv - 1] = 0;
  const char *m = cast1_error(T(STRING), longv, T(INT32));
  assert_non_null(strstr(m, "xxx...' to INT"));
  assert_true(strlen(m) < 100);
}

static void test_cast_to_string(void **state) {
  assert_string_equal(cast1(T(INT32), "-42", T(STRING)), "-42");
  assert_string_equal(cast1(T(INT64), "9223372036854775807", T(STRING)), "9223372036854775807");
  assert_string_equal(cast1(T(FLOAT64), "18", T(STRING)), "18");
  assert_string_equal(cast1(T(FLOAT64), "18.5", T(STRING)), "18.5");
  assert_string_equal(cast1(T(FLOAT64), "0.1", T(STRING)), "0.1");
  assert_string_equal(cast1(T(FLOAT64), "1e21", T(STRING)), "1e+21");
  assert_string_equal(cast1(T(FLOAT32), "0.1", T(STRING)), "0.1"); /* shortest for a float */
  assert_string_equal(cast1(T(FLOAT32), "16777216", T(STRING)), "16777216");
  assert_string_equal(cast1(DEC(10, 2), "12.3", T(STRING)), "12.30");
  assert_string_equal(cast1(DEC(10, 2), "-0.05", T(STRING)), "-0.05");
  assert_string_equal(cast1(T(BOOL), "true", T(STRING)), "TRUE");
  assert_string_equal(cast1(T(BOOL), "false", T(STRING)), "FALSE");
  assert_string_equal(cast1(T(TIMESTAMP), "2024-02-29 12:34:56.789", T(STRING)),
                      "2024-02-29 12:34:56.789");
  /* NULL stays NULL */
  ck_batch_t *b = batch1(T(INT32));
  FILL(b, 0, NULL, "1");
  assert_string_equal(eval_text(cast(col(0, T(INT32)), T(STRING)), b), "NULL|1");
}

static void test_cast_between_numerics(void **state) {
  assert_string_equal(cast1(T(INT64), "2147483647", T(INT32)), "2147483647");
  assert_string_equal(cast1_error(T(INT64), "3000000000", T(INT32)),
                      "could not cast 3000000000 to INT: value out of range");
  assert_string_equal(cast1_error(T(INT64), "-2147483649", T(INT32)),
                      "could not cast -2147483649 to INT: value out of range");
  assert_string_equal(cast1(T(INT32), "-7", T(INT64)), "-7");
  assert_string_equal(cast1(T(FLOAT64), "3.9", T(INT32)), "3");
  assert_string_equal(cast1(T(FLOAT64), "-3.9", T(INT64)), "-3");
  assert_string_equal(cast1_error(T(FLOAT64), "1e20", T(INT64)),
                      "could not cast 100000000000000000000 to BIGINT: value out of range");
  assert_string_equal(cast1_error(T(FLOAT64), "3e9", T(INT32)),
                      "could not cast 3000000000 to INT: value out of range");
  assert_string_equal(cast1_error(T(FLOAT64), "nan", T(INT32)),
                      "could not cast NaN to INT: value out of range");
  assert_string_equal(cast1(T(INT64), "9007199254740993", T(FLOAT64)), "9007199254740992");
  assert_string_equal(cast1(T(INT32), "7", T(FLOAT32)), "7");
  assert_string_equal(cast1(T(FLOAT32), "0.5", T(FLOAT64)), "0.5");
  assert_string_equal(cast1(T(FLOAT64), "0.1", T(FLOAT32)), "0.10000000149011612");
  assert_string_equal(cast1_error(T(FLOAT64), "1e300", T(FLOAT32)),
                      "could not cast 1e+300 to FLOAT: value out of range");
  assert_string_equal(cast1(T(FLOAT64), "3.4028235e38", T(FLOAT32)), "3.4028234663852886e+38");

  assert_string_equal(cast1(T(FLOAT64), "0.1", DEC(10, 2)), "0.10");
  assert_string_equal(cast1(T(FLOAT64), "0.1", DEC(20, 19)), "0.1000000000000000000");
  assert_string_equal(cast1(T(FLOAT64), "2.675", DEC(10, 2)), "2.68");
  assert_string_equal(cast1(T(FLOAT64), "-2.675", DEC(10, 2)), "-2.68");
  assert_string_equal(cast1(T(FLOAT64), "1e21", DEC(25, 0)), "1000000000000000000000");
  assert_string_equal(cast1_error(T(FLOAT64), "1000", DEC(4, 2)),
                      "could not cast 1000 to DECIMAL(4, 2): value out of range");
  assert_string_equal(cast1(DEC(10, 2), "0.10", T(FLOAT64)), "0.1");
  assert_string_equal(cast1(DEC(38, 20), "123456789012345678.12345678901234567890", T(FLOAT64)),
                      "123456789012345680");
  assert_string_equal(cast1(DEC(10, 2), "12.99", T(INT32)), "12");
  assert_string_equal(cast1(DEC(10, 2), "-12.99", T(INT64)), "-12");
  assert_string_equal(cast1(DEC(5, 2), "12.35", DEC(3, 1)), "12.4");
  assert_string_equal(cast1(DEC(5, 2), "-12.35", DEC(3, 1)), "-12.4");
  assert_string_equal(cast1(DEC(5, 2), "12.35", DEC(10, 4)), "12.3500");
  assert_string_equal(cast1_error(DEC(5, 2), "99.99", DEC(3, 1)),
                      "could not cast 99.99 to DECIMAL(3, 1): value out of range");
  assert_string_equal(cast1(T(INT32), "-123", DEC(10, 2)), "-123.00");
  assert_string_equal(cast1(T(INT64), "-9223372036854775808", DEC(19, 0)), "-9223372036854775808");
  assert_string_equal(cast1_error(T(INT32), "1000", DEC(5, 2)),
                      "could not cast 1000 to DECIMAL(5, 2): value out of range");
}

static void test_cast_bool_and_timestamp(void **state) {
  assert_string_equal(cast1(T(BOOL), "true", T(INT32)), "1");
  assert_string_equal(cast1(T(BOOL), "false", T(INT64)), "0");
  assert_string_equal(cast1(T(BOOL), "true", T(FLOAT64)), "1");
  assert_string_equal(cast1(T(BOOL), "true", DEC(5, 2)), "1.00");
  assert_string_equal(cast1(T(INT32), "0", T(BOOL)), "FALSE");
  assert_string_equal(cast1(T(INT32), "-5", T(BOOL)), "TRUE");
  assert_string_equal(cast1(T(INT64), "5", T(BOOL)), "TRUE");
  assert_string_equal(cast1(T(FLOAT64), "0.0", T(BOOL)), "FALSE");
  assert_string_equal(cast1(DEC(5, 2), "0.01", T(BOOL)), "TRUE");
  assert_string_equal(cast1(T(TIMESTAMP), "2024-01-02 03:04:05.678", T(INT64)), "1704164645678");
  assert_string_equal(cast1(T(INT64), "1704164645678", T(TIMESTAMP)), "2024-01-02 03:04:05.678");
  assert_string_equal(cast1(T(INT64), "-1", T(TIMESTAMP)), "1969-12-31 23:59:59.999");
  assert_string_equal(cast1(T(INT32), "1000", T(TIMESTAMP)), "1970-01-01 00:00:01.000");
  assert_string_equal(cast1_error(T(TIMESTAMP), "2024-01-02", T(INT32)),
                      "could not cast 2024-01-02 00:00:00.000 to INT: value out of range");
  /* CAST of a bare NULL is a NULL of the target type */
  ck_expr_t *e = cast(lit_null(), T(INT32));
  assert_type(e, T(INT32));
  ck_batch_t *b = rows(2);
  assert_string_equal(eval_text(e, b), "NULL|NULL");
}

static void test_cast_errors_skip_null_rows(void **state) {
  ck_batch_t *b = batch1(T(STRING));
  FILL(b, 0, "1", NULL, "3");
  ck_col_t *c = &b->cols[0];
  /* a row that was valid and got nulled still holds bytes: they must not be parsed */
  ck_col_set_null(c, 0);
  assert_string_equal(eval_text(cast(col(0, T(STRING)), T(INT32)), b), "NULL|NULL|3");

  b = batch1(T(STRING));
  FILL(b, 0, "x", "3");
  ck_col_set_null(&b->cols[0], 0);
  assert_string_equal(eval_text(cast(col(0, T(STRING)), T(INT32)), b), "NULL|3");
}

/* ---- evaluation plumbing ---------------------------------------------------------------- */

static void test_constants_are_broadcast(void **state) {
  ck_expr_t *e = CALL(UPPER, CALL(CONCAT, lit_str("ab"), lit_str("c")));
  assert_true(ck_expr_is_constant(e));
  assert_string_equal(eval_text(e, rows(3)), "ABC|ABC|ABC");
  assert_string_equal(eval_text(CALL(ADD, lit_i32(2), lit_i32(3)), rows(2)), "5|5");
  assert_string_equal(eval_text(lit_dec("1.50", 5, 2), rows(2)), "1.50|1.50");
  assert_string_equal(eval_text(CALL(ADD, lit_i32(2), lit_null()), rows(2)), "NULL|NULL");

  /* a literal next to a column */
  ck_batch_t *b = batch1(T(STRING));
  FILL(b, 0, "x", NULL, "z");
  assert_string_equal(eval_text(CALL(CONCAT, lit_str("<"), col(0, T(STRING)), lit_str(">")), b),
                      "<x>|NULL|<z>");

  /* an empty batch evaluates nothing, not even a failing constant */
  ck_col_t out;
  ck_error_t err;
  ck_error_clear(&err);
  ck_batch_t *empty = rows(0);
  assert_int_equal(ck_expr_eval(cast(lit_str("abc"), T(INT32)), empty, &out, &err), 0);
  assert_int_equal(out.len, 0);
  ck_col_fini(&out);
  ck_batch_free(empty);

  /* a failing constant fails once rows exist */
  assert_string_equal(eval_error(cast(lit_str("abc"), T(INT32)), rows(2)),
                      "could not cast 'abc' to INT");
}

static void test_constant_subtrees_under_masks(void **state) {
  ck_error_t err;
  ck_error_clear(&err);
  /* a failing constant in a branch no row takes is never evaluated */
  ck_expr_t *x = col(0, T(INT32));
  ck_expr_t *whens[] = {CALL(GT, x, lit_i32(100))};
  ck_expr_t *thens[] = {cast(lit_str("abc"), T(INT32))};
  ck_expr_t *c = ck_expr_case(&A, whens, thens, 1, x, &err);
  ck_batch_t *b = batch1(T(INT32));
  FILL(b, 0, "1", "2");
  assert_string_equal(eval_text(c, b), "1|2");
  /* … and fails as soon as one row takes it */
  b = batch1(T(INT32));
  FILL(b, 0, "1", "200");
  assert_string_equal(eval_error(c, b), "could not cast 'abc' to INT");

  /* a constant branch is broadcast only to the rows that chose it */
  ck_expr_t *t2[] = {CALL(CONCAT, lit_str("big:"), lit_str("!"))};
  c = ck_expr_case(&A, whens, t2, 1, cast(x, T(STRING)), &err);
  b = batch1(T(INT32));
  FILL(b, 0, "1", "200", NULL);
  assert_string_equal(eval_text(c, b), "1|big:!|NULL");

  /* an all-constant CASE, IN and COALESCE */
  ck_expr_t *cw[] = {CALL(LT, lit_i32(1), lit_i32(2))};
  ck_expr_t *ct[] = {lit_str("yes")};
  assert_string_equal(eval_text(ck_expr_case(&A, cw, ct, 1, lit_str("no"), &err), rows(2)),
                      "yes|yes");
  ck_expr_t *list[] = {lit_i32(1), col(0, T(INT32))};
  b = batch1(T(INT32));
  FILL(b, 0, "3", "7", NULL);
  assert_string_equal(eval_text(ck_expr_in(&A, lit_i32(7), list, 2, false, &err), b),
                      "FALSE|TRUE|NULL");
  b = batch1(T(INT32));
  FILL(b, 0, "3", NULL);
  assert_string_equal(eval_text(CALL(COALESCE, lit_null(), lit_i32(9), x), b), "9|9");

  /* an expression whose every operand is NULL has type NULL and is NULL */
  ck_expr_t *nn = CALL(ADD, lit_null(), lit_null());
  assert_type(nn, T(NULL));
  assert_string_equal(eval_text(nn, rows(2)), "NULL|NULL");
  assert_string_equal(eval_text(CALL(IS_NULL, nn), rows(2)), "TRUE|TRUE");
}

static void test_column_result_is_a_copy(void **state) {
  ck_batch_t *b = batch1(T(STRING));
  FILL(b, 0, "a", NULL, "ccc");
  ck_col_t out;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_expr_eval(col(0, T(STRING)), b, &out, &err), 0);
  assert_ptr_not_equal(out.data, b->cols[0].data);
  assert_ptr_not_equal(out.values, b->cols[0].values);
  ck_batch_free(b);
  ck_buf_t t;
  ck_buf_init(&t);
  for (size_t i = 0; i < out.len; i++) {
    cell(&out, i, &t);
    ck_buf_putc(&t, ';');
  }
  assert_string_equal(t.data, "a;NULL;ccc;");
  /* the result can grow like any column */
  ck_col_append_str(&out, "d", 1);
  assert_true(ck_col_valid(&out, 3));
  ck_buf_fini(&t);
  ck_col_fini(&out);
}

static void test_large_batch_validity_and_values(void **state) {
  enum { N = 1000 };
  ck_batch_t *b = batch2(T(INT64), T(INT64));
  for (int i = 0; i < N; i++) {
    if (i % 3 == 0) ck_col_append_null(&b->cols[0]);
    else ck_col_append_i64(&b->cols[0], i);
    if (i % 5 == 0) ck_col_append_null(&b->cols[1]);
    else ck_col_append_i64(&b->cols[1], 2 * i);
  }
  ck_batch_seal(b);
  ck_expr_t *e = CALL(SUB, CALL(MUL, col(0, T(INT64)), lit_i32(3)), col(1, T(INT64)));
  ck_col_t out;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_expr_eval(e, b, &out, &err), 0);
  assert_int_equal(out.len, N);
  for (int i = 0; i < N; i++) {
    bool valid = i % 3 != 0 && i % 5 != 0;
    if (ck_col_valid(&out, (size_t)i) != valid) fail_msg("row %d validity", i);
    if (valid && ck_col_i64(&out, (size_t)i) != i) fail_msg("row %d value", i);
  }
  ck_col_fini(&out);

  /* the filter keeps exactly the TRUE rows */
  uint8_t sel[N];
  ck_expr_t *p = CALL(GT, col(0, T(INT64)), col(1, T(INT64))); /* never: i > 2i false for i>0 */
  assert_int_equal(ck_expr_eval_filter(p, b, sel, &err), 0);
  for (int i = 0; i < N; i++) assert_int_equal(sel[i], 0);
  p = CALL(LT, col(0, T(INT64)), col(1, T(INT64)));
  assert_int_equal(ck_expr_eval_filter(p, b, sel, &err), 0);
  for (int i = 0; i < N; i++)
    if (sel[i] != (i % 3 != 0 && i % 5 != 0)) fail_msg("row %d selection", i);
  ck_batch_free(b);
}

static void test_filter_selects_only_true(void **state) {
  ck_batch_t *b = batch1(T(INT32));
  FILL(b, 0, "1", NULL, "5", "10");
  uint8_t sel[4];
  ck_error_t err;
  ck_error_clear(&err);
  memset(sel, 7, sizeof sel);
  assert_int_equal(ck_expr_eval_filter(CALL(GT, col(0, T(INT32)), lit_i32(2)), b, sel, &err), 0);
  assert_memory_equal(sel, ((uint8_t[]){0, 0, 1, 1}), 4);

  /* constant predicates */
  assert_int_equal(ck_expr_eval_filter(lit_bool(true), b, sel, &err), 0);
  assert_memory_equal(sel, ((uint8_t[]){1, 1, 1, 1}), 4);
  ck_value_t nb = {.type = T(BOOL), .is_null = true};
  assert_int_equal(ck_expr_eval_filter(ck_expr_literal(&A, &nb), b, sel, &err), 0);
  assert_memory_equal(sel, ((uint8_t[]){0, 0, 0, 0}), 4);

  /* IS NOT NULL keeps the NULL row out; NOT(x > 2) drops NULL too */
  assert_int_equal(ck_expr_eval_filter(CALL(NOT, CALL(GT, col(0, T(INT32)), lit_i32(2))), b, sel, &err), 0);
  assert_memory_equal(sel, ((uint8_t[]){1, 0, 0, 0}), 4);

  /* an error leaves nothing selected */
  ck_batch_t *s = batch1(T(STRING));
  FILL(s, 0, "1", "x");
  assert_int_equal(ck_expr_eval_filter(CALL(EQ, cast(col(0, T(STRING)), T(INT32)), lit_i32(1)), s,
                                       sel, &err), CK_EEVAL);
  assert_string_equal(err.message, "could not cast 'x' to INT");
  assert_int_equal(sel[0], 0);
  ck_batch_free(s);
  ck_batch_free(b);
}

static void test_eval_error_leaves_output_safe(void **state) {
  ck_batch_t *b = batch1(T(INT32));
  FILL(b, 0, "2147483647");
  ck_col_t out;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_expr_eval(CALL(ADD, col(0, T(INT32)), lit_i32(1)), b, &out, &err), CK_EEVAL);
  assert_int_equal(out.len, 0);
  ck_col_fini(&out); /* safe to finish whatever happened */
  ck_batch_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
      TEST(test_fn_names_follow_the_table),
      TEST(test_type_common),
      TEST(test_type_assignable_table),
      TEST(test_arith_result_types_and_coercions),
      TEST(test_literals_are_folded_when_coerced),
      TEST(test_type_errors_name_operator_and_types),
      TEST(test_is_constant),
      TEST(test_to_string),
      TEST(test_int_arithmetic_with_nulls),
      TEST(test_division_by_zero_is_null),
      TEST(test_integer_overflow_is_an_error),
      TEST(test_overflow_on_null_or_unselected_rows_is_no_error),
      TEST(test_float_arithmetic),
      TEST(test_decimal_arithmetic_is_exact),
      TEST(test_decimal_wide_intermediates),
      TEST(test_decimal_rounds_exact_halves_away_from_zero),
      TEST(test_decimal_overflow_is_an_error),
      TEST(test_comparisons_over_types),
      TEST(test_comparisons_coerce_operands),
      TEST(test_three_valued_logic_truth_tables),
      TEST(test_and_or_skip_decided_rows),
      TEST(test_case),
      TEST(test_coalesce_and_nullif),
      TEST(test_in_list_null_semantics),
      TEST(test_like_patterns),
      TEST(test_string_functions),
      TEST(test_numeric_functions),
      TEST(test_non_finite_results_are_errors),
      TEST(test_case_mapping_is_unicode),
      TEST(test_cast_from_string),
      TEST(test_cast_to_string),
      TEST(test_cast_between_numerics),
      TEST(test_cast_bool_and_timestamp),
      TEST(test_cast_errors_skip_null_rows),
      TEST(test_constants_are_broadcast),
      TEST(test_constant_subtrees_under_masks),
      TEST(test_column_result_is_a_copy),
      TEST(test_large_batch_validity_and_values),
      TEST(test_filter_selects_only_true),
      TEST(test_eval_error_leaves_output_safe),
#undef TEST
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
