/*
 * DESIGN: the embedded run — `clink run FILE.sql` as one call: plan the script, state the
 * job's delivery guarantee, and run it through the job lifecycle (job/job.h) over a local
 * deployment (job/local.h), then log the end-of-job summary ("[job] finished: …").
 *
 * With a checkpoint directory the run is a takeover of whatever the last run with that
 * directory left (checkpoint/lineage.h): it resumes from its own last completed checkpoint
 * unless the pipeline differs (refused), the last run finished its input, or fresh is set;
 * failures restart and rewind by job/policy.h, the same rule a cluster job follows.
 *
 * Threads: ck_job_embedded_run on the caller's thread; ck_job_embedded_stop from a signal
 * handler (one embedded job per process).
 */
#ifndef CK_JOB_EMBEDDED_H
#define CK_JOB_EMBEDDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "runtime/exec.h"

typedef struct ck_job_embedded {
  const char *prog;            /* prefix of error lines: "clink run" */
  const char *sql;
  size_t sql_len;
  const char *filename;        /* the script's name, for error positions and the job name */
  int parallelism, max_parallelism;
  const char *checkpoint_dir;  /* NULL: no checkpoints (and no restarts) */
  bool fresh;
  int64_t checkpoint_interval_ms;
  int64_t checkpoint_timeout_ms; /* 0: checkpoint/coord.c's default */
  int checkpoints_retained;      /* completed checkpoints kept (0: checkpoint/coord.c's 3) */
  int tolerable_failed_checkpoints; /* checkpoints in a row that could not be stored, aborted
                                       while the job runs on (0: the first fails the job) */
  int64_t max_memory;          /* 0: no limit */
  const char *capture_dir;     /* --capture-dir (capture/capture.h); NULL: off */
  int64_t capture_records;     /* --capture-records */
  int max_restarts;
  int64_t progress_ms;         /* 0: no progress line */
  /* Optional: each deployment's executor while it runs (job/local.h on_exec) */
  void (*on_exec)(void *ctx, ck_exec_t *ex);
  void *on_exec_ctx;
} ck_job_embedded_t;

/* Runs the job to its end. Returns the exit status (0, or 1 when it failed), with what to
 * print on standard error (a SQL error rendered with its position, or "PROG: error: …") in
 * errors. */
int ck_job_embedded_run(const ck_job_embedded_t *o, ck_buf_t *errors);
/* Drains and stops the running embedded job (Ctrl-C), or the next one to start.
 * Async-signal-safe. */
void ck_job_embedded_stop(void);

#endif
