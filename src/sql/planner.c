/*
 * DESIGN: the binder and planner; see planner.h.
 *
 * Binding works in one of two scopes. The row scope sees the FROM table's columns (WHERE, the
 * GROUP BY keys, aggregate arguments, the SELECT list of a plain query). The group scope sees
 * what an aggregation outputs: the GROUP BY expressions (matched structurally, so
 * `GROUP BY UPPER(name)` lets the SELECT say `UPPER(name)`), window_start / window_end, and the
 * aggregate calls; a bare column outside GROUP BY is an error there, as in any SQL engine.
 *
 * Walks of the AST (bind, ast_eq, collect_aggs) loop down a chain of binary operators' first
 * operands with an explicit stack and recurse only into the other operands, whose nesting the
 * parser bounds (CK_SQL_MAX_DEPTH), so a 100,000-term a + b + … is bound without deep
 * recursion. A bound expression may not exceed CK_SQL_MAX_EXPR_NODES nodes (BETWEEN and a
 * simple CASE repeat their first operand, so their nesting could otherwise grow a tree
 * exponentially), and a windowed query CK_SQL_MAX_WINDOWS_PER_RECORD windows per record. Name
 * lookups (columns, output names, sink columns) go through hash maps: planning is linear in
 * the width of the query and of its tables.
 *
 * Time in DDL (declare_time): a computed column (`name AS expr`) is bound against the table's
 * physical columns and travels in the source spec, which evaluates it before event time is
 * read; `proc AS PROCTIME()` is the one clock read, allowed nowhere else; WATERMARK FOR c AS
 * c - INTERVAL is rewritten into the event_time_column and watermark_lag_ms options, so one
 * rule (the sources') makes watermarks whichever way a table says it. Window bounds take the
 * time column's type (TIMESTAMP(3), or epoch-ms presentation over a BIGINT: types.h).
 */
#include "sql/planner.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/redact.h"
#include "base/hash.h"
#include "sql/parser.h"
#include "runtime/udf.h"

typedef struct table {
  const ck_stmt_t *st;
  ck_schema_t schema;
  ck_hmap_t cols;         /* folded column name -> index (names_get) */
  ck_options_t options;
  const ck_connector_t *conn;
  /* computed columns (`name AS expr`, `proc AS PROCTIME()`): what the source spec carries */
  int ncomputed;          /* 0: every column is physical, and the fields below are unset */
  ck_expr_t **computed;   /* per column: its expression over phys, or NULL */
  int proctime_col;       /* the PROCTIME() column, or -1 */
  ck_schema_t phys;       /* the columns the connector reads */
  int *phys_col;          /* phys column i is column phys_col[i] */
} table_t;

typedef struct agg_info {
  int ngroup;             /* non-window GROUP BY expressions (the keys) */
  ck_ast_t **group;
  int *slots;             /* open addressing over group by ast_hash: index + 1, 0 empty */
  size_t nslots;          /* a power of two, at least twice ngroup; 0 while not built */
  const ck_ast_t *window; /* the TUMBLE/HOP/… call, or NULL */
  int ncalls;
  const ck_ast_t *calls[64];
} agg_info_t;

typedef struct planner {
  ck_graph_t *graph;
  ck_arena_t *arena;
  ck_error_t *err;
  const ck_plan_opts_t *opts;
  table_t tables[64];
  int ntables;
  ck_node_t *nodes;
  int nnodes, cap;
  struct {                /* CREATE FUNCTION … LANGUAGE C: the script's user-defined functions */
    const ck_stmt_t *st;
    const ck_udf_t *udf;
  } fns[64];
  int nfns;
} planner_t;

typedef struct scope {
  planner_t *pl;
  const table_t *tbl;
  const char *alias;
  const char *clause;     /* "WHERE", "GROUP BY", … for error messages */
  const agg_info_t *agg;  /* non-NULL: group scope */
  bool windowed;
} scope_t;

static const char *const agg_names[] = {"COUNT", "SUM", "AVG", "MIN", "MAX",
                                        /* expanded into the ones above (expand_aggs) */
                                        "STDDEV_POP", "STDDEV_SAMP", "STDDEV", "VAR_POP",
                                        "VAR_SAMP", "VARIANCE", "BOOL_AND", "BOOL_OR",
                                        /* their own accumulators (agg_call_spec_more) */
                                        "FIRST_VALUE", "LAST_VALUE", "LISTAGG",
                                        "APPROX_COUNT_DISTINCT"};
static const char *const window_names[] = {"TUMBLE", "HOP", "SESSION", "CUMULATE"};

static bool is_udf_agg_call(const ck_ast_t *a);

static bool is_agg_call(const ck_ast_t *a) {
  if (a->kind != CK_AST_CALL) return false;
  if (is_udf_agg_call(a)) return true;
  for (size_t i = 0; i < CK_ARRAY_LEN(agg_names); i++)
    if (ck_streq_i(a->text, agg_names[i])) return true;
  return false;
}

static bool is_window_call(const ck_ast_t *a) {
  if (a->kind != CK_AST_CALL) return false;
  for (size_t i = 0; i < CK_ARRAY_LEN(window_names); i++)
    if (ck_streq_i(a->text, window_names[i])) return true;
  return false;
}

static int fail(planner_t *pl, ck_pos_t pos, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(planner_t *pl, ck_pos_t pos, int code, const char *fmt, ...) {
  if (pl->err->code) return pl->err->code;
  va_list ap;
  va_start(ap, fmt);
  char msg[CK_ERR_MSG];
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ck_error_set_at(pl->err, code, pos.line, pos.column, "%s", msg);
  return code;
}

/* Gives a constructor's error (which has no position) the position of the node. */
static void place(planner_t *pl, ck_pos_t pos) {
  if (pl->err->code && pl->err->line == 0) {
    pl->err->line = pos.line;
    pl->err->column = pos.column;
  }
}

/* ---------------------------------------------------------------- names */

/* Names are compared without regard to ASCII case; a map from the folded name keeps lookups
 * over a wide query or table linear instead of comparing every pair. */
static char *fold_name(const char *name, char *local, size_t cap, size_t *len) {
  *len = strlen(name);
  char *key = *len < cap ? local : ck_malloc(*len + 1);
  for (size_t i = 0; i < *len; i++) key[i] = (char)tolower((unsigned char)name[i]);
  return key;
}

/* Adds name -> index; returns the index already there for the name, or -1. */
static int names_put(ck_hmap_t *map, const char *name, int index) {
  char local[128];
  size_t len;
  char *key = fold_name(name, local, sizeof local, &len);
  bool created;
  void **slot = ck_hmap_put(map, key, len, &created);
  if (key != local) ck_free(key);
  if (!created) return (int)(intptr_t)*slot - 1;
  *slot = (void *)(intptr_t)(index + 1);
  return -1;
}

static int names_get(const ck_hmap_t *map, const char *name) {
  char local[128];
  size_t len;
  char *key = fold_name(name, local, sizeof local, &len);
  void *v = ck_hmap_get(map, key, len);
  if (key != local) ck_free(key);
  return v ? (int)(intptr_t)v - 1 : -1;
}

/* ---------------------------------------------------------------- catalog */

static const table_t *find_table(planner_t *pl, const char *name) {
  for (int i = 0; i < pl->ntables; i++)
    if (ck_streq_i(pl->tables[i].st->table, name)) return &pl->tables[i];
  return NULL;
}

static int unknown_table(planner_t *pl, const char *name, ck_pos_t pos) {
  fail(pl, pos, CK_EBIND, "unknown table '%s'", name);
  const char *names[64];
  for (int i = 0; i < pl->ntables; i++) names[i] = pl->tables[i].st->table;
  const char *close = ck_closest(name, names, (size_t)pl->ntables);
  if (close) ck_error_hint(pl->err, "did you mean '%s'?", close);
  else ck_error_hint(pl->err, "declare it first with CREATE TABLE %s (…) WITH (connector = '…')", name);
  return CK_EBIND;
}

static int declare_time(planner_t *pl, table_t *t);

/* Changelog sources (Flink's CDC formats and upsert-kafka), refused by name: their rows are
 * updates and deletes, which no clink operator takes yet (an aggregation refuses retractions). */
static int refuse_changelog_source(planner_t *pl, const ck_stmt_t *st) {
  static const char *const formats[] = {"debezium-json", "debezium-avro-confluent", "canal-json",
                                        "maxwell-json", "ogg-json"};
  for (int i = 0; i < st->noptions; i++) {
    const char *k = st->opt_keys[i], *v = st->opt_values[i];
    bool upsert = !strcmp(k, "connector") && ck_streq_i(v, "upsert-kafka");
    bool cdc = false;
    if (!strcmp(k, "format") || !strcmp(k, "value.format"))
      for (size_t f = 0; f < CK_ARRAY_LEN(formats); f++) cdc = cdc || ck_streq_i(v, formats[f]);
    if (!upsert && !cdc) continue;
    fail(pl, st->opt_pos[i], CK_EUNSUPPORTED, upsert ? "the connector 'upsert-kafka' is not "
         "supported yet" : "the changelog format '%s' is not supported yet", v);
    ck_error_detail(pl->err, "a changelog source sends updates and deletes, and no clink "
                    "operator takes retractions yet");
    ck_error_hint(pl->err, upsert ? "read the topic with connector = 'kafka' (every message is "
                  "an insert)" : "read the envelope with format = 'json' and VARCHAR columns "
                  "(op, after), and its fields with JSON_VALUE(after, '$.id')");
    return CK_EUNSUPPORTED;
  }
  return 0;
}

static int add_table(planner_t *pl, const ck_stmt_t *st) {
  if (find_table(pl, st->table)) {
    if (st->if_not_exists) return 0;
    return fail(pl, st->table_pos, CK_EEXISTS, "table '%s' is already declared", st->table);
  }
  if (pl->ntables == (int)CK_ARRAY_LEN(pl->tables))
    return fail(pl, st->pos, CK_EUNSUPPORTED, "a script may declare at most 64 tables");
  table_t *t = &pl->tables[pl->ntables];
  memset(t, 0, sizeof *t);
  t->st = st;
  t->schema = ck_schema_make(pl->arena, st->ncolumns);
  ck_hmap_init(&t->cols);
  pl->ntables++; /* from here on its map is freed with the planner */
  for (int i = 0; i < st->ncolumns; i++) {
    t->schema.names[i] = ck_arena_strdup(pl->arena, st->columns[i].name);
    t->schema.types[i] = st->columns[i].type;
    names_put(&t->cols, t->schema.names[i], i);
  }
  t->options.n = st->noptions;
  t->options.keys = ck_arena_zalloc(pl->arena, sizeof(char *) * (size_t)(st->noptions + 1));
  t->options.values = ck_arena_zalloc(pl->arena, sizeof(char *) * (size_t)(st->noptions + 1));
  const char *connector = NULL;
  for (int i = 0; i < st->noptions; i++) {
    t->options.keys[i] = ck_arena_strdup(pl->arena, st->opt_keys[i]);
    t->options.values[i] = ck_arena_strdup(pl->arena, st->opt_values[i]);
    if (strcmp(st->opt_keys[i], "connector") == 0) connector = st->opt_values[i];
  }
  if (refuse_changelog_source(pl, st)) return pl->err->code;
  if (!connector) {
    fail(pl, st->table_pos, CK_EOPTION, "table '%s' has no connector", st->table);
    ck_error_hint(pl->err, "add WITH (connector = '…'); 'clink connectors' lists them");
    return CK_EOPTION;
  }
  t->conn = ck_connector_find(connector);
  if (!t->conn) {
    ck_pos_t pos = st->table_pos;
    for (int i = 0; i < st->noptions; i++)
      if (strcmp(st->opt_keys[i], "connector") == 0) pos = st->opt_pos[i];
    fail(pl, pos, CK_EOPTION, "unknown connector '%s' in table '%s'", connector, st->table);
    const char *names[64];
    int n = ck_connector_count();
    for (int i = 0; i < n && i < 64; i++) names[i] = ck_connector_at(i)->name;
    const char *close = ck_closest(connector, names, (size_t)(n < 64 ? n : 64));
    if (close) ck_error_hint(pl->err, "did you mean '%s'?", close);
    else ck_error_hint(pl->err, "'clink connectors' lists the connectors");
    return CK_EOPTION;
  }
  return declare_time(pl, t);
}

/* Options of a table in its role, checked against the connector's tables. */
static int check_role(planner_t *pl, const table_t *t, bool as_sink, ck_pos_t use_pos) {
  const ck_connector_t *c = t->conn;
  if (as_sink ? !c->sink : !c->source)
    return fail(pl, use_pos, CK_EUNSUPPORTED, "connector '%s' of table '%s' cannot be %s",
                c->name, t->st->table, as_sink ? "written to (it is a source only)"
                                               : "read from (it is a sink only)");
  const ck_opt_def_t *tables[3] = {
      as_sink ? c->sink_options : c->source_options,
      as_sink ? ck_sink_common_options : ck_source_common_options,
      NULL,
  };
  static const ck_opt_def_t connector_opt[] = {
      {"connector", CK_OPT_STRING, NULL, NULL, true, "the connector"},
      {NULL, 0, NULL, NULL, false, NULL}};
  tables[2] = connector_opt;
  char what[200];
  snprintf(what, sizeof what, "table '%s' (connector '%s', as a %s)", t->st->table, c->name,
           as_sink ? "sink" : "source");
  int rc = ck_options_validate(&t->options, tables, 3, what, pl->err);
  if (rc) {
    /* point at the option at fault when we can */
    for (int i = 0; i < t->st->noptions; i++) {
      char quoted[300];
      snprintf(quoted, sizeof quoted, "'%s'", t->st->opt_keys[i]);
      if (strstr(pl->err->message, quoted) && pl->err->line == 0) {
        pl->err->line = t->st->opt_pos[i].line;
        pl->err->column = t->st->opt_pos[i].column;
      }
    }
    place(pl, t->st->table_pos);
    return rc;
  }
  if (!as_sink) {
    const char *etc = ck_options_get(&t->options, "event_time_column");
    if (etc) {
      int col = ck_schema_find(&t->schema, etc);
      if (col < 0)
        return fail(pl, t->st->table_pos, CK_EOPTION,
                    "event_time_column '%s' is not a column of table '%s'", etc, t->st->table);
      ck_type_id_t id = t->schema.types[col].id;
      if (t->ncomputed && col == t->proctime_col) {
        fail(pl, t->st->table_pos, CK_EBIND, "column '%s' of table '%s' is processing time "
             "(PROCTIME()) and cannot be its event time", etc, t->st->table);
        ck_error_hint(pl->err, "event time comes from the records: a TIMESTAMP(3) column, or a "
                      "computed one such as rowtime AS TO_TIMESTAMP(ts_text)");
        return CK_EBIND;
      }
      if (id != CK_T_INT64 && id != CK_T_TIMESTAMP && id != CK_T_INT32)
        return fail(pl, t->st->table_pos, CK_ETYPE,
                    "event_time_column '%s' of table '%s' must be BIGINT (epoch milliseconds), "
                    "TIMESTAMP(3) or TIMESTAMP_LTZ(3)", etc, t->st->table);
    }
  }
  if (as_sink && c->sink_guarantee < CK_GUARANTEE_EXACTLY_ONCE) {
    const char *g = ck_options_get(&t->options, "delivery_guarantee");
    if (g && strcmp(g, "exactly_once") == 0) {
      fail(pl, t->st->table_pos, CK_EUNSUPPORTED,
           "the %s sink of table '%s' cannot give delivery_guarantee = 'exactly_once'", c->name,
           t->st->table);
      ck_error_detail(pl->err, "it has no way to commit its output together with a checkpoint, so a restart may write some rows again");
      ck_error_hint(pl->err, "remove the option to run at least once, and deduplicate on a key downstream");
      return CK_EUNSUPPORTED;
    }
  }
  if (as_sink && t->ncomputed)
    return fail(pl, use_pos, CK_EUNSUPPORTED, "table '%s' has computed columns and cannot be "
                "written to", t->st->table);
  if (c->check && (rc = c->check(t->ncomputed ? &t->phys : &t->schema, &t->options, as_sink,
                                 pl->err))) {
    place(pl, t->st->table_pos);
    return rc;
  }
  return 0;
}

/* ---------------------------------------------------------------- expressions */

/* Structural equality; loops down first operands (a chain may be long: parser.h). */
static bool ast_eq(const ck_ast_t *a, const ck_ast_t *b) {
  for (;;) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind || a->nargs != b->nargs || a->negated != b->negated ||
        a->distinct != b->distinct || a->bval != b->bval || a->ms != b->ms)
      return false;
    if ((a->text == NULL) != (b->text == NULL)) return false;
    if (a->text) {
      bool ci = a->kind == CK_AST_IDENT || a->kind == CK_AST_CALL;
      if (ci ? !ck_streq_i(a->text, b->text) : strcmp(a->text, b->text) != 0) return false;
    }
    if (a->kind == CK_AST_CAST && !ck_type_eq(a->cast_type, b->cast_type)) return false;
    if (!ast_eq(a->operand, b->operand) || !ast_eq(a->else_, b->else_)) return false;
    for (int i = 1; i < a->nargs; i++)
      if (!ast_eq(a->args[i], b->args[i])) return false;
    if (a->nargs == 0) return true;
    a = a->args[0];
    b = b->args[0];
  }
}

