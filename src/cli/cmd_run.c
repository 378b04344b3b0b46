/*
 * DESIGN: `clink run` — option parsing, then either a submission to a cluster
 * (--coordinator-host/--coordinator-port, cli/cluster_client.h) or a run in this process
 * through libclink's public API (include/clink/clink.h), the library a host program embeds:
 * clink_engine_open with the run's options (one_job: the whole script is one job that
 * checkpoints into --checkpoint-dir itself, SQL errors name the file), clink_exec, then
 * clink_job_wait until the job ends; clink_job_error says why it failed. --http-port serves
 * the running job's REST routes through the library's one internal hook (lib/lib_internal.h).
 *
 * Ctrl-C: the handler only counts; the waiting thread turns the first into clink_job_stop
 * (the sources stop and what is in flight drains into the sinks: exit 0); a second one exits
 * at once (exit 130) from the handler.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/error.h"
#include "base/log.h"
#include "cli/cli.h"
#include "cli/cluster_client.h"
#include "cluster/rest_embedded.h"
#include "base/log.h"
#include "clink/clink.h"
#include "lib/lib_internal.h"

static const ck_cli_opt_t opts[] = {
    {"e", "SQL", "run this SQL text instead of a file", 0, 0, 0, false},
    {"parallelism", "N", "subtasks per operator", 1, 32768, 1, false},
    {"max-parallelism", "N", "key groups for keyed state and exchange", 1, 32768, 128, false},
    {"checkpoint-dir", "DIR", "take checkpoints into DIR (a directory, or s3://bucket/prefix), and resume from them when run again", 0, 0, 0, false},
    CK_CLI_SHARED("checkpoint-interval-ms"),
    CK_CLI_SHARED("checkpoint-timeout-ms"),
    CK_CLI_SHARED("checkpoints-retained"),
    {"tolerable-failed-checkpoints", "N", "checkpoints in a row that could not be stored (the "
     "store unreachable, a write refused) that are aborted while the job runs on; one more "
     "fails the job, which restarts from its last checkpoint (Flink's "
     "execution.checkpointing.tolerable-failed-checkpoints)", 0, 1000000, 10, false},
    {"fresh", NULL, "ignore the checkpoints in --checkpoint-dir and start the job over", 0, 0, 0, false},
    CK_CLI_SHARED("max-memory"),
    CK_CLI_SHARED("max-restarts"),
    CK_CLI_SHARED("capture-dir"),
    CK_CLI_SHARED("capture-records"),
    {"progress-interval-ms", "MS", "log a progress line with the live counters this often (0: never)", 0, 86400000, 10000, false},
    CK_CLI_SHARED("log-level"),
    {"coordinator-host", "HOST", "submit the job to this cluster coordinator instead of running it here", 0, 0, 0, false},
    CK_CLI_SHARED("coordinator-port"),
    {"name", "NAME", "the job's name on the cluster (default: the file name)", 0, 0, 0, false},
    CK_CLI_SHARED("http-port"),
    {NULL, NULL, NULL, 0, 0, 0, false},
};

static volatile sig_atomic_t interrupts;

static void on_interrupt(int sig) {
  (void)sig;
  if (++interrupts > 1) _exit(130);
}

static int usage(const char *msg) {
  fprintf(stderr, "clink run: %s\n", msg);
  return 2;
}

/* Everything but the script: into o (the library's options), or 2 after printing why. */
static int parse_run_opts(const ck_cli_cmd_t *cmd, const ck_cli_args_t *args,
                          clink_options_t *o) {
  long par, maxpar, interval, ckpt_timeout, retained, restarts, progress, capture_records,
      tolerable;
  if (ck_cli_int(cmd, args, "parallelism", &par) ||
      ck_cli_int(cmd, args, "max-parallelism", &maxpar) ||
      ck_cli_int(cmd, args, "checkpoint-interval-ms", &interval) ||
      ck_cli_int(cmd, args, "checkpoint-timeout-ms", &ckpt_timeout) ||
      ck_cli_int(cmd, args, "checkpoints-retained", &retained) ||
      ck_cli_int(cmd, args, "tolerable-failed-checkpoints", &tolerable) ||
      ck_cli_int(cmd, args, "max-restarts", &restarts) ||
      ck_cli_int(cmd, args, "progress-interval-ms", &progress) ||
      ck_cli_int(cmd, args, "capture-records", &capture_records) ||
      ck_cli_apply_log_level(cmd, args) || ck_cli_max_memory(cmd, args, &o->max_memory))
    return 2;
  o->log_level = (clink_log_level_t)ck_log_level(); /* --log-level, $CLINK_LOG_LEVEL or info */
  o->one_job = 1;
  o->parallelism = (int)par;
  o->max_parallelism = (int)maxpar;
  o->checkpoint_interval_ms = interval;
  o->checkpoint_timeout_ms = ckpt_timeout;
  o->checkpoints_retained = (int)retained;
  o->tolerable_failed_checkpoints = (int)tolerable;
  o->max_restarts = (int)restarts;
  o->progress_interval_ms = progress;
  o->checkpoint_dir = ck_cli_get(cmd, args, "checkpoint-dir");
  o->fresh = ck_cli_flag(cmd, args, "fresh");
  o->capture_dir = ck_cli_get(cmd, args, "capture-dir");
  o->capture_records = capture_records;
  return 0;
}

/* The script as one job of an engine of its own: 0 when it finished (or drained after
 * Ctrl-C), 1 with what to print in errors (a SQL error rendered with the file's name and
 * position, or "clink run: error: …") when it could not start or failed. */
