/*
 * DESIGN: `clink state-query --sql="SELECT …"` — SQL over one checkpoint's state, evaluated by
 * clink's own engine.
 *
 * The entries of one checkpoint (cmd_state.h: a file with --from, every subtask's file of one
 * checkpoint with --dir [--id] or --checkpoint-dir) become the rows of a bounded table
 * `state` (connectors/state_rows.h): each entry is turned into one JSON object whose fields
 * are the table's columns (STATE_COLUMNS below — the one list of them, which the table's
 * CREATE TABLE, --help and docs/state.md follow), and the JSON format reads them into typed
 * columns. The user's SELECT is parsed on its own (so an error's line:column is in the text
 * given) and planned together with that table by the normal planner; the graph then runs on
 * the local deployment (job/local.h) at parallelism 1, its rows printed as NDJSON by the
 * print sink a bare SELECT gets. A GROUP BY over a bounded table is not a changelog here:
 * each group's row comes out once, at the end of the input (ck_agg_spec_t.emit_final).
 *
 * One checkpoint, never a torn mix: the id is chosen once (the newest completed, or --id),
 * every file read is that checkpoint's (each file names its own id, checked on load), and
 * the id read is said on standard error ("state-query: checkpoint 7 of 'DIR' …"). If a
 * running job's retention removes the checkpoint between choosing and reading it, the newest
 * completed is chosen again (a few times), never a mix.
 *
 * --job=ID --coordinator=HOST:PORT asks a cluster coordinator instead
 * (GET /api/v1/jobs/ID/state?sql=…&format=ndjson with the bearer token, cluster/rest_state.c),
 * which runs this same command on the job's newest completed checkpoint and names it in the
 * X-Clink-Checkpoint header; the same goes for an embedded `clink run --http-port`.
 *
 * Exit: 0, 1 when the query or the reading failed (bad SQL: the rendered error), 2 usage.
 * Threads: the main thread, and the job's subtask threads while it runs.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/arena.h"
#include "base/log.h"
#include "base/sock.h"
#include "base/time.h"
#include "cli/cli.h"
#include "cli/cmd_state.h"
#include "connectors/connectors.h"
#include "connectors/state_rows.h"
#include "job/job.h"
#include "job/local.h"
#include "runtime/exec.h"
#include "sql/parser.h"
#include "sql/planner.h"

/* ------------------------------------------------------------ the table */

/* The columns of `state`, in order: name, SQL type, what it holds (docs/state.md). */
static const struct {
  const char *name, *type, *help;
} STATE_COLUMNS[] = {
    {"checkpoint", "BIGINT", "the checkpoint id"},
    {"task", "INT", "the subtask (snapshot directory) the entry is from"},
    {"op_id", "BIGINT", "the graph node"},
    {"operator", "VARCHAR", "the node's name (window_agg, kafka_source, …)"},
    {"kind", "VARCHAR", "source, operator or sink"},
    {"key_group", "INT", "the entry's key group; 65535 for state that is not keyed"},
    {"slot", "VARCHAR", "<raw>, win or group"},
    {"user_key", "VARCHAR", "the group key as JSON text (\"sensor-01\", 42, [\"a\",1]); NULL for raw rows"},
    {"key_int", "BIGINT", "the key when it is one integer, else NULL"},
    {"key_str", "VARCHAR", "the key when it is one string (without quotes), else NULL"},
    {"value", "VARCHAR", "the entry decoded, as JSON text (what state-cat prints)"},
    {"value_hex", "VARCHAR", "the entry's bytes of the component's encoding, in hex"},
    {"value_int", "BIGINT", "win/group: the first aggregate's integer result (COUNT, integer SUM); "
                            "a source: its position (Kafka: the next offsets summed over its "
                            "partitions; datagen/nexmark: the next row; file: lines read); the "
                            "aggregation's <raw> row: its number of entries; else NULL"},
    {"window_start", "BIGINT", "win: the window's start (epoch ms)"},
    {"window_end", "BIGINT", "win: the window's end (epoch ms)"},
    {"agg1", "DOUBLE", "win/group: the first aggregate's current result (COUNT: the count, SUM: "
                       "the sum, AVG: the average, MIN/MAX: the value when numeric)"},
    {"agg2", "DOUBLE", "the second aggregate's"},
    {"agg3", "DOUBLE", "the third aggregate's"},
    {"agg4", "DOUBLE", "the fourth aggregate's"},
    {"watermark_ms", "BIGINT", "the aggregation's <raw> row: its watermark (NULL before the first)"},
    {"topic", "VARCHAR", "a Kafka source's <raw> row: its topic"},
    {"partitions", "INT", "a Kafka source's <raw> row: how many partitions it holds positions of"},
};
#define NSTATE_COLUMNS (sizeof STATE_COLUMNS / sizeof STATE_COLUMNS[0])
#define NAGG 4

