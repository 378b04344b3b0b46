/*
 * DESIGN: a submission's first half, for the coordinator's control loop (coordinator.c): the
 * job name's and per-job options' checks, and the planning of the SQL (or, recovering a job,
 * the decoding of its serialised plan) into a new job that has no id yet. Nothing here touches
 * coordinator state under co->mu: planning may wait on the network (a plan-time connector
 * check), so it runs without the control loop's lock, one plan at a time under co->plan_mu.
 * The second half — the id, the manifest, the deployment — is add_job in coordinator.c.
 * Threads: the submitting thread (a REST or control-port handler, or HA recovery).
 */
#include "cluster/coordinator_int.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/thread.h"
#include "cluster/jobplan.h"
#include "sql/planner.h"

/*
 * A job name is shown in logs, the REST API and `clink list`, and stored in the HA manifest:
 * 1 to CK_JOB_NAME_MAX bytes of valid UTF-8 without control characters (C0, DEL, C1), so it
 * can neither forge a log line nor move a field of the manifest. Returns 0, or CK_EINVAL
 * with err saying what is wrong and where.
 */
#define CK_JOB_NAME_MAX 128
int ck_co_job_check_name(const char *name, ck_error_t *err) {
  size_t n = strlen(name);
  if (n > CK_JOB_NAME_MAX) {
    ck_error_set(err, CK_EINVAL, "could not accept the job name: it is %zu bytes long, the "
                 "limit is %d", n, CK_JOB_NAME_MAX);
    ck_error_hint(err, "Give a shorter --name.");
    return CK_EINVAL;
  }
  const unsigned char *p = (const unsigned char *)name;
  for (size_t i = 0; i < n;) {
    unsigned c = p[i];
    size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
               : (c & 0xf8) == 0xf0 ? 4 : 0;
    unsigned cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; k++) {
      ok = (p[i + k] & 0xc0) == 0x80;
      cp = cp << 6 | (p[i + k] & 0x3f);
    }
    static const unsigned min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    if (ok) ok = cp >= min_cp[len] && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff);
    if (!ok) {
      ck_error_set(err, CK_EINVAL, "could not accept the job name: byte %zu is not valid "
                   "UTF-8", i + 1);
      ck_error_hint(err, "Give a --name of printable characters.");
      return CK_EINVAL;
    }
    if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) {
      ck_error_set(err, CK_EINVAL, "could not accept the job name: byte %zu is the "
                   "control character U+%04X", i + 1, cp);
      ck_error_hint(err, "A job name is shown in logs and stored in manifests: give one of "
                         "printable characters, without line breaks or tabs.");
      return CK_EINVAL;
    }
    i += len;
  }
  return 0;
}

/*
 * A submission's first half: checks the name and parallelism and plans the SQL (refusing bad
 * SQL with its position) — or, recovering a job, builds its serialised plan (wire, not NULL;
 * the SQL is then only shown) — into a new job with no id. Touches no coordinator state: runs
 * WITHOUT co->mu (plan-time checks may wait on the network), one at a time under plan_mu
 * (the planner is not known to be reentrant). *out is the caller's until add_job.
 */
int ck_co_job_opts_check(const ck_co_job_opts_t *jo, ck_error_t *err) {
  if (!jo) return 0;
  const char *dir = jo->capture_dir;
  if (dir && *dir) {
    size_t n = strlen(dir);
    bool control = false;
    for (size_t i = 0; i < n; i++) control |= (unsigned char)dir[i] < 0x20;
    if (dir[0] != '/' || n >= 3072 || control) {
      ck_error_set(err, CK_EINVAL, "could not accept the job: its capture directory '%.200s' "
                   "must be an absolute path", dir);
      ck_error_detail(err, "the directory is created on every worker that runs a subtask of "
                      "the job, which resolves a relative path against its own working "
                      "directory");
      ck_error_hint(err, "give an absolute path of at most 3071 bytes, without control "
                    "characters");
      return CK_EINVAL;
    }
  }
  if (jo->capture_records < 0 || jo->capture_records > 1000000000)
    return ck_error_set(err, CK_EINVAL, "could not accept the job: its capture records must "
                        "be from 1 to 1000000000 (0: the workers' --capture-records), not "
                        "%lld", (long long)jo->capture_records);
  return 0;
}

static char *dup_str(const char *s) {
  if (!s || !*s) return NULL;
  size_t n = strlen(s);
  char *d = ck_malloc(n + 1);
  memcpy(d, s, n + 1);
  return d;
}

int ck_co_job_plan(co_t *co, const char *name, const char *sql, const void *wire,
                   size_t wire_len, int parallelism, const ck_co_job_opts_t *jo, job_t **out,
                   ck_error_t *err) {
  *out = NULL;
  if (parallelism < 1 || parallelism > 4096)
    return ck_error_set(err, CK_EINVAL, "parallelism must be from 1 to 4096, not %d",
                        parallelism);
  if (name && *name && ck_co_job_check_name(name, err)) return CK_EINVAL;
  if (ck_co_job_opts_check(jo, err)) return CK_EINVAL;
  job_t *job = ck_calloc(1, sizeof *job);
  char fname[256];
  snprintf(fname, sizeof fname, "%s", name && *name ? name : "<submitted>");
  ck_mutex_lock(&co->plan_mu);
  int rc = wire ? ck_jobplan_decode(&job->plan, wire, wire_len, err)
                : ck_jobplan_init(&job->plan, sql, fname, parallelism, 128, err);
  ck_mutex_unlock(&co->plan_mu);
  if (rc) {
    ck_free(job);
    return rc;
  }
  job->parallelism = parallelism;
  if (jo) {
    job->capture_dir = dup_str(jo->capture_dir);
    job->capture_records = jo->capture_records;
  }
  size_t n = strlen(sql);
  job->sql = ck_malloc(n + 1);
  memcpy(job->sql, sql, n + 1);
  if (name && *name) {
    job->name = ck_malloc(strlen(name) + 1);
    memcpy(job->name, name, strlen(name) + 1);
  }
  ck_buf_t g;
  ck_buf_init(&g);
  ck_graph_guarantee(job->plan.graph, true, &g);
  job->guarantee = ck_buf_detach(&g);
  job->status = JOB_CREATED;
  *out = job;
  return 0;
}
