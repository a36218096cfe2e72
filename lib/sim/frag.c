/*
 * frag.c - the FGD paper's fragmentation measure: the target workload ("typical pods"),
 * the category of a node for one target type, and node / cluster fragmentation amounts.
 *
 * The measure (fgd-method.md section d): for a node and each target type t with weight
 * p_t, the node's idle GPU milli GL is assigned to a category (q1 lack both, q2 lack GPU,
 * q3 satisfied, q4 lack CPU, xl/xr for CPU-only types, no_access for a type whose GPU
 * model list excludes the node). A satisfied type counts only the GPUs too small for it
 * (left < milli) as q2 and the rest as q3. The node's amount per category is the
 * p-weighted sum over types; its fragmentation F_n is the sum of all categories but q3.
 *
 * Float order matters (FGD truncates sigmoid(dF/1000)*100 to an integer, so an ulp can move
 * a score from 50 to 49): the per-type accumulation lives in gs_frag_eval_core
 * (sim_int.h) and is shared with the runs; weights are computed exactly as the reference
 * does ((count/total) / (cum/total)).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

static const char *const cat_names[GS_FRAG_NCAT] = {
    "q1_lack_both", "q2_lack_gpu", "q3_satisfied", "q4_lack_cpu",
    "xl_satisfied", "xr_lack_cpu", "no_access",
};

const char *gs_frag_cat_name(gs_frag_cat c)
{
    return (unsigned)c < GS_FRAG_NCAT ? cat_names[c] : "unknown";
}

bool gs_frag_type_admits(const char *gpu_type, const char *model)
{
    if (!gpu_type || !gpu_type[0])
        return true;
    if (!model || !model[0])
        return false; /* a constrained type never matches a model-less (CPU) node */
    size_t mlen = strlen(model);
    bool any = false;
    const char *s = gpu_type;
    for (;;) {
        const char *bar = strchr(s, '|');
        size_t n = bar ? (size_t)(bar - s) : strlen(s);
        if (n > 0) {
            any = true;
            if (n == mlen && memcmp(s, model, n) == 0)
                return true;
        }
        if (!bar)
            break;
        s = bar + 1;
    }
    return !any; /* only empty parts: no constraint */
}

gs_frag_cat gs_frag_classify(const gs_frag_node *n, const gs_frag_podres *t)
{
    uint32_t ng = n->ngpus > GS_SIM_MAX_GPUS ? GS_SIM_MAX_GPUS : n->ngpus;
    bool cpu_ok = n->cpu_left >= t->cpu_milli;
    if (t->gpu_milli == 0)
        return cpu_ok ? GS_FRAG_XL_SATISFIED : GS_FRAG_XR_LACK_CPU;
    if (!gs_frag_type_admits(t->gpu_type, n->model))
        return GS_FRAG_NO_ACCESS;
    int32_t fit = 0;
    for (uint32_t i = 0; i < ng; i++)
        if (n->gpu_left[i] >= t->gpu_milli)
            fit++;
    bool gpu_ok = t->num_gpu <= 0 ? fit >= 1 : fit >= t->num_gpu;
    if (gpu_ok)
        return cpu_ok ? GS_FRAG_Q3_SATISFIED : GS_FRAG_Q4_LACK_CPU;
    return cpu_ok ? GS_FRAG_Q2_LACK_GPU : GS_FRAG_Q1_LACK_BOTH;
}

/* Admission row of a target for one model (malloc'ed). */
static uint8_t *admit_row(const gs_frag_target *t, const char *model)
{
    uint8_t *row = malloc(t->ntypes ? t->ntypes : 1);
    if (!row)
        return NULL;
    for (uint32_t i = 0; i < t->ntypes; i++)
        row[i] = t->types[i].res.gpu_milli == 0 || gs_frag_type_admits(t->types[i].res.gpu_type, model);
    return row;
}

/* The target's columns as arrays (malloc'ed, one block). */
typedef struct soa {
    int64_t *cpu;
    int32_t *milli, *count;
    double *weight;
    void *block;
} soa;

static int soa_build(const gs_frag_target *t, soa *s)
{
    size_t n = t->ntypes ? t->ntypes : 1;
    s->block = malloc(n * (sizeof(int64_t) + 2 * sizeof(int32_t) + sizeof(double)));
    if (!s->block)
        return -1;
    s->cpu = s->block;
    s->weight = (double *)(s->cpu + n);
    s->milli = (int32_t *)(s->weight + n);
    s->count = s->milli + n;
    for (uint32_t i = 0; i < t->ntypes; i++) {
        s->cpu[i] = t->types[i].res.cpu_milli;
        s->milli[i] = t->types[i].res.gpu_milli;
        s->count[i] = t->types[i].res.num_gpu;
        s->weight[i] = t->types[i].weight;
    }
    return 0;
}

