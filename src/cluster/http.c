/* DESIGN: see http.h. */
#include "cluster/http.h"

#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/thread.h"
#include "base/time.h"

#define LOG_SUB "http"
#define CONN_TIMEOUT_S 10u /* a client silent this long is dropped */
#define CONN_LIMIT 256u    /* libmicrohttpd's hard limit; more are refused at accept */
#define CONN_KEEP 64       /* past this many, a new connection evicts the longest-waiting one */
#define MAX_SEGS 32        /* path segments the dispatcher looks at; more: no route */

/* One TCP connection, from libmicrohttpd's "started" to its "closed" notification. */
typedef struct http_conn {
  struct http_conn *prev, *next;
  int fd;
  int64_t since;  /* opened, or its last answer sent */
  bool busy;      /* the handler is running for it: never evicted */
  bool evicted;   /* shut down to make room; closes soon */
} http_conn_t;

struct ck_http {
  struct MHD_Daemon *daemon;
  ck_mutex_t conns_mu; /* guards conns and nconns */
  http_conn_t *conns;  /* oldest first */
  int nconns;
  ck_http_handler_fn fn;
  void *ctx;
  int port;
  bool started;       /* ck_http_start has succeeded: messages now go to the debug log */
  ck_mutex_t log_mu;  /* guards last_log and started: the polling thread logs too */
  char last_log[256]; /* libmicrohttpd's last message, named in a failed start's error */
};

/*
 * One request's state, for the request's lifetime: created by the URI callback when the
 * request line arrives, freed by the completion callback whatever the request's fate.
 * Polling thread only.
 */
typedef struct http_call {
  char *uri;     /* the raw request target, query string included */
  ck_buf_t body; /* collected across the upload callbacks */
  bool started;  /* the access handler has seen the headers */
  bool too_big;  /* the body passed CK_HTTP_MAX_BODY: the rest is discarded, answer 413 */
} http_call_t;

/* ------------------------------------------------------------------ responses */

void ck_http_resp_init(ck_http_resp_t *resp) {
  resp->status = 200;
  resp->content_type = "application/json";
  ck_buf_init(&resp->body);
  ck_buf_init(&resp->headers);
}

void ck_http_resp_fini(ck_http_resp_t *resp) {
  ck_buf_fini(&resp->body);
  ck_buf_fini(&resp->headers);
}

/* headers holds "name\0value\0" pairs. */
void ck_http_resp_header(ck_http_resp_t *resp, const char *name, const char *value) {
  ck_assert(name && *name && !strpbrk(name, "\r\n\t :") && value);
  ck_buf_append(&resp->headers, name, strlen(name) + 1);
  size_t at = resp->headers.len;
  ck_buf_append(&resp->headers, value, strlen(value) + 1);
  /* A value may carry client text (a decoded path): it must not end the header. */
  for (char *p = resp->headers.data + at; *p; p++)
    if (*p == '\r' || *p == '\n') *p = ' ';
}

static void http_error_v(ck_http_resp_t *resp, int status, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  char *msg = ck_malloc(n > 0 ? (size_t)n + 1 : 1);
  if (n > 0) vsnprintf(msg, (size_t)n + 1, fmt, ap2);
  else msg[0] = 0;
  va_end(ap2);
  resp->status = status;
  resp->content_type = "application/json";
  ck_buf_reset(&resp->body);
  ck_buf_puts(&resp->body, "{\"error\":");
  ck_buf_put_json_str(&resp->body, msg, strlen(msg));
  ck_buf_putc(&resp->body, '}');
  ck_free(msg);
}

void ck_http_error(ck_http_resp_t *resp, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  http_error_v(resp, status, fmt, ap);
  va_end(ap);
}

/* An error phrase for a bare status: "Not Found" → "not found". */
static void http_error_for_status(ck_http_resp_t *resp, int status) {
  char phrase[64];
  snprintf(phrase, sizeof phrase, "%s", MHD_get_reason_phrase_for((unsigned)status));
  for (char *p = phrase; *p; p++)
    if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
  ck_http_error(resp, status, "%s", *phrase ? phrase : "error");
}

/* ------------------------------------------------------------------ dispatch */

int ck_http_param_id(const char *s, int64_t *out) {
  if (!s || !*s) return CK_EINVAL;
  int64_t v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9') return CK_EINVAL;
    int d = *p - '0';
    if (v > (INT64_MAX - d) / 10) return CK_EINVAL;
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}

