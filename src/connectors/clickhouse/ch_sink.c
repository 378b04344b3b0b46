/*
 * DESIGN: connector='clickhouse' — a sink writing through ClickHouse's native TCP protocol
 * (ch_client.h), at least once, or exactly once on request (below).
 *
 * Columns. At plan time (check) and again at open, the sink reads the table's structure
 * (DESCRIBE TABLE) and maps each SQL column to the ClickHouse column of the same name (exact
 * spelling first, then the one that differs only in case). ClickHouse columns the SQL table
 * does not declare are left out of the INSERT, so they take their defaults; a SQL column with
 * no ClickHouse column, or one that is MATERIALIZED or ALIAS, is refused. Each SQL type must
 * fit its ClickHouse type without losing information, or the plan is refused naming both:
 *   BOOLEAN        → UInt8 … Int64, Bool, Decimal with ≥ 1 integer digit
 *   INT, BIGINT    → a signed integer at least as wide (INT also Float64), Decimal(P, S) with
 *                    P − S ≥ 10 (INT) or 19 (BIGINT); Date (days since 1970-01-01) and
 *                    DateTime (seconds since the epoch), each value range-checked
 *   FLOAT          → Float32, Float64;  DOUBLE → Float64
 *   DECIMAL(p, s)  → Decimal(P, S) with S ≥ s and P − S ≥ p − s (no digit lost on either side);
 *                    with s = 0 also an integer type that holds every p-digit value
 *   VARCHAR        → String, FixedString(N) (a longer value stops the job), LowCardinality of
 *                    either; UUID (the value must be a UUID's 36-character text)
 *   DATE           → Date (1970-01-01 to 2149-06-06) and Date32 (1900-01-01 to 2299-12-31),
 *                    each value range-checked; nothing else (TIME goes nowhere: ClickHouse
 *                    18.16 has no time-of-day type; CAST it to VARCHAR for a String)
 *   TIMESTAMP(3)   → DateTime64(p ≥ 3) (exact), Int64 (epoch milliseconds). Never DateTime or
 *                    Date, which would drop the milliseconds: declare the SQL column BIGINT and
 *                    write ts / 1000 (seconds) or ts / 86400000 (days) if that is meant.
 *   narrowing = 'checked' also admits the integer conversions that can overflow (INT into
 *   Int8, BIGINT into UInt64, TIMESTAMP into UInt64, …): each value is range-checked as it is
 *   written, and one that does not fit stops the job naming the column and the value.
 * Every SQL column may hold NULL; a NULL bound for a column that is not Nullable stops the job
 * with an error naming the column (it is not replaced by the type's default).
 *
 * Delivery. Rows are converted into native columns as they come (write), and inserted as one
 * block per INSERT when batch_rows are buffered (a batch from upstream is never split across
 * INSERTs), when batch_interval_ms passed since the
 * first buffered row (checked on write and prepare), at every checkpoint barrier (prepare) and
 * at the end of input (finish). An INSERT is synchronous: a row counts as written only when
 * the server acknowledged its block (EndOfStream after the data); prepare returns only after
 * that, so a checkpoint that completed covers every row before its barrier, and a crash after
 * it loses none. Rows after the last completed checkpoint are written again after a restore:
 * at least once, unless delivery_guarantee = 'exactly_once' asks for the stage tables below.
 * A server that has asynchronous inserts (its system.settings lists async_insert: 21.11 on) is
 * sent async_insert = 0 and wait_for_async_insert = 1 with every INSERT.
 *
 * Deduplication of resends. At open the sink reads what the server and table offer
 * (dedup_probe): whether the server knows insert_deduplication_token (22.2 on), and whether
 * the table keeps a deduplication log: Replicated*MergeTree (replicated_deduplication_window)
 * or a MergeTree with non_replicated_deduplication_window > 0 (the table's SETTINGS, else the
 * server's default). Where the server has tokens, every INSERT goes under its own token:
 *   clink:<job>:<sql table>:<subtask>:<run>:<interval>:<block>
 * where <run> is random per sink open (so a replay after a restore writes under fresh tokens,
 * which no log drops: a replay need not cut its rows into the same blocks), <interval> is the
 * last barrier before the block (0 at the start) and <block> counts the interval's INSERTs. A
 * resend of a block after a failure in doubt goes under the same token, so the server drops it
 * when the first attempt landed, if the table keeps a log, the same server (name, version,
 * revision, display name) answers, and fewer than the window's blocks were inserted in between.
 * Without tokens (18.16) a Replicated table still drops a resent identical block by its hash.
 * Each resend is logged as "deduplicated if the first attempt landed" or "may duplicate",
 * with the reason, and counted in the finish line.
 *
 * Exactly once (delivery_guarantee = 'exactly_once'): the rows of one checkpoint interval are
 * staged in a table of their own and moved into the target when the checkpoint completes.
 *   stage        `_clink_stage_<hash>_<subtask>_open` in the target's database, created AS the
 *                target (same columns, engine, partition key) at the interval's first INSERT,
 *                with non_replicated_deduplication_window = 1000: every INSERT goes under its
 *                token, so a resend in doubt lands once; readers of the target see nothing.
 *   prepare(N)   flushes, then RENAME TABLE …_open TO …_<N> (redone by looking which name
 *                exists). The sink state records the prefix and whether N staged anything.
 *   commit(N)    publishes every own stage with id <= N, oldest first: ALTER TABLE stage MOVE
 *                PARTITION ID … TO TABLE target for each partition it holds, then DROP TABLE
 *                stage SYNC. A part is in the stage or in the target, never both, so redoing a
 *                publish after a crash anywhere in it moves only what is left.
 *   recover(R)   the same for R, and drops every own stage above R and the open one: a dead
 *                run staged them for checkpoints that never completed.
 *   open(fresh)  drops every own stage (an abandoned lineage's); subtask 0 also those of
 *                subtasks the job no longer has.
 *   finish       flushes; rows staged there (only a job without checkpoints has them) are
 *                published at once.
 * <hash> hashes the job's name (the script's real path), both table names and an instance
 * number (connectors/sink_live.h), as the PostgreSQL sink names its transactions. It needs a
 * server with insert_deduplication_token (22.2 on; 18.16 is refused by name) and a target of
 * the MergeTree family, not Replicated or Shared (MOVE PARTITION works between tables of one
 * server), with no materialized view reading it (a move is not an INSERT: a view would miss
 * the rows); anything else is refused at plan time, or at open when the server could not be
 * asked then. A publish holds only for the durability the server gives a MOVE.
 *
 * Failures. A connection that cannot be made or breaks, and a server error a retry can cure
 * (ck_ch_code_retriable), make the sink retry the same rows with exponential backoff
 * (retry_backoff_ms doubling to retry_backoff_max_ms), logging each attempt as
 * "[clickhouse] table 'x': could not insert N rows into db.t: <reason>; retrying in M ms";
 * the job waits (visibly) until the server is back, or until retry_timeout_ms when it is set
 * (a first Ctrl-C drains into this wait; a second one exits at once).
 * An INSERT that failed after its data was sent is in doubt — the server may have written it
 * — and is sent again (the log says so): at least once. Anything else (authentication, a
 * missing table, a type the table no longer has, a NULL for a non-Nullable column) fails the
 * job at once. The password (password, or the environment variable password_env names) is
 * never logged and never put in an error message.
 *
 * Threads: check runs on the planner's thread; each sink instance belongs to one subtask's
 * thread.
 */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/time.h"
#include "connectors/clickhouse/ch_account.h"
#include "connectors/clickhouse/ch_client.h"
#include "connectors/clickhouse/ch_sink.h"
#include "checkpoint/fault.h"
#include "connectors/connectors.h"
#include "connectors/sink_live.h"
#include "connectors/util.h"

#define LOG_SUB "clickhouse"
#define PLAN_CONNECT_TIMEOUT_MS 3000
#define PLAN_RECEIVE_TIMEOUT_MS 10000

static const ck_opt_def_t ch_sink_options[] = {
    {"host", CK_OPT_STRING, "localhost", NULL, false, "ClickHouse server host name or address"},
    {"port", CK_OPT_INT, "9000", NULL, false, "the server's native TCP port (not HTTP's 8123)"},
    {"database", CK_OPT_STRING, "default", NULL, false, "database of the table"},
    {"table", CK_OPT_STRING, NULL, NULL, true,
     "the ClickHouse table rows are inserted into; it must exist. SQL columns are matched to "
     "its columns by name, and its other columns take their defaults"},
    {"user", CK_OPT_STRING, "default", NULL, false, "user to log in as"},
    {"password", CK_OPT_STRING, NULL, NULL, false,
     "password of the user (never logged); prefer password_env"},
    {"password_env", CK_OPT_STRING, NULL, NULL, false,
     "name of an environment variable holding the password (instead of password)"},
    {"batch_rows", CK_OPT_INT, "65536", NULL, false,
     "rows buffered before an INSERT is sent; every checkpoint barrier and the end of input "
     "also send what is buffered"},
    {"batch_interval_ms", CK_OPT_INT, "1000", NULL, false,
     "the oldest buffered row waits at most this long (checked as rows arrive and at "
     "barriers) before an INSERT is sent; 0: only batch_rows, barriers and the end"},
    {"insert_format", CK_OPT_STRING, "native", NULL, false,
     "how rows travel: 'native' (ClickHouse's native columnar format over the TCP protocol) is "
     "the only one. The sink option format = 'json' is accepted for compatibility and has no "
     "effect"},
    {"compression", CK_OPT_ENUM, "lz4", "none|lz4", false,
     "compression of the blocks sent: lz4 (with ClickHouse's CityHash128-checked framing) or "
     "none"},
    {"narrowing", CK_OPT_ENUM, "refuse", "refuse|checked", false,
     "refuse: a column whose ClickHouse integer type cannot hold every value of its SQL type "
     "(INT into Int8, BIGINT into UInt64) is refused at plan time; checked: such columns are "
     "accepted and each value is range-checked when written (one that does not fit stops the "
     "job, naming the column and the value)"},
    {"connect_timeout_ms", CK_OPT_INT, "10000", NULL, false,
     "how long one connection attempt may take"},
    {"receive_timeout_ms", CK_OPT_INT, "300000", NULL, false,
     "how long the server may take to answer (an INSERT's acknowledgement included) before "
     "the attempt counts as failed and is retried"},
    {"retry_backoff_ms", CK_OPT_INT, "100", NULL, false,
     "first wait before retrying an INSERT or a connection that failed for a reason a retry "
     "can cure; it doubles with each attempt"},
    {"retry_backoff_max_ms", CK_OPT_INT, "5000", NULL, false, "the longest wait between retries"},
    {"retry_timeout_ms", CK_OPT_INT, "0", NULL, false,
     "give up and fail the job after retrying this long; 0: retry until the server is back"},
    {NULL, 0, NULL, NULL, false, NULL},
};

/* ===================================================================== plan ====== */

typedef enum conv {
  CV_INT,   /* integer value (BOOL, INT, BIGINT, TIMESTAMP, DECIMAL(p,0)) into an integer base */
  CV_F32,
  CV_F64,
  CV_DEC,   /* into Decimal(P,S): times 10^shift */
  CV_STR,   /* String / FixedString */
  CV_DT64,  /* TIMESTAMP ms into DateTime64(p): times 10^shift */
  CV_UUID,  /* VARCHAR 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx' into UUID */
  CV_DAYS,  /* DATE (its midnight in ms) into Date / Date32: the day number, range-checked */
} conv_t;

