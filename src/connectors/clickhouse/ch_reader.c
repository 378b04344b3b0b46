/*
 * DESIGN: see ch_reader.h. Structure: one switch on `step` per packet kind (nginx style:
 * each case reads one primitive and advances), a block machine on `bstep` and a column
 * machine on `cstep`. Primitives read from one of two sources — the raw input, or the
 * decompressed bytes of the current block (pulling one more whole frame from the raw input
 * when they run short) — and either take their bytes whole or return CK_CH_NEED_MORE having
 * consumed nothing.
 */
#include "connectors/clickhouse/ch_reader.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "connectors/clickhouse/ch_compress.h"
#include "connectors/clickhouse/ch_proto.h"

#define MAX_STRING (1u << 30)
#define MAX_COLUMNS 100000
#define MAX_NESTED_TEXT 2048
#define NEED CK_CH_NEED_MORE

const char *ck_ch_packet_name(uint64_t type) {
  static const char *const names[] = {
      "Hello", "Data", "Exception", "Progress", "Pong", "EndOfStream", "ProfileInfo", "Totals",
      "Extremes", "TablesStatusResponse", "Log", "TableColumns", "PartUUIDs", "ReadTaskRequest",
      "ProfileEvents", "MergeTreeAllRangesAnnouncement", "MergeTreeReadTaskRequest",
      "TimezoneUpdate", "SSHChallenge"};
  return type < CK_ARRAY_LEN(names) ? names[type] : "unknown";
}

static int proto_err(ck_ch_reader_t *r, ck_error_t *err, const char *fmt, const char *arg) {
  char msg[CK_ERR_MSG];
  snprintf(msg, sizeof msg, fmt, arg);
  ck_error_set(err, CK_EPROTO, "malformed reply from the ClickHouse server: %s", msg);
  if (err) {
    snprintf(err->origin, sizeof err->origin, "clickhouse");
    err->retriable = true; /* a new connection may well do better */
  }
  r->failed = CK_EPROTO;
  return CK_EPROTO;
}

void ck_ch_reader_init(ck_ch_reader_t *r, int client_revision) {
  memset(r, 0, sizeof *r);
  r->client_revision = client_revision;
  r->revision = client_revision;
  r->max_block_bytes = (size_t)1 << 30;
  ck_buf_init(&r->in);
  ck_buf_init(&r->z);
  ck_ch_block_init(&r->pkt.block);
}

static void packet_clear(ck_ch_reader_t *r) {
  ck_ch_packet_t *p = &r->pkt;
  ck_free(p->hello.name);
  ck_free(p->hello.timezone);
  ck_free(p->hello.display_name);
  ck_free(p->exc.name);
  ck_free(p->exc.message);
  ck_free(p->exc.nested);
  ck_free(p->table);
  ck_free(p->text);
  ck_ch_block_fini(&p->block);
  memset(p, 0, sizeof *p);
  ck_ch_block_init(&p->block);
  ck_free(r->tmp);
  r->tmp = NULL;
  if (r->keys.type_name) {
    ck_free(r->keys.name);
    ck_free(r->keys.type_name);
    ck_buf_fini(&r->keys.nulls);
    ck_buf_fini(&r->keys.data);
    ck_buf_fini(&r->keys.offs);
  }
  memset(&r->keys, 0, sizeof r->keys);
}

void ck_ch_reader_fini(ck_ch_reader_t *r) {
  packet_clear(r);
  ck_buf_fini(&r->in);
  ck_buf_fini(&r->z);
}

void ck_ch_reader_reset(ck_ch_reader_t *r) {
  int rev = r->client_revision;
  bool compressed = r->compressed;
  size_t max = r->max_block_bytes;
  ck_ch_reader_fini(r);
  ck_ch_reader_init(r, rev);
  r->compressed = compressed;
  r->max_block_bytes = max;
}

void ck_ch_reader_feed(ck_ch_reader_t *r, const void *data, size_t len) {
  if (r->pos && r->pos >= r->in.len / 2) {
    memmove(r->in.data, r->in.data + r->pos, r->in.len - r->pos);
    r->in.len -= r->pos;
    r->pos = 0;
  }
  ck_buf_append(&r->in, data, len);
}

