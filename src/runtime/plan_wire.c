/*
 * DESIGN: the serialised job graph — encoder and decoder of the layout in plan.h.
 *
 * The encoder writes every field of every node in graph order; the decoder reads them back
 * into a new graph's arena, checking as it goes that counts fit the bytes left, enums and
 * node references are in range and column numbers fit the layouts they index, so a damaged
 * or foreign payload is refused with CK_EPROTO instead of reaching the executor. Expressions
 * are walked pre-order with an explicit stack (a chain of first operands may be 100,000 deep:
 * runtime/expr.h). Connectors are resolved by name in this process's registry and their
 * options validated against its tables (which remembers credentials for redaction, as the
 * planner does); no connector's plan-time check runs, so decoding never touches the network.
 */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "base/redact.h"
#include "runtime/plan.h"
#include "runtime/udf.h"

#define MAGIC "CKJG"
#define NULL_LEN 0xFFFFFFFFu
#define MAX_PARALLELISM 4096

/* ================================================================ encoding */

static void put_u8(ck_buf_t *b, uint8_t v) { ck_buf_put_u8(b, v); }

static void put_u32(ck_buf_t *b, uint32_t v) { ck_buf_put_le32(b, v); }

static void put_i32(ck_buf_t *b, int v) { put_u32(b, (uint32_t)v); }

static void put_u64(ck_buf_t *b, uint64_t v) { ck_buf_put_le64(b, v); }

static void put_i64(ck_buf_t *b, int64_t v) { put_u64(b, (uint64_t)v); }

static void put_bytes(ck_buf_t *b, const char *s, size_t n) {
  put_u32(b, (uint32_t)n);
  ck_buf_append(b, s, n);
}

static void put_str(ck_buf_t *b, const char *s) {
  if (!s) put_u32(b, NULL_LEN);
  else put_bytes(b, s, strlen(s));
}

static void put_ints(ck_buf_t *b, const int *v, int n) {
  if (!v) {
    put_i32(b, -1);
    return;
  }
  put_i32(b, n);
  for (int i = 0; i < n; i++) put_i32(b, v[i]);
}

static void put_type(ck_buf_t *b, ck_type_t t) {
  put_u8(b, (uint8_t)t.id);
  put_u8(b, t.precision);
  put_u8(b, t.scale);
}

static void put_schema(ck_buf_t *b, const ck_schema_t *sc) {
  put_i32(b, sc->ncols);
  for (int i = 0; i < sc->ncols; i++) {
    put_str(b, sc->names[i]);
    put_type(b, sc->types[i]);
  }
}

static void put_literal(ck_buf_t *b, const ck_value_t *v) {
  put_type(b, v->type);
  put_u8(b, v->is_null);
  if (v->is_null) return;
  switch (v->type.id) {
    case CK_T_BOOL: put_u8(b, v->v.b); break;
    case CK_T_INT32:
    case CK_T_INT64:
    case CK_T_TIMESTAMP: put_i64(b, v->v.i); break;
    case CK_T_FLOAT32:
    case CK_T_FLOAT64: {
      uint64_t bits;
      memcpy(&bits, &v->v.f, 8);
      put_u64(b, bits);
      break;
    }
    case CK_T_DECIMAL: {
      unsigned __int128 u = (unsigned __int128)v->v.dec;
      put_u64(b, (uint64_t)u);
      put_u64(b, (uint64_t)(u >> 64));
      break;
    }
    case CK_T_STRING: put_bytes(b, v->v.s.ptr ? v->v.s.ptr : "", v->v.s.len); break;
    case CK_T_NULL: break;
  }
}

