/*
 * dcgm.c - the monitor's utilization sources (dcgm.h): dcgm-exporter pods found in the
 * informer's store, dcgm-exporter /metrics scrapes and Prometheus instant queries, over
 * libcurl's multi interface (up to `parallel` transfers at once, each with a timeout and a
 * body limit), read with the parsers of promtext.c into one gs_util_set per round.
 *
 * A failing source never fails the round: it goes to the caller's error callback (one call
 * per source, a gs_error whose file is the URL) and its samples stay out. Nothing prints.
 */
#define _GNU_SOURCE /* memmem */
#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/dcgm.h"
#include "util/json_int.h"

#define DEF_MAX_ENDPOINTS 10000u
#define CONNECT_MAX_MS 5000L

/* ---------------------------------------------------------------- options */

typedef struct dopts {
    long timeout_ms, connect_ms;
    size_t max_body;
    unsigned parallel, port, max_endpoints;
    const gs_util_limits *limits;
} dopts;

static void opts_of(const gs_dcgm_opts *o, dopts *d)
{
    d->timeout_ms = o && o->timeout_ms > 0 ? o->timeout_ms : GS_DCGM_DEFAULT_TIMEOUT_MS;
    d->connect_ms = d->timeout_ms < CONNECT_MAX_MS ? d->timeout_ms : CONNECT_MAX_MS;
    d->max_body = o && o->max_body ? o->max_body : GS_DCGM_DEFAULT_MAX_BODY;
    d->parallel = o && o->parallel ? o->parallel : GS_DCGM_DEFAULT_PARALLEL;
    d->port = o && o->port ? o->port : GS_DCGM_DEFAULT_PORT;
    d->max_endpoints = o && o->max_endpoints ? o->max_endpoints : DEF_MAX_ENDPOINTS;
    d->limits = o ? o->limits : NULL;
}

int64_t gs_dcgm_lookback_ms(const gs_dcgm_opts *o)
{
    return o && o->mode == GS_DCGM_PROMETHEUS && o->window_ms > 0 ? o->window_ms : 0;
}

/* ---------------------------------------------------------------- endpoints */

void gs_dcgm_endpoints_init(gs_dcgm_endpoints *e)
{
    memset(e, 0, sizeof *e);
    gs_arena_init(&e->arena, 16384);
}

void gs_dcgm_endpoints_reset(gs_dcgm_endpoints *e)
{
    e->n = 0;
    e->skipped = 0;
    gs_arena_reset(&e->arena);
}

void gs_dcgm_endpoints_free(gs_dcgm_endpoints *e)
{
    free(e->v);
    gs_arena_free(&e->arena);
    memset(e, 0, sizeof *e);
}

