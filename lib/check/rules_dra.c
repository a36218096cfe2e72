/*
 * rules_dra.c - Dynamic Resource Allocation (GS027-GS032; k8s-semantics 10, docs/dra.md
 * "check"), judged on DeviceClasses, ResourceClaims, ResourceClaimTemplates and on the
 * pods and workload templates that use claims.
 *
 *   GS027 dra-device-class-unknown   a request (exactly, or any firstAvailable
 *                                    alternative) names a DeviceClass the input lacks;
 *                                    only when the input is a cluster dump: it has a
 *                                    DeviceClass or a ResourceSlice (ck_ctx.dra_cluster)
 *   GS028 dra-claim-unknown          a pod claim names a ResourceClaim or a
 *                                    ResourceClaimTemplate the input lacks (same condition)
 *   GS029 dra-selector-unsatisfiable no device of the input's ResourceSlices satisfies the
 *                                    class's selectors and the request's together (or one
 *                                    of them fails at run time on a device, which fails the
 *                                    scheduling attempt); a DeviceClass that matches no
 *                                    device is an information (NVIDIA's chart installs
 *                                    mig.nvidia.com where no MIG device exists)
 *   GS030 dra-selector-invalid       a selector that does not compile (gs_cel_compile): at
 *                                    the expression's position, with the CEL column
 *   GS031 gpu-device-plugin-and-dra  a container asks a GPU resource of the device plugin
 *                                    (gs_gpu_is_device_resource) and the pod has a GPU claim
 *                                    (gs_dra_pod_gpu_requests): two sets of GPUs
 *   GS032 dra-request-exceeds-node   an ExactCount request for more devices than the node
 *                                    with the most matching devices has
 *
 * How selectors are evaluated: every device of every ResourceSlice becomes one
 * gs_cel_device (driver from its slice, attributes and capacities as read) once; a
 * request's devices are those for which every selector of its class, then every selector
 * of the request, evaluate to true — upstream's order, so a runtime error (a missing
 * attribute without has()) is reported where kube-scheduler would meet it. A device's
 * node is its slice's nodeName (or its own, per-device node selection); devices of
 * allNodes or node-selector slices count on every node. Claims already allocated hold
 * their devices and are not judged by GS027, GS029 and GS032. Constraints
 * (matchAttribute) are not applied: the counts are upper bounds, so the findings never
 * fire on a request that could be met.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/check_int.h"
#include "gpusched/cel.h"

#define MEMO_MAX 4096              /* distinct requests whose verdicts are kept */

/* ---------------------------------------------------------------- state */
typedef struct class_info {
    gs_cel_program **progs;    /* one per selector; NULL where it did not compile */
    uint32_t nprogs;
    bool bad;                  /* a selector did not compile: nothing is evaluated */
    bool evaluated;
    uint32_t matched;          /* devices its selectors match (when evaluated) */
    bool runtime_error;
} class_info;

/* What evaluating one request (or alternative) against the devices gave. */
typedef struct verdict {
    bool evaluated;            /* the class is known, everything compiled, slices exist */
    uint32_t matched;
    uint32_t most_on_node;     /* matches on the node with the most (+ shared devices) */
    bool error;                /* a selector failed at run time */
    char err_msg[GS_ERR_MSG_MAX];
    const char *err_device, *err_slice;
    int32_t bad_sel;           /* request selector that alone (with the class) matches none; -1 */
} verdict;

typedef struct dra_ck {
    ck_ctx *c;
    gs_cel_device *devs;
    const gs_resource_slice **dev_slice;
    const gs_dra_device **dev;
    int32_t *dev_node;         /* interned node name, -1: every node (allNodes, selector) */
    uint32_t ndevs;
    uint32_t nnode_names;
    uint32_t *per_node;        /* scratch: matches per node name */
    class_info *classes;       /* parallel to snap->device_classes */
    gs_intern memo_keys;       /* "class\x1fselector\x1f..." -> index into memo */
    GS_VEC(struct verdict) memo;
    gs_strbuf key;
} dra_ck;


