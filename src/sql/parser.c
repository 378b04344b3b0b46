/*
 * DESIGN: see parser.h. The tokenizer produces one token at a time on demand (with one token of
 * look-ahead kept in the parser); every grammar function is a few lines that call a builder.
 */
#include "sql/parser.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/redact.h"
#include "base/hash.h"

typedef enum tok_kind {
  T_EOF, T_IDENT, T_QIDENT, T_INT, T_NUMBER, T_STRING,
  T_LPAREN, T_RPAREN, T_COMMA, T_SEMI, T_DOT, T_STAR, T_PLUS, T_MINUS, T_SLASH, T_PERCENT,
  T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE, T_CONCAT, T_BAD,
} tok_kind_t;

typedef struct tok {
  tok_kind_t kind;
  const char *start;
  int len;
  ck_pos_t pos;
} tok_t;

typedef struct parser {
  const char *src, *p;
  int depth;      /* nesting of the expression being built (CK_SQL_MAX_DEPTH) */
  int line;
  const char *line_start;
  tok_t tok;      /* current token */
  tok_t prev;
  ck_arena_t *arena;
  ck_error_t *err;
} parser_t;

/* ---------------------------------------------------------------- tokenizer */

static int skip_space(parser_t *ps) {
  for (;;) {
    char c = *ps->p;
    if (c == '\n') {
      ps->p++;
      ps->line++;
      ps->line_start = ps->p;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
      ps->p++;
    } else if (c == '-' && ps->p[1] == '-') {
      while (*ps->p && *ps->p != '\n') ps->p++;
    } else if (c == '/' && ps->p[1] == '*') {
      int line = ps->line, col = (int)(ps->p - ps->line_start) + 1;
      ps->p += 2;
      while (*ps->p && !(ps->p[0] == '*' && ps->p[1] == '/')) {
        if (*ps->p == '\n') ps->line++, ps->line_start = ps->p + 1;
        ps->p++;
      }
      if (!*ps->p)
        return ck_error_set_at(ps->err, CK_ESYNTAX, line, col,
                               "unterminated comment: '/*' has no closing '*/'");
      ps->p += 2;
    } else {
      return 0;
    }
  }
}

static void next(parser_t *ps) {
  ps->prev = ps->tok;
  tok_t *t = &ps->tok;
  if (skip_space(ps)) {
    t->kind = T_EOF;
    return;
  }
  t->start = ps->p;
  t->pos.line = ps->line;
  t->pos.column = (int)(ps->p - ps->line_start) + 1;
  t->pos.offset = (int)(ps->p - ps->src);
  char c = *ps->p;
  if (!c) {
    t->kind = T_EOF;
  } else if (isalpha((unsigned char)c) || c == '_') {
    while (isalnum((unsigned char)*ps->p) || *ps->p == '_' || *ps->p == '$') ps->p++;
    t->kind = T_IDENT;
  } else if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)ps->p[1]))) {
    t->kind = T_INT;
    while (isdigit((unsigned char)*ps->p)) ps->p++;
    if (*ps->p == '.' && isdigit((unsigned char)ps->p[1])) {
      t->kind = T_NUMBER;
      ps->p++;
      while (isdigit((unsigned char)*ps->p)) ps->p++;
    } else if (*ps->p == '.' && !isalpha((unsigned char)ps->p[1])) {
      t->kind = T_NUMBER;
      ps->p++;
    }
    if ((*ps->p == 'e' || *ps->p == 'E') &&
        (isdigit((unsigned char)ps->p[1]) ||
         ((ps->p[1] == '+' || ps->p[1] == '-') && isdigit((unsigned char)ps->p[2])))) {
      t->kind = T_NUMBER;
      ps->p += 2;
      while (isdigit((unsigned char)*ps->p)) ps->p++;
    }
  } else if (c == '\'' || c == '"' || c == '`') {
    char q = c;
    ps->p++;
    for (;;) {
      if (!*ps->p) {
        t->kind = T_BAD;
        t->len = 1;
        ck_error_set_at(ps->err, CK_ESYNTAX, t->pos.line, t->pos.column,
                        "unterminated %s: %c has no closing %c",
                        q == '\'' ? "string literal" : "quoted identifier", q, q);
        return;
      }
      if (*ps->p == '\n') ps->line++, ps->line_start = ps->p + 1;
      if (*ps->p == q) {
        if (ps->p[1] == q) {
          ps->p += 2;
          continue;
        }
        ps->p++;
        break;
      }
      ps->p++;
    }
    t->kind = q == '\'' ? T_STRING : T_QIDENT;
  } else {
    ps->p++;
    switch (c) {
      case '(': t->kind = T_LPAREN; break;
      case ')': t->kind = T_RPAREN; break;
      case ',': t->kind = T_COMMA; break;
      case ';': t->kind = T_SEMI; break;
      case '.': t->kind = T_DOT; break;
      case '*': t->kind = T_STAR; break;
      case '+': t->kind = T_PLUS; break;
      case '-': t->kind = T_MINUS; break;
      case '/': t->kind = T_SLASH; break;
      case '%': t->kind = T_PERCENT; break;
      case '=': t->kind = T_EQ; if (*ps->p == '=') ps->p++; break;
      case '<':
        t->kind = T_LT;
        if (*ps->p == '=') ps->p++, t->kind = T_LE;
        else if (*ps->p == '>') ps->p++, t->kind = T_NE;
        break;
      case '>':
        t->kind = T_GT;
        if (*ps->p == '=') ps->p++, t->kind = T_GE;
        break;
      case '!':
        if (*ps->p == '=') {
          ps->p++;
          t->kind = T_NE;
        } else {
          t->kind = T_BAD;
        }
        break;
      case '|':
        if (*ps->p == '|') {
          ps->p++;
          t->kind = T_CONCAT;
        } else {
          t->kind = T_BAD;
        }
        break;
      default:
        /* a whole UTF-8 sequence makes one bad token */
        while ((*ps->p & 0xC0) == 0x80) ps->p++;
        t->kind = T_BAD;
    }
  }
  t->len = (int)(ps->p - t->start);
  t->pos.len = t->len;
}

/* ---------------------------------------------------------------- helpers */

static bool is_kw(const tok_t *t, const char *kw) {
  return t->kind == T_IDENT && (int)strlen(kw) == t->len && strncasecmp(t->start, kw, (size_t)t->len) == 0;
}

static bool accept_kw(parser_t *ps, const char *kw) {
  if (!is_kw(&ps->tok, kw)) return false;
  next(ps);
  return true;
}

static bool accept(parser_t *ps, tok_kind_t k) {
  if (ps->tok.kind != k) return false;
  next(ps);
  return true;
}

static const char *tok_text(parser_t *ps, const tok_t *t) {
  if (t->kind == T_EOF) return "end of input";
  return ck_arena_strndup(ps->arena, t->start, (size_t)t->len);
}

static int fail_at(parser_t *ps, const tok_t *t, const char *fmt, const char *arg) {
  char msg[300];
  snprintf(msg, sizeof msg, fmt, arg);
  if (t->kind == T_EOF)
    ck_error_set_at(ps->err, CK_ESYNTAX, t->pos.line, t->pos.column, "%s, found end of input",
                    msg);
  else
    ck_error_set_at(ps->err, CK_ESYNTAX, t->pos.line, t->pos.column, "%s, found '%s'", msg,
                    tok_text(ps, t));
  return CK_ESYNTAX;
}

static const char *const keywords[] = {
    "SELECT", "FROM",  "WHERE",   "GROUP",  "BY",     "HAVING", "AND",      "OR",
    "NOT",    "NULL",  "TRUE",    "FALSE",  "IS",     "IN",     "BETWEEN",  "LIKE",
    "CASE",   "WHEN",  "THEN",    "ELSE",   "END",    "CAST",   "AS",       "INSERT",
    "INTO",   "CREATE", "TABLE",  "WITH",   "ORDER",  "LIMIT",  "JOIN",     "ON",
    "DISTINCT", "INTERVAL", "UNION", "VALUES", "LEFT", "RIGHT", "INNER", "OUTER", "FULL",
    "CROSS", "EXCEPT", "INTERSECT", "OVER",
};

static bool is_reserved(const tok_t *t) {
  for (size_t i = 0; i < CK_ARRAY_LEN(keywords); i++)
    if (is_kw(t, keywords[i])) return true;
  return false;
}

static int expect_kw(parser_t *ps, const char *kw) {
  if (accept_kw(ps, kw)) return 0;
  char what[64];
  snprintf(what, sizeof what, "expected %s", kw);
  fail_at(ps, &ps->tok, "%s", what);
  /* "did you mean": a misspelt keyword is the usual cause */
  if (ps->tok.kind == T_IDENT) {
    char word[64];
    snprintf(word, sizeof word, "%.*s", ps->tok.len < 63 ? ps->tok.len : 63, ps->tok.start);
    const char *cands[] = {kw};
    if (ck_closest(word, cands, 1)) ck_error_hint(ps->err, "did you mean %s?", kw);
  }
  return CK_ESYNTAX;
}

static int expect(parser_t *ps, tok_kind_t k, const char *what) {
  if (accept(ps, k)) return 0;
  return fail_at(ps, &ps->tok, "expected %s", what);
}

/* Identifier text: unquoted as written, quoted with its doubled quotes undone. */
static const char *ident_text(parser_t *ps, const tok_t *t) {
  if (t->kind != T_QIDENT) return ck_arena_strndup(ps->arena, t->start, (size_t)t->len);
  char q = t->start[0];
  char *out = ck_arena_alloc(ps->arena, (size_t)t->len);
  int n = 0;
  for (int i = 1; i < t->len - 1; i++) {
    out[n++] = t->start[i];
    if (t->start[i] == q) i++;
  }
  out[n] = 0;
  return out;
}

static const char *string_text(parser_t *ps, const tok_t *t) {
  char *out = ck_arena_alloc(ps->arena, (size_t)t->len);
  int n = 0;
  for (int i = 1; i < t->len - 1; i++) {
    out[n++] = t->start[i];
    if (t->start[i] == '\'') i++;
  }
  out[n] = 0;
  return out;
}

static int expect_ident(parser_t *ps, const char *what, const char **out, ck_pos_t *pos) {
  if (ps->tok.kind == T_QIDENT || (ps->tok.kind == T_IDENT && !is_reserved(&ps->tok))) {
    if (pos) *pos = ps->tok.pos;
    *out = ident_text(ps, &ps->tok);
    next(ps);
    return 0;
  }
  return fail_at(ps, &ps->tok, "expected %s", what);
}

static ck_ast_t *node(parser_t *ps, ck_ast_kind_t kind, ck_pos_t pos) {
  ck_ast_t *n = ck_arena_zalloc(ps->arena, sizeof *n);
  n->kind = kind;
  n->pos = pos;
  return n;
}

static ck_ast_t *node2(parser_t *ps, ck_ast_kind_t kind, ck_pos_t pos, const char *op,
                       ck_ast_t *a, ck_ast_t *b) {
  ck_ast_t *n = node(ps, kind, pos);
  n->text = op;
  n->nargs = b ? 2 : 1;
  n->args = ck_arena_alloc(ps->arena, sizeof(ck_ast_t *) * 2);
  n->args[0] = a;
  n->args[1] = b;
  return n;
}

/* A growable array of pointers in the arena. */
typedef struct vec {
  void **items;
  int n, cap;
} vec_t;