/*
 * Splits a path ("/a/b") in place into its segments ("a", "b"); "/" is one empty segment.
 * Returns the count, or -1 when the path does not start with '/' or has more than max.
 */
static int http_split(char *path, char **segs, int max) {
  if (*path != '/') return -1;
  int n = 0;
  char *p = path + 1;
  for (;;) {
    if (n == max) return -1;
    segs[n++] = p;
    char *slash = strchr(p, '/');
    if (!slash) return n;
    *slash = 0;
    p = slash + 1;
  }
}

/* Matches pattern against the path's segments; captures ":name" segments into params. */
static bool http_match(const char *pattern, char *const *segs, int nseg, const char **params,
                       int *nparams) {
  if (*pattern != '/') return false;
  const char *p = pattern + 1;
  int np = 0;
  for (int i = 0; i < nseg; i++) {
    const char *end = strchr(p, '/');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > 0 && p[0] == ':') {
      if (!segs[i][0] || np == CK_HTTP_MAX_PARAMS) return false;
      params[np++] = segs[i];
    } else if (strlen(segs[i]) != len || memcmp(segs[i], p, len) != 0) {
      return false;
    }
    if (!end) {
      if (i != nseg - 1) return false; /* the path has more segments */
      *nparams = np;
      return true;
    }
    p = end + 1;
  }
  return false; /* the pattern has more segments */
}

static bool http_method_ok(const char *route_method, const char *method) {
  return strcmp(route_method, method) == 0 ||
         (strcmp(method, "HEAD") == 0 && strcmp(route_method, "GET") == 0);
}

bool ck_http_token_equal(const char *got, size_t got_len, const char *want) {
  if (!got || !want) return false;
  size_t want_len = strlen(want);
  unsigned diff = got_len != want_len;
  for (size_t i = 0; i < want_len; i++)
    diff |= (unsigned)(unsigned char)want[i] ^
            (unsigned)(unsigned char)(got_len ? got[i % got_len] : 0);
  return diff == 0;
}

/* "Bearer <token>" against token, in time that depends only on the lengths. */
static bool http_bearer_ok(const char *auth, const char *token) {
  if (!auth) return false;
  while (*auth == ' ' || *auth == '\t') auth++;
  if (strncasecmp(auth, "Bearer", 6) != 0 || (auth[6] != ' ' && auth[6] != '\t')) return false;
  const char *got = auth + 6;
  while (*got == ' ' || *got == '\t') got++;
  size_t got_len = strlen(got);
  while (got_len > 0 && (got[got_len - 1] == ' ' || got[got_len - 1] == '\t')) got_len--;
  return ck_http_token_equal(got, got_len, token);
}

bool ck_http_method_writes(const char *method) {
  return !method || (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0);
}

bool ck_http_content_type_is_json(const char *ct) {
  if (!ct) return false;
  while (*ct == ' ' || *ct == '\t') ct++;
  static const char want[] = "application/json";
  if (strncasecmp(ct, want, sizeof want - 1) != 0) return false;
  ct += sizeof want - 1;
  while (*ct == ' ' || *ct == '\t') ct++;
  return *ct == 0 || *ct == ';';
}

/* Appends method to a ", "-separated list unless it is there already. */
static void http_allow_add(ck_buf_t *allow, const char *method) {
  size_t n = strlen(method);
  for (const char *p = allow->data; p && *p;) {
    const char *end = strstr(p, ", ");
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && memcmp(p, method, n) == 0) return;
    p = end ? end + 2 : p + len;
  }
  if (allow->len) ck_buf_puts(allow, ", ");
  ck_buf_puts(allow, method);
}

static void http_not_found(const ck_http_route_t *routes, size_t n, const ck_http_req_t *req,
                           const char *path, ck_http_resp_t *resp) {
  const char *hint = NULL;
  if (n > 0 && strlen(path) <= 256) {
    const char **patterns = ck_malloc(n * sizeof *patterns);
    for (size_t i = 0; i < n; i++) patterns[i] = routes[i].pattern;
    hint = ck_closest(path, patterns, n);
    ck_free(patterns);
  }
  if (hint)
    ck_http_error(resp, 404, "no route for %s %.256s: did you mean %s?", req->method, path,
                  hint);
  else
    ck_http_error(resp, 404, "no route for %s %.256s", req->method, path);
}

