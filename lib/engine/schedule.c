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
    if (!c->cfg.evaluate_only)
        gs__bind(c, pod, node, a);
    uint32_t d = gs__new_decision(c, pod, GS_OUT_SCHEDULED);
    if (d == UINT32_MAX)
        return;
    gs_decision *dec = &c->decisions.v[d];
    dec->node = (int32_t)c->nodes[node].snap;
    dec->assign = c->cfg.evaluate_only ? *a : c->pods[pod].assign;
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
 * (bumped by every real bind/unbind/re-partition; preemption dry runs restore the node
 * exactly and leave it alone) is unchanged. An entry catches up through the node-change
 * log (c->clog) from its own position, so a pod re-evaluates only the nodes that changed
 * since its shape's last pod; an entry further behind than the log reaches compares
 * every node's version instead.
 *
 * The score index makes normalisation and tie-breaking O(changed nodes x log nodes)
 * instead of a pass over every feasible node. Normalisation reads only the maxima of the
 * raw TaintToleration and NodeAffinity counts over the feasible nodes, and those counts
 * of a node are fixed for a shape (its taints and labels do not change), so the feasible
 * nodes fall into classes of equal (raw_taint, raw_aff), each with a count of feasible
 * nodes; within a class every node gets the same normalised part. The maxima therefore
 * change only when a class empties or a class with a larger count gains its first node;
 * then (rare) every node's total is recomputed. Otherwise a node's total (base score +
 * its class's normalised part, exactly finish_and_pick's arithmetic) changes only when
 * the node is re-evaluated. The totals sit in a max tree over the node index: blocks of
 * GS_BLOCK consecutive nodes (scanned when needed) under a binary tree holding, per
 * subtree, the largest total and how many nodes have it. The root gives the top score
 * and the number of tied nodes; the RNG's pick among the tied nodes in name (index)
 * order is found by descending by those counts. A re-evaluated node marks its block; the
 * marked blocks and their ancestors are recomputed before the pick. Same draw, same
 * node, same score as the pass (finish_and_pick, still used without the cache).
 * A shape whose feasible nodes fall into more than GS_CLS_MAX classes falls back to the
 * pass over every node. tests/unit/test_engine.c compares cache and index against
 * evaluating from scratch. The resident shapes are bounded by a memory budget
 * (GS_SHAPE_BUDGET, about 35 bytes per node per shape) and at most GS_SHAPE_MAX; least
 * recently used out.
 */
#define GS_SHAPE_MAX 256
#define GS_SHAPE_BUDGET (64u << 20)
#define GS_CLS_MAX 32
#define GS_BLOCK 16
#define FULL_SCAN UINT64_MAX
enum {
    OK_INFEASIBLE = 0,
    OK_FEASIBLE = 1,
    OK_STATIC = 2, /* failed a filter that reads only the node's fixed spec and labels */
};

typedef struct gs_shape_cache {
    int64_t shape;       /* -1 when unused */
    uint64_t used;       /* LRU clock */
    uint64_t logpos;     /* change-log position caught up to; FULL_SCAN: compare versions */
    gs_node_score *ns;
    int64_t *tmax;       /* 2 * tp: [1] root, [tp + b] block b; largest total */
    uint32_t *tcnt;      /* nodes with that total */
    uint32_t *ver;       /* node version + 1 the entry was computed at; 0 = none */
    uint32_t *dlist;     /* marked blocks */
    gs_nstatus *st;
    uint8_t *ok;         /* OK_* verdict */
    uint8_t *cls;        /* class of a feasible node */
    uint8_t *dirty;      /* per block: in dlist */
    uint32_t tp;         /* power of two >= number of blocks */
    uint32_t ndirty;
    int32_t cls_taint[GS_CLS_MAX], cls_aff[GS_CLS_MAX];
    uint32_t cls_n[GS_CLS_MAX];     /* feasible nodes of the class */
    int64_t cls_norm[GS_CLS_MAX];   /* normalised part under max_taint, max_aff */
    int64_t max_taint, max_aff;     /* maxima the totals in the tree were computed with */
    uint32_t ncls;
    uint32_t nfeasible;
    bool noindex;        /* classes overflowed: normalise by the pass over every node */
    bool rebuild;        /* recompute every total before the next pick */
} gs_shape_cache;

