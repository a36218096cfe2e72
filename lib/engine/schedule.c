/*
 * schedule.c - the scheduling cycle, one pod at a time in queue order.
 *
 *   admission  new pods in creation order: Priority, then ResourceQuota (admission.c)
 *   queue      PrioritySort: higher priority first, then earlier creation, then input order
 *   cycle      nominated node first (if it passes Filter, it is taken without scoring);
 *              Filter over the nodes (all of them, or upstream's numFeasibleNodesToFind
 *              from a rotating start when percentage_of_nodes_to_score is set); with one
 *              feasible node scoring is skipped; otherwise Score, highest total wins, ties
 *              broken by the seeded RNG over the tied nodes in name order;
 *              no feasible node -> DefaultPreemption; a successful preemption evicts the
 *              victims and binds the pod on the chosen node at once (upstream nominates
 *              and binds in a later cycle with the same result when nothing intervenes).
 * Victims are reported as preempted and not requeued (their controllers would create
 * new pods); the simulator's replay offers requeueing.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"

static int cmp_admission(const void *a, const void *b, void *ctx)
{
    const gs_cluster *c = ctx;
    const gs_pod *x = c->pods[*(const uint32_t *)a].obj;
    const gs_pod *y = c->pods[*(const uint32_t *)b].obj;
    int64_t tx = x->meta.has_creation ? x->meta.creation : 0;
    int64_t ty = y->meta.has_creation ? y->meta.creation : 0;
    if (tx != ty)
        return tx < ty ? -1 : 1;
    return x->meta.input_index < y->meta.input_index ? -1 : 1;
}

static int cmp_queue(const void *a, const void *b, void *ctx)
{
    const gs_cluster *c = ctx;
    const gs_cpod *x = &c->pods[*(const uint32_t *)a];
    const gs_cpod *y = &c->pods[*(const uint32_t *)b];
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    return cmp_admission(a, b, ctx);
}

/* upstream numFeasibleNodesToFind (k8s-semantics 3.5) */
static uint32_t feasible_to_find(const gs_config *cfg, uint32_t n)
{
    if (cfg->percentage_of_nodes_to_score == 0 || cfg->percentage_of_nodes_to_score >= 100 ||
        n < 100)
        return n;
    int64_t p = cfg->percentage_of_nodes_to_score;
    if (p < 0) {
        p = 50 - (int64_t)n / 125;
        if (p < 5)
            p = 5;
    }
    int64_t k = (int64_t)n * p / 100;
    return k < 100 ? 100 : (uint32_t)k;
}

static void record_bind(gs_cluster *c, uint32_t pod, uint32_t node, const gs_gpu_assign *a,
                        int64_t score, uint32_t nf, uint32_t order)
{
    gs__bind(c, pod, node, a);
    uint32_t d = gs__new_decision(c, pod, GS_OUT_SCHEDULED);
    if (d == UINT32_MAX)
        return;
    gs_decision *dec = &c->decisions.v[d];
    dec->node = (int32_t)c->nodes[node].snap;
    dec->assign = c->pods[pod].assign;
    dec->score = score;
    dec->feasible = nf;
    dec->order = order;
}

/* Normalise (score.c's rules) and pick the highest total score; ties are broken by the
 * seeded RNG over the tied nodes in name order. feasible[] holds indexes >= start first,
 * then (after a rotation wraps) indexes below start, so ascending (name) order is the
 * wrapped tail followed by the head. One pass for the maxima, one for the totals, and a
 * third only when there are ties. */
