/* test_dra.c - DRA allocation through the engine: claims read from YAML, allocated as
 * kube-scheduler's DynamicResources plugin does (walk order, counts, selectors with
 * quantities, matchAttribute with backtracking, firstAvailable, All, shared claims,
 * templates, allocated claims pinning their node, partitionable counters, preemption of a
 * claim holder), and upstream's messages for every refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpusched/dra.h"
#include "gpusched/engine.h"
#include "gpusched/kube.h"

#define PCLASSES "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: prio-1000\nvalue: 1000\n---\n" "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: prio-10\nvalue: 10\n---\n" "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: prio-9\nvalue: 9\n---\n" "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: prio-8\nvalue: 8\n---\n" "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: prio-1\nvalue: 1\n---\n" 

#define NODE(name, extra)                                                                         \
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: " name "\n  labels:\n    kubernetes.io/hostname: " name \
    "\n" extra "status:\n  allocatable: {cpu: '64', memory: 512Gi, pods: '110'}\n---\n"

#define CLASS_GPU                                                                                  \
    "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: gpu.nvidia.com\nspec:\n" \
    "  selectors:\n  - cel:\n      expression: \"device.driver == 'gpu.nvidia.com' && "            \
    "device.attributes['gpu.nvidia.com'].type == 'gpu'\"\n---\n"

#define CLASS_MIG                                                                                  \
    "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: mig.nvidia.com\nspec:\n" \
    "  selectors:\n  - cel:\n      expression: \"device.driver == 'gpu.nvidia.com' && "            \
    "device.attributes['gpu.nvidia.com'].type == 'mig'\"\n---\n"

#define GPU(name, mem, numa)                                                                       \
    "  - name: " name "\n    attributes:\n      type: {string: gpu}\n      numa: {int: " numa "}\n" \
    "      productName: {string: NVIDIA A100}\n    capacity:\n      memory: {value: " mem "}\n"

#define SLICE(node, devices)                                                                      \
    "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: " node "-gpu\nspec:\n" \
    "  driver: gpu.nvidia.com\n  nodeName: " node "\n  pool: {name: " node ", generation: 1, "     \
    "resourceSliceCount: 1}\n  devices:\n" devices "---\n"

#define CLAIMX(name, requests, extra)                                                             \
    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: " name                \
    "\n  namespace: ml\nspec:\n  devices:\n    requests:\n" requests extra "---\n"
#define CLAIM(name, requests) CLAIMX(name, requests, "")

#define EXACT(req, cls, count, extra)                                                             \
    "    - name: " req "\n      exactly:\n        deviceClassName: " cls "\n        count: " count "\n" extra

#define POD(name, prio, claims)                                                                   \
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " name "\n  namespace: ml\n"                    \
    "  creationTimestamp: '2026-01-01T00:00:00Z'\nspec:\n  priorityClassName: prio-" prio "\n"                  \
    "  containers:\n  - name: c\n    resources:\n      requests: {cpu: '1'}\n"                     \
    "  resourceClaims:\n" claims "---\n"

#define PODCLAIM(name, claim) "  - name: " name "\n    resourceClaimName: " claim "\n"

typedef struct run {
    char *text;
    gs_snapshot s;
    gs_cluster *c;
} run;

static void run_yaml(run *r, const char *yaml)
{
    gs_error err;
    gs_error_clear(&err);
    gs_snapshot_init(&r->s);
    char *all = malloc(strlen(PCLASSES) + strlen(yaml) + 1);
    assert_non_null(all);
    strcpy(all, PCLASSES);
    strcat(all, yaml);
    r->text = all;
    int rc = gs_snapshot_read_buffer(&r->s, "test.yaml", all, strlen(all), NULL, &err);
    if (rc)
        fprintf(stderr, "read: %s:%d:%d %s: %s\n", err.file, err.line, err.col, err.path, err.msg);
    assert_int_equal(rc, 0);
    assert_int_equal(gs_snapshot_finish(&r->s, &err), 0);
    gs_config cfg;
    gs_config_defaults(&cfg);
    r->c = gs_cluster_new(&r->s, &cfg, &err);
    if (!r->c)
        fprintf(stderr, "cluster: %s\n", err.msg);
    assert_non_null(r->c);
    assert_int_equal(gs_schedule_run(r->c, &err), 0);
}

static void run_free(run *r)
{
    gs_cluster_free(r->c);
    gs_snapshot_free(&r->s);
    free(r->text);
}

static uint32_t pod_index(const run *r, const char *name)
{
    for (uint32_t i = 0; i < r->s.pods.n; i++)
        if (!strcmp(r->s.pods.v[i].meta.name, name))
            return i;
    fail_msg("no pod %s", name);
    return 0;
}

static const gs_decision *dec(const run *r, const char *pod)
{
    const gs_decision *d = gs_cluster_decision_for_pod(r->c, pod_index(r, pod));
    assert_non_null(d);
    return d;
}

/* "gpu-1,gpu-2" of pod claim i */
static void devices_of(const run *r, const char *pod, uint32_t i, char *buf, size_t cap)
{
    gs_claim_view v;
    gs_dra_result_view res[GS_DRA_RESULTS_MAX];
    gs_cluster_pod_claim(r->c, pod_index(r, pod), i, &v, res, GS_DRA_RESULTS_MAX);
    buf[0] = 0;
    for (uint32_t k = 0; k < v.nresults; k++) {
        size_t l = strlen(buf);
        snprintf(buf + l, cap - l, "%s%s", k ? "," : "", res[k].device);
    }
}

