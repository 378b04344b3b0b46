/*
 * DESIGN: incident bundles — one portable directory holding what a job left on disk about a
 * bounded stretch of its execution (checkpoint markers, snapshots, flight-recorder captures,
 * sink-interval evidence, the job manifest, the protocol trace), with a checksum of every
 * file, so the run can be checked offline (verify), its checkpoints' scopes exported (scope),
 * and one destination reconciled against it (reconcile, src/incident/reconcile*.c). The page
 * for users is docs/incidents.md; this header fixes the layout and the scope document, which
 * the reconcile half and the tests read.
 *
 * Layout (version 1). The bundle mirrors the directories it was collected from, so the
 * existing tools run on it as they are (`clink replay --capture-dir B/capture
 * --checkpoint-dir B/checkpoints`, `clink checkpoint-verify --dir=B/checkpoints`):
 *
 *   B/manifest.json                               what the bundle is (below); written last
 *   B/job.json                                    the job manifest (CK_JOB_MANIFEST_FILE of the
 *                                                 checkpoint directory), when the run wrote one
 *   B/checkpoints/v1/_meta/completed-<N>          every marker and record of _meta, as on disk
 *   B/checkpoints/v1/_meta/confirmed-<N>          (fingerprint, run-base, clean-finish, id-floor)
 *   B/checkpoints/v1/<task>/checkpoint-<N>.snap   --include-state: every task's snapshot of the
 *                                                 completed checkpoints that bound a collected
 *                                                 interval, and of every run's restore point
 *   B/capture/op-<id>/op.json                     always: the operator, with the masked plan
 *   B/capture/op-<id>/subtask-<s>/epoch-<N>.cap   --include-captures: every interval's capture
 *   B/capture/op-<id>/subtask-<s>/epoch-final.cap
 *   B/capture/op-<id>/subtask-<s>/epoch-<N>.sink.json  --include-captures: sink evidence
 *                                                 (docs/evidence.md)
 *   B/trace/<file>.ndjson                         --trace-dir: the protocol trace's files
 *
 * manifest.json (format "clink-incident-bundle", version 1), one JSON object:
 *   format, version
 *   clink            the collecting binary's version
 *   job              {"id": cluster job id or null, "shape": "embedded" | "cluster",
 *                     "manifest": "job.json" or null}
 *   collected        {"checkpoint_dir", "capture_dir", "trace_dir" (or null): the paths as
 *                     given, "include_captures", "include_state": booleans}
 *   checkpoints      {"completed": [ids ascending], "confirmed": [ids], "run_base", "id_floor",
 *                     "clean_finish": bool, "fingerprint": the _meta/fingerprint text or null}
 *   runs             one per runner attempt the evidence shows (a cluster: one per worker's
 *                     executor and deployment), in checkpoint order:
 *                     {"attempt", "restored_from" (0: fresh), "checkpoints": [ids]}
 *   intervals        one per sink subtask interval with evidence: {"op", "subtask",
 *                     "checkpoint", "previous_barrier", "attempt", "completed": bool,
 *                     "evidence": path in the bundle, "capture": path or null}
 *   state            one per snapshot collected: {"checkpoint", "task", "file",
 *                     "why": "bound" | "restore_point"}
 *   missing          what the collector looked for and did not find, each {"what", "file",
 *                     "why"}: an epoch a completed checkpoint implies, a snapshot a bound
 *                     needs, evidence a sink subtask owed. Verify turns these into
 *                     "unavailable" (exit 3), never into a pass.
 *   files            every file of the bundle except manifest.json, sorted by path:
 *                     {"path" (relative, '/'), "bytes", "sha256" (64 hex digits)}
 *
 * The scope document of completed checkpoint N (format "clink-scope", version 1), what
 * `clink incident scope B --checkpoint N --json` prints and reconcile computes the same way:
 *   format, version, checkpoint (N)
 *   job              {"id": or null, "fingerprint": the plan fingerprint, 16 hex digits}
 *   attempt          the runner attempt that completed N when every sink subtask's is the same
 *                    (embedded); null on a cluster, where each worker's runner has its own
 *   intervals        the intervals N completed, newest first: N's, then each previous barrier's
 *                     whose checkpoint did not complete, until a completed checkpoint or the
 *                     run's start: [{"checkpoint", "previous_barrier", "completed": bool}]
 *   start            {"checkpoint": the completed checkpoint the walk reached (0: the run's
 *                     start), "restored_from": the run's restore point}
 *   sources          one per source node: {"op", "name", "table", "connector", "topic",
 *                     "cluster_id", "topic_id" (as the snapshots record them; null when
 *                     none does, with the reason under "absent"), "identity_conflict" (only
 *                     when two snapshots name different logs), "isolation_level" (the job's
 *                     isolation.level, read_committed when unset), "partitions":
 *                     [{"partition", "from", "to"}] — [from, to), the next offset to read at
 *                     the start and at N (a run that started without state: from is where it
 *                     began reading, N's snapshot's run start; null with a reason in "absent"
 *                     when that snapshot does not record it), "absent": {field: reason}}
 *   sinks            one per sink node: {"op", "name", "table", "connector", "subtasks":
 *                     [{"subtask", "attempt", "records" (the runner's count over the scope), "stored"
 *                     (what the captures hold), "truncated", "evidence": [bundle paths],
 *                     "captures": [bundle paths]}]}
 *   rows             the sink input rows over the scope (sum of records)
 *   status           "complete", or "unavailable" with "unavailable": [reasons]: evidence of
 *                     a sink subtask missing for an interval, from another attempt, truncated
 *                     or disarmed capture, a bounding snapshot not in the bundle, an empty scope
 *
 * Threads: the command's one thread. Nothing here opens a connection; verify and scope never
 * write inside the bundle.
 */
