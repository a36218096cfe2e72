/*
 * run.c - gs_check_run(): build the checker's view of a snapshot, run every rule family,
 * apply suppressions, and hand back findings in a deterministic order.
 *
 * Steps (one pass each, so 10,000 manifests check in milliseconds after reading):
 *   1. objects: every Node, Namespace, ResourceQuota, PriorityClass, workload, and Pod
 *      that no workload of the input owns; each with its parsed suppression annotation
 *      (a broken annotation is reported right away as GS026);
 *   2. nodes: the GPU inventory of each node, built once with the GPU layer
 *      (gs_node_gpus_build, nothing bound), and the distinct sets of GPU taints;
 *   3. subjects: workload templates and unowned pods with their canonical GPU request
 *      (gs_gpu_request_from_pod) and what kind of daemon they are;
 *   4. the rule families (rules_*.c), which report through ck_report();
 *   5. sort findings by file, line, column, rule id, message (then object), and the
 *      checked objects by position.
 * Everything lives in locals and the result's arena: no globals, so the webhook may run
 * checks from several threads at once on different snapshots.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/check_int.h"

/* ---------------------------------------------------------------- objects, findings */
bool ck_enabled(const ck_ctx *c, uint32_t rule)
{
    return rule < CK_RULE_COUNT && !c->cfg->disabled[rule];
}

void ck_checked(ck_ctx *c, uint32_t obj, uint32_t rule)
{
    if (obj < c->objects.n && ck_enabled(c, rule))
        c->objects.v[obj].rules |= (uint64_t)1 << rule;
}

