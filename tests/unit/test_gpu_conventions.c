/*
 * test_gpu_conventions.c - the GPU conventions of the peers' real clusters, read from YAML
 * as users write them: HAMi and Volcano vGPU register annotations, Volcano GPU share,
 * prefixed open-gpu-share annotations, managed-cloud accelerator labels, gpushare memory
 * units, stale zero-valued resources, renamed time-slicing replicas, MIG-INVALID, and the
 * resource family each request and inventory belongs to.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpusched/engine.h"
#include "gpusched/gpu.h"

#define FAM(f) (1u << (f))

static gs_snapshot snap;

static void load(const char *yaml)
{
    gs_error err;
    gs_error_clear(&err);
    gs_snapshot_init(&snap);
    int rc = gs_snapshot_read_buffer(&snap, "t.yaml", yaml, strlen(yaml), NULL, &err);
    if (rc == 0)
        rc = gs_snapshot_finish(&snap, &err);
    if (rc) {
        char buf[1024];
        gs_error_format(&err, buf, sizeof buf);
        fail_msg("read failed: %s", buf);
    }
}

static gs_node_gpus inv(uint32_t i)
{
    gs_node_gpus g;
    gs_error err;
    gs_error_clear(&err);
    assert_true(i < snap.nodes.n);
    if (gs_node_gpus_build(&snap.nodes.v[i], &g, &err) != 0)
        fail_msg("inventory of %s: %s: %s", snap.nodes.v[i].meta.name, err.path, err.msg);
    return g;
}

static gs_gpu_request req(uint32_t i)
{
    gs_gpu_request r;
    gs_error err;
    gs_error_clear(&err);
    assert_true(i < snap.pods.n);
    if (gs_gpu_request_from_pod(&snap.pods.v[i], &r, &err) != 0)
        fail_msg("request of %s: %s", snap.pods.v[i].meta.name, err.msg);
    return r;
}

#define NODE_HDR(name) "apiVersion: v1\nkind: Node\nmetadata:\n  name: " name "\n"
#define POD_HDR(name) "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " name "\n  namespace: ml\n"
#define CONTAINER "spec:\n  containers:\n  - name: c\n"

/* ---------------------------------------------------------------- HAMi */
static const char hami_text[] =
    NODE_HDR("hami") "  labels: {nvidia.com/gpu.product: Tesla-V100-PCIE-32GB}\n"
    "  annotations:\n    hami.io/node-nvidia-register: 'GPU-aaa,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"
    "GPU-bbb,4,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:'\n"
    "status:\n  allocatable: {nvidia.com/gpu: \"14\"}\n";

static void test_hami_register_text(void **state)
{
    (void)state;
    load(hami_text);
    gs_node_gpus g = inv(0);
    assert_int_equal(g.ndevs, 2);
    assert_int_equal(g.sharing, GS_SHARING_VGPU);
    assert_int_equal(g.families, FAM(GS_FAM_HAMI));
    assert_int_equal(g.devs[0].slots, 10);
    assert_int_equal(g.devs[1].slots, 4);
    assert_int_equal(g.devs[1].mem_mib, 32768);
    assert_string_equal(g.dev_uuid[1], "GPU-bbb");
    assert_string_equal(g.dev_type[0], "NVIDIA-Tesla V100-PCIE-32GB");
    assert_string_equal(g.model, "Tesla-V100-PCIE-32GB"); /* the product label first */
    assert_true(g.gpu_node);
    assert_false(g.labels_only);
    /* a deep copy owns its strings */
    gs_node_gpus c;
    assert_int_equal(gs_node_gpus_copy(&c, &g), 0);
    gs_node_gpus_free(&g);
    assert_string_equal(c.dev_uuid[0], "GPU-aaa");
    gs_node_gpus_free(&c);
    gs_snapshot_free(&snap);
}