/* One expression tree, pre-order, without recursion. */
static void put_expr(ck_buf_t *b, const ck_expr_t *root) {
  size_t cap = 64, n = 0;
  const ck_expr_t **stack = ck_malloc(cap * sizeof *stack);
  stack[n++] = root;
  while (n) {
    const ck_expr_t *e = stack[--n];
    put_u8(b, (uint8_t)e->kind);
    put_type(b, e->type);
    put_i32(b, e->column);
    put_str(b, e->kind == CK_EX_CALL ? ck_fn_name(e->fn) : "");
    put_u8(b, e->has_else);
    put_u8(b, e->negated);
    put_u8(b, e->constant);
    put_u32(b, e->size);
    if (e->kind == CK_EX_LITERAL) put_literal(b, &e->literal);
    if (e->kind == CK_EX_UDF) { /* loaded again where the plan is decoded */
      put_str(b, e->udf->name);
      put_str(b, e->udf->symbol);
      put_str(b, e->udf->path);
    }
    put_i32(b, e->nargs);
    if (n + (size_t)e->nargs > cap) {
      while (n + (size_t)e->nargs > cap) cap *= 2;
      stack = ck_realloc(stack, cap * sizeof *stack);
    }
    for (int i = e->nargs - 1; i >= 0; i--) stack[n++] = e->args[i];
  }
  ck_free(stack);
}

static void put_opt_expr(ck_buf_t *b, const ck_expr_t *e) {
  put_u8(b, e != NULL);
  if (e) put_expr(b, e);
}

/* Returns whether it masked an option's value. */
static bool put_conn(ck_buf_t *b, const ck_conn_spec_t *c, bool sink, bool redact) {
  bool masked_any = false;
  put_str(b, c->connector->name);
  put_str(b, c->table);
  put_schema(b, &c->schema);
  put_i32(b, c->options.n);
  ck_buf_t masked;
  ck_buf_init(&masked);
  for (int i = 0; i < c->options.n; i++) {
    put_str(b, c->options.keys[i]);
    if (!redact) {
      put_str(b, c->options.values[i]);
      continue;
    }
    ck_buf_reset(&masked);
    ck_redact_option(c->options.keys[i], c->options.values[i], &masked);
    put_bytes(b, masked.data ? masked.data : "", masked.len);
    masked_any |= masked.len != strlen(c->options.values[i]) ||
                  memcmp(masked.data ? masked.data : "", c->options.values[i], masked.len);
  }
  ck_buf_fini(&masked);
  put_i32(b, c->event_time_col);
  put_i64(b, c->watermark_lag_ms);
  put_i64(b, c->idle_timeout_ms);
  put_ints(b, sink ? c->col_map : NULL, c->schema.ncols);
  return masked_any;
}

/* What later features added to a node, after everything else and only when a node has it,
 * so a graph without them encodes (and fingerprints) as it did before: records of u8 tag, i32
 * node index, payload; ended by a 0 tag.
 *   EXT_COMPUTED  a source's computed columns: i32 proctime column, per schema column u8 has
 *                 an expression + the expression (over the physical columns)
 *   EXT_OFFSET    a window's offset: i64 ms */
enum { EXT_END = 0, EXT_COMPUTED = 1, EXT_OFFSET = 2 };

static void put_extensions(ck_buf_t *b, const ck_graph_t *graph) {
  bool any = false;
  for (int i = 0; i < graph->nnodes; i++) {
    const ck_node_t *n = &graph->nodes[i];
    if (n->kind == CK_NODE_SOURCE && n->u.conn.ncomputed) {
      const ck_conn_spec_t *c = &n->u.conn;
      put_u8(b, EXT_COMPUTED);
      put_i32(b, i);
      put_i32(b, c->proctime_col);
      for (int k = 0; k < c->schema.ncols; k++) put_opt_expr(b, c->computed[k]);
      any = true;
    } else if (n->kind == CK_NODE_AGG && n->u.agg.window.offset) {
      put_u8(b, EXT_OFFSET);
      put_i32(b, i);
      put_i64(b, n->u.agg.window.offset);
      any = true;
    }
  }
  if (any) put_u8(b, EXT_END);
}

