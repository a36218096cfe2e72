/*
 * rules_daemon.c - the NVIDIA node daemons a GPU node cannot do without (GS019, GS020).
 *
 * A DaemonSet (or a Pod owned by a DaemonSet) is a GPU daemon when, checked in this order:
 *  1. its name, or its label app / app.kubernetes.io/name / app.kubernetes.io/component
 *     (on the DaemonSet or its pod template), contains
 *       "gpu-feature-discovery"              -> gpu-feature-discovery
 *       "dcgm-exporter"                      -> DCGM exporter
 *       "mig-manager"                        -> MIG manager
 *       "device-plugin" together with "nvidia" -> NVIDIA device plugin
 *       "gpusched-agent", or the labels app.kubernetes.io/name=gpusched together with
 *       app.kubernetes.io/component=agent              -> gpusched's node agent
 *  2. a container image's repository name (the last path segment, without tag or digest)
 *     is one of k8s-device-plugin / nvidia-device-plugin (device plugin),
 *     gpu-feature-discovery, dcgm-exporter, k8s-mig-manager / mig-manager.
 * Names come first because the device-plugin image also runs gpu-feature-discovery.
 * Matching is case-insensitive.
 *
 *   GS019 gpu-daemon-untolerated  it does not tolerate every GPU taint of the input's GPU
 *                                 nodes (or, without GPU nodes, every configured GPU taint
 *                                 key): the DaemonSet controller skips those nodes
 *   GS020 gpu-daemon-not-critical its priorityClassName is not system-node-critical
 */
#include <stdio.h>
#include <string.h>

#include "check/check_int.h"

static const struct {
    ck_daemon d;
    const char *name;        /* for messages */
    const char *consequence; /* what vanishes when it does not run */
} daemons[] = {
    {CK_DAEMON_NONE, "", ""},
    {CK_DAEMON_DEVICE_PLUGIN, "the NVIDIA device plugin",
     "the node's GPUs are never advertised to the scheduler (they silently vanish)"},
    {CK_DAEMON_FEATURE_DISCOVERY, "gpu-feature-discovery",
     "the node's GPU labels (product, memory, MIG strategy) go missing and GPU pods that select them stay pending"},
    {CK_DAEMON_DCGM_EXPORTER, "the DCGM exporter", "the node's GPU metrics and health signals silently vanish"},
    {CK_DAEMON_MIG_MANAGER, "the MIG manager",
     "MIG configurations are never applied there and its MIG devices silently vanish or go stale"},
    {CK_DAEMON_GPUSCHED_AGENT, "the gpusched node agent",
     "the node's GPUs are never advertised to the scheduler (they silently vanish), with their labels and metrics"},
};

const char *ck_daemon_name(ck_daemon d)
{
    return (unsigned)d < sizeof daemons / sizeof *daemons ? daemons[d].name : "";
}

static bool icontains(const char *s, const char *needle)
{
    size_t n = strlen(needle);
    for (; s && *s; s++) {
        size_t k = 0;
        while (k < n && s[k] && (s[k] | 0x20) == (needle[k] | 0x20))
            k++;
        if (k == n)
            return true;
    }
    return false;
}

static ck_daemon daemon_of_name(const char *s)
{
    if (!s || !*s)
        return CK_DAEMON_NONE;
    if (icontains(s, "gpu-feature-discovery"))
        return CK_DAEMON_FEATURE_DISCOVERY;
    if (icontains(s, "dcgm-exporter"))
        return CK_DAEMON_DCGM_EXPORTER;
    if (icontains(s, "mig-manager"))
        return CK_DAEMON_MIG_MANAGER;
    if (icontains(s, "device-plugin") && icontains(s, "nvidia"))
        return CK_DAEMON_DEVICE_PLUGIN;
    if (icontains(s, "gpusched-agent"))
        return CK_DAEMON_GPUSCHED_AGENT;
    return CK_DAEMON_NONE;
}

static bool ieq(const char *a, size_t an, const char *b)
{
    size_t bn = strlen(b);
    if (an != bn)
        return false;
    for (size_t i = 0; i < an; i++)
        if ((a[i] | 0x20) != (b[i] | 0x20))
            return false;
    return true;
}

static ck_daemon daemon_of_image(const char *image)
{
    if (!image || !*image)
        return CK_DAEMON_NONE;
    size_t end = strcspn(image, "@"); /* digest */
    size_t start = 0;
    for (size_t i = 0; i < end; i++)
        if (image[i] == '/')
            start = i + 1;
    const char *colon = memchr(image + start, ':', end - start); /* tag (after the last '/') */
    if (colon)
        end = (size_t)(colon - image);
    const char *repo = image + start;
    size_t n = end - start;
    if (ieq(repo, n, "k8s-device-plugin") || ieq(repo, n, "nvidia-device-plugin"))
        return CK_DAEMON_DEVICE_PLUGIN;
    if (ieq(repo, n, "gpu-feature-discovery"))
        return CK_DAEMON_FEATURE_DISCOVERY;
    if (ieq(repo, n, "dcgm-exporter"))
        return CK_DAEMON_DCGM_EXPORTER;
    if (ieq(repo, n, "k8s-mig-manager") || ieq(repo, n, "mig-manager"))
        return CK_DAEMON_MIG_MANAGER;
    return CK_DAEMON_NONE;
}

