/*
 * DESIGN: the Kafka record batch v2 reader (krecords.h says what is yielded and what
 * next_offset means; this file is how).
 *
 * Two levels. open_batch walks batch headers in the record set: it validates the fixed header
 * (magic, length, codec, record count, CRC32C when asked), applies the transaction filter the
 * way Kafka's consumer does (the aborted list, sorted, is consumed in first-offset order into
 * a small set of aborted producer ids; an ABORT control record takes its producer out again),
 * steps over control batches and aborted batches, and for a batch to read points rp/rend at its
 * records: in the response itself, or in scratch after decompressing. rec_read then decodes
 * one record at a time; it is the hot path (millions of records a second): five varints with
 * a one- and two-byte fast path, two slices, no allocation, no copy, headers stepped over
 * with the record's length rather than parsed.
 *
 * Untrusted input: every read is bounded by the end of the record set, of the batch and of
 * the record; offsets and timestamps are added with wrap-around (no signed overflow); a batch
 * may decompress to at most CK_KRECS_MAX_BATCH bytes, so a decompression bomb is an error,
 * not an out-of-memory abort.
 *
 * Memory: the iterator owns the aborted copy, the aborted-producer set, scratch and one
 * decompression context per codec met (zlib's through the counting allocator; lz4's and
 * zstd's from their own malloc), all made on first use and reused across batches and resets
 * (a fresh zstd context per batch costs more than decoding a 16 KiB batch); nothing is
 * allocated per record.
 *
 * Threads: an iterator belongs to one thread; the file has no shared state.
 */
#include "connectors/kafka/krecords.h"

#define ZLIB_CONST
#include <lz4frame.h>
#include <snappy-c.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "base/crc32c.h"

/* The most one batch may decompress to; more is a decompression bomb, not data (Kafka's own
 * limit on a batch is max.message.bytes, 1 MiB by default, compressed). A test or a fuzz
 * build may define a smaller one. */
#ifndef CK_KRECS_MAX_BATCH
#define CK_KRECS_MAX_BATCH ((size_t)256 << 20)
#endif

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Byte positions in the fixed batch header. */
enum {
  H_LENGTH = 8,      /* batchLength i32: bytes after this field */
  H_MAGIC = 16,      /* magic i8 */
  H_CRC = 17,        /* crc u32 over H_ATTRS to the batch's end */
  H_ATTRS = 21,      /* attributes i16 */
  H_LAST_DELTA = 23, /* lastOffsetDelta i32 */
  H_BASE_TS = 27,    /* baseTimestamp i64 */
  H_MAX_TS = 35,     /* maxTimestamp i64 */
  H_PRODUCER = 43,   /* producerId i64 */
  H_COUNT = 57,      /* record count i32 */
  LOG_OVERHEAD = 12, /* baseOffset and batchLength: what a batch's length does not count */
};

#define ATTR_CODEC 0x07
#define ATTR_LOG_APPEND_TIME 0x08
#define ATTR_TRANSACTIONAL 0x10
#define ATTR_CONTROL 0x20

enum { CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD };
static const char *const codec_names[] = {"uncompressed", "gzip", "snappy", "lz4", "zstd"};

/* What pos/end point at for an empty record set (never NULL, so pointer arithmetic is defined). */
static const uint8_t no_records[1];

