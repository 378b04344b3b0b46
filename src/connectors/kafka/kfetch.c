/*
 * DESIGN: see kfetch.h. Wire encoding here is Kafka's (big-endian; STRING = i16 length + bytes,
 * NULLABLE_STRING with length -1 for null, ARRAY = i32 count + elements, RECORDS = i32 length
 * + bytes). Every response is parsed with bounds checks: a short or malformed one is a
 * connection fault (logged, reconnected), never a crash.
 */
#include "connectors/kafka/kfetch.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/sock.h"
#include "base/time.h"

enum { API_FETCH = 1, API_LIST_OFFSETS = 2, API_METADATA = 3, API_VERSIONS = 18 };
#define V_FETCH 11
#define V_LIST_OFFSETS 5
#define V_METADATA 8

/* Kafka error codes the client acts on */
enum {
  KERR_OFFSET_OUT_OF_RANGE = 1,
  KERR_UNKNOWN_TOPIC_OR_PARTITION = 3,
  KERR_TOPIC_AUTHORIZATION_FAILED = 29,
  KERR_UNKNOWN_TOPIC_ID = 100,
};

#define KFETCH_META_EVERY_MS 1000   /* at most one metadata refresh a second */
#define KFETCH_PART_BACKOFF_MS 200  /* after a partition error */
#define KFETCH_CONN_BACKOFF_MS 1000 /* after a lost connection */
#define KFETCH_RESP_TIMEOUT_MS 30000 /* a fetch unanswered this long past max_wait: lost */
#define KFETCH_MAX_RESPONSE (1 << 30)
#define KFETCH_SPARES 4
#define KFETCH_MAX_PART_BYTES (64 << 20) /* cap when a batch does not fit the partition limit */
#define KFETCH_MIN_PART_BYTES (64 << 10) /* least share of response_bytes per partition */
#define KFETCH_LOWAT_MAX (256 << 10)      /* see set_lowat */

typedef struct kresp { /* one Fetch response body, shared by the record sets in it */
  int refs;
  uint8_t *data;
  size_t len, cap;
} kresp_t;

typedef struct kset {
  kresp_t *resp; /* NULL for an empty set (an offset reset) */
  const uint8_t *rec;
  size_t len;
  int64_t fetch_offset;
  ck_kaborted_t *aborted;
  int naborted;
} kset_t;

#define KPART_SETS 2
typedef struct kpart {
  int32_t id, leader; /* leader: node id, -1 unknown */
  int64_t pos;        /* where its next fetch starts */
  int gen;            /* bumped by seek: older answers are dropped */
  bool paused, asked;
  kset_t sets[KPART_SETS];
  int nsets;
  int32_t max_bytes;
  int64_t retry_at;
} kpart_t;

typedef struct kbroker {
  int32_t node; /* < 0: a bootstrap address */
  char host[256];
  int port;
  int ffd, sfd; /* fetch and synchronous connections, -1 when closed */
  /* the fetch in flight */
  bool inflight;
  int32_t corr;
  int64_t sent_at;
  int *ask_idx, *ask_gen, nask;
  /* its response, as it arrives */
  uint8_t hdr[4];
  int hdr_got;
  kresp_t *rx;
  size_t rx_got;
  int64_t retry_at;
  int lowat; /* the fetch connection's SO_RCVLOWAT (0: never set) */
  int16_t meta_max; /* the highest Metadata version it serves (ApiVersions) */
} kbroker_t;

struct ck_kfetch {
  ck_kfetch_conf_t conf;
  kafka_client_t *kc;
  char client_id[256];
  kbroker_t **brokers; /* each allocated on its own: a pointer to one stays valid until close,
                        * whatever metadata adds meanwhile */
  int nbrokers, cap_brokers;
  int32_t ntopic;      /* per the last metadata */
  int32_t *leaders;    /* by partition id, ntopic of them */
  kpart_t *parts;
  int nparts;
  bool meta_stale, suspect;
  int64_t meta_at;
  int rr;
  bool has_cur;
  kset_t cur;
  ck_krecs_t it;
  kresp_t *spare[KFETCH_SPARES];
  int nspare;
  int32_t corr;
  ck_buf_t req, resp; /* synchronous requests' scratch */
  char cluster_id[128]; /* per the last metadata ("" when a broker gave none) */
  bool has_topic_id;
  uint8_t topic_id[16]; /* Metadata v10's, read once at open (Kafka 2.8+) */
};

/* ============================================================ encoding ====== */

/* Kafka's signed big-endian fields, through base/bytes.h */
static void put_i8(ck_buf_t *b, int8_t v) { ck_buf_put_u8(b, (uint8_t)v); }
static void put_i16(ck_buf_t *b, int16_t v) { ck_buf_put_be16(b, (uint16_t)v); }
static void put_i32(ck_buf_t *b, int32_t v) { ck_buf_put_be32(b, (uint32_t)v); }
static void put_i64(ck_buf_t *b, int64_t v) { ck_buf_put_be64(b, (uint64_t)v); }
static void put_str(ck_buf_t *b, const char *s) {
  size_t n = strlen(s);
  put_i16(b, (int16_t)n);
  ck_buf_append(b, s, n);
}

static void req_begin(ck_kfetch_t *f, ck_buf_t *b, int16_t api, int16_t ver, int32_t *corr) {
  ck_buf_reset(b);
  put_i32(b, 0); /* the size, patched by req_end */
  put_i16(b, api);
  put_i16(b, ver);
  *corr = ++f->corr;
  put_i32(b, *corr);
  put_str(b, f->client_id);
}

static void req_end(ck_buf_t *b) {
  ck_put_be32(b->data, (uint32_t)(b->len - 4));
}

/* ============================================================ decoding ====== */

typedef ck_rd_t rd_t; /* {p, end, bad}: a short read sets bad, sticky (base/bytes.h) */

