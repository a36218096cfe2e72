/*
 * policy.c - named engine policies: each fills a gs_config.
 *
 *   default  kube-scheduler defaults: LeastAllocated over cpu and memory (weights 1),
 *            TaintToleration 3, NodeAffinity 2, NodeResourcesFit 1, BalancedAllocation 1,
 *            plus gpusched's GPUShareBinpack 2 for GPU shares
 *   binpack  MostAllocated over cpu 1, memory 1, nvidia.com/gpu 3: fill nodes and GPUs
 *            before starting new ones (fewer fragmented GPUs, more whole nodes free)
 *   spread   LeastAllocated over cpu 1, memory 1, nvidia.com/gpu 3: spread GPU work
 *   rtcr     RequestedToCapacityRatio with shape {0:0, 100:10} over cpu, memory and
 *            nvidia.com/gpu 3 (upstream's documented bin-packing configuration)
 * The simulator adds its own FGD-paper policies on top of these.
 */
#include <string.h>

#include "gpusched/engine.h"

static const gs_policy_info policies[] = {
    {"default", "kube-scheduler defaults (LeastAllocated cpu/memory) + GPU share binpacking"},
    {"binpack", "MostAllocated over cpu, memory and GPUs: fill started nodes and GPUs first"},
    {"spread", "LeastAllocated over cpu, memory and GPUs: spread GPU work across nodes"},
    {"rtcr", "RequestedToCapacityRatio {0:0,100:10} over cpu, memory and GPUs"},
    {NULL, NULL},
};

const gs_policy_info *gs_policies(uint32_t *count)
{
    if (count)
        *count = (uint32_t)(sizeof policies / sizeof policies[0]) - 1;
    return policies;
}

void gs_config_defaults(gs_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->policy = "default";
    cfg->strategy = GS_STRATEGY_LEAST_ALLOCATED;
    cfg->resources[0] = (gs_score_resource){"cpu", 1};
    cfg->resources[1] = (gs_score_resource){"memory", 1};
    cfg->nresources = 2;
    cfg->w_taint = 3;
    cfg->w_affinity = 2;
    cfg->w_fit = 1;
    cfg->w_balanced = 1;
    cfg->w_gpu_binpack = 2;
    cfg->preemption = true;
    cfg->quota = true;
    cfg->percentage_of_nodes_to_score = 0;
    cfg->seed = 0;
}

int gs_config_policy(gs_config *cfg, const char *name, gs_error *err)
{
    gs_config_defaults(cfg);
    if (strcmp(name, "default") == 0)
        return 0;
    if (strcmp(name, "binpack") == 0 || strcmp(name, "spread") == 0 ||
        strcmp(name, "rtcr") == 0) {
        cfg->policy = strcmp(name, "binpack") == 0 ? "binpack"
                      : strcmp(name, "spread") == 0 ? "spread"
                                                    : "rtcr";
        cfg->strategy = name[0] == 'b'   ? GS_STRATEGY_MOST_ALLOCATED
                        : name[0] == 's' ? GS_STRATEGY_LEAST_ALLOCATED
                                         : GS_STRATEGY_REQUESTED_TO_CAPACITY_RATIO;
        cfg->resources[2] = (gs_score_resource){"nvidia.com/gpu", 3};
        cfg->nresources = 3;
        if (name[0] == 'r') {
            cfg->shape[0] = (gs_shape_point){0, 0};
            cfg->shape[1] = (gs_shape_point){100, 10};
            cfg->nshape = 2;
        }
        return 0;
    }
    return gs_fail(err, GS_ERR_NOTFOUND,
                   "unknown policy \"%s\" (expected one of: default, binpack, spread, rtcr)", name);
}