static void test_hami_register_json(void **state)
{
    (void)state;
    char yaml[8192];
    int o = snprintf(yaml, sizeof yaml, "%s", NODE_HDR("hami8") "  annotations:\n"
                                              "    hami.io/node-nvidia-register: '[");
    for (int i = 0; i < 8; i++)
        o += snprintf(yaml + o, sizeof yaml - (size_t)o,
                      "%s{\"id\":\"GPU-%d\",\"index\":%d,\"count\":10,\"devmem\":81920,"
                      "\"devcore\":100,\"type\":\"NVIDIA-NVIDIA A100-SXM4-80GB\",\"numa\":0,"
                      "\"mode\":\"hami-core\",\"health\":%s,\"custominfo\":{\"a\":[1,2]}}",
                      i ? "," : "", i, i, i == 7 ? "false" : "true");
    snprintf(yaml + o, sizeof yaml - (size_t)o,
             "]'\nstatus:\n  allocatable: {nvidia.com/gpu: \"80\"}\n");
    load(yaml);
    /* 80 vGPU slots on 8 GPUs: not 80 GPUs, no limit error */
    gs_node_gpus g = inv(0);
    assert_int_equal(g.ndevs, 8);
    assert_true(g.devs[7].flags & GS_DEV_UNHEALTHY);
    assert_false(g.devs[6].flags & GS_DEV_UNHEALTHY);
    assert_int_equal(g.devs[0].mem_mib, 81920);
    assert_string_equal(g.model, "NVIDIA A100-SXM4-80GB"); /* from the devices' type */
    assert_true(gs_gpu_model_matches("A100-SXM4-80GB", g.model));
    assert_true(gs_gpu_model_matches("Tesla-V100-PCIE-32GB", "NVIDIA-Tesla V100-PCIE-32GB"));
    assert_non_null(g.mig_model);
    gs_node_gpus_free(&g);
    gs_snapshot_free(&snap);
}

static void test_hami_register_errors(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "'GPU-a,10,abc,100,T4,0,true:'",  /* memory not an integer */
        "'GPU-a,10,15360,100:'",          /* too few fields */
        "'[{\"id\":\"GPU-a\",\"count\":0,\"devmem\":15360}]'", /* split 0 */
        "'[{\"id\": '",                   /* broken JSON */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char yaml[512];
        snprintf(yaml, sizeof yaml,
                 NODE_HDR("bad") "  annotations:\n    hami.io/node-nvidia-register: %s\n"
                 "status:\n  allocatable: {nvidia.com/gpu: \"10\"}\n", bad[i]);
        load(yaml);
        gs_node_gpus g;
        gs_error err;
        gs_error_clear(&err);
        assert_int_equal(gs_node_gpus_build(&snap.nodes.v[0], &g, &err), -1);
        assert_int_equal(err.code, GS_ERR_INVALID);
        assert_string_equal(err.path, "Node bad: metadata.annotations[hami.io/node-nvidia-register]");
        gs_node_gpus_free(&g);
        gs_snapshot_free(&snap);
    }
}

/* the engine names the node once ("Node X: field", not "Node X: Node X: field") */
static void test_node_error_prefix_once(void **state)
{
    (void)state;
    load(NODE_HDR("bad") "  annotations:\n    hami.io/node-nvidia-register: 'GPU-a,x,1,1,T4,0,true:'\n"
         "status:\n  allocatable: {nvidia.com/gpu: \"10\"}\n");
    gs_error err;
    gs_error_clear(&err);
    gs_cluster *c = gs_cluster_new(&snap, NULL, &err);
    assert_null(c);
    char buf[1024];
    gs_error_format(&err, buf, sizeof buf);
    assert_non_null(strstr(buf, "Node bad: metadata.annotations"));
    assert_null(strstr(buf, "Node bad: Node bad"));
    gs_snapshot_free(&snap);
}

/* ---------------------------------------------------------------- NVIDIA stale keys, replicas */
static void test_renamed_time_slicing(void **state)
{
    (void)state;
    load(NODE_HDR("ts") "  labels: {nvidia.com/gpu.count: \"8\", nvidia.com/gpu.replicas: \"16\","
         " nvidia.com/gpu.product: NVIDIA-A10G}\nstatus:\n  allocatable: {nvidia.com/gpu: \"0\","
         " nvidia.com/gpu.shared: \"128\"}\n---\n"
         NODE_HDR("ts80") "  labels: {nvidia.com/gpu.count: \"8\", nvidia.com/gpu.replicas: \"10\"}\n"
         "status:\n  allocatable: {nvidia.com/gpu: \"80\"}\n---\n"
         NODE_HDR("ts-norep") "  labels: {nvidia.com/gpu.count: \"8\", nvidia.com/gpu.sharing-strategy:"
         " time-slicing}\nstatus:\n  allocatable: {nvidia.com/gpu.shared: \"128\"}\n");
    for (uint32_t i = 0; i < 3; i++) {
        gs_node_gpus g = inv(i);
        assert_int_equal(g.ndevs, 8);
        assert_int_equal(g.devs[0].slots, i == 1 ? 10 : 16);
        assert_int_equal(g.sharing, GS_SHARING_TIME_SLICING);
        assert_false(g.labels_only); /* not "device plugin not running" */
        assert_int_equal(g.families, FAM(i == 1 ? GS_FAM_NVIDIA : GS_FAM_NVIDIA_SHARED));
        assert_string_equal(g.resource, i == 1 ? "nvidia.com/gpu" : "nvidia.com/gpu.shared");
        gs_node_gpus_free(&g);
    }
    gs_snapshot_free(&snap);
}

