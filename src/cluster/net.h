/*
 * DESIGN: the data plane between worker processes — records for keyed (and any other
 * cross-process) edges travel over TCP with credit-based flow control.
 *
 * Links and credits. A link is one sending task → one receiving task (sender_task, dest_task,
 * both global task indexes). The receiver grants every link `credits` messages (its own
 * ck_net_start setting, announced to the sender in the handshake); a sender spends one credit
 * per message and blocks in ck_net_send when it has none left, so a slow receiver slows its
 * senders and nothing is ever dropped. When the receiver has consumed a message it calls
 * ck_net_consumed, and one CREDIT frame goes back to the sender. Hence at most `credits`
 * messages per link are ever delivered and not yet consumed: the receiving side sizes its
 * queues by that and the deliver callback never needs to block. A batch whose encoding is
 * larger than CK_NET_MAX_FRAME is split into several BATCH messages of consecutive rows, each
 * costing one credit; messages of one link arrive in the order they were sent.
 *
 * Connections. One TCP connection per (this process → peer host:port), opened on first use
 * (connect retried with backoff until the connect timeout, since workers start at slightly
 * different times), multiplexes all links to that peer. It begins with HELLO (our session) →
 * HELLO_OK (their credits) or REFUSE (another session). Data frames flow one way, CREDIT
 * frames the other way on the same connection. Every frame carries the session (a 64-bit
 * deployment id): a connection or frame of another session is refused and closed, with an
 * error in the log, so a restarted job never receives an old deployment's records. A
 * connection that breaks stays broken for the life of the ck_net_t: its in-flight messages
 * may be lost, so every later send to that peer fails (the job must restart), it is never
 * silently reopened.
 *
 * Threads.
 *   - One I/O thread per ck_net_t ("ck-net"): accepts connections, reads every socket
 *     (frames for local tasks, CREDIT frames for local senders) with a resumable frame parser,
 *     calls the deliver callback, and flushes CREDIT frames the socket could not take at once.
 *     It never blocks on anything but poll().
 *   - Sender threads (the callers of ck_net_send): connect, encode, wait for credit, write
 *     whole frames; writes to one connection are serialised by its write lock.
 *   - Consumer threads (the callers of ck_net_consumed, any thread): queue a CREDIT frame and
 *     try a non-blocking write; they never block on the network either.
 *
 * Ownership. ck_net_send takes its batch (freed once encoded, on every path). A delivered batch
 * belongs to the callback. A ck_net_link_t handed to the callback belongs to the net and stays
 * valid until ck_net_free, even after its connection closed (ck_net_consumed is then a no-op).
 * ck_net_free joins the I/O thread, closes every socket and frees everything, partial frames
 * included; no ck_net_send may be running when it is called (cancel senders first).
 */
#ifndef CK_CLUSTER_NET_H
#define CK_CLUSTER_NET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "runtime/batch.h"

typedef struct ck_net ck_net_t;
typedef struct ck_net_link ck_net_link_t; /* one sender task → one receiver task */

/* Message kinds a task sends (their order relative to batches is the protocol). */
enum { CK_NET_BATCH = 0, CK_NET_WATERMARK = 1, CK_NET_IDLE = 2, CK_NET_BARRIER = 3, CK_NET_END = 4 };

/* A batch is split so that each frame's payload stays within this (a single row larger than
 * it still travels, alone, in a frame of its own up to CK_NET_FRAME_LIMIT). */
#define CK_NET_MAX_FRAME (1u << 20)
/* Frames whose payload claims more than this are corrupt: the connection is closed. */
#define CK_NET_FRAME_LIMIT (256u << 20)
#define CK_NET_CONNECT_TIMEOUT_MS 5000

/* Called on the net's I/O thread for each message that arrived for a local task: dest_task
 * is the receiving task's global index, sender the sending subtask index, kind CK_NET_*,
 * value the watermark / barrier id, batch (owned by the callee; NULL for control kinds),
 * link the link to return the credit on once the receiver consumed the message.
 * The callback must not block (the receiver has space: a sender never has more in flight per
 * link than the credits) and must not call ck_net_send or ck_net_free; it may call
 * ck_net_consumed. */
