/*
 * DESIGN: high availability — what a coordinator started with --ha-dir keeps there, so that
 * one started after it (after a kill, or a standby waiting on the lock) takes over its jobs.
 *
 *   <ha-dir>/leader.lock            flock'ed by the leader for its whole life; a second
 *                                   coordinator blocks on it (standing by)
 *   <ha-dir>/epoch                  raised by each new leader, stamped on every frame it sends
 *                                   (workers drop frames of an older epoch: a deposed leader
 *                                   cannot act)
 *   <ha-dir>/jobs/job-<id>.manifest one per job: what running it again needs (format below)
 *
 * Every file is replaced durably with the checkpoint store's ck_store_replace (temporary name,
 * fsync, rename, fsync the directory), mode 0600 in 0700 directories: the manifests hold job
 * definitions. Credentials never reach the disk (the job graph and the SQL are stored
 * redacted, base/redact.h).
 *
 * Threads: ck_co_ha_take runs on the starting thread before any other; ck_co_ha_save_manifest
 * under co->mu from any of the coordinator's threads; ck_co_ha_recover at start, under co->mu:
 * it only reads the manifests; the jobs they hold are planned on a planner thread of their
 * own (conns.c), never under co->mu, since plan-time checks may wait on the network.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/redact.h"
#include "checkpoint/store.h"
#include "checkpoint/trace.h"
#include "cluster/coordinator_int.h"

#define LOG_CO "coordinator"

static char *read_text(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  ck_buf_t b;
  ck_buf_init(&b);
  char chunk[8192];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) ck_buf_append(&b, chunk, n);
  fclose(f);
  ck_buf_reserve(&b, 0);
  b.data[b.len] = 0;
  if (len) *len = b.len;
  return ck_buf_detach(&b);
}

static void manifest_path(const co_t *co, int64_t id, char *out, size_t n) {
  snprintf(out, n, "%s/jobs/job-%lld.manifest", co->o.ha_dir, (long long)id);
}

/* Replaces job id's manifest: a file of the HA directory, or a node on ZooKeeper, fenced. */
static int write_manifest(co_t *co, int64_t id, const char *data, size_t len,
                          ck_error_t *err) {
  if (co->zk) {
    char name[64];
    snprintf(name, sizeof name, "job-%lld.manifest", (long long)id);
    return ck_co_hazk_write(co, name, data, len, err);
  }
  char path[PATH_MAX];
  manifest_path(co, id, path, sizeof path);
  return ck_store_replace(path, data, len, 0600, err);
}

/*
 * The job's manifest: what a coordinator taking over needs to run it again. Format 3: lines
 * "clink-job 3", "id N", "parallelism N", "status S", "attempt N", "redacted 1" when the job
 * graph held a credential, then three length-prefixed fields — "name <bytes>\n" followed by
 * exactly that many bytes and a newline, "plan <bytes>\n" (the serialised job graph,
 * runtime/plan.h, in hex) and "sql <bytes>\n" — so no content of any can move a field; then,
 * for a job submitted with per-job options, the field "capture_dir <bytes>\n" and the line
 * "capture_records N".
 * Written 0600 in a 0700 directory.
 *
 * The plan is what a takeover runs: it is decoded, not planned, so the SQL is kept only for
 * display, always redacted (base/redact.h). A plan whose options hold a credential written
 * inline (password = '…', a dsn with a password) is stored masked (CK_PLAN_WIRE_REDACT) with
 * "redacted 1": the credential never reaches the disk, and such a job cannot be run again
 * from its manifest — ck_co_ha_recover fails it, saying to give the credential through
 * password_env (read where the job runs), which a plan keeps by name. Workers get the real
 * value in DEPLOY only (in memory, over the control connection). Formats 2 and 1 (older
 * versions: the SQL, redacted) are still recovered by planning their SQL again.
 */
