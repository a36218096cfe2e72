/*
 * rules_quota.c - ResourceQuota for GPUs (GS021, GS022; k8s-semantics 6).
 *
 *   GS021 gpu-namespace-without-quota  a namespace whose pods or workloads ask for a GPU
 *       resource (nvidia.com/gpu, nvidia.com/mig-*, HAMi and gpushare resources: every
 *       name gs_gpu_is_device_resource() accounts for) while no ResourceQuota of that
 *       namespace in the input has spec.hard[requests.<that resource>]. Reported on the
 *       Namespace object, or, when the input has none, at the namespace's first GPU
 *       workload (kind Namespace). GPU asks made only by annotations (KAI, openb) cannot
 *       be limited by a quota and are not counted. Workloads KAI-Scheduler places
 *       (schedulerName kai-scheduler or a kai.scheduler/queue / runai/queue label) have
 *       their GPU quota in KAI's Queue: when only they are uncovered, the finding is an
 *       information naming their queues.
 *   GS022 quota-key-not-enforced  spec.hard keys the quota admission never charges for an
 *       extended resource: limits.<name> (pods cannot overcommit, so only requests.<name>
 *       is tracked) and the bare <name>.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/check_int.h"

#define MISSING_MAX 8
#define NAMED_MAX 3

/* GPU workloads of a namespace that no quota covers: those kube-scheduler places, or
 * (KAI) those KAI-Scheduler places, whose GPU quota is its Queue's. */
typedef struct uncovered {
    uint32_t named[NAMED_MAX];       /* subjects quoted in the message (missing keys) */
    uint32_t nnamed;
    uint32_t n;                      /* GPU workloads with an uncovered resource */
    const char *missing[MISSING_MAX];
    uint32_t nmissing;
    bool more_missing;
    const ck_object *last;           /* the last counted workload: the pod templates of one
                                        object (a LeaderWorkerSet's leader and workers) are
                                        consecutive subjects and count once */
} uncovered;

enum { UNC_PLAIN = 0, UNC_KAI };

typedef struct ns_info {
    uint32_t obj;                    /* Namespace object, UINT32_MAX until known */
    uint32_t first_subject;          /* subject index of the first GPU workload */
    uint32_t nsubjects;              /* GPU workloads in it */
    uncovered unc[2];                /* UNC_PLAIN, UNC_KAI */
} ns_info;

static int32_t pair_id(gs_intern *t, gs_strbuf *sb, const char *ns, const char *res, bool insert)
{
    gs_strbuf_reset(sb);
    gs_strbuf_puts(sb, ns);
    gs_strbuf_putc(sb, '\x1f');
    gs_strbuf_puts(sb, res);
    if (sb->oom)
        return -2;
    return insert ? gs_intern_id(t, gs_strbuf_cstr(sb), sb->len) : gs_intern_find(t, gs_strbuf_cstr(sb), sb->len);
}

static bool is_count_or_storage_key(const char *k)
{
    return !strncmp(k, "count/", 6) || strstr(k, ".storageclass.storage.k8s.io/") != NULL;
}

static void check_quota_keys(ck_ctx *c, const gs_quota *q, uint32_t obj)
{
    ck_checked(c, obj, CK_QUOTA_KEY_NOT_ENFORCED);
    for (uint32_t k = 0; k < q->hard.n; k++) {
        const char *key = q->hard.items[k].name;
        if (is_count_or_storage_key(key))
            continue;
        if (!strncmp(key, "limits.", 7) && gs_resource_is_extended(key + 7))
            ck_report(c, CK_QUOTA_KEY_NOT_ENFORCED, obj,
                      "spec.hard[%s] is not enforced: quota tracks extended resources only as requests.%s "
                      "(pods cannot overcommit them), so this limit never blocks a pod; use requests.%s",
                      key, key + 7, key + 7);
        else if (gs_resource_is_extended(key))
            ck_report(c, CK_QUOTA_KEY_NOT_ENFORCED, obj,
                      "spec.hard[%s] is not enforced: quota charges extended resources only under "
                      "requests.%s, so this entry never blocks a pod; use requests.%s",
                      key, key, key);
    }
}

