/*
 * DESIGN: the local deployment — a job's every subtask on threads of this process
 * (runtime/exec.h), behind the deployment interface of job/job.h. This is the embedded run's
 * deployment; it drives its own checkpoints (the executor runs checkpoint/coord.c's state
 * machine in process), so it has no trigger or commit entry.
 *
 * While it runs, a progress thread logs "[job] progress: …" with the live counters
 * (runtime/metrics.h) every progress_ms (0: never).
 *
 * Threads: deploy/start/wait/release on the job's thread; cancel from any thread, and with
 * drain from a signal handler (it only stores to atomics).
 */
#ifndef CK_JOB_LOCAL_H
#define CK_JOB_LOCAL_H

#include "base/thread.h"
#include "job/job.h"
#include "runtime/exec.h"

typedef struct ck_job_progress {
  ck_exec_t *ex;
  int64_t interval_ms;
  ck_mutex_t mu;
  ck_cond_t cv;
  bool stop;
  ck_thread_t thread;
} ck_job_progress_t;

typedef struct ck_job_local {
  const ck_graph_t *graph;
  ck_exec_opts_t eopts;   /* the caller's (job name, memory, checkpoint dir, interval and
                             fingerprint); deploy sets the restore point */
  int64_t progress_ms;
  ck_exec_t *volatile ex; /* between deploy and release */
  /* Optional: told each deployment's executor once it runs, and NULL before it is freed (on
   * the job's thread), so an observer can read its live metrics meanwhile (clink run
   * --http-port) */
  void (*on_exec)(void *ctx, ck_exec_t *ex);
  void *on_exec_ctx;
  ck_job_progress_t pg;
} ck_job_local_t;

extern const ck_job_ops_t ck_job_local_ops;

/* "12 records read, 10 written, 2 late records dropped, …": the live counters of ex. */
void ck_job_progress_text(ck_exec_t *ex, ck_buf_t *out);

#endif
