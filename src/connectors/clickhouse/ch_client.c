/*
 * DESIGN: see ch_client.h.
 *
 * Threads: a client belongs to one thread at a time (the sink's subtask thread, or the
 * planner's thread for the plan-time check).
 */
#include "connectors/clickhouse/ch_client.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "base/sock.h"
#include "base/time.h"
#include "connectors/clickhouse/ch_compress.h"
#include "connectors/clickhouse/ch_proto.h"

/* ============================================================= TCP transport ====== */

typedef struct tcp_io {
  int fd;
} tcp_io_t;

static int wait_fd(int fd, short events, int timeout_ms) {
  struct pollfd pfd = {.fd = fd, .events = events};
  int64_t deadline = ck_mono_ms() + timeout_ms;
  for (;;) {
    int left = (int)(deadline - ck_mono_ms());
    if (left < 0) left = 0;
    int n = poll(&pfd, 1, timeout_ms > 0 ? left : -1);
    if (n > 0) return 0;
    if (n == 0) return CK_ETIMEOUT;
    if (errno != EINTR) return CK_EIO;
  }
}

static ssize_t tcp_read(ck_ch_io_t *io, void *buf, size_t n, int timeout_ms) {
  tcp_io_t *t = io->impl;
  for (;;) {
    ssize_t r = recv(t->fd, buf, n, 0);
    if (r >= 0) return r;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return CK_EIO;
    int rc = wait_fd(t->fd, POLLIN, timeout_ms);
    if (rc) return rc;
  }
}