bool ck_plan_encode(const ck_graph_t *graph, unsigned flags, ck_buf_t *out) {
  bool masked = false;
  bool identity = flags & CK_PLAN_WIRE_IDENTITY;
  bool redact = identity || (flags & CK_PLAN_WIRE_REDACT);
  ck_buf_append(out, MAGIC, 4);
  put_u32(out, CK_PLAN_WIRE_VERSION);
  put_u32(out, (identity ? CK_PLAN_WIRE_IDENTITY : 0) | (redact ? CK_PLAN_WIRE_REDACT : 0));
  put_i32(out, graph->max_parallelism);
  put_i32(out, graph->nnodes);
  for (int i = 0; i < graph->nnodes; i++) {
    const ck_node_t *n = &graph->nodes[i];
    put_i32(out, n->id);
    put_u8(out, (uint8_t)n->kind);
    put_str(out, n->name);
    put_i32(out, identity ? 0 : n->parallelism);
    put_i32(out, n->input);
    put_u8(out, (uint8_t)n->edge);
    put_ints(out, n->key_cols, n->nkeys);
    put_schema(out, &n->out_schema);
    put_u8(out, n->changelog);
    switch (n->kind) {
      case CK_NODE_SOURCE:
      case CK_NODE_SINK:
        masked |= put_conn(out, &n->u.conn, n->kind == CK_NODE_SINK, redact);
        break;
      case CK_NODE_CALC:
        put_opt_expr(out, n->u.calc.filter);
        put_i32(out, n->u.calc.nexprs);
        for (int e = 0; e < n->u.calc.nexprs; e++) put_expr(out, n->u.calc.exprs[e]);
        break;
      case CK_NODE_AGG: {
        const ck_agg_spec_t *a = &n->u.agg;
        put_ints(out, a->key_cols, a->nkeys);
        put_i32(out, a->ncalls);
        for (int k = 0; k < a->ncalls; k++) {
          put_u8(out, (uint8_t)a->calls[k].fn);
          put_u8(out, a->calls[k].distinct);
          put_i32(out, a->calls[k].arg_col);
          put_type(out, a->calls[k].arg_type);
          put_type(out, a->calls[k].result_type);
          if (a->calls[k].fn == CK_AGG_LISTAGG) put_str(out, a->calls[k].sep);
          if (a->calls[k].fn == CK_AGG_UDF) { /* loaded again where the plan is decoded */
            put_str(out, a->calls[k].udf->name);
            put_str(out, a->calls[k].udf->symbol);
            put_str(out, a->calls[k].udf->path);
          }
        }
        put_u8(out, (uint8_t)a->window.kind);
        put_i64(out, a->window.size);
        put_i64(out, a->window.slide);
        put_i64(out, a->window.gap);
        put_i64(out, a->window.step);
        put_i32(out, a->window.time_col);
        put_i64(out, a->allowed_lateness_ms);
        put_opt_expr(out, a->having);
        break;
      }
    }
  }
  if (identity) {
    put_extensions(out, graph);
    return masked;
  }
  ck_plan_t plan;
  ck_plan_build(graph, &plan);
  put_i32(out, plan.nsegs);
  for (int s = 0; s < plan.nsegs; s++) {
    const ck_plan_seg_t *seg = &plan.segs[s];
    put_i32(out, seg->first);
    put_i32(out, seg->last);
    put_i32(out, seg->parallelism);
    put_i32(out, seg->down);
    put_i32(out, seg->nsenders);
    put_i32(out, seg->first_task);
  }
  put_i32(out, plan.ntasks);
  put_i32(out, plan.nslots);
  ck_plan_fini(&plan);
  put_extensions(out, graph);
  return masked;
}

void ck_plan_identity(const ck_graph_t *graph, ck_buf_t *out) {
  ck_buf_t bin;
  ck_buf_init(&bin);
  ck_plan_encode(graph, CK_PLAN_WIRE_IDENTITY, &bin);
  static const char hex[] = "0123456789abcdef";
  ck_buf_reserve(out, bin.len * 2);
  for (size_t i = 0; i < bin.len; i++) {
    uint8_t c = (uint8_t)bin.data[i];
    ck_buf_putc(out, hex[c >> 4]);
    ck_buf_putc(out, hex[c & 15]);
  }
  ck_buf_fini(&bin);
}

/* ================================================================ decoding */

typedef struct rd {
  const uint8_t *p;
  size_t n, off;
  bool bad;
  const char *why; /* the first problem, for the error */
  ck_arena_t *arena;
  ck_error_t *err;  /* a user-defined function that does not load reports here first */
} rd_t;

static void bad(rd_t *r, const char *why) {
  if (!r->bad) r->why = why;
  r->bad = true;
}

static const uint8_t *take(rd_t *r, size_t n) {
  if (r->bad || n > r->n - r->off) {
    bad(r, "it ends early");
    return NULL;
  }
  const uint8_t *p = r->p + r->off;
  r->off += n;
  return p;
}

