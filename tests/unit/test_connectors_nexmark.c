/*
 * DESIGN: unit tests for the Nexmark event model and connector='nexmark'
 * (connectors/nexmark.c): every event is a pure function of (seed, number) — the same twice,
 * different under another seed, independent of generation order; the 1:3:46 proportions; the
 * reference definitions of ids, prices, hot auctions and bidders, channels and URLs, strings,
 * timestamps and padding, checked against values that java.util.Random and the reference
 * formulas give (computed with the JDK, quoted below); the flat JSON form; the source at any
 * parallelism equals the parallelism-1 stream, restores exactly and refuses bad columns.
 * Threads: the main thread only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "connectors/connectors.h"
#include "connectors/nexmark.h"
#include "test_connectors_util.h"

static ck_nexmark_gen_t *mkgen(uint64_t seed) {
  ck_nexmark_cfg_t cfg;
  ck_nexmark_cfg_default(&cfg);
  cfg.seed = seed;
  return ck_nexmark_gen_new(&cfg);
}

static bool starts_with(const char *s, const char *prefix) {
  if (strncmp(s, prefix, strlen(prefix)) == 0) return true;
  print_error("'%.120s' does not start with '%s'\n", s, prefix);
  return false;
}

static char *json_of(const ck_nexmark_gen_t *gen, uint64_t n) {
  ck_nexmark_event_t ev;
  ck_nexmark_gen_event(gen, n, &ev);
  ck_buf_t b;
  ck_buf_init(&b);
  ck_nexmark_event_json(&ev, &b);
  return ck_buf_detach(&b);
}

static void test_nexmark_events_are_pure_functions_of_seed_and_number(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  ck_nexmark_gen_t *a = mkgen(7), *b = mkgen(7), *c = mkgen(8);
  int differ = 0;
  /* b walks backwards: no event depends on the ones generated before it */
  for (int i = 0; i < 2000; i++) {
    uint64_t n = (uint64_t)i, m = (uint64_t)(1999 - i);
    char *x = json_of(a, n), *y = json_of(b, n), *z = json_of(c, n), *w = json_of(b, m);
    assert_string_equal(x, y);
    char *x2 = json_of(a, m);
    assert_string_equal(x2, w);
    differ += strcmp(x, z) != 0;
    ck_free(x), ck_free(y), ck_free(z), ck_free(w), ck_free(x2);
  }
  assert_true(differ > 1900); /* another seed gives other events */
  ck_nexmark_gen_free(a), ck_nexmark_gen_free(b), ck_nexmark_gen_free(c);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void test_nexmark_proportions_and_ids(void **state) {
  ck_nexmark_gen_t *gen = mkgen(0);
  int count[3] = {0, 0, 0};
  ck_nexmark_event_t ev;
  int64_t last_person = -1, last_auction = -1;
  for (uint64_t n = 0; n < 50 * 200; n++) {
    ck_nexmark_gen_event(gen, n, &ev);
    assert_int_equal(ev.kind, ck_nexmark_kind(n));
    count[ev.kind]++;
    /* 10 000 events per second of event time: 10 per millisecond */
    assert_int_equal(ev.date_time, CK_NEXMARK_BASE_TIME_MS + (int64_t)n / 10);
    if (ev.kind == CK_NEXMARK_PERSON) {
      assert_int_equal(ev.id, 1000 + (int64_t)(n / 50)); /* persons numbered in order */
      assert_true(ev.id == last_person + 1 || last_person < 0);
      last_person = ev.id;
    } else if (ev.kind == CK_NEXMARK_AUCTION) {
      assert_int_equal(ev.id, 1000 + (int64_t)(n / 50) * 3 + (int64_t)(n % 50) - 1);
      assert_true(ev.id == last_auction + 1 || last_auction < 0);
      last_auction = ev.id;
    } else {
      /* bids name existing auctions and people, or at most 10 ids ahead (the lead) */
      assert_in_range(ev.auction, 1000, last_auction + 10);
      assert_in_range(ev.bidder, 1000, last_person + 10);
    }
  }
  assert_int_equal(count[CK_NEXMARK_PERSON], 200);
  assert_int_equal(count[CK_NEXMARK_AUCTION], 600);
  assert_int_equal(count[CK_NEXMARK_BID], 9200);
  ck_nexmark_gen_free(gen);
}

