/*
 * fgd.c - the FGD-method experiment: workload preparation, one run (shuffle, tune, node
 * tie-break permutation, sequential greedy placement), the discrete curves of the
 * artifact's merge scripts, failed-pod shapes, the InitSchedule summary and CSV rows.
 *
 * A run, step by step (fgd-method.md section b):
 *  1. The pods are the trace rows sorted by name; one seeded gs_rng drives everything.
 *  2. Shuffle (Fisher-Yates from the end, as Go's rand.Shuffle).
 *  3. Tune to `tune` x capacity: tune-up samples pods of the name-sorted list with
 *     replacement and appends clones until the first sampled pod whose per-GPU milli would
 *     push the total above the target (that pod is not added); tune-down removes random pods
 *     until the total is at or below the target.
 *  4. Node tie-break permutation (inside-out, as Go's rand.Perm): node i in name order gets
 *     rank perm[i]; ties between equal best scores go to the smallest rank. The run keeps
 *     its nodes in rank order, so the first strictly greater score wins.
 *  5. Every pod in list order: filter (cpu, memory, pod count, GPU model and capacity), the
 *     policy's pre-score and integer scores, the policy's GPU choice, bind. A pod that fits
 *     nowhere is dropped for good. After each pod one event records A, U, F and R.
 *
 * Speed: a node changes only when it receives a pod, so FGD's expensive score (a
 * fragmentation evaluation per candidate GPU) is cached per (node, pod resource key) and
 * dropped for a node when it changes. Node fragmentation categories sit in a pairwise-sum
 * tree, so the cluster amounts after each event cost O(log nodes) and depend only on the
 * current node states (no drift).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

#define FGD_MAX_NODES 1000000u
#define FGD_MAX_PODS 10000000u
#define FGD_MAX_EVENTS 10000000u
#define FGD_CACHE_MAX_ENTRIES ((size_t)64 << 20)

/* ================================================================ workload */

/* qsort has no context argument: sort (name, index) pairs instead. */
typedef struct named {
    const char *name;
    uint32_t index;
} named;

static int cmp_named(const void *a, const void *b)
{
    const named *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Key table: open addressing over (cpu_nz, milli, count, spec). */
typedef struct key_slot {
    int64_t cpu;
    uint32_t spec;
    uint16_t milli, count;
    uint32_t id_plus1;
} key_slot;

static uint64_t key_hash(int64_t cpu, uint32_t spec, uint16_t milli, uint16_t count)
{
    uint64_t h = (uint64_t)cpu * 0x9E3779B97F4A7C15ULL;
    h ^= ((uint64_t)spec << 32 | (uint64_t)milli << 16 | count) * 0xC2B2AE3D27D4EB4FULL;
    h ^= h >> 29;
    return h;
}

static int normalise_pod(const gs_openb_pod *row, gs_sim_pod *p, const char **spec)
{
    p->cpu = row->cpu_milli;
    p->cpu_nz = row->cpu_milli == 0 ? 100 : row->cpu_milli;
    p->mem = row->memory_mib;
    int64_t milli = row->gpu_milli;
    if (milli > GS_SIM_MILLI)
        milli = GS_SIM_MILLI;
    if (milli < 0)
        milli = 0;
    if (row->num_gpu == 0 || milli == 0) {
        p->milli = 0;
        p->count = 0;
        *spec = "";
    } else {
        p->milli = (uint16_t)milli;
        p->count = (uint16_t)row->num_gpu;
        *spec = row->gpu_spec ? row->gpu_spec : "";
    }
    return 0;
}

/* The trace converter drops empty parts of gpu_spec ("A||B" -> "A|B"); apply the same. */
static char *clean_spec(gs_arena *a, const char *s)
{
    size_t n = strlen(s), o = 0;
    char *out = gs_arena_alloc(a, n + 1);
    if (!out)
        return NULL;
    const char *p = s;
    for (;;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len) {
            if (o)
                out[o++] = '|';
            memcpy(out + o, p, len);
            o += len;
        }
        if (!bar)
            break;
        p = bar + 1;
    }
    out[o] = 0;
    return out;
}

static void node_refresh(gs_sim_node *n)
{
    uint32_t gl = 0;
    uint16_t mx = 0;
    uint8_t nfree = 0;
    for (uint32_t i = 0; i < n->ngpus; i++) {
        gl += n->left[i];
        if (n->left[i] > mx)
            mx = n->left[i];
        if (n->left[i] == GS_SIM_MILLI)
            nfree++;
    }
    n->gl = gl;
    n->max_left = mx;
    n->nfree = nfree;
}