/* A stack of AST nodes (a chain of first operands), on the C stack while it is short. */
typedef struct ast_stack {
  const ck_ast_t *local[32], **items;
  size_t n, cap;
} ast_stack_t;

static void ast_stack_push(ast_stack_t *st, const ck_ast_t *a) {
  if (!st->items) st->items = st->local, st->cap = CK_ARRAY_LEN(st->local);
  if (st->n == st->cap) {
    const ck_ast_t **bigger = ck_malloc(2 * st->cap * sizeof *bigger);
    memcpy(bigger, st->items, st->n * sizeof *bigger);
    if (st->items != st->local) ck_free(st->items);
    st->items = bigger;
    st->cap *= 2;
  }
  st->items[st->n++] = a;
}

static void ast_stack_fini(ast_stack_t *st) {
  if (st->items && st->items != st->local) ck_free(st->items);
}

static ck_expr_t *bind(scope_t *sc, const ck_ast_t *a);

static ck_expr_t *bind_literal(scope_t *sc, const ck_ast_t *a) {
  planner_t *pl = sc->pl;
  ck_value_t v;
  memset(&v, 0, sizeof v);
  switch (a->kind) {
    case CK_AST_NULL: v.type = CK_TYPE(CK_T_NULL); v.is_null = true; break;
    case CK_AST_BOOL: v.type = CK_TYPE(CK_T_BOOL); v.v.b = a->bval; break;
    case CK_AST_STRING:
      v.type = CK_TYPE(CK_T_STRING);
      v.v.s.ptr = a->text;
      v.v.s.len = strlen(a->text);
      break;
    case CK_AST_INTERVAL: v.type = CK_TYPE(CK_T_INT64); v.v.i = a->ms; break;
    case CK_AST_INT: {
      /* digits, with a '-' the parser folded in; every conversion must use the whole text */
      errno = 0;
      char *end;
      long long x = strtoll(a->text, &end, 10);
      if (end == a->text || *end) {
        fail(pl, a->pos, CK_ETYPE, "invalid integer literal %s", a->text);
        return NULL;
      }
      if (errno == ERANGE) {
        /* beyond BIGINT: an exact DECIMAL(digits, 0), as far as DECIMAL reaches */
        size_t digits = strlen(a->text) - (a->text[0] == '-');
        if (digits > CK_DECIMAL_MAX_PRECISION) {
          fail(pl, a->pos, CK_ETYPE, "integer literal %s is too large", a->text);
          ck_error_hint(pl->err, "an integer literal has at most %d digits (DECIMAL(%d, 0)); write a DOUBLE as 1e40",
                        CK_DECIMAL_MAX_PRECISION, CK_DECIMAL_MAX_PRECISION);
          return NULL;
        }
        v.type = (ck_type_t){CK_T_DECIMAL, (uint8_t)digits, 0};
        if (!ck_decimal_parse(a->text, strlen(a->text), (int)digits, 0, &v.v.dec)) {
          fail(pl, a->pos, CK_ETYPE, "invalid integer literal %s", a->text);
          return NULL;
        }
      } else {
        v.type = CK_TYPE(x >= INT32_MIN && x <= INT32_MAX ? CK_T_INT32 : CK_T_INT64);
        v.v.i = x;
      }
      break;
    }
    case CK_AST_NUMBER: {
      const char *t = a->text;
      const char *dot = strchr(t, '.');
      int scale = dot ? (int)strlen(dot + 1) : 0;
      int digits = 0;
      for (const char *p = t; *p; p++) digits += *p >= '0' && *p <= '9';
      /* .5 is DECIMAL(1, 1) but needs a precision one above its digits' count: with 38
       * digits after the point that would be DECIMAL(39, 38), past what DECIMAL holds */
      int precision = digits < scale + 1 ? scale + 1 : digits;
      if (strpbrk(t, "eE") || precision > CK_DECIMAL_MAX_PRECISION) {
        /* an exponent, or more digits than DECIMAL holds: a DOUBLE */
        char *end;
        v.type = CK_TYPE(CK_T_FLOAT64);
        v.v.f = strtod(t, &end);
        if (end == t || *end) {
          fail(pl, a->pos, CK_ETYPE, "invalid numeric literal %s", t);
          return NULL;
        }
        if (!isfinite(v.v.f)) {
          fail(pl, a->pos, CK_ETYPE, "numeric literal %s is out of range for DOUBLE", t);
          return NULL;
        }
        break;
      }
      v.type = (ck_type_t){CK_T_DECIMAL, (uint8_t)precision, (uint8_t)scale};
      if (!ck_decimal_parse(t, strlen(t), precision, scale, &v.v.dec)) {
        fail(pl, a->pos, CK_ETYPE, "invalid numeric literal %s", t);
        return NULL;
      }
      break;
    }
    default: break;
  }
  return ck_expr_literal(pl->arena, &v);
}

static ck_expr_t *call(scope_t *sc, ck_pos_t pos, ck_fn_t fn, ck_expr_t **args, int n) {
  ck_expr_t *e = ck_expr_call(sc->pl->arena, fn, args, n, sc->pl->err);
  if (!e) place(sc->pl, pos);
  return e;
}

static ck_expr_t *call2(scope_t *sc, ck_pos_t pos, ck_fn_t fn, ck_expr_t *a, ck_expr_t *b) {
  ck_expr_t *args[2] = {a, b};
  return call(sc, pos, fn, args, b ? 2 : 1);
}

static int bind_args(scope_t *sc, const ck_ast_t *a, int from, ck_expr_t **out) {
  for (int i = from; i < a->nargs; i++)
    if (!(out[i - from] = bind(sc, a->args[i]))) return CK_EBIND;
  return 0;
}

static uint64_t mix(uint64_t h, uint64_t x) { return ck_hash_u64(h ^ (x + 0x9e3779b97f4a7c15ULL)); }

/* A hash that agrees with ast_eq (names of identifiers and calls without regard to case),
 * remembered in the node. Computed bottom-up along a chain of first operands with an explicit
 * stack, recursing only into the other operands. */
static uint64_t ast_hash(const ck_ast_t *top) {
  if (!top) return 1;
  if (top->hash) return top->hash;
  ast_stack_t chain = {0};
  const ck_ast_t *x = top;
  for (; x && !x->hash; x = x->nargs ? x->args[0] : NULL) ast_stack_push(&chain, x);
  while (chain.n) {
    ck_ast_t *a = (ck_ast_t *)chain.items[--chain.n]; /* the cache is the planner's scratch */
    uint64_t h = mix((uint64_t)a->kind, (uint64_t)a->nargs);
    h = mix(h, (uint64_t)a->negated | (uint64_t)a->distinct << 1 | (uint64_t)a->bval << 2);
    h = mix(h, (uint64_t)a->ms);
    if (a->text) {
      bool ci = a->kind == CK_AST_IDENT || a->kind == CK_AST_CALL;
      for (const char *p = a->text; *p; p++)
        h = mix(h, (uint64_t)(unsigned char)(ci ? tolower((unsigned char)*p) : *p));
    }
    if (a->kind == CK_AST_CAST)
      h = mix(h, (uint64_t)a->cast_type.id << 16 | (uint64_t)a->cast_type.precision << 8 |
                     a->cast_type.scale);
    h = mix(h, ast_hash(a->operand));
    h = mix(h, ast_hash(a->else_));
    for (int i = 0; i < a->nargs; i++) h = mix(h, ast_hash(a->args[i])); /* args[0]: done */
    a->hash = h ? h : 1;
  }
  ast_stack_fini(&chain);
  return top->hash;
}

/* The GROUP BY key an expression is (written the same way), or -1. */
static int group_key(const agg_info_t *g, const ck_ast_t *a) {
  if (!g->nslots) { /* few keys: compare each */
    for (int i = 0; i < g->ngroup; i++)
      if (ast_eq(g->group[i], a)) return i;
    return -1;
  }
  uint64_t h = ast_hash(a);
  for (size_t s = h & (g->nslots - 1);; s = (s + 1) & (g->nslots - 1)) {
    int i = g->slots[s] - 1;
    if (i < 0) return -1;
    if (ast_hash(g->group[i]) == h && ast_eq(g->group[i], a)) return i;
  }
}

/* Indexes the keys for group_key when there are many (linear planning of a wide GROUP BY). */
static void index_group_keys(planner_t *pl, agg_info_t *g) {
  if (g->ngroup <= 8) return;
  size_t n = 16;
  while (n < 2 * (size_t)g->ngroup) n *= 2;
  g->slots = ck_arena_zalloc(pl->arena, n * sizeof *g->slots);
  g->nslots = n;
  for (int i = 0; i < g->ngroup; i++) {
    size_t s = ast_hash(g->group[i]) & (n - 1);
    while (g->slots[s]) s = (s + 1) & (n - 1);
    g->slots[s] = i + 1;
  }
}

/* Group scope: the column of the aggregation's output an expression stands for, or -1. */
static int group_column(scope_t *sc, const ck_ast_t *a) {
  const agg_info_t *g = sc->agg;
  int key = group_key(g, a);
  if (key >= 0) return key;
  int base = g->ngroup + (g->window ? 2 : 0);
  if (is_agg_call(a))
    for (int i = 0; i < g->ncalls; i++)
      if (ast_eq(g->calls[i], a)) return base + i;
  if (g->window && a->kind == CK_AST_IDENT) {
    if (ck_streq_i(a->text, "window_start")) return g->ngroup;
    if (ck_streq_i(a->text, "window_end")) return g->ngroup + 1;
  }
  if (g->window && a->kind == CK_AST_CALL) {
    /* Flink's legacy TUMBLE_START(ts, …) / TUMBLE_END(…) and friends */
    const char *us = strrchr(a->text, '_');
    if (us && (ck_streq_i(us, "_START") || ck_streq_i(us, "_END"))) {
      size_t n = (size_t)(us - a->text);
      for (size_t i = 0; i < CK_ARRAY_LEN(window_names); i++)
        if (strlen(window_names[i]) == n && strncasecmp(a->text, window_names[i], n) == 0)
          return g->ngroup + (ck_streq_i(us, "_END") ? 1 : 0);
    }
  }
  return -1;
}

static ck_expr_t *bind_ident(scope_t *sc, const ck_ast_t *a) {
  planner_t *pl = sc->pl;
  const table_t *t = sc->tbl;
  if (a->qualifier && !ck_streq_i(a->qualifier, t->st->table) &&
      !(sc->alias && ck_streq_i(a->qualifier, sc->alias))) {
    fail(pl, a->pos, CK_EBIND, "unknown table or alias '%s' in '%s.%s'", a->qualifier,
         a->qualifier, a->text);
    ck_error_hint(pl->err, "the query reads '%s'%s%s", t->st->table, sc->alias ? " as " : "",
                  sc->alias ? sc->alias : "");
    return NULL;
  }
  int col = names_get(&t->cols, a->text);
  if (sc->agg) {
    if (col >= 0) {
      fail(pl, a->pos, CK_EBIND,
           "column '%s' must appear in GROUP BY or be used in an aggregate function", a->text);
      ck_error_hint(pl->err, "add it to GROUP BY, or aggregate it, e.g. MAX(%s)", a->text);
      return NULL;
    }
  } else if (col >= 0) {
    return ck_expr_column(pl->arena, col, t->schema.types[col]);
  }
  if (ck_streq_i(a->text, "window_start") || ck_streq_i(a->text, "window_end")) {
    fail(pl, a->pos, CK_EBIND, "%s exists only in a query that groups by a window", a->text);
    ck_error_hint(pl->err, "add GROUP BY TUMBLE(<time column>, INTERVAL '…' SECOND), …");
    return NULL;
  }
  fail(pl, a->pos, CK_EBIND, "unknown column '%s' in table '%s'", a->text, t->st->table);
  const char *names[260];
  size_t n = 0;
  for (int i = 0; i < t->schema.ncols && n < 256; i++) names[n++] = t->schema.names[i];
  if (sc->windowed) names[n++] = "window_start", names[n++] = "window_end";
  const char *close = ck_closest(a->text, names, n);
  if (close) ck_error_hint(pl->err, "did you mean '%s'?", close);
  return NULL;
}

static bool is_proctime_call(const ck_ast_t *a);

/* CURRENT_WATERMARK(time column), Flink's: the watermark the row arrived under, NULL before
 * the first one, of the column's type. Over the rows of a table only (WHERE, a SELECT without
 * GROUP BY, GROUP BY keys and aggregate arguments), where each row has arrived under one. */
static ck_expr_t *bind_current_watermark(scope_t *sc, const ck_ast_t *a) {
  planner_t *pl = sc->pl;
  const table_t *t = sc->tbl;
  const char *etc = ck_options_get(&t->options, "event_time_column");
  if (a->nargs != 1 || a->args[0]->kind != CK_AST_IDENT) {
    fail(pl, a->pos, CK_EBIND, "CURRENT_WATERMARK takes one argument, the time column");
    if (etc) ck_error_hint(pl->err, "CURRENT_WATERMARK(%s)", etc);
    return NULL;
  }
  const ck_ast_t *c = a->args[0];
  if (sc->agg || !strcmp(sc->clause, "a computed column")) {
    fail(pl, a->pos, CK_EUNSUPPORTED, "CURRENT_WATERMARK is not allowed in %s",
         sc->agg ? sc->clause : "a computed column");
    ck_error_detail(pl->err, "it is the watermark a row of the table arrived under, so it is "
                    "read where the table's rows are: WHERE, a SELECT without GROUP BY, the "
                    "GROUP BY keys and aggregate arguments");
    return NULL;
  }
  if (!etc || !ck_streq_i(etc, c->text)) {
    if (names_get(&t->cols, c->text) < 0) return bind_ident(sc, c);
    fail(pl, c->pos, CK_EBIND, "CURRENT_WATERMARK(%s): '%s' is not the event time of table "
         "'%s'%s", c->text, c->text, t->st->table, etc ? "" : ", which has none");
    if (etc) ck_error_hint(pl->err, "CURRENT_WATERMARK(%s)", etc);
    else ck_error_hint(pl->err, "declare WATERMARK FOR %s AS %s - INTERVAL '…' SECOND in the "
                       "table", c->text, c->text);
    return NULL;
  }
  int col = names_get(&t->cols, etc);
  ck_type_t type = t->schema.types[col];
  if (type.id != CK_T_TIMESTAMP) type = ck_type_timestamp(3, CK_TS_EPOCH);
  else type.scale &= (uint8_t)~CK_TS_EPOCH;
  return ck_expr_watermark(pl->arena, type);
}
/* Functions Flink has and clink does not (yet): refused by name rather than as unknown. */
static const struct {
  const char *name, *what, *hint;
} not_yet[] = {
    {"COLLECT", "aggregate function", "clink has no ARRAY or MULTISET type yet: LISTAGG(x, "
                                      "',') joins the values into one string"},
    {"ARRAY_AGG", "aggregate function", "clink has no ARRAY type yet: LISTAGG(x, ',') joins "
                                        "the values into one string"},
    {"GROUPING", "function", "GROUPING() is allowed with GROUPING SETS, ROLLUP or CUBE in "
                             "GROUP BY; in a plain GROUP BY it would always be 0"},
    {"GROUPING_ID", "function", "GROUPING_ID() is allowed with GROUPING SETS, ROLLUP or CUBE "
                                "in GROUP BY; in a plain GROUP BY it would always be 0"},
};

