/*
 * DESIGN: tokenizer and recursive-descent parser for clink's SQL.
 *
 * Input: the whole script as one string. Output: a ck_script_t in the given arena, or the
 * first error with its line:column (first error wins; parsing stops there). Statements are
 * separated by ';'; comments are `-- …` and `/ * … * /`. Anything outside the supported
 * grammar is refused by name ("JOIN is not supported"), never skipped. The text must be UTF-8
 * without NUL bytes, and expressions nest at most CK_SQL_MAX_DEPTH levels (below).
 * Threads: any; no global state.
 */
#ifndef CK_SQL_PARSER_H
#define CK_SQL_PARSER_H

#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"
#include "sql/ast.h"

/* The deepest nesting of an expression the parser builds. Each parenthesis, function call,
 * CASE, CAST, IN / BETWEEN / LIKE / IS test, NOT and unary minus is a level; a chain of binary
 * operators (a + b + c …, a AND b AND c …) is built left-deep with a loop and is no deeper
 * than its deepest operand: every later walk of a tree (binder, planner, constant folding,
 * evaluation, printing) loops down the first operands of such a chain and recurses only into
 * the other operands, so its recursion is bounded by this limit whatever the chain's length.
 * The value keeps the deepest walk of an accepted tree well inside a 2 MiB stack under ASan. */
#define CK_SQL_MAX_DEPTH 1000
/* The planner's limits, beside it so that the SQL front end's limits are in one place
 * (docs/sql.md, "Limits"): the nodes a walk of one bound expression visits (a subtree that
 * BETWEEN or a simple CASE repeats counts each time), and the windows one record belongs to
 * (HOP size / slide, CUMULATE size / step). */
#define CK_SQL_MAX_EXPR_NODES 1000000
#define CK_SQL_MAX_WINDOWS_PER_RECORD 10000

/* The script is sql[0..len): text in UTF-8 without NUL bytes (refused at their position). */
int ck_sql_parse_n(const char *sql, size_t len, ck_arena_t *arena, ck_script_t *out,
                   ck_error_t *err);
/* The same over a C string (which therefore cannot show a NUL byte). */
int ck_sql_parse(const char *sql, ck_arena_t *arena, ck_script_t *out, ck_error_t *err);

/* Renders err against the script: "file:line:column: error: …", the source line, a caret
 * under the offending token, and the hint. */
void ck_sql_render_error(const char *sql, const char *filename, const ck_error_t *err,
                         ck_buf_t *out);

#endif
