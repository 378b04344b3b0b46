/*
 * DESIGN: see reconcile_read.h. The settings travel with every statement (the Query packet's
 * settings, typed for servers below revision 54429: readonly, max_execution_time and
 * max_result_rows as integers, the overflow modes as strings), so no statement of this session
 * runs without them.
 */
#include "incident/reconcile_read.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/time.h"

int ck_rdest_open(ck_rdest_t *d, const ck_rdest_conf_t *conf, ck_error_t *err) {
  memset(d, 0, sizeof *d);
  d->conf = *conf;
  snprintf(d->max_rows, sizeof d->max_rows, "%lld", (long long)conf->max_rows);
  snprintf(d->max_exec, sizeof d->max_exec, "%d", conf->max_execution_s);
  d->settings[0] = (ck_ch_setting_t){"readonly", "2", CK_CH_SETTING_UINT, true};
  d->settings[1] = (ck_ch_setting_t){"max_execution_time", d->max_exec, CK_CH_SETTING_UINT, true};
  d->settings[2] = (ck_ch_setting_t){"timeout_overflow_mode", "throw", CK_CH_SETTING_STRING, true};
  d->settings[3] = (ck_ch_setting_t){"max_result_rows", d->max_rows, CK_CH_SETTING_UINT, true};
  d->settings[4] = (ck_ch_setting_t){"result_overflow_mode", "throw", CK_CH_SETTING_STRING, true};
  d->nsettings = 5;
  ck_ch_conf_t cc = {
      .host = conf->host,
      .port = conf->port,
      .database = "",
      .user = conf->user,
      .password = conf->password,
      .connect_timeout_ms = conf->receive_timeout_ms < 10000 ? conf->receive_timeout_ms : 10000,
      .receive_timeout_ms = conf->receive_timeout_ms,
      .send_timeout_ms = conf->receive_timeout_ms,
      .compress = false,
  };
  return ck_ch_client_open(&cc, &d->client, err);
}

void ck_rdest_close(ck_rdest_t *d) {
  ck_ch_client_free(d->client);
  d->client = NULL;
}

/* origin of the client's own row bound (a server that does not keep max_result_rows) */
#define RDEST_ORIGIN "reconcile"
#define RDEST_TOO_MANY_ROWS 396

bool ck_rdest_bound(const ck_error_t *err) {
  if (!err) return false;
  if (err->code == CK_ETIMEOUT) return true;
  if (err->code == CK_EPROTO && strcmp(err->origin, RDEST_ORIGIN) == 0) return true;
  /* TOO_MANY_ROWS, TIMEOUT_EXCEEDED, TOO_MANY_ROWS_OR_BYTES */
  return err->code == CK_EREMOTE &&
         (err->origin_code == 158 || err->origin_code == 159 || err->origin_code == 396);
}

/* The client's own max_result_rows: rows past it fail the statement whole, whatever the server
 * did with the setting (the callback's error ends the query; the caller keeps nothing). */
typedef struct counted {
  ck_rdest_t *d;
  int64_t rows;
  ck_ch_block_fn on_block;
  void *arg;
} counted_t;

static int on_counted(void *arg, const ck_ch_block_t *b, ck_error_t *err) {
  counted_t *c = arg;
  c->rows += (int64_t)b->rows;
  if (c->rows > c->d->conf.max_rows) {
    ck_error_set(err, CK_EPROTO, "the server answered more than max_result_rows = %lld rows "
                 "(%lld so far) without refusing the statement", (long long)c->d->conf.max_rows,
                 (long long)c->rows);
    snprintf(err->origin, sizeof err->origin, "%s", RDEST_ORIGIN);
    err->origin_code = RDEST_TOO_MANY_ROWS;
    return CK_EPROTO;
  }
  return c->on_block ? c->on_block(c->arg, b, err) : 0;
}

