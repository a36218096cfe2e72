/* test_replay_mig.c - MIG in the replay: static layouts against the dynamic policy that
 * re-partitions an idle GPU for a pending profile after a delay (replay.h), the idle-slice
 * accounting of the samples, and the GPU-level re-partition (gs_node_gpus_mig_relayout). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpusched/gpu.h"
#include "gpusched/replay.h"
#include "gpusched/report.h"
#include "gpusched/util.h"
#include "test_snapshot_util.h"

/* One H100 node, two GPUs cut into seven 1g.10gb each (mixed strategy). */
#define H100(taint)                                                                        \
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: h1\n  labels: {nvidia.com/gpu.product: " \
    "NVIDIA-H100-80GB-HBM3, nvidia.com/gpu.count: \"2\", nvidia.com/mig.strategy: mixed}\n"  \
    "spec: {" taint "}\nstatus:\n  allocatable: {cpu: \"64\", memory: 512Gi, pods: \"110\", " \
    "nvidia.com/mig-1g.10gb: \"14\"}\n---\n"
#define MIGPOD(name, profile)                                                              \
    "apiVersion: v1\nkind: Pod\nmetadata: {name: " name ", namespace: inf}\nspec:\n"        \
    "  containers:\n  - {name: c, resources: {limits: {cpu: \"1\", nvidia.com/mig-" profile \
    ": \"1\"}}}\n---\n"

typedef struct times {
    const char *pod;
    int64_t arrival, duration;
} times;

static void run(const gs_snapshot *s, const times *t, size_t nt, bool dynamic, int64_t delay,
                gs_replay_result *r)
{
    int64_t *arr = calloc(s->pods.n, sizeof *arr), *dur = calloc(s->pods.n, sizeof *dur);
    assert_non_null(arr);
    assert_non_null(dur);
    for (size_t i = 0; i < s->pods.n; i++) {
        arr[i] = 0;
        dur[i] = GS_REPLAY_FOREVER;
    }
    for (size_t i = 0; i < nt; i++) {
        uint32_t k = pod_index(s, t[i].pod);
        arr[k] = t[i].arrival;
        dur[k] = t[i].duration;
    }
    gs_replay_opts o;
    gs_replay_opts_defaults(&o);
    o.mig_dynamic = dynamic;
    o.mig_delay = delay;
    o.sample_every = 1;
    gs_error err;
    gs_error_clear(&err);
    if (gs_replay_run(s, arr, dur, &o, r, &err))
        fail_msg("replay: %s", err.msg);
    free(arr);
    free(dur);
}

/* used + idle + unpartitioned = every compute slice of the MIG GPUs, at every sample */
static void check_slices(const gs_replay_result *r)
{
    for (uint32_t i = 0; i < r->nsamples; i++) {
        const gs_replay_sample *x = &r->samples[i];
        assert_int_equal(x->mig_used + x->mig_idle + x->mig_unpartitioned, r->mig_slices);
    }
}

static const gs_replay_sample *sample_at(const gs_replay_result *r, int64_t t)
{
    const gs_replay_sample *best = NULL;
    for (uint32_t i = 0; i < r->nsamples; i++)
        if (r->samples[i].t <= t)
            best = &r->samples[i];
    assert_non_null(best);
    return best;
}

static void test_static_never_fits(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, H100("") MIGPOD("big", "7g.80gb"));
    times t[] = {{"big", 10, 100}};
    gs_replay_result r;
    run(&s, t, 1, false, 60, &r);
    const gs_replay_pod *big = &r.pods[pod_index(&s, "big")];
    assert_int_equal(big->state, GS_RP_PENDING);
    assert_int_equal(big->first_start, -1);
    assert_non_null(big->reason);
    assert_non_null(strstr(big->reason, "nvidia.com/mig-7g.80gb"));
    assert_int_equal(r.mig_gpus, 2);
    assert_int_equal(r.mig_slices, 14);
    assert_int_equal(r.mig_reconfigs, 0);
    check_slices(&r);
    gs_replay_result_free(&r);
    gs_snapshot_free(&s);
}

