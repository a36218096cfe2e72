/*
 * test_check_nodes.c - the GPU node rules of lib/check (GS001-GS006).
 *
 * Each case is a small inline cluster with a failing and a passing variant; GPU-node
 * detection and inventories come from the GPU layer (gs_node_gpus_build), so these cases
 * also pin that check agrees with it (gpu.present label, MIG-only nodes, time-slicing).
 */
#include "test_check_util.h"

#define NODE_HEAD(name) "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: " name "\n"
#define GOOD_LABELS                                                                                   \
    "    node.kubernetes.io/instance-type: p4d\n"                                                      \
    "    nvidia.com/cuda.driver-version.full: 550.1\n"

static void test_untainted_gpu_node(void **state)
{
    (void)state;
    checked c;
    check_text(&c,
               /* untainted: capacity only */
               NODE_HEAD("bare") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.product: Tesla-T4\n"
               "status:\n  capacity: {nvidia.com/gpu: \"1\"}\n"
               /* PreferNoSchedule only discourages */
               NODE_HEAD("prefer") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.product: Tesla-T4\n"
               "spec:\n  taints: [{key: nvidia.com/gpu, effect: PreferNoSchedule}]\n"
               "status:\n  allocatable: {nvidia.com/gpu: \"1\"}\n"
               /* NoExecute keeps pods off too */
               NODE_HEAD("noexec") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.product: Tesla-T4\n"
               "spec:\n  taints: [{key: nvidia.com/gpu, effect: NoExecute}]\n"
               "status:\n  allocatable: {nvidia.com/gpu: \"1\"}\n"
               /* another key does not count */
               NODE_HEAD("otherkey") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.product: Tesla-T4\n"
               "spec:\n  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]\n"
               "status:\n  allocatable: {nvidia.com/gpu: \"1\"}\n"
               /* MIG resources make a GPU node */
               NODE_HEAD("mig") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n"
               "    nvidia.com/mig.strategy: mixed\n    nvidia.com/mig.config: all-1g.10gb\n"
               "status:\n  allocatable: {nvidia.com/mig-1g.10gb: \"7\"}\n"
               /* CPU node */
               NODE_HEAD("cpu") "status:\n  allocatable: {cpu: \"8\"}\n");
    assert_rule(&c, "GS001", "bare", 1);
    assert_rule(&c, "GS001", "prefer", 1);
    assert_non_null(strstr(find_rule(&c, "GS001", "prefer")->message, "PreferNoSchedule"));
    assert_rule(&c, "GS001", "noexec", 0);
    assert_rule(&c, "GS001", "otherkey", 1);
    assert_rule(&c, "GS001", "mig", 1);
    assert_rule(&c, "GS001", "cpu", 0);
    const gs_finding *f = find_rule(&c, "GS001", "bare");
    assert_int_equal(f->severity, GS_SEV_ERROR);
    assert_string_equal(f->kind, "Node");
    assert_string_equal(f->namespace_, "");
    assert_string_equal(f->src.file, "in.yaml");
    assert_int_equal(f->src.line, 2);
    assert_int_equal(f->src.col, 1);
    checked_free(&c);

    /* the organisation's own taint key */
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    cfg.gpu_taint_keys[0] = "dedicated";
    check_text_cfg(&c,
                   NODE_HEAD("otherkey") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.product: Tesla-T4\n"
                   "spec:\n  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]\n"
                   "status:\n  allocatable: {nvidia.com/gpu: \"1\"}\n",
                   &cfg);
    assert_rule(&c, "GS001", NULL, 0);
    checked_free(&c);
    gs_check_config_free(&cfg);
}

