/*
 * DESIGN: see rest_state.h.
 */
#include "cluster/rest_state.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/time.h"

extern char **environ;

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
       : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The value of name in the raw query string, percent- and '+'-decoded, into out; false when
 * absent. */
static bool query_param(const char *query, const char *name, ck_buf_t *out) {
  size_t nl = strlen(name);
  for (const char *p = query; p && *p;) {
    const char *amp = strchr(p, '&'), *end = amp ? amp : p + strlen(p);
    if ((size_t)(end - p) > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
      for (const char *q = p + nl + 1; q < end; q++) {
        if (*q == '+') {
          ck_buf_putc(out, ' ');
        } else if (*q == '%' && end - q >= 3 && hexval(q[1]) >= 0 && hexval(q[2]) >= 0) {
          ck_buf_putc(out, (char)(hexval(q[1]) * 16 + hexval(q[2])));
          q += 2;
        } else {
          ck_buf_putc(out, *q);
        }
      }
      ck_buf_putc(out, 0);
      out->len--;
      return true;
    }
    p = amp ? amp + 1 : NULL;
  }
  return false;
}

typedef struct child_out {
  ck_buf_t out, err;
  int status;     /* exit status, or -1 */
  bool timed_out, too_big;
} child_out_t;

/* Runs this binary with argv (argv[0] ignored) and collects its output. 0, or -errno when it
 * could not be started. */
static int run_child(char *const *argv, child_out_t *co) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -errno;
  exe[n] = 0;
  int po[2], pe[2];
  if (pipe2(po, O_CLOEXEC)) return -errno;
  if (pipe2(pe, O_CLOEXEC)) {
    int e = errno;
    close(po[0]), close(po[1]);
    return -e;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, po[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid;
  int rc = posix_spawn(&pid, exe, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(po[1]);
  close(pe[1]);
  if (rc) {
    close(po[0]), close(pe[0]);
    return -rc;
  }
  int64_t deadline = ck_mono_ms() + CK_REST_STATE_TIMEOUT_MS;
  struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds) {
    int64_t left = deadline - ck_mono_ms();
    if (left <= 0 || co->too_big) {
      co->timed_out = left <= 0;
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, (int)(left < 1000 ? left : 1000)) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; i++) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char chunk[65536];
      ssize_t r = read(fds[i].fd, chunk, sizeof chunk);
      if (r > 0) {
        ck_buf_t *b = i ? &co->err : &co->out;
        if (b->len + (size_t)r > CK_REST_STATE_MAX_BYTES) co->too_big = true;
        else ck_buf_append(b, chunk, (size_t)r);
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(fds[i].fd);
        fds[i].fd = -1;
        open_fds--;
      }
    }
  }
  for (int i = 0; i < 2; i++)
    if (fds[i].fd >= 0) close(fds[i].fd);
  int ws;
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  co->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  ck_buf_putc(&co->out, 0), co->out.len--;
  ck_buf_putc(&co->err, 0), co->err.len--;
  return 0;
}

void ck_rest_state_answer(int64_t job_id, const char *dir, const char *query,
                          ck_http_resp_t *resp) {
  ck_buf_t sql, format;
  ck_buf_init(&sql);
  ck_buf_init(&format);
  child_out_t co = {0};
  ck_buf_init(&co.out);
  ck_buf_init(&co.err);
  if (!query_param(query, "sql", &sql) || !sql.len) {
    ck_http_error(resp, 400, "the state route needs the query in its 'sql' parameter: "
                  "GET /api/v1/jobs/%lld/state?sql=SELECT%%20slot%%2C%%20COUNT(*)%%20FROM%%20state"
                  "%%20GROUP%%20BY%%20slot", (long long)job_id);
    goto out;
  }
  bool ndjson = false;
  if (query_param(query, "format", &format)) {
    ndjson = strcmp(format.data, "ndjson") == 0;
    if (!ndjson && strcmp(format.data, "json") != 0) {
      ck_http_error(resp, 400, "format must be json or ndjson, not '%.64s'", format.data);
      goto out;
    }
  }
  if (!dir || !*dir) {
    ck_http_error(resp, 404, "job %lld takes no checkpoints, so it has no state to query",
                  (long long)job_id);
    goto out;
  }
  ck_buf_t a_dir, a_sql;
  ck_buf_init(&a_dir);
  ck_buf_init(&a_sql);
  ck_buf_printf(&a_dir, "--dir=%s", dir);
  ck_buf_puts(&a_sql, "--sql=");
  ck_buf_append(&a_sql, sql.data, sql.len);
  char *argv[] = {"clink", "state-query", a_dir.data, a_sql.data, "--log-level=error", NULL};
  int rc = run_child(argv, &co);
  ck_buf_fini(&a_dir);
  ck_buf_fini(&a_sql);
  if (rc) {
    ck_http_error(resp, 500, "could not run the state query: %s", strerror(-rc));
    goto out;
  }
  long long ckpt = -1;
  const char *said = strstr(co.err.data, "state-query: checkpoint ");
  if (said) ckpt = strtoll(said + 24, NULL, 10);
  /* the error text without the line that says which checkpoint was read */
  const char *why = co.err.data;
  if (said == why) why = strchr(said, '\n') ? strchr(said, '\n') + 1 : "";
  if (co.timed_out) {
    ck_http_error(resp, 504, "the state query of job %lld did not finish within %d s and was "
                  "stopped", (long long)job_id, CK_REST_STATE_TIMEOUT_MS / 1000);
  } else if (co.too_big) {
    ck_http_error(resp, 413, "the state query's answer is larger than %zu MiB; select fewer "
                  "rows (WHERE, GROUP BY)", CK_REST_STATE_MAX_BYTES >> 20);
  } else if (co.status != 0 && strstr(why, "could not find a completed checkpoint")) {
    ck_http_error(resp, 404, "job %lld has no completed checkpoint yet", (long long)job_id);
  } else if (co.status != 0) {
    ck_http_error(resp, strncmp(why, "<--sql>:", 8) == 0 ? 400 : 500, "%s", why);
  } else {
    char h[32];
    snprintf(h, sizeof h, "%lld", ckpt);
    ck_http_resp_header(resp, "X-Clink-Checkpoint", h);
    if (ndjson) {
      resp->content_type = "application/x-ndjson";
      ck_buf_append(&resp->body, co.out.data, co.out.len);
    } else {
      ck_buf_printf(&resp->body, "{\"job\":%lld,\"checkpoint\":%lld,\"rows\":[",
                    (long long)job_id, ckpt);
      bool first = true;
      for (const char *p = co.out.data; *p;) {
        const char *nl = strchr(p, '\n'), *e = nl ? nl : p + strlen(p);
        if (e > p) {
          if (!first) ck_buf_putc(&resp->body, ',');
          first = false;
          ck_buf_append(&resp->body, p, (size_t)(e - p));
        }
        p = nl ? nl + 1 : e;
      }
      ck_buf_puts(&resp->body, "]}");
    }
  }
out:
  ck_buf_fini(&sql);
  ck_buf_fini(&format);
  ck_buf_fini(&co.out);
  ck_buf_fini(&co.err);
}
