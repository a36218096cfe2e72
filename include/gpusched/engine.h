/*
 * engine.h - the scheduling engine: cluster state, queue, filters, scores, preemption,
 * admission (priority, quota, ExtendedResourceToleration), decisions and explanations.
 *
 * One engine serves every face (schedule, explain, simulate, check, serve), so what CI
 * checks, what the simulator predicts and what the service does cannot disagree.
 *
 * Life cycle:
 *   gs_config cfg; gs_config_defaults(&cfg);           // or gs_config_policy(&cfg, "binpack")
 *   gs_cluster *c = gs_cluster_new(&snapshot, &cfg, &err);  // bound pods occupy nodes
 *   gs_schedule_run(c, &err);                           // places every unbound pod
 *   for (i < gs_cluster_ndecisions(c)) gs_cluster_decision(c, i) ...
 *   gs_cluster_free(c);
 * The cluster borrows the snapshot (it must outlive the cluster) and owns everything else.
 *
 * Scheduler names: every pod is scheduled whatever its spec.schedulerName; the fractional
 * conventions' own schedulers (HAMi, KAI) are emulated by the GPU device layer.
 *
 * Determinism: nodes are ordered by name internally, so the input order of nodes never
 * changes a decision; ties between equal best scores are broken by a seeded RNG
 * (cfg.seed) over the tied nodes in name order. Same input + same seed = same bytes out.
 */
#ifndef GPUSCHED_ENGINE_H
#define GPUSCHED_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "gpusched/dra.h"
#include "gpusched/error.h"
#include "gpusched/gpu.h"
#include "gpusched/kube.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- configuration */
typedef enum gs_strategy {
    GS_STRATEGY_LEAST_ALLOCATED = 0,
    GS_STRATEGY_MOST_ALLOCATED,
    GS_STRATEGY_REQUESTED_TO_CAPACITY_RATIO,
} gs_strategy;

#define GS_MAX_SCORE_RESOURCES 8
#define GS_MAX_SHAPE_POINTS 8

typedef struct gs_score_resource {
    const char *name; /* "cpu", "memory", "nvidia.com/gpu", ... (static or caller-owned) */
    int32_t weight;   /* 1..100 */
} gs_score_resource;

typedef struct gs_shape_point {
    int32_t utilization; /* 0..100 */
    int32_t score;       /* 0..10 */
} gs_shape_point;

typedef struct gs_config {
    const char *policy;        /* name of the policy that filled this config */
    gs_strategy strategy;      /* NodeResourcesFit scoring strategy */
    gs_score_resource resources[GS_MAX_SCORE_RESOURCES];
    uint32_t nresources;
    gs_shape_point shape[GS_MAX_SHAPE_POINTS]; /* RequestedToCapacityRatio */
    uint32_t nshape;
    /* plugin weights (0 disables the plugin) */
    int32_t w_taint;           /* TaintToleration, 3 */
    int32_t w_affinity;        /* NodeAffinity, 2 */
    int32_t w_fit;             /* NodeResourcesFit, 1 */
    int32_t w_balanced;        /* NodeResourcesBalancedAllocation, 1 */
    int32_t w_gpu_binpack;     /* GPUShareBinpack (gpusched): pack GPU shares, 2 */
    bool preemption;           /* DefaultPreemption on (true) */
    bool lt_gt_gate;           /* TaintTolerationComparisonOperators alpha gate (false) */
    bool extended_resource_toleration; /* ExtendedResourceToleration admission (false) */
    bool quota;                /* ResourceQuota admission for new pods (true) */
    int32_t percentage_of_nodes_to_score; /* 0 = all nodes (default); 1..100 = upstream
                                             numFeasibleNodesToFind with that percentage;
                                             -1 = upstream adaptive default */
    uint64_t seed;             /* tie-break RNG seed (0) */
    bool no_shape_cache;       /* evaluate every node from scratch for every pod and
                                  dry-run every preemption candidate without the resource
                                  bound (false); results are identical, only slower: the
                                  reference for testing */
    bool evaluate_only;        /* judge every unbound pod against the bound pods alone: a
                                  pod that fits is decided GS_OUT_SCHEDULED with its node
                                  but does not occupy it, and no preemption is carried out
                                  (explain still dry-runs one); the monitor's "why is each
                                  pending pod pending now" (false) */
} gs_config;

void gs_config_defaults(gs_config *cfg); /* the "default" policy: kube-scheduler defaults */
/* Fill cfg for a named policy: "default", "binpack", "spread", "rtcr".
 * GS_ERR_NOTFOUND with the list of names otherwise. */
