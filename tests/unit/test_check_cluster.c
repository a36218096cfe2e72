/*
 * test_check_cluster.c - rules that relate objects across the input: GPU daemons
 * (GS019, GS020), quotas (GS021, GS022) and priorities (GS023-GS025).
 *
 * Quota keys follow k8s-semantics 6 (only requests.<extended> is charged); priorities
 * resolve as the Priority admission plugin does (k8s-semantics 5.1).
 */
#include "test_check_util.h"

#define DS(name, labels, spec)                                                                        \
    "---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: " name ", namespace: gpu-operator}\n" \
    "spec:\n  template:\n    metadata: {labels: " labels "}\n    spec:\n" spec
#define GPU_DEPLOY(name, ns, extra)                                                                   \
    "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " name ", namespace: " ns "}\n"      \
    "spec:\n  template:\n    spec:\n" TOLERATE_GPU extra                                               \
    "      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n"

static void test_daemons(void **state)
{
    (void)state;
    checked c;
    check_text(&c, NODE_A100_TAINTED
                   DS("nvidia-device-plugin-daemonset", "{}",
                      "      containers: [{name: c, image: \"nvcr.io/nvidia/k8s-device-plugin:v0.15.0\"}]\n")
                   DS("plugin-ok", "{}", "      priorityClassName: system-node-critical\n" TOLERATE_GPU
                      "      containers: [{name: c, image: \"nvcr.io/nvidia/k8s-device-plugin@sha256:0123\"}]\n")
                   DS("gfd", "{app.kubernetes.io/name: gpu-feature-discovery}",
                      "      priorityClassName: system-cluster-critical\n"
                      "      tolerations: [{operator: Exists}]\n"
                      "      containers: [{name: c, image: example/other}]\n")
                   DS("exporter", "{}", "      tolerations: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]\n"
                      "      priorityClassName: system-node-critical\n"
                      "      containers: [{name: c, image: \"nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5\"}]\n")
                   DS("fluent-bit", "{}", "      containers: [{name: c, image: fluent/fluent-bit}]\n"));
    /* by image, no toleration, no class */
    assert_rule(&c, "GS019", "nvidia-device-plugin-daemonset", 1);
    assert_non_null(strstr(find_rule(&c, "GS019", "nvidia-device-plugin-daemonset")->message, "device plugin"));
    assert_non_null(strstr(find_rule(&c, "GS019", "nvidia-device-plugin-daemonset")->message,
                           "nvidia.com/gpu=present:NoSchedule"));
    assert_rule(&c, "GS020", "nvidia-device-plugin-daemonset", 1);
    /* by digest-pinned image, fixed */
    assert_rule(&c, "GS019", "plugin-ok", 0);
    assert_rule(&c, "GS020", "plugin-ok", 0);
    /* by label; tolerates everything; cluster-critical is not node-critical */
    assert_rule(&c, "GS019", "gfd", 0);
    assert_rule(&c, "GS020", "gfd", 1);
    assert_non_null(strstr(find_rule(&c, "GS020", "gfd")->message, "gpu-feature-discovery"));
    /* Equal with the node's value tolerates */
    assert_rule(&c, "GS019", "exporter", 0);
    assert_rule(&c, "GS019", "fluent-bit", 0);
    assert_rule(&c, "GS020", "fluent-bit", 0);
    checked_free(&c);

    /* no nodes in the input: the configured keys */
    check_text(&c, DS("exporter", "{}", "      tolerations: [{key: nvidia.com/gpu, value: x, effect: NoSchedule}]\n"
                      "      containers: [{name: c, image: \"nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5\"}]\n")
                   DS("mig-manager", "{}", "      containers: [{name: c, image: x}]\n"));
    assert_rule(&c, "GS019", "exporter", 0);
    assert_rule(&c, "GS019", "mig-manager", 1);
    checked_free(&c);
}

static void test_quotas(void **state)
{
    (void)state;
    checked c;
    check_text(&c, "apiVersion: v1\nkind: Namespace\nmetadata: {name: ml}\n"
                   "---\napiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: ml}\n"
                   "spec:\n  hard: {limits.nvidia.com/gpu: \"8\", nvidia.com/gpu: \"8\", count/pods: \"10\",\n"
                   "         limits.cpu: \"10\", requests.memory: 10Gi,\n"
                   "         gold.storageclass.storage.k8s.io/requests.storage: 1Ti}\n"
                   "---\napiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: team}\n"
                   "spec:\n  hard: {requests.nvidia.com/gpu: \"8\"}\n"
                   GPU_DEPLOY("train", "ml", "")
                   GPU_DEPLOY("train", "team", "")
                   GPU_DEPLOY("train", "free", "")
                   GPU_DEPLOY("again", "free", "")
                   "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: kai, namespace: annot}\n"
                   "spec:\n  template:\n    metadata: {annotations: {gpu-fraction: \"0.5\"}}\n    spec:\n"
                   "      schedulerName: kai-scheduler\n" TOLERATE_GPU "      containers: [{name: c}]\n");
    /* the two keys that do nothing */
    assert_rule(&c, "GS022", "q", 2);
    /* ml: only unenforced keys; reported on the Namespace object of the input */
    assert_rule(&c, "GS021", "ml", 1);
    const gs_finding *f = find_rule(&c, "GS021", "ml");
    assert_string_equal(f->kind, "Namespace");
    assert_int_equal(f->src.line, 1);
    assert_rule(&c, "GS021", "team", 0);
    /* free: no Namespace object, reported once at its first GPU workload */
    assert_rule(&c, "GS021", "free", 1);
    f = find_rule(&c, "GS021", "free");
    assert_non_null(strstr(f->message, "Deployment/train, Deployment/again"));
    assert_non_null(strstr(f->message, "requests.nvidia.com/gpu"));
    /* annotation-only GPU asks cannot be quota'd */
    assert_rule(&c, "GS021", "annot", 0);
    checked_free(&c);
}

