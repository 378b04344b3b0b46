/* DESIGN: registration of the built-in connectors (see connectors.h). Called once at
 * start-up on the main thread, before any subtask runs; the runtime's registry ignores a
 * connector registered twice, and so does the flag here. */
#include "connectors/connectors.h"

#include <stdbool.h>

void ck_connectors_register_all(void) {
  static bool done;
  if (done) return;
  done = true;
  ck_connector_register(&ck_file_connector);
  ck_connector_register(&ck_datagen_connector);
  ck_connector_register(&ck_print_connector);
  ck_connector_register(&ck_stdout_connector);
  ck_connector_register(&ck_blackhole_connector);
  ck_connector_register(&ck_nexmark_connector);
  ck_connector_register(&ck_kafka_connector);
  ck_connector_register(&ck_clickhouse_connector);
  ck_connector_register(&ck_postgres_connector);
  ck_connector_register(&ck_collect_connector);
  ck_connector_register(&ck_push_connector);
}
