/*
 * rules_request.c - rules on what pods ask for (GS007-GS015), judged on pods and
 * workload templates.
 *
 *   GS007 gpu-request-without-limit  an extended resource in requests but not in limits
 *   GS008 gpu-request-limit-mismatch request != limit for an extended resource
 *   GS009 gpu-request-not-integer    fractional or negative extended resource quantity
 *   GS010 mig-resource-unknown       nvidia.com/mig-<profile> that no catalog model offers
 *   GS011 mig-strategy-mismatch      MIG resource names under the single/none strategy, or a
 *                                    single-strategy product selector under mixed
 *   GS012 gpu-scheduler-mismatch     HAMi/KAI convention with another schedulerName; a
 *                                    warning for HAMi pods with default-scheduler, which
 *                                    HAMi's webhook rewrites (config hami.
 *                                    forceOverwriteDefaultScheduler, default true)
 *   GS013 gpu-request-invalid        gs_gpu_request_from_pod refused the request; pod-level
 *                                    spec.resources with extended resources
 *   GS014 gpu-request-unplaceable    no GPU node of the input can hold it even when empty
 *   GS015 gpu-share-memory-unenforced  a share whose memory nothing limits
 *
 * The API server's rules (k8s-semantics 2.4) apply to every extended resource, so GS007-
 * GS009 do too; GS010-GS015 use the GPU layer's translation (gs_gpu_request_from_pod,
 * gs_gpu_fit_node), the same code the engine schedules with.
 *
 * GS014 asks gs_gpu_fit_node on each GPU node's inventory with nothing bound: OK or
 * INSUFFICIENT means the request fits that node some day; then the pod's nodeSelector
 * and required node affinity must also select the node. Verdicts depend only on the
 * request, so they are computed once per distinct request (a workload's pods share one)
 * and kept for at most FIT_CACHE_MAX distinct requests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/check_int.h"

#define NANOS ((__int128)1000000000)
#define FIT_CACHE_MAX 256
#define FIT_NOT_GPU 0xff

static const char *reject_text(const ck_subject *s)
{
    return s->pod->workload ? "the API server rejects every pod it creates"
                            : "the API server rejects the pod";
}

static void qtext(const gs_quantity *q, char *buf, size_t cap)
{
    gs_quantity_format(q, buf, cap);
}

/* ---------------------------------------------------------------- GS007-GS009 */
static void check_quantity(ck_ctx *c, ck_subject *s, const char *cname, const char *list, const char *name,
                           const gs_quantity *q)
{
    char v[GS_QUANTITY_STR_MAX];
    if (q->nanos < 0) {
        qtext(q, v, sizeof v);
        ck_report(c, CK_GPU_REQUEST_NOT_INTEGER, s->obj,
                  "container \"%s\": %s[%s]: %s must be greater than or equal to 0; %s", cname, list, name,
                  v, reject_text(s));
        s->quantity_findings = true;
    } else if (q->nanos % NANOS) {
        qtext(q, v, sizeof v);
        ck_report(c, CK_GPU_REQUEST_NOT_INTEGER, s->obj,
                  "container \"%s\": %s[%s]: %s must be an integer (extended resources are whole units); "
                  "%s; for a fraction of a GPU use a MIG profile, time-slicing or a GPU-sharing scheduler",
                  cname, list, name, v, reject_text(s));
        s->quantity_findings = true;
    }
}

/* Limits first (what users write: requests default to them), then requests that are
 * missing from the limits or differ from them. */