static void test_dynamic_repartitions_after_delay(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, H100("") MIGPOD("big", "7g.80gb"));
    times t[] = {{"big", 10, 100}};
    gs_replay_result r;
    run(&s, t, 1, true, 60, &r);
    const gs_replay_pod *big = &r.pods[pod_index(&s, "big")];
    assert_int_equal(big->state, GS_RP_DONE);
    assert_int_equal(big->first_start, 70);
    assert_int_equal(big->waited, 60);
    assert_int_equal(big->end, 170);
    assert_int_equal(r.mig_reconfigs, 1);
    assert_true(r.mig_dynamic);
    /* while re-partitioned, GPU 0 offers nothing: 7 slices in no instance */
    const gs_replay_sample *mid = sample_at(&r, 40);
    assert_int_equal(mid->mig_reconfiguring, 1);
    assert_int_equal(mid->mig_unpartitioned, 7);
    assert_int_equal(mid->mig_idle, 7);
    /* then the 7g instance runs the pod */
    const gs_replay_sample *on = sample_at(&r, 100);
    assert_int_equal(on->mig_reconfiguring, 0);
    assert_int_equal(on->mig_used, 7);
    assert_int_equal(on->mig_idle, 7);
    assert_int_equal(on->mig_unpartitioned, 0);
    check_slices(&r);
    gs_replay_result_free(&r);
    gs_snapshot_free(&s);
}

static void test_zero_delay(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, H100("") MIGPOD("big", "7g.80gb") MIGPOD("big2", "7g.80gb") MIGPOD("big3", "7g.80gb"));
    times t[] = {{"big", 10, 100}, {"big2", 10, 100}, {"big3", 10, 100}};
    gs_replay_result r;
    run(&s, t, 3, true, 0, &r);
    assert_int_equal(r.pods[pod_index(&s, "big")].first_start, 10);
    assert_int_equal(r.pods[pod_index(&s, "big2")].first_start, 10);
    /* two GPUs: the third waits for one to free, then takes it (already 7g: no new
     * re-partition) */
    assert_int_equal(r.pods[pod_index(&s, "big3")].first_start, 110);
    assert_int_equal(r.mig_reconfigs, 2);
    check_slices(&r);
    gs_replay_result_free(&r);
    gs_snapshot_free(&s);
}

/* A GPU with an instance in use is never re-partitioned, and the pods on the node's other
 * GPU keep their instances when the array of instances moves under them. */
