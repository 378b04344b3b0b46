/*
 * DESIGN: see json.h. A recursive-descent parser bounded by CK_JSON_MAX_DEPTH; members are
 * gathered in a growing scratch array and copied into the arena once their count is known.
 */
#include "incident/json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/alloc.h"

typedef struct parser {
  const char *p, *start, *end;
  ck_arena_t *arena;
  ck_error_t *err;
} parser_t;

static int fail(parser_t *ps, const char *what) {
  return ck_error_set(ps->err, CK_EDECODE, "could not read JSON: %s at byte %zu", what,
                      (size_t)(ps->p - ps->start));
}

static void skip_ws(parser_t *ps) {
  while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
    ps->p++;
}

/* At the opening quote: the unescaped string into the arena. */
static int parse_string(parser_t *ps, const char **out, size_t *outlen) {
  ps->p++;
  const char *s = ps->p;
  while (ps->p < ps->end && *ps->p != '"') {
    if (*ps->p == '\\') ps->p++;
    ps->p++;
  }
  if (ps->p >= ps->end) return fail(ps, "unterminated string");
  size_t raw = (size_t)(ps->p - s);
  char *o = ck_arena_alloc(ps->arena, raw + 1), *w = o; /* unescaping never grows */
  for (const char *r = s; r < ps->p; r++) {
    unsigned char c = (unsigned char)*r;
    if (c < 0x20) return fail(ps, "control character in a string");
    if (c != '\\') { *w++ = (char)c; continue; }
    r++;
    switch (*r) {
      case '"': *w++ = '"'; break;
      case '\\': *w++ = '\\'; break;
      case '/': *w++ = '/'; break;
      case 'b': *w++ = '\b'; break;
      case 'f': *w++ = '\f'; break;
      case 'n': *w++ = '\n'; break;
      case 'r': *w++ = '\r'; break;
      case 't': *w++ = '\t'; break;
      case 'u': {
        unsigned cp, lo;
        if (ps->p - r < 5 || ck_hex4(r + 1, &cp)) return fail(ps, "bad \\u escape");
        r += 4;
        if (cp >= 0xD800 && cp < 0xDC00 && ps->p - r >= 7 && r[1] == '\\' && r[2] == 'u' &&
            !ck_hex4(r + 3, &lo) && lo >= 0xDC00 && lo < 0xE000) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          r += 6;
        }
        w += ck_utf8_put(w, cp);
        break;
      }
      default: return fail(ps, "bad escape");
    }
  }
  *w = 0;
  *out = o;
  *outlen = (size_t)(w - o);
  ps->p++;
  return 0;
}

static int parse_value(parser_t *ps, int depth, ck_json_t **out);

static int parse_members(parser_t *ps, int depth, bool object, ck_json_t *v) {
  char close = object ? '}' : ']';
  ps->p++;
  int n = 0, cap = 0;
  ck_json_t **items = NULL;
  const char **keys = NULL;
  int rc = 0;
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == close) {
    ps->p++;
    goto done;
  }
  for (;;) {
    const char *key = NULL;
    size_t klen;
    skip_ws(ps);
    if (object) {
      if (ps->p >= ps->end || *ps->p != '"') { rc = fail(ps, "expected a key"); goto done; }
      if ((rc = parse_string(ps, &key, &klen))) goto done;
      skip_ws(ps);
      if (ps->p >= ps->end || *ps->p != ':') { rc = fail(ps, "expected ':'"); goto done; }
      ps->p++;
    }
    ck_json_t *item;
    if ((rc = parse_value(ps, depth + 1, &item))) goto done;
    if (n == cap) {
      cap = cap ? cap * 2 : 8;
      items = ck_realloc(items, sizeof *items * (size_t)cap);
      keys = ck_realloc(keys, sizeof *keys * (size_t)cap);
    }
    items[n] = item;
    keys[n++] = key;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') { ps->p++; continue; }
    if (ps->p < ps->end && *ps->p == close) { ps->p++; break; }
    rc = fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
    goto done;
  }
done:
  if (!rc) {
    v->n = n;
    v->items = ck_arena_alloc(ps->arena, sizeof *items * (size_t)(n ? n : 1));
    if (n) memcpy(v->items, items, sizeof *items * (size_t)n);
    if (object) {
      v->keys = ck_arena_alloc(ps->arena, sizeof *keys * (size_t)(n ? n : 1));
      if (n) memcpy(v->keys, keys, sizeof *keys * (size_t)n);
    }
  }
  ck_free(items);
  ck_free(keys);
  return rc;
}