static int ep_add(gs_dcgm_endpoints *e, const char *url, const char *node, const char *pod)
{
    if (e->n == e->cap) {
        size_t nc = e->cap ? e->cap * 2 : 32;
        gs_dcgm_endpoint *nv = realloc(e->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        e->v = nv;
        e->cap = nc;
    }
    gs_dcgm_endpoint *p = &e->v[e->n];
    p->url = gs_arena_strdup(&e->arena, url);
    p->node = node[0] ? gs_arena_strdup(&e->arena, node) : "";
    p->pod = pod[0] ? gs_arena_strdup(&e->arena, pod) : "";
    if (!p->url || !p->node || !p->pod)
        return -1;
    e->n++;
    return 0;
}

const char *gs_dcgm_endpoint_url(const char *ip, unsigned port, char *buf, size_t cap)
{
    if (!ip || !ip[0])
        return NULL;
    bool v6 = strchr(ip, ':') != NULL;
    int k = snprintf(buf, cap, v6 ? "http://[%s]:%u/metrics" : "http://%s:%u/metrics", ip,
                     port ? port : GS_DCGM_DEFAULT_PORT);
    return k > 0 && (size_t)k < cap ? buf : NULL;
}

/* The labels the exporter's deployments put on its pods: the GPU Operator's DaemonSet
 * (app=nvidia-dcgm-exporter), dcgm-exporter's Helm chart and manifests
 * (app.kubernetes.io/name=dcgm-exporter), and the plain app=dcgm-exporter of hand-written
 * manifests. */
bool gs_dcgm_exporter_label(const char *key, const char *value, size_t n)
{
#define IS(s) (n == sizeof s - 1 && memcmp(value, s, n) == 0)
    if (strcmp(key, "app") == 0)
        return IS("nvidia-dcgm-exporter") || IS("dcgm-exporter");
    if (strcmp(key, "app.kubernetes.io/name") == 0)
        return IS("dcgm-exporter");
    return false;
#undef IS
}

typedef struct disc {
    gs_dcgm_endpoints *out;
    unsigned port;
    gs_arena scratch;
    gs_error *err;
    bool oom;
} disc;

static const gs_jv *jget(const gs_jv *o, const char *k, gs_jtype t)
{
    const gs_jv *v = gs_json_get(o, k);
    return v && v->t == t ? v : NULL;
}

static int disc_pod(void *ctx, const char *key, const char *obj, size_t len)
{
    (void)key;
    disc *d = ctx;
    /* most pods are not exporters: look for the label value before parsing anything */
    if (!memmem(obj, len, "dcgm-exporter", 13) && !memmem(obj, len, "gpusched", 8))
        return 0;
    gs_arena_reset(&d->scratch);
    gs_jv root;
    gs_json_limits jl = {.max_depth = 64};
    if (gs_json_parse("pod", 1, obj, len, &jl, &d->scratch, &root, NULL) < 0 || root.t != GS_JOBJ) {
        d->out->skipped++;
        return 0;
    }
    const gs_jv *md = jget(&root, "metadata", GS_JOBJ);
    const gs_jv *labels = jget(md, "labels", GS_JOBJ);
    bool exporter = false, gpusched = false, agent = false;
    for (uint32_t i = 0; labels && i < labels->n && !exporter; i++) {
        const gs_jv *k = &labels->kids[2 * i], *v = &labels->kids[2 * i + 1];
        if (v->t != GS_JSTR)
            continue;
        exporter = gs_dcgm_exporter_label(k->s, v->s, v->n);
        /* gpusched's node agent (deploy/agent) serves dcgm-exporter's families on the same
         * port: app.kubernetes.io/name=gpusched with app.kubernetes.io/component=agent */
        if (strcmp(k->s, "app.kubernetes.io/name") == 0 && v->n == 8 && memcmp(v->s, "gpusched", 8) == 0)
            gpusched = true;
        if (strcmp(k->s, "app.kubernetes.io/component") == 0 && v->n == 5 && memcmp(v->s, "agent", 5) == 0)
            agent = true;
    }
    exporter = exporter || (gpusched && agent);
    if (!exporter)
        return 0;
    const gs_jv *name = jget(md, "name", GS_JSTR), *ns = jget(md, "namespace", GS_JSTR);
    const gs_jv *status = jget(&root, "status", GS_JOBJ), *spec = jget(&root, "spec", GS_JOBJ);
    const gs_jv *phase = jget(status, "phase", GS_JSTR), *ip = jget(status, "podIP", GS_JSTR);
    const gs_jv *node = jget(spec, "nodeName", GS_JSTR);
    char url[128];
    if (!name || gs_json_get(md, "deletionTimestamp") || !phase || strcmp(phase->s, "Running") != 0 ||
        !ip || !gs_dcgm_endpoint_url(ip->s, d->port, url, sizeof url)) {
        d->out->skipped++;
        return 0;
    }
    char pod[512];
    snprintf(pod, sizeof pod, "%s/%s", ns ? ns->s : "", name->s);
    if (ep_add(d->out, url, node ? node->s : "", pod) < 0) {
        d->oom = true;
        return 1;
    }
    return 0;
}

int gs_dcgm_discover(gs_live_store *st, unsigned port, gs_dcgm_endpoints *out, gs_error *err)
{
    disc d = {.out = out, .port = port, .err = err};
    gs_arena_init(&d.scratch, 0);
    gs_live_store_each(st, GS_LIVE_POD, disc_pod, &d);
    gs_arena_free(&d.scratch);
    if (d.oom)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory listing dcgm-exporter endpoints");
    return 0;
}

/* ---------------------------------------------------------------- transfers */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_rc;
static void curl_start(void) { curl_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

typedef struct xfer {
    CURL *h;
    gs_strbuf body;
    size_t max;
    bool too_big, busy;
    size_t src;
    char errbuf[CURL_ERROR_SIZE];
} xfer;

/* What a run asks of its caller: the URL of source i, and what to do with its answer
 * (http 0 and fail set when no answer came). done returns -1 only for a failure of the
 * round (err set). */
typedef struct runner {
    const char *(*url)(void *ctx, size_t i);
    int (*done)(void *ctx, size_t i, int http, const char *body, size_t len, const gs_error *fail,
                gs_error *err);
    void *ctx;
    const char *accept;
} runner;

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    xfer *x = ud;
    size_t len = size * n;
    if (x->body.len + len > x->max) {
        x->too_big = true;
        return 0;
    }
    gs_strbuf_add(&x->body, p, len);
    return x->body.oom ? 0 : len;
}

static int xfer_start(CURLM *m, xfer *x, const runner *r, size_t src, const dopts *d,
                      struct curl_slist *hdrs)
{
    gs_strbuf_reset(&x->body);
    x->too_big = false;
    x->src = src;
    x->max = d->max_body;
    x->errbuf[0] = '\0';
    CURL *h = x->h;
    curl_easy_setopt(h, CURLOPT_URL, r->url(r->ctx, src));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_USERAGENT, "gpusched/0.1");
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, d->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, d->connect_ms);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, ""); /* decoded bytes count against the limit */
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)d->max_body);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_PRIVATE, (char *)x);
    if (curl_multi_add_handle(m, h) != CURLM_OK)
        return -1;
    x->busy = true;
    return 0;
}

