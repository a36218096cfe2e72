/*
 * cmd_extender.c - `gpusched extender`: kube-scheduler's HTTP extender (filter,
 * prioritize, bind, preempt) answered from the device state (extender.h, "device state")
 * that informers over nodes and pods keep current (docs/cli/extender.md).
 *
 * Threads:
 *  - main: parses, connects, starts everything, then waits in sigwaitinfo() for SIGTERM
 *    or SIGINT (stop) and SIGHUP (reload the TLS certificate); the signals are blocked
 *    before any thread starts;
 *  - the informer's threads (nodes, pods) put into the store, whose observer
 *    (gs_ext_state_observer) updates the device state;
 *  - the HTTP server's workers (lib/serve/server.c with a handler: the webhook's limits,
 *    deadlines, connection slots and TLS reload): each request is answered on the worker
 *    that owns its connection. Filter, prioritize and preempt only read the state; bind
 *    reserves (a short write lock), then makes its two API calls with a client taken from
 *    a pool (a client is used by one thread at a time) and no lock held.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "cmd_extender.h"
#include "gpusched/assign.h"
#include "gpusched/extender.h"
#include "gpusched/live.h"
#include "gpusched/live_write.h"
#include "gpusched/serve.h"

const char cli_extender_usage[] =
    "usage: gpusched extender [options]\n"
    "\n"
    "Serve kube-scheduler's HTTP extender protocol (nodeCacheCapable): filter,\n"
    "prioritize, bind and preempt answered from an informer cache of the cluster's\n"
    "nodes and pods, with the engine's device-level decisions. Bind chooses the\n"
    "concrete devices and creates the Binding, which records them on the pod\n"
    "(annotation gpusched.io/assignment) in the same write.\n"
    "\n"
    "HTTP endpoints:\n"
    "  POST [PREFIX]/filter, /prioritize, /bind, /preempt\n"
    "             the extender verbs (any path prefix: the urlPrefix of the\n"
    "             KubeSchedulerConfiguration)\n"
    "  GET  /healthz  200 while the process serves\n"
    "  GET  /readyz   200 once nodes and pods are listed, else 503\n"
    "  GET  /metrics  Prometheus text format 0.0.4\n"
    "\n"
    "Cluster:\n"
    "      --kubeconfig FILE      the kubeconfig file (default: $KUBECONFIG,\n"
    "                             ~/.kube/config, else the pod's service account)\n"
    "      --context NAME         the kubeconfig context (default: current-context)\n"
    "      --request-timeout D    limit of each API request (\"30s\", \"2m\"; default\n"
    "                             60s for the start, 10s for a bind's calls; 0: none)\n"
    "      --kube-api-qps N       API requests per second, all of the extender's\n"
    "                             clients together (default 100, twice kube-scheduler's\n"
    "                             50: a bind is one write; 0: no limit)\n"
    "      --kube-api-burst N     requests above that rate in a burst (default 200)\n"
    "Serving:\n"
    "      --listen ADDR:PORT     address (default 0.0.0.0:8888; IPv6 as [::]:8888;\n"
    "                             port 0 picks a free port)\n"
    "      --tls-cert-file FILE   PEM certificate chain: serve HTTPS (reloaded on\n"
    "                             SIGHUP)\n"
    "      --tls-private-key-file FILE\n"
    "                             its PEM private key\n"
    "                             (without both: plain HTTP, for tests and loopback)\n"
    "      --max-body BYTES       largest request body (default 16777216); larger:\n"
    "                             413\n"
    "      --threads N            HTTP worker threads (default 16)\n"
    "Prioritize:\n"
    "      --score best-fit|fgd   how nodes where the pod fits are scored (0..10):\n"
    "                             best-fit: its devices end fullest (default);\n"
    "                             fgd: the node's GPU fragmentation grows least\n"
    "                             (FGD), against the shapes of the bound GPU pods\n"
    "Binding:\n"
    "      --assume-ttl D         how long devices reserved by a bind stay counted\n"
    "                             when the pod is never seen bound (default 30s)\n"
    "  -h, --help                 show this help\n"
    "\n"
    "Durations: \"30s\", \"5m\", \"1h\", or seconds.\n"
    "\n"
    "SIGHUP reloads the TLS certificate; SIGTERM or SIGINT stop the server.\n"
    "\n"
    "Exit status: 0 stopped by SIGTERM or SIGINT, 2 usage error, or the cluster\n"
    "cannot be read at the start (unreachable, credentials refused, a list\n"
    "forbidden), or the address is in use, or the certificate cannot be loaded,\n"
    "3 internal error.\n";

/* ---------------------------------------------------------------- options */
/* The client-side rate limit of all the extender's API clients (informer and binds). A
 * bind is one write (the Binding, carrying the record), as kube-scheduler's default
 * binder; twice kube-scheduler's clientConnection default (50/100) leaves the informer's
 * relists and retries room beside the binds. When a bind still made two writes (a record
 * patch, then the Binding), 50/100 capped binds at 25/s once the burst was spent
 * (bench/bench-extender-e2e.py, docs/performance.md). */