/* --- a reader of the decoded JSON (our own text: well formed, no NUL) --- */

static const char *js_ws(const char *p) {
  while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
  return p;
}

/* The end of the JSON value at p. */
static const char *js_skip(const char *p) {
  p = js_ws(p);
  if (*p == '"') {
    for (p++; *p && *p != '"'; p++)
      if (*p == '\\' && p[1]) p++;
    return *p ? p + 1 : p;
  }
  if (*p == '{' || *p == '[') {
    int depth = 0;
    for (; *p; p++) {
      if (*p == '"') {
        p = js_skip(p) - 1;
      } else if (*p == '{' || *p == '[') {
        depth++;
      } else if (*p == '}' || *p == ']') {
        if (--depth == 0) return p + 1;
      }
    }
    return p;
  }
  while (*p && *p != ',' && *p != '}' && *p != ']') p++;
  return p;
}

/* The value of key in the object at obj (top level only), or NULL. */
static const char *js_get(const char *obj, const char *key) {
  const char *p = js_ws(obj);
  if (*p != '{') return NULL;
  p = js_ws(p + 1);
  size_t kl = strlen(key);
  while (*p == '"') {
    const char *k = p + 1, *ke = js_skip(p) - 1;
    p = js_ws(ke + 1);
    if (*p != ':') return NULL;
    const char *v = js_ws(p + 1);
    if ((size_t)(ke - k) == kl && memcmp(k, key, kl) == 0) return v;
    p = js_ws(js_skip(v));
    if (*p == ',') p = js_ws(p + 1);
  }
  return NULL;
}

/* The n-th element (0-based) of the array at arr, or NULL. */
static const char *js_at(const char *arr, int n) {
  const char *p = arr ? js_ws(arr) : NULL;
  if (!p || *p != '[') return NULL;
  p = js_ws(p + 1);
  for (int i = 0; *p && *p != ']'; i++) {
    if (i == n) return p;
    p = js_ws(js_skip(p));
    if (*p == ',') p = js_ws(p + 1);
  }
  return NULL;
}

static bool js_is_int(const char *v) {
  if (!v) return false;
  const char *p = v + (*v == '-');
  if (*p < '0' || *p > '9') return false;
  while (*p >= '0' && *p <= '9') p++;
  return *p == 0 || *p == ',' || *p == '}' || *p == ']' || *p == ' ';
}

static bool js_is_num(const char *v) {
  return v && (*v == '-' || (*v >= '0' && *v <= '9'));
}

/* Appends ,"name":<the number at v, or null>. */
static void put_num(ck_buf_t *b, const char *name, const char *v, bool integer) {
  ck_buf_printf(b, ",\"%s\":", name);
  if (integer ? js_is_int(v) : js_is_num(v)) ck_buf_append(b, v, (size_t)(js_skip(v) - v));
  else ck_buf_puts(b, "null");
}

