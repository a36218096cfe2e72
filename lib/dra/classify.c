/*
 * classify.c - which DRA requests are GPUs, and look-ups of DRA objects by name
 * (include/gpusched/dra.h "GPU claims").
 */
#include <string.h>

#include "gpusched/dra.h"
#include "gpusched/gpu.h"
#include "dra/dra_int.h"

/* GPU DRA drivers (and NVIDIA's MIG class name) */
static const char *const gpu_drivers[] = {"gpu.nvidia.com", "mig.nvidia.com", "gpu.amd.com", "gpu.intel.com"};

static bool names_gpu_driver(const char *s)
{
    for (size_t i = 0; i < sizeof gpu_drivers / sizeof *gpu_drivers; i++)
        if (strstr(s, gpu_drivers[i]))
            return true;
    return false;
}

bool gs_dra_class_is_gpu(const gs_device_class *c)
{
    if (!c)
        return false;
    if (names_gpu_driver(c->meta.name))
        return true;
    for (uint32_t i = 0; i < c->nselectors; i++)
        if (names_gpu_driver(c->selectors[i].cel))
            return true;
    return c->extended_resource_name && *c->extended_resource_name &&
           gs_gpu_is_device_resource(c->extended_resource_name);
}

struct gs_dra_index {
    const gs_snapshot *s;
    smap classes, claims, templates;
};

gs_dra_index *gs_dra_index_new(const gs_snapshot *s)
{
    gs_dra_index *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->s = s;
    smap_init(&x->classes);
    smap_init(&x->claims);
    smap_init(&x->templates);
    char kb[600];
    for (size_t i = 0; i < s->device_classes.n; i++) {
        const char *n = s->device_classes.v[i].meta.name;
        if (smap_get(&x->classes, n, strlen(n)) == NONE && smap_put(&x->classes, n, strlen(n), (uint32_t)i) < 0)
            goto oom;
    }
    for (size_t i = 0; i < s->claims.n; i++) {
        size_t kn = key3(kb, sizeof kb, s->claims.v[i].meta.namespace_, s->claims.v[i].meta.name, NULL);
        if (smap_get(&x->claims, kb, kn) == NONE && smap_put(&x->claims, kb, kn, (uint32_t)i) < 0)
            goto oom;
    }
    for (size_t i = 0; i < s->claim_templates.n; i++) {
        size_t kn = key3(kb, sizeof kb, s->claim_templates.v[i].meta.namespace_, s->claim_templates.v[i].meta.name, NULL);
        if (smap_get(&x->templates, kb, kn) == NONE && smap_put(&x->templates, kb, kn, (uint32_t)i) < 0)
            goto oom;
    }
    return x;
oom:
    gs_dra_index_free(x);
    return NULL;
}

void gs_dra_index_free(gs_dra_index *x)
{
    if (!x)
        return;
    smap_free(&x->classes);
    smap_free(&x->claims);
    smap_free(&x->templates);
    free(x);
}

const gs_device_class *gs_dra_index_class(const gs_dra_index *x, const char *name)
{
    uint32_t i = smap_get(&x->classes, name, strlen(name));
    return i == NONE ? NULL : &x->s->device_classes.v[i];
}

const gs_resource_claim *gs_dra_index_claim(const gs_dra_index *x, const char *ns, const char *name)
{
    char kb[600];
    size_t kn = key3(kb, sizeof kb, ns, name, NULL);
    uint32_t i = smap_get(&x->claims, kb, kn);
    return i == NONE ? NULL : &x->s->claims.v[i];
}

const gs_resource_claim *gs_dra_index_template(const gs_dra_index *x, const char *ns, const char *name)
{
    char kb[600];
    size_t kn = key3(kb, sizeof kb, ns, name, NULL);
    uint32_t i = smap_get(&x->templates, kb, kn);
    return i == NONE ? NULL : &x->s->claim_templates.v[i];
}

const gs_resource_claim *gs_dra_pod_claim_spec(const gs_dra_index *x, const gs_pod *p, uint32_t i)
{
    if (i >= p->nclaims)
        return NULL;
    const gs_pod_claim *pc = &p->claims[i];
    const char *ns = p->meta.namespace_;
    if (*pc->claim_name)
        return gs_dra_index_claim(x, ns, pc->claim_name);
    if (!*pc->template_name || !pc->status_claim)
        return NULL;
    if (*pc->status_claim) {
        const gs_resource_claim *c = gs_dra_index_claim(x, ns, pc->status_claim);
        if (c)
            return c;
    }
    return gs_dra_index_template(x, ns, pc->template_name);
}

static bool exact_is_gpu(const gs_dra_index *x, const gs_dra_exact *e)
{
    if (gs_dra_class_is_gpu(gs_dra_index_class(x, e->class_name)))
        return true;
    if (names_gpu_driver(e->class_name))
        return true;
    for (uint32_t i = 0; i < e->nselectors; i++)
        if (names_gpu_driver(e->selectors[i].cel))
            return true;
    return false;
}

uint32_t gs_dra_pod_gpu_requests(const gs_dra_index *x, const gs_pod *p)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->nclaims; i++) {
        const gs_resource_claim *c = gs_dra_pod_claim_spec(x, p, i);
        if (!c)
            continue;
        for (uint32_t r = 0; r < c->spec.nrequests; r++) {
            const gs_dra_request *rq = &c->spec.requests[r];
            bool gpu = rq->has_exactly && exact_is_gpu(x, &rq->exactly);
            for (uint32_t a = 0; !gpu && a < rq->nfirst_available; a++)
                gpu = exact_is_gpu(x, &rq->first_available[a]);
            n += gpu;
        }
    }
    return n;
}
