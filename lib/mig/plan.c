/*
 * plan.c - the MIG planner: which profile each service gets on each GPU model, and which
 * layout each GPU gets so that every replica is hosted with the fewest GPUs, the least
 * idle silicon and the fewest re-partitioned GPUs (docs/mig-planner.md).
 *
 * Model of the problem
 *   Services with the same chosen profile on every model of the pool form one demand
 *   class; a replica needs one instance of its class's profile on the GPU it lands on. A
 *   GPU hosts a "pattern": how many replicas of each class it runs. A pattern is feasible
 *   when its profile counts form a placeable layout (a per-model validity table built
 *   once with gs_mig_layout_fits). Per used GPU the cost is (1 GPU, idle memory, idle
 *   compute, re-partitioned?), idle in 1/8 GPU memory and 1/28 GPU compute units; a GPU
 *   is not re-partitioned when its current layout is known and already contains the
 *   pattern's instances. Costs add up and compare lexicographically, so the objective is
 *   "fewest GPUs, then least idle, then fewest changes".
 *
 * Exact search (pools of <= exact_max_gpus GPUs)
 *   Dynamic programming over (position in the GPU list, remaining demand per class),
 *   memoised in a hash table. GPUs are ordered in blocks of identical GPUs (same model,
 *   same current layout); when a GPU is left unused, the rest of its block is too (any
 *   solution can be permuted that way). On a single-model pool only maximal patterns are
 *   tried (no replica with remaining demand could be added), plus patterns that are
 *   maximal inside the current layout: moving a replica from a later GPU into an earlier
 *   used one never adds a GPU, keeps idle equal (it depends only on the GPU count there)
 *   and cannot add a re-partition in those two cases, so some optimum uses only such
 *   patterns. On mixed-model pools every feasible pattern is tried. Remaining capacity
 *   (instances, memory and compute units) prunes hopeless states. A state budget stops
 *   the search; the planner then falls back to the heuristic.
 *
 * Heuristic (larger pools, or when the budget runs out)
 *   Greedy by patterns: among all groups of identical free GPUs pick the pattern with the
 *   highest fill (memory/8 + compute/7 of the GPU, in common units), preferring a pattern
 *   the current layout already provides; apply it to as many GPUs of the group as demand
 *   allows (it stays the best pattern while demand only shrinks). Then local improvement:
 *   (1) empty the least-filled GPUs by moving their replicas into free room on other used
 *   GPUs; (2) re-solve the least-filled GPUs together with a few unused ones exactly.
 *   The result is compared with the LP lower bound (ceiling of the configuration LP over
 *   maximal layouts), so every heuristic plan states how far from optimal it can be.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mig_int.h"

#define NO_CLASS 0xffffu
#define DP_MAX_CLASSES 32
#define DP_INF UINT64_MAX
#define TAIL_GPUS 8

/* cost packing for the exact search: 16 bits per field, compared as one integer */
#define PACK(g, im, ic, ch) \
    (((uint64_t)(g) << 48) | ((uint64_t)(im) << 32) | ((uint64_t)(ic) << 16) | (uint64_t)(ch))

typedef struct pmodel {
    const gs_mig_model *m;
    int cat;                          /* catalog index */
    gs_mig_table t;
    uint32_t *vlist;                  /* valid non-empty count vectors (table indexes) */
    uint32_t nv;
    uint8_t *vcounts;                 /* nv x GS_MIG_MAX_PROFILES */
    uint16_t mu[GS_MIG_MAX_PROFILES]; /* memory units per profile */
    uint16_t cu[GS_MIG_MAX_PROFILES]; /* compute units per profile */
    uint8_t max_inst;                 /* most instances one GPU can hold */
} pmodel;

typedef struct pclass {
    uint8_t prof[GS_MIG_MAX_CATALOG]; /* per model slot: profile or NO_PROFILE */
    uint32_t demand;
    uint32_t models;                  /* bit per model slot with a profile */
    uint16_t min_mu, min_cu;          /* smallest units over the models */
} pclass;

typedef struct pgpu {
    uint32_t node;
    uint16_t gpu;
    uint8_t model;                    /* slot */
    bool known, enabled;              /* current layout known; MIG on in it */
    uint8_t cur[GS_MIG_MAX_PROFILES];
    uint32_t group;
    uint8_t n;                        /* assigned instances */
    uint16_t cls[GS_MIG_MAX_INST];
} pgpu;

typedef struct planner {
    const gs_mig_plan_input *in;
    gs_error *err;
    pmodel models[GS_MIG_MAX_CATALOG];
    uint32_t nmodels;
    int slot_of[GS_MIG_MAX_CATALOG];
    pclass *cls;
    uint32_t ncls;
    uint32_t *svc_class;              /* per service: class or UINT32_MAX */
    pgpu *g;
    uint32_t ng;
    uint64_t work;
} planner;

/* ================================================================ setup */
static int add_model(planner *P, const gs_mig_model *m)
{
    int cat = gs_mig_model_index(m);
    if (cat < 0 || cat >= GS_MIG_MAX_CATALOG)
        return -1;
    if (P->slot_of[cat] >= 0)
        return P->slot_of[cat];
    pmodel *pm = &P->models[P->nmodels];
    memset(pm, 0, sizeof *pm);
    pm->m = m;
    pm->cat = cat;
    if (gs_mig__table_build(&pm->t, m) != 0)
        return -2;
    uint32_t nv = 0;
    for (uint32_t x = 1; x < pm->t.size; x++)
        nv += pm->t.valid[x];
    pm->vlist = malloc(sizeof *pm->vlist * (nv ? nv : 1));
    pm->vcounts = malloc((size_t)GS_MIG_MAX_PROFILES * (nv ? nv : 1));
    if (!pm->vlist || !pm->vcounts)
        return -2;
    for (uint32_t x = 1; x < pm->t.size; x++) {
        if (!pm->t.valid[x])
            continue;
        uint8_t *c = &pm->vcounts[(size_t)pm->nv * GS_MIG_MAX_PROFILES];
        memset(c, 0, GS_MIG_MAX_PROFILES);
        uint32_t rest = x, n = 0;
        for (uint8_t p = 0; p < pm->t.np; p++) {
            c[p] = (uint8_t)(rest % (m->profiles[p].max_count + 1u));
            rest /= m->profiles[p].max_count + 1u;
            n += c[p];
        }
        if (n > pm->max_inst)
            pm->max_inst = (uint8_t)n;
        pm->vlist[pm->nv++] = x;
    }
    for (uint8_t p = 0; p < m->nprofiles && p < GS_MIG_MAX_PROFILES; p++) {
        pm->mu[p] = (uint16_t)gs_mig__mem_units(m, &m->profiles[p]);
        pm->cu[p] = (uint16_t)gs_mig__compute_units(m, &m->profiles[p]);
    }
    P->slot_of[cat] = (int)P->nmodels;
    return (int)P->nmodels++;
}

static void planner_free(planner *P)
{
    for (uint32_t i = 0; i < P->nmodels; i++) {
        gs_mig__table_free(&P->models[i].t);
        free(P->models[i].vlist);
        free(P->models[i].vcounts);
    }
    free(P->cls);
    free(P->svc_class);
    free(P->g);
}

static int planner_setup(planner *P, const gs_mig_plan_input *in, const gs_mig_plan_opts *o,
                         gs_mig_plan *out)
{
    for (int i = 0; i < GS_MIG_MAX_CATALOG; i++)
        P->slot_of[i] = -1;
    /* models and GPUs */
    P->g = calloc(in->ngpus ? in->ngpus : 1, sizeof *P->g);
    if (!P->g)
        return gs_fail(P->err, GS_ERR_NOMEM, "out of memory");
    for (uint32_t ni = 0; ni < in->nnodes; ni++) {
        const gs_mig_node *nd = &in->nodes[ni];
        if (!nd->model)
            continue;
        int slot = add_model(P, nd->model);
        if (slot == -2)
            return gs_fail(P->err, GS_ERR_NOMEM, "out of memory");
        if (slot < 0)
            return gs_fail(P->err, GS_ERR_INTERNAL, "model %s not in the catalog", nd->model->name);
        for (uint16_t d = 0; d < nd->ngpus; d++) {
            if (P->ng >= in->ngpus)
                return gs_fail(P->err, GS_ERR_INTERNAL, "GPU count mismatch in the inventory");
            pgpu *g = &P->g[P->ng++];
            g->node = ni;
            g->gpu = d;
            g->model = (uint8_t)slot;
            if (nd->current && !o->ignore_current) {
                g->known = true;
                g->enabled = nd->current[d].mig_enabled;
                gs_mig_layout_counts(&nd->current[d], g->cur);
            }
        }
    }
    /* groups of identical GPUs (model, current layout): a group is named by the index of
     * its first GPU; leaders[] lists those first GPUs */
    uint32_t *leaders = malloc(sizeof *leaders * (P->ng ? P->ng : 1));
    uint32_t nleaders = 0;
    if (!leaders)
        return gs_fail(P->err, GS_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < P->ng; i++) {
        pgpu *g = &P->g[i];
        g->group = i;
        for (uint32_t j = nleaders; j-- > 0;) {
            const pgpu *h = &P->g[leaders[j]];
            if (h->model == g->model && h->known == g->known && h->enabled == g->enabled &&
                !memcmp(h->cur, g->cur, sizeof g->cur)) {
                g->group = leaders[j];
                break;
            }
        }
        if (g->group == i)
            leaders[nleaders++] = i;
    }
    free(leaders);
    /* services -> classes */
    P->svc_class = malloc(sizeof *P->svc_class * (in->nservices ? in->nservices : 1));
    P->cls = calloc(in->nservices ? in->nservices : 1, sizeof *P->cls);
    if (!P->svc_class || !P->cls)
        return gs_fail(P->err, GS_ERR_NOMEM, "out of memory");
    for (uint32_t s = 0; s < in->nservices; s++) {
        const gs_mig_service *sv = &in->services[s];
        gs_mig_service_plan *sp = &out->services[s];
        memset(sp->profile, GS_MIG_NO_PROFILE, sizeof sp->profile);
        uint32_t nm;
        const gs_mig_model *all = gs_mig_models(&nm);
        for (uint32_t c = 0; c < nm && c < GS_MIG_MAX_CATALOG; c++)
            sp->profile[c] = gs_mig__choose_profile(&all[c], sv, &sp->mem_estimated[c]);
        pclass k;
        memset(&k, 0, sizeof k);
        memset(k.prof, GS_MIG_NO_PROFILE, sizeof k.prof);
        k.min_mu = k.min_cu = UINT16_MAX;
        for (uint32_t m = 0; m < P->nmodels; m++) {
            k.prof[m] = sp->profile[P->models[m].cat];
            if (k.prof[m] == GS_MIG_NO_PROFILE)
                continue;
            k.models |= 1u << m;
            if (P->models[m].mu[k.prof[m]] < k.min_mu)
                k.min_mu = P->models[m].mu[k.prof[m]];
            if (P->models[m].cu[k.prof[m]] < k.min_cu)
                k.min_cu = P->models[m].cu[k.prof[m]];
        }
        P->svc_class[s] = UINT32_MAX;
        sp->unplaced = sv->replicas;
        if (!k.models || sv->replicas == 0)
            continue;
        uint32_t c;
        for (c = 0; c < P->ncls; c++)
            if (!memcmp(P->cls[c].prof, k.prof, sizeof k.prof))
                break;
        if (c == P->ncls)
            P->cls[P->ncls++] = k;
        P->cls[c].demand += sv->replicas;
        P->svc_class[s] = c;
    }
    return 0;
}

