/*
 * dcgm.h - where `gpusched monitor` gets GPU utilization from (docs/metrics.md, "Utilization
 * input"): dcgm-exporter endpoints found through the API (the informer's pod cache), explicit
 * dcgm-exporter URLs, or a Prometheus server's query API. One round of any of them fills a
 * gs_util_set (monitor.h) for gs_idle_observe. lib/monitor/dcgm.c (libcurl).
 *
 * The one call for the CLI is gs_dcgm_collect(); the pieces under it (discovery, scrape,
 * query) are public for tests and other callers.
 *
 * Errors: a source that fails (connect, timeout, HTTP status, a body over the limit, a
 * malformed exposition or answer) does not fail the round: it is reported to the caller's
 * gs_dcgm_error_fn with its source kind and target, so the caller can count
 * gpusched_dcgm_scrape_errors_total{source} (gs_monitor_note_dcgm_error) and log it; its
 * samples are not in the round (a failed exposition is taken back whole). Only a failure of
 * the round itself (no memory, libcurl cannot start, bad options) returns -1 with err.
 * Nothing here prints or exits.
 *
 * Memory is bounded: every body is capped (max_body, default 64 MiB) and every request has a
 * timeout; at most `parallel` transfers run at once, so a round holds at most parallel x
 * max_body bytes of bodies besides the samples (themselves capped by gs_util_limits).
 */
#ifndef GPUSCHED_DCGM_H
#define GPUSCHED_DCGM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/error.h"
#include "gpusched/live.h"
#include "gpusched/monitor.h"
#include "gpusched/util.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GS_DCGM_DEFAULT_PORT 9400u
#define GS_DCGM_DEFAULT_TIMEOUT_MS 10000L
#define GS_DCGM_DEFAULT_MAX_BODY ((size_t)64 << 20)
#define GS_DCGM_DEFAULT_PARALLEL 16u

typedef enum gs_dcgm_mode {
    GS_DCGM_DISCOVER = 0, /* dcgm-exporter pods in the store, scraped at podIP:port/metrics */
    GS_DCGM_URLS,         /* the given /metrics URLs */
    GS_DCGM_PROMETHEUS,   /* a Prometheus server's /api/v1/query */
} gs_dcgm_mode;

typedef struct gs_dcgm_opts {
    gs_dcgm_mode mode;
    const char *const *urls;   /* GS_DCGM_URLS: nurls full URLs ("http://10.0.0.5:9400/metrics") */
    size_t nurls;
    const char *prometheus;    /* GS_DCGM_PROMETHEUS: base URL ("http://prometheus:9090", a
                                  path prefix allowed; "/api/v1/query" is appended) */
    int64_t window_ms;         /* GS_DCGM_PROMETHEUS: query the maximum over this window
                                  (0: the last value; see gs_dcgm_lookback_ms) */
    unsigned port;             /* GS_DCGM_DISCOVER: 0 -> 9400 */
    long timeout_ms;           /* per request, connecting included; 0 -> 10 s */
    size_t max_body;           /* per answer; 0 -> 64 MiB */
    unsigned parallel;         /* transfers at once; 0 -> 16 */
    unsigned max_endpoints;    /* GS_DCGM_DISCOVER: endpoints scraped per round; 0 -> 10,000
                                  (the rest are reported as one GS_ERR_LIMIT error) */
    const gs_util_limits *limits; /* for the parsers; NULL: defaults */
} gs_dcgm_opts;

/* A failed source: src ENDPOINT (a scrape) or PROMETHEUS (a query); target is the URL
 * (for a query, the base URL and the family: "http://prom:9090 DCGM_FI_DEV_GPU_UTIL");
 * e->file is the URL too, e->line/col the position of a parse error. Called on the thread
 * that called the scrape, once per failed source per round. */
typedef void (*gs_dcgm_error_fn)(void *ctx, gs_monitor_util_source src, const char *target,
                                 const gs_error *e);

/* What one round did. */
typedef struct gs_dcgm_round {
    uint32_t sources;  /* endpoints scraped, or queries sent */
    uint32_t ok;       /* of them, answered and read */
    uint32_t failed;   /* of them, reported to the error callback */
    uint64_t bytes;    /* body bytes received */
} gs_dcgm_round;

/* ---------------------------------------------------------------- the one call for the CLI
 *
 * One round: reset `round` (gs_util_set_reset), then per o->mode discover and scrape the
 * dcgm-exporter pods of `st` (st may be NULL for the other modes), scrape o->urls, or query
 * o->prometheus for both families. info (may be NULL) says what happened.
 * Returns the number of sources that answered (0 when none did: the caller should then not
 * feed the round to gs_idle_observe, which would forget every device), or -1 with err.
 *
 * Use with the tracker:
 *     gs_idle_set_lookback(tracker, gs_dcgm_lookback_ms(&opts));   once
 *     n = gs_dcgm_collect(store, &opts, &round, &info, on_error, monitor, &err);
 *     if (n > 0) gs_idle_observe(tracker, &round, now_ms, &err);
 */
