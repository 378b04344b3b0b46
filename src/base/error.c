/* DESIGN: see error.h. */
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/redact.h"

const char *ck_error_name(int code) {
  switch (code) {
#define CK_X_NAME(name, num, msg) \
  case num: return #name;
    CK_ERROR_TABLE(CK_X_NAME)
#undef CK_X_NAME
  }
  return "CK_EUNKNOWN";
}

const char *ck_error_default(int code) {
  switch (code) {
#define CK_X_MSG(name, num, msg) \
  case num: return msg;
    CK_ERROR_TABLE(CK_X_MSG)
#undef CK_X_MSG
  }
  return "unknown error";
}

void ck_error_clear(ck_error_t *err) {
  if (err) memset(err, 0, sizeof *err);
}

static int vset(ck_error_t *err, int code, int line, int col, const char *fmt, va_list ap) {
  if (!err) return code;
  if (err->code) {
    err->frozen = true;
    return code;
  }
  err->code = code;
  err->line = line;
  err->column = col;
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  ck_redact_inplace(err->message, sizeof err->message); /* no credential in any message */
  return code;
}

int ck_error_set(ck_error_t *err, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vset(err, code, 0, 0, fmt, ap);
  va_end(ap);
  return code;
}

int ck_error_set_at(ck_error_t *err, int code, int line, int column, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vset(err, code, line, column, fmt, ap);
  va_end(ap);
  return code;
}

void ck_error_detail(ck_error_t *err, const char *fmt, ...) {
  if (!err || err->frozen || err->detail[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->detail, sizeof err->detail, fmt, ap);
  va_end(ap);
  ck_redact_inplace(err->detail, sizeof err->detail);
}

void ck_error_hint(ck_error_t *err, const char *fmt, ...) {
  if (!err || err->frozen || err->hint[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->hint, sizeof err->hint, fmt, ap);
  va_end(ap);
  ck_redact_inplace(err->hint, sizeof err->hint);
}

void ck_error_format(const ck_error_t *err, char *out, int out_len) {
  int n = snprintf(out, (size_t)out_len, "error: %s",
                   err->message[0] ? err->message : ck_error_default(err->code));
  if (err->detail[0] && n < out_len)
    n += snprintf(out + n, (size_t)(out_len - n), "\ndetail: %s", err->detail);
  if (err->hint[0] && n < out_len)
    snprintf(out + n, (size_t)(out_len - n), "\nhint: %s", err->hint);
}
