/*
 * grpc.c - gRPC over HTTP/2 cleartext on Unix sockets (include/gpusched/grpc.h).
 *
 * Server: nghttp2 server sessions, one poll-loop thread per server. nghttp2 is touched only
 * on that thread. Other threads (gs_grpc_send / gs_grpc_finish) queue their message under
 * the server mutex, mark the call dirty and wake the loop through an eventfd; the loop
 * then submits the response headers or resumes the stream's deferred data provider. The
 * data provider copies queued messages into DATA frames as the peer's flow-control window
 * allows and, once the queue is empty and the call finished, submits the trailers.
 *
 * HTTP messaging validation is off (older kubelets send the socket path as :authority,
 * which nghttp2 refuses); :method POST, :path and content-type application/grpc* are
 * checked here. docs/agent.md, "gRPC", has the wire rules and limits.
 *
 * Client: libcurl (HTTP/2 prior knowledge over the Unix socket; trailers arrive through the
 * header callback).
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent/grpc_int.h"
#include "gpusched/grpc.h"

#define GRPC_QUEUE_MAX 8                 /* queued messages per stream before dropping */
#define GRPC_HEADER_BYTES_MAX 16384      /* request header list, per stream */
#define GRPC_STREAMS_MAX 32              /* concurrent streams per connection */
#define GRPC_IDLE_MS_DEFAULT 10000       /* a connection must send a request this soon */
#define GRPC_CONN_BUFFERED_MAX (GS_GRPC_MAX_MESSAGE + 5 + 65536) /* request bytes held, per conn */
#define GRPC_FIELD_MAX 1024              /* :path, :authority, content-type kept */

typedef struct grpc_route {
    char *path;
    bool streaming;
    gs_grpc_handler fn;
    void *ctx;
} grpc_route;

typedef struct grpc_msg {
    struct grpc_msg *next;
    size_t len, off; /* framed bytes, bytes already handed to nghttp2 */
    uint8_t data[];
} grpc_msg;

typedef struct grpc_conn grpc_conn;

struct gs_grpc_call {
    gs_grpc_server *s;
    grpc_conn *conn;           /* NULL once the stream is gone (loop thread) */
    int32_t stream_id;
    int refs;                  /* the stream's, plus the user's for kept calls (s->mu) */
    struct gs_grpc_call *cnext, *cprev; /* conn's calls (loop thread) */
    struct gs_grpc_call *dnext;         /* server's dirty list (s->mu) */
    bool dirty;
    /* request (loop thread) */
    char path[GRPC_FIELD_MAX], authority[GRPC_FIELD_MAX], ctype[128], encoding[64];
    char method[16];
    size_t header_bytes;
    gs_strbuf body;
    bool too_big, requested;
    /* response (s->mu) */
    grpc_msg *qhead, *qtail;
    size_t qlen, dropped;
    bool kept, answered, finish, closed, closed_notified;
    bool submitted, deferred, data_started;
    int status;
    char *status_msg;
    int http_status; /* non-200 plain HTTP refusal (405, 415) */
};

struct grpc_conn {
    gs_grpc_server *s;
    int fd;                    /* -1 in feed mode */
    nghttp2_session *ses;
    int64_t accepted_ms;
    bool got_request;
    size_t buffered;           /* request bytes held by this connection's streams */
    gs_grpc_call *calls;
    struct grpc_conn *next;
    gs_strbuf *sink;           /* feed mode: where sent bytes go */
    long sent;
};

struct gs_grpc_server {
    char *sock_path;
    int lfd, wakefd;
    dev_t dev;
    ino_t ino;
    grpc_route *routes;
    size_t nroutes, routes_cap;
    gs_grpc_closed_fn closed_fn;
    void *closed_ctx;
    long idle_ms;
    pthread_t thread;
    bool started;
    atomic_bool stopping;
    pthread_mutex_t mu;
    gs_grpc_call *dirty;
    grpc_conn *conns;
    size_t nconns;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---------------------------------------------------------------- percent-encoding */

void gs_grpc_percent_encode(gs_strbuf *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p >= 0x20 && *p <= 0x7e && *p != '%') {
            gs_strbuf_putc(out, (char)*p);
        } else {
            char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            gs_strbuf_add(out, e, 3);
        }
    }
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

void gs_grpc_percent_decode(gs_strbuf *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < n && (hi = hexval(s[i + 1])) >= 0 &&
            (lo = hexval(s[i + 2])) >= 0) {
            gs_strbuf_putc(out, (char)(hi << 4 | lo));
            i += 2;
        } else {
            gs_strbuf_putc(out, s[i]);
        }
    }
    if (!out->buf) gs_strbuf_add(out, "", 0);
}

/* ---------------------------------------------------------------- calls */

static void call_free(gs_grpc_call *c)
{
    grpc_msg *m = c->qhead;
    while (m) {
        grpc_msg *n = m->next;
        free(m);
        m = n;
    }
    gs_strbuf_free(&c->body);
    free(c->status_msg);
    free(c);
}

/* s->mu held. Drop one reference; frees at zero. */
static void call_unref_locked(gs_grpc_call *c)
{
    if (--c->refs == 0) call_free(c);
}

/* s->mu held. Put the call on the server's dirty list. */
static void call_mark_dirty_locked(gs_grpc_call *c)
{
    if (c->dirty || c->closed) return;
    c->dirty = true;
    c->dnext = c->s->dirty;
    c->s->dirty = c;
}

