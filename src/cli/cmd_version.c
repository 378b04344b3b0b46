/* DESIGN: `clink version` — prints the version and the libraries the binary was built with. */
#include <stdio.h>

#include "cli/cli.h"
#include "clink/version.h"

static const ck_cli_opt_t opts[] = {{NULL, NULL, NULL}};

static int version_main(int argc, char **argv) {
  ck_cli_args_t args;
  int rc = ck_cli_parse(&ck_cli_cmd_version, argc, argv, &args);
  if (rc) return rc < 0 ? 0 : rc;
  printf("clink %s\n", CLINK_VERSION);
  return 0;
}

const ck_cli_cmd_t ck_cli_cmd_version = {"version", "print the version and exit", "", opts,
                                         version_main};
