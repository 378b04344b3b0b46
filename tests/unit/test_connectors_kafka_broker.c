/*
 * DESIGN: the Kafka connector against the real broker scripts/services.sh starts (found through
 * CLINK_KAFKA_BROKERS; a missing variable fails the test, naming it). Each test creates its own
 * topics, named after the process id and the time, with librdkafka's admin API, and produces
 * with a plain librdkafka producer to explicit partitions, so every expectation is known
 * without the connector under test.
 *
 * Covered: deterministic ownership (partition p → subtask p mod parallelism) and one partition
 * per poll; bounded reads ending; snapshot/restore resuming at exactly the next record (restore
 * before and after open); auto_offset_reset latest reading only what comes after open; a decode
 * error under 'fail' (topic, partition, offset in the message; the position stays at the bad
 * record) and under 'skip' (counted); the 'raw' format and tombstones; a missing topic failing
 * fast (source and sink); the sink's keys and values read back. Every test ends at zero live
 * blocks of our allocator, and the process under ASan at zero leaks.
 *
 * Threads: the main thread (librdkafka runs its own).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_kafka_util.h"

#include <librdkafka/rdkafka.h>

#include "base/time.h"
#include "connectors/connectors.h"
#include "connectors/kafka/kafka.h"
#include "test_connectors_util.h"

#define DEADLINE_MS 30000

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
  ck_buf_printf(&b, "ckunit_%s_%d_%lld", what, (int)getpid(), (long long)ck_wall_ms());
  return ck_buf_detach(&b);
}

static rd_kafka_t *client(rd_kafka_type_t type) {
  char why[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers(), why, sizeof why))
    fail_msg("%s", why);
  if (type == RD_KAFKA_PRODUCER) rd_kafka_conf_set(conf, "linger.ms", "0", why, sizeof why);
  rd_kafka_t *rk = rd_kafka_new(type, conf, why, sizeof why);
  if (!rk) fail_msg("could not create a client: %s", why);
  return rk;
}

static void create_topic(const char *topic, int nparts) {
  rd_kafka_t *rk = client(RD_KAFKA_PRODUCER);
  ck_test_create_topic(rk, topic, nparts, DEADLINE_MS);
  rd_kafka_destroy(rk);
}

/* Produces values (NULL: a tombstone) to one partition and waits for every delivery. */
static void produce(const char *topic, int partition, const char *const *values, int n) {
  rd_kafka_t *rk = client(RD_KAFKA_PRODUCER);
  for (int i = 0; i < n; i++) {
    rd_kafka_resp_err_t rerr = rd_kafka_producev(
        rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_VALUE((void *)values[i], values[i] ? strlen(values[i]) : 0), RD_KAFKA_V_END);
    if (rerr) fail_msg("produce: %s", rd_kafka_err2str(rerr));
  }
  assert_int_equal(rd_kafka_flush(rk, DEADLINE_MS), 0);
  rd_kafka_destroy(rk);
}

/* Produces {"id": first+i, "p": partition} for i < n. */
static void produce_ids(const char *topic, int partition, int first, int n) {
  char **vals = ck_calloc((size_t)n, sizeof *vals);
  for (int i = 0; i < n; i++) {
    ck_buf_t b;
    ck_buf_init(&b);
    ck_buf_printf(&b, "{\"id\":%d,\"p\":%d}", first + i, partition);
    vals[i] = ck_buf_detach(&b);
  }
  produce(topic, partition, (const char *const *)vals, n);
  for (int i = 0; i < n; i++) ck_free(vals[i]);
  ck_free(vals);
}

/* ---------------------------------------------------------------- a source under test */

typedef struct fx {
  ck_arena_t arena;
  ck_schema_t schema;
  ck_options_t opts;
  ck_source_t src;
  ck_error_t err;
} fx_t;

