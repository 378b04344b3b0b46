/*
 * DESIGN: see cells.h. Each rule is written from the types' definitions (ClickHouse's native
 * layouts, ch_block.h; clink's SQL values, runtime/types.h), not from the sink's converter.
 */
#include "incident/cells.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"

#define F32_NAN 0x7fc00000u
#define F64_NAN 0x7ff8000000000000ull

static __int128 pow10_i128(unsigned n) {
  __int128 p = 1;
  while (n--) p *= 10;
  return p;
}

int ck_cell_rule_init(ck_type_t sql, const char *ch_type, ck_cell_rule_t *out, char *why,
                      size_t why_len) {
  memset(out, 0, sizeof *out);
  out->sql = sql;
  snprintf(out->ch_name, sizeof out->ch_name, "%s", ch_type ? ch_type : "");
  char sqlname[64], pwhy[160] = "";
  ck_type_name(sql, sqlname, sizeof sqlname);
  if (!ch_type || ck_ch_type_parse(ch_type, strlen(ch_type), &out->ch, pwhy, sizeof pwhy)) {
    snprintf(why, why_len, "the column type %s is not one the comparison reads (%s)",
             ch_type ? ch_type : "(none)", pwhy);
    return CK_EUNSUPPORTED;
  }
  const ck_ch_type_t *t = &out->ch;
  bool sql_int = sql.id == CK_T_INT32 || sql.id == CK_T_INT64 || sql.id == CK_T_BOOL ||
                 (sql.id == CK_T_DECIMAL && sql.scale == 0);
  bool ok = false;
  switch (t->base) {
    case CK_CH_INT8: case CK_CH_INT16: case CK_CH_INT32: case CK_CH_INT64:
    case CK_CH_UINT8: case CK_CH_UINT16: case CK_CH_UINT32: case CK_CH_UINT64: case CK_CH_BOOL:
      out->cls = CK_CELLS_INT;
      ok = sql_int || sql.id == CK_T_TIMESTAMP;
      break;
    case CK_CH_FLOAT32:
      out->cls = CK_CELLS_F32;
      ok = sql.id == CK_T_FLOAT32 || sql.id == CK_T_FLOAT64;
      break;
    case CK_CH_FLOAT64:
      out->cls = CK_CELLS_F64;
      ok = sql.id == CK_T_FLOAT32 || sql.id == CK_T_FLOAT64 || sql.id == CK_T_INT32 ||
           sql.id == CK_T_INT64;
      break;
    case CK_CH_DECIMAL:
      out->cls = CK_CELLS_DECIMAL;
      ok = sql_int || sql.id == CK_T_DECIMAL;
      break;
    case CK_CH_DATE:
      out->cls = CK_CELLS_DATE;
      ok = sql.id == CK_T_INT32 || sql.id == CK_T_INT64 || sql.id == CK_T_TIMESTAMP;
      break;
    case CK_CH_DATETIME:
      out->cls = CK_CELLS_DATETIME;
      ok = sql.id == CK_T_INT32 || sql.id == CK_T_INT64 || sql.id == CK_T_TIMESTAMP;
      break;
    case CK_CH_DATETIME64:
      out->cls = CK_CELLS_DATETIME64;
      ok = sql.id == CK_T_TIMESTAMP;
      break;
    case CK_CH_STRING:
      out->cls = CK_CELLS_STRING;
      ok = sql.id == CK_T_STRING;
      break;
    default:
      snprintf(why, why_len, "the comparison has no rule for the column type %s", ch_type);
      return CK_EUNSUPPORTED;
  }
  if (!ok) {
    snprintf(why, why_len, "the comparison has no rule for %s written as %s", sqlname, ch_type);
    return CK_EUNSUPPORTED;
  }
  return 0;
}

/* ---- from the recorded input */

