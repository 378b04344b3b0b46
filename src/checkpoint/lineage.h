/*
 * DESIGN: where a run starts — the restore rule shared by an embedded rerun and (later) a
 * cluster restart.
 *
 * An embedded `clink run` with a --checkpoint-dir is a takeover of whatever the last run left
 * there (seed 001): it restores the newest completed checkpoint of its own lineage and numbers
 * new checkpoints above every id with any durable record. Three records beside the checkpoints
 * say what they belong to:
 *   fingerprint   the job graph (and its parallelism): a different pipeline pointed at the
 *                 directory is refused, with --fresh as the way out;
 *   clean-finish  a bounded job that reached the end of its input: the next run starts over
 *                 instead of resuming at the end and publishing nothing;
 *   run-base      the highest id on disk when the current lineage started fresh: checkpoints
 *                 at or below it belong to an earlier run and are never restored, so a fresh
 *                 run killed before its first checkpoint never inherits its predecessor.
 * Threads: the CLI's main thread, before the job starts.
 */
#ifndef CK_CHECKPOINT_LINEAGE_H
#define CK_CHECKPOINT_LINEAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

typedef struct ck_lineage {
  int64_t ids_above;   /* new checkpoint ids start above this */
  int64_t restore_id;  /* 0: start fresh */
  int64_t run_base;
  int64_t latest_completed, latest_confirmed;
  const char *why;     /* why the run starts where it does, for the log */
} ck_lineage_t;

/* fingerprint_text: a printable identity of the job graph (hashed and kept on disk). */
int ck_lineage_begin(const char *dir, const char *fingerprint_text, int parallelism,
                     bool fresh, int ntasks, ck_lineage_t *out, ck_error_t *err);
/* The same, restoring only a checkpoint below `below`: after a sink reported that the commit
 * of checkpoint `below` is lost (CK_EREWIND from its recover), the job restores the one before
 * and replays the interval into a new transaction. */
int ck_lineage_begin_below(const char *dir, const char *fingerprint_text, int parallelism,
                           int64_t below, int ntasks, ck_lineage_t *out, ck_error_t *err);
/* Records that the job reached the end of its input. */
int ck_lineage_clean_finish(const char *dir, ck_error_t *err);
uint64_t ck_lineage_fingerprint(const char *fingerprint_text);

#endif
