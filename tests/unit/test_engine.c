/* test_engine.c - the scheduling engine against upstream semantics, through YAML inputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpusched/engine.h"

typedef struct world {
    gs_snapshot snap;
    gs_cluster *c;
} world;

static void world_load(world *w, const char *yaml, const gs_config *cfg)
{
    gs_error err;
    gs_error_clear(&err);
    gs_snapshot_init(&w->snap);
    int rc = gs_snapshot_read_buffer(&w->snap, "test.yaml", yaml, strlen(yaml), NULL, &err);
    if (rc == 0)
        rc = gs_snapshot_finish(&w->snap, &err);
    if (rc) {
        char buf[1024];
        gs_error_format(&err, buf, sizeof buf);
        fail_msg("read failed: %s", buf);
    }
    w->c = gs_cluster_new(&w->snap, cfg, &err);
    if (!w->c) {
        char buf[1024];
        gs_error_format(&err, buf, sizeof buf);
        fail_msg("cluster failed: %s", buf);
    }
    assert_int_equal(gs_schedule_run(w->c, &err), 0);
}

static void world_free(world *w)
{
    gs_cluster_free(w->c);
    gs_snapshot_free(&w->snap);
}

static const gs_decision *dec(world *w, const char *name)
{
    for (size_t i = 0; i < w->snap.pods.n; i++)
        if (strcmp(w->snap.pods.v[i].meta.name, name) == 0)
            return gs_cluster_decision_for_pod(w->c, (uint32_t)i);
    fail_msg("no pod %s", name);
    return NULL;
}

static const char *node_of(world *w, const char *pod)
{
    const gs_decision *d = dec(w, pod);
    return d->node >= 0 ? w->snap.nodes.v[d->node].meta.name : "<none>";
}

#define GPU_NODE(name, gpus, taint)                                                        \
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: " name "\n  labels:\n"                 \
    "    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n    nvidia.com/gpu.memory: \"81920\"\n" \
    "spec:\n" taint "status:\n  allocatable:\n    cpu: \"64\"\n    memory: 512Gi\n"             \
    "    pods: \"110\"\n    nvidia.com/gpu: \"" gpus "\"\n---\n"
#define GPU_TAINT "  taints:\n  - {key: nvidia.com/gpu, value: \"true\", effect: NoSchedule}\n"
#define CPU_NODE(name)                                                                      \
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: " name "\nstatus:\n  allocatable:\n"    \
    "    cpu: \"16\"\n    memory: 64Gi\n    pods: \"110\"\n---\n"
#define GPU_POD(name, gpus, extra)                                                          \
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " name "\n  namespace: ml\nspec:\n"      \
    extra "  containers:\n  - name: c\n    resources:\n      limits:\n        nvidia.com/gpu: \"" gpus \
    "\"\n        cpu: \"4\"\n        memory: 16Gi\n---\n"
#define TOL "  tolerations:\n  - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n"

static void test_taint_message(void **state)
{
    (void)state;
    world w;
    world_load(&w,
               GPU_NODE("gpu-a", "8", GPU_TAINT) GPU_NODE("gpu-b", "8", GPU_TAINT) CPU_NODE("cpu-a")
                   GPU_POD("train", "1", ""),
               NULL);
    const gs_decision *d = dec(&w, "train");
    assert_int_equal(d->outcome, GS_OUT_UNSCHEDULABLE);
    assert_string_equal(d->message,
                        "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) had "
                        "untolerated taint(s). preemption: 0/3 nodes are "
                        "available: 3 Preemption is not helpful for scheduling.");
    world_free(&w);
}

static void test_whole_gpus_never_overcommit(void **state)
{
    (void)state;
    world w;
    world_load(&w,
               GPU_NODE("gpu-a", "4", GPU_TAINT) GPU_POD("p1", "2", TOL) GPU_POD("p2", "2", TOL)
                   GPU_POD("p3", "1", TOL),
               NULL);
    assert_int_equal(dec(&w, "p1")->outcome, GS_OUT_SCHEDULED);
    assert_int_equal(dec(&w, "p2")->outcome, GS_OUT_SCHEDULED);
    const gs_decision *d3 = dec(&w, "p3");
    assert_int_equal(d3->outcome, GS_OUT_UNSCHEDULABLE);
    assert_non_null(strstr(d3->message, "1 Insufficient nvidia.com/gpu"));
    /* devices are disjoint */
    const gs_decision *a = dec(&w, "p1"), *b = dec(&w, "p2");
    for (int i = 0; i < a->assign.n; i++)
        for (int j = 0; j < b->assign.n; j++)
            assert_int_not_equal(a->assign.dev[i], b->assign.dev[j]);
    world_free(&w);
}