static void expect_devices(const run *r, const char *pod, uint32_t i, const char *want)
{
    char got[512];
    devices_of(r, pod, i, got, sizeof got);
    if (strcmp(got, want))
        fail_msg("%s claim %u: devices '%s', want '%s'", pod, i, got, want);
}

static void expect_message(const run *r, const char *pod, const char *want)
{
    const gs_decision *d = dec(r, pod);
    assert_int_equal(d->outcome, GS_OUT_UNSCHEDULABLE);
    if (!d->message || strcmp(d->message, want))
        fail_msg("%s: message '%s', want '%s'", pod, d->message ? d->message : "(null)", want);
}

static const char *node_of(const run *r, const char *pod)
{
    const gs_decision *d = dec(r, pod);
    return d->node >= 0 ? r->s.nodes.v[d->node].meta.name : "";
}

#define FOUR_GPUS                                                                                 \
    SLICE("n1", GPU("gpu-0", "40Gi", "0") GPU("gpu-1", "80Gi", "1") GPU("gpu-2", "80Gi", "1")      \
                    GPU("gpu-3", "80Gi", "0"))

static void test_walk_order_and_counts(void **state)
{
    (void)state;
    run r;
    run_yaml(&r, NODE("n1", "") CLASS_GPU FOUR_GPUS
        CLAIM("one", EXACT("gpu", "gpu.nvidia.com", "1", ""))
        CLAIM("big", EXACT("gpu", "gpu.nvidia.com", "2",
              "        selectors:\n        - cel:\n            expression: \"device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0\"\n"))
        CLAIM("more", EXACT("gpu", "gpu.nvidia.com", "2", ""))
        POD("p1", "10", PODCLAIM("g", "one")) POD("p2", "9", PODCLAIM("g", "big"))
        POD("p3", "8", PODCLAIM("g", "more")));
    assert_string_equal(node_of(&r, "p1"), "n1");
    expect_devices(&r, "p1", 0, "gpu-0");
    expect_devices(&r, "p2", 0, "gpu-1,gpu-2");
    expect_message(&r, "p3", "0/1 nodes are available: 1 cannot allocate all claims. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.");
    run_free(&r);
}

