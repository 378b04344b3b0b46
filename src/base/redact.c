/* DESIGN: see redact.h. */
#include "base/redact.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/thread.h"

/* ---- names ---- */

static bool part_is(const char *p, size_t n, const char *word) {
  return strlen(word) == n && strncasecmp(p, word, n) == 0;
}

static bool part_ends(const char *p, size_t n, const char *word) {
  size_t w = strlen(word);
  return n >= w && strncasecmp(p + n - w, word, w) == 0;
}

bool ck_redact_is_secret_name(const char *name, size_t len) {
  /* the last two parts, split at '.', '_' and '-' */
  size_t end = len, cut = len;
  while (cut > 0 && !strchr("._-", name[cut - 1])) cut--;
  const char *last = name + cut;
  size_t ln = end - cut;
  const char *prev = NULL;
  size_t pn = 0;
  if (cut > 0) {
    size_t pe = cut - 1, ps = pe;
    while (ps > 0 && !strchr("._-", name[ps - 1])) ps--;
    prev = name + ps;
    pn = pe - ps;
  }
  if (!ln) return false;
  if (part_is(last, ln, "env") || part_is(last, ln, "file") || part_is(last, ln, "location"))
    return false;
  if (part_ends(last, ln, "password") || part_ends(last, ln, "passwd") ||
      part_ends(last, ln, "secret") || part_ends(last, ln, "token") || part_is(last, ln, "pwd") ||
      part_is(last, ln, "credential") || part_is(last, ln, "credentials") ||
      part_is(last, ln, "pem"))
    return true;
  if (part_is(last, ln, "key") && prev &&
      (part_is(prev, pn, "private") || part_is(prev, pn, "api") || part_is(prev, pn, "access") ||
       part_is(prev, pn, "secret")))
    return true;
  if (part_is(last, ln, "config") && prev &&
      (part_is(prev, pn, "jaas") || part_is(prev, pn, "oauthbearer")))
    return true;
  return false;
}

/* ---- remembered values ---- */

static char *remembered[CK_REDACT_MAX];
static size_t remembered_len[CK_REDACT_MAX];
static atomic_int nremembered;
static ck_mutex_t remember_mu = {PTHREAD_MUTEX_INITIALIZER};

void ck_redact_remember(const char *secret, size_t len) {
  if (len < CK_REDACT_MIN || !strcmp(secret, CK_REDACT_MASK)) return;
  ck_mutex_lock(&remember_mu);
  int n = atomic_load_explicit(&nremembered, memory_order_relaxed);
  bool known = false;
  for (int i = 0; i < n && !known; i++)
    known = remembered_len[i] == len && !memcmp(remembered[i], secret, len);
  if (!known && n < CK_REDACT_MAX) {
    remembered[n] = ck_strndup(secret, len); /* kept for the life of the process */
    remembered_len[n] = len;
    atomic_store_explicit(&nremembered, n + 1, memory_order_release);
  }
  ck_mutex_unlock(&remember_mu);
}

/* ---- the scanners ---- */

typedef struct scan {
  ck_buf_t *out;
  size_t *track;   /* offset in the input being followed, or NULL */
  size_t base;     /* offset of this input within the one track refers to */
  bool tracked;    /* *track was mapped already */
  bool changed;
} scan_t;

/* Copies in[from, to) (offsets relative to the scan's input). */
static void emit(scan_t *sc, const char *in, size_t from, size_t to) {
  if (sc->track && !sc->tracked && *sc->track >= sc->base + from && *sc->track < sc->base + to) {
    *sc->track = sc->out->len + (*sc->track - sc->base - from);
    sc->tracked = true;
  }
  ck_buf_append(sc->out, in + from, to - from);
}

/* Masks in[from, to): "***", keeping its line breaks; remembers the value. */
static void mask(scan_t *sc, const char *in, size_t from, size_t to, const char *value,
                 size_t vlen) {
  if (sc->track && !sc->tracked && *sc->track >= sc->base + from && *sc->track < sc->base + to) {
    *sc->track = sc->out->len;
    sc->tracked = true;
  }
  ck_buf_puts(sc->out, CK_REDACT_MASK);
  for (size_t i = from; i < to; i++)
    if (in[i] == '\n') ck_buf_putc(sc->out, '\n');
  ck_redact_remember(value ? value : in + from, value ? vlen : to - from);
  sc->changed = true;
}

static bool ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-'; }

/* The value after a credential-like key at in[p]: [*vs, *ve) is masked, [p, *vs) and
 * [*ve, *next) are kept (quotes). False when no '=' follows. */
