/*
 * DESIGN: libFuzzer target for the flight recorder's reader (src/capture/reader.c, over the
 * Arrow IPC reader of src/base/arrow_ipc.c): arbitrary bytes as if they were a .cap file that
 * `clink capture-cat` or `clink replay` opens.
 *
 * Properties checked, besides "no crash, no leak, no undefined behaviour" under ASan+UBSan:
 *   - ck_capture_reader_open and ck_capture_reader_next return 0/1 or CK_EDECODE (or
 *     CK_EUNSUPPORTED for an Arrow type or message the reader does not read), with a message;
 *   - every batch it yields has the header's column count and types, and every row renders
 *     as JSON (ck_capture_row_json reads every value, so ASan sees every byte);
 *   - a control event carries no batch; a record item always one with at least one row;
 *   - reading the same bytes again gives the same items and the same rendering.
 * Seeds: fuzz/corpus/capture_reader/ holds small captures a real run wrote.
 *
 * Build: scripts/fuzz.sh build capture_reader (its row in the script's table lists the sources).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "capture/capture.h"

/* Reads data through; the rendering of every item into out. Returns the last result. */
static int read_all(const uint8_t *data, size_t size, ck_buf_t *out) {
  ck_error_t err;
  ck_error_clear(&err);
  ck_capture_reader_t *r = NULL;
  int rc = ck_capture_reader_open(data, size, &r, &err);
  if (rc) {
    if (rc != CK_EDECODE && rc != CK_EUNSUPPORTED) abort();
    if (!err.message[0]) abort();
    return rc;
  }
  const ck_capture_header_t *h = ck_capture_reader_header(r);
  if (h->ncols < 0 || h->ncols > CK_CAPTURE_MAX_COLS) abort();
  const char *names[CK_CAPTURE_MAX_COLS];
  for (int c = 0; c < h->ncols; c++) names[c] = h->names[c];
  ck_capture_item_t item;
  long items = 0;
  while ((rc = ck_capture_reader_next(r, &item, &err)) == 1) {
    items++;
    ck_buf_printf(out, "%d:%lld:%d|", (int)item.kind, (long long)item.value, item.input);
    if (item.kind == CK_CAPTURE_RECORD) {
      if (!item.batch || item.batch->nrows == 0 || item.batch->ncols != h->ncols) abort();
      for (int c = 0; c < h->ncols; c++)
        if (item.batch->cols[c].type.id != h->types[c].id) abort();
      for (size_t i = 0; i < item.batch->nrows; i++) ck_capture_row_json(item.batch, i, names, out);
      ck_batch_free(item.batch);
    } else if (item.batch) {
      abort();
    }
    if (items > 1000000) abort(); /* every item consumes bytes: the count is bounded by size */
  }
  /* The stream can turn out unreadable after a good header: a later message may be
   * malformed (CK_EDECODE) or use what the Arrow reader does not read, such as a delta
   * dictionary batch (CK_EUNSUPPORTED). Either way the message names it. */
  if (rc != 0 && rc != CK_EDECODE && rc != CK_EUNSUPPORTED) abort();
  if (rc && !err.message[0]) abort();
  ck_capture_reader_free(r);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ck_buf_t a, b;
  ck_buf_init(&a);
  ck_buf_init(&b);
  int ra = read_all(data, size, &a), rb = read_all(data, size, &b);
  if (ra != rb || a.len != b.len || (a.len && memcmp(a.data, b.data, a.len))) abort();
  ck_buf_fini(&a);
  ck_buf_fini(&b);
  return 0;
}