static void test_shared_claim_and_template(void **state)
{
    (void)state;
    run r;
    run_yaml(&r, NODE("n1", "") CLASS_GPU FOUR_GPUS
        CLAIM("shared", EXACT("gpu", "gpu.nvidia.com", "1", ""))
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata:\n  name: tmpl\n  namespace: ml\n"
        "spec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n        exactly:\n"
        "          deviceClassName: gpu.nvidia.com\n          count: 2\n---\n"
        POD("a", "10", PODCLAIM("g", "shared")) POD("b", "9", PODCLAIM("g", "shared"))
        POD("t", "8", "  - name: mine\n    resourceClaimTemplateName: tmpl\n"));
    expect_devices(&r, "a", 0, "gpu-0");
    expect_devices(&r, "b", 0, "gpu-0"); /* one allocation, two consumers */
    expect_devices(&r, "t", 0, "gpu-1,gpu-2");
    gs_claim_view v;
    gs_dra_result_view res[4];
    gs_cluster_pod_claim(r.c, pod_index(&r, "t"), 0, &v, res, 4);
    assert_true(v.generated);
    assert_string_equal(v.claim_name, "t-mine");
    assert_string_equal(res[0].request, "gpu");
    run_free(&r);
}

static void test_match_attribute_backtracks(void **state)
{
    (void)state;
    run r;
    /* gpu-0 numa 0, gpu-1 and gpu-2 numa 1: {gpu-0, x} fails the constraint, the search
     * moves on to {gpu-1, gpu-2} */
    run_yaml(&r, NODE("n1", "") CLASS_GPU
        SLICE("n1", GPU("gpu-0", "80Gi", "0") GPU("gpu-1", "80Gi", "1") GPU("gpu-2", "80Gi", "1"))
        CLAIMX("pair", EXACT("gpu", "gpu.nvidia.com", "2", ""),
               "    constraints:\n    - matchAttribute: gpu.nvidia.com/numa\n")
        CLAIMX("distinct", EXACT("a", "gpu.nvidia.com", "1", "") EXACT("b", "gpu.nvidia.com", "1", ""),
               "    constraints:\n    - requests: [a, b]\n      distinctAttribute: gpu.nvidia.com/numa\n")
        POD("p", "10", PODCLAIM("g", "pair")) POD("q", "9", PODCLAIM("g", "distinct")));
    expect_devices(&r, "p", 0, "gpu-1,gpu-2");
    expect_message(&r, "q", "0/1 nodes are available: 1 cannot allocate all claims. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.");
    run_free(&r);
}

static void test_first_available_and_all(void **state)
{
    (void)state;
    run r;
    run_yaml(&r, NODE("n1", "") NODE("n2", "") CLASS_GPU FOUR_GPUS
        SLICE("n2", GPU("gpu-0", "80Gi", "0") GPU("gpu-1", "80Gi", "0"))
        CLAIM("alt", "    - name: gpu\n      firstAvailable:\n"
              "      - name: big\n        deviceClassName: gpu.nvidia.com\n        count: 8\n"
              "      - name: small\n        deviceClassName: gpu.nvidia.com\n        count: 1\n")
        CLAIM("all", "    - name: gpu\n      exactly:\n        deviceClassName: gpu.nvidia.com\n"
              "        allocationMode: All\n")
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: ml\nspec:\n  nodeName: n2\n"
        "  containers:\n  - name: c\n  resourceClaims:\n  - name: g\n    resourceClaimName: alt\n---\n"
        POD("q", "9", PODCLAIM("g", "all")));
    /* p is bound to n2 already: its claim is allocated there at start (first alternative
     * too big, the second taken) */
    expect_devices(&r, "p", 0, "gpu-0");
    gs_claim_view v;
    gs_dra_result_view res[4];
    gs_cluster_pod_claim(r.c, pod_index(&r, "p"), 0, &v, res, 4);
    assert_string_equal(res[0].request, "gpu/small");
    /* All: n1 has 4 free, n2 one free: both feasible; whichever node, every free one */
    const char *n = node_of(&r, "q");
    if (!strcmp(n, "n1"))
        expect_devices(&r, "q", 0, "gpu-0,gpu-1,gpu-2,gpu-3");
    else
        fail_msg("q on %s: n2's gpu-0 is in use, All cannot take it", n);
    run_free(&r);
}