static int16_t get_i16(rd_t *r) { return (int16_t)ck_rd_be16(r); }
static int32_t get_i32(rd_t *r) { return (int32_t)ck_rd_be32(r); }
static int64_t get_i64(rd_t *r) { return (int64_t)ck_rd_be64(r); }
static int8_t get_i8(rd_t *r) { return (int8_t)ck_rd_u8(r); }
/* A STRING or NULLABLE_STRING (NULL ptr for null). */
static ck_str_t get_str(rd_t *r) {
  int16_t n = get_i16(r);
  ck_str_t s = {NULL, 0};
  if (n < 0 || !ck_rd_need(r, (size_t)n)) return s;
  s.ptr = (const char *)r->p;
  s.len = (size_t)n;
  r->p += n;
  return s;
}
static int32_t get_count(rd_t *r, size_t min_elem) { /* an ARRAY's count, checked for size */
  int32_t n = get_i32(r);
  if (n < 0) return 0; /* null array */
  if (min_elem && (size_t)n > (size_t)(r->end - r->p) / min_elem) {
    r->bad = true;
    return 0;
  }
  return n;
}
static void skip(rd_t *r, size_t n) {
  if (ck_rd_need(r, n)) r->p += n;
}
/* Flexible versions' fields: an unsigned varint, a COMPACT_(NULLABLE_)STRING, a COMPACT_ARRAY's
 * count, and a tagged-field section (skipped). */
static uint64_t get_uv(rd_t *r) {
  uint64_t v = 0;
  if (r->bad || !ck_uvarint_get(&r->p, r->end, &v)) r->bad = true;
  return v;
}
static ck_str_t get_cstr(rd_t *r) {
  uint64_t n = get_uv(r);
  ck_str_t s = {NULL, 0};
  if (n == 0 || !ck_rd_need(r, (size_t)(n - 1))) return s;
  s.ptr = (const char *)r->p;
  s.len = (size_t)(n - 1);
  r->p += n - 1;
  return s;
}
static uint64_t get_ccount(rd_t *r, size_t min_elem) {
  uint64_t n = get_uv(r);
  if (n == 0) return 0;
  if (min_elem && n - 1 > (uint64_t)(r->end - r->p) / min_elem) {
    r->bad = true;
    return 0;
  }
  return n - 1;
}
static void skip_tags(rd_t *r) {
  for (uint64_t n = get_uv(r); n && !r->bad; n--) {
    get_uv(r); /* tag */
    skip(r, (size_t)get_uv(r));
  }
}

/* ============================================================= responses ====== */

static kresp_t *resp_get(ck_kfetch_t *f, size_t size) {
  kresp_t *r = NULL;
  for (int i = 0; i < f->nspare; i++)
    if (f->spare[i]->cap >= size) {
      r = f->spare[i];
      f->spare[i] = f->spare[--f->nspare];
      break;
    }
  if (!r) {
    r = ck_calloc(1, sizeof *r);
    r->cap = size;
    r->data = ck_malloc(size ? size : 1);
  }
  r->len = size;
  r->refs = 1;
  return r;
}

static void resp_unref(ck_kfetch_t *f, kresp_t *r) {
  if (!r || --r->refs > 0) return;
  if (f->nspare == KFETCH_SPARES) { /* keep the largest */
    int small = 0;
    for (int i = 1; i < f->nspare; i++)
      if (f->spare[i]->cap < f->spare[small]->cap) small = i;
    if (f->spare[small]->cap >= r->cap) {
      ck_free(r->data);
      ck_free(r);
      return;
    }
    ck_free(f->spare[small]->data);
    ck_free(f->spare[small]);
    f->spare[small] = f->spare[--f->nspare];
  }
  f->spare[f->nspare++] = r;
}

static void set_drop(ck_kfetch_t *f, kset_t *s) {
  resp_unref(f, s->resp);
  ck_free(s->aborted);
  memset(s, 0, sizeof *s);
}

static void part_drop_sets(ck_kfetch_t *f, kpart_t *p) {
  for (int i = 0; i < p->nsets; i++) set_drop(f, &p->sets[i]);
  p->nsets = 0;
}

/* ========================================================== connections ====== */

static void fd_close(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

/* Why an I/O of ck_sock_write_all/read_all failed, as text. */
static int io_failed(int rc, const char *doing, char *why, size_t n) {
  if (rc == CK_ETIMEOUT) snprintf(why, n, "timed out %s", doing);
  else if (errno == ECONNRESET) snprintf(why, n, "the broker closed the connection");
  else snprintf(why, n, "failed %s: %s", doing, strerror(errno));
  return -1;
}

/* One request and its response on fd: the response body after its correlation id is left in
 * f->resp. */
static int rpc(ck_kfetch_t *f, int fd, const ck_buf_t *req, int32_t corr, char *why, size_t n) {
  int64_t deadline = ck_mono_ms() + CK_KAFKA_ATTEMPT_MS;
  int rc = ck_sock_write_all(fd, req->data, req->len, deadline, NULL, NULL);
  if (rc) return io_failed(rc, "sending a request", why, n);
  uint8_t h[4];
  if ((rc = ck_sock_read_all(fd, h, 4, deadline, NULL)))
    return io_failed(rc, "waiting for the broker's answer", why, n);
  uint32_t size = ck_get_be32(h);
  if (size < 4 || size > KFETCH_MAX_RESPONSE) {
    snprintf(why, n, "the broker answered with a frame of %u bytes", size);
    return -1;
  }
  ck_buf_reset(&f->resp);
  ck_buf_reserve(&f->resp, size);
  if ((rc = ck_sock_read_all(fd, f->resp.data, size, deadline, NULL)))
    return io_failed(rc, "waiting for the broker's answer", why, n);
  f->resp.len = size;
  rd_t r = {(const uint8_t *)f->resp.data, (const uint8_t *)f->resp.data + size, false};
  if (get_i32(&r) != corr) {
    snprintf(why, n, "the broker answered out of order");
    return -1;
  }
  return 0;
}

/* Connects to b and checks it serves the API versions this client speaks. */
static int conn_open(ck_kfetch_t *f, kbroker_t *b, int *fdp, char *why, size_t n) {
  int e = 0;
  const char *gai = NULL;
  int fd = ck_sock_connect_fd(b->host, b->port, ck_mono_ms() + CK_KAFKA_ATTEMPT_MS, NULL, &e,
                              &gai);
  if (fd < 0) {
    snprintf(why, n, "could not connect to %s:%d: %s", b->host, b->port, gai ? gai : strerror(e));
    return -1;
  }
  ck_buf_t *req = &f->req;
  int32_t corr;
  req_begin(f, req, API_VERSIONS, 0, &corr);
  req_end(req);
  if (rpc(f, fd, req, corr, why, n)) {
    close(fd);
    return -1;
  }
  rd_t r = {(const uint8_t *)f->resp.data + 4, (const uint8_t *)f->resp.data + f->resp.len,
            false};
  int16_t ec = get_i16(&r);
  int32_t cnt = get_count(&r, 6);
  int16_t have[4][2] = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
  for (int32_t i = 0; i < cnt && !r.bad; i++) {
    int16_t key = get_i16(&r), lo = get_i16(&r), hi = get_i16(&r);
    if (key >= API_FETCH && key <= API_METADATA) have[key][0] = lo, have[key][1] = hi;
  }
  b->meta_max = have[API_METADATA][1];
  static const struct { int16_t key, ver; const char *name; } want[] = {
      {API_FETCH, V_FETCH, "Fetch"},
      {API_LIST_OFFSETS, V_LIST_OFFSETS, "ListOffsets"},
      {API_METADATA, V_METADATA, "Metadata"},
  };
  if (r.bad || ec) {
    snprintf(why, n, "broker %s:%d did not answer ApiVersions (%s)", b->host, b->port,
             r.bad ? "malformed answer" : rd_kafka_err2str((rd_kafka_resp_err_t)ec));
    close(fd);
    return -1;
  }
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const int16_t *h = have[want[i].key];
    if (want[i].ver < h[0] || want[i].ver > h[1]) {
      snprintf(why, n, "broker %s:%d does not serve %s v%d (it serves v%d to v%d); clink's own "
               "fetch client needs Kafka 2.3 or later: set fetcher = 'librdkafka' for older "
               "brokers", b->host, b->port, want[i].name, want[i].ver, h[0], h[1]);
      close(fd);
      return -2; /* not worth retrying */
    }
  }
  *fdp = fd;
  return 0;
}

