/*
 * cmd_monitor.c - `gpusched monitor`: the daemon around the monitor core (monitor.h):
 * informers keep a store of the cluster, the store's observer feeds the monitor, a loop
 * applies the queued changes, and a small HTTP server renders the metrics and the detail
 * views from memory per request (docs/cli/monitor.md).
 *
 * Threads:
 *  - main: parses, connects, starts everything, then waits for SIGTERM/SIGINT in
 *    sigwaitinfo() (the signals are blocked before any thread starts, so no handler ever
 *    runs inside library code) and stops everything in order;
 *  - the informer's threads (one per kind) put into the store, whose observer queues the
 *    changes in the monitor;
 *  - update: every --update-interval gs_monitor_update, then the informers' stats noted;
 *  - utilization: every --dcgm-interval one round of samples (gs_dcgm_collect: the
 *    dcgm-exporter pods of the store, the URLs given, or a Prometheus query), idle
 *    tracking, gs_monitor_set_idle;
 *  - events (with --events): while this replica may write (the leader, or no election),
 *    GPUPending Events for the pending GPU pods, per-pod and globally rate limited;
 *  - elector (with --leader-elect): client-go's leader election loop on a Lease;
 *  - libmicrohttpd's threads: GET/HEAD only, fixed limits (connections, per-address
 *    connections, idle timeout, memory per connection).
 * Every API request after the start-up probe is made from the thread that owns its client.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "args.h"
#include "cli.h"
#include "cmd_monitor.h"
#include "gpusched/live.h"
#include "gpusched/live_write.h"
#include "gpusched/dcgm.h"
#include "gpusched/monitor.h"

const char cli_monitor_usage[] =
    "usage: gpusched monitor [options]\n"
    "\n"
    "Watch a cluster through its API server (informers, credentials as kubectl) and\n"
    "serve from memory what on-call needs about its GPUs: GPU pods pending and why\n"
    "(explain's reason and smallest fix), occupancy per pool, preemptions, GPU node\n"
    "hygiene, device-plugin health, GPUs allocated to pods but idle\n"
    "(docs/metrics.md).\n"
    "No request reaches the API server because of a scrape.\n"
    "\n"
    "HTTP endpoints (plain HTTP, GET and HEAD only):\n"
    "  /metrics   Prometheus text format 0.0.4\n"
    "  /pending   pending GPU pods: wait, reason, explain's smallest fix\n"
    "  /hygiene   untainted GPU nodes, non-GPU pods on GPU nodes, device plugin\n"
    "  /idle      GPUs allocated to pods and idle\n"
    "             (the three views: a text table; JSON with ?format=json or\n"
    "             Accept: application/json)\n"
    "  /healthz   200 while the process runs\n"
    "  /readyz    200 once every watched kind is synced, else 503 naming the rest\n"
    "\n"
    "Cluster:\n"
    "      --kubeconfig FILE      the kubeconfig file (default: $KUBECONFIG,\n"
    "                             ~/.kube/config, else the pod's service account)\n"
    "      --context NAME         the kubeconfig context (default: current-context)\n"
    "      --request-timeout D    limit of each request (\"30s\", \"2m\"; default 60s;\n"
    "                             0: none); watches have their own\n"
    "Serving:\n"
    "      --listen ADDR:PORT     HTTP address (default 0.0.0.0:8080; IPv6 as\n"
    "                             [::]:8080; port 0 picks a free port)\n"
    "      --update-interval D    how often queued changes are applied (default\n"
    "                             200ms; 10ms to 1m)\n"
    "      --max-problem-series N per-node and per-GPU series kept per family\n"
    "                             (default 2000; the rest are counted as dropped)\n"
    "      --taint-key KEY        the taint keeping other pods off GPU nodes; repeat\n"
    "                             for several (default nvidia.com/gpu)\n"
    "Utilization (GPUs allocated but idle):\n"
    "      --dcgm-endpoints SRC   auto (the dcgm-exporter endpoints found through the\n"
    "                             API), none, or URL[,URL...] (default auto)\n"
    "      --prometheus-url URL   query this Prometheus server instead\n"
    "      --dcgm-interval D      how often utilization is read (default 30s)\n"
    "      --idle-threshold PCT   utilization under this percentage is idle\n"
    "                             (default 5)\n"
    "      --idle-window D        for this long (default 30m)\n"
    "Events:\n"
    "      --events, --no-events  write Warning GPUPending Events on pending GPU pods\n"
    "                             (default on)\n"
    "      --leader-elect, --no-leader-elect\n"
    "                             only the holder of a Lease writes Events (default:\n"
    "                             on with --events)\n"
    "      --lease-namespace NS   the Lease's namespace (default: $POD_NAMESPACE, the\n"
    "                             in-cluster namespace, else default)\n"
    "      --lease-name NAME      the Lease's name (default gpusched-monitor)\n"
    "One shot:\n"
    "      --once                 read the cluster once, print the pending view on\n"
    "                             stdout and exit (no server, no Events)\n"
    "  -o, --output FORMAT        with --once: text (default) or json\n"
    "  -h, --help                 show this help\n"
    "\n"
    "Durations: \"200ms\", \"30s\", \"5m\", \"1h\", \"1h30m\", or seconds.\n"
    "\n"
    "Exit status: 0 stopped by SIGTERM or SIGINT (--once: no GPU pod pending),\n"
    "1 --once: GPU pods pending, 2 usage error, or the cluster cannot be read at the\n"
    "start (unreachable, credentials refused, a list forbidden), or the address is\n"
    "in use, 3 internal error.\n";

/* ---------------------------------------------------------------- options */
enum {
    OPT_HELP,
    OPT_LISTEN,
    OPT_MAX_PROBLEM_SERIES,
    OPT_IDLE_THRESHOLD,
    OPT_IDLE_WINDOW,
    OPT_TAINT_KEY,
    OPT_EVENTS,
    OPT_NO_EVENTS,
    OPT_LEADER_ELECT,
    OPT_NO_LEADER_ELECT,
    OPT_LEASE_NAMESPACE,
    OPT_LEASE_NAME,
    OPT_DCGM_ENDPOINTS,
    OPT_PROMETHEUS_URL,
    OPT_DCGM_INTERVAL,
    OPT_UPDATE_INTERVAL,
    OPT_ONCE,
    OPT_OUTPUT,
};

