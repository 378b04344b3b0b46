/*
 * DESIGN: see capture.h — the recording half: op.json at the job's start, and per operator
 * subtask the open interval's record batches, encoded as they come and written as one file at
 * the barrier.
 *
 * Threads: ck_capture_open/close on the thread that starts and frees the executor; a recorder
 * only on its subtask's thread. Nothing is shared between recorders but the read-only job
 * settings.
 */
#include "capture/capture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/arrow_ipc.h"
#include "base/log.h"
#include "base/redact.h"
#include "checkpoint/store.h"

#define NCTL 4 /* __event, __value, __input, __kind */

struct ck_capture {
  char dir[400];
  int64_t max_records;
  uint64_t fingerprint;
  int64_t restore_id;
  const ck_graph_t *graph;
};

struct ck_capture_rec {
  ck_capture_t *cap;
  const ck_node_t *node;
  const ck_schema_t *in; /* the operator's input layout */
  int subtask, task;
  int nfields;
  ck_arrow_field_t fields[NCTL + CK_CAPTURE_MAX_COLS];
  ck_arrow_batch_t ab;   /* reused for every record batch */
  ck_buf_t body;         /* the open interval's record batch messages */
  int64_t from, seen, stored;
  int64_t events, events_dropped; /* watermarks and idleness of the interval, kept / not */
  ck_capture_summary_t last;
};

const char *ck_capture_state_name(ck_capture_state_t state) {
  switch (state) {
    case CK_CAPTURE_DISARMED: return "disarmed";
    case CK_CAPTURE_EMPTY: return "empty";
    case CK_CAPTURE_WRITTEN: return "written";
    case CK_CAPTURE_FAILED: return "failed";
  }
  return "?";
}

/* ---------------------------------------------------------------- op.json */

static const char *kind_name(const ck_node_t *n) {
  switch (n->kind) {
    case CK_NODE_SOURCE: return "source";
    case CK_NODE_CALC: return "calc";
    case CK_NODE_AGG: return "agg";
    case CK_NODE_SINK: return "sink";
  }
  return "?";
}

static const char *window_name(ck_win_kind_t k) {
  switch (k) {
    case CK_WIN_NONE: return "none";
    case CK_WIN_TUMBLE: return "tumble";
    case CK_WIN_HOP: return "hop";
    case CK_WIN_SESSION: return "session";
    case CK_WIN_CUMULATE: return "cumulate";
  }
  return "?";
}

static void put_schema_json(ck_buf_t *b, const ck_schema_t *s) {
  ck_buf_putc(b, '[');
  for (int i = 0; i < s->ncols; i++) {
    char tn[64];
    if (i) ck_buf_putc(b, ',');
    ck_buf_puts(b, "{\"name\":");
    ck_buf_put_json_str(b, s->names[i], strlen(s->names[i]));
    ck_buf_puts(b, ",\"type\":");
    ck_type_name(s->types[i], tn, sizeof tn);
    ck_buf_put_json_str(b, tn, strlen(tn));
    ck_buf_putc(b, '}');
  }
  ck_buf_putc(b, ']');
}

static void put_ints_json(ck_buf_t *b, const int *v, int n) {
  ck_buf_putc(b, '[');
  for (int i = 0; i < n; i++) ck_buf_printf(b, "%s%d", i ? "," : "", v[i]);
  ck_buf_putc(b, ']');
}

static const char *const agg_fn_names[] = {"COUNT(*)", "COUNT", "SUM", "AVG", "MIN", "MAX",
                                            "UDF"};

/* op.json of node n: what it is, for a reader, and the masked serialised graph (hex), for
 * replay. */
