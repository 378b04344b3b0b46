/*
 * DESIGN: connector='datagen' — a deterministic, seeded row generator (a source only).
 *
 * Every value is a pure function of (seed, row index, column): random draws come from a
 * counter-based hash (splitmix64 finaliser over seed, row and column), never from a stateful
 * generator, so the output does not depend on parallelism, batch sizes, pacing or restarts.
 * With parallelism P, subtask s generates the global row indices s, s+P, s+2P, … — one
 * partition per subtask — so the union over subtasks is exactly the rows a parallelism-1
 * job makes. `rows` bounds the total (the source then ends); absent, it runs forever.
 *
 * Per-column generators come from options fields.<column>.<setting>: kind sequence (start +
 * index*step, wrapping after end when end is given; without an end a sequence that leaves its
 * column's type is refused at plan time when `rows` bounds it, and stops the job at the first
 * value that does not fit otherwise — it never wraps silently), random (uniform in [start, end]) or
 * choice (one of a comma-separated list), plus null_rate and, for random strings, length.
 * They are parsed and checked once (at plan time by check(), again at open).
 *
 * Pacing (rows_per_second, a rate for the whole job): subtask s owes its j-th row (counting
 * from open or restore) at t0 + j*P/rate. poll() sleeps until the next row is due, at most its
 * timeout or until the engine wakes it (ctx.wake_fd: a checkpoint trigger), and never spins;
 * then it returns every row already due (up to max_rows).
 *
 * Snapshot (version 1): u8 version, uvarint parallelism, uvarint next global row index.
 *
 * Threads: each instance belongs to one subtask's thread.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/arena.h"
#include "base/bytes.h"
#include "base/hash.h"
#include "base/time.h"
#include "connectors/connectors.h"
#include "connectors/format.h"
#include "connectors/format_impl.h"
#include "connectors/util.h"
#include "runtime/connector.h"

#define DG_SNAP_VERSION 1
#define DG_MAX_LENGTH 65536

static const ck_opt_def_t datagen_options[] = {
    {"rows", CK_OPT_INT, "-1", NULL, false,
     "total rows to generate across all subtasks; the source ends after them (-1: unbounded)"},
    {"rows_per_second", CK_OPT_INT, "0", NULL, false,
     "rate limit for the whole source, shared by its subtasks (0: as fast as possible); "
     "pacing sleeps, it never spins"},
    {"seed", CK_OPT_INT, "0", NULL, false,
     "seed of the random generators: row i is a pure function of (seed, i), so output is "
     "identical across runs, restarts and parallelism"},
    {"fields.", CK_OPT_STRING, NULL, NULL, false,
     "per-column generator settings, fields.<column>.<setting>; the settings follow"},
    {"fields.<column>.kind", CK_OPT_ENUM, NULL, "sequence|random|choice", false,
     "sequence: start + index * step; random: uniform in [start, end]; choice: one of values. "
     "Default: sequence for TIMESTAMP columns, random for the others"},
    {"fields.<column>.start", CK_OPT_STRING, "0", NULL, false,
     "first value of a sequence, or lower bound of random values, in the column's type "
     "(TIMESTAMP: epoch milliseconds; VARCHAR sequences count from it)"},
    {"fields.<column>.end", CK_OPT_STRING, NULL, NULL, false,
     "upper bound, inclusive, of random values (default 1000); a sequence with an end wraps "
     "back to start after it. A sequence without one never wraps at its column's type: it is "
     "refused when 'rows' takes it past the type (an INT from 0 over 3000000000 rows), and "
     "otherwise the job stops at the first value that does not fit"},
    {"fields.<column>.step", CK_OPT_STRING, "1", NULL, false, "increment of a sequence"},
    {"fields.<column>.values", CK_OPT_STRING, NULL, NULL, false,
     "kind choice: comma-separated values, each parsed as the column's type (spaces around a "
     "value are dropped)"},
    {"fields.<column>.length", CK_OPT_INT, "10", NULL, false,
     "length of random VARCHAR values (lower-case letters and digits)"},
    {"fields.<column>.null_rate", CK_OPT_STRING, "0", NULL, false,
     "fraction of rows, 0 to 1, in which the column is NULL"},
    {NULL, 0, NULL, NULL, false, NULL},
};

static const char *const dg_settings[] = {"kind", "start", "end", "step", "values", "length",
                                          "null_rate"};

/* ============================================================ generator specs ====== */

