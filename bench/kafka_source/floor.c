/*
 * floor.c — what librdkafka alone costs to read a topic the way clink's Kafka source reads it:
 * the floor under `clink run` from Kafka, since no decoder or engine can cost less than the
 * client that hands it the records.
 *
 * DESIGN: one process, one consumer, every partition of the topic read from its low to its high
 * watermark (as at start-up) with the source's own pattern and defaults
 * (src/connectors/kafka/kafka_source.c): each partition's queue detached from the consumer queue,
 * an explicit assignment, rd_kafka_consume_batch_queue of up to 1024 messages per call,
 * rd_kafka_message_destroy per message, and the same consumer properties (prefetch split over
 * the partitions, 2 MiB per-partition fetches). -X name=value overrides or adds a property, as
 * 'kafka.<name>' does in a table. --touch reads every value's bytes (a checksum), as a decoder
 * must: without it the values are fetched but never looked at. Prints the records and bytes read
 * and the checksum; the CPU is measured from outside (bench.py, or harness.py run).
 * Threads: the main thread, and librdkafka's own.
 *
 * Build:  cc -O2 -o floor bench/kafka_source/floor.c -lrdkafka
 * Usage:  floor --brokers HOST:PORT --topic T [--touch] [-X name=value ...]
 */
#include <librdkafka/rdkafka.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define MAX_PARTS 256
#define BATCH 1024

static void die(const char *what, const char *why) {
  fprintf(stderr, "floor: %s: %s\n", what, why);
  exit(1);
}

static void set(rd_kafka_conf_t *conf, const char *name, const char *value) {
  char e[512];
  if (rd_kafka_conf_set(conf, name, value, e, sizeof e) != RD_KAFKA_CONF_OK)
    die(name, e);
}

