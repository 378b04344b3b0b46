/*
 * DESIGN: the reconciliation's one connection to a destination (record 015, "Reading the
 * destination"): the operator's host, port, user and password, never the bundle's.
 *
 * Read only, twice over: the only entry points run SELECT statements this file writes, and
 * every statement carries readonly = 2 in its settings, under which the server refuses any
 * write (code 164, READONLY; tests/unit/test_incident_reconcile_server.c shows it on both
 * lines through this very session, ck_rdest_query). Bounded: every statement carries
 * max_execution_time and max_result_rows with timeout_overflow_mode and result_overflow_mode
 * = throw, and the client's own receive timeout bounds every wait; a statement that passes a
 * bound fails whole (the server's TOO_MANY_ROWS / TIMEOUT_EXCEEDED, or the client's timeout:
 * ck_rdest_bound tells), and a caller never decides on part of an answer.
 *
 * Names go in as quoted identifiers (ck_ch_quote_ident) or string literals
 * (ck_rdest_quote_str: every byte outside printable ASCII as \xHH); key values as literals
 * of their column's type (ck_rdest_literal).
 *
 * Threads: one at a time.
 */
#ifndef CK_INCIDENT_RECONCILE_READ_H
#define CK_INCIDENT_RECONCILE_READ_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "connectors/clickhouse/ch_client.h"
#include "incident/cells.h"

typedef struct ck_rdest_conf {
  const char *host;
  int port;
  const char *user, *password;
  int64_t max_rows;       /* max_result_rows */
  int max_execution_s;    /* max_execution_time */
  int receive_timeout_ms; /* the client's */
} ck_rdest_conf_t;

typedef struct ck_rdest {
  ck_ch_client_t *client;
  ck_rdest_conf_t conf;
  char max_rows[24], max_exec[24];
  ck_ch_setting_t settings[5];
  int nsettings;
  int64_t statements; /* statements run */
} ck_rdest_t;

int ck_rdest_open(ck_rdest_t *d, const ck_rdest_conf_t *conf, ck_error_t *err);
void ck_rdest_close(ck_rdest_t *d);
/* Whether a failed statement failed on a bound (the server's row or time limit, the client's
 * receive timeout). */
bool ck_rdest_bound(const ck_error_t *err);

/* Runs one SELECT under the session's settings (readonly = 2 and the bounds); each block to
 * on_block. */
int ck_rdest_query(ck_rdest_t *d, const char *sql, ck_ch_block_fn on_block, void *arg,
                   ck_error_t *err);

/* String rows of a SELECT whose every column is a String (system tables through toString). */
typedef struct ck_rdest_rows {
  int ncols, nrows, cap;
  char **cells; /* nrows × ncols */
} ck_rdest_rows_t;
int ck_rdest_strings(ck_rdest_t *d, const char *sql, int ncols, ck_rdest_rows_t *out,
                     ck_error_t *err);
void ck_rdest_rows_fini(ck_rdest_rows_t *r);
static inline const char *ck_rdest_cell(const ck_rdest_rows_t *r, int row, int col) {
  return r->cells[row * r->ncols + col];
}

/* 'text' as a ClickHouse string literal, every byte outside printable ASCII and ' \ escaped as
 * \xHH: nothing in it can end the literal. */
void ck_rdest_quote_str(const char *text, size_t len, ck_buf_t *out);
/* The cell as a literal of the rule's column type: toInt64(-5), toUInt64(7), a string
 * literal. Keys are integers or strings; anything else is CK_EUNSUPPORTED. */
int ck_rdest_literal(const ck_cell_rule_t *rule, const ck_cell_t *cell, ck_buf_t *out);

#endif
