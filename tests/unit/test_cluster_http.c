/*
 * DESIGN: unit tests for src/cluster/http — the libmicrohttpd server, the route dispatcher,
 * JSON errors, bearer tokens, the body cap and the Markdown route reference.
 *
 * Each server test starts a real server on 127.0.0.1 port 0 with a small route table and
 * talks to it with a plain blocking TCP client written here (no HTTP library, so the bytes on
 * the wire are exactly the ones we mean, garbage included). Every request says
 * "Connection: close" and the client reads to end of file, so a response is complete when
 * recv returns 0 — no sleeps; the sockets have a receive timeout only so that a broken server
 * fails a test instead of hanging it. Every server test ends with ck_http_stop and the same
 * number of live blocks of our allocator as it began with; ASan checks the rest at exit.
 *
 * Threads: the main thread runs the client; the route handlers run on libmicrohttpd's
 * polling thread and share only an atomic call counter with the test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/log.h"
#include "cluster/http.h"

enum { RECV_TIMEOUT_S = 20 }; /* far beyond any healthy answer, even under ASan */

#define assert_contains(hay, needle)                                                    \
  do {                                                                                  \
    const char *h_ = (hay), *n_ = (needle);                                             \
    if (!h_ || !strstr(h_, n_))                                                         \
      fail_msg("expected \"%s\" in \"%.2000s\"", n_, h_ ? h_ : "(null)");                \
  } while (0)

/* ------------------------------------------------------------ the routes under test */

typedef struct fx {
  ck_http_t *http;
  const char *token;
  bool json_writes, refuse_writes; /* the guard's other rules (off unless a test sets them) */
  _Atomic int calls; /* route handler calls, from the polling thread */
  int64_t blocks;    /* live blocks before the server started */
} fx_t;

static void route_health(void *ctx, const ck_http_req_t *req, const char *const *params,
                         ck_http_resp_t *resp) {
  fx_t *fx = ctx;
  atomic_fetch_add(&fx->calls, 1);
  ck_assert(params == NULL); /* not a cmocka assert: this is the polling thread */
  ck_buf_puts(&resp->body, "{\"ok\":true}");
}

static void route_job(void *ctx, const ck_http_req_t *req, const char *const *params,
                      ck_http_resp_t *resp) {
  fx_t *fx = ctx;
  atomic_fetch_add(&fx->calls, 1);
  int64_t id;
  if (ck_http_param_id(params[0], &id) != 0) {
    ck_http_error(resp, 400, "invalid job id '%s': it must be a number", params[0]);
    return;
  }
  ck_buf_printf(&resp->body, "{\"id\":%lld,\"query\":", (long long)id);
  ck_buf_put_json_str(&resp->body, req->query, strlen(req->query));
  ck_buf_putc(&resp->body, '}');
}

static void route_job_op(void *ctx, const ck_http_req_t *req, const char *const *params,
                         ck_http_resp_t *resp) {
  fx_t *fx = ctx;
  atomic_fetch_add(&fx->calls, 1);
  ck_buf_printf(&resp->body, "{\"job\":\"%s\",\"op\":\"%s\"}", params[0], params[1]);
}

static void route_job_cancel(void *ctx, const ck_http_req_t *req, const char *const *params,
                             ck_http_resp_t *resp) {
  fx_t *fx = ctx;
  atomic_fetch_add(&fx->calls, 1);
  resp->status = 202;
  ck_buf_printf(&resp->body, "{\"cancelling\":\"%s\"}", params[0]);
}

/* Echoes the body byte for byte, its length in a header. */
static void route_echo(void *ctx, const ck_http_req_t *req, const char *const *params,
                       ck_http_resp_t *resp) {
  fx_t *fx = ctx;
  atomic_fetch_add(&fx->calls, 1);
  resp->content_type = "application/octet-stream";
  ck_assert(req->body[req->body_len] == 0); /* NUL-terminated */
  ck_buf_append(&resp->body, req->body, req->body_len);
  char n[32];
  snprintf(n, sizeof n, "%zu", req->body_len);
  ck_http_resp_header(resp, "X-Body-Len", n);
}

/* A handler that forgets the body of its error: the layer must still answer JSON. */
static void route_fail(void *ctx, const ck_http_req_t *req, const char *const *params,
                       ck_http_resp_t *resp) {
  fx_t *fx = ctx;
  atomic_fetch_add(&fx->calls, 1);
  resp->status = 503;
  ck_http_resp_header(resp, "Content-Length", "999"); /* libmicrohttpd's own: dropped */
  ck_http_resp_header(resp, "Retry-After", "5");
}

/* A handler that answers nonsense: the layer answers 500 instead. */
static void route_broken(void *ctx, const ck_http_req_t *req, const char *const *params,
                         ck_http_resp_t *resp) {
  fx_t *fx = ctx;
  atomic_fetch_add(&fx->calls, 1);
  resp->status = 7;
  resp->content_type = "text/plain";
  ck_buf_puts(&resp->body, "seven");
}