static void test_priority_queue_and_preemption(void **state)
{
    (void)state;
    world w;
    world_load(&w,
               "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\n"
               "value: 1000\n---\n"
               "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\n"
               "value: 10\n---\n" GPU_NODE("gpu-a", "2", GPU_TAINT)
               "apiVersion: v1\nkind: Pod\nmetadata: {name: old-low, namespace: ml, uid: u1}\n"
               "spec:\n  nodeName: gpu-a\n  priority: 10\n" TOL
               "  containers:\n  - name: c\n    resources:\n      limits: {nvidia.com/gpu: \"1\"}\n"
               "status: {phase: Running, startTime: \"2024-01-01T00:00:00Z\"}\n---\n"
               "apiVersion: v1\nkind: Pod\nmetadata: {name: old-low2, namespace: ml, uid: u2}\n"
               "spec:\n  nodeName: gpu-a\n  priority: 10\n" TOL
               "  containers:\n  - name: c\n    resources:\n      limits: {nvidia.com/gpu: \"1\"}\n"
               "status: {phase: Running, startTime: \"2024-01-02T00:00:00Z\"}\n---\n"
               GPU_POD("new-high", "1", "  priorityClassName: high\n" TOL),
               NULL);
    const gs_decision *d = dec(&w, "new-high");
    assert_int_equal(d->outcome, GS_OUT_SCHEDULED);
    assert_int_equal(d->priority, 1000);
    assert_int_equal(d->nvictims, 1);
    /* minimal victim set: the reprieve keeps the more important (earlier started) pod */
    assert_string_equal(w.snap.pods.v[d->victims[0]].meta.name, "old-low2");
    assert_int_equal(dec(&w, "old-low2")->outcome, GS_OUT_PREEMPTED);
    assert_int_equal(dec(&w, "old-low")->outcome, GS_OUT_BOUND);
    world_free(&w);
}

static void test_preemption_never(void **state)
{
    (void)state;
    world w;
    world_load(&w,
               GPU_NODE("gpu-a", "1", "")
               "apiVersion: v1\nkind: Pod\nmetadata: {name: low, namespace: ml, uid: u1}\n"
               "spec:\n  nodeName: gpu-a\n"
               "  containers:\n  - name: c\n    resources:\n      limits: {nvidia.com/gpu: \"1\"}\n"
               "status: {phase: Running}\n---\n"
               "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: hi}\n"
               "value: 100\npreemptionPolicy: Never\n---\n"
               GPU_POD("p", "1", "  priorityClassName: hi\n"),
               NULL);
    const gs_decision *d = dec(&w, "p");
    assert_int_equal(d->outcome, GS_OUT_UNSCHEDULABLE);
    assert_non_null(strstr(d->message, "preemption: not eligible due to preemptionPolicy=Never."));
    world_free(&w);
}

static void test_quota_rejection(void **state)
{
    (void)state;
    world w;
    world_load(&w,
               GPU_NODE("gpu-a", "8", "")
               "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: gpu-quota, namespace: ml}\n"
               "spec:\n  hard:\n    requests.nvidia.com/gpu: \"4\"\n---\n"
               GPU_POD("a", "3", "") GPU_POD("b", "2", ""),
               NULL);
    assert_int_equal(dec(&w, "a")->outcome, GS_OUT_SCHEDULED);
    const gs_decision *d = dec(&w, "b");
    assert_int_equal(d->outcome, GS_OUT_REJECTED);
    assert_string_equal(d->message,
                        "pods \"b\" is forbidden: exceeded quota: gpu-quota, requested: "
                        "requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=3, limited: "
                        "requests.nvidia.com/gpu=4");
    world_free(&w);
}

static void test_limits_gpu_quota_not_enforced(void **state)
{
    (void)state;
    world w;
    world_load(&w,
               GPU_NODE("gpu-a", "8", "")
               "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: ml}\n"
               "spec:\n  hard:\n    limits.nvidia.com/gpu: \"1\"\n    nvidia.com/gpu: \"1\"\n---\n"
               GPU_POD("a", "3", ""),
               NULL);
    assert_int_equal(dec(&w, "a")->outcome, GS_OUT_SCHEDULED);
    world_free(&w);
}

