/*
 * DESIGN: `clink incident reconcile` — does one ClickHouse table hold exactly the rows a
 * completed checkpoint's scope owed it (record 015; docs/incidents.md, "Reconcile")?
 *
 * Three parts, each in its own file:
 *   reconcile_diff.c  rows as canonical cells (cells.h) in row sets, and the multiset
 *                     comparison key by key into the four kinds of difference: missing,
 *                     changed, duplicated, unexpected; and the comparison of two reads;
 *   reconcile_read.c  the destination: one connection the operator names, every statement a
 *                     SELECT under readonly = 2 and the bounds (max_execution_time,
 *                     max_result_rows, result/timeout overflow mode throw, the client's own
 *                     receive timeout), reading identity, form, mutations and the scope's keys;
 *   reconcile.c       the command: the bundle's evidence into the scope and the expectation,
 *                     the checks in order (identity first), the report and the exit status.
 * Nothing it connects with or runs comes from the bundle: the bundle supplies names (quoted as
 * identifiers) and key values (rendered as typed literals), never SQL text.
 *
 * Threads: the command's one thread.
 */
#ifndef CK_INCIDENT_RECONCILE_H
#define CK_INCIDENT_RECONCILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"
#include "incident/cells.h"

#define CK_RECONCILE_FORMAT "clink-reconcile-report"
#define CK_RECONCILE_VERSION 1
#define CK_RECONCILE_PASSWORD_ENV "CLINK_RECONCILE_PASSWORD"
#define CK_RECONCILE_FIRST 10 /* discrepancies of each kind the report lists */

/* ---- rows (reconcile_diff.c) */

typedef struct ck_rrow {
  ck_cell_t *cells;
  int64_t origin; /* expected rows: the ledger entry index within the scope (-1: none) */
} ck_rrow_t;

typedef struct ck_rowset {
  int ncols;
  int nkeys;
  const int *keys;    /* the key columns' indexes */
  size_t n, cap;
  ck_rrow_t *rows;
  ck_arena_t arena;   /* the cells and their bytes */
} ck_rowset_t;

void ck_rowset_init(ck_rowset_t *set, int ncols, int nkeys, const int *keys);
void ck_rowset_fini(ck_rowset_t *set);
/* A new row (its cells zeroed) at the end of the set. */
ck_rrow_t *ck_rowset_add(ck_rowset_t *set);
/* Sorts by key, then by the whole row (ck_cell_cmp). */
void ck_rowset_sort(ck_rowset_t *set);
int ck_rrow_key_cmp(const ck_rowset_t *set, const ck_rrow_t *a, const ck_rrow_t *b);
int ck_rrow_cmp(const ck_rowset_t *set, const ck_rrow_t *a, const ck_rrow_t *b);
bool ck_rrow_eq(const ck_rowset_t *set, const ck_rrow_t *a, const ck_rrow_t *b);

typedef enum ck_diff_kind {
  CK_DIFF_MISSING = 0,
  CK_DIFF_CHANGED,
  CK_DIFF_DUPLICATED,
  CK_DIFF_UNEXPECTED,
  CK_DIFF_NKINDS,
} ck_diff_kind_t;

const char *ck_diff_kind_name(ck_diff_kind_t kind); /* "missing", … */

/* One difference: the expected row (missing, changed, duplicated; NULL for unexpected) and the
 * row read (changed, duplicated, unexpected; NULL for missing); copies: the exact copies read
 * (duplicated). */
typedef struct ck_diff_item {
  ck_diff_kind_t kind;
  const ck_rrow_t *expected, *actual;
  int64_t copies;
} ck_diff_item_t;

typedef int (*ck_diff_fn)(void *arg, const ck_diff_item_t *item);

typedef struct ck_diff_counts {
  int64_t n[CK_DIFF_NKINDS]; /* differences of each kind (duplicated: rows beyond the first) */
  int64_t matched;           /* expected rows with an exact copy */
  int64_t keys;              /* distinct keys expected */
} ck_diff_counts_t;

/* Compares expected with actual (both sorted; same columns and keys), key by key, calling
 * on_item for every difference in key order. Rows are compared whole; counts and totals
 * decide nothing. */
void ck_diff_rows(const ck_rowset_t *expected, const ck_rowset_t *actual, ck_diff_fn on_item,
                  void *arg, ck_diff_counts_t *counts);
/* The first key whose rows differ between two reads of the same keys (both sorted): its index
 * in a (or b when a has none), or -1 when the two reads are equal as multisets. */
int64_t ck_diff_reads(const ck_rowset_t *a, const ck_rowset_t *b, const ck_rrow_t **where);

/* ---- the command (reconcile.c) */

typedef struct ck_reconcile_opts {
  const char *bundle;
  const char *host;
  int port;
  const char *user;
  const char *password;    /* from the environment (CK_RECONCILE_PASSWORD_ENV), or NULL */
  const char *keys;        /* "COL[,COL…]" */
  int64_t checkpoint;      /* 0: the newest completed checkpoint with evidence */
  int64_t job;             /* 0: not given */
  const char *database, *table; /* NULL: not given */
  const char *json_path;   /* --json REPORT, or NULL */
  int64_t max_rows;        /* max_result_rows of each statement */
  int max_execution_s;     /* max_execution_time */
  int receive_timeout_ms;  /* the client's own */
  int pause_ms;            /* between the two reads of the scope */
  int keys_per_read;       /* keys per statement */
  const char *reference;   /* --reference ARTIFACT, or NULL */
} ck_reconcile_opts_t;

/* Runs the reconciliation; the report's text summary goes to `text`, the JSON report to
 * o->json_path. Returns the exit status (0 pass, 1 fail, 3 partial, 2 usage or refused), with
 * the reason for a 2 in err. */
int ck_reconcile_run(const ck_reconcile_opts_t *o, ck_buf_t *text, ck_error_t *err);

#endif
