/*
 * DESIGN: helpers shared by the connector unit tests (test_connectors_*.c): schemas from a
 * short "name TYPE, …" spec, option lists, batches, temp directories made with mkdtemp and
 * removed recursively, whole-file read/write, a row rendered as JSON for comparisons, and
 * one step of a sink's contract that must succeed (t_sink_*: a failure is a test failure
 * naming the step and the sink's message; include cmocka first). Header-only (static functions) because each test file is its own executable.
 */
#ifndef CK_TEST_CONNECTORS_UTIL_H
#define CK_TEST_CONNECTORS_UTIL_H

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/arena.h"
#include "base/buf.h"
#include "connectors/format.h"
#include "runtime/batch.h"
#include "runtime/connector.h"
#include "runtime/options.h"
#include "runtime/schema.h"

/* "a INT, b BIGINT, c DOUBLE, d FLOAT, e DECIMAL(10,2), f VARCHAR, g BOOLEAN, h TIMESTAMP" */
static inline ck_schema_t t_schema(ck_arena_t *arena, const char *spec) {
  char *copy = ck_arena_strdup(arena, spec);
  int n = 1;
  int depth = 0;
  for (const char *p = copy; *p; p++) {
    if (*p == '(') depth++;
    else if (*p == ')') depth--;
    else if (*p == ',' && depth == 0) n++;
  }
  ck_schema_t s = ck_schema_make(arena, n);
  char *p = copy;
  for (int i = 0; i < n; i++) {
    while (*p == ' ') p++;
    char *name = p;
    while (*p != ' ') p++;
    *p++ = 0;
    char *type = p;
    depth = 0;
    while (*p && !(*p == ',' && depth == 0)) {
      if (*p == '(') depth++;
      if (*p == ')') depth--;
      p++;
    }
    if (*p) *p++ = 0;
    s.names[i] = name;
    ck_type_t t = CK_TYPE(CK_T_NULL);
    if (!strcmp(type, "INT")) t = CK_TYPE(CK_T_INT32);
    else if (!strcmp(type, "BIGINT")) t = CK_TYPE(CK_T_INT64);
    else if (!strcmp(type, "DOUBLE")) t = CK_TYPE(CK_T_FLOAT64);
    else if (!strcmp(type, "FLOAT")) t = CK_TYPE(CK_T_FLOAT32);
    else if (!strcmp(type, "VARCHAR")) t = CK_TYPE(CK_T_STRING);
    else if (!strcmp(type, "BOOLEAN")) t = CK_TYPE(CK_T_BOOL);
    else if (!strcmp(type, "TIMESTAMP")) t = CK_TYPE(CK_T_TIMESTAMP);
    else if (!strcmp(type, "TIMESTAMP(3)")) t = ck_type_timestamp(3, 0);
    else if (!strcmp(type, "TIMESTAMP_LTZ(3)")) t = ck_type_timestamp(3, CK_TS_LTZ);
    else if (!strncmp(type, "DECIMAL(", 8)) {
      int pr, sc;
      if (sscanf(type + 8, "%d,%d", &pr, &sc) != 2) abort();
      t = (ck_type_t){CK_T_DECIMAL, (uint8_t)pr, (uint8_t)sc};
    } else {
      fprintf(stderr, "t_schema: unknown type '%s'\n", type);
      abort();
    }
    s.types[i] = t;
  }
  return s;
}

/* Options from key, value, …, NULL. */
static inline ck_options_t t_opts(ck_arena_t *arena, ...) {
  va_list ap;
  int n = 0;
  va_start(ap, arena);
  while (va_arg(ap, const char *)) n++;
  va_end(ap);
  ck_options_t o;
  o.n = n / 2;
  o.keys = ck_arena_zalloc(arena, sizeof(char *) * (size_t)(o.n + 1));
  o.values = ck_arena_zalloc(arena, sizeof(char *) * (size_t)(o.n + 1));
  va_start(ap, arena);
  for (int i = 0; i < o.n; i++) {
    o.keys[i] = va_arg(ap, const char *);
    o.values[i] = va_arg(ap, const char *);
  }
  va_end(ap);
  return o;
}

static inline ck_batch_t *t_batch(const ck_schema_t *s) {
  return ck_batch_new(s->ncols, s->types, 4);
}