int ck_rdest_query(ck_rdest_t *d, const char *sql, ck_ch_block_fn on_block, void *arg,
                   ck_error_t *err) {
  if (!d->client)
    return ck_error_set(err, CK_ECONNECT, "could not read the destination: the connection is "
                        "closed");
  d->statements++;
  /* the client's own bound on the whole statement, not only on each read */
  ck_ch_client_set_deadline(d->client, ck_mono_ms() + d->conf.receive_timeout_ms);
  counted_t c = {d, 0, on_block, arg};
  int rc = ck_ch_query(d->client, sql, d->settings, d->nsettings, on_counted, &c, err);
  if (d->client) ck_ch_client_set_deadline(d->client, 0);
  if (rc && !ck_ch_client_ok(d->client)) ck_rdest_close(d); /* out of step: never reused */
  return rc;
}

/* ---- string rows */

static int on_strings(void *arg, const ck_ch_block_t *b, ck_error_t *err) {
  ck_rdest_rows_t *r = arg;
  if (b->ncols != r->ncols)
    return ck_error_set(err, CK_EPROTO, "a system table question answered %d columns, not %d",
                        b->ncols, r->ncols);
  for (int c = 0; c < b->ncols; c++)
    if (b->cols[c].type.base != CK_CH_STRING) /* Nullable(String) too: a scalar subquery's */
      return ck_error_set(err, CK_EPROTO, "a system table question answered a column of type %s",
                          b->cols[c].type_name);
  for (size_t i = 0; i < b->rows; i++) {
    if (r->nrows == r->cap) {
      r->cap = r->cap ? r->cap * 2 : 16;
      r->cells = ck_realloc(r->cells, (size_t)r->cap * (size_t)r->ncols * sizeof *r->cells);
    }
    for (int c = 0; c < b->ncols; c++) {
      size_t n;
      const char *v = ck_ch_col_str(&b->cols[c], i, &n);
      if (ck_ch_col_is_null(&b->cols[c], i)) v = "", n = 0; /* NULL reads as "" */
      r->cells[r->nrows * r->ncols + c] = ck_strndup(v, n);
    }
    r->nrows++;
  }
  return 0;
}

void ck_rdest_rows_fini(ck_rdest_rows_t *r) {
  for (int i = 0; i < r->nrows * r->ncols; i++) ck_free(r->cells[i]);
  ck_free(r->cells);
  memset(r, 0, sizeof *r);
}

int ck_rdest_strings(ck_rdest_t *d, const char *sql, int ncols, ck_rdest_rows_t *out,
                     ck_error_t *err) {
  memset(out, 0, sizeof *out);
  out->ncols = ncols;
  int rc = ck_rdest_query(d, sql, on_strings, out, err);
  if (rc) ck_rdest_rows_fini(out);
  return rc;
}

/* ---- literals */

void ck_rdest_quote_str(const char *text, size_t len, ck_buf_t *out) {
  static const char hex[] = "0123456789ABCDEF";
  ck_buf_putc(out, '\'');
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)text[i];
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      ck_buf_putc(out, (char)c);
    } else {
      char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
      ck_buf_append(out, e, 4);
    }
  }
  ck_buf_putc(out, '\'');
}

int ck_rdest_literal(const ck_cell_rule_t *rule, const ck_cell_t *cell, ck_buf_t *out) {
  if (cell->kind == CK_CELL_BYTES && rule->cls == CK_CELLS_STRING) {
    ck_rdest_quote_str(cell->v.bytes, cell->len, out);
    return 0;
  }
  if (cell->kind != CK_CELL_INT || rule->cls != CK_CELLS_INT) return CK_EUNSUPPORTED;
  static const struct { ck_ch_base_t base; const char *fn; } fns[] = {
      {CK_CH_INT8, "toInt8"},     {CK_CH_INT16, "toInt16"},   {CK_CH_INT32, "toInt32"},
      {CK_CH_INT64, "toInt64"},   {CK_CH_UINT8, "toUInt8"},   {CK_CH_UINT16, "toUInt16"},
      {CK_CH_UINT32, "toUInt32"}, {CK_CH_UINT64, "toUInt64"},
  };
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
    if (fns[i].base == rule->ch.base) {
      /* the digits as a string argument: no sign or width of a bare literal's type decides */
      ck_buf_printf(out, "%s('", fns[i].fn);
      ck_cell_i128_text(cell->v.i, out);
      ck_buf_puts(out, "')");
      return 0;
    }
  return CK_EUNSUPPORTED;
}
