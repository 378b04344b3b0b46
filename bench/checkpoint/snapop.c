/*
 * snapop.c — what a checkpoint and a restore of an aggregation's state cost the job, end to
 * end, in the Arrow IPC snapshot layout (format 3.x, src/checkpoint/store.c) and in the
 * version-1 binary layout it replaced: from the operator's hash table to a durable file, and
 * from the file back to a restored operator.
 *
 * DESIGN: a real aggregation operator (ck_agg_op_init: TUMBLE(1 day) GROUP BY k BIGINT with
 * COUNT(*) and SUM(BIGINT), max parallelism 128, one subtask) is fed N rows of N distinct keys,
 * so its table holds N open groups. Then, for each layout, in interleaved rounds:
 *   write:   the operator's snapshot() (its own encoding, agg_snap.c; the subtask's thread in
 *            the engine), the file's encoding (v1: header, one section, CRC32C — the old
 *            encoder, kept here as the independent baseline since store.c no longer has it;
 *            3.x: ck_snap_encode; the writer thread in the engine) and ck_store_write
 *            (temporary file, fsync, rename, directory fsync);
 *   restore: the whole-file check a rerun makes (v1: the old chunked CRC check, here; 3.x:
 *            ck_snap_check), ck_store_read, the file's decoding (v1: CRC and section table;
 *            3.x: ck_snap_decode_in_place with ck_agg_snap_joiner, as restore_task does) and
 *            restore() into a fresh operator.
 * The fresh operator is made before, and closed after, the timed part. After every restore the
 * restored operator's snapshot is compared with the original's (not timed). Each step is timed
 * in wall time and in the process's CPU time (a shared machine disturbs CPU time less); the
 * medians over the rounds are printed, with the ratios of the sums of the medians.
 * `bytes` (argument 4) also prints the step that starts from the operator's encoding already
 * made (the method of docs/benchmarks.md before 2026-12-01), for comparison.
 * Threads: the main thread only.
 *
 * Build against a build tree (release), e.g.:
 *   B=build; cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -I$B/generated -o /tmp/snapop \
 *     bench/checkpoint/snapop.c $B/src/runtime/libck_runtime.a \
 *     $B/src/checkpoint/libck_checkpoint.a $B/src/base/libck_base.a \
 *     $(pkg-config --libs icu-uc icu-i18n libcurl libcrypto) -lm -lpthread
 * Usage: snapop DIR [GROUPS [ROUNDS]]   (DIR: a scratch directory on the disk)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/arena.h"
#include "base/crc32c.h"
#include "checkpoint/store.h"
#include "runtime/op.h"
#include "runtime/schema.h"
#include "runtime/types.h"

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void put(ck_buf_t *b, const void *p, size_t n) { ck_buf_append(b, p, n); }
static void put_u8(ck_buf_t *b, uint8_t v) { put(b, &v, 1); }
static void put_u32(ck_buf_t *b, uint32_t v) { put(b, &v, 4); }
static void put_i64(ck_buf_t *b, int64_t v) { put(b, &v, 8); }

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
  if (len < 53) return -1;
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

/* ---- the operator ---- */

static int drop_batch(void *ctx, ck_batch_t *b, ck_error_t *err) {
  (void)ctx, (void)err;
  ck_batch_free(b);
  return 0;
}
static int drop_wm(void *ctx, int64_t wm, ck_error_t *err) {
  (void)ctx, (void)wm, (void)err;
  return 0;
}

static const ck_type_t I64 = {CK_T_INT64, 0, 0}, TS = {CK_T_TIMESTAMP, 0, 0};

typedef struct agg_op {
  ck_arena_t arena;
  ck_node_t node;
  ck_op_t op;
} agg_op_t;

static void agg_open(agg_op_t *a) {
  memset(a, 0, sizeof *a);
  ck_arena_init(&a->arena, 0);
  ck_node_t *n = &a->node;
  ck_agg_spec_t *s = &n->u.agg;
  n->id = 2;
  n->kind = CK_NODE_AGG;
  n->name = "window_agg";
  n->parallelism = 1;
  s->nkeys = 1;
  s->key_cols = ck_arena_alloc(&a->arena, sizeof(int));
  s->key_cols[0] = 0;
  s->ncalls = 2;
  s->calls = ck_arena_alloc(&a->arena, 2 * sizeof(ck_agg_call_t));
  memset(s->calls, 0, 2 * sizeof(ck_agg_call_t));
  s->calls[0] = (ck_agg_call_t){CK_AGG_COUNT_STAR, false, -1, I64, I64};
  s->calls[1] = (ck_agg_call_t){CK_AGG_SUM, false, 2, I64, I64};
  s->window = (ck_window_spec_t){.kind = CK_WIN_TUMBLE, .size = 86400000, .time_col = 1};
  n->out_schema = ck_schema_make(&a->arena, 5);
  ck_type_t out[5] = {I64, TS, TS, I64, I64};
  memcpy(n->out_schema.types, out, sizeof out);
  a->op.node = n;
  a->op.subtask = 0;
  a->op.parallelism = 1;
  a->op.max_parallelism = 128;
  a->op.out = (ck_out_t){drop_batch, drop_wm, NULL};
  ck_error_t err;
  ck_error_clear(&err);
  if (ck_agg_op_init(&a->op, &err) || a->op.ops->open(&a->op, &err)) {
    fprintf(stderr, "could not make the operator: %s\n", err.message);
    exit(1);
  }
}

