/*
 * DESIGN: `clink incident reconcile BUNDLE --host H --key COL[,COL…]` — the incident command
 * table's reconcile row (cli/cmd_incident.c): parses the options and hands them to
 * src/incident/reconcile.c, which does the work. The password is read from the environment
 * variable CLINK_RECONCILE_PASSWORD, never from the command line or the bundle.
 * Exit status: 0 pass, 1 a check failed, 3 partial, 2 bad usage or a refused request.
 * Threads: one, the command's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/error.h"
#include "cli/cli.h"
#include "connectors/connectors.h"
#include "incident/bundle.h"
#include "incident/reconcile.h"

static const ck_cli_opt_t reconcile_opts[] = {
    {"host", "H", "the ClickHouse server to read (the operator's: nothing is taken from the "
     "bundle)", 0, 0, 0, false},
    {"port", "P", "its native port", 1, 65535, 9000, false},
    {"user", "U", "the user to read as (a user with SELECT alone is enough); the password comes "
     "from $" CK_RECONCILE_PASSWORD_ENV, 0, 0, 0, false},
    {"key", "COL[,COL…]", "the written columns that identify one row the job writes", 0, 0, 0,
     false},
    {"checkpoint", "N", "the completed checkpoint whose scope to reconcile (default: the newest "
     "with evidence)", 0, 0, 0, false},
    {"job", "ID", "the cluster job the bundle must hold", 0, 0, 0, false},
    {"database", "D", "the destination database the bundle's sink must have written", 0, 0, 0,
     false},
    {"table", "T", "the destination table the bundle's sink must have written", 0, 0, 0, false},
    {"json", "REPORT", "write the JSON report (clink-reconcile-report, version 1) to REPORT "
     "('-': standard output)", 0, 0, 0, false},
    {"max-rows", "N", "max_result_rows of each statement (result_overflow_mode = throw)", 1,
     1000000000L, 1000000, false},
    {"max-execution-time", "S", "max_execution_time of each statement, in seconds "
     "(timeout_overflow_mode = throw)", 1, 86400, 60, false},
    {"receive-timeout-ms", "MS", "the client's own bound on every wait for the server", 100,
     3600000, 90000, false},
    {"pause-ms", "MS", "the pause between the two reads of the scope", 0, 600000, 1000, false},
    {"keys-per-read", "N", "keys per SELECT", 1, 100000, 1000, false},
    {"reference", "ARTIFACT", "an independent reference (python/clink-reference's artifact) for "
     "the same scope: the audit then also compares it with the captured input and the table", 0,
     0, 0, false},
    CK_CLI_SHARED("log-level"),
    {NULL, NULL, NULL, 0, 0, 0, false},
};

static int reconcile_main(int argc, char **argv);
const ck_cli_cmd_t ck_cli_incident_reconcile = {
    "incident reconcile", "read one ClickHouse table, read-only and bounded, and compare it with "
    "the rows a completed checkpoint's scope owed it",
    "BUNDLE --host H [--port P] [--user U] --key COL[,COL…] [--checkpoint N] [--job ID] "
    "[--database D --table T] [--reference ARTIFACT] [--json REPORT]", reconcile_opts, reconcile_main};

static int usage(const char *msg) {
  fprintf(stderr, "clink incident reconcile: %s\nusage: clink incident reconcile %s\n", msg,
          ck_cli_incident_reconcile.usage);
  return CK_INCIDENT_USAGE;
}

static int reconcile_main(int argc, char **argv) {
  const ck_cli_cmd_t *cmd = &ck_cli_incident_reconcile;
  ck_cli_args_t args;
  int rc = ck_cli_parse(cmd, argc, argv, &args);
  if (rc) return rc < 0 ? 0 : rc;
  if (ck_cli_apply_log_level(cmd, &args)) return 2;
  if (args.npositional != 1) return usage("give one BUNDLE directory");
  ck_reconcile_opts_t o = {0};
  o.bundle = args.positional[0];
  o.host = ck_cli_get(cmd, &args, "host");
  o.user = ck_cli_get(cmd, &args, "user");
  o.keys = ck_cli_get(cmd, &args, "key");
  o.reference = ck_cli_get(cmd, &args, "reference");
  o.database = ck_cli_get(cmd, &args, "database");
  o.table = ck_cli_get(cmd, &args, "table");
  o.json_path = ck_cli_get(cmd, &args, "json");
  o.password = getenv(CK_RECONCILE_PASSWORD_ENV);
  long v;
  if (ck_cli_int(cmd, &args, "port", &v)) return 2;
  o.port = (int)v;
  if (ck_cli_int(cmd, &args, "max-rows", &v)) return 2;
  o.max_rows = v;
  if (ck_cli_int(cmd, &args, "max-execution-time", &v)) return 2;
  o.max_execution_s = (int)v;
  if (ck_cli_int(cmd, &args, "receive-timeout-ms", &v)) return 2;
  o.receive_timeout_ms = (int)v;
  if (ck_cli_int(cmd, &args, "pause-ms", &v)) return 2;
  o.pause_ms = (int)v;
  if (ck_cli_int(cmd, &args, "keys-per-read", &v)) return 2;
  o.keys_per_read = (int)v;
  const char *s;
  if ((s = ck_cli_get(cmd, &args, "checkpoint")) && !ck_cli_incident_id(s, &o.checkpoint))
    return usage("--checkpoint takes a checkpoint id (1 or more)");
  if ((s = ck_cli_get(cmd, &args, "job")) && !ck_cli_incident_id(s, &o.job))
    return usage("--job takes a job id (1 or more)");
  if (!o.host) return usage("give --host (the server to read: nothing is taken from the bundle)");
  if (!o.keys || !*o.keys) return usage("give --key COL[,COL…] (the columns that identify a row)");
  if (!o.database != !o.table) return usage("give --database and --table together");
  ck_connectors_register_all(); /* op.json's graphs name their connectors */
  ck_buf_t text;
  ck_buf_init(&text);
  ck_error_t err;
  ck_error_clear(&err);
  rc = ck_reconcile_run(&o, &text, &err);
  fwrite(text.data ? text.data : "", 1, text.len, stderr);
  if (rc == CK_INCIDENT_USAGE && err.code) {
    char msg[2048];
    ck_error_format(&err, msg, sizeof msg);
    fprintf(stderr, "clink incident reconcile: %s\n", msg);
  }
  ck_buf_fini(&text);
  return rc;
}