static void check_container(ck_ctx *c, ck_subject *s, const gs_container *ct)
{
    const char *cname = ct->name && ct->name[0] ? ct->name : "(unnamed)";
    for (uint32_t k = 0; k < ct->limits.n; k++)
        if (gs_resource_is_extended(ct->limits.items[k].name))
            check_quantity(c, s, cname, "limits", ct->limits.items[k].name, &ct->limits.items[k].q);
    for (uint32_t k = 0; k < ct->requests.n; k++) {
        const gs_res *r = &ct->requests.items[k];
        if (!gs_resource_is_extended(r->name))
            continue;
        const gs_quantity *lim = gs_reslist_get(&ct->limits, r->name);
        char rv[GS_QUANTITY_STR_MAX], lv[GS_QUANTITY_STR_MAX];
        qtext(&r->q, rv, sizeof rv);
        if (!lim) {
            check_quantity(c, s, cname, "requests", r->name, &r->q);
            ck_report(c, CK_GPU_REQUEST_WITHOUT_LIMIT, s->obj,
                      "container \"%s\" requests %s: %s without a limit: %s (Limit must be set for non "
                      "overcommitable resources); set limits[%s]: %s (a limit alone is enough, the request "
                      "defaults to it)",
                      cname, r->name, rv, reject_text(s), r->name, rv);
        } else if (gs_quantity_cmp(&r->q, lim) != 0) {
            check_quantity(c, s, cname, "requests", r->name, &r->q);
            qtext(lim, lv, sizeof lv);
            ck_report(c, CK_GPU_REQUEST_LIMIT_MISMATCH, s->obj,
                      "container \"%s\": requests[%s]: %s must be equal to %s limit of %s (extended resources "
                      "cannot be overcommitted); %s",
                      cname, r->name, rv, r->name, lv, reject_text(s));
        }
    }
}

/* ---------------------------------------------------------------- GS010, GS011 */
static bool profile_offered(const char *profile)
{
    uint32_t nm;
    const gs_mig_model *models = gs_mig_models(&nm);
    for (uint32_t i = 0; i < nm; i++)
        if (gs_mig_profile_find(&models[i], profile))
            return true;
    return false;
}

/* The first MIG resource a container of the pod asks for (positive amount), or NULL. */
static const char *mig_resource_of(const gs_pod *p)
{
    for (uint32_t pass = 0; pass < 2; pass++) {
        const gs_container *cs = pass ? p->init_containers : p->containers;
        uint32_t n = pass ? p->ninit : p->ncontainers;
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t k = 0; k < cs[i].requests.n; k++)
                if (!strncmp(cs[i].requests.items[k].name, "nvidia.com/mig-", 15) &&
                    cs[i].requests.items[k].q.nanos > 0)
                    return cs[i].requests.items[k].name;
    }
    return NULL;
}

static void check_mig_names(ck_ctx *c, ck_subject *s)
{
    const gs_pod *p = s->pod;
    const char *reported[8];
    uint32_t nrep = 0;
    for (uint32_t pass = 0; pass < 2; pass++) {
        const gs_container *cs = pass ? p->init_containers : p->containers;
        uint32_t n = pass ? p->ninit : p->ncontainers;
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t k = 0; k < cs[i].requests.n; k++) {
                const char *name = cs[i].requests.items[k].name;
                if (strncmp(name, "nvidia.com/mig-", 15) != 0)
                    continue;
                ck_checked(c, s->obj, CK_MIG_RESOURCE_UNKNOWN);
                bool seen = false;
                for (uint32_t r = 0; r < nrep && !seen; r++)
                    seen = !strcmp(reported[r], name);
                if (seen)
                    continue;
                char prof[32];
                if (!gs_mig_parse_resource(name, prof, sizeof prof))
                    ck_report(c, CK_MIG_RESOURCE_UNKNOWN, s->obj,
                              "%s is not a MIG resource name (nvidia.com/mig-<slices>g.<memory>gb, e.g. "
                              "nvidia.com/mig-1g.10gb): no node advertises it, the pod is never scheduled",
                              name);
                else if (!profile_offered(prof))
                    ck_report(c, CK_MIG_RESOURCE_UNKNOWN, s->obj,
                              "%s: no GPU model offers MIG profile %s (A100-40GB offers 1g.5gb ... 7g.40gb, "
                              "80 GB parts 1g.10gb ... 7g.80gb): no node advertises it, the pod is never "
                              "scheduled",
                              name, prof);
                else
                    continue;
                if (nrep < 8)
                    reported[nrep++] = name;
            }
    }
}