static void ck_vreport(ck_ctx *c, uint32_t rule, uint32_t obj, const gs_src *at, gs_severity most, const char *fmt,
                       va_list ap)
{
    if (!ck_enabled(c, rule) || obj >= c->objects.n || c->failed)
        return;
    ck_checked(c, obj, rule);
    char msg[CK_MSG_MAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    const ck_object *o = &c->objects.v[obj];
    uint32_t n;
    const gs_rule_info *rules = gs_rules(&n);
    gs_finding f;
    memset(&f, 0, sizeof f);
    f.rule = &rules[rule];
    f.severity = c->cfg->has_severity[rule] ? c->cfg->severity[rule] : rules[rule].severity;
    if (f.severity > most)
        f.severity = most;
    f.kind = o->kind;
    f.namespace_ = o->ns;
    f.name = o->name;
    f.src = at ? *at : o->src;
    f.message = gs_arena_strdup(c->arena, msg);
    for (uint32_t i = 0; i < o->nsuppress; i++)
        if (o->suppress[i].rules & ((uint64_t)1 << rule)) {
            f.suppressed = true;
            f.suppress_reason = o->suppress[i].reason;
            break;
        }
    if (!f.message || gs_vec_push(c->findings, f) < 0 || gs_vec_push(c->finding_obj, obj) < 0)
        c->failed = true;
}

void ck_report(ck_ctx *c, uint32_t rule, uint32_t obj, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ck_vreport(c, rule, obj, NULL, GS_SEV_ERROR, fmt, ap);
    va_end(ap);
}

void ck_report_at_most(ck_ctx *c, uint32_t rule, uint32_t obj, gs_severity most, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ck_vreport(c, rule, obj, NULL, most, fmt, ap);
    va_end(ap);
}

void ck_report_src(ck_ctx *c, uint32_t rule, uint32_t obj, gs_src src, gs_severity most, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ck_vreport(c, rule, obj, src.line ? &src : NULL, most, fmt, ap);
    va_end(ap);
}

uint32_t ck_add_object(ck_ctx *c, const char *kind, const char *ns, const char *name, gs_src src,
                       const gs_labels *annotations, const gs_labels *annotations2)
{
    ck_object o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.ns = ns ? ns : "";
    o.name = name ? name : "";
    o.src = src;
    if (gs_vec_push(c->objects, o) < 0) {
        c->failed = true;
        return UINT32_MAX;
    }
    uint32_t idx = (uint32_t)(c->objects.n - 1);
    /* the object's own annotation, then (workloads) the pod template's */
    const gs_labels *lists[2] = {annotations, annotations2};
    for (int k = 0; k < 2; k++) {
        const char *v = lists[k] ? gs_labels_get(lists[k], CK_SUPPRESS_ANNOTATION) : NULL;
        if (!v)
            continue;
        ck_suppress *entries;
        uint32_t n;
        const char *problems;
        if (ck_parse_suppress(c->arena, v, &entries, &n, &problems) < 0) {
            c->failed = true;
            return UINT32_MAX;
        }
        ck_object *obj = &c->objects.v[idx];
        if (n) {
            ck_suppress *all = gs_arena_alloc(c->arena, (obj->nsuppress + n) * sizeof *all);
            if (!all) {
                c->failed = true;
                return UINT32_MAX;
            }
            if (obj->nsuppress)
                memcpy(all, obj->suppress, obj->nsuppress * sizeof *all);
            memcpy(all + obj->nsuppress, entries, n * sizeof *all);
            obj->suppress = all;
            obj->nsuppress += n;
        }
        ck_checked(c, idx, CK_SUPPRESSION_INVALID);
        if (problems)
            ck_report(c, CK_SUPPRESSION_INVALID, idx, "annotation %s%s: %s", CK_SUPPRESS_ANNOTATION,
                      k ? " (pod template)" : "", problems);
    }
    return idx;
}

const char *ck_object_label(const ck_ctx *c, uint32_t obj, char *buf, size_t cap)
{
    const ck_object *o = &c->objects.v[obj];
    snprintf(buf, cap, "%s %s%s%s", o->kind, o->ns, o->ns[0] ? "/" : "", o->name);
    return buf;
}

/* ---------------------------------------------------------------- taints and tolerations */
bool ck_is_gpu_taint_key(const ck_ctx *c, const char *key)
{
    for (uint32_t i = 0; i < c->cfg->ngpu_taint_keys; i++)
        if (c->cfg->gpu_taint_keys[i] && !strcmp(c->cfg->gpu_taint_keys[i], key))
            return true;
    return false;
}

bool ck_is_gpu_taint(const ck_ctx *c, const gs_taint *t)
{
    return gs_taint_is_gpu(t, c->cfg->gpu_taint_keys, c->cfg->ngpu_taint_keys);
}

bool ck_pod_tolerates(const ck_ctx *c, const ck_subject *s, const gs_taint *t)
{
    const gs_pod *p = s->pod;
    for (uint32_t i = 0; i < p->ntolerations; i++)
        if (gs_toleration_tolerates(&p->tolerations[i], t, false))
            return true;
    return c->cfg->extended_resource_toleration && gs_ert_tolerates(p, t);
}

bool ck_pod_tolerates_set(const ck_ctx *c, const ck_subject *s, const ck_taintset *ts)
{
    for (uint32_t i = 0; i < ts->n; i++)
        if (!ck_pod_tolerates(c, s, ts->taints[i]))
            return false;
    return true;
}

bool ck_pod_tolerates_key(const ck_ctx *c, const ck_subject *s, const char *key)
{
    if (gs_pod_tolerates_key(s->pod, key, GS_EFFECT_NO_SCHEDULE, false))
        return true;
    gs_taint probe = {key, "", GS_EFFECT_NO_SCHEDULE};
    return c->cfg->extended_resource_toleration && gs_ert_tolerates(s->pod, &probe);
}


/* ---------------------------------------------------------------- priorities */
bool ck_pod_priority(const ck_ctx *c, const gs_pod *p, int32_t *prio, gs_preempt_policy *policy)
{
    const gs_snapshot *snap = c->snap;
    gs_preempt_policy class_policy = GS_PREEMPT_UNSET;
    if (!p->priority_class_name[0] && p->has_priority) {
        *prio = p->priority; /* a pod of a dump: what admission wrote */
    } else if (!gs_priority_resolve(snap->priority_classes.v, snap->priority_classes.n, p->priority_class_name,
                                    prio, &class_policy)) {
        return false;
    }
    *policy = p->preemption_policy == GS_PREEMPT_NEVER || class_policy == GS_PREEMPT_NEVER
                  ? GS_PREEMPT_NEVER
                  : GS_PREEMPT_LOWER_PRIORITY;
    return true;
}

/* ---------------------------------------------------------------- KAI-Scheduler */
const char *ck_label(const ck_subject *s, const char *key)
{
    const char *v = s->labels2 ? gs_labels_get(s->labels2, key) : NULL;
    return v ? v : gs_labels_get(&s->pod->meta.labels, key);
}

const char *ck_kai_queue(const ck_subject *s)
{
    const char *q = ck_label(s, CK_KAI_QUEUE_LABEL);
    return q ? q : ck_label(s, CK_KAI_QUEUE_LABEL_OLD);
}

bool ck_is_kai(const ck_subject *s)
{
    return !strcmp(s->pod->scheduler_name, CK_KAI_SCHEDULER) || ck_kai_queue(s) != NULL;
}

void ck_describe_request(const ck_subject *s, char *buf, size_t cap)
{
    if (!s->req_error && s->req.kind != GS_GPU_NONE)
        gs_gpu_request_describe(&s->req, buf, cap);
    else if (!s->req_error && s->dra_gpu)
        snprintf(buf, cap, "GPUs through DRA (%u claim request%s of a GPU DeviceClass)", s->dra_gpu,
                 s->dra_gpu == 1 ? "" : "s");
    else
        snprintf(buf, cap, "a GPU");
}

/* ---------------------------------------------------------------- building the view */
static const char *object_name(const gs_meta *m)
{
    return m->name[0] ? m->name : m->generate_name;
}

static int taint_ptr_cmp(const void *a, const void *b)
{
    const gs_taint *x = *(const gs_taint *const *)a, *y = *(const gs_taint *const *)b;
    int r = strcmp(x->key, y->key);
    if (!r)
        r = strcmp(x->value, y->value);
    if (!r)
        r = (int)x->effect - (int)y->effect;
    return r;
}

/* Group GPU nodes by their set of GPU taints (usually a handful of sets), so taint rules
 * test a pod once per set rather than once per node. */
static int build_taintsets(ck_ctx *c)
{
    gs_intern ids;
    gs_intern_init(&ids);
    GS_VEC(ck_taintset) sets = {NULL, 0, 0};
    gs_strbuf key = GS_STRBUF_INIT;
    int rc = 0;
    for (uint32_t i = 0; i < c->nnodes && rc == 0; i++) {
        ck_node *n = &c->nodes[i];
        if (!n->gpu)
            continue;
        const gs_node *node = n->node;
        uint32_t k = 0;
        const gs_taint **list = gs_arena_alloc(c->arena, (node->ntaints ? node->ntaints : 1) * sizeof *list);
        if (!list) {
            rc = -1;
            break;
        }
        for (uint32_t t = 0; t < node->ntaints; t++)
            if (ck_is_gpu_taint(c, &node->taints[t]))
                list[k++] = &node->taints[t];
        qsort(list, k, sizeof *list, taint_ptr_cmp);
        gs_strbuf_reset(&key);
        for (uint32_t t = 0; t < k; t++) {
            gs_strbuf_puts(&key, list[t]->key);
            gs_strbuf_putc(&key, '\x1f');
            gs_strbuf_puts(&key, list[t]->value);
            gs_strbuf_printf(&key, "\x1f%d\x1e", (int)list[t]->effect);
        }
        if (key.oom) {
            rc = -1;
            break;
        }
        int32_t id = gs_intern_id(&ids, gs_strbuf_cstr(&key), key.len);
        if (id < 0) {
            rc = -1;
            break;
        }
        if ((size_t)id == sets.n) {
            ck_taintset ts = {list, k, 0};
            if (gs_vec_push(sets, ts) < 0) {
                rc = -1;
                break;
            }
        }
        sets.v[id].nodes++;
        n->taintset = (uint32_t)id;
    }
    gs_strbuf_free(&key);
    gs_intern_free(&ids);
    if (rc == 0 && sets.n) {
        c->taintsets = gs_arena_memdup(c->arena, sets.v, sets.n * sizeof *sets.v);
        if (!c->taintsets)
            rc = -1;
        c->ntaintsets = (uint32_t)sets.n;
    }
    gs_vec_free(sets);
    return rc;
}

static int build_nodes(ck_ctx *c)
{
    const gs_snapshot *s = c->snap;
    c->nnodes = (uint32_t)s->nodes.n;
    if (!c->nnodes)
        return 0;
    c->nodes = calloc(c->nnodes, sizeof *c->nodes);
    if (!c->nodes)
        return -1;
    bool mixed = false, single = false;
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const gs_node *node = &s->nodes.v[i];
        ck_node *n = &c->nodes[i];
        n->node = node;
        n->obj = ck_add_object(c, "Node", "", node->meta.name, node->meta.src, &node->meta.annotations, NULL);
        if (n->obj == UINT32_MAX)
            return -1;
        gs_error e;
        gs_error_clear(&e);
        if (gs_node_gpus_build(node, &n->gpus, &e) == 0) {
            n->built = true;
            n->gpu = n->gpus.gpu_node;
            if (n->gpu && n->gpus.mig_strategy == GS_MIG_MIXED)
                mixed = true;
            if (n->gpu && n->gpus.mig_strategy == GS_MIG_SINGLE)
                single = true;
        } else {
            if (e.code == GS_ERR_NOMEM)
                return -1;
            /* the message without the "Node <name>: " prefix the GPU layer adds */
            const char *field = e.path;
            const char *colon = strstr(field, ": ");
            field = colon ? colon + 2 : "";
            n->build_error = gs_arena_printf(c->arena, "%s%s%s", field, field[0] ? ": " : "", e.msg);
            if (!n->build_error)
                return -1;
            n->gpu = true; /* only GPU resources and labels can make an inventory fail */
        }
        if (n->gpu)
            c->ngpu_nodes++;
    }
    if (c->cfg->mig_strategy != GS_CHECK_MIG_INFER) {
        c->mig_strategy = c->cfg->mig_strategy;
    } else if (c->ngpu_nodes) {
        c->mig_strategy = mixed ? GS_CHECK_MIG_MIXED : single ? GS_CHECK_MIG_SINGLE : GS_CHECK_MIG_NONE;
        c->mig_strategy_inferred = true;
    } else {
        c->mig_strategy = GS_CHECK_MIG_INFER; /* unknown: nothing to compare with */
    }
    return build_taintsets(c);
}