static void op_json(const ck_graph_t *g, const ck_plan_t *plan, const ck_node_t *n,
                    uint64_t fingerprint, const char *plan_hex, ck_buf_t *b) {
  ck_buf_printf(b, "{\"format\":%d,\"op\":%d,\"name\":", CK_CAPTURE_FORMAT, n->id);
  ck_buf_put_json_str(b, n->name, strlen(n->name));
  ck_buf_printf(b, ",\"kind\":\"%s\",\"parallelism\":%d,\"max_parallelism\":%d,\"inputs\":1",
                kind_name(n), n->parallelism, g->max_parallelism);
  ck_buf_printf(b, ",\"input\":%d,\"plan_fingerprint\":\"%016llx\"", n->input,
                (unsigned long long)fingerprint);
  for (int s = 0; s < plan->nsegs; s++)
    if (n->id >= plan->segs[s].first && n->id <= plan->segs[s].last)
      ck_buf_printf(b, ",\"segment\":%d,\"first_task\":%d,\"chained\":%s", s,
                    plan->segs[s].first_task, n->id > plan->segs[s].first ? "true" : "false");
  ck_buf_puts(b, ",\"input_schema\":");
  put_schema_json(b, &g->nodes[n->input].out_schema);
  ck_buf_puts(b, ",\"output_schema\":");
  put_schema_json(b, &n->out_schema);
  ck_buf_printf(b, ",\"changelog\":%s,\"parameters\":{", n->changelog ? "true" : "false");
  if (n->kind == CK_NODE_AGG) {
    const ck_agg_spec_t *a = &n->u.agg;
    ck_buf_puts(b, "\"key_cols\":");
    put_ints_json(b, a->key_cols, a->nkeys);
    ck_buf_puts(b, ",\"calls\":[");
    for (int k = 0; k < a->ncalls; k++)
      ck_buf_printf(b, "%s{\"fn\":\"%s\",\"distinct\":%s,\"arg_col\":%d}", k ? "," : "",
                    agg_fn_names[a->calls[k].fn], a->calls[k].distinct ? "true" : "false",
                    a->calls[k].arg_col);
    ck_buf_printf(b, "],\"window\":{\"kind\":\"%s\",\"size_ms\":%lld,\"slide_ms\":%lld,"
                  "\"gap_ms\":%lld,\"step_ms\":%lld,\"time_col\":%d},\"allowed_lateness_ms\":%lld,"
                  "\"having\":%s",
                  window_name(a->window.kind), (long long)a->window.size,
                  (long long)a->window.slide, (long long)a->window.gap, (long long)a->window.step,
                  a->window.time_col, (long long)a->allowed_lateness_ms,
                  a->having ? "true" : "false");
  } else if (n->kind == CK_NODE_CALC) {
    ck_buf_printf(b, "\"filter\":%s,\"exprs\":%d", n->u.calc.filter ? "true" : "false",
                  n->u.calc.nexprs);
  } else if (n->kind == CK_NODE_SINK) {
    const ck_conn_spec_t *c = &n->u.conn;
    ck_buf_puts(b, "\"connector\":");
    ck_buf_put_json_str(b, c->connector->name, strlen(c->connector->name));
    ck_buf_puts(b, ",\"table\":");
    ck_buf_put_json_str(b, c->table, strlen(c->table));
    ck_buf_puts(b, ",\"options\":{");
    ck_buf_t v;
    ck_buf_init(&v);
    for (int i = 0; i < c->options.n; i++) {
      ck_buf_reset(&v);
      ck_redact_option(c->options.keys[i], c->options.values[i], &v);
      if (i) ck_buf_putc(b, ',');
      ck_buf_put_json_str(b, c->options.keys[i], strlen(c->options.keys[i]));
      ck_buf_putc(b, ':');
      ck_buf_put_json_str(b, v.data ? v.data : "", v.len);
    }
    ck_buf_fini(&v);
    ck_buf_putc(b, '}');
  }
  ck_buf_puts(b, "},\"plan\":\"");
  ck_buf_puts(b, plan_hex);
  ck_buf_puts(b, "\"}\n");
}

