/*
 * DESIGN: reading one partition's records out of a Kafka Fetch response (record batches,
 * message format v2), for clink's own fetch client (kfetch.h).
 *
 * A Fetch response carries, per partition, a byte string of whole record batches, usually
 * followed by a partial one (the broker cuts at the partition's byte limit). The iterator walks
 * the complete batches in order and yields their records, without copying an uncompressed
 * value: a record's key and value point into the response (or, for a compressed batch, into
 * the iterator's scratch buffer), valid until the next call.
 *
 * Batch layout (all big-endian): baseOffset i64, batchLength i32 (bytes after this field),
 * partitionLeaderEpoch i32, magic i8 (= 2), crc u32 (CRC32C of everything after it),
 * attributes i16 (bits 0-2 codec: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd; bit 4
 * transactional; bit 5 control), lastOffsetDelta i32, baseTimestamp i64, maxTimestamp i64,
 * producerId i64, producerEpoch i16, baseSequence i32, record count i32, then the records
 * (compressed as one block when the codec is not none). A record: length varint, attributes
 * i8, timestampDelta varlong, offsetDelta varint, key length varint (-1 = null) and key,
 * value length varint (-1 = null) and value, header count varint and headers (key length
 * varint, key, value length varint, value), all skipped. Varints are zigzag-encoded.
 *
 * What is yielded:
 *   - records with offset >= fetch_offset (a batch may begin before the offset asked for);
 *   - never control batches (transaction markers);
 *   - under read_committed, never a transactional batch of an aborted transaction: the
 *     response's aborted-transaction list (producer id, first offset) is applied as Kafka's
 *     consumers do: a producer becomes aborted when its first_offset <= the current batch's
 *     last offset, and stops being aborted at its ABORT control batch (control record key:
 *     version i16, type i16; 0 = abort, 1 = commit).
 *
 * Position: next_offset is the offset after the last record yielded, and after a batch is
 * finished (yielded, skipped or filtered) it is the batch's end (baseOffset + lastOffsetDelta
 * + 1), so gaps (compaction, markers, aborted records) are stepped over. A source that
 * snapshots next_offset between records has an exact position.
 *
 * Errors (CK_EDECODE, message naming the batch's base offset): a magic other than 2 (old
 * message formats), an unknown codec, a batch that fails to decompress, a record that runs
 * past its batch, a batch length below the header's size, and with check_crc a CRC mismatch.
 * An iterator that returned an error stays failed until reset.
 *
 * Threads: an iterator belongs to one thread.
 */
#ifndef CK_CONNECTORS_KAFKA_KRECORDS_H
#define CK_CONNECTORS_KAFKA_KRECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"

/* The fixed part of a v2 batch, baseOffset through record count. */
#define CK_KBATCH_HEADER 61

typedef struct ck_krec {
  int64_t offset;
  int64_t timestamp; /* epoch ms (create or log-append time, as the batch says) */
  const char *key;   /* NULL when the key is null */
  int32_t key_len;
  const char *value; /* NULL for a tombstone */
  int32_t value_len;
} ck_krec_t;

typedef struct ck_kaborted {
  int64_t producer_id;
  int64_t first_offset;
} ck_kaborted_t;

typedef struct ck_krecs {
  /* configuration (set before reset; kept across resets) */
  bool read_committed;
  bool check_crc;
  /* the record set */
  const uint8_t *pos, *end;
  int64_t fetch_offset;
  ck_kaborted_t *aborted; /* owned copy, sorted by first_offset */
  int naborted, aborted_cap, next_aborted;
  int64_t *active; /* producer ids currently aborted */
  int nactive, active_cap;
  /* the current batch */
  const uint8_t *rp, *rend; /* its remaining records (in the batch or in scratch) */
  int32_t left;             /* records left in it */
  int64_t base_offset, batch_end, base_ts;
  bool log_append_time; /* every record's timestamp is base_ts (the batch's maxTimestamp) */
  bool in_batch;
  ck_buf_t scratch; /* decompressed records */
  void *zlib, *lz4, *zstd; /* decompression contexts: made on first use, kept until fini */
  /* results */
  int64_t next_offset; /* the position: see above */
  bool partial;        /* the set ended in an incomplete batch */
  int64_t partial_size; /* that batch's full size in bytes (12 + batchLength) */
  bool failed;
} ck_krecs_t;

void ck_krecs_init(ck_krecs_t *it);
void ck_krecs_fini(ck_krecs_t *it);

/* Starts on a partition's record set. aborted (may be NULL) is copied. next_offset starts at
 * fetch_offset. */
void ck_krecs_reset(ck_krecs_t *it, const void *records, size_t len, int64_t fetch_offset,
                    const ck_kaborted_t *aborted, int naborted);

/* The next record: 1 with *rec filled, 0 at the end of the complete batches (then partial
 * says whether an incomplete batch followed), or CK_EDECODE with err naming the offset. */
int ck_krecs_next(ck_krecs_t *it, ck_krec_t *rec, ck_error_t *err);

/* Where a fetch that follows this record set starts, from the batch headers alone (no
 * decompression, no records read): the end of the last complete batch, or fetch_offset when
 * there is none. Lets the next fetch be sent before this set is consumed. */
int64_t ck_krecs_scan_end(const void *records, size_t len, int64_t fetch_offset);

#endif
