/*
 * DESIGN: see reconcile.h — the command: from a bundle (bundle.h's layout) and one explicit
 * read of the destination to a verdict, the JSON report and an exit status.
 *
 * Order, each step a named check of the report (docs/incidents.md, "Reconcile"):
 *   bundle.integrity        every file read is the one manifest.json lists (SHA-256); no
 *                           manifest: unavailable; a mismatch: fail
 *   refusals (exit 2)       a --job, --checkpoint, --database or --table that does not fit the
 *                           bundle; a --key that is not a written column
 *   reconcile.scope         the shape (a Kafka source, record-wise calcs, the ClickHouse native
 *                           sink at least once: else unsupported by name); the walk from N back
 *                           through each interval's previous barrier to a completed checkpoint
 *                           or the run's start, every sink subtask's evidence for every
 *                           interval, one attempt, one destination, captures written whole
 *                           (not truncated, disarmed or failed) and holding exactly the rows
 *                           the ledger acknowledged; a key written once; rows > 0
 *   reconcile.destination   identity first (server, table: UUIDs where both sides have them,
 *                           else the fallbacks named in the report; a difference is refused,
 *                           exit 2), the form (plain MergeTree, no TTL, every written column
 *                           still its type), mutations before and after, the definition and
 *                           the scope's keys read twice with a pause (any difference:
 *                           unavailable)
 *   reconcile.rows          the multiset comparison (reconcile_diff.c)
 * The exit status: 2 when refused, else 1 when a check failed, else 3 when one is unavailable
 * or unsupported, else 0. Nothing is decided on part of an answer: a bound passed or a broken
 * connection makes reconcile.destination unavailable and reconcile.rows is not decided.
 */
#include "incident/reconcile.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/time.h"
#include "capture/capture.h"
#include "connectors/connectors.h"
#include "incident/bundle.h"
#include "incident/json.h"
#include "incident/reconcile_read.h"
#include "incident/reference.h"
#include "runtime/graph.h"
#include "runtime/plan.h"

#define MAX_COLS CK_CAPTURE_MAX_COLS
#define MAX_KEYS 8
#define MAX_INTERVALS 4096
#define MAX_SUBTASKS 256

typedef enum check_status { ST_PASS, ST_FAIL, ST_UNAVAILABLE, ST_UNSUPPORTED, ST_SKIPPED } st_t;
static const char *const st_names[] = {"pass", "fail", "unavailable", "unsupported", "not_run"};

typedef struct check {
  const char *name;
  st_t st;
  char why[1024];
} check_t;

/* C_REFERENCE and after: only with --reference (the audit's checks) */
enum { C_INTEGRITY, C_SCOPE, C_DEST, C_ROWS, C_REFERENCE, C_TRANSFORM, C_REFDEST, NCHECKS };

typedef struct ledger_entry {
  int64_t checkpoint;
  int subtask;
  const char *token, *block, *resend, *why;
  int64_t rows;
  bool in_doubt;
} ledger_entry_t;

typedef struct rec {
  const ck_reconcile_opts_t *o;
  ck_arena_t arena; /* parsed JSON and strings: the command's lifetime */
  check_t checks[NCHECKS];
  bool refused;
  char refusal[1024];
  /* the bundle */
  const ck_json_t *manifest;
  const char *job_id_text;
  int64_t *completed;
  int ncompleted;
  int sink_op, parallelism;
  const ck_json_t *opjson;
  const char *sink_name;
  /* the scope */
  int64_t checkpoint, start, restored_from;
  bool start_known;     /* the walk reached a completed checkpoint or the run's start */
  int64_t id_floor;     /* the bundle's id floor: > 0 once retention pruned markers */
  int64_t intervals[MAX_INTERVALS]; /* newest first */
  int nintervals;
  const char *attempt;
  const ck_json_t *ev0; /* N's evidence of subtask 0: the destination and column plan */
  const ck_json_t *dest;
  int ncols;
  const char *col_names[MAX_COLS]; /* the ClickHouse columns, in plan order */
  ck_cell_rule_t rules[MAX_COLS];
  int keys[MAX_KEYS], nkeys;
  ck_rowset_t expected;
  bool have_expected;
  ledger_entry_t *ledger;
  int nledger, capledger;
  int64_t scope_rows;
  const char *scope_doc; /* the bundle's scope document (incident scope), when it gives one */
  /* the destination */
  ck_rowset_t read[2];
  bool have_read;
  ck_buf_t identity, mutations, observed, form;
  ck_diff_counts_t counts;
  ck_buf_t first[CK_DIFF_NKINDS];
  int nfirst[CK_DIFF_NKINDS];
  int64_t explained_restore, explained_resend;
  char server_time[2][32];
  int64_t wall[2], mono[2];
  /* the audit (--reference) */
  const ck_json_t *scope_json;  /* the bundle's scope document, parsed */
  ck_reference_t ref;
  bool have_ref;
  ck_rowset_t refrows, keyset;  /* the reference's rows; the keys to read (expected ∪ reference) */
  bool have_refrows, have_keyset;
  struct audit_diff {
    ck_diff_counts_t counts;
    ck_buf_t first[CK_DIFF_NKINDS];
    int nfirst[CK_DIFF_NKINDS];
  } transform, refdest;
} rec_t;

static void set_check(rec_t *r, int c, st_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void set_check(rec_t *r, int c, st_t st, const char *fmt, ...) {
  check_t *k = &r->checks[c];
  /* the first failure (or lack) said stays: fail beats unavailable beats unsupported */
  if (k->st != ST_PASS && k->st != ST_SKIPPED) {
    if (!(st == ST_FAIL && k->st != ST_FAIL)) return;
  }
  k->st = st;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(k->why, sizeof k->why, fmt, ap);
  va_end(ap);
}

static int refuse(rec_t *r, ck_error_t *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(rec_t *r, ck_error_t *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->refusal, sizeof r->refusal, fmt, ap);
  va_end(ap);
  r->refused = true;
  ck_error_set(err, CK_EUSAGE, "%s", r->refusal);
  return CK_EUSAGE;
}

/* ---------------------------------------------------------------- files */

static int read_whole(const char *path, ck_buf_t *out) {
  FILE *f = fopen(path, "rb");
  if (!f) return -errno;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) ck_buf_append(out, buf, n);
  int bad = ferror(f);
  fclose(f);
  return bad ? -EIO : 0;
}

/* The file's bytes, checked against the manifest (bundle.integrity). rel: path in the bundle. */
static int bundle_file(rec_t *r, const char *rel, ck_buf_t *out) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", r->o->bundle, rel);
  ck_buf_reset(out);
  int rc = read_whole(path, out);
  if (rc) return rc;
  if (!r->manifest) return 0;
  const ck_json_t *files = ck_json_get(r->manifest, "files");
  for (int i = 0; files && i < files->n; i++) {
    const char *p = ck_json_get_str(files->items[i], "path");
    if (!p || strcmp(p, rel) != 0) continue;
    char hex[65];
    ck_sha256_hex(out->data ? out->data : "", out->len, hex);
    const char *want = ck_json_get_str(files->items[i], "sha256");
    if (!want || strcmp(want, hex) != 0)
      set_check(r, C_INTEGRITY, ST_FAIL, "%s does not match its checksum in manifest.json", rel);
    return 0;
  }
  set_check(r, C_INTEGRITY, ST_FAIL, "%s is not listed in manifest.json", rel);
  return 0;
}

static const ck_json_t *bundle_json(rec_t *r, const char *rel, int *rc_out) {
  ck_buf_t b;
  ck_buf_init(&b);
  int rc = bundle_file(r, rel, &b);
  const ck_json_t *v = NULL;
  if (!rc) {
    ck_error_t e = {0};
    ck_json_t *j;
    if (ck_json_parse(b.data ? b.data : "", b.len, &r->arena, &j, &e) == 0) v = j;
    else rc = -EINVAL;
  }
  ck_buf_fini(&b);
  if (rc_out) *rc_out = rc;
  return v;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static bool is_completed(const rec_t *r, int64_t id) {
  for (int i = 0; i < r->ncompleted; i++)
    if (r->completed[i] == id) return true;
  return false;
}

static int load_completed(rec_t *r) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s/v1/_meta", r->o->bundle, CK_BUNDLE_CHECKPOINTS);
  DIR *d = opendir(path);
  if (!d) return -errno;
  struct dirent *e;
  int cap = 0;
  while ((e = readdir(d))) {
    long long id;
    char tail;
    if (sscanf(e->d_name, "completed-%lld%c", &id, &tail) != 1 || id < 1) continue;
    if (r->ncompleted == cap) {
      cap = cap ? cap * 2 : 16;
      r->completed = ck_realloc(r->completed, (size_t)cap * sizeof *r->completed);
    }
    r->completed[r->ncompleted++] = id;
  }
  closedir(d);
  if (r->ncompleted) qsort(r->completed, (size_t)r->ncompleted, sizeof *r->completed, cmp_i64);
  /* the id floor: the manifest's record of it, or (no manifest) the marker's file */
  long long floor = 0;
  if (r->manifest) {
    floor = ck_json_get_int(ck_json_get(r->manifest, "checkpoints"), "id_floor", 0);
  } else {
    snprintf(path, sizeof path, "%s/%s/v1/_meta/id-floor", r->o->bundle, CK_BUNDLE_CHECKPOINTS);
    FILE *f = fopen(path, "r");
    if (f) {
      if (fscanf(f, "%lld", &floor) != 1) floor = 0;
      fclose(f);
    }
  }
  r->id_floor = floor > 0 ? floor : 0;
  return 0;
}

/* ---------------------------------------------------------------- the bundle's sink */

/* The ClickHouse sink operators of the bundle (op.json kind sink, connector clickhouse) that fit
 * --database/--table; exactly one must. */
