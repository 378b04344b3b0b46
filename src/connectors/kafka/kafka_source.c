/*
 * DESIGN: the Kafka source (connector='kafka' read from).
 *
 * Two ways to fetch, one source. fetcher 'clink' (what 'auto' picks unless a 'kafka.<property>'
 * option needs librdkafka): clink's own client (kfetch.h) reads the metadata and offsets at
 * open, and at each poll the source walks one partition's record set in place (krecords.h),
 * decoding each value straight into the batch; position, bounded ends, decode errors and
 * restore are the same as below, with record sets in place of librdkafka's queues (a set's
 * end also steps the position over transaction markers and aborted records). fetcher
 * 'librdkafka': everything below.
 *
 * Partitions. At open a short-lived probe client reads the topic's metadata (waiting with
 * backoff while the brokers cannot be reached; a missing topic is CK_ENOTFOUND at once) and the
 * owned partitions' low and high watermarks; the source owns partition p of n when
 * p mod parallelism == its subtask: the engine assigns, never a consumer group. Each owned
 * partition gets an explicit start position at open: the restored one, or its low or high
 * watermark per auto_offset_reset (queried once, so a partition never silently reads nothing).
 * Then the consumer is made, its prefetch sized for that many partitions (KAFKA_PREFETCH_KB),
 * and assigned those partitions at those offsets with rd_kafka_assign at the first poll (so
 * restore may come before or after open); it never subscribes, never commits, never reads the
 * group's committed offsets.
 *
 * Per-partition queues. Each owned partition's fetch queue is detached from the consumer queue
 * (rd_kafka_queue_get_partition + rd_kafka_queue_forward(q, NULL), before the assignment), so
 * messages of different partitions never mix, and every queue signals one eventfd when it
 * becomes non-empty. poll() takes partitions round-robin: it drains up to max_rows messages of
 * the first partition that has any (rd_kafka_consume_batch_queue, no wait), decodes each value
 * straight into the batch (the format decoder, or 'raw': the value as the one VARCHAR column),
 * and returns that partition's index. Only when no owned queue has anything does it wait on the
 * eventfd (drained before the last look, so a wake-up is never lost) for up to timeout_ms, or
 * until the engine's wake descriptor (ctx.wake_fd) is readable; clink's client waits on it
 * too (ck_kfetch_set_wake).
 * Every message dequeued is handled within the call, so nothing is buffered between polls.
 *
 * Position. The next offset to read per owned partition; it advances per message consumed
 * (offset + 1, skipped records included) and to the offset of a partition-EOF event, which
 * accounts for transaction markers and aborted records (they occupy offsets but are never
 * delivered under read_committed). Snapshots taken between polls are therefore exact cuts.
 * Encoding: ck_kafka_snap_encode_ident (kafka.h), version 2: beside the positions, where this
 * run began reading each partition (its start at open, or the restored position; an incident
 * scope's `from` for a run that began without state) and which log they belong to: the brokers'
 * cluster id (Metadata, or rd_kafka_clusterid) and the topic id (clink's client reads it at
 * open from Metadata v10; librdkafka 2.0 exposes none). Restore applies the positions of owned partitions;
 * a state of another topic is ignored with a warning; an owned partition missing from the state
 * (new since the checkpoint) starts at its earliest offset; a partition the state names that
 * the topic no longer has is an error naming it.
 *
 * Bounded reads (scan.bounded='latest'). Each owned partition's end is its high watermark at
 * open (the last stable offset under read_committed). A partition is done when its position
 * reaches the end (by a record, or by an EOF event: enable.partition.eof is on), or when a
 * record at or past the end arrives (not delivered); done partitions are paused. When every
 * owned partition is done, poll returns CK_SRC_END.
 *
 * Errors. on_decode_error 'fail': CK_EDECODE "could not decode record at topic 'T' partition P
 * offset O: reason", with the position left at that record; 'skip': counted (skipped()), the
 * first few logged, then every 10000th. A tombstone (NULL value) is a NULL row in 'raw' and is
 * ignored (counted in a debug line) by json and csv. When librdkafka reports a partition or
 * the topic unknown, poll asks the brokers (at most once a second) and a partition the topic no
 * longer has is CK_ENOTFOUND naming it; other fetch errors are logged, rate-limited, and retried
 * by librdkafka. close() unassigns and empties every partition queue before destroying the
 * client (an op left in a queue pins its partition and broker, and rd_kafka_destroy would wait
 * for ever).
 *
 * Threads: one instance per source subtask, called on its thread only; librdkafka's threads
 * fill the queues and write the eventfd.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/time.h"
#include "connectors/event_time.h"
#include "connectors/format.h"
#include "connectors/kafka/kafka.h"
#include "connectors/kafka/kfetch.h"

#define KAFKA_POLL_MSGS 1024 /* messages taken from a queue at a time */
#define KAFKA_SKIP_LOG_FIRST 10
#define KAFKA_CHECK_EVERY_MS 1000 /* at most one metadata check of a suspect topic per second */
/* Prefetch: librdkafka applies queued.max.messages.kbytes to each separate partition queue, so
 * the subtask's budget is split over its partitions, within [MIN, MAX] per partition. Measured
 * (bench/kafka_source): fetches of 2 MiB per partition and a deep queue cost the least CPU;
 * 8 MiB fetches cost more (page faults on fresh buffers), small queues stall the fetcher. */
#define KAFKA_PREFETCH_KB 131072
#define KAFKA_PREFETCH_MIN_KB 4096
#define KAFKA_PREFETCH_MAX_KB 65536
/* clink's fetch client: responses of about KAFKA_FETCH_RESPONSE_BYTES (kfetch.h says why); at
 * most one answer waits per partition while the previous one is decoded. */
