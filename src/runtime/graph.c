/* DESIGN: the routing function of keyed exchange; see graph.h. Keys hash by their canonical
 * bytes (integers as int64 little endian, strings as bytes, NULL as one marker byte), so a
 * key hashes the same whether it travels locally, over the network or comes back from a
 * snapshot. */
#include "runtime/graph.h"

#include <string.h>

#include "base/alloc.h"
#include "base/hash.h"

uint64_t ck_key_hash(const ck_batch_t *batch, const int *key_cols, int nkeys, size_t row) {
  uint64_t h = 0x6b6579ULL;
  for (int k = 0; k < nkeys; k++) {
    const ck_col_t *c = &batch->cols[key_cols[k]];
    if (!ck_col_valid(c, row)) {
      h = ck_hash64("\0", 1, h);
      continue;
    }
    switch (c->type.id) {
      case CK_T_STRING: {
        size_t n;
        const char *s = ck_col_str(c, row, &n);
        h = ck_hash64(s, n, h);
        break;
      }
      case CK_T_INT32: {
        int64_t v = ck_col_i32(c, row);
        h = ck_hash64(&v, 8, h);
        break;
      }
      case CK_T_BOOL: {
        int64_t v = ck_col_bool(c, row);
        h = ck_hash64(&v, 8, h);
        break;
      }
      case CK_T_FLOAT32: {
        double v = ck_col_f32(c, row);
        if (v == 0) v = 0; /* -0.0 and 0.0 are one key */
        h = ck_hash64(&v, 8, h);
        break;
      }
      case CK_T_FLOAT64: {
        double v = ck_col_f64(c, row);
        if (v == 0) v = 0;
        h = ck_hash64(&v, 8, h);
        break;
      }
      default:
        h = ck_hash64((const char *)c->values + row * ck_type_width(c->type),
                      ck_type_width(c->type), h);
    }
  }
  return h;
}

void ck_graph_free(ck_graph_t *graph) {
  if (!graph) return;
  ck_arena_fini(&graph->arena);
  ck_free(graph);
}
