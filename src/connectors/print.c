/*
 * DESIGN: connector='print' (alias 'stdout') — a sink that writes each row as one line of
 * NDJSON (format 'json', the default) or CSV to standard output, or standard error when
 * standard_error='true'. This is what a bare SELECT in `clink run` shows.
 *
 * Each batch is encoded into a buffer and handed to the kernel with one write (a loop only
 * for short writes), so lines from parallel subtasks never interleave mid-line for pipes up to
 * PIPE_BUF and files; nothing is held back between batches, so prepare and finish have
 * nothing left to flush. The terminal keeps no state across failures: CK_GUARANTEE_NONE.
 *
 * Threads: each instance belongs to one subtask's thread.
 */
#include <string.h>

#include "base/alloc.h"
#include "connectors/connectors.h"
#include "connectors/format.h"
#include "connectors/util.h"

static const ck_opt_def_t print_options[] = {
    {"standard_error", CK_OPT_BOOL, "false", NULL, false,
     "write to standard error instead of standard output"},
    {NULL, 0, NULL, NULL, false, NULL},
};

typedef struct print_sink {
  ck_encoder_t *enc;
  int fd;
  ck_buf_t buf;
} print_sink_t;

static int print_check(const ck_schema_t *schema, const ck_options_t *opts, bool as_sink,
                       ck_error_t *err) {
  ck_format_kind_t fmt;
  return ck_format_parse(ck_options_get(opts, "format"), "the print connector", &fmt, err);
}

static int print_open(ck_sink_t *sink, bool restored, ck_error_t *err) {
  ck_format_kind_t fmt;
  int rc = ck_format_parse(ck_options_get(sink->ctx.options, "format"), "the print connector",
                           &fmt, err);
  if (rc) return rc;
  print_sink_t *ps = ck_calloc(1, sizeof *ps);
  ps->fd = ck_opt_bool(sink->ctx.options, print_options, "standard_error") ? 2 : 1;
  ps->enc = ck_encoder_new(fmt, sink->ctx.schema);
  ck_buf_init(&ps->buf);
  sink->impl = ps;
  return 0;
}

static int print_write(ck_sink_t *sink, const ck_batch_t *batch, ck_error_t *err) {
  print_sink_t *ps = sink->impl;
  ck_buf_reset(&ps->buf);
  ck_encoder_batch(ps->enc, batch, &ps->buf);
  int rc = ck_conn_write_all(ps->fd, ps->buf.data, ps->buf.len);
  if (rc)
    return ck_error_set(err, CK_EIO, "could not write to standard %s: %s",
                        ps->fd == 2 ? "error" : "output", strerror(-rc));
  return 0;
}

static int print_prepare(ck_sink_t *sink, int64_t ckpt, ck_buf_t *out, ck_error_t *err) {
  return 0; /* every batch was written when it came */
}

static int print_commit(ck_sink_t *sink, int64_t ckpt, ck_error_t *err) { return 0; }
static int print_finish(ck_sink_t *sink, ck_error_t *err) { return 0; }

static void print_close(ck_sink_t *sink) {
  print_sink_t *ps = sink->impl;
  if (!ps) return;
  ck_encoder_free(ps->enc);
  ck_buf_fini(&ps->buf);
  ck_free(ps);
  sink->impl = NULL;
}

static const ck_sink_ops_t print_sink_ops = {
    print_open, print_write, print_prepare, print_commit, print_finish, print_close,
};

const ck_connector_t ck_print_connector = {
    .name = "print",
    .description = "writes every row to standard output as one line of JSON (or CSV); no "
                   "delivery guarantee",
    .source_options = NULL,
    .sink_options = print_options,
    .source = NULL,
    .sink = &print_sink_ops,
    .sink_guarantee = CK_GUARANTEE_NONE,
    .bounded = false,
    .check = print_check,
};

const ck_connector_t ck_stdout_connector = {
    .name = "stdout",
    .description = "alias of 'print'",
    .source_options = NULL,
    .sink_options = print_options,
    .source = NULL,
    .sink = &print_sink_ops,
    .sink_guarantee = CK_GUARANTEE_NONE,
    .bounded = false,
    .check = print_check,
};