/* Values java.util.Random and the reference formulas give (JDK 17, seed 0 = the reference). */
static void test_nexmark_matches_reference_streams(void **state) {
  ck_nexmark_gen_t *gen = mkgen(0);
  ck_nexmark_event_t ev;
  ck_nexmark_gen_event(gen, 0, &ev);
  assert_int_equal(ev.kind, CK_NEXMARK_PERSON);
  assert_string_equal(ev.name, "Peter Jones");
  assert_string_equal(ev.email_address, "nhd@xcat.com");
  assert_string_equal(ev.credit_card, "7241 7320 9143 4888");
  assert_string_equal(ev.city, "Portland");
  assert_string_equal(ev.state, "WY");
  static const struct {
    uint64_t n;
    int64_t auction, bidder, price;
    const char *channel;
  } bids[] = {
      {4, 1000, 1001, 32530001, "Google"},
      {5, 1000, 1009, 468715, "Facebook"},
      {49, 1000, 1001, 545, "channel-4763"},
      {1234567, 74986, 25601, 48503, "channel-6465"},
  };
  for (size_t i = 0; i < CK_ARRAY_LEN(bids); i++) {
    ck_nexmark_gen_event(gen, bids[i].n, &ev);
    assert_int_equal(ev.kind, CK_NEXMARK_BID);
    assert_int_equal(ev.auction, bids[i].auction);
    assert_int_equal(ev.bidder, bids[i].bidder);
    assert_int_equal(ev.price, bids[i].price);
    assert_string_equal(ev.channel, bids[i].channel);
  }
  /* channel 1: Math.abs(Integer.reverse(1)) is Integer.MIN_VALUE, as in Java */
  bool found = false;
  for (uint64_t n = 5; n < 2000000 && !found; n++) {
    if (ck_nexmark_kind(n) != CK_NEXMARK_BID) continue;
    ck_nexmark_gen_event(gen, n, &ev);
    if (strcmp(ev.channel, "channel-3") == 0 && strstr(ev.url, "&channel_id=")) {
      assert_non_null(strstr(ev.url, "&channel_id=1073741824"));
      found = true;
    }
  }
  assert_true(found);
  ck_nexmark_gen_free(gen);
}

static bool all_in(const char *s, const char *set) { return s[strspn(s, set)] == 0; }