void ck_co_ha_save_manifest(co_t *co, const job_t *job) {
  if (!co->o.ha_dir && !co->zk) return;
  ck_buf_t sql, masked;
  ck_buf_init(&sql);
  ck_buf_init(&masked);
  (void)ck_redact_sql(job->sql, strlen(job->sql), &sql, NULL);
  bool redacted = ck_plan_encode(job->plan.graph, CK_PLAN_WIRE_REDACT, &masked);
  const ck_buf_t *plan = redacted ? &masked : &job->plan.wire; /* no credential: the plan */
  ck_buf_t b;
  ck_buf_init(&b);
  ck_buf_printf(&b, "clink-job 3\nid %lld\nparallelism %d\nstatus %s\nattempt %d\n%s",
                (long long)job->id, job->parallelism, status_name(job->status), job->life.restarts,
                redacted ? "redacted 1\n" : "");
  ck_buf_printf(&b, "name %zu\n", strlen(job->name));
  ck_buf_puts(&b, job->name);
  ck_buf_printf(&b, "\nplan %zu\n", plan->len * 2);
  static const char hex[] = "0123456789abcdef";
  ck_buf_reserve(&b, plan->len * 2);
  for (size_t i = 0; i < plan->len; i++) {
    ck_buf_putc(&b, hex[(uint8_t)plan->data[i] >> 4]);
    ck_buf_putc(&b, hex[(uint8_t)plan->data[i] & 15]);
  }
  ck_buf_printf(&b, "\nsql %zu\n", sql.len);
  ck_buf_append(&b, sql.data, sql.len);
  ck_buf_putc(&b, '\n');
  if (job->capture_dir || job->capture_records) { /* the per-job options, when it has them */
    const char *cd = job->capture_dir ? job->capture_dir : "";
    ck_buf_printf(&b, "capture_dir %zu\n%s\ncapture_records %lld\n", strlen(cd), cd,
                  (long long)job->capture_records);
  }
  ck_buf_fini(&sql);
  ck_buf_fini(&masked);
  ck_error_t err;
  ck_error_clear(&err);
  if (write_manifest(co, job->id, b.data, b.len, &err))
    CK_LOG_ERR(LOG_CO, "job_id=%lld: could not save the job manifest: %s", (long long)job->id,
               err.message);
  ck_buf_fini(&b);
}

/* Hex text into bytes, in place (the text is at least as long); false when it is not hex. */
static bool unhex(char *text, size_t *len) {
  size_t n = *len;
  if (n % 2) return false;
  for (size_t i = 0; i < n; i += 2) {
    int v = 0;
    for (int k = 0; k < 2; k++) {
      char c = text[i + k];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return false;
      v = v << 4 | d;
    }
    text[i / 2] = (char)v;
  }
  *len = n / 2;
  return true;
}

/* A directory of the HA directory: created 0700, or narrowed to 0700 when it exists. */
static int private_dir(const char *path, ck_error_t *err) {
  if (mkdir(path, 0700) && errno != EEXIST)
    return ck_error_set(err, CK_EIO, "could not create the HA directory '%s': %s", path,
                        strerror(errno));
  struct stat st;
  if (stat(path, &st) || !S_ISDIR(st.st_mode))
    return ck_error_set(err, CK_EIO, "could not use the HA directory '%s': it is not a "
                        "directory", path);
  if ((st.st_mode & 077) && chmod(path, st.st_mode & 0700)) {
    ck_error_set(err, CK_EIO, "could not make the HA directory '%s' private (mode 0700): %s",
                 path, strerror(errno));
    ck_error_hint(err, "It holds job definitions with their credentials; run the coordinator "
                       "as the directory's owner or give it a directory of its own.");
    return CK_EIO;
  }
  return 0;
}

int ck_co_ha_take(co_t *co, ck_error_t *err) {
  char path[PATH_MAX];
  int rc = private_dir(co->o.ha_dir, err);
  snprintf(path, sizeof path, "%s/jobs", co->o.ha_dir);
  if (!rc) rc = private_dir(path, err);
  if (rc) return rc;
  snprintf(path, sizeof path, "%s/leader.lock", co->o.ha_dir);
  co->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (co->lock_fd < 0)
    return ck_error_set(err, CK_EIO, "could not open the leader lock '%s': %s", path,
                        strerror(errno));
  (void)fchmod(co->lock_fd, 0600); /* one left by an older version may be 0644 */
  if (flock(co->lock_fd, LOCK_EX | LOCK_NB)) {
    CK_LOG_INFO(LOG_CO, "another coordinator holds the leader lock '%s': standing by", path);
    if (flock(co->lock_fd, LOCK_EX))
      return ck_error_set(err, CK_EIO, "could not take the leader lock '%s': %s", path,
                          strerror(errno));
  }
  snprintf(path, sizeof path, "%s/epoch", co->o.ha_dir);
  char *text = read_text(path, NULL);
  uint64_t epoch = text ? strtoull(text, NULL, 10) : 0;
  ck_free(text);
  co->epoch = epoch + 1;
  char num[32];
  int n = snprintf(num, sizeof num, "%llu\n", (unsigned long long)co->epoch);
  rc = ck_store_replace(path, num, (size_t)n, 0600, err);
  if (rc) return rc;
  CK_TRACE("leader", "ha_dir=%s epoch=%llu", co->o.ha_dir, (unsigned long long)co->epoch);
  CK_LOG_INFO(LOG_CO, "leader of HA directory '%s' with epoch %llu", co->o.ha_dir,
              (unsigned long long)co->epoch);
  return 0;
}