typedef struct col_plan {
  int src;           /* SQL column */
  char *name, *type_name;
  ck_ch_type_t t;
  conv_t conv;
  bool range_check;
  __int128 lo, hi;   /* CV_INT: the target's range; CV_DEC, CV_DT64: |result| bound */
  int shift;         /* CV_DEC / CV_DT64 */
} col_plan_t;

typedef struct ch_desc {
  int n;
  char **names, **types, **kinds; /* kinds: default_type ("", DEFAULT, MATERIALIZED, ALIAS) */
} ch_desc_t;

static void desc_fini(ch_desc_t *d) {
  for (int i = 0; i < d->n; i++) {
    ck_free(d->names[i]);
    ck_free(d->types[i]);
    ck_free(d->kinds[i]);
  }
  ck_free(d->names);
  ck_free(d->types);
  ck_free(d->kinds);
  memset(d, 0, sizeof *d);
}

static void plan_free(col_plan_t *plan, int n) {
  for (int i = 0; plan && i < n; i++) {
    ck_free(plan[i].name);
    ck_free(plan[i].type_name);
  }
  ck_free(plan);
}

/* Range of an integer base (Date and DateTime included). */
static void int_range(ck_ch_base_t b, __int128 *lo, __int128 *hi) {
  switch (b) {
    case CK_CH_INT8: *lo = INT8_MIN; *hi = INT8_MAX; return;
    case CK_CH_INT16: *lo = INT16_MIN; *hi = INT16_MAX; return;
    case CK_CH_INT32: *lo = INT32_MIN; *hi = INT32_MAX; return;
    case CK_CH_INT64: *lo = INT64_MIN; *hi = INT64_MAX; return;
    case CK_CH_UINT8: case CK_CH_BOOL: *lo = 0; *hi = UINT8_MAX; return;
    case CK_CH_UINT16: case CK_CH_DATE: *lo = 0; *hi = UINT16_MAX; return;
    case CK_CH_UINT32: case CK_CH_DATETIME: *lo = 0; *hi = UINT32_MAX; return;
    case CK_CH_UINT64: *lo = 0; *hi = UINT64_MAX; return;
    default: *lo = *hi = 0; return;
  }
}

static void sql_range(ck_type_t t, __int128 *lo, __int128 *hi) {
  switch (t.id) {
    case CK_T_BOOL: *lo = 0; *hi = 1; return;
    case CK_T_INT32: *lo = INT32_MIN; *hi = INT32_MAX; return;
    case CK_T_DECIMAL: *hi = ck_pow10_i128(t.precision) - 1; *lo = -*hi; return;
    default: *lo = INT64_MIN; *hi = INT64_MAX; return;
  }
}

/* Decides how SQL type `sql` goes into ClickHouse type `t`; -1 with the reason in why. */
static int decide(ck_type_t sql, const ck_ch_type_t *t, bool checked, col_plan_t *cp, char *why,
                  size_t why_len) {
  ck_ch_base_t b = t->base;
  cp->range_check = false;
  cp->shift = 0;
  if (ck_type_is_date(sql) || b == CK_CH_DATE32) {
    cp->conv = CV_DAYS;
    cp->range_check = true;
    cp->lo = b == CK_CH_DATE ? 0 : -25567;           /* 1900-01-01 */
    cp->hi = b == CK_CH_DATE ? UINT16_MAX : 120529;  /* 2149-06-06, 2299-12-31 */
    if (ck_type_is_date(sql) && (b == CK_CH_DATE || b == CK_CH_DATE32)) return 0;
    snprintf(why, why_len, "%s", b == CK_CH_DATE32 ? "only DATE goes into Date32"
                                                  : "a DATE goes into Date or Date32 only");
    return -1;
  }
  if (ck_type_is_time(sql)) {
    snprintf(why, why_len, "ClickHouse has no time-of-day type the sink writes; CAST it to "
             "VARCHAR for a String column");
    return -1;
  }
  bool intlike = sql.id == CK_T_BOOL || sql.id == CK_T_INT32 || sql.id == CK_T_INT64 ||
                 sql.id == CK_T_TIMESTAMP || (sql.id == CK_T_DECIMAL && sql.scale == 0);
  if (ck_ch_type_is_int(b) || b == CK_CH_BOOL || b == CK_CH_DATE || b == CK_CH_DATETIME) {
    cp->conv = CV_INT;
    int_range(b, &cp->lo, &cp->hi);
    if (!intlike) {
      snprintf(why, why_len, "it is not an integer type");
      return -1;
    }
    if (b == CK_CH_BOOL && sql.id != CK_T_BOOL) {
      snprintf(why, why_len, "only BOOLEAN goes into Bool");
      return -1;
    }
    if (b == CK_CH_DATE || b == CK_CH_DATETIME) {
      if (sql.id == CK_T_TIMESTAMP) {
        snprintf(why, why_len, "it would drop the milliseconds; declare the column BIGINT and "
                 "write %s, or make the ClickHouse column DateTime64(3)",
                 b == CK_CH_DATE ? "days (ts / 86400000)" : "seconds (ts / 1000)");
        return -1;
      }
      if (sql.id != CK_T_INT32 && sql.id != CK_T_INT64) {
        snprintf(why, why_len, "only INT or BIGINT (%s since 1970-01-01) go into it",
                 b == CK_CH_DATE ? "days" : "seconds");
        return -1;
      }
      cp->range_check = true; /* a number of days or seconds, by declaration */
      return 0;
    }
    __int128 lo, hi;
    sql_range(sql, &lo, &hi);
    if (lo >= cp->lo && hi <= cp->hi && !(sql.id == CK_T_TIMESTAMP && b != CK_CH_INT64)) return 0;
    if (checked) {
      cp->range_check = true;
      return 0;
    }
    snprintf(why, why_len, "it cannot hold every value of the SQL type (set narrowing = "
             "'checked' to check each value instead)");
    return -1;
  }
  switch (b) {
    case CK_CH_FLOAT32:
      cp->conv = CV_F32;
      if (sql.id == CK_T_FLOAT32) return 0;
      snprintf(why, why_len, "only FLOAT goes into Float32 without rounding");
      return -1;
    case CK_CH_FLOAT64:
      cp->conv = CV_F64;
      if (sql.id == CK_T_FLOAT32 || sql.id == CK_T_FLOAT64 || sql.id == CK_T_INT32) return 0;
      snprintf(why, why_len, "%s", sql.id == CK_T_INT64 ? "a double cannot hold every BIGINT exactly"
                                                        : "it would round or reinterpret the value");
      return -1;
    case CK_CH_DECIMAL: {
      cp->conv = CV_DEC;
      int P = (int)t->n, S = (int)t->scale, p, s;
      if (sql.id == CK_T_DECIMAL) p = sql.precision, s = sql.scale;
      else if (sql.id == CK_T_INT32) p = 10, s = 0;
      else if (sql.id == CK_T_INT64) p = 19, s = 0;
      else if (sql.id == CK_T_BOOL) p = 1, s = 0;
      else {
        snprintf(why, why_len, "only DECIMAL and integers go into Decimal exactly");
        return -1;
      }
      if (S < s) {
        snprintf(why, why_len, "it keeps %d fraction digits, the SQL type has %d", S, s);
        return -1;
      }
      if (P - S < p - s) {
        snprintf(why, why_len, "it keeps %d integer digits, the SQL type has %d", P - S, p - s);
        return -1;
      }
      cp->shift = S - s;
      cp->hi = ck_pow10_i128(P);
      return 0;
    }
    case CK_CH_STRING:
    case CK_CH_FIXEDSTRING:
      cp->conv = CV_STR;
      if (sql.id == CK_T_STRING) return 0;
      snprintf(why, why_len, "only VARCHAR goes into %s", b == CK_CH_STRING ? "String" : "FixedString");
      return -1;
    case CK_CH_UUID:
      cp->conv = CV_UUID;
      if (sql.id == CK_T_STRING) return 0;
      snprintf(why, why_len, "only VARCHAR (a UUID's text) goes into UUID");
      return -1;
    case CK_CH_DATETIME64:
      cp->conv = CV_DT64;
      if (sql.id != CK_T_TIMESTAMP) {
        snprintf(why, why_len, "only TIMESTAMP goes into DateTime64");
        return -1;
      }
      if (t->n < 3) {
        snprintf(why, why_len, "DateTime64(%u) would drop the milliseconds", t->n);
        return -1;
      }
      cp->shift = (int)t->n - 3;
      return 0;
    default:
      snprintf(why, why_len, "the clickhouse sink does not write this type");
      return -1;
  }
}

static int find_ch_column(const ch_desc_t *d, const char *name) {
  for (int i = 0; i < d->n; i++)
    if (strcmp(d->names[i], name) == 0) return i;
  int found = -1;
  for (int i = 0; i < d->n; i++)
    if (ck_streq_i(d->names[i], name)) {
      if (found >= 0) return -2; /* ambiguous */
      found = i;
    }
  return found;
}

static int build_plan(const ck_schema_t *schema, const ch_desc_t *d, bool checked,
                      const char *label, col_plan_t **out, ck_error_t *err) {
  col_plan_t *plan = ck_calloc((size_t)schema->ncols + 1, sizeof *plan);
  for (int i = 0; i < schema->ncols; i++) {
    const char *name = schema->names[i];
    char sqlt[48];
    ck_type_name(schema->types[i], sqlt, sizeof sqlt);
    int k = find_ch_column(d, name);
    if (k == -2) {
      ck_error_set(err, CK_EBIND, "column '%s' matches several columns of ClickHouse table %s "
                   "that differ only in case", name, label);
      ck_error_hint(err, "rename the SQL column to the exact spelling");
      goto fail;
    }
    if (k < 0) {
      ck_error_set(err, CK_EBIND, "ClickHouse table %s has no column '%s'", label, name);
      const char *close = ck_closest(name, (const char *const *)d->names, (size_t)d->n);
      if (close) ck_error_hint(err, "did you mean '%s'? columns are matched by name", close);
      else ck_error_hint(err, "columns are matched by name; the table's columns are listed by DESCRIBE TABLE %s", label);
      goto fail;
    }
    if (strcmp(d->kinds[k], "MATERIALIZED") == 0 || strcmp(d->kinds[k], "ALIAS") == 0) {
      ck_error_set(err, CK_EBIND, "column '%s' of ClickHouse table %s is %s and cannot be "
                   "written", d->names[k], label, d->kinds[k]);
      ck_error_hint(err, "leave it out of the SQL table; ClickHouse computes it");
      goto fail;
    }
    col_plan_t *cp = &plan[i];
    cp->src = i;
    cp->name = ck_strdup(d->names[k]);
    cp->type_name = ck_strdup(d->types[k]);
    char why[200];
    if (ck_ch_type_parse(d->types[k], strlen(d->types[k]), &cp->t, why, sizeof why)) {
      ck_error_set(err, CK_ETYPE, "cannot write %s column '%s' into column '%s' of ClickHouse "
                   "table %s, which is %s: %s", sqlt, name, d->names[k], label, d->types[k], why);
      goto fail;
    }
    if (decide(schema->types[i], &cp->t, checked, cp, why, sizeof why)) {
      ck_error_set(err, CK_ETYPE, "cannot write %s column '%s' into column '%s' of ClickHouse "
                   "table %s, which is %s: %s", sqlt, name, d->names[k], label, d->types[k], why);
      ck_error_hint(err, "CAST the value in the query to a type that fits, or change the "
                    "ClickHouse column");
      goto fail;
    }
  }
  *out = plan;
  return 0;
fail:
  plan_free(plan, schema->ncols);
  return err ? err->code : CK_ETYPE;
}

/* ============================================================= connections ====== */

