/*
 * client.c - the request layer over libcurl: one easy handle per client (connections and
 * TLS sessions reused), HTTP/2 over TLS when the server offers it, gzip unless the cluster
 * disables compression, the credential of gs_live_credentials on every request.
 *
 * Certificates: libcurl 7.88 takes PEM blobs from memory only with some TLS backends
 * (CURLOPT_SSLCERT_BLOB: OpenSSL, Schannel, Secure Transport, mbedTLS; not GnuTLS, which
 * is Debian's libcurl4-gnutls-dev). With OpenSSL the blobs are used; with any other
 * backend the CA bundle, certificate and key are written to a private directory
 * (mkdtemp, 0700; files 0600) removed when the client is freed.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdint.h>
#include <time.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpusched/live.h"
#include "live/live_int.h"

#define LIST_MAX_RELISTS 3

struct gs_live_client {
    gs_live_config *cfg;
    CURL *h;
    gs_live_client_opts o;
    bool blobs;              /* the TLS backend takes PEM from memory */
    char tmpdir[256];        /* "" until needed */
    uint64_t cert_generation; /* credential generation the cert files were written for */
    uint64_t sent_generation; /* credential generation of the last request */
    bool cert_written;
    char errbuf[CURL_ERROR_SIZE];
    const volatile int *stop; /* gs_live_client_set_stop */
    gs_live_client_stats stats;
    uint64_t rng;            /* jitter */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;
static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

static int write_secret(gs_live_client *c, const char *name, const char *data, size_t len,
                        char *path, size_t cap, gs_error *err)
{
    if (!c->tmpdir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(c->tmpdir, sizeof c->tmpdir, "%s/gpusched-live-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(c->tmpdir)) {
            c->tmpdir[0] = '\0';
            return gs_fail(err, GS_ERR_IO, "cannot create a private directory for TLS material: %s",
                           strerror(errno));
        }
    }
    snprintf(path, cap, "%s/%s", c->tmpdir, name);
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return gs_fail(err, GS_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            return gs_fail(err, GS_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        }
        off += (size_t)w;
    }
    close(fd);
    return 0;
}

static void remove_secrets(gs_live_client *c)
{
    if (!c->tmpdir[0])
        return;
    static const char *const names[] = {"ca.crt", "client.crt", "client.key"};
    char p[300];
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", c->tmpdir, names[i]);
        unlink(p);
    }
    rmdir(c->tmpdir);
    c->tmpdir[0] = '\0';
}

static int set_blob(CURL *h, CURLoption opt, const char *data, size_t len)
{
    struct curl_blob b = {(void *)data, len, CURL_BLOB_COPY};
    return curl_easy_setopt(h, opt, &b) == CURLE_OK ? 0 : -1;
}

/* Host and port of an http(s) URL, for CURLOPT_CONNECT_TO with tls-server-name. */
static int split_server(const char *server, char *host, size_t hcap, char *port, size_t pcap,
                        const char **rest)
{
    const char *p = strstr(server, "://");
    bool https = !strncmp(server, "https", 5);
    p = p ? p + 3 : server;
    const char *end = p + strcspn(p, "/");
    const char *colon = NULL;
    if (*p == '[') {
        const char *rb = memchr(p, ']', (size_t)(end - p));
        if (!rb)
            return -1;
        colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
    } else {
        colon = memchr(p, ':', (size_t)(end - p));
    }
    const char *hend = colon ? colon : end;
    snprintf(host, hcap, "%.*s", (int)(hend - p), p);
    if (colon)
        snprintf(port, pcap, "%.*s", (int)(end - colon - 1), colon + 1);
    else
        snprintf(port, pcap, "%s", https ? "443" : "80");
    *rest = end;
    return 0;
}

