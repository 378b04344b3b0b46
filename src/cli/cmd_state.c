/*
 * DESIGN: `clink state-cat` and `clink state-diff` — a checkpoint's state as data.
 *
 * state-cat prints one NDJSON line per entry of a snapshot file (--from=FILE) or of every
 * subtask's file of one checkpoint (--dir=DIR [--id=N], default the newest completed):
 * checkpoint, task, op_id, operator (the node's name), kind, key_group, slot, user_key and the
 * value decoded (cmd_state_decode.c, runtime/agg_snap_split.c). state-diff A B compares two
 * such sets (each a file, or a directory with an optional @N) by entry identity — op_id, slot,
 * user key and, for windows, the window; raw state by op_id and subtask — and prints each
 * added, removed or changed entry with its old and new value; exit 0 identical, 1 different,
 * 2 error. state-export writes the same entries (raw and decoded) as one Arrow IPC stream
 * or one Parquet file (base/arrow_ipc.c, base/parquet.c), or appends them to an Iceberg
 * table directory as a new snapshot (cmd_state_iceberg.c). Every file's checksum is checked
 * before anything of it is printed.
 * Threads: the main thread.
 */
#include "cli/cmd_state.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/arrow_ipc.h"
#include "base/parquet.h"
#include "cli/cli.h"
#include "runtime/op.h"

static const char *const KINDS[] = {"source", "operator", "sink"};

/* ---------------------------------------------------------------- loading */

void ck_state_set_free(ck_state_set_t *set) {
  for (size_t i = 0; i < set->n; i++) {
    ck_state_entry_t *e = &set->e[i];
    ck_free(e->op_name);
    ck_free(e->slot);
    ck_free(e->user_key);
    ck_free(e->value);
    ck_free(e->raw);
    ck_free(e->ident);
  }
  ck_free(set->e);
  memset(set, 0, sizeof *set);
}

static char *dup_n(const char *s, size_t n) {
  char *d = ck_malloc(n + 1);
  if (n) memcpy(d, s, n);
  d[n] = 0;
  return d;
}

static ck_state_entry_t *push(ck_state_set_t *set) {
  if (set->n == set->cap) {
    set->cap = set->cap ? 2 * set->cap : 256;
    set->e = ck_realloc(set->e, sizeof *set->e * set->cap);
  }
  ck_state_entry_t *e = &set->e[set->n++];
  memset(e, 0, sizeof *e);
  return e;
}

/* The name of node op in the clink.operators JSON. */
static char *op_name(const char *ops, uint32_t op) {
  char want[48];
  snprintf(want, sizeof want, "{\"op_id\":%u,", op);
  const char *p = ops ? strstr(ops, want) : NULL;
  const char *n = p ? strstr(p, "\"name\":\"") : NULL;
  if (n) {
    n += 8;
    const char *q = strchr(n, '"');
    if (q) return dup_n(n, (size_t)(q - n));
  }
  char fallback[32];
  snprintf(fallback, sizeof fallback, "node-%u", op);
  return dup_n(fallback, strlen(fallback));
}

static void hex(ck_buf_t *b, const void *p, size_t n) {
  for (size_t i = 0; i < n; i++) ck_buf_printf(b, "%02x", ((const uint8_t *)p)[i]);
}

typedef struct load {
  ck_state_set_t *set;
  int64_t ckpt;
  int task;
  uint32_t op;
  const char *name;
  int kind;
} load_t;