static void test_fractional_share_same_device(void **state)
{
    (void)state;
    world w;
    world_load(&w,
               GPU_NODE("gpu-a", "8", "") GPU_NODE("gpu-b", "8", "")
               "apiVersion: v1\nkind: Pod\nmetadata:\n  name: s1\n  annotations: {gpu-fraction: \"0.5\"}\n"
               "spec:\n  schedulerName: kai-scheduler\n  containers:\n  - name: c\n---\n"
               "apiVersion: v1\nkind: Pod\nmetadata:\n  name: s2\n  annotations: {gpu-fraction: \"0.5\"}\n"
               "spec:\n  schedulerName: kai-scheduler\n  containers:\n  - name: c\n---\n",
               NULL);
    const gs_decision *a = dec(&w, "s1"), *b = dec(&w, "s2");
    assert_int_equal(a->outcome, GS_OUT_SCHEDULED);
    assert_int_equal(b->outcome, GS_OUT_SCHEDULED);
    assert_int_equal(a->node, b->node);
    assert_int_equal(a->assign.n, 1);
    assert_int_equal(b->assign.n, 1);
    assert_int_equal(a->assign.dev[0], b->assign.dev[0]);
    world_free(&w);
}

static void test_least_allocated_score(void **state)
{
    (void)state;
    /* upstream vector: cpu 3000/4000, memory 5000/10000 -> LeastAllocated (25+50)/2 = 37 */
    gs_config cfg;
    gs_config_defaults(&cfg);
    cfg.w_taint = cfg.w_affinity = cfg.w_balanced = cfg.w_gpu_binpack = 0;
    world w;
    world_load(&w,
               "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus:\n  allocatable: {cpu: \"4\", memory: \"10000\", pods: \"10\"}\n---\n"
               "apiVersion: v1\nkind: Node\nmetadata: {name: n2}\nstatus:\n  allocatable: {cpu: \"4\", memory: \"10000\", pods: \"10\"}\n---\n"
               "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
               "    resources:\n      requests: {cpu: \"3\", memory: \"5000\"}\n---\n",
               &cfg);
    const gs_decision *d = dec(&w, "p");
    assert_int_equal(d->outcome, GS_OUT_SCHEDULED);
    assert_int_equal(d->score, 37);
    world_free(&w);
    cfg.strategy = GS_STRATEGY_MOST_ALLOCATED;
    world_load(&w,
               "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus:\n  allocatable: {cpu: \"4\", memory: \"10000\", pods: \"10\"}\n---\n"
               "apiVersion: v1\nkind: Node\nmetadata: {name: n2}\nstatus:\n  allocatable: {cpu: \"4\", memory: \"10000\", pods: \"10\"}\n---\n"
               "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
               "    resources:\n      requests: {cpu: \"3\", memory: \"5000\"}\n---\n",
               &cfg);
    assert_int_equal(dec(&w, "p")->score, 62);
    world_free(&w);
}

static void test_effective_requests_init(void **state)
{
    (void)state;
    /* init 5, sidecars 1,2, init 5, sidecar 3, container 1 -> 8 cpus; node has 7 */
    world w;
    world_load(&w,
               "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus:\n  allocatable: {cpu: \"7\", memory: 1Gi, pods: \"10\"}\n---\n"
               "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  initContainers:\n"
               "  - {name: i1, resources: {requests: {cpu: \"5\"}}}\n"
               "  - {name: s1, restartPolicy: Always, resources: {requests: {cpu: \"1\"}}}\n"
               "  - {name: s2, restartPolicy: Always, resources: {requests: {cpu: \"2\"}}}\n"
               "  - {name: i2, resources: {requests: {cpu: \"5\"}}}\n"
               "  - {name: s3, restartPolicy: Always, resources: {requests: {cpu: \"3\"}}}\n"
               "  containers:\n  - {name: c, resources: {requests: {cpu: \"1\"}}}\n---\n",
               NULL);
    const gs_decision *d = dec(&w, "p");
    assert_int_equal(d->outcome, GS_OUT_UNSCHEDULABLE);
    assert_non_null(strstr(d->message, "1 Insufficient cpu"));
    world_free(&w);
}

