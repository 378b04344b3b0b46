/*
 * DESIGN: the protocol trace's cost per event, on and off (bench/checkpoint/run.py --trace
 * builds and runs it): N CK_TRACE calls of a typical event (a barrier: two integer fields and
 * the thread's context), timed with the monotonic clock. argv[1]: N; the environment decides
 * on or off (CLINK_PROTOCOL_TRACE_DIR).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "checkpoint/trace.h"

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 200000;
  ck_trace_context("/bench/ck/v1", 3);
  CK_TRACE("warmup", "ckpt=%d", 0);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 0; i < n; i++) CK_TRACE("barrier", "ckpt=%ld sink=%d", i, 1);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
  printf("%s %.1f ns/event\n", ck_trace_enabled() ? "on" : "off", ns / (double)n);
  return 0;
}
