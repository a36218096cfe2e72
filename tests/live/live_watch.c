/*
 * live_watch.c - watches, retries and informers (lib/live) against the real control plane
 * of the harness: run as `controlplane.py exec STATE -- live_watch CONTROLPLANE_PY STATE`
 * (the last two to restart kube-apiserver and compact etcd). It restarts the shared API
 * server: ctest runs it alone (RUN_SERIAL).
 *
 *  - the streaming list (ADDED events, then the initial-events-end bookmark), then a watch
 *    sees ADDED/MODIFIED/DELETED of a pod; a periodic bookmark arrives on a quiet watch;
 *  - a watch stops promptly when asked; the rate limiter spaces requests;
 *  - an unreachable server and a wrong CA fail at once with a clear message, no retries;
 *  - churn: informers for Pod, Namespace and Node while a few hundred objects are created,
 *    relabelled, annotated and deleted in a random order; once quiet, the store equals
 *    `kubectl get -o json` (keys, resourceVersion, labels, annotations);
 *  - kube-apiserver restarted (same port): the informers reconnect and see new objects;
 *    an informer stopped before the restart resumes from its old resourceVersion, meets
 *    410 (etcd compacted, and the new watch cache starts at the current revision),
 *    relists, and its store is right.
 * GS_WATCH_SEED fixes the random order (printed). Exit 0 pass, 1 fail, 77 outside the
 * harness.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpusched/live.h"
#include "util/json_int.h"

static int failures;
static const char *cp_py, *cp_state;
static unsigned long long seed;
static char ns[64];         /* the test's namespace for pods */

#define FAIL(...)                                                                                                      \
    do {                                                                                                               \
        failures++;                                                                                                    \
        fprintf(stderr, "FAIL: " __VA_ARGS__);                                                                         \
        fputc('\n', stderr);                                                                                           \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static gs_live_config *admin_cfg(void)
{
    gs_live_opts o = {.kubeconfig = getenv("GS_KUBECONFIG_ADMIN")};
    gs_error err;
    gs_live_config *cfg = gs_live_config_load(&o, &err);
    if (!cfg) {
        fprintf(stderr, "FAIL: admin kubeconfig: %s\n", err.msg);
        exit(1);
    }
    return cfg;
}

static gs_live_client *client(gs_live_config *cfg, const gs_live_client_opts *co)
{
    gs_error err;
    gs_live_client *c = gs_live_client_new(cfg, co, &err);
    if (!c) {
        fprintf(stderr, "FAIL: client: %s\n", err.msg);
        exit(1);
    }
    return c;
}

/* One write or read through gs_live_do; the answer's status (0: transport failure). */
static int api(gs_live_client *c, const char *method, const char *path, const char *body, const char *ctype,
               gs_strbuf *out)
{
    gs_live_request rq = {.method = method, .path = path, .body = body, .body_len = body ? strlen(body) : 0,
                          .content_type = ctype};
    gs_live_response rs = {.body = GS_STRBUF_INIT};
    gs_error err;
    gs_error_clear(&err);
    int rc = gs_live_do(c, &rq, &rs, &err);
    if (rc && rs.http != 404 && rs.http != 409)
        fprintf(stderr, "note: %s %s: %s\n", method, path, err.msg);
    if (out) {
        gs_strbuf_reset(out);
        gs_strbuf_add(out, gs_strbuf_cstr(&rs.body), rs.body.len);
    }
    int http = rs.http;
    gs_live_response_free(&rs);
    return http;
}

static int run_cp(const char *cmd)
{
    char line[2048];
    snprintf(line, sizeof line, "python3 '%s' %s '%s'", cp_py, cmd, cp_state);
    double t0 = now_s();
    int rc = system(line);
    printf("   (%s took %.1f s)\n", cmd, now_s() - t0);
    return rc;
}

/* ---------------------------------------------------------------- events collected */

typedef struct seen {
    pthread_mutex_t mu;
    char log[64][96];       /* "TYPE name rv" */
    int n;
    int bookmarks, initial_end;
    double first_bookmark_at; /* a periodic one (not the initial-events-end) */
    double t0;
    const char *stop_after; /* "DELETED <name>": end the watch there */
    bool stop_on_bookmark;
} seen;

static void obj_name(const gs_live_watch_event *ev, char *out, size_t cap)
{
    /* tests only: the name from the object's text with the strict reader */
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_jv root;
    out[0] = '\0';
    if (!gs_json_parse("event", 1, ev->object, ev->object_len, NULL, &a, &root, NULL)) {
        const gs_jv *n = gs_json_get(gs_json_get(&root, "metadata"), "name");
        if (n && n->t == GS_JSTR)
            snprintf(out, cap, "%s", n->s);
    }
    gs_arena_free(&a);
}

static int on_ev(void *ctx, const gs_live_watch_event *ev, gs_error *err)
{
    (void)err;
    seen *s = ctx;
    char name[64];
    obj_name(ev, name, sizeof name);
    pthread_mutex_lock(&s->mu);
    if (ev->type == GS_LIVE_WATCH_BOOKMARK) {
        s->bookmarks++;
        if (ev->initial_events_end)
            s->initial_end++;
        else if (!s->first_bookmark_at)
            s->first_bookmark_at = now_s() - s->t0;
    }
    if (s->n < 64)
        snprintf(s->log[s->n++], sizeof s->log[0], "%s %s%s", gs_live_watch_event_type_name(ev->type), name,
                 ev->initial_events_end ? "(initial-events-end)" : "");
    char last[96];
    snprintf(last, sizeof last, "%s %s", gs_live_watch_event_type_name(ev->type), name);
    int stop = (s->stop_after && !strcmp(last, s->stop_after)) ||
               (s->stop_on_bookmark && ev->type == GS_LIVE_WATCH_BOOKMARK && !ev->initial_events_end);
    pthread_mutex_unlock(&s->mu);
    return stop; /* > 0 ends the watch */
}

typedef struct watcher {
    gs_live_client *c;
    char path[256];
    gs_live_watch_opts o;
    seen *s;
    gs_live_watch_result res;
    gs_error err;
    int rc;
    double took;
    pthread_t th;
} watcher;

static void *watch_thread(void *arg)
{
    watcher *w = arg;
    double t0 = now_s();
    gs_error_clear(&w->err);
    w->rc = gs_live_watch(w->c, w->path, &w->o, on_ev, w->s, &w->res, &w->err);
    w->took = now_s() - t0;
    return NULL;
}

static const char *pod_json(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"labels\":{\"app\":\"gs-watch\"}},"
             "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"registry.k8s.io/pause:3.10\"}]}}",
             name);
    return buf;
}

