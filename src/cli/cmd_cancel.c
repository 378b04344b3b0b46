/*
 * DESIGN: `clink cancel ID` — asks the coordinator to cancel a job.
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/buf.h"
#include "cli/cli.h"
#include "cli/cluster_client.h"
#include "cluster/proto.h"

static const ck_cli_opt_t opts[] = {
    {"coordinator-host", "HOST", "the coordinator's address (default 127.0.0.1)"},
    CK_CLI_SHARED("coordinator-port"),
    {NULL, NULL, NULL},
};

static int cancel_main(int argc, char **argv) {
  const ck_cli_cmd_t *cmd = &ck_cli_cmd_cancel;
  ck_cli_args_t args;
  int rc = ck_cli_parse(cmd, argc, argv, &args);
  if (rc) return rc < 0 ? 0 : rc;
  char *end = NULL;
  long long id = args.npositional == 1 ? strtoll(args.positional[0], &end, 10) : -1;
  if (args.npositional != 1 || !end || *end || id < 1) {
    fprintf(stderr, "clink cancel: give one job id (a positive number)\nusage: clink cancel %s\n",
            cmd->usage);
    return 2;
  }
  const char *host = ck_cli_get(cmd, &args, "coordinator-host"), *v;
  int port = 6123;
  if ((v = ck_cli_get(cmd, &args, "coordinator-port")) && ck_cli_port("cancel", "coordinator-port", v, false, &port))
    return 2;
  ck_buf_t p, text;
  ck_buf_init(&p);
  ck_buf_init(&text);
  ck_proto_put_i64(&p, id);
  int64_t got;
  rc = ck_cli_cluster_call(host ? host : "127.0.0.1", port, CK_PROTO_CANCEL_JOB, &p, &got, &text);
  if (rc) fprintf(stderr, "clink cancel: %s\n", text.data ? text.data : "");
  else printf("job %lld: %s\n", id, text.data);
  ck_buf_fini(&p);
  ck_buf_fini(&text);
  return rc ? 1 : 0;
}

const ck_cli_cmd_t ck_cli_cmd_cancel = {
    "cancel", "cancel a job on a cluster coordinator",
    "ID [--coordinator-host HOST] [--coordinator-port PORT]", opts, cancel_main};