static void broker_lost(ck_kfetch_t *f, kbroker_t *b, const char *why) {
  for (int i = 0; i < b->nask; i++) f->parts[b->ask_idx[i]].asked = false;
  b->nask = 0;
  b->inflight = false;
  b->hdr_got = 0;
  resp_unref(f, b->rx);
  b->rx = NULL;
  b->rx_got = 0;
  fd_close(&b->ffd);
  b->lowat = 0;
  b->retry_at = ck_mono_ms() + KFETCH_CONN_BACKOFF_MS;
  f->meta_stale = true;
  char msg[700];
  snprintf(msg, sizeof msg, "fetching from broker %s:%d (node %d): %s (retrying)", b->host,
           b->port, (int)b->node, why);
  ck_kafka_log_error(f->kc, RD_KAFKA_RESP_ERR__TRANSPORT, msg);
}

static kbroker_t *broker_add(ck_kfetch_t *f, int32_t node, const char *host, size_t hlen,
                             int port) {
  for (int i = 0; i < f->nbrokers; i++) {
    kbroker_t *b = f->brokers[i];
    if (b->node != node || node < 0) continue;
    if (strlen(b->host) == hlen && memcmp(b->host, host, hlen) == 0 && b->port == port) return b;
    /* moved: reconnect */
    if (b->ffd >= 0) broker_lost(f, b, "the broker's address changed");
    fd_close(&b->sfd);
    snprintf(b->host, sizeof b->host, "%.*s", (int)hlen, host);
    b->port = port;
    return b;
  }
  if (f->nbrokers == f->cap_brokers) {
    f->cap_brokers = f->cap_brokers ? f->cap_brokers * 2 : 4;
    f->brokers = ck_realloc(f->brokers, (size_t)f->cap_brokers * sizeof *f->brokers);
  }
  kbroker_t *b = ck_calloc(1, sizeof *b);
  f->brokers[f->nbrokers++] = b;
  b->node = node;
  snprintf(b->host, sizeof b->host, "%.*s", (int)hlen, host);
  b->port = port;
  b->ffd = b->sfd = -1;
  return b;
}

static kbroker_t *broker_of(ck_kfetch_t *f, int32_t node) {
  if (node < 0) return NULL;
  for (int i = 0; i < f->nbrokers; i++)
    if (f->brokers[i]->node == node) return f->brokers[i];
  return NULL;
}

/* ============================================================= metadata ====== */

/* Asks one broker for the topic's metadata. 0 with *terr the topic's error code, or -1. */
static int metadata_from(ck_kfetch_t *f, kbroker_t *b, int16_t *terr, char *why, size_t n) {
  if (b->sfd < 0) {
    int rc = conn_open(f, b, &b->sfd, why, n);
    if (rc) return rc;
  }
  ck_buf_t *req = &f->req;
  int32_t corr;
  req_begin(f, req, API_METADATA, V_METADATA, &corr);
  put_i32(req, 1);
  put_str(req, f->kc->topic);
  put_i8(req, 0); /* allow_auto_topic_creation */
  put_i8(req, 0); /* include_cluster_authorized_operations */
  put_i8(req, 0); /* include_topic_authorized_operations */
  req_end(req);
  if (rpc(f, b->sfd, req, corr, why, n)) {
    fd_close(&b->sfd);
    return -1;
  }
  /* copy: broker_add may reconnect, which reuses f->resp */
  size_t len = f->resp.len - 4;
  uint8_t *body = ck_malloc(len ? len : 1);
  memcpy(body, f->resp.data + 4, len);
  rd_t r = {body, body + len, false};
  get_i32(&r); /* throttle */
  int32_t nb = get_count(&r, 10);
  for (int32_t i = 0; i < nb && !r.bad; i++) {
    int32_t node = get_i32(&r);
    ck_str_t host = get_str(&r);
    int32_t port = get_i32(&r);
    get_str(&r); /* rack */
    if (!r.bad && host.ptr) broker_add(f, node, host.ptr, host.len, port);
  }
  ck_str_t cid = get_str(&r);
  if (!r.bad && cid.ptr && cid.len < sizeof f->cluster_id)
    snprintf(f->cluster_id, sizeof f->cluster_id, "%.*s", (int)cid.len, cid.ptr);
  get_i32(&r); /* controller */
  int32_t nt = get_count(&r, 9);
  int rc = -1;
  for (int32_t t = 0; t < nt && !r.bad; t++) {
    int16_t ec = get_i16(&r);
    ck_str_t name = get_str(&r);
    get_i8(&r); /* internal */
    int32_t np = get_count(&r, 26);
    bool ours = name.ptr && ck_str_eq(name, ck_str_of(f->kc->topic));
    int32_t maxp = -1;
    int32_t *leaders = NULL;
    if (ours) leaders = ck_calloc((size_t)(np ? np : 1), sizeof *leaders);
    for (int32_t i = 0; i < np && !r.bad; i++) {
      get_i16(&r); /* partition error: a leader of -1 says enough */
      int32_t idx = get_i32(&r), leader = get_i32(&r);
      get_i32(&r); /* leader epoch */
      for (int k = 0; k < 3 && !r.bad; k++) skip(&r, 4 * (size_t)get_count(&r, 4));
      if (ours && !r.bad && idx >= 0 && idx < np) {
        leaders[idx] = leader;
        if (idx > maxp) maxp = idx;
      }
    }
    get_i32(&r); /* topic authorized operations */
    if (!ours || r.bad) {
      ck_free(leaders);
      continue;
    }
    *terr = ec;
    ck_free(f->leaders);
    f->leaders = leaders;
    f->ntopic = ec ? 0 : np;
    rc = 0;
  }
  ck_free(body);
  if (r.bad) {
    snprintf(why, n, "broker %s:%d sent malformed metadata", b->host, b->port);
    fd_close(&b->sfd);
    return -1;
  }
  if (rc) snprintf(why, n, "broker %s:%d did not describe the topic", b->host, b->port);
  return rc;
}

