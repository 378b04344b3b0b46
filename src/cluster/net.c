/*
 * DESIGN: see net.h for the protocol, threads and ownership; this is how it is built.
 *
 * State. ck_net_t holds the listening socket, a wake pipe (its read end is in every poll so
 * other threads can make the I/O thread look again), and one list of connections:
 *   - outbound (OUT): opened by a sender thread; the sender threads write data frames under
 *     the connection's write lock; the I/O thread reads CREDIT frames from it. Its socket is
 *     closed only by ck_net_free (a broken one is shut down, so a writer fails at once and no
 *     descriptor is reused under a thread still holding it).
 *   - inbound (IN): accepted by the I/O thread, which reads data frames from it; CREDIT frames
 *     (and the handshake reply) are queued in its output buffer and written without blocking
 *     by whichever thread queued them, the rest by the I/O thread when poll says it can.
 *     Only the I/O thread closes it; a closed one without links is freed by the I/O thread,
 *     one with links stays (consumers may still hold its links) until ck_net_free.
 * Links hang off their connection in a map keyed by (sender_task, dest_task). An OUT link
 * counts the credits left; an IN link counts messages delivered and not yet consumed, which
 * must never exceed the credits we granted (a sender that overruns them is cut off).
 *
 * Locks: net->mu guards the connection list, every connection's state, link maps and
 * counters, and IN output buffers; conn->wmu serialises whole frames on an OUT socket and is
 * never taken while holding net->mu. Neither is held while calling the deliver callback.
 *
 * Frame parsing is a resumable state machine per connection (reader_t): it keeps the part of
 * the header or payload it has so far and returns for more when the bytes run out.
 *
 * Files: this one holds the state's lifecycle, the I/O thread (accept, read, dispatch,
 * CREDIT output) and ck_net_start/consumed/free; net_send.c the sender threads' side
 * (connect and handshake, credits, whole frames); net_int.h the types both share.
 */
#include "cluster/net_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/sock.h"
#include "base/buf.h"
#include "base/bytes.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/thread.h"
#include "base/time.h"
#include "runtime/batch_wire.h"

#define SCRATCH_SIZE (64 * 1024)
#define PAYLOAD_KEEP (4u << 20) /* a reader keeps a payload buffer up to this across frames */

/* ------------------------------------------------------------------ header ---- */

void ck_net_hdr_encode(const ck_net_hdr_t *hdr, uint8_t out[CK_NET_HDR_SIZE]) {
  ck_put_le32(out, hdr->magic);
  out[4] = hdr->version;
  out[5] = hdr->kind;
  ck_put_le16(out + 6, hdr->reserved);
  ck_put_le64(out + 8, hdr->session);
  ck_put_le32(out + 16, (uint32_t)hdr->sender_task);
  ck_put_le32(out + 20, (uint32_t)hdr->sender);
  ck_put_le32(out + 24, (uint32_t)hdr->dest_task);
  ck_put_le32(out + 28, hdr->payload_len);
  ck_put_le64(out + 32, (uint64_t)hdr->value);
}

void ck_net_hdr_decode(const uint8_t in[CK_NET_HDR_SIZE], ck_net_hdr_t *hdr) {
  hdr->magic = ck_get_le32(in);
  hdr->version = in[4];
  hdr->kind = in[5];
  hdr->reserved = ck_get_le16(in + 6);
  hdr->session = ck_get_le64(in + 8);
  hdr->sender_task = (int32_t)ck_get_le32(in + 16);
  hdr->sender = (int32_t)ck_get_le32(in + 20);
  hdr->dest_task = (int32_t)ck_get_le32(in + 24);
  hdr->payload_len = ck_get_le32(in + 28);
  hdr->value = (int64_t)ck_get_le64(in + 32);
}

void ck_net_make_hdr(ck_net_hdr_t *h, uint64_t session, int kind, int32_t sender_task,
                     int32_t sender, int32_t dest_task, int64_t value, uint32_t payload_len) {
  *h = (ck_net_hdr_t){CK_NET_MAGIC, CK_NET_VERSION, (uint8_t)kind, 0, session,
                      sender_task, sender, dest_task, payload_len, value};
}

/* ------------------------------------------------------------------ state ---- */

/* The types are in net_int.h. */

void ck_net_wake_io(ck_net_t *net) {
  ssize_t w;
  do w = write(net->wake[1], "w", 1);
  while (w < 0 && errno == EINTR);
  /* EAGAIN: the pipe is full of wake-ups already, which is as good */
}

