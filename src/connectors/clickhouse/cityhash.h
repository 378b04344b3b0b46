/*
 * DESIGN: CityHash128, version 1.0.2 — the checksum of ClickHouse's compressed frames.
 *
 * ClickHouse checks every compressed frame of its native protocol with CityHash128 as
 * published in CityHash 1.0.2 (later CityHash releases changed the function, and the server
 * kept the old one), over the frame's 9-byte header and its compressed bytes. The result is
 * the pair (first, second) of 64-bit words that the reference code returns; on the wire the
 * first word comes first, each little-endian. Written here from the published algorithm.
 *
 * Threads: any; no state.
 */
#ifndef CK_CONNECTORS_CLICKHOUSE_CITYHASH_H
#define CK_CONNECTORS_CLICKHOUSE_CITYHASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct ck_city128 {
  uint64_t first, second;
} ck_city128_t;

ck_city128_t ck_cityhash128(const void *data, size_t len);
ck_city128_t ck_cityhash128_seed(const void *data, size_t len, ck_city128_t seed);

#endif
