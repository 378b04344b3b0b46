/*
 * DESIGN: the SQL abstract syntax tree.
 *
 * What the parser builds and the binder reads: statements (CREATE TABLE, INSERT INTO … SELECT,
 * SELECT) and untyped expressions, each node with the line:column where it starts so every
 * later error can point at it. Nodes live in the parse arena (the lifetime of one script).
 */
#ifndef CK_SQL_AST_H
#define CK_SQL_AST_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/types.h"

typedef struct ck_pos {
  int line, column; /* 1-based */
  int offset, len;  /* bytes into the script, for the caret */
} ck_pos_t;

typedef enum ck_ast_kind {
  CK_AST_IDENT,    /* name, qualifier (may be NULL) */
  CK_AST_INT,      /* integer literal text */
  CK_AST_NUMBER,   /* decimal / exponent literal text */
  CK_AST_STRING,
  CK_AST_BOOL,
  CK_AST_NULL,
  CK_AST_INTERVAL, /* INTERVAL 'n' UNIT, value in ms */
  CK_AST_STAR,     /* * in COUNT(*) or SELECT * */
  CK_AST_BINARY,   /* op, args[0], args[1] */
  CK_AST_UNARY,    /* op: "-", "+", "NOT" */
  CK_AST_CALL,     /* name(args), distinct */
  CK_AST_CASE,     /* operand (may be NULL), args = when, then, …, else_ */
  CK_AST_CAST,     /* args[0] AS type */
  CK_AST_IN,       /* args[0] IN (args[1..]), negated */
  CK_AST_BETWEEN,  /* args[0] BETWEEN args[1] AND args[2], negated */
  CK_AST_LIKE,     /* args[0] LIKE args[1], negated */
  CK_AST_IS,       /* args[0] IS [NOT] NULL|TRUE|FALSE: op "NULL"/"TRUE"/"FALSE", negated */
} ck_ast_kind_t;

typedef struct ck_ast ck_ast_t;
struct ck_ast {
  ck_ast_kind_t kind;
  ck_pos_t pos;
  const char *text;      /* IDENT name, literal text, CALL name, BINARY/UNARY op */
  const char *qualifier; /* IDENT: table alias or name before the dot */
  bool bval, negated, distinct;
  bool filtered;         /* CALL written with FILTER (WHERE p): its argument is already
                          * CASE WHEN p THEN x END (COUNT(*): THEN 1), which only an aggregate
                          * may take this way */
  int64_t ms;            /* INTERVAL */
  ck_type_t cast_type;   /* CAST */
  ck_ast_t *operand;     /* CASE x WHEN … */
  ck_ast_t *else_;       /* CASE */
  int nargs;
  ck_ast_t **args;
  uint64_t hash;         /* structural hash, filled in by the planner when it needs it (0: not yet) */
};

typedef struct ck_ast_column {
  const char *name;
  ck_type_t type;      /* a computed column's comes from the planner */
  ck_pos_t pos;
  ck_ast_t *computed;  /* `name AS expr`: the expression (PROCTIME() for processing time), or NULL */
} ck_ast_column_t;

typedef struct ck_ast_select_item {
  ck_ast_t *expr;
  const char *alias; /* NULL when none */
  ck_pos_t pos;
  ck_pos_t alias_pos; /* set for an alias written without AS */
} ck_ast_select_item_t;

typedef struct ck_ast_select {
  ck_pos_t pos;
  int nitems;
  ck_ast_select_item_t *items;
  const char *from;        /* table name */
  const char *from_alias;
  ck_pos_t from_pos;
  ck_ast_t *where;
  int ngroup;
  ck_ast_t **group_by;
  ck_ast_t *having;
  /* GROUPING SETS / ROLLUP / CUBE: nsets grouping sets, each a mask over group_by (bit i:
   * group_by[i] is a key of the set); 0 for a plain GROUP BY, whose keys are all of group_by */
  int nsets;
  uint64_t *sets;
  /* FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size[, offset])) (HOP, CUMULATE likewise), a
   * windowing table function: a CALL named TUMBLE/HOP/CUMULATE whose args are the DESCRIPTOR's
   * column (an IDENT) and then the interval arguments in Flink's order; `from` is t. NULL for a
   * plain FROM table. */
  ck_ast_t *window_tvf;
} ck_ast_select_t;

typedef enum ck_stmt_kind { CK_STMT_CREATE_TABLE, CK_STMT_INSERT, CK_STMT_SELECT,
                             CK_STMT_CREATE_FUNCTION } ck_stmt_kind_t;

typedef struct ck_stmt {
  ck_stmt_kind_t kind;
  ck_pos_t pos;
  /* CREATE TABLE */
  const char *table;
  ck_pos_t table_pos;
  bool if_not_exists;
  int ncolumns;
  ck_ast_column_t *columns;
  int noptions;
  const char **opt_keys, **opt_values;
  ck_pos_t *opt_pos;
  const char *wm_column;   /* WATERMARK FOR wm_column AS wm_expr, or NULL */
  ck_ast_t *wm_expr;
  ck_pos_t wm_pos, wm_column_pos;
  /* INSERT INTO table [ (cols) ] SELECT */
  int ninsert_cols;
  const char **insert_cols;
  ck_ast_select_t *select;
  /* CREATE [TEMPORARY [SYSTEM]] FUNCTION [IF NOT EXISTS] table AS 'fn_symbol'
   *   USING [LIBRARY] 'fn_path' LANGUAGE C   (the two clauses in either order; name in table) */
  const char *fn_symbol, *fn_path;
  ck_pos_t fn_symbol_pos, fn_path_pos;
  bool fn_temporary;
} ck_stmt_t;

typedef struct ck_script {
  int nstmts;
  ck_stmt_t **stmts;
} ck_script_t;

#endif