static void test_busy_gpu_kept_and_assignments_follow(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, H100("") MIGPOD("f1", "1g.10gb") MIGPOD("f2", "1g.10gb") MIGPOD("f3", "1g.10gb")
                 MIGPOD("f4", "1g.10gb") MIGPOD("f5", "1g.10gb") MIGPOD("f6", "1g.10gb")
                     MIGPOD("f7", "1g.10gb") MIGPOD("small", "1g.10gb") MIGPOD("big", "7g.80gb")
                         MIGPOD("n1", "1g.10gb") MIGPOD("n2", "1g.10gb") MIGPOD("n3", "1g.10gb")
                             MIGPOD("n4", "1g.10gb") MIGPOD("n5", "1g.10gb")
                                 MIGPOD("n6", "1g.10gb") MIGPOD("n7", "1g.10gb"));
    /* f1..f7 fill GPU 0 until t=10, small takes an instance of GPU 1 until t=1000; big
     * arrives at 20: only GPU 0 is idle, it becomes one 7g (GPU 1's instances move down
     * the array). After small leaves, seven 1g pods must fit GPU 1 at once. */
    times t[] = {{"f1", 0, 10},     {"f2", 0, 10},       {"f3", 0, 10},     {"f4", 0, 10},
                 {"f5", 0, 10},     {"f6", 0, 10},       {"f7", 0, 10},     {"small", 0, 1000},
                 {"big", 20, 50},   {"n1", 1100, 10},    {"n2", 1100, 10},  {"n3", 1100, 10},
                 {"n4", 1100, 10},  {"n5", 1100, 10},    {"n6", 1100, 10},  {"n7", 1100, 10}};
    gs_replay_result r;
    run(&s, t, sizeof t / sizeof t[0], true, 30, &r);
    assert_int_equal(r.pods[pod_index(&s, "small")].first_start, 0);
    assert_int_equal(r.pods[pod_index(&s, "small")].end, 1000);
    assert_int_equal(r.pods[pod_index(&s, "big")].first_start, 50);
    const char *later[] = {"n1", "n2", "n3", "n4", "n5", "n6", "n7"};
    for (int i = 0; i < 7; i++) {
        const gs_replay_pod *p = &r.pods[pod_index(&s, later[i])];
        assert_int_equal(p->first_start, 1100);
        assert_int_equal(p->waited, 0);
    }
    assert_int_equal(r.mig_reconfigs, 1);
    /* while big runs: GPU 0 is one 7g (used), GPU 1 has small's instance used */
    const gs_replay_sample *on = sample_at(&r, 60);
    assert_int_equal(on->mig_used, 8);
    assert_int_equal(on->mig_idle, 6);
    check_slices(&r);
    gs_replay_result_free(&r);
    gs_snapshot_free(&s);
}

/* A GPU re-partitioned for a class that no longer needs it (its pod ran elsewhere in the
 * meantime) is taken by the next class at the very time it becomes ready. */
static void test_ready_gpu_goes_to_next_class(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, H100("")
             "apiVersion: v1\nkind: Node\nmetadata:\n  name: h2\n  labels: {nvidia.com/gpu.product: "
             "NVIDIA-H100-80GB-HBM3, nvidia.com/gpu.count: \"1\", nvidia.com/mig.strategy: mixed}\n"
             "status:\n  allocatable: {cpu: \"64\", memory: 512Gi, pods: \"110\", "
             "nvidia.com/mig-3g.40gb: \"2\"}\n---\n"
             MIGPOD("keep", "1g.10gb") MIGPOD("x", "3g.40gb") MIGPOD("y", "3g.40gb")
                 MIGPOD("a", "3g.40gb") MIGPOD("b", "7g.80gb"));
    /* keep holds h1's GPU 0, x and y h2's two 3g; a (3g) gets h1's GPU 1 re-partitioned
     * (ready at 60) but takes x's instance when x leaves at 30; b (7g) arrives at 50, finds
     * nothing idle, and must get GPU 1 when it is ready at 60 (ready at 60 + 60) */
    times t[] = {{"keep", 0, GS_REPLAY_FOREVER}, {"x", 0, 30}, {"y", 0, GS_REPLAY_FOREVER},
                 {"a", 0, 1000}, {"b", 50, 100}};
    gs_replay_result r;
    run(&s, t, 5, true, 60, &r);
    assert_int_equal(r.pods[pod_index(&s, "a")].first_start, 30);
    assert_int_equal(r.pods[pod_index(&s, "b")].first_start, 120);
    assert_int_equal(r.mig_reconfigs, 2);
    check_slices(&r);
    gs_replay_result_free(&r);
    gs_snapshot_free(&s);
}

/* Single strategy: every MIG instance is an nvidia.com/gpu; the replay counts its slices,
 * and the dynamic policy leaves such nodes alone (their product label names one profile). */
