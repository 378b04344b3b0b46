/* DESIGN: CRC32C (Castagnoli), the checksum beside every snapshot. Table-driven software
 * implementation, slicing by 8; incremental: pass the previous value to continue. */
#ifndef CK_BASE_CRC32C_H
#define CK_BASE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t ck_crc32c(uint32_t crc, const void *data, size_t n);

#endif