#define EXT_QPS_DEFAULT 100
#define EXT_BURST_DEFAULT 200

enum {
    OPT_HELP,
    OPT_LISTEN,
    OPT_TLS_CERT,
    OPT_TLS_KEY,
    OPT_ASSUME_TTL,
    OPT_MAX_BODY,
    OPT_THREADS,
    OPT_QPS,
    OPT_BURST,
    OPT_SCORE,
};

static const cli_opt extender_opts[] = {
    {"help", 'h', false, OPT_HELP},
    {"kubeconfig", 0, true, CLI_OPT_KUBECONFIG},
    {"context", 0, true, CLI_OPT_CONTEXT},
    {"request-timeout", 0, true, CLI_OPT_REQUEST_TIMEOUT},
    {"listen", 0, true, OPT_LISTEN},
    {"tls-cert-file", 0, true, OPT_TLS_CERT},
    {"tls-private-key-file", 0, true, OPT_TLS_KEY},
    {"assume-ttl", 0, true, OPT_ASSUME_TTL},
    {"max-body", 0, true, OPT_MAX_BODY},
    {"threads", 0, true, OPT_THREADS},
    {"kube-api-qps", 0, true, OPT_QPS},
    {"kube-api-burst", 0, true, OPT_BURST},
    {"score", 0, true, OPT_SCORE},
};

typedef struct ext_args {
    cli_live live;
    char host[64];
    uint16_t port;
    const char *tls_cert, *tls_key;
    int64_t assume_ttl_s;
    int64_t max_body;
    int64_t threads;
    int64_t qps, burst;
    gs_ext_score score;
} ext_args;

static int parse_args(int argc, char **argv, ext_args *a, bool *help, gs_error *err)
{
    cli_args it;
    cli_args_init(&it, argc, argv, 1, extender_opts, sizeof extender_opts / sizeof extender_opts[0]);
    snprintf(a->host, sizeof a->host, "0.0.0.0");
    a->port = 8888;
    a->assume_ttl_s = GS_EXT_ASSUME_TTL_MS_DEFAULT / 1000;
    a->max_body = GS_EXT_MAX_BODY_DEFAULT;
    a->threads = 16;
    a->qps = EXT_QPS_DEFAULT;
    a->burst = EXT_BURST_DEFAULT;
    const char *value;
    int id;
    while ((id = cli_args_next(&it, &value, err)) != CLI_ARG_END) {
        switch (id) {
        case CLI_ARG_ERROR: return -1;
        case CLI_ARG_POSITIONAL: return gs_fail(err, GS_ERR_USAGE, "unexpected argument \"%s\"", value);
        case OPT_HELP: *help = true; return 0;
        case CLI_OPT_KUBECONFIG:
        case CLI_OPT_CONTEXT:
        case CLI_OPT_REQUEST_TIMEOUT:
            if (cli_live_parse_opt(&a->live, id, value, err) < 0)
                return -1;
            break;
        case OPT_LISTEN:
            if (cli_parse_listen(value, a->host, sizeof a->host, &a->port, "[::1]:8888", err) != 0)
                return -1;
            break;
        case OPT_TLS_CERT:
            if (!value[0])
                return gs_fail(err, GS_ERR_USAGE, "--tls-cert-file: expected a file name");
            a->tls_cert = value;
            break;
        case OPT_TLS_KEY:
            if (!value[0])
                return gs_fail(err, GS_ERR_USAGE, "--tls-private-key-file: expected a file name");
            a->tls_key = value;
            break;
        case OPT_ASSUME_TTL: {
            int64_t s;
            if (gs_parse_duration(value, &s) != 0 || s < 1 || s > 3600)
                return gs_fail(err, GS_ERR_USAGE,
                               "--assume-ttl: expected a duration from 1s to 1h (\"30s\", \"5m\"), got \"%s\"", value);
            a->assume_ttl_s = s;
            break;
        }
        case OPT_MAX_BODY:
            if (cli_parse_int("--max-body", value, 1024, 256LL * 1024 * 1024, &a->max_body, err) != 0)
                return -1;
            break;
        case OPT_THREADS:
            if (cli_parse_int("--threads", value, 1, 256, &a->threads, err) != 0)
                return -1;
            break;
        case OPT_QPS:
            if (cli_parse_int("--kube-api-qps", value, 0, 100000, &a->qps, err) != 0)
                return -1;
            break;
        case OPT_BURST:
            if (cli_parse_int("--kube-api-burst", value, 1, 100000, &a->burst, err) != 0)
                return -1;
            break;
        case OPT_SCORE:
            if (strcmp(value, "best-fit") == 0)
                a->score = GS_EXT_SCORE_BESTFIT;
            else if (strcmp(value, "fgd") == 0)
                a->score = GS_EXT_SCORE_FGD;
            else
                return gs_fail(err, GS_ERR_USAGE, "--score: expected best-fit or fgd, got \"%s\"", value);
            break;
        default: return gs_fail(err, GS_ERR_INTERNAL, "unhandled option %d", id);
        }
    }
    if (!a->tls_cert != !a->tls_key)
        return gs_fail(err, GS_ERR_USAGE, "--tls-cert-file and --tls-private-key-file go together");
    return 0;
}

