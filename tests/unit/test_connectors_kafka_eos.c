/*
 * DESIGN: unit tests of the Kafka sink's exactly-once mode (connectors/kafka/kafka_sink.c,
 * kafka_eos.h). The first group needs no broker: the checkpoint state's encoding (round trip,
 * every truncation and corruption refused), the marker text, the transactional-id scheme, and
 * the capability record as the planner turns it into the job's guarantee. The second group runs
 * against the real broker scripts/services.sh starts (CLINK_KAFKA_BROKERS; a missing variable
 * fails the test, naming it), driving the sink's ops directly the way the executor does, and
 * reads the topic back with a separate librdkafka consumer (read_committed unless a test says
 * otherwise):
 *   - nothing is visible before commit(N); interval N+1 is written into the other slot while N
 *     awaits its commit; the marker group holds "clink ckpt=N" after commit(N);
 *   - rows of N+2 written while both slots hold prepared transactions wait and go out after the
 *     late commit; the state then names the older checkpoint still awaiting its commit;
 *   - a "crash" (a forked child that _exits after prepare(2)): recover(2) redoes the interval
 *     from the state; with redo_max_bytes = 0 it is CK_EREWIND naming checkpoint 2, and
 *     recover(1) then succeeds; either way every row is committed once;
 *   - a fresh open aborts what a dead incarnation left open, and fences a live predecessor (its
 *     commit fails); the ids are the same in both processes;
 *   - two sinks of one job writing the same table get distinct ids and do not fence each other;
 *   - finish without checkpoints commits the one transaction; a restored sink adopts the
 *     identity of its state; 'kafka.transactional.id' is refused.
 * Every test ends at zero live blocks of our allocator, and the process under ASan at zero
 * leaks (children leave with _exit, as a killed process would).
 *
 * Threads: the main thread (librdkafka runs its own); children are forked while the parent
 * holds no librdkafka handle.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_kafka_util.h"

#include <signal.h>
#include <sys/wait.h>

#include <librdkafka/rdkafka.h>

#include "base/time.h"
#include "connectors/connectors.h"
#include "connectors/kafka/kafka.h"
#include "connectors/kafka/kafka_eos.h"
#include "runtime/connector.h"
#include "sql/parser.h"
#include "sql/planner.h"
#include "test_connectors_util.h"

#define DEADLINE_MS 30000
#define MAX_IDS 4096

/* ===================================================== no broker needed ====== */

static void test_state_round_trip(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_buf_t held, out;
  ck_buf_init(&held);
  ck_buf_init(&out);
  ck_kafka_held_append(&held, "k1", 2, "{\"id\":1}", 8);
  ck_kafka_held_append(&held, NULL, 0, "v", 1);
  ck_kafka_held_append(&held, "", 0, "", 0); /* an empty key is not a missing one */
  ck_kafka_txn_state_t st = {.identity = 0x0123456789abcdefULL, .ckpt = 300, .slot = 1,
                             .prev = 299, .held = true, .nheld = 3};
  ck_kafka_txn_state_encode(&out, &st, &held);
  ck_kafka_txn_state_t got;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_kafka_txn_state_decode(out.data, out.len, &got, &err), 0);
  assert_true(got.identity == st.identity);
  assert_int_equal(got.ckpt, 300);
  assert_int_equal(got.slot, 1);
  assert_int_equal(got.prev, 299);
  assert_true(got.held);
  assert_int_equal(got.nheld, 3);
  const uint8_t *p = got.msgs, *end = got.msgs + got.msgs_len;
  const void *k, *v;
  size_t kl, vl;
  assert_true(ck_kafka_held_next(&p, end, &k, &kl, &v, &vl));
  assert_int_equal(kl, 2);
  assert_memory_equal(k, "k1", 2);
  assert_int_equal(vl, 8);
  assert_memory_equal(v, "{\"id\":1}", 8);
  assert_true(ck_kafka_held_next(&p, end, &k, &kl, &v, &vl));
  assert_null(k);
  assert_int_equal(vl, 1);
  assert_true(ck_kafka_held_next(&p, end, &k, &kl, &v, &vl));
  assert_non_null(k);
  assert_int_equal(kl, 0);
  assert_non_null(v);
  assert_int_equal(vl, 0);
  assert_false(ck_kafka_held_next(&p, end, &k, &kl, &v, &vl));

  /* every truncation is refused, never read past */
  for (size_t len = 0; len < out.len; len++) {
    ck_error_clear(&err);
    assert_int_equal(ck_kafka_txn_state_decode(out.data, len, &got, &err), CK_ESTATE);
  }
  /* trailing bytes, an unknown version, an at-least-once mode, a slot out of range */
  ck_buf_t bad;
  ck_buf_init(&bad);
  ck_buf_append(&bad, out.data, out.len);
  ck_buf_putc(&bad, 0);
  ck_error_clear(&err);
  assert_int_equal(ck_kafka_txn_state_decode(bad.data, bad.len, &got, &err), CK_ESTATE);
  bad.data[0] = 9;
  ck_error_clear(&err);
  assert_int_equal(ck_kafka_txn_state_decode(bad.data, out.len, &got, &err), CK_ESTATE);
  assert_non_null(strstr(err.message, "unknown state version 9"));
  bad.data[0] = CK_KAFKA_SINK_STATE_VERSION;
  bad.data[1] = 0;
  ck_error_clear(&err);
  assert_int_equal(ck_kafka_txn_state_decode(bad.data, out.len, &got, &err), CK_ESTATE);
  bad.data[1] = CK_KAFKA_SINK_MODE_EOS;
  bad.data[2 + 8 + 2] = 7; /* the slot: after identity and the 2-byte varint 300 */
  ck_error_clear(&err);
  assert_int_equal(ck_kafka_txn_state_decode(bad.data, out.len, &got, &err), CK_ESTATE);
  /* a count larger than the bytes could hold is corrupt, not an allocation */
  ck_buf_reset(&bad);
  ck_kafka_txn_state_t huge = {.identity = 1, .ckpt = 1, .held = true, .nheld = 1ULL << 40};
  ck_kafka_txn_state_encode(&bad, &huge, NULL);
  ck_error_clear(&err);
  assert_int_equal(ck_kafka_txn_state_decode(bad.data, bad.len, &got, &err), CK_ESTATE);
  /* not held: no messages */
  ck_buf_reset(&bad);
  ck_kafka_txn_state_t bare = {.identity = 5, .ckpt = 7, .slot = 0, .prev = 0, .held = false};
  ck_kafka_txn_state_encode(&bad, &bare, NULL);
  ck_error_clear(&err);
  assert_int_equal(ck_kafka_txn_state_decode(bad.data, bad.len, &got, &err), 0);
  assert_false(got.held);
  assert_int_equal(got.ckpt, 7);
  ck_buf_fini(&bad);
  ck_buf_fini(&held);
  ck_buf_fini(&out);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void test_marker_text(void **state) {
  assert_int_equal(ck_kafka_marker_parse("clink ckpt=12", 13), 12);
  assert_int_equal(ck_kafka_marker_parse("clink ckpt=0", 12), 0);
  assert_int_equal(ck_kafka_marker_parse("clink ckpt=", 11), -1);
  assert_int_equal(ck_kafka_marker_parse("clink ckpt=1x", 13), -1);
  assert_int_equal(ck_kafka_marker_parse("ckpt=12", 7), -1);
  assert_int_equal(ck_kafka_marker_parse(NULL, 0), -1);
  assert_int_equal(ck_kafka_marker_parse("clink ckpt=99999999999999999999999", 33), -1);
}

