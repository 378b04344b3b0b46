/*
 * DESIGN: a small S3 client — what the checkpoint store needs of an object store, over
 * libcurl, every request signed with SigV4 (base/sigv4.h).
 *
 * Operations: PUT of a whole object (optionally conditional: If-None-Match: * writes a key
 * exactly once, 412 → CK_EEXISTS), GET (404 → CK_ENOTFOUND), HEAD, DELETE (a missing key is
 * not an error, as S3 itself says), and LIST (ListObjectsV2, every page, in key order).
 * An object is visible whole or not at all: one of at most part_size bytes (default 64 MiB) is
 * one PUT, which S3 makes atomic; a larger one a multipart upload (created, its parts put in
 * turn, completed only when every part is in — the object appears then, whole — and aborted
 * on any failure before, so no part of it is ever visible). Parts are part_size bytes, the
 * last one less; at most CK_S3_MAX_PARTS of them (S3's limit). S3 refuses parts under 5 MiB
 * but the last (EntityTooSmall), so a smaller part_size is raised to CK_S3_PART_SIZE_MIN.
 *
 * Where it connects: an endpoint URL ("http://127.0.0.1:8333"; default
 * https://s3.<region>.amazonaws.com), path-style addressing (endpoint/bucket/key — what
 * S3-compatible stores want) or virtual-host style (bucket.endpoint/key — AWS's default).
 * Credentials and defaults come from the environment as every S3 tool reads them:
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION or
 * AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL; explicit config wins.
 *
 * Errors: "could not <op> s3://bucket/key: <what the server said>" with S3's error code and
 * message, the HTTP status, or curl's reason when nothing came back (CK_ECONNECT: refused or
 * unreachable; CK_ETIMEOUT: the request's deadline; CK_EREMOTE: the server refused, e.g. a
 * 403 with SignatureDoesNotMatch; CK_EIO: a 5xx). Secrets never appear in a message.
 * Threads: a client may be used from several threads at once (each request its own curl
 * handle; connections shared through a curl share object under a lock).
 */
#ifndef CK_BASE_S3_H
#define CK_BASE_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"

#define CK_S3_PART_SIZE_DEFAULT ((size_t)64 << 20) /* objects above go multipart */
#define CK_S3_PART_SIZE_MIN ((size_t)5 << 20)      /* S3's smallest part but the last */
#define CK_S3_MAX_PARTS 10000                        /* S3's limit on one upload's parts */

typedef struct ck_s3_config {
  const char *endpoint;      /* NULL: the environment, else AWS's regional endpoint */
  const char *region;        /* NULL: the environment, else "us-east-1" */
  int path_style;            /* 1 path style, 0 virtual host, -1: path style when an endpoint is
                                given (S3-compatible stores), else virtual host */
  const char *access_key;    /* NULL: the environment */
  const char *secret_key;
  const char *session_token;
  long timeout_ms;           /* per request; 0: 30 s */
  size_t part_size;          /* 0: CK_S3_PART_SIZE_DEFAULT; larger objects go multipart */
  /* tests: called before each part of a multipart upload is put (part from 1); non-zero
   * fails the upload there, as a connection lost midway would */
  int (*on_part)(void *ctx, int part);
  void *on_part_ctx;
} ck_s3_config_t;

typedef struct ck_s3 ck_s3_t;

/* Parses "s3://bucket/prefix" into bucket and prefix (without leading or trailing '/').
 * CK_EINVAL naming what is wrong when it is not one. */
int ck_s3_parse_url(const char *url, char *bucket, size_t bcap, char *prefix, size_t pcap,
                    ck_error_t *err);
bool ck_s3_is_url(const char *s);

/* CK_EINVAL when credentials are missing (naming the variables to set). */
int ck_s3_open(const ck_s3_config_t *cfg, const char *bucket, ck_s3_t **out, ck_error_t *err);
void ck_s3_close(ck_s3_t *s3);
const char *ck_s3_bucket(const ck_s3_t *s3);

enum { CK_S3_IF_NONE_MATCH = 1 };

int ck_s3_put(ck_s3_t *s3, const char *key, const void *data, size_t n, int flags,
              ck_error_t *err);
/* Calls fn with the key and id of every multipart upload under prefix not yet completed or
 * aborted (a writer that died midway leaves one: its parts are stored, not visible). */
typedef int (*ck_s3_upload_fn)(void *ctx, const char *key, const char *upload_id);
int ck_s3_list_uploads(ck_s3_t *s3, const char *prefix, ck_s3_upload_fn fn, void *ctx,
                       ck_error_t *err);
int ck_s3_abort_upload(ck_s3_t *s3, const char *key, const char *upload_id, ck_error_t *err);
int ck_s3_get(ck_s3_t *s3, const char *key, ck_buf_t *out, ck_error_t *err);
/* 0 and the object's size, CK_ENOTFOUND, or an error. */
int ck_s3_head(ck_s3_t *s3, const char *key, int64_t *size, ck_error_t *err);
int ck_s3_delete(ck_s3_t *s3, const char *key, ck_error_t *err);
/* Calls fn with every key under prefix (whole keys), in S3's (byte) order; a non-zero return
 * from fn stops the listing and is returned. */
typedef int (*ck_s3_list_fn)(void *ctx, const char *key, int64_t size);
int ck_s3_list(ck_s3_t *s3, const char *prefix, ck_s3_list_fn fn, void *ctx, ck_error_t *err);
/* Creates the bucket (an existing one owned by us is fine): for tests and first use of a
 * store. */
int ck_s3_create_bucket(ck_s3_t *s3, ck_error_t *err);

#endif
