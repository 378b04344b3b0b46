/*
 * DESIGN: loading and calling user-defined functions in C (see udf.h for the contract).
 *
 * The registry is a list under one mutex; entries are allocated once and never freed, so an
 * expression tree may keep a pointer to one for as long as the process lives. Lookups compare
 * (folded name, symbol, path) strings: planning the same script twice, or decoding its plan
 * on a worker, finds the entry the first load made.
 *
 * Evaluation lends the function the engine's columns directly (ck_col_t is Arrow-shaped, the
 * ABI's layout). Only a validity bitmap is built when rows must be masked: rows the caller does
 * not evaluate (a CASE branch not taken) and, for a NULL_IN_NULL_OUT function, rows with a
 * NULL argument are given as NULL and their output is forced to NULL afterwards.
 */
#include "runtime/udf.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/bytes.h"

typedef struct reg_entry {
  struct reg_entry *next;
  ck_udf_t udf;
} reg_entry_t;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static reg_entry_t *reg_head;

static const struct {
  int32_t code;
  const char *sql;
  ck_type_id_t id;
} type_map[] = {
    {CLINK_UDF_BOOLEAN, "BOOLEAN", CK_T_BOOL},    {CLINK_UDF_INT, "INT", CK_T_INT32},
    {CLINK_UDF_BIGINT, "BIGINT", CK_T_INT64},     {CLINK_UDF_DOUBLE, "DOUBLE", CK_T_FLOAT64},
    {CLINK_UDF_VARCHAR, "VARCHAR", CK_T_STRING},  {CLINK_UDF_TIMESTAMP, "TIMESTAMP(3)", CK_T_TIMESTAMP},
};

const char *ck_udf_type_name(int32_t code) {
  for (size_t i = 0; i < sizeof type_map / sizeof type_map[0]; i++)
    if (type_map[i].code == code) return type_map[i].sql;
  return NULL;
}

static bool type_of(int32_t code, ck_type_t *out) {
  for (size_t i = 0; i < sizeof type_map / sizeof type_map[0]; i++)
    if (type_map[i].code == code) {
      *out = type_map[i].id == CK_T_TIMESTAMP ? ck_type_timestamp(3, 0) : CK_TYPE(type_map[i].id);
      return true;
    }
  return false;
}

static int load_fail(ck_error_t *err, int code, const char *name, const char *path,
                     const char *what) {
  return ck_error_set(err, code, "could not load function '%s' from library '%s': %s", name,
                      path, what);
}