/* Rewrites a manifest (its whole text) with status FAILED, so no later takeover tries the
 * job again. */
static void mark_unrecoverable(co_t *co, int64_t id, const char *text) {
  const char *st = strstr(text, "\nstatus ");
  if (!st) return;
  const char *eol = strchr(st + 1, '\n');
  ck_buf_t b;
  ck_buf_init(&b);
  ck_buf_append(&b, text, (size_t)(st - text));
  ck_buf_puts(&b, "\nstatus FAILED");
  if (eol) ck_buf_puts(&b, eol);
  ck_error_t err;
  ck_error_clear(&err);
  if (write_manifest(co, id, b.data, b.len, &err)) CK_LOG_ERR(LOG_CO, "%s", err.message);
  ck_buf_fini(&b);
}

/* A manifest line "<key> <value>\n" at *p: the value's start (and *p moves past the line),
 * or NULL. */
static char *manifest_line(char **p, const char *end, const char *key) {
  size_t k = strlen(key);
  char *nl = memchr(*p, '\n', (size_t)(end - *p));
  if (!nl || (size_t)(nl - *p) <= k || strncmp(*p, key, k) || (*p)[k] != ' ') return NULL;
  *nl = 0;
  char *v = *p + k + 1;
  *p = nl + 1;
  return v;
}

/* A field "<key> <length>\n<length bytes>\n": the bytes, NUL-terminated in place. */
static char *manifest_field(char **p, const char *end, const char *key) {
  char *v = manifest_line(p, end, key);
  if (!v) return NULL;
  char *e;
  unsigned long long n = strtoull(v, &e, 10);
  if (e == v || *e || n >= (unsigned long long)(end - *p)) return NULL;
  char *field = *p;
  if (field[n] != '\n' || memchr(field, 0, (size_t)n)) return NULL;
  field[n] = 0;
  *p = field + n + 1;
  return field;
}

/* Reads a manifest (format 3, or formats 2 and 1 of older versions, which have no plan:
 * *plan NULL) in place. */
static int parse_manifest(char *text, size_t len, int *par, int *attempt, char *status,
                          bool *redacted, const char **name, char **plan, size_t *plan_len,
                          const char **sql, const char **capture_dir,
                          int64_t *capture_records) {
  char *end = text + len, *p = text, *v;
  *redacted = false;
  *plan = NULL;
  if (len > 12 && !strncmp(text, "clink-job 1\n", 12)) { /* the SQL ran to the end */
    char *sqlp = strstr(text, "\nsql\n"), *namep = strstr(text, "\nname ");
    if (!sqlp || !namep || namep > sqlp) return -1;
    if ((v = strstr(text, "\nparallelism ")) && v < sqlp) *par = atoi(v + 13);
    if ((v = strstr(text, "\nattempt ")) && v < sqlp) *attempt = atoi(v + 9);
    if ((v = strstr(text, "\nstatus ")) && v < sqlp) sscanf(v + 8, "%31s", status);
    if ((v = strstr(text, "\nredacted 1\n")) && v < sqlp) *redacted = true;
    *sqlp = 0;
    char *nl = strchr(namep + 6, '\n');
    if (nl) *nl = 0;
    *name = namep + 6;
    *sql = sqlp + 5;
    return 0;
  }
  if (!(v = manifest_line(&p, end, "clink-job")) || (strcmp(v, "2") && strcmp(v, "3")))
    return -1;
  bool has_plan = !strcmp(v, "3");
  if (!manifest_line(&p, end, "id")) return -1;
  if (!(v = manifest_line(&p, end, "parallelism"))) return -1;
  *par = atoi(v);
  if (!(v = manifest_line(&p, end, "status"))) return -1;
  snprintf(status, 32, "%s", v);
  if (!(v = manifest_line(&p, end, "attempt"))) return -1;
  *attempt = atoi(v);
  char *q = p;
  if ((v = manifest_line(&q, end, "redacted")) && !strcmp(v, "1")) {
    *redacted = true;
    p = q;
  } else if (v) {
    return -1;
  }
  if (!(*name = manifest_field(&p, end, "name"))) return -1;
  if (has_plan) {
    if (!(*plan = manifest_field(&p, end, "plan"))) return -1;
    *plan_len = strlen(*plan);
    if (!unhex(*plan, plan_len)) return -1;
  }
  if (!(*sql = manifest_field(&p, end, "sql"))) return -1;
  if (p < end) { /* the per-job options (format 3 of this version on) */
    if (!(*capture_dir = manifest_field(&p, end, "capture_dir"))) return -1;
    if (!(v = manifest_line(&p, end, "capture_records"))) return -1;
    *capture_records = strtoll(v, NULL, 10);
  }
  return p == end ? 0 : -1;
}

