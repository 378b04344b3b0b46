/*
 * DESIGN: see worker.h.
 *
 * A deployment (dep_t) lives from DEPLOY until the control thread reaps it: its job plan, its
 * net (data port; session = the deployment id), its executor, a waiter thread that reports
 * ENDED when the executor returns. Teardown order: executor first (its subtasks stop sending
 * and receiving), then the net (no more deliveries into freed channels), then the plan.
 */
#include "cluster/worker.h"
#include "cluster/zk.h"

#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/thread.h"
#include "base/time.h"
#include "checkpoint/trace.h"
#include "cluster/http.h"
#include "cluster/jobplan.h"
#include "cluster/net.h"
#include "cluster/proto.h"
#include "runtime/exec.h"

#define LOG_W "worker"
#define MAX_DEPS 64
#define ID_WAIT_MS 5000 /* how long a worker whose id is taken keeps trying to register */

typedef struct wk wk_t;

typedef struct dep {
  wk_t *wk;
  int64_t id, job;
  ck_jobplan_t plan;
  bool planned;
  ck_net_t *net;
  ck_exec_t *ex;
  ck_exec_report_t report;
  ck_exec_remote_t remote;
  int *slot_worker;
  int nslots;
  char **peer_host; /* by worker number */
  int *peer_port;
  int npeers;
  char *dir, *name;
  char *capture_dir; /* the job's (DEPLOY); NULL or "" when it has none: --capture-dir's */
  ck_thread_t waiter;
  bool running;     /* waiter started */
  atomic_int ended; /* waiter reported: reap it */
  atomic_int cancel_before_start;
  ck_mutex_t dmu;   /* deliveries vs teardown */
  bool closing;     /* under dmu: the executor is going away, drop deliveries */
} dep_t;

struct wk {
  ck_worker_opts_t o;
  ck_mutex_t mu;
  ck_proto_conn_t conn;
  bool connected;
  atomic_int registered;
  uint64_t epoch; /* newest coordinator epoch seen */
  int num;        /* our worker number at the coordinator */
  int hb_ms;
  dep_t *deps[MAX_DEPS];
  int ndeps;
  ck_thread_t hb_thread;
  atomic_int hb_stop;
  ck_http_t *http;
  /* --ha zookeeper://…: the leader's address is looked up before each connection */
  struct ck_zk *zk;
  char *zk_hosts, *zk_dir;     /* <path>/leader */
  char leader[128];            /* the member connected to */
  char leader_host[256];
  char zk_why[512];            /* why the last lookup found no leader (for the log) */
};

/* ================================================================ sending */

static void send_frame(wk_t *wk, int type, const ck_buf_t *p) {
  ck_error_t err;
  ck_error_clear(&err);
  if (ck_proto_send(&wk->conn, type, 0, p, &err))
    CK_LOG_DEBUG(LOG_W, "could not send %s: %s", ck_proto_type_name(type), err.message);
}

/* ACK and COMMITTED: deployment, checkpoint, task. */
static void report_checkpoint(dep_t *d, int type, int64_t id, int task) {
  ck_buf_t p;
  ck_buf_init(&p);
  ck_proto_put_i64(&p, d->id);
  ck_proto_put_i64(&p, id);
  ck_proto_put_u32(&p, (uint32_t)task);
  send_frame(d->wk, type, &p);
  ck_buf_fini(&p);
}

static void rep_ack(void *ctx, int64_t id, int task) {
  report_checkpoint(ctx, CK_PROTO_ACK, id, task);
}

static void rep_committed(void *ctx, int64_t id, int task) {
  report_checkpoint(ctx, CK_PROTO_COMMITTED, id, task);
}

static void rep_source_done(void *ctx, int task) {
  dep_t *d = ctx;
  ck_buf_t p;
  ck_buf_init(&p);
  ck_proto_put_i64(&p, d->id);
  ck_proto_put_u32(&p, (uint32_t)task);
  send_frame(d->wk, CK_PROTO_SOURCE_DONE, &p);
  ck_buf_fini(&p);
}

/* ================================================================ data plane glue */