gs_fgd_workload *gs_fgd_workload_new(const gs_openb_node *nodes, uint32_t nnodes,
                                     const gs_openb_pod *pods, uint32_t npods,
                                     const gs_fgd_workload_opts *opts, gs_error *err)
{
    if (nnodes == 0) {
        gs_fail(err, GS_ERR_INVALID, "the cluster has no node");
        return NULL;
    }
    if (nnodes > FGD_MAX_NODES || npods > FGD_MAX_PODS) {
        gs_fail(err, GS_ERR_LIMIT, "at most %u nodes and %u pods are supported", FGD_MAX_NODES,
                FGD_MAX_PODS);
        return NULL;
    }
    double threshold = opts && opts->typical_threshold_pct > 0 ? opts->typical_threshold_pct : 95.0;
    gs_fgd_workload *w = calloc(1, sizeof *w);
    if (!w) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory preparing the workload");
        return NULL;
    }
    gs_arena_init(&w->arena, 0);
    w->nnodes = nnodes;
    gs_intern models, specs;
    gs_intern_init(&models);
    gs_intern_init(&specs);
    named *order = NULL;
    key_slot *slots = NULL;
    gs_frag_podres *keys = NULL;
    bool ok = false;

    /* ---- nodes, sorted by name */
    order = malloc(sizeof *order * (nnodes > npods ? nnodes : (npods ? npods : 1)));
    w->nodes = gs_arena_alloc(&w->arena, sizeof *w->nodes * nnodes);
    w->node_names = gs_arena_alloc(&w->arena, sizeof *w->node_names * nnodes);
    if (!order || !w->nodes || !w->node_names || gs_intern_id(&models, "", 0) < 0 ||
        gs_intern_id(&specs, "", 0) < 0)
        goto nomem;
    for (uint32_t i = 0; i < nnodes; i++) {
        if (nodes[i].gpus > GS_SIM_MAX_GPUS) {
            gs_error_set(err, GS_ERR_LIMIT, nodes[i].src.file, (int)nodes[i].src.line, 0, NULL,
                         "node %.64s has %u GPUs, at most %d are supported", nodes[i].name,
                         nodes[i].gpus, GS_SIM_MAX_GPUS);
            goto fail;
        }
        order[i].name = nodes[i].name ? nodes[i].name : "";
        order[i].index = i;
    }
    qsort(order, nnodes, sizeof *order, cmp_named);
    for (uint32_t i = 0; i < nnodes; i++) {
        const gs_openb_node *row = &nodes[order[i].index];
        if (i > 0 && strcmp(order[i - 1].name, order[i].name) == 0) {
            gs_error_set(err, GS_ERR_INVALID, row->src.file, (int)row->src.line, 0, NULL,
                         "duplicate node name %.64s", row->name);
            goto fail;
        }
        gs_sim_node *n = &w->nodes[i];
        memset(n, 0, sizeof *n);
        const char *model = row->gpus && row->model ? row->model : "";
        int32_t mid = gs_intern_id(&models, model, strlen(model));
        if (mid < 0)
            goto nomem;
        if (mid > UINT16_MAX) {
            gs_fail(err, GS_ERR_LIMIT, "more than %d GPU models", UINT16_MAX);
            goto fail;
        }
        n->cpu_left = n->cpu_alloc = row->cpu_milli;
        n->mem_left = row->memory_mib;
        n->ngpus = (uint8_t)row->gpus;
        for (uint32_t g = 0; g < row->gpus; g++)
            n->left[g] = GS_SIM_MILLI;
        n->model = (uint16_t)mid;
        n->index = i;
        node_refresh(n);
        w->node_names[i] = gs_arena_strdup(&w->arena, order[i].name);
        if (!w->node_names[i])
            goto nomem;
        w->cpu_total += row->cpu_milli;
        w->mem_total += row->memory_mib;
        w->gpus_total += row->gpus;
    }

    /* ---- pods, sorted by name, with their resource keys */
    w->npods = npods;
    w->pods = gs_arena_alloc(&w->arena, sizeof *w->pods * (npods ? npods : 1));
    w->pod_names = gs_arena_alloc(&w->arena, sizeof *w->pod_names * (npods ? npods : 1));
    keys = malloc(sizeof *keys * (npods ? npods : 1));
    size_t nslots = 64;
    while (nslots < (size_t)npods * 2)
        nslots <<= 1;
    slots = calloc(nslots, sizeof *slots);
    if (!w->pods || !w->pod_names || !keys || !slots)
        goto nomem;
    for (uint32_t i = 0; i < npods; i++) {
        order[i].name = pods[i].name ? pods[i].name : "";
        order[i].index = i;
    }
    qsort(order, npods, sizeof *order, cmp_named);
    for (uint32_t i = 0; i < npods; i++) {
        const gs_openb_pod *row = &pods[order[i].index];
        gs_sim_pod *p = &w->pods[i];
        const char *spec_raw;
        memset(p, 0, sizeof *p);
        normalise_pod(row, p, &spec_raw);
        if (row->num_gpu > UINT16_MAX) {
            gs_fail(err, GS_ERR_LIMIT, "pod %.64s asks for %u GPUs", row->name, row->num_gpu);
            goto fail;
        }
        const char *spec = spec_raw[0] ? clean_spec(&w->arena, spec_raw) : "";
        if (!spec)
            goto nomem;
        int32_t sid = gs_intern_id(&specs, spec, strlen(spec));
        if (sid < 0)
            goto nomem;
        p->spec = (uint32_t)sid;
        w->pod_names[i] = gs_arena_strdup(&w->arena, order[i].name);
        if (!w->pod_names[i])
            goto nomem;
        w->gpu_request += (int64_t)p->milli * p->count;
        /* key id */
        uint64_t h = key_hash(p->cpu_nz, p->spec, p->milli, p->count);
        size_t s = (size_t)h & (nslots - 1);
        for (;;) {
            key_slot *ks = &slots[s];
            if (!ks->id_plus1) {
                ks->cpu = p->cpu_nz;
                ks->spec = p->spec;
                ks->milli = p->milli;
                ks->count = p->count;
                ks->id_plus1 = ++w->nkeys;
                p->key = ks->id_plus1 - 1;
                break;
            }
            if (ks->cpu == p->cpu_nz && ks->spec == p->spec && ks->milli == p->milli &&
                ks->count == p->count) {
                p->key = ks->id_plus1 - 1;
                break;
            }
            s = (s + 1) & (nslots - 1);
        }
    }

    /* ---- string tables */
    w->nmodels = models.n;
    w->nspecs = specs.n;
    w->models = gs_arena_alloc(&w->arena, sizeof *w->models * w->nmodels);
    w->specs = gs_arena_alloc(&w->arena, sizeof *w->specs * w->nspecs);
    uint8_t *admit = gs_arena_alloc(&w->arena, (size_t)w->nmodels * w->nspecs);
    if (!w->models || !w->specs || !admit)
        goto nomem;
    for (uint32_t i = 0; i < w->nmodels; i++)
        if (!(w->models[i] = gs_arena_strdup(&w->arena, gs_intern_str(&models, (int32_t)i))))
            goto nomem;
    for (uint32_t i = 0; i < w->nspecs; i++)
        if (!(w->specs[i] = gs_arena_strdup(&w->arena, gs_intern_str(&specs, (int32_t)i))))
            goto nomem;
    for (uint32_t s = 0; s < w->nspecs; s++)
        for (uint32_t m = 0; m < w->nmodels; m++)
            admit[(size_t)s * w->nmodels + m] = gs_frag_type_admits(w->specs[s], w->models[m]);
    w->spec_admit = admit;

    /* ---- target workload from the original pods, hot-loop table, initial frag */
    for (uint32_t i = 0; i < npods; i++) {
        keys[i].cpu_milli = w->pods[i].cpu_nz;
        keys[i].gpu_milli = w->pods[i].milli;
        keys[i].num_gpu = w->pods[i].count;
        keys[i].gpu_type = w->specs[w->pods[i].spec];
    }
    if (gs_frag_target_workload(keys, npods, threshold, &w->target, err) < 0)
        goto fail;
    if (gs_ftypes_build(&w->ft, &w->target, w->models, w->nmodels, &w->arena, err) < 0)
        goto fail;
    for (uint32_t i = 0; i < nnodes; i++) {
        gs_sim_node *n = &w->nodes[i];
        double data[GS_FRAG_NCAT];
        gs_ftypes_eval(&w->ft, n->model, n->cpu_left, n->left, n->ngpus, data);
        n->frag = gs_frag_sum_except_q3(data);
        for (int c = 0; c < GS_FRAG_NCAT; c++)
            w->empty_cats[c] += data[c];
    }
    w->empty_frag = gs_frag_sum_except_q3(w->empty_cats);
    ok = true;
    goto done;
