/*
 * exporter.h - the agent's /metrics in dcgm-exporter's names, labels and units (Prometheus
 * text format 0.0.4), rendered from NVML samples (nvml.h) with the pods that hold each device
 * (the kubelet's PodResources List), plus the agent's allocated-but-idle gauge.
 *
 * The output parses with the monitor's reader (gs_util_parse_promtext, monitor.h): one
 * reader for dcgm-exporter's expositions and ours. Values NVML does not give (-1 in a
 * gs_nvml_sample) are omitted, never written as DCGM blank sentinels.
 *
 * Pure rendering into a gs_strbuf: no I/O, no allocation besides the buffer's growth.
 * docs/agent.md "Metrics (DCGM-compatible)" and docs/metrics.md "Agent" list the series.
 */
#ifndef GPUSCHED_EXPORTER_H
#define GPUSCHED_EXPORTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/error.h"
#include "gpusched/nvml.h"
#include "gpusched/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the host label is spelled: "hostname" (dcgm-exporter since its 2026-05 rename, the
 * default), "Hostname" (before it), or left out (dcgm-exporter --no-hostname). */
typedef enum gs_exporter_host {
    GS_EXPORTER_HOST_LOWER = 0,
    GS_EXPORTER_HOST_UPPER,
    GS_EXPORTER_HOST_NONE,
} gs_exporter_host;

/* One device held by one container, as the kubelet's PodResources List reports it. */
typedef struct gs_exporter_holder {
    const char *resource;  /* "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", ... (not used to
                              resolve: the device id is) */
    const char *device_id; /* as advertised: "GPU-...", "MIG-...", "<id>::<k>" (replica k),
                              "0" (GPU index), "0:1" (GPU 0, MIG device index 1) */
    const char *ns, *pod, *container;
} gs_exporter_holder;

/* Per-GPU state the caller keeps (health and idle tracking), NULL: none. */
typedef struct gs_exporter_gpu_state {
    int64_t last_xid;             /* the last XID seen; 0: none yet; -1: unknown (omitted) */
    const char *xid_msg;          /* its text (err_msg); NULL: "No Error" for 0, else "" */
    int64_t idle_seconds;         /* how long utilization has stayed under the caller's
                                     threshold; -1 unknown (omitted) */
    const int64_t *mig_idle_seconds; /* the same per MIG device (n_mig entries), or NULL */
} gs_exporter_gpu_state;

typedef struct gs_exporter_opts {
    const char *hostname;        /* node name for the host label ("" / NULL: label omitted) */
    gs_exporter_host host_label;
    bool model_dashes;           /* modelName blanks as '-' (dcgm-exporter option) */
} gs_exporter_opts;

typedef struct gs_exporter_input {
    const gs_nvml_inventory *inv;
    const gs_nvml_samples *samples;       /* may be NULL: no sensor series */
    const gs_exporter_gpu_state *state;   /* inv->n_gpus entries, or NULL */
    const gs_exporter_holder *holders;    /* may be NULL */
    size_t nholders;
} gs_exporter_input;

/* The Content-Type of the exposition. */
#define GS_EXPORTER_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Append the exposition to sb. Families in a fixed order, each with # HELP and # TYPE
 * (families with no series are left out); per family the series of every GPU, each
 * followed by its MIG devices'. A device held by one container carries namespace/pod/
 * container; held by several (replicas), one series per holder with vgpu="<k>" (the
 * replica index, as dcgm-exporter's --kubernetes-virtual-gpus mode; the value is the
 * device's). Returns 0, or -1 with err (GS_ERR_NOMEM when the buffer could not grow,
 * GS_ERR_INVALID when samples do not match the inventory). */
int gs_exporter_render(const gs_exporter_input *in, const gs_exporter_opts *o, gs_strbuf *sb,
                       gs_error *err);

/* Resolve an advertised device id against the inventory: *gpu the GPU's position in
 * inv->gpus, *mig the MIG device's position in its mig[] or -1, *replica the "::k" suffix
 * or -1. false when the id names no device of the inventory. */
bool gs_exporter_resolve(const gs_nvml_inventory *inv, const char *device_id, size_t *gpu,
                         long *mig, long *replica);

/* Append a Prometheus label value (between the quotes): '\\', '"' and newline escaped as the
 * text format says; other control bytes as ' ' and bytes that start no well-formed UTF-8
 * sequence as U+FFFD, so the line always parses. */
void gs_exporter_label_value(gs_strbuf *sb, const char *s);

#ifdef __cplusplus
}
#endif
#endif
