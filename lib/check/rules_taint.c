/*
 * rules_taint.c - taints and tolerations of GPU and non-GPU workloads (GS016-GS018).
 *
 *   GS016 gpu-workload-untolerated   a GPU pod that tolerates the GPU taints of none of the
 *                                    GPU nodes of the input its selectors allow: it never
 *                                    runs; without GPU nodes in the input, a warning when
 *                                    it tolerates none of the configured GPU taint keys
 *                                    (the taint is then an assumption: neither the GPU
 *                                    Operator nor the device plugin adds one)
 *   GS017 non-gpu-workload-tolerates-gpu  a pod without GPUs whose tolerations (a GPU key,
 *                                    or an empty key with Exists: every taint) let it onto
 *                                    GPU nodes, and whose selectors do not keep it off them;
 *                                    DaemonSets are exempt (one pod per node by design);
 *                                    a pod whose GPUs come from DRA claims is a GPU pod
 *                                    (dra.h "GPU claims"), and one with a claim that is not
 *                                    in the input is not judged (it may be a GPU claim)
 *   GS018 toleration-invalid         what the API server's toleration validation rejects
 *                                    (k8s-semantics 1.3)
 *
 * Matching is gs_toleration_tolerates(), the engine's matcher (comparison-operator gate
 * off). Only the taints with a configured GPU key and effect NoSchedule or NoExecute
 * count as GPU taints, as in the engine's explain. With extendedResourceToleration, GPU
 * pods also get the tolerations the ExtendedResourceToleration admission plugin adds.
 */
#include <stdio.h>
#include <string.h>

#include "check/check_int.h"

#define SETS_SHOWN 3

static void taint_text(const gs_taint *t, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s%s:%s", t->key, t->value[0] ? "=" : "", t->value, gs_effect_name(t->effect));
}

static void taintset_text(const ck_taintset *ts, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < ts->n && o < cap; i++) {
        char t[200];
        taint_text(ts->taints[i], t, sizeof t);
        int n = snprintf(buf + o, cap - o, "%s%s", i ? " + " : "", t);
        if (n < 0)
            return;
        o += (size_t)n;
    }
}

/* ---------------------------------------------------------------- GS016 */
/*
 * With GPU nodes in the input: among the GPU nodes the pod's nodeSelector and required
 * affinity select, is there one whose GPU taints it all tolerates? Nodes are visited in
 * input order and the answer per taint set is computed once, so a pod that tolerates
 * stops at its first selected node. A pod that selects no GPU node is GS014's business.
 */
typedef struct set_count {
    uint32_t set, nodes;
} set_count;

static void check_gpu_untolerated(ck_ctx *c, const ck_subject *s)
{
    char what[160], hint[256];
    ck_describe_request(s, what, sizeof what);
    snprintf(hint, sizeof hint, "add the toleration {key: %s, operator: Exists, effect: NoSchedule}",
             c->cfg->gpu_taint_keys[0]);
    ck_checked(c, s->obj, CK_GPU_WORKLOAD_UNTOLERATED);
    if (c->ngpu_nodes) {
        enum { UNKNOWN = 0, YES, NO };
        uint8_t known[64] = {0};
        set_count shown[SETS_SHOWN];
        uint32_t nshown = 0, selected = 0, more = 0;
        for (uint32_t i = 0; i < c->nnodes; i++) {
            const ck_node *n = &c->nodes[i];
            if (!n->gpu || !gs_pod_selects_node(s->pod, n->node))
                continue;
            selected++;
            uint32_t ts = n->taintset;
            uint8_t v = ts < 64 ? known[ts] : UNKNOWN;
            if (v == UNKNOWN) {
                v = ck_pod_tolerates_set(c, s, &c->taintsets[ts]) ? YES : NO;
                if (ts < 64)
                    known[ts] = v;
            }
            if (v == YES)
                return;
            uint32_t k = 0;
            while (k < nshown && shown[k].set != ts)
                k++;
            if (k < nshown)
                shown[k].nodes++;
            else if (nshown < SETS_SHOWN)
                shown[nshown++] = (set_count){ts, 1};
            else
                more++;
        }
        if (!selected)
            return;
        char sets[700];
        size_t o = 0;
        sets[0] = '\0';
        for (uint32_t i = 0; i < nshown && o < sizeof sets; i++) {
            char t[300];
            taintset_text(&c->taintsets[shown[i].set], t, sizeof t);
            int w = snprintf(sets + o, sizeof sets - o, "%s%s on %u node%s", i ? "; " : "", t, shown[i].nodes,
                             shown[i].nodes == 1 ? "" : "s");
            if (w > 0)
                o = o + (size_t)w < sizeof sets ? o + (size_t)w : sizeof sets - 1;
        }
        if (more && o < sizeof sets)
            snprintf(sets + o, sizeof sets - o, "; other taints on %u more node%s", more, more == 1 ? "" : "s");
        char which[64];
        if (selected == 1)
            snprintf(which, sizeof which, "the one GPU node it selects");
        else
            snprintf(which, sizeof which, "any of the %u GPU nodes it selects", selected);
        ck_report(c, CK_GPU_WORKLOAD_UNTOLERATED, s->obj,
                  "asks for %s but does not tolerate the GPU taints of %s (%s): it can never be scheduled; %s",
                  what, which, sets, hint);
        return;
    }
    for (uint32_t k = 0; k < c->cfg->ngpu_taint_keys; k++)
        if (ck_pod_tolerates_key(c, s, c->cfg->gpu_taint_keys[k]))
            return;
    /* Without nodes the taint is an assumption: neither the GPU Operator nor the device
     * plugin taints GPU nodes (GKE does, administrators may), so a warning at most. */
    ck_report_at_most(c, CK_GPU_WORKLOAD_UNTOLERATED, s->obj, GS_SEV_WARNING,
                      "asks for %s but tolerates no GPU taint key (%s%s): if the GPU nodes carry the taint "
                      "%s:NoSchedule it can never be scheduled on them (no GPU node is in the input to tell; "
                      "administrators and GKE add that taint, the NVIDIA GPU Operator and device plugin do not); "
                      "%s, or check it together with the nodes",
                      what, c->cfg->gpu_taint_keys[0], c->cfg->ngpu_taint_keys > 1 ? ", ..." : "",
                      c->cfg->gpu_taint_keys[0], hint);
}

