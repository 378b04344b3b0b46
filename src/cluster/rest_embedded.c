/*
 * DESIGN: see rest_embedded.h.
 */
#include "cluster/rest_embedded.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/thread.h"
#include "checkpoint/store.h"
#include "cluster/opmetrics.h"
#include "cluster/rest_state.h"
#include "runtime/metrics.h"

struct ck_rest_embedded {
  ck_mutex_t mu;           /* guards ex, status, deployments */
  ck_exec_t *ex;           /* the running deployment's, or NULL */
  const char *status;      /* "DEPLOYING", "RUNNING", "RESTARTING", then how it ended */
  int deployments;
  char *name, *dir, *token;
  ck_http_guard_t guard;
  ck_http_t *http;
};

#define JOB_ID 1

static bool route_job(const char *const *params, ck_http_resp_t *resp) {
  int64_t id;
  if (ck_http_param_id(params[0], &id)) {
    ck_http_error(resp, 400, "'%s' is not a job id", params[0]);
    return false;
  }
  if (id != JOB_ID) {
    ck_http_error(resp, 404, "no job %lld (this embedded run serves its one job, id 1)",
                  (long long)id);
    return false;
  }
  return true;
}

static int64_t latest(const ck_rest_embedded_t *srv, const char *kind) {
  if (!srv->dir) return 0;
  char root[4200];
  snprintf(root, sizeof root, "%s/v1", srv->dir);
  ck_store_t store = {root};
  return ck_store_latest(&store, kind);
}

/* Called with srv->mu held. */
static void job_json(ck_rest_embedded_t *srv, ck_buf_t *out) {
  ck_buf_printf(out, "{\"id\":%d,\"name\":", JOB_ID);
  ck_buf_put_json_str(out, srv->name, strlen(srv->name));
  ck_buf_printf(out, ",\"status\":\"%s\",\"mode\":\"embedded\",\"restarts\":%d,"
                "\"last_checkpoint\":%lld,\"checkpoint_dir\":", srv->status,
                srv->deployments > 0 ? srv->deployments - 1 : 0,
                (long long)latest(srv, "completed"));
  if (srv->dir) ck_buf_put_json_str(out, srv->dir, strlen(srv->dir));
  else ck_buf_puts(out, "null");
  ck_buf_putc(out, '}');
}

static void r_health(void *ctx, const ck_http_req_t *req, const char *const *params,
                     ck_http_resp_t *resp) {
  ck_buf_puts(&resp->body, "{\"status\":\"ok\",\"role\":\"embedded\"}");
}

static void r_jobs(void *ctx, const ck_http_req_t *req, const char *const *params,
                   ck_http_resp_t *resp) {
  ck_buf_puts(&resp->body, "{\"jobs\":[");
  job_json(ctx, &resp->body);
  ck_buf_puts(&resp->body, "]}");
}

static void r_job(void *ctx, const ck_http_req_t *req, const char *const *params,
                  ck_http_resp_t *resp) {
  if (route_job(params, resp)) job_json(ctx, &resp->body);
}

static void r_operators(void *ctx, const ck_http_req_t *req, const char *const *params,
                        ck_http_resp_t *resp) {
  ck_rest_embedded_t *srv = ctx;
  if (!route_job(params, resp)) return;
  ck_buf_printf(&resp->body, "{\"id\":%d,\"status\":\"%s\",\"operators\":", JOB_ID,
                srv->status);
  if (srv->ex) ck_exec_metrics_json(srv->ex, &resp->body); /* a JSON array */
  else ck_buf_puts(&resp->body, "[]");
  ck_buf_putc(&resp->body, '}');
}

static void r_checkpoints(void *ctx, const ck_http_req_t *req, const char *const *params,
                          ck_http_resp_t *resp) {
  ck_rest_embedded_t *srv = ctx;
  if (!route_job(params, resp)) return;
  int64_t done = latest(srv, "completed");
  ck_buf_printf(&resp->body, "{\"id\":%d,\"directory\":", JOB_ID);
  if (srv->dir) ck_buf_put_json_str(&resp->body, srv->dir, strlen(srv->dir));
  else ck_buf_puts(&resp->body, "null");
  ck_buf_printf(&resp->body, ",\"latest_completed\":%lld,\"latest_confirmed\":%lld,"
                "\"checkpoints\":[", (long long)done, (long long)latest(srv, "confirmed"));
  if (srv->dir) {
    char root[4200];
    snprintf(root, sizeof root, "%s/v1", srv->dir);
    ck_store_t store = {root};
    bool first = true;
    for (int64_t id = done; id > 0 && id > done - 10; id--) {
      if (!ck_store_marked(&store, "completed", id)) continue;
      ck_buf_printf(&resp->body, "%s{\"id\":%lld,\"status\":\"%s\"}", first ? "" : ",",
                    (long long)id,
                    ck_store_marked(&store, "confirmed", id) ? "CONFIRMED" : "COMPLETED");
      first = false;
    }
  }
  ck_buf_puts(&resp->body, "]}");
}

/* Called with srv->mu held: releases it while the query runs (it reads files only). */
static void r_state(void *ctx, const ck_http_req_t *req, const char *const *params,
                    ck_http_resp_t *resp) {
  ck_rest_embedded_t *srv = ctx;
  if (!route_job(params, resp)) return;
  ck_mutex_unlock(&srv->mu);
  ck_rest_state_answer(JOB_ID, srv->dir, req->query, resp);
  ck_mutex_lock(&srv->mu);
}

