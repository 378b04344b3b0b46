/*
 * DESIGN: see hostio.h — the bounded batch queue between a job and its embedding host.
 */
#include "connectors/hostio.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/thread.h"
#include "base/time.h"

struct ck_hostq {
  ck_mutex_t mu;
  ck_cond_t not_full;
  int efd;              /* readable: a batch, the end or an abort arrived */
  _Atomic int refs;
  int cap, head, count;
  ck_batch_t **ring;
  int end_code;         /* the end's code, valid once ended */
  bool ended, aborted;
  char msg[CK_ERR_MSG];
  int blocked;          /* puts waiting for room */
  int64_t batches_in, batches_out, rows_in, rows_out;
  int mode;             /* CK_HOSTQ_*: fixed once */
  char *key;            /* the changelog's upsert key (JSON), or NULL */
};

ck_hostq_t *ck_hostq_new(int capacity) {
  ck_hostq_t *q = ck_calloc(1, sizeof *q);
  ck_mutex_init(&q->mu);
  ck_cond_init(&q->not_full);
  q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  q->refs = 1;
  q->cap = capacity > 0 ? capacity : 16;
  q->ring = ck_calloc((size_t)q->cap, sizeof *q->ring);
  return q;
}

void ck_hostq_ref(ck_hostq_t *q) { atomic_fetch_add(&q->refs, 1); }

static void drop_batches(ck_hostq_t *q) {
  for (; q->count; q->count--, q->head = (q->head + 1) % q->cap) {
    ck_batch_free(q->ring[q->head]);
    q->ring[q->head] = NULL;
  }
}

void ck_hostq_unref(ck_hostq_t *q) {
  if (!q || atomic_fetch_sub(&q->refs, 1) != 1) return;
  drop_batches(q);
  ck_free(q->ring);
  ck_free(q->key);
  if (q->efd >= 0) close(q->efd);
  ck_cond_fini(&q->not_full);
  ck_mutex_fini(&q->mu);
  ck_free(q);
}

static void signal_consumer(ck_hostq_t *q) {
  uint64_t one = 1;
  ssize_t w = write(q->efd, &one, sizeof one);
  (void)w;
}

int ck_hostq_put(ck_hostq_t *q, ck_batch_t *b, ck_error_t *err) {
  ck_mutex_lock(&q->mu);
  q->blocked++;
  while (q->count == q->cap && !q->ended && !q->aborted) ck_cond_wait(&q->not_full, &q->mu);
  q->blocked--;
  if (q->ended || q->aborted) { /* nobody takes batches any more */
    int code = q->end_code ? q->end_code : CK_ECANCELLED;
    ck_error_set(err, code, "%s", q->msg[0] ? q->msg : "the table's queue was closed");
    ck_mutex_unlock(&q->mu);
    ck_batch_free(b);
    return code;
  }
  q->ring[(q->head + q->count++) % q->cap] = b;
  q->batches_in++;
  q->rows_in += (int64_t)b->nrows;
  signal_consumer(q);
  ck_mutex_unlock(&q->mu);
  return 0;
}

int ck_hostq_get(ck_hostq_t *q, ck_batch_t **out, int64_t timeout_ms, const int *wake_fd,
                 ck_error_t *err) {
  int64_t deadline = timeout_ms < 0 ? -1 : ck_mono_ms() + timeout_ms;
  for (;;) {
    uint64_t v;
    ssize_t r = read(q->efd, &v, sizeof v); /* reset before looking: a later put signals again */
    (void)r;
    ck_mutex_lock(&q->mu);
    if (!q->aborted && q->count) {
      *out = q->ring[q->head];
      q->ring[q->head] = NULL;
      q->head = (q->head + 1) % q->cap;
      q->count--;
      q->batches_out++;
      q->rows_out += (int64_t)(*out)->nrows;
      ck_cond_signal(&q->not_full);
      ck_mutex_unlock(&q->mu);
      return 1;
    }
    if (q->aborted || q->ended) {
      int code = q->end_code;
      if (code) ck_error_set(err, code, "%s", q->msg);
      ck_mutex_unlock(&q->mu);
      return code ? code : 3;
    }
    ck_mutex_unlock(&q->mu);
    int64_t left = deadline < 0 ? 1000 : deadline - ck_mono_ms();
    if (left <= 0) return 0;
    struct pollfd pfd[2] = {{.fd = q->efd, .events = POLLIN},
                            {.fd = wake_fd ? *wake_fd : -1, .events = POLLIN}};
    int n = poll(pfd, wake_fd ? 2 : 1, left > 1000 ? 1000 : (int)left);
    if (n > 0 && wake_fd && (pfd[1].revents & POLLIN)) return 0;
  }
}

static void finish(ck_hostq_t *q, bool abort, int code, const char *msg) {
  ck_mutex_lock(&q->mu);
  if (!q->ended && !q->aborted) {
    q->ended = !abort;
    q->aborted = abort;
    q->end_code = abort && !code ? CK_ECANCELLED : code;
    snprintf(q->msg, sizeof q->msg, "%s", msg ? msg : "");
    if (abort) drop_batches(q);
  }
  ck_cond_broadcast(&q->not_full);
  signal_consumer(q);
  ck_mutex_unlock(&q->mu);
}

void ck_hostq_end(ck_hostq_t *q, int code, const char *msg) { finish(q, false, code, msg); }
void ck_hostq_abort(ck_hostq_t *q, int code, const char *msg) { finish(q, true, code, msg); }

bool ck_hostq_ended(ck_hostq_t *q) {
  ck_mutex_lock(&q->mu);
  bool e = q->ended || q->aborted;
  ck_mutex_unlock(&q->mu);
  return e;
}

bool ck_hostq_wait_ready(ck_hostq_t *q, int64_t timeout_ms) {
  int64_t deadline = timeout_ms < 0 ? -1 : ck_mono_ms() + timeout_ms;
  for (;;) {
    ck_mutex_lock(&q->mu);
    bool ready = q->count || q->ended || q->aborted;
    ck_mutex_unlock(&q->mu);
    if (ready) return true;
    int64_t left = deadline < 0 ? 1000 : deadline - ck_mono_ms();
    if (left <= 0) return false;
    /* the eventfd is the consumer's: look without reading it */
    struct pollfd pfd = {.fd = q->efd, .events = POLLIN};
    if (poll(&pfd, 1, left > 1000 ? 1000 : (int)left) > 0) {
      ck_mutex_lock(&q->mu);
      ready = q->count || q->ended || q->aborted;
      ck_mutex_unlock(&q->mu);
      if (ready) return true;
      uint64_t v; /* a stale signal (the batch it announced is taken): clear it */
      ssize_t r = read(q->efd, &v, sizeof v);
      (void)r;
    }
  }
}

void ck_hostq_stats(ck_hostq_t *q, ck_hostq_stats_t *out) {
  ck_mutex_lock(&q->mu);
  *out = (ck_hostq_stats_t){q->cap, q->count, q->blocked, q->batches_in, q->batches_out,
                            q->rows_in, q->rows_out};
  ck_mutex_unlock(&q->mu);
}

int ck_hostq_mode(ck_hostq_t *q, int want, const char *key, const char **key_out) {
  ck_mutex_lock(&q->mu);
  if (q->mode == CK_HOSTQ_UNSET && want != CK_HOSTQ_UNSET) {
    q->mode = want;
    q->key = want == CK_HOSTQ_CHANGELOG && key ? ck_strdup(key) : NULL;
  }
  int mode = q->mode;
  if (key_out) *key_out = q->key;
  ck_mutex_unlock(&q->mu);
  return mode;
}