static int load_entry(void *ctx, const ck_snap_entry_t *en, ck_error_t *err) {
  (void)err;
  load_t *l = ctx;
  ck_state_entry_t *e = push(l->set);
  e->ckpt = l->ckpt;
  e->task = l->task;
  e->op = l->op;
  e->op_name = dup_n(l->name, strlen(l->name));
  e->kind = l->kind;
  e->key_group = en->key_group;
  e->slot = dup_n(en->slot, strlen(en->slot));
  e->user_key = en->key_group == CK_SNAP_RAW ? NULL : dup_n(en->key, en->key_len);
  e->value = dup_n(en->json ? en->json : "{}", en->json ? en->json_len : 2);
  const uint8_t *part[2];
  size_t plen[2] = {0, 0};
  int parts = ck_snap_entry_row(en, part, plen); /* the row's value, as the file holds it */
  e->raw_len = plen[0] + (parts > 1 ? plen[1] : 0);
  e->raw = ck_malloc(e->raw_len + 1);
  memcpy(e->raw, part[0], plen[0]);
  if (parts > 1) memcpy(e->raw + plen[0], part[1], plen[1]);
  ck_buf_t id;
  ck_buf_init(&id);
  ck_buf_printf(&id, "%u\x1f%s\x1f", l->op, en->slot);
  if (en->key_group == CK_SNAP_RAW) {
    ck_buf_printf(&id, "task %d", l->task);
  } else { /* the key, and for a window its bounds (the record's bytes 4..20) */
    ck_buf_append(&id, en->key, en->key_len);
    ck_buf_putc(&id, '\x1f');
    if (strcmp(en->slot, "win") == 0 && en->value_len >= 20)
      hex(&id, (const uint8_t *)en->value + 4, 16);
  }
  e->ident = ck_buf_detach(&id);
  return 0;
}

int ck_state_load_file(const char *path, ck_state_set_t *set, ck_error_t *err) {
  int64_t id;
  int task;
  uint64_t fp;
  int rc = ck_snap_check_file(path, &id, &task, &fp, err);
  if (rc) return rc;
  ck_buf_t file, parts, json;
  ck_buf_init(&file);
  ck_buf_init(&parts);
  ck_buf_init(&json);
  rc = ck_cli_read_file(path, &file, err);
  if (rc) goto done;
  ck_snap_section_t sec[64];
  int n = 0;
  rc = ck_snap_decode(file.data, file.len, id, fp, task, &ck_agg_snap_joiner, sec, 64, &n, &parts,
                      err);
  if (rc) {
    ck_error_detail(err, "the file is '%s'", path);
    goto done;
  }
  ck_arrow_reader_t r;
  rc = ck_arrow_reader_open(&r, file.data, file.len, err);
  if (rc) goto done;
  const char *ops = ck_arrow_reader_meta(&r, "clink.operators");
  set->ckpt = id;
  set->nfiles++;
  for (int i = 0; i < n && !rc; i++) {
    char *name = op_name(ops, sec[i].node);
    load_t l = {set, id, task, sec[i].node, name, sec[i].kind};
    if (sec[i].len >= 4 && memcmp(sec[i].data, "CKAG", 4) == 0) {
      int v = ck_agg_snap_split(sec[i].data, sec[i].len, true, load_entry, &l, err);
      rc = v < 0 ? v : 0;
    } else {
      ck_buf_reset(&json);
      rc = ck_state_decode_raw(name, sec[i].kind, sec[i].data, sec[i].len, &json, err);
      ck_snap_entry_t en = {CK_SNAP_RAW, "<raw>", "", 0, sec[i].data, sec[i].len,
                            json.data, json.len, 0, 0, 0};
      if (!rc) rc = load_entry(&l, &en, err);
    }
    if (rc) ck_error_detail(err, "the file is '%s'", path);
    ck_free(name);
  }
done:
  ck_buf_fini(&file);
  ck_buf_fini(&parts);
  ck_buf_fini(&json);
  return rc;
}

/* The local copies ck_state_local_dir made, removed at exit. */
static char *fetched[8];
static int nfetched;

static void remove_fetched(void) {
  for (int i = 0; i < nfetched; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      execlp("rm", "rm", "-rf", "--", fetched[i], (char *)NULL);
      _exit(127);
    }
    if (pid > 0) waitpid(pid, NULL, 0);
    ck_free(fetched[i]);
  }
  nfetched = 0;
}

