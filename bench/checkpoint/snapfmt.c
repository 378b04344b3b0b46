/*
 * snapfmt.c — what the Arrow IPC snapshot layout (format 3.0, src/checkpoint/store.c) costs
 * against the version-1 binary layout it replaced, on an aggregation state of N groups.
 *
 * DESIGN: builds the aggregation operator's own encoding (runtime/agg_snap.c, version 2) of N
 * open groups of TUMBLE(1 day) GROUP BY k with COUNT(*) and SUM(BIGINT) — 54 bytes a record,
 * as the operator writes them — then for each layout: encodes the snapshot file (v1: header,
 * one section, CRC32C — the old encoder, kept here as the independent baseline since store.c
 * no longer has it; 3.0: ck_snap_encode, one row per group, its key as JSON, its value the
 * record without key group and key), writes it durably (ck_store_write: temporary file, fsync,
 * rename, directory fsync), and restores it as a rerun does: the whole-file check (v1: the old
 * check, here; 3.0: ck_snap_check), then ck_store_read and decode (v1: CRC and section table;
 * 3.0: ck_snap_decode_in_place, as restore_task does, which puts every record back together
 * from its row's key_group, user_key and value). The restored bytes are compared with the
 * original outside the timing. The operator's own snapshot() and restore() are the same for
 * both layouts and are not timed. Prints bytes on disk and the best of R runs of each step, in
 * wall time or (argument "cpu") the process's CPU time, which a shared machine disturbs less.
 * Threads: the main thread only.
 *
 * Build against a build tree (release), e.g.:
 *   B=build; cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -I$B/generated -o /tmp/snapfmt \
 *     bench/checkpoint/snapfmt.c $B/src/runtime/libck_runtime.a \
 *     $B/src/checkpoint/libck_checkpoint.a $B/src/base/libck_base.a \
 *     $(pkg-config --libs icu-uc icu-i18n libcurl libcrypto) -lm -lpthread
 * Usage: snapfmt DIR [GROUPS [RUNS [wall|cpu]]]   (DIR: a scratch directory on the disk)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/crc32c.h"
#include "checkpoint/store.h"
#include "runtime/op.h"
#include "runtime/types.h"

static clockid_t clock_id = CLOCK_MONOTONIC; /* "cpu": CLOCK_PROCESS_CPUTIME_ID */

