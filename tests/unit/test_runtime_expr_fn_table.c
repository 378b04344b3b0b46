/*
 * DESIGN: unit tests for the one SQL function table (CK_FN_TABLE, src/runtime/expr.h): every
 * name and alias a row gives resolves to that row (the planner's lookup), each row's arity is
 * what ck_expr_call enforces, and docs/sql.md's function table is exactly the one rendered from
 * the rows — so a function added, renamed or re-documented in the table without the docs (or
 * the other way round) fails here, printing the block to paste between the markers.
 * Threads: the main thread.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"
#include "runtime/expr.h"

#define BEGIN_MARK "<!-- BEGIN functions"
#define END_MARK "<!-- END functions -->"

/* The block docs/sql.md holds between its markers (marker lines excluded). */
static void render(ck_buf_t *out) {
  ck_buf_puts(out, "| Function | Also called | Arguments | Result |\n");
  ck_buf_puts(out, "|---|---|---|---|\n");
  for (int fn = 0; fn < CK_FN__COUNT; fn++) {
    const ck_fn_info_t *f = ck_fn_info((ck_fn_t)fn);
    if (!f->call) continue;
    char args[32];
    if (f->max_args < 0) snprintf(args, sizeof args, "%d or more", f->min_args);
    else if (f->max_args == f->min_args) snprintf(args, sizeof args, "%d", f->min_args);
    else snprintf(args, sizeof args, "%d to %d", f->min_args, f->max_args);
    ck_buf_printf(out, "| `%s` | %s%s%s | %s | %s |\n", f->signature, f->alias ? "`" : "",
                  f->alias ? f->alias : "", f->alias ? "`" : "", args, f->doc);
  }
}

static char *read_docs(void) {
  /* __FILE__ is this file's absolute path: <root>/tests/unit/test_runtime_expr_fn_table.c */
  char path[4096];
  snprintf(path, sizeof path, "%s", __FILE__);
  char *cut = strstr(path, "tests/unit/");
  assert_non_null(cut);
  snprintf(cut, sizeof path - (size_t)(cut - path), "docs/sql.md");
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("could not open %s", path);
  ck_buf_t b;
  ck_buf_init(&b);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) ck_buf_append(&b, chunk, n);
  fclose(f);
  return ck_buf_detach(&b);
}

static void test_docs_list_exactly_the_table(void **state) {
  (void)state;
  char *doc = read_docs();
  const char *begin = strstr(doc, BEGIN_MARK), *end = strstr(doc, END_MARK);
  if (!begin || !end || end < begin)
    fail_msg("docs/sql.md has no '%s' … '%s' block", BEGIN_MARK, END_MARK);
  begin = strchr(begin, '\n');
  assert_non_null(begin);
  begin++;
  ck_buf_t want;
  ck_buf_init(&want);
  render(&want);
  size_t have_len = (size_t)(end - begin);
  if (have_len != want.len || memcmp(begin, want.data, want.len) != 0) {
    fprintf(stderr, "docs/sql.md's function table differs from CK_FN_TABLE; it should read:\n");
    fputs(want.data, stderr);
    fail_msg("docs/sql.md and src/runtime/expr.h disagree on the function list");
  }
  ck_buf_fini(&want);
  ck_free(doc);
}

static void test_names_and_aliases_resolve_to_their_row(void **state) {
  (void)state;
  int called = 0;
  for (int fn = 0; fn < CK_FN__COUNT; fn++) {
    const ck_fn_info_t *f = ck_fn_info((ck_fn_t)fn);
    assert_non_null(f->name);
    assert_string_equal(ck_fn_name((ck_fn_t)fn), f->name);
    if (f->call) {
      called++;
      assert_int_equal(ck_fn_lookup(f->call), fn);
      char lower[64];
      size_t i = 0;
      for (; f->call[i] && i + 1 < sizeof lower; i++)
        lower[i] = (char)(f->call[i] >= 'A' && f->call[i] <= 'Z' ? f->call[i] + 32 : f->call[i]);
      lower[i] = 0;
      assert_int_equal(ck_fn_lookup(lower), fn); /* SQL names are case-insensitive */
      assert_non_null(f->signature);
      assert_non_null(f->doc);
    } else {
      assert_null(f->alias);
      assert_null(f->signature);
    }
    if (f->alias) assert_int_equal(ck_fn_lookup(f->alias), fn);
  }
  assert_true(called >= 19);
  assert_int_equal(ck_fn_lookup("CHARACTER_LENGTH"), CK_FN_CHAR_LENGTH);
  assert_int_equal(ck_fn_lookup("pow"), CK_FN_POWER);
  assert_int_equal(ck_fn_lookup("NO_SUCH_FUNCTION"), -1);
  assert_int_equal(ck_fn_lookup("+"), -1); /* operators are reached by syntax only */
}

static void test_arity_is_the_tables(void **state) {
  (void)state;
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_value_t v = {0};
  v.type = CK_TYPE(CK_T_NULL);
  v.is_null = true;
  ck_expr_t *args[8];
  for (int i = 0; i < 8; i++) args[i] = ck_expr_literal(&arena, &v);
  for (int fn = 0; fn < CK_FN__COUNT; fn++) {
    const ck_fn_info_t *f = ck_fn_info((ck_fn_t)fn);
    ck_error_t err;
    ck_error_clear(&err);
    if (f->min_args > 0) {
      assert_null(ck_expr_call(&arena, (ck_fn_t)fn, args, f->min_args - 1, &err));
      assert_non_null(strstr(err.message, f->name));
    }
    if (f->max_args >= 0 && f->max_args < 8) {
      ck_error_clear(&err);
      assert_null(ck_expr_call(&arena, (ck_fn_t)fn, args, f->max_args + 1, &err));
      assert_non_null(strstr(err.message, "argument"));
    }
  }
  ck_arena_fini(&arena);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_docs_list_exactly_the_table),
      cmocka_unit_test(test_names_and_aliases_resolve_to_their_row),
      cmocka_unit_test(test_arity_is_the_tables),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