static int tcp_write(ck_ch_io_t *io, const void *buf, size_t n, int timeout_ms) {
  tcp_io_t *t = io->impl;
  const char *p = buf;
  while (n) {
    ssize_t w = send(t->fd, p, n, MSG_NOSIGNAL);
    if (w >= 0) {
      p += w;
      n -= (size_t)w;
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return CK_EIO;
    int rc = wait_fd(t->fd, POLLOUT, timeout_ms);
    if (rc) return rc;
  }
  return 0;
}

static void tcp_close(ck_ch_io_t *io) {
  tcp_io_t *t = io->impl;
  if (!t) return;
  close(t->fd);
  ck_free(t);
  io->impl = NULL;
}

static const ck_ch_io_ops_t tcp_ops = {tcp_read, tcp_write, tcp_close};

static int conn_error(ck_error_t *err, int code, const char *peer, const char *reason) {
  ck_error_set(err, code, "could not connect to ClickHouse at %s: %s", peer, reason);
  if (err) {
    snprintf(err->origin, sizeof err->origin, "clickhouse");
    err->retriable = true;
  }
  return code;
}

int ck_ch_tcp_connect(const char *host, int port, int timeout_ms, ck_ch_io_t *io,
                      ck_error_t *err) {
  memset(io, 0, sizeof *io);
  snprintf(io->peer, sizeof io->peer, "%s:%d", host, port);
  int why;
  const char *gai_why;
  int fd = ck_sock_connect_fd(host, port, ck_mono_ms() + (timeout_ms > 0 ? timeout_ms : 10000),
                              NULL, &why, &gai_why);
  if (fd < 0) {
    if (gai_why) return conn_error(err, CK_ECONNECT, io->peer, gai_why);
    char reason[128];
    bool timed_out = why == ETIMEDOUT;
    if (timed_out) snprintf(reason, sizeof reason, "no answer within %d ms", timeout_ms);
    else snprintf(reason, sizeof reason, "%s", strerror(why));
    return conn_error(err, timed_out ? CK_ETIMEOUT : CK_ECONNECT, io->peer, reason);
  }
  tcp_io_t *t = ck_calloc(1, sizeof *t);
  t->fd = fd;
  io->ops = &tcp_ops;
  io->impl = t;
  return 0;
}

/* ================================================================ client ====== */

struct ck_ch_client {
  ck_ch_io_t io;
  ck_ch_reader_t rd;
  ck_ch_server_t server;
  int revision;
  bool broken, compress;
  int recv_timeout, send_timeout;
  ck_buf_t out;
  ck_buf_t raw; /* PROTOTYPE: the uncompressed block, kept between inserts */
  ck_ch_block_t header;
  int64_t deadline; /* ck_mono_ms by which every reply must be whole; 0: none */
};

bool ck_ch_client_ok(const ck_ch_client_t *c) { return c && !c->broken; }
void ck_ch_client_set_deadline(ck_ch_client_t *c, int64_t deadline_mono_ms) {
  c->deadline = deadline_mono_ms;
}
const ck_ch_server_t *ck_ch_client_server(const ck_ch_client_t *c) { return &c->server; }
int ck_ch_client_revision(const ck_ch_client_t *c) { return c->revision; }
ck_ch_reader_t *ck_ch_client_reader(ck_ch_client_t *c) { return &c->rd; }

bool ck_ch_code_retriable(int code) {
  static const int codes[] = {
      3,   /* UNEXPECTED_END_OF_FILE */
      32,  /* ATTEMPT_TO_READ_AFTER_EOF */
      159, /* TIMEOUT_EXCEEDED */
      160, /* TOO_SLOW */
      173, /* CANNOT_ALLOCATE_MEMORY */
      198, /* DNS_ERROR */
      202, /* TOO_MANY_SIMULTANEOUS_QUERIES */
      203, /* NO_FREE_CONNECTION */
      209, /* SOCKET_TIMEOUT */
      210, /* NETWORK_ERROR */
      225, /* NO_ZOOKEEPER */
      236, /* ABORTED */
      241, /* MEMORY_LIMIT_EXCEEDED */
      242, /* TABLE_IS_READ_ONLY */
      252, /* TOO_MANY_PARTS */
      279, /* ALL_CONNECTION_TRIES_FAILED */
      285, /* TOO_FEW_LIVE_REPLICAS */
      286, /* UNSATISFIED_QUORUM_FOR_PREVIOUS_WRITE */
      319, /* UNKNOWN_STATUS_OF_INSERT */
      394, /* QUERY_WAS_CANCELLED */
      425, /* SYSTEM_ERROR */
      999, /* KEEPER_EXCEPTION */
  };
  for (size_t i = 0; i < CK_ARRAY_LEN(codes); i++)
    if (codes[i] == code) return true;
  return false;
}

static int io_fail(ck_ch_client_t *c, ck_error_t *err, int rc, const char *what) {
  c->broken = true;
  const char *reason = rc == CK_ETIMEOUT ? "timed out" : rc == 0 ? "the server closed the connection"
                                                                 : "connection lost";
  ck_error_set(err, rc ? rc : CK_EIO, "could not %s ClickHouse at %s: %s", what, c->io.peer,
               reason);
  if (err) {
    snprintf(err->origin, sizeof err->origin, "clickhouse");
    err->retriable = true;
  }
  return rc ? rc : CK_EIO;
}

static int server_error(ck_ch_client_t *c, const ck_ch_packet_t *p, ck_error_t *err) {
  const char *msg = p->exc.message ? p->exc.message : "";
  const char *prefix = "DB::Exception: ";
  if (strncmp(msg, prefix, strlen(prefix)) == 0) msg += strlen(prefix);
  size_t n = strlen(msg);
  while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) n--;
  const char *name = p->exc.name && strcmp(p->exc.name, "DB::Exception") != 0 ? p->exc.name : NULL;
  ck_error_set(err, CK_EREMOTE, "ClickHouse at %s answered with error %d%s%s%s: %.*s", c->io.peer,
               p->exc.code, name ? " (" : "", name ? name : "", name ? ")" : "", (int)n, msg);
  if (p->exc.nested) ck_error_detail(err, "caused by: %.200s", p->exc.nested);
  if (err && err->code == CK_EREMOTE && !err->origin[0]) {
    snprintf(err->origin, sizeof err->origin, "clickhouse");
    err->origin_code = p->exc.code;
    err->retriable = ck_ch_code_retriable(p->exc.code);
  }
  return CK_EREMOTE;
}

static int flush_out(ck_ch_client_t *c, const char *what, ck_error_t *err) {
  int rc = c->io.ops->write(&c->io, c->out.data, c->out.len, c->send_timeout);
  ck_buf_reset(&c->out);
  if (rc) return io_fail(c, err, rc, what);
  return 0;
}

static int recv_packet(ck_ch_client_t *c, const ck_ch_packet_t **p, const char *what,
                       ck_error_t *err) {
  char buf[65536];
  for (;;) {
    int rc = ck_ch_reader_next(&c->rd, p, err);
    if (rc == 0) return 0;
    if (rc < 0) {
      c->broken = true;
      return rc;
    }
    int timeout = c->recv_timeout;
    if (c->deadline) { /* a server that keeps sending Progress never trips the per-read one */
      int64_t left = c->deadline - ck_mono_ms();
      if (left <= 0) return io_fail(c, err, CK_ETIMEOUT, what);
      if (left < timeout) timeout = (int)left;
    }
    ssize_t n = c->io.ops->read(&c->io, buf, sizeof buf, timeout);
    if (n <= 0) return io_fail(c, err, (int)n, what);
    ck_ch_reader_feed(&c->rd, buf, (size_t)n);
  }
}