static bool kv_value(const char *in, size_t n, size_t p, size_t *vs, size_t *ve, size_t *next) {
  while (p < n && (in[p] == ' ' || in[p] == '\t')) p++;
  if (p >= n || in[p] != '=' || (p + 1 < n && in[p + 1] == '=')) return false;
  p++;
  while (p < n && (in[p] == ' ' || in[p] == '\t')) p++;
  if (p < n && (in[p] == '\'' || in[p] == '"')) {
    char q = in[p];
    size_t e = p + 1;
    while (e < n && in[e] != q) e += in[e] == '\\' && e + 1 < n ? 2 : 1;
    *vs = p + 1;
    *ve = e < n ? e : n;
    *next = e < n ? e + 1 : n;
    return true;
  }
  size_t e = p;
  while (e < n && !isspace((unsigned char)in[e]) && !strchr("&;,)\"'", in[e])) e++;
  *vs = p;
  *ve = *next = e;
  return e > p;
}

/* Free text: connection-string passwords (URIs' user:PW@, key=PW pairs). */
static void scan_text(scan_t *sc, const char *in, size_t n) {
  size_t i = 0, kept = 0; /* in[kept, i) is pending, unchanged */
  while (i < n) {
    if (i + 3 <= n && in[i] == ':' && in[i + 1] == '/' && in[i + 2] == '/') {
      size_t j = i + 3, k = j, at = SIZE_MAX;
      while (k < n && !strchr("/?#\"'<> \t\r\n", in[k])) {
        if (in[k] == '@') at = k;
        k++;
      }
      if (at != SIZE_MAX) {
        const char *colon = memchr(in + j, ':', at - j);
        if (colon && (size_t)(colon - in) + 1 < at) {
          size_t c = (size_t)(colon - in) + 1;
          emit(sc, in, kept, c);
          mask(sc, in, c, at, NULL, 0);
          kept = i = at;
          continue;
        }
      }
      i = j;
      continue;
    }
    bool boundary = i == 0 || !ident_char(in[i - 1]);
    if (boundary && (ident_start(in[i]) || in[i] == '\'' || in[i] == '"')) {
      size_t ks = i, ke, after;
      if (in[i] == '\'' || in[i] == '"') { /* 'password' = '…' */
        const char *close = memchr(in + i + 1, in[i], n - i - 1);
        if (!close) {
          i++;
          continue;
        }
        ks = i + 1;
        ke = (size_t)(close - in);
        after = ke + 1;
      } else {
        ke = i;
        while (ke < n && ident_char(in[ke])) ke++;
        after = ke;
      }
      size_t vs, ve, next;
      if (ke > ks && ck_redact_is_secret_name(in + ks, ke - ks) &&
          kv_value(in, n, after, &vs, &ve, &next) && ve > vs) {
        emit(sc, in, kept, vs);
        mask(sc, in, vs, ve, NULL, 0);
        kept = ve;
        i = next;
        continue;
      }
      i = in[i] == '\'' || in[i] == '"' ? i + 1 : after; /* a quoted text is scanned inside */
      continue;
    }
    i++;
  }
  emit(sc, in, kept, n);
}

/* Masks every remembered value in out[from, …); keeps *track (an output offset) in step. */
static void mask_remembered(ck_buf_t *out, size_t from, size_t *track, bool *changed) {
  int n = atomic_load_explicit(&nremembered, memory_order_acquire);
  for (int r = 0; r < n; r++) {
    const char *sec = remembered[r];
    size_t len = remembered_len[r];
    for (size_t at = from; out->len >= len && at + len <= out->len;) {
      char *hit = memmem(out->data + at, out->len - at, sec, len);
      if (!hit) break;
      size_t h = (size_t)(hit - out->data), ml = strlen(CK_REDACT_MASK);
      memmove(hit + ml, hit + len, out->len - h - len + 1);
      memcpy(hit, CK_REDACT_MASK, ml);
      out->len = out->len - len + ml;
      if (track && *track >= h + len) *track = *track - len + ml;
      else if (track && *track > h) *track = h;
      *changed = true;
      at = h + ml;
    }
  }
}

bool ck_redact_text(const char *text, size_t n, ck_buf_t *out) {
  size_t start = out->len;
  scan_t sc = {.out = out};
  scan_text(&sc, text, n);
  mask_remembered(out, start, NULL, &sc.changed);
  if (!out->data) ck_buf_reserve(out, 0);
  return sc.changed;
}

void ck_redact_inplace(char *s, size_t cap) {
  if (!s || !*s) return;
  /* quick: nothing that could match */
  if (!strchr(s, '=') && !strstr(s, "://") &&
      atomic_load_explicit(&nremembered, memory_order_acquire) == 0)
    return;
  ck_buf_t b;
  ck_buf_init(&b);
  if (ck_redact_text(s, strlen(s), &b)) {
    size_t n = b.len < cap ? b.len : cap - 1;
    memcpy(s, b.data, n);
    s[n] = 0;
  }
  ck_buf_fini(&b);
}

