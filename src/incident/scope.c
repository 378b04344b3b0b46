/*
 * DESIGN: `clink incident scope BUNDLE --checkpoint N` — the scope document of completed
 * checkpoint N (bundle.h has its fields; docs/incidents.md).
 *
 * The scope is every interval N completed: N's own, then, walking back through each
 * interval's previous_barrier (the sinks' evidence), every interval whose checkpoint never
 * completed, until a completed checkpoint or the run's start. The Kafka ranges [from, to) are
 * the sources' positions (the next offset to read, per partition) in the snapshots of the
 * completed checkpoint the walk reached and of N: every task's file of both in the bundle
 * (--include-state); a run that began without state has no start snapshot, and its `from` is
 * the run start N's snapshot records (Kafka position version 2), as are the log's cluster id
 * and topic id (two known values that differ: identity_conflict, which reconcile refuses). The
 * sinks' part is their evidence over the scope. Anything the bundle
 * lacks, and an empty scope, makes the document "unavailable" with its reasons (exit 3),
 * never "complete". Reads only files the manifest lists, each checked against its SHA-256.
 * Threads: the command's one thread.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "checkpoint/store.h"
#include "connectors/kafka/kafka.h"
#include "incident/bundle.h"
#include "incident/bundle_int.h"
#include "runtime/plan.h"

typedef struct part {
  int32_t partition;
  int64_t from, to;
  bool has_from, has_to;
  int64_t run_start; /* where N's run began reading it (N's snapshot, version 2) */
  bool has_run_start;
} part_t;

/* The log the positions belong to, as the snapshots record it (version 2): the first known
 * value of each, and the first disagreement between two known ones. */
typedef struct ident {
  char cluster_id[128], topic_id[23];
  int64_t cluster_at, topic_at; /* the checkpoint whose snapshot gave it */
  char conflict[768];
} ident_t;

static void ident_note(ident_t *id, const char *what, char *have, size_t cap, int64_t *at,
                       const char *v, int64_t ckpt) {
  if (!v[0]) return;
  if (!have[0]) {
    snprintf(have, cap, "%s", v);
    *at = ckpt;
  } else if (strcmp(have, v) && !id->conflict[0]) {
    snprintf(id->conflict, sizeof id->conflict, "the source's snapshots name two logs: %s '%s' "
             "at checkpoint %lld and '%s' at checkpoint %lld", what, have, (long long)*at, v,
             (long long)ckpt);
  }
}

typedef struct scope {
  ck_bundle_t b;
  ck_buf_t why; /* the unavailable reasons: JSON strings, comma-separated */
  int nwhy;
  bool integrity_failed;
  ck_error_t ierr;
} scope_t;