static void server_wake(gs_grpc_server *s)
{
    if (s->wakefd >= 0) {
        uint64_t one = 1;
        ssize_t r = write(s->wakefd, &one, sizeof one);
        (void)r;
    }
}

/* s->mu held. Queue one framed message; when more than GRPC_QUEUE_MAX wait, the oldest not
 * yet started is dropped (each ListAndWatch message is a whole device list). */
static int call_queue_locked(gs_grpc_call *c, const uint8_t *msg, size_t len)
{
    if (c->closed || c->finish) return -1;
    if (len > GS_GRPC_MAX_MESSAGE) return -1;
    grpc_msg *m = malloc(sizeof *m + len + 5);
    if (!m) return -1;
    m->next = NULL;
    m->len = len + 5;
    m->off = 0;
    m->data[0] = 0;
    m->data[1] = (uint8_t)(len >> 24);
    m->data[2] = (uint8_t)(len >> 16);
    m->data[3] = (uint8_t)(len >> 8);
    m->data[4] = (uint8_t)len;
    if (len) memcpy(m->data + 5, msg, len);
    if (c->qtail)
        c->qtail->next = m;
    else
        c->qhead = m;
    c->qtail = m;
    c->qlen++;
    while (c->qlen > GRPC_QUEUE_MAX) {
        /* the head may be half sent: drop the oldest whole one after it */
        grpc_msg **pp = c->qhead->off ? &c->qhead->next : &c->qhead;
        grpc_msg *d = *pp;
        *pp = d->next;
        if (c->qtail == d) {
            c->qtail = c->qhead;
            while (c->qtail && c->qtail->next) c->qtail = c->qtail->next;
        }
        free(d);
        c->qlen--;
        c->dropped++;
    }
    call_mark_dirty_locked(c);
    return 0;
}

static int call_finish_locked(gs_grpc_call *c, int code, const char *message)
{
    if (c->closed || c->finish) return -1;
    c->finish = true;
    c->status = code;
    free(c->status_msg);
    c->status_msg = NULL;
    if (message && *message) {
        gs_strbuf enc = GS_STRBUF_INIT;
        gs_grpc_percent_encode(&enc, message);
        c->status_msg = gs_strbuf_detach(&enc);
    }
    call_mark_dirty_locked(c);
    return 0;
}

int gs_grpc_reply(gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    if (!call) return -1;
    pthread_mutex_lock(&call->s->mu);
    int rc = call_queue_locked(call, msg, len);
    if (rc == 0) rc = call_finish_locked(call, GS_GRPC_OK, NULL);
    call->answered = true;
    pthread_mutex_unlock(&call->s->mu);
    server_wake(call->s);
    return rc;
}

int gs_grpc_fail(gs_grpc_call *call, int code, const char *message)
{
    if (!call) return -1;
    pthread_mutex_lock(&call->s->mu);
    int rc = call_finish_locked(call, code == GS_GRPC_OK ? GS_GRPC_UNKNOWN : code, message);
    call->answered = true;
    pthread_mutex_unlock(&call->s->mu);
    server_wake(call->s);
    return rc;
}

int gs_grpc_send(gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    if (!call) return -1;
    pthread_mutex_lock(&call->s->mu);
    int rc = call_queue_locked(call, msg, len);
    pthread_mutex_unlock(&call->s->mu);
    if (rc == 0) server_wake(call->s);
    return rc;
}

int gs_grpc_finish(gs_grpc_call *call, int code, const char *message)
{
    if (!call) return -1;
    pthread_mutex_lock(&call->s->mu);
    int rc = call_finish_locked(call, code, message);
    call->answered = true;
    pthread_mutex_unlock(&call->s->mu);
    if (rc == 0) server_wake(call->s);
    return rc;
}

void gs_grpc_call_release(gs_grpc_call *call)
{
    if (!call) return;
    gs_grpc_server *s = call->s;
    pthread_mutex_lock(&s->mu);
    call_unref_locked(call);
    pthread_mutex_unlock(&s->mu);
}

const char *gs_grpc_call_authority(const gs_grpc_call *call)
{
    return call ? call->authority : "";
}

size_t gs_grpc_call_dropped(const gs_grpc_call *call)
{
    if (!call) return 0;
    pthread_mutex_lock(&call->s->mu);
    size_t n = call->dropped;
    pthread_mutex_unlock(&call->s->mu);
    return n;
}

/* ---------------------------------------------------------------- server session */

#define NV(n, v) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE}

