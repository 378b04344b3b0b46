/*
 * DESIGN: see s3.h. One function sends a request (request()): it builds the URL and the Host
 * header from the addressing style, signs method, path, query and headers, and reads the
 * whole response into a buffer; the operations are thin around it. The few XML answers S3
 * gives (ListObjectsV2 pages, error bodies) are read by tag name (xml_next), which is all
 * their flat shape needs; entities are decoded.
 */
#include "base/s3.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "base/alloc.h"
#include "base/sigv4.h"

struct ck_s3 {
  char *bucket;
  char *scheme;   /* "http" / "https" */
  char *host;     /* "127.0.0.1:8333" (host[:port] of the endpoint) */
  bool path_style;
  char *region;
  char *access_key, *secret_key, *session_token;
  long timeout_ms;
  size_t part_size;
  int (*on_part)(void *ctx, int part);
  void *on_part_ctx;
  CURLSH *share;
  pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access a, void *u) {
  (void)h, (void)a;
  pthread_mutex_lock(&((ck_s3_t *)u)->locks[data]);
}
static void share_unlock(CURL *h, curl_lock_data data, void *u) {
  (void)h;
  pthread_mutex_unlock(&((ck_s3_t *)u)->locks[data]);
}

bool ck_s3_is_url(const char *s) { return s && !strncmp(s, "s3://", 5); }

