/*
 * DESIGN: `clink capture-cat FILE` and `clink replay` — the flight recorder's readers
 * (capture/capture.h; docs/replay.md).
 *
 * capture-cat prints a .cap file: its header as one JSON object, then every record and control
 * event in order, one JSON object a line.
 *
 * replay re-executes one operator subtask over one recorded interval, offline: it rebuilds the
 * graph from op.json's masked serialised plan (runtime/plan.h), makes the node's operator,
 * restores its section of the interval's starting checkpoint (the capture's from_checkpoint;
 * nothing for 0), feeds it the recorded batches and watermarks in their recorded order and
 * prints what it emits: each row as JSON (row kind as "__kind" when not an insert), each
 * watermark it passes on as {"__watermark": W}. Nothing reads a clock or the network, so the
 * output is a function of the files alone. A sink's replay is the rows it took.
 *
 * --verify replays twice and compares the outputs byte for byte; then compares the replay's
 * rows with what the next operator recorded taking from this subtask in the same interval
 * (chained: the same subtask's capture, in order; across an exchange: the rows every subtask
 * of the next operator took from this one, as multisets), and names the first divergence.
 * --emit-test DIR freezes the interval as a test: the capture, its starting snapshot, the
 * golden output, and a CMakeLists.txt whose ctest test replays and compares.
 *
 * Threads: one, the command's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"
#include "capture/capture.h"
#include "checkpoint/store.h"
#include "cli/cli.h"
#include "connectors/connectors.h"
#include "runtime/op.h"
#include "runtime/plan.h"

/* ---------------------------------------------------------------- shared */

static int fail_msg(const char *prog, const ck_error_t *err) {
  char msg[2048];
  ck_error_format(err, msg, sizeof msg);
  fprintf(stderr, "clink %s: %s\n", prog, msg);
  return 1;
}

static const char *event_name(ck_capture_event_t k) {
  switch (k) {
    case CK_CAPTURE_RECORD: return "record";
    case CK_CAPTURE_WATERMARK: return "watermark";
    case CK_CAPTURE_BARRIER: return "barrier";
    case CK_CAPTURE_IDLE: return "idle";
    case CK_CAPTURE_END: return "end";
  }
  return "?";
}

static void epoch_text(int64_t epoch, char *out, size_t cap) {
  if (epoch == CK_CAPTURE_EPOCH_FINAL) snprintf(out, cap, "final");
  else snprintf(out, cap, "%lld", (long long)epoch);
}

static void header_json(const ck_capture_header_t *h, ck_buf_t *out) {
  char ep[24];
  epoch_text(h->epoch, ep, sizeof ep);
  ck_buf_printf(out, "{\"capture\":{\"format\":%d,\"op\":%d,\"op_name\":", h->format, h->op);
  ck_buf_put_json_str(out, h->op_name, strlen(h->op_name));
  ck_buf_printf(out, ",\"subtask\":%d,\"task\":%d,\"epoch\":\"%s\",\"from_checkpoint\":%lld,"
                "\"records_seen\":%lld,\"records_stored\":%lld,\"truncated\":%s,"
                "\"plan_fingerprint\":\"%016llx\",\"columns\":{",
                h->subtask, h->task, ep, (long long)h->from_checkpoint,
                (long long)h->records_seen, (long long)h->records_stored,
                h->truncated ? "true" : "false", (unsigned long long)h->plan_fingerprint);
  for (int c = 0; c < h->ncols; c++) {
    char tn[64];
    if (c) ck_buf_putc(out, ',');
    ck_buf_put_json_str(out, h->names[c], strlen(h->names[c]));
    ck_buf_putc(out, ':');
    ck_type_name(h->types[c], tn, sizeof tn);
    ck_buf_put_json_str(out, tn, strlen(tn));
  }
  ck_buf_puts(out, "}}}\n");
}

/* ---------------------------------------------------------------- capture-cat */

static const ck_cli_opt_t cat_opts[] = {
    CK_CLI_SHARED("log-level"),
    {NULL, NULL, NULL, 0, 0, 0, false},
};

