/*
 * alloc.c - the DRA state and allocator (include/gpusched/dra.h).
 *
 * The search is upstream's structured allocator (k8s.io/dynamic-resource-allocation
 * structured, the variant kube-scheduler uses with its default feature gates): claims in
 * pod order, requests in claim order, the subrequests of a firstAvailable request tried in
 * order (the first that completes wins), and for each required device the candidates of
 * the node in walk order (pools, slices, devices), only as combinations within one
 * request (the next device of a request starts after the previous one); the first full
 * solution is taken. Constraints are checked as devices are added (matchAttribute,
 * distinctAttribute), partitionable devices draw on their pool's counters, devices that
 * allow several allocations draw on their capacity, admin access ignores devices in use.
 *
 * Memory: the state owns flat arrays built once; a filter call works in scratch arrays
 * sized once per node and reused (no allocation per candidate).
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdarg.h>

#include "gpusched/cel.h"
#include "gpusched/dra.h"
#include "gpusched/gpu.h"
#include "dra/dra_int.h"


static void scratch_free(gs_dra *d);

void gs_dra_features_default(gs_dra_features *f)
{
    f->admin_access = true;
    f->prioritized_list = true;
    f->partitionable = true;
    f->device_taints = true;
    f->consumable_capacity = true;
    f->binding_conditions = true;
}

static char *dup_str(gs_dra *d, const char *s)
{
    size_t n = strlen(s);
    char *p = gs_arena_alloc(&d->arena, n + 1);
    if (p)
        memcpy(p, s, n + 1);
    return p;
}

static char *fmt_str(gs_dra *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *fmt_str(gs_dra *d, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return dup_str(d, buf);
}

static void say(char *msg, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *msg, size_t cap, const char *fmt, ...)
{
    if (!msg || !cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------- CEL programs */
static uint32_t prog_for(gs_dra *d, const char *expr)
{
    size_t n = strlen(expr);
    uint32_t id = smap_get(&d->prog_by_expr, expr, n);
    if (id != NONE)
        return id;
    dprog p = {0};
    gs_error e = {0};
    if (gs_cel_compile(expr, n, &p.prog, &e) != 0) {
        p.prog = NULL;
        char buf[GS_ERR_MSG_MAX + 64];
        snprintf(buf, sizeof buf, "%d:%d: %s", e.line, e.col, e.msg);
        p.msg = dup_str(d, buf);
    }
    if (gs_vec_push(d->progs, p) < 0) {
        gs_cel_free(p.prog);
        return NONE;
    }
    id = (uint32_t)d->progs.n - 1;
    if (smap_put(&d->prog_by_expr, expr, n, id) < 0)
        return NONE;
    return id;
}

/* 1 match, 0 no match, -1 error (msg) */
static int prog_match(gs_dra *d, uint32_t pid, uint32_t dev, char *msg, size_t cap)
{
    dprog *p = &d->progs.v[pid];
    if (!p->prog) {
        say(msg, cap, "CEL compile error: %s", p->msg ? p->msg : "invalid expression");
        return -1;
    }
    if (!p->match) {
        p->match = calloc(d->devs.n ? d->devs.n : 1, 1);
        if (!p->match) {
            say(msg, cap, "out of memory");
            return -1;
        }
    }
    uint8_t m = p->match[dev];
    if (m == 1)
        return 1;
    if (m == 2)
        return 0;
    const ddev *dv = &d->devs.v[dev];
    gs_cel_device cd = {
        .driver = dv->slice->driver,
        .attrs = dv->dev->attrs,
        .n_attrs = dv->dev->nattrs,
        .caps = dv->dev->caps,
        .n_caps = dv->dev->ncaps,
        .allow_multiple_allocations = dv->dev->allow_multiple,
    };
    bool ok = false;
    gs_error e = {0};
    if (gs_cel_select(p->prog, &cd, &ok, &e) != 0) {
        p->match[dev] = 3;
        say(msg, cap, "CEL runtime error: %s", e.msg);
        return -1;
    }
    p->match[dev] = ok ? 1 : 2;
    return ok ? 1 : 0;
}

/* ---------------------------------------------------------------- building */
static int cmp_str(const char *a, const char *b) { return strcmp(a, b); }

typedef struct slice_ref {
    uint32_t idx;
    const gs_resource_slice *s;
} slice_ref;

static int cmp_slice_ref(const void *pa, const void *pb)
{
    const gs_resource_slice *a = ((const slice_ref *)pa)->s, *b = ((const slice_ref *)pb)->s;
    int c = cmp_str(a->driver, b->driver);
    if (c)
        return c;
    if ((c = cmp_str(a->pool, b->pool)))
        return c;
    if (a->generation != b->generation)
        return a->generation > b->generation ? -1 : 1; /* newest first */
    if ((c = cmp_str(a->meta.name, b->meta.name)))
        return c;
    uint32_t x = ((const slice_ref *)pa)->idx, y = ((const slice_ref *)pb)->idx;
    return x < y ? -1 : x > y;
}

static bool node_matches(const gs_node *n, const char *node_name, bool all, const gs_node_selector *sel)
{
    if (node_name && *node_name)
        return strcmp(n->meta.name, node_name) == 0;
    if (all)
        return true;
    if (sel)
        return gs_node_selector_matches(sel, &n->meta.labels, n->meta.name);
    return false;
}

static int node_push(gs_dra *d, uint32_t node, uint32_t dev, uint32_t **caps)
{
    dnode *dn = &d->nodemap[node];
    if (dn->ndevs == (*caps)[node]) {
        uint32_t nc = (*caps)[node] ? (*caps)[node] * 2 : 16;
        uint32_t *nv = realloc(dn->devs, nc * sizeof *nv);
        if (!nv)
            return -1;
        dn->devs = nv;
        (*caps)[node] = nc;
    }
    dn->devs[dn->ndevs++] = dev;
    return 0;
}

static const dctr *find_ctr(const gs_dra *d, const dpool *p, const char *set, const char *name, uint32_t *idx)
{
    for (uint32_t i = p->ctr_first; i < p->ctr_first + p->nctr; i++)
        if (!strcmp(d->ctr.v[i].set, set) && !strcmp(d->ctr.v[i].name, name)) {
            *idx = i;
            return &d->ctr.v[i];
        }
    return NULL;
}

static int build_pools(gs_dra *d, gs_error *err)
{
    const gs_snapshot *s = d->snap;
    size_t ns = s->resource_slices.n;
    slice_ref *refs = calloc(ns ? ns : 1, sizeof *refs);
    uint32_t *caps = calloc(d->nnodes ? d->nnodes : 1, sizeof *caps);
    if (!refs || !caps) {
        free(refs);
        free(caps);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < ns; i++)
        refs[i] = (slice_ref){(uint32_t)i, &s->resource_slices.v[i]};
    qsort(refs, ns, sizeof *refs, cmp_slice_ref);
    int rc = -1;
    for (size_t i = 0; i < ns;) {
        /* one pool: refs[i..j) share driver and pool; the newest generation first */
        size_t j = i;
        while (j < ns && !strcmp(refs[j].s->driver, refs[i].s->driver) && !strcmp(refs[j].s->pool, refs[i].s->pool))
            j++;
        dpool p = {.driver = refs[i].s->driver, .name = refs[i].s->pool, .generation = refs[i].s->generation,
                   .slice_count = refs[i].s->slice_count, .ctr_first = (uint32_t)d->ctr.n};
        size_t k = i;
        while (k < j && refs[k].s->generation == p.generation)
            k++;
        p.nslices_seen = (uint32_t)(k - i);
        p.incomplete = (int64_t)p.nslices_seen != p.slice_count;
        uint32_t pidx = (uint32_t)d->pools.n;
        /* counter sets (slices with sharedCounters, newest generation) */
        if (d->f.partitionable) {
            for (size_t a = i; a < k; a++) {
                const gs_resource_slice *sl = refs[a].s;
                for (uint32_t c = 0; c < sl->nshared_counters; c++) {
                    const gs_dra_counter_set *cs = &sl->shared_counters[c];
                    for (uint32_t e = p.ctr_first; e < d->ctr.n; e++)
                        if (!strcmp(d->ctr.v[e].set, cs->name) && !p.invalid) {
                            p.invalid = true;
                            p.invalid_reason = fmt_str(d, "duplicate counter set name %s", cs->name);
                        }
                    for (uint32_t q = 0; q < cs->ncounters; q++) {
                        dctr ct = {.set = cs->name, .name = cs->counters[q].name, .value = cs->counters[q].value};
                        if (gs_vec_push(d->ctr, ct) < 0)
                            goto oom;
                    }
                }
            }
        }
        p.nctr = (uint32_t)d->ctr.n - p.ctr_first;
        /* devices: slices without sharedCounters (with partitionable devices on) */
        uint32_t first_dev = (uint32_t)d->devs.n;
        for (size_t a = i; a < k; a++) {
            const gs_resource_slice *sl = refs[a].s;
            if (d->f.partitionable && sl->nshared_counters)
                continue;
            if (!d->f.partitionable && sl->per_device_node_selection)
                continue;
            for (uint32_t x = 0; x < sl->ndevices; x++) {
                const gs_dra_device *dv = &sl->devices[x];
                ddev dd = {.slice = sl, .dev = dv, .pool = pidx, .cons_first = (uint32_t)d->cons.n, .gpu = -1};
                for (uint32_t c = 0; c < dv->nconsumes && d->f.partitionable; c++) {
                    const gs_dra_counter_set *cc = &dv->consumes[c];
                    for (uint32_t q = 0; q < cc->ncounters; q++) {
                        uint32_t ci = NONE;
                        const dctr *ct = find_ctr(d, &p, cc->name, cc->counters[q].name, &ci);
                        if (!ct) {
                            if (!p.invalid) {
                                p.invalid = true;
                                bool set_found = false;
                                for (uint32_t e = p.ctr_first; e < p.ctr_first + p.nctr; e++)
                                    set_found |= !strcmp(d->ctr.v[e].set, cc->name);
                                p.invalid_reason = set_found
                                    ? fmt_str(d, "counter %s not found in counter set %s", cc->counters[q].name, cc->name)
                                    : fmt_str(d, "counter set %s not found", cc->name);
                            }
                            continue;
                        }
                        dcons co = {ci, cc->counters[q].value};
                        if (gs_vec_push(d->cons, co) < 0)
                            goto oom;
                    }
                }
                dd.ncons = (uint32_t)d->cons.n - dd.cons_first;
                if (dv->allow_multiple && dv->ncaps) {
                    dd.cap_used = gs_arena_alloc(&d->arena, dv->ncaps * sizeof *dd.cap_used);
                    if (!dd.cap_used)
                        goto oom;
                    memset(dd.cap_used, 0, dv->ncaps * sizeof *dd.cap_used);
                }
                char kb[768];
                size_t kn = key3(kb, sizeof kb, sl->driver, sl->pool, dv->name);
                if (smap_get(&d->dev_by_id, kb, kn) != NONE) {
                    if (!p.invalid) {
                        p.invalid = true;
                        p.invalid_reason = fmt_str(d, "duplicate device name %s", dv->name);
                    }
                } else if (smap_put(&d->dev_by_id, kb, kn, (uint32_t)d->devs.n) < 0) {
                    goto oom;
                }
                if (gs_vec_push(d->devs, dd) < 0)
                    goto oom;
            }
        }
        if (gs_vec_push(d->pools, p) < 0)
            goto oom;
        /* node lists: devices of this pool that target each node, in walk order */
        for (uint32_t n = 0; n < d->nnodes; n++) {
            const gs_node *nd = d->nodes[n];
            bool relevant = false;
            for (uint32_t x = first_dev; x < d->devs.n; x++) {
                const ddev *dd = &d->devs.v[x];
                const gs_resource_slice *sl = dd->slice;
                bool m = sl->per_device_node_selection
                    ? node_matches(nd, dd->dev->node_name, dd->dev->all_nodes, dd->dev->node_selector)
                    : node_matches(nd, sl->node_name, sl->all_nodes, sl->node_selector);
                if (!m)
                    continue;
                relevant = true;
                if (p.incomplete || p.invalid)
                    continue;
                if (node_push(d, n, x, &caps) < 0)
                    goto oom;
            }
            if (relevant && (p.incomplete || p.invalid) && d->nodemap[n].bad_pool < 0)
                d->nodemap[n].bad_pool = (int32_t)pidx;
            if (relevant && p.invalid)
                d->nodemap[n].invalid_pool = true;
        }
        i = j;
    }
    rc = 0;
    goto done;
oom:
    rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
done:
    free(refs);
    free(caps);
    return rc;
}

