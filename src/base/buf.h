/*
 * DESIGN: growable byte buffer and small string helpers.
 *
 * ck_buf_t owns a heap block that doubles as it grows; its bytes are always NUL-terminated so
 * a buffer of text is usable as a C string. One owner thread at a time.
 */
#ifndef CK_BASE_BUF_H
#define CK_BASE_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ck_buf {
  char *data;
  size_t len, cap;
} ck_buf_t;

void ck_buf_init(ck_buf_t *buf);
void ck_buf_fini(ck_buf_t *buf);
void ck_buf_reset(ck_buf_t *buf); /* len = 0, memory kept */
void ck_buf_reserve(ck_buf_t *buf, size_t extra);
void ck_buf_append(ck_buf_t *buf, const void *p, size_t n);
void ck_buf_putc(ck_buf_t *buf, char c);
void ck_buf_puts(ck_buf_t *buf, const char *s);
void ck_buf_printf(ck_buf_t *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a JSON string literal, quotes included. */
void ck_buf_put_json_str(ck_buf_t *buf, const char *s, size_t n);
/* Takes the bytes out: caller owns the returned block (ck_free); the buffer is empty after. */
char *ck_buf_detach(ck_buf_t *buf);

/* A view of bytes that does not own them. */
typedef struct ck_str {
  const char *ptr;
  size_t len;
} ck_str_t;

#define CK_STR(lit) ((ck_str_t){(lit), sizeof(lit) - 1})
static inline ck_str_t ck_str_of(const char *s);
bool ck_str_eq(ck_str_t a, ck_str_t b);
bool ck_str_ieq(ck_str_t a, ck_str_t b); /* ASCII case-insensitive */
bool ck_streq_i(const char *a, const char *b);

/* Levenshtein distance, for "did you mean" hints. */
int ck_edit_distance(const char *a, const char *b);

/* JSON's \u escapes, for every JSON reader (formats, REST, incident bundles): the four hex
 * digits at s as a number (-1 when one is not a hex digit), and code point cp written as
 * UTF-8 at o (returns the bytes written, 1 to 4). */
int ck_hex4(const char *s, unsigned *out);
size_t ck_utf8_put(char *o, unsigned cp);
/* Closest of n candidates to word, or NULL when none is close enough to be a useful hint. */
const char *ck_closest(const char *word, const char *const *candidates, size_t n);

#include <string.h>
static inline ck_str_t ck_str_of(const char *s) { return (ck_str_t){s, strlen(s)}; }

#endif