static int cat_main(int argc, char **argv) {
  const ck_cli_cmd_t *cmd = &ck_cli_cmd_capture_cat;
  ck_cli_args_t args;
  int rc = ck_cli_parse(cmd, argc, argv, &args);
  if (rc) return rc < 0 ? 0 : rc;
  if (args.npositional != 1) {
    fprintf(stderr, "clink capture-cat: give one .cap file\nusage: clink capture-cat %s\n",
            cmd->usage);
    return 2;
  }
  ck_error_t err;
  ck_error_clear(&err);
  ck_buf_t file, out;
  ck_buf_init(&file);
  ck_buf_init(&out);
  ck_capture_reader_t *r = NULL;
  rc = ck_cli_read_file(args.positional[0], &file, &err);
  if (!rc) rc = ck_capture_reader_open(file.data, file.len, &r, &err);
  if (!rc) {
    const ck_capture_header_t *h = ck_capture_reader_header(r);
    const char *names[CK_CAPTURE_MAX_COLS];
    for (int c = 0; c < h->ncols; c++) names[c] = h->names[c];
    header_json(h, &out);
    ck_capture_item_t item;
    while ((rc = ck_capture_reader_next(r, &item, &err)) == 1) {
      if (item.kind == CK_CAPTURE_RECORD) {
        for (size_t i = 0; i < item.batch->nrows; i++) {
          ck_buf_printf(&out, "{\"event\":\"record\",\"input\":%d,\"row\":", item.input);
          ck_capture_row_json(item.batch, i, names, &out);
          ck_buf_puts(&out, "}\n");
        }
        ck_batch_free(item.batch);
      } else {
        ck_buf_printf(&out, "{\"event\":\"%s\",\"input\":%d", event_name(item.kind), item.input);
        if (item.kind == CK_CAPTURE_WATERMARK || item.kind == CK_CAPTURE_BARRIER)
          ck_buf_printf(&out, ",\"value\":%lld", (long long)item.value);
        ck_buf_puts(&out, "}\n");
      }
      if (out.len > 1 << 16) {
        fwrite(out.data, 1, out.len, stdout);
        ck_buf_reset(&out);
      }
    }
  }
  if (out.len) fwrite(out.data, 1, out.len, stdout);
  ck_capture_reader_free(r);
  ck_buf_fini(&file);
  ck_buf_fini(&out);
  if (rc < 0) {
    ck_error_detail(&err, "the file is '%s'", args.positional[0]);
    return fail_msg("capture-cat", &err);
  }
  return 0;
}

const ck_cli_cmd_t ck_cli_cmd_capture_cat = {
    "capture-cat", "print a flight-recorder capture (.cap): its header, records and control "
    "events as NDJSON", "[options] FILE.cap", cat_opts, cat_main};

/* ---------------------------------------------------------------- replay */

static const ck_cli_opt_t replay_opts[] = {
    CK_CLI_SHARED("capture-dir"),
    {"checkpoint-dir", "DIR", "the job's checkpoints: the interval's starting state comes from "
     "here", 0, 0, 0, false},
    {"epoch", "N", "the interval to replay: N (between barriers N-1 and N) or 'final'", 0, 0, 0,
     false},
    {"op", "ID", "the operator (its op-<ID> directory; default: the only one)", 0, 0, 0, false},
    {"subtask", "S", "the operator subtask (default: the only one)", 0, 0, 0, false},
    {"out", "FILE", "write the emissions to FILE instead of standard output", 0, 0, 0, false},
    {"verify", NULL, "replay twice and compare, and compare with the next operator's capture",
     0, 0, 0, false},
    {"max-rows", "N", "stop after N emitted rows (0: no limit)", 0, 1000000000, 0, false},
    {"emit-test", "DIR", "write the capture, its starting state, the golden emissions and a "
     "ctest test into DIR", 0, 0, 0, false},
    CK_CLI_SHARED("log-level"),
    {NULL, NULL, NULL, 0, 0, 0, false},
};

typedef struct replay {
  const char *capdir, *ckdir;
  int op, subtask;
  int64_t epoch;
  long max_rows;
  ck_buf_t opjson, cap, snap; /* the files */
  char cap_path[1400], snap_path[1400], snap_rel[128];
  ck_graph_t *graph;
  const ck_node_t *node;
  ck_capture_header_t hdr;
  const char *out_names[256];
} replay_t;

