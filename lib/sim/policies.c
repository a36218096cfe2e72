/*
 * policies.c - the node-scoring policies of the FGD-method experiments, one ops-table
 * entry each ({name, score, pick_gpus}; fgd-method.md section c), plus the engine's
 * Kubernetes NodeResourcesFit strategies on the openb node model.
 *
 * Every score is the reference's integer (truncated toward zero) and only feasible nodes
 * are scored. The runner keeps the maximum with the first node in the run's fixed random
 * tie-break order, so "ties go to the smallest random prefix" needs nothing here.
 *
 * Float expressions are written in the reference's evaluation order (the truncation to an
 * integer makes the last ulp visible at exact integer boundaries).
 */
#include <math.h>
#include <stdio.h>

#include "sim_int.h"

/* ---------------------------------------------------------------- GPU selection */

void gs_sim_pick_ascending(const gs_sim_node *n, const gs_sim_pod *p, uint8_t *out)
{
    /* stable ascending order of left: insertion sort of the indexes */
    uint8_t idx[GS_SIM_MAX_GPUS];
    uint32_t ng = n->ngpus;
    for (uint32_t i = 0; i < ng; i++) {
        uint32_t j = i;
        while (j > 0 && n->left[idx[j - 1]] > n->left[i]) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = (uint8_t)i;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < ng && k < p->count; i++)
        if (n->left[idx[i]] >= p->milli)
            out[k++] = idx[i];
}

void gs_sim_pick_best(const gs_sim_node *n, const gs_sim_pod *p, uint8_t *out)
{
    if (gs_sim_pod_sharing(p)) {
        int best = -1;
        for (uint32_t i = 0; i < n->ngpus; i++)
            if (n->left[i] >= p->milli && (best < 0 || n->left[i] < n->left[best]))
                best = (int)i;
        out[0] = (uint8_t)(best < 0 ? 0 : best);
        return;
    }
    gs_sim_pick_ascending(n, p, out);
}

static void pick_best(gs_sim_ctx *c, const gs_sim_node *n, const gs_sim_pod *p, uint8_t hint,
                      uint8_t *out)
{
    (void)c;
    (void)hint;
    gs_sim_pick_best(n, p, out);
}

/* ---------------------------------------------------------------- Random */

static void random_prescore(gs_sim_ctx *c, const gs_sim_node *const *feasible, uint32_t n)
{
    c->chosen = feasible[gs_rng_below(c->rng, n)];
}

static int random_score(const gs_sim_ctx *c, const gs_sim_node *n, const gs_sim_pod *p,
                        uint8_t *hint)
{
    (void)p;
    *hint = 0;
    return n == c->chosen ? 100 : 0;
}

/* Sharing pods: uniform among the GPUs that fit; others as "best". */
static void random_pick(gs_sim_ctx *c, const gs_sim_node *n, const gs_sim_pod *p, uint8_t hint,
                        uint8_t *out)
{
    (void)hint;
    if (!gs_sim_pod_sharing(p)) {
        gs_sim_pick_ascending(n, p, out);
        return;
    }
    uint32_t fits = 0;
    for (uint32_t i = 0; i < n->ngpus; i++)
        if (n->left[i] >= p->milli)
            fits++;
    uint64_t draw = fits > 1 ? gs_rng_below(c->rng, fits) : 0;
    for (uint32_t i = 0; i < n->ngpus; i++) {
        if (n->left[i] < p->milli)
            continue;
        if (draw == 0) {
            out[0] = (uint8_t)i;
            return;
        }
        draw--;
    }
    out[0] = 0;
}

/* ---------------------------------------------------------------- DotProd */

/* Merged GPU dimension, normalised by the largest node:
 * int(100 * (1 - (cL/MaxCPU * cP/MaxCPU + gL/MaxGPU * gP/MaxGPU) / 2)). */