static int remote_send(void *ctx, int worker, int sender_task, int sender, int dest_task,
                       int kind, int64_t value, ck_batch_t *batch, const atomic_int *cancel,
                       ck_error_t *err) {
  dep_t *d = ctx;
  if (worker < 0 || worker >= d->npeers || !d->peer_port[worker]) {
    ck_batch_free(batch);
    return ck_error_set(err, CK_EINTERNAL, "no data address for worker %d", worker);
  }
  int rc = ck_net_send(d->net, d->peer_host[worker], d->peer_port[worker], sender_task, sender,
                       dest_task, kind, value, batch, cancel, err);
  if (rc && rc != CK_ECANCELLED) err->retriable = true; /* a peer went away: restart */
  return rc;
}

static void remote_consumed(void *ctx, void *link) {
  dep_t *d = ctx;
  ck_net_consumed(d->net, link);
}

static void net_deliver(void *ctx, int dest_task, int sender, int kind, int64_t value,
                        ck_batch_t *batch, ck_net_link_t *link) {
  dep_t *d = ctx;
  ck_mutex_lock(&d->dmu);
  if (d->closing || !d->ex) {
    ck_batch_free(batch);
    ck_mutex_unlock(&d->dmu);
    return;
  }
  ck_exec_deliver(d->ex, dest_task, sender, kind, value, batch, link);
  ck_mutex_unlock(&d->dmu);
}

/* ================================================================ deployments */

static void *waiter_main(void *arg) {
  dep_t *d = arg;
  ck_error_t err;
  ck_error_clear(&err);
  int rc = ck_exec_wait(d->ex, &err);
  ck_exec_totals_t tot = ck_exec_totals(d->ex);
  ck_buf_t p;
  ck_buf_init(&p);
  ck_proto_put_i64(&p, d->id);
  ck_proto_put_u32(&p, (uint32_t)rc);
  ck_proto_put_u8(&p, err.retriable);
  ck_proto_put_u8(&p, tot.input_ended);
  ck_proto_put_i64(&p, tot.last_triggered);
  ck_proto_put_i64(&p, tot.source_records);
  ck_proto_put_i64(&p, tot.sink_records);
  char msg[1024] = "";
  if (rc) ck_error_format(&err, msg, sizeof msg);
  for (char *nl = strchr(msg, '\n'); nl; nl = strchr(nl, '\n')) *nl = ' ';
  ck_proto_put_str(&p, msg);
  send_frame(d->wk, CK_PROTO_ENDED, &p);
  ck_buf_fini(&p);
  if (rc && rc != CK_ECANCELLED) CK_LOG_WARN(LOG_W, "job %lld: %s", (long long)d->job, msg);
  else CK_LOG_INFO(LOG_W, "job %lld: deployment %llx ended%s", (long long)d->job,
                   (unsigned long long)d->id, rc ? " (cancelled)" : "");
  atomic_store(&d->ended, 1);
  return NULL;
}

static void dep_free(dep_t *d) {
  if (d->running) ck_thread_join(&d->waiter);
  ck_mutex_lock(&d->dmu);
  d->closing = true;
  ck_mutex_unlock(&d->dmu);
  if (d->ex) ck_exec_free(d->ex);
  if (d->net) ck_net_free(d->net);
  if (d->planned) ck_jobplan_fini(&d->plan);
  for (int i = 0; i < d->npeers; i++) ck_free(d->peer_host[i]);
  ck_free(d->peer_host);
  ck_free(d->peer_port);
  ck_free(d->slot_worker);
  ck_free(d->dir);
  ck_free(d->name);
  ck_free(d->capture_dir);
  ck_mutex_fini(&d->dmu);
  ck_free(d);
}

static dep_t *find_dep(wk_t *wk, int64_t id) {
  for (int i = 0; i < wk->ndeps; i++)
    if (wk->deps[i]->id == id) return wk->deps[i];
  return NULL;
}

static void reply_deployed(wk_t *wk, int64_t id, int port, int rc, const char *msg) {
  ck_buf_t p;
  ck_buf_init(&p);
  ck_proto_put_i64(&p, id);
  ck_proto_put_u32(&p, (uint32_t)port);
  ck_proto_put_u32(&p, (uint32_t)rc);
  ck_proto_put_str(&p, msg);
  send_frame(wk, CK_PROTO_DEPLOYED, &p);
  ck_buf_fini(&p);
}

