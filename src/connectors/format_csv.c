/*
 * DESIGN: the CSV format (RFC 4180) — decoder and encoder. See format.h for the rules.
 *
 * Decoder: a record is first split into field spans (quoted fields keep a flag saying whether
 * they hold doubled quotes, which are undone only when the field is used), then each field is
 * converted into its column: by position, or through the header map when csv.header='true'.
 * The span array and scratch buffers live in the decoder and are reused, so there is no
 * allocation per field. A record whose field count differs from the table's (or the
 * header's) is an error: it almost always means a shifted or truncated line.
 *
 * Encoder: schema order; a field is quoted when it holds a comma, quote, CR or LF, and the
 * empty string is written as "" so it stays distinct from NULL (an empty field).
 *
 * Threads: a decoder/encoder belongs to one subtask.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "connectors/format_impl.h"

/* ======================================================================== decoder ====== */

typedef struct csv_field {
  const char *s;
  size_t n;
  bool quoted;
  bool escaped; /* holds "" pairs to undo */
} csv_field_t;

typedef struct csv_dec {
  ck_decoder_t base;
  int ncols;
  csv_field_t *fields;
  int fcap;
  int *map;      /* header mode: field i -> column, or -1 */
  int nmap;      /* fields in the header; -1 before a header was seen */
  ck_buf_t str;  /* unescaped quoted fields */
  ck_buf_t num;  /* NUL-terminated number text */
} csv_dec_t;

static void push_field(csv_dec_t *dec, int *nf, csv_field_t f) {
  if (*nf == dec->fcap) {
    dec->fcap = dec->fcap ? dec->fcap * 2 : 16;
    dec->fields = ck_realloc(dec->fields, sizeof *dec->fields * (size_t)dec->fcap);
  }
  dec->fields[(*nf)++] = f;
}

/* Splits rec into dec->fields; returns the field count or a negative error. */
static int split(csv_dec_t *dec, const char *rec, size_t len, ck_error_t *err) {
  const char *p = rec, *end = rec + len;
  /* one trailing line terminator is not part of the record */
  if (end > p && end[-1] == '\n') end--;
  if (end > p && end[-1] == '\r') end--;
  int nf = 0;
  for (;;) {
    csv_field_t f = {p, 0, false, false};
    if (p < end && *p == '"') {
      f.quoted = true;
      const char *q = ++p;
      for (;;) {
        const char *quote = memchr(q, '"', (size_t)(end - q));
        if (!quote)
          return ck_error_set(err, CK_EDECODE,
                              "malformed CSV: field %d has an opening quote but no closing quote",
                              nf + 1);
        if (quote + 1 < end && quote[1] == '"') {
          f.escaped = true;
          q = quote + 2;
          continue;
        }
        f.s = p;
        f.n = (size_t)(quote - p);
        p = quote + 1;
        break;
      }
      if (p < end && *p != ',')
        return ck_error_set(err, CK_EDECODE,
                            "malformed CSV: field %d has '%c' after its closing quote", nf + 1,
                            *p);
    } else {
      const char *comma = memchr(p, ',', (size_t)(end - p));
      const char *stop = comma ? comma : end;
      f.s = p;
      f.n = (size_t)(stop - p);
      p = stop;
    }
    push_field(dec, &nf, f);
    if (p >= end) break;
    p++; /* the comma; a record ending in a comma has an empty last field */
    if (p == end) {
      push_field(dec, &nf, (csv_field_t){p, 0, false, false});
      break;
    }
  }
  return nf;
}

/* The field's text with "" pairs undone. */
static void field_text(csv_dec_t *dec, const csv_field_t *f, const char **s, size_t *n) {
  if (!f->escaped) {
    *s = f->s;
    *n = f->n;
    return;
  }
  ck_buf_reset(&dec->str);
  for (size_t i = 0; i < f->n; i++) {
    ck_buf_putc(&dec->str, f->s[i]);
    if (f->s[i] == '"') i++;
  }
  *s = dec->str.data;
  *n = dec->str.len;
}

static int bad_value(const ck_schema_t *schema, int c, const char *s, size_t n,
                     const char *what, ck_error_t *err) {
  char tok[64];
  ck_format_token(s, n, tok, sizeof tok);
  return ck_error_set(err, CK_EDECODE, "field '%s': %s, found '%s'", schema->names[c], what,
                      tok);
}