static void test_stale_mig_keys(void **state)
{
    (void)state;
    load(NODE_HDR("single") "  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB-MIG-1g.5gb,"
         " nvidia.com/gpu.count: \"14\", nvidia.com/mig.strategy: single}\n"
         "status:\n  allocatable: {nvidia.com/gpu: \"14\", nvidia.com/mig-1g.5gb: \"0\","
         " nvidia.com/mig-3g.20gb: \"0\"}\n---\n"
         NODE_HDR("single-nolabel") "  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB-MIG-1g.5gb}\n"
         "status:\n  allocatable: {nvidia.com/gpu: \"14\", nvidia.com/mig-2g.10gb: \"0\"}\n---\n"
         NODE_HDR("mixed") "  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB}\n"
         "status:\n  allocatable: {nvidia.com/gpu: \"0\", nvidia.com/mig-1g.5gb: \"7\","
         " nvidia.com/mig-7g.40gb: \"0\"}\n---\n"
         NODE_HDR("whole") "  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB}\n"
         "status:\n  allocatable: {nvidia.com/gpu: \"8\", nvidia.com/mig-1g.5gb: \"0\"}\n");
    for (uint32_t i = 0; i < 2; i++) {
        /* not 14 whole GPUs: 14 MIG devices on 2 GPUs */
        gs_node_gpus g = inv(i);
        assert_int_equal(g.mig_strategy, GS_MIG_SINGLE);
        assert_int_equal(g.ndevs, 2);
        assert_int_equal(g.nmig, 14);
        assert_int_equal(g.families, FAM(GS_FAM_NVIDIA));
        gs_node_gpus_free(&g);
    }
    gs_node_gpus g = inv(2);
    assert_int_equal(g.mig_strategy, GS_MIG_MIXED);
    assert_int_equal(g.nmig, 7);
    assert_int_equal(g.nmig_res, 1);
    assert_int_equal(g.families, FAM(GS_FAM_NVIDIA_MIG));
    gs_node_gpus_free(&g);
    g = inv(3);
    assert_int_equal(g.mig_strategy, GS_MIG_NONE);
    assert_int_equal(g.ndevs, 8);
    assert_int_equal(g.families, FAM(GS_FAM_NVIDIA));
    gs_node_gpus_free(&g);
    gs_snapshot_free(&snap);
}

static void test_mig_invalid(void **state)
{
    (void)state;
    load(NODE_HDR("inv") "  labels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3-MIG-INVALID,"
         " nvidia.com/gpu.count: \"0\", nvidia.com/mig.strategy: single}\n"
         "status:\n  allocatable: {nvidia.com/gpu: \"0\"}\n");
    gs_node_gpus g = inv(0);
    assert_true(g.mig_invalid);
    assert_true(g.gpu_node);
    assert_false(g.labels_only);
    assert_int_equal(g.ndevs, 0);
    gs_node_gpus_free(&g);
    gs_snapshot_free(&snap);
}

