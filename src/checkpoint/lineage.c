/* DESIGN: see lineage.h. */
#include "checkpoint/lineage.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/hash.h"
#include "checkpoint/fault.h"
#include "checkpoint/store.h"
#include "checkpoint/trace.h"

uint64_t ck_lineage_fingerprint(const char *text) {
  return ck_hash64(text, strlen(text), 0x6a6f62ULL);
}

static int begin(const char *dir, const ck_lineage_opts_t *o, ck_lineage_t *out,
                 ck_error_t *err);

int ck_lineage_start(const char *dir, const ck_lineage_opts_t *opts, ck_lineage_t *out,
                     ck_error_t *err) {
  return begin(dir, opts, out, err);
}

int ck_lineage_begin(const char *dir, const char *fingerprint_text, int parallelism,
                     bool fresh, int ntasks, ck_lineage_t *out, ck_error_t *err) {
  ck_lineage_opts_t o = {fingerprint_text, parallelism, fresh, 0, ntasks,
                         CK_LINEAGE_SINKS_UNKNOWN};
  return begin(dir, &o, out, err);
}

/* Whether every snapshot of checkpoint id passes ck_snap_check; the first problem in *why. */
static bool restorable(const ck_store_t *st, int64_t id, uint64_t fp, int ntasks,
                       ck_error_t *why) {
  for (int t = 0; t < ntasks; t++)
    if (ck_snap_check(st, t, id, fp, why)) return false;
  return true;
}

/* The restore point among the completed checkpoints above run_base (see lineage.h). */
static int choose(const char *dir, const ck_store_t *st, const ck_lineage_opts_t *o,
                  ck_lineage_t *out, ck_error_t *err) {
  uint64_t fp = ck_lineage_fingerprint(o->fingerprint_text);
  int64_t *ids;
  int n = ck_store_completed_ids(st, out->run_base, o->below, &ids);
  int lrc = ck_store_listings_ok(st, err);
  if (lrc) {
    ck_free(ids);
    return lrc;
  }
  if (n == 0) {
    out->why = o->below ? "no earlier checkpoint of this run is left"
                        : "no checkpoint of this run completed before it stopped";
    return 0;
  }
  ck_error_t newest;
  ck_error_clear(&newest);
  int64_t chosen = 0;
  int i; /* ends one past the checkpoint chosen: i - 1 newer ones were passed over */
  for (i = 0; i < n && !chosen; i++) {
    ck_error_t why;
    ck_error_clear(&why);
    if (restorable(st, ids[i], fp, o->ntasks, i == 0 ? &newest : &why)) chosen = ids[i];
    else CK_TRACE("restore_skipped", "dir=%s ckpt=%lld", st->root, (long long)ids[i]);
    if (!chosen && i > 0)
      CK_LOG_DEBUG("checkpoint", "checkpoint %lld cannot be restored either: %s",
                   (long long)ids[i], why.message);
  }
  int64_t top = ids[0];
  bool confirmed = false; /* a checkpoint above the one chosen had its output committed */
  for (int k = 0; k < n && ids[k] != chosen; k++)
    if (ck_store_marked(st, "confirmed", ids[k])) confirmed = true;
  ck_free(ids);
  int rc = 0;
  if (chosen == top) {
    out->restore_id = chosen;
    out->why = o->below ? "the newer checkpoint's output was not committed"
                        : "resuming its own last completed checkpoint";
  } else if (!chosen) {
    rc = ck_error_set(err, CK_ESTATE, "could not restore checkpoint %lld from '%s': %s",
                      (long long)top, dir, newest.message);
    ck_error_detail(err, "no completed checkpoint of this run (above %lld) can be restored, so "
                    "the job would start over and rewrite output those checkpoints already "
                    "committed", (long long)out->run_base);
    ck_error_hint(err, "put the missing or damaged files back (from a copy of the checkpoint "
                  "directory), or run with --fresh to start over, accepting that every sink's "
                  "output is written again from the beginning (a file sink truncates its file)");
  } else if (o->rigid_sink) {
    rc = ck_error_set(err, CK_ESTATE, "could not restore checkpoint %lld from '%s': %s",
                      (long long)top, dir, newest.message);
    ck_error_detail(err, "checkpoint %lld can be restored, but sink '%s' cannot take back "
                    "output it committed, and the output after checkpoint %lld %s: restoring "
                    "%lld would write those rows to it a second time", (long long)chosen,
                    o->rigid_sink, (long long)chosen,
                    confirmed ? "was committed (a CONFIRMED marker says so)"
                              : "may have been committed (a later checkpoint completed, and "
                                "nothing on record says its commit did not happen)",
                    (long long)chosen);
    ck_error_hint(err, "put the damaged file back from a copy of the checkpoint directory; or, "
                  "to accept that the output after checkpoint %lld is written again, delete "
                  "'%s/v1/_meta/completed-%lld'%s and run again", (long long)chosen, dir,
                  (long long)top, i > 2 ? " and the other completed markers above it" : "");
  } else {
    out->restore_id = chosen;
    CK_LOG_WARN("checkpoint", "checkpoint %lld cannot be restored (%s); fell back to checkpoint "
                "%lld, the newest that can: every sink of this job can take the output after it "
                "again (at-least-once sinks write it again, exactly-once ones first take back "
                "what they committed after it)", (long long)top, newest.message,
                (long long)chosen);
    snprintf(out->why_buf, sizeof out->why_buf, "fell back from checkpoint %lld, which cannot "
             "be restored", (long long)top);
    out->why = out->why_buf;
  }
  return rc;
}