/* opts: key, value, … NULL (brokers is added) */
static fx_t *fx_new(const char *spec, const char *topic, int subtask, int par, ...) {
  fx_t *f = calloc(1, sizeof *f);
  ck_arena_init(&f->arena, 4096);
  f->schema = t_schema(&f->arena, spec);
  va_list ap;
  int n = 0;
  va_start(ap, par);
  while (va_arg(ap, const char *)) n++;
  va_end(ap);
  int cnt = n / 2 + 2;
  f->opts.keys = ck_arena_zalloc(&f->arena, sizeof(char *) * (size_t)cnt);
  f->opts.values = ck_arena_zalloc(&f->arena, sizeof(char *) * (size_t)cnt);
  f->opts.keys[0] = "brokers";
  f->opts.values[0] = brokers();
  f->opts.keys[1] = "topic";
  f->opts.values[1] = topic;
  f->opts.n = 2;
  va_start(ap, par);
  for (int i = 0; i < n / 2; i++, f->opts.n++) {
    f->opts.keys[f->opts.n] = va_arg(ap, const char *);
    f->opts.values[f->opts.n] = va_arg(ap, const char *);
  }
  va_end(ap);
  f->src.ops = &ck_kafka_source_ops;
  f->src.ctx = (ck_conn_ctx_t){"events", &f->schema, &f->opts, subtask, par, "test"};
  ck_error_clear(&f->err);
  return f;
}

static void fx_open(fx_t *f) {
  int rc = f->src.ops->open(&f->src, &f->err);
  if (rc) fail_msg("open failed (%d): %s", rc, f->err.message);
}

static void fx_free(fx_t *f) {
  f->src.ops->close(&f->src);
  ck_arena_fini(&f->arena);
  free(f);
}

/* Polls until `want` rows arrived, the input ended (want < 0: until then), or an error;
 * appends the rows as JSON lines to out and the partition index of each batch to parts (a
 * digit per batch). Returns the last poll's result. */
static int fx_read(fx_t *f, int want, int max_rows, ck_buf_t *out, ck_buf_t *parts) {
  int64_t deadline = ck_mono_ms() + DEADLINE_MS;
  int got = 0;
  for (;;) {
    if (ck_mono_ms() > deadline)
      fail_msg("timed out after %d ms with %d rows of %d", DEADLINE_MS, got, want);
    ck_batch_t *batch = t_batch(&f->schema);
    int part = -1;
    ck_error_clear(&f->err);
    int r = f->src.ops->poll(&f->src, batch, max_rows, 200, &part, &f->err);
    if (r == CK_SRC_DATA) {
      ck_batch_seal(batch);
      assert_true(batch->nrows > 0 && (int)batch->nrows <= max_rows);
      assert_true(part >= 0 && part < f->src.ops->npartitions(&f->src));
      char *json = t_batch_json(&f->schema, batch);
      if (out) ck_buf_puts(out, json);
      ck_free(json);
      if (parts) ck_buf_printf(parts, "%d", part);
      got += (int)batch->nrows;
    }
    ck_batch_free(batch);
    if (r < 0 || r == CK_SRC_END || (want >= 0 && got >= want)) return r;
  }
}

static int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

/* ---------------------------------------------------------------- tests */

/* Partition p belongs to subtask p mod parallelism; each poll holds rows of one partition,
 * and its index names that partition among the subtask's own. */
