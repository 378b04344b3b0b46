/* DESIGN: see parquet.h.
 *
 * File: "PAR1", per row group per column one data page (PageHeader, then the values PLAIN:
 * INT32/INT64/DOUBLE little endian, BYTE_ARRAY u32 length + bytes; required columns have no
 * definition or repetition levels), then the FileMetaData, its u32 length and "PAR1". The
 * Thrift compact protocol: a field header is one byte (id delta << 4 | type) when the delta
 * from the previous field of the same struct is 1..15, integers are zigzag varints, strings a
 * varint length and the bytes, a struct ends with a 0 byte.
 */
#include "base/parquet.h"

#include <string.h>

#include "base/alloc.h"
#include "base/bytes.h"

enum { T_I32 = 5, T_I64 = 6, T_BINARY = 8, T_LIST = 9, T_STRUCT = 12 };
enum { P_INT32 = 1, P_INT64 = 2, P_DOUBLE = 5, P_BYTE_ARRAY = 6 };
enum { CT_UTF8 = 0, CT_UINT_16 = 12, CT_UINT_32 = 13, CT_NONE = -1 };

typedef struct tw {
  ck_buf_t *b;
  int last[8];
  int depth;
} tw_t;

/* Thrift compact protocol: ULEB128 varints, zigzag for signed fields (base/bytes.h) */
static void varint(ck_buf_t *b, uint64_t v) { ck_buf_put_uvarint(b, v); }

static void fh(tw_t *w, int id, int type) {
  int d = id - w->last[w->depth];
  if (d > 0 && d <= 15) {
    ck_buf_putc(w->b, (char)(d << 4 | type));
  } else {
    ck_buf_putc(w->b, (char)type);
    varint(w->b, ck_zigzag_encode(id));
  }
  w->last[w->depth] = id;
}

static void f_i32(tw_t *w, int id, int32_t v) {
  fh(w, id, T_I32);
  varint(w->b, ck_zigzag_encode(v));
}
static void f_i64(tw_t *w, int id, int64_t v) {
  fh(w, id, T_I64);
  varint(w->b, ck_zigzag_encode(v));
}
static void put_bin(ck_buf_t *b, const char *s, size_t n) {
  varint(b, n);
  ck_buf_append(b, s, n);
}
static void f_str(tw_t *w, int id, const char *s) {
  fh(w, id, T_BINARY);
  put_bin(w->b, s, strlen(s));
}
static void f_struct(tw_t *w, int id) {
  fh(w, id, T_STRUCT);
  w->last[++w->depth] = 0;
}
static void struct_elem(tw_t *w) { w->last[++w->depth] = 0; } /* a struct in a list */
static void struct_end(tw_t *w) {
  ck_buf_putc(w->b, 0);
  w->depth--;
}
static void f_list(tw_t *w, int id, int elem, int n) {
  fh(w, id, T_LIST);
  if (n < 15) {
    ck_buf_putc(w->b, (char)(n << 4 | elem));
  } else {
    ck_buf_putc(w->b, (char)(0xF0 | elem));
    varint(w->b, (uint64_t)n);
  }
}

static int phys(ck_arrow_type_t t) {
  switch (t) {
    case CK_ARROW_UINT16:
    case CK_ARROW_UINT32: return P_INT32;
    case CK_ARROW_INT64: return P_INT64;
    case CK_ARROW_FLOAT64: return P_DOUBLE;
    default: return P_BYTE_ARRAY;
  }
}

static int converted(ck_arrow_type_t t) {
  switch (t) {
    case CK_ARROW_UINT16: return CT_UINT_16;
    case CK_ARROW_UINT32: return CT_UINT_32;
    case CK_ARROW_UTF8: return CT_UTF8;
    default: return CT_NONE;
  }
}

void ck_parquet_begin(ck_parquet_writer_t *w, ck_buf_t *out, const ck_arrow_field_t *fields,
                      int nfields) {
  memset(w, 0, sizeof *w);
  w->out = out;
  w->nfields = nfields;
  memcpy(w->fields, fields, sizeof *fields * (size_t)nfields);
  ck_buf_init(&w->groups);
  ck_buf_append(out, "PAR1", 4);
}

/* Column col of batch, PLAIN-encoded, into page. */
static void plain(const ck_arrow_col_t *c, int64_t nrows, ck_buf_t *page) {
  if (c->type == CK_ARROW_UINT16) {
    for (int64_t i = 0; i < nrows; i++) {
      uint16_t v;
      memcpy(&v, c->data.data + 2 * i, 2);
      uint32_t w = v;
      ck_buf_append(page, &w, 4);
    }
  } else if (c->type == CK_ARROW_UTF8 || c->type == CK_ARROW_BINARY) {
    const int32_t *off = (const int32_t *)(const void *)c->offsets.data;
    for (int64_t i = 0; i < nrows; i++) {
      uint32_t len = (uint32_t)(off[i + 1] - off[i]);
      ck_buf_append(page, &len, 4);
      ck_buf_append(page, c->data.data + off[i], len);
    }
  } else if (c->data.len) {
    ck_buf_append(page, c->data.data, c->data.len);
  }
}