#define KAFKA_FETCH_WAIT_MS 100
#define KAFKA_FETCH_RESPONSE_BYTES (1 << 20)
#define KAFKA_FETCH_MAX_BYTES (50 << 20)

typedef struct kafka_part {
  int32_t partition;
  int64_t next;      /* offset of the next record to read */
  int64_t start;     /* where this run began reading it (set at open and at restore) */
  int64_t low, end;  /* watermarks at open; end bounds a bounded read */
  bool done;         /* bounded: reached its end */
  rd_kafka_queue_t *q;
} kafka_part_t;

typedef struct kafka_src {
  kafka_client_t kc;  /* rk is NULL when reading through kf */
  ck_kfetch_t *kf;    /* clink's own fetch client (fetcher 'clink'), or NULL */
  ck_krecs_t *it;     /* kf: the record set being read, of partition cur */
  int cur;
  ck_decoder_t *dec; /* NULL for 'raw' */
  bool skip_errors, bounded;
  int64_t skipped, tombstones;
  ck_event_time_check_t etime; /* event_time_null */
  kafka_part_t *parts;
  int nparts, ndone;
  int ntopic;      /* partitions the topic has */
  int evfd;
  bool opened, assigned;
  ck_buf_t pending; /* restore() before open(): applied at open */
  bool has_pending;
  int rr;           /* round-robin cursor */
  ck_error_t derr;  /* a record's decode error; clear between records */
  int64_t checked_ms; /* last check_topic */
  bool progress;      /* rows since the last idle poll */
  int64_t idle_since, waiting_logged;
  char cluster_id[128]; /* the log's identity, recorded beside the positions ("": not known) */
  bool has_topic_id;
  uint8_t topic_id[16];
  rd_kafka_message_t *msgs[KAFKA_POLL_MSGS];
} kafka_src_t;

static const uint64_t evfd_one = 1; /* what each queue writes to the eventfd */

static kafka_src_t *src_impl(ck_source_t *src) {
  if (!src->impl) {
    kafka_src_t *ks = ck_calloc(1, sizeof *ks);
    ks->evfd = -1;
    ck_buf_init(&ks->pending);
    src->impl = ks;
  }
  return src->impl;
}

static kafka_part_t *find_part(kafka_src_t *ks, int32_t partition) {
  for (int i = 0; i < ks->nparts; i++)
    if (ks->parts[i].partition == partition) return &ks->parts[i];
  return NULL;
}

/* ============================================================= position ====== */

static void mark_done(kafka_src_t *ks, kafka_part_t *p) {
  if (p->done) return;
  p->done = true;
  ks->ndone++;
  if (ks->kf && ks->assigned) {
    ck_kfetch_pause(ks->kf, (int)(p - ks->parts));
    if (ks->it && ks->cur == (int)(p - ks->parts)) ks->it = NULL;
  } else if (ks->assigned) { /* stop fetching past the end */
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, ks->kc.topic, p->partition);
    (void)rd_kafka_pause_partitions(ks->kc.rk, l);
    rd_kafka_topic_partition_list_destroy(l);
  }
  CK_LOG_DEBUG(CK_KAFKA_LOG, "table '%s': partition %d of topic '%s' read up to its end offset "
               "%lld", ks->kc.table, (int)p->partition, ks->kc.topic, (long long)p->end);
}

static void update_done(kafka_src_t *ks) {
  if (!ks->bounded) return;
  for (int i = 0; i < ks->nparts; i++)
    if (!ks->parts[i].done && ks->parts[i].next >= ks->parts[i].end) mark_done(ks, &ks->parts[i]);
}

static int apply_state(kafka_src_t *ks, const void *data, size_t len, ck_error_t *err) {
  ck_str_t topic;
  ck_kafka_pos_t *pos;
  int n;
  int rc = ck_kafka_snap_decode(data, len, &topic, &pos, &n, err);
  if (rc) return rc;
  if (!ck_str_eq(topic, ck_str_of(ks->kc.topic))) {
    CK_LOG_WARN(CK_KAFKA_LOG, "table '%s': the restored position is for topic '%.*s', but the "
                "table reads topic '%s'; ignored: partitions start per auto_offset_reset",
                ks->kc.table, (int)topic.len, topic.ptr, ks->kc.topic);
    ck_free(pos);
    return 0;
  }
  bool *seen = ck_calloc((size_t)(ks->nparts ? ks->nparts : 1), sizeof *seen);
  for (int i = 0; i < n; i++) {
    kafka_part_t *p = find_part(ks, pos[i].partition);
    if (!p && pos[i].partition >= ks->ntopic) {
      ck_kafka_error(err, CK_ENOTFOUND, RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION,
                     "partition %d of topic '%s' no longer exists on Kafka brokers '%s' (the "
                     "topic has %d partitions; the restored checkpoint reads it from offset "
                     "%lld)", (int)pos[i].partition, ks->kc.topic, ks->kc.brokers, ks->ntopic,
                     (long long)pos[i].offset);
      ck_error_hint(err, "a topic that was deleted and created again with fewer partitions "
                         "cannot resume from this checkpoint; start the job afresh");
      rc = CK_ENOTFOUND;
      break;
    }
    if (!p) continue; /* another subtask's partition */
    seen[p - ks->parts] = true;
    if (pos[i].offset < p->low)
      CK_LOG_WARN(CK_KAFKA_LOG, "table '%s': partition %d of topic '%s' was restored at offset "
                  "%lld, but records before offset %lld have been deleted (retention); "
                  "reading continues per auto_offset_reset", ks->kc.table,
                  (int)p->partition, ks->kc.topic, (long long)pos[i].offset,
                  (long long)p->low);
    p->next = pos[i].offset;
  }
  for (int i = 0; !rc && i < ks->nparts; i++)
    if (!seen[i]) {
      CK_LOG_INFO(CK_KAFKA_LOG, "table '%s': partition %d of topic '%s' is not in the restored "
                  "position (new since the checkpoint); reading it from its earliest offset %lld",
                  ks->kc.table, (int)ks->parts[i].partition, ks->kc.topic,
                  (long long)ks->parts[i].low);
      ks->parts[i].next = ks->parts[i].low;
    }
  ck_free(seen);
  ck_free(pos);
  return rc;
}