/* ---------------------------------------------------------------- other inventories */
static void test_other_inventories(void **state)
{
    (void)state;
    load(NODE_HDR("gs-gib") "status:\n  allocatable: {aliyun.com/gpu-count: \"4\", aliyun.com/gpu-mem: \"60\"}\n---\n"
         NODE_HDR("gs-mib") "status:\n  allocatable: {aliyun.com/gpu-count: \"2\", aliyun.com/gpu-mem: \"46056\"}\n---\n"
         NODE_HDR("vol") "status:\n  allocatable: {volcano.sh/gpu-number: \"4\", volcano.sh/gpu-memory: \"65536\"}\n---\n"
         NODE_HDR("vgpu") "  labels: {nvidia.com/gpu.count: \"4\"}\n"
         "status:\n  allocatable: {volcano.sh/vgpu-number: \"40\", volcano.sh/vgpu-memory: \"92112\"}\n---\n"
         NODE_HDR("vgpu-nolabel") "status:\n  allocatable: {volcano.sh/vgpu-number: \"80\"}\n---\n"
         NODE_HDR("gke") "  labels: {cloud.google.com/gke-accelerator: nvidia-l4}\n"
         "status:\n  allocatable: {nvidia.com/gpu: \"2\"}\n---\n"
         NODE_HDR("aks") "  labels: {kubernetes.azure.com/accelerator: nvidia}\n"
         "status:\n  allocatable: {cpu: \"8\"}\n---\n"
         NODE_HDR("eks") "  labels: {k8s.amazonaws.com/accelerator: nvidia-tesla-a100}\n"
         "status:\n  allocatable: {nvidia.com/mig-3g.20gb: \"2\"}\n");
    gs_node_gpus g = inv(0);
    assert_int_equal(g.ndevs, 4);
    assert_int_equal(g.devs[0].mem_mib, 15 * 1024);
    assert_false(g.gpushare_mib);
    assert_int_equal(g.families, FAM(GS_FAM_GPUSHARE));
    gs_node_gpus_free(&g);
    g = inv(1);
    assert_int_equal(g.ndevs, 2);
    assert_int_equal(g.devs[0].mem_mib, 23028);
    assert_true(g.gpushare_mib);
    gs_node_gpus_free(&g);
    g = inv(2);
    assert_int_equal(g.ndevs, 4);
    assert_int_equal(g.devs[0].mem_mib, 16384);
    assert_int_equal(g.families, FAM(GS_FAM_VOLCANO));
    assert_true(g.gpu_node);
    gs_node_gpus_free(&g);
    g = inv(3);
    assert_int_equal(g.ndevs, 4);
    assert_int_equal(g.devs[0].slots, 10);
    assert_int_equal(g.devs[0].mem_mib, 23028);
    assert_int_equal(g.sharing, GS_SHARING_VGPU);
    assert_int_equal(g.families, FAM(GS_FAM_VOLCANO_VGPU));
    gs_node_gpus_free(&g);
    g = inv(4); /* without a count: vgpu-number over HAMi's default split of 10 */
    assert_int_equal(g.ndevs, 8);
    gs_node_gpus_free(&g);
    g = inv(5);
    assert_string_equal(g.model, "NVIDIA-L4");
    assert_int_equal(g.devs[0].mem_mib, 23034);
    assert_true(gs_gpu_model_matches("L4", g.model));
    gs_node_gpus_free(&g);
    g = inv(6); /* AKS names the vendor only: a GPU node, model unknown */
    assert_true(g.gpu_node);
    assert_true(g.labels_only);
    assert_string_equal(g.model, "");
    gs_node_gpus_free(&g);
    g = inv(7); /* the cloud model gives the MIG catalog entry */
    assert_non_null(g.mig_model);
    assert_int_equal(g.nmig, 2);
    gs_node_gpus_free(&g);
    const char *key = NULL;
    assert_string_equal(gs_gpu_cloud_accelerator(&snap.nodes.v[5].meta.labels, &key), "nvidia-l4");
    assert_string_equal(key, "cloud.google.com/gke-accelerator");
    assert_null(gs_gpu_cloud_accelerator(&snap.nodes.v[0].meta.labels, NULL));
    gs_snapshot_free(&snap);
}