void ck_parquet_write_group(ck_parquet_writer_t *w, const ck_arrow_batch_t *batch) {
  if (batch->nrows == 0) return;
  ck_buf_t page, hdr;
  ck_buf_init(&page);
  ck_buf_init(&hdr);
  int64_t offsets[CK_ARROW_MAX_FIELDS], sizes[CK_ARROW_MAX_FIELDS], total = 0;
  for (int c = 0; c < w->nfields; c++) {
    ck_buf_reset(&page);
    ck_buf_reset(&hdr);
    plain(&batch->cols[c], batch->nrows, &page);
    /* PageHeader { 1 type DATA_PAGE, 2 uncompressed size, 3 compressed size,
     *              5 DataPageHeader { 1 values, 2 PLAIN, 3 RLE, 4 RLE } } */
    tw_t t = {.b = &hdr};
    f_i32(&t, 1, 0);
    f_i32(&t, 2, (int32_t)page.len);
    f_i32(&t, 3, (int32_t)page.len);
    f_struct(&t, 5);
    f_i32(&t, 1, (int32_t)batch->nrows);
    f_i32(&t, 2, 0);
    f_i32(&t, 3, 3);
    f_i32(&t, 4, 3);
    struct_end(&t);
    ck_buf_putc(&hdr, 0);
    offsets[c] = (int64_t)w->out->len;
    sizes[c] = (int64_t)(hdr.len + page.len);
    total += sizes[c];
    ck_buf_append(w->out, hdr.data, hdr.len);
    if (page.len) ck_buf_append(w->out, page.data, page.len);
  }
  ck_buf_fini(&page);
  ck_buf_fini(&hdr);
  /* RowGroup { 1 columns: [ColumnChunk { 2 file_offset, 3 ColumnMetaData { 1 type,
   * 2 encodings, 3 path, 4 codec, 5 values, 6 uncompressed, 7 compressed, 9 page offset }}],
   * 2 total_byte_size, 3 num_rows } — one list element, ended by its stop byte */
  tw_t t = {.b = &w->groups};
  f_list(&t, 1, T_STRUCT, w->nfields);
  for (int c = 0; c < w->nfields; c++) {
    struct_elem(&t);
    f_i64(&t, 2, offsets[c]);
    f_struct(&t, 3);
    f_i32(&t, 1, phys(w->fields[c].type));
    f_list(&t, 2, T_I32, 1);
    varint(t.b, 0); /* PLAIN */
    f_list(&t, 3, T_BINARY, 1);
    put_bin(t.b, w->fields[c].name, strlen(w->fields[c].name));
    f_i32(&t, 4, 0);
    f_i64(&t, 5, batch->nrows);
    f_i64(&t, 6, sizes[c]);
    f_i64(&t, 7, sizes[c]);
    f_i64(&t, 9, offsets[c]);
    struct_end(&t);
    struct_end(&t);
  }
  f_i64(&t, 2, total);
  f_i64(&t, 3, batch->nrows);
  ck_buf_putc(t.b, 0);
  w->ngroups++;
  w->nrows += batch->nrows;
}

void ck_parquet_finish(ck_parquet_writer_t *w, const ck_arrow_kv_t *meta, int nmeta) {
  size_t start = w->out->len;
  tw_t t = {.b = w->out};
  f_i32(&t, 1, 1);
  f_list(&t, 2, T_STRUCT, w->nfields + 1);
  struct_elem(&t); /* the root: { 4 name, 5 num_children } */
  f_str(&t, 4, "schema");
  f_i32(&t, 5, w->nfields);
  struct_end(&t);
  for (int c = 0; c < w->nfields; c++) { /* { 1 type, 3 REQUIRED, 4 name, 6 converted } */
    struct_elem(&t);
    f_i32(&t, 1, phys(w->fields[c].type));
    f_i32(&t, 3, 0);
    f_str(&t, 4, w->fields[c].name);
    if (converted(w->fields[c].type) != CT_NONE) f_i32(&t, 6, converted(w->fields[c].type));
    struct_end(&t);
  }
  f_i64(&t, 3, w->nrows);
  f_list(&t, 4, T_STRUCT, w->ngroups);
  if (w->groups.len) ck_buf_append(w->out, w->groups.data, w->groups.len);
  if (nmeta) {
    f_list(&t, 5, T_STRUCT, nmeta);
    for (int i = 0; i < nmeta; i++) {
      struct_elem(&t);
      f_str(&t, 1, meta[i].key);
      f_str(&t, 2, meta[i].value);
      struct_end(&t);
    }
  }
  f_str(&t, 6, "clink");
  ck_buf_putc(w->out, 0);
  uint32_t len = (uint32_t)(w->out->len - start);
  ck_buf_append(w->out, &len, 4);
  ck_buf_append(w->out, "PAR1", 4);
  ck_buf_fini(&w->groups);
}