/* =============================================================== open ====== */

/* A 'kafka.<name>' option as a positive integer, or def. */
static int32_t kafka_prop_int(const ck_options_t *opts, const char *name, int32_t def) {
  char key[128];
  snprintf(key, sizeof key, "kafka.%s", name);
  const char *v = ck_options_get(opts, key);
  long long n = v ? atoll(v) : 0;
  return n > 0 && n <= INT32_MAX ? (int32_t)n : def;
}

/* Partitions and offsets through clink's own fetch client, which then reads them. */
static int open_native(ck_source_t *src, kafka_src_t *ks, bool earliest, bool read_committed,
                       ck_error_t *err) {
  const ck_options_t *opts = src->ctx.options;
  int rc = ck_kafka_client_names(&ks->kc, &src->ctx, RD_KAFKA_CONSUMER, err);
  if (rc) return rc;
  const char *crc = ck_options_get(opts, "kafka.check.crcs");
  ck_kfetch_conf_t conf = {
      .kc = &ks->kc,
      .client_id = ck_options_get(opts, "kafka.client.id"),
      .read_committed = read_committed,
      .reset_earliest = earliest,
      .check_crc = crc && ck_streq_i(crc, "true"),
      .max_wait_ms = kafka_prop_int(opts, "fetch.wait.max.ms", KAFKA_FETCH_WAIT_MS),
      .partition_max_bytes = kafka_prop_int(opts, "max.partition.fetch.bytes", 0),
      .response_bytes = KAFKA_FETCH_RESPONSE_BYTES,
      .max_bytes = kafka_prop_int(opts, "fetch.max.bytes", KAFKA_FETCH_MAX_BYTES),
      .wake_fd = src->ctx.wake_fd,
  };
  if ((rc = ck_kfetch_open(&ks->kf, &conf, &ks->ntopic, err))) return rc;
  const char *cid;
  const uint8_t *tid;
  ck_kfetch_ident(ks->kf, &cid, &tid);
  if (cid) snprintf(ks->cluster_id, sizeof ks->cluster_id, "%s", cid);
  if (tid) memcpy(ks->topic_id, tid, 16), ks->has_topic_id = true;
  int par = src->ctx.parallelism > 0 ? src->ctx.parallelism : 1;
  ks->parts = ck_calloc((size_t)(ks->ntopic / par + 1), sizeof *ks->parts);
  for (int p = 0; !rc && p < ks->ntopic; p++) {
    if (p % par != src->ctx.subtask) continue;
    kafka_part_t *part = &ks->parts[ks->nparts++];
    part->partition = p;
    rc = ck_kfetch_offsets(ks->kf, p, &part->low, &part->end, err);
    part->next = earliest ? part->low : part->end;
  }
  return rc;
}