static void test_labels(void **state)
{
    (void)state;
    checked c;
    check_text(&c,
               NODE_HEAD("none") "  labels: {nvidia.com/gpu.present: \"true\"}\n"
               "spec:\n  taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
               "status:\n  allocatable: {nvidia.com/gpu: \"1\"}\n"
               /* the alternative label (beta instance type, old driver label) satisfies */
               NODE_HEAD("alt") "  labels:\n    beta.kubernetes.io/instance-type: g4\n"
               "    nvidia.com/cuda.driver.major: \"550\"\n    nvidia.com/gpu.product: Tesla-T4\n"
               "spec:\n  taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
               "status:\n  allocatable: {nvidia.com/gpu: \"1\"}\n"
               /* MIG node without its MIG labels */
               NODE_HEAD("mig") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n"
               "spec:\n  taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
               "status:\n  allocatable: {nvidia.com/mig-1g.10gb: \"7\"}\n"
               NODE_HEAD("cpu") "status:\n  allocatable: {cpu: \"8\"}\n");
    assert_rule(&c, "GS002", "none", 1);
    const char *m = find_rule(&c, "GS002", "none")->message;
    assert_non_null(strstr(m, "node.kubernetes.io/instance-type"));
    assert_non_null(strstr(m, "nvidia.com/gpu.product"));
    assert_non_null(strstr(m, "nvidia.com/cuda.driver-version.full"));
    assert_null(strstr(m, "mig"));
    assert_rule(&c, "GS002", "alt", 0);
    assert_rule(&c, "GS002", "mig", 1);
    assert_non_null(strstr(find_rule(&c, "GS002", "mig")->message, "nvidia.com/mig.strategy"));
    assert_non_null(strstr(find_rule(&c, "GS002", "mig")->message, "nvidia.com/mig.config"));
    assert_rule(&c, "GS002", "cpu", 0);
    assert_int_equal(find_rule(&c, "GS002", "none")->severity, GS_SEV_WARNING);
    checked_free(&c);
}

static void test_inventory_and_devices(void **state)
{
    (void)state;
    checked c;
    check_text(&c,
               /* MIG resources on a GPU that has no MIG */
               NODE_HEAD("t4mig") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.product: Tesla-T4\n"
               "spec:\n  taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
               "status:\n  allocatable: {nvidia.com/mig-1g.10gb: \"2\"}\n"
               /* labelled GPU node, no device plugin */
               NODE_HEAD("down") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.present: \"true\"\n"
               "    nvidia.com/gpu.product: Tesla-T4\n"
               "spec:\n  taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
               "status:\n  allocatable: {cpu: \"8\"}\n"
               /* 8 GPUs, 6 allocatable */
               NODE_HEAD("lost") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.product: Tesla-T4\n"
               "    nvidia.com/gpu.count: \"8\"\n"
               "spec:\n  taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
               "status:\n  allocatable: {nvidia.com/gpu: \"6\"}\n"
               /* capacity 4, allocatable 3 */
               NODE_HEAD("cap") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.product: Tesla-T4\n"
               "spec:\n  taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
               "status:\n  capacity: {nvidia.com/gpu: \"4\"}\n  allocatable: {nvidia.com/gpu: \"3\"}\n"
               NODE_HEAD("ok") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.product: Tesla-T4\n"
               "    nvidia.com/gpu.count: \"2\"\n"
               "spec:\n  taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
               "status:\n  allocatable: {nvidia.com/gpu: \"2\"}\n");
    assert_rule(&c, "GS003", "t4mig", 1);
    assert_non_null(strstr(find_rule(&c, "GS003", "t4mig")->message, "MIG"));
    assert_rule(&c, "GS003", "ok", 0);
    assert_rule(&c, "GS004", "down", 1);
    assert_non_null(strstr(find_rule(&c, "GS004", "down")->message, "nvidia.com/gpu.present=true"));
    assert_rule(&c, "GS004", "lost", 1);
    assert_non_null(strstr(find_rule(&c, "GS004", "lost")->message, "only 6 of its 8"));
    assert_rule(&c, "GS004", "cap", 1);
    assert_rule(&c, "GS004", "ok", 0);
    /* a broken inventory is still a GPU node for the taint rule */
    assert_rule(&c, "GS001", NULL, 0);
    checked_free(&c);
}