/* ---------------------------------------------------------------- claims */
static uint32_t add_claim(gs_dra *d, const gs_resource_claim *c, const char *ns, const char *name, bool generated)
{
    dclaim dc = {.ns = ns, .name = name, .obj = c, .generated = generated, .node_only = -1,
                 .res_first = (uint32_t)d->res.n};
    if (!generated) {
        dc.deleting = c->meta.deleting;
        dc.nreserved_in = c->nreserved;
        dc.nreserved = c->nreserved;
        if (c->nreserved) {
            dc.in_released = gs_arena_alloc(&d->arena, c->nreserved);
            if (!dc.in_released)
                return NONE;
            memset(dc.in_released, 0, c->nreserved);
        }
    }
    if (gs_vec_push(d->claims, dc) < 0)
        return NONE;
    uint32_t idx = (uint32_t)d->claims.n - 1;
    char kb[600];
    size_t kn = key3(kb, sizeof kb, ns, name, NULL);
    if (smap_put(&d->claim_by_name, kb, kn, idx) < 0)
        return NONE;
    return idx;
}

static void occupy(gs_dra *d, uint32_t dev, bool admin, const gs_quantity *consumed, int sign);

static int load_claims(gs_dra *d, gs_error *err)
{
    const gs_snapshot *s = d->snap;
    for (size_t i = 0; i < s->claim_templates.n; i++) {
        const gs_resource_claim *t = &s->claim_templates.v[i];
        char kb[600];
        size_t kn = key3(kb, sizeof kb, t->meta.namespace_, t->meta.name, NULL);
        if (smap_get(&d->tmpl_by_name, kb, kn) == NONE && smap_put(&d->tmpl_by_name, kb, kn, (uint32_t)i) < 0)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < s->claims.n; i++) {
        const gs_resource_claim *c = &s->claims.v[i];
        char kb[600];
        size_t kn = key3(kb, sizeof kb, c->meta.namespace_, c->meta.name, NULL);
        if (smap_get(&d->claim_by_name, kb, kn) != NONE)
            continue; /* a duplicate: the first wins (the reader warns) */
        uint32_t ci = add_claim(d, c, c->meta.namespace_, c->meta.name, false);
        if (ci == NONE)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        if (!c->allocated)
            continue;
        dclaim *dc = &d->claims.v[ci];
        dc->allocated = true;
        dc->sel = c->alloc_node_selector;
        dc->res_first = (uint32_t)d->res.n;
        for (uint32_t r = 0; r < c->nresults; r++) {
            const gs_dra_result *gr = &c->results[r];
            char db[768];
            size_t dn = key3(db, sizeof db, gr->driver, gr->pool, gr->device);
            dres x = {.dev = smap_get(&d->dev_by_id, db, dn), .request = gr->request, .driver = gr->driver,
                      .pool = gr->pool, .device = gr->device, .admin = gr->admin_access};
            if (x.dev != NONE && gr->nconsumed && d->devs.v[x.dev].cap_used) {
                const gs_dra_device *dv = d->devs.v[x.dev].dev;
                x.consumed = gs_arena_alloc(&d->arena, dv->ncaps * sizeof *x.consumed);
                if (!x.consumed)
                    return gs_fail(err, GS_ERR_NOMEM, "out of memory");
                memset(x.consumed, 0, dv->ncaps * sizeof *x.consumed);
                for (uint32_t q = 0; q < gr->nconsumed; q++)
                    for (uint32_t cap = 0; cap < dv->ncaps; cap++) {
                        const gs_cel_capacity *cc = &dv->caps[cap];
                        const char *nm = gr->consumed[q].name;
                        const char *sl = strchr(nm, '/');
                        bool eq = sl ? (strlen(cc->domain) == (size_t)(sl - nm) && !strncmp(cc->domain, nm, (size_t)(sl - nm)) &&
                                        !strcmp(cc->name, sl + 1))
                                     : (!strcmp(cc->domain, gr->driver) && !strcmp(cc->name, nm));
                        if (eq)
                            x.consumed[cap] = gr->consumed[q].value;
                    }
            }
            if (gs_vec_push(d->res, x) < 0)
                return gs_fail(err, GS_ERR_NOMEM, "out of memory");
            if (x.dev != NONE)
                occupy(d, x.dev, x.admin, x.consumed, +1);
        }
        dc = &d->claims.v[ci];
        dc->nres = (uint32_t)d->res.n - dc->res_first;
    }
    return 0;
}

/* Mark a device taken (sign +1) or given back (-1) by one allocation. */
static void occupy(gs_dra *d, uint32_t dev, bool admin, const gs_quantity *consumed, int sign)
{
    if (admin)
        return;
    ddev *dd = &d->devs.v[dev];
    if (dd->cap_used && d->f.consumable_capacity) {
        bool first = sign > 0 ? dd->ncap_allocs == 0 : dd->ncap_allocs == 1;
        dd->ncap_allocs += sign > 0 ? 1 : (uint32_t)-1;
        if (consumed)
            for (uint32_t c = 0; c < dd->dev->ncaps; c++)
                dd->cap_used[c] = sign > 0 ? gs_quantity_add(dd->cap_used[c], consumed[c])
                                           : gs_quantity_sub(dd->cap_used[c], consumed[c]);
        if (!first)
            return; /* counters are drawn once per device that allows several allocations */
    } else {
        dd->used += sign > 0 ? 1 : (uint32_t)-1;
    }
    for (uint32_t c = dd->cons_first; c < dd->cons_first + dd->ncons; c++) {
        dctr *ct = &d->ctr.v[d->cons.v[c].ctr];
        ct->used = sign > 0 ? gs_quantity_add(ct->used, d->cons.v[c].amount) : gs_quantity_sub(ct->used, d->cons.v[c].amount);
    }
}

gs_dra *gs_dra_new(const gs_snapshot *snap, const gs_node *const *nodes, uint32_t nnodes,
                   const gs_dra_features *features, gs_error *err)
{
    gs_dra *d = calloc(1, sizeof *d);
    if (!d) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    d->snap = snap;
    if (features)
        d->f = *features;
    else
        gs_dra_features_default(&d->f);
    gs_arena_init(&d->arena, 0);
    d->nodes = nodes;
    d->nnodes = nnodes;
    smap_init(&d->node_by_name);
    smap_init(&d->class_by_name);
    smap_init(&d->prog_by_expr);
    smap_init(&d->dev_by_id);
    smap_init(&d->claim_by_name);
    smap_init(&d->tmpl_by_name);
    smap_init(&d->gen_by_pod);
    smap_init(&d->ext_by_pod);
    smap_init(&d->ext_class);
    d->active = snap->resource_slices.n || snap->device_classes.n || snap->claims.n || snap->claim_templates.n;
    d->nodemap = calloc(nnodes ? nnodes : 1, sizeof *d->nodemap);
    if (!d->nodemap)
        goto oom;
    for (uint32_t n = 0; n < nnodes; n++) {
        d->nodemap[n].bad_pool = -1;
        if (smap_put(&d->node_by_name, nodes[n]->meta.name, strlen(nodes[n]->meta.name), n) < 0)
            goto oom;
    }
    /* classes */
    d->nclasses = (uint32_t)snap->device_classes.n;
    d->classes = calloc(d->nclasses ? d->nclasses : 1, sizeof *d->classes);
    if (!d->classes)
        goto oom;
    for (uint32_t i = 0; i < d->nclasses; i++) {
        const gs_device_class *c = &snap->device_classes.v[i];
        d->classes[i].obj = c;
        d->classes[i].prog_first = (uint32_t)d->class_progs.n;
        for (uint32_t s = 0; s < c->nselectors; s++) {
            uint32_t pid = prog_for(d, c->selectors[s].cel);
            if (pid == NONE || gs_vec_push(d->class_progs, pid) < 0)
                goto oom;
        }
        d->classes[i].nprog = c->nselectors;
        if (smap_get(&d->class_by_name, c->meta.name, strlen(c->meta.name)) == NONE &&
            smap_put(&d->class_by_name, c->meta.name, strlen(c->meta.name), i) < 0)
            goto oom;
    }
    /* extended resources: the implicit name of every class, then the explicit ones (the
     * newest class wins a name, then the first by name) */
    for (uint32_t i = 0; i < d->nclasses; i++) {
        char nb[400];
        int nl = snprintf(nb, sizeof nb, "deviceclass.resource.kubernetes.io/%s", d->classes[i].obj->meta.name);
        if (nl > 0 && (size_t)nl < sizeof nb && smap_put(&d->ext_class, nb, (size_t)nl, i) < 0)
            goto oom;
    }
    for (uint32_t i = 0; i < d->nclasses; i++) {
        const gs_device_class *c = d->classes[i].obj;
        const char *r = c->extended_resource_name;
        if (!r || !*r)
            continue;
        uint32_t cur = smap_get(&d->ext_class, r, strlen(r));
        if (cur != NONE && !strncmp(gs_intern_str(&d->ext_class.keys, gs_intern_find(&d->ext_class.keys, r, strlen(r))),
                                    "deviceclass.resource.kubernetes.io/", 35))
            cur = NONE;
        if (cur != NONE) {
            const gs_device_class *o = d->classes[cur].obj;
            bool newer = c->meta.has_creation && (!o->meta.has_creation || c->meta.creation > o->meta.creation);
            bool same = c->meta.has_creation == o->meta.has_creation && c->meta.creation == o->meta.creation;
            if (!newer && !(same && strcmp(c->meta.name, o->meta.name) < 0))
                continue;
        }
        if (smap_put(&d->ext_class, r, strlen(r), i) < 0)
            goto oom;
    }
    if (build_pools(d, err) < 0 || load_claims(d, err) < 0) {
        gs_dra_free(d);
        return NULL;
    }
    return d;
oom:
    gs_fail(err, GS_ERR_NOMEM, "out of memory");
    gs_dra_free(d);
    return NULL;
}