/* a + b wrapping around, as the untrusted input may ask for anything */
static inline int64_t add64(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

/* Varints (zigzag varint and varlong alike) are base/bytes.h's ck_varint_get: inlined, with the
 * one- and two-byte lengths of most record fields taken without a loop. */

/* ---- errors (cold) ---------------------------------------------------------------------- */

/* Fails the iterator (sticky until reset) with a CK_EDECODE message. */
static __attribute__((cold, noinline, format(printf, 3, 4))) int stop(ck_krecs_t *it,
                                                                      ck_error_t *err,
                                                                      const char *fmt, ...) {
  char msg[CK_ERR_MSG];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  it->failed = true;
  it->in_batch = false;
  it->left = 0;
  return ck_error_set(err, CK_EDECODE, "%s", msg);
}

static __attribute__((cold, noinline)) int fail_record(ck_krecs_t *it, ck_error_t *err,
                                                       bool past_batch) {
  return stop(it, err, "corrupt record batch at offset %lld: %s (%d of its records unread)",
              (long long)it->base_offset,
              past_batch ? "a record runs past the end of its batch"
                         : "a record's fields run past the record's length",
              (int)it->left);
}

static __attribute__((cold, noinline)) int fail_codec(ck_krecs_t *it, ck_error_t *err, int codec,
                                                      const char *why) {
  return stop(it, err, "could not decompress the %s record batch at offset %lld: %s",
              codec_names[codec], (long long)it->base_offset, why);
}

static __attribute__((cold, noinline)) int fail_bomb(ck_krecs_t *it, ck_error_t *err, int codec) {
  int rc = stop(it, err,
                "could not decompress the %s record batch at offset %lld: it decompresses to "
                "more than %zu MiB, the limit for one batch",
                codec_names[codec], (long long)it->base_offset, CK_KRECS_MAX_BATCH >> 20);
  ck_error_detail(err, "a batch this large is a decompression bomb or corrupt data");
  ck_buf_fini(&it->scratch); /* do not keep the memory the bomb made us take */
  return rc;
}

/* ---- records ---------------------------------------------------------------------------- */

/* Decodes the record at rp into *rec and steps past it. The hot path. */
static inline __attribute__((always_inline)) int rec_read(ck_krecs_t *it, ck_krec_t *rec,
                                                          ck_error_t *err) {
  const uint8_t *p = it->rp, *e = it->rend;
  int64_t len, ts, od, kl, vl;
  if (UNLIKELY(!ck_varint_get(&p, e, &len) || len > e - p)) return fail_record(it, err, true);
  if (UNLIKELY(len < 1)) return fail_record(it, err, false);
  const uint8_t *re = p + len;
  /* a response too big for the cache is read at memory speed: ask for a few records ahead
   * (a hint that never faults; 1.7x faster on 1M records of 200 bytes out of cache) */
  __builtin_prefetch((const void *)((uintptr_t)re + 768));
  p++; /* attributes (unused); then timestampDelta, offsetDelta, key length */
  if (UNLIKELY(!ck_varint_get(&p, re, &ts) || !ck_varint_get(&p, re, &od) ||
               !ck_varint_get(&p, re, &kl)))
    return fail_record(it, err, false);
  if (kl >= 0) {
    if (UNLIKELY(kl > re - p)) return fail_record(it, err, false);
    rec->key = (const char *)p;
    rec->key_len = (int32_t)kl;
    p += kl;
  } else {
    if (UNLIKELY(kl != -1)) return fail_record(it, err, false);
    rec->key = NULL;
    rec->key_len = 0;
  }
  if (UNLIKELY(!ck_varint_get(&p, re, &vl))) return fail_record(it, err, false);
  if (vl >= 0) {
    if (UNLIKELY(vl > re - p)) return fail_record(it, err, false);
    rec->value = (const char *)p;
    rec->value_len = (int32_t)vl;
  } else {
    if (UNLIKELY(vl != -1)) return fail_record(it, err, false);
    rec->value = NULL;
    rec->value_len = 0;
  }
  /* the headers are the rest of the record: stepped over */
  it->rp = re;
  it->left--;
  rec->offset = add64(it->base_offset, od);
  rec->timestamp = it->log_append_time ? it->base_ts : add64(it->base_ts, ts);
  return 0;
}

/* ---- decompression ---------------------------------------------------------------------- */

/* Room at scratch's end for the decompressor to write: grown as needed, never past
 * CK_KRECS_MAX_BATCH in all; 0 when the cap is reached. */
static size_t out_room(ck_krecs_t *it, size_t hint) {
  ck_buf_t *s = &it->scratch;
  if (s->len >= CK_KRECS_MAX_BATCH) return 0;
  size_t left = CK_KRECS_MAX_BATCH - s->len;
  size_t room = s->cap > s->len + 1 ? s->cap - s->len - 1 : 0;
  if (room == 0) {
    size_t grow = hint > s->len ? hint : s->len;
    if (grow < 65536) grow = 65536;
    ck_buf_reserve(s, grow < left ? grow : left);
    room = s->cap - s->len - 1;
  }
  return room < left ? room : left;
}

static voidpf z_alloc(voidpf opaque, uInt items, uInt size) {
  return ck_malloc((size_t)items * size);
}
static void z_free(voidpf opaque, voidpf p) { ck_free(p); }

/* gzip (or zlib) streams, one or more gzip members back to back, as GZIPInputStream reads. */
static int inflate_gzip(ck_krecs_t *it, const uint8_t *src, size_t n, ck_error_t *err) {
  z_stream *zs = it->zlib;
  if (!zs) {
    zs = ck_calloc(1, sizeof *zs);
    zs->zalloc = z_alloc;
    zs->zfree = z_free;
    if (inflateInit2(zs, 32 + MAX_WBITS) != Z_OK) {
      ck_free(zs);
      return fail_codec(it, err, CODEC_GZIP, "zlib could not start");
    }
    it->zlib = zs;
  } else if (inflateReset(zs) != Z_OK) {
    return fail_codec(it, err, CODEC_GZIP, "zlib could not start");
  }
  zs->next_in = (z_const Bytef *)src;
  zs->avail_in = (uInt)n;
  for (;;) {
    size_t room = out_room(it, n * 4);
    if (room == 0) return fail_bomb(it, err, CODEC_GZIP);
    zs->next_out = (Bytef *)it->scratch.data + it->scratch.len;
    zs->avail_out = (uInt)room;
    int zr = inflate(zs, Z_NO_FLUSH);
    it->scratch.len += room - zs->avail_out;
    if (zr == Z_STREAM_END) {
      if (zs->avail_in >= 2 && zs->next_in[0] == 0x1f && zs->next_in[1] == 0x8b) {
        inflateReset(zs); /* another gzip member follows */
        continue;
      }
      return 0;
    }
    if (zr == Z_OK) continue;
    if (zr == Z_BUF_ERROR && zs->avail_out == 0) continue; /* wants more room */
    return fail_codec(it, err, CODEC_GZIP,
                      zr == Z_BUF_ERROR ? "the compressed data is truncated"
                      : zs->msg         ? zs->msg
                                        : "the compressed data is invalid");
  }
}

/* One raw snappy block, appended to scratch. */
static int snappy_block(ck_krecs_t *it, const uint8_t *src, size_t n, ck_error_t *err) {
  size_t ulen;
  if (snappy_uncompressed_length((const char *)src, n, &ulen) != SNAPPY_OK)
    return fail_codec(it, err, CODEC_SNAPPY, "a block's length header is invalid");
  /* a snappy element yields at most 64 bytes from 3: a claim past 32x is corrupt, and must not
   * make us allocate for it */
  if (ulen / 32 > n)
    return fail_codec(it, err, CODEC_SNAPPY, "a block claims an impossible length");
  if (ulen > CK_KRECS_MAX_BATCH - it->scratch.len) return fail_bomb(it, err, CODEC_SNAPPY);
  ck_buf_reserve(&it->scratch, ulen);
  size_t got = ulen;
  if (snappy_uncompress((const char *)src, n, it->scratch.data + it->scratch.len, &got) !=
          SNAPPY_OK ||
      got != ulen)
    return fail_codec(it, err, CODEC_SNAPPY, "a block is invalid");
  it->scratch.len += got;
  return 0;
}

/* Snappy in the xerial framing Kafka's Java producers write (magic, two version words, then
 * length-prefixed raw blocks), or a raw snappy block. */
static int inflate_snappy(ck_krecs_t *it, const uint8_t *src, size_t n, ck_error_t *err) {
  static const uint8_t xerial[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
  if (n < 16 || memcmp(src, xerial, sizeof xerial) != 0) return snappy_block(it, src, n, err);
  const uint8_t *p = src + 16, *e = src + n;
  while (p < e) {
    if (e - p < 4) return fail_codec(it, err, CODEC_SNAPPY, "a block's length is truncated");
    uint32_t blen = ck_get_be32(p);
    p += 4;
    if (blen > (size_t)(e - p))
      return fail_codec(it, err, CODEC_SNAPPY, "a block runs past the end of the batch");
    if (blen) {
      int rc = snappy_block(it, p, blen, err);
      if (rc) return rc;
    }
    p += blen;
  }
  return 0;
}

/* The LZ4 frame format, one or more frames. */
static int inflate_lz4(ck_krecs_t *it, const uint8_t *src, size_t n, ck_error_t *err) {
  LZ4F_dctx *dctx = it->lz4;
  if (!dctx) {
    if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION)))
      return fail_codec(it, err, CODEC_LZ4, "lz4 could not start");
    it->lz4 = dctx;
  } else {
    LZ4F_resetDecompressionContext(dctx); /* also after an error in the last batch */
  }
  const uint8_t *in = src, *ie = src + n;
  for (;;) {
    size_t room = out_room(it, n * 4);
    if (room == 0) return fail_bomb(it, err, CODEC_LZ4);
    size_t dn = room, sn = (size_t)(ie - in);
    size_t r = LZ4F_decompress(dctx, it->scratch.data + it->scratch.len, &dn, in, &sn, NULL);
    if (LZ4F_isError(r)) return fail_codec(it, err, CODEC_LZ4, LZ4F_getErrorName(r));
    in += sn;
    it->scratch.len += dn;
    if (in == ie && (r == 0 || dn < room))
      return r == 0 ? 0 : fail_codec(it, err, CODEC_LZ4, "the compressed data is truncated");
    if (sn == 0 && dn == 0)
      return fail_codec(it, err, CODEC_LZ4, "the decompressor made no progress");
  }
}

