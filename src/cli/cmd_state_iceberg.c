/*
 * DESIGN: `clink state-export --format=iceberg --out=DIR` — a checkpoint's entries appended to
 * an Apache Iceberg (format version 2) table directory as one new snapshot, so repeated
 * exports are the state's history and a reader's time travel gives one checkpoint's state.
 *
 * Layout of DIR (a "file system table": no catalog; the newest metadata file is named by
 * metadata/version-hint.text, as Hadoop tables do):
 *   data/<ckpt>-<uuid>.parquet            the entries (base/parquet.c: field ids, zstd)
 *   metadata/<uuid>-m0.avro               the manifest: one entry, that data file (added)
 *   metadata/snap-<snapshot>-1-<uuid>.avro the manifest list: every snapshot's manifest so far
 *   metadata/v<N>.metadata.json           the table: schema, snapshots, logs
 *   metadata/version-hint.text            N
 * The Avro files are written by base/avro.c (deflate). Paths in the metadata are absolute
 * file:// URIs of where DIR was when written (the Iceberg specification has no relative
 * paths), so a table moved elsewhere is refused rather than read wrong.
 *
 * Appending: the current metadata file is read (a small scanner below: clink writes it, but
 * it skips what it does not know); every snapshot in it must be one of clink's, whose
 * summary names its manifest (clink.manifest-path, -length), so the new manifest list lists
 * those plus the new one without an Avro reader. A checkpoint already in the table is refused.
 *
 * Commit: the data file, manifest and manifest list are written first under new unique
 * names, nothing refers to them yet. Then v<N+1>.metadata.json is written to a temporary
 * name, fsynced and hard-linked to its final name, which fails if the name exists: of two
 * concurrent exports one commits and the other stops with an error (its files stay
 * unreferenced). Last, version-hint.text is replaced by rename. A reader sees the table
 * before or after the export, never half of it: before the link nothing names the new files;
 * between the link and the rename a reader that follows the hint gets the previous version
 * and one that lists metadata files gets the whole new one.
 * Threads: the main thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/avro.h"
#include "base/parquet.h"
#include "cli/cli.h"
#include "cli/cmd_state.h"

/* ---------------------------------------------------------------- the table's schema */

enum { I_CKPT, I_TASK, I_OP, I_NAME, I_KIND, I_GROUP, I_SLOT, I_KEY, I_VALUE, I_DECODED, NI };
static const struct {
  ck_arrow_field_t field;
  const char *iceberg; /* the Iceberg type */
  bool optional;
} COLUMNS[NI] = {
    {{"checkpoint", CK_ARROW_INT64}, "long", false},
    {{"task", CK_ARROW_UINT32}, "int", false},
    {{"op_id", CK_ARROW_UINT32}, "int", false},
    {{"operator", CK_ARROW_UTF8}, "string", false},
    {{"kind", CK_ARROW_UTF8}, "string", false},
    {{"key_group", CK_ARROW_UINT16}, "int", false},
    {{"slot", CK_ARROW_UTF8}, "string", false},
    {{"user_key", CK_ARROW_UTF8}, "string", true}, /* NULL for raw (not keyed) rows */
    {{"value", CK_ARROW_BINARY}, "binary", false},
    {{"decoded", CK_ARROW_UTF8}, "string", false},
};
#define ICEBERG_ROWS 65536

/* Path buffers: the table directory (resolved, at most PATH_MAX), its data/ and metadata/,
 * a file in those, and a file:// URI of one. */
#define DIR_N (PATH_MAX + 16)
#define FILE_N (DIR_N + 128)
#define URI_N (FILE_N + 8)

static const char *const KIND_NAMES[] = {"source", "operator", "sink"};

/* The table schema's JSON (schema-id 0; field ids 1…NI in COLUMNS' order). */
static void schema_json(ck_buf_t *b) {
  ck_buf_puts(b, "{\"type\":\"struct\",\"schema-id\":0,\"fields\":[");
  for (int i = 0; i < NI; i++)
    ck_buf_printf(b, "%s{\"id\":%d,\"name\":\"%s\",\"required\":%s,\"type\":\"%s\"}",
                  i ? "," : "", i + 1, COLUMNS[i].field.name,
                  COLUMNS[i].optional ? "false" : "true", COLUMNS[i].iceberg);
  ck_buf_puts(b, "]}");
}

