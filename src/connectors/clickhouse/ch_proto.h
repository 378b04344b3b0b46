/*
 * DESIGN: ClickHouse native TCP protocol — constants and the primitive encodings.
 *
 * Packet codes, the protocol revisions at which fields appear, and the string writer (varint
 * length + bytes); the other primitives (LEB128 unsigned varints, little-endian fixed
 * integers) are base/bytes.h's. The revision rules: client and server each announce a
 * revision in Hello; both then speak the smaller one, and a field introduced at revision R is
 * present only when that negotiated revision is >= R. We announce CK_CH_CLIENT_REVISION and
 * implement every rule up to it; the test server (18.16) announces 54412.
 *
 * Threads: any; no state.
 */
#ifndef CK_CONNECTORS_CLICKHOUSE_CH_PROTO_H
#define CK_CONNECTORS_CLICKHOUSE_CH_PROTO_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/buf.h"
#include "base/bytes.h"

/* The revision this client announces (ClickHouse 23.x's protocol, before password rules,
 * chunked packets and sparse columns, none of which this client speaks). */
#define CK_CH_CLIENT_REVISION 54460
#define CK_CH_CLIENT_NAME "clink"
#define CK_CH_CLIENT_MAJOR 0
#define CK_CH_CLIENT_MINOR 1
#define CK_CH_CLIENT_PATCH 0

/* Revisions at which the protocol changed (names as in ClickHouse's ProtocolDefines.h). */
#define CK_CH_REV_BLOCK_INFO 51903
#define CK_CH_REV_CLIENT_INFO 54032
#define CK_CH_REV_SERVER_TIMEZONE 54058
#define CK_CH_REV_QUOTA_KEY_IN_CLIENT_INFO 54060
#define CK_CH_REV_SERVER_DISPLAY_NAME 54372
#define CK_CH_REV_VERSION_PATCH 54401
#define CK_CH_REV_LOW_CARDINALITY 54405
#define CK_CH_REV_SERVER_LOGS 54406
#define CK_CH_REV_COLUMN_DEFAULTS_METADATA 54410
#define CK_CH_REV_CLIENT_WRITE_INFO 54420
#define CK_CH_REV_SETTINGS_AS_STRINGS 54429
#define CK_CH_REV_INTERSERVER_SECRET 54441
#define CK_CH_REV_OPENTELEMETRY 54442
#define CK_CH_REV_DISTRIBUTED_DEPTH 54448
#define CK_CH_REV_INITIAL_QUERY_START_TIME 54449
#define CK_CH_REV_INCREMENTAL_PROFILE_EVENTS 54451
#define CK_CH_REV_PARALLEL_REPLICAS 54453
#define CK_CH_REV_CUSTOM_SERIALIZATION 54454
#define CK_CH_REV_PROFILE_EVENTS_IN_INSERT 54456
#define CK_CH_REV_ADDENDUM 54458
#define CK_CH_REV_PARAMETERS 54459
#define CK_CH_REV_SERVER_QUERY_TIME_IN_PROGRESS 54460
#define CK_CH_REV_PASSWORD_COMPLEXITY_RULES 54461
#define CK_CH_REV_INTERSERVER_SECRET_V2 54462
#define CK_CH_REV_TOTAL_BYTES_IN_PROGRESS 54463
#define CK_CH_REV_TIMEZONE_UPDATES 54464
#define CK_CH_REV_ROWS_BEFORE_AGGREGATION 54469

/* Client → server packets. */
enum {
  CK_CH_CLIENT_HELLO = 0,
  CK_CH_CLIENT_QUERY = 1,
  CK_CH_CLIENT_DATA = 2,
  CK_CH_CLIENT_CANCEL = 3,
  CK_CH_CLIENT_PING = 4,
};

/* Server → client packets. */
enum {
  CK_CH_SERVER_HELLO = 0,
  CK_CH_SERVER_DATA = 1,
  CK_CH_SERVER_EXCEPTION = 2,
  CK_CH_SERVER_PROGRESS = 3,
  CK_CH_SERVER_PONG = 4,
  CK_CH_SERVER_END_OF_STREAM = 5,
  CK_CH_SERVER_PROFILE_INFO = 6,
  CK_CH_SERVER_TOTALS = 7,
  CK_CH_SERVER_EXTREMES = 8,
  CK_CH_SERVER_TABLES_STATUS = 9,
  CK_CH_SERVER_LOG = 10,
  CK_CH_SERVER_TABLE_COLUMNS = 11,
  CK_CH_SERVER_PART_UUIDS = 12,
  CK_CH_SERVER_READ_TASK_REQUEST = 13,
  CK_CH_SERVER_PROFILE_EVENTS = 14,
  CK_CH_SERVER_TIMEZONE_UPDATE = 17,
};

const char *ck_ch_packet_name(uint64_t type);

enum { CK_CH_STAGE_COMPLETE = 2 };
enum { CK_CH_QUERY_KIND_INITIAL = 1, CK_CH_INTERFACE_TCP = 1 };

/* Compressed frames: 16-byte checksum, then method, compressed size (header included) and
 * uncompressed size, then the payload. */
#define CK_CH_FRAME_CHECKSUM 16
#define CK_CH_FRAME_HEADER 9
#define CK_CH_METHOD_NONE 0x02
#define CK_CH_METHOD_LZ4 0x82
#define CK_CH_METHOD_ZSTD 0x90
#define CK_CH_MAX_FRAME_INPUT (1u << 20) /* bytes of a block per frame we send */

/* ---- writers ---- */
/* ClickHouse's VarUInt is base/bytes.h's LEB128 varint (ck_buf_put_uvarint), its fixed
 * integers little-endian (ck_buf_put_le_n, ck_get_le_n). A string is its varint length, then
 * its bytes. */
static inline void ck_ch_put_str(ck_buf_t *out, const char *s, size_t n) {
  ck_buf_put_uvarint(out, n);
  ck_buf_append(out, s, n);
}
static inline void ck_ch_put_cstr(ck_buf_t *out, const char *s) {
  ck_ch_put_str(out, s ? s : "", s ? strlen(s) : 0);
}

#endif
