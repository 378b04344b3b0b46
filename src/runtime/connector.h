/*
 * DESIGN: the connector contract.
 *
 * A connector is a descriptor in a registry: its name (`connector = '…'`), its option tables,
 * its capability record, and vtables for a source and/or a sink. The runtime knows no
 * connector by name; connectors register themselves (ck_connectors_register_all in
 * connectors/registry.c) and the planner looks them up.
 *
 * Source: knows its partitions, is assigned them deterministically by the engine (partition p
 * of n goes to subtask p mod parallelism), fills batches with rows of ONE partition per poll,
 * reports its position for a barrier (snapshot) and seeks to a restored one (restore).
 * Watermarks are not the source's business: the source runner tracks event time per
 * partition from the event-time column of each batch.
 *
 * Sink: write batches; prepare at a barrier (after which everything before it is durable in
 * the destination or held in the returned state for commit); commit(N) after checkpoint N
 * completed; abort; finish at end of input. A sink that cannot do two-phase commit says
 * CK_GUARANTEE_AT_LEAST_ONCE in its capability record.
 *
 * Threads: one source/sink instance per subtask, called only from that subtask's thread.
 */
#ifndef CK_RUNTIME_CONNECTOR_H
#define CK_RUNTIME_CONNECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "runtime/batch.h"
#include "runtime/options.h"
#include "runtime/schema.h"

typedef enum ck_guarantee {
  CK_GUARANTEE_NONE = 0,          /* output may lose data on failure (stdout) */
  CK_GUARANTEE_AT_LEAST_ONCE = 1,
  CK_GUARANTEE_EXACTLY_ONCE = 2,
} ck_guarantee_t;

/* What every source or sink instance is told about itself. */
typedef struct ck_conn_ctx {
  const char *table;          /* the SQL table name */
  const ck_schema_t *schema;  /* the table's columns (source: what to produce) */
  const ck_options_t *options;
  int subtask, parallelism;
  const char *job_name;
  /* Sources: NULL, or a descriptor that becomes readable when the engine has a message for
   * this subtask (a checkpoint trigger, a commit, stop, the job's failure). A poll that waits
   * (for data, or to pace) waits for it too, and returns CK_SRC_IDLE once it is readable,
   * without reading it: the engine reads it. See ck_conn_wait_wake (connectors/util.h). */
  const int *wake_fd;
  /* The embedding host's per-job object (ck_exec_opts_t.host: libclink's tables that push
   * sources and collect sinks exchange batches through), NULL under `clink run`. */
  void *host;
} ck_conn_ctx_t;

/* ---- sources ---- */
typedef struct ck_source ck_source_t;

enum {
  CK_SRC_DATA = 1, /* rows appended to the batch */
  CK_SRC_IDLE = 2, /* nothing available within the timeout */
  CK_SRC_END = 3,  /* bounded input exhausted for every owned partition */
};

typedef struct ck_source_ops {
  int (*open)(ck_source_t *src, ck_error_t *err);
  /* Partitions this subtask owns (fixed after open). */
  int (*npartitions)(ck_source_t *src);
  /* Appends up to max_rows rows of one partition to batch (whose columns follow ctx.schema);
   * *partition is that partition's index among this subtask's partitions; waits up to
   * timeout_ms for rows, or less when ctx.wake_fd becomes readable. Returns CK_SRC_*
   * or a negative error (a record that cannot be decoded under on_decode_error='fail' is an
   * error naming the file:line or partition:offset). */
  int (*poll)(ck_source_t *src, ck_batch_t *batch, int max_rows, int timeout_ms,
              int *partition, ck_error_t *err);
  /* Position at the cut, appended to out; restore seeks back to it before the first poll. */
  int (*snapshot)(ck_source_t *src, ck_buf_t *out, ck_error_t *err);
  int (*restore)(ck_source_t *src, const void *data, size_t len, ck_error_t *err);
  /* Records skipped under on_decode_error='skip' so far (a metric). */
  int64_t (*skipped)(ck_source_t *src);
  void (*close)(ck_source_t *src);
  /* Optional. Records skipped under event_time_null='skip' so far (a metric of its own). */
  int64_t (*time_skipped)(ck_source_t *src);
} ck_source_ops_t;