int main(int argc, char **argv) {
  const char *brokers = NULL, *topic = NULL;
  const char *over[64];
  int nover = 0, touch = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--brokers") && i + 1 < argc) brokers = argv[++i];
    else if (!strcmp(argv[i], "--topic") && i + 1 < argc) topic = argv[++i];
    else if (!strcmp(argv[i], "--touch")) touch = 1;
    else if (!strcmp(argv[i], "-X") && i + 1 < argc && nover < 64) over[nover++] = argv[++i];
    else die("usage", "floor --brokers HOST:PORT --topic T [--touch] [-X name=value ...]");
  }
  if (!brokers || !topic) die("usage", "--brokers and --topic are required");

  char e[512];
  rd_kafka_conf_t *pconf = rd_kafka_conf_new();
  set(pconf, "bootstrap.servers", brokers);
  rd_kafka_t *probe = rd_kafka_new(RD_KAFKA_CONSUMER, pconf, e, sizeof e);
  if (!probe) die("probe", e);
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(probe, topic, NULL);
  const struct rd_kafka_metadata *md;
  rd_kafka_resp_err_t err = rd_kafka_metadata(probe, 0, rkt, &md, 10000);
  if (err) die("metadata", rd_kafka_err2str(err));
  if (md->topic_cnt < 1 || md->topics[0].err) die(topic, "no such topic");
  int n = md->topics[0].partition_cnt;
  if (n > MAX_PARTS) n = MAX_PARTS;
  rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(rkt);
  int64_t lo[MAX_PARTS], hi[MAX_PARTS], next[MAX_PARTS];
  for (int p = 0; p < n; p++) {
    err = rd_kafka_query_watermark_offsets(probe, topic, p, &lo[p], &hi[p], 10000);
    if (err) die("watermarks", rd_kafka_err2str(err));
    next[p] = lo[p];
  }
  rd_kafka_destroy(probe);

  /* the Kafka source's defaults (kafka_source.c, src_open) */
  char prefetch[32];
  long kb = 131072 / n;
  kb = kb < 4096 ? 4096 : kb > 65536 ? 65536 : kb;
  snprintf(prefetch, sizeof prefetch, "%ld", kb);
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", brokers);
  set(conf, "group.id", "clink-floor");
  set(conf, "enable.auto.commit", "false");
  set(conf, "enable.auto.offset.store", "false");
  set(conf, "isolation.level", "read_committed");
  set(conf, "enable.partition.eof", "true");
  set(conf, "max.partition.fetch.bytes", "2097152");
  set(conf, "queued.max.messages.kbytes", prefetch);
  set(conf, "fetch.wait.max.ms", "100");
  for (int i = 0; i < nover; i++) {
    char name[256];
    const char *eq = strchr(over[i], '=');
    if (!eq || (size_t)(eq - over[i]) >= sizeof name) die(over[i], "expected -X name=value");
    memcpy(name, over[i], (size_t)(eq - over[i]));
    name[eq - over[i]] = 0;
    set(conf, name, eq + 1);
  }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, e, sizeof e);
  if (!rk) die("consumer", e);
  int evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  static const uint64_t one = 1;
  rd_kafka_queue_t *q[MAX_PARTS];
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n);
  int left = 0;
  for (int p = 0; p < n; p++) {
    q[p] = rd_kafka_queue_get_partition(rk, topic, p);
    rd_kafka_queue_forward(q[p], NULL);
    rd_kafka_queue_io_event_enable(q[p], evfd, &one, sizeof one);
    rd_kafka_topic_partition_list_add(l, topic, p)->offset = lo[p];
    if (hi[p] > lo[p]) left++;
  }
  if ((err = rd_kafka_assign(rk, l))) die("assign", rd_kafka_err2str(err));
  rd_kafka_topic_partition_list_destroy(l);

  rd_kafka_message_t *msgs[BATCH];
  long long records = 0, bytes = 0;
  uint64_t sum = 0;
  while (left > 0) {
    int got = 0;
    for (int p = 0; p < n; p++) {
      if (next[p] >= hi[p]) continue;
      ssize_t k = rd_kafka_consume_batch_queue(q[p], 0, msgs, BATCH);
      for (ssize_t j = 0; j < k; j++) {
        rd_kafka_message_t *m = msgs[j];
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF && next[p] < hi[p] && m->offset >= hi[p]) {
          next[p] = m->offset; /* the end, past transaction markers */
          left--;
        } else if (!m->err && next[p] < hi[p]) {
          records++;
          bytes += (long long)m->len;
          if (touch) {
            const unsigned char *b = m->payload;
            size_t i = 0;
            for (; i + 8 <= m->len; i += 8) {
              uint64_t w;
              memcpy(&w, b + i, 8);
              sum += w;
            }
            for (; i < m->len; i++) sum += b[i];
          }
          next[p] = m->offset + 1;
          if (next[p] >= hi[p]) left--;
        }
        rd_kafka_message_destroy(m);
      }
      got += (int)(k > 0);
    }
    if (!got) {
      struct pollfd pfd = {.fd = evfd, .events = POLLIN};
      uint64_t v;
      (void)poll(&pfd, 1, 100);
      while (read(evfd, &v, sizeof v) == (ssize_t)sizeof v) {
      }
    }
  }
  printf("%lld records, %lld bytes of values, checksum %llu\n", records, bytes,
         (unsigned long long)sum);
  for (int p = 0; p < n; p++) {
    rd_kafka_queue_io_event_enable(q[p], -1, NULL, 0);
    ssize_t k;
    while ((k = rd_kafka_consume_batch_queue(q[p], 0, msgs, BATCH)) > 0)
      for (ssize_t j = 0; j < k; j++) rd_kafka_message_destroy(msgs[j]);
  }
  rd_kafka_assign(rk, NULL);
  rd_kafka_consumer_close(rk);
  for (int p = 0; p < n; p++) rd_kafka_queue_destroy(q[p]);
  rd_kafka_destroy(rk);
  close(evfd);
  return 0;
}