static const ck_http_route_t routes[] = {
    {"GET", "/api/v1/health", true, route_health, "Liveness: 200 while the server runs."},
    {"GET", "/api/v1/jobs/:id", false, route_job, "One job's status."},
    {"DELETE", "/api/v1/jobs/:id", false, route_job_cancel, "Cancels a job."},
    {"GET", "/api/v1/jobs/:id/operators/:op", false, route_job_op, "One operator | metrics."},
    {"POST", "/api/v1/echo", false, route_echo, "Echoes the body."},
    {"GET", "/api/v1/fail", false, route_fail, "Always fails."},
    {"GET", "/api/v1/broken", false, route_broken, "Answers an invalid status."},
    {"GET", "/api/v1/jobs/:id/state", false, route_job, "Shows data: the token, always.", true},
};

static void handler(void *ctx, const ck_http_req_t *req, ck_http_resp_t *resp) {
  fx_t *fx = ctx;
  ck_http_guard_t guard = {fx->token, fx->refuse_writes, fx->json_writes};
  ck_http_dispatch(routes, CK_ARRAY_LEN(routes), &guard, ctx, req, resp);
}

static void fx_start(fx_t *fx, const char *token) {
  memset(fx, 0, sizeof *fx);
  fx->blocks = ck_mem_stats().live_blocks;
  fx->token = token;
  ck_error_t err;
  ck_error_clear(&err);
  int rc = ck_http_start("127.0.0.1", 0, handler, fx, &fx->http, &err);
  if (rc != 0) fail_msg("could not start the server: %d %s", rc, err.message);
  assert_true(ck_http_port(fx->http) > 0);
}

static void fx_stop(fx_t *fx) {
  ck_http_stop(fx->http);
  fx->http = NULL;
  assert_int_equal(ck_mem_stats().live_blocks, fx->blocks);
}

/* ------------------------------------------------------------ a plain TCP client */

typedef struct reply {
  ck_buf_t raw;       /* every byte the server sent */
  int status;         /* 0 when there was no status line */
  const char *head;   /* the header block (NUL-terminated copy in heads) */
  const char *body;   /* into raw */
  size_t body_len;
  ck_buf_t heads;
} reply_t;

static int dial(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct timeval tv = {.tv_sec = RECV_TIMEOUT_S};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
    fail_msg("could not connect to 127.0.0.1:%d: %s", port, strerror(errno));
  return fd;
}

/* Sends everything it can; false when the server closed first (allowed for refusals). */
static bool send_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= (size_t)w;
  }
  return true;
}

/* Reads until the server closes; parses the status line, headers and body. */
static void read_reply(int fd, reply_t *r) {
  memset(r, 0, sizeof *r);
  ck_buf_init(&r->raw);
  ck_buf_init(&r->heads);
  char chunk[65536];
  for (;;) {
    ssize_t got = recv(fd, chunk, sizeof chunk, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      fail_msg("no answer within %d s (have %zu bytes: %.*s)", RECV_TIMEOUT_S, r->raw.len,
               (int)r->raw.len, r->raw.data ? r->raw.data : "");
    if (got <= 0) break; /* end of file, or a reset after the answer */
    ck_buf_append(&r->raw, chunk, (size_t)got);
  }
  const char *raw = r->raw.data ? r->raw.data : "";
  int status = 0;
  if (sscanf(raw, "HTTP/1.%*d %d", &status) == 1) r->status = status;
  const char *end = strstr(raw, "\r\n\r\n");
  if (end) {
    ck_buf_append(&r->heads, raw, (size_t)(end - raw) + 2);
    r->body = end + 4;
    r->body_len = r->raw.len - (size_t)(r->body - raw);
  } else {
    ck_buf_puts(&r->heads, "");
    r->body = "";
  }
  r->head = r->heads.data;
}

static void reply_fini(reply_t *r) {
  ck_buf_fini(&r->raw);
  ck_buf_fini(&r->heads);
}

/* The value of header name (case-insensitive), copied into out; false when absent. */
static bool reply_header(const reply_t *r, const char *name, char *out, size_t out_len) {
  size_t n = strlen(name);
  for (const char *line = r->head; line && *line;) {
    const char *eol = strstr(line, "\r\n");
    if (!eol) break;
    if (strncasecmp(line, name, n) == 0 && line[n] == ':') {
      const char *v = line + n + 1;
      while (*v == ' ') v++;
      snprintf(out, out_len, "%.*s", (int)(eol - v), v);
      return true;
    }
    line = eol + 2;
  }
  return false;
}

static void assert_header(const reply_t *r, const char *name, const char *want) {
  char got[512];
  if (!reply_header(r, name, got, sizeof got))
    fail_msg("no %s header (expected \"%s\") in:\n%s", name, want, r->head);
  assert_string_equal(got, want);
}

/* An error answer: the status, JSON, and the message containing want. */
static void assert_json_error(const reply_t *r, int status, const char *want) {
  assert_int_equal(r->status, status);
  assert_header(r, "Content-Type", "application/json");
  if (r->body_len < 11 || strncmp(r->body, "{\"error\":\"", 10) != 0 ||
      r->body[r->body_len - 1] != '}')
    fail_msg("expected a JSON error, got: %.*s", (int)r->body_len, r->body);
  assert_contains(r->body, want);
}

/* Sends raw bytes on a fresh connection and reads the answer. */
static void exchange(int port, const void *bytes, size_t n, reply_t *r) {
  int fd = dial(port);
  send_all(fd, bytes, n);
  read_reply(fd, r);
  close(fd);
}

/* One well-formed request. auth and body may be NULL. */
static void request(int port, const char *method, const char *target, const char *auth,
                    const char *body, size_t body_len, reply_t *r) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_buf_printf(&b, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n", method,
                target);
  if (auth) ck_buf_printf(&b, "Authorization: %s\r\n", auth);
  if (body) ck_buf_printf(&b, "Content-Length: %zu\r\n", body_len);
  ck_buf_puts(&b, "\r\n");
  if (body) ck_buf_append(&b, body, body_len);
  exchange(port, b.data, b.len, r);
  ck_buf_fini(&b);
}

