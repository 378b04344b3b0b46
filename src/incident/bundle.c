/*
 * DESIGN: see bundle_int.h.
 */
#include "incident/bundle_int.h"

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "incident/bundle.h"

int ck_bundle_read_file(const char *path, ck_buf_t *out, ck_error_t *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (errno == ENOENT)
      return ck_error_set(err, CK_ENOTFOUND, "could not read '%s': it does not exist", path);
    return ck_error_set(err, CK_EIO, "could not read '%s': %s", path, strerror(errno));
  }
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) ck_buf_append(out, chunk, n);
  int bad = ferror(f);
  fclose(f);
  if (bad) return ck_error_set(err, CK_EIO, "could not read '%s'", path);
  return 0;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int ck_bundle_list(const char *dir, ck_arena_t *arena, char ***names) {
  *names = NULL;
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0, cap = 0;
  char **v = NULL;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (n == cap) v = ck_realloc(v, sizeof *v * (size_t)(cap = cap ? cap * 2 : 32));
    v[n++] = ck_arena_strdup(arena, e->d_name);
  }
  closedir(d);
  if (n) qsort(v, (size_t)n, sizeof *v, cmp_name);
  *names = ck_arena_alloc(arena, sizeof *v * (size_t)(n ? n : 1));
  if (n) memcpy(*names, v, sizeof *v * (size_t)n);
  ck_free(v);
  return n;
}

void ck_bundle_fmt(char *out, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out, cap, fmt, ap);
  va_end(ap);
}

bool ck_bundle_is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool ck_bundle_is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int64_t ck_bundle_name_id(const char *name, const char *prefix, const char *suffix) {
  size_t pl = strlen(prefix), sl = strlen(suffix), nl = strlen(name);
  if (nl <= pl + sl || strncmp(name, prefix, pl) || strcmp(name + nl - sl, suffix)) return -1;
  int64_t v = 0;
  for (size_t i = pl; i < nl - sl; i++) {
    if (name[i] < '0' || name[i] > '9' || v > INT64_MAX / 10 - 10) return -1;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

int ck_bundle_open(ck_bundle_t *b, const char *dir, ck_error_t *err) {
  memset(b, 0, sizeof *b);
  b->dir = dir;
  ck_arena_init(&b->arena, 0);
  ck_buf_init(&b->text);
  char path[4096];
  ck_bundle_fmt(path, sizeof path, "%s/%s", dir, CK_BUNDLE_MANIFEST);
  int rc = ck_bundle_read_file(path, &b->text, err);
  if (rc == CK_ENOTFOUND)
    ck_error_hint(err, "a bundle's manifest is written last: a directory without one is not a "
                  "bundle, or one whose collection did not finish");
  ck_json_t *m = NULL;
  if (!rc) rc = ck_json_parse(b->text.data ? b->text.data : "", b->text.len, &b->arena, &m, err);
  if (!rc) {
    const char *fmt = ck_json_get_str(m, "format");
    int64_t ver = ck_json_get_int(m, "version", -1);
    if (!fmt || strcmp(fmt, CK_BUNDLE_FORMAT))
      rc = ck_error_set(err, CK_EDECODE, "could not read '%s': it is not an incident bundle "
                        "manifest (format %s)", path, fmt ? fmt : "missing");
    else if (ver != CK_BUNDLE_VERSION)
      rc = ck_error_set(err, CK_EUNSUPPORTED, "could not read '%s': bundle version %lld, and "
                        "this clink reads version %d", path, (long long)ver, CK_BUNDLE_VERSION);
  }
  b->manifest = m;
  return rc;
}

void ck_bundle_close(ck_bundle_t *b) {
  ck_arena_fini(&b->arena);
  ck_buf_fini(&b->text);
}

const ck_json_t *ck_bundle_file_entry(const ck_bundle_t *b, const char *path) {
  const ck_json_t *files = ck_json_get(b->manifest, "files");
  for (int i = 0; files && i < files->n; i++) {
    const char *p = ck_json_get_str(files->items[i], "path");
    if (p && strcmp(p, path) == 0) return files->items[i];
  }
  return NULL;
}

int ck_bundle_read_checked(const ck_bundle_t *b, const char *path, ck_buf_t *out,
                           ck_error_t *err) {
  const ck_json_t *e = ck_bundle_file_entry(b, path);
  if (!e)
    return ck_error_set(err, CK_ENOTFOUND, "could not read '%s' of the bundle: the manifest "
                        "does not list it", path);
  char full[4096];
  ck_bundle_fmt(full, sizeof full, "%s/%s", b->dir, path);
  size_t at = out->len;
  int rc = ck_bundle_read_file(full, out, err);
  if (rc) return rc;
  char hex[65];
  ck_sha256_hex(out->data + at, out->len - at, hex);
  const char *want = ck_json_get_str(e, "sha256");
  if (!want || strcmp(want, hex) || ck_json_get_int(e, "bytes", -1) != (int64_t)(out->len - at))
    return ck_error_set(err, CK_ESTATE, "could not trust '%s' of the bundle: its checksum does "
                        "not match the manifest's", path);
  return 0;
}

bool ck_bundle_has_id(const ck_json_t *arr, int64_t id) {
  for (int i = 0; arr && i < arr->n; i++) {
    int64_t v;
    if (ck_json_int(arr->items[i], &v) && v == id) return true;
  }
  return false;
}