/* ---------------------------------------------------------------- the streaming list, a watch */
static void check_watch(gs_live_client *c)
{
    char path[256], body[512], p[300];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "w%d", i);
        if (api(c, "POST", path, pod_json(body, sizeof body, name), "application/json", NULL) != 201)
            FAIL("create pod %s", name);
    }
    /* the streaming list: three ADDED, then the end bookmark */
    seen s = {.mu = PTHREAD_MUTEX_INITIALIZER, .t0 = now_s()};
    gs_live_watch_opts o = {.send_initial_events = true, .timeout_s = 30};
    gs_live_watch_result res;
    gs_error err;
    s.stop_on_bookmark = false;
    /* end the stream at the end bookmark: stop_after matches "BOOKMARK " (no name) */
    s.stop_after = "BOOKMARK ";
    if (gs_live_watch(c, path, &o, on_ev, &s, &res, &err))
        FAIL("streaming list: %s", err.msg);
    if (s.n != 4 || strcmp(s.log[0], "ADDED w0") || strcmp(s.log[2], "ADDED w2") ||
        strcmp(s.log[3], "BOOKMARK (initial-events-end)") || !res.initial_events_end || !res.resource_version[0])
        FAIL("streaming list: %d events, last \"%s\", end %d", s.n, s.n ? s.log[s.n - 1] : "", res.initial_events_end);
    else
        printf("ok: streaming list: 3 ADDED then the initial-events-end bookmark at resourceVersion %s\n",
               res.resource_version);
    /* a watch from there sees a new pod, its change and its deletion */
    seen s2 = {.mu = PTHREAD_MUTEX_INITIALIZER, .t0 = now_s(), .stop_after = "DELETED w9"};
    gs_live_config *cfg = admin_cfg();
    watcher w = {.c = client(cfg, NULL), .s = &s2};
    snprintf(w.path, sizeof w.path, "%s", path);
    w.o = (gs_live_watch_opts){.resource_version = res.resource_version, .timeout_s = 60};
    pthread_create(&w.th, NULL, watch_thread, &w);
    usleep(300000);
    api(c, "POST", path, pod_json(body, sizeof body, "w9"), "application/json", NULL);
    snprintf(p, sizeof p, "%s/w9", path);
    api(c, "PATCH", p, "{\"metadata\":{\"labels\":{\"changed\":\"yes\"}}}", "application/merge-patch+json", NULL);
    api(c, "DELETE", p, NULL, NULL, NULL);
    pthread_join(w.th, NULL);
    /* the deletion is a MODIFIED (deletionTimestamp set) then the DELETED */
    bool mods = s2.n >= 3;
    for (int i = 1; i + 1 < s2.n; i++)
        mods = mods && !strcmp(s2.log[i], "MODIFIED w9");
    if (w.rc || !mods || strcmp(s2.log[0], "ADDED w9") || strcmp(s2.log[s2.n - 1], "DELETED w9"))
        FAIL("watch: rc %d (%s), %d events: %s ... %s", w.rc, w.err.msg, s2.n, s2.log[0], s2.n ? s2.log[s2.n - 1] : "");
    else
        printf("ok: watch from that resourceVersion: ADDED, %d MODIFIED, DELETED w9 (%.2f s)\n", s2.n - 2, w.took);
    gs_live_client_free(w.c);
    gs_live_config_free(cfg);
}

/* A watch ends within about a second of its stop flag. */
static void check_stop(gs_live_config *cfg)
{
    static int stop;
    seen s = {.mu = PTHREAD_MUTEX_INITIALIZER, .t0 = now_s()};
    watcher w = {.c = client(cfg, NULL), .s = &s};
    snprintf(w.path, sizeof w.path, "/api/v1/namespaces/%s/configmaps", ns);
    w.o = (gs_live_watch_opts){.timeout_s = 300, .stop = &stop};
    pthread_create(&w.th, NULL, watch_thread, &w);
    usleep(1500000);
    double t0 = now_s();
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    pthread_join(w.th, NULL);
    double dt = now_s() - t0;
    if (w.rc || w.res.end != GS_LIVE_END_STOPPED || dt > 1.5)
        FAIL("stop: rc %d end %d after %.2f s (%s)", w.rc, (int)w.res.end, dt, w.err.msg);
    else
        printf("ok: a watch stops %.2f s after its flag\n", dt);
    gs_live_client_free(w.c);
}