/* Where a replay's emissions go. */
typedef struct sink_ctx {
  replay_t *rp;
  ck_buf_t *out;
  long rows;
  bool cut;
} sink_ctx_t;

static int emit_batch(void *ctx, ck_batch_t *batch, ck_error_t *err) {
  (void)err;
  sink_ctx_t *s = ctx;
  for (size_t i = 0; i < batch->nrows; i++) {
    if (s->rp->max_rows && s->rows >= s->rp->max_rows) {
      s->cut = true;
      break;
    }
    ck_capture_row_json(batch, i, s->rp->out_names, s->out);
    ck_buf_putc(s->out, '\n');
    s->rows++;
  }
  ck_batch_free(batch);
  return 0;
}

static int emit_watermark(void *ctx, int64_t wm, ck_error_t *err) {
  (void)err;
  sink_ctx_t *s = ctx;
  ck_buf_printf(s->out, "{\"__watermark\":%lld}\n", (long long)wm);
  return 0;
}

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The graph from op.json's "plan" (hex of the masked serialised graph). */
static int load_graph(replay_t *rp, ck_error_t *err) {
  /* every operator here has one input (several senders interleaved in the recorded order);
   * one that declares more could not be fed from one capture */
  const char *in = rp->opjson.data ? strstr(rp->opjson.data, "\"inputs\":") : NULL;
  if (in && atoi(in + 9) != 1) {
    const char *nm = strstr(rp->opjson.data, "\"name\":\"");
    int len = 0;
    if (nm) nm += 8, len = (int)(strcspn(nm, "\""));
    ck_error_set(err, CK_EUNSUPPORTED, "could not replay operator %d (%.*s): it has %d inputs, "
                 "and replay feeds one recorded input", rp->op, len, nm ? nm : "", atoi(in + 9));
    ck_error_hint(err, "replay an operator with one input, or each input's upstream operator "
                  "on its own");
    return CK_EUNSUPPORTED;
  }
  const char *p = rp->opjson.data ? strstr(rp->opjson.data, "\"plan\":\"") : NULL;
  if (!p)
    return ck_error_set(err, CK_EDECODE, "could not read op.json of operator %d: it has no "
                        "\"plan\"", rp->op);
  p += 8;
  const char *end = strchr(p, '"');
  if (!end || (end - p) % 2)
    return ck_error_set(err, CK_EDECODE, "could not read op.json of operator %d: its \"plan\" "
                        "is damaged", rp->op);
  size_t n = (size_t)(end - p) / 2;
  uint8_t *bin = ck_malloc(n ? n : 1);
  for (size_t i = 0; i < n; i++) {
    int hi = hexval(p[2 * i]), lo = hexval(p[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      ck_free(bin);
      return ck_error_set(err, CK_EDECODE, "could not read op.json of operator %d: its "
                          "\"plan\" is not hex", rp->op);
    }
    bin[i] = (uint8_t)(hi << 4 | lo);
  }
  int rc = ck_plan_decode_masked(bin, n, &rp->graph, err);
  ck_free(bin);
  if (rc) return rc;
  for (int i = 0; i < rp->graph->nnodes; i++)
    if (rp->graph->nodes[i].id == rp->op) rp->node = &rp->graph->nodes[i];
  if (!rp->node || rp->node->kind == CK_NODE_SOURCE)
    return ck_error_set(err, CK_ENOTFOUND, "could not rebuild operator %d: the job graph in its "
                        "op.json has no such operator", rp->op);
  for (int c = 0; c < rp->node->out_schema.ncols && c < 256; c++)
    rp->out_names[c] = rp->node->out_schema.names[c];
  return 0;
}

/* One replay of the interval into out. */
static int replay_once(replay_t *rp, ck_buf_t *out, sink_ctx_t *sc, ck_error_t *err) {
  *sc = (sink_ctx_t){rp, out, 0, false};
  const ck_node_t *node = rp->node;
  ck_op_t op = {0};
  op.node = node;
  op.subtask = rp->subtask;
  op.parallelism = node->parallelism;
  op.max_parallelism = rp->graph->max_parallelism;
  op.out = (ck_out_t){emit_batch, emit_watermark, sc};
  bool is_op = node->kind == CK_NODE_CALC || node->kind == CK_NODE_AGG;
  bool opened = false;
  ck_capture_reader_t *r = NULL;
  ck_buf_t scratch;
  ck_buf_init(&scratch);
  int rc = 0;
  if (is_op) {
    rc = node->kind == CK_NODE_CALC ? ck_calc_op_init(&op, err) : ck_agg_op_init(&op, err);
    if (!rc) rc = op.ops->open(&op, err);
    opened = rc == 0;
  }
  if (!rc && is_op && rp->hdr.from_checkpoint > 0) {
    ck_snap_section_t sections[64];
    int n = 0;
    rc = ck_snap_decode(rp->snap.data, rp->snap.len, rp->hdr.from_checkpoint,
                        rp->hdr.plan_fingerprint, rp->hdr.task, &ck_agg_snap_joiner, sections,
                        64, &n, &scratch, err);
    bool found = false;
    for (int k = 0; k < n && !rc; k++)
      if (sections[k].node == (uint32_t)node->id) {
        found = true;
        rc = op.ops->restore(&op, sections[k].data, sections[k].len, err);
      }
    if (!rc && !found)
      rc = ck_error_set(err, CK_ESTATE, "could not restore operator %d: snapshot '%s' has no "
                        "section of it", node->id, rp->snap_path);
  }
  if (!rc) rc = ck_capture_reader_open(rp->cap.data, rp->cap.len, &r, err);
  ck_capture_item_t item;
  while (!rc && (rc = ck_capture_reader_next(r, &item, err)) == 1) {
    rc = 0;
    if (item.kind == CK_CAPTURE_RECORD) {
      if (is_op) rc = op.ops->process(&op, item.batch, err);
      else if (item.batch->nrows) {
        rc = emit_batch(sc, item.batch, err);
        item.batch = NULL;
      }
      ck_batch_free(item.batch);
    } else if (item.kind == CK_CAPTURE_WATERMARK && is_op) {
      op.metrics.watermark = item.value;
      rc = op.ops->watermark(&op, item.value, err);
    }
  }
  if (rc > 0) rc = 0;
  if (opened) op.ops->close(&op);
  ck_capture_reader_free(r);
  ck_buf_fini(&scratch);
  return rc;
}

/* The only op-<id> (or subtask-<s>) entry of dir, or -1 with the names in *list. */
static int only_entry(const char *dir, const char *prefix, ck_buf_t *list) {
  int found = -1, count = 0;
  for (int i = 0; i < 4096; i++) {
    char p[1200];
    snprintf(p, sizeof p, "%s/%s%d", dir, prefix, i);
    struct stat st;
    if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
      ck_buf_printf(list, "%s%s%d", count ? ", " : "", prefix, i);
      found = i;
      count++;
    }
  }
  return count == 1 ? found : -1;
}

