/* DESIGN: see store.h. */
#include "checkpoint/store.h"
#include "checkpoint/trace.h"

#include <dirent.h>
#include <stdatomic.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "base/arrow_ipc.h"
#include "base/crc32c.h"
#include "base/log.h"
#include "base/s3.h"

#define OLD_SNAP_MAGIC "CKSNAP\0\1" /* the version-1 binary layout, no longer read */

int ck_store_mkdirs(const char *path) {
  char *p = ck_malloc(strlen(path) + 1);
  strcpy(p, path);
  int rc = 0;
  for (char *s = p + 1; *s && !rc; s++) {
    if (*s != '/') continue;
    *s = 0;
    if (mkdir(p, 0755) && errno != EEXIST) rc = -1;
    *s = '/';
  }
  if (!rc && mkdir(p, 0755) && errno != EEXIST) rc = -1;
  int e = errno;
  ck_free(p);
  errno = e;
  return rc;
}

/* ---------------------------------------------------------------- the filesystem */

static void full(const ck_store_t *s, const char *rel, char *out, size_t n) {
  snprintf(out, n, "%s/%s", s->root, rel);
}

static void count_list_failure(const ck_store_t *s) {
  if (s->health) atomic_fetch_add(&s->health->list_failures, 1);
}

static int fsync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

/* ck_store_replace, or with exclusive a write-once: the temporary file is linked into place
 * (link() fails on an existing name, atomically), CK_EEXISTS when path exists already. */
static int put_file(const char *path, const void *data, size_t n, int mode, bool exclusive,
                    ck_error_t *err) {
  char tmp[4200], dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  else snprintf(dir, sizeof dir, ".");
  /* a write-once may race other threads of this process for the same path: a name per call */
  static _Atomic unsigned seq;
  if (exclusive)
    snprintf(tmp, sizeof tmp, "%s.tmp-%d-%u", path, (int)getpid(), atomic_fetch_add(&seq, 1));
  else
    snprintf(tmp, sizeof tmp, "%s.tmp-%d", path, (int)getpid());
  (void)unlink(tmp); /* a leftover would keep its old mode through O_TRUNC: start afresh */
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, (mode_t)mode);
  if (fd < 0) return ck_error_set(err, CK_EIO, "could not create '%s': %s", tmp, strerror(errno));
  const char *p = data;
  size_t left = n;
  while (left) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      int e = errno;
      close(fd);
      unlink(tmp);
      return ck_error_set(err, CK_EIO, "could not write '%s': %s", tmp, strerror(e));
    }
    p += w;
    left -= (size_t)w;
  }
  if (fsync(fd) || close(fd)) {
    int e = errno;
    unlink(tmp);
    return ck_error_set(err, CK_EIO, "could not sync '%s': %s", tmp, strerror(e));
  }
  if (exclusive) {
    int lr = link(tmp, path), e = errno;
    unlink(tmp);
    if (lr && e == EEXIST)
      return ck_error_set(err, CK_EEXISTS, "could not create '%s': it exists already", path);
    if (lr) return ck_error_set(err, CK_EIO, "could not link '%s' into place: %s", tmp, strerror(e));
  } else if (rename(tmp, path)) {
    int e = errno;
    unlink(tmp);
    return ck_error_set(err, CK_EIO, "could not rename '%s' into place: %s", tmp, strerror(e));
  }
  if (fsync_dir(dir))
    return ck_error_set(err, CK_EIO, "could not sync directory '%s': %s", dir, strerror(errno));
  return 0;
}

int ck_store_replace(const char *path, const void *data, size_t n, int mode, ck_error_t *err) {
  return put_file(path, data, n, mode, false, err);
}

static int fs_put(const ck_store_t *store, const char *relpath, const void *data, size_t n,
                  bool exclusive, ck_error_t *err) {
  char path[4096], dir[4096];
  full(store, relpath, path, sizeof path);
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  *slash = 0;
  if (ck_store_mkdirs(dir))
    return ck_error_set(err, CK_EIO, "could not create '%s': %s", dir, strerror(errno));
  return put_file(path, data, n, 0644, exclusive, err);
}

static int fs_write(const ck_store_t *store, const char *relpath, const void *data, size_t n,
                    ck_error_t *err) {
  return fs_put(store, relpath, data, n, false, err);
}

static int fs_create(const ck_store_t *store, const char *relpath, const void *data, size_t n,
                     ck_error_t *err) {
  return fs_put(store, relpath, data, n, true, err);
}

static int fs_read(const ck_store_t *store, const char *relpath, ck_buf_t *out, ck_error_t *err) {
  char path[4096];
  full(store, relpath, path, sizeof path);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return CK_ENOTFOUND;
    return ck_error_set(err, CK_EIO, "could not open '%s': %s", path, strerror(errno));
  }
  /* straight into out, sized by the file (one buffer, no copy through a chunk); a file that
   * grows meanwhile is read to its end all the same */
  struct stat st;
  size_t room = fstat(fd, &st) == 0 && st.st_size > 0 ? (size_t)st.st_size : 0;
  for (;;) {
    if (room || out->cap - out->len < 2) ck_buf_reserve(out, room ? room : 65536);
    size_t cap = out->cap - out->len - 1; /* ck_buf keeps a byte for its terminating NUL */
    ssize_t r = read(fd, out->data + out->len, cap);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int e = errno;
      close(fd);
      out->data[out->len] = 0;
      return ck_error_set(err, CK_EIO, "could not read '%s': %s", path, strerror(e));
    }
    if (r == 0) break;
    out->len += (size_t)r;
    room = room > (size_t)r ? room - (size_t)r : 0;
  }
  if (out->data) out->data[out->len] = 0;
  close(fd);
  return 0;
}

static bool fs_exists(const ck_store_t *store, const char *relpath) {
  char path[4096];
  full(store, relpath, path, sizeof path);
  return access(path, F_OK) == 0;
}

static int fs_remove(const ck_store_t *store, const char *relpath) {
  char path[4096];
  full(store, relpath, path, sizeof path);
  return unlink(path) == 0 || errno == ENOENT ? 0 : CK_EIO;
}

