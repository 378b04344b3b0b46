/*
 * snapprof.c — the snapshot writer or the restore of format 3.0 alone, in a loop, for a
 * profiler (perf record -e cpu-clock, valgrind --tool=callgrind): what snapfmt.c times, without
 * the disk and the version-1 baseline around it.
 *
 * DESIGN: the same aggregation state as snapfmt.c (N open groups of TUMBLE(1 day) GROUP BY k
 * with COUNT(*) and SUM(BIGINT), the operator's encoding version 2); "enc" runs ck_snap_encode
 * into a fresh buffer, "dec" ck_snap_decode_in_place over a fresh copy of the file (the copy
 * is not timed) and checks the restored bytes (not timed). Prints the best of R runs in process CPU time.
 * Threads: the main thread only.
 *
 * Build against a build tree (release), e.g.:
 *   B=build; cc -O2 -g -std=c11 -D_GNU_SOURCE -Isrc -I$B/generated -o /tmp/snapprof \
 *     bench/checkpoint/snapprof.c $B/src/runtime/libck_runtime.a \
 *     $B/src/checkpoint/libck_checkpoint.a $B/src/base/libck_base.a \
 *     $(pkg-config --libs icu-uc icu-i18n libcurl libcrypto) -lm -lpthread
 * Usage: snapprof enc|dec GROUPS RUNS, e.g. valgrind --tool=callgrind /tmp/snapprof dec 1000000 1
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "checkpoint/store.h"
#include "runtime/op.h"
#include "runtime/types.h"

static void put(ck_buf_t *b, const void *p, size_t n) { ck_buf_append(b, p, n); }
static void put_u8(ck_buf_t *b, uint8_t v) { put(b, &v, 1); }
static void put_u16(ck_buf_t *b, uint16_t v) { put(b, &v, 2); }
static void put_u32(ck_buf_t *b, uint32_t v) { put(b, &v, 4); }
static void put_i64(ck_buf_t *b, int64_t v) { put(b, &v, 8); }
static void put_type(ck_buf_t *b, uint8_t id) { put_u8(b, id), put_u8(b, 0), put_u8(b, 0); }

/* snapfmt.c's state: the aggregation encoding of n groups (agg_snap.c's layout, version 2). */
static void agg_state(ck_buf_t *b, long n) {
  put(b, "CKAG", 4);
  put_u16(b, 2);
  put_u8(b, 1); /* TUMBLE */
  put_i64(b, 86400000), put_i64(b, 0), put_i64(b, 0), put_i64(b, 0);
  put_u16(b, 1);
  put_type(b, CK_T_INT64);
  put_u16(b, 2);
  put_u8(b, 0), put_u8(b, 0); /* COUNT(*) */
  put_type(b, CK_T_INT64), put_type(b, CK_T_INT64);
  put_u8(b, 2), put_u8(b, 0); /* SUM(BIGINT) */
  put_type(b, CK_T_INT64), put_type(b, CK_T_INT64);
  put_u32(b, 128);
  put_i64(b, 1234567);
  put_i64(b, n);
  for (long i = 0; i < n; i++) {
    int64_t k = i + 1;
    put_u32(b, (uint32_t)(k * 2654435761u % 128));
    put_i64(b, 0), put_i64(b, 86400000);
    put_u8(b, 0), put_i64(b, k);
    put_i64(b, 1 + i % 5);
    put_u8(b, 1);
    __int128 s = (__int128)(i * 37 % 100000);
    put(b, &s, 16);
  }
}

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc < 4 || (strcmp(argv[1], "enc") != 0 && strcmp(argv[1], "dec") != 0)) {
    fprintf(stderr, "usage: snapprof enc|dec GROUPS RUNS\n");
    return 2;
  }
  bool enc = strcmp(argv[1], "enc") == 0;
  long groups = atol(argv[2]);
  int runs = atoi(argv[3]);
  ck_buf_t state, file, copy;
  ck_buf_init(&state);
  ck_buf_init(&file);
  ck_buf_init(&copy);
  agg_state(&state, groups);
  ck_snap_section_t sec = {.node = 2, .kind = CK_SNAP_OP, .data = state.data, .len = state.len,
                           .name = "window_agg", .split = ck_agg_snap_split};
  ck_snap_encode(7, 0x1234, 0, &sec, 1, &file);
  ck_buf_append(&copy, file.data, file.len);
  ck_error_t err;
  ck_error_clear(&err);
  double best = 1e9;
  for (int i = 0; i < runs; i++) {
    double t;
    if (enc) {
      ck_buf_t out;
      ck_buf_init(&out);
      t = cpu_now();
      ck_snap_encode(7, 0x1234, 0, &sec, 1, &out);
      t = cpu_now() - t;
      ck_buf_fini(&out);
    } else {
      memcpy(file.data, copy.data, copy.len); /* in place undoes the file: a fresh copy */
      ck_buf_t parts;
      ck_buf_init(&parts);
      ck_snap_section_t out[4];
      int n;
      t = cpu_now();
      int rc = ck_snap_decode_in_place(file.data, file.len, 7, 0x1234, 0, &ck_agg_snap_joiner,
                                       out, 4, &n, &parts, &err);
      t = cpu_now() - t;
      if (rc || n != 1 || out[0].len != state.len || memcmp(out[0].data, state.data, state.len)) {
        fprintf(stderr, "the restore gave other bytes: %s\n", err.message);
        return 1;
      }
      ck_buf_fini(&parts);
    }
    if (t < best) best = t;
  }
  printf("%s, %ld groups: best of %d %.1f ms (process CPU)\n", enc ? "encode" : "decode in place",
         groups, runs, best * 1e3);
  ck_buf_fini(&state);
  ck_buf_fini(&file);
  ck_buf_fini(&copy);
  return 0;
}