static void vec_push(parser_t *ps, vec_t *v, void *item) {
  if (v->n == v->cap) {
    int cap = v->cap ? v->cap * 2 : 8;
    void **items = ck_arena_alloc(ps->arena, sizeof(void *) * (size_t)cap);
    if (v->n) memcpy(items, v->items, sizeof(void *) * (size_t)v->n);
    v->items = items;
    v->cap = cap;
  }
  v->items[v->n++] = item;
}

/* ---------------------------------------------------------------- types */

static int parse_int_arg(parser_t *ps, int *out) {
  if (ps->tok.kind != T_INT) return fail_at(ps, &ps->tok, "expected %s", "an integer");
  /* the token is digits only; more than 9 of them would not fit an int */
  long v = 0;
  for (int i = 0; i < ps->tok.len; i++) {
    v = v * 10 + (ps->tok.start[i] - '0');
    if (v > 1000000000L)
      return ck_error_set_at(ps->err, CK_ESYNTAX, ps->tok.pos.line, ps->tok.pos.column,
                             "%.*s is too large here", ps->tok.len, ps->tok.start);
  }
  *out = (int)v;
  next(ps);
  return 0;
}

static int refuse(parser_t *ps, const tok_t *t, const char *what, const char *hint);

/* Types clink does not have yet, refused by name rather than as a syntax error: true (with the
 * error set) when t names one. */
static bool type_refused(parser_t *ps, const tok_t *t) {
  static const struct { const char *word, *what, *hint; } refused[] = {
      {"BINARY", "the type BINARY(n)", "read bytes as base64 or hex text into a VARCHAR"},
      {"VARBINARY", "the type VARBINARY(n)", "read bytes as base64 or hex text into a VARCHAR"},
      {"BYTES", "the type BYTES", "read bytes as base64 or hex text into a VARCHAR"},
      {"ARRAY", "the type ARRAY<…>", "read the array as JSON text into a VARCHAR and take its "
                                     "elements with JSON_VALUE(s, '$[0]')"},
      {"MAP", "the type MAP<…>", "read the object as JSON text into a VARCHAR and take its "
                                 "values with JSON_VALUE(s, '$.key')"},
      {"MULTISET", "the type MULTISET<…>", NULL},
      {"ROW", "the type ROW<…>", "read the object as JSON text into a VARCHAR and take its "
                                 "fields with JSON_VALUE(s, '$.field')"},
      {"INTERVAL", "a column of type INTERVAL", "store the length as a BIGINT of milliseconds"},
      {"RAW", "the type RAW", NULL},
  };
  for (size_t i = 0; i < CK_ARRAY_LEN(refused); i++)
    if (is_kw(t, refused[i].word)) {
      refuse(ps, t, refused[i].what, refused[i].hint);
      return true;
    }
  return false;
}

static int parse_type(parser_t *ps, ck_type_t *out) {
  tok_t t = ps->tok;
  if (t.kind != T_IDENT) return fail_at(ps, &t, "expected %s", "a type");
  next(ps);
  if (is_kw(&t, "BOOLEAN") || is_kw(&t, "BOOL")) *out = CK_TYPE(CK_T_BOOL);
  else if (is_kw(&t, "INT") || is_kw(&t, "INTEGER") || is_kw(&t, "SMALLINT") || is_kw(&t, "TINYINT"))
    *out = CK_TYPE(CK_T_INT32);
  else if (is_kw(&t, "BIGINT")) *out = CK_TYPE(CK_T_INT64);
  else if (is_kw(&t, "FLOAT") || is_kw(&t, "REAL")) *out = CK_TYPE(CK_T_FLOAT32);
  else if (is_kw(&t, "DOUBLE")) {
    accept_kw(ps, "PRECISION");
    *out = CK_TYPE(CK_T_FLOAT64);
  } else if (is_kw(&t, "DECIMAL") || is_kw(&t, "NUMERIC") || is_kw(&t, "DEC")) {
    int p = 10, s = 0;
    if (accept(ps, T_LPAREN)) {
      if (parse_int_arg(ps, &p)) return CK_ESYNTAX;
      if (accept(ps, T_COMMA) && parse_int_arg(ps, &s)) return CK_ESYNTAX;
      if (expect(ps, T_RPAREN, "')'")) return CK_ESYNTAX;
    }
    if (p < 1 || p > CK_DECIMAL_MAX_PRECISION || s < 0 || s > p)
      return ck_error_set_at(ps->err, CK_ETYPE, t.pos.line, t.pos.column,
                             "invalid DECIMAL(%d, %d): precision must be 1..38 and scale 0..precision",
                             p, s);
    *out = (ck_type_t){CK_T_DECIMAL, (uint8_t)p, (uint8_t)s};
  } else if (is_kw(&t, "VARCHAR") || is_kw(&t, "STRING") || is_kw(&t, "TEXT") ||
             is_kw(&t, "CHAR")) {
    int n;
    if (accept(ps, T_LPAREN) && (parse_int_arg(ps, &n) || expect(ps, T_RPAREN, "')'")))
      return CK_ESYNTAX;
    *out = CK_TYPE(CK_T_STRING);
  } else if (is_kw(&t, "TIMESTAMP") || is_kw(&t, "TIMESTAMP_LTZ")) {
    /* TIMESTAMP[(p)] [WITHOUT TIME ZONE | WITH LOCAL TIME ZONE], TIMESTAMP_LTZ[(p)]: p is
     * 0..9; milliseconds are kept whatever p says (types.h) */
    int p = 3;
    bool ltz = is_kw(&t, "TIMESTAMP_LTZ");
    tok_t at = ps->tok;
    if (accept(ps, T_LPAREN) && (parse_int_arg(ps, &p) || expect(ps, T_RPAREN, "')'")))
      return CK_ESYNTAX;
    if (p > CK_TS_MAX_PRECISION) {
      ck_error_set_at(ps->err, CK_ETYPE, at.pos.line, at.pos.column,
                      "invalid %s(%d): the precision must be 0 to 9", ltz ? "TIMESTAMP_LTZ" : "TIMESTAMP", p);
      ck_error_hint(ps->err, "TIMESTAMP(3) keeps milliseconds, which is what clink stores");
      return CK_ETYPE;
    }
    if (!ltz && (is_kw(&ps->tok, "WITH") || is_kw(&ps->tok, "WITHOUT"))) {
      tok_t w = ps->tok;
      next(ps);
      if (is_kw(&w, "WITH")) {
        if (is_kw(&ps->tok, "TIME"))
          return refuse(ps, &w, "TIMESTAMP WITH TIME ZONE",
                        "use TIMESTAMP_LTZ(3) (TIMESTAMP WITH LOCAL TIME ZONE) for an instant");
        if (expect_kw(ps, "LOCAL")) return CK_ESYNTAX;
        ltz = true;
      }
      if (expect_kw(ps, "TIME") || expect_kw(ps, "ZONE")) return CK_ESYNTAX;
    }
    *out = ck_type_timestamp(p, ltz ? CK_TS_LTZ : 0);
  } else if (is_kw(&t, "DATE")) {
    *out = ck_type_date();
  } else if (is_kw(&t, "TIME")) {
    /* TIME[(p)] [WITHOUT TIME ZONE]: p is 0..9 (0 by default, as Flink), milliseconds kept */
    int p = 0;
    tok_t at = ps->tok;
    if (accept(ps, T_LPAREN) && (parse_int_arg(ps, &p) || expect(ps, T_RPAREN, "')'")))
      return CK_ESYNTAX;
    if (p > CK_TS_MAX_PRECISION) {
      ck_error_set_at(ps->err, CK_ETYPE, at.pos.line, at.pos.column,
                      "invalid TIME(%d): the precision must be 0 to 9", p);
      return CK_ETYPE;
    }
    if (is_kw(&ps->tok, "WITH"))
      return refuse(ps, &ps->tok, "TIME WITH TIME ZONE", "a TIME is a time of day, in UTC");
    if (accept_kw(ps, "WITHOUT") && (expect_kw(ps, "TIME") || expect_kw(ps, "ZONE")))
      return CK_ESYNTAX;
    *out = ck_type_time(p);
  } else if (type_refused(ps, &t)) {
    return CK_EUNSUPPORTED;
  } else {
    fail_at(ps, &t, "expected %s", "a type");
    static const char *const types[] = {"BOOLEAN", "INT", "INTEGER", "BIGINT", "FLOAT", "REAL",
                                        "DOUBLE", "DECIMAL", "VARCHAR", "STRING", "TEXT",
                                        "TIMESTAMP", "TIMESTAMP_LTZ", "DATE", "TIME"};
    char word[64];
    snprintf(word, sizeof word, "%.*s", t.len < 63 ? t.len : 63, t.start);
    const char *close = ck_closest(word, types, CK_ARRAY_LEN(types));
    if (close) ck_error_hint(ps->err, "did you mean %s?", close);
    else ck_error_hint(ps->err, "types are BOOLEAN, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p, s), VARCHAR, TIMESTAMP(3), TIMESTAMP_LTZ(3), DATE and TIME");
    return CK_ESYNTAX;
  }
  return 0;
}

/* ---------------------------------------------------------------- expressions */

static ck_ast_t *parse_expr(parser_t *ps);

/* True when s is a plain decimal number: [+-] digits [. digits] (or [+-] . digits). */
static bool is_decimal_text(const char *s) {
  if (*s == '+' || *s == '-') s++;
  int digits = 0;
  while (isdigit((unsigned char)*s)) s++, digits++;
  if (*s == '.') {
    s++;
    while (isdigit((unsigned char)*s)) s++, digits++;
  }
  return digits > 0 && *s == 0;
}

static ck_ast_t *parse_interval(parser_t *ps, ck_pos_t pos) {
  /* INTERVAL '10' SECOND | INTERVAL 10 SECOND */
  tok_t t = ps->tok;
  const char *text;
  if (t.kind == T_STRING) text = string_text(ps, &t);
  else if (t.kind == T_INT || t.kind == T_NUMBER) text = tok_text(ps, &t);
  else return fail_at(ps, &t, "expected %s", "an interval length like '10'"), NULL;
  /* the length is a decimal number, blanks around it allowed: '10', ' 1.5 ' */
  while (*text == ' ') text++;
  char *num = ck_arena_strdup(ps->arena, text);
  for (size_t n = strlen(num); n && num[n - 1] == ' ';) num[--n] = 0;
  if (!is_decimal_text(num)) {
    ck_error_set_at(ps->err, CK_ESYNTAX, t.pos.line, t.pos.column,
                    "invalid interval length '%s': not a number", num);
    ck_error_hint(ps->err, "write the length as digits, e.g. INTERVAL '10' SECOND or INTERVAL '1.5' SECOND");
    return NULL;
  }
  double v = strtod(num, NULL);
  next(ps);
  tok_t u = ps->tok;
  static const struct { const char *name; int64_t ms; } units[] = {
      {"MILLISECOND", 1}, {"MILLISECONDS", 1}, {"SECOND", 1000}, {"SECONDS", 1000},
      {"MINUTE", 60000}, {"MINUTES", 60000}, {"HOUR", 3600000}, {"HOURS", 3600000},
      {"DAY", 86400000}, {"DAYS", 86400000},
  };
  for (size_t i = 0; i < CK_ARRAY_LEN(units); i++) {
    if (is_kw(&u, units[i].name)) {
      next(ps);
      ck_ast_t *n = node(ps, CK_AST_INTERVAL, pos);
      double ms = v * (double)units[i].ms + 0.5;
      if (ms >= 9.2e18) { /* beyond BIGINT milliseconds (about 292 million years) */
        ck_error_set_at(ps->err, CK_ESYNTAX, t.pos.line, t.pos.column,
                        "interval '%s' %s is too long", num, units[i].name);
        return NULL;
      }
      n->ms = (int64_t)ms;
      if (n->ms <= 0) {
        ck_error_set_at(ps->err, CK_ESYNTAX, t.pos.line, t.pos.column,
                        "an interval must be positive, not '%s' %s", num, units[i].name);
        return NULL;
      }
      return n;
    }
  }
  fail_at(ps, &u, "expected %s", "an interval unit (MILLISECOND, SECOND, MINUTE, HOUR or DAY)");
  return NULL;
}

