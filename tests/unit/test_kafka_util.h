/*
 * DESIGN: helpers shared by the unit tests that talk to the real Kafka broker
 * (test_connectors_kafka_broker.c, test_connectors_kafka_eos.c). Include after <cmocka.h>.
 */
#ifndef CK_TEST_KAFKA_UTIL_H
#define CK_TEST_KAFKA_UTIL_H

#include <stdbool.h>

#include <librdkafka/rdkafka.h>

#include "base/time.h"

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
  /* created is not yet visible: a broker that just started answers metadata requests for a
   * new topic with "unknown" (or partitions without a leader) for a moment, and a connector
   * opened then would rightly report a missing topic. Wait until every partition has one. */
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
  int64_t until = ck_mono_ms() + deadline_ms;
  for (;;) {
    const struct rd_kafka_metadata *md = NULL;
    bool ready = false;
    if (rd_kafka_metadata(rk, 0, rkt, &md, 2000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      ready = md->topic_cnt == 1 && !md->topics[0].err &&
              md->topics[0].partition_cnt == nparts;
      for (int p = 0; ready && p < md->topics[0].partition_cnt; p++)
        ready = md->topics[0].partitions[p].leader >= 0 && !md->topics[0].partitions[p].err;
      rd_kafka_metadata_destroy(md);
    }
    if (ready) break;
    if (ck_mono_ms() > until) fail_msg("topic %s was created but not visible within %d ms", topic,
                                       deadline_ms);
    ck_sleep_ms(20);
  }
  rd_kafka_topic_destroy(rkt);
}

#endif
