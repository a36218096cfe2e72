/*
 * emit.c - what a plan turns into: the mig-parted file (version v1) with one config per
 * distinct node layout, the nvidia.com/mig.config value for every node that changes, and
 * the waste report comparing the plan with the GPU operator's fixed configs.
 *
 * The file also carries every built-in config (all-disabled, all-enabled, all-balanced,
 * all-<profile>) of the models in the inventory, device-filtered per model as the GPU
 * operator's default file does, so nodes the plan leaves alone keep a valid label when
 * this file replaces the mig-manager's configuration.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mig_int.h"

/* ---------------------------------------------------------------- mig-parted output */
static void put_devices_map(gs_strbuf *sb, const gs_mig_model *m, const gs_mig_layout *l,
                            const char *indent)
{
    if (!l->mig_enabled) {
        gs_strbuf_printf(sb, "%smig-enabled: false\n", indent);
        return;
    }
    gs_strbuf_printf(sb, "%smig-enabled: true\n", indent);
    if (l->n == 0) {
        gs_strbuf_printf(sb, "%smig-devices: {}\n", indent);
        return;
    }
    uint8_t counts[GS_MIG_MAX_PROFILES];
    gs_mig_layout_counts(l, counts);
    gs_strbuf_printf(sb, "%smig-devices:\n", indent);
    /* widest first, like the operator's files */
    for (int pass = 8; pass >= 1; pass--)
        for (uint8_t p = 0; p < m->nprofiles; p++)
            if (counts[p] && m->profiles[p].mem_slices == pass)
                gs_strbuf_printf(sb, "%s  \"%s\": %u\n", indent, m->profiles[p].name, counts[p]);
}

static void put_filter(gs_strbuf *sb, const gs_mig_model *m)
{
    gs_strbuf_puts(sb, "    - device-filter: [");
    for (int i = 0; i < 8 && m->pci_device_ids[i]; i++)
        gs_strbuf_printf(sb, "%s\"0x%04X10DE\"", i ? ", " : "", m->pci_device_ids[i]);
    gs_strbuf_puts(sb, "]\n");
}

static bool same_layout(const gs_mig_layout *a, const gs_mig_layout *b)
{
    if (a->mig_enabled != b->mig_enabled)
        return false;
    uint8_t ca[GS_MIG_MAX_PROFILES], cb[GS_MIG_MAX_PROFILES];
    gs_mig_layout_counts(a, ca);
    gs_mig_layout_counts(b, cb);
    return !memcmp(ca, cb, sizeof ca);
}

/* Canonical text of a node's GPU layouts (model, then one counts vector per GPU). */
static void node_key(const gs_mig_model *m, const gs_mig_gpu_plan *g, uint32_t n, gs_strbuf *sb)
{
    gs_strbuf_reset(sb);
    gs_strbuf_printf(sb, "%s", m->name);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t c[GS_MIG_MAX_PROFILES];
        gs_mig_layout_counts(&g[i].layout, c);
        gs_strbuf_printf(sb, "|%d", g[i].layout.mig_enabled ? 1 : 0);
        for (uint8_t p = 0; p < m->nprofiles; p++)
            gs_strbuf_printf(sb, ",%u", c[p]);
    }
}

typedef struct planned_cfg {
    const char *name;
    const char *key;
    uint32_t node; /* first node with it */
} planned_cfg;

