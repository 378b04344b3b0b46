/*
 * DESIGN: what the Kafka connector's files share (private to src/connectors/kafka/ and its unit
 * tests; the rest of the tree sees only ck_kafka_connector in connectors/connectors.h).
 *
 *   kafka.c         the descriptor, the option tables, the plan-time check, and the client
 *                   plumbing both roles use: librdkafka configuration from the table's options,
 *                   log and error callbacks routed to ck_log ("[kafka] …", rate-limited),
 *                   waiting for the topic's metadata with backoff, and the source's position
 *                   snapshot encoding.
 *   kafka_source.c  the source: the engine's own partition assignment, positions, bounded
 *                   reads; it fetches through kfetch.c (default) or librdkafka's consumer.
 *   kfetch.c        clink's own fetch client (Kafka's wire protocol, on the source's thread).
 *   krecords.c      reading record batches (message format v2) in place: codecs, aborted
 *                   transactions, positions.
 *   kafka_sink.c    the producer sink: at least once (one idempotent producer per subtask,
 *                   flushed at every barrier), or exactly once on request (two transactional
 *                   producers per subtask, one transaction per checkpoint interval, committed
 *                   when the checkpoint completes).
 *   kafka_eos.h     the exactly-once sink's identities and checkpoint state encoding.
 *
 * Threads: a kafka_client_t belongs to one subtask's thread. librdkafka's own threads call the
 * log callback only (it touches nothing but ck_log); the error and delivery callbacks run on
 * the owning thread, inside rd_kafka_poll/rd_kafka_flush.
 */
#ifndef CK_CONNECTORS_KAFKA_KAFKA_H
#define CK_CONNECTORS_KAFKA_KAFKA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "base/buf.h"
#include "base/error.h"
#include "runtime/connector.h"

extern const ck_opt_def_t ck_kafka_source_options[];
extern const ck_opt_def_t ck_kafka_sink_options[];
extern const ck_source_ops_t ck_kafka_source_ops;
extern const ck_sink_ops_t ck_kafka_sink_ops;

/* The log subsystem every line of the connector uses: "[kafka] …". */
#define CK_KAFKA_LOG "kafka"
/* How often a repeating problem (unreachable broker, stuck flush) is logged again. */
#define CK_KAFKA_LOG_EVERY_MS 10000

/* One librdkafka client of a source or sink instance, with what its messages name. */
typedef struct kafka_client {
  rd_kafka_t *rk;
  char *table;   /* the SQL table */
  char *brokers; /* as written in the options */
  char *topic;
  int subtask;
  int64_t connect_timeout_ms; /* 0: retry for ever */
  /* error_cb state (owning thread only) */
  int last_err;           /* last librdkafka error code logged */
  int64_t last_err_log_ms;
  int64_t errs_suppressed; /* errors not logged since then */
  bool fatal;              /* a fatal error was reported (idempotent producer) */
  bool closing;            /* errors are no longer reported */
  bool topic_suspect;      /* an error said the topic or a partition is gone: check it */
} kafka_client_t;

/* Makes the client: a librdkafka configuration from the table's options (bootstrap.servers,
 * client.id, the role's settings in `defaults` as key, value pairs ending in NULL, then every
 * 'kafka.<property>' option, which may override them), then the handle. librdkafka's opaque
 * is kc itself, so a struct that embeds kc as its first member gets itself back in dr_msg_cb
 * (NULL for a consumer). */
int ck_kafka_client_open(kafka_client_t *kc, const ck_conn_ctx_t *ctx, rd_kafka_type_t type,
                         const char *const *defaults,
                         void (*dr_msg_cb)(rd_kafka_t *, const rd_kafka_message_t *, void *),
                         ck_error_t *err);
/* The same, with librdkafka's statistics callback (NULL: none; it runs on the thread that
 * polls, and statistics.interval.ms must be set among the defaults for it to be called). */
int ck_kafka_client_open_stats(kafka_client_t *kc, const ck_conn_ctx_t *ctx,
                               rd_kafka_type_t type, const char *const *defaults,
                               void (*dr_msg_cb)(rd_kafka_t *, const rd_kafka_message_t *,
                                                 void *),
                               int (*stats_cb)(rd_kafka_t *, char *, size_t, void *),
                               ck_error_t *err);
/* The first 'kafka.<property>' option clink's own fetch client does not understand (the source
 * then reads through librdkafka), or NULL. */
const char *ck_kafka_needs_librdkafka(const ck_options_t *opts);

/* Only the names and settings of kc (table, brokers, topic, subtask, connect_timeout_ms), no
 * librdkafka handle: for clink's own fetch client (kfetch.h). */
int ck_kafka_client_names(kafka_client_t *kc, const ck_conn_ctx_t *ctx, rd_kafka_type_t type,
                          ck_error_t *err);
void ck_kafka_client_close(kafka_client_t *kc);

/* Applies one librdkafka property; an unknown or invalid one is CK_EOPTION naming the option. */
int ck_kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value,
                      const char *option, ck_error_t *err);