static ck_ast_t *parse_case(parser_t *ps, ck_pos_t pos) {
  ck_ast_t *n = node(ps, CK_AST_CASE, pos);
  if (!is_kw(&ps->tok, "WHEN")) {
    n->operand = parse_expr(ps);
    if (!n->operand) return NULL;
  }
  vec_t args = {0};
  while (accept_kw(ps, "WHEN")) {
    ck_ast_t *w = parse_expr(ps);
    if (!w || expect_kw(ps, "THEN")) return NULL;
    ck_ast_t *t = parse_expr(ps);
    if (!t) return NULL;
    vec_push(ps, &args, w);
    vec_push(ps, &args, t);
  }
  if (!args.n) return fail_at(ps, &ps->tok, "expected %s", "WHEN"), NULL;
  if (accept_kw(ps, "ELSE") && !(n->else_ = parse_expr(ps))) return NULL;
  if (expect_kw(ps, "END")) return NULL;
  n->nargs = args.n;
  n->args = (ck_ast_t **)args.items;
  return n;
}

static bool enter(parser_t *ps);
static ck_ast_t *parse_add(parser_t *ps);

/* The next non-blank character after the current token (no comment skipping: a look-ahead for
 * the few places where one word decides between two readings). */
static char peek_char(const parser_t *ps) {
  const char *q = ps->p;
  while (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n') q++;
  return *q;
}

/* True when the word after the current token is w (case-insensitive). */
static bool peek_word(const parser_t *ps, const char *w) {
  const char *q = ps->p;
  while (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n') q++;
  size_t n = strlen(w);
  return strncasecmp(q, w, n) == 0 && !isalnum((unsigned char)q[n]) && q[n] != '_';
}

static ck_ast_t *string_node(parser_t *ps, ck_pos_t pos, const char *text) {
  ck_ast_t *n = node(ps, CK_AST_STRING, pos);
  n->text = text;
  return n;
}

/* A time unit keyword (EXTRACT(YEAR FROM …), FLOOR(ts TO DAY)) as the string the function
 * reads; its typing rule checks it is a unit. */
static ck_ast_t *parse_unit(parser_t *ps) {
  if (ps->tok.kind != T_IDENT) return fail_at(ps, &ps->tok, "expected %s", "a time unit such as DAY"), NULL;
  ck_ast_t *u = string_node(ps, ps->tok.pos, tok_text(ps, &ps->tok));
  next(ps);
  return u;
}

/* The standard's keyword forms of some calls, rewritten to plain calls of the function table:
 * POSITION(a IN b), OVERLAY(s PLACING r FROM p [FOR l]), TRIM([BOTH|LEADING|TRAILING] [c] FROM
 * s), EXTRACT(unit FROM ts). Returns 1 when it parsed the arguments, 0 when the call is an
 * ordinary one, -1 on error. */
static int parse_special_args(parser_t *ps, ck_ast_t *n, vec_t *args) {
  const char *name = n->text;
  if (ck_streq_i(name, "POSITION")) {
    if (!enter(ps)) return -1;
    ck_ast_t *a = parse_add(ps); /* not parse_expr: it would read `a IN (…)` */
    ps->depth--;
    if (!a) return -1;
    vec_push(ps, args, a);
    if (accept_kw(ps, "IN") || accept(ps, T_COMMA)) {
      ck_ast_t *b = parse_expr(ps);
      if (!b) return -1;
      vec_push(ps, args, b);
    }
    return 1;
  }
  if (ck_streq_i(name, "EXTRACT")) {
    ck_ast_t *u = parse_unit(ps);
    if (!u || expect_kw(ps, "FROM")) return -1;
    ck_ast_t *ts = parse_expr(ps);
    if (!ts) return -1;
    vec_push(ps, args, u);
    vec_push(ps, args, ts);
    return 1;
  }
  if (ck_streq_i(name, "OVERLAY")) {
    ck_ast_t *a = parse_expr(ps);
    if (!a) return -1;
    vec_push(ps, args, a);
    if (!accept_kw(ps, "PLACING")) return 0;
    ck_ast_t *r = parse_expr(ps), *from = NULL, *len = NULL;
    if (!r || expect_kw(ps, "FROM") || !(from = parse_expr(ps))) return -1;
    vec_push(ps, args, r);
    vec_push(ps, args, from);
    if (accept_kw(ps, "FOR")) {
      if (!(len = parse_expr(ps))) return -1;
      vec_push(ps, args, len);
    }
    return 1;
  }
  if (ck_streq_i(name, "TRIM")) {
    const char *fn = "TRIM";
    bool mode = true;
    if (accept_kw(ps, "LEADING")) fn = "LTRIM";
    else if (accept_kw(ps, "TRAILING")) fn = "RTRIM";
    else mode = accept_kw(ps, "BOTH");
    ck_ast_t *chars = NULL, *src;
    if (!accept_kw(ps, "FROM")) {
      if (!(chars = parse_expr(ps))) return -1;
      if (!accept_kw(ps, "FROM")) {
        if (mode) return expect_kw(ps, "FROM"), -1;
        vec_push(ps, args, chars);
        return 0; /* TRIM(s) or TRIM(s, chars) */
      }
    }
    if (!(src = parse_expr(ps))) return -1;
    n->text = fn;
    vec_push(ps, args, src);
    if (chars) vec_push(ps, args, chars);
    return 1;
  }
  return 0;
}

/* True at `NULL ON NULL` or `ABSENT ON NULL` (then consumed, *absent set). */
static bool parse_on_null(parser_t *ps, bool *absent) {
  if (!(is_kw(&ps->tok, "ABSENT") || (is_kw(&ps->tok, "NULL") && peek_word(ps, "ON")))) return false;
  *absent = is_kw(&ps->tok, "ABSENT");
  next(ps);
  return true;
}

/* JSON_OBJECT([KEY] k VALUE v, … [NULL|ABSENT ON NULL]) and JSON_ARRAY(v, … [NULL|ABSENT ON
 * NULL]): a call whose first argument is the ON NULL mode as a string literal (expr.c's
 * ty_json_build), then the keys and values. The defaults are Flink's: NULL ON NULL for an
 * object, ABSENT ON NULL for an array. The '(' is consumed. */
static ck_ast_t *parse_json_build(parser_t *ps, const char *name, ck_pos_t pos) {
  bool object = ck_streq_i(name, "JSON_OBJECT"), absent = !object;
  ck_ast_t *n = node(ps, CK_AST_CALL, pos);
  n->text = object ? "JSON_OBJECT" : "JSON_ARRAY";
  vec_t args = {0};
  vec_push(ps, &args, NULL); /* the mode, below */
  while (ps->tok.kind != T_RPAREN && !is_kw(&ps->tok, "RETURNING")) {
    if (parse_on_null(ps, &absent)) {
      if (expect_kw(ps, "ON") || expect_kw(ps, "NULL")) return NULL;
      break;
    }
    if (args.n > 1 && expect(ps, T_COMMA, "','")) return NULL;
    if (object) {
      accept_kw(ps, "KEY");
      ck_ast_t *k = parse_expr(ps);
      if (!k || expect_kw(ps, "VALUE")) return NULL;
      vec_push(ps, &args, k);
    }
    ck_ast_t *v = parse_expr(ps);
    if (!v) return NULL;
    vec_push(ps, &args, v);
  }
  if (is_kw(&ps->tok, "RETURNING")) {
    refuse(ps, &ps->tok, "RETURNING", "the result is always a VARCHAR");
    return NULL;
  }
  if (expect(ps, T_RPAREN, "')'")) return NULL;
  args.items[0] = string_node(ps, pos, absent ? "ABSENT" : "NULL");
  n->nargs = args.n;
  n->args = (ck_ast_t **)args.items;
  return n;
}

static ck_ast_t *parse_call(parser_t *ps, const char *name, ck_pos_t pos) {
  /* constructors with a syntax of their own (KEY … VALUE …, ABSENT ON NULL): refused whole */
  if (ck_streq_i(name, "JSON_OBJECT") || ck_streq_i(name, "JSON_ARRAY"))
    return parse_json_build(ps, name, pos);
  static const char *const not_parsed[] = {"JSON_OBJECTAGG", "JSON_ARRAYAGG"};
  for (size_t i = 0; i < CK_ARRAY_LEN(not_parsed); i++)
    if (ck_streq_i(name, not_parsed[i])) {
      ck_error_set_at(ps->err, CK_EUNSUPPORTED, pos.line, pos.column,
                      "function %s is not supported", not_parsed[i]);
      ck_error_hint(ps->err, "build the JSON text with CONCAT or ||");
      return NULL;
    }
  ck_ast_t *n = node(ps, CK_AST_CALL, pos);
  n->text = name;
  vec_t args = {0};
  int special = 0;
  if (ps->tok.kind == T_STAR) {
    vec_push(ps, &args, node(ps, CK_AST_STAR, ps->tok.pos));
    next(ps);
  } else if (ps->tok.kind != T_RPAREN) {
    if (accept_kw(ps, "DISTINCT")) n->distinct = true;
    else accept_kw(ps, "ALL");
    if (!n->distinct && (special = parse_special_args(ps, n, &args)) < 0) return NULL;
    if (special == 0 && args.n == 1) {
      if (!accept(ps, T_COMMA)) special = 1; /* a keyword form's first argument, and no more */
    }
    for (; !special;) {
      ck_ast_t *a = parse_expr(ps);
      if (!a) return NULL;
      vec_push(ps, &args, a);
      /* SUBSTRING(x FROM a FOR b) */
      if (ck_streq_i(name, "SUBSTRING") && args.n == 1 && accept_kw(ps, "FROM")) {
        ck_ast_t *f = parse_expr(ps);
        if (!f) return NULL;
        vec_push(ps, &args, f);
        if (accept_kw(ps, "FOR")) {
          ck_ast_t *l = parse_expr(ps);
          if (!l) return NULL;
          vec_push(ps, &args, l);
        }
        break;
      }
      /* FLOOR(ts TO unit) is DATE_TRUNC(unit, ts) */
      if (args.n == 1 && is_kw(&ps->tok, "TO") &&
          (ck_streq_i(name, "FLOOR") || ck_streq_i(name, "CEIL") || ck_streq_i(name, "CEILING"))) {
        if (!ck_streq_i(name, "FLOOR")) {
          ck_error_set_at(ps->err, CK_EUNSUPPORTED, ps->tok.pos.line, ps->tok.pos.column,
                          "%s(… TO unit) is not supported", name);
          ck_error_hint(ps->err, "FLOOR(ts TO unit) rounds a timestamp down");
          return NULL;
        }
        next(ps);
        ck_ast_t *u = parse_unit(ps);
        if (!u) return NULL;
        n->text = "DATE_TRUNC";
        args.items[0] = u;
        vec_push(ps, &args, a);
        break;
      }
      if (!accept(ps, T_COMMA)) break;
    }
  }
  if (strncasecmp(n->text, "JSON_", 5) == 0 && ps->tok.kind == T_IDENT) {
    static const char *const clauses[] = {"RETURNING", "NULL",  "ERROR", "DEFAULT", "EMPTY",
                                          "TRUE",      "FALSE", "UNKNOWN", "WITH", "WITHOUT"};
    for (size_t i = 0; i < CK_ARRAY_LEN(clauses); i++)
      if (is_kw(&ps->tok, clauses[i])) {
        ck_error_set_at(ps->err, CK_EUNSUPPORTED, ps->tok.pos.line, ps->tok.pos.column,
                        "the RETURNING, WRAPPER and ON EMPTY / ON ERROR clauses of %s are not "
                        "supported", n->text);
        ck_error_hint(ps->err, "the result is a VARCHAR, NULL when the path names nothing; "
                               "CAST it, or COALESCE it for a default");
        return NULL;
      }
  }
  if (expect(ps, T_RPAREN, "')' or ','")) return NULL;
  /* TIMESTAMPADD(DAY, …): the unit is a keyword, read as its name */
  if (args.n >= 1 && (ck_streq_i(n->text, "TIMESTAMPADD") || ck_streq_i(n->text, "TIMESTAMPDIFF") ||
                      ck_streq_i(n->text, "DATE_TRUNC"))) {
    ck_ast_t *u = args.items[0];
    if (u->kind == CK_AST_IDENT && !u->qualifier) args.items[0] = string_node(ps, u->pos, u->text);
  }
  static const char *const ranks[] = {"ROW_NUMBER", "RANK", "DENSE_RANK"};
  for (size_t i = 0; i < CK_ARRAY_LEN(ranks) && is_kw(&ps->tok, "OVER"); i++)
    if (ck_streq_i(n->text, ranks[i])) {
      char what[64];
      snprintf(what, sizeof what, "%s() OVER (…) (top-N and deduplication)", ranks[i]);
      return refuse(ps, &ps->tok, what, "for the largest or smallest value per key and window, "
                    "aggregate: GROUP BY window_start, window_end, key with MAX(x) or MIN(x)"),
             NULL;
    }
  if (is_kw(&ps->tok, "OVER")) {
    ck_error_set_at(ps->err, CK_EUNSUPPORTED, ps->tok.pos.line, ps->tok.pos.column,
                    "OVER windows are not supported");
    ck_error_hint(ps->err, "group by TUMBLE, HOP, SESSION or CUMULATE instead");
    return NULL;
  }
  /* agg(x) FILTER (WHERE p) is agg(CASE WHEN p THEN x END), as every aggregate skips NULLs;
   * COUNT(*) FILTER (WHERE p) counts CASE WHEN p THEN 1 END */
  if (is_kw(&ps->tok, "FILTER") && peek_char(ps) == '(') {
    tok_t f = ps->tok;
    next(ps);
    next(ps);
    if (expect_kw(ps, "WHERE")) return NULL;
    ck_ast_t *p = parse_expr(ps);
    if (!p || expect(ps, T_RPAREN, "')'")) return NULL;
    if (args.n != 1) {
      ck_error_set_at(ps->err, CK_EBIND, f.pos.line, f.pos.column,
                      "FILTER (WHERE …) needs an aggregate of one argument");
      return NULL;
    }
    ck_ast_t *x = args.items[0];
    if (x->kind == CK_AST_STAR) {
      x = node(ps, CK_AST_INT, x->pos);
      x->text = "1";
    }
    ck_ast_t *c = node(ps, CK_AST_CASE, f.pos);
    c->nargs = 2;
    c->args = ck_arena_alloc(ps->arena, sizeof(ck_ast_t *) * 2);
    c->args[0] = p, c->args[1] = x;
    args.items[0] = c;
    n->filtered = true;
  }
  if (is_kw(&ps->tok, "WITHIN") && peek_word(ps, "GROUP")) {
    ck_error_set_at(ps->err, CK_EUNSUPPORTED, ps->tok.pos.line, ps->tok.pos.column,
                    "WITHIN GROUP (ORDER BY …) is not supported");
    return NULL;
  }
  n->nargs = args.n;
  n->args = (ck_ast_t **)args.items;
  return n;
}

/* DATE '2024-01-02', TIME '12:34:56[.789]', TIMESTAMP '2024-01-02 12:34:56[.789]': a CAST of
 * the text, checked here so that a malformed literal is an error with its position. The
 * current token is the string; kw the type word before it. */
static ck_ast_t *parse_typed_literal(parser_t *ps, const tok_t *kw) {
  tok_t t = ps->tok;
  if (t.kind != T_STRING) return fail_at(ps, &t, "expected %s", "a quoted literal"), NULL;
  const char *text = string_text(ps, &t);
  int64_t ms;
  ck_type_t type;
  bool ok;
  const char *what, *form;
  if (is_kw(kw, "DATE")) {
    ok = ck_date_parse(text, strlen(text), &ms), type = ck_type_date();
    what = "DATE", form = "DATE '2024-01-02'";
  } else if (is_kw(kw, "TIME")) {
    ok = ck_time_parse(text, strlen(text), &ms);
    /* the literal's precision is its fraction digits (0 to 3 kept), as Flink types it */
    const char *dot = strchr(text, '.');
    int p = 0;
    if (dot)
      while (isdigit((unsigned char)dot[1 + p])) p++;
    type = ck_type_time(p > 3 ? 3 : p);
    what = "TIME", form = "TIME '12:34:56'";
  } else {
    ok = ck_timestamp_parse(text, strlen(text), &ms), type = ck_type_timestamp(3, 0);
    what = "TIMESTAMP", form = "TIMESTAMP '2024-01-02 12:34:56.789'";
  }
  if (!ok) {
    ck_error_set_at(ps->err, CK_ESYNTAX, t.pos.line, t.pos.column, "invalid %s literal '%s'", what,
                    text);
    ck_error_hint(ps->err, "write it as %s", form);
    return NULL;
  }
  next(ps);
  ck_ast_t *n = node(ps, CK_AST_CAST, kw->pos);
  n->nargs = 1;
  n->args = ck_arena_alloc(ps->arena, sizeof(ck_ast_t *));
  n->args[0] = string_node(ps, t.pos, text);
  n->cast_type = type;
  return n;
}

/* Functions that read the wall clock, refused by name (bare, as CURRENT_DATE, or called, as
 * NOW()): clink's output is a function of its input, so that a replay gives the same rows.
 * True (with the error set) when t is one. */
static bool wall_clock_refused(parser_t *ps, const tok_t *t) {
  static const char *const names[] = {"CURRENT_DATE", "CURRENT_TIME", "CURRENT_TIMESTAMP",
                                      "LOCALTIME", "LOCALTIMESTAMP", "NOW", "UNIX_TIMESTAMP",
                                      "CURRENT_ROW_TIMESTAMP"};
  for (size_t i = 0; i < CK_ARRAY_LEN(names); i++) {
    if (!is_kw(t, names[i])) continue;
    /* NOW and UNIX_TIMESTAMP only as calls: as bare words they may be columns */
    if (i >= 5 && peek_char(ps) != '(') return false;
    ck_error_set_at(ps->err, CK_EUNSUPPORTED, t->pos.line, t->pos.column,
                    "%s is not supported: it reads the wall clock", names[i]);
    ck_error_detail(ps->err, "clink's output is a function of its input, so that a replay or a "
                    "restore gives the same rows");
    ck_error_hint(ps->err, "use the event time (a column, or CURRENT_WATERMARK(ts)); a table may "
                  "declare processing time as proc AS PROCTIME()");
    return true;
  }
  return false;
}

static ck_ast_t *parse_primary(parser_t *ps) {
  tok_t t = ps->tok;
  ck_ast_t *n;
  switch (t.kind) {
    case T_INT:
    case T_NUMBER:
      next(ps);
      n = node(ps, t.kind == T_INT ? CK_AST_INT : CK_AST_NUMBER, t.pos);
      n->text = ck_arena_strndup(ps->arena, t.start, (size_t)t.len);
      return n;
    case T_STRING:
      next(ps);
      n = node(ps, CK_AST_STRING, t.pos);
      n->text = string_text(ps, &t);
      return n;
    case T_LPAREN:
      next(ps);
      if (is_kw(&ps->tok, "SELECT")) {
        ck_error_set_at(ps->err, CK_EUNSUPPORTED, ps->tok.pos.line, ps->tok.pos.column,
                        "subqueries are not supported");
        return NULL;
      }
      n = parse_expr(ps);
      if (!n || expect(ps, T_RPAREN, "')'")) return NULL;
      return n;
    case T_QIDENT:
    case T_IDENT:
      break;
    default:
      fail_at(ps, &t, "expected %s", "an expression");
      return NULL;
  }
  if (t.kind == T_IDENT) {
    if (is_kw(&t, "NULL")) return next(ps), node(ps, CK_AST_NULL, t.pos);
    if (is_kw(&t, "TRUE") || is_kw(&t, "FALSE")) {
      next(ps);
      n = node(ps, CK_AST_BOOL, t.pos);
      n->bval = is_kw(&t, "TRUE");
      return n;
    }
    if (is_kw(&t, "CASE")) return next(ps), parse_case(ps, t.pos);
    if (is_kw(&t, "INTERVAL")) return next(ps), parse_interval(ps, t.pos);
    if (peek_char(ps) == '\'' && (is_kw(&t, "DATE") || is_kw(&t, "TIME") || is_kw(&t, "TIMESTAMP")))
      return next(ps), parse_typed_literal(ps, &t);
    if (peek_char(ps) == '\'' && (is_kw(&t, "X") || is_kw(&t, "B"))) {
      refuse(ps, &t, is_kw(&t, "X") ? "the binary literal X'…'" : "the bit-string literal B'…'",
             "clink has no binary type yet; write the bytes as text, e.g. FROM_BASE64('CgsM')");
      return NULL;
    }
    if (wall_clock_refused(ps, &t)) return NULL;
    if (is_kw(&t, "CAST")) {
      next(ps);
      n = node(ps, CK_AST_CAST, t.pos);
      n->nargs = 1;
      n->args = ck_arena_alloc(ps->arena, sizeof(ck_ast_t *));
      if (expect(ps, T_LPAREN, "'('") || !(n->args[0] = parse_expr(ps)) ||
          expect_kw(ps, "AS") || parse_type(ps, &n->cast_type) || expect(ps, T_RPAREN, "')'"))
        return NULL;
      return n;
    }
    if (is_kw(&t, "SELECT")) {
      ck_error_set_at(ps->err, CK_EUNSUPPORTED, t.pos.line, t.pos.column,
                      "subqueries are not supported");
      return NULL;
    }
    if (is_reserved(&t) && !((is_kw(&t, "LEFT") || is_kw(&t, "RIGHT")) && peek_char(ps) == '(')) {
      fail_at(ps, &t, "expected %s", "an expression");
      return NULL;
    }
  }
  next(ps);
  const char *name = ident_text(ps, &t);
  if (t.kind == T_IDENT && ps->tok.kind == T_LPAREN) {
    next(ps);
    return parse_call(ps, name, t.pos);
  }
  n = node(ps, CK_AST_IDENT, t.pos);
  n->text = name;
  if (accept(ps, T_DOT)) {
    if (ps->tok.kind == T_STAR) {
      ck_error_set_at(ps->err, CK_EUNSUPPORTED, ps->tok.pos.line, ps->tok.pos.column,
                      "qualified '*' is not supported; write SELECT *");
      return NULL;
    }
    n->qualifier = name;
    if (expect_ident(ps, "a column name", &n->text, NULL)) return NULL;
  }
  return n;
}

/* One more level of nesting for the expression being built; false (with the error set) past
 * CK_SQL_MAX_DEPTH. Every recursive grammar function enters before it recurses, so the depth
 * of the tree as built -- not counting the first operand of a chain, which walks loop over --
 * never exceeds the limit (see parser.h). */
static bool enter(parser_t *ps) {
  if (++ps->depth <= CK_SQL_MAX_DEPTH) return true;
  ck_error_set_at(ps->err, CK_EUNSUPPORTED, ps->tok.pos.line, ps->tok.pos.column,
                  "expression nested deeper than %d levels", CK_SQL_MAX_DEPTH);
  ck_error_hint(ps->err, "parentheses, function calls, CASE, CAST, NOT and unary minus each nest "
                         "one level; split the expression, or write a chain such as a + b + c, "
                         "which does not nest");
  return false;
}

static ck_ast_t *parse_unary(parser_t *ps) {
  tok_t t = ps->tok;
  if (t.kind == T_MINUS || t.kind == T_PLUS) {
    next(ps);
    if (!enter(ps)) return NULL;
    ck_ast_t *a = parse_unary(ps);
    ps->depth--;
    if (!a) return NULL;
    if (t.kind == T_PLUS) return a;
    /* fold -literal so that -9223372036854775808 is a valid BIGINT; a literal already folded
     * (-(-1), - -3) loses its sign instead of getting a second one */
    if (a->kind == CK_AST_INT || a->kind == CK_AST_NUMBER) {
      a->text = a->text[0] == '-' ? a->text + 1 : ck_arena_printf(ps->arena, "-%s", a->text);
      a->pos = t.pos;
      return a;
    }
    return node2(ps, CK_AST_UNARY, t.pos, "-", a, NULL);
  }
  return parse_primary(ps);
}

static ck_ast_t *parse_mul(parser_t *ps) {
  ck_ast_t *a = parse_unary(ps);
  while (a && (ps->tok.kind == T_STAR || ps->tok.kind == T_SLASH || ps->tok.kind == T_PERCENT)) {
    tok_t op = ps->tok;
    next(ps);
    ck_ast_t *b = parse_unary(ps);
    if (!b) return NULL;
    a = node2(ps, CK_AST_BINARY, op.pos,
              op.kind == T_STAR ? "*" : op.kind == T_SLASH ? "/" : "%", a, b);
  }
  return a;
}

static ck_ast_t *parse_add(parser_t *ps) {
  ck_ast_t *a = parse_mul(ps);
  while (a && (ps->tok.kind == T_PLUS || ps->tok.kind == T_MINUS || ps->tok.kind == T_CONCAT)) {
    tok_t op = ps->tok;
    next(ps);
    ck_ast_t *b = parse_mul(ps);
    if (!b) return NULL;
    a = node2(ps, CK_AST_BINARY, op.pos,
              op.kind == T_PLUS ? "+" : op.kind == T_MINUS ? "-" : "||", a, b);
  }
  return a;
}

/* x IS NULL IS NULL …, x LIKE a LIKE b …: each test wraps the one before it, a level deeper
 * (unlike a comparison chain, whose first operands walks loop over) */
static ck_ast_t *parse_predicate_chain(parser_t *ps, int *wraps);

static ck_ast_t *parse_predicate(parser_t *ps) {
  int wraps = 0;
  ck_ast_t *a = parse_predicate_chain(ps, &wraps);
  ps->depth -= wraps;
  return a;
}

static ck_ast_t *parse_predicate_chain(parser_t *ps, int *wraps) {
  ck_ast_t *a = parse_add(ps);
  if (!a) return NULL;
  for (;;) {
    tok_t t = ps->tok;
    const char *op = NULL;
    switch (t.kind) {
      case T_EQ: op = "="; break;
      case T_NE: op = "<>"; break;
      case T_LT: op = "<"; break;
      case T_LE: op = "<="; break;
      case T_GT: op = ">"; break;
      case T_GE: op = ">="; break;
      default: break;
    }
    if (op) {
      next(ps);
      ck_ast_t *b = parse_add(ps);
      if (!b) return NULL;
      a = node2(ps, CK_AST_BINARY, t.pos, op, a, b);
      continue;
    }
    if (accept_kw(ps, "IS")) {
      if (!enter(ps)) return NULL;
      ++*wraps;
      ck_ast_t *n = node2(ps, CK_AST_IS, t.pos, NULL, a, NULL);
      n->negated = accept_kw(ps, "NOT");
      if (accept_kw(ps, "NULL")) n->text = "NULL";
      else if (accept_kw(ps, "TRUE")) n->text = "TRUE";
      else if (accept_kw(ps, "FALSE")) n->text = "FALSE";
      else return fail_at(ps, &ps->tok, "expected %s", "NULL, TRUE or FALSE after IS"), NULL;
      a = n;
      continue;
    }
    bool negated = false;
    if (is_kw(&t, "NOT")) {
      /* NOT IN / NOT BETWEEN / NOT LIKE; a bare NOT here is an error below */
      next(ps);
      negated = true;
      t = ps->tok;
    }
    if (accept_kw(ps, "IN")) {
      if (!enter(ps)) return NULL;
      ++*wraps;
      if (expect(ps, T_LPAREN, "'(' after IN")) return NULL;
      if (is_kw(&ps->tok, "SELECT")) {
        ck_error_set_at(ps->err, CK_EUNSUPPORTED, ps->tok.pos.line, ps->tok.pos.column,
                        "subqueries are not supported");
        return NULL;
      }
      vec_t list = {0};
      vec_push(ps, &list, a);
      do {
        ck_ast_t *e = parse_expr(ps);
        if (!e) return NULL;
        vec_push(ps, &list, e);
      } while (accept(ps, T_COMMA));
      if (expect(ps, T_RPAREN, "')' or ','")) return NULL;
      ck_ast_t *n = node(ps, CK_AST_IN, t.pos);
      n->negated = negated;
      n->nargs = list.n;
      n->args = (ck_ast_t **)list.items;
      a = n;
      continue;
    }
    if (accept_kw(ps, "BETWEEN")) {
      if (!enter(ps)) return NULL;
      ++*wraps;
      accept_kw(ps, "SYMMETRIC") ? (void)0 : (void)accept_kw(ps, "ASYMMETRIC");
      ck_ast_t *lo = parse_add(ps);
      if (!lo || expect_kw(ps, "AND")) return NULL;
      ck_ast_t *hi = parse_add(ps);
      if (!hi) return NULL;
      ck_ast_t *n = node(ps, CK_AST_BETWEEN, t.pos);
      n->negated = negated;
      n->nargs = 3;
      n->args = ck_arena_alloc(ps->arena, sizeof(ck_ast_t *) * 3);
      n->args[0] = a, n->args[1] = lo, n->args[2] = hi;
      a = n;
      continue;
    }
    if (accept_kw(ps, "LIKE")) {
      if (!enter(ps)) return NULL;
      ++*wraps;
      ck_ast_t *b = parse_add(ps);
      if (!b) return NULL;
      ck_ast_t *esc = NULL;
      if (accept_kw(ps, "ESCAPE") && !(esc = parse_add(ps))) return NULL;
      ck_ast_t *like = node(ps, CK_AST_LIKE, t.pos);
      like->text = "LIKE";
      like->nargs = esc ? 3 : 2;
      like->args = ck_arena_alloc(ps->arena, sizeof(ck_ast_t *) * 3);
      like->args[0] = a, like->args[1] = b, like->args[2] = esc;
      like->negated = negated;
      a = like;
      continue;
    }
    if (accept_kw(ps, "SIMILAR")) {
      if (expect_kw(ps, "TO") || !enter(ps)) return NULL;
      ++*wraps;
      ck_ast_t *b = parse_add(ps), *esc = NULL;
      if (!b) return NULL;
      if (accept_kw(ps, "ESCAPE") && !(esc = parse_add(ps))) return NULL;
      ck_ast_t *sim = node(ps, CK_AST_LIKE, t.pos);
      sim->text = "SIMILAR TO";
      sim->nargs = esc ? 3 : 2;
      sim->args = ck_arena_alloc(ps->arena, sizeof(ck_ast_t *) * 3);
      sim->args[0] = a, sim->args[1] = b, sim->args[2] = esc;
      sim->negated = negated;
      a = sim;
      continue;
    }
    if (negated)
      return fail_at(ps, &ps->tok, "expected %s", "IN, BETWEEN, LIKE or SIMILAR TO after NOT"), NULL;
    return a;
  }
}

static ck_ast_t *parse_not(parser_t *ps) {
  tok_t t = ps->tok;
  if (accept_kw(ps, "NOT")) {
    if (!enter(ps)) return NULL;
    ck_ast_t *a = parse_not(ps);
    ps->depth--;
    return a ? node2(ps, CK_AST_UNARY, t.pos, "NOT", a, NULL) : NULL;
  }
  return parse_predicate(ps);
}

static ck_ast_t *parse_and(parser_t *ps) {
  ck_ast_t *a = parse_not(ps);
  while (a && is_kw(&ps->tok, "AND")) {
    tok_t t = ps->tok;
    next(ps);
    ck_ast_t *b = parse_not(ps);
    if (!b) return NULL;
    a = node2(ps, CK_AST_BINARY, t.pos, "AND", a, b);
  }
  return a;
}

static ck_ast_t *parse_expr(parser_t *ps) {
  if (!enter(ps)) return NULL;
  ck_ast_t *a = parse_and(ps);
  while (a && is_kw(&ps->tok, "OR")) {
    tok_t t = ps->tok;
    next(ps);
    ck_ast_t *b = parse_and(ps);
    if (!b) return NULL;
    a = node2(ps, CK_AST_BINARY, t.pos, "OR", a, b);
  }
  ps->depth--;
  return a;
}

/* ---------------------------------------------------------------- statements */

static int refuse(parser_t *ps, const tok_t *t, const char *what, const char *hint) {
  ck_error_set_at(ps->err, CK_EUNSUPPORTED, t->pos.line, t->pos.column, "%s is not supported",
                  what);
  if (hint) ck_error_hint(ps->err, "%s", hint);
  return CK_EUNSUPPORTED;
}

/* ---------------------------------------------------------------- grouping sets */

#define MAX_GROUPING_SETS 64

/* One grouping set written in GROUPING SETS (…): `(a, b)`, `()` or `a`; its keys appended to g. */
static int parse_one_set(parser_t *ps, vec_t *g, uint64_t *mask) {
  *mask = 0;
  bool paren = ps->tok.kind == T_LPAREN;
  if (paren) {
    next(ps);
    if (accept(ps, T_RPAREN)) return 0;
  }
  do {
    if (is_kw(&ps->tok, "ROLLUP") || is_kw(&ps->tok, "CUBE") ||
        (is_kw(&ps->tok, "GROUPING") && peek_word(ps, "SETS")))
      return refuse(ps, &ps->tok, "ROLLUP, CUBE or GROUPING SETS inside GROUPING SETS",
                    "list the sets themselves: GROUPING SETS ((a, b), (a), ())");
    ck_ast_t *e = parse_expr(ps);
    if (!e) return CK_ESYNTAX;
    if (g->n < 64) *mask |= 1ull << g->n;
    vec_push(ps, g, e);
  } while (paren && accept(ps, T_COMMA));
  return paren ? expect(ps, T_RPAREN, "')'") : 0;
}

/* GROUPING SETS (…), ROLLUP (…) or CUBE (…) in GROUP BY: its keys appended to g, and s->sets
 * := the cross product of the sets so far with this element's (SQL's rule for several). */
static int parse_grouping_sets(parser_t *ps, ck_ast_select_t *s, vec_t *g) {
  tok_t at = ps->tok;
  bool sets = is_kw(&at, "GROUPING"), cube = is_kw(&at, "CUBE");
  next(ps);
  if (sets) next(ps); /* SETS */
  if (expect(ps, T_LPAREN, "'('")) return CK_ESYNTAX;
  uint64_t el[MAX_GROUPING_SETS];
  int nel = 0;
  if (sets) {
    do {
      uint64_t m;
      if (parse_one_set(ps, g, &m)) return CK_ESYNTAX;
      if (nel == MAX_GROUPING_SETS) goto too_many;
      el[nel++] = m;
    } while (accept(ps, T_COMMA));
  } else {
    int first = g->n;
    do {
      ck_ast_t *e = parse_expr(ps);
      if (!e) return CK_ESYNTAX;
      vec_push(ps, g, e);
    } while (accept(ps, T_COMMA));
    int n = g->n - first;
    if (g->n > 64) goto too_many;
    if (cube) {
      if (n > 6) goto too_many;
      for (uint64_t sub = (1ull << n); sub-- > 0;) el[nel++] = sub << first;
    } else { /* ROLLUP (a, b, c): (a, b, c), (a, b), (a), () */
      for (int k = n; k >= 0; k--) el[nel++] = ((1ull << k) - 1) << first;
    }
  }
  if (expect(ps, T_RPAREN, "')'")) return CK_ESYNTAX;
  int nold = s->nsets ? s->nsets : 1;
  if ((long)nold * nel > MAX_GROUPING_SETS) goto too_many;
  uint64_t *out = ck_arena_alloc(ps->arena, sizeof *out * (size_t)(nold * nel));
  for (int i = 0; i < nold; i++)
    for (int j = 0; j < nel; j++) out[i * nel + j] = (s->nsets ? s->sets[i] : 0) | el[j];
  s->sets = out;
  s->nsets = nold * nel;
  return 0;
too_many:
  ck_error_set_at(ps->err, CK_EUNSUPPORTED, at.pos.line, at.pos.column,
                  "GROUP BY may make at most %d grouping sets of at most 64 keys (CUBE: 6)",
                  MAX_GROUPING_SETS);
  ck_error_hint(ps->err, "each grouping set is an aggregation of its own: split the query");
  return CK_EUNSUPPORTED;
}

/* FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size[, offset])), HOP(…, slide, size[, offset])
 * and CUMULATE(…, step, size[, offset]): Flink's windowing table functions, positional
 * arguments only. The planner turns them into the GROUP BY window they stand for. */
static int parse_window_tvf(parser_t *ps, ck_ast_select_t *s) {
  next(ps); /* TABLE */
  if (expect(ps, T_LPAREN, "'(' after TABLE")) return CK_ESYNTAX;
  tok_t fn = ps->tok;
  static const struct { const char *name; int min, max; const char *form; } tvfs[] = {
      {"TUMBLE", 1, 2, "TUMBLE(TABLE t, DESCRIPTOR(time_column), size[, offset])"},
      {"HOP", 2, 3, "HOP(TABLE t, DESCRIPTOR(time_column), slide, size[, offset])"},
      {"CUMULATE", 2, 3, "CUMULATE(TABLE t, DESCRIPTOR(time_column), step, size[, offset])"},
  };
  int which = -1;
  for (size_t i = 0; i < CK_ARRAY_LEN(tvfs); i++)
    if (is_kw(&fn, tvfs[i].name)) which = (int)i;
  if (which < 0) {
    if (is_kw(&fn, "SESSION"))
      return refuse(ps, &fn, "the SESSION window table function",
                    "write the session window in GROUP BY: GROUP BY SESSION(ts, INTERVAL '10' "
                    "SECOND), key");
    if (fn.kind != T_IDENT) return fail_at(ps, &fn, "expected %s", "TUMBLE, HOP or CUMULATE");
    char what[96];
    snprintf(what, sizeof what, "the table function %.*s", fn.len > 40 ? 40 : fn.len, fn.start);
    return refuse(ps, &fn, what, "the table functions are TUMBLE, HOP and CUMULATE");
  }
  next(ps);
  if (expect(ps, T_LPAREN, "'('")) return CK_ESYNTAX;
  if (ps->tok.kind == T_IDENT && peek_char(ps) == '=')
    return refuse(ps, &ps->tok,
                  "passing a window table function its arguments by name (DATA => …)",
                  tvfs[which].form);
  if (expect_kw(ps, "TABLE")) {
    ck_error_hint(ps->err, "%s", tvfs[which].form);
    return CK_ESYNTAX;
  }
  s->from_pos = ps->tok.pos;
  if (expect_ident(ps, "a table name", &s->from, NULL)) return CK_ESYNTAX;
  if (expect(ps, T_COMMA, "','")) return CK_ESYNTAX;
  if (!is_kw(&ps->tok, "DESCRIPTOR")) {
    fail_at(ps, &ps->tok, "expected %s", "DESCRIPTOR(time_column)");
    ck_error_hint(ps->err, "%s", tvfs[which].form);
    return CK_ESYNTAX;
  }
  next(ps);
  if (expect(ps, T_LPAREN, "'(' after DESCRIPTOR")) return CK_ESYNTAX;
  ck_ast_t *col = node(ps, CK_AST_IDENT, ps->tok.pos);
  if (expect_ident(ps, "the time column", &col->text, NULL)) return CK_ESYNTAX;
  if (ps->tok.kind == T_COMMA)
    return refuse(ps, &ps->tok, "a DESCRIPTOR of several columns", "name the one time column");
  if (expect(ps, T_RPAREN, "')'")) return CK_ESYNTAX;
  vec_t args = {0};
  vec_push(ps, &args, col);
  while (accept(ps, T_COMMA)) {
    ck_ast_t *a = parse_expr(ps);
    if (!a) return CK_ESYNTAX;
    vec_push(ps, &args, a);
  }
  int n = args.n - 1;
  if (n < tvfs[which].min || n > tvfs[which].max) {
    ck_error_set_at(ps->err, CK_ESYNTAX, fn.pos.line, fn.pos.column,
                    "%s takes %d interval argument%s after the DESCRIPTOR (and an optional "
                    "offset), not %d: %s", tvfs[which].name, tvfs[which].min,
                    tvfs[which].min == 1 ? "" : "s", n, tvfs[which].form);
    return CK_ESYNTAX;
  }
  if (expect(ps, T_RPAREN, "')'") || expect(ps, T_RPAREN, "')' closing TABLE(")) return CK_ESYNTAX;
  ck_ast_t *call = node(ps, CK_AST_CALL, fn.pos);
  call->text = tvfs[which].name;
  call->nargs = args.n;
  call->args = (ck_ast_t **)args.items;
  s->window_tvf = call;
  return 0;
}

static int parse_select(parser_t *ps, ck_ast_select_t **out) {
  ck_ast_select_t *s = ck_arena_zalloc(ps->arena, sizeof *s);
  s->pos = ps->tok.pos;
  if (expect_kw(ps, "SELECT")) return CK_ESYNTAX;
  if (is_kw(&ps->tok, "DISTINCT"))
    return refuse(ps, &ps->tok, "SELECT DISTINCT", "use GROUP BY over the columns instead");
  accept_kw(ps, "ALL");
  vec_t items = {0};
  do {
    ck_ast_select_item_t *it = ck_arena_zalloc(ps->arena, sizeof *it);
    it->pos = ps->tok.pos;
    if (ps->tok.kind == T_STAR) {
      it->expr = node(ps, CK_AST_STAR, ps->tok.pos);
      next(ps);
    } else {
      if (!(it->expr = parse_expr(ps))) return CK_ESYNTAX;
      if (accept_kw(ps, "AS")) {
        if (expect_ident(ps, "an alias", &it->alias, NULL)) return CK_ESYNTAX;
      } else if (ps->tok.kind == T_QIDENT || (ps->tok.kind == T_IDENT && !is_reserved(&ps->tok))) {
        it->alias_pos = ps->tok.pos; /* an implicit alias: remembered for the FROM hint */
        it->alias = ident_text(ps, &ps->tok);
        next(ps);
      }
    }
    vec_push(ps, &items, it);
  } while (accept(ps, T_COMMA));
  s->nitems = items.n;
  s->items = ck_arena_alloc(ps->arena, sizeof *s->items * (size_t)items.n);
  for (int i = 0; i < items.n; i++) s->items[i] = *(ck_ast_select_item_t *)items.items[i];

  const ck_ast_select_item_t *lastit = items.items[items.n - 1];
  if (!is_kw(&ps->tok, "FROM") && lastit->alias && lastit->alias_pos.line &&
      (ps->tok.kind == T_IDENT || ps->tok.kind == T_QIDENT)) {
    const char *cands[] = {"FROM"};
    if (ck_closest(lastit->alias, cands, 1)) {
      ck_error_set_at(ps->err, CK_ESYNTAX, lastit->alias_pos.line, lastit->alias_pos.column,
                      "expected FROM, found '%s'", lastit->alias);
      ck_error_hint(ps->err, "did you mean FROM?");
      return CK_ESYNTAX;
    }
  }
  if (expect_kw(ps, "FROM")) {
    if (ps->tok.kind == T_EOF || ps->tok.kind == T_SEMI)
      ck_error_hint(ps->err, "a query reads FROM a table created with CREATE TABLE");
    return CK_ESYNTAX;
  }
  if (ps->tok.kind == T_LPAREN) return refuse(ps, &ps->tok, "a subquery in FROM", NULL);
  if (is_kw(&ps->tok, "TABLE")) {
    int rc = parse_window_tvf(ps, s);
    if (rc) return rc;
  } else {
    s->from_pos = ps->tok.pos;
    if (expect_ident(ps, "a table name", &s->from, NULL)) return CK_ESYNTAX;
  }
  if (accept_kw(ps, "AS")) {
    if (expect_ident(ps, "an alias", &s->from_alias, NULL)) return CK_ESYNTAX;
  } else if (ps->tok.kind == T_IDENT && !is_reserved(&ps->tok)) {
    s->from_alias = ident_text(ps, &ps->tok);
    next(ps);
  }
  if (ps->tok.kind == T_COMMA) return refuse(ps, &ps->tok, "reading several tables (joins)", NULL);
  static const char *const joins[] = {"JOIN", "LEFT", "RIGHT", "INNER", "FULL", "CROSS"};
  for (size_t i = 0; i < CK_ARRAY_LEN(joins); i++)
    if (is_kw(&ps->tok, joins[i])) return refuse(ps, &ps->tok, "JOIN", NULL);
  if (accept_kw(ps, "WHERE") && !(s->where = parse_expr(ps))) return CK_ESYNTAX;
  if (is_kw(&ps->tok, "GROUP")) {
    next(ps);
    if (expect_kw(ps, "BY")) return CK_ESYNTAX;
    vec_t g = {0};
    uint64_t plain = 0;
    do {
      if ((is_kw(&ps->tok, "GROUPING") && peek_word(ps, "SETS")) ||
          ((is_kw(&ps->tok, "ROLLUP") || is_kw(&ps->tok, "CUBE")) && peek_char(ps) == '(')) {
        if (parse_grouping_sets(ps, s, &g)) return CK_ESYNTAX;
        continue;
      }
      ck_ast_t *e = parse_expr(ps);
      if (!e) return CK_ESYNTAX;
      if (g.n < 64) plain |= 1ull << g.n;
      vec_push(ps, &g, e);
    } while (accept(ps, T_COMMA));
    s->ngroup = g.n;
    s->group_by = (ck_ast_t **)g.items;
    if (s->nsets && g.n > 64)
      return ck_error_set_at(ps->err, CK_EUNSUPPORTED, s->group_by[64]->pos.line,
                             s->group_by[64]->pos.column,
                             "GROUPING SETS, ROLLUP and CUBE take at most 64 keys in all");
    for (int i = 0; i < s->nsets; i++) s->sets[i] |= plain; /* plain keys are in every set */
  }
  if (accept_kw(ps, "HAVING") && !(s->having = parse_expr(ps))) return CK_ESYNTAX;
  if (is_kw(&ps->tok, "ORDER"))
    return refuse(ps, &ps->tok, "ORDER BY", "a stream has no end to sort at; sort the output");
  if (is_kw(&ps->tok, "LIMIT")) return refuse(ps, &ps->tok, "LIMIT", NULL);
  if (is_kw(&ps->tok, "UNION") || is_kw(&ps->tok, "EXCEPT") || is_kw(&ps->tok, "INTERSECT"))
    return refuse(ps, &ps->tok, "set operations (UNION, EXCEPT, INTERSECT)", NULL);
  if (is_kw(&ps->tok, "WINDOW")) return refuse(ps, &ps->tok, "named WINDOW clauses", NULL);
  *out = s;
  return 0;
}

static int parse_option_key(parser_t *ps, const char **out) {
  if (ps->tok.kind == T_STRING) {
    *out = string_text(ps, &ps->tok);
    next(ps);
    return 0;
  }
  ck_buf_t key;
  ck_buf_init(&key);
  for (;;) {
    if (ps->tok.kind != T_IDENT && ps->tok.kind != T_QIDENT) {
      ck_buf_fini(&key);
      return fail_at(ps, &ps->tok, "expected %s", "an option name");
    }
    const char *part = ident_text(ps, &ps->tok);
    ck_buf_puts(&key, part);
    next(ps);
    if (!accept(ps, T_DOT)) break;
    ck_buf_putc(&key, '.');
  }
  *out = ck_arena_strdup(ps->arena, key.data);
  ck_buf_fini(&key);
  return 0;
}

static int parse_columns(parser_t *ps, ck_stmt_t *st, vec_t *cols, ck_hmap_t *seen);
static int parse_options(parser_t *ps, ck_stmt_t *st, ck_hmap_t *seen);

static int parse_create_function(parser_t *ps, ck_stmt_t *st);

static int parse_create(parser_t *ps, ck_stmt_t *st) {
  st->kind = CK_STMT_CREATE_TABLE;
  if (is_kw(&ps->tok, "TEMPORARY") || is_kw(&ps->tok, "FUNCTION"))
    return parse_create_function(ps, st);
  if (!accept_kw(ps, "TABLE")) {
    if (is_kw(&ps->tok, "VIEW")) return refuse(ps, &ps->tok, "CREATE VIEW", NULL);
    return expect_kw(ps, "TABLE");
  }
  if (is_kw(&ps->tok, "IF")) {
    next(ps);
    if (expect_kw(ps, "NOT") || expect_kw(ps, "EXISTS")) return CK_ESYNTAX;
    st->if_not_exists = true;
  }
  if (expect_ident(ps, "a table name", &st->table, &st->table_pos)) return CK_ESYNTAX;
  if (is_kw(&ps->tok, "AS")) return refuse(ps, &ps->tok, "CREATE TABLE … AS SELECT", NULL);
  if (expect(ps, T_LPAREN, "'(' and the table's columns")) return CK_ESYNTAX;
  vec_t cols = {0};
  ck_hmap_t seen; /* folded column names, and then option keys: duplicates in linear time */
  ck_hmap_init(&seen);
  int rc = parse_columns(ps, st, &cols, &seen);
  ck_hmap_fini(&seen);
  if (rc) return rc;
  if (expect(ps, T_RPAREN, "')' or ','")) return CK_ESYNTAX;
  st->ncolumns = cols.n;
  st->columns = ck_arena_alloc(ps->arena, sizeof *st->columns * (size_t)cols.n);
  for (int i = 0; i < cols.n; i++) st->columns[i] = *(ck_ast_column_t *)cols.items[i];
  if (accept_kw(ps, "WITH")) {
    ck_hmap_init(&seen);
    rc = parse_options(ps, st, &seen);
    ck_hmap_fini(&seen);
    if (rc) return rc;
  }
  return 0;
}

/* CREATE [TEMPORARY [SYSTEM]] FUNCTION [IF NOT EXISTS] name AS 'symbol'
 *   USING [LIBRARY] 'path' LANGUAGE C   — USING and LANGUAGE in either order (Flink writes
 * LANGUAGE first); the language must be C, and a Flink JAR is refused by name. */
static int parse_create_function(parser_t *ps, ck_stmt_t *st) {
  st->kind = CK_STMT_CREATE_FUNCTION;
  if (accept_kw(ps, "TEMPORARY")) {
    st->fn_temporary = true;
    accept_kw(ps, "SYSTEM");
  }
  if (expect_kw(ps, "FUNCTION")) return CK_ESYNTAX;
  if (is_kw(&ps->tok, "IF")) {
    next(ps);
    if (expect_kw(ps, "NOT") || expect_kw(ps, "EXISTS")) return CK_ESYNTAX;
    st->if_not_exists = true;
  }
  if (expect_ident(ps, "a function name", &st->table, &st->table_pos)) return CK_ESYNTAX;
  if (ps->tok.kind == T_DOT)
    return refuse(ps, &ps->tok, "a catalog or database in a function name",
                  "clink has no catalogs: name the function alone");
  if (expect_kw(ps, "AS")) return CK_ESYNTAX;
  if (ps->tok.kind != T_STRING)
    return fail_at(ps, &ps->tok, "expected %s", "the function's symbol as a string ('symbol')");
  st->fn_symbol_pos = ps->tok.pos;
  st->fn_symbol = string_text(ps, &ps->tok);
  next(ps);
  bool language = false;
  for (;;) {
    if (is_kw(&ps->tok, "USING") && !st->fn_path) {
      next(ps);
      if (is_kw(&ps->tok, "JAR") || is_kw(&ps->tok, "FILE") || is_kw(&ps->tok, "ARCHIVE"))
        return refuse(ps, &ps->tok, ck_arena_printf(ps->arena, "USING %s",
                      tok_text(ps, &ps->tok)), "write USING 'path/to/lib.so' (a shared library "
                      "of C functions)");
      accept_kw(ps, "LIBRARY");
      if (ps->tok.kind != T_STRING)
        return fail_at(ps, &ps->tok, "expected %s", "the library's path as a string ('lib.so')");
      st->fn_path_pos = ps->tok.pos;
      st->fn_path = string_text(ps, &ps->tok);
      next(ps);
    } else if (is_kw(&ps->tok, "LANGUAGE") && !language) {
      next(ps);
      if (!is_kw(&ps->tok, "C")) {
        if (ps->tok.kind == T_IDENT)
          return refuse(ps, &ps->tok, ck_arena_printf(ps->arena, "LANGUAGE %s",
                        tok_text(ps, &ps->tok)), "clink loads functions written in C "
                        "(LANGUAGE C; include/clink/udf.h); Python functions come with pyclink");
        return fail_at(ps, &ps->tok, "expected %s", "LANGUAGE C");
      }
      next(ps);
      language = true;
    } else {
      break;
    }
  }
  if (!st->fn_path)
    return fail_at(ps, &ps->tok, "expected %s", "USING 'path/to/lib.so' (the library)");
  if (!language) return fail_at(ps, &ps->tok, "expected %s", "LANGUAGE C");
  return 0;
}

/* Adds key (folded to lower case when fold) to seen; false when it was there already. */
static bool first_time(ck_hmap_t *seen, const char *key, bool fold) {
  size_t n = strlen(key);
  char *k = ck_strndup(key, n);
  if (fold)
    for (size_t i = 0; i < n; i++) k[i] = (char)tolower((unsigned char)k[i]);
  bool created;
  ck_hmap_put(seen, k, n, &created);
  ck_free(k);
  return created;
}

/* WATERMARK FOR col AS expr (Flink's DDL; the planner maps it onto event_time_column and
 * watermark_lag_ms). One per table. */
static int parse_watermark(parser_t *ps, ck_stmt_t *st) {
  tok_t w = ps->tok;
  next(ps);
  if (st->wm_column)
    return ck_error_set_at(ps->err, CK_EBIND, w.pos.line, w.pos.column,
                           "table '%s' has two WATERMARK clauses; it may have one", st->table);
  st->wm_pos = w.pos;
  if (expect_kw(ps, "FOR") ||
      expect_ident(ps, "the event-time column", &st->wm_column, &st->wm_column_pos) ||
      expect_kw(ps, "AS"))
    return CK_ESYNTAX;
  st->wm_expr = parse_expr(ps);
  return st->wm_expr ? 0 : CK_ESYNTAX;
}

static int parse_columns(parser_t *ps, ck_stmt_t *st, vec_t *colsp, ck_hmap_t *seen) {
  vec_t cols = *colsp;
  do {
    if (is_kw(&ps->tok, "WATERMARK")) {
      if (parse_watermark(ps, st)) return CK_ESYNTAX;
      continue;
    }
    if (is_kw(&ps->tok, "PRIMARY") || is_kw(&ps->tok, "CONSTRAINT"))
      return refuse(ps, &ps->tok, "table constraints (PRIMARY KEY, CONSTRAINT)", NULL);
    ck_ast_column_t *c = ck_arena_zalloc(ps->arena, sizeof *c);
    if (expect_ident(ps, "a column name", &c->name, &c->pos)) return CK_ESYNTAX;
    if (is_kw(&ps->tok, "AS")) {
      /* a computed column: name AS expression (its type is the expression's) */
      next(ps);
      if (!(c->computed = parse_expr(ps))) return CK_ESYNTAX;
    } else {
      if (parse_type(ps, &c->type)) return CK_ESYNTAX;
      if (is_kw(&ps->tok, "NOT")) {
        next(ps);
        if (expect_kw(ps, "NULL")) return CK_ESYNTAX;
      } else {
        accept_kw(ps, "NULL");
      }
      if (is_kw(&ps->tok, "METADATA"))
        return refuse(ps, &ps->tok, "METADATA columns", NULL);
    }
    if (!first_time(seen, c->name, true))
      return ck_error_set_at(ps->err, CK_EBIND, c->pos.line, c->pos.column,
                             "column '%s' is declared twice in table '%s'", c->name, st->table);
    vec_push(ps, &cols, c);
    *colsp = cols;
  } while (accept(ps, T_COMMA));
  return 0;
}

static int parse_options(parser_t *ps, ck_stmt_t *st, ck_hmap_t *seen) {
  {
    if (expect(ps, T_LPAREN, "'(' and the table's options")) return CK_ESYNTAX;
    vec_t keys = {0}, vals = {0}, poss = {0};
    do {
      ck_pos_t *pos = ck_arena_alloc(ps->arena, sizeof *pos);
      *pos = ps->tok.pos;
      const char *key = NULL;
      if (parse_option_key(ps, &key) || expect(ps, T_EQ, "'='")) return CK_ESYNTAX;
      if (ps->tok.kind != T_STRING) {
        fail_at(ps, &ps->tok, "expected %s", "a quoted option value");
        ck_error_hint(ps->err, "option values are quoted strings: %s = '…'", key);
        return CK_ESYNTAX;
      }
      if (!first_time(seen, key, false))
        return ck_error_set_at(ps->err, CK_EOPTION, pos->line, pos->column,
                               "option '%s' is given twice", key);
      vec_push(ps, &keys, (void *)key);
      vec_push(ps, &vals, (void *)string_text(ps, &ps->tok));
      vec_push(ps, &poss, pos);
      next(ps);
    } while (accept(ps, T_COMMA));
    if (expect(ps, T_RPAREN, "')' or ','")) return CK_ESYNTAX;
    st->noptions = keys.n;
    st->opt_keys = (const char **)keys.items;
    st->opt_values = (const char **)vals.items;
    st->opt_pos = ck_arena_alloc(ps->arena, sizeof(ck_pos_t) * (size_t)(keys.n ? keys.n : 1));
    for (int i = 0; i < keys.n; i++) st->opt_pos[i] = *(ck_pos_t *)poss.items[i];
  }
  return 0;
}

static int parse_statement(parser_t *ps, ck_stmt_t **out) {
  ck_stmt_t *st = ck_arena_zalloc(ps->arena, sizeof *st);
  st->pos = ps->tok.pos;
  tok_t t = ps->tok;
  int rc;
  if (accept_kw(ps, "CREATE")) {
    rc = parse_create(ps, st);
  } else if (accept_kw(ps, "INSERT")) {
    st->kind = CK_STMT_INSERT;
    if (is_kw(&ps->tok, "OVERWRITE")) return refuse(ps, &ps->tok, "INSERT OVERWRITE", NULL);
    if (expect_kw(ps, "INTO") || expect_ident(ps, "a table name", &st->table, &st->table_pos))
      return CK_ESYNTAX;
    if (accept(ps, T_LPAREN)) {
      vec_t cols = {0};
      do {
        const char *c;
        if (expect_ident(ps, "a column name", &c, NULL)) return CK_ESYNTAX;
        vec_push(ps, &cols, (void *)c);
      } while (accept(ps, T_COMMA));
      if (expect(ps, T_RPAREN, "')' or ','")) return CK_ESYNTAX;
      st->ninsert_cols = cols.n;
      st->insert_cols = (const char **)cols.items;
    }
    if (is_kw(&ps->tok, "VALUES")) return refuse(ps, &ps->tok, "INSERT … VALUES", "insert from a SELECT over a source table");
    rc = parse_select(ps, &st->select);
  } else if (is_kw(&t, "SELECT")) {
    st->kind = CK_STMT_SELECT;
    rc = parse_select(ps, &st->select);
  } else if (t.kind == T_IDENT) {
    static const char *const verbs[] = {"DROP", "ALTER", "UPDATE", "DELETE", "SET", "USE",
                                        "SHOW", "EXPLAIN", "DESCRIBE", "WITH", "MERGE"};
    for (size_t i = 0; i < CK_ARRAY_LEN(verbs); i++)
      if (is_kw(&t, verbs[i]))
        return refuse(ps, &t, ck_arena_printf(ps->arena, "the %s statement", verbs[i]),
                      "clink runs CREATE TABLE, INSERT INTO … SELECT and SELECT");
    fail_at(ps, &t, "expected %s", "a statement (CREATE TABLE, INSERT INTO or SELECT)");
    static const char *const stmts[] = {"CREATE", "INSERT", "SELECT"};
    char word[64];
    snprintf(word, sizeof word, "%.*s", t.len < 63 ? t.len : 63, t.start);
    const char *close = ck_closest(word, stmts, 3);
    if (close) ck_error_hint(ps->err, "did you mean %s?", close);
    return CK_ESYNTAX;
  } else {
    return fail_at(ps, &t, "expected %s", "a statement (CREATE TABLE, INSERT INTO or SELECT)");
  }
  if (rc) return rc;
  if (ps->tok.kind != T_SEMI && ps->tok.kind != T_EOF) {
    fail_at(ps, &ps->tok, "expected %s", "';' or the end of the statement");
    if (ps->tok.kind == T_IDENT) {
      char word[64];
      snprintf(word, sizeof word, "%.*s", ps->tok.len < 63 ? ps->tok.len : 63, ps->tok.start);
      static const char *const clauses[] = {"FROM", "WHERE", "GROUP", "HAVING", "WITH", "SELECT"};
      const char *close = ck_closest(word, clauses, CK_ARRAY_LEN(clauses));
      if (close) ck_error_hint(ps->err, "did you mean %s?", close);
    }
    return CK_ESYNTAX;
  }
  *out = st;
  return 0;
}

/* The length of the UTF-8 sequence at s[0..n), or 0 when it is not one (overlong forms,
 * surrogates and code points above U+10FFFF are not UTF-8). */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t len;
  unsigned min;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) len = 2, min = 0x80;
  else if (c >= 0xE0 && c <= 0xEF) len = 3, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4) len = 4, min = 0x10000;
  else return 0;
  if (n < len) return 0;
  unsigned cp = c & (0x3F >> (len - 1));
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