/* "Kind\x1fns\x1fname" for the owner index */
static int32_t owner_key(gs_intern *t, gs_strbuf *sb, const char *kind, const char *ns, const char *name,
                         bool insert)
{
    gs_strbuf_reset(sb);
    gs_strbuf_puts(sb, kind);
    gs_strbuf_putc(sb, '\x1f');
    gs_strbuf_puts(sb, ns);
    gs_strbuf_putc(sb, '\x1f');
    gs_strbuf_puts(sb, name);
    if (sb->oom)
        return -2;
    return insert ? gs_intern_id(t, gs_strbuf_cstr(sb), sb->len) : gs_intern_find(t, gs_strbuf_cstr(sb), sb->len);
}

static void init_subject(ck_ctx *c, ck_subject *sj, const gs_pod *pod, uint32_t obj, bool daemonset,
                         const char *workload_name, const gs_labels *labels2)
{
    memset(sj, 0, sizeof *sj);
    sj->pod = pod;
    sj->obj = obj;
    sj->labels2 = labels2;
    sj->daemonset = daemonset;
    gs_error e;
    gs_error_clear(&e);
    if (gs_gpu_request_from_pod(pod, &sj->req, &e) != 0) {
        sj->req_error = gs_arena_strdup(c->arena, e.msg);
        if (!sj->req_error)
            c->failed = true;
        memset(&sj->req, 0, sizeof sj->req);
        sj->gpu = true;
    } else {
        sj->gpu = sj->req.kind != GS_GPU_NONE;
    }
    /* claims: GPUs when a request of theirs names a GPU class (dra.h "GPU claims", the one
     * rule); a claim or template not in the input cannot be told */
    if (pod->nclaims) {
        sj->dra_gpu = c->dra ? gs_dra_pod_gpu_requests(c->dra, pod) : 0;
        sj->gpu |= sj->dra_gpu > 0;
        for (uint32_t i = 0; i < pod->nclaims; i++) {
            const gs_pod_claim *pc = &pod->claims[i];
            bool needed = pc->claim_name[0] || (pc->template_name[0] && pc->status_claim);
            if (needed && !(c->dra && gs_dra_pod_claim_spec(c->dra, pod, i)))
                sj->dra_unknown++;
        }
    }
    if (daemonset)
        sj->daemon = ck_daemon_of(pod, workload_name, labels2);
}

