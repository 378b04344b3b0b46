/*
 * DESIGN: connector='nexmark' — the Nexmark benchmark's Person / Auction / Bid events as an
 * in-process source, and the event model itself (nexmark.h), which the Kafka generator of
 * bench/nexmark/ links too.
 *
 * Event model. Event n is a pure function of (seed, base_time, event_rate, n): its kind from
 * n mod 50 (1 person : 3 auctions : 46 bids), its timestamp from n and the rate, its fields
 * from a java.util.Random-compatible linear congruential stream seeded with n + seed·φ (seed 0
 * reproduces the reference generator's per-event streams). Ids follow the reference: the
 * person and auction ids are counted from the event number (lastBase0PersonId /
 * lastBase0AuctionId); a bid picks a hot auction (the first of the last 100, probability 1/2)
 * or one of the auctions likely in flight, a hot bidder (second of the last 100 people,
 * probability 3/4) or one of the 1000 active people plus 10 ids of lead; prices are
 * round(10^(6u) · 100) cents; strings are lower-case letters with a space (or '_' in URLs)
 * one time in 13; the 'extra' padding brings each event near its average size (person 200,
 * auction 500, bid 100 bytes). Channels: half of the bids go to one of 4 hot channels
 * (Google, Facebook, Baidu, Apple), the others to 'channel-<k>', k < 10 000, whose URL gets
 * '&channel_id=<abs(bit-reversed k)>' nine times in ten. The 10 004 channel URLs are made
 * once per generator from streams seeded by the channel number.
 *
 * Source. A table declares any subset of the flat union of the three kinds' fields (names in
 * ck_nexmark_field_names: event_type, id, name, …, date_time, extra); a field that the event's
 * kind does not have is NULL. Integer fields go into BIGINT (or INT when they fit, or
 * TIMESTAMP for date_time / expires), string fields into VARCHAR; check() refuses anything
 * else by name. With parallelism P, subtask s makes events s, s+P, s+2P, … (one partition per
 * subtask, timestamps increasing in it), so the union over subtasks is the parallelism-1
 * stream. `events` bounds the total (the source then ends); -1 runs for ever.
 *
 * Snapshot (version 1): u8 version, uvarint parallelism, uvarint next event number.
 *
 * Threads: the generator is immutable once made; each source instance belongs to one subtask.
 */
#include "connectors/nexmark.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/bytes.h"
#include "connectors/connectors.h"
#include "connectors/util.h"
#include "runtime/connector.h"

#define NX_SNAP_VERSION 1

/* Reference configuration (NexmarkConfiguration defaults). */
#define NX_PERSON_PROPORTION 1
#define NX_AUCTION_PROPORTION 3
#define NX_TOTAL_PROPORTION 50
#define NX_HOT_AUCTION_RATIO 2
#define NX_HOT_SELLERS_RATIO 4
#define NX_HOT_BIDDERS_RATIO 4
#define NX_HOT_BATCH 100 /* hot ids are the first (or second) of the last 100 */
#define NX_NUM_IN_FLIGHT_AUCTIONS 100
#define NX_NUM_ACTIVE_PEOPLE 1000
#define NX_ID_LEAD 10
#define NX_NUM_CATEGORIES 5
#define NX_AVG_PERSON_BYTES 200
#define NX_AVG_AUCTION_BYTES 500
#define NX_AVG_BID_BYTES 100
#define NX_HOT_CHANNELS_RATIO 2

const char *const ck_nexmark_field_names[CK_NXF_COUNT] = {
    "event_type", "id",          "name",     "email_address", "credit_card", "city",
    "state",      "item_name",   "description", "initial_bid", "reserve",   "expires",
    "seller",     "category",    "auction",  "bidder",        "price",       "channel",
    "url",        "date_time",   "extra",
};

static const char *const us_states[] = {"AZ", "CA", "ID", "OR", "WA", "WY"};
static const char *const us_cities[] = {"Phoenix", "Los Angeles", "San Francisco", "Boise",
                                        "Portland", "Bend", "Redmond", "Seattle", "Kent",
                                        "Cheyenne"};
static const char *const first_names[] = {"Peter", "Paul",  "Luke",   "John",   "Saul", "Vicky",
                                          "Kate",  "Julie", "Sarah", "Deiter", "Walter"};