/* ---------------------------------------------------------------- user-defined functions */

static const ck_udf_t *find_udf(const planner_t *pl, const char *name) {
  for (int i = 0; i < pl->nfns; i++)
    if (ck_streq_i(pl->fns[i].st->table, name)) return pl->fns[i].udf;
  return NULL;
}

/* The planner of the script being planned on this thread: is_agg_call, which the binder
 * calls everywhere without a planner, asks it for the script's aggregate functions. */
static _Thread_local const planner_t *tl_planner;

static bool is_udf_agg_call(const ck_ast_t *a) {
  const ck_udf_t *udf = tl_planner ? find_udf(tl_planner, a->text) : NULL;
  return udf && udf->aggregate;
}

/* A call of a function the script created: true when a->text names one (then *out is the
 * bound call, or NULL with the error set). */
static bool bind_udf_call(scope_t *sc, const ck_ast_t *a, ck_expr_t **out) {
  planner_t *pl = sc->pl;
  const ck_udf_t *udf = find_udf(pl, a->text);
  *out = NULL;
  if (!udf) return false;
  if (a->distinct) {
    fail(pl, a->pos, CK_ESYNTAX, "DISTINCT is only allowed in aggregate functions");
    return true;
  }
  if (a->nargs > CLINK_UDF_MAX_ARGS) {
    fail(pl, a->pos, CK_EBIND, "too many arguments to %s", a->text);
    return true;
  }
  if (a->nargs && a->args[0]->kind == CK_AST_STAR) {
    fail(pl, a->pos, CK_EBIND, "%s(*) is not a function call", a->text);
    return true;
  }
  ck_expr_t *args[CLINK_UDF_MAX_ARGS];
  if (bind_args(sc, a, 0, args)) return true;
  *out = ck_expr_udf(pl->arena, udf, args, a->nargs, pl->err);
  if (!*out) place(pl, a->pos);
  return true;
}

static bool is_builtin_name(const char *name);

/* CREATE FUNCTION name AS 'symbol' USING 'path' LANGUAGE C: loads the library now, so that a
 * missing file or symbol or a descriptor that does not match is an error of the script. */
static int add_function(planner_t *pl, const ck_stmt_t *st) {
  for (int i = 0; i < pl->nfns; i++)
    if (ck_streq_i(pl->fns[i].st->table, st->table)) {
      if (st->if_not_exists) return 0;
      fail(pl, st->table_pos, CK_EEXISTS, "function '%s' is already created at line %d",
           st->table, pl->fns[i].st->table_pos.line);
      ck_error_hint(pl->err, "write CREATE FUNCTION IF NOT EXISTS, or choose another name");
      return CK_EEXISTS;
    }
  if (is_builtin_name(st->table)) {
    fail(pl, st->table_pos, CK_EEXISTS, "could not create function '%s': a built-in function "
         "has that name", st->table);
    ck_error_hint(pl->err, "choose another name");
    return CK_EEXISTS;
  }
  if (pl->nfns == (int)CK_ARRAY_LEN(pl->fns))
    return fail(pl, st->table_pos, CK_EUNSUPPORTED, "a script may create at most %d functions",
                (int)CK_ARRAY_LEN(pl->fns));
  const ck_udf_t *udf = NULL;
  int rc = ck_udf_load(st->table, st->fn_symbol, st->fn_path, &udf, pl->err);
  if (rc) {
    /* a library that does not open: its path; anything about the descriptor: the symbol */
    place(pl, rc == CK_ENOTFOUND && !strstr(pl->err->message, "has no symbol") ? st->fn_path_pos
                                                                             : st->fn_symbol_pos);
    return rc;
  }
  pl->fns[pl->nfns].st = st;
  pl->fns[pl->nfns].udf = udf;
  pl->nfns++;
  return 0;
}

static ck_expr_t *bind_call(scope_t *sc, const ck_ast_t *a) {
  planner_t *pl = sc->pl;
  if (is_agg_call(a)) {
    fail(pl, a->pos, CK_EBIND, "aggregate function %s is not allowed in %s", a->text,
         sc->clause);
    return NULL;
  }
  if (is_window_call(a)) {
    fail(pl, a->pos, CK_EBIND, "window function %s is only allowed in GROUP BY", a->text);
    ck_error_hint(pl->err, "GROUP BY %s(…), … and select window_start / window_end", a->text);
    return NULL;
  }
  if (ck_streq_i(a->text, "CURRENT_WATERMARK")) return bind_current_watermark(sc, a);
  if (is_proctime_call(a)) {
    fail(pl, a->pos, CK_EUNSUPPORTED, "PROCTIME() is only allowed as a computed column of a "
         "table");
    ck_error_detail(pl->err, "processing time exists only where a table declares it, so that "
                    "every other result is a function of the input and a replay gives it again");
    ck_error_hint(pl->err, "declare it in CREATE TABLE: proc AS PROCTIME(), and select proc");
    return NULL;
  }
  if (a->filtered) {
    fail(pl, a->pos, CK_EBIND, "FILTER (WHERE …) applies to aggregate functions, not to %s",
         a->text);
    return NULL;
  }
  ck_expr_t *user = NULL;
  if (bind_udf_call(sc, a, &user)) return user;
  int fn = ck_fn_lookup(a->text); /* the one function table: runtime/expr.h */
  if (fn >= 0) {
    if (a->distinct) {
      fail(pl, a->pos, CK_ESYNTAX, "DISTINCT is only allowed in aggregate functions");
      return NULL;
    }
    ck_expr_t *args[16];
    if (a->nargs > 16) {
      fail(pl, a->pos, CK_EBIND, "too many arguments to %s", a->text);
      return NULL;
    }
    if (a->nargs && a->args[0]->kind == CK_AST_STAR) {
      fail(pl, a->pos, CK_EBIND, "%s(*) is not a function call", a->text);
      return NULL;
    }
    if (bind_args(sc, a, 0, args)) return NULL;
    return call(sc, a->pos, (ck_fn_t)fn, args, a->nargs);
  }
  for (size_t i = 0; i < CK_ARRAY_LEN(not_yet); i++) {
    if (!ck_streq_i(a->text, not_yet[i].name)) continue;
    fail(pl, a->pos, CK_EUNSUPPORTED, "%s %s is not supported", not_yet[i].what,
         not_yet[i].name);
    if (not_yet[i].hint) ck_error_hint(pl->err, "%s", not_yet[i].hint);
    return NULL;
  }
  fail(pl, a->pos, CK_EBIND, "unknown function '%s'", a->text);
  const char *names[2 * CK_FN__COUNT + 8];
  size_t n = 0;
  for (int f = 0; f < CK_FN__COUNT; f++) {
    const ck_fn_info_t *info = ck_fn_info((ck_fn_t)f);
    if (info->call) names[n++] = info->call;
    if (info->alias) names[n++] = info->alias;
  }
  for (size_t i = 0; i < CK_ARRAY_LEN(agg_names); i++) names[n++] = agg_names[i];
  const char *close = ck_closest(a->text, names, n);
  if (close) ck_error_hint(pl->err, "did you mean %s?", close);
  return NULL;
}

static const struct {
  const char *op;
  ck_fn_t fn;
} binary_ops[] = {
    {"+", CK_FN_ADD}, {"-", CK_FN_SUB}, {"*", CK_FN_MUL}, {"/", CK_FN_DIV},
    {"%", CK_FN_MOD}, {"=", CK_FN_EQ},  {"<>", CK_FN_NE}, {"<", CK_FN_LT},
    {"<=", CK_FN_LE}, {">", CK_FN_GT},  {">=", CK_FN_GE}, {"AND", CK_FN_AND},
    {"OR", CK_FN_OR}, {"||", CK_FN_CONCAT},
};

/* A name the engine gives a meaning: a function of CK_FN_TABLE, an aggregate, a window, one
 * refused by name, or one of the calls the binder knows itself. */
static bool is_builtin_name(const char *name) {
  if (ck_fn_lookup(name) >= 0) return true;
  for (size_t i = 0; i < CK_ARRAY_LEN(agg_names); i++)
    if (ck_streq_i(name, agg_names[i])) return true;
  for (size_t i = 0; i < CK_ARRAY_LEN(window_names); i++)
    if (ck_streq_i(name, window_names[i])) return true;
  for (size_t i = 0; i < CK_ARRAY_LEN(not_yet); i++)
    if (ck_streq_i(name, not_yet[i].name)) return true;
  return ck_streq_i(name, "CURRENT_WATERMARK") || ck_streq_i(name, "PROCTIME");
}

static ck_expr_t *too_large(planner_t *pl, ck_pos_t pos) {
  fail(pl, pos, CK_EUNSUPPORTED, "expression has more than %d nodes", CK_SQL_MAX_EXPR_NODES);
  ck_error_hint(pl->err, "split it over several queries or columns; BETWEEN and a simple CASE "
                         "repeat their first operand for each test, so nesting them multiplies "
                         "its size");
  return NULL;
}

/* datetime ± INTERVAL (and INTERVAL + datetime), Flink's way: a TIMESTAMP moves by the
 * interval; a DATE by whole days stays a DATE, by a part of a day is the DATE of the moved
 * midnight (the time of day is dropped, as Calcite types DATE + INTERVAL); a TIME wraps
 * around midnight. A datetime minus a datetime is refused for TIMESTAMPDIFF. Anything else
 * is the plain operator. */
static ck_expr_t *datetime_arith(scope_t *sc, const ck_ast_t *b, ck_fn_t fn, ck_expr_t *l,
                                 ck_expr_t *r) {
  planner_t *pl = sc->pl;
  bool li = b->args[0]->kind == CK_AST_INTERVAL, ri = b->args[1]->kind == CK_AST_INTERVAL;
  bool lt = l->type.id == CK_T_TIMESTAMP, rt = r->type.id == CK_T_TIMESTAMP;
  if ((fn != CK_FN_ADD && fn != CK_FN_SUB) || !(lt || rt)) return call2(sc, b->pos, fn, l, r);
  if (lt && rt && fn == CK_FN_SUB) {
    char ta[64], tb[64];
    fail(pl, b->pos, CK_EUNSUPPORTED, "subtracting %s from %s is not supported",
         ck_type_name(r->type, tb, sizeof tb), ck_type_name(l->type, ta, sizeof ta));
    ck_error_hint(pl->err, "TIMESTAMPDIFF(SECOND, a, b) counts the whole units from a to b");
    return NULL;
  }
  ck_expr_t *x;
  int64_t ms;
  if (lt && ri) x = l, ms = fn == CK_FN_SUB ? -b->args[1]->ms : b->args[1]->ms;
  else if (rt && li && fn == CK_FN_ADD) x = r, ms = b->args[0]->ms;
  else return call2(sc, b->pos, fn, l, r);
  int kind = ck_type_ts_kind(x->type);
  ck_value_t unit = {.type = CK_TYPE(CK_T_STRING)}, n = {.type = CK_TYPE(CK_T_INT64)};
  bool days = kind == CK_TS_DATE && ms % CK_MS_PER_DAY == 0;
  unit.v.s.ptr = days ? "DAY" : "MILLISECOND";
  unit.v.s.len = strlen(unit.v.s.ptr);
  n.v.i = days ? ms / CK_MS_PER_DAY : ms;
  ck_expr_t *args[3] = {ck_expr_literal(pl->arena, &unit), ck_expr_literal(pl->arena, &n),
                        days || kind == 0 ? x : ck_expr_cast(pl->arena, x, ck_type_timestamp(3, 0), pl->err)};
  if (!args[2]) {
    place(pl, b->pos);
    return NULL;
  }
  ck_expr_t *e = call(sc, b->pos, CK_FN_TIMESTAMPADD, args, 3);
  if (!e || days || kind == 0) return e;
  e = ck_expr_cast(pl->arena, e, x->type, pl->err); /* the DATE of it, or its time of day */
  if (!e) place(pl, b->pos);
  return e;
}

/* A chain of binary operators (a + b - c …, built left-deep by the parser, any length) bound
 * with a loop down its first operands: the recursion goes only into the right operands, whose
 * nesting the parser bounds. Left to right, as a recursive walk would. */
static ck_expr_t *bind_chain(scope_t *sc, const ck_ast_t *a) {
  planner_t *pl = sc->pl;
  ast_stack_t chain = {0};
  const ck_ast_t *x = a;
  do {
    ast_stack_push(&chain, x);
    x = x->args[0];
  } while (x->kind == CK_AST_BINARY && !(sc->agg && group_column(sc, x) >= 0));
  ck_expr_t *acc = bind(sc, x);
  while (acc && chain.n) {
    const ck_ast_t *b = chain.items[--chain.n];
    ck_expr_t *y = bind(sc, b->args[1]);
    if (!y) {
      acc = NULL;
      break;
    }
    size_t i = 0;
    while (i < CK_ARRAY_LEN(binary_ops) && strcmp(binary_ops[i].op, b->text) != 0) i++;
    if (i == CK_ARRAY_LEN(binary_ops)) {
      fail(pl, b->pos, CK_EINTERNAL, "operator %s has no implementation", b->text);
      acc = NULL;
      break;
    }
    acc = datetime_arith(sc, b, binary_ops[i].fn, acc, y);
    if (acc && acc->size > CK_SQL_MAX_EXPR_NODES) acc = too_large(pl, b->pos);
  }
  ast_stack_fini(&chain);
  return acc;
}

static ck_expr_t *bind_node(scope_t *sc, const ck_ast_t *a);

/* Every bound node passes here: a tree whose walk would visit more than CK_SQL_MAX_EXPR_NODES
 * nodes (BETWEEN and a simple CASE repeat their first operand) is refused where it grows past
 * the limit. */
static ck_expr_t *bind(scope_t *sc, const ck_ast_t *a) {
  ck_expr_t *e = bind_node(sc, a);
  return e && e->size > CK_SQL_MAX_EXPR_NODES ? too_large(sc->pl, a->pos) : e;
}