int ck_s3_parse_url(const char *url, char *bucket, size_t bcap, char *prefix, size_t pcap,
                    ck_error_t *err) {
  if (!ck_s3_is_url(url))
    return ck_error_set(err, CK_EINVAL, "'%s' is not an S3 URL (s3://bucket/prefix)", url);
  const char *b = url + 5, *slash = strchr(b, '/');
  size_t bl = slash ? (size_t)(slash - b) : strlen(b);
  if (bl < 3 || bl > 63 || bl >= bcap)
    return ck_error_set(err, CK_EINVAL, "'%s': a bucket name has 3 to 63 characters", url);
  for (size_t i = 0; i < bl; i++) {
    char c = b[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
      return ck_error_set(err, CK_EINVAL,
                          "'%s': a bucket name holds lowercase letters, digits, '-' and '.' only",
                          url);
  }
  memcpy(bucket, b, bl);
  bucket[bl] = 0;
  const char *p = slash ? slash : "";
  while (*p == '/') p++;
  size_t pl = strlen(p);
  while (pl && p[pl - 1] == '/') pl--;
  if (pl >= pcap) return ck_error_set(err, CK_EINVAL, "'%s': the prefix is too long", url);
  memcpy(prefix, p, pl);
  prefix[pl] = 0;
  return 0;
}

static const char *env2(const char *a, const char *b) {
  const char *v = getenv(a);
  if (v && *v) return v;
  v = b ? getenv(b) : NULL;
  return v && *v ? v : NULL;
}

int ck_s3_open(const ck_s3_config_t *cfg, const char *bucket, ck_s3_t **out, ck_error_t *err) {
  ck_s3_config_t c = cfg ? *cfg : (ck_s3_config_t){.path_style = -1};
  const char *ak = c.access_key ? c.access_key : env2("AWS_ACCESS_KEY_ID", NULL);
  const char *sk = c.secret_key ? c.secret_key : env2("AWS_SECRET_ACCESS_KEY", NULL);
  const char *tok = c.session_token ? c.session_token : env2("AWS_SESSION_TOKEN", NULL);
  const char *region = c.region ? c.region : env2("AWS_REGION", "AWS_DEFAULT_REGION");
  const char *endpoint = c.endpoint ? c.endpoint : env2("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL");
  if (!ak || !sk) {
    int rc = ck_error_set(err, CK_EINVAL, "could not open s3://%s: no credentials", bucket);
    ck_error_hint(err, "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN "
                       "for temporary credentials)");
    return rc;
  }
  if (!region) region = "us-east-1";
  char def[128];
  if (!endpoint) {
    snprintf(def, sizeof def, "https://s3.%s.amazonaws.com", region);
    endpoint = def;
  }
  const char *sep = strstr(endpoint, "://");
  if (!sep || (strncmp(endpoint, "http://", 7) && strncmp(endpoint, "https://", 8)))
    return ck_error_set(err, CK_EINVAL,
                        "could not open s3://%s: the endpoint '%s' is not an http:// or https:// URL",
                        bucket, endpoint);
  const char *h = sep + 3;
  size_t hl = strcspn(h, "/");
  if (!hl)
    return ck_error_set(err, CK_EINVAL, "could not open s3://%s: the endpoint '%s' has no host",
                        bucket, endpoint);
  pthread_once(&curl_once, curl_init_once);
  ck_s3_t *s = ck_calloc(1, sizeof *s);
  s->bucket = ck_strdup(bucket);
  s->scheme = ck_strndup(endpoint, (size_t)(sep - endpoint));
  s->host = ck_strndup(h, hl);
  s->path_style = c.path_style < 0 ? (c.endpoint || endpoint != def) : c.path_style != 0;
  s->region = ck_strdup(region);
  s->access_key = ck_strdup(ak);
  s->secret_key = ck_strdup(sk);
  s->session_token = tok ? ck_strdup(tok) : NULL;
  s->timeout_ms = c.timeout_ms > 0 ? c.timeout_ms : 30000;
  s->part_size = c.part_size ? c.part_size : CK_S3_PART_SIZE_DEFAULT;
  if (s->part_size < CK_S3_PART_SIZE_MIN) s->part_size = CK_S3_PART_SIZE_MIN;
  s->on_part = c.on_part;
  s->on_part_ctx = c.on_part_ctx;
  for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_init(&s->locks[i], NULL);
  s->share = curl_share_init();
  curl_share_setopt(s->share, CURLSHOPT_LOCKFUNC, share_lock);
  curl_share_setopt(s->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
  curl_share_setopt(s->share, CURLSHOPT_USERDATA, s);
  curl_share_setopt(s->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl_share_setopt(s->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
  *out = s;
  return 0;
}

void ck_s3_close(ck_s3_t *s) {
  if (!s) return;
  curl_share_cleanup(s->share);
  for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_destroy(&s->locks[i]);
  if (s->secret_key) memset(s->secret_key, 0, strlen(s->secret_key));
  ck_free(s->bucket);
  ck_free(s->scheme);
  ck_free(s->host);
  ck_free(s->region);
  ck_free(s->access_key);
  ck_free(s->secret_key);
  ck_free(s->session_token);
  ck_free(s);
}

const char *ck_s3_bucket(const ck_s3_t *s) { return s->bucket; }

/* ---------------------------------------------------------------- XML answers */

/* The text of the next <tag>…</tag> at or after *pos in body, entities decoded, into out;
 * false when there is none. */
static bool xml_next(const ck_buf_t *body, size_t *pos, const char *tag, ck_buf_t *out) {
  char open[64], close[64];
  snprintf(open, sizeof open, "<%s>", tag);
  snprintf(close, sizeof close, "</%s>", tag);
  const char *d = (const char *)body->data;
  if (!d || *pos >= body->len) return false;
  const char *end = d + body->len;
  const char *a = memmem(d + *pos, (size_t)(end - (d + *pos)), open, strlen(open));
  if (!a) return false;
  a += strlen(open);
  const char *b = memmem(a, (size_t)(end - a), close, strlen(close));
  if (!b) return false;
  ck_buf_reset(out);
  for (const char *p = a; p < b; p++) {
    if (*p != '&') {
      ck_buf_putc(out, *p);
      continue;
    }
    static const struct { const char *ent; char c; } ents[] = {
        {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    bool done = false;
    for (size_t i = 0; i < sizeof ents / sizeof ents[0] && !done; i++) {
      size_t n = strlen(ents[i].ent);
      if ((size_t)(b - p) >= n && !memcmp(p, ents[i].ent, n)) {
        ck_buf_putc(out, ents[i].c);
        p += n - 1;
        done = true;
      }
    }
    if (!done && p + 2 < b && p[1] == '#') {
      char *e = NULL;
      long v = p[2] == 'x' ? strtol(p + 3, &e, 16) : strtol(p + 2, &e, 10);
      if (e && *e == ';' && v > 0 && v < 128) {
        ck_buf_putc(out, (char)v);
        p = e;
        done = true;
      }
    }
    if (!done) ck_buf_putc(out, '&');
  }
  ck_buf_putc(out, 0);
  out->len--;
  *pos = (size_t)(b - d) + strlen(close);
  return true;
}

/* ---------------------------------------------------------------- requests */

typedef struct body_in {
  const uint8_t *p;
  size_t n, off;
} body_in_t;

static size_t on_write(char *p, size_t size, size_t n, void *u) {
  ck_buf_append((ck_buf_t *)u, p, size * n);
  return size * n;
}

static size_t on_read(char *p, size_t size, size_t n, void *u) {
  body_in_t *b = u;
  size_t k = size * n;
  if (k > b->n - b->off) k = b->n - b->off;
  memcpy(p, b->p + b->off, k);
  b->off += k;
  return k;
}

typedef struct req {
  const char *method;
  const char *key;                 /* NULL: the bucket itself */
  const ck_sigv4_param_t *query;
  int nquery;
  const void *body;
  size_t n;
  const char *if_none_match;       /* NULL or "*" */
  bool head;                       /* no body in the answer */
  char *etag;                      /* not NULL: the answer's ETag header, quotes kept (cap 128) */
} req_t;

static size_t on_header(char *p, size_t size, size_t n, void *u) {
  size_t k = size * n;
  if (k > 5 && !strncasecmp(p, "etag:", 5)) {
    const char *v = p + 5;
    size_t l = k - 5;
    while (l && (*v == ' ' || *v == '\t')) v++, l--;
    while (l && (v[l - 1] == '\r' || v[l - 1] == '\n' || v[l - 1] == ' ')) l--;
    if (l > 127) l = 127;
    memcpy(u, v, l);
    ((char *)u)[l] = 0;
  }
  return k;
}

static int http_error(const ck_s3_t *s, const char *op, const char *key, long status,
                      const ck_buf_t *body, ck_error_t *err) {
  ck_buf_t code, msg;
  ck_buf_init(&code);
  ck_buf_init(&msg);
  size_t pos = 0;
  bool have_code = xml_next(body, &pos, "Code", &code);
  pos = 0;
  bool have_msg = xml_next(body, &pos, "Message", &msg);
  int kind = status >= 500 ? CK_EIO : CK_EREMOTE;
  if (status == 404) kind = CK_ENOTFOUND;
  if (status == 412) kind = CK_EEXISTS;
  int rc = ck_error_set(err, kind, "could not %s s3://%s/%s: HTTP %ld%s%s%s%s", op, s->bucket,
                        key ? key : "", status, have_code ? " " : "",
                        have_code ? (char *)code.data : "", have_msg ? ": " : "",
                        have_msg ? (char *)msg.data : "");
  if (have_code && !strcmp((char *)code.data, "SignatureDoesNotMatch"))
    ck_error_hint(err, "check AWS_SECRET_ACCESS_KEY and the region (%s)", s->region);
  else if (have_code && !strcmp((char *)code.data, "NoSuchBucket"))
    ck_error_hint(err, "create the bucket first");
  ck_buf_fini(&code);
  ck_buf_fini(&msg);
  return rc;
}

/* Sends r; the answer's body in out (may be NULL), its status in *status. 0 when a status
 * came back (any), else the transport's error. */
static int request(ck_s3_t *s, const req_t *r, ck_buf_t *out, long *status, const char *op,
                   ck_error_t *err) {
  ck_buf_t path, url, hdrs, qs, hostb;
  ck_buf_init(&path);
  ck_buf_init(&url);
  ck_buf_init(&hdrs);
  ck_buf_init(&qs);
  ck_buf_init(&hostb);
  if (s->path_style) {
    ck_buf_printf(&path, "/%s", s->bucket);
    if (r->key) ck_buf_printf(&path, "/%s", r->key);
    ck_buf_puts(&hostb, s->host);
  } else {
    ck_buf_printf(&path, "/%s", r->key ? r->key : "");
    ck_buf_printf(&hostb, "%s.%s", s->bucket, s->host);
  }
  ck_buf_putc(&path, 0);
  ck_buf_putc(&hostb, 0);
  ck_sigv4_canonical_query(r->query, r->nquery, &qs);
  ck_buf_putc(&qs, 0);
  ck_buf_printf(&url, "%s://%s", s->scheme, (char *)hostb.data);
  ck_sigv4_encode(&url, (char *)path.data, 1);
  if (qs.len > 1) ck_buf_printf(&url, "?%s", (char *)qs.data);
  ck_buf_putc(&url, 0);

  char payload[65];
  ck_sha256_hex(r->body ? r->body : "", r->body ? r->n : 0, payload);
  char date[17];
  ck_sigv4_date((long long)time(NULL), date);
  ck_sigv4_header_t h[3];
  int nh = 0;
  h[nh++] = (ck_sigv4_header_t){"host", (char *)hostb.data};
  if (r->if_none_match) h[nh++] = (ck_sigv4_header_t){"if-none-match", r->if_none_match};
  ck_sigv4_req_t sr = {.method = r->method, .path = (char *)path.data, .query = r->query,
                       .nquery = r->nquery, .headers = h, .nheaders = nh,
                       .payload_sha256 = payload, .access_key = s->access_key,
                       .secret_key = s->secret_key, .session_token = s->session_token,
                       .region = s->region, .service = "s3", .amz_date = date};
  ck_sigv4_sign(&sr, &hdrs, NULL, NULL);
  ck_buf_putc(&hdrs, 0);

  struct curl_slist *list = NULL;
  char line[512];
  snprintf(line, sizeof line, "Host: %s", (char *)hostb.data);
  list = curl_slist_append(list, line);
  if (r->if_none_match) {
    snprintf(line, sizeof line, "If-None-Match: %s", r->if_none_match);
    list = curl_slist_append(list, line);
  }
  for (char *p = (char *)hdrs.data, *nl; (nl = strchr(p, '\n')); p = nl + 1) {
    *nl = 0;
    list = curl_slist_append(list, p);
  }
  list = curl_slist_append(list, "Expect:");
  list = curl_slist_append(list, "Content-Type: application/octet-stream");

  ck_buf_t tmp;
  ck_buf_init(&tmp);
  ck_buf_t *sink = out ? out : &tmp;
  body_in_t in = {.p = r->body, .n = r->body ? r->n : 0};
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, (char *)url.data);
  curl_easy_setopt(c, CURLOPT_SHARE, s->share);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, s->timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, s->timeout_ms < 10000 ? s->timeout_ms : 10000L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, sink);
  if (r->etag) {
    r->etag[0] = 0;
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r->etag);
  }
  if (!strcmp(r->method, "POST")) {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body ? (const char *)r->body : "");
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(r->body ? r->n : 0));
  } else if (!strcmp(r->method, "PUT")) {
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(c, CURLOPT_READDATA, &in);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)in.n);
  } else if (r->head) {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (strcmp(r->method, "GET")) {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
  }
  CURLcode cc = curl_easy_perform(c);
  int rc = 0;
  if (cc != CURLE_OK) {
    int kind = cc == CURLE_OPERATION_TIMEDOUT ? CK_ETIMEOUT
               : (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST) ? CK_ECONNECT
                                                                                   : CK_EIO;
    rc = ck_error_set(err, kind, "could not %s s3://%s/%s: %s (%s://%s)", op, s->bucket,
                      r->key ? r->key : "", curl_easy_strerror(cc), s->scheme, s->host);
  } else {
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
  }
  curl_easy_cleanup(c);
  curl_slist_free_all(list);
  ck_buf_fini(&tmp);
  ck_buf_fini(&path);
  ck_buf_fini(&url);
  ck_buf_fini(&hdrs);
  ck_buf_fini(&qs);
  ck_buf_fini(&hostb);
  return rc;
}