const char *ck_state_local_dir(const char *dir, ck_error_t *err) {
  if (!dir || !ck_store_is_remote(dir)) return dir;
  if (nfetched == (int)(sizeof fetched / sizeof fetched[0])) {
    ck_error_set(err, CK_EUNSUPPORTED, "could not read %s: too many S3 stores in one command", dir);
    return NULL;
  }
  const char *tmp = getenv("TMPDIR");
  char local[4096];
  snprintf(local, sizeof local, "%s/clink-s3-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(local)) {
    ck_error_set(err, CK_EIO, "could not create a directory for a copy of %s: %s", dir,
                 strerror(errno));
    return NULL;
  }
  if (!nfetched) atexit(remove_fetched);
  fetched[nfetched++] = ck_strdup(local);
  if (ck_store_fetch(dir, local, err)) return NULL;
  return fetched[nfetched - 1];
}

void ck_state_root(const char *dir, char *root, size_t n) {
  char meta[4200];
  struct stat st;
  snprintf(meta, sizeof meta, "%s/_meta", dir);
  if (stat(meta, &st) == 0 && S_ISDIR(st.st_mode)) {
    snprintf(root, n, "%s", dir);
    return;
  }
  snprintf(root, n, "%s/v1", dir);
}

int64_t ck_state_newest(const char *root) {
  ck_store_t store = {(char *)root};
  return ck_store_latest(&store, "completed");
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return x < y ? -1 : x > y;
}

int ck_state_tasks(const char *root, int **tasks) {
  *tasks = NULL;
  DIR *d = opendir(root);
  if (!d) return 0;
  int n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    char *end;
    long t = strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end || t < 0) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      *tasks = ck_realloc(*tasks, sizeof **tasks * (size_t)cap);
    }
    (*tasks)[n++] = (int)t;
  }
  closedir(d);
  if (n > 1) qsort(*tasks, (size_t)n, sizeof **tasks, cmp_int);
  return n;
}

int ck_state_load_dir(const char *root, int64_t id, ck_state_set_t *set, ck_error_t *err) {
  int *tasks;
  int n = ck_state_tasks(root, &tasks), rc = 0;
  if (n == 0)
    rc = ck_error_set(err, CK_ENOTFOUND, "could not read checkpoint %lld: '%s' holds no "
                      "subtask directories", (long long)id, root);
  for (int i = 0; i < n && !rc; i++) {
    char path[4300];
    snprintf(path, sizeof path, "%s/%d/checkpoint-%lld.snap", root, tasks[i], (long long)id);
    rc = ck_state_load_file(path, set, err);
  }
  ck_free(tasks);
  set->ckpt = id;
  return rc;
}

void ck_state_entry_json(const ck_state_entry_t *e, ck_buf_t *out) {
  ck_buf_printf(out, "{\"checkpoint\":%lld,\"task\":%d,\"op_id\":%u,\"operator\":",
                (long long)e->ckpt, e->task, e->op);
  ck_buf_put_json_str(out, e->op_name, strlen(e->op_name));
  ck_buf_printf(out, ",\"kind\":\"%s\",\"key_group\":%d,\"slot\":",
                KINDS[e->kind >= 0 && e->kind <= 2 ? e->kind : 1], e->key_group);
  ck_buf_put_json_str(out, e->slot, strlen(e->slot));
  ck_buf_puts(out, ",\"user_key\":");
  ck_buf_puts(out, e->user_key ? e->user_key : "null");
  ck_buf_puts(out, ",\"value\":");
  ck_buf_puts(out, e->value);
  ck_buf_putc(out, '}');
}

