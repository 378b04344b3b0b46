/* DESIGN: see metrics.h. */
#include "runtime/metrics.h"

const ck_op_metric_def_t ck_op_metric_defs[CK_OPM_COUNT] = {
#define CK_OPM_DEF(id, key, prom, kind, phrase, help) {key, prom, kind, phrase, help},
    CK_OP_METRIC_TABLE(CK_OPM_DEF)
#undef CK_OPM_DEF
};
