/*
 * DESIGN: the built-in connectors, as seen from outside src/connectors/.
 *
 * ck_connectors_register_all() puts every connector below into the runtime's registry
 * (runtime/connector.h); the CLI calls it once at start-up, before any thread runs. After
 * that the planner and runtime find connectors by name only.
 *
 *   file       bounded source over files / a directory / a glob; file sink (at least once;
 *              exactly once on request: staged output promoted at commit)
 *   datagen    deterministic seeded row generator (source)
 *   print      NDJSON (or CSV) rows on standard output (sink); 'stdout' is an alias
 *   blackhole  discards rows, counting them (sink)
 *   nexmark    the Nexmark benchmark's Person / Auction / Bid events, generated in process
 *              (source)
 *   kafka      Apache Kafka topics (source; sink at least once, or exactly once on request
 *              through one Kafka transaction per checkpoint interval)
 *   clickhouse ClickHouse tables over the native protocol (sink at least once, or exactly once
 *              on request through a stage table per checkpoint interval, moved in at commit)
 *   postgres   rows into an existing PostgreSQL table (sink; exactly once via prepared
 *              transactions)
 *   collect    rows to the program embedding clink as Arrow batches (sink; libclink)
 *   push       rows that program pushes as Arrow batches (source; libclink)
 *
 * "On request" is the table option delivery_guarantee = 'exactly_once'; each sink's own file
 * says what it needs from the server and what it refuses.
 *
 * Record formats (json, csv) live in connectors/format.h, shared with broker connectors.
 */
#ifndef CK_CONNECTORS_CONNECTORS_H
#define CK_CONNECTORS_CONNECTORS_H

#include <stdint.h>

#include "runtime/connector.h"

/* Registers every built-in connector; calling it again changes nothing. */
void ck_connectors_register_all(void);

extern const ck_connector_t ck_file_connector;
extern const ck_connector_t ck_datagen_connector;
extern const ck_connector_t ck_print_connector;
extern const ck_connector_t ck_stdout_connector;
extern const ck_connector_t ck_blackhole_connector;
extern const ck_connector_t ck_kafka_connector;
extern const ck_connector_t ck_clickhouse_connector;
extern const ck_connector_t ck_postgres_connector;
extern const ck_connector_t ck_nexmark_connector;
extern const ck_connector_t ck_collect_connector;
extern const ck_connector_t ck_push_connector;

/* Rows a blackhole sink instance has discarded so far (a metric; tests). */
int64_t ck_blackhole_rows(const ck_sink_t *sink);

#endif
