/*
 * DESIGN: connector='kafka' — the descriptor, its option tables and plan-time check, and the
 * client plumbing the source (kafka_source.c) and the sink (kafka_sink.c) share.
 *
 * Configuration: every client gets bootstrap.servers from `brokers`, a client.id naming the
 * table and subtask, its role's settings, and then each 'kafka.<property>' option verbatim, so
 * a user can tune anything librdkafka knows (an unknown property is refused at plan time,
 * naming the option). librdkafka's own log lines go to ck_log at debug level ("[kafka] rdkafka
 * FAC: …"); its errors (an unreachable broker, all brokers down) arrive through error_cb on the
 * owning thread and are logged at warn level, rate-limited per client. Waiting at start-up for
 * metadata or offsets retries with exponential backoff (100 ms doubling to 5 s), logs at once
 * and then every CK_KAFKA_LOG_EVERY_MS, and gives up after connect_timeout_ms with
 * CK_ECONNECT: never a silent hang. A topic that does not exist is CK_ENOTFOUND once the
 * brokers said so for CK_KAFKA_TOPIC_GRACE_MS (a topic created a moment ago may not be in every
 * broker's metadata yet).
 *
 * Threads: everything here runs on the calling subtask's thread, except log_cb, which
 * librdkafka calls from its own threads and which only calls ck_log (thread-safe).
 */
#include "connectors/kafka/kafka.h"
#include "connectors/kafka/kfetch.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "base/log.h"
#include "base/time.h"
#include "connectors/connectors.h"
#include "connectors/format.h"
#include "connectors/util.h"

#define KAFKA_BACKOFF_FIRST_MS 100
#define KAFKA_BACKOFF_MAX_MS 5000

/* =========================================================== option tables ====== */

#define KAFKA_BROKERS_DEF                                                                      \
  {"brokers", CK_OPT_STRING, NULL, NULL, true,                                                 \
   "Kafka bootstrap servers, 'host:port[,host:port...]'"}
#define KAFKA_CONNECT_TIMEOUT_DEF                                                              \
  {"connect_timeout_ms", CK_OPT_INT, "120000", NULL, false,                                    \
   "how long start-up keeps retrying brokers that cannot be reached (or a topic without "      \
   "leaders) before the job fails; every retry is logged. 0 retries for ever"}

const ck_opt_def_t ck_kafka_source_options[] = {
    KAFKA_BROKERS_DEF,
    {"topic", CK_OPT_STRING, NULL, NULL, true,
     "topic to read; it must exist. clink assigns its partitions itself: partition p is read "
     "by source subtask p mod parallelism (no consumer-group rebalancing). format is 'json' "
     "(default), 'csv', or 'raw' (one VARCHAR column: the whole message value)"},
    {"group_id", CK_OPT_STRING, NULL, NULL, false,
     "consumer group name the client identifies as (default 'clink-<table>'). Positions are "
     "the source's own checkpointed state: the group's committed offsets are never read, and "
     "never written"},
    {"auto_offset_reset", CK_OPT_ENUM, "latest", "earliest|latest", false,
     "where a partition without a restored position starts: at its earliest or at its latest "
     "offset, resolved once at start-up (latest, as in Kafka's own consumer)"},
    {"isolation.level", CK_OPT_ENUM, "read_committed", "read_committed|read_uncommitted", false,
     "read_committed delivers only records of committed transactions; read_uncommitted also "
     "delivers records of aborted and open transactions"},
    {"scan.bounded", CK_OPT_ENUM, "none", "none|latest", false,
     "latest: read each partition up to its end offset as of start-up, then end the input (a "
     "bounded source: every window fires); none: read for ever"},
    {"fetcher", CK_OPT_ENUM, "auto", "auto|clink|librdkafka", false,
     "how records are fetched. clink: the engine's own fetch client, on the source's thread "
     "(PLAINTEXT brokers, Kafka 2.3 or later; of the 'kafka.<property>' options it takes "
     "fetch.wait.max.ms, max.partition.fetch.bytes, fetch.max.bytes, check.crcs, client.id "
     "and security.protocol = plaintext). librdkafka: librdkafka's consumer (TLS, SASL, any "
     "other property). auto: clink, unless a 'kafka.<property>' option needs librdkafka"},
    KAFKA_CONNECT_TIMEOUT_DEF,
    {"kafka.", CK_OPT_STRING, NULL, NULL, false,
     "'kafka.<property>' passes a librdkafka consumer property through (e.g. "
     "'kafka.fetch.max.bytes'); it overrides clink's own setting of that property. clink's "
     "own fetch client takes the few listed under fetcher; any other makes 'auto' read "
     "through librdkafka"},
    {NULL, 0, NULL, NULL, false, NULL},
};