/* ================================================================ per-GPU helpers */
static void gpu_counts(const planner *P, const pgpu *g, uint8_t *counts)
{
    memset(counts, 0, GS_MIG_MAX_PROFILES);
    for (uint8_t i = 0; i < g->n; i++)
        counts[P->cls[g->cls[i]].prof[g->model]]++;
}

static bool subset_of_current(const pgpu *g, const uint8_t *counts)
{
    if (!g->known || !g->enabled)
        return false;
    for (int p = 0; p < GS_MIG_MAX_PROFILES; p++)
        if (counts[p] > g->cur[p])
            return false;
    return true;
}

static void gpu_cost(const planner *P, const pgpu *g, gs_mig_cost *c)
{
    memset(c, 0, sizeof *c);
    if (!g->n)
        return;
    const pmodel *pm = &P->models[g->model];
    uint8_t counts[GS_MIG_MAX_PROFILES];
    gpu_counts(P, g, counts);
    uint32_t mu = 0, cu = 0;
    for (int p = 0; p < pm->t.np; p++) {
        mu += (uint32_t)counts[p] * pm->mu[p];
        cu += (uint32_t)counts[p] * pm->cu[p];
    }
    c->gpus = 1;
    c->idle_mem = mu < 8 ? 8 - mu : 0;
    c->idle_compute = cu < 28 ? 28 - cu : 0;
    c->changed = subset_of_current(g, counts) ? 0 : 1;
}

static void cost_add(gs_mig_cost *a, const gs_mig_cost *b)
{
    a->gpus += b->gpus;
    a->idle_mem += b->idle_mem;
    a->idle_compute += b->idle_compute;
    a->changed += b->changed;
}

static int cost_cmp(const gs_mig_cost *a, const gs_mig_cost *b)
{
    if (a->gpus != b->gpus)
        return a->gpus < b->gpus ? -1 : 1;
    if (a->idle_mem != b->idle_mem)
        return a->idle_mem < b->idle_mem ? -1 : 1;
    if (a->idle_compute != b->idle_compute)
        return a->idle_compute < b->idle_compute ? -1 : 1;
    if (a->changed != b->changed)
        return a->changed < b->changed ? -1 : 1;
    return 0;
}

/* Fill of a pattern in common units (memory/8 and compute/28 of a GPU, weighted so each
 * resource counts up to 224). */
static uint32_t fill_score(const pmodel *pm, const uint8_t *counts)
{
    uint32_t mu = 0, cu = 0;
    for (int p = 0; p < pm->t.np; p++) {
        mu += (uint32_t)counts[p] * pm->mu[p];
        cu += (uint32_t)counts[p] * pm->cu[p];
    }
    return mu * 28 + cu * 8;
}

/* ================================================================ exact search */
typedef struct dp {
    planner *P;
    uint32_t *pos_gpu;      /* position -> GPU index */
    uint32_t n;
    uint32_t K;
    uint32_t *blk_end;      /* position -> first position after its block */
    bool all_patterns;
    /* suffix capacity */
    uint32_t *suf_inst, *suf_models;
    /* memo */
    uint8_t *keys;
    uint64_t *val;
    uint32_t nent, capent;
    uint32_t *slots;
    uint32_t nslots;
    uint64_t budget, evals, eval_budget;
    bool aborted, oom;
    /* per position scratch */
    uint8_t *Dbuf;          /* (n + 1) x K */
    uint8_t *cbuf;          /* (n + 1) x K */
    /* extraction */
    bool finding;
    uint64_t target;
    bool found;
} dp;

static uint32_t key_len(const dp *d) { return 1 + d->K; }

static uint64_t hash_key(const uint8_t *k, uint32_t n) { return gs_hash_bytes(k, n); }

static int memo_grow(dp *d)
{
    uint32_t ns = d->nslots ? d->nslots * 2 : 1024;
    uint32_t *slots = calloc(ns, sizeof *slots);
    if (!slots)
        return -1;
    uint32_t kl = key_len(d);
    for (uint32_t e = 0; e < d->nent; e++) {
        uint64_t h = hash_key(&d->keys[(size_t)e * kl], kl);
        uint32_t s = (uint32_t)h & (ns - 1);
        while (slots[s])
            s = (s + 1) & (ns - 1);
        slots[s] = e + 1;
    }
    free(d->slots);
    d->slots = slots;
    d->nslots = ns;
    return 0;
}

/* Find the entry for key; *slot_out gets the empty slot when absent. */
static int64_t memo_find(const dp *d, const uint8_t *key, uint32_t *slot_out)
{
    uint32_t kl = key_len(d);
    uint32_t s = (uint32_t)hash_key(key, kl) & (d->nslots - 1);
    while (d->slots[s]) {
        uint32_t e = d->slots[s] - 1;
        if (!memcmp(&d->keys[(size_t)e * kl], key, kl))
            return e;
        s = (s + 1) & (d->nslots - 1);
    }
    *slot_out = s;
    return -1;
}

static int memo_put(dp *d, const uint8_t *key, uint64_t v)
{
    if ((d->nent + 1) * 2 > d->nslots && memo_grow(d) != 0)
        return -1;
    uint32_t kl = key_len(d), slot = 0;
    if (memo_find(d, key, &slot) >= 0)
        return 0;
    if (d->nent == d->capent) {
        uint32_t nc = d->capent ? d->capent * 2 : 4096;
        uint8_t *k = realloc(d->keys, (size_t)nc * kl);
        if (!k)
            return -1;
        d->keys = k;
        uint64_t *v2 = realloc(d->val, sizeof *v2 * nc);
        if (!v2)
            return -1;
        d->val = v2;
        d->capent = nc;
    }
    memcpy(&d->keys[(size_t)d->nent * kl], key, kl);
    d->val[d->nent] = v;
    d->slots[slot] = ++d->nent;
    return 0;
}

static uint64_t dp_solve(dp *d, uint32_t pos, const uint8_t *D);

/* A lower bound on the GPUs demand D needs: memory, compute and instance counts, each
 * with the most favourable model per class. */
static uint32_t gpus_needed(const dp *d, const uint8_t *D)
{
    uint64_t mu = 0, cu = 0, n = 0;
    uint32_t max_inst = 1;
    for (uint32_t m = 0; m < d->P->nmodels; m++)
        if (d->P->models[m].max_inst > max_inst)
            max_inst = d->P->models[m].max_inst;
    for (uint32_t k = 0; k < d->K; k++) {
        if (!D[k])
            continue;
        const pclass *c = &d->P->cls[k];
        mu += (uint64_t)D[k] * c->min_mu;
        cu += (uint64_t)D[k] * c->min_cu;
        n += D[k];
    }
    uint64_t g = (mu + 7) / 8;
    if ((cu + 27) / 28 > g)
        g = (cu + 27) / 28;
    if ((n + max_inst - 1) / max_inst > g)
        g = (n + max_inst - 1) / max_inst;
    return (uint32_t)g;
}

typedef struct enum_ctx {
    dp *d;
    uint32_t pos;
    const uint8_t *D;
    uint8_t *c;
    const pgpu *g;
    const pmodel *pm;
    uint8_t counts[GS_MIG_MAX_PROFILES];
    uint32_t idx, mu, cu, ninst;
    uint64_t best;
    uint8_t act[DP_MAX_CLASSES]; /* classes with demand left and a profile on this model */
    uint8_t prof[DP_MAX_CLASSES];
    uint32_t nact;
} enum_ctx;

