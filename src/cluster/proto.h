/*
 * DESIGN: the control protocol between coordinator, workers and the CLI.
 *
 * A versioned, length-prefixed binary protocol over TCP. Every frame:
 *   u32 length of the rest | u16 magic 'CK' | u8 version | u8 type | u64 epoch | payload
 * little-endian; the payload is a sequence of fields (u8, u32, i64, string = u32 length +
 * bytes) whose order each frame type fixes (the table below). A coordinator stamps every
 * frame with its epoch (raised each time a coordinator takes over its HA directory); a worker
 * drops frames of an epoch older than the newest it has seen, so nothing a deposed
 * coordinator sends can act. Frames from workers and the CLI carry epoch 0 (or the epoch they
 * answer).
 *
 * Reading is a resumable state machine (STYLE habit 5): ck_proto_conn_t keeps the bytes of a
 * partial frame; ck_proto_next returns a whole frame when one is there, "need more" otherwise,
 * and an error for a frame that cannot be ours (bad magic or version, absurd length).
 *
 * Threads: a connection's reader belongs to one thread; writes are serialised by the
 * connection's mutex, so several threads may send on it.
 */
#ifndef CK_CLUSTER_PROTO_H
#define CK_CLUSTER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "base/thread.h"

#define CK_PROTO_MAGIC 0x4B43u /* "CK" */
#define CK_PROTO_VERSION 2 /* 2: DEPLOY carries the serialised job graph, not the SQL */
#define CK_PROTO_HEADER 12            /* after the length word: magic, version, type, epoch */
#define CK_PROTO_MAX_FRAME (64u << 20) /* a SQL script and its metrics fit many times over */
/* What the coordinator reads from a connection that has not registered as a worker (the CLI,
 * or anyone): any frame up to CK_PROTO_MAX_UNREGISTERED bytes, a SUBMIT (the SQL) up to
 * CK_PROTO_MAX_SUBMIT. A longer announced length closes the connection before its bytes are
 * buffered. */
#define CK_PROTO_MAX_UNREGISTERED (64u << 10)
#define CK_PROTO_MAX_SUBMIT (4u << 20)

/* One table of frame types: name, code, direction and fields. */
#define CK_PROTO_TABLE(X)                                                                       \
  X(REGISTER, 1, "worker → coordinator: str id, u32 slots, str host, u32 http_port, u32 pid, " \
                 "str token")                                                                 \
  X(REGISTERED, 2, "coordinator → worker: u32 worker number, u32 heartbeat_ms")                 \
  X(HEARTBEAT, 3, "worker → coordinator: u32 n, n × (i64 deployment, str metrics JSON)")       \
  X(DEPLOY, 4, "coordinator → worker: i64 deployment, i64 job, str name, str plan (the "      \
               "serialised job graph, runtime/plan.h), str checkpoint dir, i64 restore_id, "    \
               "i64 ids_above, i64 fingerprint, u32 self, u32 nslots, nslots × u32 worker, "   \
               "then optionally str capture dir (\"\": the worker's), i64 capture records "    \
               "(0: the worker's)")                                                           \
  X(DEPLOYED, 5, "worker → coordinator: i64 deployment, u32 data port, i32 rc, str error")     \
  X(START, 6, "coordinator → worker: i64 deployment, u32 n, n × (str host, u32 data port)")    \
  X(TRIGGER, 7, "coordinator → worker: i64 deployment, i64 checkpoint, u8 final")               \
  X(ACK, 8, "worker → coordinator: i64 deployment, i64 checkpoint, u32 task")                   \
  X(SOURCE_DONE, 9, "worker → coordinator: i64 deployment, u32 task")                           \
  X(COMMIT, 10, "coordinator → worker: i64 deployment, i64 checkpoint, u8 final")               \
  X(COMMITTED, 11, "worker → coordinator: i64 deployment, i64 checkpoint, u32 task")            \
  X(CANCEL, 12, "coordinator → worker: i64 deployment")                                         \
  X(ENDED, 13, "worker → coordinator: i64 deployment, i32 rc, u8 retriable, u8 input_ended, "   \
               "i64 last_triggered, i64 records_in, i64 records_out, str error")               \
  X(SUBMIT, 14, "cli → coordinator: str token, str name, str sql, u32 parallelism, then "      \
                "optionally str capture dir, i64 capture records (the per-job options)")      \
  X(LIST, 15, "cli → coordinator: str token")                                                  \
  X(CANCEL_JOB, 16, "cli → coordinator: str token, i64 job")                                    \
  X(REPLY, 17, "coordinator → cli: i32 rc, i64 value, str text (JSON or an error message)")