gs_live_client *gs_live_client_new(gs_live_config *cfg, const gs_live_client_opts *opts,
                                   gs_error *err)
{
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK) {
        gs_fail(err, GS_ERR_INTERNAL, "libcurl: %s", curl_easy_strerror(curl_init_rc));
        return NULL;
    }
    gs_live_client *c = calloc(1, sizeof *c);
    if (!c || !(c->h = curl_easy_init())) {
        free(c);
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    c->cfg = cfg;
    if (opts)
        c->o = *opts;
    if (!c->o.connect_timeout_ms)
        c->o.connect_timeout_ms = 10000;
    if (!c->o.timeout_ms)
        c->o.timeout_ms = 60000;
    if (!c->o.max_body)
        c->o.max_body = (size_t)1 << 30;
    if (!c->o.max_retries)
        c->o.max_retries = 10;
    if (!c->o.retry_max_wait_ms)
        c->o.retry_max_wait_ms = 30000;
    if (!c->o.retry_deadline_ms)
        c->o.retry_deadline_ms = 120000;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    c->rng = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)(uintptr_t)c;
    const curl_version_info_data *vi = curl_version_info(CURLVERSION_NOW);
    c->blobs = vi->ssl_version && !strncmp(vi->ssl_version, "OpenSSL", 7) && vi->version_num >= 0x074700;
    CURL *h = c->h;
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->o.connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->o.user_agent ? c->o.user_agent : "gpusched/0.1");
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    /* a dead peer the kernel knows about ends a quiet watch (client-go pings HTTP/2
     * connections idle for 30 s; libcurl cannot during a transfer) */
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 15L);
    if (!cfg->disable_compression)
        curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "gzip");
    if (cfg->proxy_url)
        curl_easy_setopt(h, CURLOPT_PROXY, cfg->proxy_url);
    if (cfg->insecure_skip_tls_verify) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (cfg->ca_pem) {
        /* Trust the kubeconfig's CA alone, as client-go does: libcurl's default CA
         * directory (/etc/ssl/certs) stays added to CURLOPT_CAINFO otherwise, which
         * trusts every system root for the API server and, with GnuTLS, parses the whole
         * directory (hundreds of files) at each new connection. */
        curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
        int rc = 0;
        if (c->blobs) {
            rc = set_blob(h, CURLOPT_CAINFO_BLOB, cfg->ca_pem, cfg->ca_len);
        } else {
            char p[300];
            rc = write_secret(c, "ca.crt", cfg->ca_pem, cfg->ca_len, p, sizeof p, err);
            if (!rc)
                curl_easy_setopt(h, CURLOPT_CAINFO, p);
        }
        if (rc) {
            if (err && err->code == GS_OK)
                gs_fail(err, GS_ERR_INTERNAL, "libcurl refused the CA bundle");
            gs_live_client_free(c);
            return NULL;
        }
    }
    if (cfg->tls_server_name) {
        /* Verify and send SNI for tls-server-name while connecting to the server's address. */
        char host[256], port[16];
        const char *rest;
        if (split_server(cfg->server, host, sizeof host, port, sizeof port, &rest)) {
            gs_fail(err, GS_ERR_INVALID, "server \"%s\" is not a URL", cfg->server);
            gs_live_client_free(c);
            return NULL;
        }
        char ct[600];
        snprintf(ct, sizeof ct, "%s:%s:%s:%s", cfg->tls_server_name, port, host, port);
        struct curl_slist *l = curl_slist_append(NULL, ct);
        if (!l) {
            gs_fail(err, GS_ERR_NOMEM, "out of memory");
            gs_live_client_free(c);
            return NULL;
        }
        /* the list lives as long as the handle: CURLOPT_PRIVATE keeps it for the free */
        curl_easy_setopt(h, CURLOPT_CONNECT_TO, l);
        curl_easy_setopt(h, CURLOPT_PRIVATE, l);
    }
    return c;
}

void gs_live_client_free(gs_live_client *c)
{
    if (!c)
        return;
    struct curl_slist *l = NULL;
    curl_easy_getinfo(c->h, CURLINFO_PRIVATE, (char **)&l);
    curl_easy_cleanup(c->h);
    curl_slist_free_all(l);
    remove_secrets(c);
    free(c);
}

