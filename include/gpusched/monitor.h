/*
 * monitor.h - `gpusched monitor` (issue 12): the live view of GPU pods, pools and devices.
 *
 * Sections: utilization input (dcgm-exporter scrapes and Prometheus query answers read into
 * GPU utilization samples). Other parts of the monitor add their own sections.
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

#ifdef __cplusplus
}
#endif
#endif