/* One source's outcome to r->done; transport failures are worded here. */
static int xfer_done(xfer *x, CURLcode cc, const runner *r, const dopts *d, gs_dcgm_round *info,
                     gs_error *err)
{
    const char *url = r->url(r->ctx, x->src);
    long code = 0;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
    if (info)
        info->bytes += x->body.len;
    gs_error fail;
    gs_error_clear(&fail);
    if (x->too_big || cc == CURLE_FILESIZE_EXCEEDED) {
        gs_error_set(&fail, GS_ERR_LIMIT, url, 0, 0, NULL, "answer larger than %zu bytes (the limit)",
                     d->max_body);
    } else if (x->body.oom) {
        return gs_fail(err, GS_ERR_NOMEM, "out of memory reading %s", url);
    } else if (cc != CURLE_OK) {
        gs_error_set(&fail, GS_ERR_IO, url, 0, 0, NULL, "cannot read %s: %s", url,
                     x->errbuf[0] ? x->errbuf : curl_easy_strerror(cc));
    } else {
        return r->done(r->ctx, x->src, (int)code, gs_strbuf_cstr(&x->body), x->body.len, NULL, err);
    }
    return r->done(r->ctx, x->src, 0, NULL, 0, &fail, err);
}

static int run(size_t n, const runner *r, const dopts *d, gs_dcgm_round *info, gs_error *err)
{
    if (n == 0)
        return 0;
    pthread_once(&curl_once, curl_start);
    if (curl_rc != CURLE_OK)
        return gs_fail(err, GS_ERR_INTERNAL, "libcurl: %s", curl_easy_strerror(curl_rc));
    size_t np = d->parallel < n ? d->parallel : n;
    xfer *xs = calloc(np, sizeof *xs);
    CURLM *m = curl_multi_init();
    struct curl_slist *hdrs = curl_slist_append(NULL, r->accept);
    int rc = 0;
    if (!xs || !m || !hdrs) {
        rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < np; i++) {
        if (!(xs[i].h = curl_easy_init())) {
            rc = gs_fail(err, GS_ERR_NOMEM, "libcurl: cannot make a handle");
            goto out;
        }
    }
    curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, (long)np);
    size_t next = 0, running = 0;
    for (size_t i = 0; i < np; i++, next++, running++) {
        if (xfer_start(m, &xs[i], r, next, d, hdrs) < 0) {
            rc = gs_fail(err, GS_ERR_INTERNAL, "libcurl refused a transfer");
            goto out;
        }
    }
    while (running > 0) {
        int still = 0;
        bool started = false;
        CURLMcode mc = curl_multi_perform(m, &still);
        if (mc != CURLM_OK) {
            rc = gs_fail(err, GS_ERR_INTERNAL, "libcurl: %s", curl_multi_strerror(mc));
            goto out;
        }
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            xfer *x = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
            CURLcode cc = msg->data.result;
            curl_multi_remove_handle(m, x->h);
            x->busy = false;
            running--;
            if (info)
                info->sources++;
            if (xfer_done(x, cc, r, d, info, err) < 0) {
                rc = -1;
                goto out;
            }
            if (next < n) {
                if (xfer_start(m, x, r, next++, d, hdrs) < 0) {
                    rc = gs_fail(err, GS_ERR_INTERNAL, "libcurl refused a transfer");
                    goto out;
                }
                running++;
                started = true;
            }
        }
        /* wait for activity only while transfers are under way and none was just started */
        if (running > 0 && still > 0 && !started) {
            mc = curl_multi_poll(m, NULL, 0, 1000, NULL);
            if (mc != CURLM_OK) {
                rc = gs_fail(err, GS_ERR_INTERNAL, "libcurl: %s", curl_multi_strerror(mc));
                goto out;
            }
        }
    }
