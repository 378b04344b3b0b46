/*
 * DESIGN: tokenizer and recursive-descent parser for clink's SQL.
 *
 * Input: the whole script as one string. Output: a ck_script_t in the given arena, or the
 * first error with its line:column (first error wins; parsing stops there). Statements are
 * separated by ';'; comments are `-- …` and `/ * … * /`. Anything outside the supported
 * grammar is refused by name ("JOIN is not supported"), never skipped.
 * Threads: any; no global state.
 */
#ifndef CK_SQL_PARSER_H
#define CK_SQL_PARSER_H

#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"
#include "sql/ast.h"

int ck_sql_parse(const char *sql, ck_arena_t *arena, ck_script_t *out, ck_error_t *err);

/* Renders err against the script: "file:line:column: error: …", the source line, a caret
 * under the offending token, and the hint. */
void ck_sql_render_error(const char *sql, const char *filename, const ck_error_t *err,
                         ck_buf_t *out);

#endif