static void test_kafka_source_owns_partitions_mod_parallelism(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  char *topic = topic_name("own");
  create_topic(topic, 5);
  for (int p = 0; p < 5; p++) produce_ids(topic, p, p * 1000, 30 + p);
  for (int sub = 0; sub < 2; sub++) {
    fx_t *f = fx_new("id BIGINT, p INT", topic, sub, 2, "auto_offset_reset", "earliest",
                     "scan.bounded", "latest", NULL);
    fx_open(f);
    int np = f->src.ops->npartitions(&f->src);
    assert_int_equal(np, sub == 0 ? 3 : 2); /* 0,2,4 | 1,3 */
    int64_t rows_of[5] = {0};
    for (;;) {
      ck_batch_t *batch = t_batch(&f->schema);
      int part = -1;
      int r = f->src.ops->poll(&f->src, batch, 10, 200, &part, &f->err);
      if (r <= 0) fail_msg("poll returned %d: %s", r, f->err.message);
      if (r == CK_SRC_END) {
        ck_batch_free(batch);
        break;
      }
      if (r == CK_SRC_DATA) {
        ck_batch_seal(batch);
        int kafka_part = sub + 2 * part; /* the index among the owned, in partition order */
        for (size_t i = 0; i < batch->nrows; i++) {
          int p = ck_col_i32(&batch->cols[1], i);
          if (p != kafka_part)
            fail_msg("subtask %d: a batch of index %d (partition %d) holds a row of partition "
                     "%d", sub, part, kafka_part, p);
          assert_int_equal(ck_col_i64(&batch->cols[0], i), p * 1000 + rows_of[p]); /* in order */
          rows_of[p]++;
        }
      }
      ck_batch_free(batch);
    }
    for (int p = 0; p < 5; p++) assert_int_equal(rows_of[p], p % 2 == sub ? 30 + p : 0);
    /* the position is the end of every owned partition */
    ck_buf_t snap;
    ck_buf_init(&snap);
    assert_int_equal(f->src.ops->snapshot(&f->src, &snap, &f->err), 0);
    ck_str_t t;
    ck_kafka_pos_t *pos;
    int n;
    assert_int_equal(ck_kafka_snap_decode(snap.data, snap.len, &t, &pos, &n, &f->err), 0);
    assert_int_equal(n, np);
    for (int i = 0; i < n; i++) {
      assert_int_equal(pos[i].partition, sub + 2 * i);
      assert_int_equal(pos[i].offset, 30 + pos[i].partition);
    }
    ck_free(pos);
    ck_buf_fini(&snap);
    fx_free(f);
  }
  ck_free(topic);
  assert_int_equal(ck_mem_stats().live_blocks, blocks); /* nothing leaked */
}

/* A subtask with no partition (parallelism above the partition count): bounded, it ends. */
static void test_kafka_source_without_partitions_ends(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  char *topic = topic_name("none");
  create_topic(topic, 1);
  fx_t *f = fx_new("id BIGINT", topic, 1, 2, "scan.bounded", "latest", NULL);
  fx_open(f);
  assert_int_equal(f->src.ops->npartitions(&f->src), 0);
  assert_int_equal(fx_read(f, -1, 100, NULL, NULL), CK_SRC_END);
  fx_free(f);
  ck_free(topic);
  assert_int_equal(ck_mem_stats().live_blocks, blocks); /* nothing leaked */
}

/* A snapshot between polls is an exact cut: a new source restored from it (before open, and
 * after open) reads exactly the rest. */
static void test_kafka_source_snapshot_restore_resumes_exactly(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  char *topic = topic_name("snap");
  create_topic(topic, 1);
  produce_ids(topic, 0, 0, 50);
  fx_t *f = fx_new("id BIGINT", topic, 0, 1, "auto_offset_reset", "earliest", "scan.bounded",
                   "latest", NULL);
  fx_open(f);
  ck_buf_t out, snap;
  ck_buf_init(&out);
  ck_buf_init(&snap);
  assert_int_equal(fx_read(f, 21, 7, &out, NULL), CK_SRC_DATA);
  assert_int_equal(count_lines(out.data), 21);
  assert_int_equal(f->src.ops->snapshot(&f->src, &snap, &f->err), 0);
  fx_free(f);
  for (int after_open = 0; after_open < 2; after_open++) {
    f = fx_new("id BIGINT", topic, 0, 1, "scan.bounded", "latest", NULL); /* latest: the restored
                                                                             position wins */
    if (after_open) fx_open(f);
    assert_int_equal(f->src.ops->restore(&f->src, snap.data, snap.len, &f->err), 0);
    if (!after_open) fx_open(f);
    ck_buf_reset(&out);
    assert_int_equal(fx_read(f, -1, 100, &out, NULL), CK_SRC_END);
    ck_buf_t expect;
    ck_buf_init(&expect);
    for (int i = 21; i < 50; i++) ck_buf_printf(&expect, "{\"id\":%d}\n", i);
    assert_string_equal(out.data, expect.data);
    ck_buf_fini(&expect);
    fx_free(f);
  }
  ck_buf_fini(&out);
  ck_buf_fini(&snap);
  ck_free(topic);
  assert_int_equal(ck_mem_stats().live_blocks, blocks); /* nothing leaked */
}