static bool parse_int(const char *s, int *v) {
  char *end;
  errno = 0;
  long x = strtol(s, &end, 10);
  if (errno || end == s || *end || x < 0 || x > 1 << 20) return false;
  *v = (int)x;
  return true;
}

/* The rows of lines (skipping {"__watermark"…} ones). */
static int split_rows(const ck_buf_t *b, char ***rows) {
  int n = 0, cap = 0;
  *rows = NULL;
  const char *p = b->data, *end = b->data ? b->data + b->len : NULL;
  while (p && p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) nl = end;
    if (strncmp(p, "{\"__watermark\"", 14) != 0) {
      if (n == cap) *rows = ck_realloc(*rows, sizeof **rows * (size_t)(cap = cap ? cap * 2 : 64));
      size_t len = (size_t)(nl - p);
      char *s = ck_malloc(len + 1);
      memcpy(s, p, len);
      s[len] = 0;
      (*rows)[n++] = s;
    }
    p = nl + 1;
  }
  return n;
}

static void free_rows(char **rows, int n) {
  for (int i = 0; i < n; i++) ck_free(rows[i]);
  ck_free(rows);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The rows downstream operator `down` took from this subtask in the interval, as JSON lines
 * into got. Returns 1 when a capture was read, 0 when there is none, -1 when one is truncated.
 * *chained: the downstream runs in this subtask (an order to compare), else a multiset. */
static int downstream_rows(replay_t *rp, const ck_node_t *down, bool chained, ck_buf_t *got,
                           ck_error_t *err) {
  char name[40];
  ck_capture_epoch_file(rp->epoch, name, sizeof name);
  int read = 0;
  for (int s = 0; s < down->parallelism; s++) {
    if (chained && s != rp->subtask) continue;
    char path[1200];
    snprintf(path, sizeof path, "%s/op-%d/subtask-%d/%s", rp->capdir, down->id, s, name);
    struct stat st;
    if (stat(path, &st)) return 0; /* every subtask's, or none */
    ck_buf_t file;
    ck_buf_init(&file);
    ck_capture_reader_t *r = NULL;
    int rc = ck_cli_read_file(path, &file, err);
    if (!rc) rc = ck_capture_reader_open(file.data, file.len, &r, err);
    if (!rc && ck_capture_reader_header(r)->truncated) rc = 1;
    ck_capture_item_t item;
    while (!rc && (rc = ck_capture_reader_next(r, &item, err)) == 1) {
      rc = 0;
      if (item.kind != CK_CAPTURE_RECORD) continue;
      if (chained || item.input == rp->subtask)
        for (size_t i = 0; i < item.batch->nrows; i++) {
          ck_capture_row_json(item.batch, i, rp->out_names, got);
          ck_buf_putc(got, '\n');
        }
      ck_batch_free(item.batch);
    }
    ck_capture_reader_free(r);
    ck_buf_fini(&file);
    if (rc == 1) return -1;
    if (rc < 0) return rc;
    read = 1;
  }
  return read;
}

static int verify(replay_t *rp, const ck_buf_t *first, ck_error_t *err) {
  ck_buf_t second;
  ck_buf_init(&second);
  sink_ctx_t sc;
  int rc = replay_once(rp, &second, &sc, err);
  if (rc) {
    ck_buf_fini(&second);
    return rc;
  }
  if (second.len != first->len || (first->len && memcmp(first->data, second.data, first->len))) {
    size_t i = 0, line = 1;
    while (i < first->len && i < second.len && first->data[i] == second.data[i])
      line += first->data[i++] == '\n';
    fprintf(stderr, "clink replay: verify: the two replays differ, first at byte %zu (line "
            "%zu): replay is not deterministic\n", i, line);
    ck_buf_fini(&second);
    return 1;
  }
  fprintf(stderr, "clink replay: verify: two replays are byte-identical (%zu bytes)\n",
          first->len);
  ck_buf_fini(&second);
  /* the next operator's record of what this one emitted */
  const ck_node_t *down = NULL;
  for (int i = 0; i < rp->graph->nnodes; i++)
    if (rp->graph->nodes[i].input == rp->op) down = &rp->graph->nodes[i];
  if (!down) {
    fprintf(stderr, "clink replay: verify: operator %d feeds no operator: nothing recorded "
            "downstream to compare with\n", rp->op);
    return 0;
  }
  if (rp->hdr.truncated) {
    fprintf(stderr, "clink replay: verify: the capture is truncated: not compared with "
            "operator %d's record\n", down->id);
    return 0;
  }
  ck_plan_t plan;
  ck_plan_build(rp->graph, &plan);
  bool chained = false;
  for (int s = 0; s < plan.nsegs; s++)
    if (rp->op >= plan.segs[s].first && rp->op <= plan.segs[s].last)
      chained = down->id >= plan.segs[s].first && down->id <= plan.segs[s].last;
  ck_plan_fini(&plan);
  ck_buf_t got;
  ck_buf_init(&got);
  int have = downstream_rows(rp, down, chained, &got, err);
  if (have < 0 && have != -1) {
    ck_buf_fini(&got);
    return have;
  }
  if (have <= 0) {
    fprintf(stderr, "clink replay: verify: operator %d's capture of this interval is %s: not "
            "compared\n", down->id, have == 0 ? "missing" : "truncated");
    ck_buf_fini(&got);
    return 0;
  }
  char **a, **b;
  int na = split_rows(first, &a), nb = split_rows(&got, &b);
  if (!chained) {
    if (na) qsort(a, (size_t)na, sizeof *a, cmp_str);
    if (nb) qsort(b, (size_t)nb, sizeof *b, cmp_str);
  }
  int i = 0;
  while (i < na && i < nb && strcmp(a[i], b[i]) == 0) i++;
  int result = 0;
  if (i < na || i < nb) {
    fprintf(stderr, "clink replay: verify: the replay differs from what operator %d recorded "
            "taking from subtask %d (%s), first at %s %d:\n  replay:   %s\n  recorded: %s\n",
            down->id, rp->subtask, chained ? "in order" : "as a multiset, sorted",
            chained ? "row" : "sorted row", i + 1, i < na ? a[i] : "(no more rows)",
            i < nb ? b[i] : "(no more rows)");
    result = 1;
  } else {
    fprintf(stderr, "clink replay: verify: the replay matches what operator %d recorded "
            "taking from subtask %d (%d rows, %s)\n", down->id, rp->subtask, na,
            chained ? "in order" : "as a multiset");
  }
  free_rows(a, na);
  free_rows(b, nb);
  ck_buf_fini(&got);
  return result;
}

static int write_file(const char *path, const void *data, size_t n, ck_error_t *err) {
  char dir[1200];
  snprintf(dir, sizeof dir, "%s", path);
  for (char *p = dir + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      if (mkdir(dir, 0755) && errno != EEXIST)
        return ck_error_set(err, CK_EIO, "could not create '%s': %s", dir, strerror(errno));
      *p = '/';
    }
  return ck_store_replace(path, data ? data : "", n, 0644, err);
}

/* --emit-test DIR: a self-contained copy of the interval and a ctest test over it. */
static int emit_test(replay_t *rp, const char *dir, const ck_buf_t *golden, ck_error_t *err) {
  char path[1400], name[40], ep[24];
  ck_capture_epoch_file(rp->epoch, name, sizeof name);
  epoch_text(rp->epoch, ep, sizeof ep);
  snprintf(path, sizeof path, "%s/capture/op-%d/op.json", dir, rp->op);
  int rc = write_file(path, rp->opjson.data, rp->opjson.len, err);
  snprintf(path, sizeof path, "%s/capture/op-%d/subtask-%d/%s", dir, rp->op, rp->subtask, name);
  if (!rc) rc = write_file(path, rp->cap.data, rp->cap.len, err);
  snprintf(path, sizeof path, "%s/checkpoints/v1/%s", dir, rp->snap_rel);
  if (!rc && rp->hdr.from_checkpoint > 0) rc = write_file(path, rp->snap.data, rp->snap.len, err);
  snprintf(path, sizeof path, "%s/golden.ndjson", dir);
  if (!rc) rc = write_file(path, golden->data, golden->len, err);
  ck_buf_t b;
  ck_buf_init(&b);
  ck_buf_printf(&b,
      "# Emitted by `clink replay --emit-test`: operator %d (%s), subtask %d, epoch %s.\n"
      "# Replays the recorded interval from its recorded starting state and compares the\n"
      "# emissions with golden.ndjson byte for byte. add_subdirectory() it into a tree that\n"
      "# builds clink, or configure it alone with -DCLINK=/path/to/clink.\n"
      "if(NOT CMAKE_PROJECT_NAME)\n"
      "  cmake_minimum_required(VERSION 3.16)\n"
      "  project(clink_replay_test NONE)\n"
      "  enable_testing()\n"
      "endif()\n"
      "if(TARGET clink)\n"
      "  set(_clink $<TARGET_FILE:clink>)\n"
      "else()\n"
      "  set(_clink ${CLINK})\n"
      "endif()\n"
      "add_test(NAME replay_op%d_subtask%d_epoch_%s\n"
      "         COMMAND ${CMAKE_COMMAND} -DCLINK=${_clink} -DDIR=${CMAKE_CURRENT_SOURCE_DIR}\n"
      "                 -DOUT=${CMAKE_CURRENT_BINARY_DIR}/replay_op%d_%d_%s.ndjson\n"
      "                 -P ${CMAKE_CURRENT_SOURCE_DIR}/check.cmake)\n",
      rp->op, rp->node->name, rp->subtask, ep, rp->op, rp->subtask, ep, rp->op, rp->subtask, ep);
  snprintf(path, sizeof path, "%s/CMakeLists.txt", dir);
  if (!rc) rc = write_file(path, b.data, b.len, err);
  ck_buf_reset(&b);
  ck_buf_printf(&b,
      "execute_process(COMMAND ${CLINK} replay --capture-dir ${DIR}/capture\n"
      "                        --checkpoint-dir ${DIR}/checkpoints --epoch %s --op %d\n"
      "                        --subtask %d --out ${OUT}\n"
      "                RESULT_VARIABLE rc)\n"
      "if(NOT rc EQUAL 0)\n"
      "  message(FATAL_ERROR \"clink replay failed (${rc})\")\n"
      "endif()\n"
      "execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT} ${DIR}/golden.ndjson\n"
      "                RESULT_VARIABLE same)\n"
      "if(NOT same EQUAL 0)\n"
      "  message(FATAL_ERROR \"the replay of operator %d epoch %s differs from golden.ndjson: \"\n"
      "                      \"compare ${OUT} with ${DIR}/golden.ndjson\")\n"
      "endif()\n",
      ep, rp->op, rp->subtask, rp->op, ep);
  snprintf(path, sizeof path, "%s/check.cmake", dir);
  if (!rc) rc = write_file(path, b.data, b.len, err);
  ck_buf_fini(&b);
  if (!rc) fprintf(stderr, "clink replay: wrote the test to '%s' (ctest name "
                   "replay_op%d_subtask%d_epoch_%s)\n", dir, rp->op, rp->subtask, ep);
  return rc;
}

static int replay_usage(const char *msg) {
  fprintf(stderr, "clink replay: %s\n", msg);
  return 2;
}

static int replay_main(int argc, char **argv) {
  const ck_cli_cmd_t *cmd = &ck_cli_cmd_replay;
  ck_cli_args_t args;
  int rc = ck_cli_parse(cmd, argc, argv, &args);
  if (rc) return rc < 0 ? 0 : rc;
  if (args.npositional) return replay_usage("unexpected argument; see clink replay --help");
  if (ck_cli_apply_log_level(cmd, &args)) return 2;
  replay_t rp = {0};
  rp.capdir = ck_cli_get(cmd, &args, "capture-dir");
  rp.ckdir = ck_cli_get(cmd, &args, "checkpoint-dir");
  const char *epoch = ck_cli_get(cmd, &args, "epoch");
  const char *outp = ck_cli_get(cmd, &args, "out");
  const char *emit = ck_cli_get(cmd, &args, "emit-test");
  if (!rp.capdir) return replay_usage("give --capture-dir (where the job recorded)");
  if (!epoch || !ck_capture_parse_epoch(epoch, &rp.epoch))
    return replay_usage("give --epoch N (a checkpoint id, 1 or more) or --epoch final");
  if (ck_cli_int(cmd, &args, "max-rows", &rp.max_rows)) return 2;
  const char *v;
  ck_buf_t list;
  ck_buf_init(&list);
  if ((v = ck_cli_get(cmd, &args, "op"))) {
    if (!parse_int(v, &rp.op)) return replay_usage("--op takes an operator id (op-<ID>)");
  } else if ((rp.op = only_entry(rp.capdir, "op-", &list)) < 0) {
    fprintf(stderr, "clink replay: give --op: '%s' holds %s\n", rp.capdir,
            list.len ? list.data : "no operator directory (op-<ID>)");
    ck_buf_fini(&list);
    return 2;
  }
  char opdir[1100];
  snprintf(opdir, sizeof opdir, "%s/op-%d", rp.capdir, rp.op);
  ck_buf_reset(&list);
  if ((v = ck_cli_get(cmd, &args, "subtask"))) {
    if (!parse_int(v, &rp.subtask)) return replay_usage("--subtask takes a subtask number");
  } else if ((rp.subtask = only_entry(opdir, "subtask-", &list)) < 0) {
    fprintf(stderr, "clink replay: give --subtask: '%s' holds %s\n", opdir,
            list.len ? list.data : "no subtask directory");
    ck_buf_fini(&list);
    return 2;
  }
  ck_buf_fini(&list);
  ck_error_t err;
  ck_error_clear(&err);
  ck_connectors_register_all(); /* the graph names its connectors */
  ck_buf_init(&rp.opjson);
  ck_buf_init(&rp.cap);
  ck_buf_init(&rp.snap);
  ck_buf_t out;
  ck_buf_init(&out);
  char path[1200], name[40];
  snprintf(path, sizeof path, "%s/op.json", opdir);
  rc = ck_cli_read_file(path, &rp.opjson, &err);
  if (!rc) ck_buf_putc(&rp.opjson, 0), rp.opjson.len--;
  if (!rc) rc = load_graph(&rp, &err);
  ck_capture_epoch_file(rp.epoch, name, sizeof name);
  snprintf(rp.cap_path, sizeof rp.cap_path, "%s/subtask-%d/%s", opdir, rp.subtask, name);
  if (!rc) {
    rc = ck_cli_read_file(rp.cap_path, &rp.cap, &err);
    if (rc == CK_ENOTFOUND || (rc && access(rp.cap_path, F_OK)))
      ck_error_hint(&err, "the interval was not recorded: a barrier that never reached the "
                    "operator, or a subtask that failed before it; list '%s/subtask-%d'", opdir,
                    rp.subtask);
  }
  ck_capture_reader_t *r = NULL;
  if (!rc) rc = ck_capture_reader_open(rp.cap.data, rp.cap.len, &r, &err);
  if (!rc) rp.hdr = *ck_capture_reader_header(r);
  ck_capture_reader_free(r);
  if (!rc && rp.hdr.truncated)
    fprintf(stderr, "clink replay: warning: epoch %s of operator %d subtask %d is truncated: "
            "the capture holds %lld of the %lld records the operator took "
            "(--capture-records); the replay covers those only\n", epoch, rp.op, rp.subtask,
            (long long)rp.hdr.records_stored, (long long)rp.hdr.records_seen);
  bool is_op = !rc && (rp.node->kind == CK_NODE_CALC || rp.node->kind == CK_NODE_AGG);
  if (is_op && rp.hdr.from_checkpoint > 0) {
    if (!rp.ckdir) {
      rc = ck_error_set(&err, CK_EUSAGE, "could not replay epoch %s of operator %d: it starts "
                        "from checkpoint %lld", epoch, rp.op, (long long)rp.hdr.from_checkpoint);
      ck_error_hint(&err, "give --checkpoint-dir, the job's checkpoint directory");
    } else {
      ck_snap_path(rp.hdr.task, rp.hdr.from_checkpoint, rp.snap_rel, sizeof rp.snap_rel);
      snprintf(rp.snap_path, sizeof rp.snap_path, "%s/v1/%s", rp.ckdir, rp.snap_rel);
      rc = ck_cli_read_file(rp.snap_path, &rp.snap, &err);
      if (rc)
        ck_error_hint(&err, "epoch %s starts from checkpoint %lld; a checkpoint pruned since "
                      "(the job keeps --checkpoints-retained, 3 by default) cannot be replayed",
                      epoch, (long long)rp.hdr.from_checkpoint);
    }
  }
  sink_ctx_t sc;
  if (!rc) rc = replay_once(&rp, &out, &sc, &err);
  if (!rc && sc.cut)
    fprintf(stderr, "clink replay: stopped after --max-rows %ld rows\n", rp.max_rows);
  if (!rc) {
    if (outp) rc = write_file(outp, out.data, out.len, &err);
    else fwrite(out.data ? out.data : "", 1, out.len, stdout);
  }
  int status = rc ? fail_msg("replay", &err) : 0;
  if (!rc && ck_cli_flag(cmd, &args, "verify")) {
    fflush(stdout);
    int v2 = verify(&rp, &out, &err);
    status = v2 < 0 ? fail_msg("replay", &err) : v2;
  }
  if (!rc && !status && emit && (rc = emit_test(&rp, emit, &out, &err)))
    status = fail_msg("replay", &err);
  if (rp.graph) ck_graph_free(rp.graph);
  ck_buf_fini(&rp.opjson);
  ck_buf_fini(&rp.cap);
  ck_buf_fini(&rp.snap);
  ck_buf_fini(&out);
  return status;
}

const ck_cli_cmd_t ck_cli_cmd_replay = {
    "replay", "re-execute one operator subtask over one recorded interval, offline, and print "
    "its emissions as NDJSON", "--capture-dir DIR --epoch N|final [options]", replay_opts,
    replay_main};