void ck_http_dispatch(const ck_http_route_t *routes, size_t n, const ck_http_guard_t *guard,
                      void *ctx, const ck_http_req_t *req, ck_http_resp_t *resp) {
  static const ck_http_guard_t none = {0};
  if (!guard) guard = &none;
  const char *token = guard->token;
  const char *path = req->path ? req->path : "";
  char *copy = ck_strdup(path);
  char *segs[MAX_SEGS];
  int nseg = http_split(copy, segs, MAX_SEGS);
  const ck_http_route_t *hit = NULL;
  const char *hit_params[CK_HTTP_MAX_PARAMS];
  int hit_nparams = 0;
  ck_buf_t allow;
  ck_buf_init(&allow);
  for (size_t i = 0; nseg > 0 && i < n; i++) {
    const char *params[CK_HTTP_MAX_PARAMS];
    int nparams = 0;
    if (!http_match(routes[i].pattern, segs, nseg, params, &nparams)) continue;
    http_allow_add(&allow, routes[i].method);
    if (strcmp(routes[i].method, "GET") == 0) http_allow_add(&allow, "HEAD");
    if (hit || !http_method_ok(routes[i].method, req->method)) continue;
    hit = &routes[i];
    hit_nparams = nparams;
    memcpy(hit_params, params, (size_t)nparams * sizeof *params);
  }
  if (!allow.len) {
    http_not_found(routes, n, req, path, resp);
  } else if (!hit) {
    ck_http_error(resp, 405, "method %.32s is not allowed on %.256s: use %s", req->method, path,
                  allow.data);
    ck_http_resp_header(resp, "Allow", allow.data);
  } else if (hit->token_always && !(token && *token)) {
    ck_http_error(resp, 401, "%.256s answers only with a bearer token, and this server has "
                  "none: start it with CLINK_AUTH_TOKEN set, and send 'Authorization: Bearer "
                  "<token>'", path);
    ck_http_resp_header(resp, "WWW-Authenticate", "Bearer realm=\"clink\"");
  } else if (!hit->open && token && *token && !http_bearer_ok(req->authorization, token)) {
    if (req->authorization)
      ck_http_error(resp, 401, "the bearer token is not valid for this cluster");
    else
      ck_http_error(resp, 401, "this endpoint needs a bearer token: send the header "
                               "'Authorization: Bearer <token>'");
    ck_http_resp_header(resp, "WWW-Authenticate", "Bearer realm=\"clink\"");
  } else if (!hit->open && guard->refuse_writes && ck_http_method_writes(req->method)) {
    ck_http_error(resp, 403, "could not %s %.256s: this coordinator serves a non-loopback "
                  "address without a token, so it refuses every request that changes state; "
                  "set CLINK_AUTH_TOKEN in its environment (and send 'Authorization: Bearer "
                  "<token>') or bind it to 127.0.0.1", req->method, path);
  } else if (guard->json_writes && ck_http_method_writes(req->method) &&
             !ck_http_content_type_is_json(req->content_type)) {
    ck_http_error(resp, 415, "could not %s %.256s: the request must have 'Content-Type: "
                  "application/json'%s%.64s%s", req->method, path,
                  req->content_type ? " (not '" : "",
                  req->content_type ? req->content_type : "", req->content_type ? "')" : "");
  } else {
    hit->fn(ctx, req, hit_nparams ? hit_params : NULL, resp);
  }
  ck_buf_fini(&allow);
  ck_free(copy);
}

/* A table cell: '|' escaped, line breaks flattened. */
static void http_md_cell(ck_buf_t *out, const char *s) {
  for (; s && *s; s++) {
    if (*s == '|') ck_buf_puts(out, "\\|");
    else if (*s == '\n' || *s == '\r') ck_buf_putc(out, ' ');
    else ck_buf_putc(out, *s);
  }
}

void ck_http_routes_markdown(const ck_http_route_t *routes, size_t n, ck_buf_t *out) {
  ck_buf_puts(out, "| Method | Path | Auth | Summary |\n|---|---|---|---|\n");
  for (size_t i = 0; i < n; i++) {
    ck_buf_puts(out, "| ");
    http_md_cell(out, routes[i].method);
    ck_buf_puts(out, " | `");
    http_md_cell(out, routes[i].pattern);
    ck_buf_puts(out, routes[i].open            ? "` | none | "
                     : routes[i].token_always ? "` | bearer token (always) | "
                                              : "` | bearer token | ");
    http_md_cell(out, routes[i].summary);
    ck_buf_puts(out, " |\n");
  }
}

