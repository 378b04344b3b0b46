/*
 * DESIGN: connector='postgres' — a sink into an existing PostgreSQL table, through libpq.
 *
 * Each sink subtask holds one connection. Rows are encoded as COPY text (postgres.h) into a
 * buffer and sent with one `COPY <table> (<columns>) FROM STDIN` when `batch_rows` rows are
 * waiting, at every barrier and at finish.
 *
 * Open: connects (dsn, with the password from `password_env` when given; a few attempts with
 * backoff), resolves `table` with to_regclass (search_path applies; it must be a table),
 * and matches the sink's columns to the table's by name (exact, then case-insensitive). Each
 * must exist and hold its SQL type without losing information (ck_pg_type_fits; the error
 * names both types); a table column the sink does not write must be nullable or have a
 * default. The password is never printed: the dsn itself never appears in a message (nor
 * libpq's parse errors, which may quote it); errors and logs name the target as
 * "host:port/dbname as user"; a password of 8 characters or more is also masked wherever it
 * shows up in a libpq or server message (see scrub).
 *
 * delivery_guarantee = 'at_least_once' (default): every COPY commits on its own
 * (autocommit); prepare flushes. A restart writes again what followed the last checkpoint.
 *
 * delivery_guarantee = 'exactly_once': the rows of one checkpoint interval go into one
 * transaction (BEGIN at its first row, then COPY per batch_rows), which prepare(N) turns into
 * the prepared transaction 'clink_<jobhash>_<subtask>_<N>' (PREPARE TRANSACTION survives a
 * crash of either side). jobhash hashes the job's name (the script's real path), both table
 * names and an instance number telling apart two sink nodes that write the same table (see
 * connectors/sink_live.h), so a rerun finds its own; the prefix is also kept in the sink's
 * state, and a restored sink adopts the prefix its checkpoint names.
 *   commit(N)    COMMIT PREPARED every own transaction with id <= N, oldest first (found in
 *                pg_prepared_xacts by prefix, in this database).
 *   recover(R)   the same for R, and ROLLBACK PREPARED every own transaction above R: a dead
 *                incarnation prepared it for a checkpoint that never completed.
 *   open(fresh)  ROLLBACK PREPARED every own transaction (orphans of an abandoned lineage);
 *                subtask 0 also those of subtasks the job no longer has.
 *   finish       flushes; a transaction still open there (only a job without checkpoints has
 *                one) is committed directly.
 * An empty interval prepares nothing. The server needs max_prepared_transactions > 0 (checked
 * at open). Two jobs with the same script path writing the same table would take each
 * other's transactions for their own: a job is identified by its script and its tables.
 *
 * Update streams (row kinds) are refused at the first batch: upserts are not supported yet.
 *
 * Sink state (version 1): u8 version, u8 mode (0 at least once, 1 exactly once); exactly
 * once adds uvarint prefix length, the prefix, uvarint N, u8 whether N prepared a transaction.
 *
 * Threads: each instance belongs to one subtask's thread; libpq connections are not shared.
 */
#include "connectors/postgres.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/time.h"
#include "checkpoint/trace.h"
#include "connectors/connectors.h"
#include "connectors/format.h"
#include "connectors/sink_live.h"
#include "connectors/util.h"
#include "runtime/connector.h"

#define PG_STATE_VERSION 1
#define PG_SEND_BYTES ((size_t)8 << 20) /* send before batch_rows when the buffer is this big */
#define PG_COPY_CHUNK ((size_t)1 << 20)
#define PG_CONNECT_ATTEMPTS 4
#define PG_GID_MAX 128
#define PG_MASK_MIN 8 /* shortest password masked inside messages (see scrub) */

static const ck_opt_def_t pg_sink_options[] = {
    {"dsn", CK_OPT_STRING, NULL, NULL, true,
     "libpq connection string ('host=127.0.0.1 port=5432 dbname=app user=clink') or URI "
     "('postgresql://clink@127.0.0.1:5432/app'); a password in it is never printed, but prefer "
     "password_env"},
    {"table", CK_OPT_STRING, NULL, NULL, true,
     "the table to write, optionally schema-qualified ('public.readings'); it must exist. The "
     "sink's columns are matched to its columns by name and each must hold its SQL type "
     "without loss; columns the sink does not write must be nullable or have a default"},
    {"password_env", CK_OPT_STRING, NULL, NULL, false,
     "name of an environment variable holding the password (it overrides one in dsn)"},
    {"batch_rows", CK_OPT_INT, "10000", NULL, false,
     "rows buffered before they are sent with one COPY. At least once each COPY commits on "
     "its own; exactly once they join the checkpoint interval's transaction, prepared at the "
     "barrier (PREPARE TRANSACTION) and committed when the checkpoint completes"},
    {NULL, 0, NULL, NULL, false, NULL},
};

/* ============================================================ pure helpers ====== */

static void put_copy_text(ck_buf_t *out, const char *s, size_t n) {
  size_t start = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i], esc;
    switch (c) {
      case '\\': esc = '\\'; break;
      case '\t': esc = 't'; break;
      case '\n': esc = 'n'; break;
      case '\r': esc = 'r'; break;
      default: continue;
    }
    ck_buf_append(out, s + start, i - start);
    ck_buf_putc(out, '\\');
    ck_buf_putc(out, esc);
    start = i + 1;
  }
  ck_buf_append(out, s + start, n - start);
}

/* A float as PostgreSQL reads it back to the same value: 9 (float4) or 17 (float8)
 * significant digits always round-trip, with one snprintf — the shortest form is not needed,
 * since the server stores the binary value and prints it its own way. */
static void put_float(ck_buf_t *out, double d, int digits) {
  if (isnan(d)) {
    ck_buf_puts(out, "NaN");
  } else if (isinf(d)) {
    ck_buf_puts(out, d > 0 ? "Infinity" : "-Infinity");
  } else {
    char tmp[40];
    int n = snprintf(tmp, sizeof tmp, "%.*g", digits, d);
    ck_buf_append(out, tmp, (size_t)n);
  }
}

/* 0001-01-01 00:00:00 UTC in epoch milliseconds: before it, PostgreSQL wants " BC". */
#define PG_YEAR1_MS INT64_C(-62135596800000)

static void put_timestamp(ck_buf_t *out, int64_t ms, bool tz) {
  if (ms >= PG_YEAR1_MS) {
    ck_timestamp_format(ms, out);
  } else { /* proleptic year y <= 0 is (1 - y) BC */
    ck_buf_t tmp;
    ck_buf_init(&tmp);
    ck_timestamp_format(ms, &tmp);
    char *rest;
    long long y = strtoll(tmp.data, &rest, 10);
    ck_buf_printf(out, "%04lld%s BC", 1 - y, rest);
    ck_buf_fini(&tmp);
  }
  if (tz) ck_buf_puts(out, "+00");
}

/* A DATE as PostgreSQL's date reads it ("2024-01-02", " BC" before year 1). */
static void put_date(ck_buf_t *out, int64_t ms) {
  if (ms >= PG_YEAR1_MS) {
    ck_date_format(ms, out);
    return;
  }
  ck_buf_t tmp;
  ck_buf_init(&tmp);
  ck_date_format(ms, &tmp);
  char *rest;
  long long y = strtoll(tmp.data, &rest, 10);
  ck_buf_printf(out, "%04lld%s BC", 1 - y, rest);
  ck_buf_fini(&tmp);
}