const ck_opt_def_t ck_kafka_sink_options[] = {
    KAFKA_BROKERS_DEF,
    {"topic", CK_OPT_STRING, NULL, NULL, true,
     "topic to write; it must exist (unless 'kafka.allow.auto.create.topics' = 'true' and the "
     "broker creates topics). format is 'json' (default; changelog rows carry \"op\") or "
     "'csv'"},
    {"key", CK_OPT_STRING, NULL, NULL, false,
     "comma-separated columns forming each message's key: a single VARCHAR column gives its "
     "bytes (NULL: no key), other columns the JSON object of them. Without a key, librdkafka's "
     "partitioner spreads the messages over the partitions"},
    KAFKA_CONNECT_TIMEOUT_DEF,
    {"kafka.", CK_OPT_STRING, NULL, NULL, false,
     "'kafka.<property>' passes a librdkafka producer property through (e.g. "
     "'kafka.linger.ms', 'kafka.compression.type'); it overrides clink's own setting"},
    {"redo_max_bytes", CK_OPT_INT, "8388608", NULL, false,
     "with delivery_guarantee = 'exactly_once' (one Kafka transaction per checkpoint interval "
     "and sink subtask, committed when the checkpoint completes; read the topic with "
     "isolation.level = read_committed): an interval's output up to this many bytes is also "
     "kept in the checkpoint, so that a commit lost to a crash is written again on restore; a "
     "larger interval (or 0) makes the restore rewind to the checkpoint before instead"},
    {NULL, 0, NULL, NULL, false, NULL},
};

/* ================================================================== errors ====== */

int ck_kafka_error(ck_error_t *err, int code, rd_kafka_resp_err_t rerr, const char *fmt, ...) {
  if (!err || err->code) return code;
  char msg[CK_ERR_MSG];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ck_error_set(err, code, "%s", msg);
  snprintf(err->origin, sizeof err->origin, "kafka");
  err->origin_code = (int)rerr;
  err->retriable = rerr == RD_KAFKA_RESP_ERR__TRANSPORT ||
                   rerr == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN ||
                   rerr == RD_KAFKA_RESP_ERR__TIMED_OUT ||
                   rerr == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT;
  return code;
}

void ck_kafka_log_error(kafka_client_t *kc, int code, const char *reason) {
  int64_t now = ck_mono_ms();
  if (code == kc->last_err && kc->last_err_log_ms &&
      now - kc->last_err_log_ms < CK_KAFKA_LOG_EVERY_MS) {
    kc->errs_suppressed++;
    return;
  }
  if (kc->errs_suppressed)
    CK_LOG_WARN(CK_KAFKA_LOG, "table '%s' (brokers '%s'): %s (%lld more errors since the last "
                "report)", kc->table, kc->brokers, reason, (long long)kc->errs_suppressed);
  else
    CK_LOG_WARN(CK_KAFKA_LOG, "table '%s' (brokers '%s'): %s", kc->table, kc->brokers, reason);
  kc->last_err = code;
  kc->last_err_log_ms = now;
  kc->errs_suppressed = 0;
}

/* librdkafka's threads: ck_log only. */
static void log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
  CK_LOG_DEBUG(CK_KAFKA_LOG, "rdkafka %s %s: %s", rd_kafka_name(rk), fac, buf);
}

/* The owning thread, inside rd_kafka_poll/flush. */
static void error_cb(rd_kafka_t *rk, int code, const char *reason, void *opaque) {
  kafka_client_t *kc = opaque;
  if (code == RD_KAFKA_RESP_ERR__FATAL) {
    char why[512];
    rd_kafka_fatal_error(rk, why, sizeof why);
    kc->fatal = true;
    CK_LOG_ERR(CK_KAFKA_LOG, "table '%s' (brokers '%s'): fatal error: %s", kc->table,
               kc->brokers, why);
    return;
  }
  if (kc->closing) return;
  if (code == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION ||
      code == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || code == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC)
    kc->topic_suspect = true; /* the owner checks the metadata, and fails if it is so */
  ck_kafka_log_error(kc, code, reason);
}

