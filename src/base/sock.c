/*
 * DESIGN: see sock.h.
 */
#include "base/sock.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/error.h"
#include "base/time.h"

#define SLICE_MS 100

int ck_sock_wait(int fd, short events, int64_t deadline_ms, const atomic_int *cancel) {
  for (;;) {
    if (cancel && atomic_load(cancel)) return CK_ECANCELLED;
    int slice = SLICE_MS;
    if (deadline_ms >= 0) {
      int64_t left = deadline_ms - ck_mono_ms();
      if (left <= 0) return CK_ETIMEOUT;
      if (left < slice) slice = (int)left;
    }
    struct pollfd pfd = {.fd = fd, .events = events};
    int r = poll(&pfd, 1, slice);
    if (r > 0) return 0;
    if (r < 0 && errno != EINTR) return CK_EIO;
  }
}

int ck_sock_connect_fd(const char *host, int port, int64_t deadline_ms, const atomic_int *cancel,
                       int *why, const char **gai_why) {
  char service[16];
  snprintf(service, sizeof service, "%d", port);
  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  *gai_why = NULL;
  int gai = getaddrinfo(host && *host ? host : "127.0.0.1", service, &hints, &res);
  if (gai) {
    *gai_why = gai_strerror(gai);
    *why = EHOSTUNREACH;
    return -1;
  }
  *why = ECONNREFUSED;
  int fd = -1;
  for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      *why = errno;
      continue;
    }
    int rc = connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc < 0 && errno == EINPROGRESS) {
      int w = ck_sock_wait(fd, POLLOUT, deadline_ms, cancel);
      if (w == 0) {
        int soerr = 0;
        socklen_t len = sizeof soerr;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
        rc = soerr ? -1 : 0;
        errno = soerr;
      } else {
        errno = w == CK_ECANCELLED ? ECANCELED : w == CK_ETIMEOUT ? ETIMEDOUT : EIO;
        rc = -1;
      }
    }
    if (rc < 0) {
      *why = errno;
      close(fd);
      fd = -1;
      if (*why == ECANCELED || *why == ETIMEDOUT) break;
    }
  }
  freeaddrinfo(res);
  if (fd >= 0) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

int ck_sock_write_all(int fd, const void *p, size_t n, int64_t deadline_ms,
                      const atomic_int *cancel, bool *wrote) {
  const char *c = p;
  while (n) {
    ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
    if (w > 0) {
      if (wrote) *wrote = true;
      c += w;
      n -= (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return CK_EIO;
    int rc = ck_sock_wait(fd, POLLOUT, deadline_ms, cancel);
    if (rc) return rc;
  }
  return 0;
}

int ck_sock_read_all(int fd, void *p, size_t n, int64_t deadline_ms, const atomic_int *cancel) {
  char *c = p;
  while (n) {
    ssize_t r = recv(fd, c, n, 0);
    if (r > 0) {
      c += r;
      n -= (size_t)r;
      continue;
    }
    if (r == 0) {
      errno = ECONNRESET;
      return CK_EIO;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return CK_EIO;
    int rc = ck_sock_wait(fd, POLLIN, deadline_ms, cancel);
    if (rc) return rc;
  }
  return 0;
}
