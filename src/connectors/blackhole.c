/*
 * DESIGN: connector='blackhole' — a sink that discards every row and counts them, for
 * benchmarks and for trying a pipeline without a destination. Since nothing is written,
 * nothing can be written twice: it claims CK_GUARANTEE_EXACTLY_ONCE, so a job that asks for
 * exactly-once delivery can be measured with it.
 *
 * Threads: each instance belongs to one subtask's thread.
 */
#include "base/alloc.h"
#include "base/log.h"
#include "connectors/connectors.h"

static const ck_opt_def_t blackhole_options[] = {
    {NULL, 0, NULL, NULL, false, NULL},
};

typedef struct blackhole {
  int64_t rows;
} blackhole_t;

static int bh_open(ck_sink_t *sink, bool restored, ck_error_t *err) {
  sink->impl = ck_calloc(1, sizeof(blackhole_t));
  return 0;
}

static int bh_write(ck_sink_t *sink, const ck_batch_t *batch, ck_error_t *err) {
  ((blackhole_t *)sink->impl)->rows += (int64_t)batch->nrows;
  return 0;
}

static int bh_prepare(ck_sink_t *sink, int64_t ckpt, ck_buf_t *out, ck_error_t *err) {
  return 0;
}

static int bh_commit(ck_sink_t *sink, int64_t ckpt, ck_error_t *err) { return 0; }

static int bh_finish(ck_sink_t *sink, ck_error_t *err) {
  CK_LOG_DEBUG("sink.blackhole", "table '%s' subtask %d discarded %lld rows",
               sink->ctx.table ? sink->ctx.table : "?", sink->ctx.subtask,
               (long long)((blackhole_t *)sink->impl)->rows);
  return 0;
}

static void bh_close(ck_sink_t *sink) {
  ck_free(sink->impl);
  sink->impl = NULL;
}

int64_t ck_blackhole_rows(const ck_sink_t *sink) {
  return sink->impl ? ((const blackhole_t *)sink->impl)->rows : 0;
}

static const ck_sink_ops_t blackhole_sink_ops = {
    bh_open, bh_write, bh_prepare, bh_commit, bh_finish, bh_close,
};

const ck_connector_t ck_blackhole_connector = {
    .name = "blackhole",
    .description = "discards every row (counting them); for benchmarks and dry runs",
    .source_options = NULL,
    .sink_options = blackhole_options,
    .source = NULL,
    .sink = &blackhole_sink_ops,
    .sink_guarantee = CK_GUARANTEE_EXACTLY_ONCE,
    .bounded = false,
    .check = NULL,
};