/* ================================================================== client ====== */

int ck_kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value,
                      const char *option, ck_error_t *err) {
  char why[512];
  if (rd_kafka_conf_set(conf, key, value, why, sizeof why) == RD_KAFKA_CONF_OK) return 0;
  ck_error_set(err, CK_EOPTION, "invalid Kafka client setting '%s' = '%s'%s%s%s: %s", key,
               value, option ? " (option '" : "", option ? option : "", option ? "')" : "",
               why);
  ck_error_hint(err, "'kafka.<property>' takes librdkafka's configuration properties "
                     "(CONFIGURATION.md of librdkafka 2.0)");
  return CK_EOPTION;
}

static const ck_opt_def_t *role_options(rd_kafka_type_t type) {
  return type == RD_KAFKA_PRODUCER ? ck_kafka_sink_options : ck_kafka_source_options;
}

int ck_kafka_client_names(kafka_client_t *kc, const ck_conn_ctx_t *ctx, rd_kafka_type_t type,
                          ck_error_t *err) {
  const ck_options_t *opts = ctx->options;
  const ck_opt_def_t *defs = role_options(type);
  memset(kc, 0, sizeof *kc);
  kc->table = ck_strdup(ctx->table ? ctx->table : "?");
  kc->subtask = ctx->subtask;
  const char *brokers = ck_options_get(opts, "brokers");
  const char *topic = ck_options_get(opts, "topic");
  kc->brokers = ck_strdup(brokers ? brokers : "");
  kc->topic = ck_strdup(topic ? topic : "");
  kc->connect_timeout_ms = ck_opt_int(opts, defs, "connect_timeout_ms");
  if (!brokers || !*brokers || !topic || !*topic)
    return ck_error_set(err, CK_EOPTION, "the kafka connector of table '%s' needs options "
                        "'brokers' and 'topic'", kc->table);
  return 0;
}

int ck_kafka_client_open(kafka_client_t *kc, const ck_conn_ctx_t *ctx, rd_kafka_type_t type,
                         const char *const *defaults,
                         void (*dr_msg_cb)(rd_kafka_t *, const rd_kafka_message_t *, void *),
                         ck_error_t *err) {
  return ck_kafka_client_open_stats(kc, ctx, type, defaults, dr_msg_cb, NULL, err);
}

int ck_kafka_client_open_stats(kafka_client_t *kc, const ck_conn_ctx_t *ctx,
                               rd_kafka_type_t type, const char *const *defaults,
                               void (*dr_msg_cb)(rd_kafka_t *, const rd_kafka_message_t *,
                                                 void *),
                               int (*stats_cb)(rd_kafka_t *, char *, size_t, void *),
                               ck_error_t *err) {
  int rc = ck_kafka_client_names(kc, ctx, type, err);
  if (rc) return rc;
  const ck_options_t *opts = ctx->options;
  const char *brokers = kc->brokers;

  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  char client_id[256];
  snprintf(client_id, sizeof client_id, "clink-%s-%d", kc->table, kc->subtask);
  rc = ck_kafka_conf_set(conf, "bootstrap.servers", brokers, "brokers", err);
  if (!rc) rc = ck_kafka_conf_set(conf, "client.id", client_id, NULL, err);
  if (!rc) rc = ck_kafka_conf_set(conf, "log.connection.close", "false", NULL, err);
  for (const char *const *d = defaults; !rc && d && d[0]; d += 2)
    rc = ck_kafka_conf_set(conf, d[0], d[1], NULL, err);
  for (int i = 0; !rc && opts && i < opts->n; i++)
    if (strncmp(opts->keys[i], "kafka.", 6) == 0 && opts->keys[i][6])
      rc = ck_kafka_conf_set(conf, opts->keys[i] + 6, opts->values[i], opts->keys[i], err);
  if (rc) {
    rd_kafka_conf_destroy(conf);
    return rc;
  }
  rd_kafka_conf_set_opaque(conf, kc);
  rd_kafka_conf_set_log_cb(conf, log_cb);
  rd_kafka_conf_set_error_cb(conf, error_cb);
  if (dr_msg_cb) rd_kafka_conf_set_dr_msg_cb(conf, dr_msg_cb);
  if (stats_cb) rd_kafka_conf_set_stats_cb(conf, stats_cb);
  char why[512];
  kc->rk = rd_kafka_new(type, conf, why, sizeof why);
  if (!kc->rk) {
    rd_kafka_conf_destroy(conf);
    return ck_error_set(err, CK_EOPTION, "could not create the Kafka %s of table '%s': %s",
                        type == RD_KAFKA_PRODUCER ? "producer" : "consumer", kc->table, why);
  }
  return 0;
}

