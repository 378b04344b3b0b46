/*
 * DESIGN: the worker — runs the subtasks a coordinator deploys to it.
 *
 * Connects to the coordinator, registers (id, slots), heartbeats every 500 ms (carrying the
 * metrics of every deployment it runs), and serves the coordinator's frames: DEPLOY builds
 * the job graph the coordinator planned from its serialised form (cluster/jobplan.h: no SQL
 * is parsed and no connector's plan-time check runs here; the fingerprints must match),
 * opens a data port (cluster/net.h) and builds this worker's subtasks with the executor
 * (runtime/exec.h) placed by slot; START tells it every peer's data port and runs them;
 * TRIGGER / COMMIT drive checkpoints; CANCEL stops them. Snapshot acknowledgements, finished
 * sources, commits and the end of a deployment go back as frames.
 *
 * A lost coordinator connection cancels everything this worker runs (nothing may commit
 * without a coordinator), then it registers again, with the coordinator's restart or its
 * successor. A registration the coordinator refuses with a reason ends the worker with that
 * reason: a wrong token at once; an id another live worker has after trying for 5 s (it may
 * be this worker's own previous run on a host that died without closing its connection,
 * which the coordinator declares lost after three missed heartbeats). Frames of a coordinator epoch older than the newest seen are dropped.
 *
 * Threads: the control thread (connect, read frames, reap ended deployments), a heartbeat
 * thread, each deployment's executor threads plus one waiter, the net's threads, and
 * libmicrohttpd's for /api/v1/health. Shared state under the worker's mutex; sends on the
 * control connection are serialised by the connection.
 */
#ifndef CK_CLUSTER_WORKER_H
#define CK_CLUSTER_WORKER_H

#include <signal.h>
#include <stdint.h>

#include "base/error.h"

typedef struct ck_worker_opts {
  const char *coordinator_host;
  int coordinator_port;
  const char *ha_url;    /* zookeeper://…: the leader's address is looked up there, and
                            followed when it changes (coordinator_host/port unused) */
  int slots;             /* default 1 */
  const char *id;        /* default worker-<pid> */
  const char *host;      /* the address peers reach this worker's data port at (127.0.0.1) */
  int http_port;         /* -1: no HTTP; 0: any free port */
  int64_t max_memory;    /* each deployment's memory guard (ck_exec_opts_t); 0: none */
  const char *capture_dir; /* --capture-dir: every deployment records there; NULL: off */
  int64_t capture_records;
  const char *token;     /* CLINK_AUTH_TOKEN, sent with REGISTER (NULL: none) */
} ck_worker_opts_t;

/* Returns 0 after *stop, or an error: the HTTP port could not be served, or the coordinator
 * refused this worker for good (its id is taken by a live worker, or the token is wrong). */

int ck_worker_main(const ck_worker_opts_t *opts, volatile sig_atomic_t *stop, ck_error_t *err);

#endif