/* The topic's partition count, waiting (with backoff, logged every CK_KAFKA_LOG_EVERY_MS) while
 * the brokers are unreachable or the topic has no leaders yet, up to connect_timeout_ms
 * (CK_ECONNECT after that). A topic that does not exist is CK_ENOTFOUND naming topic and
 * brokers, within a couple of seconds (a grace for topics created a moment ago). */
int ck_kafka_topic_partitions(kafka_client_t *kc, int *nparts, ck_error_t *err);

/* A partition's low and high watermark offsets (for a read_committed consumer the high one is
 * the last stable offset), retried like ck_kafka_topic_partitions. */
int ck_kafka_watermarks(kafka_client_t *kc, int32_t partition, int64_t *low, int64_t *high,
                        ck_error_t *err);

/* Start-up waiting, shared by both fetch paths: backoff from 100 ms doubling to 5 s. */
typedef struct ck_kafka_retry {
  int64_t start, last_log, backoff;
} ck_kafka_retry_t;
void ck_kafka_retry_init(ck_kafka_retry_t *r);
/* After a failed attempt to `what`: CK_ECONNECT once connect_timeout_ms has passed, else logs
 * (at once, then every CK_KAFKA_LOG_EVERY_MS), sleeps the backoff and returns 0 to try again. */
int ck_kafka_retry_wait(kafka_client_t *kc, ck_kafka_retry_t *r, const char *what,
                        rd_kafka_resp_err_t rerr, const char *reason, ck_error_t *err);
/* CK_ENOTFOUND: the topic does not exist (with the hint to create it first). */
int ck_kafka_not_found(kafka_client_t *kc, ck_error_t *err);
/* A topic created a moment ago may not be in every broker's metadata yet: "does not exist" is
 * believed after this long. */
#define CK_KAFKA_TOPIC_GRACE_MS 2000
#define CK_KAFKA_ATTEMPT_MS 2000

/* Logs a librdkafka error for this client, rate-limited: a new error code at once, the same one
 * again at most every CK_KAFKA_LOG_EVERY_MS with the count of those suppressed meanwhile. */
void ck_kafka_log_error(kafka_client_t *kc, int code, const char *reason);

/* The sink's `key` option: the comma-separated column names (spaces around them ignored, matched
 * case-insensitively), as column indexes into *cols (ck_malloc'd; *n of them). */
int ck_kafka_parse_key(const ck_schema_t *schema, const char *key, int **cols, int *n,
                       ck_error_t *err);

/* Fills err from a librdkafka error code: CK_EREMOTE (or `code`), origin "kafka". */
int ck_kafka_error(ck_error_t *err, int code, rd_kafka_resp_err_t rerr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- the source's position (its checkpoint state) ----
 * Version 1: u8 version, uvarint topic length, topic bytes, uvarint count, then per partition
 * uvarint partition, uvarint next offset (the offset of the next record to read).
 * Version 2 (what the source writes): version 1's fields, each partition followed by uvarint
 * run start + 1 (the offset this run began reading the partition at; 0: not known), then the
 * log's identity: uvarint cluster id length + its bytes (0: not known), u8 topic id present
 * (0/1) and, when 1, its 16 bytes. Both versions decode; a state of either is restored. */
#define CK_KAFKA_SNAP_VERSION 2

typedef struct ck_kafka_pos {
  int32_t partition;
  int64_t offset;
} ck_kafka_pos_t;

/* Which log the positions belong to, and where this run began (version 2). */
typedef struct ck_kafka_ident {
  ck_str_t cluster_id;  /* the brokers' cluster id; len 0: not known */
  bool has_topic_id;
  uint8_t topic_id[16]; /* the topic's id (Kafka 2.8+), as Metadata v10 gives it */
} ck_kafka_ident_t;

/* Version 1 (no identity, no run start). */
void ck_kafka_snap_encode(ck_buf_t *out, const char *topic, const ck_kafka_pos_t *pos, int n);
/* Version 2: starts[i] is partition i's run start (-1: not known); id may be NULL. */
void ck_kafka_snap_encode_ident(ck_buf_t *out, const char *topic, const ck_kafka_pos_t *pos,
                                int n, const int64_t *starts, const ck_kafka_ident_t *id);
/* On success *topic points into data and *pos is a ck_malloc'd array of *n entries (the
 * caller frees it). A truncated, over-long or unknown-version state is CK_ESTATE. */
int ck_kafka_snap_decode(const void *data, size_t len, ck_str_t *topic, ck_kafka_pos_t **pos,
                         int *n, ck_error_t *err);
/* The same, with what version 2 adds: *starts (ck_malloc'd, *n entries, -1 where not known;
 * all -1 for version 1) and *id (cluster_id points into data; zeroed for version 1). */
int ck_kafka_snap_decode_ident(const void *data, size_t len, ck_str_t *topic,
                               ck_kafka_pos_t **pos, int64_t **starts, int *n,
                               ck_kafka_ident_t *id, int *version, ck_error_t *err);
/* The topic id as Kafka prints it (URL-safe base64, no padding: 22 characters) into out. */
void ck_kafka_topic_id_str(const uint8_t id[16], char out[23]);

#endif