static void get(int port, const char *target, const char *auth, reply_t *r) {
  request(port, "GET", target, auth, NULL, 0, r);
}

/* ------------------------------------------------------------ server tests */

static void test_http_get_route_captures_id(void **state) {
  fx_t fx;
  fx_start(&fx, NULL);
  int port = ck_http_port(fx.http);
  reply_t r;

  get(port, "/api/v1/jobs/42?verbose=1&name=a%20b", NULL, &r);
  assert_int_equal(r.status, 200);
  assert_header(&r, "Content-Type", "application/json");
  assert_string_equal(r.body, "{\"id\":42,\"query\":\"verbose=1&name=a%20b\"}");
  reply_fini(&r);

  get(port, "/api/v1/jobs/7/operators/src-1", NULL, &r); /* two captures, in order */
  assert_int_equal(r.status, 200);
  assert_string_equal(r.body, "{\"job\":\"7\",\"op\":\"src-1\"}");
  reply_fini(&r);

  get(port, "/api/v1/jobs/12x", NULL, &r); /* the route's own validation */
  assert_json_error(&r, 400, "invalid job id '12x'");
  reply_fini(&r);

  request(port, "DELETE", "/api/v1/jobs/9", NULL, NULL, 0, &r); /* same path, other method */
  assert_int_equal(r.status, 202);
  assert_string_equal(r.body, "{\"cancelling\":\"9\"}");
  reply_fini(&r);

  request(port, "HEAD", "/api/v1/jobs/5", NULL, NULL, 0, &r); /* HEAD: GET without a body */
  assert_int_equal(r.status, 200);
  assert_header(&r, "Content-Type", "application/json");
  assert_int_equal(r.body_len, 0);
  reply_fini(&r);

  ck_log_level_t level = ck_log_level();
  ck_log_set_level(CK_LOG_OFF); /* the layer logs the handlers' mistakes below */
  get(port, "/api/v1/fail", NULL, &r); /* a handler that sets only a status */
  assert_json_error(&r, 503, "service unavailable");
  assert_header(&r, "Retry-After", "5");
  assert_string_equal(r.body, "{\"error\":\"service unavailable\"}");
  assert_header(&r, "Content-Length", "31"); /* the handler's own Content-Length was dropped */
  reply_fini(&r);

  get(port, "/api/v1/broken", NULL, &r);
  ck_log_set_level(level);
  assert_json_error(&r, 500, "the request handler gave no valid status");
  reply_fini(&r);

  assert_int_equal(atomic_load(&fx.calls), 7);
  fx_stop(&fx);
}

