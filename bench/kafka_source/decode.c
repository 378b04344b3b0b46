/*
 * decode.c — the JSON decoder alone (src/connectors/format_json.c), on the Nexmark topic's
 * records, without Kafka: how many nanoseconds and CPU-seconds decoding costs per event.
 *
 * DESIGN: makes events 0..N-1 with the Nexmark model (src/connectors/nexmark.c, seed 0: the same
 * JSON bench/nexmark/nexmark_gen.c writes to the topic), keeps them in one buffer, then decodes
 * them R times through ck_decoder_decode (the UTF-8 check included, as the Kafka source calls it)
 * into batches of 1024 rows of the eight columns bench/nexmark/queries/source.sql declares, and
 * prints the best pass's process CPU time per event. N large (default 200,000: 57 MB) reads the
 * records from memory, as a source does; N small (5,000) keeps them in cache.
 * Threads: the main thread only.
 *
 * Build against a build tree (release), e.g.:
 *   B=build; cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -I$B/generated -o /tmp/decode \
 *     bench/kafka_source/decode.c $B/src/connectors/libck_connectors.a \
 *     $B/src/runtime/libck_runtime.a $B/src/checkpoint/libck_checkpoint.a \
 *     $B/src/base/libck_base.a -lrdkafka -lpq -lm -lpthread
 * Usage: decode [EVENTS [PASSES]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/arena.h"
#include "connectors/format.h"
#include "connectors/nexmark.h"
#include "runtime/batch.h"
#include "runtime/schema.h"

static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200000, passes = argc > 2 ? atoi(argv[2]) : 10;
  if (n <= 0 || passes <= 0) {
    fprintf(stderr, "usage: decode [EVENTS [PASSES]]\n");
    return 2;
  }
  static const char *names[] = {"event_type", "auction", "bidder", "price",
                                "channel",    "url",     "date_time", "extra"};
  static const ck_type_id_t ids[] = {CK_T_INT32,  CK_T_INT64,  CK_T_INT64, CK_T_INT64,
                                     CK_T_STRING, CK_T_STRING, CK_T_INT64, CK_T_STRING};
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_schema_t schema = ck_schema_make(&arena, 8);
  for (int c = 0; c < 8; c++) {
    schema.names[c] = names[c];
    memset(&schema.types[c], 0, sizeof schema.types[c]);
    schema.types[c].id = ids[c];
  }

  ck_nexmark_cfg_t cfg;
  ck_nexmark_cfg_default(&cfg);
  ck_nexmark_gen_t *gen = ck_nexmark_gen_new(&cfg);
  ck_buf_t all;
  ck_buf_init(&all);
  size_t *off = malloc(sizeof *off * ((size_t)n + 1));
  ck_nexmark_event_t ev;
  for (int i = 0; i < n; i++) {
    off[i] = all.len;
    ck_nexmark_gen_event(gen, (uint64_t)i, &ev);
    ck_nexmark_event_json(&ev, &all);
  }
  off[n] = all.len;

  ck_decoder_t *dec = ck_decoder_new(CK_FORMAT_JSON, &schema, NULL);
  ck_batch_t *batch = ck_batch_new(8, schema.types, CK_BATCH_ROWS);
  ck_error_t err;
  memset(&err, 0, sizeof err);
  double best = 1e9;
  for (int r = 0; r < passes; r++) {
    double t0 = cpu_s();
    for (int i = 0; i < n; i++) {
      if (batch->nrows == CK_BATCH_ROWS) ck_batch_clear(batch);
      if (ck_decoder_decode(dec, all.data + off[i], off[i + 1] - off[i], batch, &err)) {
        fprintf(stderr, "decode: event %d: %s\n", i, err.message);
        return 1;
      }
    }
    double t = cpu_s() - t0;
    if (t < best) best = t;
  }
  printf("%d events, %.1f MB of JSON (%.0f bytes/event), best of %d passes: %.3f CPU-s, "
         "%.0f ns/event, %.2f M events/CPU-s, %.0f MB/s\n",
         n, (double)all.len / 1e6, (double)all.len / n, passes, best, best * 1e9 / n,
         n / best / 1e6, (double)all.len / 1e6 / best);
  ck_batch_free(batch);
  ck_decoder_free(dec);
  free(off);
  ck_buf_fini(&all);
  ck_nexmark_gen_free(gen);
  ck_arena_fini(&arena);
  return 0;
}
