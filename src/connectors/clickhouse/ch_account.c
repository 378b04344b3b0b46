/*
 * DESIGN: see ch_account.h. Every question is one SELECT whose columns are all Strings (the
 * server's own toString), so one row collector serves them all; what a server may lack is
 * asked about first (system.functions, system.columns), so no question fails for a missing
 * function or column.
 */
#include "connectors/clickhouse/ch_account.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"

#define ACC_MAX_COLS 8
#define ACC_MAX_ROWS 16
#define NIL_UUID "00000000-0000-0000-0000-000000000000"

typedef struct acc_rows {
  int ncols, nrows;
  char *cells[ACC_MAX_ROWS][ACC_MAX_COLS];
} acc_rows_t;

static void rows_fini(acc_rows_t *r) {
  for (int i = 0; i < r->nrows; i++)
    for (int c = 0; c < r->ncols; c++) ck_free(r->cells[i][c]);
  r->nrows = 0;
}

static int on_rows(void *arg, const ck_ch_block_t *b, ck_error_t *err) {
  acc_rows_t *r = arg;
  if (b->ncols != r->ncols)
    return ck_error_set(err, CK_EPROTO, "a system table question answered %d columns, not %d",
                        b->ncols, r->ncols);
  for (int c = 0; c < b->ncols; c++)
    if (b->cols[c].type.base != CK_CH_STRING)
      return ck_error_set(err, CK_EPROTO, "a system table question answered a column of type %s",
                          b->cols[c].type_name);
  for (size_t i = 0; i < b->rows && r->nrows < ACC_MAX_ROWS; i++, r->nrows++)
    for (int c = 0; c < b->ncols; c++) {
      size_t n;
      const char *v = ck_ch_col_str(&b->cols[c], i, &n);
      r->cells[r->nrows][c] = ck_strndup(v, n);
    }
  return 0;
}

/* 0 with the rows; 1 when the server refused the question (why holds its message); a negative
 * code when the connection broke. */
static int ask(ck_ch_client_t *client, const char *sql, int ncols, acc_rows_t *r, char *why,
               size_t whylen, ck_error_t *err) {
  memset(r, 0, sizeof *r);
  r->ncols = ncols;
  ck_error_t inner = {0};
  int rc = ck_ch_query(client, sql, NULL, 0, on_rows, r, &inner);
  if (!rc) return 0;
  rows_fini(r);
  if (!ck_ch_client_ok(client)) {
    *err = inner;
    return rc;
  }
  snprintf(why, whylen, "the server refused the question: %.200s", inner.message);
  return 1;
}

static void put_str(ck_buf_t *out, const char *s) {
  if (s) ck_buf_put_json_str(out, s, strlen(s));
  else ck_buf_puts(out, "null");
}

typedef struct absent {
  int n;
  const char *fact[12];
  char why[12][256];
} absent_t;

static void absent_add(absent_t *a, const char *fact, const char *why) {
  if (a->n >= 12) return;
  a->fact[a->n] = fact;
  snprintf(a->why[a->n], sizeof a->why[a->n], "%s", why);
  a->n++;
}

/* `name IN ('a', 'b')` rows of (name, value, changed) into out as {name: {value, changed}}. */
static int put_settings(ck_ch_client_t *client, const char *from, const char *const *names,
                        const char *member, ck_buf_t *out, absent_t *ab, ck_error_t *err) {
  ck_buf_t sql;
  ck_buf_init(&sql);
  ck_buf_printf(&sql, "SELECT name, value, toString(changed) FROM %s WHERE name IN (", from);
  for (int i = 0; names[i]; i++) {
    if (i) ck_buf_puts(&sql, ", ");
    ck_ch_quote_str(names[i], &sql);
  }
  ck_buf_puts(&sql, ") ORDER BY name");
  acc_rows_t r;
  char why[256];
  int rc = ask(client, sql.data, 3, &r, why, sizeof why, err);
  ck_buf_fini(&sql);
  if (rc < 0) return rc;
  ck_buf_printf(out, ",\"%s\":", member);
  if (rc == 1) {
    ck_buf_puts(out, "null");
    absent_add(ab, member, why);
    return 0;
  }
  ck_buf_putc(out, '{');
  for (int i = 0; i < r.nrows; i++) {
    if (i) ck_buf_putc(out, ',');
    put_str(out, r.cells[i][0]);
    ck_buf_puts(out, ":{\"value\":");
    put_str(out, r.cells[i][1]);
    ck_buf_printf(out, ",\"changed\":%s}", strcmp(r.cells[i][2], "0") ? "true" : "false");
  }
  ck_buf_putc(out, '}');
  /* the ones this server does not have at all */
  for (int i = 0; names[i]; i++) {
    bool found = false;
    for (int j = 0; j < r.nrows && !found; j++) found = strcmp(r.cells[j][0], names[i]) == 0;
    if (!found) {
      char w[160];
      snprintf(w, sizeof w, "%s has no setting %s on this server version", from, names[i]);
      absent_add(ab, names[i], w);
    }
  }
  rows_fini(&r);
  return 0;
}

