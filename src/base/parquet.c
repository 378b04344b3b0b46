/* DESIGN: see parquet.h.
 *
 * File: "PAR1", per row group per column one data page (PageHeader, then the page: for an
 * optional column its definition levels, a u32 length + the hybrid encoding; then the
 * non-NULL values PLAIN: INT32/INT64/DOUBLE little endian, BYTE_ARRAY u32 length + bytes;
 * no repetition levels, the schema is flat; the page compressed whole when a codec is set),
 * then the FileMetaData, its u32 length and "PAR1".
 *
 * The hybrid encoding of the levels: runs, each a ULEB128 header; header & 1 == 0: an RLE run
 * of header >> 1 copies of the value in the next byte; header & 1 == 1: header >> 1 groups of
 * 8 values bit-packed, 1 bit each, least significant bit first (the last group padded with
 * zeros past the page's values). Here a run of 8 or more equal levels is an RLE run, anything
 * else is bit-packed up to the next such run. The
 * Thrift compact protocol: a field header is one byte (id delta << 4 | type) when the delta
 * from the previous field of the same struct is 1..15, integers are zigzag varints, strings a
 * varint length and the bytes, a struct ends with a 0 byte.
 */
#include "base/parquet.h"

#include <string.h>
#include <zstd.h>

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

static int phys_of(ck_arrow_type_t t) {
  switch (t) {
    case CK_ARROW_UINT16:
    case CK_ARROW_UINT32: return P_INT32;
    case CK_ARROW_INT64: return P_INT64;
    case CK_ARROW_FLOAT64: return P_DOUBLE;
    default: return P_BYTE_ARRAY;
  }
}

static int converted_of(ck_arrow_type_t t) {
  switch (t) {
    case CK_ARROW_UINT16: return CT_UINT_16;
    case CK_ARROW_UINT32: return CT_UINT_32;
    case CK_ARROW_UTF8: return CT_UTF8;
    default: return CT_NONE;
  }
}

static int phys(const ck_parquet_writer_t *w, int c) { return phys_of(w->fields[c].type); }
static int converted(const ck_parquet_writer_t *w, int c) {
  ck_arrow_type_t t = w->fields[c].type;
  if (w->cols[c].plain_int && (t == CK_ARROW_UINT16 || t == CK_ARROW_UINT32)) return CT_NONE;
  return converted_of(t);
}

void ck_parquet_set_column(ck_parquet_writer_t *w, int c, const ck_parquet_col_t *col) {
  ck_assert(c >= 0 && c < w->nfields && w->ngroups == 0);
  w->cols[c] = *col;
}

void ck_parquet_set_codec(ck_parquet_writer_t *w, ck_parquet_codec_t codec) {
  ck_assert(w->ngroups == 0);
  w->codec = codec;
}

/* The length of the run of levels equal to levels[i] from i (at most n - i). */
static int64_t run_len(const uint8_t *levels, int64_t i, int64_t n) {
  int64_t j = i + 1;
  while (j < n && levels[j] == levels[i]) j++;
  return j - i;
}

