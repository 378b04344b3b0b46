/*
 * DESIGN: helpers shared by the runtime's unit tests (test_runtime_agg.c,
 * test_runtime_batch.c).
 */
#ifndef CK_TEST_RUNTIME_UTIL_H
#define CK_TEST_RUNTIME_UTIL_H

#include "base/buf.h"
#include "runtime/batch.h"
#include "runtime/types.h"

/* Appends row i of col as text: null, true/false, numbers as the engine prints them,
 * strings in single quotes; "?" for a type not listed. */
static inline void t_render(ck_buf_t *out, const ck_col_t *col, size_t i) {
  if (!ck_col_valid(col, i)) {
    ck_buf_puts(out, "null");
    return;
  }
  switch (col->type.id) {
    case CK_T_BOOL: ck_buf_puts(out, ck_col_bool(col, i) ? "true" : "false"); break;
    case CK_T_INT32: ck_buf_printf(out, "%d", ck_col_i32(col, i)); break;
    case CK_T_INT64:
    case CK_T_TIMESTAMP: ck_buf_printf(out, "%lld", (long long)ck_col_i64(col, i)); break;
    case CK_T_FLOAT32: ck_double_format(ck_col_f32(col, i), out); break;
    case CK_T_FLOAT64: ck_double_format(ck_col_f64(col, i), out); break;
    case CK_T_DECIMAL: ck_decimal_format(ck_col_dec(col, i), col->type.scale, out); break;
    case CK_T_STRING: {
      size_t n;
      const char *s = ck_col_str(col, i, &n);
      ck_buf_putc(out, '\'');
      ck_buf_append(out, s, n);
      ck_buf_putc(out, '\'');
      break;
    }
    default: ck_buf_puts(out, "?");
  }
}

#endif