int gs_mig_plan_emit(const gs_mig_plan_input *in, const gs_mig_plan *plan, gs_mig_emit *out,
                     gs_error *err)
{
    memset(out, 0, sizeof *out);
    gs_arena_init(&out->names, 0);
    out->nnodes = in->nnodes;
    out->node_config = gs_arena_alloc(&out->names, sizeof *out->node_config * (in->nnodes + 1));
    planned_cfg *cfgs = calloc(in->nnodes + 1, sizeof *cfgs);
    uint32_t ncfg = 0;
    gs_strbuf key = GS_STRBUF_INIT;
    if (!out->node_config || !cfgs)
        goto oom;

    /* node -> config name */
    uint32_t gi = 0;
    for (uint32_t ni = 0; ni < in->nnodes; ni++) {
        const gs_mig_node *nd = &in->nodes[ni];
        if (!nd->model)
            continue;
        const gs_mig_gpu_plan *g = &plan->gpus[gi];
        uint32_t n = 0;
        bool changed = false;
        while (gi + n < plan->ngpus && plan->gpus[gi + n].node == ni) {
            changed = changed || plan->gpus[gi + n].changed;
            n++;
        }
        gi += n;
        if (!changed || n == 0)
            continue;
        bool uniform = true;
        for (uint32_t i = 1; i < n && uniform; i++)
            uniform = same_layout(&g[0].layout, &g[i].layout);
        const char *name = NULL;
        if (uniform) {
            for (uint32_t b = 0; b < gs_mig_builtin_count(nd->model) && !name; b++) {
                char bn[64];
                gs_mig_layout bl;
                gs_mig_builtin_name(nd->model, b, bn, sizeof bn);
                if (gs_mig_builtin_layout(nd->model, bn, &bl) && same_layout(&bl, &g[0].layout))
                    name = gs_arena_strdup(&out->names, bn);
            }
            if (!name && uniform && !g[0].layout.mig_enabled)
                name = "all-disabled";
        }
        if (!name) {
            node_key(nd->model, g, n, &key);
            if (key.oom)
                goto oom;
            uint32_t c;
            for (c = 0; c < ncfg; c++)
                if (!strcmp(cfgs[c].key, gs_strbuf_cstr(&key)))
                    break;
            if (c == ncfg) {
                uint64_t h = gs_hash_bytes(key.buf, key.len);
                const char *nm = gs_arena_printf(&out->names, "gpusched-%08x", (uint32_t)h);
                /* a hash collision between different layouts gets a suffix */
                for (uint32_t j = 0, suffix = 2; nm && j < ncfg; j++)
                    if (!strcmp(cfgs[j].name, nm)) {
                        nm = gs_arena_printf(&out->names, "gpusched-%08x-%u", (uint32_t)h, suffix++);
                        j = (uint32_t)-1;
                    }
                const char *k2 = gs_arena_strdup(&out->names, gs_strbuf_cstr(&key));
                if (!nm || !k2)
                    goto oom;
                cfgs[ncfg++] = (planned_cfg){nm, k2, ni};
            }
            name = cfgs[c].name;
        }
        if (!name)
            goto oom;
        out->node_config[ni] = name;
    }

    /* the file */
    gs_strbuf *sb = &out->yaml;
    gs_strbuf_puts(sb, "# mig-parted configuration written by `gpusched mig plan`.\n"
                       "# Label each changed node nvidia.com/mig.config=<config> as the plan lists.\n"
                       "# The all-* configs are the GPU operator's built-in ones for the GPU models of\n"
                       "# the inventory, so nodes the plan leaves alone keep a valid label.\n"
                       "version: v1\n"
                       "mig-configs:\n"
                       "  all-disabled:\n"
                       "    - devices: all\n"
                       "      mig-enabled: false\n"
                       "  all-enabled:\n"
                       "    - devices: all\n"
                       "      mig-enabled: true\n"
                       "      mig-devices: {}\n");
    out->nconfigs = 2;
    /* models present, in catalog order */
    uint32_t nm;
    const gs_mig_model *all = gs_mig_models(&nm);
    bool present[GS_MIG_MAX_CATALOG] = {false};
    for (uint32_t ni = 0; ni < in->nnodes; ni++) {
        int ci = in->nodes[ni].model ? gs_mig_model_index(in->nodes[ni].model) : -1;
        if (ci >= 0 && ci < GS_MIG_MAX_CATALOG)
            present[ci] = true;
    }
    /* built-in names in first-seen order across the present models */
    char names[128][48];
    uint32_t nnames = 0;
    for (uint32_t c = 0; c < nm && c < GS_MIG_MAX_CATALOG; c++) {
        if (!present[c])
            continue;
        for (uint32_t b = 2; b < gs_mig_builtin_count(&all[c]); b++) {
            char bn[48];
            gs_mig_builtin_name(&all[c], b, bn, sizeof bn);
            bool seen = false;
            for (uint32_t j = 0; j < nnames && !seen; j++)
                seen = !strcmp(names[j], bn);
            if (!seen && nnames < 128)
                memcpy(names[nnames++], bn, sizeof bn);
        }
    }
    for (uint32_t j = 0; j < nnames; j++) {
        bool header = false;
        for (uint32_t c = 0; c < nm && c < GS_MIG_MAX_CATALOG; c++) {
            gs_mig_layout bl;
            if (!present[c] || !gs_mig_builtin_layout(&all[c], names[j], &bl))
                continue;
            if (!header) {
                gs_strbuf_printf(sb, "  %s:\n", names[j]);
                header = true;
                out->nconfigs++;
            }
            put_filter(sb, &all[c]);
            gs_strbuf_puts(sb, "      devices: all\n");
            put_devices_map(sb, &all[c], &bl, "      ");
        }
    }
    /* planned configs */
    for (uint32_t c = 0; c < ncfg; c++) {
        uint32_t ni = cfgs[c].node;
        const gs_mig_node *nd = &in->nodes[ni];
        uint32_t first = 0;
        while (first < plan->ngpus && plan->gpus[first].node != ni)
            first++;
        const gs_mig_gpu_plan *g = &plan->gpus[first];
        uint32_t n = 0;
        while (first + n < plan->ngpus && plan->gpus[first + n].node == ni)
            n++;
        gs_strbuf_printf(sb, "  %s:  # %s\n", cfgs[c].name, nd->model->name);
        out->nconfigs++;
        bool done[GS_MIG_MAX_GPUS_PER_NODE] = {false};
        for (uint32_t i = 0; i < n; i++) {
            if (done[i])
                continue;
            uint32_t same = 0;
            for (uint32_t j = i; j < n; j++)
                same += same_layout(&g[i].layout, &g[j].layout);
            put_filter(sb, nd->model);
            if (same == n) {
                gs_strbuf_puts(sb, "      devices: all\n");
            } else {
                gs_strbuf_puts(sb, "      devices: [");
                bool firstd = true;
                for (uint32_t j = i; j < n; j++) {
                    if (!done[j] && same_layout(&g[i].layout, &g[j].layout)) {
                        gs_strbuf_printf(sb, "%s%u", firstd ? "" : ", ", g[j].gpu);
                        firstd = false;
                    }
                }
                gs_strbuf_puts(sb, "]\n");
            }
            for (uint32_t j = i; j < n; j++)
                if (same_layout(&g[i].layout, &g[j].layout))
                    done[j] = true;
            put_devices_map(sb, nd->model, &g[i].layout, "      ");
        }
    }
    if (sb->oom)
        goto oom;
    gs_strbuf_free(&key);
    free(cfgs);
    return 0;
oom:
    gs_strbuf_free(&key);
    free(cfgs);
    gs_mig_emit_free(out);
    return gs_fail(err, GS_ERR_NOMEM, "out of memory");
}