static int unexpected(ck_ch_client_t *c, const ck_ch_packet_t *p, const char *when,
                      ck_error_t *err) {
  c->broken = true;
  ck_error_set(err, CK_EPROTO, "ClickHouse at %s sent an unexpected %s packet %s", c->io.peer,
               ck_ch_packet_name(p->type), when);
  if (err) {
    snprintf(err->origin, sizeof err->origin, "clickhouse");
    err->retriable = true;
  }
  return CK_EPROTO;
}

static void copy_str(char *dst, size_t cap, const char *s) {
  snprintf(dst, cap, "%s", s ? s : "");
}

int ck_ch_client_open_io(ck_ch_io_t io, const ck_ch_conf_t *conf, ck_ch_client_t **out,
                         ck_error_t *err) {
  ck_ch_client_t *c = ck_calloc(1, sizeof *c);
  c->io = io;
  ck_ch_reader_init(&c->rd, CK_CH_CLIENT_REVISION);
  c->rd.compressed = conf->compress;
  c->compress = conf->compress;
  c->recv_timeout = conf->receive_timeout_ms > 0 ? conf->receive_timeout_ms : 300000;
  c->send_timeout = conf->send_timeout_ms > 0 ? conf->send_timeout_ms : 300000;
  ck_buf_init(&c->out);
  ck_ch_block_init(&c->header);
  /* Hello: the password goes here and nowhere else */
  ck_buf_put_uvarint(&c->out, CK_CH_CLIENT_HELLO);
  ck_ch_put_cstr(&c->out, CK_CH_CLIENT_NAME);
  ck_buf_put_uvarint(&c->out, CK_CH_CLIENT_MAJOR);
  ck_buf_put_uvarint(&c->out, CK_CH_CLIENT_MINOR);
  ck_buf_put_uvarint(&c->out, CK_CH_CLIENT_REVISION);
  ck_ch_put_cstr(&c->out, conf->database ? conf->database : "");
  ck_ch_put_cstr(&c->out, conf->user && *conf->user ? conf->user : "default");
  ck_ch_put_cstr(&c->out, conf->password ? conf->password : "");
  int rc = flush_out(c, "say hello to", err);
  memset(c->out.data, 0, c->out.cap); /* the buffer held the password */
  const ck_ch_packet_t *p = NULL;
  if (!rc) rc = recv_packet(c, &p, "read the greeting of", err);
  if (!rc) {
    if (p->type == CK_CH_SERVER_EXCEPTION) {
      rc = server_error(c, p, err);
      c->broken = true;
    } else if (p->type != CK_CH_SERVER_HELLO) {
      rc = unexpected(c, p, "instead of Hello", err);
    } else {
      copy_str(c->server.name, sizeof c->server.name, p->hello.name);
      copy_str(c->server.timezone, sizeof c->server.timezone, p->hello.timezone);
      copy_str(c->server.display_name, sizeof c->server.display_name, p->hello.display_name);
      c->server.major = p->hello.major;
      c->server.minor = p->hello.minor;
      c->server.patch = p->hello.patch;
      c->server.revision = p->hello.revision;
      c->revision = c->rd.revision;
      if (c->revision >= CK_CH_REV_ADDENDUM) {
        ck_ch_put_cstr(&c->out, ""); /* quota key */
        rc = flush_out(c, "send the greeting addendum to", err);
      }
    }
  }
  if (rc) {
    ck_ch_client_free(c);
    return rc;
  }
  *out = c;
  return 0;
}

int ck_ch_client_open(const ck_ch_conf_t *conf, ck_ch_client_t **out, ck_error_t *err) {
  ck_ch_io_t io;
  int rc = ck_ch_tcp_connect(conf->host, conf->port,
                             conf->connect_timeout_ms > 0 ? conf->connect_timeout_ms : 10000, &io, err);
  if (rc) return rc;
  return ck_ch_client_open_io(io, conf, out, err);
}

void ck_ch_client_free(ck_ch_client_t *c) {
  if (!c) return;
  if (c->io.ops) c->io.ops->close(&c->io);
  ck_ch_reader_fini(&c->rd);
  ck_buf_fini(&c->out);
  ck_buf_fini(&c->raw);
  ck_ch_block_fini(&c->header);
  ck_free(c);
}

int ck_ch_ping(ck_ch_client_t *c, ck_error_t *err) {
  if (c->broken) return io_fail(c, err, CK_EIO, "ping");
  ck_buf_put_uvarint(&c->out, CK_CH_CLIENT_PING);
  int rc = flush_out(c, "ping", err);
  const ck_ch_packet_t *p;
  while (!rc && !(rc = recv_packet(c, &p, "ping", err))) {
    if (p->type == CK_CH_SERVER_PONG) return 0;
    if (p->type != CK_CH_SERVER_PROGRESS) return unexpected(c, p, "in answer to Ping", err);
  }
  return rc;
}

