/*
 * DESIGN: the coordinator's control port, up to the point where a frame concerns a job —
 * admission and bounds of connections, worker registration, and the CLI's requests.
 *
 * A registered worker's connection is never refused or evicted for others; at most
 * MAX_UNREGISTERED connections that are not one (the CLI, workers before REGISTER, anyone)
 * are kept, each bounded in frame size (CK_PROTO_MAX_UNREGISTERED, SUBMIT: CK_PROTO_MAX_SUBMIT)
 * and time (a whole first frame within HANDSHAKE_MS, a CLI connection idle at most
 * CLI_IDLE_MS). A worker id belongs to one live worker. Every CLI frame starts with the token.
 *
 * A control-port SUBMIT is planned on a planner thread of its own (at most MAX_PLANNING at
 * once), never on the control loop and never under co->mu: plan-time checks may wait on the
 * network for seconds (a ClickHouse sink asks its server). The planner then takes co->mu,
 * adds the job and answers on the connection, which stays open (planning) until then.
 *
 * Threads: the control loop, under co->mu, for everything but planner_main, which runs on
 * its planner thread and takes co->mu only to add the job and answer.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/thread.h"
#include "base/time.h"
#include "cluster/coordinator_int.h"
#include "cluster/http.h"
#include "cluster/proto.h"

#define LOG_CO "coordinator"
#define MAX_UNREGISTERED 32   /* connections that are not a registered worker (CLI, anyone) */
#define HANDSHAKE_MS 5000     /* a new connection's first frame must be whole within this */
#define CLI_IDLE_MS 30000     /* a CLI connection silent this long is closed */

static void reply(conn_t *c, int rc, int64_t value, const char *text) {
  ck_buf_t p;
  ck_buf_init(&p);
  ck_proto_put_u32(&p, (uint32_t)rc);
  ck_proto_put_i64(&p, value);
  ck_proto_put_str(&p, text);
  (void)ck_proto_send(&c->pc, CK_PROTO_REPLY, 0, &p, NULL);
  ck_buf_fini(&p);
}

/*
 * The first field of every CLI frame is the token. True when the request may go on; false
 * when it was answered with the refusal: a token that differs from CLINK_AUTH_TOKEN (when
 * the coordinator has one), or a state-changing request (writes) on a coordinator that
 * refuses them (a non-loopback address without a token).
 */
static bool cli_allowed(co_t *co, conn_t *c, ck_proto_reader_t *r, bool writes) {
  size_t n;
  char *tok = ck_proto_strn(r, &n);
  bool ok = false;
  if (r->bad)
    reply(c, CK_EPROTO, 0, "a malformed request frame (from an older clink?)");
  else if (co->o.auth_token && !ck_http_token_equal(tok, n, co->o.auth_token))
    reply(c, CK_EINVAL, 0, n ? "could not accept the request: the token is not valid for this "
                               "cluster; set CLINK_AUTH_TOKEN to the coordinator's"
                             : "could not accept the request: this coordinator needs a token; "
                               "set CLINK_AUTH_TOKEN to the coordinator's");
  else if (writes && co->refuse_writes)
    reply(c, CK_EINVAL, 0, "could not accept the request: this coordinator listens on a "
                           "non-loopback address without a token, so it refuses to submit or "
                           "cancel jobs; start it with CLINK_AUTH_TOKEN set (and the same "
                           "variable here), or bind it to 127.0.0.1");
  else
    ok = true;
  ck_free(tok);
  return ok;
}

/* A control-port SUBMIT being planned on its own thread (plan_job), then added under co->mu
 * and answered on its connection. */
struct planner {
  co_t *co;
  conn_t *c;              /* NULL: the planner of the recovered jobs */
  char *name, *sql;
  int par;
  char *capture_dir;      /* the per-job options (ck_co_job_opts_t) */
  int64_t capture_records;
  ck_co_recovered_t *recovered; /* their list, planned one after the other */
  ck_thread_t th;
  bool done; /* under co->mu: the control loop may join it */
};

