/*
 * DESIGN: unit tests for the ClickHouse client (connectors/clickhouse/ch_client.c) over a
 * scripted transport: the server's replies are fixed byte strings handed out a few bytes at a
 * time, and what the client writes is kept and parsed back. They check the Hello and Query
 * packets field by field at the test server's revision (54412) and at ours (54460) — client
 * info, settings as typed binary values before 54429 and as strings with flags after it, the
 * interserver secret, parameters, the addendum —, that a server Exception becomes a ck_error_t
 * with origin "clickhouse", the server's code and message, retriable only for the codes a
 * retry can cure, and never the password; the INSERT exchange (header block, data, the empty
 * block, EndOfStream), compressed or not; and that a connection lost or silent mid-insert is a
 * retriable error that leaves the client unusable. Hermetic: no server is needed.
 * Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "connectors/clickhouse/ch_client.h"
#include "connectors/clickhouse/ch_compress.h"
#include "connectors/clickhouse/ch_proto.h"
#include "connectors/clickhouse/ch_reader.h"

/* ---- the scripted transport ---- */

typedef struct script {
  ck_buf_t reply; /* what the "server" says, in order */
  size_t pos;
  ck_buf_t sent;  /* what the client wrote */
  int read_error; /* returned once the reply is exhausted: 0 = end of stream */
  int closed;
} script_t;

static ssize_t s_read(ck_ch_io_t *io, void *buf, size_t n, int timeout_ms) {
  script_t *s = io->impl;
  if (s->pos == s->reply.len) return s->read_error;
  size_t k = s->reply.len - s->pos;
  if (k > 3) k = 3; /* a few bytes at a time: the reader must resume */
  if (k > n) k = n;
  memcpy(buf, s->reply.data + s->pos, k);
  s->pos += k;
  return (ssize_t)k;
}

static int s_write(ck_ch_io_t *io, const void *buf, size_t n, int timeout_ms) {
  script_t *s = io->impl;
  ck_buf_append(&s->sent, buf, n);
  return 0;
}

static void s_close(ck_ch_io_t *io) { ((script_t *)io->impl)->closed++; }

static const ck_ch_io_ops_t script_ops = {s_read, s_write, s_close};

static ck_ch_io_t script_io(script_t *s) {
  ck_ch_io_t io = {&script_ops, s, "127.0.0.1:9"};
  return io;
}

static void script_init(script_t *s) {
  memset(s, 0, sizeof *s);
  ck_buf_init(&s->reply);
  ck_buf_init(&s->sent);
}

static void script_fini(script_t *s) {
  ck_buf_fini(&s->reply);
  ck_buf_fini(&s->sent);
}

static void put_hello(ck_buf_t *b, uint64_t revision) {
  ck_buf_put_uvarint(b, CK_CH_SERVER_HELLO);
  ck_ch_put_cstr(b, "ClickHouse");
  ck_buf_put_uvarint(b, 18);
  ck_buf_put_uvarint(b, 16);
  ck_buf_put_uvarint(b, revision);
  ck_ch_put_cstr(b, "UTC");   /* >= 54058 */
  ck_ch_put_cstr(b, "local"); /* >= 54372 */
  ck_buf_put_uvarint(b, 1);     /* >= 54401 */
}

static void put_exception(ck_buf_t *b, int32_t code, const char *msg) {
  ck_buf_put_uvarint(b, CK_CH_SERVER_EXCEPTION);
  ck_buf_put_le_n(b, (uint32_t)code, 4);
  ck_ch_put_cstr(b, "DB::Exception");
  ck_ch_put_cstr(b, msg);
  ck_ch_put_cstr(b, "stack trace");
  ck_buf_put_u8(b, 0);
}

/* ---- a cursor over what the client sent ---- */

typedef struct cur {
  const uint8_t *p, *end;
} cur_t;