typedef struct ch_cfg {
  char *host, *database, *table, *user, *password;
  int port;
  bool compress, checked;
  int64_t batch_rows, interval_ms, connect_timeout, receive_timeout, backoff, backoff_max,
      retry_timeout;
  char label[300]; /* `database`.`table`, for messages */
} ch_cfg_t;

/* What the server and table offer against a resend landing twice (read at open). */
typedef struct ch_dedup {
  bool tokens;          /* the server knows insert_deduplication_token */
  bool async;           /* the server has async_insert (to turn off) */
  bool replicated;      /* Replicated*MergeTree: a log of replicated_deduplication_window */
  int64_t window;       /* blocks the table's deduplication log keeps; 0: no log */
  char engine[64];
} ch_dedup_t;

static void cfg_fini(ch_cfg_t *c) {
  ck_free(c->host);
  ck_free(c->database);
  ck_free(c->table);
  ck_free(c->user);
  if (c->password) {
    memset(c->password, 0, strlen(c->password));
    ck_free(c->password);
  }
  memset(c, 0, sizeof *c);
}

static const char *opt(const ck_options_t *o, const char *k) {
  return ck_opt_str(o, ch_sink_options, k);
}

/* Reads and checks the options; the password is resolved (never echoed). */
static int cfg_load(const ck_options_t *o, ch_cfg_t *c, ck_error_t *err) {
  memset(c, 0, sizeof *c);
  const char *insert_format = opt(o, "insert_format");
  if (strcmp(insert_format, "native") != 0)
    return ck_error_set(err, CK_EOPTION, "insert_format '%s' is not supported by the clickhouse "
                        "sink: rows are inserted in ClickHouse's native format only "
                        "(insert_format = 'native')", insert_format);
  const char *format = ck_options_get(o, "format");
  if (format && strcmp(format, "json") != 0 && strcmp(format, "native") != 0) {
    ck_error_set(err, CK_EOPTION, "format '%s' does not apply to the clickhouse sink", format);
    ck_error_hint(err, "rows go in ClickHouse's native format (insert_format = 'native'); "
                  "remove format, or leave it 'json', which is accepted and has no effect");
    return CK_EOPTION;
  }
  const char *pw = ck_options_get(o, "password"), *env = ck_options_get(o, "password_env");
  if (pw && env)
    return ck_error_set(err, CK_EOPTION, "the clickhouse sink takes password or password_env, "
                        "not both");
  if (env) {
    const char *v = getenv(env);
    if (!v)
      return ck_error_set(err, CK_EOPTION, "password_env names the environment variable '%s', "
                          "which is not set", env);
    pw = v;
  }
  c->port = (int)ck_opt_int(o, ch_sink_options, "port");
  if (c->port <= 0 || c->port > 65535)
    return ck_error_set(err, CK_EOPTION, "port %d is not a TCP port", c->port);
  c->batch_rows = ck_opt_int(o, ch_sink_options, "batch_rows");
  c->interval_ms = ck_opt_int(o, ch_sink_options, "batch_interval_ms");
  c->connect_timeout = ck_opt_int(o, ch_sink_options, "connect_timeout_ms");
  c->receive_timeout = ck_opt_int(o, ch_sink_options, "receive_timeout_ms");
  c->backoff = ck_opt_int(o, ch_sink_options, "retry_backoff_ms");
  c->backoff_max = ck_opt_int(o, ch_sink_options, "retry_backoff_max_ms");
  c->retry_timeout = ck_opt_int(o, ch_sink_options, "retry_timeout_ms");
  if (c->batch_rows < 1 || c->batch_rows > 100000000)
    return ck_error_set(err, CK_EOPTION, "batch_rows must be between 1 and 100000000");
  if (c->interval_ms < 0 || c->retry_timeout < 0 || c->backoff < 1 || c->backoff_max < c->backoff ||
      c->connect_timeout < 1 || c->receive_timeout < 1)
    return ck_error_set(err, CK_EOPTION, "the clickhouse sink's timeouts must be positive (and "
                        "retry_backoff_max_ms at least retry_backoff_ms; batch_interval_ms and "
                        "retry_timeout_ms may be 0)");
  c->host = ck_strdup(opt(o, "host"));
  c->database = ck_strdup(opt(o, "database"));
  c->table = ck_strdup(opt(o, "table"));
  c->user = ck_strdup(opt(o, "user"));
  c->password = ck_strdup(pw ? pw : "");
  c->compress = strcmp(opt(o, "compression"), "lz4") == 0;
  c->checked = strcmp(opt(o, "narrowing"), "checked") == 0;
  ck_buf_t b;
  ck_buf_init(&b);
  ck_ch_quote_ident(c->database, &b);
  ck_buf_putc(&b, '.');
  ck_ch_quote_ident(c->table, &b);
  snprintf(c->label, sizeof c->label, "%s", b.data);
  ck_buf_fini(&b);
  return 0;
}

static ck_ch_conf_t client_conf(const ch_cfg_t *c, int connect_ms, int receive_ms) {
  return (ck_ch_conf_t){
      .host = c->host, .port = c->port, .database = c->database, .user = c->user,
      .password = c->password, .connect_timeout_ms = connect_ms, .receive_timeout_ms = receive_ms,
      .send_timeout_ms = receive_ms, .compress = c->compress};
}