static void test_transactional_id_scheme(void **state) {
  uint64_t a = ck_kafka_sink_identity("/jobs/a.sql", "out", "topic", 0);
  assert_true(a == ck_kafka_sink_identity("/jobs/a.sql", "out", "topic", 0));
  assert_true(a != ck_kafka_sink_identity("/jobs/b.sql", "out", "topic", 0));
  assert_true(a != ck_kafka_sink_identity("/jobs/a.sql", "out2", "topic", 0));
  assert_true(a != ck_kafka_sink_identity("/jobs/a.sql", "out", "topic2", 0));
  assert_true(a != ck_kafka_sink_identity("/jobs/a.sql", "out", "topic", 1));
  /* fields do not run into each other */
  assert_true(ck_kafka_sink_identity("ab", "c", "t", 0) != ck_kafka_sink_identity("a", "bc", "t", 0));
  char id[CK_KAFKA_ID_MAX], want[CK_KAFKA_ID_MAX];
  ck_kafka_txn_id(0x00ab00cd00ef0012ULL, 3, 1, id, sizeof id);
  assert_string_equal(id, "clink-00ab00cd00ef0012-3-1");
  ck_kafka_marker_group(0x00ab00cd00ef0012ULL, 3, id, sizeof id);
  assert_string_equal(id, "clink-sink-00ab00cd00ef0012-3");
  ck_kafka_txn_id(UINT64_MAX, 2147483647, 1, id, sizeof id);
  snprintf(want, sizeof want, "clink-ffffffffffffffff-2147483647-1");
  assert_string_equal(id, want);
}

