/*
 * DESIGN: the Kafka sink (connector='kafka' written to): at least once by default, exactly once
 * with delivery_guarantee = 'exactly_once'.
 *
 * Encoding (both modes): write() encodes every row of the batch with the table's format (json:
 * changelog rows carry "op") into one reused buffer and hands it to librdkafka (copied), with
 * the key when `key` names columns: a single VARCHAR column gives its bytes, other columns the
 * JSON object of those columns (encoded by the JSON encoder over a view batch of just the key
 * columns, so no second encoder of our own). A full local queue is waited out (rd_kafka_poll),
 * logged when it lasts. A failed delivery (after librdkafka's retries, within
 * message.timeout.ms) is a job error with the broker's reason, returned by the next write,
 * prepare, commit or finish.
 *
 * At least once: one idempotent producer per sink subtask (no duplicates or reordering from
 * librdkafka's own retries; linger 5 ms). prepare(ckpt) and finish() flush and wait until every
 * message handed over has a delivery report (rd_kafka_outq_len reaches 0), logging every
 * CK_KAFKA_LOG_EVERY_MS while nothing moves; so after prepare everything before the barrier is
 * in Kafka. A restart writes again what followed the last checkpoint. No state, no recover.
 *
 * Exactly once: one Kafka transaction per checkpoint interval per sink subtask.
 *   Producers. Two transactional producers per subtask ("slots"), with the stable ids
 *   "clink-<identity>-<subtask>-<slot>" (kafka_eos.h: the identity hashes the job's real script
 *   path, the table, the topic and an instance number). The slots alternate: interval N is
 *   written into slot s; prepare(N) closes it for writing and interval N+1 goes to slot s^1
 *   while N's transaction awaits commit(N) (the executor commits a completed checkpoint before
 *   it prepares the next, so the other slot is free again by then; when it is not yet — the
 *   commit of N-1 comes after a few rows of N+1 — those rows wait in memory, `pending`, and go
 *   out once the slot is committed). A transaction begins lazily, at its first row or at
 *   prepare.
 *   prepare(N): flush the slot and wait for every delivery; then, inside the transaction,
 *   send_offsets_to_transaction of the sink-owned group "clink-sink-<identity>-<subtask>"
 *   (never a real consumer) for partition 0 of the output topic, offset N, metadata
 *   "clink ckpt=N": it becomes visible only if the transaction commits, so a restarted sink
 *   can tell whether N committed. State: kafka_eos.h (N, the slot, an older checkpoint still
 *   awaiting commit, and — up to redo_max_bytes — the interval's messages themselves).
 *   commit(N): commit_transaction of every slot holding a checkpoint <= N, oldest first.
 *   open(fresh): init_transactions on both slots (fences a dead incarnation's producers and
 *   aborts what they left open), then a transaction holding only the marker "ckpt=0": a new
 *   lineage (checkpoint ids restart in another directory) never trusts an old marker.
 *   recover(R): adopt the identity the state names; init_transactions on both slots; read the
 *   marker group's committed offset metadata (require_stable, through the admin API). It says
 *   >= R: R committed. It says < R (R's commit was lost: a kill between COMPLETED and the
 *   commit; librdkafka cannot resume a transaction of a dead producer, and init_transactions
 *   just aborted it): if R's state holds the interval's messages they are written again in a
 *   new transaction together with the marker R and committed (a redo: nothing else changes);
 *   otherwise (the interval was larger than redo_max_bytes, or an older checkpoint's commit
 *   was lost as well) CK_EREWIND naming R: the CLI restores the newest completed checkpoint
 *   below R (the executor keeps it on disk) and the interval is replayed into a new
 *   transaction.
 *   finish(): the final checkpoint was committed before it; a job without checkpoints has
 *   one transaction for its whole output, committed here. close() aborts a transaction still
 *   open or prepared (a failed job), so read_committed readers are not held up until the
 *   transaction timeout.
 *   Readers of the output must read with isolation.level=read_committed.
 *   Limits: two runs of the same job writing the same table concurrently fence each other (a
 *   fatal error for the older one). Subtasks commit independently: with parallelism > 1 a kill
 *   between two subtasks' commits of one checkpoint is resolved by the redo, so an interval
 *   larger than redo_max_bytes that is then rewound is written twice by the subtasks that had
 *   committed it. Orphaned transactions of subtasks a smaller --fresh parallelism no longer has
 *   are left to the broker's transaction timeout (librdkafka's transaction.timeout.ms, 60 s).
 *
 * Threads: one instance per sink subtask, called on its thread; delivery reports are served on
 * that thread inside rd_kafka_poll/rd_kafka_flush/commit. The registry of live identities is
 * shared by the sink instances of the process (live_mu).
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/time.h"
#include "checkpoint/trace.h"
#include "connectors/format.h"
#include "connectors/kafka/kafka.h"
#include "connectors/kafka/kafka_eos.h"
#include "connectors/util.h"

#define TXN_ATTEMPT_MS 30000   /* one librdkafka transactional call waits at most this long */
#define ABORT_AT_CLOSE_MS 5000
#define MARKER_PREFIX "clink ckpt="
#define LIVE_MAX 1024

enum { TXN_NONE, TXN_OPEN, TXN_PREPARED };

/* The offsets one producer's records took in one partition during an interval. */
typedef struct range {
  int64_t first, last, count; /* count 0: none */
} range_t;

/* One librdkafka producer of a sink instance. */
typedef struct producer {
  kafka_client_t kc; /* first: librdkafka's opaque is &kc, i.e. the producer */
  rd_kafka_topic_t *rkt;
  int64_t sent, delivered, failed;
  /* the first failed delivery */
  rd_kafka_resp_err_t fail_err;
  int32_t fail_partition;
  char fail_reason[256];
  /* exactly once */
  int slot;
  char txn_id[CK_KAFKA_ID_MAX];
  int txn;         /* TXN_* */
  int64_t ckpt;    /* TXN_PREPARED: the checkpoint its transaction belongs to */
  int64_t records; /* in its open or prepared transaction */
  /* the interval evidence's account (kafka_sink_account): per partition, the offsets its
   * delivery reports gave since the interval (exactly once: its transaction) began; and its
   * producer id and epoch as librdkafka's statistics last reported them (-1: not yet) */
  range_t *ranges;
  int nranges;
  int64_t pid, epoch;
} producer_t;

/* What the account of the last prepared interval reports (copied at prepare). */
typedef struct acct {
  int64_t ckpt;          /* 0: no interval prepared yet */
  int slot;
  int64_t records, pid, epoch;
  range_t *ranges;       /* nranges */
  int nranges;
} acct_t;

typedef struct kafka_sink {
  const ck_conn_ctx_t *ctx;
  const char *table, *topic, *brokers;
  ck_encoder_t *enc;
  ck_encoder_t *key_enc;   /* JSON over key_schema; NULL for no key or a raw VARCHAR key */
  int *key_cols;
  int nkeys;
  bool key_raw;            /* one VARCHAR key column: its bytes */
  ck_schema_t key_schema;  /* names/types point into the table's schema */
  ck_col_t *key_view;      /* shallow copies of the key columns of the batch being written */
  ck_buf_t val, key;
  producer_t prod[CK_KAFKA_TXN_SLOTS];
  int nprod;
  int nparts;
  /* exactly once */
  bool eos;
  bool started;            /* producers made, transactions initialised */
  bool claimed;            /* identity taken in the live registry */
  uint64_t identity;
  char group[CK_KAFKA_ID_MAX];
  char *job;               /* the job's real path (or its name) */
  int cur;                 /* the slot rows go to */
  ck_buf_t pending;        /* rows waiting for the current slot's commit (held format) */
  int64_t npending;
  ck_buf_t held;           /* this interval's rows, kept for a redo (held format) */
  int64_t nheld;
  bool held_ok;            /* held has all of them (not over redo_max) */
  int64_t redo_max;
  int64_t committed_ckpt;  /* newest checkpoint committed by this instance (logs) */
  /* the interval evidence (kafka_sink_account) */
  acct_t done;             /* the interval the last prepare closed */
  int64_t recovered_ckpt;  /* the checkpoint recover resolved (0: none), and how */
  int64_t recovered_marker;
  const char *recovered_how; /* "committed", "redo" */
  int64_t recovered_records;
  int64_t done_delivered;  /* at least once: deliveries counted into earlier intervals */
} kafka_sink_t;

