/*
 * test_check_requests.c - rules on what pods ask for (GS007-GS015) and on tolerations
 * (GS016-GS018), on Pods and workload templates.
 *
 * Expected verdicts follow the API server's validation (k8s-semantics 1.3, 2.4: extended
 * resources are integers, request == limit, limits-only is fine because requests default
 * to limits) and the GPU layer's request translation and fit.
 */
#include "test_check_util.h"

/* A Pod "name" in namespace ml with the given spec lines (indented 2). */
#define POD(name, spec) "---\napiVersion: v1\nkind: Pod\nmetadata: {name: " name ", namespace: ml}\nspec:\n" spec
#define DEPLOY(name, tmeta, spec)                                                                     \
    "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " name ", namespace: ml}\n"          \
    "spec:\n  replicas: 3\n  template:\n    metadata: " tmeta "\n    spec:\n" spec
#define CT(res) "  containers: [{name: c, resources: " res "}]\n"
#define TCT(res) "      containers: [{name: c, resources: " res "}]\n"
#define POD_TOL "  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"

static void test_limits_and_integers(void **state)
{
    (void)state;
    checked c;
    check_text(&c, POD("reqonly", POD_TOL CT("{requests: {nvidia.com/gpu: 1}}"))
                   POD("limonly", POD_TOL CT("{limits: {nvidia.com/gpu: 2}}"))
                   POD("both", POD_TOL CT("{requests: {nvidia.com/gpu: 2}, limits: {nvidia.com/gpu: 2}}"))
                   POD("differ", POD_TOL CT("{requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 2}}"))
                   POD("half", POD_TOL CT("{limits: {nvidia.com/gpu: \"0.5\"}}"))
                   POD("neg", POD_TOL CT("{limits: {nvidia.com/gpu: \"-1\"}}"))
                   POD("other", CT("{requests: {example.com/fpga: 1}}"))
                   POD("cpu", CT("{requests: {cpu: 1}}"))
                   POD("initc", POD_TOL "  initContainers: [{name: i, resources: {requests: {nvidia.com/gpu: 1}}}]\n"
                       CT("{}")));
    assert_rule(&c, "GS007", "reqonly", 1);
    assert_non_null(strstr(find_rule(&c, "GS007", "reqonly")->message, "Limit must be set for non overcommitable"));
    assert_non_null(strstr(find_rule(&c, "GS007", "reqonly")->message, "the API server rejects the pod"));
    assert_rule(&c, "GS007", "limonly", 0);
    assert_rule(&c, "GS007", "both", 0);
    assert_rule(&c, "GS008", "both", 0);
    assert_rule(&c, "GS008", "differ", 1);
    assert_non_null(strstr(find_rule(&c, "GS008", "differ")->message, "must be equal to nvidia.com/gpu limit of 2"));
    assert_rule(&c, "GS009", "half", 1);
    assert_non_null(strstr(find_rule(&c, "GS009", "half")->message, "limits[nvidia.com/gpu]: 500m must be an integer"));
    /* the translation fails too, but the quantity finding says it better */
    assert_rule(&c, "GS013", "half", 0);
    assert_rule(&c, "GS009", "neg", 1);
    assert_non_null(strstr(find_rule(&c, "GS009", "neg")->message, "greater than or equal to 0"));
    /* any extended resource, not only GPUs */
    assert_rule(&c, "GS007", "other", 1);
    assert_rule(&c, "GS007", "cpu", 0);
    assert_rule(&c, "GS007", "initc", 1);
    checked_free(&c);
}

static void test_workload_templates(void **state)
{
    (void)state;
    checked c;
    /* a template is not defaulted by the API server, but its pods are: limits-only passes;
     * 3 replicas give one finding, on the Deployment */
    check_text(&c, DEPLOY("train", "{}", TOLERATE_GPU TCT("{requests: {nvidia.com/gpu: 1}}"))
                   DEPLOY("ok", "{}", TOLERATE_GPU TCT("{limits: {nvidia.com/gpu: 1}}"))
                   "---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: zero, namespace: ml}\n"
                   "spec:\n  replicas: 0\n  template:\n    spec:\n" TCT("{requests: {nvidia.com/gpu: 1}}"));
    assert_rule(&c, "GS007", "train", 1);
    const gs_finding *f = find_rule(&c, "GS007", "train");
    assert_string_equal(f->kind, "Deployment");
    assert_string_equal(f->namespace_, "ml");
    assert_non_null(strstr(f->message, "every pod it creates"));
    assert_rule(&c, "GS007", "ok", 0);
    assert_rule(&c, "GS007", "zero", 1); /* judged even without pods */
    checked_free(&c);
}

