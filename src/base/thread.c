/* DESIGN: see thread.h. */
#include "base/thread.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/error.h"

void ck_mutex_init(ck_mutex_t *mu) { pthread_mutex_init(&mu->m, NULL); }
void ck_mutex_fini(ck_mutex_t *mu) { pthread_mutex_destroy(&mu->m); }
void ck_mutex_lock(ck_mutex_t *mu) { ck_assert(pthread_mutex_lock(&mu->m) == 0); }
void ck_mutex_unlock(ck_mutex_t *mu) { ck_assert(pthread_mutex_unlock(&mu->m) == 0); }

void ck_cond_init(ck_cond_t *cv) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&cv->c, &a);
  pthread_condattr_destroy(&a);
}
void ck_cond_fini(ck_cond_t *cv) { pthread_cond_destroy(&cv->c); }
void ck_cond_wait(ck_cond_t *cv, ck_mutex_t *mu) { pthread_cond_wait(&cv->c, &mu->m); }

bool ck_cond_wait_until(ck_cond_t *cv, ck_mutex_t *mu, int64_t deadline_ms) {
  struct timespec ts = {deadline_ms / 1000, (deadline_ms % 1000) * 1000000};
  return pthread_cond_timedwait(&cv->c, &mu->m, &ts) != ETIMEDOUT;
}

void ck_cond_signal(ck_cond_t *cv) { pthread_cond_signal(&cv->c); }
void ck_cond_broadcast(ck_cond_t *cv) { pthread_cond_broadcast(&cv->c); }

int ck_thread_start(ck_thread_t *th, const char *name, void *(*fn)(void *), void *arg) {
  int rc = pthread_create(&th->t, NULL, fn, arg);
  if (rc != 0) return CK_EINTERNAL;
  th->started = true;
  if (name) {
    char n[16];
    strncpy(n, name, 15);
    n[15] = 0;
    pthread_setname_np(th->t, n);
  }
  return 0;
}

void ck_thread_join(ck_thread_t *th) {
  if (!th->started) return;
  pthread_join(th->t, NULL);
  th->started = false;
}