typedef enum dg_kind { DG_SEQUENCE, DG_RANDOM, DG_CHOICE } dg_kind_t;

typedef struct dg_gen {
  dg_kind_t kind;
  ck_type_t type;
  ck_i128 istart, iend, istep; /* INT, BIGINT, TIMESTAMP, DECIMAL (unscaled), VARCHAR sequence */
  double fstart, fend, fstep;  /* FLOAT, DOUBLE */
  bool has_end;
  int64_t length;
  double null_rate;
  int nvalues;
  ck_value_t *values; /* choice; strings point into the source's arena */
  const char *name;   /* the column's (the schema's string) */
} dg_gen_t;

typedef struct dg_spec {
  int ncols;
  dg_gen_t *gens;
  int64_t rows, rps;
  uint64_t seed;
} dg_spec_t;

/* Parses one number of the column's kind: into *i (integer-like, DECIMAL unscaled) or *f. */
static bool parse_num(ck_type_t type, const char *s, ck_i128 *i, double *f) {
  char *end;
  if (type.id == CK_T_FLOAT32 || type.id == CK_T_FLOAT64) {
    *f = strtod(s, &end);
    return *s && *end == 0 && isfinite(*f) && (type.id == CK_T_FLOAT64 || isfinite((float)*f));
  }
  if (type.id == CK_T_DECIMAL) return ck_decimal_parse(s, strlen(s), type.precision, type.scale, i);
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || errno) return false;
  if (type.id == CK_T_INT32 && (v < INT32_MIN || v > INT32_MAX)) return false;
  *i = v;
  return true;
}

/* Parses a single choice value into v (strings copied into arena). */
static bool parse_value(ck_type_t type, const char *s, size_t n, ck_arena_t *arena,
                        ck_value_t *v) {
  memset(v, 0, sizeof *v);
  v->type = type;
  char tmp[128];
  if (type.id == CK_T_STRING) {
    v->v.s.ptr = ck_arena_strndup(arena, s, n);
    v->v.s.len = n;
    return true;
  }
  if (n >= sizeof tmp) return false;
  memcpy(tmp, s, n);
  tmp[n] = 0;
  if (type.id == CK_T_BOOL) {
    if (ck_streq_i(tmp, "true")) v->v.b = true;
    else if (!ck_streq_i(tmp, "false")) return false;
    return true;
  }
  ck_i128 i = 0;
  double f = 0;
  if (!parse_num(type, tmp, &i, &f)) return false;
  if (type.id == CK_T_DECIMAL) v->v.dec = i;
  else if (type.id == CK_T_FLOAT32 || type.id == CK_T_FLOAT64) v->v.f = f;
  else v->v.i = (int64_t)i;
  return true;
}

/* True when a generated integer-like value fits its column: INT, BIGINT/TIMESTAMP (and VARCHAR
 * sequences, which count in BIGINT), DECIMAL's precision. */
static bool fits_type(const dg_gen_t *g, ck_i128 v) {
  switch (g->type.id) {
    case CK_T_INT32: return v >= INT32_MIN && v <= INT32_MAX;
    case CK_T_DECIMAL: {
      ck_i128 lim = ck_pow10_i128(g->type.precision);
      return v < lim && v > -lim;
    }
    default: return v >= INT64_MIN && v <= INT64_MAX;
  }
}

/* A floating-point value fits its column: finite, and within FLOAT's range for FLOAT. */
static bool fits_float(const dg_gen_t *g, double d) {
  return isfinite(d) && (g->type.id != CK_T_FLOAT32 || isfinite((float)d));
}