/* err = "<what>: <inner message>", keeping inner's origin, code and retriability. */
static int wrap(ck_error_t *err, const ck_error_t *inner, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int wrap(ck_error_t *err, const ck_error_t *inner, const char *fmt, ...) {
  char what[300];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  int code = inner->code ? inner->code : CK_EINTERNAL;
  if (!err || err->code) return code;
  ck_error_set(err, code, "%s: %s", what, inner->message);
  if (inner->detail[0]) ck_error_detail(err, "%s", inner->detail);
  if (inner->hint[0]) ck_error_hint(err, "%s", inner->hint);
  snprintf(err->origin, sizeof err->origin, "%s", inner->origin);
  err->origin_code = inner->origin_code;
  err->retriable = inner->retriable;
  return code;
}

static int on_desc_block(void *arg, const ck_ch_block_t *b, ck_error_t *err) {
  ch_desc_t *d = arg;
  int in = ck_ch_block_find(b, "name"), it = ck_ch_block_find(b, "type"),
      ik = ck_ch_block_find(b, "default_type");
  if (in < 0 || it < 0 || b->cols[in].type.base != CK_CH_STRING ||
      b->cols[it].type.base != CK_CH_STRING)
    return ck_error_set(err, CK_EPROTO, "DESCRIBE TABLE did not answer with name and type columns");
  d->names = ck_realloc(d->names, sizeof(char *) * (d->n + b->rows));
  d->types = ck_realloc(d->types, sizeof(char *) * (d->n + b->rows));
  d->kinds = ck_realloc(d->kinds, sizeof(char *) * (d->n + b->rows));
  for (size_t i = 0; i < b->rows; i++) {
    size_t n;
    const char *s = ck_ch_col_str(&b->cols[in], i, &n);
    d->names[d->n] = ck_strndup(s, n);
    s = ck_ch_col_str(&b->cols[it], i, &n);
    d->types[d->n] = ck_strndup(s, n);
    if (ik >= 0 && b->cols[ik].type.base == CK_CH_STRING) s = ck_ch_col_str(&b->cols[ik], i, &n);
    else s = "", n = 0;
    d->kinds[d->n] = ck_strndup(s, n);
    d->n++;
  }
  return 0;
}

static int describe(ck_ch_client_t *client, const ch_cfg_t *c, ch_desc_t *d, ck_error_t *err) {
  ck_buf_t sql;
  ck_buf_init(&sql);
  ck_buf_printf(&sql, "DESCRIBE TABLE %s", c->label);
  memset(d, 0, sizeof *d);
  ck_error_t inner = {0};
  int rc = ck_ch_query(client, sql.data, NULL, 0, on_desc_block, d, &inner);
  ck_buf_fini(&sql);
  if (rc) {
    desc_fini(d);
    return wrap(err, &inner, "could not read the structure of ClickHouse table %s", c->label);
  }
  return 0;
}

/* The value of `name = N` in an engine_full's SETTINGS clause; -1 when it is not there. */
static int64_t engine_setting(const char *engine_full, const char *name) {
  const char *set = strstr(engine_full, " SETTINGS ");
  if (!set) return -1;
  size_t n = strlen(name);
  for (const char *p = set; (p = strstr(p, name)); p += n) {
    if (p[-1] != ' ' && p[-1] != ',') continue;
    const char *q = p + n;
    while (*q == ' ') q++;
    if (*q++ != '=') continue;
    while (*q == ' ') q++;
    if (*q < '0' || *q > '9') return -1;
    return strtoll(q, NULL, 10);
  }
  return -1;
}

typedef struct probe_row {
  char *cells[6];
  int found;
} probe_row_t;

static int on_probe_block(void *arg, const ck_ch_block_t *b, ck_error_t *err) {
  probe_row_t *r = arg;
  if (b->ncols != 6) return ck_error_set(err, CK_EPROTO, "the table probe answered %d columns", b->ncols);
  for (size_t i = 0; i < b->rows && !r->found; i++, r->found = 1)
    for (int c = 0; c < 6; c++) {
      if (b->cols[c].type.base != CK_CH_STRING)
        return ck_error_set(err, CK_EPROTO, "the table probe answered a column of type %s",
                            b->cols[c].type_name);
      size_t n;
      const char *v = ck_ch_col_str(&b->cols[c], i, &n);
      r->cells[c] = ck_strndup(v, n);
    }
  return 0;
}

/* Reads what the server and the table offer against duplicates (see the DESIGN comment). */
static int dedup_probe(ck_ch_client_t *client, const ch_cfg_t *c, ch_dedup_t *d, ck_error_t *err) {
  ck_buf_t sql;
  ck_buf_init(&sql);
  ck_buf_puts(&sql, "SELECT engine, engine_full, "
              "(SELECT toString(count()) FROM system.settings WHERE name = 'insert_deduplication_token'), "
              "(SELECT toString(count()) FROM system.settings WHERE name = 'async_insert'), "
              "(SELECT any(value) FROM system.merge_tree_settings WHERE name = 'non_replicated_deduplication_window'), "
              "(SELECT any(value) FROM system.merge_tree_settings WHERE name = 'replicated_deduplication_window') "
              "FROM system.tables WHERE database = ");
  ck_ch_quote_str(c->database, &sql);
  ck_buf_puts(&sql, " AND name = ");
  ck_ch_quote_str(c->table, &sql);
  probe_row_t r = {0};
  ck_error_t inner = {0};
  int rc = ck_ch_query(client, sql.data, NULL, 0, on_probe_block, &r, &inner);
  ck_buf_fini(&sql);
  memset(d, 0, sizeof *d);
  if (!rc && !r.found)
    rc = ck_error_set(&inner, CK_EBIND, "system.tables has no table %s", c->label);
  if (!rc) {
    snprintf(d->engine, sizeof d->engine, "%s", r.cells[0]);
    d->tokens = strcmp(r.cells[2], "0") != 0;
    d->async = strcmp(r.cells[3], "0") != 0;
    bool merge_tree = strstr(d->engine, "MergeTree") != NULL;
    d->replicated = merge_tree && strncmp(d->engine, "Replicated", 10) == 0;
    const char *name = d->replicated ? "replicated_deduplication_window"
                                     : "non_replicated_deduplication_window";
    int64_t w = merge_tree ? engine_setting(r.cells[1], name) : 0;
    if (w < 0) w = strtoll(d->replicated ? r.cells[5] : r.cells[4], NULL, 10); /* '' → 0 */
    d->window = w;
  }
  for (int i = 0; i < 6; i++) ck_free(r.cells[i]);
  if (rc) return wrap(err, &inner, "could not read the engine and settings of ClickHouse table %s",
                      c->label);
  return 0;
}

/* A number no other open of this sink draws: tokens of a replay never match the old run's. */
static uint64_t run_nonce(void) {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
    v = (uint64_t)ck_wall_ms() * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32;
  return v;
}

/* Why a resend may land twice, or NULL when the server drops it if the first attempt landed. */
static const char *dedup_gap(const ch_dedup_t *d, const ck_ch_server_t *first,
                             const ck_ch_server_t *now) {
  if (!d->window)
    return d->replicated ? "the table's replicated_deduplication_window is 0"
                         : "the table keeps no deduplication log (a MergeTree deduplicates "
                           "only with non_replicated_deduplication_window > 0)";
  if (!d->tokens && !d->replicated)
    return "the server has no insert_deduplication_token";
  if (strcmp(first->name, now->name) || strcmp(first->display_name, now->display_name) ||
      first->major != now->major || first->minor != now->minor || first->patch != now->patch ||
      first->revision != now->revision)
    return "another server answers than the one that took the first attempt";
  return NULL;
}

/* ===================================================================== check ====== */

static int view_probe(ck_ch_client_t *client, const ch_cfg_t *c, int64_t *views, ck_error_t *err);
static int eos_refusal(const ch_cfg_t *c, const ck_ch_server_t *sv, const ch_dedup_t *d,
                       int64_t views, const char *sql_table, ck_error_t *err);

static int ch_check(const ck_schema_t *schema, const ck_options_t *opts, bool as_sink,
                    ck_error_t *err) {
  ch_cfg_t c;
  int rc = cfg_load(opts, &c, err);
  if (rc) {
    cfg_fini(&c);
    return rc;
  }
  /* The server is asked now, briefly; when it cannot be reached the plan goes on and open()
   * checks again (with retries). */
  ck_ch_conf_t conf = client_conf(&c, c.connect_timeout < PLAN_CONNECT_TIMEOUT_MS ? (int)c.connect_timeout
                                                                                  : PLAN_CONNECT_TIMEOUT_MS,
                                  PLAN_RECEIVE_TIMEOUT_MS);
  ck_ch_client_t *client = NULL;
  ck_error_t inner = {0};
  ch_desc_t d = {0};
  rc = ck_ch_client_open(&conf, &client, &inner);
  if (!rc) rc = describe(client, &c, &d, &inner);
  if (rc) {
    if (inner.retriable) {
      CK_LOG_WARN(LOG_SUB, "could not check ClickHouse table %s at plan time (%s); the sink "
                  "checks it again when it starts", c.label, inner.message);
      rc = 0;
    } else {
      rc = wrap(err, &inner, "could not check ClickHouse table %s at %s:%d", c.label, c.host, c.port);
    }
  } else {
    col_plan_t *plan = NULL;
    rc = build_plan(schema, &d, c.checked, c.label, &plan, err);
    plan_free(plan, schema->ncols);
    const char *g = ck_opt_str(opts, ck_sink_common_options, "delivery_guarantee");
    if (!rc && as_sink && g && !strcmp(g, "exactly_once")) {
      ch_dedup_t dd;
      int64_t views = 0;
      if (!(rc = dedup_probe(client, &c, &dd, &inner)) && dd.tokens)
        rc = view_probe(client, &c, &views, &inner);
      if (rc) rc = wrap(err, &inner, "could not check ClickHouse table %s at %s:%d", c.label,
                        c.host, c.port);
      else rc = eos_refusal(&c, ck_ch_client_server(client), &dd, views, NULL, err);
    }
  }
  desc_fini(&d);
  ck_ch_client_free(client);
  cfg_fini(&c);
  return rc;
}

/* ===================================================================== sink ====== */

/* One acknowledged INSERT, for the interval evidence. */
typedef struct ledger_entry {
  char token[300];      /* its insert_deduplication_token (also when the server has none) */
  int64_t interval, seq, rows;
  int attempts;
  int resend;           /* as ch_sink_t.resend */
  const char *why;
} ledger_entry_t;

typedef struct ledger {
  ledger_entry_t *e;
  int n, cap;
} ledger_t;

typedef struct ch_sink {
  ch_cfg_t cfg;
  ch_dedup_t dedup;
  uint64_t run;               /* random per open: tokens of a replay never match the old run's */
  int64_t interval, block_seq; /* the last barrier before the buffered rows; INSERTs since */
  char token[300];            /* the buffered block's token; kept across its resends */
  bool in_doubt;              /* an attempt to insert the buffered block may have landed */
  ck_ch_server_t doubt_server; /* who took that attempt */
  int64_t resends_dedup, resends_may_dup;
  /* exactly once (see the DESIGN comment) */
  bool eos;
  uint64_t identity;
  int instance;            /* in the live-sink registry; -1: none claimed */
  char prefix[64];         /* _clink_stage_<hash>_<subtask>_ : a stage is prefix + checkpoint */
  char job_prefix[48];     /* _clink_stage_<hash>_ : every subtask's stages */
  char open_stage[80];     /* prefix + "open": the interval in progress */
  bool staged;             /* the open stage exists and holds rows of this interval */
  char pending[80];        /* the stage a rename or publish in progress works on */
  int64_t published, dropped; /* stages, since open */
  const char *sql_table;
  int ncols;
  col_plan_t *plan;
  ck_ch_block_t block;
  char *insert_sql;
  ck_ch_client_t *client;
  int64_t first_row_ms; /* when the oldest buffered row arrived; 0: nothing buffered */
  int64_t rows_written, inserts;
  size_t *saved; /* per column: rows, data, nulls, offs lengths before a batch */
  /* the interval evidence's account (ch_account): the destination as open found it, and the
   * ledger of acknowledged INSERTs of the interval in progress (cur) and of the one the last
   * prepare closed (done) */
  char *dest;              /* JSON members, or NULL when open did not get that far */
  int attempts;            /* of the buffered block's INSERT so far */
  int resend;              /* 0: not resent; 1: resent, deduplicated if landed; 2: may duplicate */
  const char *resend_why;  /* resend 2: why (a static string) */
  ledger_t cur, done;
} ch_sink_t;

static const char *tname(const ck_sink_t *sink) { return sink->ctx.table ? sink->ctx.table : "?"; }

/* Connects (Hello) when there is no usable connection. */
static int ensure_client(ch_sink_t *s, ck_error_t *err) {
  if (s->client && ck_ch_client_ok(s->client)) return 0;
  ck_ch_client_free(s->client);
  s->client = NULL;
  ck_ch_conf_t conf = client_conf(&s->cfg, (int)s->cfg.connect_timeout, (int)s->cfg.receive_timeout);
  return ck_ch_client_open(&conf, &s->client, err);
}

static void drop_client(ch_sink_t *s) {
  ck_ch_client_free(s->client);
  s->client = NULL;
}

/* Runs op until it succeeds, fails for a reason a retry cannot cure, or retry_timeout_ms
 * passes; retriable failures are logged with the wait before the next attempt. */
typedef int (*attempt_fn)(ck_sink_t *sink, bool *in_doubt, ck_error_t *err);

static int with_retries(ck_sink_t *sink, attempt_fn op, const char *what, ck_error_t *err) {
  ch_sink_t *s = sink->impl;
  int64_t start = ck_mono_ms(), delay = s->cfg.backoff;
  for (int attempt = 1;; attempt++) {
    ck_error_t e = {0};
    bool in_doubt = false;
    int rc = op(sink, &in_doubt, &e);
    if (!rc) {
      if (attempt > 1)
        CK_LOG_INFO(LOG_SUB, "table '%s': %s succeeded at attempt %d, after %lld ms", tname(sink),
                    what, attempt, (long long)(ck_mono_ms() - start));
      return 0;
    }
    if (!e.retriable) {
      drop_client(s);
      ck_error_t tmp = e;
      return wrap(err, &tmp, "could not %s (table '%s')", what, tname(sink));
    }
    drop_client(s);
    int64_t waited = ck_mono_ms() - start;
    if (s->cfg.retry_timeout > 0 && waited + delay > s->cfg.retry_timeout) {
      ck_error_t tmp = e;
      int code = wrap(err, &tmp, "could not %s (table '%s') in %lld ms of retrying", what,
                      tname(sink), (long long)waited);
      if (err) err->retriable = false;
      return code;
    }
    CK_LOG_WARN(LOG_SUB, "table '%s': could not %s: %s; retrying in %lld ms (attempt %d)%s",
                tname(sink), what, e.message, (long long)delay, attempt,
                in_doubt ? "; the rows were sent and may have been written: they are sent again "
                           "(at least once)" : "");
    ck_sleep_ms(delay);
    delay = delay * 2 > s->cfg.backoff_max ? s->cfg.backoff_max : delay * 2;
  }
}


/* ---- exactly once: stage tables ---- */

#define CH_STAGE_WINDOW 1000 /* blocks a stage's deduplication log keeps */
#define CH_STATE_VERSION 1

static int run_sql(ch_sink_t *s, const char *sql, ck_error_t *err) {
  return ck_ch_query(s->client, sql, NULL, 0, NULL, NULL, err);
}

/* `db`.`name` */
static void stage_label(const ch_sink_t *s, const char *name, ck_buf_t *out) {
  ck_ch_quote_ident(s->cfg.database, out);
  ck_buf_putc(out, '.');
  ck_ch_quote_ident(name, out);
}

typedef struct name_list {
  char **names;
  int n;
} name_list_t;

static void names_fini(name_list_t *l) {
  for (int i = 0; i < l->n; i++) ck_free(l->names[i]);
  ck_free(l->names);
  memset(l, 0, sizeof *l);
}

static int on_names_block(void *arg, const ck_ch_block_t *b, ck_error_t *err) {
  name_list_t *l = arg;
  if (b->ncols != 1 || b->cols[0].type.base != CK_CH_STRING)
    return ck_error_set(err, CK_EPROTO, "a list of names came back as %d columns", b->ncols);
  l->names = ck_realloc(l->names, sizeof(char *) * (l->n + b->rows));
  for (size_t i = 0; i < b->rows; i++) {
    size_t n;
    const char *v = ck_ch_col_str(&b->cols[0], i, &n);
    l->names[l->n++] = ck_strndup(v, n);
  }
  return 0;
}

/* The values of a one-column String query. */
static int query_names(ck_ch_client_t *client, const char *sql, name_list_t *out,
                       ck_error_t *err) {
  memset(out, 0, sizeof *out);
  int rc = ck_ch_query(client, sql, NULL, 0, on_names_block, out, err);
  if (rc) names_fini(out);
  return rc;
}

/* Tables of the target's database whose name starts with prefix. */
static int list_stages(ch_sink_t *s, const char *prefix, name_list_t *out, ck_error_t *err) {
  ck_buf_t sql;
  ck_buf_init(&sql);
  ck_buf_puts(&sql, "SELECT name FROM system.tables WHERE database = ");
  ck_ch_quote_str(s->cfg.database, &sql);
  ck_buf_puts(&sql, " AND startsWith(name, ");
  ck_ch_quote_str(prefix, &sql);
  ck_buf_puts(&sql, ") ORDER BY name");
  int rc = query_names(s->client, sql.data, out, err);
  ck_buf_fini(&sql);
  return rc;
}

static int drop_stage(ch_sink_t *s, const char *name, ck_error_t *err) {
  ck_buf_t sql;
  ck_buf_init(&sql);
  ck_buf_puts(&sql, "DROP TABLE IF EXISTS ");
  stage_label(s, name, &sql);
  ck_buf_puts(&sql, " SYNC");
  int rc = run_sql(s, sql.data, err);
  ck_buf_fini(&sql);
  if (!rc) s->dropped++;
  return rc;
}

/* The open stage, created AS the target (idempotent). */
static int stage_create(ch_sink_t *s, ck_error_t *err) {
  ck_buf_t sql;
  ck_buf_init(&sql);
  ck_buf_puts(&sql, "CREATE TABLE IF NOT EXISTS ");
  stage_label(s, s->open_stage, &sql);
  ck_buf_printf(&sql, " AS %s", s->cfg.label);
  int rc = run_sql(s, sql.data, err);
  if (!rc) {
    ck_buf_reset(&sql);
    ck_buf_puts(&sql, "ALTER TABLE ");
    stage_label(s, s->open_stage, &sql);
    ck_buf_printf(&sql, " MODIFY SETTING non_replicated_deduplication_window = %d", CH_STAGE_WINDOW);
    rc = run_sql(s, sql.data, err);
  }
  ck_buf_fini(&sql);
  if (!rc) s->staged = true;
  return rc;
}

/* Moves every partition of stage `name` into the target, then drops it. Redone from any point
 * it stopped at, it moves only what is left. */
static int publish(ch_sink_t *s, const char *name, ck_error_t *err) {
  ck_buf_t sql;
  ck_buf_init(&sql);
  ck_buf_puts(&sql, "SELECT DISTINCT partition_id FROM system.parts WHERE active AND database = ");
  ck_ch_quote_str(s->cfg.database, &sql);
  ck_buf_puts(&sql, " AND table = ");
  ck_ch_quote_str(name, &sql);
  ck_buf_puts(&sql, " ORDER BY partition_id");
  name_list_t parts;
  int rc = query_names(s->client, sql.data, &parts, err);
  for (int i = 0; i < parts.n && !rc; i++) {
    ck_buf_reset(&sql);
    ck_buf_puts(&sql, "ALTER TABLE ");
    stage_label(s, name, &sql);
    ck_buf_puts(&sql, " MOVE PARTITION ID ");
    ck_ch_quote_str(parts.names[i], &sql);
    ck_buf_printf(&sql, " TO TABLE %s", s->cfg.label);
    rc = run_sql(s, sql.data, err);
    if (!rc) rc = ck_fault_err(CK_FAULT_CH_AFTER_MOVE, err);
  }
  names_fini(&parts);
  ck_buf_fini(&sql);
  if (!rc) rc = drop_stage(s, name, err);
  if (!rc) s->published++, s->dropped--;
  return rc;
}

/* The checkpoint id of an own stage's name, or -1 for the open stage; false if not own. */
static bool stage_id(const char *name, const char *prefix, int64_t *id) {
  size_t n = strlen(prefix);
  if (strncmp(name, prefix, n)) return false;
  const char *t = name + n;
  if (!strcmp(t, "open")) {
    *id = -1;
    return true;
  }
  if (!*t) return false;
  int64_t v = 0;
  for (; *t; t++) {
    if (*t < '0' || *t > '9' || v > (INT64_MAX - 9) / 10) return false;
    v = v * 10 + (*t - '0');
  }
  *id = v;
  return true;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* Publishes own stages with id <= upto (oldest first); with drop_rest also drops the others
 * (ids above upto, and the open stage). upto -1: drop everything own. */
static int resolve(ck_sink_t *sink, int64_t upto, bool drop_rest, ck_error_t *err) {
  ch_sink_t *s = sink->impl;
  name_list_t l;
  int rc = list_stages(s, s->prefix, &l, err);
  if (rc) return rc;
  int64_t *ids = ck_calloc((size_t)l.n + 1, sizeof *ids);
  int n = 0;
  for (int i = 0; i < l.n; i++)
    if (stage_id(l.names[i], s->prefix, &ids[n])) n++;
  qsort(ids, (size_t)n, sizeof *ids, cmp_i64);
  char name[96];
  for (int i = 0; i < n && !rc; i++) {
    if (ids[i] < 0) snprintf(name, sizeof name, "%s", s->open_stage);
    else snprintf(name, sizeof name, "%s%lld", s->prefix, (long long)ids[i]);
    if (ids[i] >= 0 && ids[i] <= upto) rc = publish(s, name, err);
    else if (drop_rest) rc = drop_stage(s, name, err);
  }
  ck_free(ids);
  names_fini(&l);
  if (!rc && drop_rest) s->staged = false;
  return rc;
}

/* Attempts for with_retries: the argument travels in s->pending (a checkpoint id) */
static int commit_attempt(ck_sink_t *sink, bool *in_doubt, ck_error_t *err) {
  ch_sink_t *s = sink->impl;
  (void)in_doubt;
  int rc = ensure_client(s, err);
  return rc ? rc : resolve(sink, strtoll(s->pending, NULL, 10), false, err);
}

static int recover_attempt(ck_sink_t *sink, bool *in_doubt, ck_error_t *err) {
  ch_sink_t *s = sink->impl;
  (void)in_doubt;
  int rc = ensure_client(s, err);
  return rc ? rc : resolve(sink, strtoll(s->pending, NULL, 10), true, err);
}

/* RENAME the open stage to the checkpoint's name in s->pending; done when only that exists. */
static int rename_attempt(ck_sink_t *sink, bool *in_doubt, ck_error_t *err) {
  ch_sink_t *s = sink->impl;
  (void)in_doubt;
  int rc = ensure_client(s, err);
  if (rc) return rc;
  name_list_t l;
  if ((rc = list_stages(s, s->prefix, &l, err))) return rc;
  bool have_open = false, have_ckpt = false;
  for (int i = 0; i < l.n; i++) {
    have_open |= !strcmp(l.names[i], s->open_stage);
    have_ckpt |= !strcmp(l.names[i], s->pending);
  }
  names_fini(&l);
  if (have_ckpt && !have_open) return 0; /* an earlier attempt renamed it */
  if (!have_open) {
    ck_error_set(err, CK_ESTATE, "the stage %s of this checkpoint interval is gone", s->open_stage);
    ck_error_hint(err, "was it dropped by hand? the job restarts from its last checkpoint");
    err->retriable = false;
    return CK_ESTATE;
  }
  ck_buf_t sql;
  ck_buf_init(&sql);
  ck_buf_puts(&sql, "RENAME TABLE ");
  stage_label(s, s->open_stage, &sql);
  ck_buf_puts(&sql, " TO ");
  stage_label(s, s->pending, &sql);
  rc = run_sql(s, sql.data, err);
  ck_buf_fini(&sql);
  return rc;
}

/* How many materialized views read the table. */
static int view_probe(ck_ch_client_t *client, const ch_cfg_t *c, int64_t *views, ck_error_t *err) {
  ck_buf_t sql;
  ck_buf_init(&sql);
  ck_buf_puts(&sql, "SELECT toString(length(dependencies_table)) FROM system.tables WHERE database = ");
  ck_ch_quote_str(c->database, &sql);
  ck_buf_puts(&sql, " AND name = ");
  ck_ch_quote_str(c->table, &sql);
  name_list_t l;
  int rc = query_names(client, sql.data, &l, err);
  ck_buf_fini(&sql);
  if (!rc) *views = l.n ? strtoll(l.names[0], NULL, 10) : 0;
  names_fini(&l);
  return rc;
}

/* What makes exactly once impossible into this server and table, or 0 (see the DESIGN). */
static int eos_refusal(const ch_cfg_t *c, const ck_ch_server_t *sv, const ch_dedup_t *d,
                       int64_t views, const char *sql_table, ck_error_t *err) {
  char of[160] = ""; /* at plan time the error carries the table's position instead */
  if (sql_table) snprintf(of, sizeof of, " of sink table '%s'", sql_table);
  const char *e = d->engine;
  size_t el = strlen(e);
  bool merge_tree = el >= 9 && !strcmp(e + el - 9, "MergeTree");
  if (!d->tokens) {
    ck_error_set(err, CK_EUNSUPPORTED, "ClickHouse %s %llu.%llu.%llu at %s:%d cannot take "
                 "delivery_guarantee = 'exactly_once'%s: it has no "
                 "insert_deduplication_token (22.2 and later have), which its staged INSERTs "
                 "need to land once", sv->name, (unsigned long long)sv->major,
                 (unsigned long long)sv->minor, (unsigned long long)sv->patch, c->host, c->port,
                 of);
    ck_error_hint(err, "use a ClickHouse server of 22.2 or later, or write at least once (remove "
                  "delivery_guarantee) into a ReplacingMergeTree keyed on the rows' identity");
  } else if (!merge_tree || !strncmp(e, "Replicated", 10) || !strncmp(e, "Shared", 6)) {
    ck_error_set(err, CK_EUNSUPPORTED, "ClickHouse table %s is %s, which "
                 "delivery_guarantee = 'exactly_once'%s cannot write: it "
                 "publishes staged parts with MOVE PARTITION, which needs a MergeTree-family "
                 "table that is not Replicated or Shared", c->label, e, of);
    ck_error_hint(err, "write into a MergeTree table, or write at least once");
  } else if (views > 0) {
    ck_error_set(err, CK_EUNSUPPORTED, "ClickHouse table %s has %lld materialized view%s reading "
                 "it, which delivery_guarantee = 'exactly_once'%s would bypass: "
                 "parts are moved into the table, not inserted", c->label, (long long)views,
                 views == 1 ? "" : "s", of);
    ck_error_hint(err, "write at least once, or point the views at a table of their own");
  } else {
    return 0;
  }
  err->retriable = false;
  return CK_EUNSUPPORTED;
}

/* The output identity: job (its real path), SQL table, target and instance. */
static uint64_t eos_identity(const char *job, const char *sql_table, const char *label,
                             int instance) {
  ck_buf_t id;
  ck_buf_init(&id);
  ck_buf_printf(&id, "%s\n%s\n%s", job ? job : "", sql_table ? sql_table : "", label);
  if (instance > 0) ck_buf_printf(&id, "\n#%d", instance); /* the first keeps the plain name */
  uint64_t h = ck_hash64(id.data, id.len, UINT64_C(0x636c696e6b2d6368)); /* "clink-ch" */
  ck_buf_fini(&id);
  return h;
}

static void eos_names(ch_sink_t *s, uint64_t h, int subtask) {
  snprintf(s->job_prefix, sizeof s->job_prefix, "_clink_stage_%016llx_", (unsigned long long)h);
  snprintf(s->prefix, sizeof s->prefix, "%s%d_", s->job_prefix, subtask);
  snprintf(s->open_stage, sizeof s->open_stage, "%sopen", s->prefix);
}

static int open_attempt(ck_sink_t *sink, bool *in_doubt, ck_error_t *err) {
  ch_sink_t *s = sink->impl;
  int rc = ensure_client(s, err);
  if (rc) return rc;
  ch_desc_t d;
  if ((rc = describe(s->client, &s->cfg, &d, err))) return rc;
  if ((rc = dedup_probe(s->client, &s->cfg, &s->dedup, err))) {
    desc_fini(&d);
    return rc;
  }
  plan_free(s->plan, s->ncols);
  s->plan = NULL;
  rc = build_plan(sink->ctx.schema, &d, s->cfg.checked, s->cfg.label, &s->plan, err);
  desc_fini(&d);
  if (rc) return rc;
  ck_buf_t dest;
  ck_buf_init(&dest);
  if ((rc = ck_ch_account_destination(s->client, s->cfg.database, s->cfg.table, &dest, err))) {
    ck_buf_fini(&dest);
    return rc;
  }
  ck_free(s->dest);
  s->dest = ck_buf_detach(&dest);
  return 0;
}

static void ch_close(ck_sink_t *sink);

/* The runtime closes only a sink whose open succeeded: a failed open cleans up itself. */
static int ch_open(ck_sink_t *sink, bool restored, ck_error_t *err) {
  ch_sink_t *s = ck_calloc(1, sizeof *s);
  sink->impl = s;
  s->sql_table = tname(sink);
  s->ncols = sink->ctx.schema->ncols;
  ck_ch_block_init(&s->block);
  s->instance = -1;
  int rc = cfg_load(sink->ctx.options, &s->cfg, err);
  if (rc) goto fail;
  const char *g = ck_opt_str(sink->ctx.options, ck_sink_common_options, "delivery_guarantee");
  s->eos = g && !strcmp(g, "exactly_once");
  char what[400];
  snprintf(what, sizeof what, "read the structure of ClickHouse table %s at %s:%d", s->cfg.label,
           s->cfg.host, s->cfg.port);
  if ((rc = with_retries(sink, open_attempt, what, err))) goto fail;
  if (s->eos) {
    int64_t views = 0;
    if ((rc = view_probe(s->client, &s->cfg, &views, err))) goto fail;
    if ((rc = eos_refusal(&s->cfg, ck_ch_client_server(s->client), &s->dedup, views, tname(sink),
                          err)))
      goto fail;
    char real[PATH_MAX];
    const char *job = sink->ctx.job_name ? sink->ctx.job_name : "";
    if (*job && realpath(job, real)) job = real;
    s->identity = eos_identity(job, tname(sink), s->cfg.label, 0);
    s->instance = ck_sink_live_claim(s->identity, sink->ctx.subtask);
    if (s->instance < 0) {
      rc = ck_error_set(err, CK_EUNSUPPORTED, "too many clickhouse sinks in one process (%d)",
                        CK_SINK_LIVE_MAX);
      goto fail;
    }
    eos_names(s, eos_identity(job, tname(sink), s->cfg.label, s->instance), sink->ctx.subtask);
    if (!restored) { /* a fresh lineage: what this job staged belongs to a run that is over */
      snprintf(what, sizeof what, "drop the stage tables an earlier run left in %s",
               s->cfg.database);
      if ((rc = with_retries(sink, recover_attempt, what, err))) goto fail;
      if (sink->ctx.subtask == 0) {
        name_list_t l;
        if ((rc = list_stages(s, s->job_prefix, &l, err))) goto fail;
        for (int i = 0; i < l.n && !rc; i++)
          if (strncmp(l.names[i], s->prefix, strlen(s->prefix))) rc = drop_stage(s, l.names[i], err);
        names_fini(&l);
        if (rc) goto fail;
      }
      if (s->dropped)
        CK_LOG_INFO(LOG_SUB, "table '%s' subtask %d: dropped %lld stage table%s an earlier run "
                    "of this job left (%s*)", tname(sink), sink->ctx.subtask,
                    (long long)s->dropped, s->dropped == 1 ? "" : "s", s->job_prefix);
    }
  }
  ck_buf_t sql;
  ck_buf_init(&sql);
  if (s->eos) {
    ck_buf_puts(&sql, "INSERT INTO ");
    stage_label(s, s->open_stage, &sql);
    ck_buf_puts(&sql, " (");
  } else {
    ck_buf_printf(&sql, "INSERT INTO %s (", s->cfg.label);
  }
  for (int i = 0; i < s->ncols; i++) {
    if (i) ck_buf_puts(&sql, ", ");
    ck_ch_quote_ident(s->plan[i].name, &sql);
    if (ck_ch_block_add_col(&s->block, s->plan[i].name, s->plan[i].type_name, err) < 0) {
      ck_buf_fini(&sql);
      rc = err && err->code ? err->code : CK_EINTERNAL;
      goto fail;
    }
  }
  ck_buf_puts(&sql, ") VALUES");
  s->insert_sql = ck_buf_detach(&sql);
  s->saved = ck_calloc((size_t)s->ncols * 4 + 1, sizeof(size_t));
  s->run = run_nonce();
  const ck_ch_server_t *sv = ck_ch_client_server(s->client);
  const ch_dedup_t *dd = &s->dedup;
  if (s->eos)
    CK_LOG_INFO(LOG_SUB, "table '%s': writing %s exactly once: each checkpoint interval is "
                "staged in %s%s<checkpoint> and moved into the table when the checkpoint "
                "completes", tname(sink), s->cfg.label, s->cfg.database[0] ? "" : "",
                s->prefix);
  else
  CK_LOG_INFO(LOG_SUB, "table '%s': %s %s; a resent INSERT %s", tname(sink), s->cfg.label,
              dd->engine, dd->window ? (dd->tokens ? "goes under its insert_deduplication_token, "
                                                     "and the table's deduplication log drops it "
                                                     "if the first attempt landed"
                                                   : dd->replicated ? "is dropped by its block "
                                                                      "hash if the first attempt "
                                                                      "landed (no tokens on this "
                                                                      "server)"
                                                                    : "may land twice (the server "
                                                                      "has no tokens)")
                                     : "may land twice (the table keeps no deduplication log)");
  CK_LOG_INFO(LOG_SUB, "table '%s': writing to %s on %s:%d as user '%s' (server %s %llu.%llu.%llu, "
              "revision %llu, protocol %d; compression %s; batches of %lld rows)",
              tname(sink), s->cfg.label, s->cfg.host, s->cfg.port, s->cfg.user, sv->name,
              (unsigned long long)sv->major, (unsigned long long)sv->minor,
              (unsigned long long)sv->patch, (unsigned long long)sv->revision,
              ck_ch_client_revision(s->client), s->cfg.compress ? "lz4" : "none",
              (long long)s->cfg.batch_rows);
  return 0;
fail:
  ch_close(sink);
  return rc;
}

/* ---- write: SQL values into native columns ---- */

static int value_error(ck_sink_t *sink, const col_plan_t *cp, ck_error_t *err, const char *fmt,
                       const char *value) {
  ch_sink_t *s = sink->impl;
  char msg[200];
  snprintf(msg, sizeof msg, fmt, value);
  ck_error_set(err, CK_EEVAL, "could not write to column '%s' of ClickHouse table %s (%s): %s",
               cp->name, s->cfg.label, cp->type_name, msg);
  if (err) err->retriable = false;
  return CK_EEVAL;
}

/* A UUID's 36-character text into ClickHouse's native layout: its two 64-bit halves, each
 * little-endian, the high half first. */
static bool uuid_parse(const char *p, size_t n, uint8_t out[16]) {
  if (n != 36) return false;
  uint64_t half[2] = {0, 0};
  int digits = 0;
  for (size_t i = 0; i < n; i++) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (p[i] != '-') return false;
      continue;
    }
    int c = p[i], v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (v < 0) return false;
    half[digits / 16] = half[digits / 16] << 4 | (uint64_t)v;
    digits++;
  }
  ck_put_le64(out, half[0]);
  ck_put_le64(out + 8, half[1]);
  return true;
}