void gs_dra_free(gs_dra *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->progs.n; i++) {
        gs_cel_free(d->progs.v[i].prog);
        free(d->progs.v[i].match);
    }
    gs_vec_free(d->progs);
    scratch_free(d);
    for (size_t i = 0; i < d->claims.n; i++) {
        gs_vec_free(d->claims.v[i].pods);
        free(d->claims.v[i].reqs);
    }
    gs_vec_free(d->claims);
    if (d->nodemap)
        for (uint32_t n = 0; n < d->nnodes; n++)
            free(d->nodemap[n].devs);
    free(d->nodemap);
    free(d->classes);
    gs_vec_free(d->class_progs);
    gs_vec_free(d->req_progs);
    gs_vec_free(d->pools);
    gs_vec_free(d->devs);
    gs_vec_free(d->ctr);
    gs_vec_free(d->cons);
    gs_vec_free(d->res);
    gs_vec_free(d->selp);
    gs_vec_free(d->s_ctr_alloc_idx);
    free(d->s_mask);
    free(d->s_ctr_alloc);
    smap_free(&d->node_by_name);
    smap_free(&d->class_by_name);
    smap_free(&d->prog_by_expr);
    smap_free(&d->dev_by_id);
    smap_free(&d->claim_by_name);
    smap_free(&d->tmpl_by_name);
    smap_free(&d->gen_by_pod);
    smap_free(&d->ext_by_pod);
    smap_free(&d->ext_class);
    gs_arena_free(&d->arena);
    free(d);
}

bool gs_dra_active(const gs_dra *d) { return d && d->active; }

/* ---------------------------------------------------------------- requests */
int gs__dra_flatten(gs_dra *d, dclaim *c)
{
    if (c->reqs_done)
        return 0;
    const gs_dra_claim_spec *sp = &c->obj->spec;
    uint32_t n = 0;
    for (uint32_t r = 0; r < sp->nrequests; r++)
        n += sp->requests[r].has_exactly ? 1 : sp->requests[r].nfirst_available;
    c->reqs = calloc(n ? n : 1, sizeof *c->reqs);
    const char *claim_id = fmt_str(d, "%s/%s", c->ns, c->name);
    if (!c->reqs || !claim_id)
        return -1;
    uint32_t k = 0;
    for (uint32_t r = 0; r < sp->nrequests; r++) {
        const gs_dra_request *rq = &sp->requests[r];
        uint32_t nalts = rq->has_exactly ? 1 : rq->nfirst_available;
        for (uint32_t a = 0; a < nalts; a++) {
            dreq *q = &c->reqs[k++];
            q->ex = rq->has_exactly ? &rq->exactly : &rq->first_available[a];
            q->base = rq->name;
            q->sub = rq->has_exactly ? NULL : q->ex->name;
            q->full = q->sub ? fmt_str(d, "%s/%s", rq->name, q->sub) : rq->name;
            if (!q->full)
                return -1;
            q->request = r;
            q->claim_id = claim_id;
            q->nalts = rq->has_exactly ? 0 : nalts;
            q->alt = a;
            q->cls = -1;
            uint32_t ci = smap_get(&d->class_by_name, q->ex->class_name, strlen(q->ex->class_name));
            if (ci != NONE)
                q->cls = (int32_t)ci;
            q->prog_first = (uint32_t)d->req_progs.n;
            for (uint32_t s = 0; s < q->ex->nselectors; s++) {
                uint32_t pid = prog_for(d, q->ex->selectors[s].cel);
                if (pid == NONE || gs_vec_push(d->req_progs, pid) < 0)
                    return -1;
            }
            q->nprog = q->ex->nselectors;
        }
    }
    c->nreqs = k;
    c->reqs_done = true;
    return 0;
}

/* ---------------------------------------------------------------- pods */
static bool reserved_by(const dclaim *c, uint32_t pod_id, const gs_pod *p)
{
    for (size_t i = 0; i < c->pods.n; i++)
        if (c->pods.v[i] == pod_id)
            return true;
    if (!c->generated && p)
        for (uint32_t i = 0; i < c->nreserved_in; i++) {
            const gs_dra_consumer *r = &c->obj->reserved_for[i];
            if (c->in_released[i])
                continue;
            if (!strcmp(r->resource, "pods") && ((*p->meta.uid && !strcmp(r->uid, p->meta.uid)) ||
                                                 (!*p->meta.uid && !strcmp(r->name, p->meta.name))))
                return true;
        }
    return false;
}

gs_dra_status gs_dra_pod_resolve(gs_dra *d, uint32_t pod_id, const gs_pod *p, gs_dra_pod *out,
                                 char *msg, size_t cap)
{
    out->n = 0;
    out->nalloc = 0;
    if (p->extended_claim && *p->extended_claim) {
        /* the claim kube-scheduler made for the pod's extended resources */
        char kb[600];
        size_t kn = key3(kb, sizeof kb, p->meta.namespace_, p->extended_claim, NULL);
        uint32_t ci = smap_get(&d->claim_by_name, kb, kn);
        if (ci != NONE && d->claims.v[ci].allocated) {
            out->claim[0] = ci;
            out->podclaim[0] = GS_DRA_EXTENDED;
            out->n = 1;
        }
    }
    if (!p->nclaims)
        return GS_DRA_OK;
    if (p->nclaims > GS_DRA_POD_CLAIMS_MAX) {
        say(msg, cap, "pod \"%s/%s\": more than %d resource claims", p->meta.namespace_, p->meta.name,
            GS_DRA_POD_CLAIMS_MAX);
        return GS_DRA_UNSCHEDULABLE;
    }
    const char *ns = p->meta.namespace_;
    for (uint32_t i = 0; i < p->nclaims; i++) {
        const gs_pod_claim *pc = &p->claims[i];
        uint32_t ci = NONE;
        char kb[600];
        if (*pc->claim_name) {
            size_t kn = key3(kb, sizeof kb, ns, pc->claim_name, NULL);
            ci = smap_get(&d->claim_by_name, kb, kn);
            if (ci == NONE) {
                say(msg, cap, "resourceclaim.resource.k8s.io \"%s\" not found", pc->claim_name);
                return GS_DRA_UNSCHEDULABLE;
            }
        } else if (*pc->template_name) {
            if (pc->status_claim == NULL)
                continue; /* the controller says no claim is needed */
            if (*pc->status_claim) {
                size_t kn = key3(kb, sizeof kb, ns, pc->status_claim, NULL);
                ci = smap_get(&d->claim_by_name, kb, kn);
                if (ci == NONE) {
                    say(msg, cap, "resourceclaim.resource.k8s.io \"%s\" not found", pc->status_claim);
                    return GS_DRA_UNSCHEDULABLE;
                }
            } else {
                /* not instantiated yet: the resourceclaim controller would make it */
                char pk[64];
                int pn = snprintf(pk, sizeof pk, "%u\x1f%u", pod_id, i);
                ci = smap_get(&d->gen_by_pod, pk, (size_t)pn);
                if (ci == NONE) {
                    size_t kn = key3(kb, sizeof kb, ns, pc->template_name, NULL);
                    uint32_t ti = smap_get(&d->tmpl_by_name, kb, kn);
                    if (ti == NONE) {
                        say(msg, cap, "resourceclaimtemplate.resource.k8s.io \"%s\" not found", pc->template_name);
                        return GS_DRA_UNSCHEDULABLE;
                    }
                    char *name = fmt_str(d, "%s-%s", p->meta.name, pc->name);
                    if (!name)
                        goto oom;
                    ci = add_claim(d, &d->snap->claim_templates.v[ti], ns, name, true);
                    if (ci == NONE || smap_put(&d->gen_by_pod, pk, (size_t)pn, ci) < 0)
                        goto oom;
                }
            }
        } else {
            say(msg, cap, "pod \"%s/%s\", spec.resourceClaim \"%s\": API unsupported", ns, p->meta.name, pc->name);
            return GS_DRA_UNSCHEDULABLE;
        }
        dclaim *c = &d->claims.v[ci];
        if (c->deleting) {
            say(msg, cap, "resourceclaim \"%s\" is being deleted", c->name);
            return GS_DRA_UNSCHEDULABLE;
        }
        out->claim[out->n] = ci;
        out->podclaim[out->n] = (uint8_t)i;
        out->n++;
    }
    for (uint32_t k = 0; k < out->n; k++) {
        dclaim *c = &d->claims.v[out->claim[k]];
        if (c->allocated) {
            if (c->nreserved >= GS_DRA_RESERVED_MAX && !reserved_by(c, pod_id, p)) {
                say(msg, cap, "resourceclaim in use");
                return GS_DRA_UNSCHEDULABLE;
            }
            continue;
        }
        out->nalloc++;
        if (gs__dra_flatten(d, c) < 0)
            goto oom;
        for (uint32_t q = 0; q < c->nreqs; q++) {
            const dreq *r = &c->reqs[q];
            if (r->cls < 0) {
                say(msg, cap, "request %s: device class %s does not exist", r->full, r->ex->class_name);
                return GS_DRA_UNSCHEDULABLE;
            }
        }
    }
    return GS_DRA_OK;
oom:
    say(msg, cap, "out of memory");
    return GS_DRA_ERROR;
}