/* Fill the active class list of x (and zero the pattern). */
static void enum_begin(enum_ctx *x)
{
    dp *d = x->d;
    memset(x->c, 0, d->K);
    x->nact = 0;
    for (uint32_t k = 0; k < d->K; k++) {
        uint8_t p = d->P->cls[k].prof[x->g->model];
        if (x->D[k] && p != GS_MIG_NO_PROFILE) {
            x->act[x->nact] = (uint8_t)k;
            x->prof[x->nact++] = p;
        }
    }
}

/* Could one more replica of any class with remaining demand join this pattern? limit:
 * NULL for the validity table alone, else per-profile caps (the current layout). */
static bool can_grow(const enum_ctx *x, const uint8_t *limit)
{
    const pmodel *pm = x->pm;
    for (uint32_t i = 0; i < x->nact; i++) {
        uint32_t k = x->act[i];
        if (x->c[k] >= x->D[k])
            continue;
        uint8_t p = x->prof[i];
        if (limit) {
            if (x->counts[p] + 1 <= limit[p])
                return true;
        } else if (x->counts[p] + 1u <= pm->m->profiles[p].max_count &&
                   pm->t.valid[x->idx + pm->t.stride[p]]) {
            return true;
        }
    }
    return false;
}

static void enum_leaf(enum_ctx *x)
{
    dp *d = x->d;
    if (x->ninst == 0 || d->aborted)
        return;
    bool subset = subset_of_current(x->g, x->counts);
    if (!d->all_patterns) {
        bool maximal = !can_grow(x, NULL);
        bool maximal_keep = subset && !can_grow(x, x->g->cur);
        if (!maximal && !maximal_keep)
            return;
    }
    if (++d->evals > d->eval_budget) {
        d->aborted = true;
        return;
    }
    uint64_t cost = PACK(1, x->mu < 8 ? 8 - x->mu : 0, x->cu < 28 ? 28 - x->cu : 0, subset ? 0 : 1);
    uint8_t *Dn = &d->Dbuf[(size_t)(x->pos + 1) * d->K];
    memcpy(Dn, x->D, d->K);
    for (uint32_t i = 0; i < x->nact; i++)
        Dn[x->act[i]] = (uint8_t)(Dn[x->act[i]] - x->c[x->act[i]]);
    /* bound: the rest needs at least lb GPUs; skip what cannot beat the best so far
     * (never while extracting, which must see the exact values) */
    if (!d->finding && x->best != DP_INF && cost + PACK(gpus_needed(d, Dn), 0, 0, 0) >= x->best)
        return;
    uint64_t sub = dp_solve(d, x->pos + 1, Dn);
    if (sub == DP_INF || d->aborted)
        return;
    uint64_t total = cost + sub;
    if (d->finding) {
        if (!d->found && total == d->target) {
            d->found = true;
            /* keep the pattern: cbuf at this position holds it */
        }
        return;
    }
    if (total < x->best)
        x->best = total;
}

/* Enumerate the counts of active class i onwards, most replicas first: full patterns come
 * early and give the bound in enum_leaf something to cut with. The order is fixed, so the
 * extraction walks the same patterns in the same order. */
static void enum_rec(enum_ctx *x, uint32_t i)
{
    dp *d = x->d;
    if (d->aborted || (d->finding && d->found))
        return;
    if (i == x->nact) {
        enum_leaf(x);
        return;
    }
    uint32_t k = x->act[i];
    uint8_t p = x->prof[i];
    const pmodel *pm = x->pm;
    uint32_t added = 0;
    while (x->c[k] < x->D[k] && x->counts[p] < pm->m->profiles[p].max_count &&
           pm->t.valid[x->idx + pm->t.stride[p]]) {
        x->c[k]++;
        x->counts[p]++;
        x->idx += pm->t.stride[p];
        x->mu += pm->mu[p];
        x->cu += pm->cu[p];
        x->ninst++;
        added++;
    }
    for (;;) {
        enum_rec(x, i + 1);
        if (d->finding && d->found)
            return; /* leave c[] as the found pattern */
        if (d->aborted || added == 0)
            break;
        x->c[k]--;
        x->counts[p]--;
        x->idx -= pm->t.stride[p];
        x->mu -= pm->mu[p];
        x->cu -= pm->cu[p];
        x->ninst--;
        added--;
    }
    x->counts[p] -= (uint8_t)added;
    x->idx -= added * pm->t.stride[p];
    x->mu -= added * pm->mu[p];
    x->cu -= added * pm->cu[p];
    x->ninst -= added;
    x->c[k] = 0;
}

/* Remaining capacity from position pos cannot hold D: prune. */
static bool hopeless(const dp *d, uint32_t pos, const uint8_t *D)
{
    uint32_t need = 0;
    uint64_t mu = 0, cu = 0;
    for (uint32_t k = 0; k < d->K; k++) {
        if (!D[k])
            continue;
        const pclass *c = &d->P->cls[k];
        if (!(c->models & d->suf_models[pos]))
            return true;
        need += D[k];
        mu += (uint64_t)D[k] * c->min_mu;
        cu += (uint64_t)D[k] * c->min_cu;
    }
    uint32_t left = d->n - pos;
    return need > d->suf_inst[pos] || mu > 8ull * left || cu > 28ull * left;
}

static uint64_t dp_solve(dp *d, uint32_t pos, const uint8_t *D)
{
    bool zero = true;
    for (uint32_t k = 0; k < d->K && zero; k++)
        zero = D[k] == 0;
    if (zero)
        return 0;
    if (pos >= d->n || hopeless(d, pos, D))
        return DP_INF;
    uint8_t key[1 + DP_MAX_CLASSES];
    key[0] = (uint8_t)pos;
    memcpy(key + 1, D, d->K);
    uint32_t slot;
    if (d->nslots) {
        int64_t e = memo_find(d, key, &slot);
        if (e >= 0)
            return d->val[e];
    }
    if (d->finding) /* extraction only revisits solved states */
        return DP_INF;
    if (d->nent >= d->budget) {
        d->aborted = true;
        return DP_INF;
    }
    enum_ctx x;
    memset(&x, 0, sizeof x);
    x.d = d;
    x.pos = pos;
    x.D = D;
    x.c = &d->cbuf[(size_t)pos * d->K];
    x.g = &d->P->g[d->pos_gpu[pos]];
    x.pm = &d->P->models[x.g->model];
    x.best = DP_INF;
    enum_begin(&x);
    enum_rec(&x, 0);
    if (d->aborted)
        return DP_INF;
    /* leave this GPU and the rest of its block unused */
    uint64_t skip = dp_solve(d, d->blk_end[pos], D);
    if (d->aborted)
        return DP_INF;
    if (skip < x.best)
        x.best = skip;
    if (memo_put(d, key, x.best) != 0) {
        d->oom = d->aborted = true;
        return DP_INF;
    }
    return x.best;
}

/* Walk the memo from the root and write each GPU's pattern into P->g[].cls. */
static void dp_extract(dp *d, const uint8_t *D0)
{
    uint8_t *D = malloc(d->K ? d->K : 1);
    if (!D)
        return;
    memcpy(D, D0, d->K);
    uint32_t pos = 0;
    while (pos < d->n) {
        uint64_t v = dp_solve(d, pos, D);
        if (v == 0 || v == DP_INF)
            break;
        enum_ctx x;
        memset(&x, 0, sizeof x);
        x.d = d;
        x.pos = pos;
        x.D = D;
        x.c = &d->cbuf[(size_t)pos * d->K];
        x.g = &d->P->g[d->pos_gpu[pos]];
        x.pm = &d->P->models[x.g->model];
        x.best = DP_INF;
        d->finding = true;
        d->found = false;
        d->target = v;
        enum_begin(&x);
        enum_rec(&x, 0);
        d->finding = false;
        if (!d->found) {
            pos = d->blk_end[pos]; /* the unused branch */
            continue;
        }
        pgpu *g = &d->P->g[d->pos_gpu[pos]];
        g->n = 0;
        for (uint32_t k = 0; k < d->K; k++) {
            for (uint8_t r = 0; r < x.c[k]; r++)
                g->cls[g->n++] = (uint16_t)k;
            D[k] = (uint8_t)(D[k] - x.c[k]);
        }
        pos++;
    }
    free(D);
}

static void dp_free(dp *d)
{
    free(d->pos_gpu);
    free(d->blk_end);
    free(d->suf_inst);
    free(d->suf_models);
    free(d->keys);
    free(d->val);
    free(d->slots);
    free(d->Dbuf);
    free(d->cbuf);
}

/*
 * Exact search over the GPUs `gpus` (n of them) for demand D (K classes). On success the
 * chosen patterns are written into those GPUs (others untouched) and 1 is returned; 0
 * when the demand cannot be hosted; -1 when the budget ran out (GPUs untouched); -2 OOM.
 */
