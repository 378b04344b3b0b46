/*
 * DESIGN: clink incident scope (bundle.h). Not built yet.
 */
#include "incident/bundle.h"

int ck_bundle_scope(const char *dir, int64_t checkpoint, int64_t job_id, bool json,
                    ck_buf_t *out, ck_error_t *err) {
  (void)dir, (void)checkpoint, (void)job_id, (void)json, (void)out;
  ck_error_set(err, CK_EUNSUPPORTED, "could not export the scope: not built yet");
  return CK_INCIDENT_USAGE;
}