/* ---------------------------------------------------------------- requests */
static void test_requests(void **state)
{
    (void)state;
    load(POD_HDR("openb") "  annotations: {alibabacloud.com/gpu-milli: \"500\", alibabacloud.com/gpu-count: \"2\","
         " alibabacloud.com/gpu-card-model: V100M16|V100M32}\n" CONTAINER "---\n"
         POD_HDR("vol-mem") CONTAINER "    resources: {limits: {volcano.sh/gpu-memory: \"4096\"}}\n---\n"
         POD_HDR("vol-num") CONTAINER "    resources: {limits: {volcano.sh/gpu-number: \"2\"}}\n---\n"
         POD_HDR("vgpu") CONTAINER "    resources: {limits: {volcano.sh/vgpu-number: \"2\","
         " volcano.sh/vgpu-memory: \"10240\", volcano.sh/vgpu-cores: \"50\"}}\n---\n"
         POD_HDR("hami") "  annotations: {nvidia.com/use-gputype: \"A100,H100\", nvidia.com/nouse-gpuuuid: GPU-x,"
         " nvidia.com/vgpu-mode: hami-core, hami.io/gpu-scheduler-policy: spread}\n"
         CONTAINER "    resources: {limits: {nvidia.com/gpu: \"1\", nvidia.com/gpucores: \"20\"}}\n---\n"
         POD_HDR("whole") CONTAINER "    resources: {limits: {nvidia.com/gpu: \"2\"}}\n---\n"
         POD_HDR("shared") CONTAINER "    resources: {limits: {nvidia.com/gpu.shared: \"1\"}}\n---\n"
         POD_HDR("gpushare") CONTAINER "    resources: {limits: {aliyun.com/gpu-mem: \"3\"}}\n---\n"
         POD_HDR("kai") "  annotations: {gpu-fraction: \"0.5\"}\n" CONTAINER "---\n"
         POD_HDR("gs") "  annotations: {gpusched.io/gpu-count: \"1\"}\n" CONTAINER "---\n"
         POD_HDR("two") "  annotations: {gpu-fraction: \"0.5\"}\n" CONTAINER
         "    resources: {limits: {volcano.sh/gpu-number: \"1\"}}\n");
    gs_gpu_request r = req(0);
    assert_int_equal(r.conv, GS_CONV_OPENB);
    assert_int_equal(r.kind, GS_GPU_SHARE);
    assert_int_equal(r.milli, 500);
    assert_int_equal(r.count, 2);
    assert_int_equal(r.nmodels, 2);
    assert_int_equal(r.families, FAM(GS_FAM_OPENB));
    assert_string_equal(r.resource, "alibabacloud.com/gpu-milli");
    r = req(1);
    assert_int_equal(r.conv, GS_CONV_VOLCANO);
    assert_int_equal(r.kind, GS_GPU_SHARE);
    assert_int_equal(r.mem_mib, 4096);
    assert_string_equal(r.resource, "volcano.sh/gpu-memory");
    assert_int_equal(r.families, FAM(GS_FAM_VOLCANO));
    r = req(2);
    assert_int_equal(r.kind, GS_GPU_WHOLE);
    assert_int_equal(r.count, 2);
    assert_string_equal(r.resource, "volcano.sh/gpu-number");
    r = req(3);
    assert_int_equal(r.conv, GS_CONV_VOLCANO_VGPU);
    assert_int_equal(r.kind, GS_GPU_SHARE);
    assert_int_equal(r.count, 2);
    assert_int_equal(r.milli, 500);
    assert_int_equal(r.mem_mib, 10240);
    assert_int_equal(r.families, FAM(GS_FAM_VOLCANO_VGPU));
    r = req(4);
    assert_int_equal(r.conv, GS_CONV_HAMI);
    assert_string_equal(r.resource, "nvidia.com/gpucores");
    assert_int_equal(r.families, FAM(GS_FAM_HAMI));
    assert_int_equal(r.hami, GS_HAMI_USE_TYPE | GS_HAMI_NOUSE_UUID | GS_HAMI_VGPU_MODE |
                                 GS_HAMI_GPU_POLICY);
    assert_string_equal(gs_gpu_request_hami(&r, GS_HAMI_USE_TYPE), "A100,H100");
    assert_string_equal(gs_gpu_request_hami(&r, GS_HAMI_NOUSE_UUID), "GPU-x");
    assert_null(gs_gpu_request_hami(&r, GS_HAMI_USE_UUID));
    assert_string_equal(gs_gpu_hami_key(GS_HAMI_GPU_POLICY), "hami.io/gpu-scheduler-policy");
    r = req(5);
    assert_int_equal(r.hami, 0);
    assert_null(r.hami_ann);
    r = req(5);
    assert_int_equal(r.families, FAM(GS_FAM_NVIDIA) | FAM(GS_FAM_HAMI));
    r = req(6);
    assert_int_equal(r.families, FAM(GS_FAM_NVIDIA_SHARED));
    r = req(7);
    assert_int_equal(r.families, FAM(GS_FAM_GPUSHARE));
    assert_int_equal(r.gpushare_units, 3);
    assert_int_equal(r.mem_mib, 3072);
    r = req(8);
    assert_int_equal(r.families, FAM(GS_FAM_NVIDIA));
    r = req(9);
    assert_int_equal(r.families, GS_FAMS_ANY);
    gs_gpu_request x;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_gpu_request_from_pod(&snap.pods.v[10], &x, &err), -1);
    assert_non_null(strstr(err.msg, "two GPU request conventions"));
    assert_true(gs_gpu_is_device_resource("volcano.sh/vgpu-cores"));
    assert_true(gs_gpu_is_device_resource("volcano.sh/gpu-number"));
    assert_false(gs_gpu_is_device_resource("volcano.sh/other"));
    assert_string_equal(gs_gpu_family_name(GS_FAM_HAMI), "HAMi vGPU (hami.io/node-nvidia-register)");
    gs_snapshot_free(&snap);
}