static const cli_opt monitor_opts[] = {
    {"help", 'h', false, OPT_HELP},
    {"kubeconfig", 0, true, CLI_OPT_KUBECONFIG},
    {"context", 0, true, CLI_OPT_CONTEXT},
    {"request-timeout", 0, true, CLI_OPT_REQUEST_TIMEOUT},
    {"listen", 0, true, OPT_LISTEN},
    {"max-problem-series", 0, true, OPT_MAX_PROBLEM_SERIES},
    {"idle-threshold", 0, true, OPT_IDLE_THRESHOLD},
    {"idle-window", 0, true, OPT_IDLE_WINDOW},
    {"taint-key", 0, true, OPT_TAINT_KEY},
    {"events", 0, false, OPT_EVENTS},
    {"no-events", 0, false, OPT_NO_EVENTS},
    {"leader-elect", 0, false, OPT_LEADER_ELECT},
    {"no-leader-elect", 0, false, OPT_NO_LEADER_ELECT},
    {"lease-namespace", 0, true, OPT_LEASE_NAMESPACE},
    {"lease-name", 0, true, OPT_LEASE_NAME},
    {"dcgm-endpoints", 0, true, OPT_DCGM_ENDPOINTS},
    {"prometheus-url", 0, true, OPT_PROMETHEUS_URL},
    {"dcgm-interval", 0, true, OPT_DCGM_INTERVAL},
    {"update-interval", 0, true, OPT_UPDATE_INTERVAL},
    {"once", 0, false, OPT_ONCE},
    {"output", 'o', true, OPT_OUTPUT},
};

#define MON_HOST_MAX 64
#define MON_MAX_TAINT_KEYS 16
#define MON_DEFAULT_TAINT "nvidia.com/gpu"

typedef enum util_mode { UTIL_AUTO = 0, UTIL_NONE, UTIL_ENDPOINTS, UTIL_PROMETHEUS } util_mode;

typedef struct mon_args {
    cli_live live;
    char host[MON_HOST_MAX];
    uint16_t port;
    uint32_t max_problem_series;
    double idle_threshold;       /* ratio */
    int64_t idle_window_ms;
    const char *taint_keys[MON_MAX_TAINT_KEYS + 1];
    size_t ntaint;
    bool events;
    int leader_elect;            /* -1: as --events */
    const char *lease_ns, *lease_name;
    util_mode util;
    const char *dcgm_endpoints;  /* UTIL_ENDPOINTS: the comma-separated URLs */
    const char *prometheus_url;
    int64_t dcgm_interval_ms, update_interval_ms;
    bool once;
    bool json;
} mon_args;

/* A duration in milliseconds: Go's syntax with the units ms, s, m, h (fractions allowed:
 * "1.5s"), or a bare integer of seconds. -1 on anything else. */
static int parse_ms(const char *s, int64_t *out)
{
    if (!s || !*s)
        return -1;
    const char *p = s;
    bool bare = true;
    for (; *p; p++)
        if (*p < '0' || *p > '9')
            bare = false;
    if (bare) {
        int64_t v;
        if (strlen(s) > 12 || gs_parse_i64(s, strlen(s), &v) != 0)
            return -1;
        *out = v * 1000;
        return 0;
    }
    double total = 0;
    p = s;
    while (*p) {
        double v = 0, scale = 1;
        int digits = 0;
        while (*p >= '0' && *p <= '9') {
            v = v * 10 + (*p++ - '0');
            digits++;
        }
        if (*p == '.') {
            p++;
            while (*p >= '0' && *p <= '9') {
                scale /= 10;
                v += (*p++ - '0') * scale;
                digits++;
            }
        }
        if (!digits || digits > 15)
            return -1;
        double mult;
        if (p[0] == 'm' && p[1] == 's') {
            mult = 1;
            p += 2;
        } else if (*p == 's') {
            mult = 1000;
            p++;
        } else if (*p == 'm') {
            mult = 60e3;
            p++;
        } else if (*p == 'h') {
            mult = 3600e3;
            p++;
        } else {
            return -1;
        }
        total += v * mult;
        if (total > 1e12)
            return -1;
    }
    *out = (int64_t)(total + 0.5);
    return 0;
}

static int parse_duration_opt(const char *what, const char *value, int64_t min_ms, int64_t max_ms,
                              const char *range, int64_t *out, gs_error *err)
{
    int64_t ms;
    if (parse_ms(value, &ms) != 0 || ms < min_ms || ms > max_ms)
        return gs_fail(err, GS_ERR_USAGE, "%s: expected a duration from %s (\"30s\", \"5m\", \"1h\"), got \"%s\"",
                       what, range, value);
    *out = ms;
    return 0;
}

/* A percentage in (0, 100], decimal ("5", "2.5"). */
static int parse_percent(const char *value, double *ratio, gs_error *err)
{
    const char *p = value;
    double v = 0, scale = 1;
    int digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 6) {
        v = v * 10 + (*p++ - '0');
        digits++;
    }
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9' && digits < 12) {
            scale /= 10;
            v += (*p++ - '0') * scale;
            digits++;
        }
    }
    if (!digits || *p || v <= 0 || v > 100)
        return gs_fail(err, GS_ERR_USAGE,
                       "--idle-threshold: expected a percentage above 0 and up to 100 (\"5\", \"2.5\"), got \"%s\"",
                       value);
    *ratio = v / 100;
    return 0;
}

static int parse_listen(const char *s, mon_args *a, gs_error *err)
{
    return cli_parse_listen(s, a->host, sizeof a->host, &a->port, "[::1]:8080", err);
}

static bool http_url(const char *u)
{
    size_t n = strlen(u);
    bool scheme = (n > 7 && !strncmp(u, "http://", 7)) || (n > 8 && !strncmp(u, "https://", 8));
    if (!scheme)
        return false;
    for (const unsigned char *p = (const unsigned char *)u; *p; p++)
        if (*p <= 0x20 || *p == 0x7f || *p == ',')
            return false;
    return true;
}

static int check_endpoints(const char *list, gs_error *err)
{
    if (!*list)
        return gs_fail(err, GS_ERR_USAGE, "--dcgm-endpoints: expected auto, none or URL[,URL...], got \"\"");
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        char url[2048];
        if (n == 0 || n >= sizeof url)
            return gs_fail(err, GS_ERR_USAGE, "--dcgm-endpoints: an empty or too long URL in \"%s\"", list);
        memcpy(url, p, n);
        url[n] = '\0';
        if (!http_url(url))
            return gs_fail(err, GS_ERR_USAGE,
                           "--dcgm-endpoints: expected auto, none or http(s):// URLs separated by commas, got \"%s\"",
                           url);
        p += n;
        if (*p == ',' && !*++p)
            return gs_fail(err, GS_ERR_USAGE, "--dcgm-endpoints: a trailing comma in \"%s\"", list);
    }
    return 0;
}

/* A label value / name that the API accepts as a namespace or a Lease name: a DNS
 * subdomain (lower case alphanumerics, '-', '.'; at most 253). */
static bool dns_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 253)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && c != '-' && c != '.')
            return false;
        if ((i == 0 || i == n - 1) && !alnum)
            return false;
    }
    return true;
}

