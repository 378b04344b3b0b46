/*
 * DESIGN: `clink coordinator` — runs the cluster's control plane (cluster/coordinator.h) until
 * SIGINT/SIGTERM.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "cli/cli.h"
#include "cli/cluster_client.h"
#include "cluster/coordinator.h"
#include "cluster/http.h"
#include "cluster/opmetrics.h"

static const ck_cli_opt_t opts[] = {
    {"host", "ADDR", "address to listen on (default 127.0.0.1)", 0, 0, 0, false},
    {"port", "PORT", "control port workers and `clink run` connect to (default 6123)", 0, 0, 0, false},
    {"http-port", "PORT", "REST API port (default 8081; 0 picks a free one)", 0, 0, 0, false},
    {"checkpoint-dir", "DIR", "where jobs checkpoint (DIR/job-<id>), reachable by every worker (required)", 0, 0, 0, false},
    {"ha-dir", "DIR", "keep a leader lock, the epoch and job manifests here; a restarted coordinator recovers its jobs", 0, 0, 0, false},
    {"ha", "URL", "zookeeper://host:port[,host:port]/path: leader election, epoch and job manifests on ZooKeeper, for coordinators on several hosts (the first to lead; the others stand by)", 0, 0, 0, false},
    {"ha-session-timeout-ms", "MS", "the ZooKeeper session timeout: a leader unreachable this long is deposed and a standby takes over", 2000, 600000, 10000, false},
    CK_CLI_SHARED("checkpoint-interval-ms"),
    CK_CLI_SHARED("checkpoint-timeout-ms"),
    CK_CLI_SHARED("checkpoints-retained"),
    CK_CLI_SHARED("max-restarts"),
    CK_CLI_SHARED("log-level"),
    {"routes-markdown", NULL, "print the REST API's routes as a Markdown table (docs/cluster.md) and exit", 0, 0, 0, false},
    {"metrics-markdown", NULL, "print the operators' metrics as a Markdown table (docs/cluster.md) and exit", 0, 0, 0, false},
    {NULL, NULL, NULL, 0, 0, 0, false},
};

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) {
  (void)sig;
  stop_flag = 1;
}

static int coordinator_main(int argc, char **argv) {
  const ck_cli_cmd_t *cmd = &ck_cli_cmd_coordinator;
  ck_cli_args_t args;
  int rc = ck_cli_parse(cmd, argc, argv, &args);
  if (rc) return rc < 0 ? 0 : rc;
  if (args.npositional) {
    fprintf(stderr, "clink coordinator: unexpected argument '%s'\n", args.positional[0]);
    return 2;
  }
  if (ck_cli_flag(cmd, &args, "metrics-markdown")) {
    ck_buf_t md;
    ck_buf_init(&md);
    ck_opmetrics_markdown(&md);
    fputs(md.data, stdout);
    ck_buf_fini(&md);
    return 0;
  }
  if (ck_cli_flag(cmd, &args, "routes-markdown")) {
    ck_buf_t md;
    ck_buf_init(&md);
    ck_http_routes_markdown(ck_coordinator_routes, ck_coordinator_nroutes, &md);
    fputs(md.data, stdout);
    ck_buf_fini(&md);
    return 0;
  }
  ck_coordinator_opts_t o = {.port = 6123, .http_port = 8081};
  const char *v;
  o.host = ck_cli_get(cmd, &args, "host");
  if ((v = ck_cli_get(cmd, &args, "port")) && ck_cli_port("coordinator", "port", v, false, &o.port))
    return 2;
  if ((v = ck_cli_get(cmd, &args, "http-port")) &&
      ck_cli_port("coordinator", "http-port", v, true, &o.http_port))
    return 2;
  o.checkpoint_dir = ck_cli_get(cmd, &args, "checkpoint-dir");
  if (!o.checkpoint_dir) {
    fprintf(stderr, "clink coordinator: --checkpoint-dir is required (a directory every worker "
                    "can reach)\n");
    return 2;
  }
  o.ha_dir = ck_cli_get(cmd, &args, "ha-dir");
  o.ha_url = ck_cli_get(cmd, &args, "ha");
  if (o.ha_dir && o.ha_url) {
    fprintf(stderr, "clink coordinator: give --ha-dir (one host) or --ha (ZooKeeper), not "
                    "both\n");
    return 2;
  }
  long session_ms = 0;
  if (ck_cli_int(cmd, &args, "ha-session-timeout-ms", &session_ms)) return 2;
  o.ha_session_ms = (int)session_ms;
  long ms = 0, timeout_ms = 0, retained = 0, restarts = 0;
  if (ck_cli_int(cmd, &args, "checkpoint-interval-ms", &ms) ||
      ck_cli_int(cmd, &args, "checkpoint-timeout-ms", &timeout_ms) ||
      ck_cli_int(cmd, &args, "checkpoints-retained", &retained) ||
      ck_cli_int(cmd, &args, "max-restarts", &restarts) ||
      ck_cli_apply_log_level(cmd, &args))
    return 2;
  o.checkpoint_interval_ms = ms;
  o.checkpoint_timeout_ms = timeout_ms;
  o.checkpoints_retained = (int)retained;
  o.max_restarts = (int)restarts;
  o.auth_token = getenv("CLINK_AUTH_TOKEN");
  ck_cli_on_stop(on_signal);
  ck_error_t err;
  ck_error_clear(&err);
  if (ck_coordinator_main(&o, &stop_flag, &err)) {
    fprintf(stderr, "clink coordinator: %s\n", err.message);
    return 1;
  }
  return 0;
}

const ck_cli_cmd_t ck_cli_cmd_coordinator = {
    "coordinator", "run a cluster coordinator (control plane, checkpoints, REST API)",
    "--checkpoint-dir DIR [options]", opts, coordinator_main};