static const char *const last_names[] = {"Shultz", "Abrams", "Spencer", "White", "Bartels",
                                         "Walton", "Smith",  "Jones",   "Noris"};
static const char *const hot_channels[] = {"Google", "Facebook", "Baidu", "Apple"};

/* ====================================================== java.util.Random ====== */

/* The 48-bit linear congruential generator of java.util.Random, bit for bit. */
typedef struct jrand {
  uint64_t s;
} jrand_t;

#define JR_MULT UINT64_C(0x5DEECE66D)
#define JR_MASK ((UINT64_C(1) << 48) - 1)

static inline void jr_seed(jrand_t *r, uint64_t seed) { r->s = (seed ^ JR_MULT) & JR_MASK; }

static inline int32_t jr_next(jrand_t *r, int bits) {
  r->s = (r->s * JR_MULT + 0xB) & JR_MASK;
  return (int32_t)(uint32_t)(r->s >> (48 - bits));
}

static inline int32_t jr_int(jrand_t *r) { return jr_next(r, 32); }

/* Uniform in [0, bound), bound > 0, with Java's rejection rule. */
static int32_t jr_int_below(jrand_t *r, int32_t bound) {
  int32_t x = jr_next(r, 31);
  int32_t m = bound - 1;
  if ((bound & m) == 0) return (int32_t)(((int64_t)bound * x) >> 31);
  for (int32_t u = x;; u = jr_next(r, 31)) {
    x = u % bound;
    if ((int64_t)u - x + m <= INT32_MAX) return x; /* Java: u - x + m does not overflow */
  }
}

static inline int64_t jr_long(jrand_t *r) {
  uint64_t hi = (uint64_t)(int64_t)jr_next(r, 32) << 32;
  return (int64_t)(hi + (uint64_t)(int64_t)jr_next(r, 32));
}

static inline double jr_double(jrand_t *r) {
  return (double)(((int64_t)jr_next(r, 26) << 27) + jr_next(r, 27)) * 0x1.0p-53;
}

/* LongGenerator.nextLong: uniform in [0, n) for n < 2^31, else the reference's skewed draw. */
static int64_t jr_long_below(jrand_t *r, int64_t n) {
  if (n < INT32_MAX) return jr_int_below(r, (int32_t)n);
  int64_t v = jr_long(r) % n;
  return v < 0 ? -v : v;
}

/* ===================================================== the event model ====== */

struct ck_nexmark_gen {
  ck_nexmark_cfg_t cfg;
  double delay_us; /* between consecutive events, in event time */
  char hot_urls[4][96];
  char (*channel_urls)[112];   /* CK_NEXMARK_CHANNELS entries */
  char (*channel_names)[16];
};

void ck_nexmark_cfg_default(ck_nexmark_cfg_t *cfg) {
  cfg->seed = 0;
  cfg->base_time_ms = CK_NEXMARK_BASE_TIME_MS;
  cfg->event_rate = 10000;
}

static inline uint64_t stream_seed(uint64_t seed, uint64_t n) {
  return n + seed * UINT64_C(0x9E3779B97F4A7C15);
}

/* StringsGenerator.nextString: 3 to max-1 characters, `special` one time in 13, trimmed of
 * spaces at both ends. Writes into out (at least max bytes). Returns the length. */
static size_t next_string(jrand_t *r, int max, char special, char *out) {
  int len = 3 + jr_int_below(r, max - 3);
  for (int i = 0; i < len; i++)
    out[i] = jr_int_below(r, 13) == 0 ? special : (char)('a' + jr_int_below(r, 26));
  int a = 0, b = len;
  while (a < b && (unsigned char)out[a] <= ' ') a++;
  while (b > a && (unsigned char)out[b - 1] <= ' ') b--;
  if (a) memmove(out, out + a, (size_t)(b - a));
  out[b - a] = 0;
  return (size_t)(b - a);
}

/* StringsGenerator.nextExactString: `length` characters, six per 31-bit draw ('a' + rnd % 26
 * with Java's signed remainder, so a negative draw gives characters below 'a'). */
static void next_exact_string(jrand_t *r, int length, char *out) {
  int32_t rnd = 0;
  int left = 0;
  for (int i = 0; i < length; i++) {
    if (left == 0) {
      rnd = jr_int(r);
      left = 6;
    }
    out[i] = (char)('a' + rnd % 26);
    rnd /= 26;
    left--;
  }
  out[length] = 0;
}

