/* DESIGN: see store.h. */
#include "checkpoint/store.h"
#include "checkpoint/trace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "base/crc32c.h"

#define SNAP_MAGIC "CKSNAP\0\1"
#define SNAP_VERSION 1

static int mkdirs(char *path) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    int rc = mkdir(path, 0755);
    *p = '/';
    if (rc && errno != EEXIST) return -1;
  }
  if (mkdir(path, 0755) && errno != EEXIST) return -1;
  return 0;
}

int ck_store_open(const char *dir, ck_store_t *store, ck_error_t *err) {
  size_t n = strlen(dir) + 8;
  store->root = ck_malloc(n);
  snprintf(store->root, n, "%s/v1", dir);
  char *meta = ck_malloc(n + 8);
  snprintf(meta, n + 8, "%s/_meta", store->root);
  int rc = mkdirs(meta);
  ck_free(meta);
  if (rc) {
    ck_error_set(err, CK_EIO, "could not create checkpoint directory '%s': %s", store->root,
                 strerror(errno));
    ck_free(store->root);
    store->root = NULL;
    return CK_EIO;
  }
  return 0;
}

void ck_store_close(ck_store_t *store) {
  ck_free(store->root);
  store->root = NULL;
}

static void full(const ck_store_t *s, const char *rel, char *out, size_t n) {
  snprintf(out, n, "%s/%s", s->root, rel);
}

static int fsync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

int ck_store_replace(const char *path, const void *data, size_t n, int mode, ck_error_t *err) {
  char tmp[4200], dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  else snprintf(dir, sizeof dir, ".");
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
  if (rename(tmp, path)) {
    int e = errno;
    unlink(tmp);
    return ck_error_set(err, CK_EIO, "could not rename '%s' into place: %s", tmp, strerror(e));
  }
  if (fsync_dir(dir))
    return ck_error_set(err, CK_EIO, "could not sync directory '%s': %s", dir, strerror(errno));
  return 0;
}

int ck_store_write(const ck_store_t *store, const char *relpath, const void *data, size_t n,
                   ck_error_t *err) {
  char path[4096], dir[4096];
  full(store, relpath, path, sizeof path);
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  *slash = 0;
  if (mkdirs(dir))
    return ck_error_set(err, CK_EIO, "could not create '%s': %s", dir, strerror(errno));
  return ck_store_replace(path, data, n, 0644, err);
}

int ck_store_read(const ck_store_t *store, const char *relpath, ck_buf_t *out, ck_error_t *err) {
  char path[4096];
  full(store, relpath, path, sizeof path);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return CK_ENOTFOUND;
    return ck_error_set(err, CK_EIO, "could not open '%s': %s", path, strerror(errno));
  }
  char chunk[65536];
  for (;;) {
    ssize_t r = read(fd, chunk, sizeof chunk);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int e = errno;
      close(fd);
      return ck_error_set(err, CK_EIO, "could not read '%s': %s", path, strerror(e));
    }
    if (r == 0) break;
    ck_buf_append(out, chunk, (size_t)r);
  }
  close(fd);
  return 0;
}

bool ck_store_exists(const ck_store_t *store, const char *relpath) {
  char path[4096];
  full(store, relpath, path, sizeof path);
  return access(path, F_OK) == 0;
}

int ck_store_remove(const ck_store_t *store, const char *relpath) {
  char path[4096];
  full(store, relpath, path, sizeof path);
  return unlink(path) == 0 || errno == ENOENT ? 0 : CK_EIO;
}

int ck_store_mark(const ck_store_t *store, const char *kind, int64_t id, ck_error_t *err) {
  char rel[128];
  snprintf(rel, sizeof rel, "_meta/%s-%lld", kind, (long long)id);
  int rc = ck_store_write(store, rel, "", 0, err);
  if (!rc) CK_TRACE("marker", "dir=%s kind=%s ckpt=%lld", store->root, kind, (long long)id);
  return rc;
}

bool ck_store_marked(const ck_store_t *store, const char *kind, int64_t id) {
  char rel[128];
  snprintf(rel, sizeof rel, "_meta/%s-%lld", kind, (long long)id);
  return ck_store_exists(store, rel);
}

/* Largest N among names "<prefix>N<suffix>" in dir. */
static int64_t scan_ids(const char *dir, const char *prefix, const char *suffix) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int64_t best = 0;
  size_t pl = strlen(prefix), sl = strlen(suffix);
  struct dirent *e;
  while ((e = readdir(d))) {
    const char *n = e->d_name;
    size_t len = strlen(n);
    if (len <= pl + sl || strncmp(n, prefix, pl) != 0) continue;
    if (strcmp(n + len - sl, suffix) != 0 && !(strstr(n, ".tmp-") && strstr(n, suffix)))
      continue;
    char *end;
    long long v = strtoll(n + pl, &end, 10);
    if (end == n + pl) continue;
    if (v > best) best = v;
  }
  closedir(d);
  return best;
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

