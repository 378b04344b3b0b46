/*
 * DESIGN: the one set of fixed-width integer and varint readers and writers every wire and
 * file format of the tree uses (batches on the wire, snapshots, the control and data
 * protocols, Kafka's and ClickHouse's protocols, connector positions).
 *
 * Fixed width. ck_get_le32(p) / ck_put_le32(p, v) and their 16- and 64-bit and big-endian
 * siblings load and store at any alignment, whatever the host's byte order (the compiler turns
 * them into one load or store, byte-swapped where needed). The caller guarantees the bytes
 * are there; ck_take_le32/64 check them within [*p, end) instead. ck_buf_put_* append to a
 * ck_buf_t.
 *
 * Varints: unsigned LEB128 (7 bits a byte, low groups first, the high bit set on every byte
 * but the last), as Kafka, ClickHouse (VarUInt) and protobuf write them; at most
 * CK_VARINT_MAX (10) bytes, the bits of a 10th byte beyond 64 dropped (as every reader here
 * always did). Signed values are zigzag-encoded (0, -1, 1, -2 … as 0, 1, 2, 3 …), Kafka's
 * varint and varlong. ck_uvarint_peek tells "need more" (0) from "too long" (-1) for a
 * resumable parser; ck_uvarint_get and ck_varint_get read within [*p, end) and are false on
 * truncated or over-long input, *p moved past the varint only when true. ck_varint_get is
 * inlined with a one- and two-byte fast path (the Kafka record reader's per-field cost).
 *
 * Bounds-checked cursor: ck_rd_t reads fixed-width fields off [p, end) with a sticky failure
 * flag: a read past the end returns 0 and sets bad, and every read after it does the same, so
 * a decoder checks once at the end.
 *
 * Threads: pure functions; no state.
 */
#ifndef CK_BASE_BYTES_H
#define CK_BASE_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/buf.h"

#define CK_VARINT_MAX 10

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define CK_HOST_BE 1
#else
#define CK_HOST_BE 0
#endif

/* ---- fixed width, in memory ---- */

static inline uint16_t ck_get_le16(const void *p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return CK_HOST_BE ? __builtin_bswap16(v) : v;
}
static inline uint32_t ck_get_le32(const void *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return CK_HOST_BE ? __builtin_bswap32(v) : v;
}
static inline uint64_t ck_get_le64(const void *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return CK_HOST_BE ? __builtin_bswap64(v) : v;
}
static inline uint16_t ck_get_be16(const void *p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return CK_HOST_BE ? v : __builtin_bswap16(v);
}
static inline uint32_t ck_get_be32(const void *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return CK_HOST_BE ? v : __builtin_bswap32(v);
}
static inline uint64_t ck_get_be64(const void *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return CK_HOST_BE ? v : __builtin_bswap64(v);
}

static inline void ck_put_le16(void *p, uint16_t v) {
  if (CK_HOST_BE) v = __builtin_bswap16(v);
  memcpy(p, &v, 2);
}
static inline void ck_put_le32(void *p, uint32_t v) {
  if (CK_HOST_BE) v = __builtin_bswap32(v);
  memcpy(p, &v, 4);
}
static inline void ck_put_le64(void *p, uint64_t v) {
  if (CK_HOST_BE) v = __builtin_bswap64(v);
  memcpy(p, &v, 8);
}
static inline void ck_put_be16(void *p, uint16_t v) {
  if (!CK_HOST_BE) v = __builtin_bswap16(v);
  memcpy(p, &v, 2);
}
static inline void ck_put_be32(void *p, uint32_t v) {
  if (!CK_HOST_BE) v = __builtin_bswap32(v);
  memcpy(p, &v, 4);
}
static inline void ck_put_be64(void *p, uint64_t v) {
  if (!CK_HOST_BE) v = __builtin_bswap64(v);
  memcpy(p, &v, 8);
}

