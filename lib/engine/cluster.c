/*
 * cluster.c - builds the engine's compact cluster state from a snapshot and keeps the
 * bookkeeping (bind/unbind, decisions, reasons, warnings).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"
#include "gpusched/assign.h"

#define GS_DEFAULT_MAX_PODS 110

const char *gs_outcome_name(gs_outcome o)
{
    switch (o) {
    case GS_OUT_BOUND: return "bound";
    case GS_OUT_SCHEDULED: return "scheduled";
    case GS_OUT_UNSCHEDULABLE: return "unschedulable";
    case GS_OUT_REJECTED: return "rejected";
    case GS_OUT_PREEMPTED: return "preempted";
    case GS_OUT_SKIPPED: return "skipped";
    }
    return "unknown";
}

int gs__reason_id(gs_cluster *c, const char *reason)
{
    return gs_intern_id(&c->reasons, reason, strlen(reason));
}

int gs__add_warning(gs_cluster *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *s = gs_arena_strdup(&c->arena, buf);
    if (!s || gs_vec_push(c->warnings, s))
        return -1;
    return 0;
}

uint32_t gs__new_decision(gs_cluster *c, uint32_t pod, gs_outcome o)
{
    /* one decision per pod: a later cycle (dynamic use) overwrites the pod's record */
    uint32_t prev = c->pods[pod].decision;
    gs_decision d;
    memset(&d, 0, sizeof d);
    d.pod = pod;
    d.outcome = o;
    d.node = -1;
    d.priority = c->pods[pod].priority;
    d.gpu = c->pods[pod].gpu;
    d.order = UINT32_MAX;
    d.preempted_by = UINT32_MAX;
    if (prev != UINT32_MAX) {
        c->decisions.v[prev] = d;
        return prev;
    }
    if (gs_vec_push(c->decisions, d))
        return UINT32_MAX;
    c->pods[pod].decision = (uint32_t)(c->decisions.n - 1);
    return (uint32_t)(c->decisions.n - 1);
}

void gs__node_changed(gs_cluster *c, uint32_t node)
{
    if (c->dry) {
        c->nodes[node].free_ver = 0;
        return;
    }
    c->nver[node]++;
    if (c->nclog == c->clog_cap) {
        /* keep the newer half: a cache further behind rescans every node's version */
        uint32_t half = c->clog_cap / 2;
        if (half) {
            memmove(c->clog, c->clog + half, (c->nclog - half) * sizeof *c->clog);
            c->nclog -= half;
            c->clog_base += half;
        }
    }
    if (c->nclog < c->clog_cap)
        c->clog[c->nclog++] = node;
    else
        c->clog_base++; /* no log (allocation failed): every cache rescans */
}

/* DRA devices that are GPUs or parts of one take (sign +1) or give back (-1) their share
 * of the node's GPU inventory (dra.h "one GPU inventory"). */
static void dra_gpu_usage(gs_cluster *c, gs_cnode *n, const gs_dra_alloc *al, uint32_t k, int sign)
{
    for (uint32_t i = 0; i < al->claim[k].ndev; i++) {
        uint32_t x = al->claim[k].first + i;
        uint32_t gpu;
        uint16_t milli;
        uint32_t mem;
        if (al->admin[x] || !gs_dra_device_gpu(c->dra, al->dev[x], &gpu, &milli, &mem) || gpu >= n->gpus.ndevs)
            continue;
        gs_gpu_dev *g = &n->gpus.devs[gpu];
        if (sign > 0) {
            g->milli_used = (uint16_t)(g->milli_used + milli > 1000 ? 1000 : g->milli_used + milli);
            g->mem_used = g->mem_mib && g->mem_used + mem > g->mem_mib ? g->mem_mib : g->mem_used + mem;
            g->npods++;
            if (milli >= 1000 && g->slots_used < g->slots)
                g->slots_used++;
        } else {
            g->milli_used = (uint16_t)(g->milli_used > milli ? g->milli_used - milli : 0);
            g->mem_used = g->mem_used > mem ? g->mem_used - mem : 0;
            if (g->npods)
                g->npods--;
            if (milli >= 1000 && g->slots_used)
                g->slots_used--;
        }
    }
}

void gs__bind(gs_cluster *c, uint32_t pod, uint32_t node, const gs_gpu_assign *a)
{
    gs_cpod *p = &c->pods[pod];
    gs_cnode *n = &c->nodes[node];
    int64_t *u = gs__used(c, node);
    const int64_t *r = gs__req(c, pod);
    for (uint32_t d = 0; d < c->ndims; d++)
        u[d] += r[d];
    n->npods++;
    n->nz_cpu += p->nz_cpu;
    n->nz_mem += p->nz_mem;
    if (p->has_gpu && a) {
        p->assign = *a;
        gs_gpu_bind(&n->gpus, a);
    } else {
        p->assign.n = 0;
    }
    if (n->pods.n == 0 || p->priority < n->min_prio)
        n->min_prio = p->priority;
    gs_vec_push(n->pods, pod);
    gs__node_changed(c, node);
    if (p->dra != UINT32_MAX && c->dra) {
        /* a fresh bind allocates the claims the filter allocates on this node; a bind that
         * undoes an unbind (dry runs, explain) restores what the pod held */
        gs_dra_alloc *al = &c->dra_allocs[p->dra];
        if (!c->dra_saved[p->dra]) {
            char msg[GS_ERR_MSG_MAX];
            gs__dra_pod_on(c, pod, node, &c->dra_pods[p->dra]);
            if (gs_dra_filter(c->dra, &c->dra_pods[p->dra], node, al, msg, sizeof msg) != GS_DRA_OK) {
                al->nclaims = c->dra_pods[p->dra].n;
                al->ndev = 0;
                for (uint32_t k = 0; k < al->nclaims; k++)
                    al->claim[k] = (gs_dra_alloc_claim){0, 0};
                if (!c->dry)
                    gs__add_warning(c, "pod %s/%s on node %s: its resource claims could not be allocated there (%s); "
                                    "it is counted without devices",
                                    p->obj->meta.namespace_, p->obj->meta.name, n->obj->meta.name, msg);
            }
        }
        uint32_t fresh = gs_dra_commit(c->dra, &c->dra_pods[p->dra], pod, node, al);
        for (uint32_t k = 0; k < al->nclaims; k++)
            if (fresh & (1u << k))
                dra_gpu_usage(c, n, al, k, +1);
        c->dra_saved[p->dra] = 1;
    }
    p->node = (int32_t)node;
    p->state = GS_PS_BOUND;
    if (c->on_change && !c->dry)
        c->on_change(c->on_change_ctx, pod, node, true);
}

