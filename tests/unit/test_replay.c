/* test_replay.c - time-ordered replay on the engine: waits, retries, preemption, quota,
 * conservation and determinism. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpusched/replay.h"
#include "test_snapshot_util.h"

#define NODE2                                                                              \
    "apiVersion: v1\nkind: Node\nmetadata: {name: g1, labels: {nvidia.com/gpu.product: "  \
    "NVIDIA-A100-SXM4-80GB}}\nstatus:\n  allocatable: {cpu: \"32\", memory: 256Gi, pods: "  \
    "\"110\", nvidia.com/gpu: \"2\"}\n---\n"
#define POD(name, gpus, extra)                                                             \
    "apiVersion: v1\nkind: Pod\nmetadata: {name: " name ", namespace: ml}\nspec:\n" extra  \
    "  containers:\n  - {name: c, resources: {limits: {cpu: \"1\", nvidia.com/gpu: \"" gpus \
    "\"}}}\n---\n"
#define CLASSES                                                                            \
    "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: hi}\nvalue: "  \
    "1000\n---\n"

static void test_wait_and_retry(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, NODE2 POD("a", "2", "") POD("b", "1", ""));
    int64_t arr[2] = {0, 10}, dur[2] = {100, 50};
    gs_replay_opts o;
    gs_replay_opts_defaults(&o);
    gs_replay_result r;
    gs_error err;
    assert_int_equal(gs_replay_run(&s, arr, dur, &o, &r, &err), 0);
    const gs_replay_pod *a = &r.pods[pod_index(&s, "a")], *b = &r.pods[pod_index(&s, "b")];
    assert_int_equal(a->first_start, 0);
    assert_int_equal(a->end, 100);
    assert_int_equal(a->state, GS_RP_DONE);
    assert_int_equal(b->first_start, 100);
    assert_int_equal(b->waited, 90);
    assert_int_equal(b->end, 150);
    assert_int_equal(r.gpus_total, 2);
    assert_true(r.nsamples > 0);
    gs_replay_result_free(&r);
    gs_snapshot_free(&s);
}

static void test_preemption_requeue(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, CLASSES NODE2 POD("low", "2", "") POD("high", "1", "  priorityClassName: hi\n"));
    int64_t arr[2], dur[2];
    uint32_t lo = pod_index(&s, "low"), hi = pod_index(&s, "high");
    arr[lo] = 0;
    dur[lo] = 100;
    arr[hi] = 20;
    dur[hi] = 30;
    gs_replay_opts o;
    gs_replay_opts_defaults(&o);
    gs_replay_result r;
    gs_error err;
    assert_int_equal(gs_replay_run(&s, arr, dur, &o, &r, &err), 0);
    assert_int_equal(r.pods[hi].first_start, 20);
    assert_int_equal(r.pods[hi].priority, 1000);
    assert_int_equal(r.pods[lo].preemptions, 1);
    assert_int_equal(r.preemptions, 1);
    /* requeued: starts again when the high-priority pod leaves at 50, runs 100 */
    assert_int_equal(r.pods[lo].last_start, 50);
    assert_int_equal(r.pods[lo].end, 150);
    assert_int_equal(r.pods[lo].waited, 30);
    gs_replay_result_free(&r);
    /* lost instead of requeued */
    o.requeue_preempted = false;
    assert_int_equal(gs_replay_run(&s, arr, dur, &o, &r, &err), 0);
    assert_int_equal(r.pods[lo].state, GS_RP_LOST);
    assert_int_equal(r.pods[lo].end, 20);
    gs_replay_result_free(&r);
    gs_snapshot_free(&s);
}

static void test_quota_and_conservation(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, NODE2
         "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: ml}\n"
         "spec:\n  hard: {requests.nvidia.com/gpu: \"2\"}\n---\n"
         POD("p0", "1", "") POD("p1", "1", "") POD("p2", "1", "") POD("p3", "1", ""));
    /* p0,p1 arrive at 0 and hold the quota until 10; p2 arrives at 5 (rejected), p3 at 20 */
    int64_t arr[4] = {0, 0, 5, 20}, dur[4] = {10, 10, 10, GS_REPLAY_FOREVER};
    gs_replay_opts o;
    gs_replay_opts_defaults(&o);
    gs_replay_result r;
    gs_error err;
    assert_int_equal(gs_replay_run(&s, arr, dur, &o, &r, &err), 0);
    assert_int_equal(r.quota_rejections, 1);
    assert_int_equal(r.pods[pod_index(&s, "p2")].state, GS_RP_REJECTED);
    assert_non_null(strstr(r.pods[pod_index(&s, "p2")].reason, "exceeded quota: q"));
    assert_int_equal(r.pods[pod_index(&s, "p3")].state, GS_RP_RUNNING);
    /* conservation: every arrival ends placed, pending, rejected, lost or departed */
    uint32_t counts[6] = {0};
    for (uint32_t i = 0; i < r.npods; i++)
        counts[r.pods[i].state]++;
    assert_int_equal(counts[GS_RP_NOT_ARRIVED], 0);
    assert_int_equal(counts[GS_RP_DONE] + counts[GS_RP_RUNNING] + counts[GS_RP_PENDING] +
                         counts[GS_RP_REJECTED] + counts[GS_RP_LOST],
                     r.npods);
    gs_replay_result_free(&r);
    gs_snapshot_free(&s);
}