/* StringsGenerator.nextExtra: padding so that current + padding averages `avg`. */
static void next_extra(jrand_t *r, int current, int avg, char *out) {
  if (current > avg) {
    out[0] = 0;
    return;
  }
  avg -= current;
  int delta = (int)lround(avg * 0.2);
  int size = avg - delta + (delta == 0 ? 0 : jr_int_below(r, 2 * delta));
  next_exact_string(r, size, out);
}

static inline int64_t next_price(jrand_t *r) {
  return (int64_t)llround(pow(10.0, jr_double(r) * 6.0) * 100.0);
}

static int64_t last_base0_person_id(uint64_t id) {
  int64_t epoch = (int64_t)(id / NX_TOTAL_PROPORTION), off = (int64_t)(id % NX_TOTAL_PROPORTION);
  if (off >= NX_PERSON_PROPORTION) off = NX_PERSON_PROPORTION - 1;
  return epoch * NX_PERSON_PROPORTION + off;
}

static int64_t last_base0_auction_id(uint64_t id) {
  int64_t epoch = (int64_t)(id / NX_TOTAL_PROPORTION), off = (int64_t)(id % NX_TOTAL_PROPORTION);
  if (off < NX_PERSON_PROPORTION) { /* a person: the last auction of the previous epoch */
    epoch--;
    off = NX_AUCTION_PROPORTION - 1;
  } else if (off >= NX_PERSON_PROPORTION + NX_AUCTION_PROPORTION) { /* a bid */
    off = NX_AUCTION_PROPORTION - 1;
  } else {
    off -= NX_PERSON_PROPORTION;
  }
  return epoch * NX_AUCTION_PROPORTION + off;
}

static int64_t next_base0_person_id(uint64_t id, jrand_t *r) {
  int64_t people = last_base0_person_id(id) + 1;
  int64_t active = people < NX_NUM_ACTIVE_PEOPLE ? people : NX_NUM_ACTIVE_PEOPLE;
  return people - active + jr_long_below(r, active + NX_ID_LEAD);
}

static int64_t next_base0_auction_id(uint64_t id, jrand_t *r) {
  int64_t max = last_base0_auction_id(id);
  int64_t min = max - NX_NUM_IN_FLIGHT_AUCTIONS > 0 ? max - NX_NUM_IN_FLIGHT_AUCTIONS : 0;
  return min + jr_long_below(r, max - min + 1 + NX_ID_LEAD);
}

int ck_nexmark_kind(uint64_t n) {
  uint64_t rem = n % NX_TOTAL_PROPORTION;
  if (rem < NX_PERSON_PROPORTION) return CK_NEXMARK_PERSON;
  if (rem < NX_PERSON_PROPORTION + NX_AUCTION_PROPORTION) return CK_NEXMARK_AUCTION;
  return CK_NEXMARK_BID;
}

int64_t ck_nexmark_time(const ck_nexmark_gen_t *gen, uint64_t n) {
  return gen->cfg.base_time_ms + (int64_t)((double)n * gen->delay_us) / 1000;
}

/* Integer.reverse, then Math.abs (which leaves INT32_MIN as it is). */
static int64_t reversed_abs(int32_t k) {
  uint32_t v = (uint32_t)k, out = 0;
  for (int i = 0; i < 32; i++, v >>= 1) out = out << 1 | (v & 1);
  int32_t s = (int32_t)out;
  return s == INT32_MIN ? s : (s < 0 ? -(int64_t)s : s);
}

static int base_url(jrand_t *r, char *out, size_t cap) {
  char a[8], b[8], c[8];
  next_string(r, 5, '_', a);
  next_string(r, 5, '_', b);
  next_string(r, 5, '_', c);
  return snprintf(out, cap, "https://www.nexmark.com/%s/%s/%s/item.htm?query=1", a, b, c);
}

