/*
 * DESIGN: a small face on ZooKeeper's C client (libzookeeper_mt, its threaded flavour), for the
 * coordinator's leader election (ha_zk.c) and the worker's leader lookup (worker.c). It keeps
 * one session per ck_zk_t and says what the cluster needs in its own words: parents made on
 * demand, ephemeral sequential members, the lowest member of a directory, a write fenced by
 * a znode's version in the same transaction, waits with a deadline and a stop flag.
 *
 * Addresses come as a URL, zookeeper://host:port[,host:port…]/path, the form --ha takes.
 * The session's state is followed by the client's own thread: ck_zk_expired turns true once
 * ZooKeeper declared the session expired (its ephemeral nodes are gone: a leader is deposed);
 * ck_zk_changed turns true when a watched directory's members changed (and is reset by
 * reading it). Every call blocks at most about one session timeout.
 */
#ifndef CK_CLUSTER_ZK_H
#define CK_CLUSTER_ZK_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/error.h"

typedef struct ck_zk ck_zk_t;

/* Splits "zookeeper://h:p[,h:p]/path" into a malloc'ed host list and path (no trailing '/'). */
int ck_zk_parse_url(const char *url, char **hosts, char **path, ck_error_t *err);
/* Opens a session and waits for it to be connected (up to session_ms). */
int ck_zk_open(const char *hosts, int session_ms, ck_zk_t **out, ck_error_t *err);
void ck_zk_close(ck_zk_t *zk);
bool ck_zk_expired(ck_zk_t *zk);
/* True when the server has not been heard for about a whole session timeout (the connection
 * down for the last third of it): the server may have expired the session already without
 * this client being able to hear it. */
bool ck_zk_suspect(ck_zk_t *zk);
/* True once since the last ck_zk_members(…, watch) on a directory whose members changed. */
bool ck_zk_changed(ck_zk_t *zk);
/* Makes path and its parents (persistent, empty) where missing. */
int ck_zk_mkdirs(ck_zk_t *zk, const char *path, ck_error_t *err);
/* Creates dir/prefix<seq> ephemeral and sequential with data; its name (no dir) into name. */
int ck_zk_join(ck_zk_t *zk, const char *dir, const char *prefix, const char *data,
               char *name, size_t n, ck_error_t *err);
/* The members of dir sorted by their sequence suffix (names must end in 10 digits; others are
 * skipped): a malloc'ed array of malloc'ed names, *n of them. watch: ck_zk_changed says when
 * they change. */
int ck_zk_members(ck_zk_t *zk, const char *dir, bool watch, char ***names, int *n,
                  ck_error_t *err);
void ck_zk_members_free(char **names, int n);
/* Every child of dir, unsorted (free with ck_zk_members_free). */
int ck_zk_list(ck_zk_t *zk, const char *dir, char ***names, int *n, ck_error_t *err);
/* The sequence number a member's name ends in; -1 when it has none. */
long long ck_zk_seq(const char *name);
/* The data of path into out (replaced), and its version when version is not NULL;
 * CK_ENOTFOUND when there is no such node. */
int ck_zk_get(ck_zk_t *zk, const char *path, ck_buf_t *out, int *version, ck_error_t *err);
/* Sets path's data (creating the node when missing), with any version; *version the new one. */
int ck_zk_put(ck_zk_t *zk, const char *path, const void *data, size_t len, int *version,
              ck_error_t *err);
/* Sets (or creates) path's data in one transaction with a check that fence_path still has
 * version fence_version: CK_ESTATE, "fenced", when it has not (another leader moved it), or
 * when the session expired. */
int ck_zk_put_fenced(ck_zk_t *zk, const char *path, const void *data, size_t len,
                     const char *fence_path, int fence_version, ck_error_t *err);
/* Waits until path is gone (or *stop, or the session expired): 0 when it is gone. */
int ck_zk_wait_gone(ck_zk_t *zk, const char *path, volatile sig_atomic_t *stop, ck_error_t *err);

#endif