static void test_determinism(void **state)
{
    (void)state;
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_strbuf_puts(&sb, CLASSES);
    for (int n = 0; n < 6; n++)
        gs_strbuf_printf(&sb,
                         "apiVersion: v1\nkind: Node\nmetadata: {name: g%d}\nstatus:\n  allocatable: "
                         "{cpu: \"32\", memory: 256Gi, pods: \"110\", nvidia.com/gpu: \"4\"}\n---\n",
                         n);
    int npods = 300;
    int64_t *arr = calloc((size_t)npods, sizeof *arr), *dur = calloc((size_t)npods, sizeof *dur);
    gs_rng rng;
    gs_rng_seed(&rng, 7);
    for (int i = 0; i < npods; i++) {
        gs_strbuf_printf(&sb,
                         "apiVersion: v1\nkind: Pod\nmetadata: {name: p%03d, namespace: ml}\nspec:\n%s"
                         "  containers:\n  - {name: c, resources: {limits: {cpu: \"1\", nvidia.com/gpu: \"%d\"}}}\n---\n",
                         i, gs_rng_below(&rng, 5) == 0 ? "  priorityClassName: hi\n" : "",
                         1 << gs_rng_below(&rng, 3));
        arr[i] = (int64_t)gs_rng_below(&rng, 1000);
        dur[i] = 10 + (int64_t)gs_rng_below(&rng, 200);
    }
    gs_snapshot s;
    load(&s, sb.buf);
    gs_replay_opts o;
    gs_replay_opts_defaults(&o);
    gs_replay_result r1, r2;
    gs_error err;
    assert_int_equal(gs_replay_run(&s, arr, dur, &o, &r1, &err), 0);
    assert_int_equal(gs_replay_run(&s, arr, dur, &o, &r2, &err), 0);
    assert_int_equal(r1.nsamples, r2.nsamples);
    for (uint32_t i = 0; i < r1.npods; i++) {
        assert_int_equal(r1.pods[i].state, r2.pods[i].state);
        assert_int_equal(r1.pods[i].first_start, r2.pods[i].first_start);
        assert_int_equal(r1.pods[i].waited, r2.pods[i].waited);
        assert_int_equal(r1.pods[i].node, r2.pods[i].node);
        /* conservation and sanity */
        assert_true(r1.pods[i].state != GS_RP_NOT_ARRIVED);
        assert_true(r1.pods[i].waited >= 0);
    }
    for (uint32_t i = 0; i < r1.nsamples; i++) {
        assert_true(r1.samples[i].gpus_allocated <= 24.0 + 1e-9);
        assert_true(r1.samples[i].gpus_allocated >= -1e-9);
    }
    assert_true(r1.preemptions > 0);
    gs_replay_result_free(&r1);
    gs_replay_result_free(&r2);
    gs_snapshot_free(&s);
    gs_strbuf_free(&sb);
    free(arr);
    free(dur);
}

/* The engine's shortcuts change no replay result: shape cache, change log and score
 * index, version-preserving dry runs, the preemption bound and the fixed-verdict skip
 * against the reference (no_shape_cache) on a random trace where pods depart (nodes free
 * up), preempt, share GPUs and prefer soft-tainted or labelled nodes. */