static void agg_close(agg_op_t *a) {
  a->op.ops->close(&a->op);
  ck_arena_fini(&a->arena);
}

/* n groups: keys 1..n, in the window [0, 1 day), with 1 + i % 5 rows each. */
static void agg_fill(agg_op_t *a, long n) {
  ck_type_t types[3] = {I64, TS, I64};
  ck_error_t err;
  ck_error_clear(&err);
  for (int pass = 0; pass < 5; pass++) {
    for (long from = 0; from < n; from += 4096) {
      long to = from + 4096 < n ? from + 4096 : n;
      ck_batch_t *b = ck_batch_new(3, types, (size_t)(to - from));
      for (long i = from; i < to; i++) {
        if (i % 5 < pass) continue;
        ck_col_append_i64(&b->cols[0], i + 1);
        ck_col_append_i64(&b->cols[1], (i * 7919) % 86400000);
        ck_col_append_i64(&b->cols[2], (i * 37 + pass) % 100000);
        b->nrows++;
      }
      ck_batch_seal(b);
      if (a->op.ops->process(&a->op, b, &err)) {
        fprintf(stderr, "could not feed the operator: %s\n", err.message);
        exit(1);
      }
      ck_batch_free(b);
    }
  }
}

/* ---- timing ---- */

enum { L_V1, L_ARROW, NLAYOUTS };
enum { S_SNAPSHOT, S_ENCODE, S_WRITE, S_CHECK, S_READ, S_DECODE, S_RESTORE, NSTEPS };
static const char *const STEP_NAMES[NSTEPS] = {"snapshot()", "file enc", "write+sync", "check",
                                               "read", "file dec", "restore()"};
#define MAX_ROUNDS 64
static double wall[NLAYOUTS][NSTEPS][MAX_ROUNDS], cpu[NLAYOUTS][NSTEPS][MAX_ROUNDS];
static double t_wall, t_cpu;

