/*
 * DESIGN: see sigv4.h. The four steps of SigV4 in order: canonical request, string to sign,
 * signing key (an HMAC chain over date, region, service, "aws4_request"), signature. Headers
 * are sorted by lowercase name; a name given twice is one canonical line with the values
 * joined by commas, as the specification says.
 */
#include "base/sigv4.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base/alloc.h"
#include "base/digest.h"

#define MAX_HEADERS 32

static void hmac(const void *key, size_t klen, const char *msg, size_t mlen, unsigned char out[32]) {
  unsigned int len = 32;
  HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, mlen, out, &len);
}

void ck_sigv4_encode(ck_buf_t *out, const char *s, int keep_slash) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~' || (keep_slash && *p == '/'))
      ck_buf_putc(out, (char)*p);
    else
      ck_buf_printf(out, "%%%02X", *p);
  }
}

typedef struct enc_param {
  char *name, *value;
} enc_param_t;

static int cmp_param(const void *a, const void *b) {
  const enc_param_t *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : strcmp(x->value, y->value);
}

static char *encoded(const char *s, int keep_slash) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_sigv4_encode(&b, s, keep_slash);
  ck_buf_putc(&b, 0);
  return ck_buf_detach(&b);
}

void ck_sigv4_canonical_query(const ck_sigv4_param_t *q, int n, ck_buf_t *out) {
  if (n <= 0) return;
  enc_param_t *e = ck_calloc((size_t)n, sizeof *e);
  for (int i = 0; i < n; i++) {
    e[i].name = encoded(q[i].name, 0);
    e[i].value = encoded(q[i].value ? q[i].value : "", 0);
  }
  qsort(e, (size_t)n, sizeof *e, cmp_param);
  for (int i = 0; i < n; i++) {
    if (i) ck_buf_putc(out, '&');
    ck_buf_printf(out, "%s=%s", e[i].name, e[i].value);
    ck_free(e[i].name);
    ck_free(e[i].value);
  }
  ck_free(e);
}

typedef struct canon_header {
  char name[64];
  const char *value;
} canon_header_t;

static int cmp_header(const void *a, const void *b) {
  return strcmp(((const canon_header_t *)a)->name, ((const canon_header_t *)b)->name);
}

/* value trimmed, inner runs of spaces folded to one */
static void put_trimmed(ck_buf_t *out, const char *v) {
  while (*v == ' ' || *v == '\t') v++;
  size_t n = strlen(v);
  while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
  bool space = false;
  for (size_t i = 0; i < n; i++) {
    if (v[i] == ' ' || v[i] == '\t') {
      space = true;
      continue;
    }
    if (space) ck_buf_putc(out, ' ');
    space = false;
    ck_buf_putc(out, v[i]);
  }
}

void ck_sigv4_date(long long unix_seconds, char out[17]) {
  time_t t = (time_t)unix_seconds;
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

void ck_sigv4_sign(const ck_sigv4_req_t *req, ck_buf_t *headers_out, ck_buf_t *canonical,
                   char sig_out[65]) {
  canon_header_t h[MAX_HEADERS];
  int nh = 0;
  for (int i = 0; i < req->nheaders && nh < MAX_HEADERS - 3; i++) {
    snprintf(h[nh].name, sizeof h[nh].name, "%s", req->headers[i].name);
    for (char *c = h[nh].name; *c; c++) *c = (char)tolower((unsigned char)*c);
    h[nh++].value = req->headers[i].value;
  }
  snprintf(h[nh].name, sizeof h[nh].name, "x-amz-date");
  h[nh++].value = req->amz_date;
  snprintf(h[nh].name, sizeof h[nh].name, "x-amz-content-sha256");
  h[nh++].value = req->payload_sha256;
  if (req->session_token) {
    snprintf(h[nh].name, sizeof h[nh].name, "x-amz-security-token");
    h[nh++].value = req->session_token;
  }
  /* stable for equal names: a name given twice keeps the caller's order of values */
  for (int i = 1; i < nh; i++)
    for (int j = i; j > 0 && cmp_header(&h[j - 1], &h[j]) > 0; j--) {
      canon_header_t t = h[j];
      h[j] = h[j - 1];
      h[j - 1] = t;
    }

  ck_buf_t cr, signed_names;
  ck_buf_init(&cr);
  ck_buf_init(&signed_names);
  ck_buf_printf(&cr, "%s\n", req->method);
  ck_sigv4_encode(&cr, req->path && *req->path ? req->path : "/", 1);
  ck_buf_putc(&cr, '\n');
  ck_sigv4_canonical_query(req->query, req->nquery, &cr);
  ck_buf_putc(&cr, '\n');
  for (int i = 0; i < nh; i++) {
    bool same = i > 0 && !strcmp(h[i].name, h[i - 1].name);
    if (same) {
      ck_buf_putc(&cr, ',');
    } else {
      if (i) ck_buf_putc(&cr, '\n');
      ck_buf_printf(&cr, "%s:", h[i].name);
      if (signed_names.len) ck_buf_putc(&signed_names, ';');
      ck_buf_puts(&signed_names, h[i].name);
    }
    put_trimmed(&cr, h[i].value);
  }
  ck_buf_puts(&cr, "\n\n");
  ck_buf_append(&cr, signed_names.data, signed_names.len);
  ck_buf_printf(&cr, "\n%s", req->payload_sha256);

  char date[9];
  snprintf(date, sizeof date, "%.8s", req->amz_date);
  char cr_hash[65];
  ck_sha256_hex(cr.data, cr.len, cr_hash);
  ck_buf_t sts;
  ck_buf_init(&sts);
  ck_buf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", req->amz_date, date,
                req->region, req->service, cr_hash);

  ck_buf_t k;
  ck_buf_init(&k);
  ck_buf_printf(&k, "AWS4%s", req->secret_key);
  unsigned char a[32], b[32];
  hmac(k.data, k.len, date, strlen(date), a);
  hmac(a, 32, req->region, strlen(req->region), b);
  hmac(b, 32, req->service, strlen(req->service), a);
  hmac(a, 32, "aws4_request", 12, b);
  hmac(b, 32, (const char *)sts.data, sts.len, a);
  char sig[65];
  ck_hex_lower(a, 32, sig);
  OPENSSL_cleanse(k.data, k.len);
  OPENSSL_cleanse(b, sizeof b);

  ck_buf_printf(headers_out, "x-amz-date: %s\nx-amz-content-sha256: %s\n", req->amz_date,
                req->payload_sha256);
  if (req->session_token) ck_buf_printf(headers_out, "x-amz-security-token: %s\n", req->session_token);
  ck_buf_printf(headers_out,
                "Authorization: AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request,"
                "SignedHeaders=%.*s,Signature=%s\n",
                req->access_key, date, req->region, req->service, (int)signed_names.len,
                (const char *)signed_names.data, sig);
  if (canonical) ck_buf_append(canonical, cr.data, cr.len);
  if (sig_out) memcpy(sig_out, sig, 65);
  ck_buf_fini(&cr);
  ck_buf_fini(&signed_names);
  ck_buf_fini(&sts);
  ck_buf_fini(&k);
}