static void test_nexmark_field_definitions(void **state) {
  ck_nexmark_gen_t *gen = mkgen(3);
  ck_nexmark_event_t ev;
  int bids = 0, hot_auction = 0, hot_bidder = 0, hot_channel = 0, other = 0, with_id = 0;
  const char *lower_sp = "abcdefghijklmnopqrstuvwxyz ";
  for (uint64_t n = 0; n < 100000; n++) {
    ck_nexmark_gen_event(gen, n, &ev);
    size_t extra = strlen(ev.extra);
    if (ev.kind == CK_NEXMARK_PERSON) {
      const char *at = strchr(ev.email_address, '@');
      assert_non_null(at);
      assert_non_null(strstr(at, ".com"));
      assert_int_equal(strlen(ev.credit_card), 19);
      for (int i = 0; i < 19; i++)
        assert_true(i % 5 == 4 ? ev.credit_card[i] == ' ' : (ev.credit_card[i] >= '0' &&
                                                             ev.credit_card[i] <= '9'));
      assert_non_null(strstr("Phoenix,Los Angeles,San Francisco,Boise,Portland,Bend,Redmond,"
                             "Seattle,Kent,Cheyenne", ev.city));
      assert_int_equal(strlen(ev.state), 2);
      assert_non_null(strstr("AZ,CA,ID,OR,WA,WY", ev.state));
      assert_non_null(strchr(ev.name, ' '));
    } else if (ev.kind == CK_NEXMARK_AUCTION) {
      assert_in_range(ev.category, 10, 14);
      assert_true(ev.reserve > ev.initial_bid);
      assert_true(ev.expires > ev.date_time);
      assert_true(all_in(ev.item_name, lower_sp) && strlen(ev.item_name) < 20);
      assert_true(all_in(ev.description, lower_sp) && strlen(ev.description) < 100);
      assert_in_range(ev.seller, 1000, 1000 + (int64_t)n / 50 + 10);
    } else {
      bids++;
      /* prices: round(10^(6u) * 100), so 1 dollar to 1 million dollars, in cents */
      assert_in_range(ev.price, 100, 100000000);
      hot_auction += (ev.auction - 1000) % 100 == 0;
      hot_bidder += (ev.bidder - 1000) % 100 == 1;
      assert_int_equal(strncmp(ev.url, "https://www.nexmark.com/", 24), 0);
      assert_non_null(strstr(ev.url, "/item.htm?query=1"));
      /* three directories of 1 to 4 characters of a-z or '_' */
      char dirs[128];
      snprintf(dirs, sizeof dirs, "%s", ev.url + 24);
      *strstr(dirs, "/item.htm") = 0;
      assert_true(all_in(dirs, "abcdefghijklmnopqrstuvwxyz_/"));
      int slashes = 0;
      for (char *p = dirs; *p; p++) slashes += *p == '/';
      assert_int_equal(slashes, 2);
      if (strncmp(ev.channel, "channel-", 8) == 0) {
        other++;
        with_id += strstr(ev.url, "&channel_id=") != NULL;
        assert_true(all_in(ev.channel + 8, "0123456789"));
      } else {
        hot_channel++;
        assert_non_null(strstr("Google,Facebook,Baidu,Apple", ev.channel));
        assert_null(strstr(ev.url, "channel_id"));
      }
      /* bid padding: 100 - 32 bytes on average, within +-20% */
      assert_in_range(extra, 54, 81);
    }
  }
  /* hot auctions are chosen with probability 1/2, hot bidders 3/4 (plus random hits) */
  assert_in_range(hot_auction * 1000 / bids, 490, 530);
  assert_in_range(hot_bidder * 1000 / bids, 740, 770);
  assert_in_range(hot_channel * 1000 / bids, 485, 515);
  assert_in_range(with_id * 1000 / other, 870, 930);
  ck_nexmark_gen_free(gen);
}

static void test_nexmark_json_form(void **state) {
  ck_nexmark_gen_t *gen = mkgen(0);
  char *p = json_of(gen, 0), *a = json_of(gen, 1), *b = json_of(gen, 4);
  assert_true(starts_with(p, "{\"event_type\":0,\"id\":1000,\"name\":\"Peter Jones\","
                                "\"email_address\":\"nhd@xcat.com\",\"credit_card\":"));
  assert_non_null(strstr(a, "{\"event_type\":1,\"id\":1000,\"item_name\":"));
  assert_non_null(strstr(a, "\"seller\":1000,\"category\":13,\"date_time\":1436918400000,"));
  assert_true(starts_with(b, "{\"event_type\":2,\"auction\":1000,\"bidder\":1001,\"price\":"
                                "32530001,\"channel\":\"Google\",\"url\":\"https://www.nexmark.com/"));
  /* padding may hold a backslash (below 'a' in the reference's signed remainder): escaped */
  ck_nexmark_event_t ev;
  bool escaped = false;
  for (uint64_t n = 0; n < 500 && !escaped; n++) {
    ck_nexmark_gen_event(gen, n, &ev);
    if (strchr(ev.extra, '\\')) {
      char *j = json_of(gen, n);
      assert_non_null(strstr(j, "\\\\"));
      ck_free(j);
      escaped = true;
    }
  }
  assert_true(escaped);
  ck_free(p), ck_free(a), ck_free(b);
  ck_nexmark_gen_free(gen);
}

/* ---- the connector ---- */

