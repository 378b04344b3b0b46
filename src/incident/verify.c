/*
 * DESIGN: clink incident verify (bundle.h). Not built yet.
 */
#include "incident/bundle.h"

int ck_bundle_verify(const char *dir, ck_bundle_replay_fn replay, bool json, ck_buf_t *report) {
  (void)dir, (void)replay, (void)json;
  ck_buf_puts(report, "not built yet\n");
  return CK_INCIDENT_USAGE;
}
