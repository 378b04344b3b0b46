/*
 * DESIGN: `clink run` — plans a SQL script and runs it in this process.
 *
 * Reads the script (a file or -e), plans every query into one job graph, states the job's
 * delivery guarantee, and runs it until every bounded input is consumed or the user presses
 * Ctrl-C: the first Ctrl-C stops the sources and drains what is in flight into the sinks
 * (exit 0); a second one exits at once (exit 130).
 *
 * With --checkpoint-dir the run takes checkpoints and is a takeover of whatever the last run
 * with that directory left (checkpoint/lineage.h): it resumes from its own last completed
 * checkpoint unless the pipeline differs (refused), the last run finished its input, or
 * --fresh is given.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/thread.h"
#include "base/time.h"
#include "cli/cli.h"
#include "cli/cluster_client.h"
#include "cluster/proto.h"
#include "checkpoint/lineage.h"
#include "connectors/connectors.h"
#include "runtime/exec.h"
#include "runtime/metrics.h"
#include "sql/parser.h"
#include "sql/planner.h"

static const ck_cli_opt_t opts[] = {
    {"e", "SQL", "run this SQL text instead of a file"},
    {"parallelism", "N", "subtasks per operator (default 1)"},
    {"max-parallelism", "N", "key groups for keyed state and exchange (default 128)"},
    {"checkpoint-dir", "DIR", "take checkpoints into DIR, and resume from them when run again"},
    {"checkpoint-interval-ms", "MS", "time between checkpoints (default 1000)"},
    {"fresh", NULL, "ignore the checkpoints in --checkpoint-dir and start the job over"},
    {"max-memory", "SIZE", "fail a job whose memory passes SIZE (512M, 4G; 'none': no limit; default 80% of the machine's or the cgroup's memory)"},
    {"max-restarts", "N", "with checkpoints, restart from the last one after a failure up to N times (default 3)"},
    {"progress-interval-ms", "MS", "log a progress line with the live counters this often (default 10000; 0: never)"},
    {"log-level", "LEVEL", "off, error, warn, info or debug (default: $CLINK_LOG_LEVEL or info)"},
    {"coordinator-host", "HOST", "submit the job to this cluster coordinator instead of running it here"},
    {"coordinator-port", "PORT", "the coordinator's control port (default 6123)"},
    {"name", "NAME", "the job's name on the cluster (default: the file name)"},
    {NULL, NULL, NULL},
};

static ck_exec_t *volatile running;
static volatile sig_atomic_t interrupts;

static void on_interrupt(int sig) {
  (void)sig;
  if (++interrupts > 1) _exit(130);
  ck_exec_t *ex = running;
  if (ex) ck_exec_stop(ex);
}

static const char *file_kind(mode_t m) {
  return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

/* Reads a script: a regular file, or standard input for "-". Anything else (a directory, a
 * device like /dev/zero, a FIFO) is refused before reading: it could block or never end. The
 * file is opened without blocking, so a FIFO without a writer does not hang the open. */
int ck_cli_read_file(const char *path, ck_buf_t *out, ck_error_t *err) {
  FILE *f = stdin;
  if (strcmp(path, "-") != 0) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return ck_error_set(err, CK_EIO, "could not open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
      int e = errno;
      close(fd);
      return ck_error_set(err, CK_EIO, "could not read '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
      close(fd);
      ck_error_set(err, CK_EIO, "could not read '%s': it is %s, not a regular file", path,
                   file_kind(st.st_mode));
      ck_error_hint(err, "give the path of a SQL file, or '-' to read the script from standard input");
      return CK_EIO;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    f = fdopen(fd, "rb");
    if (!f) {
      close(fd);
      return ck_error_set(err, CK_EIO, "could not open '%s': %s", path, strerror(errno));
    }
  }
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) ck_buf_append(out, chunk, n);
  int bad = ferror(f);
  if (f != stdin) fclose(f);
  if (bad) return ck_error_set(err, CK_EIO, "could not read '%s'", path);
  if (!out->data) ck_buf_reserve(out, 0), out->data[0] = 0;
  return 0;
}

