/*
 * report.c - run records of `gpusched simulate`, the replay metrics, and the JSON and CSV
 * writers and the JSON reader that merges shards (include/gpusched/report.h). The HTML
 * report is in report_html.c.
 *
 * Replay metrics (docs/simulate-replay.md defines each one):
 *  - pending time: per admitted pod, gs_replay_pod.waited (every queue stay, still-pending
 *    pods counted up to the end); nearest-rank percentiles per PriorityClass (name and
 *    resolved priority) and per GPU request shape (gs_gpu_request_describe);
 *  - time averages: the samples are a step function (each holds until the next); the
 *    averages weight each sample by the time it holds over [first sample, last sample];
 *  - the allocation curve over arrived load: every sample is an event with
 *    A = GPUs requested by the pods arrived so far and U = GPUs allocated; x and the
 *    bucket means follow the FGD artifact's merge rule (fgd-method.md section e), so the
 *    CSV rows read like analysis_allo_discrete.csv.
 *
 * JSON: written by a small emitter here (objects one key per line, arrays of numbers on
 * one line), numbers in their shortest round-trip form (gs_fgd_put_number), NaN and
 * infinities as null. Read back by a strict RFC 8259 parser into a tree (line and column
 * per value, depth <= 64, size bounded by the caller's read), then decoded field by field.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/gpu.h"
#include "gpusched/report.h"
#include "util/json_int.h"

#define RUN_ARENA_BLOCK (16 * 1024)

const char *gs_sim_method_name(gs_sim_method m)
{
    return m == GS_SIM_REPLAY ? "replay" : "fgd";
}

/* ================================================================ small helpers */

/* Python's round(x, 2): printf rounds the exact binary value correctly, half to even. */
static double round2(double x)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.2f", x);
    return strtod(buf, NULL);
}

void gs_format_duration(int64_t s, char *buf, size_t cap)
{
    if (!cap)
        return;
    bool neg = s < 0;
    uint64_t u = neg ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
    uint64_t d = u / 86400, h = u % 86400 / 3600, m = u % 3600 / 60, sec = u % 60;
    const char *sign = neg ? "-" : "";
    /* the largest unit, then the next one unless it is zero */
    uint64_t big, small;
    const char *bu, *su;
    if (d) {
        big = d, small = h, bu = "d", su = "h";
    } else if (h) {
        big = h, small = m, bu = "h", su = "m";
    } else if (m) {
        big = m, small = sec, bu = "m", su = "s";
    } else {
        big = sec, small = 0, bu = "s", su = "";
    }
    if (small)
        snprintf(buf, cap, "%s%llu%s%llu%s", sign, (unsigned long long)big, bu,
                 (unsigned long long)small, su);
    else
        snprintf(buf, cap, "%s%llu%s", sign, (unsigned long long)big, bu);
}