ck_nexmark_gen_t *ck_nexmark_gen_new(const ck_nexmark_cfg_t *cfg) {
  ck_nexmark_gen_t *gen = ck_calloc(1, sizeof *gen);
  gen->cfg = *cfg;
  if (gen->cfg.event_rate <= 0) gen->cfg.event_rate = 10000;
  gen->delay_us = 1000000.0 / (double)gen->cfg.event_rate;
  jrand_t r;
  for (int i = 0; i < 4; i++) {
    jr_seed(&r, stream_seed(cfg->seed, UINT64_C(0x686f74) << 32 | (uint64_t)i)); /* "hot" */
    base_url(&r, gen->hot_urls[i], sizeof gen->hot_urls[i]);
  }
  gen->channel_urls = ck_calloc(CK_NEXMARK_CHANNELS, sizeof *gen->channel_urls);
  gen->channel_names = ck_calloc(CK_NEXMARK_CHANNELS, sizeof *gen->channel_names);
  for (int k = 0; k < CK_NEXMARK_CHANNELS; k++) {
    jr_seed(&r, stream_seed(cfg->seed, UINT64_C(0x6368616e) << 32 | (uint64_t)k)); /* "chan" */
    char *u = gen->channel_urls[k];
    int n = base_url(&r, u, sizeof gen->channel_urls[k]);
    if (jr_int_below(&r, 10) > 0)
      snprintf(u + n, sizeof gen->channel_urls[k] - (size_t)n, "&channel_id=%lld",
               (long long)reversed_abs(k));
    snprintf(gen->channel_names[k], sizeof gen->channel_names[k], "channel-%d", k);
  }
  return gen;
}

void ck_nexmark_gen_free(ck_nexmark_gen_t *gen) {
  if (!gen) return;
  ck_free(gen->channel_urls);
  ck_free(gen->channel_names);
  ck_free(gen);
}

static void gen_person(uint64_t n, jrand_t *r, ck_nexmark_event_t *ev) {
  ev->id = last_base0_person_id(n) + CK_NEXMARK_FIRST_PERSON_ID;
  const char *first = first_names[jr_int_below(r, (int32_t)CK_ARRAY_LEN(first_names))];
  const char *last = last_names[jr_int_below(r, (int32_t)CK_ARRAY_LEN(last_names))];
  int name_len = snprintf(ev->name, sizeof ev->name, "%s %s", first, last);
  char user[8], host[8];
  next_string(r, 7, ' ', user);
  next_string(r, 5, ' ', host);
  int email_len = snprintf(ev->email_address, sizeof ev->email_address, "%s@%s.com", user, host);
  int cc = 0;
  for (int i = 0; i < 4; i++)
    cc += snprintf(ev->credit_card + cc, sizeof ev->credit_card - (size_t)cc, "%s%04d",
                   i ? " " : "", jr_int_below(r, 10000));
  ev->city = us_cities[jr_int_below(r, (int32_t)CK_ARRAY_LEN(us_cities))];
  ev->state = us_states[jr_int_below(r, (int32_t)CK_ARRAY_LEN(us_states))];
  int size = 8 + name_len + email_len + cc + (int)strlen(ev->city) + (int)strlen(ev->state);
  next_extra(r, size, NX_AVG_PERSON_BYTES, ev->extra);
}

static void gen_auction(const ck_nexmark_gen_t *gen, uint64_t n, jrand_t *r,
                        ck_nexmark_event_t *ev) {
  ev->id = last_base0_auction_id(n) + CK_NEXMARK_FIRST_AUCTION_ID;
  int64_t seller;
  if (jr_int_below(r, NX_HOT_SELLERS_RATIO) > 0)
    seller = last_base0_person_id(n) / NX_HOT_BATCH * NX_HOT_BATCH;
  else
    seller = next_base0_person_id(n, r);
  ev->seller = seller + CK_NEXMARK_FIRST_PERSON_ID;
  ev->category = CK_NEXMARK_FIRST_CATEGORY_ID + jr_int_below(r, NX_NUM_CATEGORIES);
  ev->initial_bid = next_price(r);
  /* an auction lasts on average until the one NX_NUM_IN_FLIGHT_AUCTIONS later is made */
  uint64_t ahead = (uint64_t)NX_NUM_IN_FLIGHT_AUCTIONS * NX_TOTAL_PROPORTION / NX_AUCTION_PROPORTION;
  int64_t horizon = ck_nexmark_time(gen, n + ahead) - ev->date_time;
  ev->expires = ev->date_time + 1 + jr_long_below(r, horizon * 2 > 1 ? horizon * 2 : 1);
  size_t name_len = next_string(r, 20, ' ', ev->item_name);
  size_t desc_len = next_string(r, 100, ' ', ev->description);
  ev->reserve = ev->initial_bid + next_price(r);
  int size = 8 + (int)name_len + (int)desc_len + 8 + 8 + 8 + 8 + 8;
  next_extra(r, size, NX_AVG_AUCTION_BYTES, ev->extra);
}