static uint32_t tree_leaves(uint32_t nnodes)
{
    uint32_t nb = (nnodes + GS_BLOCK - 1) / GS_BLOCK, tp = 1;
    while (tp < nb)
        tp *= 2;
    return tp;
}

size_t gs__shape_cache_entry_bytes(uint32_t nnodes)
{
    size_t n = nnodes ? nnodes : 1, tp = tree_leaves(nnodes);
    return n * (sizeof(gs_node_score) + sizeof(uint32_t) + sizeof(gs_nstatus) + 2) +
           2 * tp * (sizeof(int64_t) + sizeof(uint32_t)) + tp * (sizeof(uint32_t) + 1);
}

void gs__shape_cache_free(gs_cluster *c)
{
    for (uint32_t i = 0; i < c->nscache; i++)
        free(c->scache[i].ns); /* one block per entry */
    free(c->scache);
    c->scache = NULL;
    c->nscache = 0;
}

static void shape_reset(gs_shape_cache *e, uint32_t nnodes)
{
    memset(e->ver, 0, (nnodes ? nnodes : 1) * sizeof *e->ver);
    memset(e->dirty, 0, e->tp);
    e->logpos = FULL_SCAN;
    e->ndirty = 0;
    e->ncls = 0;
    e->nfeasible = 0;
    e->max_taint = e->max_aff = 0;
    e->noindex = false;
    e->rebuild = true;
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
    size_t n = c->nnodes ? c->nnodes : 1;
    size_t per_shape = gs__shape_cache_entry_bytes(c->nnodes);
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
        char *blk = malloc(per_shape);
        if (!blk)
            return NULL;
        gs_shape_cache *e = &c->scache[c->nscache];
        memset(e, 0, sizeof *e);
        uint32_t tp = tree_leaves(c->nnodes);
        e->tp = tp;
        e->ns = (gs_node_score *)blk;
        blk += n * sizeof *e->ns;
        e->tmax = (int64_t *)blk;
        blk += 2 * (size_t)tp * sizeof *e->tmax;
        e->tcnt = (uint32_t *)blk;
        blk += 2 * (size_t)tp * sizeof *e->tcnt;
        e->ver = (uint32_t *)blk;
        blk += n * sizeof *e->ver;
        e->dlist = (uint32_t *)blk;
        blk += tp * sizeof *e->dlist;
        e->st = (gs_nstatus *)blk;
        blk += n * sizeof *e->st;
        e->ok = (uint8_t *)blk;
        e->cls = e->ok + n;
        e->dirty = e->cls + n;
        c->nscache++;
        victim = e;
    }
    shape_reset(victim, c->nnodes);
    victim->shape = shape;
    victim->used = c->scache_clock;
    return victim;
}

/* ---- the score index */
static int64_t class_norm(const gs_cluster *c, const gs_score_ctx *sc, const gs_shape_cache *e,
                          uint32_t k)
{
    int64_t s = 0;
    if (sc->do_taint)
        s += c->cfg.w_taint *
             (e->max_taint == 0 ? 100 : 100 - (int64_t)e->cls_taint[k] * 100 / e->max_taint);
    if (sc->do_aff && e->max_aff > 0)
        s += c->cfg.w_affinity * ((int64_t)e->cls_aff[k] * 100 / e->max_aff);
    return s;
}

static inline int64_t node_total(const gs_shape_cache *e, uint32_t node)
{
    return e->ok[node] == OK_FEASIBLE ? e->ns[node].base + e->cls_norm[e->cls[node]] : INT64_MIN;
}