/* ---------------------------------------------------------------- the search */
typedef struct srch_req {
    const dreq *r;
    uint32_t claim;           /* index in the pod's claim list */
    uint32_t num;             /* devices needed */
    uint32_t *all;            /* All mode: the devices (local indexes) */
    uint32_t all_off, nall;
} srch_req;

typedef struct cstate {
    const gs_dra_constraint *c;
    bool distinct;
    const gs_cel_attr *first;  /* matchAttribute: the value set by the first device */
    uint32_t n;
    const gs_cel_attr **vals;  /* distinctAttribute: values so far (n of them) */
    uint32_t cap;
} cstate;

typedef struct srch {
    gs_dra *d;
    const dnode *dn;
    const gs_dra_pod *pod;
    /* requests per claim: claim k's flattened requests are rq[rq_first[k] .. rq_first[k+1]) */
    srch_req *rq;
    uint32_t nrq;
    uint32_t rq_first[GS_DRA_POD_CLAIMS_MAX + 1];
    uint32_t claims[GS_DRA_POD_CLAIMS_MAX]; /* the pod's claims to allocate (indexes into pod) */
    uint32_t nclaims;
    cstate *cs;               /* constraints of all claims */
    uint32_t cs_first[GS_DRA_POD_CLAIMS_MAX + 1];
    /* results being built */
    uint32_t res_dev[GS_DRA_POD_CLAIMS_MAX * GS_DRA_RESULTS_MAX];
    uint16_t res_req[GS_DRA_POD_CLAIMS_MAX * GS_DRA_RESULTS_MAX];
    uint8_t res_admin[GS_DRA_POD_CLAIMS_MAX * GS_DRA_RESULTS_MAX];
    uint32_t nres;
    uint32_t claim_res[GS_DRA_POD_CLAIMS_MAX]; /* results per claim so far */
    /* capacity being allocated: stack of (local device, per-cap amounts) */
    gs_quantity *cap_stack;
    uint32_t ncap_stack, cap_stack_cap;
    uint32_t *cap_stack_dev;
    char *msg;
    size_t msgcap;
    uint32_t rq_cap, cs_cap;  /* kept between calls, with their buffers */
    uint32_t *alls;
    size_t alls_cap;
    uint64_t steps;
} srch;

static bool tolerated(const gs_dra_exact *ex, const gs_dra_taint *t)
{
    for (uint32_t i = 0; i < ex->ntolerations; i++) {
        const gs_dra_toleration *tl = &ex->tolerations[i];
        if (*tl->key && strcmp(tl->key, t->key))
            continue;
        if (*tl->effect && strcmp(tl->effect, t->effect))
            continue;
        if (!strcmp(tl->op, "Exists"))
            return true;
        if ((!*tl->op || !strcmp(tl->op, "Equal")) && !strcmp(tl->value, t->value))
            return true;
    }
    return false;
}

static bool taint_blocks(const gs_dra_device *dv, const gs_dra_exact *ex)
{
    for (uint32_t i = 0; i < dv->ntaints; i++) {
        const gs_dra_taint *t = &dv->taints[i];
        if ((!strcmp(t->effect, "NoSchedule") || !strcmp(t->effect, "NoExecute")) && !tolerated(ex, t))
            return true;
    }
    return false;
}

/* selectable: class and request selectors; 1 yes, 0 no, -1 error (s->msg) */
/* cel.EnhanceRuntimeError: a missing key gets upstream's advice */
static const char *hint(const char *m)
{
    return strstr(m, "no such key")
               ? ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check "
                 "with has() for optional fields"
               : "";
}

int gs__dra_selectable(gs_dra *d, const dreq *r, uint32_t dev, char *msg, size_t cap)
{
    const ddev *dd = &d->devs.v[dev];
    if (!d->f.binding_conditions && dd->dev->binding_conditions)
        return 0;
    if (r->cls < 0)
        return 0;
    char m[GS_ERR_MSG_MAX];
    const dclass *cl = &d->classes[r->cls];
    for (uint32_t i = 0; i < cl->nprog; i++) {
        int x = prog_match(d, d->class_progs.v[cl->prog_first + i], dev, m, sizeof m);
        if (x < 0) {
            say(msg, cap, "class %s: selector #%u on device %s/%s/%s: %s%s", cl->obj->meta.name, i,
                dd->slice->driver, dd->slice->pool, dd->dev->name, m, hint(m));
            return -1;
        }
        if (!x)
            return 0;
    }
    for (uint32_t i = 0; i < r->nprog; i++) {
        int x = prog_match(d, d->req_progs.v[r->prog_first + i], dev, m, sizeof m);
        if (x < 0) {
            say(msg, cap, "claim %s: selector #%u on device %s/%s/%s: %s%s", r->claim_id, i,
                dd->slice->driver, dd->slice->pool, dd->dev->name, m, hint(m));
            return -1;
        }
        if (!x)
            return 0;
    }
    return 1;
}

static int selectable(srch *s, const dreq *r, uint32_t dev)
{
    return gs__dra_selectable(s->d, r, dev, s->msg, s->msgcap);
}

/* The amount of capacity c of device dv a request consumes (consumable capacity):
 * 0 ok (*out), -1 the request cannot be met by the policy. */
static int consumed_amount(const gs_dra_device *dv, uint32_t c, const gs_dra_exact *ex, const char *driver,
                           gs_quantity *out, bool *requested)
{
    const gs_cel_capacity *cc = &dv->caps[c];
    const gs_dra_cap_policy *pol = dv->cap_policies ? &dv->cap_policies[c] : NULL;
    *requested = false;
    for (uint32_t i = 0; i < ex->ncapacity; i++) {
        const char *nm = ex->capacity[i].name;
        const char *sl = strchr(nm, '/');
        bool eq = sl ? (strlen(cc->domain) == (size_t)(sl - nm) && !strncmp(cc->domain, nm, (size_t)(sl - nm)) &&
                        !strcmp(cc->name, sl + 1))
                     : (!strcmp(cc->domain, driver) && !strcmp(cc->name, nm));
        if (!eq)
            continue;
        *requested = true;
        gs_quantity q = ex->capacity[i].value;
        if (pol && pol->present) {
            if (pol->nvalid_values) {
                uint32_t v = 0;
                while (v < pol->nvalid_values && pol->valid_values[v].nanos < q.nanos)
                    v++;
                if (v == pol->nvalid_values)
                    return -1;
                q = pol->valid_values[v];
            } else if (pol->has_range) {
                if (q.nanos < pol->min.nanos)
                    q = pol->min;
                if (pol->has_step && pol->step.nanos > 0) {
                    __int128 k = (q.nanos - pol->min.nanos + pol->step.nanos - 1) / pol->step.nanos;
                    q.nanos = pol->min.nanos + k * pol->step.nanos;
                }
                if (pol->has_max && q.nanos > pol->max.nanos)
                    return -1;
            }
        }
        *out = q;
        return 0;
    }
    if (pol && pol->present && pol->has_default)
        *out = pol->default_;
    else
        *out = cc->value;
    return 0;
}

/* Enough capacity on device (local li) for request r? Fills amounts (ncaps) when the
 * device allows several allocations. */
static bool capacity_ok(srch *s, const dreq *r, uint32_t dev, uint32_t li, gs_quantity *amounts)
{
    gs_dra *d = s->d;
    const ddev *dd = &d->devs.v[dev];
    const gs_dra_device *dv = dd->dev;
    if (!dd->cap_used && !r->ex->ncapacity)
        return true; /* nothing asked, nothing shared */
    /* every requested capacity must exist on the device */
    for (uint32_t i = 0; i < r->ex->ncapacity; i++) {
        const char *nm = r->ex->capacity[i].name;
        const char *sl = strchr(nm, '/');
        bool found = false;
        for (uint32_t c = 0; c < dv->ncaps && !found; c++) {
            const gs_cel_capacity *cc = &dv->caps[c];
            found = sl ? (strlen(cc->domain) == (size_t)(sl - nm) && !strncmp(cc->domain, nm, (size_t)(sl - nm)) &&
                          !strcmp(cc->name, sl + 1))
                       : (!strcmp(cc->domain, dd->slice->driver) && !strcmp(cc->name, nm));
        }
        if (!found)
            return false;
    }
    for (uint32_t c = 0; c < dv->ncaps; c++) {
        gs_quantity q;
        bool requested;
        if (consumed_amount(dv, c, r->ex, dd->slice->driver, &q, &requested) < 0)
            return false;
        if (!dd->cap_used) {
            if (requested && q.nanos > dv->caps[c].value.nanos)
                return false;
            continue;
        }
        __int128 used = dd->cap_used[c].nanos;
        for (uint32_t k = 0; k < s->ncap_stack; k++)
            if (s->cap_stack_dev[k] == li)
                used += s->cap_stack[(size_t)k * dv->ncaps + c].nanos;
        if (used + q.nanos > dv->caps[c].value.nanos)
            return false;
        if (amounts)
            amounts[c] = q;
    }
    return true;
}

static const gs_cel_attr *lookup_attr(const gs_dra_device *dv, const char *fq)
{
    const char *sl = strchr(fq, '/');
    if (!sl)
        return NULL;
    size_t dl = (size_t)(sl - fq);
    for (uint32_t i = 0; i < dv->nattrs; i++) {
        const gs_cel_attr *a = &dv->attrs[i];
        if (strlen(a->domain) == dl && !strncmp(a->domain, fq, dl) && !strcmp(a->name, sl + 1))
            return a;
    }
    return NULL;
}

static bool attr_eq(const gs_cel_attr *a, const gs_cel_attr *b)
{
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case GS_CEL_ATTR_INT: return a->i == b->i;
    case GS_CEL_ATTR_BOOL: return a->b == b->b;
    case GS_CEL_ATTR_STRING:
    case GS_CEL_ATTR_VERSION: return !strcmp(a->s, b->s);
    }
    return false;
}

