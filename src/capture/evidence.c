/*
 * DESIGN: see evidence.h. The JSON is written by hand in one pass (no general writer): the
 * runner's facts, the capture summary, then the sink's account copied in as it came.
 */
#include "capture/evidence.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/redact.h"
#include "checkpoint/store.h"

static void put_str(ck_buf_t *out, const char *s) {
  if (s) ck_buf_put_json_str(out, s, strlen(s));
  else ck_buf_puts(out, "null");
}

void ck_evidence_encode(const ck_evidence_t *ev, ck_buf_t *out) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_buf_printf(&b, "{\"format\":\"%s\",\"version\":%d,\"checkpoint\":%lld,"
                "\"previous_barrier\":%lld,\"restored_from\":%lld,\"attempt\":",
                CK_EVIDENCE_FORMAT, CK_EVIDENCE_VERSION, (long long)ev->checkpoint,
                (long long)ev->previous, (long long)ev->restored_from);
  put_str(&b, ev->attempt);
  ck_buf_printf(&b, ",\"op\":%d,\"op_name\":", ev->op);
  put_str(&b, ev->op_name);
  ck_buf_puts(&b, ",\"table\":");
  put_str(&b, ev->table);
  ck_buf_puts(&b, ",\"connector\":");
  put_str(&b, ev->connector);
  ck_buf_printf(&b, ",\"subtask\":%d,\"task\":%d,\"watermark\":", ev->subtask, ev->task);
  if (ev->has_watermark) ck_buf_printf(&b, "%lld", (long long)ev->watermark);
  else ck_buf_puts(&b, "null");
  ck_buf_printf(&b, ",\"records\":%lld", (long long)ev->records);
  const ck_capture_summary_t *c = &ev->capture;
  ck_buf_puts(&b, ",\"capture\":{\"state\":");
  put_str(&b, ck_capture_state_name(c->state));
  ck_buf_printf(&b, ",\"records_seen\":%lld,\"records_stored\":%lld,\"truncated\":%s,\"file\":",
                (long long)c->records_seen, (long long)c->records_stored,
                c->truncated ? "true" : "false");
  const char *slash = strrchr(c->path, '/');
  put_str(&b, c->path[0] ? (slash ? slash + 1 : c->path) : NULL);
  ck_buf_puts(&b, "},\"account\":");
  if (ev->account && ev->account_len) ck_buf_append(&b, ev->account, ev->account_len);
  else ck_buf_puts(&b, "null");
  ck_buf_puts(&b, "}\n");
  /* the one redaction rule: connection-string passwords and every credential this process
   * has seen in an option (base/redact.h) */
  ck_redact_text(b.data, b.len, out);
  ck_buf_fini(&b);
}

void ck_evidence_path(const char *dir, int op, int subtask, int64_t ckpt, char *out, size_t cap) {
  snprintf(out, cap, "%s/op-%d/subtask-%d/epoch-%lld.sink.json", dir, op, subtask,
           (long long)ckpt);
}

int ck_evidence_write(const char *path, const void *text, size_t len, ck_error_t *err) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) {
    *slash = 0;
    if (ck_store_mkdirs(dir)) {
      ck_error_set(err, CK_EIO, "could not write the interval evidence '%s': could not create "
                   "its directory: %s", path, strerror(errno));
      return CK_EIO;
    }
  }
  ck_error_t inner;
  ck_error_clear(&inner);
  int rc = ck_store_replace(path, text, len, 0644, &inner);
  if (rc) {
    ck_error_set(err, rc, "could not write the interval evidence '%s': %s", path, inner.message);
    ck_error_detail(err, "nothing was left under its name");
  }
  return rc;
}
