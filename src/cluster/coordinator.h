/*
 * DESIGN: the coordinator — the control plane of a clink cluster.
 *
 * One process that accepts workers (register, heartbeats every 500 ms, three missed → lost),
 * accepts jobs (SQL text, a name, a parallelism) from `clink run --coordinator-host` and from
 * POST /api/v1/jobs/sql, places each job's subtasks on worker slots (slot p of a job runs
 * subtask p of every operator), deploys them in two steps (DEPLOY: the job graph planned here,
 * serialised — each worker builds it without the SQL, opens its data port and builds its
 * subtasks; START: every worker learns every peer's data
 * port and runs), and drives the job's checkpoints with the same state machine as the
 * embedded run (checkpoint/coord.h): TRIGGER to the workers, ACKs back, COMPLETED written
 * here, COMMIT out, COMMITTED back, CONFIRMED written here.
 *
 * A lost worker or a failed subtask cancels the job's deployment everywhere, and once every
 * worker stopped it (or was lost) the whole job restarts from the restore point the job module
 * chooses (job/job.h, checkpoint/lineage.h's rule) when enough slots are free. Whether a
 * failure restarts, rewinds or fails the job, the lifetime budget of restarts, the backoff and
 * the decision's log line are the job module's one policy (job/policy.h), the embedded run's.
 *
 * With --ha-dir, the coordinator takes a leader lock there, raises a durable epoch (stamped on
 * every frame; workers drop older epochs) and keeps one manifest per job, so a coordinator
 * started after a kill recovers every job that had not ended and restarts it from its last
 * checkpoint.
 *
 * Who may do what (docs/security.md): with CLINK_AUTH_TOKEN, every REST route but health and
 * every CLI frame and REGISTER need the token; without one on a non-loopback address, nothing
 * that changes state is served. A worker id belongs to one live worker (a second REGISTER with
 * it is refused). Connections that are not registered workers are bounded in number, frame
 * size and idle time, so none of them can lock out a worker or the CLI.
 *
 * Threads: the control loop (one thread: accept, read frames, timers), libmicrohttpd's threads
 * for the REST API (one per connection), a planner thread per control-port SUBMIT, and one
 * that plans the jobs an HA takeover recovers; all hold the coordinator's mutex while they
 * touch its state, and none holds it while planning (plan-time checks may wait on the
 * network; a REST submission releases it while it plans): planning is serialised by a mutex
 * of its own, and the control loop never plans.
 *
 * Files: coordinator.c (the control loop, jobs, deployments, restarts), conns.c (the control
 * port's connections, registration, the CLI's requests, planner threads), rest.c (the REST
 * API), ha.c (leader lock, epoch, manifests), coordinator_int.h (the state they share).
 */
#ifndef CK_CLUSTER_COORDINATOR_H
#define CK_CLUSTER_COORDINATOR_H

#include <signal.h>
#include <stdint.h>

#include "base/error.h"
#include "cluster/http.h"

/* The REST API: the one table of routes (docs/cluster.md is generated from it). */
extern const ck_http_route_t ck_coordinator_routes[];
extern const size_t ck_coordinator_nroutes;

typedef struct ck_coordinator_opts {
  const char *host;            /* bind address (default 127.0.0.1) */
  int port;                    /* control port */
  int http_port;               /* REST API; -1: none */
  const char *checkpoint_dir;  /* jobs checkpoint under <dir>/job-<id> */
  const char *ha_dir;          /* NULL: no high availability */
  const char *ha_url;          /* zookeeper://host:port[,…]/path: HA on ZooKeeper (ha_zk.c) */
  int ha_session_ms;           /* its session timeout (0: 10000) */
  int64_t checkpoint_interval_ms;
  int64_t checkpoint_timeout_ms; /* 0: checkpoint/coord.c's default */
  int checkpoints_retained;      /* completed checkpoints kept per job (0: coord.c's 3) */
  int max_restarts;            /* per job, lifetime; < 0: CK_JOB_RESTARTS_DEFAULT (job/policy.h) */
  int heartbeat_ms;            /* expected from workers (default 500) */
  int missed_heartbeats;       /* this many missed → worker lost (default 3) */
  const char *auth_token;      /* CLINK_AUTH_TOKEN: every route but health, every CLI frame
                                  and REGISTER need it */
} ck_coordinator_opts_t;

/*
 * A coordinator with no sockets, no threads and no HA directory, whose REST handler is called
 * directly: for the REST fuzz target (fuzz/rest_request.c) and tests. Jobs it accepts are
 * planned and kept (no worker ever registers, so none deploys). Single-threaded use only.
 */
typedef struct co ck_coordinator_t;
ck_coordinator_t *ck_coordinator_detached_new(const ck_coordinator_opts_t *opts);
/* Answers one request as the REST server would (guard, routes, handlers). */
void ck_coordinator_detached_http(ck_coordinator_t *co, const ck_http_req_t *req,
                                  ck_http_resp_t *resp);
void ck_coordinator_detached_free(ck_coordinator_t *co);

/* Runs until *stop becomes non-zero (SIGINT/SIGTERM). Returns 0 or an error (could not
 * listen, could not take the HA directory). */
int ck_coordinator_main(const ck_coordinator_opts_t *opts, volatile sig_atomic_t *stop,
                        ck_error_t *err);

#endif