/* The rate limiter: 2 per second, burst 1: six requests take at least 2.5 s. How many of
 * them had to wait depends on how long each request took (a slow one, under ASan on a busy
 * machine, lets the bucket refill): the elapsed time is the behaviour checked. */
static void check_rate(void)
{
    gs_live_config *cfg = admin_cfg();
    gs_live_config_set_rate(cfg, 2, 1);
    gs_live_client *c = client(cfg, NULL);
    double t0 = now_s();
    for (int i = 0; i < 6; i++)
        if (api(c, "GET", "/version", NULL, NULL, NULL) != 200)
            FAIL("GET /version");
    double dt = now_s() - t0;
    gs_live_client_stats st;
    gs_live_client_stats_get(c, &st);
    if (dt < 2.2 || st.throttled < 1 || st.requests != 6)
        FAIL("rate: 6 requests in %.2f s, %llu throttled", dt, (unsigned long long)st.throttled);
    else
        printf("ok: rate 2/s burst 1: 6 requests in %.2f s (%llu waited %llu ms)\n", dt,
               (unsigned long long)st.throttled, (unsigned long long)st.throttled_ms);
    gs_live_client_free(c);
    gs_live_config_free(cfg);
}

/* Unreachable server and wrong CA: a clear error at once, no retries. */
static void check_fail_fast(void)
{
    for (int which = 0; which < 2; which++) {
        gs_live_config *cfg = admin_cfg();
        char *ca = NULL;
        if (which == 0) {
            cfg->server = "https://127.0.0.1:1";
        } else {
            /* a certificate that did not sign the server's: the client certificate */
            char p[600];
            snprintf(p, sizeof p, "%s/admin.crt", getenv("GS_CP_DIR"));
            size_t len;
            gs_error e;
            ca = gs_read_file(p, 1 << 20, &len, &e);
            cfg->ca_pem = ca;
            cfg->ca_len = len;
        }
        gs_live_client *c = client(cfg, NULL);
        gs_live_request rq = {.path = "/api/v1/nodes"};
        gs_live_response rs = {.body = GS_STRBUF_INIT};
        gs_error err;
        double t0 = now_s();
        int rc = gs_live_do(c, &rq, &rs, &err);
        double dt = now_s() - t0;
        const char *want = which == 0 ? "127.0.0.1:1" : "not signed by the cluster's certificate authority";
        if (rc == 0 || dt > 3 || rs.retries || err.code != GS_ERR_IO || !strstr(err.msg, want))
            FAIL("%s: rc %d in %.2f s, %u retries: %s", which ? "wrong CA" : "unreachable", rc, dt, rs.retries, err.msg);
        else
            printf("ok: %s fails in %.2f s: %s\n", which ? "wrong CA" : "unreachable server", dt, err.msg);
        gs_live_response_free(&rs);
        gs_live_client_free(c);
        if (which == 0)
            cfg->server = NULL; /* arena-owned string was replaced by a literal */
        gs_live_config_free(cfg);
        free(ca);
    }
}

/* ---------------------------------------------------------------- 429 from the real server
 * API Priority and Fairness: a FlowSchema sends one service account's requests to a
 * priority level with no concurrency of its own and limitResponse Reject, so requests that
 * find its seat taken get 429 with Retry-After: 1. Threads of that account race; a request
 * that met a 429 is retried after the delay and ends 200. */
typedef struct racer {
    gs_live_config *cfg;
    int ok, retried, failed;
    double max_retried_s;
    pthread_t th;
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    gs_live_client *c = client(r->cfg, NULL);
    for (int i = 0; i < 25; i++) {
        gs_live_request rq = {.path = "/version"};
        gs_live_response rs = {.body = GS_STRBUF_INIT};
        gs_error err;
        double t0 = now_s();
        int rc = gs_live_do(c, &rq, &rs, &err);
        double dt = now_s() - t0;
        if (rc)
            r->failed++;
        else
            r->ok++;
        if (rs.retries) {
            r->retried++;
            if (dt > r->max_retried_s)
                r->max_retried_s = dt;
        }
        gs_live_response_free(&rs);
    }
    gs_live_client_free(c);
    return NULL;
}

