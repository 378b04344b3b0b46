/*
 * DESIGN: the physical plan of a job, and the job graph's serialised form.
 *
 * The physical plan is a value computed once from the logical graph (runtime/graph.h) by
 * ck_plan_build, and the one source of every fact below for the executor (which threads run,
 * which channel feeds which), the coordinator (how many slots a deployment needs, how many
 * acknowledgements complete a checkpoint) and the snapshot layout (`v1/<task>`):
 *
 *   segments  the graph's nodes cut into chains: a node joins its input's chain when the edge
 *             is forward, the parallelism equal and the input is that chain's last node; a
 *             segment runs as `parallelism` subtasks, one thread each;
 *   edges     each segment's downstream segment (-1: it ends in a sink) and how many upstream
 *             subtasks send into each of its subtasks; the edge kind is the downstream
 *             segment's first node's (forward, hash, rebalance, gather);
 *   tasks     numbered segment by segment in graph order: task = first_task + subtask, so
 *             segment s's subtask p keeps its snapshot in v1/<first_task + p>;
 *   slots     a deployment has nslots = the widest segment's parallelism slots; subtask p of
 *             every segment runs in slot p (a cluster places slots on workers).
 *
 * The serialised job graph is what a coordinator ships to its workers, what an HA manifest
 * keeps (credentials masked) and what the checkpoint fingerprint is made of: connectors are
 * named, not pointed at, and a decoder resolves them in its own registry, validates every
 * option against the connector's tables (no plan-time check runs: nothing connects) and checks
 * the physical plan it carries against the one it computes. serialise → deserialise →
 * serialise is byte-identical.
 *
 * Layout (version 1), every integer little endian; "str" is u32 length + bytes, length
 * 0xFFFFFFFF for NULL; "ints" is i32 count (-1 for NULL) + that many i32:
 *   "CKJG" | u32 version (1) | u32 flags | i32 max_parallelism | i32 nnodes | nnodes × node
 *   | (flags without IDENTITY) i32 nsegs | nsegs × (i32 first, last, parallelism, down,
 *     nsenders, first_task) | i32 ntasks | i32 nslots
 *   node:   i32 id | u8 kind | str name | i32 parallelism (0 under IDENTITY) | i32 input
 *           | u8 edge | ints key_cols | schema out_schema | u8 changelog | body by kind
 *   source/sink: str connector name | str table | schema | i32 noptions × (str key, str value)
 *           | i32 event_time_col | i64 watermark_lag_ms | i64 idle_timeout_ms | ints col_map
 *   calc:   u8 has_filter [expr] | i32 nexprs × expr
 *   agg:    ints key_cols | i32 ncalls × (u8 fn, u8 distinct, i32 arg_col, type arg, type
 *           result) | u8 window kind | i64 size, slide, gap, step | i32 time_col
 *           | i64 allowed_lateness_ms | u8 has_having [expr]
 *   schema: i32 ncols × (str name, type)          type: u8 id, u8 precision, u8 scale
 *   expr:   pre-order, no recursion along a chain (runtime/expr.h's walks): u8 kind | type
 *           | i32 column | str fn name ("" unless CALL) | u8 has_else | u8 negated
 *           | u8 constant | u32 size | literal (CK_EX_LITERAL only) | i32 nargs, then the args
 *   literal: type | u8 is_null | by type: u8 (BOOL), i64 (INT32, INT64, TIMESTAMP), u64 bits
 *           of the double (FLOAT32, FLOAT64), u64 low + u64 high (DECIMAL), str (STRING)
 * Flags: REDACT masks every credential-like option (base/redact.h) — the manifest's form;
 * IDENTITY is REDACT without parallelism or physical plan — the fingerprint's form, so
 * rotating a password keeps a job's checkpoints and a change of parallelism is told apart
 * (checkpoint/lineage.h). Only a plain encoding (flags 0) is runnable; decode refuses others.
 *
 * Memory: a plan's arrays are heap blocks freed by ck_plan_fini; a decoded graph lives in its
 * own arena (ck_graph_free). Threads: pure functions of their arguments; the decoder reads the
 * connector registry, which is filled before any thread runs.
 */
#ifndef CK_RUNTIME_PLAN_H
#define CK_RUNTIME_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "runtime/graph.h"

typedef struct ck_plan_seg {
  int first, last;  /* node ids, inclusive; a linear chain */
  int parallelism;
  int down;         /* downstream segment, -1 when the chain ends in a sink */
  int nsenders;     /* upstream subtasks that send into each subtask (0: a source segment) */
  int first_task;   /* task number of subtask 0 */
} ck_plan_seg_t;

typedef struct ck_plan {
  int nsegs;
  ck_plan_seg_t *segs;
  int ntasks;             /* snapshot directories v1/0 … v1/ntasks-1 */
  int nsources, nsinks;   /* tasks whose chain starts at a source / ends in a sink */
  int nslots;             /* the widest segment */
} ck_plan_t;

void ck_plan_build(const ck_graph_t *graph, ck_plan_t *plan);
void ck_plan_fini(ck_plan_t *plan);
bool ck_plan_eq(const ck_plan_t *a, const ck_plan_t *b);

/* Task number of subtask p of segment s (its snapshot directory v1/<task>). */
static inline int ck_plan_task(const ck_plan_t *plan, int s, int p) {
  return plan->segs[s].first_task + p;
}
/* The slot subtask p of any segment runs in. */
static inline int ck_plan_slot(const ck_plan_t *plan, int p) { return p % plan->nslots; }

/* ---- the serialised job graph */
#define CK_PLAN_WIRE_VERSION 1
enum {
  CK_PLAN_WIRE_REDACT = 1,   /* credentials masked: the HA manifest's form */
  CK_PLAN_WIRE_IDENTITY = 2, /* masked, no parallelism, no physical plan: the fingerprint's */
};
/* Appends the graph (and, unless IDENTITY, its physical plan) to out. Returns whether a
 * masked form masked anything (a plan with no credential masks to itself but its flags). */
bool ck_plan_encode(const ck_graph_t *graph, unsigned flags, ck_buf_t *out);
/* A new graph from a plain encoding (freed with ck_graph_free). CK_EPROTO for bytes that are
 * not one, CK_ENOTFOUND for a connector this process does not have, CK_EOPTION for options
 * its tables refuse. The connectors must be registered first. */
int ck_plan_decode(const void *data, size_t len, ck_graph_t **out, ck_error_t *err);
/* ck_plan_decode that also takes a REDACT encoding (credentials masked): a graph to rebuild
 * one operator from offline (clink replay, capture/capture.h), never to run its connectors. */
int ck_plan_decode_masked(const void *data, size_t len, ck_graph_t **out, ck_error_t *err);
/* The identity text of the graph: its IDENTITY encoding in hex, what checkpoints fingerprint
 * (ck_lineage_fingerprint of it). */
void ck_plan_identity(const ck_graph_t *graph, ck_buf_t *out);

#endif