/* The JSON object of one entry: STATE_COLUMNS' fields. */
static void entry_row(const ck_state_entry_t *e, ck_buf_t *b) {
  static const char *const KINDS[] = {"source", "operator", "sink"};
  ck_buf_printf(b, "{\"checkpoint\":%lld,\"task\":%d,\"op_id\":%u,\"operator\":",
                (long long)e->ckpt, e->task, e->op);
  ck_buf_put_json_str(b, e->op_name, strlen(e->op_name));
  ck_buf_printf(b, ",\"kind\":\"%s\",\"key_group\":%d,\"slot\":",
                KINDS[e->kind >= 0 && e->kind <= 2 ? e->kind : 1], e->key_group);
  ck_buf_put_json_str(b, e->slot, strlen(e->slot));
  ck_buf_puts(b, ",\"user_key\":");
  if (e->user_key) ck_buf_put_json_str(b, e->user_key, strlen(e->user_key));
  else ck_buf_puts(b, "null");
  const char *k = e->user_key ? js_ws(e->user_key) : NULL;
  put_num(b, "key_int", k, true);
  ck_buf_puts(b, ",\"key_str\":");
  if (k && *k == '"') ck_buf_append(b, k, (size_t)(js_skip(k) - k)); /* already JSON */
  else ck_buf_puts(b, "null");
  ck_buf_puts(b, ",\"value\":");
  ck_buf_put_json_str(b, e->value, strlen(e->value));
  ck_buf_puts(b, ",\"value_hex\":\"");
  for (size_t i = 0; i < e->raw_len; i++) ck_buf_printf(b, "%02x", (uint8_t)e->raw[i]);
  ck_buf_putc(b, '"');

  const char *v = e->value;
  const char *value_int = NULL;
  char sum[32];
  const char *aggs = js_get(v, "aggregates");
  bool keyed = e->key_group != CK_SNAP_RAW;
  if (keyed) {
    const char *first = js_at(aggs, 0);
    const char *fn = first ? js_get(first, "fn") : NULL;
    if (fn && (strncmp(fn, "\"COUNT", 6) == 0)) value_int = js_get(first, "count");
    else if (fn && strncmp(fn, "\"SUM\"", 5) == 0) value_int = js_get(first, "sum");
  } else if (js_get(v, "partitions") && js_get(v, "topic")) { /* a Kafka source */
    long long total = 0;
    const char *p;
    for (int i = 0; (p = js_at(js_get(v, "partitions"), i)); i++)
      total += strtoll(js_get(p, "next_offset") ? js_get(p, "next_offset") : "0", NULL, 10);
    snprintf(sum, sizeof sum, "%lld", total);
    value_int = sum;
  } else if (js_get(v, "files")) {
    long long total = 0;
    const char *p;
    for (int i = 0; (p = js_at(js_get(v, "files"), i)); i++)
      total += strtoll(js_get(p, "lines") ? js_get(p, "lines") : "0", NULL, 10);
    snprintf(sum, sizeof sum, "%lld", total);
    value_int = sum;
  } else if (js_get(v, "state") && (value_int = js_get(v, "next_row")) == NULL) {
    value_int = js_get(v, "entries");
  }
  put_num(b, "value_int", value_int, true);
  put_num(b, "window_start", js_get(v, "window_start"), true);
  put_num(b, "window_end", js_get(v, "window_end"), true);
  for (int c = 0; c < NAGG; c++) {
    const char *a = keyed ? js_at(aggs, c) : NULL, *fn = a ? js_get(a, "fn") : NULL, *r = NULL;
    if (fn && strncmp(fn, "\"COUNT", 6) == 0) r = js_get(a, "count");
    else if (fn && strncmp(fn, "\"SUM\"", 5) == 0) r = js_get(a, "sum");
    else if (fn && strncmp(fn, "\"AVG\"", 5) == 0) r = js_get(a, "avg");
    else if (fn) r = js_get(a, "value");
    char name[8];
    snprintf(name, sizeof name, "agg%d", c + 1);
    put_num(b, name, r, false);
  }
  put_num(b, "watermark_ms", keyed ? NULL : js_get(v, "watermark"), true);
  const char *topic = keyed ? NULL : js_get(v, "topic");
  ck_buf_puts(b, ",\"topic\":");
  if (topic && *topic == '"') ck_buf_append(b, topic, (size_t)(js_skip(topic) - topic));
  else ck_buf_puts(b, "null");
  int nparts = 0;
  if (topic)
    while (js_at(js_get(v, "partitions"), nparts)) nparts++;
  if (topic) ck_buf_printf(b, ",\"partitions\":%d}", nparts);
  else ck_buf_puts(b, ",\"partitions\":null}");
}

/* ------------------------------------------------------------ loading one checkpoint */

/* Loads what --from / --dir / --id name into set; on a directory without --id, the newest
 * completed checkpoint, chosen again if it disappears while being read (retention of a
 * running job). 0, 1 after printing why, 2 on bad usage. */
