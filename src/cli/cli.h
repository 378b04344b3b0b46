/*
 * DESIGN: the `clink` command line.
 *
 * One table of subcommands (main.c) and, per subcommand, one table of options; `--help` text,
 * the usage errors and the option tables of docs/cli.md (`clink CMD --options-markdown`) are
 * generated from those tables so they cannot drift from the parser. An option that several
 * commands take (`--checkpoint-interval-ms`, `--max-restarts`, `--max-memory`, `--log-level`,
 * `--coordinator-port`) has ONE row in ck_cli_shared_opts (opts.c) — its metavariable, help,
 * bounds and default — and each command's table names it with CK_CLI_SHARED, so `run` and
 * `coordinator` cannot disagree on a bound or a default again. An integer option's row holds
 * its bounds and default: ck_cli_int reads them from there, and the help shows the default.
 * Exit status: 0 success, 1 the work failed, 2 bad usage.
 */
#ifndef CK_CLI_CLI_H
#define CK_CLI_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

typedef struct ck_cli_opt {
  const char *name;  /* long name without dashes; "e" is written -e */
  const char *arg;   /* metavariable ("DIR"), or NULL for a flag */
  const char *help;
  long lo, hi, def;  /* an integer option (lo < hi): its bounds and default */
  bool shared;       /* every other field comes from ck_cli_shared_opts' row of this name */
} ck_cli_opt_t;

/* A command's table entry for a shared option. */
#define CK_CLI_SHARED(name) {name, NULL, NULL, 0, 0, 0, true}
/* The options several commands take, one row each; terminated by a {NULL} entry. */
extern const ck_cli_opt_t ck_cli_shared_opts[];

typedef struct ck_cli_cmd {
  const char *name;
  const char *summary;
  const char *usage;             /* after "clink NAME " */
  const ck_cli_opt_t *opts;      /* terminated by a {NULL} entry */
  int (*main)(int argc, char **argv); /* argv[0] is the subcommand name */
} ck_cli_cmd_t;

/* Parsed arguments: values indexed like the option table, plus positional arguments. */
typedef struct ck_cli_args {
  const char *values[32];   /* NULL when absent; flags get "1" */
  const char *positional[16];
  int npositional;
} ck_cli_args_t;

/* Parses argv[1..] against cmd's table. Prints the error and returns 2 on bad usage,
 * prints help and returns -1 for --help, 0 on success. */
int ck_cli_parse(const ck_cli_cmd_t *cmd, int argc, char **argv, ck_cli_args_t *args);
const char *ck_cli_get(const ck_cli_cmd_t *cmd, const ck_cli_args_t *args, const char *name);
bool ck_cli_flag(const ck_cli_cmd_t *cmd, const ck_cli_args_t *args, const char *name);
void ck_cli_print_help(const ck_cli_cmd_t *cmd);

const ck_cli_cmd_t *ck_cli_find(const char *name);

/* --log-level, when given: applied, or a usage error printed (returns 2). */
int ck_cli_apply_log_level(const ck_cli_cmd_t *cmd, const ck_cli_args_t *args);
/* An integer option into *out: its value when given (within the row's bounds), else the row's
 * default; 2 after printing "clink CMD: --NAME must be a whole number from lo to hi, not 'v'". */
int ck_cli_int(const ck_cli_cmd_t *cmd, const ck_cli_args_t *args, const char *name, long *out);
/* The command's options as a Markdown table (option, value, default, help): docs/cli.md. */
struct ck_buf;
void ck_cli_options_markdown(const ck_cli_cmd_t *cmd, struct ck_buf *out);
/* SIGINT and SIGTERM call handler; SIGPIPE is ignored (a closed socket is an error, not death). */
void ck_cli_on_stop(void (*handler)(int));
/* --max-memory SIZE (512M, 4G, …; 'none' or 0: no limit) into *out, default
 * ck_mem_default_limit(); prints the usage error and returns 2 when it is not a size. */
int ck_cli_max_memory(const ck_cli_cmd_t *cmd, const ck_cli_args_t *args, int64_t *out);

/* Reads a script: a regular file, or standard input for "-" (anything else is refused before
 * reading: it could block or never end). */
struct ck_error;
int ck_cli_read_file(const char *path, struct ck_buf *out, struct ck_error *err);

#define CK_CLI_DECLARE(id) extern const ck_cli_cmd_t ck_cli_cmd_##id
CK_CLI_DECLARE(run);
CK_CLI_DECLARE(version);
CK_CLI_DECLARE(connectors);
CK_CLI_DECLARE(coordinator);
CK_CLI_DECLARE(worker);
CK_CLI_DECLARE(list);
CK_CLI_DECLARE(cancel);
CK_CLI_DECLARE(state_cat);
CK_CLI_DECLARE(state_diff);
CK_CLI_DECLARE(state_export);
CK_CLI_DECLARE(checkpoint_verify);
CK_CLI_DECLARE(state_query);
CK_CLI_DECLARE(capture_cat);
CK_CLI_DECLARE(replay);
CK_CLI_DECLARE(replay_diff);
CK_CLI_DECLARE(incident);
/* A checkpoint or job id of the incident subcommands (1 or more); false when s is not one. */
bool ck_cli_incident_id(const char *s, int64_t *out);

#endif
