/*
 * DESIGN: checkpoint storage — the files a checkpoint directory holds, and how they become
 * durable.
 *
 * Layout under the user's --checkpoint-dir (docs/checkpoints.md and docs/state.md are the reference):
 *   v1/<task>/checkpoint-<N>.snap   one subtask's state for checkpoint N (task = the subtask's
 *                                   index in the job, in graph order)
 *   v1/_meta/completed-<N>          checkpoint N completed: every subtask's snapshot is durable
 *   v1/_meta/confirmed-<N>          every sink committed checkpoint N
 *   v1/_meta/fingerprint            the job graph this directory belongs to
 *   v1/_meta/run-base               the highest id on disk when the current lineage started
 *                                   fresh: no checkpoint at or below it is ever restored
 *   v1/_meta/clean-finish           a bounded job reached the end of its input
 *   v1/_meta/id-floor               the highest id pruning ever removed a record of: ids stay
 *                                   above it although its markers and snapshots are gone
 *
 * Retention prunes markers with the snapshots (ck_store_prune), so _meta holds a bounded number
 * of files however long a job runs; the id floor keeps the one fact the pruned markers held
 * that still matters, the highest id used. Every lookup (max id, newest marker, completed ids)
 * reads the whole directory, so its result does not depend on how many files there are or in
 * which order readdir returns them.
 * Every file is written to a temporary name, fsynced, renamed into place and its directory
 * fsynced, so a file either exists whole or not at all; snapshot files carry a CRC32C.
 * Threads: any; operations on different paths do not interfere, and the same path is only
 * ever written by one thread.
 */
#ifndef CK_CHECKPOINT_STORE_H
#define CK_CHECKPOINT_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"

struct ck_s3;
typedef struct ck_store ck_store_t;

/* Called with each name directly under a directory of the store (a file or a directory);
 * non-zero stops the listing. */
typedef int (*ck_store_name_fn)(void *ctx, const char *name);

/* Where the files live: the filesystem, or an S3 bucket (--checkpoint-dir s3://bucket/prefix,
 * base/s3.h), one table of operations on paths relative to the root. Every write is whole or
 * nothing (fs: temporary name, fsync, rename; S3: one PUT, or a
 * multipart upload completed only when every part is in: base/s3.h); a store with other guarantees
 * (a fault-injecting one in tests) comes in as another table. */
typedef struct ck_store_ops {
  int (*write)(const ck_store_t *s, const char *rel, const void *data, size_t n, ck_error_t *err);
  /* write, exactly once: CK_EEXISTS, and nothing changed, when rel exists (fs: link() of the
   * temporary file; S3: PUT with If-None-Match: *) — how markers are written */
  int (*create)(const ck_store_t *s, const char *rel, const void *data, size_t n, ck_error_t *err);
  /* CK_ENOTFOUND (without a message) when rel does not exist */
  int (*read)(const ck_store_t *s, const char *rel, ck_buf_t *out, ck_error_t *err);
  bool (*exists)(const ck_store_t *s, const char *rel);
  int (*remove)(const ck_store_t *s, const char *rel);
  /* the names directly under reldir ("" the root), each once, in no particular order */
  int (*list)(const ck_store_t *s, const char *reldir, ck_store_name_fn fn, void *ctx);
} ck_store_ops_t;

struct ck_store {
  char *root;                /* <dir>/v1, or s3://bucket/prefix/v1: in messages and traces */
  const ck_store_ops_t *ops;
  struct ck_s3 *s3;          /* the S3 store's client; NULL on the filesystem */
  char *key_prefix;          /* the S3 store: "prefix/v1/" keys start with */
  struct ck_store_health {
    _Atomic int list_failures; /* listings that failed since open (ck_store_listings_ok) */
  } *health;
};

/* dir: a directory, or s3://bucket/prefix (credentials and endpoint from the environment:
 * base/s3.h). The S3 bucket must exist. */
