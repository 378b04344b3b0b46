/*
 * DESIGN: see capture.h — the reading half: a .cap file back into its header, batches and
 * control events, and the one JSON rendering of a row that capture-cat and replay share.
 *
 * The Arrow reader (base/arrow_ipc.c) checks every offset of the stream; on top of it this
 * checks that the file is a capture (its format, control columns and the input columns its
 * metadata declares, in that order and of their stored types), that every record batch is
 * records only or one control event, and that every value it turns back into a SQL value fits
 * its type. Anything else is CK_EDECODE naming what is wrong (the fuzz target,
 * fuzz/fuzz_capture.c, holds it to that).
 *
 * Threads: a reader belongs to its caller's thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/arrow_ipc.h"
#include "capture/capture.h"

#define NCTL 4

struct ck_capture_reader {
  ck_arrow_reader_t ar;
  ck_capture_header_t h;
};

static int bad(ck_error_t *err, const char *what) {
  return ck_error_set(err, CK_EDECODE, "could not read the capture: %s", what);
}

static bool parse_i64(const char *s, int64_t *v) {
  if (!s || !*s) return false;
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (errno || *end) return false;
  *v = x;
  return true;
}

static ck_arrow_type_t stored_type(ck_type_id_t id) {
  switch (id) {
    case CK_T_FLOAT32:
    case CK_T_FLOAT64: return CK_ARROW_FLOAT64;
    case CK_T_DECIMAL: return CK_ARROW_BINARY;
    case CK_T_STRING: return CK_ARROW_UTF8;
    default: return CK_ARROW_INT64;
  }
}

int ck_capture_reader_open(const void *data, size_t len, ck_capture_reader_t **out,
                           ck_error_t *err) {
  *out = NULL;
  ck_capture_reader_t *r = ck_calloc(1, sizeof *r);
  ck_capture_header_t *h = &r->h;
  int rc = ck_arrow_reader_open(&r->ar, data, len, err);
  if (rc) goto fail;
  const ck_arrow_reader_t *ar = &r->ar;
  int64_t v;
#define META(k) ck_arrow_reader_meta(ar, "clink.capture." k)
  if (!parse_i64(META("format"), &v)) {
    rc = bad(err, "it has no clink.capture.format (not a capture file)");
    goto fail;
  }
  if (v != CK_CAPTURE_FORMAT) {
    rc = ck_error_set(err, CK_EDECODE, "could not read the capture: its format is %lld, this "
                      "clink reads format %d", (long long)v, CK_CAPTURE_FORMAT);
    goto fail;
  }
  h->format = (int)v;
  int64_t op, sub, task, fp = 0;
  const char *ep = META("epoch"), *tr = META("truncated"), *name = META("op_name");
  const char *fps = META("plan_fingerprint");
  if (!parse_i64(META("op"), &op) || !parse_i64(META("subtask"), &sub) ||
      !parse_i64(META("task"), &task) || !parse_i64(META("from_checkpoint"), &h->from_checkpoint) ||
      !parse_i64(META("records_seen"), &h->records_seen) ||
      !parse_i64(META("records_stored"), &h->records_stored) || !ep ||
      !ck_capture_parse_epoch(ep, &h->epoch) || !tr || !fps || op < 0 || op > 1 << 20 ||
      sub < 0 || sub > 1 << 20 || task < 0 || task > 1 << 24 || h->from_checkpoint < 0 ||
      h->records_seen < 0 || h->records_stored < 0) {
    rc = bad(err, "its clink.capture.* metadata is missing or damaged");
    goto fail;
  }
  (void)fp;
  h->op = (int)op;
  h->subtask = (int)sub;
  h->task = (int)task;
  h->truncated = strcmp(tr, "true") == 0;
  h->plan_fingerprint = strtoull(fps, NULL, 16);
  snprintf(h->op_name, sizeof h->op_name, "%s", name ? name : "");
  /* the input columns' SQL types: "id:precision:scale,…" */
  const char *types = META("types");
  if (!types) {
    rc = bad(err, "it has no clink.capture.types");
    goto fail;
  }