/* zstd, one or more frames, with or without their content size. */
static int inflate_zstd(ck_krecs_t *it, const uint8_t *src, size_t n, ck_error_t *err) {
  ZSTD_DStream *ds = it->zstd;
  if (!ds) {
    if (!(ds = ZSTD_createDStream()))
      return fail_codec(it, err, CODEC_ZSTD, "zstd could not start");
    it->zstd = ds;
  } else {
    ZSTD_DCtx_reset(ds, ZSTD_reset_session_only); /* also after an error in the last batch */
  }
  ZSTD_inBuffer in = {src, n, 0};
  int rc;
  for (;;) {
    size_t room = out_room(it, n * 4);
    if (room == 0) {
      rc = fail_bomb(it, err, CODEC_ZSTD);
      break;
    }
    ZSTD_outBuffer out = {it->scratch.data + it->scratch.len, room, 0};
    size_t in_before = in.pos;
    size_t r = ZSTD_decompressStream(ds, &out, &in);
    if (ZSTD_isError(r)) {
      rc = fail_codec(it, err, CODEC_ZSTD, ZSTD_getErrorName(r));
      break;
    }
    it->scratch.len += out.pos;
    if (in.pos == in.size && (r == 0 || out.pos < out.size)) {
      rc = r == 0 ? 0 : fail_codec(it, err, CODEC_ZSTD, "the compressed data is truncated");
      break;
    }
    if (out.pos == 0 && in.pos == in_before) {
      rc = fail_codec(it, err, CODEC_ZSTD, "the decompressor made no progress");
      break;
    }
  }
  /* a frame with a huge window (up to 128 MiB) leaves a context that big: do not keep it */
  if (ZSTD_sizeof_DStream(ds) > ((size_t)8 << 20)) {
    ZSTD_freeDStream(ds);
    it->zstd = NULL;
  }
  return rc;
}

