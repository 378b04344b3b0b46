/*
 * DESIGN: nexmark_gen — fills a Kafka topic with the Nexmark events 0..N-1 as flat JSON,
 * idempotently. The events come from the engine's own model (src/connectors/nexmark.c), so
 * connector='nexmark' in process and this topic hold the same events.
 *
 *   nexmark_gen --brokers HOST:PORT --topic T --events N [--partitions P] [--seed S]
 *               [--event-rate R] [--check]
 *
 * Layout: event n goes to partition n mod P with key "<n>" (so each partition's timestamps
 * increase), value = the event's JSON object. Partition p must therefore end up holding
 * exactly the events p, p+P, p+2P, … below N, in that order: offset k holds event p + k·P.
 *
 * Idempotence. Before writing, each partition's low and high offsets are read (the topic is
 * created with P partitions when missing; another partition count is refused). A partition
 * whose first and last records are not byte for byte the events those offsets must hold, or
 * that holds more records than its share of N, was written with another seed, rate or range:
 * refused, naming the partition (use another topic). Otherwise only the missing tail of each
 * partition is produced — so running the same command twice writes nothing the second time,
 * and a run cut short is completed, never duplicated. The producer is idempotent
 * (enable.idempotence: librdkafka's retries neither duplicate nor reorder), and at the end
 * every partition's end offset is checked against its share again. --check only verifies.
 *
 * Exit status: 0 when the topic holds exactly events 0..N-1 of this configuration, 1 when
 * it does not (or could not be filled), 2 for usage errors.
 *
 * Threads: the main thread, plus librdkafka's own (delivery reports are served on the main
 * thread inside rd_kafka_poll / rd_kafka_flush).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "connectors/kafka/ktopic.h"
#include "connectors/nexmark.h"

#define TIMEOUT_MS 30000

typedef struct gen_opts {
  const char *brokers, *topic;
  int64_t events;
  int partitions;
  ck_nexmark_cfg_t cfg;
  int check_only, delete;
} gen_opts_t;

static int64_t delivered, failed;
static char fail_reason[256];

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "nexmark_gen: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  if (!m->err) {
    delivered++;
    return;
  }
  if (failed++ == 0)
    snprintf(fail_reason, sizeof fail_reason, "partition %d: %s", (int)m->partition,
             rd_kafka_err2str(m->err));
}

static rd_kafka_t *client(rd_kafka_type_t type, const gen_opts_t *o) {
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  struct {
    const char *k, *v;
  } producer[] = {{"enable.idempotence", "true"}, {"acks", "all"},
                  {"linger.ms", "20"},            {"batch.size", "1000000"},
                  {"queue.buffering.max.kbytes", "262144"},
                  {"queue.buffering.max.messages", "1000000"}},
    consumer[] = {{"group.id", "clink-nexmark-gen"}, {"enable.auto.commit", "false"},
                  {"enable.partition.eof", "true"}, {"isolation.level", "read_uncommitted"}};
  if (rd_kafka_conf_set(conf, "bootstrap.servers", o->brokers, errstr, sizeof errstr))
    die("could not configure the client: %s", errstr);
  size_t n = type == RD_KAFKA_PRODUCER ? sizeof producer / sizeof *producer
                                       : sizeof consumer / sizeof *consumer;
  for (size_t i = 0; i < n; i++) {
    const char *k = type == RD_KAFKA_PRODUCER ? producer[i].k : consumer[i].k;
    const char *v = type == RD_KAFKA_PRODUCER ? producer[i].v : consumer[i].v;
    if (rd_kafka_conf_set(conf, k, v, errstr, sizeof errstr))
      die("could not set '%s': %s", k, errstr);
  }
  if (type == RD_KAFKA_PRODUCER) rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
  rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
  if (!rk) die("could not create a Kafka client: %s", errstr);
  return rk;
}

/* Partitions of the topic (0 when it does not exist, -1 while a partition has no leader).
 * Asks for every topic's metadata: asking for one by name would have the broker auto-create
 * it with its default partition count. */
static int topic_partitions(rd_kafka_t *rk, const char *topic) {
  const struct rd_kafka_metadata *md;
  rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, NULL, &md, TIMEOUT_MS);
  if (e) die("could not read the metadata of topic '%s': %s", topic, rd_kafka_err2str(e));
  int n = 0;
  for (int t = 0; t < md->topic_cnt; t++) {
    if (strcmp(md->topics[t].topic, topic) != 0 || md->topics[t].err) continue;
    n = md->topics[t].partition_cnt;
    for (int p = 0; p < md->topics[t].partition_cnt; p++)
      if (md->topics[t].partitions[p].leader < 0) n = -1;
  }
  rd_kafka_metadata_destroy(md);
  return n;
}

/* Creates the topic and waits until each partition's leader answers (connectors/kafka/ktopic.h):
 * reading offsets right after creating it on a just-started broker used to fail with "Not
 * leader for partition". */
static void create_topic(rd_kafka_t *rk, const char *topic, int partitions) {
  static const char *const config[] = {"retention.ms", "-1"};
  ck_error_t err;
  ck_error_clear(&err);
  if (ck_kafka_topic_create(rk, topic, partitions, config, 1, true, TIMEOUT_MS, &err))
    die("%s", err.message);
}

