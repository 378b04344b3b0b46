/*
 * DESIGN: `clink replay-diff A B` — the first divergence between two replays' outputs (the
 * NDJSON `clink replay` prints, one emission a line), the way to A/B one capture across two
 * builds: replay it with each, then diff.
 *
 * Lines are compared as bytes: a replay is deterministic by contract (docs/replay.md), so two
 * outputs of one capture and state differ only where the builds do, and "the same JSON spelled
 * another way" is a difference worth seeing. A final newline is not a line of its own, and a
 * missing one on the last line is no difference (an editor's save does not count). The first
 * divergence is printed as
 *   line N differs:
 *   < A's line
 *   > B's line
 * or "A ends after N lines; B goes on:" with B's line N+1 (and the other way round).
 * Exit 0: the same lines; 1: they differ; 2: bad usage or a file that cannot be read.
 * Both files are read whole (replays are bounded by their capture: --capture-records).
 */
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/error.h"
#include "cli/cli.h"

static const ck_cli_opt_t opts[] = {
    {"quiet", NULL, "print nothing; the exit status says whether the outputs differ", 0, 0, 0,
     false},
    {NULL, NULL, NULL, 0, 0, 0, false},
};

/* Line [*pos, end-of-line) of buf; false at the end. Advances *pos past the newline. */
static bool next_line(const ck_buf_t *buf, size_t *pos, const char **line, size_t *len) {
  if (*pos >= buf->len) return false;
  const char *p = buf->data + *pos;
  const char *nl = memchr(p, '\n', buf->len - *pos);
  *line = p;
  *len = nl ? (size_t)(nl - p) : buf->len - *pos;
  *pos += *len + (nl ? 1 : 0);
  return true;
}

/* A line as the terminal shows it: as is, cut at 2000 bytes with the length said. */
static void show(const char *mark, const char *line, size_t len) {
  if (len > 2000) printf("%s %.*s… (%zu bytes)\n", mark, 2000, line, len);
  else printf("%s %.*s\n", mark, (int)len, line);
}

static int replay_diff_main(int argc, char **argv);

const ck_cli_cmd_t ck_cli_cmd_replay_diff = {
    "replay-diff", "the first divergence between two replays' NDJSON outputs", "A B [options]",
    opts, replay_diff_main};

static int replay_diff_main(int argc, char **argv) {
  ck_cli_args_t args;
  int rc = ck_cli_parse(&ck_cli_cmd_replay_diff, argc, argv, &args);
  if (rc) return rc < 0 ? 0 : rc;
  if (args.npositional != 2) {
    fprintf(stderr, "clink replay-diff: expected two files (the outputs of two replays), got %d\n"
            "hint: clink replay … --out a.ndjson, again with the other build --out b.ndjson, "
            "then clink replay-diff a.ndjson b.ndjson\n", args.npositional);
    return 2;
  }
  bool quiet = ck_cli_flag(&ck_cli_cmd_replay_diff, &args, "quiet");
  const char *name[2] = {args.positional[0], args.positional[1]};
  ck_buf_t buf[2];
  ck_buf_init(&buf[0]);
  ck_buf_init(&buf[1]);
  int status = 2;
  for (int i = 0; i < 2; i++) {
    ck_error_t err;
    ck_error_clear(&err);
    if (ck_cli_read_file(name[i], &buf[i], &err)) {
      fprintf(stderr, "clink replay-diff: error: %s\n", err.message);
      goto done;
    }
  }
  size_t pos[2] = {0, 0};
  for (long n = 1;; n++) {
    const char *line[2];
    size_t len[2];
    bool more[2] = {next_line(&buf[0], &pos[0], &line[0], &len[0]),
                    next_line(&buf[1], &pos[1], &line[1], &len[1])};
    if (!more[0] && !more[1]) {
      if (!quiet) printf("same: %ld line%s\n", n - 1, n - 1 == 1 ? "" : "s");
      status = 0;
      break;
    }
    if (more[0] && more[1] && len[0] == len[1] && !memcmp(line[0], line[1], len[0])) continue;
    status = 1;
    if (quiet) break;
    if (more[0] && more[1]) {
      printf("line %ld differs:\n", n);
      show("<", line[0], len[0]);
      show(">", line[1], len[1]);
    } else {
      int longer = more[0] ? 0 : 1;
      printf("%s ends after %ld line%s; %s goes on at line %ld:\n", name[1 - longer], n - 1,
             n - 1 == 1 ? "" : "s", name[longer], n);
      show(longer ? ">" : "<", line[longer], len[longer]);
    }
    break;
  }
done:
  ck_buf_fini(&buf[0]);
  ck_buf_fini(&buf[1]);
  return status;
}