static void *planner_main(void *arg) {
  planner_t *pl = arg;
  co_t *co = pl->co;
  ck_error_t err;
  ck_error_clear(&err);
  int64_t id = 0;
  const char *guarantee = NULL;
  ck_co_job_opts_t jo = {pl->capture_dir, pl->capture_records};
  int rc = ck_co_job_plan_add(co, pl->name, pl->sql, pl->par, &jo, &id, &guarantee, &err);
  conn_t *c = pl->c;
  c->planning = false;
  if (c->closed) { /* the client went away meanwhile; the job stays submitted */
    ck_proto_conn_fini(&c->pc);
    ck_free(c);
  } else {
    c->last_ms = ck_mono_ms();
    reply(c, rc, id, rc ? err.message : guarantee);
  }
  pl->done = true;
  ck_mutex_unlock(&co->mu);
  return NULL;
}

/* The jobs an HA takeover found: planned and added one after the other (ck_co_job_recover),
 * while the control loop already serves workers and clients. */
static void *recover_main(void *arg) {
  planner_t *pl = arg;
  for (ck_co_recovered_t *r = pl->recovered; r; r = r->next) {
    ck_co_job_opts_t jo = {r->capture_dir, r->capture_records};
    ck_co_job_recover(pl->co, r->id, r->name, r->sql, r->plan, r->plan_len, r->par, r->attempt,
                      &jo);
  }
  ck_mutex_lock(&pl->co->mu);
  pl->done = true;
  ck_mutex_unlock(&pl->co->mu);
  return NULL;
}

static void planner_free(planner_t *pl) {
  ck_thread_join(&pl->th);
  ck_free(pl->name);
  ck_free(pl->sql);
  ck_free(pl->capture_dir);
  while (pl->recovered) {
    ck_co_recovered_t *r = pl->recovered;
    pl->recovered = r->next;
    ck_free(r->name);
    ck_free(r->sql);
    ck_free(r->capture_dir);
    ck_free(r->plan);
    ck_free(r);
  }
  ck_free(pl);
}

void ck_co_planners_recover(co_t *co, ck_co_recovered_t *list) {
  if (!list) return;
  planner_t *pl = ck_calloc(1, sizeof *pl);
  *pl = (planner_t){.co = co, .recovered = list};
  if (co->nplanners >= MAX_PLANNING || ck_thread_start(&pl->th, "ck-recover", recover_main, pl)) {
    /* cannot happen at start (no planner runs yet); plan them here rather than lose them */
    CK_LOG_WARN(LOG_CO, "could not start a thread to plan the recovered jobs: planning them "
                "before serving");
    ck_mutex_unlock(&co->mu);
    for (ck_co_recovered_t *r = list; r; r = r->next) {
      ck_co_job_opts_t jo = {r->capture_dir, r->capture_records};
      ck_co_job_recover(co, r->id, r->name, r->sql, r->plan, r->plan_len, r->par, r->attempt,
                        &jo);
    }
    ck_mutex_lock(&co->mu);
    pl->th = (ck_thread_t){0};
    planner_free(pl);
    return;
  }
  co->planners[co->nplanners++] = pl;
}

/* Under co->mu: joins the planners that are done (all of them when wait: at the end). */
void ck_co_planners_reap(co_t *co, bool wait) {
  for (int i = 0; i < co->nplanners;) {
    planner_t *pl = co->planners[i];
    if (!pl->done && wait) {
      ck_mutex_unlock(&co->mu);
      struct pollfd none;
      (void)poll(&none, 0, 20);
      ck_mutex_lock(&co->mu);
      continue;
    }
    if (!pl->done) {
      i++;
      continue;
    }
    co->planners[i] = co->planners[--co->nplanners];
    planner_free(pl);
  }
}