int ck_capture_open(const ck_capture_opts_t *opts, const ck_graph_t *graph, const ck_plan_t *plan,
                    uint64_t fingerprint, int64_t restore_id, ck_capture_t **out,
                    ck_error_t *err) {
  *out = NULL;
  if (!opts || !opts->dir) return 0;
  if (strlen(opts->dir) > 300)
    return ck_error_set(err, CK_EOPTION, "could not use --capture-dir '%s': the path is longer "
                        "than 300 bytes", opts->dir);
  if (ck_store_mkdirs(opts->dir))
    return ck_error_set(err, CK_EIO, "could not create --capture-dir '%s': %s", opts->dir,
                        strerror(errno));
  ck_capture_t *cap = ck_calloc(1, sizeof *cap);
  snprintf(cap->dir, sizeof cap->dir, "%s", opts->dir);
  cap->max_records = opts->max_records > 0 ? opts->max_records : CK_CAPTURE_DEFAULT_RECORDS;
  cap->fingerprint = fingerprint;
  cap->restore_id = restore_id;
  cap->graph = graph;
  ck_buf_t bin, hex, json;
  ck_buf_init(&bin);
  ck_buf_init(&hex);
  ck_buf_init(&json);
  ck_plan_encode(graph, CK_PLAN_WIRE_REDACT, &bin);
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < bin.len; i++) {
    ck_buf_putc(&hex, digits[(uint8_t)bin.data[i] >> 4]);
    ck_buf_putc(&hex, digits[(uint8_t)bin.data[i] & 15]);
  }
  ck_buf_putc(&hex, 0);
  int rc = 0;
  for (int i = 0; i < graph->nnodes && !rc; i++) {
    const ck_node_t *n = &graph->nodes[i];
    if (n->kind == CK_NODE_SOURCE) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/op-%d", cap->dir, n->id);
    if (ck_store_mkdirs(path)) {
      rc = ck_error_set(err, CK_EIO, "could not create '%s': %s", path, strerror(errno));
      break;
    }
    ck_buf_reset(&json);
    op_json(graph, plan, n, fingerprint, hex.data, &json);
    snprintf(path, sizeof path, "%s/op-%d/op.json", cap->dir, n->id);
    rc = ck_store_replace(path, json.data, json.len, 0644, err);
  }
  ck_buf_fini(&bin);
  ck_buf_fini(&hex);
  ck_buf_fini(&json);
  if (rc) {
    ck_free(cap);
    return rc;
  }
  *out = cap;
  return 0;
}

void ck_capture_close(ck_capture_t *cap) { ck_free(cap); }

/* ---------------------------------------------------------------- recorders */

/* How an input column of this SQL type is stored. */
static ck_arrow_type_t stored_type(ck_type_t t) {
  switch (t.id) {
    case CK_T_FLOAT32:
    case CK_T_FLOAT64: return CK_ARROW_FLOAT64;
    case CK_T_DECIMAL: return CK_ARROW_BINARY;
    case CK_T_STRING: return CK_ARROW_UTF8;
    default: return CK_ARROW_INT64;
  }
}

static bool rec_ready(ck_capture_rec_t *rec, const ck_schema_t *in);

ck_capture_rec_t *ck_capture_rec_new(ck_capture_t *cap, const ck_node_t *node, int subtask,
                                     int task) {
  if (!cap || node->kind == CK_NODE_SOURCE || node->input < 0) return NULL;
  const ck_schema_t *in = NULL;
  for (int i = 0; i < cap->graph->nnodes; i++)
    if (cap->graph->nodes[i].id == node->input) in = &cap->graph->nodes[i].out_schema;
  if (!in) return NULL;
  ck_capture_rec_t *rec = ck_calloc(1, sizeof *rec);
  rec->cap = cap;
  rec->node = node;
  rec->subtask = subtask;
  rec->task = task;
  rec->from = cap->restore_id;
  if (!rec_ready(rec, in)) rec->nfields = 0; /* logged: disarmed */
  rec->last = (ck_capture_summary_t){.state = CK_CAPTURE_DISARMED, .op = node->id,
                                     .subtask = subtask};
  return rec;
}