/* Every GPU resource the pod's containers ask for (positive amount), via cb. */
static void gpu_resources(const gs_pod *p, void (*cb)(void *, const char *), void *arg)
{
    for (uint32_t pass = 0; pass < 2; pass++) {
        const gs_container *cs = pass ? p->init_containers : p->containers;
        uint32_t n = pass ? p->ninit : p->ncontainers;
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t k = 0; k < cs[i].requests.n; k++) {
                const gs_res *r = &cs[i].requests.items[k];
                if (r->q.nanos > 0 && gs_resource_is_extended(r->name) && gs_gpu_is_device_resource(r->name))
                    cb(arg, r->name);
            }
    }
}

typedef struct walk {
    ck_ctx *c;
    gs_intern *covered;
    gs_strbuf *sb;
    uncovered *info;
    const char *ns;
    bool uncovered;
    bool any;
} walk;

static void visit_resource(void *arg, const char *res)
{
    walk *w = arg;
    w->any = true;
    int32_t id = pair_id(w->covered, w->sb, w->ns, res, false);
    if (id == -2) {
        w->c->failed = true;
        return;
    }
    if (id >= 0)
        return;
    w->uncovered = true;
    uncovered *in = w->info;
    for (uint32_t i = 0; i < in->nmissing; i++)
        if (!strcmp(in->missing[i], res))
            return;
    if (in->nmissing < MISSING_MAX)
        in->missing[in->nmissing++] = res;
    else
        in->more_missing = true;
}

/* "Kind/name, Kind/name and 3 more" of the quoted workloads (KAI: with their queues). */
static void workloads_text(const ck_ctx *c, const uncovered *in, bool kai, char *who, size_t cap)
{
    size_t o = 0;
    who[0] = '\0';
    for (uint32_t i = 0; i < in->nnamed; i++) {
        const ck_subject *sj = &c->subjects[in->named[i]];
        const ck_object *s = &c->objects.v[sj->obj];
        const char *queue = kai ? ck_kai_queue(sj) : NULL;
        int w = kai ? snprintf(who + o, cap - o, "%s%s/%s in %s%s%s", i ? ", " : "", s->kind, s->name,
                               queue ? "queue " : "KAI's default queue", queue ? queue : "",
                               queue ? "" : " (no kai.scheduler/queue label)")
                    : snprintf(who + o, cap - o, "%s%s/%s", i ? ", " : "", s->kind, s->name);
        if (w > 0)
            o = o + (size_t)w < cap ? o + (size_t)w : cap - 1;
    }
    if (in->n > in->nnamed && o < cap)
        snprintf(who + o, cap - o, " and %u more", in->n - in->nnamed);
}

static void keys_text(const uncovered *in, char *keys, size_t cap)
{
    size_t o = 0;
    keys[0] = '\0';
    for (uint32_t i = 0; i < in->nmissing; i++) {
        int w = snprintf(keys + o, cap - o, "%srequests.%s", i ? ", " : "", in->missing[i]);
        if (w > 0)
            o = o + (size_t)w < cap ? o + (size_t)w : cap - 1;
    }
    if (in->more_missing && o < cap)
        snprintf(keys + o, cap - o, ", ...");
}

/* KAI-Scheduler enforces GPU quota through its Queues (hierarchical quota, over-quota
 * weight, limit): a namespace whose uncovered GPU workloads all run under KAI is not an
 * error, only a note that the quota lives in the queue. */
static void report_kai_namespace(ck_ctx *c, const ns_info *info)
{
    const uncovered *in = &info->unc[UNC_KAI];
    char keys[600], who[700];
    keys_text(in, keys, sizeof keys);
    workloads_text(c, in, true, who, sizeof who);
    ck_report_at_most(c, CK_GPU_NAMESPACE_WITHOUT_QUOTA, info->obj, GS_SEV_INFO,
                      "runs GPU workloads under KAI-Scheduler (%s) and no ResourceQuota of the namespace limits %s: "
                      "KAI enforces GPU quota through its Queues, so make sure the queue has a GPU quota and "
                      "limit; pods that bypass KAI are not limited",
                      who, keys);
}

static void report_namespace(ck_ctx *c, const ns_info *info)
{
    const uncovered *in = &info->unc[UNC_PLAIN];
    char keys[600], who[400];
    keys_text(in, keys, sizeof keys);
    workloads_text(c, in, false, who, sizeof who);
    ck_report(c, CK_GPU_NAMESPACE_WITHOUT_QUOTA, info->obj,
              "runs GPU workloads (%s) but no ResourceQuota of the namespace limits %s: one team can take every "
              "GPU of the cluster; add a ResourceQuota with spec.hard %s",
              who, keys, keys);
}

