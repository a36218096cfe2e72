/*
 * live_input.c - the CLI's live input: schedule, explain, check and simulate read a cluster
 * through the API server, like kubectl, when no input files are given or when
 * --kubeconfig/--context is given (docs/cli/gpusched.md#live-clusters).
 *
 * Credentials are lib/live's (gs_live_config_load: --kubeconfig, $KUBECONFIG, ~/.kube/config,
 * the in-cluster service account, --context). The read lists every kind of a snapshot
 * (nodes, namespaces, priority classes, resource quotas, PDBs, pods) in every namespace:
 * a node's occupancy needs every pod on it, so -n never narrows the read, only what a
 * command reports. The objects go through the same reader and rules as files, with
 * src.file "context NAME" (or "in-cluster") and no line or column.
 *
 * Nothing goes to stdout. On stderr: with --verbose a line before and after the read;
 * without it, a line only when stderr is a terminal and the read takes more than a second.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "gpusched/live.h"

#define LIVE_CONNECT_TIMEOUT_MS 10000L
#define LIVE_NO_LIMIT_MS (7L * 24 * 3600 * 1000) /* --request-timeout 0: no limit */
#define LIVE_PROGRESS_AFTER_MS 1000

int cli_live_parse_opt(cli_live *o, int id, const char *value, gs_error *err)
{
    switch (id) {
    case CLI_OPT_KUBECONFIG:
        if (!value[0])
            return gs_fail(err, GS_ERR_USAGE, "--kubeconfig: empty file name");
        o->kubeconfig = value;
        return 1;
    case CLI_OPT_CONTEXT:
        if (!value[0])
            return gs_fail(err, GS_ERR_USAGE, "--context: empty context name");
        o->context = value;
        return 1;
    case CLI_OPT_NAMESPACE:
        if (!value[0])
            return gs_fail(err, GS_ERR_USAGE, "-n/--namespace: empty namespace");
        o->namespace_ = value;
        return 1;
    case CLI_OPT_ALL_NAMESPACES: o->all_namespaces = true; return 1;
    case CLI_OPT_REQUEST_TIMEOUT: {
        int64_t s;
        if (gs_parse_duration(value, &s) != 0 || s > 24 * 3600)
            return gs_fail(err, GS_ERR_USAGE,
                           "--request-timeout: expected a duration up to 24h (\"30s\", \"2m\", or "
                           "seconds; 0: no limit), got \"%s\"",
                           value);
        o->has_timeout = true;
        o->timeout_s = s;
        return 1;
    }
    default: return 0;
    }
}

/* Is there a cluster to read without --kubeconfig? The same places gs_live_config_load
 * looks: $KUBECONFIG's files (any that exists), else ~/.kube/config, else in-cluster. */
static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static bool cluster_configured(void)
{
    const char *env = getenv("KUBECONFIG");
    if (env && *env) {
        const char *p = env;
        while (*p) {
            size_t n = strcspn(p, ":");
            if (n > 0 && n < 4096) {
                char path[4096];
                memcpy(path, p, n);
                path[n] = '\0';
                if (file_exists(path))
                    return true;
            }
            p += n;
            if (*p == ':')
                p++;
        }
    } else {
        const char *home = getenv("HOME");
        if (home && *home) {
            char path[4096];
            if ((size_t)snprintf(path, sizeof path, "%s/.kube/config", home) < sizeof path && file_exists(path))
                return true;
        }
    }
    const char *h = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    return h && *h && port && *port;
}

bool cli_live_wanted(const cli_live *o, size_t ninputs)
{
    (void)o;
    return ninputs == 0;
}

int cli_live_validate(const cli_live *o, size_t ninputs, const char *what, gs_error *err)
{
    if (o->namespace_ && o->all_namespaces)
        return gs_fail(err, GS_ERR_USAGE, "-n/--namespace and -A/--all-namespaces exclude each other");
    if (ninputs && (o->kubeconfig || o->context))
        return gs_fail(err, GS_ERR_USAGE,
                       "input files and %s exclude each other: read files, or read the cluster",
                       o->kubeconfig ? "--kubeconfig" : "--context");
    if (!ninputs && !o->kubeconfig && !o->context && !cluster_configured())
        return gs_fail(err, GS_ERR_USAGE,
                       "no input (give %s, or read a cluster: --kubeconfig FILE, $KUBECONFIG or "
                       "~/.kube/config, or the service account in a pod)",
                       what);
    return 0;
}

bool cli_live_ns_match(const cli_live *o, const char *ns)
{
    return !o->namespace_ || !ns || !ns[0] || strcmp(ns, o->namespace_) == 0;
}

/* ---------------------------------------------------------------- progress */
typedef struct progress {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done, started;
    char line[512];
} progress;

