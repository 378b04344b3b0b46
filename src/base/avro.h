/*
 * DESIGN: a small Apache Avro object container file writer, by hand (no library): the binary
 * encoding of the primitive types a caller builds its records from, and the container around
 * them — the magic "Obj\1", the file metadata (a map of bytes: avro.schema, the schema's JSON
 * as the caller gives it; avro.codec; the caller's own keys), the 16-byte sync marker, then
 * blocks of records (a long count, a long byte size, the records' bytes, null or deflate
 * codec, the sync marker).
 *
 * The writer knows no schema: a caller encodes each record field by field with the
 * ck_avro_put_* functions in the schema's order (a record is its fields, a union the branch
 * index as a long and then the branch's value, null is nothing, an array or map blocks of a
 * long count and the items, ended by a count of 0). It is the caller's job that the bytes
 * match the schema it names.
 *
 * Users: the Iceberg manifests and manifest lists (cli/cmd_state_iceberg.c).
 * Threads: none of its own; a writer belongs to its caller's thread.
 */
#ifndef CK_BASE_AVRO_H
#define CK_BASE_AVRO_H

#include <stddef.h>
#include <stdint.h>

#include "base/arrow_ipc.h"
#include "base/buf.h"
#include "base/error.h"

typedef enum ck_avro_codec {
  CK_AVRO_NULL,
  CK_AVRO_DEFLATE, /* raw deflate (RFC 1951), as the specification says */
} ck_avro_codec_t;

/* ---- the binary encoding ---- */

/* int and long: a zigzag varint. */
void ck_avro_put_long(ck_buf_t *b, int64_t v);
/* bytes and string: a long length, then the bytes. */
void ck_avro_put_bytes(ck_buf_t *b, const void *p, size_t n);
void ck_avro_put_string(ck_buf_t *b, const char *s); /* NUL-ended */
/* a union: the index of the branch (then the caller writes the branch's value). */
void ck_avro_put_union(ck_buf_t *b, int branch);
void ck_avro_put_bool(ck_buf_t *b, int v);
void ck_avro_put_double(ck_buf_t *b, double v);

/* ---- the container ---- */

#define CK_AVRO_SYNC 16

typedef struct ck_avro_writer {
  ck_buf_t *out;
  ck_avro_codec_t codec;
  uint8_t sync[CK_AVRO_SYNC];
  ck_buf_t block; /* the records of the block being built */
  int64_t count;  /* how many */
} ck_avro_writer_t;

/* Appends the header to out: schema (JSON text), codec, meta (extra metadata keys), sync. */
void ck_avro_begin(ck_avro_writer_t *w, ck_buf_t *out, const char *schema, ck_avro_codec_t codec,
                   const ck_arrow_kv_t *meta, int nmeta, const uint8_t sync[CK_AVRO_SYNC]);
/* The buffer the next record's encoding goes into (counted as one record). */
ck_buf_t *ck_avro_record(ck_avro_writer_t *w);
/* Appends the records since the last block as one block (nothing when there are none). */
int ck_avro_flush(ck_avro_writer_t *w, ck_error_t *err);
/* Flushes the last block and frees w's own memory. */
int ck_avro_finish(ck_avro_writer_t *w, ck_error_t *err);

#endif