static void test_unschedulable_and_affinity(void **state)
{
    (void)state;
    world w;
    world_load(&w,
               "apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {zone: a}}\nspec: {unschedulable: true}\n"
               "status:\n  allocatable: {cpu: \"8\", memory: 8Gi, pods: \"10\"}\n---\n"
               "apiVersion: v1\nkind: Node\nmetadata: {name: n2, labels: {zone: b}}\n"
               "status:\n  allocatable: {cpu: \"8\", memory: 8Gi, pods: \"10\"}\n---\n"
               "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  nodeSelector: {zone: a}\n"
               "  containers:\n  - name: c\n---\n",
               NULL);
    const gs_decision *d = dec(&w, "p");
    assert_int_equal(d->outcome, GS_OUT_UNSCHEDULABLE);
    assert_string_equal(d->message,
                        "0/2 nodes are available: 1 node(s) didn't match Pod's node "
                        "affinity/selector, 1 node(s) were unschedulable. preemption: 0/2 nodes "
                        "are available: 2 Preemption is not helpful for scheduling.");
    world_free(&w);
}

static void test_extended_resource_toleration(void **state)
{
    (void)state;
    gs_config cfg;
    gs_config_defaults(&cfg);
    cfg.extended_resource_toleration = true;
    world w;
    world_load(&w, GPU_NODE("gpu-a", "8", GPU_TAINT) GPU_POD("p", "1", ""), &cfg);
    assert_int_equal(dec(&w, "p")->outcome, GS_OUT_SCHEDULED);
    assert_string_equal(node_of(&w, "p"), "gpu-a");
    world_free(&w);
}

static void test_node_order_invariance(void **state)
{
    (void)state;
    /* the same cluster with nodes in two orders gives identical decisions */
    const char *a = GPU_NODE("gpu-a", "2", "") GPU_NODE("gpu-b", "4", "") CPU_NODE("cpu-a");
    const char *b = CPU_NODE("cpu-a") GPU_NODE("gpu-b", "4", "") GPU_NODE("gpu-a", "2", "");
    const char *pods = GPU_POD("p1", "2", "") GPU_POD("p2", "2", "") GPU_POD("p3", "2", "")
        GPU_POD("p4", "1", "");
    char *ya = malloc(strlen(a) + strlen(pods) + 1), *yb = malloc(strlen(b) + strlen(pods) + 1);
    strcpy(ya, a);
    strcat(ya, pods);
    strcpy(yb, b);
    strcat(yb, pods);
    world w1, w2;
    world_load(&w1, ya, NULL);
    world_load(&w2, yb, NULL);
    const char *names[] = {"p1", "p2", "p3", "p4"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(dec(&w1, names[i])->outcome, dec(&w2, names[i])->outcome);
        assert_string_equal(node_of(&w1, names[i]), node_of(&w2, names[i]));
    }
    world_free(&w1);
    world_free(&w2);
    free(ya);
    free(yb);
}

static void test_explain_incident(void **state)
{
    (void)state;
    gs_config cfg;
    gs_config_defaults(&cfg);
    cfg.preemption = false;
    world w;
    world_load(&w,
               GPU_NODE("gpu-a", "1", "") GPU_NODE("gpu-b", "4", GPU_TAINT)
               "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: web, uid: u9}\n"
               "spec:\n  nodeName: gpu-a\n  containers:\n  - name: c\n"
               "status: {phase: Running}\n---\n" GPU_POD("train", "4", ""),
               &cfg);
    const gs_explain *ex;
    gs_error err;
    assert_int_equal(gs_explain_run(w.c, NULL, &ex, &err), 0);
    assert_int_equal(ex->npods, 1);
    assert_true(ex->pods[0].nfixes >= 1);
    assert_int_equal(ex->pods[0].fixes[0].kind, GS_FIX_TOLERATE_TAINT);
    assert_int_equal(ex->nhygiene, 1);
    assert_true(ex->hygiene[0].untainted_gpu_node);
    assert_int_equal(ex->hygiene[0].nnon_gpu_pods, 1);
    world_free(&w);
}