out:
    for (size_t i = 0; xs && i < np; i++) {
        if (xs[i].h) {
            if (xs[i].busy)
                curl_multi_remove_handle(m, xs[i].h);
            curl_easy_cleanup(xs[i].h);
        }
        gs_strbuf_free(&xs[i].body);
    }
    free(xs);
    if (m)
        curl_multi_cleanup(m);
    curl_slist_free_all(hdrs);
    return rc;
}

/* The first line of an error body, for the message (bounded, printable). */
static void body_line(const char *b, size_t len, char *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; b && i < len && b[i] != '\n' && k + 1 < cap; i++)
        out[k++] = (b[i] >= 0x20 && b[i] < 0x7f) ? b[i] : '?';
    out[k] = '\0';
}

/* ---------------------------------------------------------------- scrapes */

typedef struct scrape {
    const gs_dcgm_endpoint *eps;
    const dopts *d;
    gs_util_set *round;
    gs_dcgm_round *info;
    gs_dcgm_error_fn fn;
    void *ctx;
    int ok;
} scrape;

static const char *scrape_url(void *ctx, size_t i) { return ((scrape *)ctx)->eps[i].url; }

static void report(gs_dcgm_error_fn fn, void *ctx, gs_dcgm_round *info, gs_monitor_util_source src,
                   const char *target, const gs_error *e)
{
    if (info)
        info->failed++;
    if (fn)
        fn(ctx, src, target, e);
}

static int scrape_done(void *ctx, size_t i, int http, const char *body, size_t len, const gs_error *fail,
                       gs_error *err)
{
    scrape *s = ctx;
    const gs_dcgm_endpoint *ep = &s->eps[i];
    gs_error e;
    gs_error_clear(&e);
    if (fail) {
        report(s->fn, s->ctx, s->info, GS_MON_UTIL_ENDPOINT, ep->url, fail);
        return 0;
    }
    if (http != 200) {
        char line[160];
        body_line(body, len, line, sizeof line);
        gs_error_set(&e, GS_ERR_IO, ep->url, 0, 0, NULL, "HTTP %d from %s%s%s", http, ep->url,
                     line[0] ? ": " : "", line);
        report(s->fn, s->ctx, s->info, GS_MON_UTIL_ENDPOINT, ep->url, &e);
        return 0;
    }
    size_t n0 = s->round->n;
    if (gs_util_parse_promtext(s->round, ep->url, body, len, s->d->limits, &e) < 0) {
        if (e.code == GS_ERR_NOMEM) {
            *err = e;
            return -1;
        }
        report(s->fn, s->ctx, s->info, GS_MON_UTIL_ENDPOINT, ep->url, &e);
        return 0;
    }
    /* the exporter pod's node for samples without a host label, or whose host label is the
     * pod's own name (dcgm-exporter without NODE_NAME reports its hostname) */
    if (ep->node && ep->node[0]) {
        const char *pn = ep->pod ? strchr(ep->pod, '/') : NULL;
        pn = pn ? pn + 1 : (ep->pod ? ep->pod : "");
        const char *node = NULL;
        for (size_t k = n0; k < s->round->n; k++) {
            gs_util_sample *x = &s->round->v[k];
            if (x->node[0] && !(pn[0] && strcmp(x->node, pn) == 0))
                continue;
            if (!node && !(node = gs_arena_strdup(&s->round->arena, ep->node)))
                return gs_fail(err, GS_ERR_NOMEM, "out of memory reading %s", ep->url);
            x->node = node;
        }
    }
    s->ok++;
    if (s->info)
        s->info->ok++;
    return 0;
}