/* Where this run starts: its own last checkpoint, or fresh (checkpoint/lineage.h). */
static int begin_lineage(const char *dir, const ck_graph_t *graph, int parallelism, bool fresh,
                         int64_t below, ck_exec_opts_t *eopts, ck_error_t *err) {
  ck_buf_t desc;
  ck_buf_init(&desc);
  ck_graph_describe(graph, &desc);
  ck_lineage_t lin;
  int ntasks = ck_exec_task_count(graph);
  ck_lineage_opts_t lo = {desc.data, parallelism, fresh && !below, below, ntasks,
                         ck_exec_rigid_sink(graph)};
  int rc = ck_lineage_start(dir, &lo, &lin, err);
  eopts->ckpt.fingerprint = ck_lineage_fingerprint(desc.data);
  ck_buf_fini(&desc);
  if (rc) return rc;
  eopts->ckpt.dir = dir;
  eopts->ckpt.ids_above = lin.ids_above;
  eopts->ckpt.restore_id = lin.restore_id;
  if (lin.restore_id)
    CK_LOG_INFO("checkpoint", "restore point: checkpoint %lld (latest_completed=%lld latest_confirmed=%lld run_base=%lld): %s",
                (long long)lin.restore_id, (long long)lin.latest_completed,
                (long long)lin.latest_confirmed, (long long)lin.run_base, lin.why);
  else
    CK_LOG_INFO("checkpoint", "starting fresh (%s); new checkpoints are numbered above %lld",
                lin.why, (long long)lin.ids_above);
  return 0;
}

/* ---- the progress line: the live counters (runtime/metrics.h) every --progress-interval-ms */

typedef struct progress {
  ck_exec_t *ex;
  int64_t interval_ms;
  ck_mutex_t mu;
  ck_cond_t cv;
  bool stop;
  ck_thread_t thread;
} progress_t;

/* "12 records read, 10 written, 2 late records dropped, …": the summed counters, each with
 * its phrase from the metrics table. */
static void progress_text(ck_exec_t *ex, ck_buf_t *out) {
  int64_t sum[CK_OPM_COUNT], read, written;
  ck_exec_metrics_sum(ex, sum, &read, &written);
  ck_metrics_progress_line(out, read, written, sum);
}

static void *progress_main(void *arg) {
  progress_t *pg = arg;
  ck_mutex_lock(&pg->mu);
  for (int64_t next = ck_mono_ms() + pg->interval_ms; !pg->stop;) {
    if (!ck_cond_wait_until(&pg->cv, &pg->mu, next) || ck_mono_ms() >= next) {
      ck_buf_t b;
      ck_buf_init(&b);
      progress_text(pg->ex, &b);
      CK_LOG_INFO("job", "progress: %s", b.data);
      ck_buf_fini(&b);
      next += pg->interval_ms;
    }
  }
  ck_mutex_unlock(&pg->mu);
  return NULL;
}

