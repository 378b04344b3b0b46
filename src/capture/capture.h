/*
 * DESIGN: the flight recorder — what each operator subtask consumed, per checkpoint interval,
 * as files a replay (cli/cmd_replay.c) needs nothing else to re-execute the operator.
 *
 * Layout under --capture-dir DIR:
 *   DIR/op-<id>/op.json                       the operator: kind, parameters, input and output
 *                                             schemas, the plan fingerprint, and the job graph
 *                                             serialised with every credential masked
 *                                             (runtime/plan.h, CK_PLAN_WIRE_REDACT), from which
 *                                             replay rebuilds node <id>
 *   DIR/op-<id>/subtask-<s>/epoch-<N>.cap     the input between barrier N-1 and barrier N
 *   DIR/op-<id>/subtask-<s>/epoch-final.cap   the input after the last barrier (end of input,
 *                                             a stop, or a run without checkpoints)
 * Every file is written under a temporary name and renamed into place: a reader sees a whole
 * file or none.
 *
 * A .cap file is one Arrow IPC stream (base/arrow_ipc.h; pyarrow and DuckDB open it). Its
 * columns are four control columns, then the operator's input columns under their names:
 *   __event   uint16  0 record, 1 watermark, 2 barrier, 3 idle, 4 end of input
 *   __value   int64   the watermark, or the barrier's checkpoint id; for a record, the watermark
 *                     it arrived under (runtime/batch.h wms: it decides whether the record is
 *                     late), INT64_MIN when its batch carried none
 *   __input   uint16  which upstream subtask sent it (0 for a chained operator)
 *   __kind    uint16  the record's row kind (0 insert, 1 update-before, 2 update-after, 3 delete)
 *   <col>...  nullable: BOOL, INT, BIGINT and TIMESTAMP as int64, FLOAT and DOUBLE as float64,
 *             DECIMAL as 16 bytes of the little-endian unscaled value (binary), VARCHAR as utf8
 * Each input batch is one record batch of __event 0 rows, each control event a record batch of
 * one row whose input columns are NULL, in the order the operator saw them. The schema's
 * metadata (clink.capture.*: format, op, op_name, subtask, task, epoch, from_checkpoint,
 * records_seen, records_stored, truncated, types — the input columns' SQL types as
 * "id:precision:scale,…" —, plan_fingerprint) says what the file is; docs/replay.md has the
 * table.
 *
 * Epochs: the interval that barrier N closes is epoch N; its state starts from the checkpoint
 * of the barrier before it in this run (from_checkpoint: 0 for a fresh start, the restored
 * checkpoint's id after a restore), which is what replay restores.
 *
 * Cost: the per-batch path encodes the batch as one record batch message into the open
 * interval's buffer: columns whose layout is already Arrow's straight from the batch's memory
 * (capture.c view_col), the others converted column at a time (no per-row calls); the file is
 * written at the barrier. Past
 * --capture-records rows an interval keeps counting what it sees but stores no more records
 * and says truncated; watermarks and idleness are bounded by the same number (barriers and the
 * end are always stored).
 *
 * Threads: a recorder (ck_capture_rec_t) belongs to its operator subtask's thread; the job's
 * ck_capture_t is made before the subtask threads start and freed after they are joined, and is
 * read-only meanwhile. Every recorder function accepts NULL (capture off: nothing happens,
 * summaries say disarmed), so the executor's hooks are unconditional one-line calls.
 *
 * For a runner (the sink-interval evidence, capture/evidence.c): the summary of an interval of
 * (op, subtask, epoch) is what ck_capture_barrier (or ck_capture_finish) fills in when it
 * closes that interval, on the subtask's thread — call it at the barrier with the stage's
 * recorder and read the summary it returns; ck_capture_last gives the last closed interval's
 * summary again later on the same thread. A recorder that is NULL or disarmed gives state
 * CK_CAPTURE_DISARMED.
 */
#ifndef CK_CAPTURE_CAPTURE_H
#define CK_CAPTURE_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "runtime/batch.h"
#include "runtime/graph.h"
#include "runtime/plan.h"

#define CK_CAPTURE_FORMAT 2
#define CK_CAPTURE_DEFAULT_RECORDS 10000
#define CK_CAPTURE_EPOCH_FINAL INT64_MAX /* the epoch after the last barrier: "final" */
#define CK_CAPTURE_MAX_COLS 28           /* input columns a .cap holds (4 control columns) */

/* The control events of a capture, by their __event codes. */
typedef enum ck_capture_event {
  CK_CAPTURE_RECORD = 0,
  CK_CAPTURE_WATERMARK = 1,
  CK_CAPTURE_BARRIER = 2,
  CK_CAPTURE_IDLE = 3,
  CK_CAPTURE_END = 4,
} ck_capture_event_t;

/* What an interval's capture came to. */
typedef enum ck_capture_state {
  CK_CAPTURE_DISARMED = 0, /* capture is off for this operator (no --capture-dir, or refused) */
  CK_CAPTURE_EMPTY,        /* written, and it saw no record */
  CK_CAPTURE_WRITTEN,      /* written, holding records */
  CK_CAPTURE_FAILED,       /* the file could not be written (the job goes on; logged) */
} ck_capture_state_t;

const char *ck_capture_state_name(ck_capture_state_t state); /* "disarmed", "empty", … */