/* Value `row` of an integer-like sequence: false when it leaves 128 bits. */
static bool sequence_i128(const dg_gen_t *g, uint64_t row, ck_i128 *out) {
  ck_i128 idx = (ck_i128)row;
  if (g->has_end) {
    ck_i128 n = (g->iend - g->istart) / g->istep + 1;
    idx %= n;
  }
  return !__builtin_mul_overflow(idx, g->istep, out) &&
         !__builtin_add_overflow(*out, g->istart, out);
}

static double sequence_f64(const dg_gen_t *g, uint64_t row) {
  double idx = (double)row;
  if (g->has_end) idx = fmod(idx, floor((g->fend - g->fstart) / g->fstep) + 1);
  return g->fstart + idx * g->fstep;
}

/* Parses and checks every generator. Strings go into arena (NULL at plan time: a throwaway
 * arena is used). */
static int parse_spec(const ck_schema_t *schema, const ck_options_t *opts, ck_arena_t *arena,
                      dg_spec_t *spec, ck_error_t *err) {
  memset(spec, 0, sizeof *spec);
  spec->rows = ck_opt_int(opts, datagen_options, "rows");
  spec->rps = ck_opt_int(opts, datagen_options, "rows_per_second");
  spec->seed = (uint64_t)ck_opt_int(opts, datagen_options, "seed");
  if (spec->rows < -1)
    return ck_error_set(err, CK_EOPTION, "datagen option 'rows' must be -1 or at least 0, not "
                        "%lld", (long long)spec->rows);
  if (spec->rps < 0)
    return ck_error_set(err, CK_EOPTION, "datagen option 'rows_per_second' must be at least 0, "
                        "not %lld", (long long)spec->rps);
  /* every fields.* key must name a column and a setting */
  for (int k = 0; opts && k < opts->n; k++) {
    const char *key = opts->keys[k];
    if (strncmp(key, "fields.", 7) != 0) continue;
    const char *col = key + 7, *dot = strrchr(col, '.');
    if (!dot || dot == col)
      return ck_error_set(err, CK_EOPTION, "datagen option '%s' must look like "
                          "fields.<column>.<setting>", key);
    const char *setting = dot + 1;
    bool known = false;
    for (size_t i = 0; i < CK_ARRAY_LEN(dg_settings); i++)
      known |= strcmp(setting, dg_settings[i]) == 0;
    if (!known) {
      ck_error_set(err, CK_EOPTION, "unknown datagen setting '%s' in option '%s'", setting, key);
      const char *close = ck_closest(setting, dg_settings, CK_ARRAY_LEN(dg_settings));
      if (close) ck_error_hint(err, "did you mean 'fields.%.*s.%s'?", (int)(dot - col), col, close);
      return CK_EOPTION;
    }
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(dot - col), col);
    if (ck_schema_find(schema, name) < 0) {
      ck_error_set(err, CK_EOPTION, "datagen option '%s' names no column of the table", key);
      const char *close = ck_closest(name, schema->names, (size_t)schema->ncols);
      if (close) ck_error_hint(err, "did you mean column '%s'?", close);
      return CK_EOPTION;
    }
  }
  spec->ncols = schema->ncols;
  spec->gens = ck_calloc((size_t)(schema->ncols ? schema->ncols : 1), sizeof *spec->gens);
  for (int c = 0; c < schema->ncols; c++) {
    dg_gen_t *g = &spec->gens[c];
    const char *col = schema->names[c];
    ck_type_t type = schema->types[c];
    char tname[40];
    g->type = type;
    g->name = col;
    g->kind = type.id == CK_T_TIMESTAMP ? DG_SEQUENCE : DG_RANDOM;
    /* settings may be spelt with the column name in any case */
    const char *kind = NULL, *start = NULL, *end = NULL, *step = NULL, *values = NULL,
               *length = NULL, *null_rate = NULL;
    for (int k = 0; opts && k < opts->n; k++) {
      const char *ok = opts->keys[k];
      if (strncmp(ok, "fields.", 7) != 0) continue;
      const char *dot = strrchr(ok + 7, '.');
      if (!dot || (size_t)(dot - ok - 7) != strlen(col) ||
          !ck_str_ieq((ck_str_t){ok + 7, strlen(col)}, ck_str_of(col)))
        continue;
      const char *s = dot + 1, *v = opts->values[k];
      if (!strcmp(s, "kind")) kind = v;
      else if (!strcmp(s, "start")) start = v;
      else if (!strcmp(s, "end")) end = v;
      else if (!strcmp(s, "step")) step = v;
      else if (!strcmp(s, "values")) values = v;
      else if (!strcmp(s, "length")) length = v;
      else if (!strcmp(s, "null_rate")) null_rate = v;
    }
    if (kind) {
      if (!strcmp(kind, "sequence")) g->kind = DG_SEQUENCE;
      else if (!strcmp(kind, "random")) g->kind = DG_RANDOM;
      else if (!strcmp(kind, "choice")) g->kind = DG_CHOICE;
      else
        return ck_error_set(err, CK_EOPTION, "datagen option 'fields.%s.kind' must be one of "
                            "sequence|random|choice, not '%s'", col, kind);
    }
    ck_type_name(type, tname, sizeof tname);
    if (type.id == CK_T_NULL)
      return ck_error_set(err, CK_EUNSUPPORTED, "datagen cannot generate column '%s' of type %s",
                          col, tname);
    g->null_rate = 0;
    if (null_rate) {
      char *e;
      g->null_rate = strtod(null_rate, &e);
      if (!*null_rate || *e || !(g->null_rate >= 0 && g->null_rate <= 1))
        return ck_error_set(err, CK_EOPTION, "datagen option 'fields.%s.null_rate' must be a "
                            "number from 0 to 1, not '%s'", col, null_rate);
    }
    g->length = 10;
    if (length) {
      char *e;
      g->length = strtoll(length, &e, 10);
      if (!*length || *e || g->length < 0 || g->length > DG_MAX_LENGTH)
        return ck_error_set(err, CK_EOPTION, "datagen option 'fields.%s.length' must be an "
                            "integer from 0 to %d, not '%s'", col, DG_MAX_LENGTH, length);
    }
    if (g->kind == DG_CHOICE) {
      if (!values || !*values)
        return ck_error_set(err, CK_EOPTION, "datagen column '%s' has kind choice but no option "
                            "'fields.%s.values'", col, col);
      int n = 1;
      for (const char *p = values; *p; p++) n += *p == ',';
      g->values = ck_calloc((size_t)n, sizeof *g->values);
      for (const char *p = values;;) {
        size_t len = strcspn(p, ",");
        const char *s = p;
        size_t sn = len;
        while (sn && *s == ' ') s++, sn--;
        while (sn && s[sn - 1] == ' ') sn--;
        if (!parse_value(type, s, sn, arena, &g->values[g->nvalues]))
          return ck_error_set(err, CK_EOPTION, "datagen option 'fields.%s.values': '%.*s' is not "
                              "a value of type %s", col, (int)sn, s, tname);
        g->nvalues++;
        if (!p[len]) break;
        p += len + 1;
      }
      continue;
    }
    if (type.id == CK_T_BOOL) continue; /* random: a coin; sequence: false, true, false, … */
    ck_type_t numtype = type.id == CK_T_STRING ? CK_TYPE(CK_T_INT64) : type;
    char what[64];
    if (type.id == CK_T_STRING) snprintf(what, sizeof what, "an integer");
    else snprintf(what, sizeof what, "a value of type %s", tname);
    if (type.id == CK_T_STRING && g->kind == DG_RANDOM) continue; /* length only */
    g->fstep = 1;
    g->istep = type.id == CK_T_DECIMAL ? ck_pow10_i128(type.scale) : 1;
    g->fend = 1000;
    g->iend = type.id == CK_T_DECIMAL ? 1000 * ck_pow10_i128(type.scale) : 1000;
    if (start && !parse_num(numtype, start, &g->istart, &g->fstart))
      return ck_error_set(err, CK_EOPTION, "datagen option 'fields.%s.start' must be %s, not "
                          "'%s'", col, what, start);
    if (end && !parse_num(numtype, end, &g->iend, &g->fend))
      return ck_error_set(err, CK_EOPTION, "datagen option 'fields.%s.end' must be %s, not '%s'",
                          col, what, end);
    if (step && !parse_num(numtype, step, &g->istep, &g->fstep))
      return ck_error_set(err, CK_EOPTION, "datagen option 'fields.%s.step' must be %s, not "
                          "'%s'", col, what, step);
    g->has_end = end != NULL;
    bool flt = type.id == CK_T_FLOAT32 || type.id == CK_T_FLOAT64;
    if (g->kind == DG_RANDOM && (flt ? g->fstart > g->fend : g->istart > g->iend))
      return ck_error_set(err, CK_EOPTION, "datagen column '%s': start %s is above end %s", col,
                          start ? start : "0", end ? end : "1000");
    if (g->kind == DG_SEQUENCE && (flt ? g->fstep == 0 : g->istep == 0))
      return ck_error_set(err, CK_EOPTION, "datagen option 'fields.%s.step' must not be 0", col);
    if (g->kind == DG_SEQUENCE && g->has_end &&
        (flt ? (g->fend - g->fstart) / g->fstep < 0 : (g->iend - g->istart) / g->istep < 0))
      return ck_error_set(err, CK_EOPTION, "datagen column '%s': a sequence from %s by %s never "
                          "reaches end %s", col, start ? start : "0", step ? step : "1", end);
    /* A bounded sequence without an end must fit its column to its last row (with an end it
     * stays between start and end, which were parsed in the column's type). */
    if (g->kind == DG_SEQUENCE && !g->has_end && spec->rows > 0) {
      uint64_t last = (uint64_t)spec->rows - 1;
      ck_i128 v = 0;
      double d = 0;
      bool ok = flt ? fits_float(g, d = sequence_f64(g, last))
                    : sequence_i128(g, last, &v) && fits_type(g, v);
      if (!ok) {
        char lastv[64];
        if (flt) {
          snprintf(lastv, sizeof lastv, "%g", d);
        } else if (!sequence_i128(g, last, &v)) {
          snprintf(lastv, sizeof lastv, "a value past 128 bits");
        } else {
          ck_buf_t b;
          ck_buf_init(&b);
          ck_decimal_format(v, type.id == CK_T_DECIMAL ? type.scale : 0, &b);
          snprintf(lastv, sizeof lastv, "%s", b.data);
          ck_buf_fini(&b);
        }
        ck_error_set(err, CK_EOPTION, "datagen column '%s': a sequence from %s by %s over %lld "
                     "rows reaches %s, which does not fit %s", col, start ? start : "0",
                     step ? step : "1", (long long)spec->rows, lastv, tname);
        ck_error_hint(err, "declare the column as a wider type, lower 'rows', or give the "
                      "sequence an end ('fields.%s.end') to wrap at", col);
        return CK_EOPTION;
      }
    }
  }
  return 0;
}

