/*
 * DESIGN: unit tests of the Kafka connector that need no broker (connectors/kafka/): the
 * position snapshot encoding (round trip, exact bytes, every truncation and corruption
 * refused), the option tables as the planner applies them (the 'kafka.' pass-through prefix,
 * enums, required options, did-you-mean hints), the plan-time check (formats, 'raw' schema,
 * key columns, librdkafka properties) and a restore before open. The broker tests are in
 * test_connectors_kafka_broker.c. Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "connectors/connectors.h"
#include "connectors/kafka/kafka.h"
#include "test_connectors_util.h"

static void assert_contains(const char *s, const char *part) {
  if (!strstr(s, part)) fail_msg("\"%s\" does not contain \"%s\"", s, part);
}

/* ---------------------------------------------------------------- snapshot */

static void test_kafka_snapshot_round_trip(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_kafka_pos_t pos[] = {{0, 0}, {3, 127}, {5, 128}, {2147483647, INT64_MAX}, {7, 1234567890123}};
  ck_buf_t b;
  ck_buf_init(&b);
  ck_kafka_snap_encode(&b, "readings", pos, 5);
  ck_str_t topic;
  ck_kafka_pos_t *got;
  int n;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_kafka_snap_decode(b.data, b.len, &topic, &got, &n, &err), 0);
  assert_int_equal(topic.len, 8);
  assert_memory_equal(topic.ptr, "readings", 8);
  assert_int_equal(n, 5);
  for (int i = 0; i < 5; i++) {
    assert_int_equal(got[i].partition, pos[i].partition);
    assert_true(got[i].offset == pos[i].offset);
  }
  ck_free(got);
  /* the exact bytes of a small state: version, topic, count, (partition, offset) varints */
  ck_buf_reset(&b);
  ck_kafka_pos_t two[] = {{1, 300}, {0, 5}};
  ck_kafka_snap_encode(&b, "t", two, 2);
  const uint8_t expect[] = {1, 1, 't', 2, 1, 0xac, 0x02, 0, 5};
  assert_int_equal(b.len, sizeof expect);
  assert_memory_equal(b.data, expect, sizeof expect);
  /* an empty position (a subtask without partitions) */
  ck_buf_reset(&b);
  ck_kafka_snap_encode(&b, "t", NULL, 0);
  assert_int_equal(ck_kafka_snap_decode(b.data, b.len, &topic, &got, &n, &err), 0);
  assert_int_equal(n, 0);
  ck_free(got);
  ck_buf_fini(&b);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void test_kafka_snapshot_corrupt_states_refused(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_kafka_pos_t pos[] = {{0, 1000}, {2, 99999}};
  ck_buf_t b;
  ck_buf_init(&b);
  ck_kafka_snap_encode(&b, "events", pos, 2);
  ck_str_t topic;
  ck_kafka_pos_t *got;
  int n;
  ck_error_t err;
  for (size_t len = 0; len < b.len; len++) { /* every truncation */
    ck_error_clear(&err);
    int rc = ck_kafka_snap_decode(b.data, len, &topic, &got, &n, &err);
    if (rc != CK_ESTATE) fail_msg("a state truncated to %zu of %zu bytes gave %d", len, b.len, rc);
    assert_null(got);
  }
  ck_buf_putc(&b, 0); /* trailing garbage */
  ck_error_clear(&err);
  assert_int_equal(ck_kafka_snap_decode(b.data, b.len, &topic, &got, &n, &err), CK_ESTATE);
  assert_contains(err.message, "truncated or corrupt");
  b.data[0] = 9; /* unknown version */
  ck_error_clear(&err);
  assert_int_equal(ck_kafka_snap_decode(b.data, b.len, &topic, &got, &n, &err), CK_ESTATE);
  assert_contains(err.message, "unknown state version 9");
  /* a count far larger than the bytes could hold is corrupt, not a huge allocation */
  const uint8_t huge[] = {1, 1, 't', 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0};
  ck_error_clear(&err);
  assert_int_equal(ck_kafka_snap_decode(huge, sizeof huge, &topic, &got, &n, &err), CK_ESTATE);
  /* a partition number beyond int32 */
  const uint8_t bigpart[] = {1, 1, 't', 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0};
  ck_error_clear(&err);
  assert_int_equal(ck_kafka_snap_decode(bigpart, sizeof bigpart, &topic, &got, &n, &err),
                   CK_ESTATE);
  ck_buf_fini(&b);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* Version 2: beside the positions, each partition's run start and the log's identity; every
 * truncation refused; version 1 still decodes, with nothing of that known. */
static void test_kafka_snapshot_identity(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_kafka_pos_t pos[] = {{0, 20}, {1, 300}};
  int64_t starts[] = {7, -1};
  ck_kafka_ident_t id = {.cluster_id = ck_str_of("xZhXzIFDK5kk6bdrW4qbkA"), .has_topic_id = true};
  for (int i = 0; i < 16; i++) id.topic_id[i] = (uint8_t)(0x47 + i * 13);
  ck_buf_t b;
  ck_buf_init(&b);
  ck_kafka_snap_encode_ident(&b, "t", pos, 2, starts, &id);
  assert_int_equal((uint8_t)b.data[0], 2);
  ck_str_t topic;
  ck_kafka_pos_t *got;
  int64_t *gs;
  int n, version;
  ck_kafka_ident_t gid;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_kafka_snap_decode_ident(b.data, b.len, &topic, &got, &gs, &n, &gid,
                                              &version, &err), 0);
  assert_int_equal(version, 2);
  assert_int_equal(n, 2);
  assert_true(got[0].offset == 20 && got[1].offset == 300);
  assert_true(gs[0] == 7 && gs[1] == -1);
  assert_int_equal(gid.cluster_id.len, 22);
  assert_memory_equal(gid.cluster_id.ptr, "xZhXzIFDK5kk6bdrW4qbkA", 22);
  assert_true(gid.has_topic_id);
  assert_memory_equal(gid.topic_id, id.topic_id, 16);
  ck_free(got);
  ck_free(gs);
  /* the plain decoder reads version 2 too */
  assert_int_equal(ck_kafka_snap_decode(b.data, b.len, &topic, &got, &n, &err), 0);
  assert_int_equal(n, 2);
  ck_free(got);
  for (size_t len = 0; len < b.len; len++) { /* every truncation */
    ck_error_clear(&err);
    int rc = ck_kafka_snap_decode_ident(b.data, len, &topic, &got, &gs, &n, &gid, NULL, &err);
    if (rc != CK_ESTATE) fail_msg("a state truncated to %zu of %zu bytes gave %d", len, b.len, rc);
    assert_null(got);
  }
  /* no identity known: an empty cluster id, no topic id */
  ck_buf_reset(&b);
  ck_kafka_snap_encode_ident(&b, "t", pos, 1, NULL, NULL);
  const uint8_t expect[] = {2, 1, 't', 1, 0, 20, 0, 0, 0};
  assert_int_equal(b.len, sizeof expect);
  assert_memory_equal(b.data, expect, sizeof expect);
  /* version 1: nothing of that known */
  ck_buf_reset(&b);
  ck_kafka_snap_encode(&b, "t", pos, 2);
  assert_int_equal(ck_kafka_snap_decode_ident(b.data, b.len, &topic, &got, &gs, &n, &gid,
                                              &version, &err), 0);
  assert_int_equal(version, 1);
  assert_true(gs[0] == -1 && gs[1] == -1 && gid.cluster_id.len == 0 && !gid.has_topic_id);
  ck_free(got);
  ck_free(gs);
  /* the topic id as Kafka prints it */
  uint8_t tid[16] = {0x47, 0xb0, 0x94, 0x1f, 0x49, 0x81, 0x41, 0x9e,
                     0x8b, 0x81, 0x66, 0xa3, 0x5a, 0xcc, 0x01, 0x2c};
  char text[23];
  ck_kafka_topic_id_str(tid, text);
  assert_string_equal(text, "R7CUH0mBQZ6LgWajWswBLA");
  ck_buf_fini(&b);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* ---------------------------------------------------------------- options */

static int validate(ck_options_t *o, bool sink, ck_error_t *err) {
  const ck_opt_def_t *tables[] = {
      sink ? ck_kafka_sink_options : ck_kafka_source_options,
      sink ? ck_sink_common_options : ck_source_common_options,
  };
  ck_error_clear(err);
  return ck_options_validate(o, tables, 2, "table 't'", err);
}

static void test_kafka_options_as_the_planner_checks_them(void **state) {
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_error_t err;
  /* the tutorial's table */
  ck_options_t o = t_opts(&arena, "format", "json", "brokers", "kafka:9092", "topic", "readings",
                          "group_id", "clink-tutorial", "auto_offset_reset", "earliest",
                          "event_time_column", "ts", "watermark_lag_ms", "3000", NULL);
  assert_int_equal(validate(&o, false, &err), 0);
  /* pass-through properties, isolation and bounds */
  o = t_opts(&arena, "brokers", "b:1", "topic", "t", "kafka.fetch.max.bytes", "1000000",
             "kafka.client.rack", "r1", "isolation.level", "read_uncommitted", "scan.bounded",
             "latest", "on_decode_error", "skip", NULL);
  assert_int_equal(validate(&o, false, &err), 0);
  /* enums list their choices */
  o = t_opts(&arena, "brokers", "b:1", "topic", "t", "auto_offset_reset", "smallest", NULL);
  assert_int_equal(validate(&o, false, &err), CK_EOPTION);
  assert_contains(err.message, "earliest|latest");
  o = t_opts(&arena, "brokers", "b:1", "topic", "t", "scan.bounded", "earliest", NULL);
  assert_int_equal(validate(&o, false, &err), CK_EOPTION);
  /* a misspelt option gets the closest one */
  o = t_opts(&arena, "brokers", "b:1", "topc", "t", NULL);
  assert_int_equal(validate(&o, false, &err), CK_EOPTION);
  assert_contains(err.hint, "'topic'");
  /* required */
  o = t_opts(&arena, "topic", "t", NULL);
  assert_int_equal(validate(&o, false, &err), CK_EOPTION);
  assert_contains(err.message, "'brokers'");
  /* the sink has no source-only options, and a key */
  o = t_opts(&arena, "brokers", "b:1", "topic", "t", "key", "id", "delivery_guarantee",
             "at_least_once", "kafka.linger.ms", "20", NULL);
  assert_int_equal(validate(&o, true, &err), 0);
  o = t_opts(&arena, "brokers", "b:1", "topic", "t", "scan.bounded", "latest", NULL);
  assert_int_equal(validate(&o, true, &err), CK_EOPTION);
  /* defaults the source relies on */
  o = t_opts(&arena, "brokers", "b:1", "topic", "t", NULL);
  assert_string_equal(ck_opt_str(&o, ck_kafka_source_options, "auto_offset_reset"), "latest");
  assert_string_equal(ck_opt_str(&o, ck_kafka_source_options, "isolation.level"),
                      "read_committed");
  assert_string_equal(ck_opt_str(&o, ck_kafka_source_options, "scan.bounded"), "none");
  ck_arena_fini(&arena);
}

static int check(const char *spec, bool sink, ck_error_t *err, ...) {
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_schema_t s = t_schema(&arena, spec);
  va_list ap;
  int n = 0;
  va_start(ap, err);
  while (va_arg(ap, const char *)) n++;
  va_end(ap);
  ck_options_t o = {n / 2, ck_arena_zalloc(&arena, sizeof(char *) * (size_t)(n / 2 + 1)),
                    ck_arena_zalloc(&arena, sizeof(char *) * (size_t)(n / 2 + 1))};
  va_start(ap, err);
  for (int i = 0; i < o.n; i++) {
    o.keys[i] = va_arg(ap, const char *);
    o.values[i] = va_arg(ap, const char *);
  }
  va_end(ap);
  ck_error_clear(err);
  int rc = ck_kafka_connector.check(&s, &o, sink, err);
  ck_arena_fini(&arena);
  return rc;
}

static void test_kafka_check_formats_keys_and_properties(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_error_t err;
  assert_int_equal(check("a BIGINT, b VARCHAR", false, &err, "format", "json", NULL), 0);
  assert_int_equal(check("a BIGINT, b VARCHAR", false, &err, "format", "csv", NULL), 0);
  assert_int_equal(check("line VARCHAR", false, &err, "format", "raw", NULL), 0);
  /* raw needs exactly one VARCHAR column */
  assert_int_equal(check("a BIGINT, b VARCHAR", false, &err, "format", "raw", NULL), CK_EOPTION);
  assert_contains(err.message, "exactly one VARCHAR column");
  assert_int_equal(check("a BIGINT", false, &err, "format", "raw", NULL), CK_EOPTION);
  /* unknown formats; the sink has no raw */
  assert_int_equal(check("a BIGINT", false, &err, "format", "avro", NULL), CK_EOPTION);
  assert_contains(err.message, "format 'avro'");
  assert_contains(err.hint, "'raw'");
  assert_int_equal(check("a VARCHAR", true, &err, "format", "raw", NULL), CK_EOPTION);
  /* key columns */
  assert_int_equal(check("id BIGINT, name VARCHAR", true, &err, "key", " name , ID ", NULL), 0);
  assert_int_equal(check("id BIGINT, name VARCHAR", true, &err, "key", "nmae", NULL),
                   CK_EOPTION);
  assert_contains(err.message, "key column 'nmae'");
  assert_contains(err.hint, "'name'");
  assert_int_equal(check("id BIGINT", true, &err, "key", "id,,id", NULL), CK_EOPTION);
  /* librdkafka properties are checked at plan time, naming the option */
  assert_int_equal(check("a BIGINT", false, &err, "kafka.fetch.max.bytes", "1048576", NULL), 0);
  assert_int_equal(check("a BIGINT", false, &err, "kafka.no.such.property", "1", NULL),
                   CK_EOPTION);
  assert_contains(err.message, "option 'kafka.no.such.property'");
  assert_int_equal(check("a BIGINT", true, &err, "kafka.linger.ms", "soon", NULL), CK_EOPTION);
  assert_contains(err.message, "'linger.ms'");
  /* "kafka." alone names no property */
  assert_int_equal(check("a BIGINT", false, &err, "kafka.", "x", NULL), CK_EOPTION);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void test_kafka_parse_key(void **state) {
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_schema_t s = t_schema(&arena, "a BIGINT, b VARCHAR, c DOUBLE");
  int *cols, n;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_kafka_parse_key(&s, "c, A", &cols, &n, &err), 0);
  assert_int_equal(n, 2);
  assert_int_equal(cols[0], 2);
  assert_int_equal(cols[1], 0);
  ck_free(cols);
  assert_int_equal(ck_kafka_parse_key(&s, "", &cols, &n, &err), CK_EOPTION);
  assert_null(cols);
  ck_arena_fini(&arena);
}

/* restore() may come before open(): a corrupt state is refused there and then, a good one is
 * what snapshot() reports until open applies it. */
static void test_kafka_restore_before_open(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_schema_t s = t_schema(&arena, "a BIGINT");
  ck_options_t o = t_opts(&arena, "brokers", "127.0.0.1:1", "topic", "t", NULL);
  ck_source_t src = {&ck_kafka_source_ops, {"t", &s, &o, 0, 1, "job"}, NULL};
  ck_error_t err;
  ck_error_clear(&err);
  const uint8_t bad[] = {1, 5, 't'};
  assert_int_equal(src.ops->restore(&src, bad, sizeof bad, &err), CK_ESTATE);
  ck_buf_t b, again;
  ck_buf_init(&b);
  ck_buf_init(&again);
  ck_kafka_pos_t pos[] = {{0, 42}};
  ck_kafka_snap_encode(&b, "t", pos, 1);
  ck_error_clear(&err);
  assert_int_equal(src.ops->restore(&src, b.data, b.len, &err), 0);
  assert_int_equal(src.ops->snapshot(&src, &again, &err), 0);
  assert_int_equal(again.len, b.len);
  assert_memory_equal(again.data, b.data, b.len);
  assert_int_equal(src.ops->skipped(&src), 0);
  src.ops->close(&src);
  assert_null(src.impl);
  ck_buf_fini(&b);
  ck_buf_fini(&again);
  ck_arena_fini(&arena);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* The connector is registered under its name with the capability the planner reads. */
static void test_kafka_registered(void **state) {
  ck_connectors_register_all();
  const ck_connector_t *c = ck_connector_find("kafka");
  assert_ptr_equal(c, &ck_kafka_connector);
  /* capable of exactly once (transactions); at least once unless the table asks */
  assert_int_equal(c->sink_guarantee, CK_GUARANTEE_EXACTLY_ONCE);
  assert_non_null(c->source);
  assert_non_null(c->sink);
  assert_false(c->bounded);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kafka_snapshot_round_trip),
      cmocka_unit_test(test_kafka_snapshot_corrupt_states_refused),
      cmocka_unit_test(test_kafka_snapshot_identity),
      cmocka_unit_test(test_kafka_options_as_the_planner_checks_them),
      cmocka_unit_test(test_kafka_check_formats_keys_and_properties),
      cmocka_unit_test(test_kafka_parse_key),
      cmocka_unit_test(test_kafka_restore_before_open),
      cmocka_unit_test(test_kafka_registered),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
