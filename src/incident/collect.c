/*
 * DESIGN: `clink incident collect` (bundle.h has the layout and the manifest).
 *
 * Reads the job's checkpoint directory (a cluster job's: <dir>/job-<id>) and capture directory,
 * never writes there, and copies into the bundle: every record of v1/_meta (the job manifest
 * also as job.json), every op.json, and with --include-captures every capture and sink-interval
 * evidence file; with --include-state the snapshots of every task for each checkpoint that
 * bounds a collected interval (the one that closed it, and the one its state started from, as
 * the evidence and the capture headers say) and for every run's restore point; with --trace-dir
 * the trace files. What a completed checkpoint implies and is not there (an operator subtask's
 * capture of that interval, a sink subtask's evidence, a bound's snapshot) is listed under
 * "missing". The manifest, with every file's size and SHA-256, is written last.
 * Threads: the command's one thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "capture/capture.h"
#include "checkpoint/store.h"
#include "clink/version.h"
#include "incident/bundle.h"
#include "incident/bundle_int.h"

typedef struct file_ent {
  char *path;
  int64_t bytes;
  char sha[65];
} file_ent_t;

typedef struct interval {
  int op, subtask;
  int64_t ckpt, prev, restored_from;
  char *attempt;
  char *evidence, *capture; /* bundle paths, NULL when not collected */
} interval_t;

typedef struct run {
  char *attempt;
  int64_t restored_from, first;
  int64_t *ids;
  int nids;
} run_t;

typedef struct collector {
  const ck_bundle_collect_opts_t *o;
  char ckdir[2048], capdir[2048];
  ck_arena_t arena;
  file_ent_t *files;
  int nfiles, capfiles;
  interval_t *ivs;
  int nivs, capivs;
  int64_t *completed, *confirmed, *bounds;
  int ncompleted, nconfirmed, nbounds;
  int64_t run_base, id_floor;
  bool clean_finish, have_job;
  char fingerprint[128];
  int *tasks;
  int ntasks;
  ck_buf_t missing, state; /* JSON array members */
  int nmissing;
} collector_t;

static void push_id(int64_t **v, int *n, int64_t id) {
  for (int i = 0; i < *n; i++)
    if ((*v)[i] == id) return;
  *v = ck_realloc(*v, sizeof **v * (size_t)(*n + 1));
  (*v)[(*n)++] = id;
}

