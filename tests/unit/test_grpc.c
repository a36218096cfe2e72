/* test_grpc.c - lib/agent/grpc.c: an in-process server driven by gs_grpc_unary and by a
 * libcurl streaming client: unary reply, a failure's status and percent-encoded message,
 * UNIMPLEMENTED, a message over the limit, a compressed message, a wrong content-type,
 * server streaming from another thread, the `closed` callback when the client goes away,
 * the bounded send queue (a client granting no flow-control window, through
 * gs_grpc_server_feed), the idle-connection timeout, the connection limit, and
 * gs_grpc_server_socket_alive after the socket is removed or replaced. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent/grpc_int.h"
#include "gpusched/grpc.h"

typedef struct fixture {
    char dir[64];
    char sock[128];
    gs_grpc_server *s;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    gs_grpc_call *kept;
    int closed;
    char authority[256];
} fixture;

static fixture *F;

static void echo(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    fixture *f = ctx;
    pthread_mutex_lock(&f->mu);
    snprintf(f->authority, sizeof f->authority, "%s", gs_grpc_call_authority(call));
    pthread_mutex_unlock(&f->mu);
    uint8_t out[256];
    size_t n = len < 200 ? len : 200;
    memcpy(out, "echo:", 5);
    memcpy(out + 5, msg, n);
    gs_grpc_reply(call, out, n + 5);
}

static const char *FAIL_MSG = "bad 100% s\xc3\xbbr\nline two";

static void failing(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    gs_grpc_fail(call, GS_GRPC_FAILED_PRECONDITION, FAIL_MSG);
}

static void silent(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len) {}

static void watch(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    fixture *f = ctx;
    pthread_mutex_lock(&f->mu);
    f->kept = call;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void on_closed(void *ctx, gs_grpc_call *call)
{
    fixture *f = ctx;
    pthread_mutex_lock(&f->mu);
    f->closed++;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/gs-grpc-test.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->sock, sizeof f->sock, "%s/dp.sock", f->dir);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    gs_error err;
    assert_int_equal(gs_grpc_server_new(f->sock, &f->s, &err), 0);
    assert_int_equal(gs_grpc_server_route(f->s, "/t.S/Echo", false, echo, f, &err), 0);
    assert_int_equal(gs_grpc_server_route(f->s, "/t.S/Fail", false, failing, f, &err), 0);
    assert_int_equal(gs_grpc_server_route(f->s, "/t.S/Silent", false, silent, f, &err), 0);
    assert_int_equal(gs_grpc_server_route(f->s, "/t.S/Watch", true, watch, f, &err), 0);
    assert_int_not_equal(gs_grpc_server_route(f->s, "/t.S/Echo", false, echo, f, &err), 0);
    gs_grpc_server_on_closed(f->s, on_closed, f);
    gs_grpc_server_set_idle_timeout(f->s, 300);
    assert_int_equal(gs_grpc_server_start(f->s, &err), 0);
    F = f;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    gs_grpc_server_free(f->s);
    unlink(f->sock);
    rmdir(f->dir);
    free(f);
    return 0;
}

static void unary_ok(void **state)
{
    fixture *f = *state;
    gs_strbuf reply = GS_STRBUF_INIT, msg = GS_STRBUF_INIT;
    int status = -1;
    gs_error err;
    int rc = gs_grpc_unary(f->sock, "/t.S/Echo", (const uint8_t *)"hello", 5, 5000, &reply, &status,
                           &msg, &err);
    if (rc != 0) fail_msg("%s", err.msg);
    assert_int_equal(status, 0);
    assert_int_equal(reply.len, 10);
    assert_memory_equal(reply.buf, "echo:hello", 10);
    assert_string_equal(f->authority, "localhost");
    /* an empty message (protobuf Empty) */
    gs_strbuf_reset(&reply);
    assert_int_equal(gs_grpc_unary(f->sock, "/t.S/Echo", NULL, 0, 5000, &reply, &status, NULL, &err), 0);
    assert_int_equal(status, 0);
    assert_int_equal(reply.len, 5);
    gs_strbuf_free(&reply);
    gs_strbuf_free(&msg);
}