void gs_mig_emit_free(gs_mig_emit *e)
{
    if (!e)
        return;
    gs_strbuf_free(&e->yaml);
    gs_arena_free(&e->names);
    memset(e, 0, sizeof *e);
}

/* ---------------------------------------------------------------- waste report */
typedef struct rows {
    gs_mig_waste *v;
    uint32_t n, cap;
} rows;

static gs_mig_waste *new_row(rows *r)
{
    if (r->n == r->cap) {
        uint32_t c = r->cap ? r->cap * 2 : 16;
        gs_mig_waste *v = realloc(r->v, sizeof *v * c);
        if (!v)
            return NULL;
        r->v = v;
        r->cap = c;
    }
    gs_mig_waste *w = &r->v[r->n++];
    memset(w, 0, sizeof *w);
    return w;
}

static double profile_gib(const gs_mig_model *m, uint8_t p)
{
    return gs_mig_profile_mem(m, &m->profiles[p], NULL) / 1024.0;
}

/* One used GPU's contribution. */
static void add_gpu(gs_mig_waste *w, const gs_mig_plan_input *in, const gs_mig_gpu_plan *g)
{
    const gs_mig_model *m = g->model;
    uint32_t mem_used = 0, cu_used = 0;
    for (uint8_t i = 0; i < g->layout.n; i++) {
        if (g->service[i] == GS_MIG_NO_SERVICE)
            continue;
        const gs_mig_profile *p = &m->profiles[g->layout.profile[i]];
        mem_used += p->mem_slices;
        cu_used += p->compute;
        w->need_gib += in->services[g->service[i]].need_gib;
        w->alloc_gib += profile_gib(m, g->layout.profile[i]);
    }
    w->gpus++;
    w->mem_slices += m->memory_slices;
    w->compute_slices += m->compute_slices;
    w->mem_idle += m->memory_slices - mem_used;
    w->compute_idle += m->compute_slices - cu_used;
}