void gs_live_response_free(gs_live_response *rs)
{
    if (rs)
        gs_strbuf_free(&rs->body);
}

typedef struct sink {
    gs_live_client *c;
    gs_live_response *rs;
    size_t max;
    bool too_big;
    /* streaming (gs_live_stream): a 2xx body goes to fn */
    gs_live_data_fn fn;
    void *ctx;
    gs_error *err;
    int fn_rc;               /* fn's non-zero return */
    int code;                /* the answer's status, known at the first body byte */
    const volatile int *stop;
    long idle_ms;
    int64_t last_ms;         /* monotonic time of the last byte */
    bool stopped, idle;
    bool delivered;          /* fn got bytes: the request cannot be retried */
} sink;

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool flag_set(const volatile int *f) { return f && __atomic_load_n(f, __ATOMIC_RELAXED) != 0; }

static bool stop_asked(const gs_live_client *c, const volatile int *stop)
{
    return flag_set(stop) || flag_set(c->stop);
}

void gs_live_client_set_stop(gs_live_client *c, const volatile int *stop) { c->stop = stop; }

void gs_live_client_stats_get(const gs_live_client *c, gs_live_client_stats *out) { *out = c->stats; }

/* Sleep ms, in slices, ending early when a stop is asked. false when stopped. */
static bool nap(const gs_live_client *c, const volatile int *stop, long ms)
{
    int64_t until = mono_ms() + ms;
    for (;;) {
        if (stop_asked(c, stop))
            return false;
        int64_t left = until - mono_ms();
        if (left <= 0)
            return true;
        struct timespec ts = {0, (left > 100 ? 100 : left) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    sink *s = ud;
    size_t len = size * n;
    s->last_ms = mono_ms();
    if (s->fn) {
        if (!s->code) {
            long code = 0;
            curl_easy_getinfo(s->c->h, CURLINFO_RESPONSE_CODE, &code);
            s->code = (int)code;
        }
        if (s->code >= 200 && s->code < 300) {
            s->delivered = true;
            int rc = s->fn(s->ctx, p, len, s->err);
            if (rc) {
                s->fn_rc = rc;
                return 0;
            }
            return len;
        }
        /* a refusal: collect its Status (bounded) */
        if (s->rs->body.len + len > (1u << 20)) {
            s->too_big = true;
            return 0;
        }
    } else if (s->rs->body.len + len > s->max) {
        s->too_big = true;
        return 0;
    }
    gs_strbuf_add(&s->rs->body, p, len);
    return s->rs->body.oom ? 0 : len;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    sink *s = ud;
    if (stop_asked(s->c, s->stop)) {
        s->stopped = true;
        return 1;
    }
    if (s->idle_ms > 0 && mono_ms() - s->last_ms > s->idle_ms) {
        s->idle = true;
        return 1;
    }
    return 0;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    sink *s = ud;
    size_t len = size * n;
    s->last_ms = mono_ms();
    if (len > 12 && !strncasecmp(p, "retry-after:", 12)) {
        /* delay-seconds; an HTTP-date (allowed by RFC 9110, never sent by the API server)
         * is not read, as client-go does not */
        char *e;
        long v = strtol(p + 12, &e, 10);
        if (e != p + 12 && v >= 0 && v < 86400)
            s->rs->retry_after = (int)v;
    }
    return len;
}

static int apply_cred(gs_live_client *c, struct curl_slist **hdrs, gs_error *err)
{
    gs_live_cred cr;
    /* the credential's pointers belong to the shared config: copied under its lock */
    gs_live_cfg_lock(c->cfg);
    int rc = -1;
    if (gs_live_credentials_locked(c->cfg, 0, &cr, err))
        goto out;
    c->sent_generation = cr.generation;
    CURL *h = c->h;
    curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_NONE);
    curl_easy_setopt(h, CURLOPT_USERNAME, (char *)NULL);
    curl_easy_setopt(h, CURLOPT_PASSWORD, (char *)NULL);
    if (cr.token) {
        char *line = malloc(strlen(cr.token) + 32);
        if (!line) {
            gs_fail(err, GS_ERR_NOMEM, "out of memory");
            goto out;
        }
        sprintf(line, "Authorization: Bearer %s", cr.token);
        struct curl_slist *l = curl_slist_append(*hdrs, line);
        free(line);
        if (!l) {
            gs_fail(err, GS_ERR_NOMEM, "out of memory");
            goto out;
        }
        *hdrs = l;
    } else if (cr.username) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERNAME, cr.username); /* libcurl copies strings */
        curl_easy_setopt(h, CURLOPT_PASSWORD, cr.password);
    }
    if (cr.cert_pem && (!c->cert_written || cr.generation != c->cert_generation)) {
        if (c->blobs) {
            if (set_blob(h, CURLOPT_SSLCERT_BLOB, cr.cert_pem, cr.cert_len) ||
                set_blob(h, CURLOPT_SSLKEY_BLOB, cr.key_pem, cr.key_len)) {
                gs_fail(err, GS_ERR_INTERNAL, "libcurl refused the client certificate");
                goto out;
            }
        } else {
            char pc[300], pk[300];
            if (write_secret(c, "client.crt", cr.cert_pem, cr.cert_len, pc, sizeof pc, err) ||
                write_secret(c, "client.key", cr.key_pem, cr.key_len, pk, sizeof pk, err))
                goto out;
            curl_easy_setopt(h, CURLOPT_SSLCERT, pc);
            curl_easy_setopt(h, CURLOPT_SSLKEY, pk);
        }
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
        c->cert_written = true;
        c->cert_generation = cr.generation;
    }
    rc = 0;