static void test_daemonset_pinned(void **state)
{
    (void)state;
    world w;
    world_load(&w,
               GPU_NODE("gpu-a", "8", GPU_TAINT) GPU_NODE("gpu-b", "8", "") CPU_NODE("cpu-a")
               "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: kube-system}\n"
               "spec:\n  template:\n    spec:\n      containers:\n      - {name: c, resources: {requests: {cpu: 100m}}}\n---\n"
               "apiVersion: v1\nkind: Pod\nmetadata: {name: lost}\nspec:\n  affinity:\n    nodeAffinity:\n"
               "      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n"
               "        - matchFields: [{key: metadata.name, operator: In, values: [nowhere]}]\n"
               "  containers:\n  - name: c\n---\n",
               NULL);
    /* the DaemonSet does not tolerate the GPU taint: pods for gpu-b and cpu-a only */
    uint32_t n = 0;
    for (size_t i = 0; i < w.snap.pods.n; i++) {
        const gs_pod *p = &w.snap.pods.v[i];
        if (!p->workload || strcmp(p->workload, "DaemonSet/agent") != 0)
            continue;
        const gs_decision *d = gs_cluster_decision_for_pod(w.c, (uint32_t)i);
        assert_int_equal(d->outcome, GS_OUT_SCHEDULED);
        assert_int_equal(d->feasible, 1);
        n++;
    }
    assert_int_equal(n, 2);
    const gs_decision *d = dec(&w, "lost");
    assert_int_equal(d->outcome, GS_OUT_UNSCHEDULABLE);
    assert_string_equal(d->message, "0/3 nodes are available: 3 node(s) didn't match Pod's node "
                                    "affinity/selector. preemption: 0/3 nodes are available: 3 "
                                    "Preemption is not helpful for scheduling.");
    world_free(&w);
}

/* The kubelet matches resource names: a MIG request never takes instances advertised
 * under another profile name, even a close one. */
static void test_mig_exact_resource_name(void **state)
{
    (void)state;
    world w;
    world_load(&w,
               "apiVersion: v1\nkind: Node\nmetadata:\n  name: mig-a\n  labels: {nvidia.com/gpu.product: "
               "NVIDIA-A100-SXM4-80GB, nvidia.com/gpu.count: \"1\"}\nstatus:\n  allocatable: {cpu: \"8\", "
               "memory: 8Gi, pods: \"10\", nvidia.com/mig-1g.10gb: \"7\"}\n---\n"
               "apiVersion: v1\nkind: Pod\nmetadata: {name: near}\nspec:\n  containers:\n  - name: c\n"
               "    resources: {limits: {nvidia.com/mig-1g.12gb: \"1\"}}\n---\n"
               "apiVersion: v1\nkind: Pod\nmetadata: {name: exact}\nspec:\n  containers:\n  - name: c\n"
               "    resources: {limits: {nvidia.com/mig-1g.10gb: \"1\"}}\n---\n",
               NULL);
    assert_int_equal(dec(&w, "near")->outcome, GS_OUT_UNSCHEDULABLE);
    assert_non_null(strstr(dec(&w, "near")->message, "Insufficient nvidia.com/mig-1g.12gb"));
    assert_int_equal(dec(&w, "exact")->outcome, GS_OUT_SCHEDULED);
    world_free(&w);
}

