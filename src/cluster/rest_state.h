/*
 * DESIGN: the REST API's state route, GET /api/v1/jobs/:id/state?sql=…[&format=json|ndjson],
 * shared by the coordinator (cluster/rest.c) and an embedded `clink run --http-port`
 * (cluster/rest_embedded.c): SQL over the job's newest completed checkpoint.
 *
 * The query runs in a child process — this same binary's `clink state-query --dir=DIR
 * --sql=…` (cli/cmd_state_query.c), so it is evaluated by clink's own planner and operators
 * and a query that goes wrong (memory, a bug) cannot take the server down with it. The child
 * chooses the newest completed checkpoint from the directory's markers, reads every subtask's
 * file of that one checkpoint (never a mix of two) and says which; the answer names it in the
 * X-Clink-Checkpoint header and, as JSON (the default), as
 * {"job":1,"checkpoint":7,"rows":[{…},…]}; with format=ndjson the body is the rows, one JSON
 * object a line. Bad SQL is 400 with the error rendered with its line:column, no completed
 * checkpoint yet is 404, a query past CK_REST_STATE_TIMEOUT_MS is killed (504), an answer
 * beyond CK_REST_STATE_MAX_BYTES is refused (413).
 *
 * Threads: the caller's (a libmicrohttpd connection thread), with no lock held: it blocks
 * until the child ends.
 */
#ifndef CK_CLUSTER_REST_STATE_H
#define CK_CLUSTER_REST_STATE_H

#include <stdint.h>

#include "cluster/http.h"

#define CK_REST_STATE_TIMEOUT_MS 60000
#define CK_REST_STATE_MAX_BYTES ((size_t)64 << 20)

/* Answers the state route for job job_id, which checkpoints into dir (a cluster job's
 * <checkpoint-dir>/job-<id>, or an embedded job's --checkpoint-dir), query being the
 * request's raw query string. */
void ck_rest_state_answer(int64_t job_id, const char *dir, const char *query,
                          ck_http_resp_t *resp);

#endif
