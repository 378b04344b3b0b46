/*
 * DESIGN: what collect, verify and scope share (not part of bundle.h's interface): reading a
 * whole file, listing a directory in name order, and a bundle's manifest loaded as JSON.
 * Threads: the command's one thread.
 */
#ifndef CK_INCIDENT_BUNDLE_INT_H
#define CK_INCIDENT_BUNDLE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"
#include "incident/json.h"

/* The bytes of a regular file at path (appended to out). CK_ENOTFOUND when it does not exist,
 * CK_EIO naming it otherwise. */
int ck_bundle_read_file(const char *path, ck_buf_t *out, ck_error_t *err);
/* The names in dir (no "." or ".."), sorted, into the arena; returns how many (-1 when dir
 * cannot be opened). */
int ck_bundle_list(const char *dir, ck_arena_t *arena, char ***names);
bool ck_bundle_is_dir(const char *path);
/* snprintf into out[cap] (a path or a message; cut to fit, always terminated). */
void ck_bundle_fmt(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool ck_bundle_is_file(const char *path);
/* "<prefix><int><suffix>" → the int (>= 0), else -1. */
int64_t ck_bundle_name_id(const char *name, const char *prefix, const char *suffix);

/* A bundle opened for reading: its manifest's tree. */
typedef struct ck_bundle {
  const char *dir;
  ck_arena_t arena;
  ck_buf_t text;            /* manifest.json's bytes */
  const ck_json_t *manifest;
} ck_bundle_t;

/* Reads and parses dir/manifest.json and checks its format and version. */
int ck_bundle_open(ck_bundle_t *b, const char *dir, ck_error_t *err);
void ck_bundle_close(ck_bundle_t *b);
/* The manifest's files entry for path (NULL: not listed). */
const ck_json_t *ck_bundle_file_entry(const ck_bundle_t *b, const char *path);
/* Reads the bundle file path (relative) into out, checking it against the manifest's size and
 * SHA-256: CK_ENOTFOUND when the manifest does not list it or it is absent, CK_ESTATE when it
 * does not match. */
int ck_bundle_read_checked(const ck_bundle_t *b, const char *path, ck_buf_t *out,
                           ck_error_t *err);
/* Whether id is in the JSON array of integers arr. */
bool ck_bundle_has_id(const ck_json_t *arr, int64_t id);

#endif
