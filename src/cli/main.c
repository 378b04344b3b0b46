/*
 * DESIGN: entry point of the `clink` binary: finds the subcommand in the one table below and
 * hands it argv. Global --help/--version live here; everything else is per subcommand.
 */
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "cli/cli.h"
#include "clink/version.h"

static const ck_cli_cmd_t *const commands[] = {
    /* keep in the order `clink --help` lists them */
    &ck_cli_cmd_run,
    &ck_cli_cmd_coordinator,
    &ck_cli_cmd_worker,
    &ck_cli_cmd_list,
    &ck_cli_cmd_cancel,
    &ck_cli_cmd_state_cat,
    &ck_cli_cmd_state_diff,
    &ck_cli_cmd_state_export,
    &ck_cli_cmd_state_query,
    &ck_cli_cmd_checkpoint_verify,
    &ck_cli_cmd_capture_cat,
    &ck_cli_cmd_replay,
    &ck_cli_cmd_replay_diff,
    &ck_cli_cmd_incident,
    &ck_cli_cmd_connectors,
    &ck_cli_cmd_version,
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

const ck_cli_cmd_t *ck_cli_find(const char *name) {
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (strcmp(commands[i]->name, name) == 0) return commands[i];
  return NULL;
}

static void print_help(void) {
  printf("clink %s — a stream-processing engine you run from a SQL file\n\n", CLINK_VERSION);
  printf("usage: clink <command> [options]\n\ncommands:\n");
  for (size_t i = 0; i < NCOMMANDS; i++)
    printf("  %-18s %s\n", commands[i]->name, commands[i]->summary);
  printf("\nglobal options:\n  %-18s %s\n  %-18s %s\n", "--help", "show this help and exit",
         "--version", "print the version and exit");
  printf("\n'clink <command> --help' describes a command's options.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    print_help();
    return 2;
  }
  const char *name = argv[1];
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
    print_help();
    return 0;
  }
  if (strcmp(name, "--version") == 0) {
    printf("clink %s\n", CLINK_VERSION);
    return 0;
  }
  const ck_cli_cmd_t *cmd = ck_cli_find(name);
  if (!cmd) {
    const char *names[NCOMMANDS];
    for (size_t i = 0; i < NCOMMANDS; i++) names[i] = commands[i]->name;
    if (name[0] == '-')
      fprintf(stderr, "clink: unknown option '%s'\n", name);
    else
      fprintf(stderr, "clink: unknown command '%s'\n", name);
    const char *bare = name;
    while (*bare == '-') bare++;
    const char *close = ck_closest(bare, names, NCOMMANDS);
    if (close) fprintf(stderr, "hint: did you mean '%s'?\n", close);
    fprintf(stderr, "run 'clink --help' for the commands\n");
    return 2;
  }
  return cmd->main(argc - 1, argv + 1);
}