static const char *const no_txn_id = "";

/* ================================================================ identities ====== */

uint64_t ck_kafka_sink_identity(const char *job, const char *table, const char *topic,
                                int instance) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_buf_puts(&b, job ? job : "");
  ck_buf_putc(&b, 0);
  ck_buf_puts(&b, table ? table : "");
  ck_buf_putc(&b, 0);
  ck_buf_puts(&b, topic ? topic : "");
  ck_buf_putc(&b, 0);
  ck_buf_printf(&b, "%d", instance);
  uint64_t h = ck_hash64(b.data, b.len, 0x6b61666b61656f73ULL /* "kafkaeos" */);
  ck_buf_fini(&b);
  return h;
}

void ck_kafka_txn_id(uint64_t identity, int subtask, int slot, char *out, size_t n) {
  snprintf(out, n, "clink-%016llx-%d-%d", (unsigned long long)identity, subtask, slot);
}

void ck_kafka_marker_group(uint64_t identity, int subtask, char *out, size_t n) {
  snprintf(out, n, "clink-sink-%016llx-%d", (unsigned long long)identity, subtask);
}

/* Identities of live exactly-once sink instances in this process: two sink nodes writing the
 * same table would otherwise share transactional ids and fence each other. */
typedef struct live_sink {
  uint64_t identity;
  int subtask;
} live_sink_t;

static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static live_sink_t live[LIVE_MAX];
static int nlive;

static bool live_take(uint64_t identity, int subtask) {
  pthread_mutex_lock(&live_mu);
  bool taken = false;
  for (int i = 0; i < nlive && !taken; i++)
    taken = live[i].identity == identity && live[i].subtask == subtask;
  bool ok = !taken && nlive < LIVE_MAX;
  if (ok) live[nlive++] = (live_sink_t){identity, subtask};
  pthread_mutex_unlock(&live_mu);
  return ok;
}

static void live_release(uint64_t identity, int subtask) {
  pthread_mutex_lock(&live_mu);
  for (int i = 0; i < nlive; i++)
    if (live[i].identity == identity && live[i].subtask == subtask) {
      live[i] = live[--nlive];
      break;
    }
  pthread_mutex_unlock(&live_mu);
}

/* ===================================================================== state ====== */

void ck_kafka_held_append(ck_buf_t *held, const void *key, size_t key_len, const void *val,
                          size_t val_len) {
  ck_buf_put_uvarint(held, key ? (uint64_t)key_len + 1 : 0);
  if (key) ck_buf_append(held, key, key_len);
  ck_buf_put_uvarint(held, val ? (uint64_t)val_len + 1 : 0);
  if (val) ck_buf_append(held, val, val_len);
}

/* One length-prefixed field; false when truncated. */
static bool get_field(const uint8_t **p, const uint8_t *end, const void **data, size_t *len) {
  uint64_t n;
  if (!ck_uvarint_get(p, end, &n)) return false;
  if (n == 0) {
    *data = NULL;
    *len = 0;
    return true;
  }
  if (n - 1 > (uint64_t)(end - *p)) return false;
  *data = *p;
  *len = (size_t)(n - 1);
  *p += n - 1;
  return true;
}

bool ck_kafka_held_next(const uint8_t **p, const uint8_t *end, const void **key,
                        size_t *key_len, const void **val, size_t *val_len) {
  if (*p >= end) return false;
  return get_field(p, end, key, key_len) && get_field(p, end, val, val_len);
}

void ck_kafka_txn_state_encode(ck_buf_t *out, const ck_kafka_txn_state_t *st,
                               const ck_buf_t *held_msgs) {
  ck_buf_putc(out, CK_KAFKA_SINK_STATE_VERSION);
  ck_buf_putc(out, CK_KAFKA_SINK_MODE_EOS);
  ck_buf_put_le64(out, st->identity);
  ck_buf_put_uvarint(out, (uint64_t)st->ckpt);
  ck_buf_putc(out, (char)st->slot);
  ck_buf_put_uvarint(out, (uint64_t)st->prev);
  ck_buf_putc(out, st->held ? 1 : 0);
  if (st->held) {
    ck_buf_put_uvarint(out, st->nheld);
    if (held_msgs && held_msgs->len) ck_buf_append(out, held_msgs->data, held_msgs->len);
  }
}

int ck_kafka_txn_state_decode(const void *data, size_t len, ck_kafka_txn_state_t *st,
                              ck_error_t *err) {
  const uint8_t *p = data, *end = p + len;
  memset(st, 0, sizeof *st);
  if (len < 1 || p[0] != CK_KAFKA_SINK_STATE_VERSION)
    return ck_error_set(err, CK_ESTATE, "could not restore the kafka sink's transaction state: "
                        "unknown state version %d", len ? p[0] : -1);
  if (len < 2 || p[1] != CK_KAFKA_SINK_MODE_EOS)
    return ck_error_set(err, CK_ESTATE, "could not restore the kafka sink's transaction state: "
                        "it was not written by an exactly-once sink");
  p += 2;
  uint64_t ckpt, prev, count;
  if (!ck_take_le64(&p, end, &st->identity)) goto corrupt;
  if (!ck_uvarint_get(&p, end, &ckpt) || ckpt > INT64_MAX || p >= end) goto corrupt;
  st->ckpt = (int64_t)ckpt;
  st->slot = *p++;
  if (st->slot >= CK_KAFKA_TXN_SLOTS) goto corrupt;
  if (!ck_uvarint_get(&p, end, &prev) || prev > INT64_MAX || p >= end) goto corrupt;
  st->prev = (int64_t)prev;
  uint8_t held = *p++;
  if (held > 1) goto corrupt;
  st->held = held;
  if (held) {
    /* every message takes at least two bytes: a larger count is corrupt */
    if (!ck_uvarint_get(&p, end, &count) || count > (uint64_t)(end - p) / 2) goto corrupt;
    st->nheld = count;
    st->msgs = p;
    st->msgs_len = (size_t)(end - p);
    const uint8_t *q = p;
    const void *k, *v;
    size_t kl, vl;
    for (uint64_t i = 0; i < count; i++)
      if (!ck_kafka_held_next(&q, end, &k, &kl, &v, &vl)) goto corrupt;
    p = q;
  }
  if (p != end) goto corrupt;
  return 0;
corrupt:
  memset(st, 0, sizeof *st);
  return ck_error_set(err, CK_ESTATE, "could not restore the kafka sink's transaction state: "
                      "it is truncated or corrupt");
}

int64_t ck_kafka_marker_parse(const char *metadata, size_t len) {
  size_t pl = strlen(MARKER_PREFIX);
  if (!metadata || len <= pl || len > 40 || memcmp(metadata, MARKER_PREFIX, pl) != 0) return -1;
  int64_t v = 0;
  for (size_t i = pl; i < len; i++) {
    if (metadata[i] < '0' || metadata[i] > '9' || v > (INT64_MAX - 9) / 10) return -1;
    v = v * 10 + (metadata[i] - '0');
  }
  return v;
}

/* ================================================================ producers ====== */