static int build_devices(dra_ck *d)
{
    const gs_snapshot *s = d->c->snap;
    size_t n = 0;
    for (size_t i = 0; i < s->resource_slices.n; i++)
        n += s->resource_slices.v[i].ndevices;
    if (!n)
        return 0;
    d->devs = calloc(n, sizeof *d->devs);
    d->dev_slice = calloc(n, sizeof *d->dev_slice);
    d->dev = calloc(n, sizeof *d->dev);
    d->dev_node = calloc(n, sizeof *d->dev_node);
    d->per_node = calloc(n, sizeof *d->per_node); /* at most one node name per device */
    if (!d->devs || !d->dev_slice || !d->dev || !d->dev_node || !d->per_node)
        return -1;
    gs_intern names;
    gs_intern_init(&names);
    int rc = 0;
    for (size_t i = 0; i < s->resource_slices.n && rc == 0; i++) {
        const gs_resource_slice *sl = &s->resource_slices.v[i];
        for (uint32_t k = 0; k < sl->ndevices; k++) {
            const gs_dra_device *dv = &sl->devices[k];
            uint32_t j = d->ndevs++;
            d->devs[j] = (gs_cel_device){sl->driver, dv->attrs, dv->nattrs, dv->caps, dv->ncaps, dv->allow_multiple};
            d->dev_slice[j] = sl;
            d->dev[j] = dv;
            const char *node = sl->per_device_node_selection ? dv->node_name : sl->node_name;
            d->dev_node[j] = -1;
            if (node && node[0]) {
                int32_t id = gs_intern_id(&names, node, strlen(node));
                if (id < 0) {
                    rc = -1;
                    break;
                }
                d->dev_node[j] = id;
            }
        }
    }
    d->nnode_names = (uint32_t)names.n;
    gs_intern_free(&names);
    return rc;
}

/* Evaluate the class's selectors, then the request's, on device j (upstream's order). */
static int matches(const dra_ck *d, const class_info *ci, gs_cel_program *const *req, uint32_t nreq, uint32_t j,
                   bool *ok, gs_error *e)
{
    *ok = true;
    for (uint32_t k = 0; k < ci->nprogs && *ok; k++)
        if (gs_cel_select(ci->progs[k], &d->devs[j], ok, e) != 0)
            return -1;
    for (uint32_t k = 0; k < nreq && *ok; k++)
        if (gs_cel_select(req[k], &d->devs[j], ok, e) != 0)
            return -1;
    return 0;
}

/* Count the devices that class ci (and the request's programs) select. */
static void evaluate(dra_ck *d, const class_info *ci, gs_cel_program *const *req, uint32_t nreq, verdict *v)
{
    v->evaluated = true;
    if (d->nnode_names)
        memset(d->per_node, 0, d->nnode_names * sizeof *d->per_node);
    uint32_t shared = 0;
    for (uint32_t j = 0; j < d->ndevs; j++) {
        bool ok;
        gs_error e;
        gs_error_clear(&e);
        if (matches(d, ci, req, nreq, j, &ok, &e) != 0) {
            if (e.code == GS_ERR_NOMEM) {
                d->c->failed = true;
                return;
            }
            if (!v->error) {
                v->error = true;
                snprintf(v->err_msg, sizeof v->err_msg, "%s", e.msg);
                v->err_device = d->dev[j]->name;
                v->err_slice = d->dev_slice[j]->meta.name;
            }
            continue;
        }
        if (!ok)
            continue;
        v->matched++;
        if (d->dev_node[j] < 0)
            shared++;
        else
            d->per_node[d->dev_node[j]]++;
    }
    uint32_t most = 0;
    for (uint32_t k = 0; k < d->nnode_names; k++)
        if (d->per_node[k] > most)
            most = d->per_node[k];
    v->most_on_node = most + shared;
}

