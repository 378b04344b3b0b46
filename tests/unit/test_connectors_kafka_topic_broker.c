/*
 * DESIGN: the one topic-creation helper (connectors/kafka/ktopic.h) against the real broker
 * scripts/services.sh starts (CLINK_KAFKA_BROKERS). When ck_kafka_topic_create returns, every
 * partition must already answer ListOffsets from its leader and take a produce: the tools that
 * create topics (nexmark_gen, the unit tests' helper) read offsets right after it, and on a
 * just-started broker that used to fail with "Not leader for partition". Also: an existing topic
 * is refused unless exist_ok, and a wait for a topic that never appears ends at its deadline
 * naming the topic.
 *
 * Threads: the main thread (librdkafka runs its own).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "base/buf.h"
#include "base/time.h"
#include "connectors/kafka/ktopic.h"

#define DEADLINE_MS 30000

static rd_kafka_t *producer(void) {
  const char *b = getenv("CLINK_KAFKA_BROKERS");
  if (!b || !*b)
    fail_msg("CLINK_KAFKA_BROKERS is not set: start the services and export their settings "
             "first: scripts/services.sh start && eval \"$(scripts/services.sh env)\"");
  char why[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", b, why, sizeof why) ||
      rd_kafka_conf_set(conf, "linger.ms", "0", why, sizeof why) ||
      rd_kafka_conf_set(conf, "message.send.max.retries", "0", why, sizeof why))
    fail_msg("%s", why);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof why);
  if (!rk) fail_msg("could not create a client: %s", why);
  return rk;
}

static void topic_name(char *out, size_t n, const char *what) {
  snprintf(out, n, "ckunit_topic_%s_%d_%lld", what, (int)getpid(), (long long)ck_wall_ms());
}

static void created_topic_answers_at_once(void **state) {
  (void)state;
  rd_kafka_t *rk = producer();
  char topic[128];
  topic_name(topic, sizeof topic, "ready");
  static const char *const config[] = {"retention.ms", "-1"};
  ck_error_t err;
  ck_error_clear(&err);
  int rc = ck_kafka_topic_create(rk, topic, 6, config, 1, false, DEADLINE_MS, &err);
  if (rc) fail_msg("%s", err.message);
  /* no retry from here on: each partition's leader answers the first request */
  for (int p = 0; p < 6; p++) {
    int64_t lo = -1, hi = -1;
    rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, 5000);
    if (e) fail_msg("partition %d: %s", p, rd_kafka_err2str(e));
    assert_int_equal(lo, 0);
    assert_int_equal(hi, 0);
    e = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(p),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_VALUE("x", 1),
                          RD_KAFKA_V_END);
    if (e) fail_msg("produce to partition %d: %s", p, rd_kafka_err2str(e));
  }
  assert_int_equal(rd_kafka_flush(rk, DEADLINE_MS), 0);
  /* an existing topic: refused, unless the caller says it may exist (then just waited for) */
  rc = ck_kafka_topic_create(rk, topic, 6, NULL, 0, false, DEADLINE_MS, &err);
  assert_int_equal(rc, CK_EEXISTS);
  assert_non_null(strstr(err.message, topic));
  ck_error_clear(&err);
  rc = ck_kafka_topic_create(rk, topic, 6, NULL, 0, true, DEADLINE_MS, &err);
  if (rc) fail_msg("%s", err.message);
  rd_kafka_destroy(rk);
}

static void a_topic_that_never_comes_times_out_naming_it(void **state) {
  (void)state;
  rd_kafka_t *rk = producer();
  char topic[128];
  topic_name(topic, sizeof topic, "absent");
  ck_error_t err;
  ck_error_clear(&err);
  int64_t t0 = ck_mono_ms();
  int rc = ck_kafka_topic_wait(rk, topic, 1, 300, &err);
  assert_int_equal(rc, CK_ETIMEOUT);
  assert_true(ck_mono_ms() - t0 < 10000);
  assert_non_null(strstr(err.message, topic));
  assert_non_null(strstr(err.message, "not in metadata"));
  rd_kafka_destroy(rk);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(created_topic_answers_at_once),
      cmocka_unit_test(a_topic_that_never_comes_times_out_naming_it),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