/* Delivery report: the owning thread, inside rd_kafka_poll/flush. */
static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  producer_t *p = opaque;
  if (!m->err) {
    p->delivered++;
    if (m->partition >= 0 && m->partition < p->nranges && m->offset >= 0) {
      range_t *r = &p->ranges[m->partition];
      if (!r->count || m->offset < r->first) r->first = m->offset;
      if (!r->count || m->offset > r->last) r->last = m->offset;
      r->count++;
    }
    return;
  }
  if (p->failed++ == 0) {
    p->fail_err = m->err;
    p->fail_partition = m->partition;
    snprintf(p->fail_reason, sizeof p->fail_reason, "%s", rd_kafka_err2str(m->err));
  }
}

static const char *find(const char *hay, size_t len, const char *needle) {
  size_t n = strlen(needle);
  for (size_t i = 0; i + n <= len; i++)
    if (hay[i] == needle[0] && memcmp(hay + i, needle, n) == 0) return hay + i;
  return NULL;
}

/* librdkafka's statistics (every statistics.interval.ms, served by the poll on the owning
 * thread): only the producer id and epoch of its "eos" object are kept, for the account. */
static int stats_cb(rd_kafka_t *rk, char *json, size_t len, void *opaque) {
  (void)rk;
  producer_t *p = opaque;
  const char *eos = find(json, len, "\"eos\":");
  if (eos) {
    size_t rest = len - (size_t)(eos - json);
    const char *id = find(eos, rest, "\"producer_id\":");
    const char *ep = find(eos, rest, "\"producer_epoch\":");
    if (id && ep) {
      long long a = strtoll(id + 14, NULL, 10), b = strtoll(ep + 17, NULL, 10);
      if (a >= 0 && b >= 0) {
        p->pid = a;
        p->epoch = b;
      }
    }
  }
  return 0; /* librdkafka frees json */
}

static void ranges_reset(producer_t *p) {
  if (p->ranges) memset(p->ranges, 0, sizeof *p->ranges * (size_t)p->nranges);
}

/* The first delivery failure (or a fatal producer error) as a job error. */
static int check_failed(producer_t *p, ck_error_t *err) {
  if (p->kc.fatal) {
    char why[512];
    rd_kafka_resp_err_t rerr = rd_kafka_fatal_error(p->kc.rk, why, sizeof why);
    ck_kafka_error(err, CK_EREMOTE, rerr, "could not write to topic '%s' (table '%s'): "
                   "the Kafka producer%s%s%s failed: %s", p->kc.topic, p->kc.table,
                   p->txn_id[0] ? " '" : "", p->txn_id, p->txn_id[0] ? "'" : "", why);
    if (rerr == RD_KAFKA_RESP_ERR__FENCED || rerr == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
        rerr == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH)
      ck_error_hint(err, "another producer with the same transactional id took over: is a "
                         "second run of this job writing the same table?");
    return CK_EREMOTE;
  }
  if (!p->failed) return 0;
  ck_kafka_error(err, CK_EREMOTE, p->fail_err, "could not deliver %lld record%s to topic '%s' "
                 "(table '%s', brokers '%s'): %s", (long long)p->failed,
                 p->failed == 1 ? "" : "s", p->kc.topic, p->kc.table, p->kc.brokers,
                 p->fail_reason);
  if (p->fail_partition >= 0) ck_error_detail(err, "the first failure was in partition %d",
                                               (int)p->fail_partition);
  return CK_EREMOTE;
}

/* Makes a producer (transactional when txn_id is set) and its topic handle; the first one also
 * checks the topic. */
static int producer_open(kafka_sink_t *kk, producer_t *p, int slot, const char *txn_id,
                         ck_error_t *err) {
  p->slot = slot;
  p->fail_partition = -1;
  snprintf(p->txn_id, sizeof p->txn_id, "%s", txn_id ? txn_id : "");
  const char *defaults[] = {
      "enable.idempotence", "true",
      "linger.ms", "5",
      /* like the source, the sink needs its topic to exist; librdkafka's producer would
       * otherwise have the broker create it, with the broker's defaults */
      "allow.auto.create.topics", "false",
      /* the producer id and epoch for the interval evidence (stats_cb) */
      "statistics.interval.ms", "500",
      txn_id ? "transactional.id" : NULL, txn_id,
      NULL,
  };
  p->pid = p->epoch = -1;
  int rc = ck_kafka_client_open_stats(&p->kc, kk->ctx, RD_KAFKA_PRODUCER, defaults, dr_msg_cb,
                                      stats_cb, err);
  if (rc) return rc;
  if (kk->nparts == 0 && (rc = ck_kafka_topic_partitions(&p->kc, &kk->nparts, err))) return rc;
  p->nranges = kk->nparts > 0 ? kk->nparts : 0;
  p->ranges = ck_calloc((size_t)(p->nranges ? p->nranges : 1), sizeof *p->ranges);
  p->rkt = rd_kafka_topic_new(p->kc.rk, p->kc.topic, NULL);
  if (!p->rkt)
    return ck_kafka_error(err, CK_EOPTION, rd_kafka_last_error(), "could not use topic '%s': "
                          "%s", p->kc.topic, rd_kafka_err2str(rd_kafka_last_error()));
  return 0;
}

