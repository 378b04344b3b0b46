/*
 * DESIGN: AWS Signature Version 4 for S3 requests (the header form: an Authorization header,
 * not a presigned URL). One function builds the canonical request itself — curl's own
 * --aws-sigv4 does not sort or encode the query string and expects the path pre-encoded, so
 * it cannot be relied on — and returns the headers the request must carry.
 *
 * The caller gives the request as it means it: the method, the path and query values NOT
 * encoded (the signer encodes them the way S3 wants: every byte but A-Z a-z 0-9 - . _ ~
 * percent-encoded, '/' kept in the path and encoded in query values), the headers it will
 * send (any case, any order; values are trimmed and inner runs of spaces folded to one, as the
 * canonical form wants), and the payload's SHA-256 in hex (or "UNSIGNED-PAYLOAD").
 * x-amz-date and x-amz-content-sha256 are added and signed; every header given is signed.
 * Checked against the examples AWS publishes for S3 (tests/unit/test_base_sigv4.c).
 * Hashing: base/digest (SHA-256) and OpenSSL's HMAC.
 * Threads: any; no shared state.
 */
#ifndef CK_BASE_SIGV4_H
#define CK_BASE_SIGV4_H

#include <stddef.h>

#include "base/buf.h"
#include "base/digest.h"

typedef struct ck_sigv4_param {
  const char *name;
  const char *value; /* "" for a parameter without a value (?lifecycle) */
} ck_sigv4_param_t;

typedef struct ck_sigv4_header {
  const char *name;
  const char *value;
} ck_sigv4_header_t;

typedef struct ck_sigv4_req {
  const char *method;                /* "GET", "PUT", ... */
  const char *path;                  /* "/bucket/key" or "/key", not encoded */
  const ck_sigv4_param_t *query;     /* any order */
  int nquery;
  const ck_sigv4_header_t *headers;  /* must include host */
  int nheaders;
  const char *payload_sha256;        /* 64 hex digits, or "UNSIGNED-PAYLOAD" */
  const char *access_key;
  const char *secret_key;
  const char *session_token;         /* NULL: none; else sent and signed as x-amz-security-token */
  const char *region;                /* "us-east-1" */
  const char *service;               /* "s3" */
  const char *amz_date;              /* "YYYYMMDDTHHMMSSZ" (UTC) */
} ck_sigv4_req_t;

#define CK_SIGV4_SHA256_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* Percent-encodes s as SigV4 wants (keep_slash: a path, where '/' stays) onto out. */
void ck_sigv4_encode(ck_buf_t *out, const char *s, int keep_slash);
/* The canonical query string of the parameters (sorted by encoded name, then value). */
void ck_sigv4_canonical_query(const ck_sigv4_param_t *q, int n, ck_buf_t *out);
/* Signs req. Appends to headers_out the lines the request must send besides its own headers,
 * each "Name: value\n": x-amz-date, x-amz-content-sha256, x-amz-security-token (when given)
 * and Authorization. With canonical (not NULL) also the canonical request, for tests and
 * error messages. The signature alone (64 hex digits) in sig_out when not NULL. */
void ck_sigv4_sign(const ck_sigv4_req_t *req, ck_buf_t *headers_out, ck_buf_t *canonical,
                   char sig_out[65]);
/* The amz_date of a UNIX time. */
void ck_sigv4_date(long long unix_seconds, char out[17]);

#endif
