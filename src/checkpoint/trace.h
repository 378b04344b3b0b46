/*
 * DESIGN: the protocol trace — one NDJSON line per decision the checkpoint protocol takes, so
 * formal/check-trace can hold a run of the engine to the Spin model (docs/protocol.md lists
 * the events and their fields).
 *
 * Off unless CLINK_PROTOCOL_TRACE_DIR is set when the first event is due; then each process
 * appends to its own file <dir>/<proc>-<pid>.ndjson, where proc is the CLI command (run,
 * coordinator, worker) or the program's name. A line is
 *   {"seq":N,"ts":<wall ns>,"proc":"run-123","event":"prepare","dir":"…/v1","task":0,"ckpt":3}
 * Fields come from a "key=value key=value" format: a value that is an integer is a JSON
 * number, anything else a string (values hold no spaces). A thread may name the checkpoint
 * directory and subtask it works for (ck_trace_context): events of that thread carry them
 * unless they name their own, so a sink's events need not know which subtask it is.
 *
 * Cost: off, one load and branch per call site (CK_TRACE). On, a mutex, a clock read, a
 * format and one write(2) per event: seq, ts and file order agree, and a line is in the
 * kernel (page cache) when the call returns, so a kill -9 keeps every event emitted before
 * it. Not fsynced: a machine crash may lose the tail (no test needs that).
 * Threads: any.
 */
#ifndef CK_CHECKPOINT_TRACE_H
#define CK_CHECKPOINT_TRACE_H

#include <stdatomic.h>

/* -2: not looked at yet; -1: off; otherwise the trace file. Read by CK_TRACE only (relaxed:
 * a stale -2 only sends the caller through pthread_once in ck_trace_emit). */
extern _Atomic int ck_trace_fd_;

#define CK_TRACE(event, ...)                                                                \
  do {                                                                                      \
    if (atomic_load_explicit(&ck_trace_fd_, memory_order_relaxed) != -1)                    \
      ck_trace_emit((event), __VA_ARGS__);                                                  \
  } while (0)

void ck_trace_emit(const char *event, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The checkpoint directory (store root) and subtask this thread works for (dir NULL, task -1:
 * none). Cheap when tracing is off. */
void ck_trace_context(const char *dir, int task);

/* Whether tracing is on (looks at the environment the first time). */
int ck_trace_enabled(void);

#endif