#undef META
  int n = 0;
  for (const char *p = types; *p;) {
    int id, pr, sc, used = 0;
    if (n >= CK_CAPTURE_MAX_COLS || sscanf(p, "%d:%d:%d%n", &id, &pr, &sc, &used) != 3 ||
        id < CK_T_NULL || id > CK_T_TIMESTAMP || pr < 0 || pr > CK_DECIMAL_MAX_PRECISION ||
        sc < 0 || sc > pr) {
      rc = bad(err, "its clink.capture.types is damaged");
      goto fail;
    }
    h->types[n++] = (ck_type_t){(ck_type_id_t)id, (uint8_t)pr, (uint8_t)sc};
    p += used;
    if (*p == ',') p++;
    else if (*p) {
      rc = bad(err, "its clink.capture.types is damaged");
      goto fail;
    }
  }
  h->ncols = n;
  static const char *const ctl[NCTL] = {"__event", "__value", "__input", "__kind"};
  static const ck_arrow_type_t ctl_t[NCTL] = {CK_ARROW_UINT16, CK_ARROW_INT64, CK_ARROW_UINT16,
                                              CK_ARROW_UINT16};
  if (ar->nfields != NCTL + n) {
    rc = bad(err, "its columns are not the four control columns and the declared input");
    goto fail;
  }
  for (int i = 0; i < NCTL; i++)
    if (strcmp(ar->fields[i].name, ctl[i]) || ar->fields[i].type != ctl_t[i]) {
      rc = bad(err, "its control columns are not __event, __value, __input, __kind");
      goto fail;
    }
  for (int c = 0; c < n; c++) {
    if (ar->fields[NCTL + c].type != stored_type(h->types[c].id)) {
      rc = bad(err, "an input column is not stored as its declared type");
      goto fail;
    }
    snprintf(h->names[c], sizeof h->names[c], "%s", ar->fields[NCTL + c].name);
  }
  *out = r;
  return 0;
fail:
  ck_free(r);
  return rc;
}

const ck_capture_header_t *ck_capture_reader_header(const ck_capture_reader_t *r) { return &r->h; }

void ck_capture_reader_free(ck_capture_reader_t *r) { ck_free(r); }

/* Row i of stored column c appended to col (of the SQL type the header declares). */
static int append_value(const ck_arrow_reader_t *ar, int c, int64_t i, ck_col_t *col,
                        ck_error_t *err) {
  if (!ck_arrow_valid(ar, c, i)) {
    ck_col_append_null(col);
    return 0;
  }
  switch (col->type.id) {
    case CK_T_NULL: ck_col_append_null(col); return 0;
    case CK_T_BOOL: {
      int64_t v = ck_arrow_get_i64(ar, c, i);
      if (v != 0 && v != 1) return bad(err, "a BOOLEAN value is neither 0 nor 1");
      ck_col_append_bool(col, v);
      return 0;
    }
    case CK_T_INT32: {
      int64_t v = ck_arrow_get_i64(ar, c, i);
      if (v < INT32_MIN || v > INT32_MAX) return bad(err, "an INT value is out of range");
      ck_col_append_i32(col, (int32_t)v);
      return 0;
    }
    case CK_T_INT64:
    case CK_T_TIMESTAMP: ck_col_append_i64(col, ck_arrow_get_i64(ar, c, i)); return 0;
    case CK_T_FLOAT32: ck_col_append_f32(col, (float)ck_arrow_get_f64(ar, c, i)); return 0;
    case CK_T_FLOAT64: ck_col_append_f64(col, ck_arrow_get_f64(ar, c, i)); return 0;
    case CK_T_DECIMAL: {
      size_t n;
      const uint8_t *p = ck_arrow_get_bytes(ar, c, i, &n);
      if (n != 16) return bad(err, "a DECIMAL value is not 16 bytes");
      ck_i128 v;
      memcpy(&v, p, 16);
      ck_col_append_dec(col, v);
      return 0;
    }
    case CK_T_STRING: {
      size_t n;
      const uint8_t *p = ck_arrow_get_bytes(ar, c, i, &n);
      ck_col_append_str(col, (const char *)p, n);
      return 0;
    }
  }
  return bad(err, "a column has an unknown type");
}

int ck_capture_reader_next(ck_capture_reader_t *r, ck_capture_item_t *item, ck_error_t *err) {
  memset(item, 0, sizeof *item);
  ck_arrow_reader_t *ar = &r->ar;
  for (;;) {
    int rc = ck_arrow_reader_next(ar, err);
    if (rc <= 0) return rc;
    int64_t n = ar->nrows;
    if (n == 0) continue;
    for (int c = 0; c < NCTL; c++)
      if (ar->cols[c].validity) return bad(err, "a control column holds NULL");
    uint16_t ev = ck_arrow_get_u16(ar, 0, 0);
    if (ev > CK_CAPTURE_END) return bad(err, "an __event code is unknown");
    if (ev != CK_CAPTURE_RECORD) {
      if (n != 1) return bad(err, "a control event's record batch has more than one row");
      item->kind = (ck_capture_event_t)ev;
      item->value = ck_arrow_get_i64(ar, 1, 0);
      item->input = ck_arrow_get_u16(ar, 2, 0);
      return 1;
    }
    ck_type_t *types = r->h.types;
    ck_batch_t *b = ck_batch_new(r->h.ncols, types, (size_t)n);
    uint8_t *kinds = NULL;
    int64_t *wms = NULL;
    for (int64_t i = 0; i < n; i++) {
      int64_t w = ck_arrow_get_i64(ar, 1, i);
      if (w != INT64_MIN && !wms) {
        wms = ck_malloc((size_t)n * sizeof *wms);
        for (int64_t j = 0; j < i; j++) wms[j] = INT64_MIN;
      }
      if (wms) wms[i] = w;
      if (ck_arrow_get_u16(ar, 0, i) != CK_CAPTURE_RECORD) {
        ck_batch_free(b);
        ck_free(kinds);
        ck_free(wms);
        return bad(err, "a record batch mixes records and control events");
      }
      uint16_t k = ck_arrow_get_u16(ar, 3, i);
      if (k > CK_ROW_DELETE) {
        ck_batch_free(b);
        ck_free(kinds);
        ck_free(wms);
        return bad(err, "a row kind is unknown");
      }
      if (k && !kinds) kinds = ck_calloc((size_t)n, 1);
      if (kinds) kinds[i] = (uint8_t)k;
      for (int c = 0; c < r->h.ncols; c++) {
        int rc2 = append_value(ar, NCTL + c, i, &b->cols[c], err);
        if (rc2) {
          ck_batch_free(b);
          ck_free(kinds);
          ck_free(wms);
          return rc2;
        }
      }
      b->nrows++;
    }
    b->kinds = kinds;
    b->wms = wms;
    ck_batch_seal(b);
    item->kind = CK_CAPTURE_RECORD;
    item->input = ck_arrow_get_u16(ar, 2, 0);
    item->batch = b;
    return 1;
  }
}