static int find_sink(rec_t *r, ck_error_t *err) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", r->o->bundle, CK_BUNDLE_CAPTURE);
  DIR *d = opendir(path);
  if (!d)
    return refuse(r, err, "could not reconcile: the bundle %s has no %s/ directory (collect it "
                  "with --include-captures)", r->o->bundle, CK_BUNDLE_CAPTURE);
  struct dirent *e;
  int found = 0, sinks = 0;
  char names[512] = "";
  while ((e = readdir(d))) {
    int op;
    char tail;
    if (sscanf(e->d_name, "op-%d%c", &op, &tail) != 1) continue;
    char rel[256];
    snprintf(rel, sizeof rel, "%s/op-%d/op.json", CK_BUNDLE_CAPTURE, op);
    const ck_json_t *j = bundle_json(r, rel, NULL);
    if (!j) continue;
    const char *kind = ck_json_get_str(j, "kind");
    const ck_json_t *params = ck_json_get(j, "parameters");
    const char *conn = ck_json_get_str(params, "connector");
    if (!kind || strcmp(kind, "sink") != 0) continue;
    sinks++;
    if (!conn || strcmp(conn, "clickhouse") != 0) continue;
    const ck_json_t *opts = ck_json_get(params, "options");
    const char *db = ck_json_get_str(opts, "database"), *tb = ck_json_get_str(opts, "table");
    if (!db) db = "default";
    size_t nl = strlen(names);
    snprintf(names + nl, sizeof names - nl, "%s%s.%s", nl ? ", " : "", db, tb ? tb : "?");
    if (r->o->database && strcmp(r->o->database, db) != 0) continue;
    if (r->o->table && (!tb || strcmp(r->o->table, tb) != 0)) continue;
    found++;
    r->sink_op = op;
    r->opjson = j;
    r->sink_name = ck_json_get_str(j, "name");
    r->parallelism = (int)ck_json_get_int(j, "parallelism", 1);
  }
  closedir(d);
  if (found == 1) return 0;
  if (found > 1)
    return refuse(r, err, "could not reconcile: the bundle has %d ClickHouse sinks (%s); name one "
                  "with --database and --table", found, names);
  if (names[0])
    return refuse(r, err, "could not reconcile: --database/--table %s.%s does not fit the bundle: "
                  "its ClickHouse sinks write %s", r->o->database ? r->o->database : "*",
                  r->o->table ? r->o->table : "*", names);
  if (sinks) {
    set_check(r, C_SCOPE, ST_UNSUPPORTED, "the job's sinks are not the ClickHouse native sink: "
              "reconciliation supports connector 'clickhouse' only");
    return 1;
  }
  return refuse(r, err, "could not reconcile: the bundle holds no sink operator (no op.json of "
                "kind sink under %s/)", CK_BUNDLE_CAPTURE);
}

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The shape: the sink's input comes from one Kafka source through record-wise calcs only. */
static void check_shape(rec_t *r) {
  const char *hex = ck_json_get_str(r->opjson, "plan");
  size_t n = hex ? strlen(hex) : 0;
  if (!hex || n % 2) {
    set_check(r, C_SCOPE, ST_UNAVAILABLE, "op-%d/op.json has no job graph (\"plan\")", r->sink_op);
    return;
  }
  uint8_t *bin = ck_malloc(n / 2 + 1);
  for (size_t i = 0; i < n / 2; i++) bin[i] = (uint8_t)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
  ck_graph_t *g = NULL;
  ck_error_t e = {0};
  ck_connectors_register_all();
  int rc = ck_plan_decode_masked(bin, n / 2, &g, &e);
  ck_free(bin);
  if (rc) {
    set_check(r, C_SCOPE, ST_UNAVAILABLE, "the job graph in op-%d/op.json could not be read: %s",
              r->sink_op, e.message);
    return;
  }
  const ck_node_t *node = NULL;
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].id == r->sink_op) node = &g->nodes[i];
  while (node) {
    if (node->changelog) {
      set_check(r, C_SCOPE, ST_UNSUPPORTED, "node %d (%s) sends an update stream (row kinds): "
                "reconciliation supports record-wise jobs whose sink takes inserts only",
                node->id, node->name);
      break;
    }
    if (node->kind == CK_NODE_AGG) {
      set_check(r, C_SCOPE, ST_UNSUPPORTED, "node %d (%s) is an aggregation: reconciliation "
                "supports record-wise transformations (filters, projections, per-record "
                "expressions) only", node->id, node->name);
      break;
    }
    if (node->kind == CK_NODE_SOURCE) {
      const char *cn = node->u.conn.connector ? node->u.conn.connector->name : "?";
      if (strcmp(cn, "kafka") != 0)
        set_check(r, C_SCOPE, ST_UNSUPPORTED, "the sink's source '%s' is connector '%s': "
                  "reconciliation supports a Kafka source only", node->u.conn.table ?
                  node->u.conn.table : node->name, cn);
      break;
    }
    int up = node->input;
    node = NULL;
    for (int i = 0; i < g->nnodes; i++)
      if (g->nodes[i].id == up) node = &g->nodes[i];
  }
  ck_graph_free(g);
}

/* ---------------------------------------------------------------- the scope */

static const ck_json_t *evidence(rec_t *r, int subtask, int64_t ckpt, int *rc) {
  char rel[256];
  snprintf(rel, sizeof rel, "%s/op-%d/subtask-%d/epoch-%lld.sink.json", CK_BUNDLE_CAPTURE,
           r->sink_op, subtask, (long long)ckpt);
  return bundle_json(r, rel, rc);
}

static bool json_eq(const ck_json_t *a, const ck_json_t *b) {
  if (!a || !b) return a == b;
  if (a->kind != b->kind) return false;
  switch (a->kind) {
    case CK_JSON_NULL: return true;
    case CK_JSON_BOOL: return a->boolean == b->boolean;
    case CK_JSON_NUMBER:
    case CK_JSON_STRING: return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
    case CK_JSON_ARRAY:
    case CK_JSON_OBJECT:
      if (a->n != b->n) return false;
      for (int i = 0; i < a->n; i++) {
        if (a->kind == CK_JSON_OBJECT && strcmp(a->keys[i], b->keys[i]) != 0) return false;
        if (!json_eq(a->items[i], b->items[i])) return false;
      }
      return true;
  }
  return false;
}

/* The destination an evidence file names, without what differs per open (none does). */
static bool same_destination(const ck_json_t *a, const ck_json_t *b) {
  static const char *const fields[] = {"database", "table", "table_uuid", "engine", "engine_full",
                                       "create_table_query", "metadata_modification_time", NULL};
  for (int i = 0; fields[i]; i++)
    if (!json_eq(ck_json_get(a, fields[i]), ck_json_get(b, fields[i]))) return false;
  const ck_json_t *sa = ck_json_get(a, "server"), *sb = ck_json_get(b, "server");
  return json_eq(ck_json_get(sa, "uuid"), ck_json_get(sb, "uuid")) &&
         json_eq(ck_json_get(sa, "version"), ck_json_get(sb, "version")) &&
         json_eq(ck_json_get(sa, "host"), ck_json_get(sb, "host"));
}

/* A checkpoint below the oldest completed marker the bundle holds, once retention pruned
 * markers (the id floor): whether it completed is not known. */
static bool marker_pruned(const rec_t *r, int64_t id) {
  return r->id_floor > 0 && r->ncompleted > 0 && id < r->completed[0];
}

static int walk_scope(rec_t *r) {
  /* subtask 0 decides the intervals; every other subtask must have the same */
  int64_t at = r->checkpoint;
  for (;;) {
    if (r->nintervals == MAX_INTERVALS) {
      set_check(r, C_SCOPE, ST_UNSUPPORTED, "the scope has more than %d intervals", MAX_INTERVALS);
      return 1;
    }
    int rc;
    const ck_json_t *ev = evidence(r, 0, at, &rc);
    if (!ev) {
      set_check(r, C_SCOPE, ST_UNAVAILABLE, "the evidence of sink subtask 0 for interval %lld "
                "(epoch-%lld.sink.json) is %s", (long long)at, (long long)at,
                rc == -ENOENT ? "missing from the bundle" : "unreadable or damaged");
      return 1;
    }
    if (r->nintervals == 0) r->ev0 = ev;
    r->intervals[r->nintervals++] = at;
    int64_t prev = ck_json_get_int(ev, "previous_barrier", -1);
    if (prev < 0) {
      set_check(r, C_SCOPE, ST_UNAVAILABLE, "epoch-%lld.sink.json has no previous_barrier",
                (long long)at);
      return 1;
    }
    if (prev == 0 || is_completed(r, prev)) {
      r->start = prev;
      r->start_known = true;
      r->restored_from = ck_json_get_int(ev, "restored_from", 0);
      return 0;
    }
    if (marker_pruned(r, prev)) { /* never walked past: that would guess the scope's start */
      set_check(r, C_SCOPE, ST_UNAVAILABLE, "checkpoint %lld, the barrier before interval %lld, "
                "is below the bundle's oldest completed marker (%lld) and retention pruned "
                "markers (id floor %lld): whether it completed, and so where the scope starts, "
                "is not known (run with --checkpoints-retained above the checkpoints you audit)",
                (long long)prev, (long long)at, (long long)r->completed[0],
                (long long)r->id_floor);
      return 1;
    }
    at = prev;
  }
}

static void ledger_add(rec_t *r, int64_t ckpt, int subtask, const ck_json_t *e) {
  if (r->nledger == r->capledger) {
    r->capledger = r->capledger ? r->capledger * 2 : 64;
    r->ledger = ck_realloc(r->ledger, (size_t)r->capledger * sizeof *r->ledger);
  }
  ledger_entry_t *l = &r->ledger[r->nledger++];
  l->checkpoint = ckpt;
  l->subtask = subtask;
  l->token = ck_json_get_str(e, "token");
  l->block = ck_json_get_str(e, "block");
  l->rows = ck_json_get_int(e, "rows", 0);
  l->in_doubt = ck_json_get_bool(e, "in_doubt", false);
  l->resend = ck_json_get_str(e, "resend");
  l->why = ck_json_get_str(e, "why");
}

static bool parse_sql_type(const char *s, ck_type_t *t) {
  memset(t, 0, sizeof *t);
  if (!s) return false;
  static const struct { const char *name; ck_type_id_t id; } names[] = {
      {"BOOLEAN", CK_T_BOOL}, {"INT", CK_T_INT32},      {"BIGINT", CK_T_INT64},
      {"FLOAT", CK_T_FLOAT32}, {"DOUBLE", CK_T_FLOAT64}, {"VARCHAR", CK_T_STRING},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(s, names[i].name) == 0) {
      t->id = names[i].id;
      return true;
    }
  unsigned p, sc;
  if (sscanf(s, "DECIMAL(%u, %u)", &p, &sc) == 2) {
    t->id = CK_T_DECIMAL, t->precision = (uint8_t)p, t->scale = (uint8_t)sc;
    return true;
  }
  if (strncmp(s, "TIMESTAMP", 9) == 0) {
    t->id = CK_T_TIMESTAMP;
    return true;
  }
  return false;
}