/* ---- Query packet ---- */

static void put_client_info(ck_ch_client_t *c, ck_buf_t *o) {
  int rev = c->revision;
  ck_buf_put_u8(o, CK_CH_QUERY_KIND_INITIAL);
  ck_ch_put_cstr(o, "");          /* initial user */
  ck_ch_put_cstr(o, "");          /* initial query id */
  ck_ch_put_cstr(o, "0.0.0.0:0"); /* initial address */
  if (rev >= CK_CH_REV_INITIAL_QUERY_START_TIME) ck_buf_put_le_n(o, (uint64_t)ck_wall_ms() * 1000, 8);
  ck_buf_put_u8(o, CK_CH_INTERFACE_TCP);
  const char *os_user = getenv("USER");
  ck_ch_put_cstr(o, os_user ? os_user : "");
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  ck_ch_put_cstr(o, host);
  ck_ch_put_cstr(o, CK_CH_CLIENT_NAME);
  ck_buf_put_uvarint(o, CK_CH_CLIENT_MAJOR);
  ck_buf_put_uvarint(o, CK_CH_CLIENT_MINOR);
  ck_buf_put_uvarint(o, CK_CH_CLIENT_REVISION);
  if (rev >= CK_CH_REV_QUOTA_KEY_IN_CLIENT_INFO) ck_ch_put_cstr(o, "");
  if (rev >= CK_CH_REV_DISTRIBUTED_DEPTH) ck_buf_put_uvarint(o, 0);
  if (rev >= CK_CH_REV_VERSION_PATCH) ck_buf_put_uvarint(o, CK_CH_CLIENT_PATCH);
  if (rev >= CK_CH_REV_OPENTELEMETRY) ck_buf_put_u8(o, 0);
  if (rev >= CK_CH_REV_PARALLEL_REPLICAS) {
    ck_buf_put_uvarint(o, 0); /* collaborate with initiator */
    ck_buf_put_uvarint(o, 0); /* count of participating replicas */
    ck_buf_put_uvarint(o, 0); /* number of this replica */
  }
}

static void put_data_block(ck_ch_client_t *c, const ck_ch_block_t *block) {
  ck_buf_put_uvarint(&c->out, CK_CH_CLIENT_DATA);
  ck_ch_put_cstr(&c->out, "");
  if (!c->compress) {
    ck_ch_block_write(block, c->revision, &c->out);
    return;
  }
  ck_buf_reset(&c->raw);
  ck_ch_block_write(block, c->revision, &c->raw);
  ck_ch_compress(c->raw.data, c->raw.len, CK_CH_METHOD_LZ4, &c->out);
}

static int send_query(ck_ch_client_t *c, const char *sql, const ck_ch_setting_t *settings,
                      int nsettings, ck_error_t *err) {
  if (c->broken) return io_fail(c, err, CK_EIO, "send a query to");
  ck_buf_t *o = &c->out;
  ck_buf_put_uvarint(o, CK_CH_CLIENT_QUERY);
  ck_ch_put_cstr(o, ""); /* query id: the server makes one */
  if (c->revision >= CK_CH_REV_CLIENT_INFO) put_client_info(c, o);
  for (int i = 0; i < nsettings; i++) {
    ck_ch_put_cstr(o, settings[i].name);
    if (c->revision >= CK_CH_REV_SETTINGS_AS_STRINGS) {
      ck_buf_put_uvarint(o, settings[i].important ? 1 : 0);
      ck_ch_put_cstr(o, settings[i].value);
    } else if (settings[i].kind == CK_CH_SETTING_UINT) {
      ck_buf_put_uvarint(o, strtoull(settings[i].value, NULL, 10));
    } else {
      ck_ch_put_cstr(o, settings[i].value);
    }
  }
  ck_ch_put_cstr(o, ""); /* end of settings */
  if (c->revision >= CK_CH_REV_INTERSERVER_SECRET) ck_ch_put_cstr(o, "");
  ck_buf_put_uvarint(o, CK_CH_STAGE_COMPLETE);
  ck_buf_put_uvarint(o, c->compress ? 1 : 0);
  ck_ch_put_cstr(o, sql);
  if (c->revision >= CK_CH_REV_PARAMETERS) ck_ch_put_cstr(o, ""); /* no parameters */
  /* no external tables: one empty block */
  ck_ch_block_t empty;
  ck_ch_block_init(&empty);
  put_data_block(c, &empty);
  return flush_out(c, "send a query to", err);
}