static void link_key(uint8_t key[8], int32_t sender_task, int32_t dest_task) {
  ck_put_le32(key, (uint32_t)sender_task);
  ck_put_le32(key + 4, (uint32_t)dest_task);
}

/* net->mu held. */
ck_net_link_t *ck_net_link_get(conn_t *conn, int32_t sender_task, int32_t dest_task,
                               bool create, int initial_credits) {
  uint8_t key[8];
  link_key(key, sender_task, dest_task);
  if (!create) return ck_hmap_get(&conn->links, key, sizeof key);
  bool created;
  void **slot = ck_hmap_put(&conn->links, key, sizeof key, &created);
  if (created) {
    ck_net_link_t *link = ck_calloc(1, sizeof *link);
    link->conn = conn;
    link->sender_task = sender_task;
    link->dest_task = dest_task;
    link->credits = initial_credits;
    ck_cond_init(&link->cv);
    *slot = link;
  }
  return *slot;
}

conn_t *ck_net_conn_new(conn_dir_t dir, int fd, const char *peer) {
  conn_t *conn = ck_calloc(1, sizeof *conn);
  conn->dir = dir;
  conn->fd = fd;
  snprintf(conn->peer, sizeof conn->peer, "%s", peer);
  ck_hmap_init(&conn->links);
  ck_buf_init(&conn->rd.payload);
  ck_buf_init(&conn->obuf);
  ck_mutex_init(&conn->wmu);
  ck_cond_init(&conn->state_cv);
  return conn;
}

static void conn_free(conn_t *conn) {
  if (conn->fd >= 0) close(conn->fd);
  const ck_hmap_entry_t *e;
  for (size_t it = 0; ck_hmap_next(&conn->links, &it, &e);) {
    ck_net_link_t *link = e->value;
    ck_cond_fini(&link->cv);
    ck_free(link);
  }
  ck_hmap_fini(&conn->links);
  ck_buf_fini(&conn->rd.payload);
  ck_buf_fini(&conn->obuf);
  ck_mutex_fini(&conn->wmu);
  ck_cond_fini(&conn->state_cv);
  ck_free(conn);
}

/* Wakes every sender waiting on conn. net->mu held. */
static void conn_wake_senders(conn_t *conn) {
  const ck_hmap_entry_t *e;
  for (size_t it = 0; ck_hmap_next(&conn->links, &it, &e);)
    ck_cond_broadcast(&((ck_net_link_t *)e->value)->cv);
  ck_cond_broadcast(&conn->state_cv);
}

/* Marks conn broken for good. An IN socket is closed (only the I/O thread may call this for
 * IN connections); an OUT socket is shut down, so blocked writers fail at once, and closed by
 * ck_net_free. net->mu held. */
static void conn_break_locked(conn_t *conn, int code, const char *why) {
  if (conn->state == ST_BROKEN || conn->state == ST_FAILED) return;
  conn->state = ST_BROKEN;
  conn->error_code = code;
  snprintf(conn->error, sizeof conn->error, "%s", why);
  if (conn->dir == CONN_IN) {
    if (conn->fd >= 0) close(conn->fd);
    conn->fd = -1;
    ck_buf_fini(&conn->obuf);
    ck_buf_init(&conn->obuf);
  } else if (conn->fd >= 0) {
    shutdown(conn->fd, SHUT_RDWR);
  }
  conn_wake_senders(conn);
}

void ck_net_conn_break(ck_net_t *net, conn_t *conn, int code, const char *why) {
  ck_mutex_lock(&net->mu);
  conn_break_locked(conn, code, why);
  ck_mutex_unlock(&net->mu);
}

/* Writes as much of an IN connection's queued output as the socket takes now. Returns false
 * on a socket error. net->mu held; any thread. */