void ck_redact_remember_option(const char *name, const char *value) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_redact_option(name, value, &b);
  ck_buf_fini(&b);
}

void ck_redact_option(const char *name, const char *value, ck_buf_t *out) {
  if (!value) return;
  size_t n = strlen(value);
  if (name && ck_redact_is_secret_name(name, strlen(name))) {
    scan_t sc = {.out = out};
    mask(&sc, value, 0, n, NULL, 0);
    return;
  }
  ck_redact_text(value, n, out);
}

/* ---- SQL ---- */

/* The content of a string literal at sql[s..e) (between its quotes), '' unescaped. */
static void unescape(const char *sql, size_t s, size_t e, ck_buf_t *out) {
  for (size_t i = s; i < e; i++) {
    ck_buf_putc(out, sql[i]);
    if (sql[i] == '\'' && i + 1 < e && sql[i + 1] == '\'') i++;
  }
}

bool ck_redact_sql(const char *sql, size_t n, ck_buf_t *out, size_t *track) {
  size_t start = out->len;
  scan_t sc = {.out = out, .track = track};
  size_t i = 0, kept = 0;
  /* the last key-like token (an identifier chain or a quoted name) and whether '=' followed */
  bool key_secret = false, after_key = false, pending = false;
  while (i < n) {
    char c = sql[i];
    if (isspace((unsigned char)c)) {
      i++;
      continue;
    }
    if (c == '-' && i + 1 < n && sql[i + 1] == '-') { /* a comment: free text */
      size_t e = i;
      while (e < n && sql[e] != '\n') e++;
      emit(&sc, sql, kept, i);
      sc.base = i;
      scan_text(&sc, sql + i, e - i);
      sc.base = 0;
      kept = i = e;
      after_key = pending = false;
      continue;
    }
    if (c == '/' && i + 1 < n && sql[i + 1] == '*') {
      const char *close = NULL;
      for (size_t k = i + 2; k + 1 < n && !close; k++)
        if (sql[k] == '*' && sql[k + 1] == '/') close = sql + k;
      size_t e = close ? (size_t)(close - sql) + 2 : n;
      emit(&sc, sql, kept, i);
      sc.base = i;
      scan_text(&sc, sql + i, e - i);
      sc.base = 0;
      kept = i = e;
      after_key = pending = false;
      continue;
    }
    if (c == '\'' || c == '"') { /* a string literal, or a quoted identifier */
      size_t e = i + 1;
      while (e < n) {
        if (sql[e] == c) {
          if (e + 1 < n && sql[e + 1] == c) {
            e += 2;
            continue;
          }
          break;
        }
        e++;
      }
      size_t body_end = e < n ? e : n, next = e < n ? e + 1 : n;
      ck_buf_t val;
      ck_buf_init(&val);
      unescape(sql, i + 1, body_end, &val);
      if (c == '\'' && pending && key_secret) {
        emit(&sc, sql, kept, i + 1);
        if (body_end > i + 1) mask(&sc, sql, i + 1, body_end, val.data, val.len);
        kept = body_end;
        pending = after_key = false;
      } else {
        if (c == '\'' && val.len) {
          ck_buf_t red;
          ck_buf_init(&red);
          scan_t inner = {.out = &red};
          scan_text(&inner, val.data, val.len);
          if (inner.changed) { /* a connection string's password inside it */
            emit(&sc, sql, kept, i + 1);
            if (track && !sc.tracked && *track > i && *track < body_end) {
              *track = out->len;
              sc.tracked = true;
            }
            for (size_t k = 0; k < red.len; k++) {
              if (red.data[k] == '\'') ck_buf_putc(out, '\'');
              ck_buf_putc(out, red.data[k]);
            }
            sc.changed = true;
            kept = body_end;
          }
          ck_buf_fini(&red);
        }
        /* as a key: 'password' = '…' (or "password" = '…') */
        key_secret = val.len && ck_redact_is_secret_name(val.data, val.len);
        after_key = true;
        pending = false;
      }
      ck_buf_fini(&val);
      i = next;
      continue;
    }
    if (ident_start(c)) {
      size_t e = i;
      while (e < n && (isalnum((unsigned char)sql[e]) || sql[e] == '_' || sql[e] == '.')) e++;
      key_secret = ck_redact_is_secret_name(sql + i, e - i);
      after_key = true;
      pending = false;
      i = e;
      continue;
    }
    pending = after_key && c == '=';
    after_key = false;
    i++;
  }
  emit(&sc, sql, kept, n);
  if (track && !sc.tracked) *track = out->len; /* at or past the end */
  mask_remembered(out, start, track, &sc.changed);
  if (!out->data) ck_buf_reserve(out, 0);
  return sc.changed;
}
