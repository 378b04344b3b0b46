/*
 * DESIGN: which exactly-once sink instances are alive in this process. Two sink nodes of one
 * job writing the same destination (two INSERT INTO it) must not share the names of their
 * staged output (prepared transactions, stage tables): each claims, per output identity and
 * subtask, the lowest instance number no live sink holds, and mixes it into its names. Which
 * node gets which number may differ from run to run; a restored sink adopts the names its
 * checkpoint recorded, so that is harmless.
 *
 * Threads: any (sinks open on their own threads); one mutex.
 */
#ifndef CK_CONNECTORS_SINK_LIVE_H
#define CK_CONNECTORS_SINK_LIVE_H

#include <stdint.h>

/* The lowest instance number not held by a live sink with this identity and subtask; -1 when
 * the registry is full (CK_SINK_LIVE_MAX). */
#define CK_SINK_LIVE_MAX 1024
int ck_sink_live_claim(uint64_t identity, int subtask);
void ck_sink_live_release(uint64_t identity, int subtask, int instance);

#endif