static ssize_t data_read_cb(nghttp2_session *ses, int32_t stream_id, uint8_t *buf, size_t length,
                            uint32_t *data_flags, nghttp2_data_source *source, void *user_data)
{
    gs_grpc_call *c = source->ptr;
    gs_grpc_server *s = c->s;
    ssize_t n = 0;
    pthread_mutex_lock(&s->mu);
    while (c->qhead && (size_t)n < length) {
        grpc_msg *m = c->qhead;
        size_t take = m->len - m->off;
        if (take > length - (size_t)n) take = length - (size_t)n;
        memcpy(buf + n, m->data + m->off, take);
        m->off += take;
        n += (ssize_t)take;
        if (m->off == m->len) {
            c->qhead = m->next;
            if (!c->qhead) c->qtail = NULL;
            c->qlen--;
            free(m);
        }
    }
    if (!c->qhead) {
        if (c->finish) {
            char code[16];
            snprintf(code, sizeof code, "%d", c->status);
            nghttp2_nv tr[2] = {NV("grpc-status", code), NV("grpc-message", "")};
            size_t ntr = 1;
            if (c->status_msg) {
                tr[1].value = (uint8_t *)c->status_msg;
                tr[1].valuelen = strlen(c->status_msg);
                ntr = 2;
            }
            *data_flags |= NGHTTP2_DATA_FLAG_EOF;
            if (nghttp2_submit_trailer(ses, stream_id, tr, ntr) == 0)
                *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        } else if (n == 0) {
            c->deferred = true;
            pthread_mutex_unlock(&s->mu);
            return NGHTTP2_ERR_DEFERRED;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Loop thread, s->mu NOT held. Push a dirty call's news into its session. */
static void call_flush(gs_grpc_call *c)
{
    grpc_conn *conn = c->conn;
    if (!conn) return;
    gs_grpc_server *s = c->s;
    pthread_mutex_lock(&s->mu);
    bool submitted = c->submitted, has_data = c->qhead != NULL, finish = c->finish;
    bool deferred = c->deferred;
    int status = c->status, http_status = c->http_status;
    char code[16];
    snprintf(code, sizeof code, "%d", status);
    char *msg = c->status_msg ? strdup(c->status_msg) : NULL;
    if (!submitted && (has_data || finish || http_status)) c->submitted = true;
    if (submitted && deferred && (has_data || finish)) c->deferred = false;
    pthread_mutex_unlock(&s->mu);

    if (!submitted) {
        if (http_status) {
            char st[8];
            snprintf(st, sizeof st, "%d", http_status);
            nghttp2_nv h[] = {NV(":status", st)};
            nghttp2_submit_response(conn->ses, c->stream_id, h, 1, NULL);
        } else if (has_data) {
            nghttp2_nv h[] = {NV(":status", "200"), NV("content-type", "application/grpc")};
            nghttp2_data_provider dp = {.source.ptr = c, .read_callback = data_read_cb};
            nghttp2_submit_response(conn->ses, c->stream_id, h, 2, &dp);
        } else if (finish) { /* trailers-only */
            nghttp2_nv h[4] = {NV(":status", "200"), NV("content-type", "application/grpc"),
                               NV("grpc-status", code), NV("grpc-message", msg ? msg : "")};
            nghttp2_submit_response(conn->ses, c->stream_id, h, msg ? 4 : 3, NULL);
        }
    } else if (deferred && (has_data || finish)) {
        nghttp2_session_resume_data(conn->ses, c->stream_id);
    }
    free(msg);
}

static void server_flush_dirty(gs_grpc_server *s)
{
    for (;;) {
        pthread_mutex_lock(&s->mu);
        gs_grpc_call *c = s->dirty;
        if (c) {
            s->dirty = c->dnext;
            c->dirty = false;
            c->refs++; /* keep it while flushing without the lock */
        }
        pthread_mutex_unlock(&s->mu);
        if (!c) return;
        call_flush(c);
        pthread_mutex_lock(&s->mu);
        call_unref_locked(c);
        pthread_mutex_unlock(&s->mu);
    }
}

static void conn_unlink_call(grpc_conn *conn, gs_grpc_call *c)
{
    if (c->cprev)
        c->cprev->cnext = c->cnext;
    else
        conn->calls = c->cnext;
    if (c->cnext) c->cnext->cprev = c->cprev;
    c->cnext = c->cprev = NULL;
}

/* Loop thread, s->mu NOT held. The stream is gone: drop the stream's reference and tell
 * the owner of a kept, unfinished call. */
static void call_stream_gone(grpc_conn *conn, gs_grpc_call *c)
{
    gs_grpc_server *s = c->s;
    conn_unlink_call(conn, c);
    conn->buffered -= c->body.len <= conn->buffered ? c->body.len : conn->buffered;
    pthread_mutex_lock(&s->mu);
    c->conn = NULL;
    c->closed = true;
    if (c->dirty) { /* take it off the dirty list */
        for (gs_grpc_call **pp = &s->dirty; *pp; pp = &(*pp)->dnext)
            if (*pp == c) {
                *pp = c->dnext;
                break;
            }
        c->dirty = false;
    }
    bool notify = c->kept && !c->finish && !c->closed_notified;
    if (notify) {
        c->closed_notified = true;
        c->refs++;
    }
    pthread_mutex_unlock(&s->mu);
    if (notify && s->closed_fn) s->closed_fn(s->closed_ctx, c);
    pthread_mutex_lock(&s->mu);
    if (notify) c->refs--;  /* ours for the callback (the stream's is still held) */
    call_unref_locked(c); /* the stream's */
    pthread_mutex_unlock(&s->mu);
}

static const grpc_route *server_find_route(const gs_grpc_server *s, const char *path)
{
    for (size_t i = 0; i < s->nroutes; i++)
        if (strcmp(s->routes[i].path, path) == 0) return &s->routes[i];
    return NULL;
}

/* Loop thread: the request is complete; check it, unframe it and run the handler. */
static void call_dispatch(gs_grpc_call *c)
{
    gs_grpc_server *s = c->s;
    if (c->requested) return;
    c->requested = true;
    if (strcmp(c->method, "POST") != 0) {
        pthread_mutex_lock(&s->mu);
        c->http_status = 405;
        c->answered = c->finish = true;
        call_mark_dirty_locked(c);
        pthread_mutex_unlock(&s->mu);
        return;
    }
    if (strncmp(c->ctype, "application/grpc", 16) != 0 ||
        (c->ctype[16] != '\0' && c->ctype[16] != '+' && c->ctype[16] != ';')) {
        pthread_mutex_lock(&s->mu);
        c->http_status = 415;
        c->answered = c->finish = true;
        call_mark_dirty_locked(c);
        pthread_mutex_unlock(&s->mu);
        return;
    }
    const grpc_route *r = server_find_route(s, c->path);
    if (!r) {
        char m[GRPC_FIELD_MAX + 40];
        snprintf(m, sizeof m, "unknown method %s", c->path);
        gs_grpc_fail(c, GS_GRPC_UNIMPLEMENTED, m);
        return;
    }
    if (c->too_big) {
        char m[96];
        snprintf(m, sizeof m, "request message larger than %zu bytes", (size_t)GS_GRPC_MAX_MESSAGE);
        gs_grpc_fail(c, GS_GRPC_RESOURCE_EXHAUSTED, m);
        return;
    }
    const uint8_t *b = (const uint8_t *)c->body.buf;
    size_t n = c->body.len;
    if (n < 5) {
        gs_grpc_fail(c, GS_GRPC_INTERNAL, n ? "truncated message prefix" : "request without a message");
        return;
    }
    size_t mlen = (size_t)b[1] << 24 | (size_t)b[2] << 16 | (size_t)b[3] << 8 | b[4];
    if (b[0] != 0) {
        bool identity = c->encoding[0] == '\0' || strcmp(c->encoding, "identity") == 0;
        gs_grpc_fail(c, identity ? GS_GRPC_INTERNAL : GS_GRPC_UNIMPLEMENTED,
                     identity ? "compressed flag set without grpc-encoding"
                              : "compressed messages are not supported");
        return;
    }
    if (mlen > GS_GRPC_MAX_MESSAGE) {
        char m[96];
        snprintf(m, sizeof m, "request message larger than %zu bytes", (size_t)GS_GRPC_MAX_MESSAGE);
        gs_grpc_fail(c, GS_GRPC_RESOURCE_EXHAUSTED, m);
        return;
    }
    if (mlen != n - 5) {
        gs_grpc_fail(c, GS_GRPC_INTERNAL,
                     mlen > n - 5 ? "truncated request message" : "more than one request message");
        return;
    }
    if (r->streaming) {
        pthread_mutex_lock(&s->mu);
        c->kept = true;
        c->refs++; /* the handler's owner releases it with gs_grpc_call_release */
        pthread_mutex_unlock(&s->mu);
    }
    r->fn(r->ctx, c, b + 5, mlen);
    gs_strbuf_free(&c->body);
    if (c->conn) c->conn->buffered -= n <= c->conn->buffered ? n : c->conn->buffered;
    if (!r->streaming) {
        pthread_mutex_lock(&s->mu);
        bool answered = c->answered;
        pthread_mutex_unlock(&s->mu);
        if (!answered) gs_grpc_fail(c, GS_GRPC_UNKNOWN, "the handler did not answer");
    }
}

static int on_begin_headers(nghttp2_session *ses, const nghttp2_frame *frame, void *user_data)
{
    grpc_conn *conn = user_data;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    gs_grpc_call *c = calloc(1, sizeof *c);
    if (!c) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    c->s = conn->s;
    c->conn = conn;
    c->stream_id = frame->hd.stream_id;
    c->refs = 1;
    c->cnext = conn->calls;
    if (conn->calls) conn->calls->cprev = c;
    conn->calls = c;
    nghttp2_session_set_stream_user_data(ses, frame->hd.stream_id, c);
    return 0;
}

static void copy_field(char *dst, size_t cap, const uint8_t *v, size_t n)
{
    if (n >= cap) n = cap - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

static int on_header(nghttp2_session *ses, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user_data)
{
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    gs_grpc_call *c = nghttp2_session_get_stream_user_data(ses, frame->hd.stream_id);
    if (!c || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0; /* trailers: ignored */
    c->header_bytes += namelen + valuelen + 32;
    if (c->header_bytes > GRPC_HEADER_BYTES_MAX) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    /* a value with NUL would be cut short below: refuse it */
    if (memchr(value, '\0', valuelen)) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
#define IS(lit) (namelen == sizeof(lit) - 1 && memcmp(name, lit, namelen) == 0)
    if (IS(":path")) {
        if (valuelen >= GRPC_FIELD_MAX) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        copy_field(c->path, sizeof c->path, value, valuelen);
    } else if (IS(":method")) {
        copy_field(c->method, sizeof c->method, value, valuelen);
    } else if (IS(":authority") || IS("host")) {
        if (!c->authority[0] || IS(":authority"))
            copy_field(c->authority, sizeof c->authority, value, valuelen);
    } else if (IS("content-type")) {
        copy_field(c->ctype, sizeof c->ctype, value, valuelen);
    } else if (IS("grpc-encoding")) {
        copy_field(c->encoding, sizeof c->encoding, value, valuelen);
    }
#undef IS
    return 0;
}

static int on_data_chunk(nghttp2_session *ses, uint8_t flags, int32_t stream_id, const uint8_t *data,
                         size_t len, void *user_data)
{
    grpc_conn *conn = user_data;
    gs_grpc_call *c = nghttp2_session_get_stream_user_data(ses, stream_id);
    if (!c || c->requested || c->too_big) return 0;
    if (c->body.len + len > GS_GRPC_MAX_MESSAGE + 5 || conn->buffered + len > GRPC_CONN_BUFFERED_MAX) {
        c->too_big = true;
        conn->buffered -= c->body.len <= conn->buffered ? c->body.len : conn->buffered;
        gs_strbuf_free(&c->body);
        return 0;
    }
    gs_strbuf_add(&c->body, (const char *)data, len);
    if (c->body.oom) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    conn->buffered += len;
    return 0;
}

static int on_frame_recv(nghttp2_session *ses, const nghttp2_frame *frame, void *user_data)
{
    grpc_conn *conn = user_data;
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
        gs_grpc_call *c = nghttp2_session_get_stream_user_data(ses, frame->hd.stream_id);
        if (c && !c->path[0]) {
            nghttp2_submit_rst_stream(ses, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                      NGHTTP2_PROTOCOL_ERROR);
            return 0;
        }
        conn->got_request = true;
    }
    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
        gs_grpc_call *c = nghttp2_session_get_stream_user_data(ses, frame->hd.stream_id);
        if (c && c->path[0]) call_dispatch(c);
    }
    return 0;
}

static int on_stream_close(nghttp2_session *ses, int32_t stream_id, uint32_t error_code, void *user_data)
{
    grpc_conn *conn = user_data;
    gs_grpc_call *c = nghttp2_session_get_stream_user_data(ses, stream_id);
    if (!c) return 0;
    nghttp2_session_set_stream_user_data(ses, stream_id, NULL);
    call_stream_gone(conn, c);
    return 0;
}

static ssize_t on_send(nghttp2_session *ses, const uint8_t *data, size_t len, int flags, void *user_data)
{
    grpc_conn *conn = user_data;
    if (conn->sink) {
        conn->sent += (long)len;
        return (ssize_t)len;
    }
    ssize_t n = send(conn->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return NGHTTP2_ERR_WOULDBLOCK;
        if (errno == EINTR) return NGHTTP2_ERR_WOULDBLOCK;
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return n;
}

static grpc_conn *conn_new(gs_grpc_server *s, int fd)
{
    grpc_conn *conn = calloc(1, sizeof *conn);
    if (!conn) return NULL;
    conn->s = s;
    conn->fd = fd;
    conn->accepted_ms = now_ms();
    nghttp2_session_callbacks *cb;
    nghttp2_option *opt;
    if (nghttp2_session_callbacks_new(&cb) != 0) {
        free(conn);
        return NULL;
    }
    if (nghttp2_option_new(&opt) != 0) {
        nghttp2_session_callbacks_del(cb);
        free(conn);
        return NULL;
    }
    nghttp2_session_callbacks_set_send_callback(cb, on_send);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    nghttp2_option_set_no_http_messaging(opt, 1);
    int rc = nghttp2_session_server_new2(&conn->ses, cb, conn, opt);
    nghttp2_session_callbacks_del(cb);
    nghttp2_option_del(opt);
    if (rc != 0) {
        free(conn);
        return NULL;
    }
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, GRPC_STREAMS_MAX},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, GRPC_HEADER_BYTES_MAX},
    };
    nghttp2_submit_settings(conn->ses, NGHTTP2_FLAG_NONE, iv, 2);
    return conn;
}

/* Loop thread. Every call of the connection is gone (kept ones told), then the session. */
static void conn_free(grpc_conn *conn)
{
    while (conn->calls) {
        gs_grpc_call *c = conn->calls;
        nghttp2_session_set_stream_user_data(conn->ses, c->stream_id, NULL);
        call_stream_gone(conn, c);
    }
    nghttp2_session_del(conn->ses);
    if (conn->fd >= 0) close(conn->fd);
    free(conn);
}

/* Loop thread. Returns -1 when the connection is done. */
static int conn_send(grpc_conn *conn)
{
    if (nghttp2_session_send(conn->ses) != 0) return -1;
    if (!nghttp2_session_want_read(conn->ses) && !nghttp2_session_want_write(conn->ses)) return -1;
    return 0;
}

static int conn_read(grpc_conn *conn)
{
    uint8_t buf[16384];
    for (;;) {
        ssize_t n = recv(conn->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0) return -1;
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
            return -1;
        }
        ssize_t r = nghttp2_session_mem_recv(conn->ses, buf, (size_t)n);
        if (r < 0) {
            conn_send(conn); /* a GOAWAY, when nghttp2 queued one */
            return -1;
        }
        server_flush_dirty(conn->s);
        if (conn_send(conn) != 0) return -1;
        if ((size_t)n < sizeof buf) return 0;
    }
}