static void test_priority_classes(void **state)
{
    (void)state;
    checked c;
    check_text(&c, GPU_DEPLOY("none", "ml", "")
                   GPU_DEPLOY("known", "ml", "      priorityClassName: training\n")
                   GPU_DEPLOY("typo", "ml", "      priorityClassName: trainig\n")
                   GPU_DEPLOY("sys", "ml", "      priorityClassName: system-cluster-critical\n")
                   "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: training}\n"
                   "value: 100\n");
    assert_rule(&c, "GS023", "none", 1);
    assert_rule(&c, "GS023", "known", 0);
    assert_rule(&c, "GS024", "typo", 1);
    assert_non_null(strstr(find_rule(&c, "GS024", "typo")->message, "no PriorityClass with name trainig was found"));
    assert_rule(&c, "GS024", "known", 0);
    assert_rule(&c, "GS024", "sys", 0);
    checked_free(&c);

    /* a global default gives every pod a class; without PriorityClasses nothing is unknown */
    check_text(&c, GPU_DEPLOY("none", "ml", "")
                   "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: d}\n"
                   "value: 10\nglobalDefault: true\n");
    assert_rule(&c, "GS023", NULL, 0);
    checked_free(&c);
    check_text(&c, GPU_DEPLOY("typo", "ml", "      priorityClassName: trainig\n"));
    assert_rule(&c, "GS024", NULL, 0);
    checked_free(&c);
}

static void test_inference_vs_training(void **state)
{
    (void)state;
    checked c;
    check_text(&c, "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: batch-high}\nvalue: 1000\n"
                   "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: online}\nvalue: 500\n"
                   "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: top}\nvalue: 5000\n"
                   "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: polite}\n"
                   "value: 9000\npreemptionPolicy: Never\n"
                   GPU_DEPLOY("llm-train", "ml", "      priorityClassName: batch-high\n")
                   /* role by label */
                   "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: chat, namespace: ml,\n"
                   "  labels: {gpusched.io/role: inference}}\nspec:\n  template:\n    spec:\n"
                   "      priorityClassName: online\n" TOLERATE_GPU
                   "      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n"
                   /* role by name, higher priority */
                   GPU_DEPLOY("rank-serving", "ml", "      priorityClassName: top\n")
                   /* higher priority but never preempts */
                   GPU_DEPLOY("embed-inference", "ml", "      priorityClassName: polite\n")
                   /* "observer" is not "serve": no role */
                   GPU_DEPLOY("observer", "ml", "      priorityClassName: online\n"));
    assert_rule(&c, "GS025", "chat", 1);
    const char *m = find_rule(&c, "GS025", "chat")->message;
    assert_non_null(strstr(m, "by its role label"));
    assert_non_null(strstr(m, "priority 500"));
    assert_non_null(strstr(m, "Deployment ml/llm-train"));
    assert_rule(&c, "GS025", "rank-serving", 0);
    assert_rule(&c, "GS025", "embed-inference", 1);
    assert_non_null(strstr(find_rule(&c, "GS025", "embed-inference")->message, "Never"));
    assert_rule(&c, "GS025", "observer", 0);
    assert_rule(&c, "GS025", "llm-train", 0);
    /* classes by name: "online" is not an inference name, "batch-high" is not a training
     * name token either ("batch" only counts as a label value): no class finding */
    assert_rule(&c, "GS025", "online", 0);
    checked_free(&c);

    check_text(&c, "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: training-high}\nvalue: 1000\n"
                   "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: inference}\nvalue: 100\n"
                   "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: inference-top}\n"
                   "value: 100000\n");
    assert_rule(&c, "GS025", "inference", 1);
    assert_string_equal(find_rule(&c, "GS025", "inference")->kind, "PriorityClass");
    assert_rule(&c, "GS025", "inference-top", 0);
    checked_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_daemons),
        cmocka_unit_test(test_quotas),
        cmocka_unit_test(test_priority_classes),
        cmocka_unit_test(test_inference_vs_training),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
