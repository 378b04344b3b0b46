/*
 * DESIGN: the JSON format — a single-pass decoder straight into column builders, and the
 * row encoder. See format.h for what each type accepts and produces.
 *
 * Decoder: a hand-written recursive-descent-free scanner over one record. The top-level object
 * is walked field by field; a field whose name matches a column is parsed directly into that
 * column (strings without escapes are appended from the record itself, with escapes they are
 * unescaped into a reused scratch buffer); every other field is skipped by a validating
 * iterative scanner with a fixed depth limit, so hostile nesting cannot exhaust the stack.
 * Field names are looked up by trying first the column that followed the previous match in the
 * last record (records almost always list their fields in the same order, not necessarily the
 * schema's): when the key's bytes are that column's name it is taken without scanning the key.
 * Otherwise the key is parsed and looked up by exact, then by case-insensitive comparison.
 * Strings are scanned sixteen bytes at a time (SSE2) for the quote, a backslash or a control
 * character; integer columns take plain integers without the general number scanner.
 * Columns seen in the current record are marked with a generation stamp, so nothing is
 * cleared per record. No allocation happens per record once the scratch buffers have grown.
 * UTF-8 was validated for the whole record by ck_decoder_decode before we run.
 *
 * Encoder: the key of each column is escaped once, at creation, together with the sorted key
 * order (and the slot of the "op" key of changelog rows); a row is then a walk over that order.
 *
 * Threads: a decoder/encoder belongs to one subtask.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "base/buf.h"
#include "base/alloc.h"
#include "connectors/format_impl.h"

#define JSON_MAX_DEPTH 512

/* ======================================================================== decoder ====== */

typedef struct json_col {
  const char *name;
  size_t len;
  ck_type_t type;
  bool plain; /* the name needs no escape in JSON: a key spelled as the name is the name */
  bool ascii; /* the name is ASCII: it folds byte by byte against an ASCII key */
} json_col_t;

typedef struct json_dec {
  ck_decoder_t base;
  int ncols;
  json_col_t *cols;
  uint32_t *seen; /* seen[c] == gen: column c was set in the current record */
  uint32_t gen;
  int *after;      /* after[c + 1]: the column that followed column c (after[0]: came first)
                   * in the last record that had c, the column to try first for the next key */
  ck_buf_t str;    /* unescaped string values */
  ck_buf_t key;    /* unescaped field names */
  ck_buf_t num;    /* number text for strtod / decimal normalisation */
  ck_col_t text;   /* a string read for a TIMESTAMP column */
} json_dec_t;

/* Parser state for one record. */
typedef struct jp {
  const char *p, *end, *start;
  json_dec_t *dec;
  ck_error_t *err;
} jp_t;

/* 1 for bytes that end the fast scan of a string: '"', '\\' and control characters. */
static const uint8_t str_stop[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

static inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

static inline void skip_ws(jp_t *jp) {
  const char *p = jp->p, *end = jp->end;
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
  jp->p = p;
}

static int syntax(jp_t *jp, const char *what) {
  if (jp->p >= jp->end)
    return ck_error_set(jp->err, CK_EDECODE, "malformed JSON: %s, found the end of the record",
                        what);
  char c = *jp->p;
  if ((unsigned char)c >= 0x20 && (unsigned char)c < 0x7f)
    return ck_error_set(jp->err, CK_EDECODE, "malformed JSON at byte offset %zu: %s, found '%c'",
                        (size_t)(jp->p - jp->start), what, c);
  return ck_error_set(jp->err, CK_EDECODE,
                      "malformed JSON at byte offset %zu: %s, found byte 0x%02x",
                      (size_t)(jp->p - jp->start), what, (unsigned)(unsigned char)c);
}

static int field_error(jp_t *jp, int c, const char *reason) {
  return ck_error_set(jp->err, CK_EDECODE, "field '%s': %s", jp->dec->cols[c].name, reason);
}

static const char *json_kind(char c) {
  switch (c) {
    case '"': return "string";
    case '{': return "object";
    case '[': return "array";
    case 't':
    case 'f': return "boolean";
    default: return "number";
  }
}

/* The first byte at or after p that is '"', '\\', a control character or not ASCII (the start
 * of a multi-byte character, checked where it is met: see unescape), or end. Sixteen bytes at
 * a time with SSE2 (every x86-64), else eight at a time in a word; then byte by byte. */
static inline const char *str_scan(const char *p, const char *end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
  const __m128i ctl = _mm_set1_epi8(0x1f);
  while (end - p >= 16) {
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),
                               _mm_cmpeq_epi8(_mm_max_epu8(x, ctl), ctl)); /* x <= 0x1f */
    unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(hit, x)); /* or x >= 0x80 */
    if (m) return p + __builtin_ctz(m);
    p += 16;
  }