void ck_pg_copy_row(const ck_batch_t *batch, size_t i, const uint8_t *tz, ck_buf_t *out) {
  for (int c = 0; c < batch->ncols; c++) {
    const ck_col_t *col = &batch->cols[c];
    if (c) ck_buf_putc(out, '\t');
    if (!ck_col_valid(col, i)) {
      ck_buf_append(out, "\\N", 2);
      continue;
    }
    switch (col->type.id) {
      case CK_T_BOOL: ck_buf_putc(out, ck_col_bool(col, i) ? 't' : 'f'); break;
      case CK_T_INT32: ck_format_put_i64(out, ck_col_i32(col, i)); break;
      case CK_T_INT64: ck_format_put_i64(out, ck_col_i64(col, i)); break;
      case CK_T_FLOAT32: put_float(out, ck_col_f32(col, i), 9); break;
      case CK_T_FLOAT64: put_float(out, ck_col_f64(col, i), 17); break;
      case CK_T_DECIMAL: ck_decimal_format(ck_col_dec(col, i), col->type.scale, out); break;
      case CK_T_STRING: {
        size_t n;
        const char *s = ck_col_str(col, i, &n);
        put_copy_text(out, s, n);
        break;
      }
      case CK_T_TIMESTAMP:
        if (ck_type_is_date(col->type)) put_date(out, ck_col_i64(col, i));
        else if (ck_type_is_time(col->type)) ck_time_format(ck_col_i64(col, i), 3, out);
        else put_timestamp(out, ck_col_i64(col, i), tz && tz[c]);
        break;
      default: ck_buf_append(out, "\\N", 2); break;
    }
  }
  ck_buf_putc(out, '\n');
}

/* numeric(P, S) from its typmod; false for plain numeric. */
static bool numeric_typmod(int typmod, int *precision, int *scale) {
  if (typmod < 4) return false;
  int t = typmod - 4;
  *precision = (t >> 16) & 0xffff;
  *scale = ((t & 0x7ff) ^ 1024) - 1024; /* PostgreSQL 15 allows a negative scale */
  return true;
}

/* numeric column holds integers of `digits` digits exactly */
static bool numeric_holds(int typmod, int int_digits, int frac_digits) {
  int p, s;
  if (!numeric_typmod(typmod, &p, &s)) return true;
  return s >= frac_digits && p - s >= int_digits;
}

bool ck_pg_type_fits(ck_type_t type, const char *typname, int typmod) {
  const char *t = typname;
  switch (type.id) {
    case CK_T_BOOL: return !strcmp(t, "bool");
    case CK_T_INT32:
      return !strcmp(t, "int4") || !strcmp(t, "int8") || !strcmp(t, "float8") ||
             (!strcmp(t, "numeric") && numeric_holds(typmod, 10, 0));
    case CK_T_INT64:
      return !strcmp(t, "int8") || (!strcmp(t, "numeric") && numeric_holds(typmod, 19, 0));
    case CK_T_FLOAT32: return !strcmp(t, "float4") || !strcmp(t, "float8");
    case CK_T_FLOAT64: return !strcmp(t, "float8");
    case CK_T_DECIMAL:
      return !strcmp(t, "numeric") &&
             numeric_holds(typmod, type.precision - type.scale, type.scale);
    case CK_T_STRING: return !strcmp(t, "text") || !strcmp(t, "varchar") || !strcmp(t, "citext");
    case CK_T_TIMESTAMP:
      if (ck_type_is_date(type)) return !strcmp(t, "date");
      if (ck_type_is_time(type)) { /* time(p) keeps p fraction digits: as many as TIME(p) has */
        int p = type.precision ? type.precision - 1 : 0;
        return !strcmp(t, "time") && (typmod < 0 || typmod >= (p < 3 ? p : 3));
      }
      /* timestamp(p) keeps p fraction digits: milliseconds need 3 */
      return (!strcmp(t, "timestamp") || !strcmp(t, "timestamptz")) && (typmod < 0 || typmod >= 3);
    default: return false;
  }
}

bool ck_pg_describe_dsn(const char *dsn, ck_buf_t *out) {
  char *perr = NULL;
  PQconninfoOption *opts = PQconninfoParse(dsn ? dsn : "", &perr);
  PQfreemem(perr); /* may quote the string, password included: never shown */
  if (!opts) return false;
  const char *host = NULL, *port = NULL, *db = NULL, *user = NULL, *hostaddr = NULL;
  for (PQconninfoOption *o = opts; o->keyword; o++) {
    if (!o->val || !*o->val) continue;
    if (!strcmp(o->keyword, "host")) host = o->val;
    else if (!strcmp(o->keyword, "hostaddr")) hostaddr = o->val;
    else if (!strcmp(o->keyword, "port")) port = o->val;
    else if (!strcmp(o->keyword, "dbname")) db = o->val;
    else if (!strcmp(o->keyword, "user")) user = o->val;
  }
  ck_buf_printf(out, "%s:%s/%s", host ? host : hostaddr ? hostaddr : "default",
                port ? port : "default", db ? db : "default");
  if (user) ck_buf_printf(out, " as %s", user);
  PQconninfoFree(opts);
  return true;
}

/* The identity of a sink node's output: job, SQL table, PostgreSQL table (and instance). */
static uint64_t sink_identity(const char *job_name, const char *sql_table, const char *pg_table,
                              int instance) {
  ck_buf_t id;
  ck_buf_init(&id);
  ck_buf_puts(&id, job_name ? job_name : "");
  ck_buf_putc(&id, '\n');
  ck_buf_puts(&id, sql_table ? sql_table : "");
  ck_buf_putc(&id, '\n');
  ck_buf_puts(&id, pg_table ? pg_table : "");
  if (instance > 0) ck_buf_printf(&id, "\n#%d", instance); /* the first keeps the plain name */
  uint64_t h = ck_hash64(id.data, id.len, UINT64_C(0x636c696e6b2d7067)); /* "clink-pg" */
  ck_buf_fini(&id);
  return h;
}

void ck_pg_gid_prefix(const char *job_name, const char *sql_table, const char *pg_table,
                      int instance, int subtask, char *out, size_t n, char *job_prefix,
                      size_t jn) {
  uint64_t h = sink_identity(job_name, sql_table, pg_table, instance);
  snprintf(out, n, "clink_%016llx_%d_", (unsigned long long)h, subtask);
  if (job_prefix) snprintf(job_prefix, jn, "clink_%016llx_", (unsigned long long)h);
}

/* Digits only, no sign, no overflow. */
static bool parse_id(const char *s, int64_t *out) {
  if (!*s) return false;
  int64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9' || v > (INT64_MAX - 9) / 10) return false;
    v = v * 10 + (*s - '0');
  }
  *out = v;
  return true;
}

bool ck_pg_gid_ckpt(const char *gid, const char *prefix, int64_t *ckpt) {
  size_t n = strlen(prefix);
  return strncmp(gid, prefix, n) == 0 && parse_id(gid + n, ckpt);
}

/* ==================================================================== the sink ====== */

