/*
 * DESIGN: connector='file' — a bounded source over local files, and a sink that is at least
 * once by default and exactly once on request (staged output promoted at commit).
 *
 * Source. `path` is a file, a directory (every non-hidden regular file in it) or a glob
 * pattern; the matching regular files, sorted by name (byte order), are the partitions, and
 * file i belongs to subtask i mod parallelism. A subtask reads its files one after another
 * (never several at once: one read buffer, one descriptor), a record per line — for CSV a
 * record ends at a line break outside a quoted field. Reading goes through one large buffer
 * (FILE_READ_BUF), scanning with memchr for '\n'; a record longer than CK_FORMAT_MAX_RECORD
 * is a decode error like any other and, when skipped, is discarded without being buffered.
 * Blank lines are not records. A poll returns rows of one file only.
 *
 * The position of every owned file is the byte offset and line number of its next record,
 * plus a done flag; it advances only past records handed out (or skipped), so a snapshot
 * taken between polls is an exact cut. With it goes a fingerprint of the bytes before the
 * position: w = min(offset, FILE_FP_WINDOW), and the hashes of the first w bytes of the file
 * and of the w bytes that end at the offset (computed at a snapshot, again only when the
 * offset moved). Snapshot encoding (version 2):
 *   u8 version, uvarint nfiles, then per file: uvarint path length, path bytes,
 *   uvarint offset, uvarint lines before the offset, u8 done, uvarint w, u64 head hash,
 *   u64 tail hash (little-endian).
 * Version 1 is the same without w and the hashes: it is still restored, checking only that
 * the file is not shorter than the offset.
 * Restore matches files by path: a file that is no longer there is ignored (with a warning),
 * a new file starts at its beginning. A file that is now shorter than its position, or whose
 * fingerprint differs (rewritten, or lines added or removed before the position), is refused
 * with its name: resuming there would read nothing, or records from the middle of others.
 * Restore may come before or after open.
 *
 * on_decode_error: 'fail' returns CK_EDECODE "could not decode record at FILE:LINE: reason";
 * 'skip' counts the record (skipped()), logs the first few and then every 10000th, and goes on.
 *
 * Sink. Each subtask writes `path` (parallelism 1) or `path-<subtask>` (parallelism > 1).
 * Rows are encoded into a buffer that is written out at 1 MiB, at every barrier and at finish.
 *
 * delivery_guarantee = 'at_least_once' (the default): rows go straight to the output file.
 * open(restored=false) truncates, open(restored=true) appends — output after a restore is
 * never thrown away, so rows between the last checkpoint and a failure are written again:
 * at least once. prepare writes and fsyncs (and the directory once after creation). Whole
 * records or none: a failed or short write (a full disk) is cut back to the end of the last
 * whole record before the error is returned, and open(restored=true) cuts off a partial last
 * line a killed run left (a file that does not end with '\n' loses the bytes after its last
 * line break; the rerun writes that record again).
 *
 * delivery_guarantee = 'exactly_once': still ONE output file per subtask, but the rows of a
 * checkpoint interval are staged beside it and promoted only when the checkpoint completed.
 *   write        rows go to the hidden staging file `.<name>.pending.staging` in the output's
 *                directory (made at the first row of an interval; a file source's directory
 *                listing or glob never sees dot files).
 *   prepare(N)   fsync it, rename it to `.<name>.<N>.staging`, fsync the directory. The state
 *                is the list of intervals prepared and not yet committed, each with its
 *                checkpoint id k, the output length L_k it starts at and its size, plus E, the
 *                output length once all of them are committed. An empty interval stages
 *                nothing.
 *   commit(N)    for every prepared interval k <= N in order: truncate the output to L_k
 *                (idempotent) and append the staged bytes; then fsync the output, delete the
 *                staged files and fsync the directory. A staged file is deleted only after
 *                every byte of its commit is durable.
 *   recover(R)   for each interval in R's state: if its staged file is still there and the
 *                output does not already hold exactly those bytes at L_k, truncate to L_k and
 *                append them; if it is gone, its commit finished, and the output must reach
 *                L_k + size. Then the output is cut to E (dropping anything an interval after
 *                R left) and every staging file of this output is deleted. A file shorter than
 *                the checkpoint says is an error: it was changed outside the job.
 *   open         fresh: truncate the output and delete stale staging files; restored: keep.
 *   finish       rows staged but never prepared (only a job without checkpoints has them)
 *                are appended directly; a prepared interval still uncommitted at finish is a
 *                protocol error.
 * Sink state encoding (version 2, exactly once only): u8 version, uvarint N, uvarint E,
 * uvarint count, then per interval uvarint k, uvarint L_k, uvarint size. The at-least-once
 * mode leaves no state.
 *
 * Threads: each instance belongs to one subtask's thread.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "base/hash.h"
#include "base/log.h"
#include "connectors/connectors.h"
#include "connectors/event_time.h"
#include "connectors/format.h"
#include "connectors/util.h"
#include "runtime/connector.h"

#define FILE_READ_BUF (CK_FORMAT_MAX_RECORD * 2 + 65536)
#define FILE_SINK_FLUSH ((size_t)1 << 20)
#define FILE_SNAP_VERSION 2
#define FILE_SNAP_VERSION_V1 1 /* positions without a fingerprint: still restored */
#define FILE_FP_WINDOW 4096
#define FILE_SKIP_LOG_FIRST 10

static const ck_opt_def_t file_source_options[] = {
    {"path", CK_OPT_STRING, NULL, NULL, true,
     "file, directory or glob pattern to read (e.g. '/data/readings-*.json'); the matching "
     "files are read in sorted name order, each file is a partition and file i is read by "
     "source subtask i mod parallelism. format is 'json' (default, one object per line) or "
     "'csv'. A job restored from a checkpoint resumes each file at its position, and refuses "
     "a file that is now shorter than that or whose bytes before it changed"},
    CK_FORMAT_OPTION_DEFS,
    {NULL, 0, NULL, NULL, false, NULL},
};

static const ck_opt_def_t file_sink_options[] = {
    {"path", CK_OPT_STRING, NULL, NULL, true,
     "file to write, one record per line in the table's format ('json', the default, or "
     "'csv'). A fresh job truncates it; a job restored from a checkpoint appends to it, after "
     "cutting off a partial last line a killed run left. Records are written whole or not at "
     "all: a write that fails (a full disk) is cut back to the last whole record. With "
     "parallelism > 1, subtask s writes '<path>-<s>'. With delivery_guarantee = "
     "'exactly_once' each checkpoint interval's rows are staged in a hidden file beside it "
     "('.<name>.<N>.staging') and appended when checkpoint N completes, so after any failure "
     "and rerun the file holds every row exactly once"},
    CK_FORMAT_OPTION_DEFS,
    {NULL, 0, NULL, NULL, false, NULL},
};

/* ============================================================ listing the files ====== */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_list(char **files, int n) {
  for (int i = 0; i < n; i++) ck_free(files[i]);
  ck_free(files);
}

