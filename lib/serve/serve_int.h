/*
 * serve_int.h - helpers shared by the files of lib/serve (not part of the public API).
 */
#ifndef GPUSCHED_SERVE_INT_H
#define GPUSCHED_SERVE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "gpusched/serve.h"

/* Longest prefix of s[0..n) of at most max bytes that does not split a UTF-8 sequence. */
size_t gs_serve_utf8_cut(const char *s, size_t n, size_t max);
/* Append s to sb, cut to at most max bytes with "..." at the end when it was cut. */
void gs_serve_put_capped(gs_strbuf *sb, const char *s, size_t max);
/* Append s[0..n) to out with every byte that does not begin a valid UTF-8 sequence
 * (a cut or invalid one) replaced by U+FFFD: the result is valid UTF-8 (audit.c). */
void gs_serve_utf8_repair(const char *s, size_t n, gs_strbuf *out);
/* Reason phrase of a metav1.Status for an HTTP code ("BadRequest", ...). */
const char *gs_serve_status_reason(int http_code);
/* Monotonic clock in nanoseconds. */
uint64_t gs_serve_now_ns(void);

#endif