static bool icontains(const char *s, const char *needle)
{
    size_t n = strlen(needle);
    for (; *s; s++) {
        size_t k = 0;
        while (k < n && s[k] && (s[k] | 0x20) == (needle[k] | 0x20))
            k++;
        if (k == n)
            return true;
    }
    return false;
}

static void check_mig_strategy(ck_ctx *c, ck_subject *s)
{
    if (c->mig_strategy == GS_CHECK_MIG_INFER)
        return; /* neither configured nor visible in the input */
    const char *why = c->mig_strategy_inferred ? "from the GPU nodes of the input" : "configured migStrategy";
    const char *mig = mig_resource_of(s->pod);
    const char *product = gs_labels_get(&s->pod->node_selector, "nvidia.com/gpu.product");
    if (!mig && !(product && icontains(product, "-MIG-")))
        return;
    ck_checked(c, s->obj, CK_MIG_STRATEGY_MISMATCH);
    if (mig && c->mig_strategy == GS_CHECK_MIG_SINGLE) {
        char prof[32] = "";
        gs_mig_parse_resource(mig, prof, sizeof prof);
        ck_report(c, CK_MIG_STRATEGY_MISMATCH, s->obj,
                  "asks for %s, but the cluster's MIG strategy is single (%s): MIG devices are advertised "
                  "as nvidia.com/gpu, so no node offers %s; ask for nvidia.com/gpu and select the profile with "
                  "nodeSelector nvidia.com/gpu.product: <model>-MIG-%s",
                  mig, why, mig, prof);
    } else if (mig && c->mig_strategy == GS_CHECK_MIG_NONE) {
        ck_report(c, CK_MIG_STRATEGY_MISMATCH, s->obj,
                  "asks for %s, but the cluster's MIG strategy is none (%s): no node advertises MIG devices; "
                  "enable MIG with the mixed strategy, or ask for whole GPUs (nvidia.com/gpu)",
                  mig, why);
    } else if (!mig && c->mig_strategy == GS_CHECK_MIG_MIXED) {
        bool carried = false;
        for (uint32_t i = 0; i < c->nnodes && !carried; i++) {
            const char *v = gs_labels_get(&c->nodes[i].node->meta.labels, "nvidia.com/gpu.product");
            carried = v && !strcmp(v, product);
        }
        if (!carried)
            ck_report(c, CK_MIG_STRATEGY_MISMATCH, s->obj,
                      "selects nvidia.com/gpu.product=%s, a single-strategy label, but the cluster's MIG strategy "
                      "is mixed (%s), where no node carries it; ask for nvidia.com/mig-<profile> instead",
                      product, why);
    }
}

/* ---------------------------------------------------------------- GS012, GS013 */
#define HAMI_WEBHOOK_LABEL "hami.io/webhook"

/* Does HAMi's admission webhook skip this pod? Its chart selects pods and namespaces
 * without the label hami.io/webhook=ignore. */
static bool hami_webhook_ignores(const ck_ctx *c, const ck_subject *s)
{
    const char *v = gs_labels_get(&s->pod->meta.labels, HAMI_WEBHOOK_LABEL);
    if (v && !strcmp(v, "ignore"))
        return true;
    const gs_snapshot *snap = c->snap;
    for (size_t i = 0; i < snap->namespaces.n; i++) {
        const gs_namespace *ns = &snap->namespaces.v[i];
        if (strcmp(ns->meta.name, s->pod->meta.namespace_) != 0)
            continue;
        v = gs_labels_get(&ns->meta.labels, HAMI_WEBHOOK_LABEL);
        return v && !strcmp(v, "ignore");
    }
    return false;
}