static bool constraint_applies(const gs_dra_constraint *c, const dreq *r)
{
    if (!c->nrequests)
        return true;
    for (uint32_t i = 0; i < c->nrequests; i++) {
        if (!strcmp(c->requests[i], r->base))
            return true;
        if (r->sub && !strcmp(c->requests[i], r->full))
            return true;
    }
    return false;
}

/* add the device to the claim's constraints; false (nothing changed) when one refuses */
static bool constraints_add(srch *s, uint32_t k, const dreq *r, uint32_t dev)
{
    const ddev *dd = &s->d->devs.v[dev];
    uint32_t i;
    for (i = s->cs_first[k]; i < s->cs_first[k + 1]; i++) {
        cstate *c = &s->cs[i];
        if (!constraint_applies(c->c, r))
            continue;
        const char *fq = c->distinct ? c->c->distinct_attribute : c->c->match_attribute;
        const gs_cel_attr *a = lookup_attr(dd->dev, fq);
        bool ok = a != NULL;
        if (ok && !c->distinct) {
            if (c->n && !attr_eq(a, c->first))
                ok = false;
        } else if (ok) {
            for (uint32_t v = 0; v < c->n && ok; v++)
                if (attr_eq(a, c->vals[v]))
                    ok = false;
            if (ok && c->n == c->cap) {
                uint32_t nc = c->cap ? c->cap * 2 : 8;
                const gs_cel_attr **nv = realloc(c->vals, nc * sizeof *nv);
                if (!nv)
                    ok = false;
                else {
                    c->vals = nv;
                    c->cap = nc;
                }
            }
        }
        if (!ok)
            break;
        if (c->distinct)
            c->vals[c->n] = a;
        else if (!c->n)
            c->first = a;
        c->n++;
    }
    if (i == s->cs_first[k + 1])
        return true;
    /* roll back the ones before */
    for (uint32_t j = s->cs_first[k]; j < i; j++)
        if (constraint_applies(s->cs[j].c, r))
            s->cs[j].n--;
    return false;
}

static void constraints_remove(srch *s, uint32_t k, const dreq *r)
{
    for (uint32_t i = s->cs_first[k]; i < s->cs_first[k + 1]; i++)
        if (constraint_applies(s->cs[i].c, r))
            s->cs[i].n--;
}

static bool in_use(const srch *s, uint32_t dev, uint32_t li)
{
    const ddev *dd = &s->d->devs.v[dev];
    return dd->used > 0 || s->d->s_mask[li] != 0;
}

/* counters: can device (with its pool) be added? consumes (s->d->s_ctr_alloc) when yes */
static bool counters_take(srch *s, uint32_t dev)
{
    gs_dra *d = s->d;
    const ddev *dd = &d->devs.v[dev];
    if (!dd->ncons)
        return true;
    for (uint32_t c = dd->cons_first; c < dd->cons_first + dd->ncons; c++)
        d->s_ctr_alloc[d->cons.v[c].ctr].nanos += d->cons.v[c].amount.nanos;
    const dpool *p = &d->pools.v[dd->pool];
    for (uint32_t e = p->ctr_first; e < p->ctr_first + p->nctr; e++) {
        __int128 avail = d->ctr.v[e].value.nanos - d->ctr.v[e].used.nanos;
        if (avail < d->s_ctr_alloc[e].nanos) {
            for (uint32_t c = dd->cons_first; c < dd->cons_first + dd->ncons; c++)
                d->s_ctr_alloc[d->cons.v[c].ctr].nanos -= d->cons.v[c].amount.nanos;
            return false;
        }
    }
    return true;
}

static void counters_give(srch *s, uint32_t dev)
{
    gs_dra *d = s->d;
    const ddev *dd = &d->devs.v[dev];
    for (uint32_t c = dd->cons_first; c < dd->cons_first + dd->ncons; c++)
        d->s_ctr_alloc[d->cons.v[c].ctr].nanos -= d->cons.v[c].amount.nanos;
}

static bool cap_in_use(const srch *s, uint32_t dev, uint32_t li)
{
    if (s->d->devs.v[dev].ncap_allocs)
        return true;
    for (uint32_t k = 0; k < s->ncap_stack; k++)
        if (s->cap_stack_dev[k] == li)
            return true;
    return false;
}

typedef struct undo_rec {
    uint32_t dev, li, k;
    const dreq *r;
    bool counters, cap, mask;
} undo_rec;

/* allocateDevice: availability, counters, taints, constraints, then record.
 * 1 allocated (u filled), 0 not, -1 error (must and a constraint refused) */
static int take_device(srch *s, uint32_t qi, uint32_t dev, uint32_t li, bool must, undo_rec *u)
{
    gs_dra *d = s->d;
    const srch_req *sq = &s->rq[qi];
    const dreq *r = sq->r;
    uint32_t k = sq->claim;
    const ddev *dd = &d->devs.v[dev];
    bool admin = r->ex->has_admin_access && r->ex->admin_access && !r->sub;
    bool multi = d->f.consumable_capacity && dd->dev->allow_multiple;
    if (!multi && admin && (d->s_mask[li] & (1u << k)))
        return 0;
    if (!admin && !multi && in_use(s, dev, li))
        return 0;
    if (!admin && multi && dd->used > 0)
        return 0;
    if (!d->f.partitionable && dd->dev->nconsumes)
        return 0;
    bool skip_counters = multi && cap_in_use(s, dev, li);
    bool took_counters = false;
    if (!skip_counters && dd->ncons) {
        if (!counters_take(s, dev))
            return 0;
        took_counters = true;
    }
    if (d->f.device_taints && taint_blocks(dd->dev, r->ex)) {
        if (took_counters)
            counters_give(s, dev);
        return 0;
    }
    if (!constraints_add(s, k, r, dev)) {
        if (took_counters)
            counters_give(s, dev);
        if (must) {
            say(s->msg, s->msgcap, "claim %s/%s, request %s: cannot add device %s/%s/%s because a claim constraint would not be satisfied",
                d->claims.v[s->pod->claim[s->claims[k]]].ns, d->claims.v[s->pod->claim[s->claims[k]]].name, r->full,
                dd->slice->driver, dd->slice->pool, dd->dev->name);
            return -1;
        }
        return 0;
    }
    gs_quantity *amounts = NULL;
    if (d->f.consumable_capacity && multi) {
        uint32_t nc = dd->dev->ncaps;
        if (s->ncap_stack == s->cap_stack_cap) {
            uint32_t ncap = s->cap_stack_cap ? s->cap_stack_cap * 2 : 16;
            gs_quantity *ns = realloc(s->cap_stack, (size_t)ncap * 32 * sizeof *ns);
            if (ns)
                s->cap_stack = ns;
            uint32_t *nd = ns ? realloc(s->cap_stack_dev, ncap * sizeof *nd) : NULL;
            if (nd)
                s->cap_stack_dev = nd;
            if (!ns || !nd) {
                constraints_remove(s, k, r);
                if (took_counters)
                    counters_give(s, dev);
                say(s->msg, s->msgcap, "out of memory");
                return -1;
            }
            s->cap_stack_cap = ncap;
        }
        amounts = &s->cap_stack[(size_t)s->ncap_stack * 32];
        if (nc > 32 || !capacity_ok(s, r, dev, li, amounts)) {
            constraints_remove(s, k, r);
            if (took_counters)
                counters_give(s, dev);
            return 0;
        }
        s->cap_stack_dev[s->ncap_stack++] = li;
    }
    bool mask = !multi;
    if (mask)
        d->s_mask[li] |= 1u << k;
    uint32_t ri = s->nres++;
    s->res_dev[ri] = dev;
    s->res_req[ri] = (uint16_t)(r - d->claims.v[s->pod->claim[s->claims[k]]].reqs);
    s->res_admin[ri] = admin;
    s->claim_res[k]++;
    *u = (undo_rec){dev, li, k, r, took_counters, amounts != NULL, mask};
    return 1;
}

static void give_device(srch *s, const undo_rec *u)
{
    constraints_remove(s, u->k, u->r);
    if (u->mask)
        s->d->s_mask[u->li] &= ~(1u << u->k);
    if (u->cap)
        s->ncap_stack--;
    if (u->counters)
        counters_give(s, u->dev);
    s->nres--;
    s->claim_res[u->k]--;
}

static bool candidate_ok(srch *s, const srch_req *sq, uint32_t dev, uint32_t li, int *err)
{
    gs_dra *d = s->d;
    const dreq *r = sq->r;
    bool admin = r->ex->has_admin_access && r->ex->admin_access && !r->sub;
    if (admin && (d->s_mask[li] & (1u << sq->claim)))
        return false;
    if (!admin && in_use(s, dev, li) && !(d->f.consumable_capacity && d->devs.v[dev].dev->allow_multiple))
        return false;
    int x = selectable(s, r, dev);
    if (x < 0) {
        *err = 1;
        return false;
    }
    if (!x)
        return false;
    if (d->f.consumable_capacity && !capacity_ok(s, r, dev, li, NULL))
        return false;
    return true;
}

/* allocateOne: qi = flattened request index within the pod's search list, di = device
 * index within it, start = first local candidate. 1 done, 0 no solution, -1 error,
 * -2 the results limit exceeded (more aggressive backtracking, as upstream). */
static int one(srch *s, uint32_t k, uint32_t req, uint32_t alt, bool in_alt, uint32_t di, uint32_t start);


/* the search list index of claim k's request `req`, alternative `alt` */
static uint32_t sq_index(const srch *s, uint32_t k, uint32_t req, uint32_t alt)
{
    for (uint32_t q = s->rq_first[k]; q < s->rq_first[k + 1]; q++)
        if (s->rq[q].r->request == req && s->rq[q].r->alt == alt)
            return q;
    return NONE;
}