static bool has_id(const int64_t *v, int n, int64_t id) {
  for (int i = 0; i < n; i++)
    if (v[i] == id) return true;
  return false;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static void put_str(ck_buf_t *b, const char *s) {
  if (s) ck_buf_put_json_str(b, s, strlen(s));
  else ck_buf_puts(b, "null");
}

static void add_missing(collector_t *c, const char *what, const char *file, const char *why) {
  ck_buf_printf(&c->missing, "%s{\"what\":", c->nmissing++ ? "," : "");
  put_str(&c->missing, what);
  ck_buf_puts(&c->missing, ",\"file\":");
  put_str(&c->missing, file);
  ck_buf_puts(&c->missing, ",\"why\":");
  put_str(&c->missing, why);
  ck_buf_putc(&c->missing, '}');
  fprintf(stderr, "clink incident collect: warning: no %s '%s': %s\n", what, file, why);
}

/* Writes data as bundle file rel, and lists it. */
static int put_file(collector_t *c, const char *rel, const void *data, size_t n, ck_error_t *err) {
  char path[4096], dir[4096];
  ck_bundle_fmt(path, sizeof path, "%s/%s", c->o->out, rel);
  ck_bundle_fmt(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  if (ck_store_mkdirs(dir))
    return ck_error_set(err, CK_EIO, "could not create '%s' in the bundle", dir);
  int rc = ck_store_replace(path, n ? data : "", n, 0644, err);
  if (rc) return rc;
  if (c->nfiles == c->capfiles)
    c->files = ck_realloc(c->files, sizeof *c->files * (size_t)(c->capfiles = c->capfiles ? c->capfiles * 2 : 64));
  file_ent_t *f = &c->files[c->nfiles++];
  f->path = ck_arena_strdup(&c->arena, rel);
  f->bytes = (int64_t)n;
  ck_sha256_hex(data, n, f->sha);
  return 0;
}

/* Copies src into the bundle as rel; *data (may be NULL) keeps the bytes for the caller. */
static int copy_file(collector_t *c, const char *src, const char *rel, ck_buf_t *keep,
                     ck_error_t *err) {
  ck_buf_t b;
  ck_buf_init(&b);
  int rc = ck_bundle_read_file(src, &b, err);
  if (!rc) rc = put_file(c, rel, b.data, b.len, err);
  if (!rc && keep) ck_buf_append(keep, b.data ? b.data : "", b.len);
  ck_buf_fini(&b);
  return rc;
}

static int64_t read_id_file(const char *path) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_error_t e;
  int64_t v = 0;
  if (!ck_bundle_read_file(path, &b, &e) && b.len) {
    ck_buf_putc(&b, 0);
    v = strtoll(b.data, NULL, 10);
  }
  ck_buf_fini(&b);
  return v;
}

static int collect_meta(collector_t *c, ck_error_t *err) {
  char meta[2200];
  ck_bundle_fmt(meta, sizeof meta, "%s/v1/_meta", c->ckdir);
  char **names;
  int n = ck_bundle_list(meta, &c->arena, &names);
  for (int i = 0; i < n; i++) {
    char src[4096], rel[512];
    ck_bundle_fmt(src, sizeof src, "%s/%s", meta, names[i]);
    if (strstr(names[i], ".tmp") || !ck_bundle_is_file(src)) continue; /* being written */
    ck_bundle_fmt(rel, sizeof rel, "%s/v1/_meta/%s", CK_BUNDLE_CHECKPOINTS, names[i]);
    ck_buf_t keep;
    ck_buf_init(&keep);
    int rc = copy_file(c, src, rel, &keep, err);
    if (!rc && strcmp(names[i], "job.json") == 0) {
      rc = put_file(c, CK_BUNDLE_JOB, keep.data, keep.len, err);
      c->have_job = true;
    }
    if (!rc && strcmp(names[i], "fingerprint") == 0) {
      size_t l = strcspn(keep.data ? keep.data : "", "\n");
      ck_bundle_fmt(c->fingerprint, sizeof c->fingerprint, "%.*s", (int)(l < keep.len ? l : keep.len),
               keep.data ? keep.data : "");
    }
    ck_buf_fini(&keep);
    if (rc) return rc;
    int64_t id;
    if ((id = ck_bundle_name_id(names[i], "completed-", "")) > 0)
      push_id(&c->completed, &c->ncompleted, id);
    else if ((id = ck_bundle_name_id(names[i], "confirmed-", "")) > 0)
      push_id(&c->confirmed, &c->nconfirmed, id);
    else if (strcmp(names[i], "run-base") == 0) c->run_base = read_id_file(src);
    else if (strcmp(names[i], "id-floor") == 0) c->id_floor = read_id_file(src);
    else if (strcmp(names[i], "clean-finish") == 0) c->clean_finish = true;
  }
  if (c->ncompleted) qsort(c->completed, (size_t)c->ncompleted, sizeof *c->completed, cmp_i64);
  if (c->nconfirmed) qsort(c->confirmed, (size_t)c->nconfirmed, sizeof *c->confirmed, cmp_i64);
  char v1[2200];
  ck_bundle_fmt(v1, sizeof v1, "%s/v1", c->ckdir);
  n = ck_bundle_list(v1, &c->arena, &names);
  for (int i = 0; i < n; i++) {
    int64_t t = ck_bundle_name_id(names[i], "", "");
    if (t < 0 || t > 1 << 20) continue;
    c->tasks = ck_realloc(c->tasks, sizeof *c->tasks * (size_t)(c->ntasks + 1));
    c->tasks[c->ntasks++] = (int)t;
  }
  return 0;
}

/* One epoch-N.sink.json: its interval. */
static int read_evidence(collector_t *c, int op, int subtask, const char *src, const char *rel,
                         ck_error_t *err) {
  ck_buf_t b;
  ck_buf_init(&b);
  int rc = c->o->include_captures ? copy_file(c, src, rel, &b, err)
                                  : ck_bundle_read_file(src, &b, err);
  ck_json_t *j = NULL;
  if (!rc && ck_json_parse(b.data ? b.data : "", b.len, &c->arena, &j, err)) {
    fprintf(stderr, "clink incident collect: warning: '%s' is not readable evidence; collected "
            "as it is\n", src);
    rc = 0;
    j = NULL;
  }
  ck_buf_fini(&b);
  if (rc || !j) return rc;
  if (c->nivs == c->capivs)
    c->ivs = ck_realloc(c->ivs, sizeof *c->ivs * (size_t)(c->capivs = c->capivs ? c->capivs * 2 : 64));
  interval_t *iv = &c->ivs[c->nivs++];
  memset(iv, 0, sizeof *iv);
  iv->op = op;
  iv->subtask = subtask;
  iv->ckpt = ck_json_get_int(j, "checkpoint", 0);
  iv->prev = ck_json_get_int(j, "previous_barrier", 0);
  iv->restored_from = ck_json_get_int(j, "restored_from", 0);
  const char *a = ck_json_get_str(j, "attempt");
  iv->attempt = ck_arena_strdup(&c->arena, a ? a : "");
  iv->evidence = c->o->include_captures ? ck_arena_strdup(&c->arena, rel) : NULL;
  push_id(&c->bounds, &c->nbounds, iv->ckpt);
  push_id(&c->bounds, &c->nbounds, iv->prev);
  return 0;
}

static int collect_subtask(collector_t *c, int op, bool sink, int subtask, const char *dir,
                           ck_error_t *err) {
  char **names;
  int n = ck_bundle_list(dir, &c->arena, &names);
  int64_t *epochs = NULL, *evid = NULL;
  int nepochs = 0, nevid = 0, rc = 0;
  for (int i = 0; i < n && !rc; i++) {
    char src[4096], rel[512];
    ck_bundle_fmt(src, sizeof src, "%s/%s", dir, names[i]);
    ck_bundle_fmt(rel, sizeof rel, "%s/op-%d/subtask-%d/%s", CK_BUNDLE_CAPTURE, op, subtask, names[i]);
    if (strstr(names[i], ".tmp") || !ck_bundle_is_file(src)) continue;
    int64_t id;
    if ((id = ck_bundle_name_id(names[i], "epoch-", ".sink.json")) > 0) {
      push_id(&evid, &nevid, id);
      rc = read_evidence(c, op, subtask, src, rel, err);
    } else if ((id = ck_bundle_name_id(names[i], "epoch-", ".cap")) > 0 ||
               strcmp(names[i], "epoch-final.cap") == 0) {
      if (id > 0) push_id(&epochs, &nepochs, id);
      if (!c->o->include_captures) continue;
      ck_buf_t b;
      ck_buf_init(&b);
      rc = copy_file(c, src, rel, &b, err);
      ck_capture_reader_t *r = NULL;
      ck_error_t e;
      if (!rc && ck_capture_reader_open(b.data, b.len, &r, &e) == 0) {
        const ck_capture_header_t *h = ck_capture_reader_header(r);
        push_id(&c->bounds, &c->nbounds, h->from_checkpoint);
        if (h->epoch != CK_CAPTURE_EPOCH_FINAL) push_id(&c->bounds, &c->nbounds, h->epoch);
      } else if (!rc) {
        fprintf(stderr, "clink incident collect: warning: '%s' is not a readable capture; "
                "collected as it is\n", src);
      }
      ck_capture_reader_free(r);
      ck_buf_fini(&b);
      for (int k = 0; k < c->nivs; k++) /* the sink interval's capture, when already read */
        if (c->ivs[k].op == op && c->ivs[k].subtask == subtask && c->ivs[k].ckpt == id)
          c->ivs[k].capture = ck_arena_strdup(&c->arena, rel);
    }
  }
  /* what a completed checkpoint implies from the first interval this subtask recorded on */
  if (!rc && c->o->include_captures) {
    int64_t first = INT64_MAX;
    for (int i = 0; i < nepochs; i++) first = epochs[i] < first ? epochs[i] : first;
    for (int i = 0; i < nevid; i++) first = evid[i] < first ? evid[i] : first;
    for (int i = 0; i < c->ncompleted; i++) {
      int64_t id = c->completed[i];
      if (id < first) continue;
      char rel[512], why[256];
      ck_bundle_fmt(why, sizeof why, "checkpoint %lld completed, and this operator subtask recorded "
               "its intervals from checkpoint %lld on", (long long)id, (long long)first);
      if (!has_id(epochs, nepochs, id)) {
        ck_bundle_fmt(rel, sizeof rel, "%s/op-%d/subtask-%d/epoch-%lld.cap", CK_BUNDLE_CAPTURE, op,
                 subtask, (long long)id);
        add_missing(c, "capture", rel, why);
      }
      if (sink && !has_id(evid, nevid, id)) {
        ck_bundle_fmt(rel, sizeof rel, "%s/op-%d/subtask-%d/epoch-%lld.sink.json", CK_BUNDLE_CAPTURE,
                 op, subtask, (long long)id);
        add_missing(c, "evidence", rel, why);
      }
    }
  }
  ck_free(epochs);
  ck_free(evid);
  return rc;
}

static int collect_captures(collector_t *c, ck_error_t *err) {
  char **ops;
  int n = ck_bundle_list(c->capdir, &c->arena, &ops);
  for (int i = 0; i < n; i++) {
    int64_t op = ck_bundle_name_id(ops[i], "op-", "");
    if (op < 0 || op > 1 << 20) continue;
    char dir[4096], src[4200], rel[512];
    ck_bundle_fmt(dir, sizeof dir, "%s/%s", c->capdir, ops[i]);
    ck_bundle_fmt(src, sizeof src, "%s/op.json", dir);
    ck_bundle_fmt(rel, sizeof rel, "%s/op-%d/op.json", CK_BUNDLE_CAPTURE, (int)op);
    bool sink = false;
    if (ck_bundle_is_file(src)) {
      ck_buf_t b;
      ck_buf_init(&b);
      int rc = copy_file(c, src, rel, &b, err);
      ck_json_t *j;
      ck_error_t e;
      if (!rc && !ck_json_parse(b.data ? b.data : "", b.len, &c->arena, &j, &e)) {
        const char *k = ck_json_get_str(j, "kind");
        sink = k && strcmp(k, "sink") == 0;
      }
      ck_buf_fini(&b);
      if (rc) return rc;
    }
    char **subs;
    int ns = ck_bundle_list(dir, &c->arena, &subs);
    for (int s = 0; s < ns; s++) {
      int64_t st = ck_bundle_name_id(subs[s], "subtask-", "");
      if (st < 0 || st > 1 << 20) continue;
      char sdir[4400];
      ck_bundle_fmt(sdir, sizeof sdir, "%s/%s", dir, subs[s]);
      int rc = collect_subtask(c, (int)op, sink, (int)st, sdir, err);
      if (rc) return rc;
    }
  }
  /* the sink intervals' captures, read after their evidence */
  for (int k = 0; k < c->nivs; k++) {
    if (c->ivs[k].capture || !c->o->include_captures) continue;
    char rel[512];
    ck_bundle_fmt(rel, sizeof rel, "%s/op-%d/subtask-%d/epoch-%lld.cap", CK_BUNDLE_CAPTURE,
             c->ivs[k].op, c->ivs[k].subtask, (long long)c->ivs[k].ckpt);
    for (int f = 0; f < c->nfiles; f++)
      if (strcmp(c->files[f].path, rel) == 0) c->ivs[k].capture = ck_arena_strdup(&c->arena, rel);
  }
  return 0;
}

static int collect_snapshots(collector_t *c, int64_t id, const char *why, ck_error_t *err) {
  for (int t = 0; t < c->ntasks; t++) {
    char src[4096], rel[512], name[128];
    ck_snap_path(c->tasks[t], id, name, sizeof name);
    ck_bundle_fmt(src, sizeof src, "%s/v1/%s", c->ckdir, name);
    ck_bundle_fmt(rel, sizeof rel, "%s/v1/%s", CK_BUNDLE_CHECKPOINTS, name);
    bool have = false;
    for (int f = 0; f < c->nfiles && !have; f++) have = strcmp(c->files[f].path, rel) == 0;
    if (have) continue;
    if (!ck_bundle_is_file(src)) {
      if (has_id(c->completed, c->ncompleted, id)) {
        char w[256];
        ck_bundle_fmt(w, sizeof w, "checkpoint %lld completed and is a %s of a collected interval, and "
                 "task %d's snapshot of it is not on disk (pruned, or removed)", (long long)id,
                 strcmp(why, "bound") == 0 ? "bound" : "restore point", c->tasks[t]);
        add_missing(c, "snapshot", rel, w);
      }
      continue;
    }
    int rc = copy_file(c, src, rel, NULL, err);
    if (rc) return rc;
    ck_buf_printf(&c->state, "%s{\"checkpoint\":%lld,\"task\":%d,\"file\":", c->state.len ? "," : "",
                  (long long)id, c->tasks[t]);
    put_str(&c->state, rel);
    ck_buf_printf(&c->state, ",\"why\":\"%s\"}", why);
  }
  return 0;
}

static int collect_trace(collector_t *c, ck_error_t *err) {
  char **names;
  int n = ck_bundle_list(c->o->trace_dir, &c->arena, &names);
  if (n < 0)
    return ck_error_set(err, CK_EUSAGE, "could not collect the protocol trace: '%s' is not a "
                        "directory", c->o->trace_dir);
  for (int i = 0; i < n; i++) {
    char src[4096], rel[512];
    ck_bundle_fmt(src, sizeof src, "%s/%s", c->o->trace_dir, names[i]);
    ck_bundle_fmt(rel, sizeof rel, "%s/%s", CK_BUNDLE_TRACE, names[i]);
    if (!ck_bundle_is_file(src)) continue;
    int rc = copy_file(c, src, rel, NULL, err);
    if (rc) return rc;
  }
  return 0;
}

static int cmp_file(const void *a, const void *b) {
  return strcmp(((const file_ent_t *)a)->path, ((const file_ent_t *)b)->path);
}

static void put_ids(ck_buf_t *b, const int64_t *v, int n) {
  ck_buf_putc(b, '[');
  for (int i = 0; i < n; i++) ck_buf_printf(b, "%s%lld", i ? "," : "", (long long)v[i]);
  ck_buf_putc(b, ']');
}

static void manifest_json(collector_t *c, ck_buf_t *b) {
  const ck_bundle_collect_opts_t *o = c->o;
  ck_buf_printf(b, "{\"format\":\"%s\",\"version\":%d,\"clink\":\"%s\",\"job\":{\"id\":",
                CK_BUNDLE_FORMAT, CK_BUNDLE_VERSION, CLINK_VERSION);
  if (o->job_id) ck_buf_printf(b, "%lld", (long long)o->job_id);
  else ck_buf_puts(b, "null");
  ck_buf_printf(b, ",\"shape\":\"%s\",\"manifest\":%s},\"collected\":{\"checkpoint_dir\":",
                o->job_id ? "cluster" : "embedded", c->have_job ? "\"" CK_BUNDLE_JOB "\"" : "null");
  if (o->checkpoint_url) {
    char url[4200];
    if (o->job_id) snprintf(url, sizeof url, "%s/job-%lld", o->checkpoint_url, (long long)o->job_id);
    else snprintf(url, sizeof url, "%s", o->checkpoint_url);
    put_str(b, url);
  } else {
    put_str(b, c->ckdir);
  }
  ck_buf_puts(b, ",\"capture_dir\":");
  put_str(b, o->capture_dir ? c->capdir : NULL);
  ck_buf_puts(b, ",\"trace_dir\":");
  put_str(b, o->trace_dir);
  ck_buf_printf(b, ",\"include_captures\":%s,\"include_state\":%s},\"checkpoints\":{\"completed\":",
                o->include_captures ? "true" : "false", o->include_state ? "true" : "false");
  put_ids(b, c->completed, c->ncompleted);
  ck_buf_puts(b, ",\"confirmed\":");
  put_ids(b, c->confirmed, c->nconfirmed);
  ck_buf_printf(b, ",\"run_base\":%lld,\"id_floor\":%lld,\"clean_finish\":%s,\"fingerprint\":",
                (long long)c->run_base, (long long)c->id_floor, c->clean_finish ? "true" : "false");
  put_str(b, c->fingerprint[0] ? c->fingerprint : NULL);
  ck_buf_puts(b, "},\"runs\":[");
  /* runs: one per attempt, in the order of their first checkpoint */
  run_t *runs = NULL;
  int nruns = 0;
  for (int i = 0; i < c->nivs; i++) {
    interval_t *iv = &c->ivs[i];
    run_t *r = NULL;
    for (int k = 0; k < nruns && !r; k++)
      if (strcmp(runs[k].attempt, iv->attempt) == 0) r = &runs[k];
    if (!r) {
      runs = ck_realloc(runs, sizeof *runs * (size_t)(nruns + 1));
      r = &runs[nruns++];
      *r = (run_t){iv->attempt, iv->restored_from, iv->ckpt, NULL, 0};
    }
    if (iv->ckpt < r->first) r->first = iv->ckpt;
    push_id(&r->ids, &r->nids, iv->ckpt);
  }
  for (int i = 1; i < nruns; i++) /* insertion sort by first checkpoint */
    for (int k = i; k > 0 && runs[k].first < runs[k - 1].first; k--) {
      run_t t = runs[k];
      runs[k] = runs[k - 1];
      runs[k - 1] = t;
    }
  for (int i = 0; i < nruns; i++) {
    if (runs[i].nids) qsort(runs[i].ids, (size_t)runs[i].nids, sizeof *runs[i].ids, cmp_i64);
    ck_buf_printf(b, "%s{\"attempt\":", i ? "," : "");
    put_str(b, runs[i].attempt);
    ck_buf_printf(b, ",\"restored_from\":%lld,\"checkpoints\":", (long long)runs[i].restored_from);
    put_ids(b, runs[i].ids, runs[i].nids);
    ck_buf_putc(b, '}');
    ck_free(runs[i].ids);
  }
  ck_free(runs);
  ck_buf_puts(b, "],\"intervals\":[");
  for (int i = 0; i < c->nivs; i++) {
    interval_t *iv = &c->ivs[i];
    ck_buf_printf(b, "%s{\"op\":%d,\"subtask\":%d,\"checkpoint\":%lld,\"previous_barrier\":%lld,"
                  "\"attempt\":", i ? "," : "", iv->op, iv->subtask, (long long)iv->ckpt,
                  (long long)iv->prev);
    put_str(b, iv->attempt);
    ck_buf_printf(b, ",\"completed\":%s,\"evidence\":",
                  has_id(c->completed, c->ncompleted, iv->ckpt) ? "true" : "false");
    put_str(b, iv->evidence);
    ck_buf_puts(b, ",\"capture\":");
    put_str(b, iv->capture);
    ck_buf_putc(b, '}');
  }
  ck_buf_puts(b, "],\"state\":[");
  ck_buf_append(b, c->state.data ? c->state.data : "", c->state.len);
  ck_buf_puts(b, "],\"missing\":[");
  ck_buf_append(b, c->missing.data ? c->missing.data : "", c->missing.len);
  ck_buf_puts(b, "],\"files\":[");
  if (c->nfiles) qsort(c->files, (size_t)c->nfiles, sizeof *c->files, cmp_file);
  for (int i = 0; i < c->nfiles; i++) {
    ck_buf_printf(b, "%s\n{\"path\":", i ? "," : "");
    put_str(b, c->files[i].path);
    ck_buf_printf(b, ",\"bytes\":%lld,\"sha256\":\"%s\"}", (long long)c->files[i].bytes,
                  c->files[i].sha);
  }
  ck_buf_puts(b, "]}\n");
}

static int cmp_iv(const void *a, const void *b) {
  const interval_t *x = a, *y = b;
  if (x->ckpt != y->ckpt) return x->ckpt < y->ckpt ? -1 : 1;
  if (x->op != y->op) return x->op - y->op;
  return x->subtask - y->subtask;
}

int ck_bundle_collect(const ck_bundle_collect_opts_t *o, ck_error_t *err) {
  collector_t c = {.o = o};
  ck_arena_init(&c.arena, 0);
  ck_buf_init(&c.missing);
  ck_buf_init(&c.state);
  ck_buf_t text;
  ck_buf_init(&text);
  int rc = 0;
  if (o->job_id)
    ck_bundle_fmt(c.ckdir, sizeof c.ckdir, "%s/job-%lld", o->checkpoint_dir, (long long)o->job_id);
  else
    ck_bundle_fmt(c.ckdir, sizeof c.ckdir, "%s", o->checkpoint_dir);
  char meta[2200];
  ck_bundle_fmt(meta, sizeof meta, "%s/v1/_meta", c.ckdir);
  if (!ck_bundle_is_dir(meta)) {
    rc = ck_error_set(err, CK_EUSAGE, "could not collect: '%s' is not a checkpoint directory "
                      "(it has no v1/_meta)", c.ckdir);
    if (!o->job_id && ck_bundle_is_dir(o->checkpoint_dir))
      ck_error_hint(err, "a cluster job's checkpoints are under <checkpoint-dir>/job-<id>: give "
                    "--job ID");
    goto out;
  }
  if (o->capture_dir) {
    ck_bundle_fmt(c.capdir, sizeof c.capdir, "%s/job-%lld", o->capture_dir, (long long)o->job_id);
    if (!o->job_id || !ck_bundle_is_dir(c.capdir))
      ck_bundle_fmt(c.capdir, sizeof c.capdir, "%s", o->capture_dir);
    if (!ck_bundle_is_dir(c.capdir)) {
      rc = ck_error_set(err, CK_EUSAGE, "could not collect: --capture-dir '%s' is not a "
                        "directory", o->capture_dir);
      goto out;
    }
  }
  if (ck_bundle_is_dir(o->out)) {
    char **names;
    if (ck_bundle_list(o->out, &c.arena, &names) != 0) {
      rc = ck_error_set(err, CK_EUSAGE, "could not collect into '%s': it is not empty", o->out);
      ck_error_hint(err, "give --out a new directory");
      goto out;
    }
  } else if (access(o->out, F_OK) == 0) {
    rc = ck_error_set(err, CK_EUSAGE, "could not collect into '%s': it is not a directory",
                      o->out);
    goto out;
  } else if (ck_store_mkdirs(o->out)) {
    rc = ck_error_set(err, CK_EIO, "could not create '%s'", o->out);
    goto out;
  }
  if ((rc = collect_meta(&c, err))) goto out;
  if (o->capture_dir && (rc = collect_captures(&c, err))) goto out;
  if (c.nivs) qsort(c.ivs, (size_t)c.nivs, sizeof *c.ivs, cmp_iv);
  if (o->include_state) {
    if (c.nbounds) qsort(c.bounds, (size_t)c.nbounds, sizeof *c.bounds, cmp_i64);
    for (int i = 0; i < c.nbounds && !rc; i++)
      if (c.bounds[i] > 0) rc = collect_snapshots(&c, c.bounds[i], "bound", err);
    for (int i = 0; i < c.nivs && !rc; i++)
      if (c.ivs[i].restored_from > 0)
        rc = collect_snapshots(&c, c.ivs[i].restored_from, "restore_point", err);
    if (rc) goto out;
  }
  if (o->trace_dir && (rc = collect_trace(&c, err))) goto out;
  manifest_json(&c, &text);
  char path[4096];
  ck_bundle_fmt(path, sizeof path, "%s/%s", o->out, CK_BUNDLE_MANIFEST);
  if ((rc = ck_store_replace(path, text.data, text.len, 0644, err))) goto out;
  int64_t bytes = 0;
  for (int i = 0; i < c.nfiles; i++) bytes += c.files[i].bytes;
  fprintf(stderr, "clink incident collect: wrote '%s': %d files (%lld bytes), %d intervals of "
          "sink evidence, %d completed checkpoints, %d missing\n", o->out, c.nfiles,
          (long long)bytes, c.nivs, c.ncompleted, c.nmissing);
out:
  ck_free(c.files);
  ck_free(c.ivs);
  ck_free(c.completed);
  ck_free(c.confirmed);
  ck_free(c.bounds);
  ck_free(c.tasks);
  ck_buf_fini(&c.missing);
  ck_buf_fini(&c.state);
  ck_buf_fini(&text);
  ck_arena_fini(&c.arena);
  return rc;
}