static void on_deploy(wk_t *wk, ck_proto_reader_t *r) {
  dep_t *d = ck_calloc(1, sizeof *d);
  ck_mutex_init(&d->dmu);
  d->wk = wk;
  d->id = ck_proto_i64(r);
  d->job = ck_proto_i64(r);
  d->name = ck_proto_str(r);
  const char *name = d->name;
  size_t wire_len = 0;
  char *wire = ck_proto_strn(r, &wire_len);
  d->dir = ck_proto_str(r);
  int64_t restore_id = ck_proto_i64(r), ids_above = ck_proto_i64(r);
  uint64_t fingerprint = (uint64_t)ck_proto_i64(r);
  int self = (int)ck_proto_u32(r);
  d->nslots = (int)ck_proto_u32(r);
  if (d->nslots > 0 && d->nslots <= 4096 && !r->bad) {
    d->slot_worker = ck_calloc((size_t)d->nslots, sizeof(int));
    for (int s = 0; s < d->nslots; s++) d->slot_worker[s] = (int)ck_proto_u32(r);
  }
  /* the job's flight recorder, when its submission asked for one (and the coordinator sent
   * the fields: an older one does not); else this worker's */
  int64_t capture_records = 0;
  if (!r->bad && r->off < r->n) {
    d->capture_dir = ck_proto_str(r);
    capture_records = ck_proto_i64(r);
  }
  bool own_capture = d->capture_dir && d->capture_dir[0];
  ck_error_t err;
  ck_error_clear(&err);
  int rc = 0;
  if (r->bad || !d->slot_worker || wk->ndeps >= MAX_DEPS)
    rc = ck_error_set(&err, CK_EPROTO, "a malformed or excess DEPLOY frame");
  /* the coordinator planned the SQL; this worker only rebuilds its serialised graph: no
   * SQL front end, no plan-time check, nothing connects before the subtasks open */
  if (!rc) rc = ck_jobplan_decode(&d->plan, wire, wire_len, &err);
  if (!rc) d->planned = true;
  if (!rc && d->plan.fingerprint != fingerprint)
    rc = ck_error_set(&err, CK_ESTATE, "the job graph built here differs from the "
                      "coordinator's (a different clink version?)");
  if (!rc && d->plan.nslots != d->nslots)
    rc = ck_error_set(&err, CK_EPROTO, "a DEPLOY frame places %d slot(s) for a job of %d",
                      d->nslots, d->plan.nslots);
  if (!rc) rc = ck_net_start(wk->o.host, 0, (uint64_t)d->id, 8, net_deliver, d, &d->net, &err);
  if (!rc) {
    d->report = (ck_exec_report_t){d, rep_ack, rep_source_done, rep_committed};
    d->remote = (ck_exec_remote_t){d, self, d->slot_worker, d->nslots, remote_send,
                                   remote_consumed};
    ck_exec_opts_t eo = {.job_name = name};
    eo.ckpt.dir = d->dir;
    eo.ckpt.restore_id = restore_id;
    eo.ckpt.ids_above = ids_above;
    eo.ckpt.fingerprint = fingerprint;
    eo.report = &d->report;
    eo.remote = &d->remote;
    eo.plan = &d->plan.phys;
    eo.max_memory = wk->o.max_memory;
    eo.capture = (ck_capture_opts_t){wk->o.capture_dir, wk->o.capture_records};
    if (own_capture) eo.capture.dir = d->capture_dir;
    if (capture_records > 0) eo.capture.max_records = capture_records;
    if (own_capture)
      CK_LOG_INFO(LOG_W, "job %lld: recording its operators' input under %s (the job's "
                  "capture directory)", (long long)d->job, d->capture_dir);
    rc = ck_exec_new(d->plan.graph, &eo, &d->ex, &err);
  }
  ck_free(wire);
  if (rc) {
    CK_LOG_WARN(LOG_W, "could not deploy job %lld: %s", (long long)d->job, err.message);
    reply_deployed(wk, d->id, 0, rc, err.message);
    dep_free(d);
    return;
  }
  wk->deps[wk->ndeps++] = d;
  CK_LOG_INFO(LOG_W, "job %lld: deployed %llx (restore point %lld), data port %d",
              (long long)d->job, (unsigned long long)d->id, (long long)restore_id,
              ck_net_port(d->net));
  reply_deployed(wk, d->id, ck_net_port(d->net), 0, "");
}