/* The regular files `path` names (file, directory or glob), sorted. */
static int list_files(const char *path, char ***out, int *nout, ck_error_t *err) {
  struct stat st;
  ck_buf_t pattern;
  ck_buf_init(&pattern);
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    ck_buf_puts(&pattern, path);
    if (pattern.len && pattern.data[pattern.len - 1] != '/') ck_buf_putc(&pattern, '/');
    ck_buf_putc(&pattern, '*');
  } else {
    ck_buf_puts(&pattern, path);
  }
  glob_t g;
  memset(&g, 0, sizeof g);
  int rc = glob(pattern.data, GLOB_NOSORT, NULL, &g);
  ck_buf_fini(&pattern);
  if (rc != 0 && rc != GLOB_NOMATCH) {
    globfree(&g);
    return ck_error_set(err, CK_EIO, "could not list the files matching '%s'", path);
  }
  char **files = ck_calloc(g.gl_pathc ? g.gl_pathc : 1, sizeof *files);
  int n = 0;
  for (size_t i = 0; rc == 0 && i < g.gl_pathc; i++)
    if (stat(g.gl_pathv[i], &st) == 0 && S_ISREG(st.st_mode))
      files[n++] = ck_strdup(g.gl_pathv[i]);
  globfree(&g);
  qsort(files, (size_t)n, sizeof *files, cmp_str);
  *out = files;
  *nout = n;
  return 0;
}

static int file_check(const ck_schema_t *schema, const ck_options_t *opts, bool as_sink,
                      ck_error_t *err) {
  ck_format_kind_t fmt;
  int rc = ck_format_parse(ck_options_get(opts, "format"), "the file connector", &fmt, err);
  if (rc) return rc;
  const char *path = ck_options_get(opts, "path");
  if (!path || !*path)
    return ck_error_set(err, CK_EOPTION, "the file connector needs option 'path'");
  if (as_sink) {
    char *copy = ck_strdup(path);
    const char *dir = dirname(copy);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
      ck_error_set(err, CK_ENOTFOUND, "could not write file '%s': directory '%s' does not exist",
                   path, dir);
      ck_free(copy);
      return CK_ENOTFOUND;
    }
    ck_free(copy);
    return 0;
  }
  char **files;
  int n;
  if ((rc = list_files(path, &files, &n, err))) return rc;
  free_list(files, n);
  if (n == 0) {
    ck_error_set(err, CK_ENOTFOUND, "no file matches path '%s'", path);
    ck_error_hint(err, "path may name a file, a directory or a glob pattern such as "
                       "'/data/*.json'");
    return CK_ENOTFOUND;
  }
  return 0;
}

/* ==================================================================== source ====== */

typedef struct file_part {
  char *path;
  int64_t offset; /* byte offset of the next record */
  int64_t lines;  /* line breaks before it: the next record starts on line lines+1 */
  bool done;
  /* the fingerprint of the bytes before `offset` (fp_at), see file_fp */
  int64_t fp_at;
  bool fp_valid;
  uint32_t fp_len;
  uint64_t fp_head, fp_tail;
} file_part_t;

typedef struct file_src {
  ck_decoder_t *dec;
  bool multiline;
  bool skip_errors;
  int64_t skipped;
  ck_event_time_check_t etime; /* event_time_null */
  file_part_t *parts;
  int nparts;
  int cur;          /* the file being read */
  ck_buf_t pending; /* restore() before open(): the state, applied at open */
  bool opened;
  /* reading parts[cur] */
  int fd;
  char *buf;
  size_t start, end; /* unconsumed bytes: buf[start..end) */
  int64_t buf_off;   /* file offset of buf[0] */
  bool eof;
  /* the record being found at buf[start]: bytes scanned, CSV state there, line breaks */
  size_t scan;
  int csv_state;
  int64_t rec_lines;
  size_t rec_len, rec_used; /* a found record: its length, and bytes to consume */
  ck_error_t derr; /* a record's decode error; clear between records */
} file_src_t;

enum { REC_EOF = 0, REC_OK = 1, REC_TOO_BIG = 2 };

/* CSV record-end scanning states (RFC 4180): a line break ends a record unless it is inside
 * a quoted field, and a quote opens a quoted field only at the start of a field. */
enum { CSV_FIELD_START = 0, CSV_UNQUOTED, CSV_QUOTED, CSV_QUOTE_IN_QUOTED };

static void src_close_file(file_src_t *fs) {
  if (fs->fd >= 0) close(fs->fd);
  fs->fd = -1;
  fs->start = fs->end = 0;
  fs->buf_off = 0;
  fs->eof = false;
  fs->scan = 0;
  fs->csv_state = CSV_FIELD_START;
  fs->rec_lines = 0;
}

static int read_more(file_src_t *fs, ck_error_t *err) {
  if (fs->start > 0) {
    memmove(fs->buf, fs->buf + fs->start, fs->end - fs->start);
    fs->end -= fs->start;
    fs->buf_off += (int64_t)fs->start;
    fs->start = 0;
  }
  for (;;) {
    ssize_t r = read(fs->fd, fs->buf + fs->end, FILE_READ_BUF - fs->end);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      return ck_error_set(err, CK_EIO, "could not read file '%s': %s", fs->parts[fs->cur].path,
                          strerror(errno));
    if (r == 0) fs->eof = true;
    fs->end += (size_t)r;
    return 0;
  }
}

/* Scans unscanned bytes of the current record for its end; true when found (rec_len and
 * rec_used are set). */
static bool scan_record(file_src_t *fs) {
  const char *base = fs->buf + fs->start;
  size_t avail = fs->end - fs->start;
  if (!fs->multiline) {
    const char *nl = memchr(base + fs->scan, '\n', avail - fs->scan);
    if (!nl) {
      fs->scan = avail;
      return false;
    }
    fs->rec_len = (size_t)(nl - base);
    fs->rec_used = fs->rec_len + 1;
    fs->scan = fs->rec_used;
    fs->rec_lines = 1;
    return true;
  }
  int st = fs->csv_state;
  size_t i = fs->scan;
  while (i < avail) {
    char c = base[i];
    if (st == CSV_QUOTED) { /* jump to the next quote, counting the line breaks passed */
      const char *q = memchr(base + i, '"', avail - i);
      size_t stop = q ? (size_t)(q - base) : avail;
      for (const char *nl = base + i; (nl = memchr(nl, '\n', (size_t)(base + stop - nl))); nl++)
        fs->rec_lines++;
      i = stop;
      if (q) st = CSV_QUOTE_IN_QUOTED, i++;
      continue;
    }
    i++;
    if (c == '\n') {
      fs->rec_lines++;
      fs->csv_state = CSV_FIELD_START;
      fs->scan = i;
      fs->rec_len = i - 1;
      fs->rec_used = i;
      return true;
    }
    if (c == ',') st = CSV_FIELD_START;
    else if (c == '"') st = st == CSV_FIELD_START || st == CSV_QUOTE_IN_QUOTED ? CSV_QUOTED : st;
    else if (st != CSV_UNQUOTED) st = CSV_UNQUOTED;
  }
  fs->csv_state = st;
  fs->scan = avail;
  return false;
}

/* Finds the next record of the open file: REC_OK (at buf+start, rec_len bytes), REC_EOF,
 * REC_TOO_BIG (no end within CK_FORMAT_MAX_RECORD bytes), or a negative error. */
static int next_record(file_src_t *fs, ck_error_t *err) {
  for (;;) {
    if (scan_record(fs)) return REC_OK;
    size_t avail = fs->end - fs->start;
    if (avail > CK_FORMAT_MAX_RECORD) return REC_TOO_BIG;
    if (fs->eof) {
      if (avail == 0) return REC_EOF;
      fs->rec_len = fs->rec_used = avail; /* a last line without '\n' */
      return REC_OK;
    }
    int rc = read_more(fs, err);
    if (rc) return rc;
  }
}

