/*
 * DESIGN: see coord.h. The fault points before/after COMPLETED live here, so a test that kills
 * there exercises the embedded run and the cluster alike.
 */
#include "checkpoint/coord.h"

#include "base/log.h"
#include "base/time.h"
#include "checkpoint/fault.h"
#include "checkpoint/trace.h"

void ck_ckpt_coord_init(ck_ckpt_coord_t *c, const ck_store_t *store, int ntasks, int nsinks,
                        int nsources, int64_t ids_above, int64_t restore_id,
                        int64_t interval_ms, int64_t timeout_ms, int retain, int64_t now) {
  *c = (ck_ckpt_coord_t){0};
  c->store = store;
  c->ntasks = ntasks;
  c->nsinks = nsinks;
  c->nsources = nsources;
  c->next_id = ids_above;
  c->last_completed = c->last_confirmed = restore_id;
  c->interval_ms = interval_ms > 0 ? interval_ms : 1000;
  c->timeout_ms = timeout_ms > 0 ? timeout_ms : CK_CKPT_TIMEOUT_DEFAULT_MS;
  c->retain = retain > 0 ? retain : 3;
  c->next_at = now + c->interval_ms;
  CK_TRACE("deploy", "dir=%s restore=%lld ids_above=%lld ntasks=%d nsinks=%d nsources=%d", store->root, (long long)restore_id, (long long)ids_above, ntasks, nsinks, nsources);
}

int64_t ck_ckpt_coord_tick(ck_ckpt_coord_t *c, int64_t now, bool *final, int64_t *wake_at) {
  *final = false;
  ck_ckpt_coord_prune(c); /* a caller that did not prune after the last completion */
  if (c->pending && now - c->pending_since > c->timeout_ms) {
    CK_LOG_WARN("checkpoint", "checkpoint %lld did not complete within %lld ms: aborted",
                (long long)c->pending, (long long)c->timeout_ms);
    /* its sources have ended: no trigger reaches them again (ck_ckpt_coord_final_error) */
    if (c->pending == c->final_id) c->final_abandoned = c->final_id;
    CK_TRACE("abandoned", "dir=%s ckpt=%lld", c->store->root, (long long)c->pending);
    c->pending = 0;
    c->next_at = now + c->interval_ms;
  }
  /* a checkpoint slower than the interval is followed by a full interval, not at once */
  if (c->just_completed && now >= c->next_at) c->next_at = now + c->interval_ms;
  c->just_completed = false;
  bool all_done = c->sources_at_end >= c->nsources;
  /* the next deadline of its own; an event (an ack, a source done) is the caller's to wake on */
  *wake_at = c->pending ? c->pending_since + c->timeout_ms + 1 : now + CK_CKPT_COORD_IDLE_MS;
  if (all_done && c->final_id) return 0; /* the final checkpoint is out: nothing left to do */
  if (c->pending) return 0;
  if (now < c->next_at && !all_done) {
    *wake_at = c->next_at;
    return 0;
  }
  int64_t id = ++c->next_id;
  c->pending = id;
  c->pending_since = now;
  c->acks = 0;
  if (all_done) {
    c->final_id = id;
    *final = true;
  }
  c->next_at = now + c->interval_ms;
  *wake_at = now + c->timeout_ms + 1;
  CK_TRACE("trigger", "dir=%s ckpt=%lld final=%d", c->store->root, (long long)id, (int)*final);
  return id;
}

void ck_ckpt_coord_source_done(ck_ckpt_coord_t *c) {
  c->sources_at_end++;
  CK_TRACE("sources_done", "dir=%s count=%d of=%d", c->store->root, c->sources_at_end, c->nsources);
}

/* CONFIRMED-N: a store that cannot take it now costs nothing but the marker — without it a
 * restore of N takes N as completed and perhaps not committed, and the sinks redo N's commit,
 * which they can — so the failure is logged and the job runs on (1, err untouched). A second
 * writer of the marker is an error (CK_EEXISTS). */
static int mark_confirmed(ck_ckpt_coord_t *c, int64_t id, ck_error_t *err) {
  ck_error_t merr;
  ck_error_clear(&merr);
  int rc = ck_store_mark(c->store, "confirmed", id, &merr);
  if (rc == CK_EEXISTS) {
    *err = merr;
    return rc;
  }
  if (rc) {
    CK_LOG_WARN("checkpoint", "checkpoint %lld: its CONFIRMED marker could not be stored (%s); "
                "a restore of it redoes its commit", (long long)id, merr.message);
    return 1;
  }
  return 0;
}

