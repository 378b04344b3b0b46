/*
 * DESIGN: the one redaction rule. A credential never leaves the process in anything clink
 * shows or stores: log lines, error messages (CLI, REST, a worker's report), the SQL excerpts
 * of plan errors, HA job manifests, the graph description a checkpoint fingerprint is made of.
 *
 * What is a credential:
 *   - the value of a credential-like option: one whose name's last part (split at '.', '_' and
 *     '-') ends in "password", "passwd", "secret" or "token", or is "pwd", "credential(s)" or
 *     "pem", or is "key" after "private", "api", "access" or "secret", or a "jaas.config" /
 *     "oauthbearer.config" (password, sasl.password, ssl.key.password, client_secret,
 *     auth_token, ssl.key.pem, sasl.jaas.config …). A last part of "env", "file" or "location"
 *     names where a secret is (password_env), which is not one;
 *   - the password of a connection string inside any value or text: "user:PW@" in a URI
 *     (scheme://user:PW@host…), and the value of a credential-like key=value pair
 *     (password=PW, password='P W', sslpassword=PW: libpq's form, and a URI's ?password=PW);
 *   - any value the two rules above ever matched in this process, 8 bytes or longer, wherever
 *     it shows up again (an error that quotes it, say): ck_redact_remember. Shorter ones are
 *     not searched for, as they would mask ordinary words (user 'clink', password 'clink').
 * It becomes "***" (a value spanning lines keeps its line breaks, so line numbers hold).
 *
 * Entry points: ck_redact_option (a value given its option's name), ck_redact_sql (SQL text:
 * the credential-like options inside WITH (…), connection-string passwords inside every string
 * literal and comment), ck_redact_text (free text: the connection-string rules and remembered
 * values). base/error.c and base/log.c run every message and line through ck_redact_text;
 * runtime/options.c remembers every credential a plan's options hold.
 *
 * Threads: any. The remembered values are an append-only table (published with release
 * stores, read without a lock); at most CK_REDACT_MAX of them.
 */
#ifndef CK_BASE_REDACT_H
#define CK_BASE_REDACT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"

#define CK_REDACT_MASK "***"
#define CK_REDACT_MIN 8   /* shortest remembered value searched for in free text */
#define CK_REDACT_MAX 256 /* remembered values per process */

/* Whether an option (or key=value key) of this name holds a credential. */
bool ck_redact_is_secret_name(const char *name, size_t len);
/* Appends value as it may be shown: "***" for a credential-like name, else value with the
 * password of any connection string in it masked. Remembers what it masked. */
void ck_redact_option(const char *name, const char *value, ck_buf_t *out);
/* Remembers the credentials option name = value holds (as ck_redact_option would mask). */
void ck_redact_remember_option(const char *name, const char *value);
/* Remembers one value to mask wherever it appears in free text (ignored below CK_REDACT_MIN). */
void ck_redact_remember(const char *secret, size_t len);
/* Appends sql[0..n) with every credential masked and remembered. When track is not NULL, *track
 * is an offset into sql on entry and the matching offset in the output on return (inside a
 * masked value: where the mask starts). Returns whether anything was masked. */
bool ck_redact_sql(const char *sql, size_t n, ck_buf_t *out, size_t *track);
/* Appends text with connection-string passwords and remembered values masked; returns whether
 * anything was. */
bool ck_redact_text(const char *text, size_t n, ck_buf_t *out);
/* ck_redact_text in place on a NUL-terminated buffer of cap bytes (the result is cut to fit). */
void ck_redact_inplace(char *s, size_t cap);

#endif