static void check_scheduler(ck_ctx *c, ck_subject *s)
{
    if (s->req_error || !s->req.scheduler_expected)
        return;
    ck_checked(c, s->obj, CK_GPU_SCHEDULER_MISMATCH);
    const char *want = s->req.scheduler_expected, *have = s->pod->scheduler_name;
    if (!strcmp(want, have))
        return;
    /* HAMi's webhook (scheduler.forceOverwriteDefaultScheduler, on by default) rewrites
     * default-scheduler to hami-scheduler on every HAMi pod it sees */
    bool rewritten = s->req.conv == GS_CONV_HAMI && !strcmp(have, "default-scheduler");
    if (rewritten && c->cfg->hami_overwrites_default_scheduler && !hami_webhook_ignores(c, s))
        ck_report_at_most(c, CK_GPU_SCHEDULER_MISMATCH, s->obj, GS_SEV_WARNING,
                          "asks for a HAMi GPU share (nvidia.com/gpumem, gpumem-percentage or gpucores) with "
                          "schedulerName %s: it relies on HAMi's admission webhook, which sets schedulerName: %s "
                          "when HAMi is installed with scheduler.forceOverwriteDefaultScheduler (its default) and "
                          "the namespace is not labelled %s=ignore; without the webhook %s never places the pod; "
                          "set schedulerName: %s to not depend on it (config hami.forceOverwriteDefaultScheduler: "
                          "false makes this an error)",
                          have, want, HAMI_WEBHOOK_LABEL, have, want);
    else if (s->req.conv == GS_CONV_HAMI)
        ck_report(c, CK_GPU_SCHEDULER_MISMATCH, s->obj,
                  "asks for a HAMi GPU share (nvidia.com/gpumem, gpumem-percentage or gpucores) but its "
                  "schedulerName is %s: only %s places HAMi shares; %s sees nvidia.com/gpumem as an extended "
                  "resource no node advertises and never places the pod%s; set schedulerName: %s",
                  have, want, have,
                  !rewritten                             ? ""
                  : !c->cfg->hami_overwrites_default_scheduler ? " (HAMi's webhook is configured not to rewrite "
                                                               "default-scheduler: hami.forceOverwriteDefaultScheduler "
                                                               "false)"
                                                         : " (the label hami.io/webhook=ignore keeps HAMi's "
                                                           "webhook away from it)",
                  want);
    else if (s->req.conv == GS_CONV_KAI)
        ck_report(c, CK_GPU_SCHEDULER_MISMATCH, s->obj,
                  "asks for a KAI GPU fraction (gpu-fraction or gpu-memory annotation) but its schedulerName is "
                  "%s: only %s reads those annotations; %s ignores them and the pod runs without any GPU; set "
                  "schedulerName: %s",
                  have, want, have, want);
    else
        ck_report(c, CK_GPU_SCHEDULER_MISMATCH, s->obj,
                  "its GPU request convention is implemented by %s, but its schedulerName is %s; set "
                  "schedulerName: %s",
                  want, have, want);
}

static void check_invalid(ck_ctx *c, ck_subject *s)
{
    ck_checked(c, s->obj, CK_GPU_REQUEST_INVALID);
    if (s->req_error && !s->quantity_findings)
        ck_report(c, CK_GPU_REQUEST_INVALID, s->obj, "its GPU request cannot be satisfied as written: %s",
                  s->req_error);
    const gs_reslist *pr = &s->pod->pod_requests;
    for (uint32_t k = 0; k < pr->n; k++)
        if (gs_resource_is_extended(pr->items[k].name))
            ck_report(c, CK_GPU_REQUEST_INVALID, s->obj,
                      "spec.resources.requests[%s]: pod-level resources support only cpu, memory and hugepages; "
                      "%s; ask for it in a container's resources",
                      pr->items[k].name, reject_text(s));
}

/* ---------------------------------------------------------------- GS014 */
typedef struct fit_cache {
    gs_intern keys;
    uint8_t **verdicts; /* per key: one gs_gpu_fit per node, FIT_NOT_GPU for other nodes */
    uint32_t n;
    gs_strbuf sb;
} fit_cache;

