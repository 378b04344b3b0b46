/* DESIGN: see ktopic.h. */
#include "connectors/kafka/ktopic.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/time.h"

int ck_kafka_topic_create(rd_kafka_t *rk, const char *topic, int nparts,
                          const char *const *configs, int nconfig, bool exist_ok,
                          int deadline_ms, ck_error_t *err) {
  char why[512];
  int rc = 0;
  int64_t until = ck_mono_ms() + deadline_ms;
  rd_kafka_queue_t *q = NULL;
  rd_kafka_event_t *ev = NULL;
  rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, nparts, 1, why, sizeof why);
  if (!nt) return ck_error_set(err, CK_EINVAL, "could not create topic '%s': %s", topic, why);
  for (int i = 0; i < nconfig; i++)
    if (rd_kafka_NewTopic_set_config(nt, configs[2 * i], configs[2 * i + 1])) {
      rc = ck_error_set(err, CK_EINVAL, "could not create topic '%s': bad configuration '%s'",
                        topic, configs[2 * i]);
      goto fail;
    }
  q = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
  ev = rd_kafka_queue_poll(q, deadline_ms);
  if (!ev) {
    rc = ck_error_set(err, CK_ETIMEOUT, "could not create topic '%s': no answer within %d ms",
                      topic, deadline_ms);
    goto fail;
  }
  if (rd_kafka_event_error(ev)) {
    rc = ck_error_set(err, CK_EREMOTE, "could not create topic '%s': %s", topic,
                      rd_kafka_event_error_string(ev));
    goto fail;
  }
  size_t n = 0;
  const rd_kafka_topic_result_t **tr =
      rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
  rd_kafka_resp_err_t e = n == 1 ? rd_kafka_topic_result_error(tr[0]) : RD_KAFKA_RESP_ERR__FAIL;
  if (e && !(exist_ok && e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)) {
    rc = ck_error_set(err, e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS ? CK_EEXISTS : CK_EREMOTE,
                      "could not create topic '%s': %s", topic,
                      n == 1 ? rd_kafka_topic_result_error_string(tr[0]) : "no result");
    goto fail;
  }
  int left = (int)(until - ck_mono_ms());
  rc = ck_kafka_topic_wait(rk, topic, nparts, left > 0 ? left : 1, err);
fail:
  if (ev) rd_kafka_event_destroy(ev);
  if (q) rd_kafka_queue_destroy(q);
  rd_kafka_NewTopic_destroy(nt);
  return rc;
}

/* True when every partition is ready; else the first partition that is not (-1: the topic
 * itself) through *bad, with the reason in why. */
static bool topic_ready(rd_kafka_t *rk, const char *topic, int nparts, int *bad, char *why,
                        size_t whylen) {
  const struct rd_kafka_metadata *md = NULL;
  *bad = -1;
  /* every topic's metadata: asking for one by name may have the broker auto-create it */
  rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, NULL, &md, 2000);
  if (e) return snprintf(why, whylen, "metadata: %s", rd_kafka_err2str(e)), false;
  const struct rd_kafka_metadata_topic *mt = NULL;
  for (int t = 0; t < md->topic_cnt && !mt; t++)
    if (!strcmp(md->topics[t].topic, topic)) mt = &md->topics[t];
  bool ok = mt && !mt->err;
  if (!ok) snprintf(why, whylen, "%s", mt ? rd_kafka_err2str(mt->err) : "not in metadata");
  else if (nparts && mt->partition_cnt != nparts)
    ok = false, snprintf(why, whylen, "%d partitions in metadata", mt->partition_cnt);
  else if (mt->partition_cnt == 0)
    ok = false, snprintf(why, whylen, "no partitions in metadata");
  for (int p = 0; ok && p < mt->partition_cnt; p++) {
    const struct rd_kafka_metadata_partition *mp = &mt->partitions[p];
    *bad = mp->id;
    if (mp->err || mp->leader < 0) {
      ok = false;
      snprintf(why, whylen, "%s", mp->err ? rd_kafka_err2str(mp->err) : "no leader");
      break;
    }
    int64_t lo, hi; /* the leader must also act as one */
    e = rd_kafka_query_watermark_offsets(rk, topic, mp->id, &lo, &hi, 2000);
    if (e) ok = false, snprintf(why, whylen, "offsets: %s", rd_kafka_err2str(e));
  }
  rd_kafka_metadata_destroy(md);
  return ok;
}

int ck_kafka_topic_wait(rd_kafka_t *rk, const char *topic, int nparts, int deadline_ms,
                        ck_error_t *err) {
  int64_t until = ck_mono_ms() + deadline_ms;
  char why[256] = "";
  int bad = -1;
  for (;;) {
    if (topic_ready(rk, topic, nparts, &bad, why, sizeof why)) break;
    if (ck_mono_ms() > until) {
      if (bad < 0)
        ck_error_set(err, CK_ETIMEOUT, "topic '%s' is not ready after %d ms: %s", topic,
                     deadline_ms, why);
      else
        ck_error_set(err, CK_ETIMEOUT, "partition %d of topic '%s' is not ready after %d ms: %s",
                     bad, topic, deadline_ms, why);
      ck_error_hint(err, "is the broker still starting? wait for it, or give it more time");
      return CK_ETIMEOUT;
    }
    ck_sleep_ms(20);
  }
  return 0;
}