static int one(srch *s, uint32_t k, uint32_t req, uint32_t alt, bool in_alt, uint32_t di, uint32_t start)
{
    gs_dra *d = s->d;
    if (++s->steps > 50000000ull) {
        say(s->msg, s->msgcap, "allocation search exceeded its step budget");
        return -1;
    }
    if (k >= s->nclaims)
        return 1;
    const dclaim *c = &d->claims.v[s->pod->claim[s->claims[k]]];
    if (req >= c->obj->spec.nrequests) {
        int x = one(s, k + 1, 0, 0, false, 0, 0);
        return x == -2 ? 0 : x; /* not fatal: another alternative before may need fewer */
    }
    uint32_t qi = sq_index(s, k, req, alt);
    srch_req *sq = &s->rq[qi];
    if (!in_alt && sq->r->nalts) {
        bool all_exceeded = true;
        for (uint32_t a = 0; a < sq->r->nalts; a++) {
            int x = one(s, k, req, a, true, 0, 0);
            if (x == -2)
                continue;
            all_exceeded = false;
            if (x < 0)
                return x;
            if (x == 1)
                return 1;
        }
        return all_exceeded ? -2 : 0;
    }
    bool all = sq->r->ex->all;
    if (all && sq->nall == 0)
        return 0;
    if (di >= sq->num)
        return one(s, k, req + 1, 0, false, 0, 0);
    if ((uint64_t)s->claim_res[k] + sq->num - di > GS_DRA_RESULTS_MAX)
        return -2;
    if (all) {
        uint32_t li = sq->all[di];
        undo_rec u;
        int x = take_device(s, qi, s->dn->devs[li], li, true, &u);
        if (x < 0)
            return -1;
        if (!x)
            return 0;
        int y = one(s, k, req, alt, in_alt, di + 1, 0);
        if (y != 1)
            give_device(s, &u);
        return y;
    }
    for (uint32_t li = start; li < s->dn->ndevs; li++) {
        uint32_t dev = s->dn->devs[li];
        int e = 0;
        if (!candidate_ok(s, sq, dev, li, &e)) {
            if (e)
                return -1;
            continue;
        }
        undo_rec u;
        int x = take_device(s, qi, dev, li, false, &u);
        if (x < 0)
            return -1;
        if (!x)
            continue;
        int y = one(s, k, req, alt, in_alt, di + 1, li + 1);
        if (y == 1)
            return 1;
        give_device(s, &u);
        if (y < 0)
            return y;
    }
    return 0;
}

static bool claim_available(const gs_dra *d, const dclaim *c, uint32_t node)
{
    const gs_node *n = d->nodes[node];
    if (c->ours || c->node_only >= 0 || c->nselp) {
        if (c->node_only >= 0)
            return (uint32_t)c->node_only == node;
        for (uint32_t i = 0; i < c->nselp; i++) {
            const gs_node_selector *sel = d->selp.v[c->selp_first + i];
            if (sel->nterms && !gs_sel_term_matches(&sel->terms[0], &n->meta.labels, n->meta.name))
                return false;
        }
        return true;
    }
    if (!c->sel)
        return true;
    return gs_node_selector_matches(c->sel, &n->meta.labels, n->meta.name);
}

gs_dra_status gs_dra_filter(gs_dra *d, const gs_dra_pod *pod, uint32_t node, gs_dra_alloc *out,
                            char *msg, size_t cap)
{
    if (out) {
        out->nclaims = pod->n;
        out->ndev = 0;
        out->overflow = false;
        for (uint32_t k = 0; k < pod->n; k++)
            out->claim[k] = (gs_dra_alloc_claim){0, 0};
    }
    if (!pod->n)
        return GS_DRA_OK;
    for (uint32_t k = 0; k < pod->n; k++) {
        const dclaim *c = &d->claims.v[pod->claim[k]];
        if (c->allocated && !claim_available(d, c, node)) {
            say(msg, cap, "resourceclaim not available on the node");
            return GS_DRA_UNSCHEDULABLE;
        }
    }
    if (!pod->nalloc)
        return GS_DRA_OK;
    const dnode *dn = &d->nodemap[node];
    /* scratch */
    if (d->s_cap < dn->ndevs + 1) {
        uint32_t *nm = realloc(d->s_mask, (dn->ndevs + 1) * sizeof *nm);
        if (!nm) {
            say(msg, cap, "out of memory");
            return GS_DRA_ERROR;
        }
        d->s_mask = nm;
        d->s_cap = dn->ndevs + 1;
    }
    memset(d->s_mask, 0, (dn->ndevs + 1) * sizeof *d->s_mask);
    if (d->s_nctr < d->ctr.n) {
        gs_quantity *nc = realloc(d->s_ctr_alloc, d->ctr.n * sizeof *nc);
        if (!nc) {
            say(msg, cap, "out of memory");
            return GS_DRA_ERROR;
        }
        d->s_ctr_alloc = nc;
        d->s_nctr = (uint32_t)d->ctr.n;
    }
    if (d->ctr.n)
        memset(d->s_ctr_alloc, 0, d->ctr.n * sizeof *d->s_ctr_alloc);

    if (!d->scratch)
        d->scratch = calloc(1, sizeof(srch));
    srch *s = d->scratch;
    if (!s) {
        say(msg, cap, "out of memory");
        return GS_DRA_ERROR;
    }
    s->nclaims = 0;
    s->nrq = 0;
    s->nres = 0;
    s->ncap_stack = 0;
    s->steps = 0;
    memset(s->claim_res, 0, sizeof s->claim_res);
    s->d = d;
    s->dn = dn;
    s->pod = pod;
    s->msg = msg;
    s->msgcap = cap;
    gs_dra_status st = GS_DRA_OK;
    uint32_t nrq = 0, ncs = 0;
    for (uint32_t k = 0; k < pod->n; k++) {
        const dclaim *c = &d->claims.v[pod->claim[k]];
        if (c->allocated)
            continue;
        s->claims[s->nclaims++] = k;
        nrq += c->nreqs;
        ncs += c->obj->spec.nconstraints;
    }
    if (nrq > s->rq_cap) {
        srch_req *nr = realloc(s->rq, nrq * sizeof *nr);
        if (!nr) {
            say(msg, cap, "out of memory");
            return GS_DRA_ERROR;
        }
        s->rq = nr;
        s->rq_cap = nrq;
    }
    if (ncs > s->cs_cap) {
        cstate *nc = realloc(s->cs, ncs * sizeof *nc);
        if (!nc) {
            say(msg, cap, "out of memory");
            return GS_DRA_ERROR;
        }
        memset(nc + s->cs_cap, 0, (ncs - s->cs_cap) * sizeof *nc);
        s->cs = nc;
        s->cs_cap = ncs;
    }
    uint32_t *alls = s->alls;
    size_t nalls = 0, alls_cap = s->alls_cap;
    /* validate: counts, All devices, limits */
    for (uint32_t sk = 0; sk < s->nclaims; sk++) {
        const dclaim *c = &d->claims.v[pod->claim[s->claims[sk]]];
        s->rq_first[sk] = s->nrq;
        uint64_t min_total = 0;
        for (uint32_t q = 0; q < c->nreqs; q++) {
            const dreq *r = &c->reqs[q];
            srch_req *sq = &s->rq[s->nrq++];
            *sq = (srch_req){0};
            sq->r = r;
            sq->claim = sk;
            if (r->ex->has_admin_access && !d->f.admin_access) {
                say(msg, cap, "claim %s/%s, request %s: admin access is requested, but the feature is disabled", c->ns, c->name, r->full);
                st = GS_DRA_ERROR;
                goto done;
            }
            if (r->sub && !d->f.prioritized_list) {
                say(msg, cap, "claim %s/%s, request %s: has subrequests, but the DRAPrioritizedList feature is disabled", c->ns, c->name, r->base);
                st = GS_DRA_ERROR;
                goto done;
            }
            if (r->ex->ncapacity && !d->f.consumable_capacity) {
                say(msg, cap, "claim %s/%s, request %s: has capacity requests, but the DRAConsumableCapacity feature is disabled", c->ns, c->name, r->full);
                st = GS_DRA_ERROR;
                goto done;
            }
            if (!r->ex->all) {
                sq->num = r->ex->count > 0 && r->ex->count < (int64_t)UINT32_MAX ? (uint32_t)r->ex->count : UINT32_MAX;
            } else {
                if (dn->bad_pool >= 0) {
                    const dpool *bp = &d->pools.v[dn->bad_pool];
                    say(msg, cap, "claim %s/%s, request %s: asks for all devices, but resource pool %s/%s is currently %s", c->ns,
                        c->name, r->full, bp->driver, bp->name, bp->invalid ? "invalid" : "being updated");
                    st = GS_DRA_ERROR;
                    goto done;
                }
                size_t first = nalls;
                for (uint32_t li = 0; li < dn->ndevs; li++) {
                    int x = selectable(s, r, dn->devs[li]);
                    if (x < 0) {
                        st = GS_DRA_ERROR;
                        goto done;
                    }
                    if (!x || (d->f.consumable_capacity && !capacity_ok(s, r, dn->devs[li], li, NULL)))
                        continue;
                    if (nalls == alls_cap) {
                        size_t nc = alls_cap ? alls_cap * 2 : 64;
                        uint32_t *na = realloc(alls, nc * sizeof *na);
                        if (!na) {
                            say(msg, cap, "out of memory");
                            st = GS_DRA_ERROR;
                            goto done;
                        }
                        alls = s->alls = na;
                        alls_cap = s->alls_cap = nc;
                    }
                    alls[nalls++] = li;
                }
                sq->nall = (uint32_t)(nalls - first);
                sq->all_off = (uint32_t)first; /* alls may still move */
                sq->num = sq->nall;
            }
        }
        /* the lower bound of devices: exact requests, the smallest alternative */
        for (uint32_t q = s->rq_first[sk]; q < s->nrq;) {
            const dreq *r = s->rq[q].r;
            if (!r->nalts) {
                min_total += s->rq[q].num;
                q++;
                continue;
            }
            uint64_t mn = UINT64_MAX;
            for (uint32_t a = 0; a < r->nalts; a++)
                if (s->rq[q + a].num < mn)
                    mn = s->rq[q + a].num;
            min_total += mn;
            q += r->nalts;
        }
        if (min_total > GS_DRA_RESULTS_MAX) {
            say(msg, cap, "claim %s/%s: number of requested devices %llu exceeds the claim limit of %d", c->ns, c->name,
                (unsigned long long)min_total, GS_DRA_RESULTS_MAX);
            st = GS_DRA_ERROR;
            goto done;
        }
    }
    s->rq_first[s->nclaims] = s->nrq;
    for (uint32_t q = 0; q < s->nrq; q++)
        if (s->rq[q].r->ex->all)
            s->rq[q].all = alls + s->rq[q].all_off;
    /* constraints */
    {
        uint32_t ci = 0;
        for (uint32_t sk = 0; sk < s->nclaims; sk++) {
            const dclaim *c = &d->claims.v[pod->claim[s->claims[sk]]];
            s->cs_first[sk] = ci;
            for (uint32_t j = 0; j < c->obj->spec.nconstraints; j++) {
                const gs_dra_constraint *gc = &c->obj->spec.constraints[j];
                if (!gc->match_attribute && !gc->distinct_attribute) {
                    say(msg, cap, "claim %s/%s, constraint #%u: empty constraint (unsupported constraint type?)", c->ns, c->name, j);
                    st = GS_DRA_ERROR;
                    goto done;
                }
                cstate *x = &s->cs[ci++];
                x->c = gc;
                x->distinct = gc->match_attribute == NULL;
                x->first = NULL;
                x->n = 0; /* vals and cap are kept */
            }
        }
        s->cs_first[s->nclaims] = ci;
    }
    int x = one(s, 0, 0, 0, false, 0, 0);
    if (x < 0 && x != -2) {
        st = GS_DRA_ERROR;
        goto done;
    }
    if (x != 1) {
        if (dn->invalid_pool) {
            say(msg, cap, "invalid resource pools were encountered");
            st = GS_DRA_UNSCHEDULABLE;
        } else {
            say(msg, cap, "cannot allocate all claims");
            st = GS_DRA_UNSCHEDULABLE;
        }
        goto done;
    }
    if (out) {
        /* results in the order they were found, grouped by claim (the search fills claim
         * by claim, so they already are) */
        uint32_t pos = 0;
        for (uint32_t sk = 0; sk < s->nclaims; sk++) {
            uint32_t k = s->claims[sk];
            uint32_t n = 0;
            out->claim[k].first = (uint16_t)out->ndev;
            for (; pos < s->nres && n < s->claim_res[sk]; pos++, n++) {
                if (out->ndev >= sizeof out->dev / sizeof *out->dev) {
                    out->overflow = true;
                    say(msg, cap, "cannot allocate all claims");
                    st = GS_DRA_UNSCHEDULABLE;
                    goto done;
                }
                out->dev[out->ndev] = s->res_dev[pos];
                out->req[out->ndev] = s->res_req[pos];
                out->admin[out->ndev] = s->res_admin[pos];
                out->ndev++;
            }
            out->claim[k].ndev = (uint16_t)n;
        }
    }
done:
    return st;
}

