/*
 * rules_node.c - rules on GPU nodes (GS001-GS006).
 *
 * A node is a GPU node when the GPU layer says so (gs_node_gpus.gpu_node: GPU capacity,
 * MIG resources, gpushare/openb resources, nvidia.com/gpu.present=true, a product or
 * count label), exactly as the engine decides it; a node whose inventory cannot be built
 * is one too (only GPU data can make it fail).
 *
 *   GS001 gpu-node-untainted      no NoSchedule/NoExecute taint with a configured GPU key
 *   GS002 gpu-node-missing-labels pool labels (and MIG labels on MIG nodes) absent
 *   GS003 gpu-node-inventory-invalid  gs_node_gpus_build failed, MIG devices on a product
 *                                     that has no MIG, or GFD's <model>-MIG-INVALID product
 *   GS004 gpu-node-devices-missing    labelled GPU node with no GPUs advertised, or fewer
 *                                      allocatable GPUs than it has
 *   GS005 mig-reconfig-failed     nvidia.com/mig.config.state=failed, or GPU daemons left
 *                                 paused-for-mig-change
 *   GS006 time-slicing-without-memory-isolation  time-sliced GPUs (replicas > 1)
 */
#include <stdio.h>
#include <string.h>

#include "check/check_int.h"

#define MIG_STATE "nvidia.com/mig.config.state"
#define MIG_CONFIG "nvidia.com/mig.config"
#define DEPLOY_PREFIX "nvidia.com/gpu.deploy."
#define PAUSED "paused-for-mig-change"

/* "nvidia.com/gpu" or "nvidia.com/gpu or dedicated" */
static void keys_text(const ck_ctx *c, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < c->cfg->ngpu_taint_keys && o < cap; i++) {
        int n = snprintf(buf + o, cap - o, "%s%s", i ? " or " : "", c->cfg->gpu_taint_keys[i]);
        if (n < 0)
            break;
        o += (size_t)n;
    }
}

/* "8 GPUs, NVIDIA-A100-SXM4-80GB" / "14 MIG instances on 2 GPUs, ..." */
static void node_gpu_text(const ck_node *n, char *buf, size_t cap)
{
    if (!n->built) {
        snprintf(buf, cap, "GPU resources");
        return;
    }
    const gs_node_gpus *g = &n->gpus;
    size_t o = 0;
    if (g->nmig)
        o += (size_t)snprintf(buf, cap, "%u MIG instance%s on %u GPU%s", g->nmig, g->nmig == 1 ? "" : "s",
                              g->ndevs, g->ndevs == 1 ? "" : "s");
    else if (g->ndevs)
        o += (size_t)snprintf(buf, cap, "%u GPU%s", g->ndevs, g->ndevs == 1 ? "" : "s");
    else
        o += (size_t)snprintf(buf, cap, "GPU labels");
    if (o < cap && g->model && g->model[0])
        snprintf(buf + o, cap - o, ", %s", g->model);
}

static void check_taint(ck_ctx *c, const ck_node *n)
{
    const gs_node *node = n->node;
    ck_checked(c, n->obj, CK_GPU_NODE_UNTAINTED);
    const gs_taint *prefer = NULL;
    for (uint32_t i = 0; i < node->ntaints; i++) {
        const gs_taint *t = &node->taints[i];
        if (ck_is_gpu_taint(c, t))
            return;
        if (t->effect == GS_EFFECT_PREFER_NO_SCHEDULE && ck_is_gpu_taint_key(c, t->key))
            prefer = t;
    }
    const gs_taint *other = gs_node_custom_noschedule_taint(node);
    char keys[256], gpus[160], hint[400] = "";
    keys_text(c, keys, sizeof keys);
    node_gpu_text(n, gpus, sizeof gpus);
    if (prefer)
        snprintf(hint, sizeof hint, " (its %.200s taint is PreferNoSchedule, which only discourages them)",
                 prefer->key);
    else if (other)
        snprintf(hint, sizeof hint,
                 " (it has the NoSchedule taint %.120s%s%.60s: if that key marks GPU nodes in this cluster, add "
                 "it to gpuTaintKeys or pass --gpu-taint-key %.120s)",
                 other->key, other->value && other->value[0] ? "=" : "", other->value ? other->value : "",
                 other->key);
    ck_report(c, CK_GPU_NODE_UNTAINTED, n->obj,
              "GPU node (%s) has no NoSchedule taint with key %s%s: pods that ask for no GPU can be "
              "scheduled on it and take the CPU and memory GPU pods need; taint it, e.g. %s=present:NoSchedule",
              gpus, keys, hint, c->cfg->gpu_taint_keys[0]);
}