static void gen_bid(const ck_nexmark_gen_t *gen, uint64_t n, jrand_t *r, ck_nexmark_event_t *ev) {
  int64_t auction, bidder;
  if (jr_int_below(r, NX_HOT_AUCTION_RATIO) > 0)
    auction = last_base0_auction_id(n) / NX_HOT_BATCH * NX_HOT_BATCH;
  else
    auction = next_base0_auction_id(n, r);
  ev->auction = auction + CK_NEXMARK_FIRST_AUCTION_ID;
  if (jr_int_below(r, NX_HOT_BIDDERS_RATIO) > 0)
    bidder = last_base0_person_id(n) / NX_HOT_BATCH * NX_HOT_BATCH + 1;
  else
    bidder = next_base0_person_id(n, r);
  ev->bidder = bidder + CK_NEXMARK_FIRST_PERSON_ID;
  ev->price = next_price(r);
  if (jr_int_below(r, NX_HOT_CHANNELS_RATIO) > 0) {
    int i = jr_int_below(r, 4);
    ev->channel = hot_channels[i];
    ev->url = gen->hot_urls[i];
  } else {
    int k = jr_int_below(r, CK_NEXMARK_CHANNELS);
    ev->channel = gen->channel_names[k];
    ev->url = gen->channel_urls[k];
  }
  next_extra(r, 8 + 8 + 8 + 8, NX_AVG_BID_BYTES, ev->extra);
}

void ck_nexmark_gen_event(const ck_nexmark_gen_t *gen, uint64_t n, ck_nexmark_event_t *ev) {
  jrand_t r;
  jr_seed(&r, stream_seed(gen->cfg.seed, n));
  ev->kind = ck_nexmark_kind(n);
  ev->date_time = ck_nexmark_time(gen, n);
  switch (ev->kind) {
    case CK_NEXMARK_PERSON: gen_person(n, &r, ev); break;
    case CK_NEXMARK_AUCTION: gen_auction(gen, n, &r, ev); break;
    default: gen_bid(gen, n, &r, ev); break;
  }
}

/* ================================================================ JSON ====== */

static void json_str(ck_buf_t *out, const char *key, const char *s) {
  ck_buf_printf(out, ",\"%s\":\"", key);
  const char *run = s;
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch != '"' && ch != '\\' && ch >= 0x20) continue;
    ck_buf_append(out, run, (size_t)(s - run));
    if (ch == '"' || ch == '\\') {
      char esc[2] = {'\\', (char)ch};
      ck_buf_append(out, esc, 2);
    } else {
      ck_buf_printf(out, "\\u%04x", ch);
    }
    run = s + 1;
  }
  ck_buf_append(out, run, (size_t)(s - run));
  ck_buf_putc(out, '"');
}

static inline void json_int(ck_buf_t *out, const char *key, int64_t v) {
  ck_buf_printf(out, ",\"%s\":%lld", key, (long long)v);
}

void ck_nexmark_event_json(const ck_nexmark_event_t *ev, ck_buf_t *out) {
  ck_buf_printf(out, "{\"event_type\":%d", ev->kind);
  switch (ev->kind) {
    case CK_NEXMARK_PERSON:
      json_int(out, "id", ev->id);
      json_str(out, "name", ev->name);
      json_str(out, "email_address", ev->email_address);
      json_str(out, "credit_card", ev->credit_card);
      json_str(out, "city", ev->city);
      json_str(out, "state", ev->state);
      break;
    case CK_NEXMARK_AUCTION:
      json_int(out, "id", ev->id);
      json_str(out, "item_name", ev->item_name);
      json_str(out, "description", ev->description);
      json_int(out, "initial_bid", ev->initial_bid);
      json_int(out, "reserve", ev->reserve);
      json_int(out, "expires", ev->expires);
      json_int(out, "seller", ev->seller);
      json_int(out, "category", ev->category);
      break;
    default:
      json_int(out, "auction", ev->auction);
      json_int(out, "bidder", ev->bidder);
      json_int(out, "price", ev->price);
      json_str(out, "channel", ev->channel);
      json_str(out, "url", ev->url);
      break;
  }
  json_int(out, "date_time", ev->date_time);
  json_str(out, "extra", ev->extra);
  ck_buf_putc(out, '}');
}