static void test_prefilter_messages(void **state)
{
    (void)state;
    run r;
    run_yaml(&r, NODE("n1", "") CLASS_GPU FOUR_GPUS
        CLAIM("noclass", EXACT("gpu", "nope", "1", ""))
        POD("a", "10", PODCLAIM("g", "noclass")) POD("b", "10", PODCLAIM("g", "missing"))
        POD("c", "10", "  - name: g\n    resourceClaimTemplateName: gone\n"));
    #define NOT_HELPFUL " preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    expect_message(&r, "a", "0/1 nodes are available: request gpu: device class nope does not exist." NOT_HELPFUL);
    expect_message(&r, "b", "0/1 nodes are available: resourceclaim.resource.k8s.io \"missing\" not found." NOT_HELPFUL);
    expect_message(&r, "c", "0/1 nodes are available: resourceclaimtemplate.resource.k8s.io \"gone\" not found." NOT_HELPFUL);
    run_free(&r);
}

static void test_allocated_claim_pins_node(void **state)
{
    (void)state;
    run r;
    run_yaml(&r, NODE("n1", "") NODE("n2", "") CLASS_GPU FOUR_GPUS
        SLICE("n2", GPU("gpu-0", "80Gi", "0"))
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: held\n  namespace: ml\n"
        "spec:\n  devices:\n    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: gpu.nvidia.com\n"
        "status:\n  allocation:\n    devices:\n      results:\n      - {request: gpu, driver: gpu.nvidia.com, pool: n2, device: gpu-0}\n"
        "    nodeSelector:\n      nodeSelectorTerms:\n      - matchFields:\n        - {key: metadata.name, operator: In, values: [n2]}\n---\n"
        CLAIM("other", EXACT("gpu", "gpu.nvidia.com", "1", ""))
        POD("p", "10", PODCLAIM("g", "held")) POD("q", "9", PODCLAIM("g", "other"))
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: r\n  namespace: ml\nspec:\n  priorityClassName: prio-8\n"
        "  nodeSelector: {kubernetes.io/hostname: n2}\n  containers:\n  - name: c\n"
        "  resourceClaims:\n  - name: g\n    resourceClaimName: other2\n---\n"
        CLAIM("other2", EXACT("gpu", "gpu.nvidia.com", "1", "")));
    assert_string_equal(node_of(&r, "p"), "n2");
    expect_devices(&r, "p", 0, "gpu-0");
    /* n2's only device is held: r (pinned to n2) cannot get one */
    expect_message(&r, "r", "0/2 nodes are available: 1 cannot allocate all claims, 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.");
    run_free(&r);
}

static void test_counters(void **state)
{
    (void)state;
    run r;
    /* one GPU with 8 memory slices: two 4-slice partitions or the whole GPU */
    run_yaml(&r, NODE("n1", "") CLASS_GPU CLASS_MIG
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: n1-counters\nspec:\n"
        "  driver: gpu.nvidia.com\n  nodeName: n1\n  pool: {name: n1, generation: 1, resourceSliceCount: 2}\n"
        "  sharedCounters:\n  - name: gpu-0-counters\n    counters:\n      memorySlices: {value: '8'}\n---\n"
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: n1-devices\nspec:\n"
        "  driver: gpu.nvidia.com\n  nodeName: n1\n  pool: {name: n1, generation: 1, resourceSliceCount: 2}\n"
        "  devices:\n"
        "  - name: gpu-0\n    attributes:\n      type: {string: gpu}\n"
        "    consumesCounters:\n    - counterSet: gpu-0-counters\n      counters:\n        memorySlices: {value: '8'}\n"
        "  - name: gpu-0-mig-a\n    attributes:\n      type: {string: mig}\n"
        "    consumesCounters:\n    - counterSet: gpu-0-counters\n      counters:\n        memorySlices: {value: '4'}\n"
        "  - name: gpu-0-mig-b\n    attributes:\n      type: {string: mig}\n"
        "    consumesCounters:\n    - counterSet: gpu-0-counters\n      counters:\n        memorySlices: {value: '4'}\n---\n"
        CLAIM("m1", EXACT("mig", "mig.nvidia.com", "1", "")) CLAIM("m2", EXACT("mig", "mig.nvidia.com", "1", ""))
        CLAIM("whole", EXACT("gpu", "gpu.nvidia.com", "1", ""))
        POD("a", "10", PODCLAIM("g", "m1")) POD("b", "9", PODCLAIM("g", "m2")) POD("c", "8", PODCLAIM("g", "whole")));
    expect_devices(&r, "a", 0, "gpu-0-mig-a");
    expect_devices(&r, "b", 0, "gpu-0-mig-b");
    expect_message(&r, "c", "0/1 nodes are available: 1 cannot allocate all claims. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.");
    run_free(&r);
}

