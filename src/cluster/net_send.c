/*
 * DESIGN: the sender threads' side of the data plane (net.h): ck_net_send connects to a peer
 * on first use (retrying with backoff until the connect timeout, then the HELLO handshake),
 * takes one credit per message of a link (waiting for the receiver's CREDIT frames), and
 * writes whole frames under the connection's write lock, splitting a batch into frames of at
 * most CK_NET_MAX_FRAME. A connection that breaks stays broken: every later send to that
 * peer fails. Threads: the callers of ck_net_send, no lock held on entry; net->mu and
 * conn->wmu as net.c's DESIGN comment says.
 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/sock.h"
#include "base/time.h"
#include "cluster/net_int.h"
#include "runtime/batch_wire.h"

static bool cancelled(const atomic_int *cancel) { return cancel && atomic_load(cancel) != 0; }

/* One non-blocking connect attempt to any address of host:port. Returns the socket or -1 with
 * *why set (an errno, ETIMEDOUT at the deadline, ECANCELED). */
static int connect_once(const char *host, int port, int64_t deadline, const atomic_int *cancel,
                        int *why, const char **gai_why) {
  return ck_sock_connect_fd(host, port, deadline, cancel, why, gai_why);
}

/* Connects conn (CONNECTING, owned by this thread until it leaves that state) and shakes
 * hands, retrying with backoff until the connect timeout. Sender thread, no lock held. */
