/*
 * DESIGN: unit tests for src/cluster/proto — the control protocol's frames.
 *
 * Frames are built with the field writers, sent over a socketpair and read back through the
 * resumable reader: fields come back equal, a frame cut at every byte is "need more" until it
 * is whole, several frames in one read come out one by one, and bytes that cannot be a frame
 * (bad magic, version or length) are a protocol error, never a crash (random bytes too).
 * Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "cluster/proto.h"

static void encode(int type, uint64_t epoch, const ck_buf_t *payload, ck_buf_t *out) {
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  ck_proto_conn_t c;
  ck_proto_conn_init(&c, sv[0]);
  assert_int_equal(ck_proto_send(&c, type, epoch, payload, NULL), 0);
  ck_proto_conn_fini(&c);
  char chunk[4096];
  ssize_t n;
  while ((n = read(sv[1], chunk, sizeof chunk)) > 0) ck_buf_append(out, chunk, (size_t)n);
  close(sv[1]);
}

static void test_fields_round_trip_over_a_socket(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  ck_proto_conn_t a, b;
  ck_proto_conn_init(&a, sv[0]);
  ck_proto_conn_init(&b, sv[1]);
  ck_buf_t p;
  ck_buf_init(&p);
  ck_proto_put_str(&p, "worker-1");
  ck_proto_put_u32(&p, 4);
  ck_proto_put_i64(&p, -1234567890123LL);
  ck_proto_put_u8(&p, 255);
  ck_proto_put_str(&p, NULL);
  ck_proto_put_str(&p, "tab\there, ünïcode");
  assert_int_equal(ck_proto_send(&a, CK_PROTO_REGISTER, 42, &p, NULL), 0);
  assert_int_equal(ck_proto_send(&a, CK_PROTO_HEARTBEAT, 43, NULL, NULL), 0);
  ck_error_t err;
  ck_error_clear(&err);
  ck_proto_frame_t f;
  assert_int_equal(ck_proto_next(&b, &f, &err), 0); /* nothing read yet */
  assert_int_equal(ck_proto_fill(&b, &err), 0);
  assert_int_equal(ck_proto_next(&b, &f, &err), 1);
  assert_int_equal(f.type, CK_PROTO_REGISTER);
  assert_int_equal(f.epoch, 42);
  assert_string_equal(ck_proto_type_name(f.type), "REGISTER");
  char *s = ck_proto_str(&f.body);
  assert_string_equal(s, "worker-1");
  ck_free(s);
  assert_int_equal(ck_proto_u32(&f.body), 4);
  assert_int_equal(ck_proto_i64(&f.body), -1234567890123LL);
  assert_int_equal(ck_proto_u8(&f.body), 255);
  s = ck_proto_str(&f.body);
  assert_string_equal(s, "");
  ck_free(s);
  s = ck_proto_str(&f.body);
  assert_string_equal(s, "tab\there, ünïcode");
  ck_free(s);
  assert_false(f.body.bad);
  /* reading past the end: zeros, "" and the bad flag, never out of bounds */
  assert_int_equal(ck_proto_i64(&f.body), 0);
  s = ck_proto_str(&f.body);
  assert_string_equal(s, "");
  ck_free(s);
  assert_true(f.body.bad);
  /* the second frame came in the same read */
  assert_int_equal(ck_proto_next(&b, &f, &err), 1);
  assert_int_equal(f.type, CK_PROTO_HEARTBEAT);
  assert_int_equal(f.epoch, 43);
  assert_int_equal(f.body.n, 0);
  assert_int_equal(ck_proto_next(&b, &f, &err), 0);
  /* the peer going away is an error */
  ck_proto_conn_fini(&a);
  int rc = ck_proto_fill(&b, &err);
  assert_int_equal(rc, CK_ECONNECT);
  ck_proto_conn_fini(&b);
  ck_buf_fini(&p);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* A frame cut anywhere is "need more" until its last byte. */
