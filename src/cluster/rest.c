/*
 * DESIGN: the coordinator's REST API — the one table of routes (ck_coordinator_routes;
 * docs/cluster.md's route table is generated from it and a test keeps them equal), its
 * handlers (r_*), the JSON the routes answer (job_json, shared with the CLI's LIST) and the
 * reader of a submission's body (parse_submit: bounded by the body's length, never by a NUL).
 *
 * Threads: libmicrohttpd's, one per connection (cluster/http.c), or the detached
 * coordinator's single caller (the REST fuzz target). ck_co_rest_serve takes co->mu around
 * every handler but health's, which reads only what is fixed before the server starts, so it
 * answers even while the control loop is held up. A submission releases co->mu while its SQL
 * is planned (ck_co_job_submit): planning may wait on the network.
 *
 * Owns nothing: every handler reads or changes the coordinator's state (coordinator_int.h)
 * and writes its answer into the request's response.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/alloc.h"
#include "base/time.h"
#include "checkpoint/coord.h"
#include "cluster/coordinator_int.h"
#include "cluster/http.h"
#include "cluster/opmetrics.h"
#include "cluster/rest_state.h"
#include "runtime/metrics.h"

static void job_json(co_t *co, const job_t *job, ck_buf_t *out) {
  ck_buf_printf(out, "{\"id\":%lld,\"name\":", (long long)job->id);
  ck_buf_put_json_str(out, job->name, strlen(job->name));
  ck_buf_printf(out, ",\"status\":\"%s\",\"error_count\":%d,\"restarts\":%d,\"parallelism\":%d,"
                "\"tasks\":%d,\"guarantee\":", status_name(job->status), job->error_count,
                job->life.restarts, job->parallelism, job->plan.ntasks);
  ck_buf_put_json_str(out, job->guarantee, strlen(job->guarantee));
  ck_buf_printf(out, ",\"last_checkpoint\":%lld,\"restore_point\":%lld,\"error\":",
                (long long)(job->store_open ? job->ck.last_completed : 0),
                (long long)job->life.point.restore_id);
  if (job->error) ck_buf_put_json_str(out, job->error, strlen(job->error));
  else ck_buf_puts(out, "null");
  ck_buf_puts(out, ",\"capture_dir\":");
  if (job->capture_dir) ck_buf_put_json_str(out, job->capture_dir, strlen(job->capture_dir));
  else ck_buf_puts(out, "null");
  ck_buf_puts(out, ",\"workers\":[");
  for (int i = 0; i < job->nparts; i++) {
    worker_t *w = find_worker(co, job->parts[i].worker);
    if (i) ck_buf_putc(out, ',');
    ck_buf_put_json_str(out, w->id, strlen(w->id));
  }
  ck_buf_puts(out, "]}");
}

void ck_co_rest_jobs_json(co_t *co, ck_buf_t *out) {
  ck_buf_puts(out, "{\"jobs\":[");
  for (int j = 0; j < co->njobs; j++) {
    if (j) ck_buf_putc(out, ',');
    job_json(co, co->jobs[j], out);
  }
  ck_buf_puts(out, "]}");
}

static job_t *route_job(co_t *co, const char *const *params, ck_http_resp_t *resp) {
  int64_t id;
  if (ck_http_param_id(params[0], &id)) {
    ck_http_error(resp, 400, "'%s' is not a job id", params[0]);
    return NULL;
  }
  job_t *job = find_job(co, id);
  if (!job) ck_http_error(resp, 404, "no job %lld", (long long)id);
  return job;
}

/* Called without co->mu (ck_co_rest_serve): reads only what is fixed before the server starts. */
static void r_health(void *ctx, const ck_http_req_t *req, const char *const *params,
                     ck_http_resp_t *resp) {
  co_t *co = ctx;
  ck_buf_printf(&resp->body, "{\"status\":\"ok\",\"role\":\"coordinator\",\"epoch\":%llu}",
                (unsigned long long)co->epoch);
}