typedef struct pg_sink {
  PGconn *conn;
  const ck_conn_ctx_t *ctx;
  char *target;        /* "host:port/db as user", no password */
  char *password;      /* to scrub from messages; NULL when none */
  char *relname;       /* the table as regclass prints it (quoted, qualified if needed) */
  char *copy_sql;
  uint8_t *tz;         /* per sink column: the table column is timestamptz */
  bool eos;
  int64_t batch_rows;
  ck_buf_t buf;        /* COPY text not yet sent */
  int64_t buf_rows;
  int64_t rows_sent;
  /* exactly once */
  bool in_txn;         /* BEGIN sent for the current interval */
  char prefix[96];     /* this subtask's gids */
  char job_prefix[64]; /* every subtask's */
  int64_t *prepared;   /* ids prepared by this incarnation and not yet committed, ascending */
  int nprepared, prepared_cap;
  uint64_t identity;   /* live registry entry, when instance >= 0 */
  int instance;
  /* the interval evidence's account (pg_account) */
  char *dest;          /* the destination as open found it: JSON object members */
  int64_t copies;      /* COPY statements that succeeded, in all */
  int64_t acct_ckpt;   /* the interval the last prepare closed (0: none yet) */
  int64_t acct_rows, acct_copies; /* rows and COPYs of that interval */
  int64_t rows_mark, copies_mark; /* rows_sent and copies when it began */
  bool acct_prepared;  /* exactly once: it prepared a transaction (an empty one does not) */
  int64_t recovered_ckpt; /* recover(): the checkpoint, and what it resolved */
  int recovered_committed, recovered_rolled;
} pg_sink_t;

/* Copies a libpq message without its trailing newline and with the password masked. Neither
 * libpq nor the server ever quotes the password itself, so this is a second line of defence
 * for a password that is also, say, a role's name; one shorter than PG_MASK_MIN is not
 * searched for, since it would mask ordinary words (user 'clink' with password 'clink') and
 * mangle the message without protecting anything. */
static void scrub(const pg_sink_t *pk, const char *msg, char *out, size_t n) {
  snprintf(out, n, "%s", msg ? msg : "");
  size_t len = strlen(out);
  while (len && (out[len - 1] == '\n' || out[len - 1] == ' ')) out[--len] = 0;
  for (char *nl; (nl = strchr(out, '\n'));) *nl = ' ';
  if (pk->password && strlen(pk->password) >= PG_MASK_MIN) {
    size_t pl = strlen(pk->password);
    for (char *at = out, *hit; (hit = strstr(at, pk->password));) {
      memmove(hit + 3, hit + pl, strlen(hit + pl) + 1); /* "***" is never longer than n */
      memcpy(hit, "***", 3);
      at = hit + 3;
    }
  }
}

/* A PostgreSQL failure as a job error: "could not <what> (<target>): <server message>", with
 * the server's detail, SQLSTATE and hint. res may be NULL (connection-level failure). */
static int pg_fail(pg_sink_t *pk, ck_error_t *err, int code, const PGresult *res,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int pg_fail(pg_sink_t *pk, ck_error_t *err, int code, const PGresult *res,
                   const char *fmt, ...) {
  char what[256], msg[512], detail[256] = "", hint[256] = "";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
  if (!primary) primary = res ? PQresultErrorMessage(res) : NULL;
  if (!primary || !*primary) primary = pk->conn ? PQerrorMessage(pk->conn) : "no connection";
  scrub(pk, primary, msg, sizeof msg);
  const char *sqlstate = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  if (res && PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL))
    scrub(pk, PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL), detail, sizeof detail);
  if (res && PQresultErrorField(res, PG_DIAG_MESSAGE_HINT))
    scrub(pk, PQresultErrorField(res, PG_DIAG_MESSAGE_HINT), hint, sizeof hint);
  bool first = err && !err->code;
  ck_error_set(err, code, "could not %s (%s, table '%s'): %s", what, pk->target,
               pk->ctx->table ? pk->ctx->table : "?", msg);
  if (first) {
    snprintf(err->origin, sizeof err->origin, "postgres");
    if (sqlstate || *detail)
      ck_error_detail(err, "%s%s%s%s", detail, *detail && sqlstate ? " " : "",
                      sqlstate ? "SQLSTATE " : "", sqlstate ? sqlstate : "");
    if (*hint) ck_error_hint(err, "%s", hint);
    err->retriable = (sqlstate && !strncmp(sqlstate, "08", 2)) ||
                     (pk->conn && PQstatus(pk->conn) == CONNECTION_BAD);
  }
  return code;
}

/* Runs one statement; *out gets the result when the caller wants it (PQclear it). */
static int pg_exec(pg_sink_t *pk, const char *sql, int nparams, const char *const *params,
                   PGresult **out, ck_error_t *err, const char *what) {
  PGresult *res = nparams ? PQexecParams(pk->conn, sql, nparams, NULL, params, NULL, NULL, 0)
                          : PQexec(pk->conn, sql);
  ExecStatusType st = PQresultStatus(res);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    int rc = pg_fail(pk, err, CK_EREMOTE, res, "%s", what);
    PQclear(res);
    return rc;
  }
  if (out) *out = res;
  else PQclear(res);
  return 0;
}

static int pg_connect(pg_sink_t *pk, const char *dsn, const char *password, ck_error_t *err) {
  const char *keys[5] = {"dbname", "client_encoding", "fallback_application_name", NULL, NULL};
  const char *vals[5] = {dsn, "UTF8", "clink", NULL, NULL};
  if (password) keys[3] = "password", vals[3] = password;
  int64_t backoff = 250;
  for (int attempt = 1;; attempt++) {
    pk->conn = PQconnectdbParams(keys, vals, 1);
    if (pk->conn && PQstatus(pk->conn) == CONNECTION_OK) break;
    char why[512];
    scrub(pk, pk->conn ? PQerrorMessage(pk->conn) : "out of memory", why, sizeof why);
    if (attempt == PG_CONNECT_ATTEMPTS) {
      bool first = err && !err->code;
      ck_error_set(err, CK_ECONNECT, "could not connect to PostgreSQL at %s (table '%s'): %s",
                   pk->target, pk->ctx->table ? pk->ctx->table : "?", why);
      if (first) {
        snprintf(err->origin, sizeof err->origin, "postgres");
        err->retriable = true;
      }
      return CK_ECONNECT;
    }
    CK_LOG_WARN("sink.postgres", "could not connect to %s (attempt %d of %d, next in %lld ms): %s",
                pk->target, attempt, PG_CONNECT_ATTEMPTS, (long long)backoff, why);
    PQfinish(pk->conn);
    pk->conn = NULL;
    ck_sleep_ms(backoff);
    backoff *= 2;
  }
  /* the description the server agrees with, still without the password */
  ck_buf_t t;
  ck_buf_init(&t);
  const char *host = PQhost(pk->conn);
  ck_buf_printf(&t, "%s:%s/%s as %s", host && *host ? host : "local", PQport(pk->conn),
                PQdb(pk->conn), PQuser(pk->conn));
  char clean[512];
  scrub(pk, t.data, clean, sizeof clean);
  ck_buf_fini(&t);
  ck_free(pk->target);
  pk->target = ck_strdup(clean);
  return 0;
}

