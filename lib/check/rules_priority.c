/*
 * rules_priority.c - priorities of GPU workloads (GS023-GS025; k8s-semantics 5).
 *
 *   GS023 gpu-workload-without-priority-class  a GPU workload with no priorityClassName
 *         while the input has no globalDefault PriorityClass: it runs at priority 0 (or at
 *         its spec.priority), so who preempts whom among GPU workloads is left to chance.
 *         A KAI-Scheduler workload may name its class with the label priorityClassName
 *         (on the workload or its pod template), which KAI reads
 *   GS024 priority-class-unknown  a priorityClassName that is neither system-node-critical,
 *         system-cluster-critical nor a PriorityClass of the input, when the input has
 *         PriorityClasses: the Priority admission plugin rejects the pod
 *   GS025 inference-cannot-preempt-training  a GPU inference workload whose priority is not
 *         above the highest-priority GPU training workload, or whose preemption policy is
 *         Never; and PriorityClasses named for inference whose value is not above every
 *         class named for training
 *
 * Roles: the label roleLabel (default gpusched.io/role) on the workload or its pod
 * template, with value inference | serving | online (inference) or training | train |
 * batch | offline (training); without the label, the object's name, split at '-', '_'
 * and '.', containing a token inference | infer | serving | serve | predictor | predict
 * (inference) or train | training | trainer | finetune | finetuning | pretrain |
 * pretraining (training), but not both; then the same test on its PriorityClass name.
 * Priorities resolve as admission does: the class's value (system classes included),
 * else spec.priority, else the global default's value, else 0.
 */
#include <stdio.h>
#include <string.h>

#include "check/check_int.h"

typedef enum role { ROLE_NONE = 0, ROLE_INFERENCE, ROLE_TRAINING } role;