static uint32_t finish_and_pick(gs_cluster *c, const gs_score_ctx *sc, const gs_node_score *ns,
                                uint32_t nf, uint32_t start, int64_t *best_score)
{
    const uint32_t *f = c->feasible;
    int64_t max_taint = 0, max_aff = 0;
    if (sc->do_taint || sc->do_aff) {
        for (uint32_t i = 0; i < nf; i++) {
            const gs_node_score *x = &ns[f[i]];
            if (x->raw_taint > max_taint)
                max_taint = x->raw_taint;
            if (x->raw_aff > max_aff)
                max_aff = x->raw_aff;
        }
    }
    const int64_t wt = c->cfg.w_taint, wa = c->cfg.w_affinity;
    int64_t top = INT64_MIN;
    uint32_t ties = 0;
    for (uint32_t i = 0; i < nf; i++) {
        uint32_t node = f[i];
        const gs_node_score *x = &ns[node];
        int64_t s = x->base;
        if (sc->do_taint)
            s += wt * (max_taint == 0 ? 100 : 100 - x->raw_taint * 100 / max_taint);
        if (sc->do_aff && max_aff > 0)
            s += wa * (x->raw_aff * 100 / max_aff);
        c->score[node] = s;
        if (s > top) {
            top = s;
            ties = 1;
        } else if (s == top) {
            ties++;
        }
    }
    *best_score = top;
    uint64_t pick = ties > 1 ? gs_rng_below(&c->rng, ties) : 0;
    uint32_t wrap = 0; /* first position holding an index below start */
    while (start > 0 && wrap < nf && f[wrap] >= start)
        wrap++;
    uint64_t seen = 0;
    for (uint32_t k = 0; k < nf; k++) {
        uint32_t i = start > 0 ? (wrap + k) % nf : k;
        if (c->score[f[i]] == top && seen++ == pick)
            return f[i];
    }
    return f[0];
}

/* ---------------------------------------------------------------- shape cache
 * Filter verdicts and unnormalised scores depend only on the pod's shape and the node's
 * state, so they are kept per recently used shape and reused while the node's version
 * (bumped by every bind/unbind) is unchanged. Normalisation and tie-breaking still run
 * over every node for every pod: results are identical to evaluating from scratch
 * (tests/unit/test_engine.c compares both), only cheaper when replicas of a workload
 * arrive together. The resident shapes are bounded by a memory budget (GS_SHAPE_BUDGET,
 * about 31 bytes per node per shape) and at most GS_SHAPE_MAX; least recently used out.
 */
#define GS_SHAPE_MAX 256
#define GS_SHAPE_BUDGET (64u << 20)

typedef struct gs_shape_cache {
    int64_t shape;       /* -1 when unused */
    uint64_t used;       /* LRU clock */
    uint32_t *ver;       /* node version + 1 the entry was computed at; 0 = none */
    uint8_t *ok;
    gs_nstatus *st;
    gs_node_score *ns;
} gs_shape_cache;

void gs__shape_cache_free(gs_cluster *c)
{
    for (uint32_t i = 0; i < c->nscache; i++) {
        free(c->scache[i].ver);
        free(c->scache[i].ok);
        free(c->scache[i].st);
        free(c->scache[i].ns);
    }
    free(c->scache);
    c->scache = NULL;
    c->nscache = 0;
}

static gs_shape_cache *shape_cache_get(gs_cluster *c, uint32_t shape)
{
    c->scache_clock++;
    gs_shape_cache *victim = NULL;
    for (uint32_t i = 0; i < c->nscache; i++) {
        gs_shape_cache *e = &c->scache[i];
        if (e->shape == shape) {
            e->used = c->scache_clock;
            return e;
        }
        if (!victim || e->used < victim->used)
            victim = e;
    }
    size_t per_shape = (size_t)(c->nnodes ? c->nnodes : 1) *
                       (sizeof(uint32_t) + 1 + sizeof(gs_nstatus) + sizeof(gs_node_score));
    size_t cap = GS_SHAPE_BUDGET / per_shape;
    if (cap > GS_SHAPE_MAX)
        cap = GS_SHAPE_MAX;
    if (cap < 1)
        cap = 1;
    if (c->nscache < cap) {
        if (!c->scache) {
            c->scache = calloc(cap, sizeof *c->scache);
            if (!c->scache)
                return NULL;
        }
        size_t n = c->nnodes ? c->nnodes : 1;
        gs_shape_cache *e = &c->scache[c->nscache];
        e->ver = calloc(n, sizeof *e->ver);
        e->ok = calloc(n, sizeof *e->ok);
        e->st = calloc(n, sizeof *e->st);
        e->ns = calloc(n, sizeof *e->ns);
        if (!e->ver || !e->ok || !e->st || !e->ns) {
            free(e->ver);
            free(e->ok);
            free(e->st);
            free(e->ns);
            memset(e, 0, sizeof *e);
            return NULL;
        }
        c->nscache++;
        victim = e;
    } else {
        memset(victim->ver, 0, (c->nnodes ? c->nnodes : 1) * sizeof *victim->ver);
    }
    victim->shape = shape;
    victim->used = c->scache_clock;
    return victim;
}