/* ---------------------------------------------------------------- fit */
static void test_fit_vgpu_and_units(void **state)
{
    (void)state;
    load(hami_text);
    gs_node_gpus h = inv(0);
    gs_snapshot_free(&snap);
    load(POD_HDR("small") CONTAINER "    resources: {limits: {nvidia.com/gpu: \"1\", nvidia.com/gpumem: \"1000\"}}\n---\n"
         POD_HDR("a100") "  annotations: {nvidia.com/use-gputype: a100}\n" CONTAINER
         "    resources: {limits: {nvidia.com/gpu: \"1\", nvidia.com/gpumem: \"1000\"}}\n---\n"
         POD_HDR("v100") "  annotations: {nvidia.com/use-gputype: v100, nvidia.com/nouse-gpuuuid: GPU-aaa}\n"
         CONTAINER "    resources: {limits: {nvidia.com/gpu: \"1\", nvidia.com/gpumem: \"1000\"}}\n---\n"
         POD_HDR("uuid") "  annotations: {nvidia.com/use-gpuuuid: \"GPU-zzz, GPU-aaa\"}\n"
         CONTAINER "    resources: {limits: {nvidia.com/gpu: \"1\", nvidia.com/gpumem: \"1000\"}}\n---\n"
         POD_HDR("gs") CONTAINER "    resources: {limits: {aliyun.com/gpu-mem: \"4\"}}\n");
    gs_gpu_request small = req(0), a100 = req(1), v100 = req(2), uuid = req(3), gsh = req(4);
    gs_gpu_assign a;
    /* device selection */
    assert_int_equal(gs_gpu_fit_node(&h, &a100, &a), GS_FIT_NO_GPU);
    assert_int_equal(gs_gpu_fit_node(&h, &v100, &a), GS_FIT_OK);
    assert_int_equal(a.dev[0], 1);
    assert_int_equal(gs_gpu_fit_node(&h, &uuid, &a), GS_FIT_OK);
    assert_int_equal(a.dev[0], 0);
    /* wrong family */
    assert_int_equal(gs_gpu_fit_node(&h, &gsh, &a), GS_FIT_NO_GPU);
    /* split count: GPU 1 holds at most 4 pods, GPU 0 10, memory permitting */
    uint32_t placed = 0;
    gs_gpu_assign as[32];
    while (placed < 32 && gs_gpu_fit_node(&h, &small, &as[placed]) == GS_FIT_OK)
        gs_gpu_bind(&h, &as[placed++]);
    assert_int_equal(placed, 14);
    assert_int_equal(h.devs[0].npods, 10);
    assert_int_equal(h.devs[1].npods, 4);
    assert_int_equal(gs_gpu_fit_node(&h, &small, NULL), GS_FIT_INSUFFICIENT);
    while (placed)
        gs_gpu_unbind(&h, &as[--placed]);
    assert_int_equal(h.devs[0].npods, 0);
    gs_node_gpus_free(&h);
    gs_snapshot_free(&snap);

    /* gpushare units follow the node: GiB by default, MiB on --memory-unit=MiB nodes */
    load(NODE_HDR("gib") "status:\n  allocatable: {aliyun.com/gpu-count: \"1\", aliyun.com/gpu-mem: \"16\"}\n---\n"
         NODE_HDR("mib") "status:\n  allocatable: {aliyun.com/gpu-count: \"1\", aliyun.com/gpu-mem: \"16384\"}\n---\n"
         POD_HDR("p") CONTAINER "    resources: {limits: {aliyun.com/gpu-mem: \"4\"}}\n---\n"
         POD_HDR("big") CONTAINER "    resources: {limits: {aliyun.com/gpu-mem: \"8192\"}}\n");
    gs_node_gpus gib = inv(0), mib = inv(1);
    gs_gpu_request p = req(0), big = req(1);
    assert_int_equal(gs_gpu_fit_node(&gib, &p, &a), GS_FIT_OK);
    assert_int_equal(a.mem[0], 4096);
    assert_int_equal(gs_gpu_fit_node(&mib, &p, &a), GS_FIT_OK);
    assert_int_equal(a.mem[0], 4);
    assert_int_equal(gs_gpu_fit_node(&gib, &big, &a), GS_FIT_NEVER);
    assert_int_equal(gs_gpu_fit_node(&mib, &big, &a), GS_FIT_OK);
    assert_int_equal(a.mem[0], 8192);
    gs_node_gpus_free(&gib);
    gs_node_gpus_free(&mib);
    gs_snapshot_free(&snap);
}