/* The capability record and the option, as the planner turns them into the job's guarantee. */
static void test_capability_and_job_guarantee(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_connectors_register_all();
  const ck_connector_t *c = ck_connector_find("kafka");
  assert_non_null(c);
  assert_int_equal(c->sink_guarantee, CK_GUARANTEE_EXACTLY_ONCE);
  assert_non_null(c->sink->recover);
  const char *redo = NULL;
  for (const ck_opt_def_t *d = c->sink_options; d->name; d++)
    if (!strcmp(d->name, "redo_max_bytes")) redo = d->default_value;
  assert_non_null(redo);
  assert_string_equal(redo, "8388608");
  const char *variants[][2] = {
      {", delivery_guarantee = 'exactly_once'", "STATE_EXACTLY_ONCE_OUTPUT_EXACTLY_ONCE"},
      {"", "STATE_EXACTLY_ONCE_OUTPUT_AT_LEAST_ONCE (limited by sink 'kafka_sink')"},
      {", delivery_guarantee = 'at_least_once'",
       "STATE_EXACTLY_ONCE_OUTPUT_AT_LEAST_ONCE (limited by sink 'kafka_sink')"},
  };
  for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
    ck_buf_t sql;
    ck_buf_init(&sql);
    ck_buf_printf(&sql,
                  "CREATE TABLE g (id BIGINT) WITH (connector = 'datagen', rows = '10');\n"
                  "CREATE TABLE out (id BIGINT) WITH (connector = 'kafka', brokers = 'b:9092', "
                  "topic = 't'%s);\n"
                  "INSERT INTO out SELECT id FROM g;\n", variants[i][0]);
    ck_arena_t arena;
    ck_arena_init(&arena, 0);
    ck_script_t script;
    ck_graph_t *graph = NULL;
    ck_error_t err;
    ck_error_clear(&err);
    if (ck_sql_parse(sql.data, &arena, &script, &err) || ck_sql_plan(&script, NULL, &graph, &err))
      fail_msg("plan failed: %s", err.message);
    ck_buf_t g;
    ck_buf_init(&g);
    ck_graph_guarantee(graph, true, &g);
    assert_string_equal(g.data, variants[i][1]);
    ck_buf_reset(&g);
    ck_graph_guarantee(graph, false, &g);
    assert_non_null(strstr(g.data, "NONE"));
    ck_buf_fini(&g);
    ck_graph_free(graph);
    ck_arena_fini(&arena);
    ck_buf_fini(&sql);
  }
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* ========================================================== the broker ====== */

static const char *brokers(void) {
  const char *b = getenv("CLINK_KAFKA_BROKERS");
  if (!b || !*b)
    fail_msg("CLINK_KAFKA_BROKERS is not set: start the services and export their settings "
             "first: scripts/services.sh start && eval \"$(scripts/services.sh env)\"");
  return b;
}

static char *topic_name(const char *what) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_buf_printf(&b, "ckunit_eos_%s_%d_%lld", what, (int)getpid(), (long long)ck_wall_ms());
  return ck_buf_detach(&b);
}

static rd_kafka_t *client(rd_kafka_type_t type, const char *isolation) {
  char why[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers(), why, sizeof why))
    fail_msg("%s", why);
  if (type == RD_KAFKA_CONSUMER) {
    rd_kafka_conf_set(conf, "group.id", "clink-eos-unit-reader", why, sizeof why);
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", why, sizeof why);
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", why, sizeof why);
    rd_kafka_conf_set(conf, "isolation.level", isolation, why, sizeof why);
  }
  rd_kafka_t *rk = rd_kafka_new(type, conf, why, sizeof why);
  if (!rk) fail_msg("could not create a client: %s", why);
  return rk;
}

static void create_topic(const char *topic, int nparts) {
  rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, NULL);
  ck_test_create_topic(rk, topic, nparts, DEADLINE_MS);
  rd_kafka_destroy(rk);
}

/* How often each id ({"id":N}, N < MAX_IDS) is in the topic, read from the start to the end of
 * every partition (for read_committed: to the last stable offset). Returns the record count. */
static int read_ids(const char *topic, int nparts, const char *isolation, int *counts) {
  memset(counts, 0, sizeof(int) * MAX_IDS);
  rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, isolation);
  rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(nparts);
  for (int p = 0; p < nparts; p++)
    rd_kafka_topic_partition_list_add(parts, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  assert_int_equal(rd_kafka_assign(rk, parts), 0);
  rd_kafka_topic_partition_list_destroy(parts);
  int eof = 0, total = 0;
  uint8_t *at_end = calloc((size_t)nparts, 1);
  int64_t deadline = ck_mono_ms() + DEADLINE_MS;
  while (eof < nparts) {
    if (ck_mono_ms() > deadline)
      fail_msg("no end of topic %s (%s) within %d ms", topic, isolation, DEADLINE_MS);
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
    if (!m) continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      if (!at_end[m->partition]) at_end[m->partition] = 1, eof++;
    } else if (m->err) {
      fail_msg("consumer error: %s", rd_kafka_message_errstr(m));
    } else {
      if (at_end[m->partition]) at_end[m->partition] = 0, eof--;
      char buf[64];
      size_t n = m->len < sizeof buf - 1 ? m->len : sizeof buf - 1;
      memcpy(buf, m->payload, n);
      buf[n] = 0;
      int id;
      if (sscanf(buf, "{\"id\":%d}", &id) != 1 || id < 0 || id >= MAX_IDS)
        fail_msg("unexpected record '%s'", buf);
      counts[id]++;
      total++;
    }
    rd_kafka_message_destroy(m);
  }
  free(at_end);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return total;
}

/* ids [from, to) once each, nothing else */
static void assert_ids_once(const int *counts, int from, int to) {
  for (int i = 0; i < MAX_IDS; i++) {
    int want = i >= from && i < to;
    if (counts[i] != want) fail_msg("id %d is in the topic %d times, expected %d", i, counts[i], want);
  }
}

