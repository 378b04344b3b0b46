/*
 * DESIGN: the S3 client (src/base/s3) against a real S3 server: SeaweedFS, started by
 * scripts/services.sh (CLINK_S3_ENDPOINT, CLINK_S3_ACCESS_KEY, CLINK_S3_SECRET_KEY and the
 * test bucket CLINK_S3_BUCKET from `scripts/services.sh env`).
 *
 * Checked: a PUT reads back byte for byte (every byte value; a key that needs encoding);
 * If-None-Match: * writes a key once (the second write is CK_EEXISTS and changes nothing);
 * GET/HEAD of a missing key is CK_ENOTFOUND; DELETE removes, and deleting a missing key is
 * fine; LIST returns every key under a prefix in order across pages (more keys than one page
 * holds) and none outside it; a wrong secret is refused by the server with its error code
 * and the secret nowhere in the message; a closed port is CK_ECONNECT; several threads share
 * one client; an object above the part size goes up as a multipart upload that reads back
 * whole, is conditional like a PUT, and leaves neither object nor upload when it fails midway.
 * Threads: the main thread, plus workers in the sharing test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/s3.h"

static const char *env(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v)
    fail_msg("%s is not set: start the services and export their settings first: "
             "scripts/services.sh start && eval \"$(scripts/services.sh env)\"", name);
  return v;
}

/* Every test writes under a prefix of its own in the one test bucket (CLINK_S3_BUCKET):
 * SeaweedFS gives each bucket volumes of its own, so a bucket per test would run out. */
static char prefix[96];

static void new_prefix(void) {
  static int seq;
  snprintf(prefix, sizeof prefix, "unit-%ld-%d-%d/", (long)time(NULL), (int)getpid(), ++seq);
}

/* k under this test's prefix (four buffers in turn, for calls with two keys) */
static const char *K(const char *k) {
  static char bufs[4][512];
  static int next;
  char *b = bufs[next++ & 3];
  snprintf(b, 512, "%s%s", prefix, k);
  return b;
}

static ck_s3_config_t extra; /* part_size / on_part for the multipart tests */

static ck_s3_t *open_bucket(const char *secret, char *bucket, size_t cap) {
  new_prefix();
  snprintf(bucket, cap, "%s", env("CLINK_S3_BUCKET"));
  ck_s3_config_t c = {.endpoint = env("CLINK_S3_ENDPOINT"), .path_style = 1,
                      .access_key = env("CLINK_S3_ACCESS_KEY"),
                      .secret_key = secret ? secret : env("CLINK_S3_SECRET_KEY"),
                      .timeout_ms = 60000, .part_size = extra.part_size,
                      .on_part = extra.on_part, .on_part_ctx = extra.on_part_ctx};
  extra = (ck_s3_config_t){0};
  ck_s3_t *s = NULL;
  ck_error_t err;
  ck_error_clear(&err);
  if (ck_s3_open(&c, bucket, &s, &err)) fail_msg("%s", err.message);
  return s;
}

static ck_s3_t *fresh(char *bucket, size_t cap) {
  ck_s3_t *s = open_bucket(NULL, bucket, cap);
  ck_error_t err;
  ck_error_clear(&err);
  if (ck_s3_create_bucket(s, &err)) fail_msg("%s", err.message);
  return s;
}

static void test_put_get_roundtrip(void **state) {
  (void)state;
  char bucket[64];
  ck_s3_t *s = fresh(bucket, sizeof bucket);
  ck_error_t err;
  ck_error_clear(&err);
  uint8_t data[4096];
  for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 7 + (i >> 8));
  const char *names[] = {"v1/0/checkpoint-1.snap", "dir/a b+c=\xc3\xa9~!$&'()*,;:@", "top"};
  char keys[3][512];
  for (size_t k = 0; k < 3; k++) snprintf(keys[k], sizeof keys[k], "%s", K(names[k]));
  for (size_t k = 0; k < 3; k++) {
    assert_int_equal(ck_s3_put(s, keys[k], data, sizeof data - k, 0, &err), 0);
    ck_buf_t out;
    ck_buf_init(&out);
    assert_int_equal(ck_s3_get(s, keys[k], &out, &err), 0);
    assert_int_equal(out.len, sizeof data - k);
    assert_memory_equal(out.data, data, out.len);
    ck_buf_fini(&out);
    assert_int_equal(ck_s3_head(s, keys[k], NULL, &err), 0);
  }
  /* an empty object */
  assert_int_equal(ck_s3_put(s, K("empty"), NULL, 0, 0, &err), 0);
  ck_buf_t out;
  ck_buf_init(&out);
  assert_int_equal(ck_s3_get(s, K("empty"), &out, &err), 0);
  assert_int_equal(out.len, 0);
  ck_buf_fini(&out);
  ck_s3_close(s);
}

