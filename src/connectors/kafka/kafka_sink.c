/*
 * DESIGN: the Kafka sink (connector='kafka' written to) — at least once.
 *
 * One idempotent producer per sink subtask (enable.idempotence: no duplicates or reordering
 * from librdkafka's own retries; linger 5 ms). write() encodes every row of the batch with the
 * table's format (json: changelog rows carry "op") into one reused buffer and hands it to
 * librdkafka (copied), with the key when `key` names columns: a single VARCHAR column gives
 * its bytes, other columns the JSON object of those columns (encoded by the JSON encoder over a
 * view batch of just the key columns, so no second encoder of our own). A full local queue is
 * waited out (rd_kafka_poll), logged when it lasts.
 *
 * Durability: prepare(ckpt) and finish() flush and wait until every message handed over has a
 * delivery report (rd_kafka_outq_len reaches 0), logging every CK_KAFKA_LOG_EVERY_MS while
 * nothing moves; so after prepare everything before the barrier is in Kafka. A failed delivery
 * (after librdkafka's retries, within message.timeout.ms) is a job error with the broker's
 * reason, returned by the next write, prepare or finish. A restart writes again what followed
 * the last checkpoint: at least once (CK_GUARANTEE_AT_LEAST_ONCE; the planner refuses
 * delivery_guarantee = 'exactly_once' for it).
 *
 * Threads: one instance per sink subtask, called on its thread; delivery reports are served
 * on that thread inside rd_kafka_poll/rd_kafka_flush.
 */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/time.h"
#include "connectors/format.h"
#include "connectors/kafka/kafka.h"

typedef struct kafka_sink {
  kafka_client_t kc; /* first: librdkafka's opaque is &kc, i.e. the sink */
  rd_kafka_topic_t *rkt;
  ck_encoder_t *enc;
  ck_encoder_t *key_enc;   /* JSON over key_schema; NULL for no key or a raw VARCHAR key */
  int *key_cols;
  int nkeys;
  bool key_raw;            /* one VARCHAR key column: its bytes */
  ck_schema_t key_schema;  /* names/types point into the table's schema */
  ck_col_t *key_view;      /* shallow copies of the key columns of the batch being written */
  ck_buf_t val, key;
  int64_t sent, delivered, failed;
  /* the first failed delivery */
  rd_kafka_resp_err_t fail_err;
  int32_t fail_partition;
  char fail_reason[256];
} kafka_sink_t;

/* Delivery report: the owning thread, inside rd_kafka_poll/flush. */
static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  kafka_sink_t *kk = opaque;
  if (!m->err) {
    kk->delivered++;
    return;
  }
  if (kk->failed++ == 0) {
    kk->fail_err = m->err;
    kk->fail_partition = m->partition;
    snprintf(kk->fail_reason, sizeof kk->fail_reason, "%s", rd_kafka_err2str(m->err));
  }
}

/* The first delivery failure (or a fatal producer error) as a job error. */
static int check_failed(kafka_sink_t *kk, ck_error_t *err) {
  if (kk->kc.fatal) {
    char why[512];
    rd_kafka_resp_err_t rerr = rd_kafka_fatal_error(kk->kc.rk, why, sizeof why);
    return ck_kafka_error(err, CK_EREMOTE, rerr, "could not write to topic '%s' (table '%s'): "
                          "the Kafka producer failed: %s", kk->kc.topic, kk->kc.table, why);
  }
  if (!kk->failed) return 0;
  ck_kafka_error(err, CK_EREMOTE, kk->fail_err, "could not deliver %lld record%s to topic '%s' "
                 "(table '%s', brokers '%s'): %s", (long long)kk->failed,
                 kk->failed == 1 ? "" : "s", kk->kc.topic, kk->kc.table, kk->kc.brokers,
                 kk->fail_reason);
  if (kk->fail_partition >= 0) ck_error_detail(err, "the first failure was in partition %d",
                                                (int)kk->fail_partition);
  return CK_EREMOTE;
}

static void kafka_sink_close(ck_sink_t *sink);