static void on_start(wk_t *wk, ck_proto_reader_t *r) {
  int64_t id = ck_proto_i64(r);
  dep_t *d = find_dep(wk, id);
  uint32_t n = ck_proto_u32(r);
  if (!d || d->running || r->bad || n > 65536) return;
  d->npeers = (int)n;
  d->peer_host = ck_calloc(n ? n : 1, sizeof(char *));
  d->peer_port = ck_calloc(n ? n : 1, sizeof(int));
  for (uint32_t i = 0; i < n; i++) {
    d->peer_host[i] = ck_proto_str(r);
    d->peer_port[i] = (int)ck_proto_u32(r);
  }
  ck_error_t err;
  ck_error_clear(&err);
  ck_exec_run(d->ex, &err);
  if (atomic_load(&d->cancel_before_start)) ck_exec_cancel(d->ex, "cancelled by the coordinator");
  if (ck_thread_start(&d->waiter, "ck-waiter", waiter_main, d) == 0) d->running = true;
}

static void cancel_dep(dep_t *d, const char *why) {
  if (d->ex) ck_exec_cancel(d->ex, why);
  if (!d->running) {
    /* never started: nothing runs; report it ended at once */
    atomic_store(&d->cancel_before_start, 1);
    ck_buf_t p;
    ck_buf_init(&p);
    ck_proto_put_i64(&p, d->id);
    ck_proto_put_u32(&p, (uint32_t)CK_ECANCELLED);
    ck_proto_put_u8(&p, 0);
    ck_proto_put_u8(&p, 0);
    ck_proto_put_i64(&p, 0);
    ck_proto_put_i64(&p, 0);
    ck_proto_put_i64(&p, 0);
    ck_proto_put_str(&p, why);
    send_frame(d->wk, CK_PROTO_ENDED, &p);
    ck_buf_fini(&p);
    atomic_store(&d->ended, 1);
  }
}

static void on_frame(wk_t *wk, ck_proto_frame_t *f) {
  if (f->epoch < wk->epoch) {
    CK_TRACE("fenced", "frame=%s epoch=%llu newest=%llu", ck_proto_type_name(f->type), (unsigned long long)f->epoch, (unsigned long long)wk->epoch);
    CK_LOG_WARN(LOG_W, "dropped a %s frame of coordinator epoch %llu (newest seen: %llu)",
                ck_proto_type_name(f->type), (unsigned long long)f->epoch,
                (unsigned long long)wk->epoch);
    return;
  }
  wk->epoch = f->epoch;
  ck_proto_reader_t *r = &f->body;
  switch (f->type) {
    case CK_PROTO_DEPLOY: on_deploy(wk, r); break;
    case CK_PROTO_START: on_start(wk, r); break;
    case CK_PROTO_TRIGGER: {
      dep_t *d = find_dep(wk, ck_proto_i64(r));
      int64_t id = ck_proto_i64(r);
      bool final = ck_proto_u8(r);
      if (d && d->ex && !r->bad) ck_exec_trigger(d->ex, id, final);
      break;
    }
    case CK_PROTO_COMMIT: {
      dep_t *d = find_dep(wk, ck_proto_i64(r));
      int64_t id = ck_proto_i64(r);
      bool final = ck_proto_u8(r);
      if (d && d->ex && !r->bad) ck_exec_complete(d->ex, id, final);
      break;
    }
    case CK_PROTO_CANCEL: {
      dep_t *d = find_dep(wk, ck_proto_i64(r));
      if (d) cancel_dep(d, "cancelled by the coordinator");
      break;
    }
    default:
      CK_LOG_WARN(LOG_W, "unexpected %s frame from the coordinator", ck_proto_type_name(f->type));
  }
}

/* Joins and frees deployments whose waiter reported. */
static void reap(wk_t *wk) {
  for (int i = 0; i < wk->ndeps;) {
    dep_t *d = wk->deps[i];
    if (!atomic_load(&d->ended)) {
      i++;
      continue;
    }
    wk->deps[i] = wk->deps[--wk->ndeps];
    ck_mutex_unlock(&wk->mu);
    dep_free(d);
    ck_mutex_lock(&wk->mu);
  }
}

/* ================================================================ heartbeats, health */

