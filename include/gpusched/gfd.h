/*
 * gfd.h - node labels in gpu-feature-discovery's names and formats, computed from the NVML
 * inventory (nvml.h), and the three ways the agent publishes them: an NFD local feature file,
 * an NFD NodeFeature object, or the Node's own labels by server-side apply.
 *
 * Pure functions: gs_gfd_labels() reads only the inventory and the configuration; the only
 * I/O is gs_gfd_write_file() (temporary file, fsync, rename). The labels are exactly what the
 * engine's node inventory (gs_node_gpus_build, gpu.h) reads, so the node side and the
 * scheduler side agree about a node's devices (tests/unit/test_gfd.c checks it).
 *
 * docs/agent.md, "Labels (GFD-compatible)", lists every label, its source and where GFD's
 * behaviour was uncertain. The library never prints and never exits.
 */
#ifndef GPUSCHED_GFD_H
#define GPUSCHED_GFD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/error.h"
#include "gpusched/gpu.h"
#include "gpusched/nvml.h"
#include "gpusched/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The field manager of the agent's server-side applies (?fieldManager=gpusched-agent). */
#define GS_GFD_FIELD_MANAGER "gpusched-agent"
/* The NFD NodeFeature API and the name prefix of the agent's object. */
#define GS_GFD_NODEFEATURE_API "nfd.k8s-sigs.io/v1alpha1"
#define GS_GFD_NODEFEATURE_PREFIX "gpusched-features-for-"
#define GS_GFD_NODE_NAME_LABEL "nfd.node.kubernetes.io/node-name"

typedef struct gs_gfd_config {
    gs_mig_strategy mig_strategy; /* GS_MIG_NONE, _SINGLE, _MIXED (the device plugin's) */
    gs_gpu_sharing sharing;       /* GS_SHARING_NONE, _TIME_SLICING or _MPS (not _VGPU) */
    unsigned replicas;            /* replicas of nvidia.com/gpu (>= 1; 1 with no sharing) */
    unsigned mig_replicas;        /* time-slicing replicas of each nvidia.com/mig-<p> (mixed);
                                     0: the same as replicas; MPS never shares MIG devices */
    bool rename_by_default;       /* shared resources renamed <name>.shared: no -SHARED suffix */
    const char *machine;          /* DMI product name (/sys/class/dmi/id/product_name) or NULL:
                                     no nvidia.com/gpu.machine label */
    bool with_timestamp;          /* add nvidia.com/gfd.timestamp */
    int64_t timestamp;            /* its value, Unix seconds */
} gs_gfd_config;

typedef struct gs_gfd_label {
    const char *key;   /* "nvidia.com/gpu.product" */
    const char *value; /* "NVIDIA-H100-80GB-HBM3" (may be "") */
} gs_gfd_label;

/* Labels sorted by key (bytewise), keys unique; strings owned by the arena. */
typedef struct gs_gfd_labels {
    gs_gfd_label *v;
    size_t n, cap;
    gs_arena arena;
} gs_gfd_labels;

void gs_gfd_labels_init(gs_gfd_labels *l);
void gs_gfd_labels_free(gs_gfd_labels *l);
/* The value of a label or NULL. */
const char *gs_gfd_labels_get(const gs_gfd_labels *l, const char *key);

/* GFD's product sanitising: characters outside [A-Za-z0-9-_. ] dropped, then runs of
 * blanks joined by single '-' ("NVIDIA H100 80GB HBM3" -> "NVIDIA-H100-80GB-HBM3"). */
void gs_gfd_sanitise(const char *in, char *out, size_t cap);
/* GFD's family of a compute capability: "ampere", "ada-lovelace", "hopper", "blackwell",
 * "rubin", "turing", "volta", ..., "undefined". */
const char *gs_gfd_family(int cc_major, int cc_minor);

/* Compute the labels of a node with inventory `inv` under `cfg` into out (reset first;
 * initialised by the caller). An inventory without GPUs gives no labels (as GFD). Returns
 * 0, or -1 with err: GS_ERR_USAGE for a bad configuration (replicas 0, sharing vGPU, replicas
 * above 1 without sharing), GS_ERR_NOMEM. */
int gs_gfd_labels_compute(const gs_nvml_inventory *inv, const gs_gfd_config *cfg,
                          gs_gfd_labels *out, gs_error *err);
#define gs_gfd_labels(inv, cfg, out, err) gs_gfd_labels_compute((inv), (cfg), (out), (err))

/* NFD's local feature file (features.d): one "key=value" line per label, in key order. */
void gs_gfd_features_file(const gs_gfd_labels *l, gs_strbuf *sb);
/* Write that text to path atomically (gs_write_file_atomic: temporary name, fsync, rename).
 * 0, or -1 with err (GS_ERR_IO, GS_ERR_NOMEM). */
int gs_gfd_write_file(const char *path, const gs_gfd_labels *l, gs_error *err);

/* An NFD NodeFeature object (nfd.k8s-sigs.io/v1alpha1) named gpusched-features-for-<node>
 * in namespace ns, labelled nfd.node.kubernetes.io/node-name=<node>, with spec.labels = the
 * labels: the body of a server-side apply (PATCH application/apply-patch+yaml, JSON is YAML)
 * with fieldManager gpusched-agent. */
void gs_gfd_nodefeature_json(const gs_gfd_labels *l, const char *node, const char *ns,
                             gs_strbuf *sb);
/* A Node fragment {apiVersion, kind, metadata: {name, labels}} for a server-side apply of
 * the labels to the Node itself with fieldManager gpusched-agent: labels this manager
 * applied before and no longer sends are removed by the API server. */
void gs_gfd_node_apply_json(const gs_gfd_labels *l, const char *node, gs_strbuf *sb);

#ifdef __cplusplus
}
#endif
#endif