static int parse_args(int argc, char **argv, mon_args *a, bool *help, gs_error *err)
{
    cli_args it;
    cli_args_init(&it, argc, argv, 1, monitor_opts, sizeof monitor_opts / sizeof monitor_opts[0]);
    snprintf(a->host, sizeof a->host, "0.0.0.0");
    a->port = 8080;
    a->max_problem_series = 2000;
    a->idle_threshold = 0.05;
    a->idle_window_ms = 30 * 60 * 1000;
    a->events = true;
    a->leader_elect = -1;
    a->lease_name = "gpusched-monitor";
    a->util = UTIL_AUTO;
    a->dcgm_interval_ms = 30 * 1000;
    a->update_interval_ms = 200;
    bool output_given = false, endpoints_given = false;
    const char *value;
    int id;
    int64_t v;
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
            if (parse_listen(value, a, err) != 0)
                return -1;
            break;
        case OPT_MAX_PROBLEM_SERIES:
            if (cli_parse_int("--max-problem-series", value, 1, 1000000, &v, err) != 0)
                return -1;
            a->max_problem_series = (uint32_t)v;
            break;
        case OPT_IDLE_THRESHOLD:
            if (parse_percent(value, &a->idle_threshold, err) != 0)
                return -1;
            break;
        case OPT_IDLE_WINDOW:
            if (parse_duration_opt("--idle-window", value, 1000, 7LL * 24 * 3600 * 1000, "1s to 168h", &a->idle_window_ms,
                                   err) != 0)
                return -1;
            break;
        case OPT_TAINT_KEY:
            if (!value[0] || strlen(value) > 316 || strchr(value, '='))
                return gs_fail(err, GS_ERR_USAGE, "--taint-key: expected a taint key (\"nvidia.com/gpu\"), got \"%s\"",
                               value);
            if (a->ntaint == MON_MAX_TAINT_KEYS)
                return gs_fail(err, GS_ERR_USAGE, "--taint-key: at most %d keys", MON_MAX_TAINT_KEYS);
            a->taint_keys[a->ntaint++] = value;
            break;
        case OPT_EVENTS: a->events = true; break;
        case OPT_NO_EVENTS: a->events = false; break;
        case OPT_LEADER_ELECT: a->leader_elect = 1; break;
        case OPT_NO_LEADER_ELECT: a->leader_elect = 0; break;
        case OPT_LEASE_NAMESPACE:
            if (!dns_subdomain(value) || strlen(value) > 63)
                return gs_fail(err, GS_ERR_USAGE, "--lease-namespace: expected a namespace name, got \"%s\"", value);
            a->lease_ns = value;
            break;
        case OPT_LEASE_NAME:
            if (!dns_subdomain(value))
                return gs_fail(err, GS_ERR_USAGE, "--lease-name: expected a DNS subdomain name, got \"%s\"", value);
            a->lease_name = value;
            break;
        case OPT_DCGM_ENDPOINTS:
            endpoints_given = true;
            if (!strcmp(value, "auto")) {
                a->util = UTIL_AUTO;
            } else if (!strcmp(value, "none")) {
                a->util = UTIL_NONE;
            } else {
                if (check_endpoints(value, err) != 0)
                    return -1;
                a->util = UTIL_ENDPOINTS;
                a->dcgm_endpoints = value;
            }
            break;
        case OPT_PROMETHEUS_URL:
            if (!http_url(value))
                return gs_fail(err, GS_ERR_USAGE, "--prometheus-url: expected an http(s):// URL, got \"%s\"", value);
            a->prometheus_url = value;
            break;
        case OPT_DCGM_INTERVAL:
            if (parse_duration_opt("--dcgm-interval", value, 1000, 3600 * 1000, "1s to 1h", &a->dcgm_interval_ms, err) != 0)
                return -1;
            break;
        case OPT_UPDATE_INTERVAL:
            if (parse_duration_opt("--update-interval", value, 10, 60 * 1000, "10ms to 1m", &a->update_interval_ms,
                                   err) != 0)
                return -1;
            break;
        case OPT_ONCE: a->once = true; break;
        case OPT_OUTPUT: {
            static const char *const formats[] = {"text", "json", NULL};
            int f = cli_parse_choice("-o/--output", value, formats, err);
            if (f < 0)
                return -1;
            a->json = f == 1;
            output_given = true;
            break;
        }
        default: return gs_fail(err, GS_ERR_INTERNAL, "unhandled option %d", id);
        }
    }
    if (a->prometheus_url) {
        if (endpoints_given && a->util != UTIL_AUTO)
            return gs_fail(err, GS_ERR_USAGE, "--prometheus-url and --dcgm-endpoints exclude each other");
        a->util = UTIL_PROMETHEUS;
    }
    if (output_given && !a->once)
        return gs_fail(err, GS_ERR_USAGE, "-o/--output is for --once (the server chooses by request)");
    if (a->leader_elect < 0)
        a->leader_elect = a->events ? 1 : 0;
    if (!a->ntaint)
        a->taint_keys[a->ntaint++] = MON_DEFAULT_TAINT;
    a->taint_keys[a->ntaint] = NULL;
    return 0;
}

/* ---------------------------------------------------------------- time, logging */
static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void log_error(const char *what, const gs_error *err)
{
    char buf[GS_ERR_FILE_MAX + GS_ERR_PATH_MAX + GS_ERR_MSG_MAX + 64];
    gs_error_format(err, buf, sizeof buf);
    cli_eprintf("gpusched monitor: %s: %s\n", what, buf);
}

/* ---------------------------------------------------------------- the running monitor */
#define MON_KINDS                                                                                           \
    (GS_LIVE_KIND_BIT(GS_LIVE_NODE) | GS_LIVE_KIND_BIT(GS_LIVE_NAMESPACE) |                                 \
     GS_LIVE_KIND_BIT(GS_LIVE_PRIORITYCLASS) | GS_LIVE_KIND_BIT(GS_LIVE_RESOURCEQUOTA) |                    \
     GS_LIVE_KIND_BIT(GS_LIVE_PDB) | GS_LIVE_KIND_BIT(GS_LIVE_POD) | GS_LIVE_KIND_BIT(GS_LIVE_EVENT) |      \
     GS_LIVE_KIND_BIT(GS_LIVE_DAEMONSET) | GS_LIVE_KIND_BIT(GS_LIVE_DEVICECLASS) |                          \
     GS_LIVE_KIND_BIT(GS_LIVE_RESOURCECLAIM) | GS_LIVE_KIND_BIT(GS_LIVE_RESOURCECLAIMTEMPLATE) |            \
     GS_LIVE_KIND_BIT(GS_LIVE_RESOURCESLICE))

#define EVENT_REEMIT_MS (5 * 60 * 1000) /* one Event per pending pod per 5 min, unless its reason changed */
#define EVENT_RETRY_MS (10 * 1000)      /* a failed write is tried again after 10 s */
#define EVENT_RATE 10.0                 /* Events per second, all pods together */
#define EVENT_BURST 20.0
#define EVENT_MAX_PER_ROUND 100         /* candidates looked at per round (oldest first) */
#define HTTP_MAX_CONNECTIONS 256
#define HTTP_PER_IP 64
#define HTTP_TIMEOUT_S 10
#define HTTP_THREADS 4
#define HTTP_CONN_MEMORY (32u * 1024u)