out:
    gs_live_cfg_unlock(c->cfg);
    return rc;
}

static int build_url(gs_live_client *c, const gs_live_request *rq, gs_strbuf *url)
{
    const gs_live_config *cfg = c->cfg;
    if (cfg->tls_server_name) {
        char host[256], port[16];
        const char *rest;
        split_server(cfg->server, host, sizeof host, port, sizeof port, &rest);
        gs_strbuf_printf(url, "https://%s:%s%s", cfg->tls_server_name, port, rest);
    } else {
        gs_strbuf_puts(url, cfg->server);
    }
    gs_strbuf_puts(url, rq->path && rq->path[0] == '/' ? rq->path : "/");
    if (rq->path && rq->path[0] != '/')
        gs_strbuf_puts(url, rq->path);
    for (size_t i = 0; i < rq->nquery; i++) {
        char *k = curl_easy_escape(c->h, rq->query[i].name, 0);
        char *v = curl_easy_escape(c->h, rq->query[i].value ? rq->query[i].value : "", 0);
        if (!k || !v) {
            curl_free(k);
            curl_free(v);
            return -1;
        }
        gs_strbuf_printf(url, "%c%s=%s", i ? '&' : '?', k, v);
        curl_free(k);
        curl_free(v);
    }
    return url->oom ? -1 : 0;
}

/* What a failed attempt was, for the retry decision. */
enum { ATT_OK = 0, ATT_HTTP, ATT_BROKEN, ATT_FAIL };