static uint8_t get_u8(rd_t *r) {
  const uint8_t *p = take(r, 1);
  return p ? p[0] : 0;
}

static uint32_t get_u32(rd_t *r) {
  const uint8_t *p = take(r, 4);
  return p ? ck_get_le32(p) : 0;
}

static int get_i32(rd_t *r) { return (int)(int32_t)get_u32(r); }

static uint64_t get_u64(rd_t *r) {
  const uint8_t *p = take(r, 8);
  return p ? ck_get_le64(p) : 0;
}

static int64_t get_i64(rd_t *r) { return (int64_t)get_u64(r); }

static bool get_bool(rd_t *r) {
  uint8_t v = get_u8(r);
  if (v > 1) bad(r, "a flag is neither 0 nor 1");
  return v == 1;
}

/* A count of items of at least `min_bytes` each: refused when the bytes left cannot hold it. */
static int get_count(rd_t *r, size_t min_bytes, bool may_be_null) {
  int n = get_i32(r);
  if (n == -1 && may_be_null) return -1;
  if (n < 0 || (size_t)n > (r->n - r->off) / (min_bytes ? min_bytes : 1)) {
    bad(r, "a count is out of range");
    return 0;
  }
  return n;
}

static const char *get_str(rd_t *r, size_t *len) {
  uint32_t n = get_u32(r);
  if (n == NULL_LEN && !r->bad) {
    if (len) *len = 0;
    return NULL;
  }
  const uint8_t *p = take(r, n);
  if (!p) return "";
  if (len) *len = n;
  else if (memchr(p, 0, n)) bad(r, "a name holds a NUL byte");
  return ck_arena_strndup(r->arena, (const char *)p, n);
}

static int *get_ints(rd_t *r, int *count) {
  int n = get_count(r, 4, true);
  *count = n < 0 ? 0 : n;
  if (n < 0) return NULL;
  int *v = ck_arena_alloc(r->arena, sizeof(int) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) v[i] = get_i32(r);
  return v;
}

static ck_type_t get_type(rd_t *r) {
  ck_type_t t;
  t.id = (ck_type_id_t)get_u8(r);
  t.precision = get_u8(r);
  t.scale = get_u8(r);
  if (t.id == CK_T_TIMESTAMP ? t.precision > CK_TS_MAX_PRECISION + 1 || t.scale > CK_TS_FLAGS
                             : t.id > CK_T_TIMESTAMP || t.precision > CK_DECIMAL_MAX_PRECISION ||
                                   t.scale > t.precision)
    bad(r, "a type is out of range");
  return t;
}

static void get_schema(rd_t *r, ck_schema_t *sc) {
  int n = get_count(r, 7, false);
  *sc = ck_schema_make(r->arena, n);
  for (int i = 0; i < n && !r->bad; i++) {
    sc->names[i] = get_str(r, NULL);
    if (!sc->names[i]) bad(r, "a column has no name");
    sc->types[i] = get_type(r);
  }
}

static void get_literal(rd_t *r, ck_value_t *v) {
  memset(v, 0, sizeof *v);
  v->type = get_type(r);
  v->is_null = get_bool(r);
  if (v->is_null) return;
  switch (v->type.id) {
    case CK_T_BOOL: v->v.b = get_bool(r); break;
    case CK_T_INT32:
    case CK_T_INT64:
    case CK_T_TIMESTAMP: v->v.i = get_i64(r); break;
    case CK_T_FLOAT32:
    case CK_T_FLOAT64: {
      uint64_t bits = get_u64(r);
      memcpy(&v->v.f, &bits, 8);
      break;
    }
    case CK_T_DECIMAL: {
      uint64_t lo = get_u64(r), hi = get_u64(r);
      v->v.dec = (ck_i128)((unsigned __int128)hi << 64 | lo);
      break;
    }
    case CK_T_STRING: {
      size_t len = 0;
      const char *s = get_str(r, &len);
      if (!s) bad(r, "a string literal is NULL");
      v->v.s.ptr = s ? s : "";
      v->v.s.len = len;
      break;
    }
    case CK_T_NULL: bad(r, "a literal of no type is not NULL"); break;
  }
}

static bool fn_of(const char *name, ck_fn_t *fn) {
  for (int f = 0; f < CK_FN__COUNT; f++)
    if (!strcmp(ck_fn_name((ck_fn_t)f), name)) {
      *fn = (ck_fn_t)f;
      return true;
    }
  return false;
}

