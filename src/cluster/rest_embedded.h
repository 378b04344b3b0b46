/*
 * DESIGN: the REST API of an embedded job — `clink run --http-port P` serves the coordinator's
 * read-only routes for its one job (id 1), so a single-process job is as observable as a
 * cluster one: health, jobs, the job, its operators (every operator metric, live), its
 * checkpoints (from the checkpoint directory's markers), its state (SQL over the newest
 * completed checkpoint, cluster/rest_state.h; token only) and /metrics (Prometheus). Same
 * paths, same JSON shapes, the same HTTP layer (cluster/http.h) and guard: with
 * CLINK_AUTH_TOKEN every route but health needs the bearer token; nothing that changes state
 * is served (no such route: 404). It listens on 127.0.0.1 only.
 *
 * The job's executor is handed over through ck_rest_embedded_on_exec (job/local.h's on_exec
 * hook): set while a deployment runs, cleared (under the server's lock) before it is freed,
 * so a handler never reads a freed executor.
 *
 * Threads: start/stop on the CLI's main thread; on_exec on the job's thread; handlers on
 * libmicrohttpd's connection threads, under the server's mutex (the state route without it).
 */
#ifndef CK_CLUSTER_REST_EMBEDDED_H
#define CK_CLUSTER_REST_EMBEDDED_H

#include "base/error.h"
#include "cluster/http.h"
#include "runtime/exec.h"

typedef struct ck_rest_embedded ck_rest_embedded_t;

/* The routes (for the docs and tests). */
extern const ck_http_route_t ck_rest_embedded_routes[];
extern const size_t ck_rest_embedded_nroutes;

/* Serves on 127.0.0.1:port (0: a free one) for the job named name, checkpointing into
 * checkpoint_dir (NULL: none), token (NULL or "": none). */
int ck_rest_embedded_start(int port, const char *name, const char *checkpoint_dir,
                           const char *token, ck_rest_embedded_t **out, ck_error_t *err);
int ck_rest_embedded_port(const ck_rest_embedded_t *srv);
/* The on_exec hook of job/local.h: ctx is the server. */
void ck_rest_embedded_on_exec(void *ctx, ck_exec_t *ex);
/* Marks the job ended with status ("FINISHED", "FAILED", "STOPPED"); the server keeps
 * answering until stopped. */
void ck_rest_embedded_ended(ck_rest_embedded_t *srv, const char *status);
void ck_rest_embedded_stop(ck_rest_embedded_t *srv);

#endif