static ck_expr_t *bind_node(scope_t *sc, const ck_ast_t *a) {
  planner_t *pl = sc->pl;
  if (pl->err->code) return NULL;
  if (sc->agg) {
    int col = group_column(sc, a);
    if (col >= 0) {
      const ck_node_t *agg = &pl->nodes[pl->nnodes - 1];
      return ck_expr_column(pl->arena, col, agg->out_schema.types[col]);
    }
  }
  switch (a->kind) {
    case CK_AST_IDENT: return bind_ident(sc, a);
    case CK_AST_INT:
    case CK_AST_NUMBER:
    case CK_AST_STRING:
    case CK_AST_BOOL:
    case CK_AST_NULL:
    case CK_AST_INTERVAL: return bind_literal(sc, a);
    case CK_AST_STAR:
      fail(pl, a->pos, CK_ESYNTAX, "'*' is only allowed as SELECT * or COUNT(*)");
      return NULL;
    case CK_AST_CALL: return bind_call(sc, a);
    case CK_AST_UNARY: {
      ck_expr_t *x = bind(sc, a->args[0]);
      if (!x) return NULL;
      return call2(sc, a->pos, strcmp(a->text, "NOT") == 0 ? CK_FN_NOT : CK_FN_NEG, x, NULL);
    }
    case CK_AST_BINARY: return bind_chain(sc, a);
    case CK_AST_IS: {
      ck_expr_t *x = bind(sc, a->args[0]);
      if (!x) return NULL;
      if (strcmp(a->text, "NULL") == 0)
        return call2(sc, a->pos, a->negated ? CK_FN_IS_NOT_NULL : CK_FN_IS_NULL, x, NULL);
      ck_expr_t *e = call2(sc, a->pos, strcmp(a->text, "TRUE") == 0 ? CK_FN_IS_TRUE : CK_FN_IS_FALSE,
                           x, NULL);
      return e && a->negated ? call2(sc, a->pos, CK_FN_NOT, e, NULL) : e;
    }
    case CK_AST_LIKE: {
      ck_expr_t *x = bind(sc, a->args[0]), *y = x ? bind(sc, a->args[1]) : NULL;
      if (!y) return NULL;
      ck_expr_t *e;
      ck_fn_t fn = strcmp(a->text, "SIMILAR TO") == 0 ? CK_FN_SIMILAR : CK_FN_LIKE;
      if (a->nargs == 3) { /* … ESCAPE e */
        ck_expr_t *args[3] = {x, y, bind(sc, a->args[2])};
        if (!args[2]) return NULL;
        e = call(sc, a->pos, fn, args, 3);
      } else {
        e = call2(sc, a->pos, fn, x, y);
      }
      if (e) e->negated = a->negated;
      return e;
    }
    case CK_AST_BETWEEN: {
      ck_expr_t *x = bind(sc, a->args[0]), *lo = x ? bind(sc, a->args[1]) : NULL,
                *hi = lo ? bind(sc, a->args[2]) : NULL;
      if (!hi) return NULL;
      ck_expr_t *ge = call2(sc, a->pos, CK_FN_GE, x, lo);
      ck_expr_t *le = ge ? call2(sc, a->pos, CK_FN_LE, x, hi) : NULL;
      ck_expr_t *e = le ? call2(sc, a->pos, CK_FN_AND, ge, le) : NULL;
      return e && a->negated ? call2(sc, a->pos, CK_FN_NOT, e, NULL) : e;
    }
    case CK_AST_IN: {
      ck_expr_t **args = ck_arena_alloc(pl->arena, sizeof(ck_expr_t *) * (size_t)a->nargs);
      if (bind_args(sc, a, 0, args)) return NULL;
      ck_expr_t *e = ck_expr_in(pl->arena, args[0], args + 1, a->nargs - 1, a->negated, pl->err);
      if (!e) place(pl, a->pos);
      return e;
    }
    case CK_AST_CAST: {
      ck_expr_t *x = bind(sc, a->args[0]);
      if (!x) return NULL;
      ck_expr_t *e = ck_expr_cast(pl->arena, x, a->cast_type, pl->err);
      if (!e) place(pl, a->pos);
      return e;
    }
    case CK_AST_CASE: {
      int n = a->nargs / 2;
      ck_expr_t **whens = ck_arena_alloc(pl->arena, sizeof(ck_expr_t *) * (size_t)n);
      ck_expr_t **thens = ck_arena_alloc(pl->arena, sizeof(ck_expr_t *) * (size_t)n);
      ck_expr_t *operand = a->operand ? bind(sc, a->operand) : NULL;
      if (a->operand && !operand) return NULL;
      for (int i = 0; i < n; i++) {
        ck_expr_t *w = bind(sc, a->args[2 * i]);
        if (!w) return NULL;
        if (operand && !(w = call2(sc, a->args[2 * i]->pos, CK_FN_EQ, operand, w))) return NULL;
        whens[i] = w;
        if (!(thens[i] = bind(sc, a->args[2 * i + 1]))) return NULL;
      }
      ck_expr_t *else_ = a->else_ ? bind(sc, a->else_) : NULL;
      if (a->else_ && !else_) return NULL;
      ck_expr_t *e = ck_expr_case(pl->arena, whens, thens, n, else_, pl->err);
      if (!e) place(pl, a->pos);
      return e;
    }
  }
  return NULL;
}

static ck_expr_t *bind_predicate(scope_t *sc, const ck_ast_t *a) {
  ck_expr_t *e = bind(sc, a);
  if (!e) return NULL;
  if (e->type.id != CK_T_BOOL && e->type.id != CK_T_NULL) {
    char tn[48];
    fail(sc->pl, a->pos, CK_ETYPE, "%s must be a BOOLEAN condition, not %s", sc->clause,
         ck_type_name(e->type, tn, sizeof tn));
    return NULL;
  }
  return e;
}

/* ---------------------------------------------------------------- time in DDL */

static bool is_proctime_call(const ck_ast_t *a) {
  return a && a->kind == CK_AST_CALL && ck_streq_i(a->text, "PROCTIME");
}

/* Adds key = value to a table's options (WATERMARK FOR is the DDL spelling of two of them). */
static void add_option(planner_t *pl, table_t *t, const char *key, const char *value) {
  int n = t->options.n;
  const char **keys = ck_arena_zalloc(pl->arena, sizeof(char *) * (size_t)(n + 2));
  const char **values = ck_arena_zalloc(pl->arena, sizeof(char *) * (size_t)(n + 2));
  memcpy(keys, t->options.keys, sizeof(char *) * (size_t)n);
  memcpy(values, t->options.values, sizeof(char *) * (size_t)n);
  keys[n] = key;
  values[n] = value;
  t->options.keys = (void *)keys;
  t->options.values = (void *)values;
  t->options.n = n + 1;
}

/* Computed columns and WATERMARK FOR of one CREATE TABLE. A computed column is an expression
 * over the physical columns (those the connector reads), typed by it; PROCTIME() is the one
 * that reads the clock. WATERMARK FOR c AS c [- INTERVAL …] is event_time_column = c and
 * watermark_lag_ms = the interval: the one watermark rule the sources have (the largest event
 * time seen per partition less a fixed lag), so any other strategy is refused by name. */
static int declare_time(planner_t *pl, table_t *t) {
  const ck_stmt_t *st = t->st;
  int ncols = st->ncolumns, nphys = 0;
  for (int i = 0; i < ncols; i++) nphys += st->columns[i].computed == NULL;
  t->proctime_col = -1;
  if (nphys < ncols) {
    t->ncomputed = ncols - nphys;
    t->computed = ck_arena_zalloc(pl->arena, sizeof(ck_expr_t *) * (size_t)ncols);
    t->phys = ck_schema_make(pl->arena, nphys);
    t->phys_col = ck_arena_zalloc(pl->arena, sizeof(int) * (size_t)(nphys + 1));
    table_t view; /* the physical columns alone, to bind the expressions against */
    memset(&view, 0, sizeof view);
    view.st = st;
    view.schema = t->phys;
    ck_hmap_init(&view.cols);
    for (int i = 0, k = 0; i < ncols; i++) {
      if (st->columns[i].computed) continue;
      t->phys.names[k] = t->schema.names[i];
      t->phys.types[k] = t->schema.types[i];
      t->phys_col[k] = i;
      names_put(&view.cols, t->phys.names[k], k);
      k++;
    }
    int rc = 0;
    scope_t sc = {.pl = pl, .tbl = &view, .clause = "a computed column"};
    for (int i = 0; i < ncols && !rc; i++) {
      const ck_ast_t *a = st->columns[i].computed;
      if (!a) continue;
      if (is_proctime_call(a)) {
        if (a->nargs)
          rc = fail(pl, a->pos, CK_EBIND, "PROCTIME takes no arguments");
        else if (t->proctime_col >= 0)
          rc = fail(pl, a->pos, CK_EBIND, "table '%s' has two PROCTIME() columns; it may have one",
                    st->table);
        t->proctime_col = i;
        t->schema.types[i] = ck_type_timestamp(3, CK_TS_LTZ);
        continue;
      }
      ck_expr_t *e = bind(&sc, a);
      if (!e) {
        rc = pl->err->code;
        if (a->kind == CK_AST_IDENT && names_get(&t->cols, a->text) >= 0)
          ck_error_hint(pl->err, "a computed column reads the physical columns, not another "
                        "computed one");
        break;
      }
      if (e->type.id == CK_T_NULL) {
        rc = fail(pl, a->pos, CK_ETYPE, "computed column '%s' is a bare NULL; CAST it to a type",
                  st->columns[i].name);
        break;
      }
      t->computed[i] = e;
      t->schema.types[i] = e->type;
    }
    ck_hmap_fini(&view.cols);
    if (rc) return rc;
  }
  if (!st->wm_column) return 0;
  int col = names_get(&t->cols, st->wm_column);
  if (col < 0) {
    fail(pl, st->wm_column_pos, CK_EBIND, "WATERMARK FOR '%s': table '%s' has no such column",
         st->wm_column, st->table);
    const char *close = ck_closest(st->wm_column, (const char *const *)t->schema.names,
                                   (size_t)t->schema.ncols);
    if (close) ck_error_hint(pl->err, "did you mean '%s'?", close);
    return CK_EBIND;
  }
  char tn[48];
  if (col == t->proctime_col) {
    fail(pl, st->wm_column_pos, CK_EBIND, "WATERMARK FOR '%s': a PROCTIME() column has no "
         "watermark", st->wm_column);
    ck_error_hint(pl->err, "declare the watermark on a column holding the records' event time");
    return CK_EBIND;
  }
  if (t->schema.types[col].id != CK_T_TIMESTAMP) {
    fail(pl, st->wm_column_pos, CK_ETYPE, "WATERMARK FOR '%s': the column is %s; it must be "
         "TIMESTAMP(3) or TIMESTAMP_LTZ(3)", st->wm_column,
         ck_type_name(t->schema.types[col], tn, sizeof tn));
    ck_error_hint(pl->err, "declare it TIMESTAMP(3) (epoch milliseconds read into it too), or "
                  "keep BIGINT with WITH (event_time_column = '%s', watermark_lag_ms = '…')",
                  st->wm_column);
    return CK_EBIND;
  }
  /* the strategy: c, or c - INTERVAL (the lag) */
  const ck_ast_t *w = st->wm_expr;
  int64_t lag = -1;
  if (w->kind == CK_AST_IDENT && !w->qualifier && ck_streq_i(w->text, st->wm_column)) lag = 0;
  else if (w->kind == CK_AST_BINARY && !strcmp(w->text, "-") && w->args[0]->kind == CK_AST_IDENT &&
           !w->args[0]->qualifier && ck_streq_i(w->args[0]->text, st->wm_column) &&
           w->args[1]->kind == CK_AST_INTERVAL && w->args[1]->ms >= 0)
    lag = w->args[1]->ms;
  if (lag < 0) {
    fail(pl, w->pos, CK_EUNSUPPORTED, "this watermark strategy is not supported");
    ck_error_detail(pl->err, "a source's watermark is the largest event time it has seen less a "
                    "fixed delay, per partition");
    ck_error_hint(pl->err, "write WATERMARK FOR %s AS %s - INTERVAL 'n' SECOND (or AS %s for "
                  "no delay)", st->wm_column, st->wm_column, st->wm_column);
    return CK_EUNSUPPORTED;
  }
  const char *given = ck_options_get(&t->options, "event_time_column") ? "event_time_column"
                      : ck_options_get(&t->options, "watermark_lag_ms") ? "watermark_lag_ms"
                                                                        : NULL;
  if (given) {
    fail(pl, st->wm_pos, CK_EOPTION, "table '%s' declares its event time twice: WATERMARK FOR "
         "and the %s option", st->table, given);
    ck_error_hint(pl->err, "keep one: WATERMARK FOR is the same as event_time_column and "
                  "watermark_lag_ms");
    return CK_EOPTION;
  }
  add_option(pl, t, "event_time_column", t->schema.names[col]);
  add_option(pl, t, "watermark_lag_ms", ck_arena_printf(pl->arena, "%lld", (long long)lag));
  return 0;
}

/* ---------------------------------------------------------------- nodes */

static ck_node_t *add_node(planner_t *pl, ck_node_kind_t kind, const char *name, int input) {
  if (pl->nnodes == pl->cap) {
    int cap = pl->cap ? pl->cap * 2 : 16;
    ck_node_t *nodes = ck_arena_zalloc(pl->arena, sizeof *nodes * (size_t)cap);
    if (pl->nnodes) memcpy(nodes, pl->nodes, sizeof *nodes * (size_t)pl->nnodes);
    pl->nodes = nodes;
    pl->cap = cap;
  }
  ck_node_t *n = &pl->nodes[pl->nnodes];
  memset(n, 0, sizeof *n);
  n->id = pl->nnodes++;
  n->kind = kind;
  n->name = name;
  n->input = input;
  n->edge = CK_EDGE_FORWARD;
  n->parallelism = input >= 0 ? pl->nodes[input].parallelism : pl->opts->parallelism;
  n->changelog = input >= 0 && pl->nodes[input].changelog;
  return n;
}

static const char *expr_name(planner_t *pl, const ck_ast_select_item_t *it, int i) {
  if (it->alias) return it->alias;
  const ck_ast_t *a = it->expr;
  if (a->kind == CK_AST_IDENT) return a->text;
  return ck_arena_printf(pl->arena, "EXPR$%d", i);
}

static int source_node(planner_t *pl, const table_t *t, ck_pos_t pos) {
  if (check_role(pl, t, false, pos)) return -1;
  ck_node_t *n = add_node(pl, CK_NODE_SOURCE, ck_arena_printf(pl->arena, "%s_source", t->conn->name), -1);
  n->out_schema = t->schema;
  ck_conn_spec_t *c = &n->u.conn;
  c->connector = t->conn;
  c->table = t->st->table;
  c->schema = t->schema;
  c->options = t->options;
  c->ncomputed = t->ncomputed;
  c->computed = t->computed;
  c->proctime_col = t->proctime_col;
  c->phys = t->phys;
  c->phys_col = t->phys_col;
  const char *etc = ck_options_get(&t->options, "event_time_column");
  c->event_time_col = etc ? ck_schema_find(&t->schema, etc) : -1;
  c->watermark_lag_ms = ck_opt_int(&t->options, ck_source_common_options, "watermark_lag_ms");
  c->idle_timeout_ms = ck_opt_int(&t->options, ck_source_common_options, "idle_timeout_ms");
  if (c->watermark_lag_ms < 0 || c->idle_timeout_ms < 0) {
    fail(pl, t->st->table_pos, CK_EOPTION,
         "watermark_lag_ms and idle_timeout_ms of table '%s' must not be negative", t->st->table);
    return -1;
  }
  int64_t poll_rows = ck_opt_int(&t->options, ck_source_common_options, "poll_rows");
  if (poll_rows < 1 || poll_rows > CK_BATCH_ROWS) {
    fail(pl, t->st->table_pos, CK_EOPTION, "poll_rows of table '%s' is %lld; it must be 1 to %d",
         t->st->table, (long long)poll_rows, CK_BATCH_ROWS);
    return -1;
  }
  return n->id;
}

/* Collects the aggregate calls of an expression tree into g (deduplicated). */
static int collect_aggs(planner_t *pl, agg_info_t *g, const ck_ast_t *a, bool inside_agg) {
  if (!a) return 0;
  if (is_agg_call(a)) {
    if (inside_agg)
      return fail(pl, a->pos, CK_EBIND, "aggregate function calls cannot be nested");
    for (int i = 0; i < a->nargs; i++)
      if (collect_aggs(pl, g, a->args[i], true)) return CK_EBIND;
    for (int i = 0; i < g->ncalls; i++)
      if (ast_eq(g->calls[i], a)) return 0;
    if (g->ncalls == (int)CK_ARRAY_LEN(g->calls))
      return fail(pl, a->pos, CK_EUNSUPPORTED, "a query may have at most 64 aggregate calls");
    g->calls[g->ncalls++] = a;
    return 0;
  }
  if (a->kind == CK_AST_BINARY) {
    /* a chain of binary operators: down its first operands with a loop, then the right
     * operands from the left, the order a recursive walk visits them in */
    ast_stack_t chain = {0};
    const ck_ast_t *x = a;
    for (; x->kind == CK_AST_BINARY; x = x->args[0]) ast_stack_push(&chain, x);
    int rc = collect_aggs(pl, g, x, inside_agg);
    while (!rc && chain.n) rc = collect_aggs(pl, g, chain.items[--chain.n]->args[1], inside_agg);
    ast_stack_fini(&chain);
    return rc ? CK_EBIND : 0;
  }
  if (collect_aggs(pl, g, a->operand, inside_agg) || collect_aggs(pl, g, a->else_, inside_agg))
    return CK_EBIND;
  for (int i = 0; i < a->nargs; i++)
    if (collect_aggs(pl, g, a->args[i], inside_agg)) return CK_EBIND;
  return 0;
}