static int parse_value(parser_t *ps, int depth, ck_json_t **out) {
  if (depth > CK_JSON_MAX_DEPTH) return fail(ps, "nested too deeply");
  skip_ws(ps);
  if (ps->p >= ps->end) return fail(ps, "unexpected end");
  ck_json_t *v = ck_arena_zalloc(ps->arena, sizeof *v);
  *out = v;
  char c = *ps->p;
  size_t left = (size_t)(ps->end - ps->p);
  if (c == '{' || c == '[') {
    v->kind = c == '{' ? CK_JSON_OBJECT : CK_JSON_ARRAY;
    return parse_members(ps, depth, c == '{', v);
  }
  if (c == '"') {
    v->kind = CK_JSON_STRING;
    return parse_string(ps, &v->str, &v->len);
  }
  if (left >= 4 && memcmp(ps->p, "null", 4) == 0) { v->kind = CK_JSON_NULL; ps->p += 4; return 0; }
  if (left >= 4 && memcmp(ps->p, "true", 4) == 0) {
    v->kind = CK_JSON_BOOL, v->boolean = true, ps->p += 4;
    return 0;
  }
  if (left >= 5 && memcmp(ps->p, "false", 5) == 0) {
    v->kind = CK_JSON_BOOL, ps->p += 5;
    return 0;
  }
  if (c == '-' || (c >= '0' && c <= '9')) {
    const char *s = ps->p;
    bool integral = true;
    if (*ps->p == '-') ps->p++;
    while (ps->p < ps->end && ((*ps->p >= '0' && *ps->p <= '9') || *ps->p == '.' ||
                               *ps->p == 'e' || *ps->p == 'E' || *ps->p == '+' || *ps->p == '-')) {
      if (*ps->p == '.' || *ps->p == 'e' || *ps->p == 'E') integral = false;
      ps->p++;
    }
    size_t n = (size_t)(ps->p - s);
    char *text = ck_arena_strndup(ps->arena, s, n);
    char *end;
    v->kind = CK_JSON_NUMBER;
    v->str = text;
    v->len = n;
    v->num = strtod(text, &end);
    if (end != text + n) return fail(ps, "bad number");
    if (integral) {
      errno = 0;
      long long i = strtoll(text, &end, 10);
      if (!errno && end == text + n) v->is_int = true, v->i = i;
    }
    return 0;
  }
  return fail(ps, "unexpected character");
}

int ck_json_parse(const char *text, size_t len, ck_arena_t *arena, ck_json_t **out,
                  ck_error_t *err) {
  parser_t ps = {text, text, text + len, arena, err};
  *out = NULL;
  int rc = parse_value(&ps, 0, out);
  if (rc) return rc;
  skip_ws(&ps);
  if (ps.p != ps.end) return fail(&ps, "trailing characters");
  return 0;
}

const ck_json_t *ck_json_get(const ck_json_t *v, const char *key) {
  if (!v || v->kind != CK_JSON_OBJECT) return NULL;
  for (int i = 0; i < v->n; i++)
    if (strcmp(v->keys[i], key) == 0) return v->items[i];
  return NULL;
}

const ck_json_t *ck_json_at(const ck_json_t *v, int i) {
  if (!v || v->kind != CK_JSON_ARRAY || i < 0 || i >= v->n) return NULL;
  return v->items[i];
}

const char *ck_json_str(const ck_json_t *v) {
  return v && v->kind == CK_JSON_STRING ? v->str : NULL;
}

bool ck_json_int(const ck_json_t *v, int64_t *out) {
  if (!v || v->kind != CK_JSON_NUMBER || !v->is_int) return false;
  *out = v->i;
  return true;
}

const char *ck_json_get_str(const ck_json_t *v, const char *key) {
  return ck_json_str(ck_json_get(v, key));
}

int64_t ck_json_get_int(const ck_json_t *v, const char *key, int64_t def) {
  int64_t x;
  return ck_json_int(ck_json_get(v, key), &x) ? x : def;
}

bool ck_json_get_bool(const ck_json_t *v, const char *key, bool def) {
  const ck_json_t *b = ck_json_get(v, key);
  return b && b->kind == CK_JSON_BOOL ? b->boolean : def;
}

bool ck_json_is_null(const ck_json_t *v) { return !v || v->kind == CK_JSON_NULL; }
