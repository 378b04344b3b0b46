/*
 * DESIGN: unit tests for the registry (connectors/registry.c), the print/stdout and blackhole
 * sinks, and the option tables every connector publishes: registration is complete and
 * idempotent, print writes exact NDJSON (or CSV) to standard output or standard error one
 * batch at a time, blackhole counts, and every option is documented and validates.
 * Standard output is captured by dup2 onto a temp file. Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "connectors/connectors.h"
#include "test_connectors_util.h"

static void test_registry_registers_everything_once(void **state) {
  ck_connectors_register_all();
  int n = ck_connector_count();
  ck_connectors_register_all();
  assert_int_equal(ck_connector_count(), n);
  const char *names[] = {"file", "datagen", "print", "stdout", "blackhole"};
  for (size_t i = 0; i < CK_ARRAY_LEN(names); i++) {
    const ck_connector_t *c = ck_connector_find(names[i]);
    if (!c) fail_msg("connector '%s' is not registered", names[i]);
    assert_string_equal(c->name, names[i]);
  }
  assert_ptr_equal(ck_connector_find("file"), &ck_file_connector);
  assert_ptr_equal(ck_connector_find("stdout")->sink, ck_connector_find("print")->sink);
  assert_non_null(ck_file_connector.source);
  assert_non_null(ck_file_connector.sink);
  assert_true(ck_file_connector.bounded);
  /* capable of exactly once (staged files); at least once unless the table asks */
  assert_int_equal(ck_file_connector.sink_guarantee, CK_GUARANTEE_EXACTLY_ONCE);
  assert_int_equal(ck_print_connector.sink_guarantee, CK_GUARANTEE_NONE);
  assert_null(ck_datagen_connector.sink);
  assert_null(ck_print_connector.source);
}

static void test_option_tables_are_documented_and_validate(void **state) {
  const ck_connector_t *all[] = {&ck_file_connector, &ck_datagen_connector, &ck_print_connector,
                                 &ck_stdout_connector, &ck_blackhole_connector};
  for (size_t i = 0; i < CK_ARRAY_LEN(all); i++) {
    assert_true(all[i]->description && strlen(all[i]->description) > 10);
    const ck_opt_def_t *tables[] = {all[i]->source_options, all[i]->sink_options};
    for (int t = 0; t < 2; t++) {
      for (const ck_opt_def_t *d = tables[t]; d && d->name; d++) {
        if (!d->description || strlen(d->description) < 15)
          fail_msg("%s option '%s' has no real description", all[i]->name, d->name);
        for (const ck_opt_def_t *e = d + 1; e->name; e++) assert_string_not_equal(d->name, e->name);
        for (const ck_opt_def_t *c = ck_source_common_options; c->name; c++)
          if (!strcmp(c->name, d->name)) fail_msg("%s repeats the common option '%s'", all[i]->name, d->name);
        if (d->type == CK_OPT_ENUM) assert_non_null(d->choices);
      }
    }
  }
  /* a real table validates a real WITH clause, and "did you mean" works on it */
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_options_t good = t_opts(&arena, "path", "/tmp/x.csv", "format", "csv", "csv.header", "true",
                             "on_decode_error", "skip", NULL);
  const ck_opt_def_t *const tables[] = {ck_file_connector.source_options, ck_source_common_options};
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_options_validate(&good, tables, 2, "table 't'", &err), 0);
  ck_options_t typo = t_opts(&arena, "pth", "/tmp/x", NULL);
  assert_int_equal(ck_options_validate(&typo, tables, 2, "table 't'", &err), CK_EOPTION);
  assert_string_equal(err.hint, "did you mean 'path'?");
  ck_options_t dg = t_opts(&arena, "rows", "10", "fields.a.kind", "sequence", "seed", "1", NULL);
  const ck_opt_def_t *const dtables[] = {ck_datagen_connector.source_options, ck_source_common_options};
  ck_error_clear(&err);
  assert_int_equal(ck_options_validate(&dg, dtables, 2, "table 'g'", &err), 0);
  ck_options_t badhdr = t_opts(&arena, "path", "/x", "csv.header", "yes", NULL);
  ck_error_clear(&err);
  assert_int_equal(ck_options_validate(&badhdr, tables, 2, "table 't'", &err), CK_EOPTION);
  ck_arena_fini(&arena);
}