/* The whole of [s, s + n) as one number of the grammar every format shares (format_impl.h). */
static bool scan_whole(const char *s, size_t n, ck_num_t *num) {
  const char *why, *at;
  return ck_format_scan_number(s, s + n, num, &why, &at) == 0 && num->n == n;
}

static int field_into(csv_dec_t *dec, int c, const csv_field_t *f, ck_col_t *col,
                      ck_error_t *err) {
  const ck_schema_t *schema = dec->base.schema;
  ck_type_t type = schema->types[c];
  const char *s;
  size_t n;
  if (type.id == CK_T_NULL) {
    ck_col_append_null(col);
    return 0;
  }
  if (type.id == CK_T_STRING) {
    field_text(dec, f, &s, &n);
    ck_col_append_str(col, s, n);
    return 0;
  }
  if (!f->quoted && f->n == 0) {
    ck_col_append_null(col);
    return 0;
  }
  field_text(dec, f, &s, &n);
  const char *raw = s;
  size_t rawn = n;
  while (n && (*s == ' ' || *s == '\t')) s++, n--;
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
  if (!f->quoted && n == 0) { /* only padding */
    ck_col_append_null(col);
    return 0;
  }
  char tname[40], reason[96];
  switch (type.id) {
    case CK_T_BOOL:
      if (n == 4 && ck_str_ieq((ck_str_t){s, n}, CK_STR("true"))) ck_col_append_bool(col, true);
      else if (n == 5 && ck_str_ieq((ck_str_t){s, n}, CK_STR("false")))
        ck_col_append_bool(col, false);
      else return bad_value(schema, c, raw, rawn, ck_format_expected(type), err);
      return 0;
    case CK_T_TIMESTAMP: {
      /* text (ISO 8601, 'yyyy-MM-dd HH:mm:ss[.SSS]') or integer epoch milliseconds */
      ck_num_t num;
      int64_t v;
      if (ck_type_ts_kind(type) > 0) { /* a DATE or TIME: its text only */
        if (!ck_datetime_parse_text(type, s, n, &v))
          return bad_value(schema, c, raw, rawn, ck_format_expected(type), err);
        ck_col_append_i64(col, v);
        return 0;
      }
      if (n && s[0] != '-' && (s[0] < '0' || s[0] > '9' || memchr(s, '-', n) || memchr(s, ':', n))) {
        if (!ck_timestamp_parse_iso(s, n, &v))
          return bad_value(schema, c, raw, rawn, "not a timestamp (expected 'yyyy-MM-dd "
                           "HH:mm:ss[.SSS]' or ISO 8601, or epoch milliseconds)", err);
        ck_col_append_i64(col, v);
        return 0;
      }
      int st = scan_whole(s, n, &num) ? ck_format_num_int(&num, CK_T_INT64, &v) : -1;
      if (st == -1) return bad_value(schema, c, raw, rawn, ck_format_expected(type), err);
      if (st == -2) return bad_value(schema, c, raw, rawn, "out of range for TIMESTAMP", err);
      ck_col_append_i64(col, v);
      return 0;
    }
    case CK_T_INT32:
    case CK_T_INT64: {
      ck_num_t num;
      int64_t v;
      int st = scan_whole(s, n, &num) ? ck_format_num_int(&num, type.id, &v) : -1;
      if (st == -1) return bad_value(schema, c, raw, rawn, ck_format_expected(type), err);
      if (st == -2) {
        snprintf(reason, sizeof reason, "out of range for %s",
                 ck_type_name(type, tname, sizeof tname));
        return bad_value(schema, c, raw, rawn, reason, err);
      }
      if (type.id == CK_T_INT32) ck_col_append_i32(col, (int32_t)v);
      else ck_col_append_i64(col, v);
      return 0;
    }
    case CK_T_FLOAT32:
    case CK_T_FLOAT64: {
      ck_num_t num;
      if (!scan_whole(s, n, &num)) return bad_value(schema, c, raw, rawn, ck_format_expected(type), err);
      double d = 0;
      float fl = 0;
      bool ok = type.id == CK_T_FLOAT32 ? ck_format_num_float(&num, &dec->num, &fl)
                                        : ck_format_num_double(&num, &dec->num, &d);
      if (!ok) {
        snprintf(reason, sizeof reason, "out of range for %s",
                 ck_type_name(type, tname, sizeof tname));
        return bad_value(schema, c, raw, rawn, reason, err);
      }
      if (type.id == CK_T_FLOAT32) ck_col_append_f32(col, fl);
      else ck_col_append_f64(col, d);
      return 0;
    }
    case CK_T_DECIMAL: {
      ck_num_t num;
      ck_i128 v;
      const char *ps;
      size_t pn;
      if (!scan_whole(s, n, &num) || !ck_format_num_plain(&num, &dec->num, &ps, &pn) ||
          !ck_decimal_parse(ps, pn, type.precision, type.scale, &v)) {
        snprintf(reason, sizeof reason, "expected a number that fits %s",
                 ck_type_name(type, tname, sizeof tname));
        return bad_value(schema, c, raw, rawn, reason, err);
      }
      ck_col_append_dec(col, v);
      return 0;
    }
    case CK_T_STRING:
    case CK_T_NULL: break; /* handled above */
  }
  return 0;
}

