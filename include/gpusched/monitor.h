/*
 * monitor.h - `gpusched monitor` (issue 12): the live view of GPU pods, pools and devices.
 *
 * Sections: utilization input (dcgm-exporter scrapes and Prometheus query answers read into
 * GPU utilization samples); idle tracking (which devices stayed under a threshold for a
 * window); the monitor (the cluster's GPU state kept from the informers' changes, explain
 * per pending pod shape, metrics and detail views rendered from memory).
 *
 * Ownership: a gs_util_set owns its samples and every string they point to; both live until
 * gs_util_set_free(). Nothing here prints or exits; errors go up in gs_error.
 */
#ifndef GPUSCHED_MONITOR_H
#define GPUSCHED_MONITOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/error.h"
#include "gpusched/live.h"
#include "gpusched/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================ utilization input
 *
 * What is read (docs/metrics.md, "Utilization input"): the series of
 *   DCGM_FI_DEV_GPU_UTIL           whole GPUs, percent 0..100 (not reported for MIG devices)
 *   DCGM_FI_PROF_GR_ENGINE_ACTIVE  ratio 0..1, per MIG GPU instance and per whole GPU
 * with dcgm-exporter's labels: gpu, UUID (uuid), device, modelName, GPU_I_PROFILE, GPU_I_ID,
 * Hostname or hostname (node as a fallback), namespace/pod/container (pod_namespace/pod_name/
 * container_name, and Prometheus's exported_namespace/exported_pod/exported_container, which
 * win when present). Every other family and label is passed over. Values that say "no data"
 * (NaN, +-Inf, DCGM blank sentinels, out of range) give no sample and are counted. */

typedef enum gs_util_metric {
    GS_UTIL_NONE = 0,
    GS_UTIL_GPU_UTIL,         /* DCGM_FI_DEV_GPU_UTIL (percent, stored as a ratio) */
    GS_UTIL_GR_ENGINE_ACTIVE, /* DCGM_FI_PROF_GR_ENGINE_ACTIVE (ratio) */
} gs_util_metric;

/* One utilization sample. Strings are never NULL ("" when the label is absent). */
typedef struct gs_util_sample {
    const char *node;        /* Hostname / hostname / node label */
    const char *uuid;        /* GPU UUID ("GPU-..."); for a MIG instance its parent GPU's */
    const char *device;      /* "nvidia0" */
    const char *model;       /* modelName */
    const char *mig_profile; /* GPU_I_PROFILE ("1g.10gb"); "" for a whole GPU */
    const char *ns;          /* namespace of the pod using the GPU (pod mapping on) */
    const char *pod;
    const char *container;
    int32_t gpu;             /* gpu label (index on the node); -1 when absent */
    int32_t mig_instance;    /* GPU_I_ID; -1 for a whole GPU */
    double util;             /* 0..1 */
    int64_t ts_ms;           /* sample timestamp in ms since the epoch; 0 when none given */
    uint32_t line;           /* text: the source line; query JSON: the result's index + 1 */
    uint8_t metric;          /* gs_util_metric */
} gs_util_sample;

typedef struct gs_util_limits {
    uint32_t max_line;   /* bytes of one text line, or of one JSON string (0 = 65536) */
    uint32_t max_labels; /* labels of one series (0 = 64) */
    uint32_t max_series; /* series of one input, all families (0 = 1,000,000) */
} gs_util_limits;

typedef struct gs_util_set {
    gs_util_sample *v;
    size_t n, cap;
    gs_arena arena;    /* the samples' strings */
    uint64_t series;   /* series read, all families, all inputs */
    uint64_t dropped;  /* utilization series without a usable value (NaN, Inf, blank, range) */
} gs_util_set;

void gs_util_set_init(gs_util_set *s);
void gs_util_set_free(gs_util_set *s);
/* Forget the samples and counters, keep the memory for the next round. */
void gs_util_set_reset(gs_util_set *s);

/* Read a Prometheus text exposition (format 0.0.4, as dcgm-exporter serves it on /metrics)
 * from data[0..len) and append its utilization samples to s. `name` is the name errors
 * carry (a URL or file). Strict: a malformed line, a bad escape, a duplicate label, a second
 * TYPE for a family, a CR or NUL byte or invalid UTF-8 is GS_ERR_PARSE at line:col (1-based, bytes); a
 * limit is GS_ERR_LIMIT. On error s is as it was before the call (its samples of this input
 * are taken back). lim NULL: defaults. */
int gs_util_parse_promtext(gs_util_set *s, const char *name, const char *data, size_t len,
                           const gs_util_limits *lim, gs_error *err);

/* Read the JSON answer of a Prometheus server's /api/v1/query (status "success", data.
 * resultType "vector", each result {"metric":{labels}, "value":[ts, "v"]}) and append its
 * utilization samples to s. A result's family is its __name__ label; when a query drops it
 * (avg_over_time(...), max by (...)) `metric` says which family the values are of
 * (GS_UTIL_NONE: such results are skipped). status "error" is GS_ERR_INVALID with the
 * server's errorType and error; another resultType is GS_ERR_INVALID; malformed JSON is
 * GS_ERR_PARSE at line:col. On error s is as it was before the call. */
