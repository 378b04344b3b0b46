/*
 * DESIGN: where a run starts — the one restore rule of an embedded rerun or restart
 * (cli/cmd_run.c) and of every cluster deployment and restart (cluster/coordinator.c).
 *
 * A run with a checkpoint directory (`clink run --checkpoint-dir`, or a cluster job's own
 * directory) is a takeover of whatever the last run left there (seed 001): it restores the
 * newest completed checkpoint of its own lineage and numbers new checkpoints above every id
 * with any durable record. Both callers pass the job's rigid sink (ck_exec_rigid_sink) and,
 * after a sink's CK_EREWIND, `below`. Three records beside the checkpoints
 * say what they belong to:
 *   fingerprint   the job graph (and its parallelism): a different pipeline pointed at the
 *                 directory is refused, with --fresh as the way out;
 *   clean-finish  a bounded job that reached the end of its input: the next run starts over
 *                 instead of resuming at the end and publishing nothing;
 *   run-base      the highest id on disk when the current lineage started fresh: checkpoints
 *                 at or below it belong to an earlier run and are never restored, so a fresh
 *                 run killed before its first checkpoint never inherits its predecessor.
 *
 * Restore point: the newest completed checkpoint above run-base whose every snapshot file
 * passes ck_snap_check (present, whole, this job's). When the newest completed one does not,
 * restoring an older one M means the intervals after M run again, so it is done only when the
 * sinks allow it: an at-least-once sink writes that output again (allowed duplicates), and an
 * exactly-once sink that takes back at recover(M) whatever it committed after M (the file
 * sink cuts its output back) loses and duplicates nothing. An exactly-once sink that cannot
 * take committed output back (`rigid_sink`, e.g. a Kafka transaction) refuses the fallback:
 * a later checkpoint completed, so its commit may have happened (certainly, when CONFIRMED
 * says so), and replaying it would publish its rows twice. Completed checkpoints of which no
 * one can be restored are refused as well, naming what is missing or damaged — never a fresh
 * start over output those checkpoints committed. The log says which and why.
 * Threads: the caller's, before the job's tasks start: the CLI's main thread for an embedded
 * run, the coordinator's control loop for each deployment of a cluster job.
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
  char why_buf[128];
} ck_lineage_t;

/* What a caller tells the restore rule about its job. */
typedef struct ck_lineage_opts {
  const char *fingerprint_text; /* a printable identity of the job graph */
  int parallelism;
  bool fresh;
  int64_t below;     /* not 0: restore only a checkpoint below it (after a sink reported, with
                      * CK_EREWIND from its recover, that the commit of `below` is lost: the job
                      * restores the one before and replays the interval) */
  int ntasks;
  /* the name of an exactly-once sink of the job that cannot take back output it committed
   * (NULL: none); CK_LINEAGE_SINKS_UNKNOWN when the caller cannot tell (treated as one) */
  const char *rigid_sink;
} ck_lineage_opts_t;

#define CK_LINEAGE_SINKS_UNKNOWN "(a sink of this job)"

int ck_lineage_start(const char *dir, const ck_lineage_opts_t *opts, ck_lineage_t *out,
                     ck_error_t *err);

/* ck_lineage_start with rigid_sink = CK_LINEAGE_SINKS_UNKNOWN.
 * fingerprint_text: a printable identity of the job graph (hashed and kept on disk). */
int ck_lineage_begin(const char *dir, const char *fingerprint_text, int parallelism,
                     bool fresh, int ntasks, ck_lineage_t *out, ck_error_t *err);
/* Records that the job reached the end of its input. */
int ck_lineage_clean_finish(const char *dir, ck_error_t *err);
uint64_t ck_lineage_fingerprint(const char *fingerprint_text);

#endif