static int fs_list(const ck_store_t *store, const char *reldir, ck_store_name_fn fn, void *ctx) {
  char dir[4200];
  if (*reldir) full(store, reldir, dir, sizeof dir);
  else snprintf(dir, sizeof dir, "%s", store->root);
  DIR *d = opendir(dir);
  if (!d) {
    if (errno != ENOENT && errno != ENOTDIR) { /* a name that is not a directory holds nothing */
      CK_LOG_WARN("checkpoint", "could not list '%s': %s", dir, strerror(errno));
      count_list_failure(store);
    }
    return 0;
  }
  int rc = 0;
  struct dirent *e;
  while (!rc && (e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) rc = fn(ctx, e->d_name);
  closedir(d);
  return rc;
}

static const ck_store_ops_t fs_ops = {
    .write = fs_write, .create = fs_create, .read = fs_read, .exists = fs_exists, .remove = fs_remove, .list = fs_list};

/* ---------------------------------------------------------------- S3 */

static void s3_key(const ck_store_t *s, const char *rel, char *out, size_t n) {
  snprintf(out, n, "%s%s", s->key_prefix, rel);
}

static int s3_write(const ck_store_t *s, const char *rel, const void *data, size_t n,
                    ck_error_t *err) {
  char key[4096];
  s3_key(s, rel, key, sizeof key);
  return ck_s3_put(s->s3, key, data, n, 0, err);
}

static int s3_create(const ck_store_t *s, const char *rel, const void *data, size_t n,
                     ck_error_t *err) {
  char key[4096];
  s3_key(s, rel, key, sizeof key);
  return ck_s3_put(s->s3, key, data, n, CK_S3_IF_NONE_MATCH, err);
}

static int s3_read(const ck_store_t *s, const char *rel, ck_buf_t *out, ck_error_t *err) {
  char key[4096];
  s3_key(s, rel, key, sizeof key);
  ck_error_t e;
  ck_error_clear(&e);
  int rc = ck_s3_get(s->s3, key, out, &e);
  if (rc == CK_ENOTFOUND) return rc;
  if (rc) *err = e;
  return rc;
}

static bool s3_exists(const ck_store_t *s, const char *rel) {
  char key[4096];
  s3_key(s, rel, key, sizeof key);
  ck_error_t e;
  ck_error_clear(&e);
  return ck_s3_head(s->s3, key, NULL, &e) == 0;
}

static int s3_remove(const ck_store_t *s, const char *rel) {
  char key[4096];
  s3_key(s, rel, key, sizeof key);
  ck_error_t e;
  ck_error_clear(&e);
  return ck_s3_delete(s->s3, key, &e) ? CK_EIO : 0;
}

typedef struct s3_names {
  size_t skip;          /* the listed prefix's length */
  char last[1024];      /* the previous name: keys come sorted, so a directory's keys are
                           consecutive and it is reported once */
  ck_store_name_fn fn;
  void *ctx;
} s3_names_t;

static int s3_name(void *ctx, const char *key, int64_t size) {
  (void)size;
  s3_names_t *x = ctx;
  const char *name = key + x->skip;
  size_t len = strcspn(name, "/");
  if (!len || len >= sizeof x->last) return 0;
  if (strlen(x->last) == len && !strncmp(x->last, name, len)) return 0;
  memcpy(x->last, name, len);
  x->last[len] = 0;
  return x->fn(x->ctx, x->last);
}

static int s3_list(const ck_store_t *s, const char *reldir, ck_store_name_fn fn, void *ctx) {
  char prefix[4096];
  if (*reldir) snprintf(prefix, sizeof prefix, "%s%s/", s->key_prefix, reldir);
  else snprintf(prefix, sizeof prefix, "%s", s->key_prefix);
  s3_names_t x = {.skip = strlen(prefix), .fn = fn, .ctx = ctx};
  ck_error_t e;
  ck_error_clear(&e);
  int rc = ck_s3_list(s->s3, prefix, s3_name, &x, &e);
  if (rc < 0) {
    CK_LOG_WARN("checkpoint", "%s", e.message);
    count_list_failure(s);
    return rc;
  }
  return rc;
}

/* A store made as {root} (a read-only view of a local directory, as the state tools make
 * one) has no table: the filesystem's. */
#define OPS(s) ((s)->ops ? (s)->ops : &fs_ops)

static const ck_store_ops_t s3_ops = {
    .write = s3_write, .create = s3_create, .read = s3_read, .exists = s3_exists, .remove = s3_remove, .list = s3_list};

bool ck_store_is_remote(const char *dir) { return ck_s3_is_url(dir); }

static int open_s3(const char *url, ck_store_t *store, ck_error_t *err) {
  char bucket[64], prefix[2048];
  int rc = ck_s3_parse_url(url, bucket, sizeof bucket, prefix, sizeof prefix, err);
  if (rc) return rc;
  if ((rc = ck_s3_open(NULL, bucket, &store->s3, err))) return rc;
  size_t n = strlen(prefix) + 8;
  store->key_prefix = ck_malloc(n);
  snprintf(store->key_prefix, n, "%s%sv1/", prefix, *prefix ? "/" : "");
  size_t rn = strlen(bucket) + strlen(prefix) + 16;
  store->root = ck_malloc(rn);
  snprintf(store->root, rn, "s3://%s/%s%sv1", bucket, prefix, *prefix ? "/" : "");
  store->ops = &s3_ops;
  /* the store must answer before a job relies on it: list its markers once */
  char key[2100];
  snprintf(key, sizeof key, "%s_meta/", store->key_prefix);
  ck_error_t e;
  ck_error_clear(&e);
  rc = ck_s3_list(store->s3, key, NULL, NULL, &e);
  if (rc) {
    *err = e;
    ck_error_detail(err, "the checkpoint store is %s", url);
    ck_store_close(store);
  }
  return rc;
}

int ck_store_dir_names(const char *dir, ck_store_name_fn fn, void *ctx, ck_error_t *err) {
  if (!ck_store_is_remote(dir)) { /* fs_list over a view of dir itself */
    struct ck_store_health health = {0};
    ck_store_t view = {.root = (char *)dir, .health = &health};
    int rc = fs_list(&view, "", fn, ctx);
    if (!rc && atomic_load(&health.list_failures))
      rc = ck_error_set(err, CK_EIO, "could not list '%s'", dir);
    return rc;
  }
  char bucket[64], prefix[2048];
  int rc = ck_s3_parse_url(dir, bucket, sizeof bucket, prefix, sizeof prefix, err);
  if (rc) return rc;
  ck_s3_t *s3 = NULL;
  if ((rc = ck_s3_open(NULL, bucket, &s3, err))) return rc;
  char key[2100];
  snprintf(key, sizeof key, "%s%s", prefix, *prefix ? "/" : "");
  s3_names_t x = {.skip = strlen(key), .fn = fn, .ctx = ctx};
  rc = ck_s3_list(s3, key, s3_name, &x, err);
  ck_s3_close(s3);
  return rc;
}

typedef struct fetch {
  ck_s3_t *s3;
  size_t skip;        /* the prefix's length: keys less it are paths under the copy */
  const char *local;
  ck_error_t *err;
  int files;
} fetch_t;

static int fetch_key(void *ctx, const char *key, int64_t size) {
  (void)size;
  fetch_t *f = ctx;
  const char *rel = key + f->skip;
  /* only names a directory can hold: no empty, "." or ".." components */
  for (const char *p = rel;;) {
    size_t l = strcspn(p, "/");
    if (!l || (l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.')) return 0;
    if (!p[l]) break;
    p += l + 1;
  }
  char path[4400];
  snprintf(path, sizeof path, "%s/%s", f->local, rel);
  char *slash = strrchr(path, '/');
  *slash = 0;
  if (ck_store_mkdirs(path))
    return ck_error_set(f->err, CK_EIO, "could not create '%s': %s", path, strerror(errno));
  *slash = '/';
  ck_buf_t b;
  ck_buf_init(&b);
  int rc = ck_s3_get(f->s3, key, &b, f->err);
  if (rc == CK_ENOTFOUND) rc = 0, ck_error_clear(f->err); /* pruned meanwhile: as a listing after */
  else if (!rc) rc = put_file(path, b.data ? (const char *)b.data : "", b.len, 0644, false, f->err);
  ck_buf_fini(&b);
  if (!rc) f->files++;
  return rc;
}

int ck_store_fetch(const char *url, const char *local, ck_error_t *err) {
  char bucket[64], prefix[2048];
  int rc = ck_s3_parse_url(url, bucket, sizeof bucket, prefix, sizeof prefix, err);
  if (rc) return rc;
  fetch_t f = {.local = local, .err = err};
  if ((rc = ck_s3_open(NULL, bucket, &f.s3, err))) return rc;
  char key[2100];
  snprintf(key, sizeof key, "%s%s", prefix, *prefix ? "/" : "");
  f.skip = strlen(key);
  rc = ck_s3_list(f.s3, key, fetch_key, &f, err);
  if (rc) ck_error_detail(err, "while copying %s to '%s'", url, local);
  else if (!f.files)
    rc = ck_error_set(err, CK_ENOTFOUND, "could not read %s: it holds nothing", url);
  ck_s3_close(f.s3);
  return rc;
}

int ck_store_open(const char *dir, ck_store_t *store, ck_error_t *err) {
  memset(store, 0, sizeof *store);
  store->health = ck_calloc(1, sizeof *store->health);
  if (ck_store_is_remote(dir)) return open_s3(dir, store, err);
  size_t n = strlen(dir) + 8;
  store->root = ck_malloc(n);
  snprintf(store->root, n, "%s/v1", dir);
  store->ops = &fs_ops;
  char *meta = ck_malloc(n + 8);
  snprintf(meta, n + 8, "%s/_meta", store->root);
  int rc = ck_store_mkdirs(meta);
  ck_free(meta);
  if (rc) {
    ck_error_set(err, CK_EIO, "could not create checkpoint directory '%s': %s", store->root,
                 strerror(errno));
    ck_store_close(store);
    return CK_EIO;
  }
  return 0;
}

int ck_store_listings_ok(const ck_store_t *store, ck_error_t *err) {
  int n = store->health ? atomic_load(&store->health->list_failures) : 0;
  if (!n) return 0;
  int rc = ck_error_set(err, CK_EIO, "could not list the checkpoint store %s (%d listing%s "
                        "failed)", store->root, n, n == 1 ? "" : "s");
  ck_error_detail(err, "what it holds decides the next checkpoint id and the restore point, so "
                       "nothing is decided on a partial listing");
  return rc;
}

void ck_store_close(ck_store_t *store) {
  ck_free(store->health);
  store->health = NULL;
  ck_free(store->root);
  ck_free(store->key_prefix);
  ck_s3_close(store->s3);
  store->root = NULL;
  store->key_prefix = NULL;
  store->s3 = NULL;
}

/* ---------------------------------------------------------------- through the table */

int ck_store_write(const ck_store_t *store, const char *relpath, const void *data, size_t n,
                   ck_error_t *err) {
  return OPS(store)->write(store, relpath, data, n, err);
}

int ck_store_read(const ck_store_t *store, const char *relpath, ck_buf_t *out, ck_error_t *err) {
  return OPS(store)->read(store, relpath, out, err);
}

bool ck_store_exists(const ck_store_t *store, const char *relpath) {
  return OPS(store)->exists(store, relpath);
}

int ck_store_remove(const ck_store_t *store, const char *relpath) {
  return OPS(store)->remove(store, relpath);
}

int ck_store_mark(const ck_store_t *store, const char *kind, int64_t id, ck_error_t *err) {
  char rel[128];
  snprintf(rel, sizeof rel, "_meta/%s-%lld", kind, (long long)id);
  ck_error_t e;
  ck_error_clear(&e);
  int rc = OPS(store)->create(store, rel, "", 0, &e);
  if (rc == CK_EEXISTS) {
    rc = ck_error_set(err, CK_EEXISTS, "could not mark checkpoint %lld %s in %s: it is marked "
                      "already", (long long)id, kind, store->root);
    ck_error_detail(err, "another writer took checkpoint id %lld in this store (a second job, or "
                    "a coordinator that was replaced and kept running); its marker stays as it "
                    "was", (long long)id);
    ck_error_hint(err, "give each job a checkpoint directory of its own");
  } else if (rc) {
    *err = e;
  }
  if (!rc) CK_TRACE("marker", "dir=%s kind=%s ckpt=%lld", store->root, kind, (long long)id);
  return rc;
}

bool ck_store_marked(const ck_store_t *store, const char *kind, int64_t id) {
  char rel[128];
  snprintf(rel, sizeof rel, "_meta/%s-%lld", kind, (long long)id);
  return ck_store_exists(store, rel);
}

typedef struct scan {
  const char *prefix, *suffix;
  int64_t best;
} scan_t;

static int scan_name(void *ctx, const char *n) {
  scan_t *x = ctx;
  size_t pl = strlen(x->prefix), sl = strlen(x->suffix), len = strlen(n);
  if (len <= pl + sl || strncmp(n, x->prefix, pl) != 0) return 0;
  if (strcmp(n + len - sl, x->suffix) != 0 && !(strstr(n, ".tmp-") && strstr(n, x->suffix)))
    return 0;
  char *end;
  long long v = strtoll(n + pl, &end, 10);
  if (end != n + pl && v > x->best) x->best = v;
  return 0;
}

/* Largest N among names "<prefix>N<suffix>" in reldir. */
static int64_t scan_ids(const ck_store_t *store, const char *reldir, const char *prefix,
                        const char *suffix) {
  scan_t x = {.prefix = prefix, .suffix = suffix};
  OPS(store)->list(store, reldir, scan_name, &x);
  return x.best;
}

/* The id of a marker name "<kind>-<N>" (a leftover "<kind>-<N>.tmp-<pid>" too, when tmp);
 * 0 when the name is not one. */
static int64_t marker_id(const char *name, const char *kind, bool tmp) {
  size_t kl = strlen(kind);
  if (strncmp(name, kind, kl) != 0 || name[kl] != '-') return 0;
  const char *digits = name + kl + 1;
  char *end;
  errno = 0;
  long long v = strtoll(digits, &end, 10);
  if (end == digits || errno || v <= 0 || digits[0] < '0' || digits[0] > '9') return 0;
  if (*end && !(tmp && strncmp(end, ".tmp-", 5) == 0)) return 0;
  return v;
}

static int64_t read_floor(const ck_store_t *store) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_error_t ignored;
  ck_error_clear(&ignored);
  int64_t v = 0;
  if (ck_store_read(store, "_meta/id-floor", &b, &ignored) == 0 && b.data)
    v = strtoll(b.data, NULL, 10);
  ck_buf_fini(&b);
  return v > 0 ? v : 0;
}

typedef struct task_scan {
  const ck_store_t *store;
  int64_t best;
} task_scan_t;

static int task_dir(void *ctx, const char *name) {
  task_scan_t *x = ctx;
  if (name[0] < '0' || name[0] > '9') return 0;
  int64_t s = scan_ids(x->store, name, "checkpoint-", ".snap");
  if (s > x->best) x->best = s;
  return 0;
}

int64_t ck_store_max_id(const ck_store_t *store) {
  int64_t best = read_floor(store);
  int64_t c = scan_ids(store, "_meta", "completed-", "");
  if (c > best) best = c;
  c = scan_ids(store, "_meta", "confirmed-", "");
  if (c > best) best = c;
  task_scan_t x = {.store = store, .best = best};
  OPS(store)->list(store, "", task_dir, &x);
  return x.best;
}

typedef struct ids {
  const char *kind;
  bool tmp;
  int64_t above, below, best;
  int64_t *ids;
  int n, cap;
  const ck_store_t *store; /* prune: remove what is below `below` */
} ids_t;

static int latest_name(void *ctx, const char *name) {
  ids_t *x = ctx;
  int64_t id = marker_id(name, x->kind, false);
  if (id > x->best) x->best = id;
  return 0;
}

int64_t ck_store_latest(const ck_store_t *store, const char *kind) {
  ids_t x = {.kind = kind};
  OPS(store)->list(store, "_meta", latest_name, &x);
  return x.best;
}

static int cmp_desc(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

static int completed_name(void *ctx, const char *name) {
  ids_t *x = ctx;
  int64_t id = marker_id(name, "completed", false);
  if (id <= 0 || id <= x->above || (x->below && id >= x->below)) return 0;
  if (x->n == x->cap) {
    x->cap = x->cap ? x->cap * 2 : 64;
    x->ids = ck_realloc(x->ids, sizeof *x->ids * (size_t)x->cap);
  }
  x->ids[x->n++] = id;
  return 0;
}

int ck_store_completed_ids(const ck_store_t *store, int64_t above, int64_t below, int64_t **ids) {
  ids_t x = {.above = above, .below = below};
  OPS(store)->list(store, "_meta", completed_name, &x);
  if (x.n > 1) qsort(x.ids, (size_t)x.n, sizeof *x.ids, cmp_desc);
  *ids = x.ids;
  return x.n;
}

typedef struct prune {
  const ck_store_t *store;
  const char *dir;
  int64_t keep_from;
  char **names; /* collected first: a store is not changed while it is listed */
  int n, cap;
} prune_t;

static int prune_name(void *ctx, const char *name) {
  prune_t *x = ctx;
  int64_t id = 0;
  if (!strcmp(x->dir, "_meta")) {
    id = marker_id(name, "completed", true);
    if (!id) id = marker_id(name, "confirmed", true);
  } else if (!strncmp(name, "checkpoint-", 11)) {
    id = strtoll(name + 11, NULL, 10);
  }
  if (id <= 0 || id >= x->keep_from) return 0;
  if (x->n == x->cap) {
    x->cap = x->cap ? x->cap * 2 : 16;
    x->names = ck_realloc(x->names, sizeof *x->names * (size_t)x->cap);
  }
  x->names[x->n++] = ck_strdup(name);
  return 0;
}

static void prune_dir(const ck_store_t *store, const char *dir, int64_t keep_from) {
  prune_t x = {.store = store, .dir = dir, .keep_from = keep_from};
  OPS(store)->list(store, dir, prune_name, &x);
  char rel[512];
  for (int i = 0; i < x.n; i++) {
    snprintf(rel, sizeof rel, "%s/%s", dir, x.names[i]);
    ck_store_remove(store, rel);
    ck_free(x.names[i]);
  }
  ck_free(x.names);
}

int ck_store_prune(const ck_store_t *store, int64_t keep_from, int64_t floor, int ntasks,
                   ck_error_t *err) {
  /* the floor first: once it is durable, no removal below can lower the highest id on record */
  if (floor > read_floor(store)) {
    char text[32];
    int len = snprintf(text, sizeof text, "%lld\n", (long long)floor);
    int rc = ck_store_write(store, "_meta/id-floor", text, (size_t)len, err);
    if (rc) return rc;
  }
  CK_TRACE("pruned", "dir=%s below=%lld floor=%lld", store->root, (long long)keep_from, (long long)floor);
  char dir[32];
  for (int t = 0; t < ntasks; t++) {
    snprintf(dir, sizeof dir, "%d", t);
    prune_dir(store, dir, keep_from);
  }
  /* markers go with their snapshots (a marker without them restores nothing); the id floor
   * keeps the record of the ids they used */
  prune_dir(store, "_meta", keep_from);
  return 0;
}

void ck_store_path(const ck_store_t *store, const char *relpath, char *out, size_t n) {
  full(store, relpath, out, n);
}

void ck_snap_path(int task, int64_t id, char *out, size_t n) {
  snprintf(out, n, "%d/checkpoint-%lld.snap", task, (long long)id);
}

/* ---------------------------------------------------------------- snapshot files (Arrow) */

enum { COL_OP, COL_GROUP, COL_SLOT, COL_KEY, COL_VALUE, NCOLS };
static const ck_arrow_field_t SNAP_FIELDS[NCOLS] = {
    {"op_id", CK_ARROW_UINT32}, {"key_group", CK_ARROW_UINT16}, {"slot", CK_ARROW_DICT_UTF8},
    {"user_key", CK_ARROW_BINARY}, {"value", CK_ARROW_BINARY},
};
/* The slot column's dictionary: every slot a component's rows name (index: the row's value). */
static const char *const SLOTS[] = {"<raw>", "win", "group"};
enum { NSLOTS = sizeof SLOTS / sizeof SLOTS[0] };
enum { META_VERSION, META_ID, META_FP, META_TASK, META_OPS, META_VERSIONS, META_CRC, NMETA };
#define BATCH_BYTES (1u << 20) /* a record batch is cut after this many body bytes */

static const char *const KIND_NAMES[] = {"source", "operator", "sink"};

typedef struct enc {
  ck_arrow_batch_t batch;
  ck_buf_t *body;
  uint32_t node;
  const uint8_t *base; /* the section's encoding */
  size_t used;         /* bytes of it the rows so far hold */
  const char *slot;    /* the last slot name seen, and its index in SLOTS */
  int slot_index;
  uint32_t crc;        /* the CRC32C of the stream up to body[crc_done]: each batch's */
  size_t crc_done;     /* bytes are summed as they are written, while they are in the cache */
} enc_t;

static void enc_crc(enc_t *x) {
  x->crc = ck_crc32c(x->crc, x->body->data + x->crc_done, x->body->len - x->crc_done);
  x->crc_done = x->body->len;
}

static void enc_flush(enc_t *x) {
  if (!x->batch.nrows) return;
  ck_arrow_write_batch(x->body, &x->batch);
  ck_arrow_batch_reset(&x->batch);
  enc_crc(x);
}

/* One row; its value in one part (v) or two (v then w). */
static void enc_row(enc_t *x, int group, int slot, const void *key, size_t klen, const void *v,
                    size_t vlen, const void *w, size_t wlen) {
  ck_arrow_put_u32(&x->batch, COL_OP, x->node);
  ck_arrow_put_u16(&x->batch, COL_GROUP, (uint16_t)group);
  ck_arrow_put_dict(&x->batch, COL_SLOT, (uint8_t)slot);
  ck_arrow_put_bytes(&x->batch, COL_KEY, key, klen);
  ck_arrow_put_bytes2(&x->batch, COL_VALUE, v, vlen, w, wlen);
  ck_arrow_batch_row(&x->batch);
  if ((x->batch.nrows & 1023) == 0 && ck_arrow_batch_bytes(&x->batch) >= BATCH_BYTES)
    enc_flush(x);
}

/* A run of records (ck_snap_run_t): each column filled in one loop of its own, straight into
 * its buffer. */
static int enc_run(enc_t *x, const ck_snap_entry_t *e, int slot, ck_error_t *err) {
  const ck_snap_run_t *run = e->run;
  int64_t n = run->n;
  size_t rl = run->rec_len, kf = e->key_from, kt = e->key_to;
  if (n <= 0 || e->group_len != 4 || kf < 4 || kt < kf || kt > rl ||
      e->value_len != (size_t)n * rl || run->key_off[0] != 0)
    return ck_error_set(err, CK_EINTERNAL, "a run of state entries is not the next part of its "
                        "encoding");
  const uint8_t *rec = e->value;
  for (int64_t i = 0; i < n; i++) /* the key groups fit the column (as enc_emit checks) */
    if (ck_get_le32(rec + (size_t)i * rl) > CK_SNAP_RAW)
      return ck_error_set(err, CK_EINTERNAL, "a state entry's key group is out of range");
  ck_arrow_batch_t *b = &x->batch;
  size_t nn = (size_t)n, vl = rl - 4 - (kt - kf), kn = run->key_off[n];
  ck_buf_t *op = &b->cols[COL_OP].data, *kg = &b->cols[COL_GROUP].data,
           *sl = &b->cols[COL_SLOT].data, *kd = &b->cols[COL_KEY].data,
           *ko = &b->cols[COL_KEY].offsets, *vd = &b->cols[COL_VALUE].data,
           *vo = &b->cols[COL_VALUE].offsets;
  ck_buf_reserve(op, 4 * nn);
  ck_buf_reserve(kg, 2 * nn);
  ck_buf_reserve(sl, nn);
  ck_buf_reserve(kd, kn);
  ck_buf_reserve(ko, 4 * nn);
  ck_buf_reserve(vd, vl * nn);
  ck_buf_reserve(vo, 4 * nn);
  uint8_t *po = (uint8_t *)op->data + op->len, *pg = (uint8_t *)kg->data + kg->len;
  for (size_t i = 0; i < nn; i++) memcpy(po + 4 * i, &x->node, 4);
  for (size_t i = 0; i < nn; i++) memcpy(pg + 2 * i, rec + i * rl, 2); /* u32 < 2^16: its low half */
  memset(sl->data + sl->len, slot, nn);
  memcpy(kd->data + kd->len, run->keys, kn);
  int32_t kbase = (int32_t)kd->len, vbase = (int32_t)vd->len;
  uint8_t *pko = (uint8_t *)ko->data + ko->len, *pvo = (uint8_t *)vo->data + vo->len;
  for (size_t i = 0; i < nn; i++) {
    int32_t k = kbase + (int32_t)run->key_off[i + 1], v = vbase + (int32_t)(vl * (i + 1));
    memcpy(pko + 4 * i, &k, 4);
    memcpy(pvo + 4 * i, &v, 4);
  }
  uint8_t *pv = (uint8_t *)vd->data + vd->len;
  size_t a = kf - 4, c = rl - kt;
  for (size_t i = 0; i < nn; i++, pv += vl, rec += rl) {
    ck_arrow_copy_short(pv, rec + 4, a);
    ck_arrow_copy_short(pv + a, rec + kt, c);
  }
  op->len += 4 * nn, kg->len += 2 * nn, sl->len += nn, kd->len += kn;
  ko->len += 4 * nn, vd->len += vl * nn, vo->len += 4 * nn;
  b->nrows += n;
  x->used += e->value_len;
  if (ck_arrow_batch_bytes(b) >= BATCH_BYTES) enc_flush(x);
  return 0;
}

static int enc_emit(void *ctx, const ck_snap_entry_t *e, ck_error_t *err) {
  enc_t *x = ctx;
  if ((const uint8_t *)e->value != x->base + x->used || e->key_group < 0 ||
      e->key_group > CK_SNAP_RAW || e->group_len > e->value_len ||
      (e->key_to && (e->key_from < e->group_len || e->key_to < e->key_from ||
                     e->key_to > e->value_len)))
    return ck_error_set(err, CK_EINTERNAL, "a state entry is not the next part of its encoding");
  if (e->slot != x->slot) {
    int i = 0;
    while (i < NSLOTS && strcmp(SLOTS[i], e->slot) != 0) i++;
    if (i == NSLOTS)
      return ck_error_set(err, CK_EINTERNAL, "a state entry names slot '%s', which the "
                          "snapshot layout does not have", e->slot);
    x->slot = e->slot, x->slot_index = i;
  }
  if (e->run) return enc_run(x, e, x->slot_index, err);
  const uint8_t *p[2];
  size_t n[2] = {0, 0};
  int parts = ck_snap_entry_row(e, p, n);
  enc_row(x, e->key_group, x->slot_index, e->key, e->key_len, p[0], n[0],
          parts > 1 ? p[1] : NULL, n[1]);
  x->used += e->value_len;
  return 0;
}

static void put_hex8(char *p, uint32_t v) {
  static const char hex[] = "0123456789abcdef";
  for (int i = 7; i >= 0; i--, v >>= 4) p[i] = hex[v & 15];
}

/* The CRC32C of the stream with the 8 bytes at crc_at read as '0'. */
static uint32_t stream_crc(const char *p, size_t len, size_t crc_at) {
  uint32_t crc = ck_crc32c(0, p, crc_at);
  crc = ck_crc32c(crc, "00000000", 8);
  return ck_crc32c(crc, p + crc_at + 8, len - crc_at - 8);
}

/* The encoding version of a section: what its splitter says (emit NULL: the header only), or
 * its first byte; -1 when it has none (empty). */
static int section_version(const ck_snap_section_t *sec) {
  if (sec->split) {
    ck_error_t err;
    ck_error_clear(&err);
    int v = sec->split(sec->data, sec->len, false, NULL, NULL, &err);
    if (v >= 0) return v;
  }
  return sec->len ? ((const uint8_t *)sec->data)[0] : -1;
}

void ck_snap_encode(int64_t id, uint64_t fingerprint, int task, const ck_snap_section_t *sections,
                    int nsections, ck_buf_t *out) {
  /* the header (schema metadata) first: which nodes, their kinds and encoding versions */
  ck_buf_t ops, versions;
  ck_buf_init(&ops);
  ck_buf_init(&versions);
  ck_buf_putc(&ops, '[');
  ck_buf_putc(&versions, '{');
  int nver = 0;
  size_t total = 0;
  for (int i = 0; i < nsections; i++) {
    const ck_snap_section_t *sec = &sections[i];
    char fallback[32];
    snprintf(fallback, sizeof fallback, "node-%u", sec->node);
    const char *name = sec->name ? sec->name : fallback;
    int version = section_version(sec);
    total += sec->len;
    ck_buf_printf(&ops, "%s{\"op_id\":%u,\"kind\":\"%s\",\"name\":", i ? "," : "", sec->node,
                  KIND_NAMES[sec->kind <= CK_SNAP_SINK ? sec->kind : 1]);
    ck_buf_put_json_str(&ops, name, strlen(name));
    if (version >= 0) {
      ck_buf_printf(&ops, ",\"version\":%d}", version);
      ck_buf_printf(&versions, "%s", nver++ ? "," : "");
      ck_buf_put_json_str(&versions, name, strlen(name));
      ck_buf_printf(&versions, ":%d", version);
    } else {
      ck_buf_puts(&ops, ",\"version\":null}");
    }
  }
  ck_buf_putc(&ops, ']');
  ck_buf_putc(&versions, '}');
  char sid[24], sfp[24], stask[16];
  snprintf(sid, sizeof sid, "%lld", (long long)id);
  snprintf(sfp, sizeof sfp, "%016llx", (unsigned long long)fingerprint);
  snprintf(stask, sizeof stask, "%d", task);
  ck_arrow_kv_t meta[NMETA] = {
      [META_VERSION] = {"clink.format_version", CK_SNAP_FORMAT_VERSION},
      [META_ID] = {"clink.checkpoint_id", sid},
      [META_FP] = {"clink.job_fingerprint", sfp},
      [META_TASK] = {"clink.task_index", stask},
      [META_OPS] = {"clink.operators", ops.data},
      [META_VERSIONS] = {"clink.state_versions", versions.data},
      [META_CRC] = {"clink.crc32c", "00000000"},
  };
  size_t start = out->len, at[NMETA];
  ck_buf_reserve(out, total + total / 4 + 65536); /* rows add about a sixth (benchmarks.md) */
  ck_arrow_write_schema(out, SNAP_FIELDS, NCOLS, meta, NMETA, at);
  ck_arrow_write_dictionary(out, COL_SLOT, SLOTS, NSLOTS);
  ck_buf_fini(&ops);
  ck_buf_fini(&versions);
  /* the rows; the checksum field is "00000000" while the CRC is summed (as stream_crc reads it) */
  enc_t x = {.body = out, .crc_done = start};
  enc_crc(&x);
  ck_arrow_batch_init(&x.batch, SNAP_FIELDS, NCOLS);
  for (int i = 0; i < nsections; i++) {
    const ck_snap_section_t *sec = &sections[i];
    x.node = sec->node;
    x.base = sec->data;
    x.used = 0;
    bool whole = !sec->split;
    if (sec->split) { /* rows of this section alone, so a failed split can be taken back */
      enc_flush(&x);
      size_t mark = out->len;
      uint32_t crc = x.crc;
      ck_error_t err;
      ck_error_clear(&err);
      int v = sec->split(sec->data, sec->len, false, enc_emit, &x, &err);
      if (v < 0 || x.used != sec->len) { /* not expected: keep the encoding whole */
        out->len = mark;
        x.crc = crc, x.crc_done = mark;
        ck_arrow_batch_reset(&x.batch);
        whole = true;
      }
    }
    if (whole) enc_row(&x, CK_SNAP_RAW, 0, "", 0, sec->len ? sec->data : "", sec->len, NULL, 0);
  }
  enc_flush(&x);
  ck_arrow_batch_fini(&x.batch);
  ck_arrow_write_eos(out);
  enc_crc(&x);
  put_hex8(out->data + at[META_CRC], x.crc);
}

/* The header facts of a snapshot stream whose schema r holds; CK_ESTATE naming `what` (the
 * file) when they are not this layout's. */
static int snap_header(const ck_arrow_reader_t *r, const char *what, int64_t *id, int *task,
                       uint64_t *fp, size_t *crc_at, uint32_t *crc, ck_error_t *err) {
  const char *ver = ck_arrow_reader_meta(r, "clink.format_version");
  if (!ver)
    return ck_error_set(err, CK_ESTATE, "%s is an Arrow stream but not a clink snapshot (it has "
                        "no clink.format_version)", what);
  char *end;
  long major = strtol(ver, &end, 10);
  if (end == ver || major != CK_SNAP_FORMAT_MAJOR)
    return ck_error_set(err, CK_ESTATE, "%s has snapshot format version %s; this clink reads "
                        "major version %d", what, ver, CK_SNAP_FORMAT_MAJOR);
  const char *sid = ck_arrow_reader_meta(r, "clink.checkpoint_id");
  const char *sfp = ck_arrow_reader_meta(r, "clink.job_fingerprint");
  const char *st = ck_arrow_reader_meta(r, "clink.task_index");
  const char *sc = NULL;
  int ci = -1;
  for (int i = 0; i < r->nmeta; i++)
    if (strcmp(r->meta[i].key, "clink.crc32c") == 0) sc = r->meta[i].value, ci = i;
  if (!sid || !sfp || !st || !sc || strlen(sc) != 8)
    return ck_error_set(err, CK_ESTATE, "%s is damaged (its header lacks the checkpoint id, job, "
                        "task or checksum)", what);
  for (int c = 0; c < NCOLS; c++)
    if (ck_arrow_reader_field(r, SNAP_FIELDS[c].name) != c ||
        r->fields[c].type != SNAP_FIELDS[c].type)
      return ck_error_set(err, CK_ESTATE, "%s is damaged (its columns are not op_id, key_group, "
                          "slot, user_key, value)", what);
  /* the slot dictionary is read with the first batch; it must be this layout's */
  if (id) *id = strtoll(sid, NULL, 10);
  if (task) *task = (int)strtol(st, NULL, 10);
  if (fp) *fp = strtoull(sfp, NULL, 16);
  *crc_at = r->meta_value_at[ci];
  *crc = (uint32_t)strtoul(sc, NULL, 16);
  return 0;
}

static int old_format(const char *what, ck_error_t *err) {
  int rc = ck_error_set(err, CK_ESTATE, "%s is a snapshot in the version-1 binary format of an "
                        "older clink, which this clink does not read", what);
  ck_error_hint(err, "snapshots are Arrow IPC streams since format version 2; run with --fresh "
                     "to start over");
  return rc;
}

/* Where a snapshot check reads from: a file (read in chunks, never held whole) or bytes in
 * memory (an object fetched from a remote store). */
typedef struct snap_src {
  int fd;             /* -1: mem */
  const uint8_t *mem;
  size_t len;
} snap_src_t;

static ssize_t src_read(const snap_src_t *src, void *buf, size_t n, size_t off) {
  if (src->fd >= 0) return pread(src->fd, buf, n, (off_t)off);
  if (off >= src->len) return 0;
  if (n > src->len - off) n = src->len - off;
  memcpy(buf, src->mem + off, n);
  return (ssize_t)n;
}

static int check_src(const snap_src_t *src, const char *what, int64_t *id, int *task,
                     uint64_t *fingerprint, ck_error_t *err) {
  int rc = 0;
  char *head = NULL;
  size_t len = src->len;
  unsigned char pre[8];
  if (len < 16 || src_read(src, pre, 8, 0) != 8) {
    rc = ck_error_set(err, CK_ESTATE, "%s is damaged (%zu bytes: too short for a snapshot)", what,
                      len);
    goto done;
  }
  if (memcmp(pre, OLD_SNAP_MAGIC, 8) == 0) {
    rc = old_format(what, err);
    goto done;
  }
  uint32_t cont, msize;
  memcpy(&cont, pre, 4);
  memcpy(&msize, pre + 4, 4);
  if (cont != 0xFFFFFFFFu || msize > len - 8 || msize > (64u << 20)) {
    rc = ck_error_set(err, CK_ESTATE, "%s is damaged (not an Arrow IPC stream)", what);
    goto done;
  }
  size_t hlen = 8 + (size_t)msize;
  head = ck_malloc(hlen);
  if (src_read(src, head, hlen, 0) != (ssize_t)hlen) {
    rc = ck_error_set(err, CK_ESTATE, "could not read %s: %s", what, strerror(errno));
    goto done;
  }
  ck_arrow_reader_t r;
  ck_error_t perr;
  ck_error_clear(&perr);
  if (ck_arrow_reader_open(&r, head, hlen, &perr)) {
    rc = ck_error_set(err, CK_ESTATE, "%s is damaged (%s)", what, perr.message);
    goto done;
  }
  size_t crc_at;
  uint32_t want;
  rc = snap_header(&r, what, id, task, fingerprint, &crc_at, &want, err);
  if (rc) goto done;
  /* the checksum, in chunks: the 8 bytes of its own value count as '0' */
  uint32_t crc = 0;
  char chunk[65536];
  for (size_t off = 0; off < len;) {
    size_t n = len - off < sizeof chunk ? len - off : sizeof chunk;
    ssize_t got = src_read(src, chunk, n, off);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      rc = ck_error_set(err, CK_ESTATE, "could not read %s: %s", what,
                        got < 0 ? strerror(errno) : "it got shorter while being read");
      goto done;
    }
    if (off < crc_at + 8 && off + (size_t)got > crc_at) { /* the chunk holds (part of) it */
      size_t from = crc_at > off ? crc_at - off : 0;
      size_t to = crc_at + 8 - off < (size_t)got ? crc_at + 8 - off : (size_t)got;
      memset(chunk + from, '0', to - from);
    }
    crc = ck_crc32c(crc, chunk, (size_t)got);
    off += (size_t)got;
  }
  if (crc != want) rc = ck_error_set(err, CK_ESTATE, "%s is damaged (checksum mismatch)", what);
done:
  ck_free(head);
  return rc;
}

static int check_path(const char *path, const char *what, int64_t *id, int *task,
                      uint64_t *fingerprint, ck_error_t *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT) return ck_error_set(err, CK_ESTATE, "%s is missing", what);
    return ck_error_set(err, CK_ESTATE, "could not open %s: %s", what, strerror(e));
  }
  struct stat st;
  int rc;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    rc = ck_error_set(err, CK_ESTATE, "%s is not a regular file", what);
  } else {
    snap_src_t src = {.fd = fd, .len = (size_t)st.st_size};
    rc = check_src(&src, what, id, task, fingerprint, err);
  }
  close(fd);
  return rc;
}

