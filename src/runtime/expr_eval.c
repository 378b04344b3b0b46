/*
 * DESIGN: column-at-a-time evaluation of bound expressions (the semantics are in expr.h; the
 * typing that guarantees each kernel sees the operand types it expects is in expr.c).
 *
 * Every node computes one vector over the whole batch, children first. A vector either
 * borrows a column of the input batch (a column reference costs nothing), owns a column it
 * computed, or is a constant: one row standing for every row. Literals and subtrees that read
 * no column are computed once per batch as constants and only broadcast at the very end.
 *
 * Kernels switch on type once per node, then run one loop per operand shape (column/column,
 * constant/column, column/constant): fixed-width arithmetic and comparisons run without a
 * branch per row, validity bitmaps are ANDed a byte at a time, and integer overflow is caught
 * with __builtin_*_overflow folded into a flag; only when the flag is set is the batch
 * rescanned for the first row that matters, which becomes the error.
 *
 * Short-circuiting in bulk: AND, OR, CASE, COALESCE and IN evaluate a later operand under a
 * row mask of the rows still undecided. A row outside the mask can raise no error (CASE WHEN
 * x <> 0 THEN CAST(s AS INT) END does not fail on the rows where x = 0), and a subtree whose
 * mask is empty is not evaluated at all. Rows outside the mask hold unspecified values that
 * the parent never reads.
 *
 * Decimals are exact: the arithmetic is runtime/decimal.h's (128 bits, 256 where a sum,
 * product or quotient does not fit on the way, rounded to the result scale by the one rule and
 * checked against the result precision); a kernel here turns its overflow into an error, like
 * integer overflow, and its division by zero into NULL.
 *
 * Recursion: eval_node evaluates a chain of first operands (a + b + c … is built left-deep,
 * any length) with a loop from the bottom up (eval_chain), recursing only into the other
 * arguments, whose nesting the SQL parser bounds; see expr.h.
 *
 * Memory: temporaries are ck_malloc'd and released before returning; the output column is
 * the caller's. Threads: re-entrant and lock-free; many subtasks may share one tree.
 */
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <unicode/uchar.h>
#include <unicode/uregex.h>
#include <unicode/utext.h>
#include <unicode/ucasemap.h>
#include <unicode/utf16.h>
#include <unicode/utf8.h>

#include "base/alloc.h"
#include "runtime/decimal.h"
#include "base/digest.h"
#include "runtime/expr.h"
#include "runtime/udf.h"

typedef unsigned __int128 u128;
typedef ck_i128 i128;

#define TNAME(t) ck_type_name((t), (char[48]){0}, 48)

/* ---- vectors ---------------------------------------------------------------------------- */

typedef struct vec {
  const ck_col_t *col; /* what to read: &own, or a column of the input batch */
  ck_col_t own;
  bool is_const; /* one row standing for every row */
} vec_t;

typedef struct ev {
  const ck_batch_t *in;
  size_t n; /* rows to compute: the batch's, or 1 inside a constant subtree */
  ck_error_t *err;
} ev_t;

static inline size_t IX(const vec_t *v, size_t i) { return v->is_const ? 0 : i; }
static inline bool VOK(const vec_t *v, size_t i) { return ck_col_valid(v->col, IX(v, i)); }
static inline bool LIVE(const uint8_t *mask, size_t i) { return !mask || mask[i]; }
static inline bool vbool(const vec_t *v, size_t i) {
  return ((const uint8_t *)v->col->values)[IX(v, i)] != 0;
}
/* Row i of a STRING column; never a NULL pointer (a column of empty strings has no data). */
static inline const char *col_str(const ck_col_t *c, size_t i, size_t *len) {
  const int32_t *off = c->values;
  *len = (size_t)(off[i + 1] - off[i]);
  return c->data ? c->data + off[i] : "";
}
static inline const char *vstr(const vec_t *v, size_t i, size_t *len) {
  return col_str(v->col, IX(v, i), len);
}
/* Row i as a value; strings point into the column (or at ""). */
static void get_value(const ck_col_t *c, size_t i, ck_value_t *out) {
  ck_col_get_value(c, i, out);
  if (c->type.id == CK_T_STRING && !out->is_null) out->v.s.ptr = col_str(c, i, &out->v.s.len);
}
static inline i128 ld128(const void *p, size_t i) {
  i128 v;
  memcpy(&v, (const char *)p + i * 16, 16);
  return v;
}
static inline void st128(void *p, size_t i, i128 v) { memcpy((char *)p + i * 16, &v, 16); }
static size_t vbytes(size_t rows) { return (rows + 7) >> 3; }

static int64_t vint(const vec_t *v, size_t i) {
  size_t j = IX(v, i);
  switch (v->col->type.id) {
    case CK_T_INT32: return ck_col_i32(v->col, j);
    case CK_T_INT64:
    case CK_T_TIMESTAMP: return ck_col_i64(v->col, j);
    case CK_T_BOOL: return ck_col_bool(v->col, j);
    default: return 0;
  }
}

/* Moves a vector (its col may point at its own column). */
static void vec_move(vec_t *dst, vec_t *src) {
  *dst = *src;
  if (src->col == &src->own) dst->col = &dst->own;
  memset(src, 0, sizeof *src);
}

static void vec_fini(vec_t *v) {
  if (v->col == &v->own) ck_col_fini(&v->own);
  v->col = NULL;
}

/* An owned output of n rows: fixed-width columns come zeroed, all valid, len = n; STRING
 * columns come empty (len 0) to be appended to. */
static ck_col_t *out_init(vec_t *o, ck_type_t t, size_t n) {
  ck_col_init(&o->own, t, n);
  o->col = &o->own;
  o->is_const = false;
  if (t.id != CK_T_STRING) {
    memset(o->own.values, 0, n * ck_type_width(t));
    o->own.len = n;
  }
  return &o->own;
}

/* An owned output to append n rows to, whatever the type. */
static ck_col_t *out_append(vec_t *o, ck_type_t t, size_t n) {
  ck_col_init(&o->own, t, n);
  o->col = &o->own;
  o->is_const = false;
  return &o->own;
}

static void out_null(vec_t *o, ck_type_t t) {
  ck_col_init(&o->own, t, 1);
  ck_col_append_null(&o->own);
  o->col = &o->own;
  o->is_const = true;
}

static uint8_t *bitmap(ck_col_t *c) {
  if (!c->validity) {
    c->validity = ck_malloc(vbytes(c->cap));
    memset(c->validity, 0xff, vbytes(c->cap));
  }
  return c->validity;
}

/* Bits past len stay set, so a later append starts on a valid bit. */
static void bitmap_tail(ck_col_t *c) {
  if (c->validity && (c->len & 7)) c->validity[c->len >> 3] |= (uint8_t)(0xffu << (c->len & 7));
}

/* out.validity &= k.validity (a constant k is valid: constant NULLs never reach here). */
static void and_valid(ck_col_t *c, const vec_t *k) {
  if (k->is_const || !k->col->validity) return;
  uint8_t *d = bitmap(c);
  const uint8_t *s = k->col->validity;
  size_t nb = vbytes(c->len);
  for (size_t b = 0; b < nb; b++) d[b] &= s[b];
  bitmap_tail(c);
}

/* A BOOL output from per-row value and validity bytes. */
static void out_bool(vec_t *o, size_t n, const uint8_t *val, const uint8_t *ok) {
  ck_col_t *c = out_init(o, CK_TYPE(CK_T_BOOL), n);
  memcpy(c->values, val, n);
  if (!ok) return;
  if (!memchr(ok, 0, n)) return;
  uint8_t *b = bitmap(c);
  for (size_t byte = 0; byte < vbytes(n); byte++) {
    uint8_t bits = 0;
    for (size_t k = 0; k < 8 && byte * 8 + k < n; k++) bits |= (uint8_t)((ok[byte * 8 + k] & 1) << k);
    b[byte] = bits;
  }
  bitmap_tail(c);
}

static bool any_live(const uint8_t *mask, size_t n) { return memchr(mask, 1, n) != NULL; }

/* ---- value text (error messages, CAST to VARCHAR) ---------------------------------------- */

static void fmt_float(float f, ck_buf_t *out) {
  if (!isfinite(f) || f == 0) {
    ck_double_format(f, out);
    return;
  }
  char tmp[40];
  for (int prec = 1; prec <= 9; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, (double)f);
    if (strtof(tmp, NULL) == f) break;
  }
  ck_double_format(strtod(tmp, NULL), out); /* the same digits, laid out like a double */
}

static void fmt_value(const ck_value_t *v, ck_buf_t *out) {
  switch (v->type.id) {
    case CK_T_NULL: ck_buf_puts(out, "NULL"); break;
    case CK_T_BOOL: ck_buf_puts(out, v->v.b ? "TRUE" : "FALSE"); break;
    case CK_T_INT32:
    case CK_T_INT64: ck_buf_printf(out, "%lld", (long long)v->v.i); break;
    case CK_T_FLOAT32: fmt_float((float)v->v.f, out); break;
    case CK_T_FLOAT64: ck_double_format(v->v.f, out); break;
    case CK_T_DECIMAL: ck_decimal_format(v->v.dec, v->type.scale, out); break;
    case CK_T_TIMESTAMP:
      if (ck_type_ts_kind(v->type) > 0) ck_timestamp_format_typed(v->type, v->v.i, out);
      else ck_timestamp_format(v->v.i, out);
      break;
    case CK_T_STRING: ck_buf_append(out, v->v.s.ptr, v->v.s.len); break;
  }
}

/* A value as an error message shows it: strings quoted (and cut short), the rest as SQL
 * prints them. */
static void value_text(const ck_value_t *v, ck_buf_t *out) {
  if (v->is_null) {
    ck_buf_puts(out, "NULL");
  } else if (v->type.id == CK_T_STRING) {
    size_t n = v->v.s.len > 64 ? 64 : v->v.s.len;
    ck_buf_putc(out, '\'');
    ck_buf_append(out, v->v.s.ptr, n);
    ck_buf_puts(out, n < v->v.s.len ? "...'" : "'");
  } else {
    fmt_value(v, out);
  }
}

/* ---- decimal arithmetic: runtime/decimal.h (128/256-bit, the one rounding rule) ---------- */

#define P10 ck_dec_p10
static inline u128 uabs(i128 v) { return ck_dec_abs(v); }

