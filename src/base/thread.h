/*
 * DESIGN: thin wrappers over pthreads so the rest of the engine names one API, with deadlines
 * expressed in monotonic milliseconds (ck_mono_ms) — waits are always on a condition with a
 * deadline, never a bare sleep.
 */
#ifndef CK_BASE_THREAD_H
#define CK_BASE_THREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct ck_mutex { pthread_mutex_t m; } ck_mutex_t;
typedef struct ck_cond { pthread_cond_t c; } ck_cond_t;
typedef struct ck_thread { pthread_t t; bool started; } ck_thread_t;

void ck_mutex_init(ck_mutex_t *mu);
void ck_mutex_fini(ck_mutex_t *mu);
void ck_mutex_lock(ck_mutex_t *mu);
void ck_mutex_unlock(ck_mutex_t *mu);

void ck_cond_init(ck_cond_t *cv); /* waits use CLOCK_MONOTONIC */
void ck_cond_fini(ck_cond_t *cv);
void ck_cond_wait(ck_cond_t *cv, ck_mutex_t *mu);
/* Waits until signalled or deadline_ms (ck_mono_ms clock) passes; false on timeout. */
bool ck_cond_wait_until(ck_cond_t *cv, ck_mutex_t *mu, int64_t deadline_ms);
void ck_cond_signal(ck_cond_t *cv);
void ck_cond_broadcast(ck_cond_t *cv);

/* name is shown in debuggers and top (at most 15 characters used). */
int ck_thread_start(ck_thread_t *th, const char *name, void *(*fn)(void *), void *arg);
void ck_thread_join(ck_thread_t *th);

#endif