static void scratch_free(gs_dra *d)
{
    srch *s = d->scratch;
    if (!s)
        return;
    for (uint32_t i = 0; i < s->cs_cap; i++)
        free(s->cs[i].vals);
    free(s->cs);
    free(s->rq);
    free(s->alls);
    free(s->cap_stack);
    free(s->cap_stack_dev);
    free(s);
    d->scratch = NULL;
}

/* ---------------------------------------------------------------- commit, release */
static void reserve(gs_dra *d, dclaim *c, uint32_t pod_id, const gs_pod *p)
{
    if (reserved_by(c, pod_id, p))
        return;
    if (gs_vec_push(c->pods, pod_id) == 0)
        c->nreserved++;
}

uint32_t gs_dra_commit(gs_dra *d, const gs_dra_pod *pod, uint32_t pod_id, uint32_t node, const gs_dra_alloc *a)
{
    uint32_t mask = 0;
    for (uint32_t k = 0; k < pod->n; k++) {
        dclaim *c = &d->claims.v[pod->claim[k]];
        if (!c->allocated && a && k < a->nclaims) {
            mask |= 1u << k;
            c->allocated = true;
            c->ours = true;
            c->node_only = -1;
            c->res_first = (uint32_t)d->res.n;
            c->selp_first = (uint32_t)d->selp.n;
            c->nselp = 0;
            c->sel = NULL;
            for (uint32_t i = 0; i < a->claim[k].ndev; i++) {
                uint32_t j = a->claim[k].first + i;
                uint32_t dev = a->dev[j];
                const ddev *dd = &d->devs.v[dev];
                const dreq *r = c->reqs && a->req[j] < c->nreqs ? &c->reqs[a->req[j]] : NULL;
                dres x = {.dev = dev, .request = r ? r->full : "", .driver = dd->slice->driver, .pool = dd->slice->pool,
                          .device = dd->dev->name, .admin = a->admin[j]};
                if (dd->cap_used && d->f.consumable_capacity && r) {
                    x.consumed = gs_arena_alloc(&d->arena, dd->dev->ncaps * sizeof *x.consumed);
                    if (x.consumed)
                        for (uint32_t cc = 0; cc < dd->dev->ncaps; cc++) {
                            bool rq;
                            if (consumed_amount(dd->dev, cc, r->ex, dd->slice->driver, &x.consumed[cc], &rq) < 0)
                                x.consumed[cc] = (gs_quantity){0};
                        }
                }
                if (gs_vec_push(d->res, x) < 0)
                    continue;
                occupy(d, dev, x.admin, x.consumed, +1);
                const gs_resource_slice *sl = dd->slice;
                const char *nn = sl->per_device_node_selection ? dd->dev->node_name : sl->node_name;
                const gs_node_selector *sel = sl->per_device_node_selection ? dd->dev->node_selector : sl->node_selector;
                if ((nn && *nn) || dd->dev->binds_to_node)
                    c->node_only = (int32_t)node;
                else if (sel && c->node_only < 0) {
                    bool dup = false;
                    for (uint32_t q = c->selp_first; q < d->selp.n; q++)
                        dup |= d->selp.v[q] == sel;
                    if (!dup && gs_vec_push(d->selp, sel) == 0)
                        c->nselp++;
                }
            }
            c->nres = (uint32_t)d->res.n - c->res_first;
        }
        reserve(d, c, pod_id, pod_id < d->snap->pods.n ? &d->snap->pods.v[pod_id] : NULL);
    }
    return mask;
}

void gs_dra_release(gs_dra *d, const gs_dra_pod *pod, uint32_t pod_id, uint32_t node, gs_dra_alloc *undo)
{
    (void)node;
    if (undo) {
        undo->nclaims = pod->n;
        undo->ndev = 0;
        undo->overflow = false;
    }
    for (uint32_t k = 0; k < pod->n; k++) {
        dclaim *c = &d->claims.v[pod->claim[k]];
        if (undo)
            undo->claim[k] = (gs_dra_alloc_claim){0, (uint16_t)undo->ndev};
        bool had = false;
        for (size_t i = 0; i < c->pods.n; i++)
            if (c->pods.v[i] == pod_id) {
                c->pods.v[i] = c->pods.v[--c->pods.n];
                c->nreserved--;
                had = true;
                break;
            }
        if (!had && !c->generated && pod_id < d->snap->pods.n) {
            const gs_pod *p = &d->snap->pods.v[pod_id];
            for (uint32_t i = 0; i < c->nreserved_in; i++) {
                const gs_dra_consumer *r = &c->obj->reserved_for[i];
                if (c->in_released[i] || strcmp(r->resource, "pods"))
                    continue;
                if ((*p->meta.uid && !strcmp(r->uid, p->meta.uid)) || (!*p->meta.uid && !strcmp(r->name, p->meta.name))) {
                    c->in_released[i] = 1;
                    c->nreserved--;
                    had = true;
                    break;
                }
            }
        }
        if (!had || c->nreserved || !c->allocated)
            continue;
        /* nobody reserves it: the resourceclaim controller deallocates it */
        for (uint32_t i = 0; i < c->nres; i++) {
            const dres *x = &d->res.v[c->res_first + i];
            if (x->dev != NONE)
                occupy(d, x->dev, x->admin, x->consumed, -1);
            if (undo && x->dev != NONE && undo->ndev < sizeof undo->dev / sizeof *undo->dev) {
                const dreq *r = NULL;
                for (uint32_t q = 0; c->reqs && q < c->nreqs; q++)
                    if (!strcmp(c->reqs[q].full, x->request))
                        r = &c->reqs[q];
                undo->dev[undo->ndev] = x->dev;
                undo->req[undo->ndev] = (uint16_t)(r ? r - c->reqs : 0);
                undo->admin[undo->ndev] = x->admin;
                undo->ndev++;
                undo->claim[k].ndev++;
            }
        }
        c->allocated = false;
        c->ours = false;
        c->nres = 0;
        c->node_only = -1;
        c->nselp = 0;
        if (!c->reqs_done)
            (void)gs__dra_flatten(d, c);
    }
}

/* ---------------------------------------------------------------- views */
uint32_t gs_dra_nclaims(const gs_dra *d) { return (uint32_t)d->claims.n; }
const char *gs_dra_claim_namespace(const gs_dra *d, uint32_t c) { return d->claims.v[c].ns; }
const char *gs_dra_claim_name(const gs_dra *d, uint32_t c) { return d->claims.v[c].name; }
bool gs_dra_claim_generated(const gs_dra *d, uint32_t c) { return d->claims.v[c].generated; }
bool gs_dra_claim_allocated(const gs_dra *d, uint32_t c) { return d->claims.v[c].allocated; }

uint32_t gs_dra_claim_results(const gs_dra *d, uint32_t claim, gs_dra_result_view *out, uint32_t cap)
{
    const dclaim *c = &d->claims.v[claim];
    if (!c->allocated)
        return 0;
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->nres && n < cap; i++, n++) {
        const dres *x = &d->res.v[c->res_first + i];
        out[n] = (gs_dra_result_view){x->request, x->driver, x->pool, x->device, x->admin};
    }
    return n;
}

uint32_t gs_dra_alloc_results(const gs_dra *d, const gs_dra_pod *pod, const gs_dra_alloc *a, uint32_t i,
                              gs_dra_result_view *out, uint32_t cap)
{
    if (i >= pod->n || i >= a->nclaims)
        return 0;
    const dclaim *c = &d->claims.v[pod->claim[i]];
    uint32_t n = 0;
    for (uint32_t j = 0; j < a->claim[i].ndev && n < cap; j++, n++) {
        uint32_t x = a->claim[i].first + j;
        const ddev *dd = &d->devs.v[a->dev[x]];
        const char *req = c->reqs && a->req[x] < c->nreqs ? c->reqs[a->req[x]].full : "";
        out[n] = (gs_dra_result_view){req, dd->slice->driver, dd->slice->pool, dd->dev->name, a->admin[x] != 0};
    }
    return n;
}