static void test_single_strategy(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, "apiVersion: v1\nkind: Node\nmetadata:\n  name: a1\n  labels: {nvidia.com/gpu.product: "
             "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb, nvidia.com/gpu.count: \"14\", "
             "nvidia.com/mig.strategy: single}\nstatus:\n  allocatable: {cpu: \"64\", memory: "
             "512Gi, pods: \"110\", nvidia.com/gpu: \"14\"}\n---\n"
             "apiVersion: v1\nkind: Pod\nmetadata: {name: w, namespace: inf}\nspec:\n  containers:\n"
             "  - {name: c, resources: {limits: {cpu: \"1\", nvidia.com/gpu: \"3\"}}}\n---\n"
             MIGPOD("big", "7g.40gb"));
    times t[] = {{"w", 0, 100}, {"big", 0, 100}};
    gs_replay_result r;
    run(&s, t, 2, true, 10, &r);
    assert_int_equal(r.mig_gpus, 2);
    assert_int_equal(r.mig_slices, 14);
    assert_int_equal(r.pods[pod_index(&s, "w")].first_start, 0);
    assert_int_equal(r.pods[pod_index(&s, "big")].state, GS_RP_PENDING);
    assert_int_equal(r.mig_reconfigs, 0);
    const gs_replay_sample *on = sample_at(&r, 50);
    assert_int_equal(on->mig_used, 3);
    assert_int_equal(on->mig_idle, 11);
    check_slices(&r);
    gs_replay_result_free(&r);
    gs_snapshot_free(&s);
}

/* A pod that would not pass the node's other filters gets no re-partition. */
static void test_filters_respected(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, H100("taints: [{key: nvidia.com/gpu, value: \"true\", effect: NoSchedule}]")
                 MIGPOD("big", "7g.80gb"));
    times t[] = {{"big", 10, 100}};
    gs_replay_result r;
    run(&s, t, 1, true, 60, &r);
    assert_int_equal(r.pods[pod_index(&s, "big")].state, GS_RP_PENDING);
    assert_int_equal(r.mig_reconfigs, 0);
    gs_replay_result_free(&r);
    gs_snapshot_free(&s);
}

/* Several pods of one profile: as many re-partitions as their instances need, no more. */
static void test_demand_bounds_repartitions(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, H100("") MIGPOD("m1", "3g.40gb") MIGPOD("m2", "3g.40gb") MIGPOD("m3", "3g.40gb"));
    times t[] = {{"m1", 0, 100}, {"m2", 0, 100}, {"m3", 5, 100}};
    gs_replay_result r;
    run(&s, t, 3, true, 20, &r);
    /* m1 and m2 arrive together: one GPU re-partitioned to two 3g.40gb (and one 1g.10gb
     * of its old instances); m3 then needs the second GPU */
    assert_int_equal(r.pods[pod_index(&s, "m1")].first_start, 20);
    assert_int_equal(r.pods[pod_index(&s, "m2")].first_start, 20);
    assert_int_equal(r.pods[pod_index(&s, "m3")].first_start, 25);
    assert_int_equal(r.mig_reconfigs, 2);
    check_slices(&r);
    gs_replay_result_free(&r);
    gs_snapshot_free(&s);
}

static void test_determinism_and_conservation(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, H100("") MIGPOD("a", "1g.10gb") MIGPOD("b", "3g.40gb") MIGPOD("c", "7g.80gb")
                 MIGPOD("d", "2g.20gb") MIGPOD("e", "4g.40gb") MIGPOD("f", "1g.20gb")
                     MIGPOD("g", "7g.80gb") MIGPOD("h", "3g.40gb"));
    times t[] = {{"a", 0, 300}, {"b", 10, 200}, {"c", 20, 100}, {"d", 30, 400},
                 {"e", 40, 50}, {"f", 50, 60},  {"g", 60, 70},  {"h", 70, 80}};
    gs_replay_result r1, r2;
    run(&s, t, 8, true, 15, &r1);
    run(&s, t, 8, true, 15, &r2);
    assert_int_equal(r1.npods, r2.npods);
    uint32_t done = 0;
    for (uint32_t i = 0; i < r1.npods; i++) {
        assert_int_equal(r1.pods[i].state, r2.pods[i].state);
        assert_int_equal(r1.pods[i].first_start, r2.pods[i].first_start);
        done += r1.pods[i].state == GS_RP_DONE;
    }
    assert_int_equal(done, 8); /* every profile of the H100 is eventually served */
    assert_int_equal(r1.mig_reconfigs, r2.mig_reconfigs);
    assert_int_equal(r1.nsamples, r2.nsamples);
    assert_memory_equal(r1.samples, r2.samples, r1.nsamples * sizeof *r1.samples);
    check_slices(&r1);
    gs_replay_result_free(&r1);
    gs_replay_result_free(&r2);
    gs_snapshot_free(&s);
}