static uint64_t c_varint(cur_t *c) {
  uint64_t v = 0;
  for (int s = 0; c->p < c->end; s += 7) {
    uint8_t b = *c->p++;
    v |= (uint64_t)(b & 0x7f) << s;
    if (!(b & 0x80)) return v;
  }
  fail_msg("truncated varint");
  return 0;
}

static char *c_str(cur_t *c) {
  size_t n = (size_t)c_varint(c);
  assert_true((size_t)(c->end - c->p) >= n);
  char *s = ck_strndup((const char *)c->p, n);
  c->p += n;
  return s;
}

static void expect_str(cur_t *c, const char *want) {
  char *s = c_str(c);
  assert_string_equal(s, want);
  ck_free(s);
}

static uint64_t c_fixed(cur_t *c, int n) {
  assert_true(c->end - c->p >= n);
  uint64_t v = ck_get_le_n(c->p, n);
  c->p += n;
  return v;
}

static const ck_ch_conf_t CONF = {.host = "127.0.0.1", .port = 9, .database = "db", .user = "alice",
                                  .password = "pa55-w0rd-XYZ", .compress = false};

/* ---------------------------------------------------------------- tests ---- */

static void test_hello_and_revision_negotiation(void **state) {
  uint64_t revs[] = {54412, 54460, 54999};
  for (int k = 0; k < 3; k++) {
    script_t s;
    script_init(&s);
    put_hello(&s.reply, revs[k]);
    if (revs[k] >= CK_CH_REV_PASSWORD_COMPLEXITY_RULES) {
      /* a newer server answers a 54460 client as a 54460 server would: nothing more */
    }
    ck_ch_client_t *c = NULL;
    ck_error_t err = {0};
    assert_int_equal(ck_ch_client_open_io(script_io(&s), &CONF, &c, &err), 0);
    assert_int_equal(ck_ch_client_revision(c), revs[k] < CK_CH_CLIENT_REVISION ? (int)revs[k] : CK_CH_CLIENT_REVISION);
    const ck_ch_server_t *sv = ck_ch_client_server(c);
    assert_string_equal(sv->name, "ClickHouse");
    assert_int_equal(sv->major, 18);
    assert_int_equal(sv->minor, 16);
    assert_int_equal(sv->patch, 1);
    assert_string_equal(sv->timezone, "UTC");
    assert_string_equal(sv->display_name, "local");
    /* our Hello: type, name, version, revision, database, user, password */
    cur_t cu = {(const uint8_t *)s.sent.data, (const uint8_t *)s.sent.data + s.sent.len};
    assert_int_equal(c_varint(&cu), CK_CH_CLIENT_HELLO);
    expect_str(&cu, CK_CH_CLIENT_NAME);
    assert_int_equal(c_varint(&cu), CK_CH_CLIENT_MAJOR);
    assert_int_equal(c_varint(&cu), CK_CH_CLIENT_MINOR);
    assert_int_equal(c_varint(&cu), CK_CH_CLIENT_REVISION);
    expect_str(&cu, "db");
    expect_str(&cu, "alice");
    expect_str(&cu, "pa55-w0rd-XYZ");
    if (ck_ch_client_revision(c) >= CK_CH_REV_ADDENDUM) expect_str(&cu, ""); /* quota key */
    assert_ptr_equal(cu.p, cu.end);
    ck_ch_client_free(c);
    assert_int_equal(s.closed, 1);
    script_fini(&s);
  }
}