static int exact_solve(planner *P, const uint32_t *gpus, uint32_t n, const uint32_t *D32,
                       uint64_t budget, bool maximal_only, uint64_t *states)
{
    dp d;
    memset(&d, 0, sizeof d);
    d.P = P;
    d.K = P->ncls;
    d.n = n;
    d.budget = budget;
    d.eval_budget = budget * 16;
    if (d.K > DP_MAX_CLASSES || n > 255)
        return -1;
    uint8_t D[DP_MAX_CLASSES];
    uint64_t total = 0;
    for (uint32_t k = 0; k < d.K; k++) {
        if (D32[k] > 255)
            return -1;
        D[k] = (uint8_t)D32[k];
        total += D32[k];
    }
    int rc = -2;
    d.pos_gpu = malloc(sizeof *d.pos_gpu * (n ? n : 1));
    d.blk_end = malloc(sizeof *d.blk_end * (n ? n : 1));
    d.suf_inst = calloc(n + 1, sizeof *d.suf_inst);
    d.suf_models = calloc(n + 1, sizeof *d.suf_models);
    d.Dbuf = calloc((size_t)(n + 2) * (d.K ? d.K : 1), 1);
    d.cbuf = calloc((size_t)(n + 2) * (d.K ? d.K : 1), 1);
    if (!d.pos_gpu || !d.blk_end || !d.suf_inst || !d.suf_models || !d.Dbuf || !d.cbuf)
        goto out;
    /* order: blocks of identical GPUs, blocks by first appearance */
    uint32_t k2 = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t grp = P->g[gpus[i]].group;
        bool seen = false;
        for (uint32_t j = 0; j < i && !seen; j++)
            seen = P->g[gpus[j]].group == grp;
        if (seen)
            continue;
        for (uint32_t j = i; j < n; j++)
            if (P->g[gpus[j]].group == grp)
                d.pos_gpu[k2++] = gpus[j];
    }
    uint32_t models_mask = 0;
    for (uint32_t i = n; i-- > 0;) {
        const pgpu *g = &P->g[d.pos_gpu[i]];
        d.blk_end[i] = (i + 1 < n && P->g[d.pos_gpu[i + 1]].group == g->group) ? d.blk_end[i + 1]
                                                                              : i + 1;
        d.suf_inst[i] = d.suf_inst[i + 1] + P->models[g->model].max_inst;
        d.suf_models[i] = d.suf_models[i + 1] | (1u << g->model);
        models_mask |= 1u << g->model;
    }
    d.all_patterns = !maximal_only && (models_mask & (models_mask - 1)) != 0;
    if (total > d.suf_inst[0]) {
        rc = 0;
        goto out;
    }
    if (memo_grow(&d) != 0)
        goto out;
    uint64_t v = dp_solve(&d, 0, D);
    if (states)
        *states += d.nent;
    if (d.oom)
        goto out;
    if (d.aborted) {
        rc = -1;
        goto out;
    }
    if (v == DP_INF) {
        rc = 0;
        goto out;
    }
    for (uint32_t i = 0; i < n; i++)
        P->g[gpus[i]].n = 0;
    dp_extract(&d, D);
    rc = 1;
out:
    dp_free(&d);
    return rc;
}

/* ================================================================ greedy */
typedef struct group {
    uint32_t model;
    uint32_t *gpus;   /* inventory order */
    uint32_t n, next; /* next free position */
} group;

/* Best pattern for a group given aggregate demand per profile (avail). keep: only
 * patterns inside the current layout. Returns the vlist index or -1. */
static int best_pattern(const planner *P, const pgpu *lead, const uint32_t *avail, bool keep,
                        uint32_t *score_out)
{
    const pmodel *pm = &P->models[lead->model];
    int best = -1;
    uint32_t best_score = 0;
    for (uint32_t v = 0; v < pm->nv; v++) {
        const uint8_t *c = &pm->vcounts[(size_t)v * GS_MIG_MAX_PROFILES];
        bool ok = true;
        for (int p = 0; p < pm->t.np && ok; p++)
            ok = c[p] <= avail[p] && (!keep || c[p] <= lead->cur[p]);
        if (!ok)
            continue;
        uint32_t s = fill_score(pm, c);
        if (s > best_score) {
            best_score = s;
            best = (int)v;
        }
    }
    *score_out = best_score;
    return best;
}

/* Demand of class k as seen by model m: per_model demand is a K x M matrix (the LP's split
 * of each class over the models), else one global entry per class. */
static inline uint32_t *dem(const planner *P, uint32_t *D, bool per_model, uint32_t k, uint32_t m)
{
    return per_model ? &D[(size_t)k * P->nmodels + m] : &D[k];
}

static void model_avail(const planner *P, uint32_t model, uint32_t *D, bool per_model,
                        uint32_t *avail)
{
    memset(avail, 0, sizeof *avail * GS_MIG_MAX_PROFILES);
    for (uint32_t k = 0; k < P->ncls; k++) {
        uint8_t p = P->cls[k].prof[model];
        uint32_t d = *dem(P, D, per_model, k, model);
        if (p != GS_MIG_NO_PROFILE && d) {
            uint64_t s = (uint64_t)avail[p] + d;
            avail[p] = s > 255 ? 255 : (uint32_t)s;
        }
    }
}

/* Give GPU g the pattern c (profile counts), splitting each profile among the classes
 * that use it, largest remaining demand first. */
static void assign_pattern(planner *P, pgpu *g, const uint8_t *c, uint32_t *D, bool per_model)
{
    g->n = 0;
    for (int p = 0; p < GS_MIG_MAX_PROFILES; p++) {
        for (uint8_t r = 0; r < c[p]; r++) {
            uint32_t best = UINT32_MAX, best_d = 0;
            for (uint32_t k = 0; k < P->ncls; k++) {
                uint32_t d = *dem(P, D, per_model, k, g->model);
                if (P->cls[k].prof[g->model] == p && d && (best == UINT32_MAX || d > best_d)) {
                    best = k;
                    best_d = d;
                }
            }
            if (best == UINT32_MAX)
                break;
            (*dem(P, D, per_model, best, g->model))--;
            g->cls[g->n++] = (uint16_t)best;
        }
    }
}

/* keep_bias (in eighths): a pattern the current layout already has is preferred when its
 * fill is at least keep_bias/8 of the best new pattern's. 8 = only on ties. */
static int greedy(planner *P, uint32_t *D, bool per_model, uint32_t keep_bias)
{
    group *gr = calloc(P->ng ? P->ng : 1, sizeof *gr);
    uint32_t *pool = malloc(sizeof *pool * (P->ng ? P->ng : 1));
    uint32_t ngr = 0;
    if (!gr || !pool) {
        free(gr);
        free(pool);
        return -1;
    }
    /* groups: GPUs in inventory order, each group a contiguous run of `pool` */
    uint32_t *count = calloc(P->ng ? P->ng : 1, sizeof *count);
    uint32_t *first = malloc(sizeof *first * (P->ng ? P->ng : 1));
    if (!count || !first) {
        free(gr);
        free(pool);
        free(count);
        free(first);
        return -1;
    }
    for (uint32_t i = 0; i < P->ng; i++)
        count[P->g[i].group]++;
    uint32_t off = 0;
    for (uint32_t i = 0; i < P->ng; i++) {
        if (!count[i])
            continue;
        first[i] = ngr;
        gr[ngr].model = P->g[i].model;
        gr[ngr].gpus = &pool[off];
        off += count[i];
        ngr++;
    }
    for (uint32_t i = 0; i < P->ng; i++) {
        group *g = &gr[first[P->g[i].group]];
        if (P->g[i].n == 0)
            g->gpus[g->n++] = i;
    }
    free(count);
    free(first);

    uint32_t avail[GS_MIG_MAX_CATALOG][GS_MIG_MAX_PROFILES];
    for (;;) {
        for (uint32_t m = 0; m < P->nmodels; m++)
            model_avail(P, m, D, per_model, avail[m]);
        int best_g = -1, best_v = -1;
        uint32_t best_score = 0;
        bool best_keep = false;
        for (uint32_t i = 0; i < ngr; i++) {
            group *g = &gr[i];
            if (g->next >= g->n)
                continue;
            const pgpu *lead = &P->g[g->gpus[g->next]];
            uint32_t s_any, s_keep = 0;
            int v_any = best_pattern(P, lead, avail[g->model], false, &s_any);
            int v_keep = -1;
            if (lead->known && lead->enabled)
                v_keep = best_pattern(P, lead, avail[g->model], true, &s_keep);
            P->work++;
            bool keep = v_keep >= 0 && s_keep * 8 >= s_any * keep_bias;
            uint32_t s = keep ? s_keep : s_any;
            int v = keep ? v_keep : v_any;
            if (v < 0)
                continue;
            if (s > best_score || (s == best_score && keep && !best_keep)) {
                best_score = s;
                best_g = (int)i;
                best_v = v;
                best_keep = keep;
            }
        }
        if (best_g < 0)
            break;
        group *g = &gr[best_g];
        const pmodel *pm = &P->models[g->model];
        const uint8_t *c = &pm->vcounts[(size_t)best_v * GS_MIG_MAX_PROFILES];
        /* apply while demand still covers the pattern */
        while (g->next < g->n) {
            model_avail(P, g->model, D, per_model, avail[g->model]);
            bool ok = true;
            for (int p = 0; p < pm->t.np && ok; p++)
                ok = c[p] <= avail[g->model][p];
            if (!ok)
                break;
            assign_pattern(P, &P->g[g->gpus[g->next++]], c, D, per_model);
        }
    }
    free(gr);
    free(pool);
    return 0;
}

/* ================================================================ local improvement */
static uint32_t gpu_fill(const planner *P, const pgpu *g)
{
    uint8_t counts[GS_MIG_MAX_PROFILES];
    gpu_counts(P, g, counts);
    return fill_score(&P->models[g->model], counts);
}

typedef struct fill_rank {
    uint32_t gpu, fill;
} fill_rank;

static int rank_cmp(const void *a, const void *b)
{
    const fill_rank *x = a, *y = b;
    if (x->fill != y->fill)
        return x->fill < y->fill ? -1 : 1;
    return (x->gpu < y->gpu) ? 1 : (x->gpu > y->gpu) ? -1 : 0; /* later GPUs first */
}

