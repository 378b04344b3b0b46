/*
 * libclink — the clink stream-processing engine as a library (the one public header).
 *
 * An engine runs SQL scripts in this process: CREATE TABLE statements are remembered for the
 * engine's life, every INSERT INTO … SELECT becomes a standing job (a handle), and a bare
 * SELECT returns its rows as an Arrow C stream. Results leave the engine through tables with
 * connector = 'collect' (read with clink_collect), and a host feeds tables with
 * connector = 'push' (clink_push / clink_push_close) with Arrow C data; both cross the
 * boundary as the Arrow C data interface (ArrowArray, ArrowSchema, ArrowArrayStream).
 *
 * Threads: every function may be called from any thread, and concurrently with any other on
 * the same engine, except clink_engine_close, which must be the last call on its engine (no
 * other call on it may run or follow). A job handle is valid until clink_job_free or the
 * engine's close, whichever comes first. An ArrowArrayStream's get_next blocks, and may be
 * called from any thread but from one at a time per stream (the Arrow rule).
 *
 * Ownership: strings passed in are copied before the call returns. Strings returned
 * (clink_last_error, clink_job_error, clink_job_status_name) belong to the library:
 * clink_last_error's text stays valid until the calling thread's next call on that engine,
 * a job's until clink_job_free. Arrow structures the library fills belong to the caller, who
 * calls their release callback; every batch an ArrowArrayStream hands out stays valid after
 * the stream, its job and its engine are gone (it owns the engine's batch it points into).
 * Arrow structures passed to clink_push are moved: the library calls their release.
 *
 * Closing an engine cancels its running jobs and waits for them; a stream still open on one
 * of its collect tables then reports the error "the engine was closed" from get_next (its
 * batches already handed out stay valid), and must still be released by its owner.
 * Releasing a stream before its end fails the job still writing it ("the stream reading this
 * table was released before its end") rather than leaving it waiting for a reader.
 *
 * Errors: functions return 0 or a negative CLINK_E… code; clink_last_error(engine) then says
 * why, with the line and column of the SQL at fault when there is one (1-based; 0 when none).
 *
 * ABI: CLINK_ABI_VERSION is bumped whenever a struct below or a function's meaning changes
 * incompatibly; libclink.so.<ABI> is the SONAME. Options structs grow only at their end and
 * carry their size, so a program built against an older header keeps working.
 */
#ifndef CLINK_CLINK_H
#define CLINK_CLINK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CLINK_API __attribute__((visibility("default")))
#else
#define CLINK_API
#endif

#define CLINK_ABI_VERSION 1

/* ---- the Arrow C data and stream interfaces (https://arrow.apache.org/docs/format/
 * CDataInterface.html), guarded by the macros the Arrow project uses so another copy of the
 * same definitions (nanoarrow, arrow/c/abi.h) may be included as well */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4
struct ArrowSchema {
  const char *format;
  const char *name;
  const char *metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema **children;
  struct ArrowSchema *dictionary;
  void (*release)(struct ArrowSchema *);
  void *private_data;
};
struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void **buffers;
  struct ArrowArray **children;
  struct ArrowArray *dictionary;
  void (*release)(struct ArrowArray *);
  void *private_data;
};
#endif
#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE
struct ArrowArrayStream {
  int (*get_schema)(struct ArrowArrayStream *, struct ArrowSchema *out);
  int (*get_next)(struct ArrowArrayStream *, struct ArrowArray *out);
  const char *(*get_last_error)(struct ArrowArrayStream *);
  void (*release)(struct ArrowArrayStream *);
  void *private_data;
};
#endif

/* ---- codes (the engine's error classes; the numbers are part of the ABI) */
enum {
  CLINK_OK = 0,
  CLINK_EINVAL = -1,       /* an invalid argument */
  CLINK_ESYNTAX = -3,      /* the SQL does not parse (line:col say where) */
  CLINK_EBIND = -4,        /* an unknown table, column or function (line:col) */
  CLINK_ETYPE = -5,        /* a type mismatch (line:col) */
  CLINK_EUNSUPPORTED = -6, /* not supported (line:col when the SQL asked for it) */
  CLINK_EOPTION = -7,      /* a table option is invalid (line:col) */
  CLINK_ENOTFOUND = -10,   /* no such table */
  CLINK_EEXISTS = -11,     /* already exists, or already taken (a collect table's reader) */
  CLINK_ETIMEOUT = -13,    /* clink_job_wait: the job is still running */
  CLINK_ECANCELLED = -14,  /* the job was cancelled */
  CLINK_ECLOSED = -100,    /* the push table was closed, its job ended, or the engine is
                              closing (the library's own code, outside the engine's range) */
  CLINK_EJOBTIMEOUT = -101, /* the job failed on a timeout of its own (a checkpoint not
                               complete in time): CLINK_ETIMEOUT always means "still running" */
  /* any other negative number is one of the engine's own codes: clink_last_error says it */
};