/* Compile selectors[0..n) into progs (NULL entries where they fail, each reported as GS030
 * on object obj). Returns the number that failed. */
static uint32_t compile_all(dra_ck *d, uint32_t obj, const char *field, const gs_dra_selector *sels, uint32_t n,
                            gs_cel_program **progs, const char *kind_text)
{
    ck_ctx *c = d->c;
    uint32_t bad = 0;
    for (uint32_t k = 0; k < n; k++) {
        progs[k] = NULL;
        gs_error e;
        gs_error_clear(&e);
        const char *x = sels[k].cel ? sels[k].cel : "";
        if (gs_cel_compile(x, strlen(x), &progs[k], &e) == 0)
            continue;
        progs[k] = NULL;
        bad++;
        if (e.code == GS_ERR_NOMEM) {
            c->failed = true;
            continue;
        }
        ck_checked(c, obj, CK_DRA_SELECTOR_INVALID);
        bool unsupported = e.code == GS_ERR_INVALID && !strncmp(e.msg, "unsupported", 11);
        if (unsupported)
            ck_report_src(c, CK_DRA_SELECTOR_INVALID, obj, sels[k].src, GS_SEV_WARNING,
                          "%s.selectors[%u].cel.expression: %s (line %d, column %d of the expression): outside the "
                          "CEL subset gpusched evaluates (docs/cel.md), so the rules that evaluate selectors skip "
                          "this %s; the API server may accept it",
                          field, k, e.msg, e.line ? e.line : 1, e.col ? e.col : 1, kind_text);
        else
            ck_report_src(c, CK_DRA_SELECTOR_INVALID, obj, sels[k].src, GS_SEV_ERROR,
                          "%s.selectors[%u].cel.expression: Invalid value: compilation failed: %s (line %d, column "
                          "%d of the expression); the API server rejects the %s; fix the expression",
                          field, k, e.msg, e.line ? e.line : 1, e.col ? e.col : 1, kind_text);
    }
    return bad;
}

static void free_progs(gs_cel_program **progs, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++)
        gs_cel_free(progs[k]);
}

/* ---------------------------------------------------------------- DeviceClasses */
static void check_classes(dra_ck *d)
{
    ck_ctx *c = d->c;
    const gs_snapshot *s = c->snap;
    for (size_t i = 0; i < s->device_classes.n && !c->failed; i++) {
        const gs_device_class *dc = &s->device_classes.v[i];
        class_info *ci = &d->classes[i];
        uint32_t obj = ck_add_object(c, "DeviceClass", "", dc->meta.name, dc->meta.src, &dc->meta.annotations, NULL);
        if (obj == UINT32_MAX)
            return;
        ck_checked(c, obj, CK_DRA_SELECTOR_INVALID);
        ci->progs = calloc(dc->nselectors + 1, sizeof *ci->progs);
        ci->nprogs = dc->nselectors;
        if (!ci->progs) {
            c->failed = true;
            return;
        }
        ci->bad = compile_all(d, obj, "spec", dc->selectors, dc->nselectors, ci->progs, "DeviceClass") > 0;
        if (ci->bad || !d->ndevs)
            continue;
        ck_checked(c, obj, CK_DRA_SELECTOR_UNSATISFIABLE);
        verdict v;
        memset(&v, 0, sizeof v);
        evaluate(d, ci, NULL, 0, &v);
        ci->evaluated = true;
        ci->matched = v.matched;
        ci->runtime_error = v.error;
        if (v.error)
            ck_report(c, CK_DRA_SELECTOR_UNSATISFIABLE, obj,
                      "its selectors fail on device %s of ResourceSlice %s: %s; kube-scheduler fails the "
                      "scheduling attempt of every pod whose claim uses this class when it meets that device; "
                      "guard the attribute with has() or test device.driver first",
                      v.err_device, v.err_slice, v.err_msg);
        else if (!v.matched)
            ck_report_at_most(c, CK_DRA_SELECTOR_UNSATISFIABLE, obj, GS_SEV_INFO,
                              "its selectors match none of the %u devices the ResourceSlices of the input publish: "
                              "claims of this class stay pending until such a device appears",
                              d->ndevs);
    }
}