static int interval_arg(planner_t *pl, const ck_ast_t *call, int i, int64_t *ms) {
  if (i >= call->nargs)
    return fail(pl, call->pos, CK_EBIND, "%s needs more arguments", call->text);
  const ck_ast_t *a = call->args[i];
  char *end = NULL;
  if (a->kind == CK_AST_INTERVAL) *ms = a->ms;
  else if (a->kind == CK_AST_INT && (errno = 0, *ms = strtoll(a->text, &end, 10), *end || errno))
    return fail(pl, a->pos, CK_EBIND, "argument %d of %s is not a number of milliseconds: %s",
                i + 1, call->text, a->text);
  else if (a->kind != CK_AST_INT)
    return fail(pl, a->pos, CK_EBIND,
                "argument %d of %s must be an interval such as INTERVAL '10' SECOND", i + 1,
                call->text);
  if (*ms <= 0)
    return fail(pl, a->pos, CK_EBIND, "argument %d of %s must be a positive interval", i + 1,
                call->text);
  return 0;
}

/* A window offset: an interval (or milliseconds) of either sign, or zero. */
static int offset_arg(planner_t *pl, const ck_ast_t *call, int i, int64_t *ms) {
  const ck_ast_t *a = call->args[i];
  bool neg = a->kind == CK_AST_UNARY && !strcmp(a->text, "-");
  if (neg) a = a->args[0];
  char *end = NULL;
  if (a->kind == CK_AST_INTERVAL) *ms = a->ms;
  else if (a->kind == CK_AST_INT && (errno = 0, *ms = strtoll(a->text, &end, 10), !*end && !errno))
    ;
  else
    return fail(pl, a->pos, CK_EBIND, "the offset of %s (argument %d) must be an interval such "
                "as INTERVAL '8' HOUR", call->text, i + 1);
  if (neg) *ms = -*ms;
  return 0;
}

/* An interval as SQL writes it, in the largest unit that divides it. */
static void interval_text(int64_t ms, char *out, size_t n) {
  static const struct { const char *unit; int64_t ms; } units[] = {
      {"DAY", 86400000}, {"HOUR", 3600000}, {"MINUTE", 60000}, {"SECOND", 1000},
      {"MILLISECOND", 1}};
  size_t i = 0;
  while (ms % units[i].ms) i++;
  snprintf(out, n, "INTERVAL '%lld' %s", (long long)(ms / units[i].ms), units[i].unit);
}

/* HOP and CUMULATE put each record into size / slide (size / step) windows, and a window
 * holds state per key: past CK_SQL_MAX_WINDOWS_PER_RECORD one record could need gigabytes. */
static int windows_per_record(planner_t *pl, const ck_ast_t *w, const char *big_name,
                              int64_t big, const char *small_name, int64_t small) {
  int64_t windows = big / small;
  if (windows <= CK_SQL_MAX_WINDOWS_PER_RECORD) return 0;
  char a[64], b[64];
  interval_text(big, a, sizeof a);
  interval_text(small, b, sizeof b);
  fail(pl, w->pos, CK_EUNSUPPORTED, "%s with %s %s and %s %s puts every record into %lld "
       "windows, more than %d", w->text, big_name, a, small_name, b, (long long)windows,
       CK_SQL_MAX_WINDOWS_PER_RECORD);
  ck_error_hint(pl->err, "make the %s (%s) at least %s / %d, or the %s smaller: %s / %s is the "
                "number of windows each record belongs to", small_name, b, a,
                CK_SQL_MAX_WINDOWS_PER_RECORD, big_name, big_name, small_name);
  return CK_EUNSUPPORTED;
}

static int plan_window(planner_t *pl, const table_t *t, const ck_ast_t *w, ck_window_spec_t *spec,
                       int *time_col) {
  const char *name = w->text;
  bool session = ck_streq_i(name, "SESSION");
  int want = ck_streq_i(name, "TUMBLE") || session ? 2 : 3;
  /* TUMBLE, HOP and CUMULATE take a window offset as a last argument (Flink's) */
  if (w->nargs != want && (session || w->nargs != want + 1))
    return fail(pl, w->pos, CK_EBIND, "%s takes %d arguments%s: %s", name, want,
                session ? "" : " (and an optional offset)",
                ck_streq_i(name, "TUMBLE")    ? "TUMBLE(time_column, size[, offset])"
                : session                     ? "SESSION(time_column, gap)"
                : ck_streq_i(name, "HOP")     ? "HOP(time_column, size, slide[, offset])"
                                              : "CUMULATE(time_column, step, size[, offset])");
  const ck_ast_t *tc = w->args[0];
  if (tc->kind != CK_AST_IDENT)
    return fail(pl, tc->pos, CK_EBIND, "the first argument of %s must be the time column", name);
  int col = ck_schema_find(&t->schema, tc->text);
  if (col < 0) {
    scope_t sc = {.pl = pl, .tbl = t, .clause = "GROUP BY"};
    bind_ident(&sc, tc);
    return CK_EBIND;
  }
  const char *etc = ck_options_get(&t->options, "event_time_column");
  if (t->ncomputed && col == t->proctime_col) {
    fail(pl, tc->pos, CK_EUNSUPPORTED, "%s over '%s', a PROCTIME() column: windows over "
         "processing time are not supported", name, tc->text);
    ck_error_detail(pl->err, "their rows would depend on when the job ran, and a replay would "
                    "not give them again");
    ck_error_hint(pl->err, "window over event time: WATERMARK FOR <time column> AS … in the "
                  "table, or the event_time_column option");
    return CK_EUNSUPPORTED;
  }
  if (!etc) {
    fail(pl, tc->pos, CK_EBIND, "%s over '%s' needs event time, but table '%s' has none", name,
         tc->text, t->st->table);
    ck_error_hint(pl->err, "add event_time_column = '%s' (and watermark_lag_ms) to its WITH options",
                  tc->text);
    return CK_EBIND;
  }
  if (!ck_streq_i(etc, tc->text)) {
    fail(pl, tc->pos, CK_EBIND,
         "%s is over '%s', but the event time of table '%s' is '%s'", name, tc->text,
         t->st->table, etc);
    ck_error_hint(pl->err, "window over the event_time_column, '%s'", etc);
    return CK_EBIND;
  }
  *time_col = col;
  memset(spec, 0, sizeof *spec);
  if (w->nargs == want + 1 && offset_arg(pl, w, want, &spec->offset)) return CK_EBIND;
  if (ck_streq_i(name, "TUMBLE")) {
    spec->kind = CK_WIN_TUMBLE;
    return interval_arg(pl, w, 1, &spec->size);
  }
  if (ck_streq_i(name, "SESSION")) {
    spec->kind = CK_WIN_SESSION;
    return interval_arg(pl, w, 1, &spec->gap);
  }
  if (ck_streq_i(name, "HOP")) {
    spec->kind = CK_WIN_HOP;
    if (interval_arg(pl, w, 1, &spec->size) || interval_arg(pl, w, 2, &spec->slide))
      return CK_EBIND;
    if (spec->size % spec->slide != 0) {
      fail(pl, w->pos, CK_EBIND,
           "HOP size (%lld ms) must be a whole multiple of its slide (%lld ms)",
           (long long)spec->size, (long long)spec->slide);
      if (spec->size < spec->slide)
        ck_error_hint(pl->err, "clink's HOP is HOP(time_column, size, slide), size first; "
                      "Flink's GROUP BY HOP writes the slide first: swap the two intervals");
      return CK_EBIND;
    }
    return windows_per_record(pl, w, "size", spec->size, "slide", spec->slide);
  }
  spec->kind = CK_WIN_CUMULATE;
  if (interval_arg(pl, w, 1, &spec->step) || interval_arg(pl, w, 2, &spec->size)) return CK_EBIND;
  if (spec->size % spec->step != 0)
    return fail(pl, w->pos, CK_EBIND,
                "CUMULATE size (%lld ms) must be a whole multiple of its step (%lld ms)",
                (long long)spec->size, (long long)spec->step);
  return windows_per_record(pl, w, "size", spec->size, "step", spec->step);
}

/* FIRST_VALUE, LAST_VALUE, LISTAGG, APPROX_COUNT_DISTINCT (agg_op.c says how each folds);
 * 1 when a is none of them. */
static int agg_call_spec_more(planner_t *pl, const ck_ast_t *a, ck_type_t arg_type,
                              ck_agg_call_t *out) {
  static const struct {
    const char *name;
    ck_agg_fn_t fn;
  } more[] = {{"FIRST_VALUE", CK_AGG_FIRST_VALUE}, {"LAST_VALUE", CK_AGG_LAST_VALUE},
              {"LISTAGG", CK_AGG_LISTAGG}, {"APPROX_COUNT_DISTINCT", CK_AGG_APPROX_COUNT_DISTINCT}};
  int m = -1;
  for (size_t i = 0; i < CK_ARRAY_LEN(more); i++)
    if (ck_streq_i(a->text, more[i].name)) m = (int)i;
  if (m < 0) return 1;
  char tn[48];
  out->fn = more[m].fn;
  bool listagg = out->fn == CK_AGG_LISTAGG;
  if (a->nargs < 1 || a->nargs > (listagg ? 2 : 1) || a->args[0]->kind == CK_AST_STAR) {
    if (listagg)
      return fail(pl, a->pos, CK_EBIND, "LISTAGG takes a string and an optional separator: "
                  "LISTAGG(x[, ', '])");
    return fail(pl, a->pos, CK_EBIND, "%s takes exactly one argument", a->text);
  }
  if (arg_type.id == CK_T_NULL)
    return fail(pl, a->pos, CK_ETYPE, "%s needs a typed argument, not NULL", a->text);
  out->distinct = listagg && a->distinct; /* DISTINCT changes nothing for the other three */
  switch (out->fn) {
    case CK_AGG_LISTAGG:
      if (arg_type.id != CK_T_STRING) {
        fail(pl, a->args[0]->pos, CK_ETYPE, "LISTAGG needs a string argument, not %s",
             ck_type_name(arg_type, tn, sizeof tn));
        ck_error_hint(pl->err, "cast it: LISTAGG(CAST(x AS VARCHAR))");
        return CK_ETYPE;
      }
      out->sep = ",";
      if (a->nargs == 2) {
        if (a->args[1]->kind != CK_AST_STRING)
          return fail(pl, a->args[1]->pos, CK_EBIND, "the separator of LISTAGG must be a string "
                      "literal such as ', '");
        out->sep = a->args[1]->text;
      }
      out->result_type = CK_TYPE(CK_T_STRING);
      return 0;
    case CK_AGG_APPROX_COUNT_DISTINCT: out->result_type = CK_TYPE(CK_T_INT64); return 0;
    default: out->result_type = arg_type; return 0;
  }
}

/* A user-defined aggregate's argument converted to the type its descriptor declares, as a
 * scalar UDF's are (an INT into a BIGINT argument); other calls' arguments are left alone. */
static ck_expr_t *coerce_udf_agg_arg(planner_t *pl, const ck_ast_t *a, ck_expr_t *e) {
  const ck_udf_t *udf = find_udf(pl, a->text);
  if (!udf || !udf->aggregate || ck_type_eq(e->type, udf->args[0])) return e;
  if (e->type.id != CK_T_NULL && !ck_type_assignable(e->type, udf->args[0])) return e;
  ck_expr_t *c = ck_expr_coerce(pl->arena, e, udf->args[0], pl->err);
  if (!c) place(pl, a->pos);
  return c;
}

static int agg_call_spec(planner_t *pl, const ck_ast_t *a, int arg_col, ck_type_t arg_type,
                         ck_agg_call_t *out) {
  memset(out, 0, sizeof *out);
  int more = agg_call_spec_more(pl, a, arg_type, out);
  out->arg_col = arg_col;
  out->arg_type = arg_type;
  if (more <= 0) return more;
  out->arg_col = arg_col;
  out->arg_type = arg_type;
  out->distinct = a->distinct;
  char tn[48];
  bool star = a->nargs == 1 && a->args[0]->kind == CK_AST_STAR;
  const ck_udf_t *udf = find_udf(pl, a->text);
  if (udf && udf->aggregate) {
    if (a->nargs != 1 || star)
      return fail(pl, a->pos, CK_EBIND, "%s takes exactly one argument (library '%s')", a->text,
                  udf->path);
    if (a->distinct)
      return fail(pl, a->pos, CK_EUNSUPPORTED, "DISTINCT in the user-defined aggregate %s is "
                  "not supported", a->text);
    if (!ck_type_eq(arg_type, udf->args[0])) {
      char want[48];
      return fail(pl, a->pos, CK_ETYPE, "function %s takes %s as argument 1, not %s (library "
                  "'%s')", a->text, ck_type_name(udf->args[0], want, sizeof want),
                  ck_type_name(arg_type, tn, sizeof tn), udf->path);
    }
    out->fn = CK_AGG_UDF;
    out->udf = udf;
    out->result_type = udf->result;
    return 0;
  }
  if (ck_streq_i(a->text, "COUNT")) {
    if (a->nargs != 1) return fail(pl, a->pos, CK_EBIND, "COUNT takes one argument or *");
    out->fn = star ? CK_AGG_COUNT_STAR : CK_AGG_COUNT;
    if (star && a->distinct) return fail(pl, a->pos, CK_ESYNTAX, "COUNT(DISTINCT *) is not valid SQL");
    out->result_type = CK_TYPE(CK_T_INT64);
    return 0;
  }
  if (a->nargs != 1 || star)
    return fail(pl, a->pos, CK_EBIND, "%s takes exactly one argument", a->text);
  if (ck_streq_i(a->text, "MIN") || ck_streq_i(a->text, "MAX")) {
    out->fn = ck_streq_i(a->text, "MIN") ? CK_AGG_MIN : CK_AGG_MAX;
    if (arg_type.id == CK_T_NULL)
      return fail(pl, a->pos, CK_ETYPE, "%s needs a typed argument, not NULL", a->text);
    out->result_type = arg_type;
    return 0;
  }
  bool sum = ck_streq_i(a->text, "SUM");
  out->fn = sum ? CK_AGG_SUM : CK_AGG_AVG;
  if (!ck_type_is_numeric(arg_type))
    return fail(pl, a->pos, CK_ETYPE, "%s needs a numeric argument, not %s", a->text,
                ck_type_name(arg_type, tn, sizeof tn));
  if (arg_type.id == CK_T_DECIMAL)
    out->result_type = (ck_type_t){CK_T_DECIMAL, 38,
                                   (uint8_t)(sum ? arg_type.scale : (arg_type.scale > 6 ? arg_type.scale : 6))};
  else if (ck_type_is_integer(arg_type))
    out->result_type = CK_TYPE(sum ? CK_T_INT64 : CK_T_FLOAT64);
  else
    out->result_type = CK_TYPE(CK_T_FLOAT64);
  return 0;
}

/* ---- aggregates reduced to others, as Flink's planner (Calcite's reduce rule) does ----------
 *
 *   VAR_POP(x)     = (SUM(x·x) − SUM(x)·SUM(x) / COUNT(x)) / COUNT(x)
 *   VAR_SAMP(x)    = the same over CASE WHEN COUNT(x) = 1 THEN NULL ELSE COUNT(x) − 1 END
 *   STDDEV_POP(x)  = SQRT(VAR_POP(x)), STDDEV_SAMP(x) = SQRT(VAR_SAMP(x));
 *   VARIANCE = VAR_SAMP, STDDEV = STDDEV_SAMP
 *   BOOL_AND(b)    = MIN(b), BOOL_OR(b) = MAX(b)   (FALSE < TRUE; NULLs skipped)
 *
 * x is CAST to DOUBLE (the result is a DOUBLE for any numeric x), a variance a rounding error
 * left below zero is 0. So these aggregates are SUM, COUNT, MIN and MAX accumulators: mergeable
 * wherever windows merge, in checkpoints and state-cat as those are. The rewrite is done in the
 * tree once, before the aggregates are collected (an expanded tree has none of these calls). */

static ck_ast_t *ast_new(planner_t *pl, ck_ast_kind_t kind, ck_pos_t pos, const char *text,
                         int nargs) {
  ck_ast_t *n = ck_arena_zalloc(pl->arena, sizeof *n);
  n->kind = kind;
  n->pos = pos;
  n->text = text;
  n->nargs = nargs;
  n->args = nargs ? ck_arena_zalloc(pl->arena, sizeof(ck_ast_t *) * (size_t)nargs) : NULL;
  return n;
}

