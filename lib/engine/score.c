/*
 * score.c - the Score plugins and their normalisation (k8s-semantics 3.3-3.5, 1.4, 4).
 *
 *   TaintToleration (w 3)  untolerated PreferNoSchedule taints, reverse-normalised
 *   NodeAffinity    (w 2)  sum of matching preferred term weights, normalised to max
 *   NodeResourcesFit(w 1)  LeastAllocated | MostAllocated | RequestedToCapacityRatio over
 *                          the configured resources (cpu/memory use non-zero requests;
 *                          other resources the pod does not request are skipped)
 *   BalancedAllocation(w 1) 1 - std-dev of cpu/memory fractions (real requests)
 *   GPUShareBinpack (w 2)  gpusched: for GPU shares, how full the chosen device becomes
 *                          (best-fit across nodes, so shares pack onto started GPUs the
 *                          way HAMi's and gpushare's binpack policies do)
 * GPU resource names in the Fit resources (e.g. nvidia.com/gpu) are measured in
 * milli-GPUs over the node's devices, so whole GPUs and shares add up on one scale.
 * gs__score_node gives each node's unnormalised parts (cacheable per pod shape and node
 * state); schedule.c normalises them over the feasible nodes (finish_and_pick).
 */
#include <math.h>
#include <string.h>

#include "engine/engine_int.h"

enum { RES_SKIP = -1, RES_GPU = -2 };


static void plan_resources(gs_cluster *c, const gs_cpod *p, const int64_t *rq, res_plan *plan)
{
    plan->n = 0;
    for (uint32_t i = 0; i < c->cfg.nresources; i++) {
        const gs_score_resource *r = &c->cfg.resources[i];
        int32_t d;
        if (gs_gpu_is_device_resource(r->name)) {
            d = p->has_gpu ? RES_GPU : RES_SKIP;
        } else {
            d = gs_intern_find(&c->dims, r->name, strlen(r->name));
            if (d < 0)
                d = RES_SKIP;
            else if (d > GS_DIM_EPH && rq[d] == 0)
                d = RES_SKIP; /* scalar the pod does not request */
        }
        if (d == RES_SKIP)
            continue;
        plan->dim[plan->n] = d;
        plan->weight[plan->n] = r->weight > 0 ? r->weight : 1;
        plan->n++;
    }
}

static int64_t gpu_milli_of_assign(const gs_gpu_assign *a, const gs_gpu_request *r)
{
    if (r->kind == GS_GPU_MIG || r->kind == GS_GPU_WHOLE)
        return (int64_t)r->count * 1000;
    int64_t s = 0;
    for (uint32_t i = 0; i < a->n; i++)
        s += a->milli[i];
    return s;
}

static int64_t rtcr(const gs_config *cfg, int64_t util)
{
    /* piecewise linear over shape points scaled x10 (score 0..10 -> 0..100) */
    if (cfg->nshape == 0)
        return 0;
    if (util <= cfg->shape[0].utilization)
        return cfg->shape[0].score * 10;
    for (uint32_t i = 1; i < cfg->nshape; i++) {
        const gs_shape_point *a = &cfg->shape[i - 1], *b = &cfg->shape[i];
        if (util <= b->utilization) {
            int64_t sa = a->score * 10, sb = b->score * 10;
            return sa + (sb - sa) * (util - a->utilization) / (b->utilization - a->utilization);
        }
    }
    return cfg->shape[cfg->nshape - 1].score * 10;
}

static int64_t fit_score(gs_cluster *c, const gs_cpod *p, uint32_t node, const int64_t *rq,
                         const res_plan *plan, const gs_gpu_assign *a)
{
    const gs_cnode *n = &c->nodes[node];
    const int64_t *al = gs__alloc(c, node);
    const int64_t *us = gs__used(c, node);
    int64_t sum = 0, wsum = 0;
    for (uint32_t i = 0; i < plan->n; i++) {
        int32_t d = plan->dim[i];
        int64_t alloc, req;
        if (d == RES_GPU) {
            gs_gpu_free f = *gs__gpu_free(c, node);
            uint32_t units = f.devices;
            if (p->gpu.kind == GS_GPU_MIG) {
                units = n->gpus.nmig;
                alloc = (int64_t)units * 1000;
                req = (int64_t)(units - f.mig_free) * 1000 + gpu_milli_of_assign(a, &p->gpu);
            } else {
                alloc = (int64_t)units * 1000;
                req = alloc - f.milli_free + gpu_milli_of_assign(a, &p->gpu);
            }
        } else if (d == GS_DIM_CPU) {
            alloc = al[d];
            req = n->nz_cpu + p->nz_cpu;
        } else if (d == GS_DIM_MEM) {
            alloc = al[d];
            req = n->nz_mem + p->nz_mem;
        } else {
            alloc = al[d];
            req = us[d] + rq[d];
        }
        if (alloc <= 0)
            continue;
        int64_t s;
        switch (c->cfg.strategy) {
        case GS_STRATEGY_MOST_ALLOCATED:
            s = (req > alloc ? alloc : req) * 100 / alloc;
            break;
        case GS_STRATEGY_REQUESTED_TO_CAPACITY_RATIO: {
            int64_t util = req > alloc ? 100 : (int64_t)((__int128)req * 100 / alloc);
            s = rtcr(&c->cfg, util);
            if (s <= 0)
                continue; /* only resources with a positive score enter the average */
            break;
        }
        case GS_STRATEGY_LEAST_ALLOCATED:
        default:
            s = req > alloc ? 0 : (alloc - req) * 100 / alloc;
            break;
        }
        sum += s * plan->weight[i];
        wsum += plan->weight[i];
    }
    if (!wsum)
        return 0;
    if (c->cfg.strategy == GS_STRATEGY_REQUESTED_TO_CAPACITY_RATIO)
        return (int64_t)llround((double)sum / (double)wsum);
    return sum / wsum;
}