/* The topic's metadata from any broker that answers (the known ones first, then the
 * bootstrap addresses); updates the partitions' leaders. */
static int metadata(ck_kfetch_t *f, int16_t *terr, char *why, size_t n) {
  f->meta_at = ck_mono_ms();
  int rc = -1;
  for (int pass = 0; pass < 2 && rc; pass++)
    for (int i = 0; i < f->nbrokers && rc; i++) {
      if ((f->brokers[i]->node < 0) != (pass == 1)) continue;
      rc = metadata_from(f, f->brokers[i], terr, why, n);
      if (rc == -2) return -2;
    }
  if (rc) return rc;
  for (int i = 0; i < f->nparts; i++) {
    kpart_t *p = &f->parts[i];
    p->leader = p->id < f->ntopic ? f->leaders[p->id] : -1;
  }
  f->meta_stale = false;
  return 0;
}

/* The topic's id (Metadata v10, a flexible version: compact strings and arrays, tagged fields),
 * from a broker that serves it, once at open. Best effort: a broker before Kafka 2.8, or any
 * failure, leaves the id unknown (the source then records none; nothing else depends on it). */
static void read_topic_id(ck_kfetch_t *f) {
  for (int i = 0; i < f->nbrokers && !f->has_topic_id; i++) {
    kbroker_t *b = f->brokers[i];
    char why[600];
    if (b->sfd < 0 || b->meta_max < 10) continue;
    ck_buf_t *req = &f->req;
    int32_t corr;
    req_begin(f, req, API_METADATA, 10, &corr);
    put_i8(req, 0); /* the request header's tagged fields */
    put_i8(req, 2); /* topics: one (compact array: count + 1) */
    for (int k = 0; k < 16; k++) put_i8(req, 0); /* topic id: asked by name */
    size_t tl = strlen(f->kc->topic);
    ck_buf_put_uvarint(req, tl + 1);
    ck_buf_append(req, f->kc->topic, tl);
    put_i8(req, 0); /* the topic's tagged fields */
    put_i8(req, 0); /* allow_auto_topic_creation */
    put_i8(req, 0); /* include_cluster_authorized_operations */
    put_i8(req, 0); /* include_topic_authorized_operations */
    put_i8(req, 0); /* tagged fields */
    req_end(req);
    if (rpc(f, b->sfd, req, corr, why, sizeof why)) {
      CK_LOG_DEBUG(CK_KAFKA_LOG, "table '%s': no topic id from broker %s:%d: %s", f->kc->table,
                   b->host, b->port, why);
      fd_close(&b->sfd);
      continue;
    }
    rd_t r = {(const uint8_t *)f->resp.data + 4, (const uint8_t *)f->resp.data + f->resp.len,
              false};
    skip_tags(&r); /* the response header's */
    get_i32(&r);   /* throttle */
    for (uint64_t n = get_ccount(&r, 10); n && !r.bad; n--) {
      get_i32(&r);
      get_cstr(&r);
      get_i32(&r);
      get_cstr(&r);
      skip_tags(&r);
    }
    get_cstr(&r); /* cluster id */
    get_i32(&r);  /* controller */
    uint64_t nt = get_ccount(&r, 22);
    if (nt < 1 || r.bad) continue;
    int16_t ec = get_i16(&r);
    ck_str_t name = get_cstr(&r);
    if (r.bad || ec || !name.ptr || !ck_str_eq(name, ck_str_of(f->kc->topic)) ||
        !ck_rd_need(&r, 16))
      continue;
    bool zero = true;
    for (int k = 0; k < 16; k++) zero = zero && r.p[k] == 0;
    if (zero) continue; /* a broker that keeps no ids */
    memcpy(f->topic_id, r.p, 16);
    f->has_topic_id = true;
  }
}

void ck_kfetch_ident(const ck_kfetch_t *f, const char **cluster_id, const uint8_t **topic_id) {
  *cluster_id = f->cluster_id[0] ? f->cluster_id : NULL;
  *topic_id = f->has_topic_id ? f->topic_id : NULL;
}

static void refresh(ck_kfetch_t *f) {
  if (!f->meta_stale || ck_mono_ms() - f->meta_at < KFETCH_META_EVERY_MS) return;
  int16_t terr = 0;
  char why[600];
  if (metadata(f, &terr, why, sizeof why)) {
    char msg[700];
    snprintf(msg, sizeof msg, "could not refresh the metadata of topic '%s': %s (retrying)",
             f->kc->topic, why);
    ck_kafka_log_error(f->kc, RD_KAFKA_RESP_ERR__TRANSPORT, msg);
    f->meta_stale = true;
    return;
  }
  if (terr == KERR_UNKNOWN_TOPIC_OR_PARTITION) f->suspect = true;
  for (int i = 0; i < f->nparts; i++)
    if (f->parts[i].leader < 0 || !broker_of(f, f->parts[i].leader)) f->meta_stale = true;
}

/* ============================================================ open/close ====== */

bool ck_kfetch_understands(const char *property, const char *value) {
  static const char *const known[] = {"fetch.wait.max.ms", "max.partition.fetch.bytes",
                                      "fetch.max.bytes", "check.crcs", "client.id", NULL};
  for (const char *const *k = known; *k; k++)
    if (strcmp(property, *k) == 0) return true;
  return strcmp(property, "security.protocol") == 0 && ck_streq_i(value, "plaintext");
}