/* Points rp/rend at the batch's records: in place, or decompressed into scratch. */
static int batch_records(ck_krecs_t *it, const uint8_t *b, size_t size, int codec, int32_t count,
                         ck_error_t *err) {
  const uint8_t *r = b + CK_KBATCH_HEADER;
  size_t n = size - CK_KBATCH_HEADER;
  if (codec == CODEC_NONE) {
    it->rp = r;
    it->rend = r + n;
  } else {
    ck_buf_reset(&it->scratch);
    int rc = codec == CODEC_GZIP     ? inflate_gzip(it, r, n, err)
             : codec == CODEC_SNAPPY ? inflate_snappy(it, r, n, err)
             : codec == CODEC_LZ4    ? inflate_lz4(it, r, n, err)
                                     : inflate_zstd(it, r, n, err);
    if (rc) return rc;
    if (it->scratch.data) {
      it->scratch.data[it->scratch.len] = 0;
      it->rp = (const uint8_t *)it->scratch.data;
      it->rend = it->rp + it->scratch.len;
    } else { /* nothing was decompressed (an empty stream) */
      it->rp = it->rend = no_records;
    }
  }
  it->left = count;
  it->in_batch = true;
  return 0;
}

/* ---- transactions ----------------------------------------------------------------------- */

static bool active_has(const ck_krecs_t *it, int64_t pid) {
  for (int i = 0; i < it->nactive; i++)
    if (it->active[i] == pid) return true;
  return false;
}