static int src_open(ck_source_t *src, ck_error_t *err) {
  kafka_src_t *ks = src_impl(src);
  const ck_options_t *opts = src->ctx.options;
  const ck_opt_def_t *defs = ck_kafka_source_options;
  const char *fmt = ck_options_get(opts, "format");
  int rc;
  if (!(fmt && strcmp(fmt, "raw") == 0)) {
    ck_format_kind_t kind;
    if ((rc = ck_format_parse(fmt, "the kafka connector", &kind, err))) return rc;
    ks->dec = ck_decoder_new(kind, src->ctx.schema, opts);
  } else if (src->ctx.schema->ncols != 1 || src->ctx.schema->types[0].id != CK_T_STRING) {
    return ck_error_set(err, CK_EOPTION, "format 'raw' needs a table of exactly one VARCHAR "
                        "column");
  }
  const char *policy = ck_opt_str(opts, ck_source_common_options, "on_decode_error");
  ks->skip_errors = policy && strcmp(policy, "skip") == 0;
  ck_event_time_check_init(&ks->etime, &src->ctx);
  ks->bounded = strcmp(ck_opt_str(opts, defs, "scan.bounded"), "latest") == 0;
  bool earliest = strcmp(ck_opt_str(opts, defs, "auto_offset_reset"), "earliest") == 0;

  const char *iso = ck_opt_str(opts, defs, "isolation.level");
  const char *fetcher = ck_opt_str(opts, defs, "fetcher");
  if (strcmp(fetcher, "librdkafka") != 0 && !ck_kafka_needs_librdkafka(opts)) {
    if ((rc = open_native(src, ks, earliest, strcmp(iso, "read_committed") == 0, err)))
      return rc;
    goto opened;
  }

  /* Partitions and their offsets first, through a probe client, because the consumer's
   * prefetch limit depends on how many partitions it reads (see KAFKA_PREFETCH_KB). */
  const char *probe_defaults[] = {"isolation.level", iso, NULL};
  kafka_client_t probe;
  rc = ck_kafka_client_open(&probe, &src->ctx, RD_KAFKA_CONSUMER, probe_defaults, NULL, err);
  if (!rc) rc = ck_kafka_topic_partitions(&probe, &ks->ntopic, err);
  int par = src->ctx.parallelism > 0 ? src->ctx.parallelism : 1;
  if (!rc) ks->parts = ck_calloc((size_t)(ks->ntopic / par + 1), sizeof *ks->parts);
  for (int p = 0; !rc && p < ks->ntopic; p++) {
    if (p % par != src->ctx.subtask) continue;
    kafka_part_t *part = &ks->parts[ks->nparts++];
    part->partition = p;
    rc = ck_kafka_watermarks(&probe, p, &part->low, &part->end, err);
    part->next = earliest ? part->low : part->end;
  }
  if (!rc) { /* the log's identity; librdkafka 2.0 exposes no topic id */
    char *cid = rd_kafka_clusterid(probe.rk, CK_KAFKA_ATTEMPT_MS);
    if (cid) {
      snprintf(ks->cluster_id, sizeof ks->cluster_id, "%s", cid);
      rd_kafka_mem_free(probe.rk, cid);
    }
  }
  ck_kafka_client_close(&probe);
  if (rc) return rc;

  char group[300], prefetch[32];
  const char *gid = ck_options_get(opts, "group_id");
  snprintf(group, sizeof group, "clink-%s", src->ctx.table ? src->ctx.table : "source");
  int64_t kb = KAFKA_PREFETCH_KB / (ks->nparts ? ks->nparts : 1);
  kb = kb < KAFKA_PREFETCH_MIN_KB ? KAFKA_PREFETCH_MIN_KB
       : kb > KAFKA_PREFETCH_MAX_KB ? KAFKA_PREFETCH_MAX_KB : kb;
  snprintf(prefetch, sizeof prefetch, "%lld", (long long)kb);
  const char *defaults[] = {
      "group.id", gid ? gid : group,
      "enable.auto.commit", "false",
      "enable.auto.offset.store", "false",
      "auto.offset.reset", earliest ? "earliest" : "latest",
      "isolation.level", iso,
      "enable.partition.eof", ks->bounded ? "true" : "false",
      "max.partition.fetch.bytes", "2097152",
      "queued.max.messages.kbytes", prefetch,
      "fetch.wait.max.ms", "100",
      NULL,
  };
  if ((rc = ck_kafka_client_open(&ks->kc, &src->ctx, RD_KAFKA_CONSUMER, defaults, NULL, err)))
    return rc;
  /* consumer-level errors reach error_cb through rd_kafka_poll */
  rd_kafka_queue_t *cq = rd_kafka_queue_get_consumer(ks->kc.rk);
  rd_kafka_queue_t *mq = rd_kafka_queue_get_main(ks->kc.rk);
  if (cq && mq) rd_kafka_queue_forward(cq, mq);
  if (cq) rd_kafka_queue_destroy(cq);
  if (mq) rd_kafka_queue_destroy(mq);
  ks->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (ks->evfd < 0)
    return ck_error_set(err, CK_EIO, "could not create an event descriptor for table '%s': %s",
                        ks->kc.table, strerror(errno));
  for (int i = 0; i < ks->nparts; i++) {
    kafka_part_t *part = &ks->parts[i];
    part->q = rd_kafka_queue_get_partition(ks->kc.rk, ks->kc.topic, part->partition);
    if (!part->q)
      return ck_kafka_error(err, CK_EINTERNAL, RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION,
                            "could not get the queue of partition %d of topic '%s'",
                            (int)part->partition, ks->kc.topic);
    rd_kafka_queue_forward(part->q, NULL); /* keep it out of the consumer queue */
    rd_kafka_queue_io_event_enable(part->q, ks->evfd, &evfd_one, sizeof evfd_one);
  }
opened:
  ks->opened = true;
  if (ks->has_pending) {
    rc = apply_state(ks, ks->pending.data, ks->pending.len, err);
    ck_buf_fini(&ks->pending);
    ks->has_pending = false;
    if (rc) return rc;
  }
  for (int i = 0; i < ks->nparts; i++) ks->parts[i].start = ks->parts[i].next;
  update_done(ks);
  CK_LOG_INFO(CK_KAFKA_LOG, "table '%s' subtask %d: reading %d of the %d partitions of topic "
              "'%s'%s, through %s", ks->kc.table, src->ctx.subtask, ks->nparts, ks->ntopic,
              ks->kc.topic, ks->bounded ? " up to their current end offsets" : "",
              ks->kf ? "clink's fetch client" : "librdkafka");
  return 0;
}

static void kafka_src_close(ck_source_t *src);

/* The runtime closes only a source that opened: a failed open cleans up after itself. */
static int kafka_src_open(ck_source_t *src, ck_error_t *err) {
  int rc = src_open(src, err);
  if (rc) kafka_src_close(src);
  return rc;
}

/* Assigns every owned partition that is not done, at its position. */
static int do_assign(kafka_src_t *ks, ck_error_t *err) {
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(ks->nparts + 1);
  for (int i = 0; i < ks->nparts; i++) {
    if (ks->parts[i].done) continue;
    rd_kafka_topic_partition_list_add(l, ks->kc.topic, ks->parts[i].partition)->offset =
        ks->parts[i].next;
  }
  rd_kafka_resp_err_t rerr = rd_kafka_assign(ks->kc.rk, l);
  rd_kafka_topic_partition_list_destroy(l);
  if (rerr)
    return ck_kafka_error(err, CK_EREMOTE, rerr, "could not assign the partitions of topic '%s' "
                          "to table '%s': %s", ks->kc.topic, ks->kc.table,
                          rd_kafka_err2str(rerr));
  ks->assigned = true;
  return 0;
}

/* =============================================================== poll ====== */