/* ---- the table ---- */

typedef struct pg_col {
  const char *name, *type_text, *typname;
  int typmod;
  bool notnull, has_default, generated;
  int used_by; /* sink column writing it, -1 none */
} pg_col_t;

static int match_columns(pg_sink_t *pk, ck_error_t *err) {
  const ck_schema_t *schema = pk->ctx->schema;
  const char *tname = ck_options_get(pk->ctx->options, "table");
  const char *params[1] = {tname};
  PGresult *res = NULL;
  int rc = pg_exec(pk, "SELECT c.oid::int8::text, c.oid::regclass::text, c.relkind::text "
                       "FROM pg_class c WHERE c.oid = to_regclass($1)",
                   1, params, &res, err, "look up the target table");
  if (rc) return rc;
  if (PQntuples(res) == 0) {
    PQclear(res);
    ck_error_set(err, CK_ENOTFOUND, "table '%s' does not exist in PostgreSQL database %s "
                 "(option 'table' of sink table '%s')", tname, pk->target, pk->ctx->table);
    ck_error_hint(err, "create it first: the sink writes into an existing table, matching "
                       "columns by name");
    return CK_ENOTFOUND;
  }
  char oid[32];
  snprintf(oid, sizeof oid, "%s", PQgetvalue(res, 0, 0));
  pk->relname = ck_strdup(PQgetvalue(res, 0, 1));
  char relkind = PQgetvalue(res, 0, 2)[0];
  PQclear(res);
  if (relkind != 'r' && relkind != 'p') {
    ck_error_set(err, CK_EUNSUPPORTED, "'%s' in PostgreSQL database %s is not a table (sink "
                 "table '%s')", pk->relname, pk->target, pk->ctx->table);
    return CK_EUNSUPPORTED;
  }
  const char *cparams[1] = {oid};
  rc = pg_exec(pk,
               "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), bt.typname::text, "
               "  (CASE WHEN t.typtype = 'd' THEN t.typtypmod ELSE a.atttypmod END)::int4::text, "
               "  a.attnotnull::text, (a.atthasdef OR a.attidentity <> '')::text, "
               "  (a.attgenerated <> '' OR a.attidentity = 'a')::text "
               "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
               "JOIN pg_type bt ON bt.oid = "
               "  CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END "
               "WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped "
               "ORDER BY a.attnum",
               1, cparams, &res, err, "read the columns of the target table");
  if (rc) return rc;
  int n = PQntuples(res);
  pg_col_t *cols = ck_calloc((size_t)(n ? n : 1), sizeof *cols);
  for (int i = 0; i < n; i++) {
    cols[i] = (pg_col_t){PQgetvalue(res, i, 0), PQgetvalue(res, i, 1), PQgetvalue(res, i, 2),
                         atoi(PQgetvalue(res, i, 3)), PQgetvalue(res, i, 4)[0] == 't',
                         PQgetvalue(res, i, 5)[0] == 't', PQgetvalue(res, i, 6)[0] == 't', -1};
  }
  ck_buf_t sql;
  ck_buf_init(&sql);
  ck_buf_printf(&sql, "COPY %s (", pk->relname);
  pk->tz = ck_calloc((size_t)(schema->ncols ? schema->ncols : 1), 1);
  char sqlt[48];
  for (int c = 0; c < schema->ncols && !rc; c++) {
    const char *want = schema->names[c];
    int hit = -1;
    for (int i = 0; i < n && hit < 0; i++)
      if (!strcmp(cols[i].name, want)) hit = i;
    for (int i = 0; i < n && hit < 0; i++)
      if (ck_streq_i(cols[i].name, want)) hit = i;
    ck_type_name(schema->types[c], sqlt, sizeof sqlt);
    if (hit < 0) {
      rc = ck_error_set(err, CK_EBIND, "table %s in PostgreSQL database %s has no column '%s' "
                        "(sink table '%s' declares it)", pk->relname, pk->target, want,
                        pk->ctx->table);
      ck_buf_t names;
      ck_buf_init(&names);
      for (int i = 0; i < n; i++) ck_buf_printf(&names, "%s%s", i ? ", " : "", cols[i].name);
      ck_error_hint(err, "its columns are: %s", names.len ? names.data : "(none)");
      ck_buf_fini(&names);
    } else if (cols[hit].used_by >= 0) {
      rc = ck_error_set(err, CK_EBIND, "sink table '%s' writes column '%s' of %s twice ('%s' "
                        "and '%s')", pk->ctx->table, cols[hit].name, pk->relname,
                        schema->names[cols[hit].used_by], want);
    } else if (cols[hit].generated) {
      rc = ck_error_set(err, CK_EBIND, "column '%s' of %s is generated by PostgreSQL and cannot "
                        "be written (sink table '%s')", cols[hit].name, pk->relname,
                        pk->ctx->table);
    } else if (!ck_pg_type_fits(schema->types[c], cols[hit].typname, cols[hit].typmod)) {
      rc = ck_error_set(err, CK_ETYPE, "column '%s' of %s is %s, which cannot hold the %s values "
                        "of sink table '%s' without losing information", cols[hit].name,
                        pk->relname, cols[hit].type_text, sqlt, pk->ctx->table);
      ck_error_hint(err, "change the PostgreSQL column's type, or CAST the value in the query "
                         "and declare the sink column to match");
    } else {
      cols[hit].used_by = c;
      pk->tz[c] = !strcmp(cols[hit].typname, "timestamptz");
      char *id = PQescapeIdentifier(pk->conn, cols[hit].name, strlen(cols[hit].name));
      ck_buf_printf(&sql, "%s%s", c ? ", " : "", id ? id : cols[hit].name);
      PQfreemem(id);
    }
  }
  for (int i = 0; i < n && !rc; i++)
    if (cols[i].used_by < 0 && cols[i].notnull && !cols[i].has_default)
      rc = ck_error_set(err, CK_EBIND, "column '%s' of %s is NOT NULL without a default, and "
                        "sink table '%s' does not write it", cols[i].name, pk->relname,
                        pk->ctx->table);
  ck_buf_puts(&sql, ") FROM STDIN");
  pk->copy_sql = ck_buf_detach(&sql);
  ck_free(cols);
  PQclear(res);
  return rc;
}

/* ---- sending rows ---- */

static int send_rows(pg_sink_t *pk, ck_error_t *err) {
  if (!pk->buf.len) return 0;
  int rc;
  if (pk->eos && !pk->in_txn) {
    if ((rc = pg_exec(pk, "BEGIN", 0, NULL, NULL, err, "begin a transaction"))) return rc;
    pk->in_txn = true;
  }
  PGresult *res = PQexec(pk->conn, pk->copy_sql);
  if (PQresultStatus(res) != PGRES_COPY_IN) {
    rc = pg_fail(pk, err, CK_EREMOTE, res, "start writing rows into %s", pk->relname);
    PQclear(res);
    return rc;
  }
  PQclear(res);
  for (size_t off = 0; off < pk->buf.len;) {
    size_t n = pk->buf.len - off < PG_COPY_CHUNK ? pk->buf.len - off : PG_COPY_CHUNK;
    if (PQputCopyData(pk->conn, pk->buf.data + off, (int)n) != 1)
      return pg_fail(pk, err, CK_EREMOTE, NULL, "send rows to %s", pk->relname);
    off += n;
  }
  if (PQputCopyEnd(pk->conn, NULL) != 1)
    return pg_fail(pk, err, CK_EREMOTE, NULL, "send rows to %s", pk->relname);
  rc = 0;
  while ((res = PQgetResult(pk->conn))) {
    if (!rc && PQresultStatus(res) != PGRES_COMMAND_OK)
      rc = pg_fail(pk, err, CK_EREMOTE, res, "write %lld rows into %s", (long long)pk->buf_rows,
                   pk->relname);
    PQclear(res);
  }
  if (rc) return rc;
  pk->rows_sent += pk->buf_rows;
  pk->copies++;
  pk->buf_rows = 0;
  ck_buf_reset(&pk->buf);
  return 0;
}

