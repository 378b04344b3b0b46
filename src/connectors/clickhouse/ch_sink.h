/*
 * DESIGN: the clickhouse sink's column rules, exposed for unit tests (ch_sink.c has the
 * connector itself, registered as ck_clickhouse_connector in connectors.h).
 */
#ifndef CK_CONNECTORS_CLICKHOUSE_CH_SINK_H
#define CK_CONNECTORS_CLICKHOUSE_CH_SINK_H

#include <stdbool.h>

#include "base/error.h"
#include "runtime/schema.h"

/* Checks that every column of schema can be written into a ClickHouse table whose DESCRIBE
 * gave n columns (names, type names, default kinds "" / DEFAULT / MATERIALIZED / ALIAS),
 * under narrowing = 'checked' when checked. 0, or an error naming both types. */
int ck_ch_sink_check_columns(const ck_schema_t *schema, int n, const char *const *names,
                             const char *const *types, const char *const *kinds, bool checked,
                             ck_error_t *err);

#endif
