/*
 * DESIGN: helpers shared by the unit tests that talk to the real Kafka broker
 * (test_connectors_kafka_broker.c, test_connectors_kafka_eos.c). Include after <cmocka.h>.
 */
#ifndef CK_TEST_KAFKA_UTIL_H
#define CK_TEST_KAFKA_UTIL_H

#include <stdbool.h>

#include <librdkafka/rdkafka.h>

#include "connectors/kafka/ktopic.h"

/* Creates topic with nparts partitions and waits until every partition has a leader that
 * answers (connectors/kafka/ktopic.h, the helper every tool uses); fails the test on any error
 * or when that takes longer than deadline_ms. */
static inline void ck_test_create_topic(rd_kafka_t *rk, const char *topic, int nparts,
                                        int deadline_ms) {
  ck_error_t err;
  ck_error_clear(&err);
  if (ck_kafka_topic_create(rk, topic, nparts, NULL, 0, false, deadline_ms, &err))
    fail_msg("%s", err.message);
}

#endif