static void check_429(gs_live_client *admin)
{
    static const char *const objs[][2] = {
        {"/api/v1/namespaces/gs-system/serviceaccounts",
         "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\"metadata\":{\"name\":\"gs-throttled\"}}"},
        {"/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
         "{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"PriorityLevelConfiguration\",\"metadata\":"
         "{\"name\":\"gs-reject\"},\"spec\":{\"type\":\"Limited\",\"limited\":{\"nominalConcurrencyShares\":0,"
         "\"lendablePercent\":0,\"borrowingLimitPercent\":0,\"limitResponse\":{\"type\":\"Reject\"}}}}"},
        {"/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
         "{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"FlowSchema\",\"metadata\":{\"name\":"
         "\"gs-reject\"},\"spec\":{\"priorityLevelConfiguration\":{\"name\":\"gs-reject\"},\"matchingPrecedence\":50,"
         "\"rules\":[{\"subjects\":[{\"kind\":\"ServiceAccount\",\"serviceAccount\":{\"name\":\"gs-throttled\","
         "\"namespace\":\"gs-system\"}}],\"nonResourceRules\":[{\"verbs\":[\"*\"],\"nonResourceURLs\":[\"*\"]}]}]}}"},
    };
    for (size_t i = 0; i < 3; i++) {
        int h = api(admin, "POST", objs[i][0], objs[i][1], "application/json", NULL);
        if (h != 201 && h != 409)
            FAIL("create %s: HTTP %d", objs[i][0], h);
    }
    gs_strbuf tok = GS_STRBUF_INIT;
    api(admin, "POST", "/api/v1/namespaces/gs-system/serviceaccounts/gs-throttled/token",
        "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\",\"spec\":{\"expirationSeconds\":3600}}",
        "application/json", &tok);
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_jv root;
    const gs_jv *t = NULL;
    if (!gs_json_parse("token", 1, gs_strbuf_cstr(&tok), tok.len, NULL, &a, &root, NULL))
        t = gs_json_get(gs_json_get(&root, "status"), "token");
    char kc[600];
    snprintf(kc, sizeof kc, "%s/kubeconfig-gs-throttled", getenv("GS_CP_DIR"));
    FILE *f = t && t->t == GS_JSTR ? fopen(kc, "w") : NULL;
    if (!f) {
        FAIL("no token for gs-throttled");
        gs_arena_free(&a);
        gs_strbuf_free(&tok);
        return;
    }
    fprintf(f,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: gs\n  cluster:\n    server: %s\n"
            "    certificate-authority: %s\nusers:\n- name: t\n  user:\n    token: %s\ncontexts:\n- name: t\n"
            "  context: {cluster: gs, user: t}\ncurrent-context: t\n",
            getenv("GS_APISERVER_URL"), getenv("GS_CA_FILE"), t->s);
    fclose(f);
    gs_arena_free(&a);
    gs_strbuf_free(&tok);
    gs_live_opts o = {.kubeconfig = kc};
    gs_error err;
    gs_live_config *cfg = gs_live_config_load(&o, &err);
    if (!cfg) {
        FAIL("throttled kubeconfig: %s", err.msg);
        return;
    }
    gs_live_config_set_rate(cfg, 0, 0); /* no client-side limit: the server's is tested */
    usleep(1500000);                    /* the APF configuration controller picks it up */
    enum { N = 16 };
    racer r[N];
    int ok = 0, retried = 0, failed = 0;
    double max_s = 0;
    double t0 = now_s();
    for (int round = 0; round < 3 && !retried; round++) {
        for (int i = 0; i < N; i++) {
            r[i] = (racer){.cfg = cfg};
            pthread_create(&r[i].th, NULL, race, &r[i]);
        }
        for (int i = 0; i < N; i++) {
            pthread_join(r[i].th, NULL);
            ok += r[i].ok;
            retried += r[i].retried;
            failed += r[i].failed;
            if (r[i].max_retried_s > max_s)
                max_s = r[i].max_retried_s;
        }
    }
    if (failed)
        FAIL("429: %d of %d requests failed after their retries", failed, ok + failed);
    else if (!retried)
        printf("note: no 429 provoked in %d requests (%.1f s): the retry on 429 is not exercised here\n", ok,
               now_s() - t0);
    else if (max_s < 0.9)
        FAIL("429: a retried request took %.2f s, Retry-After is 1 s", max_s);
    else
        printf("ok: 429 with Retry-After from API Priority and Fairness: %d of %d requests retried, all ended 200 "
               "(slowest %.2f s)\n",
               retried, ok, max_s);
    gs_live_config_free(cfg);
    api(admin, "DELETE", "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/gs-reject", NULL, NULL, NULL);
    api(admin, "DELETE", "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/gs-reject", NULL, NULL,
        NULL);
}

/* A periodic bookmark on a quiet watch (the API server sends one about a minute in). */
static seen bm = {.mu = PTHREAD_MUTEX_INITIALIZER, .stop_on_bookmark = true};
static watcher bmw;
static gs_live_config *bmcfg;

static void bookmark_begin(void)
{
    bmcfg = admin_cfg();
    bmw.c = client(bmcfg, NULL);
    bmw.s = &bm;
    bm.t0 = now_s();
    snprintf(bmw.path, sizeof bmw.path, "/api/v1/namespaces/%s/secrets", ns);
    gs_strbuf b = GS_STRBUF_INIT;
    api(bmw.c, "GET", bmw.path, NULL, NULL, &b);
    static char rv[GS_LIVE_RV_MAX];
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_live_page_info pi;
    gs_error err;
    if (!gs_live_page_parse(gs_strbuf_cstr(&b), b.len, &a, &pi, &err) && pi.resource_version)
        snprintf(rv, sizeof rv, "%s", pi.resource_version);
    gs_arena_free(&a);
    gs_strbuf_free(&b);
    bmw.o = (gs_live_watch_opts){.resource_version = rv, .timeout_s = 150};
    pthread_create(&bmw.th, NULL, watch_thread, &bmw);
}

static void bookmark_end(void)
{
    pthread_join(bmw.th, NULL);
    if (bmw.rc || !bm.bookmarks || bm.first_bookmark_at <= 0)
        FAIL("no periodic bookmark in %.0f s: rc %d (%s)", bmw.took, bmw.rc, bmw.err.msg);
    else
        printf("ok: a quiet watch got a bookmark %.1f s after it began\n", bm.first_bookmark_at);
    gs_live_client_free(bmw.c);
    gs_live_config_free(bmcfg);
}

/* ---------------------------------------------------------------- store == kubectl */

typedef struct objinfo {
    char key[160];
    char rv[GS_LIVE_RV_MAX];
    char *labels, *annotations; /* canonical "k=v\n" lines, sorted */
} objinfo;