static void consume(file_src_t *fs) {
  file_part_t *part = &fs->parts[fs->cur];
  fs->start += fs->rec_used;
  part->offset = fs->buf_off + (int64_t)fs->start;
  part->lines += fs->rec_lines;
  fs->scan = 0;
  fs->csv_state = CSV_FIELD_START;
  fs->rec_lines = 0;
}

/* Drops an oversized record: reads on to its end without keeping its bytes. */
static int discard_record(file_src_t *fs, ck_error_t *err) {
  for (;;) {
    if (scan_record(fs)) {
      consume(fs);
      return 0;
    }
    if (fs->eof) {
      fs->rec_used = fs->end - fs->start;
      consume(fs);
      return 0;
    }
    /* everything buffered is part of the record: drop it, keep the scan state */
    fs->buf_off += (int64_t)fs->end;
    fs->start = fs->end = fs->scan = 0;
    int rc = read_more(fs, err);
    if (rc) return rc;
  }
}

static int open_file(file_src_t *fs, ck_error_t *err) {
  file_part_t *part = &fs->parts[fs->cur];
  src_close_file(fs);
  fs->fd = open(part->path, O_RDONLY | O_CLOEXEC);
  if (fs->fd < 0)
    return ck_error_set(err, CK_EIO, "could not open file '%s': %s", part->path,
                        strerror(errno));
#ifdef POSIX_FADV_SEQUENTIAL
  (void)posix_fadvise(fs->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  int rc;
  if (ck_decoder_wants_header(fs->dec)) {
    int64_t offset = part->offset, lines = part->lines;
    part->offset = part->lines = 0;
    rc = next_record(fs, err);
    if (rc < 0) return rc;
    if (rc == REC_TOO_BIG)
      return ck_error_set(err, CK_EDECODE, "could not read the CSV header of '%s': it is longer "
                          "than %zu bytes", part->path, CK_FORMAT_MAX_RECORD);
    if (rc == REC_EOF) { /* an empty file */
      part->done = true;
      return 0;
    }
    ck_error_t herr;
    ck_error_clear(&herr);
    size_t len = fs->rec_len;
    if (len && fs->buf[fs->start + len - 1] == '\r') len--;
    if (ck_decoder_header(fs->dec, fs->buf + fs->start, len, &herr))
      return ck_error_set(err, CK_EDECODE, "could not read the CSV header of '%s': %s",
                          part->path, herr.message);
    consume(fs);
    if (offset <= part->offset) return 0; /* fresh: go on after the header */
    part->lines = lines;                  /* restored past the header: seek back there */
    part->offset = offset;
  }
  if (part->offset > 0) {
    if (lseek(fs->fd, (off_t)part->offset, SEEK_SET) < 0)
      return ck_error_set(err, CK_EIO, "could not seek in file '%s': %s", part->path,
                          strerror(errno));
    fs->start = fs->end = fs->scan = 0;
    fs->buf_off = part->offset;
    fs->eof = false;
  }
  return 0;
}

static void log_skip(file_src_t *fs, const char *path, int64_t line, const char *reason) {
  if (fs->skipped <= FILE_SKIP_LOG_FIRST)
    CK_LOG_WARN("source.file", "skipped record at %s:%lld: %s", path, (long long)line, reason);
  if (fs->skipped == FILE_SKIP_LOG_FIRST)
    CK_LOG_WARN("source.file", "further skipped records are logged every 10000th");
  else if (fs->skipped > FILE_SKIP_LOG_FIRST && fs->skipped % 10000 == 0)
    CK_LOG_WARN("source.file", "%lld records skipped so far; latest at %s:%lld: %s",
                (long long)fs->skipped, path, (long long)line, reason);
}

static int apply_state(file_src_t *fs, const void *data, size_t len, ck_error_t *err);

/* The instance, made on first use: restore() may come before open(). */
static file_src_t *src_impl(ck_source_t *src) {
  if (!src->impl) {
    file_src_t *fs = ck_calloc(1, sizeof *fs);
    fs->fd = -1;
    ck_buf_init(&fs->pending);
    src->impl = fs;
  }
  return src->impl;
}

static int file_src_open(ck_source_t *src, ck_error_t *err) {
  file_src_t *fs = src_impl(src);
  const ck_options_t *opts = src->ctx.options;
  ck_format_kind_t fmt;
  int rc = ck_format_parse(ck_options_get(opts, "format"), "the file connector", &fmt, err);
  if (rc) return rc;
  const char *policy = ck_opt_str(opts, ck_source_common_options, "on_decode_error");
  fs->skip_errors = policy && strcmp(policy, "skip") == 0;
  ck_event_time_check_init(&fs->etime, &src->ctx);
  const char *path = ck_options_get(opts, "path");
  if (!path) return ck_error_set(err, CK_EOPTION, "the file connector needs option 'path'");
  char **files;
  int n;
  if ((rc = list_files(path, &files, &n, err))) return rc;
  if (n == 0) {
    free_list(files, n);
    ck_error_set(err, CK_ENOTFOUND, "no file matches path '%s'", path);
    return CK_ENOTFOUND;
  }
  int p = src->ctx.parallelism > 0 ? src->ctx.parallelism : 1;
  fs->parts = ck_calloc((size_t)(n / p + 1), sizeof *fs->parts);
  for (int i = 0; i < n; i++) {
    if (i % p == src->ctx.subtask) fs->parts[fs->nparts++].path = files[i];
    else ck_free(files[i]);
  }
  ck_free(files);
  fs->dec = ck_decoder_new(fmt, src->ctx.schema, opts);
  fs->multiline = ck_decoder_multiline(fs->dec);
  fs->buf = ck_malloc(FILE_READ_BUF);
  fs->opened = true;
  if (fs->pending.len) {
    rc = apply_state(fs, fs->pending.data, fs->pending.len, err);
    ck_buf_fini(&fs->pending);
    if (rc) return rc;
  }
  return 0;
}

static int file_src_npartitions(ck_source_t *src) { return src_impl(src)->nparts; }

static int file_src_poll(ck_source_t *src, ck_batch_t *batch, int max_rows, int timeout_ms,
                         int *partition, ck_error_t *err) {
  file_src_t *fs = src->impl;
  int rows = 0, rc;
  if (max_rows < 1) max_rows = 1;
  for (;;) {
    while (fs->cur < fs->nparts && fs->parts[fs->cur].done) fs->cur++;
    if (fs->cur >= fs->nparts) return rows ? CK_SRC_DATA : CK_SRC_END;
    *partition = fs->cur;
    if (rows >= max_rows) return CK_SRC_DATA;
    file_part_t *part = &fs->parts[fs->cur];
    if (fs->fd < 0) {
      if ((rc = open_file(fs, err))) return rc;
      if (part->done) { /* empty */
        src_close_file(fs);
        continue;
      }
    }
    rc = next_record(fs, err);
    if (rc < 0) return rc;
    int64_t line = part->lines + 1;
    if (rc == REC_EOF) {
      src_close_file(fs);
      part->done = true;
      fs->cur++;
      if (rows) return CK_SRC_DATA; /* one file per poll */
      continue;
    }
    if (rc == REC_TOO_BIG) {
      if (!fs->skip_errors)
        return ck_error_set(err, CK_EDECODE,
                            "could not decode record at %s:%lld: record exceeds the limit of "
                            "%zu bytes",
                            part->path, (long long)line, CK_FORMAT_MAX_RECORD);
      fs->skipped++;
      log_skip(fs, part->path, line, "record exceeds the size limit");
      if ((rc = discard_record(fs, err))) return rc;
      continue;
    }
    const char *rec = fs->buf + fs->start;
    size_t len = fs->rec_len;
    if (len && rec[len - 1] == '\r') len--;
    size_t blank = 0;
    while (blank < len && (rec[blank] == ' ' || rec[blank] == '\t' || rec[blank] == '\r')) blank++;
    if (blank == len) { /* blank line: not a record */
      consume(fs);
      continue;
    }
    /* the decode error lives in the source and is cleared only after it was used: clearing
     * a 1 KB struct per record was 4 % of a file job's CPU */
    ck_error_t *derr = &fs->derr;
    if (ck_decoder_decode(fs->dec, rec, len, batch, derr)) {
      if (!fs->skip_errors)
        return ck_error_set(err, CK_EDECODE, "could not decode record at %s:%lld: %s",
                            part->path, (long long)line, derr->message);
      fs->skipped++;
      log_skip(fs, part->path, line, derr->message);
      ck_error_clear(derr);
    } else if ((rc = ck_event_time_check_row(&fs->etime, batch, derr)) < 0) {
      ck_error_set(err, CK_EDECODE, "record at %s:%lld %s", part->path, (long long)line,
                   derr->message);
      ck_error_hint(err, "event_time_null = 'skip' counts and skips such records instead");
      ck_error_clear(derr);
      return CK_EDECODE;
    } else if (rc == 0) {
      if (fs->etime.skipped <= FILE_SKIP_LOG_FIRST || fs->etime.skipped % 10000 == 0)
        CK_LOG_WARN("source.file", "skipped record at %s:%lld (%lld so far): %s", part->path,
                    (long long)line, (long long)fs->etime.skipped, "it has no event time");
    } else {
      rows++;
    }
    consume(fs);
  }
}

/* The fingerprint of the bytes of `path` before `offset`: *len = min(offset, window), the
 * hashes of the first *len bytes and of the *len bytes ending at offset. */
static int file_fp(const char *path, int64_t offset, uint32_t *len, uint64_t *head,
                   uint64_t *tail, ck_error_t *err) {
  uint32_t w = offset < FILE_FP_WINDOW ? (uint32_t)offset : FILE_FP_WINDOW;
  *len = w;
  *head = *tail = 0;
  if (w == 0) return 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return ck_error_set(err, CK_EIO, "could not open file '%s': %s", path, strerror(errno));
  char buf[FILE_FP_WINDOW];
  int rc = 0;
  for (int k = 0; k < 2 && !rc; k++) {
    off_t at = k == 0 ? 0 : (off_t)(offset - w);
    ssize_t r = pread(fd, buf, w, at);
    if (r != (ssize_t)w) {
      rc = ck_error_set(err, CK_EIO, "could not read file '%s': %s", path,
                        r < 0 ? strerror(errno) : "it is shorter than the position read");
      break;
    }
    *(k == 0 ? head : tail) = ck_hash64(buf, w, 0x66696c65ULL);
  }
  close(fd);
  return rc;
}

static int file_src_snapshot(ck_source_t *src, ck_buf_t *out, ck_error_t *err) {
  file_src_t *fs = src_impl(src);
  ck_buf_putc(out, FILE_SNAP_VERSION);
  ck_buf_put_uvarint(out, (uint64_t)fs->nparts);
  for (int i = 0; i < fs->nparts; i++) {
    file_part_t *part = &fs->parts[i];
    if (!part->fp_valid || part->fp_at != part->offset) {
      int rc = file_fp(part->path, part->offset, &part->fp_len, &part->fp_head, &part->fp_tail,
                       err);
      if (rc) return rc;
      part->fp_at = part->offset;
      part->fp_valid = true;
    }
    size_t n = strlen(part->path);
    ck_buf_put_uvarint(out, n);
    ck_buf_append(out, part->path, n);
    ck_buf_put_uvarint(out, (uint64_t)part->offset);
    ck_buf_put_uvarint(out, (uint64_t)part->lines);
    ck_buf_putc(out, part->done ? 1 : 0);
    ck_buf_put_uvarint(out, part->fp_len);
    ck_buf_put_le64(out, part->fp_head);
    ck_buf_put_le64(out, part->fp_tail);
  }
  return 0;
}

/* Whether `part` can resume at its restored position (v2: fp_* hold the recorded fingerprint;
 * v1: only the size is checked). */
static int check_resume(file_part_t *part, bool have_fp, ck_error_t *err) {
  if (part->offset == 0) return 0;
  struct stat st;
  if (stat(part->path, &st) != 0)
    return ck_error_set(err, CK_EIO, "could not resume reading file '%s': %s", part->path,
                        strerror(errno));
  if ((int64_t)st.st_size < part->offset) {
    ck_error_set(err, CK_ESTATE, "could not resume reading file '%s' at byte %lld (line %lld): "
                 "it is now %lld bytes long", part->path, (long long)part->offset,
                 (long long)part->lines + 1, (long long)st.st_size);
    ck_error_detail(err, "the checkpoint read the file up to byte %lld; it was truncated or "
                    "replaced since", (long long)part->offset);
    ck_error_hint(err, "put the original file back, or run with --fresh to read every input "
                  "from the start again");
    return CK_ESTATE;
  }
  if (!have_fp) {
    CK_LOG_WARN("source.file", "the restored position in '%s' was recorded by an older clink "
                "without a fingerprint: only the file's size was checked", part->path);
    return 0;
  }
  uint32_t len;
  uint64_t head, tail;
  int rc = file_fp(part->path, part->offset, &len, &head, &tail, err);
  if (rc) return rc;
  if (len != part->fp_len || head != part->fp_head || tail != part->fp_tail) {
    ck_error_set(err, CK_ESTATE, "could not resume reading file '%s' at byte %lld (line %lld): "
                 "its contents before that position changed since the checkpoint", part->path,
                 (long long)part->offset, (long long)part->lines + 1);
    ck_error_detail(err, "the %s %u bytes differ from those the checkpoint recorded: the file "
                    "was rewritten, or data was added or removed before the position",
                    head != part->fp_head ? "first" : "last", (unsigned)len);
    ck_error_hint(err, "put the original file back, or run with --fresh to read every input "
                  "from the start again");
    return CK_ESTATE;
  }
  part->fp_at = part->offset;
  part->fp_valid = true;
  return 0;
}

static int apply_state(file_src_t *fs, const void *data, size_t len, ck_error_t *err) {
  const uint8_t *p = data, *end = p + len;
  uint64_t n, plen, offset, lines;
  if (len < 1 || (*p != FILE_SNAP_VERSION && *p != FILE_SNAP_VERSION_V1))
    return ck_error_set(err, CK_ESTATE,
                        "could not restore the file source position: unknown state version %d",
                        len ? *p : -1);
  bool have_fp = *p++ == FILE_SNAP_VERSION;
  if (!ck_uvarint_get(&p, end, &n)) goto truncated;
  src_close_file(fs);
  fs->cur = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (!ck_uvarint_get(&p, end, &plen) || plen > (uint64_t)(end - p)) goto truncated;
    const char *path = (const char *)p;
    p += plen;
    if (!ck_uvarint_get(&p, end, &offset) || !ck_uvarint_get(&p, end, &lines) ||
        p >= end)
      goto truncated;
    bool done = *p++ != 0;
    uint64_t w = 0, head = 0, tail = 0;
    if (have_fp && (!ck_uvarint_get(&p, end, &w) || w > FILE_FP_WINDOW ||
                    !ck_take_le64(&p, end, &head) || !ck_take_le64(&p, end, &tail)))
      goto truncated;
    file_part_t *part = NULL;
    for (int k = 0; k < fs->nparts && !part; k++)
      if (strlen(fs->parts[k].path) == plen && memcmp(fs->parts[k].path, path, plen) == 0)
        part = &fs->parts[k];
    if (!part) {
      CK_LOG_WARN("source.file", "restored position names '%.*s', which this source no longer "
                  "reads; ignored", (int)plen, path);
      continue;
    }
    part->offset = (int64_t)offset;
    part->lines = (int64_t)lines;
    part->done = done;
    part->fp_valid = false;
    part->fp_len = (uint32_t)w;
    part->fp_head = head;
    part->fp_tail = tail;
    int rc = check_resume(part, have_fp, err);
    if (rc) return rc;
  }
  if (p != end) goto truncated;
  return 0;
truncated:
  return ck_error_set(err, CK_ESTATE, "could not restore the file source position: the state "
                      "is truncated or corrupt");
}