/* ---------------------------------------------------------------- GS017 */
/* The first toleration that matches a GPU taint (by the taints of the input, or by the
 * configured keys when there are no GPU nodes); -1 when none. */
static int gpu_toleration(const ck_ctx *c, const gs_pod *p)
{
    for (uint32_t i = 0; i < p->ntolerations; i++) {
        const gs_toleration *t = &p->tolerations[i];
        if (c->ntaintsets) {
            for (uint32_t k = 0; k < c->ntaintsets; k++)
                for (uint32_t j = 0; j < c->taintsets[k].n; j++)
                    if (gs_toleration_tolerates(t, c->taintsets[k].taints[j], false))
                        return (int)i;
            continue;
        }
        for (uint32_t k = 0; k < c->cfg->ngpu_taint_keys; k++) {
            const char *key = c->cfg->gpu_taint_keys[k];
            if (key && (gs_toleration_tolerates_key(t, key, GS_EFFECT_NO_SCHEDULE, false) ||
                        gs_toleration_tolerates_key(t, key, GS_EFFECT_NO_EXECUTE, false)))
                return (int)i;
        }
    }
    return -1;
}

/* Can the pod land on some GPU node of the input (taints tolerated, selectors match)? */
static bool reaches_gpu_node(const ck_ctx *c, const ck_subject *s)
{
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const ck_node *n = &c->nodes[i];
        if (!n->gpu || (c->ntaintsets && !ck_pod_tolerates_set(c, s, &c->taintsets[n->taintset])))
            continue;
        if (gs_pod_selects_node(s->pod, n->node))
            return true;
    }
    return false;
}

static void check_non_gpu_tolerates(ck_ctx *c, const ck_subject *s)
{
    ck_checked(c, s->obj, CK_NON_GPU_WORKLOAD_TOLERATES_GPU);
    int i = gpu_toleration(c, s->pod);
    if (i < 0)
        return;
    if (c->ngpu_nodes && !reaches_gpu_node(c, s))
        return; /* its selectors keep it off every GPU node */
    const gs_toleration *t = &s->pod->tolerations[i];
    const char *op = t->op_raw[0] ? t->op_raw : "Equal";
    const char *effect = t->effect == GS_EFFECT_ANY ? "" : gs_effect_name(t->effect);
    if (!t->key[0])
        ck_report(c, CK_NON_GPU_WORKLOAD_TOLERATES_GPU, s->obj,
                  "asks for no GPU but tolerates every taint (tolerations[%d]: empty key, operator %s%s%s): it "
                  "can be scheduled onto GPU nodes and take the CPU, memory and pod slots GPU pods need; "
                  "tolerate only the taints it needs, or keep it off GPU nodes with node affinity",
                  i, op, effect[0] ? ", effect " : "", effect);
    else
        ck_report(c, CK_NON_GPU_WORKLOAD_TOLERATES_GPU, s->obj,
                  "asks for no GPU but tolerates the GPU taint %s (tolerations[%d]: operator %s%s%s): it can be "
                  "scheduled onto GPU nodes and take the CPU, memory and pod slots GPU pods need; remove the "
                  "toleration or keep it off GPU nodes with node affinity",
                  t->key, i, op, effect[0] ? ", effect " : "", effect);
}