/* The script is text: a NUL byte or a byte that is not UTF-8 is refused where it is, before
 * anything is tokenized (a NUL would otherwise end the script early, and a string literal
 * would carry the bad byte into the output). */
static int check_text(const char *sql, size_t len, ck_error_t *err) {
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < len;) {
    unsigned char c = (unsigned char)sql[i];
    if (c == '\n') {
      line++;
      line_start = ++i;
      continue;
    }
    if (c == 0) {
      ck_error_set_at(err, CK_ESYNTAX, line, (int)(i - line_start) + 1,
                      "the script contains a NUL byte (\\0)");
      ck_error_hint(err, "SQL text cannot contain NUL; remove it (it often comes from a file "
                         "saved as UTF-16 or from a C string with a stray terminator)");
      return CK_ESYNTAX;
    }
    size_t k = utf8_seq((const unsigned char *)sql + i, len - i);
    if (!k) {
      ck_error_set_at(err, CK_ESYNTAX, line, (int)(i - line_start) + 1,
                      "invalid UTF-8 in the script: byte 0x%02X at offset %zu", c, i);
      ck_error_hint(err, "SQL text must be UTF-8; convert the file (e.g. iconv -f LATIN1 -t UTF-8)");
      return CK_ESYNTAX;
    }
    i += k;
  }
  return 0;
}