/* The low `width` (1 to 8) bytes of v, little-endian; and back (zero-extended). */
static inline void ck_put_le_n(void *p, uint64_t v, int width) {
  uint8_t *o = p;
  for (int i = 0; i < width; i++) o[i] = (uint8_t)(v >> (8 * i));
}
static inline uint64_t ck_get_le_n(const void *p, int width) {
  const uint8_t *s = p;
  uint64_t v = 0;
  for (int i = width - 1; i >= 0; i--) v = v << 8 | s[i];
  return v;
}

/* The same within [*p, end), moving *p past it: false (nothing read) when fewer bytes are left. */
static inline bool ck_take_le32(const uint8_t **p, const uint8_t *end, uint32_t *v) {
  if (end - *p < 4) return false;
  *v = ck_get_le32(*p);
  *p += 4;
  return true;
}
static inline bool ck_take_le64(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  if (end - *p < 8) return false;
  *v = ck_get_le64(*p);
  *p += 8;
  return true;
}

/* ---- fixed width, appended ---- */

static inline void ck_buf_put_u8(ck_buf_t *buf, uint8_t v) { ck_buf_append(buf, &v, 1); }
static inline void ck_buf_put_le16(ck_buf_t *buf, uint16_t v) {
  uint8_t b[2];
  ck_put_le16(b, v);
  ck_buf_append(buf, b, 2);
}
static inline void ck_buf_put_le32(ck_buf_t *buf, uint32_t v) {
  uint8_t b[4];
  ck_put_le32(b, v);
  ck_buf_append(buf, b, 4);
}
static inline void ck_buf_put_le64(ck_buf_t *buf, uint64_t v) {
  uint8_t b[8];
  ck_put_le64(b, v);
  ck_buf_append(buf, b, 8);
}
static inline void ck_buf_put_be16(ck_buf_t *buf, uint16_t v) {
  uint8_t b[2];
  ck_put_be16(b, v);
  ck_buf_append(buf, b, 2);
}
static inline void ck_buf_put_be32(ck_buf_t *buf, uint32_t v) {
  uint8_t b[4];
  ck_put_be32(b, v);
  ck_buf_append(buf, b, 4);
}
static inline void ck_buf_put_be64(ck_buf_t *buf, uint64_t v) {
  uint8_t b[8];
  ck_put_be64(b, v);
  ck_buf_append(buf, b, 8);
}
static inline void ck_buf_put_le_n(ck_buf_t *buf, uint64_t v, int width) {
  uint8_t b[8];
  ck_put_le_n(b, v, width);
  ck_buf_append(buf, b, (size_t)width);
}

/* ---- varints ---- */

static inline uint64_t ck_zigzag_encode(int64_t v) {
  return ((uint64_t)v << 1) ^ (uint64_t)(0 - ((uint64_t)v >> 63));
}
static inline int64_t ck_zigzag_decode(uint64_t u) { return (int64_t)((u >> 1) ^ (0 - (u & 1))); }