/* ---------------------------------------------------------------- GS018 */
static const char *tolerations_path(const ck_ctx *c, const ck_subject *s)
{
    const char *kind = c->objects.v[s->obj].kind;
    if (!strcmp(kind, "Pod"))
        return "spec.tolerations";
    if (!strcmp(kind, "CronJob"))
        return "spec.jobTemplate.spec.template.spec.tolerations";
    return "spec.template.spec.tolerations";
}

static void check_tolerations_valid(ck_ctx *c, const ck_subject *s)
{
    ck_checked(c, s->obj, CK_TOLERATION_INVALID);
    const gs_pod *p = s->pod;
    const char *path = tolerations_path(c, s);
    for (uint32_t i = 0; i < p->ntolerations; i++) {
        const gs_toleration *t = &p->tolerations[i];
        if (t->key[0] && !gs_is_qualified_name(t->key))
            ck_report(c, CK_TOLERATION_INVALID, s->obj,
                      "%s[%u].key: Invalid value: \"%.100s\": must be a qualified name (an optional DNS "
                      "subdomain and '/', then at most 63 alphanumerics, '-', '_' or '.', alphanumeric at both "
                      "ends); the API server rejects it",
                      path, i, t->key);
        if (!t->key[0] && t->op != GS_TOL_EXISTS && t->op != GS_TOL_OTHER)
            ck_report(c, CK_TOLERATION_INVALID, s->obj,
                      "%s[%u].operator: Invalid value: \"%s\": operator must be Exists when `key` is empty, which "
                      "means \"match all values and all keys\"; the API server rejects it",
                      path, i, t->op_raw[0] ? t->op_raw : "Equal");
        if (t->op == GS_TOL_OTHER || t->op == GS_TOL_LT || t->op == GS_TOL_GT)
            ck_report(c, CK_TOLERATION_INVALID, s->obj,
                      "%s[%u].operator: Unsupported value: \"%.40s\": supported values: \"Equal\", \"Exists\"%s; "
                      "the API server rejects it",
                      path, i, t->op_raw,
                      t->op == GS_TOL_OTHER ? "" : " (Lt and Gt need the alpha TaintTolerationComparisonOperators gate)");
        if (t->op == GS_TOL_EXISTS && t->value[0])
            ck_report(c, CK_TOLERATION_INVALID, s->obj,
                      "%s[%u].operator: Invalid value: \"Exists\": value must be empty when `operator` is "
                      "'Exists' (it has value \"%.63s\"); the API server rejects it",
                      path, i, t->value);
        if (t->op == GS_TOL_EQUAL && !gs_is_label_value(t->value))
            ck_report(c, CK_TOLERATION_INVALID, s->obj,
                      "%s[%u].value: Invalid value: \"%.100s\": must be a valid label value (at most 63 "
                      "alphanumerics, '-', '_' or '.', alphanumeric at both ends); the API server rejects it",
                      path, i, t->value);
        if (t->effect == GS_EFFECT_INVALID)
            ck_report(c, CK_TOLERATION_INVALID, s->obj,
                      "%s[%u].effect: Unsupported value: supported values: \"NoSchedule\", \"PreferNoSchedule\", "
                      "\"NoExecute\"; the API server rejects it",
                      path, i);
        if (t->has_seconds && t->effect != GS_EFFECT_NO_EXECUTE)
            ck_report(c, CK_TOLERATION_INVALID, s->obj,
                      "%s[%u].effect: Invalid value: \"%s\": effect must be 'NoExecute' when `tolerationSeconds` "
                      "is set; the API server rejects it",
                      path, i, gs_effect_name(t->effect));
    }
}

void ck_rules_taint(ck_ctx *c)
{
    for (uint32_t i = 0; i < c->nsubjects && !c->failed; i++) {
        const ck_subject *s = &c->subjects[i];
        check_tolerations_valid(c, s);
        if (s->pod->node_name[0])
            continue; /* bound: the scheduler's taint filter no longer applies */
        if (s->gpu)
            check_gpu_untolerated(c, s);
        else if (!s->daemonset && !s->dra_unknown)
            check_non_gpu_tolerates(c, s); /* claims not in the input may be GPUs: silent */
    }
}