/* The manifest's Avro schema: Iceberg v2's manifest_entry with the data_file fields written. */
static const char MANIFEST_SCHEMA[] =
    "{\"type\":\"record\",\"name\":\"manifest_entry\",\"fields\":["
    "{\"name\":\"status\",\"type\":\"int\",\"field-id\":0},"
    "{\"name\":\"snapshot_id\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":1},"
    "{\"name\":\"sequence_number\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":3},"
    "{\"name\":\"file_sequence_number\",\"type\":[\"null\",\"long\"],\"default\":null,"
    "\"field-id\":4},"
    "{\"name\":\"data_file\",\"type\":{\"type\":\"record\",\"name\":\"r2\",\"fields\":["
    "{\"name\":\"content\",\"type\":\"int\",\"field-id\":134},"
    "{\"name\":\"file_path\",\"type\":\"string\",\"field-id\":100},"
    "{\"name\":\"file_format\",\"type\":\"string\",\"field-id\":101},"
    "{\"name\":\"partition\",\"type\":{\"type\":\"record\",\"name\":\"r102\",\"fields\":[]},"
    "\"field-id\":102},"
    "{\"name\":\"record_count\",\"type\":\"long\",\"field-id\":103},"
    "{\"name\":\"file_size_in_bytes\",\"type\":\"long\",\"field-id\":104}"
    "]},\"field-id\":2}]}";

/* The manifest list's: Iceberg v2's manifest_file without the optional fields. */
static const char LIST_SCHEMA[] =
    "{\"type\":\"record\",\"name\":\"manifest_file\",\"fields\":["
    "{\"name\":\"manifest_path\",\"type\":\"string\",\"field-id\":500},"
    "{\"name\":\"manifest_length\",\"type\":\"long\",\"field-id\":501},"
    "{\"name\":\"partition_spec_id\",\"type\":\"int\",\"field-id\":502},"
    "{\"name\":\"content\",\"type\":\"int\",\"field-id\":517},"
    "{\"name\":\"sequence_number\",\"type\":\"long\",\"field-id\":515},"
    "{\"name\":\"min_sequence_number\",\"type\":\"long\",\"field-id\":516},"
    "{\"name\":\"added_snapshot_id\",\"type\":\"long\",\"field-id\":503},"
    "{\"name\":\"added_files_count\",\"type\":\"int\",\"field-id\":504},"
    "{\"name\":\"existing_files_count\",\"type\":\"int\",\"field-id\":505},"
    "{\"name\":\"deleted_files_count\",\"type\":\"int\",\"field-id\":506},"
    "{\"name\":\"added_rows_count\",\"type\":\"long\",\"field-id\":512},"
    "{\"name\":\"existing_rows_count\",\"type\":\"long\",\"field-id\":513},"
    "{\"name\":\"deleted_rows_count\",\"type\":\"long\",\"field-id\":514}]}";

/* ---------------------------------------------------------------- a small JSON scanner */

/* Just enough JSON to read a metadata file back: skip any value, find an object's member,
 * walk an array. Every function returns NULL on malformed text. */
static const char *ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
  return p;
}

static const char *skip_string(const char *p, const char *end) {
  if (p >= end || *p != '"') return NULL;
  for (p++; p < end; p++) {
    if (*p == '\\') p++;
    else if (*p == '"') return p + 1;
  }
  return NULL;
}

static const char *skip_value(const char *p, const char *end) {
  p = ws(p, end);
  if (p >= end) return NULL;
  if (*p == '"') return skip_string(p, end);
  if (*p == '{' || *p == '[') {
    char close = *p == '{' ? '}' : ']';
    p = ws(p + 1, end);
    if (p < end && *p == close) return p + 1;
    for (;;) {
      if (close == '}') {
        p = skip_string(ws(p, end), end);
        if (!p || (p = ws(p, end)) >= end || *p != ':') return NULL;
        p++;
      }
      p = skip_value(p, end);
      if (!p || (p = ws(p, end)) >= end) return NULL;
      if (*p == close) return p + 1;
      if (*p != ',') return NULL;
      p++;
    }
  }
  const char *q = p; /* a number, true, false, null */
  while (q < end && !strchr(",}] \n\r\t", *q)) q++;
  return q > p ? q : NULL;
}

typedef struct span {
  const char *p, *end;
} span_t;