static int file_src_restore(ck_source_t *src, const void *data, size_t len, ck_error_t *err) {
  file_src_t *fs = src_impl(src);
  if (!fs->opened) {
    ck_buf_reset(&fs->pending);
    ck_buf_append(&fs->pending, data, len);
    if (len == 0) ck_buf_putc(&fs->pending, 0); /* an empty state is still a (bad) state */
    return 0;
  }
  return apply_state(fs, data, len, err);
}

static int64_t file_src_skipped(ck_source_t *src) { return src_impl(src)->skipped; }
static int64_t file_src_time_skipped(ck_source_t *src) { return src_impl(src)->etime.skipped; }

static void file_src_close(ck_source_t *src) {
  file_src_t *fs = src->impl;
  if (!fs) return;
  src_close_file(fs);
  for (int i = 0; i < fs->nparts; i++) ck_free(fs->parts[i].path);
  ck_free(fs->parts);
  ck_free(fs->buf);
  ck_buf_fini(&fs->pending);
  ck_decoder_free(fs->dec);
  ck_free(fs);
  src->impl = NULL;
}

static const ck_source_ops_t file_source_ops = {
    file_src_open,    file_src_npartitions, file_src_poll,  file_src_snapshot,
    file_src_restore,    file_src_skipped,     file_src_close, file_src_time_skipped,
};