static void i128_text(__int128 v, char *out, size_t n) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_decimal_format(v, 0, &b);
  snprintf(out, n, "%s", b.data);
  ck_buf_fini(&b);
}

static int put_value(ck_sink_t *sink, const col_plan_t *cp, const ck_col_t *src, size_t i,
                     ck_ch_col_t *dst, ck_error_t *err) {
  ck_type_t st = src->type;
  if (!ck_col_valid(src, i)) {
    if (!cp->t.nullable)
      return value_error(sink, cp, err, "%s", "a NULL arrived, and the column is not Nullable");
    ck_ch_col_put_null(dst);
    return 0;
  }
  char text[64];
  switch (cp->conv) {
    case CV_INT: {
      __int128 v;
      switch (st.id) {
        case CK_T_BOOL: v = ck_col_bool(src, i); break;
        case CK_T_INT32: v = ck_col_i32(src, i); break;
        case CK_T_DECIMAL: v = ck_col_dec(src, i); break;
        default: v = ck_col_i64(src, i); break;
      }
      if (cp->range_check && (v < cp->lo || v > cp->hi)) {
        i128_text(v, text, sizeof text);
        return value_error(sink, cp, err, "the value %s is outside the column's range", text);
      }
      ck_ch_col_put_bits(dst, (uint64_t)v);
      return 0;
    }
    case CV_F32:
      ck_ch_col_put_f32(dst, ck_col_f32(src, i));
      return 0;
    case CV_F64:
      ck_ch_col_put_f64(dst, st.id == CK_T_FLOAT32 ? (double)ck_col_f32(src, i)
                             : st.id == CK_T_INT32 ? (double)ck_col_i32(src, i)
                                                   : ck_col_f64(src, i));
      return 0;
    case CV_DEC: {
      __int128 v;
      switch (st.id) {
        case CK_T_BOOL: v = ck_col_bool(src, i); break;
        case CK_T_INT32: v = ck_col_i32(src, i); break;
        case CK_T_INT64: v = ck_col_i64(src, i); break;
        default: v = ck_col_dec(src, i); break;
      }
      v *= ck_pow10_i128(cp->shift);
      if (v >= cp->hi || v <= -cp->hi) {
        i128_text(v, text, sizeof text);
        return value_error(sink, cp, err, "the value %s has more digits than the column's precision", text);
      }
      uint8_t le[16];
      unsigned __int128 u = (unsigned __int128)v;
      ck_put_le64(le, (uint64_t)u);
      ck_put_le64(le + 8, (uint64_t)(u >> 64));
      ck_ch_col_put_wide(dst, le, ck_ch_type_width(&cp->t));
      return 0;
    }
    case CV_STR: {
      size_t n;
      const char *p = ck_col_str(src, i, &n);
      if (cp->t.base == CK_CH_FIXEDSTRING && n > cp->t.n) {
        snprintf(text, sizeof text, "%zu", n);
        return value_error(sink, cp, err, "a value of %s bytes does not fit", text);
      }
      ck_ch_col_put_str(dst, p, n);
      return 0;
    }
    case CV_UUID: {
      size_t n;
      const char *p = ck_col_str(src, i, &n);
      uint8_t le[16];
      if (!uuid_parse(p, n, le)) {
        snprintf(text, sizeof text, "'%.*s'", n > 40 ? 40 : (int)n, p);
        return value_error(sink, cp, err, "%s is not a UUID (want xxxxxxxx-xxxx-xxxx-xxxx-"
                           "xxxxxxxxxxxx in hexadecimal)", text);
      }
      ck_ch_col_put_wide(dst, le, 16);
      return 0;
    }
    case CV_DAYS: {
      int64_t ms = ck_col_i64(src, i), days = ms / CK_MS_PER_DAY - (ms % CK_MS_PER_DAY < 0);
      if (days < cp->lo || days > cp->hi) {
        ck_buf_t b;
        ck_buf_init(&b);
        ck_date_format(ms, &b);
        snprintf(text, sizeof text, "%s", b.data);
        ck_buf_fini(&b);
        return value_error(sink, cp, err, cp->t.base == CK_CH_DATE
                           ? "the date %s is outside Date's range (1970-01-01 to 2149-06-06)"
                           : "the date %s is outside Date32's range (1900-01-01 to 2299-12-31)",
                           text);
      }
      ck_ch_col_put_bits(dst, (uint64_t)days);
      return 0;
    }
    case CV_DT64: {
      __int128 v = (__int128)ck_col_i64(src, i) * ck_pow10_i128(cp->shift);
      if (v < INT64_MIN || v > INT64_MAX) {
        i128_text(ck_col_i64(src, i), text, sizeof text);
        return value_error(sink, cp, err, "the timestamp %s ms is outside DateTime64's range", text);
      }
      ck_ch_col_put_bits(dst, (uint64_t)(int64_t)v);
      return 0;
    }
  }
  return 0;
}