/* largest total of block b and how many nodes have it */
static void block_eval(const gs_shape_cache *e, uint32_t nnodes, uint32_t b, int64_t *mx,
                       uint32_t *cnt)
{
    int64_t m = INT64_MIN;
    uint32_t k = 0;
    uint32_t end = (b + 1) * GS_BLOCK < nnodes ? (b + 1) * GS_BLOCK : nnodes;
    for (uint32_t node = b * GS_BLOCK; node < end; node++) {
        if (e->ok[node] != OK_FEASIBLE)
            continue;
        int64_t v = e->ns[node].base + e->cls_norm[e->cls[node]];
        if (v > m) {
            m = v;
            k = 1;
        } else if (v == m) {
            k++;
        }
    }
    *mx = m;
    *cnt = k;
}

static inline void tree_pull(gs_shape_cache *e, uint32_t i)
{
    int64_t a = e->tmax[2 * i], b = e->tmax[2 * i + 1];
    if (a > b) {
        e->tmax[i] = a;
        e->tcnt[i] = e->tcnt[2 * i];
    } else if (a < b) {
        e->tmax[i] = b;
        e->tcnt[i] = e->tcnt[2 * i + 1];
    } else {
        e->tmax[i] = a;
        e->tcnt[i] = e->tcnt[2 * i] + e->tcnt[2 * i + 1];
    }
}

/* A node was re-evaluated (ok/ns current; old_t its total before): class counts, its
 * block's maximum and count (updated in place; the block is rescanned only when the node
 * held its maximum alone), and the block's mark for the walk up to the root. */
static void index_note(gs_shape_cache *e, uint32_t nnodes, uint32_t node, bool was_ok, bool ok,
                       int64_t old_t)
{
    if (was_ok)
        e->cls_n[e->cls[node]]--, e->nfeasible--;
    int64_t new_t = INT64_MIN;
    if (ok) {
        const gs_node_score *x = &e->ns[node];
        uint32_t k = 0;
        while (k < e->ncls && (e->cls_taint[k] != x->raw_taint || e->cls_aff[k] != x->raw_aff))
            k++;
        if (k == e->ncls) {
            if (k == GS_CLS_MAX) {
                e->noindex = true;
                return;
            }
            e->cls_taint[k] = x->raw_taint;
            e->cls_aff[k] = x->raw_aff;
            e->cls_n[k] = 0;
            e->cls_norm[k] = 0;
            e->ncls++;
            e->rebuild = true; /* its normalised part is computed with the others */
        }
        e->cls[node] = (uint8_t)k;
        e->cls_n[k]++;
        e->nfeasible++;
        new_t = x->base + e->cls_norm[k];
    }
    if (e->rebuild)
        return; /* every block is recomputed before the next pick */
    uint32_t b = node / GS_BLOCK, i = e->tp + b;
    int64_t m = e->tmax[i];
    uint32_t cnt = e->tcnt[i];
    if (old_t != INT64_MIN && old_t == m) {
        if (cnt == 1) {
            block_eval(e, nnodes, b, &e->tmax[i], &e->tcnt[i]);
            goto mark;
        }
        cnt--;
    }
    if (new_t != INT64_MIN) {
        if (new_t > m) {
            m = new_t;
            cnt = 1;
        } else if (new_t == m) {
            cnt++;
        }
    }
    e->tmax[i] = m;
    e->tcnt[i] = cnt;
mark:
    if (!e->dirty[b]) {
        e->dirty[b] = 1;
        e->dlist[e->ndirty++] = b;
    }
}