/* What --from / --dir / --id (or a state-diff argument "PATH[@N]") names, loaded. */
static int load_spec(const char *prog, const char *from, const char *dir, const char *idtext,
                     ck_state_set_t *set) {
  ck_error_t err;
  ck_error_clear(&err);
  int rc;
  if (from) {
    rc = ck_state_load_file(from, set, &err);
  } else if (!(dir = ck_state_local_dir(dir, &err))) {
    rc = CK_EIO;
  } else {
    char root[4096];
    ck_state_root(dir, root, sizeof root);
    int64_t id = 0;
    if (idtext) {
      char *end;
      id = strtoll(idtext, &end, 10);
      if (end == idtext || *end || id < 1) {
        fprintf(stderr, "clink %s: the checkpoint id must be a positive number, not '%s'\n",
                prog, idtext);
        return 2;
      }
    } else if ((id = ck_state_newest(root)) == 0) {
      fprintf(stderr, "clink %s: could not find a completed checkpoint in '%s'\n"
              "hint: give the directory passed as --checkpoint-dir (or its v1, or a cluster "
              "job's job-<id>/v1), or a file with --from\n", prog, root);
      return 1;
    }
    rc = ck_state_load_dir(root, id, set, &err);
  }
  if (rc) {
    char text[8192];
    ck_error_format(&err, text, sizeof text);
    fprintf(stderr, "clink %s: %s\n", prog, text);
    return 1;
  }
  return 0;
}

/* ---------------------------------------------------------------- state-cat */

static const ck_cli_opt_t cat_opts[] = {
    {"from", "FILE", "one snapshot file (v1/<task>/checkpoint-<N>.snap)"},
    {"dir", "DIR", "a checkpoint directory (or its v1, or a cluster job's job-<id>/v1): every "
                   "subtask's file of one checkpoint"},
    {"id", "N", "with --dir: the checkpoint (default the newest completed)"},
    {NULL, NULL, NULL},
};

static int cat_main(int argc, char **argv) {
  const ck_cli_cmd_t *cmd = &ck_cli_cmd_state_cat;
  ck_cli_args_t args;
  int rc = ck_cli_parse(cmd, argc, argv, &args);
  if (rc) return rc < 0 ? 0 : rc;
  const char *from = ck_cli_get(cmd, &args, "from"), *dir = ck_cli_get(cmd, &args, "dir");
  const char *id = ck_cli_get(cmd, &args, "id");
  if (!from == !dir || args.npositional || (id && !dir)) {
    fprintf(stderr, "clink state-cat: give --from=FILE, or --dir=DIR with an optional --id=N\n"
            "usage: clink state-cat %s\n", cmd->usage);
    return 2;
  }
  ck_state_set_t set = {0};
  rc = load_spec("state-cat", from, dir, id, &set);
  ck_buf_t line;
  ck_buf_init(&line);
  for (size_t i = 0; i < set.n && !rc; i++) {
    ck_buf_reset(&line);
    ck_state_entry_json(&set.e[i], &line);
    ck_buf_putc(&line, '\n');
    fwrite(line.data, 1, line.len, stdout);
  }
  ck_buf_fini(&line);
  ck_state_set_free(&set);
  return rc;
}

const ck_cli_cmd_t ck_cli_cmd_state_cat = {
    "state-cat", "print a checkpoint's state, one JSON line per entry, decoded",
    "--from=FILE | --dir=DIR [--id=N]", cat_opts, cat_main};

/* ---------------------------------------------------------------- state-diff */

static const ck_cli_opt_t diff_opts[] = {
    {NULL, NULL, NULL},
};

static int cmp_ident(const void *a, const void *b) {
  const ck_state_entry_t *x = *(ck_state_entry_t *const *)a, *y = *(ck_state_entry_t *const *)b;
  return strcmp(x->ident, y->ident);
}

static ck_state_entry_t **sorted(ck_state_set_t *set) {
  ck_state_entry_t **v = ck_malloc(sizeof *v * (set->n ? set->n : 1));
  for (size_t i = 0; i < set->n; i++) v[i] = &set->e[i];
  qsort(v, set->n, sizeof *v, cmp_ident);
  return v;
}