static bool int_fits(const ck_ch_type_t *t, __int128 v) {
  switch (t->base) {
    case CK_CH_INT8: return v >= -128 && v <= 127;
    case CK_CH_INT16: return v >= -32768 && v <= 32767;
    case CK_CH_INT32: return v >= INT32_MIN && v <= INT32_MAX;
    case CK_CH_INT64: return v >= INT64_MIN && v <= INT64_MAX;
    case CK_CH_UINT8: case CK_CH_BOOL: return v >= 0 && v <= (t->base == CK_CH_BOOL ? 1 : 255);
    case CK_CH_UINT16: return v >= 0 && v <= 65535;
    case CK_CH_UINT32: return v >= 0 && v <= UINT32_MAX;
    case CK_CH_UINT64: return v >= 0 && v <= (__int128)UINT64_MAX;
    case CK_CH_DATE: return v >= 0 && v <= 65535;
    case CK_CH_DATETIME: return v >= 0 && v <= UINT32_MAX;
    case CK_CH_DATETIME64: return v >= INT64_MIN && v <= INT64_MAX;
    default: return true;
  }
}

/* The recorded value as an exact integer with `scale` decimal places (0 for integers). */
static __int128 sql_unscaled(const ck_col_t *col, size_t row, unsigned *scale) {
  *scale = 0;
  switch (col->type.id) {
    case CK_T_BOOL: return ck_col_bool(col, row) ? 1 : 0;
    case CK_T_INT32: return ck_col_i32(col, row);
    case CK_T_INT64: case CK_T_TIMESTAMP: return ck_col_i64(col, row);
    case CK_T_DECIMAL: *scale = col->type.scale; return ck_col_dec(col, row);
    default: return 0;
  }
}

static void inexact(ck_cell_t *out) {
  memset(out, 0, sizeof *out);
  out->kind = CK_CELL_INEXACT;
}

static void set_int(const ck_cell_rule_t *rule, __int128 v, ck_cell_t *out) {
  if (!int_fits(&rule->ch, v)) {
    inexact(out);
    return;
  }
  out->kind = CK_CELL_INT;
  out->v.i = v;
}

/* v at scale `from` rescaled to scale `to`, exactly; false when digits would be dropped. */
static bool rescale(__int128 v, unsigned from, unsigned to, __int128 *out) {
  if (to >= from) {
    __int128 p = pow10_i128(to - from);
    /* |v| < 10^38 for every value clink holds; 10^(to-from) ≤ 10^38 */
    if (v != 0 && (v > 0 ? v : -v) > ((__int128)1 << 125) / p) return false;
    *out = v * p;
    return true;
  }
  __int128 p = pow10_i128(from - to);
  if (v % p) return false;
  *out = v / p;
  return true;
}