/* A random mixed workload, generated deterministically. */
static char *random_world(uint64_t seed, int nodes, int pods)
{
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_rng r;
    gs_rng_seed(&r, seed);
    for (int i = 0; i < nodes; i++) {
        int k = (int)gs_rng_below(&r, 4);
        if (k == 0)
            gs_strbuf_printf(&sb, CPU_NODE("cpu-%03d"), i);
        else if (k == 1)
            gs_strbuf_printf(&sb,
                             "apiVersion: v1\nkind: Node\nmetadata:\n  name: mig-%03d\n  labels:\n"
                             "    nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB\n    nvidia.com/gpu.count: \"2\"\n"
                             "status:\n  allocatable: {cpu: \"32\", memory: 256Gi, pods: \"20\",\n"
                             "    nvidia.com/mig-1g.5gb: \"6\", nvidia.com/mig-3g.20gb: \"2\"}\n---\n",
                             i);
        else
            gs_strbuf_printf(&sb,
                             "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-%03d\n  labels:\n"
                             "    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n    nvidia.com/gpu.memory: \"81920\"\n"
                             "%sstatus:\n  allocatable: {cpu: \"%d\", memory: 512Gi, pods: \"20\", nvidia.com/gpu: \"%d\"}\n---\n",
                             i, k == 2 ? "spec:\n" GPU_TAINT : "", 16 + 16 * (int)gs_rng_below(&r, 4),
                             1 << gs_rng_below(&r, 4));
    }
    for (int i = 0; i < pods; i++) {
        int k = (int)gs_rng_below(&r, 5);
        int cpu = 1 + (int)gs_rng_below(&r, 3);
        const char *tol = gs_rng_below(&r, 2) ? TOL : "";
        if (k == 0)
            gs_strbuf_printf(&sb, "apiVersion: v1\nkind: Pod\nmetadata: {name: p%04d}\nspec:\n%s"
                                  "  containers:\n  - {name: c, resources: {requests: {cpu: \"%d\"}}}\n---\n",
                             i, tol, cpu);
        else if (k == 1 || k == 2)
            gs_strbuf_printf(&sb, "apiVersion: v1\nkind: Pod\nmetadata: {name: p%04d}\nspec:\n%s"
                                  "  containers:\n  - {name: c, resources: {limits: {cpu: \"%d\", nvidia.com/gpu: \"%d\"}}}\n---\n",
                             i, tol, cpu, 1 << gs_rng_below(&r, 3));
        else if (k == 3)
            gs_strbuf_printf(&sb, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p%04d\n"
                                  "  annotations: {gpu-fraction: \"0.%d\"}\nspec:\n%s"
                                  "  containers:\n  - {name: c, resources: {requests: {cpu: \"%d\"}}}\n---\n",
                             i, 2 + (int)gs_rng_below(&r, 6), tol, cpu);
        else
            gs_strbuf_printf(&sb, "apiVersion: v1\nkind: Pod\nmetadata: {name: p%04d}\nspec:\n%s"
                                  "  containers:\n  - {name: c, resources: {limits: {nvidia.com/mig-1g.5gb: \"1\"}}}\n---\n",
                             i, tol);
    }
    return gs_strbuf_detach(&sb);
}

/* Invariants on a random workload: no device and no node is over-committed; the shape
 * cache changes nothing; the input order of nodes changes nothing. */
static void test_random_invariants(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        char *y = random_world(seed, 40, 400);
        gs_config cfg;
        gs_config_defaults(&cfg);
        cfg.seed = seed;
        world a, b;
        world_load(&a, y, &cfg);
        cfg.no_shape_cache = true;
        world_load(&b, y, &cfg);
        uint32_t placed = 0;
        for (size_t i = 0; i < a.snap.pods.n; i++) {
            const gs_decision *da = gs_cluster_decision_for_pod(a.c, (uint32_t)i);
            const gs_decision *db = gs_cluster_decision_for_pod(b.c, (uint32_t)i);
            assert_int_equal(da->outcome, db->outcome);
            assert_int_equal(da->node, db->node);
            assert_int_equal(da->score, db->score);
            assert_int_equal(da->assign.n, db->assign.n);
            for (uint32_t k = 0; k < da->assign.n; k++) {
                assert_int_equal(da->assign.dev[k], db->assign.dev[k]);
                assert_int_equal(da->assign.mig[k], db->assign.mig[k]);
                assert_int_equal(da->assign.milli[k], db->assign.milli[k]);
                assert_int_equal(da->assign.mem[k], db->assign.mem[k]);
            }
            placed += da->outcome == GS_OUT_SCHEDULED;
        }
        assert_true(placed > 50);
        for (uint32_t n = 0; n < a.snap.nodes.n; n++) {
            gs_node_view v;
            gs_cluster_node_view(a.c, n, &v);
            assert_true(v.cpu_used <= v.cpu_alloc);
            assert_true(v.pods <= v.max_pods);
            for (uint32_t d = 0; d < v.gpus->ndevs; d++) {
                assert_true(v.gpus->devs[d].milli_used <= 1000);
                assert_true(v.gpus->devs[d].mem_mib == 0 ||
                            v.gpus->devs[d].mem_used <= v.gpus->devs[d].mem_mib);
            }
            /* MIG instances: each used at most once (bind of a used one would be a bug) */
            uint32_t used = 0;
            for (uint32_t m = 0; m < v.gpus->nmig; m++)
                used += v.gpus->mig[m].used;
            assert_true(used <= v.gpus->nmig);
        }
        world_free(&a);
        world_free(&b);
        free(y);
    }
}

/* A richer random world for the shape cache, its score index and preemption dry runs:
 * PreferNoSchedule taints (raw TaintToleration counts 0..2), node labels a/b/c/zone and
 * pods preferring them (raw NodeAffinity sums whose normalised parts collide, so ties
 * span classes), bits labels giving more classes than the index keeps (fallback), and
 * low-priority pods already bound that pending high-priority pods preempt. */
