/* DESIGN: see metrics.h. */
#include "runtime/metrics.h"

const ck_metric_def_t ck_metric_defs[CK_METRIC_COUNT] = {
#define CK_METRIC_OP_DEF(id, key, prom, kind, unit, phrase, where, help)                         \
  [id] = {CK_METRIC_OPERATOR, key, prom, kind, unit, phrase, where, help},
#define CK_METRIC_CO_DEF(id, scope, prom, kind, unit, where, help)                               \
  [id] = {scope, NULL, prom, kind, unit, NULL, where, help},
    CK_METRIC_TABLE(CK_METRIC_OP_DEF, CK_METRIC_CO_DEF)
#undef CK_METRIC_OP_DEF
#undef CK_METRIC_CO_DEF
};

void ck_metrics_progress_line(ck_buf_t *out, int64_t read, int64_t written,
                              const int64_t sum[CK_OPM_COUNT]) {
  ck_buf_printf(out, "%lld records read, %lld written", (long long)read, (long long)written);
  for (int m = 0; m < CK_OPM_COUNT; m++)
    if (ck_metric_defs[m].phrase)
      ck_buf_printf(out, ", %lld %s", (long long)sum[m], ck_metric_defs[m].phrase);
}
