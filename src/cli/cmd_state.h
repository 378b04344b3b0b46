/*
 * DESIGN: what the state tools (`clink state-cat`, `state-diff`, `checkpoint-verify`) share:
 * loading the entries of one snapshot file or of every subtask's file of one checkpoint,
 * decoded, in file order; and the decoders of the components' encodings (cmd_state_decode.c).
 * Threads: the main thread.
 */
#ifndef CK_CLI_CMD_STATE_H
#define CK_CLI_CMD_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "base/parquet.h"
#include "checkpoint/store.h"

typedef struct ck_state_entry {
  int64_t ckpt;
  int task;
  uint32_t op;
  char *op_name;   /* the node's name */
  int kind;        /* CK_SNAP_SOURCE / OP / SINK */
  int key_group;   /* CK_SNAP_RAW: not keyed */
  char *slot;
  char *user_key;  /* JSON, or NULL for raw rows */
  char *value;     /* decoded, a JSON object */
  char *raw;       /* the entry's bytes of the component's encoding (the file's `value`) */
  size_t raw_len;
  char *ident;     /* what identifies the entry across checkpoints (state-diff) */
} ck_state_entry_t;

typedef struct ck_state_set {
  ck_state_entry_t *e;
  size_t n, cap;
  int64_t ckpt;    /* the checkpoint read (a single file: its header's) */
  int nfiles;
} ck_state_set_t;

void ck_state_set_free(ck_state_set_t *set);
/* Appends the entries of snapshot file path (its checksum checked first). */
int ck_state_load_file(const char *path, ck_state_set_t *set, ck_error_t *err);
/* The v1 directory of a checkpoint directory given as DIR, DIR/v1 or a cluster job's
 * DIR/job-<id>/v1 (or job-<id>): into root. */
void ck_state_root(const char *dir, char *root, size_t n);
/* dir itself, or for an S3 store (s3://bucket/prefix) a local copy of what it holds
 * (ck_store_fetch; removed at exit) that every reader of a checkpoint directory reads as it
 * reads one on disk. NULL with err set when the copy could not be made. */
const char *ck_state_local_dir(const char *dir, ck_error_t *err);
/* The newest completed checkpoint of root (0: none). */
int64_t ck_state_newest(const char *root);
/* Appends the entries of every subtask's file of checkpoint id under root. */
int ck_state_load_dir(const char *root, int64_t id, ck_state_set_t *set, ck_error_t *err);
/* The task directories of root (numbers), ascending, into *tasks (ck_free); how many. */
int ck_state_tasks(const char *root, int **tasks);
/* One line of JSON for entry e (no newline). */
void ck_state_entry_json(const ck_state_entry_t *e, ck_buf_t *out);

/* A raw (not keyed) encoding of node `node` of kind `kind`, decoded as JSON into j. */
int ck_state_decode_raw(const char *node, int kind, const void *data, size_t len, ck_buf_t *j,
                        ck_error_t *err);

/* Appends set as a new snapshot to the Iceberg table directory dir (created when new); the
 * table's new metadata version into *version (cmd_state_iceberg.c). */
int ck_state_iceberg_export(const char *dir, const ck_state_set_t *set, ck_parquet_codec_t codec,
                            int *version, ck_error_t *err);

#endif
