/*
 * DESIGN: see hostio.h — batches and schemas across the Arrow C data interface.
 *
 * Export: a batch becomes a struct array whose children point at the batch's own buffers
 * (validity bitmap, values, STRING's int32 offsets and bytes: runtime/batch.h's layout is
 * Arrow's, so nothing is copied) except BOOLEAN, stored a byte per row and repacked into a
 * bitmap here. The parent and every child hold a reference to one holder that frees the batch
 * when the last of them is released, so a consumer may move a child out (the spec allows it).
 * An update stream's batch leads with its row kinds ("__op"): the batch's kinds array as int8
 * dictionary codes over the static strings "+I", "-U", "+U", "-D" (ck_row_kind_t's order), so
 * they too leave without a copy.
 *
 * Import: the host's struct array is read column by column into a new batch of the table's
 * columns, matched by name without regard to case; types convert where no value changes
 * meaning (integers of any width, float to double, timestamps of any unit to milliseconds —
 * floor division, the same instant — large strings, decimals of the table's scale), and
 * anything else is refused naming the column and both types. The host's memory is released
 * once read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "connectors/hostio.h"

_Atomic int64_t ck_arrow_bytes_in_place, ck_arrow_bytes_copied;

/* ---------------------------------------------------------------- schema export */

typedef struct schema_priv {
  char *format, *name, *metadata;
  struct ArrowSchema *dict; /* the row-kind column's dictionary (its strings), or NULL */
} schema_priv_t;

static void schema_release(struct ArrowSchema *s) {
  for (int64_t i = 0; i < s->n_children; i++)
    if (s->children[i]->release) s->children[i]->release(s->children[i]);
  if (s->dictionary && s->dictionary->release) s->dictionary->release(s->dictionary);
  schema_priv_t *p = s->private_data;
  if (p) {
    ck_free(p->format);
    ck_free(p->name);
    ck_free(p->metadata);
    ck_free(p->dict);
    ck_free(p);
  }
  if (s->n_children) {
    ck_free(s->children[0]); /* the children were allocated as one array */
    ck_free(s->children);
  }
  s->release = NULL;
}

static const char *format_of(ck_type_t t, char *buf, size_t n) {
  switch (t.id) {
    case CK_T_BOOL: return "b";
    case CK_T_INT32: return "i";
    case CK_T_INT64: return "l";
    case CK_T_FLOAT32: return "f";
    case CK_T_FLOAT64: return "g";
    case CK_T_DECIMAL:
      snprintf(buf, n, "d:%d,%d", t.precision ? t.precision : CK_DECIMAL_MAX_PRECISION, t.scale);
      return buf;
    case CK_T_STRING: return "u";
    case CK_T_TIMESTAMP: return "tsm:";
    case CK_T_NULL: break;
  }
  return "n";
}

static struct ArrowSchema leaf_schema(const char *format, const char *name, int64_t flags) {
  schema_priv_t *p = ck_calloc(1, sizeof *p);
  p->format = ck_strdup(format);
  p->name = ck_strdup(name);
  return (struct ArrowSchema){.format = p->format, .name = p->name, .flags = flags,
                              .private_data = p, .release = schema_release};
}

/* The Arrow C interface's metadata: int32 pair count, then per pair int32 length + bytes of
 * the key and of the value (native byte order). */
static char *metadata_one(const char *key, const char *value) {
  int32_t kl = (int32_t)strlen(key), vl = (int32_t)strlen(value), one = 1;
  char *m = ck_calloc(1, 12 + (size_t)kl + (size_t)vl), *w = m;
  memcpy(w, &one, 4), w += 4;
  memcpy(w, &kl, 4), w += 4;
  memcpy(w, key, (size_t)kl), w += kl;
  memcpy(w, &vl, 4), w += 4;
  memcpy(w, value, (size_t)vl);
  return m;
}

