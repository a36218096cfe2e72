/*
 * registry.c - the one table of check rules: stable id, name, default severity, summary,
 * doc page and whether the rule needs other objects of the input.
 *
 * Ids are stable: a rule is never renumbered or reused; a retired rule would keep its
 * row. The index of a row is the rule index of check_int.h (CK_*) and of the
 * per-rule arrays of gs_check_config. docs/rules/README.md mirrors this table.
 */
#include <string.h>

#include "check/check_int.h"

#define RULE(id, name, sev, cross, summary) {id, name, sev, summary, "docs/rules/" id ".md", cross}

static const gs_rule_info rules[CK_RULE_COUNT] = {
    RULE("GS001", "gpu-node-untainted", GS_SEV_ERROR, false,
         "GPU node without a NoSchedule taint that keeps ordinary pods off it"),
    RULE("GS002", "gpu-node-missing-labels", GS_SEV_WARNING, false,
         "GPU node without the pool labels scheduling and cost reports depend on"),
    RULE("GS003", "gpu-node-inventory-invalid", GS_SEV_ERROR, false,
         "GPU node whose advertised resources and labels describe no possible GPU inventory"),
    RULE("GS004", "gpu-node-devices-missing", GS_SEV_ERROR, false,
         "GPU node that advertises fewer GPUs than it has (device plugin down or GPUs unhealthy)"),
    RULE("GS005", "mig-reconfig-failed", GS_SEV_ERROR, false,
         "MIG reconfiguration failed or left the GPU daemons paused"),
    RULE("GS006", "time-slicing-without-memory-isolation", GS_SEV_WARNING, false,
         "GPUs shared by time-slicing, which cannot limit each pod's GPU memory"),
    RULE("GS007", "gpu-request-without-limit", GS_SEV_ERROR, false,
         "extended resource (GPU) requested without a limit: the API server rejects the pod"),
    RULE("GS008", "gpu-request-limit-mismatch", GS_SEV_ERROR, false,
         "extended resource (GPU) request different from its limit: the API server rejects the pod"),
    RULE("GS009", "gpu-request-not-integer", GS_SEV_ERROR, false,
         "fractional or negative amount of an extended resource such as nvidia.com/gpu"),
    RULE("GS010", "mig-resource-unknown", GS_SEV_ERROR, false,
         "MIG resource name that no GPU model offers"),
    RULE("GS011", "mig-strategy-mismatch", GS_SEV_ERROR, true,
         "GPU resource name that does not match the cluster's MIG strategy"),
    RULE("GS012", "gpu-scheduler-mismatch", GS_SEV_ERROR, false,
         "fractional-GPU convention whose scheduler is not the pod's schedulerName"),
    RULE("GS013", "gpu-request-invalid", GS_SEV_ERROR, false,
         "contradictory or impossible GPU request (two conventions, several MIG profiles, ...)"),
    RULE("GS014", "gpu-request-unplaceable", GS_SEV_ERROR, true,
         "GPU request that no GPU node in the input can ever hold"),
    RULE("GS015", "gpu-share-memory-unenforced", GS_SEV_WARNING, false,
         "GPU share whose memory limit nothing enforces"),
    RULE("GS016", "gpu-workload-untolerated", GS_SEV_ERROR, true,
         "GPU workload that tolerates none of the GPU node taints: it can never run"),
    RULE("GS017", "non-gpu-workload-tolerates-gpu", GS_SEV_WARNING, true,
         "workload without GPUs that tolerates the GPU taint (or every taint): it takes GPU nodes"),
    RULE("GS018", "toleration-invalid", GS_SEV_ERROR, false,
         "toleration the API server rejects"),
    RULE("GS019", "gpu-daemon-untolerated", GS_SEV_ERROR, true,
         "GPU daemon that does not tolerate the GPU taint: the node's GPUs silently vanish"),
    RULE("GS020", "gpu-daemon-not-critical", GS_SEV_WARNING, false,
         "GPU daemon without the system-node-critical PriorityClass"),
    RULE("GS021", "gpu-namespace-without-quota", GS_SEV_WARNING, true,
         "namespace running GPU workloads without a ResourceQuota on the GPU keys they use"),
    RULE("GS022", "quota-key-not-enforced", GS_SEV_ERROR, false,
         "ResourceQuota key that Kubernetes does not enforce (limits.nvidia.com/gpu, nvidia.com/gpu)"),
    RULE("GS023", "gpu-workload-without-priority-class", GS_SEV_WARNING, true,
         "GPU workload without a PriorityClass"),
    RULE("GS024", "priority-class-unknown", GS_SEV_ERROR, true,
         "priorityClassName that names no PriorityClass of the input: admission rejects the pod"),
    RULE("GS025", "inference-cannot-preempt-training", GS_SEV_WARNING, true,
         "latency-sensitive inference cannot preempt best-effort training"),
    RULE("GS026", "suppression-invalid", GS_SEV_WARNING, false,
         "gpusched.io/suppress entry without a reason or with an unknown rule"),
    RULE("GS027", "dra-device-class-unknown", GS_SEV_ERROR, true,
         "claim request naming a DeviceClass that the cluster input does not have"),
    RULE("GS028", "dra-claim-unknown", GS_SEV_ERROR, true,
         "pod claim naming a ResourceClaim or ResourceClaimTemplate that the cluster input does not have"),
    RULE("GS029", "dra-selector-unsatisfiable", GS_SEV_ERROR, true,
         "device request (or DeviceClass) whose selectors no published device satisfies"),
    RULE("GS030", "dra-selector-invalid", GS_SEV_ERROR, false,
         "CEL device selector that does not compile: the API server rejects the object"),
    RULE("GS031", "gpu-device-plugin-and-dra", GS_SEV_WARNING, true,
         "pod asking GPUs through both the device plugin (nvidia.com/gpu) and a DRA claim"),
    RULE("GS032", "dra-request-exceeds-node", GS_SEV_ERROR, true,
         "device request for more devices than any one node publishes"),
};

_Static_assert(CK_RULE_COUNT <= 64, "gs_check_config holds 64 rules");

const gs_rule_info *gs_rules(uint32_t *count)
{
    if (count)
        *count = CK_RULE_COUNT;
    return rules;
}

const gs_rule_info *gs_rule_find(const char *id_or_name)
{
    if (!id_or_name)
        return NULL;
    for (uint32_t i = 0; i < CK_RULE_COUNT; i++) {
        /* ids case-insensitively ("gs001" works), names exactly */
        const char *id = rules[i].id, *s = id_or_name;
        size_t k = 0;
        while (id[k] && s[k] && (id[k] == s[k] || (id[k] >= 'A' && id[k] <= 'Z' && id[k] + 32 == s[k])))
            k++;
        if (!id[k] && !s[k])
            return &rules[i];
        if (!strcmp(rules[i].name, id_or_name))
            return &rules[i];
    }
    return NULL;
}

const char *gs_severity_name(gs_severity s)
{
    switch (s) {
    case GS_SEV_INFO: return "info";
    case GS_SEV_WARNING: return "warning";
    case GS_SEV_ERROR: return "error";
    }
    return "unknown";
}

int gs_severity_parse(const char *s, gs_severity *out)
{
    if (!s)
        return -1;
    if (!strcmp(s, "info") || !strcmp(s, "note")) {
        *out = GS_SEV_INFO;
        return 0;
    }
    if (!strcmp(s, "warning")) {
        *out = GS_SEV_WARNING;
        return 0;
    }
    if (!strcmp(s, "error")) {
        *out = GS_SEV_ERROR;
        return 0;
    }
    return -1;
}