typedef struct objset {
    objinfo *v;
    size_t n, cap;
} objset;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static char *canon_map(const gs_jv *m)
{
    gs_strbuf sb = GS_STRBUF_INIT;
    if (m && m->t == GS_JOBJ && m->n) {
        char **lines = calloc(m->n, sizeof *lines);
        for (uint32_t i = 0; i < m->n; i++) {
            const gs_jv *k = &m->kids[2 * i], *v = &m->kids[2 * i + 1];
            size_t n = strlen(k->s) + (v->t == GS_JSTR ? strlen(v->s) : 1) + 3;
            lines[i] = malloc(n);
            snprintf(lines[i], n, "%s=%s", k->s, v->t == GS_JSTR ? v->s : "?");
        }
        qsort(lines, m->n, sizeof *lines, cmp_str);
        for (uint32_t i = 0; i < m->n; i++) {
            gs_strbuf_puts(&sb, lines[i]);
            gs_strbuf_putc(&sb, '\n');
            free(lines[i]);
        }
        free(lines);
    }
    gs_strbuf_putc(&sb, '\0');
    return gs_strbuf_detach(&sb);
}

static void add_obj(objset *s, const gs_jv *o)
{
    const gs_jv *md = gs_json_get(o, "metadata");
    const gs_jv *name = gs_json_get(md, "name"), *nsv = gs_json_get(md, "namespace"),
                *rv = gs_json_get(md, "resourceVersion");
    if (!name || name->t != GS_JSTR)
        return;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
    }
    objinfo *x = &s->v[s->n++];
    memset(x, 0, sizeof *x);
    if (nsv && nsv->t == GS_JSTR)
        snprintf(x->key, sizeof x->key, "%s/%s", nsv->s, name->s);
    else
        snprintf(x->key, sizeof x->key, "%s", name->s);
    snprintf(x->rv, sizeof x->rv, "%s", rv && rv->t == GS_JSTR ? rv->s : "");
    x->labels = canon_map(gs_json_get(md, "labels"));
    const gs_jv *an = gs_json_get(md, "annotations");
    x->annotations = canon_map(an);
}

static void objset_free(objset *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].labels);
        free(s->v[i].annotations);
    }
    free(s->v);
    memset(s, 0, sizeof *s);
}

static int cmp_obj(const void *a, const void *b) { return strcmp(((const objinfo *)a)->key, ((const objinfo *)b)->key); }

/* kubectl get RESOURCE [-n NS] -o json, the items whose name starts with prefix */
static int kubectl_set(const char *resource, const char *nsopt, const char *prefix, objset *out)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' --kubeconfig '%s' get %s %s%s -o json", getenv("GS_KUBECTL"),
             getenv("GS_KUBECONFIG_ADMIN"), resource, nsopt ? "-n " : "", nsopt ? nsopt : "");
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    gs_strbuf sb = GS_STRBUF_INIT;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        gs_strbuf_add(&sb, buf, n);
    int st = pclose(f);
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_jv root;
    gs_json_limits lim = {.max_depth = 128};
    gs_error err;
    int rc = -1;
    if (st == 0 && !gs_json_parse("kubectl", 1, gs_strbuf_cstr(&sb), sb.len, &lim, &a, &root, &err)) {
        const gs_jv *items = gs_json_get(&root, "items");
        for (uint32_t i = 0; items && items->t == GS_JARR && i < items->n; i++) {
            const gs_jv *nm = gs_json_get(gs_json_get(&items->kids[i], "metadata"), "name");
            if (nm && nm->t == GS_JSTR && !strncmp(nm->s, prefix, strlen(prefix)))
                add_obj(out, &items->kids[i]);
        }
        rc = 0;
    }
    gs_arena_free(&a);
    gs_strbuf_free(&sb);
    qsort(out->v, out->n, sizeof *out->v, cmp_obj);
    return rc;
}

typedef struct store_walk {
    objset *out;
    const char *prefix; /* of the key */
} store_walk;

static int on_store(void *ctx, const char *key, const char *obj, size_t len)
{
    store_walk *w = ctx;
    if (strncmp(key, w->prefix, strlen(w->prefix)))
        return 0;
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_jv root;
    gs_json_limits lim = {.max_depth = 128};
    if (!gs_json_parse("store", 1, obj, len, &lim, &a, &root, NULL))
        add_obj(w->out, &root);
    else
        FAIL("the store's text of %s is not JSON", key);
    gs_arena_free(&a);
    return 0;
}

/* The store's objects of kind k under key prefix equal kubectl's: 0, else the differences. */
static int compare(gs_live_store *st, gs_live_kind k, const char *resource, const char *nsopt, const char *prefix,
                   bool verbose)
{
    objset want = {0}, have = {0};
    char kp[128];
    snprintf(kp, sizeof kp, "%s%s%s", nsopt ? nsopt : "", nsopt ? "/" : "", prefix);
    if (kubectl_set(resource, nsopt, prefix, &want)) {
        if (verbose)
            FAIL("kubectl get %s failed", resource);
        return -1;
    }
    store_walk w = {&have, kp};
    gs_live_store_each(st, k, on_store, &w);
    qsort(have.v, have.n, sizeof *have.v, cmp_obj);
    int diffs = 0;
    size_t i = 0, j = 0;
    while (i < want.n || j < have.n) {
        int c = i == want.n ? 1 : j == have.n ? -1 : strcmp(want.v[i].key, have.v[j].key);
        if (c < 0) {
            if (verbose && diffs < 5)
                fprintf(stderr, "  %s %s: in kubectl, not in the store\n", resource, want.v[i].key);
            i++, diffs++;
        } else if (c > 0) {
            if (verbose && diffs < 5)
                fprintf(stderr, "  %s %s: in the store, not in kubectl\n", resource, have.v[j].key);
            j++, diffs++;
        } else {
            const objinfo *a = &want.v[i], *b = &have.v[j];
            if (strcmp(a->rv, b->rv) || strcmp(a->labels, b->labels) || strcmp(a->annotations, b->annotations)) {
                if (verbose && diffs < 5)
                    fprintf(stderr, "  %s %s: rv %s vs %s, labels [%s] vs [%s]\n", resource, a->key, a->rv, b->rv,
                            a->labels, b->labels);
                diffs++;
            }
            i++, j++;
        }
    }
    if (verbose)
        printf("   %s: kubectl %zu, store %zu, %d differences\n", resource, want.n, have.n, diffs);
    objset_free(&want);
    objset_free(&have);
    return diffs;
}

