/*
 * DESIGN: see proto.h.
 */
#include "cluster/proto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "base/sock.h"
#include "base/time.h"

const char *ck_proto_type_name(int type) {
  switch (type) {
#define CK_X_PROTO(name, code, doc) \
  case code:                        \
    return #name;
    CK_PROTO_TABLE(CK_X_PROTO)
#undef CK_X_PROTO
  }
  return "UNKNOWN";
}

/* ---------------------------------------------------------------- fields */

void ck_proto_put_u8(ck_buf_t *b, uint8_t v) { ck_buf_put_u8(b, v); }
void ck_proto_put_u32(ck_buf_t *b, uint32_t v) { ck_buf_put_le32(b, v); }
void ck_proto_put_i64(ck_buf_t *b, int64_t v) { ck_buf_put_le64(b, (uint64_t)v); }

void ck_proto_put_str(ck_buf_t *b, const char *s) {
  size_t n = s ? strlen(s) : 0;
  ck_proto_put_u32(b, (uint32_t)n);
  if (n) ck_buf_append(b, s, n);
}

void ck_proto_put_bytes(ck_buf_t *b, const void *p, size_t n) {
  ck_proto_put_u32(b, (uint32_t)n);
  if (n) ck_buf_append(b, p, n);
}

static bool take(ck_proto_reader_t *r, size_t n) {
  if (r->bad || r->n - r->off < n) {
    r->bad = true;
    return false;
  }
  return true;
}

uint8_t ck_proto_u8(ck_proto_reader_t *r) {
  if (!take(r, 1)) return 0;
  return r->p[r->off++];
}

uint32_t ck_proto_u32(ck_proto_reader_t *r) {
  if (!take(r, 4)) return 0;
  uint32_t v = ck_get_le32(r->p + r->off);
  r->off += 4;
  return v;
}

int64_t ck_proto_i64(ck_proto_reader_t *r) {
  if (!take(r, 8)) return 0;
  uint64_t u = ck_get_le64(r->p + r->off);
  r->off += 8;
  return (int64_t)u;
}

char *ck_proto_strn(ck_proto_reader_t *r, size_t *len) {
  uint32_t n = ck_proto_u32(r);
  if (!take(r, n)) n = 0;
  char *s = ck_malloc((size_t)n + 1);
  if (n) memcpy(s, r->p + r->off, n);
  s[n] = 0;
  if (!r->bad) r->off += n;
  if (len) *len = n;
  return s;
}

char *ck_proto_str(ck_proto_reader_t *r) { return ck_proto_strn(r, NULL); }

/* ---------------------------------------------------------------- frames */

int ck_proto_parse(const uint8_t *data, size_t len, size_t *used, ck_proto_frame_t *f,
                   ck_error_t *err) {
  return ck_proto_parse_bounded(data, len, 0, 0, used, f, err);
}

