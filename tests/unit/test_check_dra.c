/*
 * test_check_dra.c - check and Dynamic Resource Allocation: pods whose GPUs come from
 * claims are GPU pods (dra.h "GPU claims"; the GS017 regression), and the DRA rules
 * GS027-GS032 with the cluster-dump condition, positions of CEL selectors, runtime
 * errors, firstAvailable alternatives and allocated claims.
 */
#include "test_check_util.h"

#define CLASS_GPU                                                                                     \
    "---\napiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu.nvidia.com}\n"      \
    "spec:\n  selectors:\n  - cel:\n      expression: \"device.driver == 'gpu.nvidia.com' && "        \
    "device.attributes['gpu.nvidia.com'].type == 'gpu'\"\n"

/* two H100s on n1, one A100 on n2 */
#define SLICE_DEV(name, product)                                                                      \
    "  - name: " name "\n    attributes:\n      type: {string: gpu}\n"                                 \
    "      productName: {string: \"" product "\"}\n    capacity:\n      memory: {value: 80Gi}\n"
#define SLICES                                                                                        \
    "---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: n1-gpu}\nspec:\n"     \
    "  driver: gpu.nvidia.com\n  nodeName: n1\n  pool: {name: n1, generation: 1, resourceSliceCount: 1}\n" \
    "  devices:\n" SLICE_DEV("gpu-0", "H100") SLICE_DEV("gpu-1", "H100")                               \
    "---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: n2-gpu}\nspec:\n"     \
    "  driver: gpu.nvidia.com\n  nodeName: n2\n  pool: {name: n2, generation: 1, resourceSliceCount: 1}\n" \
    "  devices:\n" SLICE_DEV("gpu-0", "A100")

#define TEMPLATE(name, request)                                                                       \
    "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"                              \
    "metadata: {namespace: ml, name: " name "}\nspec:\n  spec:\n    devices:\n      requests:\n" request

#define CLAIM_POD(name, extra, claimref)                                                              \
    "---\napiVersion: v1\nkind: Pod\nmetadata: {namespace: ml, name: " name "}\nspec:\n"              \
    "  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n" extra            \
    "  containers: [{name: c, resources: {claims: [{name: g}]}}]\n"                                    \
    "  resourceClaims: [{name: g, " claimref "}]\n"

/* ---------------------------------------------------------------- GS017 and GPU pods */
static void test_claim_pods_are_gpu_pods(void **state)
{
    (void)state;
    checked c;
    /* no DeviceClass in the input: the class name itself is NVIDIA's */
    check_text(&c, TEMPLATE("one-gpu", "      - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}\n")
                   TEMPLATE("one-nic", "      - {name: nic, exactly: {deviceClassName: rdma.example.com}}\n")
                   CLAIM_POD("gpu-pod", "", "resourceClaimTemplateName: one-gpu")
                   CLAIM_POD("nic-pod", "", "resourceClaimTemplateName: one-nic")
                   CLAIM_POD("unknown-claim", "", "resourceClaimName: elsewhere")
                   "---\napiVersion: v1\nkind: Pod\nmetadata: {namespace: ml, name: cpu-pod}\nspec:\n"
                   "  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"
                   "  containers: [{name: c, resources: {requests: {cpu: 1}}}]\n"
                   "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {namespace: ml, name: dep}\n"
                   "spec:\n  template:\n    spec:\n"
                   "      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"
                   "      containers: [{name: c, resources: {claims: [{name: g}]}}]\n"
                   "      resourceClaims: [{name: g, resourceClaimTemplateName: one-gpu}]\n");
    assert_rule(&c, "GS017", "gpu-pod", 0);
    assert_rule(&c, "GS017", "dep", 0);             /* workload templates too */
    assert_rule(&c, "GS017", "cpu-pod", 1);         /* still flagged */
    assert_rule(&c, "GS017", "nic-pod", 1);         /* a claim of other devices is no GPU */
    assert_rule(&c, "GS017", "unknown-claim", 0);   /* cannot tell: silent */
    /* GPU pods get the GPU pods' rules: a priority class is advised */
    assert_rule(&c, "GS023", "gpu-pod", 1);
    assert_non_null(strstr(find_rule(&c, "GS023", "gpu-pod")->message, "GPUs through DRA (1 claim request"));
    assert_rule(&c, "GS023", "nic-pod", 0);
    /* not a cluster dump: nothing is missing */
    assert_rule(&c, "GS027", NULL, 0);
    assert_rule(&c, "GS028", NULL, 0);
    checked_free(&c);

    /* GPU nodes with the taint: a claim pod that tolerates it is fine, one that does not is
     * GS016 like any GPU pod */
    check_text(&c, NODE_A100_TAINTED TEMPLATE("one-gpu", "      - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}\n")
                   CLAIM_POD("ok", "", "resourceClaimTemplateName: one-gpu")
                   "---\napiVersion: v1\nkind: Pod\nmetadata: {namespace: ml, name: untolerated}\nspec:\n"
                   "  containers: [{name: c, resources: {claims: [{name: g}]}}]\n"
                   "  resourceClaims: [{name: g, resourceClaimTemplateName: one-gpu}]\n");
    assert_rule(&c, "GS016", "ok", 0);
    assert_rule(&c, "GS017", "ok", 0);
    assert_rule(&c, "GS016", "untolerated", 1);
    checked_free(&c);
}