static int load(const char *from, const char *dir, const char *idtext, ck_state_set_t *set,
                char *where, size_t wn) {
  ck_error_t err;
  ck_error_clear(&err);
  const char *local = NULL; /* dir, or a local copy of the S3 store it names */
  if (from) {
    snprintf(where, wn, "%s", from);
    if (!ck_state_load_file(from, set, &err)) return 0;
  } else if ((local = ck_state_local_dir(dir, &err))) {
    char root[4096];
    ck_state_root(local, root, sizeof root);
    snprintf(where, wn, "%s", ck_store_is_remote(dir) ? dir : root);
    int64_t id = 0;
    if (idtext) {
      char *end;
      id = strtoll(idtext, &end, 10);
      if (end == idtext || *end || id < 1) {
        fprintf(stderr, "clink state-query: the checkpoint id must be a positive number, not "
                "'%s'\n", idtext);
        return 2;
      }
      if (!ck_state_load_dir(root, id, set, &err)) return 0;
    } else {
      for (int attempt = 0; attempt < 5; attempt++) {
        int64_t newest = ck_state_newest(root);
        if (newest == 0) {
          fprintf(stderr, "clink state-query: could not find a completed checkpoint in '%s'\n"
                  "hint: give the directory passed as --checkpoint-dir (or its v1, or a "
                  "cluster job's job-<id>), or a file with --from; a job that just started "
                  "has none until its first checkpoint completes\n", root);
          return 1;
        }
        ck_state_set_free(set);
        ck_error_clear(&err);
        if (!ck_state_load_dir(root, newest, set, &err)) return 0;
        if (ck_state_newest(root) == newest) break; /* not retention: a real error */
      }
    }
  }
  char text[8192];
  ck_error_format(&err, text, sizeof text);
  fprintf(stderr, "clink state-query: %s\n", text);
  return 1;
}

/* ------------------------------------------------------------ the query */

static const char SQL_NAME[] = "<--sql>";

/* The user's text must be one SELECT: 0, or 1 after printing the rendered error. */
static int check_select(const char *sql, const ck_script_t *script) {
  ck_error_t err;
  ck_error_clear(&err);
  const ck_stmt_t *bad = NULL;
  for (int i = 0; i < script->nstmts && !bad; i++)
    if (script->stmts[i]->kind != CK_STMT_SELECT) bad = script->stmts[i];
  if (bad || script->nstmts != 1) {
    const ck_pos_t pos = bad ? bad->pos : script->nstmts ? script->stmts[1]->pos
                                                         : (ck_pos_t){1, 1, 0, 0};
    ck_error_set_at(&err, CK_EUNSUPPORTED, pos.line, pos.column, "%s",
                    bad ? "state-query runs one SELECT over the table 'state'; this statement "
                          "is not a SELECT"
                        : script->nstmts ? "state-query runs one SELECT; this is a second "
                                           "statement"
                                         : "the SQL text holds no statement");
    ck_error_hint(&err, "write SELECT … FROM state …; docs/state.md lists the table's columns");
    ck_buf_t out;
    ck_buf_init(&out);
    ck_sql_render_error(sql, SQL_NAME, &err, &out);
    fputs(out.data ? out.data : "", stderr);
    ck_buf_fini(&out);
    return 1;
  }
  return 0;
}

/* Plans `sql` over the rows (already handed to the state source) and runs it; its rows go to
 * standard output. 0, or 1 after printing the error. */