int ck_kfetch_open(ck_kfetch_t **out, const ck_kfetch_conf_t *conf, int *nparts,
                   ck_error_t *err) {
  ck_kfetch_t *f = ck_calloc(1, sizeof *f);
  f->conf = *conf;
  f->kc = conf->kc;
  ck_buf_init(&f->req);
  ck_buf_init(&f->resp);
  ck_krecs_init(&f->it);
  f->it.read_committed = conf->read_committed;
  f->it.check_crc = conf->check_crc;
  if (conf->client_id) snprintf(f->client_id, sizeof f->client_id, "%s", conf->client_id);
  else snprintf(f->client_id, sizeof f->client_id, "clink-%s-%d", f->kc->table, f->kc->subtask);
  f->conf.client_id = NULL; /* not kept: the option's storage is the caller's */
  *out = f;
  /* the bootstrap addresses, host:port[,host:port...] */
  int boot = -1;
  for (const char *s = f->kc->brokers; *s;) {
    size_t len = strcspn(s, ",");
    const char *e = s + len, *b = s;
    while (b < e && (*b == ' ' || *b == '\t')) b++;
    const char *colon = NULL;
    for (const char *c = b; c < e; c++)
      if (*c == ':') colon = c;
    if (b < e) {
      int port = colon ? atoi(colon + 1) : 9092;
      const char *hend = colon ? colon : e;
      while (hend > b && (hend[-1] == ' ' || hend[-1] == '\t')) hend--;
      if (*b == '[' && hend > b + 1 && hend[-1] == ']') b++, hend--; /* [v6 address] */
      broker_add(f, boot--, b, (size_t)(hend - b), port);
    }
    s = *e ? e + 1 : e;
  }
  if (boot == -1)
    return ck_error_set(err, CK_EOPTION, "option 'brokers' of table '%s' names no broker",
                        f->kc->table);
  char what[300], why[600];
  snprintf(what, sizeof what, "get the metadata of topic '%s'", f->kc->topic);
  ck_kafka_retry_t r;
  ck_kafka_retry_init(&r);
  for (;;) {
    int16_t terr = 0;
    int rc = metadata(f, &terr, why, sizeof why);
    if (rc == -2) return ck_error_set(err, CK_EREMOTE, "%s", why);
    if (!rc && terr == KERR_UNKNOWN_TOPIC_OR_PARTITION) {
      if (ck_mono_ms() - r.start >= CK_KAFKA_TOPIC_GRACE_MS) return ck_kafka_not_found(f->kc, err);
      ck_sleep_ms(100); /* within the grace period: quietly again */
      continue;
    }
    if (!rc && terr == KERR_TOPIC_AUTHORIZATION_FAILED)
      return ck_kafka_error(err, CK_EREMOTE, (rd_kafka_resp_err_t)terr, "could not read the "
                            "metadata of topic '%s' from Kafka brokers '%s': %s", f->kc->topic,
                            f->kc->brokers, rd_kafka_err2str((rd_kafka_resp_err_t)terr));
    rd_kafka_resp_err_t code = RD_KAFKA_RESP_ERR__TRANSPORT;
    if (!rc) {
      if (!terr && f->ntopic > 0) break;
      code = terr ? (rd_kafka_resp_err_t)terr : RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE;
      snprintf(why, sizeof why, "%s", rd_kafka_err2str(code));
    }
    if ((rc = ck_kafka_retry_wait(f->kc, &r, what, code, why, err))) return rc;
  }
  read_topic_id(f);
  *nparts = f->ntopic;
  return 0;
}

void ck_kfetch_close(ck_kfetch_t *f) {
  if (!f) return;
  if (f->has_cur) set_drop(f, &f->cur);
  for (int i = 0; i < f->nparts; i++) part_drop_sets(f, &f->parts[i]);
  for (int i = 0; i < f->nbrokers; i++) {
    kbroker_t *b = f->brokers[i];
    fd_close(&b->ffd);
    fd_close(&b->sfd);
    resp_unref(f, b->rx);
    ck_free(b->ask_idx);
    ck_free(b->ask_gen);
    ck_free(b);
  }
  for (int i = 0; i < f->nspare; i++) {
    ck_free(f->spare[i]->data);
    ck_free(f->spare[i]);
  }
  ck_free(f->brokers);
  ck_free(f->leaders);
  ck_free(f->parts);
  ck_krecs_fini(&f->it);
  ck_buf_fini(&f->req);
  ck_buf_fini(&f->resp);
  ck_free(f);
}

/* ============================================================== offsets ====== */

/* One ListOffsets of partition at timestamp ts (-2 earliest, -1 latest) from its leader:
 * 0, -1 (retry; *code and why say why) or a Kafka error code > 0 that is not worth retrying. */
static int list_offset(ck_kfetch_t *f, int32_t partition, int64_t ts, int64_t *off, int *code,
                       char *why, size_t n) {
  *code = RD_KAFKA_RESP_ERR__TRANSPORT;
  if (f->meta_stale || partition >= f->ntopic) {
    int16_t terr = 0;
    int rc = metadata(f, &terr, why, n);
    if (rc) return rc == -2 ? -2 : -1;
    if (terr) {
      *code = terr;
      snprintf(why, n, "%s", rd_kafka_err2str((rd_kafka_resp_err_t)terr));
      return terr == KERR_UNKNOWN_TOPIC_OR_PARTITION ? terr : -1;
    }
  }
  if (partition >= f->ntopic) {
    *code = KERR_UNKNOWN_TOPIC_OR_PARTITION;
    snprintf(why, n, "the topic has %d partitions", (int)f->ntopic);
    return KERR_UNKNOWN_TOPIC_OR_PARTITION;
  }
  kbroker_t *b = broker_of(f, f->leaders[partition]);
  if (!b) {
    f->meta_stale = true;
    *code = RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE;
    snprintf(why, n, "partition %d has no leader", (int)partition);
    return -1;
  }
  if (b->sfd < 0) {
    int rc = conn_open(f, b, &b->sfd, why, n);
    if (rc) return rc == -2 ? -2 : -1;
  }
  ck_buf_t *req = &f->req;
  int32_t corr;
  req_begin(f, req, API_LIST_OFFSETS, V_LIST_OFFSETS, &corr);
  put_i32(req, -1); /* replica id */
  put_i8(req, f->conf.read_committed ? 1 : 0);
  put_i32(req, 1);
  put_str(req, f->kc->topic);
  put_i32(req, 1);
  put_i32(req, partition);
  put_i32(req, -1); /* current leader epoch: unknown */
  put_i64(req, ts);
  req_end(req);
  if (rpc(f, b->sfd, req, corr, why, n)) {
    fd_close(&b->sfd);
    f->meta_stale = true;
    return -1;
  }
  rd_t r = {(const uint8_t *)f->resp.data + 4, (const uint8_t *)f->resp.data + f->resp.len,
            false};
  get_i32(&r); /* throttle */
  int32_t nt = get_count(&r, 6);
  for (int32_t t = 0; t < nt && !r.bad; t++) {
    get_str(&r);
    int32_t np = get_count(&r, 26);
    for (int32_t i = 0; i < np && !r.bad; i++) {
      int32_t idx = get_i32(&r);
      int16_t ec = get_i16(&r);
      get_i64(&r); /* timestamp */
      int64_t o = get_i64(&r);
      get_i32(&r); /* leader epoch */
      if (r.bad || idx != partition) continue;
      if (ec) {
        *code = ec;
        snprintf(why, n, "%s", rd_kafka_err2str((rd_kafka_resp_err_t)ec));
        f->meta_stale = true;
        return ec == KERR_UNKNOWN_TOPIC_OR_PARTITION ? ec : -1;
      }
      *off = o;
      return 0;
    }
  }
  fd_close(&b->sfd);
  snprintf(why, n, "broker %s:%d sent a malformed ListOffsets answer", b->host, b->port);
  return -1;
}