/* request() whose 2xx is success and anything else the error http_error names */
static int simple(ck_s3_t *s, const req_t *r, ck_buf_t *out, const char *op, ck_error_t *err) {
  ck_buf_t body;
  ck_buf_init(&body);
  long status = 0;
  int rc = request(s, r, &body, &status, op, err);
  if (!rc && (status < 200 || status > 299)) rc = http_error(s, op, r->key, status, &body, err);
  if (!rc && out) ck_buf_append(out, body.data, body.len);
  ck_buf_fini(&body);
  return rc;
}

/* ---------------------------------------------------------------- multipart upload */

/* Gives up the upload (its parts are freed); the caller's error is the one that matters, so a
 * failure here is dropped: ck_s3_list_uploads (or the bucket's lifecycle rule) finds a
 * leftover. */
static void mp_abort(ck_s3_t *s, const char *key, const char *upload_id) {
  ck_error_t e;
  ck_error_clear(&e);
  (void)ck_s3_abort_upload(s, key, upload_id, &e);
}

/* An object of more than one part: CreateMultipartUpload, UploadPart for each part_size piece
 * in turn, then CompleteMultipartUpload naming every part's ETag — the object appears only
 * then, whole; any failure before aborts the upload, so nothing of it is ever visible. */
static int put_multipart(ck_s3_t *s, const char *key, const uint8_t *data, size_t n,
                         const char *if_none_match, ck_error_t *err) {
  size_t nparts = (n + s->part_size - 1) / s->part_size;
  if (nparts > CK_S3_MAX_PARTS)
    return ck_error_set(err, CK_EUNSUPPORTED,
                        "could not write s3://%s/%s: %zu bytes are more than %d parts of %zu "
                        "bytes (S3's limit on the parts of one object)",
                        s->bucket, key, n, CK_S3_MAX_PARTS, s->part_size);
  ck_buf_t body, id, done;
  ck_buf_init(&body);
  ck_buf_init(&id);
  ck_buf_init(&done);
  ck_sigv4_param_t cq[1] = {{"uploads", ""}};
  req_t cr = {.method = "POST", .key = key, .query = cq, .nquery = 1};
  int rc = simple(s, &cr, &body, "start a multipart upload of", err);
  size_t pos = 0;
  if (!rc && (!xml_next(&body, &pos, "UploadId", &id) || !id.len))
    rc = ck_error_set(err, CK_EREMOTE, "could not start a multipart upload of s3://%s/%s: the "
                      "answer has no UploadId", s->bucket, key);
  if (rc) goto out;
  ck_buf_puts(&done, "<CompleteMultipartUpload>");
  for (size_t i = 0; i < nparts && !rc; i++) {
    char num[16], etag[128];
    snprintf(num, sizeof num, "%zu", i + 1);
    if (s->on_part && s->on_part(s->on_part_ctx, (int)i + 1)) {
      rc = ck_error_set(err, CK_EIO, "could not write part %zu of s3://%s/%s: the test's fault",
                        i + 1, s->bucket, key);
      break;
    }
    size_t off = i * s->part_size, len = n - off < s->part_size ? n - off : s->part_size;
    ck_sigv4_param_t pq[2] = {{"partNumber", num}, {"uploadId", (char *)id.data}};
    req_t pr = {.method = "PUT", .key = key, .query = pq, .nquery = 2, .body = data + off,
                .n = len, .etag = etag};
    rc = simple(s, &pr, NULL, "write a part of", err);
    if (!rc && !etag[0])
      rc = ck_error_set(err, CK_EREMOTE, "could not write part %zu of s3://%s/%s: the answer "
                        "has no ETag", i + 1, s->bucket, key);
    if (!rc) ck_buf_printf(&done, "<Part><PartNumber>%zu</PartNumber><ETag>%s</ETag></Part>",
                           i + 1, etag);
  }
  if (!rc) {
    ck_buf_puts(&done, "</CompleteMultipartUpload>");
    ck_sigv4_param_t fq[1] = {{"uploadId", (char *)id.data}};
    req_t fr = {.method = "POST", .key = key, .query = fq, .nquery = 1, .body = done.data,
                .n = done.len, .if_none_match = if_none_match};
    ck_buf_reset(&body);
    rc = simple(s, &fr, &body, "complete the upload of", err);
    /* S3 may answer 200 and still fail: the error is then the body */
    ck_buf_t code;
    ck_buf_init(&code);
    pos = 0;
    if (!rc && body.len && memmem(body.data, body.len, "<Error>", 7) &&
        xml_next(&body, &pos, "Code", &code))
      rc = http_error(s, "complete the upload of", key, 200, &body, err);
    ck_buf_fini(&code);
  }
  if (rc) mp_abort(s, key, (char *)id.data);
out:
  ck_buf_fini(&body);
  ck_buf_fini(&id);
  ck_buf_fini(&done);
  return rc;
}