static char *rich_world(uint64_t seed, int nodes, int pods, bool many_classes)
{
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_rng r;
    gs_rng_seed(&r, seed);
    gs_strbuf_puts(&sb, "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\n"
                        "value: 1000\n---\n"
                        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: mid}\n"
                        "value: 500\n---\n");
    for (int i = 0; i < nodes; i++) {
        int k = (int)gs_rng_below(&r, 3);
        gs_strbuf_printf(&sb, "apiVersion: v1\nkind: Node\nmetadata:\n  name: n%03d\n  labels:\n"
                              "    zone: z%d\n",
                         i, (int)gs_rng_below(&r, 3));
        if (gs_rng_below(&r, 3) == 0)
            gs_strbuf_puts(&sb, "    a: \"1\"\n");
        if (gs_rng_below(&r, 4) == 0)
            gs_strbuf_puts(&sb, "    b: \"1\"\n");
        if (gs_rng_below(&r, 3) == 0)
            gs_strbuf_puts(&sb, "    c: \"1\"\n");
        if (many_classes)
            for (int bit = 0; bit < 6; bit++)
                if (i >> bit & 1)
                    gs_strbuf_printf(&sb, "    bit%d: \"1\"\n", bit);
        if (k == 0)
            gs_strbuf_puts(&sb, "    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n");
        uint64_t nt = gs_rng_below(&r, 4);
        if (nt) {
            gs_strbuf_puts(&sb, "spec:\n  taints:\n");
            if (nt & 1)
                gs_strbuf_puts(&sb, "  - {key: soft1, value: x, effect: PreferNoSchedule}\n");
            if (nt & 2)
                gs_strbuf_puts(&sb, "  - {key: soft2, value: x, effect: PreferNoSchedule}\n");
        }
        gs_strbuf_printf(&sb, "status:\n  allocatable: {cpu: \"%d\", memory: 64Gi, pods: \"12\"%s}\n---\n",
                         8 + 8 * (int)gs_rng_below(&r, 2),
                         k == 0 ? ", nvidia.com/gpu: \"2\"" : "");
    }
    for (int i = 0; i < pods; i++) {
        int cpu = 1 + (int)gs_rng_below(&r, 3);
        bool gpu = gs_rng_below(&r, 4) == 0;
        bool bound = i < pods / 3;
        const char *prio = bound ? "" : gs_rng_below(&r, 2) ? "  priorityClassName: high\n"
                                     : gs_rng_below(&r, 2) ? "  priorityClassName: mid\n" : "";
        gs_strbuf_printf(&sb, "apiVersion: v1\nkind: Pod\nmetadata: {name: p%04d, uid: u%04d}\nspec:\n%s", i,
                         i, prio);
        if (bound)
            gs_strbuf_printf(&sb, "  nodeName: n%03d\n", (int)gs_rng_below(&r, (uint64_t)nodes));
        if (gs_rng_below(&r, 3) == 0)
            gs_strbuf_puts(&sb, "  tolerations:\n  - {key: soft1, operator: Exists}\n");
        uint64_t pref = gs_rng_below(&r, 4);
        if (pref || many_classes) {
            gs_strbuf_puts(&sb, "  affinity:\n    nodeAffinity:\n"
                                "      preferredDuringSchedulingIgnoredDuringExecution:\n");
            if (pref & 1)
                gs_strbuf_puts(&sb, "      - weight: 1\n        preference: {matchExpressions: [{key: a, operator: Exists}]}\n"
                                    "      - weight: 1\n        preference: {matchExpressions: [{key: c, operator: Exists}]}\n");
            if (pref & 2)
                gs_strbuf_printf(&sb, "      - weight: 100\n        preference: {matchExpressions: [{key: b, operator: Exists}]}\n"
                                      "      - weight: %d\n        preference: {matchExpressions: [{key: zone, operator: In, values: [z1]}]}\n",
                                 1 + (int)gs_rng_below(&r, 3));
            if (many_classes)
                for (int bit = 0; bit < 6; bit++)
                    gs_strbuf_printf(&sb, "      - weight: %d\n        preference: {matchExpressions: [{key: bit%d, operator: Exists}]}\n",
                                     1 << bit, bit);
        }
        gs_strbuf_printf(&sb, "  containers:\n  - {name: c, resources: {requests: {cpu: \"%d\", memory: %dGi}%s}}\n",
                         cpu, 2 * cpu, gpu ? ", limits: {nvidia.com/gpu: \"1\"}" : "");
        if (bound)
            gs_strbuf_printf(&sb, "status: {phase: Running, startTime: \"2024-01-%02dT00:00:00Z\"}\n",
                             1 + (int)gs_rng_below(&r, 28));
        gs_strbuf_puts(&sb, "---\n");
    }
    return gs_strbuf_detach(&sb);
}