static void free_spec(dg_spec_t *spec) {
  for (int c = 0; c < spec->ncols; c++) ck_free(spec->gens[c].values);
  ck_free(spec->gens);
  spec->gens = NULL;
}

static int datagen_check(const ck_schema_t *schema, const ck_options_t *opts, bool as_sink,
                         ck_error_t *err) {
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  dg_spec_t spec;
  int rc = parse_spec(schema, opts, &arena, &spec, err);
  free_spec(&spec);
  ck_arena_fini(&arena);
  return rc;
}

/* ================================================================= generation ====== */

static inline uint64_t draw(uint64_t seed, uint64_t row, uint64_t col, uint64_t k) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL ^ ck_hash_u64(row + 0x632BE59BD9B4E019ULL);
  x ^= ck_hash_u64((col << 32 | k) + 0x8CB92BA72F3D8DD7ULL);
  return ck_hash_u64(x);
}

static inline double unit(uint64_t r) { return (double)(r >> 11) * 0x1.0p-53; } /* [0, 1) */

/* Uniform in [lo, hi]. */
static ck_i128 uniform_i128(uint64_t seed, uint64_t row, uint64_t col, ck_i128 lo, ck_i128 hi) {
  unsigned __int128 range = (unsigned __int128)(hi - lo) + 1;
  uint64_t r = draw(seed, row, col, 1);
  if (range == 0) /* the whole 128-bit space: cannot happen for 38-digit decimals */
    return lo + (ck_i128)r;
  if (range <= ((unsigned __int128)1 << 64))
    return lo + (ck_i128)(((unsigned __int128)r * range) >> 64);
  unsigned __int128 big = ((unsigned __int128)r << 64) | draw(seed, row, col, 2);
  return lo + (ck_i128)(big % range);
}