long gs_grpc_server_feed(gs_grpc_server *s, const uint8_t *data, size_t len)
{
    gs_strbuf sink = GS_STRBUF_INIT;
    grpc_conn *conn = conn_new(s, -1);
    if (!conn) return -1;
    conn->sink = &sink;
    size_t off = 0;
    while (off < len) { /* in pieces, as a socket would deliver them */
        size_t piece = len - off < 1024 ? len - off : 1024;
        if (nghttp2_session_mem_recv(conn->ses, data + off, piece) < 0) break;
        server_flush_dirty(s);
        if (nghttp2_session_send(conn->ses) != 0) break;
        off += piece;
    }
    server_flush_dirty(s);
    nghttp2_session_send(conn->ses);
    long sent = conn->sent;
    conn_free(conn);
    gs_strbuf_free(&sink);
    return sent;
}

/* ---------------------------------------------------------------- server lifecycle */

int gs_grpc_server_new(const char *socket_path, gs_grpc_server **out, gs_error *err)
{
    *out = NULL;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (!socket_path || !*socket_path)
        return gs_fail(err, GS_ERR_USAGE, "gRPC server: empty socket path");
    if (strlen(socket_path) >= sizeof sa.sun_path)
        return gs_fail(err, GS_ERR_LIMIT, "gRPC server: socket path %s is longer than %zu bytes",
                       socket_path, sizeof sa.sun_path - 1);
    memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
    struct stat st;
    if (lstat(socket_path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return gs_fail(err, GS_ERR_IO, "gRPC server: %s exists and is not a socket", socket_path);
        if (unlink(socket_path) != 0)
            return gs_fail(err, GS_ERR_IO, "gRPC server: cannot replace %s: %s", socket_path,
                           strerror(errno));
    }
    gs_grpc_server *s = calloc(1, sizeof *s);
    if (!s || !(s->sock_path = strdup(socket_path))) {
        free(s);
        return gs_fail(err, GS_ERR_NOMEM, "gRPC server: out of memory");
    }
    s->lfd = s->wakefd = -1;
    s->idle_ms = GRPC_IDLE_MS_DEFAULT;
    pthread_mutex_init(&s->mu, NULL);
    s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        gs_fail(err, GS_ERR_IO, "gRPC server: cannot bind %s: %s", socket_path, strerror(errno));
        gs_grpc_server_free(s);
        return -1;
    }
    if (chmod(socket_path, 0600) != 0 || listen(s->lfd, 64) != 0 || stat(socket_path, &st) != 0) {
        gs_fail(err, GS_ERR_IO, "gRPC server: cannot listen on %s: %s", socket_path, strerror(errno));
        unlink(socket_path);
        gs_grpc_server_free(s);
        return -1;
    }
    s->dev = st.st_dev;
    s->ino = st.st_ino;
    s->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->wakefd < 0) {
        gs_fail(err, GS_ERR_IO, "gRPC server: eventfd: %s", strerror(errno));
        unlink(socket_path);
        gs_grpc_server_free(s);
        return -1;
    }
    *out = s;
    return 0;
}

