/*
 * DESIGN: a small Parquet file writer, by hand (the Thrift compact protocol for the page
 * headers and the footer, no library): flat schemas of required columns of the types in
 * ck_arrow_type_t, one row group per ck_arrow_batch_t, one data page per column chunk, PLAIN
 * encoding, no compression, key/value metadata in the footer.
 *
 * Column types: UINT16 and UINT32 are INT32 with converted type UINT_16 / UINT_32, INT64 is
 * INT64, FLOAT64 DOUBLE, UTF8 BYTE_ARRAY with converted type UTF8, BINARY BYTE_ARRAY.
 * Users: `clink state-export --format=parquet` (cli/cmd_state.c).
 * Threads: none of its own; a writer belongs to its caller's thread.
 */
#ifndef CK_BASE_PARQUET_H
#define CK_BASE_PARQUET_H

#include "base/arrow_ipc.h"

typedef struct ck_parquet_writer {
  ck_buf_t *out;
  int nfields;
  ck_arrow_field_t fields[CK_ARROW_MAX_FIELDS];
  ck_buf_t groups; /* the row groups' Thrift structs, for the footer */
  int ngroups;
  int64_t nrows;
} ck_parquet_writer_t;

/* Starts a file in out (its magic). */
void ck_parquet_begin(ck_parquet_writer_t *w, ck_buf_t *out, const ck_arrow_field_t *fields,
                      int nfields);
/* Appends batch's rows as one row group (nothing for an empty batch). */
void ck_parquet_write_group(ck_parquet_writer_t *w, const ck_arrow_batch_t *batch);
/* Appends the footer (schema, row groups, metadata) and the closing magic; frees w. */
void ck_parquet_finish(ck_parquet_writer_t *w, const ck_arrow_kv_t *meta, int nmeta);

#endif
