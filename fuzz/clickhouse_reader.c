/*
 * DESIGN: libFuzzer target for the ClickHouse native-protocol reader
 * (src/connectors/clickhouse/ch_reader.c) — arbitrary bytes as if a server sent them.
 *
 * The first input byte picks the reader's setup: bit 0 compressed Data blocks, bits 1-3 the
 * negotiated revision (18.16's 54412 up to the newest this client speaks, or a pre-Hello
 * reader), bits 4-7 how the rest is cut into pieces (all at once, byte by byte, or a
 * pseudo-random rhythm seeded from the input). The rest is fed in those pieces; after each,
 * every complete packet is taken. The properties checked, besides "no crash, no leak, no
 * undefined behaviour" under ASan+UBSan: the same input cut differently gives the same packet
 * types (resumability), an error is sticky, and a Data block's columns always hold as many
 * rows as the block says. A reader's block limit of 64 MiB keeps memory bounded.
 *
 * Build (clang with libFuzzer; see fuzz/README.md):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -I src \
 *     fuzz/clickhouse_reader.c src/connectors/clickhouse/{ch_reader,ch_block,ch_compress,cityhash}.c \
 *     src/base/{alloc,buf,hash,error,log,time}.c -llz4 -lpthread -o clickhouse_reader_fuzz
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "connectors/clickhouse/ch_proto.h"
#include "connectors/clickhouse/ch_reader.h"

#define MAX_PACKETS 4096

static const int revisions[] = {54412, 54405, 54420, 54429, 54454, 54460, 54469, 0};

/* Decodes the input with one cutting; returns the number of packets, their types in types[],
 * and the final status (CK_CH_NEED_MORE or an error code). */
static int run(const uint8_t *data, size_t n, int rev, bool compressed, int mode, uint32_t seed,
               uint8_t *types, int *status) {
  ck_ch_reader_t r;
  ck_ch_reader_init(&r, rev ? rev : CK_CH_CLIENT_REVISION);
  if (rev) r.revision = rev;
  r.compressed = compressed;
  r.max_block_bytes = (size_t)64 << 20;
  size_t fed = 0;
  int npk = 0, rc = CK_CH_NEED_MORE;
  for (;;) {
    const ck_ch_packet_t *p;
    ck_error_t err = {0};
    rc = ck_ch_reader_next(&r, &p, &err);
    if (rc == 0) {
      if (npk < MAX_PACKETS) types[npk] = (uint8_t)p->type;
      npk++;
      const ck_ch_block_t *b = &p->block;
      for (int c = 0; c < b->ncols; c++) {
        if (b->rows && b->cols[c].rows != b->rows) abort();
        if (b->rows && b->cols[c].type.nullable && b->cols[c].nulls.len != b->rows) abort();
        if (b->rows && b->cols[c].type.base == CK_CH_STRING &&
            b->cols[c].offs.len != b->rows * sizeof(uint64_t))
          abort();
      }
      continue;
    }
    if (rc < 0) {
      /* sticky */
      ck_error_t again = {0};
      if (ck_ch_reader_next(&r, &p, &again) != rc) abort();
      break;
    }
    if (fed == n) break;
    size_t k;
    if (mode == 0) k = n - fed;
    else if (mode == 1) k = 1;
    else {
      seed = seed * 1103515245u + 12345u;
      k = 1 + (seed >> 16) % (size_t)(mode * 7);
    }
    if (k > n - fed) k = n - fed;
    ck_ch_reader_feed(&r, data + fed, k);
    fed += k;
  }
  ck_ch_reader_fini(&r);
  *status = rc;
  return npk;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t setup = data[0];
  data++, size--;
  bool compressed = setup & 1;
  int rev = revisions[(setup >> 1) & 7];
  int mode = setup >> 4;
  uint32_t seed = 0;
  for (size_t i = 0; i < size && i < 8; i++) seed = seed * 31 + data[i];
  static uint8_t t1[MAX_PACKETS], t2[MAX_PACKETS];
  int s1, s2;
  int n1 = run(data, size, rev, compressed, 0, seed, t1, &s1);
  int n2 = run(data, size, rev, compressed, mode ? mode : 1, seed, t2, &s2);
  /* The same packets whatever the cutting; an error may only come where the whole input
   * also errs (a partial input cannot error where the whole one does not). */
  if ((s1 < 0) != (s2 < 0)) abort();
  if (s1 >= 0 && n1 != n2) abort();
  int common = n1 < n2 ? n1 : n2;
  if (common > MAX_PACKETS) common = MAX_PACKETS;
  if (memcmp(t1, t2, (size_t)common) != 0) abort();
  return 0;
}