/* One pod's Event memory: when it got its last Event, and for which reason. */
typedef struct pod_seen {
    struct pod_seen *next;
    uint64_t gen;       /* the round it was last seen pending */
    int64_t last_ms;
    char reason[64];
    char uid[];         /* the key */
} pod_seen;

/* A pending pod picked for an Event, copied out of the monitor's lock. */
typedef struct ev_pick {
    const char *ns, *name, *uid, *reason, *note;
    pod_seen *seen;
} ev_pick;

typedef struct mon {
    mon_args *a;
    gs_live_config *cfg;
    gs_live_store *store;
    gs_monitor *m;
    gs_live_informer *inf;
    char identity[256];
    char lease_ns[64];
    /* stopping: loops end (atomic, read with __atomic_load_n) */
    int stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* threads */
    pthread_t update_th, util_th, events_th, elector_th;
    bool update_on, util_on, events_on, elector_on;
    /* leadership: 1 when this replica may write Events (atomic) */
    int may_write;
    /* the elector stops after the Event writer (atomic): its last series go out while the
     * Lease is still held, then the Lease is released */
    int el_stop;
    /* HTTP */
    struct MHD_Daemon *mhd;
    int listen_fd;
    uint16_t port;
    /* elector (its thread only) */
    gs_live_client *el_client;
    gs_live_elector *el;
    /* events (its thread only) */
    gs_live_client *ev_client;
    gs_live_recorder *rec;
    pod_seen *seen[1024];
    uint64_t gen;
    double tokens;
    int64_t tokens_at_ms;
    /* informer problems already reported, per kind */
    uint64_t reconnects_seen[GS_LIVE_NKINDS];
} mon;

static bool stopping(mon *M) { return __atomic_load_n(&M->stop, __ATOMIC_RELAXED) != 0; }

/* Wait up to ms, cut short by the stop. */
static void nap(mon *M, int64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(ms / 1000);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&M->mu);
    while (!stopping(M)) {
        if (pthread_cond_timedwait(&M->cv, &M->mu, &until) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&M->mu);
}

static void request_stop(mon *M)
{
    pthread_mutex_lock(&M->mu);
    __atomic_store_n(&M->stop, 1, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&M->cv);
    pthread_mutex_unlock(&M->mu);
}

/* ---------------------------------------------------------------- update loop */
static void note_informers(mon *M)
{
    for (int k = 0; k < GS_LIVE_NKINDS; k++) {
        if (!(MON_KINDS & GS_LIVE_KIND_BIT(k)))
            continue;
        gs_live_informer_stats st;
        gs_live_informer_stats_get(M->inf, (gs_live_kind)k, &st);
        gs_monitor_note_informer(M->m, (gs_live_kind)k, &st);
        if (st.reconnects != M->reconnects_seen[k]) {
            M->reconnects_seen[k] = st.reconnects;
            const gs_live_kind_info *ki = gs_live_kind_get((gs_live_kind)k);
            cli_eprintf("gpusched monitor: %s: %s (reconnecting with backoff)\n", ki ? ki->resource : "?",
                        st.last_error[0] ? st.last_error : "watch failed");
        }
    }
}

static void *update_main(void *arg)
{
    mon *M = arg;
    int64_t last_err_ms = 0;
    while (!stopping(M)) {
        int64_t t0 = mono_ms();
        gs_error err;
        gs_error_clear(&err);
        if (gs_monitor_update(M->m, wall_ms(), &err) < 0 && t0 - last_err_ms > 60000) {
            last_err_ms = t0; /* one line a minute at most: the monitor keeps its last good state */
            log_error("update", &err);
        }
        note_informers(M);
        int64_t left = M->a->update_interval_ms - (mono_ms() - t0);
        if (left > 0)
            nap(M, left);
    }
    return NULL;
}

/* ---------------------------------------------------------------- utilization
 *
 * One round of utilization samples every --dcgm-interval from the configured source
 * (include/gpusched/dcgm.h): the dcgm-exporter pods found in the informer's store
 * ("auto"), the URLs given, or a Prometheus server's query API (the maximum over the idle
 * window, so one answer judges the whole window). A source that fails is counted in
 * gpusched_dcgm_scrape_errors_total{source} and logged at most every 5 minutes; a round in
 * which every source failed is not given to the idle tracker (it would forget every
 * device). */
#define MAX_URLS 64

typedef struct util_src {
    mon *M;
    gs_dcgm_opts o;
    char *urls_buf;
    const char *urls[MAX_URLS];
    int64_t last_log_ms;
} util_src;

static void util_error(void *ctx, gs_monitor_util_source src, const char *target, const gs_error *e)
{
    util_src *u = ctx;
    gs_monitor_note_dcgm_error(u->M->m, src);
    int64_t t = mono_ms();
    if (t - u->last_log_ms > 5 * 60000) {
        u->last_log_ms = t;
        cli_eprintf("gpusched monitor: utilization: %s: %s (further failures are counted, not logged, for 5 minutes)\n",
                    target, e->msg);
    }
}

static int util_setup(mon *M, util_src *u, gs_error *err)
{
    memset(u, 0, sizeof *u);
    u->M = M;
    switch (M->a->util) {
    case UTIL_PROMETHEUS:
        u->o.mode = GS_DCGM_PROMETHEUS;
        u->o.prometheus = M->a->prometheus_url;
        u->o.window_ms = M->a->idle_window_ms;
        break;
    case UTIL_ENDPOINTS: {
        u->o.mode = GS_DCGM_URLS;
        u->urls_buf = strdup(M->a->dcgm_endpoints);
        if (!u->urls_buf)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        for (char *save = NULL, *t = strtok_r(u->urls_buf, ",", &save); t && u->o.nurls < MAX_URLS;
             t = strtok_r(NULL, ",", &save))
            u->urls[u->o.nurls++] = t;
        u->o.urls = u->urls;
        break;
    }
    default: u->o.mode = GS_DCGM_DISCOVER; break;
    }
    u->o.max_body = 16u << 20; /* 16 MiB per answer: a dcgm-exporter page is tens of KiB */
    return 0;
}