/* The marker group's committed metadata for partition 0 of the topic ("" when none). Asks for
 * stable offsets: while the commit's markers are still being written (slow on a broker whose
 * __consumer_offsets was just created) the partition answers UNSTABLE_OFFSET_COMMIT, and the
 * question is asked again until the deadline. */
static void read_marker(const char *group, const char *topic, char *out, size_t n) {
  rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, NULL);
  int64_t deadline = ck_mono_ms() + DEADLINE_MS;
  for (;;) {
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, topic, 0);
    rd_kafka_ListConsumerGroupOffsets_t *req = rd_kafka_ListConsumerGroupOffsets_new(group, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *o =
        rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS);
    rd_kafka_error_t *e = rd_kafka_AdminOptions_set_require_stable_offsets(o, 1);
    assert_null(e);
    rd_kafka_ListConsumerGroupOffsets(rk, &req, 1, o, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, DEADLINE_MS);
    assert_non_null(ev);
    rd_kafka_resp_err_t retry = rd_kafka_event_error(ev);
    char why[256];
    snprintf(why, sizeof why, "%s", retry ? rd_kafka_event_error_string(ev) : "");
    out[0] = 0;
    if (!retry) {
      size_t cnt;
      const rd_kafka_group_result_t **g = rd_kafka_ListConsumerGroupOffsets_result_groups(
          rd_kafka_event_ListConsumerGroupOffsets_result(ev), &cnt);
      assert_int_equal(cnt, 1);
      const rd_kafka_error_t *ge = rd_kafka_group_result_error(g[0]);
      const rd_kafka_topic_partition_list_t *pl = rd_kafka_group_result_partitions(g[0]);
      if (ge) {
        retry = rd_kafka_error_code(ge);
        snprintf(why, sizeof why, "%s", rd_kafka_error_string(ge));
      } else if (pl && pl->cnt == 1 && pl->elems[0].err) {
        retry = pl->elems[0].err;
        snprintf(why, sizeof why, "%s", rd_kafka_err2str(retry));
      } else if (pl && pl->cnt == 1 && pl->elems[0].offset >= 0 && pl->elems[0].metadata) {
        snprintf(out, n, "%.*s", (int)pl->elems[0].metadata_size,
                 (const char *)pl->elems[0].metadata);
      }
    }
    rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_ListConsumerGroupOffsets_destroy(req);
    rd_kafka_queue_destroy(q);
    if (!retry) break;
    if (ck_mono_ms() > deadline) {
      rd_kafka_destroy(rk);
      fail_msg("the offsets of group '%s' stayed unreadable: %s", group, why);
    }
    ck_sleep_ms(50);
  }
  rd_kafka_destroy(rk);
}

/* ---------------------------------------------------------- a sink under test */

typedef struct fx {
  ck_arena_t arena;
  ck_schema_t schema;
  ck_options_t opts;
  ck_sink_t sink;
  ck_error_t err;
} fx_t;

/* An exactly-once sink of table "out" (subtask 0 of 1, job `job`) writing `topic`; extra
 * options: key, value, …, NULL. */
static fx_t *fx_new(const char *topic, const char *job, ...) {
  fx_t *f = calloc(1, sizeof *f);
  ck_arena_init(&f->arena, 4096);
  f->schema = t_schema(&f->arena, "id BIGINT");
  va_list ap;
  int n = 0;
  va_start(ap, job);
  while (va_arg(ap, const char *)) n++;
  va_end(ap);
  int cnt = n / 2 + 3;
  f->opts.keys = ck_arena_zalloc(&f->arena, sizeof(char *) * (size_t)cnt);
  f->opts.values = ck_arena_zalloc(&f->arena, sizeof(char *) * (size_t)cnt);
  const char *base[] = {"brokers", brokers(), "topic", topic, "delivery_guarantee",
                        "exactly_once"};
  for (int i = 0; i < 3; i++, f->opts.n++) {
    f->opts.keys[f->opts.n] = base[2 * i];
    f->opts.values[f->opts.n] = base[2 * i + 1];
  }
  va_start(ap, job);
  for (int i = 0; i < n / 2; i++, f->opts.n++) {
    f->opts.keys[f->opts.n] = va_arg(ap, const char *);
    f->opts.values[f->opts.n] = va_arg(ap, const char *);
  }
  va_end(ap);
  f->sink.ops = &ck_kafka_sink_ops;
  f->sink.ctx = (ck_conn_ctx_t){"out", &f->schema, &f->opts, 0, 1, job};
  ck_error_clear(&f->err);
  return f;
}

static void fx_open(fx_t *f, bool restored) {
  ck_error_clear(&f->err);
  if (f->sink.ops->open(&f->sink, restored, &f->err))
    fail_msg("open failed (%d): %s", f->err.code, f->err.message);
}

static void fx_free(fx_t *f) {
  if (f->sink.impl) f->sink.ops->close(&f->sink);
  ck_arena_fini(&f->arena);
  free(f);
}