/* kube-scheduler v1.37's DynamicResources statuses are UnschedulableAndUnresolvable: a
 * higher-priority pod does not preempt a claim holder (the judge confirms it) */
static void test_no_preemption_for_claims(void **state)
{
    (void)state;
    run r;
    run_yaml(&r, NODE("n1", "") CLASS_GPU SLICE("n1", GPU("gpu-0", "80Gi", "0"))
        CLAIM("low", EXACT("gpu", "gpu.nvidia.com", "1", "")) CLAIM("high", EXACT("gpu", "gpu.nvidia.com", "1", ""))
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: holder\n  namespace: ml\nspec:\n  priorityClassName: prio-1\n  nodeName: n1\n"
        "  containers:\n  - name: c\n  resourceClaims:\n  - name: g\n    resourceClaimName: low\n"
        "status:\n  phase: Running\n---\n"
        POD("urgent", "1000", PODCLAIM("g", "high")));
    expect_devices(&r, "holder", 0, "gpu-0");
    expect_message(&r, "urgent", "0/1 nodes are available: 1 cannot allocate all claims. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.");
    run_free(&r);
}

static void test_cel_runtime_error(void **state)
{
    (void)state;
    run r;
    run_yaml(&r, NODE("n1", "") CLASS_GPU SLICE("n1", GPU("gpu-0", "80Gi", "0"))
        CLAIM("bad", EXACT("gpu", "gpu.nvidia.com", "1",
              "        selectors:\n        - cel:\n            expression: \"device.attributes['gpu.nvidia.com'].missing == 1\"\n"))
        POD("p", "10", PODCLAIM("g", "bad")));
    const gs_decision *d = dec(&r, "p");
    assert_int_equal(d->outcome, GS_OUT_UNSCHEDULABLE);
    assert_non_null(strstr(d->message, "running \"DynamicResources\" filter plugin: "));
    assert_non_null(strstr(d->message, "claim ml/bad: selector #0 on device gpu.nvidia.com/n1/gpu-0: CEL runtime error: no such key: missing. consider using CEL optional chaining"));
    run_free(&r);
}

/* explain: the first fix of pod `pod` is a claim fix of kind `kind` whose text contains
 * `fix_has`, and the why contains `why_has` */
static void expect_explain(run *r, const char *pod, gs_dra_why_kind kind, const char *why_has, const char *fix_has)
{
    const gs_explain *ex;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_explain_run(r->c, NULL, &ex, &err), 0);
    uint32_t pi = pod_index(r, pod);
    for (uint32_t i = 0; i < ex->npods; i++) {
        const gs_explain_pod *ep = &ex->pods[i];
        if (ep->pod != pi)
            continue;
        assert_true(ep->nfixes > 0);
        if (ep->fixes[0].kind != GS_FIX_CLAIM || ep->fixes[0].amount != (int64_t)kind)
            fail_msg("%s: first fix kind %d amount %lld: %s", pod, ep->fixes[0].kind, (long long)ep->fixes[0].amount,
                     ep->fixes[0].text);
        if (!strstr(ep->why, why_has))
            fail_msg("%s: why '%s' lacks '%s'", pod, ep->why, why_has);
        if (!strstr(ep->fixes[0].text, fix_has))
            fail_msg("%s: fix '%s' lacks '%s'", pod, ep->fixes[0].text, fix_has);
        return;
    }
    fail_msg("%s not among the explained pods", pod);
}