/* Does a service fit an instance of profile p (memory and asked compute)? */
static bool service_fits(const gs_mig_model *m, uint8_t p, const gs_mig_service *s)
{
    const gs_mig_profile *pr = &m->profiles[p];
    return gs_mig_profile_mem(m, pr, NULL) >= ceil(s->need_gib * 1024.0) &&
           pr->compute >= s->compute_slices;
}

/* The fixed-config flow network for the first n candidate GPUs: source -> services
 * (replicas) -> instance types that fit them -> sink (instances on those GPUs). */
typedef struct fixed_ctx {
    const gs_mig_plan_input *in;
    const gs_mig_plan *plan;
    const gs_mig_model *all;
    uint32_t nm;
    gs_mig_layout lay[GS_MIG_MAX_CATALOG];
    bool has[GS_MIG_MAX_CATALOG];
    const uint32_t *cand;
    uint64_t used[GS_MIG_MAX_CATALOG * GS_MIG_MAX_PROFILES]; /* instances used (record) */
    double need_served;
} fixed_ctx;

#define NTYPES (GS_MIG_MAX_CATALOG * GS_MIG_MAX_PROFILES)

/* Max flow with n GPUs; with record, fills used[] and need_served. -1 on OOM. */
static int64_t fixed_flow(fixed_ctx *x, uint32_t n, bool record)
{
    const gs_mig_plan_input *in = x->in;
    uint64_t avail[NTYPES] = {0};
    for (uint32_t i = 0; i < n; i++) {
        int c = gs_mig_model_index(x->plan->gpus[x->cand[i]].model);
        for (uint8_t k = 0; k < x->lay[c].n; k++)
            avail[(uint32_t)c * GS_MIG_MAX_PROFILES + x->lay[c].profile[k]]++;
    }
    uint32_t src = 0, sink = 1, svc0 = 2, type0 = 2 + in->nservices;
    gs_mig_flow f;
    if (gs_mig__flow_init(&f, type0 + NTYPES) != 0)
        return -1;
    int64_t tedge[NTYPES];
    bool ok = true;
    for (uint32_t s = 0; s < in->nservices && ok; s++) {
        const gs_mig_service *sv = &in->services[s];
        ok = gs_mig__flow_edge(&f, src, svc0 + s, sv->replicas) >= 0;
        for (uint32_t c = 0; c < x->nm && c < GS_MIG_MAX_CATALOG && ok; c++) {
            if (!x->has[c])
                continue;
            for (uint8_t p = 0; p < x->all[c].nprofiles && ok; p++)
                if (avail[c * GS_MIG_MAX_PROFILES + p] && service_fits(&x->all[c], p, sv))
                    ok = gs_mig__flow_edge(&f, svc0 + s, type0 + c * GS_MIG_MAX_PROFILES + p,
                                           INT64_MAX / 4) >= 0;
        }
    }
    for (uint32_t t = 0; t < NTYPES && ok; t++) {
        tedge[t] = -1;
        if (avail[t])
            ok = (tedge[t] = gs_mig__flow_edge(&f, type0 + t, sink, (int64_t)avail[t])) >= 0;
    }
    int64_t flow = ok ? gs_mig__flow_run(&f, src, sink) : -1;
    if (flow >= 0 && record) {
        for (uint32_t t = 0; t < NTYPES; t++)
            x->used[t] = tedge[t] >= 0 ? (uint64_t)gs_mig__flow_of(&f, (uint32_t)tedge[t]) : 0;
        /* memory need of the replicas served: flow on the source -> service edges */
        x->need_served = 0.0;
        for (uint32_t e = 0; e < f.e.n; e += 2)
            if (f.e.v[e ^ 1u].to == src && f.e.v[e].to >= svc0 && f.e.v[e].to < type0)
                x->need_served += (double)gs_mig__flow_of(&f, e) *
                                  in->services[f.e.v[e].to - svc0].need_gib;
    }
    gs_mig__flow_free(&f);
    return flow;
}