/* auto_offset_reset = 'latest' (the default): only what is produced after open. */
static void test_kafka_source_latest_reads_only_new_records(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  char *topic = topic_name("latest");
  create_topic(topic, 2);
  produce_ids(topic, 0, 0, 5);
  produce_ids(topic, 1, 100, 5);
  fx_t *f = fx_new("id BIGINT", topic, 0, 1, NULL);
  fx_open(f);
  ck_buf_t out;
  ck_buf_init(&out);
  assert_int_equal(fx_read(f, 0, 100, &out, NULL), CK_SRC_IDLE); /* nothing yet */
  produce_ids(topic, 1, 200, 3);
  assert_int_equal(fx_read(f, 3, 100, &out, NULL), CK_SRC_DATA);
  assert_string_equal(out.data, "{\"id\":200}\n{\"id\":201}\n{\"id\":202}\n");
  fx_free(f);
  ck_buf_fini(&out);
  ck_free(topic);
  assert_int_equal(ck_mem_stats().live_blocks, blocks); /* nothing leaked */
}

/* A bad record under 'fail': an error naming topic, partition and offset, with the position
 * left at that record; under 'skip': counted, and the rest is read. */
static void test_kafka_source_decode_error_fail_and_skip(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  char *topic = topic_name("bad");
  create_topic(topic, 2);
  const char *vals[] = {"{\"id\":1}", "{\"id\":2}", "{\"id\":", "{\"id\":4}"};
  produce(topic, 1, vals, 4);
  fx_t *f = fx_new("id BIGINT", topic, 0, 1, "auto_offset_reset", "earliest", "scan.bounded",
                   "latest", NULL);
  fx_open(f);
  ck_buf_t out;
  ck_buf_init(&out);
  assert_int_equal(fx_read(f, -1, 100, &out, NULL), CK_EDECODE);
  assert_int_equal(f->err.code, CK_EDECODE);
  char expect[512];
  snprintf(expect, sizeof expect, "could not decode record at topic '%s' partition 1 offset 2: ",
           topic);
  if (strncmp(f->err.message, expect, strlen(expect)) != 0)
    fail_msg("message \"%s\" does not start with \"%s\"", f->err.message, expect);
  ck_buf_t snap;
  ck_buf_init(&snap);
  assert_int_equal(f->src.ops->snapshot(&f->src, &snap, &f->err), 0);
  ck_str_t t;
  ck_kafka_pos_t *pos;
  int n;
  assert_int_equal(ck_kafka_snap_decode(snap.data, snap.len, &t, &pos, &n, &f->err), 0);
  assert_int_equal(n, 2);
  assert_int_equal(pos[1].partition, 1);
  assert_int_equal(pos[1].offset, 2); /* at the bad record */
  ck_free(pos);
  ck_buf_fini(&snap);
  fx_free(f);

  f = fx_new("id BIGINT", topic, 0, 1, "auto_offset_reset", "earliest", "scan.bounded",
             "latest", "on_decode_error", "skip", NULL);
  fx_open(f);
  ck_buf_reset(&out);
  assert_int_equal(fx_read(f, -1, 100, &out, NULL), CK_SRC_END);
  assert_string_equal(out.data, "{\"id\":1}\n{\"id\":2}\n{\"id\":4}\n");
  assert_int_equal(f->src.ops->skipped(&f->src), 1);
  fx_free(f);
  ck_buf_fini(&out);
  ck_free(topic);
  assert_int_equal(ck_mem_stats().live_blocks, blocks); /* nothing leaked */
}