static void delete_topic(rd_kafka_t *rk, const char *topic) {
  rd_kafka_DeleteTopic_t *dt = rd_kafka_DeleteTopic_new(topic);
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_DeleteTopics(rk, &dt, 1, NULL, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, TIMEOUT_MS);
  if (!ev) die("could not delete topic '%s': no answer within %d ms", topic, TIMEOUT_MS);
  size_t cnt;
  const rd_kafka_topic_result_t **tr =
      rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), &cnt);
  if (rd_kafka_event_error(ev))
    die("could not delete topic '%s': %s", topic, rd_kafka_event_error_string(ev));
  if (cnt == 1 && rd_kafka_topic_result_error(tr[0]))
    die("could not delete topic '%s': %s", topic, rd_kafka_topic_result_error_string(tr[0]));
  rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_DeleteTopic_destroy(dt);
}

/* The record at (partition, offset), copied into key/val. */
static void read_record(rd_kafka_t *rk, const char *topic, int p, int64_t off, ck_buf_t *key,
                        ck_buf_t *val) {
  rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(tp, topic, p)->offset = off;
  rd_kafka_resp_err_t e = rd_kafka_assign(rk, tp);
  rd_kafka_topic_partition_list_destroy(tp);
  if (e) die("could not read partition %d of '%s': %s", p, topic, rd_kafka_err2str(e));
  for (int waited = 0; waited < TIMEOUT_MS; waited += 500) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
    if (!m) continue;
    if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
      die("could not read partition %d offset %" PRId64 " of '%s': %s", p, off, topic,
          rd_kafka_message_errstr(m));
    if (!m->err && m->partition == p && m->offset == off) {
      ck_buf_reset(key);
      ck_buf_reset(val);
      ck_buf_append(key, m->key, m->key_len);
      ck_buf_append(val, m->payload, m->len);
      rd_kafka_message_destroy(m);
      return;
    }
    rd_kafka_message_destroy(m);
  }
  die("could not read partition %d offset %" PRId64 " of '%s' within %d ms", p, off, topic,
      TIMEOUT_MS);
}

/* Events partition p must hold. */
static int64_t share(const gen_opts_t *o, int p) {
  return o->events > p ? (o->events - p + o->partitions - 1) / o->partitions : 0;
}

/* Checks what partition p holds against the events it must hold; returns its record count. */
static int64_t verify_partition(rd_kafka_t *rk, rd_kafka_t *cons, const gen_opts_t *o,
                                const ck_nexmark_gen_t *gen, int p, ck_buf_t *want) {
  int64_t lo, hi;
  rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(rk, o->topic, p, &lo, &hi, TIMEOUT_MS);
  if (e) die("could not read the offsets of partition %d of '%s': %s", p, o->topic,
             rd_kafka_err2str(e));
  if (lo != 0)
    die("partition %d of '%s' starts at offset %" PRId64 ", not 0: records were deleted, so "
        "what it holds cannot be verified (use another topic)", p, o->topic, lo);
  if (hi > share(o, p))
    die("partition %d of '%s' holds %" PRId64 " records, more than the %" PRId64 " events of "
        "0..%" PRId64 " it should: it was filled with another range (use another topic)",
        p, o->topic, hi, share(o, p), o->events - 1);
  ck_buf_t key, val;
  ck_buf_init(&key);
  ck_buf_init(&val);
  int64_t offs[2] = {0, hi - 1};
  for (int i = 0; i < (hi > 1 ? 2 : hi); i++) {
    uint64_t n = (uint64_t)p + (uint64_t)offs[i] * (uint64_t)o->partitions;
    ck_nexmark_event_t ev;
    ck_nexmark_gen_event(gen, n, &ev);
    ck_buf_reset(want);
    ck_nexmark_event_json(&ev, want);
    read_record(cons, o->topic, p, offs[i], &key, &val);
    char k[24];
    int kl = snprintf(k, sizeof k, "%" PRIu64, n);
    if (key.len != (size_t)kl || memcmp(key.data, k, (size_t)kl) != 0 || val.len != want->len ||
        memcmp(val.data, want->data, want->len) != 0)
      die("partition %d of '%s' offset %" PRId64 " does not hold event %" PRIu64 " of this "
          "configuration (seed %" PRIu64 ", rate %" PRId64 "/s): it was filled differently "
          "(use another topic)", p, o->topic, offs[i], n, o->cfg.seed, o->cfg.event_rate);
  }
  ck_buf_fini(&key);
  ck_buf_fini(&val);
  return hi;
}

static void usage(void) {
  fprintf(stderr,
          "usage: nexmark_gen --brokers HOST:PORT --topic T --events N [--partitions P (4)]\n"
          "                   [--seed S (0)] [--event-rate R (10000)] [--check]\n"
          "       nexmark_gen --brokers HOST:PORT --topic T --delete\n");
  exit(2);
}

