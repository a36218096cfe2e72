/*
 * ttrpc.c - ttrpc client and server over NRI's connection multiplexer (ttrpc_int.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/ttrpc_int.h"
#include "ttrpc/request.pb-c.h"

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ================================================================ decoder */

void gs_mux_decoder_init(gs_mux_decoder *d, size_t max_msg)
{
    memset(d, 0, sizeof *d);
    d->max_msg = max_msg ? max_msg : GS_TTRPC_MAX_MSG;
}

void gs_mux_decoder_free(gs_mux_decoder *d)
{
    for (int i = 0; i < 2; i++)
        free(d->conn[i].buf);
    memset(d->conn, 0, sizeof d->conn);
}

/* Deliver the complete ttrpc messages at the front of b; keep the rest. */
static int drain(gs_mux_decoder *d, uint32_t conn, gs_mux_buf *b, gs_ttrpc_msg_fn fn, void *ud, gs_error *err)
{
    size_t off = 0;
    int rc = 0;
    while (b->len - off >= GS_TTRPC_HDR) {
        const uint8_t *h = b->buf + off;
        uint32_t len = rd32(h);
        if (len > d->max_msg) {
            rc = gs_fail(err, GS_ERR_LIMIT, "ttrpc message of %u bytes on connection %u, the limit is %zu", len, conn,
                         d->max_msg);
            break;
        }
        if (b->len - off - GS_TTRPC_HDR < len)
            break;
        gs_ttrpc_msg m = {.conn = conn, .stream = rd32(h + 4), .type = h[8], .flags = h[9],
                          .data = h + GS_TTRPC_HDR, .len = len};
        d->messages++;
        off += GS_TTRPC_HDR + len;
        if (fn && fn(ud, &m, err) < 0) {
            rc = -1;
            break;
        }
    }
    if (off) {
        memmove(b->buf, b->buf + off, b->len - off);
        b->len -= off;
    }
    return rc;
}

int gs_mux_feed(gs_mux_decoder *d, const uint8_t *data, size_t n, gs_ttrpc_msg_fn fn, void *ud, gs_error *err)
{
    while (n) {
        if (d->frame_left == 0 && d->hdr_have < GS_MUX_HDR) {
            size_t k = GS_MUX_HDR - d->hdr_have < n ? GS_MUX_HDR - d->hdr_have : n;
            memcpy(d->hdr + d->hdr_have, data, k);
            d->hdr_have += k;
            data += k;
            n -= k;
            if (d->hdr_have < GS_MUX_HDR)
                return 0;
            d->frame_conn = rd32(d->hdr);
            uint32_t flen = rd32(d->hdr + 4);
            if (flen > GS_MUX_MAX_FRAME)
                return gs_fail(err, GS_ERR_LIMIT, "multiplexer frame of %u bytes on connection %u, the limit is %u",
                               flen, d->frame_conn, (unsigned)GS_MUX_MAX_FRAME);
            d->frames++;
            d->frame_left = flen;
            d->hdr_have = 0;
            if (flen == 0)
                continue;
            if (d->frame_conn != GS_MUX_CONN_PLUGIN && d->frame_conn != GS_MUX_CONN_RUNTIME)
                d->dropped++;
        }
        if (d->frame_left == 0)
            continue;
        size_t k = d->frame_left < n ? d->frame_left : n;
        if (d->frame_conn == GS_MUX_CONN_PLUGIN || d->frame_conn == GS_MUX_CONN_RUNTIME) {
            gs_mux_buf *b = &d->conn[d->frame_conn - 1];
            size_t limit = GS_TTRPC_HDR + d->max_msg;
            size_t done = 0;
            while (done < k) {
                size_t room = limit - b->len;
                if (room == 0)
                    return gs_fail(err, GS_ERR_INTERNAL, "ttrpc buffer of connection %u full", d->frame_conn);
                size_t c = k - done < room ? k - done : room;
                if (b->len + c > b->cap) {
                    size_t cap = b->cap ? b->cap : 4096;
                    while (cap < b->len + c)
                        cap *= 2;
                    if (cap > limit)
                        cap = limit;
                    uint8_t *nb = realloc(b->buf, cap);
                    if (!nb)
                        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
                    b->buf = nb;
                    b->cap = cap;
                }
                memcpy(b->buf + b->len, data + done, c);
                b->len += c;
                done += c;
                if (drain(d, d->frame_conn, b, fn, ud, err) < 0)
                    return -1;
            }
        }
        data += k;
        n -= k;
        d->frame_left -= k;
    }
    return 0;
}