static int64_t balanced_score(gs_cluster *c, uint32_t node, const int64_t *rq)
{
    const int64_t *al = gs__alloc(c, node);
    const int64_t *us = gs__used(c, node);
    double f[2];
    int nf = 0;
    for (int d = GS_DIM_CPU; d <= GS_DIM_MEM; d++) {
        if (al[d] <= 0)
            continue;
        double x = (double)(us[d] + rq[d]) / (double)al[d];
        f[nf++] = x > 1.0 ? 1.0 : x;
    }
    double sd = nf == 2 ? fabs(f[0] - f[1]) / 2.0 : 0.0;
    return (int64_t)((1.0 - sd) * 100.0);
}

static int32_t prefer_untolerated(gs_cluster *c, const gs_cpod *p, uint32_t set)
{
    int32_t v = c->prefer_cache[set];
    if (v >= 0)
        return v;
    const gs_taintset *ts = &c->taintsets[set];
    v = 0;
    if (ts->n_prefer) {
        for (uint32_t k = 0; k < ts->n; k++) {
            const gs_taint *t = &ts->taints[k];
            if (t->effect != GS_EFFECT_PREFER_NO_SCHEDULE)
                continue;
            bool ok = false;
            for (uint32_t j = 0; j < p->ntols && !ok; j++) {
                const gs_toleration *tol = &p->tols[j];
                if (tol->effect != GS_EFFECT_PREFER_NO_SCHEDULE && tol->effect != GS_EFFECT_ANY)
                    continue;
                ok = gs_toleration_tolerates(tol, t, c->cfg.lt_gt_gate);
            }
            if (!ok)
                v++;
        }
    }
    c->prefer_cache[set] = v;
    return v;
}

void gs__score_prepare(gs_cluster *c, uint32_t pod, gs_score_ctx *ctx)
{
    const gs_cpod *p = &c->pods[pod];
    const int64_t *rq = gs__req(c, pod);
    const gs_config *cfg = &c->cfg;
    plan_resources(c, p, rq, &ctx->plan);
    ctx->do_bal = cfg->w_balanced && (rq[GS_DIM_CPU] || rq[GS_DIM_MEM]);
    ctx->do_aff = cfg->w_affinity && p->obj->npreferred;
    ctx->do_taint = cfg->w_taint != 0;
    ctx->do_gpu = cfg->w_gpu_binpack && p->gpu.kind == GS_GPU_SHARE;
}

void gs__score_node(gs_cluster *c, const gs_score_ctx *ctx, uint32_t pod, uint32_t node,
                    const gs_gpu_assign *a, gs_node_score *out)
{
    const gs_cpod *p = &c->pods[pod];
    const gs_config *cfg = &c->cfg;
    const int64_t *rq = gs__req(c, pod);
    int64_t s = 0;
    if (cfg->w_fit)
        s += cfg->w_fit * fit_score(c, p, node, rq, &ctx->plan, a);
    if (ctx->do_bal)
        s += cfg->w_balanced * balanced_score(c, node, rq);
    if (ctx->do_gpu)
        s += cfg->w_gpu_binpack * gs_gpu_binpack_score(&c->nodes[node].gpus, &c->pods[pod].gpu, a);
    out->base = s;
    out->raw_taint = ctx->do_taint ? prefer_untolerated(c, p, c->nodes[node].taintset) : 0;
    out->raw_aff = 0;
    if (ctx->do_aff) {
        const gs_pod *po = p->obj;
        const gs_node *n = c->nodes[node].obj;
        int32_t raw = 0;
        for (uint32_t k = 0; k < po->npreferred; k++) {
            const gs_pref_term *pt = &po->preferred[k];
            if (pt->weight > 0 && gs_sel_term_matches(&pt->term, &n->meta.labels, n->meta.name))
                raw += pt->weight;
        }
        out->raw_aff = raw;
    }
}