static void active_add(ck_krecs_t *it, int64_t pid) {
  if (active_has(it, pid)) return;
  if (it->nactive == it->active_cap) {
    it->active_cap = it->active_cap ? it->active_cap * 2 : 8;
    it->active = ck_realloc(it->active, (size_t)it->active_cap * sizeof *it->active);
  }
  it->active[it->nactive++] = pid;
}

static void active_remove(ck_krecs_t *it, int64_t pid) {
  for (int i = 0; i < it->nactive; i++)
    if (it->active[i] == pid) {
      it->active[i] = it->active[--it->nactive];
      return;
    }
}

/* Whether the control batch just opened (records set up) begins with an ABORT marker: its
 * first record's key is version i16, type i16 (0 abort, 1 commit). 1, 0 or an error. */
static int control_is_abort(ck_krecs_t *it, ck_error_t *err) {
  if (it->left == 0) return 0;
  ck_krec_t rec = {0};
  int rc = rec_read(it, &rec, err);
  if (rc) return rc;
  if (!rec.key || rec.key_len < 4 || (int16_t)ck_get_be16((const uint8_t *)rec.key) < 0)
    return stop(it, err,
                "corrupt record batch at offset %lld: its control record has no valid key",
                (long long)it->base_offset);
  return ck_get_be16((const uint8_t *)rec.key + 2) == 0;
}

/* ---- batches ---------------------------------------------------------------------------- */

static inline void batch_done(ck_krecs_t *it) {
  it->in_batch = false;
  it->left = 0;
  if (it->batch_end > it->next_offset) it->next_offset = it->batch_end;
}

/* Opens the next batch that has records to read: 1 (rp/rend/left set), 0 at the end of the
 * complete batches (partial set when an incomplete one follows), or an error. Control batches
 * and aborted batches are stepped over here. */