int gs_ttrpc_encode(uint8_t **out, size_t *out_len, size_t *out_cap, uint32_t conn, uint32_t stream, uint8_t type,
                    uint8_t flags, const uint8_t *payload, size_t len)
{
    if (len > GS_TTRPC_MAX_MSG)
        return -1;
    size_t total = GS_TTRPC_HDR + len;
    size_t nframes = (total + GS_MUX_SEND_FRAME - 1) / GS_MUX_SEND_FRAME;
    size_t need = *out_len + total + nframes * GS_MUX_HDR;
    if (need > *out_cap) {
        size_t cap = *out_cap ? *out_cap : 256;
        while (cap < need)
            cap *= 2;
        uint8_t *nb = realloc(*out, cap);
        if (!nb)
            return -1;
        *out = nb;
        *out_cap = cap;
    }
    uint8_t hdr[GS_TTRPC_HDR];
    wr32(hdr, (uint32_t)len);
    wr32(hdr + 4, stream);
    hdr[8] = type;
    hdr[9] = flags;
    size_t pos = 0; /* position in hdr+payload */
    while (pos < total) {
        size_t f = total - pos < GS_MUX_SEND_FRAME ? total - pos : GS_MUX_SEND_FRAME;
        uint8_t *o = *out + *out_len;
        wr32(o, conn);
        wr32(o + 4, (uint32_t)f);
        o += GS_MUX_HDR;
        for (size_t i = 0; i < f; i++, pos++)
            o[i] = pos < GS_TTRPC_HDR ? hdr[pos] : payload[pos - GS_TTRPC_HDR];
        *out_len += GS_MUX_HDR + f;
    }
    return 0;
}

/* ================================================================ connection */