static void r_jobs(void *ctx, const ck_http_req_t *req, const char *const *params,
                   ck_http_resp_t *resp) {
  ck_co_rest_jobs_json(ctx, &resp->body);
}

static void r_job(void *ctx, const ck_http_req_t *req, const char *const *params,
                  ck_http_resp_t *resp) {
  job_t *job = route_job(ctx, params, resp);
  if (job) job_json(ctx, job, &resp->body);
}

static void r_operators(void *ctx, const ck_http_req_t *req, const char *const *params,
                        ck_http_resp_t *resp) {
  co_t *co = ctx;
  job_t *job = route_job(co, params, resp);
  if (!job) return;
  ck_buf_printf(&resp->body, "{\"id\":%lld,\"status\":\"%s\",\"operators\":[",
                (long long)job->id, status_name(job->status));
  bool first = true;
  for (int i = 0; i < job->nparts; i++) {
    const char *m = job->parts[i].metrics;
    if (!m || strlen(m) < 3) continue; /* "[]" */
    worker_t *w = find_worker(co, job->parts[i].worker);
    /* the worker's array, each object tagged with the worker's id */
    const char *p = m + 1;
    while (*p && *p != ']') {
      const char *end = strchr(p, '}');
      if (!end) break;
      if (!first) ck_buf_putc(&resp->body, ',');
      first = false;
      ck_buf_append(&resp->body, p, (size_t)(end - p));
      ck_buf_puts(&resp->body, ",\"worker\":");
      ck_buf_put_json_str(&resp->body, w->id, strlen(w->id));
      ck_buf_putc(&resp->body, '}');
      p = end + 1;
      if (*p == ',') p++;
    }
  }
  ck_buf_puts(&resp->body, "]}");
}

static void r_checkpoints(void *ctx, const ck_http_req_t *req, const char *const *params,
                          ck_http_resp_t *resp) {
  job_t *job = route_job(ctx, params, resp);
  if (!job) return;
  const ck_ckpt_coord_t *c = &job->ck;
  bool open = job->store_open;
  ck_buf_printf(&resp->body, "{\"id\":%lld,\"directory\":", (long long)job->id);
  ck_buf_put_json_str(&resp->body, job->dir, strlen(job->dir));
  ck_buf_printf(&resp->body, ",\"latest_completed\":%lld,\"latest_confirmed\":%lld,"
                "\"in_flight\":%lld,\"completed_this_run\":%lld,\"restore_point\":%lld,"
                "\"checkpoints\":[", (long long)(open ? c->last_completed : 0),
                (long long)(open ? c->last_confirmed : 0), (long long)(open ? c->pending : 0),
                (long long)(open ? c->completed_count : 0), (long long)job->life.point.restore_id);
  bool first = true;
  if (open) {
    int64_t hi = c->last_completed;
    for (int64_t id = hi; id > 0 && id > hi - 10; id--) {
      bool done = ck_store_marked(&job->store, "completed", id);
      if (!done) continue;
      bool conf = ck_store_marked(&job->store, "confirmed", id);
      if (!first) ck_buf_putc(&resp->body, ',');
      first = false;
      ck_buf_printf(&resp->body, "{\"id\":%lld,\"status\":\"%s\"}", (long long)id,
                    conf ? "CONFIRMED" : "COMPLETED");
    }
  }
  ck_buf_puts(&resp->body, "]}");
}

/* Runs the query with co->mu released (it reads files, in a child process, for up to a
 * minute: the control loop must not wait for it) and taken again before returning, as
 * ck_co_rest_serve expects. The job's directory is copied first; the job itself is not
 * touched once the lock is released. */
static void r_state(void *ctx, const ck_http_req_t *req, const char *const *params,
                    ck_http_resp_t *resp) {
  co_t *co = ctx;
  job_t *job = route_job(co, params, resp);
  if (!job) return;
  if (!job->store_open || job->ck.last_completed <= 0) { /* (a detached coordinator's jobs
                                                            never deploy: no child runs) */
    ck_http_error(resp, 404, "job %lld has no completed checkpoint yet", (long long)job->id);
    return;
  }
  int64_t id = job->id;
  char *dir = ck_strdup(job->dir);
  ck_mutex_unlock(&co->mu);
  ck_rest_state_answer(id, dir, req->query, resp);
  ck_mutex_lock(&co->mu);
  ck_free(dir);
}