/* The value of member key of the object s (a span of '{' … '}'); false when absent. */
static bool member(span_t s, const char *key, span_t *v) {
  const char *p = ws(s.p, s.end), *end = s.end;
  if (p >= end || *p != '{') return false;
  p = ws(p + 1, end);
  size_t klen = strlen(key);
  while (p < end && *p == '"') {
    const char *k = p + 1, *ke = skip_string(p, end);
    if (!ke) return false;
    p = ws(ke, end);
    if (p >= end || *p != ':') return false;
    const char *vs = ws(p + 1, end), *ve = skip_value(vs, end);
    if (!ve) return false;
    if ((size_t)(ke - 1 - k) == klen && memcmp(k, key, klen) == 0) {
      *v = (span_t){vs, ve};
      return true;
    }
    p = ws(ve, end);
    if (p < end && *p == ',') p = ws(p + 1, end);
  }
  return false;
}

/* The next element of the array being walked: *at starts just past '['. */
static bool element(const char **at, const char *end, span_t *v) {
  const char *p = ws(*at, end);
  if (p < end && *p == ',') p = ws(p + 1, end);
  if (p >= end || *p == ']') return false;
  const char *e = skip_value(p, end);
  if (!e) return false;
  *v = (span_t){p, e};
  *at = e;
  return true;
}

/* A string value (its escapes undone: those ck_buf_put_json_str writes, \u00XX only) or a
 * number, as text into out (n bytes). */
static bool text_of(span_t v, char *out, size_t n) {
  const char *p = v.p, *e = v.end;
  if (p < e && *p == '"') p++, e--;
  if (e < p) return false;
  size_t k = 0;
  for (; p < e; p++) {
    char c = *p;
    if (c == '\\') {
      if (++p >= e) return false;
      switch (*p) {
        case '"': case '\\': case '/': c = *p; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'u': {
          unsigned x;
          if (e - p < 5 || sscanf(p + 1, "%4x", &x) != 1 || x == 0 || x > 0x7f) return false;
          c = (char)x;
          p += 4;
          break;
        }
        default: return false;
      }
    }
    if (k + 1 >= n) return false;
    out[k++] = c;
  }
  out[k] = 0;
  return true;
}

static bool member_text(span_t s, const char *key, char *out, size_t n) {
  span_t v;
  return member(s, key, &v) && text_of(v, out, n);
}

static bool member_i64(span_t s, const char *key, int64_t *out) {
  char t[32];
  if (!member_text(s, key, t, sizeof t)) return false;
  char *e;
  errno = 0;
  long long x = strtoll(t, &e, 10);
  if (e == t || *e || errno) return false;
  *out = x;
  return true;
}

/* ---------------------------------------------------------------- files */

static void random_bytes(void *p, size_t n) {
  uint8_t *b = p;
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(b + got, n - got, 0);
    if (r > 0) {
      got += (size_t)r;
      continue;
    }
    /* no entropy source: time and pid, mixed (names need only be unique, not secret) */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ (uint64_t)getpid() << 48;
    for (; got < n; got++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      b[got] = (uint8_t)x;
    }
  }
}

static void uuid4(char out[37]) {
  uint8_t u[16];
  random_bytes(u, sizeof u);
  u[6] = (uint8_t)((u[6] & 0x0F) | 0x40);
  u[8] = (uint8_t)((u[8] & 0x3F) | 0x80);
  snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
           u[13], u[14], u[15]);
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int mkdir_one(const char *path, ck_error_t *err) {
  if (mkdir(path, 0777) == 0) return 0;
  int e = errno;
  struct stat st;
  if (e == EEXIST && stat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode)) return 0;
    ck_error_set(err, CK_EIO, "could not write the Iceberg table: '%s' is not a directory", path);
    ck_error_hint(err, "give --out a directory (new, or a table an earlier export wrote)");
    return CK_EIO;
  }
  return ck_error_set(err, CK_EIO, "could not create the directory '%s': %s", path, strerror(e));
}

/* Writes data to path, which must not exist yet, and fsyncs it. */
static int write_new(const char *path, const ck_buf_t *data, ck_error_t *err) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return ck_error_set(err, CK_EIO, "could not create '%s': %s", path, strerror(errno));
  size_t off = 0;
  while (off < data->len) {
    ssize_t n = write(fd, data->data + off, data->len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = n < 0 ? errno : EIO;
      close(fd);
      unlink(path);
      return ck_error_set(err, CK_EIO, "could not write '%s': %s", path, strerror(e));
    }
    off += (size_t)n;
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    int e = errno;
    unlink(path);
    return ck_error_set(err, CK_EIO, "could not write '%s': %s", path, strerror(e));
  }
  return 0;
}

