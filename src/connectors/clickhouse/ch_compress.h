/*
 * DESIGN: ClickHouse's compressed framing of native blocks.
 *
 * A frame is: 16 bytes CityHash128 v1.0.2 (cityhash.h) of what follows it, 1 byte method
 * (0x82 LZ4, 0x02 none), u32 size of header + payload, u32 uncompressed size, the payload.
 * A block's serialisation may span several frames (we cut at CK_CH_MAX_FRAME_INPUT bytes);
 * the server ends a frame at the end of every block it sends.
 *
 * Threads: any; no state.
 */
#ifndef CK_CONNECTORS_CLICKHOUSE_CH_COMPRESS_H
#define CK_CONNECTORS_CLICKHOUSE_CH_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"

/* Appends the frames of data (method CK_CH_METHOD_LZ4 or CK_CH_METHOD_NONE) to out. */
void ck_ch_compress(const void *data, size_t len, int method, ck_buf_t *out);

/* Decodes the frame at p (avail bytes there): 1 when it is not whole yet (*need says how many
 * bytes the whole frame has, once the header is in), 0 with its bytes appended to out and
 * *used set, or a negative error (bad checksum, method, sizes or payload). max_out bounds the
 * uncompressed size a frame may claim. */
int ck_ch_frame_decode(const uint8_t *p, size_t avail, size_t max_out, ck_buf_t *out,
                       size_t *used, size_t *need, ck_error_t *err);

#endif
