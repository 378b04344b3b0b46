/*
 * DESIGN: small helpers the connectors share (private to src/connectors/): a write loop that
 * survives short writes and EINTR. (Varints and fixed-width integers, for position snapshots
 * and wire formats, are base/bytes.h's.) Everything is static inline; no state.
 */
#ifndef CK_CONNECTORS_UTIL_H
#define CK_CONNECTORS_UTIL_H

#include <errno.h>
#include <stddef.h>
#include <unistd.h>

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

#endif