static void test_mig_names_and_strategy(void **state)
{
    (void)state;
    checked c;
    check_text(&c, POD("bad", POD_TOL CT("{limits: {nvidia.com/mig-1g.8gb: 1}}"))
                   POD("good", POD_TOL CT("{limits: {nvidia.com/mig-1g.10gb: 1}}"))
                   POD("junk", POD_TOL CT("{limits: {nvidia.com/mig-huge: 1}}")));
    assert_rule(&c, "GS010", "bad", 1);
    assert_non_null(strstr(find_rule(&c, "GS010", "bad")->message, "profile 1g.8gb"));
    assert_rule(&c, "GS010", "good", 0);
    assert_rule(&c, "GS010", "junk", 1);
    /* no nodes, no configured strategy: nothing to compare with */
    assert_rule(&c, "GS011", NULL, 0);
    checked_free(&c);

    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    cfg.mig_strategy = GS_CHECK_MIG_SINGLE;
    check_text_cfg(&c, POD("mig", POD_TOL CT("{limits: {nvidia.com/mig-1g.10gb: 1}}"))
                       POD("whole", POD_TOL CT("{limits: {nvidia.com/gpu: 1}}")), &cfg);
    assert_rule(&c, "GS011", "mig", 1);
    assert_non_null(strstr(find_rule(&c, "GS011", "mig")->message, "single"));
    assert_non_null(strstr(find_rule(&c, "GS011", "mig")->message, "-MIG-1g.10gb"));
    assert_rule(&c, "GS011", "whole", 0);
    checked_free(&c);
    cfg.mig_strategy = GS_CHECK_MIG_MIXED;
    check_text_cfg(&c, POD("mig", POD_TOL CT("{limits: {nvidia.com/mig-1g.10gb: 1}}"))
                       POD("single", POD_TOL "  nodeSelector: {nvidia.com/gpu.product: A100-SXM4-40GB-MIG-1g.5gb}\n"
                           CT("{limits: {nvidia.com/gpu: 1}}")), &cfg);
    assert_rule(&c, "GS011", "mig", 0);
    assert_rule(&c, "GS011", "single", 1);
    checked_free(&c);
    gs_check_config_free(&cfg);

    /* inferred from the nodes: only a single-strategy node */
    check_text(&c, "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels:\n"
                   "    nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB-MIG-1g.5gb\n"
                   "spec:\n  taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
                   "status:\n  allocatable: {nvidia.com/gpu: \"7\"}\n"
                   POD("mig", POD_TOL CT("{limits: {nvidia.com/mig-1g.5gb: 1}}")));
    assert_rule(&c, "GS011", "mig", 1);
    assert_non_null(strstr(find_rule(&c, "GS011", "mig")->message, "from the GPU nodes of the input"));
    checked_free(&c);
}

static void test_scheduler_and_invalid(void **state)
{
    (void)state;
    checked c;
    check_text(&c,
               "---\napiVersion: v1\nkind: Pod\nmetadata: {name: kai, namespace: ml, annotations: {gpu-fraction: \"0.5\"}}\n"
               "spec:\n" POD_TOL CT("{}")
               "---\napiVersion: v1\nkind: Pod\nmetadata: {name: kaiok, namespace: ml, annotations: {gpu-fraction: \"0.5\"}}\n"
               "spec:\n  schedulerName: kai-scheduler\n" POD_TOL CT("{}")
               POD("hami", POD_TOL CT("{limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 4000}}"))
               POD("hamiok", "  schedulerName: hami-scheduler\n" POD_TOL
                   CT("{limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 4000}}"))
               "---\napiVersion: v1\nkind: Pod\nmetadata: {name: two, namespace: ml, annotations: {gpu-fraction: \"0.5\"}}\n"
               "spec:\n  schedulerName: kai-scheduler\n" POD_TOL CT("{limits: {nvidia.com/gpu: 1}}")
               POD("podlevel", POD_TOL "  resources: {requests: {nvidia.com/gpu: 1}}\n" CT("{limits: {nvidia.com/gpu: 1}}")));
    assert_rule(&c, "GS012", "kai", 1);
    assert_non_null(strstr(find_rule(&c, "GS012", "kai")->message, "runs without any GPU"));
    assert_rule(&c, "GS012", "kaiok", 0);
    assert_rule(&c, "GS012", "hami", 1);
    assert_rule(&c, "GS012", "hamiok", 0);
    assert_rule(&c, "GS013", "two", 1);
    assert_non_null(strstr(find_rule(&c, "GS013", "two")->message, "two GPU request conventions"));
    assert_rule(&c, "GS013", "podlevel", 1);
    assert_rule(&c, "GS013", "kai", 0);
    checked_free(&c);
}