int gs_config_policy(gs_config *cfg, const char *name, gs_error *err);
/* Names of the engine policies, NULL-terminated, with one-line descriptions. */
typedef struct gs_policy_info {
    const char *name;
    const char *summary;
} gs_policy_info;
const gs_policy_info *gs_policies(uint32_t *count);

/* ---------------------------------------------------------------- decisions */
typedef enum gs_outcome {
    GS_OUT_BOUND = 0,        /* was already bound in the input (occupies its node) */
    GS_OUT_SCHEDULED,        /* placed by this run */
    GS_OUT_UNSCHEDULABLE,    /* no feasible node (reason in message) */
    GS_OUT_REJECTED,         /* refused at admission (quota, unknown PriorityClass) */
    GS_OUT_PREEMPTED,        /* evicted as a victim of a higher-priority pod */
    GS_OUT_SKIPPED,          /* terminal phase, or bound to a node not in the input */
} gs_outcome;

const char *gs_outcome_name(gs_outcome o); /* "bound", "scheduled", ... */

typedef struct gs_reason_count {
    const char *reason; /* "Insufficient nvidia.com/gpu" (owned by the cluster) */
    uint32_t count;
} gs_reason_count;

typedef struct gs_decision {
    uint32_t pod;              /* index into snapshot->pods */
    gs_outcome outcome;
    int32_t node;              /* index into snapshot->nodes, -1 when none */
    int32_t priority;          /* resolved priority */
    int64_t score;             /* total weighted score of the chosen node */
    uint32_t feasible;         /* feasible nodes found for it */
    gs_gpu_request gpu;        /* canonical GPU request */
    gs_gpu_assign assign;      /* devices taken (when node >= 0) */
    const uint32_t *victims;   /* pods (snapshot indexes) preempted for it */
    uint32_t nvictims;
    uint32_t preempted_by;     /* for GS_OUT_PREEMPTED: the preemptor's pod index */
    const char *message;       /* upstream-style failure or rejection message, or NULL */
    const gs_reason_count *reasons; /* filter failure counts (UNSCHEDULABLE), sorted as upstream */
    uint32_t nreasons;
    uint32_t order;            /* position in the scheduling queue (0-based), or UINT32_MAX */
} gs_decision;

/* ---------------------------------------------------------------- cluster */
typedef struct gs_cluster gs_cluster;

gs_cluster *gs_cluster_new(const gs_snapshot *snap, const gs_config *cfg, gs_error *err);
void gs_cluster_free(gs_cluster *c);
/* Admission + scheduling of every unbound pod in queue order. */
int gs_schedule_run(gs_cluster *c, gs_error *err);

uint32_t gs_cluster_ndecisions(const gs_cluster *c);
/* Decisions in the order things happened: bound pods first (input order), then the
 * queue order. */
const gs_decision *gs_cluster_decision(const gs_cluster *c, uint32_t i);
/* Decision for a pod (snapshot index), or NULL. */
const gs_decision *gs_cluster_decision_for_pod(const gs_cluster *c, uint32_t pod);
const gs_snapshot *gs_cluster_snapshot(const gs_cluster *c);
const gs_config *gs_cluster_config(const gs_cluster *c);
/* Warnings collected while building (e.g. bound pods whose GPUs could not be
 * reconstructed). Strings owned by the cluster. */
uint32_t gs_cluster_nwarnings(const gs_cluster *c);
const char *gs_cluster_warning(const gs_cluster *c, uint32_t i);

/* A pod's resource claims (spec.resourceClaims[i]) as the run leaves them: the claim it
 * names (NULL when none resolved: not found yet, or no claim needed), whether that claim
 * was made here from a template (the resourceclaim controller had not), whether it is
 * allocated, and its allocation results (up to cap written to res; the count returned in
 * nresults may be larger). */
typedef struct gs_claim_view {
    const char *name;
    const char *claim_namespace, *claim_name;
    bool generated;
    bool allocated;
    uint32_t nresults;
} gs_claim_view;
uint32_t gs_cluster_pod_nclaims(const gs_cluster *c, uint32_t pod);
void gs_cluster_pod_claim(const gs_cluster *c, uint32_t pod, uint32_t i, gs_claim_view *v,
                          gs_dra_result_view *res, uint32_t cap);

/* Memory held by the cluster state (not the snapshot): bytes in total and the fixed
 * per-node and per-pod parts (arrays of structs; the shape cache is counted in total). */
typedef struct gs_cluster_mem {
    size_t total;
    size_t per_node;
    size_t per_pod;
    size_t shape_cache;
} gs_cluster_mem;
void gs_cluster_memory(const gs_cluster *c, gs_cluster_mem *out);