/* Exact conversions between decimals and doubles. */
static double dec_to_double(i128 v, int scale) {
  u128 m = uabs(v);
  static const double p10d[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  if (m < ((u128)1 << 53) && scale <= 22) { /* both exact: one correctly rounded division */
    double d = (double)m / p10d[scale];
    return v < 0 ? -d : d;
  }
  ck_buf_t b;
  ck_buf_init(&b);
  ck_decimal_format(v, scale, &b);
  double d = strtod(b.data, NULL);
  ck_buf_fini(&b);
  return d;
}

/* Through the shortest text that reads back as d, as Java's BigDecimal.valueOf does:
 * CAST(0.1 AS DECIMAL(20, 19)) is 0.1000000000000000000, not 0.1000000000000000055. */
static bool double_to_dec(double d, bool is_float, int p, int s, i128 *out) {
  if (!isfinite(d)) return false;
  ck_buf_t b;
  ck_buf_init(&b);
  if (is_float) fmt_float((float)d, &b);
  else ck_double_format(d, &b);
  bool ok = ck_decimal_parse(b.data, b.len, p, s, out);
  ck_buf_fini(&b);
  return ok;
}

/* ---- kernel plumbing -------------------------------------------------------------------- */

typedef struct kc {
  const ev_t *ev;
  const ck_expr_t *e;
  const uint8_t *mask; /* rows that matter (NULL: all) */
  vec_t *k;            /* evaluated arguments */
  int nk;
  size_t n;
  vec_t *out;
} kc_t;

/* Row i matters: it is live and every argument is valid there. Only such rows raise errors. */
static bool counts(const kc_t *c, size_t i) {
  if (!LIVE(c->mask, i)) return false;
  for (int j = 0; j < c->nk; j++)
    if (!VOK(&c->k[j], i)) return false;
  return true;
}

/* Loops over n rows for each operand shape; ia/ib index the operands. */
#define LOOP2(CA, CB, N, ...)                                                     \
  do {                                                                             \
    if (!(CA) && !(CB)) {                                                          \
      for (size_t i = 0; i < (N); i++) {                                           \
        const size_t ia = i, ib = i;                                               \
        __VA_ARGS__                                                                \
      }                                                                            \
    } else if (!(CB)) {                                                            \
      for (size_t i = 0; i < (N); i++) {                                           \
        const size_t ia = 0, ib = i;                                               \
        __VA_ARGS__                                                                \
      }                                                                            \
    } else if (!(CA)) {                                                            \
      for (size_t i = 0; i < (N); i++) {                                           \
        const size_t ia = i, ib = 0;                                               \
        __VA_ARGS__                                                                \
      }                                                                            \
    } else {                                                                       \
      for (size_t i = 0; i < (N); i++) {                                           \
        const size_t ia = 0, ib = 0;                                               \
        __VA_ARGS__                                                                \
      }                                                                            \
    }                                                                              \
  } while (0)

#define LOOP1(CA, N, ...)                                                         \
  do {                                                                             \
    if (!(CA)) {                                                                   \
      for (size_t i = 0; i < (N); i++) {                                           \
        const size_t ia = i;                                                       \
        __VA_ARGS__                                                                \
      }                                                                            \
    } else {                                                                       \
      for (size_t i = 0; i < (N); i++) {                                           \
        const size_t ia = 0;                                                       \
        __VA_ARGS__                                                                \
      }                                                                            \
    }                                                                              \
  } while (0)

static bool int_fits(i128 x, ck_type_id_t t) {
  return t == CK_T_INT32 ? x >= INT32_MIN && x <= INT32_MAX : x >= INT64_MIN && x <= INT64_MAX;
}

/* A loop flagged an integer overflow: find the first row that matters and report it. The
 * flag may come from a NULL or masked-out row only, in which case there is no error. */
static int int_overflow(const kc_t *c) {
  ck_fn_t fn = c->e->fn;
  ck_type_id_t t = c->e->type.id;
  for (size_t i = 0; i < c->n; i++) {
    if (!counts(c, i)) continue;
    i128 a = vint(&c->k[0], i), b = c->nk > 1 ? vint(&c->k[1], i) : 0, r;
    switch (fn) {
      case CK_FN_ADD: r = a + b; break;
      case CK_FN_SUB: r = a - b; break;
      case CK_FN_MUL: r = a * b; break;
      case CK_FN_DIV: r = b ? a / b : 0; break;
      case CK_FN_NEG: r = -a; break;
      case CK_FN_ABS: r = a < 0 ? -a : a; break;
      default: continue;
    }
    if (int_fits(r, t)) continue;
    char tn[48];
    ck_type_name(c->e->type, tn, sizeof tn);
    if (fn == CK_FN_NEG)
      return ck_error_set(c->ev->err, CK_EEVAL,
                          "could not compute -(%lld): integer overflow, the result does not "
                          "fit in %s", (long long)a, tn);
    if (fn == CK_FN_ABS)
      return ck_error_set(c->ev->err, CK_EEVAL,
                          "could not compute ABS(%lld): integer overflow, the result does not "
                          "fit in %s", (long long)a, tn);
    return ck_error_set(c->ev->err, CK_EEVAL,
                        "could not compute %lld %s %lld: integer overflow, the result does not "
                        "fit in %s", (long long)a, ck_fn_name(fn), (long long)b, tn);
  }
  return 0;
}

/* The one rule for floating point: a value that is not finite never exists. An operation
 * whose finite operands would give ±Infinity or NaN (overflow, SQRT of a negative number,
 * POWER with no real result) is an evaluation error naming the operation, like integer
 * overflow; division by zero stays NULL for every type. A loop flagged a non-finite result:
 * find the first row that matters and report it (a NULL or masked-out row raises nothing). */
static void float_text(const vec_t *v, size_t i, ck_buf_t *out) {
  ck_value_t x;
  get_value(v->col, IX(v, i), &x);
  fmt_value(&x, out);
}

static int float_nonfinite(const kc_t *c) {
  const ck_col_t *o = &c->out->own;
  bool f32 = o->type.id == CK_T_FLOAT32;
  ck_fn_t fn = c->e->fn;
  for (size_t i = 0; i < c->n; i++) {
    if (!counts(c, i) || !ck_col_valid(o, i)) continue;
    double r = f32 ? (double)ck_col_f32(o, i) : ck_col_f64(o, i);
    if (isfinite(r)) continue;
    ck_buf_t a, b;
    ck_buf_init(&a);
    ck_buf_init(&b);
    float_text(&c->k[0], i, &a);
    if (c->nk > 1) float_text(&c->k[1], i, &b);
    const char *tn = f32 ? "FLOAT" : "DOUBLE";
    switch (fn) {
      case CK_FN_SQRT:
        ck_error_set(c->ev->err, CK_EEVAL, "could not compute SQRT(%s): the square root of a "
                     "negative number is not a real number", a.data);
        break;
      case CK_FN_POWER:
        if (isnan(r))
          ck_error_set(c->ev->err, CK_EEVAL, "could not compute POWER(%s, %s): a negative number "
                       "raised to a non-integer power is not a real number", a.data, b.data);
        else if (ck_col_f64(c->k[0].col, IX(&c->k[0], i)) == 0)
          ck_error_set(c->ev->err, CK_EEVAL, "could not compute POWER(%s, %s): zero raised to a "
                       "negative power is infinite", a.data, b.data);
        else
          ck_error_set(c->ev->err, CK_EEVAL, "could not compute POWER(%s, %s): floating-point "
                       "overflow, the result does not fit in %s", a.data, b.data, tn);
        break;
      case CK_FN_ROUND:
        ck_error_set(c->ev->err, CK_EEVAL, "could not compute ROUND(%s, %s): floating-point "
                     "overflow, the result does not fit in %s", a.data, c->nk > 1 ? b.data : "0", tn);
        break;
      default:
        ck_error_set(c->ev->err, CK_EEVAL, "could not compute %s %s %s: floating-point overflow, "
                     "the result does not fit in %s", a.data, ck_fn_name(fn), b.data, tn);
        break;
    }
    ck_error_detail(c->ev->err, "clink never produces Infinity or NaN: an operation whose "
                    "result is not a finite number stops the job");
    ck_buf_fini(&a);
    ck_buf_fini(&b);
    return CK_EEVAL;
  }
  return 0;
}

/* ---- arithmetic ------------------------------------------------------------------------- */

#define INT_ARITH(T, MINV)                                                                  \
  do {                                                                                      \
    const T *a = A->col->values, *b = B->col->values;                                       \
    T *r = o->values;                                                                       \
    switch (fn) {                                                                           \
      case CK_FN_ADD:                                                                       \
        LOOP2(ca, cb, n, {                                                                  \
          T x;                                                                              \
          ovf |= __builtin_add_overflow(a[ia], b[ib], &x);                                  \
          r[i] = x;                                                                         \
        });                                                                                 \
        break;                                                                              \
      case CK_FN_SUB:                                                                       \
        LOOP2(ca, cb, n, {                                                                  \
          T x;                                                                              \
          ovf |= __builtin_sub_overflow(a[ia], b[ib], &x);                                  \
          r[i] = x;                                                                         \
        });                                                                                 \
        break;                                                                              \
      case CK_FN_MUL:                                                                       \
        LOOP2(ca, cb, n, {                                                                  \
          T x;                                                                              \
          ovf |= __builtin_mul_overflow(a[ia], b[ib], &x);                                  \
          r[i] = x;                                                                         \
        });                                                                                 \
        break;                                                                              \
      default: /* DIV, MOD */                                                               \
        LOOP2(ca, cb, n, {                                                                  \
          T x = a[ia], y = b[ib];                                                           \
          if (y == 0) {                                                                     \
            r[i] = 0;                                                                       \
            zero = 1;                                                                       \
          } else if (y == -1) {                                                             \
            ovf |= fn == CK_FN_DIV && x == MINV;                                            \
            r[i] = (fn == CK_FN_MOD || x == MINV) ? 0 : (T)-x;                              \
          } else {                                                                          \
            r[i] = fn == CK_FN_DIV ? (T)(x / y) : (T)(x % y);                               \
          }                                                                                 \
        });                                                                                 \
        break;                                                                              \
    }                                                                                       \
  } while (0)

#define FLT_ARITH(T)                                                                        \
  do {                                                                                      \
    const T *a = A->col->values, *b = B->col->values;                                       \
    T *r = o->values;                                                                       \
    switch (fn) {                                                                           \
      case CK_FN_ADD: LOOP2(ca, cb, n, { r[i] = a[ia] + b[ib]; }); break;                   \
      case CK_FN_SUB: LOOP2(ca, cb, n, { r[i] = a[ia] - b[ib]; }); break;                   \
      case CK_FN_MUL: LOOP2(ca, cb, n, { r[i] = a[ia] * b[ib]; }); break;                   \
      case CK_FN_DIV:                                                                       \
        LOOP2(ca, cb, n, {                                                                  \
          T y = b[ib];                                                                      \
          zero |= y == 0;                                                                   \
          r[i] = y != 0 ? a[ia] / y : 0;                                                    \
        });                                                                                 \
        break;                                                                              \
      default:                                                                              \
        LOOP2(ca, cb, n, {                                                                  \
          T y = b[ib];                                                                      \
          zero |= y == 0;                                                                   \
          r[i] = y != 0 ? (T)fmod(a[ia], y) : 0;                                            \
        });                                                                                 \
        break;                                                                              \
    }                                                                                       \
    for (size_t i = 0; i < n; i++) nonfinite |= !isfinite(r[i]);                            \
  } while (0)

static bool is_zero(const vec_t *v, size_t i) {
  size_t j = IX(v, i);
  switch (v->col->type.id) {
    case CK_T_INT32: return ck_col_i32(v->col, j) == 0;
    case CK_T_INT64: return ck_col_i64(v->col, j) == 0;
    case CK_T_FLOAT32: return ck_col_f32(v->col, j) == 0;
    case CK_T_FLOAT64: return ck_col_f64(v->col, j) == 0;
    case CK_T_DECIMAL: return ck_col_dec(v->col, j) == 0;
    default: return false;
  }
}

static int k_dec_arith(kc_t *c) {
  const vec_t *A = &c->k[0], *B = &c->k[1];
  ck_type_t t1 = A->col->type, t2 = B->col->type, rt = c->e->type;
  ck_fn_t fn = c->e->fn;
  ck_dec_op_t op = ck_dec_op(t1.scale, t2.scale, rt.scale, rt.precision);
  size_t n = c->n;
  ck_col_t *o = out_init(c->out, rt, n);
  and_valid(o, A);
  and_valid(o, B);
  const void *pa = A->col->values, *pb = B->col->values;
  for (size_t i = 0; i < n; i++) {
    i128 a = ld128(pa, IX(A, i)), b = ld128(pb, IX(B, i)), r = 0;
    int st;
    switch (fn) {
      case CK_FN_ADD: st = ck_dec_add(&op, a, b, &r); break;
      case CK_FN_SUB: st = ck_dec_sub(&op, a, b, &r); break;
      case CK_FN_MUL: st = ck_dec_mul(&op, a, b, &r); break;
      case CK_FN_DIV: st = ck_dec_div(&op, a, b, &r); break;
      default: st = ck_dec_mod(&op, a, b, &r); break;
    }
    if (st == CK_DEC_NULL) {
      ck_col_set_null(o, i);
    } else if (st == CK_DEC_OVERFLOW && counts(c, i)) {
      ck_buf_t x, y;
      ck_buf_init(&x);
      ck_buf_init(&y);
      ck_decimal_format(a, t1.scale, &x);
      ck_decimal_format(b, t2.scale, &y);
      ck_error_set(c->ev->err, CK_EEVAL,
                   "could not compute %s %s %s: decimal overflow, the result does not fit in %s",
                   x.data, ck_fn_name(fn), y.data, TNAME(rt));
      ck_buf_fini(&x);
      ck_buf_fini(&y);
      return CK_EEVAL;
    }
    st128(o->values, i, r);
  }
  return 0;
}

static int k_arith(kc_t *c) {
  const vec_t *A = &c->k[0], *B = &c->k[1];
  ck_type_t rt = c->e->type;
  if (rt.id == CK_T_DECIMAL) return k_dec_arith(c);
  ck_fn_t fn = c->e->fn;
  size_t n = c->n;
  bool ca = A->is_const, cb = B->is_const;
  ck_col_t *o = out_init(c->out, rt, n);
  and_valid(o, A);
  and_valid(o, B);
  int ovf = 0, zero = 0, nonfinite = 0;
  switch (rt.id) {
    case CK_T_INT32: INT_ARITH(int32_t, INT32_MIN); break;
    case CK_T_INT64: INT_ARITH(int64_t, INT64_MIN); break;
    case CK_T_FLOAT32: FLT_ARITH(float); break;
    case CK_T_FLOAT64: FLT_ARITH(double); break;
    default: ck_assert(!"arithmetic on a non-numeric type");
  }
  if (zero)
    for (size_t i = 0; i < n; i++)
      if (is_zero(B, i)) ck_col_set_null(o, i);
  if (nonfinite) return float_nonfinite(c);
  return ovf ? int_overflow(c) : 0;
}

static int k_neg_abs(kc_t *c) {
  const vec_t *A = &c->k[0];
  ck_type_t rt = c->e->type;
  bool neg = c->e->fn == CK_FN_NEG, ca = A->is_const;
  size_t n = c->n;
  ck_col_t *o = out_init(c->out, rt, n);
  and_valid(o, A);
  int ovf = 0;
  switch (rt.id) {
    case CK_T_INT32: {
      const int32_t *a = A->col->values;
      int32_t *r = o->values;
      LOOP1(ca, n, {
        int32_t x;
        ovf |= (neg || a[ia] < 0) ? __builtin_sub_overflow(0, a[ia], &x) : (x = a[ia], 0);
        r[i] = x;
      });
      break;
    }
    case CK_T_INT64: {
      const int64_t *a = A->col->values;
      int64_t *r = o->values;
      LOOP1(ca, n, {
        int64_t x;
        ovf |= (neg || a[ia] < 0) ? __builtin_sub_overflow(0, a[ia], &x) : (x = a[ia], 0);
        r[i] = x;
      });
      break;
    }
    case CK_T_FLOAT32: {
      const float *a = A->col->values;
      float *r = o->values;
      LOOP1(ca, n, { r[i] = neg ? -a[ia] : fabsf(a[ia]); });
      break;
    }
    case CK_T_FLOAT64: {
      const double *a = A->col->values;
      double *r = o->values;
      LOOP1(ca, n, { r[i] = neg ? -a[ia] : fabs(a[ia]); });
      break;
    }
    case CK_T_DECIMAL:
      for (size_t i = 0; i < n; i++) {
        i128 x = ld128(A->col->values, IX(A, i));
        st128(o->values, i, neg || x < 0 ? -x : x);
      }
      break;
    default: ck_assert(!"unary minus on a non-numeric type");
  }
  return ovf ? int_overflow(c) : 0;
}

/* ---- comparisons ------------------------------------------------------------------------ */

#define CMP_LOOPS(LA, LB)                                                    \
  do {                                                                       \
    switch (fn) {                                                            \
      case CK_FN_EQ: LOOP2(ca, cb, n, { r[i] = (LA) == (LB); }); break;      \
      case CK_FN_NE: LOOP2(ca, cb, n, { r[i] = (LA) != (LB); }); break;      \
      case CK_FN_LT: LOOP2(ca, cb, n, { r[i] = (LA) < (LB); }); break;       \
      case CK_FN_LE: LOOP2(ca, cb, n, { r[i] = (LA) <= (LB); }); break;      \
      case CK_FN_GT: LOOP2(ca, cb, n, { r[i] = (LA) > (LB); }); break;       \
      default: LOOP2(ca, cb, n, { r[i] = (LA) >= (LB); }); break;            \
    }                                                                        \
  } while (0)

#define CMP_FIXED(T)                                                         \
  do {                                                                       \
    const T *a = A->col->values, *b = B->col->values;                        \
    CMP_LOOPS(a[ia], b[ib]);                                                 \
  } while (0)

/* Result of fn given the sign of a three-way comparison (-1, 0, 1 → index 0, 1, 2). */
static const uint8_t cmp_table[6][3] = {
    {0, 1, 0}, /* = */ {1, 0, 1}, /* <> */ {1, 0, 0}, /* < */
    {1, 1, 0}, /* <= */ {0, 0, 1}, /* > */ {0, 1, 1}, /* >= */
};

static int str_cmp(const char *a, size_t na, const char *b, size_t nb) {
  int r = memcmp(a, b, na < nb ? na : nb);
  if (r) return r < 0 ? -1 : 1;
  return na < nb ? -1 : na > nb;
}

static int k_compare(kc_t *c) {
  const vec_t *A = &c->k[0], *B = &c->k[1];
  ck_fn_t fn = c->e->fn;
  size_t n = c->n;
  bool ca = A->is_const, cb = B->is_const;
  ck_col_t *o = out_init(c->out, CK_TYPE(CK_T_BOOL), n);
  and_valid(o, A);
  and_valid(o, B);
  uint8_t *r = o->values;
  switch (A->col->type.id) {
    case CK_T_BOOL: CMP_FIXED(uint8_t); break;
    case CK_T_INT32: CMP_FIXED(int32_t); break;
    case CK_T_INT64:
    case CK_T_TIMESTAMP: CMP_FIXED(int64_t); break;
    case CK_T_FLOAT32: CMP_FIXED(float); break;
    case CK_T_FLOAT64: CMP_FIXED(double); break;
    case CK_T_DECIMAL: {
      const void *pa = A->col->values, *pb = B->col->values;
      CMP_LOOPS(ld128(pa, ia), ld128(pb, ib));
      break;
    }
    case CK_T_STRING: {
      const uint8_t *row = cmp_table[fn - CK_FN_EQ];
      for (size_t i = 0; i < n; i++) {
        size_t na, nb;
        const char *sa = vstr(A, i, &na), *sb = vstr(B, i, &nb);
        r[i] = row[str_cmp(sa, na, sb, nb) + 1];
      }
      break;
    }
    default: ck_assert(!"comparison of an unsupported type");
  }
  return 0;
}

/* Equality of row i of a and row j of b (same type, both valid). */
static bool veq(const vec_t *a, size_t i, const vec_t *b, size_t j) {
  size_t x = IX(a, i), y = IX(b, j);
  const ck_col_t *p = a->col, *q = b->col;
  switch (p->type.id) {
    case CK_T_BOOL: return ck_col_bool(p, x) == ck_col_bool(q, y);
    case CK_T_INT32: return ck_col_i32(p, x) == ck_col_i32(q, y);
    case CK_T_INT64:
    case CK_T_TIMESTAMP: return ck_col_i64(p, x) == ck_col_i64(q, y);
    case CK_T_FLOAT32: return ck_col_f32(p, x) == ck_col_f32(q, y);
    case CK_T_FLOAT64: return ck_col_f64(p, x) == ck_col_f64(q, y);
    case CK_T_DECIMAL: return ck_col_dec(p, x) == ck_col_dec(q, y);
    case CK_T_STRING: {
      size_t na, nb;
      const char *sa = col_str(p, x, &na), *sb = col_str(q, y, &nb);
      return na == nb && memcmp(sa, sb, na) == 0;
    }
    case CK_T_NULL: return false;
  }
  return false;
}

/* ---- numeric functions ------------------------------------------------------------------ */

/* Digits of the shortest decimal that reads back as x (finite, > 0): x = 0.D1…Dk × 10^e. */
static int shortest_digits(double x, bool as_float, char *dig, int *e) {
  char tmp[48];
  int maxp = as_float ? 9 : 17;
  for (int prec = 1; prec <= maxp; prec++) {
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, x);
    if (as_float ? strtof(tmp, NULL) == (float)x : strtod(tmp, NULL) == x) break;
  }
  int k = 0;
  const char *p = tmp;
  for (; *p && *p != 'e'; p++)
    if (*p >= '0' && *p <= '9') dig[k++] = *p;
  *e = atoi(p + 1) + 1;
  while (k > 1 && dig[k - 1] == '0') k--;
  return k;
}

/* ROUND(x, d) for doubles, half away from zero on the shortest decimal text of x (what
 * Flink's BigDecimal.valueOf path gives): ROUND(2.675, 2) = 2.68. */
static double round_double(double x, int64_t d, bool as_float) {
  if (!isfinite(x) || x == 0) return x;
  if (d == 0) return round(x);
  if (d > 400) return x;
  if (d < -400) return 0.0;
  char dig[48];
  int e;
  int k = shortest_digits(fabs(x), as_float, dig, &e);
  int64_t keep = (int64_t)e + d; /* digits at or above 10^-d */
  if (keep >= k) return x;
  if (keep < 0) return 0.0;
  char buf[96];
  buf[0] = '0'; /* room for a carry */
  memcpy(buf + 1, dig, (size_t)keep);
  size_t len = (size_t)keep + 1;
  if (dig[keep] >= '5') {
    size_t j = len - 1;
    while (buf[j] == '9') buf[j--] = '0';
    buf[j]++;
  }
  snprintf(buf + len, sizeof buf - len, "e%lld", (long long)(e - keep));
  double r = strtod(buf, NULL);
  return x < 0 ? -r : r;
}

/* TRUNCATE(x, d) for doubles: the shortest decimal text of x cut after d places. */
static double trunc_double(double x, int64_t d, bool as_float) {
  if (!isfinite(x) || x == 0) return x;
  if (d == 0) return trunc(x);
  if (d > 400) return x;
  if (d < -400) return 0.0;
  char dig[48];
  int e;
  int k = shortest_digits(fabs(x), as_float, dig, &e);
  int64_t keep = (int64_t)e + d;
  if (keep >= k) return x;
  if (keep <= 0) return 0.0;
  char buf[96];
  memcpy(buf, dig, (size_t)keep);
  snprintf(buf + keep, sizeof buf - (size_t)keep, "e%lld", (long long)(e - keep));
  double r = strtod(buf, NULL);
  return x < 0 ? -r : r;
}

static int k_round(kc_t *c) {
  const vec_t *A = &c->k[0], *D = c->nk > 1 ? &c->k[1] : NULL;
  bool trunc_mode = c->e->fn == CK_FN_TRUNCATE;
  ck_type_t rt = c->e->type, at = A->col->type;
  size_t n = c->n;
  ck_col_t *o = out_init(c->out, rt, n);
  and_valid(o, A);
  if (D) and_valid(o, D);
  bool nonfinite = false;
  for (size_t i = 0; i < n; i++) {
    int64_t d = D ? vint(D, i) : 0;
    size_t j = IX(A, i);
    switch (at.id) {
      case CK_T_INT32:
      case CK_T_INT64: {
        i128 x = vint(A, i), r = x;
        if (d < 0) {
          i128 m = (i128)P10[d < -38 ? 38 : -d], q = x / m, rem = x % m;
          if (!trunc_mode && ck_dec_round_away(uabs(rem), (u128)m)) q += x < 0 ? -1 : 1;
          r = q * m;
        }
        if (!int_fits(r, at.id)) {
          if (!counts(c, i)) continue;
          return ck_error_set(c->ev->err, CK_EEVAL,
                              "could not compute %s(%lld, %lld): integer overflow, the result "
                              "does not fit in %s", ck_fn_name(c->e->fn), (long long)x,
                              (long long)d, TNAME(at));
        }
        if (at.id == CK_T_INT32) ((int32_t *)o->values)[i] = (int32_t)r;
        else ((int64_t *)o->values)[i] = (int64_t)r;
        break;
      }
      case CK_T_FLOAT32: {
        float x = ck_col_f32(A->col, j);
        float r = (float)(trunc_mode ? trunc_double(x, d, true) : round_double(x, d, true));
        ((float *)o->values)[i] = r;
        nonfinite |= !isfinite(r);
        break;
      }
      case CK_T_FLOAT64: {
        double x = ck_col_f64(A->col, j);
        double r = trunc_mode ? trunc_double(x, d, false) : round_double(x, d, false);
        ((double *)o->values)[i] = r;
        nonfinite |= !isfinite(r);
        break;
      }
      case CK_T_DECIMAL: {
        i128 v = ck_col_dec(A->col, j), r = 0;
        bool ok;
        if (d < -80) d = -80;
        if (d >= at.scale) {
          ok = ck_dec_rescale(v, at.scale, rt.scale, rt.precision, &r);
        } else if (trunc_mode) {
          int cut = (int)(at.scale - d);
          r = cut > 38 ? 0 : v / (i128)P10[cut];
          ok = true;
          if (d < 0 && r != 0) ok = -d <= 38 && !__builtin_mul_overflow(r, (i128)P10[-d], &r);
          ok = ok && uabs(r) < (u128)P10[rt.precision];
        } else {
          ck_u256_t m = ck_u256_of(uabs(v));
          ck_u256_div_p10_round(&m, (int)(at.scale - d));
          ok = d < 0 ? ck_u256_mul_p10(&m, (int)-d) : true;
          ok = ok && ck_dec_finish(m, v < 0, rt.scale, rt.scale, rt.precision, &r);
        }
        if (!ok && counts(c, i)) {
          ck_buf_t b;
          ck_buf_init(&b);
          ck_decimal_format(v, at.scale, &b);
          ck_error_set(c->ev->err, CK_EEVAL,
                       "could not compute %s(%s, %lld): decimal overflow, the result does not "
                       "fit in %s", ck_fn_name(c->e->fn), b.data, (long long)d, TNAME(rt));
          ck_buf_fini(&b);
          return CK_EEVAL;
        }
        st128(o->values, i, r);
        break;
      }
      default: ck_assert(!"ROUND of a non-numeric type");
    }
  }
  return nonfinite ? float_nonfinite(c) : 0;
}

static int k_floor_ceil(kc_t *c) {
  const vec_t *A = &c->k[0];
  ck_type_t rt = c->e->type, at = A->col->type;
  bool is_floor = c->e->fn == CK_FN_FLOOR, ca = A->is_const;
  size_t n = c->n;
  ck_col_t *o = out_init(c->out, rt, n);
  and_valid(o, A);
  switch (at.id) {
    case CK_T_INT32:
    case CK_T_INT64:
      if (ca)
        for (size_t i = 0; i < n; i++) memcpy((char *)o->values + i * ck_type_width(at), A->col->values, ck_type_width(at));
      else
        memcpy(o->values, A->col->values, n * ck_type_width(at));
      break;
    case CK_T_FLOAT32: {
      const float *a = A->col->values;
      float *r = o->values;
      LOOP1(ca, n, { r[i] = is_floor ? floorf(a[ia]) : ceilf(a[ia]); });
      break;
    }
    case CK_T_FLOAT64: {
      const double *a = A->col->values;
      double *r = o->values;
      LOOP1(ca, n, { r[i] = is_floor ? floor(a[ia]) : ceil(a[ia]); });
      break;
    }
    case CK_T_DECIMAL: {
      i128 m = (i128)P10[at.scale];
      for (size_t i = 0; i < n; i++) {
        i128 v = ld128(A->col->values, IX(A, i)), q = v / m, rem = v % m;
        if (is_floor && rem < 0) q--;
        if (!is_floor && rem > 0) q++;
        st128(o->values, i, q); /* |q| < 10^(p-s) + 1 fits DECIMAL(1+p-s, 0) */
      }
      break;
    }
    default: ck_assert(!"FLOOR/CEIL of a non-numeric type");
  }
  return 0;
}

