/*
 * replay.h - time-ordered replay of a workload on a cluster with the engine's own
 * decisions: arrivals, departures, a pending queue in the engine's order, retries when
 * capacity frees, priority preemption (victims requeued or lost), namespace quotas,
 * taints and affinity. The simulator's `replay` method and its reports build on this.
 *
 * Time is in integer seconds (any epoch). Each snapshot pod has an arrival time and a
 * duration (run time once started); pods already bound in the snapshot are present from
 * the start and run for their duration from time 0 (or forever).
 *
 * Ownership: gs_replay_result arrays are malloc'ed by gs_replay_run and released with
 * gs_replay_result_free(). The snapshot must outlive the result (pods are referenced by
 * index).
 */
#ifndef GPUSCHED_REPLAY_H
#define GPUSCHED_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "gpusched/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GS_REPLAY_FOREVER INT64_MAX
#define GS_REPLAY_MAX_AUTO_SAMPLES 20000

typedef struct gs_replay_opts {
    gs_config cfg;            /* engine configuration (policy, preemption, quota, seed) */
    bool requeue_preempted;   /* victims go back to the queue (true) or are lost */
    int64_t sample_every;     /* seconds between allocation samples; 0 = the arrival span
                               * / 1000, at least 1 s, and coarser when that would give more
                               * than GS_REPLAY_MAX_AUTO_SAMPLES up to the last departure */
    int64_t horizon;          /* stop at this time; 0 = when no event is left */
    /* MIG: static (layouts as given) or dynamic: when a pod asking for a MIG profile stays
     * pending, an idle MIG GPU where it would fit is re-partitioned for it; the GPU offers
     * nothing for mig_delay seconds, then its new instances (docs/simulate-replay.md) */
    bool mig_dynamic;
    int64_t mig_delay;        /* seconds a re-partition takes (default 120) */
} gs_replay_opts;

void gs_replay_opts_defaults(gs_replay_opts *o);

typedef enum gs_replay_state {
    GS_RP_NOT_ARRIVED = 0,
    GS_RP_PENDING,      /* arrived, waiting in the queue */
    GS_RP_RUNNING,
    GS_RP_DONE,         /* ran for its duration and departed */
    GS_RP_REJECTED,     /* refused at admission (quota, unknown PriorityClass, invalid) */
    GS_RP_LOST,         /* preempted and not requeued */
} gs_replay_state;

typedef struct gs_replay_pod {
    uint32_t pod;          /* snapshot index */
    gs_replay_state state; /* at the end of the replay */
    int32_t priority;
    int64_t arrival;
    int64_t duration;      /* GS_REPLAY_FOREVER = never departs */
    int64_t first_start;   /* first bind time, -1 never */
    int64_t last_start;    /* latest bind time, -1 never */
    int64_t end;           /* departure or loss time, -1 none */
    int64_t waited;        /* total seconds spent pending (all queue stays) */
    uint32_t preemptions;  /* times it was preempted */
    int32_t node;          /* snapshot node of its last placement, -1 none */
    const char *reason;    /* last failure/rejection message while pending, or NULL */
} gs_replay_pod;

typedef struct gs_replay_sample {
    int64_t t;
    double gpus_allocated;  /* whole GPUs + shares + MIG (compute fraction), in GPUs */
    uint32_t nodes_used;    /* nodes with at least one pod */
    uint32_t gpu_nodes_used;/* GPU nodes with at least one GPU allocated */
    uint32_t running;
    uint32_t pending;
    uint32_t gpus_stranded; /* whole GPUs left idle on nodes whose cpu or memory is full */
    /* compute slices of the MIG-enabled GPUs (all 0 when the cluster has none):
     * used + idle + unpartitioned = the result's mig_slices */
    uint32_t mig_used;      /* in instances allocated to pods */
    uint32_t mig_idle;      /* in instances nobody uses */
    uint32_t mig_unpartitioned; /* in no instance (GPUs being re-partitioned included) */
    uint32_t mig_reconfiguring; /* GPUs being re-partitioned */
} gs_replay_sample;

typedef struct gs_replay_result {
    gs_replay_pod *pods;       /* one per snapshot pod, snapshot order */
    uint32_t npods;
    gs_replay_sample *samples;
    uint32_t nsamples;
    uint32_t preemptions;      /* victims evicted */
    uint32_t quota_rejections;
    uint32_t other_rejections;
    uint32_t gpus_total;       /* physical GPUs in the cluster */
    uint32_t gpu_nodes;        /* nodes with GPUs (device plugin or DRA: the engine's inventory) */
    int64_t end_time;
    uint64_t schedule_attempts;/* full scheduling cycles run */
    uint32_t mig_gpus;         /* MIG-enabled GPUs */
    uint32_t mig_slices;       /* their compute slices */
    uint32_t mig_reconfigs;    /* re-partitions started (dynamic MIG) */
    bool mig_dynamic;          /* the options' MIG policy and delay, for the reports */
    int64_t mig_delay;
    struct gs_intern *strings_;/* owns the reason strings (internal) */
} gs_replay_result;

/* arrival[i] / duration[i] for snapshot pod i (INT64_MIN arrival = present at start).
 * Returns 0, or -1 with err (inputs inconsistent, out of memory). */
int gs_replay_run(const gs_snapshot *snap, const int64_t *arrival, const int64_t *duration,
                  const gs_replay_opts *opts, gs_replay_result *out, gs_error *err);
void gs_replay_result_free(gs_replay_result *r);

#ifdef __cplusplus
}
#endif
#endif
