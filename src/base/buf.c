/* DESIGN: see buf.h. */
#include "base/buf.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"

void ck_buf_init(ck_buf_t *buf) {
  buf->data = NULL;
  buf->len = buf->cap = 0;
}

void ck_buf_fini(ck_buf_t *buf) {
  ck_free(buf->data);
  ck_buf_init(buf);
}

void ck_buf_reset(ck_buf_t *buf) {
  buf->len = 0;
  if (buf->data) buf->data[0] = 0;
}

void ck_buf_reserve(ck_buf_t *buf, size_t extra) {
  size_t need = buf->len + extra + 1;
  if (need <= buf->cap) return;
  size_t cap = buf->cap ? buf->cap : 64;
  while (cap < need) cap *= 2;
  buf->data = ck_realloc(buf->data, cap);
  buf->cap = cap;
}

void ck_buf_append(ck_buf_t *buf, const void *p, size_t n) {
  ck_buf_reserve(buf, n);
  if (n) memcpy(buf->data + buf->len, p, n);
  buf->len += n;
  buf->data[buf->len] = 0;
}

void ck_buf_putc(ck_buf_t *buf, char c) {
  ck_buf_reserve(buf, 1);
  buf->data[buf->len++] = c;
  buf->data[buf->len] = 0;
}

void ck_buf_puts(ck_buf_t *buf, const char *s) { ck_buf_append(buf, s, strlen(s)); }

void ck_buf_printf(ck_buf_t *buf, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  ck_buf_reserve(buf, (size_t)n);
  vsnprintf(buf->data + buf->len, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  buf->len += (size_t)n;
}

void ck_buf_put_json_str(ck_buf_t *buf, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  ck_buf_reserve(buf, n + 2);
  ck_buf_putc(buf, '"');
  size_t run = 0; /* start of the current run of bytes that need no escape */
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    ck_buf_append(buf, s + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': ck_buf_append(buf, "\\\"", 2); break;
      case '\\': ck_buf_append(buf, "\\\\", 2); break;
      case '\n': ck_buf_append(buf, "\\n", 2); break;
      case '\r': ck_buf_append(buf, "\\r", 2); break;
      case '\t': ck_buf_append(buf, "\\t", 2); break;
      case '\b': ck_buf_append(buf, "\\b", 2); break;
      case '\f': ck_buf_append(buf, "\\f", 2); break;
      default: {
        char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        ck_buf_append(buf, e, 6);
      }
    }
  }
  ck_buf_append(buf, s + run, n - run);
  ck_buf_putc(buf, '"');
}

char *ck_buf_detach(ck_buf_t *buf) {
  if (!buf->data) ck_buf_reserve(buf, 0), buf->data[0] = 0;
  char *d = buf->data;
  ck_buf_init(buf);
  return d;
}

bool ck_str_eq(ck_str_t a, ck_str_t b) {
  return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

bool ck_str_ieq(ck_str_t a, ck_str_t b) {
  if (a.len != b.len) return false;
  for (size_t i = 0; i < a.len; i++)
    if (tolower((unsigned char)a.ptr[i]) != tolower((unsigned char)b.ptr[i])) return false;
  return true;
}

bool ck_streq_i(const char *a, const char *b) { return ck_str_ieq(ck_str_of(a), ck_str_of(b)); }

int ck_edit_distance(const char *a, const char *b) {
  /* optimal string alignment: insert, delete, substitute, and swap of two neighbours, each 1,
   * so "rnu" is one edit from "run" */
  size_t la = strlen(a), lb = strlen(b);
  int stack[3 * 65];
  int *buf = lb < 65 ? stack : ck_malloc(3 * (lb + 1) * sizeof *buf);
  int *pp = buf, *prev = buf + (lb + 1), *row = buf + 2 * (lb + 1);
  for (size_t j = 0; j <= lb; j++) prev[j] = (int)j;
#define CK_LOW(c) tolower((unsigned char)(c))
  for (size_t i = 1; i <= la; i++) {
    row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int cost = CK_LOW(a[i - 1]) == CK_LOW(b[j - 1]) ? 0 : 1;
      int best = prev[j - 1] + cost;
      if (prev[j] + 1 < best) best = prev[j] + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      if (i > 1 && j > 1 && CK_LOW(a[i - 1]) == CK_LOW(b[j - 2]) &&
          CK_LOW(a[i - 2]) == CK_LOW(b[j - 1]) && pp[j - 2] + 1 < best)
        best = pp[j - 2] + 1;
      row[j] = best;
    }
    int *t = pp;
    pp = prev;
    prev = row;
    row = t;
  }
#undef CK_LOW
  int d = prev[lb];
  if (buf != stack) ck_free(buf);
  return d;
}

const char *ck_closest(const char *word, const char *const *candidates, size_t n) {
  const char *best = NULL;
  int best_d = 1 << 30;
  for (size_t i = 0; i < n; i++) {
    int d = ck_edit_distance(word, candidates[i]);
    if (d < best_d) best_d = d, best = candidates[i];
  }
  size_t len = strlen(word);
  int limit = len <= 3 ? 1 : len <= 6 ? 2 : 3;
  return best && best_d <= limit ? best : NULL;
}

int ck_hex4(const char *s, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = s[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else return -1;
  }
  *out = v;
  return 0;
}

size_t ck_utf8_put(char *o, unsigned cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}
