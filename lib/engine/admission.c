/*
 * admission.c - what the API server decides before a pod reaches the scheduler:
 * the Priority admission plugin (k8s-semantics 5.1) and ResourceQuota (section 6).
 *
 * Which pods are admitted here: "new" pods only, i.e. manifests without metadata.uid,
 * status.phase or spec.nodeName. Pods that already exist in a cluster dump passed
 * admission when they were created; they are charged to quotas without a check.
 * Quota usage starts from status.used when the quota carries it (what the quota
 * controller recorded, which upstream's message quotes), else from the existing pods.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"

/* Resolve a class name (or the global default when empty). Returns false if unknown. */
static bool resolve_class(const gs_cluster *c, const char *name, int32_t *prio,
                          gs_preempt_policy *policy)
{
    return gs_priority_resolve(c->snap->priority_classes.v, c->snap->priority_classes.n, name, prio,
                               policy);
}

void gs__resolve_existing_priority(gs_cluster *c, uint32_t pod)
{
    gs_cpod *cp = &c->pods[pod];
    const gs_pod *p = cp->obj;
    gs_preempt_policy pol = GS_PREEMPT_UNSET;
    int32_t prio = 0;
    if (p->has_priority)
        prio = p->priority;
    else if (!resolve_class(c, p->priority_class_name, &prio, &pol))
        prio = 0;
    if (p->preemption_policy != GS_PREEMPT_UNSET)
        pol = p->preemption_policy;
    cp->priority = prio;
    cp->never_preempt = pol == GS_PREEMPT_NEVER;
}

/* ---------------------------------------------------------------- quota usage */
bool gs__quota_usage(const gs_pod *pod, const char *key, gs_quantity *out)
{
    if (strcmp(key, "pods") == 0 || strcmp(key, "count/pods") == 0) {
        *out = gs_quantity_from_int(1, GS_QF_DECIMAL_SI);
        return true;
    }
    bool limits = false;
    const char *name = key;
    if (strncmp(key, "requests.", 9) == 0) {
        name = key + 9;
    } else if (strncmp(key, "limits.", 7) == 0) {
        name = key + 7;
        limits = true;
        /* only cpu, memory and ephemeral-storage limits are tracked; extended resources
         * cannot be over-committed, so limits.<extended> is never counted upstream */
        if (strcmp(name, "cpu") != 0 && strcmp(name, "memory") != 0 &&
            strcmp(name, "ephemeral-storage") != 0)
            return false;
    } else if (strcmp(key, "cpu") != 0 && strcmp(key, "memory") != 0 &&
               strcmp(key, "ephemeral-storage") != 0 && strncmp(key, "hugepages-", 10) != 0) {
        return false; /* a bare extended name like nvidia.com/gpu: not counted */
    }
    if (!limits && strcmp(name, "cpu") != 0 && strcmp(name, "memory") != 0 &&
        strcmp(name, "ephemeral-storage") != 0 && strncmp(name, "hugepages-", 10) != 0 &&
        !gs_resource_is_extended(name))
        return false;
    *out = gs__pod_effective(pod, name, limits);
    return true;
}

static bool pod_best_effort(const gs_pod *p)
{
    static const char *const keys[] = {"cpu", "memory"};
    for (uint32_t i = 0; i < p->ncontainers + p->ninit; i++) {
        const gs_container *ct = i < p->ncontainers ? &p->containers[i]
                                                    : &p->init_containers[i - p->ncontainers];
        for (int k = 0; k < 2; k++)
            if (gs_reslist_get(&ct->requests, keys[k]) || gs_reslist_get(&ct->limits, keys[k]))
                return false;
    }
    return true;
}

static bool scope_req_matches(const gs_sel_req *r, const char *cls)
{
    switch (r->op) {
    case GS_SEL_IN:
    case GS_SEL_NOT_IN: {
        bool in = false;
        for (uint32_t i = 0; i < r->nvalues && !in; i++)
            in = strcmp(r->values[i], cls) == 0;
        return r->op == GS_SEL_IN ? in : !in;
    }
    case GS_SEL_EXISTS: return cls[0] != '\0';
    case GS_SEL_DOES_NOT_EXIST: return cls[0] == '\0';
    default: return false;
    }
}

