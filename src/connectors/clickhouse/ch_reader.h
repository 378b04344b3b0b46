/*
 * DESIGN: the reader of the server's side of the native protocol — a resumable state machine.
 *
 * Bytes arrive in any pieces (ck_ch_reader_feed); ck_ch_reader_next turns them into packets.
 * When the bytes of the next field are not all there yet it returns CK_CH_NEED_MORE and keeps
 * its place: the packet kind, the field it is in, the column and row of a block, the granule
 * of a LowCardinality column. Every primitive (varint, string, fixed-width value, compressed
 * frame) is taken whole or not at all, so a field is never half-consumed; long columns are
 * consumed in as many pieces as arrive. Feeding one byte at a time gives the same packets as
 * feeding everything at once (tested). Any malformed input is CK_EPROTO with a reason, and the
 * reader stays failed after it: the connection is out of step and must be closed.
 *
 * Data, Totals and Extremes blocks come through ClickHouse's compressed framing when the query
 * asked for compression (ch_compress.h); Log and ProfileEvents blocks never do. Field presence
 * follows the negotiated revision (ch_proto.h), set from the server's Hello.
 *
 * Limits (a hostile or broken peer cannot make it allocate much more than it sent): strings
 * up to 1 GiB, a frame's decompressed size up to max_block_bytes and 255 times its compressed
 * size, a decoded block up to max_block_bytes.
 *
 * Memory: the packet returned, its strings and block, belong to the reader and stay valid
 * until the next call. One thread at a time.
 */
#ifndef CK_CONNECTORS_CLICKHOUSE_CH_READER_H
#define CK_CONNECTORS_CLICKHOUSE_CH_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "connectors/clickhouse/ch_block.h"

#define CK_CH_NEED_MORE 1

typedef struct ck_ch_packet {
  uint64_t type; /* CK_CH_SERVER_* */
  struct {
    char *name, *timezone, *display_name;
    uint64_t major, minor, patch, revision;
  } hello;
  struct {
    int32_t code;
    char *name, *message;
    char *nested; /* messages of nested exceptions, "; "-joined (may be NULL) */
  } exc;
  struct {
    uint64_t read_rows, read_bytes, total_rows, total_bytes, written_rows, written_bytes,
        elapsed_ns;
  } progress;
  struct {
    uint64_t rows, blocks, bytes, rows_before_limit, rows_before_aggregation;
    uint8_t applied_limit, calculated_rows_before_limit, applied_aggregation;
  } profile;
  char *table;         /* Data, Totals, Extremes, Log, ProfileEvents, TableColumns */
  ck_ch_block_t block; /* Data, Totals, Extremes, Log, ProfileEvents */
  char *text;          /* TableColumns: the description; TimezoneUpdate: the zone */
  uint64_t count;      /* PartUUIDs */
} ck_ch_packet_t;

typedef struct ck_ch_reader {
  int client_revision; /* what we announced */
  int revision;        /* negotiated: min(client, server) once Hello was read */
  bool compressed;     /* Data/Totals/Extremes blocks are in compressed frames */
  size_t max_block_bytes;
  ck_buf_t in;
  size_t pos;
  ck_buf_t z; /* decompressed bytes of the current block */
  size_t zpos;
  int failed; /* sticky error code */
  /* where we are */
  int step, bstep, cstep;
  bool in_packet;
  ck_ch_packet_t pkt;
  uint64_t ncols, nrows, done, gdone, lc_flags, lc_nkeys, lc_rows, kdone, n_nested;
  int col;
  size_t block_bytes;
  char *tmp;
  ck_ch_col_t keys; /* a LowCardinality granule's dictionary */
} ck_ch_reader_t;

void ck_ch_reader_init(ck_ch_reader_t *r, int client_revision);
void ck_ch_reader_fini(ck_ch_reader_t *r);
/* Forget everything buffered and any error (a new connection). */
void ck_ch_reader_reset(ck_ch_reader_t *r);
void ck_ch_reader_feed(ck_ch_reader_t *r, const void *data, size_t len);
/* 0 with *out set, CK_CH_NEED_MORE, or a negative error (sticky). */
int ck_ch_reader_next(ck_ch_reader_t *r, const ck_ch_packet_t **out, ck_error_t *err);
/* Bytes received and not yet parsed (tests). */
size_t ck_ch_reader_pending(const ck_ch_reader_t *r);

#endif