/* ---- prepared transactions ---- */

typedef struct own_gid {
  int64_t ckpt;
  char gid[PG_GID_MAX];
} own_gid_t;

static int cmp_gid(const void *a, const void *b) {
  int64_t x = ((const own_gid_t *)a)->ckpt, y = ((const own_gid_t *)b)->ckpt;
  return x < y ? -1 : x > y;
}

/* Prepared transactions in this database whose names start with prefix, oldest first. With
 * other_subtasks, the prefix is the job's and only those of subtasks >= parallelism are
 * returned (their ckpt is that of the gid). */
static int list_gids(pg_sink_t *pk, const char *prefix, bool other_subtasks, own_gid_t **out,
                     int *nout, ck_error_t *err) {
  const char *params[1] = {prefix};
  PGresult *res = NULL;
  int rc = pg_exec(pk, "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() "
                       "AND starts_with(gid, $1)",
                   1, params, &res, err, "list the sink's prepared transactions");
  if (rc) return rc;
  int n = PQntuples(res), k = 0;
  own_gid_t *g = ck_calloc((size_t)(n ? n : 1), sizeof *g);
  for (int i = 0; i < n; i++) {
    const char *gid = PQgetvalue(res, i, 0);
    int64_t ckpt;
    if (strlen(gid) >= PG_GID_MAX) continue;
    if (other_subtasks) {
      const char *rest = gid + strlen(prefix), *us = strchr(rest, '_');
      char sub[16];
      int64_t s;
      if (!us || us - rest >= (ptrdiff_t)sizeof sub) continue;
      memcpy(sub, rest, (size_t)(us - rest));
      sub[us - rest] = 0;
      if (!parse_id(sub, &s) || s < pk->ctx->parallelism || !parse_id(us + 1, &ckpt)) continue;
    } else if (!ck_pg_gid_ckpt(gid, prefix, &ckpt)) {
      continue;
    }
    g[k].ckpt = ckpt;
    snprintf(g[k].gid, sizeof g[k].gid, "%s", gid);
    k++;
  }
  PQclear(res);
  qsort(g, (size_t)k, sizeof *g, cmp_gid);
  *out = g;
  *nout = k;
  return 0;
}

/* COMMIT PREPARED or ROLLBACK PREPARED one gid. */
static int finish_gid(pg_sink_t *pk, const char *gid, bool commit, ck_error_t *err) {
  char *lit = PQescapeLiteral(pk->conn, gid, strlen(gid));
  if (!lit) return pg_fail(pk, err, CK_EREMOTE, NULL, "quote transaction name '%s'", gid);
  ck_buf_t sql;
  ck_buf_init(&sql);
  ck_buf_printf(&sql, "%s PREPARED %s", commit ? "COMMIT" : "ROLLBACK", lit);
  PQfreemem(lit);
  char what[200];
  snprintf(what, sizeof what, "%s prepared transaction '%s'", commit ? "commit" : "roll back",
           gid);
  int rc = pg_exec(pk, sql.data, 0, NULL, NULL, err, what);
  ck_buf_fini(&sql);
  return rc;
}

/* Commits own gids <= upto (oldest first); rolls back those above it when rollback_above. */
static int resolve(pg_sink_t *pk, int64_t upto, bool rollback_above, int *ncommitted,
                   int *nrolled, ck_error_t *err) {
  own_gid_t *g = NULL;
  int n = 0;
  int rc = list_gids(pk, pk->prefix, false, &g, &n, err);
  *ncommitted = *nrolled = 0;
  for (int i = 0; i < n && !rc; i++) {
    if (g[i].ckpt <= upto) {
      if (!(rc = finish_gid(pk, g[i].gid, true, err))) ++*ncommitted;
    } else if (rollback_above) {
      if (!(rc = finish_gid(pk, g[i].gid, false, err))) ++*nrolled;
    }
  }
  ck_free(g);
  int k = 0; /* forget what this incarnation prepared up to `upto` */
  for (int i = 0; i < pk->nprepared; i++)
    if (pk->prepared[i] > upto) pk->prepared[k++] = pk->prepared[i];
  if (!rc) pk->nprepared = k;
  return rc;
}

/* ---- the sink ops ---- */

static void pg_free(pg_sink_t *pk) {
  if (pk->instance >= 0) ck_sink_live_release(pk->identity, pk->ctx->subtask, pk->instance);
  if (pk->conn) PQfinish(pk->conn);
  ck_buf_fini(&pk->buf);
  ck_free(pk->target);
  if (pk->password) {
    memset(pk->password, 0, strlen(pk->password));
    ck_free(pk->password);
  }
  ck_free(pk->relname);
  ck_free(pk->copy_sql);
  ck_free(pk->tz);
  ck_free(pk->prepared);
  ck_free(pk->dest);
  ck_free(pk);
}

/* One fact of the destination for the account: the first value of sql, a JSON string member
 * "key":"value" — or, when the server refuses it (a function this server or role lacks), null
 * with the server's reason under absent. Only a broken connection is an error. */
static int dest_fact(pg_sink_t *pk, const char *key, const char *sql, ck_buf_t *out,
                     ck_buf_t *absent, ck_error_t *err) {
  PGresult *res = PQexec(pk->conn, sql);
  ck_buf_printf(out, "%s\"%s\":", out->len ? "," : "", key);
  if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)) {
    const char *v = PQgetvalue(res, 0, 0);
    ck_buf_put_json_str(out, v, strlen(v));
  } else {
    ck_buf_puts(out, "null");
    char why[512];
    scrub(pk, PQresultStatus(res) == PGRES_TUPLES_OK ? "the server has no value for it"
                                                     : PQresultErrorMessage(res), why, sizeof why);
    ck_buf_printf(absent, "%s\"%s\":", absent->len ? "," : "", key);
    ck_buf_put_json_str(absent, why, strlen(why));
  }
  PQclear(res);
  if (PQstatus(pk->conn) != CONNECTION_OK)
    return pg_fail(pk, err, CK_EREMOTE, NULL, "read what the server is (for the interval "
                   "evidence)");
  return 0;
}

/* The destination as open finds it, for the interval evidence: the server (version, its
 * cluster's system identifier and start time, the address and port it answered on), the
 * database, the role, and the table (its name as regclass prints it, its oid, and the
 * prepared-transactions setting exactly once needs). Read once per open. */