nomem:
    gs_fail(err, GS_ERR_NOMEM, "out of memory preparing the workload");
fail:
done:
    free(order);
    free(slots);
    free(keys);
    gs_intern_free(&models);
    gs_intern_free(&specs);
    if (!ok) {
        gs_fgd_workload_free(w);
        return NULL;
    }
    return w;
}

void gs_fgd_workload_free(gs_fgd_workload *w)
{
    if (!w)
        return;
    gs_frag_target_free(&w->target);
    gs_arena_free(&w->arena);
    free(w);
}

const gs_frag_target *gs_fgd_workload_target(const gs_fgd_workload *w) { return &w->target; }
uint32_t gs_fgd_workload_gpus(const gs_fgd_workload *w) { return w->gpus_total; }
uint32_t gs_fgd_workload_nnodes(const gs_fgd_workload *w) { return w->nnodes; }
uint32_t gs_fgd_workload_npods(const gs_fgd_workload *w) { return w->npods; }
int64_t gs_fgd_workload_gpu_request(const gs_fgd_workload *w) { return w->gpu_request; }
double gs_fgd_workload_empty_frag(const gs_fgd_workload *w) { return w->empty_frag; }

void gs_fgd_opts_defaults(gs_fgd_opts *o)
{
    memset(o, 0, sizeof *o);
    o->policy = "fgd";
    o->seed = 42;
    o->tune = 1.3;
    o->shuffle = true;
}

/* ================================================================ run */

typedef struct run {
    const gs_fgd_workload *w;
    const gs_sim_policy *pol;
    gs_rng rng;
    gs_sim_ctx ctx;
    uint32_t nnodes;
    gs_sim_node *nodes;        /* rank order */
    double *tree;              /* pairwise sums of node categories, [2 * leaves][NCAT] */
    uint32_t leaves;
    int16_t *cache_score;      /* [rank * nkeys + key], INT16_MIN = unknown */
    uint8_t *cache_hint;
    const gs_sim_node **feasible;
    uint32_t *list_pod, *list_clone;
    uint32_t nlist, cap_list;
    bool no_cache;
} run;

#define CACHE_UNKNOWN INT16_MIN

static void run_free(run *r)
{
    free(r->nodes);
    free(r->tree);
    free(r->cache_score);
    free(r->cache_hint);
    free(r->feasible);
    free(r->list_pod);
    free(r->list_clone);
}