/* Sets the recorder up for the input layout (the input node's output); false when a capture
 * cannot hold it. */
static bool rec_ready(ck_capture_rec_t *rec, const ck_schema_t *in) {
  rec->in = in;
  if (in->ncols > CK_CAPTURE_MAX_COLS) {
    CK_LOG_WARN("capture", "operator %d (%s) is not recorded: its input has %d columns, a "
                "capture holds %d at most", rec->node->id, rec->node->name, in->ncols,
                CK_CAPTURE_MAX_COLS);
    return false;
  }
  static const char *const ctl[NCTL] = {"__event", "__value", "__input", "__kind"};
  static const ck_arrow_type_t ctl_t[NCTL] = {CK_ARROW_UINT16, CK_ARROW_INT64, CK_ARROW_UINT16,
                                              CK_ARROW_UINT16};
  for (int i = 0; i < NCTL; i++) rec->fields[i] = (ck_arrow_field_t){ctl[i], ctl_t[i], false};
  for (int c = 0; c < in->ncols; c++)
    rec->fields[NCTL + c] = (ck_arrow_field_t){in->names[c], stored_type(in->types[c]), true};
  rec->nfields = NCTL + in->ncols;
  ck_arrow_batch_init(&rec->ab, rec->fields, rec->nfields);
  ck_buf_init(&rec->body);
  return true;
}

void ck_capture_rec_free(ck_capture_rec_t *rec) {
  if (!rec) return;
  if (rec->nfields) {
    ck_arrow_batch_fini(&rec->ab);
    ck_buf_fini(&rec->body);
  }
  ck_free(rec);
}


static void put_zeros(ck_buf_t *b, size_t n) {
  ck_buf_reserve(b, n);
  memset(b->data + b->len, 0, n);
  b->len += n;
}

static int64_t popcount_prefix(const uint8_t *v, size_t n) {
  int64_t set = 0;
  for (size_t i = 0; i < n / 8; i++) set += __builtin_popcount(v[i]);
  if (n % 8) set += __builtin_popcount(v[n / 8] & ((1u << (n % 8)) - 1));
  return set;
}

/* Rows [0, k) of col into arrow column ac. */
static void copy_col(ck_arrow_col_t *ac, const ck_col_t *col, size_t k) {
  if (col->validity) {
    size_t vb = (k + 7) / 8;
    ck_buf_append(&ac->validity, col->validity, vb);
    ac->null_count = (int64_t)k - popcount_prefix(col->validity, k);
  } else if (col->type.id == CK_T_NULL) {
    put_zeros(&ac->validity, (k + 7) / 8);
    ac->null_count = (int64_t)k;
  }
  switch (col->type.id) {
    case CK_T_INT64:
    case CK_T_TIMESTAMP:
    case CK_T_FLOAT64: ck_buf_append(&ac->data, col->values, k * 8); break;
    case CK_T_INT32:
      ck_buf_reserve(&ac->data, k * 8);
      for (size_t i = 0; i < k; i++) {
        int64_t v = ck_col_i32(col, i);
        memcpy(ac->data.data + ac->data.len + 8 * i, &v, 8);
      }
      ac->data.len += k * 8;
      break;
    case CK_T_BOOL:
      ck_buf_reserve(&ac->data, k * 8);
      for (size_t i = 0; i < k; i++) {
        int64_t v = ((const uint8_t *)col->values)[i] != 0;
        memcpy(ac->data.data + ac->data.len + 8 * i, &v, 8);
      }
      ac->data.len += k * 8;
      break;
    case CK_T_FLOAT32:
      ck_buf_reserve(&ac->data, k * 8);
      for (size_t i = 0; i < k; i++) {
        double v = ck_col_f32(col, i);
        memcpy(ac->data.data + ac->data.len + 8 * i, &v, 8);
      }
      ac->data.len += k * 8;
      break;
    case CK_T_DECIMAL: {
      ck_buf_append(&ac->data, col->values, k * 16);
      ck_buf_reserve(&ac->offsets, k * 4);
      for (size_t i = 1; i <= k; i++) {
        int32_t o = (int32_t)(16 * i);
        memcpy(ac->offsets.data + ac->offsets.len, &o, 4);
        ac->offsets.len += 4;
      }
      break;
    }
    case CK_T_STRING: {
      const int32_t *off = col->values;
      int32_t base = off[0];
      ck_buf_append(&ac->data, col->data + base, (size_t)(off[k] - base));
      ck_buf_reserve(&ac->offsets, k * 4);
      for (size_t i = 1; i <= k; i++) {
        int32_t o = off[i] - base;
        memcpy(ac->offsets.data + ac->offsets.len, &o, 4);
        ac->offsets.len += 4;
      }
      break;
    }
    case CK_T_NULL: put_zeros(&ac->data, k * 8); break;
  }
}

