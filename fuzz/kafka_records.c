/*
 * DESIGN: libFuzzer target for the Kafka record batch reader
 * (src/connectors/kafka/krecords.c): arbitrary bytes as if a broker sent them as one
 * partition's record set in a Fetch response.
 *
 * Input layout: byte 0 is the setup (bit 0 read_committed, bit 1 check_crc, bits 2-4 the
 * number of aborted transactions, 0-7); then fetch_offset (i64, big-endian); then that many
 * aborted transactions (producer id i64, first offset i64, big-endian); the rest is the record
 * set. The unit test writes its record sets in this layout as seeds (CK_KRECS_CORPUS=dir).
 *
 * Properties checked, besides "no crash, no leak, no undefined behaviour" under ASan+UBSan:
 *   - ck_krecs_next returns 1, 0 or CK_EDECODE; an error names an offset and is sticky;
 *   - yielded offsets rise strictly from fetch_offset; next_offset is past the last one, never
 *     goes back, never drops below fetch_offset, and at the end is at least ck_krecs_scan_end;
 *   - a key or value is NULL with length 0, or lies inside the input or the scratch buffer
 *     (its bytes are hashed, so ASan sees every byte read);
 *   - the set cut short at a point chosen from the input yields a prefix of the same records,
 *     and errs only where the whole set errs (complete batches read the same; a cut batch is
 *     partial, not an error, unless its visible header is already wrong);
 *   - reading again with the same iterator after reset gives the same records.
 * The reader is built with a 16 MiB cap on a batch's decompressed size so bombs stay cheap.
 *
 * Build (clang with libFuzzer; see fuzz/README.md):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -I src \
 *     -D'CK_KRECS_MAX_BATCH=((size_t)16 << 20)' fuzz/kafka_records.c \
 *     src/connectors/kafka/krecords.c src/base/{alloc,buf,crc32c,error}.c \
 *     -lz -lsnappy -llz4 -lzstd -lpthread -o kafka_records_fuzz
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "connectors/kafka/krecords.h"

#define MAX_SEEN 4096

typedef struct seen {
  int64_t offset, timestamp;
  uint32_t key_hash, value_hash;
  int32_t key_len, value_len; /* -1: NULL */
} seen_t;

typedef struct result {
  int rc;     /* the last ck_krecs_next result */
  long count; /* records yielded */
  seen_t seen[MAX_SEEN];
  int64_t next_offset;
  bool partial;
} result_t;

static uint64_t be64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | p[i];
  return v;
}

/* FNV-1a over the slice, checking that it lies in the input or in scratch */
static uint32_t slice_hash(const ck_krecs_t *it, const uint8_t *in, size_t n, const char *p,
                           int32_t len) {
  if (!p) {
    if (len != 0) abort();
    return 0;
  }
  if (len < 0) abort();
  const uint8_t *b = (const uint8_t *)p;
  bool in_input = b >= in && (size_t)(b - in) <= n && (size_t)len <= n - (size_t)(b - in);
  const uint8_t *s = (const uint8_t *)it->scratch.data;
  bool in_scratch = s && b >= s && (size_t)(b - s) <= it->scratch.len &&
                    (size_t)len <= it->scratch.len - (size_t)(b - s);
  if (!in_input && !in_scratch) abort();
  uint32_t h = 2166136261u;
  for (int32_t i = 0; i < len; i++) h = (h ^ b[i]) * 16777619u;
  return h;
}

static void run(ck_krecs_t *it, const uint8_t *set, size_t n, int64_t fetch,
                const ck_kaborted_t *ab, int nab, result_t *r) {
  ck_krecs_reset(it, set, n, fetch, ab, nab);
  if (it->next_offset != fetch) abort();
  r->count = 0;
  int64_t prev_next = fetch;
  bool any = false;
  int64_t last = 0;
  ck_krec_t rec;
  ck_error_t err = {0};
  while ((r->rc = ck_krecs_next(it, &rec, &err)) == 1) {
    if (rec.offset < fetch || (any && rec.offset <= last)) abort();
    if (it->next_offset <= rec.offset || it->next_offset < prev_next) abort();
    any = true;
    last = rec.offset;
    prev_next = it->next_offset;
    seen_t s = {rec.offset, rec.timestamp, slice_hash(it, set, n, rec.key, rec.key_len),
                slice_hash(it, set, n, rec.value, rec.value_len), rec.key ? rec.key_len : -1,
                rec.value ? rec.value_len : -1};
    if (r->count < MAX_SEEN) r->seen[r->count] = s;
    r->count++;
  }
  if (it->next_offset < prev_next || it->next_offset < fetch) abort();
  r->next_offset = it->next_offset;
  r->partial = it->partial;
  if (r->rc == 0) {
    if (it->next_offset < ck_krecs_scan_end(set, n, fetch)) abort();
    if (it->partial && it->partial_size != 0 && it->partial_size < CK_KBATCH_HEADER) abort();
  } else {
    if (r->rc != CK_EDECODE || err.code != CK_EDECODE || !strstr(err.message, "offset")) abort();
    ck_error_t again = {0};
    if (ck_krecs_next(it, &rec, &again) != CK_EDECODE || !it->failed) abort();
  }
}

static bool same_prefix(const result_t *a, const result_t *b, long n) {
  if (n > MAX_SEEN) n = MAX_SEEN;
  return memcmp(a->seen, b->seen, (size_t)n * sizeof(seen_t)) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 9) return 0;
  uint8_t setup = data[0];
  int64_t fetch = (int64_t)be64(data + 1);
  int nab = (setup >> 2) & 7;
  size_t head = 9 + (size_t)nab * 16;
  if (size < head) return 0;
  ck_kaborted_t ab[7];
  for (int i = 0; i < nab; i++) {
    ab[i].producer_id = (int64_t)be64(data + 9 + 16 * i);
    ab[i].first_offset = (int64_t)be64(data + 17 + 16 * i);
  }
  const uint8_t *set = data + head;
  size_t n = size - head;

  int64_t blocks = ck_mem_stats().live_blocks;
  static result_t whole, again, cut;
  ck_krecs_t it;
  ck_krecs_init(&it);
  it.read_committed = setup & 1;
  it.check_crc = setup & 2;

  run(&it, set, n, fetch, ab, nab, &whole);
  run(&it, set, n, fetch, ab, nab, &again); /* reset clears everything */
  if (again.rc != whole.rc || again.count != whole.count ||
      again.next_offset != whole.next_offset || !same_prefix(&whole, &again, whole.count))
    abort();

  /* a cut set: copied so ASan sees a read past the cut */
  size_t at = n ? (size_t)(fetch ^ (int64_t)n) % n : 0;
  uint8_t *copy = malloc(at ? at : 1);
  if (at) memcpy(copy, set, at);
  run(&it, copy, at, fetch, ab, nab, &cut);
  if (cut.count > whole.count || !same_prefix(&whole, &cut, cut.count)) abort();
  if (cut.rc < 0 && (whole.rc != cut.rc || whole.count != cut.count)) abort();
  if (cut.next_offset > whole.next_offset && whole.rc == 0) abort();
  free(copy);

  ck_krecs_fini(&it);
  if (ck_mem_stats().live_blocks != blocks) abort();
  return 0;
}