static void tree_set(run *r, uint32_t leaf, const double cats[GS_FRAG_NCAT])
{
    uint32_t k = r->leaves + leaf;
    memcpy(&r->tree[(size_t)k * GS_FRAG_NCAT], cats, sizeof(double) * GS_FRAG_NCAT);
    for (k >>= 1; k >= 1; k >>= 1) {
        double *dst = &r->tree[(size_t)k * GS_FRAG_NCAT];
        const double *a = &r->tree[(size_t)(2 * k) * GS_FRAG_NCAT];
        const double *b = &r->tree[(size_t)(2 * k + 1) * GS_FRAG_NCAT];
        for (int c = 0; c < GS_FRAG_NCAT; c++)
            dst[c] = a[c] + b[c];
    }
}

static int list_push(run *r, uint32_t pod, uint32_t clone, gs_error *err)
{
    if (r->nlist == r->cap_list) {
        if (r->cap_list >= FGD_MAX_EVENTS)
            return gs_fail(err, GS_ERR_LIMIT,
                           "tuning would need more than %u pods; lower the tune ratio",
                           FGD_MAX_EVENTS);
        uint32_t nc = r->cap_list ? r->cap_list * 2 : 1024;
        if (nc > FGD_MAX_EVENTS)
            nc = FGD_MAX_EVENTS;
        uint32_t *a = realloc(r->list_pod, sizeof *a * nc);
        if (!a)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory tuning the workload");
        r->list_pod = a;
        uint32_t *b = realloc(r->list_clone, sizeof *b * nc);
        if (!b)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory tuning the workload");
        r->list_clone = b;
        r->cap_list = nc;
    }
    r->list_pod[r->nlist] = pod;
    r->list_clone[r->nlist] = clone;
    r->nlist++;
    return 0;
}

static int64_t pod_gpu_milli(const gs_sim_pod *p) { return (int64_t)p->milli * p->count; }

/* Steps 1-3: name order, shuffle, tune. */
static int build_list(run *r, const gs_fgd_opts *o, gs_fgd_result *out, gs_error *err)
{
    const gs_fgd_workload *w = r->w;
    for (uint32_t i = 0; i < w->npods; i++)
        if (list_push(r, i, 0, err) < 0)
            return -1;
    if (o->shuffle) {
        for (uint32_t i = r->nlist; i-- > 1;) {
            uint32_t j = (uint32_t)gs_rng_below(&r->rng, (uint64_t)i + 1);
            uint32_t t = r->list_pod[i];
            r->list_pod[i] = r->list_pod[j];
            r->list_pod[j] = t;
        }
    }
    if (o->tune <= 0 || w->npods == 0)
        return 0;
    double target = o->tune * (double)((int64_t)w->gpus_total * GS_SIM_MILLI);
    int64_t total = w->gpu_request;
    if ((double)total < target) {
        if (w->gpu_request == 0)
            return 0; /* no GPU pod: the target can never be reached */
        uint32_t clone = 0;
        for (;;) {
            uint32_t j = (uint32_t)gs_rng_below(&r->rng, w->npods);
            const gs_sim_pod *p = &w->pods[j];
            if ((double)(total + p->milli) > target)
                break;
            if (list_push(r, j, ++clone, err) < 0)
                return -1;
            total += pod_gpu_milli(p);
        }
        out->clones_added = clone;
    } else if ((double)total > target) {
        while ((double)total > target && r->nlist > 0) {
            uint32_t j = (uint32_t)gs_rng_below(&r->rng, r->nlist);
            total -= pod_gpu_milli(&w->pods[r->list_pod[j]]);
            memmove(&r->list_pod[j], &r->list_pod[j + 1], sizeof(uint32_t) * (r->nlist - j - 1));
            memmove(&r->list_clone[j], &r->list_clone[j + 1],
                    sizeof(uint32_t) * (r->nlist - j - 1));
            r->nlist--;
            out->pods_removed++;
        }
    }
    return 0;
}

static bool feasible(const gs_fgd_workload *w, const gs_sim_node *n, const gs_sim_pod *p)
{
    if (n->cpu_left < p->cpu || n->mem_left < p->mem || n->npods >= GS_SIM_MAX_PODS_PER_NODE)
        return false;
    if (p->milli == 0)
        return true;
    if (n->ngpus == 0 || !gs_sim_admits(w, p->spec, n->model))
        return false;
    if (p->count == 1)
        return n->max_left >= p->milli;
    if (p->milli == GS_SIM_MILLI)
        return n->nfree >= p->count;
    uint32_t fit = 0;
    for (uint32_t i = 0; i < n->ngpus; i++)
        if (n->left[i] >= p->milli)
            fit++;
    return fit >= p->count;
}

static int score_node(run *r, const gs_sim_node *n, const gs_sim_pod *p, uint8_t *hint,
                      uint64_t *evals)
{
    if (r->cache_score) {
        size_t idx = (size_t)(n - r->nodes) * r->w->nkeys + p->key;
        if (r->cache_score[idx] != CACHE_UNKNOWN) {
            *hint = r->cache_hint[idx];
            return r->cache_score[idx];
        }
        int s = r->pol->score(&r->ctx, n, p, hint);
        (*evals)++;
        r->cache_score[idx] = (int16_t)(s < -32767 ? -32767 : s > 32767 ? 32767 : s);
        r->cache_hint[idx] = *hint;
        return s;
    }
    (*evals)++;
    return r->pol->score(&r->ctx, n, p, hint);
}

