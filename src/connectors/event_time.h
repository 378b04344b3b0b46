/*
 * DESIGN: a source's rule for records without event time (private to src/connectors/). A table
 * with event_time_column gets its watermark and windows from that column; a record where it is
 * missing or NULL belongs to no window and says nothing about time. It used to be counted as a
 * late record by the window downstream; now the source decides at the record, where it still
 * knows where the record came from: option event_time_null = 'fail' (the default: the job stops
 * with the record's file:line or partition:offset, like a decode error) or 'skip' (the record is
 * dropped and counted in its own metric, no_event_time, never among late or undecodable ones).
 *
 * The connectors that decode records (file, kafka) call ck_event_time_check_row after each
 * decoded row; the runtime applies the same option to what any other source produces (exec.c),
 * naming the table and partition since it knows no record position.
 *
 * Threads: a check belongs to its source's subtask thread.
 */
#ifndef CK_CONNECTORS_EVENT_TIME_H
#define CK_CONNECTORS_EVENT_TIME_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "connectors/format.h"
#include "runtime/connector.h"

typedef struct ck_event_time_check {
  int col;          /* the event-time column, -1: none (no check) */
  const char *name; /* its name */
  bool skip;       /* event_time_null = 'skip' */
  int64_t skipped; /* records skipped for it */
} ck_event_time_check_t;

static inline void ck_event_time_check_init(ck_event_time_check_t *tc, const ck_conn_ctx_t *ctx) {
  const char *name = ck_options_get(ctx->options, "event_time_column");
  const char *policy = ck_opt_str(ctx->options, ck_source_common_options, "event_time_null");
  tc->col = name ? ck_schema_find(ctx->schema, name) : -1;
  tc->name = name;
  tc->skip = policy && strcmp(policy, "skip") == 0;
  tc->skipped = 0;
}

/* Called after one record was decoded into the last row of batch. 1: it has event time, keep
 * it. Otherwise the row is taken out of the batch again and the result is 0 under 'skip'
 * (counted), or CK_EDECODE under 'fail' with err saying what is missing (the caller adds where
 * the record is, as for a decode error). */
static inline int ck_event_time_check_row(ck_event_time_check_t *tc, ck_batch_t *batch,
                                          ck_error_t *err) {
  if (tc->col < 0 || !batch->nrows) return 1;
  size_t row = batch->nrows - 1;
  if (ck_col_valid(&batch->cols[tc->col], row)) return 1;
  for (int c = 0; c < batch->ncols; c++) ck_format_col_truncate(&batch->cols[c], row);
  batch->nrows = row;
  if (tc->skip) {
    tc->skipped++;
    return 0;
  }
  return ck_error_set(err, CK_EDECODE, "has no event time: its event_time_column '%s' is "
                      "missing or NULL", tc->name);
}

#endif