static int dotprod_score(const gs_sim_ctx *c, const gs_sim_node *n, const gs_sim_pod *p,
                         uint8_t *hint)
{
    (void)c;
    *hint = 0;
    if (n->cpu_left < p->cpu_nz)
        return 0;
    double node_cpu = (double)n->cpu_left / GS_SIM_MAX_CPU;
    double node_gpu = (double)n->gl / GS_SIM_MAX_GPU;
    double pod_cpu = (double)p->cpu_nz / GS_SIM_MAX_CPU;
    double pod_gpu = (double)((int64_t)p->milli * p->count) / GS_SIM_MAX_GPU;
    double dot = 0.0;
    dot += node_cpu * pod_cpu;
    dot += node_gpu * pod_gpu;
    double s = dot / 2.0;
    s = 1.0 - s;
    return (int)(int64_t)(100.0 * s);
}

/* ---------------------------------------------------------------- GpuClustering */

static uint32_t clustering_tag(const gs_sim_pod *p)
{
    if (p->milli == 0)
        return 0;
    if (gs_sim_pod_sharing(p))
        return 1u;
    uint32_t k = p->count < 31 ? p->count : 31;
    return 1u << k;
}

static int clustering_score(const gs_sim_ctx *c, const gs_sim_node *n, const gs_sim_pod *p,
                            uint8_t *hint)
{
    (void)c;
    *hint = 0;
    if (p->milli == 0)
        return 0;
    int64_t b = 25 * ((int64_t)8000 - (int64_t)n->gl) / 8000; /* Go: truncation toward zero */
    uint32_t tag = clustering_tag(p);
    if (n->tags == 0)
        return (int)(b + 25);
    if (n->tags == tag)
        return (int)(b + 75);
    if (n->tags & tag)
        return (int)(b + 50);
    return (int)b;
}

/* ---------------------------------------------------------------- GpuPacking */

static int packing_score(const gs_sim_ctx *c, const gs_sim_node *n, const gs_sim_pod *p,
                         uint8_t *hint)
{
    (void)c;
    *hint = 0;
    if (p->milli == 0)
        return 0;
    int free_gpus = n->nfree, gpus = n->ngpus;
    if (free_gpus == gpus) /* case 3: an untouched node */
        return 33 - free_gpus > free_gpus ? 33 - free_gpus : free_gpus;
    uint8_t pick[GS_SIM_MAX_GPUS];
    gs_sim_pick_ascending(n, p, pick);
    int used_free = 0;
    int64_t pct_sum = 0;
    for (uint32_t i = 0; i < p->count && i < n->ngpus; i++) {
        uint16_t left = n->left[pick[i]];
        if (left == GS_SIM_MILLI)
            used_free++;
        pct_sum += (int64_t)left * 100 / GS_SIM_MILLI;
    }
    if (used_free > 0) /* case 2: needs fully free GPUs */
        return 50 - used_free > 33 ? 50 - used_free : 33;
    int64_t s = 100 - pct_sum / 10; /* case 1: only partly used GPUs */
    return (int)(s > 50 ? s : 50);
}

/* ---------------------------------------------------------------- BestFit */

/* int((1 - [0.5 (cL - cP)/MaxCPU + 0.5 (gL - gP)/MaxGPU]) * 100). The min-max
 * normalisation over the feasible nodes keeps order and ties, so it is left out. */
static int bestfit_score(const gs_sim_ctx *c, const gs_sim_node *n, const gs_sim_pod *p,
                         uint8_t *hint)
{
    (void)c;
    *hint = 0;
    double free_cpu = (double)n->cpu_left, free_gpu = (double)n->gl;
    double req_cpu = (double)p->cpu_nz, req_gpu = (double)((int64_t)p->milli * p->count);
    double s = 0.0;
    s += (free_cpu - req_cpu) / GS_SIM_MAX_CPU * 0.5;
    s += (free_gpu - req_gpu) / GS_SIM_MAX_GPU * 0.5;
    s = (1.0 - s) * 100.0;
    return (int)(int64_t)s;
}

/* ---------------------------------------------------------------- FGD */