void ck_kafka_client_close(kafka_client_t *kc) {
  if (kc->rk) rd_kafka_destroy(kc->rk);
  kc->rk = NULL;
  ck_free(kc->table);
  ck_free(kc->brokers);
  ck_free(kc->topic);
  kc->table = kc->brokers = kc->topic = NULL;
}

/* ============================================================ waiting ====== */

void ck_kafka_retry_init(ck_kafka_retry_t *r) {
  r->start = ck_mono_ms();
  r->last_log = 0;
  r->backoff = KAFKA_BACKOFF_FIRST_MS;
}

int ck_kafka_retry_wait(kafka_client_t *kc, ck_kafka_retry_t *r, const char *what,
                        rd_kafka_resp_err_t rerr, const char *reason, ck_error_t *err) {
  int64_t now = ck_mono_ms(), elapsed = now - r->start;
  if (kc->connect_timeout_ms > 0 && elapsed >= kc->connect_timeout_ms) {
    ck_kafka_error(err, CK_ECONNECT, rerr,
                   "could not %s from Kafka brokers '%s' within %lld ms: %s", what, kc->brokers,
                   (long long)kc->connect_timeout_ms, reason);
    ck_error_hint(err, "check that the brokers are up and that 'brokers' names them; "
                       "connect_timeout_ms sets how long start-up keeps retrying");
    return CK_ECONNECT;
  }
  if (!r->last_log || now - r->last_log >= CK_KAFKA_LOG_EVERY_MS) {
    CK_LOG_WARN(CK_KAFKA_LOG, "table '%s': could not %s from brokers '%s': %s; retrying (%.1f s "
                "so far%s)", kc->table, what, kc->brokers, reason, (double)elapsed / 1000.0,
                kc->connect_timeout_ms > 0 ? ", giving up at connect_timeout_ms" : "");
    r->last_log = now;
  }
  int64_t sleep = r->backoff;
  if (kc->connect_timeout_ms > 0 && elapsed + sleep > kc->connect_timeout_ms)
    sleep = kc->connect_timeout_ms - elapsed;
  if (kc->rk) rd_kafka_poll(kc->rk, 0); /* serve error callbacks meanwhile */
  if (sleep > 0) ck_sleep_ms(sleep);
  r->backoff = r->backoff * 2 > KAFKA_BACKOFF_MAX_MS ? KAFKA_BACKOFF_MAX_MS : r->backoff * 2;
  return 0;
}

int ck_kafka_not_found(kafka_client_t *kc, ck_error_t *err) {
  ck_kafka_error(err, CK_ENOTFOUND, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
                 "topic '%s' does not exist on Kafka brokers '%s' (table '%s')", kc->topic,
                 kc->brokers, kc->table);
  ck_error_hint(err, "create the topic first: clink assigns a topic's partitions itself at "
                     "start-up, so the topic must exist before the job starts");
  return CK_ENOTFOUND;
}