static void producer_close(producer_t *p) {
  if (p->kc.rk && !p->kc.fatal && (p->txn == TXN_OPEN || p->txn == TXN_PREPARED)) {
    /* a failed or stopped job: the rows are replayed from a checkpoint; do not leave
     * read_committed readers waiting for the transaction timeout */
    rd_kafka_error_t *e = rd_kafka_abort_transaction(p->kc.rk, ABORT_AT_CLOSE_MS);
    if (e) {
      CK_LOG_DEBUG(CK_KAFKA_LOG, "table '%s': could not abort the transaction of '%s' at "
                   "close: %s", p->kc.table, p->txn_id, rd_kafka_error_string(e));
      rd_kafka_error_destroy(e);
    }
  }
  if (p->kc.rk) {
    p->kc.closing = true;
    /* anything still queued is abandoned (the job failed or stopped): a restart writes it
     * again */
    (void)rd_kafka_purge(p->kc.rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    (void)rd_kafka_flush(p->kc.rk, 1000);
  }
  if (p->rkt) rd_kafka_topic_destroy(p->rkt);
  p->rkt = NULL;
  ck_kafka_client_close(&p->kc);
  ck_free(p->ranges);
  p->ranges = NULL;
  p->nranges = 0;
}

/* Waits out a full local queue, serving delivery reports. */
static int produce(producer_t *p, const void *key, size_t key_len, const void *val,
                   size_t val_len, ck_error_t *err) {
  int64_t since = 0, logged = 0;
  for (;;) {
    if (rd_kafka_producev(p->kc.rk, RD_KAFKA_V_RKT(p->rkt),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_VALUE((void *)val, val_len),
                          RD_KAFKA_V_KEY(key, key_len), RD_KAFKA_V_END) == 0) {
      p->sent++;
      return 0;
    }
    rd_kafka_resp_err_t rerr = rd_kafka_last_error();
    if (rerr != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      int rc = check_failed(p, err); /* a fatal error explains itself better */
      if (rc) return rc;
      return ck_kafka_error(err, CK_EREMOTE, rerr, "could not write to topic '%s' (table '%s'): "
                            "%s", p->kc.topic, p->kc.table, rd_kafka_err2str(rerr));
    }
    rd_kafka_poll(p->kc.rk, 100);
    int rc = check_failed(p, err);
    if (rc) return rc;
    int64_t now = ck_mono_ms();
    if (!since) since = logged = now;
    if (now - logged >= CK_KAFKA_LOG_EVERY_MS) {
      CK_LOG_WARN(CK_KAFKA_LOG, "table '%s': the producer's queue for topic '%s' has been full "
                  "for %.0f s (%d messages waiting for brokers '%s')", p->kc.table,
                  p->kc.topic, (double)(now - since) / 1000.0, rd_kafka_outq_len(p->kc.rk),
                  p->kc.brokers);
      logged = now;
    }
  }
}

/* Waits until every message handed over has its delivery report. */
static int drain(producer_t *p, const char *why, ck_error_t *err) {
  int64_t start = ck_mono_ms(), progress = start, logged = start;
  int last = rd_kafka_outq_len(p->kc.rk);
  while (last > 0) {
    (void)rd_kafka_flush(p->kc.rk, 1000);
    int rc = check_failed(p, err);
    if (rc) return rc;
    int n = rd_kafka_outq_len(p->kc.rk);
    int64_t now = ck_mono_ms();
    if (n < last) progress = now;
    last = n;
    if (n > 0 && now - progress >= CK_KAFKA_LOG_EVERY_MS &&
        now - logged >= CK_KAFKA_LOG_EVERY_MS) {
      CK_LOG_WARN(CK_KAFKA_LOG, "table '%s': %s: still waiting for %d deliveries to topic '%s' "
                  "after %.0f s (no progress for %.0f s; brokers '%s')", p->kc.table, why, n,
                  p->kc.topic, (double)(now - start) / 1000.0,
                  (double)(now - progress) / 1000.0, p->kc.brokers);
      logged = now;
    }
  }
  return check_failed(p, err);
}

/* ============================================================ transactions ====== */

typedef enum txn_op { OP_INIT, OP_BEGIN, OP_MARKER, OP_COMMIT, OP_ABORT } txn_op_t;

static const char *const op_what[] = {
    "initialise the transactions of", "begin a transaction of",
    "add the checkpoint marker to the transaction of", "commit the transaction of",
    "abort the transaction of",
};

/* The marker: a transactional offset commit of the sink-owned group for partition 0 of the
 * output topic, offset and metadata naming the checkpoint. */
static rd_kafka_error_t *send_marker(kafka_sink_t *kk, producer_t *p, int64_t ckpt,
                                     int timeout_ms) {
  char meta[64];
  int mlen = snprintf(meta, sizeof meta, MARKER_PREFIX "%lld", (long long)ckpt);
  rd_kafka_topic_partition_list_t *offs = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_t *tp = rd_kafka_topic_partition_list_add(offs, kk->topic, 0);
  tp->offset = ckpt;
  tp->metadata = meta;
  tp->metadata_size = (size_t)mlen;
  rd_kafka_consumer_group_metadata_t *cgmd = rd_kafka_consumer_group_metadata_new(kk->group);
  rd_kafka_error_t *e = rd_kafka_send_offsets_to_transaction(p->kc.rk, offs, cgmd, timeout_ms);
  tp->metadata = NULL; /* ours, on the stack */
  tp->metadata_size = 0;
  rd_kafka_consumer_group_metadata_destroy(cgmd);
  rd_kafka_topic_partition_list_destroy(offs);
  return e;
}

/* One transactional step, retried while librdkafka calls its error retriable, up to the
 * table's connect_timeout_ms (0: for ever). An error that needs the transaction aborted aborts
 * it (its rows are then lost: the caller reports an error and a restart replays them). */
static int txn_call(kafka_sink_t *kk, producer_t *p, txn_op_t op, int64_t ckpt,
                    ck_error_t *err) {
  int64_t start = ck_mono_ms(), logged = 0, backoff = 100;
  int64_t limit = p->kc.connect_timeout_ms;
  for (;;) {
    int64_t attempt = TXN_ATTEMPT_MS, now = ck_mono_ms();
    if (limit > 0 && limit - (now - start) < attempt) attempt = limit - (now - start);
    if (attempt < 1000) attempt = 1000;
    rd_kafka_error_t *e = NULL;
    switch (op) {
      case OP_INIT: e = rd_kafka_init_transactions(p->kc.rk, (int)attempt); break;
      case OP_BEGIN: e = rd_kafka_begin_transaction(p->kc.rk); break;
      case OP_MARKER: e = send_marker(kk, p, ckpt, (int)attempt); break;
      case OP_COMMIT: e = rd_kafka_commit_transaction(p->kc.rk, (int)attempt); break;
      case OP_ABORT: e = rd_kafka_abort_transaction(p->kc.rk, (int)attempt); break;
    }
    rd_kafka_poll(p->kc.rk, 0);
    if (!e) return 0;
    rd_kafka_resp_err_t code = rd_kafka_error_code(e);
    char why[512];
    snprintf(why, sizeof why, "%s", rd_kafka_error_string(e));
    bool fatal = rd_kafka_error_is_fatal(e), needs_abort = rd_kafka_error_txn_requires_abort(e),
         retry = rd_kafka_error_is_retriable(e);
    rd_kafka_error_destroy(e);
    now = ck_mono_ms();
    if (retry && !fatal && !needs_abort && (limit <= 0 || now - start < limit)) {
      if (!logged || now - logged >= CK_KAFKA_LOG_EVERY_MS) {
        CK_LOG_WARN(CK_KAFKA_LOG, "table '%s': could not %s '%s' yet (%s); retrying (%.1f s so "
                    "far)", kk->table, op_what[op], p->txn_id, why,
                    (double)(now - start) / 1000.0);
        logged = now;
      }
      if (op == OP_BEGIN || code != RD_KAFKA_RESP_ERR__TIMED_OUT) {
        ck_sleep_ms(backoff);
        backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
      }
      continue;
    }
    if (needs_abort && op != OP_ABORT && !fatal) {
      rd_kafka_error_t *a = rd_kafka_abort_transaction(p->kc.rk, TXN_ATTEMPT_MS);
      if (a) rd_kafka_error_destroy(a);
      else p->txn = TXN_NONE;
    }
    ck_kafka_error(err, CK_EREMOTE, code, "could not %s '%s' (table '%s', topic '%s', brokers "
                   "'%s')%s%lld: %s", op_what[op], p->txn_id, kk->table, kk->topic, kk->brokers,
                   ckpt > 0 ? " for checkpoint " : "", ckpt > 0 ? (long long)ckpt : 0LL, why);
    if (fatal) {
      if (code == RD_KAFKA_RESP_ERR__FENCED || code == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
          code == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH)
        ck_error_hint(err, "another producer with the same transactional id took over: is a "
                           "second run of this job writing the same table?");
    } else if (err) {
      err->retriable = true; /* a restart from the last checkpoint replays the interval */
    }
    return CK_EREMOTE;
  }
}

static int begin(kafka_sink_t *kk, producer_t *p, ck_error_t *err) {
  int rc = txn_call(kk, p, OP_BEGIN, 0, err);
  if (rc) return rc;
  p->txn = TXN_OPEN;
  p->records = 0;
  ranges_reset(p); /* the account's offsets are this transaction's */
  return 0;
}

static int commit_slot(kafka_sink_t *kk, producer_t *p, ck_error_t *err) {
  int64_t ckpt = p->txn == TXN_PREPARED ? p->ckpt : 0;
  int rc = txn_call(kk, p, OP_COMMIT, ckpt, err);
  if (rc) {
    if (ckpt) ck_error_detail(err, "checkpoint %lld's %lld record%s did not reach the topic: a "
                              "restart writes them again", (long long)ckpt,
                              (long long)p->records, p->records == 1 ? "" : "s");
    return rc;
  }
  p->txn = TXN_NONE;
  return check_failed(p, err);
}

/* The committed offset metadata of the marker group: the newest checkpoint whose transaction
 * committed (0: none, or a fresh lineage's reset). */
static int read_marker(kafka_sink_t *kk, int64_t *ckpt, ck_error_t *err) {
  producer_t *p = &kk->prod[0];
  int64_t start = ck_mono_ms(), logged = 0, backoff = 100, limit = p->kc.connect_timeout_ms;
  for (;;) {
    char why[512] = "";
    rd_kafka_resp_err_t code = RD_KAFKA_RESP_ERR_NO_ERROR;
    bool done = false;
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, kk->topic, 0);
    rd_kafka_ListConsumerGroupOffsets_t *req = rd_kafka_ListConsumerGroupOffsets_new(kk->group,
                                                                                     parts);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_AdminOptions_t *opts =
        rd_kafka_AdminOptions_new(p->kc.rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS);
    char errstr[256];
    (void)rd_kafka_AdminOptions_set_request_timeout(opts, 10000, errstr, sizeof errstr);
    rd_kafka_error_t *oe = rd_kafka_AdminOptions_set_require_stable_offsets(opts, 1);
    if (oe) rd_kafka_error_destroy(oe);
    rd_kafka_queue_t *q = rd_kafka_queue_new(p->kc.rk);
    rd_kafka_ListConsumerGroupOffsets(p->kc.rk, &req, 1, opts, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 15000);
    if (!ev) {
      code = RD_KAFKA_RESP_ERR__TIMED_OUT;
      snprintf(why, sizeof why, "no answer within 15 s");
    } else if (rd_kafka_event_error(ev)) {
      code = rd_kafka_event_error(ev);
      snprintf(why, sizeof why, "%s", rd_kafka_event_error_string(ev));
    } else {
      const rd_kafka_ListConsumerGroupOffsets_result_t *res =
          rd_kafka_event_ListConsumerGroupOffsets_result(ev);
      size_t n = 0;
      const rd_kafka_group_result_t **groups =
          res ? rd_kafka_ListConsumerGroupOffsets_result_groups(res, &n) : NULL;
      const rd_kafka_error_t *ge = n ? rd_kafka_group_result_error(groups[0]) : NULL;
      const rd_kafka_topic_partition_list_t *pl =
          n ? rd_kafka_group_result_partitions(groups[0]) : NULL;
      if (!n) {
        code = RD_KAFKA_RESP_ERR__BAD_MSG;
        snprintf(why, sizeof why, "the answer names no group");
      } else if (ge) {
        code = rd_kafka_error_code(ge);
        snprintf(why, sizeof why, "%s", rd_kafka_error_string(ge));
      } else if (!pl || pl->cnt < 1) {
        *ckpt = 0;
        done = true;
      } else if (pl->elems[0].err) {
        code = pl->elems[0].err;
        snprintf(why, sizeof why, "%s", rd_kafka_err2str(code));
      } else {
        const rd_kafka_topic_partition_t *tp = &pl->elems[0];
        int64_t v = tp->offset < 0 ? 0 : ck_kafka_marker_parse(tp->metadata, tp->metadata_size);
        if (v < 0) {
          CK_LOG_WARN(CK_KAFKA_LOG, "table '%s': the marker group '%s' holds an offset that "
                      "clink did not write; taken as no checkpoint committed", kk->table,
                      kk->group);
          v = 0;
        }
        *ckpt = v;
        done = true;
      }
    }
    if (ev) rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_AdminOptions_destroy(opts);
    rd_kafka_ListConsumerGroupOffsets_destroy(req);
    if (done) return 0;
    int64_t now = ck_mono_ms();
    if (limit > 0 && now - start >= limit)
      return ck_kafka_error(err, CK_ECONNECT, code, "could not read the committed checkpoint "
                            "marker of group '%s' (table '%s') from Kafka brokers '%s' within "
                            "%lld ms: %s", kk->group, kk->table, kk->brokers, (long long)limit,
                            why);
    if (!logged || now - logged >= CK_KAFKA_LOG_EVERY_MS) {
      CK_LOG_WARN(CK_KAFKA_LOG, "table '%s': could not read the checkpoint marker of group '%s' "
                  "yet (%s); retrying (%.1f s so far)", kk->table, kk->group, why,
                  (double)(now - start) / 1000.0);
      logged = now;
    }
    ck_sleep_ms(backoff);
    backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
  }
}