static ck_ast_t *ast1(planner_t *pl, ck_ast_kind_t kind, ck_pos_t pos, const char *text,
                      ck_ast_t *a) {
  ck_ast_t *n = ast_new(pl, kind, pos, text, 1);
  n->args[0] = a;
  return n;
}

static ck_ast_t *ast2(planner_t *pl, ck_pos_t pos, const char *op, ck_ast_t *a, ck_ast_t *b) {
  ck_ast_t *n = ast_new(pl, CK_AST_BINARY, pos, op, 2);
  n->args[0] = a, n->args[1] = b;
  return n;
}

/* CASE WHEN cond THEN then ELSE else_ END */
static ck_ast_t *ast_case(planner_t *pl, ck_pos_t pos, ck_ast_t *cond, ck_ast_t *then,
                          ck_ast_t *else_) {
  ck_ast_t *n = ast_new(pl, CK_AST_CASE, pos, NULL, 2);
  n->args[0] = cond, n->args[1] = then;
  n->else_ = else_;
  return n;
}

static ck_ast_t *ast_lit(planner_t *pl, ck_pos_t pos, ck_ast_kind_t kind, const char *text) {
  return ast_new(pl, kind, pos, text, 0);
}

/* The call's replacement, or a itself; NULL on error. */
static ck_ast_t *expand_call(planner_t *pl, scope_t *row, ck_ast_t *a) {
  static const struct {
    const char *name;
    bool samp, sqrt;
  } vars[] = {{"VAR_POP", false, false},    {"VAR_SAMP", true, false},
              {"VARIANCE", true, false},    {"STDDEV_POP", false, true},
              {"STDDEV_SAMP", true, true},  {"STDDEV", true, true}};
  int v = -1;
  for (size_t i = 0; i < CK_ARRAY_LEN(vars); i++)
    if (ck_streq_i(a->text, vars[i].name)) v = (int)i;
  bool is_bool = ck_streq_i(a->text, "BOOL_AND") || ck_streq_i(a->text, "BOOL_OR");
  if (v < 0 && !is_bool) return a;
  char tn[48];
  if (a->nargs != 1 || a->args[0]->kind == CK_AST_STAR) {
    fail(pl, a->pos, CK_EBIND, "%s takes exactly one argument", a->text);
    return NULL;
  }
  if (a->distinct) {
    fail(pl, a->pos, CK_EUNSUPPORTED, "%s(DISTINCT …) is not supported", a->text);
    return NULL;
  }
  ck_ast_t *x = a->args[0];
  row->clause = "an aggregate's argument";
  ck_expr_t *bx = bind(row, x);
  if (!bx) return NULL;
  ck_pos_t pos = a->pos;
  if (is_bool) {
    if (bx->type.id != CK_T_BOOL) {
      fail(pl, x->pos, CK_ETYPE, "%s needs a BOOLEAN argument, not %s", a->text,
           ck_type_name(bx->type, tn, sizeof tn));
      return NULL;
    }
    ck_ast_t *m = ast1(pl, CK_AST_CALL, pos, ck_streq_i(a->text, "BOOL_AND") ? "MIN" : "MAX", x);
    return m;
  }
  if (!ck_type_is_numeric(bx->type)) {
    fail(pl, x->pos, CK_ETYPE, "%s needs a numeric argument, not %s", a->text,
         ck_type_name(bx->type, tn, sizeof tn));
    return NULL;
  }
  ck_ast_t *xd = ast1(pl, CK_AST_CAST, pos, NULL, x);
  xd->cast_type = CK_TYPE(CK_T_FLOAT64);
  ck_ast_t *sum = ast1(pl, CK_AST_CALL, pos, "SUM", xd);
  ck_ast_t *sum2 = ast1(pl, CK_AST_CALL, pos, "SUM", ast2(pl, pos, "*", xd, xd));
  ck_ast_t *cnt = ast1(pl, CK_AST_CALL, pos, "COUNT", x);
  ck_ast_t *num = ast2(pl, pos, "-", sum2, ast2(pl, pos, "/", ast2(pl, pos, "*", sum, sum), cnt));
  ck_ast_t *den = cnt;
  if (vars[v].samp)
    den = ast_case(pl, pos, ast2(pl, pos, "=", cnt, ast_lit(pl, pos, CK_AST_INT, "1")),
                   ast_lit(pl, pos, CK_AST_NULL, NULL),
                   ast2(pl, pos, "-", cnt, ast_lit(pl, pos, CK_AST_INT, "1")));
  ck_ast_t *var = ast2(pl, pos, "/", num, den);
  ck_ast_t *zero = ast_lit(pl, pos, CK_AST_NUMBER, "0e0");
  ck_ast_t *clamped = ast_case(pl, pos, ast2(pl, pos, "<", var, zero), zero, var);
  return vars[v].sqrt ? ast1(pl, CK_AST_CALL, pos, "SQRT", clamped) : clamped;
}

/* Rewrites the calls expand_call knows in the tree at *slot; walks a chain of binary operators
 * with a loop (see bind_chain). */
static int expand_aggs(planner_t *pl, scope_t *row, ck_ast_t **slot) {
  ck_ast_t *a = *slot;
  if (!a) return 0;
  while (a->kind == CK_AST_BINARY) {
    if (expand_aggs(pl, row, &a->args[1])) return CK_EBIND;
    slot = &a->args[0];
    a = *slot;
  }
  if (a->kind == CK_AST_CALL) {
    ck_ast_t *r = expand_call(pl, row, a);
    if (!r) return pl->err->code ? pl->err->code : CK_EBIND;
    if (r != a) {
      *slot = r;
      return 0;
    }
  }
  if (expand_aggs(pl, row, &a->operand) || expand_aggs(pl, row, &a->else_)) return CK_EBIND;
  for (int i = 0; i < a->nargs; i++)
    if (expand_aggs(pl, row, &a->args[i])) return CK_EBIND;
  return 0;
}

/* ---------------------------------------------------------------- window table functions */

/* Window table functions (FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size)), HOP, CUMULATE) are
 * planned as the GROUP BY window they stand for: a query over one must GROUP BY window_start
 * and window_end, which become the window call (HOP's Flink order, slide before size, turned
 * into clink's size-first one), so a TVF query and its GROUP BY TUMBLE(…) twin make the same
 * graph. window_time, Flink's window_end - 1 ms, is rewritten to TIMESTAMPADD over window_end.
 * Any other use of a TVF's rows (selecting them, top-N over them, joins) is refused by name. */

static bool is_window_col(const ck_ast_t *a, const char *name) {
  return a->kind == CK_AST_IDENT && ck_streq_i(a->text, name);
}

/* A literal interval's milliseconds (INTERVAL or a number of milliseconds), or -1. */
static int64_t literal_ms(const ck_ast_t *a) {
  if (a->kind == CK_AST_INTERVAL) return a->ms;
  if (a->kind == CK_AST_INT) return strtoll(a->text, NULL, 10);
  return -1;
}

/* Replaces every window_time under *slot by TIMESTAMPADD(MILLISECOND, -1, window_end); loops
 * down first operands (a binary chain) and recurses into the others, as every walk here. */
static void tvf_window_time(planner_t *pl, ck_ast_t **slot) {
  while (*slot) {
    ck_ast_t *a = *slot;
    if (is_window_col(a, "window_time")) {
      ck_ast_t *add = ast_new(pl, CK_AST_CALL, a->pos, "TIMESTAMPADD", 3);
      add->args[0] = ast_lit(pl, a->pos, CK_AST_STRING, "MILLISECOND");
      add->args[1] = ast_lit(pl, a->pos, CK_AST_INT, "-1");
      add->args[2] = ast_lit(pl, a->pos, CK_AST_IDENT, "window_end");
      *slot = add;
      return;
    }
    if (a->operand) tvf_window_time(pl, &a->operand);
    if (a->else_) tvf_window_time(pl, &a->else_);
    for (int i = 1; i < a->nargs; i++) tvf_window_time(pl, &a->args[i]);
    if (a->nargs == 0) return;
    slot = &a->args[0];
  }
}

/* The first window_start / window_end / window_time under a, or NULL (the walk of
 * tvf_window_time). */
static const ck_ast_t *find_window_col(const ck_ast_t *a) {
  while (a) {
    if (is_window_col(a, "window_start") || is_window_col(a, "window_end") ||
        is_window_col(a, "window_time"))
      return a;
    const ck_ast_t *f = NULL;
    if (a->operand && (f = find_window_col(a->operand))) return f;
    if (a->else_ && (f = find_window_col(a->else_))) return f;
    for (int i = 1; i < a->nargs; i++)
      if ((f = find_window_col(a->args[i]))) return f;
    a = a->nargs ? a->args[0] : NULL;
  }
  return NULL;
}

/* The SELECT over a window TVF as the GROUP BY window query it is; NULL on error. */
static const ck_ast_select_t *plan_window_tvf(planner_t *pl, const ck_ast_select_t *s) {
  const ck_ast_t *tvf = s->window_tvf;
  bool has_start = false, has_end = false;
  int nkeys = 0;
  for (int i = 0; i < s->ngroup; i++) {
    const ck_ast_t *e = s->group_by[i];
    if (is_window_call(e)) {
      fail(pl, e->pos, CK_EUNSUPPORTED, "GROUP BY %s(…) over the window table function %s is "
           "not supported", e->text, tvf->text);
      ck_error_hint(pl->err, "the table function makes the windows: GROUP BY window_start, "
                    "window_end, …");
      return NULL;
    }
    if (is_window_col(e, "window_start")) has_start = true;
    else if (is_window_col(e, "window_end")) has_end = true;
    else if (!is_window_col(e, "window_time")) nkeys++;
  }
  if ((has_start || has_end) && !(has_start && has_end)) {
    fail(pl, s->group_by[0]->pos, CK_EBIND, "a window aggregation over %s groups by both "
         "window_start and window_end; this GROUP BY has only %s", tvf->text,
         has_start ? "window_start" : "window_end");
    ck_error_hint(pl->err, "GROUP BY window_start, window_end[, key …]");
    return NULL;
  }
  for (int i = 0; i < s->ngroup; i++) {
    const ck_ast_t *e = s->group_by[i];
    if ((is_window_col(e, "window_start") || is_window_col(e, "window_end") ||
         is_window_col(e, "window_time")) && e->qualifier &&
        !ck_streq_i(e->qualifier, s->from) &&
        !(s->from_alias && ck_streq_i(e->qualifier, s->from_alias))) {
      fail(pl, e->pos, CK_EBIND, "unknown table or alias '%s' in '%s.%s'", e->qualifier,
           e->qualifier, e->text);
      ck_error_hint(pl->err, "the query reads %s(TABLE %s)%s%s", tvf->text, s->from,
                    s->from_alias ? " as " : "", s->from_alias ? s->from_alias : "");
      return NULL;
    }
  }
  if (!has_start || !has_end) {
    fail(pl, tvf->pos, CK_EUNSUPPORTED, "reading the rows of the window table function %s "
         "without GROUP BY window_start, window_end is not supported", tvf->text);
    ck_error_detail(pl->err, "a window table function feeds a window aggregation here; "
                    "window top-N, window joins and its bare rows are not built yet");
    ck_error_hint(pl->err, "GROUP BY window_start, window_end[, key …]");
    return NULL;
  }
  const ck_ast_t *wc = s->where ? find_window_col(s->where) : NULL;
  if (wc) {
    fail(pl, wc->pos, CK_EUNSUPPORTED, "%s in WHERE over the window table function %s is not "
         "supported", wc->text, tvf->text);
    ck_error_detail(pl->err, "WHERE filters the table's rows before they are windowed");
    ck_error_hint(pl->err, "test the window in HAVING: HAVING %s …", wc->text);
    return NULL;
  }
  /* the window call, clink's argument order: HOP(ts, size, slide[, offset]) */
  ck_ast_t *w = ast_new(pl, CK_AST_CALL, tvf->pos, tvf->text, tvf->nargs);
  for (int i = 0; i < tvf->nargs; i++) w->args[i] = tvf->args[i];
  if (ck_streq_i(tvf->text, "HOP")) {
    int64_t slide = literal_ms(tvf->args[1]), size = literal_ms(tvf->args[2]);
    if (slide > 0 && size > 0 && slide > size) {
      fail(pl, tvf->args[1]->pos, CK_EBIND, "HOP's slide (%lld ms) is longer than its size "
           "(%lld ms)", (long long)slide, (long long)size);
      ck_error_hint(pl->err, "the table function takes the slide first, as Flink's: "
                    "HOP(TABLE t, DESCRIPTOR(ts), slide, size); swap the two intervals");
      return NULL;
    }
    w->args[1] = tvf->args[2];
    w->args[2] = tvf->args[1];
  }
  ck_ast_select_t *ns = ck_arena_alloc(pl->arena, sizeof *ns);
  *ns = *s;
  ns->window_tvf = NULL;
  ns->group_by = ck_arena_alloc(pl->arena, sizeof(ck_ast_t *) * (size_t)(nkeys + 1));
  ns->ngroup = 0;
  ns->group_by[ns->ngroup++] = w;
  for (int i = 0; i < s->ngroup; i++) {
    const ck_ast_t *e = s->group_by[i];
    if (!is_window_col(e, "window_start") && !is_window_col(e, "window_end") &&
        !is_window_col(e, "window_time"))
      ns->group_by[ns->ngroup++] = s->group_by[i];
  }
  ns->items = ck_arena_alloc(pl->arena, sizeof *ns->items * (size_t)s->nitems);
  for (int i = 0; i < s->nitems; i++) {
    ns->items[i] = s->items[i];
    if (!ns->items[i].alias && is_window_col(ns->items[i].expr, "window_time"))
      ns->items[i].alias = "window_time";
    tvf_window_time(pl, &ns->items[i].expr);
  }
  tvf_window_time(pl, &ns->having);
  return ns;
}

