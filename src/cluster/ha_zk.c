/*
 * DESIGN: high availability on ZooKeeper (--ha zookeeper://host:port[,…]/path), for
 * coordinators on several hosts. Under <path>:
 *
 *   <path>/leader/member-<seq>   one ephemeral sequential node per coordinator, its data the
 *                                control address "host:port" workers connect to. The member
 *                                with the lowest sequence leads; each other one watches the
 *                                member just before its own and looks again when that one goes
 *                                (no herd: one watcher per member).
 *   <path>/epoch                 the leader's epoch (its member's sequence + 1, so it rises with
 *                                every takeover on every host), written by each new leader;
 *                                the node's version is the fence: every write of a leader is
 *                                a transaction that checks it still has the version that
 *                                leader's write gave it.
 *   <path>/jobs/job-<id>.manifest one per job, ha.c's manifest format, written fenced.
 *
 * A leader whose session expires (its member is gone, a standby takes over), whose write is
 * refused by the fence, or that has not heard ZooKeeper for about a session timeout (the
 * server may have expired it unheard: a leader cut off from ZooKeeper steps down on its own,
 * about when a standby may lead) is deposed: ck_co_ha_deposed turns true and the control loop stops
 * without acting further (coordinator.c). Everything it could still send is fenced twice
 * over: workers drop frames of an epoch older than the newest they saw (proto.h), and
 * ZooKeeper refuses its writes. A coordinator stopped cleanly closes its session, so its
 * member goes at once and a standby takes over without waiting for the session timeout.
 *
 * Threads: ck_co_hazk_take on the starting thread; writes under co->mu; the session's flags
 * are atomics set by the client's thread (zk.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "checkpoint/trace.h"
#include "cluster/coordinator_int.h"
#include "cluster/zk.h"

#define LOG_CO "coordinator"

int ck_co_hazk_take(co_t *co, volatile sig_atomic_t *stop, ck_error_t *err) {
  char *hosts = NULL;
  int rc = ck_zk_parse_url(co->o.ha_url, &hosts, &co->zk_path, err);
  if (!rc) rc = ck_zk_open(hosts, co->o.ha_session_ms, &co->zk, err);
  ck_free(hosts);
  char dir[1024], addr[300];
  snprintf(dir, sizeof dir, "%s/leader", co->zk_path ? co->zk_path : "");
  if (!rc) rc = ck_zk_mkdirs(co->zk, dir, err);
  snprintf(dir, sizeof dir, "%s/jobs", co->zk_path ? co->zk_path : "");
  if (!rc) rc = ck_zk_mkdirs(co->zk, dir, err);
  snprintf(dir, sizeof dir, "%s/leader", co->zk_path ? co->zk_path : "");
  snprintf(addr, sizeof addr, "%s:%d", co->o.host, co->o.port);
  if (!rc) rc = ck_zk_join(co->zk, dir, "member-", addr, co->zk_member, sizeof co->zk_member,
                           err);
  if (rc) return rc;
  bool logged = false;
  for (;;) { /* lead when ours is the lowest member; else wait for the one before ours */
    char **m;
    int n;
    if ((rc = ck_zk_members(co->zk, dir, false, &m, &n, err))) return rc;
    int me = -1;
    for (int i = 0; i < n; i++)
      if (!strcmp(m[i], co->zk_member)) me = i;
    if (me < 0) {
      ck_zk_members_free(m, n);
      return ck_error_set(err, CK_ESTATE, "could not stand for leader in '%s': this "
                          "coordinator's member '%s' is gone (the session expired)", dir,
                          co->zk_member);
    }
    if (me == 0) {
      ck_zk_members_free(m, n);
      break;
    }
    char before[1200];
    snprintf(before, sizeof before, "%s/%s", dir, m[me - 1]);
    ck_zk_members_free(m, n);
    if (!logged)
      CK_LOG_INFO(LOG_CO, "another coordinator leads '%s' on ZooKeeper: standing by as %s",
                  co->zk_path, co->zk_member);
    logged = true;
    if ((rc = ck_zk_wait_gone(co->zk, before, stop, err))) return rc;
  }
  co->epoch = (uint64_t)ck_zk_seq(co->zk_member) + 1;
  char path[1100], num[32];
  snprintf(path, sizeof path, "%s/epoch", co->zk_path);
  int n = snprintf(num, sizeof num, "%llu", (unsigned long long)co->epoch);
  if ((rc = ck_zk_put(co->zk, path, num, (size_t)n, &co->zk_fence_version, err))) return rc;
  CK_TRACE("leader", "ha=%s epoch=%llu", co->o.ha_url, (unsigned long long)co->epoch);
  CK_LOG_INFO(LOG_CO, "leader of '%s' on ZooKeeper as %s with epoch %llu", co->zk_path,
              co->zk_member, (unsigned long long)co->epoch);
  return 0;
}

int ck_co_hazk_write(co_t *co, const char *name, const char *data, size_t len,
                     ck_error_t *err) {
  char path[1100], fence[1100];
  snprintf(path, sizeof path, "%s/jobs/%s", co->zk_path, name);
  snprintf(fence, sizeof fence, "%s/epoch", co->zk_path);
  int rc = ck_zk_put_fenced(co->zk, path, data, len, fence, co->zk_fence_version, err);
  if (rc == CK_ESTATE) co->deposed = true;
  return rc;
}

int ck_co_hazk_each(co_t *co, ck_co_manifest_fn fn, void *ctx) {
  char dir[1100];
  snprintf(dir, sizeof dir, "%s/jobs", co->zk_path);
  ck_error_t err;
  ck_error_clear(&err);
  char **names = NULL;
  int n = 0;
  /* job-<id>.manifest has no 10-digit suffix: list them through the plain listing */
  int rc = ck_zk_list(co->zk, dir, &names, &n, &err);
  if (rc) {
    CK_LOG_ERR(LOG_CO, "%s", err.message);
    return rc;
  }
  ck_buf_t b;
  ck_buf_init(&b);
  for (int i = 0; i < n; i++) {
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    ck_error_clear(&err);
    if (ck_zk_get(co->zk, path, &b, NULL, &err)) {
      CK_LOG_WARN(LOG_CO, "%s", err.message);
      continue;
    }
    fn(co, names[i], path, b.data, b.len, ctx);
  }
  ck_buf_fini(&b);
  ck_zk_members_free(names, n);
  return 0;
}

bool ck_co_ha_deposed(co_t *co) {
  return co->zk && (co->deposed || ck_zk_expired(co->zk) || ck_zk_suspect(co->zk));
}

bool ck_co_ha_session_expired(co_t *co) { return co->zk && ck_zk_expired(co->zk); }

void ck_co_hazk_release(co_t *co) {
  ck_zk_close(co->zk); /* its member goes with the session: a standby takes over now */
  co->zk = NULL;
  ck_free(co->zk_path);
  co->zk_path = NULL;
}