#endif
  while (end - p >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
    uint64_t hit = ((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w;
    if (hit & highs) break;
    p += 8;
  }
  while (p < end && !str_stop[(unsigned char)*p]) p++;
  return p;
}

/* str_scan that copies as it scans: the bytes from p up to the returned stop are written to o,
 * and up to 15 bytes past them, so o must have room for end - p bytes. One pass over a
 * string's bytes instead of a scan and then a copy. */
static inline const char *str_scan_copy(const char *p, const char *end, char *o) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
  const __m128i ctl = _mm_set1_epi8(0x1f);
  while (end - p >= 16) {
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    _mm_storeu_si128((__m128i *)(void *)o, x);
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),
                               _mm_cmpeq_epi8(_mm_max_epu8(x, ctl), ctl));
    unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(hit, x));
    if (m) return p + __builtin_ctz(m);
    p += 16;
    o += 16;
  }
#endif
  while (p < end && !str_stop[(unsigned char)*p]) *o++ = *p++;
  return p;
}

/* Unescapes the rest of a string whose first escape (or stop byte) is at p, begin being just
 * past its opening quote, into o: the bytes before p are copied first. o must have room for
 * jp->end - begin bytes (an escape is never longer than the text it stands for), so the loop
 * writes through a pointer. On success *oend is past the last byte written and jp->p is past
 * the closing quote. */
static int unescape(jp_t *jp, const char *begin, const char *p, char *o, char **oend) {
  const char *end = jp->end;
  memcpy(o, begin, (size_t)(p - begin));
  o += p - begin;
  for (;;) {
    if (p >= end) {
      jp->p = p;
      return syntax(jp, "unterminated string");
    }
    char c = *p;
    if (c == '"') break;
    if ((unsigned char)c < 0x20) {
      jp->p = p;
      return syntax(jp, "control characters must be escaped in a string");
    }
    if ((unsigned char)c >= 0x80) { /* a multi-byte character: valid UTF-8, or the error */
      size_t k = ck_format_utf8_seq((const unsigned char *)p, (size_t)(end - p));
      if (!k) return ck_format_utf8_error(jp->start, (size_t)(p - jp->start), jp->err);
      memcpy(o, p, k);
      o += k;
      p += k;
      continue;
    }
    if (c != '\\') {
      const char *q = str_scan_copy(p, end, o);
      o += q - p;
      p = q;
      continue;
    }
    if (p + 1 >= end) {
      jp->p = p + 1;
      return syntax(jp, "unterminated string");
    }
    char e = p[1];
    char lit = 0;
    switch (e) {
      case '"': lit = '"'; break;
      case '\\': lit = '\\'; break;
      case '/': lit = '/'; break;
      case 'b': lit = '\b'; break;
      case 'f': lit = '\f'; break;
      case 'n': lit = '\n'; break;
      case 'r': lit = '\r'; break;
      case 't': lit = '\t'; break;
      case 'u': {
        unsigned cp, lo;
        if (end - p < 6 || ck_hex4(p + 2, &cp) < 0) {
          jp->p = p;
          return syntax(jp, "\\u must be followed by four hex digits");
        }
        p += 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
          jp->p = p - 6;
          return syntax(jp, "unpaired UTF-16 low surrogate in \\u escape");
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || ck_hex4(p + 2, &lo) < 0 || lo < 0xDC00 ||
              lo > 0xDFFF) {
            jp->p = p - 6;
            return syntax(jp, "unpaired UTF-16 high surrogate in \\u escape");
          }
          p += 6;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        o += ck_utf8_put(o, cp);
        continue;
      }
      default:
        jp->p = p;
        return syntax(jp, "invalid escape in string");
    }
    *o++ = lit;
    p += 2;
  }
  *oend = o;
  jp->p = p + 1;
  return 0;
}

/* jp->p is just past the opening quote. On return *s and *n hold the string's bytes: a span of
 * the record when it had no escapes, else scratch's contents; jp->p is past the closing quote. */
static int parse_string(jp_t *jp, ck_buf_t *scratch, const char **s, size_t *n) {
  const char *begin = jp->p, *end = jp->end;
  const char *p = str_scan(begin, end);
  if (p < end && *p == '"') {
    *s = begin;
    *n = (size_t)(p - begin);
    jp->p = p + 1;
    return 0;
  }
  ck_buf_reset(scratch);
  ck_buf_reserve(scratch, (size_t)(end - begin));
  char *o;
  int rc = unescape(jp, begin, p, scratch->data, &o);
  if (rc) return rc;
  scratch->len = (size_t)(o - scratch->data);
  scratch->data[scratch->len] = 0;
  *s = scratch->data;
  *n = scratch->len;
  return 0;
}