static int build_subjects(ck_ctx *c)
{
    const gs_snapshot *s = c->snap;
    size_t cap = s->workloads.n + s->pods.n;
    if (!cap)
        return 0;
    c->subjects = calloc(cap, sizeof *c->subjects);
    if (!c->subjects)
        return -1;
    gs_intern owners;
    gs_intern_init(&owners);
    gs_strbuf key = GS_STRBUF_INIT;
    int rc = 0;
    for (size_t i = 0; i < s->workloads.n && rc == 0; i++) {
        const gs_workload *w = &s->workloads.v[i];
        if (owner_key(&owners, &key, w->kind, w->meta.namespace_, w->meta.name, true) < 0)
            rc = -1;
    }
    /* workloads whose controller is in the input (a ReplicaSet of a Deployment) are
     * represented by it */
    for (size_t i = 0; i < s->workloads.n && rc == 0; i++) {
        const gs_workload *w = &s->workloads.v[i];
        if (w->meta.owner_kind && w->meta.owner_name) {
            int32_t id = owner_key(&owners, &key, w->meta.owner_kind, w->meta.namespace_, w->meta.owner_name, false);
            if (id == -2) {
                rc = -1;
                break;
            }
            if (id >= 0)
                continue;
        }
        uint32_t obj = ck_add_object(c, w->kind, w->meta.namespace_, object_name(&w->meta), w->meta.src,
                                     &w->meta.annotations, &w->template_.meta.annotations);
        if (obj == UINT32_MAX) {
            rc = -1;
            break;
        }
        init_subject(c, &c->subjects[c->nsubjects++], &w->template_, obj, !strcmp(w->kind, "DaemonSet"),
                     w->meta.name, &w->meta.labels);
    }
    for (size_t i = 0; i < s->pods.n && rc == 0; i++) {
        const gs_pod *p = &s->pods.v[i];
        if (p->workload)
            continue; /* expanded from a workload of the input */
        if (p->meta.owner_kind && p->meta.owner_name) {
            int32_t id = owner_key(&owners, &key, p->meta.owner_kind, p->meta.namespace_, p->meta.owner_name, false);
            if (id == -2) {
                rc = -1;
                break;
            }
            if (id >= 0)
                continue;
        }
        uint32_t obj = ck_add_object(c, "Pod", p->meta.namespace_, object_name(&p->meta), p->meta.src,
                                     &p->meta.annotations, NULL);
        if (obj == UINT32_MAX) {
            rc = -1;
            break;
        }
        bool ds = p->meta.owner_kind && !strcmp(p->meta.owner_kind, "DaemonSet");
        init_subject(c, &c->subjects[c->nsubjects++], p, obj, ds, p->meta.owner_name ? p->meta.owner_name : "",
                     NULL);
    }
    gs_strbuf_free(&key);
    gs_intern_free(&owners);
    return rc;
}