static int run_here(const clink_options_t *o, const char *sql, size_t len,
                    ck_rest_embedded_t *srv, ck_buf_t *errors) {
  clink_engine_t *e = NULL;
  char why[512];
  if (clink_engine_open(o, &e, why, sizeof why)) {
    ck_buf_printf(errors, "clink run: %s\n", why);
    return 1;
  }
  if (srv) ck_lib_set_on_exec(e, ck_rest_embedded_on_exec, srv);
  clink_job_t *job = NULL;
  int status = 1;
  if (clink_exec_len(e, sql, len, &job, 1, NULL)) { /* rendered as the SQL front end does */
    ck_buf_printf(errors, "%s\n", clink_last_error(e, NULL, NULL));
    goto out;
  }
  bool stopped = false;
  int rc;
  while ((rc = clink_job_wait(job, 50)) == CLINK_ETIMEOUT &&
         clink_job_status(job) == CLINK_JOB_RUNNING) {
    if (interrupts && !stopped) { /* Ctrl-C: drain, on this thread (the handler only counts) */
      clink_job_stop(job);
      stopped = true;
    }
  }
  fflush(stdout);
  if (rc) {
    const char *msg = clink_job_error(job, NULL, NULL);
    ck_buf_printf(errors, "clink run: %s\n", msg ? msg : "error: the job failed");
  } else {
    status = 0;
  }
out:
  clink_engine_close(e);
  return status;
}

static int run_main(int argc, char **argv) {
  const ck_cli_cmd_t *cmd = &ck_cli_cmd_run;
  ck_cli_args_t args;
  int rc = ck_cli_parse(cmd, argc, argv, &args);
  if (rc) return rc < 0 ? 0 : rc;
  const char *inline_sql = ck_cli_get(cmd, &args, "e");
  if ((inline_sql != NULL) == (args.npositional == 1) || args.npositional > 1) {
    fprintf(stderr, "clink run: give one SQL file, or the SQL text with -e\n"
                    "usage: clink run %s\n", cmd->usage);
    return 2;
  }
  clink_options_t o;
  clink_options_init(&o);
  if (parse_run_opts(cmd, &args, &o)) return 2;
  const char *co_host = ck_cli_get(cmd, &args, "coordinator-host");
  const char *co_port = ck_cli_get(cmd, &args, "coordinator-port");
  bool submit = co_host || co_port;
  if (!submit && ck_cli_get(cmd, &args, "name"))
    return usage("--name names a job on a cluster; give --coordinator-host (and "
                 "--coordinator-port) too, or leave it out to run here");
  if (submit && (o.checkpoint_dir || o.fresh))
    return usage("a cluster job checkpoints where the coordinator's --checkpoint-dir says; "
                 "--checkpoint-dir and --fresh are for a run in this process");
  if (!submit && o.fresh && !o.checkpoint_dir) return usage("--fresh needs --checkpoint-dir");
  const char *http_port = ck_cli_get(cmd, &args, "http-port");
  int hport = -1;
  if (http_port) {
    if (ck_cli_port("run", "http-port", http_port, true, &hport)) return 2;
    if (submit)
      return usage("--http-port serves a job run in this process; a cluster job is served by "
                   "its coordinator's REST API");
  }
  long port = 6123;
  if (submit && ck_cli_int(cmd, &args, "coordinator-port", &port)) return 2;

  ck_error_t err;
  ck_error_clear(&err);
  ck_buf_t sql;
  ck_buf_init(&sql);
  const char *filename = inline_sql ? "<-e>" : args.positional[0];
  if (inline_sql) {
    ck_buf_puts(&sql, inline_sql);
  } else if (ck_cli_read_file(filename, &sql, &err)) {
    char msg[2048];
    ck_error_format(&err, msg, sizeof msg);
    fprintf(stderr, "clink run: %s\n", msg);
    ck_buf_fini(&sql);
    return 1;
  }
  if (submit) {
    const char *name = ck_cli_get(cmd, &args, "name");
    /* --capture-dir and --capture-records are the job's own on its workers; left out, the
     * workers' options apply */
    rc = ck_cli_submit(co_host ? co_host : "127.0.0.1", (int)port, name ? name : filename,
                       sql.data, o.parallelism, o.capture_dir,
                       ck_cli_get(cmd, &args, "capture-records") ? o.capture_records : 0);
  } else {
    o.script_name = filename;
    ck_cli_on_stop(on_interrupt);
    ck_buf_t errors;
    ck_buf_init(&errors);
    ck_rest_embedded_t *srv = NULL;
    if (hport >= 0) {
      if (ck_rest_embedded_start(hport, filename, o.checkpoint_dir,
                                 getenv("CLINK_AUTH_TOKEN"), &srv, &err)) {
        char msg[2048];
        ck_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "clink run: could not serve --http-port %d: %s\n", hport, msg);
        ck_buf_fini(&errors);
        ck_buf_fini(&sql);
        return 1;
      }
      CK_LOG_INFO("rest", "serving the job's REST API on 127.0.0.1:%d (job id 1)",
                  ck_rest_embedded_port(srv));
    }
    rc = run_here(&o, sql.data, sql.len, srv, &errors);
    if (srv) {
      ck_rest_embedded_ended(srv, rc ? "FAILED" : interrupts ? "STOPPED" : "FINISHED");
      ck_rest_embedded_stop(srv);
    }
    if (errors.len) fputs(errors.data, stderr);
    ck_buf_fini(&errors);
  }
  ck_buf_fini(&sql);
  return rc;
}

const ck_cli_cmd_t ck_cli_cmd_run = {
    "run", "run a SQL pipeline in this process", "[options] (FILE.sql | -e SQL)", opts, run_main};