static double node_amount(const gs_frag_node *n, const gs_frag_target *t, const soa *s,
                          double cats[GS_FRAG_NCAT], bool *oom)
{
    double data[GS_FRAG_NCAT];
    uint8_t *row = admit_row(t, n->model);
    if (!row) {
        *oom = true;
        if (cats)
            for (int c = 0; c < GS_FRAG_NCAT; c++)
                cats[c] = NAN;
        return NAN;
    }
    uint32_t ng = n->ngpus > GS_SIM_MAX_GPUS ? GS_SIM_MAX_GPUS : n->ngpus;
    gs_frag_eval_core(t->ntypes, s->cpu, s->milli, s->count, s->weight, row, n->cpu_left,
                      n->gpu_left, ng, data);
    free(row);
    if (cats)
        memcpy(cats, data, sizeof data);
    return gs_frag_sum_except_q3(data);
}

double gs_frag_node_amount(const gs_frag_node *n, const gs_frag_target *t,
                           double cats[GS_FRAG_NCAT])
{
    soa s;
    bool oom = false;
    if (soa_build(t, &s) < 0) {
        if (cats)
            for (int c = 0; c < GS_FRAG_NCAT; c++)
                cats[c] = NAN;
        return NAN;
    }
    double v = node_amount(n, t, &s, cats, &oom);
    free(s.block);
    return v;
}

struct gs_frag_prepared {
    gs_arena arena;
    gs_ftypes ft;
};

gs_frag_prepared *gs_frag_prepare(const gs_frag_target *t, const char *model, gs_error *err)
{
    gs_frag_prepared *p = calloc(1, sizeof *p);
    if (!p) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory preparing the target workload");
        return NULL;
    }
    gs_arena_init(&p->arena, 0);
    const char *const models[1] = {model ? model : ""};
    if (gs_ftypes_build(&p->ft, t, models, 1, &p->arena, err) != 0) {
        gs_frag_prepared_free(p);
        return NULL;
    }
    return p;
}

double gs_frag_prepared_amount(const gs_frag_prepared *p, const gs_frag_node *n)
{
    uint32_t ng = n->ngpus > GS_SIM_MAX_GPUS ? GS_SIM_MAX_GPUS : n->ngpus;
    return gs_ftypes_frag(&p->ft, 0, n->cpu_left, n->gpu_left, ng);
}

void gs_frag_prepared_free(gs_frag_prepared *p)
{
    if (!p)
        return;
    gs_arena_free(&p->arena);
    free(p);
}

double gs_frag_cluster(const gs_frag_node *nodes, uint32_t nnodes, const gs_frag_target *t,
                       double cats[GS_FRAG_NCAT], double *idle)
{
    double sum[GS_FRAG_NCAT] = {0};
    soa s;
    bool oom = false;
    if (soa_build(t, &s) == 0) {
        for (uint32_t i = 0; i < nnodes; i++) {
            double c[GS_FRAG_NCAT];
            node_amount(&nodes[i], t, &s, c, &oom);
            for (int k = 0; k < GS_FRAG_NCAT; k++)
                sum[k] += c[k];
        }
        free(s.block);
    } else {
        oom = true;
    }
    if (oom)
        for (int k = 0; k < GS_FRAG_NCAT; k++)
            sum[k] = NAN;
    if (cats)
        memcpy(cats, sum, sizeof sum);
    if (idle) {
        double v = 0.0;
        for (int k = 0; k < GS_FRAG_NCAT; k++)
            v += sum[k];
        *idle = v;
    }
    return gs_frag_sum_except_q3(sum);
}

/* ---------------------------------------------------------------- target workload */

void gs_frag_target_free(gs_frag_target *t)
{
    gs_arena_free(&t->arena);
    memset(t, 0, sizeof *t);
}

/* Sort order of the reference: count descending, then the resource key descending
 * (cpu, gpu milli, GPU count, type string). */
static int key_less(const gs_frag_podres *a, const gs_frag_podres *b)
{
    if (a->cpu_milli != b->cpu_milli)
        return a->cpu_milli < b->cpu_milli;
    if (a->gpu_milli != b->gpu_milli)
        return a->gpu_milli < b->gpu_milli;
    if (a->num_gpu != b->num_gpu)
        return a->num_gpu < b->num_gpu;
    return strcmp(a->gpu_type, b->gpu_type) < 0;
}

static int key_cmp(const gs_frag_podres *a, const gs_frag_podres *b)
{
    if (key_less(a, b))
        return -1;
    if (key_less(b, a))
        return 1;
    return 0;
}

static int cmp_keys_asc(const void *x, const void *y)
{
    return key_cmp(*(const gs_frag_podres *const *)x, *(const gs_frag_podres *const *)y);
}

static int cmp_types_popular(const void *x, const void *y)
{
    const gs_frag_type *a = x, *b = y;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return -key_cmp(&a->res, &b->res);
}