/* ====================================================================== sink ====== */

#define FILE_EOS_STATE_VERSION 2
#define FILE_COPY_CHUNK ((size_t)1 << 20)

/* An interval prepared and not yet committed (exactly once). */
typedef struct file_staged {
  int64_t ckpt;
  int64_t start; /* output length before it: L_k */
  int64_t size;
} file_staged_t;

typedef struct file_sink {
  ck_encoder_t *enc;
  char *path;
  int fd;
  bool dir_synced;
  ck_buf_t buf;
  int64_t whole;      /* at least once: output length up to its last whole record */
  /* exactly once */
  bool eos;
  char *dir, *name;   /* the output's directory and file name */
  int stage_fd;       /* the open interval's staging file, -1 when it has no row yet */
  int64_t stage_size;
  int64_t committed;  /* output length: every committed interval */
  int64_t expected;   /* committed + every prepared, uncommitted interval */
  file_staged_t *staged;
  int nstaged, staged_cap;
} file_sink_t;

/* At least once: appends the buffer (whole records) to the output. A failed or short write
 * (ENOSPC, EIO) is cut back to the end of the last whole record, so the file never ends in a
 * torn line; the buffer is kept and written again by a later flush or a rerun. */
static int sink_flush(file_sink_t *fk, ck_error_t *err) {
  if (!fk->buf.len) return 0;
  int rc = ck_conn_write_all(fk->fd, fk->buf.data, fk->buf.len);
  if (rc) {
    ck_error_set(err, CK_EIO, "could not write file '%s': %s", fk->path, strerror(-rc));
    if (ftruncate(fk->fd, (off_t)fk->whole) != 0)
      ck_error_detail(err, "it could not be cut back to its last whole record at byte %lld "
                      "either (%s)", (long long)fk->whole, strerror(errno));
    else
      ck_error_detail(err, "the file was cut back to its last whole record, at byte %lld",
                      (long long)fk->whole);
    return CK_EIO;
  }
  fk->whole += (int64_t)fk->buf.len;
  ck_buf_reset(&fk->buf);
  return 0;
}

/* At least once, restored: a file that does not end with a line break ends with a record a
 * killed run was writing (or an older clink's failed write): cut it off at the last line
 * break. The rerun writes that record again. */
static int cut_torn_tail(file_sink_t *fk, ck_error_t *err) {
  struct stat st;
  if (fstat(fk->fd, &st) != 0)
    return ck_error_set(err, CK_EIO, "could not stat file '%s': %s", fk->path, strerror(errno));
  int64_t end = (int64_t)st.st_size, cut = end;
  char chunk[4096];
  while (cut > 0) {
    size_t n = cut < (int64_t)sizeof chunk ? (size_t)cut : sizeof chunk;
    ssize_t r = pread(fk->fd, chunk, n, (off_t)(cut - (int64_t)n));
    if (r != (ssize_t)n)
      return ck_error_set(err, CK_EIO, "could not read file '%s': %s", fk->path,
                          r < 0 ? strerror(errno) : "it got shorter while being read");
    const char *nl = memrchr(chunk, '\n', n);
    if (nl) {
      cut -= (int64_t)n - (nl - chunk) - 1;
      break;
    }
    cut -= (int64_t)n;
  }
  if (cut < end) {
    if (ftruncate(fk->fd, (off_t)cut) != 0)
      return ck_error_set(err, CK_EIO, "could not truncate file '%s' to %lld bytes: %s",
                          fk->path, (long long)cut, strerror(errno));
    CK_LOG_WARN("sink.file", "'%s' ended with a partial record (%lld bytes after the last line "
                "break): cut off; the rerun writes it again", fk->path, (long long)(end - cut));
  }
  fk->whole = cut;
  return 0;
}

static void sync_dir(const char *dir) {
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)fsync(dfd);
    close(dfd);
  }
}

static int sink_sync(file_sink_t *fk, ck_error_t *err) {
  int rc = sink_flush(fk, err);
  if (rc) return rc;
  if (fsync(fk->fd) != 0)
    return ck_error_set(err, CK_EIO, "could not sync file '%s': %s", fk->path, strerror(errno));
  if (!fk->dir_synced) { /* make the file's creation durable too */
    sync_dir(fk->dir);
    fk->dir_synced = true;
  }
  return 0;
}

/* ---- exactly once: staging files ---- */