/* The sequence's value at `row` does not fit its column (unbounded, or restored past its
 * planned rows): the job stops rather than wrap. */
static int gen_overflow(const dg_gen_t *g, uint64_t row, ck_error_t *err) {
  char tname[40];
  ck_type_name(g->type, tname, sizeof tname);
  ck_error_set(err, CK_EEVAL, "could not generate row %llu of datagen column '%s': its sequence "
               "leaves %s there", (unsigned long long)row, g->name, tname);
  ck_error_hint(err, "declare the column as a wider type, or give the sequence an end "
                "('fields.%s.end') to wrap at", g->name);
  return CK_EEVAL;
}

static int gen_value(const dg_spec_t *spec, int c, uint64_t row, ck_col_t *col, char *tmp,
                     ck_error_t *err) {
  const dg_gen_t *g = &spec->gens[c];
  uint64_t seed = spec->seed;
  if (g->null_rate > 0 && unit(draw(seed, row, (uint64_t)c, 0x6e756c6c)) < g->null_rate) {
    ck_col_append_null(col);
    return 0;
  }
  if (g->kind == DG_CHOICE) {
    uint64_t i = (uint64_t)(((unsigned __int128)draw(seed, row, (uint64_t)c, 1) *
                             (uint64_t)g->nvalues) >> 64);
    ck_col_append_value(col, &g->values[i]);
    return 0;
  }
  switch (g->type.id) {
    case CK_T_BOOL:
      ck_col_append_bool(col, g->kind == DG_SEQUENCE
                                  ? (row & 1) != 0
                                  : (draw(seed, row, (uint64_t)c, 1) >> 63) != 0);
      return 0;
    case CK_T_FLOAT32:
    case CK_T_FLOAT64: {
      double d;
      if (g->kind == DG_SEQUENCE) {
        d = sequence_f64(g, row);
        if (!fits_float(g, d)) return gen_overflow(g, row, err);
      } else {
        double u = unit(draw(seed, row, (uint64_t)c, 1)), span = g->fend - g->fstart;
        if (isfinite(span)) d = g->fstart + u * span;
        else d = g->fstart * (1 - u) + g->fend * u; /* bounds wider than DOUBLE's range */
        if (!fits_float(g, d)) d = g->fend; /* FLOAT rounding up past FLT_MAX */
      }
      if (g->type.id == CK_T_FLOAT32) ck_col_append_f32(col, (float)d);
      else ck_col_append_f64(col, d);
      return 0;
    }
    case CK_T_STRING:
      if (g->kind == DG_SEQUENCE) {
        ck_i128 v;
        if (!sequence_i128(g, row, &v) || !fits_type(g, v)) return gen_overflow(g, row, err);
        int n = snprintf(tmp, 48, "%lld", (long long)(int64_t)v);
        ck_col_append_str(col, tmp, (size_t)n);
      } else {
        static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
        for (int64_t j = 0; j < g->length; j++) {
          uint64_t r = draw(seed, row, (uint64_t)c, 16 + (uint64_t)j);
          tmp[j] = alphabet[((unsigned __int128)r * 36) >> 64];
        }
        ck_col_append_str(col, tmp, (size_t)g->length);
      }
      return 0;
    default: break;
  }
  ck_i128 v;
  if (g->kind == DG_SEQUENCE) {
    if (!sequence_i128(g, row, &v) || !fits_type(g, v)) return gen_overflow(g, row, err);
  } else {
    v = uniform_i128(seed, row, (uint64_t)c, g->istart, g->iend);
  }
  switch (g->type.id) {
    case CK_T_INT32: ck_col_append_i32(col, (int32_t)(int64_t)v); break;
    case CK_T_INT64:
    case CK_T_TIMESTAMP: ck_col_append_i64(col, (int64_t)v); break;
    case CK_T_DECIMAL: ck_col_append_dec(col, v); break;
    default: ck_col_append_null(col); break;
  }
  return 0;
}