static bool conn_flush_locked(conn_t *conn) {
  size_t done = 0;
  while (done < conn->obuf.len) {
    ssize_t w = send(conn->fd, conn->obuf.data + done, conn->obuf.len - done,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      done += (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    return false;
  }
  if (done) {
    memmove(conn->obuf.data, conn->obuf.data + done, conn->obuf.len - done);
    conn->obuf.len -= done;
  }
  return true;
}

/* Queues a header-only frame on an IN connection and tries to write it. Returns false when
 * the socket failed. net->mu held. */
static bool conn_queue_locked(ck_net_t *net, conn_t *conn, int kind, int32_t sender_task,
                              int32_t dest_task, int64_t value) {
  ck_net_hdr_t h;
  ck_net_make_hdr(&h, net->session, kind, sender_task, 0, dest_task, value, 0);
  uint8_t raw[CK_NET_HDR_SIZE];
  ck_net_hdr_encode(&h, raw);
  ck_buf_append(&conn->obuf, raw, sizeof raw);
  bool ok = conn_flush_locked(conn);
  if (ok && conn->obuf.len) ck_net_wake_io(net); /* the I/O thread writes the rest when it can */
  return ok;
}

/* ------------------------------------------------------------ the I/O thread ---- */

/* A protocol violation or bad input on conn: logged, the connection closed. I/O thread. */
static bool conn_reject(ck_net_t *net, conn_t *conn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool conn_reject(ck_net_t *net, conn_t *conn, const char *fmt, ...) {
  char why[CK_ERR_MSG];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  CK_LOG_ERR(LOG_SUB, "closing the connection %s %s: %s",
             conn->dir == CONN_IN ? "from" : "to", conn->peer, why);
  ck_net_conn_break(net, conn, CK_EPROTO, why);
  return false;
}

/* A complete frame on an IN connection. Returns false when the connection was closed. */
static bool dispatch_in(ck_net_t *net, conn_t *conn, const ck_net_hdr_t *h, const char *payload) {
  if (h->kind == CK_NET_HELLO) {
    ck_mutex_lock(&net->mu);
    bool ok = conn_queue_locked(net, conn, CK_NET_HELLO_OK, 0, 0, net->credits);
    ck_mutex_unlock(&net->mu);
    conn->hello = true;
    CK_LOG_DEBUG(LOG_SUB, "accepted a connection from %s", conn->peer);
    return ok || conn_reject(net, conn, "could not answer the handshake: %s", strerror(errno));
  }
  ck_mutex_lock(&net->mu);
  ck_net_link_t *link = ck_net_link_get(conn, h->sender_task, h->dest_task, true, 0);
  bool overrun = link->inflight >= net->credits;
  if (!overrun) link->inflight++;
  ck_mutex_unlock(&net->mu);
  if (overrun)
    return conn_reject(net, conn,
                       "task %d sent task %d more than the %d messages its credits allow",
                       h->sender_task, h->dest_task, net->credits);
  ck_batch_t *batch = NULL;
  if (h->kind == CK_NET_BATCH) {
    ck_error_t err = {0};
    if (ck_batch_wire_decode(payload, h->payload_len, &batch, &err))
      return conn_reject(net, conn, "a batch from task %d to task %d is corrupt: %s",
                         h->sender_task, h->dest_task, err.message);
  }
  net->fn(net->ctx, h->dest_task, h->sender, h->kind, h->value, batch, link);
  return true;
}

/* A complete CREDIT frame on an OUT connection. */
static bool dispatch_out(ck_net_t *net, conn_t *conn, const ck_net_hdr_t *h) {
  ck_mutex_lock(&net->mu);
  ck_net_link_t *link = ck_net_link_get(conn, h->sender_task, h->dest_task, false, 0);
  bool bad = !link || h->value <= 0 || link->credits + h->value > conn->peer_credits;
  if (!bad) {
    link->credits += (int)h->value;
    ck_cond_signal(&link->cv);
  }
  ck_mutex_unlock(&net->mu);
  if (bad)
    return conn_reject(net, conn, "unexpected credit %" PRId64 " for task %d → task %d",
                       h->value, h->sender_task, h->dest_task);
  return true;
}

/* A header just completed: checks it against the connection's state. Returns false when the
 * connection was closed. */
static bool check_hdr(ck_net_t *net, conn_t *conn, const ck_net_hdr_t *h) {
  if (h->magic != CK_NET_MAGIC)
    return conn_reject(net, conn, "not a clink data connection (bad magic 0x%08" PRIx32 ")",
                       h->magic);
  if (h->version != CK_NET_VERSION)
    return conn_reject(net, conn, "protocol version %u, this build speaks %d", h->version,
                       CK_NET_VERSION);
  if (h->session != net->session) {
    if (conn->dir == CONN_IN && !conn->hello && h->kind == CK_NET_HELLO) {
      /* tell the sender why before closing, so its send fails with the reason */
      ck_mutex_lock(&net->mu);
      conn_queue_locked(net, conn, CK_NET_REFUSE, 0, 0, 0);
      ck_mutex_unlock(&net->mu);
      return conn_reject(net, conn,
                         "refused a peer of deployment session %016" PRIx64
                         ", this process runs session %016" PRIx64,
                         h->session, net->session);
    }
    return conn_reject(net, conn,
                       "dropped a frame of deployment session %016" PRIx64
                       " (kind %u, task %d → task %d): this process runs session %016" PRIx64,
                       h->session, h->kind, h->sender_task, h->dest_task, net->session);
  }
  if (h->reserved) return conn_reject(net, conn, "reserved header field is %u", h->reserved);
  bool ok;
  if (conn->dir == CONN_OUT) ok = h->kind == CK_NET_CREDIT;
  else if (!conn->hello) ok = h->kind == CK_NET_HELLO;
  else ok = h->kind <= CK_NET_END;
  if (!ok)
    return conn_reject(net, conn, "unexpected frame kind %u %s", h->kind,
                       conn->dir == CONN_OUT ? "on a sending connection"
                       : conn->hello         ? "after the handshake"
                                             : "before the handshake");
  if (h->kind <= CK_NET_END || h->kind == CK_NET_CREDIT) {
    if (h->sender_task < 0 || h->sender < 0 || h->dest_task < 0)
      return conn_reject(net, conn, "negative task index (task %d, subtask %d → task %d)",
                         h->sender_task, h->sender, h->dest_task);
  }
  if (h->kind == CK_NET_BATCH) {
    if (h->payload_len == 0 || h->payload_len > CK_NET_FRAME_LIMIT)
      return conn_reject(net, conn, "a batch frame of %" PRIu32 " bytes (limit %u)",
                         h->payload_len, CK_NET_FRAME_LIMIT);
  } else if (h->payload_len) {
    return conn_reject(net, conn, "a payload of %" PRIu32 " bytes on a frame of kind %u",
                       h->payload_len, h->kind);
  }
  return true;
}

/* Feeds received bytes through conn's frame parser, dispatching each complete frame. Keeps
 * its place between calls ("need more" is simply running out of bytes). Returns false when
 * the connection was closed. I/O thread. */
static bool conn_feed(ck_net_t *net, conn_t *conn, const uint8_t *p, size_t n) {
  reader_t *rd = &conn->rd;
  while (n > 0) {
    if (!rd->in_payload) {
      size_t take = CK_NET_HDR_SIZE - rd->hdr_have;
      if (take > n) take = n;
      memcpy(rd->hdr + rd->hdr_have, p, take);
      rd->hdr_have += take;
      p += take;
      n -= take;
      if (rd->hdr_have < CK_NET_HDR_SIZE) return true; /* need more */
      rd->hdr_have = 0;
      ck_net_hdr_decode(rd->hdr, &rd->h);
      if (!check_hdr(net, conn, &rd->h)) return false;
      if (rd->h.payload_len == 0) {
        bool ok = conn->dir == CONN_IN ? dispatch_in(net, conn, &rd->h, NULL)
                                       : dispatch_out(net, conn, &rd->h);
        if (!ok) return false;
        continue;
      }
      rd->in_payload = true;
      ck_buf_reset(&rd->payload);
    } else {
      size_t take = rd->h.payload_len - rd->payload.len;
      if (take > n) take = n;
      ck_buf_append(&rd->payload, p, take);
      p += take;
      n -= take;
      if (rd->payload.len < rd->h.payload_len) return true; /* need more */
      rd->in_payload = false;
      bool ok = dispatch_in(net, conn, &rd->h, rd->payload.data);
      if (rd->payload.cap > PAYLOAD_KEEP) { /* do not hold on to a huge frame's buffer */
        ck_buf_fini(&rd->payload);
        ck_buf_init(&rd->payload);
      }
      if (!ok) return false;
    }
  }
  return true;
}

/* Reads what conn has for us. I/O thread. */
static void conn_read(ck_net_t *net, conn_t *conn) {
  for (int round = 0; round < 16; round++) { /* then give other connections a turn */
    ssize_t r = recv(conn->fd, net->scratch, SCRATCH_SIZE, MSG_DONTWAIT);
    if (r > 0) {
      if (!conn_feed(net, conn, net->scratch, (size_t)r)) return;
      if (r < SCRATCH_SIZE) return;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    char why[160];
    if (r == 0 && !conn->rd.in_payload && conn->rd.hdr_have == 0)
      snprintf(why, sizeof why, "the peer closed the connection");
    else if (r == 0)
      snprintf(why, sizeof why, "the peer closed the connection in the middle of a frame");
    else
      snprintf(why, sizeof why, "%s", strerror(errno));
    /* a close between frames is how peers shut down; anything else is worth a warning */
    bool clean = r == 0 && !conn->rd.in_payload && !conn->rd.hdr_have;
    ck_log(!clean ? CK_LOG_WARN : conn->dir == CONN_OUT ? CK_LOG_INFO : CK_LOG_DEBUG, LOG_SUB,
           "connection %s %s lost: %s", conn->dir == CONN_IN ? "from" : "to", conn->peer, why);
    ck_net_conn_break(net, conn, CK_ECONNECT, why);
    return;
  }
}

static void accept_all(ck_net_t *net) {
  for (;;) {
    struct sockaddr_storage sa;
    socklen_t salen = sizeof sa;
    int fd = accept4(net->listen_fd, (struct sockaddr *)&sa, &salen,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        CK_LOG_ERR(LOG_SUB, "could not accept a connection on port %d: %s", net->port,
                   strerror(errno));
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "?", peer[128];
    getnameinfo((struct sockaddr *)&sa, salen, host, sizeof host, serv, sizeof serv,
                NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(peer, sizeof peer, "%.80s:%.16s", host, serv);
    conn_t *conn = ck_net_conn_new(CONN_IN, fd, peer);
    conn->state = ST_UP;
    ck_mutex_lock(&net->mu);
    conn->next = net->conns;
    net->conns = conn;
    ck_mutex_unlock(&net->mu);
  }
}

static void *io_main(void *arg) {
  ck_net_t *net = arg;
  size_t cap = 0;
  struct pollfd *pfds = NULL;
  conn_t **pconns = NULL;
  for (;;) {
    ck_mutex_lock(&net->mu);
    if (net->stopping) {
      ck_mutex_unlock(&net->mu);
      break;
    }
    /* closed inbound connections nobody can refer to any more go now */
    size_t count = 2;
    for (conn_t **pp = &net->conns; *pp;) {
      conn_t *conn = *pp;
      if (conn->dir == CONN_IN && conn->fd < 0 && conn->links.count == 0) {
        *pp = conn->next;
        conn_free(conn);
        continue;
      }
      count++;
      pp = &conn->next;
    }
    if (count > cap) {
      cap = count * 2;
      pfds = ck_realloc(pfds, cap * sizeof *pfds);
      pconns = ck_realloc(pconns, cap * sizeof *pconns);
    }
    size_t n = 0;
    pfds[n++] = (struct pollfd){.fd = net->wake[0], .events = POLLIN};
    pfds[n++] = (struct pollfd){.fd = net->listen_fd, .events = POLLIN};
    for (conn_t *conn = net->conns; conn; conn = conn->next) {
      if (conn->state != ST_UP || conn->fd < 0) continue;
      short events = POLLIN;
      if (conn->dir == CONN_IN && conn->obuf.len) events |= POLLOUT;
      pconns[n] = conn;
      pfds[n++] = (struct pollfd){.fd = conn->fd, .events = events};
    }
    ck_mutex_unlock(&net->mu);

    int ready = poll(pfds, (nfds_t)n, 1000);
    if (ready < 0) {
      if (errno != EINTR) CK_LOG_ERR(LOG_SUB, "poll failed: %s", strerror(errno));
      continue;
    }
    if (pfds[0].revents) {
      char drain[64];
      while (read(net->wake[0], drain, sizeof drain) > 0) {
      }
    }
    if (pfds[1].revents & POLLIN) accept_all(net);
    for (size_t i = 2; i < n; i++) {
      short re = pfds[i].revents;
      if (!re) continue;
      conn_t *conn = pconns[i];
      if (re & POLLOUT) {
        ck_mutex_lock(&net->mu);
        bool ok = conn->fd < 0 || conn_flush_locked(conn);
        ck_mutex_unlock(&net->mu);
        if (!ok) {
          CK_LOG_WARN(LOG_SUB, "connection from %s lost: %s", conn->peer, strerror(errno));
          ck_net_conn_break(net, conn, CK_ECONNECT, "could not write credits");
          continue;
        }
      }
      if (re & (POLLIN | POLLHUP | POLLERR)) conn_read(net, conn);
    }
  }
  ck_free(pfds);
  ck_free(pconns);
  return NULL;
}

/* ------------------------------------------------------------------- start ---- */

int ck_net_start(const char *bind_host, int port, uint64_t session, int credits,
                 ck_net_deliver_fn fn, void *ctx, ck_net_t **out, ck_error_t *err) {
  *out = NULL;
  if (credits < 1 || credits > MAX_CREDITS || !fn || port < 0 || port > 65535)
    return ck_error_set(err, CK_EINVAL,
                        "could not start the data plane: credits must be 1..%d and port "
                        "0..65535 (got %d and %d)", MAX_CREDITS, credits, port);
  const char *host = bind_host && *bind_host ? bind_host : "0.0.0.0";
  char service[16];
  snprintf(service, sizeof service, "%d", port);
  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  int gai = getaddrinfo(host, service, &hints, &res);
  if (gai)
    return ck_error_set(err, CK_EIO, "could not listen on %s:%d: %s", host, port,
                        gai_strerror(gai));
  int fd = -1, last = 0;
  for (int pass = 0; pass < 2 && fd < 0; pass++) { /* IPv4 first: peers name us by address */
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
      if ((a->ai_family == AF_INET) != (pass == 0)) continue;
      fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) {
        last = errno;
        continue;
      }
      int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (bind(fd, a->ai_addr, a->ai_addrlen) < 0 || listen(fd, 128) < 0) {
        last = errno;
        close(fd);
        fd = -1;
      }
    }
  }
  freeaddrinfo(res);
  if (fd < 0)
    return ck_error_set(err, CK_EIO, "could not listen on %s:%d: %s", host, port,
                        strerror(last));
  struct sockaddr_storage sa;
  socklen_t salen = sizeof sa;
  getsockname(fd, (struct sockaddr *)&sa, &salen);
  int bound = sa.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&sa)->sin6_port)
                                       : ntohs(((struct sockaddr_in *)&sa)->sin_port);

  ck_net_t *net = ck_calloc(1, sizeof *net);
  net->session = session;
  net->credits = credits;
  atomic_init(&net->connect_timeout_ms, CK_NET_CONNECT_TIMEOUT_MS);
  net->fn = fn;
  net->ctx = ctx;
  net->listen_fd = fd;
  net->port = bound;
  ck_mutex_init(&net->mu);
  net->scratch = ck_malloc(SCRATCH_SIZE);
  if (pipe2(net->wake, O_NONBLOCK | O_CLOEXEC) < 0) {
    net->wake[0] = net->wake[1] = -1;
    ck_error_set(err, CK_EIO, "could not start the data plane: %s", strerror(errno));
    ck_net_free(net);
    return CK_EIO;
  }
  if (ck_thread_start(&net->io, "ck-net", io_main, net)) {
    ck_error_set(err, CK_EINTERNAL, "could not start the data plane's thread");
    ck_net_free(net);
    return CK_EINTERNAL;
  }
  CK_LOG_DEBUG(LOG_SUB, "listening on %s:%d for session %016" PRIx64, host, bound, session);
  *out = net;
  return 0;
}

int ck_net_port(const ck_net_t *net) { return net->port; }

void ck_net_set_connect_timeout(ck_net_t *net, int timeout_ms) {
  atomic_store(&net->connect_timeout_ms, timeout_ms > 0 ? timeout_ms : 1);
}

/* --------------------------------------------------------------- receiving ---- */

void ck_net_consumed(ck_net_t *net, ck_net_link_t *link) {
  ck_mutex_lock(&net->mu);
  conn_t *conn = link->conn;
  if (link->inflight > 0) link->inflight--;
  if (conn->fd >= 0 && conn->state == ST_UP &&
      !conn_queue_locked(net, conn, CK_NET_CREDIT, link->sender_task, link->dest_task, 1)) {
    /* only the I/O thread closes an inbound socket: make it notice */
    shutdown(conn->fd, SHUT_RDWR);
  }
  ck_mutex_unlock(&net->mu);
}

/* ------------------------------------------------------------------- free ---- */

void ck_net_free(ck_net_t *net) {
  if (!net) return;
  ck_mutex_lock(&net->mu);
  net->stopping = true;
  for (conn_t *conn = net->conns; conn; conn = conn->next) conn_wake_senders(conn);
  ck_mutex_unlock(&net->mu);
  if (net->wake[1] >= 0) ck_net_wake_io(net);
  ck_thread_join(&net->io);
  while (net->conns) {
    conn_t *conn = net->conns;
    net->conns = conn->next;
    conn_free(conn);
  }
  if (net->listen_fd >= 0) close(net->listen_fd);
  if (net->wake[0] >= 0) close(net->wake[0]);
  if (net->wake[1] >= 0) close(net->wake[1]);
  ck_mutex_fini(&net->mu);
  ck_free(net->scratch);
  ck_free(net);
}