/* Row i as JSON (keys sorted), caller frees with ck_free. */
static inline char *t_row_json(const ck_schema_t *s, const ck_batch_t *batch, size_t i) {
  ck_encoder_t *enc = ck_encoder_new(CK_FORMAT_JSON, s);
  ck_buf_t b;
  ck_buf_init(&b);
  ck_encoder_row(enc, batch, i, &b);
  ck_encoder_free(enc);
  return ck_buf_detach(&b);
}

/* Every row as JSON lines. */
static inline char *t_batch_json(const ck_schema_t *s, const ck_batch_t *batch) {
  ck_encoder_t *enc = ck_encoder_new(CK_FORMAT_JSON, s);
  ck_buf_t b;
  ck_buf_init(&b);
  ck_encoder_batch(enc, batch, &b);
  ck_encoder_free(enc);
  return ck_buf_detach(&b);
}

static inline char *t_tmpdir(void) {
  char tmpl[] = "/tmp/clink-conn-XXXXXX";
  char *d = mkdtemp(tmpl);
  if (!d) abort();
  return ck_strdup(d);
}

static inline char *t_path(const char *dir, const char *name) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_buf_printf(&b, "%s/%s", dir, name);
  return ck_buf_detach(&b);
}

static inline void t_rmtree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    DIR *dir = opendir(path);
    struct dirent *e;
    while (dir && (e = readdir(dir))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char *sub = t_path(path, e->d_name);
      t_rmtree(sub);
      ck_free(sub);
    }
    if (dir) closedir(dir);
    rmdir(path);
  } else {
    unlink(path);
  }
}

static inline void t_write(const char *path, const char *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, n, f) != n) abort();
  fclose(f);
}

static inline void t_writes(const char *path, const char *s) { t_write(path, s, strlen(s)); }

/* Whole file, NUL-terminated (ck_free); NULL when missing. */
static inline char *t_read(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  ck_buf_t b;
  ck_buf_init(&b);
  char tmp[65536];
  size_t r;
  while ((r = fread(tmp, 1, sizeof tmp, f)) > 0) ck_buf_append(&b, tmp, r);
  fclose(f);
  if (n) *n = b.len;
  return ck_buf_detach(&b);
}

/* ---- sink steps that must succeed */
static inline void t_sink_fail(const char *step, int64_t ckpt, const ck_error_t *err) {
  fail_msg("%s %lld: %s (%s)", step, (long long)ckpt, err->message, err->detail);
}

static inline void t_sink_open(ck_sink_t *sink, bool restored) {
  ck_error_t err;
  ck_error_clear(&err);
  if (sink->ops->open(sink, restored, &err)) t_sink_fail("open", 0, &err);
}

/* Writes batch and frees it. */
static inline void t_sink_write(ck_sink_t *sink, ck_batch_t *batch) {
  ck_error_t err;
  ck_error_clear(&err);
  if (sink->ops->write(sink, batch, &err)) t_sink_fail("write", 0, &err);
  ck_batch_free(batch);
}

/* state is reset first: it holds exactly what prepare(ckpt) returned. */
static inline void t_sink_prepare(ck_sink_t *sink, int64_t ckpt, ck_buf_t *state) {
  ck_error_t err;
  ck_error_clear(&err);
  ck_buf_reset(state);
  if (sink->ops->prepare(sink, ckpt, state, &err)) t_sink_fail("prepare", ckpt, &err);
}

static inline void t_sink_commit(ck_sink_t *sink, int64_t ckpt) {
  ck_error_t err;
  ck_error_clear(&err);
  if (sink->ops->commit(sink, ckpt, &err)) t_sink_fail("commit", ckpt, &err);
}

static inline void t_sink_recover(ck_sink_t *sink, int64_t ckpt, const ck_buf_t *state) {
  ck_error_t err;
  ck_error_clear(&err);
  if (sink->ops->recover(sink, ckpt, state->data, state->len, &err))
    t_sink_fail("recover", ckpt, &err);
}

static inline void t_sink_finish(ck_sink_t *sink) {
  ck_error_t err;
  ck_error_clear(&err);
  if (sink->ops->finish(sink, &err)) t_sink_fail("finish", 0, &err);
}

#endif