int ck_kafka_topic_partitions(kafka_client_t *kc, int *nparts, ck_error_t *err) {
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(kc->rk, kc->topic, NULL);
  if (!rkt)
    return ck_kafka_error(err, CK_EOPTION, rd_kafka_last_error(),
                          "could not use topic '%s': %s", kc->topic,
                          rd_kafka_err2str(rd_kafka_last_error()));
  char what[300];
  snprintf(what, sizeof what, "get the metadata of topic '%s'", kc->topic);
  ck_kafka_retry_t r;
  ck_kafka_retry_init(&r);
  int rc = 0;
  for (;;) {
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t rerr = rd_kafka_metadata(kc->rk, 0, rkt, &md, CK_KAFKA_ATTEMPT_MS);
    rd_kafka_poll(kc->rk, 0);
    if (!rerr) {
      const struct rd_kafka_metadata_topic *t = md->topic_cnt > 0 ? &md->topics[0] : NULL;
      rerr = t ? t->err : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
      int n = t ? t->partition_cnt : 0;
      rd_kafka_metadata_destroy(md);
      if ((rerr == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
           rerr == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC) &&
          ck_mono_ms() - r.start >= CK_KAFKA_TOPIC_GRACE_MS) {
        rc = ck_kafka_not_found(kc, err);
        break;
      }
      if (rerr == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
        rc = ck_kafka_error(err, CK_EREMOTE, rerr, "could not read the metadata of topic '%s' "
                            "from Kafka brokers '%s': %s", kc->topic, kc->brokers,
                            rd_kafka_err2str(rerr));
        break;
      }
      if (!rerr && n > 0) {
        *nparts = n;
        break;
      }
      if (!rerr) rerr = RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE; /* no partitions yet */
    }
    if (rerr == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
        rerr == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC) { /* within the grace period: quietly again */
      ck_sleep_ms(KAFKA_BACKOFF_FIRST_MS);
      continue;
    }
    if ((rc = ck_kafka_retry_wait(kc, &r, what, rerr, rd_kafka_err2str(rerr), err))) break;
  }
  rd_kafka_topic_destroy(rkt);
  return rc;
}

int ck_kafka_watermarks(kafka_client_t *kc, int32_t partition, int64_t *low, int64_t *high,
                        ck_error_t *err) {
  char what[300];
  snprintf(what, sizeof what, "get the offsets of partition %d of topic '%s'", (int)partition,
           kc->topic);
  ck_kafka_retry_t r;
  ck_kafka_retry_init(&r);
  for (;;) {
    rd_kafka_resp_err_t rerr = rd_kafka_query_watermark_offsets(kc->rk, kc->topic, partition,
                                                                low, high, CK_KAFKA_ATTEMPT_MS);
    rd_kafka_poll(kc->rk, 0);
    if (!rerr) return 0;
    if (rerr == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
        rerr == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION || rerr == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC)
      return ck_kafka_error(err, CK_ENOTFOUND, rerr, "partition %d of topic '%s' does not exist "
                            "on Kafka brokers '%s': %s", (int)partition, kc->topic, kc->brokers,
                            rd_kafka_err2str(rerr));
    int rc = ck_kafka_retry_wait(kc, &r, what, rerr, rd_kafka_err2str(rerr), err);
    if (rc) return rc;
  }
}

/* ================================================================ snapshot ====== */

static void snap_put(ck_buf_t *out, int version, const char *topic, const ck_kafka_pos_t *pos,
                     int n, const int64_t *starts, const ck_kafka_ident_t *id) {
  size_t tlen = strlen(topic);
  ck_buf_putc(out, (char)version);
  ck_buf_put_uvarint(out, tlen);
  ck_buf_append(out, topic, tlen);
  ck_buf_put_uvarint(out, (uint64_t)n);
  for (int i = 0; i < n; i++) {
    ck_buf_put_uvarint(out, (uint64_t)pos[i].partition);
    ck_buf_put_uvarint(out, (uint64_t)pos[i].offset);
    if (version >= 2)
      ck_buf_put_uvarint(out, starts && starts[i] >= 0 ? (uint64_t)starts[i] + 1 : 0);
  }
  if (version < 2) return;
  size_t clen = id ? id->cluster_id.len : 0;
  ck_buf_put_uvarint(out, clen);
  if (clen) ck_buf_append(out, id->cluster_id.ptr, clen);
  ck_buf_putc(out, id && id->has_topic_id ? 1 : 0);
  if (id && id->has_topic_id) ck_buf_append(out, id->topic_id, 16);
}

void ck_kafka_snap_encode(ck_buf_t *out, const char *topic, const ck_kafka_pos_t *pos, int n) {
  snap_put(out, 1, topic, pos, n, NULL, NULL);
}

void ck_kafka_snap_encode_ident(ck_buf_t *out, const char *topic, const ck_kafka_pos_t *pos,
                                int n, const int64_t *starts, const ck_kafka_ident_t *id) {
  snap_put(out, 2, topic, pos, n, starts, id);
}