/* Packets that may come at any point of a query and carry nothing we need. */
static bool ignorable(uint64_t type) {
  return type == CK_CH_SERVER_PROGRESS || type == CK_CH_SERVER_PROFILE_INFO ||
         type == CK_CH_SERVER_LOG || type == CK_CH_SERVER_TABLE_COLUMNS ||
         type == CK_CH_SERVER_PROFILE_EVENTS || type == CK_CH_SERVER_TOTALS ||
         type == CK_CH_SERVER_EXTREMES || type == CK_CH_SERVER_PART_UUIDS ||
         type == CK_CH_SERVER_TIMEZONE_UPDATE;
}

int ck_ch_query(ck_ch_client_t *c, const char *sql, const ck_ch_setting_t *settings,
                int nsettings, ck_ch_block_fn on_block, void *arg, ck_error_t *err) {
  int rc = send_query(c, sql, settings, nsettings, err);
  const ck_ch_packet_t *p;
  while (!rc && !(rc = recv_packet(c, &p, "read a query result from", err))) {
    if (p->type == CK_CH_SERVER_END_OF_STREAM) return 0;
    if (p->type == CK_CH_SERVER_EXCEPTION) return server_error(c, p, err);
    if (p->type == CK_CH_SERVER_DATA) {
      if (p->block.rows && on_block && (rc = on_block(arg, &p->block, err))) {
        c->broken = true; /* the rest of the result was not read */
        return rc;
      }
      continue;
    }
    if (!ignorable(p->type)) return unexpected(c, p, "during a query", err);
  }
  return rc;
}

int ck_ch_insert_begin(ck_ch_client_t *c, const char *sql, const ck_ch_setting_t *settings,
                       int nsettings, const ck_ch_block_t **header, ck_error_t *err) {
  ck_ch_block_fini(&c->header);
  int rc = send_query(c, sql, settings, nsettings, err);
  const ck_ch_packet_t *p;
  while (!rc && !(rc = recv_packet(c, &p, "start an insert into", err))) {
    if (p->type == CK_CH_SERVER_EXCEPTION) {
      c->broken = true;
      return server_error(c, p, err);
    }
    if (p->type == CK_CH_SERVER_DATA) {
      for (int i = 0; i < p->block.ncols; i++)
        if (ck_ch_block_add_col(&c->header, p->block.cols[i].name, p->block.cols[i].type_name,
                                err) < 0) {
          c->broken = true;
          return err ? err->code : CK_EUNSUPPORTED;
        }
      *header = &c->header;
      return 0;
    }
    if (!ignorable(p->type)) return unexpected(c, p, "while starting an insert", err);
  }
  return rc;
}

int ck_ch_insert_send(ck_ch_client_t *c, const ck_ch_block_t *block, ck_error_t *err) {
  if (c->broken) return io_fail(c, err, CK_EIO, "send rows to");
  put_data_block(c, block);
  return flush_out(c, "send rows to", err);
}

int ck_ch_insert_end(ck_ch_client_t *c, ck_error_t *err) {
  if (c->broken) return io_fail(c, err, CK_EIO, "finish an insert into");
  ck_ch_block_t empty;
  ck_ch_block_init(&empty);
  put_data_block(c, &empty);
  int rc = flush_out(c, "finish an insert into", err);
  const ck_ch_packet_t *p;
  while (!rc && !(rc = recv_packet(c, &p, "read the acknowledgement of an insert from", err))) {
    if (p->type == CK_CH_SERVER_END_OF_STREAM) return 0;
    if (p->type == CK_CH_SERVER_EXCEPTION) {
      c->broken = true;
      return server_error(c, p, err);
    }
    if (!ignorable(p->type) && p->type != CK_CH_SERVER_DATA)
      return unexpected(c, p, "while finishing an insert", err);
  }
  return rc;
}

void ck_ch_quote_ident(const char *name, ck_buf_t *out) {
  ck_buf_putc(out, '`');
  for (const char *s = name; *s; s++) {
    if (*s == '`' || *s == '\\') ck_buf_putc(out, '\\');
    ck_buf_putc(out, *s);
  }
  ck_buf_putc(out, '`');
}

void ck_ch_quote_str(const char *text, ck_buf_t *out) {
  ck_buf_putc(out, '\'');
  for (const char *s = text; *s; s++) {
    if (*s == '\'' || *s == '\\') ck_buf_putc(out, '\\');
    ck_buf_putc(out, *s);
  }
  ck_buf_putc(out, '\'');
}