static void test_reference_equal(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        gs_strbuf sb = GS_STRBUF_INIT;
        gs_strbuf_puts(&sb, CLASSES);
        gs_rng rng;
        gs_rng_seed(&rng, seed);
        for (int n = 0; n < 24; n++) {
            int k = (int)gs_rng_below(&rng, 4);
            gs_strbuf_printf(&sb, "apiVersion: v1\nkind: Node\nmetadata:\n  name: n%02d\n  labels: {zone: z%d%s}\n",
                             n, (int)gs_rng_below(&rng, 3), k == 0 ? ", gpu: a100" : "");
            if (gs_rng_below(&rng, 3) == 0)
                gs_strbuf_puts(&sb, "spec:\n  taints:\n  - {key: soft, value: x, effect: PreferNoSchedule}\n");
            else if (k == 3)
                gs_strbuf_puts(&sb, "spec:\n  taints:\n  - {key: hard, value: x, effect: NoSchedule}\n");
            gs_strbuf_printf(&sb, "status:\n  allocatable: {cpu: \"%d\", memory: 128Gi, pods: \"20\"%s}\n---\n",
                             16 * (1 + (int)gs_rng_below(&rng, 2)), k == 1 ? "" : ", nvidia.com/gpu: \"4\"");
        }
        int npods = 500;
        int64_t *arr = calloc((size_t)npods, sizeof *arr), *dur = calloc((size_t)npods, sizeof *dur);
        for (int i = 0; i < npods; i++) {
            int shape = (int)gs_rng_below(&rng, 12); /* a small catalogue: shapes repeat */
            gs_strbuf_printf(&sb, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p%03d\n  namespace: ml\n%s"
                                  "spec:\n%s",
                             i, shape % 4 == 1 ? "  annotations: {gpu-fraction: \"0.5\"}\n" : "",
                             gs_rng_below(&rng, 4) == 0 ? "  priorityClassName: hi\n" : "");
            if (shape % 3 == 0)
                gs_strbuf_puts(&sb, "  tolerations:\n  - {key: hard, operator: Exists}\n");
            if (shape % 5 < 2)
                gs_strbuf_printf(&sb, "  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n"
                                      "      - weight: %d\n        preference: {matchExpressions: [{key: zone, operator: In, values: [z%d]}]}\n",
                                 1 + shape, shape % 3);
            if (shape == 7)
                gs_strbuf_puts(&sb, "  nodeSelector: {gpu: a100}\n");
            if (shape % 4 == 1)
                gs_strbuf_printf(&sb, "  containers:\n  - {name: c, resources: {requests: {cpu: \"%d\"}}}\n---\n",
                                 1 + shape % 3);
            else if (shape % 4 == 2)
                gs_strbuf_printf(&sb, "  containers:\n  - {name: c, resources: {requests: {cpu: \"%d\", memory: 8Gi}}}\n---\n",
                                 2 + shape % 5);
            else
                gs_strbuf_printf(&sb, "  containers:\n  - {name: c, resources: {limits: {cpu: \"%d\", nvidia.com/gpu: \"%d\"}}}\n---\n",
                                 1 + shape % 4, 1 << (shape % 3));
            arr[i] = (int64_t)gs_rng_below(&rng, 2000);
            dur[i] = 20 + (int64_t)gs_rng_below(&rng, 400);
        }
        gs_snapshot s;
        load(&s, sb.buf);
        gs_replay_opts o;
        gs_replay_opts_defaults(&o);
        o.cfg.seed = seed;
        gs_replay_result r1, r2;
        gs_error err;
        assert_int_equal(gs_replay_run(&s, arr, dur, &o, &r1, &err), 0);
        o.cfg.no_shape_cache = true;
        assert_int_equal(gs_replay_run(&s, arr, dur, &o, &r2, &err), 0);
        assert_int_equal(r1.nsamples, r2.nsamples);
        assert_int_equal(r1.preemptions, r2.preemptions);
        uint32_t done = 0;
        for (uint32_t i = 0; i < r1.npods; i++) {
            const gs_replay_pod *a = &r1.pods[i], *b = &r2.pods[i];
            assert_int_equal(a->state, b->state);
            assert_int_equal(a->first_start, b->first_start);
            assert_int_equal(a->last_start, b->last_start);
            assert_int_equal(a->end, b->end);
            assert_int_equal(a->waited, b->waited);
            assert_int_equal(a->preemptions, b->preemptions);
            assert_int_equal(a->node, b->node);
            assert_true((a->reason == NULL) == (b->reason == NULL));
            if (a->reason)
                assert_string_equal(a->reason, b->reason);
            done += a->state == GS_RP_DONE;
        }
        for (uint32_t i = 0; i < r1.nsamples; i++) {
            assert_int_equal(r1.samples[i].nodes_used, r2.samples[i].nodes_used);
            assert_int_equal(r1.samples[i].pending, r2.samples[i].pending);
            assert_int_equal(r1.samples[i].gpus_stranded, r2.samples[i].gpus_stranded);
            assert_true(r1.samples[i].gpus_allocated == r2.samples[i].gpus_allocated);
        }
        assert_true(done > 200);
        assert_true(r1.preemptions > 0);
        gs_replay_result_free(&r1);
        gs_replay_result_free(&r2);
        gs_snapshot_free(&s);
        gs_strbuf_free(&sb);
        free(arr);
        free(dur);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_and_retry),
        cmocka_unit_test(test_preemption_requeue),
        cmocka_unit_test(test_quota_and_conservation),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_reference_equal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