static void test_mig_state(void **state)
{
    (void)state;
    checked c;
    check_text(&c,
               NODE_HEAD("failed") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n"
               "    nvidia.com/mig.config: all-balanced\n    nvidia.com/mig.config.state: failed\n"
               "spec:\n  taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
               "status:\n  allocatable: {nvidia.com/gpu: \"8\"}\n"
               NODE_HEAD("paused") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n"
               "    nvidia.com/mig.config.state: success\n"
               "    nvidia.com/gpu.deploy.device-plugin: paused-for-mig-change\n"
               "spec:\n  taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
               "status:\n  allocatable: {nvidia.com/gpu: \"8\"}\n"
               /* paused on purpose while the manager works */
               NODE_HEAD("pending") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n"
               "    nvidia.com/mig.config.state: pending\n"
               "    nvidia.com/gpu.deploy.device-plugin: paused-for-mig-change\n"
               "spec:\n  taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
               "status:\n  allocatable: {nvidia.com/gpu: \"8\"}\n");
    assert_rule(&c, "GS005", "failed", 1);
    assert_non_null(strstr(find_rule(&c, "GS005", "failed")->message, "all-balanced"));
    assert_rule(&c, "GS005", "paused", 1);
    assert_non_null(strstr(find_rule(&c, "GS005", "paused")->message, "device-plugin"));
    assert_rule(&c, "GS005", "pending", 0);
    checked_free(&c);
}

static void test_time_slicing(void **state)
{
    (void)state;
    checked c;
    check_text(&c,
               NODE_HEAD("ts") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.product: Tesla-T4\n"
               "    nvidia.com/gpu.replicas: \"4\"\n    nvidia.com/gpu.memory: \"15360\"\n"
               "spec:\n  taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
               "status:\n  allocatable: {nvidia.com/gpu: \"8\"}\n"
               /* renamed replicas: no "whole GPU gets a slice" remark */
               NODE_HEAD("renamed") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.product: Tesla-T4\n"
               "    nvidia.com/gpu.replicas: \"2\"\n    nvidia.com/gpu.sharing-strategy: time-slicing\n"
               "spec:\n  taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
               "status:\n  allocatable: {nvidia.com/gpu.shared: \"4\"}\n"
               NODE_HEAD("mps") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.product: Tesla-T4\n"
               "    nvidia.com/gpu.replicas: \"4\"\n    nvidia.com/gpu.sharing-strategy: mps\n"
               "spec:\n  taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
               "status:\n  allocatable: {nvidia.com/gpu: \"8\"}\n"
               NODE_HEAD("plain") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.product: Tesla-T4\n"
               "spec:\n  taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
               "status:\n  allocatable: {nvidia.com/gpu: \"2\"}\n");
    assert_rule(&c, "GS006", "ts", 1);
    assert_non_null(strstr(find_rule(&c, "GS006", "ts")->message, "among 4 pods"));
    assert_non_null(strstr(find_rule(&c, "GS006", "ts")->message, "15360 MiB"));
    assert_non_null(strstr(find_rule(&c, "GS006", "ts")->message, "renameByDefault"));
    assert_rule(&c, "GS006", "renamed", 1);
    assert_null(strstr(find_rule(&c, "GS006", "renamed")->message, "renameByDefault"));
    assert_rule(&c, "GS006", "mps", 0);
    assert_rule(&c, "GS006", "plain", 0);
    checked_free(&c);
}

static void test_checked_objects(void **state)
{
    (void)state;
    checked c;
    check_text(&c, NODE_HEAD("gpu") "  labels:\n" GOOD_LABELS "    nvidia.com/gpu.product: Tesla-T4\n"
                   "spec:\n  taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
                   "status:\n  allocatable: {nvidia.com/gpu: \"2\"}\n"
                   NODE_HEAD("cpu") "status:\n  allocatable: {cpu: \"8\"}\n");
    assert_int_equal(c.res.nfindings, 0);
    assert_int_equal(c.res.objects, 2);
    assert_int_equal(c.res.nchecked, 2);
    /* sorted by position: gpu first */
    assert_string_equal(c.res.checked[0].name, "gpu");
    uint32_t n;
    const gs_rule_info *rules = gs_rules(&n);
    const gs_rule_info *gs001 = gs_rule_find("GS001");
    uint64_t bit = (uint64_t)1 << (gs001 - rules);
    assert_true(c.res.checked[0].rules & bit);  /* a GPU node passed GS001 */
    assert_false(c.res.checked[1].rules & bit); /* a CPU node is not a GS001 subject */
    checked_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_untainted_gpu_node),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_inventory_and_devices),
        cmocka_unit_test(test_mig_state),
        cmocka_unit_test(test_time_slicing),
        cmocka_unit_test(test_checked_objects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