static void r_metrics(void *ctx, const ck_http_req_t *req, const char *const *params,
                      ck_http_resp_t *resp) {
  ck_rest_embedded_t *srv = ctx;
  resp->content_type = "text/plain; version=0.0.4";
  ck_buf_t *b = &resp->body, ops;
  ck_buf_init(&ops);
  if (srv->ex) ck_exec_metrics_json(srv->ex, &ops);
  for (int m = 0; m < CK_METRIC_COUNT; m++) {
    const char *prom = ck_metric_defs[m].prom;
    switch (ck_metric_defs[m].scope) {
      case CK_METRIC_OPERATOR:
        ck_opmetrics_prom_header(b, m);
        ck_opmetrics_prom_samples(b, m, JOB_ID, "embedded", ops.len ? ops.data : NULL);
        break;
      case CK_METRIC_JOB:
        ck_opmetrics_prom_header(b, m);
        if (m == CK_M_JOB_STATUS)
          ck_buf_printf(b, "%s{job=\"%d\",status=\"%s\"} 1\n", prom, JOB_ID, srv->status);
        else if (m == CK_M_JOB_LAST_CHECKPOINT)
          ck_buf_printf(b, "%s{job=\"%d\"} %lld\n", prom, JOB_ID,
                        (long long)latest(srv, "completed"));
        else if (m == CK_M_JOB_RESTARTS)
          ck_buf_printf(b, "%s{job=\"%d\"} %d\n", prom, JOB_ID,
                        srv->deployments > 0 ? srv->deployments - 1 : 0);
        break;
      default: /* cluster rows (workers, …) have no meaning in one process */
        break;
    }
  }
  ck_buf_fini(&ops);
}

const ck_http_route_t ck_rest_embedded_routes[] = {
    {"GET", "/api/v1/health", true, r_health, "liveness: 200 while the job's process runs", false},
    {"GET", "/api/v1/jobs", false, r_jobs, "the one job: id 1, name, status", false},
    {"GET", "/api/v1/jobs/:id", false, r_job, "the job", false},
    {"GET", "/api/v1/jobs/:id/operators", false, r_operators, "per operator and subtask: every operator metric, live", false},
    {"GET", "/api/v1/jobs/:id/checkpoints", false, r_checkpoints, "latest completed/confirmed, recent checkpoints", false},
    {"GET", "/api/v1/jobs/:id/state", false, r_state, "?sql=SELECT…[&format=ndjson]: SQL over the newest completed checkpoint", true},
    {"GET", "/metrics", false, r_metrics, "Prometheus text format: the operator and job rows", false},
};
const size_t ck_rest_embedded_nroutes =
    sizeof ck_rest_embedded_routes / sizeof *ck_rest_embedded_routes;

static void serve(void *ctx, const ck_http_req_t *req, ck_http_resp_t *resp) {
  ck_rest_embedded_t *srv = ctx;
  ck_mutex_lock(&srv->mu);
  ck_http_dispatch(ck_rest_embedded_routes, ck_rest_embedded_nroutes, &srv->guard, srv, req,
                   resp);
  ck_mutex_unlock(&srv->mu);
}

int ck_rest_embedded_start(int port, const char *name, const char *checkpoint_dir,
                           const char *token, ck_rest_embedded_t **out, ck_error_t *err) {
  ck_rest_embedded_t *srv = ck_calloc(1, sizeof *srv);
  ck_mutex_init(&srv->mu);
  srv->status = "DEPLOYING";
  srv->name = ck_strdup(name ? name : "job");
  srv->dir = checkpoint_dir ? ck_strdup(checkpoint_dir) : NULL;
  srv->token = token && *token ? ck_strdup(token) : NULL;
  srv->guard = (ck_http_guard_t){.token = srv->token, .refuse_writes = false, .json_writes = true};
  int rc = ck_http_start("127.0.0.1", port, serve, srv, &srv->http, err);
  if (rc) {
    ck_rest_embedded_stop(srv);
    return rc;
  }
  *out = srv;
  return 0;
}

int ck_rest_embedded_port(const ck_rest_embedded_t *srv) { return ck_http_port(srv->http); }

void ck_rest_embedded_on_exec(void *ctx, ck_exec_t *ex) {
  ck_rest_embedded_t *srv = ctx;
  ck_mutex_lock(&srv->mu);
  srv->ex = ex;
  if (ex) srv->deployments++;
  srv->status = ex ? "RUNNING" : "RESTARTING";
  ck_mutex_unlock(&srv->mu);
}

void ck_rest_embedded_ended(ck_rest_embedded_t *srv, const char *status) {
  ck_mutex_lock(&srv->mu);
  srv->status = status;
  ck_mutex_unlock(&srv->mu);
}

void ck_rest_embedded_stop(ck_rest_embedded_t *srv) {
  if (!srv) return;
  ck_http_stop(srv->http);
  ck_mutex_fini(&srv->mu);
  ck_free(srv->name);
  ck_free(srv->dir);
  ck_free(srv->token);
  ck_free(srv);
}
