/*
 * requests.c - effective pod requests (k8s-semantics 3.1).
 *
 * For one resource name:
 *   containers = sum of regular containers + sum of sidecars (restartable init containers)
 *   init       = max over init containers in order of: ordinary init -> its request plus the
 *                sidecars declared before it; sidecar -> running sidecar sum including itself
 *   request    = max(containers, init), then pod-level spec.resources replaces cpu/memory/
 *                hugepages when set, then spec.overhead is added.
 * The same formula with limits gives effective limits (quota limits.* keys).
 */
#include <string.h>

#include "engine/engine_int.h"

static const gs_quantity *container_value(const gs_container *ct, const char *name, bool limits)
{
    return gs_reslist_get(limits ? &ct->limits : &ct->requests, name);
}

static gs_quantity qzero(void) { return gs_quantity_from_int(0, GS_QF_DECIMAL_SI); }

static gs_quantity qmax(gs_quantity a, gs_quantity b) { return gs_quantity_cmp(&a, &b) >= 0 ? a : b; }

gs_quantity gs__pod_effective(const gs_pod *pod, const char *name, bool use_limits)
{
    gs_quantity sum = qzero();
    bool seen = false;
    for (uint32_t i = 0; i < pod->ncontainers; i++) {
        const gs_quantity *q = container_value(&pod->containers[i], name, use_limits);
        if (q) {
            sum = seen ? gs_quantity_add(sum, *q) : *q;
            seen = true;
        }
    }
    gs_quantity sidecars = qzero();
    gs_quantity init_max = qzero();
    for (uint32_t i = 0; i < pod->ninit; i++) {
        const gs_container *ct = &pod->init_containers[i];
        const gs_quantity *q = container_value(ct, name, use_limits);
        gs_quantity v = q ? *q : qzero();
        if (ct->sidecar) {
            sidecars = gs_quantity_add(sidecars, v);
            init_max = qmax(init_max, sidecars);
            if (q) {
                sum = seen ? gs_quantity_add(sum, v) : v;
                seen = true;
            }
        } else {
            init_max = qmax(init_max, gs_quantity_add(v, sidecars));
        }
    }
    gs_quantity r = qmax(sum, init_max);
    if (!use_limits) {
        bool podlevel = strcmp(name, "cpu") == 0 || strcmp(name, "memory") == 0 ||
                        strncmp(name, "hugepages-", 10) == 0;
        if (podlevel) {
            const gs_quantity *pl = gs_reslist_get(&pod->pod_requests, name);
            if (pl)
                r = *pl;
        }
    }
    const gs_quantity *ov = gs_reslist_get(&pod->overhead, name);
    if (ov)
        r = gs_quantity_add(r, *ov);
    return r;
}

/* Non-zero request of one container: its value, or the default when it has no entry. */
static int64_t nz_one(const gs_container *ct, const char *name, int64_t dflt, bool milli)
{
    const gs_quantity *q = gs_reslist_get(&ct->requests, name);
    if (!q)
        return dflt;
    return milli ? gs_quantity_milli(q) : gs_quantity_value(q);
}

static int64_t nz_aggregate(const gs_pod *pod, const char *name, int64_t dflt, bool milli)
{
    int64_t sum = 0;
    for (uint32_t i = 0; i < pod->ncontainers; i++)
        sum += nz_one(&pod->containers[i], name, dflt, milli);
    int64_t sidecars = 0, init_max = 0;
    for (uint32_t i = 0; i < pod->ninit; i++) {
        const gs_container *ct = &pod->init_containers[i];
        int64_t v = nz_one(ct, name, dflt, milli);
        if (ct->sidecar) {
            sidecars += v;
            sum += v;
            if (sidecars > init_max)
                init_max = sidecars;
        } else if (v + sidecars > init_max) {
            init_max = v + sidecars;
        }
    }
    int64_t r = sum > init_max ? sum : init_max;
    const gs_quantity *pl = gs_reslist_get(&pod->pod_requests, name);
    if (pl)
        r = milli ? gs_quantity_milli(pl) : gs_quantity_value(pl);
    const gs_quantity *ov = gs_reslist_get(&pod->overhead, name);
    if (ov)
        r += milli ? gs_quantity_milli(ov) : gs_quantity_value(ov);
    return r;
}

void gs__pod_nonzero(const gs_pod *pod, int64_t *cpu, int64_t *mem)
{
    *cpu = nz_aggregate(pod, "cpu", GS_NZ_CPU, true);
    *mem = nz_aggregate(pod, "memory", GS_NZ_MEM, false);
}

static void visit_list(const gs_reslist *l, gs_name_fn fn, void *ctx)
{
    for (uint32_t i = 0; i < l->n; i++)
        fn(l->items[i].name, ctx);
}

void gs__pod_resource_names(const gs_pod *pod, bool limits, gs_name_fn fn, void *ctx)
{
    for (uint32_t i = 0; i < pod->ncontainers; i++)
        visit_list(limits ? &pod->containers[i].limits : &pod->containers[i].requests, fn, ctx);
    for (uint32_t i = 0; i < pod->ninit; i++)
        visit_list(limits ? &pod->init_containers[i].limits : &pod->init_containers[i].requests,
                   fn, ctx);
    if (!limits)
        visit_list(&pod->pod_requests, fn, ctx);
    visit_list(&pod->overhead, fn, ctx);
}
