/*
 * sim_int.h - private interface of the FGD-method simulator (lib/sim): the compact node
 * and pod views the hot loop works on, the typical-type table with per-model admission,
 * the fragmentation core shared by the public gs_frag_* functions and the runs, the
 * workload layout, and the policy ops table.
 *
 * Everything here is read-only once a workload is built, except gs_sim_node values,
 * which belong to one run.
 */
#ifndef GPUSCHED_SIM_INT_H
#define GPUSCHED_SIM_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "gpusched/sim.h"

/* Normalisers of DotProd, BestFit and GpuClustering: the largest node, constant. */
#define GS_SIM_MAX_CPU 128000.0
#define GS_SIM_MAX_GPU 8000.0
#define GS_SIM_MILLI 1000
#define GS_SIM_MAX_PODS_PER_NODE 1001

/* ---------------------------------------------------------------- compact views */

/* One node during a run. Kept small: the filter scans every node for every pod. */
typedef struct gs_sim_node {
    int64_t cpu_left;    /* milli: allocatable - sum of requests */
    int64_t mem_left;    /* MiB */
    int64_t cpu_alloc;   /* milli */
    int64_t cpu_nz_used; /* sum of non-zero cpu requests (Kubernetes strategies) */
    double frag;         /* F_n of the current state */
    uint32_t gl;         /* sum of gpu_left */
    uint32_t tags;       /* GpuClustering: bit 0 = a sharing pod, bit k = a k-GPU pod */
    uint32_t index;      /* node index in name order */
    uint16_t left[GS_SIM_MAX_GPUS];
    uint16_t max_left;
    uint16_t model;      /* model id, 0 = "" */
    uint16_t npods;
    uint8_t ngpus;
    uint8_t nfree;       /* GPUs with left == 1000 */
} gs_sim_node;

/* One pod's resource view. */
typedef struct gs_sim_pod {
    int64_t cpu;     /* real request (filter) */
    int64_t cpu_nz;  /* non-zero request (scores, key) */
    int64_t mem;     /* MiB */
    uint16_t milli;  /* per-GPU share, clamped; 0 for CPU-only pods */
    uint16_t count;  /* GPUs; 0 for CPU-only pods */
    uint32_t key;    /* resource-key id */
    uint32_t spec;   /* gpu_spec id, 0 = "" */
} gs_sim_pod;

static inline bool gs_sim_pod_sharing(const gs_sim_pod *p)
{
    return p->count == 1 && p->milli < GS_SIM_MILLI && p->milli > 0;
}

/* ---------------------------------------------------------------- typical types */

/* Structure-of-arrays copy of a target for the hot loop, plus admission per model:
 * admit[model * n + t] is 1 when type t's GPU type admits the model (CPU-only types: 1). */
typedef struct gs_ftypes {
    uint32_t n;
    const int64_t *cpu;
    const int32_t *milli;
    const int32_t *count;
    const double *weight;
    const uint8_t *admit;
    uint32_t nmodels;
} gs_ftypes;

/* The fragmentation core: category amounts of one node state, accumulated exactly as the
 * reference (per type in target order: data[cat] += weight * amount; a satisfied type
 * splits its amount between q2 (GPUs with left < milli) and q3). */
static inline void gs_frag_eval_core(uint32_t ntypes, const int64_t *cpu, const int32_t *milli,
                                     const int32_t *count, const double *weight,
                                     const uint8_t *admit_row, int64_t cpu_left,
                                     const uint16_t *left, uint32_t ngpus,
                                     double data[GS_FRAG_NCAT])
{
    int64_t gl = 0;
    for (uint32_t i = 0; i < ngpus; i++)
        gl += left[i];
    for (int c = 0; c < GS_FRAG_NCAT; c++)
        data[c] = 0.0;
    for (uint32_t t = 0; t < ntypes; t++) {
        double freq = weight[t];
        int32_t m = milli[t];
        int cat;
        int64_t frag_milli = 0;
        bool cpu_ok = cpu_left >= cpu[t];
        if (m == 0) {
            cat = cpu_ok ? GS_FRAG_XL_SATISFIED : GS_FRAG_XR_LACK_CPU;
        } else if (!admit_row[t]) {
            cat = GS_FRAG_NO_ACCESS;
        } else {
            int32_t fit = 0;
            for (uint32_t i = 0; i < ngpus; i++) {
                if (left[i] >= m)
                    fit++;
                else
                    frag_milli += left[i];
            }
            /* CanNodeHostPodOnGpuMemory: true once `count` fitting GPUs were seen */
            bool gpu_ok = count[t] <= 0 ? fit >= 1 : fit >= count[t];
            if (gpu_ok)
                cat = cpu_ok ? GS_FRAG_Q3_SATISFIED : GS_FRAG_Q4_LACK_CPU;
            else
                cat = cpu_ok ? GS_FRAG_Q2_LACK_GPU : GS_FRAG_Q1_LACK_BOTH;
        }
        if (cat == GS_FRAG_Q3_SATISFIED) {
            data[GS_FRAG_Q2_LACK_GPU] += freq * (double)frag_milli;
            data[GS_FRAG_Q3_SATISFIED] += freq * (double)(gl - frag_milli);
        } else {
            data[cat] += freq * (double)gl;
        }
    }
}