static void *hb_main(void *arg) {
  wk_t *wk = arg;
  while (!atomic_load(&wk->hb_stop)) {
    ck_buf_t p;
    ck_buf_init(&p);
    ck_mutex_lock(&wk->mu);
    int n = 0;
    for (int i = 0; i < wk->ndeps; i++) n += wk->deps[i]->running;
    ck_proto_put_u32(&p, (uint32_t)n);
    for (int i = 0; i < wk->ndeps; i++) {
      dep_t *d = wk->deps[i];
      if (!d->running) continue;
      ck_buf_t m;
      ck_buf_init(&m);
      ck_exec_metrics_json(d->ex, &m);
      ck_proto_put_i64(&p, d->id);
      ck_proto_put_str(&p, m.data);
      ck_buf_fini(&m);
    }
    ck_mutex_unlock(&wk->mu);
    send_frame(wk, CK_PROTO_HEARTBEAT, &p);
    ck_buf_fini(&p);
    int64_t until = ck_mono_ms() + wk->hb_ms;
    while (!atomic_load(&wk->hb_stop) && ck_mono_ms() < until) {
      struct pollfd none;
      (void)poll(&none, 0, 20);
    }
  }
  return NULL;
}

static void on_http(void *ctx, const ck_http_req_t *req, ck_http_resp_t *resp) {
  wk_t *wk = ctx;
  if (strcmp(req->path, "/api/v1/health")) {
    ck_http_error(resp, 404, "a worker serves only /api/v1/health");
    return;
  }
  if (!atomic_load(&wk->registered)) {
    resp->status = 503;
    ck_buf_puts(&resp->body, "{\"status\":\"registering\",\"role\":\"worker\",\"id\":");
  } else {
    ck_buf_puts(&resp->body, "{\"status\":\"ok\",\"role\":\"worker\",\"id\":");
  }
  ck_buf_put_json_str(&resp->body, wk->o.id, strlen(wk->o.id));
  ck_buf_putc(&resp->body, '}');
}

/* ================================================================ the loop */

/* With --ha: the lowest member of <path>/leader (the leader, ha_zk.c) into wk->leader and its
 * address into o.coordinator_host/port; watched, so leader_moved notices a change. */
static int find_leader(wk_t *wk, ck_error_t *err) {
  if (wk->zk && ck_zk_expired(wk->zk)) {
    ck_zk_close(wk->zk);
    wk->zk = NULL;
  }
  if (!wk->zk && ck_zk_open(wk->zk_hosts, 10000, &wk->zk, err)) return -1;
  char **m;
  int n;
  if (ck_zk_members(wk->zk, wk->zk_dir, true, &m, &n, err)) return -1;
  int rc = -1;
  if (!n) {
    ck_error_set(err, CK_ENOTFOUND, "no coordinator leads '%s' yet", wk->zk_dir);
  } else {
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", wk->zk_dir, m[0]);
    ck_buf_t b;
    ck_buf_init(&b);
    char *colon;
    if (!ck_zk_get(wk->zk, path, &b, NULL, err)) {
      if (!(colon = strrchr(b.data, ':')) || atoi(colon + 1) <= 0) {
        ck_error_set(err, CK_EPROTO, "the leader's member '%s' holds no host:port", path);
      } else {
        *colon = 0;
        snprintf(wk->leader_host, sizeof wk->leader_host, "%s", b.data);
        wk->o.coordinator_host = wk->leader_host;
        wk->o.coordinator_port = atoi(colon + 1);
        snprintf(wk->leader, sizeof wk->leader, "%s", m[0]);
        rc = 0;
      }
    }
    ck_buf_fini(&b);
  }
  ck_zk_members_free(m, n);
  return rc;
}

/* With --ha: true when the members changed and the lowest is not the one connected to. */
static bool leader_moved(wk_t *wk) {
  if (!wk->zk || (!ck_zk_changed(wk->zk) && !ck_zk_expired(wk->zk))) return false;
  char was[128];
  snprintf(was, sizeof was, "%s", wk->leader);
  ck_error_t err;
  ck_error_clear(&err);
  if (find_leader(wk, &err)) return false; /* ZooKeeper unreachable: keep what works */
  if (!strcmp(was, wk->leader)) return false;
  CK_LOG_INFO(LOG_W, "the leader on ZooKeeper is now %s at %s:%d (was %s)", wk->leader,
              wk->o.coordinator_host, wk->o.coordinator_port, was);
  return true;
}