int gs_grpc_server_route(gs_grpc_server *s, const char *path, bool streaming, gs_grpc_handler fn,
                         void *ctx, gs_error *err)
{
    if (!path || path[0] != '/' || strlen(path) >= GRPC_FIELD_MAX || !fn)
        return gs_fail(err, GS_ERR_USAGE, "gRPC server: bad route '%s'", path ? path : "");
    if (s->started) return gs_fail(err, GS_ERR_USAGE, "gRPC server: route %s added after start", path);
    if (server_find_route(s, path)) return gs_fail(err, GS_ERR_USAGE, "gRPC server: route %s twice", path);
    if (gs_vec_grow_((void **)&s->routes, &s->routes_cap, s->nroutes + 1, sizeof *s->routes) != 0 ||
        !(s->routes[s->nroutes].path = strdup(path)))
        return gs_fail(err, GS_ERR_NOMEM, "gRPC server: out of memory");
    s->routes[s->nroutes].streaming = streaming;
    s->routes[s->nroutes].fn = fn;
    s->routes[s->nroutes].ctx = ctx;
    s->nroutes++;
    return 0;
}

void gs_grpc_server_on_closed(gs_grpc_server *s, gs_grpc_closed_fn fn, void *ctx)
{
    s->closed_fn = fn;
    s->closed_ctx = ctx;
}

