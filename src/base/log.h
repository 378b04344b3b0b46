/*
 * DESIGN: levelled logging with a subsystem tag.
 *
 * Lines go to stderr as "[subsystem] message", the shape users grep for
 * ("[coordinator.watchdog] worker lost: worker-1"). The level comes from CLINK_LOG_LEVEL
 * (off, error, warn, info, debug; default info) read once; ck_log_set_level overrides it.
 * Threads: any; each line is written with one write() so lines never interleave.
 */
#ifndef CK_BASE_LOG_H
#define CK_BASE_LOG_H

typedef enum ck_log_level {
  CK_LOG_OFF = 0,
  CK_LOG_ERROR = 1,
  CK_LOG_WARN = 2,
  CK_LOG_INFO = 3,
  CK_LOG_DEBUG = 4,
} ck_log_level_t;

ck_log_level_t ck_log_level(void);
void ck_log_set_level(ck_log_level_t level);
/* Parses "off|error|warn|info|debug"; returns -1 for anything else. */
int ck_log_parse_level(const char *s);
/* Redirect output (tests): fd to write lines to; -1 restores stderr. */
void ck_log_set_fd(int fd);
/* Hands every line (without its newline) to fn instead of writing it (an embedding host's log
 * callback, libclink); NULL restores the descriptor. fn runs on the logging thread. */
typedef void (*ck_log_fn_t)(void *ctx, ck_log_level_t level, const char *line);
void ck_log_set_hook(ck_log_fn_t fn, void *ctx);
void ck_log(ck_log_level_t level, const char *subsystem, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define CK_LOG_ERR(sub, ...) ck_log(CK_LOG_ERROR, sub, __VA_ARGS__)
#define CK_LOG_WARN(sub, ...) ck_log(CK_LOG_WARN, sub, __VA_ARGS__)
#define CK_LOG_INFO(sub, ...) ck_log(CK_LOG_INFO, sub, __VA_ARGS__)
#define CK_LOG_DEBUG(sub, ...) \
  do { if (ck_log_level() >= CK_LOG_DEBUG) ck_log(CK_LOG_DEBUG, sub, __VA_ARGS__); } while (0)

#endif
