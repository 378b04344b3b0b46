/*
 * DESIGN: see ch_block.h. Type names are parsed by hand (a wrapper, a name, an optional
 * parenthesised parameter list); LowCardinality dictionaries are built at serialisation time
 * from the column's logical values with the engine's byte-keyed hash map.
 */
#include "connectors/clickhouse/ch_block.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "base/hash.h"
#include "connectors/clickhouse/ch_proto.h"

/* =============================================================== types ====== */

static void trim(const char **s, size_t *n) {
  while (*n && isspace((unsigned char)**s)) (*s)++, (*n)--;
  while (*n && isspace((unsigned char)(*s)[*n - 1])) (*n)--;
}

/* "Name(args)" → name and args (without the parentheses); false when unbalanced. */
static bool split_call(const char *s, size_t n, size_t *name_len, const char **args,
                       size_t *args_len) {
  size_t i = 0;
  while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_')) i++;
  *name_len = i;
  *args = NULL;
  *args_len = 0;
  if (i == n) return true;
  if (s[i] != '(' || s[n - 1] != ')') return false;
  *args = s + i + 1;
  *args_len = n - i - 2;
  return true;
}

static bool name_is(const char *s, size_t n, const char *lit) {
  return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

/* Parses a non-negative integer argument list "a" or "a, b" (b may be a quoted string we
 * ignore: a time zone). Returns the count of integers read. */
static int int_args(const char *s, size_t n, long long *a, long long *b) {
  char tmp[128];
  if (n >= sizeof tmp) return -1;
  memcpy(tmp, s, n);
  tmp[n] = 0;
  char *p = tmp, *end;
  while (isspace((unsigned char)*p)) p++;
  if (!isdigit((unsigned char)*p)) return -1;
  *a = strtoll(p, &end, 10);
  p = end;
  while (isspace((unsigned char)*p)) p++;
  if (!*p) return 1;
  if (*p != ',') return -1;
  p++;
  while (isspace((unsigned char)*p)) p++;
  if (*p == '\'') return 1; /* a time zone */
  if (!isdigit((unsigned char)*p)) return -1;
  *b = strtoll(p, &end, 10);
  p = end;
  while (isspace((unsigned char)*p)) p++;
  return *p ? -1 : 2;
}

static int parse_base(const char *s, size_t n, ck_ch_type_t *t, char *why, size_t why_len) {
  size_t nl;
  const char *args;
  size_t al;
  if (!n || !split_call(s, n, &nl, &args, &al)) goto bad;
  static const struct {
    const char *name;
    ck_ch_base_t base;
  } simple[] = {
      {"Int8", CK_CH_INT8},       {"Int16", CK_CH_INT16},     {"Int32", CK_CH_INT32},
      {"Int64", CK_CH_INT64},     {"UInt8", CK_CH_UINT8},     {"UInt16", CK_CH_UINT16},
      {"UInt32", CK_CH_UINT32},   {"UInt64", CK_CH_UINT64},   {"Float32", CK_CH_FLOAT32},
      {"Float64", CK_CH_FLOAT64}, {"String", CK_CH_STRING},   {"Date", CK_CH_DATE},
      {"UUID", CK_CH_UUID},       {"Nothing", CK_CH_NOTHING}, {"Bool", CK_CH_BOOL},
      {"Date32", CK_CH_DATE32},
  };
  for (size_t i = 0; i < CK_ARRAY_LEN(simple); i++)
    if (name_is(s, nl, simple[i].name)) {
      if (args) goto bad;
      t->base = simple[i].base;
      return 0;
    }
  long long a = 0, b = 0;
  if (name_is(s, nl, "FixedString")) {
    if (!args || int_args(args, al, &a, &b) != 1 || a < 1 || a > CK_CH_MAX_FIXEDSTRING) goto bad;
    t->base = CK_CH_FIXEDSTRING;
    t->n = (uint32_t)a;
    return 0;
  }
  if (name_is(s, nl, "DateTime")) {
    t->base = CK_CH_DATETIME; /* an optional time zone changes only how it is shown */
    if (args && (al < 2 || args[0] != '\'')) goto bad;
    return 0;
  }
  if (name_is(s, nl, "DateTime64")) {
    if (!args || int_args(args, al, &a, &b) != 1 || a > 9) goto bad;
    t->base = CK_CH_DATETIME64;
    t->n = (uint32_t)a;
    return 0;
  }
  if (name_is(s, nl, "Decimal")) {
    if (!args || int_args(args, al, &a, &b) != 2 || a < 1 || b > a) goto bad;
    if (a > 38) {
      snprintf(why, why_len, "Decimal with precision above 38 (Decimal256) is not supported");
      return -1;
    }
    t->base = CK_CH_DECIMAL;
    t->n = (uint32_t)a;
    t->scale = (uint32_t)b;
    return 0;
  }
  static const struct {
    const char *name;
    uint32_t precision;
  } decs[] = {{"Decimal32", 9}, {"Decimal64", 18}, {"Decimal128", 38}};
  for (size_t i = 0; i < CK_ARRAY_LEN(decs); i++)
    if (name_is(s, nl, decs[i].name)) {
      if (!args || int_args(args, al, &a, &b) != 1 || a > decs[i].precision) goto bad;
      t->base = CK_CH_DECIMAL;
      t->n = decs[i].precision;
      t->scale = (uint32_t)a;
      return 0;
    }
  if (name_is(s, nl, "Enum8") || name_is(s, nl, "Enum16")) {
    if (!args) goto bad;
    t->base = nl == 5 ? CK_CH_ENUM8 : CK_CH_ENUM16;
    return 0;
  }
  snprintf(why, why_len, "%.*s is not a type this client reads or writes", (int)(n > 80 ? 80 : n), s);
  return -1;
bad:
  snprintf(why, why_len, "malformed type name '%.*s'", (int)(n > 80 ? 80 : n), s);
  return -1;
}

int ck_ch_type_parse(const char *text, size_t len, ck_ch_type_t *out, char *why,
                     size_t why_len) {
  memset(out, 0, sizeof *out);
  trim(&text, &len);
  size_t nl;
  const char *args;
  size_t al;
  if (!split_call(text, len, &nl, &args, &al)) {
    snprintf(why, why_len, "malformed type name '%.*s'", (int)(len > 80 ? 80 : len), text);
    return -1;
  }
  if (args && name_is(text, nl, "LowCardinality")) {
    out->lowcard = true;
    text = args;
    len = al;
    trim(&text, &len);
    if (!split_call(text, len, &nl, &args, &al)) {
      snprintf(why, why_len, "malformed type name '%.*s'", (int)(len > 80 ? 80 : len), text);
      return -1;
    }
  }
  if (args && name_is(text, nl, "Nullable")) {
    out->nullable = true;
    text = args;
    len = al;
    trim(&text, &len);
  }
  size_t n2;
  const char *a2;
  size_t al2;
  if (split_call(text, len, &n2, &a2, &al2) &&
      (name_is(text, n2, "Nullable") || name_is(text, n2, "LowCardinality"))) {
    snprintf(why, why_len, "malformed type name: %.*s cannot be nested there", (int)n2, text);
    return -1;
  }
  static const char *const composite[] = {"Array", "Tuple", "Map", "Nested", "AggregateFunction",
                                          "SimpleAggregateFunction", "Object", "Variant",
                                          "Dynamic", "JSON"};
  for (size_t i = 0; i < CK_ARRAY_LEN(composite); i++)
    if (split_call(text, len, &n2, &a2, &al2) && name_is(text, n2, composite[i])) {
      snprintf(why, why_len, "%s is a composite type, which this client does not read or write",
               composite[i]);
      return -1;
    }
  int rc = parse_base(text, len, out, why, why_len);
  if (rc == 0 && out->base == CK_CH_NOTHING && out->lowcard) rc = -1;
  return rc;
}

size_t ck_ch_type_width(const ck_ch_type_t *t) {
  switch (t->base) {
    case CK_CH_INT8: case CK_CH_UINT8: case CK_CH_ENUM8: case CK_CH_BOOL: case CK_CH_NOTHING:
      return 1;
    case CK_CH_INT16: case CK_CH_UINT16: case CK_CH_ENUM16: case CK_CH_DATE: return 2;
    case CK_CH_INT32: case CK_CH_UINT32: case CK_CH_FLOAT32: case CK_CH_DATETIME:
    case CK_CH_DATE32: return 4;
    case CK_CH_INT64: case CK_CH_UINT64: case CK_CH_FLOAT64: case CK_CH_DATETIME64: return 8;
    case CK_CH_UUID: return 16;
    case CK_CH_DECIMAL: return t->n <= 9 ? 4 : t->n <= 18 ? 8 : 16;
    case CK_CH_FIXEDSTRING: return t->n;
    case CK_CH_STRING: case CK_CH_INVALID: return 0;
  }
  return 0;
}

bool ck_ch_type_is_int(ck_ch_base_t b) { return b >= CK_CH_INT8 && b <= CK_CH_UINT64; }
bool ck_ch_type_is_signed(ck_ch_base_t b) { return b >= CK_CH_INT8 && b <= CK_CH_INT64; }

bool ck_ch_type_eq(const ck_ch_type_t *a, const ck_ch_type_t *b) {
  return a->base == b->base && a->nullable == b->nullable && a->lowcard == b->lowcard &&
         a->n == b->n && a->scale == b->scale;
}

/* ============================================================== blocks ====== */

void ck_ch_block_init(ck_ch_block_t *block) {
  memset(block, 0, sizeof *block);
  block->bucket_num = -1;
}

static void col_fini(ck_ch_col_t *col) {
  ck_free(col->name);
  ck_free(col->type_name);
  ck_buf_fini(&col->nulls);
  ck_buf_fini(&col->data);
  ck_buf_fini(&col->offs);
}

void ck_ch_block_fini(ck_ch_block_t *block) {
  for (int i = 0; i < block->ncols; i++) col_fini(&block->cols[i]);
  ck_free(block->cols);
  ck_ch_block_init(block);
}

void ck_ch_block_clear_rows(ck_ch_block_t *block) {
  for (int i = 0; i < block->ncols; i++) {
    ck_ch_col_t *c = &block->cols[i];
    c->rows = 0;
    ck_buf_reset(&c->nulls);
    ck_buf_reset(&c->data);
    ck_buf_reset(&c->offs);
  }
  block->rows = 0;
}

int ck_ch_block_add_col(ck_ch_block_t *block, const char *name, const char *type_name,
                        ck_error_t *err) {
  ck_ch_type_t t;
  char why[160];
  if (ck_ch_type_parse(type_name, strlen(type_name), &t, why, sizeof why)) {
    ck_error_set(err, CK_EUNSUPPORTED, "column '%s' has type %s: %s", name, type_name, why);
    return -1;
  }
  if (block->ncols == block->cap) {
    block->cap = block->cap ? block->cap * 2 : 8;
    block->cols = ck_realloc(block->cols, sizeof(ck_ch_col_t) * (size_t)block->cap);
  }
  ck_ch_col_t *c = &block->cols[block->ncols];
  memset(c, 0, sizeof *c);
  c->name = ck_strdup(name);
  c->type_name = ck_strdup(type_name);
  c->type = t;
  ck_buf_init(&c->nulls);
  ck_buf_init(&c->data);
  ck_buf_init(&c->offs);
  return block->ncols++;
}

void ck_ch_block_seal(ck_ch_block_t *block) {
  size_t rows = block->ncols ? block->cols[0].rows : 0;
  for (int i = 1; i < block->ncols; i++) ck_assert(block->cols[i].rows == rows);
  block->rows = rows;
}

int ck_ch_block_find(const ck_ch_block_t *block, const char *name) {
  for (int i = 0; i < block->ncols; i++)
    if (strcmp(block->cols[i].name, name) == 0) return i;
  return -1;
}

/* ---- building ---- */

static void put_notnull(ck_ch_col_t *col) {
  if (col->type.nullable) ck_buf_putc(&col->nulls, 0);
  col->rows++;
}

static void push_offset(ck_ch_col_t *col) {
  uint64_t end = col->data.len;
  ck_buf_append(&col->offs, &end, sizeof end);
}

static bool is_stringy(const ck_ch_col_t *col) { return col->type.base == CK_CH_STRING; }

void ck_ch_col_put_null(ck_ch_col_t *col) {
  ck_assert(col->type.nullable);
  ck_buf_putc(&col->nulls, 1);
  if (is_stringy(col)) {
    push_offset(col);
  } else {
    size_t w = ck_ch_type_width(&col->type);
    ck_buf_reserve(&col->data, w);
    memset(col->data.data + col->data.len, 0, w);
    col->data.len += w;
  }
  col->rows++;
}

void ck_ch_col_put_bits(ck_ch_col_t *col, uint64_t bits) {
  size_t w = ck_ch_type_width(&col->type);
  ck_assert(w >= 1 && w <= 8);
  ck_buf_put_le_n(&col->data, bits, (int)w);
  put_notnull(col);
}

void ck_ch_col_put_wide(ck_ch_col_t *col, const void *le, size_t n) {
  ck_assert(n == ck_ch_type_width(&col->type));
  ck_buf_append(&col->data, le, n);
  put_notnull(col);
}

void ck_ch_col_put_f32(ck_ch_col_t *col, float v) {
  uint32_t bits;
  memcpy(&bits, &v, 4);
  ck_buf_put_le_n(&col->data, bits, 4);
  put_notnull(col);
}

void ck_ch_col_put_f64(ck_ch_col_t *col, double v) {
  uint64_t bits;
  memcpy(&bits, &v, 8);
  ck_buf_put_le_n(&col->data, bits, 8);
  put_notnull(col);
}

void ck_ch_col_put_str(ck_ch_col_t *col, const char *s, size_t n) {
  if (col->type.base == CK_CH_FIXEDSTRING) {
    ck_assert(n <= col->type.n);
    ck_buf_append(&col->data, s, n);
    size_t pad = col->type.n - n;
    ck_buf_reserve(&col->data, pad);
    memset(col->data.data + col->data.len, 0, pad);
    col->data.len += pad;
  } else {
    ck_assert(is_stringy(col));
    ck_buf_append(&col->data, s, n);
    push_offset(col);
  }
  put_notnull(col);
}

void ck_ch_col_push_str_raw(ck_ch_col_t *col, const char *s, size_t n) {
  ck_buf_append(&col->data, s, n);
  push_offset(col);
}

/* ---- reading ---- */

const uint8_t *ck_ch_col_fixed(const ck_ch_col_t *col, size_t i) {
  if (!col->data.data) return (const uint8_t *)""; /* FixedString of no rows yet */
  return (const uint8_t *)col->data.data + i * ck_ch_type_width(&col->type);
}

const char *ck_ch_col_str(const ck_ch_col_t *col, size_t i, size_t *len) {
  if (col->type.base != CK_CH_STRING) {
    *len = ck_ch_type_width(&col->type);
    return (const char *)ck_ch_col_fixed(col, i);
  }
  const uint64_t *offs = (const uint64_t *)(const void *)col->offs.data;
  uint64_t start = i ? offs[i - 1] : 0;
  *len = (size_t)(offs[i] - start);
  return col->data.data ? col->data.data + start : ""; /* every row so far empty */
}

int64_t ck_ch_col_int(const ck_ch_col_t *col, size_t i) {
  size_t w = ck_ch_type_width(&col->type);
  uint64_t v = ck_get_le_n(ck_ch_col_fixed(col, i), (int)w);
  bool sign = ck_ch_type_is_signed(col->type.base) || col->type.base == CK_CH_ENUM8 ||
              col->type.base == CK_CH_ENUM16 || col->type.base == CK_CH_DATETIME64 ||
              col->type.base == CK_CH_DECIMAL;
  if (sign && w < 8 && (v >> (8 * w - 1)) & 1) v |= ~0ULL << (8 * w);
  return (int64_t)v;
}

__int128 ck_ch_col_i128(const ck_ch_col_t *col, size_t i) {
  size_t w = ck_ch_type_width(&col->type);
  if (w <= 8) return (__int128)ck_ch_col_int(col, i);
  const uint8_t *p = ck_ch_col_fixed(col, i);
  return (__int128)((unsigned __int128)ck_get_le64(p + 8) << 64 | ck_get_le64(p));
}

/* ---- serialisation ---- */

static void write_plain(const ck_ch_col_t *col, ck_buf_t *out) {
  if (col->type.base == CK_CH_STRING) {
    /* PROTOTYPE: one reservation, varints and bytes written in place */
    ck_buf_reserve(out, col->data.len + col->rows * 10);
    char *p = out->data + out->len;
    const uint64_t *offs = (const uint64_t *)(const void *)col->offs.data;
    uint64_t prev = 0;
    for (size_t i = 0; i < col->rows; i++) {
      uint64_t n = offs[i] - prev;
      p += ck_uvarint_put(p, n);
      memcpy(p, col->data.data + prev, n);
      p += n;
      prev = offs[i];
    }
    out->len = (size_t)(p - out->data);
    out->data[out->len] = 0;
  } else {
    ck_buf_append(out, col->data.data, col->data.len);
  }
}

static void write_lowcard(const ck_ch_col_t *col, ck_buf_t *out) {
  ck_buf_put_le_n(out, 1, 8); /* key version: shared dictionaries with additional keys */
  ck_hmap_t map;
  ck_hmap_init(&map);
  /* keys in index order, as row numbers of their first occurrence (SIZE_MAX: the NULL key) */
  size_t *key_rows = ck_malloc(sizeof(size_t) * (col->rows + 1));
  uint32_t *index = ck_malloc(sizeof(uint32_t) * (col->rows ? col->rows : 1));
  size_t nkeys = 0;
  if (col->type.nullable) key_rows[nkeys++] = SIZE_MAX;
  for (size_t i = 0; i < col->rows; i++) {
    if (ck_ch_col_is_null(col, i)) {
      index[i] = 0;
      continue;
    }
    size_t n;
    const char *s = ck_ch_col_str(col, i, &n);
    bool created;
    void **slot = ck_hmap_put(&map, s, n, &created);
    if (created) {
      *slot = (void *)(uintptr_t)(nkeys + 1);
      key_rows[nkeys++] = i;
    }
    index[i] = (uint32_t)((uintptr_t)*slot - 1);
  }
  int itype = nkeys <= 0x100 ? 0 : nkeys <= 0x10000 ? 1 : 2;
  int iw = 1 << itype;
  ck_buf_put_le_n(out, (uint64_t)itype | (1u << 9), 8); /* has additional keys */
  ck_buf_put_le_n(out, nkeys, 8);
  size_t w = ck_ch_type_width(&col->type);
  for (size_t k = 0; k < nkeys; k++) {
    size_t n = 0;
    const char *s = key_rows[k] == SIZE_MAX ? "" : ck_ch_col_str(col, key_rows[k], &n);
    if (col->type.base == CK_CH_STRING) {
      ck_ch_put_str(out, s, n);
    } else if (key_rows[k] == SIZE_MAX) {
      ck_buf_reserve(out, w);
      memset(out->data + out->len, 0, w);
      out->len += w;
    } else {
      ck_buf_append(out, s, n);
    }
  }
  ck_buf_put_le_n(out, col->rows, 8);
  for (size_t i = 0; i < col->rows; i++) ck_buf_put_le_n(out, index[i], iw);
  ck_free(index);
  ck_free(key_rows);
  ck_hmap_fini(&map);
}

void ck_ch_block_write(const ck_ch_block_t *block, int revision, ck_buf_t *out) {
  if (revision >= CK_CH_REV_BLOCK_INFO) {
    ck_buf_put_uvarint(out, 1);
    ck_buf_put_u8(out, block->is_overflows);
    ck_buf_put_uvarint(out, 2);
    ck_buf_put_le_n(out, (uint32_t)block->bucket_num, 4);
    ck_buf_put_uvarint(out, 0);
  }
  ck_buf_put_uvarint(out, (uint64_t)block->ncols);
  ck_buf_put_uvarint(out, block->rows);
  for (int i = 0; i < block->ncols; i++) {
    const ck_ch_col_t *col = &block->cols[i];
    ck_ch_put_cstr(out, col->name);
    ck_ch_put_cstr(out, col->type_name);
    if (revision >= CK_CH_REV_CUSTOM_SERIALIZATION) ck_buf_put_u8(out, 0);
    if (!block->rows) continue;
    ck_assert(col->rows == block->rows);
    if (col->type.lowcard) {
      write_lowcard(col, out);
    } else {
      if (col->type.nullable) ck_buf_append(out, col->nulls.data, col->nulls.len);
      write_plain(col, out);
    }
  }
}