size_t ck_ch_reader_pending(const ck_ch_reader_t *r) { return r->in.len - r->pos; }

/* ================================================================ sources ====== */

static size_t peek(ck_ch_reader_t *r, bool z, const uint8_t **p) {
  static const uint8_t none[1];
  const ck_buf_t *b = z ? &r->z : &r->in;
  size_t pos = z ? r->zpos : r->pos;
  *p = b->data ? (const uint8_t *)b->data + pos : none;
  return b->len - pos;
}

static void consume(ck_ch_reader_t *r, bool z, size_t n) {
  if (z) r->zpos += n;
  else r->pos += n;
}

/* One more whole frame from the raw input into z. */
static int pull_frame(ck_ch_reader_t *r, ck_error_t *err) {
  if (r->zpos) {
    memmove(r->z.data, r->z.data + r->zpos, r->z.len - r->zpos);
    r->z.len -= r->zpos;
    r->zpos = 0;
  }
  size_t used = 0, need = 0;
  ck_error_t ferr = {0};
  const uint8_t *in;
  size_t avail = peek(r, false, &in);
  int rc = ck_ch_frame_decode(in, avail, r->max_block_bytes, &r->z, &used, &need, &ferr);
  if (rc == 1) return NEED;
  if (rc) return proto_err(r, err, "%s", ferr.message);
  r->pos += used;
  return 0;
}

static int ensure(ck_ch_reader_t *r, bool z, size_t n, ck_error_t *err) {
  const uint8_t *p;
  while (peek(r, z, &p) < n) {
    if (!z) return NEED;
    int rc = pull_frame(r, err);
    if (rc) return rc;
  }
  return 0;
}

/* Reads a varint without consuming it: its value and length. */
static int peek_varint(ck_ch_reader_t *r, bool z, uint64_t *v, size_t *len, ck_error_t *err) {
  for (;;) {
    const uint8_t *p;
    size_t av = peek(r, z, &p);
    int n = ck_uvarint_peek(p, av, v);
    if (n > 0) {
      *len = (size_t)n;
      return 0;
    }
    if (n < 0) return proto_err(r, err, "%s", "a variable-length integer longer than 10 bytes");
    if (!z) return NEED;
    int rc = pull_frame(r, err);
    if (rc) return rc;
  }
}

static int rd_varint(ck_ch_reader_t *r, bool z, uint64_t *v, ck_error_t *err) {
  size_t n;
  int rc = peek_varint(r, z, v, &n, err);
  if (!rc) consume(r, z, n);
  return rc;
}

static int rd_fixed(ck_ch_reader_t *r, bool z, void *dst, size_t n, ck_error_t *err) {
  int rc = ensure(r, z, n, err);
  if (rc) return rc;
  const uint8_t *p;
  peek(r, z, &p);
  memcpy(dst, p, n);
  consume(r, z, n);
  return 0;
}

static int rd_u64(ck_ch_reader_t *r, bool z, uint64_t *v, ck_error_t *err) {
  uint8_t b[8];
  int rc = rd_fixed(r, z, b, 8, err);
  if (!rc) *v = ck_get_le64(b);
  return rc;
}

/* A string, whole: *p points at its bytes in the source (valid until the next read). */
static int rd_str_view(ck_ch_reader_t *r, bool z, const char **s, size_t *n, ck_error_t *err) {
  uint64_t len;
  size_t vl;
  int rc = peek_varint(r, z, &len, &vl, err);
  if (rc) return rc;
  if (len > MAX_STRING) return proto_err(r, err, "%s", "a string longer than 1 GiB");
  if ((rc = ensure(r, z, vl + (size_t)len, err))) return rc;
  const uint8_t *p;
  peek(r, z, &p);
  *s = (const char *)p + vl;
  *n = (size_t)len;
  consume(r, z, vl + (size_t)len);
  return 0;
}