static void test_http_post_body_echoed(void **state) {
  fx_t fx;
  fx_start(&fx, NULL);
  int port = ck_http_port(fx.http);
  reply_t r;

  static const char small[] = "{\"sql\":\"SELECT 1\"}\0after-nul";
  request(port, "POST", "/api/v1/echo", NULL, small, sizeof small - 1, &r);
  assert_int_equal(r.status, 200);
  assert_header(&r, "Content-Type", "application/octet-stream");
  assert_header(&r, "X-Body-Len", "28");
  assert_int_equal(r.body_len, sizeof small - 1);
  assert_memory_equal(r.body, small, sizeof small - 1);
  reply_fini(&r);

  /* Large enough to arrive in many upload callbacks; every byte must come back in place. */
  size_t big_len = 300 * 1000 + 7;
  char *big = ck_malloc(big_len);
  for (size_t i = 0; i < big_len; i++) big[i] = (char)('a' + (i * 7 + i / 251) % 26);
  request(port, "POST", "/api/v1/echo", NULL, big, big_len, &r);
  assert_int_equal(r.status, 200);
  assert_int_equal(r.body_len, big_len);
  assert_memory_equal(r.body, big, big_len);
  reply_fini(&r);

  /* The same body in chunked transfer encoding, split into uneven chunks. */
  ck_buf_t b;
  ck_buf_init(&b);
  ck_buf_puts(&b, "POST /api/v1/echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n");
  for (size_t off = 0, step = 1; off < big_len; off += step, step = step * 3 + 1) {
    if (step > big_len - off) step = big_len - off;
    ck_buf_printf(&b, "%zx\r\n", step);
    ck_buf_append(&b, big + off, step);
    ck_buf_puts(&b, "\r\n");
  }
  ck_buf_puts(&b, "0\r\n\r\n");
  exchange(port, b.data, b.len, &r);
  ck_buf_fini(&b);
  assert_int_equal(r.status, 200);
  assert_int_equal(r.body_len, big_len);
  assert_memory_equal(r.body, big, big_len);
  reply_fini(&r);
  ck_free(big);

  /* "Content-Length: 0": the body is empty and still NUL-terminated (route_echo checks). */
  static const char zero[] = "POST /api/v1/echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                             "Content-Length: 0\r\n\r\n";
  exchange(port, zero, sizeof zero - 1, &r);
  assert_int_equal(r.status, 200);
  assert_header(&r, "X-Body-Len", "0");
  reply_fini(&r);

  /* A POST with no body at all. */
  request(port, "POST", "/api/v1/echo", NULL, NULL, 0, &r);
  assert_int_equal(r.status, 200);
  assert_header(&r, "X-Body-Len", "0");
  assert_int_equal(r.body_len, 0);
  reply_fini(&r);

  assert_int_equal(atomic_load(&fx.calls), 5);
  fx_stop(&fx);
}

static void test_http_unknown_path_404(void **state) {
  fx_t fx;
  fx_start(&fx, "s3cret"); /* an unknown path is 404 even without the token */
  int port = ck_http_port(fx.http);
  reply_t r;

  get(port, "/api/v1/nope", NULL, &r);
  assert_json_error(&r, 404, "no route for GET /api/v1/nope");
  reply_fini(&r);

  get(port, "/api/v1/helth", NULL, &r); /* close to a route: named */
  assert_json_error(&r, 404, "did you mean /api/v1/health?");
  reply_fini(&r);

  get(port, "/api/v1/jobs/", NULL, &r); /* an empty capture is no capture */
  assert_json_error(&r, 404, "no route");
  reply_fini(&r);

  get(port, "/api/v1/jobs/1/operators", NULL, &r);
  assert_json_error(&r, 404, "no route");
  reply_fini(&r);

  /* A quote and a backslash in the (decoded) path must come back escaped in the JSON. */
  get(port, "/x%22y%5Cz", NULL, &r);
  assert_json_error(&r, 404, "no route for GET /x\\\"y\\\\z");
  reply_fini(&r);

  assert_int_equal(atomic_load(&fx.calls), 0);
  fx_stop(&fx);
}

static void test_http_wrong_method_405(void **state) {
  fx_t fx;
  fx_start(&fx, NULL);
  int port = ck_http_port(fx.http);
  reply_t r;

  request(port, "PUT", "/api/v1/jobs/3", NULL, "{}", 2, &r);
  assert_json_error(&r, 405, "method PUT is not allowed on /api/v1/jobs/3");
  assert_header(&r, "Allow", "GET, HEAD, DELETE");
  reply_fini(&r);

  get(port, "/api/v1/echo", NULL, &r);
  assert_json_error(&r, 405, "method GET is not allowed");
  assert_header(&r, "Allow", "POST");
  reply_fini(&r);

  request(port, "FROBNICATE", "/api/v1/health", NULL, NULL, 0, &r); /* a made-up method */
  assert_json_error(&r, 405, "FROBNICATE");
  reply_fini(&r);

  assert_int_equal(atomic_load(&fx.calls), 0);
  fx_stop(&fx);
}

static void test_http_oversized_body_413(void **state) {
  fx_t fx;
  fx_start(&fx, NULL);
  int port = ck_http_port(fx.http);
  reply_t r;

  /* A declared length over the cap is refused from the headers alone, before the body. */
  static const char declared[] = "POST /api/v1/echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                 "Content-Length: 1048577\r\n\r\n";
  exchange(port, declared, sizeof declared - 1, &r);
  assert_json_error(&r, 413, "larger than the 1 MiB limit");
  reply_fini(&r);

  static const char huge[] = "POST /api/v1/echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                             "Content-Length: 99999999999999999999999999\r\n\r\n";
  exchange(port, huge, sizeof huge - 1, &r);
  assert_int_equal(r.status / 100, 4); /* libmicrohttpd or we refuse it; never a 2xx */
  reply_fini(&r);

  /* Exactly at the cap is accepted. */
  size_t cap = CK_HTTP_MAX_BODY;
  char *body = ck_malloc(cap + 1);
  memset(body, 'z', cap + 1);
  request(port, "POST", "/api/v1/echo", NULL, body, cap, &r);
  assert_int_equal(r.status, 200);
  assert_int_equal(r.body_len, cap);
  reply_fini(&r);

  /* Chunked, so no length is declared: the body streams past the cap and is refused at its end. */
  ck_buf_t b;
  ck_buf_init(&b);
  ck_buf_printf(&b, "POST /api/v1/echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n%zx\r\n", cap);
  ck_buf_append(&b, body, cap);
  ck_buf_puts(&b, "\r\n1\r\nz\r\n0\r\n\r\n");
  exchange(port, b.data, b.len, &r);
  ck_buf_fini(&b);
  ck_free(body);
  assert_json_error(&r, 413, "larger than the 1 MiB limit");
  reply_fini(&r);

  assert_int_equal(atomic_load(&fx.calls), 1); /* only the body at the cap reached a route */
  fx_stop(&fx);
}