static int do_once(gs_live_client *c, const gs_live_request *rq, sink *s, gs_live_end *ended, int *kind,
                   gs_error *err)
{
    CURL *h = c->h;
    gs_live_response *rs = s->rs;
    gs_strbuf_reset(&rs->body);
    rs->http = 0;
    rs->retry_after = -1;
    memset(&rs->status, 0, sizeof rs->status);
    rs->status.retry_after = -1;
    *kind = ATT_FAIL;
    *ended = GS_LIVE_END_ERROR;
    gs_strbuf url = GS_STRBUF_INIT;
    struct curl_slist *hdrs = curl_slist_append(NULL, "Accept: application/json");
    int rc = -1;
    const char *method = rq->method ? rq->method : "GET";
    if (!hdrs || build_url(c, rq, &url)) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (apply_cred(c, &hdrs, err))
        goto out;
    if (c->cfg->tls_server_name) {
        /* the Host header names the server as in the kubeconfig (client-go keeps it) */
        char host[256], port[16], line[300];
        const char *rest;
        split_server(c->cfg->server, host, sizeof host, port, sizeof port, &rest);
        snprintf(line, sizeof line, "Host: %s:%s", host, port);
        struct curl_slist *l = curl_slist_append(hdrs, line);
        if (l)
            hdrs = l;
    }
    if (strcmp(method, "GET")) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
        if (rq->content_type) {
            char line[200];
            snprintf(line, sizeof line, "Content-Type: %s", rq->content_type);
            struct curl_slist *l = curl_slist_append(hdrs, line);
            if (l)
                hdrs = l;
        }
    } else {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, (char *)NULL);
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    }
    s->too_big = s->stopped = s->idle = s->delivered = false;
    s->fn_rc = 0;
    s->code = 0;
    s->last_ms = mono_ms();
    curl_easy_setopt(h, CURLOPT_URL, url.buf);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, rq->timeout_ms ? rq->timeout_ms : c->o.timeout_ms);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, s);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, s);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    c->errbuf[0] = '\0';
    /* Streams are not compressed: kube-apiserver gzips a watch when asked, and libcurl
     * 7.88 (Debian 12) ends such a stream with CURLE_WRITE_ERROR after a few events
     * (seen against kube-apiserver 1.37; the same watch uncompressed runs to its
     * timeout). Watch events are small; lists keep gzip. */
    if (!c->cfg->disable_compression)
        curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, s->fn ? (char *)NULL : "gzip");
    c->stats.requests++;
    CURLcode cc = curl_easy_perform(h);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, (struct curl_slist *)NULL);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    rs->http = (int)code;
    if (s->too_big) {
        gs_fail(err, GS_ERR_LIMIT, "%s %s: the answer is larger than %zu bytes", method, rq->path,
                s->fn ? (size_t)1 << 20 : c->o.max_body);
        goto out;
    }
    if (s->fn_rc) { /* the stream's consumer ended it */
        if (s->fn_rc > 0) {
            *ended = GS_LIVE_END_STOPPED;
            *kind = ATT_OK;
            rc = 0;
        }
        goto out;
    }
    if (s->stopped || s->idle) {
        if (s->fn && code >= 200 && code < 300) {
            *ended = s->stopped ? GS_LIVE_END_STOPPED : GS_LIVE_END_IDLE;
            *kind = ATT_OK;
            rc = 0;
        } else {
            gs_fail(err, GS_ERR_IO, "%s %s%s: %s", method, c->cfg->server, rq->path ? rq->path : "",
                    s->stopped ? "stopped" : "no answer within the idle timeout");
        }
        goto out;
    }
    if (cc == CURLE_OPERATION_TIMEDOUT && s->fn && code >= 200 && code < 300) {
        /* a stream the server did not end in time: as idle */
        *ended = GS_LIVE_END_IDLE;
        *kind = ATT_OK;
        rc = 0;
        goto out;
    }
    if (cc == CURLE_PEER_FAILED_VERIFICATION) {
        /* curl's text names the temporary CA file; say what it means */
        gs_fail(err, GS_ERR_IO,
                "%s %s%s: the server's certificate is not signed by the cluster's certificate authority "
                "(or does not name the server): TLS verification failed",
                method, c->cfg->server, rq->path ? rq->path : "");
        goto out;
    }
    if (cc != CURLE_OK) {
        gs_fail(err, cc == CURLE_OUT_OF_MEMORY ? GS_ERR_NOMEM : GS_ERR_IO, "%s %s%s: %s", method, c->cfg->server,
                rq->path ? rq->path : "", c->errbuf[0] ? c->errbuf : curl_easy_strerror(cc));
        /* a connection that broke after it was made (client-go retries a GET then:
         * connection reset, probable EOF, HTTP/2 connection lost); never a refused
         * connection, a name that does not resolve, a TLS failure or a timeout */
        switch (cc) {
        case CURLE_SEND_ERROR:
        case CURLE_RECV_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_PARTIAL_FILE:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
            *kind = s->delivered ? ATT_FAIL : ATT_BROKEN;
            break;
        default:
            break;
        }
        goto out;
    }
    if (code >= 200 && code < 300) {
        *ended = GS_LIVE_END_CLOSED;
        *kind = ATT_OK;
        rc = 0;
        goto out;
    }
    char what[300];
    snprintf(what, sizeof what, "%s %s", method, rq->path ? rq->path : "/");
    gs_live_status_error((int)code, rs->body.buf, rs->body.len, what, &rs->status, err);
    if (rs->status.retry_after < 0)
        rs->status.retry_after = rs->retry_after;
    *kind = ATT_HTTP;