/* A snapshot of a remote store: fetched whole, then checked in memory. */
static int check_remote(const ck_store_t *store, const char *rel, const char *what, int64_t *id,
                        int *task, uint64_t *fingerprint, ck_error_t *err) {
  ck_buf_t b;
  ck_buf_init(&b);
  int rc = ck_store_read(store, rel, &b, err);
  if (rc == CK_ENOTFOUND) rc = ck_error_set(err, CK_ESTATE, "%s is missing", what);
  else if (rc) ck_error_detail(err, "while reading %s", what);
  if (!rc) {
    snap_src_t src = {.fd = -1, .mem = (const uint8_t *)b.data, .len = b.len};
    rc = check_src(&src, what, id, task, fingerprint, err);
  }
  ck_buf_fini(&b);
  return rc;
}

int ck_snap_check_file(const char *path, int64_t *id, int *task, uint64_t *fingerprint,
                       ck_error_t *err) {
  char what[4200];
  snprintf(what, sizeof what, "snapshot file '%s'", path);
  return check_path(path, what, id, task, fingerprint, err);
}

int ck_snap_check(const ck_store_t *store, int task, int64_t id, uint64_t fingerprint,
                  ck_error_t *err) {
  char rel[128], path[4200], what[4300];
  ck_snap_path(task, id, rel, sizeof rel);
  full(store, rel, path, sizeof path);
  snprintf(what, sizeof what, "snapshot file '%s' of subtask %d", path, task);
  int64_t sid;
  int t;
  uint64_t fp;
  int rc = store->s3 ? check_remote(store, rel, what, &sid, &t, &fp, err)
                     : check_path(path, what, &sid, &t, &fp, err);
  if (rc) return rc;
  if (sid != id || t != task || fp != fingerprint)
    return ck_error_set(err, CK_ESTATE, "snapshot file '%s' belongs to another checkpoint, "
                        "subtask or job (it names checkpoint %lld, subtask %d)", path,
                        (long long)sid, t);
  return 0;
}