static void log_skip(kafka_src_t *ks, const kafka_part_t *p, int64_t offset, const char *why) {
  if (ks->skipped <= KAFKA_SKIP_LOG_FIRST)
    CK_LOG_WARN(CK_KAFKA_LOG, "table '%s': skipped record at topic '%s' partition %d offset "
                "%lld: %s", ks->kc.table, ks->kc.topic, (int)p->partition, (long long)offset,
                why);
  if (ks->skipped == KAFKA_SKIP_LOG_FIRST)
    CK_LOG_WARN(CK_KAFKA_LOG, "table '%s': further skipped records are logged every 10000th",
                ks->kc.table);
  else if (ks->skipped > KAFKA_SKIP_LOG_FIRST && ks->skipped % 10000 == 0)
    CK_LOG_WARN(CK_KAFKA_LOG, "table '%s': %lld records skipped so far; latest at topic '%s' "
                "partition %d offset %lld: %s", ks->kc.table, (long long)ks->skipped,
                ks->kc.topic, (int)p->partition, (long long)offset, why);
}

static int raw_decode(const char *rec, size_t len, ck_batch_t *batch, ck_error_t *err) {
  int rc = ck_format_check_record(rec, len, err);
  if (rc) return rc;
  ck_col_append_str(&batch->cols[0], rec, len);
  batch->nrows++;
  return 0;
}

/* A message-level error from partition p's queue. */
static int part_error(kafka_src_t *ks, kafka_part_t *p, const rd_kafka_message_t *m,
                      ck_error_t *err) {
  if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
    if (m->offset > p->next) p->next = m->offset; /* past markers and aborted records */
    if (ks->bounded && p->next >= p->end) mark_done(ks, p);
    return 0;
  }
  const char *why = rd_kafka_message_errstr(m);
  /* "Unknown partition" is also what a broker says for a topic created a moment ago whose
   * metadata has not reached every part of it yet: only the brokers' metadata decides that a
   * partition is gone (check_topic); until then it is a transient error, logged and retried. */
  if (m->err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION ||
      m->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
      m->err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC)
    ks->kc.topic_suspect = true;
  char msg[600];
  snprintf(msg, sizeof msg, "reading partition %d of topic '%s': %s (retrying)",
           (int)p->partition, ks->kc.topic, why);
  ck_kafka_log_error(&ks->kc, m->err, msg);
  return 0;
}

/* One record of partition p (value NULL: a tombstone): a row appended (1), nothing (0), or an
 * error. */
static int handle_rec(kafka_src_t *ks, kafka_part_t *p, int64_t offset, const char *value,
                      size_t len, ck_batch_t *batch, ck_error_t *err) {
  if (ks->bounded && offset >= p->end) { /* produced after open: not ours to read */
    if (offset > p->next) p->next = offset;
    mark_done(ks, p);
    return 0;
  }
  if (!value) { /* a tombstone */
    p->next = offset + 1;
    if (!ks->dec) {
      ck_col_append_null(&batch->cols[0]);
      batch->nrows++;
      return 1;
    }
    if (ks->tombstones++ == 0)
      CK_LOG_DEBUG(CK_KAFKA_LOG, "table '%s': ignoring tombstones (messages without a value), "
                   "the first at partition %d offset %lld", ks->kc.table, (int)p->partition,
                   (long long)offset);
    return 0;
  }
  /* derr stays clear between records (cleared after each failure, not before each record:
   * it is a kilobyte, and this is the hot path) */
  ck_error_t *derr = &ks->derr;
  int rc = ks->dec ? ck_decoder_decode(ks->dec, value, len, batch, derr)
                   : raw_decode(value, len, batch, derr);
  if (rc) {
    if (!ks->skip_errors) {
      ck_error_set(err, CK_EDECODE, "could not decode record at topic '%s' partition %d offset "
                   "%lld: %s", ks->kc.topic, (int)p->partition, (long long)offset,
                   derr->message[0] ? derr->message : ck_error_default(rc));
      ck_error_hint(err, "on_decode_error = 'skip' counts and skips such records instead");
      ck_error_clear(derr);
      return CK_EDECODE;
    }
    ks->skipped++;
    log_skip(ks, p, offset, derr->message[0] ? derr->message : ck_error_default(rc));
    ck_error_clear(derr);
    p->next = offset + 1;
    return 0;
  }
  p->next = offset + 1;
  if ((rc = ck_event_time_check_row(&ks->etime, batch, derr)) < 0) {
    ck_error_set(err, CK_EDECODE, "record at topic '%s' partition %d offset %lld %s",
                 ks->kc.topic, (int)p->partition, (long long)offset, derr->message);
    ck_error_hint(err, "event_time_null = 'skip' counts and skips such records instead");
    ck_error_clear(derr);
    p->next = offset; /* the position stays at the record, as for a decode error */
    return CK_EDECODE;
  }
  if (rc == 0 && (ks->etime.skipped <= KAFKA_SKIP_LOG_FIRST || ks->etime.skipped % 10000 == 0))
    CK_LOG_WARN(CK_KAFKA_LOG, "table '%s': skipped record at topic '%s' partition %d offset "
                "%lld (%lld so far): it has no event time", ks->kc.table, ks->kc.topic,
                (int)p->partition, (long long)offset, (long long)ks->etime.skipped);
  return rc;
}

/* One message of partition p: a row appended (1), nothing (0), or an error. */
static int handle(kafka_src_t *ks, kafka_part_t *p, const rd_kafka_message_t *m,
                  ck_batch_t *batch, ck_error_t *err) {
  if (m->err) return part_error(ks, p, m, err);
  if (m->partition != p->partition)
    return ck_error_set(err, CK_EINTERNAL, "a message of partition %d of topic '%s' arrived on "
                        "the queue of partition %d", (int)m->partition, ks->kc.topic,
                        (int)p->partition);
  return handle_rec(ks, p, m->offset, m->payload, m->len, batch, err);
}