int64_t ck_store_max_id(const ck_store_t *store) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/_meta", store->root);
  int64_t best = read_floor(store);
  int64_t c = scan_ids(dir, "completed-", "");
  if (c > best) best = c;
  c = scan_ids(dir, "confirmed-", "");
  if (c > best) best = c;
  DIR *d = opendir(store->root);
  if (!d) return best;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    snprintf(dir, sizeof dir, "%s/%s", store->root, e->d_name);
    int64_t s = scan_ids(dir, "checkpoint-", ".snap");
    if (s > best) best = s;
  }
  closedir(d);
  return best;
}

int64_t ck_store_latest(const ck_store_t *store, const char *kind) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/_meta", store->root);
  DIR *d = opendir(dir);
  if (!d) return 0;
  int64_t best = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    int64_t id = marker_id(e->d_name, kind, false);
    if (id > best) best = id;
  }
  closedir(d);
  return best;
}

static int cmp_desc(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

int ck_store_completed_ids(const ck_store_t *store, int64_t above, int64_t below, int64_t **ids) {
  *ids = NULL;
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/_meta", store->root);
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    int64_t id = marker_id(e->d_name, "completed", false);
    if (id <= 0 || id <= above || (below && id >= below)) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      *ids = ck_realloc(*ids, sizeof **ids * (size_t)cap);
    }
    (*ids)[n++] = id;
  }
  closedir(d);
  if (n > 1) qsort(*ids, (size_t)n, sizeof **ids, cmp_desc);
  return n;
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
  char rel[512];
  for (int t = 0; t < ntasks; t++) {
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/%d", store->root, t);
    DIR *d = opendir(dir);
    if (!d) continue;
    struct dirent *e;
    while ((e = readdir(d))) {
      if (strncmp(e->d_name, "checkpoint-", 11) != 0) continue;
      long long id = strtoll(e->d_name + 11, NULL, 10);
      if (id > 0 && id < keep_from) {
        snprintf(rel, sizeof rel, "%d/%s", t, e->d_name);
        ck_store_remove(store, rel);
      }
    }
    closedir(d);
  }
  /* markers go with their snapshots (a marker without them restores nothing); the id floor
   * keeps the record of the ids they used */
  char meta[4200];
  snprintf(meta, sizeof meta, "%s/_meta", store->root);
  DIR *d = opendir(meta);
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    int64_t id = marker_id(e->d_name, "completed", true);
    if (!id) id = marker_id(e->d_name, "confirmed", true);
    if (id > 0 && id < keep_from) {
      snprintf(rel, sizeof rel, "_meta/%s", e->d_name);
      ck_store_remove(store, rel);
    }
  }
  closedir(d);
  return 0;
}

void ck_store_path(const ck_store_t *store, const char *relpath, char *out, size_t n) {
  full(store, relpath, out, n);
}

int ck_snap_check(const ck_store_t *store, int task, int64_t id, uint64_t fingerprint,
                  ck_error_t *err) {
  char rel[128], path[4200];
  ck_snap_path(task, id, rel, sizeof rel);
  full(store, rel, path, sizeof path);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT)
      return ck_error_set(err, CK_ESTATE, "snapshot file '%s' of subtask %d is missing", path,
                          task);
    return ck_error_set(err, CK_ESTATE, "could not open snapshot file '%s' of subtask %d: %s",
                        path, task, strerror(e));
  }
  struct stat st;
  int rc = 0;
  unsigned char head[36];
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    rc = ck_error_set(err, CK_ESTATE, "snapshot file '%s' of subtask %d is not a regular file",
                      path, task);
    goto done;
  }
  size_t len = (size_t)st.st_size;
  if (len < 36 + 4 || pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head ||
      memcmp(head, SNAP_MAGIC, 8) != 0) {
    rc = ck_error_set(err, CK_ESTATE, "snapshot file '%s' of subtask %d is not a clink snapshot "
                      "(%zu bytes)", path, task, len);
    goto done;
  }
  uint32_t version, t;
  uint64_t sid, fp;
  version = ck_get_le32(head + 8);
  sid = ck_get_le64(head + 12);
  fp = ck_get_le64(head + 20);
  t = ck_get_le32(head + 28);
  uint32_t crc = 0;
  uint8_t want[4];
  char chunk[65536];
  for (size_t off = 0; off < len - 4 && !rc;) {
    size_t n = len - 4 - off < sizeof chunk ? len - 4 - off : sizeof chunk;
    ssize_t r = pread(fd, chunk, n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      rc = ck_error_set(err, CK_ESTATE, "could not read snapshot file '%s' of subtask %d: %s",
                        path, task, r < 0 ? strerror(errno) : "it got shorter while being read");
      break;
    }
    crc = ck_crc32c(crc, chunk, (size_t)r);
    off += (size_t)r;
  }
  if (rc) goto done;
  if (pread(fd, want, 4, (off_t)(len - 4)) != 4 || ck_get_le32(want) != crc) {
    rc = ck_error_set(err, CK_ESTATE, "snapshot file '%s' of subtask %d is damaged (checksum "
                      "mismatch)", path, task);
  } else if (version != SNAP_VERSION) {
    rc = ck_error_set(err, CK_ESTATE, "snapshot file '%s' has format version %u; this clink "
                      "reads version %d", path, version, SNAP_VERSION);
  } else if ((int64_t)sid != id || (int)t != task || fp != fingerprint) {
    rc = ck_error_set(err, CK_ESTATE, "snapshot file '%s' belongs to another checkpoint, "
                      "subtask or job (it names checkpoint %lld, subtask %u)", path,
                      (long long)sid, t);
  }