/* ==================================================================== source ====== */

typedef struct dg_src {
  dg_spec_t spec;
  ck_arena_t arena;
  uint64_t next;      /* next global row index this subtask makes */
  uint64_t stride;    /* parallelism */
  bool opened;
  bool has_pending;
  uint64_t pending;   /* restored before open */
  int64_t t0_ns;      /* pacing base */
  int64_t paced;      /* rows made since t0 */
  char *tmp;          /* random string scratch */
} dg_src_t;

static dg_src_t *dg_impl(ck_source_t *src) {
  if (!src->impl) {
    dg_src_t *dg = ck_calloc(1, sizeof *dg);
    ck_arena_init(&dg->arena, 4096);
    src->impl = dg;
  }
  return src->impl;
}

static int dg_open(ck_source_t *src, ck_error_t *err) {
  dg_src_t *dg = dg_impl(src);
  int rc = parse_spec(src->ctx.schema, src->ctx.options, &dg->arena, &dg->spec, err);
  if (rc) return rc;
  dg->stride = (uint64_t)(src->ctx.parallelism > 0 ? src->ctx.parallelism : 1);
  dg->next = dg->has_pending ? dg->pending : (uint64_t)src->ctx.subtask;
  dg->tmp = ck_malloc(DG_MAX_LENGTH + 64);
  dg->t0_ns = ck_mono_ns();
  dg->paced = 0;
  dg->opened = true;
  return 0;
}