/* The column plan of N's evidence: rules per written column, and the keys. */
static int column_plan(rec_t *r, ck_error_t *err) {
  const ck_json_t *acc = ck_json_get(r->ev0, "account");
  const ck_json_t *cols = ck_json_get(acc, "columns");
  if (!cols || cols->kind != CK_JSON_ARRAY || cols->n == 0 || cols->n > MAX_COLS) {
    set_check(r, C_SCOPE, ST_UNAVAILABLE, "the evidence of checkpoint %lld has no column plan",
              (long long)r->checkpoint);
    return 1;
  }
  r->ncols = cols->n;
  for (int i = 0; i < cols->n; i++) {
    const ck_json_t *c = cols->items[i];
    r->col_names[i] = ck_json_get_str(c, "column");
    ck_type_t t;
    char why[256];
    if (!r->col_names[i] || !parse_sql_type(ck_json_get_str(c, "declared"), &t)) {
      set_check(r, C_SCOPE, ST_UNSUPPORTED, "the column plan's column %d has a declared type "
                "the comparison does not read", i);
      return 1;
    }
    if (ck_cell_rule_init(t, ck_json_get_str(c, "target"), &r->rules[i], why, sizeof why)) {
      set_check(r, C_SCOPE, ST_UNSUPPORTED, "column %s: %s", r->col_names[i], why);
      return 1;
    }
  }
  /* the keys */
  const char *k = r->o->keys;
  while (k && *k) {
    size_t n = strcspn(k, ",");
    int idx = -1;
    for (int i = 0; i < r->ncols; i++)
      if (strlen(r->col_names[i]) == n && strncmp(r->col_names[i], k, n) == 0) idx = i;
    if (idx < 0)
      return refuse(r, err, "could not reconcile: --key %.*s is not a column the sink wrote "
                    "(its columns: see the report's scope.columns)", (int)n, k);
    if (r->nkeys == MAX_KEYS) return refuse(r, err, "could not reconcile: more than %d keys", MAX_KEYS);
    const ck_cell_rule_t *ru = &r->rules[idx];
    if (ru->ch.nullable || (ru->cls != CK_CELLS_INT && ru->cls != CK_CELLS_STRING)) {
      set_check(r, C_SCOPE, ST_UNSUPPORTED, "the key column %s is %s: a key is one or more "
                "integer or String columns, not Nullable", r->col_names[idx], ru->ch_name);
      return 1;
    }
    for (int j = 0; j < r->nkeys; j++)
      if (r->keys[j] == idx) return refuse(r, err, "could not reconcile: --key names %s twice", r->col_names[idx]);
    r->keys[r->nkeys++] = idx;
    k += n;
    if (*k == ',') k++;
  }
  if (!r->nkeys) return refuse(r, err, "could not reconcile: --key names no column");
  return 0;
}

/* One interval of one subtask: its evidence checked and its capture's rows into expected. */
static void interval_rows(rec_t *r, int subtask, int64_t ckpt) {
  int rc;
  const ck_json_t *ev = evidence(r, subtask, ckpt, &rc);
  if (!ev) {
    set_check(r, C_SCOPE, ST_UNAVAILABLE, "the evidence of sink subtask %d for interval %lld is %s",
              subtask, (long long)ckpt, rc == -ENOENT ? "missing from the bundle" : "unreadable");
    return;
  }
  /* every sink subtask's runner has an attempt of its own (on a cluster, one per worker's
   * executor): each subtask's intervals must come from its own attempt of N, and every
   * subtask's interval from the same barrier and restore point as subtask 0's */
  const ck_json_t *evn = ckpt == r->checkpoint ? ev : evidence(r, subtask, r->checkpoint, &rc);
  const char *attempt = ck_json_get_str(ev, "attempt");
  const char *own = evn ? ck_json_get_str(evn, "attempt") : NULL;
  if (!attempt || !own || strcmp(attempt, own) != 0) {
    set_check(r, C_SCOPE, ST_UNAVAILABLE, "the evidence of sink subtask %d for interval %lld is "
              "from attempt %s, its evidence of checkpoint %lld from %s: a subtask's scope is "
              "one runner attempt's", subtask, (long long)ckpt, attempt ? attempt : "?",
              (long long)r->checkpoint, own ? own : "?");
    return;
  }
  const ck_json_t *ev0 = evidence(r, 0, ckpt, &rc);
  if (subtask && (!ev0 || ck_json_get_int(ev, "previous_barrier", -1) !=
                              ck_json_get_int(ev0, "previous_barrier", -2) ||
                  ck_json_get_int(ev, "restored_from", -1) !=
                      ck_json_get_int(ev0, "restored_from", -2))) {
    set_check(r, C_SCOPE, ST_UNAVAILABLE, "the evidence of sink subtask %d for interval %lld "
              "comes from another barrier or restore point than subtask 0's: not one run",
              subtask, (long long)ckpt);
    return;
  }
  const ck_json_t *acc = ck_json_get(ev, "account");
  if (!json_eq(ck_json_get(acc, "columns"), ck_json_get(ck_json_get(r->ev0, "account"), "columns")) ||
      !same_destination(ck_json_get(acc, "destination"), r->dest)) {
    set_check(r, C_SCOPE, ST_UNAVAILABLE, "the evidence of sink subtask %d for interval %lld names "
              "another destination or column plan than checkpoint %lld's", subtask,
              (long long)ckpt, (long long)r->checkpoint);
    return;
  }
  const char *mode = ck_json_get_str(acc, "mode");
  if (!mode || strcmp(mode, "at_least_once") != 0) {
    set_check(r, C_SCOPE, ST_UNSUPPORTED, "the sink runs %s: reconciliation supports the "
              "ClickHouse native sink at least once", mode ? mode : "without a mode");
    return;
  }
  const ck_json_t *cap = ck_json_get(ev, "capture");
  const char *state = ck_json_get_str(cap, "state");
  int64_t seen = ck_json_get_int(cap, "records_seen", -1),
          stored = ck_json_get_int(cap, "records_stored", -2),
          records = ck_json_get_int(ev, "records", -3), acked = ck_json_get_int(acc, "rows", -4);
  if (ck_json_get_bool(cap, "truncated", true) || !state ||
      (strcmp(state, "written") != 0 && strcmp(state, "empty") != 0)) {
    set_check(r, C_SCOPE, ST_UNAVAILABLE, "the capture of sink subtask %d for interval %lld is %s%s: "
              "the expectation would be partial (raise --capture-records)", subtask,
              (long long)ckpt, state ? state : "absent",
              ck_json_get_bool(cap, "truncated", false) ? ", truncated" : "");
    return;
  }
  if (seen != stored || stored != records || records != acked) {
    set_check(r, C_SCOPE, ST_UNAVAILABLE, "sink subtask %d, interval %lld: the ledger acknowledged "
              "%lld rows, the runner counted %lld, the capture saw %lld and stored %lld: they must "
              "agree", subtask, (long long)ckpt, (long long)acked, (long long)records,
              (long long)seen, (long long)stored);
    return;
  }
  const ck_json_t *ledger = ck_json_get(acc, "ledger");
  int first_entry = r->nledger;
  for (int i = 0; ledger && i < ledger->n; i++) ledger_add(r, ckpt, subtask, ledger->items[i]);
  r->scope_rows += records;
  if (stored == 0) return;
  /* the capture */
  char rel[256];
  snprintf(rel, sizeof rel, "%s/op-%d/subtask-%d/epoch-%lld.cap", CK_BUNDLE_CAPTURE, r->sink_op,
           subtask, (long long)ckpt);
  ck_buf_t data;
  ck_buf_init(&data);
  rc = bundle_file(r, rel, &data);
  ck_capture_reader_t *cr = NULL;
  ck_error_t e = {0};
  if (rc || ck_capture_reader_open(data.data, data.len, &cr, &e)) {
    set_check(r, C_SCOPE, ST_UNAVAILABLE, "the capture %s is %s", rel,
              rc == -ENOENT ? "missing from the bundle" : e.message[0] ? e.message : "unreadable");
    ck_buf_fini(&data);
    return;
  }
  const ck_capture_header_t *h = ck_capture_reader_header(cr);
  int map[MAX_COLS];
  for (int i = 0; i < r->ncols; i++) {
    const char *sqlc = ck_json_get_str(ck_json_at(ck_json_get(acc, "columns"), i), "sql_column");
    map[i] = -1;
    for (int c = 0; c < h->ncols; c++)
      if (sqlc && strcmp(h->names[c], sqlc) == 0) map[i] = c;
    if (map[i] < 0 || h->types[map[i]].id != r->rules[i].sql.id) {
      set_check(r, C_SCOPE, ST_UNAVAILABLE, "the capture %s has no column %s of the column plan's "
                "type", rel, sqlc ? sqlc : "?");
      goto done;
    }
  }
  int64_t rows = 0, entry = first_entry, in_entry = 0;
  ck_capture_item_t it;
  while ((rc = ck_capture_reader_next(cr, &it, &e)) == 1) {
    if (!it.batch) continue;
    for (size_t i = 0; i < it.batch->nrows; i++) {
      if (ck_batch_kind(it.batch, i) != CK_ROW_INSERT) {
        set_check(r, C_SCOPE, ST_UNSUPPORTED, "the capture %s holds a row that is not an insert: "
                  "reconciliation supports append-only sinks", rel);
        ck_batch_free(it.batch);
        goto done;
      }
      ck_rrow_t *row = ck_rowset_add(&r->expected);
      for (int c = 0; c < r->ncols; c++)
        ck_cell_from_sql(&r->rules[c], &it.batch->cols[map[c]], i, &r->expected.arena, &row->cells[c]);
      /* the ledger's INSERTs take the sink's input in order, a whole number of rows each */
      while (entry < r->nledger && in_entry >= r->ledger[entry].rows) entry++, in_entry = 0;
      row->origin = entry < r->nledger ? entry : -1;
      in_entry++;
      rows++;
    }
    ck_batch_free(it.batch);
  }
  if (rc < 0) {
    set_check(r, C_SCOPE, ST_UNAVAILABLE, "the capture %s could not be read: %s", rel, e.message);
  } else if (rows != stored) {
    set_check(r, C_SCOPE, ST_UNAVAILABLE, "the capture %s holds %lld rows, its evidence says %lld",
              rel, (long long)rows, (long long)stored);
  }
done:
  ck_capture_reader_free(cr);
  ck_buf_fini(&data);
}

static int build_scope(rec_t *r, ck_error_t *err) {
  if (walk_scope(r)) return 0;
  r->attempt = ck_json_get_str(r->ev0, "attempt");
  const ck_json_t *acc = ck_json_get(r->ev0, "account");
  r->dest = ck_json_get(acc, "destination");
  if (!r->attempt || !r->dest) {
    set_check(r, C_SCOPE, ST_UNAVAILABLE, "the evidence of checkpoint %lld has no attempt or no "
              "ClickHouse account", (long long)r->checkpoint);
    return 0;
  }
  /* --database / --table against the evidence's destination */
  const char *db = ck_json_get_str(r->dest, "database"), *tb = ck_json_get_str(r->dest, "table");
  if ((r->o->database && (!db || strcmp(db, r->o->database))) ||
      (r->o->table && (!tb || strcmp(tb, r->o->table))))
    return refuse(r, err, "could not reconcile: --database/--table do not fit the bundle: the "
                  "sink wrote %s.%s", db ? db : "?", tb ? tb : "?");
  int rc = column_plan(r, err);
  if (rc) return rc < 0 ? rc : 0;
  ck_rowset_init(&r->expected, r->ncols, r->nkeys, r->keys);
  r->have_expected = true;
  for (int s = 0; s < r->parallelism && s < MAX_SUBTASKS; s++)
    for (int i = r->nintervals - 1; i >= 0; i--) interval_rows(r, s, r->intervals[i]);
  if (r->checks[C_SCOPE].st != ST_PASS && r->checks[C_SCOPE].st != ST_SKIPPED) return 0;
  if (r->scope_rows == 0) {
    set_check(r, C_SCOPE, ST_UNAVAILABLE, "the scope of checkpoint %lld holds no row: an empty "
              "scope establishes nothing", (long long)r->checkpoint);
    return 0;
  }
  ck_rowset_sort(&r->expected);
  for (size_t i = 1; i < r->expected.n; i++)
    if (ck_rrow_key_cmp(&r->expected, &r->expected.rows[i - 1], &r->expected.rows[i]) == 0) {
      set_check(r, C_SCOPE, ST_UNSUPPORTED, "a key is written more than once in the scope (row %zu "
                "of the sorted expectation): the key must identify one row the job writes",
                i);
      return 0;
    }
  set_check(r, C_SCOPE, ST_PASS, "%d interval(s), %lld rows, %s%s", r->nintervals,
            (long long)r->scope_rows, r->parallelism > 1 ? "each sink subtask's own attempt; "
            "subtask 0's " : "attempt ", r->attempt);
  return 0;
}

