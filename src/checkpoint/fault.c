/* DESIGN: see fault.h. The environment is parsed once, on the first hit of any point. */
#include "checkpoint/fault.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "base/time.h"

static const char *const names[] = {
#define CK_X_NAME(id, name, where) name,
    CK_FAULT_TABLE(CK_X_NAME)
    CK_FAULT_SINK_TABLE(CK_X_NAME)
#undef CK_X_NAME
};

typedef struct armed {
  int action; /* 0 none, 1 exit, 2 abort, 3 kill, 4 delay, 5 fail, 6 stall */
  long ordinal;
  long delay_ms;
  bool onwards; /* "<n>+": the n-th time and every time after */
} armed_t;

static armed_t armed[CK_FAULT__COUNT];
static _Atomic long hits[CK_FAULT__COUNT];
static pthread_once_t once = PTHREAD_ONCE_INIT;

const char *ck_fault_name(ck_fault_point_t p) { return p < CK_FAULT__COUNT ? names[p] : "?"; }

static void parse(void) {
  const char *env = getenv("CLINK_FAULT");
  if (!env || !*env) return;
  char *copy = strdup(env), *save = NULL;
  for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char *f[3] = {item, NULL, NULL};
    char *c = strchr(item, ':');
    if (c) *c = 0, f[1] = c + 1;
    if (f[1] && (c = strchr(f[1], ':'))) *c = 0, f[2] = c + 1;
    int p = -1;
    for (int i = 0; i < CK_FAULT__COUNT; i++)
      if (strcmp(names[i], f[0]) == 0) p = i;
    if (p < 0 || !f[1]) {
      fprintf(stderr, "[fault] warning: ignoring CLINK_FAULT item '%s' (want <point>:<action>[:<n>])\n", item);
      continue;
    }
    armed_t a = {0, f[2] ? atol(f[2]) : 1, 0, f[2] && strchr(f[2], '+')};
    if (strcmp(f[1], "exit") == 0) a.action = 1;
    else if (strcmp(f[1], "abort") == 0) a.action = 2;
    else if (strcmp(f[1], "kill") == 0) a.action = 3;
    else if (strncmp(f[1], "delay=", 6) == 0) a.action = 4, a.delay_ms = atol(f[1] + 6);
    else if (strcmp(f[1], "fail") == 0) a.action = 5;
    else if (strncmp(f[1], "stall=", 6) == 0) a.action = 6, a.delay_ms = atol(f[1] + 6);
    if (a.action) armed[p] = a;
  }
  free(copy);
}

int ck_fault(ck_fault_point_t p) { return ck_fault_err(p, NULL); }

int ck_fault_err(ck_fault_point_t p, ck_error_t *err) {
  pthread_once(&once, parse);
  if (!armed[p].action) return 0;
  long n = atomic_fetch_add(&hits[p], 1) + 1;
  bool onwards = armed[p].action == 4 || armed[p].onwards;
  if (!onwards && n != armed[p].ordinal) return 0;
  if (onwards && n < armed[p].ordinal) return 0;
  char line[128];
  int len = snprintf(line, sizeof line, "[fault] %s hit (%ld)\n", names[p], n);
  ssize_t w = write(2, line, (size_t)len);
  (void)w;
  switch (armed[p].action) {
    case 1: _exit(86);
    case 2: abort();
    case 3: kill(getpid(), SIGKILL); break;
    case 4:
    case 6: ck_sleep_ms(armed[p].delay_ms); break;
    case 5:
      ck_error_set(err, CK_EIO, "injected fault at %s", names[p]);
      if (err) err->retriable = true;
      return CK_EIO;
  }
  return 0;
}