/* Checks the descriptor and fills udf's types; the registry lock is held. */
static int check_desc(const char *name, const char *symbol, const char *path,
                      const clink_udf_t *d, ck_udf_t *udf, ck_error_t *err) {
  char why[256];
  if (d->abi_version != CLINK_UDF_ABI_VERSION) {
    snprintf(why, sizeof why, "its descriptor '%s' is for UDF ABI version %u, this clink "
             "implements version %d", symbol, d->abi_version, CLINK_UDF_ABI_VERSION);
    load_fail(err, CK_EUNSUPPORTED, name, path, why);
    ck_error_hint(err, "rebuild the library against this clink's include/clink/udf.h");
    return CK_EUNSUPPORTED;
  }
  if (d->struct_size < sizeof(clink_udf_t)) {
    snprintf(why, sizeof why, "its descriptor '%s' is %u bytes, version %d's is %zu", symbol,
             d->struct_size, CLINK_UDF_ABI_VERSION, sizeof(clink_udf_t));
    return load_fail(err, CK_EUNSUPPORTED, name, path, why);
  }
  if (!d->name || !ck_streq_i(d->name, name)) {
    snprintf(why, sizeof why, "its descriptor '%s' describes a function named '%.100s', not '%s'",
             symbol, d->name ? d->name : "(null)", name);
    load_fail(err, CK_EBIND, name, path, why);
    ck_error_hint(err, "name the function as its descriptor does, or export the right symbol");
    return CK_EBIND;
  }
  if (d->kind == CLINK_UDF_AGGREGATE) {
    const char *miss = !d->create ? "create" : !d->add ? "add" : !d->merge ? "merge"
                       : !d->get ? "get" : !d->serialise ? "serialise"
                       : !d->deserialise ? "deserialise" : NULL;
    if (miss) {
      snprintf(why, sizeof why, "its aggregate descriptor '%s' has no %s function", symbol, miss);
      return load_fail(err, CK_EUNSUPPORTED, name, path, why);
    }
    if (d->acc_size < 1 || d->acc_size > CLINK_UDF_MAX_ACC) {
      snprintf(why, sizeof why, "its aggregate descriptor '%s' declares an accumulator of %u "
               "bytes (1 to %d allowed)", symbol, d->acc_size, CLINK_UDF_MAX_ACC);
      return load_fail(err, CK_EUNSUPPORTED, name, path, why);
    }
    if (d->nargs != 1) {
      snprintf(why, sizeof why, "its aggregate descriptor '%s' declares %d arguments; an "
               "aggregate function takes one", symbol, d->nargs);
      return load_fail(err, CK_EUNSUPPORTED, name, path, why);
    }
    if (d->result_type == CLINK_UDF_VARCHAR) {
      snprintf(why, sizeof why, "its aggregate descriptor '%s' returns VARCHAR, which an "
               "aggregate function in C cannot yet", symbol);
      return load_fail(err, CK_EUNSUPPORTED, name, path, why);
    }
  } else if (d->kind != CLINK_UDF_SCALAR) {
    snprintf(why, sizeof why, "its descriptor '%s' has kind %d, which is neither scalar (1) nor "
             "aggregate (2)", symbol, d->kind);
    return load_fail(err, CK_EUNSUPPORTED, name, path, why);
  }
  if (d->kind == CLINK_UDF_SCALAR && !d->scalar) {
    snprintf(why, sizeof why, "its descriptor '%s' has no scalar function pointer", symbol);
    return load_fail(err, CK_EUNSUPPORTED, name, path, why);
  }
  if (d->nargs < 0 || d->nargs > CLINK_UDF_MAX_ARGS) {
    snprintf(why, sizeof why, "its descriptor '%s' declares %d arguments (0 to %d allowed)",
             symbol, d->nargs, CLINK_UDF_MAX_ARGS);
    return load_fail(err, CK_EUNSUPPORTED, name, path, why);
  }
  for (int i = 0; i < d->nargs; i++)
    if (!type_of(d->arg_types[i], &udf->args[i])) {
      snprintf(why, sizeof why, "its descriptor '%s' gives argument %d the type code %d, which "
               "is not one of include/clink/udf.h's", symbol, i + 1, d->arg_types[i]);
      return load_fail(err, CK_EUNSUPPORTED, name, path, why);
    }
  if (!type_of(d->result_type, &udf->result)) {
    snprintf(why, sizeof why, "its descriptor '%s' gives the result the type code %d, which is "
             "not one of include/clink/udf.h's", symbol, d->result_type);
    return load_fail(err, CK_EUNSUPPORTED, name, path, why);
  }
  udf->nargs = d->nargs;
  udf->desc = d;
  udf->aggregate = d->kind == CLINK_UDF_AGGREGATE;
  return 0;
}

int ck_udf_load(const char *name, const char *symbol, const char *path, const ck_udf_t **out,
                ck_error_t *err) {
  int rc = 0;
  pthread_mutex_lock(&reg_mu);
  for (reg_entry_t *e = reg_head; e; e = e->next)
    if (ck_streq_i(e->udf.name, name) && !strcmp(e->udf.symbol, symbol) &&
        !strcmp(e->udf.path, path)) {
      *out = &e->udf;
      goto done;
    }
  /* RTLD_NOW: a library with an unresolved symbol fails here, not in the middle of a job */
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    load_fail(err, CK_ENOTFOUND, name, path, why ? why : "it cannot be opened");
    ck_error_hint(err, "the path is read where the script is planned and, on a cluster, by "
                  "every worker: give an absolute path that exists on each machine");
    rc = CK_ENOTFOUND;
    goto done;
  }
  dlerror();
  const clink_udf_t *d = dlsym(lib, symbol);
  if (!d) {
    char why[256];
    snprintf(why, sizeof why, "it has no symbol '%s'", symbol);
    load_fail(err, CK_ENOTFOUND, name, path, why);
    ck_error_hint(err, "AS names the exported clink_udf_t descriptor (nm -D --defined-only "
                  "lists what the library exports)");
    rc = CK_ENOTFOUND;
    goto done; /* the library stays loaded: the registry never unloads */
  }
  reg_entry_t *e = ck_calloc(1, sizeof *e);
  if ((rc = check_desc(name, symbol, path, d, &e->udf, err))) {
    ck_free(e);
    goto done;
  }
  e->udf.name = ck_strdup(name);
  e->udf.symbol = ck_strdup(symbol);
  e->udf.path = ck_strdup(path);
  e->next = reg_head;
  reg_head = e;
  *out = &e->udf;