int gs_fgd_score(double before, double after)
{
    double x = (before - after) / 1000.0;
    double sig = 1.0 / (1.0 + exp(-x));
    return (int)(int64_t)(sig * 100.0);
}

static int frag_score(double before, double after) { return gs_fgd_score(before, after); }

/* Sharing pods: every GPU i (index order) that fits is tried; the node's score is the best
 * s_i and the GPU the first one reaching it. GPUs with equal left give the same hypothetical
 * node (up to order, which the measure ignores), so each distinct left is evaluated once.
 * Other pods: the hypothetical node takes cP and the first `count` GPUs with left >= milli
 * in ascending order of left; the chosen GPUs are the lowest-index fully free ones. */
static int fgd_score(const gs_sim_ctx *c, const gs_sim_node *n, const gs_sim_pod *p, uint8_t *hint)
{
    const gs_ftypes *ft = &c->w->ft;
    double before = n->frag;
    uint16_t left[GS_SIM_MAX_GPUS];
    memcpy(left, n->left, sizeof left);
    int64_t cpu_after = n->cpu_left - p->cpu_nz;
    *hint = 0;
    if (gs_sim_pod_sharing(p)) {
        int best = -1;
        uint16_t seen[GS_SIM_MAX_GPUS];
        int seen_score[GS_SIM_MAX_GPUS];
        uint32_t nseen = 0;
        for (uint32_t i = 0; i < n->ngpus; i++) {
            if (n->left[i] < p->milli)
                continue;
            int s = -1;
            for (uint32_t k = 0; k < nseen; k++)
                if (seen[k] == n->left[i])
                    s = seen_score[k];
            if (s < 0) {
                left[i] = (uint16_t)(n->left[i] - p->milli);
                s = frag_score(before, gs_ftypes_frag(ft, n->model, cpu_after, left, n->ngpus));
                left[i] = n->left[i];
                seen[nseen] = n->left[i];
                seen_score[nseen++] = s;
            }
            if (best < 0 || s > best) {
                best = s;
                *hint = (uint8_t)i;
            }
        }
        return best < 0 ? 0 : best;
    }
    if (p->count > 0 && p->milli > 0) {
        uint8_t pick[GS_SIM_MAX_GPUS];
        gs_sim_pick_ascending(n, p, pick);
        for (uint32_t k = 0; k < p->count && k < n->ngpus; k++)
            left[pick[k]] = (uint16_t)(left[pick[k]] - p->milli);
    }
    return frag_score(before, gs_ftypes_frag(ft, n->model, cpu_after, left, n->ngpus));
}

static void fgd_pick(gs_sim_ctx *c, const gs_sim_node *n, const gs_sim_pod *p, uint8_t hint,
                     uint8_t *out)
{
    (void)c;
    if (gs_sim_pod_sharing(p)) {
        out[0] = hint;
        return;
    }
    gs_sim_pick_ascending(n, p, out);
}

/* ---------------------------------------------------------------- Kubernetes strategies */

/* NodeResourcesFit LeastAllocated / MostAllocated over cpu (weight 1, non-zero requests)
 * and alibabacloud.com/gpu-milli (weight 1; skipped for pods that do not request it and on
 * nodes without GPUs), integer formulas of k8s-semantics 3.3. */
static int k8s_score(const gs_sim_node *n, const gs_sim_pod *p, bool most)
{
    int64_t sum = 0, counted = 0;
    int64_t alloc = n->cpu_alloc, req = n->cpu_nz_used + p->cpu_nz;
    if (alloc > 0) {
        if (most)
            sum += (req < alloc ? req : alloc) * 100 / alloc;
        else
            sum += req > alloc ? 0 : (alloc - req) * 100 / alloc;
        counted++;
    }
    int64_t gpu_req = (int64_t)p->milli * p->count;
    if (gpu_req > 0 && n->ngpus > 0) {
        int64_t galloc = (int64_t)n->ngpus * GS_SIM_MILLI;
        int64_t greq = galloc - n->gl + gpu_req;
        if (most)
            sum += (greq < galloc ? greq : galloc) * 100 / galloc;
        else
            sum += greq > galloc ? 0 : (galloc - greq) * 100 / galloc;
        counted++;
    }
    return counted ? (int)(sum / counted) : 0;
}