/* ------------------------------------------------------------------ the server */

/* Polling thread (and, during ck_http_start, the starting thread). */
static void http_on_log(void *cls, const char *fmt, va_list ap) {
  ck_http_t *http = cls;
  char line[sizeof http->last_log];
  vsnprintf(line, sizeof line, fmt, ap);
  size_t len = strlen(line);
  while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
  ck_mutex_lock(&http->log_mu);
  memcpy(http->last_log, line, len + 1);
  bool started = http->started;
  ck_mutex_unlock(&http->log_mu);
  /* Before the start returns, a failure is reported through its error instead. Afterwards the
   * messages are mostly about misbehaving clients, which must not be able to flood the log. */
  if (started) CK_LOG_DEBUG(LOG_SUB, "%s", line);
}

/*
 * A connection's thread (or the listening thread): a connection started or closed. Past
 * CONN_KEEP connections, a new one shuts down (the socket stays open until libmicrohttpd
 * closes it, so its number cannot be reused under us) the connection waiting longest that
 * no handler is answering: clients that hold connections open without finishing a request
 * cannot starve the health check or anyone else. (An entry whose socket libmicrohttpd has
 * closed but not yet reported shares its number with the new connection at most: skipped.)
 */
static void http_on_conn(void *cls, struct MHD_Connection *conn, void **socket_context,
                         enum MHD_ConnectionNotificationCode toe) {
  ck_http_t *http = cls;
  ck_mutex_lock(&http->conns_mu);
  if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    http_conn_t *hc = ck_calloc(1, sizeof *hc);
    hc->fd = info ? (int)info->connect_fd : -1;
    hc->since = ck_mono_ms();
    http_conn_t **tail = &http->conns;
    while (*tail) hc->prev = *tail, tail = &(*tail)->next;
    *tail = hc;
    *socket_context = hc;
    int live = 0;
    for (http_conn_t *c = http->conns; c; c = c->next) live += !c->evicted;
    if (live > CONN_KEEP) {
      http_conn_t *victim = NULL;
      for (http_conn_t *c = http->conns; c; c = c->next)
        if (c != hc && !c->busy && !c->evicted && c->fd >= 0 && c->fd != hc->fd &&
            (!victim || c->since < victim->since))
          victim = c;
      if (victim) {
        victim->evicted = true;
        shutdown(victim->fd, SHUT_RDWR);
      }
    }
    http->nconns++;
  } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
    http_conn_t *hc = *socket_context;
    if (hc->prev) hc->prev->next = hc->next;
    else http->conns = hc->next;
    if (hc->next) hc->next->prev = hc->prev;
    ck_free(hc);
    *socket_context = NULL;
    http->nconns--;
  }
  ck_mutex_unlock(&http->conns_mu);
}

/* Marks the connection busy (a handler runs for it) or answered. */
static void http_conn_busy(ck_http_t *http, struct MHD_Connection *conn, bool busy) {
  const union MHD_ConnectionInfo *info =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  if (!info || !info->socket_context) return;
  ck_mutex_lock(&http->conns_mu);
  http_conn_t *hc = info->socket_context;
  hc->busy = busy;
  if (!busy) hc->since = ck_mono_ms();
  ck_mutex_unlock(&http->conns_mu);
}

/* Polling thread: the request line has arrived; returns the request's state (*con_cls). */
static void *http_on_uri(void *cls, const char *uri, struct MHD_Connection *conn) {
  http_call_t *call = ck_calloc(1, sizeof *call);
  call->uri = ck_strdup(uri ? uri : "");
  ck_buf_init(&call->body);
  return call;
}

static void http_call_free(http_call_t *call) {
  if (!call) return;
  ck_buf_fini(&call->body);
  ck_free(call->uri);
  ck_free(call);
}

/* Polling thread: the request is over, answered or not. */
static void http_on_done(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  http_call_free(*con_cls);
  *con_cls = NULL;
}

