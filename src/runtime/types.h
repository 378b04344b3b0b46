/*
 * DESIGN: SQL types and scalar values.
 *
 * The engine's type system, shared by the SQL binder, expressions, batches, connectors and
 * state. Physical layout per type (what a column stores per row):
 *   BOOL      uint8_t (0/1)          INT32   int32_t        INT64   int64_t
 *   FLOAT32   float                  FLOAT64 double
 *   DECIMAL   __int128, the unscaled value at the type's scale (p <= 38)
 *   STRING    int32_t offsets[n+1] into a byte buffer (UTF-8)
 *   TIMESTAMP int64_t epoch milliseconds (TIMESTAMP(p) and TIMESTAMP_LTZ(p), any p in 0..9:
 *             milliseconds are what is kept; digits past the third are truncated on input)
 * NULL is a validity bit, never a value.
 *
 * A TIMESTAMP type carries two presentation facts in the fields DECIMAL uses for precision and
 * scale (ck_type_eq ignores them, so every TIMESTAMP is one physical type): `precision` is the
 * declared precision + 1 (0: not declared, shown as 3), `scale` holds CK_TS_* flags — LTZ (a
 * TIMESTAMP_LTZ: an instant, written with a trailing 'Z' in text formats and into PostgreSQL
 * timestamptz as UTC) and EPOCH (window_start/window_end of a window over a BIGINT epoch-ms
 * column: written as the epoch-milliseconds number it always was).
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

/* TIMESTAMP presentation flags (ck_type_t.scale of a TIMESTAMP; see the top of this file). */
#define CK_TS_LTZ 1u   /* TIMESTAMP_LTZ(p) */
#define CK_TS_EPOCH 2u /* shown as epoch milliseconds in JSON and CSV */
#define CK_TS_DATE 4u  /* DATE: the midnight of a day */
#define CK_TS_TIME 8u  /* TIME(p): milliseconds of the day */
#define CK_TS_FLAGS 15u
#define CK_MS_PER_DAY 86400000LL
#define CK_TS_MAX_PRECISION 9
static inline ck_type_t ck_type_timestamp(int precision, unsigned flags) {
  return (ck_type_t){CK_T_TIMESTAMP, (uint8_t)(precision + 1), (uint8_t)flags};
}
/* The declared precision of a TIMESTAMP (3 when none was declared). */
static inline int ck_type_ts_precision(ck_type_t t) { return t.precision ? t.precision - 1 : 3; }
static inline bool ck_type_ts_ltz(ck_type_t t) { return t.id == CK_T_TIMESTAMP && (t.scale & CK_TS_LTZ); }
static inline bool ck_type_ts_epoch(ck_type_t t) { return t.id == CK_T_TIMESTAMP && (t.scale & CK_TS_EPOCH); }
static inline ck_type_t ck_type_date(void) { return ck_type_timestamp(-1, CK_TS_DATE); }
static inline ck_type_t ck_type_time(int precision) { return ck_type_timestamp(precision, CK_TS_TIME); }
static inline bool ck_type_is_date(ck_type_t t) { return t.id == CK_T_TIMESTAMP && (t.scale & CK_TS_DATE); }
static inline bool ck_type_is_time(ck_type_t t) { return t.id == CK_T_TIMESTAMP && (t.scale & CK_TS_TIME); }
/* A TIME(p) value cut to its p fraction digits (p >= 3: unchanged), as Flink keeps it. */
static inline int64_t ck_time_truncate(ck_type_t t, int64_t ms) {
  static const int64_t unit[] = {1000, 100, 10};
  int p = t.precision ? t.precision - 1 : 0;
  return p >= 3 ? ms : ms - ms % unit[p];
}
/* Which of TIMESTAMP (also TIMESTAMP_LTZ), DATE, TIME a TIMESTAMP type is: 0, CK_TS_DATE or
 * CK_TS_TIME (-1 for any other type). */
static inline int ck_type_ts_kind(ck_type_t t) {
  return t.id != CK_T_TIMESTAMP ? -1 : (int)(t.scale & (CK_TS_DATE | CK_TS_TIME));
}
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
/* What a TIMESTAMP column reads from a JSON or CSV string: ISO 8601 and SQL text as above,
 * 'T' or a blank between date and time, seconds optional, 1 to 9 fraction digits (kept to the
 * millisecond, truncated), and an optional zone — 'Z', or an offset +HH:MM, +HHMM, +HH (or
 * '-') — by which the value is moved to UTC. A date alone is its midnight. */
bool ck_timestamp_parse_iso(const char *s, size_t n, int64_t *epoch_ms);
/* A TIMESTAMP value as JSON/CSV text: "yyyy-MM-dd HH:mm:ss.SSS", with a trailing 'Z' for
 * TIMESTAMP_LTZ (Flink's SQL text formats). */
void ck_timestamp_format_typed(ck_type_t type, int64_t epoch_ms, ck_buf_t *out);
/* A DATE's text, "2024-01-02", from its midnight's epoch milliseconds (any millisecond of the
 * day gives that day). */
void ck_date_format(int64_t epoch_ms, ck_buf_t *out);
/* "2024-01-02" (blanks around it allowed) as its midnight; false when malformed. */
bool ck_date_parse(const char *s, size_t n, int64_t *epoch_ms);
/* A TIME's text: "12:34:56", with precision digits of fraction (at most 3) when precision > 0. */
void ck_time_format(int64_t ms_of_day, int precision, ck_buf_t *out);
/* "12:34", "12:34:56", "12:34:56.789" (1 to 9 fraction digits, kept to the millisecond) as
 * milliseconds of the day; false when malformed. */
bool ck_time_parse(const char *s, size_t n, int64_t *ms_of_day);
/* The text a DATE, TIME or TIMESTAMP column of a JSON or CSV source reads: a DATE's
 * "2024-01-02", a TIME's "12:34:56[.789]" (cut to its precision), a TIMESTAMP's as
 * ck_timestamp_parse_iso. False when malformed. */
bool ck_datetime_parse_text(ck_type_t type, const char *s, size_t n, int64_t *ms);
/* Days since 1970-01-01 of a proleptic Gregorian date. */
int64_t ck_days_from_civil(int64_t y, int m, int d);

#include "runtime/decimal.h" /* after ck_i128: decimal.h uses it */

#endif