int ck_sql_parse(const char *sql, ck_arena_t *arena, ck_script_t *out, ck_error_t *err) {
  return ck_sql_parse_n(sql, strlen(sql), arena, out, err);
}

int ck_sql_parse_n(const char *sql, size_t len, ck_arena_t *arena, ck_script_t *out,
                   ck_error_t *err) {
  parser_t ps = {.src = sql, .p = sql, .line = 1, .line_start = sql, .arena = arena, .err = err};
  memset(out, 0, sizeof *out);
  int rc = check_text(sql, len, err);
  if (rc) return rc;
  next(&ps);
  vec_t stmts = {0};
  while (ps.tok.kind != T_EOF) {
    if (ps.tok.kind == T_BAD) {
      if (!err || !err->code) fail_at(&ps, &ps.tok, "%s", "unexpected character");
      return CK_ESYNTAX;
    }
    if (accept(&ps, T_SEMI)) continue;
    ck_stmt_t *st = NULL;
    int rc = parse_statement(&ps, &st);
    if (rc || (err && err->code)) return rc ? rc : err->code;
    vec_push(&ps, &stmts, st);
  }
  if (err && err->code) return err->code;
  out->nstmts = stmts.n;
  out->stmts = (ck_stmt_t **)stmts.items;
  return 0;
}