/* "<dir>/.<name>.<ckpt>.staging", or ".pending." for ckpt < 0 (the open interval). */
static char *staged_path(const file_sink_t *fk, int64_t ckpt) {
  ck_buf_t b;
  ck_buf_init(&b);
  if (ckpt < 0) ck_buf_printf(&b, "%s/.%s.pending.staging", fk->dir, fk->name);
  else ck_buf_printf(&b, "%s/.%s.%lld.staging", fk->dir, fk->name, (long long)ckpt);
  return ck_buf_detach(&b);
}

/* Whether dirent `ent` is a staging file of this output: ".<name>.<digits|pending>.staging". */
static bool is_own_staging(const file_sink_t *fk, const char *ent) {
  size_t nlen = strlen(fk->name), elen = strlen(ent);
  static const char suffix[] = ".staging";
  if (elen < nlen + 2 + sizeof suffix || ent[0] != '.' || memcmp(ent + 1, fk->name, nlen) != 0 ||
      ent[1 + nlen] != '.' || strcmp(ent + elen - (sizeof suffix - 1), suffix) != 0)
    return false;
  const char *mid = ent + nlen + 2;
  size_t mlen = elen - nlen - 2 - (sizeof suffix - 1);
  if (mlen == 7 && memcmp(mid, "pending", 7) == 0) return true;
  if (mlen == 0) return false;
  for (size_t i = 0; i < mlen; i++)
    if (mid[i] < '0' || mid[i] > '9') return false;
  return true;
}

/* Deletes every staging file of this output; returns how many. */
static int remove_staging(file_sink_t *fk) {
  DIR *d = opendir(fk->dir);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  ck_buf_t p;
  ck_buf_init(&p);
  while ((e = readdir(d))) {
    if (!is_own_staging(fk, e->d_name)) continue;
    ck_buf_reset(&p);
    ck_buf_printf(&p, "%s/%s", fk->dir, e->d_name);
    if (unlink(p.data) == 0) n++;
  }
  closedir(d);
  ck_buf_fini(&p);
  if (n) sync_dir(fk->dir);
  return n;
}

/* Writes the encode buffer to the open interval's staging file (made on first use). */
static int stage_flush(file_sink_t *fk, ck_error_t *err) {
  if (!fk->buf.len) return 0;
  if (fk->stage_fd < 0) {
    char *sp = staged_path(fk, -1);
    fk->stage_fd = open(sp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int e = errno;
    if (fk->stage_fd < 0) {
      ck_error_set(err, CK_EIO, "could not create staging file '%s': %s", sp, strerror(e));
      ck_free(sp);
      return CK_EIO;
    }
    ck_free(sp);
    fk->stage_size = 0;
  }
  int rc = ck_conn_write_all(fk->stage_fd, fk->buf.data, fk->buf.len);
  if (rc)
    return ck_error_set(err, CK_EIO, "could not write the staging file of '%s': %s", fk->path,
                        strerror(-rc));
  fk->stage_size += (int64_t)fk->buf.len;
  ck_buf_reset(&fk->buf);
  return 0;
}

/* Copies all of file `src` into the output at offset `at`. */
static int copy_into_output(file_sink_t *fk, const char *src, int64_t at, int64_t size,
                            ck_error_t *err) {
  int in = open(src, O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return ck_error_set(err, CK_EIO, "could not open staging file '%s': %s", src,
                        strerror(errno));
  off_t off_in = 0, off_out = (off_t)at;
  int rc = 0;
  bool plain = false;
  while (off_in < size && !plain) {
    ssize_t n = copy_file_range(in, &off_in, fk->fd, &off_out, (size_t)(size - off_in), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) plain = true; /* not supported here (or a short source): copy by hand */
  }
  if (plain) {
    char *chunk = ck_malloc(FILE_COPY_CHUNK);
    while (off_in < size && !rc) {
      size_t want = (size_t)(size - off_in) < FILE_COPY_CHUNK ? (size_t)(size - off_in)
                                                               : FILE_COPY_CHUNK;
      ssize_t r = pread(in, chunk, want, off_in);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        rc = ck_error_set(err, CK_EIO, "could not read staging file '%s': %s", src,
                          r < 0 ? strerror(errno) : "it is shorter than when it was prepared");
        break;
      }
      for (ssize_t done = 0; done < r && !rc;) {
        ssize_t w = pwrite(fk->fd, chunk + done, (size_t)(r - done), off_out);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) rc = ck_error_set(err, CK_EIO, "could not write file '%s': %s", fk->path,
                                     strerror(errno));
        else done += w, off_out += w;
      }
      off_in += r;
    }
    ck_free(chunk);
  }
  close(in);
  return rc;
}

static int output_truncate(file_sink_t *fk, int64_t len, ck_error_t *err) {
  if (ftruncate(fk->fd, (off_t)len) != 0)
    return ck_error_set(err, CK_EIO, "could not truncate file '%s' to %lld bytes: %s", fk->path,
                        (long long)len, strerror(errno));
  return 0;
}

static int output_size(file_sink_t *fk, int64_t *len, ck_error_t *err) {
  struct stat st;
  if (fstat(fk->fd, &st) != 0)
    return ck_error_set(err, CK_EIO, "could not stat file '%s': %s", fk->path, strerror(errno));
  *len = (int64_t)st.st_size;
  return 0;
}

/* Whether the output holds exactly the bytes of staged file `src` at `at`. */
static bool output_holds(file_sink_t *fk, const char *src, int64_t at, int64_t size) {
  int in = open(src, O_RDONLY | O_CLOEXEC);
  if (in < 0) return false;
  char *a = ck_malloc(65536), *b = ck_malloc(65536);
  bool same = true;
  for (int64_t off = 0; off < size && same;) {
    size_t want = size - off < 65536 ? (size_t)(size - off) : 65536;
    ssize_t ra = pread(in, a, want, off), rb = pread(fk->fd, b, want, at + off);
    if (ra != (ssize_t)want || rb != (ssize_t)want || memcmp(a, b, want) != 0) same = false;
    off += (int64_t)want;
  }
  ck_free(a);
  ck_free(b);
  close(in);
  return same;
}

static void staged_push(file_sink_t *fk, file_staged_t s) {
  if (fk->nstaged == fk->staged_cap) {
    fk->staged_cap = fk->staged_cap ? fk->staged_cap * 2 : 4;
    fk->staged = ck_realloc(fk->staged, sizeof *fk->staged * (size_t)fk->staged_cap);
  }
  fk->staged[fk->nstaged++] = s;
}

/* Promotes every prepared interval <= upto, in order (commit and finish). */
static int promote(file_sink_t *fk, int64_t upto, ck_error_t *err) {
  int n = 0, rc = 0;
  while (n < fk->nstaged && fk->staged[n].ckpt <= upto) n++;
  if (!n) return 0;
  for (int i = 0; i < n && !rc; i++) {
    const file_staged_t *s = &fk->staged[i];
    char *sp = staged_path(fk, s->ckpt);
    rc = output_truncate(fk, s->start, err);
    if (!rc) rc = copy_into_output(fk, sp, s->start, s->size, err);
    ck_free(sp);
  }
  if (!rc && fsync(fk->fd) != 0)
    rc = ck_error_set(err, CK_EIO, "could not sync file '%s': %s", fk->path, strerror(errno));
  if (rc) return rc;
  /* every promoted byte is durable: only now may the staged copies go */
  for (int i = 0; i < n; i++) {
    char *sp = staged_path(fk, fk->staged[i].ckpt);
    (void)unlink(sp);
    ck_free(sp);
  }
  sync_dir(fk->dir);
  fk->committed = fk->staged[n - 1].start + fk->staged[n - 1].size;
  memmove(fk->staged, fk->staged + n, sizeof *fk->staged * (size_t)(fk->nstaged - n));
  fk->nstaged -= n;
  return 0;
}