static void unary_fail_message(void **state)
{
    fixture *f = *state;
    gs_strbuf reply = GS_STRBUF_INIT, msg = GS_STRBUF_INIT;
    int status = -1;
    gs_error err;
    assert_int_equal(gs_grpc_unary(f->sock, "/t.S/Fail", NULL, 0, 5000, &reply, &status, &msg, &err), 0);
    assert_int_equal(status, GS_GRPC_FAILED_PRECONDITION);
    assert_string_equal(gs_strbuf_cstr(&msg), FAIL_MSG);
    assert_int_equal(reply.len, 0);
    /* a handler that does not answer: UNKNOWN */
    gs_strbuf_reset(&msg);
    assert_int_equal(gs_grpc_unary(f->sock, "/t.S/Silent", NULL, 0, 5000, &reply, &status, &msg, &err), 0);
    assert_int_equal(status, GS_GRPC_UNKNOWN);
    gs_strbuf_free(&reply);
    gs_strbuf_free(&msg);
}

static void percent_coding(void **state)
{
    gs_strbuf e = GS_STRBUF_INIT, d = GS_STRBUF_INIT;
    gs_grpc_percent_encode(&e, "a 100% \xc3\xa9\x01~");
    assert_string_equal(gs_strbuf_cstr(&e), "a 100%25 %C3%A9%01~");
    gs_grpc_percent_decode(&d, e.buf, e.len);
    assert_string_equal(gs_strbuf_cstr(&d), "a 100% \xc3\xa9\x01~");
    gs_strbuf_reset(&d);
    gs_grpc_percent_decode(&d, "50%zz%4", 7); /* malformed escapes kept */
    assert_string_equal(gs_strbuf_cstr(&d), "50%zz%4");
    gs_strbuf_free(&e);
    gs_strbuf_free(&d);
}

static void unimplemented(void **state)
{
    fixture *f = *state;
    gs_strbuf msg = GS_STRBUF_INIT;
    int status = -1;
    gs_error err;
    assert_int_equal(gs_grpc_unary(f->sock, "/v1beta1.DevicePlugin/PreStartContainer", NULL, 0, 5000,
                                   NULL, &status, &msg, &err), 0);
    assert_int_equal(status, GS_GRPC_UNIMPLEMENTED);
    assert_non_null(strstr(gs_strbuf_cstr(&msg), "PreStartContainer"));
    gs_strbuf_free(&msg);
}

/* ---- a raw libcurl client: any body, any content-type, reads a stream message by message */
typedef struct raw {
    gs_strbuf body;
    int grpc_status;
    size_t abort_after; /* messages; 0: read all */
    char sock[128], path[128], ctype[64];
    const char *method; /* NULL: POST */
    const uint8_t *req;
    size_t req_len;
    long http;
    CURLcode cc;
} raw;

static size_t raw_write(char *p, size_t size, size_t nmemb, void *ud)
{
    raw *r = ud;
    gs_strbuf_add(&r->body, p, size * nmemb);
    if (r->abort_after) {
        size_t msgs = 0, off = 0;
        const uint8_t *b = (const uint8_t *)r->body.buf;
        while (off + 5 <= r->body.len) {
            size_t l = (size_t)b[off + 1] << 24 | (size_t)b[off + 2] << 16 | (size_t)b[off + 3] << 8 | b[off + 4];
            if (off + 5 + l > r->body.len) break;
            off += 5 + l;
            msgs++;
        }
        if (msgs >= r->abort_after) return 0;
    }
    return size * nmemb;
}

static size_t raw_header(char *p, size_t size, size_t nmemb, void *ud)
{
    raw *r = ud;
    if (strncmp(p, "grpc-status:", 12) == 0) r->grpc_status = atoi(p + 12);
    return size * nmemb;
}

