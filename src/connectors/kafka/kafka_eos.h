/*
 * DESIGN: the exactly-once Kafka sink's identities and checkpoint state (kafka_sink.c), shared
 * with its unit tests (tests/unit/test_connectors_kafka_eos.c). Private to
 * src/connectors/kafka/.
 *
 * Identity: a sink instance's transactional ids and marker group derive from a 64-bit identity
 * hashing the job (the script's real path, or "<-e>"), the SQL table, the topic and an
 * instance number (0 unless two sink nodes of the job write the same table: see kafka_sink.c):
 *   transactional.id  "clink-<identity as 16 hex digits>-<subtask>-<slot>"   slot 0 or 1
 *   marker group      "clink-sink-<identity as 16 hex digits>-<subtask>"
 * A rerun computes the same identity, so its producers fence those of a dead incarnation; a
 * restored sink adopts the identity its checkpoint state names, whatever it computes.
 *
 * State (the sink section of a snapshot), all varints unsigned LEB128:
 *   u8 version (1), u8 mode (1: exactly once; an at-least-once sink writes no state),
 *   8 bytes identity (little-endian), uvarint checkpoint N, u8 slot holding N's transaction,
 *   uvarint prev (an older checkpoint whose transaction still awaited its commit when N was
 *   prepared, 0 for none), u8 held, and when held: uvarint count, then per message
 *   uvarint key length + 1 (0: no key), the key, uvarint value length + 1 (0: no value), the
 *   value — the interval's messages, kept so that recover can write them again.
 *
 * Threads: pure functions.
 */
#ifndef CK_CONNECTORS_KAFKA_KAFKA_EOS_H
#define CK_CONNECTORS_KAFKA_KAFKA_EOS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "runtime/connector.h"

#define CK_KAFKA_SINK_STATE_VERSION 1
#define CK_KAFKA_SINK_MODE_EOS 1
#define CK_KAFKA_TXN_SLOTS 2
#define CK_KAFKA_ID_MAX 96

typedef struct ck_kafka_txn_state {
  uint64_t identity;
  int64_t ckpt;
  int slot;
  int64_t prev;
  bool held;
  uint64_t nheld;
  const uint8_t *msgs; /* decode: points into the state; nheld messages, msgs_len bytes */
  size_t msgs_len;
} ck_kafka_txn_state_t;

uint64_t ck_kafka_sink_identity(const char *job, const char *table, const char *topic,
                                int instance);
void ck_kafka_txn_id(uint64_t identity, int subtask, int slot, char *out, size_t n);
void ck_kafka_marker_group(uint64_t identity, int subtask, char *out, size_t n);

/* Appends one message to a held list (the format of the state's message list). */
void ck_kafka_held_append(ck_buf_t *held, const void *key, size_t key_len, const void *val,
                          size_t val_len);
/* The next message of a validated list; false at its end. key/val are NULL when absent. */
bool ck_kafka_held_next(const uint8_t **p, const uint8_t *end, const void **key,
                        size_t *key_len, const void **val, size_t *val_len);

/* st->msgs/msgs_len/nheld are ignored: held_msgs (NULL: none) holds st->nheld messages. */
void ck_kafka_txn_state_encode(ck_buf_t *out, const ck_kafka_txn_state_t *st,
                               const ck_buf_t *held_msgs);
/* A truncated, over-long or unknown-version state is CK_ESTATE. */
int ck_kafka_txn_state_decode(const void *data, size_t len, ck_kafka_txn_state_t *st,
                              ck_error_t *err);
/* "clink ckpt=<N>" → N; -1 when the text is not ours. */
int64_t ck_kafka_marker_parse(const char *metadata, size_t len);

/* A live exactly-once sink's transactional id of a slot ("" before its producers exist, NULL
 * for an at-least-once sink) and its marker group: for tests and logs. */
const char *ck_kafka_sink_txn_id(const ck_sink_t *sink, int slot);
const char *ck_kafka_sink_marker_group(const ck_sink_t *sink);

#endif
