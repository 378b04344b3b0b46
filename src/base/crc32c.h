/* DESIGN: CRC32C (Castagnoli), the checksum beside every snapshot, every batch the cluster's
 * data plane ships, and (on request) every Kafka record batch. The CPU's CRC32 instruction
 * where it has one (SSE4.2), else tables, slicing by 8; incremental: pass the previous value to
 * continue. */
#ifndef CK_BASE_CRC32C_H
#define CK_BASE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t ck_crc32c(uint32_t crc, const void *data, size_t n);
/* The same through the tables whatever the CPU (so tests cover both ways). */
uint32_t ck_crc32c_portable(uint32_t crc, const void *data, size_t n);

#endif