ck_daemon ck_daemon_of(const gs_pod *p, const char *workload_name, const gs_labels *labels2)
{
    static const char *const keys[] = {"app", "app.kubernetes.io/name", "app.kubernetes.io/component"};
    ck_daemon d = daemon_of_name(workload_name);
    const gs_labels *lists[2] = {labels2, &p->meta.labels};
    for (int l = 0; l < 2 && !d; l++)
        for (size_t k = 0; k < sizeof keys / sizeof *keys && !d && lists[l]; k++)
            d = daemon_of_name(gs_labels_get(lists[l], keys[k]));
    for (int l = 0; l < 2 && !d; l++) { /* deploy/agent's labels */
        const char *name = lists[l] ? gs_labels_get(lists[l], "app.kubernetes.io/name") : NULL;
        const char *comp = lists[l] ? gs_labels_get(lists[l], "app.kubernetes.io/component") : NULL;
        if (name && comp && strcmp(name, "gpusched") == 0 && strcmp(comp, "agent") == 0)
            d = CK_DAEMON_GPUSCHED_AGENT;
    }
    for (uint32_t pass = 0; pass < 2 && !d; pass++) {
        const gs_container *cs = pass ? p->init_containers : p->containers;
        uint32_t n = pass ? p->ninit : p->ncontainers;
        for (uint32_t i = 0; i < n && !d; i++)
            d = daemon_of_image(cs[i].image);
    }
    return d;
}

static void check_daemon_tolerations(ck_ctx *c, const ck_subject *s)
{
    ck_checked(c, s->obj, CK_GPU_DAEMON_UNTOLERATED);
    char missing[512];
    size_t o = 0;
    missing[0] = '\0';
    uint32_t n = 0;
    if (c->ntaintsets) {
        /* every distinct GPU taint of the input, once */
        for (uint32_t k = 0; k < c->ntaintsets; k++)
            for (uint32_t j = 0; j < c->taintsets[k].n; j++) {
                const gs_taint *t = c->taintsets[k].taints[j];
                if (ck_pod_tolerates(c, s, t))
                    continue;
                char text[200];
                snprintf(text, sizeof text, "%s%s%s:%s", t->key, t->value[0] ? "=" : "", t->value,
                         gs_effect_name(t->effect));
                if (strstr(missing, text))
                    continue;
                int w = snprintf(missing + o, sizeof missing - o, "%s%s", o ? ", " : "", text);
                if (w > 0)
                    o = o + (size_t)w < sizeof missing ? o + (size_t)w : sizeof missing - 1;
                n++;
            }
    } else if (!c->ngpu_nodes) {
        for (uint32_t k = 0; k < c->cfg->ngpu_taint_keys; k++) {
            const char *key = c->cfg->gpu_taint_keys[k];
            if (ck_pod_tolerates_key(c, s, key))
                continue;
            int w = snprintf(missing + o, sizeof missing - o, "%s%s", o ? ", " : "", key);
            if (w > 0)
                o = o + (size_t)w < sizeof missing ? o + (size_t)w : sizeof missing - 1;
            n++;
        }
    }
    if (!n)
        return;
    ck_report(c, CK_GPU_DAEMON_UNTOLERATED, s->obj,
              "is %s but does not tolerate the GPU taint%s %s: the DaemonSet controller creates no pod on the "
              "tainted GPU nodes, so %s; add the toleration {key: %s, operator: Exists}",
              ck_daemon_name(s->daemon), n == 1 ? "" : "s", missing, daemons[s->daemon].consequence,
              c->cfg->gpu_taint_keys[0]);
}

static void check_daemon_priority(ck_ctx *c, const ck_subject *s)
{
    ck_checked(c, s->obj, CK_GPU_DAEMON_NOT_CRITICAL);
    const char *pc = s->pod->priority_class_name;
    if (!strcmp(pc, "system-node-critical"))
        return;
    ck_report(c, CK_GPU_DAEMON_NOT_CRITICAL, s->obj,
              "is %s but its priorityClassName is %s%s%s: the kubelet evicts it before node-critical pods under "
              "resource pressure and the scheduler may preempt it, and then %s; set priorityClassName: "
              "system-node-critical",
              ck_daemon_name(s->daemon), pc[0] ? "\"" : "", pc[0] ? pc : "empty", pc[0] ? "\"" : "",
              daemons[s->daemon].consequence);
}

void ck_rules_daemon(ck_ctx *c)
{
    for (uint32_t i = 0; i < c->nsubjects && !c->failed; i++) {
        const ck_subject *s = &c->subjects[i];
        if (!s->daemonset || s->daemon == CK_DAEMON_NONE)
            continue;
        check_daemon_tolerations(c, s);
        check_daemon_priority(c, s);
    }
}