/* ---------------------------------------------------------------- metrics */
enum { V_FILTER = 0, V_PRIORITIZE, V_BIND, V_PREEMPT, V_COUNT };
static const char *const verb_names[V_COUNT] = {"filter", "prioritize", "bind", "preempt"};
/* ok: answered without an error; error: answered with Error set, or 5xx (not ready,
 * out of memory); bad_request: the body did not decode (Error set or 400) */
enum { RES_OK = 0, RES_ERROR, RES_BAD, RES_COUNT };
static const char *const result_names[RES_COUNT] = {"ok", "error", "bad_request"};
enum { B_BOUND = 0, B_ALREADY, B_FAILED, B_COUNT };
static const char *const bind_names[B_COUNT] = {"bound", "already_bound", "failed"};

#define NBUCKETS 15
static const uint64_t bucket_ns[NBUCKETS] = {
    50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000,
    25000000, 50000000, 100000000, 250000000, 500000000, 1000000000, 5000000000ull,
};
static const char *const bucket_le[NBUCKETS] = {
    "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01",
    "0.025", "0.05", "0.1", "0.25", "0.5", "1", "5",
};

typedef struct ext_metrics {
    atomic_uint_fast64_t requests[V_COUNT][RES_COUNT];
    atomic_uint_fast64_t buckets[V_COUNT][NBUCKETS + 1];
    atomic_uint_fast64_t sum_ns[V_COUNT];
    atomic_uint_fast64_t binds[B_COUNT];
} ext_metrics;

/* ---------------------------------------------------------------- the running extender */
#define EXT_KINDS (GS_LIVE_KIND_BIT(GS_LIVE_NODE) | GS_LIVE_KIND_BIT(GS_LIVE_POD))
#define POOL_MAX 64