void gs__unbind(gs_cluster *c, uint32_t pod)
{
    gs_cpod *p = &c->pods[pod];
    if (p->node < 0)
        return;
    uint32_t node = (uint32_t)p->node;
    gs_cnode *n = &c->nodes[node];
    int64_t *u = gs__used(c, node);
    const int64_t *r = gs__req(c, pod);
    for (uint32_t d = 0; d < c->ndims; d++)
        u[d] -= r[d];
    n->npods--;
    gs__node_changed(c, node);
    n->nz_cpu -= p->nz_cpu;
    n->nz_mem -= p->nz_mem;
    if (p->has_gpu && p->assign.n)
        gs_gpu_unbind(&n->gpus, &p->assign);
    if (p->dra != UINT32_MAX && c->dra) {
        gs_dra_alloc *al = &c->dra_allocs[p->dra];
        gs_dra_release(c->dra, &c->dra_pods[p->dra], pod, node, al);
        for (uint32_t k = 0; k < al->nclaims; k++)
            dra_gpu_usage(c, n, al, k, -1); /* the devices of the claims it deallocated */
        c->dra_saved[p->dra] = 1;
    }
    for (size_t i = 0; i < n->pods.n; i++) {
        if (n->pods.v[i] == pod) {
            n->pods.v[i] = n->pods.v[--n->pods.n];
            break;
        }
    }
    if (!c->dry && p->priority <= n->min_prio) { /* a dry run binds it back */
        for (size_t i = 0; i < n->pods.n; i++)
            if (i == 0 || c->pods[n->pods.v[i]].priority < n->min_prio)
                n->min_prio = c->pods[n->pods.v[i]].priority;
    }
    p->node = -1;
    p->state = GS_PS_PENDING;
    if (c->on_change && !c->dry)
        c->on_change(c->on_change_ctx, pod, node, false);
}

/* ---------------------------------------------------------------- build */

static int cmp_node_name(const void *a, const void *b, void *ctx)
{
    const gs_snapshot *sort_snap = ctx;
    const gs_node *na = &sort_snap->nodes.v[*(const uint32_t *)a];
    const gs_node *nb = &sort_snap->nodes.v[*(const uint32_t *)b];
    int r = strcmp(na->meta.name, nb->meta.name);
    if (r)
        return r;
    return na->meta.input_index < nb->meta.input_index ? -1 : 1;
}

static bool is_scalar_dim(const char *name)
{
    if (strcmp(name, "cpu") == 0 || strcmp(name, "memory") == 0 ||
        strcmp(name, "ephemeral-storage") == 0 || strcmp(name, "pods") == 0)
        return false;
    if (gs_gpu_is_device_resource(name))
        return false;
    return strncmp(name, "hugepages-", 10) == 0 || gs_resource_is_extended(name) ||
           strstr(name, "kubernetes.io/") != NULL;
}

typedef struct dim_ctx {
    gs_cluster *c;
    int failed;
} dim_ctx;

static void add_dim_cb(const char *name, void *ctx)
{
    dim_ctx *dc = ctx;
    if (!is_scalar_dim(name))
        return;
    if (gs_intern_find(&dc->c->dims, name, strlen(name)) >= 0)
        return;
    if (dc->c->dims.n >= GS_MAX_DIMS) {
        dc->failed = 1;
        return;
    }
    if (gs_intern_id(&dc->c->dims, name, strlen(name)) < 0)
        dc->failed = 1;
}

static int64_t dim_value(uint32_t dim, const gs_quantity *q)
{
    return dim == GS_DIM_CPU ? gs_quantity_milli(q) : gs_quantity_value(q);
}

typedef GS_VEC(gs_taintset) taintset_vec;

static uint32_t intern_taintset(gs_cluster *c, const gs_node *n, taintset_vec *sets)
{
    for (size_t i = 0; i < sets->n; i++) {
        const gs_taintset *ts = &sets->v[i];
        if (ts->n != n->ntaints)
            continue;
        bool same = true;
        for (uint32_t k = 0; k < ts->n && same; k++) {
            const gs_taint *a = &ts->taints[k], *b = &n->taints[k];
            same = a->effect == b->effect && strcmp(a->key, b->key) == 0 &&
                   strcmp(a->value, b->value) == 0;
        }
        if (same)
            return (uint32_t)i;
    }
    gs_taintset ts = {n->taints, n->ntaints, 0};
    for (uint32_t k = 0; k < n->ntaints; k++)
        if (n->taints[k].effect == GS_EFFECT_PREFER_NO_SCHEDULE)
            ts.n_prefer++;
    if (gs_vec_push(*sets, ts))
        return UINT32_MAX;
    (void)c;
    return (uint32_t)(sets->n - 1);
}

static bool pod_is_terminal(const gs_pod *p)
{
    return strcmp(p->phase, "Succeeded") == 0 || strcmp(p->phase, "Failed") == 0;
}

/* ExtendedResourceToleration: every extended resource requested gets an Exists/NoSchedule
 * toleration unless an identical one exists (k8s-semantics 7; the names: gs_ert_resources). */
typedef struct ert_ctx {
    const char *names[64];
    uint32_t n;
} ert_ctx;

