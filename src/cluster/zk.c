/*
 * DESIGN: see zk.h. The client's completion thread calls watch() for session events and for
 * the watches set here; it only sets flags and signals zk->cv under zk->mu, which callers
 * wait on with a deadline. ZooKeeper's own log goes to stderr at WARN (it is the client
 * library's, not ours; its lines start with a timestamp and "ZOO_").
 */
#include "cluster/zk.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "base/alloc.h"
#include "base/thread.h"
#include "base/time.h"

struct ck_zk {
  zhandle_t *zh;
  ck_mutex_t mu;
  ck_cond_t cv;
  atomic_bool connected, expired, changed, node_fired;
  _Atomic int64_t lost_at; /* ck_mono_ms when the connection went (0: connected) */
  int session_ms;
};

static void watch(zhandle_t *zh, int type, int state, const char *path, void *ctx) {
  (void)zh;
  (void)path;
  ck_zk_t *zk = ctx;
  ck_mutex_lock(&zk->mu);
  if (type == ZOO_SESSION_EVENT) {
    if (state == ZOO_CONNECTED_STATE) {
      atomic_store(&zk->connected, true);
      atomic_store(&zk->lost_at, 0);
    } else if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) {
      atomic_store(&zk->expired, true);
    } else {
      atomic_store(&zk->connected, false);
      int64_t none = 0;
      atomic_compare_exchange_strong(&zk->lost_at, &none, ck_mono_ms());
    }
  } else if (type == ZOO_CHILD_EVENT) {
    atomic_store(&zk->changed, true);
  }
  ck_cond_broadcast(&zk->cv);
  ck_mutex_unlock(&zk->mu);
}

/* The watch set on one node by ck_zk_wait_gone: any event on it wakes the waiter. */
static void node_watch(zhandle_t *zh, int type, int state, const char *path, void *ctx) {
  (void)zh;
  (void)type;
  (void)state;
  (void)path;
  ck_zk_t *zk = ctx;
  ck_mutex_lock(&zk->mu);
  atomic_store(&zk->node_fired, true);
  ck_cond_broadcast(&zk->cv);
  ck_mutex_unlock(&zk->mu);
}

static int zk_fail(ck_error_t *err, int rc, const char *what, const char *path) {
  int code = rc == ZNONODE ? CK_ENOTFOUND
           : rc == ZNODEEXISTS ? CK_EEXISTS
           : rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE || rc == ZBADVERSION ? CK_ESTATE
           : rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT ? CK_ECONNECT
                                                                : CK_EREMOTE;
  return ck_error_set(err, code, "could not %s '%s' in ZooKeeper: %s", what, path, zerror(rc));
}

int ck_zk_parse_url(const char *url, char **hosts, char **path, ck_error_t *err) {
  static const char scheme[] = "zookeeper://";
  *hosts = *path = NULL;
  if (strncmp(url, scheme, sizeof scheme - 1))
    return ck_error_set(err, CK_EOPTION, "could not use '%s' for HA: it is not a "
                        "zookeeper://host:port[,host:port…]/path URL", url);
  const char *h = url + sizeof scheme - 1, *slash = strchr(h, '/');
  if (slash == h || !slash || !slash[1] || strstr(slash, "//"))
    return ck_error_set(err, CK_EOPTION, "could not use '%s' for HA: it needs both servers "
                        "and a path, e.g. zookeeper://127.0.0.1:2181/clink/prod", url);
  size_t hl = (size_t)(slash - h), pl = strlen(slash);
  while (pl > 1 && slash[pl - 1] == '/') pl--;
  *hosts = ck_malloc(hl + 1);
  memcpy(*hosts, h, hl);
  (*hosts)[hl] = 0;
  *path = ck_malloc(pl + 1);
  memcpy(*path, slash, pl);
  (*path)[pl] = 0;
  return 0;
}