/* ---------------------------------------------------------------- the destination */

static void put_str(ck_buf_t *out, const char *s) {
  if (s) ck_buf_put_json_str(out, s, strlen(s));
  else ck_buf_puts(out, "null");
}

typedef struct read_ctx {
  rec_t *r;
  ck_rowset_t *set;
  char bad[512];
} read_ctx_t;

static int on_rows(void *arg, const ck_ch_block_t *b, ck_error_t *err) {
  read_ctx_t *x = arg;
  rec_t *r = x->r;
  if (b->ncols != r->ncols)
    return ck_error_set(err, CK_EPROTO, "the destination answered %d columns, not %d", b->ncols,
                        r->ncols);
  for (int c = 0; c < b->ncols; c++)
    if (!ck_ch_type_eq(&b->cols[c].type, &r->rules[c].ch)) {
      snprintf(x->bad, sizeof x->bad, "column %s is read as %s, the sink wrote %s",
               r->col_names[c], b->cols[c].type_name, r->rules[c].ch_name);
      return ck_error_set(err, CK_ETYPE, "%s", x->bad);
    }
  for (size_t i = 0; i < b->rows; i++) {
    ck_rrow_t *row = ck_rowset_add(x->set);
    for (int c = 0; c < b->ncols; c++)
      ck_cell_from_ch(&r->rules[c], &b->cols[c], i, &x->set->arena, &row->cells[c]);
  }
  return 0;
}

/* Every expected key's rows, keys_per_read keys per statement. */
static int read_scope(rec_t *r, ck_rdest_t *d, ck_rowset_t *set, ck_error_t *err) {
  ck_buf_t head, sql;
  ck_buf_init(&head);
  ck_buf_init(&sql);
  ck_buf_puts(&head, "SELECT ");
  for (int c = 0; c < r->ncols; c++) {
    if (c) ck_buf_puts(&head, ", ");
    ck_ch_quote_ident(r->col_names[c], &head);
  }
  ck_buf_puts(&head, " FROM ");
  ck_ch_quote_ident(ck_json_get_str(r->dest, "database"), &head);
  ck_buf_putc(&head, '.');
  ck_ch_quote_ident(ck_json_get_str(r->dest, "table"), &head);
  ck_buf_puts(&head, " WHERE ");
  if (r->nkeys > 1) ck_buf_putc(&head, '(');
  for (int k = 0; k < r->nkeys; k++) {
    if (k) ck_buf_puts(&head, ", ");
    ck_ch_quote_ident(r->col_names[r->keys[k]], &head);
  }
  if (r->nkeys > 1) ck_buf_putc(&head, ')');
  ck_buf_puts(&head, " IN (");
  int rc = 0;
  size_t per = r->o->keys_per_read > 0 ? (size_t)r->o->keys_per_read : 1000;
  /* the keys to read: the expectation's, or with a reference the union of both (sorted, each
   * once), so a row the job dropped is looked for and a row it introduced is read */
  const ck_rowset_t *ks = r->have_keyset ? &r->keyset : &r->expected;
  for (size_t i = 0; i < ks->n && !rc; i += per) {
    ck_buf_reset(&sql);
    ck_buf_append(&sql, head.data, head.len);
    for (size_t j = i; j < i + per && j < ks->n; j++) {
      if (j > i) ck_buf_puts(&sql, ", ");
      if (r->nkeys > 1) ck_buf_putc(&sql, '(');
      for (int k = 0; k < r->nkeys; k++) {
        if (k) ck_buf_puts(&sql, ", ");
        int kc = r->keys[k];
        if (ck_rdest_literal(&r->rules[kc], &ks->rows[j].cells[kc], &sql)) {
          rc = ck_error_set(err, CK_EUNSUPPORTED, "a key of column %s cannot be written as a "
                            "literal", r->col_names[kc]);
          goto out;
        }
      }
      if (r->nkeys > 1) ck_buf_putc(&sql, ')');
    }
    ck_buf_putc(&sql, ')');
    read_ctx_t x = {r, set, ""};
    rc = ck_rdest_query(d, sql.data, on_rows, &x, err);
  }
out:
  ck_buf_fini(&head);
  ck_buf_fini(&sql);
  if (!rc) ck_rowset_sort(set);
  return rc;
}

typedef struct table_facts {
  ck_rdest_rows_t tb, cols, muts;
} table_facts_t;

static void facts_fini(table_facts_t *f) {
  ck_rdest_rows_fini(&f->tb);
  ck_rdest_rows_fini(&f->cols);
  ck_rdest_rows_fini(&f->muts);
}

static int read_facts(rec_t *r, ck_rdest_t *d, bool has_uuid, table_facts_t *f, ck_error_t *err) {
  memset(f, 0, sizeof *f);
  const char *db = ck_json_get_str(r->dest, "database"), *tb = ck_json_get_str(r->dest, "table");
  ck_buf_t where, sql;
  ck_buf_init(&where);
  ck_buf_init(&sql);
  ck_buf_puts(&where, " WHERE database = ");
  ck_rdest_quote_str(db, strlen(db), &where);
  ck_buf_puts(&where, " AND ");
  ck_buf_printf(&sql, "SELECT engine, engine_full, create_table_query, %s, "
                "toString(metadata_modification_time) FROM system.tables%s name = ",
                has_uuid ? "toString(uuid)" : "''", where.data);
  ck_rdest_quote_str(tb, strlen(tb), &sql);
  int rc = ck_rdest_strings(d, sql.data, 5, &f->tb, err);
  if (!rc) {
    ck_buf_reset(&sql);
    ck_buf_printf(&sql, "SELECT name, type FROM system.columns%s table = ", where.data);
    ck_rdest_quote_str(tb, strlen(tb), &sql);
    rc = ck_rdest_strings(d, sql.data, 2, &f->cols, err);
  }
  if (!rc) {
    ck_buf_reset(&sql);
    ck_buf_printf(&sql, "SELECT mutation_id, command, toString(create_time), toString(is_done) "
                  "FROM system.mutations%s table = ", where.data);
    ck_rdest_quote_str(tb, strlen(tb), &sql);
    ck_buf_puts(&sql, " ORDER BY mutation_id");
    rc = ck_rdest_strings(d, sql.data, 4, &f->muts, err);
  }
  ck_buf_fini(&where);
  ck_buf_fini(&sql);
  return rc;
}

static bool facts_same(const ck_rdest_rows_t *a, const ck_rdest_rows_t *b) {
  if (a->nrows != b->nrows || a->ncols != b->ncols) return false;
  for (int i = 0; i < a->nrows * a->ncols; i++)
    if (strcmp(a->cells[i], b->cells[i]) != 0) return false;
  return true;
}

static void put_mutations(ck_buf_t *out, const ck_rdest_rows_t *m) {
  ck_buf_putc(out, '[');
  for (int i = 0; i < m->nrows; i++) {
    if (i) ck_buf_putc(out, ',');
    ck_buf_puts(out, "{\"id\":");
    put_str(out, ck_rdest_cell(m, i, 0));
    ck_buf_puts(out, ",\"command\":");
    put_str(out, ck_rdest_cell(m, i, 1));
    ck_buf_puts(out, ",\"created\":");
    put_str(out, ck_rdest_cell(m, i, 2));
    ck_buf_printf(out, ",\"done\":%s}", strcmp(ck_rdest_cell(m, i, 3), "0") ? "true" : "false");
  }
  ck_buf_putc(out, ']');
}

static int unfinished(const ck_rdest_rows_t *m) {
  for (int i = 0; i < m->nrows; i++)
    if (strcmp(ck_rdest_cell(m, i, 3), "0") == 0) return i;
  return -1;
}

/* One identity fact: compared when both sides have it. */
static void ident(rec_t *r, bool *first, const char *what, const char *recorded, const char *seen,
                  bool *differs, char *which, size_t wl) {
  if (!recorded || !seen) {
    ck_buf_printf(&r->identity, "%s{\"fact\":\"%s\",\"checked\":false,\"why\":", *first ? "" : ",",
                  what);
    put_str(&r->identity, !recorded && !seen ? "neither the evidence nor the server has it (none, "
            "or the nil UUID)" : !recorded ? "the evidence does not record it" : "the server does "
            "not have it");
    ck_buf_putc(&r->identity, '}');
    *first = false;
    return;
  }
  bool eq = strcmp(recorded, seen) == 0;
  ck_buf_printf(&r->identity, "%s{\"fact\":\"%s\",\"checked\":true,\"equal\":%s,\"recorded\":",
                *first ? "" : ",", what, eq ? "true" : "false");
  put_str(&r->identity, recorded);
  ck_buf_puts(&r->identity, ",\"read\":");
  put_str(&r->identity, seen);
  ck_buf_putc(&r->identity, '}');
  *first = false;
  if (!eq && !*differs) {
    *differs = true;
    snprintf(which, wl, "%s: the evidence recorded '%.200s', the server has '%.200s'", what,
             recorded, seen);
  }
}

static const char *nz(const char *s) { return s && *s ? s : NULL; }

#define NIL_UUID "00000000-0000-0000-0000-000000000000"

static void server_time(rec_t *r, ck_rdest_t *d, int i, ck_error_t *err) {
  ck_rdest_rows_t t;
  r->wall[i] = ck_wall_ms();
  r->mono[i] = ck_mono_ms();
  if (ck_rdest_strings(d, "SELECT toString(now())", 1, &t, err) == 0 && t.nrows == 1)
    snprintf(r->server_time[i], sizeof r->server_time[i], "%s", ck_rdest_cell(&t, 0, 0));
  ck_rdest_rows_fini(&t);
}

