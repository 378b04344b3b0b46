/*
 * DESIGN: unit tests for the Kafka record batch v2 reader (connectors/kafka/krecords.c).
 *
 * A small batch encoder here builds v2 batches from record lists, compressing with each
 * library the way Kafka's producers do (gzip members, snappy in xerial framing or raw, LZ4
 * frames, zstd without a content size), plus transaction markers and transactional batches.
 * Its CRCs come from a bitwise CRC32C written here, independent of base/crc32c, and bytes
 * written by another Kafka client (Sarama's test vectors) pin the CRC range and codec
 * interop. A test reads a whole record set and compares a rendering ("offset:key=value"
 * with "~" for null) with the expected one, so a failure prints both; while reading, the
 * position invariants are checked after every record (offsets rise, next_offset never below
 * fetch_offset, and at the end equal to ck_krecs_scan_end). Every test ends with no heap
 * block of the counting allocator left live. The decompression-bomb test runs a copy of the
 * reader compiled in here with a 4 MiB cap (small_krecs_*); every other test runs the library.
 *
 * CK_KRECS_CORPUS=<dir> also writes every record set read here as a seed for the fuzz target
 * fuzz/kafka_records.c, in its input layout.
 *
 * Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <lz4frame.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include <zstd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "connectors/kafka/krecords.h"

/* The decompression cap is tested on a copy of the reader compiled in here with a 4 MiB cap
 * (reaching the library's 256 MiB takes seconds under ASan); its entry points are renamed
 * small_krecs_*, so every other test runs the library itself. */
#define CK_KRECS_MAX_BATCH ((size_t)4 << 20)
#define ck_krecs_init small_krecs_init
#define ck_krecs_fini small_krecs_fini
#define ck_krecs_reset small_krecs_reset
#define ck_krecs_next small_krecs_next
#define ck_krecs_scan_end small_krecs_scan_end
#include "connectors/kafka/krecords.c"
#undef ck_krecs_init
#undef ck_krecs_fini
#undef ck_krecs_reset
#undef ck_krecs_next
#undef ck_krecs_scan_end
void small_krecs_init(ck_krecs_t *it);
void small_krecs_fini(ck_krecs_t *it);
void small_krecs_reset(ck_krecs_t *it, const void *records, size_t len, int64_t fetch_offset,
                       const ck_kaborted_t *aborted, int naborted);
int small_krecs_next(ck_krecs_t *it, ck_krec_t *rec, ck_error_t *err);

/* ---- the encoder ------------------------------------------------------------------------ */

/* Test codecs: the wire codec, and how its payload is framed. */
enum { T_NONE, T_GZIP, T_SNAPPY, T_LZ4, T_ZSTD, T_SNAPPY_RAW, T_GZIP_MEMBERS, T_NCODECS };
static const int wire_codec[T_NCODECS] = {0, 1, 2, 3, 4, 2, 1};
static const char *const tcodec_names[T_NCODECS] = {"none", "gzip",       "snappy",
                                                    "lz4",  "zstd",       "snappy-raw",
                                                    "gzip-2-members"};

#define A_LOG_APPEND 0x08
#define A_TXN 0x10
#define A_CONTROL 0x20

typedef struct trec {
  int delta;         /* offset delta */
  const char *key;   /* NULL: a null key */
  const char *value; /* NULL: a tombstone */
  int64_t ts_delta;
  int nheaders;
  int value_len; /* > 0: a generated value this long instead of value */
  int key_len;   /* > 0: key has this many bytes (it may hold NULs) */
} trec_t;

typedef struct tbatch {
  int64_t base;
  int codec; /* T_… */
  int attrs; /* A_… */
  int64_t pid; /* 0: no producer (-1 on the wire) */
  int64_t base_ts, max_ts;
  int last_delta; /* 0: the largest record delta */
} tbatch_t;

#define R(...) \
  (const trec_t[]){__VA_ARGS__}, (int)(sizeof((const trec_t[]){__VA_ARGS__}) / sizeof(trec_t))

/* CRC-32C bit by bit: independent of the table code under test. */
static uint32_t ref_crc32c(const unsigned char *p, size_t n) {
  uint32_t crc = ~0u;
  for (size_t i = 0; i < n; i++) {
    crc ^= p[i];
    for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
  }
  return ~crc;
}

static void put_be(ck_buf_t *b, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; i--) ck_buf_putc(b, (char)(v >> (8 * i)));
}

static void patch_be(ck_buf_t *b, size_t at, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; i--) b->data[at + (size_t)(n - 1 - i)] = (char)(v >> (8 * i));
}

static void put_varint(ck_buf_t *b, int64_t v) {
  uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
  while (u >= 0x80) {
    ck_buf_putc(b, (char)(u | 0x80));
    u >>= 7;
  }
  ck_buf_putc(b, (char)u);
}

static void gen_value(char *dst, int len, int seed) {
  for (int i = 0; i < len; i++) dst[i] = (char)('a' + (i * 7 + seed) % 26);
}

static void enc_records(ck_buf_t *raw, const trec_t *recs, int n) {
  ck_buf_t r;
  ck_buf_init(&r);
  for (int i = 0; i < n; i++) {
    const trec_t *t = &recs[i];
    ck_buf_reset(&r);
    ck_buf_putc(&r, 0); /* attributes */
    put_varint(&r, t->ts_delta);
    put_varint(&r, t->delta);
    if (!t->key) {
      put_varint(&r, -1);
    } else {
      int kl = t->key_len ? t->key_len : (int)strlen(t->key);
      put_varint(&r, kl);
      ck_buf_append(&r, t->key, (size_t)kl);
    }
    if (t->value_len > 0) {
      put_varint(&r, t->value_len);
      ck_buf_reserve(&r, (size_t)t->value_len);
      gen_value(r.data + r.len, t->value_len, t->delta);
      r.len += (size_t)t->value_len;
    } else if (!t->value) {
      put_varint(&r, -1);
    } else {
      put_varint(&r, (int64_t)strlen(t->value));
      ck_buf_puts(&r, t->value);
    }
    put_varint(&r, t->nheaders);
    for (int h = 0; h < t->nheaders; h++) {
      char hk[16];
      snprintf(hk, sizeof hk, "hdr%d", h);
      put_varint(&r, (int64_t)strlen(hk));
      ck_buf_puts(&r, hk);
      if (h % 2) {
        put_varint(&r, -1); /* a null header value */
      } else {
        put_varint(&r, 5);
        ck_buf_puts(&r, "hval!");
      }
    }
    put_varint(raw, (int64_t)r.len);
    ck_buf_append(raw, r.data, r.len);
  }
  ck_buf_fini(&r);
}

static void gzip_member(const void *src, size_t n, ck_buf_t *out) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  size_t bound = deflateBound(&zs, (uLong)n) + 32;
  ck_buf_reserve(out, bound);
  zs.next_in = (Bytef *)src;
  zs.avail_in = (uInt)n;
  zs.next_out = (Bytef *)out->data + out->len;
  zs.avail_out = (uInt)bound;
  assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out->len += bound - zs.avail_out;
  deflateEnd(&zs);
}