int ck_store_open(const char *dir, ck_store_t *store, ck_error_t *err);
/* Whether dir names an S3 store (s3://…). */
bool ck_store_is_remote(const char *dir);
/* Copies every object under an S3 store's URL (s3://bucket/prefix: its v1/, or a
 * coordinator's job-<id>/ stores) into the local directory `local` (which exists), keys less
 * the prefix as paths — so the tools that read a checkpoint directory (state-*,
 * checkpoint-verify, incident collect) read an S3 store through the same code. An object
 * deleted between the LIST and its GET (retention of a running job) is left out, as a later
 * listing would; CK_ENOTFOUND when the prefix holds nothing. */
int ck_store_fetch(const char *url, const char *local, ck_error_t *err);
/* The names directly under dir itself (not under its v1/): a coordinator's job-<id> stores.
 * A directory that does not exist has none. */
int ck_store_dir_names(const char *dir, ck_store_name_fn fn, void *ctx, ck_error_t *err);
/* mkdir -p: path and every directory above it (0755); 0, or -1 with errno. Also the flight
 * recorder's (capture/), which writes beside the checkpoints the same way. */
int ck_store_mkdirs(const char *path);
void ck_store_close(ck_store_t *store);
/* 0 when every listing since open succeeded (the lookups below answer from listings and have
 * no error of their own); CK_EIO naming the store otherwise. Decisions that rest on what the
 * store holds (the next id, the restore point) check it after their lookups. */
int ck_store_listings_ok(const ck_store_t *store, ck_error_t *err);

/* Durable whole-file replace of path (any path, not only under a store): written to a fresh
 * temporary name beside it created with `mode` (less the umask), fsynced, renamed into place,
 * and the directory fsynced — so path holds either the old bytes or the new ones, whole. Also
 * what the coordinator's HA directory (cluster/ha.c) writes its epoch and manifests with. */
int ck_store_replace(const char *path, const void *data, size_t n, int mode, ck_error_t *err);
/* Durable whole-file write of relpath (under root, ck_store_replace, mode 0644); parent
 * directories are created. */
int ck_store_write(const ck_store_t *store, const char *relpath, const void *data, size_t n,
                   ck_error_t *err);
/* Reads relpath; CK_ENOTFOUND when it does not exist. */
int ck_store_read(const ck_store_t *store, const char *relpath, ck_buf_t *out, ck_error_t *err);
bool ck_store_exists(const ck_store_t *store, const char *relpath);
int ck_store_remove(const ck_store_t *store, const char *relpath);

/* Markers: "completed" or "confirmed", each written once (ops->create): a second writer of the
 * same id gets CK_EEXISTS naming the marker, and the first one's marker stays. */
int ck_store_mark(const ck_store_t *store, const char *kind, int64_t id, ck_error_t *err);
bool ck_store_marked(const ck_store_t *store, const char *kind, int64_t id);
/* The highest checkpoint id with any durable record (marker, snapshot file or the id floor);
 * 0 if none. */
int64_t ck_store_max_id(const ck_store_t *store);
/* The newest `kind` marker's id; 0 if none. */
int64_t ck_store_latest(const ck_store_t *store, const char *kind);
/* The ids of every completed marker above `above` (and below `below`, when not 0), newest
 * first, in *ids (ck_free it); returns how many. */
int ck_store_completed_ids(const ck_store_t *store, int64_t above, int64_t below, int64_t **ids);
/* Retention: removes snapshot files and markers of checkpoints below keep_from, after making
 * `floor` (the newest id in use) the durable id floor. 0, or CK_EIO when the floor could not
 * be written (then nothing is removed). */
int ck_store_prune(const ck_store_t *store, int64_t keep_from, int64_t floor, int ntasks,
                   ck_error_t *err);