/* Takes the identity (restored: the state's; else the first free instance's), makes both
 * transactional producers and initialises their transactions: a dead incarnation's producers
 * are fenced and what they left open is aborted. A fresh lineage also commits the marker 0. */
static int eos_start(kafka_sink_t *kk, bool fresh, const uint64_t *adopt, ck_error_t *err) {
  if (kk->started) return 0;
  int subtask = kk->ctx->subtask;
  if (!kk->claimed) {
    if (adopt) {
      if (!live_take(*adopt, subtask))
        return ck_error_set(err, CK_ESTATE, "the kafka sink of table '%s' subtask %d restores "
                            "the transactional identity %016llx, which another sink of this "
                            "job already uses", kk->table, subtask,
                            (unsigned long long)*adopt);
      kk->identity = *adopt;
    } else {
      int instance = 0;
      for (;; instance++) {
        uint64_t id = ck_kafka_sink_identity(kk->job, kk->table, kk->topic, instance);
        if (live_take(id, subtask)) {
          kk->identity = id;
          break;
        }
        if (instance > LIVE_MAX)
          return ck_error_set(err, CK_EINTERNAL, "too many exactly-once kafka sinks");
      }
    }
    kk->claimed = true;
  }
  ck_kafka_marker_group(kk->identity, subtask, kk->group, sizeof kk->group);
  int rc = 0;
  for (int s = 0; s < CK_KAFKA_TXN_SLOTS && !rc; s++) {
    char id[CK_KAFKA_ID_MAX];
    ck_kafka_txn_id(kk->identity, subtask, s, id, sizeof id);
    rc = producer_open(kk, &kk->prod[s], s, id, err);
    kk->nprod = s + 1;
  }
  for (int s = 0; s < CK_KAFKA_TXN_SLOTS && !rc; s++)
    rc = txn_call(kk, &kk->prod[s], OP_INIT, 0, err);
  if (!rc && fresh) {
    producer_t *p = &kk->prod[0];
    rc = begin(kk, p, err);
    if (!rc) rc = txn_call(kk, p, OP_MARKER, 0, err);
    if (!rc) rc = commit_slot(kk, p, err);
  }
  if (rc) return rc;
  kk->started = true;
  kk->cur = 0;
  CK_LOG_DEBUG(CK_KAFKA_LOG, "table '%s' subtask %d: exactly once into topic '%s' (%d "
               "partitions) with transactional ids '%s'/'%s', marker group '%s'%s", kk->table,
               subtask, kk->topic, kk->nparts, kk->prod[0].txn_id, kk->prod[1].txn_id, kk->group,
               fresh ? " (a fresh start: the marker is reset)" : "");
  return 0;
}

/* Restored without a state to recover from (not expected): start like a restored sink. */
static int eos_ready(kafka_sink_t *kk, ck_error_t *err) {
  return kk->started ? 0 : eos_start(kk, false, NULL, err);
}

/* ===================================================================== open ====== */

static void kafka_sink_close(ck_sink_t *sink);