static int destination(rec_t *r, ck_error_t *err) {
  ck_rdest_conf_t conf = {
      .host = r->o->host,
      .port = r->o->port,
      .user = r->o->user,
      .password = r->o->password,
      .max_rows = r->o->max_rows,
      .max_execution_s = r->o->max_execution_s,
      .receive_timeout_ms = r->o->receive_timeout_ms,
  };
  ck_rdest_t d;
  ck_error_t e = {0};
  table_facts_t before = {0}, after = {0};
  ck_rdest_rows_t srv = {0};
  int rc = ck_rdest_open(&d, &conf, &e);
  if (rc) {
    set_check(r, C_DEST, ST_UNAVAILABLE, "%s", e.message);
    return 0;
  }
  server_time(r, &d, 0, &e);
  /* the server */
  rc = ck_rdest_strings(&d, "SELECT version(), hostName(), toString((SELECT count() FROM "
                        "system.functions WHERE name = 'serverUUID')), toString((SELECT count() "
                        "FROM system.columns WHERE database = 'system' AND table = 'tables' AND "
                        "name = 'uuid'))", 4, &srv, &e);
  if (rc || srv.nrows != 1) goto unavailable;
  bool fn_uuid = strcmp(ck_rdest_cell(&srv, 0, 2), "0") != 0;
  bool col_uuid = strcmp(ck_rdest_cell(&srv, 0, 3), "0") != 0;
  char uuid[64] = "";
  if (fn_uuid) {
    ck_rdest_rows_t u;
    if ((rc = ck_rdest_strings(&d, "SELECT toString(serverUUID())", 1, &u, &e))) goto unavailable;
    if (u.nrows == 1 && strcmp(ck_rdest_cell(&u, 0, 0), NIL_UUID) != 0)
      snprintf(uuid, sizeof uuid, "%s", ck_rdest_cell(&u, 0, 0));
    ck_rdest_rows_fini(&u);
  }
  if ((rc = read_facts(r, &d, col_uuid, &before, &e))) goto unavailable;
  /* identity first */
  const ck_json_t *sv = ck_json_get(r->dest, "server");
  const char *acc_endpoint = ck_json_get_str(ck_json_get(r->ev0, "account"), "endpoint");
  char endpoint[300];
  snprintf(endpoint, sizeof endpoint, "%s:%d", r->o->host, r->o->port);
  bool first = true, differs = false;
  char which[600] = "";
  const char *rec_suuid = ck_json_get_str(sv, "uuid");
  ck_buf_puts(&r->identity, "{\"server\":[");
  ident(r, &first, "server_uuid", rec_suuid, nz(uuid), &differs, which, sizeof which);
  bool server_by_uuid = rec_suuid && uuid[0];
  ident(r, &first, "endpoint", acc_endpoint, endpoint, &differs, which, sizeof which);
  ident(r, &first, "version", ck_json_get_str(sv, "version"), ck_rdest_cell(&srv, 0, 0), &differs,
        which, sizeof which);
  ident(r, &first, "host_name", ck_json_get_str(sv, "host"), ck_rdest_cell(&srv, 0, 1), &differs,
        which, sizeof which);
  ck_buf_printf(&r->identity, "],\"server_by\":\"%s\",\"table\":[",
                server_by_uuid ? "uuid" : "fallback: endpoint, version, host name");
  first = true;
  if (differs) { /* another server: nothing about its tables is the evidence's */
    ck_buf_puts(&r->identity, "]}");
    facts_fini(&before);
    ck_rdest_rows_fini(&srv);
    ck_rdest_close(&d);
    return refuse(r, err, "could not reconcile: the server is not the one the evidence names: %s",
                  which);
  }
  if (before.tb.nrows != 1) {
    ck_buf_puts(&r->identity, "]}");
    facts_fini(&before);
    ck_rdest_rows_fini(&srv);
    ck_rdest_close(&d);
    return refuse(r, err, "could not reconcile: the destination %s.%s does not exist on %s: the "
                  "table the evidence names is gone (dropped or renamed)",
                  ck_json_get_str(r->dest, "database"), ck_json_get_str(r->dest, "table"), endpoint);
  }
  const char *tuuid = nz(ck_rdest_cell(&before.tb, 0, 3));
  if (tuuid && strcmp(tuuid, NIL_UUID) == 0) tuuid = NULL;
  const char *mtime = ck_rdest_cell(&before.tb, 0, 4);
  if (strcmp(mtime, "0000-00-00 00:00:00") == 0 || strcmp(mtime, "1970-01-01 00:00:00") == 0)
    mtime = NULL;
  const char *rec_tuuid = ck_json_get_str(r->dest, "table_uuid");
  ident(r, &first, "table_uuid", rec_tuuid, tuuid, &differs, which, sizeof which);
  bool table_by_uuid = rec_tuuid && tuuid;
  ident(r, &first, "engine", ck_json_get_str(r->dest, "engine"), ck_rdest_cell(&before.tb, 0, 0),
        &differs, which, sizeof which);
  /* with both UUIDs the table is identified; its definition is then the form check's to judge
   * (an ALTER is not a different table), and the fallbacks are only compared, not decisive */
  bool dummy = false;
  bool *dec = table_by_uuid ? &dummy : &differs;
  char ignored[8];
  ident(r, &first, "engine_full", ck_json_get_str(r->dest, "engine_full"),
        nz(ck_rdest_cell(&before.tb, 0, 1)), dec, table_by_uuid ? ignored : which,
        table_by_uuid ? sizeof ignored : sizeof which);
  ident(r, &first, "create_table_query", ck_json_get_str(r->dest, "create_table_query"),
        nz(ck_rdest_cell(&before.tb, 0, 2)), dec, table_by_uuid ? ignored : which,
        table_by_uuid ? sizeof ignored : sizeof which);
  ident(r, &first, "metadata_modification_time",
        ck_json_get_str(r->dest, "metadata_modification_time"), mtime, dec,
        table_by_uuid ? ignored : which, table_by_uuid ? sizeof ignored : sizeof which);
  ck_buf_printf(&r->identity, "],\"table_by\":\"%s\"}",
                table_by_uuid ? "uuid (the definition's facts compared, judged by the form "
                "check)" : "fallback: engine, engine_full, create_table_query, "
                "metadata_modification_time where recorded");
  if (differs) {
    facts_fini(&before);
    ck_rdest_rows_fini(&srv);
    ck_rdest_close(&d);
    return refuse(r, err, "could not reconcile: the destination is not the one the evidence "
                  "names: %s", which);
  }
  /* the form */
  const char *engine = ck_rdest_cell(&before.tb, 0, 0);
  const char *create = ck_rdest_cell(&before.tb, 0, 2);
  if (strcmp(engine, "MergeTree") != 0) {
    set_check(r, C_DEST, ST_UNSUPPORTED, "the table's engine is %s: reconciliation supports a "
              "plain MergeTree (not Replicated*, Shared*, Distributed, nor an engine whose "
              "merges rewrite rows)", engine);
    goto done;
  }
  if (strstr(create, " TTL ")) {
    set_check(r, C_DEST, ST_UNSUPPORTED, "the table has a TTL: rows may expire under it");
    goto done;
  }
  for (int c = 0; c < r->ncols; c++) {
    int found = -1;
    for (int i = 0; i < before.cols.nrows; i++)
      if (strcmp(ck_rdest_cell(&before.cols, i, 0), r->col_names[c]) == 0) found = i;
    if (found < 0) {
      set_check(r, C_DEST, ST_UNAVAILABLE, "the written column %s is no longer in the table",
                r->col_names[c]);
      goto done;
    }
    if (strcmp(ck_rdest_cell(&before.cols, found, 1), r->rules[c].ch_name) != 0) {
      set_check(r, C_DEST, ST_UNAVAILABLE, "the written column %s is now %s, the sink wrote it as "
                "%s", r->col_names[c], ck_rdest_cell(&before.cols, found, 1), r->rules[c].ch_name);
      goto done;
    }
  }
  int u = unfinished(&before.muts);
  if (u >= 0) {
    set_check(r, C_DEST, ST_UNAVAILABLE, "a mutation of the table is not done (%s: %s): the rows "
              "are changing", ck_rdest_cell(&before.muts, u, 0), ck_rdest_cell(&before.muts, u, 1));
    goto done;
  }
  /* the scope, twice */
  ck_rowset_init(&r->read[0], r->ncols, r->nkeys, r->keys);
  ck_rowset_init(&r->read[1], r->ncols, r->nkeys, r->keys);
  r->have_read = true;
  if ((rc = read_scope(r, &d, &r->read[0], &e))) goto unavailable;
  struct timespec ts = {r->o->pause_ms / 1000, (long)(r->o->pause_ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  if ((rc = read_scope(r, &d, &r->read[1], &e))) goto unavailable;
  if ((rc = read_facts(r, &d, col_uuid, &after, &e))) goto unavailable;
  server_time(r, &d, 1, &e);
  ck_buf_puts(&r->mutations, "{\"before\":");
  put_mutations(&r->mutations, &before.muts);
  ck_buf_puts(&r->mutations, ",\"after\":");
  put_mutations(&r->mutations, &after.muts);
  ck_buf_putc(&r->mutations, '}');
  if ((u = unfinished(&after.muts)) >= 0 || !facts_same(&before.muts, &after.muts)) {
    set_check(r, C_DEST, ST_UNAVAILABLE, "a mutation of the table began or was running during the "
              "read%s%s", u >= 0 ? ": " : "", u >= 0 ? ck_rdest_cell(&after.muts, u, 1) : "");
    goto done;
  }
  if (!facts_same(&before.tb, &after.tb) || !facts_same(&before.cols, &after.cols)) {
    set_check(r, C_DEST, ST_UNAVAILABLE, "the table's definition changed during the read");
    goto done;
  }
  const ck_rrow_t *where = NULL;
  if (ck_diff_reads(&r->read[0], &r->read[1], &where) >= 0) {
    ck_buf_t k;
    ck_buf_init(&k);
    for (int i = 0; i < r->nkeys; i++) {
      if (i) ck_buf_puts(&k, ", ");
      ck_cell_json(&r->rules[r->keys[i]], &where->cells[r->keys[i]], &k);
    }
    set_check(r, C_DEST, ST_UNAVAILABLE, "the key (%s) was read differently twice, %d ms apart: "
              "the table is changing", k.data ? k.data : "", r->o->pause_ms);
    ck_buf_fini(&k);
    goto done;
  }
  set_check(r, C_DEST, ST_PASS, "identity by %s (server) and %s (table); a plain MergeTree, no TTL, "
            "every written column of its type; no mutation running; the scope read twice, "
            "equal", server_by_uuid ? "UUID" : "fallbacks", table_by_uuid ? "UUID" : "fallbacks");
  goto done;
unavailable:
  if (ck_rdest_bound(&e))
    set_check(r, C_DEST, ST_UNAVAILABLE, "a read passed a bound (%s): nothing is decided on part "
              "of an answer", e.message);
  else
    set_check(r, C_DEST, ST_UNAVAILABLE, "could not read the destination: %s", e.message);
done:
  facts_fini(&before);
  facts_fini(&after);
  ck_rdest_rows_fini(&srv);
  ck_rdest_close(&d);
  return 0;
}

/* ---------------------------------------------------------------- the rows */

static void put_row(rec_t *r, const ck_rrow_t *row, ck_buf_t *out) {
  ck_buf_putc(out, '{');
  for (int c = 0; c < r->ncols; c++) {
    if (c) ck_buf_putc(out, ',');
    put_str(out, r->col_names[c]);
    ck_buf_putc(out, ':');
    ck_cell_json(&r->rules[c], &row->cells[c], out);
  }
  ck_buf_putc(out, '}');
}

/* What the evidence says about a duplicated expected row: NULL when nothing explains it. */
static const char *explain(rec_t *r, const ck_rrow_t *e, char *buf, size_t n) {
  if (e->origin >= 0 && e->origin < r->nledger) {
    const ledger_entry_t *l = &r->ledger[e->origin];
    if (l->in_doubt && l->resend && strcmp(l->resend, "may_duplicate") == 0) {
      snprintf(buf, n, "in_doubt_resend: the INSERT of block %s (interval %lld, subtask %d) was in "
               "doubt and resent, and its resend may land twice (%s)", l->block ? l->block : "?",
               (long long)l->checkpoint, l->subtask, l->why ? l->why : "no deduplication");
      r->explained_resend++;
      return buf;
    }
  }
  if (r->restored_from > 0 && r->start == r->restored_from) {
    snprintf(buf, n, "restore: the scope starts at checkpoint %lld, which this run restored; the "
             "run it discarded may have written this row after that checkpoint",
             (long long)r->restored_from);
    r->explained_restore++;
    return buf;
  }
  return NULL;
}

static int on_diff(void *arg, const ck_diff_item_t *it) {
  rec_t *r = arg;
  char why[512];
  const char *ex = it->kind == CK_DIFF_DUPLICATED ? explain(r, it->expected, why, sizeof why) : NULL;
  if (r->nfirst[it->kind] >= CK_RECONCILE_FIRST) return 0;
  ck_buf_t *o = &r->first[it->kind];
  if (r->nfirst[it->kind]++) ck_buf_putc(o, ',');
  ck_buf_puts(o, "{\"key\":{");
  const ck_rrow_t *kr = it->expected ? it->expected : it->actual;
  for (int k = 0; k < r->nkeys; k++) {
    if (k) ck_buf_putc(o, ',');
    put_str(o, r->col_names[r->keys[k]]);
    ck_buf_putc(o, ':');
    ck_cell_json(&r->rules[r->keys[k]], &kr->cells[r->keys[k]], o);
  }
  ck_buf_putc(o, '}');
  if (it->expected) {
    ck_buf_puts(o, ",\"expected\":");
    put_row(r, it->expected, o);
  }
  if (it->actual) {
    ck_buf_puts(o, ",\"read\":");
    put_row(r, it->actual, o);
  }
  if (it->kind == CK_DIFF_DUPLICATED) {
    ck_buf_printf(o, ",\"copies\":%lld,\"explained\":", (long long)it->copies);
    put_str(o, ex);
  }
  ck_buf_putc(o, '}');
  return 0;
}

static void compare(rec_t *r) {
  ck_diff_rows(&r->expected, &r->read[0], on_diff, r, &r->counts);
  int64_t bad = r->counts.n[CK_DIFF_MISSING] + r->counts.n[CK_DIFF_CHANGED] +
                r->counts.n[CK_DIFF_DUPLICATED] + r->counts.n[CK_DIFF_UNEXPECTED];
  if (!bad) {
    set_check(r, C_ROWS, ST_PASS, "%lld keys, every expected row read exactly once",
              (long long)r->counts.keys);
    return;
  }
  set_check(r, C_ROWS, ST_FAIL, "%lld missing, %lld changed, %lld duplicated (%lld explained by "
            "the evidence), %lld unexpected, over %lld keys",
            (long long)r->counts.n[CK_DIFF_MISSING], (long long)r->counts.n[CK_DIFF_CHANGED],
            (long long)r->counts.n[CK_DIFF_DUPLICATED],
            (long long)(r->explained_resend + r->explained_restore),
            (long long)r->counts.n[CK_DIFF_UNEXPECTED], (long long)r->counts.keys);
}

/* ---------------------------------------------------------------- the audit (--reference) */

/* Reads the artifact and binds it to the bundle's scope and the sink's columns: a reference
 * that is unfinished, altered, or for another scope or schema is refused (2). An incomplete
 * one is held unavailable and never compared. */
static int audit_load(rec_t *r, ck_error_t *err) {
  ck_error_t e;
  ck_error_clear(&e);
  if (ck_reference_read(r->o->reference, &r->ref, &e)) {
    ck_reference_fini(&r->ref);
    return refuse(r, err, "could not reconcile: %s", e.message);
  }
  r->have_ref = true;
  if (r->checks[C_SCOPE].st != ST_PASS || !r->scope_json) {
    set_check(r, C_REFERENCE, ST_UNAVAILABLE, "the bundle gives no complete scope to bind the "
              "reference to (%s)", r->checks[C_SCOPE].why);
    return 0;
  }
  ck_error_clear(&e);
  if (ck_reference_bind(&r->ref, r->scope_json, &e))
    return refuse(r, err, "could not reconcile: %s (%s)", e.message, r->o->reference);
  /* the same columns, types and key as the sink wrote */
  if (r->ref.ncols != r->ncols)
    return refuse(r, err, "could not reconcile: the reference has %d columns, the sink wrote %d",
                  r->ref.ncols, r->ncols);
  for (int c = 0; c < r->ncols; c++) {
    const ck_reference_col_t *rc = &r->ref.cols[c];
    ck_ch_type_t t;
    char why[160];
    bool key = false;
    for (int k = 0; k < r->nkeys; k++) key |= r->keys[k] == c;
    if (strcmp(rc->name, r->col_names[c]) != 0 ||
        ck_ch_type_parse(rc->type, strlen(rc->type), &t, why, sizeof why) ||
        !ck_ch_type_eq(&t, &r->rules[c].ch) || rc->key != key)
      return refuse(r, err, "could not reconcile: the reference's column %d is %s %s%s, the sink "
                    "wrote %s %s%s", c + 1, rc->name, rc->type, rc->key ? " (key)" : "",
                    r->col_names[c], r->rules[c].ch_name, key ? " (key)" : "");
  }
  if (!r->ref.complete) {
    const char *why = ck_json_str(ck_json_at(r->ref.incomplete, 0));
    set_check(r, C_REFERENCE, ST_UNAVAILABLE, "the reference says it is incomplete: %s; an "
              "incomplete reference is never compared", why ? why : "no reason given");
    return 0;
  }
  ck_rowset_init(&r->refrows, r->ncols, r->nkeys, r->keys);
  r->have_refrows = true;
  for (int64_t i = 0; i < r->ref.nrows; i++) {
    ck_rrow_t *row = ck_rowset_add(&r->refrows);
    row->origin = -1;
    ck_error_clear(&e);
    if (ck_reference_row_cells(&r->ref, i, r->rules, &r->refrows.arena, row->cells, &e))
      return refuse(r, err, "could not reconcile: %s (%s)", e.message, r->o->reference);
  }
  ck_rowset_sort(&r->refrows);
  /* the keys to read: expected ∪ reference, each once */
  ck_rowset_init(&r->keyset, r->ncols, r->nkeys, r->keys);
  r->have_keyset = true;
  const ck_rowset_t *src[2] = {&r->expected, &r->refrows};
  for (int s = 0; s < 2; s++)
    for (size_t i = 0; i < src[s]->n; i++) {
      ck_rrow_t *row = ck_rowset_add(&r->keyset);
      for (int c = 0; c < r->ncols; c++) row->cells[c] = src[s]->rows[i].cells[c];
    }
  ck_rowset_sort(&r->keyset);
  size_t w = 0;
  for (size_t i = 0; i < r->keyset.n; i++)
    if (!w || ck_rrow_key_cmp(&r->keyset, &r->keyset.rows[w - 1], &r->keyset.rows[i]) != 0)
      r->keyset.rows[w++] = r->keyset.rows[i];
  r->keyset.n = w;
  const char *impl = ck_json_get_str(r->ref.recorded, "implementation");
  set_check(r, C_REFERENCE, ST_PASS, "bound to checkpoint %lld's scope (fingerprint %.16s…), "
            "%lld rows, header and rows match their hashes; its implementation (%s) is recorded, "
            "not verified", (long long)r->checkpoint, r->ref.fingerprint,
            (long long)r->ref.nrows, impl ? impl : "not named");
  return 0;
}

typedef struct audit_ctx {
  rec_t *r;
  struct audit_diff *d;
} audit_ctx_t;

static int on_audit_diff(void *arg, const ck_diff_item_t *it) {
  audit_ctx_t *x = arg;
  struct audit_diff *d = x->d;
  if (d->nfirst[it->kind] >= CK_RECONCILE_FIRST) return 0;
  ck_buf_t *o = &d->first[it->kind];
  if (d->nfirst[it->kind]++) ck_buf_putc(o, ',');
  ck_buf_puts(o, "{\"expected\":");
  if (it->expected) put_row(x->r, it->expected, o);
  else ck_buf_puts(o, "null");
  ck_buf_puts(o, ",\"found\":");
  if (it->actual) put_row(x->r, it->actual, o);
  else ck_buf_puts(o, "null");
  if (it->kind == CK_DIFF_DUPLICATED) ck_buf_printf(o, ",\"copies\":%lld", (long long)it->copies);
  ck_buf_putc(o, '}');
  return 0;
}

static void audit_one(rec_t *r, int check, const ck_rowset_t *found, struct audit_diff *d,
                      const char *what) {
  audit_ctx_t x = {r, d};
  ck_diff_rows(&r->refrows, found, on_audit_diff, &x, &d->counts);
  const int64_t *n = d->counts.n;
  if (!(n[0] + n[1] + n[2] + n[3])) {
    set_check(r, check, ST_PASS, "%s: every reference row found exactly once over %lld keys",
              what, (long long)d->counts.keys);
    return;
  }
  set_check(r, check, ST_FAIL, "%s: %lld missing, %lld changed, %lld duplicated, %lld unexpected "
            "(reference rows: %zu, found: %zu)", what, (long long)n[0], (long long)n[1],
            (long long)n[2], (long long)n[3], r->refrows.n, found->n);
}

/* The two relationships the reference adds: itself against the captured input (the
 * transformation) and against the destination. The third, captured input against the
 * destination (the delivery), is reconcile.rows. */
static void audit_compare(rec_t *r) {
  if (!r->have_refrows) return;
  audit_one(r, C_TRANSFORM, &r->expected, &r->transform,
            "the reference against the sink's captured input");
  audit_one(r, C_REFDEST, &r->read[0], &r->refdest, "the reference against the destination");
}

static void audit_unrun(rec_t *r) {
  for (int c = C_REFERENCE; c < NCHECKS; c++)
    if (r->checks[c].st == ST_SKIPPED && !r->checks[c].why[0])
      set_check(r, c, ST_SKIPPED, "%s", c == C_REFERENCE ? "the artifact was not read"
                : r->have_refrows ? "the destination was not read completely"
                                  : "no complete reference to compare");
}

static void audit_section(const rec_t *r, const struct audit_diff *d, const char *name,
                          ck_buf_t *out) {
  ck_buf_printf(out, ",\"%s\":{\"keys\":%lld,\"matched\":%lld", name,
                (long long)d->counts.keys, (long long)d->counts.matched);
  for (int k = 0; k < CK_DIFF_NKINDS; k++) {
    ck_buf_printf(out, ",\"%s\":{\"count\":%lld,\"first\":[", ck_diff_kind_name(k),
                  (long long)d->counts.n[k]);
    if (d->first[k].len) ck_buf_append(out, d->first[k].data, d->first[k].len);
    ck_buf_puts(out, "]}");
  }
  ck_buf_putc(out, '}');
  (void)r;
}

static void audit_report(rec_t *r, ck_buf_t *out) {
  ck_buf_puts(out, ",\"reference\":{\"artifact\":");
  put_str(out, r->o->reference);
  if (!r->have_ref) {
    ck_buf_puts(out, "}");
    return;
  }
  ck_buf_printf(out, ",\"complete\":%s,\"rows\":%lld,\"verified\":{\"binding\":\"the "
                "fingerprint of its scope and columns is the bundle's\",\"fingerprint\":",
                r->ref.complete ? "true" : "false", (long long)r->ref.nrows);
  put_str(out, r->ref.fingerprint);
  ck_buf_puts(out, ",\"hashes\":\"SHA-256 over the header and the rows match the end line\","
              "\"cells\":\"every cell a canonical form of its column's rule\"},\"recorded\":"
              "{\"note\":\"what the artifact says of itself: not verified (integrity is not "
              "provenance)\",\"reference\":");
  /* re-render the recorded blocks from the header's text */
  ck_buf_t tmp;
  ck_buf_init(&tmp);
  const ck_json_t *blocks[2] = {r->ref.recorded, r->ref.read};
  for (int b = 0; b < 2; b++) {
    if (b) ck_buf_puts(out, ",\"read\":");
    const ck_json_t *v = blocks[b];
    if (!v || v->kind == CK_JSON_NULL) {
      ck_buf_puts(out, "null");
      continue;
    }
    /* a flat rendering: the members that are strings or integers */
    ck_buf_putc(out, '{');
    int n = 0;
    for (int i = 0; v->kind == CK_JSON_OBJECT && i < v->n; i++) {
      const ck_json_t *m = v->items[i];
      int64_t iv;
      if (m->kind == CK_JSON_STRING) {
        if (n++) ck_buf_putc(out, ',');
        put_str(out, v->keys[i]);
        ck_buf_putc(out, ':');
        ck_buf_put_json_str(out, m->str, m->len);
      } else if (ck_json_int(m, &iv) || m->kind == CK_JSON_BOOL) {
        if (n++) ck_buf_putc(out, ',');
        put_str(out, v->keys[i]);
        if (m->kind == CK_JSON_BOOL) ck_buf_printf(out, ":%s", m->boolean ? "true" : "false");
        else ck_buf_printf(out, ":%lld", (long long)iv);
      }
    }
    ck_buf_putc(out, '}');
  }
  ck_buf_fini(&tmp);
  ck_buf_puts(out, "}");
  if (r->have_refrows) {
    audit_section(r, &r->transform, "transformation", out);
    audit_section(r, &r->refdest, "reference_vs_destination", out);
  }
  ck_buf_printf(out, ",\"coverage\":\"the %zu selected keys (the reference's and the captured "
                "input's); the rest of the table is not established\"}",
                r->have_keyset ? r->keyset.n : (size_t)0);
}

/* ---------------------------------------------------------------- the report */

static void iso_time(int64_t ms, char *out, size_t n) {
  time_t s = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&s, &tm);
  char b[32];
  strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out, n, "%s.%03lldZ", b, (long long)(ms % 1000));
}