/* Snapshot file of one subtask: an Arrow IPC stream (docs/state.md is the reference).
 *
 * One row per entry of state: op_id (uint32, the graph node), key_group (uint16; CK_SNAP_RAW
 * for state that is not keyed), slot (dictionary<int8, utf8>: "<raw>", "win", "group"; the
 * dictionary batch follows the schema), user_key (binary: the group key as JSON; empty for raw
 * rows), value (binary: the component's own versioned encoding, cut into entries, less what
 * the key_group and user_key columns hold). A component that is not split is one raw row whose
 * value is its encoding. A split one (the aggregation) has its header as a raw row, then a row
 * per record whose value is the record without its key group and key; restore puts every
 * record back together from the three columns (the component's joiner), so every component
 * gets exactly the bytes it wrote. Schema metadata:
 * clink.format_version "3.0", clink.checkpoint_id, clink.job_fingerprint (16 hex digits),
 * clink.task_index, clink.operators and clink.state_versions (JSON: per op_id its node name,
 * kind and encoding version), clink.crc32c (8 hex digits: the CRC32C of the whole file with
 * these 8 bytes read as '0'). */

#define CK_SNAP_RAW 0xFFFF          /* key group of state that is not keyed */
#define CK_SNAP_FORMAT_MAJOR 3      /* the major version of the file layout */
#define CK_SNAP_FORMAT_VERSION "3.0"

/* One entry a component's splitter finds in its encoding. */
typedef struct ck_snap_entry {
  int key_group;      /* CK_SNAP_RAW: not keyed */
  const char *slot;   /* "<raw>", "win", "group" */
  const char *key;    /* the user key as JSON (key_len 0 for raw rows) */
  size_t key_len;
  const void *value;  /* the next bytes of the encoding: entries are contiguous, in order */
  size_t value_len;
  const char *json;   /* when decoding: the entry decoded, a JSON object; else NULL */
  size_t json_len;
  /* what the row's value leaves out, as its other columns hold it: the first group_len bytes
   * (the key group), and bytes key_from..key_to (the key; key_to 0: none) */
  size_t group_len, key_from, key_to;
  const struct ck_snap_run *run; /* set: the entry stands for a run of records (ck_snap_run_t) */
} ck_snap_entry_t;

/* The bytes of entry e the snapshot row's value holds, in one or two parts; returns how many. */
static inline int ck_snap_entry_row(const ck_snap_entry_t *e, const uint8_t **p, size_t *n) {
  const uint8_t *v = (const uint8_t *)e->value;
  if (!e->key_to) {
    p[0] = v + e->group_len, n[0] = e->value_len - e->group_len;
    return 1;
  }
  p[0] = v + e->group_len, n[0] = e->key_from - e->group_len;
  p[1] = v + e->key_to, n[1] = e->value_len - e->key_to;
  return 2;
}

/* A run of records of one layout that a splitter may give the writer as one entry (never
 * when decoding): n records of rec_len bytes each, contiguous from the entry's value
 * (value_len n * rec_len); each record's key group is the little-endian u32 at its start
 * (group_len 4), its key the JSON at keys[key_off[i]..key_off[i + 1]) (key_off[0] 0), and
 * its row's value the record less its first group_len bytes and bytes key_from..key_to, as
 * the entry's fields give them for every record. The writer fills its columns a run at a
 * time, with no call and no check per row. */
typedef struct ck_snap_run {
  int64_t n;
  size_t rec_len;
  const char *keys;
  const uint32_t *key_off;
} ck_snap_run_t;

typedef int (*ck_snap_emit_fn)(void *ctx, const ck_snap_entry_t *entry, ck_error_t *err);
/* Cuts an encoding into entries, calling emit for each (decode: with its JSON); with emit
 * NULL it reads the header only. Returns the encoding's version (>= 0), or a negative CK_E…
 * code (CK_ESTATE when it is not one). */
typedef int (*ck_snap_split_fn)(const void *data, size_t len, bool decode, ck_snap_emit_fn emit,
                                void *ctx, ck_error_t *err);

/* Consecutive rows of one record batch, as its columns hold them: row i's key group is the
 * little-endian u16 at key_group + 2 i, its user_key bytes key_data[key_off[i]..key_off[i+1]),
 * its value val_data[val_off[i]..val_off[i+1]) (the reader has checked every offset). */
typedef struct ck_snap_rows {
  int64_t n;
  const uint8_t *key_group;
  const int32_t *key_off, *val_off;
  const uint8_t *key_data, *val_data;
} ck_snap_rows_t;