void ck_co_on_cli_frame(co_t *co, conn_t *c, ck_proto_frame_t *f) {
  ck_proto_reader_t *r = &f->body;
  ck_error_t err;
  ck_error_clear(&err);
  if (c->planning) {
    reply(c, CK_EPROTO, 0, "one request at a time: the SUBMIT on this connection is still "
                           "being planned");
  } else if (f->type == CK_PROTO_SUBMIT) {
    if (!cli_allowed(co, c, r, true)) return;
    size_t name_len, sql_len;
    char *name = ck_proto_strn(r, &name_len), *sql = ck_proto_strn(r, &sql_len);
    int par = (int)ck_proto_u32(r);
    char *capture_dir = NULL; /* the per-job options, when the client sent them */
    int64_t capture_records = 0;
    if (!r->bad && r->off < r->n) {
      capture_dir = ck_proto_str(r);
      capture_records = ck_proto_i64(r);
    }
    ck_co_job_opts_t jo = {capture_dir, capture_records};
    const char *bad = r->bad ? "could not accept the job: a malformed SUBMIT frame"
                    : name_len != strlen(name) ? "could not accept the job: its name holds a "
                                                 "NUL character"
                    : sql_len != strlen(sql) ? "could not accept the job: its SQL holds a NUL "
                                               "character"
                    : co->nplanners >= MAX_PLANNING ? "could not accept the job now: the "
                                                      "coordinator is planning 8 jobs already; "
                                                      "submit it again in a moment"
                    : NULL;
    char why[1024];
    if (!bad && ck_co_job_opts_check(&jo, &err)) { /* the message, its detail and its hint */
      ck_job_error_line(&err, why, sizeof why);
      bad = why;
    }
    if (bad) {
      reply(c, CK_EINVAL, 0, bad);
      ck_free(name);
      ck_free(sql);
      ck_free(capture_dir);
      return;
    }
    planner_t *pl = ck_calloc(1, sizeof *pl);
    *pl = (planner_t){.co = co, .c = c, .name = name, .sql = sql, .par = par,
                      .capture_dir = capture_dir, .capture_records = capture_records};
    c->planning = true;
    if (ck_thread_start(&pl->th, "ck-planner", planner_main, pl)) {
      c->planning = false;
      reply(c, CK_EINTERNAL, 0, "could not start a thread to plan the job");
      ck_free(name);
      ck_free(sql);
      ck_free(capture_dir);
      ck_free(pl);
      return;
    }
    co->planners[co->nplanners++] = pl;
  } else if (f->type == CK_PROTO_LIST) {
    if (!cli_allowed(co, c, r, false)) return;
    ck_buf_t b;
    ck_buf_init(&b);
    ck_co_rest_jobs_json(co, &b);
    reply(c, 0, co->njobs, b.data);
    ck_buf_fini(&b);
  } else if (f->type == CK_PROTO_CANCEL_JOB) {
    if (!cli_allowed(co, c, r, true)) return;
    int64_t id = ck_proto_i64(r);
    int rc = r->bad ? ck_error_set(&err, CK_EPROTO, "a malformed CANCEL_JOB frame")
                    : ck_co_job_cancel(co, id, &err);
    reply(c, rc, id, rc ? err.message : "cancelling");
  } else {
    reply(c, CK_EPROTO, 0, "unexpected frame");
  }
}

/* The connection of a registered worker has been closed by its peer (a kill closes it at once,
 * but its end of stream may still be unread in this round of the loop). */