/* Used GPUs, least filled first. Returns the count; *out is malloc'ed. */
static uint32_t used_by_fill(const planner *P, fill_rank **out)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < P->ng; i++)
        n += P->g[i].n > 0;
    fill_rank *r = malloc(sizeof *r * (n ? n : 1));
    if (!r) {
        *out = NULL;
        return 0;
    }
    n = 0;
    for (uint32_t i = 0; i < P->ng; i++)
        if (P->g[i].n)
            r[n++] = (fill_rank){i, gpu_fill(P, &P->g[i])};
    qsort(r, n, sizeof *r, rank_cmp);
    *out = r;
    return n;
}

/* (1) Try to empty GPU `victim` by moving each of its replicas into room on other used
 * GPUs (best fit: the fullest GPU that still takes it). All or nothing. */
static bool try_empty(planner *P, uint32_t victim, const fill_rank *used, uint32_t nused)
{
    pgpu *v = &P->g[victim];
    uint16_t moved_to[GS_MIG_MAX_INST];
    uint32_t targets[GS_MIG_MAX_INST];
    uint8_t nmoved = 0;
    bool ok = true;
    for (uint8_t i = 0; i < v->n && ok; i++) {
        const pclass *c = &P->cls[v->cls[i]];
        uint32_t best = UINT32_MAX, best_fill = 0;
        for (uint32_t u = 0; u < nused; u++) {
            uint32_t h = used[u].gpu;
            pgpu *t = &P->g[h];
            if (h == victim || !t->n || t->n >= GS_MIG_MAX_INST)
                continue;
            uint8_t p = c->prof[t->model];
            if (p == GS_MIG_NO_PROFILE)
                continue;
            const pmodel *pm = &P->models[t->model];
            uint8_t counts[GS_MIG_MAX_PROFILES];
            gpu_counts(P, t, counts);
            if (counts[p] + 1u > pm->m->profiles[p].max_count)
                continue;
            counts[p]++;
            if (!pm->t.valid[gs_mig__table_index(&pm->t, counts)])
                continue;
            uint32_t f = fill_score(pm, counts);
            if (best == UINT32_MAX || f > best_fill) {
                best = h;
                best_fill = f;
            }
        }
        P->work += nused;
        if (best == UINT32_MAX) {
            ok = false;
            break;
        }
        pgpu *t = &P->g[best];
        t->cls[t->n++] = v->cls[i];
        targets[nmoved] = best;
        moved_to[nmoved++] = v->cls[i];
    }
    if (!ok) {
        /* roll back: remove the moved replicas (the last instance of each target) */
        while (nmoved) {
            nmoved--;
            pgpu *t = &P->g[targets[nmoved]];
            for (int j = t->n - 1; j >= 0; j--) {
                if (t->cls[j] == moved_to[nmoved]) {
                    t->cls[j] = t->cls[t->n - 1];
                    t->n--;
                    break;
                }
            }
        }
        return false;
    }
    v->n = 0;
    return true;
}

static void improve_empty(planner *P)
{
    fill_rank *used;
    uint32_t nused = used_by_fill(P, &used);
    if (!used)
        return;
    uint32_t tries = nused < 256 ? nused : 256;
    for (uint32_t i = 0; i < tries; i++)
        if (P->g[used[i].gpu].n)
            try_empty(P, used[i].gpu, used, nused);
    free(used);
}

static void pool_cost(const planner *P, const uint32_t *gpus, uint32_t n, gs_mig_cost *c)
{
    memset(c, 0, sizeof *c);
    for (uint32_t i = 0; i < n; i++) {
        gs_mig_cost x;
        gpu_cost(P, &P->g[gpus[i]], &x);
        cost_add(c, &x);
    }
}

/* (2) Re-solve the least-filled used GPUs plus a few unused ones exactly (at most 16 in
 * all). With `extra` (per-class replicas nothing hosts yet) this is the repair of an
 * incomplete greedy plan: the pool starts with unused GPUs, and any solution that hosts
 * everything is taken. Returns 1 when the pool was re-planned, 0 when not, -1 on OOM. */
static int improve_tail(planner *P, uint64_t budget, uint64_t *states, const uint32_t *extra)
{
    fill_rank *used;
    uint32_t nused = used_by_fill(P, &used);
    if (!used)
        return -1;
    uint32_t pool[16];
    uint32_t n = 0;
    uint32_t *D = calloc(P->ncls ? P->ncls : 1, sizeof *D);
    pgpu *saved = malloc(sizeof *saved * 16);
    if (!D || !saved) {
        free(used);
        free(D);
        free(saved);
        return -1;
    }
    uint32_t max_used = extra ? 16 : TAIL_GPUS;
    /* unused GPUs: at most 2 per group, in inventory order (first when repairing) */
    for (int pass = extra ? 0 : 1; pass < 3; pass++) {
        if (pass == 1) {
            for (uint32_t i = 0; i < nused && n < 16 && i < max_used; i++)
                pool[n++] = used[i].gpu;
            continue;
        }
        if (pass == 2 && extra)
            break;
        for (uint32_t i = 0; i < P->ng && n < 16; i++) {
            if (P->g[i].n)
                continue;
            uint32_t same = 0;
            for (uint32_t j = 0; j < n; j++)
                same += !P->g[pool[j]].n && P->g[pool[j]].group == P->g[i].group;
            if (same < 2)
                pool[n++] = i;
        }
    }
    free(used);
    gs_mig_cost before;
    pool_cost(P, pool, n, &before);
    for (uint32_t i = 0; i < n; i++) {
        saved[i] = P->g[pool[i]];
        for (uint8_t r = 0; r < P->g[pool[i]].n; r++)
            D[P->g[pool[i]].cls[r]]++;
    }
    for (uint32_t k = 0; extra && k < P->ncls; k++)
        D[k] += extra[k];
    int rc = exact_solve(P, pool, n, D, budget, true, states);
    if (rc == 1 && !extra) {
        gs_mig_cost after;
        pool_cost(P, pool, n, &after);
        if (cost_cmp(&after, &before) >= 0)
            rc = 0;
    }
    if (rc != 1)
        for (uint32_t i = 0; i < n; i++)
            P->g[pool[i]] = saved[i];
    free(D);
    free(saved);
    return rc == -2 ? -1 : rc == 1 ? 1 : 0;
}

static void total_cost(const planner *P, gs_mig_cost *c);

/* (3) Fewest re-partitions for the chosen patterns: patterns of one model can move to any
 * GPU of that model without changing GPUs used or idle silicon, so match them to GPUs whose
 * current layout already contains them. Max flow: pattern types (profile counts) ->
 * groups of identical GPUs (edge when the group's current layout contains the type) ->
 * sink (group size). Matched patterns go to those groups' GPUs, the rest to the remaining
 * GPUs of the model in inventory order. Exact for the given set of patterns. */
typedef struct ptype {
    uint8_t counts[GS_MIG_MAX_PROFILES];
    uint32_t n;
} ptype;

static int rematch_model(planner *P, uint32_t m)
{
    uint32_t ng = 0, nt = 0;
    for (uint32_t i = 0; i < P->ng; i++)
        ng += P->g[i].model == m;
    if (!ng)
        return 0;
    uint32_t *gpus = malloc(sizeof *gpus * ng);
    ptype *types = calloc(ng, sizeof *types);
    uint32_t *type_of = malloc(sizeof *type_of * ng);   /* per model GPU: its pattern type */
    pgpu *payload = malloc(sizeof *payload * ng);
    uint32_t *groups = malloc(sizeof *groups * ng);     /* distinct group ids */
    uint32_t *gsize = calloc(ng, sizeof *gsize);
    bool *taken = calloc(ng, sizeof *taken);
    gs_mig_flow f;
    memset(&f, 0, sizeof f);
    int rc = -1;
    if (!gpus || !types || !type_of || !payload || !groups || !gsize || !taken)
        goto out;
    uint32_t k = 0, ngr = 0;
    for (uint32_t i = 0; i < P->ng; i++) {
        if (P->g[i].model != m)
            continue;
        gpus[k] = i;
        type_of[k] = UINT32_MAX;
        payload[k] = P->g[i];
        uint32_t gr;
        for (gr = 0; gr < ngr; gr++)
            if (groups[gr] == P->g[i].group)
                break;
        if (gr == ngr)
            groups[ngr++] = P->g[i].group;
        gsize[gr]++;
        if (P->g[i].n) {
            uint8_t c[GS_MIG_MAX_PROFILES];
            gpu_counts(P, &P->g[i], c);
            uint32_t t;
            for (t = 0; t < nt; t++)
                if (!memcmp(types[t].counts, c, sizeof c))
                    break;
            if (t == nt)
                memcpy(types[nt++].counts, c, sizeof c);
            types[t].n++;
            type_of[k] = t;
        }
        k++;
    }
    /* nodes: 0 source, 1 sink, 2.. types, then groups */
    if (gs_mig__flow_init(&f, 2 + nt + ngr) != 0)
        goto out;
    int64_t *tg = malloc(sizeof *tg * ((size_t)nt * ngr + 1));
    if (!tg)
        goto out;
    for (uint32_t t = 0; t < nt; t++)
        if (gs_mig__flow_edge(&f, 0, 2 + t, types[t].n) < 0) {
            free(tg);
            goto out;
        }
    for (uint32_t t = 0; t < nt; t++)
        for (uint32_t gr = 0; gr < ngr; gr++) {
            tg[(size_t)t * ngr + gr] = -1;
            if (subset_of_current(&P->g[groups[gr]], types[t].counts))
                tg[(size_t)t * ngr + gr] = gs_mig__flow_edge(&f, 2 + t, 2 + nt + gr, INT64_MAX / 4);
        }
    for (uint32_t gr = 0; gr < ngr; gr++)
        if (gs_mig__flow_edge(&f, 2 + nt + gr, 1, gsize[gr]) < 0) {
            free(tg);
            goto out;
        }
    if (gs_mig__flow_run(&f, 0, 1) < 0) {
        free(tg);
        goto out;
    }
    /* clear the model's GPUs, then place payloads */
    for (uint32_t i = 0; i < ng; i++)
        P->g[gpus[i]].n = 0;
    bool *placed = calloc(ng, sizeof *placed); /* payload index placed */
    if (!placed) {
        free(tg);
        goto out;
    }
    for (uint32_t t = 0; t < nt; t++) {
        for (uint32_t gr = 0; gr < ngr; gr++) {
            int64_t e = tg[(size_t)t * ngr + gr];
            int64_t cnt = e >= 0 ? gs_mig__flow_of(&f, (uint32_t)e) : 0;
            uint32_t pi = 0, gi = 0;
            while (cnt > 0) {
                while (pi < ng && (placed[pi] || type_of[pi] != t))
                    pi++;
                while (gi < ng && (taken[gi] || P->g[gpus[gi]].group != groups[gr]))
                    gi++;
                if (pi >= ng || gi >= ng)
                    break;
                pgpu *dst = &P->g[gpus[gi]];
                dst->n = payload[pi].n;
                memcpy(dst->cls, payload[pi].cls, sizeof dst->cls);
                placed[pi] = taken[gi] = true;
                cnt--;
            }
        }
    }
    /* the rest, in inventory order: unmatched patterns onto GPUs left over */
    uint32_t gi = 0;
    for (uint32_t pi = 0; pi < ng; pi++) {
        if (placed[pi] || type_of[pi] == UINT32_MAX)
            continue;
        while (gi < ng && taken[gi])
            gi++;
        if (gi >= ng)
            break;
        pgpu *dst = &P->g[gpus[gi]];
        dst->n = payload[pi].n;
        memcpy(dst->cls, payload[pi].cls, sizeof dst->cls);
        placed[pi] = taken[gi] = true;
    }
    free(placed);
    free(tg);
    rc = 0;
out:
    gs_mig__flow_free(&f);
    free(gpus);
    free(types);
    free(type_of);
    free(payload);
    free(groups);
    free(gsize);
    free(taken);
    return rc;
}

