/*
 * DESIGN: `clink checkpoint-verify --dir=DIR [--json]` — whether a checkpoint directory is
 * what a rerun could restore from, without running the job.
 *
 * It checks: every snapshot file's checksum and layout (ck_snap_check_file), that it names its
 * own checkpoint, subtask and the directory's job (_meta/fingerprint); every completed
 * checkpoint has a snapshot file in every subtask directory, each of which reads whole —
 * every component's encoding decodes (the state tools' decoders) — so it is restorable; the
 * markers agree (confirmed-N only with completed-N; no snapshot or marker above the id floor
 * is missing its task files). Exit 0 when all hold, 1 otherwise (each problem is a line, or an
 * entry of the JSON report), 2 on bad usage.
 * Threads: the main thread.
 */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "cli/cli.h"
#include "cli/cmd_state.h"

static const ck_cli_opt_t opts[] = {
    {"dir", "DIR", "the checkpoint directory (or its v1, or a cluster job's job-<id>/v1)"},
    {"json", NULL, "print one JSON report instead of lines"},
    {NULL, NULL, NULL},
};

typedef struct report {
  ck_buf_t problems; /* JSON strings, comma-separated */
  int nproblems;
  ck_buf_t checked;  /* JSON objects, comma-separated */
  int nchecked;
  bool json;
} report_t;

static void problem(report_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(report_t *r, const char *fmt, ...) {
  char text[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (r->nproblems++) ck_buf_putc(&r->problems, ',');
  ck_buf_put_json_str(&r->problems, text, strlen(text));
  if (!r->json) printf("problem: %s\n", text);
}

static void error_problem(report_t *r, const ck_error_t *err) {
  char text[8192];
  ck_error_format(err, text, sizeof text);
  for (char *p = text; *p; p++)
    if (*p == '\n') *p = ' ';
  problem(r, "%s", text);
}

/* The ids of every checkpoint-<N>.snap in dir, ascending; how many. */
static int snap_ids(const char *dir, int64_t **ids) {
  *ids = NULL;
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    long long id;
    int end = 0;
    if (sscanf(e->d_name, "checkpoint-%lld.snap%n", &id, &end) != 1 || e->d_name[end]) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      *ids = ck_realloc(*ids, sizeof **ids * (size_t)cap);
    }
    (*ids)[n++] = id;
  }
  closedir(d);
  return n;
}