/* Lets go of n messages at once, after they were all decoded rather than one by one between
 * decodes. librdkafka allocates a message on its broker thread and frees it on ours, so every
 * free takes that thread's malloc arena lock: freeing in one short burst per call, instead of
 * spread over the whole decode, makes it much less likely to find the broker thread holding
 * the lock (measured: fewer futex waits and context switches, less CPU). */
static void destroy_msgs(rd_kafka_message_t **msgs, ssize_t n) {
  for (ssize_t j = 0; j < n; j++) rd_kafka_message_destroy(msgs[j]);
}

/* Drains up to max_rows rows of partition i into batch: rows appended, or an error. */
static int consume_part(kafka_src_t *ks, kafka_part_t *p, ck_batch_t *batch, int max_rows,
                        ck_error_t *err) {
  int rows = 0;
  while (rows < max_rows && !p->done) {
    size_t want = (size_t)(max_rows - rows);
    if (want > KAFKA_POLL_MSGS) want = KAFKA_POLL_MSGS;
    ssize_t n = rd_kafka_consume_batch_queue(p->q, 0, ks->msgs, want);
    if (n < 0)
      return ck_kafka_error(err, CK_EREMOTE, rd_kafka_last_error(), "could not read partition "
                            "%d of topic '%s': %s", (int)p->partition, ks->kc.topic,
                            rd_kafka_err2str(rd_kafka_last_error()));
    if (n == 0) break;
    int rc = 0;
    for (ssize_t j = 0; j < n && !rc && !p->done; j++) {
      int r = handle(ks, p, ks->msgs[j], batch, err);
      if (r < 0) rc = r;
      else rows += r;
    }
    destroy_msgs(ks->msgs, n);
    if (rc) return rc;
  }
  return rows;
}

static int try_parts(kafka_src_t *ks, ck_batch_t *batch, int max_rows, int *partition,
                     ck_error_t *err) {
  for (int k = 0; k < ks->nparts; k++) {
    int i = (ks->rr + k) % ks->nparts;
    kafka_part_t *p = &ks->parts[i];
    if (p->done) continue;
    int r = consume_part(ks, p, batch, max_rows, err);
    if (r < 0) return r;
    if (r > 0) {
      ks->progress = true;
      *partition = i;
      ks->rr = (i + 1) % ks->nparts;
      return CK_SRC_DATA;
    }
  }
  return 0;
}

/* The topic's partition count per librdkafka's metadata (0: gone), or -1 when unknown. */
static int rdk_partition_count(kafka_src_t *ks) {
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(ks->kc.rk, ks->kc.topic, NULL);
  if (!rkt) return -1;
  const struct rd_kafka_metadata *md = NULL;
  rd_kafka_resp_err_t rerr = rd_kafka_metadata(ks->kc.rk, 0, rkt, &md, 2000);
  rd_kafka_topic_destroy(rkt);
  if (rerr) return -1;
  int n = -1;
  if (md->topic_cnt > 0) {
    rerr = md->topics[0].err;
    if (rerr == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) n = 0;
    else if (!rerr) n = md->topics[0].partition_cnt;
  }
  rd_kafka_metadata_destroy(md);
  return n;
}

/* A client said the topic or one of its partitions is unknown: ask the brokers, and fail
 * naming the first owned partition the topic no longer has. Inconclusive answers (brokers
 * unreachable) change nothing; librdkafka keeps retrying and its errors keep being logged. */
static int check_topic(kafka_src_t *ks, ck_error_t *err) {
  int64_t now = ck_mono_ms();
  if (now - ks->checked_ms < KAFKA_CHECK_EVERY_MS) return 0;
  ks->checked_ms = now;
  ks->kc.topic_suspect = false;
  int n = ks->kf ? ck_kfetch_partition_count(ks->kf) : rdk_partition_count(ks);
  if (n < 0) return 0;
  for (int i = 0; i < ks->nparts; i++) {
    const kafka_part_t *p = &ks->parts[i];
    if (p->partition < n) continue;
    ck_kafka_error(err, CK_ENOTFOUND, RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION,
                   "partition %d of topic '%s' no longer exists on Kafka brokers '%s' (table "
                   "'%s', next offset %lld)", (int)p->partition, ks->kc.topic, ks->kc.brokers,
                   ks->kc.table, (long long)p->next);
    if (n == 0) ck_error_detail(err, "the topic was deleted");
    else ck_error_detail(err, "the topic has %d partitions now", n);
    return CK_ENOTFOUND;
  }
  return 0;
}

/* A bounded read that makes no progress says what it waits for, every CK_KAFKA_LOG_EVERY_MS
 * (the brokers' own errors are logged by error_cb meanwhile). */
static void log_waiting(kafka_src_t *ks, int64_t now) {
  if (!ks->idle_since || ks->progress) {
    ks->idle_since = ks->waiting_logged = now;
    ks->progress = false;
    return;
  }
  if (now - ks->waiting_logged < CK_KAFKA_LOG_EVERY_MS) return;
  ks->waiting_logged = now;
  for (int i = 0; i < ks->nparts; i++) {
    const kafka_part_t *p = &ks->parts[i];
    if (p->done) continue;
    CK_LOG_INFO(CK_KAFKA_LOG, "table '%s': waiting %.0f s for partition %d of topic '%s' to "
                "reach its end offset %lld (read up to %lld; brokers '%s')", ks->kc.table,
                (double)(now - ks->idle_since) / 1000.0, (int)p->partition, ks->kc.topic,
                (long long)p->end, (long long)p->next, ks->kc.brokers);
    break; /* one line per report */
  }
}

static void drain_evfd(kafka_src_t *ks) {
  uint64_t v;
  while (read(ks->evfd, &v, sizeof v) == (ssize_t)sizeof v) {
  }
}

