/*
 * DESIGN: the data plane's internal state, shared by net.c (the I/O thread, start and free)
 * and net_send.c (the sender threads) and by no one else; net.h is the interface, net.c's
 * DESIGN comment says which lock guards what.
 */
#ifndef CK_CLUSTER_NET_INT_H
#define CK_CLUSTER_NET_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/hash.h"
#include "base/thread.h"
#include "cluster/net.h"

#define LOG_SUB "net"
#define POLL_SLICE_MS 100     /* longest wait before a cancel flag is looked at again */
#define MAX_CREDITS 65536

typedef enum conn_dir { CONN_IN, CONN_OUT } conn_dir_t;
typedef enum conn_state {
  ST_CONNECTING, /* OUT: a sender thread is connecting */
  ST_UP,
  ST_BROKEN, /* was up, now closed (IN) or shut down (OUT): never reopened */
  ST_FAILED, /* OUT: could not connect; skipped by lookups, freed by ck_net_free */
} conn_state_t;

typedef struct reader {
  uint8_t hdr[CK_NET_HDR_SIZE];
  size_t hdr_have;
  bool in_payload; /* hdr is complete and decoded into h; payload is being filled */
  ck_net_hdr_t h;
  ck_buf_t payload;
} reader_t;

typedef struct conn {
  struct conn *next;
  conn_dir_t dir;
  conn_state_t state; /* net->mu */
  int fd;             /* -1 once closed */
  char peer[128];     /* OUT: "host:port" as the caller named it; IN: the remote address */
  ck_hmap_t links;    /* (sender_task, dest_task) → ck_net_link_t *; net->mu */
  reader_t rd;        /* I/O thread only */
  /* IN */
  bool hello;    /* handshake done (I/O thread only) */
  ck_buf_t obuf; /* frames to write, net->mu */
  /* OUT */
  ck_mutex_t wmu;     /* one frame at a time on the socket */
  ck_cond_t state_cv; /* CONNECTING → UP / FAILED, with net->mu */
  int peer_credits;   /* granted per link by the peer */
  int error_code;     /* why FAILED / BROKEN */
  char error[CK_ERR_MSG];
} conn_t;

struct ck_net_link {
  conn_t *conn;
  int32_t sender_task, dest_task;
  int credits;  /* OUT: messages we may still send; net->mu */
  int inflight; /* IN: delivered, not yet consumed; net->mu */
  ck_cond_t cv; /* OUT: credit came back or the connection broke, with net->mu */
};

struct ck_net {
  uint64_t session;
  int credits;
  atomic_int connect_timeout_ms;
  ck_net_deliver_fn fn;
  void *ctx;
  int listen_fd, port;
  int wake[2]; /* pipe: [0] polled by the I/O thread, [1] written by anyone */
  ck_mutex_t mu;
  conn_t *conns; /* net->mu */
  bool stopping; /* net->mu */
  ck_thread_t io;
  uint8_t *scratch; /* I/O thread only */
};

/* A header for this net's session. */
void ck_net_make_hdr(ck_net_hdr_t *h, uint64_t session, int kind, int32_t sender_task,
                     int32_t sender, int32_t dest_task, int64_t value, uint32_t payload_len);
/* Makes the I/O thread poll again (a new socket, output to write, stopping). Any thread. */
void ck_net_wake_io(ck_net_t *net);
/* conn's link (sender_task → dest_task), created with initial_credits when create. net->mu. */
ck_net_link_t *ck_net_link_get(conn_t *conn, int32_t sender_task, int32_t dest_task,
                               bool create, int initial_credits);
conn_t *ck_net_conn_new(conn_dir_t dir, int fd, const char *peer);
/* Marks conn broken for good (takes net->mu). */
void ck_net_conn_break(ck_net_t *net, conn_t *conn, int code, const char *why);

#endif