static int run_query(const char *sql) {
  ck_connectors_register_all();
  ck_state_rows_register();
  ck_error_t err;
  ck_error_clear(&err);
  ck_arena_t arena;
  ck_arena_init(&arena, 0);
  ck_buf_t ddl, errors;
  ck_buf_init(&ddl);
  ck_buf_init(&errors);
  ck_buf_puts(&ddl, "CREATE TABLE state (");
  for (size_t c = 0; c < NSTATE_COLUMNS; c++)
    ck_buf_printf(&ddl, "%s%s %s", c ? ", " : "", STATE_COLUMNS[c].name, STATE_COLUMNS[c].type);
  /* event time on the checkpoint id (never NULL): the end of the input is a final watermark,
   * which is what emits a GROUP BY's rows */
  ck_buf_puts(&ddl, ") WITH (connector = 'state', event_time_column = 'checkpoint', "
                    "watermark_lag_ms = '0')");
  ck_script_t table, user, both;
  ck_graph_t *graph = NULL;
  int status = 1, rc = ck_sql_parse_n(ddl.data, ddl.len, &arena, &table, &err);
  ck_assert(rc == 0);
  rc = ck_sql_parse_n(sql, strlen(sql), &arena, &user, &err);
  if (rc) {
    ck_sql_render_error(sql, SQL_NAME, &err, &errors);
    goto out;
  }
  if (check_select(sql, &user)) goto out;
  both.nstmts = 2;
  both.stmts = ck_arena_alloc(&arena, 2 * sizeof *both.stmts);
  both.stmts[0] = table.stmts[0];
  both.stmts[1] = user.stmts[0];
  ck_plan_opts_t popts = {1, 128};
  if ((rc = ck_sql_plan(&both, &popts, &graph, &err))) {
    ck_sql_render_error(sql, SQL_NAME, &err, &errors);
    goto out;
  }
  /* a bounded query: a GROUP BY answers once per group, no changelog */
  for (int i = 0; i < graph->nnodes; i++) {
    ck_node_t *n = &graph->nodes[i];
    if (n->kind == CK_NODE_AGG && n->u.agg.window.kind == CK_WIN_NONE) n->u.agg.emit_final = true;
    n->changelog = false;
  }
  ck_job_local_t local = {.graph = graph};
  local.eopts.job_name = "state-query";
  ck_job_t job = {
      .identity = {"state-query", 1, ck_exec_task_count(graph), NULL},
      .ops = &ck_job_local_ops,
      .dep = &local,
  };
  rc = ck_job_run(&job, &err);
  fflush(stdout);
  if (rc) {
    char msg[4096];
    ck_error_format(&err, msg, sizeof msg);
    ck_buf_printf(&errors, "clink state-query: %s\n", msg);
  } else {
    status = 0;
  }
out:
  if (errors.len) fputs(errors.data, stderr);
  ck_buf_fini(&errors);
  ck_buf_fini(&ddl);
  ck_graph_free(graph);
  ck_arena_fini(&arena);
  return status;
}

/* ------------------------------------------------------------ --job: ask a coordinator */

static void url_encode(ck_buf_t *out, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
        c == '-' || c == '_' || c == '.' || c == '~')
      ck_buf_putc(out, (char)c);
    else
      ck_buf_printf(out, "%%%02X", c);
  }
}