static int rematch(planner *P)
{
    gs_mig_cost before;
    total_cost(P, &before);
    pgpu *saved = malloc(sizeof *saved * (P->ng ? P->ng : 1));
    if (!saved)
        return -1;
    memcpy(saved, P->g, sizeof *saved * P->ng);
    for (uint32_t m = 0; m < P->nmodels; m++)
        if (rematch_model(P, m) != 0) {
            free(saved);
            return -1;
        }
    gs_mig_cost after;
    total_cost(P, &after);
    if (cost_cmp(&after, &before) > 0) /* cannot happen; keep the old plan if it does */
        memcpy(P->g, saved, sizeof *saved * P->ng);
    free(saved);
    return 0;
}

/* ================================================================ LP lower bound */
/*
 * Returns 0 (bound and, when asked, the LP's flow of each class to each model in flows,
 * K x M), 1 when even the relaxation cannot host the demand, -1 out of memory.
 *
 * min sum x[m,l]  over maximal layouts l of each model m (over the profiles in demand)
 *   avail  m  : sum_l x[m,l]                               <= GPUs of model m
 *   supply m,p: sum_l l_p x[m,l] - sum_{k: prof(k,m)=p} f[k,m] >= 0
 *   demand k  : sum_m f[k,m]                                >= D_k
 * Every integer plan maps onto this (replace each GPU's layout by a maximal one that
 * contains it), so ceil(optimum) bounds the GPUs of any plan from below.
 */
/* The rounded-up LP solution: ceil(x) GPUs per (model, maximal layout). */
typedef struct lp_round {
    uint32_t n;
    uint32_t *model, *v; /* per entry: model slot, vlist index */
    uint32_t *count;     /* ceil(x) */
    uint32_t fractional; /* how many x were not integral */
} lp_round;

static void lp_round_free(lp_round *r)
{
    free(r->model);
    free(r->v);
    free(r->count);
    memset(r, 0, sizeof *r);
}

static int lp_bound(planner *P, const uint32_t *D, uint32_t *lb, double *lpv, double *flows,
                    lp_round *round)
{
    *lb = 0;
    *lpv = 0.0;
    if (flows)
        memset(flows, 0, sizeof *flows * P->ncls * P->nmodels);
    uint32_t gpus_of[GS_MIG_MAX_CATALOG] = {0};
    for (uint32_t i = 0; i < P->ng; i++)
        gpus_of[P->g[i].model]++;
    /* columns */
    uint32_t ncol = 0, nlay[GS_MIG_MAX_CATALOG] = {0};
    uint32_t *lay = NULL; /* per layout column: vlist index */
    uint32_t *lay_model = NULL;
    uint8_t demanded[GS_MIG_MAX_CATALOG][GS_MIG_MAX_PROFILES];
    memset(demanded, 0, sizeof demanded);
    for (uint32_t k = 0; k < P->ncls; k++)
        for (uint32_t m = 0; m < P->nmodels; m++)
            if (D[k] && P->cls[k].prof[m] != GS_MIG_NO_PROFILE)
                demanded[m][P->cls[k].prof[m]] = 1;
    uint32_t total_v = 0;
    for (uint32_t m = 0; m < P->nmodels; m++)
        total_v += P->models[m].nv;
    lay = malloc(sizeof *lay * (total_v ? total_v : 1));
    lay_model = malloc(sizeof *lay_model * (total_v ? total_v : 1));
    if (!lay || !lay_model) {
        free(lay);
        free(lay_model);
        return -1;
    }
    for (uint32_t m = 0; m < P->nmodels; m++) {
        const pmodel *pm = &P->models[m];
        for (uint32_t v = 0; v < pm->nv; v++) {
            const uint8_t *c = &pm->vcounts[(size_t)v * GS_MIG_MAX_PROFILES];
            bool useful = false, maximal = true;
            for (int p = 0; p < pm->t.np; p++) {
                if (c[p] && !demanded[m][p]) {
                    useful = false;
                    maximal = false;
                    break;
                }
                if (c[p])
                    useful = true;
                if (demanded[m][p] && c[p] + 1u <= pm->m->profiles[p].max_count &&
                    pm->t.valid[pm->vlist[v] + pm->t.stride[p]])
                    maximal = false;
            }
            if (!useful || !maximal)
                continue;
            lay[ncol] = v;
            lay_model[ncol] = m;
            ncol++;
            nlay[m]++;
        }
    }
    uint32_t nlayc = ncol;
    /* flow columns */
    uint32_t nflow = 0;
    for (uint32_t k = 0; k < P->ncls; k++)
        if (D[k])
            for (uint32_t m = 0; m < P->nmodels; m++)
                nflow += P->cls[k].prof[m] != GS_MIG_NO_PROFILE;
    ncol += nflow;
    uint32_t nrow = P->nmodels + P->nmodels * GS_MIG_MAX_PROFILES + P->ncls;
    double *A = calloc((size_t)nrow * (ncol ? ncol : 1), sizeof *A);
    double *b = calloc(nrow ? nrow : 1, sizeof *b);
    uint8_t *sense = calloc(nrow ? nrow : 1, 1);
    double *c = calloc(ncol ? ncol : 1, sizeof *c);
    double *x = calloc(ncol ? ncol : 1, sizeof *x);
    int rc = -1;
    if (!A || !b || !sense || !c || !x)
        goto out;
#define AT(r, col) A[(size_t)(r) * ncol + (col)]
    uint32_t row_supply = P->nmodels, row_demand = P->nmodels + P->nmodels * GS_MIG_MAX_PROFILES;
    for (uint32_t m = 0; m < P->nmodels; m++) {
        sense[m] = GS_LP_LE;
        b[m] = gpus_of[m];
        for (int p = 0; p < GS_MIG_MAX_PROFILES; p++)
            sense[row_supply + m * GS_MIG_MAX_PROFILES + (uint32_t)p] = GS_LP_GE;
    }
    for (uint32_t j = 0; j < nlayc; j++) {
        uint32_t m = lay_model[j];
        const uint8_t *cnt = &P->models[m].vcounts[(size_t)lay[j] * GS_MIG_MAX_PROFILES];
        c[j] = 1.0;
        AT(m, j) = 1.0;
        for (int p = 0; p < GS_MIG_MAX_PROFILES; p++)
            AT(row_supply + m * GS_MIG_MAX_PROFILES + (uint32_t)p, j) = cnt[p];
    }
    uint32_t col = nlayc;
    for (uint32_t k = 0; k < P->ncls; k++) {
        sense[row_demand + k] = GS_LP_GE;
        b[row_demand + k] = D[k];
        if (!D[k])
            continue;
        for (uint32_t m = 0; m < P->nmodels; m++) {
            uint8_t p = P->cls[k].prof[m];
            if (p == GS_MIG_NO_PROFILE)
                continue;
            AT(row_supply + m * GS_MIG_MAX_PROFILES + p, col) = -1.0;
            AT(row_demand + k, col) = 1.0;
            col++;
        }
    }
#undef AT
    double v;
    int r = gs_mig__lp_solve(nrow, ncol, A, b, sense, c, x, &v);
    if (r == 0) {
        *lpv = v;
        double ceil_v = ceil(v - 1e-6);
        *lb = ceil_v > 0 ? (uint32_t)ceil_v : 0;
        if (round) {
            memset(round, 0, sizeof *round);
            round->model = malloc(sizeof *round->model * (nlayc ? nlayc : 1));
            round->v = malloc(sizeof *round->v * (nlayc ? nlayc : 1));
            round->count = malloc(sizeof *round->count * (nlayc ? nlayc : 1));
            if (!round->model || !round->v || !round->count) {
                lp_round_free(round);
                r = -1;
            }
            for (uint32_t j = 0; r == 0 && j < nlayc; j++) {
                if (x[j] <= 1e-7)
                    continue;
                double up = ceil(x[j] - 1e-7);
                if (up - x[j] > 1e-7)
                    round->fractional++;
                round->model[round->n] = lay_model[j];
                round->v[round->n] = lay[j];
                round->count[round->n++] = (uint32_t)up;
            }
        }
        if (flows) {
            col = nlayc;
            for (uint32_t k = 0; k < P->ncls; k++) {
                if (!D[k])
                    continue;
                for (uint32_t m = 0; m < P->nmodels; m++)
                    if (P->cls[k].prof[m] != GS_MIG_NO_PROFILE)
                        flows[(size_t)k * P->nmodels + m] = x[col++];
            }
        }
    }
    rc = r < 0 ? -1 : r == 0 ? 0 : 1;
out:
    free(A);
    free(b);
    free(sense);
    free(c);
    free(x);
    free(lay);
    free(lay_model);
    return rc;
}