done:
  close(fd);
  return rc;
}

void ck_snap_path(int task, int64_t id, char *out, size_t n) {
  snprintf(out, n, "%d/checkpoint-%lld.snap", task, (long long)id);
}

void ck_snap_encode(int64_t id, uint64_t fingerprint, int task, const ck_snap_section_t *sections,
                    int nsections, ck_buf_t *out) {
  size_t start = out->len;
  ck_buf_append(out, SNAP_MAGIC, 8);
  ck_buf_put_le32(out, SNAP_VERSION);
  ck_buf_put_le64(out, (uint64_t)id);
  ck_buf_put_le64(out, fingerprint);
  ck_buf_put_le32(out, (uint32_t)task);
  ck_buf_put_le32(out, (uint32_t)nsections);
  for (int i = 0; i < nsections; i++) {
    ck_buf_put_le32(out, sections[i].node);
    ck_buf_putc(out, (char)sections[i].kind);
    ck_buf_put_le64(out, sections[i].len);
    ck_buf_append(out, sections[i].data, sections[i].len);
  }
  ck_buf_put_le32(out, ck_crc32c(0, out->data + start, out->len - start));
}

int ck_snap_decode(const void *data, size_t len, int64_t id, uint64_t fingerprint, int task,
                   ck_snap_section_t *sections, int max, int *nsections, ck_error_t *err) {
  const unsigned char *p = data;
  if (len < 8 + 4 + 8 + 8 + 4 + 4 + 4 || memcmp(p, SNAP_MAGIC, 8) != 0)
    return ck_error_set(err, CK_ESTATE, "snapshot of task %d for checkpoint %lld is not a clink snapshot",
                        task, (long long)id);
  uint32_t crc;
  crc = ck_get_le32(p + len - 4);
  if (crc != ck_crc32c(0, p, len - 4))
    return ck_error_set(err, CK_ESTATE,
                        "snapshot of task %d for checkpoint %lld is damaged (checksum mismatch)",
                        task, (long long)id);
  uint32_t version, t, ns;
  uint64_t sid, fp;
  version = ck_get_le32(p + 8);
  sid = ck_get_le64(p + 12);
  fp = ck_get_le64(p + 20);
  t = ck_get_le32(p + 28);
  ns = ck_get_le32(p + 32);
  if (version != SNAP_VERSION)
    return ck_error_set(err, CK_ESTATE, "snapshot format version %u is not supported (this clink reads %d)",
                        version, SNAP_VERSION);
  if ((int64_t)sid != id || (int)t != task || fp != fingerprint)
    return ck_error_set(err, CK_ESTATE,
                        "snapshot file of task %d for checkpoint %lld belongs to another checkpoint, task or job",
                        task, (long long)id);
  size_t off = 36;
  int n = 0;
  for (uint32_t i = 0; i < ns; i++) {
    if (off + 13 > len - 4 || n >= max)
      return ck_error_set(err, CK_ESTATE, "snapshot of task %d for checkpoint %lld is truncated",
                          task, (long long)id);
    ck_snap_section_t *s = &sections[n++];
    uint64_t sl;
    s->node = ck_get_le32(p + off);
    s->kind = p[off + 4];
    sl = ck_get_le64(p + off + 5);
    off += 13;
    if (sl > len - 4 - off)
      return ck_error_set(err, CK_ESTATE, "snapshot of task %d for checkpoint %lld is truncated",
                          task, (long long)id);
    s->data = p + off;
    s->len = sl;
    off += sl;
  }
  *nsections = n;
  return 0;
}