static int build_other_objects(ck_ctx *c)
{
    const gs_snapshot *s = c->snap;
    if (s->priority_classes.n) {
        c->pc_obj = gs_arena_alloc(c->arena, s->priority_classes.n * sizeof *c->pc_obj);
        if (!c->pc_obj)
            return -1;
    }
    for (size_t i = 0; i < s->priority_classes.n; i++) {
        const gs_priority_class *pc = &s->priority_classes.v[i];
        c->has_global_default |= pc->global_default;
        c->pc_obj[i] = ck_add_object(c, "PriorityClass", "", pc->meta.name, pc->meta.src, &pc->meta.annotations,
                                     NULL);
        if (c->pc_obj[i] == UINT32_MAX)
            return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- ordering */
int gs_finding_cmp(const void *pa, const void *pb)
{
    const gs_finding *a = pa, *b = pb;
    int r = gs_src_cmp(&a->src, &b->src);
    if (!r)
        r = strcmp(a->rule->id, b->rule->id);
    if (!r)
        r = strcmp(a->message, b->message);
    if (!r)
        r = strcmp(a->kind, b->kind);
    if (!r)
        r = strcmp(a->namespace_, b->namespace_);
    if (!r)
        r = strcmp(a->name, b->name);
    return r;
}

static int object_cmp(const void *pa, const void *pb)
{
    const gs_check_object *a = pa, *b = pb;
    int r = gs_src_cmp(&a->src, &b->src);
    if (!r)
        r = strcmp(a->kind, b->kind);
    if (!r)
        r = strcmp(a->namespace_, b->namespace_);
    if (!r)
        r = strcmp(a->name, b->name);
    return r;
}

/* ---------------------------------------------------------------- entry point */
int gs_check_run(const gs_snapshot *snap, const gs_check_config *cfg, gs_check_result *out,
                 gs_error *err)
{
    memset(out, 0, sizeof *out);
    gs_arena_init(&out->arena, 64 * 1024);
    if (!snap || !cfg)
        return gs_fail(err, GS_ERR_INTERNAL, "gs_check_run: snapshot and config are required");
    ck_ctx c;
    memset(&c, 0, sizeof c);
    c.snap = snap;
    c.cfg = cfg;
    c.arena = &out->arena;
    c.err = err;
    c.mig_strategy = cfg->mig_strategy; /* build_nodes infers it when configured "auto" */
    c.dra_cluster = snap->device_classes.n || snap->resource_slices.n;

    int rc = 0;
    if (snap->device_classes.n || snap->claims.n || snap->claim_templates.n || snap->resource_slices.n) {
        c.dra = gs_dra_index_new(snap);
        if (!c.dra)
            rc = -1;
    }
    if (rc != 0 || build_other_objects(&c) < 0 || build_nodes(&c) < 0 || build_subjects(&c) < 0 || c.failed) {
        rc = -1;
    } else {
        ck_rules_node(&c);
        ck_rules_request(&c);
        ck_rules_taint(&c);
        ck_rules_daemon(&c);
        ck_rules_quota(&c);
        ck_rules_priority(&c);
        ck_rules_dra(&c);
        if (c.failed)
            rc = -1;
    }
    if (rc == 0) {
        if (c.findings.n) {
            out->findings = gs_arena_memdup(&out->arena, c.findings.v, c.findings.n * sizeof *c.findings.v);
            if (!out->findings)
                rc = -1;
            else {
                out->nfindings = (uint32_t)c.findings.n;
                qsort(out->findings, out->nfindings, sizeof *out->findings, gs_finding_cmp);
            }
        }
        if (rc == 0 && c.objects.n) {
            out->checked = gs_arena_alloc(&out->arena, c.objects.n * sizeof *out->checked);
            if (!out->checked)
                rc = -1;
            else {
                for (size_t i = 0; i < c.objects.n; i++) {
                    const ck_object *o = &c.objects.v[i];
                    out->checked[i] = (gs_check_object){o->kind, o->ns, o->name, o->src, o->rules};
                }
                out->nchecked = (uint32_t)c.objects.n;
                out->objects = out->nchecked;
                qsort(out->checked, out->nchecked, sizeof *out->checked, object_cmp);
            }
        }
    }
    for (uint32_t i = 0; i < c.nnodes; i++)
        gs_node_gpus_free(&c.nodes[i].gpus);
    free(c.nodes);
    free(c.subjects);
    gs_dra_index_free(c.dra);
    gs_vec_free(c.objects);
    gs_vec_free(c.findings);
    gs_vec_free(c.finding_obj);
    if (rc != 0) {
        gs_check_result_free(out);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory while checking");
    }
    return 0;
}

void gs_check_result_free(gs_check_result *r)
{
    if (!r)
        return;
    gs_arena_free(&r->arena);
    memset(r, 0, sizeof *r);
}