int64_t gs_percentile(const int64_t *sorted, uint32_t n, double p)
{
    if (!n)
        return 0;
    if (p <= 0)
        return sorted[0];
    double rank = ceil(p / 100.0 * (double)n);
    uint32_t k = rank < 1 ? 1 : rank > n ? n : (uint32_t)rank;
    return sorted[k - 1];
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* GPUs a pod requests; a MIG instance counts as the fraction of its GPU that the model's
 * own compute slices make it (gs_mig_request_fraction: 2g.12gb is 2/4 of an A30), on
 * `hint` when the model is known. */
static double pod_gpu_amount_on(const gs_pod *pod, const gs_mig_model *hint)
{
    gs_gpu_request r;
    if (gs_gpu_request_from_pod(pod, &r, NULL) != 0)
        return 0;
    switch (r.kind) {
    case GS_GPU_WHOLE: return r.count;
    case GS_GPU_SHARE: return r.count * (r.milli ? r.milli / 1000.0 : 1.0);
    case GS_GPU_MIG: return r.count * gs_mig_request_fraction(r.mig_profile, hint);
    case GS_GPU_NONE: break;
    }
    return 0;
}

double gs_pod_gpu_amount(const gs_pod *pod) { return pod_gpu_amount_on(pod, NULL); }

/* The MIG model of a snapshot node, from its product label (NULL when none is known). */
static const gs_mig_model *node_mig_model(const gs_snapshot *snap, int32_t node)
{
    if (node < 0 || (uint32_t)node >= snap->nodes.n)
        return NULL;
    return gs_mig_model_find(gs_labels_get(&snap->nodes.v[node].meta.labels,
                                           "nvidia.com/gpu.product"));
}

/* The one MIG model of the cluster's nodes, or NULL when there are none or several. */
static const gs_mig_model *cluster_mig_model(const gs_snapshot *snap)
{
    const gs_mig_model *one = NULL;
    for (uint32_t n = 0; n < snap->nodes.n; n++) {
        const gs_mig_model *m = node_mig_model(snap, (int32_t)n);
        if (!m)
            continue;
        if (one && m != one)
            return NULL;
        one = m;
    }
    return one;
}

static int nomem(gs_error *err) { return gs_fail(err, GS_ERR_NOMEM, "out of memory (report)"); }

/* ================================================================ runs */

void gs_sim_run_init(gs_sim_run *r)
{
    memset(r, 0, sizeof *r);
    gs_arena_init(&r->arena, RUN_ARENA_BLOCK);
    r->workload = r->variant = r->policy = r->label = "";
    r->final_frag_ratio = NAN;
}

void gs_sim_run_free(gs_sim_run *r)
{
    gs_arena_free(&r->arena);
    memset(r, 0, sizeof *r);
}

static double *nan_array(gs_arena *a, uint32_t n)
{
    double *v = gs_arena_alloc(a, (n ? n : 1) * sizeof *v);
    if (v)
        for (uint32_t i = 0; i < n; i++)
            v[i] = NAN;
    return v;
}

static int set_names(gs_sim_run *out, const char *workload, const char *variant,
                     const char *policy, const char *label, gs_error *err)
{
    out->workload = gs_arena_strdup(&out->arena, workload ? workload : "");
    out->variant = gs_arena_strdup(&out->arena, variant ? variant : "");
    out->policy = gs_arena_strdup(&out->arena, policy ? policy : "");
    out->label = gs_arena_strdup(&out->arena, label ? label : "");
    if (!out->workload || !out->variant || !out->policy || !out->label)
        return nomem(err);
    return 0;
}

int gs_sim_run_from_fgd(gs_sim_run *out, uint32_t index, const char *workload,
                        const char *variant, const gs_fgd_result *res, gs_error *err)
{
    gs_sim_run_init(out);
    out->index = index;
    out->method = GS_SIM_FGD;
    if (set_names(out, workload, variant, res->policy, res->label, err))
        goto fail;
    out->seed = res->seed;
    out->tune = res->tune;
    out->total_gpus = res->total_gpus;
    out->nx = res->curves.nx;
    size_t bytes = (out->nx ? out->nx : 1) * sizeof(double);
    out->alloc = gs_arena_alloc(&out->arena, bytes);
    out->frag = gs_arena_alloc(&out->arena, bytes);
    out->frag_ratio = gs_arena_alloc(&out->arena, bytes);
    if (!out->alloc || !out->frag || !out->frag_ratio) {
        nomem(err);
        goto fail;
    }
    if (out->nx) {
        memcpy(out->alloc, res->curves.alloc, out->nx * sizeof(double));
        memcpy(out->frag, res->curves.frag, out->nx * sizeof(double));
        memcpy(out->frag_ratio, res->curves.frag_ratio, out->nx * sizeof(double));
    }
    out->nfails = res->nfails;
    out->fails = gs_arena_alloc(&out->arena, (res->nfails ? res->nfails : 1) * sizeof *out->fails);
    if (!out->fails) {
        nomem(err);
        goto fail;
    }
    for (uint32_t i = 0; i < res->nfails; i++) {
        out->fails[i] = res->fails[i];
        out->fails[i].gpu_type = gs_arena_strdup(&out->arena, res->fails[i].gpu_type);
        if (!out->fails[i].gpu_type) {
            nomem(err);
            goto fail;
        }
    }
    out->pods = res->summary.pods;
    out->scheduled = res->summary.scheduled;
    out->failed = res->summary.failed;
    out->final_alloc_pct = res->summary.milli_total
                               ? 100.0 * (double)res->summary.milli_used /
                                     (double)res->summary.milli_total
                               : 0;
    out->final_frag_ratio = res->summary.frag_ratio;
    return 0;
fail:
    gs_sim_run_free(out);
    return -1;
}

/* ---------------------------------------------------------------- replay metrics */

typedef struct pod_key {
    uint32_t pod;
    uint32_t group; /* intern id */
} pod_key;

static int cmp_pod_key(const void *a, const void *b)
{
    const pod_key *x = a, *y = b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    return (x->pod > y->pod) - (x->pod < y->pod);
}

/* Percentiles and CDF of one group; waits must be sorted ascending. */
static void fill_wait(gs_wait_stats *w, const int64_t *waits, uint32_t n)
{
    w->pods = n;
    w->p50 = gs_percentile(waits, n, 50);
    w->p90 = gs_percentile(waits, n, 90);
    w->p95 = gs_percentile(waits, n, 95);
    w->p99 = gs_percentile(waits, n, 99);
    w->max = n ? waits[n - 1] : 0;
    double sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += (double)waits[i];
    w->mean = n ? sum / n : 0;
    for (int k = 0; k <= 20; k++)
        w->cdf[k] = gs_percentile(waits, n, 5.0 * k);
}

/* Group the admitted pods by `ids` (one intern id per pod, -1 = not in any group) and fill
 * one gs_wait_stats per group, in id order. names: the intern table. */
static int group_waits(const gs_replay_result *res, const int32_t *ids, const gs_intern *names,
                       const int32_t *group_prio, gs_arena *arena, gs_wait_stats **out,
                       uint32_t *nout, gs_error *err)
{
    uint32_t ng = names->n;
    *out = NULL;
    *nout = 0;
    pod_key *keys = malloc((res->npods ? res->npods : 1) * sizeof *keys);
    int64_t *waits = malloc((res->npods ? res->npods : 1) * sizeof *waits);
    gs_wait_stats *g = gs_arena_alloc(arena, (ng ? ng : 1) * sizeof *g);
    if (!keys || !waits || !g) {
        free(keys);
        free(waits);
        return nomem(err);
    }
    uint32_t nk = 0;
    for (uint32_t i = 0; i < res->npods; i++)
        if (ids[i] >= 0)
            keys[nk++] = (pod_key){i, (uint32_t)ids[i]};
    qsort(keys, nk, sizeof *keys, cmp_pod_key);
    uint32_t k = 0;
    for (uint32_t gi = 0; gi < ng; gi++) {
        uint32_t n = 0, never = 0;
        for (; k < nk && keys[k].group == gi; k++) {
            const gs_replay_pod *p = &res->pods[keys[k].pod];
            waits[n++] = p->waited;
            if (p->state == GS_RP_PENDING && p->first_start < 0)
                never++;
        }
        qsort(waits, n, sizeof *waits, cmp_i64);
        memset(&g[gi], 0, sizeof g[gi]);
        g[gi].name = gs_arena_strdup(arena, gs_intern_str(names, (int32_t)gi));
        g[gi].priority = group_prio ? group_prio[gi] : 0;
        if (!g[gi].name) {
            free(keys);
            free(waits);
            return nomem(err);
        }
        fill_wait(&g[gi], waits, n);
        g[gi].never_started = never;
    }
    free(keys);
    free(waits);
    *out = g;
    *nout = ng;
    return 0;
}

static int cmp_class(const void *a, const void *b)
{
    const gs_wait_stats *x = a, *y = b;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_shape(const void *a, const void *b)
{
    const gs_wait_stats *x = a, *y = b;
    if (x->pods != y->pods)
        return x->pods > y->pods ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_reason(const void *a, const void *b)
{
    const gs_reason_stat *x = a, *y = b;
    if (x->pods != y->pods)
        return x->pods > y->pods ? -1 : 1;
    if (x->rejected != y->rejected)
        return x->rejected ? 1 : -1;
    return strcmp(x->reason, y->reason);
}

static void shape_name(const gs_pod *p, char *buf, size_t cap)
{
    gs_gpu_request r;
    if (gs_gpu_request_from_pod(p, &r, NULL) != 0)
        snprintf(buf, cap, "invalid GPU request");
    else
        gs_gpu_request_describe(&r, buf, cap);
}

/* Time averages and peaks of the sample step function. */
static void time_stats(const gs_replay_result *res, gs_replay_metrics *m)
{
    uint32_t n = res->nsamples;
    double total = res->gpus_total ? (double)res->gpus_total : 1.0;
    double w_sum = 0, a = 0, st = 0, gn = 0, nn = 0, mu = 0, mi = 0, mp = 0;
    for (uint32_t i = 0; i < n; i++) {
        const gs_replay_sample *s = &res->samples[i];
        double pct = 100.0 * s->gpus_allocated / total;
        if (pct > m->alloc_peak_pct)
            m->alloc_peak_pct = pct;
        if (s->gpus_stranded > m->stranded_peak)
            m->stranded_peak = s->gpus_stranded;
        if (s->gpu_nodes_used > m->gpu_nodes_peak)
            m->gpu_nodes_peak = s->gpu_nodes_used;
        if (s->nodes_used > m->nodes_peak)
            m->nodes_peak = s->nodes_used;
        if (s->mig_idle > m->mig_idle_peak)
            m->mig_idle_peak = s->mig_idle;
        if (s->mig_unpartitioned > m->mig_unpart_peak)
            m->mig_unpart_peak = s->mig_unpartitioned;
        if (s->mig_reconfiguring > m->mig_reconfiguring_peak)
            m->mig_reconfiguring_peak = s->mig_reconfiguring;
        double w = i + 1 < n ? (double)(res->samples[i + 1].t - s->t) : 0;
        w_sum += w;
        a += w * pct;
        st += w * s->gpus_stranded;
        gn += w * s->gpu_nodes_used;
        nn += w * s->nodes_used;
        mu += w * s->mig_used;
        mi += w * s->mig_idle;
        mp += w * s->mig_unpartitioned;
    }
    if (w_sum > 0) {
        m->alloc_mean_pct = a / w_sum;
        m->stranded_mean = st / w_sum;
        m->gpu_nodes_mean = gn / w_sum;
        m->nodes_mean = nn / w_sum;
        m->mig_used_mean = mu / w_sum;
        m->mig_idle_mean = mi / w_sum;
        m->mig_unpart_mean = mp / w_sum;
    } else if (n) { /* one instant */
        const gs_replay_sample *s = &res->samples[n - 1];
        m->mig_used_mean = s->mig_used;
        m->mig_idle_mean = s->mig_idle;
        m->mig_unpart_mean = s->mig_unpartitioned;
        m->alloc_mean_pct = 100.0 * s->gpus_allocated / total;
        m->stranded_mean = s->gpus_stranded;
        m->gpu_nodes_mean = s->gpu_nodes_used;
        m->nodes_mean = s->nodes_used;
    }
}

int gs_replay_metrics_compute(const gs_snapshot *snap, const gs_replay_result *res,
                              gs_arena *arena, gs_replay_metrics *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    if (res->npods != snap->pods.n)
        return gs_fail(err, GS_ERR_INTERNAL, "replay result and snapshot disagree (%u vs %zu pods)",
                       res->npods, snap->pods.n);
    int rc = -1;
    int32_t *class_id = malloc((res->npods ? res->npods : 1) * sizeof *class_id);
    int32_t *shape_id = malloc((res->npods ? res->npods : 1) * sizeof *shape_id);
    int32_t *all_id = malloc((res->npods ? res->npods : 1) * sizeof *all_id);
    int32_t *class_prio = NULL;
    gs_intern classes, shapes, all, reasons;
    gs_intern_init(&classes);
    gs_intern_init(&shapes);
    gs_intern_init(&all);
    gs_intern_init(&reasons);
    GS_VEC(gs_reason_stat) rs = {NULL, 0, 0};
    if (!class_id || !shape_id || !all_id || gs_intern_id(&all, "all", 3) < 0) {
        nomem(err);
        goto done;
    }
    out->preemptions = res->preemptions;
    out->quota_rejections = res->quota_rejections;
    out->other_rejections = res->other_rejections;
    out->t_end = res->end_time;
    out->t_start = res->nsamples ? res->samples[0].t : res->end_time;
    out->mig_dynamic = res->mig_dynamic;
    out->mig_delay = res->mig_delay;
    out->mig_gpus = res->mig_gpus;
    out->mig_slices = res->mig_slices;
    out->mig_reconfigs = res->mig_reconfigs;
    for (uint32_t i = 0; i < res->npods; i++) {
        const gs_replay_pod *p = &res->pods[i];
        class_id[i] = shape_id[i] = all_id[i] = -1;
        if (p->state == GS_RP_NOT_ARRIVED)
            continue;
        out->arrived++;
        if (p->first_start >= 0)
            out->started++;
        switch (p->state) {
        case GS_RP_DONE: out->done++; break;
        case GS_RP_RUNNING: out->running++; break;
        case GS_RP_PENDING:
            out->pending++;
            if (p->first_start < 0) {
                out->never_started++;
                if (gs_pod_gpu_amount(&snap->pods.v[p->pod]) > 0)
                    out->never_started_gpu++;
            }
            break;
        case GS_RP_REJECTED: out->rejected++; break;
        case GS_RP_LOST: out->lost++; break;
        case GS_RP_NOT_ARRIVED: break;
        }
        if ((p->state == GS_RP_PENDING || p->state == GS_RP_REJECTED) && p->reason) {
            /* key: rejected flag + text, so the same text counts separately */
            char flag = p->state == GS_RP_REJECTED ? 'R' : 'P';
            size_t len = strlen(p->reason);
            char *key = malloc(len + 2);
            if (!key) {
                nomem(err);
                goto done;
            }
            key[0] = flag;
            memcpy(key + 1, p->reason, len + 1);
            int32_t id = gs_intern_id(&reasons, key, len + 1);
            free(key);
            if (id < 0) {
                nomem(err);
                goto done;
            }
            if ((size_t)id == rs.n) {
                gs_reason_stat r0 = {NULL, 0, flag == 'R'};
                if (gs_vec_push(rs, r0)) {
                    nomem(err);
                    goto done;
                }
            }
            rs.v[id].pods++;
        }
        if (p->state == GS_RP_REJECTED)
            continue;
        const gs_pod *pod = &snap->pods.v[p->pod];
        const char *cls = pod->priority_class_name ? pod->priority_class_name : "";
        char key[320];
        int kn = snprintf(key, sizeof key, "%d\n%.300s", (int)p->priority, cls);
        class_id[i] = gs_intern_id(&classes, key, (size_t)(kn < (int)sizeof key ? kn : (int)sizeof key - 1));
        char shape[256];
        shape_name(pod, shape, sizeof shape);
        shape_id[i] = gs_intern_id(&shapes, shape, strlen(shape));
        all_id[i] = 0;
        if (class_id[i] < 0 || shape_id[i] < 0) {
            nomem(err);
            goto done;
        }
    }
    /* classes: the intern key is "priority\nname"; split it back */
    class_prio = malloc((classes.n ? classes.n : 1) * sizeof *class_prio);
    if (!class_prio) {
        nomem(err);
        goto done;
    }
    for (uint32_t k = 0; k < classes.n; k++)
        class_prio[k] = (int32_t)strtol(classes.strs[k], NULL, 10);
    gs_wait_stats *all_stats = NULL;
    uint32_t nall = 0;
    if (group_waits(res, all_id, &all, NULL, arena, &all_stats, &nall, err) ||
        group_waits(res, class_id, &classes, class_prio, arena, &out->classes, &out->nclasses,
                    err) ||
        group_waits(res, shape_id, &shapes, NULL, arena, &out->shapes, &out->nshapes, err))
        goto done;
    out->all = all_stats[0];
    for (uint32_t k = 0; k < out->nclasses; k++) {
        const char *nl = strchr(out->classes[k].name, '\n');
        out->classes[k].name = nl ? nl + 1 : out->classes[k].name;
    }
    qsort(out->classes, out->nclasses, sizeof *out->classes, cmp_class);
    qsort(out->shapes, out->nshapes, sizeof *out->shapes, cmp_shape);
    /* reasons: top list */
    for (size_t k = 0; k < rs.n; k++) {
        rs.v[k].reason = gs_arena_strdup(arena, gs_intern_str(&reasons, (int32_t)k) + 1);
        if (!rs.v[k].reason) {
            nomem(err);
            goto done;
        }
    }
    if (rs.n)
        qsort(rs.v, rs.n, sizeof *rs.v, cmp_reason);
    out->nreasons = rs.n < GS_REPORT_MAX_REASONS ? (uint32_t)rs.n : GS_REPORT_MAX_REASONS;
    out->reasons = gs_arena_alloc(arena, (out->nreasons ? out->nreasons : 1) * sizeof *rs.v);
    if (out->reasons && out->nreasons)
        memcpy(out->reasons, rs.v, out->nreasons * sizeof *rs.v);
    /* series: evenly spaced samples, first and last kept */
    uint32_t ns = res->nsamples;
    out->nseries = ns < GS_REPORT_MAX_SERIES ? ns : GS_REPORT_MAX_SERIES;
    out->series = gs_arena_alloc(arena, (out->nseries ? out->nseries : 1) * sizeof *out->series);
    if (!out->reasons || !out->series) {
        nomem(err);
        goto done;
    }
    for (uint32_t k = 0; k < out->nseries; k++) {
        uint64_t src = out->nseries > 1 ? (uint64_t)k * (ns - 1) / (out->nseries - 1) : 0;
        out->series[k] = res->samples[src];
    }
    time_stats(res, out);
    out->nodes = (uint32_t)snap->nodes.n;
    out->gpu_nodes = res->gpu_nodes; /* the engine's inventory: DRA GPUs count */
    rc = 0;
done:
    free(class_id);
    free(shape_id);
    free(all_id);
    free(class_prio);
    gs_intern_free(&classes);
    gs_intern_free(&shapes);
    gs_intern_free(&all);
    gs_intern_free(&reasons);
    gs_vec_free(rs);
    return rc;
}

/* ---------------------------------------------------------------- replay run record */

typedef struct arrival_amount {
    int64_t t;
    double gpus;
} arrival_amount;

static int cmp_arrival(const void *a, const void *b)
{
    const arrival_amount *x = a, *y = b;
    return (x->t > y->t) - (x->t < y->t);
}

/* The allocation curve over arrived load, with the FGD merge rule (fgd-method.md e). */
static int replay_curve(gs_sim_run *out, const gs_snapshot *snap, const gs_replay_result *res,
                        gs_error *err)
{
    uint32_t total = res->gpus_total;
    out->nx = 0;
    if (!total || !res->nsamples) {
        out->alloc = out->frag = out->frag_ratio = nan_array(&out->arena, 0);
        return out->alloc ? 0 : nomem(err);
    }
    arrival_amount *arr = malloc((res->npods ? res->npods : 1) * sizeof *arr);
    int32_t *xe = malloc(res->nsamples * sizeof *xe);
    double *ae = malloc(res->nsamples * sizeof *ae);
    if (!arr || !xe || !ae) {
        free(arr);
        free(xe);
        free(ae);
        return nomem(err);
    }
    uint32_t na = 0;
    /* arrived load counts MIG instances on the model they run on (or would: the cluster's
     * one MIG model), as the allocation samples do (gs_mig_profile_fraction) */
    const gs_mig_model *cluster_model = cluster_mig_model(snap);
    for (uint32_t i = 0; i < res->npods; i++) {
        const gs_replay_pod *p = &res->pods[i];
        if (p->state == GS_RP_NOT_ARRIVED)
            continue;
        const gs_mig_model *hint = node_mig_model(snap, p->node);
        arr[na++] = (arrival_amount){
            p->arrival, pod_gpu_amount_on(&snap->pods.v[p->pod], hint ? hint : cluster_model)};
    }
    qsort(arr, na, sizeof *arr, cmp_arrival);
    double arrived = 0;
    uint32_t k = 0;
    int32_t maxx = -1;
    for (uint32_t i = 0; i < res->nsamples; i++) {
        const gs_replay_sample *s = &res->samples[i];
        while (k < na && arr[k].t <= s->t)
            arrived += arr[k++].gpus;
        double x = rint(100.0 * arrived / total);
        xe[i] = x > GS_REPORT_MAX_X ? -1 : (int32_t)x;
        ae[i] = round2(100.0 * s->gpus_allocated / total);
        if (xe[i] > maxx)
            maxx = xe[i];
    }
    out->nx = (uint32_t)(maxx + 1);
    out->alloc = nan_array(&out->arena, out->nx);
    out->frag = nan_array(&out->arena, out->nx);
    out->frag_ratio = nan_array(&out->arena, out->nx);
    double *sum = calloc(out->nx ? out->nx : 1, sizeof *sum);
    uint32_t *cnt = calloc(out->nx ? out->nx : 1, sizeof *cnt);
    if (!out->alloc || !out->frag || !out->frag_ratio || !sum || !cnt) {
        free(arr);
        free(xe);
        free(ae);
        free(sum);
        free(cnt);
        return nomem(err);
    }
    for (uint32_t i = 0; i < res->nsamples; i++)
        if (xe[i] >= 0) {
            sum[xe[i]] += ae[i];
            cnt[xe[i]]++;
        }
    for (uint32_t x = 0; x < out->nx; x++) {
        double s = sum[x];
        uint32_t c = cnt[x];
        if (!c) { /* neighbours x-1..x+1 */
            for (int32_t d = -1; d <= 1; d++) {
                int32_t y = (int32_t)x + d;
                if (y >= 0 && (uint32_t)y < out->nx) {
                    s += sum[y];
                    c += cnt[y];
                }
            }
        }
        if (c)
            out->alloc[x] = round2(s / c);
    }
    free(arr);
    free(xe);
    free(ae);
    free(sum);
    free(cnt);
    return 0;
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

static int64_t pod_cpu_milli(const gs_pod *p)
{
    int64_t sum = 0, init_max = 0;
    for (uint32_t i = 0; i < p->ncontainers; i++) {
        const gs_quantity *q = gs_reslist_get(&p->containers[i].requests, "cpu");
        if (q)
            sum += gs_quantity_milli(q);
    }
    for (uint32_t i = 0; i < p->ninit; i++) {
        const gs_quantity *q = gs_reslist_get(&p->init_containers[i].requests, "cpu");
        if (q && gs_quantity_milli(q) > init_max)
            init_max = gs_quantity_milli(q);
    }
    return sum > init_max ? sum : init_max;
}

/* Pods that never ran, by shape, as analysis_fail.csv groups failed pods. */
static int replay_fails(gs_sim_run *out, const gs_snapshot *snap, const gs_replay_result *res,
                        gs_error *err)
{
    GS_VEC(gs_fgd_fail_shape) v = {NULL, 0, 0};
    gs_intern keys;
    gs_intern_init(&keys);
    int rc = -1;
    for (uint32_t i = 0; i < res->npods; i++) {
        const gs_replay_pod *p = &res->pods[i];
        if (p->state == GS_RP_NOT_ARRIVED || p->first_start >= 0)
            continue;
        const gs_pod *pod = &snap->pods.v[p->pod];
        gs_fgd_fail_shape f;
        memset(&f, 0, sizeof f);
        /* cpu as "%.2f cores" prints it, back in milli */
        char cbuf[64];
        snprintf(cbuf, sizeof cbuf, "%.2f", (double)pod_cpu_milli(pod) / 1000.0);
        f.cpu_milli = llround(strtod(cbuf, NULL) * 1000.0);
        gs_gpu_request r;
        char type[256] = "<none>";
        if (gs_gpu_request_from_pod(pod, &r, NULL) == 0 && r.kind != GS_GPU_NONE) {
            f.num_gpu = r.count;
            f.gpu_milli = r.kind == GS_GPU_WHOLE   ? 1000
                          : r.kind == GS_GPU_SHARE ? (r.milli ? r.milli : 1000)
                                                   : (uint32_t)(1000 * gs_pod_gpu_amount(pod) /
                                                                (r.count ? r.count : 1));
            if (r.nmodels) {
                size_t o = 0;
                for (uint8_t m = 0; m < r.nmodels && o + 1 < sizeof type; m++)
                    o += (size_t)snprintf(type + o, sizeof type - o, "%s%.*s", m ? "|" : "",
                                          (int)gs_gpu_model_len(r.models[m]), r.models[m]);
            }
        }
        char key[400];
        int kn = snprintf(key, sizeof key, "%lld/%u/%u/%s", (long long)f.cpu_milli, f.num_gpu,
                          f.gpu_milli, type);
        int32_t id = gs_intern_id(&keys, key, (size_t)(kn < (int)sizeof key ? kn : (int)sizeof key - 1));
        if (id < 0) {
            nomem(err);
            goto done;
        }
        if ((size_t)id == v.n) {
            f.gpu_type = gs_arena_strdup(&out->arena, type);
            if (!f.gpu_type || gs_vec_push(v, f)) {
                nomem(err);
                goto done;
            }
        }
        v.v[id].count++;
    }
    if (v.n)
        qsort(v.v, v.n, sizeof *v.v, cmp_fail);
    out->nfails = (uint32_t)v.n;
    out->fails = gs_arena_alloc(&out->arena, (v.n ? v.n : 1) * sizeof *v.v);
    if (out->fails && v.n)
        memcpy(out->fails, v.v, v.n * sizeof *v.v);
    if (!out->fails) {
        nomem(err);
        goto done;
    }
    rc = 0;
done:
    gs_vec_free(v);
    gs_intern_free(&keys);
    return rc;
}

int gs_sim_run_from_replay(gs_sim_run *out, uint32_t index, const char *workload,
                           const char *variant, const char *policy, uint64_t seed,
                           double scale, const gs_snapshot *snap, const gs_replay_result *res,
                           gs_error *err)
{
    gs_sim_run_init(out);
    out->index = index;
    out->method = GS_SIM_REPLAY;
    if (set_names(out, workload, variant, policy, policy, err))
        goto fail;
    out->seed = seed;
    out->tune = scale;
    out->total_gpus = res->gpus_total;
    out->has_replay = true;
    if (gs_replay_metrics_compute(snap, res, &out->arena, &out->replay, err) ||
        replay_curve(out, snap, res, err) || replay_fails(out, snap, res, err))
        goto fail;
    out->pods = out->replay.arrived;
    out->scheduled = out->replay.started;
    out->failed = out->replay.arrived - out->replay.started;
    out->final_alloc_pct =
        res->nsamples && res->gpus_total
            ? 100.0 * res->samples[res->nsamples - 1].gpus_allocated / res->gpus_total
            : 0;
    out->final_frag_ratio = NAN;
    return 0;
fail:
    gs_sim_run_free(out);
    return -1;
}

/* ================================================================ reports */

void gs_sim_report_init(gs_sim_report *rep)
{
    memset(rep, 0, sizeof *rep);
    gs_arena_init(&rep->arena, 4096);
    rep->sweep.method = rep->sweep.fingerprint = "";
    rep->sweep.nshards = 1;
}

void gs_sim_report_free(gs_sim_report *rep)
{
    for (size_t i = 0; i < rep->runs.n; i++)
        gs_sim_run_free(&rep->runs.v[i]);
    gs_vec_free(rep->runs);
    gs_arena_free(&rep->arena);
    memset(rep, 0, sizeof *rep);
}

int gs_sim_report_set_sweep(gs_sim_report *rep, const gs_sim_sweep *sweep, gs_error *err)
{
    rep->sweep = *sweep;
    rep->sweep.method = gs_arena_strdup(&rep->arena, sweep->method ? sweep->method : "");
    rep->sweep.fingerprint = gs_arena_strdup(&rep->arena, sweep->fingerprint ? sweep->fingerprint : "");
    if (!rep->sweep.method || !rep->sweep.fingerprint)
        return nomem(err);
    if (!rep->sweep.nshards)
        rep->sweep.nshards = 1;
    return 0;
}

int gs_sim_report_add(gs_sim_report *rep, gs_sim_run *run, gs_error *err)
{
    if (gs_vec_push(rep->runs, *run))
        return nomem(err);
    memset(run, 0, sizeof *run);
    return 0;
}

static int cmp_run(const void *a, const void *b)
{
    const gs_sim_run *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

int gs_sim_report_sort(gs_sim_report *rep, gs_error *err)
{
    if (rep->runs.n)
        qsort(rep->runs.v, rep->runs.n, sizeof *rep->runs.v, cmp_run);
    for (size_t i = 1; i < rep->runs.n; i++)
        if (rep->runs.v[i].index == rep->runs.v[i - 1].index)
            return gs_fail(err, GS_ERR_INVALID, "run %u appears twice (the same shard given twice?)",
                           rep->runs.v[i].index);
    return 0;
}

int gs_report_merge_finish(gs_sim_report *rep, gs_error *err)
{
    if (gs_sim_report_sort(rep, err))
        return -1;
    uint32_t total = rep->sweep.total_runs;
    if (rep->runs.n > total || (rep->runs.n && rep->runs.v[rep->runs.n - 1].index >= total))
        return gs_fail(err, GS_ERR_INVALID, "more runs than the sweep's %u", total);
    if (rep->runs.n < total) {
        char list[200];
        size_t o = 0;
        uint32_t missing = 0;
        size_t k = 0;
        for (uint32_t i = 0; i < total; i++) {
            if (k < rep->runs.n && rep->runs.v[k].index == i) {
                k++;
                continue;
            }
            if (missing++ < 8 && o + 16 < sizeof list)
                o += (size_t)snprintf(list + o, sizeof list - o, "%s%u", o ? ", " : "", i);
        }
        uint32_t n = rep->sweep.nshards ? rep->sweep.nshards : 1;
        return gs_fail(err, GS_ERR_INVALID,
                       "%u of %u runs are missing (runs %s%s); run I of a sweep is in shard "
                       "I %% %u: give every shard's JSON output",
                       missing, total, list, missing > 8 ? ", ..." : "", n);
    }
    rep->sweep.shard = 0;
    rep->sweep.nshards = 1;
    return 0;
}

/* ================================================================ JSON writer */

typedef struct jw {
    gs_strbuf *sb;
    int depth;
    bool first;   /* no member written yet in the current container */
} jw;

static void jw_indent(jw *w)
{
    gs_strbuf_putc(w->sb, '\n');
    for (int i = 0; i < w->depth; i++)
        gs_strbuf_puts(w->sb, "  ");
}

static void jw_key(jw *w, const char *key)
{
    if (!w->first)
        gs_strbuf_putc(w->sb, ',');
    w->first = false;
    jw_indent(w);
    gs_strbuf_json_str(w->sb, key);
    gs_strbuf_puts(w->sb, ": ");
}

static void jw_open(jw *w, char c)
{
    gs_strbuf_putc(w->sb, c);
    w->depth++;
    w->first = true;
}

static void jw_close(jw *w, char c)
{
    w->depth--;
    if (!w->first)
        jw_indent(w);
    gs_strbuf_putc(w->sb, c);
    w->first = false;
}

/* an array element that is a container */
static void jw_elem(jw *w)
{
    if (!w->first)
        gs_strbuf_putc(w->sb, ',');
    w->first = false;
    jw_indent(w);
}

static void put_json_number(gs_strbuf *sb, double v)
{
    if (!isfinite(v)) {
        gs_strbuf_puts(sb, "null");
        return;
    }
    gs_fgd_put_number(sb, v);
}

static void jw_str(jw *w, const char *key, const char *v)
{
    jw_key(w, key);
    gs_strbuf_json_str(w->sb, v ? v : "");
}

static void jw_int(jw *w, const char *key, int64_t v)
{
    jw_key(w, key);
    gs_strbuf_printf(w->sb, "%lld", (long long)v);
}

static void jw_u64(jw *w, const char *key, uint64_t v)
{
    jw_key(w, key);
    gs_strbuf_printf(w->sb, "%llu", (unsigned long long)v);
}

static void jw_num(jw *w, const char *key, double v)
{
    jw_key(w, key);
    put_json_number(w->sb, v);
}

static void jw_bool(jw *w, const char *key, bool v)
{
    jw_key(w, key);
    gs_strbuf_puts(w->sb, v ? "true" : "false");
}

static void jw_nums(jw *w, const char *key, const double *v, uint32_t n)
{
    jw_key(w, key);
    gs_strbuf_putc(w->sb, '[');
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            gs_strbuf_puts(w->sb, ", ");
        put_json_number(w->sb, v[i]);
    }
    gs_strbuf_putc(w->sb, ']');
}

static void jw_ints(jw *w, const char *key, const int64_t *v, uint32_t n)
{
    jw_key(w, key);
    gs_strbuf_putc(w->sb, '[');
    for (uint32_t i = 0; i < n; i++)
        gs_strbuf_printf(w->sb, "%s%lld", i ? ", " : "", (long long)v[i]);
    gs_strbuf_putc(w->sb, ']');
}

static void jw_wait(jw *w, const gs_wait_stats *s, bool with_name)
{
    jw_open(w, '{');
    if (with_name) {
        jw_str(w, "name", s->name);
        jw_int(w, "priority", s->priority);
    }
    jw_int(w, "pods", s->pods);
    jw_int(w, "neverStarted", s->never_started);
    jw_int(w, "p50", s->p50);
    jw_int(w, "p90", s->p90);
    jw_int(w, "p95", s->p95);
    jw_int(w, "p99", s->p99);
    jw_int(w, "max", s->max);
    jw_num(w, "mean", s->mean);
    jw_ints(w, "cdf", s->cdf, 21);
    jw_close(w, '}');
}

static void jw_waits(jw *w, const char *key, const gs_wait_stats *v, uint32_t n)
{
    jw_key(w, key);
    jw_open(w, '[');
    for (uint32_t i = 0; i < n; i++) {
        jw_elem(w);
        jw_wait(w, &v[i], true);
    }
    jw_close(w, ']');
}

static void jw_series(jw *w, const gs_replay_metrics *m)
{
    uint32_t n = m->nseries;
    gs_strbuf *sb = w->sb;
    jw_key(w, "series");
    jw_open(w, '{');
    static const char *const names[] = {"t",       "gpusAllocated", "gpuNodesUsed", "nodesUsed",
                                        "running", "pending",       "gpusStranded", "migUsed",
                                        "migIdle", "migUnpartitioned", "migReconfiguring"};
    int nf = m->mig_gpus ? 11 : 7; /* the MIG columns only for clusters with MIG GPUs */
    for (int f = 0; f < nf; f++) {
        jw_key(w, names[f]);
        gs_strbuf_putc(sb, '[');
        for (uint32_t i = 0; i < n; i++) {
            const gs_replay_sample *s = &m->series[i];
            if (i)
                gs_strbuf_puts(sb, ", ");
            switch (f) {
            case 0: gs_strbuf_printf(sb, "%lld", (long long)s->t); break;
            case 1: put_json_number(sb, s->gpus_allocated); break;
            case 2: gs_strbuf_printf(sb, "%u", s->gpu_nodes_used); break;
            case 3: gs_strbuf_printf(sb, "%u", s->nodes_used); break;
            case 4: gs_strbuf_printf(sb, "%u", s->running); break;
            case 5: gs_strbuf_printf(sb, "%u", s->pending); break;
            case 6: gs_strbuf_printf(sb, "%u", s->gpus_stranded); break;
            case 7: gs_strbuf_printf(sb, "%u", s->mig_used); break;
            case 8: gs_strbuf_printf(sb, "%u", s->mig_idle); break;
            case 9: gs_strbuf_printf(sb, "%u", s->mig_unpartitioned); break;
            default: gs_strbuf_printf(sb, "%u", s->mig_reconfiguring); break;
            }
        }
        gs_strbuf_putc(sb, ']');
    }
    jw_close(w, '}');
}

static void jw_replay(jw *w, const gs_replay_metrics *m)
{
    jw_key(w, "replay");
    jw_open(w, '{');
    jw_int(w, "arrived", m->arrived);
    jw_int(w, "started", m->started);
    jw_int(w, "done", m->done);
    jw_int(w, "running", m->running);
    jw_int(w, "pending", m->pending);
    jw_int(w, "neverStarted", m->never_started);
    jw_int(w, "neverStartedGpu", m->never_started_gpu);
    jw_int(w, "rejected", m->rejected);
    jw_int(w, "lost", m->lost);
    jw_int(w, "preemptions", m->preemptions);
    jw_int(w, "quotaRejections", m->quota_rejections);
    jw_int(w, "otherRejections", m->other_rejections);
    jw_int(w, "tStart", m->t_start);
    jw_int(w, "tEnd", m->t_end);
    jw_num(w, "allocMeanPct", m->alloc_mean_pct);
    jw_num(w, "allocPeakPct", m->alloc_peak_pct);
    jw_num(w, "strandedMean", m->stranded_mean);
    jw_int(w, "strandedPeak", m->stranded_peak);
    jw_num(w, "gpuNodesMean", m->gpu_nodes_mean);
    jw_int(w, "gpuNodesPeak", m->gpu_nodes_peak);
    jw_num(w, "nodesMean", m->nodes_mean);
    jw_int(w, "nodesPeak", m->nodes_peak);
    jw_int(w, "gpuNodes", m->gpu_nodes);
    jw_int(w, "nodes", m->nodes);
    if (m->mig_gpus || m->mig_dynamic) {
        jw_key(w, "mig");
        jw_open(w, '{');
        jw_str(w, "policy", m->mig_dynamic ? "dynamic" : "static");
        jw_int(w, "delay", m->mig_delay);
        jw_int(w, "gpus", m->mig_gpus);
        jw_int(w, "slices", m->mig_slices);
        jw_int(w, "reconfigurations", m->mig_reconfigs);
        jw_num(w, "usedMean", m->mig_used_mean);
        jw_num(w, "idleMean", m->mig_idle_mean);
        jw_int(w, "idlePeak", m->mig_idle_peak);
        jw_num(w, "unpartitionedMean", m->mig_unpart_mean);
        jw_int(w, "unpartitionedPeak", m->mig_unpart_peak);
        jw_int(w, "reconfiguringPeak", m->mig_reconfiguring_peak);
        jw_close(w, '}');
    }
    jw_key(w, "all");
    jw_wait(w, &m->all, false);
    jw_waits(w, "classes", m->classes, m->nclasses);
    jw_waits(w, "shapes", m->shapes, m->nshapes);
    jw_series(w, m);
    jw_key(w, "reasons");
    jw_open(w, '[');
    for (uint32_t i = 0; i < m->nreasons; i++) {
        jw_elem(w);
        jw_open(w, '{');
        jw_str(w, "reason", m->reasons[i].reason);
        jw_int(w, "pods", m->reasons[i].pods);
        jw_bool(w, "rejected", m->reasons[i].rejected);
        jw_close(w, '}');
    }
    jw_close(w, ']');
    jw_close(w, '}');
}

static void jw_run(jw *w, const gs_sim_run *r)
{
    jw_open(w, '{');
    jw_int(w, "index", r->index);
    jw_str(w, "method", gs_sim_method_name(r->method));
    jw_str(w, "workload", r->workload);
    jw_str(w, "variant", r->variant);
    jw_str(w, "policy", r->policy);
    jw_str(w, "label", r->label);
    jw_u64(w, "seed", r->seed);
    jw_num(w, "tune", r->tune);
    jw_int(w, "totalGpus", r->total_gpus);
    jw_int(w, "pods", r->pods);
    jw_int(w, "scheduled", r->scheduled);
    jw_int(w, "failed", r->failed);
    jw_num(w, "finalAllocPct", r->final_alloc_pct);
    jw_num(w, "finalFragRatio", r->final_frag_ratio);
    jw_key(w, "curves");
    jw_open(w, '{');
    jw_nums(w, "alloc", r->alloc, r->nx);
    jw_nums(w, "frag", r->frag, r->nx);
    jw_nums(w, "fragRatio", r->frag_ratio, r->nx);
    jw_close(w, '}');
    jw_key(w, "failedShapes");
    jw_open(w, '[');
    for (uint32_t i = 0; i < r->nfails; i++) {
        const gs_fgd_fail_shape *f = &r->fails[i];
        jw_elem(w);
        jw_open(w, '{');
        jw_int(w, "count", f->count);
        jw_int(w, "cpuMilli", f->cpu_milli);
        jw_int(w, "numGpu", f->num_gpu);
        jw_int(w, "gpuMilli", f->gpu_milli);
        jw_str(w, "gpuType", f->gpu_type);
        jw_close(w, '}');
    }
    jw_close(w, ']');
    if (r->has_replay)
        jw_replay(w, &r->replay);
    jw_close(w, '}');
}

void gs_report_json(const gs_sim_report *rep, gs_strbuf *sb)
{
    jw w = {sb, 0, true};
    jw_open(&w, '{');
    jw_str(&w, "apiVersion", "gpusched.io/v1alpha1");
    jw_str(&w, "kind", "SimulationReport");
    jw_key(&w, "sweep");
    jw_open(&w, '{');
    jw_str(&w, "method", rep->sweep.method);
    jw_str(&w, "fingerprint", rep->sweep.fingerprint);
    jw_int(&w, "totalRuns", rep->sweep.total_runs);
    jw_int(&w, "shard", rep->sweep.shard);
    jw_int(&w, "shards", rep->sweep.nshards);
    jw_close(&w, '}');
    jw_key(&w, "runs");
    jw_open(&w, '[');
    for (size_t i = 0; i < rep->runs.n; i++) {
        jw_elem(&w);
        jw_run(&w, &rep->runs.v[i]);
    }
    jw_close(&w, ']');
    jw_close(&w, '}');
    gs_strbuf_putc(sb, '\n');
}

/* ================================================================ JSON reader */

/* ---------------------------------------------------------------- decoding */

typedef struct jd {
    const char *name;
    const char *data; /* the document: positions are computed from it */
    gs_error *err;
    gs_arena *a; /* the run's arena for strings and arrays */
} jd;

static int jd_fail(jd *d, const gs_jv *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int jd_fail(jd *d, const gs_jv *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int line = 0, col = 0;
    if (at)
        gs_json_where(d->data, 1, at, &line, &col);
    gs_error_setv(d->err, GS_ERR_INVALID, d->name, line, col,
                  NULL, fmt, ap);
    va_end(ap);
    return -1;
}

static int jd_need(jd *d, const gs_jv *o, const char *key, gs_jtype t, const gs_jv **out)
{
    const gs_jv *v = gs_json_get(o, key);
    if (!v)
        return jd_fail(d, o, "missing \"%s\"", key);
    if (v->t != t && !(t == GS_JNUM && v->t == GS_JNULL))
        return jd_fail(d, v, "\"%s\": wrong type", key);
    *out = v;
    return 0;
}

static int jd_int(jd *d, const gs_jv *o, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    const gs_jv *v = NULL;
    if (jd_need(d, o, key, GS_JNUM, &v))
        return -1;
    int64_t x;
    if (v->t != GS_JNUM || gs_parse_i64(v->s, strlen(v->s), &x) || x < lo || x > hi)
        return jd_fail(d, v, "\"%s\": expected an integer from %lld to %lld", key, (long long)lo,
                       (long long)hi);
    *out = x;
    return 0;
}

static int jd_u32(jd *d, const gs_jv *o, const char *key, uint32_t *out)
{
    int64_t x;
    if (jd_int(d, o, key, 0, UINT32_MAX, &x))
        return -1;
    *out = (uint32_t)x;
    return 0;
}

static int jd_num(jd *d, const gs_jv *o, const char *key, double *out)
{
    const gs_jv *v = NULL;
    if (jd_need(d, o, key, GS_JNUM, &v))
        return -1;
    *out = v->t == GS_JNULL ? NAN : strtod(v->s, NULL);
    return 0;
}

static int jd_str(jd *d, const gs_jv *o, const char *key, const char **out)
{
    const gs_jv *v = NULL;
    if (jd_need(d, o, key, GS_JSTR, &v))
        return -1;
    *out = gs_arena_strdup(d->a, v->s);
    return *out ? 0 : nomem(d->err);
}

static int jd_nums(jd *d, const gs_jv *o, const char *key, double **out, uint32_t *n)
{
    const gs_jv *v = NULL;
    if (jd_need(d, o, key, GS_JARR, &v))
        return -1;
    double *a = gs_arena_alloc(d->a, (v->n ? v->n : 1) * sizeof *a);
    if (!a)
        return nomem(d->err);
    for (uint32_t i = 0; i < v->n; i++) {
        const gs_jv *e = &v->kids[i];
        if (e->t == GS_JNULL)
            a[i] = NAN;
        else if (e->t == GS_JNUM)
            a[i] = strtod(e->s, NULL);
        else
            return jd_fail(d, e, "\"%s\": expected numbers", key);
    }
    *out = a;
    *n = v->n;
    return 0;
}

static int jd_ints(jd *d, const gs_jv *v, const char *key, int64_t *out, uint32_t n)
{
    if (!v || v->t != GS_JARR || v->n != n)
        return jd_fail(d, v, "\"%s\": expected %u integers", key, n);
    for (uint32_t i = 0; i < n; i++) {
        const gs_jv *e = &v->kids[i];
        if (e->t != GS_JNUM || gs_parse_i64(e->s, strlen(e->s), &out[i]))
            return jd_fail(d, e, "\"%s\": expected integers", key);
    }
    return 0;
}

static int jd_wait(jd *d, const gs_jv *o, bool with_name, gs_wait_stats *w)
{
    memset(w, 0, sizeof *w);
    int64_t prio = 0;
    w->name = "";
    if (!o || o->t != GS_JOBJ)
        return jd_fail(d, o, "expected a pending-time object");
    if (with_name && (jd_str(d, o, "name", &w->name) ||
                      jd_int(d, o, "priority", INT32_MIN, INT32_MAX, &prio)))
        return -1;
    w->priority = (int32_t)prio;
    const gs_jv *cdf = NULL;
    if (jd_u32(d, o, "pods", &w->pods) || jd_u32(d, o, "neverStarted", &w->never_started) ||
        jd_int(d, o, "p50", INT64_MIN, INT64_MAX, &w->p50) ||
        jd_int(d, o, "p90", INT64_MIN, INT64_MAX, &w->p90) ||
        jd_int(d, o, "p95", INT64_MIN, INT64_MAX, &w->p95) ||
        jd_int(d, o, "p99", INT64_MIN, INT64_MAX, &w->p99) ||
        jd_int(d, o, "max", INT64_MIN, INT64_MAX, &w->max) || jd_num(d, o, "mean", &w->mean) ||
        jd_need(d, o, "cdf", GS_JARR, &cdf) || jd_ints(d, cdf, "cdf", w->cdf, 21))
        return -1;
    return 0;
}

static int jd_waits(jd *d, const gs_jv *o, const char *key, gs_wait_stats **out, uint32_t *n)
{
    const gs_jv *v = NULL;
    if (jd_need(d, o, key, GS_JARR, &v))
        return -1;
    *out = gs_arena_alloc(d->a, (v->n ? v->n : 1) * sizeof **out);
    if (!*out)
        return nomem(d->err);
    *n = v->n;
    for (uint32_t i = 0; i < v->n; i++)
        if (jd_wait(d, &v->kids[i], true, &(*out)[i]))
            return -1;
    return 0;
}

static int jd_series(jd *d, const gs_jv *o, gs_replay_metrics *m)
{
    const gs_jv *s = NULL;
    if (jd_need(d, o, "series", GS_JOBJ, &s))
        return -1;
    static const char *const names[] = {"t",       "gpusAllocated", "gpuNodesUsed", "nodesUsed",
                                        "running", "pending",       "gpusStranded", "migUsed",
                                        "migIdle", "migUnpartitioned", "migReconfiguring"};
    const gs_jv *cols[11] = {NULL};
    int nf = m->mig_gpus ? 11 : 7; /* as the writer: MIG columns with MIG GPUs only */
    for (int f = 0; f < nf; f++)
        if (jd_need(d, s, names[f], GS_JARR, &cols[f]))
            return -1;
    uint32_t n = cols[0]->n;
    for (int f = 1; f < nf; f++)
        if (cols[f]->n != n)
            return jd_fail(d, cols[f], "\"%s\": expected %u values like \"t\"", names[f], n);
    m->nseries = n;
    m->series = gs_arena_alloc(d->a, (n ? n : 1) * sizeof *m->series);
    if (!m->series)
        return nomem(d->err);
    for (uint32_t i = 0; i < n; i++) {
        gs_replay_sample *x = &m->series[i];
        memset(x, 0, sizeof *x);
        for (int f = 0; f < nf; f++) {
            const gs_jv *e = &cols[f]->kids[i];
            if (e->t == GS_JNULL && f == 1) {
                x->gpus_allocated = NAN;
                continue;
            }
            int64_t v = 0;
            if (e->t != GS_JNUM || (f != 1 && (gs_parse_i64(e->s, strlen(e->s), &v) ||
                                             (f > 1 && (v < 0 || v > UINT32_MAX)))))
                return jd_fail(d, e, "\"%s\": bad value", names[f]);
            switch (f) {
            case 0: x->t = v; break;
            case 1: x->gpus_allocated = strtod(e->s, NULL); break;
            case 2: x->gpu_nodes_used = (uint32_t)v; break;
            case 3: x->nodes_used = (uint32_t)v; break;
            case 4: x->running = (uint32_t)v; break;
            case 5: x->pending = (uint32_t)v; break;
            case 6: x->gpus_stranded = (uint32_t)v; break;
            case 7: x->mig_used = (uint32_t)v; break;
            case 8: x->mig_idle = (uint32_t)v; break;
            case 9: x->mig_unpartitioned = (uint32_t)v; break;
            default: x->mig_reconfiguring = (uint32_t)v; break;
            }
        }
    }
    return 0;
}

/* The optional "mig" object of a replay. */
static int jd_mig(jd *d, const gs_jv *o, gs_replay_metrics *m)
{
    const gs_jv *g = gs_json_get(o, "mig");
    if (!g)
        return 0;
    if (g->t != GS_JOBJ)
        return jd_fail(d, g, "\"mig\": expected an object");
    const char *policy;
    if (jd_str(d, g, "policy", &policy) ||
        jd_int(d, g, "delay", 0, INT64_MAX / 4, &m->mig_delay) ||
        jd_u32(d, g, "gpus", &m->mig_gpus) || jd_u32(d, g, "slices", &m->mig_slices) ||
        jd_u32(d, g, "reconfigurations", &m->mig_reconfigs) ||
        jd_num(d, g, "usedMean", &m->mig_used_mean) ||
        jd_num(d, g, "idleMean", &m->mig_idle_mean) || jd_u32(d, g, "idlePeak", &m->mig_idle_peak) ||
        jd_num(d, g, "unpartitionedMean", &m->mig_unpart_mean) ||
        jd_u32(d, g, "unpartitionedPeak", &m->mig_unpart_peak) ||
        jd_u32(d, g, "reconfiguringPeak", &m->mig_reconfiguring_peak))
        return -1;
    if (strcmp(policy, "dynamic") == 0)
        m->mig_dynamic = true;
    else if (strcmp(policy, "static") != 0)
        return jd_fail(d, gs_json_get(g, "policy"), "\"policy\": expected static or dynamic");
    return 0;
}

static int jd_replay(jd *d, const gs_jv *o, gs_replay_metrics *m)
{
    memset(m, 0, sizeof *m);
    const gs_jv *all = NULL, *reasons = NULL;
    if (jd_u32(d, o, "arrived", &m->arrived) || jd_u32(d, o, "started", &m->started) ||
        jd_u32(d, o, "done", &m->done) || jd_u32(d, o, "running", &m->running) ||
        jd_u32(d, o, "pending", &m->pending) || jd_u32(d, o, "neverStarted", &m->never_started) ||
        jd_u32(d, o, "neverStartedGpu", &m->never_started_gpu) ||
        jd_u32(d, o, "rejected", &m->rejected) || jd_u32(d, o, "lost", &m->lost) ||
        jd_u32(d, o, "preemptions", &m->preemptions) ||
        jd_u32(d, o, "quotaRejections", &m->quota_rejections) ||
        jd_u32(d, o, "otherRejections", &m->other_rejections) ||
        jd_int(d, o, "tStart", INT64_MIN, INT64_MAX, &m->t_start) ||
        jd_int(d, o, "tEnd", INT64_MIN, INT64_MAX, &m->t_end) ||
        jd_num(d, o, "allocMeanPct", &m->alloc_mean_pct) ||
        jd_num(d, o, "allocPeakPct", &m->alloc_peak_pct) ||
        jd_num(d, o, "strandedMean", &m->stranded_mean) ||
        jd_u32(d, o, "strandedPeak", &m->stranded_peak) ||
        jd_num(d, o, "gpuNodesMean", &m->gpu_nodes_mean) ||
        jd_u32(d, o, "gpuNodesPeak", &m->gpu_nodes_peak) ||
        jd_num(d, o, "nodesMean", &m->nodes_mean) || jd_u32(d, o, "nodesPeak", &m->nodes_peak) ||
        jd_u32(d, o, "gpuNodes", &m->gpu_nodes) || jd_u32(d, o, "nodes", &m->nodes) ||
        jd_mig(d, o, m) ||
        jd_need(d, o, "all", GS_JOBJ, &all) || jd_wait(d, all, false, &m->all) ||
        jd_waits(d, o, "classes", &m->classes, &m->nclasses) ||
        jd_waits(d, o, "shapes", &m->shapes, &m->nshapes) || jd_series(d, o, m) ||
        jd_need(d, o, "reasons", GS_JARR, &reasons))
        return -1;
    m->all.name = "all";
    if (reasons->n > GS_REPORT_MAX_REASONS)
        return jd_fail(d, reasons, "\"reasons\": at most %d entries", GS_REPORT_MAX_REASONS);
    m->nreasons = reasons->n;
    m->reasons = gs_arena_alloc(d->a, (reasons->n ? reasons->n : 1) * sizeof *m->reasons);
    if (!m->reasons)
        return nomem(d->err);
    for (uint32_t i = 0; i < reasons->n; i++) {
        const gs_jv *e = &reasons->kids[i], *rej = NULL;
        if (e->t != GS_JOBJ)
            return jd_fail(d, e, "\"reasons\": expected objects");
        if (jd_str(d, e, "reason", &m->reasons[i].reason) ||
            jd_u32(d, e, "pods", &m->reasons[i].pods) || jd_need(d, e, "rejected", GS_JBOOL, &rej))
            return -1;
        m->reasons[i].rejected = rej->b;
    }
    return 0;
}

static int jd_run(jd *d, const gs_jv *o, uint32_t total, gs_sim_run *r)
{
    if (o->t != GS_JOBJ)
        return jd_fail(d, o, "a run must be an object");
    const char *method;
    if (jd_u32(d, o, "index", &r->index) || jd_str(d, o, "method", &method))
        return -1;
    if (r->index >= total)
        return jd_fail(d, gs_json_get(o, "index"), "\"index\": %u is beyond the sweep's %u runs",
                       r->index, total);
    if (strcmp(method, "fgd") == 0)
        r->method = GS_SIM_FGD;
    else if (strcmp(method, "replay") == 0)
        r->method = GS_SIM_REPLAY;
    else
        return jd_fail(d, gs_json_get(o, "method"), "\"method\": expected fgd or replay");
    const gs_jv *seed = NULL, *curves = NULL, *fails = NULL;
    uint32_t n1, n2, n3;
    if (jd_str(d, o, "workload", &r->workload) || jd_str(d, o, "variant", &r->variant) ||
        jd_str(d, o, "policy", &r->policy) || jd_str(d, o, "label", &r->label) ||
        jd_need(d, o, "seed", GS_JNUM, &seed) || jd_num(d, o, "tune", &r->tune) ||
        jd_u32(d, o, "totalGpus", &r->total_gpus) || jd_u32(d, o, "pods", &r->pods) ||
        jd_u32(d, o, "scheduled", &r->scheduled) || jd_u32(d, o, "failed", &r->failed) ||
        jd_num(d, o, "finalAllocPct", &r->final_alloc_pct) ||
        jd_num(d, o, "finalFragRatio", &r->final_frag_ratio) ||
        jd_need(d, o, "curves", GS_JOBJ, &curves) ||
        jd_nums(d, curves, "alloc", &r->alloc, &n1) ||
        jd_nums(d, curves, "frag", &r->frag, &n2) ||
        jd_nums(d, curves, "fragRatio", &r->frag_ratio, &n3) ||
        jd_need(d, o, "failedShapes", GS_JARR, &fails))
        return -1;
    char *end = NULL;
    if (seed->t != GS_JNUM || seed->s[0] == '-' ||
        (r->seed = strtoull(seed->s, &end, 10), !end || *end))
        return jd_fail(d, seed, "\"seed\": expected an unsigned integer");
    if (n1 != n2 || n1 != n3)
        return jd_fail(d, curves, "curves of different lengths");
    r->nx = n1;
    r->nfails = fails->n;
    r->fails = gs_arena_alloc(d->a, (fails->n ? fails->n : 1) * sizeof *r->fails);
    if (!r->fails)
        return nomem(d->err);
    for (uint32_t i = 0; i < fails->n; i++) {
        const gs_jv *e = &fails->kids[i];
        gs_fgd_fail_shape *f = &r->fails[i];
        int64_t cpu;
        if (e->t != GS_JOBJ)
            return jd_fail(d, e, "\"failedShapes\": expected objects");
        if (jd_u32(d, e, "count", &f->count) || jd_int(d, e, "cpuMilli", INT64_MIN, INT64_MAX, &cpu) ||
            jd_u32(d, e, "numGpu", &f->num_gpu) || jd_u32(d, e, "gpuMilli", &f->gpu_milli) ||
            jd_str(d, e, "gpuType", &f->gpu_type))
            return -1;
        f->cpu_milli = cpu;
    }
    const gs_jv *rp = gs_json_get(o, "replay");
    if (rp) {
        if (rp->t != GS_JOBJ)
            return jd_fail(d, rp, "\"replay\": expected an object");
        r->has_replay = true;
        if (jd_replay(d, rp, &r->replay))
            return -1;
    }
    return 0;
}

int gs_report_read_json(gs_sim_report *rep, const char *name, const char *data, size_t len,
                        gs_error *err)
{
    gs_arena tree;
    gs_arena_init(&tree, 0);
    static const gs_json_limits lim = {64, 0, 0, true};
    gs_jv rootv;
    const gs_jv *root = &rootv;
    int rc = -1;
    GS_VEC(gs_sim_run) runs = {NULL, 0, 0};
    if (gs_json_parse(name, 1, data, len, &lim, &tree, &rootv, err))
        goto done;
    jd d = {name, data, err, &rep->arena};
    const gs_jv *kind = gs_json_get(root, "kind"), *sweep = NULL, *rv = NULL;
    if (!kind || kind->t != GS_JSTR || strcmp(kind->s, "SimulationReport") != 0) {
        jd_fail(&d, root, "not a gpusched simulate JSON output (kind SimulationReport expected)");
        goto done;
    }
    gs_sim_sweep sw;
    memset(&sw, 0, sizeof sw);
    if (jd_need(&d, root, "sweep", GS_JOBJ, &sweep) || jd_str(&d, sweep, "method", &sw.method) ||
        jd_str(&d, sweep, "fingerprint", &sw.fingerprint) ||
        jd_u32(&d, sweep, "totalRuns", &sw.total_runs) || jd_u32(&d, sweep, "shard", &sw.shard) ||
        jd_u32(&d, sweep, "shards", &sw.nshards) || jd_need(&d, root, "runs", GS_JARR, &rv))
        goto done;
    if (!sw.nshards || sw.shard >= sw.nshards) {
        jd_fail(&d, sweep, "bad shard %u/%u", sw.shard, sw.nshards);
        goto done;
    }
    if (rep->sweep.total_runs == 0 && rep->runs.n == 0 && !rep->sweep.method[0]) {
        rep->sweep = sw;
    } else if (strcmp(rep->sweep.method, sw.method) != 0 ||
               strcmp(rep->sweep.fingerprint, sw.fingerprint) != 0 ||
               rep->sweep.total_runs != sw.total_runs || rep->sweep.nshards != sw.nshards) {
        jd_fail(&d, sweep,
                "belongs to another sweep (method %s, %u runs in %u shards, options \"%.120s\"; "
                "the first file: method %s, %u runs in %u shards, options \"%.120s\")",
                sw.method, sw.total_runs, sw.nshards, sw.fingerprint, rep->sweep.method,
                rep->sweep.total_runs, rep->sweep.nshards, rep->sweep.fingerprint);
        goto done;
    }
    for (uint32_t i = 0; i < rv->n; i++) {
        gs_sim_run r;
        gs_sim_run_init(&r);
        jd rd = {name, data, err, &r.arena};
        if (jd_run(&rd, &rv->kids[i], sw.total_runs, &r) || gs_vec_push(runs, r)) {
            if (err && err->code == GS_OK)
                nomem(err);
            gs_sim_run_free(&r);
            goto done;
        }
    }
    if (gs_vec_reserve(rep->runs, rep->runs.n + runs.n)) {
        nomem(err);
        goto done;
    }
    for (size_t i = 0; i < runs.n; i++)
        rep->runs.v[rep->runs.n++] = runs.v[i];
    runs.n = 0; /* moved */
    rc = 0;
done:
    for (size_t i = 0; i < runs.n; i++)
        gs_sim_run_free(&runs.v[i]);
    gs_vec_free(runs);
    gs_arena_free(&tree);
    return rc;
}

/* ================================================================ CSV */

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

/* The workload column: name, or name+variant. */
static const char *workload_col(const gs_sim_run *r, char *buf, size_t cap)
{
    if (!r->variant[0])
        return r->workload;
    snprintf(buf, cap, "%s+%s", r->workload, r->variant);
    return buf;
}

/* A gs_fgd_result view of a run, so the rows come from the artifact writers themselves. */
static void as_fgd(const gs_sim_run *r, gs_fgd_result *f)
{
    memset(f, 0, sizeof *f);
    f->policy = r->policy;
    f->label = r->label;
    f->seed = r->seed;
    f->tune = r->tune;
    f->total_gpus = r->total_gpus;
    f->curves.nx = r->nx;
    f->curves.alloc = r->alloc;
    f->curves.frag = r->frag;
    f->curves.frag_ratio = r->frag_ratio;
    f->fails = r->fails;
    f->nfails = r->nfails;
}

void gs_report_csv(const gs_sim_report *rep, gs_fgd_csv which, gs_strbuf *sb)
{
    uint32_t nx = 0;
    for (size_t i = 0; i < rep->runs.n; i++)
        if (rep->runs.v[i].nx > nx)
            nx = rep->runs.v[i].nx;
    gs_fgd_csv_header(which, nx, sb);
    gs_strbuf_putc(sb, '\n');
    for (size_t i = 0; i < rep->runs.n; i++) {
        const gs_sim_run *r = &rep->runs.v[i];
        gs_fgd_result f;
        as_fgd(r, &f);
        char wl[600];
        gs_fgd_csv_row(&f, which, workload_col(r, wl, sizeof wl), sb);
        for (uint32_t x = r->nx; x < nx; x++)
            gs_strbuf_putc(sb, ',');
        gs_strbuf_putc(sb, '\n');
    }
}

void gs_report_csv_fail(const gs_sim_report *rep, gs_strbuf *sb)
{
    gs_fgd_csv_fail_header(sb);
    gs_strbuf_putc(sb, '\n');
    for (size_t i = 0; i < rep->runs.n; i++) {
        const gs_sim_run *r = &rep->runs.v[i];
        gs_fgd_result f;
        as_fgd(r, &f);
        char wl[600];
        gs_fgd_csv_fail_rows(&f, workload_col(r, wl, sizeof wl), sb);
    }
}

static void pending_row(gs_strbuf *sb, const gs_sim_run *r, const char *group,
                        const gs_wait_stats *w)
{
    char wl[600];
    put_cell(sb, workload_col(r, wl, sizeof wl));
    gs_strbuf_putc(sb, ',');
    put_cell(sb, r->policy);
    gs_strbuf_printf(sb, ",%llu,%s,", (unsigned long long)r->seed, group);
    put_cell(sb, w->name ? w->name : "");
    gs_strbuf_printf(sb, ",%d,%u,%u,%lld,%lld,%lld,%lld,%lld,", (int)w->priority, w->pods,
                     w->never_started, (long long)w->p50, (long long)w->p90, (long long)w->p95,
                     (long long)w->p99, (long long)w->max);
    gs_fgd_put_number(sb, round2(w->mean));
    gs_strbuf_putc(sb, '\n');
}

void gs_report_csv_pending(const gs_sim_report *rep, gs_strbuf *sb)
{
    gs_strbuf_puts(sb, "workload,policy,seed,group,name,priority,pods,never_started,p50,p90,p95,"
                       "p99,max,mean\n");
    for (size_t i = 0; i < rep->runs.n; i++) {
        const gs_sim_run *r = &rep->runs.v[i];
        if (!r->has_replay)
            continue;
        pending_row(sb, r, "all", &r->replay.all);
        for (uint32_t k = 0; k < r->replay.nclasses; k++)
            pending_row(sb, r, "class", &r->replay.classes[k]);
        for (uint32_t k = 0; k < r->replay.nshapes; k++)
            pending_row(sb, r, "shape", &r->replay.shapes[k]);
    }
}