static void test_server_exception_becomes_error_without_password(void **state) {
  script_t s;
  script_init(&s);
  put_exception(&s.reply, 193, "DB::Exception: Wrong password for user alice");
  ck_ch_client_t *c = NULL;
  ck_error_t err = {0};
  assert_int_equal(ck_ch_client_open_io(script_io(&s), &CONF, &c, &err), CK_EREMOTE);
  assert_null(c);
  assert_string_equal(err.origin, "clickhouse");
  assert_int_equal(err.origin_code, 193);
  assert_false(err.retriable);
  assert_non_null(strstr(err.message, "error 193: Wrong password for user alice"));
  assert_non_null(strstr(err.message, "127.0.0.1:9"));
  char text[2048];
  ck_error_format(&err, text, sizeof text);
  assert_null(strstr(text, "pa55-w0rd-XYZ"));
  assert_int_equal(s.closed, 1);
  script_fini(&s);

  /* a retriable code, during a query, with a nested cause */
  script_init(&s);
  put_hello(&s.reply, 54412);
  ck_buf_put_uvarint(&s.reply, CK_CH_SERVER_EXCEPTION);
  ck_buf_put_le_n(&s.reply, 252, 4);
  ck_ch_put_cstr(&s.reply, "DB::Exception");
  ck_ch_put_cstr(&s.reply, "Too many parts (300). Merges are processing significantly slower than inserts");
  ck_ch_put_cstr(&s.reply, "");
  ck_buf_put_u8(&s.reply, 1);
  ck_buf_put_le_n(&s.reply, 999, 4);
  ck_ch_put_cstr(&s.reply, "Coordination::Exception");
  ck_ch_put_cstr(&s.reply, "Session expired");
  ck_ch_put_cstr(&s.reply, "");
  ck_buf_put_u8(&s.reply, 0);
  ck_error_clear(&err);
  assert_int_equal(ck_ch_client_open_io(script_io(&s), &CONF, &c, &err), 0);
  assert_int_equal(ck_ch_query(c, "SELECT 1", NULL, 0, NULL, NULL, &err), CK_EREMOTE);
  assert_int_equal(err.origin_code, 252);
  assert_true(err.retriable);
  assert_non_null(strstr(err.detail, "Session expired"));
  assert_true(ck_ch_client_ok(c)); /* a query's exception leaves the connection in step */
  ck_ch_client_free(c);
  script_fini(&s);
}

/* Parses the Query packet the client sent at `rev` and checks every field. */
static void check_query_packet(cur_t *cu, int rev, const char *sql, bool compressed) {
  assert_int_equal(c_varint(cu), CK_CH_CLIENT_QUERY);
  expect_str(cu, ""); /* query id */
  assert_int_equal(c_fixed(cu, 1), CK_CH_QUERY_KIND_INITIAL);
  expect_str(cu, "");
  expect_str(cu, "");
  expect_str(cu, "0.0.0.0:0");
  if (rev >= CK_CH_REV_INITIAL_QUERY_START_TIME) assert_true(c_fixed(cu, 8) > 1600000000000000ULL);
  assert_int_equal(c_fixed(cu, 1), CK_CH_INTERFACE_TCP);
  ck_free(c_str(cu)); /* os user */
  ck_free(c_str(cu)); /* host name */
  expect_str(cu, CK_CH_CLIENT_NAME);
  assert_int_equal(c_varint(cu), CK_CH_CLIENT_MAJOR);
  assert_int_equal(c_varint(cu), CK_CH_CLIENT_MINOR);
  assert_int_equal(c_varint(cu), CK_CH_CLIENT_REVISION);
  expect_str(cu, ""); /* quota key (>= 54060) */
  if (rev >= CK_CH_REV_DISTRIBUTED_DEPTH) assert_int_equal(c_varint(cu), 0);
  assert_int_equal(c_varint(cu), CK_CH_CLIENT_PATCH); /* >= 54401 */
  if (rev >= CK_CH_REV_OPENTELEMETRY) assert_int_equal(c_fixed(cu, 1), 0);
  if (rev >= CK_CH_REV_PARALLEL_REPLICAS)
    for (int i = 0; i < 3; i++) assert_int_equal(c_varint(cu), 0);
  /* settings */
  expect_str(cu, "async_insert");
  if (rev >= CK_CH_REV_SETTINGS_AS_STRINGS) {
    assert_int_equal(c_varint(cu), 0); /* flags: not important */
    expect_str(cu, "0");
  } else {
    assert_int_equal(c_varint(cu), 0); /* a UInt64 setting, as a varint */
  }
  expect_str(cu, "log_comment");
  if (rev >= CK_CH_REV_SETTINGS_AS_STRINGS) assert_int_equal(c_varint(cu), 1);
  expect_str(cu, "clink's \"test\"");
  expect_str(cu, ""); /* end of settings */
  if (rev >= CK_CH_REV_INTERSERVER_SECRET) expect_str(cu, "");
  assert_int_equal(c_varint(cu), CK_CH_STAGE_COMPLETE);
  assert_int_equal(c_varint(cu), compressed);
  expect_str(cu, sql);
  if (rev >= CK_CH_REV_PARAMETERS) expect_str(cu, "");
}

