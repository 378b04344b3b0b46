/*
 * DESIGN: the reconciliation's cells — one value of one column, reduced to the canonical form
 * the comparison decides on (record 015, "Comparing"), from either side: a row of the sink's
 * recorded input (a SQL value of the capture, with the column plan's target type), or a row
 * read from ClickHouse (a native column of that type).
 *
 * These rules are the comparison's own, written here and nowhere else; they do not call the
 * sink's converter (connectors/clickhouse/ch_sink.c), so a converter defect shows as a
 * difference instead of cancelling out. Per target type:
 *   integers (Int8…UInt64), Bool   the exact integer (128 bits, so every UInt64 fits)
 *   Float32, Float64               the IEEE-754 bits: every NaN is one value, -0.0 ≠ +0.0
 *   Decimal(P, S)                  the unscaled integer at the column's scale S: 12.30 at
 *                                  scale 2 and the server's 12.3 are one value
 *   DateTime                       seconds; from a TIMESTAMP, its epoch ms / 1000 when exact
 *   DateTime64(p)                  ticks at precision p, from a TIMESTAMP's epoch ms
 *   Date                           days
 *   String, LowCardinality(String) the bytes
 *   Nullable(T)                    NULL, equal to NULL and to nothing else; else T's rule
 * Any other target type (FixedString, UUID, Enum, Date32, composites, …) is unsupported, by
 * name. A recorded value the target type cannot hold exactly (out of range, a fraction the
 * scale drops, milliseconds a DateTime has no room for) becomes an INEXACT cell, equal to
 * nothing: the row is then a difference, never a match by rounding.
 *
 * Memory: a cell's bytes point into the caller's arena (or the column they were read from,
 * when the caller copies them, ck_cell_copy). Threads: any; no state.
 */
#ifndef CK_INCIDENT_CELLS_H
#define CK_INCIDENT_CELLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "connectors/clickhouse/ch_block.h"
#include "runtime/batch.h"
#include "runtime/types.h"

typedef enum ck_cell_kind {
  CK_CELL_NULL = 0,
  CK_CELL_INT,     /* integers, Bool, Decimal (unscaled), Date, DateTime, DateTime64 */
  CK_CELL_F32,     /* bits: the low 32 bits */
  CK_CELL_F64,     /* bits */
  CK_CELL_BYTES,   /* bytes, len */
  CK_CELL_INEXACT, /* a recorded value the column cannot hold exactly: equal to nothing */
} ck_cell_kind_t;

typedef struct ck_cell {
  uint8_t kind;
  uint32_t len;
  union {
    __int128 i;
    uint64_t bits;
    const char *bytes;
  } v;
} ck_cell_t;

/* How one column is compared: the recorded SQL type and the ClickHouse type it is written as. */
typedef enum ck_cell_class {
  CK_CELLS_INT,
  CK_CELLS_F32,
  CK_CELLS_F64,
  CK_CELLS_DECIMAL,
  CK_CELLS_DATE,
  CK_CELLS_DATETIME,
  CK_CELLS_DATETIME64,
  CK_CELLS_STRING,
} ck_cell_class_t;

typedef struct ck_cell_rule {
  ck_type_t sql;       /* the capture's type of the column */
  ck_ch_type_t ch;     /* the target type (the column plan's "target") */
  ck_cell_class_t cls;
  char ch_name[96];    /* the target type as the server spells it */
} ck_cell_rule_t;

/* The rule for a column recorded as `sql` and written as ClickHouse type `ch_type`. 0, or
 * CK_EUNSUPPORTED with why ("FixedString(4) is not a type the comparison has a rule for"). */
int ck_cell_rule_init(ck_type_t sql, const char *ch_type, ck_cell_rule_t *out, char *why,
                      size_t why_len);

/* Row `row` of a recorded column into *out; bytes copied into arena. */
void ck_cell_from_sql(const ck_cell_rule_t *rule, const ck_col_t *col, size_t row,
                      ck_arena_t *arena, ck_cell_t *out);
/* Row `row` of a column read from ClickHouse (its type must be the rule's; the caller checks
 * ck_ch_type_eq) into *out; bytes copied into arena. */
void ck_cell_from_ch(const ck_cell_rule_t *rule, const ck_ch_col_t *col, size_t row,
                     ck_arena_t *arena, ck_cell_t *out);

/* A total order over cells (kind, then value; bytes by memcmp, then length). */
int ck_cell_cmp(const ck_cell_t *a, const ck_cell_t *b);
/* Equality as the comparison decides it: ck_cell_cmp == 0, and never for an INEXACT cell. */
bool ck_cell_eq(const ck_cell_t *a, const ck_cell_t *b);
/* The cell as JSON: null, an integer (at the column's scale for a Decimal: "12.30"), a float
 * as {"value": text, "bits": "0x…"}, a string, or {"inexact": why}. */
void ck_cell_json(const ck_cell_rule_t *rule, const ck_cell_t *c, ck_buf_t *out);

/* The integer text of v (all 39 digits of an __int128). */
void ck_cell_i128_text(__int128 v, ck_buf_t *out);

#endif