static int sink_open(ck_sink_t *sink, bool restored, ck_error_t *err) {
  kafka_sink_t *kk = ck_calloc(1, sizeof *kk);
  sink->impl = kk;
  kk->ctx = &sink->ctx;
  ck_buf_init(&kk->val);
  ck_buf_init(&kk->key);
  ck_buf_init(&kk->pending);
  ck_buf_init(&kk->held);
  const ck_options_t *opts = sink->ctx.options;
  const ck_schema_t *schema = sink->ctx.schema;
  kk->table = sink->ctx.table ? sink->ctx.table : "?";
  kk->topic = ck_options_get(opts, "topic");
  kk->brokers = ck_options_get(opts, "brokers");
  if (!kk->topic) kk->topic = "";
  if (!kk->brokers) kk->brokers = "";
  const char *g = ck_opt_str(opts, ck_sink_common_options, "delivery_guarantee");
  kk->eos = g && strcmp(g, "exactly_once") == 0;
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
  if (!kk->eos) {
    kk->nprod = 1;
    if ((rc = producer_open(kk, &kk->prod[0], 0, NULL, err))) return rc;
    CK_LOG_DEBUG(CK_KAFKA_LOG, "table '%s' subtask %d: writing to topic '%s' (%d partitions)",
                 kk->table, sink->ctx.subtask, kk->topic, kk->nparts);
    return 0;
  }
  if (ck_options_get(opts, "kafka.transactional.id"))
    return ck_error_set(err, CK_EOPTION, "option 'kafka.transactional.id' cannot be set on the "
                        "exactly-once kafka sink of table '%s': it names its transactional "
                        "producers itself, per subtask", kk->table);
  kk->redo_max = ck_opt_int(opts, ck_kafka_sink_options, "redo_max_bytes");
  if (kk->redo_max < 0) kk->redo_max = 0;
  kk->held_ok = kk->redo_max > 0;
  const char *job = sink->ctx.job_name ? sink->ctx.job_name : "";
  char real[PATH_MAX];
  kk->job = ck_strdup(*job && realpath(job, real) ? real : job);
  /* a restored sink takes its identity from its checkpoint state (recover) */
  return restored ? 0 : eos_start(kk, true, NULL, err);
}

/* The runtime closes only a sink that opened: a failed open cleans up. */
static int kafka_sink_open(ck_sink_t *sink, bool restored, ck_error_t *err) {
  int rc = sink_open(sink, restored, err);
  if (rc) kafka_sink_close(sink);
  return rc;
}

/* ==================================================================== write ====== */

static int emit(kafka_sink_t *kk, const void *key, size_t key_len, ck_error_t *err) {
  const void *val = kk->val.data ? kk->val.data : "";
  size_t val_len = kk->val.len;
  if (!kk->eos) return produce(&kk->prod[0], key, key_len, val, val_len, err);
  if (kk->held_ok) {
    ck_kafka_held_append(&kk->held, key, key_len, val, val_len);
    kk->nheld++;
    if ((int64_t)kk->held.len > kk->redo_max) {
      /* too much to keep: a lost commit of this interval rewinds instead of redoing */
      kk->held_ok = false;
      ck_buf_fini(&kk->held);
      ck_buf_init(&kk->held);
      kk->nheld = 0;
    }
  }
  producer_t *p = &kk->prod[kk->cur];
  if (p->txn == TXN_PREPARED) { /* the slot's previous transaction awaits its commit */
    ck_kafka_held_append(&kk->pending, key, key_len, val, val_len);
    kk->npending++;
    return 0;
  }
  int rc;
  if (p->txn == TXN_NONE && (rc = begin(kk, p, err))) return rc;
  p->records++;
  return produce(p, key, key_len, val, val_len, err);
}

static int kafka_sink_write(ck_sink_t *sink, const ck_batch_t *batch, ck_error_t *err) {
  kafka_sink_t *kk = sink->impl;
  int rc;
  if (kk->eos && (rc = eos_ready(kk, err))) return rc;
  producer_t *p = &kk->prod[kk->cur];
  if ((rc = check_failed(p, err))) return rc;
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
    if ((rc = emit(kk, key, key_len, err))) return rc;
  }
  p = &kk->prod[kk->cur];
  rd_kafka_poll(p->kc.rk, 0); /* delivery reports */
  return check_failed(p, err);
}

/* ========================================================= prepare / commit ====== */

/* The interval that prepare(ckpt) closes, as the account reports it. */
static void acct_take(kafka_sink_t *kk, const producer_t *p, int64_t ckpt, int64_t records) {
  acct_t *a = &kk->done;
  if (a->nranges != p->nranges) {
    ck_free(a->ranges);
    a->nranges = p->nranges;
    a->ranges = ck_calloc((size_t)(a->nranges ? a->nranges : 1), sizeof *a->ranges);
  }
  if (a->nranges) memcpy(a->ranges, p->ranges, sizeof *a->ranges * (size_t)a->nranges);
  a->ckpt = ckpt;
  a->slot = p->slot;
  a->records = records;
  a->pid = p->pid;
  a->epoch = p->epoch;
}

static int kafka_sink_prepare(ck_sink_t *sink, int64_t ckpt, ck_buf_t *out, ck_error_t *err) {
  kafka_sink_t *kk = sink->impl;
  char why[64];
  snprintf(why, sizeof why, "checkpoint %lld", (long long)ckpt);
  if (!kk->eos) {
    int rc = drain(&kk->prod[0], why, err);
    if (!rc) acct_take(kk, &kk->prod[0], ckpt, kk->prod[0].delivered - kk->done_delivered);
    if (!rc) {
      kk->done_delivered = kk->prod[0].delivered;
      ranges_reset(&kk->prod[0]);
    }
    return rc;
  }
  int rc = eos_ready(kk, err);
  if (rc) return rc;
  producer_t *p = &kk->prod[kk->cur], *other = &kk->prod[kk->cur ^ 1];
  if (p->txn == TXN_PREPARED) {
    /* both slots hold prepared transactions: two checkpoints in a row were abandoned before
     * they completed (a commit that is merely late comes before the next prepare) */
    ck_error_set(err, CK_EINTERNAL, "the kafka sink of table '%s' was asked to prepare "
                 "checkpoint %lld while checkpoints %lld and %lld still await their commit",
                 kk->table, (long long)ckpt, (long long)other->ckpt, (long long)p->ckpt);
    ck_error_detail(err, "it has two transactional producers per subtask; a restart from the "
                    "last completed checkpoint resolves both transactions");
    if (err) err->retriable = true;
    return CK_EINTERNAL;
  }
  if (p->txn == TXN_NONE && (rc = begin(kk, p, err))) return rc;
  if ((rc = drain(p, why, err))) return rc;
  if ((rc = txn_call(kk, p, OP_MARKER, ckpt, err))) return rc;
  p->txn = TXN_PREPARED;
  p->ckpt = ckpt;
  acct_take(kk, p, ckpt, p->records);
  ck_kafka_txn_state_t st = {
      .identity = kk->identity,
      .ckpt = ckpt,
      .slot = p->slot,
      .prev = other->txn == TXN_PREPARED ? other->ckpt : 0,
      .held = kk->held_ok,
      .nheld = (uint64_t)kk->nheld,
  };
  ck_kafka_txn_state_encode(out, &st, &kk->held);
  CK_TRACE("sink_prepare", "sink=kafka ckpt=%lld prev=%lld held=%d", (long long)ckpt, (long long)st.prev, (int)st.held);
  CK_LOG_DEBUG(CK_KAFKA_LOG, "table '%s' subtask %d: checkpoint %lld: %lld record%s prepared in "
               "the transaction of '%s'%s", kk->table, kk->ctx->subtask, (long long)ckpt,
               (long long)p->records, p->records == 1 ? "" : "s", p->txn_id,
               kk->held_ok ? "" : " (too large to keep for a redo)");
  ck_buf_reset(&kk->held);
  kk->nheld = 0;
  kk->held_ok = kk->redo_max > 0;
  kk->cur ^= 1;
  return 0;
}