/* GET /api/v1/jobs/<job>/state from host:port; prints the rows, says the checkpoint. */
static int query_remote(const char *job, const char *addr, const char *token, const char *sql) {
  char host[256];
  int port = 8081;
  const char *colon = strrchr(addr, ':');
  if (colon) {
    snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
    port = atoi(colon + 1);
  } else {
    snprintf(host, sizeof host, "%s", addr);
  }
  if (port < 1 || port > 65535 || !*host) {
    fprintf(stderr, "clink state-query: --coordinator must be HOST:PORT (the REST port), not "
            "'%s'\n", addr);
    return 2;
  }
  int64_t deadline = ck_mono_ms() + 120000;
  int why = 0;
  const char *gai = NULL;
  int fd = ck_sock_connect_fd(host, port, deadline, NULL, &why, &gai);
  if (fd < 0) {
    fprintf(stderr, "clink state-query: could not connect to the coordinator at %s:%d: %s\n"
            "hint: --coordinator is its REST address (the --http-port of `clink coordinator`, "
            "or of `clink run`)\n", host, port, gai ? gai : strerror(why));
    return 1;
  }
  ck_buf_t req, resp;
  ck_buf_init(&req);
  ck_buf_init(&resp);
  ck_buf_printf(&req, "GET /api/v1/jobs/%s/state?format=ndjson&sql=", job);
  url_encode(&req, sql);
  ck_buf_printf(&req, " HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n", host, port);
  if (token && *token) ck_buf_printf(&req, "Authorization: Bearer %s\r\n", token);
  ck_buf_puts(&req, "\r\n");
  int rc = ck_sock_write_all(fd, req.data, req.len, deadline, NULL, NULL), status = 1;
  while (!rc) {
    char chunk[16384];
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n > 0) ck_buf_append(&resp, chunk, (size_t)n);
    else if (n == 0) break;
    else if (errno == EAGAIN || errno == EINTR) rc = ck_sock_wait(fd, POLLIN, deadline, NULL);
    else rc = CK_EIO;
  }
  close(fd);
  ck_buf_putc(&resp, 0);
  resp.len--;
  const char *head_end = rc ? NULL : strstr(resp.data, "\r\n\r\n");
  int code = 0;
  if (!head_end || sscanf(resp.data, "HTTP/1.%*d %d", &code) != 1) {
    fprintf(stderr, "clink state-query: could not read the coordinator's answer from %s:%d%s\n",
            host, port, rc == CK_ETIMEOUT ? " (timed out)" : "");
    goto done;
  }
  const char *body = head_end + 4;
  /* the checkpoint the answer is from */
  long long ckpt = -1;
  for (const char *h = resp.data; h && h < head_end; h = strstr(h, "\r\n"), h = h ? h + 2 : h)
    if (strncasecmp(h, "X-Clink-Checkpoint:", 19) == 0) ckpt = strtoll(h + 19, NULL, 10);
  bool chunked = false;
  for (const char *h = resp.data; h && h < head_end; h = strstr(h, "\r\n"), h = h ? h + 2 : h)
    if (strncasecmp(h, "Transfer-Encoding:", 18) == 0 && strstr(h, "chunked") &&
        strstr(h, "chunked") < head_end)
      chunked = true;
  ck_buf_t plain;
  ck_buf_init(&plain);
  if (chunked) { /* HTTP/1.1 chunks: size line, data, CRLF */
    const char *p = body;
    for (;;) {
      char *e;
      unsigned long sz = strtoul(p, &e, 16);
      const char *data = strstr(e, "\r\n");
      if (!data || sz == 0) break;
      data += 2;
      if ((size_t)(resp.data + resp.len - data) < sz) break;
      ck_buf_append(&plain, data, sz);
      p = data + sz + 2;
    }
  } else {
    ck_buf_append(&plain, body, (size_t)(resp.data + resp.len - body));
  }
  ck_buf_putc(&plain, 0);
  plain.len--;
  if (code != 200) {
    /* {"error":"…"}: print the message as text (it may be a rendered SQL error) */
    const char *m = js_get(plain.data, "error");
    fprintf(stderr, "clink state-query: the coordinator answered %d: ", code);
    if (m && *m == '"') {
      for (const char *p = m + 1; *p && *p != '"'; p++) {
        if (*p == '\\' && p[1]) {
          p++;
          fputc(*p == 'n' ? '\n' : *p == 't' ? '\t' : *p, stderr);
        } else {
          fputc(*p, stderr);
        }
      }
      fputc('\n', stderr);
    } else {
      fprintf(stderr, "%s\n", plain.data);
    }
    status = 1;
  } else {
    fwrite(plain.data, 1, plain.len, stdout);
    fflush(stdout);
    fprintf(stderr, "state-query: job %s, checkpoint %lld (the newest completed, through %s:%d)\n",
            job, ckpt, host, port);
    status = 0;
  }
  ck_buf_fini(&plain);
done:
  ck_buf_fini(&req);
  ck_buf_fini(&resp);
  return status;
}

/* ------------------------------------------------------------ the command */

static const ck_cli_opt_t opts[] = {
    {"sql", "SQL", "one SELECT over the table 'state' (its columns: docs/state.md)", 0, 0, 0, false},
    {"from", "FILE", "one snapshot file (v1/<task>/checkpoint-<N>.snap)", 0, 0, 0, false},
    {"dir", "DIR", "a checkpoint directory (or its v1, or a cluster job's job-<id>): every "
                   "subtask's file of one checkpoint", 0, 0, 0, false},
    {"id", "N", "with --dir: the checkpoint (default the newest completed)", 0, 0, 0, false},
    {"checkpoint-dir", "DIR", "an embedded job's --checkpoint-dir, running or not: its newest "
                              "completed checkpoint", 0, 0, 0, false},
    {"job", "ID", "a cluster job: its newest completed checkpoint, through the coordinator's "
                  "REST API (with --coordinator)", 0, 0, 0, false},
    {"coordinator", "HOST:PORT", "with --job: the coordinator's REST address (or an embedded "
                                 "`clink run --http-port`'s, job 1)", 0, 0, 0, false},
    {"token", "TOKEN", "with --job: the bearer token (default $CLINK_AUTH_TOKEN)", 0, 0, 0, false},
    CK_CLI_SHARED("log-level"),
    {NULL, NULL, NULL, 0, 0, 0, false},
};

