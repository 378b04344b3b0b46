/*
 * DESIGN: the error table and rich errors.
 *
 * Fallible functions return int: 0, or a negative CK_E… code from the one table below, which
 * also gives each code its name and a default message. A rich error (message, detail, hint,
 * source position, origin system with its native code, retriable flag) travels in a
 * ck_error_t out-parameter across module boundaries. The first error recorded wins: later
 * ck_error_set calls on an error that is already set are ignored, so the root cause survives;
 * the detail and hint that follow an ignored call are ignored with it.
 *
 * Messages are for the reader: lower case, "could not X: reason", no C function names.
 */
#ifndef CK_BASE_ERROR_H
#define CK_BASE_ERROR_H

#include <stdbool.h>

/*   code name              number  default message */
#define CK_ERROR_TABLE(X)                                                       \
  X(CK_OK,          0,   "success")                                             \
  X(CK_EINVAL,     -1,   "invalid argument")                                    \
  X(CK_EUSAGE,     -2,   "bad command-line usage")                              \
  X(CK_ESYNTAX,    -3,   "syntax error")                                        \
  X(CK_EBIND,      -4,   "unknown name")                                        \
  X(CK_ETYPE,      -5,   "type mismatch")                                       \
  X(CK_EUNSUPPORTED, -6, "not supported")                                       \
  X(CK_EOPTION,    -7,   "invalid option")                                      \
  X(CK_EDECODE,    -8,   "could not decode record")                             \
  X(CK_EIO,        -9,   "input/output error")                                  \
  X(CK_ENOTFOUND,  -10,  "not found")                                           \
  X(CK_EEXISTS,    -11,  "already exists")                                      \
  X(CK_ECONNECT,   -12,  "could not connect")                                   \
  X(CK_ETIMEOUT,   -13,  "timed out")                                           \
  X(CK_ECANCELLED, -14,  "cancelled")                                           \
  X(CK_EPROTO,     -15,  "protocol error")                                      \
  X(CK_EREMOTE,    -16,  "the remote system reported an error")                 \
  X(CK_ESTATE,     -17,  "checkpoint state is unusable")                        \
  X(CK_EEVAL,      -18,  "could not evaluate expression")                       \
  X(CK_EINTERNAL,  -19,  "internal error")                                      \
  X(CK_EREWIND,    -20,  "the restore point's output was not committed: restore an earlier checkpoint") \
  X(CK_ENOMEM,     -21,  "job memory limit exceeded")

enum {
#define CK_X_ENUM(name, num, msg) name = num,
  CK_ERROR_TABLE(CK_X_ENUM)
#undef CK_X_ENUM
};

const char *ck_error_name(int code);    /* "CK_ESYNTAX" */
const char *ck_error_default(int code); /* "syntax error" */

#define CK_ERR_MSG 512
#define CK_ERR_TEXT 256

typedef struct ck_error {
  int code;                  /* 0 while unset */
  char message[CK_ERR_MSG];  /* the primary sentence */
  char detail[CK_ERR_TEXT];  /* optional: what exactly was found */
  char hint[CK_ERR_TEXT];    /* optional: what to do about it */
  int line, column;          /* 1-based source position, 0 when not applicable */
  char origin[32];           /* the system that reported it ("kafka", "clickhouse", …) */
  int origin_code;           /* that system's own code */
  bool retriable;
  bool frozen; /* a later ck_error_set was ignored: its detail/hint must not land here */
} ck_error_t;

void ck_error_clear(ck_error_t *err);
/* Records code and message unless err already holds an error; returns code. err may be NULL. */
int ck_error_set(ck_error_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int ck_error_set_at(ck_error_t *err, int code, int line, int column, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void ck_error_detail(ck_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ck_error_hint(ck_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Renders "error: message\ndetail: …\nhint: …" into out. */
void ck_error_format(const ck_error_t *err, char *out, int out_len);

#endif