void ck_arrow_schema_export(const ck_schema_t *s, bool changelog, const char *upsert_key,
                            struct ArrowSchema *out) {
  int op = changelog ? 1 : 0, n = s->ncols + op;
  *out = leaf_schema("+s", "", 0);
  schema_priv_t *p = out->private_data;
  if (changelog && upsert_key) {
    p->metadata = metadata_one("clink.upsert_key", upsert_key);
    out->metadata = p->metadata;
  }
  out->n_children = n;
  if (!n) return;
  out->children = ck_calloc((size_t)n, sizeof *out->children);
  struct ArrowSchema *kids = ck_calloc((size_t)n, sizeof *kids);
  if (changelog) { /* int8 codes over the dictionary of the kinds' names */
    kids[0] = leaf_schema("c", CK_ARROW_OP, 0);
    schema_priv_t *kp = kids[0].private_data;
    kp->dict = ck_calloc(1, sizeof *kp->dict);
    *kp->dict = leaf_schema("u", "", 0);
    kids[0].dictionary = kp->dict;
  }
  for (int i = 0; i < s->ncols; i++) {
    char buf[32];
    kids[op + i] = leaf_schema(format_of(s->types[i], buf, sizeof buf), s->names[i],
                               ARROW_FLAG_NULLABLE);
  }
  for (int i = 0; i < n; i++) out->children[i] = &kids[i];
}

/* ---------------------------------------------------------------- batch export */

typedef struct holder {
  _Atomic int refs;
  ck_batch_t *batch;
  int ncols;
  struct ArrowArray *kids;  /* ncols, then the row-kind column and its dictionary */
  struct ArrowArray **kidp;
  const void **bufs;        /* 3 per column, the parent's one, the row kinds' 2, the dictionary's 3 */
  uint8_t **bitmaps;        /* BOOLEAN columns' repacked values (NULL for the others) */
} holder_t;

/* The row-kind column's dictionary: the names of ck_row_kind_t, in code order. */
static const int32_t kind_offsets[5] = {0, 2, 4, 6, 8};
static const char kind_names[] = "+I-U+U-D";

static void holder_unref(holder_t *h) {
  if (atomic_fetch_sub(&h->refs, 1) != 1) return;
  for (int i = 0; i < h->ncols; i++) ck_free(h->bitmaps[i]);
  ck_free(h->bitmaps);
  ck_free(h->bufs);
  ck_free(h->kidp);
  ck_free(h->kids);
  ck_batch_free(h->batch);
  ck_free(h);
}

static void child_release(struct ArrowArray *a) {
  holder_t *h = a->private_data;
  a->release = NULL;
  holder_unref(h);
}

static void op_release(struct ArrowArray *a) { /* the row kinds: their dictionary too */
  if (a->dictionary && a->dictionary->release) a->dictionary->release(a->dictionary);
  child_release(a);
}

static void parent_release(struct ArrowArray *a) {
  for (int64_t i = 0; i < a->n_children; i++)
    if (a->children[i]->release) a->children[i]->release(a->children[i]);
  holder_t *h = a->private_data;
  a->release = NULL;
  holder_unref(h);
}

static const char empty_bytes[8];

static int64_t count_nulls(const uint8_t *v, size_t n) {
  if (!v) return 0;
  int64_t set = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) set += __builtin_popcount(v[i >> 3]);
  for (; i < n; i++) set += (v[i >> 3] >> (i & 7)) & 1;
  return (int64_t)n - set;
}

