/*
 * preempt.c - DefaultPreemption (k8s-semantics 5.2), deterministic.
 *
 * 1. Eligibility: preemptionPolicy Never -> not eligible.
 * 2. Potential nodes: those whose Filter verdict was resolvable (Unschedulable).
 * 3. Every potential node is dry-run (upstream stops after a candidate budget from a random
 *    offset; evaluating all of them makes the outcome independent of that randomness).
 * 4. Victims on a node: remove every pod of lower priority; if the pod still does not fit
 *    the node is no candidate. Otherwise add the removed pods back in importance order
 *    (priority desc, earlier start first), PDB-violating ones first, keeping each one that
 *    still lets the pod fit; the rest are the victims.
 * 5. Pick: fewest PDB violations; lowest highest-victim priority; smallest sum of victim
 *    priorities (shifted by 2^31); fewest victims; latest start among the highest-priority
 *    victims; first node in name order.
 * Dry runs unbind and rebind pods on the node in place; every change is undone exactly,
 * so they leave node versions alone (gs__dry_begin/end): the shape caches stay valid.
 * Nodes without a lower-priority pod (the node's lowest priority says) are answered
 * before anything is allocated or any pod is looked at; the
 * scratch arrays live in the cluster and the two reasons are interned once. A bound from
 * sums (bound_fails) rules out nodes where the pod cannot fit even without every
 * lower-priority pod before their dry run; only when no node is a candidate are those
 * dry-run after all, for the reasons the message counts.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"

#define GS_PRE_MAX_DEVS 64 /* devices per node the whole-GPU bound looks at */

typedef struct cand {
    uint32_t node;
    uint32_t *victims;
    uint32_t nvictims;
    uint32_t pdb_violations;
    int32_t max_prio;
    int64_t prio_sum;
    int64_t max_prio_earliest_start;
} cand;

