/*
 * DESIGN: the checkpoint coordinator — the decisions of DESIGN §4 in one place.
 *
 * One state machine decides when checkpoint N is triggered, when it is complete (every task's
 * snapshot durable → COMPLETED-N written durably, and only then may sinks commit), when it is
 * confirmed (every sink committed → CONFIRMED-N), when a checkpoint in flight is abandoned
 * (timeout), and which checkpoint is the final one (every source done reading). It does no
 * messaging: the embedded executor drives it from its coordinator thread and its subtasks'
 * acknowledgements, the cluster coordinator from control frames that carry the same events
 * from workers. Ids only grow: they start above `ids_above` (every id with a durable record).
 *
 * The final checkpoint is taken once per deployment: its sources end after they took its
 * barrier, so once it is abandoned (its timeout) no later trigger can reach them, and the
 * deployment cannot finish. ck_ckpt_coord_final_error then says so, and the caller ends the
 * deployment with that error; the job's restart policy (job/policy.h, CK_ETIMEOUT) takes the
 * final checkpoint again in a new deployment from the last completed one, or fails the job
 * with the error, which names the checkpoint. A final checkpoint that fails (a snapshot or a
 * marker not written) fails its deployment the same way, through the failing step's error.
 *
 * Threads: not thread-safe; every call under the caller's lock.
 */
#ifndef CK_CHECKPOINT_COORD_H
#define CK_CHECKPOINT_COORD_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "checkpoint/store.h"

/* *wake_at when no deadline is due (the final checkpoint is out): a long nap, not a poll. */
#define CK_CKPT_COORD_IDLE_MS 3600000
/* A checkpoint not complete this long after its trigger is abandoned (--checkpoint-timeout-ms). */
#define CK_CKPT_TIMEOUT_DEFAULT_MS 600000

typedef struct ck_ckpt_coord {
  const ck_store_t *store;
  int64_t interval_ms, timeout_ms;
  int retain;
  int ntasks, nsinks, nsources;
  int64_t next_id;         /* last id handed out */
  int64_t pending;         /* in flight, 0 when none */
  int64_t pending_since;
  int acks;
  int64_t next_at;         /* when the next periodic checkpoint is due */
  bool just_completed;     /* a checkpoint completed since the last tick */
  int64_t last_completed, completed_count, last_confirmed;
  int64_t confirm_id;      /* the completed checkpoint whose commits are being counted */
  int commits;
  int sources_at_end;      /* sources done reading */
  int64_t final_id;        /* the checkpoint taken once every source is done, 0 until then */
  int64_t final_abandoned; /* final_id, once it was abandoned: the deployment cannot finish */
  int64_t prune_due;       /* completed, its older checkpoints not yet pruned; 0: none */
  int tolerable_failed;    /* checkpoints in a row that could not be stored, tolerated */
  int failed_in_a_row;     /* such checkpoints since the last completed one */
} ck_ckpt_coord_t;

/* Checkpoint id could not be stored (a snapshot or its COMPLETED marker: why says what): it is
 * aborted at once — no marker, the next one triggered after an interval — and 0 returned while
 * no more than tolerable_failed checkpoints in a row failed so; past that, CK_EIO (retriable:
 * a restart rewinds) naming the count and why. A checkpoint no longer pending is ignored. */
int ck_ckpt_coord_store_failed(ck_ckpt_coord_t *c, int64_t id, const ck_error_t *why,
                               int64_t now, ck_error_t *err);

/* restore_id: the checkpoint the job restored (completed and confirmed as far as it knows). */
void ck_ckpt_coord_init(ck_ckpt_coord_t *c, const ck_store_t *store, int ntasks, int nsinks,
                        int nsources, int64_t ids_above, int64_t restore_id,
                        int64_t interval_ms, int64_t timeout_ms, int retain, int64_t now);

/* What to do now: returns the id of a checkpoint to trigger (and *final when it is the final
 * one), or 0. A checkpoint in flight past its timeout is abandoned here (logged). *wake_at is
 * when to call again at the latest if nothing else happens: the next periodic checkpoint, or
 * the timeout of the one in flight (not a poll: after an ack that completes a checkpoint or a
 * source done, the caller calls again at once). */
int64_t ck_ckpt_coord_tick(ck_ckpt_coord_t *c, int64_t now, bool *final, int64_t *wake_at);

/* A source task is done reading (end of input, or stopped): once all are, the next trigger is
 * the final checkpoint. */
void ck_ckpt_coord_source_done(ck_ckpt_coord_t *c);

/* Task snapshot of `id` is durable. Returns 1 when that completed the checkpoint (COMPLETED-id
 * is durable: tell every sink to commit it, then call ck_ckpt_coord_prune), 0 when more acks
 * are due or the ack is for a checkpoint no longer pending, or an error (the marker could not
 * be written: the checkpoint fails). */
int ck_ckpt_coord_ack(ck_ckpt_coord_t *c, int64_t id, ck_error_t *err);

/* After a completion, once the sinks are told: removes the checkpoints and markers the
 * retention no longer keeps (behind a durable id floor; a failure is logged, and the next
 * completion tries again). The next tick does it if the caller did not. Pruning comes after
 * the commit messages, so a sink's commit does not wait for its fsyncs. */
void ck_ckpt_coord_prune(ck_ckpt_coord_t *c);

/* A sink committed `id`. Returns 1 when every sink has (CONFIRMED-id written), 0, or an error. */
int ck_ckpt_coord_committed(ck_ckpt_coord_t *c, int64_t id, ck_error_t *err);

/* true once the final checkpoint completed (the job may end). */
bool ck_ckpt_coord_final_done(const ck_ckpt_coord_t *c);

/* 0 while the deployment can still finish; CK_ETIMEOUT (retriable, err filled: "could not
 * complete the final checkpoint N: …") once its final checkpoint was abandoned. */
int ck_ckpt_coord_final_error(const ck_ckpt_coord_t *c, ck_error_t *err);

#endif