/* One connection to the coordinator: 0 when it ended (register again), -1 when it could not
 * be made, 1 with fatal set when the coordinator refused this worker for good (its REPLY says
 * CK_EEXISTS: the id is a live worker's; CK_EINVAL: the token). */
static int session(wk_t *wk, volatile sig_atomic_t *stop, ck_error_t *fatal) {
  ck_error_t err;
  ck_error_clear(&err);
  int fd;
  if (wk->zk_dir && find_leader(wk, &err)) {
    snprintf(wk->zk_why, sizeof wk->zk_why, "%s", err.message);
    return -1;
  }
  wk->zk_why[0] = 0;
  if (ck_sock_connect(wk->o.coordinator_host, wk->o.coordinator_port, 2000, &fd, &err)) {
    return -1;
  }
  ck_proto_conn_init(&wk->conn, fd);
  ck_buf_t p;
  ck_buf_init(&p);
  ck_proto_put_str(&p, wk->o.id);
  ck_proto_put_u32(&p, (uint32_t)wk->o.slots);
  ck_proto_put_str(&p, wk->o.host);
  ck_proto_put_u32(&p, (uint32_t)(wk->http ? ck_http_port(wk->http) : 0));
  ck_proto_put_u32(&p, (uint32_t)getpid());
  ck_proto_put_str(&p, wk->o.token);
  ck_proto_frame_t f;
  int rc = ck_proto_call(&wk->conn, CK_PROTO_REGISTER, &p, 10000, &f, &err);
  ck_buf_fini(&p);
  if (!rc && f.type == CK_PROTO_REPLY) {
    int why = (int)(int32_t)ck_proto_u32(&f.body);
    (void)ck_proto_i64(&f.body);
    char *text = ck_proto_str(&f.body);
    rc = ck_error_set(&err, CK_EPROTO, "the coordinator refused the registration: %s", text);
    if (why == CK_EEXISTS || why == CK_EINVAL) {
      ck_error_set(fatal, why, "the coordinator at %s:%d refused this worker: %s",
                   wk->o.coordinator_host, wk->o.coordinator_port, text);
      ck_free(text);
      ck_proto_conn_fini(&wk->conn);
      return 1;
    }
    ck_free(text);
  } else if (!rc && f.type != CK_PROTO_REGISTERED) {
    rc = ck_error_set(&err, CK_EPROTO, "the coordinator refused the registration");
  }
  if (!rc && f.epoch < wk->epoch)
    rc = ck_error_set(&err, CK_EPROTO, "a coordinator of epoch %llu, older than %llu",
                      (unsigned long long)f.epoch, (unsigned long long)wk->epoch);
  if (rc) {
    CK_LOG_WARN(LOG_W, "could not register with %s:%d: %s", wk->o.coordinator_host,
                wk->o.coordinator_port, err.message);
    ck_proto_conn_fini(&wk->conn);
    return -1;
  }
  wk->epoch = f.epoch;
  wk->num = (int)ck_proto_u32(&f.body);
  wk->hb_ms = (int)ck_proto_u32(&f.body);
  if (wk->hb_ms <= 0 || wk->hb_ms > 60000) wk->hb_ms = 500;
  atomic_store(&wk->registered, 1);
  CK_LOG_INFO(LOG_W, "registered with the coordinator at %s:%d as %s (%d slot%s, epoch %llu)",
              wk->o.coordinator_host, wk->o.coordinator_port, wk->o.id, wk->o.slots,
              wk->o.slots == 1 ? "" : "s", (unsigned long long)wk->epoch);
  atomic_store(&wk->hb_stop, 0);
  ck_thread_start(&wk->hb_thread, "ck-heartbeat", hb_main, wk);
  while (!*stop) {
    struct pollfd pfd = {.fd = wk->conn.fd, .events = POLLIN};
    int pr = poll(&pfd, 1, 50);
    ck_mutex_lock(&wk->mu);
    int fr = pr > 0 ? ck_proto_fill(&wk->conn, &err) : 0;
    /* frames may already be buffered (read along with REGISTERED): always look */
    int got;
    while (!fr && (got = ck_proto_next(&wk->conn, &f, &err)) == 1) on_frame(wk, &f);
    if (!fr && got < 0) fr = got;
    reap(wk);
    ck_mutex_unlock(&wk->mu);
    if (!fr && leader_moved(wk))
      fr = ck_error_set(&err, CK_ESTATE, "another coordinator leads now (ZooKeeper)");
    if (fr) {
      CK_LOG_WARN(LOG_W, "lost the coordinator: %s", err.message);
      break;
    }
  }
  atomic_store(&wk->registered, 0);
  atomic_store(&wk->hb_stop, 1);
  ck_thread_join(&wk->hb_thread);
  /* nothing may run without a coordinator: cancel, and wait for every deployment to end */
  ck_mutex_lock(&wk->mu);
  for (int i = 0; i < wk->ndeps; i++) cancel_dep(wk->deps[i], "the coordinator connection was lost");
  while (wk->ndeps) {
    reap(wk);
    if (!wk->ndeps) break;
    ck_mutex_unlock(&wk->mu);
    struct pollfd none;
    (void)poll(&none, 0, 20);
    ck_mutex_lock(&wk->mu);
  }
  ck_mutex_unlock(&wk->mu);
  ck_proto_conn_fini(&wk->conn);
  return 0;
}