/* ---------------------------------------------------------------- claims and templates */
static const char *class_names(const ck_ctx *c, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    const gs_snapshot *s = c->snap;
    size_t n = s->device_classes.n;
    for (size_t i = 0; i < n && i < 4 && o < cap; i++) {
        int w = snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", s->device_classes.v[i].meta.name);
        if (w < 0)
            break;
        o += (size_t)w;
    }
    if (n > 4 && o < cap)
        snprintf(buf + o, cap - o, " and %zu more", n - 4);
    return buf;
}

/* One exact request or alternative: GS030 (its selectors), GS027, then evaluate. */
static void judge_exact(dra_ck *d, uint32_t obj, const gs_resource_claim *rc, const char *field, const char *reqname,
                        const gs_dra_exact *e, verdict *v)
{
    ck_ctx *c = d->c;
    memset(v, 0, sizeof *v);
    v->bad_sel = -1;
    gs_cel_program *stack[8];
    gs_cel_program **progs = e->nselectors <= 8 ? stack : calloc(e->nselectors, sizeof *progs);
    if (!progs) {
        c->failed = true;
        return;
    }
    uint32_t bad = compile_all(d, obj, field, e->selectors, e->nselectors, progs, rc->is_template ? "ResourceClaimTemplate" : "ResourceClaim");
    if (rc->allocated)
        goto out;
    const gs_device_class *dc = c->dra ? gs_dra_index_class(c->dra, e->class_name) : NULL;
    if (!dc) {
        if (c->dra_cluster) {
            char names[300];
            ck_report(c, CK_DRA_CLASS_UNKNOWN, obj,
                      "request %s (%s) names DeviceClass \"%s\", which is not in the input: kube-scheduler keeps "
                      "every pod that uses this claim pending (request %s: device class %s does not exist); name "
                      "one of the DeviceClasses of the input (%s) or create it",
                      reqname, field, e->class_name, reqname, e->class_name, class_names(c, names, sizeof names));
        }
        goto out;
    }
    const class_info *ci = &d->classes[dc - c->snap->device_classes.v];
    if (bad || ci->bad || !d->ndevs)
        goto out;
    /* requests alike (claims made from one template, the same selector in many
     * templates) are evaluated once: verdicts by class and selector texts */
    gs_strbuf_reset(&d->key);
    gs_strbuf_puts(&d->key, e->class_name);
    for (uint32_t k = 0; k < e->nselectors; k++) {
        gs_strbuf_putc(&d->key, '\x1f');
        gs_strbuf_puts(&d->key, e->selectors[k].cel);
    }
    if (d->key.oom) {
        c->failed = true;
        goto out;
    }
    int32_t id = gs_intern_find(&d->memo_keys, gs_strbuf_cstr(&d->key), d->key.len);
    if (id >= 0) {
        *v = d->memo.v[id];
        goto out;
    }
    evaluate(d, ci, progs, e->nselectors, v);
    if (!v->error && !v->matched && ci->matched && e->nselectors > 1) {
        /* which selector is at fault: the first that alone (with the class) matches none */
        for (uint32_t k = 0; k < e->nselectors && v->bad_sel < 0; k++) {
            verdict one;
            memset(&one, 0, sizeof one);
            evaluate(d, ci, &progs[k], 1, &one);
            if (!one.error && !one.matched)
                v->bad_sel = (int32_t)k;
        }
    } else if (e->nselectors == 1) {
        v->bad_sel = 0;
    }
    if (d->memo.n < MEMO_MAX && !c->failed) {
        id = gs_intern_id(&d->memo_keys, gs_strbuf_cstr(&d->key), d->key.len);
        if (id < 0 || gs_vec_push(d->memo, *v) < 0)
            c->failed = true;
    }
out:
    free_progs(progs, e->nselectors);
    if (progs != stack)
        free(progs);
}