/* PROTOTYPE: bulk conversion of one batch column when it has no NULLs and needs no per-value
 * check: fixed-width values are copied at once, strings as one byte copy plus offsets. */
static bool put_column_fast(const col_plan_t *cp, const ck_col_t *src, size_t n, ck_ch_col_t *dst) {
  if (cp->t.lowcard || cp->range_check) return false;
  if (src->validity)
    for (size_t i = 0; i < n; i++)
      if (!ck_col_valid(src, i)) return false;
  ck_type_t st = src->type;
  size_t w = ck_ch_type_width(&cp->t);
  switch (cp->conv) {
    case CV_INT:
      if (!(((st.id == CK_T_INT64 || st.id == CK_T_TIMESTAMP) && w == 8) ||
            (st.id == CK_T_INT32 && w == 4)))
        return false;
      ck_buf_append(&dst->data, src->values, n * w);
      break;
    case CV_F64:
      if (st.id != CK_T_FLOAT64) return false;
      ck_buf_append(&dst->data, src->values, n * 8);
      break;
    case CV_F32:
      if (st.id != CK_T_FLOAT32) return false;
      ck_buf_append(&dst->data, src->values, n * 4);
      break;
    case CV_STR: {
      if (cp->t.base != CK_CH_STRING) return false;
      const int32_t *off = src->values;
      size_t bytes = (size_t)(off[n] - off[0]);
      uint64_t base = dst->data.len - (uint64_t)off[0];
      ck_buf_append(&dst->data, src->data + off[0], bytes);
      ck_buf_reserve(&dst->offs, n * 8);
      uint64_t *o = (uint64_t *)(void *)(dst->offs.data + dst->offs.len);
      for (size_t i = 0; i < n; i++) o[i] = base + (uint64_t)off[i + 1];
      dst->offs.len += n * 8;
      break;
    }
    default:
      return false;
  }
  if (cp->t.nullable) {
    ck_buf_reserve(&dst->nulls, n);
    memset(dst->nulls.data + dst->nulls.len, 0, n);
    dst->nulls.len += n;
  }
  dst->rows += n;
  return true;
}

