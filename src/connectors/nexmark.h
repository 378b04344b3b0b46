/*
 * DESIGN: the Nexmark event model, as a pure function of (configuration, event number).
 *
 * Shared by connector='nexmark' (nexmark.c, in-process rows) and the benchmark's Kafka
 * generator (bench/nexmark/nexmark_gen.c, JSON messages), so both produce the same events.
 *
 * Definitions follow the Apache Beam / Flink Nexmark generator (GeneratorConfig, Person-,
 * Auction-, Bid-, Price- and StringsGenerator): event n is a person when n mod 50 is 0, an
 * auction when it is 1..3, a bid otherwise (1:3:46); ids start at 1000, categories at 10; the
 * timestamp is base_time + floor(n * 1e6 / event_rate us) ms; every field of event n is drawn
 * from its own java.util.Random-compatible stream seeded with n (plus the seed, mixed in so
 * that seed 0 gives the reference streams), never from a shared generator: no event depends on
 * any other, on parallelism or on how far a run got. Channels and URLs of the 4 hot channels
 * and of the 10 000 others come from streams seeded by the channel number, computed once per
 * generator (the reference draws them from unseeded randoms; here they are reproducible).
 *
 * The flat JSON form (one object per event, "event_type" 0 person, 1 auction, 2 bid, only the
 * fields of that kind, times as epoch milliseconds) is what the benchmark topic holds.
 *
 * Threads: a generator is immutable after ck_nexmark_gen_new and may be shared by threads.
 */
#ifndef CK_CONNECTORS_NEXMARK_H
#define CK_CONNECTORS_NEXMARK_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

enum { CK_NEXMARK_PERSON = 0, CK_NEXMARK_AUCTION = 1, CK_NEXMARK_BID = 2 };

#define CK_NEXMARK_BASE_TIME_MS INT64_C(1436918400000) /* 2015-07-15T00:00:00Z */
#define CK_NEXMARK_FIRST_PERSON_ID 1000
#define CK_NEXMARK_FIRST_AUCTION_ID 1000
#define CK_NEXMARK_FIRST_CATEGORY_ID 10
#define CK_NEXMARK_CHANNELS 10000

typedef struct ck_nexmark_cfg {
  uint64_t seed;        /* 0: the reference generator's per-event streams */
  int64_t base_time_ms; /* timestamp of event 0 */
  int64_t event_rate;   /* events per second of event time (reference default 10 000) */
} ck_nexmark_cfg_t;

/* One event. Strings are NUL-terminated and owned by the event (or, for city, state and
 * channel/url, by static tables or the generator). */
typedef struct ck_nexmark_event {
  int kind;
  int64_t date_time; /* epoch ms */
  /* person and auction */
  int64_t id;
  /* person */
  char name[32], email_address[32], credit_card[24];
  const char *city, *state;
  /* auction */
  char item_name[32], description[112];
  int64_t initial_bid, reserve, expires, seller, category;
  /* bid */
  int64_t auction, bidder, price;
  const char *channel, *url;
  /* every kind */
  char extra[1024];
} ck_nexmark_event_t;

typedef struct ck_nexmark_gen ck_nexmark_gen_t;

/* Fills *cfg with the reference defaults: seed 0, 2015-07-15T00:00:00Z, 10 000 events/s. */
void ck_nexmark_cfg_default(ck_nexmark_cfg_t *cfg);
ck_nexmark_gen_t *ck_nexmark_gen_new(const ck_nexmark_cfg_t *cfg);
void ck_nexmark_gen_free(ck_nexmark_gen_t *gen);

/* Kind of event n (no generation). */
int ck_nexmark_kind(uint64_t n);
/* Timestamp of event n. */
int64_t ck_nexmark_time(const ck_nexmark_gen_t *gen, uint64_t n);
/* Event n, a pure function of (gen's configuration, n). */
void ck_nexmark_gen_event(const ck_nexmark_gen_t *gen, uint64_t n, ck_nexmark_event_t *ev);
/* Appends the event's flat JSON object (no newline). */
void ck_nexmark_event_json(const ck_nexmark_event_t *ev, ck_buf_t *out);

/* The fields a table may declare, in the flat union of the three kinds. */
typedef enum ck_nexmark_field {
  CK_NXF_EVENT_TYPE, CK_NXF_ID, CK_NXF_NAME, CK_NXF_EMAIL_ADDRESS, CK_NXF_CREDIT_CARD,
  CK_NXF_CITY, CK_NXF_STATE, CK_NXF_ITEM_NAME, CK_NXF_DESCRIPTION, CK_NXF_INITIAL_BID,
  CK_NXF_RESERVE, CK_NXF_EXPIRES, CK_NXF_SELLER, CK_NXF_CATEGORY, CK_NXF_AUCTION,
  CK_NXF_BIDDER, CK_NXF_PRICE, CK_NXF_CHANNEL, CK_NXF_URL, CK_NXF_DATE_TIME, CK_NXF_EXTRA,
  CK_NXF_COUNT
} ck_nexmark_field_t;

extern const char *const ck_nexmark_field_names[CK_NXF_COUNT];

#endif