static int dg_npartitions(ck_source_t *src) { return 1; }

static bool dg_exhausted(const dg_src_t *dg) {
  return dg->spec.rows >= 0 && dg->next >= (uint64_t)dg->spec.rows;
}

/* Rows owed by now under the rate limit (may be 0); *wait_ns until the next one. */
static int64_t dg_due(const dg_src_t *dg, int64_t *wait_ns) {
  int64_t now = ck_mono_ns();
  __int128 per_row_ns_num = (__int128)dg->stride * 1000000000; /* ns per row = this / rps */
  __int128 elapsed = now - dg->t0_ns;
  int64_t owed = (int64_t)(elapsed * dg->spec.rps / per_row_ns_num) + 1; /* row 0 at t0 */
  int64_t due = owed - dg->paced;
  if (due <= 0) {
    __int128 at = dg->t0_ns + (__int128)dg->paced * per_row_ns_num / dg->spec.rps;
    *wait_ns = (int64_t)(at - now);
    return 0;
  }
  *wait_ns = 0;
  return due;
}

static int dg_poll(ck_source_t *src, ck_batch_t *batch, int max_rows, int timeout_ms,
                   int *partition, ck_error_t *err) {
  dg_src_t *dg = dg_impl(src);
  *partition = 0;
  if (dg_exhausted(dg)) return CK_SRC_END;
  int64_t n = max_rows > 0 ? max_rows : 1;
  if (dg->spec.rows >= 0) {
    uint64_t left = ((uint64_t)dg->spec.rows - dg->next + dg->stride - 1) / dg->stride;
    if ((uint64_t)n > left) n = (int64_t)left;
  }
  if (dg->spec.rps > 0) {
    int64_t wait_ns;
    int64_t due = dg_due(dg, &wait_ns);
    if (due == 0 && timeout_ms > 0) {
      int64_t ms = (wait_ns + 999999) / 1000000;
      (void)ck_conn_wait_wake(&src->ctx, ms < timeout_ms ? (ms > 0 ? ms : 1) : timeout_ms);
      due = dg_due(dg, &wait_ns);
    }
    if (due == 0) return CK_SRC_IDLE;
    if (n > due) n = due;
  }
  size_t row0 = batch->ncols ? batch->cols[0].len : batch->nrows;
  for (int64_t k = 0; k < n; k++) {
    for (int c = 0; c < dg->spec.ncols; c++) {
      int rc = gen_value(&dg->spec, c, dg->next, &batch->cols[c], dg->tmp, err);
      if (rc) { /* the rows before it go out first; the next poll fails at this one again */
        ck_format_rollback(batch, row0 + (size_t)k);
        if (k == 0) return rc;
        ck_error_clear(err);
        n = k;
        break;
      }
    }
    if (k == n) break;
    dg->next += dg->stride;
  }
  dg->paced += n;
  batch->nrows = row0 + (size_t)n;
  return CK_SRC_DATA;
}