static void test_conditional_put_writes_once(void **state) {
  (void)state;
  char bucket[64];
  ck_s3_t *s = fresh(bucket, sizeof bucket);
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_s3_put(s, K("_meta/completed-7"), "first", 5, CK_S3_IF_NONE_MATCH, &err), 0);
  ck_error_clear(&err);
  assert_int_equal(ck_s3_put(s, K("_meta/completed-7"), "second", 6, CK_S3_IF_NONE_MATCH, &err),
                   CK_EEXISTS);
  assert_non_null(strstr(err.message, "412"));
  ck_buf_t out;
  ck_buf_init(&out);
  assert_int_equal(ck_s3_get(s, K("_meta/completed-7"), &out, &err), 0);
  assert_int_equal(out.len, 5);
  assert_memory_equal(out.data, "first", 5);
  ck_buf_fini(&out);
  ck_s3_close(s);
}

/* Multipart: an object above the part size goes up in parts (here 3: two of 5 MiB, S3's
 * smallest, and a short last one) and reads back byte for byte; conditional on a key that exists, the completion
 * is refused and the old object stays; a failure after two parts leaves no object and no
 * upload behind (aborted). */
static int uploads_under(void *ctx, const char *key, const char *id) {
  (void)key, (void)id;
  ++*(int *)ctx;
  return 0;
}

static int fail_at_part;
static int parts_seen;
static ck_s3_t *mp_client;
static int uploads_midway = -1; /* the uploads under the prefix when the fault fires */
static int on_part(void *ctx, int part) {
  (void)ctx;
  parts_seen = part;
  if (!fail_at_part || part != fail_at_part) return 0;
  ck_error_t err;
  ck_error_clear(&err);
  uploads_midway = 0;
  if (ck_s3_list_uploads(mp_client, prefix, uploads_under, &uploads_midway, &err))
    uploads_midway = -1;
  return 1;
}

static void test_multipart_upload(void **state) {
  (void)state;
  char bucket[64];
  extra.part_size = CK_S3_PART_SIZE_MIN;
  extra.on_part = on_part;
  ck_s3_t *s = fresh(bucket, sizeof bucket);
  mp_client = s;
  ck_error_t err;
  ck_error_clear(&err);
  size_t n = 2 * CK_S3_PART_SIZE_MIN + 12345;
  uint8_t *data = malloc(n);
  for (size_t i = 0; i < n; i++) data[i] = (uint8_t)(i * 31 + (i >> 12));
  fail_at_part = 0;
  if (ck_s3_put(s, K("big.snap"), data, n, 0, &err)) fail_msg("%s", err.message);
  assert_int_equal(parts_seen, 3); /* it did go in parts */
  ck_buf_t out;
  ck_buf_init(&out);
  assert_int_equal(ck_s3_get(s, K("big.snap"), &out, &err), 0);
  assert_int_equal(out.len, n);
  assert_memory_equal(out.data, data, n);
  /* written once: a second multipart write of the key is refused and changes nothing */
  data[0] ^= 0xff;
  ck_error_clear(&err);
  assert_int_equal(ck_s3_put(s, K("big.snap"), data, n, CK_S3_IF_NONE_MATCH, &err), CK_EEXISTS);
  ck_buf_reset(&out);
  assert_int_equal(ck_s3_get(s, K("big.snap"), &out, &err), 0);
  assert_int_equal(out.len, n);
  assert_int_not_equal(out.data[0], data[0]);
  /* a failure midway: no object, no upload left */
  fail_at_part = 3;
  ck_error_clear(&err);
  assert_int_not_equal(ck_s3_put(s, K("half.snap"), data, n, 0, &err), 0);
  assert_int_equal(parts_seen, 3); /* two parts were in */
  assert_int_equal(uploads_midway, 1); /* the upload was there, unfinished */
  ck_error_clear(&err);
  assert_int_equal(ck_s3_head(s, K("half.snap"), NULL, &err), CK_ENOTFOUND);
  int left = 0;
  ck_error_clear(&err);
  if (ck_s3_list_uploads(s, prefix, uploads_under, &left, &err)) fail_msg("%s", err.message);
  assert_int_equal(left, 0);
  fail_at_part = 0;
  ck_buf_fini(&out);
  free(data);
  ck_s3_close(s);
}

