/*
 * DESIGN: sink-interval evidence — epoch-<N>.sink.json, what a sink subtask's runner knew
 * about checkpoint interval N when its barrier work was done (docs/evidence.md).
 *
 * With --capture-dir DIR, after a sink's prepare for checkpoint N returned and before the
 * subtask's acknowledgement of N, the runner writes
 *   DIR/op-<id>/subtask-<s>/epoch-<N>.sink.json
 * beside the interval's capture (capture.h): what that capture came to (its summary), the
 * barrier before N in this run (0: the run's start), the runner's attempt id, the last
 * watermark the sink had, and the sink's own account (ck_sink_ops_t.account; null when the
 * sink gives none). The file is written under a temporary name, fsynced and renamed, and its
 * directory fsynced, before the acknowledgement: a checkpoint that completed implies its
 * evidence exists, and a write that failed fails the checkpoint and leaves no file. The text is
 * run through the redaction rule (base/redact.h) before it is written: no credential.
 *
 * Encoding happens on the sink's subtask thread (the account reads the sink's own state);
 * the write on the executor's writer thread, before the acknowledgement it sends.
 */
#ifndef CK_CAPTURE_EVIDENCE_H
#define CK_CAPTURE_EVIDENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "capture/capture.h"

#define CK_EVIDENCE_FORMAT "clink-sink-evidence"
#define CK_EVIDENCE_VERSION 1

/* What the runner knew at the barrier. */
typedef struct ck_evidence {
  int op;                  /* the sink's node id */
  const char *op_name;     /* the node's name */
  const char *table;       /* the SQL table the sink writes */
  const char *connector;   /* its connector's name */
  int subtask, task;
  int64_t checkpoint;      /* N */
  int64_t previous;        /* the barrier before N in this run; 0: the run's start */
  int64_t restored_from;   /* the checkpoint this run restored (0: a fresh start) */
  const char *attempt;     /* the runner's attempt id */
  bool has_watermark;
  int64_t watermark;       /* the last watermark the sink had */
  int64_t records;         /* rows the sink took in the interval (the runner's own count) */
  ck_capture_summary_t capture;
  const char *account;     /* the sink's account, one JSON object; NULL: none */
  size_t account_len;
} ck_evidence_t;

/* The file's JSON text (one object and a newline), redacted, into out. */
void ck_evidence_encode(const ck_evidence_t *ev, ck_buf_t *out);
/* DIR/op-<op>/subtask-<subtask>/epoch-<ckpt>.sink.json into out. */
void ck_evidence_path(const char *dir, int op, int subtask, int64_t ckpt, char *out, size_t cap);
/* Writes the encoded text durably at path (creating its directories). 0, or CK_EIO naming the
 * file. */
int ck_evidence_write(const char *path, const void *text, size_t len, ck_error_t *err);

#endif