static int k_power_sqrt(kc_t *c) {
  const vec_t *A = &c->k[0];
  bool is_sqrt = c->e->fn == CK_FN_SQRT, ca = A->is_const;
  size_t n = c->n;
  ck_col_t *o = out_init(c->out, CK_TYPE(CK_T_FLOAT64), n);
  const double *a = A->col->values;
  double *r = o->values;
  and_valid(o, A);
  if (is_sqrt) {
    LOOP1(ca, n, { r[i] = sqrt(a[ia]); });
  } else {
    const vec_t *B = &c->k[1];
    const double *b = B->col->values;
    bool cb = B->is_const;
    and_valid(o, B);
    LOOP2(ca, cb, n, { r[i] = pow(a[ia], b[ib]); });
  }
  bool nonfinite = false;
  for (size_t i = 0; i < n; i++) nonfinite |= !isfinite(r[i]);
  return nonfinite ? float_nonfinite(c) : 0;
}

/* ---- strings ---------------------------------------------------------------------------- */

static inline size_t u8len(unsigned char ch) {
  return ch < 0xC0 ? 1 : ch < 0xE0 ? 2 : ch < 0xF0 ? 3 : 4;
}

/* Byte offset of code point k (or n when the string is shorter). */
static size_t u8_offset(const char *s, size_t n, int64_t k) {
  size_t pos = 0;
  while (k > 0 && pos < n) {
    pos += u8len((unsigned char)s[pos]);
    k--;
  }
  return pos < n ? pos : n;
}

/* Room for `extra` more bytes in a STRING column under construction. */
static void str_room(ck_col_t *c, size_t extra) {
  if (c->data_len + extra <= c->data_cap) return;
  size_t cap = c->data_cap ? c->data_cap : 256;
  while (cap < c->data_len + extra) cap *= 2;
  c->data = ck_realloc(c->data, cap);
  c->data_cap = cap;
}

/* Ends a row whose `len` bytes were written at data + data_len. */
static void str_commit(ck_col_t *c, size_t len) {
  if (c->len >= c->cap) ck_col_reserve(c, c->len + 1);
  c->data_len += len;
  ((int32_t *)c->values)[c->len + 1] = (int32_t)c->data_len;
  c->len++;
}

/* Appends bytes to the row under construction (`*at` bytes written so far). */
static void str_put(ck_col_t *c, size_t *at, const char *p, size_t n) {
  str_room(c, *at + n);
  if (n) memcpy(c->data + c->data_len + *at, p, n);
  *at += n;
}

/* UPPER / LOWER: full Unicode case mapping of the root locale (ICU's UCaseMap over UTF-8),
 * as Java's String.toUpperCase does for Flink: UPPER('straße') = 'STRASSE', so a result may be
 * longer than its argument. Rows of ASCII only take a byte loop. */
static int k_case_conv(kc_t *c) {
  const vec_t *A = &c->k[0];
  bool up = c->e->fn == CK_FN_UPPER;
  ck_col_t *o = out_append(c->out, CK_TYPE(CK_T_STRING), c->n);
  UCaseMap *map = NULL;
  int rc = 0;
  for (size_t i = 0; i < c->n; i++) {
    if (!counts(c, i)) {
      ck_col_append_null(o);
      continue;
    }
    size_t len;
    const char *s = vstr(A, i, &len);
    bool ascii = true;
    for (size_t j = 0; j < len && ascii; j++) ascii = (unsigned char)s[j] < 0x80;
    if (ascii) {
      str_room(o, len);
      char *d = o->data + o->data_len;
      for (size_t j = 0; j < len; j++) {
        char ch = s[j];
        if (up && ch >= 'a' && ch <= 'z') ch = (char)(ch - 32);
        else if (!up && ch >= 'A' && ch <= 'Z') ch = (char)(ch + 32);
        d[j] = ch;
      }
      str_commit(o, len);
      continue;
    }
    UErrorCode st = U_ZERO_ERROR;
    if (!map && !(map = ucasemap_open("", 0, &st))) {
      rc = ck_error_set(c->ev->err, CK_EEVAL, "could not compute %s: %s", ck_fn_name(c->e->fn),
                        u_errorName(st));
      break;
    }
    if (len > INT32_MAX / 3) {
      rc = ck_error_set(c->ev->err, CK_EEVAL, "could not compute %s: the string is too long",
                        ck_fn_name(c->e->fn));
      break;
    }
    size_t cap = len * 3 + 16; /* one UTF-8 unit maps to at most three */
    int32_t m = 0;
    for (int pass = 0; pass < 2; pass++) { /* a second pass only if ICU asks for more room */
      str_room(o, cap);
      st = U_ZERO_ERROR;
      m = up ? ucasemap_utf8ToUpper(map, o->data + o->data_len, (int32_t)cap, s, (int32_t)len, &st)
             : ucasemap_utf8ToLower(map, o->data + o->data_len, (int32_t)cap, s, (int32_t)len, &st);
      if (st != U_BUFFER_OVERFLOW_ERROR) break;
      cap = (size_t)m + 16;
    }
    if (U_FAILURE(st)) {
      rc = ck_error_set(c->ev->err, CK_EEVAL, "could not compute %s: %s", ck_fn_name(c->e->fn),
                        u_errorName(st));
      break;
    }
    str_commit(o, (size_t)m);
  }
  if (map) ucasemap_close(map);
  return rc;
}

static int k_char_length(kc_t *c) {
  const vec_t *A = &c->k[0];
  ck_col_t *o = out_init(c->out, CK_TYPE(CK_T_INT32), c->n);
  and_valid(o, A);
  int32_t *r = o->values;
  for (size_t i = 0; i < c->n; i++) {
    size_t len;
    const unsigned char *s = (const unsigned char *)vstr(A, i, &len);
    int32_t cps = 0;
    for (size_t j = 0; j < len; j++) cps += (s[j] & 0xC0) != 0x80;
    r[i] = cps;
  }
  return 0;
}

/* SQL SUBSTRING: code points [start, start + len) counted from 1; positions before 1 are cut
 * off (SUBSTRING('hello', 0, 2) = 'h'); a negative length gives NULL (as Flink). */
static int k_substring(kc_t *c) {
  const vec_t *A = &c->k[0], *S = &c->k[1], *L = c->nk > 2 ? &c->k[2] : NULL;
  ck_col_t *o = out_append(c->out, CK_TYPE(CK_T_STRING), c->n);
  for (size_t i = 0; i < c->n; i++) {
    int64_t start = vint(S, i), len = L ? vint(L, i) : 0;
    if (!counts(c, i) || (L && len < 0)) {
      ck_col_append_null(o);
      continue;
    }
    size_t n;
    const char *s = vstr(A, i, &n);
    int64_t end = INT64_MAX; /* exclusive, 1-based */
    if (L && __builtin_add_overflow(start, len, &end)) end = start < 0 ? INT64_MIN : INT64_MAX;
    if (start < 1) start = 1;
    if (end <= start) {
      ck_col_append_str(o, "", 0);
      continue;
    }
    size_t b = u8_offset(s, n, start - 1);
    size_t e = end == INT64_MAX ? n : b + u8_offset(s + b, n - b, end - start);
    ck_col_append_str(o, s + b, e - b);
  }
  return 0;
}

static int k_concat(kc_t *c) {
  ck_col_t *o = out_append(c->out, CK_TYPE(CK_T_STRING), c->n);
  for (size_t i = 0; i < c->n; i++) {
    if (!counts(c, i)) {
      ck_col_append_null(o);
      continue;
    }
    size_t at = 0;
    for (int j = 0; j < c->nk; j++) {
      size_t len;
      const char *s = vstr(&c->k[j], i, &len);
      str_put(o, &at, s, len);
    }
    str_commit(o, at);
  }
  return 0;
}

static int k_replace(kc_t *c) {
  ck_col_t *o = out_append(c->out, CK_TYPE(CK_T_STRING), c->n);
  for (size_t i = 0; i < c->n; i++) {
    if (!counts(c, i)) {
      ck_col_append_null(o);
      continue;
    }
    size_t n, nf, nt;
    const char *s = vstr(&c->k[0], i, &n), *from = vstr(&c->k[1], i, &nf),
               *to = vstr(&c->k[2], i, &nt);
    size_t at = 0, pos = 0;
    if (nf > 0) {
      const char *hit;
      while (pos < n && (hit = memmem(s + pos, n - pos, from, nf))) {
        size_t h = (size_t)(hit - s);
        str_put(o, &at, s + pos, h - pos);
        str_put(o, &at, to, nt);
        pos = h + nf;
      }
    }
    str_put(o, &at, s + pos, n - pos);
    str_commit(o, at);
  }
  return 0;
}

/* The next white-space code point (Java's Character.isWhitespace, which ICU's u_isWhitespace
 * follows) at or after byte `from`: its offset, and its length in *n; len when there is none. */
static size_t next_space(const char *s, size_t len, size_t from, size_t *n) {
  for (int32_t i = (int32_t)from; (size_t)i < len;) {
    int32_t at = i;
    UChar32 ch;
    U8_NEXT(s, i, (int32_t)len, ch);
    if (ch >= 0 && u_isWhitespace(ch)) {
      *n = (size_t)(i - at);
      return (size_t)at;
    }
  }
  *n = 0;
  return len;
}

/* SPLIT_INDEX(s, delim, k): the k-th (from 0) piece of s split at every occurrence of delim,
 * as Flink's (Commons Lang's splitByWholeSeparatorPreserveAllTokens): empty pieces count
 * ('a,,b' has three), an empty string has no piece (NULL), an empty delimiter splits at each
 * white-space character, and a negative k or one past the last piece is NULL. */
static int k_split_index(kc_t *c) {
  ck_col_t *o = out_append(c->out, CK_TYPE(CK_T_STRING), c->n);
  for (size_t i = 0; i < c->n; i++) {
    int64_t k = vint(&c->k[2], i);
    size_t n = 0, nd = 0;
    const char *s = counts(c, i) ? vstr(&c->k[0], i, &n) : NULL;
    if (!s || k < 0 || n == 0) {
      ck_col_append_null(o);
      continue;
    }
    const char *d = vstr(&c->k[1], i, &nd);
    size_t start = 0, end, step = nd;
    int64_t piece = 0;
    for (;; piece++) { /* piece `piece` is [start, end) */
      if (nd == 0) {
        end = next_space(s, n, start, &step);
      } else {
        const char *hit = memmem(s + start, n - start, d, nd);
        end = hit ? (size_t)(hit - s) : n;
      }
      if (piece == k || end == n) break;
      start = end + step;
    }
    if (piece == k) ck_col_append_str(o, s + start, end - start);
    else ck_col_append_null(o);
  }
  return 0;
}

/* LIKE: '%' any run, '_' one code point, everything else literally. Greedy match with
 * backtracking to the last '%'. */
static bool like_match(const char *s, size_t sn, const char *p, size_t pn) {
  size_t si = 0, pi = 0, star_p = SIZE_MAX, star_s = 0;
  while (si < sn) {
    if (pi < pn && p[pi] == '%') {
      star_p = ++pi;
      star_s = si;
    } else if (pi < pn && p[pi] == '_') {
      si += u8len((unsigned char)s[si]);
      if (si > sn) si = sn;
      pi++;
    } else if (pi < pn && p[pi] == s[si]) {
      si++;
      pi++;
    } else if (star_p != SIZE_MAX) {
      pi = star_p;
      star_s += u8len((unsigned char)s[star_s]);
      if (star_s > sn) star_s = sn;
      si = star_s;
    } else {
      return false;
    }
  }
  while (pi < pn && p[pi] == '%') pi++;
  return pi == pn;
}

/* LIKE … ESCAPE esc: esc followed by a character matches that character itself; an escape at
 * the very end of the pattern matches nothing. */
static bool like_match_esc(const char *s, size_t sn, const char *p, size_t pn, const char *esc,
                           size_t en) {
  size_t si = 0, pi = 0, star_p = SIZE_MAX, star_s = 0;
#define LIKE_IS_ESC(at) ((at) + en <= pn && memcmp(p + (at), esc, en) == 0)
  while (si < sn) {
    bool lit = pi < pn && LIKE_IS_ESC(pi);
    size_t q = pi + (lit ? en : 0), cl = q < pn ? u8len((unsigned char)p[q]) : 0;
    if (lit && q >= pn) return false;
    if (!lit && pi < pn && p[pi] == '%') {
      star_p = ++pi;
      star_s = si;
    } else if (!lit && pi < pn && p[pi] == '_') {
      si += u8len((unsigned char)s[si]);
      if (si > sn) si = sn;
      pi++;
    } else if (lit && si + cl <= sn && q + cl <= pn && memcmp(s + si, p + q, cl) == 0) {
      si += cl;
      pi = q + cl;
    } else if (!lit && pi < pn && p[pi] == s[si]) {
      si++;
      pi++;
    } else if (star_p != SIZE_MAX) {
      pi = star_p;
      star_s += u8len((unsigned char)s[star_s]);
      if (star_s > sn) star_s = sn;
      si = star_s;
    } else {
      return false;
    }
  }
  while (pi < pn && p[pi] == '%' && !LIKE_IS_ESC(pi)) pi++;
#undef LIKE_IS_ESC
  return pi == pn;
}

typedef enum like_kind { LK_GENERIC, LK_EXACT, LK_PREFIX, LK_SUFFIX, LK_CONTAINS } like_kind_t;

/* Patterns that need no matcher: 'abc', 'abc%', '%abc', '%abc%'. */
static like_kind_t like_classify(const char *p, size_t n, const char **lit, size_t *litn) {
  if (memchr(p, '_', n)) return LK_GENERIC;
  size_t pct = 0;
  for (size_t i = 0; i < n; i++) pct += p[i] == '%';
  *lit = p;
  *litn = n;
  if (pct == 0) return LK_EXACT;
  if (pct == 1 && p[n - 1] == '%') {
    *litn = n - 1;
    return LK_PREFIX;
  }
  if (pct == 1 && p[0] == '%') {
    *lit = p + 1;
    *litn = n - 1;
    return LK_SUFFIX;
  }
  if (pct == 2 && n >= 2 && p[0] == '%' && p[n - 1] == '%') {
    *lit = p + 1;
    *litn = n - 2;
    return LK_CONTAINS;
  }
  return LK_GENERIC;
}

static int k_like(kc_t *c) {
  const vec_t *A = &c->k[0], *P = &c->k[1];
  bool neg = c->e->negated;
  size_t n = c->n;
  ck_col_t *o = out_init(c->out, CK_TYPE(CK_T_BOOL), n);
  and_valid(o, A);
  and_valid(o, P);
  uint8_t *r = o->values;
  like_kind_t kind = LK_GENERIC;
  const char *lit = NULL;
  size_t litn = 0;
  const vec_t *E = c->nk > 2 ? &c->k[2] : NULL;
  if (E) {
    and_valid(o, E);
    for (size_t i = 0; i < n; i++) {
      size_t sn, pn, en;
      const char *s = vstr(A, i, &sn), *p = vstr(P, i, &pn), *esc = vstr(E, i, &en);
      if (counts(c, i) && ck_utf8_chars(esc, en) != 1)
        return ck_error_set(c->ev->err, CK_EEVAL, "could not compute LIKE: its ESCAPE must be "
                            "one character, not '%.*s'", (int)(en > 20 ? 20 : en), esc);
      r[i] = (counts(c, i) && like_match_esc(s, sn, p, pn, esc, en)) != neg;
    }
    return 0;
  }
  if (P->is_const) {
    size_t pn;
    const char *p = vstr(P, 0, &pn);
    kind = like_classify(p, pn, &lit, &litn);
  }
  for (size_t i = 0; i < n; i++) {
    size_t sn, pn;
    const char *s = vstr(A, i, &sn);
    bool m;
    switch (kind) {
      case LK_EXACT: m = sn == litn && memcmp(s, lit, sn) == 0; break;
      case LK_PREFIX: m = sn >= litn && memcmp(s, lit, litn) == 0; break;
      case LK_SUFFIX: m = sn >= litn && memcmp(s + sn - litn, lit, litn) == 0; break;
      case LK_CONTAINS: m = litn == 0 || memmem(s, sn, lit, litn) != NULL; break;
      default: {
        const char *p = vstr(P, i, &pn);
        m = like_match(s, sn, p, pn);
        break;
      }
    }
    r[i] = m != neg;
  }
  return 0;
}

/* ---- more strings: positions, padding, words, encodings ---------------------------------- */

/* The longest string a function builds (REPEAT, LPAD, RPAD): a value past it stops the job
 * rather than the machine. */
#define CK_EXPR_MAX_STRING ((size_t)16 << 20)

static int too_long(kc_t *c, uint64_t bytes) {
  return ck_error_set(c->ev->err, CK_EEVAL,
                      "could not compute %s: the result would be %llu bytes, more than the %zu MiB "
                      "a value may hold", ck_fn_name(c->e->fn), (unsigned long long)bytes,
                      CK_EXPR_MAX_STRING >> 20);
}

size_t ck_utf8_chars(const char *s, size_t n) {
  size_t k = 0;
  for (size_t j = 0; j < n; j++) k += ((unsigned char)s[j] & 0xC0) != 0x80;
  return k;
}

static bool utf8_valid(const char *s, size_t n) {
  for (int32_t i = 0; (size_t)i < n;) {
    UChar32 ch;
    U8_NEXT(s, i, (int32_t)n, ch);
    if (ch < 0) return false;
  }
  return true;
}

/* POSITION(sub, s), LOCATE(sub, s[, from]), INSTR(s, sub): 1-based, in code points. */
static int k_locate(kc_t *c) {
  bool instr = c->e->fn == CK_FN_INSTR;
  const vec_t *S = &c->k[instr ? 0 : 1], *SUB = &c->k[instr ? 1 : 0];
  const vec_t *F = c->nk > 2 ? &c->k[2] : NULL;
  ck_col_t *o = out_init(c->out, CK_TYPE(CK_T_INT32), c->n);
  for (int j = 0; j < c->nk; j++) and_valid(o, &c->k[j]);
  int32_t *r = o->values;
  for (size_t i = 0; i < c->n; i++) {
    if (!counts(c, i)) continue;
    int64_t from = F ? vint(F, i) : 1;
    size_t n, m;
    const char *s = vstr(S, i, &n), *sub = vstr(SUB, i, &m);
    if (from < 1) continue;
    size_t b = 0;
    int64_t skip = from - 1;
    while (skip > 0 && b < n) b += u8len((unsigned char)s[b]), skip--;
    if (skip > 0 || b > n) continue; /* from is past the end */
    const char *hit = m == 0 ? s + b : memmem(s + b, n - b, sub, m);
    if (hit) r[i] = (int32_t)(ck_utf8_chars(s, (size_t)(hit - s)) + 1);
  }
  return 0;
}

static int k_left_right(kc_t *c) {
  bool left = c->e->fn == CK_FN_LEFT;
  ck_col_t *o = out_append(c->out, CK_TYPE(CK_T_STRING), c->n);
  for (size_t i = 0; i < c->n; i++) {
    if (!counts(c, i)) {
      ck_col_append_null(o);
      continue;
    }
    size_t n;
    const char *s = vstr(&c->k[0], i, &n);
    int64_t k = vint(&c->k[1], i);
    if (k <= 0) {
      ck_col_append_str(o, "", 0);
    } else if (left) {
      ck_col_append_str(o, s, u8_offset(s, n, k));
    } else {
      size_t chars = ck_utf8_chars(s, n);
      size_t b = (uint64_t)k >= chars ? 0 : u8_offset(s, n, (int64_t)(chars - (size_t)k));
      ck_col_append_str(o, s + b, n - b);
    }
  }
  return 0;
}