static const char *const insert_settings[] = {
    "async_insert", "wait_for_async_insert", "insert_deduplicate", "insert_deduplication_token",
    NULL};
static const char *const window_settings[] = {
    "non_replicated_deduplication_window", "replicated_deduplication_window", NULL};

int ck_ch_account_destination(ck_ch_client_t *client, const char *database, const char *table,
                              ck_buf_t *out, ck_error_t *err) {
  absent_t ab = {0};
  acc_rows_t caps = {0}, uu = {0}, tb = {0};
  char why[256];
  int rc;
  ck_buf_t sql;
  ck_buf_init(&sql);
  /* what this server has, and who it is */
  ck_buf_puts(&sql,
              "SELECT version(), hostName(), "
              "toString((SELECT count() FROM system.functions WHERE name = 'serverUUID')), "
              "toString((SELECT count() FROM system.columns WHERE database = 'system' AND "
              "table = 'tables' AND name = 'uuid')), "
              "toString((SELECT count() FROM system.columns WHERE database = 'system' AND "
              "table = 'tables' AND name = 'engine_full')), "
              "toString((SELECT count() FROM system.columns WHERE database = 'system' AND "
              "table = 'tables' AND name = 'create_table_query')), "
              "(SELECT any(engine) FROM system.databases WHERE name = ");
  ck_ch_quote_str(database, &sql);
  ck_buf_puts(&sql, ")");
  rc = ask(client, sql.data, 7, &caps, why, sizeof why, err);
  if (rc < 0) goto fail;
  const ck_ch_server_t *sv = ck_ch_client_server(client);
  bool have = rc == 0 && caps.nrows == 1;
  ck_buf_printf(out, "\"server\":{\"name\":");
  put_str(out, sv->name);
  ck_buf_puts(out, ",\"version\":");
  put_str(out, have ? caps.cells[0][0] : NULL);
  ck_buf_printf(out, ",\"revision\":%llu,\"display_name\":", (unsigned long long)sv->revision);
  put_str(out, sv->display_name[0] ? sv->display_name : NULL);
  ck_buf_puts(out, ",\"host\":");
  put_str(out, have ? caps.cells[0][1] : NULL);
  if (!have) absent_add(&ab, "server", why);
  /* the server's UUID (21.x on) */
  const char *server_uuid = NULL;
  if (have && strcmp(caps.cells[0][2], "0") == 0) {
    absent_add(&ab, "server_uuid", "the server has no serverUUID() (ClickHouse before 21.x)");
  } else if (have) {
    rc = ask(client, "SELECT toString(serverUUID())", 1, &uu, why, sizeof why, err);
    if (rc < 0) goto fail;
    if (rc == 1) absent_add(&ab, "server_uuid", why);
    else if (uu.nrows == 1 && strcmp(uu.cells[0][0], NIL_UUID) != 0) server_uuid = uu.cells[0][0];
    else absent_add(&ab, "server_uuid", "the server reports the nil UUID (it keeps no uuid file "
                                        "in its data path)");
  }
  ck_buf_puts(out, ",\"uuid\":");
  put_str(out, server_uuid);
  ck_buf_puts(out, "},\"database\":");
  put_str(out, database);
  ck_buf_puts(out, ",\"table\":");
  put_str(out, table);
  ck_buf_puts(out, ",\"database_engine\":");
  put_str(out, have && caps.cells[0][6][0] ? caps.cells[0][6] : NULL);
  /* the table */
  bool has_uuid = have && strcmp(caps.cells[0][3], "0") != 0,
       has_full = have && strcmp(caps.cells[0][4], "0") != 0,
       has_create = have && strcmp(caps.cells[0][5], "0") != 0;
  ck_buf_reset(&sql);
  ck_buf_printf(&sql, "SELECT engine, %s, %s, %s, toString(metadata_modification_time) FROM "
                "system.tables WHERE database = ",
                has_full ? "engine_full" : "''", has_create ? "create_table_query" : "''",
                has_uuid ? "toString(uuid)" : "''");
  ck_ch_quote_str(database, &sql);
  ck_buf_puts(&sql, " AND name = ");
  ck_ch_quote_str(table, &sql);
  rc = ask(client, sql.data, 5, &tb, why, sizeof why, err);
  if (rc < 0) goto fail;
  bool row = rc == 0 && tb.nrows == 1;
  if (rc == 0 && !row) snprintf(why, sizeof why, "system.tables has no such table");
  if (!row) absent_add(&ab, "table_definition", why);
  const char *table_uuid = NULL;
  if (row && has_uuid && strcmp(tb.cells[0][3], NIL_UUID) != 0) {
    table_uuid = tb.cells[0][3];
  } else if (row && has_uuid) {
    snprintf(why, sizeof why, "the table has the nil UUID: its database's engine (%s) gives "
             "tables none (an Atomic database does)", have ? caps.cells[0][6] : "?");
    absent_add(&ab, "table_uuid", why);
  }
  else if (row)
    absent_add(&ab, "table_uuid", "system.tables has no uuid column on this server version");
  if (row && !has_full)
    absent_add(&ab, "engine_full", "system.tables has no engine_full column on this server version");
  if (row && !has_create)
    absent_add(&ab, "create_table_query",
               "system.tables has no create_table_query column on this server version");
  ck_buf_puts(out, ",\"table_uuid\":");
  put_str(out, table_uuid);
  ck_buf_puts(out, ",\"engine\":");
  put_str(out, row ? tb.cells[0][0] : NULL);
  ck_buf_puts(out, ",\"engine_full\":");
  put_str(out, row && has_full ? tb.cells[0][1] : NULL);
  ck_buf_puts(out, ",\"create_table_query\":");
  put_str(out, row && has_create ? tb.cells[0][2] : NULL);
  /* what tells a table recreated with the same definition apart where there is no UUID; a
   * database that keeps no metadata files (chdb's Overlay) reports the zero time */
  bool has_mtime = row && strcmp(tb.cells[0][4], "0000-00-00 00:00:00") != 0 &&
                   strcmp(tb.cells[0][4], "1970-01-01 00:00:00") != 0;
  if (row && !has_mtime)
    absent_add(&ab, "metadata_modification_time", "the table's database keeps no metadata "
               "file time (it reports the zero time)");
  ck_buf_puts(out, ",\"metadata_modification_time\":");
  put_str(out, has_mtime ? tb.cells[0][4] : NULL);
  if ((rc = put_settings(client, "system.settings", insert_settings, "settings", out, &ab, err)))
    goto fail;
  if ((rc = put_settings(client, "system.merge_tree_settings", window_settings,
                         "merge_tree_settings", out, &ab, err)))
    goto fail;
  ck_buf_puts(out, ",\"absent\":{");
  for (int i = 0; i < ab.n; i++) {
    if (i) ck_buf_putc(out, ',');
    put_str(out, ab.fact[i]);
    ck_buf_putc(out, ':');
    put_str(out, ab.why[i]);
  }
  ck_buf_putc(out, '}');
  rc = 0;
fail:
  rows_fini(&caps);
  rows_fini(&uu);
  rows_fini(&tb);
  ck_buf_fini(&sql);
  return rc;
}