int ck_s3_put(ck_s3_t *s, const char *key, const void *data, size_t n, int flags,
              ck_error_t *err) {
  const char *inm = (flags & CK_S3_IF_NONE_MATCH) ? "*" : NULL;
  if (n > s->part_size) return put_multipart(s, key, data, n, inm, err);
  req_t r = {.method = "PUT", .key = key, .body = data ? data : "", .n = n, .if_none_match = inm};
  return simple(s, &r, NULL, "write", err);
}

int ck_s3_list_uploads(ck_s3_t *s, const char *prefix, ck_s3_upload_fn fn, void *ctx,
                       ck_error_t *err) {
  ck_buf_t body, up, key, id, trunc, km, im;
  ck_buf_init(&body);
  ck_buf_init(&up);
  ck_buf_init(&key);
  ck_buf_init(&id);
  ck_buf_init(&trunc);
  ck_buf_init(&km);
  ck_buf_init(&im);
  int rc = 0;
  for (;;) {
    ck_sigv4_param_t q[4];
    int nq = 0;
    q[nq++] = (ck_sigv4_param_t){"uploads", ""};
    q[nq++] = (ck_sigv4_param_t){"prefix", prefix ? prefix : ""};
    if (km.len) q[nq++] = (ck_sigv4_param_t){"key-marker", (char *)km.data};
    if (im.len) q[nq++] = (ck_sigv4_param_t){"upload-id-marker", (char *)im.data};
    req_t r = {.method = "GET", .query = q, .nquery = nq};
    ck_buf_reset(&body);
    if ((rc = simple(s, &r, &body, "list the uploads of", err))) break;
    size_t pos = 0;
    while (xml_next(&body, &pos, "Upload", &up)) {
      ck_buf_t elem = {.data = up.data, .len = up.len};
      size_t p2 = 0;
      bool ok = xml_next(&elem, &p2, "Key", &key);
      p2 = 0;
      ok = ok && xml_next(&elem, &p2, "UploadId", &id);
      if (ok && fn && (rc = fn(ctx, (char *)key.data, (char *)id.data))) goto done;
    }
    pos = 0;
    bool more = xml_next(&body, &pos, "IsTruncated", &trunc) && !strcmp((char *)trunc.data, "true");
    size_t p3 = 0, p4 = 0;
    if (!more || !xml_next(&body, &p3, "NextKeyMarker", &km) ||
        !xml_next(&body, &p4, "NextUploadIdMarker", &im))
      break;
  }
done:
  ck_buf_fini(&body);
  ck_buf_fini(&up);
  ck_buf_fini(&key);
  ck_buf_fini(&id);
  ck_buf_fini(&trunc);
  ck_buf_fini(&km);
  ck_buf_fini(&im);
  return rc;
}