/* LPAD / RPAD as Flink's: cut to len when s is longer, NULL for len < 0 or an empty pad. */
static int k_pad(kc_t *c) {
  bool lpad = c->e->fn == CK_FN_LPAD;
  ck_col_t *o = out_append(c->out, CK_TYPE(CK_T_STRING), c->n);
  for (size_t i = 0; i < c->n; i++) {
    size_t n, pn;
    int64_t len = vint(&c->k[1], i);
    const char *s = counts(c, i) ? vstr(&c->k[0], i, &n) : NULL;
    const char *pad = s ? vstr(&c->k[2], i, &pn) : NULL;
    if (!s || len < 0 || pn == 0) {
      ck_col_append_null(o);
      continue;
    }
    size_t chars = ck_utf8_chars(s, n);
    if ((uint64_t)len <= chars) {
      ck_col_append_str(o, s, u8_offset(s, n, len));
      continue;
    }
    uint64_t need = (uint64_t)len - chars; /* pad characters */
    if (need * 4 + n > CK_EXPR_MAX_STRING) return too_long(c, need + n);
    size_t at = 0, pb = 0;
    if (!lpad) str_put(o, &at, s, n);
    for (uint64_t k = 0; k < need; k++) {
      size_t cl = u8len((unsigned char)pad[pb]);
      if (pb + cl > pn) cl = pn - pb;
      str_put(o, &at, pad + pb, cl);
      pb += cl;
      if (pb >= pn) pb = 0;
    }
    if (lpad) str_put(o, &at, s, n);
    str_commit(o, at);
  }
  return 0;
}

static int k_repeat(kc_t *c) {
  ck_col_t *o = out_append(c->out, CK_TYPE(CK_T_STRING), c->n);
  for (size_t i = 0; i < c->n; i++) {
    if (!counts(c, i)) {
      ck_col_append_null(o);
      continue;
    }
    size_t n;
    const char *s = vstr(&c->k[0], i, &n);
    int64_t k = vint(&c->k[1], i);
    if (k <= 0 || n == 0) {
      ck_col_append_str(o, "", 0);
      continue;
    }
    if ((uint64_t)k > CK_EXPR_MAX_STRING / n) return too_long(c, (uint64_t)k * n);
    size_t at = 0;
    str_room(o, (size_t)k * n);
    for (int64_t j = 0; j < k; j++) str_put(o, &at, s, n);
    str_commit(o, at);
  }
  return 0;
}

static int k_reverse(kc_t *c) {
  ck_col_t *o = out_append(c->out, CK_TYPE(CK_T_STRING), c->n);
  for (size_t i = 0; i < c->n; i++) {
    if (!counts(c, i)) {
      ck_col_append_null(o);
      continue;
    }
    size_t n;
    const char *s = vstr(&c->k[0], i, &n);
    str_room(o, n);
    char *d = o->data + o->data_len;
    size_t end = n, at = 0;
    while (end > 0) {
      size_t b = end - 1;
      while (b > 0 && ((unsigned char)s[b] & 0xC0) == 0x80) b--;
      memcpy(d + at, s + b, end - b);
      at += end - b;
      end = b;
    }
    str_commit(o, at);
  }
  return 0;
}

/* INITCAP: a word is a run of ASCII letters and digits; its first character is upper-cased
 * and the rest lower-cased; every other byte (spaces, punctuation, non-ASCII) ends a word. */
static int k_initcap(kc_t *c) {
  ck_col_t *o = out_append(c->out, CK_TYPE(CK_T_STRING), c->n);
  for (size_t i = 0; i < c->n; i++) {
    if (!counts(c, i)) {
      ck_col_append_null(o);
      continue;
    }
    size_t n;
    const char *s = vstr(&c->k[0], i, &n);
    str_room(o, n);
    char *d = o->data + o->data_len;
    bool start = true;
    for (size_t j = 0; j < n; j++) {
      char ch = s[j];
      bool lower = ch >= 'a' && ch <= 'z', upper = ch >= 'A' && ch <= 'Z';
      bool digit = ch >= '0' && ch <= '9';
      if (start && lower) ch = (char)(ch - 32);
      else if (!start && upper) ch = (char)(ch + 32);
      start = !(lower || upper || digit);
      d[j] = ch;
    }
    str_commit(o, n);
  }
  return 0;
}

/* CONCAT_WS(sep, s, ...): not strict (eval_lenient): NULL arguments are skipped. */
static int k_concat_ws(kc_t *c) {
  ck_col_t *o = out_append(c->out, CK_TYPE(CK_T_STRING), c->n);
  for (size_t i = 0; i < c->n; i++) {
    if (!LIVE(c->mask, i) || !VOK(&c->k[0], i)) {
      ck_col_append_null(o);
      continue;
    }
    size_t ns, at = 0;
    const char *sep = vstr(&c->k[0], i, &ns);
    bool first = true;
    for (int j = 1; j < c->nk; j++) {
      if (!VOK(&c->k[j], i)) continue;
      size_t len;
      const char *s = vstr(&c->k[j], i, &len);
      if (!first) str_put(o, &at, sep, ns);
      str_put(o, &at, s, len);
      first = false;
    }
    str_commit(o, at);
  }
  return 0;
}

/* OVERLAY(s PLACING r FROM start [FOR len]) = the characters before start, r, and those from
 * start + len on; NULL when start < 1 or len < 0. */
static int k_overlay(kc_t *c) {
  ck_col_t *o = out_append(c->out, CK_TYPE(CK_T_STRING), c->n);
  for (size_t i = 0; i < c->n; i++) {
    size_t n = 0, rn = 0;
    int64_t start = vint(&c->k[2], i);
    const char *s = counts(c, i) ? vstr(&c->k[0], i, &n) : NULL;
    const char *r = s ? vstr(&c->k[1], i, &rn) : NULL;
    int64_t len = c->nk > 3 ? vint(&c->k[3], i) : (int64_t)ck_utf8_chars(r ? r : "", rn);
    if (!s || start < 1 || len < 0) {
      ck_col_append_null(o);
      continue;
    }
    size_t b = u8_offset(s, n, start - 1);
    size_t e = b + u8_offset(s + b, n - b, len);
    size_t at = 0;
    str_put(o, &at, s, b);
    str_put(o, &at, r, rn);
    str_put(o, &at, s + e, n - e);
    str_commit(o, at);
  }
  return 0;
}

static const char b64_alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_value(unsigned char ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
  if (ch >= '0' && ch <= '9') return ch - '0' + 52;
  if (ch == '+') return 62;
  if (ch == '/') return 63;
  return -1;
}

/* Decodes base64 (padding optional, as Java's basic decoder); false when malformed. */
static bool b64_decode(const char *s, size_t n, ck_col_t *o, size_t *at) {
  while (n > 0 && s[n - 1] == '=') n--;
  if (n % 4 == 1) return false;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t j = 0; j < n; j++) {
    int v = b64_value((unsigned char)s[j]);
    if (v < 0) return false;
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      char byte = (char)((acc >> bits) & 0xff);
      str_put(o, at, &byte, 1);
    }
  }
  return true;
}

static int k_base64(kc_t *c) {
  bool enc = c->e->fn == CK_FN_TO_BASE64;
  ck_col_t *o = out_append(c->out, CK_TYPE(CK_T_STRING), c->n);
  for (size_t i = 0; i < c->n; i++) {
    if (!counts(c, i)) {
      ck_col_append_null(o);
      continue;
    }
    size_t n, at = 0;
    const unsigned char *s = (const unsigned char *)vstr(&c->k[0], i, &n);
    if (enc) {
      str_room(o, (n + 2) / 3 * 4);
      char *d = o->data + o->data_len;
      for (size_t j = 0; j < n; j += 3) {
        uint32_t v = (uint32_t)s[j] << 16 | (j + 1 < n ? (uint32_t)s[j + 1] << 8 : 0) |
                     (j + 2 < n ? s[j + 2] : 0);
        d[at++] = b64_alpha[v >> 18];
        d[at++] = b64_alpha[(v >> 12) & 63];
        d[at++] = j + 1 < n ? b64_alpha[(v >> 6) & 63] : '=';
        d[at++] = j + 2 < n ? b64_alpha[v & 63] : '=';
      }
      str_commit(o, at);
      continue;
    }
    if (!b64_decode((const char *)s, n, o, &at) || !utf8_valid(o->data + o->data_len, at)) {
      ck_col_append_null(o); /* the bytes written past data_len are simply overwritten */
      continue;
    }
    str_commit(o, at);
  }
  return 0;
}

static void hex_put(ck_col_t *o, size_t *at, const uint8_t *p, size_t n, bool upper) {
  const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  str_room(o, *at + 2 * n);
  char *d = o->data + o->data_len + *at;
  for (size_t j = 0; j < n; j++) {
    d[2 * j] = digits[p[j] >> 4];
    d[2 * j + 1] = digits[p[j] & 15];
  }
  *at += 2 * n;
}

static int k_digest(kc_t *c) {
  bool md5 = c->e->fn == CK_FN_MD5;
  ck_col_t *o = out_append(c->out, CK_TYPE(CK_T_STRING), c->n);
  for (size_t i = 0; i < c->n; i++) {
    if (!counts(c, i)) {
      ck_col_append_null(o);
      continue;
    }
    size_t n, at = 0;
    const char *s = vstr(&c->k[0], i, &n);
    uint8_t h[32];
    if (md5) ck_md5(s, n, h);
    else ck_sha256(s, n, h);
    hex_put(o, &at, h, md5 ? 16 : 32, false);
    str_commit(o, at);
  }
  return 0;
}

/* HEX of a BIGINT (Java's Long.toHexString, upper case) or of a string's bytes. */
static int k_hex(kc_t *c) {
  bool is_int = c->k[0].col->type.id == CK_T_INT64;
  ck_col_t *o = out_append(c->out, CK_TYPE(CK_T_STRING), c->n);
  for (size_t i = 0; i < c->n; i++) {
    if (!counts(c, i)) {
      ck_col_append_null(o);
      continue;
    }
    size_t at = 0;
    if (is_int) {
      char tmp[24];
      int len = snprintf(tmp, sizeof tmp, "%llX", (unsigned long long)vint(&c->k[0], i));
      str_put(o, &at, tmp, (size_t)len);
    } else {
      size_t n;
      const char *s = vstr(&c->k[0], i, &n);
      hex_put(o, &at, (const uint8_t *)s, n, true);
    }
    str_commit(o, at);
  }
  return 0;
}

/* ---- regular expressions (ICU, over UTF-8 without conversion) ---------------------------- */

/* A compiled pattern, kept while consecutive rows use the same one (a literal pattern is
 * compiled once per batch). */
typedef struct rx {
  URegularExpression *re;
  UText *text;
  const char *pat;
  size_t plen;
  bool bad; /* the pattern held does not compile */
} rx_t;

static void rx_fini(rx_t *rx) {
  if (rx->re) uregex_close(rx->re);
  if (rx->text) utext_close(rx->text);
  memset(rx, 0, sizeof *rx);
}

static URegularExpression *rx_open(const char *p, size_t n, UParseError *pe, UErrorCode *st) {
  if (n > INT32_MAX) {
    *st = U_BUFFER_OVERFLOW_ERROR;
    return NULL;
  }
  UText *ut = utext_openUTF8(NULL, p, (int64_t)n, st);
  if (U_FAILURE(*st)) return NULL;
  URegularExpression *re = uregex_openUText(ut, 0, pe, st); /* keeps no reference to ut */
  utext_close(ut);
  return re;
}

int ck_expr_regex_check(const char *pattern, size_t n, char *why, size_t cap) {
  UParseError pe;
  UErrorCode st = U_ZERO_ERROR;
  URegularExpression *re = rx_open(pattern, n, &pe, &st);
  if (re) uregex_close(re);
  if (!U_FAILURE(st)) return 0;
  snprintf(why, cap, "%s at character %d", u_errorName(st), (int)pe.offset + 1);
  return -1;
}

/* Points rx at pattern p and subject s; false when the pattern does not compile (the row is
 * NULL, as in Flink). */
static bool rx_set(rx_t *rx, const char *p, size_t pn, const char *s, size_t n) {
  if (!rx->re || rx->plen != pn || memcmp(rx->pat, p, pn) != 0) {
    if (rx->re) uregex_close(rx->re);
    UParseError pe;
    UErrorCode st = U_ZERO_ERROR;
    rx->re = rx_open(p, pn, &pe, &st);
    rx->bad = U_FAILURE(st);
    if (rx->bad && rx->re) uregex_close(rx->re);
    if (rx->bad) rx->re = NULL;
    rx->pat = p;
    rx->plen = pn;
  }
  if (rx->bad || !rx->re) return false;
  UErrorCode st = U_ZERO_ERROR;
  rx->text = utext_openUTF8(rx->text, s, (int64_t)n, &st);
  if (U_FAILURE(st)) return false;
  uregex_setUText(rx->re, rx->text, &st);
  return !U_FAILURE(st);
}

/* Appends a Java-style replacement: $n is group n (the longest number that names a group),
 * \x is x; a $ not followed by a digit is taken literally. */
static void rx_replacement(rx_t *rx, const char *s, const char *r, size_t rn, ck_col_t *o,
                           size_t *at) {
  UErrorCode st = U_ZERO_ERROR;
  int32_t groups = uregex_groupCount(rx->re, &st);
  for (size_t j = 0; j < rn; j++) {
    if (r[j] == '\\' && j + 1 < rn) {
      str_put(o, at, r + j + 1, 1);
      j++;
    } else if (r[j] == '$' && j + 1 < rn && r[j + 1] >= '0' && r[j + 1] <= '9') {
      int32_t g = r[j + 1] - '0';
      j++;
      while (j + 1 < rn && r[j + 1] >= '0' && r[j + 1] <= '9' && g * 10 + (r[j + 1] - '0') <= groups)
        g = g * 10 + (r[++j] - '0');
      if (g > groups) continue;
      st = U_ZERO_ERROR;
      int64_t b = uregex_start64(rx->re, g, &st), e = uregex_end64(rx->re, g, &st);
      if (!U_FAILURE(st) && b >= 0 && e >= b) str_put(o, at, s + b, (size_t)(e - b));
    } else {
      str_put(o, at, r + j, 1);
    }
  }
}

static int k_regexp(kc_t *c) {
  ck_fn_t fn = c->e->fn;
  bool is_bool = fn == CK_FN_REGEXP;
  ck_col_t *o = is_bool ? out_init(c->out, CK_TYPE(CK_T_BOOL), c->n)
                        : out_append(c->out, CK_TYPE(CK_T_STRING), c->n);
  uint8_t *okv = is_bool ? ck_calloc(c->n ? c->n : 1, 1) : NULL;
  rx_t rx = {0};
  for (size_t i = 0; i < c->n; i++) {
    size_t n, pn;
    const char *s = counts(c, i) ? vstr(&c->k[0], i, &n) : NULL;
    const char *p = s ? vstr(&c->k[1], i, &pn) : NULL;
    bool ok = s && rx_set(&rx, p, pn, s, n);
    UErrorCode st = U_ZERO_ERROR;
    if (is_bool) {
      if (ok) {
        ((uint8_t *)o->values)[i] = uregex_find64(rx.re, 0, &st) && !U_FAILURE(st);
        okv[i] = 1;
      }
      continue;
    }
    if (!ok) {
      ck_col_append_null(o);
      continue;
    }
    if (fn == CK_FN_REGEXP_EXTRACT) {
      int64_t g = c->nk > 2 ? vint(&c->k[2], i) : 0;
      int32_t groups = uregex_groupCount(rx.re, &st);
      if (g < 0 || g > groups || !uregex_find64(rx.re, 0, &st) || U_FAILURE(st)) {
        ck_col_append_null(o);
        continue;
      }
      int64_t b = uregex_start64(rx.re, (int32_t)g, &st), e = uregex_end64(rx.re, (int32_t)g, &st);
      if (U_FAILURE(st) || b < 0) ck_col_append_null(o);
      else ck_col_append_str(o, s + b, (size_t)(e - b));
      continue;
    }
    size_t rn, at = 0;
    const char *r = vstr(&c->k[2], i, &rn);
    int64_t last = 0;
    uregex_reset64(rx.re, 0, &st);
    while (uregex_findNext(rx.re, &st) && !U_FAILURE(st)) {
      int64_t b = uregex_start64(rx.re, 0, &st), e = uregex_end64(rx.re, 0, &st);
      str_put(o, &at, s + last, (size_t)(b - last));
      rx_replacement(&rx, s, r, rn, o, &at);
      last = e;
      if ((size_t)at > CK_EXPR_MAX_STRING) {
        rx_fini(&rx);
        return too_long(c, at);
      }
    }
    str_put(o, &at, s + last, n - (size_t)last);
    str_commit(o, at);
  }
  rx_fini(&rx);
  if (is_bool) {
    if (memchr(okv, 0, c->n)) {
      uint8_t *bm = bitmap(o);
      for (size_t i = 0; i < c->n; i++)
        if (!okv[i]) bm[i >> 3] = (uint8_t)(bm[i >> 3] & ~(1u << (i & 7)));
    }
    ck_free(okv);
  }
  return 0;
}

/* TRIM / LTRIM / RTRIM (s[, chars]): removes code points that occur in chars (' ' by default). */
static bool in_set(const char *set, size_t sn, const char *p, size_t cl) {
  if (sn == 1 && cl == 1) return *set == *p;
  return cl <= sn && memmem(set, sn, p, cl) != NULL;
}

static int k_trim(kc_t *c) {
  const vec_t *A = &c->k[0], *C = c->nk > 1 ? &c->k[1] : NULL;
  bool left = c->e->fn != CK_FN_RTRIM, right = c->e->fn != CK_FN_LTRIM;
  ck_col_t *o = out_append(c->out, CK_TYPE(CK_T_STRING), c->n);
  for (size_t i = 0; i < c->n; i++) {
    if (!counts(c, i)) {
      ck_col_append_null(o);
      continue;
    }
    size_t len, b = 0, sn = 1;
    const char *s = vstr(A, i, &len), *set = C ? vstr(C, i, &sn) : " ";
    if (left)
      while (b < len) {
        size_t cl = u8len((unsigned char)s[b]);
        if (b + cl > len || !in_set(set, sn, s + b, cl)) break;
        b += cl;
      }
    if (right)
      while (len > b) {
        size_t e = len - 1;
        while (e > b && ((unsigned char)s[e] & 0xC0) == 0x80) e--;
        if (!in_set(set, sn, s + e, len - e)) break;
        len = e;
      }
    ck_col_append_str(o, s + b, len - b);
  }
  return 0;
}


/* ---- more numbers: SIGN, logarithms, trigonometry ---------------------------------------- */

static int k_sign(kc_t *c) {
  const vec_t *A = &c->k[0];
  ck_type_t t = A->col->type;
  ck_col_t *o = out_init(c->out, t, c->n);
  and_valid(o, A);
  for (size_t i = 0; i < c->n; i++) {
    size_t j = IX(A, i);
    switch (t.id) {
      case CK_T_INT32: {
        int32_t x = ck_col_i32(A->col, j);
        ((int32_t *)o->values)[i] = (x > 0) - (x < 0);
        break;
      }
      case CK_T_INT64: {
        int64_t x = ck_col_i64(A->col, j);
        ((int64_t *)o->values)[i] = (x > 0) - (x < 0);
        break;
      }
      case CK_T_FLOAT32: {
        float x = ck_col_f32(A->col, j);
        ((float *)o->values)[i] = (float)((x > 0) - (x < 0));
        break;
      }
      case CK_T_FLOAT64: {
        double x = ck_col_f64(A->col, j);
        ((double *)o->values)[i] = (double)((x > 0) - (x < 0));
        break;
      }
      case CK_T_DECIMAL: {
        i128 x = ck_col_dec(A->col, j);
        st128(o->values, i, (i128)((x > 0) - (x < 0)) * (i128)P10[t.scale]);
        break;
      }
      default: ck_assert(!"SIGN of a non-numeric type");
    }
  }
  return 0;
}

/* Why a math function's result is not a real number, for the error message. */
static const char *math_why(ck_fn_t fn, double a, double b, int nk) {
  switch (fn) {
    case CK_FN_LN:
    case CK_FN_LOG10:
    case CK_FN_LOG2: return "the logarithm of a number that is not positive is not a real number";
    case CK_FN_LOG:
      if (nk == 2 && (a <= 0 || a == 1)) return "the base of a logarithm must be positive and not 1";
      return "the logarithm of a number that is not positive is not a real number";
    case CK_FN_ASIN:
    case CK_FN_ACOS: return "the argument is outside [-1, 1]";
    case CK_FN_COT: return "the cotangent of 0 is infinite";
    default:
      (void)b;
      return "floating-point overflow, the result does not fit in DOUBLE";
  }
}