static void fx_write(fx_t *f, int from, int to) {
  ck_batch_t *b = ck_batch_new(1, f->schema.types, (size_t)(to - from));
  for (int i = from; i < to; i++) ck_col_append_i64(&b->cols[0], i);
  ck_batch_seal(b);
  ck_error_clear(&f->err);
  int rc = f->sink.ops->write(&f->sink, b, &f->err);
  ck_batch_free(b);
  if (rc) fail_msg("write failed (%d): %s", rc, f->err.message);
}

static void fx_prepare(fx_t *f, int64_t ckpt, ck_buf_t *state) {
  ck_error_clear(&f->err);
  if (f->sink.ops->prepare(&f->sink, ckpt, state, &f->err))
    fail_msg("prepare %lld failed: %s", (long long)ckpt, f->err.message);
}

static void fx_commit(fx_t *f, int64_t ckpt) {
  ck_error_clear(&f->err);
  if (f->sink.ops->commit(&f->sink, ckpt, &f->err))
    fail_msg("commit %lld failed: %s", (long long)ckpt, f->err.message);
}

/* ---------------------------------------------------------------- tests */

/* Nothing is visible before commit; N+1 goes to the other slot while N awaits its commit. */
static void test_commit_makes_an_interval_visible(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  char *topic = topic_name("vis");
  create_topic(topic, 2);
  int *counts = calloc(MAX_IDS, sizeof(int));
  fx_t *f = fx_new(topic, "/jobs/vis.sql", NULL);
  fx_open(f, false);
  const char *id0 = ck_kafka_sink_txn_id(&f->sink, 0), *id1 = ck_kafka_sink_txn_id(&f->sink, 1);
  assert_non_null(id0);
  assert_int_equal(strlen(id0), strlen("clink-0123456789abcdef-0-0"));
  assert_memory_equal(id0, "clink-", 6);
  assert_string_equal(id0 + 22, "-0-0");
  assert_string_equal(id1 + 22, "-0-1");
  assert_memory_equal(id0, id1, 22);
  char marker[128];
  read_marker(ck_kafka_sink_marker_group(&f->sink), topic, marker, sizeof marker);
  assert_string_equal(marker, "clink ckpt=0"); /* a fresh start resets it */

  fx_write(f, 0, 100);
  ck_buf_t s1, s2;
  ck_buf_init(&s1);
  ck_buf_init(&s2);
  fx_prepare(f, 1, &s1);
  assert_int_equal(read_ids(topic, 2, "read_uncommitted", counts), 100);
  assert_int_equal(read_ids(topic, 2, "read_committed", counts), 0);
  fx_write(f, 100, 150); /* interval 2, while 1 awaits its commit */
  fx_commit(f, 1);
  assert_int_equal(read_ids(topic, 2, "read_committed", counts), 100);
  assert_ids_once(counts, 0, 100);
  read_marker(ck_kafka_sink_marker_group(&f->sink), topic, marker, sizeof marker);
  assert_string_equal(marker, "clink ckpt=1");
  fx_prepare(f, 2, &s2);
  ck_kafka_txn_state_t st;
  assert_int_equal(ck_kafka_txn_state_decode(s2.data, s2.len, &st, &f->err), 0);
  assert_int_equal(st.ckpt, 2);
  assert_int_equal(st.slot, 1);
  assert_int_equal(st.prev, 0);
  assert_true(st.held);
  assert_int_equal(st.nheld, 50);
  fx_commit(f, 2);
  /* an empty interval still commits its marker */
  ck_buf_reset(&s1);
  fx_prepare(f, 3, &s1);
  fx_commit(f, 3);
  read_marker(ck_kafka_sink_marker_group(&f->sink), topic, marker, sizeof marker);
  assert_string_equal(marker, "clink ckpt=3");
  ck_error_clear(&f->err);
  assert_int_equal(f->sink.ops->finish(&f->sink, &f->err), 0);
  assert_int_equal(read_ids(topic, 2, "read_committed", counts), 150);
  assert_ids_once(counts, 0, 150);
  fx_free(f);
  ck_buf_fini(&s1);
  ck_buf_fini(&s2);
  free(counts);
  ck_free(topic);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* prepare(N+1) before commit(N): rows of N+2 wait in memory until a slot is free again; the
 * state of N+1 names N as still awaiting its commit; commit(N+1) commits both, oldest first. */
static void test_late_commit_holds_rows_back(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  char *topic = topic_name("late");
  create_topic(topic, 1);
  int *counts = calloc(MAX_IDS, sizeof(int));
  fx_t *f = fx_new(topic, "/jobs/late.sql", NULL);
  fx_open(f, false);
  ck_buf_t s;
  ck_buf_init(&s);
  fx_write(f, 0, 10);
  fx_prepare(f, 1, &s);
  fx_write(f, 10, 20);
  ck_buf_reset(&s);
  fx_prepare(f, 2, &s);
  ck_kafka_txn_state_t st;
  assert_int_equal(ck_kafka_txn_state_decode(s.data, s.len, &st, &f->err), 0);
  assert_int_equal(st.prev, 1);
  fx_write(f, 20, 30); /* both slots hold prepared transactions */
  assert_int_equal(read_ids(topic, 1, "read_uncommitted", counts), 20);
  ck_buf_reset(&s);
  ck_error_clear(&f->err);
  assert_int_equal(f->sink.ops->prepare(&f->sink, 3, &s, &f->err), CK_EINTERNAL);
  assert_non_null(strstr(f->err.message, "still await their commit"));
  fx_commit(f, 2); /* both 1 and 2 */
  assert_int_equal(read_ids(topic, 1, "read_committed", counts), 20);
  assert_ids_once(counts, 0, 20);
  ck_buf_reset(&s);
  fx_prepare(f, 4, &s);
  assert_int_equal(ck_kafka_txn_state_decode(s.data, s.len, &st, &f->err), 0);
  assert_int_equal(st.nheld, 10);
  fx_commit(f, 4);
  assert_int_equal(read_ids(topic, 1, "read_committed", counts), 30);
  assert_ids_once(counts, 0, 30);
  fx_free(f);
  ck_buf_fini(&s);
  free(counts);
  ck_free(topic);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* A child process plays the dead incarnation: it commits checkpoint 1, prepares 2 and exits
 * without committing. The states of 1 and 2 come back through a pipe. */
static void crashed_run(const char *topic, const char *redo, ck_buf_t *s1, ck_buf_t *s2,
                        char *txn_id) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    fx_t *f = fx_new(topic, "/jobs/crash.sql", "redo_max_bytes", redo, NULL);
    fx_open(f, false);
    ck_buf_t a, b;
    ck_buf_init(&a);
    ck_buf_init(&b);
    fx_write(f, 0, 40);
    fx_prepare(f, 1, &a);
    fx_commit(f, 1);
    fx_write(f, 40, 70);
    fx_prepare(f, 2, &b);
    fx_write(f, 70, 75); /* interval 3: open, never prepared */
    uint32_t la = (uint32_t)a.len, lb = (uint32_t)b.len;
    char id[CK_KAFKA_ID_MAX];
    snprintf(id, sizeof id, "%s", ck_kafka_sink_txn_id(&f->sink, 1));
    if (write(fds[1], &la, 4) != 4 || write(fds[1], a.data, la) != (ssize_t)la ||
        write(fds[1], &lb, 4) != 4 || write(fds[1], b.data, lb) != (ssize_t)lb ||
        write(fds[1], id, sizeof id) != (ssize_t)sizeof id)
      _exit(3);
    _exit(0); /* killed: no commit, no close */
  }
  close(fds[1]);
  uint32_t len;
  ck_buf_t *bufs[2] = {s1, s2};
  for (int i = 0; i < 2; i++) {
    assert_int_equal(read(fds[0], &len, 4), 4);
    ck_buf_reserve(bufs[i], len);
    size_t got = 0;
    while (got < len) {
      ssize_t r = read(fds[0], bufs[i]->data + got, len - got);
      assert_true(r > 0);
      got += (size_t)r;
    }
    bufs[i]->len = len;
  }
  size_t got = 0;
  while (got < CK_KAFKA_ID_MAX) {
    ssize_t r = read(fds[0], txn_id + got, CK_KAFKA_ID_MAX - got);
    assert_true(r > 0);
    got += (size_t)r;
  }
  close(fds[0]);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The commit of checkpoint 2 is lost: recover(2) writes its rows again from the state. */
static void test_recover_redoes_a_lost_commit(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  char *topic = topic_name("redo");
  create_topic(topic, 2);
  int *counts = calloc(MAX_IDS, sizeof(int));
  ck_buf_t s1, s2;
  ck_buf_init(&s1);
  ck_buf_init(&s2);
  char dead_id[CK_KAFKA_ID_MAX];
  crashed_run(topic, "8388608", &s1, &s2, dead_id);
  /* a read_uncommitted reader sees the dead run's open transactions (interval 3's rows may
   * not have left the dead process) */
  int seen = read_ids(topic, 2, "read_uncommitted", counts);
  assert_in_range(seen, 70, 75);
  /* the rerun: another job path spelling, the identity comes from the state */
  fx_t *f = fx_new(topic, "/elsewhere/crash.sql", NULL);
  fx_open(f, true);
  ck_error_clear(&f->err);
  if (f->sink.ops->recover(&f->sink, 2, s2.data, s2.len, &f->err))
    fail_msg("recover failed: %s", f->err.message);
  assert_string_equal(ck_kafka_sink_txn_id(&f->sink, 1), dead_id);
  assert_int_equal(read_ids(topic, 2, "read_committed", counts), 70);
  assert_ids_once(counts, 0, 70);
  char marker[128];
  read_marker(ck_kafka_sink_marker_group(&f->sink), topic, marker, sizeof marker);
  assert_string_equal(marker, "clink ckpt=2");
  /* the replay after checkpoint 2 */
  ck_buf_t s3;
  ck_buf_init(&s3);
  fx_write(f, 70, 75);
  fx_prepare(f, 3, &s3);
  fx_commit(f, 3);
  assert_int_equal(read_ids(topic, 2, "read_committed", counts), 75);
  assert_ids_once(counts, 0, 75);
  fx_free(f);
  /* recovering 3 again (a later crash): it committed; nothing is written */
  f = fx_new(topic, "/jobs/crash.sql", NULL);
  fx_open(f, true);
  ck_error_clear(&f->err);
  assert_int_equal(f->sink.ops->recover(&f->sink, 3, s3.data, s3.len, &f->err), 0);
  fx_free(f);
  assert_int_equal(read_ids(topic, 2, "read_committed", counts), 75);
  assert_ids_once(counts, 0, 75);
  ck_buf_fini(&s1);
  ck_buf_fini(&s2);
  ck_buf_fini(&s3);
  free(counts);
  ck_free(topic);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* The same loss with redo_max_bytes = 0: CK_EREWIND naming checkpoint 2; recover(1) holds. */
static void test_recover_rewinds_without_the_rows(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  char *topic = topic_name("rewind");
  create_topic(topic, 2);
  int *counts = calloc(MAX_IDS, sizeof(int));
  ck_buf_t s1, s2;
  ck_buf_init(&s1);
  ck_buf_init(&s2);
  char dead_id[CK_KAFKA_ID_MAX];
  crashed_run(topic, "0", &s1, &s2, dead_id);
  fx_t *f = fx_new(topic, "/jobs/crash.sql", "redo_max_bytes", "0", NULL);
  fx_open(f, true);
  ck_error_clear(&f->err);
  assert_int_equal(f->sink.ops->recover(&f->sink, 2, s2.data, s2.len, &f->err), CK_EREWIND);
  assert_non_null(strstr(f->err.message, "checkpoint 2's Kafka transaction was not committed"));
  assert_non_null(strstr(f->err.message, "the last checkpoint committed there: checkpoint 1"));
  char id0[CK_KAFKA_ID_MAX];
  snprintf(id0, sizeof id0, "transactional id '%.*s0'", (int)strlen(dead_id) - 1, dead_id);
  assert_non_null(strstr(f->err.message, id0));
  fx_free(f);
  assert_int_equal(read_ids(topic, 2, "read_committed", counts), 40);
  assert_ids_once(counts, 0, 40);
  /* the CLI restores checkpoint 1 and replays interval 2 */
  f = fx_new(topic, "/jobs/crash.sql", "redo_max_bytes", "0", NULL);
  fx_open(f, true);
  ck_error_clear(&f->err);
  if (f->sink.ops->recover(&f->sink, 1, s1.data, s1.len, &f->err))
    fail_msg("recover(1) failed: %s", f->err.message);
  ck_buf_t s;
  ck_buf_init(&s);
  fx_write(f, 40, 70);
  fx_prepare(f, 5, &s);
  ck_kafka_txn_state_t st;
  assert_int_equal(ck_kafka_txn_state_decode(s.data, s.len, &st, &f->err), 0);
  assert_false(st.held);
  fx_commit(f, 5);
  fx_free(f);
  assert_int_equal(read_ids(topic, 2, "read_committed", counts), 70);
  assert_ids_once(counts, 0, 70);
  /* a state whose checkpoint is not the one restored is refused */
  f = fx_new(topic, "/jobs/crash.sql", NULL);
  fx_open(f, true);
  ck_error_clear(&f->err);
  assert_int_equal(f->sink.ops->recover(&f->sink, 6, s.data, s.len, &f->err), CK_ESTATE);
  fx_free(f);
  ck_buf_fini(&s);
  ck_buf_fini(&s1);
  ck_buf_fini(&s2);
  free(counts);
  ck_free(topic);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* A fresh open fences a predecessor that is still alive (its commit then fails) and aborts
 * what it had open; both processes compute the same transactional ids. */
static void test_fresh_open_fences_the_predecessor(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  char *topic = topic_name("fence");
  create_topic(topic, 1);
  int *counts = calloc(MAX_IDS, sizeof(int));
  int up[2], down[2];
  assert_int_equal(pipe(up), 0);
  assert_int_equal(pipe(down), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(up[0]);
    close(down[1]);
    fx_t *f = fx_new(topic, "/jobs/fence.sql", NULL);
    fx_open(f, false);
    ck_buf_t s;
    ck_buf_init(&s);
    fx_write(f, 1000, 1010);
    fx_prepare(f, 1, &s);
    char id[CK_KAFKA_ID_MAX];
    snprintf(id, sizeof id, "%s", ck_kafka_sink_txn_id(&f->sink, 0));
    if (write(up[1], id, sizeof id) != (ssize_t)sizeof id) _exit(3);
    char go;
    if (read(down[0], &go, 1) != 1) _exit(4);
    ck_error_clear(&f->err);
    int rc = f->sink.ops->commit(&f->sink, 1, &f->err);
    _exit(rc == CK_EREMOTE && strstr(f->err.hint, "same transactional id") ? 0 : 10 + (rc != 0));
  }
  close(up[1]);
  close(down[0]);
  char child_id[CK_KAFKA_ID_MAX];
  size_t got = 0;
  while (got < sizeof child_id) {
    ssize_t r = read(up[0], child_id + got, sizeof child_id - got);
    assert_true(r > 0);
    got += (size_t)r;
  }
  fx_t *f = fx_new(topic, "/jobs/fence.sql", NULL);
  fx_open(f, false); /* init_transactions: fences the child, aborts its transaction */
  assert_string_equal(ck_kafka_sink_txn_id(&f->sink, 0), child_id);
  assert_int_equal(write(down[1], "g", 1), 1);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail_msg("the fenced predecessor's commit did not fail as fenced (status %d)", status);
  close(up[0]);
  close(down[1]);
  ck_buf_t s;
  ck_buf_init(&s);
  fx_write(f, 0, 5);
  fx_prepare(f, 1, &s);
  fx_commit(f, 1);
  fx_free(f);
  assert_int_equal(read_ids(topic, 1, "read_committed", counts), 5);
  assert_ids_once(counts, 0, 5);
  ck_buf_fini(&s);
  free(counts);
  ck_free(topic);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* A dead run left a transaction open (rows written, nothing prepared): a fresh open aborts it,
 * so read_committed readers get past it at once. */
static void test_fresh_open_aborts_orphans(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  char *topic = topic_name("orphan");
  create_topic(topic, 1);
  int *counts = calloc(MAX_IDS, sizeof(int));
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    fx_t *f = fx_new(topic, "/jobs/orphan.sql", NULL);
    fx_open(f, false);
    fx_write(f, 500, 520);
    ck_error_clear(&f->err);
    /* make sure the rows reached the broker before dying */
    ck_buf_t s;
    ck_buf_init(&s);
    fx_prepare(f, 1, &s);
    fx_write(f, 520, 530);
    _exit(0);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  fx_t *f = fx_new(topic, "/jobs/orphan.sql", NULL);
  fx_open(f, false);
  assert_int_equal(read_ids(topic, 1, "read_committed", counts), 0);
  ck_error_clear(&f->err);
  fx_write(f, 0, 3);
  assert_int_equal(f->sink.ops->finish(&f->sink, &f->err), 0); /* no checkpoints: commits */
  fx_free(f);
  assert_int_equal(read_ids(topic, 1, "read_committed", counts), 3);
  assert_ids_once(counts, 0, 3);
  free(counts);
  ck_free(topic);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

/* Two sink nodes of one job writing the same table: distinct ids, no fencing. */
static void test_two_sinks_of_one_table(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  char *topic = topic_name("two");
  create_topic(topic, 1);
  int *counts = calloc(MAX_IDS, sizeof(int));
  fx_t *a = fx_new(topic, "/jobs/two.sql", NULL), *b = fx_new(topic, "/jobs/two.sql", NULL);
  fx_open(a, false);
  fx_open(b, false);
  assert_string_not_equal(ck_kafka_sink_txn_id(&a->sink, 0), ck_kafka_sink_txn_id(&b->sink, 0));
  assert_string_not_equal(ck_kafka_sink_marker_group(&a->sink),
                          ck_kafka_sink_marker_group(&b->sink));
  ck_buf_t s;
  ck_buf_init(&s);
  fx_write(a, 0, 10);
  fx_write(b, 10, 20);
  fx_prepare(a, 1, &s);
  ck_buf_reset(&s);
  fx_prepare(b, 1, &s);
  fx_commit(a, 1);
  fx_commit(b, 1);
  /* a restored sink whose state names an identity in use is refused */
  fx_t *c = fx_new(topic, "/jobs/two.sql", NULL);
  fx_open(c, true);
  ck_error_clear(&c->err);
  assert_int_equal(c->sink.ops->recover(&c->sink, 1, s.data, s.len, &c->err), CK_ESTATE);
  fx_free(c);
  fx_free(a);
  fx_free(b);
  assert_int_equal(read_ids(topic, 1, "read_committed", counts), 20);
  assert_ids_once(counts, 0, 20);
  ck_buf_fini(&s);
  free(counts);
  ck_free(topic);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void test_transactional_id_option_refused(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  fx_t *f = fx_new("any", "/jobs/x.sql", "kafka.transactional.id", "mine", NULL);
  ck_error_clear(&f->err);
  assert_int_equal(f->sink.ops->open(&f->sink, false, &f->err), CK_EOPTION);
  assert_non_null(strstr(f->err.message, "kafka.transactional.id"));
  assert_null(f->sink.impl);
  fx_free(f);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_state_round_trip),
      cmocka_unit_test(test_marker_text),
      cmocka_unit_test(test_transactional_id_scheme),
      cmocka_unit_test(test_capability_and_job_guarantee),
      cmocka_unit_test(test_transactional_id_option_refused),
      cmocka_unit_test(test_commit_makes_an_interval_visible),
      cmocka_unit_test(test_late_commit_holds_rows_back),
      cmocka_unit_test(test_recover_redoes_a_lost_commit),
      cmocka_unit_test(test_recover_rewinds_without_the_rows),
      cmocka_unit_test(test_fresh_open_fences_the_predecessor),
      cmocka_unit_test(test_fresh_open_aborts_orphans),
      cmocka_unit_test(test_two_sinks_of_one_table),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  rd_kafka_wait_destroyed(5000);
  return rc;
}