static void test_http_bearer_token(void **state) {
  fx_t fx;
  fx_start(&fx, "s3cret-T0ken");
  int port = ck_http_port(fx.http);
  reply_t r;

  get(port, "/api/v1/jobs/1", NULL, &r);
  assert_json_error(&r, 401, "needs a bearer token");
  assert_header(&r, "WWW-Authenticate", "Bearer realm=\"clink\"");
  reply_fini(&r);

  static const char *const wrong[] = {
      "Bearer wrong",         "Bearer s3cret-T0ke",  "Bearer s3cret-T0ken2", "Bearer S3CRET-T0KEN",
      "Basic s3cret-T0ken",   "s3cret-T0ken",        "Bearer",               "Bearer ",
      "Bearers3cret-T0ken",
  };
  for (size_t i = 0; i < CK_ARRAY_LEN(wrong); i++) {
    get(port, "/api/v1/jobs/1", wrong[i], &r);
    if (r.status != 401) fail_msg("'Authorization: %s' gave %d, not 401", wrong[i], r.status);
    assert_json_error(&r, 401, "not valid");
    reply_fini(&r);
  }
  request(port, "POST", "/api/v1/echo", "Bearer nope", "x", 1, &r);
  assert_json_error(&r, 401, "not valid");
  reply_fini(&r);
  assert_int_equal(atomic_load(&fx.calls), 0);

  get(port, "/api/v1/jobs/1", "Bearer s3cret-T0ken", &r);
  assert_int_equal(r.status, 200);
  assert_string_equal(r.body, "{\"id\":1,\"query\":\"\"}");
  reply_fini(&r);

  get(port, "/api/v1/jobs/2", "bearer   s3cret-T0ken ", &r); /* scheme case, blanks */
  assert_int_equal(r.status, 200);
  reply_fini(&r);

  get(port, "/api/v1/health", NULL, &r); /* the open route needs none */
  assert_int_equal(r.status, 200);
  assert_string_equal(r.body, "{\"ok\":true}");
  reply_fini(&r);

  get(port, "/api/v1/health", "Bearer wrong", &r); /* nor minds a wrong one */
  assert_int_equal(r.status, 200);
  reply_fini(&r);

  assert_int_equal(atomic_load(&fx.calls), 4);
  fx_stop(&fx);
}

/* Whatever the bytes, the server answers or closes, and the next request is served. */
static void assert_still_serving(int port) {
  reply_t r;
  get(port, "/api/v1/health", NULL, &r);
  assert_int_equal(r.status, 200);
  assert_string_equal(r.body, "{\"ok\":true}");
  reply_fini(&r);
}