static int setup_tolerations(gs_cluster *c, gs_cpod *cp)
{
    const gs_pod *p = cp->obj;
    cp->tols = p->tolerations;
    cp->ntols = p->ntolerations;
    if (!c->cfg.extended_resource_toleration)
        return 0;
    ert_ctx e;
    e.n = gs_ert_resources(p, e.names, 64);
    if (!e.n)
        return 0;
    gs_toleration *t = gs_arena_alloc(&c->arena, sizeof *t * (p->ntolerations + e.n));
    if (!t)
        return -1;
    if (p->ntolerations)
        memcpy(t, p->tolerations, sizeof *t * p->ntolerations);
    uint32_t n = p->ntolerations;
    for (uint32_t i = 0; i < e.n; i++) {
        bool have = false;
        for (uint32_t k = 0; k < n && !have; k++)
            have = t[k].op == GS_TOL_EXISTS && t[k].effect == GS_EFFECT_NO_SCHEDULE &&
                   strcmp(t[k].key, e.names[i]) == 0 && t[k].value[0] == '\0' &&
                   !t[k].has_seconds;
        if (have)
            continue;
        t[n].key = e.names[i];
        t[n].value = "";
        t[n].op_raw = "Exists";
        t[n].op = GS_TOL_EXISTS;
        t[n].effect = GS_EFFECT_NO_SCHEDULE;
        t[n].has_seconds = false;
        n++;
    }
    cp->tols = t;
    cp->ntols = n;
    return 0;
}

static bool pdb_matches_pod(const gs_pdb *pdb, const gs_pod *p)
{
    if (strcmp(pdb->meta.namespace_, p->meta.namespace_) != 0)
        return false;
    /* upstream: a nil or empty selector matches nothing for preemption accounting */
    if (!pdb->selector.present ||
        (pdb->selector.match_labels.n == 0 && pdb->selector.nexprs == 0))
        return false;
    return gs_label_selector_matches(&pdb->selector, &p->meta.labels);
}

/* The shape of a pod: everything Filter and Score read from it. Pods with equal shapes
 * (replicas of one workload, typically) get identical verdicts and scores on a node in a
 * given state, which the shape cache in schedule.c exploits. */
static void key_str(gs_strbuf *sb, const char *s)
{
    gs_strbuf_puts(sb, s ? s : "");
    gs_strbuf_putc(sb, '\x1f');
}

/* integers go in binary, fixed width (the key is only compared, never shown) */
static void key_int(gs_strbuf *sb, int64_t v) { gs_strbuf_add(sb, (const char *)&v, sizeof v); }

static void key_term(gs_strbuf *sb, const gs_sel_term *t)
{
    for (uint32_t k = 0; k < 2; k++) {
        const gs_sel_req *r = k ? t->fields : t->exprs;
        uint32_t n = k ? t->nfields : t->nexprs;
        key_int(sb, n);
        for (uint32_t i = 0; i < n; i++) {
            key_str(sb, r[i].key);
            key_int(sb, (int64_t)r[i].op << 32 | r[i].nvalues);
            for (uint32_t v = 0; v < r[i].nvalues; v++)
                key_str(sb, r[i].values[v]);
        }
    }
}

static int32_t pod_shape(gs_cluster *c, uint32_t i, gs_strbuf *sb)
{
    const gs_cpod *cp = &c->pods[i];
    const gs_pod *p = cp->obj;
    gs_strbuf_reset(sb);
    gs_strbuf_add(sb, (const char *)gs__req(c, i), c->ndims * sizeof(int64_t));
    key_int(sb, cp->nz_cpu);
    key_int(sb, cp->nz_mem);
    key_int(sb, cp->requests_nothing);
    const gs_gpu_request *g = &cp->gpu;
    int64_t gk[] = {(int64_t)g->kind, g->count, g->milli, g->mem_mib,
                    g->mem_pct, (int64_t)g->conv, g->families, g->gpushare_units};
    gs_strbuf_add(sb, (const char *)gk, sizeof gk);
    key_str(sb, g->mig_profile);
    key_str(sb, g->resource);
    for (unsigned bit = 1; bit <= GS_HAMI_NOUSE_UUID; bit <<= 1)
        key_str(sb, gs_gpu_request_hami(g, bit));
    key_int(sb, g->nmodels);
    for (uint32_t k = 0; k < g->nmodels; k++)
        key_str(sb, g->models[k]);
    key_int(sb, cp->ntols);
    for (uint32_t k = 0; k < cp->ntols; k++) {
        const gs_toleration *t = &cp->tols[k];
        key_str(sb, t->key);
        key_str(sb, t->value);
        key_int(sb, (int64_t)t->op << 32 | (uint32_t)t->effect);
    }
    key_int(sb, p->node_selector.n);
    for (uint32_t k = 0; k < p->node_selector.n; k++) {
        key_str(sb, p->node_selector.items[k].key);
        key_str(sb, p->node_selector.items[k].val);
    }
    key_int(sb, p->required ? (int64_t)p->required->nterms : -1);
    if (p->required)
        for (uint32_t k = 0; k < p->required->nterms; k++)
            key_term(sb, &p->required->terms[k]);
    key_int(sb, p->npreferred);
    for (uint32_t k = 0; k < p->npreferred; k++) {
        key_int(sb, p->preferred[k].weight);
        key_term(sb, &p->preferred[k].term);
    }
    if (sb->oom)
        return -1;
    return gs_intern_id(&c->shapes, sb->buf, sb->len);
}

/* The extended resources of pod p that a DeviceClass backs (DRAExtendedResource), written
 * to out when not NULL (at most 32); their number. Containers in spec order, each one's
 * resources in name order (request j counts within the container). */
static uint32_t dra_ext_entries(gs_cluster *c, const gs_pod *p, gs_dra_ext *out)
{
    uint32_t n = 0;
    for (uint32_t ci = 0; ci < p->ncontainers; ci++) {
        const gs_reslist *rl = &p->containers[ci].requests;
        uint16_t j = 0;
        for (uint32_t k = 0; k < rl->n && n < 32; k++) {
            const gs_res *r = &rl->items[k];
            if (!gs_resource_is_extended(r->name) || gs_quantity_is_zero(&r->q))
                continue;
            const char *cls = gs_dra_ext_class(c->dra, r->name);
            if (!cls)
                continue;
            if (out)
                out[n] = (gs_dra_ext){(uint16_t)ci, j, r->name, gs_quantity_value(&r->q), cls};
            n++;
            j++;
        }
    }
    return n;
}