int ck_kafka_snap_decode_ident(const void *data, size_t len, ck_str_t *topic,
                               ck_kafka_pos_t **pos, int64_t **starts, int *n,
                               ck_kafka_ident_t *id, int *version, ck_error_t *err) {
  const uint8_t *p = data, *end = p + len;
  uint64_t tlen, count, part, off, st, clen;
  ck_kafka_pos_t *out = NULL;
  int64_t *sts = NULL;
  *pos = NULL;
  if (starts) *starts = NULL;
  *n = 0;
  if (id) memset(id, 0, sizeof *id);
  if (len < 1 || (*p != 1 && *p != 2))
    return ck_error_set(err, CK_ESTATE, "could not restore the kafka source position: unknown "
                        "state version %d", len ? *p : -1);
  int v = *p++;
  if (version) *version = v;
  if (!ck_uvarint_get(&p, end, &tlen) || tlen > (uint64_t)(end - p)) goto corrupt;
  topic->ptr = (const char *)p;
  topic->len = (size_t)tlen;
  p += tlen;
  /* every entry takes at least two bytes: a larger count is corrupt, not an allocation */
  if (!ck_uvarint_get(&p, end, &count) || count > (uint64_t)(end - p) / 2) goto corrupt;
  out = ck_calloc(count ? (size_t)count : 1, sizeof *out);
  sts = ck_calloc(count ? (size_t)count : 1, sizeof *sts);
  for (uint64_t i = 0; i < count; i++) {
    if (!ck_uvarint_get(&p, end, &part) || !ck_uvarint_get(&p, end, &off) ||
        part > INT32_MAX || off > INT64_MAX)
      goto corrupt;
    out[i].partition = (int32_t)part;
    out[i].offset = (int64_t)off;
    sts[i] = -1;
    if (v >= 2) {
      if (!ck_uvarint_get(&p, end, &st) || st > (uint64_t)INT64_MAX) goto corrupt;
      sts[i] = (int64_t)st - 1;
    }
  }
  if (v >= 2) {
    if (!ck_uvarint_get(&p, end, &clen) || clen > (uint64_t)(end - p)) goto corrupt;
    if (id) id->cluster_id = (ck_str_t){(const char *)p, (size_t)clen};
    p += clen;
    if (p >= end || *p > 1) goto corrupt;
    bool has = *p++ == 1;
    if (has) {
      if (end - p < 16) goto corrupt;
      if (id) {
        id->has_topic_id = true;
        memcpy(id->topic_id, p, 16);
      }
      p += 16;
    }
  }
  if (p != end) goto corrupt;
  *pos = out;
  if (starts) *starts = sts;
  else ck_free(sts);
  *n = (int)count;
  return 0;
corrupt:
  ck_free(out);
  ck_free(sts);
  if (id) memset(id, 0, sizeof *id);
  return ck_error_set(err, CK_ESTATE, "could not restore the kafka source position: the state "
                      "is truncated or corrupt");
}

int ck_kafka_snap_decode(const void *data, size_t len, ck_str_t *topic, ck_kafka_pos_t **pos,
                         int *n, ck_error_t *err) {
  return ck_kafka_snap_decode_ident(data, len, topic, pos, NULL, n, NULL, NULL, err);
}

void ck_kafka_topic_id_str(const uint8_t id[16], char out[23]) {
  static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  int k = 0;
  for (int i = 0; i < 16; i += 3) {
    uint32_t v = (uint32_t)id[i] << 16 | (i + 1 < 16 ? (uint32_t)id[i + 1] << 8 : 0) |
                 (i + 2 < 16 ? id[i + 2] : 0);
    int chars = i + 2 < 16 ? 4 : i + 1 < 16 ? 3 : 2;
    for (int c = 0; c < chars; c++) out[k++] = b64[(v >> (18 - 6 * c)) & 63];
  }
  out[k] = 0;
}

/* ============================================================== the check ====== */