static void save_lengths(ch_sink_t *s) {
  for (int j = 0; j < s->ncols; j++) {
    ck_ch_col_t *c = &s->block.cols[j];
    s->saved[4 * j] = c->rows;
    s->saved[4 * j + 1] = c->data.len;
    s->saved[4 * j + 2] = c->nulls.len;
    s->saved[4 * j + 3] = c->offs.len;
  }
}

static void restore_lengths(ch_sink_t *s) {
  for (int j = 0; j < s->ncols; j++) {
    ck_ch_col_t *c = &s->block.cols[j];
    c->rows = s->saved[4 * j];
    c->data.len = s->saved[4 * j + 1];
    c->nulls.len = s->saved[4 * j + 2];
    c->offs.len = s->saved[4 * j + 3];
  }
}

/* One INSERT of everything buffered. */
static int insert_attempt(ck_sink_t *sink, bool *in_doubt, ck_error_t *err) {
  ch_sink_t *s = sink->impl;
  int rc = ensure_client(s, err);
  if (rc) return rc;
  const ck_ch_server_t *sv = ck_ch_client_server(s->client);
  if (s->eos && !s->staged && (rc = stage_create(s, err))) return rc;
  s->attempts++;
  if (s->in_doubt) {
    ch_dedup_t stage = {.tokens = s->dedup.tokens, .window = CH_STAGE_WINDOW};
    const char *gap = dedup_gap(s->eos ? &stage : &s->dedup, &s->doubt_server, sv);
    if (gap && s->eos) {
      ck_error_set(err, CK_EIO, "an INSERT of %zu rows into the stage %s is in doubt and a "
                   "resend could land twice (%s)", s->block.rows, s->open_stage, gap);
      ck_error_hint(err, "the job restarts from its last checkpoint, which drops the stage");
      err->retriable = false;
      return CK_EIO;
    }
    if (gap || s->resend != 2) s->resend = gap ? 2 : 1, s->resend_why = gap;
    if (gap) {
      s->resends_may_dup++;
      CK_LOG_WARN(LOG_SUB, "table '%s': resending %zu rows that may have been written: may "
                  "duplicate (%s)", tname(sink), s->block.rows, gap);
    } else {
      s->resends_dedup++;
      CK_LOG_INFO(LOG_SUB, "table '%s': resending %zu rows that may have been written%s%s: "
                  "deduplicated if the first attempt landed (a log of %lld blocks; more blocks "
                  "inserted into the table in between would overrun it)", tname(sink),
                  s->block.rows, s->dedup.tokens ? " under insert_deduplication_token " : " (block hash)",
                  s->dedup.tokens ? s->token : "", (long long)s->dedup.window);
    }
  }
  ck_ch_setting_t settings[3];
  int nset = 0;
  if (s->dedup.async) {
    settings[nset++] = (ck_ch_setting_t){"async_insert", "0", CK_CH_SETTING_UINT, false};
    settings[nset++] = (ck_ch_setting_t){"wait_for_async_insert", "1", CK_CH_SETTING_UINT, false};
  }
  if (s->dedup.tokens)
    settings[nset++] = (ck_ch_setting_t){"insert_deduplication_token", s->token,
                                         CK_CH_SETTING_STRING, true};
  const ck_ch_block_t *header;
  if ((rc = ck_ch_insert_begin(s->client, s->insert_sql, settings, nset, &header, err)))
    return rc;
  if (header->ncols != s->ncols) {
    ck_error_set(err, CK_ETYPE, "ClickHouse table %s now takes %d columns for this INSERT, not %d "
                 "(was it altered?)", s->cfg.label, header->ncols, s->ncols);
    return CK_ETYPE;
  }
  for (int j = 0; j < s->ncols; j++)
    if (!ck_ch_type_eq(&header->cols[j].type, &s->plan[j].t)) {
      ck_error_set(err, CK_ETYPE, "column '%s' of ClickHouse table %s is now %s, not %s (was the "
                   "table altered?)", s->plan[j].name, s->cfg.label, header->cols[j].type_name,
                   s->plan[j].type_name);
      ck_error_hint(err, "restart the job so that its columns are checked against the table again");
      return CK_ETYPE;
    }
  *in_doubt = true;
  s->in_doubt = true;
  s->doubt_server = *sv;
  if ((rc = ck_ch_insert_send(s->client, &s->block, err))) return rc;
  return ck_ch_insert_end(s->client, err);
}

static void ledger_add(ledger_t *l, const ch_sink_t *s, int64_t rows) {
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 8;
    l->e = ck_realloc(l->e, sizeof *l->e * (size_t)l->cap);
  }
  ledger_entry_t *e = &l->e[l->n++];
  snprintf(e->token, sizeof e->token, "%s", s->token);
  e->interval = s->interval;
  e->seq = s->block_seq;
  e->rows = rows;
  e->attempts = s->attempts;
  e->resend = s->resend;
  e->why = s->resend_why;
}

static int flush(ck_sink_t *sink, ck_error_t *err) {
  ch_sink_t *s = sink->impl;
  if (!s->block.cols || !s->block.cols[0].rows) {
    s->first_row_ms = 0;
    return 0;
  }
  ck_ch_block_seal(&s->block);
  snprintf(s->token, sizeof s->token, "clink:%s:%s:%d:%016llx:%lld:%lld",
           sink->ctx.job_name ? sink->ctx.job_name : "", tname(sink), sink->ctx.subtask,
           (unsigned long long)s->run, (long long)s->interval, (long long)s->block_seq);
  char what[400];
  snprintf(what, sizeof what, "insert %zu rows into %s", s->block.rows, s->cfg.label);
  s->attempts = 0;
  s->resend = 0;
  s->resend_why = NULL;
  int rc = with_retries(sink, insert_attempt, what, err);
  s->in_doubt = false;
  if (rc) return rc;
  ledger_add(&s->cur, s, (int64_t)s->block.rows);
  s->block_seq++;
  s->rows_written += (int64_t)s->block.rows;
  s->inserts++;
  CK_LOG_DEBUG(LOG_SUB, "table '%s': %zu rows acknowledged by %s", tname(sink), s->block.rows,
               s->cfg.label);
  ck_ch_block_clear_rows(&s->block);
  s->first_row_ms = 0;
  return 0;
}

static bool due(const ch_sink_t *s) {
  if (!s->block.cols || !s->block.cols[0].rows) return false;
  if ((int64_t)s->block.cols[0].rows >= s->cfg.batch_rows) return true;
  return s->cfg.interval_ms > 0 && ck_mono_ms() - s->first_row_ms >= s->cfg.interval_ms;
}

static int ch_write(ck_sink_t *sink, const ck_batch_t *batch, ck_error_t *err) {
  ch_sink_t *s = sink->impl;
  if (!batch->nrows) return 0;
  for (size_t i = 0; i < batch->nrows; i++) {
    ck_row_kind_t k = ck_batch_kind(batch, i);
    if (k == CK_ROW_DELETE || k == CK_ROW_UPDATE_BEFORE) {
      ck_error_set(err, CK_EUNSUPPORTED, "the clickhouse sink of table '%s' cannot apply a %s: "
                   "it only appends rows", tname(sink), k == CK_ROW_DELETE ? "delete" : "retraction");
      ck_error_hint(err, "write an update stream without HAVING (its rows are inserts and new "
                    "values), into a ReplacingMergeTree keyed on the GROUP BY columns");
      if (err) err->retriable = false;
      return CK_EUNSUPPORTED;
    }
  }
  save_lengths(s);
  for (int j = 0; j < s->ncols; j++) {
    const col_plan_t *cp = &s->plan[j];
    const ck_col_t *src = &batch->cols[cp->src];
    ck_ch_col_t *dst = &s->block.cols[j];
    if (put_column_fast(cp, src, batch->nrows, dst)) continue;
    for (size_t i = 0; i < batch->nrows; i++) {
      int rc = put_value(sink, cp, src, i, dst, err);
      if (rc) {
        restore_lengths(s);
        return rc;
      }
    }
  }
  if (!s->first_row_ms) s->first_row_ms = ck_mono_ms();
  return due(s) ? flush(sink, err) : 0;
}

/* At least once: everything before the barrier is acknowledged; no state. Exactly once: the
 * interval's stage gets the checkpoint's name; state version 1: u8 version, u8 mode (1),
 * uvarint prefix length, the prefix, uvarint N, u8 whether N staged anything. */
static int ch_prepare(ck_sink_t *sink, int64_t ckpt, ck_buf_t *out, ck_error_t *err) {
  ch_sink_t *s = sink->impl;
  int rc = flush(sink, err);
  if (rc) return rc;
  ledger_t t = s->done; /* the interval barrier ckpt closes is the one an account reports */
  s->done = s->cur;
  s->cur = t;
  s->cur.n = 0;
  s->interval = ckpt;
  s->block_seq = 0;
  if (!s->eos) return 0;
  bool had = s->staged;
  if (had) {
    snprintf(s->pending, sizeof s->pending, "%s%lld", s->prefix, (long long)ckpt);
    char what[200];
    snprintf(what, sizeof what, "stage checkpoint %lld's rows as %s", (long long)ckpt, s->pending);
    if ((rc = with_retries(sink, rename_attempt, what, err))) return rc;
    s->staged = false;
  }
  ck_buf_putc(out, CH_STATE_VERSION);
  ck_buf_putc(out, 1);
  size_t plen = strlen(s->prefix);
  ck_buf_put_uvarint(out, plen);
  ck_buf_append(out, s->prefix, plen);
  ck_buf_put_uvarint(out, (uint64_t)ckpt);
  ck_buf_putc(out, had ? 1 : 0);
  return 0;
}