/* ---------------------------------------------------------------- the previous version */

typedef struct prev_snap {
  int64_t id, seq, rows, ckpt, manifest_len, files;
  char manifest[URI_N];
} prev_snap_t;

typedef struct table {
  int version; /* of the current metadata file; 0: a new table */
  char uuid[40];
  int64_t last_seq, current, updated_ms;
  int nsnaps, cap;
  prev_snap_t *snaps;
  ck_buf_t snapshots, snapshot_log, metadata_log; /* the arrays' elements, comma-separated */
  char metadata_path[FILE_N];
} table_t;

static int damaged(ck_error_t *err, const char *path, const char *what) {
  ck_error_set(err, CK_EDECODE, "could not append to the Iceberg table: '%s' is damaged (%s)", path,
               what);
  ck_error_hint(err, "export to a new directory, or restore the table's metadata directory");
  return CK_EDECODE;
}

/* The elements of array member key of s, comma-separated, into out. */
static bool array_text(span_t s, const char *key, ck_buf_t *out) {
  span_t v, el;
  if (!member(s, key, &v)) return true; /* absent: empty */
  if (*v.p != '[') return false;
  const char *at = v.p + 1;
  while (element(&at, v.end, &el)) {
    if (out->len) ck_buf_putc(out, ',');
    ck_buf_append(out, el.p, (size_t)(el.end - el.p));
  }
  return true;
}

static int read_previous(const char *meta_dir, const char *location, table_t *t, ck_error_t *err) {
  char hint[FILE_N];
  snprintf(hint, sizeof hint, "%s/version-hint.text", meta_dir);
  ck_buf_t text, want;
  ck_buf_init(&text);
  ck_buf_init(&want);
  int rc = 0;
  struct stat st;
  if (stat(hint, &st) != 0) {
    if (errno != ENOENT) {
      rc = ck_error_set(err, CK_EIO, "could not read '%s': %s", hint, strerror(errno));
      goto done;
    }
    /* a new table, unless metadata files are there without their hint */
    char v1[FILE_N];
    snprintf(v1, sizeof v1, "%s/v1.metadata.json", meta_dir);
    if (stat(v1, &st) == 0) rc = damaged(err, hint, "it is missing, but v1.metadata.json is there");
    goto done;
  }
  rc = ck_cli_read_file(hint, &text, err);
  if (rc) goto done;
  char *e;
  long v = strtol(text.data ? text.data : "", &e, 10);
  while (*e == '\n' || *e == ' ') e++;
  if (!text.len || e == text.data || *e || v < 1 || v > INT_MAX - 1) {
    rc = damaged(err, hint, "it does not hold a version number");
    goto done;
  }
  t->version = (int)v;
  snprintf(t->metadata_path, sizeof t->metadata_path, "%s/v%d.metadata.json", meta_dir, t->version);
  ck_buf_reset(&text);
  rc = ck_cli_read_file(t->metadata_path, &text, err);
  if (rc) {
    ck_error_detail(err, "'%s' names version %d", hint, t->version);
    goto done;
  }
  span_t m = {text.data, text.data + text.len};
  char loc[URI_N];
  int64_t fv = 0;
  if (!skip_value(m.p, m.end) || !member_i64(m, "format-version", &fv) || fv != 2 ||
      !member_text(m, "table-uuid", t->uuid, sizeof t->uuid) ||
      !member_text(m, "location", loc, sizeof loc) ||
      !member_i64(m, "last-sequence-number", &t->last_seq) ||
      !member_i64(m, "last-updated-ms", &t->updated_ms)) {
    rc = damaged(err, t->metadata_path, "not Iceberg v2 table metadata clink can read");
    goto done;
  }
  if (strcmp(loc, location) != 0) {
    ck_error_set(err, CK_EINVAL, "could not append to the Iceberg table at '%s': it was written "
                 "at '%s'", location, loc);
    ck_error_hint(err, "its files are named by absolute paths; export to a new directory");
    rc = CK_EINVAL;
    goto done;
  }
  span_t schemas;
  schema_json(&want);
  ck_buf_t got;
  ck_buf_init(&got);
  bool same = member(m, "schemas", &schemas) && array_text(m, "schemas", &got) &&
              got.len == want.len && memcmp(got.data, want.data, want.len) == 0;
  ck_buf_fini(&got);
  if (!same) {
    ck_error_set(err, CK_EINVAL, "could not append to the Iceberg table: '%s' has another "
                 "schema than clink's state export", t->metadata_path);
    ck_error_hint(err, "export to a new directory");
    rc = CK_EINVAL;
    goto done;
  }
  if (!member_i64(m, "current-snapshot-id", &t->current)) t->current = -1;
  if (!array_text(m, "snapshots", &t->snapshots) ||
      !array_text(m, "snapshot-log", &t->snapshot_log) ||
      !array_text(m, "metadata-log", &t->metadata_log)) {
    rc = damaged(err, t->metadata_path, "its snapshots or logs are not arrays");
    goto done;
  }
  span_t arr, el;
  if (member(m, "snapshots", &arr)) {
    const char *at = arr.p + 1;
    while (element(&at, arr.end, &el)) {
      span_t sum;
      if (t->nsnaps == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        t->snaps = ck_realloc(t->snaps, sizeof *t->snaps * (size_t)t->cap);
      }
      prev_snap_t *s = &t->snaps[t->nsnaps];
      if (!member_i64(el, "snapshot-id", &s->id) || !member_i64(el, "sequence-number", &s->seq) ||
          !member(el, "summary", &sum)) {
        rc = damaged(err, t->metadata_path, "a snapshot without its id, sequence number or summary");
        goto done;
      }
      if (!member_text(sum, "clink.manifest-path", s->manifest, sizeof s->manifest) ||
          !member_i64(sum, "clink.manifest-length", &s->manifest_len) ||
          !member_i64(sum, "clink.checkpoint-id", &s->ckpt) ||
          !member_i64(sum, "added-records", &s->rows) ||
          !member_i64(sum, "added-data-files", &s->files)) {
        ck_error_set(err, CK_EUNSUPPORTED, "could not append to the Iceberg table: snapshot "
                     "%lld of '%s' was not written by clink state-export", (long long)s->id,
                     t->metadata_path);
        ck_error_hint(err, "clink appends only to tables it wrote; export to a new directory");
        rc = CK_EUNSUPPORTED;
        goto done;
      }
      t->nsnaps++;
    }
  }
done:
  ck_buf_fini(&text);
  ck_buf_fini(&want);
  return rc;
}