/* A user-defined function's name, symbol and library: loaded here, in the decoding process
 * (a worker), so a worker that cannot load the library refuses the plan naming it. */
static void get_udf(rd_t *r, ck_expr_t *e) {
  const char *name = get_str(r, NULL), *symbol = get_str(r, NULL), *path = get_str(r, NULL);
  if (r->bad) return;
  if (!name || !symbol || !path) {
    bad(r, "a user-defined function has no name, symbol or library");
    return;
  }
  ck_error_t local = {0};
  if (ck_udf_load(name, symbol, path, &e->udf, r->err ? r->err : &local)) {
    bad(r, "a user-defined function's library cannot be loaded");
    return;
  }
  if (!ck_type_eq(e->udf->result, e->type))
    bad(r, "a user-defined function's result type is not the one the plan was made with");
}

/* A user-defined aggregate's name, symbol and library, loaded as get_udf loads a scalar one. */
static void get_agg_udf(rd_t *r, ck_agg_call_t *call) {
  const char *name = get_str(r, NULL), *symbol = get_str(r, NULL), *path = get_str(r, NULL);
  if (r->bad) return;
  if (!name || !symbol || !path) {
    bad(r, "a user-defined aggregate has no name, symbol or library");
    return;
  }
  ck_error_t local = {0};
  if (ck_udf_load(name, symbol, path, &call->udf, r->err ? r->err : &local)) {
    bad(r, "a user-defined aggregate's library cannot be loaded");
    return;
  }
  if (!call->udf->aggregate || !ck_type_eq(call->udf->result, call->result_type) ||
      !ck_type_eq(call->udf->args[0], call->arg_type))
    bad(r, "a user-defined aggregate's types are not the ones the plan was made with");
}

/* One tree whose columns index a layout of ncols, pre-order, without recursion. */
static ck_expr_t *get_expr(rd_t *r, int ncols) {
  ck_expr_t *root = NULL;
  size_t cap = 64, n = 0;
  ck_expr_t ***stack = ck_malloc(cap * sizeof *stack);
  stack[n++] = &root;
  while (n && !r->bad) {
    ck_expr_t **slot = stack[--n];
    ck_expr_t *e = ck_arena_zalloc(r->arena, sizeof *e);
    *slot = e;
    uint8_t kind = get_u8(r);
    if (kind > CK_EX_UDF) bad(r, "an expression kind is out of range");
    e->kind = (ck_expr_kind_t)kind;
    e->type = get_type(r);
    e->column = get_i32(r);
    if (e->kind == CK_EX_COLUMN && (e->column < 0 || e->column >= ncols))
      bad(r, "an expression reads a column its input does not have");
    const char *fn = get_str(r, NULL);
    if (e->kind == CK_EX_CALL && (!fn || !fn_of(fn, &e->fn)))
      bad(r, "an expression calls a function this version does not have");
    e->has_else = get_bool(r);
    e->negated = get_bool(r);
    e->constant = get_bool(r);
    e->size = get_u32(r);
    if (e->kind == CK_EX_LITERAL) get_literal(r, &e->literal);
    if (e->kind == CK_EX_UDF) get_udf(r, e);
    e->nargs = get_count(r, 20, false);
    if (!r->bad && e->kind == CK_EX_UDF && e->nargs != e->udf->nargs)
      bad(r, "a user-defined function's arity is not the one the plan was made with");
    if (r->bad) break;
    e->args = ck_arena_zalloc(r->arena, sizeof *e->args * (size_t)(e->nargs + 1));
    if (n + (size_t)e->nargs > cap) {
      while (n + (size_t)e->nargs > cap) cap *= 2;
      stack = ck_realloc(stack, cap * sizeof *stack);
    }
    for (int i = e->nargs - 1; i >= 0; i--) stack[n++] = &e->args[i];
  }
  ck_free(stack);
  return r->bad ? NULL : root;
}

static const ck_expr_t *get_opt_expr(rd_t *r, int ncols) {
  return get_bool(r) ? get_expr(r, ncols) : NULL;
}