void gs_grpc_server_set_idle_timeout(gs_grpc_server *s, long ms)
{
    s->idle_ms = ms > 0 ? ms : GRPC_IDLE_MS_DEFAULT;
}

static void server_drop_conn(gs_grpc_server *s, grpc_conn *conn)
{
    for (grpc_conn **pp = &s->conns; *pp; pp = &(*pp)->next)
        if (*pp == conn) {
            *pp = conn->next;
            break;
        }
    s->nconns--;
    conn_free(conn);
}

static void server_accept(gs_grpc_server *s)
{
    for (;;) {
        int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) return;
        if (s->nconns >= GS_GRPC_MAX_CONNS) {
            close(fd);
            continue;
        }
        grpc_conn *conn = conn_new(s, fd);
        if (!conn) {
            close(fd);
            continue;
        }
        conn->next = s->conns;
        s->conns = conn;
        s->nconns++;
        if (conn_send(conn) != 0) server_drop_conn(s, conn);
    }
}

static void *server_loop(void *arg)
{
    gs_grpc_server *s = arg;
    struct pollfd *pfd = calloc(GS_GRPC_MAX_CONNS + 2, sizeof *pfd);
    grpc_conn **pconn = calloc(GS_GRPC_MAX_CONNS + 2, sizeof *pconn);
    while (pfd && pconn && !atomic_load(&s->stopping)) {
        size_t n = 0;
        pfd[n++] = (struct pollfd){.fd = s->wakefd, .events = POLLIN};
        pfd[n++] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
        int64_t now = now_ms(), timeout = 1000;
        for (grpc_conn *c = s->conns; c && n < GS_GRPC_MAX_CONNS + 2; c = c->next) {
            short ev = POLLIN;
            if (nghttp2_session_want_write(c->ses)) ev |= POLLOUT;
            pconn[n] = c;
            pfd[n++] = (struct pollfd){.fd = c->fd, .events = ev};
            if (!c->got_request) {
                int64_t left = c->accepted_ms + s->idle_ms - now;
                if (left < timeout) timeout = left < 0 ? 0 : left;
            }
        }
        int r = poll(pfd, n, (int)timeout);
        if (r < 0 && errno != EINTR) break;
        if (pfd[0].revents) {
            uint64_t v;
            ssize_t rr = read(s->wakefd, &v, sizeof v);
            (void)rr;
        }
        server_flush_dirty(s);
        now = now_ms();
        for (size_t i = 2; i < n; i++) {
            grpc_conn *c = pconn[i];
            bool drop = false;
            if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) drop = conn_read(c) != 0;
            if (!drop) drop = conn_send(c) != 0;
            if (!drop && !c->got_request && now - c->accepted_ms >= s->idle_ms) drop = true;
            if (drop) server_drop_conn(s, c);
        }
        if (pfd[1].revents & POLLIN) server_accept(s);
    }
    while (s->conns) server_drop_conn(s, s->conns);
    free(pfd);
    free(pconn);
    return NULL;
}