/* Sum of every category except q3, in index order. */
static inline double gs_frag_sum_except_q3(const double data[GS_FRAG_NCAT])
{
    double out = 0.0;
    for (int c = 0; c < GS_FRAG_NCAT; c++)
        if (c != GS_FRAG_Q3_SATISFIED)
            out += data[c];
    return out;
}

static inline void gs_ftypes_eval(const gs_ftypes *ft, uint32_t model, int64_t cpu_left,
                                  const uint16_t *left, uint32_t ngpus, double data[GS_FRAG_NCAT])
{
    gs_frag_eval_core(ft->n, ft->cpu, ft->milli, ft->count, ft->weight,
                      ft->admit + (size_t)model * ft->n, cpu_left, left, ngpus, data);
}

static inline double gs_ftypes_frag(const gs_ftypes *ft, uint32_t model, int64_t cpu_left,
                                    const uint16_t *left, uint32_t ngpus)
{
    double data[GS_FRAG_NCAT];
    gs_ftypes_eval(ft, model, cpu_left, left, ngpus, data);
    return gs_frag_sum_except_q3(data);
}

/* Build the hot-loop table of a target for a list of models (models[0] must be "").
 * Arrays are allocated in `a`. */
int gs_ftypes_build(gs_ftypes *ft, const gs_frag_target *t, const char *const *models,
                    uint32_t nmodels, gs_arena *a, gs_error *err);

/* ---------------------------------------------------------------- workload */

struct gs_fgd_workload {
    gs_arena arena;
    uint32_t nnodes;
    gs_sim_node *nodes;       /* initial state, name order, frag filled */
    const char **node_names;
    int64_t cpu_total, mem_total;
    uint32_t gpus_total;
    uint32_t npods;
    gs_sim_pod *pods;         /* name order */
    const char **pod_names;
    const char **specs;       /* spec id -> string; specs[0] = "" */
    uint32_t nspecs;
    const char **models;      /* model id -> string; models[0] = "" */
    uint32_t nmodels;
    const uint8_t *spec_admit;/* [spec * nmodels + model] */
    uint32_t nkeys;
    int64_t gpu_request;      /* sum of count * milli */
    gs_frag_target target;
    gs_ftypes ft;
    double empty_cats[GS_FRAG_NCAT];
    double empty_frag;
};

static inline bool gs_sim_admits(const gs_fgd_workload *w, uint32_t spec, uint32_t model)
{
    return w->spec_admit[(size_t)spec * w->nmodels + model] != 0;
}

/* ---------------------------------------------------------------- policies */

/* Per-run context handed to the policy functions. */
typedef struct gs_sim_ctx {
    const gs_fgd_workload *w;
    gs_rng *rng;
    const gs_sim_node *chosen; /* Random: the node its pre-score step drew */
} gs_sim_ctx;

/* One policy. IN/OUT as marked.
 *  score     (IN node, pod; OUT *gpu_hint): the node's integer score, higher is better.
 *            gpu_hint receives the GPU the policy's own selection would take for a sharing
 *            pod (FGD), else 0. Only called for feasible nodes.
 *  pick_gpus (IN node, pod, the hint of the winning score; OUT out[0..count)): the GPU
 *            indexes to take on the chosen node; may draw from ctx->rng (Random).
 *  prescore  (optional; IN the feasible nodes in tie-break order, n >= 2): runs once per
 *            pod before scoring (Random's draw).
 *  cache_scores: the score depends only on (node state, pod resource key), so the runner
 *            may keep it per node until the node changes. */
typedef struct gs_sim_policy {
    const char *name;
    const char *label;
    const char *summary;
    int (*score)(const gs_sim_ctx *c, const gs_sim_node *n, const gs_sim_pod *p,
                 uint8_t *gpu_hint);
    void (*pick_gpus)(gs_sim_ctx *c, const gs_sim_node *n, const gs_sim_pod *p, uint8_t hint,
                      uint8_t *out);
    void (*prescore)(gs_sim_ctx *c, const gs_sim_node *const *feasible, uint32_t n);
    bool cache_scores;
} gs_sim_policy;

const gs_sim_policy *gs_sim_policy_table(uint32_t *count);

/* GPU choices shared by the policies and the runner. */
/* The first `count` GPUs with left >= milli in ascending order of left (stable by index). */
void gs_sim_pick_ascending(const gs_sim_node *n, const gs_sim_pod *p, uint8_t *out);
/* "best": sharing pods take the tightest GPU that fits (ties: lowest index); other pods
 * as gs_sim_pick_ascending (for whole GPUs: the lowest-index free ones). */
void gs_sim_pick_best(const gs_sim_node *n, const gs_sim_pod *p, uint8_t *out);

#endif
