/*
 * DESIGN: `clink list` — the coordinator's jobs, one line each (or the JSON with --json).
 */
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "cli/cli.h"
#include "cli/cluster_client.h"
#include "cluster/proto.h"

static const ck_cli_opt_t opts[] = {
    {"coordinator-host", "HOST", "the coordinator's address (default 127.0.0.1)"},
    CK_CLI_SHARED("coordinator-port"),
    {"json", NULL, "print the coordinator's JSON answer as it is"},
    {NULL, NULL, NULL},
};

/* Prints "id  status  name" per job from the {"jobs":[…]} answer. */
static void print_table(const char *json) {
  printf("%-6s %-11s %-8s %s\n", "ID", "STATUS", "RESTARTS", "NAME");
  const char *p = json;
  while ((p = strstr(p, "{\"id\":"))) {
    long long id = 0;
    char status[32] = "?", name[256] = "?";
    int restarts = 0;
    sscanf(p, "{\"id\":%lld", &id);
    const char *q;
    if ((q = strstr(p, "\"name\":\""))) sscanf(q + 8, "%255[^\"]", name);
    if ((q = strstr(p, "\"status\":\""))) sscanf(q + 10, "%31[^\"]", status);
    if ((q = strstr(p, "\"restarts\":"))) sscanf(q + 11, "%d", &restarts);
    printf("%-6lld %-11s %-8d %s\n", id, status, restarts, name);
    p++;
  }
}

static int list_main(int argc, char **argv) {
  const ck_cli_cmd_t *cmd = &ck_cli_cmd_list;
  ck_cli_args_t args;
  int rc = ck_cli_parse(cmd, argc, argv, &args);
  if (rc) return rc < 0 ? 0 : rc;
  const char *host = ck_cli_get(cmd, &args, "coordinator-host"), *v;
  int port = 6123;
  if ((v = ck_cli_get(cmd, &args, "coordinator-port")) && ck_cli_port("list", "coordinator-port", v, false, &port))
    return 2;
  ck_buf_t text;
  ck_buf_init(&text);
  int64_t n;
  rc = ck_cli_cluster_call(host ? host : "127.0.0.1", port, CK_PROTO_LIST, NULL, &n, &text);
  if (rc) {
    fprintf(stderr, "clink list: %s\n", text.data ? text.data : "");
    ck_buf_fini(&text);
    return 1;
  }
  if (ck_cli_flag(cmd, &args, "json")) printf("%s\n", text.data);
  else print_table(text.data);
  ck_buf_fini(&text);
  return 0;
}

const ck_cli_cmd_t ck_cli_cmd_list = {"list", "list the jobs of a cluster coordinator",
                                      "[--coordinator-host HOST] [--coordinator-port PORT]", opts,
                                      list_main};
