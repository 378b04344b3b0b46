/* DESIGN: see ch_compress.h. LZ4 comes from liblz4 (block format, no frame format); ZSTD, which
 * only a server sends (the 26.9 test server answers an LZ4-compressed insert's blocks in ZSTD),
 * from libzstd, decompression only. */
#include "connectors/clickhouse/ch_compress.h"

#include <lz4.h>
#include <zstd.h>
#include <string.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "connectors/clickhouse/ch_proto.h"
#include "connectors/clickhouse/cityhash.h"

static void put_checksum(uint8_t *dst, const uint8_t *frame, size_t len) {
  ck_city128_t h = ck_cityhash128(frame, len);
  ck_put_le64(dst, h.first);
  ck_put_le64(dst + 8, h.second);
}

void ck_ch_compress(const void *data, size_t len, int method, ck_buf_t *out) {
  const char *p = data;
  do {
    size_t chunk = len < CK_CH_MAX_FRAME_INPUT ? len : CK_CH_MAX_FRAME_INPUT;
    size_t bound = method == CK_CH_METHOD_LZ4 ? (size_t)LZ4_compressBound((int)chunk) : chunk;
    ck_buf_reserve(out, CK_CH_FRAME_CHECKSUM + CK_CH_FRAME_HEADER + bound);
    uint8_t *frame = (uint8_t *)out->data + out->len;
    uint8_t *hdr = frame + CK_CH_FRAME_CHECKSUM;
    size_t payload;
    if (method == CK_CH_METHOD_LZ4) {
      int n = LZ4_compress_default(p, (char *)hdr + CK_CH_FRAME_HEADER, (int)chunk, (int)bound);
      ck_assert(n > 0 || chunk == 0);
      payload = (size_t)n;
    } else {
      memcpy(hdr + CK_CH_FRAME_HEADER, p, chunk);
      payload = chunk;
    }
    uint32_t csize = (uint32_t)(payload + CK_CH_FRAME_HEADER), usize = (uint32_t)chunk;
    hdr[0] = (uint8_t)method;
    ck_put_le32(hdr + 1, csize);
    ck_put_le32(hdr + 5, usize);
    put_checksum(frame, hdr, csize);
    out->len += CK_CH_FRAME_CHECKSUM + csize;
    out->data[out->len] = 0;
    p += chunk;
    len -= chunk;
  } while (len);
}

int ck_ch_frame_decode(const uint8_t *p, size_t avail, size_t max_out, ck_buf_t *out,
                       size_t *used, size_t *need, ck_error_t *err) {
  *need = CK_CH_FRAME_CHECKSUM + CK_CH_FRAME_HEADER;
  if (avail < *need) return 1;
  const uint8_t *hdr = p + CK_CH_FRAME_CHECKSUM;
  uint32_t csize = ck_get_le32(hdr + 1);
  uint32_t usize = ck_get_le32(hdr + 5);
  int method = hdr[0];
  if (method != CK_CH_METHOD_LZ4 && method != CK_CH_METHOD_ZSTD && method != CK_CH_METHOD_NONE) {
    return ck_error_set(err, CK_EPROTO, "unknown compression method 0x%02x in a compressed frame",
                        method);
  }
  if (csize < CK_CH_FRAME_HEADER || csize > (1u << 30))
    return ck_error_set(err, CK_EPROTO, "compressed frame of impossible size %u", csize);
  if (usize > max_out || usize > (1u << 30))
    return ck_error_set(err, CK_EPROTO, "compressed frame would decompress to %u bytes, above "
                        "the limit of %zu", usize, max_out);
  size_t payload = csize - CK_CH_FRAME_HEADER;
  /* LZ4 cannot expand more than 255 times; ZSTD can, and is bounded by max_out alone */
  if (method == CK_CH_METHOD_NONE ? payload != usize
      : method == CK_CH_METHOD_LZ4 && (uint64_t)usize > (uint64_t)payload * 255 + 16)
    return ck_error_set(err, CK_EPROTO, "compressed frame sizes disagree (%zu bytes for %u)",
                        payload, usize);
  *need = CK_CH_FRAME_CHECKSUM + (size_t)csize;
  if (avail < *need) return 1;
  ck_city128_t h = ck_cityhash128(hdr, csize);
  if (ck_get_le64(p) != h.first || ck_get_le64(p + 8) != h.second)
    return ck_error_set(err, CK_EPROTO, "checksum mismatch in a compressed frame of %u bytes "
                        "(data corrupted in transit?)", csize);
  ck_buf_reserve(out, usize);
  if (method == CK_CH_METHOD_NONE) {
    memcpy(out->data + out->len, hdr + CK_CH_FRAME_HEADER, usize);
  } else if (method == CK_CH_METHOD_ZSTD) {
    size_t n = ZSTD_decompress(out->data + out->len, usize, hdr + CK_CH_FRAME_HEADER, payload);
    if (ZSTD_isError(n) || n != usize)
      return ck_error_set(err, CK_EPROTO, "could not decompress a ZSTD frame of %u bytes%s%s",
                          csize, ZSTD_isError(n) ? ": " : "",
                          ZSTD_isError(n) ? ZSTD_getErrorName(n) : "");
  } else {
    int n = LZ4_decompress_safe((const char *)hdr + CK_CH_FRAME_HEADER, out->data + out->len,
                                (int)payload, (int)usize);
    if (n < 0 || (uint32_t)n != usize)
      return ck_error_set(err, CK_EPROTO, "could not decompress an LZ4 frame of %u bytes", csize);
  }
  out->len += usize;
  out->data[out->len] = 0;
  *used = *need;
  return 0;
}