/*
 * A fixed config on the pool: as many replicas as it can host at all, on the fewest
 * GPUs taken in inventory order among those that have the config (binary search on the
 * prefix length with the max-flow check above).
 */
static int fixed_row(const gs_mig_plan_input *in, const gs_mig_plan *plan, const char *name,
                     gs_mig_waste *w)
{
    fixed_ctx *x = calloc(1, sizeof *x);
    uint32_t *cand = malloc(sizeof *cand * (plan->ngpus ? plan->ngpus : 1));
    if (!x || !cand) {
        free(x);
        free(cand);
        return -1;
    }
    x->in = in;
    x->plan = plan;
    x->all = gs_mig_models(&x->nm);
    for (uint32_t c = 0; c < x->nm && c < GS_MIG_MAX_CATALOG; c++)
        x->has[c] = gs_mig_builtin_layout(&x->all[c], name, &x->lay[c]);
    uint32_t ncand = 0;
    for (uint32_t i = 0; i < plan->ngpus; i++) {
        int c = gs_mig_model_index(plan->gpus[i].model);
        if (c >= 0 && c < GS_MIG_MAX_CATALOG && x->has[c])
            cand[ncand++] = i;
    }
    x->cand = cand;
    uint64_t total = 0;
    for (uint32_t s = 0; s < in->nservices; s++)
        total += in->services[s].replicas;
    snprintf(w->name, sizeof w->name, "%.60s", name);
    w->kind = GS_MIG_WASTE_FIXED;
    int rc = -1;
    int64_t best = fixed_flow(x, ncand, false);
    if (best < 0)
        goto out;
    uint32_t lo = 0, hi = ncand;
    while (lo < hi) { /* smallest n with flow(n) == best */
        uint32_t mid = lo + (hi - lo) / 2;
        int64_t f = fixed_flow(x, mid, false);
        if (f < 0)
            goto out;
        if (f >= best)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (fixed_flow(x, lo, true) < 0)
        goto out;
    w->gpus = lo;
    uint32_t mem_used = 0, cu_used = 0;
    for (uint32_t t = 0; t < NTYPES; t++) {
        if (!x->used[t])
            continue;
        const gs_mig_model *m = &x->all[t / GS_MIG_MAX_PROFILES];
        uint8_t p = (uint8_t)(t % GS_MIG_MAX_PROFILES);
        mem_used += (uint32_t)x->used[t] * m->profiles[p].mem_slices;
        cu_used += (uint32_t)x->used[t] * m->profiles[p].compute;
        w->alloc_gib += (double)x->used[t] * profile_gib(m, p);
    }
    for (uint32_t i = 0; i < lo; i++) {
        const gs_mig_model *m = plan->gpus[cand[i]].model;
        w->mem_slices += m->memory_slices;
        w->compute_slices += m->compute_slices;
    }
    w->mem_idle = w->mem_slices - mem_used;
    w->compute_idle = w->compute_slices - cu_used;
    w->need_gib = x->need_served;
    w->unserved = (uint32_t)(total - (uint64_t)best);
    rc = 0;
out:
    free(x);
    free(cand);
    return rc;
}

int gs_mig_plan_waste(const gs_mig_plan_input *in, const gs_mig_plan *plan, gs_mig_waste **out,
                      uint32_t *nout, gs_error *err)
{
    rows r = {NULL, 0, 0};
    *out = NULL;
    *nout = 0;
    /* per distinct layout (model + instance counts) of used GPUs */
    for (uint32_t i = 0; i < plan->ngpus; i++) {
        const gs_mig_gpu_plan *g = &plan->gpus[i];
        if (!g->nassigned)
            continue;
        char name[96];
        char text[80];
        gs_mig_layout_text(g->model, &g->layout, false, text, sizeof text);
        snprintf(name, sizeof name, "%s: %s", g->model->name, text);
        gs_mig_waste *w = NULL;
        for (uint32_t j = 0; j < r.n && !w; j++)
            if (r.v[j].model == g->model && !strcmp(r.v[j].name, name))
                w = &r.v[j];
        if (!w) {
            if (!(w = new_row(&r)))
                goto oom;
            w->kind = GS_MIG_WASTE_LAYOUT;
            w->model = g->model;
            memcpy(w->name, name, sizeof w->name);
        }
        add_gpu(w, in, g);
    }
    gs_mig_waste *tot = new_row(&r);
    if (!tot)
        goto oom;
    tot->kind = GS_MIG_WASTE_PLAN;
    snprintf(tot->name, sizeof tot->name, "plan");
    for (uint32_t i = 0; i < plan->ngpus; i++)
        if (plan->gpus[i].nassigned)
            add_gpu(tot, in, &plan->gpus[i]);
    for (uint32_t s = 0; s < plan->nservices; s++)
        tot->unserved += plan->services[s].unplaced;

    /* fixed configs: all-balanced and every plain 1g config of the models present */
    char names[16][48];
    uint32_t nnames = 0;
    memcpy(names[nnames++], "all-balanced", sizeof "all-balanced");
    uint32_t nm;
    const gs_mig_model *all = gs_mig_models(&nm);
    for (uint32_t c = 0; c < nm; c++) {
        bool present = false;
        for (uint32_t i = 0; i < plan->ngpus && !present; i++)
            present = plan->gpus[i].model == &all[c];
        if (!present)
            continue;
        for (uint8_t p = 0; p < all[c].nprofiles; p++) {
            const gs_mig_profile *pr = &all[c].profiles[p];
            if (pr->compute != 1 || !gs_mig_profile_is_plain(pr))
                continue;
            char bn[48];
            snprintf(bn, sizeof bn, "all-%s", pr->name);
            bool seen = false;
            for (uint32_t j = 0; j < nnames && !seen; j++)
                seen = !strcmp(names[j], bn);
            if (!seen && nnames < 16)
                memcpy(names[nnames++], bn, sizeof bn);
        }
    }
    for (uint32_t j = 0; j < nnames; j++) {
        gs_mig_waste *w = new_row(&r);
        if (!w || fixed_row(in, plan, names[j], w) != 0)
            goto oom;
    }
    *out = r.v;
    *nout = r.n;
    return 0;
oom:
    free(r.v);
    return gs_fail(err, GS_ERR_NOMEM, "out of memory");
}
