/*
 * DESIGN: libFuzzer target for the coordinator's REST request path — the guard (bearer token,
 * refused writes, JSON content type), the route dispatcher (src/cluster/http.c) and every
 * route handler with its body reader (src/cluster/rest.c), called directly through
 * ck_coordinator_detached_http with arbitrary method, path, query, headers and body: no
 * sockets, no threads, a fresh detached coordinator per input.
 *
 * Input layout (newline-separated head, then the body):
 *   byte 0     setup: bit 0 a token is set ("fuzz-token"), bit 1 the coordinator "listens" on
 *              0.0.0.0 (no token: writes refused), bit 2 after the request, also GET
 *              /api/v1/jobs, /api/v1/jobs/1, /api/v1/jobs/1/operators, /checkpoints and
 *              /metrics (renders whatever the request created)
 *   line 1     method
 *   line 2     request target: path, optionally "?query"
 *   lines 3…   headers "Name: value" (Authorization and Content-Type are used) until an empty
 *              line
 *   the rest   the body, handed over in a buffer of exactly its length plus the NUL the HTTP
 *              layer guarantees, so ASan sees any read past it
 * Properties checked, besides "no crash, no leak, no undefined behaviour" under ASan+UBSan:
 * every answer has a status from 100 to 599 and a content type; every error (4xx/5xx) is a
 * JSON object {"error":"…"} with a non-empty message; a state-changing route answered 2xx
 * only with a JSON content type, never when writes are refused, and, with a token set, only
 * with that token.
 *
 * Plan-time checks of connectors may try the network (a mutated ClickHouse or PostgreSQL
 * sink): run it where nothing answers on their default ports, or accept the slower inputs.
 *
 * Build (clang with libFuzzer, from the repository root; the libraries built by CMake with
 * coverage instrumentation):
 *   CC=clang cmake -S . -B build-fuzz -DCLINK_TESTS=OFF \
 *     -DCMAKE_C_FLAGS='-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined'
 *   cmake --build build-fuzz -j2 --target ck_cluster
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
 *     -D_GNU_SOURCE -I src -I include -I build-fuzz/generated fuzz/rest_request.c \
 *     build-fuzz/src/cluster/libck_cluster.a build-fuzz/src/sql/libck_sql.a \
 *     build-fuzz/src/connectors/libck_connectors.a build-fuzz/src/runtime/libck_runtime.a \
 *     build-fuzz/src/checkpoint/libck_checkpoint.a build-fuzz/src/base/libck_base.a \
 *     -lmicrohttpd -lrdkafka -lpq -llz4 -lz -lzstd -lsnappy -lm -lpthread -o rest_request
 *   mkdir -p /tmp/fuzz-rest/corpus
 *   ./rest_request -max_len=8192 -rss_limit_mb=2048 -timeout=30 /tmp/fuzz-rest/corpus \
 *     fuzz/corpus/rest_request
 * (new inputs go to the first directory; the second is the seed corpus, read only).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/log.h"
#include "cluster/coordinator.h"
#include "cluster/http.h"

#define TOKEN "fuzz-token"

/* The next line of [*p, end) as a NUL-terminated copy (ck_malloc'd), or NULL at the end. */
static char *next_line(const uint8_t **p, const uint8_t *end) {
  if (*p >= end) return NULL;
  const uint8_t *nl = memchr(*p, '\n', (size_t)(end - *p));
  size_t n = nl ? (size_t)(nl - *p) : (size_t)(end - *p);
  char *line = ck_malloc(n + 1);
  memcpy(line, *p, n);
  line[n] = 0;
  *p += n + (nl ? 1 : 0);
  return line;
}

static void check_answer(const ck_http_req_t *req, const ck_http_resp_t *resp, bool token,
                         bool refused) {
  if (resp->status < 100 || resp->status > 599) abort();
  if (!resp->content_type || !*resp->content_type) abort();
  if (resp->status >= 400) {
    const char *b = resp->body.data;
    if (!b || strncmp(b, "{\"error\":\"", 10) != 0 || b[10] == '"') abort();
    if (resp->body.len < 2 || b[resp->body.len - 1] != '}') abort();
  }
  if (resp->status / 100 == 2 && ck_http_method_writes(req->method) &&
      strcmp(req->path, "/api/v1/health") != 0) {
    if (!ck_http_content_type_is_json(req->content_type)) abort();
    if (refused) abort();
    if (token) {
      const char *a = req->authorization;
      if (!a || !strstr(a, TOKEN)) abort();
    }
  }
}

static void serve(ck_coordinator_t *co, const ck_http_req_t *req, bool token, bool refused) {
  ck_http_resp_t resp;
  ck_http_resp_init(&resp);
  ck_coordinator_detached_http(co, req, &resp);
  check_answer(req, &resp, token, refused);
  ck_http_resp_fini(&resp);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  ck_log_set_level(CK_LOG_OFF);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const uint8_t setup = data[0];
  const uint8_t *p = data + 1, *end = data + size;
  char *method = next_line(&p, end);
  char *target = next_line(&p, end);
  char *auth = NULL, *ctype = NULL;
  for (;;) {
    char *h = next_line(&p, end);
    if (!h) break;
    if (!*h) {
      ck_free(h);
      break;
    }
    char *colon = strchr(h, ':');
    if (colon) {
      *colon = 0;
      const char *v = colon + 1;
      while (*v == ' ') v++;
      char **dst = !strcasecmp(h, "Authorization") ? &auth
                 : !strcasecmp(h, "Content-Type") ? &ctype : NULL;
      if (dst) {
        ck_free(*dst);
        size_t n = strlen(v);
        *dst = ck_malloc(n + 1);
        memcpy(*dst, v, n + 1);
      }
    }
    ck_free(h);
  }
  size_t body_len = (size_t)(end - p);
  char *body = malloc(body_len + 1); /* exact: a read past the NUL is an ASan report */
  if (!body) abort();
  if (body_len) memcpy(body, p, body_len);
  body[body_len] = 0;

  char *query = target ? strchr(target, '?') : NULL;
  if (query) *query++ = 0;
  ck_http_req_t req = {
      .method = method ? method : "",
      .path = target ? target : "",
      .query = query ? query : "",
      .body = body,
      .body_len = body_len,
      .authorization = auth,
      .content_type = ctype,
  };
  bool token = setup & 1, refused = !token && (setup & 2);
  ck_coordinator_opts_t o = {
      .host = (setup & 2) ? "0.0.0.0" : "127.0.0.1",
      .port = 0,
      .http_port = -1,
      .checkpoint_dir = "/tmp/clink-fuzz-rest-request", /* never made: nothing deploys */
      .auth_token = token ? TOKEN : NULL,
  };
  ck_coordinator_t *co = ck_coordinator_detached_new(&o);
  serve(co, &req, token, refused);
  if (setup & 4) {
    static const char *const reads[] = {"/api/v1/jobs", "/api/v1/jobs/1",
                                        "/api/v1/jobs/1/operators", "/api/v1/jobs/1/checkpoints",
                                        "/api/v1/workers", "/metrics"};
    for (size_t i = 0; i < sizeof reads / sizeof *reads; i++) {
      ck_http_req_t get = {.method = "GET", .path = reads[i], .query = "", .body = "",
                           .authorization = token ? "Bearer " TOKEN : NULL};
      serve(co, &get, token, refused);
    }
  }
  ck_coordinator_detached_free(co);
  free(body);
  ck_free(method);
  ck_free(target);
  ck_free(auth);
  ck_free(ctype);
  return 0;
}