static int k8s_least_score(const gs_sim_ctx *c, const gs_sim_node *n, const gs_sim_pod *p,
                           uint8_t *hint)
{
    (void)c;
    *hint = 0;
    return k8s_score(n, p, false);
}

static int k8s_most_score(const gs_sim_ctx *c, const gs_sim_node *n, const gs_sim_pod *p,
                          uint8_t *hint)
{
    (void)c;
    *hint = 0;
    return k8s_score(n, p, true);
}

/* ---------------------------------------------------------------- table */

static const gs_sim_policy policies[] = {
    {"random", "01-Random", "a uniformly random feasible node; random GPU for shares",
     random_score, random_pick, random_prescore, false},
    {"dotprod", "02-DotProd", "Tetris-like: smallest dot product of free and requested cpu/gpu",
     dotprod_score, pick_best, NULL, false},
    {"gpu-clustering", "03-GpuClustering", "keep sharing and k-GPU pods on nodes of their kind",
     clustering_score, pick_best, NULL, false},
    {"gpu-packing", "04-GpuPacking", "prefer partly used GPUs, then used nodes, then empty ones",
     packing_score, pick_best, NULL, false},
    {"bestfit", "05-BestFit", "least cpu and gpu left after placement",
     bestfit_score, pick_best, NULL, false},
    {"fgd", "06-FGD", "fragmentation gradient descent: least fragmentation increase",
     fgd_score, fgd_pick, NULL, true},
    {"k8s-least", "07-K8sLeast", "Kubernetes LeastAllocated over cpu and gpu-milli",
     k8s_least_score, pick_best, NULL, false},
    {"k8s-most", "08-K8sMost", "Kubernetes MostAllocated over cpu and gpu-milli",
     k8s_most_score, pick_best, NULL, false},
};

#define NPOLICIES (sizeof policies / sizeof policies[0])

const gs_sim_policy *gs_sim_policy_table(uint32_t *count)
{
    if (count)
        *count = (uint32_t)NPOLICIES;
    return policies;
}

/* The public view of the same table (names, labels and summaries must stay equal to the
 * ops table above; test_sim_fgd checks it). */
static const gs_fgd_policy_info infos_const[NPOLICIES] = {
    {"random", "01-Random", "a uniformly random feasible node; random GPU for shares"},
    {"dotprod", "02-DotProd", "Tetris-like: smallest dot product of free and requested cpu/gpu"},
    {"gpu-clustering", "03-GpuClustering", "keep sharing and k-GPU pods on nodes of their kind"},
    {"gpu-packing", "04-GpuPacking", "prefer partly used GPUs, then used nodes, then empty ones"},
    {"bestfit", "05-BestFit", "least cpu and gpu left after placement"},
    {"fgd", "06-FGD", "fragmentation gradient descent: least fragmentation increase"},
    {"k8s-least", "07-K8sLeast", "Kubernetes LeastAllocated over cpu and gpu-milli"},
    {"k8s-most", "08-K8sMost", "Kubernetes MostAllocated over cpu and gpu-milli"},
};

const gs_fgd_policy_info *gs_fgd_policies(uint32_t *count)
{
    if (count)
        *count = (uint32_t)NPOLICIES;
    return infos_const;
}

int gs_fgd_policy_find(const char *name, gs_error *err)
{
    for (uint32_t i = 0; i < NPOLICIES; i++)
        if (name && strcmp(name, policies[i].name) == 0)
            return (int)i;
    char list[256];
    size_t o = 0;
    list[0] = 0;
    for (uint32_t i = 0; i < NPOLICIES && o < sizeof list; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", policies[i].name);
    gs_fail(err, GS_ERR_NOTFOUND, "unknown policy \"%.64s\" (policies: %s)", name ? name : "",
            list);
    return -1;
}