static void *raw_run(void *arg)
{
    raw *r = arg;
    CURL *h = curl_easy_init();
    char url[200], ct[100];
    snprintf(url, sizeof url, "http://localhost%s", r->path);
    snprintf(ct, sizeof ct, "content-type: %s", r->ctype);
    struct curl_slist *hdr = curl_slist_append(NULL, ct);
    hdr = curl_slist_append(hdr, "te: trailers");
    r->grpc_status = -1;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, r->sock);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, (const char *)r->req);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->req_len);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, raw_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, raw_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (r->method) curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r->method);
    r->cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->http);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    return NULL;
}

static raw *raw_new(const char *sock, const char *path, const char *ctype, const uint8_t *req, size_t len)
{
    raw *r = calloc(1, sizeof *r);
    snprintf(r->sock, sizeof r->sock, "%s", sock);
    snprintf(r->path, sizeof r->path, "%s", path);
    snprintf(r->ctype, sizeof r->ctype, "%s", ctype);
    r->req = req;
    r->req_len = len;
    return r;
}

static void raw_free(raw *r)
{
    gs_strbuf_free(&r->body);
    free(r);
}

static size_t count_messages(const gs_strbuf *b, size_t *bad)
{
    size_t off = 0, n = 0;
    const uint8_t *p = (const uint8_t *)b->buf;
    while (off + 5 <= b->len) {
        size_t l = (size_t)p[off + 1] << 24 | (size_t)p[off + 2] << 16 | (size_t)p[off + 3] << 8 | p[off + 4];
        off += 5 + l;
        n++;
    }
    *bad = off != b->len;
    return n;
}

static void too_big(void **state)
{
    fixture *f = *state;
    size_t len = GS_GRPC_MAX_MESSAGE + 1;
    uint8_t *req = calloc(1, len + 5);
    req[1] = (uint8_t)(len >> 24);
    req[2] = (uint8_t)(len >> 16);
    req[3] = (uint8_t)(len >> 8);
    req[4] = (uint8_t)len;
    raw *r = raw_new(f->sock, "/t.S/Echo", "application/grpc", req, len + 5);
    raw_run(r);
    assert_int_equal(r->cc, CURLE_OK);
    assert_int_equal(r->http, 200);
    assert_int_equal(r->grpc_status, GS_GRPC_RESOURCE_EXHAUSTED);
    raw_free(r);
    /* the client side refuses it before sending */
    gs_error err;
    int status;
    assert_int_equal(gs_grpc_unary(f->sock, "/t.S/Echo", req, len, 5000, NULL, &status, NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_LIMIT);
    /* the exact limit passes */
    gs_strbuf reply = GS_STRBUF_INIT;
    assert_int_equal(gs_grpc_unary(f->sock, "/t.S/Echo", req, len - 1, 10000, &reply, &status, NULL, &err), 0);
    assert_int_equal(status, 0);
    gs_strbuf_free(&reply);
    free(req);
}

static void bad_requests(void **state)
{
    fixture *f = *state;
    static const uint8_t compressed[] = {1, 0, 0, 0, 1, 'x'};
    raw *r = raw_new(f->sock, "/t.S/Echo", "application/grpc", compressed, sizeof compressed);
    raw_run(r);
    assert_int_equal(r->grpc_status, GS_GRPC_INTERNAL);
    raw_free(r);
    static const uint8_t two[] = {0, 0, 0, 0, 1, 'x', 0, 0, 0, 0, 0};
    r = raw_new(f->sock, "/t.S/Echo", "application/grpc+proto", two, sizeof two);
    raw_run(r);
    assert_int_equal(r->grpc_status, GS_GRPC_INTERNAL);
    raw_free(r);
    static const uint8_t ok[] = {0, 0, 0, 0, 1, 'x'};
    r = raw_new(f->sock, "/t.S/Echo", "application/grpc+proto", ok, sizeof ok);
    raw_run(r);
    assert_int_equal(r->grpc_status, 0);
    raw_free(r);
    r = raw_new(f->sock, "/t.S/Echo", "application/json", ok, sizeof ok);
    raw_run(r);
    assert_int_equal(r->http, 415);
    assert_int_equal(r->grpc_status, -1);
    raw_free(r);
    r = raw_new(f->sock, "/t.S/Echo", "application/grpc", ok, sizeof ok);
    r->method = "PUT";
    raw_run(r);
    assert_int_equal(r->http, 405);
    assert_int_equal(r->grpc_status, -1);
    raw_free(r);
    /* a truncated message */
    static const uint8_t cut[] = {0, 0, 0, 0, 9, 'x'};
    r = raw_new(f->sock, "/t.S/Echo", "application/grpc", cut, sizeof cut);
    raw_run(r);
    assert_int_equal(r->grpc_status, GS_GRPC_INTERNAL);
    raw_free(r);
}

static int wait_for(fixture *f, gs_grpc_call **kept, int closed_at_least)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    int rc = 0;
    pthread_mutex_lock(&f->mu);
    while (rc == 0 && (kept ? f->kept == NULL : f->closed < closed_at_least))
        rc = pthread_cond_timedwait(&f->cv, &f->mu, &ts);
    if (kept) {
        *kept = f->kept;
        f->kept = NULL;
    }
    pthread_mutex_unlock(&f->mu);
    return rc;
}

