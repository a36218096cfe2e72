/*
 * test_check_gpu_conventions.c - the node rules over the peers' GPU conventions: GS002 on
 * managed-cloud nodes, GS003 on GFD's MIG-INVALID product and HAMi nodes, GS004 on renamed
 * time-slicing replicas, GS011 with stale zero-valued MIG resources.
 */
#include "test_check_util.h"

#define TAINT "spec:\n  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]\n"
#define NODE(name, labels, alloc)                                                          \
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: " name "\n  labels: {" labels "}\n" TAINT \
    "status:\n  allocatable: {" alloc "}\n---\n"
#define POOL "node.kubernetes.io/instance-type: x, "
#define GFD "nvidia.com/cuda.driver-version.full: 550.107.02, "

static void test_gs002_cloud_labels(void **state)
{
    (void)state;
    checked c;
    check_text(&c, NODE("gke", POOL "cloud.google.com/gke-accelerator: nvidia-l4", "nvidia.com/gpu: \"1\"")
                   NODE("eks", POOL "k8s.amazonaws.com/accelerator: nvidia-tesla-t4", "nvidia.com/gpu: \"1\"")
                   NODE("aks-mig", POOL "kubernetes.azure.com/accelerator: nvidia",
                        "nvidia.com/mig-1g.10gb: \"7\"")
                   NODE("plain", POOL "nvidia.com/gpu.present: \"true\"", "nvidia.com/gpu: \"1\""));
    assert_int_equal(count_rule(&c, "GS002", "gke"), 0);
    assert_int_equal(count_rule(&c, "GS002", "eks"), 0);
    /* the MIG labels are still required on a MIG node */
    const gs_finding *f = find_rule(&c, "GS002", "aks-mig");
    assert_non_null(f);
    assert_non_null(strstr(f->message, "nvidia.com/mig.strategy"));
    assert_null(strstr(f->message, "nvidia.com/gpu.product"));
    assert_int_equal(count_rule(&c, "GS002", "plain"), 1);
    checked_free(&c);
}

static void test_gs003_mig_invalid_and_hami(void **state)
{
    (void)state;
    checked c;
    check_text(&c,
               NODE("inv", POOL GFD "nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB-MIG-INVALID, "
                    "nvidia.com/gpu.count: \"0\", nvidia.com/mig.strategy: single, nvidia.com/mig.config: x",
                    "nvidia.com/gpu: \"0\"")
               "apiVersion: v1\nkind: Node\nmetadata:\n  name: hami\n  labels: {" POOL GFD
               "nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n  annotations:\n"
               "    hami.io/node-nvidia-register: '[{\"id\":\"GPU-0\",\"count\":10,\"devmem\":81920,"
               "\"devcore\":100,\"type\":\"NVIDIA-A100\",\"health\":true}]'\n" TAINT
               "status:\n  allocatable: {nvidia.com/gpu: \"80\"}\n");
    const gs_finding *f = find_rule(&c, "GS003", "inv");
    assert_non_null(f);
    assert_non_null(strstr(f->message, "MIG-INVALID"));
    assert_non_null(strstr(f->message, "migStrategy mixed"));
    assert_int_equal(count_rule(&c, "GS004", "inv"), 0); /* not "device plugin down" */
    /* 80 vGPU slots on one registered GPU: a valid inventory */
    assert_int_equal(count_rule(&c, "GS003", "hami"), 0);
    assert_int_equal(count_rule(&c, "GS006", "hami"), 0); /* HAMi-core limits memory */
    checked_free(&c);
}

static void test_gs004_renamed_replicas(void **state)
{
    (void)state;
    checked c;
    check_text(&c, NODE("ts", POOL GFD "nvidia.com/gpu.product: NVIDIA-A10G, nvidia.com/gpu.count: \"8\", "
                        "nvidia.com/gpu.replicas: \"16\"",
                        "nvidia.com/gpu: \"0\", nvidia.com/gpu.shared: \"128\""));
    assert_int_equal(count_rule(&c, "GS004", "ts"), 0);
    assert_int_equal(count_rule(&c, "GS003", "ts"), 0);
    checked_free(&c);
}

#define MIG_POD                                                                              \
    "apiVersion: v1\nkind: Pod\nmetadata: {name: m, namespace: ml}\nspec:\n"               \
    "  tolerations: [{key: nvidia.com/gpu, operator: Exists}]\n  containers:\n  - name: c\n" \
    "    resources: {limits: {nvidia.com/mig-1g.5gb: 1}}\n"

static void test_gs011_stale_mixed_keys(void **state)
{
    (void)state;
    checked c;
    /* single strategy (GFD) with stale mixed keys: a mig-* pod is a mismatch */
    check_text(&c, NODE("single", POOL GFD "nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB-MIG-1g.5gb, "
                        "nvidia.com/gpu.count: \"14\", nvidia.com/mig.strategy: single, nvidia.com/mig.config: x",
                        "nvidia.com/gpu: \"14\", nvidia.com/mig-1g.5gb: \"0\", nvidia.com/mig-3g.20gb: \"0\"")
                   MIG_POD);
    const gs_finding *f = find_rule(&c, "GS011", "m");
    assert_non_null(f);
    assert_non_null(strstr(f->message, "single"));
    checked_free(&c);
    /* a stale zero beside whole GPUs decides nothing: the strategy is none */
    check_text(&c, NODE("whole", POOL GFD "nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB",
                        "nvidia.com/gpu: \"8\", nvidia.com/mig-1g.5gb: \"0\"") MIG_POD);
    f = find_rule(&c, "GS011", "m");
    assert_non_null(f);
    assert_non_null(strstr(f->message, "none"));
    checked_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gs002_cloud_labels),
        cmocka_unit_test(test_gs003_mig_invalid_and_hami),
        cmocka_unit_test(test_gs004_renamed_replicas),
        cmocka_unit_test(test_gs011_stale_mixed_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
