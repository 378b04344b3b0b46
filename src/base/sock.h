/*
 * DESIGN: TCP client sockets — the one non-blocking connect every client of the engine uses
 * (the ClickHouse client, the cluster's control connections and its data plane, the Kafka
 * fetch client), and whole writes and reads with a deadline.
 *
 * Connects to each address host:service resolves to, in order, without ever blocking past a
 * deadline or past a cancel flag turning non-zero (checked every 100 ms), and reports why it
 * could not. No engine knowledge; any thread.
 */
#ifndef CK_BASE_SOCK_H
#define CK_BASE_SOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Waits until fd is ready for events (POLLIN/POLLOUT). deadline_ms on the ck_mono_ms clock, -1
 * for none; cancel may be NULL. 0, CK_ETIMEOUT, CK_ECANCELLED or CK_EIO (errno says). */
int ck_sock_wait(int fd, short events, int64_t deadline_ms, const atomic_int *cancel);

/* The connected socket (non-blocking, close-on-exec, TCP_NODELAY), or -1 with *why an errno
 * (ETIMEDOUT at the deadline, ECANCELED when cancelled) and, when the name did not resolve,
 * *gai_why the resolver's message (else NULL). */
int ck_sock_connect_fd(const char *host, int port, int64_t deadline_ms, const atomic_int *cancel,
                       int *why, const char **gai_why);

/* Writes all n bytes of p to the non-blocking socket fd (never raising SIGPIPE), waiting for
 * room up to the deadline; *wrote (may be NULL) is set once any byte went out. 0,
 * CK_ETIMEOUT, CK_ECANCELLED or CK_EIO (errno says). */
int ck_sock_write_all(int fd, const void *p, size_t n, int64_t deadline_ms,
                      const atomic_int *cancel, bool *wrote);
/* Reads exactly n bytes from the non-blocking socket fd, waiting up to the deadline; the peer
 * closing first is CK_EIO with errno ECONNRESET. */
int ck_sock_read_all(int fd, void *p, size_t n, int64_t deadline_ms, const atomic_int *cancel);

#endif