void ck_cell_from_sql(const ck_cell_rule_t *rule, const ck_col_t *col, size_t row,
                      ck_arena_t *arena, ck_cell_t *out) {
  memset(out, 0, sizeof *out);
  if (!ck_col_valid(col, row)) {
    out->kind = CK_CELL_NULL;
    return;
  }
  unsigned scale;
  __int128 v, w;
  switch (rule->cls) {
    case CK_CELLS_INT:
    case CK_CELLS_DATE:
    case CK_CELLS_DATETIME: {
      v = sql_unscaled(col, row, &scale);
      if (!rescale(v, scale, 0, &w)) return inexact(out);
      if (col->type.id == CK_T_TIMESTAMP && rule->cls != CK_CELLS_INT) {
        int64_t per = rule->cls == CK_CELLS_DATE ? 86400000 : 1000;
        if (w % per) return inexact(out);
        w /= per;
      }
      return set_int(rule, w, out);
    }
    case CK_CELLS_DATETIME64: {
      v = ck_col_i64(col, row); /* TIMESTAMP: epoch milliseconds */
      if (!rescale(v, 3, rule->ch.n, &w)) return inexact(out);
      return set_int(rule, w, out);
    }
    case CK_CELLS_DECIMAL: {
      v = sql_unscaled(col, row, &scale);
      if (!rescale(v, scale, rule->ch.scale, &w)) return inexact(out);
      __int128 lim = pow10_i128(rule->ch.n);
      if (w >= lim || w <= -lim) return inexact(out);
      out->kind = CK_CELL_INT;
      out->v.i = w;
      return;
    }
    case CK_CELLS_F32: {
      double d = col->type.id == CK_T_FLOAT32 ? (double)ck_col_f32(col, row) : ck_col_f64(col, row);
      float f = (float)d;
      if (isnan(d)) {
        out->kind = CK_CELL_F32;
        out->v.bits = F32_NAN;
        return;
      }
      if ((double)f != d) return inexact(out);
      uint32_t b;
      memcpy(&b, &f, 4);
      out->kind = CK_CELL_F32;
      out->v.bits = b;
      return;
    }
    case CK_CELLS_F64: {
      double d;
      if (col->type.id == CK_T_FLOAT32) d = (double)ck_col_f32(col, row);
      else if (col->type.id == CK_T_FLOAT64) d = ck_col_f64(col, row);
      else {
        int64_t iv = col->type.id == CK_T_INT32 ? ck_col_i32(col, row) : ck_col_i64(col, row);
        d = (double)iv;
        /* exact only when it converts back: 2^63 itself does not fit an int64 */
        if (d >= 9223372036854775808.0 || (int64_t)d != iv) return inexact(out);
      }
      out->kind = CK_CELL_F64;
      if (isnan(d)) {
        out->v.bits = F64_NAN;
        return;
      }
      memcpy(&out->v.bits, &d, 8);
      return;
    }
    case CK_CELLS_STRING: {
      size_t n;
      const char *s = ck_col_str(col, row, &n);
      out->kind = CK_CELL_BYTES;
      out->len = (uint32_t)n;
      char *p = ck_arena_alloc(arena, n ? n : 1);
      if (n) memcpy(p, s, n);
      out->v.bytes = p;
      return;
    }
  }
}

/* ---- from ClickHouse */

void ck_cell_from_ch(const ck_cell_rule_t *rule, const ck_ch_col_t *col, size_t row,
                     ck_arena_t *arena, ck_cell_t *out) {
  memset(out, 0, sizeof *out);
  if (ck_ch_col_is_null(col, row)) {
    out->kind = CK_CELL_NULL;
    return;
  }
  switch (rule->cls) {
    case CK_CELLS_INT:
    case CK_CELLS_DATE:
    case CK_CELLS_DATETIME:
      out->kind = CK_CELL_INT;
      if (col->type.base == CK_CH_UINT64) out->v.i = (__int128)(uint64_t)ck_ch_col_int(col, row);
      else out->v.i = ck_ch_col_int(col, row);
      return;
    case CK_CELLS_DECIMAL:
    case CK_CELLS_DATETIME64:
      out->kind = CK_CELL_INT;
      out->v.i = ck_ch_col_i128(col, row);
      return;
    case CK_CELLS_F32: {
      uint32_t b;
      memcpy(&b, ck_ch_col_fixed(col, row), 4);
      float f;
      memcpy(&f, &b, 4);
      out->kind = CK_CELL_F32;
      out->v.bits = isnan(f) ? F32_NAN : b;
      return;
    }
    case CK_CELLS_F64: {
      uint64_t b;
      memcpy(&b, ck_ch_col_fixed(col, row), 8);
      double d;
      memcpy(&d, &b, 8);
      out->kind = CK_CELL_F64;
      out->v.bits = isnan(d) ? F64_NAN : b;
      return;
    }
    case CK_CELLS_STRING: {
      size_t n;
      const char *s = ck_ch_col_str(col, row, &n);
      out->kind = CK_CELL_BYTES;
      out->len = (uint32_t)n;
      char *p = ck_arena_alloc(arena, n ? n : 1);
      if (n) memcpy(p, s, n);
      out->v.bytes = p;
      return;
    }
  }
}

