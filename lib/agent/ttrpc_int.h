/*
 * ttrpc_int.h - ttrpc over NRI's connection multiplexer, for the NRI plugin (nri.c).
 * Internal to libgpusched (and its tests and fuzz target).
 *
 * Wire (containerd/nri v0.12.5 pkg/net/multiplex, containerd/ttrpc v1.2.7):
 *  - the unix socket carries multiplexer frames: {conn id uint32 BE, length uint32 BE}
 *    then `length` bytes (at most 10 + 4 MiB). Connection 1 carries the plugin's service
 *    (the runtime calls, we answer), connection 2 the runtime's service (we call). Frames
 *    for other connections are dropped, as NRI's multiplexer drops them;
 *  - each connection's payload bytes, concatenated, are a ttrpc stream: messages with a
 *    10-byte header {length uint32 BE, stream id uint32 BE, type (1 request, 2 response,
 *    3 data), flags} and `length` bytes (at most 4 MiB) of protobuf: a ttrpc.Request
 *    {service, method, payload, timeout_nano, metadata} or a ttrpc.Response {status,
 *    payload}. Client streams have odd ids.
 *  - sending, a message is cut into frames of at most 4,096 bytes: the Go reader
 *    (bufio.Reader of 4,096 bytes over the multiplexer's message-sized reads) fails with
 *    ENOMEM on a frame larger than the buffer it reads into.
 */
#ifndef GS_AGENT_TTRPC_INT_H
#define GS_AGENT_TTRPC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/error.h"

#define GS_MUX_HDR 8
#define GS_TTRPC_HDR 10
#define GS_TTRPC_MAX_MSG (4u << 20)
#define GS_MUX_MAX_FRAME (GS_TTRPC_HDR + GS_TTRPC_MAX_MSG)
#define GS_MUX_SEND_FRAME 4096
#define GS_MUX_CONN_PLUGIN 1u  /* the plugin's service: the runtime calls */
#define GS_MUX_CONN_RUNTIME 2u /* the runtime's service: the plugin calls */
#define GS_TTRPC_REQUEST 1
#define GS_TTRPC_RESPONSE 2
#define GS_TTRPC_DATA 3
#define GS_TTRPC_FLAG_REMOTE_CLOSED 0x1

/* gRPC status codes used here */
#define GS_TTRPC_OK 0
#define GS_TTRPC_INVALID_ARGUMENT 3
#define GS_TTRPC_DEADLINE_EXCEEDED 4
#define GS_TTRPC_FAILED_PRECONDITION 9
#define GS_TTRPC_UNIMPLEMENTED 12
#define GS_TTRPC_INTERNAL 13

/* ------------------------------------------------------------- decoder (pure) */
typedef struct gs_ttrpc_msg {
    uint32_t conn;   /* multiplexer connection */
    uint32_t stream; /* ttrpc stream id */
    uint8_t type, flags;
    const uint8_t *data; /* valid during the callback only */
    size_t len;
} gs_ttrpc_msg;

/* Return 0 to go on, -1 to stop feeding (the callback's err is returned). */
typedef int (*gs_ttrpc_msg_fn)(void *ud, const gs_ttrpc_msg *m, gs_error *err);

typedef struct gs_mux_buf {
    uint8_t *buf;
    size_t len, cap;
} gs_mux_buf;

typedef struct gs_mux_decoder {
    uint8_t hdr[GS_MUX_HDR];
    size_t hdr_have;
    uint32_t frame_conn;
    size_t frame_left;   /* payload bytes of the current frame still to come */
    size_t max_msg;      /* ttrpc message bound; 0: GS_TTRPC_MAX_MSG */
    gs_mux_buf conn[2];  /* ttrpc byte streams of connections 1 and 2 */
    uint64_t frames, messages, dropped;
} gs_mux_decoder;

void gs_mux_decoder_init(gs_mux_decoder *d, size_t max_msg);
void gs_mux_decoder_free(gs_mux_decoder *d);
/* Feed bytes read from the socket; fn is called for each complete ttrpc message of
 * connection 1 or 2. -1 with err: a frame or message over the bounds (GS_ERR_LIMIT), no
 * memory, or the callback's failure; the connection must then be closed. */
int gs_mux_feed(gs_mux_decoder *d, const uint8_t *data, size_t n, gs_ttrpc_msg_fn fn, void *ud, gs_error *err);

/* Append to *out (malloc'd, grown) the multiplexer frames carrying one ttrpc message.
 * 0, or -1 when payload is over GS_TTRPC_MAX_MSG or memory runs out. */
int gs_ttrpc_encode(uint8_t **out, size_t *out_len, size_t *out_cap, uint32_t conn, uint32_t stream,
                    uint8_t type, uint8_t flags, const uint8_t *payload, size_t len);

/* ------------------------------------------------------------- connection */
typedef struct gs_ttrpc_request {
    const char *service, *method;
    const uint8_t *payload;
    size_t len;
    int64_t timeout_nano; /* 0: none */
} gs_ttrpc_request;

typedef struct gs_ttrpc_reply {
    uint8_t *payload; /* malloc'd by the handler; freed by the connection */
    size_t len;
    int code;         /* GS_TTRPC_OK or a gRPC code (then message says why) */
    char message[1024];
} gs_ttrpc_reply;

/* Serve one request of the plugin service. Called on the connection's thread. */
typedef void (*gs_ttrpc_handler)(void *ud, const gs_ttrpc_request *req, gs_ttrpc_reply *rep);

typedef struct gs_ttrpc_conn {
    int fd;             /* the unix socket (non-blocking); owned */
    int wake_fd;        /* readable: stop waiting (-1: none); not owned */
    gs_mux_decoder dec;
    gs_ttrpc_handler handler;
    void *ud;
    uint32_t next_stream;
    long write_timeout_ms;
    /* the one call in flight */
    uint32_t want_stream;
    bool got;
    int got_code;
    char got_msg[512];
    uint8_t *got_payload;
    size_t got_len;
    uint64_t served;
} gs_ttrpc_conn;

/* Take fd (made non-blocking). */
void gs_ttrpc_conn_init(gs_ttrpc_conn *c, int fd, int wake_fd, gs_ttrpc_handler h, void *ud);
void gs_ttrpc_conn_close(gs_ttrpc_conn *c);
/* Feed bytes as if read from the socket (requests are answered on fd). */
int gs_ttrpc_conn_feed(gs_ttrpc_conn *c, const uint8_t *data, size_t n, gs_error *err);
/* Wait up to timeout_ms for bytes, read and dispatch them. 0: bytes handled or timeout;
 * 1: wake_fd is readable; -1 with err: the peer closed the connection (GS_ERR_IO, "closed
 * by the runtime") or a protocol error. */
int gs_ttrpc_pump(gs_ttrpc_conn *c, long timeout_ms, gs_error *err);
/* A unary call of the runtime's service on connection 2; requests arriving meanwhile are
 * served. On success *resp (malloc'd, may be NULL when empty) and *resp_len. -1 with err:
 * transport failure, timeout (GS_ERR_IO "timed out"), woken, or the peer's error status
 * (GS_ERR_INVALID with its code and message). */
int gs_ttrpc_call(gs_ttrpc_conn *c, const char *service, const char *method, const uint8_t *req, size_t len,
                  long timeout_ms, uint8_t **resp, size_t *resp_len, gs_error *err);

#endif