static void bind(run *r, gs_sim_node *n, const gs_sim_pod *p, const uint8_t *gpus)
{
    const gs_fgd_workload *w = r->w;
    n->cpu_left -= p->cpu;
    n->mem_left -= p->mem;
    n->cpu_nz_used += p->cpu_nz;
    n->npods++;
    if (p->milli > 0) {
        for (uint32_t k = 0; k < p->count; k++)
            n->left[gpus[k]] = (uint16_t)(n->left[gpus[k]] - p->milli);
        n->tags |= gs_sim_pod_sharing(p) ? 1u : 1u << (p->count < 31 ? p->count : 31);
    }
    node_refresh(n);
    double cats[GS_FRAG_NCAT];
    gs_ftypes_eval(&w->ft, n->model, n->cpu_left, n->left, n->ngpus, cats);
    n->frag = gs_frag_sum_except_q3(cats);
    tree_set(r, n->index, cats);
    if (r->cache_score) {
        size_t row = (size_t)(n - r->nodes) * w->nkeys;
        for (uint32_t k = 0; k < w->nkeys; k++)
            r->cache_score[row + k] = CACHE_UNKNOWN;
    }
}

/* Python's round(x, 2) (and Go's %.2f): correctly rounded, half to even on the exact
 * binary value; printf with two decimals does exactly that. */
static double round2(double x)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.2f", x);
    return strtod(buf, NULL);
}

/* Cluster amounts after an event. */
static void cluster_now(const run *r, double *frag, double *idle, double *cats)
{
    const double *root = &r->tree[GS_FRAG_NCAT];
    double v = 0.0;
    for (int c = 0; c < GS_FRAG_NCAT; c++)
        v += root[c];
    *idle = v;
    *frag = gs_frag_sum_except_q3(root);
    if (cats)
        memcpy(cats, root, sizeof(double) * GS_FRAG_NCAT);
}

/* ---------------------------------------------------------------- curves */

static int build_curves(gs_fgd_result *res, double tune, gs_error *err)
{
    uint32_t ne = res->nevents;
    double total = (double)res->total_gpus;
    uint32_t max_x = 0;
    uint32_t *xe = malloc(sizeof *xe * (ne ? ne : 1));
    if (!xe)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory computing curves");
    for (uint32_t e = 0; e < ne; e++) {
        double x = total > 0 ? rint((double)res->events[e].arrived_milli / total / 10.0) : 0.0;
        if (x < 0)
            x = 0;
        if (x > 1e6)
            x = 1e6;
        xe[e] = (uint32_t)x;
        if (xe[e] > max_x)
            max_x = xe[e];
    }
    uint32_t nx;
    if (tune > 0)
        nx = (uint32_t)ceil(tune * 100.0 - 1e-9) + 1;
    else
        nx = ne ? max_x + 1 : 1;
    if (nx > 1000001)
        nx = 1000001;
    gs_fgd_curves *cv = &res->curves;
    cv->nx = nx;
    cv->alloc = malloc(sizeof(double) * nx);
    cv->frag = malloc(sizeof(double) * nx);
    cv->frag_ratio = malloc(sizeof(double) * nx);
    /* events are in arrival order and A never decreases, so each bucket is a range */
    uint32_t nb = (max_x > nx ? max_x : nx) + 2;
    uint32_t *start = malloc(sizeof *start * nb), *end = malloc(sizeof *end * nb);
    if (!cv->alloc || !cv->frag || !cv->frag_ratio || !start || !end) {
        free(xe);
        free(start);
        free(end);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory computing curves");
    }
    for (uint32_t b = 0; b < nb; b++)
        start[b] = end[b] = 0;
    for (uint32_t e = 0; e < ne; e++) {
        if (start[xe[e]] == end[xe[e]])
            start[xe[e]] = e;
        end[xe[e]] = e + 1;
    }
    for (uint32_t x = 0; x < nx; x++) {
        uint32_t lo, hi;
        if (start[x] != end[x]) {
            lo = start[x];
            hi = end[x];
        } else {
            lo = UINT32_MAX;
            hi = 0;
            for (uint32_t b = x ? x - 1 : 0; b <= x + 1 && b < nb; b++) {
                if (start[b] == end[b])
                    continue;
                if (start[b] < lo)
                    lo = start[b];
                if (end[b] > hi)
                    hi = end[b];
            }
        }
        if (lo >= hi) {
            cv->alloc[x] = cv->frag[x] = cv->frag_ratio[x] = NAN;
            continue;
        }
        double sa = 0.0, sf = 0.0, sr = 0.0;
        uint32_t n = 0;
        for (uint32_t e = lo; e < hi; e++) {
            if (xe[e] + 1 < x || xe[e] > x + 1) /* ranges are contiguous; guard anyway */
                continue;
            const gs_fgd_event *ev = &res->events[e];
            sa += round2((double)ev->used_milli / total / 10.0);
            sf += ev->frag_milli;
            sr += round2(ev->frag_ratio);
            n++;
        }
        double meanf = sf / n;
        cv->alloc[x] = round2(sa / n);
        cv->frag[x] = round2(100.0 * meanf / 1000.0 / total);
        cv->frag_ratio[x] = sr / n;
    }
    free(xe);
    free(start);
    free(end);
    return 0;
}

/* ---------------------------------------------------------------- failed shapes */