/* format 'raw': the value as the one VARCHAR column; a tombstone is NULL. json ignores it. */
static void test_kafka_source_raw_format_and_tombstones(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  char *topic = topic_name("raw");
  create_topic(topic, 1);
  const char *vals[] = {"plain text, \"quoted\"", NULL, "{\"id\":7}", ""};
  produce(topic, 0, vals, 4);
  fx_t *f = fx_new("line VARCHAR", topic, 0, 1, "format", "raw", "auto_offset_reset",
                   "earliest", "scan.bounded", "latest", NULL);
  fx_open(f);
  ck_buf_t out;
  ck_buf_init(&out);
  assert_int_equal(fx_read(f, -1, 100, &out, NULL), CK_SRC_END);
  assert_string_equal(out.data, "{\"line\":\"plain text, \\\"quoted\\\"\"}\n{\"line\":null}\n"
                                "{\"line\":\"{\\\"id\\\":7}\"}\n{\"line\":\"\"}\n");
  fx_free(f);
  f = fx_new("id BIGINT", topic, 0, 1, "auto_offset_reset", "earliest", "scan.bounded",
             "latest", "on_decode_error", "skip", NULL);
  fx_open(f);
  ck_buf_reset(&out);
  assert_int_equal(fx_read(f, -1, 100, &out, NULL), CK_SRC_END);
  assert_string_equal(out.data, "{\"id\":7}\n");
  assert_int_equal(f->src.ops->skipped(&f->src), 2); /* the text and the empty value */
  fx_free(f);
  ck_buf_fini(&out);
  ck_free(topic);
  assert_int_equal(ck_mem_stats().live_blocks, blocks); /* nothing leaked */
}

/* A topic that does not exist: CK_ENOTFOUND naming topic and brokers, fast. */
static void test_kafka_missing_topic_fails_fast(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  char *topic = topic_name("missing");
  fx_t *f = fx_new("id BIGINT", topic, 0, 1, NULL);
  int64_t t0 = ck_mono_ms();
  assert_int_equal(f->src.ops->open(&f->src, &f->err), CK_ENOTFOUND);
  assert_true(ck_mono_ms() - t0 < 10000);
  assert_non_null(strstr(f->err.message, topic));
  assert_non_null(strstr(f->err.message, brokers()));
  assert_null(f->src.impl); /* a failed open cleaned up */
  fx_free(f);

  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_schema_t s = t_schema(&arena, "id BIGINT");
  ck_options_t o = t_opts(&arena, "brokers", brokers(), "topic", topic, NULL);
  ck_sink_t sink = {&ck_kafka_sink_ops, {"out", &s, &o, 0, 1, "test"}, NULL};
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(sink.ops->open(&sink, false, &err), CK_ENOTFOUND);
  assert_non_null(strstr(err.message, topic));
  assert_null(sink.impl);
  ck_arena_fini(&arena);
  ck_free(topic);
  assert_int_equal(ck_mem_stats().live_blocks, blocks); /* nothing leaked */
}

/* The sink writes every row (JSON, keyed) and prepare/finish wait for the deliveries: read
 * back with the source in 'raw' format and with a plain consumer for the keys. */