static int k_math(kc_t *c) {
  ck_fn_t fn = c->e->fn;
  size_t n = c->n;
  ck_col_t *o = out_init(c->out, CK_TYPE(CK_T_FLOAT64), n);
  for (int j = 0; j < c->nk; j++) and_valid(o, &c->k[j]);
  const double *a = c->nk > 0 ? c->k[0].col->values : NULL;
  const double *b = c->nk > 1 ? c->k[1].col->values : NULL;
  bool ca = c->nk > 0 && c->k[0].is_const, cb = c->nk > 1 && c->k[1].is_const;
  double *r = o->values;
  for (size_t i = 0; i < n; i++) {
    double x = a ? a[ca ? 0 : i] : 0, y = b ? b[cb ? 0 : i] : 0, v;
    switch (fn) {
      case CK_FN_LN: v = x > 0 ? log(x) : NAN; break;
      case CK_FN_LOG:
        if (c->nk == 1) v = x > 0 ? log(x) : NAN;
        else v = x > 0 && x != 1 && y > 0 ? log(y) / log(x) : NAN;
        break;
      case CK_FN_LOG10: v = x > 0 ? log10(x) : NAN; break;
      case CK_FN_LOG2: v = x > 0 ? log2(x) : NAN; break;
      case CK_FN_EXP: v = exp(x); break;
      case CK_FN_SIN: v = sin(x); break;
      case CK_FN_COS: v = cos(x); break;
      case CK_FN_TAN: v = tan(x); break;
      case CK_FN_COT: v = x == 0 ? NAN : 1.0 / tan(x); break;
      case CK_FN_ASIN: v = asin(x); break;
      case CK_FN_ACOS: v = acos(x); break;
      case CK_FN_ATAN: v = atan(x); break;
      case CK_FN_ATAN2: v = atan2(x, y); break;
      case CK_FN_SINH: v = sinh(x); break;
      case CK_FN_COSH: v = cosh(x); break;
      case CK_FN_TANH: v = tanh(x); break;
      case CK_FN_DEGREES: v = x * (180.0 / M_PI); break;
      case CK_FN_RADIANS: v = x * (M_PI / 180.0); break;
      case CK_FN_PI: v = M_PI; break;
      default: v = M_E; break; /* E */
    }
    r[i] = v;
  }
  for (size_t i = 0; i < n; i++) {
    if (isfinite(r[i]) || !counts(c, i)) continue;
    double x = a ? a[ca ? 0 : i] : 0, y = b ? b[cb ? 0 : i] : 0;
    ck_buf_t t;
    ck_buf_init(&t);
    if (a) ck_double_format(x, &t);
    if (b) {
      ck_buf_puts(&t, ", ");
      ck_double_format(y, &t);
    }
    ck_error_set(c->ev->err, CK_EEVAL, "could not compute %s(%s): %s", ck_fn_name(fn),
                 t.data ? t.data : "", math_why(fn, x, y, c->nk));
    ck_error_detail(c->ev->err, "clink never produces Infinity or NaN: an operation whose "
                    "result is not a finite number stops the job");
    ck_buf_fini(&t);
    return CK_EEVAL;
  }
  return 0;
}

/* ---- time: TIMESTAMP is epoch milliseconds, UTC, on the proleptic Gregorian calendar ------ */

#define MS_DAY INT64_C(86400000)

/* The time units: name, milliseconds when fixed (0: counted in months, -1: a field only
 * EXTRACT reads), months when counted in months. */
#define CK_TIME_UNITS(X)                        \
  X(MILLISECOND, "MILLISECOND", 1, 0)           \
  X(SECOND, "SECOND", 1000, 0)                  \
  X(MINUTE, "MINUTE", 60000, 0)                 \
  X(HOUR, "HOUR", 3600000, 0)                   \
  X(DAY, "DAY", 86400000, 0)                    \
  X(WEEK, "WEEK", 604800000, 0)                 \
  X(MONTH, "MONTH", 0, 1)                       \
  X(QUARTER, "QUARTER", 0, 3)                   \
  X(YEAR, "YEAR", 0, 12)                        \
  X(DOW, "DOW", -1, 0)                          \
  X(DOY, "DOY", -1, 0)                          \
  X(EPOCH, "EPOCH", -1, 0)

typedef enum tu {
#define X(id, name, ms, months) TU_##id,
  CK_TIME_UNITS(X)
#undef X
} tu_t;

static const struct {
  const char *name;
  int64_t ms;
  int months;
} time_units[] = {
#define X(id, name, ms, months) {name, ms, months},
    CK_TIME_UNITS(X)
#undef X
};