typedef struct {
  ck_co_recovered_t *list, **tail;
} recovering_t;

/* One manifest read back (a file of the HA directory or a node on ZooKeeper). */
static void recover_one(co_t *co, const char *fname, const char *where, char *text, size_t len,
                        void *ctx) {
  recovering_t *rv = ctx;
  long long id;
  char tail[16];
  if (sscanf(fname, "job-%lld.%15s", &id, tail) != 2 || strcmp(tail, "manifest")) return;
  char *whole = ck_malloc(len + 1); /* parsing cuts text in place */
  memcpy(whole, text, len);
  whole[len] = 0;
  int par = 1, attempt = 0;
  char status[32] = "";
  const char *name = NULL, *sql = NULL;
  char *plan = NULL;
  size_t plan_len = 0;
  bool redacted = false;
  const char *capture_dir = NULL;
  int64_t capture_records = 0;
  if (parse_manifest(text, len, &par, &attempt, status, &redacted, &name, &plan, &plan_len,
                     &sql, &capture_dir, &capture_records)) {
    CK_LOG_WARN(LOG_CO, "ignoring the unreadable job manifest '%s'", where);
    goto out;
  }
  if (id >= co->next_job_id) co->next_job_id = id + 1;
  if (!strcmp(status, "FINISHED") || !strcmp(status, "FAILED") || !strcmp(status, "CANCELLED"))
    goto out;
  if (redacted) { /* its credentials were never stored */
    mark_unrecoverable(co, id, whole); /* first: whoever reads the line below sees it marked */
    CK_LOG_ERR(LOG_CO, "could not recover job %lld ('%s'): its SQL holds credentials, which "
               "the HA manifest does not keep; submit it again, giving them through "
               "password_env (read where the job runs) so a takeover can rerun it", id, name);
    goto out;
  }
  ck_co_recovered_t *r = ck_calloc(1, sizeof *r);
  *r = (ck_co_recovered_t){.id = id, .attempt = attempt, .par = par};
  r->name = ck_malloc(strlen(name) + 1);
  memcpy(r->name, name, strlen(name) + 1);
  r->sql = ck_malloc(strlen(sql) + 1);
  memcpy(r->sql, sql, strlen(sql) + 1);
  if (capture_dir) {
    r->capture_dir = ck_malloc(strlen(capture_dir) + 1);
    memcpy(r->capture_dir, capture_dir, strlen(capture_dir) + 1);
    r->capture_records = capture_records;
  }
  if (plan) {
    r->plan = ck_malloc(plan_len ? plan_len : 1);
    memcpy(r->plan, plan, plan_len);
    r->plan_len = plan_len;
  }
  *rv->tail = r;
  rv->tail = &r->next;
out:
  ck_free(whole);
}

ck_co_recovered_t *ck_co_ha_recover(co_t *co) {
  recovering_t rv = {NULL, NULL};
  rv.tail = &rv.list;
  if (co->zk) {
    (void)ck_co_hazk_each(co, recover_one, &rv);
    return rv.list;
  }
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/jobs", co->o.ha_dir);
  DIR *d = opendir(dir);
  if (!d) return NULL;
  struct dirent *e;
  while ((e = readdir(d))) {
    long long id;
    char tail[16];
    if (sscanf(e->d_name, "job-%lld.%15s", &id, tail) != 2 || strcmp(tail, "manifest")) continue;
    char path[PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t len = 0;
    char *text = read_text(path, &len);
    if (!text) continue;
    (void)chmod(path, 0600); /* one written by an older version may be 0644 */
    recover_one(co, e->d_name, path, text, len, &rv);
    ck_free(text);
  }
  closedir(d);
  return rv.list;
}
