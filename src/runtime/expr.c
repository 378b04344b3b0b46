/*
 * DESIGN: building and typing expression trees (the evaluator is in expr_eval.c).
 *
 * The constructors are where SQL's typing rules live (expr.h lists them): each one checks its
 * arguments, wraps operands in implicit CASTs so the evaluator always sees one agreed type per
 * operator (decimal arithmetic is the exception: operands keep their own precision and scale,
 * and the kernel rescales exactly), fixes the result type, and on a mismatch fills err with
 * CK_ETYPE and a message naming the operator and the types. A bare NULL (type CK_T_NULL) takes
 * the type its position needs; an operator whose every operand is NULL has type NULL and
 * evaluates to NULL.
 *
 * Implicit casts of literals that lose nothing (integer widening, integer → DECIMAL/DOUBLE,
 * FLOAT → DOUBLE, NULL → any type) are folded into a new literal, so plans read `$0 + 1`, not
 * `$0 + CAST(1 AS BIGINT)`.
 *
 * Memory: every node and copied string lives in the caller's arena. Threads: the functions
 * here are pure; a finished tree is immutable and may be shared across threads.
 */
#include "runtime/expr.h"
#include "runtime/udf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/buf.h"

static const ck_fn_info_t fn_info[CK_FN__COUNT] = {
#define CK_X_FN(id, name, min, max, typing, kernel, call, alias, sig, doc) \
  [CK_FN_##id] = {name, min, max, call, alias, sig, doc},
    CK_FN_TABLE(CK_X_FN)
#undef CK_X_FN
};

const ck_fn_info_t *ck_fn_info(ck_fn_t fn) {
  return (unsigned)fn < (unsigned)CK_FN__COUNT ? &fn_info[fn] : NULL;
}

const char *ck_fn_name(ck_fn_t fn) {
  return (unsigned)fn < (unsigned)CK_FN__COUNT ? fn_info[fn].name : "?";
}

int ck_fn_lookup(const char *name) {
  for (int fn = 0; fn < CK_FN__COUNT; fn++) {
    const ck_fn_info_t *f = &fn_info[fn];
    if ((f->call && ck_streq_i(name, f->call)) || (f->alias && ck_streq_i(name, f->alias)))
      return fn;
  }
  return -1;
}

/* Operators are written between or before their operands; the rest are called by name. */
static bool fn_is_operator(ck_fn_t fn) { return fn <= CK_FN_SIMILAR; }

static const char *fn_kind(ck_fn_t fn) { return fn_is_operator(fn) ? "operator" : "function"; }

#define TNAME(t) ck_type_name((t), (char[48]){0}, 48)

static void *type_error(ck_error_t *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void *type_error(ck_error_t *err, const char *fmt, ...) {
  char msg[CK_ERR_MSG];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ck_error_set(err, CK_ETYPE, "%s", msg);
  return NULL;
}

static ck_expr_t *node_new(ck_arena_t *arena, ck_expr_kind_t kind, ck_type_t type, int nargs) {
  ck_expr_t *e = ck_arena_zalloc(arena, sizeof *e);
  e->kind = kind;
  e->type = type;
  e->column = -1;
  e->nargs = nargs;
  e->args = nargs ? ck_arena_zalloc(arena, (size_t)nargs * sizeof *e->args) : NULL;
  e->size = 1;
  return e;
}

/* Sets what a node derives from its finished arguments: constant, size. */
static ck_expr_t *finish(ck_expr_t *e) {
  e->constant = e->kind != CK_EX_COLUMN && e->kind != CK_EX_WATERMARK && e->kind != CK_EX_UDF;
  uint64_t size = 1;
  for (int i = 0; i < e->nargs; i++) {
    e->constant = e->constant && e->args[i]->constant;
    size += e->args[i]->size;
  }
  e->size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
  return e;
}

ck_expr_t *ck_expr_column(ck_arena_t *arena, int column, ck_type_t type) {
  ck_expr_t *e = node_new(arena, CK_EX_COLUMN, type, 0);
  e->column = column;
  return e;
}

ck_expr_t *ck_expr_watermark(ck_arena_t *arena, ck_type_t type) {
  ck_expr_t *e = node_new(arena, CK_EX_WATERMARK, type, 0);
  e->constant = false;
  return e;
}

ck_expr_t *ck_expr_literal(ck_arena_t *arena, const ck_value_t *value) {
  ck_expr_t *e = node_new(arena, CK_EX_LITERAL, value->type, 0);
  e->constant = true;
  e->literal = *value;
  if (value->type.id == CK_T_NULL) e->literal.is_null = true;
  if (!value->is_null && value->type.id == CK_T_STRING) {
    e->literal.v.s.ptr = ck_arena_strndup(arena, value->v.s.ptr ? value->v.s.ptr : "",
                                          value->v.s.len);
  }
  return e;
}

bool ck_expr_is_constant(const ck_expr_t *e) { return e->constant; }

/* ---- types ------------------------------------------------------------------------------ */

/* DECIMAL(p, s), with precision capped at 38 the way Flink does it: the integer digits are
 * kept and the scale shrinks, but never below min(s, 6). */
static ck_type_t dec_type(int p, int s) {
  if (p > CK_DECIMAL_MAX_PRECISION) {
    int digits = p - s;
    int min_scale = s < 6 ? s : 6;
    s = CK_DECIMAL_MAX_PRECISION - digits;
    if (s < min_scale) s = min_scale;
    p = CK_DECIMAL_MAX_PRECISION;
  }
  if (p < 1) p = 1;
  if (s > p) s = p;
  return (ck_type_t){CK_T_DECIMAL, (uint8_t)p, (uint8_t)s};
}

/* The DECIMAL an exact numeric is treated as in decimal arithmetic. */
static ck_type_t as_decimal(ck_type_t t) {
  if (t.id == CK_T_INT32) return (ck_type_t){CK_T_DECIMAL, 10, 0};
  if (t.id == CK_T_INT64) return (ck_type_t){CK_T_DECIMAL, 19, 0};
  return t;
}

static int imax(int a, int b) { return a > b ? a : b; }
static int imin(int a, int b) { return a < b ? a : b; }

static bool is_float(ck_type_t t) { return t.id == CK_T_FLOAT32 || t.id == CK_T_FLOAT64; }

/* The numeric type two numerics meet at (comparison, CASE, COALESCE, IN). */
static ck_type_t numeric_common(ck_type_t a, ck_type_t b) {
  if (a.id == CK_T_FLOAT32 && b.id == CK_T_FLOAT32) return a;
  if (is_float(a) || is_float(b)) return CK_TYPE(CK_T_FLOAT64);
  if (ck_type_is_integer(a) && ck_type_is_integer(b)) return a.id >= b.id ? a : b;
  ck_type_t da = as_decimal(a), db = as_decimal(b);
  int s = imax(da.scale, db.scale);
  int digits = imax(da.precision - da.scale, db.precision - db.scale);
  return dec_type(digits + s, s);
}

bool ck_type_common(ck_type_t a, ck_type_t b, ck_type_t *out) {
  if (a.id == CK_T_NULL) {
    *out = b;
    return true;
  }
  if (b.id == CK_T_NULL) {
    *out = a;
    return true;
  }
  if (ck_type_is_numeric(a) && ck_type_is_numeric(b)) {
    *out = numeric_common(a, b);
    return true;
  }
  if (a.id == CK_T_TIMESTAMP && b.id == CK_T_TIMESTAMP) {
    /* a DATE meets a TIMESTAMP as its midnight; a TIME meets only a TIME (types.h) */
    int ka = ck_type_ts_kind(a), kb = ck_type_ts_kind(b);
    if (ka == kb) *out = a;
    else if (ka == CK_TS_TIME || kb == CK_TS_TIME) return false;
    else *out = ka == CK_TS_DATE ? b : a;
    return true;
  }
  if (a.id == b.id) {
    *out = a;
    return true;
  }
  if ((a.id == CK_T_TIMESTAMP && ck_type_ts_kind(a) == 0 && ck_type_is_integer(b)) ||
      (b.id == CK_T_TIMESTAMP && ck_type_ts_kind(b) == 0 && ck_type_is_integer(a))) {
    *out = CK_TYPE(CK_T_TIMESTAMP);
    return true;
  }
  return false;
}

bool ck_type_assignable(ck_type_t from, ck_type_t to) {
  if (from.id == CK_T_NULL) return true;
  if (ck_type_ts_kind(from) > 0 || ck_type_ts_kind(to) > 0) {
    /* DATE and TIME into their own kind; a DATE also into a TIMESTAMP (its midnight) */
    int kf = ck_type_ts_kind(from), kt = ck_type_ts_kind(to);
    return kf == kt || (kf == CK_TS_DATE && kt == 0);
  }
  if (ck_type_eq(from, to)) return true;
  switch (from.id) {
    case CK_T_INT32:
      return to.id == CK_T_INT64 || to.id == CK_T_FLOAT64 ||
             (to.id == CK_T_DECIMAL && to.precision - to.scale >= 10);
    case CK_T_INT64:
      return to.id == CK_T_TIMESTAMP || to.id == CK_T_FLOAT64 ||
             (to.id == CK_T_DECIMAL && to.precision - to.scale >= 19);
    case CK_T_FLOAT32: return to.id == CK_T_FLOAT64;
    case CK_T_DECIMAL:
      return to.id == CK_T_FLOAT64 ||
             (to.id == CK_T_DECIMAL && to.scale >= from.scale &&
              to.precision - to.scale >= from.precision - from.scale);
    case CK_T_TIMESTAMP: return to.id == CK_T_INT64;
    default: return false;
  }
}

/* Which CASTs SQL allows: BOOL and numerics among themselves, anything to and from STRING,
 * TIMESTAMP to and from integers (epoch milliseconds), NULL to anything. */
static bool castable(ck_type_t from, ck_type_t to) {
  if (to.id == CK_T_NULL) return from.id == CK_T_NULL;
  if (from.id == CK_T_NULL || from.id == to.id) return true;
  bool fnum = ck_type_is_numeric(from) || from.id == CK_T_BOOL;
  bool tnum = ck_type_is_numeric(to) || to.id == CK_T_BOOL;
  if (fnum && tnum) return true;
  if (from.id == CK_T_STRING || to.id == CK_T_STRING) return true;
  if (ck_type_ts_kind(from) > 0 || ck_type_ts_kind(to) > 0) {
    /* a TIMESTAMP to its DATE or its TIME of day, a DATE to the TIMESTAMP of its midnight, a
     * TIME to that time on 1970-01-01 (Flink's) */
    int kf = ck_type_ts_kind(from), kt = ck_type_ts_kind(to);
    return kf == kt || kf == 0 || (kf > 0 && kt == 0);
  }
  return (from.id == CK_T_TIMESTAMP && ck_type_is_integer(to)) ||
         (ck_type_is_integer(from) && to.id == CK_T_TIMESTAMP);
}

/* Folds an implicit cast of a literal when it is exact; false when the cast must run. */
/* x * 10^k when it has at most p digits (p <= 38), checked before multiplying: the product
 * itself can overflow 128 bits (a 34-digit literal compared with one of scale 13). */
static bool rescale_fits(ck_i128 x, int k, int p, ck_i128 *out) {
  if (k > p) {
    *out = 0;
    return x == 0;
  }
  ck_i128 lim = ck_pow10_i128(p - k);
  if (x >= lim || x <= -lim) return false;
  *out = x * ck_pow10_i128(k);
  return true;
}

static bool fold_literal(const ck_value_t *v, ck_type_t to, ck_value_t *out) {
  memset(out, 0, sizeof *out);
  out->type = to;
  if (v->is_null || v->type.id == CK_T_NULL) {
    out->is_null = true;
    return true;
  }
  ck_type_id_t f = v->type.id;
  if (ck_type_is_integer(v->type)) {
    switch (to.id) {
      case CK_T_INT64:
      case CK_T_TIMESTAMP: out->v.i = v->v.i; return true;
      case CK_T_FLOAT64:
        if (v->v.i > (1LL << 53) || v->v.i < -(1LL << 53)) return false;
        out->v.f = (double)v->v.i;
        return true;
      case CK_T_DECIMAL: return rescale_fits(v->v.i, to.scale, to.precision, &out->v.dec);
      default: return false;
    }
  }
  if (f == CK_T_FLOAT32 && to.id == CK_T_FLOAT64) {
    out->v.f = (double)(float)v->v.f;
    return true;
  }
  if (f == CK_T_DECIMAL && to.id == CK_T_DECIMAL && to.scale >= v->type.scale)
    return rescale_fits(v->v.dec, to.scale - v->type.scale, to.precision, &out->v.dec);
  return false;
}

static ck_expr_t *cast_node(ck_arena_t *arena, ck_expr_t *e, ck_type_t to) {
  ck_expr_t *c = node_new(arena, CK_EX_CAST, to, 1);
  c->args[0] = e;
  return finish(c);
}

ck_expr_t *ck_expr_coerce(ck_arena_t *arena, ck_expr_t *e, ck_type_t to, ck_error_t *err) {
  if (!e) return NULL;
  if (ck_type_eq(e->type, to)) return e;
  if (!castable(e->type, to))
    return type_error(err, "cannot convert %s to %s", TNAME(e->type), TNAME(to));
  ck_value_t v;
  if (e->kind == CK_EX_LITERAL && fold_literal(&e->literal, to, &v))
    return ck_expr_literal(arena, &v);
  return cast_node(arena, e, to);
}

ck_expr_t *ck_expr_cast(ck_arena_t *arena, ck_expr_t *arg, ck_type_t to, ck_error_t *err) {
  if (ck_type_eq(arg->type, to) && ck_type_ts_kind(arg->type) == ck_type_ts_kind(to) &&
      !(ck_type_is_time(to) && to.precision < arg->type.precision)) {
    if (to.id != CK_T_TIMESTAMP || (arg->type.precision == to.precision && arg->type.scale == to.scale))
      return arg;
    /* TIMESTAMP to TIMESTAMP_LTZ and back (or another precision): the same milliseconds
     * under the other presentation (types.h), a relabelled copy of the node */
    ck_expr_t *e = ck_arena_alloc(arena, sizeof *e);
    *e = *arg;
    e->type = to;
    if (e->kind == CK_EX_LITERAL) e->literal.type = to;
    return e;
  }
  if (!castable(arg->type, to))
    return type_error(err, "cannot cast %s to %s", TNAME(arg->type), TNAME(to));
  if (arg->kind == CK_EX_LITERAL && (arg->literal.is_null || arg->type.id == CK_T_NULL)) {
    ck_value_t v = {.type = to, .is_null = true};
    return ck_expr_literal(arena, &v);
  }
  return cast_node(arena, arg, to);
}

/* ---- calls ------------------------------------------------------------------------------ */

/* Result type of + - * / MOD over two numerics; false when either is not numeric. */
static bool arith_type(ck_fn_t fn, ck_type_t a, ck_type_t b, ck_type_t *out) {
  if (a.id == CK_T_NULL) a = b;
  if (b.id == CK_T_NULL) b = a;
  if (a.id == CK_T_NULL) {
    *out = CK_TYPE(CK_T_NULL);
    return true;
  }
  if (!ck_type_is_numeric(a) || !ck_type_is_numeric(b)) return false;
  if (is_float(a) || is_float(b) || (ck_type_is_integer(a) && ck_type_is_integer(b))) {
    *out = numeric_common(a, b);
    return true;
  }
  ck_type_t da = as_decimal(a), db = as_decimal(b);
  int p1 = da.precision, s1 = da.scale, p2 = db.precision, s2 = db.scale;
  switch (fn) {
    case CK_FN_ADD:
    case CK_FN_SUB: {
      int s = imax(s1, s2);
      *out = dec_type(imax(p1 - s1, p2 - s2) + s + 1, s);
      break;
    }
    case CK_FN_MUL: *out = dec_type(p1 + p2, s1 + s2); break;
    case CK_FN_DIV: {
      int s = imax(6, s1 + p2 + 1);
      *out = dec_type(p1 - s1 + s2 + s, s);
      break;
    }
    default: { /* MOD */
      int s = imax(s1, s2);
      *out = dec_type(imin(p1 - s1, p2 - s2) + s, s);
      break;
    }
  }
  return true;
}

/* A constant integer known at bind time: a literal, possibly negated or cast. */
static bool const_int(const ck_expr_t *e, int64_t *v) {
  if (e->kind == CK_EX_LITERAL && !e->literal.is_null && ck_type_is_integer(e->type)) {
    *v = e->literal.v.i;
    return true;
  }
  if (e->kind == CK_EX_CALL && e->fn == CK_FN_NEG && const_int(e->args[0], v)) {
    *v = -*v;
    return true;
  }
  if (e->kind == CK_EX_CAST && ck_type_is_integer(e->type)) return const_int(e->args[0], v);
  return false;
}

/* The type Flink gives ROUND(DECIMAL(p, s), d) (and FLOOR/CEIL with d = 0). */
static ck_type_t round_dec_type(ck_type_t t, int64_t d) {
  if (d >= t.scale) return t;
  if (d < 0) return dec_type(imin(CK_DECIMAL_MAX_PRECISION, 1 + t.precision - t.scale), 0);
  return dec_type(imin(CK_DECIMAL_MAX_PRECISION, 1 + t.precision - t.scale + (int)d), (int)d);
}

typedef struct callb {
  ck_arena_t *arena;
  ck_fn_t fn;
  ck_expr_t **a;
  int n;
  ck_error_t *err;
} callb_t;

static bool coerce_arg(callb_t *c, int i, ck_type_t to) {
  ck_expr_t *x = ck_expr_coerce(c->arena, c->a[i], to, c->err);
  if (!x) return false;
  c->a[i] = x;
  return true;
}

/* Argument i must be `want` (a bare NULL becomes one). */
static bool want(callb_t *c, int i, ck_type_id_t want) {
  ck_type_t t = c->a[i]->type;
  if (t.id == want) return true;
  if (t.id == CK_T_NULL) return coerce_arg(c, i, CK_TYPE(want));
  type_error(c->err, "%s %s expects %s, not %s", fn_kind(c->fn), ck_fn_name(c->fn),
             TNAME(CK_TYPE(want)), TNAME(t));
  return false;
}

static bool want_integer(callb_t *c, int i) {
  ck_type_t t = c->a[i]->type;
  if (ck_type_is_integer(t)) return true;
  if (t.id == CK_T_NULL) return coerce_arg(c, i, CK_TYPE(CK_T_INT32));
  type_error(c->err, "%s %s expects an integer as argument %d, not %s", fn_kind(c->fn),
             ck_fn_name(c->fn), i + 1, TNAME(t));
  return false;
}

static bool want_numeric(callb_t *c, int i) {
  ck_type_t t = c->a[i]->type;
  if (ck_type_is_numeric(t) || t.id == CK_T_NULL) return true;
  type_error(c->err, "%s %s expects a numeric argument, not %s", fn_kind(c->fn),
             ck_fn_name(c->fn), TNAME(t));
  return false;
}

/* Every argument from `from` on is coerced to the common type of all of them. */
static bool unify(callb_t *c, int from, ck_type_t *out) {
  ck_type_t t = CK_TYPE(CK_T_NULL);
  for (int i = from; i < c->n; i++) {
    ck_type_t next;
    if (!ck_type_common(t, c->a[i]->type, &next)) {
      type_error(c->err, "%s %s cannot take %s and %s", fn_kind(c->fn), ck_fn_name(c->fn),
                 TNAME(t), TNAME(c->a[i]->type));
      return false;
    }
    t = next;
  }
  if (t.id != CK_T_NULL)
    for (int i = from; i < c->n; i++)
      if (!coerce_arg(c, i, t)) return false;
  *out = t;
  return true;
}

/* Comparison and IN operands: a DECIMAL already at the common scale compares as it is (only
 * the scale matters to the kernel), so it is not rescaled row by row. */
static ck_expr_t *coerce_cmp(ck_arena_t *arena, ck_expr_t *e, ck_type_t to, ck_error_t *err) {
  if (to.id == CK_T_DECIMAL && e->type.id == CK_T_DECIMAL && e->type.scale == to.scale) return e;
  return ck_expr_coerce(arena, e, to, err);
}

static bool binary_error(callb_t *c) {
  type_error(c->err, "%s %s cannot take %s and %s", fn_kind(c->fn), ck_fn_name(c->fn),
             TNAME(c->a[0]->type), TNAME(c->a[1]->type));
  return false;
}

/* ---- typing rules (the CK_FN_TABLE column): each types the call in place (coercing c->a) and
 * gives its result type ---- */

static bool ty_arith(callb_t *c, ck_type_t *rt) {
  if (!arith_type(c->fn, c->a[0]->type, c->a[1]->type, rt)) return binary_error(c);
  if (rt->id == CK_T_NULL) return true;
  for (int i = 0; i < 2; i++) {
    ck_type_t to = rt->id == CK_T_DECIMAL ? as_decimal(c->a[i]->type) : *rt;
    if (to.id == CK_T_NULL) to = rt->id == CK_T_DECIMAL ? as_decimal(c->a[1 - i]->type) : *rt;
    if (!coerce_arg(c, i, to)) return false;
  }
  return true;
}

static bool ty_same_numeric(callb_t *c, ck_type_t *rt) {
  if (!want_numeric(c, 0)) return false;
  *rt = c->a[0]->type;
  return true;
}

static bool ty_compare(callb_t *c, ck_type_t *rt) {
  ck_type_t t;
  if (!ck_type_common(c->a[0]->type, c->a[1]->type, &t)) return binary_error(c);
  if (t.id != CK_T_NULL)
    for (int i = 0; i < 2; i++)
      if (!(c->a[i] = coerce_cmp(c->arena, c->a[i], t, c->err))) return false;
  *rt = CK_TYPE(CK_T_BOOL);
  return true;
}

static bool ty_bools(callb_t *c, ck_type_t *rt) {
  for (int i = 0; i < c->n; i++)
    if (!want(c, i, CK_T_BOOL)) return false;
  *rt = CK_TYPE(CK_T_BOOL);
  return true;
}

static bool ty_null_test(callb_t *c, ck_type_t *rt) {
  (void)c;
  *rt = CK_TYPE(CK_T_BOOL);
  return true;
}

static bool ty_like(callb_t *c, ck_type_t *rt) {
  if (c->a[0]->type.id != CK_T_STRING && c->a[0]->type.id != CK_T_NULL) return binary_error(c);
  if (c->a[1]->type.id != CK_T_STRING && c->a[1]->type.id != CK_T_NULL) return binary_error(c);
  if (!want(c, 0, CK_T_STRING) || !want(c, 1, CK_T_STRING)) return false;
  const ck_expr_t *pat = c->a[1], *esc = c->n > 2 ? c->a[2] : NULL;
  if (c->fn == CK_FN_SIMILAR && pat->kind == CK_EX_LITERAL && !pat->literal.is_null &&
      (!esc || (esc->kind == CK_EX_LITERAL && !esc->literal.is_null &&
                esc->type.id == CK_T_STRING))) {
    char why[160];
    if (ck_similar_check(pat->literal.v.s.ptr, pat->literal.v.s.len,
                         esc ? esc->literal.v.s.ptr : NULL, esc ? esc->literal.v.s.len : 0, why,
                         sizeof why)) {
      type_error(c->err, "operator SIMILAR TO cannot use the pattern '%.*s': %s",
                 (int)(pat->literal.v.s.len > 60 ? 60 : pat->literal.v.s.len),
                 pat->literal.v.s.ptr, why);
      return false;
    }
  }
  if (c->n > 2) {
    if (!want(c, 2, CK_T_STRING)) return false;
    const ck_expr_t *e = c->a[2];
    if (e->kind == CK_EX_LITERAL && !e->literal.is_null &&
        ck_utf8_chars(e->literal.v.s.ptr, e->literal.v.s.len) != 1) {
      type_error(c->err, "the ESCAPE of %s must be one character, not '%.*s'", ck_fn_name(c->fn),
                 (int)(e->literal.v.s.len > 20 ? 20 : e->literal.v.s.len), e->literal.v.s.ptr);
      return false;
    }
  }
  *rt = CK_TYPE(CK_T_BOOL);
  return true;
}

static bool ty_unify(callb_t *c, ck_type_t *rt) { return unify(c, 0, rt); }

static bool ty_strings(callb_t *c, ck_type_t *rt) {
  for (int i = 0; i < c->n; i++)
    if (!want(c, i, CK_T_STRING)) return false;
  *rt = CK_TYPE(CK_T_STRING);
  return true;
}

static bool ty_char_length(callb_t *c, ck_type_t *rt) {
  if (!want(c, 0, CK_T_STRING)) return false;
  *rt = CK_TYPE(CK_T_INT32);
  return true;
}

static bool ty_substring(callb_t *c, ck_type_t *rt) {
  if (!want(c, 0, CK_T_STRING)) return false;
  for (int i = 1; i < c->n; i++)
    if (!want_integer(c, i)) return false;
  *rt = CK_TYPE(CK_T_STRING);
  return true;
}

static bool ty_split_index(callb_t *c, ck_type_t *rt) {
  if (!want(c, 0, CK_T_STRING) || !want(c, 1, CK_T_STRING) || !want_integer(c, 2)) return false;
  *rt = CK_TYPE(CK_T_STRING);
  return true;
}

static bool ty_round(callb_t *c, ck_type_t *rt) {
  if (!want_numeric(c, 0)) return false;
  if (c->n == 2 && !want_integer(c, 1)) return false;
  ck_type_t t = c->a[0]->type;
  *rt = t;
  if (t.id == CK_T_DECIMAL) {
    int64_t d = 0;
    if (c->n == 2 && !const_int(c->a[1], &d)) {
      type_error(c->err, "function %s needs a constant number of decimal places for %s",
                 ck_fn_name(c->fn), TNAME(t));
      return false;
    }
    *rt = round_dec_type(t, d);
  }
  return true;
}

static bool ty_floor_ceil(callb_t *c, ck_type_t *rt) {
  if (!want_numeric(c, 0)) return false;
  *rt = c->a[0]->type;
  if (rt->id == CK_T_DECIMAL) *rt = round_dec_type(*rt, 0);
  return true;
}

static bool ty_doubles(callb_t *c, ck_type_t *rt) {
  for (int i = 0; i < c->n; i++)
    if (!want_numeric(c, i) || !coerce_arg(c, i, CK_TYPE(CK_T_FLOAT64))) return false;
  *rt = CK_TYPE(CK_T_FLOAT64);
  return true;
}

/* IF(cond, a, b): checked here, built as CASE WHEN cond THEN a ELSE b END by ck_expr_call. */
static bool ty_if(callb_t *c, ck_type_t *rt) {
  ck_type_t t = c->a[0]->type;
  if (t.id != CK_T_BOOL && t.id != CK_T_NULL) {
    type_error(c->err, "function IF expects a BOOLEAN condition, not %s", TNAME(t));
    return false;
  }
  if (!ck_type_common(c->a[1]->type, c->a[2]->type, rt)) {
    type_error(c->err, "function IF cannot take %s and %s", TNAME(c->a[1]->type),
               TNAME(c->a[2]->type));
    return false;
  }
  return true;
}

/* POSITION(sub, s), LOCATE(sub, s[, from]), INSTR(s, sub): two strings, an integer, INT. */
static bool ty_locate(callb_t *c, ck_type_t *rt) {
  if (!want(c, 0, CK_T_STRING) || !want(c, 1, CK_T_STRING)) return false;
  if (c->n > 2 && !want_integer(c, 2)) return false;
  *rt = CK_TYPE(CK_T_INT32);
  return true;
}

/* A string and an integer count: LEFT, RIGHT, REPEAT. */
static bool ty_str_int(callb_t *c, ck_type_t *rt) {
  if (!want(c, 0, CK_T_STRING) || !want_integer(c, 1)) return false;
  *rt = CK_TYPE(CK_T_STRING);
  return true;
}

static bool ty_pad(callb_t *c, ck_type_t *rt) {
  if (!want(c, 0, CK_T_STRING) || !want_integer(c, 1) || !want(c, 2, CK_T_STRING)) return false;
  *rt = CK_TYPE(CK_T_STRING);
  return true;
}

static bool ty_overlay(callb_t *c, ck_type_t *rt) {
  if (!want(c, 0, CK_T_STRING) || !want(c, 1, CK_T_STRING) || !want_integer(c, 2)) return false;
  if (c->n > 3 && !want_integer(c, 3)) return false;
  *rt = CK_TYPE(CK_T_STRING);
  return true;
}

/* REGEXP, REGEXP_EXTRACT, REGEXP_REPLACE: a pattern written as a literal is compiled here, so
 * a bad one is refused when the script is planned rather than on the first row. */
static bool ty_regexp(callb_t *c, ck_type_t *rt) {
  if (!want(c, 0, CK_T_STRING) || !want(c, 1, CK_T_STRING)) return false;
  if (c->fn == CK_FN_REGEXP_EXTRACT && c->n > 2 && !want_integer(c, 2)) return false;
  if (c->fn == CK_FN_REGEXP_REPLACE && !want(c, 2, CK_T_STRING)) return false;
  const ck_expr_t *p = c->a[1];
  if (p->kind == CK_EX_LITERAL && !p->literal.is_null) {
    char why[160];
    if (ck_expr_regex_check(p->literal.v.s.ptr, p->literal.v.s.len, why, sizeof why)) {
      type_error(c->err, "function %s cannot use the regular expression '%.*s': %s",
                 ck_fn_name(c->fn), (int)(p->literal.v.s.len > 60 ? 60 : p->literal.v.s.len),
                 p->literal.v.s.ptr, why);
      return false;
    }
  }
  *rt = c->fn == CK_FN_REGEXP ? CK_TYPE(CK_T_BOOL) : CK_TYPE(CK_T_STRING);
  return true;
}

static bool ty_hex(callb_t *c, ck_type_t *rt) {
  ck_type_t t = c->a[0]->type;
  if (t.id == CK_T_NULL && !coerce_arg(c, 0, CK_TYPE(CK_T_INT64))) return false;
  t = c->a[0]->type;
  if (ck_type_is_integer(t)) {
    if (!coerce_arg(c, 0, CK_TYPE(CK_T_INT64))) return false;
  } else if (t.id != CK_T_STRING) {
    type_error(c->err, "function HEX expects an integer or VARCHAR, not %s", TNAME(t));
    return false;
  }
  *rt = CK_TYPE(CK_T_STRING);
  return true;
}

/* Argument i must be a TIMESTAMP (a bare NULL becomes one). */
static bool want_ts(callb_t *c, int i) { return want(c, i, CK_T_TIMESTAMP); }

/* EXTRACT, DATE_TRUNC, TIMESTAMPADD, TIMESTAMPDIFF: the first argument is the unit, a keyword
 * the parser passes as a string literal (or a literal string in DATE_TRUNC('DAY', ts)). */
static bool ty_time_unit(callb_t *c, ck_type_t *rt) {
  const ck_expr_t *u = c->a[0];
  if (u->kind != CK_EX_LITERAL || u->type.id != CK_T_STRING || u->literal.is_null) {
    type_error(c->err, "function %s expects a time unit as its first argument, such as DAY",
               ck_fn_name(c->fn));
    return false;
  }
  int unit = ck_time_unit_lookup(u->literal.v.s.ptr, u->literal.v.s.len, c->fn == CK_FN_EXTRACT);
  if (unit < 0) {
    type_error(c->err, "function %s does not know the time unit '%.*s' (%s)", ck_fn_name(c->fn),
               (int)(u->literal.v.s.len > 40 ? 40 : u->literal.v.s.len), u->literal.v.s.ptr,
               c->fn == CK_FN_EXTRACT ? "YEAR, QUARTER, MONTH, WEEK, DAY, DOY, DOW, HOUR, MINUTE, "
                                        "SECOND, MILLISECOND or EPOCH"
                                      : "YEAR, QUARTER, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND "
                                        "or MILLISECOND");
    return false;
  }
  /* a TIME has only the fields of a time of day, and is not moved or cut by these (Flink) */
  static const char *const of_day[] = {"HOUR", "MINUTE", "SECOND", "MILLISECOND"};
  bool day_part = false;
  for (size_t i = 0; i < CK_ARRAY_LEN(of_day); i++)
    day_part |= strlen(of_day[i]) == u->literal.v.s.len &&
                strncasecmp(of_day[i], u->literal.v.s.ptr, u->literal.v.s.len) == 0;
  for (int i = 1; i < c->n; i++)
    if (ck_type_is_time(c->a[i]->type) && (c->fn != CK_FN_EXTRACT || !day_part)) {
      type_error(c->err, "function %s cannot take %s%s", ck_fn_name(c->fn), TNAME(c->a[i]->type),
                 c->fn == CK_FN_EXTRACT ? " with a unit of the date" : "");
      return false;
    }
  switch (c->fn) {
    case CK_FN_EXTRACT:
      if (!want_ts(c, 1)) return false;
      *rt = CK_TYPE(CK_T_INT64);
      return true;
    case CK_FN_DATE_TRUNC: /* of the argument's TIMESTAMP type (its precision, LTZ or not) */
      if (!want_ts(c, 1)) return false;
      *rt = c->a[1]->type;
      return true;
    case CK_FN_TIMESTAMPADD:
      if (!want_integer(c, 1) || !coerce_arg(c, 1, CK_TYPE(CK_T_INT64)) || !want_ts(c, 2))
        return false;
      *rt = c->a[2]->type;
      /* a DATE moved by a part of a day is a TIMESTAMP (Calcite's TIMESTAMPADD typing) */
      if (ck_type_is_date(*rt) && day_part) *rt = ck_type_timestamp(3, 0);
      return true;
    default: /* TIMESTAMPDIFF */
      if (!want_ts(c, 1) || !want_ts(c, 2)) return false;
      *rt = CK_TYPE(CK_T_INT32);
      return true;
  }
}

/* DATE_FORMAT(ts, format), TO_TIMESTAMP(s[, format]): a literal format is checked here. */
static bool ty_date_format(callb_t *c, ck_type_t *rt) {
  bool to_ts = c->fn == CK_FN_TO_TIMESTAMP || c->fn == CK_FN_TO_DATE;
  if (!(to_ts ? want(c, 0, CK_T_STRING) : want_ts(c, 0))) return false;
  if (c->n > 1) {
    if (!want(c, 1, CK_T_STRING)) return false;
    const ck_expr_t *f = c->a[1];
    char why[160];
    if (f->kind == CK_EX_LITERAL && !f->literal.is_null &&
        ck_date_pattern_check(f->literal.v.s.ptr, f->literal.v.s.len, why, sizeof why)) {
      type_error(c->err, "function %s cannot use the format '%.*s': %s", ck_fn_name(c->fn),
                 (int)(f->literal.v.s.len > 60 ? 60 : f->literal.v.s.len), f->literal.v.s.ptr,
                 why);
      return false;
    }
  }
  *rt = c->fn == CK_FN_TO_DATE ? ck_type_date() : to_ts ? CK_TYPE(CK_T_TIMESTAMP) : CK_TYPE(CK_T_STRING);
  return true;
}

/* JSON_VALUE, JSON_QUERY, JSON_EXISTS (json, path): a literal path is checked here. */
static bool ty_json(callb_t *c, ck_type_t *rt) {
  if (!want(c, 0, CK_T_STRING) || !want(c, 1, CK_T_STRING)) return false;
  const ck_expr_t *p = c->a[1];
  char why[160];
  if (p->kind == CK_EX_LITERAL && !p->literal.is_null &&
      ck_json_path_check(p->literal.v.s.ptr, p->literal.v.s.len, why, sizeof why)) {
    type_error(c->err, "function %s cannot use the path '%.*s': %s", ck_fn_name(c->fn),
               (int)(p->literal.v.s.len > 60 ? 60 : p->literal.v.s.len), p->literal.v.s.ptr, why);
    return false;
  }
  *rt = c->fn == CK_FN_JSON_EXISTS ? CK_TYPE(CK_T_BOOL) : CK_TYPE(CK_T_STRING);
  return true;
}

/* JSON_OBJECT(mode, k1, v1, …), JSON_ARRAY(mode, v1, …): the parser passes the ON NULL
 * clause as the literal mode 'NULL' or 'ABSENT'; here it becomes 'N' or 'A' followed by one
 * letter per argument, 'j' for a value that is itself JSON (a nested JSON_OBJECT or
 * JSON_ARRAY, written as it is, as Flink does), '-' for any other. */
static bool ty_json_build(callb_t *c, ck_type_t *rt) {
  const ck_expr_t *m = c->a[0];
  bool object = c->fn == CK_FN_JSON_OBJECT;
  if (m->kind != CK_EX_LITERAL || m->type.id != CK_T_STRING || m->literal.is_null) {
    type_error(c->err, "function %s is written with its own syntax: %s", ck_fn_name(c->fn),
               object ? "JSON_OBJECT(KEY k VALUE v, …)" : "JSON_ARRAY(v, …)");
    return false;
  }
  if (object && (c->n - 1) % 2) {
    type_error(c->err, "function JSON_OBJECT takes pairs of KEY k VALUE v");
    return false;
  }
  char *mode = ck_arena_alloc(c->arena, (size_t)c->n + 1);
  mode[0] = m->literal.v.s.len && m->literal.v.s.ptr[0] == 'A' ? 'A' : 'N';
  for (int i = 1; i < c->n; i++) {
    const ck_expr_t *x = c->a[i];
    if (object && i % 2 == 1) { /* a key */
      if (x->type.id == CK_T_NULL || (x->kind == CK_EX_LITERAL && x->literal.is_null)) {
        type_error(c->err, "function JSON_OBJECT cannot take NULL as a key");
        return false;
      }
      if (!want(c, i, CK_T_STRING)) return false;
    }
    mode[i] = x->kind == CK_EX_CALL && (x->fn == CK_FN_JSON_OBJECT || x->fn == CK_FN_JSON_ARRAY)
                  ? 'j' : '-';
  }
  mode[c->n] = 0;
  ck_value_t v = {.type = CK_TYPE(CK_T_STRING)};
  v.v.s.ptr = mode;
  v.v.s.len = (size_t)c->n;
  c->a[0] = ck_expr_literal(c->arena, &v);
  *rt = CK_TYPE(CK_T_STRING);
  return true;
}

static bool (*const fn_typing[CK_FN__COUNT])(callb_t *, ck_type_t *) = {
#define CK_X_FN(id, name, min, max, typing, kernel, call, alias, sig, doc) [CK_FN_##id] = typing,
    CK_FN_TABLE(CK_X_FN)
#undef CK_X_FN
};

ck_expr_t *ck_expr_call(ck_arena_t *arena, ck_fn_t fn, ck_expr_t **args, int nargs,
                        ck_error_t *err) {
  if ((unsigned)fn >= (unsigned)CK_FN__COUNT)
    return type_error(err, "unknown function %d", (int)fn);
  int lo = fn_info[fn].min_args, hi = fn_info[fn].max_args;
  if (nargs < lo || (hi >= 0 && nargs > hi)) {
    if (lo == hi)
      return type_error(err, "%s %s takes %d argument%s, not %d", fn_kind(fn), ck_fn_name(fn),
                        lo, lo == 1 ? "" : "s", nargs);
    if (hi < 0)
      return type_error(err, "%s %s takes at least %d argument%s, not %d", fn_kind(fn),
                        ck_fn_name(fn), lo, lo == 1 ? "" : "s", nargs);
    return type_error(err, "%s %s takes %d to %d arguments, not %d", fn_kind(fn),
                      ck_fn_name(fn), lo, hi, nargs);
  }
  for (int i = 0; i < nargs; i++)
    if (!args[i]) return type_error(err, "%s %s is missing argument %d", fn_kind(fn),
                                    ck_fn_name(fn), i + 1);
  ck_expr_t **a = ck_arena_alloc(arena, (size_t)nargs * sizeof *a);
  memcpy(a, args, (size_t)nargs * sizeof *a);
  callb_t c = {arena, fn, a, nargs, err};
  ck_type_t rt = CK_TYPE(CK_T_NULL);
  if (!fn_typing[fn](&c, &rt)) return NULL;
  if (fn == CK_FN_IF) return ck_expr_case(arena, &a[0], &a[1], 1, a[2], err);
  ck_expr_t *e = node_new(arena, CK_EX_CALL, rt, 0);
  e->fn = fn;
  e->nargs = nargs;
  e->args = a;
  return finish(e);
}

ck_expr_t *ck_expr_case(ck_arena_t *arena, ck_expr_t **whens, ck_expr_t **thens, int n,
                        ck_expr_t *else_, ck_error_t *err) {
  if (n < 1) return type_error(err, "CASE needs at least one WHEN branch");
  int nargs = 2 * n + (else_ ? 1 : 0);
  ck_expr_t *e = node_new(arena, CK_EX_CASE, CK_TYPE(CK_T_NULL), nargs);
  e->has_else = else_ != NULL;
  ck_type_t t = CK_TYPE(CK_T_NULL);
  for (int i = 0; i < n; i++) {
    ck_type_t wt = whens[i]->type;
    if (wt.id != CK_T_BOOL && wt.id != CK_T_NULL)
      return type_error(err, "CASE expects BOOLEAN conditions after WHEN, not %s", TNAME(wt));
    e->args[2 * i] = ck_expr_coerce(arena, whens[i], CK_TYPE(CK_T_BOOL), err);
    e->args[2 * i + 1] = thens[i];
    ck_type_t next;
    if (!ck_type_common(t, thens[i]->type, &next))
      return type_error(err, "CASE cannot mix %s and %s in its results", TNAME(t),
                        TNAME(thens[i]->type));
    t = next;
  }
  if (else_) {
    ck_type_t next;
    if (!ck_type_common(t, else_->type, &next))
      return type_error(err, "CASE cannot mix %s and %s in its results", TNAME(t),
                        TNAME(else_->type));
    t = next;
    e->args[nargs - 1] = else_;
  }
  if (t.id != CK_T_NULL)
    for (int i = 0; i < n; i++) {
      e->args[2 * i + 1] = ck_expr_coerce(arena, e->args[2 * i + 1], t, err);
      if (!e->args[2 * i + 1]) return NULL;
    }
  if (else_ && t.id != CK_T_NULL && !(e->args[nargs - 1] = ck_expr_coerce(arena, else_, t, err)))
    return NULL;
  e->type = t;
  return finish(e);
}

ck_expr_t *ck_expr_in(ck_arena_t *arena, ck_expr_t *needle, ck_expr_t **list, int n,
                      bool negated, ck_error_t *err) {
  if (n < 1) return type_error(err, "operator IN needs at least one value in its list");
  ck_expr_t *e = node_new(arena, CK_EX_IN, CK_TYPE(CK_T_BOOL), n + 1);
  e->negated = negated;
  e->args[0] = needle;
  memcpy(e->args + 1, list, (size_t)n * sizeof *list);
  ck_type_t t = needle->type;
  for (int i = 0; i < n; i++) {
    ck_type_t next;
    if (!ck_type_common(t, list[i]->type, &next))
      return type_error(err, "operator %sIN cannot take %s and %s", negated ? "NOT " : "",
                        TNAME(t), TNAME(list[i]->type));
    t = next;
  }
  if (t.id != CK_T_NULL)
    for (int i = 0; i <= n; i++)
      if (!(e->args[i] = coerce_cmp(arena, e->args[i], t, err))) return NULL;
  return finish(e);
}

/* ---- text ------------------------------------------------------------------------------- */

static void literal_to_string(const ck_value_t *v, ck_buf_t *out) {
  if (v->is_null || v->type.id == CK_T_NULL) {
    ck_buf_puts(out, "NULL");
    return;
  }
  switch (v->type.id) {
    case CK_T_NULL: break;
    case CK_T_BOOL: ck_buf_puts(out, v->v.b ? "TRUE" : "FALSE"); break;
    case CK_T_INT32:
    case CK_T_INT64: ck_buf_printf(out, "%lld", (long long)v->v.i); break;
    case CK_T_FLOAT32:
    case CK_T_FLOAT64: ck_double_format(v->v.f, out); break;
    case CK_T_DECIMAL: ck_decimal_format(v->v.dec, v->type.scale, out); break;
    case CK_T_TIMESTAMP:
      ck_buf_puts(out, ck_type_is_date(v->type) ? "DATE '" : ck_type_is_time(v->type) ? "TIME '"
                                                                                     : "TIMESTAMP '");
      if (ck_type_ts_kind(v->type) > 0) ck_timestamp_format_typed(v->type, v->v.i, out);
      else ck_timestamp_format(v->v.i, out);
      ck_buf_putc(out, '\'');
      break;
    case CK_T_STRING:
      ck_buf_putc(out, '\'');
      for (size_t i = 0; i < v->v.s.len; i++) {
        if (v->v.s.ptr[i] == '\'') ck_buf_putc(out, '\'');
        ck_buf_putc(out, v->v.s.ptr[i]);
      }
      ck_buf_putc(out, '\'');
      break;
  }
}

static void args_to_string(const ck_expr_t *e, int from, ck_buf_t *out) {
  for (int i = from; i < e->nargs; i++) {
    if (i > from) ck_buf_puts(out, ", ");
    ck_expr_to_string(e->args[i], out);
  }
}

static bool is_infix(ck_fn_t fn) {
  switch (fn) {
    case CK_FN_ADD: case CK_FN_SUB: case CK_FN_MUL: case CK_FN_DIV:
    case CK_FN_EQ: case CK_FN_NE: case CK_FN_LT: case CK_FN_LE: case CK_FN_GT: case CK_FN_GE:
    case CK_FN_AND: case CK_FN_OR: return true;
    default: return false;
  }
}

/* A node with arguments prints as prefix, args[0], suffix (which prints the other arguments):
 * that lets ck_expr_to_string loop down a chain of first operands. */
static void node_prefix(const ck_expr_t *e, ck_buf_t *out) {
  switch (e->kind) {
    case CK_EX_CAST: ck_buf_puts(out, "CAST("); return;
    case CK_EX_CASE: ck_buf_puts(out, "CASE WHEN "); return;
    case CK_EX_IN: ck_buf_putc(out, '('); return;
    case CK_EX_UDF: ck_buf_printf(out, "%s[%s@%s](", e->udf->name, e->udf->symbol, e->udf->path); return;
    default: break;
  }
  switch (e->fn) {
    case CK_FN_NEG: ck_buf_puts(out, "(- "); return;
    case CK_FN_NOT: ck_buf_puts(out, "(NOT "); return;
    case CK_FN_IS_NULL: case CK_FN_IS_NOT_NULL: case CK_FN_IS_TRUE: case CK_FN_IS_FALSE:
    case CK_FN_LIKE: case CK_FN_SIMILAR: ck_buf_putc(out, '('); return;
    default:
      if (is_infix(e->fn)) ck_buf_putc(out, '(');
      else ck_buf_printf(out, "%s(", ck_fn_name(e->fn));
      return;
  }
}

static void node_suffix(const ck_expr_t *e, ck_buf_t *out) {
  switch (e->kind) {
    case CK_EX_CAST: ck_buf_printf(out, " AS %s)", TNAME(e->type)); return;
    case CK_EX_CASE: {
      int pairs = (e->nargs - (e->has_else ? 1 : 0)) / 2;
      for (int i = 0; i < pairs; i++) {
        if (i) {
          ck_buf_puts(out, " WHEN ");
          ck_expr_to_string(e->args[2 * i], out);
        }
        ck_buf_puts(out, " THEN ");
        ck_expr_to_string(e->args[2 * i + 1], out);
      }
      if (e->has_else) {
        ck_buf_puts(out, " ELSE ");
        ck_expr_to_string(e->args[e->nargs - 1], out);
      }
      ck_buf_puts(out, " END");
      return;
    }
    case CK_EX_IN:
      ck_buf_puts(out, e->negated ? " NOT IN (" : " IN (");
      args_to_string(e, 1, out);
      ck_buf_puts(out, "))");
      return;
    case CK_EX_UDF:
      for (int i = 1; i < e->nargs; i++) {
        ck_buf_puts(out, ", ");
        ck_expr_to_string(e->args[i], out);
      }
      ck_buf_putc(out, ')');
      return;
    default: break;
  }
  switch (e->fn) {
    case CK_FN_NEG: case CK_FN_NOT: ck_buf_putc(out, ')'); return;
    case CK_FN_IS_NULL: case CK_FN_IS_NOT_NULL: case CK_FN_IS_TRUE: case CK_FN_IS_FALSE:
      ck_buf_printf(out, " %s)", ck_fn_name(e->fn));
      return;
    case CK_FN_LIKE:
    case CK_FN_SIMILAR:
      ck_buf_puts(out, e->negated ? " NOT " : " ");
      ck_buf_puts(out, ck_fn_name(e->fn));
      ck_buf_putc(out, ' ');
      ck_expr_to_string(e->args[1], out);
      if (e->nargs > 2) {
        ck_buf_puts(out, " ESCAPE ");
        ck_expr_to_string(e->args[2], out);
      }
      ck_buf_putc(out, ')');
      return;
    default:
      if (is_infix(e->fn)) {
        for (int i = 1; i < e->nargs; i++) {
          ck_buf_printf(out, " %s ", ck_fn_name(e->fn));
          ck_expr_to_string(e->args[i], out);
        }
      } else {
        for (int i = 1; i < e->nargs; i++) {
          ck_buf_puts(out, ", ");
          ck_expr_to_string(e->args[i], out);
        }
      }
      ck_buf_putc(out, ')');
      return;
  }
}

void ck_expr_to_string(const ck_expr_t *e, ck_buf_t *out) {
  /* the chain of first operands from e down, in a stack that grows on the heap */
  const ck_expr_t *local[32], **chain = local;
  size_t n = 0, cap = CK_ARRAY_LEN(local);
  for (; e->nargs > 0; e = e->args[0]) {
    if (n == cap) {
      const ck_expr_t **bigger = ck_malloc(2 * cap * sizeof *bigger);
      memcpy(bigger, chain, n * sizeof *chain);
      if (chain != local) ck_free(chain);
      chain = bigger;
      cap *= 2;
    }
    chain[n++] = e;
    node_prefix(e, out);
  }
  if (e->kind == CK_EX_COLUMN) ck_buf_printf(out, "$%d", e->column);
  else if (e->kind == CK_EX_WATERMARK) ck_buf_puts(out, "CURRENT_WATERMARK()");
  else if (e->kind == CK_EX_UDF) ck_buf_printf(out, "%s[%s@%s]()", e->udf->name, e->udf->symbol, e->udf->path);
  else if (e->kind == CK_EX_LITERAL) literal_to_string(&e->literal, out);
  else ck_buf_printf(out, "%s()", ck_fn_name(e->fn));
  while (n) node_suffix(chain[--n], out);
  if (chain != local) ck_free(chain);
}

/* ---- user-defined functions (runtime/udf.h) ---- */

ck_expr_t *ck_expr_udf(ck_arena_t *arena, const ck_udf_t *udf, ck_expr_t **args, int nargs,
                       ck_error_t *err) {
  if (nargs != udf->nargs)
    return type_error(err, "function %s takes %d argument%s, not %d (its descriptor '%s' in "
                      "library '%s' says so)", udf->name, udf->nargs, udf->nargs == 1 ? "" : "s",
                      nargs, udf->symbol, udf->path);
  ck_expr_t *e = node_new(arena, CK_EX_UDF, udf->result, nargs);
  e->udf = udf;
  for (int i = 0; i < nargs; i++) {
    ck_expr_t *a = args[i];
    if (!ck_type_eq(a->type, udf->args[i]) && a->type.id != CK_T_NULL &&
        !ck_type_assignable(a->type, udf->args[i]))
      return type_error(err, "function %s takes %s as argument %d, not %s (library '%s')",
                        udf->name, TNAME(udf->args[i]), i + 1, TNAME(a->type), udf->path);
    e->args[i] = ck_expr_coerce(arena, a, udf->args[i], err);
    if (!e->args[i]) return NULL;
  }
  return finish(e);
}