/* ---- row kinds: the "__op" column of an update stream (see clink_collect) */
typedef enum clink_row_kind {
  CLINK_ROW_INSERT = 0,        /* "+I" */
  CLINK_ROW_UPDATE_BEFORE = 1, /* "-U": the row's value before an update (retraction) */
  CLINK_ROW_UPDATE_AFTER = 2,  /* "+U": the row's new value */
  CLINK_ROW_DELETE = 3,        /* "-D": the row is gone (retraction) */
} clink_row_kind_t;

/* ---- logging */
typedef enum clink_log_level {
  CLINK_LOG_OFF = 0,
  CLINK_LOG_ERROR = 1,
  CLINK_LOG_WARN = 2,
  CLINK_LOG_INFO = 3,
  CLINK_LOG_DEBUG = 4,
} clink_log_level_t;

/* One log line without its newline ("[job] restore point: …"), from any of the engine's
 * threads, one call per line; it must not call back into the library. */
typedef void (*clink_log_fn)(void *ctx, clink_log_level_t level, const char *line);

/* ---- the engine */
typedef struct clink_engine clink_engine_t;
typedef struct clink_job clink_job_t;

typedef struct clink_options {
  size_t size;                   /* sizeof(clink_options_t): set by clink_options_init */
  int parallelism;               /* subtasks per operator (default 1) */
  int max_parallelism;           /* key groups for keyed state (default 128) */
  const char *checkpoint_dir;    /* NULL: no checkpoints; else each job checkpoints into
                                    <dir>/<job name> and resumes from it when run again */
  int64_t checkpoint_interval_ms; /* default 10000 */
  clink_log_level_t log_level;   /* default CLINK_LOG_WARN */
  clink_log_fn log_fn;           /* NULL: lines go to standard error */
  void *log_ctx;
  int64_t max_memory;            /* bytes a job may hold (0: no limit) */
  int collect_batches;           /* batches a collect table holds before its job waits for
                                    the reader (default 16) */
  /* ---- the fields above are the first layout (0.1); these came with 0.2 */
  const char *script_name;       /* what SQL errors name the script ("<sql>": NULL) and, with
                                    one_job, the job's name */
  int one_job;                   /* clink_exec runs a whole script as ONE job, the way
                                    `clink run` does: every INSERT of it, and a bare SELECT
                                    printing to standard output, in one job graph that
                                    checkpoints into checkpoint_dir itself (not a
                                    <dir>/job-<id> per job); push and collect tables are
                                    refused there (nothing feeds or reads them); with a
                                    checkpoint_dir, one engine per script */
  int fresh;                     /* ignore the checkpoints in checkpoint_dir: start over */
  int64_t checkpoint_timeout_ms; /* abandon a checkpoint not complete this long after its
                                    trigger (0: the engine's default) */
  int checkpoints_retained;      /* completed checkpoints kept (0: 3) */
  int max_restarts;              /* restarts a job may use before it fails (< 0: the
                                    engine's default) */
  const char *capture_dir;       /* NULL; else record what every operator subtask consumes
                                    per checkpoint interval under it (clink replay) */
  int64_t capture_records;       /* records each subtask keeps per interval (0: 10000) */
  int64_t progress_interval_ms;  /* log a progress line this often (0: never) */
  int tolerable_failed_checkpoints; /* checkpoints in a row that could not be stored (the
                                    store unreachable, a PUT refused) which are aborted while
                                    the job runs on; one more fails the job, and a restart
                                    rewinds (Flink's execution.checkpointing.
                                    tolerable-failed-checkpoints; 0: none, the first fails) */
} clink_options_t;