static int csv_decode(ck_decoder_t *base, const char *rec, size_t len, ck_batch_t *batch,
                      ck_error_t *err) {
  csv_dec_t *dec = (csv_dec_t *)base;
  size_t row0 = ck_format_row0(batch);
  int nf = split(dec, rec, len, err);
  if (nf < 0) return nf;
  int rc = 0;
  if (dec->nmap >= 0) { /* by header names */
    if (nf != dec->nmap)
      return ck_error_set(err, CK_EDECODE, "expected %d fields as in the header, found %d",
                          dec->nmap, nf);
    for (int c = 0; c < dec->ncols; c++) {
      int i = dec->map[dec->nmap + c]; /* the second half maps column -> field */
      if (i < 0) ck_col_append_null(&batch->cols[c]);
      else if ((rc = field_into(dec, c, &dec->fields[i], &batch->cols[c], err))) goto fail;
    }
  } else {
    if (nf != dec->ncols)
      return ck_error_set(err, CK_EDECODE, "expected %d fields, found %d", dec->ncols, nf);
    for (int c = 0; c < dec->ncols; c++)
      if ((rc = field_into(dec, c, &dec->fields[c], &batch->cols[c], err))) goto fail;
  }
  batch->nrows = row0 + 1;
  return 0;
fail:
  ck_format_rollback(batch, row0);
  return rc;
}

static int csv_header(ck_decoder_t *base, const char *rec, size_t len, ck_error_t *err) {
  csv_dec_t *dec = (csv_dec_t *)base;
  const ck_schema_t *schema = base->schema;
  size_t bad = ck_format_utf8_invalid_at(rec, len);
  if (bad < len)
    return ck_error_set(err, CK_EDECODE, "invalid UTF-8 in the header at byte offset %zu", bad);
  int nf = split(dec, rec, len, err);
  if (nf < 0) return nf;
  ck_free(dec->map);
  /* map[0..nf): field -> column; map[nf..nf+ncols): column -> field */
  dec->map = ck_malloc(sizeof *dec->map * (size_t)(nf + dec->ncols));
  dec->nmap = nf;
  for (int i = 0; i < nf + dec->ncols; i++) dec->map[i] = -1;
  for (int pass = 0; pass < 2; pass++) { /* exact names first, then case-insensitive */
    for (int i = 0; i < nf; i++) {
      if (dec->map[i] >= 0) continue;
      const char *s;
      size_t n;
      field_text(dec, &dec->fields[i], &s, &n);
      while (n && s[0] == ' ') s++, n--;
      while (n && s[n - 1] == ' ') n--;
      for (int c = 0; c < dec->ncols; c++) {
        if (dec->map[nf + c] >= 0) continue; /* a repeated name: the first one wins */
        ck_str_t name = ck_str_of(schema->names[c]);
        if (pass == 0 ? ck_str_eq(name, (ck_str_t){s, n}) : ck_utf8_ieq(name.ptr, name.len, s, n)) {
          dec->map[i] = c;
          dec->map[nf + c] = i;
          break;
        }
      }
    }
  }
  return 0;
}