/* "%.2f cores" of the non-zero cpu request, back in milli (a multiple of 10). */
static int64_t cpu_rounded(int64_t cpu_milli)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.2f", (double)cpu_milli / 1000.0);
    int64_t hundredths = 0;
    bool neg = buf[0] == '-';
    for (const char *s = buf + neg; *s; s++)
        if (*s >= '0' && *s <= '9')
            hundredths = hundredths * 10 + (*s - '0');
    return (neg ? -hundredths : hundredths) * 10;
}

static int cmp_fail(const void *a, const void *b)
{
    const gs_fgd_fail_shape *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    if (x->cpu_milli != y->cpu_milli)
        return x->cpu_milli < y->cpu_milli ? -1 : 1;
    if (x->num_gpu != y->num_gpu)
        return x->num_gpu < y->num_gpu ? -1 : 1;
    if (x->gpu_milli != y->gpu_milli)
        return x->gpu_milli < y->gpu_milli ? -1 : 1;
    return strcmp(x->gpu_type, y->gpu_type);
}

static int build_fails(const run *r, gs_fgd_result *res, gs_error *err)
{
    uint32_t nf = 0;
    for (uint32_t e = 0; e < res->nevents; e++)
        nf += res->events[e].node < 0;
    if (!nf)
        return 0;
    gs_fgd_fail_shape *all = malloc(sizeof *all * nf);
    if (!all)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory listing failed pods");
    uint32_t k = 0;
    for (uint32_t e = 0; e < res->nevents; e++) {
        if (res->events[e].node >= 0)
            continue;
        const gs_sim_pod *p = &r->w->pods[res->events[e].pod];
        all[k].count = 1;
        all[k].cpu_milli = cpu_rounded(p->cpu_nz);
        all[k].num_gpu = p->count;
        all[k].gpu_milli = p->milli;
        all[k].gpu_type = p->spec ? r->w->specs[p->spec] : "<none>";
        k++;
    }
    qsort(all, nf, sizeof *all, cmp_fail); /* groups equal shapes (counts all 1) */
    uint32_t n = 0;
    for (uint32_t i = 0; i < nf; i++) {
        if (n && all[n - 1].cpu_milli == all[i].cpu_milli && all[n - 1].num_gpu == all[i].num_gpu &&
            all[n - 1].gpu_milli == all[i].gpu_milli &&
            strcmp(all[n - 1].gpu_type, all[i].gpu_type) == 0) {
            all[n - 1].count++;
        } else {
            all[n++] = all[i];
        }
    }
    qsort(all, n, sizeof *all, cmp_fail);
    res->fails = all;
    res->nfails = n;
    return 0;
}

/* ---------------------------------------------------------------- the run */

static int run_setup(run *r, const gs_fgd_workload *w, gs_error *err)
{
    r->nnodes = w->nnodes;
    r->nodes = malloc(sizeof *r->nodes * w->nnodes);
    r->feasible = malloc(sizeof *r->feasible * w->nnodes);
    r->leaves = 1;
    while (r->leaves < w->nnodes)
        r->leaves <<= 1;
    r->tree = calloc((size_t)2 * r->leaves * GS_FRAG_NCAT, sizeof(double));
    if (!r->nodes || !r->feasible || !r->tree)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory starting a run");
    if (r->pol->cache_scores && !r->no_cache && w->nkeys &&
        (size_t)w->nnodes * w->nkeys <= FGD_CACHE_MAX_ENTRIES) {
        size_t n = (size_t)w->nnodes * w->nkeys;
        r->cache_score = malloc(sizeof *r->cache_score * n);
        r->cache_hint = malloc(n);
        if (!r->cache_score || !r->cache_hint) {
            free(r->cache_score);
            free(r->cache_hint);
            r->cache_score = NULL; /* run uncached */
            r->cache_hint = NULL;
        } else {
            for (size_t i = 0; i < n; i++)
                r->cache_score[i] = CACHE_UNKNOWN;
        }
    }
    return 0;
}

