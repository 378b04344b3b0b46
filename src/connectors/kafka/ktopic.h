/*
 * DESIGN: creating a Kafka topic and waiting until it can be used — the one helper every tool
 * that creates a topic calls (bench/nexmark/nexmark_gen.c, the unit tests' test_kafka_util.h;
 * the Python tools use its twin, scripts/kafka_topic.py).
 *
 * A created topic is not yet usable: a broker that just started answers a metadata request for
 * it with "unknown topic" or partitions without a leader for a moment, and even once metadata
 * names a leader, that broker may still answer ListOffsets (and produce) with "not leader for
 * partition" until it has taken the leadership on. So the wait is over only when every
 * partition has a leader in metadata AND answers a ListOffsets request. Runs on the caller's
 * thread; polls with a short sleep until the deadline.
 */
#ifndef CK_CONNECTORS_KAFKA_KTOPIC_H
#define CK_CONNECTORS_KAFKA_KTOPIC_H

#include <stdbool.h>

#include <librdkafka/rdkafka.h>

#include "base/error.h"

/* Creates topic with nparts partitions (replication factor 1) and the given "key", "value"
 * pairs of topic configuration (nconfig pairs; configs may be NULL), then waits for it
 * (ck_kafka_topic_wait). A topic that already exists is an error unless exist_ok, in which case
 * it is waited for like a new one (its partition count is the caller's to check). */
int ck_kafka_topic_create(rd_kafka_t *rk, const char *topic, int nparts,
                          const char *const *configs, int nconfig, bool exist_ok,
                          int deadline_ms, ck_error_t *err);

/* Waits until topic has nparts partitions (any number when nparts is 0), each with a leader that
 * answers ListOffsets. CK_ETIMEOUT after deadline_ms, naming the partition still not ready and
 * why. */
int ck_kafka_topic_wait(rd_kafka_t *rk, const char *topic, int nparts, int deadline_ms,
                        ck_error_t *err);

#endif
