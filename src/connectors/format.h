/*
 * DESIGN: record formats — decoders that turn one record (bytes) into one row appended to a
 * batch's column builders, and encoders that turn a batch's rows back into bytes.
 *
 * Formats know nothing of files or brokers: a record is a byte range handed in by the
 * connector (one line of a file, one Kafka message). The table's schema is known when the
 * decoder is made, so a decoder parses straight into the columns in one pass, with no DOM and
 * no allocation per field (scratch buffers live in the decoder and are reused).
 *
 * Decoding is all-or-nothing per record: on success every column grew by exactly one row and
 * batch->nrows counts it; on failure (CK_EDECODE) every column is truncated back to where it
 * was, so the batch holds no partial row, and err carries the reason naming the field at
 * fault ("field 'temp_c': expected a number, found string"). The connector adds where the
 * record came from (file:line, partition:offset).
 *
 * Formats:
 *   json  one JSON object per record; fields matched to columns by name (exact first, then
 *         under Unicode case folding, ck_utf8_ieq); a missing field or null is NULL; extra
 *         fields are ignored;
 *         a repeated field takes its last value. Types: integers into INT/BIGINT (no fraction,
 *         no overflow), numbers into FLOAT/DOUBLE and DECIMAL (exactly, from the text),
 *         integer epoch milliseconds or timestamp text (ck_timestamp_parse_iso: ISO 8601 with
 *         an optional zone, 'yyyy-MM-dd HH:mm:ss[.SSS]') into TIMESTAMP, true/false into BOOLEAN, strings (full
 *         escapes, \u surrogate pairs) into VARCHAR; a VARCHAR column also takes any other JSON
 *         value as its JSON text. A string where a number is expected is an error, never a
 *         coercion.
 *   csv   RFC 4180: comma-separated, fields optionally quoted with "" escaping a quote; a
 *         quoted field may span lines. Fields map to columns by position, or by the header
 *         names when csv.header='true' (matched as json's are). An empty unquoted field is NULL
 *         (VARCHAR: the empty string). Non-string fields may be padded with spaces.
 *   Numbers in both follow one grammar, JSON's (format_impl.h): no NaN, Infinity, hex, '+',
 *   leading zeros or bare points, and a value past the column's type is an error.
 *
 * Every record must be valid UTF-8 and at most CK_FORMAT_MAX_RECORD bytes.
 *
 * Encoders: json writes one object per row, keys sorted by column name (byte order), NULL as
 * null, doubles in their shortest round-trip form (no value is ever NaN or infinite: expr.h), decimals at
 * their scale, TIMESTAMP as Flink's SQL text "yyyy-MM-dd HH:mm:ss.SSS" (TIMESTAMP_LTZ with a
 * trailing 'Z'; window bounds over a BIGINT event time as epoch milliseconds, CK_TS_EPOCH) —
 * csv likewise, and a csv TIMESTAMP field reads the same text or an epoch number; rows of a changelog batch (batch->kinds set)
 * carry "op": insert | update_before | update | delete. csv writes the columns in schema
 * order, NULL as an empty field, the empty string as "", and quotes a field that holds a
 * comma, quote or line break; changelog rows get a trailing op field.
 *
 * Threads: a decoder or encoder belongs to one subtask; it has no lock.
 */
#ifndef CK_CONNECTORS_FORMAT_H
#define CK_CONNECTORS_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "runtime/batch.h"
#include "runtime/options.h"
#include "runtime/schema.h"

/* The largest record a decoder accepts (bytes, excluding the line terminator). */
#define CK_FORMAT_MAX_RECORD ((size_t)1 << 20)

/* Format options, shared by every connector that reads or writes a format; spliced into each
 * connector's option table so the table stays the one list of its options. */
#define CK_FORMAT_OPTION_DEFS                                                                  \
  {"csv.header", CK_OPT_BOOL, "false", NULL, false,                                            \
   "with format='csv': the first line of each file names the columns. A source matches "      \
   "columns by these names instead of by position (columns missing from the header are "      \
   "NULL); a sink writes a header line at the start of every new file"}