out:
    curl_slist_free_all(hdrs);
    gs_strbuf_free(&url);
    return rc;
}

static uint64_t rng_next(gs_live_client *c)
{
    uint64_t x = c->rng += 0x9e3779b97f4a7c15ull; /* splitmix64 */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Every request: the rate limiter, the attempt, the 401 retry, then the retries of
 * docs/live.md "Retries". */
static int do_request(gs_live_client *c, const gs_live_request *rq, sink *s, gs_live_end *ended, gs_error *err)
{
    const char *method = rq->method ? rq->method : "GET";
    bool get = !strcmp(method, "GET");
    int64_t t0 = mono_ms();
    bool reauth = false;
    s->rs->retries = 0;
    for (;;) {
        long wait = gs_live_rate_take(c->cfg);
        if (wait > 0) {
            c->stats.throttled++;
            c->stats.throttled_ms += (uint64_t)wait;
            if (!nap(c, s->stop, wait)) {
                *ended = GS_LIVE_END_STOPPED;
                return gs_fail(err, GS_ERR_IO, "%s %s%s: stopped", method, c->cfg->server, rq->path ? rq->path : "");
            }
        }
        int kind;
        int rc = do_once(c, rq, s, ended, &kind, err);
        if (!rc)
            return 0;
        if (kind == ATT_HTTP && s->rs->http == 401 && !reauth &&
            (c->cfg->auth == GS_LIVE_AUTH_EXEC || c->cfg->auth == GS_LIVE_AUTH_TOKEN_FILE)) {
            reauth = true; /* once per request, not counted as a retry */
            /* only when no other thread refreshed it since: N informer threads meeting
             * one expired token run the exec plugin once, not N times */
            gs_live_cfg_lock(c->cfg);
            if (gs_live_cred_generation_locked(c->cfg) == c->sent_generation)
                gs_live_invalidate_locked(c->cfg);
            gs_live_cfg_unlock(c->cfg);
            continue;
        }
        long delay = -1;
        if (kind == ATT_HTTP && (s->rs->http == 429 || s->rs->http >= 500) && s->rs->status.retry_after >= 0) {
            /* client-go (rest/with_retry.go): 429 or 5xx with Retry-After, that many seconds */
            delay = (long)s->rs->status.retry_after * 1000;
            if (delay == 0)
                delay = 100; /* "Retry-After: 0": a little later, not a busy loop */
            if (delay > c->o.retry_max_wait_ms)
                delay = c->o.retry_max_wait_ms;
        } else if (kind == ATT_BROKEN && get) {
            long base = 250L << (s->rs->retries < 5 ? s->rs->retries : 5);
            if (base > 8000)
                base = 8000;
            delay = (long)(rng_next(c) % (uint64_t)(base + 1)); /* full jitter */
        }
        if (delay < 0 || c->o.max_retries < 0 || s->rs->retries >= (unsigned)c->o.max_retries)
            return -1;
        if (mono_ms() + delay - t0 > c->o.retry_deadline_ms)
            return -1;
        if (!nap(c, s->stop, delay)) {
            *ended = GS_LIVE_END_STOPPED;
            return -1;
        }
        s->rs->retries++;
        c->stats.retries++;
        if (err)
            gs_error_clear(err);
    }
}

int gs_live_do(gs_live_client *c, const gs_live_request *rq, gs_live_response *rs, gs_error *err)
{
    sink s = {.c = c, .rs = rs, .max = c->o.max_body, .err = err};
    gs_live_end ended;
    return do_request(c, rq, &s, &ended, err);
}

int gs_live_stream(gs_live_client *c, const gs_live_request *rq, gs_live_data_fn fn, void *ctx,
                   const volatile int *stop, long idle_ms, gs_live_response *rs, gs_live_end *ended,
                   gs_error *err)
{
    sink s = {.c = c, .rs = rs, .max = c->o.max_body, .fn = fn, .ctx = ctx, .err = err, .stop = stop,
              .idle_ms = idle_ms};
    gs_live_end e = GS_LIVE_END_ERROR;
    int rc = do_request(c, rq, &s, &e, err);
    if (ended)
        *ended = rc ? (e == GS_LIVE_END_STOPPED ? e : GS_LIVE_END_ERROR) : e;
    return rc;
}

int gs_live_list(gs_live_client *c, const char *path, const gs_live_query *query, size_t nquery,
                 unsigned limit, gs_live_page_fn fn, void *ctx, gs_error *err)
{
    int http;
    return gs_live_list_http(c, path, query, nquery, limit, fn, ctx, &http, err);
}

int gs_live_list_http(gs_live_client *c, const char *path, const gs_live_query *query, size_t nquery,
                      unsigned limit, gs_live_page_fn fn, void *ctx, int *http, gs_error *err)
{
    *http = 0;
    gs_live_query *q = calloc(nquery + 2, sizeof *q);
    if (!q)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    if (nquery)
        memcpy(q, query, nquery * sizeof *q);
    char lim[24];
    snprintf(lim, sizeof lim, "%u", limit ? limit : 500);
    q[nquery] = (gs_live_query){"limit", lim};
    gs_arena a;
    gs_arena_init(&a, 4096);
    gs_live_response rs = {.body = GS_STRBUF_INIT, .retry_after = -1, .status = {.retry_after = -1}};
    char *cont = NULL;
    unsigned index = 0, relists = 0;
    int rc = -1;
    for (;;) {
        size_t nq = nquery + 1;
        if (cont)
            q[nq++] = (gs_live_query){"continue", cont};
        gs_live_request rq = {.path = path, .query = q, .nquery = nq};
        if (gs_live_do(c, &rq, &rs, err)) {
            *http = rs.http;
            if (rs.http == 410 && cont && relists < LIST_MAX_RELISTS) {
                relists++; /* the continue token expired: a consistent list starts over */
                free(cont);
                cont = NULL;
                index = 0;
                continue;
            }
            break;
        }
        gs_live_page_info pi;
        gs_arena_reset(&a);
        if (gs_live_page_parse(rs.body.buf ? rs.body.buf : "", rs.body.len, &a, &pi, err))
            break;
        if (fn(ctx, gs_strbuf_cstr(&rs.body), rs.body.len, index++, err))
            break;
        if (!pi.continue_token) {
            rc = 0;
            break;
        }
        free(cont);
        cont = strdup(pi.continue_token);
        if (!cont) {
            gs_fail(err, GS_ERR_NOMEM, "out of memory");
            break;
        }
    }
    free(cont);
    gs_arena_free(&a);
    gs_live_response_free(&rs);
    free(q);
    return rc;
}