/* Poll until the store equals the server (or timeout): the invariant once quiet. */
static int converge(gs_live_store *st, const char *prefix, double timeout)
{
    char nsprefix[128];
    snprintf(nsprefix, sizeof nsprefix, "%s", prefix);
    double t0 = now_s();
    for (;;) {
        int d = compare(st, GS_LIVE_POD, "pods", ns, "", false) + compare(st, GS_LIVE_NODE, "nodes", NULL, prefix, false) +
                compare(st, GS_LIVE_NAMESPACE, "namespaces", NULL, nsprefix, false);
        if (d == 0) {
            printf("   converged %.1f s after the last change\n", now_s() - t0);
            compare(st, GS_LIVE_POD, "pods", ns, "", true);
            compare(st, GS_LIVE_NODE, "nodes", NULL, prefix, true);
            compare(st, GS_LIVE_NAMESPACE, "namespaces", NULL, nsprefix, true);
            return 0;
        }
        if (now_s() - t0 > timeout) {
            compare(st, GS_LIVE_POD, "pods", ns, "", true);
            compare(st, GS_LIVE_NODE, "nodes", NULL, prefix, true);
            compare(st, GS_LIVE_NAMESPACE, "namespaces", NULL, nsprefix, true);
            return -1;
        }
        usleep(500000);
    }
}

