/*
 * grpc_int.h - internals of lib/agent/grpc.c shared with its tests and fuzz target.
 */
#ifndef GS_AGENT_GRPC_INT_H
#define GS_AGENT_GRPC_INT_H

#include <stddef.h>
#include <stdint.h>

#include "gpusched/grpc.h"

/* Run one server-side HTTP/2 session over `data` (the bytes a client sent, preface first)
 * on the calling thread, with the routes of `s` (which need not be started): handlers run,
 * answers are produced and discarded, kept calls are closed at the end (their `closed`
 * callback runs). Returns the number of response bytes the session produced, -1 when the
 * session failed to start. For the fuzz target and tests. */
long gs_grpc_server_feed(gs_grpc_server *s, const uint8_t *data, size_t len);

/* Percent-encoding of grpc-message (bytes outside 0x20..0x7e and '%' as %XX) and its
 * decoding (a malformed escape is kept as is). */
void gs_grpc_percent_encode(gs_strbuf *out, const char *s);
void gs_grpc_percent_decode(gs_strbuf *out, const char *s, size_t n);

#endif
