/*
 * DESIGN: the job manifest — <checkpoint-dir>/v1/_meta/job.json, what an incident bundle
 * (incident/bundle.h, docs/incidents.md) reports of the job that wrote the checkpoints: its
 * identity, parallelism, graph with every option through the one redaction rule, and the
 * delivery report the job stated at submission. Written by ck_job_deploy at every deployment
 * (ck_store_replace: whole or absent), so it is there before the first checkpoint is.
 * Threads: the caller's (the deploying thread).
 */
#include <string.h>

#include "base/redact.h"
#include "job/job.h"
#include "runtime/plan.h"

static const char *kind_name(ck_node_kind_t k) {
  switch (k) {
    case CK_NODE_SOURCE: return "source";
    case CK_NODE_CALC: return "calc";
    case CK_NODE_AGG: return "aggregate";
    case CK_NODE_SINK: return "sink";
  }
  return "?";
}

static void put_str(ck_buf_t *out, const char *s) {
  if (s) ck_buf_put_json_str(out, s, strlen(s));
  else ck_buf_puts(out, "null");
}

void ck_job_manifest_json(const ck_job_manifest_t *m, ck_buf_t *out) {
  ck_buf_printf(out, "{\"format\":\"%s\",\"version\":%d,\"job\":{\"id\":", CK_JOB_MANIFEST_FORMAT,
                CK_JOB_MANIFEST_VERSION);
  if (m->job_id > 0) ck_buf_printf(out, "%lld", (long long)m->job_id);
  else ck_buf_puts(out, "null");
  ck_buf_puts(out, ",\"name\":");
  put_str(out, m->name);
  ck_buf_printf(out, ",\"shape\":\"%s\"},\"fingerprint\":\"%016llx\",\"parallelism\":%d,"
                "\"tasks\":%d,\"max_parallelism\":%d,\"guarantee\":",
                m->job_id > 0 ? "cluster" : "embedded", (unsigned long long)m->fingerprint,
                m->parallelism, m->ntasks, m->graph->max_parallelism);
  put_str(out, m->guarantee);
  ck_buf_puts(out, ",\"nodes\":[");
  for (int i = 0; i < m->graph->nnodes; i++) {
    const ck_node_t *n = &m->graph->nodes[i];
    ck_buf_printf(out, "%s{\"id\":%d,\"name\":", i ? "," : "", n->id);
    put_str(out, n->name);
    ck_buf_printf(out, ",\"kind\":\"%s\",\"parallelism\":%d,\"input\":%d", kind_name(n->kind),
                  n->parallelism, n->input);
    if (n->kind == CK_NODE_SOURCE || n->kind == CK_NODE_SINK) {
      const ck_conn_spec_t *c = &n->u.conn;
      ck_buf_puts(out, ",\"connector\":");
      put_str(out, c->connector ? c->connector->name : NULL);
      ck_buf_puts(out, ",\"table\":");
      put_str(out, c->table);
      ck_buf_puts(out, ",\"options\":{");
      for (int k = 0; k < c->options.n; k++) {
        ck_buf_t v;
        ck_buf_init(&v);
        ck_redact_option(c->options.keys[k], c->options.values[k], &v);
        if (k) ck_buf_putc(out, ',');
        put_str(out, c->options.keys[k]);
        ck_buf_putc(out, ':');
        ck_buf_put_json_str(out, v.data ? v.data : "", v.len);
        ck_buf_fini(&v);
      }
      ck_buf_putc(out, '}');
    }
    ck_buf_putc(out, '}');
  }
  ck_buf_puts(out, "],\"plan\":\"");
  ck_buf_t bin;
  ck_buf_init(&bin);
  ck_plan_encode(m->graph, CK_PLAN_WIRE_REDACT, &bin);
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < bin.len; i++) {
    ck_buf_putc(out, digits[(uint8_t)bin.data[i] >> 4]);
    ck_buf_putc(out, digits[(uint8_t)bin.data[i] & 15]);
  }
  ck_buf_fini(&bin);
  ck_buf_puts(out, "\"}\n");
  /* the whole text once more through the free-text rule (a credential inside another value) */
  ck_buf_t red;
  ck_buf_init(&red);
  if (ck_redact_text(out->data, out->len, &red)) {
    ck_buf_reset(out);
    ck_buf_append(out, red.data, red.len);
  }
  ck_buf_fini(&red);
}