bool gs__quota_matches(const gs_quota *q, const gs_pod *p)
{
    if (strcmp(q->meta.namespace_, p->meta.namespace_) != 0)
        return false;
    uint32_t s = q->scopes;
    if ((s & GS_SCOPE_TERMINATING) && !p->has_active_deadline)
        return false;
    if ((s & GS_SCOPE_NOT_TERMINATING) && p->has_active_deadline)
        return false;
    bool be = pod_best_effort(p);
    if ((s & GS_SCOPE_BEST_EFFORT) && !be)
        return false;
    if ((s & GS_SCOPE_NOT_BEST_EFFORT) && be)
        return false;
    if (s & GS_SCOPE_CROSS_NAMESPACE_POD_AFFINITY)
        return false; /* pod affinity terms are not modelled: such a quota never applies */
    if (s & GS_SCOPE_VOLUME_ATTRIBUTES_CLASS)
        return false; /* tracks PersistentVolumeClaims only */
    if (s & GS_SCOPE_PRIORITY_CLASS) {
        if (!q->nscope_exprs)
            return p->priority_class_name[0] != '\0';
        for (uint32_t i = 0; i < q->nscope_exprs; i++)
            if (!scope_req_matches(&q->scope_exprs[i], p->priority_class_name))
                return false;
    }
    return true;
}

int gs__quota_init(gs_cluster *c, gs_error *err)
{
    const gs_snapshot *s = c->snap;
    if (!s->quotas.n)
        return 0;
    c->quota_used = calloc(s->quotas.n, sizeof *c->quota_used);
    if (!c->quota_used)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory (quota)");
    for (size_t qi = 0; qi < s->quotas.n; qi++) {
        const gs_quota *q = &s->quotas.v[qi];
        c->quota_used[qi] = calloc(q->hard.n ? q->hard.n : 1, sizeof **c->quota_used);
        if (!c->quota_used[qi])
            return gs_fail(err, GS_ERR_NOMEM, "out of memory (quota)");
        for (uint32_t k = 0; k < q->hard.n; k++) {
            const char *key = q->hard.items[k].name;
            gs_quantity u = gs_quantity_from_int(0, q->hard.items[k].q.fmt);
            if (q->used.n) {
                const gs_quantity *st = gs_reslist_get(&q->used, key);
                if (st)
                    u = *st;
            } else {
                for (uint32_t pi = 0; pi < c->npods; pi++) {
                    const gs_cpod *cp = &c->pods[pi];
                    const gs_pod *p = cp->obj;
                    if (!cp->existing || cp->state == GS_PS_SKIPPED ||
                        strcmp(p->phase, "Succeeded") == 0 || strcmp(p->phase, "Failed") == 0)
                        continue;
                    gs_quantity pu;
                    if (gs__quota_matches(q, p) && gs__quota_usage(p, key, &pu))
                        u = gs_quantity_add(u, pu);
                }
            }
            c->quota_used[qi][k] = u;
        }
    }
    return 0;
}

void gs__quota_free(gs_cluster *c)
{
    if (!c->quota_used)
        return;
    for (size_t qi = 0; qi < c->snap->quotas.n; qi++)
        free(c->quota_used[qi]);
    free(c->quota_used);
    c->quota_used = NULL;
}

void gs__quota_charge(gs_cluster *c, uint32_t pod)
{
    const gs_snapshot *s = c->snap;
    const gs_pod *p = c->pods[pod].obj;
    for (size_t qi = 0; qi < s->quotas.n; qi++) {
        const gs_quota *q = &s->quotas.v[qi];
        if (!gs__quota_matches(q, p))
            continue;
        for (uint32_t k = 0; k < q->hard.n; k++) {
            gs_quantity pu;
            if (gs__quota_usage(p, q->hard.items[k].name, &pu))
                c->quota_used[qi][k] = gs_quantity_add(c->quota_used[qi][k], pu);
        }
    }
}

void gs__quota_release(gs_cluster *c, uint32_t pod)
{
    const gs_snapshot *s = c->snap;
    const gs_pod *p = c->pods[pod].obj;
    for (size_t qi = 0; qi < s->quotas.n; qi++) {
        const gs_quota *q = &s->quotas.v[qi];
        if (!gs__quota_matches(q, p))
            continue;
        for (uint32_t k = 0; k < q->hard.n; k++) {
            gs_quantity pu;
            if (gs__quota_usage(p, q->hard.items[k].name, &pu))
                c->quota_used[qi][k] = gs_quantity_sub(c->quota_used[qi][k], pu);
        }
    }
}

static void must_specify(const gs_pod *p, const char *res, bool limits, gs_strbuf *sb)
{
    bool any = false;
    for (uint32_t i = 0; i < p->ninit + p->ncontainers; i++) {
        const gs_container *ct = i < p->ninit ? &p->init_containers[i]
                                              : &p->containers[i - p->ninit];
        if (gs_reslist_get(limits ? &ct->limits : &ct->requests, res))
            continue;
        if (!any) {
            if (sb->len)
                gs_strbuf_puts(sb, "; ");
            gs_strbuf_printf(sb, "%s.%s for: ", limits ? "limits" : "requests", res);
            any = true;
        } else {
            gs_strbuf_putc(sb, ',');
        }
        gs_strbuf_puts(sb, ct->name);
    }
}