done:
  pthread_mutex_unlock(&reg_mu);
  return rc;
}

/* ---- evaluation ---- */

typedef struct put_ctx {
  ck_col_t *col;
  uint32_t next; /* rows put so far */
} put_ctx_t;

static bool utf8_ok(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    size_t k;
    unsigned min;
    if (c < 0x80) { i++; continue; }
    if ((c & 0xE0) == 0xC0) k = 1, min = 0x80, c &= 0x1F;
    else if ((c & 0xF0) == 0xE0) k = 2, min = 0x800, c &= 0x0F;
    else if ((c & 0xF8) == 0xF0) k = 3, min = 0x10000, c &= 0x07;
    else return false;
    for (size_t j = 1; j <= k; j++) {
      if (i + j >= n || (s[i + j] & 0xC0) != 0x80) return false;
      c = (c << 6) | (s[i + j] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return false;
    i += k + 1;
  }
  return true;
}

static int put_string(clink_udf_result_t *res, uint32_t row, const char *s, size_t n) {
  put_ctx_t *pc = res->engine;
  if (row < pc->next || row >= res->len || (n && !s) || n > INT32_MAX ||
      !utf8_ok((const unsigned char *)s, n))
    return -1;
  while (pc->next < row) {
    ck_col_append_str(pc->col, "", 0);
    pc->next++;
  }
  ck_col_append_str(pc->col, s, n);
  pc->next++;
  return 0;
}

int ck_udf_eval(const ck_udf_t *udf, const ck_col_t *const *args, size_t n, const uint8_t *live,
                ck_col_t *out, ck_error_t *err) {
  const clink_udf_t *d = udf->desc;
  size_t vb = (n + 7) / 8;
  bool strict = d->flags & CLINK_UDF_NULL_IN_NULL_OUT;
  /* rows forced to NULL: not live, or (strict) an argument is NULL */
  uint8_t *forced = NULL;
  if (live || strict) {
    forced = ck_calloc(vb ? vb : 1, 1);
    for (size_t i = 0; i < n; i++) {
      bool dead = live && !live[i];
      for (int a = 0; strict && !dead && a < udf->nargs; a++) dead = !ck_col_valid(args[a], i);
      if (dead) forced[i >> 3] |= (uint8_t)(1u << (i & 7));
    }
  }
  clink_udf_column_t cols[CLINK_UDF_MAX_ARGS];
  uint8_t *masks[CLINK_UDF_MAX_ARGS] = {0};
  for (int a = 0; a < udf->nargs; a++) {
    const ck_col_t *c = args[a];
    cols[a].type = d->arg_types[a];
    cols[a].len = (uint32_t)n;
    cols[a].values = c->values;
    cols[a].data = c->data ? c->data : "";
    cols[a].validity = c->validity;
    if (live) { /* dead rows read as NULL */
      masks[a] = ck_malloc(vb ? vb : 1);
      for (size_t b = 0; b < vb; b++)
        masks[a][b] = (uint8_t)((c->validity ? c->validity[b] : 0xff) & ~forced[b]);
      cols[a].validity = masks[a];
    }
  }
  ck_col_init(out, udf->result, n);
  put_ctx_t pc = {out, 0};
  uint8_t *valid = ck_malloc(vb ? vb : 1);
  memset(valid, 0xff, vb ? vb : 1);
  char msg[512] = "";
  clink_udf_result_t res = {
      .type = d->result_type,
      .len = (uint32_t)n,
      .validity = valid,
      .values = NULL,
      .put_string = put_string,
      .error = msg,
      .error_cap = sizeof msg,
      .engine = &pc,
  };
  if (udf->result.id != CK_T_STRING) {
    memset(out->values, 0, n * ck_type_width(udf->result));
    res.values = out->values;
  }
  int rc = 0;
  int frc = d->scalar(cols, udf->nargs, &res);
  msg[sizeof msg - 1] = 0;
  if (frc) {
    rc = ck_error_set(err, CK_EEVAL, "function %s failed: %s", udf->name,
                      msg[0] ? msg : "it returned an error without a message");
    ck_error_detail(err, "from symbol '%s' of library '%s'", udf->symbol, udf->path);
    goto done;
  }
  if (udf->result.id == CK_T_STRING) {
    while (pc.next < n) {
      ck_col_append_str(out, "", 0);
      pc.next++;
    }
  } else {
    out->len = n;
  }
  /* NULLs: the function's bits, and the forced rows */
  bool any_null = false;
  for (size_t b = 0; b < vb; b++) {
    if (forced) valid[b] = (uint8_t)(valid[b] & ~forced[b]);
    size_t rows = n - b * 8 < 8 ? n - b * 8 : 8;
    if ((valid[b] & ((1u << rows) - 1)) != ((1u << rows) - 1)) any_null = true;
  }
  if (any_null) {
    if (!out->validity) {
      out->validity = ck_malloc((out->cap + 7) / 8);
      memset(out->validity, 0xff, (out->cap + 7) / 8);
    }
    memcpy(out->validity, valid, vb);
    if (n & 7) out->validity[n >> 3] |= (uint8_t)(0xffu << (n & 7));
  }
  if (udf->result.id == CK_T_FLOAT64)
    for (size_t i = 0; i < n; i++)
      if (ck_col_valid(out, i) && !isfinite(ck_col_f64(out, i))) {
        rc = ck_error_set(err, CK_EEVAL, "function %s returned a value that is not finite in "
                          "row %zu of a batch", udf->name, i + 1);
        ck_error_detail(err, "no value in clink is ever Infinity or NaN; from symbol '%s' of "
                        "library '%s'", udf->symbol, udf->path);
        goto done;
      }
  if (udf->result.id == CK_T_BOOL)
    for (size_t i = 0; i < n; i++) ((uint8_t *)out->values)[i] = ((uint8_t *)out->values)[i] != 0;
done:
  if (rc) ck_col_fini(out), ck_col_init(out, udf->result, 0);
  for (int a = 0; a < udf->nargs; a++) ck_free(masks[a]);
  ck_free(forced);
  ck_free(valid);
  return rc;
}

/* ---- aggregates: one value at a time, on the aggregation operator's thread ---- */

static int agg_fail(const ck_udf_t *udf, const char *what, const char *msg, ck_error_t *err) {
  ck_error_set(err, CK_EEVAL, "aggregate function %s failed in %s: %s", udf->name, what,
               msg[0] ? msg : "it returned an error without a message");
  ck_error_detail(err, "from symbol '%s' of library '%s'", udf->symbol, udf->path);
  return CK_EEVAL;
}

/* The state keeps accumulators packed (unaligned): each call sees an aligned copy, written
 * back after it. */
typedef struct aligned_acc {
  _Alignas(16) unsigned char b[CLINK_UDF_MAX_ACC];
} aligned_acc_t;

void ck_udf_agg_create(const ck_udf_t *udf, void *acc) {
  aligned_acc_t a;
  memset(&a, 0, sizeof a);
  udf->desc->create(a.b);
  memcpy(acc, a.b, udf->desc->acc_size);
}

void ck_udf_agg_destroy(const ck_udf_t *udf, void *acc) {
  if (!udf->desc->destroy) return;
  aligned_acc_t a;
  memcpy(a.b, acc, udf->desc->acc_size);
  udf->desc->destroy(a.b);
}

int ck_udf_agg_add(const ck_udf_t *udf, void *acc, const ck_value_t *v, ck_error_t *err) {
  int64_t i64 = 0;
  int32_t i32 = 0, off[2] = {0, 0};
  double f = 0;
  uint8_t b = 0;
  clink_udf_column_t col = {udf->desc->arg_types[0], 1, NULL, NULL, ""};
  switch (udf->args[0].id) {
    case CK_T_BOOL: b = v->v.b; col.values = &b; break;
    case CK_T_INT32: i32 = (int32_t)v->v.i; col.values = &i32; break;
    case CK_T_FLOAT64: f = v->v.f; col.values = &f; break;
    case CK_T_STRING:
      off[1] = (int32_t)v->v.s.len;
      col.values = off;
      col.data = v->v.s.ptr ? v->v.s.ptr : "";
      break;
    default: i64 = v->v.i; col.values = &i64; break;
  }
  aligned_acc_t a;
  memcpy(a.b, acc, udf->desc->acc_size);
  int frc = udf->desc->add(a.b, &col, 0);
  memcpy(acc, a.b, udf->desc->acc_size);
  if (frc) return agg_fail(udf, "add", "", err);
  return 0;
}

int ck_udf_agg_merge(const ck_udf_t *udf, void *acc, const void *other, ck_error_t *err) {
  aligned_acc_t a, o;
  memcpy(a.b, acc, udf->desc->acc_size);
  memcpy(o.b, other, udf->desc->acc_size);
  int frc = udf->desc->merge(a.b, o.b);
  memcpy(acc, a.b, udf->desc->acc_size);
  if (frc) return agg_fail(udf, "merge", "", err);
  return 0;
}

int ck_udf_agg_get(const ck_udf_t *udf, const void *acc, ck_value_t *out, ck_error_t *err) {
  uint8_t valid = 0xff;
  union { int64_t i; int32_t i32; double f; uint8_t b; } val;
  memset(&val, 0, sizeof val);
  char msg[512] = "";
  clink_udf_result_t res = {udf->desc->result_type, 1, &valid, &val, NULL, msg,
                            sizeof msg, NULL};
  aligned_acc_t a;
  memcpy(a.b, acc, udf->desc->acc_size);
  if (udf->desc->get(a.b, &res, 0)) {
    msg[sizeof msg - 1] = 0;
    return agg_fail(udf, "get", msg, err);
  }
  memset(out, 0, sizeof *out);
  out->type = udf->result;
  out->is_null = !(valid & 1);
  switch (udf->result.id) {
    case CK_T_BOOL: out->v.b = val.b != 0; break;
    case CK_T_INT32: out->v.i = val.i32; break;
    case CK_T_FLOAT64:
      out->v.f = val.f;
      if (!out->is_null && !isfinite(val.f)) {
        ck_error_set(err, CK_EEVAL, "aggregate function %s returned a value that is not finite",
                     udf->name);
        ck_error_detail(err, "no value in clink is ever Infinity or NaN; from symbol '%s' of "
                        "library '%s'", udf->symbol, udf->path);
        return CK_EEVAL;
      }
      break;
    default: out->v.i = val.i; break;
  }
  return 0;
}

int ck_udf_agg_serialise(const ck_udf_t *udf, const void *acc, ck_buf_t *out, ck_error_t *err) {
  size_t cap = udf->desc->acc_size * 2 + 64;
  for (int tries = 0; tries < 2; tries++) {
    char *tmp = ck_malloc(cap);
    aligned_acc_t a;
    memcpy(a.b, acc, udf->desc->acc_size);
    int64_t n = udf->desc->serialise(a.b, tmp, cap);
    if (n >= 0 && (uint64_t)n <= cap && n <= UINT32_MAX) {
      ck_buf_put_le32(out, (uint32_t)n);
      ck_buf_append(out, tmp, (size_t)n);
      ck_free(tmp);
      return 0;
    }
    ck_free(tmp);
    if (n >= 0 || -n > (int64_t)1 << 30) break;
    cap = (size_t)-n;
  }
  ck_error_set(err, CK_EEVAL, "aggregate function %s could not serialise its accumulator",
               udf->name);
  ck_error_detail(err, "from symbol '%s' of library '%s'", udf->symbol, udf->path);
  return CK_EEVAL;
}

int ck_udf_agg_deserialise(const ck_udf_t *udf, void *acc, const void *p, size_t n,
                           ck_error_t *err) {
  aligned_acc_t a;
  memset(&a, 0, sizeof a);
  udf->desc->create(a.b);
  int frc = udf->desc->deserialise(a.b, p, n);
  memcpy(acc, a.b, udf->desc->acc_size);
  if (frc) {
    ck_udf_agg_destroy(udf, acc);
    memset(acc, 0, udf->desc->acc_size);
    ck_error_set(err, CK_ESTATE, "aggregate function %s could not read its accumulator from the "
                 "checkpoint (%zu bytes)", udf->name, n);
    ck_error_detail(err, "from symbol '%s' of library '%s'", udf->symbol, udf->path);
    return CK_ESTATE;
  }
  return 0;
}
