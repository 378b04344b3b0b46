/*
 * DESIGN: `clink incident SUBCOMMAND` — the incident workflow (docs/incidents.md): collect a
 * bundle from a job's directories, verify it offline, export a checkpoint's scope, and
 * reconcile one destination against it.
 *
 * One table of subcommands (below): `clink incident --help`, the usage errors and the dispatch
 * are generated from it, and each row is an ordinary command (ck_cli_cmd_t, its own options
 * table) named "incident <sub>", so its --help and --options-markdown come from the shared
 * parser. The work is in src/incident/ (bundle.h); this file parses and prints.
 * `reconcile` is the reconcile half's (cli/cmd_incident_reconcile.c, src/incident/reconcile*.c).
 *
 * Exit status: 0 pass, 1 a check failed, 3 partial (none failed, one unavailable), 2 bad
 * usage or a refused request.
 * Threads: one, the command's.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/error.h"
#include "cli/cli.h"
#include "cli/cmd_state.h"
#include "connectors/connectors.h"
#include "incident/bundle.h"
#include "incident/bundle_int.h"

static int usage(const ck_cli_cmd_t *cmd, const char *msg) {
  fprintf(stderr, "clink %s: %s\nusage: clink %s %s\n", cmd->name, msg, cmd->name, cmd->usage);
  return CK_INCIDENT_USAGE;
}

bool ck_cli_incident_id(const char *s, int64_t *out) {
  char *end;
  long long v = s ? strtoll(s, &end, 10) : 0;
  if (!s || end == s || *end || v < 1) return false;
  *out = v;
  return true;
}

/* ---------------------------------------------------------------- collect */

static const ck_cli_opt_t collect_opts[] = {
    {"checkpoint-dir", "DIR", "the job's checkpoint directory (a cluster: the coordinator's, "
     "with --job)", 0, 0, 0, false},
    {"capture-dir", "DIR", "where the job recorded (--capture-dir of the run or worker)", 0, 0,
     0, false},
    {"job", "ID", "a cluster job: its checkpoints are DIR/job-<ID>", 0, 0, 0, false},
    {"include-captures", NULL, "add every interval's capture and sink evidence", 0, 0, 0,
     false},
    {"include-state", NULL, "add the snapshots of the checkpoints that bound each interval, and "
     "of every restore point", 0, 0, 0, false},
    {"trace-dir", "DIR", "add the protocol trace the run recorded (CLINK_PROTOCOL_TRACE_DIR)", 0,
     0, 0, false},
    {"out", "BUNDLE", "the bundle directory to write (must not exist, or be empty)", 0, 0, 0,
     false},
    CK_CLI_SHARED("log-level"),
    {NULL, NULL, NULL, 0, 0, 0, false},
};

static int collect_main(int argc, char **argv);
static const ck_cli_cmd_t incident_collect = {
    "incident collect", "collect a job's checkpoints, captures, evidence and manifest into one "
    "portable bundle with a checksum of every file",
    "--checkpoint-dir DIR --capture-dir DIR [--job ID] [--include-captures] [--include-state] "
    "--out BUNDLE", collect_opts, collect_main};

static int collect_main(int argc, char **argv) {
  const ck_cli_cmd_t *cmd = &incident_collect;
  ck_cli_args_t args;
  int rc = ck_cli_parse(cmd, argc, argv, &args);
  if (rc) return rc < 0 ? 0 : rc;
  if (ck_cli_apply_log_level(cmd, &args)) return 2;
  if (args.npositional) return usage(cmd, "unexpected argument");
  ck_bundle_collect_opts_t o = {0};
  o.checkpoint_dir = ck_cli_get(cmd, &args, "checkpoint-dir");
  o.capture_dir = ck_cli_get(cmd, &args, "capture-dir");
  o.trace_dir = ck_cli_get(cmd, &args, "trace-dir");
  o.out = ck_cli_get(cmd, &args, "out");
  o.include_captures = ck_cli_flag(cmd, &args, "include-captures");
  o.include_state = ck_cli_flag(cmd, &args, "include-state");
  const char *job = ck_cli_get(cmd, &args, "job");
  if (job && !ck_cli_incident_id(job, &o.job_id)) return usage(cmd, "--job takes a job id (1 or more)");
  if (!o.checkpoint_dir) return usage(cmd, "give --checkpoint-dir (the job's checkpoints)");
  if (!o.out) return usage(cmd, "give --out BUNDLE (the directory to write)");
  if (!o.capture_dir && o.include_captures)
    return usage(cmd, "--include-captures needs --capture-dir (where the job recorded)");
  ck_connectors_register_all(); /* op.json's graphs name their connectors */
  ck_error_t err;
  ck_error_clear(&err);
  /* an S3 store is read through a local copy of it (cmd_state.h) */
  const char *ckdir = o.checkpoint_dir;
  o.checkpoint_dir = ck_state_local_dir(ckdir, &err);
  if (o.checkpoint_dir != ckdir) o.checkpoint_url = ckdir;
  rc = o.checkpoint_dir ? ck_bundle_collect(&o, &err) : CK_EIO;
  if (rc) {
    char msg[2048];
    ck_error_format(&err, msg, sizeof msg);
    fprintf(stderr, "clink incident collect: %s\n", msg);
    return rc == CK_EUSAGE ? CK_INCIDENT_USAGE : CK_INCIDENT_FAIL;
  }
  return 0;
}