static void report_verdict(dra_ck *d, uint32_t obj, const char *field, const char *reqname, const gs_dra_exact *e,
                           const verdict *v, bool alternative_left)
{
    ck_ctx *c = d->c;
    if (!v->evaluated)
        return;
    ck_checked(c, obj, CK_DRA_SELECTOR_UNSATISFIABLE);
    const gs_device_class *dc = gs_dra_index_class(c->dra, e->class_name);
    const class_info *ci = &d->classes[dc - c->snap->device_classes.v];
    gs_severity most = alternative_left ? GS_SEV_INFO : GS_SEV_ERROR;
    const char *tail = alternative_left ? "; another alternative of the request can be met, so this one is never chosen"
                                        : "; every pod that uses this claim stays pending";
    gs_src at = {NULL, 0, 0};
    if (v->bad_sel >= 0 && !v->error && ci->matched)
        at = e->selectors[v->bad_sel].src;
    else if (v->error && !ci->runtime_error && e->nselectors == 1)
        at = e->selectors[0].src; /* the class's selectors did not fail: the request's one did */
    if (v->error) {
        ck_report_src(c, CK_DRA_SELECTOR_UNSATISFIABLE, obj, at, most,
                      "request %s (%s): its selectors fail on device %s of ResourceSlice %s: %s; kube-scheduler "
                      "fails the scheduling attempt of every pod using this claim when it meets that device; guard "
                      "the attribute with has()",
                      reqname, field, v->err_device, v->err_slice, v->err_msg);
        return;
    }
    if (!v->matched) {
        if (!ci->matched)
            ck_report_src(c, CK_DRA_SELECTOR_UNSATISFIABLE, obj, at, most,
                          "request %s (%s): DeviceClass %s matches none of the %u devices the ResourceSlices of the "
                          "input publish%s; name a class whose devices exist",
                          reqname, field, e->class_name, d->ndevs, tail);
        else if (v->bad_sel >= 0)
            ck_report_src(c, CK_DRA_SELECTOR_UNSATISFIABLE, obj, at, most,
                          "request %s (%s): selectors[%d] matches none of the %u devices of DeviceClass %s that the "
                          "ResourceSlices of the input publish%s; correct the expression (attribute names and "
                          "values as the driver publishes them)",
                          reqname, field, v->bad_sel, ci->matched, e->class_name, tail);
        else
            ck_report_src(c, CK_DRA_SELECTOR_UNSATISFIABLE, obj, at, most,
                          "request %s (%s): no device satisfies its selectors together (of the %u devices of "
                          "DeviceClass %s that the ResourceSlices of the input publish)%s; relax a selector",
                          reqname, field, ci->matched, e->class_name, tail);
        return;
    }
    if (e->all)
        return;
    ck_checked(c, obj, CK_DRA_REQUEST_EXCEEDS_NODE);
    if (e->count > (int64_t)v->most_on_node)
        ck_report_at_most(c, CK_DRA_REQUEST_EXCEEDS_NODE, obj, most,
                          "request %s (%s) asks for %lld devices of DeviceClass %s, but the node with the most "
                          "matching devices has %u (%u on all nodes of the input)%s; ask for at most %u per claim, "
                          "or split the work over several pods",
                          reqname, field, (long long)e->count, e->class_name, v->most_on_node, v->matched,
                          alternative_left ? "; another alternative of the request can be met, so this one is "
                                             "never chosen"
                                           : "; every pod that uses this claim stays pending",
                          v->most_on_node);
}

static bool verdict_fails(const verdict *v, const gs_dra_exact *e)
{
    return v->evaluated && (v->error || !v->matched || (!e->all && e->count > (int64_t)v->most_on_node));
}