/* ============================================================== options ====== */

static const ck_opt_def_t nexmark_options[] = {
    {"events", CK_OPT_INT, "-1", NULL, false,
     "total events (persons, auctions and bids) across all subtasks; the source ends after "
     "them (-1: unbounded)"},
    {"seed", CK_OPT_INT, "0", NULL, false,
     "seed mixed into every event's random stream: event n is a pure function of (seed, n); "
     "0 gives the reference generator's streams"},
    {"event_rate", CK_OPT_INT, "10000", NULL, false,
     "events per second of event time: event n is stamped base_time + n * 1000 / event_rate "
     "ms (generation itself is never paced)"},
    {"base_time", CK_OPT_INT, "1436918400000", NULL, false,
     "event time of event 0, epoch milliseconds (1436918400000 is 2015-07-15T00:00:00Z)"},
    {NULL, 0, NULL, NULL, false, NULL},
};

static bool field_is_string(int f) {
  switch (f) {
    case CK_NXF_NAME: case CK_NXF_EMAIL_ADDRESS: case CK_NXF_CREDIT_CARD: case CK_NXF_CITY:
    case CK_NXF_STATE: case CK_NXF_ITEM_NAME: case CK_NXF_DESCRIPTION: case CK_NXF_CHANNEL:
    case CK_NXF_URL: case CK_NXF_EXTRA:
      return true;
    default: return false;
  }
}

/* Maps every column to a field; fields[c] receives the field of column c. */
static int map_columns(const ck_schema_t *schema, int *fields, ck_error_t *err) {
  for (int c = 0; c < schema->ncols; c++) {
    const char *col = schema->names[c];
    int f = -1;
    for (int i = 0; i < CK_NXF_COUNT && f < 0; i++)
      if (ck_streq_i(col, ck_nexmark_field_names[i])) f = i;
    if (f < 0) {
      ck_error_set(err, CK_EOPTION, "nexmark has no field '%s' for column '%s'", col, col);
      const char *close = ck_closest(col, ck_nexmark_field_names, CK_NXF_COUNT);
      if (close) ck_error_hint(err, "did you mean '%s'? The fields are those of persons, "
                               "auctions and bids (see clink connectors)", close);
      return CK_EOPTION;
    }
    ck_type_t t = schema->types[c];
    bool ok;
    if (field_is_string(f)) ok = t.id == CK_T_STRING;
    else if (f == CK_NXF_DATE_TIME || f == CK_NXF_EXPIRES)
      ok = t.id == CK_T_INT64 || t.id == CK_T_TIMESTAMP;
    else if (f == CK_NXF_EVENT_TYPE || f == CK_NXF_CATEGORY)
      ok = t.id == CK_T_INT64 || t.id == CK_T_INT32;
    else ok = t.id == CK_T_INT64;
    if (!ok) {
      char tname[40];
      ck_type_name(t, tname, sizeof tname);
      ck_error_set(err, CK_EOPTION, "nexmark field '%s' cannot fill column '%s' of type %s",
                   ck_nexmark_field_names[f], col, tname);
      ck_error_hint(err, "%s", field_is_string(f) ? "declare it VARCHAR"
                    : f == CK_NXF_DATE_TIME || f == CK_NXF_EXPIRES ? "declare it BIGINT or TIMESTAMP"
                    : f == CK_NXF_EVENT_TYPE || f == CK_NXF_CATEGORY ? "declare it INT or BIGINT"
                    : "declare it BIGINT");
      return CK_EOPTION;
    }
    fields[c] = f;
  }
  return 0;
}

static int read_cfg(const ck_options_t *opts, ck_nexmark_cfg_t *cfg, int64_t *events,
                    ck_error_t *err) {
  ck_nexmark_cfg_default(cfg);
  *events = ck_opt_int(opts, nexmark_options, "events");
  cfg->seed = (uint64_t)ck_opt_int(opts, nexmark_options, "seed");
  cfg->event_rate = ck_opt_int(opts, nexmark_options, "event_rate");
  cfg->base_time_ms = ck_opt_int(opts, nexmark_options, "base_time");
  if (*events < -1)
    return ck_error_set(err, CK_EOPTION, "nexmark option 'events' must be -1 or at least 0, not "
                        "%lld", (long long)*events);
  if (cfg->event_rate <= 0 || cfg->event_rate > 1000000000)
    return ck_error_set(err, CK_EOPTION, "nexmark option 'event_rate' must be from 1 to "
                        "1000000000 events per second, not %lld", (long long)cfg->event_rate);
  return 0;
}