static void r_workers(void *ctx, const ck_http_req_t *req, const char *const *params,
                      ck_http_resp_t *resp) {
  co_t *co = ctx;
  int64_t now = ck_mono_ms();
  ck_buf_puts(&resp->body, "{\"workers\":[");
  bool first = true;
  for (int i = 0; i < co->nworkers; i++) {
    worker_t *w = co->workers[i];
    if (!first) ck_buf_putc(&resp->body, ',');
    first = false;
    ck_buf_puts(&resp->body, "{\"id\":");
    ck_buf_put_json_str(&resp->body, w->id, strlen(w->id));
    ck_buf_printf(&resp->body, ",\"status\":\"%s\",\"slots\":%d,\"free_slots\":%d,\"pid\":%d,"
                  "\"last_heartbeat_ms_ago\":%lld}", w->alive ? "REGISTERED" : "LOST", w->slots,
                  free_slots(co, i), w->pid, (long long)(now - w->last_hb));
  }
  ck_buf_puts(&resp->body, "]}");
}

/*
 * A tiny reader for the submit body: {"sql": "...", "name": "...", "parallelism": 2,
 * "capture_dir": "/abs/dir", "capture_records": 500} (the last two: per-job options). Every
 * read is bounded by the body's length (json_t.end), never by a NUL: a body may be empty, hold
 * NULs, or stop in the middle of a token.
 */
typedef struct json {
  const char *p, *end, *start;
} json_t;

static void json_skip_ws(json_t *j) {
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
    j->p++;
}

static int json_peek(const json_t *j) { return j->p < j->end ? (unsigned char)*j->p : -1; }

static int json_hex4(json_t *j, unsigned *v) {
  if (j->end - j->p < 4 || ck_hex4(j->p, v)) return -1;
  j->p += 4;
  return 0;
}

static void json_put_utf8(ck_buf_t *out, unsigned v) {
  char u[4];
  ck_buf_append(out, u, ck_utf8_put(u, v));
}

/* A JSON string into out (NUL-terminated). 0, or -1 with why: malformed, or a NUL character
 * in it (the SQL and names are C strings: a NUL would silently end them). */
static int json_string(json_t *j, ck_buf_t *out, char *why, size_t whylen) {
  if (json_peek(j) != '"') return snprintf(why, whylen, "expected a JSON string"), -1;
  for (j->p++; j->p < j->end && *j->p != '"'; j->p++) {
    size_t at = (size_t)(j->p - j->start);
    if (*j->p == 0)
      return snprintf(why, whylen, "a NUL byte at offset %zu of the body, inside a string", at),
             -1;
    if (*j->p != '\\') {
      ck_buf_putc(out, *j->p);
      continue;
    }
    if (++j->p == j->end) break;
    switch (*j->p) {
      case 'n': ck_buf_putc(out, '\n'); break;
      case 't': ck_buf_putc(out, '\t'); break;
      case 'r': ck_buf_putc(out, '\r'); break;
      case 'b': ck_buf_putc(out, '\b'); break;
      case 'f': ck_buf_putc(out, '\f'); break;
      case '"': case '\\': case '/': ck_buf_putc(out, *j->p); break;
      case 'u': {
        j->p++;
        unsigned v, lo;
        if (json_hex4(j, &v))
          return snprintf(why, whylen, "a \\u escape at offset %zu needs four hex digits", at),
                 -1;
        if (v >= 0xd800 && v < 0xdc00) { /* a surrogate pair */
          if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
            return snprintf(why, whylen, "an unpaired surrogate \\u%04x at offset %zu", v, at),
                   -1;
          j->p += 2;
          if (json_hex4(j, &lo) || lo < 0xdc00 || lo > 0xdfff)
            return snprintf(why, whylen, "an unpaired surrogate \\u%04x at offset %zu", v, at),
                   -1;
          v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
        } else if (v >= 0xdc00 && v < 0xe000) {
          return snprintf(why, whylen, "an unpaired surrogate \\u%04x at offset %zu", v, at), -1;
        }
        if (v == 0)
          return snprintf(why, whylen, "a NUL character (\\u0000) at offset %zu of the body, "
                          "inside a string", at), -1;
        json_put_utf8(out, v);
        j->p--; /* the loop steps past the last hex digit */
        break;
      }
      default:
        return snprintf(why, whylen, "an invalid escape '\\%c' at offset %zu",
                        *j->p >= 0x20 && *j->p < 0x7f ? *j->p : '?', at), -1;
    }
  }
  if (j->p >= j->end) return snprintf(why, whylen, "an unterminated string"), -1;
  j->p++;
  ck_buf_reserve(out, 0);
  out->data[out->len] = 0;
  return 0;
}