static void *util_main(void *arg)
{
    mon *M = arg;
    gs_error err;
    util_src u;
    if (util_setup(M, &u, &err)) {
        log_error("utilization", &err);
        return NULL;
    }
    gs_idle_tracker *idle = gs_idle_new(M->a->idle_threshold, M->a->idle_window_ms, &err);
    if (!idle) {
        log_error("idle tracking", &err);
        free(u.urls_buf);
        return NULL;
    }
    gs_idle_set_lookback(idle, gs_dcgm_lookback_ms(&u.o));
    gs_util_set round;
    gs_util_set_init(&round);
    while (!stopping(M)) {
        int64_t t0 = mono_ms();
        gs_error_clear(&err);
        gs_dcgm_round info;
        int n = gs_dcgm_collect(M->store, &u.o, &round, &info, util_error, &u, &err);
        if (n < 0)
            log_error("utilization", &err);
        else if (n > 0) {
            int64_t now = wall_ms();
            const gs_idle_gpu *v = NULL;
            size_t nv = 0;
            if (gs_idle_observe(idle, &round, now, &err) == 0) {
                nv = gs_idle_list(idle, now, &v);
                if (gs_monitor_set_idle(M->m, v, nv, &err) != 0)
                    log_error("idle devices", &err);
            } else
                log_error("idle tracking", &err);
        }
        int64_t left = M->a->dcgm_interval_ms - (mono_ms() - t0);
        if (left > 0)
            nap(M, left);
    }
    gs_util_set_free(&round);
    gs_idle_free(idle);
    free(u.urls_buf);
    return NULL;
}
/* ---------------------------------------------------------------- leader election */
static bool el_keep_running(void *ctx) { return !__atomic_load_n(&((mon *)ctx)->el_stop, __ATOMIC_RELAXED); }

static void el_started(void *ctx)
{
    mon *M = ctx;
    __atomic_store_n(&M->may_write, 1, __ATOMIC_RELAXED);
    gs_monitor_note_leader(M->m, true);
    cli_eprintf("gpusched monitor: leading (Lease %s/%s): this replica writes Events\n", M->lease_ns,
                M->a->lease_name);
}

static void el_stopped(void *ctx)
{
    mon *M = ctx;
    __atomic_store_n(&M->may_write, 0, __ATOMIC_RELAXED);
    gs_monitor_note_leader(M->m, false);
    if (el_keep_running(M))
        cli_eprintf("gpusched monitor: leadership lost (Lease %s/%s)\n", M->lease_ns, M->a->lease_name);
}

static void el_new_leader(void *ctx, const char *identity)
{
    mon *M = ctx;
    if (identity && identity[0] && strcmp(identity, M->identity) != 0)
        cli_eprintf("gpusched monitor: the leader is %s\n", identity);
}

static void *elector_main(void *arg)
{
    mon *M = arg;
    gs_live_elector_callbacks cb = {el_started, el_stopped, el_new_leader, el_keep_running, M};
    while (el_keep_running(M)) {
        if (gs_live_elector_run(M->el, &cb) == 0)
            break; /* stopped (and released) */
        if (!stopping(M))
            nap(M, 1000); /* lost: stand again */
    }
    gs_live_elector_stats st;
    gs_live_elector_stats_get(M->el, &st);
    if (st.last_error.code != GS_OK && st.failures)
        log_error("leader election (last failure)", &st.last_error);
    return NULL;
}

/* ---------------------------------------------------------------- events */
static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static pod_seen *seen_get(mon *M, const char *uid, bool create)
{
    size_t slot = hash_str(uid) % (sizeof M->seen / sizeof M->seen[0]);
    for (pod_seen *p = M->seen[slot]; p; p = p->next)
        if (!strcmp(p->uid, uid))
            return p;
    if (!create)
        return NULL;
    size_t n = strlen(uid);
    pod_seen *p = calloc(1, sizeof *p + n + 1);
    if (!p)
        return NULL;
    memcpy(p->uid, uid, n + 1);
    p->next = M->seen[slot];
    M->seen[slot] = p;
    return p;
}

/* Forget the pods not pending in round gen (scheduled, deleted). */
static void seen_prune(mon *M, uint64_t gen)
{
    for (size_t i = 0; i < sizeof M->seen / sizeof M->seen[0]; i++) {
        pod_seen **pp = &M->seen[i];
        while (*pp) {
            if ((*pp)->gen != gen) {
                pod_seen *dead = *pp;
                *pp = dead->next;
                free(dead);
            } else {
                pp = &(*pp)->next;
            }
        }
    }
}

typedef struct pick_ctx {
    mon *M;
    int64_t now_ms;
    gs_arena *arena;
    ev_pick *v;
    size_t n, cap;
    bool oom;
} pick_ctx;

static char *adup(gs_arena *a, const char *s) { return gs_arena_strdup(a, s ? s : ""); }

/* Under the monitor's lock: mark each pending pod seen, pick those due for an Event. */
static int pick_pending(void *ctx, const gs_monitor_pending *p)
{
    pick_ctx *c = ctx;
    if (!p->uid || !p->uid[0] || !p->name || !p->ns)
        return 0;
    pod_seen *s = seen_get(c->M, p->uid, true);
    if (!s) {
        c->oom = true;
        return 1;
    }
    s->gen = c->M->gen;
    const char *reason = p->reason ? p->reason : "";
    bool reason_changed = strncmp(s->reason, reason, sizeof s->reason - 1) != 0;
    bool due = !s->last_ms || reason_changed || c->now_ms - s->last_ms >= EVENT_REEMIT_MS;
    if (!due || c->n >= EVENT_MAX_PER_ROUND)
        return 0;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        ev_pick *v = realloc(c->v, cap * sizeof *v);
        if (!v) {
            c->oom = true;
            return 1;
        }
        c->v = v;
        c->cap = cap;
    }
    ev_pick *e = &c->v[c->n++];
    e->ns = adup(c->arena, p->ns);
    e->name = adup(c->arena, p->name);
    e->uid = adup(c->arena, p->uid);
    e->reason = adup(c->arena, reason);
    gs_strbuf note = GS_STRBUF_INIT;
    gs_strbuf_puts(&note, p->why && p->why[0] ? p->why : "pending");
    if (p->fix && p->fix[0]) {
        gs_strbuf_puts(&note, "; fix: ");
        gs_strbuf_puts(&note, p->fix);
    }
    e->note = note.oom ? NULL : adup(c->arena, gs_strbuf_cstr(&note));
    gs_strbuf_free(&note);
    e->seen = s;
    if (!e->ns || !e->name || !e->uid || !e->reason || !e->note) {
        c->oom = true;
        return 1;
    }
    return 0;
}

static bool take_token(mon *M)
{
    int64_t now = mono_ms();
    M->tokens += (double)(now - M->tokens_at_ms) * EVENT_RATE / 1000.0;
    if (M->tokens > EVENT_BURST)
        M->tokens = EVENT_BURST;
    M->tokens_at_ms = now;
    if (M->tokens < 1)
        return false;
    M->tokens -= 1;
    return true;
}

