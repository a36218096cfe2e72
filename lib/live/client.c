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
    bool cert_written;
    char errbuf[CURL_ERROR_SIZE];
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
    const curl_version_info_data *vi = curl_version_info(CURLVERSION_NOW);
    c->blobs = vi->ssl_version && !strncmp(vi->ssl_version, "OpenSSL", 7) && vi->version_num >= 0x074700;
    CURL *h = c->h;
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->o.connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->o.user_agent ? c->o.user_agent : "gpusched/0.1");
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (!cfg->disable_compression)
        curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "gzip");
    if (cfg->proxy_url)
        curl_easy_setopt(h, CURLOPT_PROXY, cfg->proxy_url);
    if (cfg->insecure_skip_tls_verify) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (cfg->ca_pem) {
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
    gs_live_response *rs;
    size_t max;
    bool too_big;
} sink;

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    sink *s = ud;
    size_t len = size * n;
    if (s->rs->body.len + len > s->max) {
        s->too_big = true;
        return 0;
    }
    gs_strbuf_add(&s->rs->body, p, len);
    return s->rs->body.oom ? 0 : len;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    sink *s = ud;
    size_t len = size * n;
    if (len > 12 && !strncasecmp(p, "retry-after:", 12)) {
        long v = strtol(p + 12, NULL, 10);
        if (v >= 0 && v < 86400)
            s->rs->retry_after = (int)v;
    }
    return len;
}

static int apply_cred(gs_live_client *c, struct curl_slist **hdrs, gs_error *err)
{
    gs_live_cred cr;
    if (gs_live_credentials(c->cfg, 0, &cr, err))
        return -1;
    CURL *h = c->h;
    curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_NONE);
    curl_easy_setopt(h, CURLOPT_USERNAME, (char *)NULL);
    curl_easy_setopt(h, CURLOPT_PASSWORD, (char *)NULL);
    if (cr.token) {
        char *line = malloc(strlen(cr.token) + 32);
        if (!line)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        sprintf(line, "Authorization: Bearer %s", cr.token);
        struct curl_slist *l = curl_slist_append(*hdrs, line);
        free(line);
        if (!l)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        *hdrs = l;
    } else if (cr.username) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERNAME, cr.username);
        curl_easy_setopt(h, CURLOPT_PASSWORD, cr.password);
    }
    if (cr.cert_pem && (!c->cert_written || cr.generation != c->cert_generation)) {
        if (c->blobs) {
            if (set_blob(h, CURLOPT_SSLCERT_BLOB, cr.cert_pem, cr.cert_len) ||
                set_blob(h, CURLOPT_SSLKEY_BLOB, cr.key_pem, cr.key_len))
                return gs_fail(err, GS_ERR_INTERNAL, "libcurl refused the client certificate");
        } else {
            char pc[300], pk[300];
            if (write_secret(c, "client.crt", cr.cert_pem, cr.cert_len, pc, sizeof pc, err) ||
                write_secret(c, "client.key", cr.key_pem, cr.key_len, pk, sizeof pk, err))
                return -1;
            curl_easy_setopt(h, CURLOPT_SSLCERT, pc);
            curl_easy_setopt(h, CURLOPT_SSLKEY, pk);
        }
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
        c->cert_written = true;
        c->cert_generation = cr.generation;
    }
    return 0;
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

static int do_once(gs_live_client *c, const gs_live_request *rq, gs_live_response *rs, gs_error *err)
{
    CURL *h = c->h;
    gs_strbuf_reset(&rs->body);
    rs->http = 0;
    rs->retry_after = -1;
    memset(&rs->status, 0, sizeof rs->status);
    rs->status.retry_after = -1;
    gs_strbuf url = GS_STRBUF_INIT;
    struct curl_slist *hdrs = curl_slist_append(NULL, "Accept: application/json");
    int rc = -1;
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
    const char *method = rq->method ? rq->method : "GET";
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
    sink s = {rs, c->o.max_body, false};
    curl_easy_setopt(h, CURLOPT_URL, url.buf);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, rq->timeout_ms ? rq->timeout_ms : c->o.timeout_ms);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &s);
    c->errbuf[0] = '\0';
    CURLcode cc = curl_easy_perform(h);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, (struct curl_slist *)NULL);
    if (s.too_big) {
        gs_fail(err, GS_ERR_LIMIT, "%s %s: the answer is larger than %zu bytes", method, rq->path, c->o.max_body);
        goto out;
    }
    if (cc != CURLE_OK) {
        gs_fail(err, cc == CURLE_OUT_OF_MEMORY ? GS_ERR_NOMEM : GS_ERR_IO, "%s %s%s: %s", method, c->cfg->server,
                rq->path ? rq->path : "", c->errbuf[0] ? c->errbuf : curl_easy_strerror(cc));
        goto out;
    }
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    rs->http = (int)code;
    if (code >= 200 && code < 300) {
        rc = 0;
        goto out;
    }
    char what[300];
    snprintf(what, sizeof what, "%s %s", method, rq->path ? rq->path : "/");
    gs_live_status_error((int)code, rs->body.buf, rs->body.len, what, &rs->status, err);
    if (rs->status.retry_after < 0)
        rs->status.retry_after = rs->retry_after;
out:
    curl_slist_free_all(hdrs);
    gs_strbuf_free(&url);
    return rc;
}

int gs_live_do(gs_live_client *c, const gs_live_request *rq, gs_live_response *rs, gs_error *err)
{
    int rc = do_once(c, rq, rs, err);
    if (rc && rs->http == 401 &&
        (c->cfg->auth == GS_LIVE_AUTH_EXEC || c->cfg->auth == GS_LIVE_AUTH_TOKEN_FILE)) {
        gs_live_invalidate(c->cfg);
        rc = do_once(c, rq, rs, err);
    }
    return rc;
}

int gs_live_list(gs_live_client *c, const char *path, const gs_live_query *query, size_t nquery,
                 unsigned limit, gs_live_page_fn fn, void *ctx, gs_error *err)
{
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