/* ---------------------------------------------------------------- GS027, GS028 */
static void test_unknown_class_and_claim(void **state)
{
    (void)state;
    checked c;
    check_text(&c, CLASS_GPU
                   TEMPLATE("typo", "      - {name: gpu, exactly: {deviceClassName: gpu.nvidia.con}}\n")
                   TEMPLATE("alt", "      - name: gpu\n        firstAvailable:\n"
                                   "        - {name: a, deviceClassName: gpu.nvidia.com}\n"
                                   "        - {name: b, deviceClassName: missing.example.com}\n")
                   TEMPLATE("good", "      - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}\n")
                   CLAIM_POD("p-missing-claim", "", "resourceClaimName: nowhere")
                   CLAIM_POD("p-missing-template", "", "resourceClaimTemplateName: nowhere")
                   CLAIM_POD("p-good", "", "resourceClaimTemplateName: good")
                   CLAIM_POD("p-bound", "  nodeName: n1\n", "resourceClaimName: nowhere"));
    assert_rule(&c, "GS027", "typo", 1);
    assert_non_null(strstr(find_rule(&c, "GS027", "typo")->message, "device class gpu.nvidia.con does not exist"));
    assert_string_equal(find_rule(&c, "GS027", "typo")->kind, "ResourceClaimTemplate");
    assert_rule(&c, "GS027", "alt", 1); /* any alternative */
    assert_non_null(strstr(find_rule(&c, "GS027", "alt")->message, "firstAvailable[1]"));
    assert_rule(&c, "GS027", "good", 0);
    assert_rule(&c, "GS028", "p-missing-claim", 1);
    assert_non_null(strstr(find_rule(&c, "GS028", "p-missing-claim")->message,
                           "resourceclaim.resource.k8s.io \"nowhere\" not found"));
    assert_rule(&c, "GS028", "p-missing-template", 1);
    assert_non_null(strstr(find_rule(&c, "GS028", "p-missing-template")->message, "ResourceClaimTemplate ml/nowhere"));
    assert_rule(&c, "GS028", "p-good", 0);
    assert_rule(&c, "GS028", "p-bound", 0); /* already running */
    checked_free(&c);
}