typedef enum ck_format_kind {
  CK_FORMAT_JSON = 0,
  CK_FORMAT_CSV = 1,
} ck_format_kind_t;

/* Parses the `format` option (NULL means json); an unknown name is CK_EOPTION naming who
 * asked ("file connector", "table 'x'"). */
int ck_format_parse(const char *name, const char *who, ck_format_kind_t *out, ck_error_t *err);
const char *ck_format_name(ck_format_kind_t kind);

/* ---- decoders ---- */
typedef struct ck_decoder ck_decoder_t;

/* schema and opts must outlive the decoder. */
ck_decoder_t *ck_decoder_new(ck_format_kind_t kind, const ck_schema_t *schema,
                             const ck_options_t *opts);
void ck_decoder_free(ck_decoder_t *dec);
/* Whether records of this format may contain line breaks (CSV quoted fields): the reader must
 * then find a record's end outside quotes. */
bool ck_decoder_multiline(const ck_decoder_t *dec);
/* Whether the first record of each file is a header (csv.header='true'). */
bool ck_decoder_wants_header(const ck_decoder_t *dec);
/* Takes a header record: later records map fields to columns by these names. */
int ck_decoder_header(ck_decoder_t *dec, const char *rec, size_t len, ck_error_t *err);
/* The checks every record passes before any format sees it: at most CK_FORMAT_MAX_RECORD
 * bytes, valid UTF-8. CK_EDECODE with the reason otherwise. */
int ck_format_check_record(const char *rec, size_t len, ck_error_t *err);
/* Appends one row decoded from rec[0..len) to batch (whose columns follow the schema). */
int ck_decoder_decode(ck_decoder_t *dec, const char *rec, size_t len, ck_batch_t *batch,
                      ck_error_t *err);

/* ---- encoders ---- */
typedef struct ck_encoder ck_encoder_t;

ck_encoder_t *ck_encoder_new(ck_format_kind_t kind, const ck_schema_t *schema);
void ck_encoder_free(ck_encoder_t *enc);
/* Appends row i of batch as one record, without a line terminator. */
void ck_encoder_row(ck_encoder_t *enc, const ck_batch_t *batch, size_t i, ck_buf_t *out);
/* Appends every row of batch, each followed by '\n'. */
void ck_encoder_batch(ck_encoder_t *enc, const ck_batch_t *batch, ck_buf_t *out);
/* Appends the header line (CSV: the column names and '\n'; JSON: nothing). */
void ck_encoder_header(ck_encoder_t *enc, ck_buf_t *out);

/* ---- shared helpers (format_*.c, connectors) ---- */
/* Offset of the first byte that breaks UTF-8 (overlong forms, surrogates and code points
 * above U+10FFFF included), or len when the bytes are valid. */
size_t ck_format_utf8_invalid_at(const char *s, size_t len);
/* The length (2 to 4) of the valid multi-byte UTF-8 sequence at p (p[0] >= 0x80, left bytes
 * available), or 0 when it is not one. */
static inline size_t ck_format_utf8_seq(const unsigned char *p, size_t left) {
  unsigned c = p[0];
  if (c < 0xC2) return 0; /* continuation byte or overlong 2-byte lead */
  if (c < 0xE0) return left >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
  if (c < 0xF0) {
    if (left < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && p[1] < 0xA0) return 0;  /* overlong */
    if (c == 0xED && p[1] >= 0xA0) return 0; /* UTF-16 surrogate */
    return 3;
  }
  if (c < 0xF5) {
    if (left < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80)
      return 0;
    if (c == 0xF0 && p[1] < 0x90) return 0;  /* overlong */
    if (c == 0xF4 && p[1] >= 0x90) return 0; /* above U+10FFFF */
    return 4;
  }
  return 0;
}
/* Drops the rows at and after `row` from col (a rollback of a partly appended record). */
void ck_format_col_truncate(ck_col_t *col, size_t row);
/* Appends v in base 10. */
void ck_format_put_i64(ck_buf_t *out, int64_t v);
/* Shortest text that reads back as the same float. */
void ck_format_put_float(ck_buf_t *out, float f);

#endif
