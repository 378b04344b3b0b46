/* DESIGN: see trace.h. */
#include "checkpoint/trace.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

_Atomic int ck_trace_fd_ = -2;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long long seq;
static char proc[96];
static _Thread_local const char *ctx_dir;
static _Thread_local int ctx_task = -1;

/* The CLI command (clink run → "run"), else the program's name. */
static void proc_name(char *out, size_t n) {
  char buf[512] = "";
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  ssize_t len = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0) close(fd);
  if (len < 0) len = 0;
  buf[len] = 0;
  const char *argv0 = buf, *argv1 = buf + strlen(buf) + 1;
  const char *base = strrchr(argv0, '/');
  base = base ? base + 1 : argv0;
  const char *name = base;
  if (argv1 < buf + len && *argv1 && *argv1 != '-' && strcmp(base, "clink") == 0) name = argv1;
  if (!*name) name = "clink";
  size_t k = 0;
  for (; k + 1 < n && name[k]; k++)
    out[k] = isalnum((unsigned char)name[k]) || name[k] == '_' ? name[k] : '_';
  out[k] = 0;
}

static void init(void) {
  const char *dir = getenv("CLINK_PROTOCOL_TRACE_DIR");
  if (!dir || !*dir) {
    ck_trace_fd_ = -1;
    return;
  }
  (void)mkdir(dir, 0700);
  char name[64], path[4200];
  proc_name(name, sizeof name);
  snprintf(proc, sizeof proc, "%s-%d", name, (int)getpid());
  snprintf(path, sizeof path, "%s/%s.ndjson", dir, proc);
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0)
    fprintf(stderr, "clink: could not open the protocol trace '%s': %s; tracing is off\n", path,
            strerror(errno));
  ck_trace_fd_ = fd < 0 ? -1 : fd;
}

int ck_trace_enabled(void) {
  if (ck_trace_fd_ == -2) pthread_once(&once, init);
  return ck_trace_fd_ >= 0;
}

void ck_trace_context(const char *dir, int task) {
  ctx_dir = dir;
  ctx_task = task;
}

static bool is_int(const char *s, size_t n) {
  size_t i = s[0] == '-' ? 1 : 0;
  if (i >= n || n - i > 18) return false;
  for (; i < n; i++)
    if (!isdigit((unsigned char)s[i])) return false;
  return true;
}

/* Appends s[0..n) to line as a JSON string. */
static size_t put_str(char *line, size_t at, size_t cap, const char *s, size_t n) {
  if (at < cap) line[at++] = '"';
  for (size_t i = 0; i < n && at + 7 < cap; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') line[at++] = '\\', line[at++] = (char)c;
    else if (c < 0x20) at += (size_t)snprintf(line + at, cap - at, "\\u%04x", c);
    else line[at++] = (char)c;
  }
  if (at < cap) line[at++] = '"';
  return at;
}

void ck_trace_emit(const char *event, const char *fmt, ...) {
  if (!ck_trace_enabled()) return;
  char fields[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(fields, sizeof fields, fmt, ap);
  va_end(ap);
  char line[4096];
  size_t cap = sizeof line - 2, at = 0;
  bool has_dir = strstr(fields, "dir=") == fields || strstr(fields, " dir=");
  bool has_task = strstr(fields, "task=") == fields || strstr(fields, " task=");
  pthread_mutex_lock(&mu);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  at += (size_t)snprintf(line, cap, "{\"seq\":%lld,\"ts\":%lld,\"proc\":\"%s\",\"event\":\"%s\"",
                         ++seq, (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec, proc, event);
  if (!has_dir && ctx_dir && at < cap) {
    at += (size_t)snprintf(line + at, cap - at, ",\"dir\":");
    at = put_str(line, at, cap, ctx_dir, strlen(ctx_dir));
  }
  if (!has_task && ctx_task >= 0 && at < cap)
    at += (size_t)snprintf(line + at, cap - at, ",\"task\":%d", ctx_task);
  for (const char *p = fields; *p && at < cap;) {
    while (*p == ' ') p++;
    const char *end = p + strcspn(p, " "), *eq = memchr(p, '=', (size_t)(end - p));
    if (eq && eq > p) {
      line[at++] = ',';
      at = put_str(line, at, cap, p, (size_t)(eq - p));
      if (at < cap) line[at++] = ':';
      const char *v = eq + 1;
      size_t vn = (size_t)(end - v);
      if (vn && is_int(v, vn) && at + vn < cap) memcpy(line + at, v, vn), at += vn;
      else at = put_str(line, at, cap, v, vn);
    }
    p = end;
  }
  if (at > cap) at = cap;
  line[at++] = '}';
  line[at++] = '\n';
  ssize_t w = write(ck_trace_fd_, line, at); /* O_APPEND: one line, whole */
  (void)w;
  pthread_mutex_unlock(&mu);
}