static int nexmark_check(const ck_schema_t *schema, const ck_options_t *opts, bool as_sink,
                         ck_error_t *err) {
  ck_nexmark_cfg_t cfg;
  int64_t events;
  int rc = read_cfg(opts, &cfg, &events, err);
  if (rc) return rc;
  int *fields = ck_calloc((size_t)(schema->ncols ? schema->ncols : 1), sizeof *fields);
  rc = map_columns(schema, fields, err);
  ck_free(fields);
  return rc;
}

/* =============================================================== source ====== */

typedef struct nx_src {
  ck_nexmark_gen_t *gen;
  int64_t events;
  int *fields;       /* per column */
  uint64_t next;     /* next event number this subtask makes */
  uint64_t stride;   /* parallelism */
  bool opened, has_pending;
  uint64_t pending;  /* restored before open */
  ck_nexmark_event_t ev;
} nx_src_t;

static nx_src_t *nx_impl(ck_source_t *src) {
  if (!src->impl) src->impl = ck_calloc(1, sizeof(nx_src_t));
  return src->impl;
}

static int nx_open(ck_source_t *src, ck_error_t *err) {
  nx_src_t *nx = nx_impl(src);
  ck_nexmark_cfg_t cfg;
  int rc = read_cfg(src->ctx.options, &cfg, &nx->events, err);
  if (rc) return rc;
  const ck_schema_t *schema = src->ctx.schema;
  nx->fields = ck_calloc((size_t)(schema->ncols ? schema->ncols : 1), sizeof *nx->fields);
  if ((rc = map_columns(schema, nx->fields, err))) return rc;
  nx->gen = ck_nexmark_gen_new(&cfg);
  nx->stride = (uint64_t)(src->ctx.parallelism > 0 ? src->ctx.parallelism : 1);
  nx->next = nx->has_pending ? nx->pending : (uint64_t)src->ctx.subtask;
  nx->opened = true;
  return 0;
}

static int nx_npartitions(ck_source_t *src) { return 1; }

static void put_int(ck_col_t *col, int64_t v) {
  switch (col->type.id) {
    case CK_T_INT32: ck_col_append_i32(col, (int32_t)v); break;
    default: ck_col_append_i64(col, v); break;
  }
}

static void put_str(ck_col_t *col, const char *s) { ck_col_append_str(col, s, strlen(s)); }

static void put_field(const ck_nexmark_event_t *ev, int f, ck_col_t *col) {
  bool person = ev->kind == CK_NEXMARK_PERSON, auction = ev->kind == CK_NEXMARK_AUCTION,
       bid = ev->kind == CK_NEXMARK_BID;
  switch (f) {
    case CK_NXF_EVENT_TYPE: put_int(col, ev->kind); return;
    case CK_NXF_DATE_TIME: put_int(col, ev->date_time); return;
    case CK_NXF_EXTRA: put_str(col, ev->extra); return;
    case CK_NXF_ID: if (!bid) { put_int(col, ev->id); return; } break;
    case CK_NXF_NAME: if (person) { put_str(col, ev->name); return; } break;
    case CK_NXF_EMAIL_ADDRESS: if (person) { put_str(col, ev->email_address); return; } break;
    case CK_NXF_CREDIT_CARD: if (person) { put_str(col, ev->credit_card); return; } break;
    case CK_NXF_CITY: if (person) { put_str(col, ev->city); return; } break;
    case CK_NXF_STATE: if (person) { put_str(col, ev->state); return; } break;
    case CK_NXF_ITEM_NAME: if (auction) { put_str(col, ev->item_name); return; } break;
    case CK_NXF_DESCRIPTION: if (auction) { put_str(col, ev->description); return; } break;
    case CK_NXF_INITIAL_BID: if (auction) { put_int(col, ev->initial_bid); return; } break;
    case CK_NXF_RESERVE: if (auction) { put_int(col, ev->reserve); return; } break;
    case CK_NXF_EXPIRES: if (auction) { put_int(col, ev->expires); return; } break;
    case CK_NXF_SELLER: if (auction) { put_int(col, ev->seller); return; } break;
    case CK_NXF_CATEGORY: if (auction) { put_int(col, ev->category); return; } break;
    case CK_NXF_AUCTION: if (bid) { put_int(col, ev->auction); return; } break;
    case CK_NXF_BIDDER: if (bid) { put_int(col, ev->bidder); return; } break;
    case CK_NXF_PRICE: if (bid) { put_int(col, ev->price); return; } break;
    case CK_NXF_CHANNEL: if (bid) { put_str(col, ev->channel); return; } break;
    case CK_NXF_URL: if (bid) { put_str(col, ev->url); return; } break;
    default: break;
  }
  ck_col_append_null(col);
}