/* ================================================================ output */
static int build_output(planner *P, gs_mig_plan *out)
{
    const gs_mig_plan_input *in = P->in;
    out->ngpus = P->ng;
    out->gpus = calloc(P->ng ? P->ng : 1, sizeof *out->gpus);
    uint32_t *next_svc = calloc(P->ncls ? P->ncls : 1, sizeof *next_svc);
    uint32_t *left = calloc(in->nservices ? in->nservices : 1, sizeof *left);
    if (!out->gpus || !next_svc || !left) {
        free(next_svc);
        free(left);
        return -1;
    }
    for (uint32_t s = 0; s < in->nservices; s++) {
        left[s] = in->services[s].replicas;
        out->services[s].placed = 0;
        out->services[s].unplaced = in->services[s].replicas;
    }
    memset(&out->cost, 0, sizeof out->cost);
    for (uint32_t i = 0; i < P->ng; i++) {
        const pgpu *g = &P->g[i];
        gs_mig_gpu_plan *o = &out->gpus[i];
        const gs_mig_node *nd = &in->nodes[g->node];
        o->node = g->node;
        o->gpu = g->gpu;
        o->model = nd->model;
        o->known = g->known;
        for (int k = 0; k < GS_MIG_MAX_INST; k++)
            o->service[k] = GS_MIG_NO_SERVICE;
        gs_mig_cost c;
        gpu_cost(P, g, &c);
        cost_add(&out->cost, &c);
        if (!g->n) {
            if (g->known)
                o->layout = nd->current[g->gpu];
            continue;
        }
        uint8_t counts[GS_MIG_MAX_PROFILES];
        gpu_counts(P, g, counts);
        o->changed = c.changed != 0;
        if (!o->changed) {
            o->layout = nd->current[g->gpu];
        } else if (gs_mig_layout_from_counts(nd->model, counts, &o->layout) != 0) {
            free(next_svc);
            free(left);
            return -2;
        }
        /* hand each replica an instance of its profile, services in input order */
        bool taken[GS_MIG_MAX_INST] = {false};
        for (uint8_t r = 0; r < g->n; r++) {
            uint32_t k = g->cls[r];
            uint8_t p = P->cls[k].prof[g->model];
            uint32_t s = next_svc[k];
            while (s < in->nservices && (P->svc_class[s] != k || !left[s]))
                s++;
            next_svc[k] = s;
            if (s >= in->nservices)
                continue;
            for (uint8_t j = 0; j < o->layout.n; j++) {
                if (!taken[j] && o->layout.profile[j] == p) {
                    taken[j] = true;
                    o->service[j] = (uint16_t)s;
                    o->nassigned++;
                    left[s]--;
                    out->services[s].placed++;
                    out->services[s].unplaced--;
                    break;
                }
            }
        }
    }
    out->complete = true;
    for (uint32_t s = 0; s < in->nservices; s++)
        if (out->services[s].unplaced)
            out->complete = false;
    free(next_svc);
    free(left);
    return 0;
}

/* ================================================================ LP rounding */
/*
 * Give ceil(x) GPUs of each model the LP's maximal layouts (when the model has that many
 * GPUs), then host the replicas: an integral max flow from classes to (model, profile)
 * supplies exists because the rounded supplies cover the LP's fractional flow, and each
 * class's share of a supply fills instances GPU by GPU. Returns 0 with every replica
 * placed, 1 when rounding up needs more GPUs than a model has, -1 on OOM.
 */
static int lp_round_plan(planner *P, const uint32_t *D, const lp_round *r)
{
    uint32_t K = P->ncls, M = P->nmodels;
    uint32_t need[GS_MIG_MAX_CATALOG] = {0}, have[GS_MIG_MAX_CATALOG] = {0};
    for (uint32_t i = 0; i < r->n; i++)
        need[r->model[i]] += r->count[i];
    for (uint32_t i = 0; i < P->ng; i++)
        have[P->g[i].model]++;
    for (uint32_t m = 0; m < M; m++)
        if (need[m] > have[m])
            return 1;
    /* layouts onto GPUs, inventory order within each model */
    uint8_t *lay = calloc((size_t)P->ng + 1, GS_MIG_MAX_PROFILES);
    uint32_t supply[GS_MIG_MAX_CATALOG][GS_MIG_MAX_PROFILES];
    memset(supply, 0, sizeof supply);
    if (!lay)
        return -1;
    uint32_t next[GS_MIG_MAX_CATALOG] = {0};
    for (uint32_t i = 0; i < r->n; i++) {
        const pmodel *pm = &P->models[r->model[i]];
        const uint8_t *c = &pm->vcounts[(size_t)r->v[i] * GS_MIG_MAX_PROFILES];
        for (uint32_t k = 0; k < r->count[i]; k++) {
            uint32_t g = next[r->model[i]];
            while (g < P->ng && P->g[g].model != r->model[i])
                g++;
            next[r->model[i]] = g + 1;
            memcpy(&lay[(size_t)g * GS_MIG_MAX_PROFILES], c, GS_MIG_MAX_PROFILES);
            for (int p = 0; p < GS_MIG_MAX_PROFILES; p++)
                supply[r->model[i]][p] += c[p];
        }
    }
    /* integral flow: source 0, sink 1, classes 2.., supplies after */
    gs_mig_flow f;
    uint32_t s0 = 2 + K;
    if (gs_mig__flow_init(&f, s0 + M * GS_MIG_MAX_PROFILES) != 0) {
        free(lay);
        return -1;
    }
    int64_t *edge = malloc(sizeof *edge * ((size_t)K * M + 1));
    int rc = -1;
    if (!edge)
        goto out;
    uint64_t total = 0;
    for (uint32_t k = 0; k < K; k++) {
        total += D[k];
        if (gs_mig__flow_edge(&f, 0, 2 + k, D[k]) < 0)
            goto out;
        for (uint32_t m = 0; m < M; m++) {
            uint8_t p = P->cls[k].prof[m];
            edge[(size_t)k * M + m] = -1;
            if (p != GS_MIG_NO_PROFILE && supply[m][p] &&
                (edge[(size_t)k * M + m] =
                     gs_mig__flow_edge(&f, 2 + k, s0 + m * GS_MIG_MAX_PROFILES + p, INT64_MAX / 4)) < 0)
                goto out;
        }
    }
    for (uint32_t m = 0; m < M; m++)
        for (int p = 0; p < GS_MIG_MAX_PROFILES; p++)
            if (supply[m][p] && gs_mig__flow_edge(&f, s0 + m * GS_MIG_MAX_PROFILES + (uint32_t)p, 1,
                                                  supply[m][p]) < 0)
                goto out;
    int64_t fl = gs_mig__flow_run(&f, 0, 1);
    if (fl < 0)
        goto out;
    if ((uint64_t)fl < total) {
        rc = 1; /* numerical trouble in the LP; never expected */
        goto out;
    }
    /* fill instances GPU by GPU */
    for (uint32_t k = 0; k < K; k++) {
        for (uint32_t m = 0; m < M; m++) {
            int64_t e = edge[(size_t)k * M + m];
            int64_t left = e >= 0 ? gs_mig__flow_of(&f, (uint32_t)e) : 0;
            uint8_t p = P->cls[k].prof[m];
            for (uint32_t g = 0; g < P->ng && left > 0; g++) {
                pgpu *gp = &P->g[g];
                if (gp->model != m)
                    continue;
                uint8_t *c = &lay[(size_t)g * GS_MIG_MAX_PROFILES + p];
                while (*c && left > 0 && gp->n < GS_MIG_MAX_INST) {
                    (*c)--;
                    gp->cls[gp->n++] = (uint16_t)k;
                    left--;
                }
            }
        }
    }
    rc = 0;
out:
    free(edge);
    gs_mig__flow_free(&f);
    free(lay);
    return rc;
}

/* ================================================================ heuristic driver */
static uint32_t placed_count(const planner *P)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < P->ng; i++)
        n += P->g[i].n;
    return n;
}

static void total_cost(const planner *P, gs_mig_cost *c)
{
    memset(c, 0, sizeof *c);
    for (uint32_t i = 0; i < P->ng; i++) {
        gs_mig_cost x;
        gpu_cost(P, &P->g[i], &x);
        cost_add(c, &x);
    }
}

/* More replicas placed first, then the objective. */
static bool better(const planner *P, uint32_t placed_a, const gs_mig_cost *a, uint32_t placed_b,
                   const gs_mig_cost *b)
{
    (void)P;
    if (placed_a != placed_b)
        return placed_a > placed_b;
    return cost_cmp(a, b) < 0;
}