/* Fills o with the defaults and sets o->size. It is a macro over clink_options_init_size,
 * so a program fills exactly the struct of the header it was built with; the function
 * clink_options_init itself fills the first layout only (the one programs built against
 * 0.1 have). */
CLINK_API void clink_options_init_size(clink_options_t *o, size_t size);
CLINK_API void(clink_options_init)(clink_options_t *o);
#define clink_options_init(o) clink_options_init_size((o), sizeof *(o))
/* The library's ABI version (CLINK_ABI_VERSION of the library, not of the header you built
 * with) and its release ("0.1.0"). */
CLINK_API int clink_abi_version(void);
CLINK_API const char *clink_version(void);

/* Opens an engine (o NULL: the defaults). On failure *out is NULL and, when err is not NULL,
 * the reason is written there (err_len bytes at most). The log level and callback are the
 * process's: the last engine opened sets them. */
CLINK_API int clink_engine_open(const clink_options_t *o, clink_engine_t **out, char *err,
                                size_t err_len);
/* Cancels every running job, waits for them, frees the engine and every job handle. */
CLINK_API void clink_engine_close(clink_engine_t *e);

/* The calling thread's last error on e: its message ("syntax error: …", several lines with
 * the source excerpt for SQL), and the line and column of the SQL at fault (0 when none).
 * Every pointer may be NULL. */
CLINK_API const char *clink_last_error(clink_engine_t *e, int *line, int *column);

/* Runs a script: its CREATE TABLE statements join the engine's tables, and every
 * INSERT INTO … SELECT starts a job. The handles, in statement order, go to jobs (room for
 * max_jobs; NULL with 0 when the caller keeps none: the engine keeps them), their number to
 * *njobs. A script that does not parse or plan starts nothing and adds no table (one whose
 * jobs cannot start because another job has its push or collect table keeps its tables). A bare SELECT is refused
 * here: use clink_query. */
CLINK_API int clink_exec(clink_engine_t *e, const char *sql, clink_job_t **jobs, int max_jobs,
                         int *njobs);
/* clink_exec of the len bytes at sql (not NUL-terminated; a NUL byte inside is a syntax error
 * at its position, as any byte that is not SQL). */
CLINK_API int clink_exec_len(clink_engine_t *e, const char *sql, size_t len, clink_job_t **jobs,
                             int max_jobs, int *njobs);
/* Runs one bare SELECT as a job whose rows come out of out (an Arrow C stream; released by the
 * caller). *job (may be NULL) receives the job's handle. The stream ends when the job does:
 * its input ended, or it was cancelled (then get_next fails with "cancelled"). */
CLINK_API int clink_query(clink_engine_t *e, const char *sql, struct ArrowArrayStream *out,
                          clink_job_t **job);
/* Reads a collect table: its rows, batch by batch as its job produces them, through out.
 * One reader per table; an unread stream makes the job wait (nothing is dropped); the
 * stream ends when the job writing the table ends (an error if it failed).
 *
 * Row kinds. An append-only result (a projection, a filter, a windowed aggregate) keeps the
 * table's columns exactly: no extra column. An update stream (a GROUP BY without a window:
 * each group's row is inserted, then updated, and deleted when a HAVING stops holding) leads
 * with one more column, "__op", before the table's: the row's kind as an Arrow int8
 * dictionary-encoded column over the strings "+I", "-U", "+U", "-D" — the int8 codes are
 * clink_row_kind_t (the batch's own array, not copied), the strings Flink's RowKind short
 * names. Its schema's metadata then has "clink.upsert_key": the JSON array of the columns
 * whose values name the row an update or delete replaces (the GROUP BY keys; [] for a global
 * aggregate), absent when the table does not carry every key column. The final table is
 * the changelog applied in order: +I and +U set the row of their key, -U and -D remove it.
 * Which shape a stream has is fixed by the job that writes the table (clink_exec before
 * clink_collect); a stream whose schema was read before any job wrote its table is
 * append-only, and a later job writing an update stream into it is refused. */
CLINK_API int clink_collect(clink_engine_t *e, const char *table, struct ArrowArrayStream *out);
/* Waits up to timeout_ms (< 0: for ever) until get_next on s, a stream of clink_query or
 * clink_collect that has not been moved, would return without blocking (a batch, the end or
 * an error): 1, 0 on timeout, CLINK_EINVAL for a stream that is not the library's. A host
 * that must stay responsive (to Ctrl-C, say) polls in short slices before each get_next. */