/* Hands every owned partition to clink's fetch client at its position (done ones paused). */
static void native_assign(kafka_src_t *ks) {
  int32_t *ids = ck_calloc((size_t)(ks->nparts ? ks->nparts : 1), sizeof *ids);
  int64_t *offs = ck_calloc((size_t)(ks->nparts ? ks->nparts : 1), sizeof *offs);
  for (int i = 0; i < ks->nparts; i++) {
    ids[i] = ks->parts[i].partition;
    offs[i] = ks->parts[i].next;
  }
  ck_kfetch_assign(ks->kf, ids, offs, ks->nparts);
  for (int i = 0; i < ks->nparts; i++)
    if (ks->parts[i].done) ck_kfetch_pause(ks->kf, i);
  ck_free(ids);
  ck_free(offs);
  ks->it = NULL;
  ks->assigned = true;
}

/* poll() through clink's fetch client: rows of the current record set, or the next set. */
static int native_poll(kafka_src_t *ks, ck_batch_t *batch, int max_rows, int timeout_ms,
                       int *partition, ck_error_t *err) {
  int rc;
  if (!ks->assigned) native_assign(ks);
  int64_t deadline = ck_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  for (;;) {
    if (ck_kfetch_topic_suspect(ks->kf)) ks->kc.topic_suspect = true;
    if (ks->kc.topic_suspect && (rc = check_topic(ks, err))) return rc;
    if (ks->bounded && ks->ndone == ks->nparts) return CK_SRC_END;
    if (ks->it) {
      kafka_part_t *p = &ks->parts[ks->cur];
      int rows = 0;
      while (rows < max_rows && ks->it) {
        ck_krec_t rec;
        int r = ck_krecs_next(ks->it, &rec, &ks->derr);
        if (r < 0) {
          ck_error_set(err, CK_EDECODE, "could not read the records of topic '%s' partition %d "
                       "from offset %lld: %s", ks->kc.topic, (int)p->partition,
                       (long long)p->next, ks->derr.message[0] ? ks->derr.message
                                                               : ck_error_default(r));
          ck_error_clear(&ks->derr);
          return CK_EDECODE;
        }
        if (r == 0) { /* the set is read: past its markers, aborted and compacted records too */
          if (ks->it->next_offset > p->next) p->next = ks->it->next_offset;
          ks->it = NULL;
          if (ks->bounded && p->next >= p->end) mark_done(ks, p);
          break;
        }
        r = handle_rec(ks, p, rec.offset, rec.value, rec.value ? (size_t)rec.value_len : 0,
                       batch, err);
        if (r < 0) return r;
        rows += r;
      }
      if (rows > 0) {
        ks->progress = true;
        *partition = ks->cur;
        return CK_SRC_DATA;
      }
      continue;
    }
    int64_t left = deadline - ck_mono_ms();
    int i;
    ck_krecs_t *it;
    int r = ck_kfetch_next(ks->kf, left > 0 ? (int)left : 0, &i, &it, err);
    if (r < 0) return r;
    if (r == 0) {
      if (ks->bounded) log_waiting(ks, ck_mono_ms());
      return CK_SRC_IDLE;
    }
    if (ks->parts[i].done) continue;
    ks->it = it;
    ks->cur = i;
  }
}

static int kafka_src_poll(ck_source_t *src, ck_batch_t *batch, int max_rows, int timeout_ms,
                          int *partition, ck_error_t *err) {
  kafka_src_t *ks = src->impl;
  int rc;
  if (ks->kf) return native_poll(ks, batch, max_rows, timeout_ms, partition, err);
  if (!ks->assigned && (rc = do_assign(ks, err))) return rc;
  int64_t deadline = -1;
  bool drained = false;
  for (;;) {
    rd_kafka_poll(ks->kc.rk, 0); /* error callbacks */
    if (ks->kc.topic_suspect && (rc = check_topic(ks, err))) return rc;
    if (ks->bounded && ks->ndone == ks->nparts) return CK_SRC_END;
    int r = try_parts(ks, batch, max_rows, partition, err);
    if (r) return r;
    if (ks->bounded && ks->ndone == ks->nparts) return CK_SRC_END;
    if (!drained) { /* look once more after draining: a wake-up is then never lost */
      drain_evfd(ks);
      drained = true;
      continue;
    }
    int64_t now = ck_mono_ms();
    if (deadline < 0) deadline = now + (timeout_ms > 0 ? timeout_ms : 0);
    if (now >= deadline) {
      if (ks->bounded) log_waiting(ks, now);
      return CK_SRC_IDLE;
    }
    /* the engine's wake descriptor too: a checkpoint trigger does not wait out the timeout */
    struct pollfd pfd[2] = {{.fd = ks->evfd, .events = POLLIN},
                            {.fd = src->ctx.wake_fd ? *src->ctx.wake_fd : -1, .events = POLLIN}};
    int64_t wait = deadline - now;
    (void)poll(pfd, 2, (int)(wait > 1000 ? 1000 : wait));
    if (pfd[1].revents & POLLIN) return CK_SRC_IDLE;
    drained = false;
  }
}

/* ======================================================= snapshot/restore ====== */

