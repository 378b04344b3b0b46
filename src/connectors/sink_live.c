/* DESIGN: see sink_live.h. A small table under one mutex; sinks open rarely. */
#include "connectors/sink_live.h"

#include <pthread.h>
#include <stdbool.h>

typedef struct live_sink {
  uint64_t identity;
  int subtask, instance;
} live_sink_t;

static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static live_sink_t live[CK_SINK_LIVE_MAX];
static int nlive;

int ck_sink_live_claim(uint64_t identity, int subtask) {
  pthread_mutex_lock(&live_mu);
  int instance = 0;
  for (bool taken = true; taken;) {
    taken = false;
    for (int i = 0; i < nlive && !taken; i++)
      taken = live[i].identity == identity && live[i].subtask == subtask &&
              live[i].instance == instance;
    if (taken) instance++;
  }
  if (nlive < CK_SINK_LIVE_MAX) live[nlive++] = (live_sink_t){identity, subtask, instance};
  else instance = -1;
  pthread_mutex_unlock(&live_mu);
  return instance;
}

void ck_sink_live_release(uint64_t identity, int subtask, int instance) {
  pthread_mutex_lock(&live_mu);
  for (int i = 0; i < nlive; i++)
    if (live[i].identity == identity && live[i].subtask == subtask &&
        live[i].instance == instance) {
      live[i] = live[--nlive];
      break;
    }
  pthread_mutex_unlock(&live_mu);
}