static void test_http_garbage_does_not_crash(void **state) {
  fx_t fx;
  fx_start(&fx, NULL);
  int port = ck_http_port(fx.http);
  reply_t r;

  /* Binary junk: every byte value, twice, then an end of headers. */
  char junk[520];
  for (int i = 0; i < 512; i++) junk[i] = (char)(i * 37 + 11);
  memcpy(junk + 512, "\r\n\r\n\r\n\r\n", 8);
  exchange(port, junk, sizeof junk, &r);
  if (r.status != 0 && r.status / 100 != 4) fail_msg("binary junk was answered %d", r.status);
  reply_fini(&r);
  assert_still_serving(port);

  /* Requests that are broken or truncated (the client then closes its side). libmicrohttpd
   * refuses most itself; none may be answered 2xx except the lenient ones marked, and none may
   * hang: a hang fails at the receive timeout. */
  static const struct {
    const char *bytes;
    size_t len;
    bool may_succeed;
  } odd[] = {
#define ODD(lit, ok) {lit, sizeof lit - 1, ok}
      ODD("GET\r\n\r\n", false),
      ODD("\r\n\r\n", false),
      ODD("GET / HTTP/9.9\r\nHost: x\r\n\r\n", false),
      ODD("GET /api/v1/health HTTP/1.1\r\n\r\n", true), /* no Host: libmicrohttpd allows it */
      ODD("GET /api/v1/health HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", true),
      ODD("POST /api/v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", false),
      ODD("POST /api/v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nshort", false),
      ODD("POST /api/v1/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
          "zz\r\n", false),
      ODD("GET /api/v1/he\0lth HTTP/1.1\r\nHost: x\r\n\r\n", false),
#undef ODD
  };
  for (size_t i = 0; i < CK_ARRAY_LEN(odd); i++) {
    int fd = dial(port);
    send_all(fd, odd[i].bytes, odd[i].len);
    shutdown(fd, SHUT_WR); /* nothing more will come: the truncated ones must end too */
    read_reply(fd, &r);
    close(fd);
    if ((r.status / 100 == 2 && !odd[i].may_succeed) || (r.status / 100 == 5 && r.status != 505))
      fail_msg("request %zu (\"%s\") was answered %d", i, odd[i].bytes, r.status);
    reply_fini(&r);
    assert_still_serving(port);
  }

  /* A path that is not a path reaches the dispatcher: JSON 404. */
  static const char star[] = "OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  exchange(port, star, sizeof star - 1, &r);
  assert_json_error(&r, 404, "no route for OPTIONS *");
  reply_fini(&r);

  /* A header far beyond the per-connection memory: refused, not a crash. */
  ck_buf_t b;
  ck_buf_init(&b);
  ck_buf_puts(&b, "GET /api/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: ");
  for (int i = 0; i < 200000; i++) ck_buf_putc(&b, 'h');
  ck_buf_puts(&b, "\r\n\r\n");
  exchange(port, b.data, b.len, &r);
  ck_buf_fini(&b);
  if (r.status == 200) fail_msg("a 200 KB header was accepted");
  reply_fini(&r);
  assert_still_serving(port);

  /* A client that connects and leaves, and one that leaves mid-body. */
  close(dial(port));
  int fd = dial(port);
  static const char half[] =
      "POST /api/v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab";
  send_all(fd, half, sizeof half - 1);
  close(fd);
  assert_still_serving(port);

  /* A path deeper than the dispatcher looks. */
  ck_buf_init(&b);
  for (int i = 0; i < 100; i++) ck_buf_puts(&b, "/a");
  get(port, b.data, NULL, &r);
  ck_buf_fini(&b);
  assert_json_error(&r, 404, "no route");
  reply_fini(&r);

  fx_stop(&fx); /* the abandoned connections' requests are freed here at the latest */
}