typedef void (*ck_net_deliver_fn)(void *ctx, int dest_task, int sender, int kind, int64_t value,
                                  ck_batch_t *batch, ck_net_link_t *link);

/* Listens on bind_host:port (NULL or "" = every interface; port 0 = any free port) for peers
 * of deployment `session`; credits = messages a sender may have in flight per link toward us
 * (e.g. 8). Starts the I/O thread. */
int ck_net_start(const char *bind_host, int port, uint64_t session, int credits,
                 ck_net_deliver_fn fn, void *ctx, ck_net_t **out, ck_error_t *err);
/* The port we listen on (the one chosen when 0 was asked for). */
int ck_net_port(const ck_net_t *net);
/* How long ck_net_send keeps retrying to connect to a peer (default
 * CK_NET_CONNECT_TIMEOUT_MS); tests shorten it. Call before the first send. */
void ck_net_set_connect_timeout(ck_net_t *net, int timeout_ms);

/* Sends one message from local task sender_task (global index) / subtask `sender` to task
 * dest_task in the process listening at host:port. Takes ownership of batch (required for
 * CK_NET_BATCH, must be NULL otherwise). Blocks while the link has no credit — until credit
 * comes back, or CK_ECANCELLED once *cancel (may be NULL) is non-zero (polled at least every
 * 100 ms), or CK_ECONNECT when the peer cannot be reached within the connect timeout or the
 * connection to it broke; CK_EPROTO when the peer belongs to another session. Writing a
 * frame has no timeout of its own (a live peer always reads; credits bound what it holds), so
 * a peer that hangs without closing is left by cancelling. A send cancelled in the middle of
 * a frame breaks that connection; one cancelled while waiting for credit or connecting does
 * not. Calls for one link must come from one thread at a time (a task's own thread);
 * different links may send concurrently. */
int ck_net_send(ck_net_t *net, const char *host, int port, int sender_task, int sender,
                int dest_task, int kind, int64_t value, ck_batch_t *batch,
                const atomic_int *cancel, ck_error_t *err);

/* The receiver consumed a message that arrived on link: one credit goes back to its sender.
 * Any thread, never blocks; a no-op once the link's connection is closed. */
void ck_net_consumed(ck_net_t *net, ck_net_link_t *link);

/* Stops the I/O thread, closes connections, frees everything (pending undelivered state
 * included). No ck_net_send may be running. NULL is allowed. */
void ck_net_free(ck_net_t *net);

/* ---- the frame header, exposed for tests and tools ----
 * 40 bytes, little-endian: u32 magic "CKNF" · u8 version · u8 kind · u16 reserved (0)
 * · u64 session · i32 sender_task · i32 sender · i32 dest_task · u32 payload length
 * · i64 value; then the payload (a BATCH's ck_batch_wire encoding; empty for other kinds).
 * CREDIT frames name the link by (sender_task, dest_task) and carry the credits in value;
 * HELLO_OK carries the receiver's credits per link in value. */
#define CK_NET_MAGIC 0x464E4B43u /* "CKNF" */
#define CK_NET_VERSION 1
#define CK_NET_HDR_SIZE 40
enum { CK_NET_HELLO = 16, CK_NET_HELLO_OK = 17, CK_NET_REFUSE = 18, CK_NET_CREDIT = 19 };

typedef struct ck_net_hdr {
  uint32_t magic;
  uint8_t version, kind;
  uint16_t reserved;
  uint64_t session;
  int32_t sender_task, sender, dest_task;
  uint32_t payload_len;
  int64_t value;
} ck_net_hdr_t;

void ck_net_hdr_encode(const ck_net_hdr_t *hdr, uint8_t out[CK_NET_HDR_SIZE]);
void ck_net_hdr_decode(const uint8_t in[CK_NET_HDR_SIZE], ck_net_hdr_t *hdr);

#endif