void ck_capture_epoch_file(int64_t epoch, char *out, size_t cap) {
  if (epoch == CK_CAPTURE_EPOCH_FINAL) snprintf(out, cap, "epoch-final.cap");
  else snprintf(out, cap, "epoch-%lld.cap", (long long)epoch);
}

bool ck_capture_parse_epoch(const char *text, int64_t *epoch) {
  if (strcmp(text, "final") == 0) {
    *epoch = CK_CAPTURE_EPOCH_FINAL;
    return true;
  }
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || *end || v < 1) return false;
  *epoch = v;
  return true;
}

/* ---------------------------------------------------------------- rendering */

static void put_dec(ck_buf_t *out, ck_i128 v, int scale) {
  char digits[64];
  int n = 0;
  bool neg = v < 0;
  unsigned __int128 u = neg ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
  do {
    digits[n++] = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u);
  while (n <= scale) digits[n++] = '0';
  if (neg) ck_buf_putc(out, '-');
  for (int i = n - 1; i >= 0; i--) {
    ck_buf_putc(out, digits[i]);
    if (i == scale && scale > 0) ck_buf_putc(out, '.');
  }
}

void ck_capture_row_json(const ck_batch_t *batch, size_t r, const char *const *names,
                         ck_buf_t *out) {
  static const char *const kinds[] = {"+I", "-U", "+U", "-D"};
  ck_buf_putc(out, '{');
  bool first = true;
  if (batch->kinds && batch->kinds[r] != CK_ROW_INSERT && batch->kinds[r] <= CK_ROW_DELETE) {
    ck_buf_printf(out, "\"__kind\":\"%s\"", kinds[batch->kinds[r]]);
    first = false;
  }
  for (int c = 0; c < batch->ncols; c++) {
    const ck_col_t *col = &batch->cols[c];
    if (!first) ck_buf_putc(out, ',');
    first = false;
    ck_buf_put_json_str(out, names[c], strlen(names[c]));
    ck_buf_putc(out, ':');
    if (!ck_col_valid(col, r) || col->type.id == CK_T_NULL) {
      ck_buf_puts(out, "null");
      continue;
    }
    switch (col->type.id) {
      case CK_T_BOOL: ck_buf_puts(out, ck_col_bool(col, r) ? "true" : "false"); break;
      case CK_T_INT32: ck_buf_printf(out, "%d", ck_col_i32(col, r)); break;
      case CK_T_INT64:
      case CK_T_TIMESTAMP: ck_buf_printf(out, "%lld", (long long)ck_col_i64(col, r)); break;
      case CK_T_FLOAT32:
      case CK_T_FLOAT64: {
        double v = col->type.id == CK_T_FLOAT32 ? ck_col_f32(col, r) : ck_col_f64(col, r);
        if (v != v || v - v != 0) ck_buf_printf(out, "\"%s\"", v != v ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
        else ck_buf_printf(out, "%.17g", v);
        break;
      }
      case CK_T_DECIMAL:
        ck_buf_putc(out, '"');
        put_dec(out, ck_col_dec(col, r), col->type.scale);
        ck_buf_putc(out, '"');
        break;
      case CK_T_STRING: {
        size_t n = 0;
        const char *s = col->data ? ck_col_str(col, r, &n) : ""; /* only empty strings so far */
        ck_buf_put_json_str(out, s, n);
        break;
      }
      default: ck_buf_puts(out, "null"); break;
    }
  }
  ck_buf_putc(out, '}');
}