/* The empty block that follows a query (no external tables) or ends an insert's data. */
static void check_empty_data(cur_t *cu, int rev, bool compressed) {
  assert_int_equal(c_varint(cu), CK_CH_CLIENT_DATA);
  expect_str(cu, "");
  ck_buf_t raw;
  ck_buf_init(&raw);
  if (compressed) {
    size_t used, need;
    ck_error_t err = {0};
    assert_int_equal(ck_ch_frame_decode(cu->p, (size_t)(cu->end - cu->p), 1 << 20, &raw, &used, &need, &err), 0);
    cu->p += used;
  } else {
    size_t n = 10; /* block info (8 bytes), no columns, no rows */
    ck_buf_append(&raw, cu->p, n);
    cu->p += n;
  }
  const uint8_t want[] = {1, 0, 2, 0xff, 0xff, 0xff, 0xff, 0, 0, 0};
  assert_int_equal(raw.len, 10);
  assert_memory_equal(raw.data, want, 10);
  ck_buf_fini(&raw);
}

static void test_query_packet_by_revision(void **state) {
  int revs[] = {54412, CK_CH_CLIENT_REVISION};
  for (int k = 0; k < 2; k++)
    for (int comp = 0; comp < 2; comp++) {
      script_t s;
      script_init(&s);
      put_hello(&s.reply, (uint64_t)revs[k]);
      ck_buf_put_uvarint(&s.reply, CK_CH_SERVER_PROGRESS);
      for (int i = 0; i < (revs[k] >= CK_CH_REV_SERVER_QUERY_TIME_IN_PROGRESS ? 6 : 3); i++)
        ck_buf_put_uvarint(&s.reply, (uint64_t)i);
      ck_buf_put_uvarint(&s.reply, CK_CH_SERVER_END_OF_STREAM);
      ck_ch_conf_t conf = CONF;
      conf.compress = comp;
      ck_ch_client_t *c = NULL;
      ck_error_t err = {0};
      assert_int_equal(ck_ch_client_open_io(script_io(&s), &conf, &c, &err), 0);
      size_t hello_len = s.sent.len;
      const ck_ch_setting_t settings[] = {
          {"async_insert", "0", CK_CH_SETTING_UINT, false},
          {"log_comment", "clink's \"test\"", CK_CH_SETTING_STRING, true},
      };
      if (ck_ch_query(c, "SELECT 1", settings, 2, NULL, NULL, &err)) fail_msg("%s", err.message);
      cur_t cu = {(const uint8_t *)s.sent.data + hello_len, (const uint8_t *)s.sent.data + s.sent.len};
      check_query_packet(&cu, revs[k], "SELECT 1", comp);
      check_empty_data(&cu, revs[k], comp);
      assert_ptr_equal(cu.p, cu.end);
      ck_ch_client_free(c);
      script_fini(&s);
    }
}

