/*
 * DESIGN: see local.h.
 */
#include "job/local.h"

#include <string.h>

#include "base/log.h"
#include "base/time.h"
#include "runtime/metrics.h"

/* ---- the progress line: the live counters (runtime/metrics.h) every progress_ms */

void ck_job_progress_text(ck_exec_t *ex, ck_buf_t *out) {
  int64_t sum[CK_OPM_COUNT], read, written;
  ck_exec_metrics_sum(ex, sum, &read, &written);
  ck_metrics_progress_line(out, read, written, sum);
}

static void *progress_main(void *arg) {
  ck_job_progress_t *pg = arg;
  ck_mutex_lock(&pg->mu);
  for (int64_t next = ck_mono_ms() + pg->interval_ms; !pg->stop;) {
    if (!ck_cond_wait_until(&pg->cv, &pg->mu, next) || ck_mono_ms() >= next) {
      ck_buf_t b;
      ck_buf_init(&b);
      ck_job_progress_text(pg->ex, &b);
      CK_LOG_INFO("job", "progress: %s", b.data);
      ck_buf_fini(&b);
      next += pg->interval_ms;
    }
  }
  ck_mutex_unlock(&pg->mu);
  return NULL;
}

static void progress_start(ck_job_progress_t *pg, ck_exec_t *ex, int64_t interval_ms) {
  memset(pg, 0, sizeof *pg);
  pg->ex = ex;
  pg->interval_ms = interval_ms;
  if (interval_ms <= 0) return;
  ck_mutex_init(&pg->mu);
  ck_cond_init(&pg->cv);
  if (ck_thread_start(&pg->thread, "progress", progress_main, pg)) {
    ck_cond_fini(&pg->cv);
    ck_mutex_fini(&pg->mu);
    pg->interval_ms = 0;
  }
}

static void progress_stop(ck_job_progress_t *pg) {
  if (pg->interval_ms <= 0) return;
  ck_mutex_lock(&pg->mu);
  pg->stop = true;
  ck_cond_signal(&pg->cv);
  ck_mutex_unlock(&pg->mu);
  ck_thread_join(&pg->thread);
  ck_cond_fini(&pg->cv);
  ck_mutex_fini(&pg->mu);
  pg->interval_ms = 0;
}

/* ---- the deployment */

static int local_deploy(void *dep, const ck_job_point_t *point, ck_error_t *err) {
  ck_job_local_t *l = dep;
  if (l->eopts.ckpt.dir) {
    l->eopts.ckpt.ids_above = point->ids_above;
    l->eopts.ckpt.restore_id = point->restore_id;
  }
  ck_exec_t *ex = NULL;
  int rc = ck_exec_new(l->graph, &l->eopts, &ex, err);
  l->ex = ex;
  return rc;
}

static int local_start(void *dep, ck_error_t *err) {
  ck_job_local_t *l = dep;
  int rc = ck_exec_run(l->ex, err);
  if (!rc) progress_start(&l->pg, l->ex, l->progress_ms);
  if (!rc && l->on_exec) l->on_exec(l->on_exec_ctx, l->ex);
  return rc;
}

static void local_cancel(void *dep, bool drain, const char *why) {
  ck_job_local_t *l = dep;
  ck_exec_t *ex = l->ex;
  if (!ex) return;
  if (drain) ck_exec_stop(ex);
  else ck_exec_cancel(ex, why);
}

static int local_wait(void *dep, ck_job_outcome_t *out, ck_error_t *err) {
  ck_job_local_t *l = dep;
  int rc = ck_exec_wait(l->ex, err);
  progress_stop(&l->pg);
  out->totals = ck_exec_totals(l->ex);
  return rc;
}

static void local_release(void *dep) {
  ck_job_local_t *l = dep;
  ck_exec_t *ex = l->ex;
  if (l->on_exec) l->on_exec(l->on_exec_ctx, NULL);
  l->ex = NULL;
  progress_stop(&l->pg);
  ck_exec_free(ex);
}

const ck_job_ops_t ck_job_local_ops = {
    .kind = "local",
    .deploy = local_deploy,
    .start = local_start,
    .trigger = NULL,
    .commit = NULL,
    .cancel = local_cancel,
    .wait = local_wait,
    .release = local_release,
};