static void diff_line(const char *change, const ck_state_entry_t *a, const ck_state_entry_t *b) {
  const ck_state_entry_t *e = a ? a : b;
  ck_buf_t line;
  ck_buf_init(&line);
  ck_buf_printf(&line, "{\"change\":\"%s\",\"op_id\":%u,\"operator\":", change, e->op);
  ck_buf_put_json_str(&line, e->op_name, strlen(e->op_name));
  ck_buf_printf(&line, ",\"key_group\":%d,\"slot\":", e->key_group);
  ck_buf_put_json_str(&line, e->slot, strlen(e->slot));
  ck_buf_puts(&line, ",\"user_key\":");
  ck_buf_puts(&line, e->user_key ? e->user_key : "null");
  if (e->key_group == CK_SNAP_RAW) ck_buf_printf(&line, ",\"task\":%d", e->task);
  ck_buf_printf(&line, ",\"old\":%s,\"new\":%s}\n", a ? a->value : "null",
                b ? b->value : "null");
  fwrite(line.data, 1, line.len, stdout);
  ck_buf_fini(&line);
}

/* "PATH" or "PATH@N": a file, or a checkpoint directory (N: which checkpoint). */
static int load_arg(const char *arg, ck_state_set_t *set) {
  char path[4096];
  snprintf(path, sizeof path, "%s", arg);
  const char *id = NULL;
  char *at = strrchr(path, '@');
  if (ck_store_is_remote(path)) { /* an S3 store: "@N" when N is a number */
    if (at && at[1] && strspn(at + 1, "0123456789") == strlen(at + 1)) {
      *at = 0;
      id = at + 1;
    }
    return load_spec("state-diff", NULL, path, id, set);
  }
  struct stat st;
  if (at && stat(path, &st) != 0) {
    *at = 0;
    id = at + 1;
  }
  if (stat(path, &st) != 0) {
    fprintf(stderr, "clink state-diff: could not read '%s': %s\n", path, strerror(errno));
    return 2;
  }
  if (S_ISDIR(st.st_mode)) return load_spec("state-diff", NULL, path, id, set);
  if (id) {
    fprintf(stderr, "clink state-diff: '%s' is a file; @N picks a checkpoint of a directory\n",
            path);
    return 2;
  }
  return load_spec("state-diff", path, NULL, NULL, set);
}

static int diff_main(int argc, char **argv) {
  const ck_cli_cmd_t *cmd = &ck_cli_cmd_state_diff;
  ck_cli_args_t args;
  int rc = ck_cli_parse(cmd, argc, argv, &args);
  if (rc) return rc < 0 ? 0 : rc;
  if (args.npositional != 2) {
    fprintf(stderr, "clink state-diff: give two snapshots to compare\nusage: clink state-diff "
            "%s\n", cmd->usage);
    return 2;
  }
  ck_state_set_t a = {0}, b = {0};
  if (load_arg(args.positional[0], &a) || load_arg(args.positional[1], &b)) {
    ck_state_set_free(&a);
    ck_state_set_free(&b);
    return 2;
  }
  ck_state_entry_t **va = sorted(&a), **vb = sorted(&b);
  size_t i = 0, j = 0, added = 0, removed = 0, changed = 0;
  while (i < a.n || j < b.n) {
    int c = i == a.n ? 1 : j == b.n ? -1 : strcmp(va[i]->ident, vb[j]->ident);
    if (c < 0) {
      diff_line("removed", va[i++], NULL);
      removed++;
    } else if (c > 0) {
      diff_line("added", NULL, vb[j++]);
      added++;
    } else {
      if (strcmp(va[i]->value, vb[j]->value) != 0) {
        diff_line("changed", va[i], vb[j]);
        changed++;
      }
      i++, j++;
    }
  }
  fprintf(stderr, "state-diff: %zu added, %zu removed, %zu changed (checkpoint %lld: %zu "
          "entries, checkpoint %lld: %zu entries)\n", added, removed, changed,
          (long long)a.ckpt, a.n, (long long)b.ckpt, b.n);
  ck_free(va);
  ck_free(vb);
  ck_state_set_free(&a);
  ck_state_set_free(&b);
  return added || removed || changed ? 1 : 0;
}