CLINK_API int clink_stream_poll(struct ArrowArrayStream *s, int64_t timeout_ms);
/* Feeds a push table with one batch, whose schema gives column names (matched to the table's,
 * case-insensitively; a missing nullable column is NULL) and Arrow types (those of the
 * table, or one that converts without loss: timestamps of any unit, narrower integers, large
 * strings). Both are moved (released by the library, also on error). Blocks while the table
 * holds collect_batches batches its job has not taken. */
CLINK_API int clink_push(clink_engine_t *e, const char *table, struct ArrowArray *array,
                         struct ArrowSchema *schema);
/* Ends a push table's input: its source ends once its job took every batch. */
CLINK_API int clink_push_close(clink_engine_t *e, const char *table);

/* What a push or collect table's queue holds and has passed: for a collect table, batches its
 * job produced that the reader has not taken (queued), and how many of the job's sink
 * subtasks wait for room (blocked: the job is held by its reader); for a push table, batches
 * pushed that the job has not taken, and clink_push calls waiting for room. Set size (to
 * sizeof(clink_table_stats_t)) before the call: the struct grows at its end; the library
 * fills what both know and sets size to that. */
typedef struct clink_table_stats {
  size_t size;
  int capacity;                 /* batches the queue holds (collect_batches) */
  int queued;                   /* batches in the queue now */
  int blocked;                  /* writers waiting for room now */
  int64_t batches_in, batches_out; /* batches put and taken so far */
  int64_t rows_in, rows_out;
} clink_table_stats_t;
CLINK_API int clink_table_stats(clink_engine_t *e, const char *table, clink_table_stats_t *out);

/* ---- jobs */
typedef enum clink_job_status {
  CLINK_JOB_RUNNING = 0,
  CLINK_JOB_FINISHED = 1,   /* its input ended and every row was written */
  CLINK_JOB_CANCELLED = 2,
  CLINK_JOB_FAILED = 3,     /* clink_job_error says why */
} clink_job_status_t;

CLINK_API clink_job_status_t clink_job_status(clink_job_t *j);
CLINK_API const char *clink_job_status_name(clink_job_status_t s); /* "RUNNING" */
CLINK_API int64_t clink_job_id(clink_job_t *j);                    /* 1, 2, … per engine */
/* Waits up to timeout_ms (< 0: for ever) for the job to end: 0 when it finished,
 * CLINK_ETIMEOUT while it runs, CLINK_ECANCELLED, or its error's code. */
CLINK_API int clink_job_wait(clink_job_t *j, int64_t timeout_ms);
/* Stops the job: its sources stop, its collect streams fail with "cancelled", and it ends
 * soon after (clink_job_wait). Nothing happens to a job that already ended. */
CLINK_API void clink_job_cancel(clink_job_t *j);
/* Stops the job gracefully: its sources stop reading, what is in flight drains into the
 * sinks (a final checkpoint, when it checkpoints), and it ends FINISHED — Ctrl-C in
 * `clink run`. Call it from a thread, not a signal handler (it takes a lock). Nothing happens
 * to a job that already ended. */
CLINK_API void clink_job_stop(clink_job_t *j);
/* Why the job failed (NULL unless it did); *line, *column as for clink_last_error. */
CLINK_API const char *clink_job_error(clink_job_t *j, int *line, int *column);
/* Records read and written so far. */
CLINK_API void clink_job_counts(clink_job_t *j, int64_t *read, int64_t *written);
/* Forgets the handle (a running job keeps running; the engine still stops it at close). */
CLINK_API void clink_job_free(clink_job_t *j);

/* Waits up to timeout_ms (< 0: for ever) for every job of e to end: 0, CLINK_ETIMEOUT, or the
 * code of the first job (by id) that failed. */
CLINK_API int clink_await_all(clink_engine_t *e, int64_t timeout_ms);
/* Cancels every running job of e. */
CLINK_API void clink_cancel_all(clink_engine_t *e);

/* Bytes of column data the engine copied, and bytes it handed out in place, into the Arrow
 * arrays of every stream of this process so far (BOOLEAN columns are repacked into bitmaps;
 * every other column leaves without a copy). For benchmarks and tests. */
CLINK_API void clink_arrow_bytes(int64_t *copied, int64_t *in_place);

#ifdef __cplusplus
}
#endif

#endif