int gs_frag_target_workload(const gs_frag_podres *pods, uint32_t npods, double threshold_pct,
                            gs_frag_target *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    gs_arena_init(&out->arena, 0);
    out->npods = npods;
    if (npods == 0)
        return 0;
    const gs_frag_podres **order = malloc(sizeof *order * npods);
    if (!order)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory building the target workload");
    for (uint32_t i = 0; i < npods; i++) {
        order[i] = &pods[i];
        if (!pods[i].gpu_type) {
            free(order);
            return gs_fail(err, GS_ERR_INTERNAL, "pod key %u has no GPU type string", i);
        }
    }
    qsort(order, npods, sizeof *order, cmp_keys_asc);
    uint32_t nkeys = 0;
    for (uint32_t i = 0; i < npods; i++)
        if (i == 0 || key_cmp(order[i - 1], order[i]) != 0)
            nkeys++;
    gs_frag_type *types = malloc(sizeof *types * nkeys);
    if (!types) {
        free(order);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory building the target workload");
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < npods; i++) {
        if (i == 0 || key_cmp(order[i - 1], order[i]) != 0) {
            types[k].res = *order[i];
            types[k].count = 0;
            types[k].weight = 0.0;
            k++;
        }
        types[k - 1].count++;
    }
    free(order);
    qsort(types, nkeys, sizeof *types, cmp_types_popular);

    /* Take keys one at a time until the cumulative count reaches the threshold. */
    double total = (double)npods;
    double expected = threshold_pct * total / 100.0;
    double cum = 0.0;
    uint32_t taken = 0;
    while (cum < expected && taken < nkeys) {
        cum += (double)types[taken].count;
        types[taken].weight = (double)types[taken].count / total;
        taken++;
    }
    if (taken < nkeys) {
        for (uint32_t j = 0; j < taken; j++)
            types[j].weight /= cum / total;
    }
    out->nkeys = nkeys;
    out->ntypes = taken;
    out->coverage = cum / total;
    out->types = gs_arena_alloc(&out->arena, sizeof *out->types * (taken ? taken : 1));
    if (!out->types) {
        free(types);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory building the target workload");
    }
    for (uint32_t j = 0; j < taken; j++) {
        out->types[j] = types[j];
        out->types[j].res.gpu_type = gs_arena_strdup(&out->arena, types[j].res.gpu_type);
        if (!out->types[j].res.gpu_type) {
            free(types);
            return gs_fail(err, GS_ERR_NOMEM, "out of memory building the target workload");
        }
    }
    free(types);
    return 0;
}

int gs_frag_target_from_list(const gs_frag_type *types, uint32_t ntypes, gs_frag_target *out,
                             gs_error *err)
{
    memset(out, 0, sizeof *out);
    gs_arena_init(&out->arena, 0);
    out->types = gs_arena_alloc(&out->arena, sizeof *out->types * (ntypes ? ntypes : 1));
    if (!out->types)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory building the target workload");
    double sum = 0.0;
    for (uint32_t i = 0; i < ntypes; i++) {
        out->types[i] = types[i];
        out->types[i].res.gpu_type =
            gs_arena_strdup(&out->arena, types[i].res.gpu_type ? types[i].res.gpu_type : "");
        if (!out->types[i].res.gpu_type)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory building the target workload");
        out->npods += types[i].count;
        sum += types[i].weight;
    }
    out->ntypes = ntypes;
    out->nkeys = ntypes;
    out->coverage = sum;
    return 0;
}

/* ---------------------------------------------------------------- hot-loop table */

int gs_ftypes_build(gs_ftypes *ft, const gs_frag_target *t, const char *const *models,
                    uint32_t nmodels, gs_arena *a, gs_error *err)
{
    uint32_t n = t->ntypes;
    size_t nn = n ? n : 1;
    int64_t *cpu = gs_arena_alloc(a, sizeof *cpu * nn);
    int32_t *milli = gs_arena_alloc(a, sizeof *milli * nn);
    int32_t *count = gs_arena_alloc(a, sizeof *count * nn);
    double *weight = gs_arena_alloc(a, sizeof *weight * nn);
    uint8_t *admit = gs_arena_alloc(a, nn * (nmodels ? nmodels : 1));
    if (!cpu || !milli || !count || !weight || !admit)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory preparing the target workload");
    for (uint32_t i = 0; i < n; i++) {
        cpu[i] = t->types[i].res.cpu_milli;
        milli[i] = t->types[i].res.gpu_milli;
        count[i] = t->types[i].res.num_gpu;
        weight[i] = t->types[i].weight;
    }
    for (uint32_t m = 0; m < nmodels; m++)
        for (uint32_t i = 0; i < n; i++)
            admit[(size_t)m * n + i] =
                milli[i] == 0 || gs_frag_type_admits(t->types[i].res.gpu_type, models[m]);
    ft->n = n;
    ft->cpu = cpu;
    ft->milli = milli;
    ft->count = count;
    ft->weight = weight;
    ft->admit = admit;
    ft->nmodels = nmodels;
    return 0;
}
