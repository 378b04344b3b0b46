/*
 * DESIGN: unit tests for src/base/log — levels, CLINK_LOG_LEVEL and line output.
 *
 * Output is captured by pointing ck_log_set_fd at a pipe and reading back exactly the bytes
 * written. CLINK_LOG_LEVEL is read once per process, so each environment case runs this same
 * executable again as a child ("--print-level") with a controlled environment and reads the
 * level from its exit status. Threads: the main thread, plus writers in the interleaving test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#include "base/alloc.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/thread.h"
#include "base/time.h"

static int pipe_fd[2];

static int setup_pipe(void **state) {
  if (pipe(pipe_fd) != 0) return -1;
  if (fcntl(pipe_fd[0], F_SETFL, O_NONBLOCK) != 0) return -1;
  ck_log_set_fd(pipe_fd[1]);
  return 0;
}

static int teardown_pipe(void **state) {
  ck_log_set_fd(-1);
  ck_log_set_level(CK_LOG_INFO);
  close(pipe_fd[0]);
  close(pipe_fd[1]);
  return 0;
}

/* Everything written to the pipe so far; caller frees with ck_buf_fini. */
static void drain(ck_buf_t *out) {
  ck_buf_init(out);
  char chunk[4096];
  for (;;) {
    ssize_t n = read(pipe_fd[0], chunk, sizeof chunk);
    if (n > 0) {
      ck_buf_append(out, chunk, (size_t)n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    assert_true(n < 0 && errno == EAGAIN); /* the write end stays open: never EOF */
    break;
  }
  if (!out->data) ck_buf_reserve(out, 0), out->data[0] = 0;
}

static void assert_output(const char *expect) {
  ck_buf_t out;
  drain(&out);
  assert_string_equal(out.data, expect);
  ck_buf_fini(&out);
}

static void test_log_parse_level(void **state) {
  assert_int_equal(ck_log_parse_level("off"), CK_LOG_OFF);
  assert_int_equal(ck_log_parse_level("error"), CK_LOG_ERROR);
  assert_int_equal(ck_log_parse_level("warn"), CK_LOG_WARN);
  assert_int_equal(ck_log_parse_level("info"), CK_LOG_INFO);
  assert_int_equal(ck_log_parse_level("debug"), CK_LOG_DEBUG);
  assert_int_equal(ck_log_parse_level("DEBUG"), CK_LOG_DEBUG);
  assert_int_equal(ck_log_parse_level("Warn"), CK_LOG_WARN);
  assert_int_equal(ck_log_parse_level("warning"), -1);
  assert_int_equal(ck_log_parse_level("verbose"), -1);
  assert_int_equal(ck_log_parse_level(""), -1);
  assert_int_equal(ck_log_parse_level("3"), -1);
}

static void test_log_set_level_overrides(void **state) {
  ck_log_set_level(CK_LOG_DEBUG);
  assert_int_equal(ck_log_level(), CK_LOG_DEBUG);
  ck_log_set_level(CK_LOG_OFF);
  assert_int_equal(ck_log_level(), CK_LOG_OFF);
  ck_log_set_level(CK_LOG_INFO);
  assert_int_equal(ck_log_level(), CK_LOG_INFO);
}

static void test_log_line_shape(void **state) {
  ck_log_set_level(CK_LOG_INFO);
  ck_log(CK_LOG_INFO, "coordinator.watchdog", "worker lost: %s", "worker-1");
  assert_output("[coordinator.watchdog] worker lost: worker-1\n");
  CK_LOG_WARN("kafka", "broker %d is slow", 3);
  CK_LOG_ERR("sink", "could not write: %s", "disk full");
  assert_output("[kafka] warning: broker 3 is slow\n[sink] error: could not write: disk full\n");
}

static void test_log_filtered_by_level(void **state) {
  ck_log_set_level(CK_LOG_WARN);
  CK_LOG_ERR("s", "e");
  CK_LOG_WARN("s", "w");
  CK_LOG_INFO("s", "i");
  CK_LOG_DEBUG("s", "d");
  assert_output("[s] error: e\n[s] warning: w\n");

  ck_log_set_level(CK_LOG_DEBUG);
  CK_LOG_INFO("s", "i");
  CK_LOG_DEBUG("s", "d");
  assert_output("[s] i\n[s] d\n");

  ck_log_set_level(CK_LOG_INFO);
  CK_LOG_DEBUG("s", "d");
  CK_LOG_INFO("s", "i");
  assert_output("[s] i\n");

  ck_log_set_level(CK_LOG_ERROR);
  CK_LOG_WARN("s", "w");
  CK_LOG_ERR("s", "e");
  assert_output("[s] error: e\n");

  ck_log_set_level(CK_LOG_OFF);
  CK_LOG_ERR("s", "e");
  CK_LOG_INFO("s", "i");
  assert_output("");
}

static void test_log_off_level_message_never_printed(void **state) {
  ck_log_set_level(CK_LOG_DEBUG);
  ck_log(CK_LOG_OFF, "s", "never");
  assert_output("");
}

static void test_log_long_line_truncated_with_newline(void **state) {
  ck_log_set_level(CK_LOG_INFO);
  char *big = malloc(5000);
  assert_non_null(big);
  memset(big, 'L', 4999);
  big[4999] = 0;
  CK_LOG_INFO("big", "%s", big);
  free(big);
  ck_buf_t out;
  drain(&out);
  assert_true(out.len > 1000 && out.len <= 2048);
  assert_memory_equal(out.data, "[big] LLL", 9);
  assert_int_equal(out.data[out.len - 1], '\n');
  assert_null(memchr(out.data, '\n', out.len - 1)); /* exactly one line */
  assert_null(memchr(out.data, 0, out.len));
  ck_buf_fini(&out);
}

static void test_log_set_fd_minus_one_restores_stderr(void **state) {
  ck_log_set_level(CK_LOG_INFO);
  ck_log_set_fd(-1);
  CK_LOG_INFO("test", "this line goes to stderr, not to the pipe");
  assert_output("");
  ck_log_set_fd(pipe_fd[1]);
  CK_LOG_INFO("test", "back");
  assert_output("[test] back\n");
}

enum { WRITERS = 4, LINES = 200 };

static void *writer(void *arg) {
  int id = (int)(intptr_t)arg;
  for (int i = 0; i < LINES; i++)
    CK_LOG_INFO("writer", "thread %d line %03d %s", id, i, "payload-payload-payload");
  return NULL;
}

static void test_log_lines_never_interleave(void **state) {
  ck_log_set_level(CK_LOG_INFO);
  ck_thread_t th[WRITERS] = {0};
  for (int i = 0; i < WRITERS; i++)
    assert_int_equal(ck_thread_start(&th[i], "logw", writer, (void *)(intptr_t)i), 0);
  /* read while the writers run, so a small pipe cannot block them */
  ck_buf_t out;
  ck_buf_init(&out);
  int64_t deadline = ck_mono_ms() + 30000;
  size_t newlines = 0;
  while (newlines < WRITERS * LINES && ck_mono_ms() < deadline) {
    struct pollfd pfd = {.fd = pipe_fd[0], .events = POLLIN};
    if (poll(&pfd, 1, 100) <= 0) continue;
    char chunk[4096];
    ssize_t n = read(pipe_fd[0], chunk, sizeof chunk);
    if (n <= 0) continue;
    for (ssize_t k = 0; k < n; k++) newlines += chunk[k] == '\n';
    ck_buf_append(&out, chunk, (size_t)n);
  }
  for (int i = 0; i < WRITERS; i++) ck_thread_join(&th[i]);
  assert_int_equal(newlines, WRITERS * LINES);
  assert_output(""); /* nothing beyond the expected lines */
  int next[WRITERS] = {0};
  int lines = 0;
  char *save = NULL;
  for (char *line = strtok_r(out.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    int id = -1, n = -1;
    char tail[64];
    assert_int_equal(sscanf(line, "[writer] thread %d line %d %63s", &id, &n, tail), 3);
    assert_in_range(id, 0, WRITERS - 1);
    assert_int_equal(n, next[id]); /* each thread's lines in order, none lost or torn */
    next[id]++;
    assert_string_equal(tail, "payload-payload-payload");
    lines++;
  }
  assert_int_equal(lines, WRITERS * LINES);
  ck_buf_fini(&out);
}

/* ---- CLINK_LOG_LEVEL: one fresh process per case ---- */

static char self_path[4096];

static int level_in_child(const char *env_value, const char *mode) {
  /* the parent's environment minus any CLINK_LOG_LEVEL, plus the case's own value */
  char var[128];
  char *envp[256];
  size_t k = 0;
  for (char **e = environ; *e && k < CK_ARRAY_LEN(envp) - 2; e++)
    if (strncmp(*e, "CLINK_LOG_LEVEL=", 16) != 0) envp[k++] = *e;
  if (env_value) {
    snprintf(var, sizeof var, "CLINK_LOG_LEVEL=%s", env_value);
    envp[k++] = var;
  }
  envp[k] = NULL;
  char *argv[] = {self_path, (char *)mode, NULL};
  pid_t pid;
  assert_int_equal(posix_spawn(&pid, self_path, NULL, NULL, argv, envp), 0);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  return WEXITSTATUS(status);
}

static void test_log_level_from_environment(void **state) {
  assert_int_equal(level_in_child("off", "--print-level"), CK_LOG_OFF);
  assert_int_equal(level_in_child("error", "--print-level"), CK_LOG_ERROR);
  assert_int_equal(level_in_child("warn", "--print-level"), CK_LOG_WARN);
  assert_int_equal(level_in_child("info", "--print-level"), CK_LOG_INFO);
  assert_int_equal(level_in_child("debug", "--print-level"), CK_LOG_DEBUG);
  assert_int_equal(level_in_child("DEBUG", "--print-level"), CK_LOG_DEBUG);
}

static void test_log_level_default_is_info(void **state) {
  assert_int_equal(level_in_child(NULL, "--print-level"), CK_LOG_INFO);
  assert_int_equal(level_in_child("chatty", "--print-level"), CK_LOG_INFO);
  assert_int_equal(level_in_child("", "--print-level"), CK_LOG_INFO);
}

static void test_log_level_environment_read_once(void **state) {
  /* the child changes CLINK_LOG_LEVEL after its first read; the level must not follow */
  assert_int_equal(level_in_child("warn", "--print-level-twice"), CK_LOG_WARN);
}

static void test_log_level_set_beats_environment(void **state) {
  assert_int_equal(level_in_child("error", "--print-level-after-set"), CK_LOG_DEBUG);
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--print-level") == 0) return (int)ck_log_level();
  if (argc == 2 && strcmp(argv[1], "--print-level-twice") == 0) {
    (void)ck_log_level();
    setenv("CLINK_LOG_LEVEL", "debug", 1);
    return (int)ck_log_level();
  }
  if (argc == 2 && strcmp(argv[1], "--print-level-after-set") == 0) {
    ck_log_set_level(CK_LOG_DEBUG);
    return (int)ck_log_level();
  }
  ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
  if (n <= 0) return 1;
  self_path[n] = 0;

  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_log_parse_level),
      cmocka_unit_test(test_log_set_level_overrides),
      cmocka_unit_test_setup_teardown(test_log_line_shape, setup_pipe, teardown_pipe),
      cmocka_unit_test_setup_teardown(test_log_filtered_by_level, setup_pipe, teardown_pipe),
      cmocka_unit_test_setup_teardown(test_log_off_level_message_never_printed, setup_pipe,
                                      teardown_pipe),
      cmocka_unit_test_setup_teardown(test_log_long_line_truncated_with_newline, setup_pipe,
                                      teardown_pipe),
      cmocka_unit_test_setup_teardown(test_log_set_fd_minus_one_restores_stderr, setup_pipe,
                                      teardown_pipe),
      cmocka_unit_test_setup_teardown(test_log_lines_never_interleave, setup_pipe, teardown_pipe),
      cmocka_unit_test(test_log_level_from_environment),
      cmocka_unit_test(test_log_level_default_is_info),
      cmocka_unit_test(test_log_level_environment_read_once),
      cmocka_unit_test(test_log_level_set_beats_environment),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