static void test_partial_frames_need_more(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_buf_t p, wire;
  ck_buf_init(&p);
  ck_buf_init(&wire);
  ck_proto_put_i64(&p, 7);
  ck_proto_put_str(&p, "SELECT 1");
  encode(CK_PROTO_SUBMIT, 9, &p, &wire);
  ck_error_t err;
  ck_error_clear(&err);
  ck_proto_frame_t f;
  size_t used;
  for (size_t cut = 0; cut < wire.len; cut++) {
    int rc = ck_proto_parse((const uint8_t *)wire.data, cut, &used, &f, &err);
    if (rc != 0) fail_msg("a frame cut at %zu of %zu bytes gave %d, not 'need more'", cut,
                          wire.len, rc);
  }
  assert_int_equal(ck_proto_parse((const uint8_t *)wire.data, wire.len, &used, &f, &err), 1);
  assert_int_equal(used, wire.len);
  assert_int_equal(ck_proto_i64(&f.body), 7);
  ck_buf_fini(&p);
  ck_buf_fini(&wire);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void expect_proto_error(const uint8_t *bytes, size_t n, const char *needle) {
  ck_error_t err;
  ck_error_clear(&err);
  ck_proto_frame_t f;
  size_t used;
  int rc = ck_proto_parse(bytes, n, &used, &f, &err);
  if (rc != CK_EPROTO) fail_msg("expected a protocol error, got %d", rc);
  if (!strstr(err.message, needle)) fail_msg("'%s' does not say '%s'", err.message, needle);
}

static void test_foreign_bytes_are_a_protocol_error(void **state) {
  ck_buf_t wire;
  ck_buf_init(&wire);
  encode(CK_PROTO_LIST, 0, NULL, &wire);
  uint8_t *w = (uint8_t *)wire.data;
  uint8_t bad[64];
  memcpy(bad, w, wire.len);
  bad[4] = 'H', bad[5] = 'T'; /* an HTTP client on the control port */
  expect_proto_error(bad, wire.len, "not a clink control connection");
  memcpy(bad, w, wire.len);
  bad[6] = CK_PROTO_VERSION + 1;
  expect_proto_error(bad, wire.len, "version");
  memcpy(bad, w, wire.len);
  bad[0] = 3, bad[1] = bad[2] = bad[3] = 0; /* shorter than a header */
  expect_proto_error(bad, wire.len, "announces 3 bytes");
  memcpy(bad, w, wire.len);
  bad[3] = 0x7f; /* ~2 GB */
  expect_proto_error(bad, wire.len, "which no clink frame has");
  const char *http = "GET / HTTP/1.1\r\n\r\n";
  ck_error_t err;
  ck_error_clear(&err);
  ck_proto_frame_t f;
  size_t used;
  assert_int_equal(ck_proto_parse((const uint8_t *)http, strlen(http), &used, &f, &err),
                   CK_EPROTO);
  ck_buf_fini(&wire);
}

/* A connection that has not registered may announce at most CK_PROTO_MAX_UNREGISTERED bytes
 * (a SUBMIT: CK_PROTO_MAX_SUBMIT); a longer frame is refused from its first 8 bytes, before
 * its body would be buffered. */
static void test_frame_limits_refuse_from_the_header(void **state) {
  uint8_t h[16] = {0};
  h[4] = CK_PROTO_MAGIC & 0xff, h[5] = CK_PROTO_MAGIC >> 8, h[6] = CK_PROTO_VERSION;
  struct {
    int type;
    uint32_t len;
    int want; /* 0: need more (acceptable so far), CK_EPROTO: refused */
  } cases[] = {
      {CK_PROTO_LIST, CK_PROTO_MAX_UNREGISTERED, 0},
      {CK_PROTO_LIST, CK_PROTO_MAX_UNREGISTERED + 1, CK_EPROTO},
      {CK_PROTO_REGISTER, 64u << 20, CK_EPROTO},
      {CK_PROTO_HEARTBEAT, 1u << 20, CK_EPROTO},
      {CK_PROTO_SUBMIT, 1u << 20, 0},
      {CK_PROTO_SUBMIT, CK_PROTO_MAX_SUBMIT, 0},
      {CK_PROTO_SUBMIT, CK_PROTO_MAX_SUBMIT + 1, CK_EPROTO},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    uint32_t len = cases[i].len;
    for (int b = 0; b < 4; b++) h[b] = (uint8_t)(len >> (8 * b));
    h[7] = (uint8_t)cases[i].type;
    ck_error_t err;
    ck_error_clear(&err);
    ck_proto_frame_t f;
    size_t used;
    int rc = ck_proto_parse_bounded(h, 8, CK_PROTO_MAX_UNREGISTERED, CK_PROTO_MAX_SUBMIT, &used,
                                    &f, &err);
    if (rc != cases[i].want)
      fail_msg("a %s frame of %u bytes gave %d, not %d (%s)", ck_proto_type_name(cases[i].type),
               len, rc, cases[i].want, err.message);
    if (rc) assert_non_null(strstr(err.message, "more than the"));
    /* a registered peer (no limits but the protocol's) may send all of them */
    ck_error_clear(&err);
    assert_int_equal(ck_proto_parse(h, 8, &used, &f, &err), 0);
  }
}

/* Random bytes: an error, "need more" or a frame whose fields read within bounds. */
static void test_random_bytes_never_crash(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  srand(7);
  uint8_t bytes[256];
  for (int round = 0; round < 20000; round++) {
    size_t n = (size_t)(rand() % (int)sizeof bytes);
    for (size_t i = 0; i < n; i++) bytes[i] = (uint8_t)rand();
    if (round % 2 && n >= 8) { /* plausible headers reach the field readers */
      uint32_t len = (uint32_t)(n - 4);
      memcpy(bytes, &len, 4);
      bytes[4] = CK_PROTO_MAGIC & 0xff, bytes[5] = CK_PROTO_MAGIC >> 8;
      bytes[6] = CK_PROTO_VERSION;
    }
    ck_error_t err;
    ck_error_clear(&err);
    ck_proto_frame_t f;
    size_t used;
    int rc = ck_proto_parse(bytes, n, &used, &f, &err);
    assert_true(rc == 0 || rc == 1 || rc == CK_EPROTO);
    if (rc == 1) {
      assert_true(used <= n);
      for (int k = 0; k < 8 && !f.body.bad; k++) {
        char *s = ck_proto_str(&f.body);
        ck_free(s);
        (void)ck_proto_i64(&f.body);
      }
    }
  }
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fields_round_trip_over_a_socket),
      cmocka_unit_test(test_partial_frames_need_more),
      cmocka_unit_test(test_foreign_bytes_are_a_protocol_error),
      cmocka_unit_test(test_frame_limits_refuse_from_the_header),
      cmocka_unit_test(test_random_bytes_never_crash),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