static void test_http_start_errors(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  fx_t fx;
  fx_start(&fx, NULL);
  int port = ck_http_port(fx.http);
  ck_http_t *other = NULL;
  ck_error_t err;
  ck_error_clear(&err);
  ck_log_level_t level = ck_log_level();
  ck_log_set_level(CK_LOG_OFF);
  int rc = ck_http_start("127.0.0.1", port, handler, &fx, &other, &err);
  assert_int_equal(rc, CK_EIO);
  assert_null(other);
  char port_s[32];
  snprintf(port_s, sizeof port_s, "port %d", port);
  assert_contains(err.message, "could not serve HTTP on 127.0.0.1");
  assert_contains(err.message, port_s);
  assert_contains(err.hint, "port 0");

  ck_error_clear(&err);
  rc = ck_http_start("127.0.0.1", 70000, handler, &fx, &other, &err);
  assert_int_equal(rc, CK_EINVAL);
  assert_contains(err.message, "invalid HTTP port 70000");

  ck_error_clear(&err);
  rc = ck_http_start("192.0.2.1", 0, handler, &fx, &other, &err); /* not this machine's */
  assert_int_equal(rc, CK_EIO);
  assert_contains(err.message, "192.0.2.1");
  ck_log_set_level(level);
  assert_null(other);

  assert_still_serving(port); /* the failed starts left the first server alone */
  fx_stop(&fx);
  ck_http_stop(NULL);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* ------------------------------------------------------------ without a server */

static void dispatch(const char *method, const char *path, const char *auth, fx_t *fx,
                     ck_http_resp_t *resp) {
  ck_http_req_t req = {.method = method, .path = path, .query = "", .body = "",
                       .authorization = auth};
  ck_http_resp_init(resp);
  ck_http_guard_t guard = {fx->token, fx->refuse_writes, fx->json_writes};
  ck_http_dispatch(routes, CK_ARRAY_LEN(routes), &guard, fx, &req, resp);
}

/* State-changing routes need a JSON content type (no CORS-simple request can drive them),
 * and a server on a non-loopback address without a token refuses them outright. */
static void test_http_writes_need_json_and_may_be_refused(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  fx_t fx = {.token = "", .json_writes = true};
  ck_http_resp_t resp;
  static const struct {
    const char *type;
    int want;
  } cases[] = {
      {NULL, 415},
      {"text/plain", 415},
      {"application/x-www-form-urlencoded", 415},
      {"multipart/form-data; boundary=x", 415},
      {"application/jsonp", 415},
      {"text/plain; a=application/json", 415},
      {"application/json", 200},
      {"Application/JSON", 200},
      {"application/json; charset=utf-8", 200},
      {" application/json ;charset=utf-8", 200},
  };
  for (size_t i = 0; i < CK_ARRAY_LEN(cases); i++) {
    ck_http_req_t req = {.method = "POST", .path = "/api/v1/echo", .query = "", .body = "",
                         .content_type = cases[i].type};
    ck_http_resp_init(&resp);
    ck_http_guard_t guard = {fx.token, false, fx.json_writes};
    ck_http_dispatch(routes, CK_ARRAY_LEN(routes), &guard, &fx, &req, &resp);
    if (resp.status != cases[i].want)
      fail_msg("Content-Type '%s' gave %d, not %d: %s", cases[i].type ? cases[i].type : "(none)",
               resp.status, cases[i].want, resp.body.data ? resp.body.data : "");
    if (cases[i].want == 415) assert_contains(resp.body.data, "Content-Type: application/json");
    ck_http_resp_fini(&resp);
  }
  /* DELETE changes state too; GET does not need a content type */
  dispatch("DELETE", "/api/v1/jobs/3", NULL, &fx, &resp);
  assert_int_equal(resp.status, 415);
  ck_http_resp_fini(&resp);
  dispatch("GET", "/api/v1/jobs/3", NULL, &fx, &resp);
  assert_int_equal(resp.status, 200);
  ck_http_resp_fini(&resp);

  /* refused writes: 403 whatever the request; reads and open routes still served */
  fx.refuse_writes = true;
  ck_http_req_t req = {.method = "POST", .path = "/api/v1/echo", .query = "", .body = "",
                       .content_type = "application/json"};
  ck_http_resp_init(&resp);
  ck_http_guard_t guard = {NULL, true, true};
  ck_http_dispatch(routes, CK_ARRAY_LEN(routes), &guard, &fx, &req, &resp);
  assert_int_equal(resp.status, 403);
  assert_contains(resp.body.data, "CLINK_AUTH_TOKEN");
  ck_http_resp_fini(&resp);
  dispatch("GET", "/api/v1/jobs/3", NULL, &fx, &resp);
  assert_int_equal(resp.status, 200);
  ck_http_resp_fini(&resp);
  dispatch("GET", "/api/v1/health", NULL, &fx, &resp);
  assert_int_equal(resp.status, 200);
  ck_http_resp_fini(&resp);

  assert_true(ck_http_token_equal("abc", 3, "abc"));
  assert_false(ck_http_token_equal("abc", 2, "abc"));
  assert_false(ck_http_token_equal("abcd", 4, "abc"));
  assert_false(ck_http_token_equal("", 0, "abc"));
  assert_false(ck_http_token_equal(NULL, 0, "abc"));
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* Clients that open connections and never finish a request (or never send one) cannot lock
 * anyone out: past the keep limit each new connection evicts the one waiting longest. */
static void test_http_idle_connections_never_lock_out_a_request(void **state) {
  fx_t fx;
  fx_start(&fx, NULL);
  int port = ck_http_port(fx.http);
  enum { IDLE = 100 };
  int idle[IDLE];
  for (int i = 0; i < IDLE; i++) {
    idle[i] = dial(port);
    static const char partial[] = "GET /api/v1/health HTTP/1.1\r\nHost: x\r\n";
    if (i % 2) send_all(idle[i], partial, sizeof partial - 1);
  }
  reply_t r;
  for (int k = 0; k < 5; k++) {
    get(port, "/api/v1/health", NULL, &r);
    if (r.status != 200) fail_msg("request %d after %d idle connections: status %d", k, IDLE,
                                r.status);
    reply_fini(&r);
  }
  for (int i = 0; i < IDLE; i++) close(idle[i]);
  fx_stop(&fx);
}


static void test_http_dispatch_without_server(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  fx_t fx = {.token = ""}; /* an empty token means no auth */
  ck_http_resp_t resp;

  dispatch("GET", "/api/v1/jobs/77", NULL, &fx, &resp);
  assert_int_equal(resp.status, 200);
  assert_string_equal(resp.content_type, "application/json");
  assert_string_equal(resp.body.data, "{\"id\":77,\"query\":\"\"}");
  ck_http_resp_fini(&resp);

  dispatch("GET", "/api/v1/jobs/77/", NULL, &fx, &resp); /* a trailing slash is another path */
  assert_int_equal(resp.status, 404);
  ck_http_resp_fini(&resp);

  dispatch("GET", "", NULL, &fx, &resp);
  assert_int_equal(resp.status, 404);
  assert_string_equal(resp.body.data, "{\"error\":\"no route for GET \"}");
  ck_http_resp_fini(&resp);

  dispatch("get", "/api/v1/health", NULL, &fx, &resp); /* methods are case-sensitive */
  assert_int_equal(resp.status, 405);
  ck_http_resp_fini(&resp);

  /* Header values cannot be split by client text. */
  ck_http_resp_init(&resp);
  ck_http_resp_header(&resp, "Location", "/a\r\nSet-Cookie: x");
  assert_string_equal(resp.headers.data + strlen("Location") + 1, "/a  Set-Cookie: x");
  ck_http_resp_fini(&resp);

  ck_http_resp_init(&resp);
  ck_http_error(&resp, 409, "job \"%s\" is %s", "a\nb", "running");
  assert_int_equal(resp.status, 409);
  assert_string_equal(resp.body.data, "{\"error\":\"job \\\"a\\nb\\\" is running\"}");
  ck_http_error(&resp, 500, "second"); /* replaces, does not append */
  assert_string_equal(resp.body.data, "{\"error\":\"second\"}");
  ck_http_resp_fini(&resp);

  assert_int_equal(atomic_load(&fx.calls), 1);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* A token_always route (a job's state) answers only with the token: a server that has none
 * configured answers 401 to everyone, without calling the handler. */
static void test_http_token_always_route(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_http_resp_t resp;
  fx_t open = {.token = ""};
  dispatch("GET", "/api/v1/jobs/3/state", NULL, &open, &resp);
  assert_int_equal(resp.status, 401);
  assert_contains(resp.body.data, "CLINK_AUTH_TOKEN");
  ck_http_resp_fini(&resp);
  dispatch("GET", "/api/v1/jobs/3/state", "Bearer anything", &open, &resp);
  assert_int_equal(resp.status, 401);
  ck_http_resp_fini(&resp);
  dispatch("GET", "/api/v1/jobs/3", NULL, &open, &resp); /* the others as before */
  assert_int_equal(resp.status, 200);
  ck_http_resp_fini(&resp);
  assert_int_equal(atomic_load(&open.calls), 1);
  fx_t tok = {.token = "s3cret"};
  dispatch("GET", "/api/v1/jobs/3/state", NULL, &tok, &resp);
  assert_int_equal(resp.status, 401);
  ck_http_resp_fini(&resp);
  dispatch("GET", "/api/v1/jobs/3/state", "Bearer wrong", &tok, &resp);
  assert_int_equal(resp.status, 401);
  ck_http_resp_fini(&resp);
  dispatch("GET", "/api/v1/jobs/3/state", "Bearer s3cret", &tok, &resp);
  assert_int_equal(resp.status, 200);
  ck_http_resp_fini(&resp);
  assert_int_equal(atomic_load(&tok.calls), 1);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void test_http_param_id(void **state) {
  int64_t v = -1;
  assert_int_equal(ck_http_param_id("0", &v), 0);
  assert_int_equal(v, 0);
  assert_int_equal(ck_http_param_id("0042", &v), 0);
  assert_int_equal(v, 42);
  assert_int_equal(ck_http_param_id("9223372036854775807", &v), 0);
  assert_int_equal(v, INT64_MAX);
  static const char *const bad[] = {"", "-1", "+1", " 1", "1 ", "1a", "0x10", "1.0",
                                    "9223372036854775808", "99999999999999999999"};
  for (size_t i = 0; i < CK_ARRAY_LEN(bad); i++) {
    v = 123;
    if (ck_http_param_id(bad[i], &v) != CK_EINVAL)
      fail_msg("'%s' was accepted as %lld", bad[i], (long long)v);
    assert_int_equal(v, 123); /* untouched */
  }
  assert_int_equal(ck_http_param_id(NULL, &v), CK_EINVAL);
}

static void test_http_routes_markdown_lists_every_route(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_buf_t md;
  ck_buf_init(&md);
  ck_http_routes_markdown(routes, CK_ARRAY_LEN(routes), &md);
  assert_contains(md.data, "| Method | Path | Auth | Summary |\n|---|---|---|---|\n");
  int lines = 0;
  for (const char *p = md.data; *p; p++) lines += *p == '\n';
  assert_int_equal(lines, (int)CK_ARRAY_LEN(routes) + 2);
  for (size_t i = 0; i < CK_ARRAY_LEN(routes); i++) {
    char want[256];
    snprintf(want, sizeof want, "| %s | `%s` | %s | ", routes[i].method, routes[i].pattern,
             routes[i].open ? "none" : routes[i].token_always ? "bearer token (always)"
                                                              : "bearer token");
    assert_contains(md.data, want);
  }
  assert_contains(md.data,
                  "| GET | `/api/v1/health` | none | Liveness: 200 while the server runs. |\n");
  assert_contains(md.data, "One operator \\| metrics. |\n"); /* a '|' in a cell is escaped */
  ck_buf_fini(&md);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_http_get_route_captures_id),
      cmocka_unit_test(test_http_post_body_echoed),
      cmocka_unit_test(test_http_unknown_path_404),
      cmocka_unit_test(test_http_wrong_method_405),
      cmocka_unit_test(test_http_oversized_body_413),
      cmocka_unit_test(test_http_bearer_token),
      cmocka_unit_test(test_http_garbage_does_not_crash),
      cmocka_unit_test(test_http_start_errors),
      cmocka_unit_test(test_http_dispatch_without_server),
      cmocka_unit_test(test_http_writes_need_json_and_may_be_refused),
      cmocka_unit_test(test_http_idle_connections_never_lock_out_a_request),
      cmocka_unit_test(test_http_token_always_route),
      cmocka_unit_test(test_http_param_id),
      cmocka_unit_test(test_http_routes_markdown_lists_every_route),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