static void test_insert_exchange(void **state) {
  for (int comp = 0; comp < 2; comp++) {
    script_t s;
    script_init(&s);
    put_hello(&s.reply, 54412);
    /* the header block: the table's columns as the server takes them */
    ck_ch_block_t hdr;
    ck_ch_block_init(&hdr);
    ck_ch_block_add_col(&hdr, "id", "Int64", NULL);
    ck_ch_block_add_col(&hdr, "name", "LowCardinality(Nullable(String))", NULL);
    ck_buf_t raw;
    ck_buf_init(&raw);
    ck_ch_block_write(&hdr, 54412, &raw);
    ck_buf_put_uvarint(&s.reply, CK_CH_SERVER_TABLE_COLUMNS);
    ck_ch_put_cstr(&s.reply, "");
    ck_ch_put_cstr(&s.reply, "columns format version: 1\n2 columns:\n");
    ck_buf_put_uvarint(&s.reply, CK_CH_SERVER_DATA);
    ck_ch_put_cstr(&s.reply, "");
    if (comp) ck_ch_compress(raw.data, raw.len, CK_CH_METHOD_LZ4, &s.reply);
    else ck_buf_append(&s.reply, raw.data, raw.len);
    ck_buf_put_uvarint(&s.reply, CK_CH_SERVER_PROGRESS);
    for (int i = 0; i < 3; i++) ck_buf_put_uvarint(&s.reply, 0);
    ck_buf_put_uvarint(&s.reply, CK_CH_SERVER_END_OF_STREAM);
    ck_ch_conf_t conf = CONF;
    conf.compress = comp;
    ck_ch_client_t *c = NULL;
    ck_error_t err = {0};
    assert_int_equal(ck_ch_client_open_io(script_io(&s), &conf, &c, &err), 0);
    const ck_ch_block_t *header = NULL;
    assert_int_equal(ck_ch_insert_begin(c, "INSERT INTO t (id, name) VALUES", NULL, 0, &header, &err), 0);
    assert_int_equal(header->ncols, 2);
    assert_string_equal(header->cols[1].name, "name");
    assert_true(header->cols[1].type.lowcard && header->cols[1].type.nullable);
    ck_ch_block_t rows;
    ck_ch_block_init(&rows);
    ck_ch_block_add_col(&rows, "id", "Int64", NULL);
    ck_ch_block_add_col(&rows, "name", "LowCardinality(Nullable(String))", NULL);
    for (int i = 0; i < 5; i++) {
      ck_ch_col_put_bits(&rows.cols[0], (uint64_t)(i * 10));
      if (i == 2) ck_ch_col_put_null(&rows.cols[1]);
      else ck_ch_col_put_str(&rows.cols[1], i % 2 ? "odd" : "even", i % 2 ? 3 : 4);
    }
    ck_ch_block_seal(&rows);
    size_t before = s.sent.len;
    assert_int_equal(ck_ch_insert_send(c, &rows, &err), 0);
    size_t after_rows = s.sent.len;
    assert_int_equal(ck_ch_insert_end(c, &err), 0);
    assert_true(ck_ch_client_ok(c));
    /* what went out decodes, as a server would read it, to the same rows */
    ck_buf_t pkt;
    ck_buf_init(&pkt);
    ck_buf_append(&pkt, s.sent.data + before, after_rows - before);
    assert_int_equal((uint8_t)pkt.data[0], CK_CH_CLIENT_DATA);
    pkt.data[0] = CK_CH_SERVER_DATA; /* the same layout both ways */
    ck_ch_reader_t r;
    ck_ch_reader_init(&r, 54412);
    r.revision = 54412;
    r.compressed = comp;
    ck_ch_reader_feed(&r, pkt.data, pkt.len);
    const ck_ch_packet_t *p;
    assert_int_equal(ck_ch_reader_next(&r, &p, &err), 0);
    assert_int_equal(p->block.rows, 5);
    assert_int_equal(ck_ch_col_int(&p->block.cols[0], 4), 40);
    assert_true(ck_ch_col_is_null(&p->block.cols[1], 2));
    size_t n;
    const char *v = ck_ch_col_str(&p->block.cols[1], 3, &n);
    assert_int_equal(n, 3);
    assert_memory_equal(v, "odd", 3);
    ck_ch_reader_fini(&r);
    /* and the end of the data: the empty block */
    cur_t cu = {(const uint8_t *)s.sent.data + after_rows, (const uint8_t *)s.sent.data + s.sent.len};
    check_empty_data(&cu, 54412, comp);
    assert_ptr_equal(cu.p, cu.end);
    ck_buf_fini(&pkt);
    ck_ch_block_fini(&rows);
    ck_ch_block_fini(&hdr);
    ck_buf_fini(&raw);
    ck_ch_client_free(c);
    script_fini(&s);
  }
}