/* Polling thread: hands resp to libmicrohttpd (which copies nothing: the body moves). */
static enum MHD_Result http_send(struct MHD_Connection *conn, ck_http_resp_t *resp) {
  if (resp->status < 100 || resp->status > 599) {
    CK_LOG_ERR(LOG_SUB, "a handler answered with the invalid HTTP status %d", resp->status);
    ck_buf_reset(&resp->headers);
    ck_http_error(resp, 500, "internal error: the request handler gave no valid status");
  } else if (resp->status >= 400 && resp->body.len == 0) {
    http_error_for_status(resp, resp->status);
  }
  const char *type = resp->content_type && *resp->content_type ? resp->content_type
                                                                 : "application/json";
  if (strpbrk(type, "\r\n")) {
    CK_LOG_ERR(LOG_SUB, "a handler set a content type with a line break; sent as bytes");
    type = "application/octet-stream";
  }
  size_t len = resp->body.len;
  char *data = ck_buf_detach(&resp->body);
  struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback(len, data, ck_free);
  if (!r) {
    ck_free(data);
    return MHD_NO;
  }
  if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) != MHD_YES)
    CK_LOG_ERR(LOG_SUB, "could not set the content type '%s' of an HTTP response", type);
  const char *p = resp->headers.data, *end = p ? p + resp->headers.len : NULL;
  while (p && p < end) {
    const char *name = p, *value = p + strlen(p) + 1;
    /* libmicrohttpd refuses the headers it manages itself (Content-Length, …): skip those. */
    if (MHD_add_response_header(r, name, value) != MHD_YES)
      CK_LOG_ERR(LOG_SUB, "could not add the header '%s' to an HTTP response", name);
    p = value + strlen(value) + 1;
  }
  enum MHD_Result ok = MHD_queue_response(conn, (unsigned)resp->status, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result http_send_too_big(struct MHD_Connection *conn) {
  ck_http_resp_t resp;
  ck_http_resp_init(&resp);
  ck_http_error(&resp, 413, "the request body is larger than the %zu MiB limit",
                CK_HTTP_MAX_BODY >> 20);
  enum MHD_Result ok = http_send(conn, &resp);
  ck_http_resp_fini(&resp);
  return ok;
}

/* Reads a Content-Length value: false when absent; UINT64_MAX when not a plain number. */
static bool http_content_length(struct MHD_Connection *conn, uint64_t *out) {
  const char *s = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                              MHD_HTTP_HEADER_CONTENT_LENGTH);
  if (!s) return false;
  int64_t v;
  if (ck_http_param_id(s, &v) != 0) {
    *out = UINT64_MAX; /* too long to be a number: certainly too big */
    return true;
  }
  *out = (uint64_t)v;
  return true;
}

/*
 * Polling thread: libmicrohttpd calls this once when the headers are in, once per piece of
 * the body, and once more when the request is complete — then the handler runs.
 */
static enum MHD_Result http_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                       const char *method, const char *version,
                                       const char *upload_data, size_t *upload_data_size,
                                       void **con_cls) {
  ck_http_t *http = cls;
  http_call_t *call = *con_cls;
  if (!call) call = *con_cls = http_on_uri(NULL, url, conn); /* the URI callback always ran */
  if (!call->started) {
    call->started = true;
    uint64_t len;
    if (http_content_length(conn, &len)) {
      /* Refused before the body is read: libmicrohttpd then closes the connection. */
      if (len > CK_HTTP_MAX_BODY) return http_send_too_big(conn);
      /* Room for small bodies up front; a large claim grows as its bytes arrive. */
      ck_buf_reserve(&call->body, len < 65536 ? (size_t)len : 65536);
    }
    return MHD_YES;
  }
  if (*upload_data_size > 0) {
    /* No answer may be queued while the body streams in: drop the rest and answer at the end. */
    if (!call->too_big && call->body.len + *upload_data_size > CK_HTTP_MAX_BODY) {
      call->too_big = true;
      ck_buf_fini(&call->body);
    }
    if (!call->too_big) ck_buf_append(&call->body, upload_data, *upload_data_size);
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (call->too_big) return http_send_too_big(conn);
  /* The body ends at body.len whatever the parsers believe: a NUL after it, always (a
   * "Content-Length: 0" reserved room but wrote nothing there). */
  ck_buf_reserve(&call->body, 1);
  call->body.data[call->body.len] = 0;

  const char *q = strchr(call->uri, '?');
  ck_http_req_t req = {
      .method = method ? method : "",
      .path = url ? url : "",
      .query = q ? q + 1 : "",
      .body = call->body.data,
      .body_len = call->body.len,
      .authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                   MHD_HTTP_HEADER_AUTHORIZATION),
      .content_type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                  MHD_HTTP_HEADER_CONTENT_TYPE),
  };
  ck_http_resp_t resp;
  ck_http_resp_init(&resp);
  http_conn_busy(http, conn, true);
  http->fn(http->ctx, &req, &resp);
  enum MHD_Result ok = http_send(conn, &resp);
  http_conn_busy(http, conn, false);
  ck_http_resp_fini(&resp);
  return ok;
}