static void events_round(mon *M, gs_arena *arena)
{
    pick_ctx c = {M, wall_ms(), arena, NULL, 0, 0, false};
    M->gen++;
    gs_monitor_pending_each(M->m, pick_pending, &c);
    if (!c.oom)
        seen_prune(M, M->gen); /* a partial walk would forget pods still pending */
    for (size_t i = 0; i < c.n && !stopping(M); i++) {
        if (!take_token(M))
            break; /* the rest wait for the next round: the oldest pods go first */
        ev_pick *e = &c.v[i];
        gs_live_objref reg = {.api_version = "v1", .kind = "Pod", .namespace_ = e->ns, .name = e->name, .uid = e->uid};
        /* action carries explain's reason: the recorder keys a series on (action, reason,
         * regarding), so a pod whose reason changes gets a new Event with the new note */
        char action[GS_LIVE_EVENT_FIELD_MAX + 1];
        snprintf(action, sizeof action, "%s", e->reason[0] ? e->reason : "Scheduling");
        gs_live_event ev = {.regarding = &reg, .type = GS_LIVE_EVENT_WARNING, .reason = "GPUPending",
                            .action = action, .note = e->note};
        gs_live_recorder_stats before, after;
        gs_live_recorder_stats_get(M->rec, &before);
        gs_error err;
        gs_error_clear(&err);
        int rc = gs_live_recorder_event(M->rec, &ev, &err);
        gs_live_recorder_stats_get(M->rec, &after);
        for (uint64_t k = before.created; k < after.created; k++)
            gs_monitor_note_event(M->m, GS_MON_EVENT_CREATED);
        for (uint64_t k = before.patched; k < after.patched; k++)
            gs_monitor_note_event(M->m, GS_MON_EVENT_PATCHED);
        if (rc != 0) {
            gs_monitor_note_event(M->m, GS_MON_EVENT_FAILED);
            log_error("event", &err);
        }
        /* a failure is retried after EVENT_RETRY_MS (not at once: the API server may be
         * refusing for a while), a success waits the re-emit interval */
        pod_seen *s = seen_get(M, e->uid, false);
        if (s) {
            s->last_ms = rc != 0 ? c.now_ms - EVENT_REEMIT_MS + EVENT_RETRY_MS : c.now_ms;
            snprintf(s->reason, sizeof s->reason, "%s", e->reason);
        }
    }
    free(c.v);
}

static void *events_main(void *arg)
{
    mon *M = arg;
    gs_arena arena;
    gs_arena_init(&arena, 16384);
    M->tokens = EVENT_BURST;
    M->tokens_at_ms = mono_ms();
    while (!stopping(M)) {
        int64_t t0 = mono_ms();
        if (__atomic_load_n(&M->may_write, __ATOMIC_RELAXED)) {
            events_round(M, &arena);
            gs_arena_free(&arena);
            gs_arena_init(&arena, 16384);
            gs_live_recorder_stats before, after;
            gs_live_recorder_stats_get(M->rec, &before);
            gs_error err;
            gs_error_clear(&err);
            if (gs_live_recorder_tick(M->rec, &err) != 0)
                log_error("event series heartbeat", &err);
            gs_live_recorder_stats_get(M->rec, &after);
            for (uint64_t k = before.patched; k < after.patched; k++)
                gs_monitor_note_event(M->m, GS_MON_EVENT_PATCHED);
        }
        int64_t wait = 1000 - (mono_ms() - t0); /* a round a second: Events are not metrics */
        if (wait > 0)
            nap(M, wait);
    }
    gs_error err;
    gs_error_clear(&err);
    if (__atomic_load_n(&M->may_write, __ATOMIC_RELAXED) && gs_live_recorder_flush(M->rec, &err) != 0)
        log_error("event series flush", &err);
    gs_arena_free(&arena);
    for (size_t i = 0; i < sizeof M->seen / sizeof M->seen[0]; i++)
        while (M->seen[i]) {
            pod_seen *next = M->seen[i]->next;
            free(M->seen[i]);
            M->seen[i] = next;
        }
    return NULL;
}