int ck_proto_parse_bounded(const uint8_t *data, size_t len, uint32_t max_frame,
                           uint32_t max_submit, size_t *used, ck_proto_frame_t *f,
                           ck_error_t *err) {
  *used = 0;
  if (!max_frame || max_frame > CK_PROTO_MAX_FRAME) max_frame = CK_PROTO_MAX_FRAME;
  if (!max_submit || max_submit > CK_PROTO_MAX_FRAME) max_submit = max_frame;
  if (len < 4) return 0;
  uint32_t flen = ck_get_le32(data);
  if (flen < CK_PROTO_HEADER || flen > CK_PROTO_MAX_FRAME)
    return ck_error_set(err, CK_EPROTO, "a control frame announces %u bytes, which no clink "
                        "frame has (a different protocol on this port?)", flen);
  if (flen > max_frame && flen > max_submit)
    return ck_error_set(err, CK_EPROTO, "a control frame announces %u bytes, more than the "
                        "%u this connection may send", flen, max_submit > max_frame
                        ? max_submit : max_frame);
  if (flen > max_frame && len >= 8 && data[7] != CK_PROTO_SUBMIT)
    return ck_error_set(err, CK_EPROTO, "a %s frame announces %u bytes, more than the %u "
                        "this connection may send", ck_proto_type_name(data[7]), flen,
                        max_frame);
  if (flen > max_submit && len >= 8 && data[7] == CK_PROTO_SUBMIT)
    return ck_error_set(err, CK_EPROTO, "a SUBMIT frame announces %u bytes, more than the %u a "
                        "job's SQL may have", flen, max_submit);
  if (len >= 6) {
    unsigned magic = ck_get_le16(data + 4);
    if (magic != CK_PROTO_MAGIC)
      return ck_error_set(err, CK_EPROTO, "not a clink control connection (bad magic 0x%04x)",
                          magic);
  }
  if (len >= 7 && data[6] != CK_PROTO_VERSION)
    return ck_error_set(err, CK_EPROTO, "control protocol version %u, this build speaks %u",
                        data[6], CK_PROTO_VERSION);
  if (len - 4 < flen) return 0;
  f->type = data[7];
  f->epoch = ck_get_le64(data + 8);
  f->body = (ck_proto_reader_t){data + 4 + CK_PROTO_HEADER, flen - CK_PROTO_HEADER, 0, false};
  *used = 4 + (size_t)flen;
  return 1;
}

void ck_proto_conn_init(ck_proto_conn_t *c, int fd) {
  c->fd = fd;
  ck_buf_init(&c->in);
  c->used = 0;
  c->max_frame = c->max_submit = 0;
  ck_mutex_init(&c->wmu);
}

void ck_proto_conn_fini(ck_proto_conn_t *c) {
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
  ck_buf_fini(&c->in);
  ck_mutex_fini(&c->wmu);
}

