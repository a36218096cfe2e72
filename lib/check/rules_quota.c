/*
 * rules_quota.c - ResourceQuota for GPUs (GS021, GS022; k8s-semantics 6).
 *
 *   GS021 gpu-namespace-without-quota  a namespace whose pods or workloads ask for a GPU
 *       resource (nvidia.com/gpu, nvidia.com/mig-*, HAMi and gpushare resources: every
 *       name gs_gpu_is_device_resource() accounts for) while no ResourceQuota of that
 *       namespace in the input has spec.hard[requests.<that resource>]. Reported on the
 *       Namespace object, or, when the input has none, at the namespace's first GPU
 *       workload (kind Namespace). GPU asks made only by annotations (KAI, openb) cannot
 *       be limited by a quota and are not counted.
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

typedef struct ns_info {
    uint32_t obj;                    /* Namespace object, UINT32_MAX until known */
    uint32_t first_subject;          /* subject index of the first GPU workload */
    uint32_t nsubjects;              /* GPU workloads in it */
    uint32_t named[NAMED_MAX];       /* subjects quoted in the message (missing keys) */
    uint32_t nnamed;
    uint32_t nuncovered;             /* GPU workloads with an uncovered resource */
    const char *missing[MISSING_MAX];
    uint32_t nmissing;
    bool more_missing;
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
    ns_info *info;
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
    ns_info *in = w->info;
    for (uint32_t i = 0; i < in->nmissing; i++)
        if (!strcmp(in->missing[i], res))
            return;
    if (in->nmissing < MISSING_MAX)
        in->missing[in->nmissing++] = res;
    else
        in->more_missing = true;
}

static void report_namespace(ck_ctx *c, const ns_info *in)
{
    char keys[600], who[400];
    size_t o = 0;
    keys[0] = who[0] = '\0';
    for (uint32_t i = 0; i < in->nmissing; i++) {
        int w = snprintf(keys + o, sizeof keys - o, "%srequests.%s", i ? ", " : "", in->missing[i]);
        if (w > 0)
            o = o + (size_t)w < sizeof keys ? o + (size_t)w : sizeof keys - 1;
    }
    if (in->more_missing && o < sizeof keys)
        snprintf(keys + o, sizeof keys - o, ", ...");
    o = 0;
    for (uint32_t i = 0; i < in->nnamed; i++) {
        const ck_object *s = &c->objects.v[c->subjects[in->named[i]].obj];
        int w = snprintf(who + o, sizeof who - o, "%s%s/%s", i ? ", " : "", s->kind, s->name);
        if (w > 0)
            o = o + (size_t)w < sizeof who ? o + (size_t)w : sizeof who - 1;
    }
    if (in->nuncovered > in->nnamed && o < sizeof who)
        snprintf(who + o, sizeof who - o, " and %u more", in->nuncovered - in->nnamed);
    ck_report(c, CK_GPU_NAMESPACE_WITHOUT_QUOTA, in->obj,
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
        walk w = {c, &covered, &sb, in, ns, false, false};
        gpu_resources(sj->pod, visit_resource, &w);
        if (!w.any)
            continue; /* annotations only: nothing a quota could limit */
        if (in->first_subject == UINT32_MAX)
            in->first_subject = i;
        in->nsubjects++;
        if (w.uncovered) {
            if (in->nnamed < NAMED_MAX)
                in->named[in->nnamed++] = i;
            in->nuncovered++;
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
        if (in->nmissing)
            report_namespace(c, in);
    }

    gs_vec_free(infos);
    gs_strbuf_free(&sb);
    gs_intern_free(&nsids);
    gs_intern_free(&covered);
}
