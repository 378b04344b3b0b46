/*
 * DESIGN: unit tests for src/base/sigv4 — the S3 request signer.
 *
 * The four examples of AWS's "Signature Calculations for the Authorization Header" page for
 * S3 (GET Object with a Range, PUT Object whose name needs encoding, GET Bucket Lifecycle with
 * a valueless parameter, List Objects with a query to sort), each with the signature AWS
 * publishes; the GET example's canonical request as AWS prints it; encoding and header
 * canonicalisation cases the examples do not reach (a space, UTF-8, a '/' in a query value,
 * header case and spacing, a session token).
 * Threads: the main thread.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "base/sigv4.h"

#define AK "AKIAIOSFODNN7EXAMPLE"
#define SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define HOST "examplebucket.s3.amazonaws.com"
#define DATE "20130524T000000Z"

static void sign(const char *method, const char *path, const ck_sigv4_param_t *q, int nq,
                 const ck_sigv4_header_t *h, int nh, const char *payload, char sig[65],
                 ck_buf_t *canonical, ck_buf_t *headers) {
  ck_sigv4_req_t r = {.method = method, .path = path, .query = q, .nquery = nq, .headers = h,
                      .nheaders = nh, .payload_sha256 = payload, .access_key = AK,
                      .secret_key = SK, .region = "us-east-1", .service = "s3", .amz_date = DATE};
  ck_buf_t tmp;
  ck_buf_init(&tmp);
  ck_sigv4_sign(&r, headers ? headers : &tmp, canonical, sig);
  ck_buf_fini(&tmp);
}

static void test_get_object_example(void **state) {
  (void)state;
  ck_sigv4_header_t h[] = {{"Host", HOST}, {"Range", "bytes=0-9"}};
  char sig[65];
  ck_buf_t cr, hd;
  ck_buf_init(&cr);
  ck_buf_init(&hd);
  sign("GET", "/test.txt", NULL, 0, h, 2, CK_SIGV4_SHA256_EMPTY, sig, &cr, &hd);
  const char *want_cr =
      "GET\n/test.txt\n\nhost:" HOST "\nrange:bytes=0-9\n"
      "x-amz-content-sha256:" CK_SIGV4_SHA256_EMPTY "\nx-amz-date:" DATE "\n\n"
      "host;range;x-amz-content-sha256;x-amz-date\n" CK_SIGV4_SHA256_EMPTY;
  assert_int_equal(cr.len, strlen(want_cr));
  assert_memory_equal(cr.data, want_cr, cr.len);
  assert_string_equal(sig, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  ck_buf_putc(&hd, 0);
  assert_non_null(strstr((char *)hd.data,
                         "Authorization: AWS4-HMAC-SHA256 Credential=" AK
                         "/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;"
                         "x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6e"
                         "d310bd44f0170aba48dd91039c6036bdb41\n"));
  assert_non_null(strstr((char *)hd.data, "x-amz-date: " DATE "\n"));
  ck_buf_fini(&cr);
  ck_buf_fini(&hd);
}

static void test_put_object_example_encodes_the_name(void **state) {
  (void)state;
  const char *body = "Welcome to Amazon S3.";
  char payload[65];
  ck_sha256_hex(body, strlen(body), payload);
  assert_string_equal(payload, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  ck_sigv4_header_t h[] = {{"x-amz-storage-class", "REDUCED_REDUNDANCY"},
                           {"Host", HOST},
                           {"Date", "Fri, 24 May 2013 00:00:00 GMT"}};
  char sig[65];
  ck_buf_t cr;
  ck_buf_init(&cr);
  sign("PUT", "/test$file.text", NULL, 0, h, 3, payload, sig, &cr, NULL);
  assert_memory_equal(cr.data, "PUT\n/test%24file.text\n\n", 23);
  assert_string_equal(sig, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
  ck_buf_fini(&cr);
}

static void test_valueless_parameter_example(void **state) {
  (void)state;
  ck_sigv4_param_t q[] = {{"lifecycle", ""}};
  ck_sigv4_header_t h[] = {{"Host", HOST}};
  char sig[65];
  sign("GET", "/", q, 1, h, 1, CK_SIGV4_SHA256_EMPTY, sig, NULL, NULL);
  assert_string_equal(sig, "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

static void test_list_objects_example_sorts_the_query(void **state) {
  (void)state;
  ck_sigv4_param_t q[] = {{"prefix", "J"}, {"max-keys", "2"}};
  ck_sigv4_header_t h[] = {{"Host", HOST}};
  char sig[65];
  sign("GET", "/", q, 2, h, 1, CK_SIGV4_SHA256_EMPTY, sig, NULL, NULL);
  assert_string_equal(sig, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

static void test_encoding_rules(void **state) {
  (void)state;
  ck_buf_t b;
  ck_buf_init(&b);
  ck_sigv4_encode(&b, "a b/c~d-e_f.g+h=\xc3\xa9", 1);
  ck_buf_putc(&b, 0);
  assert_string_equal((char *)b.data, "a%20b/c~d-e_f.g%2Bh%3D%C3%A9");
  ck_buf_reset(&b);
  ck_sigv4_encode(&b, "v1/_meta/", 0);
  ck_buf_putc(&b, 0);
  assert_string_equal((char *)b.data, "v1%2F_meta%2F");
  ck_buf_reset(&b);
  ck_sigv4_param_t q[] = {{"prefix", "v1/_meta/"}, {"list-type", "2"}, {"continuation-token", "a b"}};
  ck_sigv4_canonical_query(q, 3, &b);
  ck_buf_putc(&b, 0);
  assert_string_equal((char *)b.data, "continuation-token=a%20b&list-type=2&prefix=v1%2F_meta%2F");
  ck_buf_fini(&b);
}

static void test_headers_are_canonicalised(void **state) {
  (void)state;
  /* case and spacing of names and values do not change the signature */
  ck_sigv4_header_t a[] = {{"Host", HOST}, {"Range", "bytes=0-9"}};
  ck_sigv4_header_t b[] = {{"RANGE", "  bytes=0-9 "}, {"host", HOST}};
  char sa[65], sb[65];
  sign("GET", "/test.txt", NULL, 0, a, 2, CK_SIGV4_SHA256_EMPTY, sa, NULL, NULL);
  sign("GET", "/test.txt", NULL, 0, b, 2, CK_SIGV4_SHA256_EMPTY, sb, NULL, NULL);
  assert_string_equal(sa, sb);
  /* inner runs of spaces fold to one; a repeated name joins its values with commas */
  ck_sigv4_header_t c[] = {{"Host", HOST}, {"x-amz-meta-a", "x   y"}, {"x-amz-meta-a", "z"}};
  ck_buf_t cr;
  ck_buf_init(&cr);
  sign("GET", "/k", NULL, 0, c, 3, CK_SIGV4_SHA256_EMPTY, sa, &cr, NULL);
  ck_buf_putc(&cr, 0);
  assert_non_null(strstr((char *)cr.data, "\nx-amz-meta-a:x y,z\n"));
  assert_non_null(strstr((char *)cr.data, "\nhost;x-amz-content-sha256;x-amz-date;x-amz-meta-a\n"));
  ck_buf_fini(&cr);
}

