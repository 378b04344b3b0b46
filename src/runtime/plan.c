/* DESIGN: the physical plan (segments, edges, task numbers, slots); see plan.h. The
 * serialised form is in plan_wire.c. */
#include "runtime/plan.h"

#include <string.h>

#include "base/alloc.h"

void ck_plan_build(const ck_graph_t *graph, ck_plan_t *plan) {
  memset(plan, 0, sizeof *plan);
  plan->segs = ck_calloc((size_t)graph->nnodes + 1, sizeof *plan->segs);
  int *seg_of = ck_calloc((size_t)graph->nnodes + 1, sizeof(int));
  for (int i = 0; i < graph->nnodes; i++) {
    const ck_node_t *n = &graph->nodes[i];
    bool chained = n->input >= 0 && n->edge == CK_EDGE_FORWARD &&
                   graph->nodes[n->input].parallelism == n->parallelism &&
                   plan->segs[seg_of[n->input]].last == n->input;
    if (chained) {
      seg_of[i] = seg_of[n->input];
      plan->segs[seg_of[i]].last = i;
      continue;
    }
    ck_plan_seg_t *s = &plan->segs[plan->nsegs];
    s->first = s->last = i;
    s->parallelism = n->parallelism;
    s->down = -1;
    seg_of[i] = plan->nsegs++;
    if (n->input >= 0) {
      ck_plan_seg_t *up = &plan->segs[seg_of[n->input]];
      up->down = seg_of[i];
      s->nsenders = up->parallelism;
    }
  }
  ck_free(seg_of);
  plan->nslots = 1;
  for (int s = 0; s < plan->nsegs; s++) {
    ck_plan_seg_t *seg = &plan->segs[s];
    seg->first_task = plan->ntasks;
    plan->ntasks += seg->parallelism;
    if (graph->nodes[seg->first].kind == CK_NODE_SOURCE) plan->nsources += seg->parallelism;
    if (graph->nodes[seg->last].kind == CK_NODE_SINK) plan->nsinks += seg->parallelism;
    if (seg->parallelism > plan->nslots) plan->nslots = seg->parallelism;
  }
}

void ck_plan_fini(ck_plan_t *plan) {
  ck_free(plan->segs);
  memset(plan, 0, sizeof *plan);
}

bool ck_plan_eq(const ck_plan_t *a, const ck_plan_t *b) {
  if (a->nsegs != b->nsegs || a->ntasks != b->ntasks || a->nsources != b->nsources ||
      a->nsinks != b->nsinks || a->nslots != b->nslots)
    return false;
  for (int s = 0; s < a->nsegs; s++) {
    const ck_plan_seg_t *x = &a->segs[s], *y = &b->segs[s];
    if (x->first != y->first || x->last != y->last || x->parallelism != y->parallelism ||
        x->down != y->down || x->nsenders != y->nsenders || x->first_task != y->first_task)
      return false;
  }
  return true;
}
