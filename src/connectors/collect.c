/*
 * DESIGN: connector='collect' — a sink whose rows go to the program that embeds the engine
 * (libclink: clink_collect, clink_query; pyclink: Engine.collect, Engine.sql). Each batch is
 * put, as it is, into the table's host queue (connectors/hostio.h): the sink takes the batch
 * from the runner (ck_sink_ops_t.take) and the host reads it as an Arrow array pointing at the
 * batch's own buffers, so column data is not copied on the way out. A full queue blocks the
 * sink (backpressure, nothing dropped); the host's library ends the queue when the job ends.
 *
 * Delivery: at least once (a restart from a checkpoint sends the rows after it again). An
 * update stream's batches keep their row kinds (the runner gives every row of one a kind), and
 * the host's stream shows them as a leading "__op" column (src/lib/, arrow_c.c); an append-only
 * stream's batches have none and its stream is the table's columns alone.
 *
 * Under `clink run` there is no host: opening the sink fails, saying to use print instead.
 *
 * Threads: each instance belongs to one subtask's thread; the queue is shared with the host.
 */
#include "base/alloc.h"
#include "connectors/connectors.h"
#include "connectors/hostio.h"

static const ck_opt_def_t collect_options[] = {
    {NULL, 0, NULL, NULL, false, NULL},
};

static int no_host(const ck_conn_ctx_t *ctx, const char *what, ck_error_t *err) {
  ck_error_set(err, CK_EUNSUPPORTED, "could not open table '%s': connector '%s' exchanges rows "
               "with a program that embeds clink (libclink, pyclink), and this run has none",
               ctx->table ? ctx->table : "?", what);
  ck_error_hint(err, "run the script through clink_exec or pyclink, or use connector='%s' here",
                what[0] == 'c' ? "print" : "datagen");
  return CK_EUNSUPPORTED;
}

static int collect_open(ck_sink_t *sink, bool restored, ck_error_t *err) {
  ck_host_t *h = sink->ctx.host;
  if (!h) return no_host(&sink->ctx, "collect", err);
  ck_hostq_t *q = h->queue(h, sink->ctx.table, true);
  if (!q)
    return ck_error_set(err, CK_EINTERNAL, "could not open table '%s': the host has no queue "
                        "for it", sink->ctx.table);
  ck_hostq_ref(q);
  sink->impl = q;
  return 0;
}

static int collect_take(ck_sink_t *sink, ck_batch_t *batch, ck_error_t *err) {
  return ck_hostq_put(sink->impl, batch, err); /* with its row kinds, if it has any */
}

static int collect_write(ck_sink_t *sink, const ck_batch_t *batch, ck_error_t *err) {
  return ck_error_set(err, CK_EINTERNAL, "the collect sink takes its batches");
}

static int collect_prepare(ck_sink_t *sink, int64_t ckpt, ck_buf_t *out, ck_error_t *err) {
  return 0;
}

static int collect_commit(ck_sink_t *sink, int64_t ckpt, ck_error_t *err) { return 0; }
static int collect_finish(ck_sink_t *sink, ck_error_t *err) { return 0; }

static void collect_close(ck_sink_t *sink) {
  ck_hostq_unref(sink->impl);
  sink->impl = NULL;
}

static const ck_sink_ops_t collect_sink_ops = {
    .open = collect_open,
    .write = collect_write,
    .prepare = collect_prepare,
    .commit = collect_commit,
    .finish = collect_finish,
    .close = collect_close,
    .take = collect_take,
};

const ck_connector_t ck_collect_connector = {
    .name = "collect",
    .description = "rows to the program embedding clink, as Arrow batches (libclink, pyclink)",
    .sink_options = collect_options,
    .sink = &collect_sink_ops,
    .sink_guarantee = CK_GUARANTEE_AT_LEAST_ONCE,
};

/* ---------------------------------------------------------------- push */

/*
 * connector='push' — a source fed by the embedding program (clink_push, Engine.push) with
 * Arrow batches, converted to the table's columns by the library (hostio.h) and queued; the
 * source hands them on in slices of at most the runner's batch size. Its one partition
 * belongs to subtask 0; event time and watermarks are the runner's, as for any source
 * (event_time_column, watermark_lag_ms, idle_timeout_ms …). The input ends when the host
 * closes the table (clink_push_close) and the queue is empty.
 *
 * Checkpoints: the source records nothing (the host's batches cannot be read again), so a
 * job restored from a checkpoint continues with what the host pushes next.
 */
typedef struct push_src {
  ck_hostq_t *q;
  ck_batch_t *cur; /* the host batch being handed on */
  size_t pos;
} push_src_t;

static int push_open(ck_source_t *src, ck_error_t *err) {
  ck_host_t *h = src->ctx.host;
  if (!h) return no_host(&src->ctx, "push", err);
  push_src_t *p = ck_calloc(1, sizeof *p);
  src->impl = p;
  if (src->ctx.subtask != 0) return 0;
  if (!(p->q = h->queue(h, src->ctx.table, false)))
    return ck_error_set(err, CK_EINTERNAL, "could not open table '%s': the host has no queue "
                        "for it", src->ctx.table);
  ck_hostq_ref(p->q);
  return 0;
}

static int push_npartitions(ck_source_t *src) {
  return ((push_src_t *)src->impl)->q ? 1 : 0;
}

static int push_poll(ck_source_t *src, ck_batch_t *batch, int max_rows, int timeout_ms,
                     int *partition, ck_error_t *err) {
  push_src_t *p = src->impl;
  *partition = 0;
  if (!p->q) return CK_SRC_END;
  if (!p->cur) {
    int rc = ck_hostq_get(p->q, &p->cur, timeout_ms, src->ctx.wake_fd, err);
    if (rc == 0) return CK_SRC_IDLE;
    if (rc == 3) return CK_SRC_END;
    if (rc < 0) return rc;
    p->pos = 0;
  }
  size_t n = p->cur->nrows - p->pos;
  if (n > (size_t)max_rows) n = (size_t)max_rows;
  for (size_t i = 0; i < n; i++) ck_batch_append_row(batch, p->cur, p->pos + i);
  p->pos += n;
  if (p->pos >= p->cur->nrows) {
    ck_batch_free(p->cur);
    p->cur = NULL;
  }
  return n ? CK_SRC_DATA : CK_SRC_IDLE;
}

static int push_snapshot(ck_source_t *src, ck_buf_t *out, ck_error_t *err) { return 0; }
static int push_restore(ck_source_t *src, const void *data, size_t len, ck_error_t *err) {
  return 0;
}
static int64_t push_skipped(ck_source_t *src) { return 0; }

static void push_close(ck_source_t *src) {
  push_src_t *p = src->impl;
  if (!p) return;
  ck_batch_free(p->cur);
  ck_hostq_unref(p->q);
  ck_free(p);
  src->impl = NULL;
}

static const ck_source_ops_t push_source_ops = {
    .open = push_open,
    .npartitions = push_npartitions,
    .poll = push_poll,
    .snapshot = push_snapshot,
    .restore = push_restore,
    .skipped = push_skipped,
    .close = push_close,
};

static const ck_opt_def_t push_options[] = {
    {NULL, 0, NULL, NULL, false, NULL},
};

const ck_connector_t ck_push_connector = {
    .name = "push",
    .description = "rows the program embedding clink pushes as Arrow batches (libclink, pyclink)",
    .source_options = push_options,
    .source = &push_source_ops,
};