/* The DRA state, when the snapshot has DRA objects or a pod uses claims. */
static int setup_dra(gs_cluster *c, gs_error *err)
{
    const gs_snapshot *s = c->snap;
    uint32_t npods_claims = 0;
    for (size_t i = 0; i < s->pods.n; i++)
        npods_claims += s->pods.v[i].nclaims != 0;
    if (!npods_claims && !s->resource_slices.n && !s->device_classes.n && !s->claims.n && !s->claim_templates.n)
        return 0;
    const gs_node **nodes = gs_arena_alloc(&c->arena, (c->nnodes ? c->nnodes : 1) * sizeof *nodes);
    if (!nodes)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < c->nnodes; i++)
        nodes[i] = c->nodes[i].obj;
    c->dra = gs_dra_new(s, nodes, c->nnodes, NULL, err);
    if (!c->dra)
        return -1;
    for (uint32_t i = 0; i < c->nnodes; i++)
        if (gs_dra_link_node_gpus(c->dra, i, &c->nodes[i].gpus) < 0)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    /* pods whose extended resources a DeviceClass backs need a record too */
    for (size_t i = 0; i < s->pods.n; i++)
        if (!s->pods.v[i].nclaims && dra_ext_entries(c, &s->pods.v[i], NULL) > 0)
            npods_claims++;
    uint32_t n = npods_claims ? npods_claims : 1;
    c->dra_pods = calloc(n, sizeof *c->dra_pods);
    c->dra_allocs = calloc(n, sizeof *c->dra_allocs);
    c->dra_saved = calloc(n, 1);
    if (!c->dra_pods || !c->dra_allocs || !c->dra_saved)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    return 0;
}

static int setup_pods(gs_cluster *c, gs_error *err)
{
    const gs_snapshot *s = c->snap;
    c->npods = (uint32_t)s->pods.n;
    c->pods = calloc(c->npods ? c->npods : 1, sizeof *c->pods);
    c->req = calloc((size_t)(c->npods ? c->npods : 1) * c->ndims, sizeof *c->req);
    if (!c->pods || !c->req)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory (pods)");
    gs_strbuf key = GS_STRBUF_INIT;
    gs_dra_index *dra_index = c->dra ? gs_dra_index_new(s) : NULL;
    if (c->dra && !dra_index)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory (pods)");
    /* HAMi annotations read but not modelled: said once per annotation, never dropped */
    static const char *const unmodelled[2] = {"nvidia.com/vgpu-mode", "hami.io/gpu-scheduler-policy"};
    uint32_t un_count[2] = {0, 0};
    const gs_pod *un_first[2] = {NULL, NULL};
    for (uint32_t i = 0; i < c->npods; i++) {
        const gs_pod *p = &s->pods.v[i];
        gs_cpod *cp = &c->pods[i];
        cp->obj = p;
        cp->node = -1;
        cp->decision = UINT32_MAX;
        cp->dra = UINT32_MAX;
        uint32_t next = c->dra ? dra_ext_entries(c, p, NULL) : 0;
        if (next) {
            cp->ext = gs_arena_alloc(&c->arena, next * sizeof *cp->ext);
            if (!cp->ext) {
                gs_strbuf_free(&key);
                gs_dra_index_free(dra_index);
                return gs_fail(err, GS_ERR_NOMEM, "out of memory (pods)");
            }
            cp->next = dra_ext_entries(c, p, cp->ext);
        }
        if ((p->nclaims || next) && c->dra) {
            cp->dra = c->ndra_pods++;
            char msg[GS_ERR_MSG_MAX];
            /* resolved again at each scheduling attempt; now for the pods bound already */
            (void)gs_dra_pod_resolve(c->dra, i, p, &c->dra_pods[cp->dra], msg, sizeof msg);
        }
        cp->existing = p->meta.uid[0] || p->phase[0] || p->node_name[0];
        /* upstream takes a pod without status.startTime as started now (the newest) */
        cp->start = p->has_start_time ? p->start_time : GS_GPU_NO_START;
        int64_t *r = gs__req(c, i);
        bool nothing = true;
        for (uint32_t d = 0; d < c->ndims; d++) {
            gs_quantity q = gs__pod_effective(p, gs_intern_str(&c->dims, (int32_t)d), false);
            r[d] = dim_value(d, &q);
            if (r[d] != 0)
                nothing = false;
        }
        gs__pod_nonzero(p, &cp->nz_cpu, &cp->nz_mem);
        gs_error gerr;
        gs_error_clear(&gerr);
        if (gs_gpu_request_from_pod(p, &cp->gpu, &gerr) != 0) {
            /* API validation would refuse such a pod: it becomes a rejection, not a run failure */
            cp->state = GS_PS_REJECTED;
            cp->gpu.kind = GS_GPU_NONE;
            cp->reject = gs_arena_printf(&c->arena, "pods \"%s\" is invalid: %s", p->meta.name,
                                         gerr.msg);
        }
        cp->has_gpu = cp->gpu.kind != GS_GPU_NONE;
        cp->uses_gpu = cp->has_gpu || (p->nclaims && dra_index && gs_dra_pod_gpu_requests(dra_index, p) > 0);
        if (cp->has_gpu)
            nothing = false;
        for (int k = 0; k < 2; k++)
            if ((cp->gpu.hami & (k ? GS_HAMI_GPU_POLICY : GS_HAMI_VGPU_MODE)) && !un_count[k]++)
                un_first[k] = p;
        cp->requests_nothing = nothing;
        if (setup_tolerations(c, cp)) {
            gs_strbuf_free(&key);
            gs_dra_index_free(dra_index);
            return gs_fail(err, GS_ERR_NOMEM, "out of memory (tolerations)");
        }
        int32_t shape = pod_shape(c, i, &key);
        if (shape < 0) {
            gs_strbuf_free(&key);
            gs_dra_index_free(dra_index);
            return gs_fail(err, GS_ERR_NOMEM, "out of memory (pod shapes)");
        }
        cp->shape = (uint32_t)shape;
        uint32_t npdb = 0;
        for (size_t k = 0; k < s->pdbs.n; k++)
            if (pdb_matches_pod(&s->pdbs.v[k], p))
                npdb++;
        if (npdb) {
            cp->pdbs = gs_arena_alloc(&c->arena, npdb * sizeof *cp->pdbs);
            if (!cp->pdbs) {
                gs_strbuf_free(&key);
                gs_dra_index_free(dra_index);
                return gs_fail(err, GS_ERR_NOMEM, "out of memory (pdbs)");
            }
            for (size_t k = 0; k < s->pdbs.n; k++)
                if (pdb_matches_pod(&s->pdbs.v[k], p))
                    cp->pdbs[cp->npdbs++] = (uint32_t)k;
        }
    }
    gs_strbuf_free(&key);
    gs_dra_index_free(dra_index);
    for (int k = 0; k < 2; k++)
        if (un_count[k])
            gs__add_warning(c,
                            "%u pod%s (first %s/%s) set %s, which gpusched does not model (%s): "
                            "their placement is computed without it",
                            un_count[k], un_count[k] == 1 ? "" : "s", un_first[k]->meta.namespace_,
                            un_first[k]->meta.name, unmodelled[k],
                            k == 0 ? "every device serves every vGPU mode"
                                   : "shares are placed best fit, like HAMi's binpack, whatever the policy");
    return 0;
}