/* ---------------------------------------------------------------- writing */

static void data_file(const ck_state_set_t *set, ck_parquet_codec_t codec, ck_buf_t *out) {
  ck_arrow_field_t fields[NI];
  for (int i = 0; i < NI; i++) fields[i] = COLUMNS[i].field;
  ck_parquet_writer_t pw;
  ck_parquet_begin(&pw, out, fields, NI);
  ck_parquet_set_codec(&pw, codec);
  for (int i = 0; i < NI; i++) {
    ck_parquet_col_t col = {COLUMNS[i].optional, true, i + 1};
    ck_parquet_set_column(&pw, i, &col);
  }
  ck_arrow_batch_t b;
  ck_arrow_batch_init(&b, fields, NI);
  uint8_t *key_valid = ck_malloc(ICEBERG_ROWS);
  const uint8_t *valid[NI] = {0};
  valid[I_KEY] = key_valid;
  for (size_t i = 0; i <= set->n; i++) {
    if (i == set->n || b.nrows == ICEBERG_ROWS) {
      ck_parquet_write_group_nulls(&pw, &b, valid);
      ck_arrow_batch_reset(&b);
      if (i == set->n) break;
    }
    const ck_state_entry_t *e = &set->e[i];
    const char *kind = KIND_NAMES[e->kind >= 0 && e->kind <= 2 ? e->kind : 1];
    key_valid[b.nrows] = e->user_key != NULL;
    ck_arrow_put_i64(&b, I_CKPT, e->ckpt);
    ck_arrow_put_u32(&b, I_TASK, (uint32_t)e->task);
    ck_arrow_put_u32(&b, I_OP, e->op);
    ck_arrow_put_bytes(&b, I_NAME, e->op_name, strlen(e->op_name));
    ck_arrow_put_bytes(&b, I_KIND, kind, strlen(kind));
    ck_arrow_put_u16(&b, I_GROUP, (uint16_t)e->key_group);
    ck_arrow_put_bytes(&b, I_SLOT, e->slot, strlen(e->slot));
    ck_arrow_put_bytes(&b, I_KEY, e->user_key ? e->user_key : "",
                       e->user_key ? strlen(e->user_key) : 0);
    ck_arrow_put_bytes(&b, I_VALUE, e->raw, e->raw_len);
    ck_arrow_put_bytes(&b, I_DECODED, e->value, strlen(e->value));
    ck_arrow_batch_row(&b);
  }
  ck_free(key_valid);
  ck_arrow_batch_fini(&b);
  char sid[24];
  snprintf(sid, sizeof sid, "%lld", (long long)set->ckpt);
  ck_arrow_kv_t meta[] = {{"clink.export", "state"}, {"clink.checkpoint_id", sid}};
  ck_parquet_finish(&pw, meta, 2);
}