static void csv_dec_free(ck_decoder_t *base) {
  csv_dec_t *dec = (csv_dec_t *)base;
  ck_free(dec->fields);
  ck_free(dec->map);
  ck_buf_fini(&dec->str);
  ck_buf_fini(&dec->num);
  ck_free(dec);
}

static const ck_decoder_ops_t csv_dec_ops = {csv_decode, csv_header, csv_dec_free};

ck_decoder_t *ck_format_csv_decoder_new(const ck_schema_t *schema, bool header) {
  csv_dec_t *dec = ck_calloc(1, sizeof *dec);
  dec->base.ops = &csv_dec_ops;
  dec->base.schema = schema;
  dec->base.multiline = true;
  dec->base.wants_header = header;
  dec->ncols = schema->ncols;
  dec->nmap = -1;
  ck_buf_init(&dec->str);
  ck_buf_init(&dec->num);
  return &dec->base;
}

/* ======================================================================== encoder ====== */

static void put_text(ck_buf_t *out, const char *s, size_t n) {
  bool quote = n == 0;
  for (size_t i = 0; i < n && !quote; i++)
    quote = s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r';
  if (!quote) {
    ck_buf_append(out, s, n);
    return;
  }
  ck_buf_putc(out, '"');
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] != '"') continue;
    ck_buf_append(out, s + run, i + 1 - run); /* through the quote, then its double */
    ck_buf_putc(out, '"');
    run = i + 1;
  }
  ck_buf_append(out, s + run, n - run);
  ck_buf_putc(out, '"');
}

/* type: the column's type in the encoder's schema (a TIMESTAMP's presentation is there). */
static void csv_value(const ck_col_t *col, ck_type_t type, size_t i, ck_buf_t *out) {
  if (!ck_col_valid(col, i)) return;
  switch (col->type.id) {
    case CK_T_NULL: break;
    case CK_T_BOOL: ck_buf_puts(out, ck_col_bool(col, i) ? "true" : "false"); break;
    case CK_T_INT32: ck_format_put_i64(out, ck_col_i32(col, i)); break;
    case CK_T_INT64: ck_format_put_i64(out, ck_col_i64(col, i)); break;
    case CK_T_TIMESTAMP:
      if (ck_type_ts_epoch(type)) ck_format_put_i64(out, ck_col_i64(col, i));
      else ck_timestamp_format_typed(type, ck_col_i64(col, i), out);
      break;
    case CK_T_FLOAT32: ck_format_put_float(out, ck_col_f32(col, i)); break;
    case CK_T_FLOAT64: ck_double_format(ck_col_f64(col, i), out); break;
    case CK_T_DECIMAL: ck_decimal_format(ck_col_dec(col, i), col->type.scale, out); break;
    case CK_T_STRING: {
      size_t n;
      const char *s = ck_col_str(col, i, &n);
      put_text(out, s, n);
      break;
    }
  }
}

static void csv_row(ck_encoder_t *enc, const ck_batch_t *batch, size_t i, ck_buf_t *out) {
  for (int c = 0; c < batch->ncols; c++) {
    if (c) ck_buf_putc(out, ',');
    csv_value(&batch->cols[c],
              c < enc->schema->ncols ? enc->schema->types[c] : batch->cols[c].type, i, out);
  }
  if (batch->kinds) {
    static const char *ops[] = {"insert", "update_before", "update", "delete"};
    if (batch->ncols) ck_buf_putc(out, ',');
    ck_buf_puts(out, ops[ck_batch_kind(batch, i) & 3]);
  }
}

static void csv_enc_header(ck_encoder_t *enc, ck_buf_t *out) {
  for (int c = 0; c < enc->schema->ncols; c++) {
    if (c) ck_buf_putc(out, ',');
    put_text(out, enc->schema->names[c], strlen(enc->schema->names[c]));
  }
  ck_buf_putc(out, '\n');
}

static void csv_enc_free(ck_encoder_t *enc) { ck_free(enc); }

static const ck_encoder_ops_t csv_enc_ops = {csv_row, csv_enc_header, csv_enc_free};

ck_encoder_t *ck_format_csv_encoder_new(const ck_schema_t *schema) {
  ck_encoder_t *enc = ck_calloc(1, sizeof *enc);
  enc->ops = &csv_enc_ops;
  enc->schema = schema;
  return enc;
}