/* xerial framing, blocks of at most block bytes (Java's SnappyOutputStream uses 32 KiB) */
static void snappy_xerial(const char *src, size_t n, size_t block, ck_buf_t *out) {
  static const char magic[8] = {(char)0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
  ck_buf_append(out, magic, 8);
  put_be(out, 1, 4); /* version */
  put_be(out, 1, 4); /* compatible version */
  for (size_t at = 0; at < n; at += block) {
    size_t len = n - at < block ? n - at : block;
    size_t clen = snappy_max_compressed_length(len);
    size_t hdr = out->len;
    put_be(out, 0, 4);
    ck_buf_reserve(out, clen);
    assert_int_equal(snappy_compress(src + at, len, out->data + out->len, &clen), SNAPPY_OK);
    out->len += clen;
    patch_be(out, hdr, clen, 4);
  }
}

static void compress_payload(int codec, const ck_buf_t *in, ck_buf_t *out) {
  switch (codec) {
    case T_NONE: ck_buf_append(out, in->data, in->len); break;
    case T_GZIP: gzip_member(in->data, in->len, out); break;
    case T_GZIP_MEMBERS:
      gzip_member(in->data, in->len / 2, out);
      gzip_member(in->data + in->len / 2, in->len - in->len / 2, out);
      break;
    case T_SNAPPY: snappy_xerial(in->data, in->len, 1024, out); break;
    case T_SNAPPY_RAW: {
      size_t clen = snappy_max_compressed_length(in->len);
      ck_buf_reserve(out, clen);
      assert_int_equal(snappy_compress(in->data, in->len, out->data + out->len, &clen), SNAPPY_OK);
      out->len += clen;
      break;
    }
    case T_LZ4: {
      LZ4F_preferences_t prefs;
      memset(&prefs, 0, sizeof prefs);
      prefs.frameInfo.blockSizeID = LZ4F_max64KB;
      prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
      size_t bound = LZ4F_compressFrameBound(in->len, &prefs);
      ck_buf_reserve(out, bound);
      size_t n = LZ4F_compressFrame(out->data + out->len, bound, in->data, in->len, &prefs);
      assert_false(LZ4F_isError(n));
      out->len += n;
      break;
    }
    case T_ZSTD: {
      /* as zstd-jni's stream writes it: no content size in the frame header */
      ZSTD_CCtx *cc = ZSTD_createCCtx();
      ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
      size_t bound = ZSTD_compressBound(in->len);
      ck_buf_reserve(out, bound);
      size_t n = ZSTD_compress2(cc, out->data + out->len, bound, in->data, in->len);
      assert_false(ZSTD_isError(n));
      out->len += n;
      ZSTD_freeCCtx(cc);
      break;
    }
    default: fail_msg("bad test codec %d", codec);
  }
}

/* Appends a batch around an already encoded payload; returns where the batch starts. */
static size_t enc_raw_batch(ck_buf_t *out, const tbatch_t *b, const void *payload, size_t n,
                            int count, int last_delta) {
  size_t start = out->len;
  put_be(out, (uint64_t)b->base, 8);
  put_be(out, 49 + n, 4);
  put_be(out, 7, 4); /* partition leader epoch */
  ck_buf_putc(out, 2);
  put_be(out, 0, 4); /* crc, below */
  put_be(out, (uint64_t)(wire_codec[b->codec] | b->attrs), 2);
  put_be(out, (uint64_t)last_delta, 4);
  put_be(out, (uint64_t)b->base_ts, 8);
  put_be(out, (uint64_t)b->max_ts, 8);
  put_be(out, (uint64_t)(b->pid ? b->pid : -1), 8);
  put_be(out, b->pid ? 3 : (uint64_t)-1, 2); /* producer epoch */
  put_be(out, b->pid ? 0 : (uint64_t)-1, 4); /* base sequence */
  put_be(out, (uint64_t)count, 4);
  ck_buf_append(out, payload, n);
  uint32_t crc = ref_crc32c((unsigned char *)out->data + start + 21, out->len - start - 21);
  patch_be(out, start + 17, crc, 4);
  return start;
}

static size_t enc_batch(ck_buf_t *out, const tbatch_t *b, const trec_t *recs, int n) {
  ck_buf_t raw, payload;
  ck_buf_init(&raw);
  ck_buf_init(&payload);
  enc_records(&raw, recs, n);
  compress_payload(b->codec, &raw, &payload);
  int last = b->last_delta;
  for (int i = 0; i < n && !b->last_delta; i++)
    if (recs[i].delta > last) last = recs[i].delta;
  size_t start = enc_raw_batch(out, b, payload.data, payload.len, n, last);
  ck_buf_fini(&raw);
  ck_buf_fini(&payload);
  return start;
}

/* n records at offsets base..base+n-1 (keys "k<offset>", values "v<offset>"), one batch */
static size_t enc_seq(ck_buf_t *out, tbatch_t b, int n) {
  trec_t *recs = calloc((size_t)n, sizeof *recs);
  char(*txt)[2][24] = calloc((size_t)n, sizeof *txt);
  for (int i = 0; i < n; i++) {
    snprintf(txt[i][0], sizeof txt[i][0], "k%lld", (long long)(b.base + i));
    snprintf(txt[i][1], sizeof txt[i][1], "v%lld", (long long)(b.base + i));
    recs[i] = (trec_t){.delta = i, .key = txt[i][0], .value = txt[i][1], .ts_delta = i};
  }
  size_t start = enc_batch(out, &b, recs, n);
  free(recs);
  free(txt);
  return start;
}

/* A transaction marker: control batch of one record, key version 0 and type (0 abort, 1
 * commit), value version 0 and coordinator epoch. */
static size_t enc_marker(ck_buf_t *out, int64_t offset, int64_t pid, bool commit) {
  static const char abort_key[4] = {0, 0, 0, 0}, commit_key[4] = {0, 0, 0, 1};
  tbatch_t b = {.base = offset, .attrs = A_TXN | A_CONTROL, .pid = pid};
  trec_t r = {.key = commit ? commit_key : abort_key, .key_len = 4, .value = "\1\1\1\1\1\1"};
  return enc_batch(out, &b, &r, 1);
}

/* ---- reading ---------------------------------------------------------------------------- */

typedef struct fx {
  ck_krecs_t it;
  ck_buf_t set; /* the record set under test */
  ck_buf_t got; /* what the last rd() read, rendered */
  ck_error_t err;
  int rc;
  int64_t blocks;
} fx_t;

static int setup(void **state) {
  fx_t *f = calloc(1, sizeof *f);
  f->blocks = ck_mem_stats().live_blocks;
  ck_krecs_init(&f->it);
  ck_buf_init(&f->set);
  ck_buf_init(&f->got);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx_t *f = *state;
  ck_krecs_fini(&f->it);
  ck_buf_fini(&f->set);
  ck_buf_fini(&f->got);
  assert_int_equal(ck_mem_stats().live_blocks, f->blocks);
  free(f);
  return 0;
}

static void corpus_add(const fx_t *f, int64_t fetch, const ck_kaborted_t *ab, int nab) {
  const char *dir = getenv("CK_KRECS_CORPUS");
  if (!dir) return;
  static int seq;
  char path[512];
  snprintf(path, sizeof path, "%s/unit-%03d", dir, seq++);
  FILE *fp = fopen(path, "wb");
  if (!fp) return;
  if (nab > 7) nab = 7;
  fputc(f->it.read_committed | f->it.check_crc << 1 | nab << 2, fp);
  for (int i = 7; i >= 0; i--) fputc((int)((uint64_t)fetch >> (8 * i)) & 0xff, fp);
  for (int k = 0; k < nab; k++) {
    for (int i = 7; i >= 0; i--) fputc((int)((uint64_t)ab[k].producer_id >> (8 * i)) & 0xff, fp);
    for (int i = 7; i >= 0; i--) fputc((int)((uint64_t)ab[k].first_offset >> (8 * i)) & 0xff, fp);
  }
  fwrite(f->set.data, 1, f->set.len, fp);
  fclose(fp);
}

static void render_bytes(ck_buf_t *out, const char *p, int32_t len) {
  if (!p) {
    ck_buf_putc(out, '~');
  } else if (len > 24) {
    ck_buf_printf(out, "#%d", (int)len);
  } else {
    ck_buf_append(out, p, (size_t)len);
  }
}

#define RD_TS 1 /* render timestamps: "offset:key=value@ts" */

/* Reads f->set from fetch to its end (or an error) into f->got and f->rc, checking the
 * position invariants after every record. */
static const char *rd_with(fx_t *f, int64_t fetch, const ck_kaborted_t *ab, int nab, int flags) {
  corpus_add(f, fetch, ab, nab);
  ck_krecs_reset(&f->it, f->set.data, f->set.len, fetch, ab, nab);
  assert_int_equal(f->it.next_offset, fetch);
  ck_buf_reset(&f->got);
  ck_error_clear(&f->err);
  int64_t prev = INT64_MIN;
  ck_krec_t rec;
  while ((f->rc = ck_krecs_next(&f->it, &rec, &f->err)) == 1) {
    if (rec.offset < fetch || rec.offset <= prev)
      fail_msg("offset %lld yielded after %lld, fetching from %lld", (long long)rec.offset,
               (long long)prev, (long long)fetch);
    if (f->it.next_offset <= rec.offset)
      fail_msg("next_offset %lld after yielding offset %lld", (long long)f->it.next_offset,
               (long long)rec.offset);
    prev = rec.offset;
    if (f->got.len) ck_buf_putc(&f->got, ' ');
    ck_buf_printf(&f->got, "%lld:", (long long)rec.offset);
    render_bytes(&f->got, rec.key, rec.key_len);
    ck_buf_putc(&f->got, '=');
    render_bytes(&f->got, rec.value, rec.value_len);
    if (flags & RD_TS) ck_buf_printf(&f->got, "@%lld", (long long)rec.timestamp);
  }
  assert_true(f->it.next_offset >= fetch);
  if (f->rc == 0)
    assert_int_equal(f->it.next_offset, ck_krecs_scan_end(f->set.data, f->set.len, fetch));
  return f->got.data ? f->got.data : "";
}

static const char *rd(fx_t *f, int64_t fetch) { return rd_with(f, fetch, NULL, 0, 0); }

/* Reads expecting CK_EDECODE with every fragment in its message. */
static void rd_err(fx_t *f, int64_t fetch, const char *frag1, const char *frag2) {
  rd(f, fetch);
  if (f->rc != CK_EDECODE)
    fail_msg("expected a decode error (%s), got rc %d after [%s]", frag1, f->rc, f->got.data);
  if (!strstr(f->err.message, frag1) || (frag2 && !strstr(f->err.message, frag2)))
    fail_msg("error is \"%s\", expected \"%s\" and \"%s\"", f->err.message, frag1,
             frag2 ? frag2 : "");
  /* sticky until reset */
  ck_error_t again = {0};
  ck_krec_t rec;
  assert_int_equal(ck_krecs_next(&f->it, &rec, &again), CK_EDECODE);
  assert_true(f->it.failed);
}

/* ---- codecs ----------------------------------------------------------------------------- */

/* Every codec: keys, values, a null key, a tombstone, empty key and value, headers stepped
 * over, long values across snappy blocks, create-time timestamps. */
static void test_krecs_codecs_round_trip(void **state) {
  fx_t *f = *state;
  for (int c = 0; c < T_NCODECS; c++) {
    ck_buf_reset(&f->set);
    enc_batch(&f->set, &(tbatch_t){.base = 100, .codec = c, .base_ts = 1700000000000, .max_ts = 9},
              R({0, "k0", "v0", 0, 0},
                {1, NULL, "no-key", 5, 2},
                {2, "gone", NULL, -3, 1},
                {3, "", "", 1000, 0},
                {4, "big", NULL, 7, 3, .value_len = 3000},
                {5, "k5", "after-big", 100000, 0}));
    /* a second batch with the next offsets, another codec's batch shape */
    enc_batch(&f->set, &(tbatch_t){.base = 106, .codec = c, .base_ts = 5},
              R({0, "x", "y", 0, 4}, {1, "x2", "y2", 1, 0, .value_len = 5000}));
    const char *want = "100:k0=v0@1700000000000 101:~=no-key@1700000000005 "
                       "102:gone=~@1699999999997 103:=@1700000001000 104:big=#3000@1700000000007 "
                       "105:k5=after-big@1700000100000 106:x=y@5 107:x2=#5000@6";
    const char *got = rd_with(f, 100, NULL, 0, RD_TS);
    if (f->rc != 0 || strcmp(got, want) != 0)
      fail_msg("codec %s: rc %d (%s)\n got [%s]\nwant [%s]", tcodec_names[c], f->rc,
               f->err.message, got, want);
    assert_int_equal(f->it.next_offset, 108);
    assert_false(f->it.partial);
  }
}

/* The generated long values come back byte for byte, and an uncompressed value points into
 * the response (no copy) while a compressed one points into scratch. */
static void test_krecs_values_exact_and_zero_copy(void **state) {
  fx_t *f = *state;
  for (int c = 0; c < T_NCODECS; c++) {
    ck_buf_reset(&f->set);
    enc_batch(&f->set, &(tbatch_t){.base = 0, .codec = c},
              R({0, "a", NULL, 0, 0, .value_len = 70000}, {1, "b", NULL, 0, 0, .value_len = 1}));
    ck_krecs_reset(&f->it, f->set.data, f->set.len, 0, NULL, 0);
    char *want = malloc(70000);
    ck_krec_t rec;
    for (int i = 0; i < 2; i++) {
      int len = i ? 1 : 70000;
      assert_int_equal(ck_krecs_next(&f->it, &rec, &f->err), 1);
      assert_int_equal(rec.value_len, len);
      gen_value(want, len, i);
      if (memcmp(rec.value, want, (size_t)len) != 0)
        fail_msg("codec %s: value of record %d differs", tcodec_names[c], i);
      bool in_set = rec.value >= f->set.data && rec.value < f->set.data + f->set.len;
      bool in_scratch = rec.value >= f->it.scratch.data &&
                        rec.value < f->it.scratch.data + f->it.scratch.len;
      if (c == T_NONE ? !in_set : !in_scratch)
        fail_msg("codec %s: the value points %s", tcodec_names[c],
                 in_set ? "into the response" : in_scratch ? "into scratch" : "elsewhere");
    }
    assert_int_equal(ck_krecs_next(&f->it, &rec, &f->err), 0);
    free(want);
  }
}

/* Log-append time: every record takes the batch's maxTimestamp, whatever its delta says. */
static void test_krecs_log_append_time(void **state) {
  fx_t *f = *state;
  for (int c = 0; c < T_NCODECS; c++) {
    ck_buf_reset(&f->set);
    enc_batch(&f->set,
              &(tbatch_t){.base = 0, .codec = c, .attrs = A_LOG_APPEND, .base_ts = 1000,
                          .max_ts = 777777},
              R({0, "a", "1", 0, 0}, {1, "b", "2", 55, 0}, {2, "c", "3", -4, 0}));
    enc_batch(&f->set, &(tbatch_t){.base = 3, .codec = c, .base_ts = 1000, .max_ts = 777777},
              R({0, "d", "4", 55, 0}));
    const char *got = rd_with(f, 0, NULL, 0, RD_TS);
    if (strcmp(got, "0:a=1@777777 1:b=2@777777 2:c=3@777777 3:d=4@1055") != 0)
      fail_msg("codec %s: got [%s]", tcodec_names[c], got);
  }
}

/* Bytes another Kafka client wrote (the Sarama Go client's record batch test vectors): one
 * record, key 01 02 03 04, value 05 06 07, one header, firstTimestamp 1479847795000 and
 * delta 5 ms; uncompressed, gzip, raw snappy and lz4. The CRC is checked, so the CRC range and
 * polynomial match what real clients write. */
static void test_krecs_interop_vectors(void **state) {
  fx_t *f = *state;
  static const uint8_t head[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  static const uint8_t tail[] = {
      0, 0, 0, 0,                    /* last offset delta */
      0, 0, 1, 88, 141, 205, 89, 56, /* first timestamp */
      0, 0, 0, 0, 0, 0, 0, 0,        /* max timestamp */
      0, 0, 0, 0, 0, 0, 0, 0,        /* producer id */
      0, 0,                          /* producer epoch */
      0, 0, 0, 0,                    /* first sequence */
      0, 0, 0, 1,                    /* record count */
  };
  static const struct {
    const char *name;
    uint8_t len, crc[4], codec;
    uint8_t payload[48];
    size_t n;
  } v[] = {
      {"uncompressed", 70, {84, 121, 97, 253}, 0,
       {40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7, 2, 6, 8, 9, 10, 4, 11, 12}, 21},
      {"gzip", 95, {231, 74, 206, 165}, 1,
       {31, 139, 8, 0, 0, 9, 110, 136, 0, 255, 0, 21, 0, 234, 255, 40,
        0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7, 2, 6, 8, 9,
        10, 4, 11, 12, 3, 0, 173, 201, 88, 103, 21, 0, 0, 0},
       46},
      {"snappy", 72, {21, 0, 159, 97}, 2,
       {21, 80, 40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7, 2, 6, 8, 9, 10, 4, 11, 12}, 23},
      {"lz4", 89, {169, 74, 119, 197}, 3,
       {4, 34, 77, 24, 100, 112, 185, 21, 0, 0, 128, 40, 0, 10, 0, 8, 1, 2, 3, 4, 6, 5, 6, 7, 2,
        6, 8, 9, 10, 4, 11, 12, 0, 0, 0, 0, 12, 59, 239, 146},
       40},
  };
  f->it.check_crc = true;
  for (size_t i = 0; i < CK_ARRAY_LEN(v); i++) {
    ck_buf_reset(&f->set);
    ck_buf_append(&f->set, head, 11);
    ck_buf_putc(&f->set, (char)v[i].len);
    ck_buf_append(&f->set, head + 12, 5);
    ck_buf_append(&f->set, v[i].crc, 4);
    ck_buf_putc(&f->set, 0);
    ck_buf_putc(&f->set, (char)v[i].codec);
    ck_buf_append(&f->set, tail, sizeof tail);
    ck_buf_append(&f->set, v[i].payload, v[i].n);
    assert_int_equal(f->set.len, 12 + (size_t)v[i].len);
    const char *got = rd_with(f, 0, NULL, 0, RD_TS);
    if (f->rc != 0 || strcmp(got, "0:\1\2\3\4=\5\6\7@1479847795005") != 0)
      fail_msg("%s vector: rc %d (%s), got [%s]", v[i].name, f->rc, f->err.message, got);
    assert_int_equal(f->it.next_offset, 1);
  }
}

/* ---- position --------------------------------------------------------------------------- */

/* A batch may begin before the offset asked for: its earlier records are not yielded, and
 * next_offset never drops below fetch_offset. */
static void test_krecs_fetch_offset_mid_batch(void **state) {
  fx_t *f = *state;
  for (int c = 0; c < T_NCODECS; c++) {
    ck_buf_reset(&f->set);
    enc_seq(&f->set, (tbatch_t){.base = 100, .codec = c}, 10);
    enc_seq(&f->set, (tbatch_t){.base = 110, .codec = c}, 2);
    assert_string_equal(rd(f, 107), "107:k107=v107 108:k108=v108 109:k109=v109 110:k110=v110 "
                                    "111:k111=v111");
    assert_int_equal(f->it.next_offset, 112);
    /* past every record: nothing, and the position is where it was asked to be, then the end */
    assert_string_equal(rd(f, 111), "111:k111=v111");
    assert_string_equal(rd(f, 500), "");
    assert_int_equal(f->it.next_offset, 500);
  }
  /* a batch entirely before fetch_offset is stepped over without moving next_offset back */
  ck_buf_reset(&f->set);
  enc_seq(&f->set, (tbatch_t){.base = 0}, 3);
  enc_seq(&f->set, (tbatch_t){.base = 3}, 3);
  ck_krecs_reset(&f->it, f->set.data, f->set.len, 4, NULL, 0);
  ck_krec_t rec;
  assert_int_equal(ck_krecs_next(&f->it, &rec, &f->err), 1);
  assert_int_equal(rec.offset, 4);
  assert_int_equal(f->it.next_offset, 5);
}

/* Compaction leaves gaps inside and between batches, and empty batches: next_offset steps to
 * each batch's end (baseOffset + lastOffsetDelta + 1) once the batch is finished. */
static void test_krecs_compaction_gaps(void **state) {
  fx_t *f = *state;
  ck_buf_reset(&f->set);
  enc_batch(&f->set, &(tbatch_t){.base = 0, .last_delta = 4}, R({0, "a", "0"}, {2, "b", "2"}));
  enc_batch(&f->set, &(tbatch_t){.base = 10, .last_delta = 3}, R({0, "c", "10"}, {1, "d", "11"}));
  enc_batch(&f->set, &(tbatch_t){.base = 14, .last_delta = 9}, NULL, 0); /* emptied */
  enc_batch(&f->set, &(tbatch_t){.base = 30}, R({0, "e", "30"}));
  ck_krecs_reset(&f->it, f->set.data, f->set.len, 0, NULL, 0);
  ck_krec_t rec;
  int64_t want[][2] = {{0, 1}, {2, 5}, {10, 11}, {11, 14}, {30, 31}}; /* offset, next_offset */
  for (size_t i = 0; i < CK_ARRAY_LEN(want); i++) {
    assert_int_equal(ck_krecs_next(&f->it, &rec, &f->err), 1);
    assert_int_equal(rec.offset, want[i][0]);
    assert_int_equal(f->it.next_offset, want[i][1]);
  }
  assert_int_equal(ck_krecs_next(&f->it, &rec, &f->err), 0);
  assert_int_equal(f->it.next_offset, 31);
  assert_int_equal(ck_krecs_scan_end(f->set.data, f->set.len, 0), 31);
  /* a set of only an emptied batch still moves the position */
  ck_buf_reset(&f->set);
  enc_batch(&f->set, &(tbatch_t){.base = 14, .last_delta = 9}, NULL, 0);
  assert_string_equal(rd(f, 14), "");
  assert_int_equal(f->it.next_offset, 24);
}

/* Control batches (transaction markers) are never yielded, under either isolation level, and
 * next_offset moves past them, also when a set ends with one. */
static void test_krecs_control_batch_skipped(void **state) {
  fx_t *f = *state;
  for (int committed = 0; committed < 2; committed++) {
    f->it.read_committed = committed;
    ck_buf_reset(&f->set);
    enc_seq(&f->set, (tbatch_t){.base = 0, .attrs = A_TXN, .pid = 42}, 3);
    enc_marker(&f->set, 3, 42, true);
    enc_seq(&f->set, (tbatch_t){.base = 4}, 2);
    assert_string_equal(rd(f, 0), "0:k0=v0 1:k1=v1 2:k2=v2 4:k4=v4 5:k5=v5");
    assert_int_equal(f->it.next_offset, 6);
    ck_buf_reset(&f->set);
    enc_seq(&f->set, (tbatch_t){.base = 0, .attrs = A_TXN, .pid = 42}, 3);
    enc_marker(&f->set, 3, 42, false);
    assert_string_equal(rd(f, 0), "0:k0=v0 1:k1=v1 2:k2=v2");
    assert_int_equal(f->it.next_offset, 4);
  }
}

/* ---- transactions ----------------------------------------------------------------------- */

enum { P1 = 1001, P2 = 2002 };

/* P1 aborts two transactions, P2 commits, interleaved with each other and with plain batches;
 * P1's third transaction (after its second ABORT marker) is not aborted. The aborted list is
 * given out of order. */
static void build_two_producers(fx_t *f, int codec) {
  ck_buf_reset(&f->set);
  enc_seq(&f->set, (tbatch_t){.base = 0, .codec = codec, .attrs = A_TXN, .pid = P1}, 2);
  enc_seq(&f->set, (tbatch_t){.base = 2, .codec = codec, .attrs = A_TXN, .pid = P2}, 2);
  enc_seq(&f->set, (tbatch_t){.base = 4, .codec = codec, .attrs = A_TXN, .pid = P1}, 1);
  enc_seq(&f->set, (tbatch_t){.base = 5, .codec = codec, .attrs = A_TXN, .pid = P2}, 1);
  enc_marker(&f->set, 6, P1, false);
  enc_marker(&f->set, 7, P2, true);
  enc_seq(&f->set, (tbatch_t){.base = 8, .codec = codec}, 2);
  enc_seq(&f->set, (tbatch_t){.base = 10, .codec = codec, .attrs = A_TXN, .pid = P1}, 1);
  enc_seq(&f->set, (tbatch_t){.base = 11, .codec = codec, .attrs = A_TXN, .pid = P2}, 1);
  enc_marker(&f->set, 12, P1, false);
  enc_seq(&f->set, (tbatch_t){.base = 13, .codec = codec, .attrs = A_TXN, .pid = P1}, 1);
}

static const ck_kaborted_t two_producers_aborted[] = {{P1, 10}, {P1, 0}};

static void test_krecs_read_committed_filters_aborted(void **state) {
  fx_t *f = *state;
  f->it.read_committed = true;
  for (int c = 0; c < T_NCODECS; c++) {
    build_two_producers(f, c);
    const char *got = rd_with(f, 0, two_producers_aborted, 2, 0);
    if (f->rc != 0 ||
        strcmp(got, "2:k2=v2 3:k3=v3 5:k5=v5 8:k8=v8 9:k9=v9 11:k11=v11 13:k13=v13") != 0)
      fail_msg("codec %s: rc %d, got [%s]", tcodec_names[c], f->rc, got);
    assert_int_equal(f->it.next_offset, 14);
  }
  /* fetching from the middle: the aborted transaction that began before still applies */
  build_two_producers(f, T_NONE);
  assert_string_equal(rd_with(f, 4, two_producers_aborted, 2, 0),
                      "5:k5=v5 8:k8=v8 9:k9=v9 11:k11=v11 13:k13=v13");
  /* an aborted set reaching a batch only by its last offset: the batch 0..1 of P1 is aborted
   * by a transaction whose first offset is 1 */
  ck_buf_reset(&f->set);
  enc_seq(&f->set, (tbatch_t){.base = 0, .attrs = A_TXN, .pid = P1}, 2);
  enc_seq(&f->set, (tbatch_t){.base = 2, .attrs = A_TXN, .pid = P2}, 1);
  assert_string_equal(rd_with(f, 0, (ck_kaborted_t[]){{P1, 1}}, 1, 0), "2:k2=v2");
  assert_int_equal(f->it.next_offset, 3);
  /* a set that ends in aborted records still moves the position past them */
  assert_string_equal(rd_with(f, 0, (ck_kaborted_t[]){{P1, 0}, {P2, 2}}, 2, 0), "");
  assert_int_equal(f->it.next_offset, 3);
  /* non-transactional batches of an aborted producer id are not filtered (as Kafka does) */
  ck_buf_reset(&f->set);
  enc_seq(&f->set, (tbatch_t){.base = 0, .pid = P1}, 2);
  assert_string_equal(rd_with(f, 0, (ck_kaborted_t[]){{P1, 0}}, 1, 0), "0:k0=v0 1:k1=v1");
}

/* read_uncommitted yields every data record and ignores the aborted list. */
static void test_krecs_read_uncommitted_yields_all(void **state) {
  fx_t *f = *state;
  f->it.read_committed = false;
  for (int c = 0; c < T_NCODECS; c++) {
    build_two_producers(f, c);
    const char *got = rd_with(f, 0, two_producers_aborted, 2, 0);
    if (strcmp(got, "0:k0=v0 1:k1=v1 2:k2=v2 3:k3=v3 4:k4=v4 5:k5=v5 8:k8=v8 9:k9=v9 "
                    "10:k10=v10 11:k11=v11 13:k13=v13") != 0)
      fail_msg("codec %s: got [%s]", tcodec_names[c], got);
    assert_int_equal(f->it.next_offset, 14);
  }
}

/* ---- partial batches -------------------------------------------------------------------- */

/* A set cut inside its last batch: the complete batches are read, partial says so, the
 * position is at the cut batch's start, and partial_size is its whole size when known. */
static void test_krecs_partial_trailing_batch(void **state) {
  fx_t *f = *state;
  ck_buf_t full;
  ck_buf_init(&full);
  enc_seq(&full, (tbatch_t){.base = 0}, 3);
  enc_seq(&full, (tbatch_t){.base = 3, .codec = T_LZ4}, 3);
  size_t third = enc_seq(&full, (tbatch_t){.base = 6, .codec = T_GZIP}, 3);
  size_t third_size = full.len - third;
  size_t cuts[] = {1, 11, 12, 16, 17, 60, 61, third_size - 1};
  for (size_t i = 0; i < CK_ARRAY_LEN(cuts); i++) {
    ck_buf_reset(&f->set);
    ck_buf_append(&f->set, full.data, third + cuts[i]);
    const char *got = rd(f, 0);
    if (f->rc != 0 || strcmp(got, "0:k0=v0 1:k1=v1 2:k2=v2 3:k3=v3 4:k4=v4 5:k5=v5") != 0)
      fail_msg("cut at %zu: rc %d (%s), got [%s]", cuts[i], f->rc, f->err.message, got);
    assert_true(f->it.partial);
    assert_int_equal(f->it.partial_size, cuts[i] < 12 ? 0 : (int64_t)third_size);
    assert_int_equal(f->it.next_offset, 6);
    /* asking again gives the same answer */
    ck_krec_t rec;
    assert_int_equal(ck_krecs_next(&f->it, &rec, &f->err), 0);
    assert_true(f->it.partial);
    /* a set that is only the partial batch */
    ck_buf_reset(&f->set);
    ck_buf_append(&f->set, full.data + third, cuts[i]);
    assert_string_equal(rd(f, 6), "");
    assert_int_equal(f->rc, 0);
    assert_true(f->it.partial);
    assert_int_equal(f->it.next_offset, 6);
    assert_int_equal(ck_krecs_scan_end(f->set.data, f->set.len, 6), 6);
  }
  /* the whole set: nothing partial */
  ck_buf_reset(&f->set);
  ck_buf_append(&f->set, full.data, full.len);
  rd(f, 0);
  assert_false(f->it.partial);
  assert_int_equal(f->it.partial_size, 0);
  assert_int_equal(f->it.next_offset, 9);
  ck_buf_fini(&full);
}

/* scan_end reads headers only: it answers before the set is consumed, and agrees with the
 * position the set leaves (gaps, markers, aborted batches, a partial tail). */
static void test_krecs_scan_end_matches_next_offset(void **state) {
  fx_t *f = *state;
  f->it.read_committed = true;
  build_two_producers(f, T_ZSTD);
  enc_batch(&f->set, &(tbatch_t){.base = 20, .last_delta = 5}, R({1, "z", "21"}));
  size_t cut = f->set.len;
  enc_seq(&f->set, (tbatch_t){.base = 26}, 4);
  f->set.len = cut + 30; /* partial tail */
  assert_int_equal(ck_krecs_scan_end(f->set.data, f->set.len, 0), 26);
  assert_int_equal(ck_krecs_scan_end(f->set.data, f->set.len, 40), 40);
  assert_int_equal(ck_krecs_scan_end(NULL, 0, 17), 17);
  rd_with(f, 0, two_producers_aborted, 2, 0); /* checks next_offset == scan_end */
  assert_int_equal(f->rc, 0);
  assert_int_equal(f->it.next_offset, 26);
}

/* ---- errors ----------------------------------------------------------------------------- */

/* A message set in format v0/v1 (magic 0 or 1), and an unknown magic. */
static void test_krecs_error_old_magic(void **state) {
  fx_t *f = *state;
  for (int magic = 0; magic < 2; magic++) {
    ck_buf_reset(&f->set);
    put_be(&f->set, 1234, 8); /* offset */
    put_be(&f->set, 26, 4);   /* message size */
    put_be(&f->set, 0xdeadbeef, 4);
    ck_buf_putc(&f->set, (char)magic);
    ck_buf_putc(&f->set, 0);                      /* attributes */
    if (magic) put_be(&f->set, 1700000000000, 8); /* timestamp */
    put_be(&f->set, (uint64_t)-1, 4);             /* null key */
    put_be(&f->set, 4, 4);
    ck_buf_puts(&f->set, "abcd");
    char want[64];
    snprintf(want, sizeof want, "in message format v%d (magic %d)", magic, magic);
    rd_err(f, 1234, "record batch at offset 1234", want);
    assert_non_null(strstr(f->err.message, "only v2 (Kafka 0.11 and later) is read"));
  }
  ck_buf_reset(&f->set);
  enc_seq(&f->set, (tbatch_t){.base = 1234}, 2);
  f->set.data[16] = 3;
  rd_err(f, 1234, "corrupt record batch at offset 1234", "unknown magic byte 3");
  /* after good batches: the error names the bad batch's offset */
  ck_buf_reset(&f->set);
  enc_seq(&f->set, (tbatch_t){.base = 0}, 2);
  size_t at = enc_seq(&f->set, (tbatch_t){.base = 2}, 2);
  f->set.data[at + 16] = 1;
  rd_err(f, 0, "record batch at offset 2 is in message format v1", NULL);
  assert_string_equal(f->got.data, "0:k0=v0 1:k1=v1");
}

/* Records that run past their batch, fields that run past their record, a bad key length. */
static void test_krecs_error_truncated_record(void **state) {
  fx_t *f = *state;
  /* the count says 3, the bytes hold 2 */
  ck_buf_reset(&f->set);
  size_t at = enc_seq(&f->set, (tbatch_t){.base = 500}, 2);
  patch_be(&f->set, at + 57, 3, 4);
  rd_err(f, 500, "corrupt record batch at offset 500", "a record runs past the end of its batch");
  assert_non_null(strstr(f->err.message, "1 of its records unread"));
  assert_string_equal(f->got.data, "500:k500=v500 501:k501=v501");
  /* the same inside a compressed batch */
  for (int c = 1; c < T_NCODECS; c++) {
    ck_buf_reset(&f->set);
    at = enc_seq(&f->set, (tbatch_t){.base = 600, .codec = c}, 2);
    patch_be(&f->set, at + 57, 5, 4);
    rd_err(f, 600, "corrupt record batch at offset 600", "runs past the end of its batch");
  }
  /* the last record's length reaches past the batch's end */
  ck_buf_reset(&f->set);
  at = enc_batch(&f->set, &(tbatch_t){.base = 700}, R({0, "k", "v"}));
  /* record: length varint 2*8=16 at at+61; claim 9 bytes (18) where 8 follow */
  assert_int_equal((uint8_t)f->set.data[at + 61], 16);
  f->set.data[at + 61] = 18;
  rd_err(f, 700, "corrupt record batch at offset 700", "runs past the end of its batch");
  /* the key length reaches past the record (inside the batch) */
  ck_buf_reset(&f->set);
  at = enc_batch(&f->set, &(tbatch_t){.base = 800}, R({0, "k", "v"}, {1, "k", "v"}));
  /* record bytes: len, attrs, ts, delta, keylen(2 = 1 byte) */
  assert_int_equal((uint8_t)f->set.data[at + 65], 2);
  f->set.data[at + 65] = 20;
  rd_err(f, 800, "corrupt record batch at offset 800", "fields run past the record's length");
  /* a key length below -1 */
  f->set.data[at + 65] = 5; /* zigzag -3 */
  rd_err(f, 800, "offset 800", "fields run past");
  /* a varint that never ends */
  ck_buf_reset(&f->set);
  at = enc_batch(&f->set, &(tbatch_t){.base = 900}, R({0, "kkkkkkkkkkkk", "v"}));
  memset(f->set.data + at + 63, 0xff, 12); /* ts delta onwards */
  rd_err(f, 900, "offset 900", "fields run past");
}

static void test_krecs_error_bad_header_fields(void **state) {
  fx_t *f = *state;
  /* codec 7 */
  ck_buf_reset(&f->set);
  size_t at = enc_seq(&f->set, (tbatch_t){.base = 42}, 2);
  f->set.data[at + 22] |= 7;
  rd_err(f, 42, "corrupt record batch at offset 42", "unknown compression codec 7");
  /* codec 5 and 6 too */
  f->set.data[at + 22] = (char)((f->set.data[at + 22] & ~7) | 5);
  rd_err(f, 42, "offset 42", "unknown compression codec 5");
  /* negative record count */
  ck_buf_reset(&f->set);
  at = enc_seq(&f->set, (tbatch_t){.base = 43}, 2);
  patch_be(&f->set, at + 57, (uint64_t)-2, 4);
  rd_err(f, 43, "corrupt record batch at offset 43", "negative record count -2");
  /* batch length below the header */
  ck_buf_reset(&f->set);
  at = enc_seq(&f->set, (tbatch_t){.base = 44}, 2);
  patch_be(&f->set, at + 8, 48, 4);
  rd_err(f, 44, "corrupt record batch at offset 44", "length 48 is below the 49 bytes");
  patch_be(&f->set, at + 8, (uint64_t)-1, 4);
  rd_err(f, 44, "offset 44", "length -1 is below");
}

/* A payload that is not valid for its codec: garbage, and the valid stream cut short; the
 * same iterator then reads a good batch of that codec. */
static void test_krecs_error_corrupt_payloads(void **state) {
  fx_t *f = *state;
  static const char *const names[T_NCODECS] = {"", "gzip", "snappy", "lz4", "zstd", "snappy",
                                               "gzip"};
  for (int c = 1; c < T_NCODECS; c++) {
    /* garbage: the compressed bytes replaced by a pattern */
    ck_buf_reset(&f->set);
    size_t at = enc_seq(&f->set, (tbatch_t){.base = 3000 + c, .codec = c}, 20);
    memset(f->set.data + at + 61, 0xA5, f->set.len - at - 61);
    char want[96];
    snprintf(want, sizeof want, "could not decompress the %s record batch at offset %d", names[c],
             3000 + c);
    rd_err(f, 3000 + c, want, NULL);
    /* truncated: the batch holds only the first part of the stream (but a complete batch) */
    ck_buf_t payload;
    ck_buf_init(&payload);
    ck_buf_reset(&f->set);
    at = enc_seq(&f->set, (tbatch_t){.base = 3000 + c, .codec = c}, 20);
    size_t plen = f->set.len - at - 61;
    ck_buf_append(&payload, f->set.data + at + 61, plen * 2 / 3);
    ck_buf_reset(&f->set);
    enc_raw_batch(&f->set, &(tbatch_t){.base = 3000 + c, .codec = c}, payload.data, payload.len,
                  20, 19);
    rd_err(f, 3000 + c, want, NULL);
    ck_buf_fini(&payload);
    /* the iterator's decompression context, left mid-stream by the error, is reset for the
     * next set */
    ck_buf_reset(&f->set);
    enc_seq(&f->set, (tbatch_t){.base = 0, .codec = c}, 2);
    enc_seq(&f->set, (tbatch_t){.base = 2, .codec = c}, 1);
    assert_string_equal(rd(f, 0), "0:k0=v0 1:k1=v1 2:k2=v2");
  }
  /* raw snappy whose length header claims far more than its bytes could hold */
  ck_buf_reset(&f->set);
  enc_raw_batch(&f->set, &(tbatch_t){.base = 77, .codec = T_SNAPPY_RAW}, "\xff\xff\xff\x7f\x00", 5,
                1, 0);
  rd_err(f, 77, "could not decompress the snappy record batch at offset 77", "impossible length");
}

/* With check_crc a flipped byte is an error naming the batch; without it, the bytes are read. */
static void test_krecs_error_crc_mismatch(void **state) {
  fx_t *f = *state;
  ck_buf_reset(&f->set);
  enc_seq(&f->set, (tbatch_t){.base = 0}, 2);
  size_t at = enc_seq(&f->set, (tbatch_t){.base = 2}, 2);
  f->it.check_crc = true;
  assert_string_equal(rd(f, 0), "0:k0=v0 1:k1=v1 2:k2=v2 3:k3=v3");
  f->set.data[f->set.len - 3] = 'X'; /* the last value "v3" (then 0 headers) -> "X3" */
  f->it.check_crc = false;
  assert_string_equal(rd(f, 0), "0:k0=v0 1:k1=v1 2:k2=v2 3:k3=X3");
  f->it.check_crc = true;
  rd_err(f, 0, "corrupt record batch at offset 2", "CRC32C mismatch");
  assert_string_equal(f->got.data, "0:k0=v0 1:k1=v1");
  /* the CRC covers the attributes too */
  f->set.data[f->set.len - 3] = 'v';
  f->set.data[at + 22] ^= A_LOG_APPEND;
  rd_err(f, 0, "offset 2", "CRC32C mismatch");
}

/* A batch that decompresses past the cap stops with an error instead of taking the memory,
 * for every codec: gzip members back to back, snappy blocks, lz4 and zstd streams, each of
 * 1 MiB of zeros, 5 of them against the test copy's 4 MiB cap; 4 of them pass. */
static void test_krecs_error_decompression_bomb(void **state) {
  enum { MIB = 1 << 20 };
  char *zeros = calloc(1, MIB);
  ck_buf_t payload, set;
  ck_buf_init(&payload);
  ck_buf_init(&set);
  ck_krecs_t it;
  small_krecs_init(&it);
  for (int c = T_GZIP; c <= T_ZSTD; c++)
    for (int parts = 4; parts <= 5; parts++) {
      ck_buf_reset(&payload);
      if (c == T_GZIP) {
        for (int i = 0; i < parts; i++) gzip_member(zeros, MIB, &payload);
      } else if (c == T_SNAPPY) {
        ck_buf_t all;
        ck_buf_init(&all);
        for (int i = 0; i < parts; i++) ck_buf_append(&all, zeros, MIB);
        snappy_xerial(all.data, all.len, MIB, &payload);
        ck_buf_fini(&all);
      } else if (c == T_ZSTD) {
        ZSTD_CCtx *cc = ZSTD_createCCtx();
        ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
        for (int i = 0; i <= parts; i++) {
          ZSTD_inBuffer in = {zeros, i < parts ? MIB : 0, 0};
          size_t left;
          do {
            ck_buf_reserve(&payload, 1 << 16);
            ZSTD_outBuffer out = {payload.data + payload.len, payload.cap - payload.len - 1, 0};
            left = ZSTD_compressStream2(cc, &out, &in, i < parts ? ZSTD_e_continue : ZSTD_e_end);
            assert_false(ZSTD_isError(left));
            payload.len += out.pos;
          } while (in.pos < in.size || (i == parts && left));
        }
        ZSTD_freeCCtx(cc);
      } else {
        LZ4F_cctx *cc;
        assert_false(LZ4F_isError(LZ4F_createCompressionContext(&cc, LZ4F_VERSION)));
        size_t bound = LZ4F_compressBound(MIB, NULL);
        ck_buf_reserve(&payload, bound);
        payload.len += LZ4F_compressBegin(cc, payload.data, bound, NULL);
        for (int i = 0; i < parts; i++) {
          ck_buf_reserve(&payload, bound);
          size_t n = LZ4F_compressUpdate(cc, payload.data + payload.len, bound, zeros, MIB, NULL);
          assert_false(LZ4F_isError(n));
          payload.len += n;
        }
        ck_buf_reserve(&payload, bound);
        payload.len += LZ4F_compressEnd(cc, payload.data + payload.len, bound, NULL);
        LZ4F_freeCompressionContext(cc);
      }
      ck_buf_reset(&set);
      enc_raw_batch(&set, &(tbatch_t){.base = 9000, .codec = c}, payload.data, payload.len, 0, 0);
      small_krecs_reset(&it, set.data, set.len, 9000, NULL, 0);
      ck_error_t err = {0};
      ck_krec_t rec;
      int rc = small_krecs_next(&it, &rec, &err);
      if (parts == 4) { /* at the cap: fine (an empty batch of 4 MiB of padding) */
        if (rc != 0) fail_msg("%s, 4 MiB: rc %d (%s)", tcodec_names[c], rc, err.message);
        assert_int_equal(it.scratch.len, 4 * MIB);
        continue;
      }
      if (rc != CK_EDECODE ||
          !strstr(err.message, "could not decompress the") ||
          !strstr(err.message, "record batch at offset 9000: it decompresses to more than 4 MiB"))
        fail_msg("%s, 5 MiB: rc %d (%s)", tcodec_names[c], rc, err.message);
      /* the memory it took is given back */
      assert_true(it.scratch.cap < MIB);
      assert_int_equal(small_krecs_next(&it, &rec, &err), CK_EDECODE);
    }
  small_krecs_fini(&it);
  ck_buf_fini(&set);
  ck_buf_fini(&payload);
  free(zeros);
}

/* An iterator is reusable: reset clears a failure, the aborted set, partial, and the scratch
 * contents, while keeping its configuration. */
static void test_krecs_reset_reuses_iterator(void **state) {
  fx_t *f = *state;
  f->it.read_committed = true;
  f->it.check_crc = true;
  ck_buf_reset(&f->set);
  size_t at = enc_seq(&f->set, (tbatch_t){.base = 0, .codec = T_ZSTD}, 3);
  f->set.data[at + 70] ^= 1;
  rd_err(f, 0, "offset 0", "CRC32C mismatch");
  /* a set where P1 is aborted and never sees its marker: the next set starts clean */
  build_two_producers(f, T_SNAPPY);
  f->set.len -= 5; /* cut the last batch: partial */
  assert_string_equal(rd_with(f, 0, (ck_kaborted_t[]){{P2, 0}}, 1, 0),
                      "0:k0=v0 1:k1=v1 4:k4=v4 8:k8=v8 9:k9=v9 10:k10=v10");
  assert_true(f->it.partial);
  ck_buf_reset(&f->set);
  enc_seq(&f->set, (tbatch_t){.base = 20, .codec = T_GZIP, .attrs = A_TXN, .pid = P2}, 2);
  assert_string_equal(rd(f, 20), "20:k20=v20 21:k21=v21");
  assert_false(f->it.partial);
  assert_false(f->it.failed);
  assert_true(f->it.read_committed);
  assert_true(f->it.check_crc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_krecs_codecs_round_trip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_krecs_values_exact_and_zero_copy, setup, teardown),
      cmocka_unit_test_setup_teardown(test_krecs_log_append_time, setup, teardown),
      cmocka_unit_test_setup_teardown(test_krecs_interop_vectors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_krecs_fetch_offset_mid_batch, setup, teardown),
      cmocka_unit_test_setup_teardown(test_krecs_compaction_gaps, setup, teardown),
      cmocka_unit_test_setup_teardown(test_krecs_control_batch_skipped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_krecs_read_committed_filters_aborted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_krecs_read_uncommitted_yields_all, setup, teardown),
      cmocka_unit_test_setup_teardown(test_krecs_partial_trailing_batch, setup, teardown),
      cmocka_unit_test_setup_teardown(test_krecs_scan_end_matches_next_offset, setup, teardown),
      cmocka_unit_test_setup_teardown(test_krecs_error_old_magic, setup, teardown),
      cmocka_unit_test_setup_teardown(test_krecs_error_truncated_record, setup, teardown),
      cmocka_unit_test_setup_teardown(test_krecs_error_bad_header_fields, setup, teardown),
      cmocka_unit_test_setup_teardown(test_krecs_error_corrupt_payloads, setup, teardown),
      cmocka_unit_test_setup_teardown(test_krecs_error_crc_mismatch, setup, teardown),
      cmocka_unit_test(test_krecs_error_decompression_bomb),
      cmocka_unit_test_setup_teardown(test_krecs_reset_reuses_iterator, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