/* ---- the sink ops ---- */

static void file_sink_close(ck_sink_t *sink);

static int file_sink_open_impl(ck_sink_t *sink, bool restored, ck_error_t *err) {
  const ck_options_t *opts = sink->ctx.options;
  ck_format_kind_t fmt;
  int rc = ck_format_parse(ck_options_get(opts, "format"), "the file connector", &fmt, err);
  if (rc) return rc;
  const char *path = ck_options_get(opts, "path");
  if (!path) return ck_error_set(err, CK_EOPTION, "the file connector needs option 'path'");
  file_sink_t *fk = ck_calloc(1, sizeof *fk);
  sink->impl = fk;
  fk->fd = fk->stage_fd = -1;
  ck_buf_init(&fk->buf);
  const char *g = ck_opt_str(opts, ck_sink_common_options, "delivery_guarantee");
  fk->eos = g && strcmp(g, "exactly_once") == 0;
  ck_buf_t p;
  ck_buf_init(&p);
  ck_buf_puts(&p, path);
  if (sink->ctx.parallelism > 1) ck_buf_printf(&p, "-%d", sink->ctx.subtask);
  fk->path = ck_buf_detach(&p);
  char *copy = ck_strdup(fk->path);
  fk->dir = ck_strdup(dirname(copy));
  ck_free(copy);
  copy = ck_strdup(fk->path);
  fk->name = ck_strdup(basename(copy));
  ck_free(copy);
  int flags = O_RDWR | O_CREAT | O_CLOEXEC; /* read too: a restored open checks the last line */
  if (fk->eos) flags = O_RDWR | O_CREAT | O_CLOEXEC | (restored ? 0 : O_TRUNC);
  else flags |= restored ? O_APPEND : O_TRUNC;
  fk->fd = open(fk->path, flags, 0644);
  if (fk->fd < 0)
    return ck_error_set(err, CK_EIO, "could not open file '%s' for writing: %s", fk->path,
                        strerror(errno));
  fk->enc = ck_encoder_new(fmt, sink->ctx.schema);
  struct stat st;
  bool header = fmt == CK_FORMAT_CSV && ck_opt_bool(opts, file_sink_options, "csv.header") &&
                fstat(fk->fd, &st) == 0 && st.st_size == 0;
  if (!fk->eos) {
    if (restored && (rc = cut_torn_tail(fk, err))) return rc;
    if (header) ck_encoder_header(fk->enc, &fk->buf);
    return 0;
  }
  if (!restored) {
    int n = remove_staging(fk);
    if (n) CK_LOG_INFO("sink.file", "'%s': removed %d staging file%s a previous run left", fk->path,
                       n, n == 1 ? "" : "s");
  }
  if (header) { /* the header belongs to the file, not to an interval: written at once */
    ck_encoder_header(fk->enc, &fk->buf);
    if ((rc = sink_sync(fk, err))) return rc;
  }
  if ((rc = output_size(fk, &fk->committed, err))) return rc;
  fk->expected = fk->committed;
  return 0;
}

/* A sink whose open failed is never closed by the executor: it cleans up here. */
static int file_sink_open(ck_sink_t *sink, bool restored, ck_error_t *err) {
  int rc = file_sink_open_impl(sink, restored, err);
  if (rc) file_sink_close(sink);
  return rc;
}

static int file_sink_write(ck_sink_t *sink, const ck_batch_t *batch, ck_error_t *err) {
  file_sink_t *fk = sink->impl;
  ck_encoder_batch(fk->enc, batch, &fk->buf);
  if (fk->buf.len < FILE_SINK_FLUSH) return 0;
  return fk->eos ? stage_flush(fk, err) : sink_flush(fk, err);
}

static int file_sink_prepare(ck_sink_t *sink, int64_t ckpt, ck_buf_t *out, ck_error_t *err) {
  file_sink_t *fk = sink->impl;
  if (!fk->eos) return sink_sync(fk, err);
  int rc = stage_flush(fk, err);
  if (rc) return rc;
  if (fk->stage_fd >= 0) {
    if (fsync(fk->stage_fd) != 0)
      return ck_error_set(err, CK_EIO, "could not sync the staging file of '%s': %s", fk->path,
                          strerror(errno));
    close(fk->stage_fd);
    fk->stage_fd = -1;
    char *from = staged_path(fk, -1), *to = staged_path(fk, ckpt);
    if (rename(from, to) != 0)
      rc = ck_error_set(err, CK_EIO, "could not rename staging file '%s' to '%s': %s", from, to,
                        strerror(errno));
    ck_free(from);
    ck_free(to);
    if (rc) return rc;
    sync_dir(fk->dir);
    staged_push(fk, (file_staged_t){ckpt, fk->expected, fk->stage_size});
    fk->expected += fk->stage_size;
    fk->stage_size = 0;
  }
  ck_buf_putc(out, FILE_EOS_STATE_VERSION);
  ck_buf_put_uvarint(out, (uint64_t)ckpt);
  ck_buf_put_uvarint(out, (uint64_t)fk->expected);
  ck_buf_put_uvarint(out, (uint64_t)fk->nstaged);
  for (int i = 0; i < fk->nstaged; i++) {
    ck_buf_put_uvarint(out, (uint64_t)fk->staged[i].ckpt);
    ck_buf_put_uvarint(out, (uint64_t)fk->staged[i].start);
    ck_buf_put_uvarint(out, (uint64_t)fk->staged[i].size);
  }
  return 0;
}

static int file_sink_commit(ck_sink_t *sink, int64_t ckpt, ck_error_t *err) {
  file_sink_t *fk = sink->impl;
  return fk->eos ? promote(fk, ckpt, err) : 0;
}