static const char *quota_check(gs_cluster *c, uint32_t pod)
{
    const gs_snapshot *s = c->snap;
    const gs_pod *p = c->pods[pod].obj;
    const char *pname = p->meta.name[0] ? p->meta.name
                        : p->meta.generate_name[0] ? p->meta.generate_name
                                                  : "Unknown";
    for (size_t qi = 0; qi < s->quotas.n; qi++) {
        const gs_quota *q = &s->quotas.v[qi];
        if (!gs__quota_matches(q, p))
            continue;
        /* cpu/memory tracked: every container must state them (skipped with pod-level) */
        if (!p->pod_requests.n) {
            gs_strbuf ms = GS_STRBUF_INIT;
            if (gs_reslist_get(&q->hard, "cpu") || gs_reslist_get(&q->hard, "requests.cpu"))
                must_specify(p, "cpu", false, &ms);
            if (gs_reslist_get(&q->hard, "limits.cpu"))
                must_specify(p, "cpu", true, &ms);
            if (gs_reslist_get(&q->hard, "memory") || gs_reslist_get(&q->hard, "requests.memory"))
                must_specify(p, "memory", false, &ms);
            if (gs_reslist_get(&q->hard, "limits.memory"))
                must_specify(p, "memory", true, &ms);
            if (ms.len) {
                const char *m = gs_arena_printf(&c->arena,
                                                "pods \"%s\" is forbidden: failed quota: %s: "
                                                "must specify %s",
                                                pname, q->meta.name, gs_strbuf_cstr(&ms));
                gs_strbuf_free(&ms);
                return m;
            }
            gs_strbuf_free(&ms);
        }
        gs_strbuf req = GS_STRBUF_INIT, used = GS_STRBUF_INIT, lim = GS_STRBUF_INIT;
        for (uint32_t k = 0; k < q->hard.n; k++) { /* hard is sorted by key */
            const gs_res *h = &q->hard.items[k];
            gs_quantity pu;
            if (!gs__quota_usage(p, h->name, &pu) || gs_quantity_is_zero(&pu))
                continue;
            gs_quantity nu = gs_quantity_add(c->quota_used[qi][k], pu);
            if (gs_quantity_cmp(&nu, &h->q) <= 0)
                continue;
            char a[GS_QUANTITY_STR_MAX], b[GS_QUANTITY_STR_MAX], d[GS_QUANTITY_STR_MAX];
            gs_quantity_format(&pu, a, sizeof a);
            gs_quantity_format(&c->quota_used[qi][k], b, sizeof b);
            gs_quantity_format(&h->q, d, sizeof d);
            const char *sep = req.len ? "," : "";
            gs_strbuf_printf(&req, "%s%s=%s", sep, h->name, a);
            gs_strbuf_printf(&used, "%s%s=%s", sep, h->name, b);
            gs_strbuf_printf(&lim, "%s%s=%s", sep, h->name, d);
        }
        const char *m = NULL;
        if (req.len)
            m = gs_arena_printf(&c->arena,
                                "pods \"%s\" is forbidden: exceeded quota: %s, requested: %s, "
                                "used: %s, limited: %s",
                                pname, q->meta.name, gs_strbuf_cstr(&req), gs_strbuf_cstr(&used),
                                gs_strbuf_cstr(&lim));
        gs_strbuf_free(&req);
        gs_strbuf_free(&used);
        gs_strbuf_free(&lim);
        if (m)
            return m;
    }
    return NULL;
}

int gs__admit(gs_cluster *c, uint32_t pod, const char **message)
{
    gs_cpod *cp = &c->pods[pod];
    const gs_pod *p = cp->obj;
    *message = NULL;
    if (cp->existing) {
        gs__resolve_existing_priority(c, pod);
        return 0;
    }
    const char *pname = p->meta.name[0] ? p->meta.name : p->meta.generate_name;
    int32_t prio;
    gs_preempt_policy pol;
    if (!resolve_class(c, p->priority_class_name, &prio, &pol)) {
        *message = gs_arena_printf(&c->arena,
                                   "pods \"%s\" is forbidden: no PriorityClass with name %s was found",
                                   pname, p->priority_class_name);
        return -1;
    }
    if (p->has_priority && p->priority != prio) {
        *message = gs_arena_printf(&c->arena,
                                   "pods \"%s\" is forbidden: the integer value of priority (%d) "
                                   "must not be provided in pod spec; priority admission "
                                   "controller computed %d from the given PriorityClass name",
                                   pname, p->priority, prio);
        return -1;
    }
    if (p->preemption_policy != GS_PREEMPT_UNSET)
        pol = p->preemption_policy;
    cp->priority = prio;
    cp->never_preempt = pol == GS_PREEMPT_NEVER;
    if (c->cfg.quota) {
        const char *qm = quota_check(c, pod);
        if (qm) {
            *message = qm;
            return -1;
        }
        gs__quota_charge(c, pod);
    }
    return 0;
}
