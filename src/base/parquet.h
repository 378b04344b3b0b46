/*
 * DESIGN: a small Parquet file writer, by hand (the Thrift compact protocol for the page
 * headers and the footer, no library): flat schemas of the types in ck_arrow_type_t, one row
 * group per ck_arrow_batch_t, one data page (format v1) per column chunk, PLAIN encoding,
 * key/value metadata in the footer.
 *
 * Columns are required unless ck_parquet_set_column makes one optional: an optional column's
 * page starts with its definition levels (bit width 1, the RLE / bit-packed hybrid encoding
 * behind a u32 length), and ck_parquet_write_group_nulls says per row whether its value is
 * NULL (the batch holds a placeholder there, which is not written). A column may also carry
 * a field_id (Iceberg's column id) and write UINT16/UINT32 as plain INT32 (Iceberg has no
 * unsigned types). Pages are uncompressed or compressed with zstd (ck_parquet_set_codec).
 *
 * Column types: UINT16 and UINT32 are INT32 with converted type UINT_16 / UINT_32, INT64 is
 * INT64, FLOAT64 DOUBLE, UTF8 BYTE_ARRAY with converted type UTF8, BINARY BYTE_ARRAY.
 * Users: `clink state-export --format=parquet|iceberg` (cli/cmd_state.c, cli/cmd_state_iceberg.c).
 * Threads: none of its own; a writer belongs to its caller's thread.
 */
#ifndef CK_BASE_PARQUET_H
#define CK_BASE_PARQUET_H

#include "base/arrow_ipc.h"

/* The column chunk codecs (their numbers are Parquet's CompressionCodec). */
typedef enum ck_parquet_codec {
  CK_PARQUET_UNCOMPRESSED = 0,
  CK_PARQUET_ZSTD = 6,
} ck_parquet_codec_t;

typedef struct ck_parquet_col {
  bool optional;    /* may hold NULLs: definition levels are written */
  bool plain_int;   /* UINT16/UINT32 as INT32 without the unsigned annotation (values < 2^31) */
  int32_t field_id; /* > 0: the schema element's field_id */
} ck_parquet_col_t;

typedef struct ck_parquet_writer {
  ck_buf_t *out;
  int nfields;
  ck_arrow_field_t fields[CK_ARROW_MAX_FIELDS];
  ck_parquet_col_t cols[CK_ARROW_MAX_FIELDS];
  ck_parquet_codec_t codec;
  ck_buf_t groups; /* the row groups' Thrift structs, for the footer */
  int ngroups;
  int64_t nrows;
} ck_parquet_writer_t;

/* Starts a file in out (its magic). */
void ck_parquet_begin(ck_parquet_writer_t *w, ck_buf_t *out, const ck_arrow_field_t *fields,
                      int nfields);
/* Before the first row group: column c's options (default: required, no field id). */
void ck_parquet_set_column(ck_parquet_writer_t *w, int c, const ck_parquet_col_t *col);
/* Before the first row group: the pages' codec (default uncompressed). */
void ck_parquet_set_codec(ck_parquet_writer_t *w, ck_parquet_codec_t codec);
/* Appends batch's rows as one row group (nothing for an empty batch). */
void ck_parquet_write_group(ck_parquet_writer_t *w, const ck_arrow_batch_t *batch);
/* The same, with NULLs: when valid and valid[c] are not NULL, valid[c][row] is 0 where column
 * c (which must be optional) is NULL. */
void ck_parquet_write_group_nulls(ck_parquet_writer_t *w, const ck_arrow_batch_t *batch,
                                  const uint8_t *const *valid);
/* The RLE / bit-packed hybrid encoding of n levels of bit width 1 (0 or 1), appended to out
 * without a length prefix (exposed for the unit test). */
void ck_parquet_levels(const uint8_t *levels, int64_t n, ck_buf_t *out);
/* Appends the footer (schema, row groups, metadata) and the closing magic; frees w. */
void ck_parquet_finish(ck_parquet_writer_t *w, const ck_arrow_kv_t *meta, int nmeta);

#endif