static int open_batch(ck_krecs_t *it, ck_error_t *err) {
  for (;;) {
    const uint8_t *b = it->pos;
    size_t rem = (size_t)(it->end - b);
    if (rem == 0) return 0;
    if (rem < LOG_OVERHEAD) {
      it->partial = true;
      it->partial_size = 0; /* unknown: its length is not here yet */
      return 0;
    }
    int64_t base = (int64_t)ck_get_be64(b);
    int32_t blen = (int32_t)ck_get_be32(b + H_LENGTH);
    if (rem > H_MAGIC && b[H_MAGIC] != 2) {
      int magic = (int8_t)b[H_MAGIC];
      it->base_offset = base;
      if (magic == 0 || magic == 1)
        return stop(it, err,
                    "record batch at offset %lld is in message format v%d (magic %d); only v2 "
                    "(Kafka 0.11 and later) is read",
                    (long long)base, magic, magic);
      return stop(it, err, "corrupt record batch at offset %lld: unknown magic byte %d",
                  (long long)base, magic);
    }
    if (blen < CK_KBATCH_HEADER - LOG_OVERHEAD)
      return stop(it, err,
                  "corrupt record batch at offset %lld: its length %d is below the %d bytes of a "
                  "batch header",
                  (long long)base, (int)blen, CK_KBATCH_HEADER - LOG_OVERHEAD);
    size_t size = LOG_OVERHEAD + (size_t)blen;
    if (size > rem) {
      it->partial = true;
      it->partial_size = (int64_t)size;
      return 0;
    }
    it->pos = b + size;

    uint16_t attrs = ck_get_be16(b + H_ATTRS);
    int codec = attrs & ATTR_CODEC;
    int32_t count = (int32_t)ck_get_be32(b + H_COUNT);
    int64_t last = add64(base, (int32_t)ck_get_be32(b + H_LAST_DELTA));
    int64_t pid = (int64_t)ck_get_be64(b + H_PRODUCER);
    it->base_offset = base;
    it->batch_end = add64(last, 1);
    if (it->check_crc) {
      uint32_t want = ck_get_be32(b + H_CRC), got = ck_crc32c(0, b + H_ATTRS, size - H_ATTRS);
      if (got != want)
        return stop(it, err,
                    "corrupt record batch at offset %lld: CRC32C mismatch (the batch says %08x, "
                    "its bytes give %08x)",
                    (long long)base, want, got);
    }
    if (codec > CODEC_ZSTD)
      return stop(it, err,
                  "corrupt record batch at offset %lld: unknown compression codec %d",
                  (long long)base, codec);
    if (count < 0)
      return stop(it, err, "corrupt record batch at offset %lld: negative record count %d",
                  (long long)base, (int)count);

    bool control = attrs & ATTR_CONTROL;
    if (it->read_committed && pid >= 0) {
      /* producers whose aborted transaction has begun by this batch's last offset */
      while (it->next_aborted < it->naborted && it->aborted[it->next_aborted].first_offset <= last)
        active_add(it, it->aborted[it->next_aborted++].producer_id);
      if (control) {
        if (it->nactive > 0 && active_has(it, pid)) {
          int rc = batch_records(it, b, size, codec, count, err);
          if (rc == 0) rc = control_is_abort(it, err);
          if (rc < 0) return rc;
          if (rc == 1) active_remove(it, pid);
        }
      } else if ((attrs & ATTR_TRANSACTIONAL) && it->nactive > 0 && active_has(it, pid)) {
        batch_done(it); /* an aborted transaction's records */
        continue;
      }
    }
    if (control) { /* transaction markers are never records to the reader */
      batch_done(it);
      continue;
    }
    int rc = batch_records(it, b, size, codec, count, err);
    if (rc) return rc;
    it->log_append_time = attrs & ATTR_LOG_APPEND_TIME;
    it->base_ts = (int64_t)ck_get_be64(b + (it->log_append_time ? H_MAX_TS : H_BASE_TS));
    return 1;
  }
}

/* ---- the API ---------------------------------------------------------------------------- */

void ck_krecs_init(ck_krecs_t *it) {
  memset(it, 0, sizeof *it);
  ck_buf_init(&it->scratch);
  it->pos = it->end = no_records;
}

