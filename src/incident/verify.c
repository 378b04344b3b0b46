/*
 * DESIGN: `clink incident verify BUNDLE` (bundle.h; docs/incidents.md has every check).
 *
 * Offline and read-only: reads the bundle's files and nothing else, opens no connection, and
 * writes nothing inside the bundle (a replay's emissions go to a scratch directory the CLI's
 * replay hook makes and removes). Each check ends pass, fail or unavailable; the result is the
 * worst of them (fail, then unavailable), so missing or truncated evidence is never a pass.
 *   bundle.manifest        manifest.json is a bundle manifest of a known version
 *   bundle.integrity       every listed file has its size and SHA-256; no unlisted file
 *   bundle.completeness    nothing the collector looked for is missing
 *   bundle.markers         every confirmed checkpoint completed
 *   bundle.restore         each run of a sink subtask restored a completed checkpoint (the
 *                          newest its earlier runs completed) or none, and its first interval
 *                          starts from it
 *   bundle.participants    every completed checkpoint with evidence has it from every sink
 *                          subtask, all of one run
 *   bundle.checkpoint_ids  along each sink subtask: barriers increase, and no run numbers an id
 *                          after another run began (never reused across restores)
 * A run is one runner attempt; on a cluster each worker's executor has its own, so these rules
 * hold per sink subtask.
 *   replay.epochs          every captured epoch of every calc and aggregate replays with
 *                          --verify (sinks' captures are not replayed)
 *   protocol.trace         (only when the bundle holds a protocol trace) formal/check-trace
 *                          explains every event by a step the model allows
 * Threads: the command's one thread.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "capture/capture.h"
#include "checkpoint/store.h"
#include "incident/bundle.h"
#include "incident/bundle_int.h"

enum { PASS = 0, FAIL = 1, UNAVAILABLE = 2 };

typedef struct check {
  const char *name;
  int status;
  ck_buf_t detail;
} check_t;

#define NCHECKS 9

typedef struct verifier {
  ck_bundle_t b;
  check_t checks[NCHECKS];
  int nchecks;
  ck_bundle_replay_fn replay;
  ck_bundle_trace_fn trace;
} verifier_t;

static check_t *begin(verifier_t *v, const char *name) {
  check_t *c = &v->checks[v->nchecks++];
  c->name = name;
  c->status = PASS;
  ck_buf_init(&c->detail);
  return c;
}

/* Records a finding: the status only worsens; the detail keeps the first few findings. */
static void note(check_t *c, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(check_t *c, int status, const char *fmt, ...) {
  if (status == FAIL || (status == UNAVAILABLE && c->status == PASS)) c->status = status;
  if (c->detail.len > 1500) return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (c->detail.len) ck_buf_puts(&c->detail, "; ");
  ck_buf_puts(&c->detail, line);
}

/* ---------------------------------------------------------------- integrity */

static void walk(verifier_t *v, const char *rel, check_t *c, int *extra) {
  char dir[4096];
  ck_bundle_fmt(dir, sizeof dir, "%s%s%s", v->b.dir, rel[0] ? "/" : "", rel);
  char **names;
  int n = ck_bundle_list(dir, &v->b.arena, &names);
  for (int i = 0; i < n; i++) {
    char r[4096], full[8200];
    ck_bundle_fmt(r, sizeof r, "%s%s%s", rel, rel[0] ? "/" : "", names[i]);
    ck_bundle_fmt(full, sizeof full, "%s/%s", v->b.dir, r);
    if (ck_bundle_is_dir(full)) {
      walk(v, r, c, extra);
    } else if (strcmp(r, CK_BUNDLE_MANIFEST) && !ck_bundle_file_entry(&v->b, r)) {
      (*extra)++;
      note(c, FAIL, "'%s' is in the bundle and not in its manifest", r);
    }
  }
}

static void check_integrity(verifier_t *v) {
  check_t *c = begin(v, "bundle.integrity");
  const ck_json_t *files = ck_json_get(v->b.manifest, "files");
  int ok = 0, bad = 0, extra = 0;
  ck_buf_t data;
  ck_buf_init(&data);
  for (int i = 0; files && i < files->n; i++) {
    const char *p = ck_json_get_str(files->items[i], "path");
    if (!p || strstr(p, "..") || p[0] == '/') {
      note(c, FAIL, "the manifest lists a path outside the bundle ('%s')", p ? p : "");
      bad++;
      continue;
    }
    ck_error_t err;
    ck_buf_reset(&data);
    int rc = ck_bundle_read_checked(&v->b, p, &data, &err);
    if (rc == CK_ENOTFOUND) note(c, FAIL, "'%s' is listed and missing", p), bad++;
    else if (rc) note(c, FAIL, "'%s' does not match its SHA-256 or size in the manifest", p), bad++;
    else ok++;
  }
  ck_buf_fini(&data);
  walk(v, "", c, &extra);
  if (c->status == PASS)
    note(c, PASS, "%d files match their size and SHA-256; no other file", ok);
  else
    note(c, FAIL, "%d of %d listed files bad, %d unlisted", bad, ok + bad, extra);
}

/* ---------------------------------------------------------------- evidence rules */

static const ck_json_t *arr(const verifier_t *v, const char *a, const char *b) {
  const ck_json_t *x = ck_json_get(v->b.manifest, a);
  return b ? ck_json_get(x, b) : x;
}

static int64_t min_id(const ck_json_t *ids) {
  int64_t m = INT64_MAX, x;
  for (int i = 0; ids && i < ids->n; i++)
    if (ck_json_int(ids->items[i], &x) && x < m) m = x;
  return m;
}

static void check_completeness(verifier_t *v) {
  check_t *c = begin(v, "bundle.completeness");
  const ck_json_t *m = arr(v, "missing", NULL);
  for (int i = 0; m && i < m->n; i++)
    note(c, UNAVAILABLE, "no %s '%s': %s", ck_json_get_str(m->items[i], "what"),
         ck_json_get_str(m->items[i], "file"), ck_json_get_str(m->items[i], "why"));
  if (c->status == PASS) note(c, PASS, "the collector found everything the completed checkpoints imply");
}

static void check_markers(verifier_t *v) {
  check_t *c = begin(v, "bundle.markers");
  const ck_json_t *done = arr(v, "checkpoints", "completed"), *conf = arr(v, "checkpoints", "confirmed");
  int64_t x;
  for (int i = 0; conf && i < conf->n; i++)
    if (ck_json_int(conf->items[i], &x) && !ck_bundle_has_id(done, x))
      note(c, FAIL, "checkpoint %lld is confirmed and has no completed marker", (long long)x);
  if (!done || !done->n) note(c, UNAVAILABLE, "the bundle holds no completed checkpoint");
  /* retention pruned markers (the id floor) below intervals the evidence still holds: whether
   * those checkpoints completed is not known, nor where a scope bounded by one starts */
  const ck_json_t *ivs = ck_json_get(v->b.manifest, "intervals");
  int64_t lo = done && done->n ? min_id(done) : 0, first = 0, last = 0;
  if (ck_json_get_int(arr(v, "checkpoints", NULL), "id_floor", 0) > 0)
    for (int i = 0; ivs && i < ivs->n; i++) {
      int64_t id = ck_json_get_int(ivs->items[i], "checkpoint", 0);
      if (id <= 0 || id >= lo) continue;
      if (!first || id < first) first = id;
      if (id > last) last = id;
    }
  if (first)
    note(c, UNAVAILABLE, "the markers of checkpoints %lld … %lld, which have sink evidence, were "
         "pruned by retention (id floor %lld): whether they completed is not known, and a scope "
         "bounded by one is unavailable", (long long)first, (long long)last,
         (long long)ck_json_get_int(arr(v, "checkpoints", NULL), "id_floor", 0));
  if (c->status == PASS)
    note(c, PASS, "%d completed, %d confirmed, every confirmed one completed", done->n,
         conf ? conf->n : 0);
}

/* Completed (1), not (0), or unknown (-1: below the oldest marker, which retention pruned). */
static int completed(const verifier_t *v, int64_t id) {
  const ck_json_t *done = arr(v, "checkpoints", "completed");
  if (ck_bundle_has_id(done, id)) return 1;
  if (id < min_id(done) && ck_json_get_int(arr(v, "checkpoints", NULL), "id_floor", 0) > 0) return -1;
  return 0;
}

/* One sink subtask's interval, from the manifest, with its run's restore point. */
typedef struct siv {
  int64_t op, subtask, ckpt, prev, restored;
  const char *attempt;
} siv_t;

static int cmp_siv(const void *a, const void *b) {
  const siv_t *x = a, *y = b;
  if (x->op != y->op) return x->op < y->op ? -1 : 1;
  if (x->subtask != y->subtask) return x->subtask < y->subtask ? -1 : 1;
  return x->ckpt < y->ckpt ? -1 : x->ckpt > y->ckpt;
}

/* The manifest's intervals sorted by sink subtask, then checkpoint: *out (ck_free it). An
 * attempt is one runner's execution — on a cluster, each worker's executor has its own, so the
 * rules below hold per sink subtask, along its own attempts. */
static int load_sivs(verifier_t *v, siv_t **out) {
  const ck_json_t *ivs = arr(v, "intervals", NULL), *runs = arr(v, "runs", NULL);
  int n = ivs ? ivs->n : 0;
  siv_t *x = ck_calloc((size_t)(n ? n : 1), sizeof *x);
  for (int i = 0; i < n; i++) {
    const ck_json_t *iv = ivs->items[i];
    x[i] = (siv_t){ck_json_get_int(iv, "op", -1), ck_json_get_int(iv, "subtask", -1),
                   ck_json_get_int(iv, "checkpoint", 0), ck_json_get_int(iv, "previous_barrier", 0),
                   0, ck_json_get_str(iv, "attempt")};
    if (!x[i].attempt) x[i].attempt = "";
    for (int r = 0; runs && r < runs->n; r++) {
      const char *a = ck_json_get_str(runs->items[r], "attempt");
      if (a && strcmp(a, x[i].attempt) == 0)
        x[i].restored = ck_json_get_int(runs->items[r], "restored_from", 0);
    }
  }
  if (n) qsort(x, (size_t)n, sizeof *x, cmp_siv);
  *out = x;
  return n;
}

static void check_restore(verifier_t *v) {
  check_t *c = begin(v, "bundle.restore");
  siv_t *x;
  int n = load_sivs(v, &x), runs = 0;
  for (int i = 0; i < n; i++) {
    bool first_of_subtask = i == 0 || x[i].op != x[i - 1].op || x[i].subtask != x[i - 1].subtask;
    if (!first_of_subtask && strcmp(x[i].attempt, x[i - 1].attempt) == 0) continue;
    runs++; /* x[i] is an attempt's first interval on this subtask */
    int64_t from = x[i].restored;
    if (from > 0) {
      int k = completed(v, from);
      if (k == 0) note(c, FAIL, "run %s restored checkpoint %lld, which never completed",
                       x[i].attempt, (long long)from);
      else if (k < 0) note(c, UNAVAILABLE, "run %s restored checkpoint %lld, whose marker "
                           "retention pruned", x[i].attempt, (long long)from);
    }
    if (x[i].prev != from && !(first_of_subtask && x[i].prev > from))
      note(c, FAIL, "run %s restored checkpoint %lld, and sink op %lld subtask %lld's first "
           "interval (checkpoint %lld) starts at barrier %lld", x[i].attempt, (long long)from,
           (long long)x[i].op, (long long)x[i].subtask, (long long)x[i].ckpt, (long long)x[i].prev);
    /* the newest completed checkpoint the earlier attempts of this subtask reached */
    for (int j = i - 1; j >= 0 && x[j].op == x[i].op && x[j].subtask == x[i].subtask; j--)
      if (x[j].ckpt > from && completed(v, x[j].ckpt) == 1) {
        note(c, UNAVAILABLE, "run %s restored checkpoint %lld although checkpoint %lld had "
             "completed: the fallback the restore rule takes when a snapshot is damaged, which "
             "the bundle cannot tell", x[i].attempt, (long long)from, (long long)x[j].ckpt);
        break;
      }
  }
  if (!n) note(c, UNAVAILABLE, "no sink evidence: no run to check");
  if (c->status == PASS)
    note(c, PASS, "%d run(s) of sink subtasks; each started from a completed checkpoint or "
         "fresh, its first interval at its restore point", runs);
  ck_free(x);
}

static int sink_parallelism(verifier_t *v, int64_t op) {
  char rel[128];
  ck_bundle_fmt(rel, sizeof rel, "%s/op-%lld/op.json", CK_BUNDLE_CAPTURE, (long long)op);
  ck_buf_t t;
  ck_buf_init(&t);
  ck_error_t err;
  ck_json_t *j = NULL;
  int p = 0;
  if (!ck_bundle_read_checked(&v->b, rel, &t, &err) &&
      !ck_json_parse(t.data ? t.data : "", t.len, &v->b.arena, &j, &err)) {
    const char *k = ck_json_get_str(j, "kind");
    if (k && strcmp(k, "sink") == 0) p = (int)ck_json_get_int(j, "parallelism", 0);
  }
  ck_buf_fini(&t);
  return p;
}

static void check_participants(verifier_t *v) {
  check_t *c = begin(v, "bundle.participants");
  const ck_json_t *done = arr(v, "checkpoints", "completed");
  siv_t *x;
  int n = load_sivs(v, &x), checked = 0;
  int64_t ops[64];
  int nops = 0;
  for (int i = 0; i < n; i++)
    if ((!nops || ops[nops - 1] != x[i].op) && nops < 64) ops[nops++] = x[i].op;
  for (int d = 0; done && d < done->n; d++) {
    int64_t id;
    if (!ck_json_int(done->items[d], &id)) continue;
    const siv_t *any = NULL;
    for (int i = 0; i < n && !any; i++)
      if (x[i].ckpt == id) any = &x[i];
    if (!any) continue; /* no evidence of it at all: before the recorder, or not collected */
    checked++;
    for (int k = 0; k < nops; k++) {
      int par = sink_parallelism(v, ops[k]);
      if (par <= 0) {
        note(c, UNAVAILABLE, "sink op %lld's op.json is not in the bundle", (long long)ops[k]);
        continue;
      }
      for (int s = 0; s < par; s++) {
        const siv_t *iv = NULL;
        for (int i = 0; i < n && !iv; i++)
          if (x[i].ckpt == id && x[i].op == ops[k] && x[i].subtask == s) iv = &x[i];
        if (!iv)
          note(c, UNAVAILABLE, "checkpoint %lld completed and sink op %lld subtask %d has no "
               "evidence of it", (long long)id, (long long)ops[k], s);
        else if (iv->restored != any->restored || iv->prev != any->prev)
          note(c, FAIL, "checkpoint %lld's evidence comes from two runs: sink op %lld subtask "
               "%lld restored %lld with the barrier before it %lld, sink op %lld subtask %d "
               "restored %lld with %lld", (long long)id, (long long)any->op,
               (long long)any->subtask, (long long)any->restored, (long long)any->prev,
               (long long)ops[k], s, (long long)iv->restored, (long long)iv->prev);
      }
    }
  }
  if (!checked && c->status == PASS)
    note(c, UNAVAILABLE, "no completed checkpoint has sink evidence in the bundle");
  if (c->status == PASS)
    note(c, PASS, "%d completed checkpoint(s): evidence from every sink subtask, of one run",
         checked);
  ck_free(x);
}

static void check_ids(verifier_t *v) {
  check_t *c = begin(v, "bundle.checkpoint_ids");
  siv_t *x;
  int n = load_sivs(v, &x), subtasks = 0;
  for (int i = 0; i < n; i++) {
    bool first = i == 0 || x[i].op != x[i - 1].op || x[i].subtask != x[i - 1].subtask;
    subtasks += first;
    if (x[i].prev >= x[i].ckpt)
      note(c, FAIL, "sink op %lld subtask %lld: checkpoint %lld's previous barrier is %lld, not "
           "below it", (long long)x[i].op, (long long)x[i].subtask, (long long)x[i].ckpt,
           (long long)x[i].prev);
    if (first) continue;
    if (strcmp(x[i].attempt, x[i - 1].attempt) == 0) {
      if (x[i].prev < x[i - 1].ckpt)
        note(c, FAIL, "sink op %lld subtask %lld: checkpoint %lld's previous barrier %lld is "
             "below the run's checkpoint %lld before it", (long long)x[i].op,
             (long long)x[i].subtask, (long long)x[i].ckpt, (long long)x[i].prev,
             (long long)x[i - 1].ckpt);
      continue;
    }
    /* a run begins on this subtask: in checkpoint order it must not be one seen before (its
     * ids would then interleave with another run's: an id at or below one already used) */
    for (int k = i - 2; k >= 0 && x[k].op == x[i].op && x[k].subtask == x[i].subtask; k--)
      if (strcmp(x[k].attempt, x[i].attempt) == 0) {
        note(c, FAIL, "sink op %lld subtask %lld: run %s numbered checkpoint %lld, and run %s "
             "had numbered %lld in between: ids reused across a restore", (long long)x[i].op,
             (long long)x[i].subtask, x[i].attempt, (long long)x[k].ckpt, x[i - 1].attempt,
             (long long)x[i - 1].ckpt);
        break;
      }
  }
  if (!n) note(c, UNAVAILABLE, "no sink evidence: no checkpoint id to check");
  if (c->status == PASS)
    note(c, PASS, "%d interval(s) of %d sink subtask(s): no id reused, each run above the ones "
         "before, barriers increasing", n, subtasks);
  ck_free(x);
}

/* ---------------------------------------------------------------- replay */

static void check_replay(verifier_t *v) {
  check_t *c = begin(v, "replay.epochs");
  const ck_json_t *col = ck_json_get(v->b.manifest, "collected");
  if (!ck_json_get_bool(col, "include_captures", false)) {
    note(c, UNAVAILABLE, "the bundle holds no captures (collect with --include-captures)");
    return;
  }
  char capdir[4096], ckdir[4096];
  ck_bundle_fmt(capdir, sizeof capdir, "%s/%s", v->b.dir, CK_BUNDLE_CAPTURE);
  ck_bundle_fmt(ckdir, sizeof ckdir, "%s/%s", v->b.dir, CK_BUNDLE_CHECKPOINTS);
  const ck_json_t *files = ck_json_get(v->b.manifest, "files");
  int replayed = 0, passed = 0, skipped = 0;
  ck_buf_t data, msg;
  ck_buf_init(&data);
  ck_buf_init(&msg);
  for (int i = 0; files && i < files->n; i++) {
    const char *p = ck_json_get_str(files->items[i], "path");
    int op, st;
    char ep[32];
    if (!p || sscanf(p, CK_BUNDLE_CAPTURE "/op-%d/subtask-%d/epoch-%31[^.].cap", &op, &st, ep) != 3)
      continue;
    size_t pl = strlen(p);
    if (pl < 4 || strcmp(p + pl - 4, ".cap")) continue;
    char opjson[128];
    ck_bundle_fmt(opjson, sizeof opjson, "%s/op-%d/op.json", CK_BUNDLE_CAPTURE, op);
    ck_buf_reset(&data);
    ck_error_t err;
    ck_error_clear(&err);
    ck_json_t *j = NULL;
    const char *kind = NULL;
    if (!ck_bundle_read_checked(&v->b, opjson, &data, &err) &&
        !ck_json_parse(data.data ? data.data : "", data.len, &v->b.arena, &j, &err))
      kind = ck_json_get_str(j, "kind");
    if (!kind) {
      note(c, UNAVAILABLE, "op %d's op.json is not in the bundle: its epochs cannot be replayed", op);
      skipped++;
      continue;
    }
    if (strcmp(kind, "sink") == 0) continue; /* a sink's replay is its input */
    int64_t epoch;
    if (!ck_capture_parse_epoch(ep, &epoch)) continue;
    ck_buf_reset(&data);
    ck_capture_reader_t *r = NULL;
    ck_error_clear(&err);
    if (ck_bundle_read_checked(&v->b, p, &data, &err)) {
      note(c, FAIL, "'%s' cannot be trusted (bundle.integrity): not replayed", p);
      continue;
    }
    if (ck_capture_reader_open(data.data, data.len, &r, &err)) {
      char msg[1024];
      ck_error_format(&err, msg, sizeof msg);
      note(c, FAIL, "'%s' is not a capture this clink reads: %s", p, msg);
      continue;
    }
    ck_capture_header_t h = *ck_capture_reader_header(r);
    ck_capture_reader_free(r);
    if (h.from_checkpoint > 0) {
      char snap[128], rel[256];
      ck_snap_path(h.task, h.from_checkpoint, snap, sizeof snap);
      ck_bundle_fmt(rel, sizeof rel, "%s/v1/%s", CK_BUNDLE_CHECKPOINTS, snap);
      if (!ck_bundle_file_entry(&v->b, rel)) {
        note(c, UNAVAILABLE, "op %d subtask %d epoch %s starts from checkpoint %lld, whose "
             "snapshot '%s' is not in the bundle (pruned since the run, or collected without --include-state)", op, st, ep,
             (long long)h.from_checkpoint, rel);
        skipped++;
        continue;
      }
    }
    if (h.truncated)
      note(c, UNAVAILABLE, "op %d subtask %d epoch %s is truncated (%lld of %lld records): "
           "replayed, not compared downstream", op, st, ep, (long long)h.records_stored,
           (long long)h.records_seen);
    ck_buf_reset(&msg);
    replayed++;
    if (v->replay(capdir, ckdir, op, st, epoch, &msg) == 0) {
      passed++;
    } else {
      ck_buf_putc(&msg, 0);
      note(c, FAIL, "op %d subtask %d epoch %s does not replay: %s", op, st, ep, msg.data);
    }
  }
  ck_buf_fini(&data);
  ck_buf_fini(&msg);
  if (!replayed && !skipped) note(c, UNAVAILABLE, "no captured epoch of a calc or aggregate");
  else if (c->status == PASS) note(c, PASS, "%d epoch(s) replayed with --verify", passed);
  else note(c, c->status, "%d of %d replayed epoch(s) verified, %d could not be replayed", passed,
            replayed, skipped);
}

/* ---------------------------------------------------------------- the protocol trace */

static void check_trace(verifier_t *v) {
  const ck_json_t *files = ck_json_get(v->b.manifest, "files");
  int n = 0;
  for (int i = 0; files && i < files->n; i++) {
    const char *p = ck_json_get_str(files->items[i], "path");
    size_t pl = p ? strlen(p) : 0;
    if (pl > 7 && strncmp(p, CK_BUNDLE_TRACE "/", 6) == 0 && strcmp(p + pl - 7, ".ndjson") == 0)
      n++;
  }
  if (!n) return; /* no trace recorded: nothing to judge, no check */
  check_t *c = begin(v, "protocol.trace");
  char dir[4096];
  ck_bundle_fmt(dir, sizeof dir, "%s/%s", v->b.dir, CK_BUNDLE_TRACE);
  ck_buf_t msg;
  ck_buf_init(&msg);
  int rc = v->trace ? v->trace(dir, &msg) : -1;
  const char *said = msg.data ? msg.data : "";
  if (rc == 0)
    note(c, PASS, "%d trace file(s): every event is a step the model allows (formal/check-trace)",
         n);
  else if (rc == 1)
    note(c, FAIL, "formal/check-trace rejects the trace: %.900s", said);
  else
    note(c, UNAVAILABLE, "the trace (%d file(s)) was not judged: %.900s", n,
         v->trace ? said : "no trace checker");
  ck_buf_fini(&msg);
}

/* ---------------------------------------------------------------- report */

static const char *status_name(int s) {
  return s == PASS ? "pass" : s == FAIL ? "fail" : "unavailable";
}

int ck_bundle_verify(const char *dir, ck_bundle_replay_fn replay, ck_bundle_trace_fn trace,
                     bool json, ck_buf_t *report) {
  verifier_t v = {.replay = replay, .trace = trace};
  ck_error_t err;
  ck_error_clear(&err);
  check_t *m = begin(&v, "bundle.manifest");
  if (ck_bundle_open(&v.b, dir, &err)) {
    char msg[1024];
    ck_error_format(&err, msg, sizeof msg);
    note(m, FAIL, "%s", msg);
  } else {
    note(m, PASS, "%s version %d", CK_BUNDLE_FORMAT, CK_BUNDLE_VERSION);
    check_integrity(&v);
    check_completeness(&v);
    check_markers(&v);
    check_restore(&v);
    check_participants(&v);
    check_ids(&v);
    check_replay(&v);
    check_trace(&v);
  }
  int worst = PASS;
  for (int i = 0; i < v.nchecks; i++)
    if (v.checks[i].status == FAIL || (v.checks[i].status == UNAVAILABLE && worst == PASS))
      worst = v.checks[i].status;
  int exit = worst == PASS ? CK_INCIDENT_PASS : worst == FAIL ? CK_INCIDENT_FAIL : CK_INCIDENT_PARTIAL;
  const char *result = worst == PASS ? "pass" : worst == FAIL ? "fail" : "partial";
  if (json) {
    ck_buf_printf(report, "{\"format\":\"%s\",\"version\":%d,\"bundle\":", CK_VERIFY_FORMAT,
                  CK_VERIFY_VERSION);
    ck_buf_put_json_str(report, dir, strlen(dir));
    ck_buf_printf(report, ",\"result\":\"%s\",\"exit\":%d,\"checks\":[", result, exit);
    for (int i = 0; i < v.nchecks; i++) {
      ck_buf_printf(report, "%s{\"name\":\"%s\",\"status\":\"%s\",\"detail\":", i ? "," : "",
                    v.checks[i].name, status_name(v.checks[i].status));
      ck_buf_put_json_str(report, v.checks[i].detail.data ? v.checks[i].detail.data : "",
                          v.checks[i].detail.len);
      ck_buf_putc(report, '}');
    }
    ck_buf_puts(report, "]}\n");
  } else {
    for (int i = 0; i < v.nchecks; i++)
      ck_buf_printf(report, "%-11s %-22s %s\n", status_name(v.checks[i].status),
                    v.checks[i].name, v.checks[i].detail.data ? v.checks[i].detail.data : "");
    ck_buf_printf(report, "result: %s (exit %d)\n", result, exit);
  }
  for (int i = 0; i < v.nchecks; i++) ck_buf_fini(&v.checks[i].detail);
  if (v.b.dir) ck_bundle_close(&v.b);
  return exit;
}