/* Is one of the '|'-separated alternatives of `entry` a label of the node? */
static bool has_label_entry(const gs_labels *labels, const char *entry)
{
    const char *p = entry;
    while (*p) {
        size_t n = strcspn(p, "|");
        char key[320];
        if (n > 0 && n < sizeof key) {
            memcpy(key, p, n);
            key[n] = '\0';
            if (gs_labels_get(labels, key))
                return true;
        }
        p += n;
        if (*p == '|')
            p++;
    }
    return false;
}

static void append_missing(char *buf, size_t cap, size_t *o, const char *entry)
{
    /* "a|b" reads "a (or b)" */
    const char *bar = strchr(entry, '|');
    int n;
    if (bar)
        n = snprintf(buf + *o, cap - *o, "%s%.*s (or %s)", *o ? ", " : "", (int)(bar - entry), entry, bar + 1);
    else
        n = snprintf(buf + *o, cap - *o, "%s%s", *o ? ", " : "", entry);
    if (n > 0)
        *o = *o + (size_t)n < cap ? *o + (size_t)n : cap - 1;
}

/* Is every alternative of `entry` a label gpu-feature-discovery writes (nvidia.com/...)? */
static bool gfd_entry(const char *entry)
{
    for (const char *p = entry; *p;) {
        if (strncmp(p, "nvidia.com/", 11) != 0)
            return false;
        p += strcspn(p, "|");
        if (*p == '|')
            p++;
    }
    return true;
}

static void check_labels(ck_ctx *c, const ck_node *n)
{
    const gs_labels *labels = &n->node->meta.labels;
    ck_checked(c, n->obj, CK_GPU_NODE_MISSING_LABELS);
    char missing[768];
    size_t o = 0;
    missing[0] = '\0';
    uint32_t count = 0;
    /* managed clouds (GKE, EKS, AKS) label the GPU model themselves and run no GFD: their
     * accelerator label stands for GFD's labels */
    bool cloud = gs_gpu_cloud_accelerator(labels, NULL) != NULL;
    for (uint32_t i = 0; i < c->cfg->npool_labels; i++)
        if (c->cfg->pool_labels[i] && !has_label_entry(labels, c->cfg->pool_labels[i]) &&
            !(cloud && gfd_entry(c->cfg->pool_labels[i]))) {
            append_missing(missing, sizeof missing, &o, c->cfg->pool_labels[i]);
            count++;
        }
    bool mig = n->built && (n->gpus.mig_strategy != GS_MIG_NONE || n->gpus.nmig > 0);
    for (uint32_t i = 0; mig && i < c->cfg->nmig_labels; i++)
        if (c->cfg->mig_labels[i] && !has_label_entry(labels, c->cfg->mig_labels[i])) {
            append_missing(missing, sizeof missing, &o, c->cfg->mig_labels[i]);
            count++;
        }
    if (count)
        ck_report(c, CK_GPU_NODE_MISSING_LABELS, n->obj,
                  "GPU node lacks the label%s %s that GPU pool scheduling and cost reports group nodes by "
                  "(gpu-feature-discovery, the cloud provider and the MIG configuration set them; is GFD "
                  "running on this node?)",
                  count == 1 ? "" : "s", missing);
}

static const char *gpu_label_signal(const gs_labels *labels, char *buf, size_t cap)
{
    static const char *const keys[] = {"nvidia.com/gpu.present", "nvidia.com/gpu.product",
                                       "nvidia.com/gpu.count", "alibabacloud.com/gpu-card-model"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        const char *v = gs_labels_get(labels, keys[i]);
        if (v) {
            snprintf(buf, cap, "%s=%.80s", keys[i], v);
            return buf;
        }
    }
    snprintf(buf, cap, "GPU labels");
    return buf;
}

