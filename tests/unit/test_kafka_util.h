/*
 * DESIGN: helpers shared by the unit tests that talk to the real Kafka broker
 * (test_connectors_kafka_broker.c, test_connectors_kafka_eos.c). Include after <cmocka.h>.
 */
#ifndef CK_TEST_KAFKA_UTIL_H
#define CK_TEST_KAFKA_UTIL_H

#include <librdkafka/rdkafka.h>

/* Creates topic with nparts partitions through rk's admin API; fails the test on any error or
 * when the broker does not answer within deadline_ms. */
static inline void ck_test_create_topic(rd_kafka_t *rk, const char *topic, int nparts,
                                        int deadline_ms) {
  char why[512];
  rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, nparts, 1, why, sizeof why);
  assert_non_null(nt);
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, deadline_ms);
  if (!ev) fail_msg("no answer to creating topic %s within %d ms", topic, deadline_ms);
  const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
  assert_non_null(res);
  size_t n;
  const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(res, &n);
  assert_int_equal(n, 1);
  if (rd_kafka_topic_result_error(tr[0]))
    fail_msg("could not create topic %s: %s", topic, rd_kafka_topic_result_error_string(tr[0]));
  rd_kafka_event_destroy(ev);
  rd_kafka_NewTopic_destroy(nt);
  rd_kafka_queue_destroy(q);
}

#endif
