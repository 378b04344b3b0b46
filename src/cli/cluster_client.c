/*
 * DESIGN: see cluster_client.h.
 */
#include "cli/cluster_client.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/log.h"
#include "cluster/proto.h"

int ck_cli_port(const char *cmd, const char *opt, const char *v, bool allow_zero, int *out) {
  char *end;
  long p = strtol(v, &end, 10);
  if (!*v || *end || p < (allow_zero ? 0 : 1) || p > 65535) {
    fprintf(stderr, "clink %s: --%s must be a port number from %d to 65535, not '%s'\n", cmd,
            opt, allow_zero ? 0 : 1, v);
    return 2;
  }
  *out = (int)p;
  return 0;
}

int ck_cli_cluster_call(const char *host, int port, int type, const ck_buf_t *payload,
                        int64_t *value, ck_buf_t *text) {
  ck_error_t err;
  ck_error_clear(&err);
  int fd;
  int rc = ck_sock_connect(host, port, 5000, &fd, &err);
  if (rc) {
    ck_buf_printf(text, "could not reach the coordinator: %s", err.message);
    return rc;
  }
  ck_proto_conn_t c;
  ck_proto_conn_init(&c, fd);
  /* every request starts with the token (CLINK_AUTH_TOKEN; "" when unset) */
  ck_buf_t req;
  ck_buf_init(&req);
  ck_proto_put_str(&req, getenv("CLINK_AUTH_TOKEN"));
  if (payload && payload->len) ck_buf_append(&req, payload->data, payload->len);
  ck_proto_frame_t f;
  rc = ck_proto_call(&c, type, &req, 30000, &f, &err);
  ck_buf_fini(&req);
  if (!rc && f.type != CK_PROTO_REPLY)
    rc = ck_error_set(&err, CK_EPROTO, "the coordinator answered with %s",
                      ck_proto_type_name(f.type));
  if (rc) {
    ck_buf_printf(text, "%s", err.message);
  } else {
    rc = (int)(int32_t)ck_proto_u32(&f.body);
    *value = ck_proto_i64(&f.body);
    char *s = ck_proto_str(&f.body);
    ck_buf_puts(text, s);
    ck_free(s);
  }
  ck_proto_conn_fini(&c);
  return rc;
}

int ck_cli_submit(const char *host, int port, const char *name, const char *sql,
                  int parallelism, const char *capture_dir, int64_t capture_records) {
  ck_buf_t p, text;
  ck_buf_init(&p);
  ck_buf_init(&text);
  ck_proto_put_str(&p, name);
  ck_proto_put_str(&p, sql);
  ck_proto_put_u32(&p, (uint32_t)parallelism);
  ck_proto_put_str(&p, capture_dir); /* the per-job options */
  ck_proto_put_i64(&p, capture_records);
  int64_t id = 0;
  int rc = ck_cli_cluster_call(host, port, CK_PROTO_SUBMIT, &p, &id, &text);
  if (rc) {
    fprintf(stderr, "clink run: %s\n", text.data ? text.data : "");
  } else {
    printf("submitted job %lld\n", (long long)id);
    CK_LOG_INFO("job", "job delivery guarantee: %s", text.data);
  }
  ck_buf_fini(&p);
  ck_buf_fini(&text);
  return rc ? 1 : 0;
}
