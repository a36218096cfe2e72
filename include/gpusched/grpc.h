/*
 * grpc.h - gRPC over HTTP/2 cleartext on Unix sockets, in C on nghttp2: the server the
 * kubelet calls (device plugin) and the client the agent calls the kubelet with
 * (Registration, PodResources). Messages are opaque protobuf bytes here; encoding and
 * decoding is protobuf-c's (the generated code under proto/).
 *
 * Server: one thread per server runs a poll loop over the listening socket and its
 * connections. Handlers run on that thread. A unary handler answers with gs_grpc_reply or
 * gs_grpc_fail before it returns, or keeps the call (server streaming) and sends on it from
 * any thread with gs_grpc_send until gs_grpc_finish; the peer ending the stream (kubelet
 * closed the connection) is reported once through the server's `closed` callback, after
 * which sends fail with -1 and the call must be released with gs_grpc_call_release.
 *
 * Hostile or broken peers are bounded: at most GS_GRPC_MAX_CONNS connections, messages up
 * to GS_GRPC_MAX_MESSAGE bytes (larger: RESOURCE_EXHAUSTED), HTTP/2 messaging validation
 * off (older kubelets send the socket path as :authority, which nghttp2 rejects) with the
 * few headers needed checked here instead. See docs/agent.md, "gRPC".
 *
 * The library never prints and never exits.
 */
#ifndef GPUSCHED_GRPC_H
#define GPUSCHED_GRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/error.h"
#include "gpusched/util.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GS_GRPC_MAX_MESSAGE ((size_t)4 << 20)
#define GS_GRPC_MAX_CONNS 64

/* gRPC status codes used here */
enum {
    GS_GRPC_OK = 0,
    GS_GRPC_CANCELLED = 1,
    GS_GRPC_UNKNOWN = 2,
    GS_GRPC_INVALID_ARGUMENT = 3,
    GS_GRPC_DEADLINE_EXCEEDED = 4,
    GS_GRPC_NOT_FOUND = 5,
    GS_GRPC_RESOURCE_EXHAUSTED = 8,
    GS_GRPC_FAILED_PRECONDITION = 9,
    GS_GRPC_UNIMPLEMENTED = 12,
    GS_GRPC_INTERNAL = 13,
    GS_GRPC_UNAVAILABLE = 14,
};

typedef struct gs_grpc_server gs_grpc_server;
typedef struct gs_grpc_call gs_grpc_call;

/* A call arrived on `path` ("/v1beta1.DevicePlugin/Allocate") with one request message. */
typedef void (*gs_grpc_handler)(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len);
/* A kept (streaming) call ended from the peer's side or the server stopped. */
typedef void (*gs_grpc_closed_fn)(void *ctx, gs_grpc_call *call);

/* Create a server listening on `socket_path` (an existing socket file there is replaced;
 * the socket is made 0600). Not started. */
int gs_grpc_server_new(const char *socket_path, gs_grpc_server **out, gs_error *err);
/* Route `path` to `fn`. `streaming`: the call is kept after the handler returns (server
 * streaming, e.g. ListAndWatch) until gs_grpc_finish; otherwise the handler must answer
 * (gs_grpc_reply / gs_grpc_fail) before returning, or UNKNOWN is sent. Unknown paths get
 * UNIMPLEMENTED. Call before gs_grpc_server_start. */
int gs_grpc_server_route(gs_grpc_server *s, const char *path, bool streaming, gs_grpc_handler fn,
                         void *ctx, gs_error *err);
void gs_grpc_server_on_closed(gs_grpc_server *s, gs_grpc_closed_fn fn, void *ctx);
/* A connection that has not sent a complete request's headers `ms` after it was accepted
 * is closed (default 10 s; a stalled or hostile client cannot hold a slot). Before start. */
void gs_grpc_server_set_idle_timeout(gs_grpc_server *s, long ms);
/* Start the server thread. */
int gs_grpc_server_start(gs_grpc_server *s, gs_error *err);
/* Stop the thread, close every connection (kept calls get their `closed` callback), remove
 * the socket file. Safe on a server never started. */
void gs_grpc_server_stop(gs_grpc_server *s);
/* Stops first. Every kept call must have been released before (after stop its sends fail
 * with -1 and its `closed` callback has run; after free the call is gone). Neither stop
 * nor free may be called from a handler or a `closed` callback (they join the thread). */
void gs_grpc_server_free(gs_grpc_server *s);
/* The socket path still names this server's socket (same inode): false after the kubelet
 * deleted the directory's sockets on its restart. */
bool gs_grpc_server_socket_alive(const gs_grpc_server *s);

/* Unary answers (the handler's thread only). */
int gs_grpc_reply(gs_grpc_call *call, const uint8_t *msg, size_t len);
int gs_grpc_fail(gs_grpc_call *call, int code, const char *message);
/* Streaming (any thread): one more message; -1 once the stream is closed. */
int gs_grpc_send(gs_grpc_call *call, const uint8_t *msg, size_t len);
/* A kept call's send queue holds at most 8 messages the peer has not taken (flow control:
 * a stalled reader); a ninth drops the oldest one not yet started, since each ListAndWatch
 * message is a whole device list. How many were dropped so far: */
size_t gs_grpc_call_dropped(const gs_grpc_call *call);
/* End a kept stream with a status (any thread). */
int gs_grpc_finish(gs_grpc_call *call, int code, const char *message);
/* Drop the caller's reference to a kept call (after finish or closed). */
void gs_grpc_call_release(gs_grpc_call *call);
/* The :authority the peer sent ("localhost", or a socket path from kubelets < 1.26). */
const char *gs_grpc_call_authority(const gs_grpc_call *call);

/* Client: one unary call over a Unix socket (HTTP/2 prior knowledge). `reply` receives the
 * response message (without framing). Returns 0 with *status the gRPC status (0 OK; its
 * message in status_msg when not NULL); -1 with err when the call could not be made
 * (connect, timeout, malformed answer). */
int gs_grpc_unary(const char *socket_path, const char *path, const uint8_t *req, size_t len,
                  long timeout_ms, gs_strbuf *reply, int *status, gs_strbuf *status_msg,
                  gs_error *err);

/* Client: the first message of a server stream (ListAndWatch), then the stream is dropped.
 * 0 with the message in reply; -1 with err when the call fails, ends with a non-OK status
 * or sends nothing within timeout_ms. */
int gs_grpc_stream_first(const char *socket_path, const char *path, const uint8_t *req, size_t len,
                         long timeout_ms, gs_strbuf *reply, gs_error *err);

#ifdef __cplusplus
}
#endif
#endif
