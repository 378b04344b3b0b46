/*
 * DESIGN: small helpers the connectors share (private to src/connectors/): a write loop that
 * survives short writes and EINTR. (Varints and fixed-width integers, for position snapshots
 * and wire formats, are base/bytes.h's.) Everything is static inline; no state.
 */
#ifndef CK_CONNECTORS_UTIL_H
#define CK_CONNECTORS_UTIL_H

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/time.h"
#include "runtime/connector.h"

/* Writes all n bytes; 0, or -errno. */
static inline int ck_conn_write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* A source's wait of up to ms (pacing, or no data): returns early, true, once the engine's
 * wake descriptor (ck_conn_ctx_t.wake_fd) is readable; without one it sleeps ms. Source
 * thread. */
static inline bool ck_conn_wait_wake(const ck_conn_ctx_t *ctx, int64_t ms) {
  if (ms <= 0) return false;
  if (!ctx->wake_fd) {
    ck_sleep_ms(ms);
    return false;
  }
  struct pollfd pfd = {.fd = *ctx->wake_fd, .events = POLLIN};
  int r = poll(&pfd, 1, ms > 1000 ? 1000 : (int)ms);
  return r > 0 && (pfd.revents & POLLIN);
}

#endif
