/* DESIGN: see lineage.h. */
#include "checkpoint/lineage.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/hash.h"
#include "checkpoint/fault.h"
#include "checkpoint/store.h"

uint64_t ck_lineage_fingerprint(const char *text) {
  return ck_hash64(text, strlen(text), 0x6a6f62ULL);
}

static int64_t latest_marked(const ck_store_t *st, const char *kind, int64_t max) {
  for (int64_t id = max; id > 0; id--)
    if (ck_store_marked(st, kind, id)) return id;
  return 0;
}

static int begin(const char *dir, const char *fingerprint_text, int parallelism, bool fresh,
                 int64_t below, int ntasks, ck_lineage_t *out, ck_error_t *err);

int ck_lineage_begin(const char *dir, const char *fingerprint_text, int parallelism,
                     bool fresh, int ntasks, ck_lineage_t *out, ck_error_t *err) {
  return begin(dir, fingerprint_text, parallelism, fresh, 0, ntasks, out, err);
}

int ck_lineage_begin_below(const char *dir, const char *fingerprint_text, int parallelism,
                           int64_t below, int ntasks, ck_lineage_t *out, ck_error_t *err) {
  return begin(dir, fingerprint_text, parallelism, false, below, ntasks, out, err);
}

static int begin(const char *dir, const char *fingerprint_text, int parallelism, bool fresh,
                 int64_t below, int ntasks, ck_lineage_t *out, ck_error_t *err) {
  memset(out, 0, sizeof *out);
  ck_store_t st;
  int rc = ck_store_open(dir, &st, err);
  if (rc) return rc;
  char want[128];
  snprintf(want, sizeof want, "%016" PRIx64 " parallelism=%d\n",
           ck_lineage_fingerprint(fingerprint_text), parallelism);
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
    sscanf(have.data, "%llx parallelism=%d", &h1, &p1);
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
  out->latest_completed = latest_marked(&st, "completed", max);
  out->latest_confirmed = latest_marked(&st, "confirmed", max);
  bool finished = ck_store_exists(&st, "_meta/clean-finish");
  if (fresh || !known || finished) {
    out->why = fresh ? "--fresh" : !known ? "no earlier run in this directory"
                                          : "the previous run finished its input";
    out->run_base = max;
    char base[32];
    int n = snprintf(base, sizeof base, "%lld\n", (long long)max);
    if ((rc = ck_store_write(&st, "_meta/run-base", base, (size_t)n, err))) goto done;
    if ((rc = ck_store_write(&st, "_meta/fingerprint", want, strlen(want), err))) goto done;
    if (finished) ck_store_remove(&st, "_meta/clean-finish");
    goto done;
  }
  ck_buf_t base;
  ck_buf_init(&base);
  if (ck_store_read(&st, "_meta/run-base", &base, err) == 0 && base.data)
    out->run_base = strtoll(base.data, NULL, 10);
  ck_buf_fini(&base);
  out->restore_id = ck_store_restore_point(&st, out->run_base, below, ntasks);
  out->why = below ? (out->restore_id ? "the newer checkpoint's output was not committed"
                                      : "no earlier checkpoint of this run is left")
             : out->restore_id ? "resuming its own last completed checkpoint"
                               : "no checkpoint of this run completed before it stopped";
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
  ck_store_close(&st);
  return rc;
}