void ck_rules_quota(ck_ctx *c)
{
    const gs_snapshot *s = c->snap;
    gs_intern covered, nsids;
    gs_intern_init(&covered);
    gs_intern_init(&nsids);
    gs_strbuf sb = GS_STRBUF_INIT;
    GS_VEC(ns_info) infos = {NULL, 0, 0};

    /* quotas: GS022, and the namespace/resource pairs they cover */
    for (size_t i = 0; i < s->quotas.n && !c->failed; i++) {
        const gs_quota *q = &s->quotas.v[i];
        uint32_t obj = ck_add_object(c, "ResourceQuota", q->meta.namespace_, q->meta.name, q->meta.src,
                                     &q->meta.annotations, NULL);
        if (obj == UINT32_MAX)
            break;
        check_quota_keys(c, q, obj);
        for (uint32_t k = 0; k < q->hard.n; k++)
            if (!strncmp(q->hard.items[k].name, "requests.", 9) &&
                pair_id(&covered, &sb, q->meta.namespace_, q->hard.items[k].name + 9, true) < 0)
                c->failed = true;
    }

    /* namespaces of the input */
    for (size_t i = 0; i < s->namespaces.n && !c->failed; i++) {
        const gs_namespace *n = &s->namespaces.v[i];
        uint32_t obj = ck_add_object(c, "Namespace", "", n->meta.name, n->meta.src, &n->meta.annotations, NULL);
        if (obj == UINT32_MAX)
            break;
        int32_t id = gs_intern_id(&nsids, n->meta.name, strlen(n->meta.name));
        if (id < 0) {
            c->failed = true;
            break;
        }
        if ((size_t)id == infos.n) {
            ns_info in;
            memset(&in, 0, sizeof in);
            in.obj = obj;
            in.first_subject = UINT32_MAX;
            if (gs_vec_push(infos, in) < 0) {
                c->failed = true;
                break;
            }
        }
    }

    /* GPU workloads by namespace */
    for (uint32_t i = 0; i < c->nsubjects && !c->failed; i++) {
        const ck_subject *sj = &c->subjects[i];
        if (!sj->gpu)
            continue;
        const char *ns = sj->pod->meta.namespace_;
        int32_t id = gs_intern_id(&nsids, ns, strlen(ns));
        if (id < 0) {
            c->failed = true;
            break;
        }
        if ((size_t)id == infos.n) {
            ns_info in;
            memset(&in, 0, sizeof in);
            in.obj = UINT32_MAX;
            in.first_subject = UINT32_MAX;
            if (gs_vec_push(infos, in) < 0) {
                c->failed = true;
                break;
            }
        }
        ns_info *in = &infos.v[id];
        uncovered *unc = &in->unc[ck_is_kai(sj) ? UNC_KAI : UNC_PLAIN];
        walk w = {c, &covered, &sb, unc, ns, false, false};
        gpu_resources(sj->pod, visit_resource, &w);
        if (!w.any)
            continue; /* annotations only: nothing a quota could limit */
        if (in->first_subject == UINT32_MAX)
            in->first_subject = i;
        in->nsubjects++;
        const ck_object *o = &c->objects.v[sj->obj];
        if (w.uncovered && !(unc->last && strcmp(unc->last->kind, o->kind) == 0 &&
                             strcmp(unc->last->name, o->name) == 0 &&
                             strcmp(unc->last->ns, o->ns) == 0)) {
            if (unc->nnamed < NAMED_MAX)
                unc->named[unc->nnamed++] = i;
            unc->n++;
            unc->last = o;
        }
    }

    for (size_t id = 0; id < infos.n && !c->failed; id++) {
        ns_info *in = &infos.v[id];
        if (!in->nsubjects)
            continue;
        if (in->obj == UINT32_MAX) {
            const ck_subject *first = &c->subjects[in->first_subject];
            /* the name must outlive the result: the pod's namespace string does */
            in->obj = ck_add_object(c, "Namespace", "", first->pod->meta.namespace_,
                                    c->objects.v[first->obj].src, NULL, NULL);
            if (in->obj == UINT32_MAX)
                break;
        }
        ck_checked(c, in->obj, CK_GPU_NAMESPACE_WITHOUT_QUOTA);
        if (in->unc[UNC_PLAIN].nmissing)
            report_namespace(c, in);
        else if (in->unc[UNC_KAI].nmissing)
            report_kai_namespace(c, in);
    }

    gs_vec_free(infos);
    gs_strbuf_free(&sb);
    gs_intern_free(&nsids);
    gs_intern_free(&covered);
}