static int rd_str(ck_ch_reader_t *r, bool z, char **out, ck_error_t *err) {
  const char *s;
  size_t n;
  int rc = rd_str_view(r, z, &s, &n, err);
  if (rc) return rc;
  ck_free(*out);
  *out = ck_strndup(s, n);
  return 0;
}

/* ============================================================ column data ====== */

static int account(ck_ch_reader_t *r, size_t bytes, ck_error_t *err) {
  r->block_bytes += bytes;
  if (r->block_bytes > r->max_block_bytes)
    return proto_err(r, err, "%s", "a block larger than the reader's limit");
  return 0;
}

/* Reads values of col's base type into col until *done reaches total (strings one at a time,
 * fixed-width values in as large pieces as are there). */
static int rd_values(ck_ch_reader_t *r, bool z, ck_ch_col_t *col, uint64_t total,
                     uint64_t *done, ck_error_t *err) {
  size_t w = ck_ch_type_width(&col->type);
  while (*done < total) {
    int rc;
    if (col->type.base == CK_CH_STRING) {
      const char *s;
      size_t n;
      if ((rc = rd_str_view(r, z, &s, &n, err))) return rc;
      if ((rc = account(r, n + 8, err))) return rc;
      ck_ch_col_push_str_raw(col, s, n);
      (*done)++;
      continue;
    }
    if ((rc = ensure(r, z, w, err))) return rc;
    const uint8_t *p;
    size_t av = peek(r, z, &p);
    uint64_t k = av / w;
    if (k > total - *done) k = total - *done;
    if ((rc = account(r, (size_t)k * w, err))) return rc;
    ck_buf_append(&col->data, p, (size_t)k * w);
    consume(r, z, (size_t)k * w);
    *done += k;
  }
  return 0;
}

/* The null map: nrows bytes, in pieces. */
static int rd_nulls(ck_ch_reader_t *r, bool z, ck_ch_col_t *col, ck_error_t *err) {
  while (r->done < r->nrows) {
    int rc = ensure(r, z, 1, err);
    if (rc) return rc;
    const uint8_t *p;
    size_t av = peek(r, z, &p);
    uint64_t k = r->nrows - r->done;
    if (k > av) k = av;
    if ((rc = account(r, (size_t)k, err))) return rc;
    ck_buf_append(&col->nulls, p, (size_t)k);
    consume(r, z, (size_t)k);
    r->done += k;
  }
  return 0;
}

static void keys_reset(ck_ch_reader_t *r, const ck_ch_col_t *col) {
  if (!r->keys.type_name) {
    r->keys.name = ck_strdup("keys");
    r->keys.type_name = ck_strdup(col->type_name);
    ck_buf_init(&r->keys.nulls);
    ck_buf_init(&r->keys.data);
    ck_buf_init(&r->keys.offs);
  }
  r->keys.type = col->type;
  r->keys.type.nullable = r->keys.type.lowcard = false;
  r->keys.rows = 0;
  ck_buf_reset(&r->keys.data);
  ck_buf_reset(&r->keys.offs);
  ck_buf_reset(&r->keys.nulls);
}

