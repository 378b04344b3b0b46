/*
 * DESIGN: see state_rows.h.
 */
#include "connectors/state_rows.h"

#include <string.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "connectors/format.h"
#include "connectors/format_impl.h"

#define STATE_ROWS_SNAP_VERSION 1

static struct {
  const char *const *rows;
  const size_t *lens;
  size_t n;
} g_rows;

void ck_state_rows_set(const char *const *rows, const size_t *lens, size_t n) {
  g_rows.rows = rows;
  g_rows.lens = lens;
  g_rows.n = n;
}

void ck_state_rows_register(void) { ck_connector_register(&ck_state_rows_connector); }

static const ck_opt_def_t state_options[] = {
    {NULL, 0, NULL, NULL, false, NULL},
};

typedef struct state_src {
  ck_decoder_t *dec;
  size_t next;
} state_src_t;

static state_src_t *impl(ck_source_t *src) {
  if (!src->impl) src->impl = ck_calloc(1, sizeof(state_src_t));
  return src->impl;
}

static int sr_open(ck_source_t *src, ck_error_t *err) {
  state_src_t *s = impl(src);
  s->dec = ck_decoder_new(CK_FORMAT_JSON, src->ctx.schema, src->ctx.options);
  if (src->ctx.subtask != 0) s->next = g_rows.n; /* subtask 0 reads them all */
  return 0;
}

static int sr_npartitions(ck_source_t *src) { return 1; }

static int sr_poll(ck_source_t *src, ck_batch_t *batch, int max_rows, int timeout_ms,
                   int *partition, ck_error_t *err) {
  state_src_t *s = impl(src);
  *partition = 0;
  if (s->next >= g_rows.n) return CK_SRC_END;
  size_t row0 = batch->ncols ? batch->cols[0].len : batch->nrows;
  int k = 0;
  for (; k < (max_rows > 0 ? max_rows : 1) && s->next < g_rows.n; k++, s->next++) {
    int rc = ck_decoder_decode(s->dec, g_rows.rows[s->next], g_rows.lens[s->next], batch, err);
    if (rc) {
      ck_format_rollback(batch, row0 + (size_t)k);
      ck_error_detail(err, "the state entry is row %zu of the checkpoint", s->next + 1);
      return rc;
    }
  }
  batch->nrows = row0 + (size_t)k;
  return CK_SRC_DATA;
}

static int sr_snapshot(ck_source_t *src, ck_buf_t *out, ck_error_t *err) {
  ck_buf_putc(out, STATE_ROWS_SNAP_VERSION);
  ck_buf_put_uvarint(out, impl(src)->next);
  return 0;
}

static int sr_restore(ck_source_t *src, const void *data, size_t len, ck_error_t *err) {
  const uint8_t *p = data, *end = p + len;
  uint64_t next;
  if (len < 1 || *p++ != STATE_ROWS_SNAP_VERSION || !ck_uvarint_get(&p, end, &next) || p != end)
    return ck_error_set(err, CK_ESTATE, "could not restore the state source's position: the "
                        "state is truncated or of another version");
  impl(src)->next = (size_t)next;
  return 0;
}

static int64_t sr_skipped(ck_source_t *src) { return 0; }

static void sr_close(ck_source_t *src) {
  state_src_t *s = src->impl;
  if (!s) return;
  if (s->dec) ck_decoder_free(s->dec);
  ck_free(s);
  src->impl = NULL;
}

static const ck_source_ops_t state_source_ops = {
    sr_open, sr_npartitions, sr_poll, sr_snapshot, sr_restore, sr_skipped, sr_close,
};

const ck_connector_t ck_state_rows_connector = {
    .name = "state",
    .description = "the entries of one checkpoint as a bounded table (clink state-query only)",
    .source_options = state_options,
    .sink_options = NULL,
    .source = &state_source_ops,
    .sink = NULL,
    .sink_guarantee = CK_GUARANTEE_NONE,
    .bounded = true,
    .check = NULL,
};