static void streaming(void **state)
{
    fixture *f = *state;
    static const uint8_t empty[] = {0, 0, 0, 0, 0};
    raw *r = raw_new(f->sock, "/t.S/Watch", "application/grpc", empty, sizeof empty);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, raw_run, r), 0);
    gs_grpc_call *call = NULL;
    assert_int_equal(wait_for(f, &call, 0), 0);
    assert_int_equal(gs_grpc_send(call, (const uint8_t *)"one", 3), 0);
    assert_int_equal(gs_grpc_send(call, (const uint8_t *)"two", 3), 0);
    assert_int_equal(gs_grpc_send(call, (const uint8_t *)"three", 5), 0);
    assert_int_equal(gs_grpc_finish(call, GS_GRPC_OK, NULL), 0);
    assert_int_equal(gs_grpc_send(call, (const uint8_t *)"late", 4), -1);
    pthread_join(th, NULL);
    assert_int_equal(r->cc, CURLE_OK);
    assert_int_equal(r->grpc_status, 0);
    size_t bad;
    assert_int_equal(count_messages(&r->body, &bad), 3);
    assert_false(bad);
    assert_memory_equal(r->body.buf + 5, "one", 3);
    assert_memory_equal(r->body.buf + r->body.len - 5, "three", 5);
    gs_grpc_call_release(call);
    pthread_mutex_lock(&f->mu);
    assert_int_equal(f->closed, 0); /* finished by us: no closed callback */
    pthread_mutex_unlock(&f->mu);
    raw_free(r);
}

static void client_goes_away(void **state)
{
    fixture *f = *state;
    static const uint8_t empty[] = {0, 0, 0, 0, 0};
    raw *r = raw_new(f->sock, "/t.S/Watch", "application/grpc", empty, sizeof empty);
    r->abort_after = 1;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, raw_run, r), 0);
    gs_grpc_call *call = NULL;
    assert_int_equal(wait_for(f, &call, 0), 0);
    assert_int_equal(gs_grpc_send(call, (const uint8_t *)"devices", 7), 0);
    pthread_join(th, NULL);
    assert_int_equal(r->cc, CURLE_WRITE_ERROR);
    assert_int_equal(wait_for(f, NULL, 1), 0);
    assert_int_equal(gs_grpc_send(call, (const uint8_t *)"more", 4), -1);
    assert_int_equal(gs_grpc_finish(call, GS_GRPC_OK, NULL), -1);
    gs_grpc_call_release(call);
    pthread_mutex_lock(&f->mu);
    assert_int_equal(f->closed, 1);
    pthread_mutex_unlock(&f->mu);
    raw_free(r);
}

/* ---- bytes of a client connection, made by an nghttp2 client session */
static ssize_t cap_send(nghttp2_session *ses, const uint8_t *data, size_t len, int flags, void *ud)
{
    gs_strbuf_add(ud, (const char *)data, len);
    return (ssize_t)len;
}

typedef struct body_src {
    const uint8_t *p;
    size_t n, off;
} body_src;