/* A string value into a VARCHAR column: scanned and copied in one pass straight into the
 * column's bytes, unescaped there when it has escapes. jp->p is just past the opening quote. */
static int string_into(jp_t *jp, ck_col_t *col) {
  const char *begin = jp->p, *end = jp->end;
  char *o0 = ck_col_str_reserve(col, (size_t)(end - begin)), *o;
  const char *p = str_scan_copy(begin, end, o0);
  if (p < end && *p == '"') {
    ck_col_str_commit(col, (size_t)(p - begin));
    jp->p = p + 1;
    return 0;
  }
  /* the bytes before p are in place already */
  int rc = unescape(jp, p, p, o0 + (p - begin), &o);
  if (rc) return rc; /* nothing appended: the room stays spare */
  ck_col_str_commit(col, (size_t)(o - o0));
  return 0;
}

/* A number at jp->p, by the one number grammar (format.c); a syntax error at the first byte
 * that does not fit it. */
static int scan_number(jp_t *jp, ck_num_t *num) {
  const char *why, *at;
  if (ck_format_scan_number(jp->p, jp->end, num, &why, &at)) {
    jp->p = at;
    return syntax(jp, why);
  }
  jp->p = num->s + num->n;
  return 0;
}

static int number_into(jp_t *jp, int c, ck_col_t *col) {
  json_dec_t *dec = jp->dec;
  ck_num_t num;
  int rc = scan_number(jp, &num);
  if (rc) return rc;
  ck_type_t type = dec->cols[c].type;
  char tok[64];
  switch (type.id) {
    case CK_T_INT32:
    case CK_T_INT64:
    case CK_T_TIMESTAMP: {
      if (num.frac || num.exp) {
        ck_format_token(num.s, num.n, tok, sizeof tok);
        char reason[128];
        snprintf(reason, sizeof reason, "%s, found %s", ck_format_expected(type), tok);
        return field_error(jp, c, reason);
      }
      uint64_t lim = type.id == CK_T_INT32 ? (num.neg ? 2147483648ULL : 2147483647ULL)
                                           : (num.neg ? 9223372036854775808ULL
                                                      : 9223372036854775807ULL);
      if (num.ibig || num.ipart > lim) {
        char t[40], reason[160];
        ck_format_token(num.s, num.n, tok, sizeof tok);
        snprintf(reason, sizeof reason, "%s is out of range for %s", tok,
                 ck_type_name(type, t, sizeof t));
        return field_error(jp, c, reason);
      }
      int64_t v = num.neg ? (int64_t)(0 - num.ipart) : (int64_t)num.ipart;
      if (type.id == CK_T_INT32) ck_col_append_i32(col, (int32_t)v);
      else ck_col_append_i64(col, v);
      return 0;
    }
    case CK_T_FLOAT64: {
      double d;
      if (!ck_format_num_double(&num, &dec->num, &d)) {
        char reason[96];
        ck_format_token(num.s, num.n, tok, sizeof tok);
        snprintf(reason, sizeof reason, "%s is out of range for DOUBLE", tok);
        return field_error(jp, c, reason);
      }
      ck_col_append_f64(col, d);
      return 0;
    }
    case CK_T_FLOAT32: {
      float f;
      if (!ck_format_num_float(&num, &dec->num, &f)) {
        char reason[96];
        ck_format_token(num.s, num.n, tok, sizeof tok);
        snprintf(reason, sizeof reason, "%s is out of range for FLOAT", tok);
        return field_error(jp, c, reason);
      }
      ck_col_append_f32(col, f);
      return 0;
    }
    case CK_T_DECIMAL: {
      const char *s;
      size_t n;
      ck_i128 v;
      if (!ck_format_num_plain(&num, &dec->num, &s, &n) ||
          !ck_decimal_parse(s, n, type.precision, type.scale, &v)) {
        char t[40], reason[160];
        ck_format_token(num.s, num.n, tok, sizeof tok);
        snprintf(reason, sizeof reason, "%s does not fit %s", tok,
                 ck_type_name(type, t, sizeof t));
        return field_error(jp, c, reason);
      }
      ck_col_append_dec(col, v);
      return 0;
    }
    case CK_T_STRING: /* the number's JSON text */
      ck_col_append_str(col, num.s, num.n);
      return 0;
    case CK_T_BOOL: {
      char reason[64];
      snprintf(reason, sizeof reason, "%s, found number", ck_format_expected(type));
      return field_error(jp, c, reason);
    }
    case CK_T_NULL: ck_col_append_null(col); return 0;
  }
  return 0;
}

