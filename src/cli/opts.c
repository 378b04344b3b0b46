/* DESIGN: the option parser shared by every subcommand; see cli.h. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/alloc.h"
#include "cli/cli.h"

static const char *dash(const char *name) { return strlen(name) == 1 ? "-" : "--"; }

void ck_cli_print_help(const ck_cli_cmd_t *cmd) {
  printf("usage: clink %s %s\n\n%s\n", cmd->name, cmd->usage, cmd->summary);
  if (!cmd->opts || !cmd->opts[0].name) return;
  printf("\noptions:\n");
  for (const ck_cli_opt_t *o = cmd->opts; o->name; o++) {
    char left[64];
    snprintf(left, sizeof left, "%s%s%s%s", dash(o->name), o->name, o->arg ? " " : "",
             o->arg ? o->arg : "");
    printf("  %-28s %s\n", left, o->help);
  }
  printf("  %-28s %s\n", "--help", "show this help and exit");
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
    const ck_cli_opt_t *o = &cmd->opts[idx];
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

int ck_cli_int(const ck_cli_cmd_t *cmd, const ck_cli_args_t *args, const char *name, long lo,
               long hi, long *out) {
  const char *v = ck_cli_get(cmd, args, name);
  if (!v) return 0;
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (!*v || *end || errno || n < lo || n > hi) {
    fprintf(stderr, "clink %s: --%s must be a whole number from %ld to %ld, not '%s'\n",
            cmd->name, name, lo, hi, v);
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