static void get_extensions(rd_t *r, ck_graph_t *g) {
  if (r->bad || r->off == r->n) return;
  for (;;) {
    uint8_t tag = get_u8(r);
    if (r->bad || tag == EXT_END) return;
    int i = get_i32(r);
    if (r->bad || i < 0 || i >= g->nnodes) {
      bad(r, "an extension names no node");
      return;
    }
    ck_node_t *n = &g->nodes[i];
    if (tag == EXT_COMPUTED && n->kind == CK_NODE_SOURCE) {
      ck_conn_spec_t *c = &n->u.conn;
      int ncols = c->schema.ncols;
      c->proctime_col = get_i32(r);
      if (c->proctime_col < -1 || c->proctime_col >= ncols)
        {
      bad(r, "the processing-time column is out of range");
      return;
    }
      c->computed = ck_arena_zalloc(r->arena, sizeof(ck_expr_t *) * (size_t)(ncols + 1));
      c->ncomputed = c->proctime_col >= 0;
      bool *is_comp = ck_arena_zalloc(r->arena, (size_t)(ncols + 1));
      for (int k = 0; k < ncols && !r->bad; k++) {
        /* the expressions read the physical columns: at most ncols of them */
        c->computed[k] = (ck_expr_t *)get_opt_expr(r, ncols);
        is_comp[k] = c->computed[k] || k == c->proctime_col;
        c->ncomputed += c->computed[k] != NULL;
      }
      if (r->bad) return;
      if (!c->ncomputed) {
      bad(r, "a computed-column extension computes nothing");
      return;
    }
      int nphys = ncols - c->ncomputed;
      c->phys = ck_schema_make(r->arena, nphys);
      c->phys_col = ck_arena_zalloc(r->arena, sizeof(int) * (size_t)(nphys + 1));
      for (int k = 0, p = 0; k < ncols; k++) {
        if (is_comp[k]) continue;
        c->phys.names[p] = c->schema.names[k];
        c->phys.types[p] = c->schema.types[k];
        c->phys_col[p++] = k;
      }
    } else if (tag == EXT_OFFSET && n->kind == CK_NODE_AGG) {
      n->u.agg.window.offset = get_i64(r);
    } else {
      {
      bad(r, "an extension is of an unknown kind (a newer clink?)");
      return;
    }
    }
  }
}

static void check_cols(rd_t *r, const int *cols, int n, int lo, int ncols) {
  for (int i = 0; i < n; i++)
    if (cols[i] < lo || cols[i] >= ncols) bad(r, "a column number is out of range");
}

static int get_conn(rd_t *r, ck_node_t *node, int in_cols, ck_error_t *err) {
  ck_conn_spec_t *c = &node->u.conn;
  bool sink = node->kind == CK_NODE_SINK;
  const char *name = get_str(r, NULL);
  c->table = get_str(r, NULL);
  get_schema(r, &c->schema);
  c->options.n = get_count(r, 8, false);
  c->options.keys = ck_arena_zalloc(r->arena, sizeof(char *) * (size_t)(c->options.n + 1));
  c->options.values = ck_arena_zalloc(r->arena, sizeof(char *) * (size_t)(c->options.n + 1));
  for (int i = 0; i < c->options.n && !r->bad; i++) {
    c->options.keys[i] = get_str(r, NULL);
    c->options.values[i] = get_str(r, NULL);
    if (!c->options.keys[i] || !c->options.values[i]) bad(r, "an option is NULL");
  }
  c->event_time_col = get_i32(r);
  c->watermark_lag_ms = get_i64(r);
  c->idle_timeout_ms = get_i64(r);
  int nmap;
  c->col_map = get_ints(r, &nmap);
  if (r->bad) return 0;
  if (!sink && c->event_time_col >= c->schema.ncols)
    bad(r, "the event time column is out of range");
  if (sink && (!c->col_map || nmap != c->schema.ncols)) bad(r, "a sink has no column map");
  if (sink && c->col_map) check_cols(r, c->col_map, nmap, -1, in_cols);
  if (!name || r->bad) {
    bad(r, "a table has no connector");
    return 0;
  }
  if (!(c->connector = ck_connector_find(name)))
    return ck_error_set(err, CK_ENOTFOUND, "could not build the job graph: this process has no "
                        "connector '%s' (table '%s')", name, c->table ? c->table : "?");
  if (sink ? !c->connector->sink : !c->connector->source)
    return ck_error_set(err, CK_EUNSUPPORTED, "could not build the job graph: connector '%s' "
                        "cannot be a %s", name, sink ? "sink" : "source");
  static const ck_opt_def_t connector_opt[] = {
      {"connector", CK_OPT_STRING, NULL, NULL, true, "the connector"},
      {NULL, 0, NULL, NULL, false, NULL}};
  const ck_opt_def_t *tables[3] = {
      sink ? c->connector->sink_options : c->connector->source_options,
      sink ? ck_sink_common_options : ck_source_common_options, connector_opt};
  /* the print sink of a bare SELECT has no WITH options at all */
  if (c->options.n == 0) return 0;
  char what[200];
  snprintf(what, sizeof what, "table '%s' (connector '%s', as a %s)", c->table ? c->table : "?",
           name, sink ? "sink" : "source");
  return ck_options_validate(&c->options, tables, 3, what, err);
}