static int parse_submit(const char *body, size_t len, ck_buf_t *sql, ck_buf_t *name, int *par,
                        ck_buf_t *capture_dir, int64_t *capture_records, char *why,
                        size_t whylen) {
  json_t j = {body, body + len, body};
  char sub[160];
  json_skip_ws(&j);
  if (json_peek(&j) != '{')
    return snprintf(why, whylen, "the body must be a JSON object%s",
                    len ? "" : " (it is empty)"), -1;
  j.p++;
  json_skip_ws(&j);
  while (json_peek(&j) != '}') {
    ck_buf_t key;
    ck_buf_init(&key);
    if (json_string(&j, &key, sub, sizeof sub)) {
      ck_buf_fini(&key);
      return snprintf(why, whylen, "malformed JSON: expected a quoted key (%s)", sub), -1;
    }
    json_skip_ws(&j);
    if (json_peek(&j) != ':') {
      ck_buf_fini(&key);
      return snprintf(why, whylen, "malformed JSON: expected ':'"), -1;
    }
    j.p++;
    json_skip_ws(&j);
    if (!strcmp(key.data, "sql") || !strcmp(key.data, "name") ||
        !strcmp(key.data, "capture_dir")) {
      ck_buf_t *dst = key.data[0] == 's' ? sql : key.data[0] == 'n' ? name : capture_dir;
      ck_buf_reset(dst);
      if (json_string(&j, dst, sub, sizeof sub)) {
        snprintf(why, whylen, "'%s' must be a JSON string: %s", key.data, sub);
        ck_buf_fini(&key);
        return -1;
      }
    } else if (!strcmp(key.data, "parallelism")) {
      long v = 0;
      int digits = 0;
      while (j.p < j.end && *j.p >= '0' && *j.p <= '9' && digits < 6)
        v = v * 10 + (*j.p++ - '0'), digits++;
      if (!digits || v < 1 || v > 4096 || (j.p < j.end && *j.p >= '0' && *j.p <= '9')) {
        ck_buf_fini(&key);
        return snprintf(why, whylen, "'parallelism' must be a whole number from 1 to 4096"), -1;
      }
      *par = (int)v;
    } else if (!strcmp(key.data, "capture_records")) {
      long long v = 0;
      int digits = 0;
      while (j.p < j.end && *j.p >= '0' && *j.p <= '9' && digits < 10)
        v = v * 10 + (*j.p++ - '0'), digits++;
      if (!digits || v < 1 || v > 1000000000 || (j.p < j.end && *j.p >= '0' && *j.p <= '9')) {
        ck_buf_fini(&key);
        return snprintf(why, whylen, "'capture_records' must be a whole number from 1 to "
                        "1000000000"), -1;
      }
      *capture_records = v;
    } else {
      snprintf(why, whylen, "unknown field '%.64s' (expected sql, name, parallelism, "
               "capture_dir, capture_records)", key.data);
      ck_buf_fini(&key);
      return -1;
    }
    ck_buf_fini(&key);
    json_skip_ws(&j);
    if (json_peek(&j) == ',') j.p++, json_skip_ws(&j);
    else if (json_peek(&j) != '}')
      return snprintf(why, whylen, json_peek(&j) < 0 ? "malformed JSON: unterminated object"
                                                     : "malformed JSON: expected ',' or '}'"),
             -1;
  }
  j.p++;
  json_skip_ws(&j);
  if (j.p != j.end)
    return snprintf(why, whylen, "malformed JSON: something follows the object at offset %zu",
                    (size_t)(j.p - j.start)), -1;
  if (!sql->len) return snprintf(why, whylen, "the body needs a non-empty \"sql\""), -1;
  return 0;
}