int ck_kfetch_offsets(ck_kfetch_t *f, int32_t partition, int64_t *low, int64_t *high,
                      ck_error_t *err) {
  char what[300], why[600];
  snprintf(what, sizeof what, "get the offsets of partition %d of topic '%s'", (int)partition,
           f->kc->topic);
  ck_kafka_retry_t r;
  ck_kafka_retry_init(&r);
  for (;;) {
    int code = 0;
    int rc = list_offset(f, partition, -2, low, &code, why, sizeof why);
    if (!rc) rc = list_offset(f, partition, -1, high, &code, why, sizeof why);
    if (!rc) return 0;
    if (rc == -2) return ck_error_set(err, CK_EREMOTE, "%s", why);
    if (rc == KERR_UNKNOWN_TOPIC_OR_PARTITION)
      return ck_kafka_error(err, CK_ENOTFOUND, (rd_kafka_resp_err_t)code, "partition %d of "
                            "topic '%s' does not exist on Kafka brokers '%s': %s",
                            (int)partition, f->kc->topic, f->kc->brokers, why);
    if ((rc = ck_kafka_retry_wait(f->kc, &r, what, (rd_kafka_resp_err_t)code, why, err)))
      return rc;
  }
}

/* ========================================================== assignment ====== */

void ck_kfetch_assign(ck_kfetch_t *f, const int32_t *parts, const int64_t *offsets, int n) {
  for (int i = 0; i < f->nparts; i++) part_drop_sets(f, &f->parts[i]);
  ck_free(f->parts);
  f->parts = ck_calloc((size_t)(n ? n : 1), sizeof *f->parts);
  f->nparts = n;
  for (int i = 0; i < n; i++) {
    kpart_t *p = &f->parts[i];
    p->id = parts[i];
    p->pos = offsets[i];
    p->leader = parts[i] < f->ntopic ? f->leaders[parts[i]] : -1;
    p->max_bytes = f->conf.partition_max_bytes;
  }
  for (int i = 0; i < f->nbrokers; i++) { /* answers for an earlier assignment are dropped */
    kbroker_t *b = f->brokers[i];
    if (b->inflight) broker_lost(f, b, "reassigned");
  }
}

void ck_kfetch_seek(ck_kfetch_t *f, int i, int64_t offset) {
  kpart_t *p = &f->parts[i];
  part_drop_sets(f, p);
  p->gen++;
  p->pos = offset;
  p->paused = false;
}

void ck_kfetch_pause(ck_kfetch_t *f, int i) {
  kpart_t *p = &f->parts[i];
  part_drop_sets(f, p);
  p->gen++;
  p->paused = true;
}

bool ck_kfetch_topic_suspect(ck_kfetch_t *f) {
  bool s = f->suspect;
  f->suspect = false;
  return s;
}

int ck_kfetch_partition_count(ck_kfetch_t *f) {
  int16_t terr = 0;
  char why[600];
  if (metadata(f, &terr, why, sizeof why)) return -1;
  if (terr == KERR_UNKNOWN_TOPIC_OR_PARTITION) return 0;
  return terr ? -1 : f->ntopic;
}

/* =============================================================== fetching ====== */

static void send_fetch(ck_kfetch_t *f, kbroker_t *b, int64_t now) {
  int n = 0;
  for (int i = 0; i < f->nparts; i++) {
    const kpart_t *p = &f->parts[i];
    n += p->leader == b->node && !p->paused && !p->asked && p->nsets == 0 && now >= p->retry_at;
  }
  if (!n) return;
  char why[600];
  if (b->ffd < 0) {
    int rc = conn_open(f, b, &b->ffd, why, sizeof why);
    if (rc) {
      broker_lost(f, b, why);
      return;
    }
  }
  ck_buf_t *req = &f->req;
  req_begin(f, req, API_FETCH, V_FETCH, &b->corr);
  put_i32(req, -1);                   /* replica id */
  put_i32(req, f->conf.max_wait_ms);  /* max wait */
  put_i32(req, 1);                    /* min bytes */
  put_i32(req, f->conf.max_bytes);    /* max bytes */
  put_i8(req, f->conf.read_committed ? 1 : 0);
  put_i32(req, 0);  /* session id: none */
  put_i32(req, -1); /* session epoch: a full fetch, no session */
  put_i32(req, 1);
  put_str(req, f->kc->topic);
  put_i32(req, n);
  int32_t share = f->conf.response_bytes / n;
  if (share < KFETCH_MIN_PART_BYTES) share = KFETCH_MIN_PART_BYTES;
  b->ask_idx = ck_realloc(b->ask_idx, (size_t)n * sizeof *b->ask_idx);
  b->ask_gen = ck_realloc(b->ask_gen, (size_t)n * sizeof *b->ask_gen);
  b->nask = 0;
  for (int i = 0; i < f->nparts; i++) {
    kpart_t *p = &f->parts[i];
    if (!(p->leader == b->node && !p->paused && !p->asked && p->nsets == 0 &&
          now >= p->retry_at))
      continue;
    put_i32(req, p->id);
    put_i32(req, -1); /* current leader epoch */
    put_i64(req, p->pos);
    put_i64(req, -1); /* log start offset (followers only) */
    put_i32(req, p->max_bytes ? p->max_bytes : share);
    p->asked = true;
    b->ask_idx[b->nask] = i;
    b->ask_gen[b->nask++] = p->gen;
  }
  put_i32(req, 0);  /* forgotten topics */
  put_str(req, ""); /* rack id */
  req_end(req);
  b->inflight = true;
  b->sent_at = now;
  int rc = ck_sock_write_all(b->ffd, req->data, req->len, now + CK_KAFKA_ATTEMPT_MS, NULL, NULL);
  if (rc) {
    io_failed(rc, "sending a fetch", why, sizeof why);
    broker_lost(f, b, why);
  }
}