const ck_cli_cmd_t ck_cli_cmd_state_diff = {
    "state-diff", "compare the state of two checkpoints or snapshot files (exit 0 same, 1 different)",
    "A B   (each a snapshot file, or a checkpoint directory with an optional @N)", diff_opts,
    diff_main};

/* ---------------------------------------------------------------- state-export */

static const ck_cli_opt_t export_opts[] = {
    {"from", "FILE", "one snapshot file"},
    {"dir", "DIR", "a checkpoint directory (or its v1, or a cluster job's job-<id>/v1)"},
    {"id", "N", "with --dir: the checkpoint (default the newest completed)"},
    {"out", "PATH", "the file to write; with --format=iceberg the table directory (created, or "
                    "appended to: one new snapshot per export)"},
    {"format", "FORMAT", "arrow (an Arrow IPC stream, the default), parquet, or iceberg (an "
                         "Apache Iceberg v2 table directory)"},
    {"compression", "CODEC", "parquet and iceberg: the Parquet pages' codec, zstd (the default) "
                             "or none"},
    {NULL, NULL, NULL},
};

enum { X_CKPT, X_TASK, X_OP, X_NAME, X_KIND, X_GROUP, X_SLOT, X_KEY, X_VALUE, X_DECODED, NX };
static const ck_arrow_field_t EXPORT_FIELDS[NX] = {
    {"checkpoint", CK_ARROW_INT64}, {"task", CK_ARROW_UINT32},   {"op_id", CK_ARROW_UINT32},
    {"operator", CK_ARROW_UTF8},    {"kind", CK_ARROW_UTF8},     {"key_group", CK_ARROW_UINT16},
    {"slot", CK_ARROW_UTF8},        {"user_key", CK_ARROW_UTF8}, {"value", CK_ARROW_BINARY},
    {"decoded", CK_ARROW_UTF8},
};
#define EXPORT_ROWS 65536