static void clear_assignments(planner *P)
{
    for (uint32_t i = 0; i < P->ng; i++)
        P->g[i].n = 0;
}

/*
 * Two greedy runs, the better one improved:
 *  (a) plain: every class may use any model, patterns by fill;
 *  (b) LP-guided: the LP relaxation (also the lower bound) says how much of each class
 *      should go to each model; its flows are rounded and each model is filled greedily
 *      with its share, then whatever rounding left over goes to any free GPU. This keeps
 *      scarce models for the classes that need them (a 45 GiB replica that only fits the
 *      80 GB GPUs) where the plain greedy may fill them with small replicas first.
 */
static int heuristic(planner *P, const uint32_t *D, const gs_mig_plan_opts *opts,
                     gs_mig_plan *out, bool *have_bound)
{
    uint32_t K = P->ncls, M = P->nmodels;
    uint32_t *Dg = malloc(sizeof *Dg * (K ? K : 1));
    size_t km = (size_t)K * M + 1;
    uint32_t *Dm = malloc(sizeof *Dm * km);
    double *flows = malloc(sizeof *flows * km);
    pgpu *best = malloc(sizeof *best * (P->ng ? P->ng : 1));
    int rc = -1;
    if (!Dg || !Dm || !flows || !best)
        goto out;
    /* the LP: lower bound, and the flows that guide (b) */
    lp_round lpr;
    memset(&lpr, 0, sizeof lpr);
    int lr = lp_bound(P, D, &out->lower_bound, &out->lp_value, flows, &lpr);
    if (lr < 0)
        goto out;
    *have_bound = lr == 0;
    if (lr == 0) {
        for (uint32_t k = 0; k < K; k++) {
            uint32_t sum = 0;
            for (uint32_t m = 0; m < M; m++) {
                double f = flows[(size_t)k * M + m];
                uint32_t fl = f > 0 ? (uint32_t)floor(f + 1e-6) : 0;
                if (sum + fl > D[k])
                    fl = D[k] - sum;
                Dm[(size_t)k * M + m] = fl;
                sum += fl;
            }
            /* remainders to the models with the largest fractional parts */
            while (sum < D[k]) {
                uint32_t bm = UINT32_MAX;
                double bf = -1.0;
                for (uint32_t m = 0; m < M; m++) {
                    if (P->cls[k].prof[m] == GS_MIG_NO_PROFILE)
                        continue;
                    double f = flows[(size_t)k * M + m] - Dm[(size_t)k * M + m];
                    if (f > bf) {
                        bf = f;
                        bm = m;
                    }
                }
                if (bm == UINT32_MAX)
                    break;
                Dm[(size_t)k * M + bm]++;
                sum++;
            }
        }
    }
    bool any_current = false;
    for (uint32_t i = 0; i < P->ng && !any_current; i++)
        any_current = P->g[i].known && P->g[i].enabled;
    uint32_t best_placed = 0;
    gs_mig_cost best_cost = {UINT32_MAX, 0, 0, 0};
    bool have = false;
    /* keep biases: ties only, then current layouts that are nearly as full (more
     * GPUs kept as they are when that costs no GPU) */
    static const uint32_t biases[] = {8, 7, 6};
    for (uint32_t bi = 0; bi < (any_current ? 3u : 1u); bi++) {
        for (int guided = 0; guided < (lr == 0 ? 2 : 1); guided++) {
            clear_assignments(P);
            if (guided) {
                uint32_t *Dmc = malloc(sizeof *Dmc * km);
                if (!Dmc)
                    goto out;
                memcpy(Dmc, Dm, sizeof *Dmc * km);
                int g1 = greedy(P, Dmc, true, biases[bi]);
                for (uint32_t k = 0; k < K; k++) {
                    Dg[k] = 0;
                    for (uint32_t m = 0; m < M; m++)
                        Dg[k] += Dmc[(size_t)k * M + m];
                }
                free(Dmc);
                if (g1 != 0)
                    goto out;
            } else {
                memcpy(Dg, D, sizeof *Dg * K);
            }
            if (greedy(P, Dg, false, biases[bi]) != 0)
                goto out;
            uint32_t placed = placed_count(P);
            gs_mig_cost cost;
            total_cost(P, &cost);
            if (!have || better(P, placed, &cost, best_placed, &best_cost)) {
                memcpy(best, P->g, sizeof *best * P->ng);
                best_placed = placed;
                best_cost = cost;
                have = true;
            }
        }
    }
    /* (c) the LP rounded up: at most ceil(LP) + (fractional layouts) GPUs, the a-priori
     * bound of docs/mig-planner.md */
    if (lr == 0) {
        out->lp_fractional = lpr.fractional;
        clear_assignments(P);
        int c = lp_round_plan(P, D, &lpr);
        out->lp_roundable = c == 0;
        if (c < 0) {
            lp_round_free(&lpr);
            goto out;
        }
        uint32_t placed = placed_count(P);
        gs_mig_cost cost;
        total_cost(P, &cost);
        if (c == 0 && better(P, placed, &cost, best_placed, &best_cost)) {
            memcpy(best, P->g, sizeof *best * P->ng);
            best_placed = placed;
            best_cost = cost;
        }
    }
    lp_round_free(&lpr);
    memcpy(P->g, best, sizeof *best * P->ng);
    uint32_t total = 0;
    for (uint32_t k = 0; k < K; k++)
        total += D[k];
    if (best_placed < total) {
        /* repair: the replicas left over, re-planned with a window of GPUs */
        for (uint32_t k = 0; k < K; k++)
            Dg[k] = D[k];
        for (uint32_t i = 0; i < P->ng; i++)
            for (uint8_t r = 0; r < P->g[i].n; r++)
                Dg[P->g[i].cls[r]]--;
        int t = improve_tail(P, opts->state_budget / 16 + 1, &out->states, Dg);
        if (t < 0)
            goto out;
        best_placed = placed_count(P);
    }
    if (best_placed == total) {
        improve_empty(P);
        if (improve_tail(P, opts->state_budget / 16 + 1, &out->states, NULL) < 0)
            goto out;
        improve_empty(P);
    }
    if (rematch(P) != 0)
        goto out;
    rc = 0;
out:
    free(Dg);
    free(Dm);
    free(flows);
    free(best);
    return rc;
}

/* ================================================================ entry points */
void gs_mig_plan_opts_default(gs_mig_plan_opts *o)
{
    memset(o, 0, sizeof *o);
    o->exact_max_gpus = 16;
    o->state_budget = 500000;
}

int gs_mig_plan_solve(const gs_mig_plan_input *in, const gs_mig_plan_opts *opts,
                      gs_mig_plan *out, gs_error *err)
{
    gs_mig_plan_opts defaults;
    if (!opts) {
        gs_mig_plan_opts_default(&defaults);
        opts = &defaults;
    }
    memset(out, 0, sizeof *out);
    out->nservices = in->nservices;
    out->services = calloc(in->nservices ? in->nservices : 1, sizeof *out->services);
    if (!out->services)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    planner P;
    memset(&P, 0, sizeof P);
    P.in = in;
    P.err = err;
    int rc = -1;
    uint32_t *D = NULL;
    if (planner_setup(&P, in, opts, out) != 0)
        goto out;
    D = calloc(P.ncls ? P.ncls : 1, sizeof *D);
    if (!D) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (uint32_t k = 0; k < P.ncls; k++)
        D[k] = P.cls[k].demand;

    bool solved = false;
    if (P.ng > 0 && P.ng <= opts->exact_max_gpus && P.ncls > 0) {
        uint32_t *all = malloc(sizeof *all * P.ng);
        if (!all) {
            gs_fail(err, GS_ERR_NOMEM, "out of memory");
            goto out;
        }
        for (uint32_t i = 0; i < P.ng; i++)
            all[i] = i;
        int r = exact_solve(&P, all, P.ng, D, opts->state_budget, false, &out->states);
        free(all);
        if (r == -2) {
            gs_fail(err, GS_ERR_NOMEM, "out of memory");
            goto out;
        }
        if (r == 1) {
            solved = true;
            out->method = GS_MIG_METHOD_EXACT;
            out->optimal = true;
        }
    }
    bool have_bound = false;
    if (!solved && P.ncls > 0) {
        out->method = GS_MIG_METHOD_HEURISTIC;
        int h = heuristic(&P, D, opts, out, &have_bound);
        if (h != 0) {
            gs_fail(err, GS_ERR_NOMEM, "out of memory");
            goto out;
        }
    }
    out->states += P.work;
    int b = build_output(&P, out);
    if (b == -1) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (b == -2) {
        gs_fail(err, GS_ERR_INTERNAL, "planner produced a layout that does not fit");
        goto out;
    }
    if (out->complete && P.ncls > 0 && !have_bound) {
        if (lp_bound(&P, D, &out->lower_bound, &out->lp_value, NULL, NULL) < 0) {
            gs_fail(err, GS_ERR_NOMEM, "out of memory");
            goto out;
        }
        if (out->method == GS_MIG_METHOD_EXACT && out->lower_bound > out->cost.gpus)
            out->lower_bound = out->cost.gpus; /* LP rounding noise; exact wins */
    }
    rc = 0;
out:
    free(D);
    planner_free(&P);
    if (rc != 0)
        gs_mig_plan_free(out);
    return rc;
}

void gs_mig_plan_free(gs_mig_plan *p)
{
    if (!p)
        return;
    free(p->gpus);
    free(p->services);
    memset(p, 0, sizeof *p);
}