static void compare_worlds(world *a, world *b, uint32_t *placed, uint32_t *preempted)
{
    assert_int_equal(gs_cluster_ndecisions(a->c), gs_cluster_ndecisions(b->c));
    for (size_t i = 0; i < a->snap.pods.n; i++) {
        const gs_decision *da = gs_cluster_decision_for_pod(a->c, (uint32_t)i);
        const gs_decision *db = gs_cluster_decision_for_pod(b->c, (uint32_t)i);
        assert_true((da == NULL) == (db == NULL));
        if (!da)
            continue;
        assert_int_equal(da->outcome, db->outcome);
        assert_int_equal(da->node, db->node);
        assert_int_equal(da->score, db->score);
        assert_int_equal(da->feasible, db->feasible);
        assert_int_equal(da->order, db->order);
        assert_int_equal(da->nvictims, db->nvictims);
        for (uint32_t k = 0; k < da->nvictims; k++)
            assert_int_equal(da->victims[k], db->victims[k]);
        assert_true((da->message == NULL) == (db->message == NULL));
        if (da->message)
            assert_string_equal(da->message, db->message);
        assert_int_equal(da->assign.n, db->assign.n);
        for (uint32_t k = 0; k < da->assign.n; k++) {
            assert_int_equal(da->assign.dev[k], db->assign.dev[k]);
            assert_int_equal(da->assign.milli[k], db->assign.milli[k]);
        }
        *placed += da->outcome == GS_OUT_SCHEDULED;
        *preempted += da->outcome == GS_OUT_PREEMPTED;
    }
    /* a stale cached verdict would have been reported */
    assert_int_equal(gs_cluster_nwarnings(a->c), gs_cluster_nwarnings(b->c));
}

/* The shape cache, its node-change log and score index, and dry runs that leave node
 * versions alone change nothing: same decisions as evaluating every node from scratch,
 * with preemption, soft taints, preferred affinity (ties across classes), the index's
 * fallback beyond its class limit, and every scoring strategy. */
static void test_random_index(void **state)
{
    (void)state;
    static const gs_strategy strat[] = {GS_STRATEGY_LEAST_ALLOCATED, GS_STRATEGY_MOST_ALLOCATED};
    uint32_t placed = 0, preempted = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        bool many = seed % 4 == 0;
        char *y = rich_world(seed, many ? 64 : 40, 600, many);
        gs_config cfg;
        gs_config_defaults(&cfg);
        cfg.seed = seed;
        cfg.strategy = strat[seed % 2];
        world a, b;
        world_load(&a, y, &cfg);
        cfg.no_shape_cache = true;
        world_load(&b, y, &cfg);
        compare_worlds(&a, &b, &placed, &preempted);
        world_free(&a);
        world_free(&b);
        free(y);
    }
    assert_true(placed > 1000);
    assert_true(preempted > 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_taint_message),
        cmocka_unit_test(test_whole_gpus_never_overcommit),
        cmocka_unit_test(test_priority_queue_and_preemption),
        cmocka_unit_test(test_preemption_never),
        cmocka_unit_test(test_quota_rejection),
        cmocka_unit_test(test_limits_gpu_quota_not_enforced),
        cmocka_unit_test(test_fractional_share_same_device),
        cmocka_unit_test(test_least_allocated_score),
        cmocka_unit_test(test_effective_requests_init),
        cmocka_unit_test(test_unschedulable_and_affinity),
        cmocka_unit_test(test_extended_resource_toleration),
        cmocka_unit_test(test_node_order_invariance),
        cmocka_unit_test(test_explain_incident),
        cmocka_unit_test(test_random_invariants),
        cmocka_unit_test(test_random_index),
        cmocka_unit_test(test_daemonset_pinned),
        cmocka_unit_test(test_mig_exact_resource_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