static const uint8_t *fit_verdicts(ck_ctx *c, fit_cache *fc, const gs_gpu_request *r, uint8_t *scratch)
{
    gs_strbuf *sb = &fc->sb;
    gs_strbuf_reset(sb);
    /* every field gs_gpu_fit_node may read */
    gs_strbuf_printf(sb, "%d|%d|%u|%u|%u|%u|%s|%s", (int)r->kind, (int)r->conv, r->count, r->milli, r->mem_mib,
                     r->mem_pct, r->mig_profile, r->resource ? r->resource : "");
    for (uint8_t i = 0; i < r->nmodels; i++) {
        gs_strbuf_putc(sb, '|');
        gs_strbuf_puts(sb, r->models[i]);
    }
    int32_t id = -1;
    if (!sb->oom) {
        id = gs_intern_find(&fc->keys, gs_strbuf_cstr(sb), sb->len);
        if (id >= 0)
            return fc->verdicts[id];
    }
    uint8_t *v = scratch;
    if (!sb->oom && fc->n < FIT_CACHE_MAX) {
        uint8_t *owned = malloc(c->nnodes ? c->nnodes : 1);
        id = owned ? gs_intern_id(&fc->keys, gs_strbuf_cstr(sb), sb->len) : -1;
        if (id >= 0 && (uint32_t)id == fc->n) {
            fc->verdicts[fc->n++] = owned;
            v = owned;
        } else {
            free(owned);
        }
    }
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const ck_node *n = &c->nodes[i];
        v[i] = n->gpu && n->built ? (uint8_t)gs_gpu_fit_node(&n->gpus, r, NULL) : FIT_NOT_GPU;
    }
    return v;
}

static void check_unplaceable(ck_ctx *c, fit_cache *fc, ck_subject *s, uint8_t *scratch)
{
    if (s->req_error || s->req.kind == GS_GPU_NONE || !c->ngpu_nodes || s->pod->node_name[0])
        return;
    ck_checked(c, s->obj, CK_GPU_REQUEST_UNPLACEABLE);
    const uint8_t *v = fit_verdicts(c, fc, &s->req, scratch);
    uint32_t counts[GS_FIT_MIG_PROFILE + 1] = {0}, unselected = 0, gpu_nodes = 0;
    for (uint32_t i = 0; i < c->nnodes; i++) {
        if (v[i] == FIT_NOT_GPU)
            continue;
        gpu_nodes++;
        if (v[i] == GS_FIT_OK || v[i] == GS_FIT_INSUFFICIENT) {
            if (gs_pod_selects_node(s->pod, c->nodes[i].node))
                return;
            unselected++;
        } else if (v[i] <= GS_FIT_MIG_PROFILE) {
            counts[v[i]]++;
        }
    }
    if (!gpu_nodes)
        return; /* only GPU nodes whose inventory is broken (GS003) */
    char what[160], reasons[512];
    ck_describe_request(s, what, sizeof what);
    size_t o = 0;
    reasons[0] = '\0';
    static const struct {
        uint8_t fit;
        const char *one, *many;
    } texts[] = {
        {GS_FIT_NO_GPU, "offers no GPU of that kind", "offer no GPU of that kind"},
        {GS_FIT_MODEL, "has another GPU model", "have another GPU model"},
        {GS_FIT_MIG_PROFILE, "does not offer that MIG profile", "do not offer that MIG profile"},
        {GS_FIT_NEVER, "is too small even when empty", "are too small even when empty"},
    };
    for (size_t k = 0; k < sizeof texts / sizeof *texts; k++) {
        uint32_t n = counts[texts[k].fit];
        if (!n)
            continue;
        int w = snprintf(reasons + o, sizeof reasons - o, "%s%u %s", o ? ", " : "", n,
                         n == 1 ? texts[k].one : texts[k].many);
        if (w > 0)
            o = o + (size_t)w < sizeof reasons ? o + (size_t)w : sizeof reasons - 1;
    }
    if (unselected) {
        int w = snprintf(reasons + o, sizeof reasons - o, "%s%u could hold it but its nodeSelector/affinity "
                         "excludes %s", o ? ", " : "", unselected, unselected == 1 ? "it" : "them");
        if (w > 0)
            o = o + (size_t)w < sizeof reasons ? o + (size_t)w : sizeof reasons - 1;
    }
    ck_report(c, CK_GPU_REQUEST_UNPLACEABLE, s->obj,
              "no GPU node of the input can ever hold %s, even with nothing else running: of %u GPU node%s, %s",
              what, gpu_nodes, gpu_nodes == 1 ? "" : "s", reasons);
}

