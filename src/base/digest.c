/* DESIGN: see digest.h. One-shot EVP digests. */
#include "base/digest.h"

#include <openssl/evp.h>

static void digest(const EVP_MD *md, const void *data, size_t n, uint8_t *out) {
  unsigned int len = 0;
  EVP_Digest(data ? data : "", n, out, &len, md, NULL);
}

void ck_md5(const void *data, size_t n, uint8_t out[16]) { digest(EVP_md5(), data, n, out); }

void ck_sha256(const void *data, size_t n, uint8_t out[32]) { digest(EVP_sha256(), data, n, out); }

void ck_hex_lower(const uint8_t *p, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  out[2 * n] = 0;
}

void ck_sha256_hex(const void *data, size_t n, char out[65]) {
  uint8_t md[32];
  ck_sha256(data, n, md);
  ck_hex_lower(md, 32, out);
}