int ck_zk_open(const char *hosts, int session_ms, ck_zk_t **out, ck_error_t *err) {
  *out = NULL;
  static atomic_bool quiet;
  if (!atomic_exchange(&quiet, true)) zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
  ck_zk_t *zk = ck_calloc(1, sizeof *zk);
  ck_mutex_init(&zk->mu);
  ck_cond_init(&zk->cv);
  zk->session_ms = session_ms > 0 ? session_ms : 10000;
  zk->zh = zookeeper_init(hosts, watch, zk->session_ms, NULL, zk, 0);
  if (!zk->zh) {
    ck_error_set(err, CK_ECONNECT, "could not start a ZooKeeper session with '%s': %s", hosts,
                 strerror(errno));
    ck_zk_close(zk);
    return CK_ECONNECT;
  }
  int64_t deadline = ck_mono_ms() + zk->session_ms;
  ck_mutex_lock(&zk->mu);
  while (!atomic_load(&zk->connected) && !atomic_load(&zk->expired) &&
         ck_cond_wait_until(&zk->cv, &zk->mu, deadline)) {
  }
  bool ok = atomic_load(&zk->connected);
  ck_mutex_unlock(&zk->mu);
  if (!ok) {
    ck_error_set(err, CK_ECONNECT, "could not connect to ZooKeeper at '%s' within %d ms",
                 hosts, zk->session_ms);
    ck_error_hint(err, "Check that the servers listen there (echo srvr | nc HOST PORT).");
    ck_zk_close(zk);
    return CK_ECONNECT;
  }
  *out = zk;
  return 0;
}

void ck_zk_close(ck_zk_t *zk) {
  if (!zk) return;
  if (zk->zh) zookeeper_close(zk->zh); /* joins the client's threads: no watch() after this */
  ck_cond_fini(&zk->cv);
  ck_mutex_fini(&zk->mu);
  ck_free(zk);
}

bool ck_zk_expired(ck_zk_t *zk) { return atomic_load(&zk->expired); }

bool ck_zk_suspect(ck_zk_t *zk) {
  int64_t at = atomic_load(&zk->lost_at);
  int timeout = zoo_recv_timeout(zk->zh); /* the one the server granted */
  /* the client notices a silent server after 2/3 of the timeout: a third more is the whole
   * timeout since it last heard the server, when the server expires a silent session */
  return at && ck_mono_ms() - at >= (timeout > 0 ? timeout : zk->session_ms) / 3;
}

bool ck_zk_changed(ck_zk_t *zk) { return atomic_exchange(&zk->changed, false); }

