/*
 * DESIGN: ClickHouse column types, columns and blocks in the native format.
 *
 * Types. ck_ch_type_parse reads the type names the server reports ("Nullable(Decimal(9, 2))",
 * "LowCardinality(Nullable(String))", "DateTime('UTC')", "DateTime64(3)") into a flat record:
 * a base type plus the Nullable and LowCardinality wrappers (ClickHouse allows only
 * LowCardinality(Nullable(T)), never the other order). Composite types (Array, Tuple, Map,
 * …) and Decimal256 are refused by name.
 *
 * Columns hold values in their logical form — fixed-width values little-endian, strings as
 * bytes plus end offsets, a null map for Nullable — both when the sink builds a block and when
 * the reader decodes one; the native serialisation is produced (ck_ch_block_write) or parsed
 * (ch_reader.c) from it. Native layout of one column's data, for n > 0 rows:
 *   fixed-width    n × width bytes, little-endian (Date u16 days, DateTime u32 seconds,
 *                  DateTime64 i64 ticks, Decimal32/64/128 by precision ≤ 9/18/38, UUID 16)
 *   String         per row: varint length, bytes;  FixedString(N): n × N bytes
 *   Nullable(T)    n null-map bytes (1 = NULL), then T's data with a default where NULL
 *   LowCardinality u64 key version (1), then granules: u64 flags (index width in the low byte,
 *                  bit 9 "has additional keys"), u64 key count, the keys as T's data (for a
 *                  Nullable T: not nullable, key 0 standing for NULL), u64 row count, indexes.
 * A block: block info (field 1: u8 is_overflows, field 2: i32 bucket_num, 0 ends), varint
 * columns, varint rows, then per column name, type, [u8 custom serialisation flag from
 * revision 54454], and its data when rows > 0.
 *
 * Memory: a block owns its columns and their buffers (ck_malloc). One thread at a time.
 */
#ifndef CK_CONNECTORS_CLICKHOUSE_CH_BLOCK_H
#define CK_CONNECTORS_CLICKHOUSE_CH_BLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"

typedef enum ck_ch_base {
  CK_CH_INVALID = 0,
  CK_CH_INT8, CK_CH_INT16, CK_CH_INT32, CK_CH_INT64,
  CK_CH_UINT8, CK_CH_UINT16, CK_CH_UINT32, CK_CH_UINT64,
  CK_CH_FLOAT32, CK_CH_FLOAT64,
  CK_CH_STRING, CK_CH_FIXEDSTRING,
  CK_CH_DATE, CK_CH_DATETIME, CK_CH_DATETIME64,
  CK_CH_DECIMAL,
  CK_CH_UUID, CK_CH_ENUM8, CK_CH_ENUM16, CK_CH_BOOL, CK_CH_NOTHING,
  CK_CH_DATE32, /* Int32 days since 1970-01-01 (ClickHouse 21.9 on) */
} ck_ch_base_t;

typedef struct ck_ch_type {
  ck_ch_base_t base;
  bool nullable, lowcard;
  uint32_t n;     /* FixedString: N; DateTime64: precision; Decimal: precision */
  uint32_t scale; /* Decimal */
} ck_ch_type_t;

#define CK_CH_MAX_FIXEDSTRING 0xFFFFFFu

/* 0, or -1 with a reason ("Array(String) is a composite type") in why. */
int ck_ch_type_parse(const char *text, size_t len, ck_ch_type_t *out, char *why, size_t why_len);
/* Bytes per value of the base type; 0 for String. */
size_t ck_ch_type_width(const ck_ch_type_t *type);
bool ck_ch_type_is_int(ck_ch_base_t base);
bool ck_ch_type_is_signed(ck_ch_base_t base);
bool ck_ch_type_eq(const ck_ch_type_t *a, const ck_ch_type_t *b);

typedef struct ck_ch_col {
  char *name, *type_name; /* as the server spells them */
  ck_ch_type_t type;
  size_t rows;
  ck_buf_t nulls; /* Nullable: one byte per row, 1 = NULL */
  ck_buf_t data;  /* fixed width: rows × width bytes; strings: every row's bytes */
  ck_buf_t offs;  /* strings: uint64_t end offset of each row in data */
} ck_ch_col_t;

typedef struct ck_ch_block {
  int ncols, cap;
  size_t rows;
  ck_ch_col_t *cols;
  bool is_overflows;
  int32_t bucket_num;
} ck_ch_block_t;

void ck_ch_block_init(ck_ch_block_t *block);
void ck_ch_block_fini(ck_ch_block_t *block);
/* Drops every row, keeps the columns and their memory. */
void ck_ch_block_clear_rows(ck_ch_block_t *block);
/* Adds a column (its type name parsed); its index, or -1 with err set. */
int ck_ch_block_add_col(ck_ch_block_t *block, const char *name, const char *type_name,
                        ck_error_t *err);
/* Sets rows from the columns, which must agree. */
void ck_ch_block_seal(ck_ch_block_t *block);
/* The native serialisation of the block at a protocol revision. */
void ck_ch_block_write(const ck_ch_block_t *block, int revision, ck_buf_t *out);

/* ---- building a column, one row at a time ---- */
void ck_ch_col_put_null(ck_ch_col_t *col);                /* the column must be Nullable */
void ck_ch_col_put_bits(ck_ch_col_t *col, uint64_t bits); /* low width bytes of an integer */
void ck_ch_col_put_wide(ck_ch_col_t *col, const void *le, size_t n); /* n = width bytes */
void ck_ch_col_put_f32(ck_ch_col_t *col, float v);
void ck_ch_col_put_f64(ck_ch_col_t *col, double v);
/* String; FixedString(N) takes n <= N and pads with zero bytes. */
void ck_ch_col_put_str(ck_ch_col_t *col, const char *s, size_t n);

/* ---- reading a column ---- */
static inline bool ck_ch_col_is_null(const ck_ch_col_t *col, size_t i) {
  return col->type.nullable && ((const uint8_t *)col->nulls.data)[i] != 0;
}
const uint8_t *ck_ch_col_fixed(const ck_ch_col_t *col, size_t i);
const char *ck_ch_col_str(const ck_ch_col_t *col, size_t i, size_t *len);
/* Integer types (and Date, DateTime, Enum, Bool) as int64 / uint64. */
int64_t ck_ch_col_int(const ck_ch_col_t *col, size_t i);
/* Decimal and DateTime64 values sign-extended to 128 bits. */
__int128 ck_ch_col_i128(const ck_ch_col_t *col, size_t i);
int ck_ch_block_find(const ck_ch_block_t *block, const char *name); /* -1 when absent */

/* Appends a decoded string row (reader use). */
void ck_ch_col_push_str_raw(ck_ch_col_t *col, const char *s, size_t n);

#endif