/* The kind of node op_id in the clink.operators JSON (as ck_snap_encode wrote it). */
static uint8_t op_kind(const char *ops, uint32_t node) {
  char want[40];
  snprintf(want, sizeof want, "{\"op_id\":%u,\"kind\":\"", node);
  const char *p = ops ? strstr(ops, want) : NULL;
  if (!p) return CK_SNAP_OP;
  p += strlen(want);
  for (uint8_t k = 0; k <= CK_SNAP_SINK; k++)
    if (strncmp(p, KIND_NAMES[k], strlen(KIND_NAMES[k])) == 0 && p[strlen(KIND_NAMES[k])] == '"')
      return k;
  return CK_SNAP_OP;
}

/* Whether the slot dictionary the reader holds is this layout's (rows name slots by index). */
static bool slots_ok(const ck_arrow_reader_t *r) {
  const ck_arrow_rdict_t *d = &r->dicts[COL_SLOT];
  if (d->n != NSLOTS) return false;
  for (int i = 0; i < NSLOTS; i++) {
    size_t n = (size_t)(d->offsets[i + 1] - d->offsets[i]);
    if (n != strlen(SLOTS[i]) || memcmp(d->data + d->offsets[i], SLOTS[i], n) != 0) return false;
  }
  return true;
}

/* Where the decoder puts the encodings it rebuilds: scratch; or, in place, over the file's own
 * bytes already read — each batch's output is built in tmp and copied to the cursor, which never
 * passes the end of the batch just read, until an output would: then what is in place moves to
 * scratch and the rest goes there too. */