static bool ieq(const char *a, size_t n, const char *b)
{
    if (strlen(b) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((a[i] | 0x20) != b[i])
            return false;
    return true;
}

static role role_of_value(const char *v)
{
    static const char *const inf[] = {"inference", "serving", "online"};
    static const char *const train[] = {"training", "train", "batch", "offline"};
    if (!v)
        return ROLE_NONE;
    for (size_t i = 0; i < sizeof inf / sizeof *inf; i++)
        if (ieq(v, strlen(v), inf[i]))
            return ROLE_INFERENCE;
    for (size_t i = 0; i < sizeof train / sizeof *train; i++)
        if (ieq(v, strlen(v), train[i]))
            return ROLE_TRAINING;
    return ROLE_NONE;
}

static role role_of_name(const char *name)
{
    static const char *const inf[] = {"inference", "infer", "serving", "serve", "predictor", "predict"};
    static const char *const train[] = {"train", "training", "trainer", "finetune", "finetuning",
                                        "pretrain", "pretraining"};
    bool is_inf = false, is_train = false;
    const char *p = name;
    while (p && *p) {
        size_t n = strcspn(p, "-_.");
        for (size_t i = 0; i < sizeof inf / sizeof *inf; i++)
            is_inf |= ieq(p, n, inf[i]);
        for (size_t i = 0; i < sizeof train / sizeof *train; i++)
            is_train |= ieq(p, n, train[i]);
        p += n;
        if (*p)
            p++;
    }
    if (is_inf == is_train)
        return ROLE_NONE;
    return is_inf ? ROLE_INFERENCE : ROLE_TRAINING;
}

static role subject_role(const ck_ctx *c, const ck_subject *s, const char **how)
{
    const char *label = c->cfg->role_label;
    if (label) {
        const char *v = s->labels2 ? gs_labels_get(s->labels2, label) : NULL;
        if (!v)
            v = gs_labels_get(&s->pod->meta.labels, label);
        role r = role_of_value(v);
        if (r) {
            *how = "by its role label";
            return r;
        }
    }
    role r = role_of_name(c->objects.v[s->obj].name);
    if (r) {
        *how = "by its name";
        return r;
    }
    r = role_of_name(s->pod->priority_class_name);
    *how = "by its PriorityClass name";
    return r;
}

static bool is_system_class(const char *name)
{
    return !strcmp(name, "system-node-critical") || !strcmp(name, "system-cluster-critical");
}

/* ---------------------------------------------------------------- GS023, GS024 */
static void check_class(ck_ctx *c, const ck_subject *s)
{
    const gs_pod *p = s->pod;
    const char *pc = p->priority_class_name;
    if (s->gpu) {
        ck_checked(c, s->obj, CK_GPU_WORKLOAD_WITHOUT_PRIORITY);
        /* KAI-Scheduler reads the class from a priorityClassName label on the workload or
         * its pods, and orders and preempts by it */
        bool kai = ck_is_kai(s);
        const char *kai_class = kai ? ck_label(s, CK_KAI_PRIORITY_LABEL) : NULL;
        if (!pc[0] && !c->has_global_default && !(kai_class && kai_class[0])) {
            char what[160], prio[48] = "priority 0";
            ck_describe_request(s, what, sizeof what);
            if (p->has_priority)
                snprintf(prio, sizeof prio, "priority %d", (int)p->priority);
            const char *dflt = c->cfg->default_gpu_priority_class;
            ck_report(c, CK_GPU_WORKLOAD_WITHOUT_PRIORITY, s->obj,
                      "asks for %s without a priorityClassName: it runs at %s like any other pod, so which GPU "
                      "workloads preempt which is left to chance; set a PriorityClass%s%s%s%s",
                      what, prio, dflt ? " (the gpusched webhook would set " : "", dflt ? dflt : "",
                      dflt ? ")" : "",
                      kai ? " (KAI-Scheduler also reads it from the label priorityClassName on the workload or "
                            "its pods)"
                          : "");
        }
    }
    if (!c->snap->priority_classes.n || !pc[0] || is_system_class(pc))
        return;
    ck_checked(c, s->obj, CK_PRIORITY_CLASS_UNKNOWN);
    int32_t prio;
    gs_preempt_policy policy;
    if (!gs_priority_resolve(c->snap->priority_classes.v, c->snap->priority_classes.n, pc, &prio, &policy))
        ck_report(c, CK_PRIORITY_CLASS_UNKNOWN, s->obj,
                  "priorityClassName \"%s\" names no PriorityClass of the input: the Priority admission plugin "
                  "rejects %s (no PriorityClass with name %s was found)",
                  pc, s->pod->workload ? "every pod it creates" : "the pod", pc);
}

/* ---------------------------------------------------------------- GS025 */
typedef struct ranked {
    uint32_t subject;
    int32_t prio;
    gs_preempt_policy policy;
    const char *how;
} ranked;

static void check_roles(ck_ctx *c)
{
    /* the highest-priority training workload (first in subject order on ties) */
    bool have_train = false;
    ranked top = {0, 0, GS_PREEMPT_LOWER_PRIORITY, NULL};
    for (uint32_t i = 0; i < c->nsubjects; i++) {
        const ck_subject *s = &c->subjects[i];
        const char *how;
        if (!s->gpu || subject_role(c, s, &how) != ROLE_TRAINING)
            continue;
        ranked r = {i, 0, GS_PREEMPT_LOWER_PRIORITY, how};
        if (!ck_pod_priority(c, s->pod, &r.prio, &r.policy))
            continue;
        ck_checked(c, s->obj, CK_INFERENCE_CANNOT_PREEMPT);
        if (!have_train || r.prio > top.prio) {
            top = r;
            have_train = true;
        }
    }
    for (uint32_t i = 0; i < c->nsubjects && !c->failed; i++) {
        const ck_subject *s = &c->subjects[i];
        const char *how;
        if (!s->gpu || subject_role(c, s, &how) != ROLE_INFERENCE)
            continue;
        int32_t prio;
        gs_preempt_policy policy;
        if (!ck_pod_priority(c, s->pod, &prio, &policy))
            continue;
        ck_checked(c, s->obj, CK_INFERENCE_CANNOT_PREEMPT);
        if (!have_train)
            continue;
        const ck_object *t = &c->objects.v[c->subjects[top.subject].obj];
        if (policy == GS_PREEMPT_NEVER)
            ck_report(c, CK_INFERENCE_CANNOT_PREEMPT, s->obj,
                      "is latency-sensitive inference (%s) but its preemption policy is Never: when training "
                      "(%s %s%s%s, priority %d) holds the GPUs it waits instead of preempting it; use a "
                      "PriorityClass with preemptionPolicy PreemptLowerPriority",
                      how, t->kind, t->ns, t->ns[0] ? "/" : "", t->name, (int)top.prio);
        else if (prio <= top.prio)
            ck_report(c, CK_INFERENCE_CANNOT_PREEMPT, s->obj,
                      "is latency-sensitive inference (%s) at priority %d, not above training %s %s%s%s (%s, "
                      "priority %d): when GPUs run out it cannot preempt best-effort training and waits; give "
                      "inference a PriorityClass with a higher value than every training class",
                      how, (int)prio, t->kind, t->ns, t->ns[0] ? "/" : "", t->name, top.how, (int)top.prio);
    }

    /* PriorityClasses named for a role */
    const gs_snapshot *snap = c->snap;
    const gs_priority_class *top_class = NULL;
    for (size_t i = 0; i < snap->priority_classes.n; i++) {
        const gs_priority_class *pc = &snap->priority_classes.v[i];
        if (role_of_name(pc->meta.name) == ROLE_TRAINING && (!top_class || pc->value > top_class->value))
            top_class = pc;
    }
    for (size_t i = 0; i < snap->priority_classes.n && !c->failed; i++) {
        const gs_priority_class *pc = &snap->priority_classes.v[i];
        role r = role_of_name(pc->meta.name);
        if (r == ROLE_NONE)
            continue;
        uint32_t obj = c->pc_obj[i];
        ck_checked(c, obj, CK_INFERENCE_CANNOT_PREEMPT);
        if (r != ROLE_INFERENCE || !top_class)
            continue;
        if (pc->preemption_policy == GS_PREEMPT_NEVER)
            ck_report(c, CK_INFERENCE_CANNOT_PREEMPT, obj,
                      "is an inference class (by its name) with preemptionPolicy Never: its pods never preempt "
                      "training (class %s, value %d); use PreemptLowerPriority",
                      top_class->meta.name, (int)top_class->value);
        else if (pc->value <= top_class->value)
            ck_report(c, CK_INFERENCE_CANNOT_PREEMPT, obj,
                      "is an inference class (by its name) with value %d, not above the training class %s (value "
                      "%d): inference pods cannot preempt training pods; raise its value above every training "
                      "class",
                      (int)pc->value, top_class->meta.name, (int)top_class->value);
    }
}

void ck_rules_priority(ck_ctx *c)
{
    for (uint32_t i = 0; i < c->nsubjects && !c->failed; i++)
        check_class(c, &c->subjects[i]);
    if (!c->failed)
        check_roles(c);
}