int ck_s3_abort_upload(ck_s3_t *s, const char *key, const char *upload_id, ck_error_t *err) {
  ck_sigv4_param_t q[1] = {{"uploadId", upload_id}};
  req_t r = {.method = "DELETE", .key = key, .query = q, .nquery = 1};
  return simple(s, &r, NULL, "abort the upload of", err);
}

int ck_s3_get(ck_s3_t *s, const char *key, ck_buf_t *out, ck_error_t *err) {
  req_t r = {.method = "GET", .key = key};
  return simple(s, &r, out, "read", err);
}

int ck_s3_head(ck_s3_t *s, const char *key, int64_t *size, ck_error_t *err) {
  ck_buf_t body;
  ck_buf_init(&body);
  long status = 0;
  req_t r = {.method = "HEAD", .key = key, .head = true};
  int rc = request(s, &r, &body, &status, "look up", err);
  ck_buf_fini(&body);
  if (rc) return rc;
  if (status == 404) return ck_error_set(err, CK_ENOTFOUND, "s3://%s/%s does not exist", s->bucket, key);
  if (status < 200 || status > 299) return http_error(s, "look up", key, status, &body, err);
  (void)size; /* sizes come from LIST; HEAD answers whether the key exists */
  if (size) *size = -1;
  return 0;
}