static int get_node(rd_t *r, ck_graph_t *g, int i, ck_error_t *err) {
  ck_node_t *n = &g->nodes[i];
  n->id = get_i32(r);
  uint8_t kind = get_u8(r);
  n->name = get_str(r, NULL);
  n->parallelism = get_i32(r);
  n->input = get_i32(r);
  uint8_t edge = get_u8(r);
  n->key_cols = get_ints(r, &n->nkeys);
  get_schema(r, &n->out_schema);
  n->changelog = get_bool(r);
  if (r->bad) return 0;
  if (n->id != i || kind > CK_NODE_SINK || edge > CK_EDGE_GATHER || !n->name) {
    bad(r, "a node is out of range");
    return 0;
  }
  n->kind = (ck_node_kind_t)kind;
  n->edge = (ck_edge_kind_t)edge;
  if (n->parallelism < 1 || n->parallelism > g->max_parallelism)
    bad(r, "a node's parallelism is out of range");
  if ((n->kind == CK_NODE_SOURCE) != (n->input < 0) || n->input >= i)
    bad(r, "a node's input is out of range");
  if (!r->bad && n->input >= 0 && g->nodes[n->input].kind == CK_NODE_SINK)
    bad(r, "a node reads a sink");
  int in_cols = n->input >= 0 && !r->bad ? g->nodes[n->input].out_schema.ncols : 0;
  if (n->key_cols) check_cols(r, n->key_cols, n->nkeys, 0, in_cols);
  switch (n->kind) {
    case CK_NODE_SOURCE:
    case CK_NODE_SINK: return get_conn(r, n, in_cols, err);
    case CK_NODE_CALC: {
      ck_calc_spec_t *c = &n->u.calc;
      c->filter = get_opt_expr(r, in_cols);
      c->nexprs = get_count(r, 20, false);
      if (c->nexprs != n->out_schema.ncols) bad(r, "a calc's expressions do not fit its output");
      c->exprs = ck_arena_zalloc(r->arena, sizeof *c->exprs * (size_t)(c->nexprs + 1));
      for (int e = 0; e < c->nexprs && !r->bad; e++) c->exprs[e] = get_expr(r, in_cols);
      return 0;
    }
    case CK_NODE_AGG: {
      ck_agg_spec_t *a = &n->u.agg;
      a->key_cols = get_ints(r, &a->nkeys);
      if (a->key_cols) check_cols(r, a->key_cols, a->nkeys, 0, in_cols);
      a->ncalls = get_count(r, 12, false);
      a->calls = ck_arena_zalloc(r->arena, sizeof *a->calls * (size_t)(a->ncalls + 1));
      for (int k = 0; k < a->ncalls && !r->bad; k++) {
        ck_agg_call_t *call = &a->calls[k];
        uint8_t fn = get_u8(r);
        if (fn > CK_AGG_FN_LAST) bad(r, "an aggregate function is out of range");
        call->fn = (ck_agg_fn_t)fn;
        call->distinct = get_bool(r);
        call->arg_col = get_i32(r);
        if (call->arg_col < -1 || call->arg_col >= in_cols)
          bad(r, "a column number is out of range");
        call->arg_type = get_type(r);
        call->result_type = get_type(r);
        if (call->fn == CK_AGG_LISTAGG) call->sep = get_str(r, NULL);
        if (call->fn == CK_AGG_UDF && !r->bad) get_agg_udf(r, call);
      }
      uint8_t wk = get_u8(r);
      if (wk > CK_WIN_CUMULATE) bad(r, "a window kind is out of range");
      a->window.kind = (ck_win_kind_t)wk;
      a->window.size = get_i64(r);
      a->window.slide = get_i64(r);
      a->window.gap = get_i64(r);
      a->window.step = get_i64(r);
      a->window.time_col = get_i32(r);
      if (a->window.kind && (a->window.time_col < 0 || a->window.time_col >= in_cols))
        bad(r, "a window's time column is out of range");
      a->allowed_lateness_ms = get_i64(r);
      a->having = get_opt_expr(r, n->out_schema.ncols);
      return 0;
    }
  }
  return 0;
}