static int query_main(int argc, char **argv) {
  const ck_cli_cmd_t *cmd = &ck_cli_cmd_state_query;
  ck_cli_args_t args;
  int rc = ck_cli_parse(cmd, argc, argv, &args);
  if (rc) return rc < 0 ? 0 : rc;
  const char *sql = ck_cli_get(cmd, &args, "sql"), *from = ck_cli_get(cmd, &args, "from");
  const char *dir = ck_cli_get(cmd, &args, "dir"), *id = ck_cli_get(cmd, &args, "id");
  const char *cdir = ck_cli_get(cmd, &args, "checkpoint-dir"), *job = ck_cli_get(cmd, &args, "job");
  const char *co = ck_cli_get(cmd, &args, "coordinator"), *token = ck_cli_get(cmd, &args, "token");
  int sources = (from != NULL) + (dir != NULL) + (cdir != NULL) + (job != NULL);
  if (!sql || sources != 1 || args.npositional || (id && !dir) || (!job != !co) ||
      (token && !job)) {
    fprintf(stderr, "clink state-query: give --sql and one of --from=FILE, --dir=DIR [--id=N], "
            "--checkpoint-dir=DIR or --job=ID --coordinator=HOST:PORT\nusage: clink state-query "
            "%s\n", cmd->usage);
    return 2;
  }
  if (ck_cli_get(cmd, &args, "log-level")) {
    if ((rc = ck_cli_apply_log_level(cmd, &args))) return rc;
  } else if (!getenv("CLINK_LOG_LEVEL")) {
    ck_log_set_level(CK_LOG_WARN); /* the job's own lines are not the answer */
  }
  if (job) {
    int64_t jid;
    char *end;
    jid = strtoll(job, &end, 10);
    if (end == job || *end || jid < 0) {
      fprintf(stderr, "clink state-query: --job must be a job id (a number), not '%s'\n", job);
      return 2;
    }
    return query_remote(job, co, token ? token : getenv("CLINK_AUTH_TOKEN"), sql);
  }
  ck_state_set_t set = {0};
  char where[4200];
  rc = load(from, cdir ? cdir : dir, id, &set, where, sizeof where);
  if (rc) {
    ck_state_set_free(&set);
    return rc;
  }
  ck_buf_t rows;
  ck_buf_init(&rows);
  size_t *off = ck_malloc(sizeof *off * (set.n + 1)), *lens = ck_malloc(sizeof *lens * (set.n + 1));
  for (size_t i = 0; i < set.n; i++) {
    off[i] = rows.len;
    entry_row(&set.e[i], &rows);
    lens[i] = rows.len - off[i];
  }
  const char **ptrs = ck_malloc(sizeof *ptrs * (set.n + 1));
  for (size_t i = 0; i < set.n; i++) ptrs[i] = rows.data + off[i];
  ck_state_rows_set(ptrs, lens, set.n);
  fprintf(stderr, "state-query: checkpoint %lld of '%s' (%d file%s, %zu entries)\n",
          (long long)set.ckpt, where, set.nfiles, set.nfiles == 1 ? "" : "s", set.n);
  rc = run_query(sql);
  ck_state_rows_set(NULL, NULL, 0);
  ck_free(ptrs);
  ck_free(off);
  ck_free(lens);
  ck_buf_fini(&rows);
  ck_state_set_free(&set);
  return rc;
}

const ck_cli_cmd_t ck_cli_cmd_state_query = {
    "state-query", "SQL over a checkpoint's state (or a running job's), by clink's own engine",
    "--sql=SELECT… (--from=FILE | --dir=DIR [--id=N] | --checkpoint-dir=DIR | --job=ID "
    "--coordinator=HOST:PORT [--token=TOKEN])",
    opts, query_main};
