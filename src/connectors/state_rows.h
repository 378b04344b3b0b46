/*
 * DESIGN: connector='state' — the bounded source under `clink state-query`: the entries of one
 * checkpoint, each already turned into one JSON object by the caller (cli/cmd_state_query.c),
 * read through the JSON format into the table's declared columns, so the query over them runs
 * on clink's own planner and operators like any other bounded table.
 *
 * The rows are handed over in memory, process-wide, before the job is planned
 * (ck_state_rows_set); the connector is registered only by the command that does that
 * (ck_state_rows_register), so no pipeline can name it. Subtask 0 reads every row (the query
 * runs at parallelism 1); the position is the next row index, so a restore would resume.
 *
 * Threads: ck_state_rows_set / _register on the main thread before the job starts; the
 * source on its subtask's thread, reading the rows only (they outlive the job).
 */
#ifndef CK_CONNECTORS_STATE_ROWS_H
#define CK_CONNECTORS_STATE_ROWS_H

#include <stddef.h>

#include "runtime/connector.h"

extern const ck_connector_t ck_state_rows_connector;

/* The rows the next state source reads: n JSON objects (rows[i], lens[i] bytes each). The
 * arrays and texts are the caller's and must outlive the job. */
void ck_state_rows_set(const char *const *rows, const size_t *lens, size_t n);
/* Registers connector='state' (idempotent). */
void ck_state_rows_register(void);

#endif