static int ch_commit(ck_sink_t *sink, int64_t ckpt, ck_error_t *err) {
  ch_sink_t *s = sink->impl;
  if (!s->eos) return 0;
  snprintf(s->pending, sizeof s->pending, "%lld", (long long)ckpt);
  char what[400];
  snprintf(what, sizeof what, "publish the stages of checkpoint %lld into %s", (long long)ckpt,
           s->cfg.label);
  int64_t before = s->published;
  int rc = with_retries(sink, commit_attempt, what, err);
  if (!rc && s->published > before)
    CK_LOG_DEBUG(LOG_SUB, "table '%s' subtask %d: checkpoint %lld published %lld stage%s",
                 tname(sink), sink->ctx.subtask, (long long)ckpt,
                 (long long)(s->published - before), s->published - before == 1 ? "" : "s");
  return rc;
}

static int ch_recover(ck_sink_t *sink, int64_t ckpt, const void *state, size_t len,
                      ck_error_t *err) {
  ch_sink_t *s = sink->impl;
  const uint8_t *p = state, *end = p + len;
  bool eos = len >= 2 && p[0] == CH_STATE_VERSION && p[1] == 1;
  if (len && !eos)
    return ck_error_set(err, CK_ESTATE, "could not recover the clickhouse sink of table '%s' at "
                        "checkpoint %lld: unknown state version %d", tname(sink), (long long)ckpt,
                        p[0]);
  if (eos != s->eos)
    return ck_error_set(err, CK_ESTATE, "could not recover the clickhouse sink of table '%s': "
                        "checkpoint %lld was taken %s", tname(sink), (long long)ckpt,
                        eos ? "exactly once" : "at least once");
  if (!eos) return 0;
  p += 2;
  uint64_t plen, id;
  if (!ck_uvarint_get(&p, end, &plen) || plen >= sizeof s->prefix ||
      plen > (uint64_t)(end - p))
    goto corrupt;
  char prefix[sizeof s->prefix];
  memcpy(prefix, p, plen);
  prefix[plen] = 0;
  p += plen;
  if (!ck_uvarint_get(&p, end, &id) || id != (uint64_t)ckpt || p + 1 != end) goto corrupt;
  if (strcmp(prefix, s->prefix)) {
    CK_LOG_INFO(LOG_SUB, "table '%s' subtask %d: the job's stages are named %s* since "
                "checkpoint %lld (this run would name them %s*); keeping that name", tname(sink),
                sink->ctx.subtask, prefix, (long long)ckpt, s->prefix);
    size_t keep = strlen(s->prefix) - strlen(s->job_prefix); /* "<subtask>_" */
    snprintf(s->prefix, sizeof s->prefix, "%s", prefix);
    if (plen > keep) snprintf(s->job_prefix, sizeof s->job_prefix, "%.*s", (int)(plen - keep), prefix);
    snprintf(s->open_stage, sizeof s->open_stage, "%sopen", s->prefix);
    ck_buf_t sql;
    ck_buf_init(&sql);
    ck_buf_puts(&sql, "INSERT INTO ");
    stage_label(s, s->open_stage, &sql);
    ck_buf_puts(&sql, strchr(s->insert_sql, '('));
    ck_free(s->insert_sql);
    s->insert_sql = ck_buf_detach(&sql);
  }
  snprintf(s->pending, sizeof s->pending, "%lld", (long long)ckpt);
  char what[200];
  snprintf(what, sizeof what, "recover the stages of checkpoint %lld", (long long)ckpt);
  int64_t pub = s->published, drop = s->dropped;
  int rc = with_retries(sink, recover_attempt, what, err);
  if (rc) return rc;
  CK_LOG_INFO(LOG_SUB, "table '%s' subtask %d recovered at checkpoint %lld: published %lld "
              "stage%s of completed checkpoints, dropped %lld of checkpoints that never "
              "completed", tname(sink), sink->ctx.subtask, (long long)ckpt,
              (long long)(s->published - pub), s->published - pub == 1 ? "" : "s",
              (long long)(s->dropped - drop));
  return 0;
corrupt:
  return ck_error_set(err, CK_ESTATE, "could not recover the clickhouse sink of table '%s' at "
                      "checkpoint %lld: the state is truncated or corrupt", tname(sink),
                      (long long)ckpt);
}

static int ch_finish(ck_sink_t *sink, ck_error_t *err) {
  int rc = flush(sink, err);
  ch_sink_t *s = sink->impl;
  if (!rc && s->eos && s->staged) { /* rows no checkpoint covers: a job without checkpoints */
    snprintf(s->pending, sizeof s->pending, "%s", s->open_stage);
    rc = ensure_client(s, err);
    if (!rc) rc = publish(s, s->open_stage, err);
    if (!rc) s->staged = false;
  }
  if (!rc)
    CK_LOG_INFO(LOG_SUB, "table '%s': %lld rows written to %s in %lld inserts (resent: %lld "
                "deduplicated if landed, %lld may duplicate)", tname(sink),
                (long long)s->rows_written, s->cfg.label, (long long)s->inserts,
                (long long)s->resends_dedup, (long long)s->resends_may_dup);
  return rc;
}

static void ch_close(ck_sink_t *sink) {
  ch_sink_t *s = sink->impl;
  if (!s) return;
  ck_ch_client_free(s->client);
  plan_free(s->plan, s->ncols);
  ck_ch_block_fini(&s->block);
  ck_free(s->insert_sql);
  ck_free(s->saved);
  ck_free(s->dest);
  ck_free(s->cur.e);
  ck_free(s->done.e);
  if (s->instance >= 0) ck_sink_live_release(s->identity, sink->ctx.subtask, s->instance);
  cfg_fini(&s->cfg);
  ck_free(s);
  sink->impl = NULL;
}

/* The interval evidence's account (see ch_account.h and docs/evidence.md): the destination as
 * open found it, what the sink does against duplicates and async inserts, the column plan,
 * and the ledger of the INSERTs acknowledged between the previous barrier and ckpt. */
static int ch_account(ck_sink_t *sink, int64_t ckpt, ck_buf_t *out, ck_error_t *err) {
  (void)err;
  ch_sink_t *s = sink->impl;
  ck_buf_printf(out, "{\"kind\":\"clickhouse\",\"checkpoint\":%lld,\"endpoint\":",
                (long long)ckpt);
  char ep[300];
  snprintf(ep, sizeof ep, "%s:%d", s->cfg.host, s->cfg.port);
  ck_buf_put_json_str(out, ep, strlen(ep));
  ck_buf_printf(out, ",\"mode\":\"%s\",\"destination\":{", s->eos ? "exactly_once" : "at_least_once");
  if (s->dest) ck_buf_puts(out, s->dest);
  ck_buf_puts(out, "},\"dedup\":{");
  const ch_dedup_t *d = &s->dedup;
  ck_buf_printf(out, "\"tokens\":%s,\"replicated\":%s,\"window\":%lld,\"async_insert\":%s,"
                "\"sent_with_each_insert\":{", d->tokens ? "true" : "false",
                d->replicated ? "true" : "false", (long long)(s->eos ? CH_STAGE_WINDOW : d->window),
                d->async ? "true" : "false");
  if (d->async) ck_buf_puts(out, "\"async_insert\":\"0\",\"wait_for_async_insert\":\"1\"");
  if (d->tokens) ck_buf_printf(out, "%s\"insert_deduplication_token\":\"<the entry's token>\"",
                               d->async ? "," : "");
  ck_buf_puts(out, "}},\"columns\":[");
  for (int j = 0; j < s->ncols; j++) {
    const col_plan_t *cp = &s->plan[j];
    char tn[64];
    if (j) ck_buf_putc(out, ',');
    ck_buf_puts(out, "{\"sql_column\":");
    const char *sn = sink->ctx.schema->names[cp->src];
    ck_buf_put_json_str(out, sn, strlen(sn));
    ck_type_name(sink->ctx.schema->types[cp->src], tn, sizeof tn);
    ck_buf_puts(out, ",\"declared\":");
    ck_buf_put_json_str(out, tn, strlen(tn));
    ck_buf_puts(out, ",\"column\":");
    ck_buf_put_json_str(out, cp->name, strlen(cp->name));
    ck_buf_puts(out, ",\"target\":");
    ck_buf_put_json_str(out, cp->type_name, strlen(cp->type_name));
    ck_buf_printf(out, ",\"range_checked\":%s}", cp->range_check ? "true" : "false");
  }
  int64_t rows = 0;
  ck_buf_puts(out, "],\"ledger\":[");
  for (int i = 0; i < s->done.n; i++) {
    const ledger_entry_t *e = &s->done.e[i];
    if (i) ck_buf_putc(out, ',');
    ck_buf_puts(out, "{\"token\":");
    if (d->tokens || s->eos) ck_buf_put_json_str(out, e->token, strlen(e->token));
    else ck_buf_puts(out, "null");
    ck_buf_printf(out, ",\"block\":\"%lld:%lld\",\"rows\":%lld,\"attempts\":%d,\"in_doubt\":%s,"
                  "\"resend\":%s", (long long)e->interval, (long long)e->seq, (long long)e->rows,
                  e->attempts, e->resend ? "true" : "false",
                  e->resend == 0 ? "null" : e->resend == 1 ? "\"deduplicated\"" : "\"may_duplicate\"");
    if (e->why) {
      ck_buf_puts(out, ",\"why\":");
      ck_buf_put_json_str(out, e->why, strlen(e->why));
    }
    ck_buf_putc(out, '}');
    rows += e->rows;
  }
  ck_buf_printf(out, "],\"rows\":%lld,\"inserts\":%d}", (long long)rows, s->done.n);
  return 0;
}

static const ck_sink_ops_t ch_sink_ops = {
    ch_open, ch_write, ch_prepare, ch_commit, ch_finish, ch_close, ch_recover,
    .account = ch_account,
};

const ck_connector_t ck_clickhouse_connector = {
    .name = "clickhouse",
    .description = "inserts rows into a ClickHouse table over the native TCP protocol, "
                   "synchronously and acknowledged, flushing at every checkpoint: at least once, "
                   "or exactly once with delivery_guarantee = 'exactly_once' (a server of 22.2 "
                   "or later, a MergeTree-family table that is not Replicated or Shared, no "
                   "materialized view reading it). Exactly once stages each checkpoint "
                   "interval's rows in a table of their own (_clink_stage_<job>_<subtask>_<N>, "
                   "created AS the target, every INSERT under a deduplication token; readers of "
                   "the target see nothing) and moves its parts into the target with MOVE "
                   "PARTITION when checkpoint N completes: a publish redone after a crash moves "
                   "only what is left, and a stage a dead run left is published or dropped as "
                   "its checkpoint completed or not. At least once, each INSERT goes under its "
                   "own insert_deduplication_token where the server has them, so a resend after "
                   "a failure in doubt is dropped by a table that keeps a deduplication log "
                   "(Replicated*MergeTree, or MergeTree with non_replicated_deduplication_window "
                   "> 0); the log says of each resend whether it may duplicate",
    .source_options = NULL,
    .sink_options = ch_sink_options,
    .source = NULL,
    .sink = &ch_sink_ops,
    .sink_guarantee = CK_GUARANTEE_EXACTLY_ONCE, /* only when asked; at least once otherwise */
    .bounded = false,
    .check = ch_check,
};

int ck_ch_sink_check_columns(const ck_schema_t *schema, int n, const char *const *names,
                             const char *const *types, const char *const *kinds, bool checked,
                             ck_error_t *err) {
  ch_desc_t d = {n, (char **)names, (char **)types, (char **)kinds};
  col_plan_t *plan = NULL;
  int rc = build_plan(schema, &d, checked, "`default`.`t`", &plan, err);
  plan_free(plan, schema->ncols);
  return rc;
}