int ck_worker_main(const ck_worker_opts_t *opts, volatile sig_atomic_t *stop, ck_error_t *err) {
  wk_t *wk = ck_calloc(1, sizeof *wk);
  wk->o = *opts;
  if (wk->o.slots <= 0) wk->o.slots = 1;
  if (!wk->o.host) wk->o.host = "127.0.0.1";
  char defid[64];
  if (!wk->o.id || !*wk->o.id) {
    snprintf(defid, sizeof defid, "worker-%d", (int)getpid());
    wk->o.id = defid;
  }
  ck_mutex_init(&wk->mu);
  int rc = 0;
  if (wk->o.ha_url) {
    char *path = NULL;
    rc = ck_zk_parse_url(wk->o.ha_url, &wk->zk_hosts, &path, err);
    if (!rc) {
      wk->zk_dir = ck_malloc(strlen(path) + 8);
      sprintf(wk->zk_dir, "%s/leader", path);
    }
    ck_free(path);
  }
  if (!rc && wk->o.http_port >= 0)
    rc = ck_http_start(wk->o.host, wk->o.http_port, on_http, wk, &wk->http, err);
  if (!rc) {
    if (wk->http)
      CK_LOG_INFO(LOG_W, "%s: health on http://%s:%d/api/v1/health", wk->o.id, wk->o.host,
                  ck_http_port(wk->http));
    int64_t logged = 0, taken_since = 0;
    while (!*stop) {
      int src = session(wk, stop, err);
      if (src == 0) {
        taken_since = 0;
        continue;
      }
      int64_t now = ck_mono_ms();
      if (src > 0 && err->code == CK_EEXISTS && (!taken_since || now - taken_since < ID_WAIT_MS)) {
        /* our id is a live worker's: perhaps our own previous run, on a host that died
         * without closing its connection; the coordinator notices within three heartbeats */
        if (!taken_since) {
          CK_LOG_WARN(LOG_W, "%s; trying again for %d s in case it is this worker's previous "
                      "run", err->message, ID_WAIT_MS / 1000);
          taken_since = now;
        }
        ck_error_clear(err);
        src = -1;
      }
      if (src > 0) {
        rc = err->code ? err->code : CK_EINVAL;
        break;
      }
      if (now - logged > 10000) {
        if (wk->zk_dir)
          CK_LOG_INFO(LOG_W, "waiting for a coordinator to lead '%s' on ZooKeeper (%s)",
                      wk->zk_dir,
                      wk->zk_why[0] ? wk->zk_why : "its leader is not reachable yet");
        else
          CK_LOG_INFO(LOG_W, "waiting for the coordinator at %s:%d", wk->o.coordinator_host,
                      wk->o.coordinator_port);
        logged = now;
      }
      int64_t until = now + 300;
      while (!*stop && ck_mono_ms() < until) {
        struct pollfd none;
        (void)poll(&none, 0, 20);
      }
    }
  }
  if (wk->http) ck_http_stop(wk->http);
  ck_zk_close(wk->zk);
  ck_free(wk->zk_hosts);
  ck_free(wk->zk_dir);
  ck_mutex_fini(&wk->mu);
  ck_free(wk);
  return rc;
}