int gs_dcgm_scrape(const gs_dcgm_endpoint *eps, size_t n, const gs_dcgm_opts *o, gs_util_set *round,
                   gs_dcgm_round *info, gs_dcgm_error_fn fn, void *ctx, gs_error *err)
{
    dopts d;
    opts_of(o, &d);
    scrape s = {.eps = eps, .d = &d, .round = round, .info = info, .fn = fn, .ctx = ctx};
    runner r = {.url = scrape_url, .done = scrape_done, .ctx = &s,
                .accept = "Accept: text/plain;version=0.0.4;q=1,*/*;q=0.1"};
    if (run(n, &r, &d, info, err) < 0)
        return -1;
    return s.ok;
}

/* ---------------------------------------------------------------- Prometheus queries */

const char *gs_dcgm_promql(gs_util_metric m, int64_t window_ms, char *buf, size_t cap)
{
    const char *f = gs_util_metric_name(m);
    if (!f[0])
        return NULL;
    int k;
    if (window_ms <= 0) {
        k = snprintf(buf, cap, "%s", f);
    } else {
        char w[32];
        if (window_ms % 1000 == 0)
            snprintf(w, sizeof w, "%" PRId64 "s", window_ms / 1000);
        else
            snprintf(w, sizeof w, "%" PRId64 "ms", window_ms);
        /* the maximum over the window, for the series that existed when it began */
        k = snprintf(buf, cap, "max_over_time(%s[%s]) and %s offset %s", f, w, f, w);
    }
    return k > 0 && (size_t)k < cap ? buf : NULL;
}

typedef struct pq {
    char url[2][2048];
    char target[2][600];
    gs_util_metric m[2];
    const dopts *d;
    gs_util_set *round;
    gs_dcgm_round *info;
    gs_dcgm_error_fn fn;
    void *ctx;
    int ok;
} pq;

/* Percent-encode everything but RFC 3986's unreserved characters (out: 3x room). */
static void url_escape(const char *s, char *out)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
            c == '_' || c == '.' || c == '~') {
            *out++ = (char)c;
        } else {
            *out++ = '%';
            *out++ = hex[c >> 4];
            *out++ = hex[c & 15];
        }
    }
    *out = '\0';
}

static const char *pq_url(void *ctx, size_t i) { return ((pq *)ctx)->url[i]; }

static int pq_done(void *ctx, size_t i, int http, const char *body, size_t len, const gs_error *fail,
                   gs_error *err)
{
    pq *q = ctx;
    gs_error e;
    gs_error_clear(&e);
    if (fail) {
        report(q->fn, q->ctx, q->info, GS_MON_UTIL_PROMETHEUS, q->target[i], fail);
        return 0;
    }
    if (http == 200) {
        if (gs_util_parse_query_json(q->round, q->target[i], body, len, q->m[i], q->d->limits, &e) == 0) {
            q->ok++;
            if (q->info)
                q->info->ok++;
            return 0;
        }
        if (e.code == GS_ERR_NOMEM) {
            *err = e;
            return -1;
        }
    } else {
        /* Prometheus explains a refused query in its JSON ({"status":"error",...}): read it
         * into a scratch set for the message */
        gs_util_set scratch;
        gs_util_set_init(&scratch);
        gs_error pe;
        gs_error_clear(&pe);
        int prc = gs_util_parse_query_json(&scratch, q->target[i], body, len, q->m[i], NULL, &pe);
        gs_util_set_free(&scratch);
        char line[160];
        body_line(body, len, line, sizeof line);
        if (prc < 0 && pe.code == GS_ERR_INVALID && strstr(pe.msg, "Prometheus answered"))
            gs_error_set(&e, GS_ERR_IO, q->target[i], 0, 0, NULL, "HTTP %d: %s", http, pe.msg);
        else
            gs_error_set(&e, GS_ERR_IO, q->target[i], 0, 0, NULL, "HTTP %d from %s%s%s", http,
                         q->target[i], line[0] ? ": " : "", line);
    }
    report(q->fn, q->ctx, q->info, GS_MON_UTIL_PROMETHEUS, q->target[i], &e);
    return 0;
}