/* Filter + unnormalised score of one node into the given slots. */
static bool eval_node(gs_cluster *c, const gs_score_ctx *sc, uint32_t pod, uint32_t node,
                      gs_node_score *ns)
{
    gs_gpu_assign *a = &c->assign_scratch[node];
    if (!gs__filter(c, pod, node, a))
        return false;
    gs__score_node(c, sc, pod, node, a, ns);
    return true;
}

static bool fail_pod(gs_cluster *c, uint32_t pod, uint32_t order)
{
    gs_cpod *p = &c->pods[pod];
    if (c->nnodes == 0) { /* upstream's ErrNoNodesAvailable */
        p->state = GS_PS_PENDING;
        uint32_t d = gs__new_decision(c, pod, GS_OUT_UNSCHEDULABLE);
        if (d != UINT32_MAX) {
            c->decisions.v[d].order = order;
            c->decisions.v[d].message = "no nodes available to schedule pods";
        }
        return false;
    }
    gs_reason_count *rc = NULL;
    uint32_t nrc = 0;
    char *fe = gs__fit_error(c, c->nnodes, &rc, &nrc);
    const char *pmsg = NULL;
    uint32_t *victims = NULL, nvictims = 0;
    int32_t node = -1;
    if (c->cfg.preemption)
        node = gs__preempt(c, pod, &victims, &nvictims, &pmsg);
    if (node >= 0) {
        for (uint32_t i = 0; i < nvictims; i++) {
            gs__unbind(c, victims[i]);
            c->pods[victims[i]].state = GS_PS_PREEMPTED;
            uint32_t vd = c->pods[victims[i]].decision;
            if (vd != UINT32_MAX) {
                c->decisions.v[vd].outcome = GS_OUT_PREEMPTED;
                c->decisions.v[vd].preempted_by = pod;
            }
        }
        gs_gpu_assign a;
        gs__reset_pod_cache(c);
        if (gs__filter(c, pod, (uint32_t)node, &a)) {
            record_bind(c, pod, (uint32_t)node, &a, 0, 0, order);
            gs_decision *dec = &c->decisions.v[c->pods[pod].decision];
            dec->victims = victims;
            dec->nvictims = nvictims;
            dec->message = fe;
            dec->reasons = rc;
            dec->nreasons = nrc;
            return true;
        }
        /* cannot happen: the dry run proved the fit */
        gs__add_warning(c, "internal: preemption dry run and bind disagree for pod %s",
                        p->obj->meta.name);
    }
    p->state = GS_PS_PENDING;
    uint32_t d = gs__new_decision(c, pod, GS_OUT_UNSCHEDULABLE);
    if (d == UINT32_MAX)
        return false;
    gs_decision *dec = &c->decisions.v[d];
    dec->order = order;
    dec->reasons = rc;
    dec->nreasons = nrc;
    if (fe && pmsg && c->cfg.preemption)
        dec->message = gs_arena_printf(&c->arena, "%s %s", fe, pmsg);
    else
        dec->message = fe;
    return false;
}

/* NodeAffinity PreFilter: when every required term pins metadata.name In [...], only
 * those nodes can pass; the others fail NodeAffinity without being evaluated. Returns the
 * number of candidate nodes written to out (sorted, unique), or -1 when not restricted. */