static int literal(jp_t *jp, const char *word, size_t n) {
  if ((size_t)(jp->end - jp->p) < n || memcmp(jp->p, word, n) != 0)
    return syntax(jp, "expected a value");
  jp->p += n;
  return 0;
}

/* Skips one value of any kind at jp->p, validating it. */
static int skip_value(jp_t *jp) {
  uint8_t stack[JSON_MAX_DEPTH]; /* '{' or '[' per open container */
  int depth = 0, rc;
  const char *s;
  size_t n;
  ck_num_t num;
value:
  skip_ws(jp);
  if (jp->p >= jp->end) return syntax(jp, "expected a value");
  switch (*jp->p) {
    case '{':
    case '[':
      if (depth == JSON_MAX_DEPTH) return syntax(jp, "nesting deeper than 512 levels");
      stack[depth++] = (uint8_t)*jp->p++;
      skip_ws(jp);
      if (jp->p < jp->end && *jp->p == (stack[depth - 1] == '{' ? '}' : ']')) {
        jp->p++;
        depth--;
        goto after;
      }
      if (stack[depth - 1] == '{') goto key;
      goto value;
    case '"':
      jp->p++;
      if ((rc = parse_string(jp, &jp->dec->str, &s, &n))) return rc;
      goto after;
    case 't':
      if ((rc = literal(jp, "true", 4))) return rc;
      goto after;
    case 'f':
      if ((rc = literal(jp, "false", 5))) return rc;
      goto after;
    case 'n':
      if ((rc = literal(jp, "null", 4))) return rc;
      goto after;
    default:
      if (*jp->p == '-' || is_digit(*jp->p)) {
        if ((rc = scan_number(jp, &num))) return rc;
        goto after;
      }
      return syntax(jp, "expected a value");
  }
key:
  skip_ws(jp);
  if (jp->p >= jp->end || *jp->p != '"') return syntax(jp, "expected a field name in quotes");
  jp->p++;
  if ((rc = parse_string(jp, &jp->dec->key, &s, &n))) return rc;
  skip_ws(jp);
  if (jp->p >= jp->end || *jp->p != ':') return syntax(jp, "expected ':' after a field name");
  jp->p++;
  goto value;
after:
  if (depth == 0) return 0;
  skip_ws(jp);
  if (jp->p < jp->end) {
    char ch = *jp->p;
    if (ch == ',') {
      jp->p++;
      if (stack[depth - 1] == '{') goto key;
      goto value;
    }
    if (ch == (stack[depth - 1] == '{' ? '}' : ']')) {
      jp->p++;
      depth--;
      goto after;
    }
  }
  return syntax(jp, stack[depth - 1] == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
}

/* An integer column's commonest value: an optional '-', then 1 to 18 digits without a leading
 * zero, not followed by a fraction or an exponent. Appended, true; anything else (including an
 * INT out of range) is left to number_into, which reports it, false. */
static inline bool int_fast(jp_t *jp, ck_type_id_t id, ck_col_t *col) {
  const char *p = jp->p, *end = jp->end;
  bool neg = *p == '-';
  p += neg;
  if (p >= end || *p < '1' || *p > '9') return false;
  const char *ds = p;
  uint64_t v = 0;
  /* Up to eight digits at a time: the digits at the start of the next eight bytes are counted
   * from a mask of the bytes that are not digits (a borrow or carry only runs upwards, past the
   * first non-digit, which is the one counted to), moved to the top of the word (the bytes
   * shifted in are zeros, leading zeros of the number) and converted together. */
  while (end - p >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    uint64_t d = w - 0x3030303030303030ULL;
    uint64_t non = (d | (w + 0x4646464646464646ULL)) & 0x8080808080808080ULL;
    int n = non ? __builtin_ctzll(non) >> 3 : 8;
    if (n == 0) break;
    if (p - ds + n > 18) return false;
    if (n < 8) d <<= 8 * (8 - n);
    d = d * 10 + (d >> 8);
    d = (((d & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
         (((d >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >> 32;
    static const uint64_t pow10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                      100000000};
    v = v * pow10[n] + d;
    p += n;
    if (n < 8) goto digits_done;
  }
  while (p < end && is_digit(*p) && p - ds < 18) v = v * 10 + (uint64_t)(*p++ - '0');
digits_done:
  if (p < end && (is_digit(*p) || *p == '.' || *p == 'e' || *p == 'E')) return false;
  if (id == CK_T_INT32) {
    if (v > (neg ? 2147483648ULL : 2147483647ULL)) return false;
    ck_col_append_i32(col, (int32_t)(neg ? (int64_t)0 - (int64_t)v : (int64_t)v));
  } else {
    ck_col_append_i64(col, neg ? (int64_t)0 - (int64_t)v : (int64_t)v);
  }
  jp->p = p;
  return true;
}

/* A string into a TIMESTAMP column: ISO 8601 or SQL text (ck_timestamp_parse_iso); the
 * error quotes it. jp->p is at the opening quote. */
static int timestamp_into(jp_t *jp, int c, ck_col_t *col) {
  json_dec_t *dec = jp->dec;
  jp->p++;
  ck_col_clear(&dec->text);
  int rc = string_into(jp, &dec->text);
  if (rc) return rc;
  size_t n;
  const char *s = ck_col_str(&dec->text, 0, &n);
  int64_t ms;
  ck_type_t type = dec->cols[c].type;
  if (ck_datetime_parse_text(type, s, n, &ms)) {
    ck_col_append_i64(col, ms);
    return 0;
  }
  char tok[64], reason[160];
  ck_format_token(s, n, tok, sizeof tok);
  if (ck_type_ts_kind(type) > 0) {
    snprintf(reason, sizeof reason, "'%s' is not a %s (%s)", tok,
             ck_type_is_date(type) ? "date" : "time of day", ck_format_expected(type));
    return field_error(jp, c, reason);
  }
  snprintf(reason, sizeof reason, "'%s' is not a timestamp (expected 'yyyy-MM-dd HH:mm:ss[.SSS]' "
           "or ISO 8601, or epoch milliseconds)", tok);
  return field_error(jp, c, reason);
}

/* Parses the value at jp->p into column c. */
static int value_into(jp_t *jp, int c, ck_col_t *col) {
  json_dec_t *dec = jp->dec;
  ck_type_t type = dec->cols[c].type;
  if (jp->p >= jp->end) return syntax(jp, "expected a value");
  char ch = *jp->p;
  int rc;
  switch (ch) {
    case '"': {
      if (type.id == CK_T_TIMESTAMP) return timestamp_into(jp, c, col);
      if (type.id != CK_T_STRING) {
        char reason[96];
        snprintf(reason, sizeof reason, "%s, found string", ck_format_expected(type));
        return field_error(jp, c, reason);
      }
      jp->p++;
      return string_into(jp, col);
    }
    case 'n':
      if ((rc = literal(jp, "null", 4))) return rc;
      ck_col_append_null(col);
      return 0;
    case 't':
    case 'f': {
      bool v = ch == 't';
      if ((rc = v ? literal(jp, "true", 4) : literal(jp, "false", 5))) return rc;
      if (type.id == CK_T_BOOL) ck_col_append_bool(col, v);
      else if (type.id == CK_T_STRING) ck_col_append_str(col, v ? "true" : "false", v ? 4 : 5);
      else if (type.id == CK_T_NULL) ck_col_append_null(col);
      else {
        char reason[96];
        snprintf(reason, sizeof reason, "%s, found boolean", ck_format_expected(type));
        return field_error(jp, c, reason);
      }
      return 0;
    }
    case '{':
    case '[': {
      if (type.id != CK_T_STRING && type.id != CK_T_NULL) {
        char reason[96];
        snprintf(reason, sizeof reason, "%s, found %s", ck_format_expected(type), json_kind(ch));
        return field_error(jp, c, reason);
      }
      const char *begin = jp->p;
      if ((rc = skip_value(jp))) return rc;
      if (type.id == CK_T_STRING) ck_col_append_str(col, begin, (size_t)(jp->p - begin));
      else ck_col_append_null(col);
      return 0;
    }
    default:
      if ((ch == '-' || is_digit(ch)) && ck_type_ts_kind(type) > 0) {
        char reason[96]; /* a DATE or TIME is read from text only, as Flink's JSON format does */
        snprintf(reason, sizeof reason, "%s, found a number", ck_format_expected(type));
        return field_error(jp, c, reason);
      }
      if (ch == '-' || is_digit(ch)) {
        if ((type.id == CK_T_INT64 || type.id == CK_T_TIMESTAMP || type.id == CK_T_INT32) &&
            int_fast(jp, type.id, col))
          return 0;
        return number_into(jp, c, col);
      }
      return syntax(jp, "expected a value");
  }
}

/* Equality of two short byte strings without a libc call (field names are mostly short). */
static inline bool bytes_eq(const char *a, const char *b, size_t n) {
  if (n > 16) return memcmp(a, b, n) == 0;
  if (n >= 8) {
    uint64_t x, y, z, w;
    memcpy(&x, a, 8), memcpy(&y, b, 8), memcpy(&z, a + n - 8, 8), memcpy(&w, b + n - 8, 8);
    return x == y && z == w;
  }
  if (n >= 4) {
    uint32_t x, y, z, w;
    memcpy(&x, a, 4), memcpy(&y, b, 4), memcpy(&z, a + n - 4, 4), memcpy(&w, b + n - 4, 4);
    return x == y && z == w;
  }
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return false;
  return true;
}

static inline int find_col(json_dec_t *dec, int h, const char *k, size_t n) {
  if (h < dec->ncols && dec->cols[h].len == n && bytes_eq(dec->cols[h].name, k, n)) return h;
  for (int i = 0; i < dec->ncols; i++)
    if (dec->cols[i].len == n && bytes_eq(dec->cols[i].name, k, n)) return i;
  bool ascii = true; /* a key that is no column's: its bytes once, not once per column */
  for (size_t j = 0; j < n && ascii; j++) ascii = (unsigned char)k[j] < 0x80;
  for (int i = 0; i < dec->ncols; i++) {
    const json_col_t *col = &dec->cols[i];
    if (ascii && col->ascii ? ck_str_ieq((ck_str_t){col->name, col->len}, (ck_str_t){k, n})
                            : ck_utf8_ieq(col->name, col->len, k, n)) /* Unicode folding */
      return i;
  }
  return -1;
}

static int json_decode(ck_decoder_t *base, const char *rec, size_t len, ck_batch_t *batch,
                       ck_error_t *err) {
  json_dec_t *dec = (json_dec_t *)base;
  jp_t jp = {rec, rec + len, rec, dec, err};
  size_t row0 = ck_format_row0(batch);
  uint32_t gen = ++dec->gen;
  int prev = -1; /* the last column matched in this record */
  if (gen == 0) { /* wrapped: forget every old stamp */
    memset(dec->seen, 0, sizeof *dec->seen * (size_t)(dec->ncols ? dec->ncols : 1));
    gen = dec->gen = 1;
  }
  int rc;
  skip_ws(&jp);
  if (jp.p >= jp.end || *jp.p != '{') {
    const char *found = NULL;
    size_t left = (size_t)(jp.end - jp.p);
    if (left && (*jp.p == '[' || *jp.p == '"' || *jp.p == '-' || is_digit(*jp.p)))
      found = json_kind(*jp.p);
    else if ((left >= 4 && !memcmp(jp.p, "true", 4)) || (left >= 5 && !memcmp(jp.p, "false", 5)))
      found = "boolean";
    else if (left >= 4 && !memcmp(jp.p, "null", 4))
      found = "null";
    if (found) rc = ck_error_set(err, CK_EDECODE, "expected a JSON object, found %s", found);
    else rc = syntax(&jp, "expected a JSON object");
    goto fail;
  }
  jp.p++;
  skip_ws(&jp);
  if (jp.p < jp.end && *jp.p == '}') {
    jp.p++;
  } else {
    for (;;) {
      if (jp.p >= jp.end || *jp.p != '"') {
        rc = syntax(&jp, "expected a field name in quotes");
        goto fail;
      }
      jp.p++;
      int c, h = dec->after[prev + 1];
      const json_col_t *hc = &dec->cols[h < dec->ncols ? h : 0];
      if (h < dec->ncols && hc->plain && (size_t)(jp.end - jp.p) > hc->len &&
          jp.p[hc->len] == '"' && bytes_eq(jp.p, hc->name, hc->len)) {
        c = h; /* the key the last record had here, spelled as the column: no scan, no search */
        jp.p += hc->len + 1;
      } else {
        const char *k;
        size_t kn;
        if ((rc = parse_string(&jp, &dec->key, &k, &kn))) goto fail;
        c = find_col(dec, h, k, kn);
      }
      skip_ws(&jp);
      if (jp.p >= jp.end || *jp.p != ':') {
        rc = syntax(&jp, "expected ':' after a field name");
        goto fail;
      }
      jp.p++;
      skip_ws(&jp);
      if (c < 0) {
        if ((rc = skip_value(&jp))) goto fail;
      } else {
        ck_col_t *col = &batch->cols[c];
        if (dec->seen[c] == gen) ck_format_col_truncate(col, row0); /* repeated: last wins */
        if ((rc = value_into(&jp, c, col))) goto fail;
        dec->seen[c] = gen;
        dec->after[prev + 1] = c;
        prev = c;
      }
      skip_ws(&jp);
      if (jp.p < jp.end && *jp.p == ',') {
        jp.p++;
        skip_ws(&jp);
        continue;
      }
      if (jp.p < jp.end && *jp.p == '}') {
        jp.p++;
        break;
      }
      rc = syntax(&jp, "expected ',' or '}'");
      goto fail;
    }
  }
  skip_ws(&jp);
  if (jp.p != jp.end) {
    rc = syntax(&jp, "expected the end of the record after the object");
    goto fail;
  }
  for (int c = 0; c < dec->ncols; c++)
    if (dec->seen[c] != gen) ck_col_append_null(&batch->cols[c]);
  batch->nrows = row0 + 1;
  return 0;
fail:
  ck_format_rollback(batch, row0);
  /* UTF-8 is checked where strings are scanned; a bad byte anywhere else stops the parser
   * with some other complaint first. The UTF-8 error wins, as when it was checked first. */
  size_t bad = ck_format_utf8_invalid_at(rec, len);
  if (bad < len) {
    ck_error_clear(err);
    rc = ck_format_utf8_error(rec, bad, err);
  }
  return rc;
}

static void json_dec_free(ck_decoder_t *base) {
  json_dec_t *dec = (json_dec_t *)base;
  ck_buf_fini(&dec->str);
  ck_buf_fini(&dec->key);
  ck_buf_fini(&dec->num);
  ck_col_fini(&dec->text);
  ck_free(dec->cols);
  ck_free(dec->seen);
  ck_free(dec->after);
  ck_free(dec);
}

static const ck_decoder_ops_t json_dec_ops = {json_decode, NULL, json_dec_free};

ck_decoder_t *ck_format_json_decoder_new(const ck_schema_t *schema) {
  json_dec_t *dec = ck_calloc(1, sizeof *dec);
  dec->base.ops = &json_dec_ops;
  dec->base.checks_utf8 = true;
  dec->base.schema = schema;
  dec->ncols = schema->ncols;
  ck_col_init(&dec->text, CK_TYPE(CK_T_STRING), 1);
  size_t n = (size_t)(schema->ncols ? schema->ncols : 1);
  dec->cols = ck_calloc(n, sizeof *dec->cols);
  dec->seen = ck_calloc(n, sizeof *dec->seen);
  dec->after = ck_calloc(n + 1, sizeof *dec->after);
  for (int c = 0; c < schema->ncols; c++) {
    json_col_t *col = &dec->cols[c];
    col->name = schema->names[c];
    col->len = strlen(schema->names[c]);
    col->type = schema->types[c];
    col->plain = col->ascii = true;
    for (size_t i = 0; i < col->len; i++) {
      if (str_stop[(unsigned char)col->name[i]]) col->plain = false;
      if ((unsigned char)col->name[i] >= 0x80) col->ascii = false;
    }
    dec->after[c] = c; /* until records say otherwise: fields in the schema's order */
  }
  dec->after[schema->ncols] = schema->ncols;
  ck_buf_init(&dec->str);
  ck_buf_init(&dec->key);
  ck_buf_init(&dec->num);
  return &dec->base;
}

/* ======================================================================== encoder ====== */

typedef struct json_enc {
  ck_encoder_t base;
  int ncols;
  int *order;       /* column indices sorted by name */
  char **keys;      /* per column: "\"name\":" escaped */
  size_t *keylens;
  int op_pos;       /* the "op" key goes before order[op_pos] */
  char *op_key;     /* "\"op\":" (or "\"__op\":" when a column is named op) */
  size_t op_keylen;
} json_enc_t;

static void put_double(ck_buf_t *out, double d) {
  if (isnan(d) || isinf(d)) ck_buf_append(out, "null", 4);
  else ck_double_format(d, out);
}

/* type: the column's type in the encoder's schema (a TIMESTAMP's presentation is there). */
static void json_value(const ck_col_t *col, ck_type_t type, size_t i, ck_buf_t *out) {
  if (!ck_col_valid(col, i)) {
    ck_buf_append(out, "null", 4);
    return;
  }
  switch (col->type.id) {
    case CK_T_NULL: ck_buf_append(out, "null", 4); break;
    case CK_T_BOOL:
      if (ck_col_bool(col, i)) ck_buf_append(out, "true", 4);
      else ck_buf_append(out, "false", 5);
      break;
    case CK_T_INT32: ck_format_put_i64(out, ck_col_i32(col, i)); break;
    case CK_T_INT64: ck_format_put_i64(out, ck_col_i64(col, i)); break;
    case CK_T_TIMESTAMP:
      if (ck_type_ts_epoch(type)) {
        ck_format_put_i64(out, ck_col_i64(col, i));
      } else {
        ck_buf_putc(out, '"');
        ck_timestamp_format_typed(type, ck_col_i64(col, i), out);
        ck_buf_putc(out, '"');
      }
      break;
    case CK_T_FLOAT32: {
      float f = ck_col_f32(col, i);
      if (isnan(f) || isinf(f)) ck_buf_append(out, "null", 4);
      else ck_format_put_float(out, f);
      break;
    }
    case CK_T_FLOAT64: put_double(out, ck_col_f64(col, i)); break;
    case CK_T_DECIMAL: ck_decimal_format(ck_col_dec(col, i), col->type.scale, out); break;
    case CK_T_STRING: {
      size_t n;
      const char *s = ck_col_str(col, i, &n);
      ck_buf_put_json_str(out, s, n);
      break;
    }
  }
}

static const char *op_name(ck_row_kind_t kind) {
  switch (kind) {
    case CK_ROW_INSERT: return "\"insert\"";
    case CK_ROW_UPDATE_BEFORE: return "\"update_before\"";
    case CK_ROW_UPDATE_AFTER: return "\"update\"";
    case CK_ROW_DELETE: return "\"delete\"";
  }
  return "\"insert\"";
}

static void json_row(ck_encoder_t *base, const ck_batch_t *batch, size_t i, ck_buf_t *out) {
  json_enc_t *enc = (json_enc_t *)base;
  bool changelog = batch->kinds != NULL;
  bool first = true;
  ck_buf_putc(out, '{');
  for (int k = 0; k <= enc->ncols; k++) {
    if (changelog && k == enc->op_pos) {
      if (!first) ck_buf_putc(out, ',');
      first = false;
      ck_buf_append(out, enc->op_key, enc->op_keylen);
      ck_buf_puts(out, op_name(ck_batch_kind(batch, i)));
    }
    if (k == enc->ncols) break;
    int c = enc->order[k];
    if (!first) ck_buf_putc(out, ',');
    first = false;
    ck_buf_append(out, enc->keys[c], enc->keylens[c]);
    json_value(&batch->cols[c], c < enc->base.schema->ncols ? enc->base.schema->types[c]
                                                             : batch->cols[c].type, i, out);
  }
  ck_buf_putc(out, '}');
}

static void json_enc_free(ck_encoder_t *base) {
  json_enc_t *enc = (json_enc_t *)base;
  for (int c = 0; c < enc->ncols; c++) ck_free(enc->keys[c]);
  ck_free(enc->keys);
  ck_free(enc->keylens);
  ck_free(enc->order);
  ck_free(enc->op_key);
  ck_free(enc);
}

static const ck_encoder_ops_t json_enc_ops = {json_row, NULL, json_enc_free};

ck_encoder_t *ck_format_json_encoder_new(const ck_schema_t *schema) {
  json_enc_t *enc = ck_calloc(1, sizeof *enc);
  enc->base.ops = &json_enc_ops;
  enc->base.schema = schema;
  enc->ncols = schema->ncols;
  size_t n = (size_t)(schema->ncols ? schema->ncols : 1);
  enc->order = ck_calloc(n, sizeof *enc->order);
  enc->keys = ck_calloc(n, sizeof *enc->keys);
  enc->keylens = ck_calloc(n, sizeof *enc->keylens);
  bool op_taken = false;
  for (int c = 0; c < schema->ncols; c++) {
    ck_buf_t b;
    ck_buf_init(&b);
    ck_buf_put_json_str(&b, schema->names[c], strlen(schema->names[c]));
    ck_buf_putc(&b, ':');
    enc->keylens[c] = b.len;
    enc->keys[c] = ck_buf_detach(&b);
    enc->order[c] = c;
    if (strcmp(schema->names[c], "op") == 0) op_taken = true;
  }
  /* insertion sort by byte order of the names: schemas are small, and it needs no context */
  for (int a = 1; a < schema->ncols; a++) {
    int x = enc->order[a], b = a - 1;
    while (b >= 0 && strcmp(schema->names[enc->order[b]], schema->names[x]) > 0) {
      enc->order[b + 1] = enc->order[b];
      b--;
    }
    enc->order[b + 1] = x;
  }
  const char *op = op_taken ? "__op" : "op";
  enc->op_pos = 0;
  while (enc->op_pos < schema->ncols && strcmp(schema->names[enc->order[enc->op_pos]], op) < 0)
    enc->op_pos++;
  ck_buf_t b;
  ck_buf_init(&b);
  ck_buf_printf(&b, "\"%s\":", op);
  enc->op_keylen = b.len;
  enc->op_key = ck_buf_detach(&b);
  return &enc->base;
}