int ck_time_unit_lookup(const char *name, size_t n, bool extract) {
  for (size_t u = 0; u < CK_ARRAY_LEN(time_units); u++)
    if (strlen(time_units[u].name) == n && strncasecmp(name, time_units[u].name, n) == 0)
      return time_units[u].ms >= 0 || extract ? (int)u : -1;
  return -1;
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Days since 1970-01-01 of a civil date, and back (the well-known era arithmetic: 400-year
 * eras of 146,097 days, years starting in March so the leap day comes last). */
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

typedef struct civil {
  int64_t y;
  int m, d;
  int64_t days;   /* since the epoch */
  int64_t tod;    /* milliseconds into the day */
} civil_t;

static civil_t civil_of(int64_t ms) {
  civil_t c;
  c.days = floor_div(ms, MS_DAY);
  c.tod = ms - c.days * MS_DAY;
  int64_t z = c.days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  c.d = (int)(doy - (153 * mp + 2) / 5 + 1);
  c.m = (int)(mp < 10 ? mp + 3 : mp - 9);
  c.y = yoe + era * 400 + (c.m <= 2);
  return c;
}

static bool is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static int month_days(int64_t y, int m) {
  static const int len[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : len[m - 1];
}

/* Monday = 0 … Sunday = 6 (1970-01-01 was a Thursday). */
static int weekday_mon0(int64_t days) { return (int)(((days + 3) % 7 + 7) % 7); }

static int64_t extract_field(tu_t u, int64_t ms) {
  civil_t c = civil_of(ms);
  switch (u) {
    case TU_YEAR: return c.y;
    case TU_QUARTER: return (c.m - 1) / 3 + 1;
    case TU_MONTH: return c.m;
    case TU_DAY: return c.d;
    case TU_HOUR: return c.tod / 3600000;
    case TU_MINUTE: return c.tod / 60000 % 60;
    case TU_SECOND: return c.tod / 1000 % 60;
    case TU_MILLISECOND: return c.tod % 60000; /* seconds × 1000 + milliseconds */
    case TU_DOY: return c.days - days_from_civil(c.y, 1, 1) + 1;
    case TU_DOW: return (weekday_mon0(c.days) + 1) % 7 + 1; /* Sunday = 1 … Saturday = 7 */
    case TU_EPOCH: return floor_div(ms, 1000);
    case TU_WEEK: { /* ISO 8601: the week of the Thursday of this Monday-started week */
      int64_t thu = c.days - weekday_mon0(c.days) + 3;
      civil_t t = civil_of(thu * MS_DAY);
      return (thu - days_from_civil(t.y, 1, 1)) / 7 + 1;
    }
  }
  return 0;
}

static int64_t trunc_to(tu_t u, int64_t ms) {
  civil_t c = civil_of(ms);
  switch (u) {
    case TU_WEEK: return (c.days - weekday_mon0(c.days)) * MS_DAY;
    case TU_MONTH: return days_from_civil(c.y, c.m, 1) * MS_DAY;
    case TU_QUARTER: return days_from_civil(c.y, (c.m - 1) / 3 * 3 + 1, 1) * MS_DAY;
    case TU_YEAR: return days_from_civil(c.y, 1, 1) * MS_DAY;
    default: return floor_div(ms, time_units[u].ms) * time_units[u].ms;
  }
}

/* Years a TIMESTAMP may reach through calendar arithmetic (BIGINT milliseconds hold about
 * ±292 million years). */
#define TS_MAX_YEAR INT64_C(200000000)

static bool add_months(int64_t ms, int64_t months, int64_t *out) {
  civil_t c = civil_of(ms);
  if (months > TS_MAX_YEAR * 12 || months < -TS_MAX_YEAR * 12) return false;
  int64_t total = c.y * 12 + (c.m - 1) + months;
  int64_t y = floor_div(total, 12);
  int m = (int)(total - y * 12) + 1;
  if (y > TS_MAX_YEAR || y < -TS_MAX_YEAR) return false;
  int d = c.d > month_days(y, m) ? month_days(y, m) : c.d;
  *out = days_from_civil(y, m, d) * MS_DAY + c.tod;
  return true;
}

/* Whole months from a to b, counted as Flink does: a month is complete when b's day and time
 * of day reach a's. */
static int64_t months_between(int64_t a, int64_t b) {
  civil_t x = civil_of(a), y = civil_of(b);
  int64_t m = (y.y * 12 + y.m) - (x.y * 12 + x.m);
  bool y_before = y.d < x.d || (y.d == x.d && y.tod < x.tod);
  bool y_after = y.d > x.d || (y.d == x.d && y.tod > x.tod);
  if (m > 0 && y_before) m--;
  if (m < 0 && y_after) m++;
  return m;
}

/* ---- date patterns (Java's letters: y M d H m s S; 'quoted' text; other characters as
 * they are) ---- */

typedef struct dpat_item {
  char letter; /* 0: literal text */
  int count;
  const char *lit;
  size_t litn;
} dpat_item_t;

/* Splits a pattern; -1 with why on a letter clink does not know. Calls fn per item. */
static int dpat_walk(const char *p, size_t n, char *why, size_t cap,
                     int (*fn)(void *, const dpat_item_t *), void *arg) {
  for (size_t i = 0; i < n;) {
    dpat_item_t it = {0};
    char ch = p[i];
    if (ch == '\'') {
      size_t j = i + 1;
      if (j < n && p[j] == '\'') { /* '' is a quote */
        it.lit = p + i;
        it.litn = 1;
        i += 2;
      } else {
        while (j < n && p[j] != '\'') j++;
        if (j >= n) {
          if (why) snprintf(why, cap, "a quote (') is not closed");
          return -1;
        }
        it.lit = p + i + 1;
        it.litn = j - i - 1;
        i = j + 1;
      }
    } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
      if (!strchr("yMdHmsS", ch)) {
        if (why)
          snprintf(why, cap, "the letter '%c' is not supported (clink knows y, M, d, H, m, s and "
                   "S; quote literal text as 'T')", ch);
        return -1;
      }
      size_t j = i;
      while (j < n && p[j] == ch) j++;
      it.letter = ch;
      it.count = (int)(j - i);
      if (ch == 'M' && it.count > 2) {
        if (why) snprintf(why, cap, "month names (MMM) are not supported; write MM");
        return -1;
      }
      i = j;
    } else {
      size_t j = i;
      while (j < n && p[j] != '\'' && !((p[j] >= 'a' && p[j] <= 'z') || (p[j] >= 'A' && p[j] <= 'Z')))
        j++;
      it.lit = p + i;
      it.litn = j - i;
      i = j;
    }
    if (fn) {
      int rc = fn(arg, &it);
      if (rc) return rc;
    }
  }
  return 0;
}

int ck_date_pattern_check(const char *pattern, size_t n, char *why, size_t cap) {
  return dpat_walk(pattern, n, why, cap, NULL, NULL);
}

typedef struct dfmt {
  civil_t c;
  ck_col_t *o;
  size_t at;
} dfmt_t;

static void put_num(dfmt_t *f, int64_t v, int width) {
  char tmp[32];
  int len = snprintf(tmp, sizeof tmp, "%0*lld", width, (long long)v);
  str_put(f->o, &f->at, tmp, (size_t)len);
}

static int dfmt_item(void *arg, const dpat_item_t *it) {
  dfmt_t *f = arg;
  const civil_t *c = &f->c;
  switch (it->letter) {
    case 0: str_put(f->o, &f->at, it->lit, it->litn); break;
    case 'y':
      if (it->count == 2) put_num(f, ((c->y % 100) + 100) % 100, 2);
      else put_num(f, c->y, it->count);
      break;
    case 'M': put_num(f, c->m, it->count); break;
    case 'd': put_num(f, c->d, it->count); break;
    case 'H': put_num(f, c->tod / 3600000, it->count); break;
    case 'm': put_num(f, c->tod / 60000 % 60, it->count); break;
    case 's': put_num(f, c->tod / 1000 % 60, it->count); break;
    default: { /* S: the first `count` digits of the fraction of a second */
      char tmp[16];
      snprintf(tmp, sizeof tmp, "%03d000000", (int)(c->tod % 1000));
      int k = it->count > 9 ? 9 : it->count;
      str_put(f->o, &f->at, tmp, (size_t)k);
      break;
    }
  }
  return 0;
}

typedef struct dparse {
  const char *s;
  size_t n, pos;
  int64_t y;
  int m, d, h, mi, sec, ms;
} dparse_t;

/* Reads a number: `count` digits exactly when count >= 2, else one or more (up to max). */
static bool read_num(dparse_t *p, int count, int max, int64_t *v) {
  size_t start = p->pos;
  int limit = count >= 2 ? count : max;
  *v = 0;
  while (p->pos < p->n && (int)(p->pos - start) < limit && p->s[p->pos] >= '0' &&
         p->s[p->pos] <= '9')
    *v = *v * 10 + (p->s[p->pos++] - '0');
  int got = (int)(p->pos - start);
  return count >= 2 ? got == count : got > 0;
}

static int dparse_item(void *arg, const dpat_item_t *it) {
  dparse_t *p = arg;
  int64_t v;
  switch (it->letter) {
    case 0:
      if (p->n - p->pos < it->litn || memcmp(p->s + p->pos, it->lit, it->litn) != 0) return 1;
      p->pos += it->litn;
      return 0;
    case 'y':
      if (!read_num(p, it->count, 9, &v)) return 1;
      p->y = it->count == 2 ? 2000 + v : v;
      return 0;
    case 'S': {
      size_t start = p->pos;
      if (!read_num(p, it->count, 9, &v)) return 1;
      int digits = (int)(p->pos - start);
      while (digits > 3) v /= 10, digits--;
      while (digits < 3) v *= 10, digits++;
      p->ms = (int)v;
      return 0;
    }
    default:
      if (!read_num(p, it->count, 2, &v)) return 1;
      switch (it->letter) {
        case 'M': p->m = (int)v; break;
        case 'd': p->d = (int)v; break;
        case 'H': p->h = (int)v; break;
        case 'm': p->mi = (int)v; break;
        default: p->sec = (int)v; break;
      }
      return 0;
  }
}

/* Text in pattern p as a TIMESTAMP; false when it does not match or names no real time. */
static bool date_parse(const char *s, size_t n, const char *p, size_t pn, int64_t *out) {
  dparse_t d = {.s = s, .n = n, .y = 1970, .m = 1, .d = 1};
  if (dpat_walk(p, pn, NULL, 0, dparse_item, &d) || d.pos != n) return false;
  if (d.m < 1 || d.m > 12 || d.d < 1 || d.d > month_days(d.y, d.m) || d.h > 23 || d.mi > 59 ||
      d.sec > 59 || d.y > 9999999)
    return false;
  *out = days_from_civil(d.y, d.m, d.d) * MS_DAY + d.h * INT64_C(3600000) + d.mi * 60000 +
         d.sec * 1000 + d.ms;
  return true;
}

static int ts_range(kc_t *c, size_t i) {
  (void)i;
  return ck_error_set(c->ev->err, CK_EEVAL, "could not compute %s: the result is outside the "
                      "range of TIMESTAMP", ck_fn_name(c->e->fn));
}

static int k_time(kc_t *c) {
  ck_fn_t fn = c->e->fn;
  size_t n = c->n;
  if (fn == CK_FN_DATE_FORMAT) {
    ck_col_t *o = out_append(c->out, CK_TYPE(CK_T_STRING), n);
    for (size_t i = 0; i < n; i++) {
      if (!counts(c, i)) {
        ck_col_append_null(o);
        continue;
      }
      size_t pn;
      const char *p = vstr(&c->k[1], i, &pn);
      dfmt_t f = {civil_of(vint(&c->k[0], i)), o, 0};
      if (dpat_walk(p, pn, NULL, 0, dfmt_item, &f)) {
        ck_col_append_null(o); /* a pattern from a column that is not one */
        continue;
      }
      str_commit(o, f.at);
    }
    return 0;
  }
  if (fn == CK_FN_TO_TIMESTAMP || fn == CK_FN_TO_DATE) {
    bool to_date = fn == CK_FN_TO_DATE;
    ck_col_t *o = out_init(c->out, c->e->type, n);
    for (int j = 0; j < c->nk; j++) and_valid(o, &c->k[j]);
    for (size_t i = 0; i < n; i++) {
      if (!counts(c, i)) continue;
      size_t sn, pn = 0;
      const char *s = vstr(&c->k[0], i, &sn), *p = c->nk > 1 ? vstr(&c->k[1], i, &pn) : NULL;
      int64_t v = 0;
      bool ok = p ? date_parse(s, sn, p, pn, &v)
                  : to_date ? ck_date_parse(s, sn, &v) : ck_timestamp_parse(s, sn, &v);
      if (ok && to_date) v -= (v % MS_DAY + MS_DAY) % MS_DAY; /* its day */
      if (ok) {
        ((int64_t *)o->values)[i] = v;
      } else {
        uint8_t *bm = bitmap(o);
        bm[i >> 3] = (uint8_t)(bm[i >> 3] & ~(1u << (i & 7)));
      }
    }
    return 0;
  }
  size_t un;
  const char *uname = vstr(&c->k[0], 0, &un);
  tu_t u = (tu_t)ck_time_unit_lookup(uname, un, true);
  ck_type_t rt = c->e->type;
  ck_col_t *o = out_init(c->out, rt, n);
  for (int j = 1; j < c->nk; j++) and_valid(o, &c->k[j]);
  for (size_t i = 0; i < n; i++) {
    if (!counts(c, i)) continue;
    int64_t r = 0;
    switch (fn) {
      case CK_FN_EXTRACT: r = extract_field(u, vint(&c->k[1], i)); break;
      case CK_FN_DATE_TRUNC: r = trunc_to(u, vint(&c->k[1], i)); break;
      case CK_FN_TIMESTAMPADD: {
        int64_t k = vint(&c->k[1], i), ts = vint(&c->k[2], i), d;
        if (time_units[u].months) {
          if (__builtin_mul_overflow(k, (int64_t)time_units[u].months, &d) ||
              !add_months(ts, d, &r))
            return ts_range(c, i);
        } else if (__builtin_mul_overflow(k, time_units[u].ms, &d) ||
                   __builtin_add_overflow(ts, d, &r)) {
          return ts_range(c, i);
        }
        break;
      }
      default: { /* TIMESTAMPDIFF */
        int64_t a = vint(&c->k[1], i), b = vint(&c->k[2], i), d;
        if (time_units[u].months) {
          r = months_between(a, b) / time_units[u].months;
        } else {
          if (__builtin_sub_overflow(b, a, &d)) d = b > a ? INT64_MAX : INT64_MIN;
          r = d / time_units[u].ms;
        }
        if (r > INT32_MAX || r < INT32_MIN)
          return ck_error_set(c->ev->err, CK_EEVAL, "could not compute TIMESTAMPDIFF(%s, …): "
                              "integer overflow, the result does not fit in INT",
                              time_units[u].name);
        break;
      }
    }
    if (rt.id == CK_T_INT32) ((int32_t *)o->values)[i] = (int32_t)r;
    else ((int64_t *)o->values)[i] = r;
  }
  return 0;
}


/* ---- JSON_VALUE, JSON_QUERY, JSON_EXISTS: a path into JSON text, without building a tree ---
 *
 * The text is checked whole (a scanner that skips values), then the path's steps are followed
 * by skipping what they do not name. Paths: an optional `lax` (the default; `strict` is
 * refused), `$`, then `.key`, `."key"` and `[index]` steps. */

#define JS_MAX_DEPTH 200
#define JS_BAD SIZE_MAX

static size_t js_ws(const char *s, size_t n, size_t i) {
  while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
  return i;
}

/* The end of the string whose opening quote is at i, or JS_BAD. */
static size_t js_string_end(const char *s, size_t n, size_t i) {
  for (i++; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"') return i + 1;
    if (ch < 0x20) return JS_BAD;
    if (ch == '\\') {
      if (++i >= n) return JS_BAD;
      if (s[i] == 'u') {
        for (int k = 1; k <= 4; k++)
          if (i + k >= n || !isxdigit((unsigned char)s[i + k])) return JS_BAD;
        i += 4;
      } else if (!strchr("\"\\/bfnrt", s[i])) {
        return JS_BAD;
      }
    }
  }
  return JS_BAD;
}

/* The end of the value at i (no leading blanks), or JS_BAD when it is not JSON. */
static size_t js_skip(const char *s, size_t n, size_t i, int depth) {
  if (i >= n || depth > JS_MAX_DEPTH) return JS_BAD;
  char ch = s[i];
  if (ch == '"') return js_string_end(s, n, i);
  if (ch == '{' || ch == '[') {
    char close = ch == '{' ? '}' : ']';
    i = js_ws(s, n, i + 1);
    if (i < n && s[i] == close) return i + 1;
    for (;;) {
      if (ch == '{') {
        if (i >= n || s[i] != '"' || (i = js_string_end(s, n, i)) == JS_BAD) return JS_BAD;
        i = js_ws(s, n, i);
        if (i >= n || s[i] != ':') return JS_BAD;
        i = js_ws(s, n, i + 1);
      }
      if ((i = js_skip(s, n, i, depth + 1)) == JS_BAD) return JS_BAD;
      i = js_ws(s, n, i);
      if (i < n && s[i] == ',') {
        i = js_ws(s, n, i + 1);
        continue;
      }
      return i < n && s[i] == close ? i + 1 : JS_BAD;
    }
  }
  static const char *const words[] = {"true", "false", "null"};
  for (size_t w = 0; w < 3; w++) {
    size_t len = strlen(words[w]);
    if (n - i >= len && memcmp(s + i, words[w], len) == 0) return i + len;
  }
  /* a number: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
  size_t j = i;
  if (j < n && s[j] == '-') j++;
  if (j >= n || !isdigit((unsigned char)s[j])) return JS_BAD;
  if (s[j] == '0') j++;
  else
    while (j < n && isdigit((unsigned char)s[j])) j++;
  if (j < n && s[j] == '.') {
    if (++j >= n || !isdigit((unsigned char)s[j])) return JS_BAD;
    while (j < n && isdigit((unsigned char)s[j])) j++;
  }
  if (j < n && (s[j] == 'e' || s[j] == 'E')) {
    j++;
    if (j < n && (s[j] == '+' || s[j] == '-')) j++;
    if (j >= n || !isdigit((unsigned char)s[j])) return JS_BAD;
    while (j < n && isdigit((unsigned char)s[j])) j++;
  }
  return j;
}

static unsigned js_hex4(const char *p) {
  unsigned v = 0;
  for (int k = 0; k < 4; k++) {
    char c = p[k];
    v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return v;
}

/* Appends the text of the (checked) string token [b, e) with its escapes undone. */
static void js_unescape(const char *s, size_t b, size_t e, ck_col_t *o, size_t *at) {
  for (size_t i = b + 1; i + 1 < e; i++) {
    if (s[i] != '\\') {
      str_put(o, at, s + i, 1);
      continue;
    }
    char c = s[++i];
    if (c != 'u') {
      char out = c == 'b' ? '\b' : c == 'f' ? '\f' : c == 'n' ? '\n' : c == 'r' ? '\r'
                 : c == 't' ? '\t' : c;
      str_put(o, at, &out, 1);
      continue;
    }
    UChar32 cp = (UChar32)js_hex4(s + i + 1);
    i += 4;
    if (U16_IS_LEAD(cp) && i + 6 < e && s[i + 1] == '\\' && s[i + 2] == 'u' &&
        U16_IS_TRAIL(js_hex4(s + i + 3))) {
      cp = U16_GET_SUPPLEMENTARY(cp, (UChar32)js_hex4(s + i + 3));
      i += 6;
    } else if (U_IS_SURROGATE(cp)) {
      cp = 0xFFFD;
    }
    char buf[4];
    int32_t len = 0;
    U8_APPEND_UNSAFE(buf, len, cp);
    str_put(o, at, buf, (size_t)len);
  }
}

/* True when the string token [b, e) of s says `key` (escapes undone). */
static bool js_key_is(const char *s, size_t b, size_t e, const char *key, size_t kn) {
  if (!memchr(s + b, '\\', e - b)) return e - b - 2 == kn && memcmp(s + b + 1, key, kn) == 0;
  ck_col_t tmp;
  ck_col_init(&tmp, CK_TYPE(CK_T_STRING), 1);
  size_t at = 0;
  js_unescape(s, b, e, &tmp, &at);
  bool eq = at == kn && memcmp(tmp.data ? tmp.data : "", key, kn) == 0;
  ck_col_fini(&tmp);
  return eq;
}

typedef struct jstep {
  const char *key; /* NULL: an index step */
  size_t kn;
  int64_t index;
} jstep_t;

/* Parses a path into steps (at most cap); -1 with why when it is not one clink reads. */
static int js_path(const char *p, size_t n, jstep_t *steps, int cap, int *nsteps, char *why,
                   size_t wcap) {
  size_t i = 0;
  while (i < n && p[i] == ' ') i++;
  if (n - i >= 6 && strncasecmp(p + i, "strict", 6) == 0) {
    snprintf(why, wcap, "strict mode is not supported (paths are lax)");
    return -1;
  }
  if (n - i >= 3 && strncasecmp(p + i, "lax", 3) == 0) i += 3;
  while (i < n && p[i] == ' ') i++;
  if (i >= n || p[i] != '$') {
    snprintf(why, wcap, "a path starts with $");
    return -1;
  }
  i++;
  int k = 0;
  while (i < n) {
    if (k == cap) {
      snprintf(why, wcap, "more than %d steps", cap);
      return -1;
    }
    jstep_t *st = &steps[k];
    if (p[i] == '.') {
      i++;
      if (i < n && p[i] == '"') {
        size_t b = ++i;
        while (i < n && p[i] != '"') i++;
        if (i >= n) {
          snprintf(why, wcap, "a quoted key is not closed");
          return -1;
        }
        st->key = p + b, st->kn = i - b;
        i++;
      } else {
        size_t b = i;
        while (i < n && (isalnum((unsigned char)p[i]) || p[i] == '_' || p[i] == '$' ||
                         (unsigned char)p[i] >= 0x80))
          i++;
        if (i == b) {
          snprintf(why, wcap, "'.' is followed by no key at character %zu", i + 1);
          return -1;
        }
        st->key = p + b, st->kn = i - b;
      }
    } else if (p[i] == '[') {
      size_t b = ++i;
      int64_t v = 0;
      while (i < n && isdigit((unsigned char)p[i]) && v < INT32_MAX) v = v * 10 + (p[i++] - '0');
      if (i == b || i >= n || p[i] != ']') {
        snprintf(why, wcap, "only [index] with a number is supported at character %zu", b);
        return -1;
      }
      i++;
      st->key = NULL, st->index = v;
    } else {
      snprintf(why, wcap, "unexpected '%c' at character %zu", p[i], i + 1);
      return -1;
    }
    k++;
  }
  *nsteps = k;
  return 0;
}

#define JS_MAX_STEPS 32

int ck_json_path_check(const char *path, size_t n, char *why, size_t cap) {
  jstep_t steps[JS_MAX_STEPS];
  int k;
  return js_path(path, n, steps, JS_MAX_STEPS, &k, why, cap);
}

/* Finds the value the path names: its [*b, *e) in s. 1 found, 0 absent, -1 not JSON. */
static int js_find(const char *s, size_t n, const jstep_t *steps, int k, size_t *b, size_t *e) {
  size_t i = js_ws(s, n, 0), end = js_skip(s, n, i, 0);
  if (end == JS_BAD || js_ws(s, n, end) != n) return -1;
  for (int st = 0; st < k; st++) {
    char open = s[i];
    if (steps[st].key ? open != '{' : open != '[') return 0;
    i = js_ws(s, n, i + 1);
    if (s[i] == (open == '{' ? '}' : ']')) return 0;
    bool found = false;
    for (int64_t idx = 0;; idx++) {
      if (open == '{') {
        size_t kb = i, ke = js_string_end(s, n, i);
        i = js_ws(s, n, js_ws(s, n, ke) + 1); /* past ':' */
        if (js_key_is(s, kb, ke, steps[st].key, steps[st].kn)) {
          found = true;
          break;
        }
      } else if (idx == steps[st].index) {
        found = true;
        break;
      }
      i = js_ws(s, n, js_skip(s, n, i, 0));
      if (s[i] != ',') break;
      i = js_ws(s, n, i + 1);
    }
    if (!found) return 0;
  }
  *b = i;
  *e = js_skip(s, n, i, 0);
  return 1;
}

/* The value [b, e) without the blanks between its tokens (Flink writes JSON_QUERY's result
 * compactly). */
static void js_compact(const char *s, size_t b, size_t e, ck_col_t *o, size_t *at) {
  for (size_t i = b; i < e;) {
    if (s[i] == '"') {
      size_t j = js_string_end(s, e, i);
      str_put(o, at, s + i, j - i);
      i = j;
    } else if (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
      i++;
    } else {
      str_put(o, at, s + i, 1);
      i++;
    }
  }
}

/* JSON text of one value for JSON_OBJECT / JSON_ARRAY: strings quoted and escaped (as
 * RFC 8259 requires: the quote, the backslash and control characters), numbers and booleans
 * as they are, a TIMESTAMP, DATE or TIME as its SQL text in quotes, raw JSON as it is. */
static void json_put_value(const ck_value_t *v, bool raw, ck_buf_t *b) {
  if (v->is_null) {
    ck_buf_puts(b, "null");
    return;
  }
  switch (v->type.id) {
    case CK_T_BOOL: ck_buf_puts(b, v->v.b ? "true" : "false"); return;
    case CK_T_INT32:
    case CK_T_INT64:
    case CK_T_FLOAT32:
    case CK_T_FLOAT64:
    case CK_T_DECIMAL: fmt_value(v, b); return;
    case CK_T_STRING:
      if (raw) {
        ck_buf_append(b, v->v.s.ptr, v->v.s.len);
        return;
      }
      break;
    default: break;
  }
  ck_buf_t text;
  ck_buf_init(&text);
  if (v->type.id == CK_T_TIMESTAMP) ck_timestamp_format_typed(v->type, v->v.i, &text);
  else fmt_value(v, &text);
  ck_buf_putc(b, '"');
  for (size_t i = 0; i < text.len; i++) {
    unsigned char ch = (unsigned char)text.data[i];
    if (ch == '"' || ch == '\\') ck_buf_putc(b, '\\'), ck_buf_putc(b, (char)ch);
    else if (ch == '\n') ck_buf_puts(b, "\\n");
    else if (ch == '\t') ck_buf_puts(b, "\\t");
    else if (ch == '\r') ck_buf_puts(b, "\\r");
    else if (ch < 0x20) ck_buf_printf(b, "\\u%04x", ch);
    else ck_buf_putc(b, (char)ch);
  }
  ck_buf_putc(b, '"');
  ck_buf_fini(&text);
}

static int k_json_build(kc_t *c) {
  bool object = c->e->fn == CK_FN_JSON_OBJECT;
  ck_col_t *o = out_append(c->out, CK_TYPE(CK_T_STRING), c->n);
  ck_buf_t b;
  ck_buf_init(&b);
  int rc = 0;
  for (size_t i = 0; i < c->n && !rc; i++) {
    if (!LIVE(c->mask, i)) {
      ck_col_append_null(o);
      continue;
    }
    size_t mn;
    const char *mode = vstr(&c->k[0], i, &mn);
    bool absent = mode[0] == 'A';
    ck_buf_reset(&b);
    ck_buf_putc(&b, object ? '{' : '[');
    bool first = true;
    for (int j = 1; j < c->nk; j += object ? 2 : 1) {
      int vj = object ? j + 1 : j;
      ck_value_t v;
      get_value(c->k[vj].col, IX(&c->k[vj], i), &v);
      if (!VOK(&c->k[vj], i)) v.is_null = true;
      if (v.is_null && absent) continue;
      if (!first) ck_buf_putc(&b, ',');
      first = false;
      if (object) {
        if (!VOK(&c->k[j], i)) {
          rc = ck_error_set(c->ev->err, CK_EEVAL, "could not compute JSON_OBJECT: key number %d "
                            "is NULL", (j + 1) / 2);
          break;
        }
        ck_value_t k;
        get_value(c->k[j].col, IX(&c->k[j], i), &k);
        json_put_value(&k, false, &b);
        ck_buf_putc(&b, ':');
      }
      json_put_value(&v, mode[vj] == 'j', &b);
    }
    ck_buf_putc(&b, object ? '}' : ']');
    ck_col_append_str(o, b.data, b.len);
  }
  ck_buf_fini(&b);
  return rc;
}

static int k_json(kc_t *c) {
  ck_fn_t fn = c->e->fn;
  bool exists = fn == CK_FN_JSON_EXISTS;
  ck_col_t *o = exists ? out_init(c->out, CK_TYPE(CK_T_BOOL), c->n)
                       : out_append(c->out, CK_TYPE(CK_T_STRING), c->n);
  if (exists)
    for (int j = 0; j < c->nk; j++) and_valid(o, &c->k[j]);
  jstep_t steps[JS_MAX_STEPS];
  int k = 0;
  const char *last_path = NULL;
  size_t last_pn = 0;
  bool path_ok = false;
  for (size_t i = 0; i < c->n; i++) {
    if (!counts(c, i)) {
      if (!exists) ck_col_append_null(o);
      continue;
    }
    size_t n, pn, b = 0, e = 0;
    const char *s = vstr(&c->k[0], i, &n), *p = vstr(&c->k[1], i, &pn);
    if (p != last_path || pn != last_pn) {
      char why[120];
      path_ok = js_path(p, pn, steps, JS_MAX_STEPS, &k, why, sizeof why) == 0;
      last_path = p, last_pn = pn;
    }
    int found = path_ok ? js_find(s, n, steps, k, &b, &e) : -1;
    if (exists) {
      ((uint8_t *)o->values)[i] = found == 1;
      continue;
    }
    char first = found == 1 ? s[b] : 0;
    bool container = first == '{' || first == '[';
    if (found != 1 || first == 'n' || (fn == CK_FN_JSON_VALUE) == container) {
      ck_col_append_null(o); /* absent, null, or not the kind of value asked for */
      continue;
    }
    size_t at = 0;
    if (fn == CK_FN_JSON_QUERY) js_compact(s, b, e, o, &at);
    else if (first == '"') js_unescape(s, b, e, o, &at);
    else str_put(o, &at, s + b, e - b);
    str_commit(o, at);
  }
  return 0;
}


/* ---- SIMILAR TO: the SQL standard's regular expressions, as ICU patterns -------------------
 *
 * `%` is any text and `_` any character; `|`, `*`, `+`, `?`, `{m,n}`, `(…)` and `[…]` are
 * regular-expression syntax; every other character (`.`, `^`, `$`, `\` among them) stands for
 * itself, as does the character after the ESCAPE one. The whole text must match. */

static void similar_literal(ck_buf_t *out, const char *p, size_t cl) {
  if (cl == 1 && !isalnum((unsigned char)p[0]) && (unsigned char)p[0] < 0x80) ck_buf_putc(out, '\\');
  ck_buf_append(out, p, cl);
}

static int similar_translate(const char *p, size_t n, const char *esc, size_t en, ck_buf_t *out,
                             char *why, size_t cap) {
  ck_buf_puts(out, "(?:");
  for (size_t i = 0; i < n;) {
    size_t cl = u8len((unsigned char)p[i]);
    if (i + cl > n) cl = n - i;
    if (en && i + en <= n && memcmp(p + i, esc, en) == 0) {
      i += en;
      if (i >= n) {
        snprintf(why, cap, "it ends with its ESCAPE character");
        return -1;
      }
      size_t c2 = u8len((unsigned char)p[i]);
      if (i + c2 > n) c2 = n - i;
      similar_literal(out, p + i, c2);
      i += c2;
      continue;
    }
    char ch = p[i];
    if (ch == '%') {
      ck_buf_puts(out, ".*");
    } else if (ch == '_') {
      ck_buf_putc(out, '.');
    } else if (ch == '{') { /* {m}, {m,}, {m,n} as they are */
      size_t j = i + 1;
      while (j < n && (isdigit((unsigned char)p[j]) || p[j] == ',')) j++;
      if (j >= n || p[j] != '}') {
        snprintf(why, cap, "a '{' at character %zu is not a repetition {m,n}",
                 ck_utf8_chars(p, i) + 1);
        return -1;
      }
      ck_buf_append(out, p + i, j + 1 - i);
      cl = j + 1 - i;
    } else if (strchr("|*+?()", ch)) {
      ck_buf_putc(out, ch);
    } else if (ch == '[') {
      size_t j = i + 1;
      if (j < n && p[j] == '^') j++;
      if (j < n && p[j] == ']') j++;
      while (j < n && p[j] != ']') {
        if (p[j] == '[' && j + 1 < n && p[j + 1] == ':') { /* [:alpha:] */
          const char *end = memmem(p + j, n - j, ":]", 2);
          if (end) j = (size_t)(end - p) + 1;
        }
        j++;
      }
      if (j >= n) {
        snprintf(why, cap, "a '[' at character %zu is not closed", ck_utf8_chars(p, i) + 1);
        return -1;
      }
      /* ICU's sets give '[', '&' and '\\' meanings of their own: those stand for themselves,
       * except a [:class:] */
      ck_buf_putc(out, '[');
      for (size_t k = i + 1; k < j; k++) {
        if (p[k] == '[' && k + 1 < j && p[k + 1] == ':') {
          const char *end = memmem(p + k, j + 1 - k, ":]", 2);
          size_t e = end ? (size_t)(end - p) + 2 : j;
          ck_buf_append(out, p + k, e - k);
          k = e - 1;
          continue;
        }
        if (p[k] == '[' || p[k] == ']' || p[k] == '&' || p[k] == '\\') ck_buf_putc(out, '\\');
        ck_buf_putc(out, p[k]);
      }
      ck_buf_putc(out, ']');
      cl = j + 1 - i;
    } else {
      similar_literal(out, p + i, cl);
    }
    i += cl;
  }
  ck_buf_putc(out, ')');
  return 0;
}

static URegularExpression *similar_compile(const char *p, size_t n, const char *esc, size_t en,
                                           char *why, size_t cap) {
  ck_buf_t rx;
  ck_buf_init(&rx);
  URegularExpression *re = NULL;
  if (similar_translate(p, n, esc, en, &rx, why, cap) == 0) {
    UParseError pe;
    UErrorCode st = U_ZERO_ERROR;
    UText *ut = utext_openUTF8(NULL, rx.data, (int64_t)rx.len, &st);
    if (!U_FAILURE(st)) re = uregex_openUText(ut, UREGEX_DOTALL, &pe, &st);
    if (ut) utext_close(ut);
    if (U_FAILURE(st)) {
      if (re) uregex_close(re);
      re = NULL;
      snprintf(why, cap, "%s", u_errorName(st));
    }
  }
  ck_buf_fini(&rx);
  return re;
}

int ck_similar_check(const char *pattern, size_t n, const char *esc, size_t en, char *why,
                     size_t cap) {
  if (esc && ck_utf8_chars(esc, en) != 1) {
    snprintf(why, cap, "its ESCAPE must be one character");
    return -1;
  }
  URegularExpression *re = similar_compile(pattern, n, esc, en, why, cap);
  if (!re) return -1;
  uregex_close(re);
  return 0;
}

static int k_similar(kc_t *c) {
  const vec_t *A = &c->k[0], *P = &c->k[1], *E = c->nk > 2 ? &c->k[2] : NULL;
  bool neg = c->e->negated;
  ck_col_t *o = out_init(c->out, CK_TYPE(CK_T_BOOL), c->n);
  for (int j = 0; j < c->nk; j++) and_valid(o, &c->k[j]);
  uint8_t *r = o->values;
  URegularExpression *re = NULL;
  UText *text = NULL;
  ck_buf_t key; /* the pattern and escape re was compiled from */
  ck_buf_init(&key);
  int rc = 0;
  for (size_t i = 0; i < c->n && !rc; i++) {
    if (!counts(c, i)) continue;
    size_t sn, pn, en = 0;
    const char *s = vstr(A, i, &sn), *p = vstr(P, i, &pn), *esc = E ? vstr(E, i, &en) : NULL;
    if (!re || key.len != pn + en + 1 || memcmp(key.data, p, pn) != 0 ||
        memcmp(key.data + pn + 1, esc ? esc : "", en) != 0) {
      char why[160];
      if (re) uregex_close(re);
      re = NULL;
      if (esc && ck_utf8_chars(esc, en) != 1) snprintf(why, sizeof why, "its ESCAPE must be one character");
      else re = similar_compile(p, pn, esc, en, why, sizeof why);
      if (!re) {
        rc = ck_error_set(c->ev->err, CK_EEVAL, "could not compute SIMILAR TO with the pattern "
                          "'%.*s': %s", (int)(pn > 60 ? 60 : pn), p, why);
        break;
      }
      ck_buf_reset(&key);
      ck_buf_append(&key, p, pn);
      ck_buf_putc(&key, 0);
      ck_buf_append(&key, esc ? esc : "", en);
    }
    UErrorCode st = U_ZERO_ERROR;
    text = utext_openUTF8(text, s, (int64_t)sn, &st);
    uregex_setUText(re, text, &st);
    bool m = !U_FAILURE(st) && uregex_matches64(re, 0, &st) && !U_FAILURE(st);
    r[i] = m != neg;
  }
  if (re) uregex_close(re);
  if (text) utext_close(text);
  ck_buf_fini(&key);
  return rc;
}

/* ---- CAST ------------------------------------------------------------------------------- */

static int cast_fail(const ck_value_t *v, ck_type_t to, const char *why, ck_error_t *err) {
  ck_buf_t b;
  ck_buf_init(&b);
  value_text(v, &b);
  ck_error_set(err, CK_EEVAL, "could not cast %s to %s%s%s", b.data, TNAME(to), why ? ": " : "",
               why ? why : "");
  ck_buf_fini(&b);
  return CK_EEVAL;
}

static void trim_blanks(const char **s, size_t *n) {
  while (*n && (**s == ' ' || **s == '\t' || **s == '\n' || **s == '\r')) (*s)++, (*n)--;
  while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t' || (*s)[*n - 1] == '\n' ||
                (*s)[*n - 1] == '\r'))
    (*n)--;
}