static uint64_t rng_state;
static uint64_t rnd(void)
{
    uint64_t x = rng_state += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void print_stats(gs_live_informer *inf, gs_live_kind k, const char *what)
{
    gs_live_informer_stats s;
    gs_live_informer_stats_get(inf, k, &s);
    printf("   %s: synced %d (%s), lists %llu, relists %llu, 410s %llu, watches %llu, reconnects %llu, events %llu, "
           "bookmarks %llu, rv %s%s%s\n",
           what, s.synced, s.watch_list ? "streaming list" : "pages", (unsigned long long)s.lists,
           (unsigned long long)s.relists, (unsigned long long)s.gone, (unsigned long long)s.watches,
           (unsigned long long)s.reconnects, (unsigned long long)s.events, (unsigned long long)s.bookmarks,
           s.resource_version, s.last_error[0] ? ", last error: " : "", s.last_error);
}

/* Random creates, label and annotation changes and deletes of pods, nodes and namespaces. */
static void churn(gs_live_client *c, const char *prefix, int ops)
{
    enum { NP = 40, NN = 12, NS = 6 };
    int pod_live[NP] = {0}, node_live[NN] = {0}, ns_state[NS] = {0}; /* ns: 0 none, 1 live, 2 terminating */
    char path[256], body[768];
    int counts[3] = {0};
    for (int op = 0; op < ops; op++) {
        int what = (int)(rnd() % 10); /* 6 pods, 3 nodes, 1 namespaces */
        int verb = (int)(rnd() % 3);  /* create/patch/delete */
        char patch[256];
        snprintf(patch, sizeof patch,
                 "{\"metadata\":{\"labels\":{\"l%d\":%s},\"annotations\":{\"gs.example/a%d\":\"v%llu \\\"q\\\"\"}}}",
                 (int)(rnd() % 4), rnd() % 3 ? "\"x\"" : "null", (int)(rnd() % 3), (unsigned long long)(rnd() % 1000));
        if (what < 6) {
            int i = (int)(rnd() % NP);
            snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
            char one[320];
            snprintf(one, sizeof one, "%s/p%d", path, i);
            if (!pod_live[i]) {
                char name[32];
                snprintf(name, sizeof name, "p%d", i);
                pod_live[i] = api(c, "POST", path, pod_json(body, sizeof body, name), "application/json", NULL) == 201;
            } else if (verb < 2) {
                api(c, "PATCH", one, patch, "application/merge-patch+json", NULL);
            } else {
                api(c, "DELETE", one, NULL, NULL, NULL);
                pod_live[i] = 0;
            }
            counts[0]++;
        } else if (what < 9) {
            int i = (int)(rnd() % NN);
            char one[320];
            snprintf(one, sizeof one, "/api/v1/nodes/%s-n%d", prefix, i);
            if (!node_live[i]) {
                snprintf(body, sizeof body,
                         "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s-n%d\",\"labels\":"
                         "{\"nvidia.com/gpu.present\":\"true\"}}}",
                         prefix, i);
                node_live[i] = api(c, "POST", "/api/v1/nodes", body, "application/json", NULL) == 201;
            } else if (verb < 2) {
                api(c, "PATCH", one, patch, "application/merge-patch+json", NULL);
            } else {
                api(c, "DELETE", one, NULL, NULL, NULL);
                node_live[i] = 0;
            }
            counts[1]++;
        } else {
            int i = (int)(rnd() % NS);
            char one[320];
            snprintf(one, sizeof one, "/api/v1/namespaces/%s-ns%d", prefix, i);
            if (ns_state[i] == 0) {
                snprintf(body, sizeof body,
                         "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s-ns%d\"}}", prefix, i);
                ns_state[i] = api(c, "POST", "/api/v1/namespaces", body, "application/json", NULL) == 201;
            } else if (ns_state[i] == 1 && verb < 2) {
                api(c, "PATCH", one, patch, "application/merge-patch+json", NULL);
            } else if (ns_state[i] == 1) {
                /* no namespace controller here: it stays Terminating (a MODIFIED event) */
                api(c, "DELETE", one, NULL, NULL, NULL);
                ns_state[i] = 2;
            }
            counts[2]++;
        }
    }
    printf("   churn: %d operations (%d on pods, %d on nodes, %d on namespaces)\n", ops, counts[0], counts[1], counts[2]);
}

static void cleanup(gs_live_client *c, const char *prefix)
{
    char p[256];
    for (int i = 0; i < 12; i++) {
        snprintf(p, sizeof p, "/api/v1/nodes/%s-n%d", prefix, i);
        api(c, "DELETE", p, NULL, NULL, NULL);
    }
    snprintf(p, sizeof p, "/api/v1/namespaces/%s/pods", ns);
    api(c, "DELETE", p, NULL, NULL, NULL); /* deletecollection */
}

int main(int argc, char **argv)
{
    if (!getenv("GS_KUBECONFIG_ADMIN") || argc < 3) {
        printf("SKIP: not run inside the control-plane harness (controlplane.py exec STATE -- live_watch PY STATE)\n");
        return 77;
    }
    cp_py = argv[1];
    cp_state = argv[2];
    const char *se = getenv("GS_WATCH_SEED");
    seed = se && *se ? strtoull(se, NULL, 0) : (unsigned long long)time(NULL) % 100000;
    rng_state = seed;
    printf("live_watch: seed %llu (GS_WATCH_SEED=%llu repeats this run)\n", seed, seed);
    double t_start = now_s();
    snprintf(ns, sizeof ns, "gs-watch-%llu", seed);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "gs-churn-%llu", seed);

    gs_live_config *cfg = admin_cfg();
    gs_live_client *c = client(cfg, NULL);
    char body[256];
    snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ns);
    if (api(c, "POST", "/api/v1/namespaces", body, "application/json", NULL) != 201)
        FAIL("create namespace %s", ns);

    bool quick = getenv("GS_WATCH_QUICK") && *getenv("GS_WATCH_QUICK") == '1'; /* no bookmark wait, no restart */
    if (!quick)
        bookmark_begin(); /* runs alongside the checks below, one or two minutes */
    double t = now_s();
    check_watch(c);
    check_stop(cfg);
    check_rate();
    check_fail_fast();
    check_429(c);
    printf("   (watch checks %.1f s)\n", now_s() - t);

    /* informers: Pod, Namespace, Node (streaming lists), and a second one for this
     * namespace's pods only, with pages (no streaming list) */
    t = now_s();
    gs_error err;
    gs_live_store *st = gs_live_store_new(&err), *st2 = gs_live_store_new(&err);
    gs_live_informer_opts io = {.kinds = GS_LIVE_KIND_BIT(GS_LIVE_POD) | GS_LIVE_KIND_BIT(GS_LIVE_NAMESPACE) |
                                         GS_LIVE_KIND_BIT(GS_LIVE_NODE)};
    gs_live_informer *inf = gs_live_informer_new(cfg, st, &io, &err);
    gs_live_informer_opts io2 = {.kinds = GS_LIVE_KIND_BIT(GS_LIVE_POD), .namespace_ = ns, .no_watch_list = true,
                                 .page_limit = 5};
    gs_live_informer *inf2 = gs_live_informer_new(cfg, st2, &io2, &err);
    if (!inf || !inf2 || gs_live_informer_start(inf, &err) || gs_live_informer_start(inf2, &err)) {
        FAIL("informers: %s", err.msg);
        return 1;
    }
    if (gs_live_informer_wait_synced(inf, 0, 30000) || gs_live_informer_wait_synced(inf2, 0, 30000))
        FAIL("informers not synced in 30 s");
    printf("ok: informers synced in %.2f s\n", now_s() - t);

    t = now_s();
    churn(c, prefix, 300);
    printf("   (churn %.1f s)\n", now_s() - t);
    if (converge(st, prefix, 30))
        FAIL("churn: the store does not equal kubectl's view 30 s after the last change (seed %llu)", seed);
    else
        printf("ok: churn: the store equals kubectl get -o json (keys, resourceVersion, labels, annotations)\n");
    print_stats(inf, GS_LIVE_POD, "pods");
    if (compare(st2, GS_LIVE_POD, "pods", ns, "", true))
        FAIL("the paged informer's store differs");

    if (quick) {
        gs_live_informer_free(inf);
        gs_live_informer_free(inf2);
        gs_live_store_free(st);
        gs_live_store_free(st2);
        cleanup(c, prefix);
        gs_live_client_free(c);
        gs_live_config_free(cfg);
        printf("%s (quick, %.1f s)\n", failures ? "live watch: FAILED" : "live watch: passed", now_s() - t_start);
        return failures ? 1 : 0;
    }
    bookmark_end();

    /* the synchronous step: one kind driven in this thread, no threads at all */
    {
        gs_live_store *st3 = gs_live_store_new(&err);
        gs_live_informer_opts io3 = {.kinds = GS_LIVE_KIND_BIT(GS_LIVE_POD), .namespace_ = ns, .watch_timeout_s = 1};
        gs_live_informer *inf3 = gs_live_informer_new(cfg, st3, &io3, &err);
        double t3 = now_s();
        int r1 = inf3 ? gs_live_informer_step(inf3, GS_LIVE_POD, &err) : -1; /* streaming list, then watch 1 s */
        bool synced = inf3 && gs_live_informer_synced(inf3, GS_LIVE_POD);
        int r2 = inf3 ? gs_live_informer_step(inf3, GS_LIVE_POD, &err) : -1; /* a watch of 1 s */
        gs_live_informer_stats s3;
        if (inf3)
            gs_live_informer_stats_get(inf3, GS_LIVE_POD, &s3);
        if (r1 || r2 || !synced || s3.lists != 1 || s3.watches != 2 || compare(st3, GS_LIVE_POD, "pods", ns, "", true))
            FAIL("informer step: %d %d synced %d lists %llu watches %llu (%s)", r1, r2, synced,
                 inf3 ? (unsigned long long)s3.lists : 0ull, inf3 ? (unsigned long long)s3.watches : 0ull, err.msg);
        else
            printf("ok: two synchronous steps (a streaming list with its watch, then a watch) in %.1f s\n",
                   now_s() - t3);
        gs_live_informer_free(inf3);
        gs_live_store_free(st3);
    }

    /* restart: inf keeps running through it; inf2 is stopped first and resumes after it
     * from its old resourceVersion, over objects changed meanwhile and a compaction */
    gs_live_informer_stop(inf2);
    gs_live_informer_stats before2, before;
    gs_live_informer_stats_get(inf2, GS_LIVE_POD, &before2);
    gs_live_informer_stats_get(inf, GS_LIVE_POD, &before);
    char path[256], p1[300];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    if (api(c, "POST", path, pod_json(body, sizeof body, "before-restart"), "application/json", NULL) != 201)
        FAIL("create before-restart");
    snprintf(p1, sizeof p1, "%s/w0", path);
    api(c, "DELETE", p1, NULL, NULL, NULL);
    if (run_cp("compact") != 0)
        FAIL("compact");
    if (run_cp("restart-apiserver") != 0)
        FAIL("restart-apiserver");
    t = now_s();
    if (api(c, "POST", path, pod_json(body, sizeof body, "after-restart"), "application/json", NULL) != 201)
        FAIL("create after-restart");
    gs_strbuf got = GS_STRBUF_INIT;
    char key[128];
    snprintf(key, sizeof key, "%s/after-restart", ns);
    while (gs_live_store_get(st, GS_LIVE_POD, key, &got) != 0 && now_s() - t < 60)
        usleep(200000);
    gs_live_informer_stats after;
    gs_live_informer_stats_get(inf, GS_LIVE_POD, &after);
    if (gs_live_store_get(st, GS_LIVE_POD, key, &got) != 0)
        FAIL("the running informer did not see a pod created after the restart");
    else
        printf("ok: the running informer saw a pod created after the restart %.1f s later (reconnects %llu -> %llu, "
               "relists %llu -> %llu)\n",
               now_s() - t, (unsigned long long)before.reconnects, (unsigned long long)after.reconnects,
               (unsigned long long)before.relists, (unsigned long long)after.relists);
    print_stats(inf, GS_LIVE_POD, "pods");
    if (after.reconnects + after.relists + after.watches <= before.reconnects + before.relists + before.watches)
        FAIL("the running informer did not notice the restart");

    t = now_s();
    if (gs_live_informer_start(inf2, &err))
        FAIL("restart inf2: %s", err.msg);
    gs_live_informer_stats s2 = before2;
    while (now_s() - t < 30) {
        gs_live_informer_stats_get(inf2, GS_LIVE_POD, &s2);
        if (s2.relists > before2.relists)
            break;
        usleep(100000);
    }
    usleep(500000);
    gs_live_informer_stats_get(inf2, GS_LIVE_POD, &s2);
    snprintf(key, sizeof key, "%s/w0", ns);
    bool w0 = gs_live_store_get(st2, GS_LIVE_POD, key, &got) == 0;
    snprintf(key, sizeof key, "%s/before-restart", ns);
    bool br = gs_live_store_get(st2, GS_LIVE_POD, key, &got) == 0;
    if (s2.gone <= before2.gone || s2.relists <= before2.relists || w0 || !br)
        FAIL("resume from an old resourceVersion: 410s %llu -> %llu, relists %llu -> %llu, w0 %s, before-restart %s",
             (unsigned long long)before2.gone, (unsigned long long)s2.gone, (unsigned long long)before2.relists,
             (unsigned long long)s2.relists, w0 ? "still there" : "gone", br ? "there" : "missing");
    else
        printf("ok: resumed from resourceVersion %s: 410, relisted in %.1f s; the deleted pod is gone, the new one "
               "there\n",
               before2.resource_version, now_s() - t);
    print_stats(inf2, GS_LIVE_POD, "pods (paged)");
    if (compare(st2, GS_LIVE_POD, "pods", ns, "", true))
        FAIL("after the relist the paged informer's store differs");
    gs_strbuf_free(&got);

    t = now_s();
    gs_live_informer_free(inf);
    gs_live_informer_free(inf2);
    double stop_took = now_s() - t;
    if (stop_took > 3)
        FAIL("stopping the informers took %.1f s", stop_took);
    else
        printf("ok: informers stopped and joined in %.2f s\n", stop_took);
    gs_live_store_free(st);
    gs_live_store_free(st2);
    cleanup(c, prefix);
    gs_live_client_free(c);
    gs_live_config_free(cfg);
    printf("%s (%.1f s)\n", failures ? "live watch: FAILED" : "live watch: all checks passed", now_s() - t_start);
    return failures ? 1 : 0;
}