static void part_error(ck_kfetch_t *f, kpart_t *p, int16_t ec, int64_t now) {
  if (ec == KERR_OFFSET_OUT_OF_RANGE) {
    int64_t off = 0;
    int code = 0;
    char why[600];
    if (list_offset(f, p->id, f->conf.reset_earliest ? -2 : -1, &off, &code, why,
                    sizeof why) == 0) {
      CK_LOG_WARN(CK_KAFKA_LOG, "table '%s': offset %lld of partition %d of topic '%s' is out "
                  "of range (deleted by retention, or never written); continuing at its %s "
                  "offset %lld (auto_offset_reset)", f->kc->table, (long long)p->pos,
                  (int)p->id, f->kc->topic, f->conf.reset_earliest ? "earliest" : "latest",
                  (long long)off);
      p->pos = off;
      kset_t *s = &p->sets[p->nsets++];
      memset(s, 0, sizeof *s);
      s->fetch_offset = off;
      return;
    }
    p->retry_at = now + KFETCH_PART_BACKOFF_MS;
    return;
  }
  if (ec == KERR_UNKNOWN_TOPIC_OR_PARTITION || ec == KERR_UNKNOWN_TOPIC_ID) f->suspect = true;
  f->meta_stale = true;
  p->retry_at = now + KFETCH_PART_BACKOFF_MS;
  char msg[600];
  snprintf(msg, sizeof msg, "reading partition %d of topic '%s': %s (retrying)", (int)p->id,
           f->kc->topic, rd_kafka_err2str((rd_kafka_resp_err_t)ec));
  ck_kafka_log_error(f->kc, ec, msg);
}

/* A whole Fetch response arrived on b: its partitions' record sets are queued. */
static void on_fetch(ck_kfetch_t *f, kbroker_t *b) {
  kresp_t *resp = b->rx;
  b->rx = NULL;
  b->rx_got = 0;
  b->hdr_got = 0;
  b->inflight = false;
  int nask = b->nask;
  b->nask = 0;
  for (int i = 0; i < nask; i++) f->parts[b->ask_idx[i]].asked = false;
  int64_t now = ck_mono_ms();
  rd_t r = {resp->data, resp->data + resp->len, false};
  if (get_i32(&r) != b->corr) {
    resp_unref(f, resp);
    broker_lost(f, b, "the broker answered out of order");
    return;
  }
  get_i32(&r); /* throttle */
  int16_t top = get_i16(&r);
  get_i32(&r); /* session id */
  if (top && !r.bad) {
    char msg[600];
    snprintf(msg, sizeof msg, "fetching from broker %s:%d: %s (retrying)", b->host, b->port,
             rd_kafka_err2str((rd_kafka_resp_err_t)top));
    ck_kafka_log_error(f->kc, top, msg);
    f->meta_stale = true;
  }
  int32_t nt = get_count(&r, 6);
  for (int32_t t = 0; t < nt && !r.bad; t++) {
    ck_str_t name = get_str(&r);
    bool ours = name.ptr && ck_str_eq(name, ck_str_of(f->kc->topic));
    int32_t np = get_count(&r, 42);
    for (int32_t k = 0; k < np && !r.bad; k++) {
      int32_t id = get_i32(&r);
      int16_t ec = get_i16(&r);
      get_i64(&r); /* high watermark */
      get_i64(&r); /* last stable offset */
      get_i64(&r); /* log start offset */
      int32_t na = get_count(&r, 16);
      const uint8_t *ab = r.p;
      skip(&r, 16 * (size_t)na);
      get_i32(&r); /* preferred read replica */
      int32_t rlen = get_i32(&r);
      const uint8_t *rec = r.p;
      if (rlen > 0) skip(&r, (size_t)rlen);
      if (r.bad || !ours) continue;
      kpart_t *p = NULL;
      for (int i = 0; i < nask && !p; i++)
        if (f->parts[b->ask_idx[i]].id == id && f->parts[b->ask_idx[i]].gen == b->ask_gen[i])
          p = &f->parts[b->ask_idx[i]];
      if (!p || p->paused) continue; /* sought or paused since: dropped */
      if (ec) {
        part_error(f, p, ec, now);
        continue;
      }
      if (rlen <= 0) continue;
      int64_t end = ck_krecs_scan_end(rec, (size_t)rlen, p->pos);
      /* No complete batch: either the first one is cut short (ask for more next time), or it
       * cannot be read at all (an old message format, a corrupt length), which the source's
       * iterator reports with the offset, so that set is handed over as it is. */
      uint32_t blen = rlen >= 17 ? ck_get_be32(rec + 8) : 0;
      bool unreadable = rlen >= 17 && (rec[16] != 2 || (int64_t)blen + 12 <= rlen);
      if (end <= p->pos && !unreadable) { /* only part of one batch */
        if (p->max_bytes < KFETCH_MAX_PART_BYTES) {
          int32_t now_bytes = p->max_bytes ? p->max_bytes : (int32_t)rlen;
          p->max_bytes = now_bytes > KFETCH_MAX_PART_BYTES / 2 ? KFETCH_MAX_PART_BYTES
                                                               : now_bytes * 2;
          CK_LOG_INFO(CK_KAFKA_LOG, "table '%s': a record batch at offset %lld of partition %d "
                      "is larger than the fetch limit; asking for up to %d bytes",
                      f->kc->table, (long long)p->pos, (int)p->id, (int)p->max_bytes);
        }
        continue;
      }
      kset_t *s = &p->sets[p->nsets++];
      memset(s, 0, sizeof *s);
      s->resp = resp;
      resp->refs++;
      s->rec = rec;
      s->len = (size_t)rlen;
      s->fetch_offset = p->pos;
      if (f->conf.read_committed && na > 0) {
        s->aborted = ck_malloc((size_t)na * sizeof *s->aborted);
        rd_t ar = {ab, ab + 16 * (size_t)na, false};
        for (int32_t i = 0; i < na; i++) {
          s->aborted[i].producer_id = get_i64(&ar);
          s->aborted[i].first_offset = get_i64(&ar);
        }
        s->naborted = na;
      }
      if (end > p->pos) p->pos = end;
    }
  }
  if (r.bad) {
    char msg[300];
    snprintf(msg, sizeof msg, "broker %s:%d sent a malformed Fetch answer", b->host, b->port);
    ck_kafka_log_error(f->kc, RD_KAFKA_RESP_ERR__BAD_MSG, msg);
    fd_close(&b->ffd);
    b->lowat = 0;
  }
  resp_unref(f, resp);
}