/* Random workloads on nodes with different layouts: at every sample the slices add up,
 * and once every pod has left no instance is still marked in use (an assignment that did
 * not follow its instance across a re-partition would leave one behind, or free another's). */
static void test_random_invariants(void **state)
{
    (void)state;
    static const char *const profiles[] = {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb",
                                           "4g.40gb", "7g.80gb"};
    for (uint32_t seed = 1; seed <= 12; seed++) {
        gs_strbuf sb = GS_STRBUF_INIT;
        gs_strbuf_puts(&sb, H100(""));
        gs_strbuf_puts(&sb, "apiVersion: v1\nkind: Node\nmetadata:\n  name: h2\n  labels: "
                            "{nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3, nvidia.com/gpu.count: "
                            "\"2\", nvidia.com/mig.strategy: mixed}\nstatus:\n  allocatable: "
                            "{cpu: \"64\", memory: 512Gi, pods: \"110\", nvidia.com/mig-1g.10gb: "
                            "\"4\", nvidia.com/mig-2g.20gb: \"2\", nvidia.com/mig-3g.40gb: \"2\"}\n"
                            "---\n");
        uint64_t x = seed * 0x9E3779B97F4A7C15ULL;
        const uint32_t npods = 120;
        int64_t arr[120], dur[120];
        for (uint32_t i = 0; i < npods; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            const char *p = profiles[x % 6];
            gs_strbuf_printf(&sb, "apiVersion: v1\nkind: Pod\nmetadata: {name: p%u, namespace: "
                                  "inf}\nspec:\n  containers:\n  - {name: c, resources: {limits: "
                                  "{cpu: \"1\", nvidia.com/mig-%s: \"%u\"}}}\n---\n",
                             i, p, (unsigned)(1 + (x >> 8) % 2));
            arr[i] = (int64_t)((x >> 16) % 5000);
            dur[i] = 1 + (int64_t)((x >> 32) % 900);
        }
        gs_snapshot s;
        load(&s, gs_strbuf_cstr(&sb));
        gs_strbuf_free(&sb);
        assert_int_equal(s.pods.n, npods);
        gs_replay_opts o;
        gs_replay_opts_defaults(&o);
        o.mig_dynamic = true;
        o.mig_delay = (int64_t)(seed % 4) * 40; /* 0, 40, 80, 120 */
        o.sample_every = 1; /* every event time is sampled, the last one too */
        gs_replay_result r;
        gs_error err;
        gs_error_clear(&err);
        if (gs_replay_run(&s, arr, dur, &o, &r, &err))
            fail_msg("replay: %s", err.msg);
        check_slices(&r);
        uint32_t done = 0, pending = 0;
        for (uint32_t i = 0; i < r.npods; i++) {
            done += r.pods[i].state == GS_RP_DONE;
            pending += r.pods[i].state == GS_RP_PENDING;
        }
        assert_int_equal(done + pending, npods);
        assert_true(done > npods / 2);
        /* the last sample is at the last event: everything that ran has left */
        const gs_replay_sample *last = &r.samples[r.nsamples - 1];
        assert_int_equal(last->running, 0);
        assert_int_equal(last->mig_used, 0);
        assert_int_equal(last->mig_reconfiguring, 0);
        gs_replay_result_free(&r);
        gs_snapshot_free(&s);
    }
}