int gs_fgd_run(const gs_fgd_workload *w, const gs_fgd_opts *opts, gs_fgd_result *out,
               gs_error *err)
{
    gs_fgd_opts o;
    if (opts)
        o = *opts;
    else
        gs_fgd_opts_defaults(&o);
    memset(out, 0, sizeof *out);
    if (!o.policy)
        o.policy = "fgd";
    int pi = gs_fgd_policy_find(o.policy, err);
    if (pi < 0)
        return -1;
    if (!(o.tune <= 1000.0)) /* also rejects NaN */
        return gs_fail(err, GS_ERR_USAGE, "tune ratio %g is out of range (at most 1000)", o.tune);
    run r;
    memset(&r, 0, sizeof r);
    r.w = w;
    r.pol = &gs_sim_policy_table(NULL)[pi];
    gs_rng_seed(&r.rng, o.seed);
    r.ctx.w = w;
    r.ctx.rng = &r.rng;
    r.no_cache = o.no_score_cache;
    out->policy = r.pol->name;
    out->label = r.pol->label;
    out->seed = o.seed;
    out->tune = o.tune;
    out->total_gpus = w->gpus_total;

    if (run_setup(&r, w, err) < 0 || build_list(&r, &o, out, err) < 0)
        goto fail;

    /* step 4: tie-break permutation; nodes laid out in rank order */
    {
        uint32_t *perm = malloc(sizeof *perm * w->nnodes);
        if (!perm) {
            gs_fail(err, GS_ERR_NOMEM, "out of memory starting a run");
            goto fail;
        }
        for (uint32_t i = 0; i < w->nnodes; i++) {
            uint32_t j = (uint32_t)gs_rng_below(&r.rng, (uint64_t)i + 1);
            perm[i] = perm[j];
            perm[j] = i;
        }
        for (uint32_t i = 0; i < w->nnodes; i++)
            r.nodes[perm[i]] = w->nodes[i];
        free(perm);
        for (uint32_t i = 0; i < w->nnodes; i++) {
            double cats[GS_FRAG_NCAT];
            const gs_sim_node *n = &w->nodes[i];
            gs_ftypes_eval(&w->ft, n->model, n->cpu_left, n->left, n->ngpus, cats);
            memcpy(&r.tree[(size_t)(r.leaves + i) * GS_FRAG_NCAT], cats, sizeof cats);
        }
        for (uint32_t k = r.leaves; k-- > 1;)
            for (int c = 0; c < GS_FRAG_NCAT; c++)
                r.tree[(size_t)k * GS_FRAG_NCAT + c] = r.tree[(size_t)(2 * k) * GS_FRAG_NCAT + c] +
                                                      r.tree[(size_t)(2 * k + 1) * GS_FRAG_NCAT + c];
    }

    out->events = malloc(sizeof *out->events * (r.nlist ? r.nlist : 1));
    if (o.record_categories)
        out->categories = malloc(sizeof(double) * GS_FRAG_NCAT * (r.nlist ? r.nlist : 1));
    if (!out->events || (o.record_categories && !out->categories)) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory for %u events", r.nlist);
        goto fail;
    }
    out->first_failure = r.nlist;

    /* step 5: every pod in order */
    int64_t arrived = 0, used = 0;
    uint64_t evals = 0;
    for (uint32_t e = 0; e < r.nlist; e++) {
        const gs_sim_pod *p = &w->pods[r.list_pod[e]];
        arrived += pod_gpu_milli(p);
        uint32_t nf = 0;
        for (uint32_t k = 0; k < r.nnodes; k++)
            if (feasible(w, &r.nodes[k], p))
                r.feasible[nf++] = &r.nodes[k];
        gs_sim_node *chosen = NULL;
        uint8_t hint = 0;
        if (nf == 1) {
            /* Kubernetes skips scoring; the score call only yields FGD's GPU choice */
            chosen = (gs_sim_node *)r.feasible[0];
            (void)score_node(&r, chosen, p, &hint, &evals);
        } else if (nf > 1) {
            if (r.pol->prescore)
                r.pol->prescore(&r.ctx, r.feasible, nf);
            int best = 0;
            for (uint32_t k = 0; k < nf; k++) {
                uint8_t h = 0;
                int s = score_node(&r, r.feasible[k], p, &h, &evals);
                if (!chosen || s > best) {
                    best = s;
                    chosen = (gs_sim_node *)r.feasible[k];
                    hint = h;
                }
            }
        }
        gs_fgd_event *ev = &out->events[e];
        memset(ev, 0, sizeof *ev);
        ev->pod = r.list_pod[e];
        ev->clone = r.list_clone[e];
        if (chosen) {
            uint8_t gpus[GS_SIM_MAX_GPUS] = {0};
            if (p->milli > 0)
                r.pol->pick_gpus(&r.ctx, chosen, p, hint, gpus);
            bind(&r, chosen, p, gpus);
            used += pod_gpu_milli(p);
            ev->node = (int32_t)chosen->index;
            ev->ngpus = (uint8_t)(p->milli > 0 ? p->count : 0);
            memcpy(ev->gpus, gpus, ev->ngpus);
            out->summary.scheduled++;
        } else {
            ev->node = -1;
            out->summary.failed++;
            if (out->first_failure == r.nlist)
                out->first_failure = e;
        }
        double frag, idle;
        cluster_now(&r, &frag, &idle,
                    out->categories ? &out->categories[(size_t)e * GS_FRAG_NCAT] : NULL);
        ev->arrived_milli = arrived;
        ev->used_milli = used;
        ev->frag_milli = frag;
        ev->frag_ratio = idle > 0 ? 100.0 * frag / idle : 0.0;
    }
    out->nevents = r.nlist;
    out->score_evals = evals;

    /* summary (InitSchedule) */
    gs_fgd_summary *sm = &out->summary;
    sm->pods = r.nlist;
    sm->cpu_total = w->cpu_total;
    sm->mem_total = w->mem_total;
    sm->gpus_total = w->gpus_total;
    sm->milli_total = (int64_t)w->gpus_total * GS_SIM_MILLI;
    sm->milli_used = used;
    for (uint32_t k = 0; k < r.nnodes; k++) {
        const gs_sim_node *n = &r.nodes[k];
        sm->cpu_used += n->cpu_alloc - n->cpu_left;
        sm->mem_used += w->nodes[n->index].mem_left - n->mem_left;
        for (uint32_t g = 0; g < n->ngpus; g++)
            sm->gpus_used += n->left[g] < GS_SIM_MILLI;
    }
    {
        double idle;
        cluster_now(&r, &sm->frag_milli, &idle, sm->categories);
        sm->frag_ratio = idle > 0 ? 100.0 * sm->frag_milli / idle : 0.0;
    }
    if (build_curves(out, o.tune, err) < 0 || build_fails(&r, out, err) < 0)
        goto fail;
    run_free(&r);
    return 0;