int ck_zk_mkdirs(ck_zk_t *zk, const char *path, ck_error_t *err) {
  size_t n = strlen(path);
  char *p = ck_malloc(n + 1);
  memcpy(p, path, n + 1);
  int rc = 0;
  for (size_t i = 1; i <= n && !rc; i++) {
    if (p[i] != '/' && p[i] != 0) continue;
    char c = p[i];
    p[i] = 0;
    int zr = zoo_create(zk->zh, p, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    if (zr != ZOK && zr != ZNODEEXISTS) rc = zk_fail(err, zr, "create the node", p);
    p[i] = c;
  }
  ck_free(p);
  return rc;
}

int ck_zk_join(ck_zk_t *zk, const char *dir, const char *prefix, const char *data,
               char *name, size_t n, ck_error_t *err) {
  char path[1024], made[1100];
  snprintf(path, sizeof path, "%s/%s", dir, prefix);
  int zr = zoo_create(zk->zh, path, data, (int)strlen(data), &ZOO_OPEN_ACL_UNSAFE,
                      ZOO_EPHEMERAL_SEQUENTIAL, made, (int)sizeof made);
  if (zr != ZOK) return zk_fail(err, zr, "create the member", path);
  const char *slash = strrchr(made, '/');
  snprintf(name, n, "%s", slash ? slash + 1 : made);
  return 0;
}

long long ck_zk_seq(const char *name) {
  size_t l = strlen(name);
  if (l < 10) return -1;
  long long v = 0;
  for (size_t i = l - 10; i < l; i++) {
    if (name[i] < '0' || name[i] > '9') return -1;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

static int by_seq(const void *a, const void *b) {
  long long x = ck_zk_seq(*(char *const *)a), y = ck_zk_seq(*(char *const *)b);
  return x < y ? -1 : x > y;
}

int ck_zk_members(ck_zk_t *zk, const char *dir, bool watch_it, char ***names, int *n,
                  ck_error_t *err) {
  *names = NULL;
  *n = 0;
  struct String_vector v = {0, NULL};
  if (watch_it) atomic_store(&zk->changed, false);
  int zr = watch_it ? zoo_wget_children(zk->zh, dir, watch, zk, &v)
                    : zoo_get_children(zk->zh, dir, 0, &v);
  if (zr != ZOK) return zk_fail(err, zr, "list the members of", dir);
  char **out = ck_calloc((size_t)v.count + 1, sizeof *out);
  int k = 0;
  for (int i = 0; i < v.count; i++) {
    if (ck_zk_seq(v.data[i]) < 0) continue;
    size_t l = strlen(v.data[i]);
    out[k] = ck_malloc(l + 1);
    memcpy(out[k++], v.data[i], l + 1);
  }
  deallocate_String_vector(&v);
  qsort(out, (size_t)k, sizeof *out, by_seq);
  *names = out;
  *n = k;
  return 0;
}

int ck_zk_list(ck_zk_t *zk, const char *dir, char ***names, int *n, ck_error_t *err) {
  *names = NULL;
  *n = 0;
  struct String_vector v = {0, NULL};
  int zr = zoo_get_children(zk->zh, dir, 0, &v);
  if (zr != ZOK) return zk_fail(err, zr, "list the children of", dir);
  char **out = ck_calloc((size_t)v.count + 1, sizeof *out);
  for (int i = 0; i < v.count; i++) {
    size_t l = strlen(v.data[i]);
    out[i] = ck_malloc(l + 1);
    memcpy(out[i], v.data[i], l + 1);
  }
  *n = v.count;
  deallocate_String_vector(&v);
  *names = out;
  return 0;
}

void ck_zk_members_free(char **names, int n) {
  for (int i = 0; i < n; i++) ck_free(names[i]);
  ck_free(names);
}

int ck_zk_get(ck_zk_t *zk, const char *path, ck_buf_t *out, int *version, ck_error_t *err) {
  struct Stat st;
  int cap = 1 << 16;
  for (;;) {
    ck_buf_reserve(out, (size_t)cap);
    int len = cap;
    int zr = zoo_get(zk->zh, path, 0, out->data, &len, &st);
    if (zr != ZOK) {
      out->len = 0;
      return zk_fail(err, zr, "read", path);
    }
    if (st.dataLength > cap) { /* did not fit: again with room for all of it */
      cap = st.dataLength;
      continue;
    }
    out->len = len < 0 ? 0 : (size_t)len;
    out->data[out->len] = 0;
    if (version) *version = st.version;
    return 0;
  }
}

int ck_zk_put(ck_zk_t *zk, const char *path, const void *data, size_t len, int *version,
              ck_error_t *err) {
  struct Stat st;
  int zr = zoo_set2(zk->zh, path, data, (int)len, -1, &st);
  if (zr == ZNONODE) {
    zr = zoo_create(zk->zh, path, data, (int)len, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    if (zr == ZOK) zr = zoo_exists(zk->zh, path, 0, &st);
  }
  if (zr != ZOK) return zk_fail(err, zr, "write", path);
  if (version) *version = st.version;
  return 0;
}

int ck_zk_put_fenced(ck_zk_t *zk, const char *path, const void *data, size_t len,
                     const char *fence_path, int fence_version, ck_error_t *err) {
  int create = 0, lost = 0;
  for (;;) {
    zoo_op_t ops[2];
    zoo_op_result_t res[2];
    memset(res, 0, sizeof res);
    struct Stat st;
    zoo_check_op_init(&ops[0], fence_path, fence_version);
    if (!create) zoo_set_op_init(&ops[1], path, data, (int)len, -1, &st);
    else zoo_create_op_init(&ops[1], path, data, (int)len, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    /* libzookeeper_mt 3.8's zoo_multi frees a caller's path when the handle is already
     * unrecoverable (expired): never call it then — the answer is known anyway */
    int zr = atomic_load(&zk->expired) || is_unrecoverable(zk->zh) == ZINVALIDSTATE
                 ? ZINVALIDSTATE
                 : zoo_multi(zk->zh, 2, ops, res);
    if (zr == ZOK) return 0;
    if (zr == ZSESSIONEXPIRED || zr == ZINVALIDSTATE) {
      ck_error_set(err, CK_ESTATE, "could not write '%s' to ZooKeeper: refused, fenced: this "
                   "session expired (%s), so its leadership ended", path, zerror(zr));
      return CK_ESTATE;
    }
    if (res[0].err == ZBADVERSION || res[0].err == ZNONODE || zr == ZBADVERSION) {
      ck_error_set(err, CK_ESTATE, "could not write '%s' to ZooKeeper: refused, fenced: '%s' "
                   "is no longer at version %d (a newer leader took over)", path, fence_path,
                   fence_version);
      return CK_ESTATE;
    }
    if (!create && res[1].err == ZNONODE) { /* a new node: create it */
      create = 1;
      continue;
    }
    if ((zr == ZCONNECTIONLOSS || zr == ZOPERATIONTIMEOUT) && lost++ < 3) {
      /* not known to be done: once the session is connected again (or known expired),
       * again — the fence makes a repeat by a deposed leader fail like the first */
      int64_t deadline = ck_mono_ms() + zk->session_ms;
      ck_mutex_lock(&zk->mu);
      while (!atomic_load(&zk->expired) && !ck_zk_suspect(zk) && ck_mono_ms() < deadline &&
             !atomic_load(&zk->connected))
        (void)ck_cond_wait_until(&zk->cv, &zk->mu, ck_mono_ms() + 50);
      ck_mutex_unlock(&zk->mu);
      if (ck_zk_suspect(zk) && !atomic_load(&zk->expired)) {
        ck_error_set(err, CK_ESTATE, "could not write '%s' to ZooKeeper: given up, fenced: the "
                     "server has not been heard for a session timeout, so this session may "
                     "have expired and its leadership with it", path);
        return CK_ESTATE;
      }
      continue;
    }
    return zk_fail(err, zr, "write", path);
  }
}

int ck_zk_wait_gone(ck_zk_t *zk, const char *path, volatile sig_atomic_t *stop, ck_error_t *err) {
  for (;;) {
    struct Stat st;
    atomic_store(&zk->node_fired, false);
    int zr = zoo_wexists(zk->zh, path, node_watch, zk, &st);
    if (zr == ZNONODE) return 0;
    if (zr != ZOK) return zk_fail(err, zr, "watch", path);
    ck_mutex_lock(&zk->mu); /* woken by the watch; the deadline only to look at *stop */
    while (!atomic_load(&zk->node_fired) && !(stop && *stop) && !ck_zk_expired(zk))
      (void)ck_cond_wait_until(&zk->cv, &zk->mu, ck_mono_ms() + 100);
    ck_mutex_unlock(&zk->mu);
    if (stop && *stop) return ck_error_set(err, CK_ECANCELLED, "stopped while standing by");
    if (ck_zk_expired(zk))
      return ck_error_set(err, CK_ESTATE, "could not stand by: the ZooKeeper session expired");
  }
}