/* The summary of one closed interval of one operator subtask. */
typedef struct ck_capture_summary {
  ck_capture_state_t state;
  int op;                  /* node id */
  int subtask;
  int64_t epoch;           /* the closing barrier's id, CK_CAPTURE_EPOCH_FINAL for final */
  int64_t from_checkpoint; /* the barrier before it in this run (0: the run's start) */
  int64_t records_seen;    /* rows the operator took in the interval */
  int64_t records_stored;  /* rows the file holds (≤ records_seen) */
  bool truncated;          /* records_stored < records_seen, or watermarks were not all kept */
  char path[512];          /* the file, "" unless written */
} ck_capture_summary_t;

/* What a job records (--capture-dir, --capture-records). dir NULL: off. */
typedef struct ck_capture_opts {
  const char *dir;
  int64_t max_records; /* per operator subtask and interval; 0: CK_CAPTURE_DEFAULT_RECORDS */
} ck_capture_opts_t;

typedef struct ck_capture ck_capture_t;         /* one job's recorder settings and op.json files */
typedef struct ck_capture_rec ck_capture_rec_t; /* one operator subtask's recorder */

/* ---- recording (the executor) */

/* Opens capture for a job: creates DIR and writes op-<id>/op.json of every calc, aggregate and
 * sink node (the whole serialised graph masked inside each). restore_id: the checkpoint this
 * run starts from (0: none), the first interval's from_checkpoint. *out NULL when opts or
 * opts->dir is NULL. */
int ck_capture_open(const ck_capture_opts_t *opts, const ck_graph_t *graph, const ck_plan_t *plan,
                    uint64_t fingerprint, int64_t restore_id, ck_capture_t **out,
                    ck_error_t *err);
void ck_capture_close(ck_capture_t *cap);

/* A recorder for node's subtask (task: its snapshot directory number). NULL when cap is NULL
 * or the node is not recorded (a source), or its input has more than CK_CAPTURE_MAX_COLS
 * columns (logged once: the node's intervals are disarmed). */
ck_capture_rec_t *ck_capture_rec_new(ck_capture_t *cap, const ck_node_t *node, int subtask,
                                     int task);
void ck_capture_rec_free(ck_capture_rec_t *rec);

/* A batch the operator is about to take (input: the sender's subtask, 0 when chained). */
void ck_capture_batch(ck_capture_rec_t *rec, const ck_batch_t *batch, int input);
/* A control event the operator is about to see (watermark value; idle and end: 0). */
void ck_capture_event(ck_capture_rec_t *rec, ck_capture_event_t kind, int64_t value, int input);
/* Barrier id reached the operator (after its snapshot): closes epoch id, writing its file,
 * and starts the next interval from checkpoint id. Fills *out (may be NULL). A failed write is
 * logged and summarised as CK_CAPTURE_FAILED, never an error of the job. */
void ck_capture_barrier(ck_capture_rec_t *rec, int64_t id, ck_capture_summary_t *out);
/* The subtask finished (or stopped): closes the open interval as epoch-final.cap. */
void ck_capture_finish(ck_capture_rec_t *rec, ck_capture_summary_t *out);
/* The last interval closed (state DISARMED before any, or when rec is NULL). */
void ck_capture_last(const ck_capture_rec_t *rec, ck_capture_summary_t *out);

/* ---- reading (capture-cat, replay, the fuzz target) */

typedef struct ck_capture_header {
  int format;
  int op, subtask, task;
  char op_name[64];
  int64_t epoch;           /* CK_CAPTURE_EPOCH_FINAL for final */
  int64_t from_checkpoint;
  int64_t records_seen, records_stored;
  bool truncated;
  uint64_t plan_fingerprint;
  int ncols;                         /* the operator's input columns */
  ck_type_t types[CK_CAPTURE_MAX_COLS];
  char names[CK_CAPTURE_MAX_COLS][64];
} ck_capture_header_t;

/* One item of a capture, in order: a batch of records (kind CK_CAPTURE_RECORD; batch owned by
 * the caller, ck_batch_free), or a control event (batch NULL). */
typedef struct ck_capture_item {
  ck_capture_event_t kind;
  int64_t value;
  int input;
  ck_batch_t *batch;
} ck_capture_item_t;

typedef struct ck_capture_reader ck_capture_reader_t;

/* Reads the header of the capture in data[0..len) (which must outlive the reader). CK_EDECODE
 * naming what is wrong for bytes that are not a capture this reader reads: every length and
 * offset is checked, so a damaged file is an error, never a crash. */
int ck_capture_reader_open(const void *data, size_t len, ck_capture_reader_t **out,
                           ck_error_t *err);
const ck_capture_header_t *ck_capture_reader_header(const ck_capture_reader_t *r);
/* The next item: 1 with one, 0 at the end, CK_EDECODE. */
int ck_capture_reader_next(ck_capture_reader_t *r, ck_capture_item_t *item, ck_error_t *err);
void ck_capture_reader_free(ck_capture_reader_t *r);

/* "epoch-<N>.cap" / "epoch-final.cap" for epoch, and back (false for another name). */
void ck_capture_epoch_file(int64_t epoch, char *out, size_t cap);
bool ck_capture_parse_epoch(const char *text, int64_t *epoch);

/* Row r of batch as one JSON object (columns by name; a row kind other than insert as "__kind":
 * "-U", "+U", "-D"), the one rendering capture-cat and replay share. */
void ck_capture_row_json(const ck_batch_t *batch, size_t r, const char *const *names,
                         ck_buf_t *out);

#endif