void gs_ttrpc_conn_init(gs_ttrpc_conn *c, int fd, int wake_fd, gs_ttrpc_handler h, void *ud)
{
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->wake_fd = wake_fd;
    c->handler = h;
    c->ud = ud;
    c->next_stream = 1;
    c->write_timeout_ms = 5000;
    gs_mux_decoder_init(&c->dec, 0);
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void gs_ttrpc_conn_close(gs_ttrpc_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    gs_mux_decoder_free(&c->dec);
    free(c->got_payload);
    c->got_payload = NULL;
}

static int write_all(gs_ttrpc_conn *c, const uint8_t *p, size_t n, gs_error *err)
{
    int64_t deadline = mono_ms() + c->write_timeout_ms;
    while (n) {
        ssize_t w = write(c->fd, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int64_t left = deadline - mono_ms();
            if (left <= 0)
                return gs_fail(err, GS_ERR_IO, "writing to the runtime timed out after %ld ms", c->write_timeout_ms);
            struct pollfd pf = {.fd = c->fd, .events = POLLOUT};
            (void)poll(&pf, 1, (int)left);
            continue;
        }
        return gs_fail(err, GS_ERR_IO, "writing to the runtime: %s", w < 0 ? strerror(errno) : "short write");
    }
    return 0;
}

static int send_msg(gs_ttrpc_conn *c, uint32_t conn, uint32_t stream, uint8_t type, uint8_t flags, const uint8_t *p,
                    size_t n, gs_error *err)
{
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    if (gs_ttrpc_encode(&buf, &len, &cap, conn, stream, type, flags, p, n) < 0) {
        free(buf);
        return gs_fail(err, GS_ERR_LIMIT, "ttrpc message of %zu bytes is over the limit (or out of memory)", n);
    }
    int rc = write_all(c, buf, len, err);
    free(buf);
    return rc;
}

static int reply(gs_ttrpc_conn *c, uint32_t stream, int code, const char *message, const uint8_t *payload, size_t len,
                 gs_error *err)
{
    Ttrpc__Status st = TTRPC__STATUS__INIT;
    st.code = code;
    st.message = (char *)(message ? message : "");
    Ttrpc__Response r = TTRPC__RESPONSE__INIT;
    r.status = &st;
    r.payload.data = (uint8_t *)payload;
    r.payload.len = payload ? len : 0;
    size_t n = ttrpc__response__get_packed_size(&r);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    ttrpc__response__pack(&r, buf);
    int rc = send_msg(c, GS_MUX_CONN_PLUGIN, stream, GS_TTRPC_RESPONSE, 0, buf, n, err);
    free(buf);
    return rc;
}

static int on_msg(void *ud, const gs_ttrpc_msg *m, gs_error *err)
{
    gs_ttrpc_conn *c = ud;
    if (m->conn == GS_MUX_CONN_PLUGIN && m->type == GS_TTRPC_REQUEST) {
        if (m->stream % 2 != 1)
            return reply(c, m->stream, GS_TTRPC_INVALID_ARGUMENT, "StreamID must be odd for client initiated streams",
                         NULL, 0, err);
        Ttrpc__Request *rq = ttrpc__request__unpack(NULL, m->len, m->data);
        if (!rq)
            return reply(c, m->stream, GS_TTRPC_INVALID_ARGUMENT, "cannot decode the ttrpc request", NULL, 0, err);
        gs_ttrpc_request req = {.service = rq->service, .method = rq->method, .payload = rq->payload.data,
                                .len = rq->payload.len, .timeout_nano = rq->timeout_nano};
        gs_ttrpc_reply rep;
        memset(&rep, 0, sizeof rep);
        if (c->handler)
            c->handler(c->ud, &req, &rep);
        else {
            rep.code = GS_TTRPC_UNIMPLEMENTED;
            snprintf(rep.message, sizeof rep.message, "no handler");
        }
        c->served++;
        ttrpc__request__free_unpacked(rq, NULL);
        int rc = reply(c, m->stream, rep.code, rep.code ? rep.message : "", rep.code ? NULL : rep.payload,
                       rep.len, err);
        free(rep.payload);
        return rc;
    }
    if (m->conn == GS_MUX_CONN_RUNTIME && m->type == GS_TTRPC_RESPONSE) {
        if (m->stream != c->want_stream || c->got)
            return 0; /* a late answer to a call that timed out */
        Ttrpc__Response *r = ttrpc__response__unpack(NULL, m->len, m->data);
        c->got = true;
        free(c->got_payload);
        c->got_payload = NULL;
        c->got_len = 0;
        if (!r) {
            c->got_code = GS_TTRPC_INTERNAL;
            snprintf(c->got_msg, sizeof c->got_msg, "cannot decode the ttrpc response");
            return 0;
        }
        c->got_code = r->status ? r->status->code : 0;
        snprintf(c->got_msg, sizeof c->got_msg, "%s", r->status && r->status->message ? r->status->message : "");
        if (r->payload.len) {
            c->got_payload = malloc(r->payload.len);
            if (c->got_payload) {
                memcpy(c->got_payload, r->payload.data, r->payload.len);
                c->got_len = r->payload.len;
            }
        }
        ttrpc__response__free_unpacked(r, NULL);
        return 0;
    }
    return 0; /* data messages (streams) and requests on the runtime's side: not used by NRI */
}

int gs_ttrpc_conn_feed(gs_ttrpc_conn *c, const uint8_t *data, size_t n, gs_error *err)
{
    return gs_mux_feed(&c->dec, data, n, on_msg, c, err);
}

int gs_ttrpc_pump(gs_ttrpc_conn *c, long timeout_ms, gs_error *err)
{
    struct pollfd pf[2] = {{.fd = c->fd, .events = POLLIN}, {.fd = c->wake_fd, .events = POLLIN}};
    int r = poll(pf, c->wake_fd >= 0 ? 2 : 1, (int)(timeout_ms < 0 ? 0 : timeout_ms));
    if (r < 0)
        return errno == EINTR ? 0 : gs_fail(err, GS_ERR_IO, "poll: %s", strerror(errno));
    if (r == 0)
        return 0;
    if (c->wake_fd >= 0 && (pf[1].revents & POLLIN))
        return 1;
    if (!(pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
        return 0;
    uint8_t buf[65536];
    for (int round = 0; round < 64; round++) {
        ssize_t n = read(c->fd, buf, sizeof buf);
        if (n > 0) {
            if (gs_ttrpc_conn_feed(c, buf, (size_t)n, err) < 0)
                return -1;
            continue;
        }
        if (n == 0)
            return gs_fail(err, GS_ERR_IO, "connection closed by the runtime");
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        if (errno == ECONNRESET)
            return gs_fail(err, GS_ERR_IO, "connection closed by the runtime (reset)");
        return gs_fail(err, GS_ERR_IO, "reading from the runtime: %s", strerror(errno));
    }
    return 0;
}

int gs_ttrpc_call(gs_ttrpc_conn *c, const char *service, const char *method, const uint8_t *req, size_t len,
                  long timeout_ms, uint8_t **resp, size_t *resp_len, gs_error *err)
{
    *resp = NULL;
    *resp_len = 0;
    Ttrpc__Request r = TTRPC__REQUEST__INIT;
    r.service = (char *)service;
    r.method = (char *)method;
    r.payload.data = (uint8_t *)req;
    r.payload.len = req ? len : 0;
    r.timeout_nano = (int64_t)timeout_ms * 1000000;
    size_t n = ttrpc__request__get_packed_size(&r);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    ttrpc__request__pack(&r, buf);
    uint32_t stream = c->next_stream;
    c->next_stream += 2;
    c->want_stream = stream;
    c->got = false;
    int rc = send_msg(c, GS_MUX_CONN_RUNTIME, stream, GS_TTRPC_REQUEST, GS_TTRPC_FLAG_REMOTE_CLOSED, buf, n, err);
    free(buf);
    if (rc < 0)
        return -1;
    int64_t deadline = mono_ms() + timeout_ms;
    while (!c->got) {
        int64_t left = deadline - mono_ms();
        if (left <= 0)
            return gs_fail(err, GS_ERR_IO, "%s/%s timed out after %ld ms", service, method, timeout_ms);
        int p = gs_ttrpc_pump(c, (long)left, err);
        if (p < 0)
            return -1;
        if (p == 1)
            return gs_fail(err, GS_ERR_IO, "%s/%s interrupted: stopping", service, method);
    }
    c->want_stream = 0;
    if (c->got_code != 0)
        return gs_fail(err, GS_ERR_INVALID, "%s/%s: code %d: %s", service, method, c->got_code, c->got_msg);
    *resp = c->got_payload;
    *resp_len = c->got_len;
    c->got_payload = NULL;
    c->got_len = 0;
    return 0;
}