#define COLS "event_type INT, id BIGINT, name VARCHAR, auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR"

typedef struct fx {
  ck_arena_t arena;
  ck_schema_t schema;
  ck_options_t opts;
} fx_t;

static ck_source_t mk(fx_t *f, int subtask, int par) {
  ck_source_t src = {ck_nexmark_connector.source,
                     {"events", &f->schema, &f->opts, subtask, par, "job"}, NULL};
  ck_error_t err;
  ck_error_clear(&err);
  if (src.ops->open(&src, &err)) fail_msg("open failed: %s", err.message);
  return src;
}

/* Reads to the end (or max_polls) in polls of max_rows; JSON rows appended to out. */
static int drain(fx_t *f, ck_source_t *src, int max_rows, int max_polls, ck_buf_t *out) {
  ck_batch_t *batch = t_batch(&f->schema);
  ck_error_t err;
  ck_error_clear(&err);
  int rc = 0, rows = 0;
  for (int i = 0; max_polls < 0 || i < max_polls; i++) {
    int p = -1;
    ck_batch_clear(batch);
    rc = src->ops->poll(src, batch, max_rows, 100, &p, &err);
    if (rc == CK_SRC_END) break;
    assert_int_equal(rc, CK_SRC_DATA);
    assert_int_equal(p, 0);
    for (size_t r = 0; r < batch->nrows; r++, rows++) {
      char *row = t_row_json(&f->schema, batch, r);
      ck_buf_puts(out, row);
      ck_buf_putc(out, '\n');
      ck_free(row);
    }
  }
  ck_batch_free(batch);
  return rows;
}

static void test_nexmark_source_rows_and_parallelism(void **state) {
  int64_t blocks = ck_mem_stats().live_blocks;
  fx_t f;
  ck_arena_init(&f.arena, 4096);
  f.schema = t_schema(&f.arena, COLS);
  f.opts = t_opts(&f.arena, "events", "203", "seed", "5", NULL);
  ck_buf_t single;
  ck_buf_init(&single);
  ck_source_t s1 = mk(&f, 0, 1);
  assert_int_equal(drain(&f, &s1, 17, -1, &single), 203);
  s1.ops->close(&s1);
  /* row n is event n: kinds line up, bids carry no person fields */
  char *lines[203];
  int n = 0;
  for (char *p = single.data; *p; n++) {
    char *nl = strchr(p, '\n');
    *nl = 0;
    lines[n] = p;
    p = nl + 1;
  }
  assert_int_equal(n, 203);
  assert_non_null(strstr(lines[0], "\"event_type\":0"));
  assert_non_null(strstr(lines[0], "\"auction\":null"));
  assert_non_null(strstr(lines[2], "\"event_type\":1"));
  assert_non_null(strstr(lines[2], "\"name\":null"));
  assert_non_null(strstr(lines[10], "\"event_type\":2"));
  assert_non_null(strstr(lines[10], "\"id\":null"));
  assert_non_null(strstr(lines[10], "\"date_time\":\"2015-07-15 00:00:00.001\""));
  for (int par = 2; par <= 3; par++) {
    for (int s = 0; s < par; s++) {
      ck_buf_t out;
      ck_buf_init(&out);
      ck_source_t src = mk(&f, s, par);
      int rows = drain(&f, &src, 5, -1, &out);
      src.ops->close(&src);
      assert_int_equal(rows, (203 - s + par - 1) / par);
      int i = 0;
      for (char *p = out.data; p && *p; i++) {
        char *nl = strchr(p, '\n');
        *nl = 0;
        assert_string_equal(p, lines[s + i * par]); /* subtask s makes s, s+P, … */
        p = nl + 1;
      }
      ck_buf_fini(&out);
    }
  }
  ck_buf_fini(&single);
  ck_arena_fini(&f.arena);
  assert_int_equal(ck_mem_stats().live_blocks, blocks);
}