/* Appends text with every credential masked (base/redact.h). */
static void put_redacted(ck_buf_t *out, const char *text) {
  ck_redact_text(text, strlen(text), out);
}

void ck_sql_render_error(const char *sql, const char *filename, const ck_error_t *err,
                         ck_buf_t *out) {
  /* The script redacted first (base/redact.h: line breaks are kept, the caret follows its
   * token, and every credential it holds is remembered), so neither the excerpt nor a message
   * quoting a token of it ever shows one. */
  ck_buf_t red;
  ck_buf_init(&red);
  const char *p = NULL;
  size_t at = 0;
  if (sql) {
    p = sql;
    for (int l = 1; l < err->line && p && *p; l++)
      if ((p = strchr(p, '\n'))) p++;
    at = p ? (size_t)(p - sql) + (size_t)(err->column > 0 ? err->column - 1 : 0) : 0;
    ck_redact_sql(sql, strlen(sql), &red, &at);
  }
  const char *msg = err->message[0] ? err->message : ck_error_default(err->code);
  if (err->line > 0)
    ck_buf_printf(out, "%s:%d:%d: error: ", filename ? filename : "<sql>", err->line,
                  err->column);
  else
    ck_buf_puts(out, "error: ");
  put_redacted(out, msg);
  ck_buf_putc(out, '\n');
  p = NULL;
  if (err->line > 0 && red.data) { /* the same line of the redacted text */
    p = red.data;
    for (int l = 1; l < err->line && p; l++)
      if ((p = strchr(p, '\n'))) p++;
  }
  if (p) {
    size_t n = strcspn(p, "\n");
    char gutter[16];
    int gw = snprintf(gutter, sizeof gutter, "%d", err->line);
    size_t ls = (size_t)(p - red.data);
    int col = at >= ls && at <= ls + n ? (int)(at - ls) : err->column - 1;
    /* the line may hold the bytes that are not UTF-8 the error is about: show '?' for each,
     * so the message itself is text (and the caret stays under its column) */
    char *shown = ck_strndup(p, n);
    for (size_t i = 0; i < n;) {
      size_t k = utf8_seq((const unsigned char *)shown + i, n - i);
      if (k) i += k;
      else shown[i++] = '?';
    }
    p = shown;
    ck_buf_printf(out, " %s | %.*s\n %*s | ", gutter, (int)n, p, gw, "");
    for (int i = 0; i < col && (size_t)i < n; i++) ck_buf_putc(out, p[i] == '\t' ? '\t' : ' ');
    /* underline the token at the column */
    size_t len = 1;
    const char *t = p + col;
    if ((size_t)col < n) {
      if (isalnum((unsigned char)*t) || *t == '_') {
        len = 0;
        while ((size_t)col + len < n && (isalnum((unsigned char)t[len]) || t[len] == '_')) len++;
      } else if (*t == '\'') {
        len = 1;
        while ((size_t)col + len < n && t[len] != '\'') len++;
        if ((size_t)col + len < n) len++;
      }
    }
    for (size_t i = 0; i < len; i++) ck_buf_putc(out, '^');
    ck_buf_putc(out, '\n');
    ck_free(shown);
  }
  ck_buf_fini(&red);
  if (err->detail[0]) {
    ck_buf_puts(out, "detail: ");
    put_redacted(out, err->detail);
    ck_buf_putc(out, '\n');
  }
  if (err->hint[0]) {
    ck_buf_puts(out, "hint: ");
    put_redacted(out, err->hint);
    ck_buf_putc(out, '\n');
  }
}