static void test_session_token_is_sent_and_signed(void **state) {
  (void)state;
  ck_sigv4_header_t h[] = {{"Host", HOST}};
  ck_sigv4_req_t r = {.method = "GET", .path = "/k", .headers = h, .nheaders = 1,
                      .payload_sha256 = CK_SIGV4_SHA256_EMPTY, .access_key = AK, .secret_key = SK,
                      .session_token = "TOKEN", .region = "us-east-1", .service = "s3",
                      .amz_date = DATE};
  ck_buf_t hd, cr;
  ck_buf_init(&hd);
  ck_buf_init(&cr);
  char with[65], without[65];
  ck_sigv4_sign(&r, &hd, &cr, with);
  ck_buf_putc(&hd, 0);
  ck_buf_putc(&cr, 0);
  assert_non_null(strstr((char *)hd.data, "x-amz-security-token: TOKEN\n"));
  assert_non_null(strstr((char *)cr.data, ";x-amz-security-token\n"));
  r.session_token = NULL;
  ck_buf_reset(&hd);
  ck_sigv4_sign(&r, &hd, NULL, without);
  assert_string_not_equal(with, without);
  ck_buf_fini(&hd);
  ck_buf_fini(&cr);
}

static void test_date(void **state) {
  (void)state;
  char d[17];
  ck_sigv4_date(1369353600, d);
  assert_string_equal(d, DATE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_get_object_example),
      cmocka_unit_test(test_put_object_example_encodes_the_name),
      cmocka_unit_test(test_valueless_parameter_example),
      cmocka_unit_test(test_list_objects_example_sorts_the_query),
      cmocka_unit_test(test_encoding_rules),
      cmocka_unit_test(test_headers_are_canonicalised),
      cmocka_unit_test(test_session_token_is_sent_and_signed),
      cmocka_unit_test(test_date),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