typedef struct bound_rec {
    uint32_t node;
    int64_t start;
    uint32_t pod;
} bound_rec;

static int cmp_bound(const void *a, const void *b)
{
    const bound_rec *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return gs_gpu_bound_cmp(x->start, x->pod, y->start, y->pod);
}


/* A bound pod's gpusched.io/assignment record, checked against its node's inventory:
 * true with *a the devices it names; false (with a warning when the record is refused)
 * when the devices are to be reconstructed. The extender's device state (lib/extender)
 * applies the same rule: records first, then reconstruction. */
static bool record_of(gs_cluster *c, uint32_t pod, uint32_t node, gs_assign_record *rec, gs_gpu_assign *a)
{
    const gs_pod *p = c->pods[pod].obj;
    const char *text = gs_labels_get(&p->meta.annotations, GS_ASSIGN_ANNOTATION);
    if (!text || !rec)
        return false;
    gs_error e;
    gs_error_clear(&e);
    const char *name = c->nodes[node].obj->meta.name;
    if (gs_assign_holds(text, p->meta.uid[0] ? p->meta.uid : NULL, &c->nodes[node].gpus, name, rec, a, &e) == 0)
        return true;
    gs__add_warning(c, "pod %s/%s on node %s: its %s record is refused (%s); its devices are reconstructed",
                    p->meta.namespace_, p->meta.name, name, GS_ASSIGN_ANNOTATION, e.msg);
    a->n = 0;
    return false;
}