int ck_s3_delete(ck_s3_t *s, const char *key, ck_error_t *err) {
  req_t r = {.method = "DELETE", .key = key};
  ck_buf_t body;
  ck_buf_init(&body);
  long status = 0;
  int rc = request(s, &r, &body, &status, "delete", err);
  if (!rc && status != 404 && (status < 200 || status > 299))
    rc = http_error(s, "delete", key, status, &body, err);
  ck_buf_fini(&body);
  return rc;
}

int ck_s3_list(ck_s3_t *s, const char *prefix, ck_s3_list_fn fn, void *ctx, ck_error_t *err) {
  ck_buf_t body, token, key, size, trunc;
  ck_buf_init(&body);
  ck_buf_init(&token);
  ck_buf_init(&key);
  ck_buf_init(&size);
  ck_buf_init(&trunc);
  int rc = 0;
  for (;;) {
    ck_sigv4_param_t q[4];
    int nq = 0;
    q[nq++] = (ck_sigv4_param_t){"list-type", "2"};
    q[nq++] = (ck_sigv4_param_t){"prefix", prefix ? prefix : ""};
    if (token.len) q[nq++] = (ck_sigv4_param_t){"continuation-token", (char *)token.data};
    req_t r = {.method = "GET", .query = q, .nquery = nq};
    ck_buf_reset(&body);
    if ((rc = simple(s, &r, &body, "list", err))) break;
    size_t pos = 0;
    while (xml_next(&body, &pos, "Contents", &key)) {
      /* one <Contents> element: its Key and Size */
      ck_buf_t elem = {.data = key.data, .len = key.len};
      ck_buf_t k, z;
      ck_buf_init(&k);
      ck_buf_init(&z);
      size_t p2 = 0;
      bool ok = xml_next(&elem, &p2, "Key", &k);
      p2 = 0;
      int64_t sz = xml_next(&elem, &p2, "Size", &z) ? strtoll((char *)z.data, NULL, 10) : -1;
      if (ok && fn) rc = fn(ctx, (char *)k.data, sz);
      ck_buf_fini(&k);
      ck_buf_fini(&z);
      if (rc) goto done;
    }
    pos = 0;
    bool more = xml_next(&body, &pos, "IsTruncated", &trunc) && !strcmp((char *)trunc.data, "true");
    pos = 0;
    if (!more || !xml_next(&body, &pos, "NextContinuationToken", &token) || !token.len) break;
  }
done:
  ck_buf_fini(&body);
  ck_buf_fini(&token);
  ck_buf_fini(&key);
  ck_buf_fini(&size);
  ck_buf_fini(&trunc);
  return rc;
}

int ck_s3_create_bucket(ck_s3_t *s, ck_error_t *err) {
  ck_buf_t body;
  ck_buf_init(&body);
  long status = 0;
  req_t r = {.method = "PUT", .key = NULL, .body = "", .n = 0};
  int rc = request(s, &r, &body, &status, "create the bucket", err);
  if (!rc && (status < 200 || status > 299)) {
    size_t pos = 0;
    ck_buf_t code;
    ck_buf_init(&code);
    bool mine = xml_next(&body, &pos, "Code", &code) &&
                !strcmp((char *)code.data, "BucketAlreadyOwnedByYou");
    ck_buf_fini(&code);
    if (!mine) rc = http_error(s, "create the bucket", NULL, status, &body, err);
  }
  ck_buf_fini(&body);
  return rc;
}