/* ---------------------------------------------------------------- verify */

static const ck_cli_opt_t verify_opts[] = {
    {"json", NULL, "print the versioned JSON report (clink-incident-verify) instead of text", 0,
     0, 0, false},
    {"trace-checker", "PATH", "the protocol trace checker (formal/check-trace; default: "
     "$CLINK_TRACE_CHECKER, else the one beside this binary's source tree or install)", 0, 0, 0,
     false},
    CK_CLI_SHARED("log-level"),
    {NULL, NULL, NULL, 0, 0, 0, false},
};

/* One captured epoch through `clink replay --verify`, in this process: its emissions go to a
 * scratch file outside the bundle (removed after), what it says on standard error into msg. */
static int replay_epoch(const char *capture_dir, const char *checkpoint_dir, int op, int subtask,
                        int64_t epoch, ck_buf_t *msg) {
  char tmpl[] = "/tmp/clink-incident-XXXXXX";
  if (!mkdtemp(tmpl)) {
    ck_buf_puts(msg, "could not make a scratch directory for the replay");
    return 1;
  }
  char out[64], errp[64], sop[16], ssub[16], sep[24];
  ck_bundle_fmt(out, sizeof out, "%s/out.ndjson", tmpl);
  ck_bundle_fmt(errp, sizeof errp, "%s/stderr", tmpl);
  ck_bundle_fmt(sop, sizeof sop, "%d", op);
  ck_bundle_fmt(ssub, sizeof ssub, "%d", subtask);
  if (epoch == INT64_MAX) snprintf(sep, sizeof sep, "final");
  else snprintf(sep, sizeof sep, "%lld", (long long)epoch);
  char *argv[] = {"replay", "--capture-dir", (char *)capture_dir, "--checkpoint-dir",
                  (char *)checkpoint_dir, "--op", sop, "--subtask", ssub, "--epoch", sep,
                  "--verify", "--out", out, "--log-level", "error", NULL};
  fflush(stderr);
  int saved = dup(2);
  int fd = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd >= 0) dup2(fd, 2), close(fd);
  int rc = ck_cli_cmd_replay.main((int)(sizeof argv / sizeof argv[0]) - 1, argv);
  fflush(stderr);
  if (saved >= 0) dup2(saved, 2), close(saved);
  FILE *f = fopen(errp, "r");
  if (f) {
    char line[2048];
    while (fgets(line, sizeof line, f)) ck_buf_puts(msg, line);
    fclose(f);
  }
  while (msg->len && msg->data[msg->len - 1] == '\n') msg->data[--msg->len] = 0;
  unlink(out);
  unlink(errp);
  rmdir(tmpl);
  return rc == 0 ? 0 : 1;
}

/* formal/check-trace over the bundle's trace directory: the checker named (--trace-checker,
 * $CLINK_TRACE_CHECKER), else the first that exists of the source tree's (this binary in
 * <tree>/<build>/src/cli) and an install's (<prefix>/bin → <prefix>/share/clink). It reads the
 * trace files only; what it says goes to a scratch file outside the bundle, removed after. */
static const char *trace_checker_opt;