static void unavailable(scope_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void unavailable(scope_t *s, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (s->nwhy++) ck_buf_putc(&s->why, ',');
  ck_buf_put_json_str(&s->why, line, strlen(line));
}

static void put_str(ck_buf_t *b, const char *v) {
  if (v) ck_buf_put_json_str(b, v, strlen(v));
  else ck_buf_puts(b, "null");
}

/* Reads a bundle file checked against the manifest; an integrity failure is remembered. */
static int read_checked(scope_t *s, const char *rel, ck_buf_t *out) {
  ck_error_t err;
  int rc = ck_bundle_read_checked(&s->b, rel, out, &err);
  if (rc && rc != CK_ENOTFOUND && !s->integrity_failed) {
    s->integrity_failed = true;
    s->ierr = err;
  }
  return rc;
}

static int completed(const scope_t *s, int64_t id) {
  const ck_json_t *ck = ck_json_get(s->b.manifest, "checkpoints");
  const ck_json_t *done = ck_json_get(ck, "completed");
  if (ck_bundle_has_id(done, id)) return 1;
  int64_t lo = INT64_MAX, x;
  for (int i = 0; done && i < done->n; i++)
    if (ck_json_int(done->items[i], &x) && x < lo) lo = x;
  if (id < lo && ck_json_get_int(ck, "id_floor", 0) > 0) return -1;
  return 0;
}

/* The sink intervals of checkpoint id (of attempt att when not NULL), into v (max n). */
static int intervals_of(const scope_t *s, int64_t id, const char *att, const ck_json_t **v, int n) {
  const ck_json_t *ivs = ck_json_get(s->b.manifest, "intervals");
  int k = 0;
  for (int i = 0; ivs && i < ivs->n && k < n; i++) {
    const ck_json_t *iv = ivs->items[i];
    const char *a = ck_json_get_str(iv, "attempt");
    if (ck_json_get_int(iv, "checkpoint", -1) == id && (!att || (a && strcmp(a, att) == 0)))
      v[k++] = iv;
  }
  return k;
}

/* A JSON file of the bundle, parsed into the bundle's arena; NULL when absent or unreadable. */
static const ck_json_t *load_json(scope_t *s, const char *rel) {
  ck_buf_t t;
  ck_buf_init(&t);
  ck_json_t *j = NULL;
  ck_error_t err;
  if (read_checked(s, rel, &t) || ck_json_parse(t.data ? t.data : "", t.len, &s->b.arena, &j, &err))
    j = NULL;
  ck_buf_fini(&t);
  return j;
}

/* The job graph, from the first op.json the bundle holds. */
static ck_graph_t *load_graph(scope_t *s) {
  const ck_json_t *files = ck_json_get(s->b.manifest, "files");
  for (int i = 0; files && i < files->n; i++) {
    const char *p = ck_json_get_str(files->items[i], "path");
    size_t pl = p ? strlen(p) : 0;
    if (pl < 8 || strcmp(p + pl - 8, "/op.json") || strncmp(p, CK_BUNDLE_CAPTURE "/", 8)) continue;
    const ck_json_t *j = load_json(s, p);
    const char *hex = ck_json_get_str(j, "plan");
    if (!hex) continue;
    size_t n = strlen(hex) / 2;
    uint8_t *bin = ck_malloc(n ? n : 1);
    for (size_t k = 0; k < n; k++) {
      unsigned v = 0;
      sscanf(hex + 2 * k, "%2x", &v);
      bin[k] = (uint8_t)v;
    }
    ck_graph_t *g = NULL;
    ck_error_t err;
    if (ck_plan_decode_masked(bin, n, &g, &err)) g = NULL;
    ck_free(bin);
    if (g) return g;
  }
  return NULL;
}

/* The positions node's source recorded in every task's snapshot of checkpoint id: into parts
 * (from or to). Returns the number of snapshot files read (0: none in the bundle). */
static int read_positions(scope_t *s, int64_t id, int node, bool to, part_t **parts, int *nparts,
                          char *topic, size_t topic_cap, ident_t *ident) {
  const ck_json_t *files = ck_json_get(s->b.manifest, "files");
  char suffix[64];
  ck_bundle_fmt(suffix, sizeof suffix, "/checkpoint-%lld.snap", (long long)id);
  int read = 0;
  for (int i = 0; files && i < files->n; i++) {
    const char *p = ck_json_get_str(files->items[i], "path");
    size_t pl = p ? strlen(p) : 0, sl = strlen(suffix);
    if (pl <= sl || strcmp(p + pl - sl, suffix) || strncmp(p, CK_BUNDLE_CHECKPOINTS "/v1/", 15))
      continue;
    ck_buf_t data, scratch;
    ck_buf_init(&data);
    ck_buf_init(&scratch);
    ck_snap_section_t sec[64];
    int nsec = 0;
    ck_error_t err;
    if (!read_checked(s, p, &data) &&
        !ck_snap_decode(data.data, data.len, id, 0, -1, NULL, sec, 64, &nsec, &scratch, &err)) {
      read++;
      for (int k = 0; k < nsec; k++) {
        if (sec[k].node != (uint32_t)node || sec[k].kind != CK_SNAP_SOURCE) continue;
        ck_str_t t;
        ck_kafka_pos_t *pos = NULL;
        int64_t *starts = NULL;
        int n = 0;
        ck_kafka_ident_t kid;
        if (ck_kafka_snap_decode_ident(sec[k].data, sec[k].len, &t, &pos, &starts, &n, &kid, NULL,
                                       &err)) {
          unavailable(s, "the source position of node %d in '%s' is not a Kafka position: %s",
                      node, p, err.message);
          continue;
        }
        ck_bundle_fmt(topic, topic_cap, "%.*s", (int)t.len, t.ptr);
        char cid[128] = "", tid[23] = "";
        if (kid.cluster_id.len < sizeof cid)
          ck_bundle_fmt(cid, sizeof cid, "%.*s", (int)kid.cluster_id.len, kid.cluster_id.ptr);
        if (kid.has_topic_id) ck_kafka_topic_id_str(kid.topic_id, tid);
        ident_note(ident, "cluster id", ident->cluster_id, sizeof ident->cluster_id,
                   &ident->cluster_at, cid, id);
        ident_note(ident, "topic id", ident->topic_id, sizeof ident->topic_id, &ident->topic_at,
                   tid, id);
        for (int q = 0; q < n; q++) {
          part_t *pt = NULL;
          for (int r = 0; r < *nparts && !pt; r++)
            if ((*parts)[r].partition == pos[q].partition) pt = &(*parts)[r];
          if (!pt) {
            *parts = ck_realloc(*parts, sizeof **parts * (size_t)(*nparts + 1));
            pt = &(*parts)[(*nparts)++];
            *pt = (part_t){.partition = pos[q].partition};
          }
          if (to) pt->to = pos[q].offset, pt->has_to = true;
          else pt->from = pos[q].offset, pt->has_from = true;
          if (to && starts[q] >= 0) pt->run_start = starts[q], pt->has_run_start = true;
        }
        ck_free(pos);
        ck_free(starts);
      }
    } else {
      unavailable(s, "snapshot '%s' could not be read", p);
    }
    ck_buf_fini(&data);
    ck_buf_fini(&scratch);
  }
  return read;
}

static int cmp_part(const void *a, const void *b) {
  return ((const part_t *)a)->partition - ((const part_t *)b)->partition;
}

#define MAXIV 256

int ck_bundle_scope(const char *dir, int64_t checkpoint, int64_t job_id, bool json,
                    ck_buf_t *out, ck_error_t *err) {
  scope_t s;
  memset(&s, 0, sizeof s);
  ck_buf_init(&s.why);
  ck_graph_t *graph = NULL;
  int status = CK_INCIDENT_USAGE;
  ck_buf_t doc;
  ck_buf_init(&doc);
  if (ck_bundle_open(&s.b, dir, err)) goto out;
  const ck_json_t *job = ck_json_get(s.b.manifest, "job");
  int64_t bjob = ck_json_get_int(job, "id", 0);
  if (job_id && bjob != job_id) {
    ck_error_set(err, CK_EUSAGE, "could not export the scope: the bundle holds %s, not job %lld",
                 bjob ? "another cluster job" : "an embedded job", (long long)job_id);
    if (bjob) ck_error_detail(err, "the bundle's job is %lld", (long long)bjob);
    goto out;
  }
  if (completed(&s, checkpoint) != 1) {
    ck_error_set(err, CK_EUSAGE, "could not export the scope of checkpoint %lld: it is not a "
                 "completed checkpoint of this bundle", (long long)checkpoint);
    ck_error_hint(err, "the bundle's completed checkpoints are in its manifest.json "
                  "(checkpoints.completed)");
    goto out;
  }
  /* the walk back */
  const ck_json_t *nivs[MAXIV];
  int nn = intervals_of(&s, checkpoint, NULL, nivs, MAXIV);
  /* every sink subtask's runner has its own attempt (on a cluster, one per worker): the walk
   * follows the first one's barriers, which every subtask shares, and each subtask's evidence
   * must come from its own attempt of N */
  const char *att = nn ? ck_json_get_str(nivs[0], "attempt") : NULL;
  bool one_attempt = true;
  for (int i = 1; i < nn; i++) {
    const char *a = ck_json_get_str(nivs[i], "attempt");
    if (!a || !att || strcmp(a, att)) one_attempt = false;
  }
  int64_t chain[MAXIV], prevs[MAXIV];
  int nchain = 0;
  int64_t cur = checkpoint, start = 0, restored_from = 0;
  if (!nn) unavailable(&s, "no sink evidence of checkpoint %lld in the bundle (collect with "
                       "--capture-dir and --include-captures)", (long long)checkpoint);
  const ck_json_t *runs = ck_json_get(s.b.manifest, "runs");
  for (int k = 0; k < nn; k++) {
    const char *ak = ck_json_get_str(nivs[k], "attempt");
    for (int i = 0; ak && runs && i < runs->n; i++) {
      const char *a = ck_json_get_str(runs->items[i], "attempt");
      int64_t r = ck_json_get_int(runs->items[i], "restored_from", 0);
      if (!a || strcmp(a, ak)) continue;
      if (k == 0) restored_from = r;
      else if (r != restored_from)
        unavailable(&s, "checkpoint %lld's sink evidence comes from two runs (restored from "
                    "%lld and %lld)", (long long)checkpoint, (long long)restored_from,
                    (long long)r);
    }
  }
  while (nn && nchain < MAXIV) {
    const ck_json_t *v[MAXIV];
    int k = intervals_of(&s, cur, att, v, MAXIV);
    if (!k) {
      unavailable(&s, "the interval of checkpoint %lld (which did not complete) has no sink "
                  "evidence of run %s", (long long)cur, att ? att : "?");
      break;
    }
    int64_t prev = ck_json_get_int(v[0], "previous_barrier", 0);
    for (int i = 1; i < k; i++)
      if (ck_json_get_int(v[i], "previous_barrier", 0) != prev)
        unavailable(&s, "the sink subtasks disagree on the barrier before checkpoint %lld",
                    (long long)cur);
    chain[nchain] = cur;
    prevs[nchain++] = prev;
    int c = prev > 0 ? completed(&s, prev) : 1;
    if (c == 1) {
      start = prev;
      break;
    }
    if (c < 0) {
      unavailable(&s, "checkpoint %lld's marker was pruned: whether it completed is not known",
                  (long long)prev);
      start = prev;
      break;
    }
    cur = prev;
  }
  /* the sinks */
  graph = load_graph(&s);
  if (!graph) unavailable(&s, "the bundle holds no op.json with the job graph");
  ck_buf_printf(&doc, "{\"format\":\"%s\",\"version\":%d,\"checkpoint\":%lld,\"job\":{\"id\":",
                CK_SCOPE_FORMAT, CK_SCOPE_VERSION, (long long)checkpoint);
  if (bjob) ck_buf_printf(&doc, "%lld", (long long)bjob);
  else ck_buf_puts(&doc, "null");
  const char *fp = ck_json_get_str(ck_json_get(s.b.manifest, "checkpoints"), "fingerprint");
  ck_buf_printf(&doc, ",\"fingerprint\":\"%.16s\"},\"attempt\":", fp ? fp : "");
  put_str(&doc, one_attempt ? att : NULL);
  ck_buf_puts(&doc, ",\"intervals\":[");
  for (int i = 0; i < nchain; i++)
    ck_buf_printf(&doc, "%s{\"checkpoint\":%lld,\"previous_barrier\":%lld,\"completed\":%s}",
                  i ? "," : "", (long long)chain[i], (long long)prevs[i],
                  completed(&s, chain[i]) == 1 ? "true" : "false");
  ck_buf_printf(&doc, "],\"start\":{\"checkpoint\":%lld,\"restored_from\":%lld},\"sources\":[",
                (long long)start, (long long)restored_from);
  int nsrc = 0;
  for (int i = 0; graph && i < graph->nnodes; i++) {
    const ck_node_t *n = &graph->nodes[i];
    if (n->kind != CK_NODE_SOURCE) continue;
    const ck_conn_spec_t *c = &n->u.conn;
    const char *conn = c->connector ? c->connector->name : "?";
    ck_buf_printf(&doc, "%s{\"op\":%d,\"name\":", nsrc++ ? "," : "", n->id);
    put_str(&doc, n->name);
    ck_buf_puts(&doc, ",\"table\":");
    put_str(&doc, c->table);
    ck_buf_puts(&doc, ",\"connector\":");
    put_str(&doc, conn);
    if (strcmp(conn, "kafka") != 0) {
      ck_buf_puts(&doc, ",\"partitions\":[],\"absent\":{\"partitions\":\"not a Kafka source: "
                  "the scope has no offset ranges for it\"}}");
      unavailable(&s, "source '%s' is not a Kafka source", c->table);
      continue;
    }
    part_t *parts = NULL;
    int nparts = 0;
    char topic[512] = "", topic0[512] = "";
    ident_t ident;
    memset(&ident, 0, sizeof ident);
    int got = read_positions(&s, checkpoint, n->id, true, &parts, &nparts, topic, sizeof topic,
                             &ident);
    if (!got)
      unavailable(&s, "no snapshot of checkpoint %lld in the bundle (collect with "
                  "--include-state): the sources' positions at the scope's end are not known",
                  (long long)checkpoint);
    if (start > 0 && !read_positions(&s, start, n->id, false, &parts, &nparts, topic0,
                                     sizeof topic0, &ident))
      unavailable(&s, "no snapshot of checkpoint %lld in the bundle (collect with "
                  "--include-state): the sources' positions at the scope's start are not known",
                  (long long)start);
    if (topic0[0] && strcmp(topic0, topic))
      unavailable(&s, "the source read topic '%s' at checkpoint %lld and '%s' at %lld", topic0,
                  (long long)start, topic, (long long)checkpoint);
    if (nparts) qsort(parts, (size_t)nparts, sizeof *parts, cmp_part);
    const char *t = topic[0] ? topic : ck_options_get(&c->options, "topic");
    const char *iso = ck_options_get(&c->options, "isolation.level");
    ck_buf_puts(&doc, ",\"topic\":");
    put_str(&doc, t);
    ck_buf_puts(&doc, ",\"cluster_id\":");
    put_str(&doc, ident.cluster_id[0] ? ident.cluster_id : NULL);
    ck_buf_puts(&doc, ",\"topic_id\":");
    put_str(&doc, ident.topic_id[0] ? ident.topic_id : NULL);
    if (ident.conflict[0]) {
      ck_buf_puts(&doc, ",\"identity_conflict\":");
      put_str(&doc, ident.conflict);
      unavailable(&s, "source '%s': %s", c->table, ident.conflict);
    }
    ck_buf_puts(&doc, ",\"isolation_level\":");
    put_str(&doc, iso ? iso : "read_committed");
    ck_buf_puts(&doc, ",\"partitions\":[");
    bool from_missing = false;
    for (int q = 0; q < nparts; q++) {
      /* a run that began without state: where it began reading, from N's own snapshot */
      if (start == 0 && !parts[q].has_from && parts[q].has_run_start)
        parts[q].from = parts[q].run_start, parts[q].has_from = true;
      ck_buf_printf(&doc, "%s{\"partition\":%d,\"from\":", q ? "," : "", parts[q].partition);
      if (parts[q].has_from) ck_buf_printf(&doc, "%lld", (long long)parts[q].from);
      else ck_buf_puts(&doc, "null"), from_missing = true;
      ck_buf_puts(&doc, ",\"to\":");
      if (parts[q].has_to) ck_buf_printf(&doc, "%lld", (long long)parts[q].to);
      else ck_buf_puts(&doc, "null");
      ck_buf_putc(&doc, '}');
      if (parts[q].has_from && parts[q].has_to && parts[q].from > parts[q].to)
        unavailable(&s, "partition %d's position went back from %lld to %lld", parts[q].partition,
                    (long long)parts[q].from, (long long)parts[q].to);
    }
    ck_buf_puts(&doc, "],\"absent\":{");
    int nabs = 0;
    if (!ident.cluster_id[0])
      ck_buf_printf(&doc, "%s\"cluster_id\":\"no snapshot of the scope records the brokers' "
                    "cluster id (a position written before clink recorded it, or brokers that "
                    "gave none)\"", nabs++ ? "," : "");
    if (!ident.topic_id[0])
      ck_buf_printf(&doc, "%s\"topic_id\":\"no snapshot of the scope records the topic id "
                    "(fetcher 'librdkafka', whose version exposes none; a broker before Kafka "
                    "2.8; or a position written before clink recorded it)\"", nabs++ ? "," : "");
    if (start == 0 && from_missing)
      ck_buf_printf(&doc, "%s\"from\":\"the run started without state and checkpoint %lld's "
                    "snapshot does not record where the source began reading (a position "
                    "written before clink recorded it)\"", nabs++ ? "," : "",
                    (long long)checkpoint);
    ck_buf_puts(&doc, "}}");
    ck_free(parts);
  }
  ck_buf_puts(&doc, "],\"sinks\":[");
  int64_t rows = 0;
  int nsink = 0;
  for (int i = 0; graph && i < graph->nnodes; i++) {
    const ck_node_t *n = &graph->nodes[i];
    if (n->kind != CK_NODE_SINK) continue;
    const ck_conn_spec_t *c = &n->u.conn;
    ck_buf_printf(&doc, "%s{\"op\":%d,\"name\":", nsink++ ? "," : "", n->id);
    put_str(&doc, n->name);
    ck_buf_puts(&doc, ",\"table\":");
    put_str(&doc, c->table);
    ck_buf_puts(&doc, ",\"connector\":");
    put_str(&doc, c->connector ? c->connector->name : NULL);
    ck_buf_puts(&doc, ",\"subtasks\":[");
    for (int st = 0; st < n->parallelism; st++) {
      int64_t records = 0, stored = 0;
      const char *satt = NULL; /* this subtask's attempt of N */
      for (int k = 0; k < nn; k++)
        if (ck_json_get_int(nivs[k], "op", -1) == n->id &&
            ck_json_get_int(nivs[k], "subtask", -1) == st)
          satt = ck_json_get_str(nivs[k], "attempt");
      bool truncated = false;
      ck_buf_t ev, caps;
      ck_buf_init(&ev);
      ck_buf_init(&caps);
      for (int k = 0; k < nchain; k++) {
        char rel[256];
        ck_bundle_fmt(rel, sizeof rel, "%s/op-%d/subtask-%d/epoch-%lld.sink.json", CK_BUNDLE_CAPTURE,
                 n->id, st, (long long)chain[k]);
        const ck_json_t *e = load_json(&s, rel);
        const char *a = ck_json_get_str(e, "attempt");
        if (!e) {
          unavailable(&s, "sink '%s' subtask %d has no evidence of checkpoint %lld", c->table, st,
                      (long long)chain[k]);
          continue;
        }
        if (!a || !satt || strcmp(a, satt))
          unavailable(&s, "sink '%s' subtask %d's evidence of checkpoint %lld is of another "
                      "attempt", c->table, st, (long long)chain[k]);
        if (ev.len) ck_buf_putc(&ev, ',');
        put_str(&ev, rel);
        records += ck_json_get_int(e, "records", 0);
        const ck_json_t *cap = ck_json_get(e, "capture");
        const char *state = ck_json_get_str(cap, "state");
        stored += ck_json_get_int(cap, "records_stored", 0);
        if (ck_json_get_bool(cap, "truncated", false)) {
          truncated = true;
          unavailable(&s, "sink '%s' subtask %d's capture of checkpoint %lld is truncated",
                      c->table, st, (long long)chain[k]);
        }
        if (!state || (strcmp(state, "written") && strcmp(state, "empty")))
          unavailable(&s, "sink '%s' subtask %d's capture of checkpoint %lld is %s", c->table, st,
                      (long long)chain[k], state ? state : "not described");
        const char *file = ck_json_get_str(cap, "file");
        if (file) {
          ck_bundle_fmt(rel, sizeof rel, "%s/op-%d/subtask-%d/%s", CK_BUNDLE_CAPTURE, n->id, st, file);
          if (ck_bundle_file_entry(&s.b, rel)) {
            if (caps.len) ck_buf_putc(&caps, ',');
            put_str(&caps, rel);
          } else {
            unavailable(&s, "capture '%s' is not in the bundle", rel);
          }
        }
      }
      rows += records;
      ck_buf_printf(&doc, "%s{\"subtask\":%d,\"attempt\":", st ? "," : "", st);
      put_str(&doc, satt);
      ck_buf_printf(&doc, ",\"records\":%lld,\"stored\":%lld,\"truncated\":%s,\"evidence\":[",
                    (long long)records, (long long)stored, truncated ? "true" : "false");
      ck_buf_append(&doc, ev.data ? ev.data : "", ev.len);
      ck_buf_puts(&doc, "],\"captures\":[");
      ck_buf_append(&doc, caps.data ? caps.data : "", caps.len);
      ck_buf_puts(&doc, "]}");
      ck_buf_fini(&ev);
      ck_buf_fini(&caps);
    }
    ck_buf_puts(&doc, "]}");
  }
  if (nn && rows == 0) unavailable(&s, "the scope holds no rows: an empty scope establishes nothing");
  ck_buf_printf(&doc, "],\"rows\":%lld,\"status\":\"%s\"", (long long)rows,
                s.nwhy ? "unavailable" : "complete");
  if (s.nwhy) {
    ck_buf_puts(&doc, ",\"unavailable\":[");
    ck_buf_append(&doc, s.why.data, s.why.len);
    ck_buf_putc(&doc, ']');
  }
  ck_buf_puts(&doc, "}\n");
  if (s.integrity_failed) {
    char msg[1024];
    ck_error_format(&s.ierr, msg, sizeof msg);
    ck_buf_printf(out, "clink incident scope: %s\n", msg);
    status = CK_INCIDENT_FAIL;
    goto out;
  }
  status = s.nwhy ? CK_INCIDENT_PARTIAL : CK_INCIDENT_PASS;
  if (json) {
    ck_buf_append(out, doc.data, doc.len);
  } else {
    /* the text form: the document's headline facts */
    ck_json_t *d;
    ck_error_t e;
    if (ck_json_parse(doc.data, doc.len, &s.b.arena, &d, &e)) {
      ck_buf_append(out, doc.data, doc.len);
      goto out;
    }
    ck_buf_printf(out, "scope of checkpoint %lld: %s; intervals", (long long)checkpoint,
                  s.nwhy ? "unavailable" : "complete");
    for (int i = 0; i < nchain; i++) ck_buf_printf(out, " %lld", (long long)chain[i]);
    ck_buf_printf(out, " (from checkpoint %lld%s), %lld rows\n", (long long)start,
                  start ? "" : ": the run's start", (long long)rows);
    const ck_json_t *srcs = ck_json_get(d, "sources");
    for (int i = 0; srcs && i < srcs->n; i++) {
      const ck_json_t *so = srcs->items[i];
      const ck_json_t *ps = ck_json_get(so, "partitions");
      ck_buf_printf(out, "  source %s: topic %s, %s\n", ck_json_get_str(so, "table"),
                    ck_json_get_str(so, "topic") ? ck_json_get_str(so, "topic") : "-",
                    ck_json_get_str(so, "isolation_level") ? ck_json_get_str(so, "isolation_level") : "-");
      for (int q = 0; ps && q < ps->n; q++) {
        const ck_json_t *f = ck_json_get(ps->items[q], "from");
        ck_buf_printf(out, "    partition %lld: [%s, %lld)\n",
                      (long long)ck_json_get_int(ps->items[q], "partition", -1),
                      f && f->kind == CK_JSON_NUMBER ? f->str : "?",
                      (long long)ck_json_get_int(ps->items[q], "to", -1));
      }
    }
    const ck_json_t *why = ck_json_get(d, "unavailable");
    for (int i = 0; why && i < why->n; i++)
      ck_buf_printf(out, "  unavailable: %s\n", ck_json_str(why->items[i]));
  }
out:
  if (graph) ck_graph_free(graph);
  ck_buf_fini(&doc);
  ck_buf_fini(&s.why);
  if (s.b.dir) ck_bundle_close(&s.b);
  return status;
}