static int dest_read(pg_sink_t *pk, ck_error_t *err) {
  ck_buf_t out, absent;
  ck_buf_init(&out);
  ck_buf_init(&absent);
  char *lit = PQescapeLiteral(pk->conn, pk->relname, strlen(pk->relname));
  if (!lit) return pg_fail(pk, err, CK_EREMOTE, NULL, "quote the table name %s", pk->relname);
  char oid_sql[1024];
  snprintf(oid_sql, sizeof oid_sql, "SELECT (%s::regclass)::oid::text", lit);
  PQfreemem(lit);
  static const char *const facts[][2] = {
      {"server_version", "SELECT current_setting('server_version')"},
      {"server_version_num", "SELECT current_setting('server_version_num')"},
      {"system_identifier", "SELECT system_identifier::text FROM pg_control_system()"},
      {"server_started", "SELECT pg_postmaster_start_time()::text"},
      {"server_address", "SELECT coalesce(host(inet_server_addr()), 'local socket')"},
      {"server_port", "SELECT current_setting('port')"},
      {"database", "SELECT current_database()"},
      {"user", "SELECT current_user"},
      {"max_prepared_transactions", "SELECT current_setting('max_prepared_transactions')"},
  };
  int rc = 0;
  for (size_t i = 0; !rc && i < sizeof facts / sizeof facts[0]; i++)
    rc = dest_fact(pk, facts[i][0], facts[i][1], &out, &absent, err);
  if (!rc) {
    ck_buf_puts(&out, ",\"table\":");
    ck_buf_put_json_str(&out, pk->relname, strlen(pk->relname));
    rc = dest_fact(pk, "table_oid", oid_sql, &out, &absent, err);
  }
  if (!rc) {
    ck_buf_puts(&out, ",\"absent\":{");
    if (absent.len) ck_buf_append(&out, absent.data, absent.len);
    ck_buf_putc(&out, '}');
    ck_free(pk->dest);
    pk->dest = ck_buf_detach(&out);
  }
  ck_buf_fini(&out);
  ck_buf_fini(&absent);
  return rc;
}

/* The password libpq will use, if the options give one (to scrub it from messages). */
static char *dsn_password(const char *dsn) {
  char *perr = NULL, *pw = NULL;
  PQconninfoOption *opts = PQconninfoParse(dsn, &perr);
  PQfreemem(perr);
  for (PQconninfoOption *o = opts; o && o->keyword; o++)
    if (!strcmp(o->keyword, "password") && o->val && *o->val) pw = ck_strdup(o->val);
  PQconninfoFree(opts);
  return pw;
}

static int pg_open_impl(ck_sink_t *sink, bool restored, ck_error_t *err) {
  const ck_options_t *opts = sink->ctx.options;
  pg_sink_t *pk = ck_calloc(1, sizeof *pk);
  sink->impl = pk;
  pk->ctx = &sink->ctx;
  pk->instance = -1;
  ck_buf_init(&pk->buf);
  const char *dsn = ck_options_get(opts, "dsn"), *table = ck_options_get(opts, "table");
  const char *g = ck_opt_str(opts, ck_sink_common_options, "delivery_guarantee");
  pk->eos = g && !strcmp(g, "exactly_once");
  pk->batch_rows = ck_opt_int(opts, pg_sink_options, "batch_rows");
  if (pk->batch_rows < 1) pk->batch_rows = 1;
  if (!dsn || !table)
    return ck_error_set(err, CK_EOPTION, "the postgres connector needs options 'dsn' and 'table' "
                        "(sink table '%s')", sink->ctx.table);
  ck_buf_t t;
  ck_buf_init(&t);
  if (!ck_pg_describe_dsn(dsn, &t)) {
    ck_buf_fini(&t);
    return ck_error_set(err, CK_EOPTION, "option 'dsn' of sink table '%s' is neither a libpq "
                        "connection string nor a postgresql:// URI", sink->ctx.table);
  }
  pk->target = ck_buf_detach(&t);
  pk->password = dsn_password(dsn);
  const char *penv = ck_options_get(opts, "password_env"), *password = NULL;
  if (penv && *penv) {
    password = getenv(penv);
    if (!password)
      return ck_error_set(err, CK_EOPTION, "environment variable '%s' (option 'password_env' of "
                          "sink table '%s') is not set", penv, sink->ctx.table);
    ck_free(pk->password);
    pk->password = ck_strdup(password);
  }
  char clean[512];
  scrub(pk, pk->target, clean, sizeof clean); /* even a user named like the password */
  ck_free(pk->target);
  pk->target = ck_strdup(clean);
  int rc = pg_connect(pk, dsn, password, err);
  if (!rc) rc = match_columns(pk, err);
  if (!rc) rc = dest_read(pk, err);
  if (rc || !pk->eos) return rc;

  PGresult *res = NULL;
  rc = pg_exec(pk, "SELECT current_setting('max_prepared_transactions')::int4::text", 0, NULL,
               &res, err, "read max_prepared_transactions");
  if (rc) return rc;
  int maxprep = atoi(PQgetvalue(res, 0, 0));
  PQclear(res);
  if (maxprep <= 0) {
    ck_error_set(err, CK_EUNSUPPORTED, "PostgreSQL at %s cannot prepare transactions "
                 "(max_prepared_transactions = 0), which delivery_guarantee = 'exactly_once' of "
                 "sink table '%s' needs", pk->target, sink->ctx.table);
    ck_error_hint(err, "set max_prepared_transactions above 0 in postgresql.conf and restart the "
                       "server, or remove the delivery_guarantee option to write at least once");
    return CK_EUNSUPPORTED;
  }
  char real[PATH_MAX];
  const char *job = sink->ctx.job_name ? sink->ctx.job_name : "";
  if (*job && realpath(job, real)) job = real;
  pk->identity = sink_identity(job, sink->ctx.table, table, 0);
  pk->instance = ck_sink_live_claim(pk->identity, sink->ctx.subtask);
  if (pk->instance < 0)
    return ck_error_set(err, CK_EUNSUPPORTED, "too many postgres sinks in one process (%d)",
                        CK_SINK_LIVE_MAX);
  ck_pg_gid_prefix(job, sink->ctx.table, table, pk->instance, sink->ctx.subtask, pk->prefix,
                   sizeof pk->prefix, pk->job_prefix, sizeof pk->job_prefix);
  CK_LOG_DEBUG("sink.postgres", "table '%s' subtask %d: writing %s on %s exactly once, "
               "transactions %s<checkpoint>", sink->ctx.table, sink->ctx.subtask, pk->relname,
               pk->target, pk->prefix);
  if (restored) return 0; /* recover() resolves what the restored checkpoint left */
  /* a fresh lineage: whatever this job left prepared belongs to a run that will never commit it */
  int committed, rolled = 0, more = 0;
  rc = resolve(pk, -1, true, &committed, &rolled, err);
  if (!rc && sink->ctx.subtask == 0) {
    own_gid_t *gids = NULL;
    rc = list_gids(pk, pk->job_prefix, true, &gids, &more, err);
    for (int i = 0; i < more && !rc; i++) rc = finish_gid(pk, gids[i].gid, false, err);
    ck_free(gids);
  }
  if (!rc && rolled + more)
    CK_LOG_INFO("sink.postgres", "table '%s' subtask %d: rolled back %d prepared transaction%s "
                "an earlier run of this job left (%s*)", sink->ctx.table, sink->ctx.subtask,
                rolled + more, rolled + more == 1 ? "" : "s", pk->prefix);
  return rc;
}