int ck_kafka_parse_key(const ck_schema_t *schema, const char *key, int **cols, int *n,
                       ck_error_t *err) {
  *cols = NULL;
  *n = 0;
  int cap = 1;
  for (const char *p = key; *p; p++) cap += *p == ',';
  int *out = ck_calloc((size_t)cap, sizeof *out);
  int count = 0;
  for (const char *p = key;;) {
    size_t len = strcspn(p, ",");
    const char *s = p, *e = p + len;
    while (s < e && (*s == ' ' || *s == '\t')) s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
    char name[256];
    if (e == s || (size_t)(e - s) >= sizeof name) {
      ck_free(out);
      return ck_error_set(err, CK_EOPTION, "option 'key' must be a comma-separated list of "
                          "column names, not '%s'", key);
    }
    memcpy(name, s, (size_t)(e - s));
    name[e - s] = 0;
    int col = ck_schema_find(schema, name);
    if (col < 0) {
      ck_free(out);
      ck_error_set(err, CK_EOPTION, "key column '%s' is not a column of the table", name);
      const char *close = ck_closest(name, schema->names, (size_t)schema->ncols);
      if (close) ck_error_hint(err, "did you mean '%s'?", close);
      return CK_EOPTION;
    }
    out[count++] = col;
    if (!p[len]) break;
    p += len + 1;
  }
  *cols = out;
  *n = count;
  return 0;
}

const char *ck_kafka_needs_librdkafka(const ck_options_t *opts) {
  for (int i = 0; opts && i < opts->n; i++)
    if (strncmp(opts->keys[i], "kafka.", 6) == 0 &&
        !ck_kfetch_understands(opts->keys[i] + 6, opts->values[i]))
      return opts->keys[i];
  return NULL;
}

static int kafka_check(const ck_schema_t *schema, const ck_options_t *opts, bool as_sink,
                       ck_error_t *err) {
  const char *fmt = ck_options_get(opts, "format");
  int rc;
  if (!as_sink && fmt && strcmp(fmt, "raw") == 0) {
    if (schema->ncols != 1 || schema->types[0].id != CK_T_STRING)
      return ck_error_set(err, CK_EOPTION, "format 'raw' needs a table of exactly one VARCHAR "
                          "column (it holds each message's value), not %d column%s",
                          schema->ncols, schema->ncols == 1 ? " of another type" : "s");
  } else if (fmt && strcmp(fmt, "json") != 0 && strcmp(fmt, "csv") != 0) {
    ck_error_set(err, CK_EOPTION, "the kafka connector does not support format '%s'", fmt);
    ck_error_hint(err, as_sink ? "use format 'json' or 'csv'"
                               : "use format 'json', 'csv' or 'raw'");
    return CK_EOPTION;
  }
  const char *key = ck_options_get(opts, "key");
  if (as_sink && key) {
    int *cols, n;
    if ((rc = ck_kafka_parse_key(schema, key, &cols, &n, err))) return rc;
    ck_free(cols);
  }
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rc = 0;
  for (int i = 0; !rc && i < opts->n; i++)
    if (strncmp(opts->keys[i], "kafka.", 6) == 0)
      rc = ck_kafka_conf_set(conf, opts->keys[i] + 6, opts->values[i], opts->keys[i], err);
  rd_kafka_conf_destroy(conf);
  const char *fetcher = ck_options_get(opts, "fetcher");
  if (!rc && !as_sink && fetcher && strcmp(fetcher, "clink") == 0) {
    const char *needs = ck_kafka_needs_librdkafka(opts);
    if (needs) {
      ck_error_set(err, CK_EOPTION, "option '%s' needs librdkafka's consumer, but the table "
                   "sets fetcher = 'clink'", needs);
      ck_error_hint(err, "set fetcher = 'librdkafka' (or 'auto', which picks it for such "
                         "options)");
      return CK_EOPTION;
    }
  }
  return rc;
}

const ck_connector_t ck_kafka_connector = {
    .name = "kafka",
    .description = "Apache Kafka topics. Source: partitions assigned by the engine (p mod "
                   "parallelism), offsets checkpointed as the source's own state, "
                   "read_committed by default, optionally bounded at start-up's end offsets; "
                   "formats json, csv, raw. Sink: idempotent producer, flushed at every "
                   "checkpoint (at least once); or, with delivery_guarantee = 'exactly_once', "
                   "one transaction per checkpoint interval, committed with the checkpoint",
    .source_options = ck_kafka_source_options,
    .sink_options = ck_kafka_sink_options,
    .source = &ck_kafka_source_ops,
    .sink = &ck_kafka_sink_ops,
    .sink_guarantee = CK_GUARANTEE_EXACTLY_ONCE, /* on request; at least once by default */
    .bounded = false,
    .check = kafka_check,
};