static void manifest_list_entry(ck_avro_writer_t *w, const char *path, int64_t len, int64_t seq,
                                int64_t snap, int64_t files, int64_t rows) {
  ck_buf_t *r = ck_avro_record(w);
  ck_avro_put_string(r, path);
  ck_avro_put_long(r, len);
  ck_avro_put_long(r, 0);   /* partition_spec_id */
  ck_avro_put_long(r, 0);   /* content: data */
  ck_avro_put_long(r, seq); /* sequence_number */
  ck_avro_put_long(r, seq); /* min_sequence_number */
  ck_avro_put_long(r, snap);
  ck_avro_put_long(r, files); /* added */
  ck_avro_put_long(r, 0);     /* existing */
  ck_avro_put_long(r, 0);     /* deleted */
  ck_avro_put_long(r, rows);
  ck_avro_put_long(r, 0);
  ck_avro_put_long(r, 0);
}

int ck_state_iceberg_export(const char *dir, const ck_state_set_t *set, ck_parquet_codec_t codec,
                            int *version_out, ck_error_t *err) {
  table_t t;
  memset(&t, 0, sizeof t);
  ck_buf_init(&t.snapshots);
  ck_buf_init(&t.snapshot_log);
  ck_buf_init(&t.metadata_log);
  ck_buf_t file, schema, json;
  ck_buf_init(&file);
  ck_buf_init(&schema);
  ck_buf_init(&json);
  int rc;
  char data_dir[DIR_N], meta_dir[DIR_N], abs[PATH_MAX], location[PATH_MAX + 8];
  if ((rc = mkdir_one(dir, err))) goto fail;
  if (!realpath(dir, abs)) {
    rc = ck_error_set(err, CK_EIO, "could not resolve '%s': %s", dir, strerror(errno));
    goto fail;
  }
  snprintf(location, sizeof location, "file://%s", abs);
  snprintf(data_dir, sizeof data_dir, "%s/data", abs);
  snprintf(meta_dir, sizeof meta_dir, "%s/metadata", abs);
  if ((rc = mkdir_one(data_dir, err)) || (rc = mkdir_one(meta_dir, err))) goto fail;
  if ((rc = read_previous(meta_dir, location, &t, err))) goto fail;
  for (int i = 0; i < t.nsnaps; i++)
    if (t.snaps[i].ckpt == set->ckpt) {
      ck_error_set(err, CK_EEXISTS, "could not append checkpoint %lld to the Iceberg table at "
                   "'%s': its snapshot %lld holds it already", (long long)set->ckpt, dir,
                   (long long)t.snaps[i].id);
      ck_error_hint(err, "export another checkpoint (--id=N), or to a new directory");
      rc = CK_EEXISTS;
      goto fail;
    }
  if (!t.version) uuid4(t.uuid);
  int64_t seq = t.last_seq + 1, ms = now_ms();
  if (ms <= t.updated_ms) ms = t.updated_ms + 1; /* timestamps never go back */
  int64_t snap;
  do {
    random_bytes(&snap, sizeof snap);
    snap &= INT64_MAX >> 1;
  } while (snap == 0);
  char u[37], data_path[FILE_N], manifest[FILE_N], list[FILE_N];
  uuid4(u);

  /* 1. the data file */
  snprintf(data_path, sizeof data_path, "%s/%05lld-%s.parquet", data_dir, (long long)set->ckpt, u);
  data_file(set, codec, &file);
  if ((rc = write_new(data_path, &file, err))) goto fail;
  int64_t data_size = (int64_t)file.len;

  /* 2. the manifest: one added data file */
  schema_json(&schema);
  char sv[24];
  snprintf(sv, sizeof sv, "%lld", (long long)snap);
  ck_arrow_kv_t mmeta[] = {{"schema", schema.data},  {"schema-id", "0"},
                           {"partition-spec", "[]"}, {"partition-spec-id", "0"},
                           {"format-version", "2"},  {"content", "data"}};
  uint8_t sync[CK_AVRO_SYNC];
  random_bytes(sync, sizeof sync);
  ck_buf_reset(&file);
  ck_avro_writer_t aw;
  ck_avro_begin(&aw, &file, MANIFEST_SCHEMA, CK_AVRO_DEFLATE, mmeta, 6, sync);
  ck_buf_t *r = ck_avro_record(&aw);
  ck_avro_put_long(r, 1); /* status: ADDED */
  ck_avro_put_union(r, 1);
  ck_avro_put_long(r, snap);
  ck_avro_put_union(r, 1);
  ck_avro_put_long(r, seq);
  ck_avro_put_union(r, 1);
  ck_avro_put_long(r, seq);
  ck_avro_put_long(r, 0); /* content: data */
  char uri[URI_N];
  snprintf(uri, sizeof uri, "file://%s", data_path);
  ck_avro_put_string(r, uri);
  ck_avro_put_string(r, "PARQUET");
  /* partition: an empty record */
  ck_avro_put_long(r, (int64_t)set->n);
  ck_avro_put_long(r, data_size);
  if ((rc = ck_avro_finish(&aw, err))) goto fail;
  snprintf(manifest, sizeof manifest, "%s/%s-m0.avro", meta_dir, u);
  if ((rc = write_new(manifest, &file, err))) goto fail;
  int64_t manifest_len = (int64_t)file.len;
  char manifest_uri[URI_N];
  snprintf(manifest_uri, sizeof manifest_uri, "file://%s", manifest);

  /* 3. the manifest list: every snapshot's manifest, this one's first */
  char parent[24], seqs[24];
  snprintf(parent, sizeof parent, "%lld", (long long)t.current);
  snprintf(seqs, sizeof seqs, "%lld", (long long)seq);
  ck_arrow_kv_t lmeta[] = {{"snapshot-id", sv}, {"parent-snapshot-id", t.nsnaps ? parent : "null"},
                           {"sequence-number", seqs}, {"format-version", "2"}};
  random_bytes(sync, sizeof sync);
  ck_buf_reset(&file);
  ck_avro_begin(&aw, &file, LIST_SCHEMA, CK_AVRO_DEFLATE, lmeta, 4, sync);
  manifest_list_entry(&aw, manifest_uri, manifest_len, seq, snap, 1, (int64_t)set->n);
  int64_t total_rows = (int64_t)set->n, total_files = 1;
  for (int i = t.nsnaps - 1; i >= 0; i--) {
    prev_snap_t *s = &t.snaps[i];
    manifest_list_entry(&aw, s->manifest, s->manifest_len, s->seq, s->id, s->files, s->rows);
    total_rows += s->rows;
    total_files += s->files;
  }
  if ((rc = ck_avro_finish(&aw, err))) goto fail;
  snprintf(list, sizeof list, "%s/snap-%lld-1-%s.avro", meta_dir, (long long)snap, u);
  if ((rc = write_new(list, &file, err))) goto fail;

  /* 4. the table metadata, committed by a link that fails if another export got there first */
  ck_buf_t *j = &json;
  ck_buf_printf(j, "{\n  \"format-version\": 2,\n  \"table-uuid\": \"%s\",\n  \"location\": ",
                t.uuid);
  ck_buf_put_json_str(j, location, strlen(location));
  ck_buf_printf(j, ",\n  \"last-sequence-number\": %lld,\n  \"last-updated-ms\": %lld,\n"
                "  \"last-column-id\": %d,\n  \"current-schema-id\": 0,\n  \"schemas\": [",
                (long long)seq, (long long)ms, NI);
  ck_buf_append(j, schema.data, schema.len);
  ck_buf_printf(j, "],\n  \"default-spec-id\": 0,\n  \"partition-specs\": [{\"spec-id\":0,"
                "\"fields\":[]}],\n  \"last-partition-id\": 999,\n  \"default-sort-order-id\": 0,"
                "\n  \"sort-orders\": [{\"order-id\":0,\"fields\":[]}],\n  \"properties\": "
                "{\"clink.writer\":\"clink state-export\"},\n  \"current-snapshot-id\": %lld,\n"
                "  \"refs\": {\"main\":{\"snapshot-id\":%lld,\"type\":\"branch\"}},\n"
                "  \"snapshots\": [", (long long)snap, (long long)snap);
  if (t.snapshots.len) {
    ck_buf_append(j, t.snapshots.data, t.snapshots.len);
    ck_buf_puts(j, ",\n    ");
  }
  ck_buf_printf(j, "{\"snapshot-id\":%lld,", (long long)snap);
  if (t.nsnaps) ck_buf_printf(j, "\"parent-snapshot-id\":%lld,", (long long)t.current);
  ck_buf_printf(j, "\"sequence-number\":%lld,\"timestamp-ms\":%lld,\"manifest-list\":",
                (long long)seq, (long long)ms);
  snprintf(uri, sizeof uri, "file://%s", list);
  ck_buf_put_json_str(j, uri, strlen(uri));
  ck_buf_printf(j, ",\"summary\":{\"operation\":\"append\",\"added-data-files\":\"1\","
                "\"added-records\":\"%zu\",\"added-files-size\":\"%lld\","
                "\"total-data-files\":\"%lld\",\"total-records\":\"%lld\","
                "\"total-delete-files\":\"0\",\"total-position-deletes\":\"0\","
                "\"total-equality-deletes\":\"0\",\"clink.checkpoint-id\":\"%lld\","
                "\"clink.manifest-path\":", set->n, (long long)data_size,
                (long long)total_files, (long long)total_rows, (long long)set->ckpt);
  ck_buf_put_json_str(j, manifest_uri, strlen(manifest_uri));
  ck_buf_printf(j, ",\"clink.manifest-length\":\"%lld\"},\"schema-id\":0}],\n"
                "  \"snapshot-log\": [", (long long)manifest_len);
  if (t.snapshot_log.len) {
    ck_buf_append(j, t.snapshot_log.data, t.snapshot_log.len);
    ck_buf_putc(j, ',');
  }
  ck_buf_printf(j, "{\"timestamp-ms\":%lld,\"snapshot-id\":%lld}],\n  \"metadata-log\": [",
                (long long)ms, (long long)snap);
  if (t.metadata_log.len) ck_buf_append(j, t.metadata_log.data, t.metadata_log.len);
  if (t.version) {
    snprintf(uri, sizeof uri, "file://%s", t.metadata_path);
    ck_buf_printf(j, "%s{\"timestamp-ms\":%lld,\"metadata-file\":", t.metadata_log.len ? "," : "",
                  (long long)t.updated_ms);
    ck_buf_put_json_str(j, uri, strlen(uri));
    ck_buf_putc(j, '}');
  }
  ck_buf_puts(j, "]\n}\n");
  char tmp[FILE_N], final[FILE_N], hint[FILE_N], hint_tmp[FILE_N];
  snprintf(tmp, sizeof tmp, "%s/.v%d.metadata.json.%s.tmp", meta_dir, t.version + 1, u);
  snprintf(final, sizeof final, "%s/v%d.metadata.json", meta_dir, t.version + 1);
  if ((rc = write_new(tmp, j, err))) goto fail;
  if (link(tmp, final) != 0) {
    int e = errno;
    unlink(tmp);
    if (e == EEXIST) {
      ck_error_set(err, CK_EEXISTS, "could not commit to the Iceberg table at '%s': another "
                   "export committed version %d first", dir, t.version + 1);
      ck_error_hint(err, "run the export again: it appends to the newer version");
      rc = CK_EEXISTS;
    } else {
      rc = ck_error_set(err, CK_EIO, "could not create '%s': %s", final, strerror(e));
    }
    goto fail;
  }
  unlink(tmp);
  /* 5. the version hint, replaced whole */
  ck_buf_reset(&file);
  ck_buf_printf(&file, "%d", t.version + 1); /* no newline: some readers take it whole */
  snprintf(hint, sizeof hint, "%s/version-hint.text", meta_dir);
  snprintf(hint_tmp, sizeof hint_tmp, "%s/.version-hint.text.%s.tmp", meta_dir, u);
  if ((rc = write_new(hint_tmp, &file, err))) goto fail;
  if (rename(hint_tmp, hint) != 0) {
    rc = ck_error_set(err, CK_EIO, "could not replace '%s': %s", hint, strerror(errno));
    unlink(hint_tmp);
    goto fail;
  }
  int dfd = open(meta_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* the names, durable too */
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  *version_out = t.version + 1;
fail:
  ck_free(t.snaps);
  ck_buf_fini(&t.snapshots);
  ck_buf_fini(&t.snapshot_log);
  ck_buf_fini(&t.metadata_log);
  ck_buf_fini(&file);
  ck_buf_fini(&schema);
  ck_buf_fini(&json);
  return rc;
}