static void check_claim(dra_ck *d, const gs_resource_claim *rc)
{
    ck_ctx *c = d->c;
    const char *kind = rc->is_template ? "ResourceClaimTemplate" : "ResourceClaim";
    uint32_t obj = ck_add_object(c, kind, rc->meta.namespace_, rc->meta.name, rc->meta.src, &rc->meta.annotations,
                                 NULL);
    if (obj == UINT32_MAX)
        return;
    ck_checked(c, obj, CK_DRA_SELECTOR_INVALID);
    if (!rc->allocated && c->dra_cluster)
        ck_checked(c, obj, CK_DRA_CLASS_UNKNOWN);
    const char *base = rc->is_template ? "spec.spec.devices.requests" : "spec.devices.requests";
    for (uint32_t r = 0; r < rc->spec.nrequests && !c->failed; r++) {
        const gs_dra_request *rq = &rc->spec.requests[r];
        char field[160];
        if (rq->has_exactly) {
            verdict v;
            snprintf(field, sizeof field, "%s[%u].exactly", base, r);
            judge_exact(d, obj, rc, field, rq->name, &rq->exactly, &v);
            report_verdict(d, obj, field, rq->name, &rq->exactly, &v, false);
            continue;
        }
        uint32_t n = rq->nfirst_available;
        verdict *vs = calloc(n ? n : 1, sizeof *vs);
        if (!vs) {
            c->failed = true;
            return;
        }
        bool any_ok = false;
        for (uint32_t a = 0; a < n; a++) {
            snprintf(field, sizeof field, "%s[%u].firstAvailable[%u]", base, r, a);
            judge_exact(d, obj, rc, field, rq->name, &rq->first_available[a], &vs[a]);
            any_ok |= vs[a].evaluated && !verdict_fails(&vs[a], &rq->first_available[a]);
        }
        for (uint32_t a = 0; a < n; a++) {
            char name[160];
            snprintf(field, sizeof field, "%s[%u].firstAvailable[%u]", base, r, a);
            snprintf(name, sizeof name, "%s/%s", rq->name, rq->first_available[a].name);
            report_verdict(d, obj, field, name, &rq->first_available[a], &vs[a], any_ok);
        }
        free(vs);
    }
}

/* ---------------------------------------------------------------- pods */
static const char *claims_path(const ck_ctx *c, const ck_subject *s)
{
    const char *kind = c->objects.v[s->obj].kind;
    if (!strcmp(kind, "Pod"))
        return "spec.resourceClaims";
    if (!strcmp(kind, "CronJob"))
        return "spec.jobTemplate.spec.template.spec.resourceClaims";
    return "spec.template.spec.resourceClaims";
}

static void check_pod_claims(ck_ctx *c, const ck_subject *s)
{
    const gs_pod *p = s->pod;
    if (!s->dra_unknown || !c->dra_cluster || p->node_name[0])
        return;
    for (uint32_t i = 0; i < p->nclaims; i++) {
        const gs_pod_claim *pc = &p->claims[i];
        bool needed = pc->claim_name[0] || (pc->template_name[0] && pc->status_claim);
        if (!needed || (c->dra && gs_dra_pod_claim_spec(c->dra, p, i)))
            continue;
        if (pc->claim_name[0])
            ck_report(c, CK_DRA_CLAIM_UNKNOWN, s->obj,
                      "%s[%u] (%s) names ResourceClaim %s/%s, which is not in the input: kube-scheduler keeps "
                      "%s pending (resourceclaim.resource.k8s.io \"%s\" not found); create the claim, or use a "
                      "resourceClaimTemplateName",
                      claims_path(c, s), i, pc->name, p->meta.namespace_, pc->claim_name,
                      p->workload || strcmp(c->objects.v[s->obj].kind, "Pod") ? "every pod it creates" : "the pod",
                      pc->claim_name);
        else
            ck_report(c, CK_DRA_CLAIM_UNKNOWN, s->obj,
                      "%s[%u] (%s) names ResourceClaimTemplate %s/%s, which is not in the input: the "
                      "resourceclaim controller cannot make the claim and %s stays pending; create the template "
                      "in namespace %s",
                      claims_path(c, s), i, pc->name, p->meta.namespace_, pc->template_name,
                      p->workload || strcmp(c->objects.v[s->obj].kind, "Pod") ? "every pod it creates" : "the pod",
                      p->meta.namespace_);
    }
}