static void test_missing_keys_and_delete(void **state) {
  (void)state;
  char bucket[64];
  ck_s3_t *s = fresh(bucket, sizeof bucket);
  ck_error_t err;
  ck_error_clear(&err);
  ck_buf_t out;
  ck_buf_init(&out);
  assert_int_equal(ck_s3_get(s, K("nope"), &out, &err), CK_ENOTFOUND);
  assert_non_null(strstr(err.message, "nope"));
  assert_int_equal(ck_s3_head(s, K("nope"), NULL, &err), CK_ENOTFOUND);
  assert_int_equal(ck_s3_put(s, K("k"), "x", 1, 0, &err), 0);
  assert_int_equal(ck_s3_delete(s, K("k"), &err), 0);
  assert_int_equal(ck_s3_get(s, K("k"), &out, &err), CK_ENOTFOUND);
  ck_error_clear(&err);
  assert_int_equal(ck_s3_delete(s, K("k"), &err), 0);
  ck_buf_fini(&out);
  ck_s3_close(s);
}

typedef struct listed {
  char **keys;
  int n, cap;
} listed_t;

static int collect(void *ctx, const char *key, int64_t size) {
  listed_t *l = ctx;
  assert_true(size >= 0);
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 64;
    l->keys = realloc(l->keys, (size_t)l->cap * sizeof *l->keys);
  }
  l->keys[l->n++] = strdup(key);
  return 0;
}

static void test_list_every_page(void **state) {
  (void)state;
  char bucket[64];
  ck_s3_t *s = fresh(bucket, sizeof bucket);
  ck_error_t err;
  ck_error_clear(&err);
  const int n = 1105; /* more than S3's page of 1,000 */
  char key[256];
  for (int i = 0; i < n; i++) {
    snprintf(key, sizeof key, "%sv1/_meta/completed-%05d", prefix, i);
    assert_int_equal(ck_s3_put(s, key, "", 0, 0, &err), 0);
  }
  assert_int_equal(ck_s3_put(s, K("v1/_metadata"), "x", 1, 0, &err), 0);
  assert_int_equal(ck_s3_put(s, K("v1/0/checkpoint-1.snap"), "x", 1, 0, &err), 0);
  listed_t l = {0};
  assert_int_equal(ck_s3_list(s, K("v1/_meta/"), collect, &l, &err), 0);
  assert_int_equal(l.n, n);
  for (int i = 0; i < l.n; i++) {
    snprintf(key, sizeof key, "%sv1/_meta/completed-%05d", prefix, i);
    assert_string_equal(l.keys[i], key);
    free(l.keys[i]);
  }
  free(l.keys);
  l = (listed_t){0};
  assert_int_equal(ck_s3_list(s, K("v1/0/"), collect, &l, &err), 0);
  assert_int_equal(l.n, 1);
  assert_string_equal(l.keys[0], K("v1/0/checkpoint-1.snap"));
  free(l.keys[0]);
  free(l.keys);
  ck_s3_close(s);
}

static void test_wrong_secret_is_refused_without_showing_it(void **state) {
  (void)state;
  char bucket[64];
  ck_s3_t *good = fresh(bucket, sizeof bucket);
  ck_s3_close(good);
  ck_s3_config_t c = {.endpoint = env("CLINK_S3_ENDPOINT"), .path_style = 1,
                      .access_key = env("CLINK_S3_ACCESS_KEY"), .secret_key = "not-the-secret-42"};
  ck_s3_t *s = NULL;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_s3_open(&c, bucket, &s, &err), 0);
  int rc = ck_s3_put(s, K("k"), "x", 1, 0, &err);
  assert_int_equal(rc, CK_EREMOTE);
  assert_non_null(strstr(err.message, "403"));
  assert_null(strstr(err.message, "not-the-secret-42"));
  assert_null(strstr(err.hint, "not-the-secret-42"));
  ck_s3_close(s);
}