void ck_krecs_fini(ck_krecs_t *it) {
  if (it->zlib) {
    inflateEnd(it->zlib);
    ck_free(it->zlib);
  }
  if (it->lz4) LZ4F_freeDecompressionContext(it->lz4);
  if (it->zstd) ZSTD_freeDStream(it->zstd);
  ck_free(it->aborted);
  ck_free(it->active);
  ck_buf_fini(&it->scratch);
  memset(it, 0, sizeof *it);
}

static int aborted_cmp(const void *a, const void *b) {
  const ck_kaborted_t *x = a, *y = b;
  if (x->first_offset != y->first_offset) return x->first_offset < y->first_offset ? -1 : 1;
  return (x->producer_id > y->producer_id) - (x->producer_id < y->producer_id);
}

void ck_krecs_reset(ck_krecs_t *it, const void *records, size_t len, int64_t fetch_offset,
                    const ck_kaborted_t *aborted, int naborted) {
  it->pos = records ? records : no_records;
  it->end = it->pos + (records ? len : 0);
  it->fetch_offset = it->next_offset = fetch_offset;
  /* read_uncommitted ignores the aborted list */
  if (!aborted || naborted < 0 || !it->read_committed) naborted = 0;
  if (naborted > it->aborted_cap) {
    it->aborted = ck_realloc(it->aborted, (size_t)naborted * sizeof *it->aborted);
    it->aborted_cap = naborted;
  }
  if (naborted) memcpy(it->aborted, aborted, (size_t)naborted * sizeof *aborted);
  for (int i = 1; i < naborted; i++)
    if (aborted_cmp(&it->aborted[i - 1], &it->aborted[i]) > 0) {
      qsort(it->aborted, (size_t)naborted, sizeof *it->aborted, aborted_cmp);
      break;
    }
  it->naborted = naborted;
  it->next_aborted = 0;
  it->nactive = 0;
  it->rp = it->rend = no_records;
  it->left = 0;
  it->base_offset = it->batch_end = it->base_ts = 0;
  it->log_append_time = false;
  it->in_batch = false;
  ck_buf_reset(&it->scratch);
  it->partial = false;
  it->partial_size = 0;
  it->failed = false;
}

int ck_krecs_next(ck_krecs_t *it, ck_krec_t *rec, ck_error_t *err) {
  if (UNLIKELY(it->failed))
    return ck_error_set(err, CK_EDECODE,
                        "could not read the record set past its record batch at offset %lld: an "
                        "earlier error stopped it",
                        (long long)it->base_offset);
  for (;;) {
    while (LIKELY(it->left > 0)) {
      if (UNLIKELY(rec_read(it, rec, err) != 0)) return CK_EDECODE;
      /* before the position (the batch began before fetch_offset), or no offset after it */
      if (UNLIKELY(rec->offset < it->next_offset || rec->offset == INT64_MAX)) continue;
      it->next_offset = rec->offset + 1;
      if (it->left == 0) batch_done(it);
      return 1;
    }
    if (it->in_batch) batch_done(it);
    int rc = open_batch(it, err);
    if (rc <= 0) return rc;
  }
}

int64_t ck_krecs_scan_end(const void *records, size_t len, int64_t fetch_offset) {
  int64_t end = fetch_offset;
  if (!records) return end;
  const uint8_t *p = records, *e = p + len;
  for (;;) {
    size_t rem = (size_t)(e - p);
    if (rem < CK_KBATCH_HEADER || p[H_MAGIC] != 2) break;
    int32_t blen = (int32_t)ck_get_be32(p + H_LENGTH);
    if (blen < CK_KBATCH_HEADER - LOG_OVERHEAD || (size_t)blen > rem - LOG_OVERHEAD) break;
    int64_t batch_end =
        add64(add64((int64_t)ck_get_be64(p), (int32_t)ck_get_be32(p + H_LAST_DELTA)), 1);
    if (batch_end > end) end = batch_end;
    p += LOG_OVERHEAD + (size_t)blen;
  }
  return end;
}