int ck_ckpt_coord_ack(ck_ckpt_coord_t *c, int64_t id, ck_error_t *err) {
  CK_TRACE("ack", "dir=%s ckpt=%lld pending=%lld acks=%d of=%d", c->store->root, (long long)id, (long long)c->pending, c->acks + (c->pending == id), c->ntasks);
  if (c->pending != id || ++c->acks < c->ntasks) return 0;
  ck_fault(CK_FAULT_BEFORE_COMPLETED);
  ck_error_t merr;
  ck_error_clear(&merr);
  int rc = ck_store_mark(c->store, "completed", id, &merr);
  if (rc) CK_TRACE("marker_failed", "dir=%s kind=completed ckpt=%lld", c->store->root, (long long)id);
  if (rc == CK_EEXISTS) { /* another writer has this id: not a store outage */
    *err = merr;
    return rc;
  }
  if (rc) return ck_ckpt_coord_store_failed(c, id, &merr, ck_mono_ms(), err);
  ck_fault(CK_FAULT_AFTER_COMPLETED);
  c->failed_in_a_row = 0;
  c->last_completed = id;
  c->completed_count++;
  c->pending = 0;
  c->just_completed = true;
  c->confirm_id = id;
  c->commits = 0;
  CK_LOG_DEBUG("checkpoint", "checkpoint %lld completed at_us=%lld", (long long)id,
               (long long)(ck_mono_ns() / 1000));
  c->prune_due = id; /* after the sinks are told (ck_ckpt_coord_prune) */
  if (c->nsinks == 0 && !mark_confirmed(c, id, err)) c->last_confirmed = id;
  return 1;
}

int ck_ckpt_coord_store_failed(ck_ckpt_coord_t *c, int64_t id, const ck_error_t *why,
                               int64_t now, ck_error_t *err) {
  if (c->pending != id) return 0; /* already abandoned, or another subtask's failure of it */
  c->pending = 0;
  c->next_at = now + c->interval_ms;
  if (id == c->final_id) c->final_abandoned = id;
  c->failed_in_a_row++;
  /* to the protocol, an abandonment like a timeout's (formal/check-trace) */
  CK_TRACE("abandoned", "dir=%s ckpt=%lld", c->store->root, (long long)id);
  if (c->failed_in_a_row <= c->tolerable_failed) {
    CK_LOG_WARN("checkpoint", "checkpoint %lld aborted: it could not be stored (%d in a row, "
                "%d tolerated): %s", (long long)id, c->failed_in_a_row, c->tolerable_failed,
                why->message);
    return 0;
  }
  *err = *why;
  ck_error_detail(err, "%d checkpoint%s in a row could not be stored in %s (--tolerable-failed-"
                  "checkpoints is %d)", c->failed_in_a_row, c->failed_in_a_row == 1 ? "" : "s",
                  c->store->root, c->tolerable_failed);
  err->retriable = true; /* a restart rewinds to the last completed checkpoint */
  return why->code ? why->code : CK_EIO;
}

void ck_ckpt_coord_prune(ck_ckpt_coord_t *c) {
  int64_t id = c->prune_due;
  if (!id) return;
  c->prune_due = 0;
  /* keep the newest `retain`, and always the newest confirmed one: if this checkpoint's commit
   * is lost, the restore falls back to it */
  int64_t keep_from = id - c->retain + 1;
  if (c->last_confirmed && c->last_confirmed < keep_from) keep_from = c->last_confirmed;
  if (keep_from <= 1) return;
  /* markers go too (so _meta stays bounded), behind a durable id floor of `id` */
  ck_error_t perr;
  ck_error_clear(&perr);
  if (ck_store_prune(c->store, keep_from, id, c->ntasks, &perr))
    CK_LOG_WARN("checkpoint", "could not prune checkpoints below %lld: %s; they stay on disk "
                "until the next checkpoint", (long long)keep_from, perr.message);
}

int ck_ckpt_coord_committed(ck_ckpt_coord_t *c, int64_t id, ck_error_t *err) {
  CK_TRACE("commit_counted", "dir=%s ckpt=%lld confirm=%lld commits=%d of=%d", c->store->root, (long long)id, (long long)c->confirm_id, c->commits + (c->confirm_id == id), c->nsinks);
  if (c->confirm_id != id || ++c->commits != c->nsinks) return 0;
  int rc = mark_confirmed(c, id, err);
  if (rc < 0) return rc;
  if (!rc && id > c->last_confirmed) c->last_confirmed = id;
  return 1;
}

bool ck_ckpt_coord_final_done(const ck_ckpt_coord_t *c) {
  return c->final_id && c->last_completed >= c->final_id;
}

int ck_ckpt_coord_final_error(const ck_ckpt_coord_t *c, ck_error_t *err) {
  if (!c->final_abandoned) return 0;
  ck_error_set(err, CK_ETIMEOUT, "could not complete the final checkpoint %lld: it was not "
               "complete within %lld ms of its trigger", (long long)c->final_abandoned,
               (long long)c->timeout_ms);
  ck_error_detail(err, "Every source had reached the end of its input (or was stopped) and "
                  "ended after it took the checkpoint's barrier, so this deployment cannot "
                  "take it again, and without it the sinks cannot commit the job's last "
                  "output.");
  ck_error_hint(err, "A restart takes the final checkpoint again from the last completed "
                "one; if checkpoints are this slow, raise --checkpoint-timeout-ms.");
  err->retriable = true;
  return CK_ETIMEOUT;
}