static bool conn_hung_up(const conn_t *c) {
  struct pollfd pfd = {.fd = c->pc.fd, .events = POLLIN | POLLRDHUP};
  return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

void ck_co_on_register(co_t *co, conn_t *c, ck_proto_frame_t *f) {
  ck_proto_reader_t *r = &f->body;
  char *id = ck_proto_str(r);
  int slots = (int)ck_proto_u32(r);
  char *host = ck_proto_str(r);
  int http_port = (int)ck_proto_u32(r), pid = (int)ck_proto_u32(r);
  size_t tok_len;
  char *tok = ck_proto_strn(r, &tok_len);
  bool tok_ok = !co->o.auth_token || ck_http_token_equal(tok, tok_len, co->o.auth_token);
  ck_free(tok);
  if (r->bad || slots < 1 || !*id) {
    ck_free(id);
    ck_free(host);
    reply(c, CK_EPROTO, 0, "a malformed REGISTER frame");
    return;
  }
  if (!tok_ok) {
    CK_LOG_WARN(LOG_CO, "refused a worker registration with a wrong or missing token (pid %d)",
                pid);
    ck_free(id);
    ck_free(host);
    reply(c, CK_EINVAL, 0, "the token is not valid for this cluster: start the worker with "
                           "CLINK_AUTH_TOKEN set to the coordinator's");
    return;
  }
  if (ck_co_job_check_name(id, &(ck_error_t){0})) {
    ck_free(id);
    ck_free(host);
    reply(c, CK_EINVAL, 0, "a worker id must be printable UTF-8 of at most 128 bytes");
    return;
  }
  /* A worker id belongs to one live worker: a second one is refused (never the first
   * deposed: it would keep running its subtasks, unsupervised). A registered worker whose
   * connection has closed is lost now, and its id is free again. */
  for (int i = 0; i < co->nworkers; i++) {
    worker_t *old = co->workers[i];
    if (!old->alive || strcmp(old->id, id)) continue;
    if (old->conn && conn_hung_up(old->conn)) {
      for (int k = 0; k < co->nconns; k++)
        if (co->conns[k] == old->conn) {
          ck_co_conn_close(co, k, "the peer closed the connection");
          break;
        }
      continue;
    }
    char msg[512];
    snprintf(msg, sizeof msg, "a worker with the id '%s' is already registered and alive (pid "
             "%d, registered %lld s ago): give every worker its own --id", id, old->pid,
             (long long)((ck_mono_ms() - old->registered_at) / 1000));
    CK_LOG_WARN(LOG_CO, "refused a second worker '%s' (pid %d): the id belongs to the live "
                "worker of pid %d", id, pid, old->pid);
    ck_free(id);
    ck_free(host);
    reply(c, CK_EEXISTS, 0, msg);
    return;
  }
  worker_t *w = ck_calloc(1, sizeof *w);
  w->num = co->nworkers;
  w->id = id;
  w->host = host;
  w->slots = slots;
  w->http_port = http_port;
  w->pid = pid;
  w->conn = c;
  w->alive = true;
  w->last_hb = w->registered_at = ck_mono_ms();
  co->workers = ck_realloc(co->workers, sizeof *co->workers * (size_t)(co->nworkers + 1));
  co->workers[co->nworkers++] = w;
  c->kind = CONN_WORKER;
  c->worker = w->num;
  c->pc.max_frame = c->pc.max_submit = 0; /* a registered worker's heartbeats may be large */
  ck_buf_t p;
  ck_buf_init(&p);
  ck_proto_put_u32(&p, (uint32_t)w->num);
  ck_proto_put_u32(&p, (uint32_t)co->o.heartbeat_ms);
  (void)ck_proto_send(&c->pc, CK_PROTO_REGISTERED, co->epoch, &p, NULL);
  ck_buf_fini(&p);
  CK_LOG_INFO(LOG_CO, "worker registered: %s (%d slot%s, pid %d)", id, slots,
              slots == 1 ? "" : "s", pid);
}

void ck_co_conn_close(co_t *co, int i, const char *why) {
  conn_t *c = co->conns[i];
  if (c->kind == CONN_WORKER) {
    worker_t *w = find_worker(co, c->worker);
    if (w && w->conn == c) {
      ck_co_worker_lost(co, w, why);
      w->conn = NULL;
    }
  }
  co->conns[i] = co->conns[--co->nconns];
  if (c->planning) { /* its planner answers, sees closed, and frees it */
    c->closed = true;
    shutdown(c->pc.fd, SHUT_RDWR);
    return;
  }
  ck_proto_conn_fini(&c->pc);
  ck_free(c);
}

/* Counts the connections that are not a registered worker's. */
static int unregistered(const co_t *co) {
  int n = 0;
  for (int i = 0; i < co->nconns; i++) n += co->conns[i]->kind != CONN_WORKER;
  return n;
}

/*
 * Control loop: accepts what is waiting (at most 64 a round). A registered worker's
 * connection is never refused or evicted for others: at most MAX_UNREGISTERED connections
 * that are not one (the CLI, workers before REGISTER, anyone) are kept; a new one past that
 * evicts the oldest of them not waiting for a plan. New connections read frames of at most
 * CK_PROTO_MAX_UNREGISTERED bytes (SUBMIT: CK_PROTO_MAX_SUBMIT) until they register.
 */
void ck_co_conns_accept(co_t *co) {
  for (int round = 0; round < 64 && co->nconns < MAX_CONNS; round++) {
    int fd = accept4(co->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return; /* EAGAIN: nothing more waits (the listening socket is non-blocking) */
    if (unregistered(co) >= MAX_UNREGISTERED) {
      int oldest = -1;
      for (int i = 0; i < co->nconns; i++) {
        const conn_t *o = co->conns[i];
        if (o->kind != CONN_WORKER && !o->planning &&
            (oldest < 0 || o->last_ms < co->conns[oldest]->last_ms))
          oldest = i;
      }
      if (oldest < 0) {
        close(fd);
        continue;
      }
      CK_LOG_DEBUG(LOG_CO, "%d connections are not registered workers: closing the one idle "
                   "longest for a new one", MAX_UNREGISTERED);
      ck_co_conn_close(co, oldest, "evicted for a newer connection");
    }
    int one = 1; /* control frames are small and latency matters: no Nagle */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    conn_t *c = ck_calloc(1, sizeof *c);
    ck_proto_conn_init(&c->pc, fd);
    c->pc.max_frame = CK_PROTO_MAX_UNREGISTERED;
    c->pc.max_submit = CK_PROTO_MAX_SUBMIT;
    c->kind = CONN_NEW;
    c->worker = -1;
    c->opened_ms = c->last_ms = ck_mono_ms();
    co->conns[co->nconns++] = c;
  }
}

/* Control loop: closes connections that sent no whole frame within HANDSHAKE_MS of being
 * accepted, and CLI connections silent for CLI_IDLE_MS (workers have heartbeats). */
void ck_co_conns_expire(co_t *co, int64_t now) {
  for (int i = 0; i < co->nconns;) {
    const conn_t *c = co->conns[i];
    bool late = !c->planning &&
                ((c->kind == CONN_NEW && now - c->opened_ms > HANDSHAKE_MS) ||
                 (c->kind == CONN_CLI && now - c->last_ms > CLI_IDLE_MS));
    if (late) ck_co_conn_close(co, i, c->kind == CONN_NEW ? "no request within the handshake time"
                                                    : "idle");
    else i++;
  }
}

/* True when every address host names is a loopback one (127.0.0.0/8, ::1, ::ffff:127.x). */
bool ck_co_host_is_loopback(const char *host) {
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
  if (getaddrinfo(host, NULL, &hints, &ai) || !ai) return false;
  bool all = true;
  for (struct addrinfo *a = ai; a; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      uint32_t v = ntohl(((struct sockaddr_in *)a->ai_addr)->sin_addr.s_addr);
      all &= (v >> 24) == 127;
    } else if (a->ai_family == AF_INET6) {
      const struct in6_addr *v6 = &((struct sockaddr_in6 *)a->ai_addr)->sin6_addr;
      all &= IN6_IS_ADDR_LOOPBACK(v6) ||
             (IN6_IS_ADDR_V4MAPPED(v6) && v6->s6_addr[12] == 127);
    } else {
      all = false;
    }
  }
  freeaddrinfo(ai);
  return all;
}