/* A sink whose open failed is never closed by the executor: it cleans up here. */
static int pg_open(ck_sink_t *sink, bool restored, ck_error_t *err) {
  int rc = pg_open_impl(sink, restored, err);
  if (rc && sink->impl) {
    pg_free(sink->impl);
    sink->impl = NULL;
  }
  return rc;
}

static int pg_write(ck_sink_t *sink, const ck_batch_t *batch, ck_error_t *err) {
  pg_sink_t *pk = sink->impl;
  if (batch->kinds) {
    ck_error_set(err, CK_EUNSUPPORTED, "the postgres sink of table '%s' cannot write an update "
                 "stream (rows that update or delete earlier rows) yet", sink->ctx.table);
    ck_error_hint(err, "write a windowed aggregation (its rows are final), or send the update "
                       "stream to a file or print sink");
    return CK_EUNSUPPORTED;
  }
  for (size_t i = 0; i < batch->nrows; i++) ck_pg_copy_row(batch, i, pk->tz, &pk->buf);
  pk->buf_rows += (int64_t)batch->nrows;
  if (pk->buf_rows >= pk->batch_rows || pk->buf.len >= PG_SEND_BYTES) return send_rows(pk, err);
  return 0;
}

static int pg_prepare(ck_sink_t *sink, int64_t ckpt, ck_buf_t *out, ck_error_t *err) {
  pg_sink_t *pk = sink->impl;
  int rc = send_rows(pk, err);
  if (rc) return rc;
  /* the interval the account reports: its rows and COPYs, and (below) its transaction */
  pk->acct_ckpt = ckpt;
  pk->acct_rows = pk->rows_sent - pk->rows_mark;
  pk->acct_copies = pk->copies - pk->copies_mark;
  pk->acct_prepared = false;
  pk->rows_mark = pk->rows_sent;
  pk->copies_mark = pk->copies;
  ck_buf_putc(out, PG_STATE_VERSION);
  ck_buf_putc(out, pk->eos ? 1 : 0);
  if (!pk->eos) return 0;
  bool prepared = false;
  if (pk->in_txn) {
    char gid[PG_GID_MAX], sql[PG_GID_MAX + 32], what[PG_GID_MAX + 48];
    snprintf(gid, sizeof gid, "%s%lld", pk->prefix, (long long)ckpt);
    snprintf(sql, sizeof sql, "PREPARE TRANSACTION '%s'", gid);
    snprintf(what, sizeof what, "prepare transaction '%s'", gid);
    rc = pg_exec(pk, sql, 0, NULL, NULL, err, what);
    pk->in_txn = false; /* prepared, or failed and gone */
    if (rc) return rc;
    if (pk->nprepared == pk->prepared_cap) {
      pk->prepared_cap = pk->prepared_cap ? 2 * pk->prepared_cap : 4;
      pk->prepared = ck_realloc(pk->prepared, sizeof *pk->prepared * (size_t)pk->prepared_cap);
    }
    pk->prepared[pk->nprepared++] = ckpt;
    prepared = true;
    pk->acct_prepared = true;
  }
  size_t plen = strlen(pk->prefix);
  ck_buf_put_uvarint(out, plen);
  ck_buf_append(out, pk->prefix, plen);
  ck_buf_put_uvarint(out, (uint64_t)ckpt);
  ck_buf_putc(out, prepared ? 1 : 0);
  return 0;
}

static int pg_commit(ck_sink_t *sink, int64_t ckpt, ck_error_t *err) {
  pg_sink_t *pk = sink->impl;
  if (!pk->eos || pk->nprepared == 0 || pk->prepared[0] > ckpt) return 0;
  int committed, rolled;
  int rc = resolve(pk, ckpt, false, &committed, &rolled, err);
  if (!rc)
    CK_LOG_DEBUG("sink.postgres", "table '%s' subtask %d: checkpoint %lld committed %d "
                 "transaction%s", sink->ctx.table, sink->ctx.subtask, (long long)ckpt, committed,
                 committed == 1 ? "" : "s");
  return rc;
}

static int pg_recover(ck_sink_t *sink, int64_t ckpt, const void *state, size_t len,
                      ck_error_t *err) {
  pg_sink_t *pk = sink->impl;
  const uint8_t *p = state, *end = p + len;
  if (len < 2 || p[0] != PG_STATE_VERSION)
    return ck_error_set(err, CK_ESTATE, "could not recover the postgres sink of table '%s' at "
                        "checkpoint %lld: unknown state version %d", sink->ctx.table,
                        (long long)ckpt, len ? p[0] : -1);
  bool eos = p[1] == 1;
  p += 2;
  if (eos != pk->eos)
    return ck_error_set(err, CK_ESTATE, "could not recover the postgres sink of table '%s': "
                        "checkpoint %lld was taken %s", sink->ctx.table, (long long)ckpt,
                        eos ? "exactly once" : "at least once");
  if (!eos) return p == end ? 0 : ck_error_set(err, CK_ESTATE, "could not recover the postgres "
                                                "sink of table '%s': corrupt state",
                                                sink->ctx.table);
  uint64_t plen, id;
  if (!ck_uvarint_get(&p, end, &plen) || plen >= sizeof pk->prefix ||
      plen > (uint64_t)(end - p))
    goto corrupt;
  char prefix[sizeof pk->prefix];
  memcpy(prefix, p, plen);
  prefix[plen] = 0;
  p += plen;
  if (!ck_uvarint_get(&p, end, &id) || id != (uint64_t)ckpt || p + 1 != end) goto corrupt;
  bool had = *p != 0;
  if (strcmp(prefix, pk->prefix)) {
    CK_LOG_INFO("sink.postgres", "table '%s' subtask %d: the job's transactions are named %s* "
                "since checkpoint %lld (this run would name them %s*); keeping that name",
                sink->ctx.table, sink->ctx.subtask, prefix, (long long)ckpt, pk->prefix);
    memcpy(pk->prefix, prefix, plen + 1);
  }
  int committed, rolled;
  int rc = resolve(pk, ckpt, true, &committed, &rolled, err);
  if (rc) return rc;
  pk->recovered_ckpt = ckpt;
  pk->recovered_committed = committed;
  pk->recovered_rolled = rolled;
  CK_TRACE("sink_recover", "sink=postgres ckpt=%lld committed=%d rolled_back=%d outcome=resolved", (long long)ckpt, committed, rolled);
  if (committed || rolled)
    CK_LOG_INFO("sink.postgres", "table '%s' subtask %d recovered at checkpoint %lld: committed "
                "%d prepared transaction%s of completed checkpoints, rolled back %d of "
                "checkpoints that never completed", sink->ctx.table, sink->ctx.subtask,
                (long long)ckpt, committed, committed == 1 ? "" : "s", rolled);
  else
    CK_LOG_DEBUG("sink.postgres", "table '%s' subtask %d recovered at checkpoint %lld: nothing "
                 "left to resolve (%s)", sink->ctx.table, sink->ctx.subtask, (long long)ckpt,
                 had ? "its transaction was committed before" : "its interval was empty");
  return 0;
corrupt:
  return ck_error_set(err, CK_ESTATE, "could not recover the postgres sink of table '%s' at "
                      "checkpoint %lld: the state is truncated or corrupt", sink->ctx.table,
                      (long long)ckpt);
}