fail:
    run_free(&r);
    gs_fgd_result_free(out);
    return -1;
}

void gs_fgd_result_free(gs_fgd_result *r)
{
    if (!r)
        return;
    free(r->events);
    free(r->categories);
    free(r->curves.alloc);
    free(r->curves.frag);
    free(r->curves.frag_ratio);
    free(r->fails);
    memset(r, 0, sizeof *r);
}

/* ================================================================ CSV */

/* Python's repr of a float: the shortest digits that read back to the same value, in
 * fixed notation for decimal exponents -4..15 and scientific otherwise. */
void gs_fgd_put_number(gs_strbuf *sb, double v)
{
    if (isnan(v))
        return;
    if (isinf(v)) {
        gs_strbuf_puts(sb, v < 0 ? "-inf" : "inf");
        return;
    }
    char buf[64];
    int prec;
    for (prec = 0; prec < 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    snprintf(buf, sizeof buf, "%.*e", prec, v);
    /* buf: [-]d[.ddd]e[+-]XX */
    const char *s = buf;
    bool neg = *s == '-';
    if (neg)
        s++;
    char digits[32];
    size_t nd = 0;
    while (*s && *s != 'e') {
        if (*s >= '0' && *s <= '9' && nd < sizeof digits - 1)
            digits[nd++] = *s;
        s++;
    }
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = 0;
    int exp10 = *s == 'e' ? atoi(s + 1) : 0;
    if (neg)
        gs_strbuf_putc(sb, '-');
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 >= 0) {
            for (int i = 0; i <= exp10; i++)
                gs_strbuf_putc(sb, (size_t)i < nd ? digits[i] : '0');
            gs_strbuf_putc(sb, '.');
            if ((size_t)exp10 + 1 < nd)
                gs_strbuf_puts(sb, digits + exp10 + 1);
            else
                gs_strbuf_putc(sb, '0');
        } else {
            gs_strbuf_puts(sb, "0.");
            for (int i = 0; i < -exp10 - 1; i++)
                gs_strbuf_putc(sb, '0');
            gs_strbuf_puts(sb, digits);
        }
    } else {
        gs_strbuf_putc(sb, digits[0]);
        if (nd > 1) {
            gs_strbuf_putc(sb, '.');
            gs_strbuf_puts(sb, digits + 1);
        }
        gs_strbuf_printf(sb, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    }
}

void gs_fgd_csv_header(gs_fgd_csv which, uint32_t nx, gs_strbuf *sb)
{
    gs_strbuf_puts(sb, "workload,sc_policy,tune,seed");
    if (which == GS_FGD_CSV_ALLOC)
        gs_strbuf_puts(sb, ",total_gpus");
    for (uint32_t x = 0; x < nx; x++)
        gs_strbuf_printf(sb, ",%u", x);
}

/* A CSV cell: quoted when it holds a comma, quote or line break. */
static void put_cell(gs_strbuf *sb, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        gs_strbuf_puts(sb, s);
        return;
    }
    gs_strbuf_putc(sb, '"');
    for (; *s; s++) {
        if (*s == '"')
            gs_strbuf_putc(sb, '"');
        gs_strbuf_putc(sb, *s);
    }
    gs_strbuf_putc(sb, '"');
}

void gs_fgd_csv_row(const gs_fgd_result *r, gs_fgd_csv which, const char *workload,
                    gs_strbuf *sb)
{
    put_cell(sb, workload ? workload : "");
    gs_strbuf_putc(sb, ',');
    put_cell(sb, r->label ? r->label : "");
    gs_strbuf_putc(sb, ',');
    gs_fgd_put_number(sb, r->tune);
    gs_strbuf_printf(sb, ",%llu", (unsigned long long)r->seed);
    const double *v = which == GS_FGD_CSV_ALLOC  ? r->curves.alloc
                      : which == GS_FGD_CSV_FRAG ? r->curves.frag
                                                 : r->curves.frag_ratio;
    if (which == GS_FGD_CSV_ALLOC)
        gs_strbuf_printf(sb, ",%u", r->total_gpus);
    for (uint32_t x = 0; x < r->curves.nx; x++) {
        gs_strbuf_putc(sb, ',');
        gs_fgd_put_number(sb, v[x]);
    }
}

void gs_fgd_csv_fail_header(gs_strbuf *sb)
{
    gs_strbuf_puts(sb, "order,workload,sc_policy,tune,seed,num_pod,cpu_milli,num_gpu,gpu_milli,"
                       "gpu_type_req");
}

void gs_fgd_csv_fail_rows(const gs_fgd_result *r, const char *workload, gs_strbuf *sb)
{
    for (uint32_t i = 0; i < r->nfails; i++) {
        const gs_fgd_fail_shape *f = &r->fails[i];
        gs_strbuf_printf(sb, "%u,", i);
        put_cell(sb, workload ? workload : "");
        gs_strbuf_putc(sb, ',');
        put_cell(sb, r->label ? r->label : "");
        gs_strbuf_putc(sb, ',');
        gs_fgd_put_number(sb, r->tune);
        gs_strbuf_printf(sb, ",%llu,%u,%lld,%u,%u,", (unsigned long long)r->seed, f->count,
                         (long long)f->cpu_milli, f->num_gpu, f->gpu_milli);
        put_cell(sb, f->gpu_type);
        gs_strbuf_putc(sb, '\n');
    }
}
