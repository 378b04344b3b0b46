/* DESIGN: the connector registry and the options every source/sink shares; see connector.h.
 * Registration happens once at start-up, before any thread runs, so the table has no lock. */
#include "runtime/connector.h"

#include <string.h>

#include "base/alloc.h"

static const ck_connector_t *registry[64];
static int nregistered;

void ck_connector_register(const ck_connector_t *conn) {
  for (int i = 0; i < nregistered; i++)
    if (registry[i] == conn || strcmp(registry[i]->name, conn->name) == 0) return;
  ck_assert(nregistered < (int)CK_ARRAY_LEN(registry));
  registry[nregistered++] = conn;
}

const ck_connector_t *ck_connector_find(const char *name) {
  for (int i = 0; i < nregistered; i++)
    if (strcmp(registry[i]->name, name) == 0) return registry[i];
  return NULL;
}

int ck_connector_count(void) { return nregistered; }
const ck_connector_t *ck_connector_at(int i) { return i < nregistered ? registry[i] : NULL; }

const ck_opt_def_t ck_source_common_options[] = {
    {"format", CK_OPT_STRING, NULL, NULL, false,
     "record format (json, csv, raw; per connector). json and csv read numbers by one grammar, "
     "JSON's: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? (no NaN, Infinity, hex, '+' or "
     "leading zeros; csv allows blanks around a field); a number past its column's type (1e999 "
     "for DOUBLE) is a decode error"},
    {"event_time_column", CK_OPT_STRING, NULL, NULL, false,
     "column holding event time (BIGINT epoch milliseconds, TIMESTAMP(3) or TIMESTAMP_LTZ(3)); "
     "enables watermarks and windows. WATERMARK FOR c AS c - INTERVAL … in CREATE TABLE sets "
     "it and watermark_lag_ms"},
    {"watermark_lag_ms", CK_OPT_INT, "0", NULL, false,
     "how far out of order events may be: the watermark trails the largest event time by this"},
    {"allowed_lateness_ms", CK_OPT_INT, "0", NULL, false,
     "extra time a window waits after the watermark passes its end before it fires"},
    {"idle_timeout_ms", CK_OPT_INT, "0", NULL, false,
     "a partition with no records for this long stops holding the watermark back (0: never)"},
    {"on_decode_error", CK_OPT_ENUM, "fail", "fail|skip", false,
     "a record that cannot be decoded stops the job (fail) or is counted and skipped (skip)"},
    {"poll_rows", CK_OPT_INT, "1024", NULL, false,
     "most records one poll of the source hands on at a time (1 to 1024): a tuning knob only, "
     "since watermarks move after every record and no result depends on where a batch ends"},
    {"event_time_null", CK_OPT_ENUM, "fail", "fail|skip", false,
     "a record whose event_time_column is missing or NULL stops the job, naming the record "
     "(fail), or is counted as a record without event time and skipped (skip); it is never "
     "counted as late"},
    {NULL, 0, NULL, NULL, false, NULL},
};

const ck_opt_def_t ck_sink_common_options[] = {
    {"format", CK_OPT_STRING, NULL, NULL, false, "record format (json, csv; per connector)"},
    {"delivery_guarantee", CK_OPT_ENUM, "at_least_once", "at_least_once|exactly_once", false,
     "the delivery guarantee asked of this sink; refused when the sink cannot give it"},
    {NULL, 0, NULL, NULL, false, NULL},
};