/* Integer text: [sign] digits [. digits] — a fraction is dropped, as Flink does.
 * 0 ok, -1 not a number, -2 out of range of int64. */
static int parse_int(const char *s, size_t n, int64_t *out) {
  trim_blanks(&s, &n);
  size_t i = 0;
  bool neg = false;
  if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  u128 v = 0;
  bool any = false, big = false;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
    any = true;
    v = v * 10 + (unsigned)(s[i] - '0');
    if (v > ((u128)1 << 64)) big = true, v = (u128)1 << 64;
  }
  if (i < n && s[i] == '.') {
    for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++) any = true;
  }
  if (!any || i != n) return -1;
  if (big || v > (neg ? (u128)1 << 63 : ((u128)1 << 63) - 1)) return -2;
  *out = neg ? (int64_t)(0 - (uint64_t)v) : (int64_t)v;
  return 0;
}

static bool parse_double(const char *s, size_t n, bool as_float, double *out) {
  trim_blanks(&s, &n);
  if (n == 0 || n > 1000) return false;
  for (size_t i = 0; i < n; i++) /* decimal text only: no hex, no 'NaN' or 'Infinity' */
    if (!((s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == 'e' || s[i] == 'E' ||
          s[i] == '+' || s[i] == '-'))
      return false;
  char stack[128];
  char *buf = n < sizeof stack ? stack : ck_malloc(n + 1);
  memcpy(buf, s, n);
  buf[n] = 0;
  char *end;
  double d = as_float ? strtof(buf, &end) : strtod(buf, &end);
  bool ok = end == buf + n;
  if (buf != stack) ck_free(buf);
  *out = d;
  return ok;
}

static bool double_to_int(double d, ck_type_id_t to, int64_t *out) {
  if (isnan(d)) return false;
  double t = trunc(d);
  if (to == CK_T_INT32 ? (t < -2147483648.0 || t > 2147483647.0)
                       : (t < -9223372036854775808.0 || t >= 9223372036854775808.0))
    return false;
  *out = (int64_t)t;
  return true;
}

/* One value from its type to `to`. A STRING result points into tmp. */
static int cast_value(const ck_value_t *v, ck_type_t to, ck_value_t *r, ck_buf_t *tmp,
                      ck_error_t *err) {
  memset(r, 0, sizeof *r);
  r->type = to;
  ck_type_t ft = v->type;
  ck_type_id_t f = ft.id;
  switch (to.id) {
    case CK_T_BOOL:
      switch (f) {
        case CK_T_BOOL: r->v.b = v->v.b; return 0;
        case CK_T_INT32:
        case CK_T_INT64: r->v.b = v->v.i != 0; return 0;
        case CK_T_FLOAT32:
        case CK_T_FLOAT64: r->v.b = v->v.f != 0; return 0;
        case CK_T_DECIMAL: r->v.b = v->v.dec != 0; return 0;
        case CK_T_STRING: {
          const char *s = v->v.s.ptr;
          size_t n = v->v.s.len;
          trim_blanks(&s, &n);
          if (ck_str_ieq((ck_str_t){s, n}, CK_STR("true"))) r->v.b = true;
          else if (!ck_str_ieq((ck_str_t){s, n}, CK_STR("false"))) return cast_fail(v, to, NULL, err);
          return 0;
        }
        default: break;
      }
      break;
    case CK_T_INT32:
    case CK_T_INT64:
    case CK_T_TIMESTAMP: {
      int64_t x = 0;
      switch (f) {
        case CK_T_BOOL: x = v->v.b; break;
        case CK_T_INT32:
        case CK_T_INT64:
        case CK_T_TIMESTAMP: x = v->v.i; break;
        case CK_T_FLOAT32:
        case CK_T_FLOAT64:
          if (!double_to_int(v->v.f, to.id == CK_T_INT32 ? CK_T_INT32 : CK_T_INT64, &x))
            return cast_fail(v, to, "value out of range", err);
          break;
        case CK_T_DECIMAL: {
          i128 q = v->v.dec / (i128)P10[ft.scale];
          if (!int_fits(q, CK_T_INT64)) return cast_fail(v, to, "value out of range", err);
          x = (int64_t)q;
          break;
        }
        case CK_T_STRING:
          if (ck_type_is_date(to)) {
            if (!ck_date_parse(v->v.s.ptr, v->v.s.len, &x)) return cast_fail(v, to, NULL, err);
            break;
          }
          if (ck_type_is_time(to)) {
            if (!ck_time_parse(v->v.s.ptr, v->v.s.len, &x)) return cast_fail(v, to, NULL, err);
            break;
          }
          if (to.id == CK_T_TIMESTAMP) {
            if (!ck_timestamp_parse(v->v.s.ptr, v->v.s.len, &x)) return cast_fail(v, to, NULL, err);
            break;
          }
          switch (parse_int(v->v.s.ptr, v->v.s.len, &x)) {
            case 0: break;
            case -2: return cast_fail(v, to, "value out of range", err);
            default: return cast_fail(v, to, NULL, err);
          }
          break;
        default: return cast_fail(v, to, "unsupported conversion", err);
      }
      if (to.id == CK_T_INT32 && !int_fits(x, CK_T_INT32))
        return cast_fail(v, to, "value out of range", err);
      if (f == CK_T_TIMESTAMP && ck_type_is_date(to) && !ck_type_is_date(ft)) /* its day */
        x -= (x % CK_MS_PER_DAY + CK_MS_PER_DAY) % CK_MS_PER_DAY;
      else if (f == CK_T_TIMESTAMP && ck_type_is_time(to) && !ck_type_is_time(ft)) /* time of day */
        x = (x % CK_MS_PER_DAY + CK_MS_PER_DAY) % CK_MS_PER_DAY;
      if (ck_type_is_time(to)) x = ck_time_truncate(to, x);
      r->v.i = x;
      return 0;
    }
    case CK_T_FLOAT32:
    case CK_T_FLOAT64: {
      double d = 0;
      bool as_float = to.id == CK_T_FLOAT32;
      switch (f) {
        case CK_T_BOOL: d = v->v.b; break;
        case CK_T_INT32:
        case CK_T_INT64: d = as_float ? (double)(float)v->v.i : (double)v->v.i; break;
        case CK_T_FLOAT32:
        case CK_T_FLOAT64: d = v->v.f; break;
        case CK_T_DECIMAL: d = dec_to_double(v->v.dec, ft.scale); break;
        case CK_T_STRING:
          if (!parse_double(v->v.s.ptr, v->v.s.len, as_float, &d)) return cast_fail(v, to, NULL, err);
          break;
        default: return cast_fail(v, to, "unsupported conversion", err);
      }
      /* no value is Infinity or NaN: text that reads as one, or a number past the type's
       * range, is out of range (rounding to FLT_MAX is not) */
      if (!isfinite(d) || (as_float && !isfinite((float)d)))
        return cast_fail(v, to, "value out of range", err);
      r->v.f = as_float ? (double)(float)d : d;
      return 0;
    }
    case CK_T_DECIMAL: {
      i128 x = 0;
      bool ok;
      switch (f) {
        case CK_T_BOOL: ok = ck_dec_rescale(v->v.b, 0, to.scale, to.precision, &x); break;
        case CK_T_INT32:
        case CK_T_INT64: ok = ck_dec_rescale(v->v.i, 0, to.scale, to.precision, &x); break;
        case CK_T_FLOAT32:
        case CK_T_FLOAT64:
          ok = double_to_dec(v->v.f, f == CK_T_FLOAT32, to.precision, to.scale, &x);
          break;
        case CK_T_DECIMAL: ok = ck_dec_rescale(v->v.dec, ft.scale, to.scale, to.precision, &x); break;
        case CK_T_STRING:
          if (!ck_decimal_parse(v->v.s.ptr, v->v.s.len, to.precision, to.scale, &x))
            return cast_fail(v, to, NULL, err);
          ok = true;
          break;
        default: return cast_fail(v, to, "unsupported conversion", err);
      }
      if (!ok) return cast_fail(v, to, "value out of range", err);
      r->v.dec = x;
      return 0;
    }
    case CK_T_STRING:
      ck_buf_reset(tmp);
      fmt_value(v, tmp);
      r->v.s.ptr = tmp->data ? tmp->data : "";
      r->v.s.len = tmp->len;
      return 0;
    case CK_T_NULL: break;
  }
  return cast_fail(v, to, "unsupported conversion", err);
}

/* Reports the first row that matters whose value a fast cast loop found out of range. */
static int cast_scan_error(kc_t *c) {
  ck_buf_t tmp;
  ck_buf_init(&tmp);
  int rc = 0;
  for (size_t i = 0; i < c->n && !rc; i++) {
    if (!counts(c, i)) continue;
    ck_value_t v, r;
    get_value(c->k[0].col, IX(&c->k[0], i), &v);
    rc = cast_value(&v, c->e->type, &r, &tmp, c->ev->err);
  }
  ck_buf_fini(&tmp);
  return rc;
}

#define CAST_LOOP(TF, TT, EXPR)                                         \
  do {                                                                  \
    const TF *a = A->col->values;                                       \
    TT *r = o->values;                                                  \
    LOOP1(ca, n, { r[i] = (TT)(EXPR); });                               \
  } while (0)

/* Tight loops for the numeric conversions that need no per-row decision; false when the pair
 * takes the general path. */
static bool cast_fast(kc_t *c, int *rc) {
  const vec_t *A = &c->k[0];
  ck_type_id_t f = A->col->type.id, t = c->e->type.id;
  size_t n = c->n;
  bool ca = A->is_const;
  bool i64like_f = f == CK_T_INT64 || f == CK_T_TIMESTAMP;
  bool i64like_t = t == CK_T_INT64 || t == CK_T_TIMESTAMP;
  bool handled = (f == CK_T_INT32 && (i64like_t || t == CK_T_FLOAT32 || t == CK_T_FLOAT64)) ||
                 (i64like_f && (i64like_t || t == CK_T_INT32 || t == CK_T_FLOAT32 || t == CK_T_FLOAT64)) ||
                 (f == CK_T_FLOAT32 && t == CK_T_FLOAT64) ||
                 (f == CK_T_BOOL && (t == CK_T_INT32 || i64like_t || t == CK_T_FLOAT64)) ||
                 (t == CK_T_BOOL && (ck_type_is_integer(A->col->type) || f == CK_T_FLOAT64));
  if (t == CK_T_DECIMAL && ck_type_is_integer(A->col->type)) {
    ck_type_t dt = c->e->type;
    ck_col_t *o = out_init(c->out, dt, n);
    and_valid(o, A);
    i128 m = (i128)P10[dt.scale];
    int64_t lim = dt.precision - dt.scale >= 19 ? INT64_MAX : (int64_t)P10[dt.precision - dt.scale];
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
      int64_t x = vint(A, i);
      bad |= x >= lim || x <= -lim;
      st128(o->values, i, (i128)x * m);
    }
    *rc = bad ? cast_scan_error(c) : 0;
    return true;
  }
  if (!handled || (t == CK_T_TIMESTAMP && f == CK_T_BOOL)) return false;
  /* a change of kind (TIMESTAMP to DATE or TIME) or of TIME precision cuts the value */
  if (t == CK_T_TIMESTAMP && (ck_type_ts_kind(c->e->type) > 0 || ck_type_ts_kind(A->col->type) > 0))
    return false;
  ck_col_t *o = out_init(c->out, c->e->type, n);
  and_valid(o, A);
  *rc = 0;
  if (t == CK_T_BOOL) {
    if (f == CK_T_INT32) CAST_LOOP(int32_t, uint8_t, a[ia] != 0);
    else if (f == CK_T_FLOAT64) CAST_LOOP(double, uint8_t, a[ia] != 0);
    else CAST_LOOP(int64_t, uint8_t, a[ia] != 0);
    return true;
  }
  switch (f) {
    case CK_T_BOOL:
      if (t == CK_T_INT32) CAST_LOOP(uint8_t, int32_t, a[ia] != 0);
      else if (t == CK_T_FLOAT64) CAST_LOOP(uint8_t, double, a[ia] != 0);
      else CAST_LOOP(uint8_t, int64_t, a[ia] != 0);
      break;
    case CK_T_INT32:
      if (t == CK_T_FLOAT32) CAST_LOOP(int32_t, float, a[ia]);
      else if (t == CK_T_FLOAT64) CAST_LOOP(int32_t, double, a[ia]);
      else CAST_LOOP(int32_t, int64_t, a[ia]);
      break;
    case CK_T_INT64:
    case CK_T_TIMESTAMP:
      if (t == CK_T_FLOAT32) CAST_LOOP(int64_t, float, a[ia]);
      else if (t == CK_T_FLOAT64) CAST_LOOP(int64_t, double, a[ia]);
      else if (i64like_t) CAST_LOOP(int64_t, int64_t, a[ia]);
      else {
        const int64_t *a = A->col->values;
        int32_t *r = o->values;
        int bad = 0;
        LOOP1(ca, n, {
          bad |= a[ia] < INT32_MIN || a[ia] > INT32_MAX;
          r[i] = (int32_t)a[ia];
        });
        if (bad) *rc = cast_scan_error(c);
      }
      break;
    case CK_T_FLOAT32: CAST_LOOP(float, double, a[ia]); break;
    default: return false;
  }
  return true;
}

static int k_cast(kc_t *c) {
  int rc;
  if (cast_fast(c, &rc)) return rc;
  const vec_t *A = &c->k[0];
  ck_type_t to = c->e->type;
  ck_col_t *o = out_append(c->out, to, c->n);
  ck_buf_t tmp;
  ck_buf_init(&tmp);
  rc = 0;
  for (size_t i = 0; i < c->n; i++) {
    if (!counts(c, i)) {
      ck_col_append_null(o);
      continue;
    }
    ck_value_t v, r;
    get_value(A->col, IX(A, i), &v);
    if ((rc = cast_value(&v, to, &r, &tmp, c->ev->err))) break;
    ck_col_append_value(o, &r);
  }
  ck_buf_fini(&tmp);
  return rc;
}

/* ---- NOT, IS … -------------------------------------------------------------------------- */

static int k_not(kc_t *c) {
  const vec_t *A = &c->k[0];
  size_t n = c->n;
  bool ca = A->is_const;
  ck_col_t *o = out_init(c->out, CK_TYPE(CK_T_BOOL), n);
  and_valid(o, A);
  const uint8_t *a = A->col->values;
  uint8_t *r = o->values;
  LOOP1(ca, n, { r[i] = a[ia] == 0; });
  return 0;
}

/* ---- dispatch --------------------------------------------------------------------------- */

static int eval_node(const ev_t *ev, const ck_expr_t *e, const uint8_t *mask, vec_t *out);

typedef struct kids {
  vec_t *v;
  int n;
  vec_t buf[4];
} kids_t;

static void kids_fini(kids_t *k) {
  for (int i = 0; i < k->n; i++) vec_fini(&k->v[i]);
  if (k->v != k->buf) ck_free(k->v);
  k->v = NULL;
  k->n = 0;
}

/* first, when not NULL, is args[0] already evaluated (the chain loop in eval_node); the
 * callee owns it from here on, on every path. */
static int kids_eval(const ev_t *ev, const ck_expr_t *e, const uint8_t *mask, vec_t *first,
                     kids_t *k) {
  memset(k->buf, 0, sizeof k->buf);
  k->v = e->nargs <= 4 ? k->buf : ck_calloc((size_t)e->nargs, sizeof(vec_t));
  k->n = e->nargs;
  if (first) vec_move(&k->v[0], first);
  for (int i = first ? 1 : 0; i < e->nargs; i++) {
    int rc = eval_node(ev, e->args[i], mask, &k->v[i]);
    if (rc) {
      kids_fini(k);
      return rc;
    }
  }
  return 0;
}

/* The kernel column of CK_FN_TABLE (0: the function is evaluated by eval() itself). */
static int (*const fn_kernels[CK_FN__COUNT])(kc_t *) = {
#define CK_X_FN(id, name, min, max, typing, kernel, call, alias, sig, doc) [CK_FN_##id] = kernel,
    CK_FN_TABLE(CK_X_FN)
#undef CK_X_FN
};

static int kernel(kc_t *c) {
  if (c->e->kind == CK_EX_CAST) return k_cast(c);
  if ((unsigned)c->e->fn < (unsigned)CK_FN__COUNT && fn_kernels[c->e->fn])
    return fn_kernels[c->e->fn](c);
  ck_assert(!"no kernel for this function");
  return CK_EINTERNAL;
}

/* NULL in, NULL out: a constant NULL argument makes the whole result a constant NULL. */
static int eval_strict(const ev_t *ev, const ck_expr_t *e, const uint8_t *mask, vec_t *first,
                       vec_t *out) {
  kids_t k;
  int rc = kids_eval(ev, e, mask, first, &k);
  if (rc) return rc;
  for (int i = 0; i < k.n; i++) {
    if (k.v[i].is_const && !VOK(&k.v[i], 0)) {
      kids_fini(&k);
      out_null(out, e->type);
      return 0;
    }
  }
  kc_t c = {ev, e, mask, k.v, k.n, ev->n, out};
  rc = kernel(&c);
  kids_fini(&k);
  if (rc) vec_fini(out);
  return rc;
}