typedef struct ext {
    ext_args *a;
    gs_live_config *cfg;
    gs_live_store *store;
    gs_ext_state *state;
    gs_live_informer *inf;
    gs_server *srv;
    gs_metrics *srv_metrics;
    ext_metrics m;
    gs_ext_limits lim;
    atomic_int ready;
    atomic_int stopping;
    /* API clients for binds: one per concurrent bind, kept for the next */
    pthread_mutex_t pool_mu;
    gs_live_client *pool[POOL_MAX];
    unsigned npool;
    int stop_flag; /* the clients' stop flag: set at shutdown */
} ext;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void observe(ext *E, int verb, int result, uint64_t ns)
{
    atomic_fetch_add_explicit(&E->m.requests[verb][result], 1, memory_order_relaxed);
    int b = 0;
    while (b < NBUCKETS && ns > bucket_ns[b])
        b++;
    atomic_fetch_add_explicit(&E->m.buckets[verb][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&E->m.sum_ns[verb], ns, memory_order_relaxed);
}

static uint64_t get(atomic_uint_fast64_t *c) { return atomic_load_explicit(c, memory_order_relaxed); }

static void metrics_header(gs_strbuf *sb, const char *name, const char *type, const char *help)
{
    gs_strbuf_printf(sb, "# HELP gpusched_extender_%s %s\n# TYPE gpusched_extender_%s %s\n", name, help, name,
                     type);
}

static void render_metrics(void *user, gs_strbuf *sb)
{
    ext *E = user;
    metrics_header(sb, "requests_total", "counter",
                   "Extender requests answered, by verb and result (ok; error: answered with Error or a "
                   "5xx status; bad_request: the body did not decode).");
    for (int v = 0; v < V_COUNT; v++)
        for (int r = 0; r < RES_COUNT; r++)
            gs_strbuf_printf(sb, "gpusched_extender_requests_total{verb=\"%s\",result=\"%s\"} %llu\n",
                             verb_names[v], result_names[r], (unsigned long long)get(&E->m.requests[v][r]));
    metrics_header(sb, "request_duration_seconds", "histogram",
                   "Time from a complete request body to the answer, by verb (bind: its API calls included).");
    for (int v = 0; v < V_COUNT; v++) {
        uint64_t cum = 0;
        for (int b = 0; b <= NBUCKETS; b++) {
            cum += get(&E->m.buckets[v][b]);
            gs_strbuf_printf(sb, "gpusched_extender_request_duration_seconds_bucket{verb=\"%s\",le=\"%s\"} %llu\n",
                             verb_names[v], b < NBUCKETS ? bucket_le[b] : "+Inf", (unsigned long long)cum);
        }
        uint64_t ns = get(&E->m.sum_ns[v]);
        gs_strbuf_printf(sb, "gpusched_extender_request_duration_seconds_sum{verb=\"%s\"} %llu.%09llu\n",
                         verb_names[v], (unsigned long long)(ns / 1000000000u),
                         (unsigned long long)(ns % 1000000000u));
        gs_strbuf_printf(sb, "gpusched_extender_request_duration_seconds_count{verb=\"%s\"} %llu\n", verb_names[v],
                         (unsigned long long)cum);
    }
    metrics_header(sb, "binds_total", "counter",
                   "Bind requests by result (bound: record written and Binding created; already_bound: the "
                   "pod was bound to that node with that record already; failed: answered with Error).");
    for (int b = 0; b < B_COUNT; b++)
        gs_strbuf_printf(sb, "gpusched_extender_binds_total{result=\"%s\"} %llu\n", bind_names[b],
                         (unsigned long long)get(&E->m.binds[b]));
    gs_ext_state_stats st;
    gs_ext_state_stats_get(E->state, &st);
    metrics_header(sb, "reservations", "gauge",
                   "Devices reserved by binds and not yet observed on the pod (the assume cache).");
    gs_strbuf_printf(sb, "gpusched_extender_reservations %u\n", st.reservations);
    metrics_header(sb, "state_nodes", "gauge", "Nodes in the device state (gpu: of which with GPUs).");
    gs_strbuf_printf(sb, "gpusched_extender_state_nodes{kind=\"all\"} %u\n", st.nodes);
    gs_strbuf_printf(sb, "gpusched_extender_state_nodes{kind=\"gpu\"} %u\n", st.gpu_nodes);
    metrics_header(sb, "state_pods", "gauge",
                   "Pods holding devices, by source (recorded: a valid assignment record; reconstructed: "
                   "the engine's rule for bound pods without one).");
    gs_strbuf_printf(sb, "gpusched_extender_state_pods{source=\"recorded\"} %u\n", st.recorded);
    gs_strbuf_printf(sb, "gpusched_extender_state_pods{source=\"reconstructed\"} %u\n", st.reconstructed);
    metrics_header(sb, "state_bad_records_total", "counter",
                   "Assignment records refused (decode or check against the node); counted as none.");
    gs_strbuf_printf(sb, "gpusched_extender_state_bad_records_total %llu\n", (unsigned long long)st.bad_records);
    metrics_header(sb, "state_bad_objects_total", "counter", "Nodes and pods the snapshot reader refused.");
    gs_strbuf_printf(sb, "gpusched_extender_state_bad_objects_total %llu\n", (unsigned long long)st.bad_objects);
    metrics_header(sb, "reservations_total", "counter",
                   "Reservations by outcome (reserved, confirmed by the pod, expired, forgotten after a "
                   "failed bind, superseded).");
    gs_strbuf_printf(sb, "gpusched_extender_reservations_total{outcome=\"reserved\"} %llu\n",
                     (unsigned long long)st.reserved);
    gs_strbuf_printf(sb, "gpusched_extender_reservations_total{outcome=\"confirmed\"} %llu\n",
                     (unsigned long long)st.confirmed);
    gs_strbuf_printf(sb, "gpusched_extender_reservations_total{outcome=\"expired\"} %llu\n",
                     (unsigned long long)st.expired);
    gs_strbuf_printf(sb, "gpusched_extender_reservations_total{outcome=\"forgotten\"} %llu\n",
                     (unsigned long long)st.forgotten);
    gs_strbuf_printf(sb, "gpusched_extender_reservations_total{outcome=\"superseded\"} %llu\n",
                     (unsigned long long)st.superseded);
    metrics_header(sb, "state_bytes", "gauge", "Memory held by the device state (approximate).");
    gs_strbuf_printf(sb, "gpusched_extender_state_bytes %zu\n", st.bytes);
    metrics_header(sb, "ready", "gauge", "1 once nodes and pods are listed and answers are given.");
    gs_strbuf_printf(sb, "gpusched_extender_ready %d\n", atomic_load(&E->ready) ? 1 : 0);
}

static bool is_ready(void *user, gs_strbuf *why)
{
    ext *E = user;
    if (atomic_load(&E->stopping)) {
        gs_strbuf_puts(why, "shutting down");
        return false;
    }
    if (!atomic_load(&E->ready)) {
        gs_strbuf_puts(why, "not synced: ");
        bool first = true;
        if (!gs_live_informer_synced(E->inf, GS_LIVE_NODE)) {
            gs_strbuf_puts(why, "nodes");
            first = false;
        }
        if (!gs_live_informer_synced(E->inf, GS_LIVE_POD))
            gs_strbuf_puts(why, first ? "pods" : ", pods");
        return false;
    }
    return true;
}

/* ---------------------------------------------------------------- API clients */
static long request_timeout_ms(const ext_args *a, long dflt)
{
    return cli_live_timeout_ms(&a->live, dflt);
}

static gs_live_client *new_client(ext *E, long timeout_ms, int max_retries, gs_error *err)
{
    gs_live_client *c = cli_live_client(E->cfg, "extender", timeout_ms, max_retries, timeout_ms, err);
    if (c)
        gs_live_client_set_stop(c, &E->stop_flag);
    return c;
}

static gs_live_client *client_take(ext *E, gs_error *err)
{
    pthread_mutex_lock(&E->pool_mu);
    gs_live_client *c = E->npool ? E->pool[--E->npool] : NULL;
    pthread_mutex_unlock(&E->pool_mu);
    /* a bind must end well within kube-scheduler's httpTimeout (5 s by default): few
     * retries, bounded by the request timeout */
    return c ? c : new_client(E, request_timeout_ms(E->a, 10000), 2, err);
}

static void client_give(ext *E, gs_live_client *c)
{
    pthread_mutex_lock(&E->pool_mu);
    if (E->npool < POOL_MAX) {
        E->pool[E->npool++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&E->pool_mu);
    gs_live_client_free(c);
}

/* ---------------------------------------------------------------- verbs */
static void error_text(const gs_error *err, gs_strbuf *out)
{
    char buf[GS_ERR_FILE_MAX + GS_ERR_PATH_MAX + GS_ERR_MSG_MAX + 64];
    if (err->line > 0 && !err->file[0])
        snprintf(buf, sizeof buf, "request body line %d, column %d: %s%s%s", err->line, err->col, err->path,
                 err->path[0] ? ": " : "", err->msg);
    else
        gs_error_format(err, buf, sizeof buf);
    gs_strbuf_puts(out, buf);
}

static unsigned status_answer(unsigned code, const gs_error *err, gs_strbuf *out)
{
    gs_strbuf msg = GS_STRBUF_INIT;
    error_text(err, &msg);
    gs_serve_status_body((int)code, msg.oom ? "" : gs_strbuf_cstr(&msg), out);
    gs_strbuf_free(&msg);
    return code;
}

/* The HTTP status of a device-state error: 503 (retry) when out of memory or not ready
 * (GS_ERR_IO), 500 otherwise. */
static unsigned state_error_status(const gs_error *err)
{
    return err->code == GS_ERR_NOMEM || err->code == GS_ERR_IO ? 503 : 500;
}

static unsigned decide_filter(ext *E, const char *body, size_t len, gs_strbuf *out, int *result)
{
    gs_arena arena;
    gs_arena_init(&arena, 16384);
    gs_ext_args args;
    gs_error err;
    gs_error_clear(&err);
    gs_ext_filter_result fr;
    memset(&fr, 0, sizeof fr);
    gs_strbuf msg = GS_STRBUF_INIT;
    if (gs_ext_args_decode(body, len, &E->lim, &arena, &args, &err) != 0) {
        error_text(&err, &msg);
        fr.error = msg.oom ? "out of memory" : gs_strbuf_cstr(&msg);
        fr.cache_mode = true;
        *result = RES_BAD;
        gs_ext_filter_result_encode(&fr, out);
        gs_strbuf_free(&msg);
        gs_arena_free(&arena);
        return 200;
    }
    if (gs_ext_state_filter(E->state, args.pod, (const char *const *)args.node_names, args.nnode_names, &arena, &fr,
                            &err) != 0) {
        memset(&fr, 0, sizeof fr);
        error_text(&err, &msg);
        fr.error = msg.oom ? "out of memory" : gs_strbuf_cstr(&msg);
        *result = RES_ERROR;
    } else {
        *result = RES_OK;
    }
    fr.cache_mode = args.cache_mode || !args.has_nodes;
    gs_ext_filter_result_encode(&fr, out);
    gs_strbuf_free(&msg);
    gs_ext_args_free(&args);
    gs_arena_free(&arena);
    return 200;
}

static unsigned decide_prioritize(ext *E, const char *body, size_t len, gs_strbuf *out, int *result)
{
    gs_arena arena;
    gs_arena_init(&arena, 16384);
    gs_ext_args args;
    gs_error err;
    gs_error_clear(&err);
    unsigned code = 200;
    if (gs_ext_args_decode(body, len, &E->lim, &arena, &args, &err) != 0) {
        /* HostPriorityList has no Error: a 400 (kube-scheduler ignores a failed
         * prioritize) */
        *result = RES_BAD;
        code = status_answer(400, &err, out);
        gs_arena_free(&arena);
        return code;
    }
    gs_ext_host_priority *v = NULL;
    if (gs_ext_state_prioritize(E->state, args.pod, (const char *const *)args.node_names, args.nnode_names, &arena, &v,
                                &err) != 0) {
        *result = RES_ERROR;
        code = status_answer(state_error_status(&err), &err, out);
    } else {
        *result = RES_OK;
        gs_ext_priorities_encode(v, args.nnode_names, out);
    }
    gs_ext_args_free(&args);
    gs_arena_free(&arena);
    return code;
}

static unsigned decide_preempt(ext *E, const char *body, size_t len, gs_strbuf *out, int *result)
{
    gs_arena arena;
    gs_arena_init(&arena, 16384);
    gs_ext_preemption_args args;
    gs_error err;
    gs_error_clear(&err);
    unsigned code = 200;
    if (gs_ext_preemption_args_decode(body, len, &E->lim, &arena, &args, &err) != 0) {
        *result = RES_BAD;
        code = status_answer(400, &err, out);
        gs_arena_free(&arena);
        return code;
    }
    const gs_ext_victims *in = args.has_meta_victims ? args.meta_victims : args.victims;
    uint32_t nin = args.has_meta_victims ? args.nmeta_victims : args.nvictims;
    gs_ext_victims *v = NULL;
    uint32_t nv = 0;
    if (gs_ext_state_preempt(E->state, args.pod, in, nin, &arena, &v, &nv, &err) != 0) {
        *result = RES_ERROR;
        code = status_answer(state_error_status(&err), &err, out);
    } else {
        *result = RES_OK;
        gs_ext_preemption_result_encode(v, nv, out);
    }
    gs_ext_preemption_args_free(&args);
    gs_arena_free(&arena);
    return code;
}

/* The pod of a bind as the store holds it, read into snap. 0, 1 when absent, -1 (err). */
static int read_pod(ext *E, const char *ns, const char *name, gs_snapshot *snap, const gs_pod **pod, gs_error *err)
{
    gs_strbuf key = GS_STRBUF_INIT, text = GS_STRBUF_INIT;
    gs_strbuf_printf(&key, "%s/%s", ns, name);
    int rc = key.oom ? gs_fail(err, GS_ERR_NOMEM, "out of memory")
                     : gs_live_store_get(E->store, GS_LIVE_POD, gs_strbuf_cstr(&key), &text);
    if (rc == 0 && text.oom)
        rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
    if (rc == 0) {
        gs_read_opts ro;
        memset(&ro, 0, sizeof ro);
        if (gs_snapshot_read_buffer(snap, gs_strbuf_cstr(&key), text.buf, text.len, &ro, err) != 0)
            rc = -1;
        else if (snap->pods.n != 1)
            rc = gs_fail(err, GS_ERR_INTERNAL, "pod %s/%s: the cache's object is not one pod", ns, name);
        else
            *pod = &snap->pods.v[0];
    }
    gs_strbuf_free(&key);
    gs_strbuf_free(&text);
    return rc;
}

/* The bind's API call: one Binding that carries the record as an annotation. The API
 * server merges the Binding's annotations into the pod in the same write that sets
 * spec.nodeName, so the record is on the pod if and only if the pod is bound (no record
 * left by a bind that failed, no bound pod without its record), at one write per pod as
 * kube-scheduler's own binder. The Binding's metadata.uid is a precondition: a pod
 * recreated under the same name is refused (the record names the UID too). 0, 1 when the
 * pod was already bound to that node (a repeated bind), -1 with err. */
static int bind_calls(ext *E, const gs_ext_binding_args *b, const char *record, gs_error *err)
{
    gs_live_client *c = client_take(E, err);
    if (!c)
        return -1;
    int rc = 0;
    gs_live_response rs;
    memset(&rs, 0, sizeof rs);
    const char *ann[] = {GS_ASSIGN_ANNOTATION, record, NULL};
    if (gs_live_bind(c, b->pod_namespace, b->pod_name, b->pod_uid, b->node, ann, NULL, &rs, err) != 0) {
        /* the same pod bound to the same node already (a repeated bind): success */
        char want[320];
        snprintf(want, sizeof want, "is already assigned to node \"%s\"", b->node);
        if (rs.http == 409 && strstr(err->msg, want)) {
            gs_error_clear(err);
            rc = 1;
        } else {
            gs_error_prefix_path(err, err->path[0] ? "creating the Binding: " : "creating the Binding");
            rc = -1;
        }
    }
    gs_live_response_free(&rs);
    client_give(E, c);
    return rc;
}

static unsigned decide_bind(ext *E, const char *body, size_t len, gs_strbuf *out, int *result)
{
    gs_arena arena;
    gs_arena_init(&arena, 4096);
    gs_ext_binding_args b;
    gs_error err;
    gs_error_clear(&err);
    gs_snapshot snap;
    gs_snapshot_init(&snap);
    gs_strbuf record = GS_STRBUF_INIT, msg = GS_STRBUF_INIT;
    const gs_pod *pod = NULL;
    int bresult = B_FAILED;
    *result = RES_ERROR;
    if (gs_ext_binding_args_decode(body, len, &E->lim, &arena, &b, &err) != 0) {
        *result = RES_BAD;
        error_text(&err, &msg);
        goto answer;
    }
    /* kube-scheduler's informer may see a new (or recreated) pod before ours, and bind
     * names the pod only: wait for our cache a little (up to 1 s) before refusing */
    int rc;
    for (uint64_t t0 = now_ns();;) {
        rc = read_pod(E, b.pod_namespace, b.pod_name, &snap, &pod, &err);
        if ((rc != 1 && (rc != 0 || !strcmp(pod->meta.uid, b.pod_uid))) || now_ns() - t0 >= 1000000000ull)
            break;
        gs_snapshot_free(&snap);
        gs_snapshot_init(&snap);
        pod = NULL;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    if (rc == 1) {
        gs_strbuf_printf(&msg, "pod %s/%s is not in the extender's cache", b.pod_namespace, b.pod_name);
        goto answer;
    }
    if (rc < 0) {
        error_text(&err, &msg);
        goto answer;
    }
    if (strcmp(pod->meta.uid, b.pod_uid) != 0) {
        gs_strbuf_printf(&msg, "pod %s/%s has UID %s in the extender's cache, not %s (recreated?)", b.pod_namespace,
                         b.pod_name, pod->meta.uid, b.pod_uid);
        goto answer;
    }
    if (pod->node_name[0] && strcmp(pod->node_name, b.node) != 0) {
        gs_strbuf_printf(&msg, "pod %s/%s is already bound to node %s", b.pod_namespace, b.pod_name, pod->node_name);
        goto answer;
    }
    rc = gs_ext_state_reserve(E->state, pod, b.node, &record, &err);
    if (rc < 0) {
        error_text(&err, &msg);
        goto answer;
    }
    if (record.oom) {
        if (rc == 0)
            gs_ext_state_forget(E->state, b.pod_uid);
        gs_strbuf_puts(&msg, "out of memory");
        goto answer;
    }
    const char *have = gs_labels_get(&pod->meta.annotations, GS_ASSIGN_ANNOTATION);
    if (rc == 1 && pod->node_name[0] && have && !strcmp(have, gs_strbuf_cstr(&record))) {
        bresult = B_ALREADY; /* bound there with this record: nothing to do */
        *result = RES_OK;
        goto answer;
    }
    int crc = bind_calls(E, &b, gs_strbuf_cstr(&record), &err);
    if (crc < 0) {
        /* only the bind that made the reservation releases it: a repeated bind racing
         * the first must not free the first's devices */
        if (rc == 0)
            gs_ext_state_forget(E->state, b.pod_uid);
        error_text(&err, &msg);
        goto answer;
    }
    gs_ext_state_bind_done(E->state, b.pod_uid);
    bresult = crc == 1 ? B_ALREADY : B_BOUND;
    *result = RES_OK;
answer:
    atomic_fetch_add_explicit(&E->m.binds[bresult], 1, memory_order_relaxed);
    gs_ext_binding_result_encode(msg.oom ? "out of memory" : msg.len ? gs_strbuf_cstr(&msg) : NULL, out);
    gs_strbuf_free(&msg);
    gs_strbuf_free(&record);
    gs_snapshot_free(&snap);
    gs_arena_free(&arena);
    return 200;
}

/* ---------------------------------------------------------------- HTTP */
/* The verb is the last segment of the path, so any urlPrefix path works
 * (https://host:8888/gpusched + "filter" -> /gpusched/filter). */
static int route(void *user, const char *url)
{
    (void)user;
    const char *slash = strrchr(url, '/');
    if (!slash)
        return -1;
    for (int v = 0; v < V_COUNT; v++)
        if (!strcmp(slash + 1, verb_names[v]))
            return v;
    return -1;
}

static unsigned handle(void *user, int verb, const char *body, size_t len, gs_strbuf *out, const char **ctype)
{
    ext *E = user;
    *ctype = "application/json";
    uint64_t t0 = now_ns();
    int result = RES_ERROR;
    unsigned code;
    switch (verb) {
    case V_FILTER: code = decide_filter(E, body, len, out, &result); break;
    case V_PRIORITIZE: code = decide_prioritize(E, body, len, out, &result); break;
    case V_BIND: code = decide_bind(E, body, len, out, &result); break;
    default: code = decide_preempt(E, body, len, out, &result); break;
    }
    observe(E, verb, result, now_ns() - t0);
    return code;
}

/* ---------------------------------------------------------------- start-up */
static int load_config(ext *E, gs_error *err)
{
    E->cfg = cli_live_config_load(&E->a->live, err);
    if (!E->cfg)
        return -1;
    gs_live_config_set_rate(E->cfg, (double)E->a->qps, (int)E->a->burst);
    return 0;
}

static void server_log(void *user, const char *line)
{
    (void)user;
    cli_eprintf("gpusched extender: %s\n", line);
}

static void log_error(const char *what, const gs_error *err)
{
    char buf[GS_ERR_FILE_MAX + GS_ERR_PATH_MAX + GS_ERR_MSG_MAX + 64];
    gs_error_format(err, buf, sizeof buf);
    cli_eprintf("gpusched extender: %s: %s\n", what, buf);
}

static int run(ext *E)
{
    gs_error err;
    gs_error_clear(&err);
    int status = CLI_EXIT_OK;
    sigset_t set;
    cli_daemon_signals(&set, true); /* before any thread: all inherit the mask */

    gs_ext_state_opts so;
    memset(&so, 0, sizeof so);
    so.assume_ttl_ms = E->a->assume_ttl_s * 1000;
    so.score = E->a->score;
    if (load_config(E, &err) != 0 || !(E->store = gs_live_store_new(&err)) ||
        !(E->state = gs_ext_state_new(&so, &err)) ||
        cli_live_probe(E->cfg, "extender", EXT_KINDS, request_timeout_ms(E->a, 0), &err) != 0) {
        status = cli_report_error(&err);
        goto out;
    }
    gs_live_store_observe(E->store, gs_ext_state_observer, E->state);
    gs_live_client_opts ico;
    memset(&ico, 0, sizeof ico);
    ico.timeout_ms = request_timeout_ms(E->a, 0);
    char agent[64];
    snprintf(agent, sizeof agent, "%s-extender/%s", CLI_PROGRAM, CLI_VERSION);
    ico.user_agent = agent;
    gs_live_informer_opts io;
    memset(&io, 0, sizeof io);
    io.kinds = EXT_KINDS;
    io.client = &ico;
    if (!(E->inf = gs_live_informer_new(E->cfg, E->store, &io, &err))) {
        status = cli_report_error(&err);
        goto out;
    }
    if (!(E->srv_metrics = gs_metrics_new())) {
        gs_fail(&err, GS_ERR_NOMEM, "out of memory");
        status = cli_report_error(&err);
        goto out;
    }
    static gs_serve_handler h;
    h.route = route;
    h.handle = handle;
    h.ready = is_ready;
    h.metrics = render_metrics;
    h.metrics_prefix = "gpusched_extender_";
    h.what = "an extender request (ExtenderArgs, ExtenderBindingArgs, ExtenderPreemptionArgs)";
    h.user = E;
    gs_serve_opts o;
    memset(&o, 0, sizeof o);
    o.host = E->a->host;
    o.port = E->a->port;
    o.tls_cert = E->a->tls_cert;
    o.tls_key = E->a->tls_key;
    o.max_body = (size_t)E->a->max_body;
    o.threads = (unsigned)E->a->threads;
    o.handler = &h;
    o.metrics = E->srv_metrics;
    o.log = server_log;
    E->lim.max_body = (size_t)E->a->max_body;
    if (!(E->srv = gs_server_start(&o, &err))) {
        status = cli_report_error(&err);
        goto out;
    }
    if (gs_live_informer_start(E->inf, &err) != 0) {
        status = cli_report_error(&err);
        goto stop;
    }
    bool v6 = strchr(E->a->host, ':') != NULL;
    cli_eprintf("gpusched extender: serving on %s://%s%s%s:%u/ (%s, %s)\n", gs_server_tls(E->srv) ? "https" : "http",
                v6 ? "[" : "", E->a->host, v6 ? "]" : "", (unsigned)gs_server_port(E->srv), E->a->live.source,
                E->cfg->server);

    /* ready once nodes and pods are listed: the state then counts every recorded
     * assignment before the first answer; signals are taken meanwhile */
    int sig = 0;
    for (;;) {
        if (!atomic_load(&E->ready) && gs_live_informer_wait_synced(E->inf, EXT_KINDS, 0) == 0) {
            gs_ext_state_set_ready(E->state, true);
            atomic_store(&E->ready, 1);
            cli_eprintf("gpusched extender: ready (nodes and pods listed)\n");
        }
        siginfo_t si;
        struct timespec tick = {0, 100 * 1000 * 1000};
        int s = atomic_load(&E->ready) ? sigwaitinfo(&set, &si) : sigtimedwait(&set, &si, &tick);
        if (s == SIGTERM || s == SIGINT) {
            sig = s;
            break;
        }
        if (s == SIGHUP) {
            if (!gs_server_tls(E->srv))
                cli_eprintf("gpusched extender: SIGHUP: plain HTTP, no certificate to reload\n");
            else if (gs_server_reload_tls(E->srv, &err) == 0)
                cli_eprintf("gpusched extender: SIGHUP: certificate reloaded\n");
            else
                log_error("SIGHUP: certificate not reloaded, keeping the old one", &err);
            continue;
        }
        if (s < 0 && errno != EINTR && errno != EAGAIN) {
            cli_eprintf("gpusched extender: sigwaitinfo: %s; stopping\n", strerror(errno));
            sig = SIGINT;
            break;
        }
    }
    cli_eprintf("gpusched extender: %s: stopping\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
stop:
    atomic_store(&E->stopping, 1);
    gs_server_drain(E->srv, 5000); /* binds in flight finish their API calls */
    __atomic_store_n(&E->stop_flag, 1, __ATOMIC_RELAXED);
    gs_live_informer_stop(E->inf);
    gs_server_stop(E->srv);
    E->srv = NULL;
out:
    return status;
}

static void ext_free(ext *E)
{
    gs_server_stop(E->srv);
    gs_live_informer_free(E->inf);
    if (E->store)
        gs_live_store_observe(E->store, NULL, NULL);
    gs_ext_state_free(E->state);
    gs_live_store_free(E->store);
    for (unsigned i = 0; i < E->npool; i++)
        gs_live_client_free(E->pool[i]);
    gs_metrics_free(E->srv_metrics);
    gs_live_config_free(E->cfg);
    pthread_mutex_destroy(&E->pool_mu);
}

int gs_cmd_extender(int argc, char **argv)
{
    ext_args a;
    memset(&a, 0, sizeof a);
    bool help = false;
    gs_error err;
    gs_error_clear(&err);
    if (parse_args(argc, argv, &a, &help, &err) != 0)
        return cli_usage_error("extender", &err);
    if (help)
        return cli_print_usage(cli_extender_usage);
    ext *E = calloc(1, sizeof *E);
    if (!E) {
        gs_fail(&err, GS_ERR_NOMEM, "out of memory");
        return cli_report_error(&err);
    }
    E->a = &a;
    pthread_mutex_init(&E->pool_mu, NULL);
    int status = run(E);
    ext_free(E);
    free(E);
    return status;
}