static void test_unplaceable(void **state)
{
    (void)state;
    checked c;
    check_text(&c, NODE_A100_TAINTED
                   POD("sixteen", POD_TOL CT("{limits: {nvidia.com/gpu: 16}}"))
                   POD("eight", POD_TOL CT("{limits: {nvidia.com/gpu: 8}}"))
                   POD("elsewhere", POD_TOL "  nodeSelector: {pool: h100}\n" CT("{limits: {nvidia.com/gpu: 1}}"))
                   "---\napiVersion: v1\nkind: Pod\nmetadata: {name: model, namespace: ml,\n"
                   "  annotations: {gpusched.io/gpu-count: \"1\", gpusched.io/gpu-model: H100-80GB}}\nspec:\n" POD_TOL CT("{}")
                   POD("mig", POD_TOL CT("{limits: {nvidia.com/mig-1g.10gb: 1}}"))
                   POD("bound", "  nodeName: a100\n" POD_TOL CT("{limits: {nvidia.com/gpu: 16}}")));
    assert_rule(&c, "GS014", "sixteen", 1);
    assert_non_null(strstr(find_rule(&c, "GS014", "sixteen")->message, "16 GPUs"));
    assert_non_null(strstr(find_rule(&c, "GS014", "sixteen")->message, "1 is too small"));
    assert_rule(&c, "GS014", "eight", 0);
    assert_rule(&c, "GS014", "elsewhere", 1);
    assert_non_null(strstr(find_rule(&c, "GS014", "elsewhere")->message, "nodeSelector/affinity excludes it"));
    assert_rule(&c, "GS014", "model", 1);
    assert_non_null(strstr(find_rule(&c, "GS014", "model")->message, "another GPU model"));
    assert_rule(&c, "GS014", "mig", 1);
    assert_rule(&c, "GS014", "bound", 0);
    checked_free(&c);
}

static void test_share_memory(void **state)
{
    (void)state;
    checked c;
    check_text(&c,
               "---\napiVersion: v1\nkind: Pod\nmetadata: {name: kai, namespace: ml, annotations: {gpu-fraction: \"0.25\"}}\n"
               "spec:\n  schedulerName: kai-scheduler\n" POD_TOL CT("{}")
               POD("hamimem", "  schedulerName: hami-scheduler\n" POD_TOL
                   CT("{limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 4000}}"))
               POD("hamicores", "  schedulerName: hami-scheduler\n" POD_TOL
                   CT("{limits: {nvidia.com/gpu: 1, nvidia.com/gpucores: 30}}"))
               POD("gpushare", POD_TOL CT("{limits: {aliyun.com/gpu-mem: 4}}"))
               POD("whole", POD_TOL CT("{limits: {nvidia.com/gpu: 1}}")));
    assert_rule(&c, "GS015", "kai", 1);
    assert_rule(&c, "GS015", "hamimem", 0);
    assert_rule(&c, "GS015", "hamicores", 1);
    assert_rule(&c, "GS015", "gpushare", 1);
    assert_rule(&c, "GS015", "whole", 0);
    assert_int_equal(find_rule(&c, "GS015", "kai")->severity, GS_SEV_WARNING);
    checked_free(&c);
}

static void test_gpu_tolerations(void **state)
{
    (void)state;
    checked c;
    check_text(&c, NODE_A100_TAINTED
                   POD("none", CT("{limits: {nvidia.com/gpu: 1}}"))
                   POD("tol", POD_TOL CT("{limits: {nvidia.com/gpu: 1}}"))
                   POD("everything", "  tolerations: [{operator: Exists}]\n" CT("{limits: {nvidia.com/gpu: 1}}"))
                   POD("wrongvalue", "  tolerations: [{key: nvidia.com/gpu, value: \"true\", effect: NoSchedule}]\n"
                       CT("{limits: {nvidia.com/gpu: 1}}"))
                   POD("cpu", CT("{requests: {cpu: 1}}")));
    assert_rule(&c, "GS016", "none", 1);
    assert_non_null(strstr(find_rule(&c, "GS016", "none")->message, "nvidia.com/gpu=present:NoSchedule on 1 node"));
    assert_rule(&c, "GS016", "tol", 0);
    assert_rule(&c, "GS016", "everything", 0);
    /* Equal compares values byte for byte: "true" is not "present" */
    assert_rule(&c, "GS016", "wrongvalue", 1);
    assert_rule(&c, "GS016", "cpu", 0);
    checked_free(&c);

    /* an untainted GPU node lets it run (GS001 reports the node instead) */
    check_text(&c, "apiVersion: v1\nkind: Node\nmetadata: {name: open}\n"
                   "status: {allocatable: {nvidia.com/gpu: \"1\"}}\n"
                   POD("none", CT("{limits: {nvidia.com/gpu: 1}}")));
    assert_rule(&c, "GS016", NULL, 0);
    assert_rule(&c, "GS001", "open", 1);
    checked_free(&c);

    /* no nodes: judged against the configured keys; ExtendedResourceToleration adds one */
    check_text(&c, POD("none", CT("{limits: {nvidia.com/gpu: 1}}")));
    assert_rule(&c, "GS016", "none", 1);
    checked_free(&c);
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    cfg.extended_resource_toleration = true;
    check_text_cfg(&c, POD("none", CT("{limits: {nvidia.com/gpu: 1}}")), &cfg);
    assert_rule(&c, "GS016", NULL, 0);
    checked_free(&c);
    gs_check_config_free(&cfg);
}

