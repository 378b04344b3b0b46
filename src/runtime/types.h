/*
 * DESIGN: SQL types and scalar values.
 *
 * The engine's type system, shared by the SQL binder, expressions, batches, connectors and
 * state. Physical layout per type (what a column stores per row):
 *   BOOL      uint8_t (0/1)          INT32   int32_t        INT64   int64_t
 *   FLOAT32   float                  FLOAT64 double
 *   DECIMAL   __int128, the unscaled value at the type's scale (p <= 38)
 *   STRING    int32_t offsets[n+1] into a byte buffer (UTF-8)
 *   TIMESTAMP int64_t epoch milliseconds (TIMESTAMP(3))
 * NULL is a validity bit, never a value.
 */
#ifndef CK_RUNTIME_TYPES_H
#define CK_RUNTIME_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

typedef enum ck_type_id {
  CK_T_NULL = 0, /* the type of a bare NULL literal before coercion */
  CK_T_BOOL,
  CK_T_INT32,
  CK_T_INT64,
  CK_T_FLOAT32,
  CK_T_FLOAT64,
  CK_T_DECIMAL,
  CK_T_STRING,
  CK_T_TIMESTAMP,
} ck_type_id_t;

typedef struct ck_type {
  ck_type_id_t id;
  uint8_t precision, scale; /* DECIMAL only */
} ck_type_t;

typedef __int128 ck_i128;

#define CK_TYPE(t) ((ck_type_t){(t), 0, 0})
#define CK_DECIMAL_MAX_PRECISION 38

/* Bytes per row of the fixed-width value array (STRING: 0, it uses offsets). */
size_t ck_type_width(ck_type_t type);
bool ck_type_eq(ck_type_t a, ck_type_t b);
bool ck_type_is_numeric(ck_type_t type);  /* INT32..DECIMAL */
bool ck_type_is_integer(ck_type_t type);  /* INT32, INT64 */
/* "BIGINT", "DECIMAL(10, 2)", … as SQL spells it. Writes into out. */
const char *ck_type_name(ck_type_t type, char *out, size_t out_len);

/* A single value: literals, aggregate results, keys. Strings point at memory the owner of the
 * value manages (an arena, or the batch it was read from). */
typedef struct ck_value {
  ck_type_t type;
  bool is_null;
  union {
    bool b;
    int64_t i; /* INT32, INT64, TIMESTAMP */
    double f;  /* FLOAT32, FLOAT64 */
    ck_i128 dec;
    struct {
      const char *ptr;
      size_t len;
    } s;
  } v;
} ck_value_t;

/* DECIMAL's text, powers of ten and rounding rule: runtime/decimal.h (included below). */

/* Shortest text that reads back as the same double (JSON output: "18", "18.5", "1e+21").
 * Writes NaN/Infinity as null is the caller's choice; this writes "NaN", "Infinity". */
void ck_double_format(double d, ck_buf_t *out);
/* Equality of two UTF-8 strings under Unicode full case folding (ICU's default folding, as
 * Java's equalsIgnoreCase extended to full mappings): 'Größe' equals 'GRÖSSE' and 'größe'.
 * ASCII strings take a byte loop; invalid UTF-8 compares ASCII-insensitively byte by byte. */
bool ck_utf8_ieq(const char *a, size_t na, const char *b, size_t nb);

/* TIMESTAMP(3) text as SQL prints it: "2024-01-02 03:04:05.678" (UTC, three fraction digits). */
void ck_timestamp_format(int64_t epoch_ms, ck_buf_t *out);
/* Parses "2024-01-02", "2024-01-02 03:04[:05[.678]]", with 'T' for the blank and an optional
 * trailing 'Z' (UTC); fraction digits beyond milliseconds are truncated. False when malformed. */
bool ck_timestamp_parse(const char *s, size_t n, int64_t *epoch_ms);

#include "runtime/decimal.h" /* after ck_i128: decimal.h uses it */

#endif