/* Runs a print sink over batch with stdout (or stderr) captured; returns what was written. */
static char *print_capture(const ck_schema_t *schema, const ck_options_t *opts, const ck_batch_t *batch,
                           int fdnum, int writes) {
  char *dir = t_tmpdir();
  char *path = t_path(dir, "out");
  fflush(NULL);
  int saved = dup(fdnum);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, fdnum);
  close(fd);
  ck_sink_t sink = {ck_print_connector.sink, {"p", schema, opts, 0, 1, "job"}, NULL};
  ck_error_t err;
  ck_error_clear(&err);
  int rc = sink.ops->open(&sink, false, &err);
  for (int i = 0; rc == 0 && i < writes; i++) rc = sink.ops->write(&sink, batch, &err);
  ck_buf_t st;
  ck_buf_init(&st);
  if (rc == 0) rc = sink.ops->prepare(&sink, 1, &st, &err);
  if (rc == 0) rc = sink.ops->finish(&sink, &err);
  sink.ops->close(&sink);
  ck_buf_fini(&st);
  dup2(saved, fdnum);
  close(saved);
  assert_int_equal(rc, 0);
  char *text = t_read(path, NULL);
  t_rmtree(dir);
  ck_free(path);
  ck_free(dir);
  return text;
}

static void test_print_writes_ndjson_per_batch(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_schema_t s = t_schema(&arena, "sensor_id VARCHAR, window_start BIGINT, readings BIGINT, avg_temp_c DOUBLE");
  ck_batch_t *b = t_batch(&s);
  ck_col_append_str(&b->cols[0], "sensor-01", 9);
  ck_col_append_i64(&b->cols[1], 1772352000000LL);
  ck_col_append_i64(&b->cols[2], 10);
  ck_col_append_f64(&b->cols[3], 18.0);
  ck_col_append_str(&b->cols[0], "sensor-02", 9);
  ck_col_append_i64(&b->cols[1], 1772352000000LL);
  ck_col_append_i64(&b->cols[2], 10);
  ck_col_append_f64(&b->cols[3], 18.5);
  ck_batch_seal(b);
  ck_options_t none = {0, NULL, NULL};
  char *out = print_capture(&s, &none, b, 1, 2);
  assert_string_equal(out,
                      "{\"avg_temp_c\":18,\"readings\":10,\"sensor_id\":\"sensor-01\",\"window_start\":1772352000000}\n"
                      "{\"avg_temp_c\":18.5,\"readings\":10,\"sensor_id\":\"sensor-02\",\"window_start\":1772352000000}\n"
                      "{\"avg_temp_c\":18,\"readings\":10,\"sensor_id\":\"sensor-01\",\"window_start\":1772352000000}\n"
                      "{\"avg_temp_c\":18.5,\"readings\":10,\"sensor_id\":\"sensor-02\",\"window_start\":1772352000000}\n");
  ck_free(out);
  ck_options_t csv = t_opts(&arena, "format", "csv", "standard_error", "true", NULL);
  out = print_capture(&s, &csv, b, 2, 1);
  assert_string_equal(out, "sensor-01,1772352000000,10,18\nsensor-02,1772352000000,10,18.5\n");
  ck_free(out);
  ck_error_t err;
  ck_error_clear(&err);
  ck_options_t bad = t_opts(&arena, "format", "xml", NULL);
  assert_int_equal(ck_print_connector.check(&s, &bad, true, &err), CK_EOPTION);
  ck_batch_free(b);
  ck_arena_fini(&arena);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void test_blackhole_counts_rows(void **state) {
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_schema_t s = t_schema(&arena, "a BIGINT");
  ck_batch_t *b = t_batch(&s);
  for (int i = 0; i < 7; i++) ck_col_append_i64(&b->cols[0], i);
  ck_batch_seal(b);
  ck_options_t none = {0, NULL, NULL};
  ck_sink_t sink = {ck_blackhole_connector.sink, {"bh", &s, &none, 0, 1, "job"}, NULL};
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(sink.ops->open(&sink, false, &err), 0);
  assert_int_equal(ck_blackhole_rows(&sink), 0);
  assert_int_equal(sink.ops->write(&sink, b, &err), 0);
  assert_int_equal(sink.ops->write(&sink, b, &err), 0);
  assert_int_equal(sink.ops->prepare(&sink, 1, NULL, &err), 0);
  assert_int_equal(sink.ops->commit(&sink, 1, &err), 0);
  assert_int_equal(sink.ops->finish(&sink, &err), 0);
  assert_int_equal(ck_blackhole_rows(&sink), 14);
  sink.ops->close(&sink);
  ck_batch_free(b);
  ck_arena_fini(&arena);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registry_registers_everything_once),
      cmocka_unit_test(test_option_tables_are_documented_and_validate),
      cmocka_unit_test(test_print_writes_ndjson_per_batch),
      cmocka_unit_test(test_blackhole_counts_rows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
