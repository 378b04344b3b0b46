/*
 * DESIGN: the CLI's side of the control protocol — `clink run --coordinator-host`, `clink list`
 * and `clink cancel` send one request frame to the coordinator's control port and print its
 * REPLY. Also the shared parsing of --coordinator-host / --coordinator-port.
 */
#ifndef CK_CLI_CLUSTER_CLIENT_H
#define CK_CLI_CLUSTER_CLIENT_H

#include <stdint.h>

#include "base/buf.h"

/* Parses a port option value (1..65535, or 0 when allow_zero); prints the error (exit 2). */
int ck_cli_port(const char *cmd, const char *opt, const char *v, bool allow_zero, int *out);

/* Sends one request and waits for the REPLY: returns the coordinator's rc (0 ok, negative
 * error) with its value and text, or a connection error (text says why). The request's
 * first field, the token, is added here from CLINK_AUTH_TOKEN: payload holds the rest. */
int ck_cli_cluster_call(const char *host, int port, int type, const ck_buf_t *payload,
                        int64_t *value, ck_buf_t *text);

/* `clink run FILE --coordinator-host …`: submits the script (the coordinator plans it, and
 * refuses bad SQL with its position); prints "submitted job N" and logs the job's delivery
 * guarantee. capture_dir, capture_records: the job's flight recorder on its workers (NULL, 0:
 * the workers' own --capture-dir and --capture-records). Returns the exit status (0, or 1
 * after printing why). */
int ck_cli_submit(const char *host, int port, const char *name, const char *sql,
                  int parallelism, const char *capture_dir, int64_t capture_records);

#endif
