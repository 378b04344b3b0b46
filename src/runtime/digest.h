/*
 * DESIGN: MD5 (RFC 1321) and SHA-256 (FIPS 180-4) of a byte string, for the SQL functions MD5
 * and SHA256. Small and self-contained, so the engine links no crypto library for two hash
 * functions whose results are only ever shown, never trusted for security.
 * Threads: pure functions.
 */
#ifndef CK_RUNTIME_DIGEST_H
#define CK_RUNTIME_DIGEST_H

#include <stddef.h>
#include <stdint.h>

void ck_md5(const void *data, size_t n, uint8_t out[16]);
void ck_sha256(const void *data, size_t n, uint8_t out[32]);

#endif
