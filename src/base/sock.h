/*
 * DESIGN: TCP client sockets — the one non-blocking connect every client of the engine uses
 * (the ClickHouse client, the cluster's control connections and its data plane).
 *
 * Connects to each address host:service resolves to, in order, without ever blocking past a
 * deadline or past a cancel flag turning non-zero (checked every 100 ms), and reports why it
 * could not. No engine knowledge; any thread.
 */
#ifndef CK_BASE_SOCK_H
#define CK_BASE_SOCK_H

#include <stdatomic.h>
#include <stdint.h>

/* Waits until fd is ready for events (POLLIN/POLLOUT). deadline_ms on the ck_mono_ms clock, -1
 * for none; cancel may be NULL. 0, CK_ETIMEOUT, CK_ECANCELLED or CK_EIO (errno says). */
int ck_sock_wait(int fd, short events, int64_t deadline_ms, const atomic_int *cancel);

/* The connected socket (non-blocking, close-on-exec, TCP_NODELAY), or -1 with *why an errno
 * (ETIMEDOUT at the deadline, ECANCELED when cancelled) and, when the name did not resolve,
 * *gai_why the resolver's message (else NULL). */
int ck_sock_connect_fd(const char *host, int port, int64_t deadline_ms, const atomic_int *cancel,
                       int *why, const char **gai_why);

#endif