/* One LowCardinality column: key version, then granules of (flags, keys, indexes). */
static int rd_lowcard(ck_ch_reader_t *r, bool z, ck_ch_col_t *col, ck_error_t *err) {
  int rc;
  uint64_t v;
  for (;;) switch (r->cstep) {
      case 0:
        if ((rc = rd_u64(r, z, &v, err))) return rc;
        if (v != 1) return proto_err(r, err, "%s", "an unknown LowCardinality key version");
        r->cstep = 1;
        break;
      case 1:
        if ((rc = rd_u64(r, z, &r->lc_flags, err))) return rc;
        if ((r->lc_flags & 0xff) > 3 || (r->lc_flags >> 8) & ~(uint64_t)0x6)
          return proto_err(r, err, "%s",
                           "LowCardinality flags this client does not know (a global dictionary?)");
        if (!(r->lc_flags & (1u << 9)))
          return proto_err(r, err, "%s", "a LowCardinality granule without its dictionary");
        r->cstep = 2;
        break;
      case 2:
        if ((rc = rd_u64(r, z, &r->lc_nkeys, err))) return rc;
        if (r->lc_nkeys > ((uint64_t)1 << 32))
          return proto_err(r, err, "%s", "a LowCardinality dictionary of more than 2^32 keys");
        keys_reset(r, col);
        r->kdone = 0;
        r->cstep = 3;
        break;
      case 3:
        if ((rc = rd_values(r, z, &r->keys, r->lc_nkeys, &r->kdone, err))) return rc;
        r->keys.rows = (size_t)r->lc_nkeys;
        r->cstep = 4;
        break;
      case 4:
        if ((rc = rd_u64(r, z, &r->lc_rows, err))) return rc;
        if (r->lc_rows > r->nrows - r->done)
          return proto_err(r, err, "%s", "a LowCardinality granule longer than its block");
        if (r->lc_rows && !r->lc_nkeys)
          return proto_err(r, err, "%s", "LowCardinality indexes into an empty dictionary");
        r->gdone = 0;
        r->cstep = 5;
        break;
      case 5: {
        int iw = 1 << (r->lc_flags & 0xff);
        size_t kw = ck_ch_type_width(&r->keys.type);
        while (r->gdone < r->lc_rows) {
          if ((rc = ensure(r, z, (size_t)iw, err))) return rc;
          const uint8_t *p;
          size_t av = peek(r, z, &p);
          uint64_t k = av / (size_t)iw;
          if (k > r->lc_rows - r->gdone) k = r->lc_rows - r->gdone;
          for (uint64_t i = 0; i < k; i++) {
            uint64_t idx = ck_get_le_n(p + i * (size_t)iw, iw);
            if (idx >= r->lc_nkeys) {
              consume(r, z, (size_t)i * (size_t)iw);
              return proto_err(r, err, "%s", "a LowCardinality index past its dictionary");
            }
            size_t n;
            const char *s = ck_ch_col_str(&r->keys, (size_t)idx, &n);
            if ((rc = account(r, n + 9, err))) return rc;
            if (col->type.nullable) ck_buf_putc(&col->nulls, idx == 0);
            if (col->type.base == CK_CH_STRING) ck_ch_col_push_str_raw(col, s, idx == 0 && col->type.nullable ? 0 : n);
            else ck_buf_append(&col->data, s, kw);
          }
          consume(r, z, (size_t)k * (size_t)iw);
          r->gdone += k;
          r->done += k;
        }
        if (r->done == r->nrows) return 0;
        r->cstep = 1;
        break;
      }
      default:
        return proto_err(r, err, "%s", "internal state");
    }
}

/* One column's data: cstep 0 null map, 1 values; LowCardinality has its own machine. */
static int rd_column(ck_ch_reader_t *r, bool z, ck_ch_col_t *col, ck_error_t *err) {
  int rc;
  if (col->type.lowcard) {
    rc = rd_lowcard(r, z, col, err);
  } else {
    if (r->cstep == 0) {
      if (col->type.nullable && (rc = rd_nulls(r, z, col, err))) return rc;
      r->cstep = 1;
      r->done = 0;
    }
    rc = rd_values(r, z, col, r->nrows, &r->done, err);
  }
  if (!rc) col->rows = (size_t)r->nrows;
  return rc;
}

/* ================================================================ blocks ====== */