static int judge_trace(const char *trace_dir, ck_buf_t *msg) {
  char path[4096] = "";
  const char *named = trace_checker_opt ? trace_checker_opt : getenv("CLINK_TRACE_CHECKER");
  if (named && *named) {
    ck_bundle_fmt(path, sizeof path, "%s", named);
  } else {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
      exe[n] = 0;
      char *slash = strrchr(exe, '/');
      if (slash) *slash = 0;
      static const char *const rel[] = {"../../../formal/check-trace", "../share/clink/check-trace"};
      for (size_t i = 0; i < sizeof rel / sizeof rel[0] && !path[0]; i++) {
        char cand[8300];
        ck_bundle_fmt(cand, sizeof cand, "%s/%s", exe, rel[i]);
        if (access(cand, X_OK) == 0) ck_bundle_fmt(path, sizeof path, "%s", cand);
      }
    }
  }
  if (!path[0] || access(path, X_OK) != 0) {
    ck_buf_printf(msg, "no trace checker found%s%s (give --trace-checker formal/check-trace, or set "
                  "CLINK_TRACE_CHECKER)", path[0] ? " at " : "", path);
    return -1;
  }
  char tmpl[] = "/tmp/clink-incident-XXXXXX";
  if (!mkdtemp(tmpl)) {
    ck_buf_puts(msg, "could not make a scratch directory for the trace checker");
    return -1;
  }
  char outp[64];
  ck_bundle_fmt(outp, sizeof outp, "%s/out", tmpl);
  int rc = -1;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int null = open("/dev/null", O_RDONLY);
    if (fd < 0 || null < 0) _exit(127);
    dup2(null, 0), dup2(fd, 1), dup2(fd, 2);
    execl(path, path, "--quiet", trace_dir, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  if (pid > 0) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    rc = code == 0 ? 0 : code == 1 ? 1 : -1;
    FILE *f = fopen(outp, "r");
    if (f) {
      char line[2048];
      while (fgets(line, sizeof line, f) && msg->len < 4000) ck_buf_puts(msg, line);
      fclose(f);
    }
    while (msg->len && msg->data[msg->len - 1] == '\n') msg->data[--msg->len] = 0;
    if (rc < 0)
      ck_buf_printf(msg, "%s%s exited with %d", msg->len ? "; " : "", path, code);
  } else {
    ck_buf_printf(msg, "could not start %s: %s", path, strerror(errno));
  }
  unlink(outp);
  rmdir(tmpl);
  return rc;
}

static int verify_main(int argc, char **argv);
static const ck_cli_cmd_t incident_verify = {
    "incident verify", "check a bundle offline and read-only: integrity, the restore rule and "
    "participants, checkpoint ids, every captured epoch replayed with --verify, and the "
    "protocol trace held to the model (formal/check-trace)",
    "BUNDLE [--json] [--trace-checker PATH]", verify_opts, verify_main};

static int verify_main(int argc, char **argv) {
  const ck_cli_cmd_t *cmd = &incident_verify;
  ck_cli_args_t args;
  int rc = ck_cli_parse(cmd, argc, argv, &args);
  if (rc) return rc < 0 ? 0 : rc;
  if (ck_cli_apply_log_level(cmd, &args)) return 2;
  if (args.npositional != 1) return usage(cmd, "give one bundle directory");
  struct stat st;
  if (stat(args.positional[0], &st) || !S_ISDIR(st.st_mode))
    return usage(cmd, "the bundle is not a directory (clink incident collect --out makes one)");
  ck_connectors_register_all();
  ck_buf_t report;
  ck_buf_init(&report);
  trace_checker_opt = ck_cli_get(cmd, &args, "trace-checker");
  rc = ck_bundle_verify(args.positional[0], replay_epoch, judge_trace,
                        ck_cli_flag(cmd, &args, "json"), &report);
  fwrite(report.data ? report.data : "", 1, report.len, stdout);
  ck_buf_fini(&report);
  return rc;
}

/* ---------------------------------------------------------------- scope */

static const ck_cli_opt_t scope_opts[] = {
    {"checkpoint", "N", "the completed checkpoint whose scope to export", 0, 0, 0, false},
    {"job", "ID", "the cluster job the bundle holds (refused when it holds another)", 0, 0, 0,
     false},
    {"json", NULL, "print the versioned scope document (clink-scope) instead of text", 0, 0, 0,
     false},
    CK_CLI_SHARED("log-level"),
    {NULL, NULL, NULL, 0, 0, 0, false},
};

static int scope_main(int argc, char **argv);
static const ck_cli_cmd_t incident_scope = {
    "incident scope", "the scope of a completed checkpoint: its intervals back to a completed "
    "checkpoint or the run's start, the exact Kafka ranges and the sinks' evidence",
    "BUNDLE --checkpoint N [--json]", scope_opts, scope_main};