int gs_dcgm_query_prometheus(const char *base_url, int64_t window_ms, const gs_dcgm_opts *o,
                             gs_util_set *round, gs_dcgm_round *info, gs_dcgm_error_fn fn, void *ctx,
                             gs_error *err)
{
    if (!base_url || (strncmp(base_url, "http://", 7) != 0 && strncmp(base_url, "https://", 8) != 0))
        return gs_fail(err, GS_ERR_USAGE, "Prometheus URL \"%s\": expected http://host:port[/prefix]",
                       base_url ? base_url : "");
    if (window_ms < 0)
        return gs_fail(err, GS_ERR_USAGE, "utilization window %" PRId64 " ms: expected 0 or more", window_ms);
    size_t bl = strlen(base_url);
    while (bl > 0 && base_url[bl - 1] == '/')
        bl--;
    if (bl > 1024)
        return gs_fail(err, GS_ERR_USAGE, "Prometheus URL longer than 1024 bytes");
    dopts d;
    opts_of(o, &d);
    pq *q = calloc(1, sizeof *q);
    if (!q)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    q->d = &d;
    q->round = round;
    q->info = info;
    q->fn = fn;
    q->ctx = ctx;
    q->m[0] = GS_UTIL_GPU_UTIL;
    q->m[1] = GS_UTIL_GR_ENGINE_ACTIVE;
    for (int i = 0; i < 2; i++) {
        char expr[256];
        gs_dcgm_promql(q->m[i], window_ms, expr, sizeof expr);
        char esc[3 * sizeof expr];
        url_escape(expr, esc);
        snprintf(q->url[i], sizeof q->url[i], "%.*s/api/v1/query?query=%s", (int)bl, base_url, esc);
        snprintf(q->target[i], sizeof q->target[i], "%.*s %s", (int)bl, base_url,
                 gs_util_metric_name(q->m[i]));
    }
    runner r = {.url = pq_url, .done = pq_done, .ctx = q, .accept = "Accept: application/json"};
    int rc = run(2, &r, &d, info, err);
    int ok = q->ok;
    free(q);
    return rc < 0 ? -1 : ok;
}

/* ---------------------------------------------------------------- one round */

int gs_dcgm_collect(gs_live_store *st, const gs_dcgm_opts *o, gs_util_set *round, gs_dcgm_round *info,
                    gs_dcgm_error_fn fn, void *ctx, gs_error *err)
{
    if (!o)
        return gs_fail(err, GS_ERR_USAGE, "no utilization source given");
    gs_util_set_reset(round);
    gs_dcgm_round dummy;
    if (!info)
        info = &dummy;
    memset(info, 0, sizeof *info);
    dopts d;
    opts_of(o, &d);
    switch (o->mode) {
    case GS_DCGM_PROMETHEUS:
        return gs_dcgm_query_prometheus(o->prometheus, o->window_ms, o, round, info, fn, ctx, err);
    case GS_DCGM_URLS: {
        if (!o->urls || o->nurls == 0)
            return gs_fail(err, GS_ERR_USAGE, "no dcgm-exporter URL given");
        gs_dcgm_endpoint *eps = calloc(o->nurls, sizeof *eps);
        if (!eps)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < o->nurls; i++)
            eps[i] = (gs_dcgm_endpoint){o->urls[i] ? o->urls[i] : "", "", ""};
        int rc = gs_dcgm_scrape(eps, o->nurls, o, round, info, fn, ctx, err);
        free(eps);
        return rc;
    }
    case GS_DCGM_DISCOVER: {
        if (!st)
            return gs_fail(err, GS_ERR_USAGE, "endpoint discovery needs the pod cache");
        gs_dcgm_endpoints eps;
        gs_dcgm_endpoints_init(&eps);
        int rc = gs_dcgm_discover(st, d.port, &eps, err);
        if (rc == 0 && eps.n > d.max_endpoints) {
            gs_error e;
            gs_error_set(&e, GS_ERR_LIMIT, "discovery", 0, 0, NULL,
                         "%zu dcgm-exporter endpoints found; only the first %u are scraped", eps.n,
                         d.max_endpoints);
            report(fn, ctx, info, GS_MON_UTIL_ENDPOINT, "discovery", &e);
            eps.n = d.max_endpoints;
        }
        if (rc == 0)
            rc = gs_dcgm_scrape(eps.v, eps.n, o, round, info, fn, ctx, err);
        gs_dcgm_endpoints_free(&eps);
        return rc;
    }
    }
    return gs_fail(err, GS_ERR_USAGE, "unknown utilization source mode %d", (int)o->mode);
}