static int rd_block(ck_ch_reader_t *r, bool z, ck_ch_block_t *b, ck_error_t *err) {
  int rc;
  uint64_t v;
  for (;;) switch (r->bstep) {
      case 0:
        r->block_bytes = 0;
        r->bstep = r->revision >= CK_CH_REV_BLOCK_INFO ? 1 : 10;
        break;
      case 1: /* block info: field number, 0 ends */
        if ((rc = rd_varint(r, z, &v, err))) return rc;
        if (v == 0) r->bstep = 10;
        else if (v == 1) r->bstep = 2;
        else if (v == 2) r->bstep = 3;
        else return proto_err(r, err, "%s", "an unknown block info field");
        break;
      case 2: {
        uint8_t o;
        if ((rc = rd_fixed(r, z, &o, 1, err))) return rc;
        b->is_overflows = o != 0;
        r->bstep = 1;
        break;
      }
      case 3: {
        uint8_t bn[4];
        if ((rc = rd_fixed(r, z, bn, 4, err))) return rc;
        b->bucket_num = (int32_t)ck_get_le32(bn);
        r->bstep = 1;
        break;
      }
      case 10:
        if ((rc = rd_varint(r, z, &r->ncols, err))) return rc;
        if (r->ncols > MAX_COLUMNS) return proto_err(r, err, "%s", "a block of too many columns");
        r->bstep = 11;
        break;
      case 11:
        if ((rc = rd_varint(r, z, &r->nrows, err))) return rc;
        if (r->nrows > ((uint64_t)1 << 40)) return proto_err(r, err, "%s", "a block of too many rows");
        b->rows = (size_t)r->nrows;
        r->col = 0;
        r->bstep = 12;
        break;
      case 12:
        if ((uint64_t)r->col == r->ncols) return 0;
        if ((rc = rd_str(r, z, &r->tmp, err))) return rc;
        r->bstep = 13;
        break;
      case 13: {
        const char *s;
        size_t n;
        if ((rc = rd_str_view(r, z, &s, &n, err))) return rc;
        char *tname = ck_strndup(s, n);
        ck_error_t terr = {0};
        int idx = ck_ch_block_add_col(b, r->tmp, tname, &terr);
        ck_free(tname);
        if (idx < 0) return proto_err(r, err, "%s", terr.message);
        ck_free(r->tmp);
        r->tmp = NULL;
        r->bstep = r->revision >= CK_CH_REV_CUSTOM_SERIALIZATION ? 14 : 15;
        r->cstep = 0;
        r->done = 0;
        break;
      }
      case 14: {
        uint8_t custom;
        if ((rc = rd_fixed(r, z, &custom, 1, err))) return rc;
        if (custom) return proto_err(r, err, "%s", "a column in a custom (sparse) serialisation");
        r->bstep = 15;
        break;
      }
      case 15:
        if (r->nrows && (rc = rd_column(r, z, &b->cols[r->col], err))) return rc;
        r->col++;
        r->cstep = 0;
        r->done = 0;
        r->bstep = 12;
        break;
      default:
        return proto_err(r, err, "%s", "internal state");
    }
}

/* =============================================================== packets ====== */

static int min_rev(int a, uint64_t b) { return (uint64_t)a < b ? a : (int)b; }

static int rd_hello(ck_ch_reader_t *r, ck_error_t *err) {
  ck_ch_packet_t *p = &r->pkt;
  int rc;
  for (;;) switch (r->step) {
      case 1: if ((rc = rd_str(r, false, &p->hello.name, err))) return rc; r->step = 2; break;
      case 2: if ((rc = rd_varint(r, false, &p->hello.major, err))) return rc; r->step = 3; break;
      case 3: if ((rc = rd_varint(r, false, &p->hello.minor, err))) return rc; r->step = 4; break;
      case 4:
        if ((rc = rd_varint(r, false, &p->hello.revision, err))) return rc;
        r->revision = min_rev(r->client_revision, p->hello.revision);
        r->step = 5;
        break;
      case 5:
        if (r->revision >= CK_CH_REV_SERVER_TIMEZONE &&
            (rc = rd_str(r, false, &p->hello.timezone, err))) return rc;
        r->step = 6;
        break;
      case 6:
        if (r->revision >= CK_CH_REV_SERVER_DISPLAY_NAME &&
            (rc = rd_str(r, false, &p->hello.display_name, err))) return rc;
        r->step = 7;
        break;
      case 7:
        if (r->revision >= CK_CH_REV_VERSION_PATCH) {
          if ((rc = rd_varint(r, false, &p->hello.patch, err))) return rc;
        } else {
          p->hello.patch = p->hello.revision;
        }
        return 0;
      default:
        return proto_err(r, err, "%s", "internal state");
    }
}