/* Plans one SELECT into source → … ; returns the id of its last node, or -1. */
static int plan_select(planner_t *pl, const ck_ast_select_t *s, const char ***names_out) {
  if (s->window_tvf && !(s = plan_window_tvf(pl, s))) return -1;
  const table_t *t = find_table(pl, s->from);
  if (!t) return unknown_table(pl, s->from, s->from_pos), -1;
  int src = source_node(pl, t, s->from_pos);
  if (src < 0) return -1;
  scope_t row = {.pl = pl, .tbl = t, .alias = s->from_alias, .clause = "WHERE"};

  for (int i = 0; i < s->nitems; i++)
    if (expand_aggs(pl, &row, (ck_ast_t **)&s->items[i].expr)) return -1;
  if (expand_aggs(pl, &row, (ck_ast_t **)&s->having)) return -1;
  row.clause = "WHERE";

  agg_info_t g;
  memset(&g, 0, sizeof g);
  for (int i = 0; i < s->nitems; i++)
    if (collect_aggs(pl, &g, s->items[i].expr, false)) return -1;
  if (collect_aggs(pl, &g, s->having, false)) return -1;
  if (s->where) {
    agg_info_t tmp;
    memset(&tmp, 0, sizeof tmp);
    if (collect_aggs(pl, &tmp, s->where, false)) return -1;
    if (tmp.ncalls) {
      fail(pl, tmp.calls[0]->pos, CK_EBIND, "aggregate function %s is not allowed in WHERE",
           tmp.calls[0]->text);
      ck_error_hint(pl->err, "filter aggregates with HAVING");
      return -1;
    }
  }
  bool grouped = s->ngroup > 0 || g.ncalls > 0;

  if (!grouped) {
    if (s->having)
      return fail(pl, s->having->pos, CK_EBIND, "HAVING needs GROUP BY or an aggregate"), -1;
    ck_node_t *calc = add_node(pl, CK_NODE_CALC, "calc", src);
    if (s->where && !(calc->u.calc.filter = bind_predicate(&row, s->where))) return -1;
    row.clause = "SELECT";
    int n = 0;
    for (int i = 0; i < s->nitems; i++)
      n += s->items[i].expr->kind == CK_AST_STAR ? t->schema.ncols : 1;
    calc = &pl->nodes[pl->nnodes - 1];
    calc->u.calc.nexprs = n;
    calc->u.calc.exprs = ck_arena_alloc(pl->arena, sizeof(ck_expr_t *) * (size_t)(n ? n : 1));
    calc->out_schema = ck_schema_make(pl->arena, n);
    int k = 0;
    for (int i = 0; i < s->nitems; i++) {
      const ck_ast_select_item_t *it = &s->items[i];
      if (it->expr->kind == CK_AST_STAR) {
        for (int c = 0; c < t->schema.ncols; c++, k++) {
          calc->u.calc.exprs[k] = ck_expr_column(pl->arena, c, t->schema.types[c]);
          calc->out_schema.names[k] = t->schema.names[c];
          calc->out_schema.types[k] = t->schema.types[c];
        }
        continue;
      }
      ck_expr_t *e = bind(&row, it->expr);
      if (!e) return -1;
      calc->u.calc.exprs[k] = e;
      calc->out_schema.names[k] = expr_name(pl, it, k);
      calc->out_schema.types[k] = e->type;
      k++;
    }
    *names_out = calc->out_schema.names;
    return calc->id;
  }

  /* GROUP BY: split the window call from the keys */
  ck_window_spec_t win;
  memset(&win, 0, sizeof win);
  int time_col = -1;
  g.group = ck_arena_alloc(pl->arena, sizeof(ck_ast_t *) * (size_t)(s->ngroup + 1));
  for (int i = 0; i < s->ngroup; i++) {
    const ck_ast_t *e = s->group_by[i];
    if (is_window_call(e)) {
      if (g.window)
        return fail(pl, e->pos, CK_EUNSUPPORTED, "a query may group by only one window"), -1;
      g.window = e;
      if (plan_window(pl, t, e, &win, &time_col)) return -1;
      continue;
    }
    if (e->kind == CK_AST_INT)
      return fail(pl, e->pos, CK_EUNSUPPORTED,
                  "GROUP BY a position (%s) is not supported; name the expression", e->text), -1;
    if (is_agg_call(e))
      return fail(pl, e->pos, CK_EBIND, "aggregate function %s is not allowed in GROUP BY",
                  e->text), -1;
    g.group[g.ngroup++] = s->group_by[i];
  }
  index_group_keys(pl, &g);
  for (int i = 0; i < s->nitems; i++)
    if (s->items[i].expr->kind == CK_AST_STAR)
      return fail(pl, s->items[i].pos, CK_EBIND,
                  "SELECT * cannot be used with GROUP BY; name the columns"), -1;

  /* calc 1: WHERE, then keys, [time], aggregate arguments */
  int nin = g.ngroup + (g.window ? 1 : 0) + g.ncalls;
  ck_node_t *pre = add_node(pl, CK_NODE_CALC, "calc", src);
  if (s->where && !(pre->u.calc.filter = bind_predicate(&row, s->where))) return -1;
  pre = &pl->nodes[pl->nnodes - 1];
  pre->u.calc.nexprs = nin;
  pre->u.calc.exprs = ck_arena_alloc(pl->arena, sizeof(ck_expr_t *) * (size_t)(nin ? nin : 1));
  pre->out_schema = ck_schema_make(pl->arena, nin);
  int k = 0;
  row.clause = "GROUP BY";
  for (int i = 0; i < g.ngroup; i++, k++) {
    ck_expr_t *e = bind(&row, g.group[i]);
    if (!e) return -1;
    pre->u.calc.exprs[k] = e;
    pre->out_schema.names[k] =
        g.group[i]->kind == CK_AST_IDENT ? g.group[i]->text : ck_arena_printf(pl->arena, "key$%d", i);
    pre->out_schema.types[k] = e->type;
  }
  if (g.window) {
    pre->u.calc.exprs[k] = ck_expr_column(pl->arena, time_col, t->schema.types[time_col]);
    pre->out_schema.names[k] = t->schema.names[time_col];
    pre->out_schema.types[k] = t->schema.types[time_col];
    k++;
  }
  ck_agg_call_t *calls = ck_arena_zalloc(pl->arena, sizeof *calls * (size_t)(g.ncalls + 1));
  row.clause = "an aggregate function";
  for (int i = 0; i < g.ncalls; i++) {
    const ck_ast_t *c = g.calls[i];
    ck_expr_t *e = NULL;
    if (c->nargs >= 1 && c->args[0]->kind != CK_AST_STAR) {
      if (!(e = bind(&row, c->args[0]))) return -1;
    } else {
      ck_value_t one = {.type = CK_TYPE(CK_T_INT32), .v.i = 1};
      e = ck_expr_literal(pl->arena, &one);
    }
    if (!(e = coerce_udf_agg_arg(pl, c, e))) return -1;
    pre->u.calc.exprs[k] = e;
    pre->out_schema.names[k] = ck_arena_printf(pl->arena, "arg$%d", i);
    pre->out_schema.types[k] = e->type;
    if (agg_call_spec(pl, c, c->nargs == 1 && c->args[0]->kind == CK_AST_STAR ? -1 : k, e->type,
                      &calls[i]))
      return -1;
    k++;
  }

  /* the aggregation, keyed by the first ngroup columns */
  ck_node_t *agg = add_node(pl, CK_NODE_AGG, g.window ? "window_agg" : "group_agg", pre->id);
  ck_agg_spec_t *spec = &agg->u.agg;
  spec->nkeys = g.ngroup;
  spec->key_cols = ck_arena_alloc(pl->arena, sizeof(int) * (size_t)(g.ngroup + 1));
  for (int i = 0; i < g.ngroup; i++) spec->key_cols[i] = i;
  spec->ncalls = g.ncalls;
  spec->calls = calls;
  spec->window = win;
  spec->window.time_col = g.window ? g.ngroup : -1;
  spec->allowed_lateness_ms =
      ck_opt_int(&t->options, ck_source_common_options, "allowed_lateness_ms");
  if (g.ngroup > 0 && pl->opts->parallelism > 1) {
    agg->edge = CK_EDGE_HASH;
    agg->nkeys = g.ngroup;
    agg->key_cols = spec->key_cols;
  } else if (pl->opts->parallelism > 1) {
    agg->edge = CK_EDGE_GATHER; /* a global aggregate runs once */
    agg->parallelism = 1;
  }
  agg->changelog = !g.window;
  int nout = g.ngroup + (g.window ? 2 : 0) + g.ncalls;
  agg->out_schema = ck_schema_make(pl->arena, nout);
  for (int i = 0; i < g.ngroup; i++) {
    agg->out_schema.names[i] = pre->out_schema.names[i];
    agg->out_schema.types[i] = pre->out_schema.types[i];
  }
  int base = g.ngroup;
  if (g.window) {
    agg->out_schema.names[base] = "window_start";
    agg->out_schema.names[base + 1] = "window_end";
    /* TIMESTAMP(3) over a TIMESTAMP column (as Flink: also over a TIMESTAMP_LTZ one, the
     * session zone being UTC); over a BIGINT epoch-ms column the bounds are TIMESTAMP(3) shown
     * as epoch milliseconds, as they always were */
    bool epoch = t->schema.types[time_col].id != CK_T_TIMESTAMP;
    agg->out_schema.types[base] = agg->out_schema.types[base + 1] =
        ck_type_timestamp(3, epoch ? CK_TS_EPOCH : 0);
    base += 2;
  }
  for (int i = 0; i < g.ncalls; i++) {
    agg->out_schema.names[base + i] = ck_arena_printf(pl->arena, "agg$%d", i);
    agg->out_schema.types[base + i] = calls[i].result_type;
  }

  scope_t grp = {.pl = pl, .tbl = t, .alias = s->from_alias, .clause = "HAVING", .agg = &g,
                 .windowed = g.window != NULL};
  if (s->having && !(agg->u.agg.having = bind_predicate(&grp, s->having))) return -1;
  agg = &pl->nodes[pl->nnodes - 1];
  int agg_id = agg->id;

  /* calc 2: the SELECT list over the aggregation's output */
  grp.clause = "SELECT";
  ck_expr_t **exprs = ck_arena_alloc(pl->arena, sizeof(ck_expr_t *) * (size_t)s->nitems);
  for (int i = 0; i < s->nitems; i++)
    if (!(exprs[i] = bind(&grp, s->items[i].expr))) return -1;
  ck_node_t *post = add_node(pl, CK_NODE_CALC, "calc", agg_id);
  post->u.calc.nexprs = s->nitems;
  post->u.calc.exprs = exprs;
  post->out_schema = ck_schema_make(pl->arena, s->nitems);
  for (int i = 0; i < s->nitems; i++) {
    post->out_schema.names[i] = expr_name(pl, &s->items[i], i);
    post->out_schema.types[i] = exprs[i]->type;
  }
  *names_out = post->out_schema.names;
  return post->id;
}

static int check_unique_names(planner_t *pl, const ck_ast_select_t *s, const ck_schema_t *out) {
  ck_hmap_t seen;
  ck_hmap_init(&seen);
  int rc = 0;
  for (int i = 0; i < out->ncols && !rc; i++)
    if (names_put(&seen, out->names[i], i) >= 0) {
      ck_pos_t pos = i < s->nitems ? s->items[i].pos : s->pos;
      fail(pl, pos, CK_EBIND, "the query outputs two columns named '%s'", out->names[i]);
      ck_error_hint(pl->err, "give one of them another name with AS");
      rc = CK_EBIND;
    }
  ck_hmap_fini(&seen);
  return rc;
}

/* Matches the query's output columns to the sink's by name (cols: the sink's names). */
static int sink_columns(planner_t *pl, const ck_stmt_t *st, const ck_ast_select_t *s,
                        const table_t *t, const ck_node_t *in, const ck_hmap_t *cols,
                        int *col_map) {
  for (int i = 0; i < in->out_schema.ncols; i++) {
    const char *name = st->ninsert_cols ? st->insert_cols[i] : in->out_schema.names[i];
    int col = names_get(cols, name);
    ck_pos_t pos = i < s->nitems ? s->items[i].pos : s->pos;
    if (col < 0) {
      fail(pl, pos, CK_EBIND, "table '%s' has no column '%s' for the query's column %d",
           st->table, name, i + 1);
      const char *close = ck_closest(name, t->schema.names, (size_t)t->schema.ncols);
      if (close) ck_error_hint(pl->err, "did you mean '%s'? sink columns are matched by name", close);
      else ck_error_hint(pl->err, "sink columns are matched by name; rename it with AS");
      return CK_EBIND;
    }
    if (col_map[col] >= 0)
      return fail(pl, pos, CK_EBIND, "column '%s' of table '%s' is written twice", name,
                  st->table);
    ck_type_t from = in->out_schema.types[i], to = t->schema.types[col];
    if (from.id != CK_T_NULL && !ck_type_assignable(from, to)) {
      char a[48], b[48];
      fail(pl, pos, CK_ETYPE, "cannot write %s into column '%s' of table '%s', which is %s",
           ck_type_name(from, a, sizeof a), t->schema.names[col], st->table,
           ck_type_name(to, b, sizeof b));
      ck_error_hint(pl->err, "CAST it explicitly if the conversion is what you want");
      return CK_ETYPE;
    }
    col_map[col] = i;
  }
  return 0;
}

static int plan_sink(planner_t *pl, const ck_stmt_t *st, int last) {
  const ck_node_t *in = &pl->nodes[last];
  const ck_ast_select_t *s = st->select;
  if (check_unique_names(pl, s, &in->out_schema)) return CK_EBIND;
  ck_node_t *sink;
  if (st->kind == CK_STMT_SELECT) {
    const ck_connector_t *print = ck_connector_find("print");
    if (!print) return fail(pl, st->pos, CK_EINTERNAL, "the print connector is not registered");
    sink = add_node(pl, CK_NODE_SINK, "print_sink", last);
    sink->u.conn.connector = print;
    sink->u.conn.table = "stdout";
    sink->u.conn.schema = in->out_schema;
    sink->out_schema = in->out_schema;
    sink->u.conn.col_map = ck_arena_alloc(pl->arena, sizeof(int) * (size_t)(in->out_schema.ncols + 1));
    for (int i = 0; i < in->out_schema.ncols; i++) sink->u.conn.col_map[i] = i;
  } else {
    const table_t *t = find_table(pl, st->table);
    if (!t) return unknown_table(pl, st->table, st->table_pos);
    if (check_role(pl, t, true, st->table_pos)) return pl->err->code;
    int *col_map = ck_arena_alloc(pl->arena, sizeof(int) * (size_t)(t->schema.ncols + 1));
    for (int i = 0; i < t->schema.ncols; i++) col_map[i] = -1;
    int nin = in->out_schema.ncols;
    if (st->ninsert_cols && st->ninsert_cols != nin)
      return fail(pl, st->pos, CK_EBIND, "INSERT INTO %s names %d columns but the query gives %d",
                  st->table, st->ninsert_cols, nin);
    ck_hmap_t sink_cols;
    ck_hmap_init(&sink_cols);
    for (int i = 0; i < t->schema.ncols; i++) names_put(&sink_cols, t->schema.names[i], i);
    int rc = sink_columns(pl, st, s, t, in, &sink_cols, col_map);
    ck_hmap_fini(&sink_cols);
    if (rc) return rc;
    /* a projection onto the sink's own columns and types, unless the query already is one */
    bool identity = nin == t->schema.ncols;
    for (int i = 0; identity && i < t->schema.ncols; i++)
      identity = col_map[i] == i && ck_type_eq(in->out_schema.types[i], t->schema.types[i]);
    if (!identity) {
      ck_expr_t **exprs = ck_arena_alloc(pl->arena, sizeof(ck_expr_t *) * (size_t)(t->schema.ncols + 1));
      for (int i = 0; i < t->schema.ncols; i++) {
        if (col_map[i] < 0) {
          ck_value_t null = {.type = t->schema.types[i], .is_null = true};
          exprs[i] = ck_expr_literal(pl->arena, &null);
          continue;
        }
        ck_expr_t *e = ck_expr_column(pl->arena, col_map[i], in->out_schema.types[col_map[i]]);
        if (!(exprs[i] = ck_expr_coerce(pl->arena, e, t->schema.types[i], pl->err))) {
          place(pl, st->table_pos);
          return pl->err->code;
        }
      }
      ck_node_t *cast = add_node(pl, CK_NODE_CALC, "calc", last);
      cast->u.calc.nexprs = t->schema.ncols;
      cast->u.calc.exprs = exprs;
      cast->out_schema = t->schema;
      last = cast->id;
    }
    sink = add_node(pl, CK_NODE_SINK, ck_arena_printf(pl->arena, "%s_sink", t->conn->name), last);
    ck_conn_spec_t *c = &sink->u.conn;
    c->connector = t->conn;
    c->table = t->st->table;
    c->schema = t->schema;
    c->options = t->options;
    sink->out_schema = t->schema;
    c->col_map = ck_arena_alloc(pl->arena, sizeof(int) * (size_t)(t->schema.ncols + 1));
    for (int i = 0; i < t->schema.ncols; i++) c->col_map[i] = i;
  }
  if (sink->parallelism > 1 && sink->u.conn.connector == ck_connector_find("print")) {
    sink->edge = CK_EDGE_GATHER; /* one writer keeps stdout lines whole and ordered per input */
    sink->parallelism = 1;
  }
  return 0;
}

/* ---- GROUPING SETS, ROLLUP, CUBE ----------------------------------------------------------
 *
 * Each grouping set is planned as a query of its own — source, calc, aggregation keyed by the
 * set's keys, calc, sink — and all of them write to the statement's sink, so the sink receives
 * their union. In a set's SELECT list and HAVING, a GROUP BY key the set leaves out becomes
 * CAST(NULL AS its type) (outside aggregate arguments, which still see the rows' values), and
 * GROUPING(k1, …, kn) / GROUPING_ID(…) the BIGINT whose bit n-1-i is 1 when ki is left out. A
 * window call is a key of every set (as Flink requires), so every set's rows are windowed
 * alike. The source is read once per set. */

typedef struct gs_ctx {
  planner_t *pl;
  const ck_ast_select_t *s;
  uint64_t mask;          /* the set's keys, over s->group_by */
  const ck_type_t *types; /* per group_by expression */
} gs_ctx_t;

/* Whether a is (structurally) a key of the set; *key := the first group_by index it equals. */
static bool gs_in_set(const gs_ctx_t *c, const ck_ast_t *a, int *key) {
  bool any = false, in = false;
  for (int i = 0; i < c->s->ngroup; i++)
    if (ast_eq(c->s->group_by[i], a)) {
      if (!any) *key = i;
      any = true;
      in |= (c->mask >> i) & 1;
    }
  if (!any) *key = -1;
  return in;
}