void ck_parquet_levels(const uint8_t *levels, int64_t n, ck_buf_t *out) {
  int64_t i = 0;
  while (i < n) {
    int64_t run = run_len(levels, i, n);
    if (run >= 8) {
      varint(out, (uint64_t)run << 1);
      ck_buf_putc(out, (char)(levels[i] ? 1 : 0));
      i += run;
      continue;
    }
    /* bit-packed groups of 8 until a run of 8 starts at a group's end, or the levels end */
    int64_t start = i, groups = 0;
    do {
      i += 8;
      groups++;
    } while (i < n && run_len(levels, i, n) < 8);
    varint(out, (uint64_t)groups << 1 | 1);
    for (int64_t g = 0; g < groups; g++) {
      uint8_t byte = 0;
      for (int k = 0; k < 8; k++) {
        int64_t at = start + 8 * g + k;
        if (at < n && levels[at]) byte |= (uint8_t)(1u << k);
      }
      ck_buf_putc(out, (char)byte);
    }
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

/* Column col of batch, PLAIN-encoded, into page: the rows where valid is not 0 (every row
 * when valid is NULL). */
static void plain(const ck_arrow_col_t *c, int64_t nrows, const uint8_t *valid, ck_buf_t *page) {
  if (valid || c->type == CK_ARROW_UINT16) {
    size_t width = c->type == CK_ARROW_UINT16 ? 2 : c->type == CK_ARROW_UINT32 ? 4 : 8;
    bool var = c->type == CK_ARROW_UTF8 || c->type == CK_ARROW_BINARY;
    const int32_t *off = (const int32_t *)(const void *)c->offsets.data;
    for (int64_t i = 0; i < nrows; i++) {
      if (valid && !valid[i]) continue;
      if (var) {
        uint32_t len = (uint32_t)(off[i + 1] - off[i]);
        ck_buf_append(page, &len, 4);
        ck_buf_append(page, c->data.data + off[i], len);
      } else if (width == 2) {
        uint16_t v;
        memcpy(&v, c->data.data + 2 * i, 2);
        uint32_t w = v;
        ck_buf_append(page, &w, 4);
      } else {
        ck_buf_append(page, c->data.data + width * (size_t)i, width);
      }
    }
    return;
  }
  if (c->type == CK_ARROW_UTF8 || c->type == CK_ARROW_BINARY) {
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
  ck_parquet_write_group_nulls(w, batch, NULL);
}

/* page compressed with zstd into z. */
static void zstd_page(const ck_buf_t *page, ck_buf_t *z) {
  size_t bound = ZSTD_compressBound(page->len);
  ck_buf_reset(z);
  ck_buf_reserve(z, bound);
  size_t n = ZSTD_compress(z->data, bound, page->data, page->len, 3);
  ck_assert(!ZSTD_isError(n)); /* only a bound too small fails, and this one is not */
  z->len = n;
}

void ck_parquet_write_group_nulls(ck_parquet_writer_t *w, const ck_arrow_batch_t *batch,
                                  const uint8_t *const *valid) {
  if (batch->nrows == 0) return;
  ck_buf_t page, hdr, levels, z;
  ck_buf_init(&page);
  ck_buf_init(&hdr);
  ck_buf_init(&levels);
  ck_buf_init(&z);
  uint8_t *ones = NULL;
  int64_t offsets[CK_ARROW_MAX_FIELDS], usizes[CK_ARROW_MAX_FIELDS];
  int64_t sizes[CK_ARROW_MAX_FIELDS], total = 0;
  for (int c = 0; c < w->nfields; c++) {
    const uint8_t *v = valid ? valid[c] : NULL;
    ck_assert(!v || w->cols[c].optional);
    ck_buf_reset(&page);
    ck_buf_reset(&hdr);
    if (w->cols[c].optional) { /* definition levels: 1 defined, 0 NULL */
      if (!v && !ones) {
        ones = ck_malloc((size_t)batch->nrows);
        memset(ones, 1, (size_t)batch->nrows);
      }
      ck_buf_reset(&levels);
      ck_parquet_levels(v ? v : ones, batch->nrows, &levels);
      uint32_t len = (uint32_t)levels.len;
      ck_buf_append(&page, &len, 4);
      ck_buf_append(&page, levels.data, levels.len);
    }
    plain(&batch->cols[c], batch->nrows, v, &page);
    const ck_buf_t *body = &page;
    if (w->codec == CK_PARQUET_ZSTD) {
      zstd_page(&page, &z);
      body = &z;
    }
    /* PageHeader { 1 type DATA_PAGE, 2 uncompressed size, 3 compressed size,
     *              5 DataPageHeader { 1 values, 2 PLAIN, 3 RLE, 4 RLE } } */
    tw_t t = {.b = &hdr};
    f_i32(&t, 1, 0);
    f_i32(&t, 2, (int32_t)page.len);
    f_i32(&t, 3, (int32_t)body->len);
    f_struct(&t, 5);
    f_i32(&t, 1, (int32_t)batch->nrows);
    f_i32(&t, 2, 0);
    f_i32(&t, 3, 3);
    f_i32(&t, 4, 3);
    struct_end(&t);
    ck_buf_putc(&hdr, 0);
    offsets[c] = (int64_t)w->out->len;
    usizes[c] = (int64_t)(hdr.len + page.len);
    sizes[c] = (int64_t)(hdr.len + body->len);
    total += usizes[c];
    ck_buf_append(w->out, hdr.data, hdr.len);
    if (body->len) ck_buf_append(w->out, body->data, body->len);
  }
  ck_free(ones);
  ck_buf_fini(&page);
  ck_buf_fini(&hdr);
  ck_buf_fini(&levels);
  ck_buf_fini(&z);
  /* RowGroup { 1 columns: [ColumnChunk { 2 file_offset, 3 ColumnMetaData { 1 type,
   * 2 encodings, 3 path, 4 codec, 5 values, 6 uncompressed, 7 compressed, 9 page offset }}],
   * 2 total_byte_size, 3 num_rows } — one list element, ended by its stop byte */
  tw_t t = {.b = &w->groups};
  f_list(&t, 1, T_STRUCT, w->nfields);
  for (int c = 0; c < w->nfields; c++) {
    struct_elem(&t);
    f_i64(&t, 2, offsets[c]);
    f_struct(&t, 3);
    f_i32(&t, 1, phys(w, c));
    bool opt = w->cols[c].optional;
    f_list(&t, 2, T_I32, opt ? 2 : 1);
    varint(t.b, 0); /* PLAIN */
    if (opt) varint(t.b, ck_zigzag_encode(3)); /* RLE, the definition levels' */
    f_list(&t, 3, T_BINARY, 1);
    put_bin(t.b, w->fields[c].name, strlen(w->fields[c].name));
    f_i32(&t, 4, (int32_t)w->codec);
    f_i64(&t, 5, batch->nrows);
    f_i64(&t, 6, usizes[c]);
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
  for (int c = 0; c < w->nfields; c++) {
    /* { 1 type, 3 REQUIRED (0) or OPTIONAL (1), 4 name, 6 converted type, 9 field_id } */
    struct_elem(&t);
    f_i32(&t, 1, phys(w, c));
    f_i32(&t, 3, w->cols[c].optional ? 1 : 0);
    f_str(&t, 4, w->fields[c].name);
    if (converted(w, c) != CT_NONE) f_i32(&t, 6, converted(w, c));
    if (w->cols[c].field_id > 0) f_i32(&t, 9, w->cols[c].field_id);
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