/* The inverse of a splitter: puts a component's encoding back together from its rows. open
 * gets the value of a section's first row (the encoding's header) and returns the joiner's
 * state, or NULL when the section is not one it joins (not its encoding, or written whole as
 * one row): that section's values are then concatenated as they are. row appends to out the
 * bytes of the encoding that the row (key_group, user_key, value) stands for; CK_ESTATE when it
 * cannot; rows, when set, does the same for a run of rows. */
typedef struct ck_snap_joiner {
  void *(*open)(const void *head, size_t len);
  int (*row)(void *state, int key_group, const uint8_t *key, size_t key_len,
             const uint8_t *value, size_t value_len, ck_buf_t *out, ck_error_t *err);
  /* Optional: the rows of a run at once (what row would give for each, in order; a restore
   * rebuilds millions of records, so no call per row). NULL: row is called per row. */
  int (*rows)(void *state, const ck_snap_rows_t *rows, ck_buf_t *out, ck_error_t *err);
  void (*close)(void *state);
} ck_snap_joiner_t;

typedef struct ck_snap_section {
  uint32_t node;      /* graph node id */
  uint8_t kind;       /* CK_SNAP_SOURCE / OP / SINK */
  const void *data;
  size_t len;
  const char *name;       /* the node's name ("kafka_source", "window_agg"); NULL: "node-<id>" */
  ck_snap_split_fn split; /* NULL: the encoding is one raw row (its first byte its version) */
} ck_snap_section_t;

enum { CK_SNAP_SOURCE = 0, CK_SNAP_OP = 1, CK_SNAP_SINK = 2 };

void ck_snap_path(int task, int64_t id, char *out, size_t n);
/* The full path of a file under the store's root. */
void ck_store_path(const ck_store_t *store, const char *relpath, char *out, size_t n);
/* Whether the snapshot file at path is whole: an Arrow IPC stream of this layout whose
 * CRC32C matches (read in chunks: the file is never held in memory). On success the header's
 * checkpoint id, task and fingerprint in *id, *task, *fingerprint (any may be NULL). CK_ESTATE
 * naming the path and what is wrong otherwise (an old version-1 binary file, an unknown major
 * version, a checksum mismatch). */
int ck_snap_check_file(const char *path, int64_t *id, int *task, uint64_t *fingerprint,
                       ck_error_t *err);
/* Whether task's snapshot file of checkpoint id can be restored: it exists and is readable,
 * ck_snap_check_file passes, and its header names this checkpoint, task and job. CK_ESTATE
 * with the file's path and what is wrong otherwise. */
int ck_snap_check(const ck_store_t *store, int task, int64_t id, uint64_t fingerprint,
                  ck_error_t *err);
/* Encodes the sections into out (an Arrow IPC stream). */
void ck_snap_encode(int64_t id, uint64_t fingerprint, int task, const ck_snap_section_t *sections,
                    int nsections, ck_buf_t *out);
/* Checks the layout, version, CRC, id, fingerprint and task (id < 0: any id, task < 0: any
 * task, fingerprint 0: any job); fills up to max sections whose data point into *scratch
 * (which holds the components' encodings, put together from the rows by joiner — NULL: values
 * concatenated — ck_buf_fini it after). CK_ESTATE with a reason on any mismatch. */
int ck_snap_decode(const void *data, size_t len, int64_t id, uint64_t fingerprint, int task,
                   const ck_snap_joiner_t *joiner, ck_snap_section_t *sections, int max,
                   int *nsections, ck_buf_t *scratch, ck_error_t *err);
/* The same, rebuilding the encodings over the file's record batches in data as it reads them
 * (no second buffer of the file's size: a restore's way): the sections point into data, or
 * into scratch when an encoding came out longer than its rows. data's record batches are no
 * longer a snapshot after it (its schema is kept). */
int ck_snap_decode_in_place(void *data, size_t len, int64_t id, uint64_t fingerprint, int task,
                            const ck_snap_joiner_t *joiner, ck_snap_section_t *sections, int max,
                            int *nsections, ck_buf_t *scratch, ck_error_t *err);

#endif