static ck_ast_t *gs_rewrite(gs_ctx_t *c, ck_ast_t *a);

/* a's replacement when a itself is a left-out key or a GROUPING call; NULL when it is neither
 * (*err set on an error). */
static ck_ast_t *gs_replace(gs_ctx_t *c, ck_ast_t *a, bool *err) {
  planner_t *pl = c->pl;
  int key;
  if (a->kind == CK_AST_CALL &&
      (ck_streq_i(a->text, "GROUPING") || ck_streq_i(a->text, "GROUPING_ID"))) {
    if (a->nargs < 1 || a->nargs > 63) {
      *err = true;
      fail(pl, a->pos, CK_EBIND, "%s takes 1 to 63 GROUP BY keys", a->text);
      return NULL;
    }
    int64_t v = 0;
    for (int j = 0; j < a->nargs; j++) {
      bool in = gs_in_set(c, a->args[j], &key);
      if (key < 0) {
        *err = true;
        fail(pl, a->args[j]->pos, CK_EBIND, "the arguments of %s must be GROUP BY keys",
             a->text);
        return NULL;
      }
      v = v << 1 | (in ? 0 : 1);
    }
    ck_ast_t *lit = ast_lit(pl, a->pos, CK_AST_INT, ck_arena_printf(pl->arena, "%lld", (long long)v));
    ck_ast_t *cast = ast1(pl, CK_AST_CAST, a->pos, NULL, lit);
    cast->cast_type = CK_TYPE(CK_T_INT64);
    return cast;
  }
  if (a->kind == CK_AST_INT || a->kind == CK_AST_STRING || is_agg_call(a)) return NULL;
  if (!gs_in_set(c, a, &key) && key >= 0 && !is_window_call(a)) {
    ck_ast_t *cast = ast1(pl, CK_AST_CAST, a->pos, NULL, ast_lit(pl, a->pos, CK_AST_NULL, NULL));
    cast->cast_type = c->types[key];
    return cast;
  }
  return NULL;
}

/* A copy of node a whose children may be replaced. */
static ck_ast_t *gs_copy(planner_t *pl, const ck_ast_t *a) {
  ck_ast_t *n = ck_arena_alloc(pl->arena, sizeof *n);
  *n = *a;
  if (a->nargs) {
    n->args = ck_arena_alloc(pl->arena, sizeof(ck_ast_t *) * (size_t)a->nargs);
    memcpy(n->args, a->args, sizeof(ck_ast_t *) * (size_t)a->nargs);
  }
  return n;
}

/* The tree with the set's substitutions; a itself where nothing changes, NULL on error. A chain
 * of binary operators is walked with a loop (see bind_chain). */
static ck_ast_t *gs_rewrite(gs_ctx_t *c, ck_ast_t *a) {
  if (!a) return NULL;
  bool err = false;
  ck_ast_t *r = gs_replace(c, a, &err);
  if (err) return NULL;
  if (r) return r;
  if (is_agg_call(a)) return a; /* aggregate arguments see the rows */
  if (a->kind == CK_AST_BINARY) {
    ast_stack_t chain = {0};
    ck_ast_t *x = a;
    for (;;) {
      ast_stack_push(&chain, x);
      ck_ast_t *l = x->args[0];
      if (l->kind != CK_AST_BINARY) break;
      if ((r = gs_replace(c, l, &err)) || err) break;
      x = l;
    }
    if (err) {
      ast_stack_fini(&chain);
      return NULL;
    }
    /* the leftmost operand, then each level's right operand, bottom up */
    ck_ast_t *below = NULL;
    while (chain.n) {
      ck_ast_t *n = (ck_ast_t *)chain.items[--chain.n];
      ck_ast_t *l = below ? below : gs_rewrite(c, n->args[0]);
      ck_ast_t *rr = l ? gs_rewrite(c, n->args[1]) : NULL;
      if (!l || !rr) {
        ast_stack_fini(&chain);
        return NULL;
      }
      if (l != n->args[0] || rr != n->args[1]) {
        n = gs_copy(c->pl, n);
        n->args[0] = l, n->args[1] = rr;
      }
      below = n;
    }
    ast_stack_fini(&chain);
    return below;
  }
  ck_ast_t *op = a->operand ? gs_rewrite(c, a->operand) : NULL;
  ck_ast_t *el = a->else_ ? gs_rewrite(c, a->else_) : NULL;
  if ((a->operand && !op) || (a->else_ && !el)) return NULL;
  ck_ast_t *n = (ck_ast_t *)a;
  if (op != a->operand || el != a->else_) {
    n = gs_copy(c->pl, a);
    n->operand = op, n->else_ = el;
  }
  for (int i = 0; i < a->nargs; i++) {
    ck_ast_t *ai = gs_rewrite(c, a->args[i]);
    if (!ai) return NULL;
    if (ai != n->args[i]) {
      if (n == a) n = gs_copy(c->pl, a);
      n->args[i] = ai;
    }
  }
  return n;
}

static int plan_grouping_sets(planner_t *pl, const ck_stmt_t *st) {
  const ck_ast_select_t *s = st->select;
  const table_t *t = find_table(pl, s->from);
  if (!t) return unknown_table(pl, s->from, s->from_pos);
  scope_t row = {.pl = pl, .tbl = t, .alias = s->from_alias, .clause = "GROUP BY"};
  ck_type_t *types = ck_arena_zalloc(pl->arena, sizeof *types * (size_t)(s->ngroup + 1));
  for (int i = 0; i < s->ngroup; i++) {
    const ck_ast_t *e = s->group_by[i];
    if (is_window_call(e)) {
      for (int k = 0; k < s->nsets; k++)
        if (!((s->sets[k] >> i) & 1)) {
          fail(pl, e->pos, CK_EBIND, "the window %s must be in every grouping set", e->text);
          ck_error_hint(pl->err, "write it outside ROLLUP, CUBE and GROUPING SETS: GROUP BY "
                        "%s(…), ROLLUP (a, b)", e->text);
          return CK_EBIND;
        }
      continue;
    }
    ck_expr_t *b = bind(&row, e);
    if (!b) return pl->err->code ? pl->err->code : CK_EBIND;
    types[i] = b->type;
  }
  for (int k = 0; k < s->nsets; k++) {
    gs_ctx_t c = {.pl = pl, .s = s, .mask = s->sets[k], .types = types};
    ck_ast_select_t *s2 = ck_arena_alloc(pl->arena, sizeof *s2);
    *s2 = *s;
    s2->nsets = 0;
    s2->sets = NULL;
    s2->group_by = ck_arena_alloc(pl->arena, sizeof(ck_ast_t *) * (size_t)(s->ngroup + 1));
    s2->ngroup = 0;
    for (int i = 0; i < s->ngroup; i++) {
      if (!((c.mask >> i) & 1)) continue;
      bool dup = false;
      for (int j = 0; j < s2->ngroup && !dup; j++) dup = ast_eq(s2->group_by[j], s->group_by[i]);
      if (!dup) s2->group_by[s2->ngroup++] = s->group_by[i];
    }
    s2->items = ck_arena_alloc(pl->arena, sizeof *s2->items * (size_t)(s->nitems + 1));
    for (int i = 0; i < s->nitems; i++) {
      s2->items[i] = s->items[i];
      if (s->items[i].expr->kind == CK_AST_STAR) continue; /* refused by plan_select */
      s2->items[i].alias = expr_name(pl, &s->items[i], i);
      if (!(s2->items[i].expr = gs_rewrite(&c, s->items[i].expr)))
        return pl->err->code ? pl->err->code : CK_EBIND;
    }
    if (s->having && !(s2->having = gs_rewrite(&c, s->having)))
      return pl->err->code ? pl->err->code : CK_EBIND;
    ck_stmt_t *st2 = ck_arena_alloc(pl->arena, sizeof *st2);
    *st2 = *st;
    st2->select = s2;
    const char **names = NULL;
    int last = plan_select(pl, s2, &names);
    if (last < 0) return pl->err->code ? pl->err->code : CK_EINTERNAL;
    int rc = plan_sink(pl, st2, last);
    if (rc) return rc;
  }
  return 0;
}

int ck_sql_plan(const ck_script_t *script, const ck_plan_opts_t *opts_in, ck_graph_t **out,
                ck_error_t *err) {
  ck_plan_opts_t opts = {1, 128};
  if (opts_in) {
    if (opts_in->parallelism > 0) opts.parallelism = opts_in->parallelism;
    if (opts_in->max_parallelism > 0) opts.max_parallelism = opts_in->max_parallelism;
  }
  if (opts.parallelism > opts.max_parallelism)
    return ck_error_set(err, CK_EINVAL, "parallelism %d is above the maximum parallelism %d",
                        opts.parallelism, opts.max_parallelism);
  ck_graph_t *graph = ck_calloc(1, sizeof *graph);
  ck_arena_init(&graph->arena, 0);
  graph->max_parallelism = opts.max_parallelism;
  planner_t *pl = ck_calloc(1, sizeof *pl);
  pl->graph = graph;
  pl->arena = &graph->arena;
  pl->err = err;
  pl->opts = &opts;
  tl_planner = pl;
  int rc = 0, queries = 0;
  for (int i = 0; i < script->nstmts && !rc; i++) {
    const ck_stmt_t *st = script->stmts[i];
    if (st->kind == CK_STMT_CREATE_TABLE) {
      rc = add_table(pl, st);
      continue;
    }
    if (st->kind == CK_STMT_CREATE_FUNCTION) {
      rc = add_function(pl, st);
      continue;
    }
    if (st->select->nsets) { /* GROUPING SETS / ROLLUP / CUBE */
      rc = plan_grouping_sets(pl, st);
      queries++;
      continue;
    }
    const char **names = NULL;
    int last = plan_select(pl, st->select, &names);
    if (last < 0) {
      rc = err->code ? err->code : CK_EINTERNAL;
      break;
    }
    rc = plan_sink(pl, st, last);
    queries++;
  }
  if (!rc && queries == 0)
    rc = ck_error_set(err, CK_EINVAL,
                      "nothing to run: the script has no INSERT INTO … SELECT or SELECT");
  tl_planner = NULL;
  for (int i = 0; i < pl->ntables; i++) ck_hmap_fini(&pl->tables[i].cols);
  if (rc) {
    ck_free(pl);
    ck_graph_free(graph);
    return rc;
  }
  graph->nnodes = pl->nnodes;
  graph->nodes = pl->nodes;
  ck_free(pl);
  *out = graph;
  return 0;
}

void ck_graph_guarantee(const ck_graph_t *graph, bool checkpointing, ck_buf_t *out) {
  ck_guarantee_t worst = CK_GUARANTEE_EXACTLY_ONCE;
  const char *limiter = NULL;
  for (int i = 0; i < graph->nnodes; i++) {
    const ck_node_t *n = &graph->nodes[i];
    if (n->kind != CK_NODE_SINK) continue;
    ck_guarantee_t g = n->u.conn.connector->sink_guarantee;
    const char *asked = ck_options_get(&n->u.conn.options, "delivery_guarantee");
    if (g == CK_GUARANTEE_EXACTLY_ONCE && !(asked && strcmp(asked, "exactly_once") == 0))
      g = CK_GUARANTEE_AT_LEAST_ONCE;
    if (g < worst || !limiter) {
      if (g < worst || (g == worst && !limiter)) limiter = n->name;
      if (g < worst) worst = g;
    }
  }
  if (!checkpointing) {
    ck_buf_puts(out, "NONE (no checkpoints: a failure loses state and in-flight output)");
    return;
  }
  const char *what = worst == CK_GUARANTEE_EXACTLY_ONCE ? "STATE_EXACTLY_ONCE_OUTPUT_EXACTLY_ONCE"
                     : worst == CK_GUARANTEE_AT_LEAST_ONCE ? "STATE_EXACTLY_ONCE_OUTPUT_AT_LEAST_ONCE"
                                                           : "STATE_EXACTLY_ONCE_OUTPUT_NONE";
  ck_buf_puts(out, what);
  if (worst < CK_GUARANTEE_EXACTLY_ONCE && limiter)
    ck_buf_printf(out, " (limited by sink '%s')", limiter);
}

static void describe_schema(const ck_schema_t *sc, ck_buf_t *out) {
  char tn[48];
  ck_buf_putc(out, '(');
  for (int i = 0; i < sc->ncols; i++)
    ck_buf_printf(out, "%s%s %s", i ? ", " : "", sc->names[i], ck_type_name(sc->types[i], tn, sizeof tn));
  ck_buf_putc(out, ')');
}

static _Thread_local const char *const *sorting_keys; /* for by_key, during one qsort */

static int by_key(const void *a, const void *b) {
  return strcmp(sorting_keys[*(const int *)a], sorting_keys[*(const int *)b]);
}

void ck_graph_describe(const ck_graph_t *graph, ck_buf_t *out) {
  ck_buf_printf(out, "max_parallelism=%d\n", graph->max_parallelism);
  for (int i = 0; i < graph->nnodes; i++) {
    const ck_node_t *n = &graph->nodes[i];
    /* edges follow from the query and the parallelism, which is checked on its own */
    ck_buf_printf(out, "node %d %s input=%d out=", n->id, n->name, n->input);
    describe_schema(&n->out_schema, out);
    switch (n->kind) {
      case CK_NODE_SOURCE:
      case CK_NODE_SINK: {
        const ck_conn_spec_t *c = &n->u.conn;
        ck_buf_printf(out, " connector=%s table=%s schema=", c->connector->name, c->table);
        describe_schema(&c->schema, out);
        /* options in a stable order */
        for (int pass = 0; pass < c->options.n; pass++) {
          const char *best = NULL;
          int bi = -1;
          for (int a = 0; a < c->options.n; a++) {
            int rank = 0;
            for (int b = 0; b < c->options.n; b++) rank += strcmp(c->options.keys[b], c->options.keys[a]) < 0;
            if (rank == pass) best = c->options.keys[a], bi = a;
          }
          if (best) { /* credentials masked: the text holds none, and rotating one keeps the
                       * job's checkpoints (base/redact.h) */
            ck_buf_printf(out, " %s=", best);
            ck_redact_option(best, c->options.values[bi], out);
          }
        }
        /* options in a stable order: sorted by key (keys are unique) */
        int *order = ck_malloc(sizeof(int) * (size_t)(c->options.n + 1));
        for (int k = 0; k < c->options.n; k++) order[k] = k;
        sorting_keys = c->options.keys;
        qsort(order, (size_t)c->options.n, sizeof *order, by_key);
        for (int k = 0; k < c->options.n; k++)
          ck_buf_printf(out, " %s=%s", c->options.keys[order[k]], c->options.values[order[k]]);
        ck_free(order);
        break;
      }
      case CK_NODE_CALC: {
        const ck_calc_spec_t *c = &n->u.calc;
        ck_buf_puts(out, " filter=");
        if (c->filter) ck_expr_to_string(c->filter, out);
        for (int e = 0; e < c->nexprs; e++) {
          ck_buf_puts(out, " expr=");
          ck_expr_to_string(c->exprs[e], out);
        }
        break;
      }
      case CK_NODE_AGG: {
        const ck_agg_spec_t *a = &n->u.agg;
        ck_buf_printf(out, " window=%d/%lld/%lld/%lld/%lld/%d lateness=%lld", (int)a->window.kind,
                      (long long)a->window.size, (long long)a->window.slide,
                      (long long)a->window.gap, (long long)a->window.step, a->window.time_col,
                      (long long)a->allowed_lateness_ms);
        for (int k = 0; k < a->ncalls; k++) {
          ck_buf_printf(out, " call=%d/%d/%d", (int)a->calls[k].fn, a->calls[k].distinct,
                        a->calls[k].arg_col);
          if (a->calls[k].udf)
            ck_buf_printf(out, "[%s@%s]", a->calls[k].udf->symbol, a->calls[k].udf->path);
        }
        ck_buf_puts(out, " having=");
        if (a->having) ck_expr_to_string(a->having, out);
        break;
      }
    }
    ck_buf_putc(out, '\n');
  }
}