/* Node view for reports. */
typedef struct gs_node_view {
    uint32_t node;            /* snapshot index */
    const gs_node_gpus *gpus;
    int64_t cpu_alloc, cpu_used;   /* milli */
    int64_t mem_alloc, mem_used;   /* bytes */
    uint32_t pods, max_pods;
    uint32_t gpu_pods, non_gpu_pods; /* pods on it that do / do not request GPUs */
} gs_node_view;
void gs_cluster_node_view(const gs_cluster *c, uint32_t node, gs_node_view *out);

/* ---------------------------------------------------------------- explain */
typedef enum gs_fix_kind {
    GS_FIX_TOLERATE_TAINT = 0, /* add a toleration for taint (key, value, effect) */
    GS_FIX_RAISE_QUOTA,        /* raise quota `object` key `resource` by `amount` */
    GS_FIX_PREEMPT,            /* preempt the listed pods on node (or let it preempt) */
    GS_FIX_MODEL,              /* no node has the wanted GPU model; `detail` lists offered */
    GS_FIX_MIG_PROFILE,        /* no node offers the MIG profile; `detail` lists offered */
    GS_FIX_FRAGMENTATION,      /* enough free GPUs in the cluster, not on one node */
    GS_FIX_ADD_CAPACITY,       /* not enough free GPUs anywhere: add `amount` GPUs */
    GS_FIX_AFFINITY,           /* no node matches the pod's node selector/affinity */
    GS_FIX_PRIORITY_CLASS,     /* unknown PriorityClass */
    GS_FIX_OTHER,              /* cpu/memory/pods or anything else, see `text` */
    GS_FIX_MOVE_NON_GPU_PODS,  /* non-GPU pods hold the cpu/memory of a GPU node it needs */
    GS_FIX_CLAIM,              /* a resource claim cannot be allocated: `amount` is the
                                  gs_dra_why_kind, `object` the claim ("ns/name") */
} gs_fix_kind;

typedef struct gs_fix {
    gs_fix_kind kind;
    const char *text;   /* one plain-words sentence: "tolerate taint nvidia.com/gpu=true:NoSchedule (3 nodes would fit)" */
    const char *object; /* quota name, taint key, node name... may be NULL */
    int64_t amount;     /* GPUs / quota units, when meaningful */
    const char *cause;  /* the cause this fix removes, in plain words */
} gs_fix;

typedef struct gs_explain_pod {
    uint32_t pod;        /* snapshot index */
    const char *why;     /* plain-words summary: the cause of the first (smallest) fix */
    const char *message; /* upstream-style message */
    gs_fix *fixes;       /* smallest change first */
    uint32_t nfixes;
} gs_explain_pod;

typedef struct gs_hygiene_node {
    uint32_t node;
    bool untainted_gpu_node;     /* GPU node without a NoSchedule GPU taint */
    bool device_plugin_down;     /* labelled GPU node advertising no GPUs */
    const char *problem;         /* another finding with its fix (MIG-INVALID layout), or NULL */
    const uint32_t *non_gpu_pods; /* non-GPU pods sitting on it (untainted case) */
    uint32_t nnon_gpu_pods;
} gs_hygiene_node;

typedef struct gs_pool_usage {
    const char *pool;        /* node pool label value, or the GPU model */
    uint32_t nodes;
    uint32_t gpus;           /* physical GPUs */
    double gpus_allocated;   /* whole + fractional shares, in GPUs */
    uint32_t mig_instances, mig_used;
} gs_pool_usage;

typedef struct gs_explain {
    gs_explain_pod *pods;        /* pending GPU pods */
    uint32_t npods;
    gs_hygiene_node *hygiene;    /* problem GPU nodes */
    uint32_t nhygiene;
    gs_pool_usage *pools;
    uint32_t npools;
    uint32_t gpu_nodes, gpus_total;
    double gpus_allocated;
} gs_explain;

/* The pool a GPU node belongs to, as explain and the monitor report it: the first of the
 * node-pool labels cloud.google.com/gke-nodepool, eks.amazonaws.com/nodegroup,
 * karpenter.sh/nodepool, kubernetes.azure.com/agentpool, agentpool; else the GPU model
 * (`model`, e.g. the inventory's); else "(unknown model)". */
const char *gs_node_pool(const gs_labels *labels, const char *model);

/* Analyse the cluster after gs_schedule_run(): for every GPU pod left pending or rejected,
 * why and the smallest fixes; then GPU hygiene and per-pool allocation. taint_keys:
 * NULL-terminated list of the organisation's GPU taint keys (NULL = {"nvidia.com/gpu"}).
 * The result lives in the cluster and dies with it. */
int gs_explain_run(gs_cluster *c, const char *const *taint_keys, const gs_explain **out,
                   gs_error *err);

#ifdef __cplusplus
}
#endif
#endif