static void r_submit(void *ctx, const ck_http_req_t *req, const char *const *params,
                     ck_http_resp_t *resp) {
  co_t *co = ctx;
  ck_buf_t sql, name, capture_dir;
  ck_buf_init(&sql);
  ck_buf_init(&name);
  ck_buf_init(&capture_dir);
  int par = 1;
  int64_t capture_records = 0;
  char why[256];
  if (parse_submit(req->body, req->body_len, &sql, &name, &par, &capture_dir, &capture_records,
                   why, sizeof why)) {
    ck_http_error(resp, 400, "%s", why);
  } else {
    ck_error_t err;
    ck_error_clear(&err);
    int64_t id;
    const char *guarantee;
    ck_co_job_opts_t jo = {capture_dir.len ? capture_dir.data : NULL, capture_records};
    /* called with co->mu held (ck_co_rest_serve), which the planning releases */
    if (capture_dir.len != (capture_dir.data ? strlen(capture_dir.data) : 0)) {
      ck_http_error(resp, 400, "'capture_dir' holds a NUL character");
    } else if (ck_co_job_submit(co, name.data, sql.data, par, &jo, &id, &guarantee, &err)) {
      ck_http_error(resp, 400, "%s", err.message);
    } else {
      resp->status = 201;
      ck_buf_printf(&resp->body, "{\"id\":%lld,\"guarantee\":", (long long)id);
      ck_buf_put_json_str(&resp->body, guarantee, strlen(guarantee));
      ck_buf_putc(&resp->body, '}');
    }
  }
  ck_buf_fini(&sql);
  ck_buf_fini(&name);
  ck_buf_fini(&capture_dir);
}

static void r_cancel(void *ctx, const ck_http_req_t *req, const char *const *params,
                     ck_http_resp_t *resp) {
  co_t *co = ctx;
  job_t *job = route_job(co, params, resp);
  if (!job) return;
  ck_error_t err;
  ck_error_clear(&err);
  ck_co_job_cancel(co, job->id, &err);
  ck_buf_printf(&resp->body, "{\"id\":%lld,\"status\":\"%s\"}", (long long)job->id,
                status_name(job->status));
}

/* The value of a cluster row (runtime/metrics.h) now. */
static long long cluster_value(co_t *co, int m) {
  int alive = 0;
  switch (m) {
    case CK_M_WORKERS:
      for (int i = 0; i < co->nworkers; i++) alive += co->workers[i]->alive;
      return alive;
    case CK_M_WORKERS_LOST: return co->workers_lost_total;
    case CK_M_RESTARTS: return co->restarts_total;
    case CK_M_CHECKPOINTS: return co->checkpoints_completed_total;
    default: return 0;
  }
}

/* The samples of a job row for one job. */
static void job_samples(ck_buf_t *b, int m, const job_t *job) {
  const char *prom = ck_metric_defs[m].prom;
  switch (m) {
    case CK_M_JOB_STATUS:
      ck_buf_printf(b, "%s{job=\"%lld\",status=\"%s\"} 1\n", prom, (long long)job->id,
                    status_name(job->status));
      break;
    case CK_M_JOB_LAST_CHECKPOINT:
      ck_buf_printf(b, "%s{job=\"%lld\"} %lld\n", prom, (long long)job->id,
                    (long long)(job->store_open ? job->ck.last_completed : 0));
      break;
    case CK_M_JOB_RESTARTS:
      ck_buf_printf(b, "%s{job=\"%lld\"} %d\n", prom, (long long)job->id, job->life.restarts);
      break;
  }
}