/* ---------------------------------------------------------------- GS029, GS030, GS032 */
static void test_selectors_against_slices(void **state)
{
    (void)state;
    checked c;
    check_text(&c, CLASS_GPU SLICES
                   TEMPLATE("h100", "      - name: gpu\n        exactly:\n          deviceClassName: gpu.nvidia.com\n"
                                    "          selectors:\n"
                                    "          - cel: {expression: \"device.attributes['gpu.nvidia.com'].productName == 'H100'\"}\n")
                   TEMPLATE("b200", "      - name: gpu\n        exactly:\n          deviceClassName: gpu.nvidia.com\n"
                                    "          selectors:\n"
                                    "          - cel: {expression: \"device.attributes['gpu.nvidia.com'].productName == 'H100'\"}\n"
                                    "          - cel: {expression: \"device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('180Gi')) >= 0\"}\n")
                   TEMPLATE("runtime", "      - name: gpu\n        exactly:\n          deviceClassName: gpu.nvidia.com\n"
                                       "          selectors:\n"
                                       "          - cel: {expression: \"device.attributes['gpu.nvidia.com'].nvlink\"}\n")
                   TEMPLATE("syntax", "      - name: gpu\n        exactly:\n          deviceClassName: gpu.nvidia.com\n"
                                      "          selectors:\n"
                                      "          - cel: {expression: \"device.driver == \"}\n")
                   TEMPLATE("three-h100", "      - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com, count: 3, "
                                          "selectors: [{cel: {expression: \"device.attributes['gpu.nvidia.com'].productName == 'H100'\"}}]}}\n")
                   TEMPLATE("two-h100", "      - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com, count: 2}}\n")
                   TEMPLATE("all", "      - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com, allocationMode: All}}\n")
                   TEMPLATE("prefer", "      - name: gpu\n        firstAvailable:\n"
                                      "        - {name: big, deviceClassName: gpu.nvidia.com, count: 4}\n"
                                      "        - {name: one, deviceClassName: gpu.nvidia.com}\n")
                   "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {namespace: ml, name: done}\n"
                   "spec:\n  devices:\n    requests:\n    - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com, count: 9}}\n"
                   "status:\n  allocation:\n    devices:\n      results:\n"
                   "      - {request: gpu, driver: gpu.nvidia.com, pool: n1, device: gpu-0}\n");
    assert_rule(&c, "GS029", "h100", 0);
    assert_rule(&c, "GS030", "h100", 0);
    /* two selectors: the one at fault is named and pointed at */
    assert_rule(&c, "GS029", "b200", 1);
    const gs_finding *f = find_rule(&c, "GS029", "b200");
    if (!strstr(f->message, "selectors[1]"))
        dump(&c);
    assert_non_null(strstr(f->message, "selectors[1]"));
    assert_int_equal(f->severity, GS_SEV_ERROR);
    for (uint32_t i = 0; i < c.res.nchecked; i++)
        if (!strcmp(c.res.checked[i].name, "b200"))
            assert_true(c.res.checked[i].src.line < f->src.line); /* the selector, below the object */
    /* a missing attribute without has(): upstream's runtime error */
    assert_rule(&c, "GS029", "runtime", 1);
    assert_non_null(strstr(find_rule(&c, "GS029", "runtime")->message, "no such key"));
    /* does not compile: its own finding, at the expression, with the CEL column */
    assert_rule(&c, "GS030", "syntax", 1);
    f = find_rule(&c, "GS030", "syntax");
    assert_non_null(strstr(f->message, "column 18 of the expression"));
    assert_int_equal(f->src.col, 31); /* the quote of the flow scalar */
    assert_rule(&c, "GS029", "syntax", 0); /* not evaluated */
    /* counts: 2 H100 on n1, 1 A100 on n2 */
    assert_rule(&c, "GS032", "three-h100", 1);
    assert_non_null(strstr(find_rule(&c, "GS032", "three-h100")->message, "has 2"));
    assert_rule(&c, "GS032", "two-h100", 0);
    assert_rule(&c, "GS032", "all", 0);
    /* an alternative that is never chosen is only an information */
    assert_rule(&c, "GS032", "prefer", 1);
    assert_int_equal(find_rule(&c, "GS032", "prefer")->severity, GS_SEV_INFO);
    /* allocated claims hold their devices: not judged */
    assert_rule(&c, "GS032", "done", 0);
    /* the class matches devices: no class finding */
    assert_rule(&c, "GS029", "gpu.nvidia.com", 0);
    checked_free(&c);

    /* a class that matches no published device: information on the class, error on its
     * requests; suppression works on claims */
    check_text(&c, SLICES
                   "---\napiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: mig.nvidia.com}\n"
                   "spec:\n  selectors:\n  - cel: {expression: \"device.attributes['gpu.nvidia.com'].type == 'mig'\"}\n"
                   TEMPLATE("mig", "      - {name: gpu, exactly: {deviceClassName: mig.nvidia.com}}\n")
                   "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"
                   "metadata: {namespace: ml, name: quiet, annotations: {gpusched.io/suppress: \"GS029: MIG nodes come next week\"}}\n"
                   "spec:\n  spec:\n    devices:\n      requests:\n"
                   "      - {name: gpu, exactly: {deviceClassName: mig.nvidia.com}}\n");
    assert_rule(&c, "GS029", "mig.nvidia.com", 1);
    assert_int_equal(find_rule(&c, "GS029", "mig.nvidia.com")->severity, GS_SEV_INFO);
    assert_rule(&c, "GS029", "mig", 1);
    assert_int_equal(find_rule(&c, "GS029", "mig")->severity, GS_SEV_ERROR);
    assert_rule(&c, "GS029", "quiet", 1);
    assert_true(find_rule(&c, "GS029", "quiet")->suppressed);
    checked_free(&c);
}

/* ---------------------------------------------------------------- GS031 */
static void test_device_plugin_and_dra(void **state)
{
    (void)state;
    checked c;
    check_text(&c, TEMPLATE("one-gpu", "      - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}\n")
                   TEMPLATE("one-nic", "      - {name: nic, exactly: {deviceClassName: rdma.example.com}}\n")
                   "---\napiVersion: v1\nkind: Pod\nmetadata: {namespace: ml, name: both}\nspec:\n"
                   "  containers:\n  - {name: a, resources: {claims: [{name: g}]}}\n"
                   "  - {name: b, resources: {limits: {nvidia.com/gpu: 1}}}\n"
                   "  resourceClaims: [{name: g, resourceClaimTemplateName: one-gpu}]\n"
                   "---\napiVersion: v1\nkind: Pod\nmetadata: {namespace: ml, name: gpu-and-nic}\nspec:\n"
                   "  containers:\n  - {name: a, resources: {limits: {nvidia.com/gpu: 1}, claims: [{name: n}]}}\n"
                   "  resourceClaims: [{name: n, resourceClaimTemplateName: one-nic}]\n");
    assert_rule(&c, "GS031", "both", 1);
    assert_non_null(strstr(find_rule(&c, "GS031", "both")->message, "container \"b\" asks for nvidia.com/gpu"));
    assert_rule(&c, "GS031", "gpu-and-nic", 0);
    checked_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_claim_pods_are_gpu_pods),
        cmocka_unit_test(test_unknown_class_and_claim),
        cmocka_unit_test(test_selectors_against_slices),
        cmocka_unit_test(test_device_plugin_and_dra),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