int ck_http_start(const char *bind_host, int port, ck_http_handler_fn fn, void *ctx,
                  ck_http_t **out, ck_error_t *err) {
  *out = NULL;
  const char *host = bind_host && *bind_host ? bind_host : "127.0.0.1";
  if (port < 0 || port > 65535)
    return ck_error_set(err, CK_EINVAL, "invalid HTTP port %d: it must be between 0 and 65535",
                        port);
  char port_s[16];
  snprintf(port_s, sizeof port_s, "%d", port);
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_NUMERICSERV};
  struct addrinfo *ai = NULL;
  int gai = getaddrinfo(host, port_s, &hints, &ai);
  if (gai != 0) {
    ck_error_set(err, CK_EINVAL, "could not resolve the HTTP bind address \"%s\": %s", host,
                 gai_strerror(gai));
    ck_error_hint(err, "Give an IP address of this machine, such as 127.0.0.1 or 0.0.0.0.");
    return CK_EINVAL;
  }

  ck_http_t *http = ck_calloc(1, sizeof *http);
  http->fn = fn;
  http->ctx = ctx;
  ck_mutex_init(&http->log_mu);
  ck_mutex_init(&http->conns_mu);
  /* poll(), not epoll: with epoll, libmicrohttpd 0.9.75 keeps a connection that sent only
   * blank lines and then closed its side open until the timeout (test_http_garbage_…). At
   * CONN_LIMIT connections poll costs nothing. */
  /* A thread per connection: a handler that waits (a submission being planned) holds up
   * only its own client, never the health check. */
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                   MHD_USE_POLL | MHD_USE_ERROR_LOG;
  if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
  /* The logger comes first so that start-up messages reach it too. */
  http->daemon = MHD_start_daemon(
      flags, (uint16_t)port, NULL, NULL, http_on_request, http,
      MHD_OPTION_EXTERNAL_LOGGER, http_on_log, http,
      MHD_OPTION_SOCK_ADDR, ai->ai_addr,
      MHD_OPTION_URI_LOG_CALLBACK, http_on_uri, NULL,
      MHD_OPTION_NOTIFY_COMPLETED, http_on_done, NULL,
      MHD_OPTION_NOTIFY_CONNECTION, http_on_conn, http,
      MHD_OPTION_CONNECTION_TIMEOUT, CONN_TIMEOUT_S,
      MHD_OPTION_CONNECTION_LIMIT, CONN_LIMIT,
      MHD_OPTION_END);
  int saved_errno = errno;
  freeaddrinfo(ai);
  if (!http->daemon) {
    ck_mutex_lock(&http->log_mu);
    ck_error_set(err, CK_EIO, "could not serve HTTP on %s port %d: %s", host, port,
                 http->last_log[0] ? http->last_log : strerror(saved_errno));
    ck_mutex_unlock(&http->log_mu);
    ck_error_hint(err, "Check that no other process listens on that port, or use port 0 to "
                       "let the system pick a free one.");
    ck_mutex_fini(&http->log_mu);
    ck_mutex_fini(&http->conns_mu);
    ck_free(http);
    return CK_EIO;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(http->daemon,
                                                         MHD_DAEMON_INFO_BIND_PORT);
  http->port = info && info->port ? info->port : port;
  ck_mutex_lock(&http->log_mu);
  http->started = true;
  ck_mutex_unlock(&http->log_mu);
  CK_LOG_DEBUG(LOG_SUB, "serving HTTP on %s port %d", host, http->port);
  *out = http;
  return 0;
}

int ck_http_port(const ck_http_t *http) { return http->port; }

void ck_http_stop(ck_http_t *http) {
  if (!http) return;
  MHD_stop_daemon(http->daemon); /* joins the polling thread; in-flight requests end here */
  ck_mutex_fini(&http->log_mu);
  ck_mutex_fini(&http->conns_mu);
  ck_free(http);
}