typedef struct dec_out {
  uint8_t *place; /* the file's bytes (in place), or NULL once writing to scratch */
  size_t cursor;  /* in place: the output's end in place[] */
  size_t start;   /* in place: where the output starts in place[] */
  ck_buf_t tmp;   /* in place: the current batch's output */
  ck_buf_t *scratch;
} dec_out_t;

static ck_buf_t *dec_buf(dec_out_t *o) { return o->place ? &o->tmp : o->scratch; }

/* The output's length so far. */
static size_t dec_len(const dec_out_t *o) {
  return o->place ? o->cursor - o->start + o->tmp.len : o->scratch->len;
}

/* The end of a batch: in place, its output goes to the cursor if it fits before limit (the
 * offset in the file just past the batch), else everything moves to scratch. */
static void dec_batch_end(dec_out_t *o, size_t limit) {
  if (!o->place) return;
  if (o->cursor + o->tmp.len <= limit) {
    if (o->tmp.len) memcpy(o->place + o->cursor, o->tmp.data, o->tmp.len);
    o->cursor += o->tmp.len;
  } else {
    ck_buf_reset(o->scratch);
    ck_buf_reserve(o->scratch, o->cursor - o->start + o->tmp.len);
    ck_buf_append(o->scratch, o->place + o->start, o->cursor - o->start);
    ck_buf_append(o->scratch, o->tmp.data, o->tmp.len);
    o->place = NULL;
  }
  ck_buf_reset(&o->tmp);
}