static int sink_open(ck_sink_t *sink, ck_error_t *err) {
  kafka_sink_t *kk = ck_calloc(1, sizeof *kk);
  sink->impl = kk;
  ck_buf_init(&kk->val);
  ck_buf_init(&kk->key);
  kk->fail_partition = -1;
  const ck_options_t *opts = sink->ctx.options;
  const ck_schema_t *schema = sink->ctx.schema;
  ck_format_kind_t kind;
  int rc = ck_format_parse(ck_options_get(opts, "format"), "the kafka connector", &kind, err);
  if (rc) return rc;
  const char *key = ck_options_get(opts, "key");
  if (key) {
    if ((rc = ck_kafka_parse_key(schema, key, &kk->key_cols, &kk->nkeys, err))) return rc;
    kk->key_raw = kk->nkeys == 1 && schema->types[kk->key_cols[0]].id == CK_T_STRING;
    if (!kk->key_raw) {
      kk->key_schema.ncols = kk->nkeys;
      kk->key_schema.names = ck_calloc((size_t)kk->nkeys, sizeof *kk->key_schema.names);
      kk->key_schema.types = ck_calloc((size_t)kk->nkeys, sizeof *kk->key_schema.types);
      for (int i = 0; i < kk->nkeys; i++) {
        kk->key_schema.names[i] = schema->names[kk->key_cols[i]];
        kk->key_schema.types[i] = schema->types[kk->key_cols[i]];
      }
      kk->key_enc = ck_encoder_new(CK_FORMAT_JSON, &kk->key_schema);
      kk->key_view = ck_calloc((size_t)kk->nkeys, sizeof *kk->key_view);
    }
  }
  kk->enc = ck_encoder_new(kind, schema);
  static const char *const defaults[] = {
      "enable.idempotence", "true",
      "linger.ms", "5",
      /* like the source, the sink needs its topic to exist; librdkafka's producer would
       * otherwise have the broker create it, with the broker's defaults */
      "allow.auto.create.topics", "false",
      NULL,
  };
  if ((rc = ck_kafka_client_open(&kk->kc, &sink->ctx, RD_KAFKA_PRODUCER, defaults, dr_msg_cb,
                                 err)))
    return rc;
  int nparts;
  if ((rc = ck_kafka_topic_partitions(&kk->kc, &nparts, err))) return rc;
  kk->rkt = rd_kafka_topic_new(kk->kc.rk, kk->kc.topic, NULL);
  if (!kk->rkt)
    return ck_kafka_error(err, CK_EOPTION, rd_kafka_last_error(), "could not use topic '%s': "
                          "%s", kk->kc.topic, rd_kafka_err2str(rd_kafka_last_error()));
  CK_LOG_DEBUG(CK_KAFKA_LOG, "table '%s' subtask %d: writing to topic '%s' (%d partitions)",
               kk->kc.table, sink->ctx.subtask, kk->kc.topic, nparts);
  return 0;
}

/* A restored sink has nothing to recover: at least once, it writes again what followed the
 * checkpoint. The runtime closes only a sink that opened: a failed open cleans up. */
static int kafka_sink_open(ck_sink_t *sink, bool restored, ck_error_t *err) {
  int rc = sink_open(sink, err);
  if (rc) kafka_sink_close(sink);
  return rc;
}

/* Waits out a full local queue, serving delivery reports. */
static int produce(kafka_sink_t *kk, const void *key, size_t key_len, ck_error_t *err) {
  int64_t since = 0, logged = 0;
  for (;;) {
    if (rd_kafka_producev(kk->kc.rk, RD_KAFKA_V_RKT(kk->rkt),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_VALUE(kk->val.data, kk->val.len),
                          RD_KAFKA_V_KEY(key, key_len), RD_KAFKA_V_END) == 0) {
      kk->sent++;
      return 0;
    }
    rd_kafka_resp_err_t rerr = rd_kafka_last_error();
    if (rerr != RD_KAFKA_RESP_ERR__QUEUE_FULL)
      return ck_kafka_error(err, CK_EREMOTE, rerr, "could not write to topic '%s' (table '%s'): "
                            "%s", kk->kc.topic, kk->kc.table, rd_kafka_err2str(rerr));
    rd_kafka_poll(kk->kc.rk, 100);
    int rc = check_failed(kk, err);
    if (rc) return rc;
    int64_t now = ck_mono_ms();
    if (!since) since = logged = now;
    if (now - logged >= CK_KAFKA_LOG_EVERY_MS) {
      CK_LOG_WARN(CK_KAFKA_LOG, "table '%s': the producer's queue for topic '%s' has been full "
                  "for %.0f s (%d messages waiting for brokers '%s')", kk->kc.table,
                  kk->kc.topic, (double)(now - since) / 1000.0, rd_kafka_outq_len(kk->kc.rk),
                  kk->kc.brokers);
      logged = now;
    }
  }
}