static void test_nexmark_source_snapshot_restore(void **state) {
  fx_t f;
  ck_arena_init(&f.arena, 4096);
  f.schema = t_schema(&f.arena, COLS);
  f.opts = t_opts(&f.arena, "events", "120", NULL);
  ck_buf_t all, head, tail, snap;
  ck_buf_init(&all), ck_buf_init(&head), ck_buf_init(&tail), ck_buf_init(&snap);
  ck_source_t a = mk(&f, 1, 2);
  drain(&f, &a, 10, -1, &all);
  a.ops->close(&a);
  ck_source_t b = mk(&f, 1, 2);
  drain(&f, &b, 7, 3, &head);
  ck_error_t err;
  ck_error_clear(&err);
  assert_int_equal(b.ops->snapshot(&b, &snap, &err), 0);
  b.ops->close(&b);
  /* restored before open, as the runtime does */
  ck_source_t c = {ck_nexmark_connector.source, {"events", &f.schema, &f.opts, 1, 2, "job"}, NULL};
  assert_int_equal(c.ops->restore(&c, snap.data, snap.len, &err), 0);
  assert_int_equal(c.ops->open(&c, &err), 0);
  drain(&f, &c, 9, -1, &tail);
  c.ops->close(&c);
  ck_buf_append(&head, tail.data, tail.len);
  assert_int_equal(head.len, all.len);
  assert_memory_equal(head.data, all.data, all.len);
  /* a position taken at another parallelism is refused */
  ck_source_t d = {ck_nexmark_connector.source, {"events", &f.schema, &f.opts, 0, 3, "job"}, NULL};
  assert_int_equal(d.ops->restore(&d, snap.data, snap.len, &err), CK_ESTATE);
  assert_non_null(strstr(err.message, "parallelism 2"));
  d.ops->close(&d);
  ck_buf_fini(&all), ck_buf_fini(&head), ck_buf_fini(&tail), ck_buf_fini(&snap);
  ck_arena_fini(&f.arena);
}

static void test_nexmark_check_refuses_bad_columns(void **state) {
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_options_t none = t_opts(&arena, NULL);
  ck_error_t err;
  ck_error_clear(&err);
  ck_schema_t s = t_schema(&arena, "auction BIGINT, biddr BIGINT");
  assert_int_equal(ck_nexmark_connector.check(&s, &none, false, &err), CK_EOPTION);
  assert_non_null(strstr(err.message, "'biddr'"));
  assert_non_null(strstr(err.hint, "'bidder'"));
  ck_error_clear(&err);
  s = t_schema(&arena, "price DOUBLE");
  assert_int_equal(ck_nexmark_connector.check(&s, &none, false, &err), CK_EOPTION);
  assert_non_null(strstr(err.message, "DOUBLE"));
  ck_error_clear(&err);
  s = t_schema(&arena, "url BIGINT");
  assert_int_equal(ck_nexmark_connector.check(&s, &none, false, &err), CK_EOPTION);
  assert_non_null(strstr(err.hint, "VARCHAR"));
  ck_error_clear(&err);
  s = t_schema(&arena, "date_time TIMESTAMP, event_type BIGINT, URL VARCHAR");
  assert_int_equal(ck_nexmark_connector.check(&s, &none, false, &err), 0);
  ck_options_t bad = t_opts(&arena, "event_rate", "0", NULL);
  assert_int_equal(ck_nexmark_connector.check(&s, &bad, false, &err), CK_EOPTION);
  assert_non_null(strstr(err.message, "event_rate"));
  ck_arena_fini(&arena);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nexmark_events_are_pure_functions_of_seed_and_number),
      cmocka_unit_test(test_nexmark_proportions_and_ids),
      cmocka_unit_test(test_nexmark_matches_reference_streams),
      cmocka_unit_test(test_nexmark_field_definitions),
      cmocka_unit_test(test_nexmark_json_form),
      cmocka_unit_test(test_nexmark_source_rows_and_parallelism),
      cmocka_unit_test(test_nexmark_source_snapshot_restore),
      cmocka_unit_test(test_nexmark_check_refuses_bad_columns),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