int gs_grpc_server_start(gs_grpc_server *s, gs_error *err)
{
    if (s->started) return gs_fail(err, GS_ERR_USAGE, "gRPC server: started twice");
    int rc = pthread_create(&s->thread, NULL, server_loop, s);
    if (rc != 0) return gs_fail(err, GS_ERR_IO, "gRPC server: cannot start its thread: %s", strerror(rc));
    s->started = true;
    return 0;
}

bool gs_grpc_server_socket_alive(const gs_grpc_server *s)
{
    struct stat st;
    if (!s || s->lfd < 0 || lstat(s->sock_path, &st) != 0) return false;
    return S_ISSOCK(st.st_mode) && st.st_dev == s->dev && st.st_ino == s->ino;
}

void gs_grpc_server_stop(gs_grpc_server *s)
{
    if (!s) return;
    if (s->started) {
        atomic_store(&s->stopping, true);
        server_wake(s);
        pthread_join(s->thread, NULL);
        s->started = false;
    }
    if (s->lfd >= 0) {
        if (gs_grpc_server_socket_alive(s)) unlink(s->sock_path);
        close(s->lfd);
        s->lfd = -1;
    }
}

void gs_grpc_server_free(gs_grpc_server *s)
{
    if (!s) return;
    gs_grpc_server_stop(s);
    while (s->conns) server_drop_conn(s, s->conns);
    if (s->wakefd >= 0) close(s->wakefd);
    for (size_t i = 0; i < s->nroutes; i++) free(s->routes[i].path);
    free(s->routes);
    free(s->sock_path);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* ---------------------------------------------------------------- client (libcurl) */

typedef struct unary_rx {
    gs_strbuf body;
    bool too_big;
    int grpc_status; /* -1 until seen */
    gs_strbuf grpc_message;
    bool have_message;
    char ctype[128];
    bool first_only; /* stop at the first complete message (a server stream) */
    bool first_done;
} unary_rx;

static size_t unary_write(char *p, size_t size, size_t nmemb, void *ud)
{
    unary_rx *rx = ud;
    size_t n = size * nmemb;
    if (rx->body.len + n > GS_GRPC_MAX_MESSAGE + 5) {
        rx->too_big = true;
        return 0;
    }
    gs_strbuf_add(&rx->body, p, n);
    if (rx->body.oom)
        return 0;
    if (rx->first_only && rx->body.len >= 5) {
        const uint8_t *b = (const uint8_t *)rx->body.buf;
        size_t mlen = (size_t)b[1] << 24 | (size_t)b[2] << 16 | (size_t)b[3] << 8 | b[4];
        if (rx->body.len >= mlen + 5) {
            rx->body.len = mlen + 5; /* later messages are not ours */
            rx->first_done = true;
            return 0;             /* ends the transfer (CURLE_WRITE_ERROR) */
        }
    }
    return n;
}

static bool header_is(const char *line, size_t n, const char *name, const char **val, size_t *vlen)
{
    size_t k = strlen(name);
    if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':') return false;
    const char *v = line + k + 1;
    const char *e = line + n;
    while (v < e && (*v == ' ' || *v == '\t')) v++;
    while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ')) e--;
    *val = v;
    *vlen = (size_t)(e - v);
    return true;
}

static size_t unary_header(char *p, size_t size, size_t nmemb, void *ud)
{
    unary_rx *rx = ud;
    size_t n = size * nmemb;
    const char *v;
    size_t vl;
    if (header_is(p, n, "grpc-status", &v, &vl)) {
        int code = 0;
        bool ok = vl > 0 && vl < 4;
        for (size_t i = 0; ok && i < vl; i++) {
            if (v[i] < '0' || v[i] > '9') ok = false;
            else code = code * 10 + (v[i] - '0');
        }
        rx->grpc_status = ok ? code : GS_GRPC_UNKNOWN;
    } else if (header_is(p, n, "grpc-message", &v, &vl)) {
        gs_strbuf_reset(&rx->grpc_message);
        gs_grpc_percent_decode(&rx->grpc_message, v, vl);
        rx->have_message = true;
    } else if (header_is(p, n, "content-type", &v, &vl)) {
        copy_field(rx->ctype, sizeof rx->ctype, (const uint8_t *)v, vl);
    }
    return n;
}

