/*
 * DESIGN: the state tools' decoders — one table, by node name, from a component's snapshot
 * encoding (what its rows of a snapshot file put together hold) to JSON, for `clink state-cat`,
 * `state-diff` and `checkpoint-verify`.
 *
 * Each row of the table names the node (the planner calls them "<connector>_source",
 * "<connector>_sink", "window_agg"), what its state is, and how to read it. The aggregation's
 * splitter (runtime/agg_snap_split.c) decodes its own entries; the sources' and sinks'
 * encodings are read here from their documented layouts (docs/state.md; the authoritative ones
 * are beside each component's snapshot/prepare code). An encoding that does not read whole is
 * an error naming the node, never a guess; a node this table does not know shows its bytes as
 * hex with its version byte.
 * Threads: the main thread.
 */
#include "cli/cmd_state.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "connectors/kafka/kafka.h"
#include "connectors/kafka/kafka_eos.h"
#include "connectors/util.h"
#include "runtime/op.h"

/* the component encodings are read with base/bytes.h's bounds-checked cursor */
typedef ck_rd_t rd_t;

static uint64_t uv(rd_t *r) { return ck_rd_uvarint(r); }
static int u8(rd_t *r) { return ck_rd_u8(r); }
static uint64_t u64le(rd_t *r) { return ck_rd_le64(r); }
static void str(rd_t *r, ck_buf_t *j) {
  uint64_t n = uv(r);
  if (r->bad || n > (uint64_t)(r->end - r->p)) {
    r->bad = true;
    ck_buf_puts(j, "null");
    return;
  }
  ck_buf_put_json_str(j, (const char *)r->p, (size_t)n);
  r->p += n;
}

/* datagen, nexmark: u8 version, uvarint parallelism, uvarint next row index */
static int dec_generator(rd_t *r, ck_buf_t *j) {
  int v = u8(r);
  uint64_t par = uv(r), next = uv(r);
  ck_buf_printf(j, "{\"state\":\"source position\",\"version\":%d,\"parallelism\":%llu,"
                "\"next_row\":%llu}", v, (unsigned long long)par, (unsigned long long)next);
  return v == 1 ? 0 : -1;
}

/* file source: u8 version (2; 1 has no fingerprint), uvarint n, per file: uvarint path length,
 * path, uvarint byte offset, uvarint lines, u8 done, v2: uvarint fingerprint window, u64 hash
 * of the first and of the last window bytes */
static int dec_file_source(rd_t *r, ck_buf_t *j) {
  int v = u8(r);
  if (v != 1 && v != 2) return -1;
  uint64_t n = uv(r);
  ck_buf_printf(j, "{\"state\":\"source position\",\"version\":%d,\"files\":[", v);
  for (uint64_t i = 0; i < n && !r->bad; i++) {
    ck_buf_puts(j, i ? ",{\"path\":" : "{\"path\":");
    str(r, j);
    uint64_t off = uv(r), lines = uv(r);
    int done = u8(r);
    ck_buf_printf(j, ",\"offset\":%llu,\"lines\":%llu,\"done\":%s", (unsigned long long)off,
                  (unsigned long long)lines, done ? "true" : "false");
    if (v == 2) {
      uint64_t w = uv(r), head = u64le(r), tail = u64le(r);
      ck_buf_printf(j, ",\"fingerprint\":{\"window\":%llu,\"head\":\"%016llx\",\"tail\":"
                    "\"%016llx\"}", (unsigned long long)w, (unsigned long long)head,
                    (unsigned long long)tail);
    }
    ck_buf_putc(j, '}');
  }
  ck_buf_puts(j, "]}");
  return 0;
}

static int dec_kafka_source(const void *data, size_t len, ck_buf_t *j) {
  ck_str_t topic;
  ck_kafka_pos_t *pos;
  int n;
  ck_error_t err;
  ck_error_clear(&err);
  int version = 0;
  if (ck_kafka_snap_decode_ident(data, len, &topic, &pos, NULL, &n, NULL, &version, &err))
    return -1;
  ck_buf_printf(j, "{\"state\":\"source position\",\"version\":%d,\"topic\":", version);
  ck_buf_put_json_str(j, topic.ptr, topic.len);
  ck_buf_puts(j, ",\"partitions\":[");
  for (int i = 0; i < n; i++)
    ck_buf_printf(j, "%s{\"partition\":%d,\"next_offset\":%lld}", i ? "," : "",
                  (int)pos[i].partition, (long long)pos[i].offset);
  ck_buf_puts(j, "]}");
  ck_free(pos);
  return 0;
}

/* exactly-once file sink: u8 version (2), uvarint checkpoint, uvarint committed length,
 * uvarint n, per staged interval: uvarint checkpoint, start, size */
static int dec_file_sink(rd_t *r, ck_buf_t *j) {
  int v = u8(r);
  uint64_t ckpt = uv(r), expected = uv(r), n = uv(r);
  ck_buf_printf(j, "{\"state\":\"sink pre-commit\",\"mode\":\"exactly_once\",\"version\":%d,"
                "\"checkpoint\":%llu,\"length\":%llu,\"staged\":[", v,
                (unsigned long long)ckpt, (unsigned long long)expected);
  for (uint64_t i = 0; i < n && !r->bad; i++) {
    uint64_t c = uv(r), start = uv(r), size = uv(r);
    ck_buf_printf(j, "%s{\"checkpoint\":%llu,\"start\":%llu,\"size\":%llu}", i ? "," : "",
                  (unsigned long long)c, (unsigned long long)start, (unsigned long long)size);
  }
  ck_buf_puts(j, "]}");
  return v == 2 ? 0 : -1;
}

