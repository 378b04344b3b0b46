/*
 * DESIGN: clink incident collect (bundle.h). Not built yet.
 */
#include "incident/bundle.h"

int ck_bundle_collect(const ck_bundle_collect_opts_t *o, ck_error_t *err) {
  (void)o;
  return ck_error_set(err, CK_EUNSUPPORTED, "could not collect: not built yet");
}