static int place_bound_pods(gs_cluster *c, gs_error *err)
{
    /* Bound pods occupy their nodes. A pod placed by `gpusched extender` carries its
     * devices in its gpusched.io/assignment record: those are held first, as recorded.
     * The others' devices are unknown in a plain dump, so they are reconstructed
     * deterministically: per node, pods by start time, then input order, each taking the
     * devices gs_gpu_fit_node would choose on what the records left free. */
    bound_rec *list = calloc(c->npods ? c->npods : 1, sizeof *list);
    if (!list)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    uint32_t n = 0;
    bool any_record = false;
    for (uint32_t i = 0; i < c->npods; i++) {
        gs_cpod *cp = &c->pods[i];
        const gs_pod *p = cp->obj;
        if (!p->node_name[0])
            continue;
        gs__resolve_existing_priority(c, i);
        if (pod_is_terminal(p)) {
            cp->state = GS_PS_SKIPPED;
            continue;
        }
        int32_t node = gs__node_by_name(c, p->node_name);
        if (node < 0) {
            cp->state = GS_PS_SKIPPED;
            gs__add_warning(c, "pod %s/%s is bound to node %s, which is not in the input",
                            p->meta.namespace_, p->meta.name, p->node_name);
            continue;
        }
        list[n].node = (uint32_t)node;
        list[n].pod = i;
        list[n].start = cp->start;
        any_record |= cp->has_gpu && gs_labels_get(&p->meta.annotations, GS_ASSIGN_ANNOTATION);
        n++;
    }
    qsort(list, n, sizeof *list, cmp_bound);
    gs_assign_record *rec = any_record ? malloc(sizeof *rec) : NULL;
    if (any_record && !rec) {
        free(list);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    /* pass 1: the recorded pods (marked by node = UINT32_MAX once bound) */
    for (uint32_t i = 0; any_record && i < n; i++) {
        gs_cpod *cp = &c->pods[list[i].pod];
        gs_gpu_assign a;
        memset(&a, 0, sizeof a);
        if (cp->has_gpu && record_of(c, list[i].pod, list[i].node, rec, &a)) {
            gs__bind(c, list[i].pod, list[i].node, &a);
            list[i].node = UINT32_MAX;
        }
    }
    free(rec);
    /* pass 2: the others, reconstructed */
    for (uint32_t i = 0; i < n; i++) {
        if (list[i].node == UINT32_MAX)
            continue;
        gs_cpod *cp = &c->pods[list[i].pod];
        gs_gpu_assign a;
        memset(&a, 0, sizeof a);
        if (cp->has_gpu) {
            gs_gpu_fit f = gs_gpu_fit_node(&c->nodes[list[i].node].gpus, &cp->gpu, &a);
            if (f != GS_FIT_OK) {
                gs__add_warning(c,
                                "pod %s/%s on node %s: its GPU request could not be matched to "
                                "free devices of the node (over-committed or unknown devices); "
                                "it is counted without devices",
                                cp->obj->meta.namespace_, cp->obj->meta.name,
                                c->nodes[list[i].node].obj->meta.name);
                a.n = 0;
            }
        }
        gs__bind(c, list[i].pod, list[i].node, a.n ? &a : NULL);
    }
    free(list);
    return 0;
}

int32_t gs__node_by_name(const gs_cluster *c, const char *name)
{
    uint32_t lo = 0, hi = c->nnodes;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int r = strcmp(c->nodes[mid].obj->meta.name, name);
        if (r == 0)
            return (int32_t)mid;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

int gs__mig_relayout(gs_cluster *c, uint32_t node, uint32_t dev, const uint8_t *pidx,
                     const uint8_t *starts, uint32_t n, const char *const *names)
{
    if (node >= c->nnodes)
        return -1;
    gs_cnode *cn = &c->nodes[node];
    gs_node_gpus *g = &cn->gpus;
    if (!g->mig_model || n > 8)
        return -1;
    const char *nm[8] = {0};
    for (uint32_t i = 0; i < n; i++) {
        nm[i] = names ? names[i] : NULL;
        if (nm[i] || pidx[i] >= g->mig_model->nprofiles)
            continue;
        bool known = false;
        for (uint32_t k = 0; k < g->nmig_res && !known; k++)
            known = g->mig_res_profile[k] == pidx[i];
        if (known)
            continue;
        char buf[96];
        gs_mig_resource_name(&g->mig_model->profiles[pidx[i]], buf, sizeof buf);
        nm[i] = gs_arena_strdup(&c->arena, buf);
    }
    uint32_t old_n = g->nmig;
    uint16_t stack_map[64];
    uint16_t *remap = old_n <= 64 ? stack_map : malloc(old_n * sizeof *remap);
    if (!remap)
        return -1;
    int rc = gs_node_gpus_mig_relayout(g, dev, pidx, starts, n, nm, remap);
    if (rc == 0) {
        for (size_t k = 0; k < cn->pods.n; k++) {
            gs_gpu_assign *a = &c->pods[cn->pods.v[k]].assign;
            for (uint32_t i = 0; i < a->n; i++)
                if (a->mig[i] != 0xffff && a->mig[i] < old_n)
                    a->mig[i] = remap[a->mig[i]];
        }
        gs__node_changed(c, node);
    }
    if (remap != stack_map)
        free(remap);
    return rc;
}

gs_cluster *gs_cluster_new(const gs_snapshot *snap, const gs_config *cfg, gs_error *err)
{
    gs_cluster *c = calloc(1, sizeof *c);
    if (!c) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    c->snap = snap;
    if (cfg)
        c->cfg = *cfg;
    else
        gs_config_defaults(&c->cfg);
    gs_arena_init(&c->arena, 0);
    gs_intern_init(&c->dims);
    gs_intern_init(&c->reasons);
    gs_intern_init(&c->shapes);
    gs_rng_seed(&c->rng, c->cfg.seed);
    gs_intern_id(&c->dims, "cpu", 3);
    gs_intern_id(&c->dims, "memory", 6);
    gs_intern_id(&c->dims, "ephemeral-storage", 17);

    dim_ctx dc = {c, 0};
    for (size_t i = 0; i < snap->nodes.n; i++) {
        const gs_reslist *al = &snap->nodes.v[i].allocatable;
        for (uint32_t k = 0; k < al->n; k++)
            add_dim_cb(al->items[k].name, &dc);
    }
    for (size_t i = 0; i < snap->pods.n; i++)
        gs__pod_resource_names(&snap->pods.v[i], false, add_dim_cb, &dc);
    if (dc.failed) {
        gs_fail(err, GS_ERR_LIMIT, "more than %d distinct resource names", GS_MAX_DIMS);
        gs_cluster_free(c);
        return NULL;
    }
    c->ndims = c->dims.n;

    /* nodes, sorted by name */
    c->nnodes = (uint32_t)snap->nodes.n;
    uint32_t nn = c->nnodes ? c->nnodes : 1;
    uint32_t *order = calloc(nn, sizeof *order);
    c->nodes = calloc(nn, sizeof *c->nodes);
    c->alloc = calloc((size_t)nn * c->ndims, sizeof *c->alloc);
    c->used = calloc((size_t)nn * c->ndims, sizeof *c->used);
    c->node_of_snap = calloc(nn, sizeof *c->node_of_snap);
    c->status = calloc(nn, sizeof *c->status);
    c->feasible = calloc(nn, sizeof *c->feasible);
    c->nscore = calloc(nn, sizeof *c->nscore);
    c->nver = calloc(nn, sizeof *c->nver);
    c->clog_cap = 2 * nn + 64; /* a cache further behind than nn changes rescans */
    c->clog = malloc(c->clog_cap * sizeof *c->clog);
    if (!c->clog)
        c->clog_cap = 0;
    c->score = calloc(nn, sizeof *c->score);
    c->assign_scratch = calloc(nn, sizeof *c->assign_scratch);
    if (!order || !c->nodes || !c->alloc || !c->used || !c->node_of_snap || !c->status ||
        !c->feasible || !c->nscore || !c->nver || !c->score || !c->assign_scratch) {
        free(order);
        gs_fail(err, GS_ERR_NOMEM, "out of memory (nodes)");
        gs_cluster_free(c);
        return NULL;
    }
    for (uint32_t i = 0; i < c->nnodes; i++)
        order[i] = i;
    qsort_r(order, c->nnodes, sizeof *order, cmp_node_name, (void *)snap);
    taintset_vec sets = {0};
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const gs_node *n = &snap->nodes.v[order[i]];
        gs_cnode *cn = &c->nodes[i];
        cn->snap = order[i];
        cn->obj = n;
        c->node_of_snap[order[i]] = (int32_t)i;
        cn->unschedulable = n->unschedulable;
        int64_t *al = gs__alloc(c, i);
        for (uint32_t k = 0; k < n->allocatable.n; k++) {
            const gs_res *r = &n->allocatable.items[k];
            int32_t d = gs_intern_find(&c->dims, r->name, strlen(r->name));
            if (d >= 0)
                al[d] = dim_value((uint32_t)d, &r->q);
        }
        const gs_quantity *mp = gs_reslist_get(&n->allocatable, "pods");
        cn->max_pods = mp ? (uint32_t)gs_quantity_value(mp) : GS_DEFAULT_MAX_PODS;
        cn->taintset = intern_taintset(c, n, &sets);
        if (cn->taintset == UINT32_MAX) {
            free(order);
            gs_vec_free(sets);
            gs_fail(err, GS_ERR_NOMEM, "out of memory (taints)");
            gs_cluster_free(c);
            return NULL;
        }
        if (gs_node_gpus_build(n, &cn->gpus, err) != 0) {
            if (!err->file[0] && err) {
                gs_error e2 = *err;
                gs_error_set(err, e2.code, n->meta.src.file, (int)n->meta.src.line,
                             (int)n->meta.src.col, NULL, "%s", e2.msg);
            }
            /* the GPU layer names the node in the path already ("Node X: field") */
            char want[300];
            snprintf(want, sizeof want, "Node %s", n->meta.name);
            size_t wl = strlen(want);
            if (strncmp(err->path, want, wl) != 0 || (err->path[wl] && err->path[wl] != ':'))
                gs_error_prefix_path(err, gs_arena_printf(&c->arena, "%s: ", want));
            free(order);
            gs_vec_free(sets);
            gs_cluster_free(c);
            return NULL;
        }
    }
    free(order);
    c->taintsets = sets.v;
    c->ntaintsets = (uint32_t)sets.n;
    if (setup_dra(c, err)) {
        if (err && err->code == GS_OK)
            gs_fail(err, GS_ERR_NOMEM, "out of memory");
        gs_cluster_free(c);
        return NULL;
    }
    c->taint_verdict = calloc(c->ntaintsets ? c->ntaintsets : 1, sizeof *c->taint_verdict);
    c->prefer_cache = calloc(c->ntaintsets ? c->ntaintsets : 1, sizeof *c->prefer_cache);
    if (!c->taint_verdict || !c->prefer_cache || gs__filter_init(c) || setup_pods(c, err) || place_bound_pods(c, err) ||
        gs__quota_init(c, err)) {
        if (err && err->code == GS_OK)
            gs_fail(err, GS_ERR_NOMEM, "out of memory");
        gs_cluster_free(c);
        return NULL;
    }
    /* decisions for pods that were bound or skipped at build, in input order */
    for (uint32_t i = 0; i < c->npods; i++) {
        gs_cpod *cp = &c->pods[i];
        if (cp->state == GS_PS_BOUND) {
            uint32_t d = gs__new_decision(c, i, GS_OUT_BOUND);
            if (d != UINT32_MAX) {
                c->decisions.v[d].node = (int32_t)c->nodes[cp->node].snap;
                c->decisions.v[d].assign = cp->assign;
            }
        } else if (cp->state == GS_PS_SKIPPED) {
            uint32_t d = gs__new_decision(c, i, GS_OUT_SKIPPED);
            if (d != UINT32_MAX)
                c->decisions.v[d].message = pod_is_terminal(cp->obj)
                                                ? "pod has finished (phase Succeeded/Failed)"
                                                : "bound to a node that is not in the input";
        }
    }
    return c;
}

void gs_cluster_free(gs_cluster *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->nnodes && c->nodes; i++) {
        gs_node_gpus_free(&c->nodes[i].gpus);
        gs_vec_free(c->nodes[i].pods);
    }
    free(c->nodes);
    free(c->alloc);
    free(c->used);
    free(c->pods);
    free(c->req);
    free(c->taintsets);
    free(c->taint_verdict);
    free(c->prefer_cache);
    free(c->taint_reason);
    free(c->dim_reason);
    free(c->node_of_snap);
    free(c->status);
    free(c->feasible);
    free(c->nscore);
    free(c->nver);
    free(c->clog);
    free(c->pre_lower);
    free(c->pre_saved);
    free(c->pre_viol);
    free(c->pre_victim);
    free(c->pre_defer);
    free(c->pre_freed);
    free(c->pre_devpods);
    gs__shape_cache_free(c);
    gs_intern_free(&c->shapes);
    free(c->score);
    free(c->assign_scratch);
    gs__quota_free(c);
    gs_dra_free(c->dra);
    free(c->dra_pods);
    free(c->dra_allocs);
    free(c->dra_saved);
    gs_vec_free(c->decisions);
    gs_vec_free(c->warnings);
    gs_intern_free(&c->dims);
    gs_intern_free(&c->reasons);
    gs_arena_free(&c->arena);
    free(c);
}