/* gs_node_gpus_mig_relayout on a built inventory. */
static void test_relayout(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, H100(""));
    gs_node_gpus g;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_node_gpus_build(&s.nodes.v[0], &g, &err), 0);
    assert_int_equal(g.ndevs, 2);
    assert_int_equal(g.nmig, 14);
    const gs_mig_profile *p7 = gs_mig_profile_find(g.mig_model, "7g.80gb");
    const gs_mig_profile *p3 = gs_mig_profile_find(g.mig_model, "3g.40gb");
    assert_non_null(p7);
    assert_non_null(p3);
    uint8_t i7 = (uint8_t)(p7 - g.mig_model->profiles), i3 = (uint8_t)(p3 - g.mig_model->profiles);
    /* an instance of GPU 1 in use: GPU 1 refuses, GPU 0 accepts and GPU 1's move */
    g.mig[9].used = 1;
    uint8_t one7[1] = {i7};
    assert_int_equal(gs_node_gpus_mig_relayout(&g, 1, one7, NULL, 1, NULL, NULL), -1);
    uint16_t remap[14];
    const char *names[1] = {"nvidia.com/mig-7g.80gb"};
    assert_int_equal(gs_node_gpus_mig_relayout(&g, 0, one7, NULL, 1, names, remap), 0);
    assert_int_equal(g.nmig, 8);
    assert_int_equal(g.devs[0].nmig, 1);
    assert_int_equal(g.devs[0].mig_first, 0);
    assert_int_equal(g.devs[1].mig_first, 1);
    assert_int_equal(remap[0], 0xffff);
    assert_int_equal(remap[9], 3);
    assert_int_equal(g.mig[3].used, 1);
    assert_int_equal(g.mig[0].profile, i7);
    bool advertised = false;
    for (uint32_t k = 0; k < g.nmig_res; k++)
        advertised |= g.mig_res_profile[k] == i7 && strcmp(g.mig_res_name[k], names[0]) == 0;
    assert_true(advertised);
    /* three 3g.40gb do not fit one GPU: nothing changes */
    uint8_t three3[3] = {i3, i3, i3};
    assert_int_equal(gs_node_gpus_mig_relayout(&g, 0, three3, NULL, 3, NULL, NULL), -1);
    assert_int_equal(g.nmig, 8);
    /* two do, at the placement table's starts (0 and 4) */
    assert_int_equal(gs_node_gpus_mig_relayout(&g, 0, three3, NULL, 2, NULL, NULL), 0);
    assert_int_equal(g.devs[0].nmig, 2);
    assert_int_equal(g.mig[0].start, 0);
    assert_int_equal(g.mig[1].start, 4);
    assert_int_equal(g.devs[1].mig_first, 2);
    /* none: the GPU offers nothing */
    assert_int_equal(gs_node_gpus_mig_relayout(&g, 0, NULL, NULL, 0, NULL, NULL), 0);
    assert_int_equal(g.devs[0].nmig, 0);
    assert_int_equal(g.nmig, 7);
    gs_node_gpus_free(&g);
    gs_snapshot_free(&s);
}


/* Arrived load and allocation count a MIG instance with the same rule: its compute slices
 * over its model's own (gs_mig_profile_fraction). On A30 (4 slices) the arrived load once
 * divided by 7 while the allocation divided by 4, so `simulate` reported more GPUs
 * allocated than had arrived. Two A30s cut into 2x 2g.12gb, four pods of one 2g.12gb each:
 * 2 GPUs arrive and 2 GPUs are allocated; the curve never goes above the diagonal. The same
 * on RTX PRO 6000 (4 slices), whose 1g.24gb shares its name with a 7-slice H100 profile:
 * the node's model decides. */
