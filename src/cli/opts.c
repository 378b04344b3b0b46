/*
 * DESIGN: the option parser shared by every subcommand, and the one table of the options
 * several subcommands take; see cli.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/error.h"
#include "base/log.h"
#include "base/alloc.h"
#include "checkpoint/coord.h"
#include "cli/cli.h"
#include "job/policy.h"

/* name, metavariable, help, integer bounds and default. The restart budget is the job
 * module's (job/policy.h): one default for an embedded run and a cluster. */
const ck_cli_opt_t ck_cli_shared_opts[] = {
    {"checkpoint-interval-ms", "MS", "time between checkpoints", 1, 86400000, 1000, false},
    {"checkpoints-retained", "N", "completed checkpoints kept on disk, the newest N (Flink's "
     "state.checkpoints.num-retained); older ones are deleted as new ones complete", 1, 1000000,
     3, false},
    {"checkpoint-timeout-ms", "MS", "abandon a checkpoint not complete this long after its "
     "trigger (the final one's abandonment fails the deployment: a restart takes it again)", 1,
     86400000, CK_CKPT_TIMEOUT_DEFAULT_MS, false},
    {"max-restarts", "N", "restarts a job may use in its lifetime (from its last checkpoint, "
     "after a failure a restart can cure) before it fails", 0, CK_JOB_RESTARTS_MAX,
     CK_JOB_RESTARTS_DEFAULT, false},
    {"max-memory", "SIZE", "fail a job whose memory (on this process) passes SIZE (512M, 4G; "
     "'none': no limit; default 80% of the machine's or the cgroup's memory)", 0, 0, 0, false},
    {"log-level", "LEVEL", "off, error, warn, info or debug (default: $CLINK_LOG_LEVEL or info)",
     0, 0, 0, false},
    {"coordinator-port", "PORT", "the coordinator's control port", 1, 65535, 6123, false},
    {"http-port", "PORT", "serve HTTP here (0 picks a free port; default: none): `run`, the "
     "job's read-only REST routes on 127.0.0.1 (job, operators, checkpoints, state, metrics; "
     "docs/cluster.md); `worker`, /api/v1/health", 0, 0, 0, false},
    {"capture-dir", "DIR", "record what every operator subtask consumes, per checkpoint "
     "interval, under DIR (clink replay re-executes it; docs/replay.md)", 0, 0, 0, false},
    {"capture-records", "N", "records each operator subtask keeps per interval under "
     "--capture-dir (past it, the interval is marked truncated)", 1, 1000000000, 10000, false},
    {NULL, NULL, NULL, 0, 0, 0, false},
};

/* The row that holds an entry's facts: its own, or the shared one it names. */
static const ck_cli_opt_t *row(const ck_cli_opt_t *o) {
  if (!o->shared) return o;
  for (const ck_cli_opt_t *s = ck_cli_shared_opts; s->name; s++)
    if (strcmp(s->name, o->name) == 0) return s;
  return o; /* a name missing from the shared table: a bug the usage tests catch */
}

static bool is_int(const ck_cli_opt_t *r) { return r->lo < r->hi; }

static const char *dash(const char *name) { return strlen(name) == 1 ? "-" : "--"; }

/* "HELP (default D)" for an integer option with a default, else the help. */
static void help_text(const ck_cli_opt_t *r, ck_buf_t *out) {
  ck_buf_puts(out, r->help ? r->help : "");
  if (is_int(r)) ck_buf_printf(out, " (default %ld)", r->def);
}

void ck_cli_print_help(const ck_cli_cmd_t *cmd) {
  printf("usage: clink %s %s\n\n%s\n", cmd->name, cmd->usage, cmd->summary);
  if (!cmd->opts || !cmd->opts[0].name) return;
  printf("\noptions:\n");
  for (const ck_cli_opt_t *o = cmd->opts; o->name; o++) {
    const ck_cli_opt_t *r = row(o);
    char left[64];
    snprintf(left, sizeof left, "%s%s%s%s", dash(o->name), o->name, r->arg ? " " : "",
             r->arg ? r->arg : "");
    ck_buf_t h;
    ck_buf_init(&h);
    help_text(r, &h);
    /* a name longer than the column still leaves two spaces before its help */
    printf("  %-28s%s%s\n", left, strlen(left) >= 28 ? "  " : " ", h.data);
    ck_buf_fini(&h);
  }
  printf("  %-28s %s\n", "--help", "show this help and exit");
}

void ck_cli_options_markdown(const ck_cli_cmd_t *cmd, ck_buf_t *out) {
  ck_buf_printf(out, "| option | value | default | range | meaning |\n| --- | --- | --- | --- | --- |\n");
  for (const ck_cli_opt_t *o = cmd->opts; o && o->name; o++) {
    const ck_cli_opt_t *r = row(o);
    ck_buf_printf(out, "| `%s%s` | %s | ", dash(o->name), o->name, r->arg ? r->arg : "(flag)");
    if (is_int(r)) ck_buf_printf(out, "%ld | %ld … %ld | ", r->def, r->lo, r->hi);
    else ck_buf_puts(out, "| | ");
    ck_buf_printf(out, "%s%s |\n", r->help ? r->help : "", o->shared ? " (shared)" : "");
  }
}