/* Writes v at p (room for CK_VARINT_MAX bytes); the bytes written. */
static inline size_t ck_uvarint_put(void *p, uint64_t v) {
  uint8_t *o = p;
  size_t n = 0;
  while (v >= 0x80) {
    o[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  o[n++] = (uint8_t)v;
  return n;
}
static inline size_t ck_uvarint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, n++;
  return n;
}
static inline void ck_buf_put_uvarint(ck_buf_t *buf, uint64_t v) {
  uint8_t b[CK_VARINT_MAX];
  ck_buf_append(buf, b, ck_uvarint_put(b, v));
}
static inline void ck_buf_put_varint(ck_buf_t *buf, int64_t v) {
  ck_buf_put_uvarint(buf, ck_zigzag_encode(v));
}

/* The varint at the start of the n bytes at p: its length (> 0) with *v set, 0 when the n bytes
 * end inside it (need more), -1 when it runs longer than CK_VARINT_MAX bytes. */
static inline int ck_uvarint_peek(const void *p, size_t n, uint64_t *v) {
  const uint8_t *s = p;
  uint64_t x = 0;
  for (size_t i = 0; i < n && i < CK_VARINT_MAX; i++) {
    x |= (uint64_t)(s[i] & 0x7f) << (7 * i);
    if (!(s[i] & 0x80)) {
      *v = x;
      return (int)i + 1;
    }
  }
  return n >= CK_VARINT_MAX ? -1 : 0;
}

/* An unsigned varint in [*p, end): false when truncated or too long (*p then unmoved). */
static inline bool ck_uvarint_get(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  int n = ck_uvarint_peek(*p, (size_t)(end - *p), v);
  if (n <= 0) return false;
  *p += n;
  return true;
}

/* A zigzag varint in [*p, end), inlined: one- and two-byte values without a loop. */
static inline __attribute__((always_inline)) bool ck_varint_get(const uint8_t **p,
                                                                 const uint8_t *end,
                                                                 int64_t *v) {
  const uint8_t *s = *p;
  if (__builtin_expect(s < end && s[0] < 0x80, 1)) {
    *v = ck_zigzag_decode(s[0]);
    *p = s + 1;
    return true;
  }
  if (__builtin_expect(end - s >= 2 && s[1] < 0x80, 1)) {
    *v = ck_zigzag_decode((uint64_t)(s[0] & 0x7f) | (uint64_t)s[1] << 7);
    *p = s + 2;
    return true;
  }
  uint64_t u = 0; /* longer: the loop (the same limits as ck_uvarint_peek) */
  for (int shift = 0; shift < 7 * CK_VARINT_MAX && s < end; shift += 7) {
    uint8_t b = *s++;
    u |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = ck_zigzag_decode(u);
      *p = s;
      return true;
    }
  }
  return false;
}

/* ---- a bounds-checked cursor ---- */

typedef struct ck_rd {
  const uint8_t *p, *end;
  bool bad; /* a read ran past end: sticky */
} ck_rd_t;

static inline ck_rd_t ck_rd_of(const void *p, size_t n) {
  return (ck_rd_t){(const uint8_t *)p, (const uint8_t *)p + n, false};
}
static inline size_t ck_rd_left(const ck_rd_t *r) { return (size_t)(r->end - r->p); }
/* True when n more bytes are there; otherwise sets bad. */
static inline bool ck_rd_need(ck_rd_t *r, size_t n) {
  if (r->bad || ck_rd_left(r) < n) {
    r->bad = true;
    return false;
  }
  return true;
}
/* The next n bytes (consumed), or NULL with bad set. */
static inline const uint8_t *ck_rd_take(ck_rd_t *r, size_t n) {
  if (!ck_rd_need(r, n)) return NULL;
  const uint8_t *s = r->p;
  r->p += n;
  return s;
}
static inline uint8_t ck_rd_u8(ck_rd_t *r) { return ck_rd_need(r, 1) ? *r->p++ : 0; }
#define CK_RD_FIXED_(name, type, n)                                   \
  static inline type ck_rd_##name(ck_rd_t *r) {                       \
    const uint8_t *s = ck_rd_take(r, n);                              \
    return s ? ck_get_##name(s) : 0;                                  \
  }
CK_RD_FIXED_(le16, uint16_t, 2)
CK_RD_FIXED_(le32, uint32_t, 4)
CK_RD_FIXED_(le64, uint64_t, 8)
CK_RD_FIXED_(be16, uint16_t, 2)
CK_RD_FIXED_(be32, uint32_t, 4)
CK_RD_FIXED_(be64, uint64_t, 8)
#undef CK_RD_FIXED_
/* An unsigned varint (0 with bad set when truncated or too long). */
static inline uint64_t ck_rd_uvarint(ck_rd_t *r) {
  uint64_t v = 0;
  if (r->bad || !ck_uvarint_get(&r->p, r->end, &v)) {
    r->bad = true;
    return 0;
  }
  return v;
}

#endif