static int kafka_sink_commit(ck_sink_t *sink, int64_t ckpt, ck_error_t *err) {
  kafka_sink_t *kk = sink->impl;
  if (!kk->eos) return 0;
  int rc = eos_ready(kk, err);
  if (rc) return rc;
  for (;;) { /* every slot holding a checkpoint <= ckpt, oldest first */
    producer_t *next = NULL;
    for (int s = 0; s < kk->nprod; s++) {
      producer_t *p = &kk->prod[s];
      if (p->txn == TXN_PREPARED && p->ckpt <= ckpt && (!next || p->ckpt < next->ckpt)) next = p;
    }
    if (!next) break;
    int64_t id = next->ckpt;
    if ((rc = commit_slot(kk, next, err))) return rc;
    if (id > kk->committed_ckpt) kk->committed_ckpt = id;
    CK_TRACE("sink_commit", "sink=kafka ckpt=%lld upto=%lld", (long long)id, (long long)ckpt);
    CK_LOG_DEBUG(CK_KAFKA_LOG, "table '%s' subtask %d: checkpoint %lld committed ('%s')",
                 kk->table, kk->ctx->subtask, (long long)id, next->txn_id);
  }
  producer_t *p = &kk->prod[kk->cur];
  if (kk->npending && p->txn == TXN_NONE) { /* rows that waited for this slot */
    if ((rc = begin(kk, p, err))) return rc;
    const uint8_t *q = (const uint8_t *)kk->pending.data, *end = q + kk->pending.len;
    const void *key, *val;
    size_t kl, vl;
    while (!rc && ck_kafka_held_next(&q, end, &key, &kl, &val, &vl)) {
      p->records++;
      rc = produce(p, key, kl, val ? val : "", vl, err);
    }
    ck_buf_reset(&kk->pending);
    kk->npending = 0;
    if (rc) return rc;
    rd_kafka_poll(p->kc.rk, 0);
  }
  return 0;
}

static int kafka_sink_finish(ck_sink_t *sink, ck_error_t *err) {
  kafka_sink_t *kk = sink->impl;
  if (!kk->eos) {
    int rc = drain(&kk->prod[0], "end of input", err);
    if (!rc)
      CK_LOG_DEBUG(CK_KAFKA_LOG, "table '%s' subtask %d: %lld records delivered to topic '%s'",
                   kk->table, sink->ctx.subtask, (long long)kk->prod[0].delivered, kk->topic);
    return rc;
  }
  int rc = eos_ready(kk, err);
  if (rc) return rc;
  for (int s = 0; s < kk->nprod; s++)
    if (kk->prod[s].txn == TXN_PREPARED)
      return ck_error_set(err, CK_EINTERNAL, "the kafka sink of table '%s' reached the end of "
                          "its input with checkpoint %lld not committed", kk->table,
                          (long long)kk->prod[s].ckpt);
  producer_t *p = &kk->prod[kk->cur];
  if (p->txn == TXN_OPEN) {
    /* only a job without checkpoints gets here with rows: its one transaction commits now */
    if ((rc = drain(p, "end of input", err))) return rc;
    if ((rc = commit_slot(kk, p, err))) return rc;
  }
  CK_LOG_DEBUG(CK_KAFKA_LOG, "table '%s' subtask %d: %lld records delivered to topic '%s' "
               "(last checkpoint committed: %lld)", kk->table, sink->ctx.subtask,
               (long long)(kk->prod[0].delivered + kk->prod[1].delivered), kk->topic,
               (long long)kk->committed_ckpt);
  return 0;
}

/* ================================================================== recover ====== */

static int rewind_error(kafka_sink_t *kk, int64_t ckpt, int64_t marker, const char *why,
                        ck_error_t *err) {
  char last[64];
  if (marker > 0) snprintf(last, sizeof last, "checkpoint %lld", (long long)marker);
  else snprintf(last, sizeof last, "none");
  ck_error_set(err, CK_EREWIND, "checkpoint %lld's Kafka transaction was not committed (table "
               "'%s' subtask %d, topic '%s', transactional id '%s'; the last checkpoint "
               "committed there: %s)", (long long)ckpt, kk->table, kk->ctx->subtask, kk->topic,
               kk->prod[0].txn_id, last);
  ck_error_detail(err, "%s", why);
  return CK_EREWIND;
}

/* Writes a lost interval again from the checkpoint state, with its marker, and commits. */
static int redo(kafka_sink_t *kk, const ck_kafka_txn_state_t *st, int64_t marker,
                ck_error_t *err) {
  producer_t *p = &kk->prod[st->slot];
  int rc = begin(kk, p, err);
  const uint8_t *q = st->msgs, *end = st->msgs ? st->msgs + st->msgs_len : NULL;
  const void *key, *val;
  size_t kl, vl;
  while (!rc && q && ck_kafka_held_next(&q, end, &key, &kl, &val, &vl)) {
    p->records++;
    rc = produce(p, key, kl, val ? val : "", vl, err);
  }
  char why[64];
  snprintf(why, sizeof why, "checkpoint %lld again", (long long)st->ckpt);
  if (!rc) rc = drain(p, why, err);
  if (!rc) rc = txn_call(kk, p, OP_MARKER, st->ckpt, err);
  if (!rc) {
    p->txn = TXN_PREPARED;
    p->ckpt = st->ckpt;
    rc = commit_slot(kk, p, err);
  }
  if (rc) return rc;
  kk->committed_ckpt = st->ckpt;
  CK_LOG_INFO(CK_KAFKA_LOG, "table '%s' subtask %d: checkpoint %lld's Kafka transaction was not "
              "committed (the last checkpoint committed there: %lld); its %llu record%s, kept in "
              "the checkpoint, were written again and committed ('%s')", kk->table,
              kk->ctx->subtask, (long long)st->ckpt, (long long)marker,
              (unsigned long long)st->nheld, st->nheld == 1 ? "" : "s", p->txn_id);
  return 0;
}

static int kafka_sink_recover(ck_sink_t *sink, int64_t ckpt, const void *state, size_t len,
                              ck_error_t *err) {
  kafka_sink_t *kk = sink->impl;
  if (!kk->eos) return 0; /* at least once: nothing to re-commit or roll back */
  ck_kafka_txn_state_t st;
  int rc = ck_kafka_txn_state_decode(state, len, &st, err);
  if (rc) return rc;
  if (st.ckpt != ckpt)
    return ck_error_set(err, CK_ESTATE, "the kafka sink state of table '%s' restored for "
                        "checkpoint %lld names checkpoint %lld", kk->table, (long long)ckpt,
                        (long long)st.ckpt);
  if (kk->started && kk->identity != st.identity)
    return ck_error_set(err, CK_ESTATE, "the kafka sink of table '%s' was recovered twice",
                        kk->table);
  if ((rc = eos_start(kk, false, &st.identity, err))) return rc;
  int64_t marker = 0;
  if ((rc = read_marker(kk, &marker, err))) return rc;
  CK_TRACE("sink_recover", "sink=kafka ckpt=%lld marker=%lld prev=%lld outcome=%s", (long long)ckpt, (long long)marker, (long long)st.prev, marker >= ckpt ? "committed" : (st.prev > 0 && marker < st.prev) || !st.held ? "rewind" : "redo");
  if (marker >= ckpt) {
    if (marker > ckpt)
      CK_LOG_WARN(CK_KAFKA_LOG, "table '%s' subtask %d: restoring checkpoint %lld, but topic "
                  "'%s' already holds the committed output of checkpoint %lld: rows after "
                  "checkpoint %lld are written again", kk->table, kk->ctx->subtask,
                  (long long)ckpt, kk->topic, (long long)marker, (long long)ckpt);
    else
      CK_LOG_DEBUG(CK_KAFKA_LOG, "table '%s' subtask %d: checkpoint %lld is committed in topic "
                   "'%s'", kk->table, kk->ctx->subtask, (long long)ckpt, kk->topic);
    kk->committed_ckpt = marker;
    kk->recovered_ckpt = ckpt;
    kk->recovered_marker = marker;
    kk->recovered_how = "committed";
    return 0;
  }
  if (st.prev > 0 && marker < st.prev) {
    char why[256];
    snprintf(why, sizeof why, "the transaction of the checkpoint before it, %lld, was lost as "
             "well, and only this checkpoint's own rows are kept in it", (long long)st.prev);
    return rewind_error(kk, ckpt, marker, why, err);
  }
  if (!st.held)
    return rewind_error(kk, ckpt, marker, "its rows were more than redo_max_bytes, so they "
                        "were not kept in the checkpoint to be written again", err);
  rc = redo(kk, &st, marker, err);
  if (!rc) {
    kk->recovered_ckpt = ckpt;
    kk->recovered_marker = marker;
    kk->recovered_how = "redo";
    kk->recovered_records = (int64_t)st.nheld;
  }
  return rc;
}

