/*
 * DESIGN: the HTTP layer of the cluster's REST API — a small server over libmicrohttpd, a
 * route table and its dispatcher, JSON errors, and the route table rendered for the docs.
 *
 * What it is. ck_http_start binds a listening socket on bind_host:port and runs one
 * libmicrohttpd daemon with a listening thread and a thread per connection (over poll()).
 * Each request is collected whole — method, path, raw query string, Authorization and
 * Content-Type headers and the body (capped at CK_HTTP_MAX_BODY, beyond it the answer is 413
 * and the handler is not called; always followed by a NUL, but body_len is its length) —
 * then handed to one handler function, which fills a ck_http_resp_t; the layer sends it with
 * its Content-Type. The REST API's handler is normally ck_http_dispatch over a
 * ck_http_route_t table: the one table of routes (STYLE habit 8), from which the dispatcher,
 * the 404/405/401/403/415 answers (ck_http_guard_t: token, refused writes, JSON for writes)
 * and the Markdown reference (ck_http_routes_markdown) all come.
 *
 * Threads. The handler runs on the thread of the request's connection, never on the thread
 * that called ck_http_start, and requests of different connections run at the same time (a
 * slow handler delays only its own client). Whatever the handler reads that other threads
 * write (coordinator state, job tables) it must read under that state's lock. ck_http_start,
 * ck_http_port and ck_http_stop are called by the owning thread; ck_http_stop joins the
 * polling and connection threads, so once it returns the handler is not running and
 * will not run again — ctx may then be freed. The dispatcher, ck_http_error,
 * ck_http_param_id and ck_http_routes_markdown touch only their arguments: any thread.
 *
 * Ownership. The server (ck_http_t) belongs to whoever started it and is freed by
 * ck_http_stop. A request and everything it points to (ck_http_req_t strings, params) live
 * until the handler returns: copy what must outlive it. The response body is a ck_buf_t the
 * layer initialises before and frees after the handler; the handler only appends to it (or
 * resets it). Route tables and the token are the caller's and must outlive the server.
 *
 * Guarantees. Every answer carries a Content-Type; every error this layer produces is JSON,
 * {"error":"message"}, with the message escaped as a JSON string. The exception: requests
 * libmicrohttpd itself refuses before they are complete (an unparsable request line or
 * chunk, headers beyond its per-connection memory, a Content-Length that is not a number, an
 * unknown HTTP version) get its own short HTML page without a Content-Type (400, 413, 431,
 * 505), or a closed connection for bytes that are no HTTP at all, and never reach the
 * handler. Nothing a client sends crashes the server or leaks. Limits: a client silent for
 * 10 s is dropped; past 64 connections a new one shuts down the one that has waited longest
 * (since it opened or got its last answer) without a handler running for it, so clients
 * that hold connections open cannot lock others out (the hard cap, 256, is never reached by
 * them); a body is held whole (at most 1 MiB per request); a chunked body that passes the cap
 * is read to its end and discarded before the 413, since libmicrohttpd allows no answer in
 * the middle of a body.
 */
#ifndef CK_CLUSTER_HTTP_H
#define CK_CLUSTER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"

/* Request bodies above this many bytes are refused with 413. */
#define CK_HTTP_MAX_BODY ((size_t)1 << 20)
/* At most this many ":name" segments in one route pattern. */
#define CK_HTTP_MAX_PARAMS 8

typedef struct ck_http ck_http_t;

/* One complete request, as the handler sees it. Valid until the handler returns. */
typedef struct ck_http_req {
  const char *method;        /* "GET", "POST", … as the client sent it */
  const char *path;          /* URL path, percent-decoded, without the query string */
  const char *query;         /* raw query string after '?' (not decoded), or "" */
  const char *body;          /* the request body, NUL-terminated ("" when none) */
  size_t body_len;           /* its length: trust this, not strlen (a body may hold NULs) */
  const char *authorization; /* the Authorization header, or NULL */
  const char *content_type;  /* the Content-Type header, or NULL */
} ck_http_req_t;

/* The answer the handler fills. */
typedef struct ck_http_resp {
  int status;               /* default 200 */
  const char *content_type; /* default "application/json"; must outlive the handler call */
  ck_buf_t body;
  ck_buf_t headers;         /* extra headers, added with ck_http_resp_header (opaque) */
} ck_http_resp_t;

typedef void (*ck_http_handler_fn)(void *ctx, const ck_http_req_t *req, ck_http_resp_t *resp);