static void tick(void) { t_wall = wall_now(), t_cpu = cpu_now(); }
static void tock(int layout, int step, int round) {
  wall[layout][step][round] = wall_now() - t_wall;
  cpu[layout][step][round] = cpu_now() - t_cpu;
  tick();
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(const double *v, int n) {
  double s[MAX_ROUNDS];
  memcpy(s, v, sizeof *v * (size_t)n);
  qsort(s, (size_t)n, sizeof *s, cmp_d);
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void fail(const char *what, const ck_error_t *err) {
  fprintf(stderr, "%s: %s\n", what, err ? err->message : "");
  exit(1);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: snapop DIR [GROUPS [ROUNDS]]\n");
    return 2;
  }
  long groups = argc > 2 ? atol(argv[2]) : 1000000;
  int rounds = argc > 3 ? atoi(argv[3]) : 5;
  if (rounds < 1 || rounds > MAX_ROUNDS) rounds = 5;
  ck_store_t st;
  ck_error_t err;
  ck_error_clear(&err);
  if (ck_store_open(argv[1], &st, &err)) fail("could not open the store", &err);
  agg_op_t orig;
  agg_open(&orig);
  agg_fill(&orig, groups);
  ck_buf_t want; /* the original's encoding: what every restored operator must give back */
  ck_buf_init(&want);
  if (orig.op.ops->snapshot(&orig.op, &want, &err)) fail("snapshot", &err);
  size_t bytes[NLAYOUTS] = {0};
  char rel3[64];
  ck_snap_path(0, 7, rel3, sizeof rel3);
  for (int round = 0; round < rounds; round++) {
    for (int k = 0; k < NLAYOUTS; k++) {
      int layout = (round % 2) ? NLAYOUTS - 1 - k : k; /* alternate which goes first */
      const char *rel = layout == L_V1 ? "v1.snap" : rel3;
      /* write */
      ck_buf_t enc, file;
      ck_buf_init(&enc);
      ck_buf_init(&file);
      tick();
      if (orig.op.ops->snapshot(&orig.op, &enc, &err)) fail("snapshot", &err);
      tock(layout, S_SNAPSHOT, round);
      if (layout == L_V1) {
        v1_encode(enc.data, enc.len, &file);
      } else {
        ck_snap_section_t sec = {.node = 2, .kind = CK_SNAP_OP, .data = enc.data, .len = enc.len,
                                 .name = "window_agg", .split = ck_agg_snap_split};
        ck_snap_encode(7, 0x1234, 0, &sec, 1, &file);
      }
      tock(layout, S_ENCODE, round);
      if (ck_store_write(&st, rel, file.data, file.len, &err)) fail("write", &err);
      tock(layout, S_WRITE, round);
      bytes[layout] = file.len;
      ck_buf_fini(&enc);
      ck_buf_fini(&file);
      /* restore */
      agg_op_t back;
      agg_open(&back);
      ck_buf_t in, parts;
      ck_buf_init(&in);
      ck_buf_init(&parts);
      tick();
      if (layout == L_V1 ? v1_check(&st, rel) : ck_snap_check(&st, 0, 7, 0x1234, &err))
        fail("check", &err);
      tock(layout, S_CHECK, round);
      if (ck_store_read(&st, rel, &in, &err)) fail("read", &err);
      tock(layout, S_READ, round);
      const void *d;
      size_t dn;
      if (layout == L_V1) {
        if (v1_decode(in.data, in.len, &d, &dn)) fail("v1 decode", NULL);
      } else {
        ck_snap_section_t out[4];
        int n;
        if (ck_snap_decode_in_place(in.data, in.len, 7, 0x1234, 0, &ck_agg_snap_joiner, out, 4,
                                    &n, &parts, &err) || n != 1)
          fail("3.x decode", &err);
        d = out[0].data, dn = out[0].len;
      }
      tock(layout, S_DECODE, round);
      if (back.op.ops->restore(&back.op, d, dn, &err)) fail("restore", &err);
      tock(layout, S_RESTORE, round);
      ck_buf_fini(&in);
      ck_buf_fini(&parts);
      ck_buf_t again; /* not timed: the restored state is the original */
      ck_buf_init(&again);
      if (back.op.ops->snapshot(&back.op, &again, &err)) fail("snapshot", &err);
      if (again.len != want.len || memcmp(again.data, want.data, want.len))
        fail(layout == L_V1 ? "v1: the restored state differs" : "3.x: the restored state differs",
             NULL);
      ck_buf_fini(&again);
      agg_close(&back);
    }
  }
  printf("%ld groups (operator encoding %.1f MB), median of %d interleaved rounds, ms "
         "(wall / process CPU):\n", groups, want.len / 1e6, rounds);
  printf("  %-10s %6s", "layout", "MB");
  for (int s = 0; s < NSTEPS; s++) printf(" %15s", STEP_NAMES[s]);
  printf(" %15s %15s\n", "checkpoint", "restore");
  double sum_w[NLAYOUTS][2], sum_c[NLAYOUTS][2]; /* [write, restore] */
  double sumx_w[NLAYOUTS][2], sumx_c[NLAYOUTS][2]; /* without snapshot()/restore() */
  for (int l = 0; l < NLAYOUTS; l++) {
    printf("  %-10s %6.1f", l == L_V1 ? "v1" : CK_SNAP_FORMAT_VERSION, bytes[l] / 1e6);
    memset(sum_w[l], 0, sizeof sum_w[l]), memset(sum_c[l], 0, sizeof sum_c[l]);
    memset(sumx_w[l], 0, sizeof sumx_w[l]), memset(sumx_c[l], 0, sizeof sumx_c[l]);
    for (int s = 0; s < NSTEPS; s++) {
      double mw = median(wall[l][s], rounds), mc = median(cpu[l][s], rounds);
      int side = s >= S_CHECK;
      sum_w[l][side] += mw, sum_c[l][side] += mc;
      if (s != S_SNAPSHOT && s != S_RESTORE) sumx_w[l][side] += mw, sumx_c[l][side] += mc;
      printf(" %7.0f / %5.0f", mw * 1e3, mc * 1e3);
    }
    printf(" %7.0f / %5.0f %7.0f / %5.0f\n", sum_w[l][0] * 1e3, sum_c[l][0] * 1e3,
           sum_w[l][1] * 1e3, sum_c[l][1] * 1e3);
  }
  printf("  %s/v1 end to end (operator to file, file to operator): size %.3fx, checkpoint "
         "%.2fx wall %.2fx CPU, restore %.2fx wall %.2fx CPU\n", CK_SNAP_FORMAT_VERSION,
         (double)bytes[L_ARROW] / (double)bytes[L_V1], sum_w[1][0] / sum_w[0][0],
         sum_c[1][0] / sum_c[0][0], sum_w[1][1] / sum_w[0][1], sum_c[1][1] / sum_c[0][1]);
  printf("  %s/v1 from the operator's encoding (the old method): write %.2fx wall %.2fx CPU, "
         "check+restore %.2fx wall %.2fx CPU\n", CK_SNAP_FORMAT_VERSION,
         sumx_w[1][0] / sumx_w[0][0], sumx_c[1][0] / sumx_c[0][0], sumx_w[1][1] / sumx_w[0][1],
         sumx_c[1][1] / sumx_c[0][1]);
  ck_buf_fini(&want);
  agg_close(&orig);
  ck_store_close(&st);
  return 0;
}