uint32_t gs_cluster_ndecisions(const gs_cluster *c) { return (uint32_t)c->decisions.n; }

uint32_t gs__dra_ext_mask(const gs_cluster *c, uint32_t pod, uint32_t node)
{
    const gs_cpod *p = &c->pods[pod];
    uint32_t mask = 0;
    for (uint32_t i = 0; i < p->next && i < 32; i++)
        if (!gs_reslist_get(&c->nodes[node].obj->allocatable, p->ext[i].resource))
            mask |= 1u << i;
    return mask;
}

bool gs__gpu_by_dra(const gs_cluster *c, uint32_t pod, uint32_t node)
{
    const gs_cpod *p = &c->pods[pod];
    if (!p->next || !p->has_gpu)
        return false;
    return gs__dra_ext_has(p, gs__dra_ext_mask(c, pod, node), p->gpu.resource ? p->gpu.resource : "nvidia.com/gpu");
}

bool gs__dra_ext_has(const gs_cpod *p, uint32_t mask, const char *resource)
{
    for (uint32_t i = 0; i < p->next && i < 32; i++)
        if ((mask >> i) & 1u && !strcmp(p->ext[i].resource, resource))
            return true;
    return false;
}

void gs__dra_pod_on(gs_cluster *c, uint32_t pod, uint32_t node, gs_dra_pod *rec)
{
    const gs_cpod *p = &c->pods[pod];
    if (!p->next)
        return;
    for (uint32_t k = 0; k < rec->n; k++)
        if (rec->podclaim[k] == GS_DRA_EXTENDED)
            return; /* its claim exists already (status.extendedResourceClaimStatus) */
    uint32_t mask = gs__dra_ext_mask(c, pod, node);
    if (!mask)
        return;
    uint32_t ci = gs_dra_ext_claim(c->dra, pod, p->obj, p->ext, p->next, mask);
    gs_dra_pod base = *rec;
    gs_dra_pod_with(&base, ci, c->dra, rec);
}