static int write_all(int fd, const void *p, size_t n, ck_error_t *err) {
  const char *s = p;
  while (n) {
    ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd pfd = {.fd = fd, .events = POLLOUT};
      if (poll(&pfd, 1, 10000) <= 0)
        return ck_error_set(err, CK_ETIMEOUT, "could not send a control frame within 10 s");
      continue;
    }
    if (w <= 0) return ck_error_set(err, CK_ECONNECT, "could not send a control frame: %s",
                                    strerror(errno));
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

int ck_proto_send(ck_proto_conn_t *c, int type, uint64_t epoch, const ck_buf_t *payload,
                  ck_error_t *err) {
  size_t plen = payload ? payload->len : 0;
  uint8_t h[4 + CK_PROTO_HEADER];
  uint32_t flen = (uint32_t)(CK_PROTO_HEADER + plen);
  ck_put_le32(h, flen);
  ck_put_le16(h + 4, CK_PROTO_MAGIC);
  h[6] = CK_PROTO_VERSION;
  h[7] = (uint8_t)type;
  ck_put_le64(h + 8, epoch);
  ck_error_t local;
  if (!err) err = &local;
  /* one write per frame: a header and a body in two would wait for the peer's delayed ACK */
  ck_buf_t frame;
  ck_buf_init(&frame);
  ck_buf_append(&frame, h, sizeof h);
  if (plen) ck_buf_append(&frame, payload->data, plen);
  ck_mutex_lock(&c->wmu);
  int rc = c->fd < 0 ? ck_error_set(err, CK_ECONNECT, "the connection is closed")
                     : write_all(c->fd, frame.data, frame.len, err);
  ck_mutex_unlock(&c->wmu);
  ck_buf_fini(&frame);
  return rc;
}

int ck_proto_fill(ck_proto_conn_t *c, ck_error_t *err) {
  if (c->used && c->used == c->in.len) { /* everything consumed: start over */
    ck_buf_reset(&c->in);
    c->used = 0;
  } else if (c->used > (1u << 20)) { /* compact */
    memmove(c->in.data, c->in.data + c->used, c->in.len - c->used);
    c->in.len -= c->used;
    c->used = 0;
  }
  ck_buf_reserve(&c->in, 65536);
  ssize_t n;
  do n = recv(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len - 1, MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
  if (n == 0) return ck_error_set(err, CK_ECONNECT, "the peer closed the connection");
  if (n < 0) return ck_error_set(err, CK_ECONNECT, "could not read: %s", strerror(errno));
  c->in.len += (size_t)n;
  c->in.data[c->in.len] = 0;
  return 0;
}

int ck_proto_next(ck_proto_conn_t *c, ck_proto_frame_t *f, ck_error_t *err) {
  size_t used;
  int rc = ck_proto_parse_bounded((const uint8_t *)c->in.data + c->used, c->in.len - c->used,
                                  c->max_frame, c->max_submit, &used, f, err);
  if (rc == 1) c->used += used;
  return rc;
}

int ck_proto_call(ck_proto_conn_t *c, int type, const ck_buf_t *payload, int timeout_ms,
                  ck_proto_frame_t *reply, ck_error_t *err) {
  int rc = ck_proto_send(c, type, 0, payload, err);
  if (rc) return rc;
  int64_t deadline = ck_mono_ms() + timeout_ms;
  for (;;) {
    rc = ck_proto_next(c, reply, err);
    if (rc) return rc < 0 ? rc : 0;
    int64_t left = deadline - ck_mono_ms();
    if (left <= 0) return ck_error_set(err, CK_ETIMEOUT, "no answer within %d ms", timeout_ms);
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
    if (poll(&pfd, 1, (int)left) > 0 && (rc = ck_proto_fill(c, err))) return rc;
  }
}

/* ---------------------------------------------------------------- sockets */

static int resolve(const char *host, int port, struct sockaddr_storage *ss, socklen_t *len,
                   ck_error_t *err) {
  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  char ps[16];
  snprintf(ps, sizeof ps, "%d", port);
  int g = getaddrinfo(host && *host ? host : "127.0.0.1", ps, &hints, &res);
  if (g || !res)
    return ck_error_set(err, CK_ECONNECT, "could not resolve host '%s': %s", host,
                        gai_strerror(g));
  memcpy(ss, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  freeaddrinfo(res);
  return 0;
}

int ck_sock_listen(const char *host, int port, int *fd, ck_error_t *err) {
  struct sockaddr_storage ss;
  socklen_t len = 0;
  int rc = resolve(host, port, &ss, &len, err);
  if (rc) return rc;
  int s = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return ck_error_set(err, CK_EIO, "could not create a socket: %s", strerror(errno));
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(s, (struct sockaddr *)&ss, len) || listen(s, 64)) {
    int e = errno;
    close(s);
    return ck_error_set(err, CK_EIO, "could not listen on %s:%d: %s", host, port, strerror(e));
  }
  *fd = s;
  return 0;
}

int ck_sock_port(int fd) {
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  if (getsockname(fd, (struct sockaddr *)&ss, &len)) return -1;
  if (ss.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&ss)->sin_port);
  return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

int ck_sock_connect(const char *host, int port, int timeout_ms, int *fd, ck_error_t *err) {
  int why;
  const char *gai_why;
  int s = ck_sock_connect_fd(host, port, ck_mono_ms() + timeout_ms, NULL, &why, &gai_why);
  if (s < 0) {
    if (gai_why)
      return ck_error_set(err, CK_ECONNECT, "could not resolve host '%s': %s", host, gai_why);
    if (why == ETIMEDOUT)
      return ck_error_set(err, CK_ECONNECT, "could not connect to %s:%d within %d ms", host,
                          port, timeout_ms);
    return ck_error_set(err, CK_ECONNECT, "could not connect to %s:%d: %s", host, port,
                        strerror(why));
  }
  *fd = s; /* non-blocking: reads are polled, a write waits at most 10 s */
  return 0;
}
