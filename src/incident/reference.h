/*
 * DESIGN: the audit's side of an independent reference (docs/incidents.md, "The independent
 * reference"): read an artifact written by python/clink-reference (or any implementation of
 * its format), refuse it unless it is whole, and bind it to the scope the bundle gives.
 *
 * An artifact is JSON lines: a header, one row per line (a JSON array of canonical cells),
 * an end line with the row count and SHA-256 over the header line and the row lines. Read:
 * the end line must be there (else "unfinished"), both hashes and the count must match, the
 * format and version must be ours, and the header's fingerprint must be the one its own scope
 * and columns give. Binding: the fingerprint text (one fact a line, the same text the Python
 * library hashes) of the artifact's scope and of the bundle's scope, both with the artifact's
 * columns, must be equal line by line; the first line that differs names the field ("the
 * artifact is for checkpoint 4, the bundle's scope is checkpoint 3"). Cells: each canonical
 * form into a ck_cell_t under the column's rule (cells.h), so reference rows compare with
 * captured and destination rows by the same rules.
 *
 * What the artifact only records (its `reference` block, its reader's account) is handed
 * back as JSON for the report to show as recorded, never as verified.
 * Memory: everything lives in the reference's arena. Threads: the command's one thread.
 */
#ifndef CK_INCIDENT_REFERENCE_H
#define CK_INCIDENT_REFERENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"
#include "incident/cells.h"
#include "incident/json.h"

#define CK_REFERENCE_FORMAT "clink-reference-artifact"
#define CK_REFERENCE_VERSION 1
#define CK_REFERENCE_FP_HEAD "clink-reference-fingerprint 1"

typedef struct ck_reference_col {
  const char *name;
  const char *type; /* a ClickHouse type name */
  bool key;
} ck_reference_col_t;

typedef struct ck_reference {
  ck_arena_t arena;
  ck_buf_t text;               /* the file's bytes */
  const ck_json_t *header;
  const ck_json_t *scope;      /* the header's scope document, parsed */
  const char *fingerprint;     /* the header's */
  int ncols;
  ck_reference_col_t *cols;
  bool complete;               /* status "complete" */
  const ck_json_t *incomplete; /* its reasons (an array of strings) */
  const ck_json_t *recorded;   /* the header's "reference" block: recorded, not verified */
  const ck_json_t *read;       /* the header's "read" block: recorded, not verified */
  int64_t nrows;
  const ck_json_t **rows;      /* each a JSON array of ncols cells */
} ck_reference_t;

/* Reads and checks the artifact at path. CK_EDECODE naming what is wrong (unfinished, a hash
 * that does not match, another format or version, a fingerprint not its scope's). */
int ck_reference_read(const char *path, ck_reference_t *ref, ck_error_t *err);
void ck_reference_fini(ck_reference_t *ref);

/* The fingerprint text of a scope document with the columns (appended to out). CK_EINVAL when
 * a field it carries is empty or holds white space. */
int ck_reference_fingerprint_text(const ck_json_t *scope, int ncols, const ck_reference_col_t *cols,
                                  ck_buf_t *out, ck_error_t *err);

/* Whether the artifact is bound to the bundle's scope document: 0, or CK_ESTATE with the first
 * differing field named in err. */
int ck_reference_bind(const ck_reference_t *ref, const ck_json_t *bundle_scope, ck_error_t *err);

/* Row `row`'s cells under rules[ncols] into out[ncols] (bytes into arena). CK_EDECODE naming
 * the row and column of a cell that is not a canonical form of its column's class. */
int ck_reference_row_cells(const ck_reference_t *ref, int64_t row, const ck_cell_rule_t *rules,
                           ck_arena_t *arena, ck_cell_t *out, ck_error_t *err);

#endif