static void check_devices(ck_ctx *c, const ck_node *n)
{
    if (!n->built)
        return;
    const gs_node_gpus *g = &n->gpus;
    ck_checked(c, n->obj, CK_GPU_NODE_DEVICES_MISSING);
    char sig[160];
    if (g->labels_only) {
        ck_report(c, CK_GPU_NODE_DEVICES_MISSING, n->obj,
                  "labelled as a GPU node (%s) but advertises no GPU resource in status.allocatable: the "
                  "NVIDIA device plugin is not running or not registered there, so its GPUs are invisible to "
                  "the scheduler",
                  gpu_label_signal(&n->node->meta.labels, sig, sizeof sig));
        return;
    }
    uint32_t unhealthy = 0;
    for (uint32_t i = 0; i < g->ndevs; i++)
        if (g->devs[i].flags & GS_DEV_UNHEALTHY)
            unhealthy++;
    if (unhealthy)
        ck_report(c, CK_GPU_NODE_DEVICES_MISSING, n->obj,
                  "only %u of its %u GPUs are allocatable: %u %s unhealthy or not advertised by the device "
                  "plugin (compare nvidia.com/gpu.count and status.capacity with status.allocatable)",
                  g->ndevs - unhealthy, g->ndevs, unhealthy, unhealthy == 1 ? "is" : "are");
}

static void check_mig_state(ck_ctx *c, const ck_node *n)
{
    const gs_labels *labels = &n->node->meta.labels;
    ck_checked(c, n->obj, CK_MIG_RECONFIG_FAILED);
    const char *state = gs_labels_get(labels, MIG_STATE);
    if (state && !strcmp(state, "failed")) {
        const char *want = gs_labels_get(labels, MIG_CONFIG);
        ck_report(c, CK_MIG_RECONFIG_FAILED, n->obj,
                  "MIG reconfiguration%s%s%s failed (%s=failed): the GPUs keep their old MIG layout or "
                  "none; read the mig-manager logs, fix the configuration and relabel the node",
                  want ? " to \"" : "", want ? want : "", want ? "\"" : "", MIG_STATE);
        return;
    }
    if (state && (!strcmp(state, "pending") || !strcmp(state, "rebooting")))
        return; /* the daemons are paused on purpose while the manager works */
    char paused[512];
    size_t o = 0;
    paused[0] = '\0';
    size_t plen = strlen(DEPLOY_PREFIX);
    for (uint32_t i = 0; i < labels->n; i++) {
        const gs_kv *kv = &labels->items[i];
        if (strncmp(kv->key, DEPLOY_PREFIX, plen) != 0 || strcmp(kv->val, PAUSED) != 0)
            continue;
        int k = snprintf(paused + o, sizeof paused - o, "%s%s", o ? ", " : "", kv->key + plen);
        if (k > 0)
            o = o + (size_t)k < sizeof paused ? o + (size_t)k : sizeof paused - 1;
    }
    if (o)
        ck_report(c, CK_MIG_RECONFIG_FAILED, n->obj,
                  "GPU daemons (%s) are left %s although %s is %s: they do not run, so the node's GPUs "
                  "vanish; restore their nvidia.com/gpu.deploy.* labels to true",
                  paused, PAUSED, MIG_STATE, state ? state : "absent");
}

/* Largest time-slicing replica count of a mixed-strategy MIG profile label
 * (nvidia.com/mig-<profile>.replicas). */
static int64_t mig_replicas(const gs_labels *labels)
{
    int64_t best = 1;
    for (uint32_t i = 0; i < labels->n; i++) {
        const char *k = labels->items[i].key;
        size_t n = strlen(k);
        if (strncmp(k, "nvidia.com/mig-", 15) != 0 || n < 9 || strcmp(k + n - 9, ".replicas") != 0)
            continue;
        int64_t v;
        const char *val = labels->items[i].val;
        if (gs_parse_i64(val, strlen(val), &v) == 0 && v > best)
            best = v;
    }
    return best;
}