static int dg_snapshot(ck_source_t *src, ck_buf_t *out, ck_error_t *err) {
  dg_src_t *dg = dg_impl(src);
  ck_buf_putc(out, DG_SNAP_VERSION);
  ck_buf_put_uvarint(out, dg->opened ? dg->stride : (uint64_t)src->ctx.parallelism);
  ck_buf_put_uvarint(out, dg->opened ? dg->next : dg->pending);
  return 0;
}

static int dg_restore(ck_source_t *src, const void *data, size_t len, ck_error_t *err) {
  dg_src_t *dg = dg_impl(src);
  const uint8_t *p = data, *end = p + len;
  uint64_t par, next;
  if (len < 1 || *p != DG_SNAP_VERSION)
    return ck_error_set(err, CK_ESTATE, "could not restore the datagen position: unknown state "
                        "version %d", len ? *p : -1);
  p++;
  if (!ck_uvarint_get(&p, end, &par) || !ck_uvarint_get(&p, end, &next) || p != end)
    return ck_error_set(err, CK_ESTATE, "could not restore the datagen position: the state is "
                        "truncated or corrupt");
  uint64_t want = (uint64_t)(src->ctx.parallelism > 0 ? src->ctx.parallelism : 1);
  if (par != want || next % want != (uint64_t)src->ctx.subtask)
    return ck_error_set(err, CK_ESTATE, "could not restore the datagen position: it was taken at "
                        "parallelism %llu, this job runs at %llu",
                        (unsigned long long)par, (unsigned long long)want);
  if (dg->opened) {
    dg->next = next;
    dg->t0_ns = ck_mono_ns();
    dg->paced = 0;
  } else {
    dg->pending = next;
    dg->has_pending = true;
  }
  return 0;
}

static int64_t dg_skipped(ck_source_t *src) { return 0; }

static void dg_close(ck_source_t *src) {
  dg_src_t *dg = src->impl;
  if (!dg) return;
  free_spec(&dg->spec);
  ck_arena_fini(&dg->arena);
  ck_free(dg->tmp);
  ck_free(dg);
  src->impl = NULL;
}

static const ck_source_ops_t datagen_source_ops = {
    dg_open, dg_npartitions, dg_poll, dg_snapshot, dg_restore, dg_skipped, dg_close,
};

const ck_connector_t ck_datagen_connector = {
    .name = "datagen",
    .description = "deterministic generated rows (sequence, random or choice per column), "
                   "bounded by 'rows' or unbounded, optionally paced; for tests and benchmarks",
    .source_options = datagen_options,
    .sink_options = NULL,
    .source = &datagen_source_ops,
    .sink = NULL,
    .sink_guarantee = CK_GUARANTEE_NONE,
    .bounded = false,
    .check = datagen_check,
};