int main(int argc, char **argv) {
  gen_opts_t o = {0};
  o.partitions = 4;
  o.events = -1;
  ck_nexmark_cfg_default(&o.cfg);
  static const struct option longs[] = {
      {"brokers", required_argument, 0, 'b'}, {"topic", required_argument, 0, 't'},
      {"events", required_argument, 0, 'n'},  {"partitions", required_argument, 0, 'p'},
      {"seed", required_argument, 0, 's'},    {"event-rate", required_argument, 0, 'r'},
      {"check", no_argument, 0, 'c'},         {"delete", no_argument, 0, 'd'},
      {0, 0, 0, 0}};
  for (int c; (c = getopt_long(argc, argv, "", longs, NULL)) != -1;) {
    switch (c) {
      case 'b': o.brokers = optarg; break;
      case 't': o.topic = optarg; break;
      case 'n': o.events = strtoll(optarg, NULL, 10); break;
      case 'p': o.partitions = atoi(optarg); break;
      case 's': o.cfg.seed = strtoull(optarg, NULL, 10); break;
      case 'r': o.cfg.event_rate = strtoll(optarg, NULL, 10); break;
      case 'c': o.check_only = 1; break;
      case 'd': o.delete = 1; break;
      default: usage();
    }
  }
  if (o.delete && o.brokers && o.topic) {
    rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, &o);
    delete_topic(rk, o.topic);
    rd_kafka_destroy(rk);
    printf("topic %s deleted\n", o.topic);
    return 0;
  }
  if (!o.brokers || !o.topic || o.events < 0 || o.partitions < 1 || o.cfg.event_rate < 1)
    usage();

  rd_kafka_t *prod = client(RD_KAFKA_PRODUCER, &o), *cons = client(RD_KAFKA_CONSUMER, &o);
  int have = topic_partitions(prod, o.topic);
  if (have == 0 && !o.check_only) {
    create_topic(prod, o.topic, o.partitions);
    have = topic_partitions(prod, o.topic);
  } else if (have != 0) { /* an existing topic on a just-started broker: the same wait */
    ck_error_t err;
    ck_error_clear(&err);
    if (ck_kafka_topic_wait(prod, o.topic, 0, TIMEOUT_MS, &err)) die("%s", err.message);
    have = topic_partitions(prod, o.topic);
  }
  if (have != o.partitions)
    die("topic '%s' has %d partitions, not %d (use another topic)", o.topic, have, o.partitions);

  ck_nexmark_gen_t *gen = ck_nexmark_gen_new(&o.cfg);
  ck_buf_t buf;
  ck_buf_init(&buf);
  int64_t *start = calloc((size_t)o.partitions, sizeof *start), present = 0;
  for (int p = 0; p < o.partitions; p++) present += start[p] = verify_partition(prod, cons, &o, gen, p, &buf);
  rd_kafka_consumer_close(cons);
  rd_kafka_destroy(cons);

  int64_t written = 0;
  if (present < o.events && o.check_only)
    die("topic '%s' holds %" PRId64 " of the %" PRId64 " events", o.topic, present, o.events);
  if (present < o.events) {
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(prod, o.topic, NULL);
    ck_nexmark_event_t ev;
    for (int64_t n = 0; n < o.events; n++) {
      int p = (int)(n % o.partitions);
      if (n / o.partitions < start[p]) continue; /* already there */
      ck_nexmark_gen_event(gen, (uint64_t)n, &ev);
      ck_buf_reset(&buf);
      ck_nexmark_event_json(&ev, &buf);
      char key[24];
      int kl = snprintf(key, sizeof key, "%" PRId64, n);
      while (rd_kafka_produce(rkt, p, RD_KAFKA_MSG_F_COPY, buf.data, buf.len, key, (size_t)kl,
                              NULL) != 0) {
        if (rd_kafka_last_error() != RD_KAFKA_RESP_ERR__QUEUE_FULL)
          die("could not produce event %" PRId64 ": %s", n, rd_kafka_err2str(rd_kafka_last_error()));
        rd_kafka_poll(prod, 10);
      }
      written++;
      if ((written & 0xffff) == 0) rd_kafka_poll(prod, 0);
      if (failed) break;
    }
    while (rd_kafka_outq_len(prod) > 0 && !failed) rd_kafka_flush(prod, 1000);
    rd_kafka_topic_destroy(rkt);
    if (failed) die("could not write the events: %s (%" PRId64 " failed)", fail_reason, failed);
    for (int p = 0; p < o.partitions; p++) {
      int64_t lo, hi;
      rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(prod, o.topic, p, &lo, &hi, TIMEOUT_MS);
      if (e || hi != share(&o, p))
        die("partition %d of '%s' ends at offset %" PRId64 " after writing, not %" PRId64,
            p, o.topic, hi, share(&o, p));
    }
  }
  printf("topic %s: events 0..%" PRId64 " (seed %" PRIu64 ", %" PRId64 " events/s of event "
         "time) in %d partitions: %" PRId64 " already there, %" PRId64 " written\n",
         o.topic, o.events - 1, o.cfg.seed, o.cfg.event_rate, o.partitions, present, written);
  free(start);
  ck_buf_fini(&buf);
  ck_nexmark_gen_free(gen);
  rd_kafka_destroy(prod);
  return 0;
}