static int rd_exception(ck_ch_reader_t *r, ck_error_t *err) {
  ck_ch_packet_t *p = &r->pkt;
  int rc;
  for (;;) switch (r->step) {
      case 1: {
        uint8_t c[4];
        if ((rc = rd_fixed(r, false, c, 4, err))) return rc;
        if (r->n_nested == 0) p->exc.code = (int32_t)ck_get_le32(c);
        r->step = 2;
        break;
      }
      case 2: {
        const char *s;
        size_t n;
        if ((rc = rd_str_view(r, false, &s, &n, err))) return rc;
        if (r->n_nested == 0) p->exc.name = ck_strndup(s, n);
        r->step = 3;
        break;
      }
      case 3: {
        const char *s;
        size_t n;
        if ((rc = rd_str_view(r, false, &s, &n, err))) return rc;
        if (r->n_nested == 0) {
          p->exc.message = ck_strndup(s, n);
        } else {
          size_t have = p->exc.nested ? strlen(p->exc.nested) : 0;
          if (have < MAX_NESTED_TEXT) {
            size_t take = n < MAX_NESTED_TEXT - have ? n : MAX_NESTED_TEXT - have;
            p->exc.nested = ck_realloc(p->exc.nested, have + take + 3);
            if (have) memcpy(p->exc.nested + have, "; ", 2), have += 2;
            memcpy(p->exc.nested + have, s, take);
            p->exc.nested[have + take] = 0;
          }
        }
        r->step = 4;
        break;
      }
      case 4: { /* stack trace */
        const char *s;
        size_t n;
        if ((rc = rd_str_view(r, false, &s, &n, err))) return rc;
        r->step = 5;
        break;
      }
      case 5: {
        uint8_t nested;
        if ((rc = rd_fixed(r, false, &nested, 1, err))) return rc;
        if (!nested) return 0;
        r->n_nested++;
        r->step = 1;
        break;
      }
      default:
        return proto_err(r, err, "%s", "internal state");
    }
}

/* A run of varint fields, those present at this revision. */
static int rd_varints(ck_ch_reader_t *r, uint64_t **fields, int n, ck_error_t *err) {
  while (r->step - 1 < n) {
    uint64_t *f = fields[r->step - 1];
    if (f) {
      int rc = rd_varint(r, false, f, err);
      if (rc) return rc;
    }
    r->step++;
  }
  return 0;
}

static int rd_u8_field(ck_ch_reader_t *r, uint8_t *v, ck_error_t *err) {
  return rd_fixed(r, false, v, 1, err);
}

static int rd_profile(ck_ch_reader_t *r, ck_error_t *err) {
  ck_ch_packet_t *p = &r->pkt;
  int rc;
  for (;;) switch (r->step) {
      case 1: if ((rc = rd_varint(r, false, &p->profile.rows, err))) return rc; r->step = 2; break;
      case 2: if ((rc = rd_varint(r, false, &p->profile.blocks, err))) return rc; r->step = 3; break;
      case 3: if ((rc = rd_varint(r, false, &p->profile.bytes, err))) return rc; r->step = 4; break;
      case 4: if ((rc = rd_u8_field(r, &p->profile.applied_limit, err))) return rc; r->step = 5; break;
      case 5: if ((rc = rd_varint(r, false, &p->profile.rows_before_limit, err))) return rc; r->step = 6; break;
      case 6:
        if ((rc = rd_u8_field(r, &p->profile.calculated_rows_before_limit, err))) return rc;
        if (r->revision < CK_CH_REV_ROWS_BEFORE_AGGREGATION) return 0;
        r->step = 7;
        break;
      case 7: if ((rc = rd_u8_field(r, &p->profile.applied_aggregation, err))) return rc; r->step = 8; break;
      case 8: return rd_varint(r, false, &p->profile.rows_before_aggregation, err);
      default: return proto_err(r, err, "%s", "internal state");
    }
}