/* ==================================================================== close ====== */

static void kafka_sink_close(ck_sink_t *sink) {
  kafka_sink_t *kk = sink->impl;
  if (!kk) return;
  for (int s = 0; s < kk->nprod; s++) producer_close(&kk->prod[s]);
  if (kk->claimed) live_release(kk->identity, sink->ctx.subtask);
  ck_encoder_free(kk->enc);
  ck_encoder_free(kk->key_enc);
  ck_free(kk->key_cols);
  ck_free(kk->key_view);
  ck_free((void *)kk->key_schema.names);
  ck_free(kk->key_schema.types);
  ck_buf_fini(&kk->val);
  ck_buf_fini(&kk->key);
  ck_buf_fini(&kk->pending);
  ck_buf_fini(&kk->held);
  ck_free(kk->job);
  ck_free(kk->done.ranges);
  ck_free(kk);
  sink->impl = NULL;
}

/* ================================================================== account ====== */

static void put_ranges(ck_buf_t *out, const range_t *r, int n) {
  ck_buf_putc(out, '[');
  bool first = true;
  for (int i = 0; i < n; i++) {
    if (!r[i].count) continue;
    ck_buf_printf(out, "%s{\"partition\":%d,\"first_offset\":%lld,\"last_offset\":%lld,"
                  "\"records\":%lld}", first ? "" : ",", i, (long long)r[i].first,
                  (long long)r[i].last, (long long)r[i].count);
    first = false;
  }
  ck_buf_putc(out, ']');
}

static void put_producer(ck_buf_t *out, const char *txn_id, int64_t pid, int64_t epoch) {
  ck_buf_puts(out, "\"transactional_id\":");
  if (txn_id && *txn_id) ck_buf_put_json_str(out, txn_id, strlen(txn_id));
  else ck_buf_puts(out, "null");
  if (pid >= 0) ck_buf_printf(out, ",\"producer_id\":%lld,\"producer_epoch\":%lld",
                              (long long)pid, (long long)epoch);
  else ck_buf_puts(out, ",\"producer_id\":null,\"producer_epoch\":null");
}

/*
 * The interval evidence's account (docs/evidence.md): the topic, the producer that wrote the
 * interval (its transactional id, and the producer id and epoch librdkafka reported), the
 * offsets its records took per partition, and what is in doubt when prepare returned — exactly
 * once, the interval's own transaction (prepared: it commits only after checkpoint ckpt
 * completes) and an older one still awaiting its commit; at least once, nothing (every record
 * was acknowledged), the rows being written again after a restore from an earlier checkpoint.
 */
static int kafka_sink_account(ck_sink_t *sink, int64_t ckpt, ck_buf_t *out, ck_error_t *err) {
  (void)err;
  kafka_sink_t *kk = sink->impl;
  const acct_t *a = &kk->done;
  ck_buf_printf(out, "{\"kind\":\"kafka\",\"checkpoint\":%lld,\"brokers\":", (long long)ckpt);
  ck_buf_put_json_str(out, kk->brokers, strlen(kk->brokers));
  ck_buf_puts(out, ",\"topic\":");
  ck_buf_put_json_str(out, kk->topic, strlen(kk->topic));
  ck_buf_printf(out, ",\"partitions\":%d,\"mode\":\"%s\",", kk->nparts,
                kk->eos ? "exactly_once" : "at_least_once");
  const producer_t *p = a->ckpt == ckpt ? &kk->prod[a->slot] : NULL;
  ck_buf_puts(out, "\"producer\":{");
  put_producer(out, p ? p->txn_id : NULL, p ? a->pid : -1, p ? a->epoch : -1);
  ck_buf_puts(out, "}");
  if (kk->eos) {
    ck_buf_puts(out, ",\"marker_group\":");
    ck_buf_put_json_str(out, kk->group, strlen(kk->group));
    ck_buf_printf(out, ",\"marker\":\"" MARKER_PREFIX "%lld\"", (long long)ckpt);
  }
  ck_buf_printf(out, ",\"records\":%lld,\"offsets\":", p ? (long long)a->records : 0LL);
  if (p) put_ranges(out, a->ranges, a->nranges);
  else ck_buf_puts(out, "[]");
  ck_buf_puts(out, ",\"in_doubt\":[");
  const producer_t *doubt[CK_KAFKA_TXN_SLOTS];
  int nd = 0;
  for (int s = 0; kk->eos && s < kk->nprod; s++)
    if (kk->prod[s].txn == TXN_PREPARED) doubt[nd++] = &kk->prod[s];
  if (nd == 2 && doubt[1]->ckpt < doubt[0]->ckpt) { /* oldest first */
    const producer_t *t = doubt[0];
    doubt[0] = doubt[1];
    doubt[1] = t;
  }
  for (int d = 0; d < nd; d++) {
    const producer_t *t = doubt[d];
    ck_buf_printf(out, "%s{\"checkpoint\":%lld,", d ? "," : "", (long long)t->ckpt);
    put_producer(out, t->txn_id, t->pid, t->epoch);
    ck_buf_printf(out, ",\"records\":%lld,\"state\":\"prepared\",\"resolved_by\":\"%s\"}",
                  (long long)t->records, t->ckpt == ckpt
                      ? "its commit once the checkpoint completed; after a crash, the marker "
                        "group's committed offset metadata ('clink ckpt=N') says whether it did"
                      : "the commit of that older checkpoint, before this one's");
  }
  ck_buf_puts(out, "]");
  if (!kk->eos)
    ck_buf_puts(out, ",\"resend\":\"after a restore from a checkpoint before this one, the "
                "interval's records are written again (at least once)\"");
  ck_buf_puts(out, ",\"recovered\":");
  if (kk->recovered_ckpt)
    ck_buf_printf(out, "{\"checkpoint\":%lld,\"marker\":%lld,\"outcome\":\"%s\","
                  "\"records_written_again\":%lld}", (long long)kk->recovered_ckpt,
                  (long long)kk->recovered_marker, kk->recovered_how,
                  (long long)kk->recovered_records);
  else
    ck_buf_puts(out, "null");
  ck_buf_puts(out, ",\"absent\":{");
  if (!p || a->pid < 0)
    ck_buf_puts(out, "\"producer_id\":\"librdkafka had not reported the producer id yet (its "
                "statistics come every statistics.interval.ms, 500 ms)\"");
  ck_buf_puts(out, "}}");
  return 0;
}

const char *ck_kafka_sink_txn_id(const ck_sink_t *sink, int slot) {
  const kafka_sink_t *kk = sink->impl;
  if (!kk || !kk->eos) return NULL;
  if (!kk->started || slot < 0 || slot >= CK_KAFKA_TXN_SLOTS) return no_txn_id;
  return kk->prod[slot].txn_id;
}

const char *ck_kafka_sink_marker_group(const ck_sink_t *sink) {
  const kafka_sink_t *kk = sink->impl;
  return kk && kk->eos && kk->started ? kk->group : NULL;
}

const ck_sink_ops_t ck_kafka_sink_ops = {
    .open = kafka_sink_open,
    .write = kafka_sink_write,
    .prepare = kafka_sink_prepare,
    .commit = kafka_sink_commit,
    .finish = kafka_sink_finish,
    .close = kafka_sink_close,
    .recover = kafka_sink_recover,
    .account = kafka_sink_account,
};
