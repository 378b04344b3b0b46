/*
 * DESIGN: host tables — how a job and the program that embeds the engine (libclink,
 * src/lib/) exchange batches: a `push` source takes the host's batches from a queue, a
 * `collect` sink puts its batches into one for the host to read.
 *
 * A queue (ck_hostq_t) is bounded by a number of batches: a put blocks while it is full
 * (backpressure: an unread collect table slows its job, a push waits for its source), and
 * nothing is ever dropped. Its producer ends it (ck_hostq_end: with 0, the consumer sees the
 * end once the queue is empty; with an error code, the error after the queued batches), and
 * either side may abort it (ck_hostq_abort: every waiter returns the error at once, queued
 * batches are freed). The consumer waits on an eventfd, so a source waits for a batch and for
 * the engine's wake descriptor in one poll().
 *
 * The host object (ck_host_t, ck_conn_ctx_t.host) maps a table's name to its queue; libclink
 * gives every job one. Under `clink run` there is none, and both connectors refuse to open.
 *
 * A collect queue also fixes, once, whether its stream is an update stream (ck_hostq_mode):
 * then the host sees every row's kind as a leading "__op" column; an append-only stream keeps
 * the table's columns as they are.
 *
 * Arrow (arrow_c.c): a table's schema as an ArrowSchema; a batch as an ArrowArray that owns
 * it — every column's validity, values, offsets and bytes are the batch's own buffers (the
 * layout of runtime/batch.h is Arrow's), except BOOLEAN, whose bytes are repacked into a
 * bitmap; and an ArrowArray with its ArrowSchema imported into a new batch of a table's
 * columns (a copy: the host's memory is released at once).
 *
 * Threads: a queue's calls from any thread; one consumer at a time.
 */
#ifndef CK_CONNECTORS_HOSTIO_H
#define CK_CONNECTORS_HOSTIO_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "clink/clink.h"
#include "runtime/batch.h"
#include "runtime/schema.h"

typedef struct ck_hostq ck_hostq_t;

/* A queue holding up to capacity batches, with one reference. */
ck_hostq_t *ck_hostq_new(int capacity);
void ck_hostq_ref(ck_hostq_t *q);
void ck_hostq_unref(ck_hostq_t *q); /* the last one frees it and its batches */
/* Takes b; blocks while the queue is full. 0, or the abort's (or end's) code. */
int ck_hostq_put(ck_hostq_t *q, ck_batch_t *b, ck_error_t *err);
/* The next batch into *out (1), nothing within timeout_ms (0; < 0 waits for ever) or
 * wake_fd became readable (0), the end (CK_SRC_END's 3), or the error that ended it. */
int ck_hostq_get(ck_hostq_t *q, ck_batch_t **out, int64_t timeout_ms, const int *wake_fd,
                 ck_error_t *err);
/* The producer is done: code 0 (the end) or an error, after the queued batches. The first
 * end or abort wins. */
void ck_hostq_end(ck_hostq_t *q, int code, const char *msg);
void ck_hostq_abort(ck_hostq_t *q, int code, const char *msg);
bool ck_hostq_ended(ck_hostq_t *q);
/* Waits up to timeout_ms (< 0: for ever) for a batch, the end or an abort: true, or false on
 * timeout. Takes nothing. */
bool ck_hostq_wait_ready(ck_hostq_t *q, int64_t timeout_ms);

/* What a queue has seen: batches queued now, puts blocked on a full queue now, and batches and
 * rows put and taken so far (clink_table_stats). */
typedef struct ck_hostq_stats {
  int capacity, queued, blocked;
  int64_t batches_in, batches_out, rows_in, rows_out;
} ck_hostq_stats_t;
void ck_hostq_stats(ck_hostq_t *q, ck_hostq_stats_t *out);

/* A collect queue's stream shape, fixed once by whichever side needs it first: the job that
 * writes it (APPEND or CHANGELOG, from its plan) or the reader asking for the schema before
 * any job writes it (APPEND). ck_hostq_mode fixes want (with key: the changelog's upsert key,
 * a JSON array of column names, or NULL) unless a mode is fixed already, and returns the mode
 * in force and its key (owned by the queue, valid for its life). */
enum { CK_HOSTQ_UNSET = 0, CK_HOSTQ_APPEND = 1, CK_HOSTQ_CHANGELOG = 2 };
int ck_hostq_mode(ck_hostq_t *q, int want, const char *key, const char **key_out);

/* The host: a table's queue (sink: a collect table's; else a push table's), or NULL. */
typedef struct ck_host {
  ck_hostq_t *(*queue)(struct ck_host *h, const char *table, bool sink);
} ck_host_t;

/* Arrow (arrow_c.c). Column data bytes exported in place and copied, process-wide. */
extern _Atomic int64_t ck_arrow_bytes_in_place, ck_arrow_bytes_copied;
/* s as an Arrow struct schema ("+s", one child per column). A changelog stream leads with the
 * row-kind column CK_ARROW_OP ("__op": int8 codes 0..3 = ck_row_kind_t, dictionary-encoded
 * over the strings "+I", "-U", "+U", "-D"), and upsert_key (JSON, or NULL) goes into the
 * schema's metadata as "clink.upsert_key". */
#define CK_ARROW_OP "__op"
void ck_arrow_schema_export(const ck_schema_t *s, bool changelog, const char *upsert_key,
                            struct ArrowSchema *out);
/* b as an Arrow struct array that owns it (the release frees it). Takes b. With changelog, the
 * row kinds lead as the "__op" column (b's own kinds array, in place). */
void ck_arrow_batch_export(ck_batch_t *b, bool changelog, struct ArrowArray *out);
/* A new batch of s's columns from the host's array and schema (released here, also on
 * error); a column of s the array lacks is NULL. */
int ck_arrow_batch_import(struct ArrowArray *a, struct ArrowSchema *as, const ck_schema_t *s,
                          const char *table, ck_batch_t **out, ck_error_t *err);

#endif