typedef enum ck_proto_type {
#define CK_X_PROTO(name, code, doc) CK_PROTO_##name = code,
  CK_PROTO_TABLE(CK_X_PROTO)
#undef CK_X_PROTO
} ck_proto_type_t;

const char *ck_proto_type_name(int type);

/* ---- fields */
void ck_proto_put_u8(ck_buf_t *b, uint8_t v);
void ck_proto_put_u32(ck_buf_t *b, uint32_t v);
void ck_proto_put_i64(ck_buf_t *b, int64_t v);
void ck_proto_put_str(ck_buf_t *b, const char *s); /* NULL as "" */
void ck_proto_put_bytes(ck_buf_t *b, const void *p, size_t n); /* a str of n bytes, any bytes */

/* A frame's payload being read; a read past the end sets bad and yields zeros / "". */
typedef struct ck_proto_reader {
  const uint8_t *p;
  size_t n, off;
  bool bad;
} ck_proto_reader_t;
uint8_t ck_proto_u8(ck_proto_reader_t *r);
uint32_t ck_proto_u32(ck_proto_reader_t *r);
int64_t ck_proto_i64(ck_proto_reader_t *r);
/* A copy (ck_malloc'd, NUL-terminated; caller frees). */
char *ck_proto_str(ck_proto_reader_t *r);
/* The same, with the length the frame gave (a NUL inside makes it differ from strlen). */
char *ck_proto_strn(ck_proto_reader_t *r, size_t *len);

typedef struct ck_proto_frame {
  int type;
  uint64_t epoch;
  ck_proto_reader_t body;
} ck_proto_frame_t;

/* ---- connections */
typedef struct ck_proto_conn {
  int fd;
  ck_buf_t in;  /* bytes read and not yet consumed */
  size_t used;  /* consumed prefix of in */
  ck_mutex_t wmu;
  /* The longest frame ck_proto_next accepts (0: CK_PROTO_MAX_FRAME), and for SUBMIT frames
   * (0: the same as max_frame); checked on the announced length, before the body arrives. */
  uint32_t max_frame, max_submit;
} ck_proto_conn_t;

void ck_proto_conn_init(ck_proto_conn_t *c, int fd);
void ck_proto_conn_fini(ck_proto_conn_t *c); /* closes the fd */
/* Sends one frame (whole, under the write mutex). */
int ck_proto_send(ck_proto_conn_t *c, int type, uint64_t epoch, const ck_buf_t *payload,
                  ck_error_t *err);
/* Reads what the socket has (call when poll says readable): 0, or CK_EIO/CK_ECONNECT on
 * end of stream or error. */
int ck_proto_fill(ck_proto_conn_t *c, ck_error_t *err);
/* The next whole frame: 1 (valid until the next call), 0 need more, or CK_EPROTO. */
int ck_proto_next(ck_proto_conn_t *c, ck_proto_frame_t *f, ck_error_t *err);
/* Parses frames from bytes (for tests and the fuzzer-minded): same rules as ck_proto_next. */
int ck_proto_parse(const uint8_t *data, size_t len, size_t *used, ck_proto_frame_t *f,
                   ck_error_t *err);
/* The same with limits (0: CK_PROTO_MAX_FRAME; max_submit 0: max_frame). */
int ck_proto_parse_bounded(const uint8_t *data, size_t len, uint32_t max_frame,
                           uint32_t max_submit, size_t *used, ck_proto_frame_t *f,
                           ck_error_t *err);
/* Blocking request/answer with a deadline, for the CLI: sends, then reads one frame. */
int ck_proto_call(ck_proto_conn_t *c, int type, const ck_buf_t *payload, int timeout_ms,
                  ck_proto_frame_t *reply, ck_error_t *err);

/* ---- sockets */
int ck_sock_listen(const char *host, int port, int *fd, ck_error_t *err);
int ck_sock_port(int fd);
int ck_sock_connect(const char *host, int port, int timeout_ms, int *fd, ck_error_t *err);

#endif
