/*
 * cluster/zk.h: the --ha URL's parsing, and, against the ZooKeeper service ($CLINK_ZOOKEEPER,
 * a path of this run's own; skipped without it), election order and the fence: a write
 * checked against the epoch node's version is refused once another leader moved it, and a
 * write of the current leader goes through.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "cluster/zk.h"

static void url_is_split_into_servers_and_path(void **state) {
  (void)state;
  ck_error_t err;
  char *hosts, *path;
  ck_error_clear(&err);
  assert_int_equal(ck_zk_parse_url("zookeeper://a:1,b:2/clink/prod/", &hosts, &path, &err), 0);
  assert_string_equal(hosts, "a:1,b:2");
  assert_string_equal(path, "/clink/prod");
  ck_free(hosts);
  ck_free(path);
  const char *bad[] = {"zk://a:1/p", "zookeeper://a:1", "zookeeper:///p", "zookeeper://a:1/",
                       "zookeeper://a:1/p//q"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ck_error_clear(&err);
    assert_int_equal(ck_zk_parse_url(bad[i], &hosts, &path, &err), CK_EOPTION);
    assert_non_null(strstr(err.message, "could not use"));
    assert_null(hosts);
    assert_null(path);
  }
}

static void sequence_suffix_is_read(void **state) {
  (void)state;
  assert_int_equal(ck_zk_seq("member-0000000042"), 42);
  assert_int_equal(ck_zk_seq("member-42"), -1);
  assert_int_equal(ck_zk_seq("job-1.manifest"), -1);
}

static void a_moved_epoch_refuses_the_old_leaders_write(void **state) {
  (void)state;
  const char *servers = getenv("CLINK_ZOOKEEPER");
  if (!servers || !*servers) {
    skip();
    return;
  }
  char base[128], dir[160], epoch[160], job[160];
  snprintf(base, sizeof base, "/clink-tests/unit-%d", (int)getpid());
  snprintf(dir, sizeof dir, "%s/leader", base);
  snprintf(epoch, sizeof epoch, "%s/epoch", base);
  snprintf(job, sizeof job, "%s/job-1.manifest", base);
  ck_error_t err;
  ck_error_clear(&err);
  ck_zk_t *a, *b;
  assert_int_equal(ck_zk_open(servers, 4000, &a, &err), 0);
  assert_int_equal(ck_zk_open(servers, 4000, &b, &err), 0);
  assert_int_equal(ck_zk_mkdirs(a, dir, &err), 0);
  char ma[64], mb[64];
  assert_int_equal(ck_zk_join(a, dir, "member-", "h:1", ma, sizeof ma, &err), 0);
  assert_int_equal(ck_zk_join(b, dir, "member-", "h:2", mb, sizeof mb, &err), 0);
  char **m;
  int n;
  assert_int_equal(ck_zk_members(b, dir, false, &m, &n, &err), 0);
  assert_int_equal(n, 2);
  assert_string_equal(m[0], ma); /* the first to join leads */
  assert_true(ck_zk_seq(mb) > ck_zk_seq(ma));
  ck_zk_members_free(m, n);
  int va, vb;
  assert_int_equal(ck_zk_put(a, epoch, "1", 1, &va, &err), 0);
  assert_int_equal(ck_zk_put_fenced(a, job, "from a", 6, epoch, va, &err), 0);
  assert_int_equal(ck_zk_put(b, epoch, "2", 1, &vb, &err), 0); /* b takes over */
  assert_true(vb > va);
  ck_error_clear(&err);
  assert_int_equal(ck_zk_put_fenced(a, job, "late a", 6, epoch, va, &err), CK_ESTATE);
  assert_non_null(strstr(err.message, "refused, fenced"));
  ck_error_clear(&err);
  assert_int_equal(ck_zk_put_fenced(b, job, "from b", 6, epoch, vb, &err), 0);
  ck_buf_t got;
  ck_buf_init(&got);
  assert_int_equal(ck_zk_get(a, job, &got, NULL, &err), 0);
  assert_string_equal(got.data, "from b"); /* the old leader's write never landed */
  ck_buf_fini(&got);
  ck_zk_close(a);
  ck_zk_close(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(url_is_split_into_servers_and_path),
      cmocka_unit_test(sequence_suffix_is_read),
      cmocka_unit_test(a_moved_epoch_refuses_the_old_leaders_write),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