/* ---------------------------------------------------------------- HTTP */
static enum MHD_Result respond(struct MHD_Connection *c, unsigned code, const char *ctype, char *body, size_t len,
                               bool must_free)
{
    struct MHD_Response *r =
            MHD_create_response_from_buffer(len, body, must_free ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (must_free)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result rc = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result respond_fixed(struct MHD_Connection *c, unsigned code, const char *text)
{
    return respond(c, code, "text/plain; charset=utf-8", (char *)text, strlen(text), false);
}

static enum MHD_Result respond_sb(struct MHD_Connection *c, unsigned code, const char *ctype, gs_strbuf *sb)
{
    if (sb->oom) {
        gs_strbuf_free(sb);
        return respond_fixed(c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
    }
    size_t len = sb->len;
    char *body = gs_strbuf_detach(sb);
    if (!body)
        return respond_fixed(c, code, "");
    return respond(c, code, ctype, body, len, true);
}

static bool wants_json(struct MHD_Connection *c)
{
    const char *f = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
    if (f)
        return !strcmp(f, "json");
    const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    return accept && strstr(accept, "application/json");
}

static enum MHD_Result answer_readyz(mon *M, struct MHD_Connection *c)
{
    if (stopping(M))
        return respond_fixed(c, MHD_HTTP_SERVICE_UNAVAILABLE, "shutting down\n");
    gs_strbuf sb = GS_STRBUF_INIT;
    for (int k = 0; k < GS_LIVE_NKINDS; k++) {
        if (!(MON_KINDS & GS_LIVE_KIND_BIT(k)) || gs_live_informer_synced(M->inf, (gs_live_kind)k))
            continue;
        const gs_live_kind_info *ki = gs_live_kind_get((gs_live_kind)k);
        gs_strbuf_puts(&sb, sb.len ? ", " : "not synced: ");
        gs_strbuf_puts(&sb, ki ? ki->resource : "?");
    }
    if (!sb.len) {
        gs_strbuf_free(&sb);
        return respond_fixed(c, MHD_HTTP_OK, "ok\n");
    }
    gs_strbuf_putc(&sb, '\n');
    return respond_sb(c, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8", &sb);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version;
    (void)upload_data;
    mon *M = cls;
    static int marker;
    if (!*con_cls) { /* headers only: answer at once, a body (if any) is never read */
        *con_cls = &marker;
        bool get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
        if (!get)
            return respond_fixed(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        *upload_data_size = 0;
    } else if (*upload_data_size) {
        *upload_data_size = 0; /* a GET with a body: dropped */
        return MHD_YES;
    }
    if (!strcmp(url, "/healthz"))
        return respond_fixed(c, MHD_HTTP_OK, "ok\n");
    if (!strcmp(url, "/readyz"))
        return answer_readyz(M, c);
    gs_monitor_view view;
    bool json = false;
    const char *ctype = "text/plain; charset=utf-8";
    if (!strcmp(url, "/metrics")) {
        view = GS_MON_METRICS;
        ctype = "text/plain; version=0.0.4; charset=utf-8";
    } else if (!strcmp(url, "/pending") || !strcmp(url, "/hygiene") || !strcmp(url, "/idle")) {
        view = url[1] == 'p' ? GS_MON_PENDING : url[1] == 'h' ? GS_MON_HYGIENE : GS_MON_IDLE;
        json = wants_json(c);
        if (json)
            ctype = "application/json";
    } else {
        return respond_fixed(c, MHD_HTTP_NOT_FOUND,
                             "not found: /metrics, /pending, /hygiene, /idle, /healthz, /readyz\n");
    }
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_error err;
    gs_error_clear(&err);
    if (gs_monitor_render(M->m, view, json ? GS_MON_JSON : GS_MON_TEXT, wall_ms(), &sb, &err) != 0) {
        gs_strbuf_free(&sb);
        log_error(url, &err);
        return respond_fixed(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "render failed (see the monitor's log)\n");
    }
    return respond_sb(c, MHD_HTTP_OK, ctype, &sb);
}


static int http_start(mon *M, gs_error *err)
{
    bool v6 = false;
    M->listen_fd = gs_tcp_listen(M->a->host, M->a->port, 128, &M->port, &v6, err);
    if (M->listen_fd < 0)
        return -1;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC;
    if (v6)
        flags |= MHD_USE_IPv6;
    struct MHD_OptionItem opts[] = {
            {MHD_OPTION_LISTEN_SOCKET, M->listen_fd, NULL},
            {MHD_OPTION_CONNECTION_TIMEOUT, HTTP_TIMEOUT_S, NULL},
            {MHD_OPTION_CONNECTION_LIMIT, HTTP_MAX_CONNECTIONS, NULL},
            {MHD_OPTION_PER_IP_CONNECTION_LIMIT, HTTP_PER_IP, NULL},
            {MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTP_CONN_MEMORY, NULL},
            {MHD_OPTION_THREAD_POOL_SIZE, HTTP_THREADS, NULL},
            {MHD_OPTION_END, 0, NULL},
    };
    M->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, M, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (!M->mhd) {
        close(M->listen_fd);
        M->listen_fd = -1;
        return gs_fail(err, GS_ERR_IO, "libmicrohttpd did not start on %s:%u", M->a->host, (unsigned)M->port);
    }
    return 0;
}

/* Stop accepting (the listener closes now), answers in flight finish at http_stop. */
static void http_quiesce(mon *M)
{
    if (!M->mhd || M->listen_fd < 0)
        return;
    MHD_socket fd = MHD_quiesce_daemon(M->mhd);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
    M->listen_fd = -1;
}

static void http_stop(mon *M)
{
    if (M->mhd)
        MHD_stop_daemon(M->mhd);
    M->mhd = NULL;
    if (M->listen_fd >= 0)
        close(M->listen_fd);
    M->listen_fd = -1;
}

/* ---------------------------------------------------------------- start-up */
static gs_live_client *new_client(mon *M, long timeout_ms, int max_retries, gs_error *err)
{
    return cli_live_client(M->cfg, "monitor", timeout_ms, max_retries, 0, err);
}

static long request_timeout_ms(const mon_args *a)
{
    return cli_live_timeout_ms(&a->live, 0);
}

static void make_identity(mon *M)
{
    const char *pod = getenv("POD_NAME");
    char host[128] = "";
    if (pod && pod[0] && strlen(pod) < sizeof host)
        snprintf(host, sizeof host, "%s", pod);
    else if (gethostname(host, sizeof host) != 0 || !host[0])
        snprintf(host, sizeof host, "gpusched-monitor");
    host[sizeof host - 1] = '\0';
    snprintf(M->identity, sizeof M->identity, "%s_%ld", host, (long)getpid());
}

static void pick_lease_namespace(mon *M)
{
    const char *ns = M->a->lease_ns;
    const char *env = getenv("POD_NAMESPACE");
    if (!ns && env && dns_subdomain(env) && strlen(env) < sizeof M->lease_ns)
        ns = env;
    if (!ns && M->cfg && M->cfg->context && !M->cfg->context[0] && M->cfg->namespace_ && M->cfg->namespace_[0])
        ns = M->cfg->namespace_; /* in-cluster: the service account's namespace */
    snprintf(M->lease_ns, sizeof M->lease_ns, "%s", ns ? ns : "default");
}

static int load_config(mon *M, gs_error *err)
{
    M->cfg = cli_live_config_load(&M->a->live, err);
    return M->cfg ? 0 : -1;
}

static int new_monitor(mon *M, gs_error *err)
{
    gs_monitor_opts mo;
    memset(&mo, 0, sizeof mo);
    mo.taint_keys = M->a->taint_keys;
    mo.max_problem_series = M->a->max_problem_series;
    mo.idle_threshold = M->a->idle_threshold;
    mo.idle_window_ms = M->a->idle_window_ms;
    mo.start_ms = wall_ms();
    mo.cluster_name = M->a->live.source;
    if (!(M->store = gs_live_store_new(err)))
        return -1;
    if (!(M->m = gs_monitor_new(&mo, err)))
        return -1;
    gs_live_store_observe(M->store, gs_monitor_observer, M->m);
    return 0;
}

/* --once: every kind listed into the store (the observer feeds the monitor), one update,
 * the pending view on stdout. */
static int run_once(mon *M)
{
    gs_error err;
    gs_error_clear(&err);
    int status = CLI_EXIT_OK;
    gs_live_client *c = NULL;
    gs_strbuf out = GS_STRBUF_INIT;
    if (load_config(M, &err) != 0 || new_monitor(M, &err) != 0 ||
        !(c = new_client(M, request_timeout_ms(M->a), 0, &err))) {
        status = cli_report_error(&err);
        goto out;
    }
    for (int k = 0; k < GS_LIVE_NKINDS; k++) {
        if (!(MON_KINDS & GS_LIVE_KIND_BIT(k)))
            continue;
        char path[256];
        if (!gs_live_kind_path((gs_live_kind)k, NULL, path, sizeof path)) {
            gs_fail(&err, GS_ERR_INTERNAL, "no path for kind %d", k);
            status = cli_report_error(&err);
            goto out;
        }
        if (gs_live_store_list(c, M->store, (gs_live_kind)k, path, 0, NULL, 0, &err) < 0) {
            status = cli_report_error(&err);
            goto out;
        }
    }
    int64_t now = wall_ms();
    if (gs_monitor_update(M->m, now, &err) < 0 ||
        gs_monitor_render(M->m, GS_MON_PENDING, M->a->json ? GS_MON_JSON : GS_MON_TEXT, now, &out, &err) != 0) {
        status = cli_report_error(&err);
        goto out;
    }
    if ((M->a->json ? cli_write_output(&out, NULL, &err) : cli_write_text_output(&out, NULL, &err)) != 0) {
        status = cli_report_error(&err);
        goto out;
    }
    gs_monitor_stats st;
    gs_monitor_stats_get(M->m, &st);
    status = st.pending_gpu_pods ? CLI_EXIT_FOUND : CLI_EXIT_OK;
out:
    gs_strbuf_free(&out);
    gs_live_client_free(c);
    return status;
}

static int start_events(mon *M, gs_error *err)
{
    /* bounded requests and no retries: the loops must keep their pace and stop quickly */
    if (!(M->ev_client = new_client(M, 5000, -1, err)))
        return -1;
    char instance[GS_LIVE_EVENT_FIELD_MAX + 1];
    snprintf(instance, sizeof instance, "%.*s", GS_LIVE_EVENT_FIELD_MAX, M->identity);
    gs_live_recorder_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.reporting_controller = "gpusched.io/monitor";
    ro.reporting_instance = instance;
    if (!(M->rec = gs_live_recorder_new(M->ev_client, &ro, err)))
        return -1;
    if (!M->a->leader_elect)
        __atomic_store_n(&M->may_write, 1, __ATOMIC_RELAXED);
    return 0;
}

static int start_elector(mon *M, gs_error *err)
{
    if (!(M->el_client = new_client(M, 5000, -1, err)))
        return -1;
    gs_live_elector_opts eo;
    memset(&eo, 0, sizeof eo);
    eo.namespace_ = M->lease_ns;
    eo.name = M->a->lease_name;
    eo.identity = M->identity;
    eo.release_on_cancel = true;
    if (!(M->el = gs_live_elector_new(M->el_client, &eo, err)))
        return -1;
    return 0;
}

static void mon_free(mon *M)
{
    gs_live_elector_free(M->el);
    gs_live_client_free(M->el_client);
    gs_live_recorder_free(M->rec);
    gs_live_client_free(M->ev_client);
    gs_live_informer_free(M->inf);
    if (M->store)
        gs_live_store_observe(M->store, NULL, NULL);
    gs_monitor_free(M->m);
    gs_live_store_free(M->store);
    gs_live_config_free(M->cfg);
    pthread_cond_destroy(&M->cv);
    pthread_mutex_destroy(&M->mu);
}

static int wait_for_signal(const sigset_t *set)
{
    for (;;) {
        siginfo_t si;
        int sig = sigwaitinfo(set, &si);
        if (sig == SIGTERM || sig == SIGINT)
            return sig;
        if (sig < 0 && errno != EINTR) {
            cli_eprintf("gpusched monitor: sigwaitinfo: %s; stopping\n", strerror(errno));
            return SIGINT;
        }
    }
}

static int run_server(mon *M)
{
    gs_error err;
    gs_error_clear(&err);
    int status = CLI_EXIT_OK;
    sigset_t set;
    cli_daemon_signals(&set, false); /* before any thread: all inherit the mask */

    if (load_config(M, &err) != 0 || new_monitor(M, &err) != 0) {
        status = cli_report_error(&err);
        goto out;
    }
    make_identity(M);
    pick_lease_namespace(M);
    if (cli_live_probe(M->cfg, "monitor", MON_KINDS, request_timeout_ms(M->a), &err) != 0) {
        status = cli_report_error(&err);
        goto out;
    }
    if (http_start(M, &err) != 0) {
        status = cli_report_error(&err);
        goto out;
    }
    gs_live_client_opts ico;
    memset(&ico, 0, sizeof ico);
    ico.timeout_ms = request_timeout_ms(M->a);
    char agent[64];
    snprintf(agent, sizeof agent, "%s-monitor/%s", CLI_PROGRAM, CLI_VERSION);
    ico.user_agent = agent;
    gs_live_informer_opts io;
    memset(&io, 0, sizeof io);
    io.kinds = MON_KINDS;
    io.client = &ico;
    if (!(M->inf = gs_live_informer_new(M->cfg, M->store, &io, &err)) ||
        (M->a->events && start_events(M, &err) != 0) || (M->a->leader_elect && start_elector(M, &err) != 0) ||
        gs_live_informer_start(M->inf, &err) != 0) {
        status = cli_report_error(&err);
        goto stop;
    }
    M->update_on = pthread_create(&M->update_th, NULL, update_main, M) == 0;
    M->util_on = M->a->util != UTIL_NONE && pthread_create(&M->util_th, NULL, util_main, M) == 0;
    M->events_on = M->rec && pthread_create(&M->events_th, NULL, events_main, M) == 0;
    M->elector_on = M->el && pthread_create(&M->elector_th, NULL, elector_main, M) == 0;
    if (!M->update_on || (M->rec && !M->events_on) || (M->el && !M->elector_on)) {
        gs_fail(&err, GS_ERR_NOMEM, "cannot start the monitor's threads");
        status = cli_report_error(&err);
        goto stop;
    }
    bool v6 = strchr(M->a->host, ':') != NULL;
    cli_eprintf("gpusched monitor: serving on http://%s%s%s:%u/ (%s, %s)\n", v6 ? "[" : "", M->a->host, v6 ? "]" : "",
                (unsigned)M->port, M->a->live.source, M->cfg->server);
    if (!M->a->events)
        cli_eprintf("gpusched monitor: Events off\n");
    else if (!M->a->leader_elect)
        cli_eprintf("gpusched monitor: Events on, without leader election\n");
    if (M->a->leader_elect)
        cli_eprintf("gpusched monitor: leader election on Lease %s/%s as %s\n", M->lease_ns, M->a->lease_name,
                    M->identity);

    int sig = wait_for_signal(&set);
    cli_eprintf("gpusched monitor: %s: stopping\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
stop:
    http_quiesce(M);
    request_stop(M);
    if (M->events_on)
        pthread_join(M->events_th, NULL); /* flushes the series counts while still leading */
    __atomic_store_n(&M->el_stop, 1, __ATOMIC_RELAXED);
    if (M->elector_on)
        pthread_join(M->elector_th, NULL); /* releases the Lease when held */
    if (M->util_on)
        pthread_join(M->util_th, NULL);
    if (M->update_on)
        pthread_join(M->update_th, NULL);
    gs_live_informer_stop(M->inf);
    http_stop(M);
out:
    return status;
}

int gs_cmd_monitor(int argc, char **argv)
{
    mon_args a;
    memset(&a, 0, sizeof a);
    bool help = false;
    gs_error err;
    gs_error_clear(&err);
    if (parse_args(argc, argv, &a, &help, &err) != 0)
        return cli_usage_error("monitor", &err);
    if (help)
        return cli_print_usage(cli_monitor_usage);
    mon M;
    memset(&M, 0, sizeof M);
    M.a = &a;
    M.listen_fd = -1;
    pthread_mutex_init(&M.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&M.cv, &ca);
    pthread_condattr_destroy(&ca);
    int status = a.once ? run_once(&M) : run_server(&M);
    mon_free(&M);
    return status;
}