static int64_t pinned_nodes(gs_cluster *c, const gs_pod *p, uint32_t *out)
{
    const gs_node_selector *ns = p->required;
    if (!ns || ns->nterms == 0)
        return -1;
    uint32_t n = 0;
    for (uint32_t t = 0; t < ns->nterms; t++) {
        const gs_sel_term *term = &ns->terms[t];
        bool pinned = false;
        for (uint32_t f = 0; f < term->nfields; f++) {
            const gs_sel_req *r = &term->fields[f];
            if (r->op != GS_SEL_IN || strcmp(r->key, "metadata.name") != 0)
                continue;
            pinned = true;
            for (uint32_t v = 0; v < r->nvalues; v++) {
                int32_t node = gs__node_by_name(c, r->values[v]);
                if (node < 0)
                    continue;
                bool dup = false;
                for (uint32_t k = 0; k < n && !dup; k++)
                    dup = out[k] == (uint32_t)node;
                if (!dup && n < c->nnodes)
                    out[n++] = (uint32_t)node;
            }
        }
        if (!pinned)
            return -1;
    }
    for (uint32_t i = 1; i < n; i++) { /* insertion sort: a handful of names */
        uint32_t x = out[i], j = i;
        while (j > 0 && out[j - 1] > x) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = x;
    }
    return n;
}

bool gs__schedule_one(gs_cluster *c, uint32_t pod, uint32_t order)
{
    gs_cpod *p = &c->pods[pod];
    gs__reset_pod_cache(c);
    /* nominated node first */
    const char *nom = p->obj->nominated_node;
    if (nom[0]) {
        int32_t nn = gs__node_by_name(c, nom);
        gs_gpu_assign a;
        if (nn >= 0 && gs__filter(c, pod, (uint32_t)nn, &a)) {
            record_bind(c, pod, (uint32_t)nn, &a, 0, 1, order);
            return true;
        }
    }
    gs_score_ctx sc;
    gs__score_prepare(c, pod, &sc);
    uint32_t want = feasible_to_find(&c->cfg, c->nnodes);
    uint32_t nf = 0, start = 0;
    int64_t npinned = pinned_nodes(c, p->obj, c->feasible);
    if (npinned >= 0) {
        /* DaemonSet-style pods: evaluate the named nodes only (the result equals a full
         * pass: every other node fails NodeAffinity) */
        uint32_t *cand = c->feasible;
        uint32_t nc = (uint32_t)npinned;
        uint32_t mark = 0;
        for (uint32_t k = 0; k < nc; k++) {
            uint32_t node = cand[k];
            gs_node_score tmp;
            if (eval_node(c, &sc, pod, node, &tmp)) {
                c->nscore[node] = tmp;
                cand[mark++] = node; /* in place: mark <= k */
            }
        }
        nf = mark;
        if (!nf) {
            /* the statuses of nodes never evaluated: NodeAffinity failed there */
            for (uint32_t node = 0, k = 0; node < c->nnodes; node++) {
                if (k < nc && cand[k] == node) {
                    k++;
                    continue;
                }
                c->status[node].nreasons = 1;
                c->status[node].reasons[0] = (uint16_t)c->reason_affinity;
                c->status[node].unresolvable = 1;
            }
            return fail_pod(c, pod, order);
        }
        uint32_t best = c->feasible[0];
        int64_t best_score = 0;
        if (nf > 1)
            best = finish_and_pick(c, &sc, c->nscore, nf, 0, &best_score);
        gs_gpu_assign a;
        memset(&a, 0, sizeof a);
        if (p->has_gpu && gs_gpu_fit_node(&c->nodes[best].gpus, &p->gpu, &a) != GS_FIT_OK)
            return fail_pod(c, pod, order);
        record_bind(c, pod, best, &a, best_score, nf, order);
        return true;
    }
    gs_shape_cache *cache =
        want >= c->nnodes && !c->cfg.no_shape_cache ? shape_cache_get(c, p->shape) : NULL;
    const gs_node_score *ns = c->nscore;
    if (cache) {
        const uint32_t *nver = c->nver;
        uint32_t *cver = cache->ver;
        uint8_t *cok = cache->ok;
        for (uint32_t node = 0; node < c->nnodes; node++) {
            uint32_t v = nver[node] + 1;
            if (cver[node] != v) {
                cok[node] = eval_node(c, &sc, pod, node, &cache->ns[node]);
                cache->st[node] = c->status[node];
                cver[node] = v;
            }
            if (cok[node])
                c->feasible[nf++] = node;
        }
        ns = cache->ns;
        if (!nf)
            memcpy(c->status, cache->st, c->nnodes * sizeof *c->status);
    } else {
        start = want < c->nnodes ? c->next_start % (c->nnodes ? c->nnodes : 1) : 0;
        uint32_t visited = 0;
        for (uint32_t k = 0; k < c->nnodes && nf < want; k++) {
            uint32_t node = start + k;
            if (node >= c->nnodes)
                node -= c->nnodes;
            visited++;
            if (eval_node(c, &sc, pod, node, &c->nscore[node]))
                c->feasible[nf++] = node;
        }
        if (want < c->nnodes)
            c->next_start = (start + visited) % c->nnodes;
    }
    if (nf == 0)
        return fail_pod(c, pod, order);
    uint32_t best = c->feasible[0];
    int64_t best_score = 0;
    if (nf > 1)
        best = finish_and_pick(c, &sc, ns, nf, start, &best_score);
    /* the devices: recomputed on the chosen node (a cached verdict may be older than the
     * scratch assignment, which other shapes reuse) */
    gs_gpu_assign a;
    memset(&a, 0, sizeof a);
    if (p->has_gpu && gs_gpu_fit_node(&c->nodes[best].gpus, &p->gpu, &a) != GS_FIT_OK) {
        gs__add_warning(c, "internal: cached GPU verdict stale for pod %s", p->obj->meta.name);
        return fail_pod(c, pod, order);
    }
    record_bind(c, pod, best, &a, best_score, nf, order);
    return true;
}