/* ---- comparing and rendering */

int ck_cell_cmp(const ck_cell_t *a, const ck_cell_t *b) {
  if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
  switch (a->kind) {
    case CK_CELL_INT: return a->v.i < b->v.i ? -1 : a->v.i > b->v.i;
    case CK_CELL_F32:
    case CK_CELL_F64: return a->v.bits < b->v.bits ? -1 : a->v.bits > b->v.bits;
    case CK_CELL_BYTES: {
      size_t n = a->len < b->len ? a->len : b->len;
      int c = n ? memcmp(a->v.bytes, b->v.bytes, n) : 0;
      if (c) return c < 0 ? -1 : 1;
      return a->len < b->len ? -1 : a->len > b->len;
    }
    default: return 0;
  }
}

bool ck_cell_eq(const ck_cell_t *a, const ck_cell_t *b) {
  return a->kind != CK_CELL_INEXACT && b->kind != CK_CELL_INEXACT && ck_cell_cmp(a, b) == 0;
}

void ck_cell_i128_text(__int128 v, ck_buf_t *out) {
  char digits[48];
  int n = 0;
  unsigned __int128 u = v < 0 ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
  do {
    digits[n++] = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u);
  if (v < 0) ck_buf_putc(out, '-');
  while (n) ck_buf_putc(out, digits[--n]);
}

void ck_cell_json(const ck_cell_rule_t *rule, const ck_cell_t *c, ck_buf_t *out) {
  switch (c->kind) {
    case CK_CELL_NULL: ck_buf_puts(out, "null"); return;
    case CK_CELL_INT:
      if (rule && rule->cls == CK_CELLS_DECIMAL && rule->ch.scale) {
        ck_buf_t t;
        ck_buf_init(&t);
        __int128 v = c->v.i;
        if (v < 0) ck_buf_putc(&t, '-');
        ck_cell_i128_text(v < 0 ? -v : v, &t);
        /* pad to scale+1 digits, then put the point */
        size_t neg = v < 0, digits = t.len - neg, s = rule->ch.scale;
        ck_buf_putc(out, '"');
        if (neg) ck_buf_putc(out, '-');
        if (digits <= s) {
          ck_buf_puts(out, "0.");
          for (size_t i = digits; i < s; i++) ck_buf_putc(out, '0');
          ck_buf_append(out, t.data + neg, digits);
        } else {
          ck_buf_append(out, t.data + neg, digits - s);
          ck_buf_putc(out, '.');
          ck_buf_append(out, t.data + neg + digits - s, s);
        }
        ck_buf_putc(out, '"');
        ck_buf_fini(&t);
        return;
      }
      ck_cell_i128_text(c->v.i, out);
      return;
    case CK_CELL_F32:
    case CK_CELL_F64: {
      double d;
      if (c->kind == CK_CELL_F32) {
        float f;
        uint32_t b = (uint32_t)c->v.bits;
        memcpy(&f, &b, 4);
        d = f;
      } else {
        memcpy(&d, &c->v.bits, 8);
      }
      char text[64];
      snprintf(text, sizeof text, "%.17g", d);
      ck_buf_puts(out, "{\"value\":");
      ck_buf_put_json_str(out, text, strlen(text));
      ck_buf_printf(out, ",\"bits\":\"0x%0*llx\"}", c->kind == CK_CELL_F32 ? 8 : 16,
                    (unsigned long long)c->v.bits);
      return;
    }
    case CK_CELL_BYTES: ck_buf_put_json_str(out, c->v.bytes, c->len); return;
    default:
      ck_buf_printf(out, "{\"inexact\":\"the recorded value does not fit %s exactly\"}",
                    rule ? rule->ch_name : "the column");
      return;
  }
}