/* HAMi accounts cores and memory independently on a device (HAMi-core enforces both):
 * 30 cores + 3000 MiB takes 300m and 3000 MiB, not 30% of the memory as well; all the cores
 * need an idle device; a pod without a core limit never joins a device whose cores are
 * all taken. */
static void test_hami_independent_shares(void **state)
{
    (void)state;
    load(NODE_HDR("h") "  annotations:\n    hami.io/node-nvidia-register: "
         "'GPU-a,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:'\n"
         "status:\n  allocatable: {nvidia.com/gpu: \"10\"}\n");
    gs_node_gpus h = inv(0);
    gs_snapshot_free(&snap);
    load(POD_HDR("both") CONTAINER "    resources: {limits: {nvidia.com/gpu: \"1\", nvidia.com/gpucores: \"30\", nvidia.com/gpumem: \"3000\"}}\n---\n"
         POD_HDR("all-cores") CONTAINER "    resources: {limits: {nvidia.com/gpu: \"1\", nvidia.com/gpucores: \"100\", nvidia.com/gpumem: \"1000\"}}\n---\n"
         POD_HDR("rest-cores") CONTAINER "    resources: {limits: {nvidia.com/gpu: \"1\", nvidia.com/gpucores: \"70\", nvidia.com/gpumem: \"1000\"}}\n---\n"
         POD_HDR("no-cores") CONTAINER "    resources: {limits: {nvidia.com/gpu: \"1\", nvidia.com/gpumem-percentage: \"25\"}}\n");
    gs_gpu_request both = req(0), all = req(1), rest = req(2), none = req(3);
    gs_gpu_assign a, b, c;
    assert_int_equal(gs_gpu_fit_node(&h, &both, &a), GS_FIT_OK);
    assert_int_equal(a.milli[0], 300);
    assert_int_equal(a.mem[0], 3000);
    gs_gpu_bind(&h, &a);
    /* 100 cores: only on an idle device */
    assert_int_equal(gs_gpu_fit_node(&h, &all, NULL), GS_FIT_INSUFFICIENT);
    /* no core limit: 0m and a quarter of the memory */
    assert_int_equal(gs_gpu_fit_node(&h, &none, &b), GS_FIT_OK);
    assert_int_equal(b.milli[0], 0);
    assert_int_equal(b.mem[0], 8192);
    /* the remaining 70 cores fill the device; then a pod without a core limit stays out */
    assert_int_equal(gs_gpu_fit_node(&h, &rest, &c), GS_FIT_OK);
    gs_gpu_bind(&h, &c);
    assert_int_equal(h.devs[0].milli_used, 1000);
    assert_int_equal(gs_gpu_fit_node(&h, &none, NULL), GS_FIT_INSUFFICIENT);
    gs_gpu_unbind(&h, &c);
    gs_gpu_unbind(&h, &a);
    assert_int_equal(gs_gpu_fit_node(&h, &all, &a), GS_FIT_OK);
    assert_int_equal(a.milli[0], 1000);
    gs_node_gpus_free(&h);
    gs_snapshot_free(&snap);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hami_independent_shares),
        cmocka_unit_test(test_hami_register_text),
        cmocka_unit_test(test_hami_register_json),
        cmocka_unit_test(test_hami_register_errors),
        cmocka_unit_test(test_node_error_prefix_once),
        cmocka_unit_test(test_renamed_time_slicing),
        cmocka_unit_test(test_stale_mig_keys),
        cmocka_unit_test(test_mig_invalid),
        cmocka_unit_test(test_other_inventories),
        cmocka_unit_test(test_requests),
        cmocka_unit_test(test_fit_vgpu_and_units),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