void gs_dra_node_devices(const gs_dra *d, uint32_t node, uint32_t *total, uint32_t *in_use)
{
    const dnode *dn = &d->nodemap[node];
    uint32_t u = 0;
    for (uint32_t i = 0; i < dn->ndevs; i++)
        u += d->devs.v[dn->devs[i]].used > 0 || d->devs.v[dn->devs[i]].ncap_allocs > 0;
    *total = dn->ndevs;
    *in_use = u;
}

/* ---------------------------------------------------------------- one GPU inventory */
static const gs_cel_attr *own_attr(const ddev *dd, const char *name)
{
    const gs_dra_device *dv = dd->dev;
    for (uint32_t i = 0; i < dv->nattrs; i++)
        if (!strcmp(dv->attrs[i].name, name) && !strcmp(dv->attrs[i].domain, dd->slice->driver))
            return &dv->attrs[i];
    return NULL;
}

static const char *own_str(const ddev *dd, const char *name)
{
    const gs_cel_attr *a = own_attr(dd, name);
    return a && (a->kind == GS_CEL_ATTR_STRING || a->kind == GS_CEL_ATTR_VERSION) ? a->s : NULL;
}

static uint32_t own_mem_mib(const ddev *dd)
{
    const gs_dra_device *dv = dd->dev;
    for (uint32_t i = 0; i < dv->ncaps; i++)
        if (!strcmp(dv->caps[i].name, "memory") && !strcmp(dv->caps[i].domain, dd->slice->driver)) {
            __int128 b = dv->caps[i].value.nanos / 1000000000;
            b /= 1024 * 1024;
            return b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
        }
    return 0;
}

static bool gpu_driver(const char *drv)
{
    return !strcmp(drv, "gpu.nvidia.com") || !strcmp(drv, "gpu.amd.com") || !strcmp(drv, "gpu.intel.com");
}

typedef struct gpu_ref {
    uint32_t dev;
    int64_t key;
    uint32_t walk;
} gpu_ref;

static int cmp_gpu_ref(const void *pa, const void *pb)
{
    const gpu_ref *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->walk < b->walk ? -1 : a->walk > b->walk;
}

int gs_dra_link_node_gpus(gs_dra *d, uint32_t node, gs_node_gpus *g)
{
    const dnode *dn = &d->nodemap[node];
    uint32_t nw = 0, nmig = 0;
    for (uint32_t i = 0; i < dn->ndevs; i++) {
        const ddev *dd = &d->devs.v[dn->devs[i]];
        if (!gpu_driver(dd->slice->driver))
            continue;
        const char *t = own_str(dd, "type");
        nw += t && !strcmp(t, "gpu");
        nmig += t && !strcmp(t, "mig");
    }
    if (!nw && !nmig)
        return 0;
    gpu_ref *w = calloc(nw + nmig + 1, sizeof *w);
    const char **uuids = calloc(nw + nmig + 1, sizeof *uuids);
    if (!w || !uuids) {
        free(w);
        free(uuids);
        return -1;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < dn->ndevs; i++) {
        const ddev *dd = &d->devs.v[dn->devs[i]];
        const char *t = gpu_driver(dd->slice->driver) ? own_str(dd, "type") : NULL;
        if (!t || strcmp(t, "gpu"))
            continue;
        const gs_cel_attr *ix = own_attr(dd, "index");
        if (!ix || ix->kind != GS_CEL_ATTR_INT)
            ix = own_attr(dd, "minor");
        w[k++] = (gpu_ref){dn->devs[i], ix && ix->kind == GS_CEL_ATTR_INT ? ix->i : INT64_MAX, i};
    }
    qsort(w, nw, sizeof *w, cmp_gpu_ref);
    /* the GPUs: whole devices, then the parents of MIG devices not published whole */
    uint32_t ngpu = nw;
    for (uint32_t i = 0; i < nw; i++)
        uuids[i] = own_str(&d->devs.v[w[i].dev], "uuid");
    for (uint32_t i = 0; i < dn->ndevs; i++) {
        const ddev *dd = &d->devs.v[dn->devs[i]];
        const char *t = gpu_driver(dd->slice->driver) ? own_str(dd, "type") : NULL;
        if (!t || strcmp(t, "mig"))
            continue;
        const char *pu = own_str(dd, "parentUUID");
        bool known = false;
        for (uint32_t j = 0; j < ngpu && !known; j++)
            known = pu && uuids[j] && !strcmp(uuids[j], pu);
        if (!known)
            uuids[ngpu++] = pu; /* NULL parent: one GPU per such device */
    }
    int rc = 0;
    bool build = g->ndevs == 0;
    if (build) {
        g->devs = calloc(ngpu, sizeof *g->devs);
        if (!g->devs) {
            rc = -1;
            goto done;
        }
        g->ndevs = ngpu;
        for (uint32_t i = 0; i < ngpu; i++)
            g->devs[i].slots = 1;
        g->gpu_node = true;
        g->labels_only = false;
    }
    if (!g->model || !*g->model) {
        for (uint32_t i = 0; i < dn->ndevs; i++) {
            const ddev *dd = &d->devs.v[dn->devs[i]];
            const char *pn = gpu_driver(dd->slice->driver) ? own_str(dd, "productName") : NULL;
            if (pn) {
                g->model = pn;
                if (!g->mig_model)
                    g->mig_model = gs_mig_model_find(pn);
                break;
            }
        }
    }
    for (uint32_t i = 0; i < nw; i++) {
        ddev *dd = &d->devs.v[w[i].dev];
        if (i >= g->ndevs)
            break;
        dd->gpu = (int32_t)i;
        dd->gpu_milli = 1000;
        uint32_t mem = own_mem_mib(dd);
        if (build)
            g->devs[i].mem_mib = mem;
        dd->gpu_mem = g->devs[i].mem_mib ? g->devs[i].mem_mib : mem;
    }
    for (uint32_t i = 0; i < dn->ndevs; i++) {
        ddev *dd = &d->devs.v[dn->devs[i]];
        const char *t = gpu_driver(dd->slice->driver) ? own_str(dd, "type") : NULL;
        if (!t || strcmp(t, "mig"))
            continue;
        const char *pu = own_str(dd, "parentUUID");
        int32_t parent = -1;
        for (uint32_t j = 0; j < ngpu && parent < 0; j++)
            if (pu && uuids[j] && !strcmp(uuids[j], pu))
                parent = (int32_t)j;
        if (parent < 0) /* no parent named: the GPU added for it above */
            for (uint32_t j = nw; j < ngpu && parent < 0; j++)
                if (!uuids[j])
                    parent = (int32_t)j, uuids[j] = "";
        if (parent < 0 || (uint32_t)parent >= g->ndevs)
            continue;
        const char *prof = own_str(dd, "profile");
        double f = prof ? gs_mig_request_fraction(prof, g->mig_model) : 0;
        dd->gpu = parent;
        dd->gpu_milli = (uint16_t)(f > 0 && f <= 1 ? f * 1000 + 0.5 : 1000);
        dd->gpu_mem = own_mem_mib(dd);
    }
done:
    free(w);
    free(uuids);
    return rc;
}

bool gs_dra_device_gpu(const gs_dra *d, uint32_t dev, uint32_t *gpu, uint16_t *milli, uint32_t *mem_mib)
{
    if (dev >= d->devs.n || d->devs.v[dev].gpu < 0)
        return false;
    *gpu = (uint32_t)d->devs.v[dev].gpu;
    *milli = d->devs.v[dev].gpu_milli;
    *mem_mib = d->devs.v[dev].gpu_mem;
    return true;
}

/* ---------------------------------------------------------------- extended resources */
const char *gs_dra_ext_class(const gs_dra *d, const char *resource)
{
    uint32_t i = smap_get(&d->ext_class, resource, strlen(resource));
    return i == NONE ? NULL : d->classes[i].obj->meta.name;
}

uint32_t gs_dra_ext_claim(gs_dra *d, uint32_t pod_id, const gs_pod *p, const gs_dra_ext *e, uint32_t n,
                          uint32_t mask)
{
    char pk[64];
    int pn = snprintf(pk, sizeof pk, "%u\x1f%u", pod_id, mask);
    uint32_t ci = smap_get(&d->ext_by_pod, pk, (size_t)pn);
    if (ci != NONE)
        return ci;
    uint32_t k = 0;
    for (uint32_t i = 0; i < n && i < 32; i++)
        k += (mask >> i) & 1u;
    gs_resource_claim *c = gs_arena_alloc(&d->arena, sizeof *c);
    gs_dra_request *rq = gs_arena_alloc(&d->arena, (k ? k : 1) * sizeof *rq);
    char *name = fmt_str(d, "%s-extended-resources", p->meta.name);
    if (!c || !rq || !name)
        return NONE;
    memset(c, 0, sizeof *c);
    c->meta.name = name;
    c->meta.namespace_ = p->meta.namespace_;
    uint32_t j = 0;
    for (uint32_t i = 0; i < n && i < 32; i++) {
        if (!((mask >> i) & 1u))
            continue;
        memset(&rq[j], 0, sizeof rq[j]);
        rq[j].name = fmt_str(d, "container-%u-request-%u", e[i].container, e[i].request);
        if (!rq[j].name)
            return NONE;
        rq[j].has_exactly = true;
        rq[j].exactly.name = rq[j].name;
        rq[j].exactly.class_name = e[i].class_name;
        rq[j].exactly.count = e[i].count;
        j++;
    }
    c->spec.requests = rq;
    c->spec.nrequests = j;
    ci = add_claim(d, c, p->meta.namespace_, name, true);
    if (ci == NONE || smap_put(&d->ext_by_pod, pk, (size_t)pn, ci) < 0)
        return NONE;
    if (gs__dra_flatten(d, &d->claims.v[ci]) < 0)
        return NONE;
    return ci;
}

void gs_dra_pod_with(const gs_dra_pod *base, uint32_t claim, const gs_dra *d, gs_dra_pod *out)
{
    *out = *base;
    if (claim == NONE || out->n >= GS_DRA_POD_CLAIMS_MAX)
        return;
    out->claim[out->n] = claim;
    out->podclaim[out->n] = GS_DRA_EXTENDED;
    out->n++;
    if (!d->claims.v[claim].allocated)
        out->nalloc++;
}
