/* DESIGN: see log.h. */
#include "base/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/redact.h"

static _Atomic int level = -1;
static _Atomic int out_fd = 2;
/* the embedding host's callback (libclink): set before any job runs, read on every line */
static ck_log_fn_t _Atomic hook;
static void *_Atomic hook_ctx;

int ck_log_parse_level(const char *s) {
  static const char *names[] = {"off", "error", "warn", "info", "debug"};
  for (int i = 0; i < 5; i++)
    if (ck_streq_i(s, names[i])) return i;
  return -1;
}

ck_log_level_t ck_log_level(void) {
  int l = atomic_load(&level);
  if (l < 0) {
    const char *env = getenv("CLINK_LOG_LEVEL");
    l = env ? ck_log_parse_level(env) : -1;
    if (l < 0) l = CK_LOG_INFO;
    atomic_store(&level, l);
  }
  return (ck_log_level_t)l;
}

void ck_log_set_level(ck_log_level_t l) { atomic_store(&level, (int)l); }
void ck_log_set_fd(int fd) { atomic_store(&out_fd, fd < 0 ? 2 : fd); }
void ck_log_set_hook(ck_log_fn_t fn, void *ctx) {
  atomic_store(&hook_ctx, ctx);
  atomic_store(&hook, fn);
}

void ck_log(ck_log_level_t l, const char *subsystem, const char *fmt, ...) {
  if (l == CK_LOG_OFF || l > ck_log_level()) return;
  char line[2048];
  int n = snprintf(line, sizeof line, "[%s] %s", subsystem,
                   l == CK_LOG_ERROR ? "error: " : l == CK_LOG_WARN ? "warning: " : "");
  va_list ap;
  va_start(ap, fmt);
  if (n < (int)sizeof line) n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n] = 0;
  ck_redact_inplace(line, sizeof line - 1); /* no credential in any log line */
  ck_log_fn_t fn = atomic_load(&hook);
  if (fn) {
    fn(atomic_load(&hook_ctx), l, line);
    return;
  }
  n = (int)strlen(line);
  line[n++] = '\n';
  ssize_t w = write(atomic_load(&out_fd), line, (size_t)n);
  (void)w;
}