static int decode(const void *data, size_t len, bool masked_ok, ck_graph_t **out,
                  ck_error_t *err);

int ck_plan_decode(const void *data, size_t len, ck_graph_t **out, ck_error_t *err) {
  return decode(data, len, false, out, err);
}

int ck_plan_decode_masked(const void *data, size_t len, ck_graph_t **out, ck_error_t *err) {
  return decode(data, len, true, out, err);
}

static int decode(const void *data, size_t len, bool masked_ok, ck_graph_t **out,
                  ck_error_t *err) {
  *out = NULL;
  ck_graph_t *g = ck_calloc(1, sizeof *g);
  ck_arena_init(&g->arena, 0);
  rd_t r = {data, len, 0, false, NULL, &g->arena, err};
  ck_plan_t carried = {0}, built = {0};
  int rc = 0;
  const uint8_t *magic = take(&r, 4);
  if (magic && memcmp(magic, MAGIC, 4)) bad(&r, "it does not start with CKJG");
  uint32_t version = get_u32(&r), flags = get_u32(&r);
  if (!r.bad && version != CK_PLAN_WIRE_VERSION) bad(&r, "its version is not 1");
  if (!r.bad && flags && !(masked_ok && flags == CK_PLAN_WIRE_REDACT))
    bad(&r, "it is a masked copy (credentials redacted), not a runnable plan");
  g->max_parallelism = get_i32(&r);
  if (!r.bad && (g->max_parallelism < 1 || g->max_parallelism > 32768))
    bad(&r, "its max_parallelism is out of range");
  g->nnodes = get_count(&r, 24, false);
  if (!r.bad && g->nnodes == 0) bad(&r, "it has no nodes");
  g->nodes = ck_arena_zalloc(&g->arena, sizeof *g->nodes * (size_t)(g->nnodes + 1));
  for (int i = 0; i < g->nnodes && !r.bad && !rc; i++) rc = get_node(&r, g, i, err);
  if (!rc && !r.bad) {
    carried.nsegs = get_count(&r, 24, false);
    carried.segs = ck_calloc((size_t)carried.nsegs + 1, sizeof *carried.segs);
    for (int s = 0; s < carried.nsegs && !r.bad; s++) {
      ck_plan_seg_t *seg = &carried.segs[s];
      seg->first = get_i32(&r);
      seg->last = get_i32(&r);
      seg->parallelism = get_i32(&r);
      seg->down = get_i32(&r);
      seg->nsenders = get_i32(&r);
      seg->first_task = get_i32(&r);
    }
    carried.ntasks = get_i32(&r);
    carried.nslots = get_i32(&r);
    get_extensions(&r, g);
    if (!r.bad && r.off != r.n) bad(&r, "bytes follow its end");
  }
  if (!rc && !r.bad) {
    ck_plan_build(g, &built);
    carried.nsources = built.nsources; /* not carried: follow from the node kinds */
    carried.nsinks = built.nsinks;
    if (!ck_plan_eq(&carried, &built))
      bad(&r, "the physical plan it carries is not the one its graph makes (a different clink "
              "version?)");
  }
  if (!rc && r.bad)
    rc = ck_error_set(err, CK_EPROTO, "could not read the serialised job graph: %s (at byte "
                      "%zu of %zu)", r.why, r.off, len);
  ck_plan_fini(&carried);
  ck_plan_fini(&built);
  if (rc) {
    ck_graph_free(g);
    return rc;
  }
  *out = g;
  return 0;
}
