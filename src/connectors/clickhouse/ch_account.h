/*
 * DESIGN: what the ClickHouse sink tells the interval evidence (capture/evidence.h) about its
 * destination: the server and the table as the sink's open found them, read once from the
 * server's system tables.
 *
 * Servers differ in what they have: 18.16 has no serverUUID(), no table UUIDs and no
 * async_insert; 26.x has all three, and a table in an Ordinary database still has no UUID.
 * Each fact the server does not have is recorded as null with the reason beside it, under
 * "absent" (never guessed, never an error). A question the server refuses (an exception) is
 * absent too, with the server's message; only a broken connection fails the probe, so that
 * the open that called it retries.
 *
 * Threads: the sink's subtask thread (one client, one at a time).
 */
#ifndef CK_CONNECTORS_CLICKHOUSE_CH_ACCOUNT_H
#define CK_CONNECTORS_CLICKHOUSE_CH_ACCOUNT_H

#include "base/buf.h"
#include "base/error.h"
#include "connectors/clickhouse/ch_client.h"

/* Appends the destination's members to out as JSON object members without the braces:
 * "server": {name, version, revision, display_name, host, uuid}, "database", "table",
 * "table_uuid", "database_engine", "engine", "engine_full", "create_table_query",
 * "settings": {name: {value, changed}} of the deduplication and async-insert settings the
 * server has, "merge_tree_settings": likewise for the deduplication windows, and "absent":
 * {fact: reason}. Returns 0, or a negative code when the connection broke (err filled). */
int ck_ch_account_destination(ck_ch_client_t *client, const char *database, const char *table,
                              ck_buf_t *out, ck_error_t *err);

#endif
