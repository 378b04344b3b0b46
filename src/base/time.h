/*
 * DESIGN: clocks. Monotonic time for deadlines and intervals, wall time (epoch ms) only for
 * things a person reads. Event time never comes from here: output must be a function of the
 * input.
 */
#ifndef CK_BASE_TIME_H
#define CK_BASE_TIME_H

#include <stdint.h>

int64_t ck_mono_ns(void);
int64_t ck_mono_ms(void);
int64_t ck_wall_ms(void);
/* Sleeps for ms (used only for backoff and pacing, never as synchronisation). */
void ck_sleep_ms(int64_t ms);

#endif