static int kafka_sink_write(ck_sink_t *sink, const ck_batch_t *batch, ck_error_t *err) {
  kafka_sink_t *kk = sink->impl;
  int rc = check_failed(kk, err);
  if (rc) return rc;
  ck_batch_t view = {0};
  if (kk->key_enc) {
    for (int k = 0; k < kk->nkeys; k++) kk->key_view[k] = batch->cols[kk->key_cols[k]];
    view.ncols = kk->nkeys;
    view.nrows = batch->nrows;
    view.cols = kk->key_view;
  }
  for (size_t i = 0; i < batch->nrows; i++) {
    ck_buf_reset(&kk->val);
    ck_encoder_row(kk->enc, batch, i, &kk->val);
    const void *key = NULL;
    size_t key_len = 0;
    if (kk->key_raw) {
      const ck_col_t *col = &batch->cols[kk->key_cols[0]];
      if (ck_col_valid(col, i)) key = ck_col_str(col, i, &key_len);
    } else if (kk->key_enc) {
      ck_buf_reset(&kk->key);
      ck_encoder_row(kk->key_enc, &view, i, &kk->key);
      key = kk->key.data;
      key_len = kk->key.len;
    }
    if ((rc = produce(kk, key, key_len, err))) return rc;
  }
  rd_kafka_poll(kk->kc.rk, 0); /* delivery reports */
  return check_failed(kk, err);
}

/* Waits until every message handed over has its delivery report. */
static int drain(kafka_sink_t *kk, const char *why, ck_error_t *err) {
  int64_t start = ck_mono_ms(), progress = start, logged = start;
  int last = rd_kafka_outq_len(kk->kc.rk);
  while (last > 0) {
    (void)rd_kafka_flush(kk->kc.rk, 1000);
    int rc = check_failed(kk, err);
    if (rc) return rc;
    int n = rd_kafka_outq_len(kk->kc.rk);
    int64_t now = ck_mono_ms();
    if (n < last) progress = now;
    last = n;
    if (n > 0 && now - progress >= CK_KAFKA_LOG_EVERY_MS &&
        now - logged >= CK_KAFKA_LOG_EVERY_MS) {
      CK_LOG_WARN(CK_KAFKA_LOG, "table '%s': %s: still waiting for %d deliveries to topic '%s' "
                  "after %.0f s (no progress for %.0f s; brokers '%s')", kk->kc.table, why, n,
                  kk->kc.topic, (double)(now - start) / 1000.0,
                  (double)(now - progress) / 1000.0, kk->kc.brokers);
      logged = now;
    }
  }
  return check_failed(kk, err);
}

static int kafka_sink_prepare(ck_sink_t *sink, int64_t ckpt, ck_buf_t *out, ck_error_t *err) {
  char why[64];
  snprintf(why, sizeof why, "checkpoint %lld", (long long)ckpt);
  return drain(sink->impl, why, err);
}

static int kafka_sink_commit(ck_sink_t *sink, int64_t ckpt, ck_error_t *err) { return 0; }

static int kafka_sink_finish(ck_sink_t *sink, ck_error_t *err) {
  kafka_sink_t *kk = sink->impl;
  int rc = drain(kk, "end of input", err);
  if (!rc)
    CK_LOG_DEBUG(CK_KAFKA_LOG, "table '%s' subtask %d: %lld records delivered to topic '%s'",
                 kk->kc.table, sink->ctx.subtask, (long long)kk->delivered, kk->kc.topic);
  return rc;
}

static void kafka_sink_close(ck_sink_t *sink) {
  kafka_sink_t *kk = sink->impl;
  if (!kk) return;
  if (kk->kc.rk) {
    /* anything still queued is abandoned (the job failed or stopped): at least once, a
     * restart writes it again */
    (void)rd_kafka_purge(kk->kc.rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    (void)rd_kafka_flush(kk->kc.rk, 1000);
  }
  if (kk->rkt) rd_kafka_topic_destroy(kk->rkt);
  ck_kafka_client_close(&kk->kc);
  ck_encoder_free(kk->enc);
  ck_encoder_free(kk->key_enc);
  ck_free(kk->key_cols);
  ck_free(kk->key_view);
  ck_free((void *)kk->key_schema.names);
  ck_free(kk->key_schema.types);
  ck_buf_fini(&kk->val);
  ck_buf_fini(&kk->key);
  ck_free(kk);
  sink->impl = NULL;
}

const ck_sink_ops_t ck_kafka_sink_ops = {
    .open = kafka_sink_open,
    .write = kafka_sink_write,
    .prepare = kafka_sink_prepare,
    .commit = kafka_sink_commit,
    .finish = kafka_sink_finish,
    .close = kafka_sink_close,
    .recover = NULL, /* at least once: nothing to re-commit or roll back */
};