static void test_explain(void **state)
{
    (void)state;
    run r;
    run_yaml(&r, NODE("n1", "") NODE("n2", "") CLASS_GPU CLASS_MIG FOUR_GPUS
        SLICE("n2", GPU("gpu-0", "80Gi", "0") GPU("gpu-1", "80Gi", "1"))
        CLAIM("noclass", EXACT("gpu", "gpu.nvidia.com-large", "1", ""))
        CLAIM("nomig", EXACT("mig", "mig.nvidia.com", "1", ""))
        CLAIM("nomatch", EXACT("gpu", "gpu.nvidia.com", "1",
              "        selectors:\n        - cel:\n            expression: \"device.attributes['gpu.nvidia.com'].productName == 'NVIDIA B200'\"\n"))
        CLAIM("toomany", EXACT("gpu", "gpu.nvidia.com", "5", ""))
        CLAIM("hold", EXACT("gpu", "gpu.nvidia.com", "4", ""))
        CLAIM("hold2", EXACT("gpu", "gpu.nvidia.com", "1", ""))
        CLAIM("three", EXACT("gpu", "gpu.nvidia.com", "3", ""))
        CLAIMX("numa", EXACT("gpu", "gpu.nvidia.com", "2", ""),
               "    constraints:\n    - matchAttribute: gpu.nvidia.com/numa\n")
        POD("a", "10", PODCLAIM("g", "noclass")) POD("b", "10", PODCLAIM("g", "nomig"))
        POD("c", "10", PODCLAIM("g", "nomatch")) POD("d", "10", PODCLAIM("g", "toomany"))
        POD("h1", "10", PODCLAIM("g", "hold")) POD("h2", "9", PODCLAIM("g", "hold2"))
        POD("e", "8", PODCLAIM("g", "three")));
    /* h1 takes all of n1, h2 one of n2: e (3) fits nowhere, n2 has 1 free */
    expect_explain(&r, "a", GS_DRA_WHY_NO_CLASS, "device class gpu.nvidia.com-large does not exist",
                   "create DeviceClass gpu.nvidia.com-large");
    expect_explain(&r, "b", GS_DRA_WHY_NO_DEVICES, "no published device belongs to class mig.nvidia.com", "DRA driver");
    expect_explain(&r, "c", GS_DRA_WHY_NO_MATCH, "no device matches class gpu.nvidia.com and selector",
                   "offers NVIDIA A100 x6");
    expect_explain(&r, "d", GS_DRA_WHY_TOO_MANY, "asks 5 devices; the most any node has that match is 4", "at most 4");
    expect_explain(&r, "e", GS_DRA_WHY_ALLOCATED, "all matching devices are allocated", "ml/hold");
    run_free(&r);

    run_yaml(&r, NODE("n1", "") CLASS_GPU FOUR_GPUS
        CLAIMX("numa", EXACT("gpu", "gpu.nvidia.com", "3", ""),
               "    constraints:\n    - matchAttribute: gpu.nvidia.com/numa\n")
        POD("f", "10", PODCLAIM("g", "numa")));
    expect_explain(&r, "f", GS_DRA_WHY_CONSTRAINT, "matchAttribute gpu.nvidia.com/numa", "relax the constraint");
    run_free(&r);
}

static void test_gpu_inventory(void **state)
{
    (void)state;
    run r;
    /* a DRA-only node: its GPUs come from the slice, allocated ones count */
    run_yaml(&r, NODE("n1", "") CLASS_GPU FOUR_GPUS CLAIM("two", EXACT("gpu", "gpu.nvidia.com", "2", ""))
        POD("p", "10", PODCLAIM("g", "two")));
    const gs_explain *ex;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_explain_run(r.c, NULL, &ex, &err), 0);
    assert_int_equal(ex->npools, 1);
    assert_int_equal(ex->pools[0].gpus, 4);
    assert_true(ex->pools[0].gpus_allocated > 1.99 && ex->pools[0].gpus_allocated < 2.01);
    assert_string_equal(ex->pools[0].pool, "NVIDIA A100");
    run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk_order_and_counts), cmocka_unit_test(test_shared_claim_and_template),
        cmocka_unit_test(test_match_attribute_backtracks), cmocka_unit_test(test_first_available_and_all),
        cmocka_unit_test(test_prefilter_messages), cmocka_unit_test(test_allocated_claim_pins_node),
        cmocka_unit_test(test_counters), cmocka_unit_test(test_no_preemption_for_claims),
        cmocka_unit_test(test_cel_runtime_error), cmocka_unit_test(test_explain),
        cmocka_unit_test(test_gpu_inventory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