/* Column col's first k rows as the Arrow column ac without copying them, where the layouts
 * already agree (8-byte values; strings whose offsets start at 0; a validity bitmap): ac's own
 * buffers are saved in *keep and replaced by views of the batch's memory, which hold only for
 * the one ck_arrow_write_batch that follows (ck_capture_batch puts keep back). false: copy. */
static bool view_col(ck_arrow_col_t *ac, const ck_col_t *col, size_t k, ck_arrow_col_t *keep) {
  switch (col->type.id) {
    case CK_T_INT64:
    case CK_T_TIMESTAMP:
    case CK_T_FLOAT64: break;
    case CK_T_STRING:
      if (((const int32_t *)col->values)[0] != 0) return false;
      break;
    default: return false;
  }
  *keep = *ac;
  if (col->validity) {
    ac->validity = (ck_buf_t){(char *)col->validity, (k + 7) / 8, 0};
    ac->null_count = (int64_t)k - popcount_prefix(col->validity, k);
  }
  if (col->type.id == CK_T_STRING) {
    const int32_t *off = col->values;
    ac->offsets = (ck_buf_t){(char *)col->values, (k + 1) * 4, 0};
    ac->data = (ck_buf_t){col->data, (size_t)off[k], 0};
  } else {
    ac->data = (ck_buf_t){(char *)col->values, k * 8, 0};
  }
  return true;
}

void ck_capture_batch(ck_capture_rec_t *rec, const ck_batch_t *batch, int input) {
  if (!rec || !rec->nfields) return;
  size_t n = batch->nrows;
  rec->seen += (int64_t)n;
  int64_t room = rec->cap->max_records - rec->stored;
  size_t k = room <= 0 ? 0 : (size_t)room < n ? (size_t)room : n;
  if (k == 0 || batch->ncols != rec->in->ncols) return;
  ck_arrow_batch_t *ab = &rec->ab;
  put_zeros(&ab->cols[0].data, k * 2); /* __event: records */
  /* __value: the watermark each row arrived under (runtime/batch.h wms), which decides
   * whether it is late; INT64_MIN when its batch carried none */
  ck_buf_reserve(&ab->cols[1].data, k * 8);
  for (size_t i = 0; i < k; i++) {
    int64_t w = batch->wms ? batch->wms[i] : INT64_MIN;
    memcpy(ab->cols[1].data.data + ab->cols[1].data.len + 8 * i, &w, 8);
  }
  ab->cols[1].data.len += k * 8;
  ck_buf_reserve(&ab->cols[2].data, k * 2);
  uint16_t in16 = (uint16_t)input;
  for (size_t i = 0; i < k; i++) memcpy(ab->cols[2].data.data + ab->cols[2].data.len + 2 * i, &in16, 2);
  ab->cols[2].data.len += k * 2;
  if (batch->kinds) {
    ck_buf_reserve(&ab->cols[3].data, k * 2);
    for (size_t i = 0; i < k; i++) {
      uint16_t v = batch->kinds[i];
      memcpy(ab->cols[3].data.data + ab->cols[3].data.len + 2 * i, &v, 2);
    }
    ab->cols[3].data.len += k * 2;
  } else {
    put_zeros(&ab->cols[3].data, k * 2);
  }
  /* the input columns: written from the batch's own memory where the layouts agree (one
   * copy, into the file's body), copied into the interval's batch otherwise */
  ck_arrow_col_t keep[CK_CAPTURE_MAX_COLS];
  bool viewed[CK_CAPTURE_MAX_COLS];
  for (int c = 0; c < batch->ncols; c++) {
    ck_arrow_col_t *ac = &ab->cols[NCTL + c];
    viewed[c] = view_col(ac, &batch->cols[c], k, &keep[c]);
    if (!viewed[c]) copy_col(ac, &batch->cols[c], k);
  }
  ab->nrows = (int64_t)k;
  ck_arrow_write_batch(&rec->body, ab);
  for (int c = 0; c < batch->ncols; c++)
    if (viewed[c]) ab->cols[NCTL + c] = keep[c];
  ck_arrow_batch_reset(ab);
  rec->stored += (int64_t)k;
}