void ck_arrow_batch_export(ck_batch_t *b, bool changelog, struct ArrowArray *out) {
  int n = b->ncols, op = changelog ? 1 : 0;
  holder_t *h = ck_calloc(1, sizeof *h);
  h->batch = b;
  h->ncols = n;
  h->refs = n + 1 + 2 * op;
  h->kids = ck_calloc((size_t)n + 2, sizeof *h->kids);
  h->kidp = ck_calloc((size_t)n + 2, sizeof *h->kidp);
  h->bufs = ck_calloc((size_t)n * 3 + 6, sizeof *h->bufs);
  h->bitmaps = ck_calloc((size_t)n + 1, sizeof *h->bitmaps);
  int64_t rows = (int64_t)b->nrows, in_place = 0, copied = 0;
  for (int i = 0; i < n; i++) {
    ck_col_t *c = &b->cols[i];
    struct ArrowArray *k = &h->kids[i];
    const void **bf = &h->bufs[3 * i];
    k->length = rows;
    k->null_count = count_nulls(c->validity, b->nrows);
    k->private_data = h;
    k->release = child_release;
    bf[0] = k->null_count ? c->validity : NULL;
    if (bf[0]) in_place += (rows + 7) / 8;
    switch (c->type.id) {
      case CK_T_NULL:
        k->n_buffers = 0;
        k->null_count = rows;
        break;
      case CK_T_BOOL: {
        uint8_t *bits = ck_calloc((size_t)(rows + 7) / 8 + 1, 1);
        const uint8_t *v = c->values;
        for (int64_t r = 0; r < rows; r++)
          if (v[r]) bits[r >> 3] |= (uint8_t)(1u << (r & 7));
        h->bitmaps[i] = bits;
        bf[1] = bits;
        k->n_buffers = 2;
        copied += rows;
        break;
      }
      case CK_T_STRING: {
        const int32_t *off = c->values;
        bf[1] = off;
        bf[2] = c->data ? (const void *)c->data : (const void *)empty_bytes;
        k->n_buffers = 3;
        in_place += (rows + 1) * 4 + off[rows];
        break;
      }
      default:
        bf[1] = c->values;
        k->n_buffers = 2;
        in_place += rows * (int64_t)ck_type_width(c->type);
        break;
    }
    k->buffers = bf;
    h->kidp[i] = k;
  }
  h->bufs[3 * n] = NULL;
  if (changelog) { /* the row kinds lead: the batch's own kinds array as int8 codes */
    memmove(h->kidp + 1, h->kidp, sizeof *h->kidp * (size_t)n);
    if (!b->kinds) b->kinds = ck_calloc((size_t)rows + 1, 1); /* every row an INSERT */
    struct ArrowArray *k = &h->kids[n], *d = &h->kids[n + 1];
    const void **kb = &h->bufs[3 * n + 1], **db = &h->bufs[3 * n + 3];
    kb[0] = NULL;
    kb[1] = b->kinds;
    db[0] = NULL;
    db[1] = kind_offsets;
    db[2] = kind_names;
    *d = (struct ArrowArray){.length = 4, .n_buffers = 3, .buffers = db, .private_data = h,
                             .release = child_release};
    *k = (struct ArrowArray){.length = rows, .n_buffers = 2, .buffers = kb, .dictionary = d,
                             .private_data = h, .release = op_release};
    h->kidp[0] = k;
    in_place += rows;
  }
  atomic_fetch_add(&ck_arrow_bytes_in_place, in_place);
  atomic_fetch_add(&ck_arrow_bytes_copied, copied);
  *out = (struct ArrowArray){.length = rows, .n_buffers = 1, .buffers = &h->bufs[3 * n],
                             .n_children = n + op, .children = h->kidp, .private_data = h,
                             .release = parent_release};
}

/* ---------------------------------------------------------------- batch import */

typedef struct src_col {
  const struct ArrowArray *a;
  const char *fmt;
  int64_t off;      /* a->offset */
  const uint8_t *validity;
} src_col_t;

static bool src_valid(const src_col_t *s, int64_t i) {
  if (!s->validity) return true;
  int64_t j = s->off + i;
  return (s->validity[j >> 3] >> (j & 7)) & 1;
}