/* Bring the tree up to date with the re-evaluated nodes (after a catch-up). */
static void index_finish(gs_cluster *c, const gs_score_ctx *sc, gs_shape_cache *e)
{
    int64_t mt = 0, ma = 0;
    if (sc->do_taint || sc->do_aff) {
        for (uint32_t k = 0; k < e->ncls; k++) {
            if (!e->cls_n[k])
                continue;
            if (e->cls_taint[k] > mt)
                mt = e->cls_taint[k];
            if (e->cls_aff[k] > ma)
                ma = e->cls_aff[k];
        }
    }
    const uint32_t tp = e->tp, nn = c->nnodes;
    if (e->rebuild || mt != e->max_taint || ma != e->max_aff) {
        e->max_taint = mt;
        e->max_aff = ma;
        for (uint32_t k = 0; k < e->ncls; k++)
            e->cls_norm[k] = class_norm(c, sc, e, k);
        for (uint32_t b = 0; b < tp; b++) {
            if ((uint64_t)b * GS_BLOCK < nn) {
                block_eval(e, nn, b, &e->tmax[tp + b], &e->tcnt[tp + b]);
            } else {
                e->tmax[tp + b] = INT64_MIN;
                e->tcnt[tp + b] = 0;
            }
        }
        for (uint32_t i = tp - 1; i >= 1; i--)
            tree_pull(e, i);
        for (uint32_t k = 0; k < e->ndirty; k++)
            e->dirty[e->dlist[k]] = 0;
        e->ndirty = 0;
        e->rebuild = false;
        return;
    }
    for (uint32_t k = 0; k < e->ndirty; k++) { /* blocks are current (index_note) */
        uint32_t b = e->dlist[k];
        e->dirty[b] = 0;
        for (uint32_t i = (tp + b) / 2; i >= 1; i /= 2) {
            int64_t om = e->tmax[i];
            uint32_t oc = e->tcnt[i];
            tree_pull(e, i);
            if (e->tmax[i] == om && e->tcnt[i] == oc)
                break; /* ancestors unchanged */
        }
    }
    e->ndirty = 0;
}