/* ---------------------------------------------------------------- GS015 */
static bool requests_any(const gs_pod *p, const char *a, const char *b)
{
    for (uint32_t pass = 0; pass < 2; pass++) {
        const gs_container *cs = pass ? p->init_containers : p->containers;
        uint32_t n = pass ? p->ninit : p->ncontainers;
        for (uint32_t i = 0; i < n; i++)
            if (gs_reslist_get(&cs[i].requests, a) || gs_reslist_get(&cs[i].requests, b))
                return true;
    }
    return false;
}

static void check_share_memory(ck_ctx *c, ck_subject *s)
{
    if (s->req_error || s->req.kind != GS_GPU_SHARE)
        return;
    ck_checked(c, s->obj, CK_GPU_SHARE_MEMORY_UNENFORCED);
    char what[160];
    ck_describe_request(s, what, sizeof what);
    switch (s->req.conv) {
    case GS_CONV_KAI:
        ck_report(c, CK_GPU_SHARE_MEMORY_UNENFORCED, s->obj,
                  "asks for a KAI GPU fraction (%s), but KAI does not enforce GPU memory: the pod can allocate "
                  "the whole GPU's memory and make the pods sharing it fail; isolate with MIG, or add an "
                  "enforcement layer (HAMi-core) and keep each share's memory explicit",
                  what);
        break;
    case GS_CONV_GPUSHARE:
        ck_report(c, CK_GPU_SHARE_MEMORY_UNENFORCED, s->obj,
                  "asks for aliyun.com/gpu-mem (%s), but open-source gpushare only schedules by memory and "
                  "does not limit it: the pod can take the whole GPU's memory and make the pods sharing it fail",
                  what);
        break;
    case GS_CONV_HAMI:
        if (!requests_any(s->pod, "nvidia.com/gpumem", "nvidia.com/gpumem-percentage"))
            ck_report(c, CK_GPU_SHARE_MEMORY_UNENFORCED, s->obj,
                      "asks for a HAMi GPU share without nvidia.com/gpumem or nvidia.com/gpumem-percentage: "
                      "HAMi gives it the whole memory of a shared GPU, so it can starve the pods sharing it; "
                      "set a memory limit");
        break;
    default: break;
    }
}

/* ---------------------------------------------------------------- family */
void ck_rules_request(ck_ctx *c)
{
    fit_cache fc;
    memset(&fc, 0, sizeof fc);
    gs_intern_init(&fc.keys);
    fc.verdicts = calloc(FIT_CACHE_MAX, sizeof *fc.verdicts);
    uint8_t *scratch = malloc(c->nnodes ? c->nnodes : 1);
    if (!fc.verdicts || !scratch) {
        c->failed = true;
        goto done;
    }
    for (uint32_t i = 0; i < c->nsubjects && !c->failed; i++) {
        ck_subject *s = &c->subjects[i];
        ck_checked(c, s->obj, CK_GPU_REQUEST_WITHOUT_LIMIT);
        ck_checked(c, s->obj, CK_GPU_REQUEST_LIMIT_MISMATCH);
        ck_checked(c, s->obj, CK_GPU_REQUEST_NOT_INTEGER);
        for (uint32_t k = 0; k < s->pod->ncontainers; k++)
            check_container(c, s, &s->pod->containers[k]);
        for (uint32_t k = 0; k < s->pod->ninit; k++)
            check_container(c, s, &s->pod->init_containers[k]);
        check_invalid(c, s);
        if (!s->gpu)
            continue;
        check_mig_names(c, s);
        check_mig_strategy(c, s);
        check_scheduler(c, s);
        check_unplaceable(c, &fc, s, scratch);
        check_share_memory(c, s);
    }
done:
    for (uint32_t i = 0; i < fc.n; i++)
        free(fc.verdicts[i]);
    free(fc.verdicts);
    free(scratch);
    gs_strbuf_free(&fc.sb);
    gs_intern_free(&fc.keys);
}