static void check_time_slicing(ck_ctx *c, const ck_node *n)
{
    if (!n->built)
        return;
    const gs_node_gpus *g = &n->gpus;
    ck_checked(c, n->obj, CK_TIME_SLICING_NO_MEMORY_LIMIT);
    if (g->sharing == GS_SHARING_MPS || g->sharing == GS_SHARING_VGPU)
        return; /* MPS limits each client to 1/N of the memory, HAMi-core each vGPU's */
    uint32_t slots = 1, mem = 0;
    for (uint32_t i = 0; i < g->ndevs; i++) {
        if (g->devs[i].slots > slots)
            slots = g->devs[i].slots;
        if (g->devs[i].mem_mib > mem)
            mem = g->devs[i].mem_mib;
    }
    int64_t mig_rep = mig_replicas(&n->node->meta.labels);
    if (slots <= 1 && mig_rep <= 1)
        return;
    char memtext[48];
    if (mem)
        snprintf(memtext, sizeof memtext, "all %u MiB", mem);
    else
        snprintf(memtext, sizeof memtext, "all the memory");
    bool plain_name = !strcmp(g->resource, "nvidia.com/gpu");
    if (slots > 1)
        ck_report(c, CK_TIME_SLICING_NO_MEMORY_LIMIT, n->obj,
                  "time-slicing shares each GPU among %u pods with no GPU memory isolation: any of them can "
                  "allocate %s and make the others fail with out-of-memory errors; use MPS (a per-client "
                  "memory limit), MIG, or a scheduler that enforces memory (HAMi)%s",
                  slots, memtext,
                  plain_name ? "; the replicas are advertised as nvidia.com/gpu, so pods that ask for a whole "
                               "GPU get a slice (renameByDefault: true advertises nvidia.com/gpu.shared)"
                             : "");
    else
        ck_report(c, CK_TIME_SLICING_NO_MEMORY_LIMIT, n->obj,
                  "time-slicing shares each MIG instance among %lld pods with no memory isolation inside the "
                  "instance: any of them can allocate its whole memory and make the others fail; give each "
                  "pod its own MIG instance, or use smaller profiles",
                  (long long)mig_rep);
}

/* MIG devices advertised by a node whose product label names a GPU without MIG: the
 * inventory falls back to a model inferred from the profile names, which is a guess. */
static void check_mig_model(ck_ctx *c, const ck_node *n)
{
    const char *product = gs_labels_get(&n->node->meta.labels, "nvidia.com/gpu.product");
    if (!n->gpus.nmig || !product || !product[0] || gs_mig_model_find(product))
        return;
    ck_report(c, CK_GPU_NODE_INVENTORY_INVALID, n->obj,
              "advertises MIG devices, but its nvidia.com/gpu.product %s is not a MIG-capable GPU: the labels and "
              "the resources contradict each other (a stale label, or a device plugin from another node "
              "configuration)",
              product);
}

void ck_rules_node(ck_ctx *c)
{
    for (uint32_t i = 0; i < c->nnodes && !c->failed; i++) {
        const ck_node *n = &c->nodes[i];
        if (!n->gpu)
            continue;
        ck_checked(c, n->obj, CK_GPU_NODE_INVENTORY_INVALID);
        if (n->build_error)
            ck_report(c, CK_GPU_NODE_INVENTORY_INVALID, n->obj,
                      "its GPU inventory cannot be reconstructed from its resources and labels: %s",
                      n->build_error);
        else if (n->gpus.mig_invalid)
            ck_report(c, CK_GPU_NODE_INVENTORY_INVALID, n->obj,
                      "gpu-feature-discovery labels it %s: the MIG strategy is single, but its GPUs do not "
                      "all carry the same MIG layout (or some have MIG off), so the device plugin advertises "
                      "no GPU at all; apply one layout to every GPU (nvidia.com/mig.config, e.g. all-1g.10gb) "
                      "or run the device plugin and GFD with migStrategy mixed",
                      n->gpus.model && n->gpus.model[0] ? n->gpus.model : "<model>-MIG-INVALID");
        else
            check_mig_model(c, n);
        check_taint(c, n);
        check_labels(c, n);
        check_devices(c, n);
        check_mig_state(c, n);
        check_time_slicing(c, n);
    }
}