int gs_dcgm_collect(gs_live_store *st, const gs_dcgm_opts *o, gs_util_set *round,
                    gs_dcgm_round *info, gs_dcgm_error_fn fn, void *ctx, gs_error *err);

/* The tracker look-back for rounds made with o: o->window_ms for GS_DCGM_PROMETHEUS (one
 * round of windowed maxima stands for the whole window before it), else 0. */
int64_t gs_dcgm_lookback_ms(const gs_dcgm_opts *o);

/* ---------------------------------------------------------------- discovery */

typedef struct gs_dcgm_endpoint {
    const char *url;  /* "http://10.0.3.17:9400/metrics" ("http://[fd00::7]:9400/metrics") */
    const char *node; /* the exporter pod's spec.nodeName; "" when unknown (explicit URLs) */
    const char *pod;  /* "gpu-operator/nvidia-dcgm-exporter-x7k2p"; "" for explicit URLs */
} gs_dcgm_endpoint;

typedef struct gs_dcgm_endpoints {
    gs_dcgm_endpoint *v;
    size_t n, cap;
    size_t skipped;   /* exporter pods passed over: not Running, no podIP, deleting */
    gs_arena arena;   /* the endpoints' strings */
} gs_dcgm_endpoints;

void gs_dcgm_endpoints_init(gs_dcgm_endpoints *e);
void gs_dcgm_endpoints_reset(gs_dcgm_endpoints *e);
void gs_dcgm_endpoints_free(gs_dcgm_endpoints *e);

/* Whether a pod is a dcgm-exporter by its labels: app=nvidia-dcgm-exporter (the GPU
 * Operator's DaemonSet), app.kubernetes.io/name=dcgm-exporter (dcgm-exporter's Helm chart
 * and manifests) or app=dcgm-exporter. value/n: a label's value. */
bool gs_dcgm_exporter_label(const char *key, const char *value, size_t n);

/* The dcgm-exporter pods of the store, and gpusched agent pods (app.kubernetes.io/name=
 * gpusched with app.kubernetes.io/component=agent: the same families), that can be scraped (Running, a podIP, not being
 * deleted), as endpoints http://<podIP>:<port>/metrics (port 0: 9400), appended to out in
 * the store's order. 0, or -1 with err (no memory). Pods whose text does not parse are
 * passed over (counted in out->skipped). */
int gs_dcgm_discover(gs_live_store *st, unsigned port, gs_dcgm_endpoints *out, gs_error *err);

/* "http://<ip>:<port>/metrics" into buf (IPv6 addresses bracketed); NULL when cap is too
 * small or ip is empty. */
const char *gs_dcgm_endpoint_url(const char *ip, unsigned port, char *buf, size_t cap);

/* ---------------------------------------------------------------- sources */

/* Scrape n endpoints (o: timeout_ms, max_body, parallel, limits; NULL: defaults) and
 * append their utilization samples to `round` (not reset here). Samples without a host
 * label, or whose host label is the exporter pod's own name (dcgm-exporter without
 * NODE_NAME reports its hostname, the pod's name), get the endpoint's node. Returns the
 * number of endpoints read, or -1 with err; info (may be NULL) is added to. */
int gs_dcgm_scrape(const gs_dcgm_endpoint *eps, size_t n, const gs_dcgm_opts *o,
                   gs_util_set *round, gs_dcgm_round *info, gs_dcgm_error_fn fn, void *ctx,
                   gs_error *err);

/* Query a Prometheus server (base_url as gs_dcgm_opts.prometheus) for both utilization
 * families, one instant query each through GET <base>/api/v1/query, and append the samples
 * to `round`. window_ms 0: the families' last values ("DCGM_FI_DEV_GPU_UTIL"); otherwise the
 * maximum over the window of the series that already existed when it began:
 *     max_over_time(DCGM_FI_DEV_GPU_UTIL[1800s]) and DCGM_FI_DEV_GPU_UTIL offset 1800s
 * (a series younger than the window, e.g. of a pod that got the GPU 5 minutes ago, is left
 * out: its maximum would not cover the window). Returns the number of queries answered
 * (0..2), or -1 with err. */
int gs_dcgm_query_prometheus(const char *base_url, int64_t window_ms, const gs_dcgm_opts *o,
                             gs_util_set *round, gs_dcgm_round *info, gs_dcgm_error_fn fn,
                             void *ctx, gs_error *err);

/* The PromQL expression gs_dcgm_query_prometheus sends for family m into buf; NULL when
 * cap is too small or m is GS_UTIL_NONE. */
const char *gs_dcgm_promql(gs_util_metric m, int64_t window_ms, char *buf, size_t cap);

/* ---------------------------------------------------------------- idle tracking, additions
 * (implemented in lib/monitor/idle.c with the rest of the tracker; they belong in
 * monitor.h's "idle tracking" section). */

/* gs_idle_set_lookback (monitor.h, idle tracking) takes gs_dcgm_lookback_ms(&opts). */

/* Devices held by the tracker now, and the bytes it holds (tests, memory reports). */
size_t gs_idle_devices(const gs_idle_tracker *t);
size_t gs_idle_bytes(const gs_idle_tracker *t);

#ifdef __cplusplus
}
#endif
#endif