struct ck_source {
  const ck_source_ops_t *ops;
  ck_conn_ctx_t ctx;
  void *impl;
};

/* ---- sinks ---- */
typedef struct ck_sink ck_sink_t;

typedef struct ck_sink_ops {
  int (*open)(ck_sink_t *sink, bool restored, ck_error_t *err);
  /* batch columns follow ctx.schema; row kinds may be present for changelog streams. */
  int (*write)(ck_sink_t *sink, const ck_batch_t *batch, ck_error_t *err);
  /* At barrier ckpt: flush; state a later commit needs goes to out. */
  int (*prepare)(ck_sink_t *sink, int64_t ckpt, ck_buf_t *out, ck_error_t *err);
  int (*commit)(ck_sink_t *sink, int64_t ckpt, ck_error_t *err);
  int (*finish)(ck_sink_t *sink, ck_error_t *err); /* end of input: flush everything */
  void (*close)(ck_sink_t *sink);
  /* Optional. After a restore from checkpoint ckpt (which completed): re-commit what its
   * prepare left in `state` if that commit may not have happened, and roll back anything a
   * dead incarnation prepared after it. Called after open(restored = true). */
  int (*recover)(ck_sink_t *sink, int64_t ckpt, const void *state, size_t len, ck_error_t *err);
  /* Optional. write that takes the batch (the sink frees it, whatever it returns): a sink
   * that hands the batch's buffers on without copying them (collect). Replaces write. */
  int (*take)(ck_sink_t *sink, ck_batch_t *batch, ck_error_t *err);
  /* Optional (NULL: the sink gives no account). Called after prepare(ckpt) returned, only when
   * the job keeps interval evidence (--capture-dir): appends one JSON object to out, the sink's
   * own account of the interval barrier ckpt closed (where it writes, what it wrote there and
   * was acknowledged for). Never a credential. The runner puts it in epoch-<ckpt>.sink.json
   * (capture/evidence.h) before the barrier is acknowledged; an error fails the barrier. */
  int (*account)(ck_sink_t *sink, int64_t ckpt, ck_buf_t *out, ck_error_t *err);
} ck_sink_ops_t;

struct ck_sink {
  const ck_sink_ops_t *ops;
  ck_conn_ctx_t ctx;
  void *impl;
};

/* ---- the descriptor ---- */
typedef struct ck_connector {
  const char *name;
  const char *description;
  const ck_opt_def_t *source_options; /* NULL-name terminated; NULL when not a source */
  const ck_opt_def_t *sink_options;   /* NULL when not a sink */
  const ck_source_ops_t *source;
  const ck_sink_ops_t *sink;
  ck_guarantee_t sink_guarantee;      /* the best this sink can give */
  /* exactly once: recover(R) also takes back output committed after R (the file sink cuts its
   * file back), so a restore may fall back to an older checkpoint (checkpoint/lineage.h) */
  bool sink_rewinds;
  bool bounded;                       /* source input always ends (file) */
  /* Optional plan-time check of a table's options/schema (paths exist, formats fit). */
  int (*check)(const ck_schema_t *schema, const ck_options_t *opts, bool as_sink,
               ck_error_t *err);
} ck_connector_t;

void ck_connector_register(const ck_connector_t *conn);
const ck_connector_t *ck_connector_find(const char *name);
int ck_connector_count(void);
const ck_connector_t *ck_connector_at(int i);

/* Options every source accepts, handled by the runtime rather than the connector:
 * event_time_column, watermark_lag_ms, allowed_lateness_ms, idle_timeout_ms, on_decode_error,
 * format. */
extern const ck_opt_def_t ck_source_common_options[];
/* Options every sink accepts: delivery_guarantee, format. */
extern const ck_opt_def_t ck_sink_common_options[];

#endif