static int pg_finish(ck_sink_t *sink, ck_error_t *err) {
  pg_sink_t *pk = sink->impl;
  int rc = send_rows(pk, err);
  if (rc) return rc;
  if (pk->in_txn) { /* rows no checkpoint covers: only a job without checkpoints has them */
    rc = pg_exec(pk, "COMMIT", 0, NULL, NULL, err, "commit the last rows");
    pk->in_txn = false;
    if (rc) return rc;
  }
  if (pk->nprepared)
    return ck_error_set(err, CK_EINTERNAL, "the postgres sink of table '%s' reached the end with "
                        "checkpoint %lld prepared and not committed", sink->ctx.table,
                        (long long)pk->prepared[0]);
  CK_LOG_DEBUG("sink.postgres", "table '%s' subtask %d: %lld rows written to %s",
               sink->ctx.table, sink->ctx.subtask, (long long)pk->rows_sent, pk->relname);
  return 0;
}

static void pg_close(ck_sink_t *sink) {
  pg_sink_t *pk = sink->impl;
  if (!pk) return;
  pg_free(pk); /* an open, unprepared transaction dies with the connection */
  sink->impl = NULL;
}

static int pg_check(const ck_schema_t *schema, const ck_options_t *opts, bool as_sink,
                    ck_error_t *err) {
  const char *dsn = ck_options_get(opts, "dsn"), *table = ck_options_get(opts, "table");
  if (!dsn || !*dsn)
    return ck_error_set(err, CK_EOPTION, "the postgres connector needs option 'dsn'");
  if (!table || !*table)
    return ck_error_set(err, CK_EOPTION, "the postgres connector needs option 'table'");
  ck_buf_t t;
  ck_buf_init(&t);
  bool ok = ck_pg_describe_dsn(dsn, &t);
  ck_buf_fini(&t);
  if (!ok) {
    ck_error_set(err, CK_EOPTION, "option 'dsn' is neither a libpq connection string nor a "
                 "postgresql:// URI");
    ck_error_hint(err, "write 'host=127.0.0.1 port=5432 dbname=app user=clink' or "
                       "'postgresql://clink@127.0.0.1:5432/app'");
    return CK_EOPTION;
  }
  if (ck_options_get(opts, "format"))
    return ck_error_set(err, CK_EOPTION, "option 'format' does not apply to the postgres "
                        "connector: it writes rows into the table's columns");
  if (ck_opt_int(opts, pg_sink_options, "batch_rows") < 1)
    return ck_error_set(err, CK_EOPTION, "option 'batch_rows' must be at least 1");
  return 0;
}

/*
 * The interval evidence's account (docs/evidence.md): the destination as open found it, the
 * rows and COPY statements of the interval prepare(ckpt) closed, and — exactly once — the
 * prepared transaction holding them (its name, which COMMIT PREPARED or ROLLBACK PREPARED
 * takes) and every transaction of this sink still prepared and awaiting its commit: in doubt
 * until the checkpoint that owns it completes. At least once every COPY committed on its own
 * when it returned: nothing is in doubt, and a restore from an earlier checkpoint writes the
 * interval's rows again.
 */
static int pg_account(ck_sink_t *sink, int64_t ckpt, ck_buf_t *out, ck_error_t *err) {
  (void)err;
  pg_sink_t *pk = sink->impl;
  bool ours = pk->acct_ckpt == ckpt;
  ck_buf_printf(out, "{\"kind\":\"postgres\",\"checkpoint\":%lld,\"endpoint\":",
                (long long)ckpt);
  ck_buf_put_json_str(out, pk->target, strlen(pk->target));
  ck_buf_printf(out, ",\"mode\":\"%s\",\"destination\":{%s}", pk->eos ? "exactly_once"
                : "at_least_once", pk->dest ? pk->dest : "");
  ck_buf_printf(out, ",\"rows\":%lld,\"copies\":%lld,\"transaction\":",
                ours ? (long long)pk->acct_rows : 0LL, ours ? (long long)pk->acct_copies : 0LL);
  if (pk->eos && ours && pk->acct_prepared) {
    char gid[PG_GID_MAX];
    snprintf(gid, sizeof gid, "%s%lld", pk->prefix, (long long)ckpt);
    ck_buf_puts(out, "{\"name\":");
    ck_buf_put_json_str(out, gid, strlen(gid));
    ck_buf_puts(out, ",\"state\":\"prepared\"}");
  } else {
    ck_buf_puts(out, "null"); /* at least once, or an empty interval: nothing prepared */
  }
  ck_buf_puts(out, ",\"in_doubt\":[");
  for (int i = 0; pk->eos && i < pk->nprepared; i++) {
    char gid[PG_GID_MAX];
    snprintf(gid, sizeof gid, "%s%lld", pk->prefix, (long long)pk->prepared[i]);
    ck_buf_printf(out, "%s{\"checkpoint\":%lld,\"name\":", i ? "," : "",
                  (long long)pk->prepared[i]);
    ck_buf_put_json_str(out, gid, strlen(gid));
    ck_buf_puts(out, ",\"resolved_by\":\"COMMIT PREPARED once the checkpoint completed; after "
                "a crash, recovery at the restored checkpoint commits it if the checkpoint "
                "completed and rolls it back if not\"}");
  }
  ck_buf_puts(out, "]");
  if (pk->eos) {
    ck_buf_puts(out, ",\"transaction_prefix\":");
    ck_buf_put_json_str(out, pk->prefix, strlen(pk->prefix));
  } else {
    ck_buf_puts(out, ",\"resend\":\"after a restore from a checkpoint before this one, the "
                "interval's rows are written again (at least once)\"");
  }
  ck_buf_puts(out, ",\"recovered\":");
  if (pk->recovered_ckpt)
    ck_buf_printf(out, "{\"checkpoint\":%lld,\"committed\":%d,\"rolled_back\":%d}",
                  (long long)pk->recovered_ckpt, pk->recovered_committed,
                  pk->recovered_rolled);
  else
    ck_buf_puts(out, "null");
  ck_buf_putc(out, '}');
  return 0;
}

static const ck_sink_ops_t pg_sink_ops = {
    pg_open, pg_write, pg_prepare, pg_commit, pg_finish, pg_close, pg_recover,
    .account = pg_account,
};

const ck_connector_t ck_postgres_connector = {
    .name = "postgres",
    .description = "rows into an existing PostgreSQL table with COPY; at least once, or "
                   "exactly once with delivery_guarantee = 'exactly_once' through prepared "
                   "transactions committed with each checkpoint",
    .source_options = NULL,
    .sink_options = pg_sink_options,
    .source = NULL,
    .sink = &pg_sink_ops,
    .sink_guarantee = CK_GUARANTEE_EXACTLY_ONCE, /* only when asked; at least once otherwise */
    .bounded = false,
    .check = pg_check,
};