static int file_sink_recover(ck_sink_t *sink, int64_t ckpt, const void *state, size_t len,
                             ck_error_t *err) {
  file_sink_t *fk = sink->impl;
  if (!fk->eos) return 0; /* at least once: appending after a restore is the whole story */
  const uint8_t *p = state, *end = p + len;
  uint64_t id, expected, n;
  if (len < 1 || *p != FILE_EOS_STATE_VERSION)
    return ck_error_set(err, CK_ESTATE, "could not recover file '%s' at checkpoint %lld: unknown "
                        "sink state version %d", fk->path, (long long)ckpt, len ? *p : -1);
  p++;
  if (!ck_uvarint_get(&p, end, &id) || !ck_uvarint_get(&p, end, &expected) ||
      !ck_uvarint_get(&p, end, &n) || id != (uint64_t)ckpt || n > len)
    goto corrupt;
  fk->nstaged = 0;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t k, start, size;
    if (!ck_uvarint_get(&p, end, &k) || !ck_uvarint_get(&p, end, &start) ||
        !ck_uvarint_get(&p, end, &size) || k > (uint64_t)ckpt || start + size > expected)
      goto corrupt;
    staged_push(fk, (file_staged_t){(int64_t)k, (int64_t)start, (int64_t)size});
  }
  if (p != end) goto corrupt;
  int rc = 0, redone = 0;
  int64_t have = 0;
  for (int i = 0; i < fk->nstaged && !rc; i++) {
    const file_staged_t *s = &fk->staged[i];
    char *sp = staged_path(fk, s->ckpt);
    struct stat st;
    if ((rc = output_size(fk, &have, err))) {
    } else if (stat(sp, &st) == 0) {
      if (have < s->start + s->size || !output_holds(fk, sp, s->start, s->size)) {
        rc = output_truncate(fk, s->start, err);
        if (!rc) rc = copy_into_output(fk, sp, s->start, s->size, err);
        redone++;
      }
    } else if (have < s->start + s->size) {
      rc = ck_error_set(err, CK_ESTATE, "could not recover file '%s' at checkpoint %lld: the "
                        "staged rows of checkpoint %lld are gone, yet the file is %lld bytes, "
                        "short of the %lld its commit made", fk->path, (long long)ckpt,
                        (long long)s->ckpt, (long long)have, (long long)(s->start + s->size));
      ck_error_hint(err, "the file was changed outside the job; run with --fresh to start over");
    }
    ck_free(sp);
  }
  if (!rc) rc = output_size(fk, &have, err);
  if (!rc && have < (int64_t)expected) {
    rc = ck_error_set(err, CK_ESTATE, "could not recover file '%s' at checkpoint %lld: it is "
                      "%lld bytes, short of the %lld bytes checkpoint %lld committed", fk->path,
                      (long long)ckpt, (long long)have, (long long)expected, (long long)ckpt);
    ck_error_hint(err, "the file was changed outside the job; run with --fresh to start over");
  }
  if (!rc && have > (int64_t)expected) rc = output_truncate(fk, (int64_t)expected, err);
  if (!rc && fsync(fk->fd) != 0)
    rc = ck_error_set(err, CK_EIO, "could not sync file '%s': %s", fk->path, strerror(errno));
  if (rc) return rc;
  int removed = remove_staging(fk);
  CK_LOG_INFO("sink.file", "'%s' recovered at checkpoint %lld: %lld bytes committed, %d staged "
              "interval%s promoted again, %lld bytes after the checkpoint dropped, %d staging "
              "file%s removed", fk->path, (long long)ckpt, (long long)expected, redone,
              redone == 1 ? "" : "s", (long long)(have - (int64_t)expected), removed,
              removed == 1 ? "" : "s");
  fk->nstaged = 0;
  fk->committed = fk->expected = (int64_t)expected;
  return 0;
corrupt:
  fk->nstaged = 0;
  return ck_error_set(err, CK_ESTATE, "could not recover file '%s' at checkpoint %lld: the sink "
                      "state is truncated or corrupt", fk->path, (long long)ckpt);
}

static int file_sink_finish(ck_sink_t *sink, ck_error_t *err) {
  file_sink_t *fk = sink->impl;
  if (!fk->eos) return sink_sync(fk, err);
  if (fk->nstaged)
    return ck_error_set(err, CK_EINTERNAL, "file '%s' reached the end with %d prepared "
                        "interval%s not committed (checkpoint %lld first)", fk->path,
                        fk->nstaged, fk->nstaged == 1 ? "" : "s", (long long)fk->staged[0].ckpt);
  int rc = stage_flush(fk, err);
  if (rc || fk->stage_fd < 0) return rc;
  /* rows no checkpoint covers: only a job without checkpoints has them */
  if (fsync(fk->stage_fd) != 0)
    return ck_error_set(err, CK_EIO, "could not sync the staging file of '%s': %s", fk->path,
                        strerror(errno));
  close(fk->stage_fd);
  fk->stage_fd = -1;
  staged_push(fk, (file_staged_t){INT64_MAX, fk->expected, fk->stage_size});
  char *from = staged_path(fk, -1), *to = staged_path(fk, INT64_MAX);
  if (rename(from, to) != 0)
    rc = ck_error_set(err, CK_EIO, "could not rename staging file '%s': %s", from,
                      strerror(errno));
  ck_free(from);
  ck_free(to);
  if (!rc) rc = promote(fk, INT64_MAX, err);
  if (!rc) fk->expected = fk->committed;
  return rc;
}

static void file_sink_close(ck_sink_t *sink) {
  file_sink_t *fk = sink->impl;
  if (!fk) return;
  if (fk->fd >= 0) {
    ck_error_t ignored;
    ck_error_clear(&ignored);
    /* at least once: best effort. Exactly once: what was not committed stays staged (and is
     * thrown away by the next open or recover) */
    if (!fk->eos) (void)sink_flush(fk, &ignored);
    close(fk->fd);
  }
  if (fk->stage_fd >= 0) close(fk->stage_fd);
  ck_encoder_free(fk->enc);
  ck_buf_fini(&fk->buf);
  ck_free(fk->staged);
  ck_free(fk->path);
  ck_free(fk->dir);
  ck_free(fk->name);
  ck_free(fk);
  sink->impl = NULL;
}

/* The interval evidence's account (docs/evidence.md): the output file, and how far it goes
 * once barrier ckpt's prepare returned: at least once, the bytes synced to it; exactly once,
 * the bytes committed and every prepared interval still waiting for its commit. */
static int file_sink_account(ck_sink_t *sink, int64_t ckpt, ck_buf_t *out, ck_error_t *err) {
  (void)err;
  file_sink_t *fk = sink->impl;
  ck_buf_printf(out, "{\"kind\":\"file\",\"checkpoint\":%lld,\"path\":", (long long)ckpt);
  ck_buf_put_json_str(out, fk->path, strlen(fk->path));
  if (!fk->eos) {
    ck_buf_printf(out, ",\"mode\":\"at_least_once\",\"synced_bytes\":%lld}", (long long)fk->whole);
    return 0;
  }
  ck_buf_printf(out, ",\"mode\":\"exactly_once\",\"committed_bytes\":%lld,\"staged\":[",
                (long long)fk->committed);
  for (int i = 0; i < fk->nstaged; i++)
    ck_buf_printf(out, "%s{\"checkpoint\":%lld,\"start\":%lld,\"bytes\":%lld}", i ? "," : "",
                  (long long)fk->staged[i].ckpt, (long long)fk->staged[i].start,
                  (long long)fk->staged[i].size);
  ck_buf_puts(out, "]}");
  return 0;
}

static const ck_sink_ops_t file_sink_ops = {
    file_sink_open,   file_sink_write, file_sink_prepare, file_sink_commit,
    file_sink_finish, file_sink_close, file_sink_recover, .account = file_sink_account,
};

const ck_connector_t ck_file_connector = {
    .name = "file",
    .description = "local files, one record per line (json or csv): a bounded source over a "
                   "file, directory or glob pattern, and a sink that is at least once, or "
                   "exactly once with delivery_guarantee = 'exactly_once'",
    .source_options = file_source_options,
    .sink_options = file_sink_options,
    .source = &file_source_ops,
    .sink = &file_sink_ops,
    .sink_guarantee = CK_GUARANTEE_EXACTLY_ONCE, /* only when asked; at least once otherwise */
    .sink_rewinds = true, /* recover(R) cuts the output back to what R committed */
    .bounded = true,
    .check = file_check,
};