static void test_non_gpu_tolerations(void **state)
{
    (void)state;
    checked c;
    check_text(&c, NODE_A100_TAINTED
                   "---\napiVersion: v1\nkind: Node\nmetadata: {name: cpu, labels: {pool: cpu}}\n"
                   "status: {allocatable: {cpu: \"8\"}}\n"
                   POD("all", "  tolerations: [{operator: Exists}]\n" CT("{requests: {cpu: 1}}"))
                   POD("gpukey", POD_TOL CT("{requests: {cpu: 1}}"))
                   POD("pinned", "  nodeSelector: {pool: cpu}\n  tolerations: [{operator: Exists}]\n"
                       CT("{requests: {cpu: 1}}"))
                   POD("other", "  tolerations: [{key: dedicated, operator: Exists}]\n" CT("{requests: {cpu: 1}}"))
                   "---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: logs, namespace: ml}\n"
                   "spec:\n  template:\n    spec:\n      tolerations: [{operator: Exists}]\n"
                   "      containers: [{name: c, image: fluent-bit}]\n");
    assert_rule(&c, "GS017", "all", 1);
    assert_non_null(strstr(find_rule(&c, "GS017", "all")->message, "tolerates every taint"));
    assert_rule(&c, "GS017", "gpukey", 1);
    assert_rule(&c, "GS017", "pinned", 0);
    assert_rule(&c, "GS017", "other", 0);
    assert_rule(&c, "GS017", "logs", 0);
    checked_free(&c);
}

static void test_toleration_validation(void **state)
{
    (void)state;
    checked c;
    check_text(&c, POD("emptykey", "  tolerations: [{operator: Equal, value: x}]\n" CT("{}"))
                   POD("existsvalue", "  tolerations: [{key: a, operator: Exists, value: x}]\n" CT("{}"))
                   POD("seconds", "  tolerations: [{key: a, operator: Exists, effect: NoSchedule, tolerationSeconds: 5}]\n"
                       CT("{}"))
                   POD("case", "  tolerations: [{key: a, operator: exists}]\n" CT("{}"))
                   POD("gt", "  tolerations: [{key: a, operator: Gt, value: \"5\"}]\n" CT("{}"))
                   POD("badkey", "  tolerations: [{key: \"a b\", operator: Exists}]\n" CT("{}"))
                   POD("badvalue", "  tolerations: [{key: a, value: \"-x\"}]\n" CT("{}"))
                   POD("badeffect", "  tolerations: [{key: a, operator: Exists, effect: NoRun}]\n" CT("{}"))
                   POD("fine", "  tolerations: [{key: example.com/a_b.c, value: v-1, effect: NoExecute, "
                       "tolerationSeconds: 30}, {operator: Exists}]\n" CT("{}")));
    assert_rule(&c, "GS018", "emptykey", 1);
    assert_non_null(strstr(find_rule(&c, "GS018", "emptykey")->message, "operator must be Exists when `key` is empty"));
    assert_rule(&c, "GS018", "existsvalue", 1);
    assert_rule(&c, "GS018", "seconds", 1);
    assert_non_null(strstr(find_rule(&c, "GS018", "seconds")->message, "spec.tolerations[0].effect"));
    assert_rule(&c, "GS018", "case", 1);
    assert_non_null(strstr(find_rule(&c, "GS018", "case")->message, "Unsupported value: \"exists\""));
    assert_rule(&c, "GS018", "gt", 1);
    assert_rule(&c, "GS018", "badkey", 1);
    assert_rule(&c, "GS018", "badvalue", 1);
    assert_rule(&c, "GS018", "badeffect", 1);
    assert_rule(&c, "GS018", "fine", 0);
    checked_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limits_and_integers),
        cmocka_unit_test(test_workload_templates),
        cmocka_unit_test(test_mig_names_and_strategy),
        cmocka_unit_test(test_scheduler_and_invalid),
        cmocka_unit_test(test_unplaceable),
        cmocka_unit_test(test_share_memory),
        cmocka_unit_test(test_gpu_tolerations),
        cmocka_unit_test(test_non_gpu_tolerations),
        cmocka_unit_test(test_toleration_validation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
