/*
 * DESIGN: the PostgreSQL sink's pure pieces, exposed for unit tests (connectors/postgres.c is
 * the sink itself, registered as ck_postgres_connector in connectors.h): the COPY text
 * encoding of a row, the rule for which PostgreSQL column can hold which SQL type without
 * losing information, the password-free description of a connection string, and the names
 * of the sink's prepared transactions. No state, no connection; any thread.
 */
#ifndef CK_CONNECTORS_POSTGRES_H
#define CK_CONNECTORS_POSTGRES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "runtime/batch.h"

/* Appends row i of batch as one line of COPY ... FROM STDIN (text format): columns separated
 * by tabs, NULL as \N, backslash, tab, line feed and carriage return escaped, booleans t/f,
 * floats with enough digits (9, 17) to read back exactly, decimals at their scale, TIMESTAMP
 * as UTC "YYYY-MM-DD HH:MM:SS.mmm" (" BC" before year 1; with "+00" when tz[c] is set, for a
 * timestamptz column). tz may be NULL. Ends with '\n'. */
void ck_pg_copy_row(const ck_batch_t *batch, size_t i, const uint8_t *tz, ck_buf_t *out);

/* Whether a column of PostgreSQL base type `typname` (pg_type.typname: int4, numeric, …)
 * with type modifier `typmod` (-1: none) holds every value of `type` exactly. */
bool ck_pg_type_fits(ck_type_t type, const char *typname, int typmod);

/* A description of where dsn points, without its password: "host:port/dbname as user" (parts
 * the string does not give read "default"). False, and nothing appended, when dsn is neither a
 * key=value connection string nor a URI. */
bool ck_pg_describe_dsn(const char *dsn, ck_buf_t *out);

/* The prefix every prepared transaction of one sink subtask starts with,
 * "clink_<16 hex digits>_<subtask>_": the digits hash the job's name, both table names and
 * `instance` (0 for the first sink node of the job writing this SQL table with this
 * PostgreSQL table, 1 for a second INSERT INTO the same table, …), so a rerun of the same job
 * finds its own and two sink nodes never share a name. job_prefix (may be NULL) gets
 * "clink_<hex>_", the prefix of every subtask of that node. */
void ck_pg_gid_prefix(const char *job_name, const char *sql_table, const char *pg_table,
                      int instance, int subtask, char *out, size_t n, char *job_prefix,
                      size_t jn);
/* The checkpoint id of a transaction named prefix + digits; false for any other name. */
bool ck_pg_gid_ckpt(const char *gid, const char *prefix, int64_t *ckpt);

#endif
