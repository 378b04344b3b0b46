/*
 * DESIGN: clink's own Kafka fetch client — the Kafka source's default way of reading
 * (fetcher = 'clink'; 'librdkafka' keeps librdkafka's consumer).
 *
 * Why: a consumer built on librdkafka pays for a broker thread that parses every record into
 * a heap-allocated message, a queue handing them to the source thread, and a free per message
 * across threads (bench/kafka_source: librdkafka alone, decoding nothing, reads the Nexmark
 * topic at about 1.2 M events per CPU-second here). This client runs on the source's own
 * thread and hands the source each partition's record set as the broker sent it; the records
 * are read in place (krecords.h). No other thread, no per-record allocation.
 *
 * Protocol (Kafka's binary protocol over plain TCP, big-endian, one request at a time per
 * connection): ApiVersions v0 on every new connection, to check the broker serves the
 * versions used; Metadata v8 (partitions, their leaders, the brokers' addresses, the cluster id)
 * and once at open Metadata v10 for the topic's id when the broker serves it; ListOffsets
 * v5 (earliest and latest offsets; latest is the last stable offset under read_committed);
 * Fetch v11 (isolation level, aborted transactions, no fetch sessions). Requests name the
 * client "clink-<table>-<subtask>" (or 'kafka.client.id'). Only PLAINTEXT: a table that needs
 * TLS or SASL uses fetcher 'librdkafka'.
 *
 * Connections: per broker, one fetch connection (non-blocking; at most one Fetch in flight)
 * and one for synchronous requests (Metadata, ListOffsets: they block the caller for up to
 * CK_KAFKA_ATTEMPT_MS). Each fetch connection asks for every partition it leads that is not
 * paused, not already asked for, and has no record set waiting; so while the source decodes
 * one set, the broker is already sending the next (pipelining, depth one per partition).
 *
 * Fetch size: by default a response is about response_bytes (1 MiB from the source), split
 * over the partitions asked for, so that it is still in the core's cache when it is decoded
 * (measured on q0: 4 x 1 MiB responses cost about 20% more CPU than 4 x 64-256 KiB ones).
 *
 * Record sets come out in offset order per partition, round-robin over partitions. A set is
 * the iterator of its partition's part of one response; it stays valid until the next call of
 * ck_kfetch_next (which lets go of it, and of the response once no set uses it any more).
 *
 * Faults, all on the caller's thread, none fatal here: a lost connection, a broker that does
 * not lead a partition any more, an unknown partition, and other partition errors mark the
 * metadata stale; it is refreshed at most every second (KFETCH_META_EVERY_MS), the error is
 * logged through ck_kafka_log_error (rate-limited), and fetching resumes at the same offset.
 * topic_suspect tells the source to check the topic (ck_kfetch_partition_count). An offset
 * out of range is reset to the earliest or latest offset (reset_earliest), logged as a
 * warning, and delivered as an empty set whose next_offset is the new position.
 *
 * Threads: one instance per source subtask, on its thread only.
 */
#ifndef CK_CONNECTORS_KAFKA_KFETCH_H
#define CK_CONNECTORS_KAFKA_KFETCH_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "connectors/kafka/kafka.h"
#include "connectors/kafka/krecords.h"

typedef struct ck_kfetch ck_kfetch_t;

typedef struct ck_kfetch_conf {
  kafka_client_t *kc; /* names (table, brokers, topic), connect_timeout_ms, error logging */
  const char *client_id; /* 'kafka.client.id', or NULL for "clink-<table>-<subtask>" */
  bool read_committed;
  bool reset_earliest;       /* where an out-of-range offset goes */
  bool check_crc;            /* 'kafka.check.crcs' */
  int32_t max_wait_ms;       /* 'kafka.fetch.wait.max.ms' */
  int32_t partition_max_bytes; /* 'kafka.max.partition.fetch.bytes'; 0: response_bytes split
                                * over the partitions a fetch asks for (at least 64 KiB each) */
  int32_t response_bytes;      /* see partition_max_bytes */
  int32_t max_bytes;         /* 'kafka.fetch.max.bytes' */
  const int *wake_fd;        /* NULL, or the engine's wake descriptor (ck_conn_ctx_t.wake_fd):
                              * ck_kfetch_next returns 0 early once it is readable */
} ck_kfetch_conf_t;

/* The properties ('kafka.<name>') the client understands; any other one needs librdkafka. */
bool ck_kfetch_understands(const char *property, const char *value);

/* Connects to the bootstrap brokers and reads the topic's metadata, waiting with backoff while
 * they cannot be reached (CK_ECONNECT after connect_timeout_ms); a topic that does not exist
 * is CK_ENOTFOUND after CK_KAFKA_TOPIC_GRACE_MS. *nparts: the topic's partition count. */
int ck_kfetch_open(ck_kfetch_t **out, const ck_kfetch_conf_t *conf, int *nparts,
                   ck_error_t *err);
void ck_kfetch_close(ck_kfetch_t *f);
/* Which log it reads: the cluster id of the last metadata and the topic id read at open (Metadata
 * v10, Kafka 2.8+); NULL where the brokers gave none. Valid until close. */
void ck_kfetch_ident(const ck_kfetch_t *f, const char **cluster_id, const uint8_t **topic_id);

/* A partition's earliest and latest offsets (latest: the last stable offset under
 * read_committed), retried like open. */
int ck_kfetch_offsets(ck_kfetch_t *f, int32_t partition, int64_t *low, int64_t *high,
                      ck_error_t *err);

/* The partitions to read (index i of every call below is parts[i]), each at its offset. */
void ck_kfetch_assign(ck_kfetch_t *f, const int32_t *parts, const int64_t *offsets, int n);
/* Reads partition i from offset next (dropping what was fetched of it), or stops reading it. */
void ck_kfetch_seek(ck_kfetch_t *f, int i, int64_t offset);
void ck_kfetch_pause(ck_kfetch_t *f, int i);

/* Lets go of the previous set, then waits up to timeout_ms for the next one: 1 with *i and
 * *it (the set's iterator: ck_krecs_next until 0), 0 when none came in time (or the wake
 * descriptor became readable), or an error. */
int ck_kfetch_next(ck_kfetch_t *f, int timeout_ms, int *i, ck_krecs_t **it, ck_error_t *err);

/* The brokers said the topic or a partition of it is unknown since the last call. */
bool ck_kfetch_topic_suspect(ck_kfetch_t *f);
/* The topic's partition count now per the brokers' metadata: >= 0 (0: the topic is gone), or
 * -1 when they could not be asked. */
int ck_kfetch_partition_count(ck_kfetch_t *f);

#endif
