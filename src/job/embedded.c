/*
 * DESIGN: see embedded.h.
 */
#include "job/embedded.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "base/arena.h"
#include "base/log.h"
#include "checkpoint/lineage.h"
#include "connectors/connectors.h"
#include "job/job.h"
#include "job/local.h"
#include "runtime/exec.h"
#include "runtime/plan.h"
#include "sql/parser.h"
#include "sql/planner.h"

static ck_job_t *volatile current;
static volatile sig_atomic_t stop_asked;

void ck_job_embedded_stop(void) {
  stop_asked = 1;
  ck_job_t *job = current;
  if (job) ck_job_stop(job);
}

static void print_error(const ck_job_embedded_t *o, const ck_error_t *err, ck_buf_t *errors) {
  char msg[2048];
  ck_error_format(err, msg, sizeof msg);
  ck_buf_printf(errors, "%s: %s\n", o->prog, msg);
}

int ck_job_embedded_run(const ck_job_embedded_t *o, ck_buf_t *errors) {
  ck_connectors_register_all();
  ck_error_t err;
  ck_error_clear(&err);
  ck_arena_t arena;
  ck_arena_init(&arena, 0);
  ck_script_t script;
  ck_graph_t *graph = NULL;
  ck_buf_t desc;
  ck_buf_init(&desc);
  ck_plan_opts_t popts = {o->parallelism, o->max_parallelism};
  int status = 1;
  int rc = ck_sql_parse_n(o->sql, o->sql_len, &arena, &script, &err);
  if (!rc) rc = ck_sql_plan(&script, &popts, &graph, &err);
  if (rc) {
    ck_sql_render_error(o->sql, o->filename, &err, errors);
    goto out;
  }
  ck_plan_identity(graph, &desc); /* the fingerprint the cluster uses too, credentials masked */

  ck_job_local_t local = {.graph = graph, .progress_ms = o->progress_ms, .on_exec = o->on_exec,
                          .on_exec_ctx = o->on_exec_ctx};
  local.eopts.job_name = o->filename;
  local.eopts.max_memory = o->max_memory;
  local.eopts.capture = (ck_capture_opts_t){o->capture_dir, o->capture_records};
  local.eopts.ckpt.dir = o->checkpoint_dir;
  local.eopts.ckpt.interval_ms = o->checkpoint_interval_ms;
  local.eopts.ckpt.timeout_ms = o->checkpoint_timeout_ms;
  local.eopts.ckpt.retain = o->checkpoints_retained;
  local.eopts.ckpt.tolerable_failed = o->tolerable_failed_checkpoints;
  local.eopts.ckpt.fingerprint = ck_lineage_fingerprint(desc.data);
  ck_job_t job = {
      .dir = o->checkpoint_dir,
      .identity = {desc.data, o->parallelism, ck_exec_task_count(graph), ck_exec_rigid_sink(graph)},
      .fresh = o->fresh,
      .max_restarts = o->max_restarts,
      .ops = &ck_job_local_ops,
      .dep = &local,
  };
  /* the restore point first: a pipeline that differs from the directory's is refused before
   * anything is said about it */
  if (o->checkpoint_dir) {
    if (ck_job_restore_point(o->checkpoint_dir, &job.identity, o->fresh, 0, 0, 0, &job.point,
                             &err)) {
      print_error(o, &err, errors);
      goto out;
    }
    job.have_point = true;
  }
  ck_buf_t g;
  ck_buf_init(&g);
  ck_graph_guarantee(graph, o->checkpoint_dir != NULL, &g);
  CK_LOG_INFO("job", "job delivery guarantee: %s", g.data);
  ck_buf_t manifest;
  ck_buf_init(&manifest);
  ck_job_manifest_t jm = {graph, 0, o->filename, o->parallelism, job.identity.ntasks,
                          local.eopts.ckpt.fingerprint, g.data};
  ck_job_manifest_json(&jm, &manifest);
  job.manifest = manifest.data;
  ck_buf_fini(&g);

  job.stopping = stop_asked;
  current = &job;
  rc = ck_job_run(&job, &err);
  current = NULL;
  ck_buf_fini(&manifest);
  if (job.started) {
    ck_exec_totals_t tot = job.outcome.totals;
    CK_LOG_INFO("job", "%s: %lld records read, %lld written, %lld late records dropped, %lld undecodable records skipped, %lld records without event time skipped, %lld checkpoints",
                rc ? "failed" : job.stopping ? "stopped" : "finished", (long long)tot.source_records,
                (long long)tot.sink_records, (long long)tot.late_dropped,
                (long long)tot.decode_skipped, (long long)tot.no_event_time,
                (long long)tot.checkpoints_completed);
  }
  fflush(stdout);
  if (rc) print_error(o, &err, errors);
  else status = 0;
out:
  ck_buf_fini(&desc);
  ck_graph_free(graph);
  ck_arena_fini(&arena);
  return status;
}