static int conn_connect(ck_net_t *net, conn_t *conn, const char *host, int port,
                        const atomic_int *cancel, int *fd_out, int *credits_out,
                        ck_error_t *err) {
  int timeout = atomic_load(&net->connect_timeout_ms);
  int64_t start = ck_mono_ms(), deadline = start + timeout, backoff = 20;
  int attempts = 0, why = 0;
  const char *gai_why = NULL;
  for (;;) {
    attempts++;
    int fd = connect_once(host, port, deadline, cancel, &why, &gai_why);
    if (fd >= 0) {
      ck_net_hdr_t h;
      ck_net_make_hdr(&h, net->session, CK_NET_HELLO, 0, 0, 0, 0, 0);
      uint8_t raw[CK_NET_HDR_SIZE];
      ck_net_hdr_encode(&h, raw);
      bool wrote = false;
      /* the peer answers at once when it is up: a slow answer is a hung peer */
      int64_t hs_deadline = ck_mono_ms() + (timeout > 1000 ? timeout : 1000);
      int rc = ck_sock_write_all(fd, raw, sizeof raw, hs_deadline, cancel, &wrote);
      if (!rc) rc = ck_sock_read_all(fd, raw, sizeof raw, hs_deadline, cancel);
      if (rc == CK_ECANCELLED) {
        close(fd);
        return ck_error_set(err, CK_ECANCELLED, "cancelled while connecting to worker at %s",
                            conn->peer);
      }
      if (!rc) {
        ck_net_hdr_decode(raw, &h);
        bool ours = h.magic == CK_NET_MAGIC && h.version == CK_NET_VERSION;
        if (ours && h.kind == CK_NET_REFUSE) {
          close(fd);
          ck_error_set(err, CK_EPROTO,
                       "worker at %s refused the connection: it runs deployment session "
                       "%016" PRIx64 ", this one is %016" PRIx64,
                       conn->peer, h.session, net->session);
          ck_error_hint(err, "a process of another deployment listens on that port; the "
                             "job graph handed to this worker may be stale");
          return CK_EPROTO;
        }
        if (!ours || h.kind != CK_NET_HELLO_OK || h.session != net->session || h.value < 1 ||
            h.value > MAX_CREDITS) {
          close(fd);
          return ck_error_set(err, CK_EPROTO,
                              "could not connect to worker at %s: it answered the handshake "
                              "with something else than a clink data plane",
                              conn->peer);
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        *fd_out = fd;
        *credits_out = (int)h.value;
        CK_LOG_DEBUG(LOG_SUB, "connected to %s (%d credits per link)", conn->peer,
                     *credits_out);
        return 0;
      }
      why = rc == CK_ETIMEOUT ? ETIMEDOUT : errno;
      close(fd);
    }
    if (why == ECANCELED || cancelled(cancel))
      return ck_error_set(err, CK_ECANCELLED, "cancelled while connecting to worker at %s",
                          conn->peer);
    int64_t now = ck_mono_ms();
    if (now >= deadline) break;
    CK_LOG_DEBUG(LOG_SUB, "could not connect to %s yet (%s), retrying", conn->peer,
                 gai_why ? gai_why : strerror(why));
    int64_t until = now + backoff < deadline ? now + backoff : deadline;
    while (ck_mono_ms() < until && !cancelled(cancel)) { /* backoff, not synchronisation */
      int64_t left = until - ck_mono_ms();
      ck_sleep_ms(left < POLL_SLICE_MS ? left : POLL_SLICE_MS);
    }
    backoff = backoff * 2 < 500 ? backoff * 2 : 500;
  }
  ck_error_set(err, CK_ECONNECT, "could not connect to worker at %s: %s", conn->peer,
               gai_why ? gai_why : strerror(why));
  ck_error_detail(err, "%d attempts in %" PRId64 " ms", attempts, ck_mono_ms() - start);
  ck_error_hint(err, "check that the worker is running and that its data port is reachable");
  if (err) err->retriable = true;
  return CK_ECONNECT;
}

/* The UP connection to host:port, connecting it when there is none. Sender thread. */
static int conn_get(ck_net_t *net, const char *host, int port, const atomic_int *cancel,
                    conn_t **out, ck_error_t *err) {
  char key[sizeof ((conn_t *)0)->peer];
  snprintf(key, sizeof key, "%s:%d", host, port);
  ck_mutex_lock(&net->mu);
  conn_t *waited = NULL;
  for (;;) {
    conn_t *conn = net->conns;
    while (conn && !(conn->dir == CONN_OUT && conn->state != ST_FAILED &&
                     strcmp(conn->peer, key) == 0))
      conn = conn->next;
    if (!conn && waited && waited->error_code != CK_ECANCELLED) {
      /* the attempt we waited for failed: its error is ours */
      int code = waited->error_code;
      ck_error_set(err, code, "%s", waited->error);
      ck_mutex_unlock(&net->mu);
      return code;
    }
    if (!conn) {
      conn = ck_net_conn_new(CONN_OUT, -1, key);
      conn->state = ST_CONNECTING;
      conn->next = net->conns;
      net->conns = conn;
      ck_mutex_unlock(&net->mu);
      ck_error_t mine = {0};
      int fd = -1, credits = 0;
      int rc = conn_connect(net, conn, host, port, cancel, &fd, &credits, &mine);
      ck_mutex_lock(&net->mu);
      conn->fd = fd;
      conn->peer_credits = credits;
      conn->state = rc ? ST_FAILED : ST_UP;
      conn->error_code = rc;
      snprintf(conn->error, sizeof conn->error, "%s", mine.message);
      ck_cond_broadcast(&conn->state_cv);
      ck_mutex_unlock(&net->mu);
      if (rc) {
        if (err && !err->code) *err = mine;
        return rc;
      }
      ck_net_wake_io(net); /* poll the new socket for credits */
      *out = conn;
      return 0;
    }
    if (conn->state == ST_UP) {
      ck_mutex_unlock(&net->mu);
      *out = conn;
      return 0;
    }
    if (conn->state == ST_BROKEN) {
      ck_error_set(err, CK_ECONNECT, "could not send to worker at %s: the connection broke: %s",
                   conn->peer, conn->error);
      ck_mutex_unlock(&net->mu);
      return CK_ECONNECT;
    }
    /* another thread is connecting to that peer: wait for it */
    if (cancelled(cancel) || net->stopping) {
      ck_mutex_unlock(&net->mu);
      return ck_error_set(err, CK_ECANCELLED, "cancelled while connecting to worker at %s",
                          key);
    }
    waited = conn;
    ck_cond_wait_until(&conn->state_cv, &net->mu, ck_mono_ms() + POLL_SLICE_MS);
  }
}

/* Takes one credit of link, waiting for it. Sender thread. */
static int credit_take(ck_net_t *net, ck_net_link_t *link, const atomic_int *cancel,
                       ck_error_t *err) {
  conn_t *conn = link->conn;
  int rc = 0;
  ck_mutex_lock(&net->mu);
  while (link->credits == 0) {
    if (conn->state != ST_UP) {
      rc = ck_error_set(err, CK_ECONNECT, "could not send to worker at %s: the connection "
                        "broke: %s", conn->peer, conn->error);
      break;
    }
    if (net->stopping || cancelled(cancel)) {
      rc = ck_error_set(err, CK_ECANCELLED, "cancelled while waiting for task %d at %s to "
                        "take more input", link->dest_task, conn->peer);
      break;
    }
    ck_cond_wait_until(&link->cv, &net->mu, ck_mono_ms() + POLL_SLICE_MS);
  }
  if (!rc) link->credits--;
  ck_mutex_unlock(&net->mu);
  return rc;
}

/* Writes one whole frame (header already filled in) on link's connection, after taking a
 * credit. Sender thread. */
static int frame_send(ck_net_t *net, ck_net_link_t *link, const ck_buf_t *frame,
                      const atomic_int *cancel, ck_error_t *err) {
  int rc = credit_take(net, link, cancel, err);
  if (rc) return rc;
  conn_t *conn = link->conn;
  ck_mutex_lock(&conn->wmu);
  bool wrote = false;
  rc = ck_sock_write_all(conn->fd, frame->data, frame->len, -1, cancel, &wrote);
  int saved = errno;
  ck_mutex_unlock(&conn->wmu);
  if (rc == CK_ECANCELLED) {
    if (wrote) /* half a frame is on the wire: the stream cannot go on */
      ck_net_conn_break(net, conn, CK_ECANCELLED, "a send was cancelled in the middle of a frame");
    return ck_error_set(err, CK_ECANCELLED, "cancelled while sending to task %d at %s",
                        link->dest_task, conn->peer);
  }
  if (rc) {
    char why[CK_ERR_MSG];
    ck_mutex_lock(&net->mu);
    snprintf(why, sizeof why, "%s", conn->state == ST_BROKEN ? conn->error : strerror(saved));
    ck_mutex_unlock(&net->mu);
    ck_net_conn_break(net, conn, CK_ECONNECT, why);
    return ck_error_set(err, CK_ECONNECT, "could not send to worker at %s: %s", conn->peer, why);
  }
  return 0;
}

static void frame_hdr_fill(ck_net_t *net, ck_buf_t *frame, int kind, int sender_task,
                           int sender, int dest_task, int64_t value) {
  ck_net_hdr_t h;
  ck_net_make_hdr(&h, net->session, kind, sender_task, sender, dest_task, value,
           (uint32_t)(frame->len - CK_NET_HDR_SIZE));
  ck_net_hdr_encode(&h, (uint8_t *)frame->data);
}

int ck_net_send(ck_net_t *net, const char *host, int port, int sender_task, int sender,
                int dest_task, int kind, int64_t value, ck_batch_t *batch,
                const atomic_int *cancel, ck_error_t *err) {
  int rc = 0;
  ck_buf_t frame;
  ck_buf_init(&frame);
  if (kind < CK_NET_BATCH || kind > CK_NET_END || (kind == CK_NET_BATCH) != (batch != NULL) ||
      sender_task < 0 || sender < 0 || dest_task < 0 || !host) {
    rc = ck_error_set(err, CK_EINVAL, "could not send message of kind %d from task %d to task "
                      "%d: invalid arguments", kind, sender_task, dest_task);
    goto done;
  }
  conn_t *conn;
  if ((rc = conn_get(net, host, port, cancel, &conn, err))) goto done;
  ck_mutex_lock(&net->mu);
  ck_net_link_t *link = ck_net_link_get(conn, sender_task, dest_task, true, conn->peer_credits);
  ck_mutex_unlock(&net->mu);
  static const uint8_t zero_hdr[CK_NET_HDR_SIZE];
  if (kind != CK_NET_BATCH) {
    ck_buf_append(&frame, zero_hdr, sizeof zero_hdr);
    frame_hdr_fill(net, &frame, kind, sender_task, sender, dest_task, value);
    rc = frame_send(net, link, &frame, cancel, err);
    goto done;
  }
  size_t from = 0;
  do { /* consecutive rows, one frame of at most CK_NET_MAX_FRAME payload each */
    size_t n = ck_batch_wire_rows_fitting(batch, from, CK_NET_MAX_FRAME);
    ck_buf_reset(&frame);
    ck_buf_append(&frame, zero_hdr, sizeof zero_hdr);
    ck_batch_wire_encode(batch, from, n, &frame);
    if (frame.len - CK_NET_HDR_SIZE > CK_NET_FRAME_LIMIT) {
      rc = ck_error_set(err, CK_EINVAL, "could not send to task %d at %s:%d: row %zu alone "
                        "encodes to %zu bytes, more than the %u a frame can carry", dest_task,
                        host, port, from + 1, frame.len - CK_NET_HDR_SIZE, CK_NET_FRAME_LIMIT);
      goto done;
    }
    frame_hdr_fill(net, &frame, kind, sender_task, sender, dest_task, value);
    rc = frame_send(net, link, &frame, cancel, err);
    from += n;
  } while (rc == 0 && from < batch->nrows);

done:
  ck_batch_free(batch);
  ck_buf_fini(&frame);
  return rc;
}