int gs_util_parse_query_json(gs_util_set *s, const char *name, const char *data, size_t len,
                             gs_util_metric metric, const gs_util_limits *lim, gs_error *err);

/* "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "" for GS_UTIL_NONE. */
const char *gs_util_metric_name(gs_util_metric m);

/* ================================================================ idle tracking
 *
 * One tracker remembers, per device (node + GPU UUID or index + MIG instance), since when
 * its utilization has stayed under the threshold. Rounds of samples (one scrape of every
 * source, or one Prometheus query) are given in time order; a device above the threshold
 * starts over; a device absent from a round is forgotten. lib/monitor/idle.c. */

typedef struct gs_idle_gpu {
    const char *node;          /* never NULL */
    const char *gpu;           /* UUID when known, else the index as text */
    const char *mig_instance;  /* GPU_I_ID as text, "" for a whole GPU */
    const char *mig_profile;   /* "" for a whole GPU */
    const char *model;
    const char *ns;            /* pod mapping of the sample; "" when the exporter had none */
    const char *pod;
    uint32_t pods;             /* pods the exporter mapped to it: 0 unknown (no mapping), 1,
                                  or more for a shared GPU (ns/pod "" then) */
    double util;               /* the last value, 0..1 */
    double max_util;           /* highest value seen in the idle stretch */
    int64_t idle_since_ms;     /* first sample of the stretch under the threshold */
} gs_idle_gpu;

typedef struct gs_idle_tracker gs_idle_tracker;
/* threshold: a ratio (0.05 = 5 %); window_ms: how long a device must stay under it. */
gs_idle_tracker *gs_idle_new(double threshold, int64_t window_ms, gs_error *err);
void gs_idle_free(gs_idle_tracker *t);
/* One round of samples taken at now_ms (sample timestamps, when given, win). */
int gs_idle_observe(gs_idle_tracker *t, const gs_util_set *round, int64_t now_ms, gs_error *err);
/* The devices idle for at least the window, sorted by node, gpu, instance; empty when no
 * round came for longer than the window (at least 5 min): now_ms is only that staleness
 * check, stretches are measured between sample times. The array and its strings live in
 * the tracker until the next observe or free. */
size_t gs_idle_list(gs_idle_tracker *t, int64_t now_ms, const gs_idle_gpu **out);
/* A round that holds the maximum over a look-back (a Prometheus max_over_time query)
 * counts as that much idle time at once (0: rounds are instants). */
void gs_idle_set_lookback(gs_idle_tracker *t, int64_t lookback_ms);

/* ================================================================ the monitor
 *
 * gs_monitor keeps the GPU state of a cluster from the changes an informer makes to a
 * gs_live_store (gs_monitor_observer is the store's observer): per node its pool, GPUs
 * advertised and promised by its labels, taints and device-plugin state; per pod its
 * GPU request, phase, node, scheduling and preemption history. Counters and gauges are
 * kept as changes arrive; the reason a GPU pod is pending is explain's, computed once per
 * pending pod shape (namespace, requests, tolerations, selectors, priority) and again only
 * when something it depends on changed (docs/cli/monitor.md, "How it stays current").
 * Everything is served from memory: rendering never calls the API server.
 *
 * Threads: the observer runs on informer threads (it only queues); gs_monitor_update, the
 * renders and the notes may be called from any thread (a render waits for an update in
 * progress: docs/performance.md gives its duration at 100,000 pods). */

typedef struct gs_monitor gs_monitor;

typedef struct gs_monitor_opts {
    const char *const *taint_keys; /* GPU taint keys, NULL-terminated; NULL: {"nvidia.com/gpu"} */
    uint32_t max_problem_series;   /* per family of per-node/per-GPU series; 0: 2,000 */
    double idle_threshold;         /* ratio; 0: 0.05 (for the HELP text and /idle) */
    int64_t idle_window_ms;        /* 0: 30 min */
    int64_t start_ms;              /* when this monitor began (ms since the epoch): pods
                                      scheduled or preempted before it were counted by an
                                      earlier run and are not counted again; 0: now */
    const char *cluster_name;      /* objects' src.file in errors; NULL: "cluster" */
    gs_live_store *store;          /* the store being observed (borrowed): re-read to reclaim
                                      the memory of replaced objects; NULL: never */
    size_t reclaim_bytes;          /* re-read once replaced objects hold this much memory and
                                      more than the live ones (0: 64 MiB) */
    int64_t explain_interval_ms;   /* answers made stale by pods bound or released on GPU
                                      nodes are refreshed at most this often (0: 2 s); new
                                      shapes and node, quota, priority-class and PDB changes
                                      are explained at the next update */
} gs_monitor_opts;

gs_monitor *gs_monitor_new(const gs_monitor_opts *o, gs_error *err);
void gs_monitor_free(gs_monitor *m);