/* An integer of any Arrow width ("c", "C", "s", "S", "i", "I", "l", "L"), or false. */
static bool src_int(const src_col_t *s, int64_t i, int64_t *out) {
  const void *v = s->a->buffers[1];
  int64_t j = s->off + i;
  switch (s->fmt[0]) {
    case 'c': *out = ((const int8_t *)v)[j]; return true;
    case 'C': *out = ((const uint8_t *)v)[j]; return true;
    case 's': *out = ((const int16_t *)v)[j]; return true;
    case 'S': *out = ((const uint16_t *)v)[j]; return true;
    case 'i': *out = ((const int32_t *)v)[j]; return true;
    case 'I': *out = ((const uint32_t *)v)[j]; return true;
    case 'l': *out = ((const int64_t *)v)[j]; return true;
    case 'L': *out = (int64_t)((const uint64_t *)v)[j]; return true;
  }
  return false;
}

static bool is_int_fmt(const char *f) { return f[0] && !f[1] && strchr("cCsSiIlL", f[0]); }

/* Milliseconds per unit of an Arrow timestamp format "ts?:…": divisor (> 0) or multiplier
 * (< 0); 0 when f is not a timestamp. */
static int64_t ts_scale(const char *f) {
  if (strncmp(f, "ts", 2) != 0 || !f[2] || f[3] != ':') return 0;
  switch (f[2]) {
    case 's': return -1000;
    case 'm': return 1;
    case 'u': return 1000;
    case 'n': return 1000000;
  }
  return 0;
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int import_col(ck_col_t *dst, const src_col_t *s, int64_t rows, const char *table,
                      const char *name, ck_error_t *err) {
  const char *f = s->fmt;
  ck_type_t t = dst->type;
  char tn[40];
  int64_t tsd = ts_scale(f);
  bool ok = false;
  switch (t.id) {
    case CK_T_BOOL: ok = strcmp(f, "b") == 0; break;
    case CK_T_INT32: ok = is_int_fmt(f) && strchr("cCsSi", f[0]); break;
    case CK_T_INT64: ok = is_int_fmt(f) && f[0] != 'L'; break;
    case CK_T_FLOAT32: ok = strcmp(f, "f") == 0; break;
    case CK_T_FLOAT64: ok = strcmp(f, "f") == 0 || strcmp(f, "g") == 0 || is_int_fmt(f); break;
    case CK_T_STRING: ok = strcmp(f, "u") == 0 || strcmp(f, "U") == 0; break;
    case CK_T_TIMESTAMP: ok = tsd != 0 || strcmp(f, "l") == 0; break;
    case CK_T_DECIMAL: {
      int p, sc, bits = 128;
      ok = (sscanf(f, "d:%d,%d,%d", &p, &sc, &bits) >= 2) && sc == t.scale && bits == 128;
      break;
    }
    case CK_T_NULL: break;
  }
  if (strcmp(f, "n") == 0) ok = true;
  if (!ok) {
    ck_error_set(err, CK_ETYPE, "could not push into table '%s': column '%s' has Arrow type "
                 "'%s', which does not convert to %s", table, name, f,
                 ck_type_name(t, tn, sizeof tn));
    ck_error_hint(err, "cast the column to the table's type before pushing it");
    return CK_ETYPE;
  }
  const void *v1 = s->a->n_buffers > 1 ? s->a->buffers[1] : NULL;
  for (int64_t i = 0; i < rows; i++) {
    if (f[0] == 'n' || !src_valid(s, i)) {
      ck_col_append_null(dst);
      continue;
    }
    int64_t j = s->off + i, iv;
    switch (t.id) {
      case CK_T_BOOL: ck_col_append_bool(dst, (((const uint8_t *)v1)[j >> 3] >> (j & 7)) & 1); break;
      case CK_T_INT32: src_int(s, i, &iv); ck_col_append_i32(dst, (int32_t)iv); break;
      case CK_T_INT64: src_int(s, i, &iv); ck_col_append_i64(dst, iv); break;
      case CK_T_FLOAT32: ck_col_append_f32(dst, ((const float *)v1)[j]); break;
      case CK_T_FLOAT64:
        if (f[0] == 'f') ck_col_append_f64(dst, ((const float *)v1)[j]);
        else if (f[0] == 'g') ck_col_append_f64(dst, ((const double *)v1)[j]);
        else if (src_int(s, i, &iv)) ck_col_append_f64(dst, (double)iv);
        break;
      case CK_T_TIMESTAMP:
        iv = ((const int64_t *)v1)[j];
        ck_col_append_i64(dst, tsd < 0 ? iv * -tsd : tsd > 1 ? floor_div(iv, tsd) : iv);
        break;
      case CK_T_DECIMAL: {
        ck_i128 d;
        memcpy(&d, (const char *)v1 + j * 16, 16);
        ck_col_append_dec(dst, d);
        break;
      }
      case CK_T_STRING:
        if (f[0] == 'u') {
          const int32_t *o = v1;
          ck_col_append_str(dst, (const char *)s->a->buffers[2] + o[j], (size_t)(o[j + 1] - o[j]));
        } else {
          const int64_t *o = v1;
          ck_col_append_str(dst, (const char *)s->a->buffers[2] + o[j], (size_t)(o[j + 1] - o[j]));
        }
        break;
      case CK_T_NULL: ck_col_append_null(dst); break;
    }
  }
  return 0;
}

int ck_arrow_batch_import(struct ArrowArray *a, struct ArrowSchema *as, const ck_schema_t *s,
                          const char *table, ck_batch_t **out, ck_error_t *err) {
  *out = NULL;
  int rc = 0;
  ck_batch_t *b = NULL;
  int *pick = ck_calloc((size_t)s->ncols + 1, sizeof *pick);
  if (!a || !as || !a->release || !as->release) {
    rc = ck_error_set(err, CK_EINVAL, "could not push into table '%s': the Arrow array or "
                      "its schema is missing or already released", table);
    goto fail;
  }
  if (strcmp(as->format, "+s") != 0 || as->n_children != a->n_children) {
    rc = ck_error_set(err, CK_ETYPE, "could not push into table '%s': the batch is Arrow "
                      "type '%s', not a struct of columns (a record batch)", table, as->format);
    goto fail;
  }
  for (int c = 0; c < s->ncols; c++) {
    pick[c] = -1;
    for (int64_t k = 0; k < as->n_children; k++)
      if (as->children[k]->name && ck_streq_i(as->children[k]->name, s->names[c])) pick[c] = (int)k;
  }
  for (int64_t k = 0; k < as->n_children; k++) {
    bool used = false;
    for (int c = 0; c < s->ncols; c++) used |= pick[c] == k;
    if (!used) {
      rc = ck_error_set(err, CK_EBIND, "could not push into table '%s': the batch's column "
                        "'%s' is not a column of the table", table,
                        as->children[k]->name ? as->children[k]->name : "");
      goto fail;
    }
    if (as->children[k]->dictionary) {
      rc = ck_error_set(err, CK_EUNSUPPORTED, "could not push into table '%s': column '%s' "
                        "is dictionary-encoded", table, as->children[k]->name);
      ck_error_hint(err, "decode it first (pyarrow: pyarrow.compute.cast to the value type)");
      goto fail;
    }
  }
  b = ck_batch_new(s->ncols, s->types, (size_t)(a->length > 0 ? a->length : 1));
  for (int c = 0; c < s->ncols; c++) {
    if (pick[c] < 0) {
      for (int64_t i = 0; i < a->length; i++) ck_col_append_null(&b->cols[c]);
      continue;
    }
    const struct ArrowArray *ca = a->children[pick[c]];
    src_col_t sc = {ca, as->children[pick[c]]->format, ca->offset + a->offset,
                    ca->null_count != 0 && ca->n_buffers > 0 ? ca->buffers[0] : NULL};
    if ((rc = import_col(&b->cols[c], &sc, a->length, table, s->names[c], err))) goto fail;
  }
  ck_batch_seal(b);
  *out = b;
  b = NULL;
fail:
  ck_batch_free(b);
  ck_free(pick);
  if (a && a->release) a->release(a);
  if (as && as->release) as->release(as);
  return rc;
}