/* The first container (or init container) asking a GPU resource of the device plugin. */
static const gs_container *plugin_gpu(const gs_pod *p, const char **res)
{
    for (uint32_t pass = 0; pass < 2; pass++) {
        const gs_container *cs = pass ? p->init_containers : p->containers;
        uint32_t n = pass ? p->ninit : p->ncontainers;
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t k = 0; k < cs[i].limits.n + cs[i].requests.n; k++) {
                const gs_res *r = k < cs[i].limits.n ? &cs[i].limits.items[k]
                                                     : &cs[i].requests.items[k - cs[i].limits.n];
                if (r->q.nanos > 0 && gs_resource_is_extended(r->name) && gs_gpu_is_device_resource(r->name)) {
                    *res = r->name;
                    return &cs[i];
                }
            }
    }
    return NULL;
}

static void check_twice(ck_ctx *c, const ck_subject *s)
{
    if (!s->dra_gpu)
        return;
    ck_checked(c, s->obj, CK_GPU_DEVICE_PLUGIN_AND_DRA);
    const char *res = NULL;
    const gs_container *ct = plugin_gpu(s->pod, &res);
    if (!ct)
        return;
    ck_report(c, CK_GPU_DEVICE_PLUGIN_AND_DRA, s->obj,
              "container \"%s\" asks for %s (the device plugin's GPUs) while the pod also claims GPUs through "
              "DRA (%u claim request%s of a GPU DeviceClass): kube-scheduler counts the two separately, and the "
              "node gives the pod two sets of GPUs, or the same GPU twice where the device plugin and the DRA "
              "driver manage the same devices; ask for GPUs one way: drop %s from the container's resources, or "
              "drop the claim",
              ct->name, res, s->dra_gpu, s->dra_gpu == 1 ? "" : "s", res);
}

/* ---------------------------------------------------------------- family */
void ck_rules_dra(ck_ctx *c)
{
    const gs_snapshot *s = c->snap;
    for (uint32_t i = 0; i < c->nsubjects && !c->failed; i++) {
        const ck_subject *sj = &c->subjects[i];
        if (sj->pod->nclaims && c->dra_cluster)
            ck_checked(c, sj->obj, CK_DRA_CLAIM_UNKNOWN);
        check_pod_claims(c, sj);
        check_twice(c, sj);
    }
    if (!s->device_classes.n && !s->claims.n && !s->claim_templates.n)
        return;
    dra_ck d;
    memset(&d, 0, sizeof d);
    d.c = c;
    gs_intern_init(&d.memo_keys);
    d.classes = calloc(s->device_classes.n ? s->device_classes.n : 1, sizeof *d.classes);
    if (!d.classes || build_devices(&d) < 0) {
        c->failed = true;
        goto done;
    }
    check_classes(&d);
    for (size_t i = 0; i < s->claims.n && !c->failed; i++)
        check_claim(&d, &s->claims.v[i]);
    for (size_t i = 0; i < s->claim_templates.n && !c->failed; i++)
        check_claim(&d, &s->claim_templates.v[i]);
done:
    if (d.classes)
        for (size_t i = 0; i < s->device_classes.n; i++) {
            class_info *ci = &d.classes[i];
            if (ci->progs) {
                free_progs(ci->progs, ci->nprogs);
                free(ci->progs);
            }
        }
    free(d.classes);
    gs_intern_free(&d.memo_keys);
    gs_vec_free(d.memo);
    gs_strbuf_free(&d.key);
    free(d.devs);
    free(d.dev_slice);
    free(d.dev);
    free(d.dev_node);
    free(d.per_node);
}