/* While the source waits for b's answer, the socket wakes it only when the rest of the answer
 * (up to KFETCH_LOWAT_MAX bytes) is there, not at every segment: an answer of a megabyte used to
 * take dozens of wake-ups, each a context switch (measured: 3,300-5,400 voluntary switches for
 * q0's 2M events). The kernel caps the mark at half the receive buffer, so it cannot wait for
 * more than will fit. */
static void set_lowat(kbroker_t *b) {
  size_t want = b->rx ? b->rx->len - b->rx_got : (size_t)(4 - b->hdr_got);
  int lowat = want > KFETCH_LOWAT_MAX ? KFETCH_LOWAT_MAX : want < 1 ? 1 : (int)want;
  if (lowat == b->lowat) return;
  if (setsockopt(b->ffd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat) == 0) b->lowat = lowat;
}

/* Reads what has arrived on b's fetch connection without waiting: the answer's 4-byte size,
 * then its body into a response buffer of that size. */
static void pump(ck_kfetch_t *f, kbroker_t *b) {
  while (b->inflight && b->ffd >= 0) {
    bool in_hdr = b->hdr_got < 4;
    uint8_t *dst = in_hdr ? b->hdr + b->hdr_got : b->rx->data + b->rx_got;
    size_t want = in_hdr ? (size_t)(4 - b->hdr_got) : b->rx->len - b->rx_got;
    ssize_t n = read(b->ffd, dst, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      broker_lost(f, b, n == 0 ? "the broker closed the connection" : strerror(errno));
      return;
    }
    if (!in_hdr) {
      b->rx_got += (size_t)n;
      if (b->rx_got == b->rx->len) on_fetch(f, b);
      continue;
    }
    b->hdr_got += (int)n;
    if (b->hdr_got < 4) continue;
    uint32_t size = ck_get_be32(b->hdr);
    if (size < 4 || size > KFETCH_MAX_RESPONSE) {
      broker_lost(f, b, "the broker sent a frame of an impossible size");
      return;
    }
    b->rx = resp_get(f, size);
    b->rx_got = 0;
  }
}

static bool deliver(ck_kfetch_t *f, int *i, ck_krecs_t **it) {
  for (int k = 0; k < f->nparts; k++) {
    int idx = (f->rr + k) % f->nparts;
    kpart_t *p = &f->parts[idx];
    if (p->paused || !p->nsets) continue;
    f->cur = p->sets[0];
    memmove(&p->sets[0], &p->sets[1], (size_t)(--p->nsets) * sizeof p->sets[0]);
    f->has_cur = true;
    ck_krecs_reset(&f->it, f->cur.rec, f->cur.len, f->cur.fetch_offset, f->cur.aborted,
                   f->cur.naborted);
    f->rr = (idx + 1) % f->nparts;
    *i = idx;
    *it = &f->it;
    return true;
  }
  return false;
}

int ck_kfetch_next(ck_kfetch_t *f, int timeout_ms, int *i, ck_krecs_t **it, ck_error_t *err) {
  (void)err;
  if (f->has_cur) {
    set_drop(f, &f->cur);
    f->has_cur = false;
  }
  int wake_fd = f->conf.wake_fd ? *f->conf.wake_fd : -1;
  if (!f->nparts) {
    struct pollfd w = {.fd = wake_fd, .events = POLLIN};
    if (timeout_ms > 0) (void)poll(&w, 1, timeout_ms); /* fd -1: a plain sleep */
    return 0;
  }
  int64_t deadline = ck_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  for (;;) {
    int64_t now = ck_mono_ms();
    refresh(f);
    for (int k = 0; k < f->nbrokers; k++) {
      kbroker_t *b = f->brokers[k];
      if (b->node < 0) continue;
      if (b->inflight && now - b->sent_at > f->conf.max_wait_ms + KFETCH_RESP_TIMEOUT_MS)
        broker_lost(f, b, "no answer to a fetch");
      if (!b->inflight && now >= b->retry_at) send_fetch(f, b, now);
      pump(f, b);
    }
    if (deliver(f, i, it)) return 1;
    now = ck_mono_ms();
    if (now >= deadline) return 0;
    /* wait for an answer, a retry time, or the deadline */
    struct pollfd pfd[17];
    int np = 0;
    int64_t until = deadline;
    for (int k = 0; k < f->nbrokers && np < 16; k++) {
      kbroker_t *b = f->brokers[k];
      if (b->inflight && b->ffd >= 0) {
        set_lowat(b);
        pfd[np++] = (struct pollfd){.fd = b->ffd, .events = POLLIN};
      }
      else if (b->node >= 0 && b->retry_at > now && b->retry_at < until) until = b->retry_at;
    }
    for (int k = 0; k < f->nparts; k++)
      if (f->parts[k].retry_at > now && f->parts[k].retry_at < until) until = f->parts[k].retry_at;
    if (f->meta_stale && f->meta_at + KFETCH_META_EVERY_MS < until)
      until = f->meta_at + KFETCH_META_EVERY_MS;
    int64_t wait = until - now;
    if (wait < 0) wait = 0;
    if (wait > 1000) wait = 1000;
    /* the engine's wake descriptor last: a checkpoint trigger ends the wait */
    int wi = np;
    pfd[np++] = (struct pollfd){.fd = wake_fd, .events = POLLIN}; /* -1: ignored by poll */
    (void)poll(pfd, (nfds_t)np, (int)wait);
    if (pfd[wi].revents & POLLIN) return 0;
  }
}