static double now(void) {
  struct timespec ts;
  clock_gettime(clock_id, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void put(ck_buf_t *b, const void *p, size_t n) { ck_buf_append(b, p, n); }
static void put_u8(ck_buf_t *b, uint8_t v) { put(b, &v, 1); }
static void put_u16(ck_buf_t *b, uint16_t v) { put(b, &v, 2); }
static void put_u32(ck_buf_t *b, uint32_t v) { put(b, &v, 4); }
static void put_i64(ck_buf_t *b, int64_t v) { put(b, &v, 8); }

/* The aggregation encoding of n groups (agg_snap.c's layout, version 2). */
static void agg_state(ck_buf_t *b, long n) {
  put(b, "CKAG", 4);
  put_u16(b, 2);
  put_u8(b, 1); /* TUMBLE */
  put_i64(b, 86400000), put_i64(b, 0), put_i64(b, 0), put_i64(b, 0);
  put_u16(b, 1);
  put_u8(b, CK_T_INT64), put_u8(b, 0), put_u8(b, 0);
  put_u16(b, 2);
  put_u8(b, 0), put_u8(b, 0); /* COUNT(*) */
  put_u8(b, CK_T_INT64), put_u8(b, 0), put_u8(b, 0), put_u8(b, CK_T_INT64), put_u8(b, 0),
      put_u8(b, 0);
  put_u8(b, 2), put_u8(b, 0); /* SUM(BIGINT) */
  put_u8(b, CK_T_INT64), put_u8(b, 0), put_u8(b, 0), put_u8(b, CK_T_INT64), put_u8(b, 0),
      put_u8(b, 0);
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

/* The version-1 layout, as store.c wrote it before format 2.0. */
static void v1_encode(const void *data, size_t len, ck_buf_t *out) {
  put(out, "CKSNAP\0\1", 8);
  put_u32(out, 1);
  put_i64(out, 7);
  put_i64(out, 0x1234);
  put_u32(out, 0);
  put_u32(out, 1);
  put_u32(out, 2);
  put_u8(out, 1);
  put_i64(out, (int64_t)len);
  put(out, data, len);
  put_u32(out, ck_crc32c(0, out->data, out->len));
}

static int v1_decode(const char *p, size_t len, const void **data, size_t *dlen) {
  uint32_t crc;
  memcpy(&crc, p + len - 4, 4);
  if (crc != ck_crc32c(0, p, len - 4)) return -1;
  uint64_t sl;
  memcpy(&sl, p + 36 + 5, 8);
  *data = p + 36 + 13;
  *dlen = sl;
  return 0;
}

/* v1's whole-file check (the lineage's, before a restore), as store.c did it: the header,
 * then the CRC over the file in 64 KiB chunks, never holding it in memory. */
static int v1_check(const ck_store_t *st, const char *rel) {
  char path[4200], head[36], chunk[65536];
  ck_store_path(st, rel, path, sizeof path);
  FILE *f = fopen(path, "rb");
  if (!f || fread(head, 1, sizeof head, f) != sizeof head || memcmp(head, "CKSNAP\0\1", 8)) {
    if (f) fclose(f);
    return -1;
  }
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint32_t crc = 0, want;
  for (long off = 0; off < len - 4;) {
    size_t n = (size_t)(len - 4 - off) < sizeof chunk ? (size_t)(len - 4 - off) : sizeof chunk;
    if (fread(chunk, 1, n, f) != n) break;
    crc = ck_crc32c(crc, chunk, n);
    off += (long)n;
  }
  int rc = fread(&want, 1, 4, f) == 4 && want == crc ? 0 : -1;
  fclose(f);
  return rc;
}

typedef struct res {
  size_t bytes;
  double encode, write, check, restore;
} res_t;

static void best(double *slot, double v) {
  if (*slot == 0 || v < *slot) *slot = v;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: snapfmt DIR [GROUPS [RUNS [wall|cpu]]]\n");
    return 2;
  }
  if (argc > 4 && strcmp(argv[4], "cpu") == 0) clock_id = CLOCK_PROCESS_CPUTIME_ID;
  long groups = argc > 2 ? atol(argv[2]) : 1000000;
  int runs = argc > 3 ? atoi(argv[3]) : 3;
  ck_store_t st;
  ck_error_t err;
  ck_error_clear(&err);
  if (ck_store_open(argv[1], &st, &err)) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  ck_buf_t state;
  ck_buf_init(&state);
  agg_state(&state, groups);
  res_t r1 = {0}, r2 = {0};
  for (int run = 0; run < runs; run++) {
    /* version 1 */
    ck_buf_t f;
    ck_buf_init(&f);
    double t = now();
    v1_encode(state.data, state.len, &f);
    best(&r1.encode, now() - t);
    t = now();
    if (ck_store_write(&st, "v1.snap", f.data, f.len, &err)) return 1;
    best(&r1.write, now() - t);
    r1.bytes = f.len;
    ck_buf_fini(&f);
    t = now();
    if (v1_check(&st, "v1.snap")) return 1;
    best(&r1.check, now() - t);
    t = now();
    ck_buf_t in;
    ck_buf_init(&in);
    if (ck_store_read(&st, "v1.snap", &in, &err)) return 1;
    const void *d;
    size_t dn;
    if (v1_decode(in.data, in.len, &d, &dn) || dn != state.len) return 1;
    best(&r1.restore, now() - t);
    ck_buf_fini(&in);
    /* format 3.0 */
    ck_buf_init(&f);
    ck_snap_section_t sec = {.node = 2, .kind = CK_SNAP_OP, .data = state.data,
                             .len = state.len, .name = "window_agg", .split = ck_agg_snap_split};
    t = now();
    ck_snap_encode(7, 0x1234, 0, &sec, 1, &f);
    best(&r2.encode, now() - t);
    char rel[64];
    ck_snap_path(0, 7, rel, sizeof rel);
    t = now();
    if (ck_store_write(&st, rel, f.data, f.len, &err)) return 1;
    best(&r2.write, now() - t);
    r2.bytes = f.len;
    ck_buf_fini(&f);
    t = now();
    if (ck_snap_check(&st, 0, 7, 0x1234, &err)) {
      fprintf(stderr, "%s\n", err.message);
      return 1;
    }
    best(&r2.check, now() - t);
    t = now();
    ck_buf_init(&in);
    if (ck_store_read(&st, rel, &in, &err)) return 1;
    ck_buf_t parts;
    ck_buf_init(&parts);
    ck_snap_section_t out[4];
    int n;
    if (ck_snap_decode_in_place(in.data, in.len, 7, 0x1234, 0, &ck_agg_snap_joiner, out, 4, &n,
                                &parts, &err) || n != 1 || out[0].len != state.len) {
      fprintf(stderr, "3.0 round trip failed: %s\n", err.message);
      return 1;
    }
    best(&r2.restore, now() - t);
    if (memcmp(out[0].data, state.data, state.len) != 0) { /* not timed (v1 has no such step) */
      fprintf(stderr, "3.0 round trip gave other bytes\n");
      return 1;
    }
    ck_buf_fini(&in);
    ck_buf_fini(&parts);
  }
  printf("%ld groups (aggregation encoding %.1f MB), best of %d, %s time:\n", groups,
         state.len / 1e6, runs, clock_id == CLOCK_MONOTONIC ? "wall" : "process CPU");
  printf("  %-8s %10s %10s %10s %10s %10s %10s\n", "layout", "MB", "encode", "write+sync",
         "write tot", "check", "restore");
  const res_t *rs[2] = {&r1, &r2};
  const char *names[2] = {"v1", "3.0"};
  for (int i = 0; i < 2; i++)
    printf("  %-8s %10.1f %8.0fms %8.0fms %8.0fms %8.0fms %8.0fms\n", names[i],
           rs[i]->bytes / 1e6, rs[i]->encode * 1e3, rs[i]->write * 1e3,
           (rs[i]->encode + rs[i]->write) * 1e3, rs[i]->check * 1e3, rs[i]->restore * 1e3);
  printf("  3.0/v1: size %.2fx, encode+write %.2fx, check+restore %.2fx\n",
         (double)r2.bytes / (double)r1.bytes, (r2.encode + r2.write) / (r1.encode + r1.write),
         (r2.check + r2.restore) / (r1.check + r1.restore));
  ck_buf_fini(&state);
  ck_store_close(&st);
  return 0;
}