static int begin(const char *dir, const ck_lineage_opts_t *o, ck_lineage_t *out,
                 ck_error_t *err) {
  memset(out, 0, sizeof *out);
  ck_store_t st;
  int rc = ck_store_open(dir, &st, err);
  if (rc) return rc;
  bool fresh = o->fresh;
  char want[128];
  snprintf(want, sizeof want, "%016" PRIx64 " parallelism=%d\n",
           ck_lineage_fingerprint(o->fingerprint_text), o->parallelism);
  ck_buf_t have;
  ck_buf_init(&have);
  int r = ck_store_read(&st, "_meta/fingerprint", &have, err);
  if (r && r != CK_ENOTFOUND) {
    rc = r;
    goto done;
  }
  bool known = r == 0;
  if (known && strcmp(have.data ? have.data : "", want) != 0 && !fresh) {
    unsigned long long h1 = 0, h2 = 0;
    int p1 = 0, p2 = 0;
    sscanf(have.data ? have.data : "", "%llx parallelism=%d", &h1, &p1);
    sscanf(want, "%llx parallelism=%d", &h2, &p2);
    if (h1 == h2) {
      rc = ck_error_set(err, CK_ESTATE,
                        "the checkpoints in '%s' were taken at parallelism %d, not %d", dir, p1, p2);
      ck_error_hint(err, "run with --parallelism %d to resume them, or --fresh to start over", p1);
    } else {
      rc = ck_error_set(err, CK_ESTATE, "checkpoint directory '%s' belongs to another job", dir);
      ck_error_detail(err, "its checkpoints were taken by a different pipeline (job graph fingerprint %016llx, this one %016llx)", h1, h2);
      ck_error_hint(err, "point this job at its own --checkpoint-dir, or pass --fresh to discard those checkpoints and start over");
    }
    goto done;
  }
  int64_t max = ck_store_max_id(&st);
  out->ids_above = max;
  out->latest_completed = ck_store_latest(&st, "completed");
  out->latest_confirmed = ck_store_latest(&st, "confirmed");
  bool finished = ck_store_exists(&st, "_meta/clean-finish");
  if ((rc = ck_store_listings_ok(&st, err))) goto done;
  if (fresh || !known || finished) {
    out->why = fresh ? "--fresh" : !known ? "no earlier run in this directory"
                                          : "the previous run finished its input";
    out->run_base = max;
    char base[32];
    int n = snprintf(base, sizeof base, "%lld\n", (long long)max);
    if ((rc = ck_store_write(&st, "_meta/run-base", base, (size_t)n, err))) goto done;
    if ((rc = ck_store_write(&st, "_meta/fingerprint", want, strlen(want), err))) goto done;
    if (finished) ck_store_remove(&st, "_meta/clean-finish");
    CK_TRACE("restore_point", "dir=%s restore=0 run_base=%lld floor=%lld below=%lld fresh=1 reason=%s ntasks=%d", st.root, (long long)max, (long long)max, (long long)o->below, fresh ? "fresh_flag" : !known ? "new_dir" : "clean_finish", o->ntasks);
    goto done;
  }
  ck_buf_t base;
  ck_buf_init(&base);
  if (ck_store_read(&st, "_meta/run-base", &base, err) == 0 && base.data)
    out->run_base = strtoll(base.data, NULL, 10);
  ck_buf_fini(&base);
  rc = choose(dir, &st, o, out, err);
  CK_TRACE(rc ? "restore_refused" : "restore_point", "dir=%s restore=%lld run_base=%lld floor=%lld below=%lld fresh=0 reason=resume ntasks=%d", st.root, (long long)out->restore_id, (long long)out->run_base, (long long)max, (long long)o->below, o->ntasks);
  if (rc) goto done;
  if (out->restore_id) ck_fault(CK_FAULT_BEFORE_RESTORE);
done:
  ck_buf_fini(&have);
  ck_store_close(&st);
  return rc;
}

int ck_lineage_clean_finish(const char *dir, ck_error_t *err) {
  ck_store_t st;
  int rc = ck_store_open(dir, &st, err);
  if (rc) return rc;
  rc = ck_store_write(&st, "_meta/clean-finish", "", 0, err);
  if (!rc) CK_TRACE("clean_finish", "dir=%s", st.root);
  ck_store_close(&st);
  return rc;
}