static ssize_t body_read(nghttp2_session *ses, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                         nghttp2_data_source *src, void *ud)
{
    body_src *b = src->ptr;
    size_t take = b->n - b->off < len ? b->n - b->off : len;
    memcpy(buf, b->p + b->off, take);
    b->off += take;
    if (b->off == b->n) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)take;
}

#define NV(n, v) {(uint8_t *)(n), (uint8_t *)(v), strlen(n), strlen(v), NGHTTP2_NV_FLAG_NONE}

static void client_bytes(gs_strbuf *out, const char *path, const char *authority, uint32_t window)
{
    nghttp2_session_callbacks *cb;
    nghttp2_session *ses;
    assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
    nghttp2_session_callbacks_set_send_callback(cb, cap_send);
    assert_int_equal(nghttp2_session_client_new(&ses, cb, out), 0);
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, window}};
    nghttp2_submit_settings(ses, NGHTTP2_FLAG_NONE, iv, 1);
    nghttp2_nv h[] = {NV(":method", "POST"), NV(":scheme", "http"), NV(":path", path),
                      NV(":authority", authority), NV("content-type", "application/grpc"),
                      NV("te", "trailers")};
    static const uint8_t empty[] = {0, 0, 0, 0, 0};
    body_src b = {empty, sizeof empty, 0};
    nghttp2_data_provider dp = {.source.ptr = &b, .read_callback = body_read};
    assert_true(nghttp2_submit_request(ses, NULL, h, 6, &dp, NULL) > 0);
    assert_int_equal(nghttp2_session_send(ses), 0);
    nghttp2_session_del(ses);
    nghttp2_session_callbacks_del(cb);
}

typedef struct flood {
    int count;
    size_t dropped;
    int closed;
    char authority[128];
} flood;

static void flood_watch(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    flood *fl = ctx;
    snprintf(fl->authority, sizeof fl->authority, "%s", gs_grpc_call_authority(call));
    uint8_t list[1000];
    memset(list, 'd', sizeof list);
    for (int i = 0; i < fl->count; i++) assert_int_equal(gs_grpc_send(call, list, sizeof list), 0);
    fl->dropped = gs_grpc_call_dropped(call);
}

static void flood_closed(void *ctx, gs_grpc_call *call)
{
    flood *fl = ctx;
    fl->closed++;
    gs_grpc_call_release(call);
}

static void bounded_queue_and_authority(void **state)
{
    fixture *f = *state;
    char sock[160];
    snprintf(sock, sizeof sock, "%s/feed.sock", f->dir);
    gs_grpc_server *s;
    gs_error err;
    assert_int_equal(gs_grpc_server_new(sock, &s, &err), 0);
    flood fl = {.count = 20};
    assert_int_equal(gs_grpc_server_route(s, "/v1beta1.DevicePlugin/ListAndWatch", true, flood_watch, &fl, &err), 0);
    gs_grpc_server_on_closed(s, flood_closed, &fl);
    /* a reader granting no window: 20 lists sent, 8 kept, 12 dropped; the socket path as
     * :authority (kubelet < 1.26) is accepted */
    gs_strbuf in = GS_STRBUF_INIT;
    client_bytes(&in, "/v1beta1.DevicePlugin/ListAndWatch", "/var/lib/kubelet/device-plugins/gs.sock", 0);
    long sent = gs_grpc_server_feed(s, (const uint8_t *)in.buf, in.len);
    assert_true(sent > 0);
    assert_true(sent < 1000); /* SETTINGS, HEADERS: no data went out */
    assert_int_equal(fl.dropped, 12);
    assert_int_equal(fl.closed, 1);
    assert_string_equal(fl.authority, "/var/lib/kubelet/device-plugins/gs.sock");
    /* with a window, all 8 go out (and the trailers-free stream is closed at the end) */
    fl.count = 8;
    gs_strbuf_reset(&in);
    client_bytes(&in, "/v1beta1.DevicePlugin/ListAndWatch", "localhost", 65535);
    sent = gs_grpc_server_feed(s, (const uint8_t *)in.buf, in.len);
    assert_true(sent > 8 * 1005);
    assert_int_equal(fl.dropped, 0);
    assert_int_equal(fl.closed, 2);
    gs_strbuf_free(&in);
    gs_grpc_server_free(s);
}