static int cmp_importance(const void *a, const void *b, void *ctx)
{
    const gs_cluster *sort_c = ctx;
    const gs_cpod *x = &sort_c->pods[*(const uint32_t *)a];
    const gs_cpod *y = &sort_c->pods[*(const uint32_t *)b];
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static bool pod_in_disrupted(const gs_pdb *pdb, const gs_pod *p)
{
    for (uint32_t i = 0; i < pdb->ndisrupted; i++)
        if (strcmp(pdb->disrupted_pods[i], p->meta.name) == 0)
            return true;
    return false;
}

/* Split sorted pods into PDB-violating (front) and non-violating, keeping order. */
static void split_pdb(gs_cluster *c, uint32_t *pods, uint32_t n, uint8_t *violating)
{
    const gs_snapshot *s = c->snap;
    int32_t *allowed = calloc(s->pdbs.n ? s->pdbs.n : 1, sizeof *allowed);
    if (!allowed) {
        memset(violating, 0, n);
        return;
    }
    for (size_t k = 0; k < s->pdbs.n; k++)
        allowed[k] = s->pdbs.v[k].has_disruptions_allowed ? s->pdbs.v[k].disruptions_allowed : 0;
    for (uint32_t i = 0; i < n; i++) {
        const gs_cpod *p = &c->pods[pods[i]];
        violating[i] = 0;
        for (uint32_t k = 0; k < p->npdbs; k++) {
            const gs_pdb *pdb = &s->pdbs.v[p->pdbs[k]];
            if (pod_in_disrupted(pdb, p->obj))
                continue;
            allowed[p->pdbs[k]]--;
            if (allowed[p->pdbs[k]] < 0)
                violating[i] = 1;
        }
    }
    free(allowed);
}

/* Scratch for dry runs on nodes holding up to n pods; false when out of memory. */
static bool scratch_reserve(gs_cluster *c, size_t n)
{
    if (n <= c->pre_cap)
        return true;
    size_t cap = c->pre_cap ? c->pre_cap : 16;
    while (cap < n)
        cap *= 2;
    uint32_t *lower = realloc(c->pre_lower, cap * sizeof *lower);
    if (lower)
        c->pre_lower = lower;
    gs_gpu_assign *saved = realloc(c->pre_saved, cap * sizeof *saved);
    if (saved)
        c->pre_saved = saved;
    uint8_t *viol = realloc(c->pre_viol, cap);
    if (viol)
        c->pre_viol = viol;
    uint8_t *vic = realloc(c->pre_victim, cap);
    if (vic)
        c->pre_victim = vic;
    if (!lower || !saved || !viol || !vic)
        return false;
    c->pre_cap = (uint32_t)cap;
    return true;
}

static void rebind_all(gs_cluster *c, const uint32_t *lower, const gs_gpu_assign *saved,
                       uint32_t nl, uint32_t node)
{
    for (uint32_t i = 0; i < nl; i++)
        gs__bind(c, lower[i], node, saved[i].n ? &saved[i] : NULL);
}

/* Would the pod certainly still not fit on node with every pod of lower[] gone? A bound
 * from the sums (Filter's NodeResourcesFit rule per resource, the pod count, and for a
 * whole-GPU request on exclusive devices the devices left holding no pod), checked
 * before anything is unbound. true only when Filter would fail too. */
static bool bound_fails(gs_cluster *c, uint32_t pod, uint32_t node, const uint32_t *lower,
                        uint32_t nl)
{
    const gs_cpod *p = &c->pods[pod];
    const gs_cnode *n = &c->nodes[node];
    if (n->npods - nl + 1 > n->max_pods)
        return true;
    if (!p->requests_nothing) {
        const int64_t *al = gs__alloc(c, node);
        const int64_t *us = gs__used(c, node);
        const int64_t *rq = gs__req(c, pod);
        int64_t *freed = c->pre_freed;
        memset(freed, 0, c->ndims * sizeof *freed);
        for (uint32_t i = 0; i < nl; i++) {
            const int64_t *r = gs__req(c, lower[i]);
            for (uint32_t d = 0; d < c->ndims; d++)
                freed[d] += r[d];
        }
        for (uint32_t d = 0; d < c->ndims; d++)
            if (rq[d] > 0 && rq[d] > al[d] - (us[d] - freed[d]))
                return true;
    }
    const gs_node_gpus *g = &n->gpus;
    if (p->has_gpu && p->gpu.kind == GS_GPU_WHOLE && g->mig_strategy != GS_MIG_SINGLE &&
        g->sharing != GS_SHARING_TIME_SLICING && g->sharing != GS_SHARING_MPS &&
        g->ndevs <= GS_PRE_MAX_DEVS) {
        /* fit_whole takes idle devices only, and an idle device holds no pod */
        uint16_t *dp = c->pre_devpods;
        for (uint32_t d = 0; d < g->ndevs; d++)
            dp[d] = g->devs[d].npods;
        for (uint32_t i = 0; i < nl; i++) {
            const gs_gpu_assign *a = &c->pods[lower[i]].assign;
            for (uint32_t k = 0; k < a->n && k < GS_GPU_ASSIGN_MAX; k++)
                if (a->dev[k] < g->ndevs && dp[a->dev[k]])
                    dp[a->dev[k]]--;
        }
        uint32_t idle = 0;
        for (uint32_t d = 0; d < g->ndevs; d++)
            idle += dp[d] == 0 && !(g->devs[d].flags & (GS_DEV_MIG_ENABLED | GS_DEV_UNHEALTHY));
        if (p->gpu.count > idle)
            return true;
    }
    return false;
}

/* Dry run on one node. Returns 1 candidate, 0 no candidate (reason recorded). The node's
 * pods are unbound and bound back exactly (same devices), inside gs__dry_begin/end, so
 * the node's version and every cache keyed by it stay valid. */
static int select_victims(gs_cluster *c, uint32_t pod, uint32_t node, cand *out, bool *deferred)
{
    const gs_cpod *pre = &c->pods[pod];
    gs_cnode *n = &c->nodes[node];
    uint32_t nl = 0;
    if (n->pods.n && n->min_prio < pre->priority) /* else no pod of lower priority */
        for (size_t i = 0; i < n->pods.n; i++)
            nl += c->pods[n->pods.v[i]].priority < pre->priority;
    gs_nstatus *st = &c->status[node];
    if (!nl) {
        st->nreasons = 0;
        if (c->reason_no_victims >= 0)
            st->reasons[st->nreasons++] = (uint16_t)c->reason_no_victims;
        return 0;
    }
    if (!scratch_reserve(c, n->pods.n))
        return 0;
    uint32_t *lower = c->pre_lower;
    gs_gpu_assign *saved = c->pre_saved;
    uint8_t *viol = c->pre_viol;
    uint8_t *is_victim = c->pre_victim;
    nl = 0;
    for (size_t i = 0; i < n->pods.n; i++)
        if (c->pods[n->pods.v[i]].priority < pre->priority)
            lower[nl++] = n->pods.v[i];
    if (deferred && bound_fails(c, pod, node, lower, nl)) {
        *deferred = true; /* no candidate; its Filter reasons are filled in only if needed */
        return 0;
    }
    qsort_r(lower, nl, sizeof *lower, cmp_importance, c);
    gs__dry_begin(c);
    for (uint32_t i = 0; i < nl; i++) {
        saved[i] = c->pods[lower[i]].assign;
        gs__unbind(c, lower[i]);
    }
    gs_gpu_assign a;
    int result = 0;
    if (!gs__filter(c, pod, node, &a)) {
        /* even without every lower-priority pod it does not fit: the filter recorded why */
        rebind_all(c, lower, saved, nl, node);
        goto done;
    }
    split_pdb(c, lower, nl, viol);
    uint32_t *victims = gs_arena_alloc(&c->arena, nl * sizeof *victims);
    if (!victims) {
        rebind_all(c, lower, saved, nl, node);
        goto done;
    }
    memset(is_victim, 0, nl);
    uint32_t nv = 0, violations = 0;
    for (int pass = 1; pass >= 0; pass--) { /* violating group first */
        for (uint32_t i = 0; i < nl; i++) {
            if (viol[i] != pass)
                continue;
            gs__bind(c, lower[i], node, saved[i].n ? &saved[i] : NULL);
            if (!gs__filter_resources(c, pod, node, &a)) {
                gs__unbind(c, lower[i]);
                is_victim[i] = 1;
            }
        }
    }
    out->node = node;
    out->max_prio = INT32_MIN;
    out->prio_sum = 0;
    out->max_prio_earliest_start = INT64_MAX;
    for (uint32_t i = 0; i < nl; i++) { /* lower[] is in importance order */
        if (!is_victim[i])
            continue;
        const gs_cpod *v = &c->pods[lower[i]];
        victims[nv++] = lower[i];
        violations += viol[i];
        out->prio_sum += (int64_t)v->priority + (1LL << 31);
        if (v->priority > out->max_prio) {
            out->max_prio = v->priority;
            out->max_prio_earliest_start = v->start;
        } else if (v->priority == out->max_prio && v->start < out->max_prio_earliest_start) {
            out->max_prio_earliest_start = v->start;
        }
        gs__bind(c, lower[i], node, saved[i].n ? &saved[i] : NULL); /* undo */
    }
    out->victims = victims;
    out->nvictims = nv;
    out->pdb_violations = violations;
    result = nv > 0;
done:
    gs__dry_end(c, node);
    return result;
}

/* true when a is a better candidate than b */
static bool better(const cand *a, const cand *b)
{
    if (a->pdb_violations != b->pdb_violations)
        return a->pdb_violations < b->pdb_violations;
    if (a->max_prio != b->max_prio)
        return a->max_prio < b->max_prio;
    if (a->prio_sum != b->prio_sum)
        return a->prio_sum < b->prio_sum;
    if (a->nvictims != b->nvictims)
        return a->nvictims < b->nvictims;
    if (a->max_prio_earliest_start != b->max_prio_earliest_start)
        return a->max_prio_earliest_start > b->max_prio_earliest_start;
    return a->node < b->node;
}

int32_t gs__preempt(gs_cluster *c, uint32_t pod, uint32_t **victims, uint32_t *nvictims,
                    const char **message)
{
    const gs_cpod *p = &c->pods[pod];
    *victims = NULL;
    *nvictims = 0;
    if (p->never_preempt) {
        *message = "preemption: not eligible due to preemptionPolicy=Never.";
        return -1;
    }
    cand best;
    memset(&best, 0, sizeof best);
    bool have = false;
    uint32_t npotential = 0, ndefer = 0;
    if (!c->pre_defer) {
        c->pre_defer = malloc((c->nnodes ? c->nnodes : 1) * sizeof *c->pre_defer);
        c->pre_freed = malloc((c->ndims ? c->ndims : 1) * sizeof *c->pre_freed);
        c->pre_devpods = malloc(GS_PRE_MAX_DEVS * sizeof *c->pre_devpods);
        if (!c->pre_defer || !c->pre_freed || !c->pre_devpods) {
            free(c->pre_defer);
            free(c->pre_freed);
            free(c->pre_devpods);
            c->pre_defer = NULL;
            c->pre_freed = NULL;
            c->pre_devpods = NULL;
        }
    }
    for (uint32_t node = 0; node < c->nnodes; node++) {
        gs_nstatus *st = &c->status[node];
        if (st->unresolvable) {
            st->nreasons = 0;
            if (c->reason_not_helpful >= 0)
                st->reasons[st->nreasons++] = (uint16_t)c->reason_not_helpful;
            continue;
        }
        npotential++;
        cand cd;
        memset(&cd, 0, sizeof cd);
        bool deferred = false;
        if (select_victims(c, pod, node, &cd,
                           c->pre_defer && !c->cfg.no_shape_cache ? &deferred : NULL) &&
            (!have || better(&cd, &best))) {
            best = cd;
            have = true;
        }
        if (deferred)
            c->pre_defer[ndefer++] = node;
    }
    if (!have) /* the message counts every node's reason: dry-run the ruled-out ones */
        for (uint32_t k = 0; k < ndefer; k++) {
            cand cd;
            memset(&cd, 0, sizeof cd);
            select_victims(c, pod, c->pre_defer[k], &cd, NULL);
        }
    if (have) {
        *victims = best.victims;
        *nvictims = best.nvictims;
        *message = NULL;
        return (int32_t)best.node;
    }
    gs_reason_count *rc;
    uint32_t nrc;
    char *fe = gs__fit_error(c, c->nnodes, &rc, &nrc);
    *message = fe ? gs_arena_printf(&c->arena, "preemption: %s", fe) : "preemption: failed";
    (void)npotential;
    return -1;
}