static int decode(const void *data, size_t len, uint8_t *place, int64_t id, uint64_t fingerprint,
                  int task, const ck_snap_joiner_t *joiner, ck_snap_section_t *sections, int max,
                  int *nsections, ck_buf_t *scratch, ck_error_t *err) {
  char what[96];
  snprintf(what, sizeof what, "the snapshot of subtask %d for checkpoint %lld", task,
           (long long)id);
  *nsections = 0;
  if (len >= 8 && memcmp(data, OLD_SNAP_MAGIC, 8) == 0) return old_format(what, err);
  ck_arrow_reader_t r;
  ck_error_t perr;
  ck_error_clear(&perr);
  if (ck_arrow_reader_open(&r, data, len, &perr))
    return ck_error_set(err, CK_ESTATE, "%s is damaged (%s)", what, perr.message);
  int64_t sid;
  int st;
  uint64_t fp;
  size_t crc_at;
  uint32_t want;
  int rc = snap_header(&r, what, &sid, &st, &fp, &crc_at, &want, err);
  if (rc) return rc;
  if (stream_crc(data, len, crc_at) != want)
    return ck_error_set(err, CK_ESTATE, "%s is damaged (checksum mismatch)", what);
  if ((id >= 0 && sid != id) || (task >= 0 && st != task) || (fingerprint && fp != fingerprint))
    return ck_error_set(err, CK_ESTATE, "%s belongs to another checkpoint, task or job", what);
  const char *ops = ck_arrow_reader_meta(&r, "clink.operators");
  size_t offs[64];
  int n = 0;
  void *js = NULL; /* the joiner's state for the current section (NULL: concatenate) */
  dec_out_t o = {.place = place, .scratch = scratch};
  ck_buf_init(&o.tmp);
  ck_buf_reset(scratch);
  if (!place) ck_buf_reserve(scratch, len); /* the encodings are about the file's size */
  int more;
  while ((more = ck_arrow_reader_next(&r, &perr)) == 1) {
    if (place && o.start == 0) /* the first batch: output starts where it did */
      o.start = o.cursor = r.batch_start;
    ck_buf_t *out = dec_buf(&o);
    if (!slots_ok(&r)) {
      rc = ck_error_set(err, CK_ESTATE, "%s is damaged (its slot dictionary is not <raw>, win, "
                        "group)", what);
      goto fail;
    }
    const int32_t *vo = r.cols[COL_VALUE].offsets;
    const uint8_t *vd = r.cols[COL_VALUE].data;
    for (int64_t i = 0, run; i < r.nrows; i = run) {
      uint32_t node = ck_arrow_get_u32(&r, COL_OP, i);
      for (run = i + 1; run < r.nrows && ck_arrow_get_u32(&r, COL_OP, run) == node;) run++;
      int64_t from_row = i;
      if (n == 0 || sections[n - 1].node != node) {
        if (n >= max || n >= 64) {
          rc = ck_error_set(err, CK_ESTATE, "%s has more than %d sections", what, max);
          goto fail;
        }
        for (int k = 0; k < n; k++)
          if (sections[k].node == node) {
            rc = ck_error_set(err, CK_ESTATE, "%s is damaged (the rows of node %u are not "
                              "together)", what, node);
            goto fail;
          }
        sections[n] = (ck_snap_section_t){.node = node, .kind = op_kind(ops, node)};
        offs[n++] = dec_len(&o);
        if (js) joiner->close(js);
        js = NULL;
        /* the first row: the header, as it is; the joiner says whether it joins the rest */
        size_t hn;
        const uint8_t *head = ck_arrow_get_bytes(&r, COL_VALUE, i, &hn);
        ck_buf_append(out, head, hn);
        if (joiner) js = joiner->open(head, hn);
        from_row = i + 1;
      }
      if (!js) { /* the values of a run of rows are contiguous in the batch: one copy */
        int32_t from, to;
        memcpy(&from, vo + from_row, 4);
        memcpy(&to, vo + run, 4);
        if (to > from) ck_buf_append(out, vd + from, (size_t)(to - from));
        continue;
      }
      if (joiner->rows && run > from_row) {
        const ck_arrow_rcol_t *kc = &r.cols[COL_KEY], *vc = &r.cols[COL_VALUE];
        ck_snap_rows_t rows = {.n = run - from_row,
                               .key_group = r.cols[COL_GROUP].data + 2 * from_row,
                               .key_off = kc->offsets + from_row, .key_data = kc->data,
                               .val_off = vc->offsets + from_row, .val_data = vc->data};
        if (joiner->rows(js, &rows, out, &perr)) {
          rc = ck_error_set(err, CK_ESTATE, "%s is damaged (a row of node %u: %s)", what, node,
                            perr.message);
          goto fail;
        }
        continue;
      }
      for (int64_t k = from_row; k < run; k++) {
        size_t kn, vn;
        const uint8_t *key = ck_arrow_get_bytes(&r, COL_KEY, k, &kn);
        const uint8_t *val = ck_arrow_get_bytes(&r, COL_VALUE, k, &vn);
        if (joiner->row(js, ck_arrow_get_u16(&r, COL_GROUP, k), key, kn, val, vn, out, &perr)) {
          rc = ck_error_set(err, CK_ESTATE, "%s is damaged (a row of node %u: %s)", what, node,
                            perr.message);
          goto fail;
        }
      }
    }
    dec_batch_end(&o, r.off);
  }
  if (more < 0) {
    rc = ck_error_set(err, CK_ESTATE, "%s is damaged (%s)", what, perr.message);
    goto fail;
  }
  if (!r.eos) {
    rc = ck_error_set(err, CK_ESTATE, "%s is truncated", what);
    goto fail;
  }
  const char *base = o.place ? (const char *)o.place + o.start : scratch->data;
  size_t total = dec_len(&o);
  for (int k = 0; k < n; k++) {
    size_t end = k + 1 < n ? offs[k + 1] : total;
    sections[k].data = base ? base + offs[k] : "";
    sections[k].len = end - offs[k];
  }
  *nsections = n;
fail:
  if (js) joiner->close(js);
  ck_buf_fini(&o.tmp);
  return rc;
}

int ck_snap_decode(const void *data, size_t len, int64_t id, uint64_t fingerprint, int task,
                   const ck_snap_joiner_t *joiner, ck_snap_section_t *sections, int max,
                   int *nsections, ck_buf_t *scratch, ck_error_t *err) {
  return decode(data, len, NULL, id, fingerprint, task, joiner, sections, max, nsections,
                scratch, err);
}

int ck_snap_decode_in_place(void *data, size_t len, int64_t id, uint64_t fingerprint, int task,
                            const ck_snap_joiner_t *joiner, ck_snap_section_t *sections, int max,
                            int *nsections, ck_buf_t *scratch, ck_error_t *err) {
  return decode(data, len, data, id, fingerprint, task, joiner, sections, max, nsections,
                scratch, err);
}