/* Packets that carry a table name and a block. */
static int rd_data(ck_ch_reader_t *r, bool compressed, ck_error_t *err) {
  int rc;
  if (r->step == 1) {
    if ((rc = rd_str(r, false, &r->pkt.table, err))) return rc;
    r->step = 2;
    r->bstep = 0;
  }
  if ((rc = rd_block(r, compressed, &r->pkt.block, err))) return rc;
  if (compressed && r->zpos != r->z.len)
    return proto_err(r, err, "%s", "a compressed frame that runs past the end of its block");
  return 0;
}

int ck_ch_reader_next(ck_ch_reader_t *r, const ck_ch_packet_t **out, ck_error_t *err) {
  if (r->failed) return ck_error_set(err, r->failed, "the ClickHouse connection is out of step after an earlier error");
  int rc;
  ck_ch_packet_t *p = &r->pkt;
  if (!r->in_packet) {
    packet_clear(r);
    if ((rc = rd_varint(r, false, &p->type, err))) return rc;
    r->in_packet = true;
    r->step = 1;
    r->n_nested = 0;
    r->z.len = 0;
    r->zpos = 0;
  }
  switch (p->type) {
    case CK_CH_SERVER_HELLO: rc = rd_hello(r, err); break;
    case CK_CH_SERVER_EXCEPTION: rc = rd_exception(r, err); break;
    case CK_CH_SERVER_PROGRESS: {
      uint64_t *f[] = {&p->progress.read_rows, &p->progress.read_bytes, &p->progress.total_rows,
                       r->revision >= CK_CH_REV_TOTAL_BYTES_IN_PROGRESS ? &p->progress.total_bytes : NULL,
                       r->revision >= CK_CH_REV_CLIENT_WRITE_INFO ? &p->progress.written_rows : NULL,
                       r->revision >= CK_CH_REV_CLIENT_WRITE_INFO ? &p->progress.written_bytes : NULL,
                       r->revision >= CK_CH_REV_SERVER_QUERY_TIME_IN_PROGRESS ? &p->progress.elapsed_ns : NULL};
      rc = rd_varints(r, f, (int)CK_ARRAY_LEN(f), err);
      break;
    }
    case CK_CH_SERVER_PONG:
    case CK_CH_SERVER_END_OF_STREAM:
    case CK_CH_SERVER_READ_TASK_REQUEST:
      rc = 0;
      break;
    case CK_CH_SERVER_PROFILE_INFO: rc = rd_profile(r, err); break;
    case CK_CH_SERVER_DATA:
    case CK_CH_SERVER_TOTALS:
    case CK_CH_SERVER_EXTREMES:
      rc = rd_data(r, r->compressed, err);
      break;
    case CK_CH_SERVER_LOG:
    case CK_CH_SERVER_PROFILE_EVENTS:
      rc = rd_data(r, false, err);
      break;
    case CK_CH_SERVER_TABLE_COLUMNS:
      if (r->step == 1) {
        if ((rc = rd_str(r, false, &p->table, err))) return rc;
        r->step = 2;
      }
      rc = rd_str(r, false, &p->text, err);
      break;
    case CK_CH_SERVER_PART_UUIDS:
      if (r->step == 1) {
        if ((rc = rd_varint(r, false, &p->count, err))) return rc;
        if (p->count > ((uint64_t)1 << 32)) return proto_err(r, err, "%s", "too many part UUIDs");
        r->step = 2;
        r->done = 0;
      }
      rc = 0;
      while (r->done < p->count) {
        uint8_t uuid[16];
        if ((rc = rd_fixed(r, false, uuid, 16, err))) break;
        r->done++;
      }
      break;
    case CK_CH_SERVER_TIMEZONE_UPDATE:
      rc = r->revision >= CK_CH_REV_TIMEZONE_UPDATES ? rd_str(r, false, &p->text, err)
                                                      : proto_err(r, err, "%s", "a time zone update this revision does not have");
      break;
    default: {
      char what[64];
      snprintf(what, sizeof what, "%llu (%s)", (unsigned long long)p->type, ck_ch_packet_name(p->type));
      return proto_err(r, err, "an unexpected packet of type %s", what);
    }
  }
  if (rc) {
    if (rc < 0) r->failed = rc;
    return rc;
  }
  r->in_packet = false;
  *out = p;
  return 0;
}
