/*
 * DESIGN: a ClickHouse native-protocol client (connection, Hello, queries, INSERTs).
 *
 * Transport is pluggable (ck_ch_io_t: read with a timeout, write all, close), so a test can
 * put a scripted or fault-injecting peer under a real client; ck_ch_tcp_connect is the plain
 * TCP one (non-blocking connect bounded by connect_timeout_ms, every read and write bounded
 * by receive/send timeouts through poll, TCP_NODELAY). Incoming bytes go through the
 * resumable reader (ch_reader.h).
 *
 * Hello: we announce CK_CH_CLIENT_REVISION, read the server's name, version, revision and —
 * by revision — time zone, display name and version patch, and speak min(ours, theirs) from
 * then on (from 54458 we also send the addendum, an empty quota key). The password goes into
 * the Hello packet and nowhere else: it is never logged, never put in an error, and the
 * client does not keep it after the handshake.
 *
 * A query: Query packet (query id, client info by revision, settings — as typed binary values
 * below 54429, as strings with flags from it —, interserver secret from 54441, stage
 * Complete, compression flag, text, parameters from 54459), then an empty Data block (no
 * external tables). Replies are read until EndOfStream; Progress, ProfileInfo, Log,
 * TableColumns, ProfileEvents, Totals, Extremes and PartUUIDs are consumed; an Exception
 * becomes a ck_error_t with origin "clickhouse", origin_code the server's code, the server's
 * message, and retriable set for the codes a retry can cure (ck_ch_code_retriable).
 *
 * An INSERT is synchronous: ck_ch_insert_begin sends the statement and waits for the header
 * block the server answers with (the table's columns as it will take them), ck_ch_insert_send
 * sends Data blocks, ck_ch_insert_end sends the empty block that ends the data and waits for
 * EndOfStream — only then are the rows acknowledged.
 *
 * After any transport or protocol error the client is broken (ck_ch_client_ok is false) and
 * must be freed: the connection's state is unknown. Threads: one at a time.
 */
#ifndef CK_CONNECTORS_CLICKHOUSE_CH_CLIENT_H
#define CK_CONNECTORS_CLICKHOUSE_CH_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "connectors/clickhouse/ch_block.h"
#include "connectors/clickhouse/ch_reader.h"

/* ---- transport ---- */
typedef struct ck_ch_io ck_ch_io_t;
typedef struct ck_ch_io_ops {
  /* Up to n bytes: > 0 read, 0 at end of stream, or a negative CK_E code (CK_ETIMEOUT …). */
  ssize_t (*read)(ck_ch_io_t *io, void *buf, size_t n, int timeout_ms);
  /* All n bytes, or a negative CK_E code. */
  int (*write)(ck_ch_io_t *io, const void *buf, size_t n, int timeout_ms);
  void (*close)(ck_ch_io_t *io);
} ck_ch_io_ops_t;
struct ck_ch_io {
  const ck_ch_io_ops_t *ops;
  void *impl;
  char peer[96]; /* "host:port", for messages */
};

int ck_ch_tcp_connect(const char *host, int port, int timeout_ms, ck_ch_io_t *io, ck_error_t *err);

/* ---- client ---- */
typedef struct ck_ch_conf {
  const char *host;
  int port;
  const char *database, *user, *password;
  int connect_timeout_ms, receive_timeout_ms, send_timeout_ms;
  bool compress; /* LZ4 for Data blocks both ways */
} ck_ch_conf_t;

typedef struct ck_ch_server {
  char name[64], timezone[64], display_name[128];
  uint64_t major, minor, patch, revision;
} ck_ch_server_t;

typedef enum ck_ch_setting_kind { CK_CH_SETTING_UINT, CK_CH_SETTING_STRING } ck_ch_setting_kind_t;
typedef struct ck_ch_setting {
  const char *name, *value;
  ck_ch_setting_kind_t kind; /* how to encode it for servers below revision 54429 */
  bool important;            /* the server refuses the query if it does not know it */
} ck_ch_setting_t;

typedef struct ck_ch_client ck_ch_client_t;

/* Connects and says Hello. */
int ck_ch_client_open(const ck_ch_conf_t *conf, ck_ch_client_t **out, ck_error_t *err);
/* The same over a transport the caller made (taken over: closed on failure and by free). */
int ck_ch_client_open_io(ck_ch_io_t io, const ck_ch_conf_t *conf, ck_ch_client_t **out,
                         ck_error_t *err);
void ck_ch_client_free(ck_ch_client_t *c);
bool ck_ch_client_ok(const ck_ch_client_t *c);
const ck_ch_server_t *ck_ch_client_server(const ck_ch_client_t *c);
int ck_ch_client_revision(const ck_ch_client_t *c); /* negotiated */
/* Every wait for the server ends by this ck_mono_ms time (0: no deadline, only the per-read
 * receive timeout): past it the client is broken with CK_ETIMEOUT. A server that keeps sending
 * Progress packets never trips a per-read timeout; this bounds a whole statement. */
void ck_ch_client_set_deadline(ck_ch_client_t *c, int64_t deadline_mono_ms);
/* For tests and the fuzz target: the reader under the client. */
ck_ch_reader_t *ck_ch_client_reader(ck_ch_client_t *c);

int ck_ch_ping(ck_ch_client_t *c, ck_error_t *err);

/* Runs a statement to its end; each non-empty result block goes to on_block (may be NULL). */
typedef int (*ck_ch_block_fn)(void *arg, const ck_ch_block_t *block, ck_error_t *err);
int ck_ch_query(ck_ch_client_t *c, const char *sql, const ck_ch_setting_t *settings,
                int nsettings, ck_ch_block_fn on_block, void *arg, ck_error_t *err);

/* The INSERT exchange. *header (owned by the client, valid until insert_end) lists the
 * columns the server expects, in order. */
int ck_ch_insert_begin(ck_ch_client_t *c, const char *sql, const ck_ch_setting_t *settings,
                       int nsettings, const ck_ch_block_t **header, ck_error_t *err);
int ck_ch_insert_send(ck_ch_client_t *c, const ck_ch_block_t *block, ck_error_t *err);
/* Rows sent so far are acknowledged when this returns 0. */
int ck_ch_insert_end(ck_ch_client_t *c, ck_error_t *err);

/* Server error codes a later retry can cure (timeouts, overload, too many parts, network,
 * memory limit, a replica or ZooKeeper away, the server shutting down). */
bool ck_ch_code_retriable(int code);

/* `name` quoted as a ClickHouse identifier: backquotes, with ` and \ escaped. */
void ck_ch_quote_ident(const char *name, ck_buf_t *out);
/* 'text' as a ClickHouse string literal. */
void ck_ch_quote_str(const char *text, ck_buf_t *out);

#endif