static int shown_checks(const rec_t *r) { return r->o->reference ? NCHECKS : C_REFERENCE; }

static int verdict(const rec_t *r) {
  if (r->refused) return CK_INCIDENT_USAGE;
  bool partial = false;
  for (int c = 0; c < shown_checks(r); c++) {
    if (r->checks[c].st == ST_FAIL) return CK_INCIDENT_FAIL;
    if (r->checks[c].st != ST_PASS) partial = true;
  }
  return partial ? CK_INCIDENT_PARTIAL : CK_INCIDENT_PASS;
}

static void report(rec_t *r, int status, ck_buf_t *out) {
  static const char *const vnames[] = {"pass", "fail", "refused", "partial"};
  ck_buf_printf(out, "{\"format\":\"%s\",\"version\":%d,\"verdict\":\"%s\",\"exit\":%d",
                CK_RECONCILE_FORMAT, CK_RECONCILE_VERSION, vnames[status], status);
  if (r->refused) {
    ck_buf_puts(out, ",\"refused\":");
    put_str(out, r->refusal);
  }
  ck_buf_puts(out, ",\"bundle\":");
  put_str(out, r->o->bundle);
  ck_buf_puts(out, ",\"job\":");
  put_str(out, r->job_id_text);
  char t[4][40];
  iso_time(r->wall[0], t[0], sizeof t[0]);
  iso_time(r->wall[1], t[1], sizeof t[1]);
  ck_buf_printf(out, ",\"observed\":{\"client\":{\"first_read\":\"%s\",\"last_read\":\"%s\","
                "\"monotonic_ms\":%lld},\"server\":{\"first_read\":",
                r->wall[0] ? t[0] : "", r->wall[1] ? t[1] : "",
                (long long)(r->mono[1] - r->mono[0]));
  put_str(out, r->server_time[0][0] ? r->server_time[0] : NULL);
  ck_buf_puts(out, ",\"last_read\":");
  put_str(out, r->server_time[1][0] ? r->server_time[1] : NULL);
  ck_buf_puts(out, ",\"clock\":\"the server's now(), its time zone, to the second\"}}");
  /* the scope */
  ck_buf_printf(out, ",\"scope\":{\"checkpoint\":%lld,\"start\":", (long long)r->checkpoint);
  if (r->start_known) ck_buf_printf(out, "%lld", (long long)r->start);
  else ck_buf_puts(out, "null"); /* not reached: nothing is claimed */
  ck_buf_printf(out, ",\"restored_from\":%lld,\"attempt\":", (long long)r->restored_from);
  put_str(out, r->attempt);
  ck_buf_printf(out, ",\"sink\":{\"op\":%d,\"name\":", r->sink_op);
  put_str(out, r->sink_name);
  ck_buf_printf(out, ",\"subtasks\":%d},\"intervals\":[", r->parallelism);
  for (int i = 0; i < r->nintervals; i++)
    ck_buf_printf(out, "%s%lld", i ? "," : "", (long long)r->intervals[i]);
  ck_buf_printf(out, "],\"rows\":%lld,\"columns\":[", (long long)r->scope_rows);
  for (int c = 0; c < r->ncols; c++) {
    if (c) ck_buf_putc(out, ',');
    ck_buf_puts(out, "{\"column\":");
    put_str(out, r->col_names[c]);
    ck_buf_puts(out, ",\"type\":");
    put_str(out, r->rules[c].ch_name);
    bool key = false;
    for (int k = 0; k < r->nkeys; k++) key |= r->keys[k] == c;
    ck_buf_printf(out, ",\"key\":%s}", key ? "true" : "false");
  }
  /* the source ranges and the logs they belong to: the bundle's scope document's */
  ck_buf_puts(out, "],\"sources\":");
  ck_buf_puts(out, r->scope_doc ? r->scope_doc : "null");
  ck_buf_puts(out, "}");
  /* the destination */
  ck_buf_puts(out, ",\"destination\":{\"endpoint\":");
  char ep[300];
  snprintf(ep, sizeof ep, "%s:%d", r->o->host ? r->o->host : "", r->o->port);
  put_str(out, ep);
  ck_buf_puts(out, ",\"database\":");
  put_str(out, ck_json_get_str(r->dest, "database"));
  ck_buf_puts(out, ",\"table\":");
  put_str(out, ck_json_get_str(r->dest, "table"));
  ck_buf_puts(out, ",\"identity\":");
  ck_buf_puts(out, r->identity.len ? r->identity.data : "null");
  ck_buf_puts(out, ",\"mutations\":");
  ck_buf_puts(out, r->mutations.len ? r->mutations.data : "null");
  ck_buf_puts(out, "}");
  /* method and assumptions */
  ck_buf_printf(out, ",\"method\":{\"statements\":\"SELECT only, each with readonly = 2, "
                "max_execution_time = %d, max_result_rows = %lld, timeout_overflow_mode and "
                "result_overflow_mode = throw\",\"receive_timeout_ms\":%d,\"reads\":2,"
                "\"pause_ms\":%d,\"keys_per_statement\":%d,\"comparison\":\"rows whole, as "
                "multisets, key by key, by the canonical cells of record 015\",\"keys\":[",
                r->o->max_execution_s, (long long)r->o->max_rows, r->o->receive_timeout_ms,
                r->o->pause_ms, r->o->keys_per_read);
  for (int k = 0; k < r->nkeys; k++) {
    if (k) ck_buf_putc(out, ',');
    put_str(out, r->col_names[r->keys[k]]);
  }
  ck_buf_puts(out, "]},\"assumptions\":["
              "\"the expectation is the sink's recorded input over the scope: it establishes the "
              "delivery, not the transformation\","
              "\"rows of keys outside the scope are not attributable to it and were not read\","
              "\"one observation: nothing about durability beyond the time it was made\","
              "\"the key identifies one row the job writes, in one interval\"]");
  /* the checks */
  if (r->o->reference) audit_report(r, out);
  ck_buf_puts(out, ",\"checks\":[");
  for (int c = 0; c < shown_checks(r); c++) {
    if (c) ck_buf_putc(out, ',');
    ck_buf_puts(out, "{\"name\":");
    put_str(out, r->checks[c].name);
    ck_buf_printf(out, ",\"status\":\"%s\",\"why\":", st_names[r->checks[c].st]);
    put_str(out, r->checks[c].why);
    ck_buf_putc(out, '}');
  }
  ck_buf_puts(out, "],\"rows\":");
  if (r->checks[C_ROWS].st == ST_PASS || r->checks[C_ROWS].st == ST_FAIL) {
    ck_buf_printf(out, "{\"expected\":%lld,\"read\":%zu,\"keys\":%lld,\"matched\":%lld",
                  (long long)r->expected.n, r->read[0].n, (long long)r->counts.keys,
                  (long long)r->counts.matched);
    for (int k = 0; k < CK_DIFF_NKINDS; k++) {
      ck_buf_printf(out, ",\"%s\":{\"count\":%lld,", ck_diff_kind_name(k),
                    (long long)r->counts.n[k]);
      if (k == CK_DIFF_DUPLICATED)
        ck_buf_printf(out, "\"explained_by_resend\":%lld,\"explained_by_restore\":%lld,",
                      (long long)r->explained_resend, (long long)r->explained_restore);
      ck_buf_puts(out, "\"first\":[");
      if (r->first[k].len) ck_buf_append(out, r->first[k].data, r->first[k].len);
      ck_buf_puts(out, "]}");
    }
    ck_buf_puts(out, ",\"guarantee\":\"missing, changed and unexpected rows are outside the "
                "at-least-once guarantee; duplicates are within it, but the destination then does "
                "not hold the scope's effects exactly once\"}");
  } else {
    ck_buf_puts(out, "null");
  }
  ck_buf_puts(out, "}\n");
}