static void check_curve_on(const char *product, const char *profile, uint32_t per_gpu,
                           double share)
{
    char yaml[4096];
    int o = snprintf(yaml, sizeof yaml,
                     "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels: "
                     "{nvidia.com/gpu.product: %s, nvidia.com/gpu.count: \"2\", "
                     "nvidia.com/mig.strategy: mixed}\nstatus:\n  allocatable: {cpu: \"64\", "
                     "memory: 512Gi, pods: \"110\", nvidia.com/mig-%s: \"%u\"}\n---\n",
                     product, profile, 2 * per_gpu);
    for (uint32_t i = 0; i < 2 * per_gpu; i++)
        o += snprintf(yaml + o, sizeof yaml - (size_t)o,
                      "apiVersion: v1\nkind: Pod\nmetadata: {name: p%u, namespace: inf}\nspec:\n"
                      "  containers:\n  - {name: c, resources: {limits: {cpu: \"1\", "
                      "nvidia.com/mig-%s: \"1\"}}}\n---\n",
                      i, profile);
    gs_snapshot s;
    load(&s, yaml);
    times t[] = {{"p0", 0, GS_REPLAY_FOREVER}, {"p1", 10, GS_REPLAY_FOREVER},
                 {"p2", 20, GS_REPLAY_FOREVER}, {"p3", 30, GS_REPLAY_FOREVER}};
    gs_replay_result r;
    run(&s, t, 4, false, 0, &r);
    assert_int_equal(r.gpus_total, 2);
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(r.pods[i].state, GS_RP_RUNNING);
    assert_true(fabs(sample_at(&r, 40)->gpus_allocated - 4 * share) < 1e-5); /* micro units */
    gs_sim_run run_rec;
    gs_sim_run_init(&run_rec);
    gs_error err;
    gs_error_clear(&err);
    if (gs_sim_run_from_replay(&run_rec, 0, "w", "", "default", 1, 1.0, &s, &r, &err))
        fail_msg("run: %s", err.msg);
    /* x = arrived load in % of the 2 GPUs: 4 x share x 50 = 100 at the end */
    assert_int_equal(run_rec.nx, (uint32_t)lround(4 * share * 50) + 1);
    /* an empty cell takes its neighbours' mean (x-1..x+1): one point of slack */
    for (uint32_t x = 0; x < run_rec.nx; x++)
        if (!isnan(run_rec.alloc[x]) && run_rec.alloc[x] > x + 1.5)
            fail_msg("%s: %.2f%% allocated at %u%% arrived", product, run_rec.alloc[x], x);
    assert_true(fabs(run_rec.alloc[run_rec.nx - 1] - 100.0 * 4 * share / 2) < 0.01);
    gs_sim_run_free(&run_rec);
    gs_replay_result_free(&r);
    gs_snapshot_free(&s);
}

static void test_arrived_load_uses_model_slices(void **state)
{
    (void)state;
    check_curve_on("NVIDIA-A30", "2g.12gb", 2, 0.5);
    check_curve_on("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "1g.24gb", 2, 0.25);
    check_curve_on("NVIDIA-A100-SXM4-80GB", "3g.40gb", 2, 3.0 / 7.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_static_never_fits),
        cmocka_unit_test(test_dynamic_repartitions_after_delay),
        cmocka_unit_test(test_zero_delay),
        cmocka_unit_test(test_busy_gpu_kept_and_assignments_follow),
        cmocka_unit_test(test_ready_gpu_goes_to_next_class),
        cmocka_unit_test(test_single_strategy),
        cmocka_unit_test(test_filters_respected),
        cmocka_unit_test(test_demand_bounds_repartitions),
        cmocka_unit_test(test_determinism_and_conservation),
        cmocka_unit_test(test_random_invariants),
        cmocka_unit_test(test_relayout),
        cmocka_unit_test(test_arrived_load_uses_model_slices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