static void test_closed_port_is_connect_error(void **state) {
  (void)state;
  ck_s3_config_t c = {.endpoint = "http://127.0.0.1:1", .path_style = 1, .access_key = "a",
                      .secret_key = "b", .timeout_ms = 5000};
  ck_s3_t *s = NULL;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_s3_open(&c, "bucket", &s, &err), 0);
  assert_int_equal(ck_s3_put(s, K("k"), "x", 1, 0, &err), CK_ECONNECT);
  assert_non_null(strstr(err.message, "s3://bucket/"));
  assert_non_null(strstr(err.message, "127.0.0.1:1"));
  ck_s3_close(s);
}

static void test_no_credentials_names_the_variables(void **state) {
  (void)state;
  char *ak = getenv("AWS_ACCESS_KEY_ID") ? strdup(getenv("AWS_ACCESS_KEY_ID")) : NULL;
  unsetenv("AWS_ACCESS_KEY_ID");
  ck_s3_config_t c = {.endpoint = "http://127.0.0.1:1"};
  ck_s3_t *s = NULL;
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_s3_open(&c, "bucket", &s, &err), CK_EINVAL);
  assert_non_null(strstr(err.hint, "AWS_ACCESS_KEY_ID"));
  if (ak) setenv("AWS_ACCESS_KEY_ID", ak, 1);
  free(ak);
}

static void test_parse_url(void **state) {
  (void)state;
  char b[64], p[256];
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(ck_s3_parse_url("s3://my-bucket/jobs/a/", b, sizeof b, p, sizeof p, &err), 0);
  assert_string_equal(b, "my-bucket");
  assert_string_equal(p, "jobs/a");
  assert_int_equal(ck_s3_parse_url("s3://my-bucket", b, sizeof b, p, sizeof p, &err), 0);
  assert_string_equal(p, "");
  assert_int_equal(ck_s3_parse_url("s3://My_Bucket/x", b, sizeof b, p, sizeof p, &err), CK_EINVAL);
  assert_non_null(strstr(err.message, "lowercase"));
  assert_int_equal(ck_s3_parse_url("s3://ab/x", b, sizeof b, p, sizeof p, &err), CK_EINVAL);
  assert_int_equal(ck_s3_parse_url("/tmp/x", b, sizeof b, p, sizeof p, &err), CK_EINVAL);
}

typedef struct worker {
  ck_s3_t *s;
  int id, failures;
} worker_t;

static void *work(void *arg) {
  worker_t *w = arg;
  ck_error_t err;
  ck_error_clear(&err);
  char key[256], body[64];
  for (int i = 0; i < 40; i++) {
    snprintf(key, sizeof key, "%st%d/k%d", prefix, w->id, i);
    int n = snprintf(body, sizeof body, "body %d %d", w->id, i);
    ck_buf_t out;
    ck_buf_init(&out);
    if (ck_s3_put(w->s, key, body, (size_t)n, 0, &err) || ck_s3_get(w->s, key, &out, &err) ||
        out.len != (size_t)n || memcmp(out.data, body, (size_t)n))
      w->failures++;
    ck_buf_fini(&out);
  }
  return NULL;
}

static void test_threads_share_a_client(void **state) {
  (void)state;
  char bucket[64];
  ck_s3_t *s = fresh(bucket, sizeof bucket);
  worker_t w[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (worker_t){.s = s, .id = i};
    pthread_create(&t[i], NULL, work, &w[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(w[i].failures, 0);
  }
  ck_s3_close(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_url),
      cmocka_unit_test(test_no_credentials_names_the_variables),
      cmocka_unit_test(test_closed_port_is_connect_error),
      cmocka_unit_test(test_put_get_roundtrip),
      cmocka_unit_test(test_conditional_put_writes_once),
      cmocka_unit_test(test_missing_keys_and_delete),
      cmocka_unit_test(test_multipart_upload),
      cmocka_unit_test(test_list_every_page),
      cmocka_unit_test(test_wrong_secret_is_refused_without_showing_it),
      cmocka_unit_test(test_threads_share_a_client),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