/* The store observer: gs_live_store_observe(store, gs_monitor_observer, monitor). Queues
 * the change (a copy of the pruned text and the few facts only the raw text has, such as
 * container restart counts); a put equal to what the monitor already holds is dropped. */
void gs_monitor_observer(void *monitor, gs_live_kind k, const char *key, size_t klen, const char *raw,
                         size_t raw_len, const char *text, size_t text_len);

/* Apply the queued changes and bring every metric and view up to date as of now_ms
 * (explain runs for the pending shapes that need it). 1 when something changed, 0 when
 * nothing was queued, -1 with err (the monitor keeps its last good state). */
int gs_monitor_update(gs_monitor *m, int64_t now_ms, gs_error *err);
/* Changes queued and not applied yet. */
size_t gs_monitor_backlog(gs_monitor *m);

/* Facts from outside the store, for the metrics of the monitor itself. */
void gs_monitor_note_informer(gs_monitor *m, gs_live_kind k, const gs_live_informer_stats *st);
void gs_monitor_note_leader(gs_monitor *m, bool leader);
typedef enum gs_monitor_event_result {
    GS_MON_EVENT_CREATED = 0,
    GS_MON_EVENT_PATCHED,
    GS_MON_EVENT_FAILED,
} gs_monitor_event_result;
void gs_monitor_note_event(gs_monitor *m, gs_monitor_event_result r);
typedef enum gs_monitor_util_source {
    GS_MON_UTIL_ENDPOINT = 0, /* dcgm-exporter scraped directly */
    GS_MON_UTIL_PROMETHEUS,   /* a Prometheus server's query API */
} gs_monitor_util_source;
void gs_monitor_note_dcgm_error(gs_monitor *m, gs_monitor_util_source s);
/* The devices idle for the window (gs_idle_list), copied: joined with the pods the
 * monitor knows at the next update (a device is reported when a pod holds it: by the
 * sample's pod mapping, or when every GPU of its node is allocated). */
int gs_monitor_set_idle(gs_monitor *m, const gs_idle_gpu *v, size_t n, gs_error *err);

typedef enum gs_monitor_view {
    GS_MON_METRICS = 0, /* Prometheus text format 0.0.4 */
    GS_MON_PENDING,     /* pending GPU pods: wait, reason, explain's smallest fix */
    GS_MON_HYGIENE,     /* untainted GPU nodes, non-GPU pods on GPU nodes, device plugin */
    GS_MON_IDLE,        /* GPUs allocated to pods and idle */
} gs_monitor_view;
typedef enum gs_monitor_format {
    GS_MON_TEXT = 0,    /* a plain table (metrics: the exposition) */
    GS_MON_JSON,
} gs_monitor_format;
/* Render a view as of now_ms into out (reset first). */
int gs_monitor_render(gs_monitor *m, gs_monitor_view v, gs_monitor_format f, int64_t now_ms,
                      gs_strbuf *out, gs_error *err);

/* One pending GPU pod as the detail view and the Event writer see it. */
typedef struct gs_monitor_pending {
    const char *ns, *name, *uid;
    const char *priority_class;  /* "" when none */
    const char *request_kind;    /* "whole", "mig", "share" */
    const char *request;         /* "2x nvidia.com/gpu", "1x nvidia.com/mig-1g.10gb" */
    const char *reason;          /* docs/metrics.md reason value */
    const char *why;             /* explain's cause, plain words */
    const char *fix;             /* explain's smallest fix, or "" */
    int64_t created_ms;
    int64_t reason_since_ms;     /* when the monitor first gave it this reason */
    const char *claim;           /* the claim explain's first claim finding names ("ns/name"),
                                    "" when none (docs/dra.md "monitor") */
} gs_monitor_pending;
/* Call fn for every pending GPU pod (as of the last update), oldest first; a non-zero
 * return stops the walk and is returned. The monitor's lock is held: fn must not call
 * into the monitor. */
typedef int (*gs_monitor_pending_fn)(void *ctx, const gs_monitor_pending *p);
int gs_monitor_pending_each(gs_monitor *m, gs_monitor_pending_fn fn, void *ctx);

/* Counts for tests and the bench. */
typedef struct gs_monitor_stats {
    uint64_t applied;            /* changes applied */
    uint64_t dropped_same;       /* puts equal to what was held */
    uint64_t explains;           /* explain runs (one per batch that needed one) */
    uint64_t shapes_explained;   /* pending shapes explained, over all runs */
    uint64_t rebuilds;           /* full re-reads of the parsed objects (compaction) */
    uint32_t nodes, gpu_nodes, pods, pending_gpu_pods, pending_shapes;
    size_t bytes;                /* memory held by the monitor (not the store) */
    double last_update_s;        /* duration of the last update that changed something */
} gs_monitor_stats;
void gs_monitor_stats_get(gs_monitor *m, gs_monitor_stats *out);

#ifdef __cplusplus
}
#endif
#endif
