/* DESIGN: see avro.h.
 *
 * A long is ULEB128 of its zigzag form (base/bytes.h, as Kafka's varlong); a double its 8
 * IEEE bytes little endian; a boolean one byte. The file metadata is one map block: a long
 * count, per entry the key as a string and the value as bytes, then 0. The deflate codec is
 * zlib's raw deflate (window bits -15: no zlib header or checksum), each block compressed on
 * its own; the block's byte size is that of its compressed bytes.
 */
#include "base/avro.h"

#include <string.h>
#include <zlib.h>

#include "base/alloc.h"
#include "base/bytes.h"

void ck_avro_put_long(ck_buf_t *b, int64_t v) { ck_buf_put_uvarint(b, ck_zigzag_encode(v)); }

void ck_avro_put_bytes(ck_buf_t *b, const void *p, size_t n) {
  ck_avro_put_long(b, (int64_t)n);
  if (n) ck_buf_append(b, p, n);
}

void ck_avro_put_string(ck_buf_t *b, const char *s) { ck_avro_put_bytes(b, s, strlen(s)); }

void ck_avro_put_union(ck_buf_t *b, int branch) { ck_avro_put_long(b, branch); }

void ck_avro_put_bool(ck_buf_t *b, int v) { ck_buf_putc(b, (char)(v ? 1 : 0)); }

void ck_avro_put_double(ck_buf_t *b, double v) {
  uint64_t u;
  memcpy(&u, &v, 8);
  uint8_t le[8];
  ck_put_le64(le, u);
  ck_buf_append(b, le, 8);
}

void ck_avro_begin(ck_avro_writer_t *w, ck_buf_t *out, const char *schema, ck_avro_codec_t codec,
                   const ck_arrow_kv_t *meta, int nmeta, const uint8_t sync[CK_AVRO_SYNC]) {
  memset(w, 0, sizeof *w);
  w->out = out;
  w->codec = codec;
  memcpy(w->sync, sync, CK_AVRO_SYNC);
  ck_buf_init(&w->block);
  ck_buf_append(out, "Obj\x01", 4);
  ck_avro_put_long(out, 2 + nmeta);
  ck_avro_put_string(out, "avro.schema");
  ck_avro_put_string(out, schema);
  ck_avro_put_string(out, "avro.codec");
  ck_avro_put_string(out, codec == CK_AVRO_DEFLATE ? "deflate" : "null");
  for (int i = 0; i < nmeta; i++) {
    ck_avro_put_string(out, meta[i].key);
    ck_avro_put_string(out, meta[i].value);
  }
  ck_avro_put_long(out, 0);
  ck_buf_append(out, w->sync, CK_AVRO_SYNC);
}

ck_buf_t *ck_avro_record(ck_avro_writer_t *w) {
  w->count++;
  return &w->block;
}

/* in, raw-deflated, into z. */
static int deflate_block(const ck_buf_t *in, ck_buf_t *z, ck_error_t *err) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return ck_error_set(err, CK_EINTERNAL, "could not compress an Avro block: zlib would not "
                        "start");
  uLong bound = deflateBound(&zs, (uLong)in->len);
  ck_buf_reserve(z, bound);
  zs.next_in = (Bytef *)in->data;
  zs.avail_in = (uInt)in->len;
  zs.next_out = (Bytef *)z->data + z->len;
  zs.avail_out = (uInt)bound;
  int zr = deflate(&zs, Z_FINISH);
  size_t n = bound - zs.avail_out;
  deflateEnd(&zs);
  if (zr != Z_STREAM_END)
    return ck_error_set(err, CK_EINTERNAL, "could not compress an Avro block: zlib returned %d",
                        zr);
  z->len += n;
  return 0;
}

int ck_avro_flush(ck_avro_writer_t *w, ck_error_t *err) {
  if (w->count == 0) return 0;
  int rc = 0;
  ck_buf_t z;
  ck_buf_init(&z);
  const ck_buf_t *body = &w->block;
  if (w->codec == CK_AVRO_DEFLATE) {
    rc = deflate_block(&w->block, &z, err);
    if (rc) goto fail;
    body = &z;
  }
  ck_avro_put_long(w->out, w->count);
  ck_avro_put_long(w->out, (int64_t)body->len);
  if (body->len) ck_buf_append(w->out, body->data, body->len);
  ck_buf_append(w->out, w->sync, CK_AVRO_SYNC);
  ck_buf_reset(&w->block);
  w->count = 0;
fail:
  ck_buf_fini(&z);
  return rc;
}

int ck_avro_finish(ck_avro_writer_t *w, ck_error_t *err) {
  int rc = ck_avro_flush(w, err);
  ck_buf_fini(&w->block);
  return rc;
}