static void text_summary(const rec_t *r, int status, ck_buf_t *text) {
  static const char *const vnames[] = {"PASS", "FAIL", "REFUSED", "PARTIAL"};
  if (r->refused) ck_buf_printf(text, "refused: %s\n", r->refusal);
  for (int c = 0; c < shown_checks(r); c++)
    ck_buf_printf(text, "%-22s %-11s %s\n", r->checks[c].name, st_names[r->checks[c].st],
                  r->checks[c].why);
  if (r->checks[C_ROWS].st == ST_FAIL)
    ck_buf_printf(text, "rows: %lld missing, %lld changed, %lld duplicated (%lld explained: %lld "
                  "by an in-doubt resend, %lld by the restore), %lld unexpected\n",
                  (long long)r->counts.n[0], (long long)r->counts.n[1], (long long)r->counts.n[2],
                  (long long)(r->explained_resend + r->explained_restore),
                  (long long)r->explained_resend, (long long)r->explained_restore,
                  (long long)r->counts.n[3]);
  ck_buf_printf(text, "%s (exit %d)\n", vnames[status], status);
}

/* ---------------------------------------------------------------- the command */

int ck_reconcile_run(const ck_reconcile_opts_t *o, ck_buf_t *text, ck_error_t *err) {
  rec_t *r = ck_calloc(1, sizeof *r);
  r->o = o;
  ck_arena_init(&r->arena, 1 << 16);
  static const char *const names[NCHECKS] = {"bundle.integrity", "reconcile.scope",
                                             "reconcile.destination", "reconcile.rows",
                                             "audit.reference", "audit.transformation",
                                             "audit.reference_vs_destination"};
  for (int c = 0; c < NCHECKS; c++) {
    r->checks[c].name = names[c];
    r->checks[c].st = ST_SKIPPED;
  }
  ck_buf_init(&r->identity);
  ck_buf_init(&r->mutations);
  ck_buf_init(&r->observed);
  ck_buf_init(&r->form);
  for (int k = 0; k < CK_DIFF_NKINDS; k++) {
    ck_buf_init(&r->first[k]);
    ck_buf_init(&r->transform.first[k]);
    ck_buf_init(&r->refdest.first[k]);
  }
  int rc = 0;
  struct stat st;
  if (stat(o->bundle, &st) || !S_ISDIR(st.st_mode)) {
    rc = refuse(r, err, "could not reconcile: %s is not a bundle directory", o->bundle);
    goto out;
  }
  /* the manifest, and --job */
  int mrc;
  r->manifest = bundle_json(r, CK_BUNDLE_MANIFEST, &mrc);
  if (r->manifest) {
    set_check(r, C_INTEGRITY, ST_PASS, "every file read matches its SHA-256 in manifest.json");
    const ck_json_t *job = ck_json_get(r->manifest, "job");
    const ck_json_t *id = ck_json_get(job, "id");
    int64_t v;
    if (id && ck_json_int(id, &v)) r->job_id_text = ck_arena_printf(&r->arena, "%lld", (long long)v);
    if (o->job && (!id || !ck_json_int(id, &v) || v != o->job)) {
      rc = refuse(r, err, "could not reconcile: --job %lld does not fit the bundle, which holds %s",
                  (long long)o->job, r->job_id_text ? r->job_id_text : "an embedded run");
      goto out;
    }
  } else {
    set_check(r, C_INTEGRITY, ST_UNAVAILABLE, "the bundle has no readable manifest.json: its files' "
              "integrity cannot be checked");
    if (o->job) {
      rc = refuse(r, err, "could not reconcile: --job %lld: the bundle has no manifest naming its "
                  "job", (long long)o->job);
      goto out;
    }
  }
  if (load_completed(r) || r->ncompleted == 0) {
    rc = refuse(r, err, "could not reconcile: the bundle %s has no completed checkpoint (%s/v1/"
                "_meta/completed-<N>)", o->bundle, CK_BUNDLE_CHECKPOINTS);
    goto out;
  }
  if ((rc = find_sink(r, err))) {
    if (rc > 0) rc = 0;
    goto finish;
  }
  if (o->checkpoint) {
    if (!is_completed(r, o->checkpoint)) {
      rc = refuse(r, err, "could not reconcile: --checkpoint %lld is not a completed checkpoint of "
                  "the bundle (completed: %lld … %lld)", (long long)o->checkpoint,
                  (long long)r->completed[0], (long long)r->completed[r->ncompleted - 1]);
      goto out;
    }
    r->checkpoint = o->checkpoint;
  } else {
    for (int i = r->ncompleted - 1; i >= 0 && !r->checkpoint; i--) {
      char path[1024];
      snprintf(path, sizeof path, "%s/%s/op-%d/subtask-0/epoch-%lld.sink.json", o->bundle,
               CK_BUNDLE_CAPTURE, r->sink_op, (long long)r->completed[i]);
      if (access(path, F_OK) == 0) r->checkpoint = r->completed[i];
    }
    if (!r->checkpoint) r->checkpoint = r->completed[r->ncompleted - 1];
  }
  check_shape(r);
  if ((rc = build_scope(r, err))) goto out;
  /* the bundle's own scope document (incident scope), for the source ranges and log identity */
  {
    ck_buf_t sd;
    ck_buf_init(&sd);
    ck_error_t se = {0};
    int s = ck_bundle_scope(o->bundle, r->checkpoint, o->job, true, &sd, &se);
    ck_json_t *doc;
    if ((s == CK_INCIDENT_PASS || s == CK_INCIDENT_PARTIAL) && sd.len &&
        ck_json_parse(sd.data, sd.len, &r->arena, &doc, &se) == 0 && ck_json_get(doc, "sources")) {
      r->scope_json = doc;
      /* identity first: a scope whose snapshots name two Kafka logs (a recreated topic,
       * another cluster) is not one scope; refused, as a destination that is not the
       * evidence's */
      const ck_json_t *srcs = ck_json_get(doc, "sources");
      for (int i = 0; srcs && i < srcs->n; i++) {
        const char *conflict = ck_json_get_str(srcs->items[i], "identity_conflict");
        if (!conflict) continue;
        rc = refuse(r, err, "could not reconcile checkpoint %lld: source '%s': %s",
                    (long long)r->checkpoint, ck_json_get_str(srcs->items[i], "table")
                    ? ck_json_get_str(srcs->items[i], "table") : "?", conflict);
        ck_buf_fini(&sd);
        goto out;
      }
      /* what the bundle's own scope lacks (a bounding snapshot, …) the reconciliation lacks too */
      const char *status = ck_json_get_str(doc, "status");
      const ck_json_t *why = ck_json_get(doc, "unavailable");
      if (status && strcmp(status, "complete") != 0)
        set_check(r, C_SCOPE, ST_UNAVAILABLE, "the bundle's scope of checkpoint %lld is %s: %s",
                  (long long)r->checkpoint, status,
                  ck_json_str(ck_json_at(why, 0)) ? ck_json_str(ck_json_at(why, 0)) : "no reason given");
      /* keep the sources member's text: re-render it */
      const char *p = strstr(sd.data, "\"sources\":");
      if (p) {
        /* the value runs to its matching bracket */
        p += 10;
        int depth = 0;
        bool instr = false;
        const char *q = p;
        for (; *q; q++) {
          if (instr) {
            if (*q == '\\') q++;
            else if (*q == '"') instr = false;
            continue;
          }
          if (*q == '"') instr = true;
          else if (*q == '[' || *q == '{') depth++;
          else if (*q == ']' || *q == '}') {
            if (--depth == 0) {
              q++;
              break;
            }
          }
        }
        r->scope_doc = ck_arena_strndup(&r->arena, p, (size_t)(q - p));
      }
    }
    ck_buf_fini(&sd);
  }
  if (o->reference && (rc = audit_load(r, err))) goto out;
  if (r->checks[C_SCOPE].st == ST_PASS && r->checks[C_INTEGRITY].st != ST_FAIL) {
    if ((rc = destination(r, err))) goto out;
    if (r->checks[C_DEST].st == ST_PASS) {
      compare(r);
      if (o->reference) audit_compare(r);
    }
  }
  if (o->reference) audit_unrun(r);
finish:
out:;
  int status = verdict(r);
  ck_buf_t rep;
  ck_buf_init(&rep);
  report(r, status, &rep);
  if (o->json_path) {
    FILE *f = strcmp(o->json_path, "-") == 0 ? stdout : fopen(o->json_path, "w");
    if (f) {
      fwrite(rep.data, 1, rep.len, f);
      if (f != stdout) fclose(f);
    } else {
      ck_buf_printf(text, "could not write the report %s: %s\n", o->json_path, strerror(errno));
    }
  }
  ck_buf_fini(&rep);
  text_summary(r, status, text);
  (void)rc;
  if (r->have_expected) ck_rowset_fini(&r->expected);
  if (r->have_read) {
    ck_rowset_fini(&r->read[0]);
    ck_rowset_fini(&r->read[1]);
  }
  ck_buf_fini(&r->identity);
  ck_buf_fini(&r->mutations);
  ck_buf_fini(&r->observed);
  ck_buf_fini(&r->form);
  for (int k = 0; k < CK_DIFF_NKINDS; k++) {
    ck_buf_fini(&r->first[k]);
    ck_buf_fini(&r->transform.first[k]);
    ck_buf_fini(&r->refdest.first[k]);
  }
  if (r->have_refrows) ck_rowset_fini(&r->refrows);
  if (r->have_keyset) ck_rowset_fini(&r->keyset);
  if (r->have_ref) ck_reference_fini(&r->ref);
  ck_free(r->completed);
  ck_free(r->ledger);
  ck_arena_fini(&r->arena);
  ck_free(r);
  return status;
}