static int export_main(int argc, char **argv) {
  const ck_cli_cmd_t *cmd = &ck_cli_cmd_state_export;
  ck_cli_args_t args;
  int rc = ck_cli_parse(cmd, argc, argv, &args);
  if (rc) return rc < 0 ? 0 : rc;
  const char *from = ck_cli_get(cmd, &args, "from"), *dir = ck_cli_get(cmd, &args, "dir");
  const char *id = ck_cli_get(cmd, &args, "id"), *out = ck_cli_get(cmd, &args, "out");
  const char *format = ck_cli_get(cmd, &args, "format");
  const char *compression = ck_cli_get(cmd, &args, "compression");
  if (!from == !dir || args.npositional || (id && !dir) || !out) {
    fprintf(stderr, "clink state-export: give --out=PATH and --from=FILE, or --dir=DIR with an "
            "optional --id=N\nusage: clink state-export %s\n", cmd->usage);
    return 2;
  }
  bool parquet = format && strcmp(format, "parquet") == 0;
  bool iceberg = format && strcmp(format, "iceberg") == 0;
  if (format && !parquet && !iceberg && strcmp(format, "arrow") != 0) {
    fprintf(stderr, "clink state-export: --format must be arrow, parquet or iceberg, not '%s'\n",
            format);
    return 2;
  }
  ck_parquet_codec_t codec = CK_PARQUET_ZSTD;
  if (compression && !parquet && !iceberg) {
    fprintf(stderr, "clink state-export: --compression applies to --format=parquet or iceberg; "
            "the Arrow stream is not compressed\n");
    return 2;
  }
  if (compression && strcmp(compression, "none") == 0) {
    codec = CK_PARQUET_UNCOMPRESSED;
  } else if (compression && strcmp(compression, "zstd") != 0) {
    fprintf(stderr, "clink state-export: --compression must be zstd or none, not '%s'\n",
            compression);
    return 2;
  }
  ck_state_set_t set = {0};
  rc = load_spec("state-export", from, dir, id, &set);
  if (rc) {
    ck_state_set_free(&set);
    return rc;
  }
  if (iceberg) {
    ck_error_t err;
    ck_error_clear(&err);
    int version = 0;
    rc = ck_state_iceberg_export(out, &set, codec, &version, &err);
    if (rc) {
      char text[8192];
      ck_error_format(&err, text, sizeof text);
      fprintf(stderr, "clink state-export: %s\n", text);
      rc = 1;
    } else {
      fprintf(stderr, "state-export: %zu entries of checkpoint %lld appended to the Iceberg table "
              "'%s' (metadata version %d)\n", set.n, (long long)set.ckpt, out, version);
    }
    ck_state_set_free(&set);
    return rc;
  }
  ck_buf_t file;
  ck_buf_init(&file);
  char sid[24];
  snprintf(sid, sizeof sid, "%lld", (long long)set.ckpt);
  ck_arrow_kv_t meta[] = {{"clink.export", "state"}, {"clink.checkpoint_id", sid}};
  ck_parquet_writer_t pw;
  if (parquet) {
    ck_parquet_begin(&pw, &file, EXPORT_FIELDS, NX);
    ck_parquet_set_codec(&pw, codec);
  } else ck_arrow_write_schema(&file, EXPORT_FIELDS, NX, meta, 2, NULL);
  ck_arrow_batch_t b;
  ck_arrow_batch_init(&b, EXPORT_FIELDS, NX);
  for (size_t i = 0; i <= set.n; i++) {
    if (i == set.n || b.nrows == EXPORT_ROWS) {
      if (parquet) ck_parquet_write_group(&pw, &b);
      else if (b.nrows || set.n == 0) ck_arrow_write_batch(&file, &b);
      ck_arrow_batch_reset(&b);
      if (i == set.n) break;
    }
    const ck_state_entry_t *e = &set.e[i];
    const char *kind = KINDS[e->kind >= 0 && e->kind <= 2 ? e->kind : 1];
    ck_arrow_put_i64(&b, X_CKPT, e->ckpt);
    ck_arrow_put_u32(&b, X_TASK, (uint32_t)e->task);
    ck_arrow_put_u32(&b, X_OP, e->op);
    ck_arrow_put_bytes(&b, X_NAME, e->op_name, strlen(e->op_name));
    ck_arrow_put_bytes(&b, X_KIND, kind, strlen(kind));
    ck_arrow_put_u16(&b, X_GROUP, (uint16_t)e->key_group);
    ck_arrow_put_bytes(&b, X_SLOT, e->slot, strlen(e->slot));
    ck_arrow_put_bytes(&b, X_KEY, e->user_key ? e->user_key : "", e->user_key ? strlen(e->user_key) : 0);
    ck_arrow_put_bytes(&b, X_VALUE, e->raw, e->raw_len);
    ck_arrow_put_bytes(&b, X_DECODED, e->value, strlen(e->value));
    ck_arrow_batch_row(&b);
  }
  ck_arrow_batch_fini(&b);
  if (parquet) ck_parquet_finish(&pw, meta, 2);
  else ck_arrow_write_eos(&file);
  FILE *f = fopen(out, "wb");
  if (!f || fwrite(file.data, 1, file.len, f) != file.len || fclose(f) != 0) {
    fprintf(stderr, "clink state-export: could not write '%s': %s\n", out, strerror(errno));
    rc = 1;
  } else {
    fprintf(stderr, "state-export: %zu entries of checkpoint %lld written to '%s' (%s)\n", set.n,
            (long long)set.ckpt, out, parquet ? "parquet" : "arrow");
  }
  ck_buf_fini(&file);
  ck_state_set_free(&set);
  return rc;
}

const ck_cli_cmd_t ck_cli_cmd_state_export = {
    "state-export", "write a checkpoint's state, raw and decoded, as Arrow IPC, Parquet or an "
    "Iceberg table's new snapshot",
    "--out=PATH [--format=arrow|parquet|iceberg] [--compression=zstd|none] "
    "(--from=FILE | --dir=DIR [--id=N])", export_opts,
    export_main};
