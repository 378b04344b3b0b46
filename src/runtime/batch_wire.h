/*
 * DESIGN: the wire form of a batch — how rows cross a process boundary (the data plane between
 * workers, src/cluster/net.h) and anything else that must store a batch as bytes.
 *
 * Self-describing, versioned, little-endian; one encoding holds rows [from, from+n) of a batch:
 *
 *   header   u32 magic "CKBW" · u8 version (1) · u8 flags (bit 0: row kinds follow, bit 1:
 *            row watermarks follow)
 *            · u16 reserved (0) · u32 column count · u32 row count
 *   column   u8 type id (ck_type_id_t) · u8 precision · u8 scale (DECIMAL only, else 0)
 *            · u8 flags (bit 0: validity bitmap follows)
 *            · [validity: (n+7)/8 bytes, bit i = row i is not NULL, rebased to row 0]
 *            · values: n × width bytes (types.h widths: BOOL 1, INT 4, BIGINT 8, FLOAT 4,
 *              DOUBLE 8, DECIMAL 16 — the 128-bit unscaled value —, TIMESTAMP 8, NULL 1)
 *              STRING: (n+1) × u32 offsets rebased to 0, then offsets[n] bytes of UTF-8
 *   kinds    [n bytes of ck_row_kind_t when header flag bit 0 is set]
 *   wms      [n × i64, the watermark before each row (batch.h), when header flag bit 1 is set;
 *            non-decreasing]
 *   trailer  u32 CRC32C of every byte before it
 *
 * The validity bitmap is written only when the range holds a NULL, the kinds only when it
 * holds a row that is not an insert, so the common case costs nothing for either.
 *
 * Decoding trusts nothing: every length is checked against the bytes that are left before it
 * is used, the checksum is verified first, and the structure is still validated afterwards
 * (type ids and parameters, BOOL values 0/1, monotonic string offsets that end at the byte
 * count, row kinds 0..3, row watermarks non-decreasing, no trailing bytes), so a truncated, corrupt or hostile input is a
 * CK_EDECODE error naming what is wrong — never a crash, an out-of-bounds read, or an
 * allocation larger than the input justifies.
 *
 * Threads: pure functions; the batch being encoded must not change meanwhile.
 */
#ifndef CK_RUNTIME_BATCH_WIRE_H
#define CK_RUNTIME_BATCH_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "runtime/batch.h"

#define CK_BATCH_WIRE_MAGIC 0x57424B43u /* "CKBW" as little-endian bytes */
#define CK_BATCH_WIRE_VERSION 1

/* Appends rows [from, from+n) of batch (from+n <= batch->nrows) in the wire form to out. */
void ck_batch_wire_encode(const ck_batch_t *batch, size_t from, size_t n, ck_buf_t *out);

/* Decodes one encoded batch from data[0..len) into a new batch (caller frees with
 * ck_batch_free). A truncated or corrupt input is CK_EDECODE with a message naming what is
 * wrong; *out is NULL then. */
int ck_batch_wire_decode(const void *data, size_t len, ck_batch_t **out, ck_error_t *err);

/* An upper bound of the encoded size of rows [from, from+n) (exact when the range has NULLs
 * wherever the batch has a validity bitmap and a non-insert row when it has kinds). */
size_t ck_batch_wire_size(const ck_batch_t *batch, size_t from, size_t n);

/* Rows of batch starting at `from` whose encoding fits in max_bytes: at least 1 (a row that
 * alone exceeds max_bytes still has to travel), at most batch->nrows - from; 0 only when
 * from >= batch->nrows. */
size_t ck_batch_wire_rows_fitting(const ck_batch_t *batch, size_t from, size_t max_bytes);

#endif