bool gs__feasible_cached(gs_cluster *c, uint32_t pod, uint32_t node)
{
    gs_cpod *p = &c->pods[pod];
    gs__pod_cache_for(c, pod);
    gs_shape_cache *cache = c->cfg.no_shape_cache ? NULL : shape_cache_get(c, p->shape);
    uint32_t v = c->nver[node] + 1;
    if (cache && cache->ver[node] == v)
        return cache->ok[node];
    gs_score_ctx sc;
    gs__score_prepare(c, pod, &sc);
    gs_node_score ns;
    bool ok = eval_node(c, &sc, pod, node, cache ? &cache->ns[node] : &ns);
    if (cache) {
        cache->ok[node] = ok;
        cache->st[node] = c->status[node];
        cache->ver[node] = v;
    }
    return ok;
}

int gs_schedule_run(gs_cluster *c, gs_error *err)
{
    if (c->ran)
        return gs_fail(err, GS_ERR_INTERNAL, "gs_schedule_run called twice on one cluster");
    c->ran = true;
    uint32_t *q = malloc((c->npods ? c->npods : 1) * sizeof *q);
    if (!q)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory (queue)");
    uint32_t nq = 0;
    for (uint32_t i = 0; i < c->npods; i++) {
        gs_cpod *cp = &c->pods[i];
        if (cp->state == GS_PS_BOUND || cp->state == GS_PS_SKIPPED)
            continue;
        q[nq++] = i;
    }
    /* admission in creation order */
    qsort_r(q, nq, sizeof *q, cmp_admission, c);
    uint32_t na = 0;
    for (uint32_t i = 0; i < nq; i++) {
        uint32_t pod = q[i];
        gs_cpod *cp = &c->pods[pod];
        const char *msg = cp->reject;
        if (!msg && gs__admit(c, pod, &msg) == 0) {
            q[na++] = pod;
            continue;
        }
        cp->state = GS_PS_REJECTED;
        uint32_t d = gs__new_decision(c, pod, GS_OUT_REJECTED);
        if (d != UINT32_MAX)
            c->decisions.v[d].message = msg;
    }
    qsort_r(q, na, sizeof *q, cmp_queue, c);
    for (uint32_t i = 0; i < na; i++)
        gs__schedule_one(c, q[i], i);
    free(q);
    return 0;
}
