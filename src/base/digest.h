/*
 * DESIGN: the message digests clink uses, one place for all of them, over OpenSSL's
 * libcrypto: SHA-256 (S3 request signing, incident bundle checksums, the SQL function SHA256)
 * and MD5 (the SQL function MD5 only: shown, never trusted).
 * Threads: pure functions.
 */
#ifndef CK_BASE_DIGEST_H
#define CK_BASE_DIGEST_H

#include <stddef.h>
#include <stdint.h>

void ck_md5(const void *data, size_t n, uint8_t out[16]);
void ck_sha256(const void *data, size_t n, uint8_t out[32]);
/* The SHA-256 of n bytes as 64 lowercase hex digits and a NUL. */
void ck_sha256_hex(const void *data, size_t n, char out[65]);
/* n bytes as 2n lowercase hex digits and a NUL. */
void ck_hex_lower(const uint8_t *p, size_t n, char *out);

#endif