static int grpc_call(const char *socket_path, const char *path, const uint8_t *req, size_t len,
                     long timeout_ms, bool first_only, gs_strbuf *reply, int *status,
                     gs_strbuf *status_msg, gs_error *err)
{
    if (len > GS_GRPC_MAX_MESSAGE)
        return gs_fail(err, GS_ERR_LIMIT, "gRPC %s: request of %zu bytes is over the %zu-byte limit",
                       path, len, (size_t)GS_GRPC_MAX_MESSAGE);
    CURL *h = curl_easy_init();
    if (!h) return gs_fail(err, GS_ERR_NOMEM, "gRPC %s: curl_easy_init failed", path);
    uint8_t *framed = malloc(len + 5);
    if (!framed) {
        curl_easy_cleanup(h);
        return gs_fail(err, GS_ERR_NOMEM, "gRPC %s: out of memory", path);
    }
    framed[0] = 0;
    framed[1] = (uint8_t)(len >> 24);
    framed[2] = (uint8_t)(len >> 16);
    framed[3] = (uint8_t)(len >> 8);
    framed[4] = (uint8_t)len;
    if (len) memcpy(framed + 5, req, len);
    gs_strbuf url = GS_STRBUF_INIT;
    gs_strbuf_printf(&url, "http://localhost%s", path);
    char tmo[40];
    snprintf(tmo, sizeof tmo, "grpc-timeout: %ldm", timeout_ms > 0 ? timeout_ms : 1);
    struct curl_slist *hdr = NULL, *l;
    const char *hs[] = {"content-type: application/grpc", "te: trailers", "Expect:", "Accept:", tmo};
    for (size_t i = 0; i < sizeof hs / sizeof *hs; i++) {
        if (i == 4 && timeout_ms <= 0) break;
        l = curl_slist_append(hdr, hs[i]);
        if (!l) break;
        hdr = l;
    }
    unary_rx rx = {.body = GS_STRBUF_INIT, .grpc_status = -1, .grpc_message = GS_STRBUF_INIT,
                   .first_only = first_only};
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(h, CURLOPT_URL, gs_strbuf_cstr(&url));
    curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, socket_path);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, (const char *)framed);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(len + 5));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "gpusched-grpc/0.1");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, unary_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &rx);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, unary_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &rx);
    if (timeout_ms > 0) curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    CURLcode cc = curl_easy_perform(h);
    long http = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &http);
    int rc = 0;
    if (rx.first_done && cc == CURLE_WRITE_ERROR) {
        cc = CURLE_OK; /* we ended it after the first message */
        http = 200;
        rx.grpc_status = GS_GRPC_OK;
    }
    if (rx.too_big) {
        rc = gs_fail(err, GS_ERR_LIMIT, "gRPC %s on %s: answer larger than %zu bytes", path,
                     socket_path, (size_t)GS_GRPC_MAX_MESSAGE);
    } else if (cc == CURLE_OPERATION_TIMEDOUT) {
        rc = gs_fail(err, GS_ERR_IO, "gRPC %s on %s: no answer within %ld ms", path, socket_path,
                     timeout_ms);
    } else if (cc != CURLE_OK) {
        rc = gs_fail(err, GS_ERR_IO, "gRPC %s on %s: %s", path, socket_path,
                     errbuf[0] ? errbuf : curl_easy_strerror(cc));
    } else if (http != 200) {
        rc = gs_fail(err, GS_ERR_IO, "gRPC %s on %s: HTTP status %ld", path, socket_path, http);
    } else if (strncmp(rx.ctype, "application/grpc", 16) != 0) {
        rc = gs_fail(err, GS_ERR_PARSE, "gRPC %s on %s: content-type '%s' is not application/grpc",
                     path, socket_path, rx.ctype);
    } else if (rx.grpc_status < 0) {
        rc = gs_fail(err, GS_ERR_PARSE, "gRPC %s on %s: the answer has no grpc-status", path,
                     socket_path);
    } else if (rx.grpc_status == GS_GRPC_OK) {
        const uint8_t *b = (const uint8_t *)rx.body.buf;
        size_t n = rx.body.len;
        size_t mlen = n >= 5 ? ((size_t)b[1] << 24 | (size_t)b[2] << 16 | (size_t)b[3] << 8 | b[4]) : 0;
        if (n < 5 || b[0] != 0 || mlen != n - 5)
            rc = gs_fail(err, GS_ERR_PARSE,
                         "gRPC %s on %s: the answer is not one uncompressed message (%zu bytes)",
                         path, socket_path, n);
        else if (reply)
            gs_strbuf_add(reply, (const char *)b + 5, mlen);
    }
    if (rc == 0) {
        *status = rx.grpc_status;
        if (status_msg && rx.have_message) gs_strbuf_add(status_msg, rx.grpc_message.buf, rx.grpc_message.len);
    }
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    free(framed);
    gs_strbuf_free(&url);
    gs_strbuf_free(&rx.body);
    gs_strbuf_free(&rx.grpc_message);
    return rc;
}

int gs_grpc_unary(const char *socket_path, const char *path, const uint8_t *req, size_t len,
                  long timeout_ms, gs_strbuf *reply, int *status, gs_strbuf *status_msg,
                  gs_error *err)
{
    return grpc_call(socket_path, path, req, len, timeout_ms, false, reply, status, status_msg, err);
}

int gs_grpc_stream_first(const char *socket_path, const char *path, const uint8_t *req, size_t len,
                         long timeout_ms, gs_strbuf *reply, gs_error *err)
{
    int status = -1;
    gs_strbuf msg = GS_STRBUF_INIT;
    int rc = grpc_call(socket_path, path, req, len, timeout_ms, true, reply, &status, &msg, err);
    if (rc == 0 && status != GS_GRPC_OK)
        rc = gs_fail(err, GS_ERR_IO, "gRPC %s on %s: status %d: %s", path, socket_path, status,
                     gs_strbuf_cstr(&msg));
    gs_strbuf_free(&msg);
    return rc;
}