static int scope_main(int argc, char **argv) {
  const ck_cli_cmd_t *cmd = &incident_scope;
  ck_cli_args_t args;
  int rc = ck_cli_parse(cmd, argc, argv, &args);
  if (rc) return rc < 0 ? 0 : rc;
  if (ck_cli_apply_log_level(cmd, &args)) return 2;
  if (args.npositional != 1) return usage(cmd, "give one bundle directory");
  int64_t ckpt = 0, job = 0;
  if (!ck_cli_incident_id(ck_cli_get(cmd, &args, "checkpoint"), &ckpt))
    return usage(cmd, "give --checkpoint N (a completed checkpoint, 1 or more)");
  const char *j = ck_cli_get(cmd, &args, "job");
  if (j && !ck_cli_incident_id(j, &job)) return usage(cmd, "--job takes a job id (1 or more)");
  struct stat st;
  if (stat(args.positional[0], &st) || !S_ISDIR(st.st_mode))
    return usage(cmd, "the bundle is not a directory (clink incident collect --out makes one)");
  ck_connectors_register_all();
  ck_error_t err;
  ck_error_clear(&err);
  ck_buf_t out;
  ck_buf_init(&out);
  rc = ck_bundle_scope(args.positional[0], ckpt, job, ck_cli_flag(cmd, &args, "json"), &out,
                       &err);
  if (rc == CK_INCIDENT_USAGE) {
    char msg[2048];
    ck_error_format(&err, msg, sizeof msg);
    fprintf(stderr, "clink incident scope: %s\n", msg);
  } else {
    fwrite(out.data ? out.data : "", 1, out.len, stdout);
  }
  ck_buf_fini(&out);
  return rc;
}

/* ---------------------------------------------------------------- reconcile */

/* The reconcile half's row: cli/cmd_incident_reconcile.c, the work in src/incident/reconcile.c. */
extern const ck_cli_cmd_t ck_cli_incident_reconcile;

/* ---------------------------------------------------------------- the table */

static const ck_cli_cmd_t *const subcommands[] = {
    /* in the order `clink incident --help` lists them */
    &incident_collect,
    &incident_verify,
    &incident_scope,
    &ck_cli_incident_reconcile,
};
#define NSUB (sizeof subcommands / sizeof subcommands[0])

static const char *sub_name(const ck_cli_cmd_t *c) { return c->name + strlen("incident "); }

static void incident_help(FILE *f) {
  fprintf(f, "usage: clink incident <subcommand> [options]\n\n%s\n\nsubcommands:\n",
          ck_cli_cmd_incident.summary);
  for (size_t i = 0; i < NSUB; i++)
    fprintf(f, "  %-12s %s\n", sub_name(subcommands[i]), subcommands[i]->summary);
  fprintf(f, "\nexit status: 0 every check passed, 1 a check failed, 3 partial (none failed, "
          "one unavailable), 2 bad usage or a refused request\n"
          "'clink incident <subcommand> --help' describes a subcommand's options.\n");
}

static int incident_main(int argc, char **argv) {
  if (argc < 2) {
    incident_help(stderr);
    return 2;
  }
  const char *name = argv[1];
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
    incident_help(stdout);
    return 0;
  }
  if (strcmp(name, "--options-markdown") == 0) return 0; /* the options are the subcommands' */
  for (size_t i = 0; i < NSUB; i++)
    if (strcmp(sub_name(subcommands[i]), name) == 0) return subcommands[i]->main(argc - 1, argv + 1);
  const char *names[NSUB];
  for (size_t i = 0; i < NSUB; i++) names[i] = sub_name(subcommands[i]);
  fprintf(stderr, "clink incident: unknown subcommand '%s'\n", name);
  const char *bare = name;
  while (*bare == '-') bare++;
  const char *close = ck_closest(bare, names, NSUB);
  if (close) fprintf(stderr, "hint: did you mean '%s'?\n", close);
  fprintf(stderr, "run 'clink incident --help' for the subcommands\n");
  return 2;
}

static const ck_cli_opt_t incident_opts[] = {
    {NULL, NULL, NULL, 0, 0, 0, false},
};

const ck_cli_cmd_t ck_cli_cmd_incident = {
    "incident", "incident bundles: collect, verify and scope offline; reconcile a destination",
    "<collect|verify|scope|reconcile> [options]", incident_opts, incident_main};