int64_t gs__dra_gpu_micro(const gs_cluster *c, uint32_t pod)
{
    const gs_cpod *p = &c->pods[pod];
    if (p->dra == UINT32_MAX || !c->dra)
        return 0;
    const gs_dra_alloc *al = &c->dra_allocs[p->dra];
    int64_t s = 0;
    for (uint32_t i = 0; i < al->ndev; i++) {
        uint32_t gpu;
        uint16_t milli;
        uint32_t mem;
        if (!al->admin[i] && gs_dra_device_gpu(c->dra, al->dev[i], &gpu, &milli, &mem))
            s += (int64_t)milli * 1000;
    }
    return s;
}

static void claim_view(const gs_cluster *c, uint32_t claim, gs_claim_view *v, gs_dra_result_view *res, uint32_t cap)
{
    v->claim_namespace = gs_dra_claim_namespace(c->dra, claim);
    v->claim_name = gs_dra_claim_name(c->dra, claim);
    v->generated = gs_dra_claim_generated(c->dra, claim);
    v->allocated = gs_dra_claim_allocated(c->dra, claim);
    v->nresults = gs_dra_claim_results(c->dra, claim, res, cap);
}

bool gs_cluster_pod_ext_claim(const gs_cluster *c, uint32_t pod, gs_claim_view *v, gs_dra_result_view *res,
                              uint32_t cap)
{
    memset(v, 0, sizeof *v);
    if (pod >= c->npods || c->pods[pod].dra == UINT32_MAX || !c->dra)
        return false;
    const gs_dra_pod *dp = &c->dra_pods[c->pods[pod].dra];
    for (uint32_t k = 0; k < dp->n; k++) {
        if (dp->podclaim[k] != GS_DRA_EXTENDED)
            continue;
        claim_view(c, dp->claim[k], v, res, cap);
        return true;
    }
    return false;
}

uint32_t gs_cluster_pod_nclaims(const gs_cluster *c, uint32_t pod)
{
    return pod < c->npods ? c->pods[pod].obj->nclaims : 0;
}

void gs_cluster_pod_claim(const gs_cluster *c, uint32_t pod, uint32_t i, gs_claim_view *v,
                          gs_dra_result_view *res, uint32_t cap)
{
    memset(v, 0, sizeof *v);
    if (pod >= c->npods || i >= c->pods[pod].obj->nclaims)
        return;
    const gs_cpod *cp = &c->pods[pod];
    v->name = cp->obj->claims[i].name;
    if (cp->dra == UINT32_MAX || !c->dra)
        return;
    const gs_dra_pod *dp = &c->dra_pods[cp->dra];
    for (uint32_t k = 0; k < dp->n; k++) {
        if (dp->podclaim[k] != i)
            continue;
        claim_view(c, dp->claim[k], v, res, cap);
        return;
    }
}
const gs_decision *gs_cluster_decision(const gs_cluster *c, uint32_t i)
{
    return i < c->decisions.n ? &c->decisions.v[i] : NULL;
}
const gs_decision *gs_cluster_decision_for_pod(const gs_cluster *c, uint32_t pod)
{
    if (pod >= c->npods || c->pods[pod].decision == UINT32_MAX)
        return NULL;
    return &c->decisions.v[c->pods[pod].decision];
}
const gs_snapshot *gs_cluster_snapshot(const gs_cluster *c) { return c->snap; }
const gs_config *gs_cluster_config(const gs_cluster *c) { return &c->cfg; }
uint32_t gs_cluster_nwarnings(const gs_cluster *c) { return (uint32_t)c->warnings.n; }
const char *gs_cluster_warning(const gs_cluster *c, uint32_t i)
{
    return i < c->warnings.n ? c->warnings.v[i] : NULL;
}

void gs_cluster_node_view(const gs_cluster *c, uint32_t node, gs_node_view *out)
{
    memset(out, 0, sizeof *out);
    if (node >= c->nnodes)
        return;
    int32_t ci = c->node_of_snap[node];
    const gs_cnode *n = &c->nodes[ci];
    out->node = node;
    out->gpus = &n->gpus;
    out->cpu_alloc = c->alloc[(size_t)ci * c->ndims + GS_DIM_CPU];
    out->cpu_used = c->used[(size_t)ci * c->ndims + GS_DIM_CPU];
    out->mem_alloc = c->alloc[(size_t)ci * c->ndims + GS_DIM_MEM];
    out->mem_used = c->used[(size_t)ci * c->ndims + GS_DIM_MEM];
    out->pods = n->npods;
    out->max_pods = n->max_pods;
    for (size_t i = 0; i < n->pods.n; i++) {
        if (c->pods[n->pods.v[i]].uses_gpu)
            out->gpu_pods++;
        else
            out->non_gpu_pods++;
    }
}

void gs_cluster_memory(const gs_cluster *c, gs_cluster_mem *out)
{
    memset(out, 0, sizeof *out);
    out->per_node = sizeof(gs_cnode) + 2 * c->ndims * sizeof(int64_t) /* alloc, used */ +
                    sizeof(int32_t) /* node_of_snap */ + sizeof(gs_nstatus) + sizeof(uint32_t) +
                    sizeof(gs_node_score) + sizeof(int64_t) + sizeof(gs_gpu_assign) /* scratch */;
    out->per_pod = sizeof(gs_cpod) + c->ndims * sizeof(int64_t) + sizeof(gs_decision);
    size_t devs = 0;
    for (uint32_t i = 0; i < c->nnodes; i++)
        devs += c->nodes[i].gpus.ndevs * sizeof(gs_gpu_dev) + c->nodes[i].gpus.nmig * sizeof(gs_mig_inst) +
                c->nodes[i].pods.cap * sizeof(uint32_t);
    out->shape_cache = (size_t)c->nscache * gs__shape_cache_entry_bytes(c->nnodes);
    out->total = out->per_node * c->nnodes + out->per_pod * c->npods + devs + out->shape_cache +
                 c->arena.used_total;
}