static int raw_connect(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

/* Reads until EOF within ms: 1 when the server closed, 0 when it did not. */
static int closed_within(int fd, int ms)
{
    char buf[512];
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, ms) <= 0) return 0;
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return 1;
    }
}

static void idle_and_limits(void **state)
{
    fixture *f = *state;
    /* an idle connection (no preface) is dropped after the idle timeout (300 ms here) */
    int fd = raw_connect(f->sock);
    assert_int_equal(closed_within(fd, 3000), 1);
    close(fd);
    /* GS_GRPC_MAX_CONNS connections, then one more: that one is closed at once */
    int fds[GS_GRPC_MAX_CONNS];
    for (int i = 0; i < GS_GRPC_MAX_CONNS; i++) fds[i] = raw_connect(f->sock);
    usleep(100000);
    int extra = raw_connect(f->sock);
    assert_int_equal(closed_within(extra, 200), 1);
    close(extra);
    for (int i = 0; i < GS_GRPC_MAX_CONNS; i++) close(fds[i]);
    /* the server still answers */
    usleep(100000);
    int status = -1;
    gs_error err;
    assert_int_equal(gs_grpc_unary(f->sock, "/t.S/Echo", NULL, 0, 5000, NULL, &status, NULL, &err), 0);
    assert_int_equal(status, 0);
}

static void client_errors(void **state)
{
    fixture *f = *state;
    char nosock[160];
    snprintf(nosock, sizeof nosock, "%s/none.sock", f->dir);
    int status;
    gs_error err;
    assert_int_equal(gs_grpc_unary(nosock, "/t.S/Echo", NULL, 0, 1000, NULL, &status, NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_IO);
    assert_non_null(strstr(err.msg, "none.sock"));
    /* a server that never answers: the timeout holds */
    char slow[100];
    snprintf(slow, sizeof slow, "%s/slow.sock", f->dir);
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", slow);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(lfd, 4), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(gs_grpc_unary(slow, "/t.S/Echo", NULL, 0, 300, NULL, &status, NULL, &err), -1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    assert_true(ms >= 250 && ms < 3000);
    assert_non_null(strstr(err.msg, "300 ms"));
    close(lfd);
    unlink(slow);
}

static void socket_alive(void **state)
{
    fixture *f = *state;
    assert_true(gs_grpc_server_socket_alive(f->s));
    /* removed (kubelet restart) */
    assert_int_equal(unlink(f->sock), 0);
    assert_false(gs_grpc_server_socket_alive(f->s));
    /* replaced by another socket at the same path */
    gs_grpc_server *other;
    gs_error err;
    assert_int_equal(gs_grpc_server_new(f->sock, &other, &err), 0);
    assert_false(gs_grpc_server_socket_alive(f->s));
    assert_true(gs_grpc_server_socket_alive(other));
    gs_grpc_server_free(other); /* removes its own socket */
    assert_int_equal(access(f->sock, F_OK), -1);
    /* a regular file at the path is not replaced */
    FILE *fp = fopen(f->sock, "w");
    fclose(fp);
    assert_int_equal(gs_grpc_server_new(f->sock, &other, &err), -1);
    assert_non_null(strstr(err.msg, "not a socket"));
    unlink(f->sock);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(percent_coding),
        cmocka_unit_test_setup_teardown(unary_ok, setup, teardown),
        cmocka_unit_test_setup_teardown(unary_fail_message, setup, teardown),
        cmocka_unit_test_setup_teardown(unimplemented, setup, teardown),
        cmocka_unit_test_setup_teardown(too_big, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(streaming, setup, teardown),
        cmocka_unit_test_setup_teardown(client_goes_away, setup, teardown),
        cmocka_unit_test_setup_teardown(bounded_queue_and_authority, setup, teardown),
        cmocka_unit_test_setup_teardown(idle_and_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(client_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(socket_alive, setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