/* A function that reads NULL arguments itself (CONCAT_WS): no NULL-in, NULL-out shortcut. */
static int eval_lenient(const ev_t *ev, const ck_expr_t *e, const uint8_t *mask, vec_t *first,
                        vec_t *out) {
  kids_t k;
  int rc = kids_eval(ev, e, mask, first, &k);
  if (rc) return rc;
  kc_t c = {ev, e, mask, k.v, k.n, ev->n, out};
  rc = kernel(&c);
  kids_fini(&k);
  if (rc) vec_fini(out);
  return rc;
}

/* A BOOL vector as per-row validity and value bytes (0/1; value 0 where NULL). */
static void load_bool(const vec_t *v, size_t n, uint8_t *ok, uint8_t *val) {
  const uint8_t *x = v->col->values;
  if (v->is_const) {
    bool valid = ck_col_valid(v->col, 0);
    memset(ok, valid, n);
    memset(val, valid && x[0], n);
  } else if (!v->col->validity) {
    memset(ok, 1, n);
    for (size_t i = 0; i < n; i++) val[i] = x[i] != 0;
  } else {
    const uint8_t *bm = v->col->validity;
    for (size_t i = 0; i < n; i++) {
      ok[i] = (bm[i >> 3] >> (i & 7)) & 1;
      val[i] = ok[i] & (x[i] != 0);
    }
  }
}

/* AND / OR with three-valued logic; a later operand only runs on the rows still undecided
 * (AND: not already FALSE; OR: not already TRUE). Combining is branch-free over all rows: a
 * decided row stays decided whatever the later operand holds there. */
static int eval_logic(const ev_t *ev, const ck_expr_t *e, const uint8_t *mask, vec_t *first,
                      vec_t *out) {
  bool is_and = e->fn == CK_FN_AND;
  size_t n = ev->n;
  uint8_t stack[5 * 256];
  uint8_t *mem = n <= 256 ? stack : ck_malloc(5 * n);
  uint8_t *val = mem, *ok = mem + n, *m = mem + 2 * n, *bval = mem + 3 * n, *bok = mem + 4 * n;
  vec_t v = {0};
  int rc = 0;
  if (first) vec_move(&v, first);
  else if ((rc = eval_node(ev, e->args[0], mask, &v))) goto fail;
  load_bool(&v, n, ok, val);
  vec_fini(&v);
  for (int j = 1; j < e->nargs; j++) {
    uint8_t any = 0, decided = is_and ? 0 : 1;
    for (size_t i = 0; i < n; i++) {
      m[i] = (uint8_t)(LIVE(mask, i) & !(ok[i] & (val[i] == decided)));
      any |= m[i];
    }
    if (!any) break;
    if ((rc = eval_node(ev, e->args[j], m, &v))) goto fail;
    load_bool(&v, n, bok, bval);
    vec_fini(&v);
    if (is_and) {
      for (size_t i = 0; i < n; i++) {
        uint8_t av = ok[i], a = val[i], bv = bok[i], b = bval[i];
        ok[i] = (av & bv) | (av & !a) | (bv & !b);
        val[i] = a & b;
      }
    } else {
      for (size_t i = 0; i < n; i++) {
        uint8_t av = ok[i], a = val[i], bv = bok[i], b = bval[i];
        ok[i] = (av & bv) | (av & a) | (bv & b);
        val[i] = (a | b) & ok[i];
      }
    }
  }
  out_bool(out, n, val, ok);
fail:
  vec_fini(&v);
  if (mem != stack) ck_free(mem);
  return rc;
}

static int eval_is(const ev_t *ev, const ck_expr_t *e, const uint8_t *mask, vec_t *first,
                   vec_t *out) {
  vec_t v = {0};
  if (first) vec_move(&v, first);
  else {
    int rc = eval_node(ev, e->args[0], mask, &v);
    if (rc) return rc;
  }
  size_t n = ev->n;
  ck_col_t *o = out_init(out, CK_TYPE(CK_T_BOOL), n);
  uint8_t *r = o->values;
  for (size_t i = 0; i < n; i++) {
    bool valid = VOK(&v, i);
    switch (e->fn) {
      case CK_FN_IS_NULL: r[i] = !valid; break;
      case CK_FN_IS_NOT_NULL: r[i] = valid; break;
      case CK_FN_IS_TRUE: r[i] = valid && vbool(&v, i); break;
      default: r[i] = valid && !vbool(&v, i); break;
    }
  }
  vec_fini(&v);
  return 0;
}

/* Builds the result of CASE / COALESCE: row i comes from vals[pick[i]], or NULL when -1. */
static void gather(vec_t *out, ck_type_t t, size_t n, const vec_t *vals, const int *pick) {
  ck_col_t *o = out_append(out, t, n);
  for (size_t i = 0; i < n; i++) {
    if (pick[i] < 0) ck_col_append_null(o);
    else ck_col_append_from(o, vals[pick[i]].col, IX(&vals[pick[i]], i));
  }
  bitmap_tail(o);
}

static int eval_case(const ev_t *ev, const ck_expr_t *e, const uint8_t *mask, vec_t *out) {
  size_t n = ev->n;
  int pairs = (e->nargs - (e->has_else ? 1 : 0)) / 2;
  uint8_t *rem = ck_malloc(n), *hit = ck_malloc(n);
  int *pick = ck_malloc(n * sizeof *pick);
  vec_t *vals = ck_calloc((size_t)pairs + 1, sizeof *vals);
  vec_t w = {0};
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    rem[i] = LIVE(mask, i);
    pick[i] = -1;
  }
  for (int j = 0; j < pairs && any_live(rem, n); j++) {
    if ((rc = eval_node(ev, e->args[2 * j], rem, &w))) goto done;
    bool any = false;
    for (size_t i = 0; i < n; i++) {
      hit[i] = rem[i] && VOK(&w, i) && vbool(&w, i);
      any |= hit[i];
    }
    vec_fini(&w);
    if (!any) continue;
    if ((rc = eval_node(ev, e->args[2 * j + 1], hit, &vals[j]))) goto done;
    for (size_t i = 0; i < n; i++)
      if (hit[i]) pick[i] = j, rem[i] = 0;
  }
  if (e->has_else && any_live(rem, n)) {
    if ((rc = eval_node(ev, e->args[e->nargs - 1], rem, &vals[pairs]))) goto done;
    for (size_t i = 0; i < n; i++)
      if (rem[i]) pick[i] = pairs;
  }
  gather(out, e->type, n, vals, pick);
done:
  vec_fini(&w);
  for (int j = 0; j <= pairs; j++) vec_fini(&vals[j]);
  ck_free(vals);
  ck_free(pick);
  ck_free(hit);
  ck_free(rem);
  return rc;
}

static int eval_coalesce(const ev_t *ev, const ck_expr_t *e, const uint8_t *mask, vec_t *out) {
  size_t n = ev->n;
  uint8_t *rem = ck_malloc(n);
  int *pick = ck_malloc(n * sizeof *pick);
  vec_t *vals = ck_calloc((size_t)e->nargs, sizeof *vals);
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    rem[i] = LIVE(mask, i);
    pick[i] = -1;
  }
  for (int j = 0; j < e->nargs && any_live(rem, n); j++) {
    if ((rc = eval_node(ev, e->args[j], rem, &vals[j]))) goto done;
    for (size_t i = 0; i < n; i++)
      if (rem[i] && VOK(&vals[j], i)) pick[i] = j, rem[i] = 0;
  }
  gather(out, e->type, n, vals, pick);
done:
  for (int j = 0; j < e->nargs; j++) vec_fini(&vals[j]);
  ck_free(vals);
  ck_free(pick);
  ck_free(rem);
  return rc;
}

static int eval_nullif(const ev_t *ev, const ck_expr_t *e, const uint8_t *mask, vec_t *first,
                       vec_t *out) {
  kids_t k;
  int rc = kids_eval(ev, e, mask, first, &k);
  if (rc) return rc;
  size_t n = ev->n;
  const vec_t *a = &k.v[0], *b = &k.v[1];
  ck_col_t *o = out_append(out, e->type, n);
  for (size_t i = 0; i < n; i++) {
    if (!VOK(a, i) || (VOK(b, i) && veq(a, i, b, i))) ck_col_append_null(o);
    else ck_col_append_from(o, a->col, IX(a, i));
  }
  bitmap_tail(o);
  kids_fini(&k);
  return 0;
}

/* x IN (a, b, …): TRUE when some item equals x; otherwise NULL when x or some item is NULL;
 * otherwise FALSE. An item only runs on the rows not yet found. */
static int eval_in(const ev_t *ev, const ck_expr_t *e, const uint8_t *mask, vec_t *first,
                   vec_t *out) {
  size_t n = ev->n;
  vec_t x = {0}, item = {0};
  uint8_t *rem = ck_malloc(n), *found = ck_calloc(n, 1), *sawnull = ck_calloc(n, 1);
  int rc = 0;
  if (first) vec_move(&x, first);
  else if ((rc = eval_node(ev, e->args[0], mask, &x))) goto done;
  for (size_t i = 0; i < n; i++) rem[i] = LIVE(mask, i) && VOK(&x, i);
  for (int j = 1; j < e->nargs && any_live(rem, n); j++) {
    if ((rc = eval_node(ev, e->args[j], rem, &item))) goto done;
    for (size_t i = 0; i < n; i++) {
      if (!rem[i]) continue;
      if (!VOK(&item, i)) sawnull[i] = 1;
      else if (veq(&x, i, &item, i)) found[i] = 1, rem[i] = 0;
    }
    vec_fini(&item);
  }
  for (size_t i = 0; i < n; i++) {
    bool valid = VOK(&x, i) && (found[i] || !sawnull[i]);
    sawnull[i] = valid;                     /* reused as the validity of the result */
    found[i] = valid && (found[i] != e->negated);
  }
  out_bool(out, n, found, sawnull);
done:
  vec_fini(&x);
  vec_fini(&item);
  ck_free(rem);
  ck_free(found);
  ck_free(sawnull);
  return rc;
}

static int eval_udf(const ev_t *ev, const ck_expr_t *e, const uint8_t *mask, vec_t *out);

/* first: args[0] already evaluated, or NULL (see kids_eval); only chain links get one. */
static int eval_inner(const ev_t *ev, const ck_expr_t *e, const uint8_t *mask, vec_t *first,
                      vec_t *out) {
  switch (e->kind) {
    case CK_EX_CASE: ck_assert(!first); return eval_case(ev, e, mask, out);
    case CK_EX_IN: return eval_in(ev, e, mask, first, out);
    case CK_EX_CAST: return eval_strict(ev, e, mask, first, out);
    case CK_EX_UDF: ck_assert(!first); return eval_udf(ev, e, mask, out);
    case CK_EX_CALL:
      switch (e->fn) {
        case CK_FN_AND:
        case CK_FN_OR: return eval_logic(ev, e, mask, first, out);
        case CK_FN_IS_NULL:
        case CK_FN_IS_NOT_NULL:
        case CK_FN_IS_TRUE:
        case CK_FN_IS_FALSE: return eval_is(ev, e, mask, first, out);
        case CK_FN_COALESCE: ck_assert(!first); return eval_coalesce(ev, e, mask, out);
        case CK_FN_NULLIF: return eval_nullif(ev, e, mask, first, out);
        case CK_FN_CONCAT_WS:
        case CK_FN_JSON_OBJECT:
        case CK_FN_JSON_ARRAY: return eval_lenient(ev, e, mask, first, out);
        default: return eval_strict(ev, e, mask, first, out);
      }
    default: break;
  }
  ck_assert(!"unexpected expression kind");
  return CK_EINTERNAL;
}

/* A node eval_node may compute from its first operand's result: one that evaluates args[0]
 * first, over the node's own mask, and is not NULL-typed or folded as a constant (those end
 * a chain: eval_node handles them whole). */
static bool chain_link(const ev_t *ev, const ck_expr_t *e) {
  if (e->nargs == 0 || e->type.id == CK_T_NULL || (ev->n > 1 && e->constant)) return false;
  if (e->kind == CK_EX_CAST || e->kind == CK_EX_IN) return true;
  return e->kind == CK_EX_CALL && e->fn != CK_FN_COALESCE;
}

/* Evaluates a chain of first operands (a + b + c + … is one, built left-deep) with a loop:
 * from the bottom up, each link gets its first operand's result and evaluates only its other
 * arguments recursively, in the order a recursive walk would. So the recursion never depends
 * on the chain's length, only on the nesting the parser bounds (runtime/expr.h). */
static int eval_chain(const ev_t *ev, const ck_expr_t *e, const uint8_t *mask, vec_t *out) {
  const ck_expr_t *local[32], **chain = local;
  size_t n = 0, cap = CK_ARRAY_LEN(local);
  for (; chain_link(ev, e); e = e->args[0]) {
    if (n == cap) {
      const ck_expr_t **bigger = ck_malloc(2 * cap * sizeof *bigger);
      memcpy(bigger, chain, n * sizeof *chain);
      if (chain != local) ck_free(chain);
      chain = bigger;
      cap *= 2;
    }
    chain[n++] = e;
  }
  vec_t acc;
  int rc = eval_node(ev, e, mask, &acc); /* the bottom: not a link, so no loop again */
  while (!rc && n) {
    vec_t r;
    memset(&r, 0, sizeof r);
    rc = eval_inner(ev, chain[--n], mask, &acc, &r);
    vec_move(&acc, &r);
  }
  if (chain != local) ck_free(chain);
  if (!rc) vec_move(out, &acc);
  return rc;
}

static int eval_node(const ev_t *ev, const ck_expr_t *e, const uint8_t *mask, vec_t *out) {
  memset(out, 0, sizeof *out);
  if (e->type.id == CK_T_NULL || (mask && !any_live(mask, ev->n))) {
    out_null(out, e->type);
    return 0;
  }
  switch (e->kind) {
    case CK_EX_COLUMN: {
      ck_assert(e->column >= 0 && e->column < ev->in->ncols);
      const ck_col_t *col = &ev->in->cols[e->column];
      ck_assert(col->type.id == e->type.id && col->len >= ev->n);
      out->col = col;
      return 0;
    }
    case CK_EX_LITERAL:
      ck_col_init(&out->own, e->type, 1);
      ck_col_append_value(&out->own, &e->literal);
      out->col = &out->own;
      out->is_const = true;
      return 0;
    case CK_EX_WATERMARK: {
      /* the watermark each row arrived under; NULL before the first (CK_WATERMARK_MIN) */
      const int64_t *wms = ev->in->wms;
      ck_col_init(&out->own, e->type, ev->n);
      for (size_t i = 0; i < ev->n; i++) {
        if (!wms || wms[i] == INT64_MIN) ck_col_append_null(&out->own);
        else ck_col_append_i64(&out->own, wms[i]);
      }
      out->col = &out->own;
      return 0;
    }
    default: break;
  }
  if (ev->n > 1 && ck_expr_is_constant(e)) { /* once per batch, not once per row */
    ev_t one = *ev;
    one.n = 1;
    int rc = eval_node(&one, e, NULL, out);
    out->is_const = true;
    return rc;
  }
  if (chain_link(ev, e) && chain_link(ev, e->args[0])) return eval_chain(ev, e, mask, out);
  return eval_inner(ev, e, mask, NULL, out);
}

/* ---- entry points ----------------------------------------------------------------------- */

static void broadcast(const vec_t *v, ck_type_t t, size_t n, ck_col_t *out) {
  ck_col_init(out, t, n);
  if (t.id == CK_T_STRING) {
    bool valid = VOK(v, 0);
    size_t len = 0;
    const char *s = valid ? vstr(v, 0, &len) : "";
    str_room(out, len * n);
    for (size_t i = 0; i < n; i++) {
      if (valid) ck_col_append_str(out, s, len);
      else ck_col_append_null(out);
    }
    return;
  }
  size_t w = ck_type_width(t);
  for (size_t i = 0; i < n; i++) memcpy((char *)out->values + i * w, v->col->values, w);
  out->len = n;
  if (!VOK(v, 0)) {
    memset(bitmap(out), 0, vbytes(n));
    bitmap_tail(out);
  }
}

static void copy_col(const ck_col_t *src, size_t n, ck_col_t *out) {
  ck_col_init(out, src->type, n);
  if (src->type.id == CK_T_STRING) {
    const int32_t *off = src->values;
    memcpy(out->values, off, (n + 1) * sizeof *off);
    size_t bytes = (size_t)off[n];
    str_room(out, bytes);
    if (bytes) memcpy(out->data, src->data, bytes);
    out->data_len = bytes;
  } else {
    memcpy(out->values, src->values, n * ck_type_width(src->type));
  }
  out->len = n;
  if (src->validity) {
    memcpy(bitmap(out), src->validity, vbytes(n));
    bitmap_tail(out);
  }
}

/* A user-defined function: its arguments as full columns of n rows (a constant broadcast),
 * the rows outside mask given to it as NULL (runtime/udf.c). */
static int eval_udf(const ev_t *ev, const ck_expr_t *e, const uint8_t *mask, vec_t *out) {
  kids_t k;
  int rc = kids_eval(ev, e, mask, NULL, &k);
  if (rc) return rc;
  size_t n = ev->n;
  ck_col_t wide[CLINK_UDF_MAX_ARGS];
  const ck_col_t *cols[CLINK_UDF_MAX_ARGS];
  for (int i = 0; i < k.n; i++) {
    memset(&wide[i], 0, sizeof wide[i]);
    if (k.v[i].is_const) {
      broadcast(&k.v[i], e->args[i]->type, n, &wide[i]);
      cols[i] = &wide[i];
    } else {
      cols[i] = k.v[i].col;
    }
  }
  ck_col_t *o = &out->own;
  rc = ck_udf_eval(e->udf, cols, n, mask, o, ev->err);
  out->col = o;
  out->is_const = false;
  for (int i = 0; i < k.n; i++)
    if (cols[i] == &wide[i]) ck_col_fini(&wide[i]);
  kids_fini(&k);
  if (rc) vec_fini(out);
  return rc;
}

int ck_expr_eval(const ck_expr_t *expr, const ck_batch_t *in, ck_col_t *out, ck_error_t *err) {
  size_t n = in->nrows;
  if (n == 0) {
    ck_col_init(out, expr->type, 0);
    return 0;
  }
  ev_t ev = {in, n, err};
  vec_t v;
  int rc = eval_node(&ev, expr, NULL, &v);
  if (rc) {
    vec_fini(&v);
    memset(out, 0, sizeof *out);
    out->type = expr->type;
    return rc;
  }
  if (v.is_const) {
    broadcast(&v, expr->type, n, out);
  } else if (v.col != &v.own) {
    copy_col(v.col, n, out);
  } else {
    *out = v.own; /* hand the computed column over */
    v.col = NULL;
    return 0;
  }
  vec_fini(&v);
  return 0;
}

int ck_expr_eval_filter(const ck_expr_t *expr, const ck_batch_t *in, uint8_t *sel,
                        ck_error_t *err) {
  size_t n = in->nrows;
  if (n == 0) return 0;
  ck_assert(expr->type.id == CK_T_BOOL || expr->type.id == CK_T_NULL);
  ev_t ev = {in, n, err};
  vec_t v;
  int rc = eval_node(&ev, expr, NULL, &v);
  if (rc) {
    vec_fini(&v);
    memset(sel, 0, n);
    return rc;
  }
  if (v.is_const) {
    memset(sel, VOK(&v, 0) && vbool(&v, 0), n);
  } else {
    const uint8_t *b = v.col->values;
    if (!v.col->validity)
      for (size_t i = 0; i < n; i++) sel[i] = b[i] != 0;
    else
      for (size_t i = 0; i < n; i++) sel[i] = (b[i] != 0) & ck_col_valid(v.col, i);
  }
  vec_fini(&v);
  return 0;
}