static int dec_kafka_sink(const void *data, size_t len, ck_buf_t *j) {
  ck_kafka_txn_state_t st;
  ck_error_t err;
  ck_error_clear(&err);
  if (ck_kafka_txn_state_decode(data, len, &st, &err)) return -1;
  ck_buf_printf(j, "{\"state\":\"sink pre-commit\",\"mode\":\"exactly_once\",\"version\":%d,"
                "\"identity\":\"%016llx\",\"checkpoint\":%lld,\"producer_slot\":%d,"
                "\"previous_prepared\":%lld,\"held_for_redo\":%s,\"held_records\":%llu}",
                ((const uint8_t *)data)[0], (unsigned long long)st.identity, (long long)st.ckpt,
                st.slot, (long long)st.prev, st.held ? "true" : "false",
                (unsigned long long)st.nheld);
  return 0;
}

/* exactly-once ClickHouse sink: u8 version, u8 1, uvarint prefix length, prefix, uvarint
 * checkpoint, u8 whether rows were staged */
static int dec_clickhouse_sink(rd_t *r, ck_buf_t *j) {
  int v = u8(r), eos = u8(r);
  ck_buf_printf(j, "{\"state\":\"sink pre-commit\",\"mode\":\"%s\",\"version\":%d,"
                "\"staging_prefix\":", eos ? "exactly_once" : "at_least_once", v);
  str(r, j);
  uint64_t ckpt = uv(r);
  int had = u8(r);
  ck_buf_printf(j, ",\"checkpoint\":%llu,\"staged\":%s}", (unsigned long long)ckpt,
                had ? "true" : "false");
  return v == 1 ? 0 : -1;
}

/* PostgreSQL sink: u8 version, u8 exactly once; then uvarint prefix length, prefix, uvarint
 * checkpoint, u8 whether a transaction was prepared */
static int dec_postgres_sink(rd_t *r, ck_buf_t *j) {
  int v = u8(r), eos = u8(r);
  ck_buf_printf(j, "{\"state\":\"sink pre-commit\",\"mode\":\"%s\",\"version\":%d",
                eos ? "exactly_once" : "at_least_once", v);
  if (eos) {
    ck_buf_puts(j, ",\"transaction_prefix\":");
    str(r, j);
    uint64_t ckpt = uv(r);
    int prepared = u8(r);
    ck_buf_printf(j, ",\"checkpoint\":%llu,\"prepared\":%s", (unsigned long long)ckpt,
                  prepared ? "true" : "false");
  }
  ck_buf_putc(j, '}');
  return v == 1 ? 0 : -1;
}

typedef enum { D_GEN, D_FILE_SRC, D_KAFKA_SRC, D_FILE_SINK, D_KAFKA_SINK, D_CH_SINK, D_PG_SINK } dk_t;

/* The decoders, by node name. */
static const struct {
  const char *node;
  dk_t how;
} DECODERS[] = {
    {"datagen_source", D_GEN},         {"nexmark_source", D_GEN},
    {"file_source", D_FILE_SRC},       {"kafka_source", D_KAFKA_SRC},
    {"file_sink", D_FILE_SINK},        {"kafka_sink", D_KAFKA_SINK},
    {"clickhouse_sink", D_CH_SINK},    {"postgres_sink", D_PG_SINK},
};

int ck_state_decode_raw(const char *node, int kind, const void *data, size_t len, ck_buf_t *j,
                        ck_error_t *err) {
  size_t start = j->len;
  if (len == 0) { /* nothing to keep: calc, an at-least-once sink's flush */
    ck_buf_printf(j, "{\"state\":\"%s\"}", kind == CK_SNAP_SINK ? "sink pre-commit (none: at "
                  "least once, flushed at the barrier)" : kind == CK_SNAP_SOURCE ? "source "
                  "position (none)" : "none");
    return 0;
  }
  rd_t r = {data, (const uint8_t *)data + len, false};
  int rc = 1;
  for (size_t i = 0; i < sizeof DECODERS / sizeof DECODERS[0] && rc == 1; i++) {
    if (strcmp(node, DECODERS[i].node) != 0) continue;
    switch (DECODERS[i].how) {
      case D_GEN: rc = dec_generator(&r, j); break;
      case D_FILE_SRC: rc = dec_file_source(&r, j); break;
      case D_KAFKA_SRC: rc = dec_kafka_source(data, len, j), r.p = r.end; break;
      case D_FILE_SINK: rc = dec_file_sink(&r, j); break;
      case D_KAFKA_SINK: rc = dec_kafka_sink(data, len, j), r.p = r.end; break;
      case D_CH_SINK: rc = dec_clickhouse_sink(&r, j); break;
      case D_PG_SINK: rc = dec_postgres_sink(&r, j); break;
    }
  }
  if (rc == 1) { /* not in the table */
    ck_buf_printf(j, "{\"state\":\"unknown\",\"version\":%d,\"hex\":\"",
                  ((const uint8_t *)data)[0]);
    for (size_t i = 0; i < len; i++) ck_buf_printf(j, "%02x", ((const uint8_t *)data)[i]);
    ck_buf_puts(j, "\"}");
    return 0;
  }
  if (rc || r.bad || r.p != r.end) {
    j->len = start;
    j->data[start] = 0;
    return ck_error_set(err, CK_ESTATE, "could not decode the state of node '%s': its %zu bytes "
                        "are not a %s encoding this clink reads", node, len, node);
  }
  return 0;
}