static int find_opt(const ck_cli_cmd_t *cmd, const char *name, size_t len) {
  for (int i = 0; cmd->opts && cmd->opts[i].name; i++)
    if (strlen(cmd->opts[i].name) == len && strncmp(cmd->opts[i].name, name, len) == 0) return i;
  return -1;
}

static int usage_error(const ck_cli_cmd_t *cmd, const char *word) {
  const char *names[32];
  size_t n = 0;
  for (const ck_cli_opt_t *o = cmd->opts; o && o->name && n < 32; o++) names[n++] = o->name;
  const char *bare = word;
  while (*bare == '-') bare++;
  char key[64];
  snprintf(key, sizeof key, "%.*s", (int)strcspn(bare, "="), bare);
  const char *close = ck_closest(key, names, n);
  fprintf(stderr, "clink %s: unknown option '%s'\n", cmd->name, word);
  if (close) fprintf(stderr, "hint: did you mean '%s%s'?\n", dash(close), close);
  fprintf(stderr, "run 'clink %s --help' for the options\n", cmd->name);
  return 2;
}

int ck_cli_parse(const ck_cli_cmd_t *cmd, int argc, char **argv, ck_cli_args_t *args) {
  memset(args, 0, sizeof *args);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      ck_cli_print_help(cmd);
      return -1;
    }
    if (strcmp(a, "--options-markdown") == 0) { /* docs/cli.md; not in --help */
      ck_buf_t md;
      ck_buf_init(&md);
      ck_cli_options_markdown(cmd, &md);
      fputs(md.data, stdout);
      ck_buf_fini(&md);
      return -1;
    }
    if (a[0] != '-' || a[1] == 0) {
      if (args->npositional == (int)(sizeof args->positional / sizeof args->positional[0])) {
        fprintf(stderr, "clink %s: too many arguments\n", cmd->name);
        return 2;
      }
      args->positional[args->npositional++] = a;
      continue;
    }
    const char *name = a + (a[1] == '-' ? 2 : 1);
    size_t len = strcspn(name, "=");
    int idx = find_opt(cmd, name, len);
    if (idx < 0 || (a[1] != '-' && len != 1)) return usage_error(cmd, a);
    const ck_cli_opt_t *o = row(&cmd->opts[idx]);
    if (!o->arg) {
      if (name[len] == '=') {
        fprintf(stderr, "clink %s: option '%s%s' takes no value\n", cmd->name, dash(o->name),
                o->name);
        return 2;
      }
      args->values[idx] = "1";
    } else if (name[len] == '=') {
      args->values[idx] = name + len + 1;
    } else if (i + 1 < argc) {
      args->values[idx] = argv[++i];
    } else {
      fprintf(stderr, "clink %s: option '%s%s' needs a value (%s)\n", cmd->name, dash(o->name),
              o->name, o->arg);
      return 2;
    }
  }
  return 0;
}

const char *ck_cli_get(const ck_cli_cmd_t *cmd, const ck_cli_args_t *args, const char *name) {
  int idx = find_opt(cmd, name, strlen(name));
  return idx < 0 ? NULL : args->values[idx];
}

bool ck_cli_flag(const ck_cli_cmd_t *cmd, const ck_cli_args_t *args, const char *name) {
  return ck_cli_get(cmd, args, name) != NULL;
}

int ck_cli_apply_log_level(const ck_cli_cmd_t *cmd, const ck_cli_args_t *args) {
  const char *v = ck_cli_get(cmd, args, "log-level");
  if (!v) return 0;
  int l = ck_log_parse_level(v);
  if (l < 0) {
    fprintf(stderr, "clink %s: --log-level must be off, error, warn, info or debug, not '%s'\n",
            cmd->name, v);
    return 2;
  }
  ck_log_set_level((ck_log_level_t)l);
  return 0;
}

int ck_cli_int(const ck_cli_cmd_t *cmd, const ck_cli_args_t *args, const char *name,
               long *out) {
  int idx = find_opt(cmd, name, strlen(name));
  if (idx < 0) return 0;
  const ck_cli_opt_t *r = row(&cmd->opts[idx]);
  if (is_int(r)) *out = r->def;
  const char *v = args->values[idx];
  if (!v) return 0;
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (!*v || *end || errno || n < r->lo || n > r->hi) {
    fprintf(stderr, "clink %s: --%s must be a whole number from %ld to %ld, not '%s'\n",
            cmd->name, name, r->lo, r->hi, v);
    return 2;
  }
  *out = n;
  return 0;
}

int ck_cli_max_memory(const ck_cli_cmd_t *cmd, const ck_cli_args_t *args, int64_t *out) {
  const char *v = ck_cli_get(cmd, args, "max-memory");
  *out = ck_mem_default_limit();
  if (!v) return 0;
  if (!strcmp(v, "0") || !strcmp(v, "none")) {
    *out = 0;
    return 0;
  }
  if (!ck_mem_parse_size(v, out) || *out < (1 << 20)) {
    fprintf(stderr, "clink %s: --max-memory must be a size of at least 1M, like 512M or 4G (or "
            "'none'), not '%s'\n", cmd->name, v);
    return 2;
  }
  return 0;
}

void ck_cli_on_stop(void (*handler)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
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
