/*
 * DESIGN: a small read-only JSON reader for the incident tools — the bundle's manifest, the
 * sink-interval evidence, op.json, the job manifest and the scope document are all JSON the
 * engine wrote, read back here (and by the reconcile half) without a library.
 *
 * ck_json_parse builds a tree in the caller's arena: every node, string and array lives as
 * long as the arena. Strings are unescaped (\uXXXX to UTF-8, surrogate pairs joined) and
 * NUL-terminated, with their length (a string may hold a NUL). A number keeps its text and,
 * when it is an integer that fits, its int64 value (is_int); floats also as a double. Depth
 * is bounded (CK_JSON_MAX_DEPTH), every length checked: malformed or hostile input is
 * CK_EDECODE with the byte offset, never a crash. Duplicate keys: the first wins in lookups.
 * Threads: any; a tree is read-only after parsing.
 */
#ifndef CK_INCIDENT_JSON_H
#define CK_INCIDENT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/error.h"

#define CK_JSON_MAX_DEPTH 64

typedef enum ck_json_kind {
  CK_JSON_NULL,
  CK_JSON_BOOL,
  CK_JSON_NUMBER,
  CK_JSON_STRING,
  CK_JSON_ARRAY,
  CK_JSON_OBJECT,
} ck_json_kind_t;

typedef struct ck_json ck_json_t;
struct ck_json {
  ck_json_kind_t kind;
  bool boolean;        /* BOOL */
  bool is_int;         /* NUMBER: an integer literal within int64 */
  int64_t i;           /* NUMBER, when is_int */
  double num;          /* NUMBER */
  const char *str;     /* STRING: unescaped, NUL-terminated; NUMBER: its text */
  size_t len;          /* STRING/NUMBER: bytes of str */
  int n;               /* ARRAY/OBJECT: members */
  ck_json_t **items;   /* ARRAY/OBJECT: values */
  const char **keys;   /* OBJECT: keys (unescaped, NUL-terminated) */
};

/* Parses text[0..len) (one value, surrounding whitespace allowed) into *out. */
int ck_json_parse(const char *text, size_t len, ck_arena_t *arena, ck_json_t **out,
                  ck_error_t *err);
/* The member `key` of an object; NULL when v is not an object or has no such member. */
const ck_json_t *ck_json_get(const ck_json_t *v, const char *key);
/* Item i of an array; NULL out of range or when v is not an array. */
const ck_json_t *ck_json_at(const ck_json_t *v, int i);
/* v as a string (NULL unless a STRING). */
const char *ck_json_str(const ck_json_t *v);
/* v as an integer: true when v is an integral NUMBER within int64. */
bool ck_json_int(const ck_json_t *v, int64_t *out);
/* ck_json_get(v, key) as a string / an integer (def when absent or of another kind). */
const char *ck_json_get_str(const ck_json_t *v, const char *key);
int64_t ck_json_get_int(const ck_json_t *v, const char *key, int64_t def);
bool ck_json_get_bool(const ck_json_t *v, const char *key, bool def);
bool ck_json_is_null(const ck_json_t *v); /* absent (NULL) or JSON null */

#endif