#ifndef CK_INCIDENT_BUNDLE_H
#define CK_INCIDENT_BUNDLE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/digest.h"
#include "base/buf.h"
#include "base/error.h"

#define CK_BUNDLE_FORMAT "clink-incident-bundle"
#define CK_BUNDLE_VERSION 1
#define CK_BUNDLE_MANIFEST "manifest.json"
#define CK_BUNDLE_JOB "job.json"
#define CK_BUNDLE_CHECKPOINTS "checkpoints" /* holds v1/ */
#define CK_BUNDLE_CAPTURE "capture"
#define CK_BUNDLE_TRACE "trace"

#define CK_SCOPE_FORMAT "clink-scope"
#define CK_SCOPE_VERSION 1

#define CK_VERIFY_FORMAT "clink-incident-verify"
#define CK_VERIFY_VERSION 1

/* Exit statuses of the incident commands (docs/incidents.md). */
enum {
  CK_INCIDENT_PASS = 0,
  CK_INCIDENT_FAIL = 1,
  CK_INCIDENT_USAGE = 2, /* bad usage, or a refused request */
  CK_INCIDENT_PARTIAL = 3,
};

/* ---- collect */

typedef struct ck_bundle_collect_opts {
  const char *checkpoint_dir; /* the job's: embedded DIR, or a coordinator's (with job_id) */
  const char *checkpoint_url; /* NULL, or the s3:// store checkpoint_dir is a local copy of:
                               * what the manifest names */
  const char *capture_dir;    /* --capture-dir of the run (a cluster: <dir>/job-<id> if there) */
  const char *trace_dir;      /* CLINK_PROTOCOL_TRACE_DIR of the run, or NULL */
  int64_t job_id;             /* a cluster job: its checkpoints are <checkpoint_dir>/job-<id>;
                               * 0: embedded */
  bool include_captures, include_state;
  const char *out;            /* the bundle directory: must not exist, or be empty */
} ck_bundle_collect_opts_t;

/* Collects a bundle. 0, or a negative CK_E… code with err (CK_EUSAGE for options that do not
 * fit: a directory that is not a checkpoint directory, an out that is not empty). What it
 * looked for and did not find is listed under "missing" (printed to warn), not an error. */
int ck_bundle_collect(const ck_bundle_collect_opts_t *o, ck_error_t *err);

/* ---- verify */

/* Replays one captured epoch with --verify (the CLI supplies it: cli/cmd_replay.c). Returns 0
 * when the replay verified, 1 when it diverged or failed, with what it said in msg. */
typedef int (*ck_bundle_replay_fn)(const char *capture_dir, const char *checkpoint_dir, int op,
                                   int subtask, int64_t epoch, ck_buf_t *msg);

/* Verifies bundle dir offline, read-only, into report (text, or the JSON report with json).
 * Returns CK_INCIDENT_PASS, _FAIL or _PARTIAL; CK_INCIDENT_USAGE when dir is not a directory. */
/* Holds the bundle's protocol trace directory to the model's rules (the CLI supplies it: it
 * runs formal/check-trace). 0 accepted, 1 rejected (what the checker said in msg), -1 no
 * checker could be run (why in msg). */
typedef int (*ck_bundle_trace_fn)(const char *trace_dir, ck_buf_t *msg);

/* trace may be NULL: protocol.trace is then unavailable when the bundle holds a trace. */
int ck_bundle_verify(const char *dir, ck_bundle_replay_fn replay, ck_bundle_trace_fn trace,
                     bool json, ck_buf_t *report);

/* ---- scope */

/* The scope document of completed checkpoint `checkpoint` (job_id 0: any) into out (JSON with
 * json, else a text summary). Returns CK_INCIDENT_PASS (complete), _PARTIAL (status
 * unavailable: the document says why), _FAIL (a file it read does not match its checksum), or
 * _USAGE with err (no such completed checkpoint in the bundle, a --job that does not fit). */
int ck_bundle_scope(const char *dir, int64_t checkpoint, int64_t job_id, bool json,
                    ck_buf_t *out, ck_error_t *err);

/* the manifest's checksums: ck_sha256_hex of base/digest.h */

#endif