/*
 * Starts serving on bind_host ("127.0.0.1", "::1", "0.0.0.0", a host name; NULL means
 * "127.0.0.1") and port (0: the system picks a free one, see ck_http_port). fn(ctx, …) is
 * called on libmicrohttpd's thread for every complete request. On success *out is the running
 * server; on failure (bad address, port in use) returns CK_EINVAL or CK_EIO with err set.
 */
int ck_http_start(const char *bind_host, int port, ck_http_handler_fn fn, void *ctx,
                  ck_http_t **out, ck_error_t *err);
/* The port actually bound. */
int ck_http_port(const ck_http_t *http);
/* Stops serving (in-flight connections are closed), joins the thread and frees. NULL is fine. */
void ck_http_stop(ck_http_t *http);

/* For a ck_http_resp_t not owned by the server (tests, callers of ck_http_dispatch). */
void ck_http_resp_init(ck_http_resp_t *resp);
void ck_http_resp_fini(ck_http_resp_t *resp);
/* Adds a response header. name is a token from the code (CR, LF, ':' or blanks in it are a
 * bug: aborts); CR and LF in value, which may carry client text, become spaces. */
void ck_http_resp_header(ck_http_resp_t *resp, const char *name, const char *value);
/* Sets a JSON error answer: status and {"error":"message"}; any body so far is replaced. */
void ck_http_error(ck_http_resp_t *resp, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One REST route. A table of these is the one place routes are declared. */
typedef struct ck_http_route {
  const char *method;  /* "GET", "POST", … */
  const char *pattern; /* "/api/v1/jobs/:id/operators" — ":name" segments capture */
  bool open;           /* true: served without the bearer token (health checks) */
  /* params: the captured segments, in pattern order (NULL when the pattern captures none). */
  void (*fn)(void *ctx, const ck_http_req_t *req, const char *const *params,
             ck_http_resp_t *resp);
  const char *summary; /* one line, for the docs */
  /* true: served only with the bearer token, even by a server that has none configured
   * (which then answers 401 to everyone): routes that show data, not just status (a job's
   * state) */
  bool token_always;
} ck_http_route_t;

/* How ck_http_dispatch guards the routes that are not open. */
typedef struct ck_http_guard {
  /* Non-empty: every route whose open is false needs "Authorization: Bearer <token>". */
  const char *token;
  /* Served on a non-loopback address without a token: state-changing routes (every method
   * but GET and HEAD) are refused with 403, whatever the request carries. */
  bool refuse_writes;
  /* State-changing routes need "Content-Type: application/json" (parameters such as
   * charset allowed), else 415: a browser cannot send that cross-origin without a CORS
   * preflight, which this server never answers, so no web page can drive them. */
  bool json_writes;
} ck_http_guard_t;

/* True for the methods that change state: everything but GET and HEAD. */
bool ck_http_method_writes(const char *method);
/* "application/json", optionally followed by ";parameters", any case, blanks around. */
bool ck_http_content_type_is_json(const char *content_type);
/* got equals want, in time that depends only on the lengths (tokens). NULL got: false. */
bool ck_http_token_equal(const char *got, size_t got_len, const char *want);

/*
 * Answers req from the routes table. A pattern matches a path with the same number of '/'
 * segments where every literal segment is equal and every ":name" segment is non-empty;
 * the first matching route whose method equals req->method wins (a HEAD request also matches
 * a GET route). No pattern matches: 404. Patterns match but no method does: 405 with an Allow
 * header. Then guard (NULL: none) in this order: a missing or different bearer token is 401
 * with a WWW-Authenticate header (for a token_always route also when guard has no token); refused writes 403; a state-changing route without a JSON
 * content type 415. All errors are JSON. Any thread; touches only its arguments (the route's
 * fn runs with ctx). req->body must hold body_len bytes followed by a NUL.
 */
void ck_http_dispatch(const ck_http_route_t *routes, size_t n, const ck_http_guard_t *guard,
                      void *ctx, const ck_http_req_t *req, ck_http_resp_t *resp);

/* Parses a path parameter that must be a non-negative decimal integer (digits only, fits
 * int64_t). Returns 0, or CK_EINVAL for anything else (*out untouched). */
int ck_http_param_id(const char *s, int64_t *out);

/* Appends the route table as a Markdown table: method, path, auth, summary. */
void ck_http_routes_markdown(const ck_http_route_t *routes, size_t n, ck_buf_t *out);

#endif