/* Every row of the metrics table, in its order: a HELP and TYPE line, then its samples. */
static void r_metrics(void *ctx, const ck_http_req_t *req, const char *const *params,
                      ck_http_resp_t *resp) {
  co_t *co = ctx;
  resp->content_type = "text/plain; version=0.0.4";
  ck_buf_t *b = &resp->body;
  for (int m = 0; m < CK_METRIC_COUNT; m++) {
    ck_opmetrics_prom_header(b, m);
    switch (ck_metric_defs[m].scope) {
      case CK_METRIC_CLUSTER:
        ck_buf_printf(b, "%s %lld\n", ck_metric_defs[m].prom, cluster_value(co, m));
        break;
      case CK_METRIC_JOB:
        for (int j = 0; j < co->njobs; j++) job_samples(b, m, co->jobs[j]);
        break;
      case CK_METRIC_OPERATOR: /* from the workers' last heartbeats */
        for (int j = 0; j < co->njobs; j++)
          for (int i = 0; i < co->jobs[j]->nparts; i++) {
            worker_t *w = find_worker(co, co->jobs[j]->parts[i].worker);
            ck_opmetrics_prom_samples(b, m, co->jobs[j]->id, w ? w->id : "",
                                      co->jobs[j]->parts[i].metrics);
          }
        break;
    }
  }
}

const ck_http_route_t ck_coordinator_routes[] = {
    {"GET", "/api/v1/health", true, r_health, "liveness: 200 while the coordinator runs"},
    {"GET", "/api/v1/jobs", false, r_jobs, "every job: id, name, status, error_count, restarts, guarantee"},
    {"POST", "/api/v1/jobs/sql", false, r_submit, "submit {\"sql\":…, \"name\":…, \"parallelism\":…, \"capture_dir\":…, \"capture_records\":…}; 201 {\"id\":…}"},
    {"GET", "/api/v1/jobs/:id", false, r_job, "one job, with its last error and its workers"},
    {"GET", "/api/v1/jobs/:id/operators", false, r_operators, "per operator and subtask: every operator metric (docs/cluster.md, metrics)"},
    {"GET", "/api/v1/jobs/:id/checkpoints", false, r_checkpoints, "latest completed/confirmed, in flight, recent checkpoints"},
    {"GET", "/api/v1/jobs/:id/state", false, r_state, "?sql=SELECT…[&format=ndjson]: SQL over the job's newest completed checkpoint (docs/state.md); names it in X-Clink-Checkpoint", true},
    {"POST", "/api/v1/jobs/:id/cancel", false, r_cancel, "cancel the job"},
    {"GET", "/api/v1/workers", false, r_workers, "registered workers, slots, heartbeats"},
    {"GET", "/metrics", false, r_metrics, "Prometheus text format"},
};
const size_t ck_coordinator_nroutes = sizeof ck_coordinator_routes / sizeof *ck_coordinator_routes;

/* libmicrohttpd's threads (one per connection): every route runs under co->mu, except that
 * r_submit releases it while it plans, and health, which reads only the epoch (fixed before
 * the server starts), takes no lock: it answers even while the control loop is held up. */
void ck_co_rest_serve(void *ctx, const ck_http_req_t *req, ck_http_resp_t *resp) {
  co_t *co = ctx;
  bool health = req->path && !strcmp(req->path, "/api/v1/health") &&
                !ck_http_method_writes(req->method);
  if (!health) ck_mutex_lock(&co->mu);
  ck_http_dispatch(ck_coordinator_routes, ck_coordinator_nroutes, &co->guard, co, req, resp);
  if (!health) ck_mutex_unlock(&co->mu);
}