/* The server goes away after the rows were sent: the insert is in doubt, the error says the
 * connection is gone and is retriable, and the client is done. */
static void test_connection_lost_or_silent_mid_insert(void **state) {
  int failures[] = {0, CK_ETIMEOUT};
  for (int k = 0; k < 2; k++) {
    script_t s;
    script_init(&s);
    put_hello(&s.reply, 54412);
    ck_ch_block_t hdr;
    ck_ch_block_init(&hdr);
    ck_ch_block_add_col(&hdr, "id", "Int64", NULL);
    ck_buf_put_uvarint(&s.reply, CK_CH_SERVER_DATA);
    ck_ch_put_cstr(&s.reply, "");
    ck_ch_block_write(&hdr, 54412, &s.reply);
    s.read_error = failures[k];
    ck_ch_client_t *c = NULL;
    ck_error_t err = {0};
    assert_int_equal(ck_ch_client_open_io(script_io(&s), &CONF, &c, &err), 0);
    const ck_ch_block_t *header;
    assert_int_equal(ck_ch_insert_begin(c, "INSERT INTO t (id) VALUES", NULL, 0, &header, &err), 0);
    ck_ch_col_put_bits(&hdr.cols[0], 7);
    ck_ch_block_seal(&hdr);
    assert_int_equal(ck_ch_insert_send(c, &hdr, &err), 0);
    int rc = ck_ch_insert_end(c, &err);
    assert_int_equal(rc, k ? CK_ETIMEOUT : CK_EIO);
    assert_true(err.retriable);
    assert_string_equal(err.origin, "clickhouse");
    assert_non_null(strstr(err.message, k ? "timed out" : "closed the connection"));
    assert_non_null(strstr(err.message, "acknowledgement"));
    assert_false(ck_ch_client_ok(c));
    ck_error_clear(&err);
    assert_int_equal(ck_ch_insert_send(c, &hdr, &err), CK_EIO); /* unusable now */
    ck_ch_client_free(c);
    ck_ch_block_fini(&hdr);
    script_fini(&s);
  }
}

static void test_identifiers_and_literals_are_quoted(void **state) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_ch_quote_ident("we`ird\\name", &b);
  ck_buf_putc(&b, ' ');
  ck_ch_quote_str("it's \\ here", &b);
  assert_string_equal(b.data, "`we\\`ird\\\\name` 'it\\'s \\\\ here'");
  ck_buf_fini(&b);
}

static void test_unreachable_port_is_a_retriable_connect_error(void **state) {
  ck_ch_conf_t conf = CONF;
  conf.port = 1; /* nothing listens on tcpmux here */
  conf.connect_timeout_ms = 2000;
  ck_ch_client_t *c = NULL;
  ck_error_t err = {0};
  int rc = ck_ch_client_open(&conf, &c, &err);
  assert_true(rc == CK_ECONNECT || rc == CK_ETIMEOUT);
  assert_null(c);
  assert_true(err.retriable);
  assert_non_null(strstr(err.message, "could not connect to ClickHouse at 127.0.0.1:1"));
  assert_null(strstr(err.message, "pa55"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hello_and_revision_negotiation),
      cmocka_unit_test(test_server_exception_becomes_error_without_password),
      cmocka_unit_test(test_query_packet_by_revision),
      cmocka_unit_test(test_insert_exchange),
      cmocka_unit_test(test_connection_lost_or_silent_mid_insert),
      cmocka_unit_test(test_identifiers_and_literals_are_quoted),
      cmocka_unit_test(test_unreachable_port_is_a_retriable_connect_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