static int nx_poll(ck_source_t *src, ck_batch_t *batch, int max_rows, int timeout_ms,
                   int *partition, ck_error_t *err) {
  nx_src_t *nx = nx_impl(src);
  *partition = 0;
  if (nx->events >= 0 && nx->next >= (uint64_t)nx->events) return CK_SRC_END;
  int64_t n = max_rows > 0 ? max_rows : 1;
  if (nx->events >= 0) {
    uint64_t left = ((uint64_t)nx->events - nx->next + nx->stride - 1) / nx->stride;
    if ((uint64_t)n > left) n = (int64_t)left;
  }
  size_t row0 = batch->ncols ? batch->cols[0].len : batch->nrows;
  for (int64_t k = 0; k < n; k++) {
    ck_nexmark_gen_event(nx->gen, nx->next, &nx->ev);
    for (int c = 0; c < batch->ncols; c++) put_field(&nx->ev, nx->fields[c], &batch->cols[c]);
    nx->next += nx->stride;
  }
  batch->nrows = row0 + (size_t)n;
  return CK_SRC_DATA;
}

static int nx_snapshot(ck_source_t *src, ck_buf_t *out, ck_error_t *err) {
  nx_src_t *nx = nx_impl(src);
  ck_buf_putc(out, NX_SNAP_VERSION);
  ck_buf_put_uvarint(out, nx->opened ? nx->stride : (uint64_t)src->ctx.parallelism);
  ck_buf_put_uvarint(out, nx->opened ? nx->next : nx->pending);
  return 0;
}

static int nx_restore(ck_source_t *src, const void *data, size_t len, ck_error_t *err) {
  nx_src_t *nx = nx_impl(src);
  const uint8_t *p = data, *end = p + len;
  uint64_t par, next;
  if (len < 1 || *p != NX_SNAP_VERSION)
    return ck_error_set(err, CK_ESTATE, "could not restore the nexmark position: unknown state "
                        "version %d", len ? *p : -1);
  p++;
  if (!ck_uvarint_get(&p, end, &par) || !ck_uvarint_get(&p, end, &next) || p != end)
    return ck_error_set(err, CK_ESTATE, "could not restore the nexmark position: the state is "
                        "truncated or corrupt");
  uint64_t want = (uint64_t)(src->ctx.parallelism > 0 ? src->ctx.parallelism : 1);
  if (par != want || next % want != (uint64_t)src->ctx.subtask)
    return ck_error_set(err, CK_ESTATE, "could not restore the nexmark position: it was taken at "
                        "parallelism %llu, this job runs at %llu",
                        (unsigned long long)par, (unsigned long long)want);
  if (nx->opened) {
    nx->next = next;
  } else {
    nx->pending = next;
    nx->has_pending = true;
  }
  return 0;
}

static int64_t nx_skipped(ck_source_t *src) { return 0; }

static void nx_close(ck_source_t *src) {
  nx_src_t *nx = src->impl;
  if (!nx) return;
  ck_nexmark_gen_free(nx->gen);
  ck_free(nx->fields);
  ck_free(nx);
  src->impl = NULL;
}

static const ck_source_ops_t nexmark_source_ops = {
    nx_open, nx_npartitions, nx_poll, nx_snapshot, nx_restore, nx_skipped, nx_close,
};

const ck_connector_t ck_nexmark_connector = {
    .name = "nexmark",
    .description = "the Nexmark benchmark's person, auction and bid events (1:3:46), each a "
                   "pure function of its number and a seed; columns are any of the three "
                   "kinds' fields, NULL where the event's kind lacks one",
    .source_options = nexmark_options,
    .sink_options = NULL,
    .source = &nexmark_source_ops,
    .sink = NULL,
    .sink_guarantee = CK_GUARANTEE_NONE,
    .bounded = false,
    .check = nexmark_check,
};