static int kafka_src_snapshot(ck_source_t *src, ck_buf_t *out, ck_error_t *err) {
  kafka_src_t *ks = src_impl(src);
  if (!ks->opened && ks->has_pending) { /* restored but not yet open: the same position */
    ck_buf_append(out, ks->pending.data, ks->pending.len);
    return 0;
  }
  ck_kafka_pos_t *pos = ck_calloc((size_t)(ks->nparts ? ks->nparts : 1), sizeof *pos);
  int64_t *starts = ck_calloc((size_t)(ks->nparts ? ks->nparts : 1), sizeof *starts);
  for (int i = 0; i < ks->nparts; i++) {
    pos[i].partition = ks->parts[i].partition;
    pos[i].offset = ks->parts[i].next;
    starts[i] = ks->opened ? ks->parts[i].start : -1;
  }
  const char *topic = ks->kc.topic ? ks->kc.topic : ck_options_get(src->ctx.options, "topic");
  ck_kafka_ident_t id = {.cluster_id = ck_str_of(ks->cluster_id),
                         .has_topic_id = ks->has_topic_id};
  memcpy(id.topic_id, ks->topic_id, 16);
  ck_kafka_snap_encode_ident(out, topic ? topic : "", pos, ks->nparts, starts, &id);
  ck_free(starts);
  ck_free(pos);
  return 0;
}

static int kafka_src_restore(ck_source_t *src, const void *data, size_t len, ck_error_t *err) {
  kafka_src_t *ks = src_impl(src);
  if (!ks->opened) {
    ck_buf_reset(&ks->pending);
    ck_buf_append(&ks->pending, data, len);
    ks->has_pending = true;
    /* check it now, so a corrupt state fails here rather than at open */
    ck_str_t topic;
    ck_kafka_pos_t *pos;
    int n;
    int rc = ck_kafka_snap_decode(data, len, &topic, &pos, &n, err);
    ck_free(pos);
    return rc;
  }
  int rc = apply_state(ks, data, len, err);
  if (rc) return rc;
  for (int i = 0; i < ks->nparts; i++) ks->parts[i].start = ks->parts[i].next;
  for (int i = 0; i < ks->nparts; i++) /* a bounded partition may be pending again */
    if (ks->parts[i].done && ks->parts[i].next < ks->parts[i].end) {
      ks->parts[i].done = false;
      ks->ndone--;
    }
  update_done(ks);
  if (ks->assigned && ks->kf) {
    CK_LOG_DEBUG(CK_KAFKA_LOG, "table '%s': restored after the first poll; fetching again",
                 ks->kc.table);
    native_assign(ks);
    return 0;
  }
  if (ks->assigned) {
    CK_LOG_DEBUG(CK_KAFKA_LOG, "table '%s': restored after the first poll; assigning again",
                 ks->kc.table);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(ks->nparts + 1);
    for (int i = 0; i < ks->nparts; i++)
      rd_kafka_topic_partition_list_add(l, ks->kc.topic, ks->parts[i].partition);
    (void)rd_kafka_resume_partitions(ks->kc.rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_resp_err_t rerr = rd_kafka_assign(ks->kc.rk, NULL);
    if (rerr)
      return ck_kafka_error(err, CK_EREMOTE, rerr, "could not seek topic '%s': %s",
                            ks->kc.topic, rd_kafka_err2str(rerr));
    for (int i = 0; i < ks->nparts; i++) {
      int64_t n;
      while ((n = rd_kafka_consume_batch_queue(ks->parts[i].q, 0, ks->msgs, KAFKA_POLL_MSGS)) > 0)
        for (ssize_t j = 0; j < n; j++) rd_kafka_message_destroy(ks->msgs[j]);
    }
    return do_assign(ks, err);
  }
  return 0;
}

static int64_t kafka_src_skipped(ck_source_t *src) {
  return src->impl ? ((kafka_src_t *)src->impl)->skipped : 0;
}

static int64_t kafka_src_time_skipped(ck_source_t *src) {
  return src->impl ? ((kafka_src_t *)src->impl)->etime.skipped : 0;
}

static int kafka_src_npartitions(ck_source_t *src) { return src_impl(src)->nparts; }

static void kafka_src_close(ck_source_t *src) {
  kafka_src_t *ks = src->impl;
  if (!ks) return;
  /* Stop fetching and wait until every partition stopped (consumer_close), and only then empty
   * every partition queue and let go of it: an op left in a queue holds a reference to its
   * partition, the partition's queue is only ours to empty, and rd_kafka_destroy would wait for
   * the partition's broker thread for ever (seen when the topic was deleted under us, with the
   * errors about it arriving while the assignment was being cleared). */
  ks->kc.closing = true;
  ck_kfetch_close(ks->kf);
  ks->kf = NULL;
  if (ks->kc.rk) {
    if (ks->assigned) (void)rd_kafka_assign(ks->kc.rk, NULL);
    (void)rd_kafka_consumer_close(ks->kc.rk);
    rd_kafka_poll(ks->kc.rk, 0);
  }
  for (int i = 0; i < ks->nparts; i++)
    if (ks->parts[i].q) {
      rd_kafka_queue_io_event_enable(ks->parts[i].q, -1, NULL, 0);
      ssize_t n;
      while ((n = rd_kafka_consume_batch_queue(ks->parts[i].q, 0, ks->msgs, KAFKA_POLL_MSGS)) > 0)
        for (ssize_t j = 0; j < n; j++) rd_kafka_message_destroy(ks->msgs[j]);
      rd_kafka_queue_destroy(ks->parts[i].q);
    }
  ck_kafka_client_close(&ks->kc);
  if (ks->evfd >= 0) close(ks->evfd);
  ck_free(ks->parts);
  ck_decoder_free(ks->dec);
  ck_buf_fini(&ks->pending);
  ck_free(ks);
  src->impl = NULL;
}

const ck_source_ops_t ck_kafka_source_ops = {
    .open = kafka_src_open,
    .npartitions = kafka_src_npartitions,
    .poll = kafka_src_poll,
    .snapshot = kafka_src_snapshot,
    .restore = kafka_src_restore,
    .skipped = kafka_src_skipped,
    .time_skipped = kafka_src_time_skipped,
    .close = kafka_src_close,
};