static void progress_start(progress_t *pg, ck_exec_t *ex, int64_t interval_ms) {
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

static void progress_stop(progress_t *pg) {
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

/* A failure a restart from the last checkpoint can get past (an I/O error, a connection). */
static bool restartable(const ck_error_t *err) {
  return err->retriable || err->code == CK_EIO || err->code == CK_ECONNECT ||
         err->code == CK_ETIMEOUT;
}

static int run_main(int argc, char **argv) {
  ck_cli_args_t args;
  int rc = ck_cli_parse(&ck_cli_cmd_run, argc, argv, &args);
  if (rc) return rc < 0 ? 0 : rc;
  const ck_cli_cmd_t *cmd = &ck_cli_cmd_run;
  const char *inline_sql = ck_cli_get(cmd, &args, "e");
  if ((inline_sql != NULL) == (args.npositional == 1) || args.npositional > 1) {
    fprintf(stderr, "clink run: give one SQL file, or the SQL text with -e\n"
                    "usage: clink run %s\n", cmd->usage);
    return 2;
  }
  ck_plan_opts_t popts = {1, 128};
  long par = 1, maxpar = 128;
  if (ck_cli_int(cmd, &args, "parallelism", 1, 32768, &par) ||
      ck_cli_int(cmd, &args, "max-parallelism", 1, 32768, &maxpar))
    return 2;
  popts.parallelism = (int)par;
  popts.max_parallelism = (int)maxpar;
  if (ck_cli_apply_log_level(cmd, &args)) return 2;

  ck_exec_t *ex = NULL;
  ck_error_t err;
  ck_error_clear(&err);
  ck_buf_t sql;
  ck_buf_init(&sql);
  const char *filename = inline_sql ? "<-e>" : args.positional[0];
  if (inline_sql) ck_buf_puts(&sql, inline_sql);
  else if (ck_cli_read_file(filename, &sql, &err)) {
    char msg[2048];
    ck_error_format(&err, msg, sizeof msg);
    fprintf(stderr, "clink run: %s\n", msg);
    ck_buf_fini(&sql);
    return 1;
  }

  const char *co_host = ck_cli_get(cmd, &args, "coordinator-host");
  const char *co_port = ck_cli_get(cmd, &args, "coordinator-port");
  if (!co_host && !co_port && ck_cli_get(cmd, &args, "name")) {
    fprintf(stderr, "clink run: --name names a job on a cluster; give --coordinator-host (and "
                    "--coordinator-port) too, or leave it out to run here\n");
    ck_buf_fini(&sql);
    return 2;
  }
  if (co_host || co_port) {
    /* submit: the coordinator plans it (and refuses bad SQL with its position) */
    int port = 6123;
    if (co_port && ck_cli_port("run", "coordinator-port", co_port, false, &port)) {
      ck_buf_fini(&sql);
      return 2;
    }
    if (ck_cli_get(cmd, &args, "checkpoint-dir") || ck_cli_flag(cmd, &args, "fresh")) {
      fprintf(stderr, "clink run: a cluster job checkpoints where the coordinator's "
                      "--checkpoint-dir says; --checkpoint-dir and --fresh are for a run in "
                      "this process\n");
      ck_buf_fini(&sql);
      return 2;
    }
    const char *name = ck_cli_get(cmd, &args, "name");
    ck_buf_t p, text;
    ck_buf_init(&p);
    ck_buf_init(&text);
    ck_proto_put_str(&p, name ? name : filename);
    ck_proto_put_str(&p, sql.data);
    ck_proto_put_u32(&p, (uint32_t)popts.parallelism);
    int64_t id = 0;
    rc = ck_cli_cluster_call(co_host ? co_host : "127.0.0.1", port, CK_PROTO_SUBMIT, &p, &id,
                             &text);
    if (rc) {
      fprintf(stderr, "clink run: %s\n", text.data ? text.data : "");
    } else {
      printf("submitted job %lld\n", (long long)id);
      CK_LOG_INFO("job", "job delivery guarantee: %s", text.data);
    }
    ck_buf_fini(&p);
    ck_buf_fini(&text);
    ck_buf_fini(&sql);
    return rc ? 1 : 0;
  }

  ck_connectors_register_all();
  ck_arena_t arena;
  ck_arena_init(&arena, 0);
  ck_script_t script;
  ck_graph_t *graph = NULL;
  rc = ck_sql_parse_n(sql.data, sql.len, &arena, &script, &err);
  if (!rc) rc = ck_sql_plan(&script, &popts, &graph, &err);
  if (rc) {
    ck_buf_t msg;
    ck_buf_init(&msg);
    ck_sql_render_error(sql.data, filename, &err, &msg);
    fputs(msg.data, stderr);
    ck_buf_fini(&msg);
    ck_arena_fini(&arena);
    ck_buf_fini(&sql);
    return 1;
  }

  ck_exec_opts_t eopts = {.job_name = filename};
  if (ck_cli_max_memory(cmd, &args, &eopts.max_memory)) {
    rc = 2;
    goto out;
  }
  const char *ckpt_dir = ck_cli_get(cmd, &args, "checkpoint-dir");
  bool fresh = ck_cli_flag(cmd, &args, "fresh");
  if (fresh && !ckpt_dir) {
    fprintf(stderr, "clink run: --fresh needs --checkpoint-dir\n");
    rc = 2;
    goto out;
  }
  long interval = 0;
  if (ck_cli_int(cmd, &args, "checkpoint-interval-ms", 1, 32768, &interval)) {
    rc = 2;
    goto out;
  }
  eopts.ckpt.interval_ms = interval;
  if (ckpt_dir && begin_lineage(ckpt_dir, graph, popts.parallelism, fresh, 0, &eopts, &err)) {
    char msg[2048];
    ck_error_format(&err, msg, sizeof msg);
    fprintf(stderr, "clink run: %s\n", msg);
    rc = 1;
    goto out;
  }

  ck_buf_t g;
  ck_buf_init(&g);
  ck_graph_guarantee(graph, ckpt_dir != NULL, &g);
  CK_LOG_INFO("job", "job delivery guarantee: %s", g.data);
  ck_buf_fini(&g);

  ck_cli_on_stop(on_interrupt);

  long progress_ms = 10000;
  if (ck_cli_int(cmd, &args, "progress-interval-ms", 0, 86400000, &progress_ms)) {
    rc = 2;
    goto out;
  }
  long max_restarts = 3;
  if (ck_cli_int(cmd, &args, "max-restarts", 0, 1000, &max_restarts)) {
    rc = 2;
    goto out;
  }
  for (int attempt = 1;; attempt++) {
    rc = ck_exec_start(graph, &eopts, &ex, &err);
    if (rc) break;
    running = ex;
    if (interrupts) ck_exec_stop(ex); /* a Ctrl-C that came before there was a job to stop */
    progress_t pg;
    progress_start(&pg, ex, progress_ms);
    rc = ck_exec_wait(ex, &err);
    progress_stop(&pg);
    running = NULL;
    if (rc == CK_EREWIND && ckpt_dir && eopts.ckpt.restore_id > 0) {
      /* a sink found that the restore point's commit was lost (a kill between COMPLETED and
       * the commit of a sink that cannot redo it): restore the checkpoint before it */
      CK_LOG_WARN("checkpoint", "%s; restoring the checkpoint before %lld", err.message,
                  (long long)eopts.ckpt.restore_id);
      int64_t below = eopts.ckpt.restore_id;
      int64_t used = ck_exec_totals(ex).last_triggered;
      ck_exec_free(ex);
      ex = NULL;
      ck_error_clear(&err);
      if ((rc = begin_lineage(ckpt_dir, graph, popts.parallelism, false, below, &eopts, &err))) break;
      if (eopts.ckpt.ids_above < used) eopts.ckpt.ids_above = used;
      attempt--; /* not a failure of the job */
      continue;
    }
    if (!rc || !ckpt_dir || interrupts || attempt > max_restarts || !restartable(&err)) break;
    /* the failed checkpoint is abandoned as a whole: rewind to the last completed one */
    char msg[1024];
    ck_error_format(&err, msg, sizeof msg);
    for (char *nl = strchr(msg, '\n'); nl; nl = strchr(nl, '\n')) *nl = ' ';
    CK_LOG_WARN("job", "the job failed (%s); restarting from its last checkpoint (attempt %d/%d)",
                msg, attempt, (int)max_restarts);
    /* ids handed out by the failed execution stay used, durable record or not */
    int64_t used = ck_exec_totals(ex).last_triggered;
    ck_exec_free(ex);
    ex = NULL;
    ck_error_clear(&err);
    ck_sleep_ms(200LL * attempt);
    if ((rc = begin_lineage(ckpt_dir, graph, popts.parallelism, false, 0, &eopts, &err))) break;
    if (eopts.ckpt.ids_above < used) eopts.ckpt.ids_above = used;
  }
  if (ex) {
    ck_exec_totals_t tot = ck_exec_totals(ex);
    CK_LOG_INFO("job", "%s: %lld records read, %lld written, %lld late records dropped, %lld undecodable records skipped, %lld records without event time skipped, %lld checkpoints",
                rc ? "failed" : interrupts ? "stopped" : "finished", (long long)tot.source_records,
                (long long)tot.sink_records, (long long)tot.late_dropped,
                (long long)tot.decode_skipped, (long long)tot.no_event_time,
                (long long)tot.checkpoints_completed);
    /* a bounded job that consumed its input runs afresh next time */
    if (!rc && ckpt_dir && tot.input_ended && !interrupts) rc = ck_lineage_clean_finish(ckpt_dir, &err);
  }
  fflush(stdout);
  if (rc) {
    char msg[2048];
    ck_error_format(&err, msg, sizeof msg);
    fprintf(stderr, "clink run: %s\n", msg);
    rc = 1;
  }
out:
  ck_exec_free(ex);
  ck_graph_free(graph);
  ck_arena_fini(&arena);
  ck_buf_fini(&sql);
  return rc;
}

const ck_cli_cmd_t ck_cli_cmd_run = {
    "run", "run a SQL pipeline in this process", "[options] (FILE.sql | -e SQL)", opts, run_main};