static int verify_main(int argc, char **argv) {
  const ck_cli_cmd_t *cmd = &ck_cli_cmd_checkpoint_verify;
  ck_cli_args_t args;
  int rc = ck_cli_parse(cmd, argc, argv, &args);
  if (rc) return rc < 0 ? 0 : rc;
  const char *dir = ck_cli_get(cmd, &args, "dir");
  if (!dir || args.npositional) {
    fprintf(stderr, "clink checkpoint-verify: give --dir=DIR\nusage: clink checkpoint-verify "
            "%s\n", cmd->usage);
    return 2;
  }
  report_t r = {.json = ck_cli_flag(cmd, &args, "json")};
  ck_buf_init(&r.problems);
  ck_buf_init(&r.checked);
  ck_error_t ferr;
  ck_error_clear(&ferr);
  const char *url = dir;
  if (!(dir = ck_state_local_dir(dir, &ferr))) {
    char text[4096];
    ck_error_format(&ferr, text, sizeof text);
    fprintf(stderr, "clink checkpoint-verify: %s\n", text);
    ck_buf_fini(&r.problems);
    ck_buf_fini(&r.checked);
    return 1;
  }
  if (dir != url) fprintf(stderr, "checkpoint-verify: %s, copied to '%s'\n", url, dir);
  char root[4096];
  ck_state_root(dir, root, sizeof root);
  ck_store_t store = {root};
  /* the job the directory belongs to */
  ck_buf_t fpb;
  ck_buf_init(&fpb);
  ck_error_t err;
  ck_error_clear(&err);
  uint64_t want_fp = 0;
  bool have_fp = false;
  if (ck_store_read(&store, "_meta/fingerprint", &fpb, &err) == 0 && fpb.data) {
    char *end;
    want_fp = strtoull(fpb.data, &end, 16);
    have_fp = end != fpb.data;
  }
  if (!have_fp) problem(&r, "'%s/_meta/fingerprint' is missing or unreadable: no job has run "
                        "here, or this is not a checkpoint directory", root);
  ck_buf_fini(&fpb);
  int *tasks;
  int ntasks = ck_state_tasks(root, &tasks);
  int64_t *completed;
  int ncompleted = ck_store_completed_ids(&store, 0, 0, &completed);
  /* every snapshot file: whole, and this job's */
  int nfiles = 0;
  for (int t = 0; t < ntasks; t++) {
    char tdir[4200];
    snprintf(tdir, sizeof tdir, "%s/%d", root, tasks[t]);
    int64_t *ids;
    int n = snap_ids(tdir, &ids);
    for (int i = 0; i < n; i++) {
      char path[4400];
      snprintf(path, sizeof path, "%s/checkpoint-%lld.snap", tdir, (long long)ids[i]);
      int64_t sid;
      int stask;
      uint64_t fp;
      ck_error_clear(&err);
      nfiles++;
      if (ck_snap_check_file(path, &sid, &stask, &fp, &err)) {
        error_problem(&r, &err);
        continue;
      }
      if (sid != ids[i] || stask != tasks[t])
        problem(&r, "snapshot file '%s' names checkpoint %lld of subtask %d", path,
                (long long)sid, stask);
      else if (have_fp && fp != want_fp)
        problem(&r, "snapshot file '%s' belongs to another job (fingerprint %016llx, the "
                "directory's %016llx)", path, (unsigned long long)fp,
                (unsigned long long)want_fp);
    }
    ck_free(ids);
  }
  /* every completed checkpoint: restorable */
  for (int c = 0; c < ncompleted; c++) {
    int64_t id = completed[c];
    bool ok = ntasks > 0;
    size_t entries = 0;
    if (ntasks == 0) problem(&r, "checkpoint %lld is marked completed but '%s' holds no subtask "
                             "directories", (long long)id, root);
    for (int t = 0; t < ntasks; t++) {
      char path[4400];
      snprintf(path, sizeof path, "%s/%d/checkpoint-%lld.snap", root, tasks[t], (long long)id);
      ck_error_clear(&err);
      if (ck_snap_check_file(path, NULL, NULL, NULL, &err)) {
        ok = false;
        if (strstr(err.message, "is missing")) /* anything else was reported above */
          problem(&r, "checkpoint %lld is marked completed but snapshot file '%s' is missing",
                  (long long)id, path);
        continue;
      }
      ck_state_set_t set = {0};
      if (ck_state_load_file(path, &set, &err)) {
        ok = false;
        error_problem(&r, &err);
      }
      entries += set.n;
      ck_state_set_free(&set);
    }
    if (r.nchecked++) ck_buf_putc(&r.checked, ',');
    ck_buf_printf(&r.checked, "{\"checkpoint\":%lld,\"restorable\":%s,\"entries\":%zu,"
                  "\"confirmed\":%s}", (long long)id, ok ? "true" : "false", entries,
                  ck_store_marked(&store, "confirmed", id) ? "true" : "false");
    if (!r.json && ok)
      printf("ok: checkpoint %lld is restorable (%d subtask files, %zu entries)%s\n",
             (long long)id, ntasks, entries,
             ck_store_marked(&store, "confirmed", id) ? ", confirmed" : "");
  }
  /* markers: confirmed only with completed */
  int64_t latest_confirmed = ck_store_latest(&store, "confirmed");
  for (int64_t id = latest_confirmed; id > 0 && id > latest_confirmed - 64; id--)
    if (ck_store_marked(&store, "confirmed", id) && !ck_store_marked(&store, "completed", id))
      problem(&r, "checkpoint %lld is marked confirmed but not completed", (long long)id);
  if (r.json) {
    printf("{\"dir\":");
    ck_buf_t d;
    ck_buf_init(&d);
    ck_buf_put_json_str(&d, root, strlen(root));
    printf("%s,\"ok\":%s,\"snapshot_files\":%d,\"subtasks\":%d,\"checkpoints\":[%s],"
           "\"problems\":[%s]}\n", d.data, r.nproblems ? "false" : "true", nfiles, ntasks,
           r.checked.data ? r.checked.data : "", r.problems.data ? r.problems.data : "");
    ck_buf_fini(&d);
  } else {
    printf("%s: %d snapshot files, %d completed checkpoints, %d problem%s\n",
           r.nproblems ? "damaged" : "ok", nfiles, ncompleted, r.nproblems,
           r.nproblems == 1 ? "" : "s");
  }
  rc = r.nproblems ? 1 : 0;
  ck_free(tasks);
  ck_free(completed);
  ck_buf_fini(&r.problems);
  ck_buf_fini(&r.checked);
  return rc;
}

const ck_cli_cmd_t ck_cli_cmd_checkpoint_verify = {
    "checkpoint-verify", "check every snapshot file and completed checkpoint of a directory",
    "--dir=DIR [--json]", opts, verify_main};