void ck_capture_event(ck_capture_rec_t *rec, ck_capture_event_t kind, int64_t value, int input) {
  if (!rec || !rec->nfields) return;
  /* the bound holds for watermarks and idleness too (a run without checkpoints is one
   * interval); barriers and the end always close a file */
  if (kind == CK_CAPTURE_WATERMARK || kind == CK_CAPTURE_IDLE) {
    if (rec->events >= rec->cap->max_records) {
      rec->events_dropped++;
      return;
    }
    rec->events++;
  }
  ck_arrow_batch_t *ab = &rec->ab;
  ck_arrow_put_u16(ab, 0, (uint16_t)kind);
  ck_arrow_put_i64(ab, 1, value);
  ck_arrow_put_u16(ab, 2, (uint16_t)input);
  ck_arrow_put_u16(ab, 3, 0);
  for (int c = NCTL; c < rec->nfields; c++) {
    ck_arrow_col_t *ac = &ab->cols[c];
    ck_buf_putc(&ac->validity, 0);
    ac->null_count = 1;
    if (ac->type == CK_ARROW_UTF8 || ac->type == CK_ARROW_BINARY) ck_arrow_put_bytes(ab, c, "", 0);
    else put_zeros(&ac->data, 8);
  }
  ab->nrows = 1;
  ck_arrow_write_batch(&rec->body, ab);
  ck_arrow_batch_reset(ab);
}