static void test_kafka_sink_writes_keyed_json(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  char *topic = topic_name("sink");
  create_topic(topic, 1);
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_schema_t s = t_schema(&arena, "id BIGINT, name VARCHAR, v DOUBLE");
  for (int keyed = 0; keyed < 3; keyed++) {
    ck_options_t o = keyed == 0   ? t_opts(&arena, "brokers", brokers(), "topic", topic, NULL)
                     : keyed == 1 ? t_opts(&arena, "brokers", brokers(), "topic", topic, "key",
                                           "name", NULL)
                                  : t_opts(&arena, "brokers", brokers(), "topic", topic, "key",
                                           "id, v", NULL);
    ck_sink_t sink = {&ck_kafka_sink_ops, {"out", &s, &o, 0, 1, "test"}, NULL};
    ck_error_t err;
    ck_error_clear(&err);
    if (sink.ops->open(&sink, false, &err)) fail_msg("sink open: %s", err.message);
    ck_batch_t *batch = t_batch(&s);
    for (int i = 0; i < 3; i++) {
      ck_col_append_i64(&batch->cols[0], keyed * 10 + i);
      char name[8];
      snprintf(name, sizeof name, "n%d", i);
      if (i == 2) ck_col_append_null(&batch->cols[1]);
      else ck_col_append_str(&batch->cols[1], name, strlen(name));
      ck_col_append_f64(&batch->cols[2], 0.5 + i);
    }
    ck_batch_seal(batch);
    assert_int_equal(sink.ops->write(&sink, batch, &err), 0);
    ck_buf_t st;
    ck_buf_init(&st);
    assert_int_equal(sink.ops->prepare(&sink, 1, &st, &err), 0);
    assert_int_equal(sink.ops->finish(&sink, &err), 0);
    ck_buf_fini(&st);
    ck_batch_free(batch);
    sink.ops->close(&sink);
  }
  /* values, in order */
  fx_t *f = fx_new("line VARCHAR", topic, 0, 1, "format", "raw", "auto_offset_reset",
                   "earliest", "scan.bounded", "latest", NULL);
  fx_open(f);
  ck_buf_t out;
  ck_buf_init(&out);
  assert_int_equal(fx_read(f, -1, 100, &out, NULL), CK_SRC_END);
  ck_buf_t expect;
  ck_buf_init(&expect);
  for (int keyed = 0; keyed < 3; keyed++)
    for (int i = 0; i < 3; i++) {
      char name[16];
      snprintf(name, sizeof name, i == 2 ? "null" : "\\\"n%d\\\"", i);
      ck_buf_printf(&expect, "{\"line\":\"{\\\"id\\\":%d,\\\"name\\\":%s,\\\"v\\\":%s}\"}\n",
                    keyed * 10 + i, name, i == 0 ? "0.5" : i == 1 ? "1.5" : "2.5");
    }
  assert_string_equal(out.data, expect.data);
  fx_free(f);
  /* keys */
  rd_kafka_t *rk = client(RD_KAFKA_CONSUMER);
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
  assert_int_equal(rd_kafka_consume_start(rkt, 0, RD_KAFKA_OFFSET_BEGINNING), 0);
  const char *keys[] = {NULL, NULL, NULL, "n0", "n1", NULL,
                        "{\"id\":20,\"v\":0.5}", "{\"id\":21,\"v\":1.5}", "{\"id\":22,\"v\":2.5}"};
  for (int i = 0; i < 9; i++) {
    rd_kafka_message_t *m = rd_kafka_consume(rkt, 0, DEADLINE_MS);
    if (!m) fail_msg("message %d did not arrive", i);
    assert_int_equal(m->err, 0);
    if (!keys[i]) {
      assert_null(m->key);
    } else {
      assert_int_equal(m->key_len, strlen(keys[i]));
      assert_memory_equal(m->key, keys[i], m->key_len);
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consume_stop(rkt, 0);
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
  ck_buf_fini(&out);
  ck_buf_fini(&expect);
  ck_arena_fini(&arena);
  ck_free(topic);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kafka_source_owns_partitions_mod_parallelism),
      cmocka_unit_test(test_kafka_source_without_partitions_ends),
      cmocka_unit_test(test_kafka_source_snapshot_restore_resumes_exactly),
      cmocka_unit_test(test_kafka_source_latest_reads_only_new_records),
      cmocka_unit_test(test_kafka_source_decode_error_fail_and_skip),
      cmocka_unit_test(test_kafka_source_raw_format_and_tombstones),
      cmocka_unit_test(test_kafka_missing_topic_fails_fast),
      cmocka_unit_test(test_kafka_sink_writes_keyed_json),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  rd_kafka_wait_destroyed(5000);
  return rc;
}