static void *progress_main(void *arg)
{
    progress *p = arg;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += LIVE_PROGRESS_AFTER_MS / 1000;
    pthread_mutex_lock(&p->mu);
    while (!p->done) {
        if (pthread_cond_timedwait(&p->cv, &p->mu, &until) == ETIMEDOUT) {
            if (!p->done)
                cli_eprintf("%s\n", p->line);
            break;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void progress_start(progress *p, const cli_live *o, const gs_live_config *cfg)
{
    memset(p, 0, sizeof *p);
    snprintf(p->line, sizeof p->line, "gpusched: reading the cluster of %s (%s) ...", o->source, cfg->server);
    if (o->quiet)
        return;
    if (o->verbose) {
        cli_eprintf("%s\n", p->line);
        return;
    }
    if (!isatty(STDERR_FILENO))
        return;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->started = pthread_create(&p->thread, NULL, progress_main, p) == 0;
    if (!p->started) {
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
    }
}

static void progress_stop(progress *p)
{
    if (!p->started)
        return;
    pthread_mutex_lock(&p->mu);
    p->done = true;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---------------------------------------------------------------- the read */
typedef struct live_conn {
    gs_live_config *cfg;
    gs_live_client *client;
} live_conn;

static void conn_close(live_conn *c)
{
    gs_live_client_free(c->client);
    gs_live_config_free(c->cfg);
    memset(c, 0, sizeof *c);
}

struct gs_live_config *cli_live_config_load(cli_live *o, gs_error *err)
{
    gs_live_opts lo;
    memset(&lo, 0, sizeof lo);
    lo.kubeconfig = o->kubeconfig;
    lo.context = o->context;
    gs_live_config *cfg = gs_live_config_load(&lo, err);
    if (!cfg)
        return NULL;
    if (cfg->context && cfg->context[0])
        snprintf(o->source, sizeof o->source, "context %s", cfg->context);
    else
        snprintf(o->source, sizeof o->source, "in-cluster");
    return cfg;
}

static int conn_open(cli_live *o, live_conn *c, gs_error *err)
{
    memset(c, 0, sizeof *c);
    if (!(c->cfg = cli_live_config_load(o, err)))
        return -1;
    gs_live_client_opts co;
    memset(&co, 0, sizeof co);
    if (o->has_timeout) {
        co.timeout_ms = cli_live_timeout_ms(o, 0);
        co.connect_timeout_ms = co.timeout_ms < LIVE_CONNECT_TIMEOUT_MS ? co.timeout_ms : LIVE_CONNECT_TIMEOUT_MS;
    }
    char agent[64];
    snprintf(agent, sizeof agent, "%s/%s", CLI_PROGRAM, CLI_VERSION);
    co.user_agent = agent;
    if (!(c->client = gs_live_client_new(c->cfg, &co, err))) {
        conn_close(c);
        return -1;
    }
    o->used = true;
    return 0;
}

long cli_live_timeout_ms(const cli_live *o, long dflt)
{
    if (!o->has_timeout)
        return dflt;
    return o->timeout_s ? (long)o->timeout_s * 1000 : LIVE_NO_LIMIT_MS;
}

gs_live_client *cli_live_client(gs_live_config *cfg, const char *component, long timeout_ms, int max_retries,
                                long retry_deadline_ms, gs_error *err)
{
    gs_live_client_opts co;
    memset(&co, 0, sizeof co);
    char agent[64];
    snprintf(agent, sizeof agent, "%s-%s/%s", CLI_PROGRAM, component, CLI_VERSION);
    co.user_agent = agent;
    co.timeout_ms = timeout_ms;
    co.connect_timeout_ms = timeout_ms && timeout_ms < LIVE_CONNECT_TIMEOUT_MS ? timeout_ms : 0;
    co.max_retries = max_retries;
    co.retry_deadline_ms = retry_deadline_ms;
    return gs_live_client_new(cfg, &co, err);
}

int cli_live_probe(gs_live_config *cfg, const char *component, uint32_t kinds, long timeout_ms, gs_error *err)
{
    gs_live_client *c = cli_live_client(cfg, component, timeout_ms, 0, 0, err);
    if (!c)
        return -1;
    int rc = 0;
    gs_live_response rs;
    memset(&rs, 0, sizeof rs);
    for (int k = 0; rc == 0 && k < GS_LIVE_NKINDS; k++) {
        if (!(kinds & GS_LIVE_KIND_BIT(k)))
            continue;
        char path[256];
        if (!gs_live_kind_path((gs_live_kind)k, NULL, path, sizeof path)) {
            rc = gs_fail(err, GS_ERR_INTERNAL, "no path for kind %d", k);
            break;
        }
        gs_live_query q = {"limit", "1"};
        gs_live_request rq = {.path = path, .query = &q, .nquery = 1};
        rc = gs_live_do(c, &rq, &rs, err);
        const gs_live_kind_info *ki = gs_live_kind_get((gs_live_kind)k);
        if (rc && ki && ki->optional && (rs.http == 404 || rs.http == 403)) {
            rc = 0; /* an optional kind not served or not allowed: read as none later */
            gs_error_clear(err);
        }
    }
    gs_live_response_free(&rs);
    gs_live_client_free(c);
    return rc;
}

static void report_read(const cli_live *o, const gs_snapshot *s, double t0)
{
    if (!o->verbose || o->quiet)
        return;
    cli_eprintf("gpusched: read %zu node%s, %zu namespace%s, %zu priority class%s, %zu resource quota%s, "
                "%zu PDB%s and %zu pod%s from %s in %.2f s\n",
                s->nodes.n, s->nodes.n == 1 ? "" : "s", s->namespaces.n, s->namespaces.n == 1 ? "" : "s",
                s->priority_classes.n, s->priority_classes.n == 1 ? "" : "es", s->quotas.n,
                s->quotas.n == 1 ? "" : "s", s->pdbs.n, s->pdbs.n == 1 ? "" : "s", s->pods.n,
                s->pods.n == 1 ? "" : "s", o->source, now_s() - t0);
}

int cli_live_read(cli_live *o, gs_snapshot *s, const gs_read_opts *ro, gs_error *err)
{
    live_conn c;
    if (conn_open(o, &c, err) != 0)
        return -1;
    gs_read_opts opts;
    if (ro)
        opts = *ro;
    else
        memset(&opts, 0, sizeof opts);
    opts.no_positions = true;
    gs_live_read_opts lr;
    memset(&lr, 0, sizeof lr);
    lr.kinds = GS_LIVE_SNAPSHOT_KINDS; /* every namespace: -n filters what is reported */
    lr.name = o->source;
    double t0 = now_s();
    progress pg;
    progress_start(&pg, o, c.cfg);
    int rc = gs_live_read_snapshot(c.client, &lr, s, &opts, err);
    progress_stop(&pg);
    if (rc == 0)
        report_read(o, s, t0);
    conn_close(&c);
    return rc;
}

int cli_live_fetch(cli_live *o, gs_live_store **store, gs_error *err)
{
    *store = NULL;
    live_conn c;
    if (conn_open(o, &c, err) != 0)
        return -1;
    gs_live_store *st = gs_live_store_new(err);
    int rc = st ? 0 : -1;
    double t0 = now_s();
    progress pg;
    progress_start(&pg, o, c.cfg);
    for (int k = 0; rc == 0 && k < GS_LIVE_NKINDS; k++) {
        if (!(GS_LIVE_SNAPSHOT_KINDS & GS_LIVE_KIND_BIT(k)))
            continue;
        char path[256];
        if (!gs_live_kind_path((gs_live_kind)k, NULL, path, sizeof path)) {
            rc = gs_fail(err, GS_ERR_INTERNAL, "no path for kind %d", k);
            break;
        }
        /* a relist per kind; an optional kind refused (404/403) reads as none */
        rc = gs_live_store_list(c.client, st, (gs_live_kind)k, path, 0, NULL, 0, err) < 0 ? -1 : 0;
    }
    progress_stop(&pg);
    conn_close(&c);
    if (rc != 0) {
        gs_live_store_free(st);
        return -1;
    }
    if (o->verbose && !o->quiet) {
        gs_live_store_stats n, p;
        gs_live_store_stats_get(st, GS_LIVE_NODE, &n);
        gs_live_store_stats_get(st, GS_LIVE_POD, &p);
        cli_eprintf("gpusched: read %zu node%s and %zu pod%s (and their namespaces, priority classes, "
                    "resource quotas and PDBs) from %s in %.2f s\n",
                    n.objects, n.objects == 1 ? "" : "s", p.objects, p.objects == 1 ? "" : "s", o->source,
                    now_s() - t0);
    }
    *store = st;
    return 0;
}

int cli_live_store_snapshot(const cli_live *o, gs_live_store *store, gs_snapshot *s, const gs_read_opts *ro,
                            gs_error *err)
{
    gs_read_opts opts;
    if (ro)
        opts = *ro;
    else
        memset(&opts, 0, sizeof opts);
    opts.no_positions = true;
    return gs_live_store_snapshot(store, GS_LIVE_SNAPSHOT_KINDS, s, o->source, &opts, err);
}

int cli_read_cluster(cli_live *o, gs_snapshot *s, const char *const *paths, size_t npaths,
                     const gs_read_opts *ro, bool verbose, gs_error *err)
{
    if (!cli_live_wanted(o, npaths))
        return cli_read_inputs(s, paths, npaths, ro, verbose, err);
    o->verbose = o->verbose || verbose;
    if (cli_live_read(o, s, ro, err) != 0)
        return -1;
    if (gs_snapshot_finish(s, err) != 0)
        return -1;
    cli_print_read_notes(s, verbose);
    return 0;
}