/* The pick (finish_and_pick's semantics) from the tree; nfeasible > 1. */
static uint32_t index_pick(gs_cluster *c, const gs_shape_cache *e, int64_t *best_score)
{
    int64_t top = e->tmax[1];
    uint32_t ties = e->tcnt[1];
    *best_score = top;
    uint32_t k = ties > 1 ? (uint32_t)gs_rng_below(&c->rng, ties) : 0;
    uint32_t i = 1;
    while (i < e->tp) {
        uint32_t l = 2 * i;
        if (e->tmax[l] == top) {
            if (k < e->tcnt[l]) {
                i = l;
                continue;
            }
            k -= e->tcnt[l];
        }
        i = l + 1;
    }
    uint32_t b = i - e->tp;
    uint32_t end = (b + 1) * GS_BLOCK < c->nnodes ? (b + 1) * GS_BLOCK : c->nnodes;
    for (uint32_t node = b * GS_BLOCK; node < end; node++)
        if (node_total(e, node) == top && k-- == 0)
            return node;
    return b * GS_BLOCK; /* not reached: the counts say the block holds it */
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

/* Did the last gs__filter fail node in a stage that reads only what never changes for a
 * node (unschedulable flag, taints, labels: NodeUnschedulable, TaintToleration,
 * NodeAffinity)? Those stages run first and stop at their single reason. */
static bool failed_static(const gs_cluster *c, uint32_t node)
{
    const gs_nstatus *st = &c->status[node];
    if (st->nreasons != 1 || !st->unresolvable)
        return false;
    int32_t r = st->reasons[0];
    uint32_t set = c->nodes[node].taintset;
    return r == c->reason_unschedulable || r == c->reason_affinity ||
           (c->taint_verdict[set] >= 0 && r == c->taint_reason[set]);
}

/* Re-evaluate one node of a shape entry (filter verdict, status, score parts, index). A
 * node the shape failed for a fixed reason keeps that verdict without evaluating it. */
static bool shape_update(gs_cluster *c, gs_shape_cache *e, const gs_score_ctx *sc, uint32_t pod,
                         uint32_t node)
{
    if (e->ver[node] && e->ok[node] == OK_STATIC) {
        e->ver[node] = c->nver[node] + 1;
        return false;
    }
    bool was_ok = e->ver[node] && e->ok[node] == OK_FEASIBLE;
    int64_t old_t = was_ok && !e->noindex ? e->ns[node].base + e->cls_norm[e->cls[node]] : INT64_MIN;
    bool ok = eval_node(c, sc, pod, node, &e->ns[node]);
    e->ok[node] = ok ? OK_FEASIBLE : failed_static(c, node) ? OK_STATIC : OK_INFEASIBLE;
    e->st[node] = c->status[node];
    e->ver[node] = c->nver[node] + 1;
    if (!e->noindex)
        index_note(e, c->nnodes, node, was_ok, ok, old_t);
    return ok;
}

/* Bring a shape entry up to date: the nodes logged since its position, or every node
 * whose version moved when it is further behind than the log reaches. */
static void shape_catch_up(gs_cluster *c, gs_shape_cache *e, const gs_score_ctx *sc, uint32_t pod)
{
    const uint32_t *nver = c->nver;
    const uint32_t *ver = e->ver;
    if (e->logpos == FULL_SCAN || e->logpos < c->clog_base) {
        for (uint32_t node = 0; node < c->nnodes; node++)
            if (ver[node] != nver[node] + 1)
                shape_update(c, e, sc, pod, node);
    } else {
        const uint32_t *log = c->clog;
        for (uint64_t i = e->logpos - c->clog_base, n = c->nclog; i < n; i++) {
            if (i + 8 < n) { /* the log is in bind order: nodes all over the arrays */
                __builtin_prefetch(&ver[log[i + 8]]);
                __builtin_prefetch(&nver[log[i + 8]]);
            }
            uint32_t node = log[i];
            if (ver[node] != nver[node] + 1)
                shape_update(c, e, sc, pod, node);
        }
    }
    e->logpos = c->clog_base + c->nclog;
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
    if (c->dra_error) {
        /* a filter error ends the attempt: the message is the error, no preemption */
        p->state = GS_PS_PENDING;
        uint32_t d = gs__new_decision(c, pod, GS_OUT_UNSCHEDULABLE);
        if (d != UINT32_MAX) {
            c->decisions.v[d].order = order;
            c->decisions.v[d].message = c->dra_error;
        }
        return false;
    }
    gs_reason_count *rc = NULL;
    uint32_t nrc = 0;
    char *fe = gs__fit_error(c, c->nnodes, &rc, &nrc);
    const char *pmsg = NULL;
    uint32_t *victims = NULL, nvictims = 0;
    int32_t node = -1;
    if (c->cfg.preemption && !c->cfg.evaluate_only)
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

/* Bind pod on the chosen node. The devices are recomputed there (a cached verdict may be
 * older than the scratch assignment, which other shapes reuse). */
static bool bind_chosen(gs_cluster *c, uint32_t pod, uint32_t best, int64_t best_score,
                        uint32_t nf, uint32_t order)
{
    gs_cpod *p = &c->pods[pod];
    gs_gpu_assign a;
    memset(&a, 0, sizeof a);
    if (p->has_gpu && gs_gpu_fit_node(&c->nodes[best].gpus, &p->gpu, &a) != GS_FIT_OK) {
        gs__add_warning(c, "internal: cached GPU verdict stale for pod %s", p->obj->meta.name);
        return fail_pod(c, pod, order);
    }
    record_bind(c, pod, best, &a, best_score, nf, order);
    return true;
}

/* A PreFilter plugin said Unschedulable (DynamicResources: claims missing, being
 * deleted, in use, a device class missing): every node carries that status and the
 * FitError prints the PreFilter message instead of the per-node histogram. */
static bool fail_prefilter(gs_cluster *c, uint32_t pod, uint32_t order, const char *msg)
{
    gs_cpod *p = &c->pods[pod];
    p->state = GS_PS_PENDING;
    uint32_t d = gs__new_decision(c, pod, GS_OUT_UNSCHEDULABLE);
    if (d == UINT32_MAX)
        return false;
    gs_decision *dec = &c->decisions.v[d];
    dec->order = order;
    /* UnschedulableAndUnresolvable on every node: DefaultPreemption finds nothing to try */
    if (c->cfg.preemption)
        dec->message = gs_arena_printf(&c->arena,
                                       "0/%u nodes are available: %s. preemption: 0/%u nodes are available: %u "
                                       "Preemption is not helpful for scheduling.",
                                       c->nnodes, msg, c->nnodes, c->nnodes);
    else
        dec->message = gs_arena_printf(&c->arena, "0/%u nodes are available: %s.", c->nnodes, msg);
    gs_reason_count *rc = gs_arena_alloc(&c->arena, sizeof *rc);
    if (rc && c->nnodes) {
        rc->reason = gs_arena_strdup(&c->arena, msg);
        rc->count = c->nnodes;
        dec->reasons = rc;
        dec->nreasons = 1;
    }
    return false;
}

bool gs__schedule_one(gs_cluster *c, uint32_t pod, uint32_t order)
{
    gs_cpod *p = &c->pods[pod];
    gs__reset_pod_cache(c);
    c->dra_error = NULL;
    if (p->dra != UINT32_MAX && c->dra) {
        char msg[GS_ERR_MSG_MAX];
        c->dra_saved[p->dra] = 0; /* a fresh attempt: its bind allocates anew */
        gs_dra_status st = gs_dra_pod_resolve(c->dra, pod, p->obj, &c->dra_pods[p->dra], msg, sizeof msg);
        if (st != GS_DRA_OK && c->nnodes)
            return fail_prefilter(c, pod, order, msg);
    }
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
    /* pods with claims are evaluated afresh: the DRA state is not in the node versions */
    gs_shape_cache *cache = want >= c->nnodes && !c->cfg.no_shape_cache && p->dra == UINT32_MAX
                                ? shape_cache_get(c, p->shape)
                                : NULL;
    const gs_node_score *ns = c->nscore;
    if (cache) {
        shape_catch_up(c, cache, &sc, pod);
        ns = cache->ns;
        if (!cache->noindex) {
            nf = cache->nfeasible;
            if (nf == 0) {
                memcpy(c->status, cache->st, c->nnodes * sizeof *c->status);
                return fail_pod(c, pod, order);
            }
            index_finish(c, &sc, cache);
            int64_t best_score = 0;
            uint32_t best = index_pick(c, cache, &best_score);
            if (nf == 1)
                best_score = 0; /* one feasible node: not scored */
            return bind_chosen(c, pod, best, best_score, nf, order);
        }
        const uint8_t *cok = cache->ok;
        for (uint32_t node = 0; node < c->nnodes; node++)
            if (cok[node] == OK_FEASIBLE)
                c->feasible[nf++] = node;
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
    return bind_chosen(c, pod, best, best_score, nf, order);
}

bool gs__feasible_cached(gs_cluster *c, uint32_t pod, uint32_t node)
{
    gs_cpod *p = &c->pods[pod];
    gs__pod_cache_for(c, pod);
    gs_shape_cache *cache = c->cfg.no_shape_cache || p->dra != UINT32_MAX ? NULL : shape_cache_get(c, p->shape);
    uint32_t v = c->nver[node] + 1;
    if (cache && cache->ver[node] == v)
        return cache->ok[node] == OK_FEASIBLE;
    gs_score_ctx sc;
    gs__score_prepare(c, pod, &sc);
    if (cache)
        return shape_update(c, cache, &sc, pod, node);
    gs_node_score ns;
    return eval_node(c, &sc, pod, node, &ns);
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