/* The file of the open interval, closed by epoch; resets the interval. */
static void close_interval(ck_capture_rec_t *rec, int64_t epoch, ck_capture_summary_t *out) {
  ck_capture_summary_t s = {.state = CK_CAPTURE_DISARMED, .op = rec ? rec->node->id : -1,
                            .subtask = rec ? rec->subtask : -1, .epoch = epoch};
  if (!rec || !rec->nfields) {
    if (rec) s.from_checkpoint = rec->from, rec->from = epoch, rec->last = s;
    if (out) *out = s;
    return;
  }
  s.from_checkpoint = rec->from;
  s.records_seen = rec->seen;
  s.records_stored = rec->stored;
  s.truncated = rec->stored < rec->seen || rec->events_dropped > 0;
  char seen[24], stored[24], from[24], ep[24], op[16], sub[16], task[16], fp[24], fmt[8];
  snprintf(seen, sizeof seen, "%lld", (long long)rec->seen);
  snprintf(stored, sizeof stored, "%lld", (long long)rec->stored);
  snprintf(from, sizeof from, "%lld", (long long)rec->from);
  if (epoch == CK_CAPTURE_EPOCH_FINAL) snprintf(ep, sizeof ep, "final");
  else snprintf(ep, sizeof ep, "%lld", (long long)epoch);
  snprintf(op, sizeof op, "%d", rec->node->id);
  snprintf(sub, sizeof sub, "%d", rec->subtask);
  snprintf(task, sizeof task, "%d", rec->task);
  snprintf(fp, sizeof fp, "%016llx", (unsigned long long)rec->cap->fingerprint);
  snprintf(fmt, sizeof fmt, "%d", CK_CAPTURE_FORMAT);
  ck_buf_t types;
  ck_buf_init(&types);
  for (int c = 0; c < rec->in->ncols; c++)
    ck_buf_printf(&types, "%s%d:%d:%d", c ? "," : "", (int)rec->in->types[c].id,
                  rec->in->types[c].precision, rec->in->types[c].scale);
  ck_buf_putc(&types, 0);
  ck_arrow_kv_t meta[] = {
      {"clink.capture.format", fmt},      {"clink.capture.op", op},
      {"clink.capture.op_name", rec->node->name},
      {"clink.capture.subtask", sub},     {"clink.capture.task", task},
      {"clink.capture.epoch", ep},        {"clink.capture.from_checkpoint", from},
      {"clink.capture.records_seen", seen}, {"clink.capture.records_stored", stored},
      {"clink.capture.truncated", s.truncated ? "true" : "false"},
      {"clink.capture.types", types.data}, {"clink.capture.plan_fingerprint", fp},
  };
  ck_buf_t file;
  ck_buf_init(&file);
  ck_arrow_write_schema(&file, rec->fields, rec->nfields, meta, (int)(sizeof meta / sizeof *meta),
                        NULL);
  ck_buf_append(&file, rec->body.data, rec->body.len);
  ck_arrow_write_eos(&file);
  char name[40];
  ck_capture_epoch_file(epoch, name, sizeof name);
  snprintf(s.path, sizeof s.path, "%s/op-%d/subtask-%d", rec->cap->dir, rec->node->id,
           rec->subtask);
  ck_error_t err;
  ck_error_clear(&err);
  int rc = ck_store_mkdirs(s.path) ? ck_error_set(&err, CK_EIO, "could not create '%s': %s",
                                                   s.path, strerror(errno))
                                    : 0;
  size_t dl = strlen(s.path);
  snprintf(s.path + dl, sizeof s.path - dl, "/%s", name);
  if (!rc) rc = ck_store_replace(s.path, file.data, file.len, 0644, &err);
  if (rc) {
    CK_LOG_WARN("capture", "could not record epoch %s of operator %d subtask %d: %s", ep,
                rec->node->id, rec->subtask, err.message);
    s.state = CK_CAPTURE_FAILED;
    s.path[0] = 0;
  } else {
    s.state = rec->seen ? CK_CAPTURE_WRITTEN : CK_CAPTURE_EMPTY;
  }
  ck_buf_fini(&file);
  ck_buf_fini(&types);
  ck_buf_reset(&rec->body);
  rec->seen = rec->stored = rec->events = rec->events_dropped = 0;
  rec->from = epoch;
  rec->last = s;
  if (out) *out = s;
}

void ck_capture_barrier(ck_capture_rec_t *rec, int64_t id, ck_capture_summary_t *out) {
  ck_capture_event(rec, CK_CAPTURE_BARRIER, id, 0);
  close_interval(rec, id, out);
}

void ck_capture_finish(ck_capture_rec_t *rec, ck_capture_summary_t *out) {
  ck_capture_event(rec, CK_CAPTURE_END, 0, 0);
  close_interval(rec, CK_CAPTURE_EPOCH_FINAL, out);
}

void ck_capture_last(const ck_capture_rec_t *rec, ck_capture_summary_t *out) {
  if (!rec) {
    *out = (ck_capture_summary_t){.state = CK_CAPTURE_DISARMED, .op = -1, .subtask = -1};
    return;
  }
  *out = rec->last;
}
