/*
 * DESIGN: `clink worker` — runs a cluster worker (cluster/worker.h) until SIGINT/SIGTERM.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "cli/cli.h"
#include "cli/cluster_client.h"
#include "cluster/worker.h"

static const ck_cli_opt_t opts[] = {
    {"coordinator-host", "HOST", "the coordinator's address (default 127.0.0.1)", 0, 0, 0, false},
    CK_CLI_SHARED("coordinator-port"),
    {"ha", "URL", "zookeeper://host:port[,host:port]/path the coordinators lead on: connect to the leader found there (and follow it), not to --coordinator-host/--coordinator-port", 0, 0, 0, false},
    {"slots", "N", "subtask slots this worker offers", 1, 1024, 1, false},
    {"id", "NAME", "this worker's name (default worker-<pid>)", 0, 0, 0, false},
    {"host", "ADDR", "address for this worker's data and HTTP ports (default 127.0.0.1)", 0, 0, 0, false},
    CK_CLI_SHARED("http-port"),
    CK_CLI_SHARED("max-memory"),
    CK_CLI_SHARED("capture-dir"),
    CK_CLI_SHARED("capture-records"),
    CK_CLI_SHARED("log-level"),
    {NULL, NULL, NULL, 0, 0, 0, false},
};

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) {
  (void)sig;
  stop_flag = 1;
}

static int worker_main(int argc, char **argv) {
  const ck_cli_cmd_t *cmd = &ck_cli_cmd_worker;
  ck_cli_args_t args;
  int rc = ck_cli_parse(cmd, argc, argv, &args);
  if (rc) return rc < 0 ? 0 : rc;
  if (args.npositional) {
    fprintf(stderr, "clink worker: unexpected argument '%s'\n", args.positional[0]);
    return 2;
  }
  ck_worker_opts_t o = {.coordinator_port = 6123, .slots = 1, .http_port = -1};
  const char *v;
  o.coordinator_host = ck_cli_get(cmd, &args, "coordinator-host");
  o.ha_url = ck_cli_get(cmd, &args, "ha");
  if (!o.coordinator_host) o.coordinator_host = "127.0.0.1";
  long co_port;
  if (ck_cli_int(cmd, &args, "coordinator-port", &co_port)) return 2;
  o.coordinator_port = (int)co_port;
  if ((v = ck_cli_get(cmd, &args, "http-port")) &&
      ck_cli_port("worker", "http-port", v, true, &o.http_port))
    return 2;
  long slots;
  if (ck_cli_int(cmd, &args, "slots", &slots)) return 2;
  o.slots = (int)slots;
  o.id = ck_cli_get(cmd, &args, "id");
  o.host = ck_cli_get(cmd, &args, "host");
  if (ck_cli_max_memory(cmd, &args, &o.max_memory)) return 2;
  long capture_records;
  if (ck_cli_int(cmd, &args, "capture-records", &capture_records)) return 2;
  o.capture_dir = ck_cli_get(cmd, &args, "capture-dir");
  o.capture_records = capture_records;
  o.token = getenv("CLINK_AUTH_TOKEN");
  if (ck_cli_apply_log_level(cmd, &args)) return 2;
  ck_cli_on_stop(on_signal);
  ck_error_t err;
  ck_error_clear(&err);
  if (ck_worker_main(&o, &stop_flag, &err)) {
    fprintf(stderr, "clink worker: %s\n", err.message);
    return 1;
  }
  return 0;
}

const ck_cli_cmd_t ck_cli_cmd_worker = {
    "worker", "run a cluster worker that runs the subtasks a coordinator deploys",
    "[--coordinator-host HOST] [--coordinator-port PORT] [--slots N] [--id NAME]", opts,
    worker_main};
