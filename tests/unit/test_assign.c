/*
 * test_assign.c - the device assignment record gpusched.io/assignment: placements of
 * whole GPUs, MIG instances, shares, time-slicing replicas, HAMi and gpushare requests
 * (gs_gpu_fit_node on inventories from gs_node_gpus_build) recorded per container,
 * written, read back and checked against the node to the exact same accounting; and the
 * refusals: another major version, a record copied to another pod, unknown devices and
 * instances, over-committed shares, malformed JSON with line:col, bad UUIDs and names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpusched/assign.h"
#include "gpusched/engine.h"
#include "gpusched/gpu.h"

#define UID "0f6c2a9e-54b1-4c1e-9d7e-3f5a8b2c1d40"
#define UID2 "7b1e4c2d-9a3f-4e8b-b6d5-2c4a1f0e9d83"
#define UUID0 "GPU-3c1f0b2a-7d4e-4f8a-9b6c-1e2d3f4a5b60"
#define UUID1 "GPU-8a9b0c1d-2e3f-4a5b-8c7d-9e0f1a2b3c4d"
#define T0 1767323045 /* 2026-01-02T03:04:05Z */

static gs_snapshot snap;
static gs_assign_record *rec, *rec2;

static int setup(void **state)
{
    (void)state;
    rec = calloc(1, sizeof *rec);
    rec2 = calloc(1, sizeof *rec2);
    return rec && rec2 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(rec);
    free(rec2);
    return 0;
}

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

static gs_node_gpus inv(void)
{
    gs_node_gpus g;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(snap.nodes.n, 1);
    if (gs_node_gpus_build(&snap.nodes.v[0], &g, &err) != 0)
        fail_msg("inventory: %s", err.msg);
    return g;
}

static gs_gpu_request req(uint32_t i)
{
    gs_gpu_request r;
    gs_error err;
    gs_error_clear(&err);
    assert_true(i < snap.pods.n);
    if (gs_gpu_request_from_pod(&snap.pods.v[i], &r, &err) != 0)
        fail_msg("request: %s", err.msg);
    return r;
}

static bool same_assign(const gs_gpu_assign *a, const gs_gpu_assign *b)
{
    if (a->n != b->n)
        return false;
    for (uint8_t i = 0; i < a->n; i++) {
        bool hit = false;
        for (uint8_t k = 0; k < b->n && !hit; k++)
            hit = a->dev[i] == b->dev[k] && a->mig[i] == b->mig[k] && a->milli[i] == b->milli[k] &&
                  a->mem[i] == b->mem[k] && a->slots[i] == b->slots[k];
        if (!hit)
            return false;
    }
    return true;
}

static void fail_err(const char *what, const gs_error *err)
{
    char buf[1024];
    gs_error_format(err, buf, sizeof buf);
    fail_msg("%s: %s", what, buf);
}

/*
 * Place pod i on the node, record it, write it, read it back, check it: the accounting
 * read back is the placement. Returns the JSON (caller frees) and leaves the decoded
 * record in `rec` and the placement in *pa.
 */
static char *round_trip(gs_node_gpus *g, uint32_t i, gs_gpu_assign *pa)
{
    gs_gpu_request r = req(i);
    gs_gpu_assign a;
    assert_int_equal(gs_gpu_fit_node(g, &r, &a), GS_FIT_OK);
    gs_error err;
    gs_error_clear(&err);
    if (gs_assign_from_pod(&snap.pods.v[i], g, &r, &a, "gpu-a", T0, rec2, &err))
        fail_err("from_pod", &err);
    gs_strbuf sb = GS_STRBUF_INIT;
    if (gs_assign_encode(rec2, &sb, &err))
        fail_err("encode", &err);
    if (gs_assign_decode(sb.buf, sb.len, snap.pods.v[i].meta.uid, rec, &err))
        fail_err("decode", &err);
    gs_assign_record *tmp = calloc(1, sizeof *tmp);
    assert_non_null(tmp);
    /* what was read is what was written, byte for byte */
    gs_strbuf sb2 = GS_STRBUF_INIT;
    assert_int_equal(gs_assign_encode(rec, &sb2, &err), 0);
    assert_string_equal(sb.buf, sb2.buf);
    gs_strbuf_free(&sb2);
    free(tmp);
    gs_gpu_assign back;
    if (gs_assign_check(rec, g, "gpu-a", GS_ASSIGN_CHECK_FREE, &back, &err))
        fail_err("check", &err);
    assert_true(same_assign(&a, &back));
    *pa = a;
    return gs_strbuf_detach(&sb);
}

#define NODE_HDR "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-a\n"
#define POD(name) "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: " name "\n  namespace: ml\n"

/* ---------------------------------------------------------------- round trips */
static const char whole_yaml[] =
    NODE_HDR "  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB, nvidia.com/gpu.memory: "
    "\"81920\", nvidia.com/gpu.count: \"4\"}\nstatus:\n  allocatable: {nvidia.com/gpu: \"4\"}\n"
    POD("train") "  uid: " UID "\nspec:\n"
    "  initContainers:\n  - name: prep\n    resources: {limits: {nvidia.com/gpu: 3}}\n"
    "  containers:\n  - name: a\n    resources: {limits: {nvidia.com/gpu: 1}}\n"
    "  - name: log\n"
    "  - name: b\n    resources: {limits: {nvidia.com/gpu: 2}}\n";

static void test_whole(void **state)
{
    (void)state;
    load(whole_yaml);
    gs_node_gpus g = inv();
    gs_gpu_assign a;
    char *json = round_trip(&g, 0, &a);
    assert_string_equal(
        json,
        "{\"v\":\"1.0\",\"node\":\"gpu-a\",\"uid\":\"" UID "\",\"time\":\"2026-01-02T03:04:05Z\","
        "\"kind\":\"whole\",\"conv\":\"nvidia\",\"containers\":["
        "{\"name\":\"prep\",\"role\":\"init\",\"devices\":[{\"gpu\":0,\"milli\":1000,\"mem\":81920,"
        "\"replicas\":1},{\"gpu\":1,\"milli\":1000,\"mem\":81920,\"replicas\":1},{\"gpu\":2,"
        "\"milli\":1000,\"mem\":81920,\"replicas\":1}]},"
        "{\"name\":\"a\",\"devices\":[{\"gpu\":0,\"milli\":1000,\"mem\":81920,\"replicas\":1}]},"
        "{\"name\":\"b\",\"devices\":[{\"gpu\":1,\"milli\":1000,\"mem\":81920,\"replicas\":1},"
        "{\"gpu\":2,\"milli\":1000,\"mem\":81920,\"replicas\":1}]}]}");
    assert_int_equal(rec->nctr, 3);
    assert_int_equal(rec->ctr[0].role, GS_ASSIGN_INIT);
    assert_int_equal(rec->time, T0);
    assert_int_equal(rec->kind, GS_GPU_WHOLE);
    assert_int_equal(rec->conv, GS_CONV_NVIDIA);
    /* bound, the same devices are no longer free: the record is refused against it */
    gs_gpu_bind(&g, &a);
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_assign_check(rec, &g, "gpu-a", GS_ASSIGN_CHECK_FREE, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "over-committed"));
    /* without the flag it is within capacity (the restart rebuild checks, then binds) */
    assert_int_equal(gs_assign_check(rec, &g, "gpu-a", 0, NULL, &err), 0);
    /* another node name */
    assert_int_equal(gs_assign_check(rec, &g, "gpu-b", 0, NULL, &err), -1);
    assert_string_equal(err.path, "node");
    free(json);
    gs_node_gpus_free(&g);
    gs_snapshot_free(&snap);
}

static const char mig_yaml[] =
    NODE_HDR "  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB, nvidia.com/gpu.count: "
    "\"2\", nvidia.com/mig.strategy: mixed}\nstatus:\n  allocatable: {nvidia.com/gpu: \"1\", "
    "nvidia.com/mig-1g.10gb: \"7\"}\n"
    POD("infer") "  uid: " UID "\nspec:\n  containers:\n  - name: m\n"
    "    resources: {limits: {nvidia.com/mig-1g.10gb: 2}}\n";

static void test_mig(void **state)
{
    (void)state;
    load(mig_yaml);
    gs_node_gpus g = inv();
    gs_gpu_assign a;
    char *json = round_trip(&g, 0, &a);
    assert_int_equal(rec->kind, GS_GPU_MIG);
    assert_int_equal(rec->ctr[0].ndev, 2);
    const gs_assign_dev *d0 = &rec->ctr[0].dev[0], *d1 = &rec->ctr[0].dev[1];
    assert_true(d0->mig && d1->mig);
    assert_string_equal(d0->mig_profile, "1g.10gb");
    assert_string_equal(d0->mig_resource, "nvidia.com/mig-1g.10gb");
    assert_int_equal(d0->mig_start, g.mig[a.mig[0]].start);
    assert_int_equal(d1->mig_start, g.mig[a.mig[1]].start);
    assert_true(d0->gpu != d1->gpu || d0->mig_start != d1->mig_start);
    assert_non_null(strstr(json, "\"mig\":{\"profile\":\"1g.10gb\",\"start\":"));
    /* an instance already in use is refused with the flag */
    gs_gpu_bind(&g, &a);
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_assign_check(rec, &g, NULL, GS_ASSIGN_CHECK_FREE, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "already in use"));
    /* an instance that does not exist: a start no 1g.10gb instance has on that GPU */
    rec->ctr[0].dev[0].mig_start = 7;
    rec->ctr[0].dev[1].mig_start = d0->gpu == d1->gpu ? 6 : d1->mig_start;
    assert_int_equal(gs_assign_check(rec, &g, NULL, 0, NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_NOTFOUND);
    assert_string_equal(err.path, "containers[0].devices[0].mig");
    free(json);
    gs_node_gpus_free(&g);
    gs_snapshot_free(&snap);
}

static const char single_yaml[] =
    NODE_HDR "  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB-MIG-1g.5gb, "
    "nvidia.com/gpu.count: \"1\", nvidia.com/mig.strategy: single}\nstatus:\n"
    "  allocatable: {nvidia.com/gpu: \"7\"}\n"
    POD("one") "  uid: " UID "\nspec:\n  containers:\n  - name: m\n"
    "    resources: {limits: {nvidia.com/gpu: 1}}\n";

/* the single strategy: nvidia.com/gpu is a MIG instance */
static void test_mig_single(void **state)
{
    (void)state;
    load(single_yaml);
    gs_node_gpus g = inv();
    gs_gpu_assign a;
    char *json = round_trip(&g, 0, &a);
    assert_int_equal(rec->kind, GS_GPU_WHOLE);
    assert_true(rec->ctr[0].dev[0].mig);
    assert_string_equal(rec->ctr[0].dev[0].mig_profile, "1g.5gb");
    assert_string_equal(rec->ctr[0].dev[0].mig_resource, "nvidia.com/gpu");
    /* the same instance under a mixed-strategy name is refused */
    strcpy(rec->ctr[0].dev[0].mig_resource, "nvidia.com/mig-1g.5gb");
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_assign_check(rec, &g, NULL, 0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "advertised as nvidia.com/gpu"));
    free(json);
    gs_node_gpus_free(&g);
    gs_snapshot_free(&snap);
}

static const char share_yaml[] =
    NODE_HDR "  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB, nvidia.com/gpu.memory: "
    "\"81920\", nvidia.com/gpu.count: \"2\"}\nstatus:\n  allocatable: {nvidia.com/gpu: \"2\"}\n"
    POD("half") "  uid: " UID "\n  annotations: {gpusched.io/gpu-milli: \"500\"}\nspec:\n"
    "  containers:\n  - name: main\n  - name: side\n"
    POD("kai") "  uid: " UID2 "\n  annotations: {gpu-fraction: \"0.25\", "
    "gpu-fraction-container-name: worker}\nspec:\n"
    "  containers:\n  - name: main\n  - name: worker\n";

static void test_share(void **state)
{
    (void)state;
    load(share_yaml);
    gs_node_gpus g = inv();
    gs_gpu_assign a;
    char *json = round_trip(&g, 0, &a);
    /* an annotation convention: the first app container holds the share */
    assert_int_equal(rec->nctr, 1);
    assert_string_equal(rec->ctr[0].name, "main");
    assert_int_equal(rec->ctr[0].dev[0].milli, 500);
    assert_int_equal(rec->ctr[0].dev[0].mem_mib, 40960);
    assert_int_equal(rec->conv, GS_CONV_GPUSCHED);
    gs_gpu_bind(&g, &a);
    free(json);
    /* KAI names its container; best fit puts it next to the first share */
    json = round_trip(&g, 1, &a);
    assert_int_equal(rec->nctr, 1);
    assert_string_equal(rec->ctr[0].name, "worker");
    assert_int_equal(rec->ctr[0].dev[0].gpu, 0);
    assert_int_equal(rec->ctr[0].dev[0].milli, 250);
    assert_int_equal(rec->conv, GS_CONV_KAI);
    gs_gpu_bind(&g, &a);
    /* over-committed: the second record again on a device now at 750 milli */
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_assign_check(rec, &g, "gpu-a", GS_ASSIGN_CHECK_FREE, NULL, &err), 0);
    rec->ctr[0].dev[0].milli = 300;
    assert_int_equal(gs_assign_check(rec, &g, "gpu-a", GS_ASSIGN_CHECK_FREE, NULL, &err), -1);
    assert_string_equal(err.path, "containers[0].devices[0].milli");
    assert_non_null(strstr(err.msg, "over-committed"));
    /* two app containers on one device beyond its capacity, whatever is in use */
    rec->nctr = 2;
    rec->ctr[1] = rec->ctr[0];
    strcpy(rec->ctr[1].name, "other");
    rec->ctr[0].dev[0].milli = 600;
    rec->ctr[1].dev[0].milli = 600;
    rec->ctr[0].dev[0].mem_mib = rec->ctr[1].dev[0].mem_mib = 1024;
    assert_int_equal(gs_assign_check(rec, &g, NULL, 0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "1200 held by this pod > 1000"));
    /* an init container's amount does not add to the app containers' */
    rec->ctr[0].role = GS_ASSIGN_INIT;
    gs_gpu_assign back;
    assert_int_equal(gs_assign_check(rec, &g, NULL, 0, &back, &err), 0);
    assert_int_equal(back.n, 1);
    assert_int_equal(back.milli[0], 600);
    /* a sidecar does */
    rec->ctr[0].role = GS_ASSIGN_SIDECAR;
    assert_int_equal(gs_assign_check(rec, &g, NULL, 0, NULL, &err), -1);
    free(json);
    gs_node_gpus_free(&g);
    gs_snapshot_free(&snap);
}

static const char ts_yaml[] =
    NODE_HDR "  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB-SHARED, "
    "nvidia.com/gpu.count: \"2\", nvidia.com/gpu.replicas: \"4\", "
    "nvidia.com/gpu.sharing-strategy: time-slicing}\nstatus:\n  allocatable: {nvidia.com/gpu: \"8\"}\n"
    POD("ts") "  uid: " UID "\nspec:\n"
    "  initContainers:\n  - name: agent\n    restartPolicy: Always\n"
    "    resources: {limits: {nvidia.com/gpu: 1}}\n"
    "  containers:\n  - name: a\n    resources: {limits: {nvidia.com/gpu: 2}}\n"
    "  - name: b\n    resources: {limits: {nvidia.com/gpu: 2}}\n";

static void test_time_sliced(void **state)
{
    (void)state;
    load(ts_yaml);
    gs_node_gpus g = inv();
    gs_gpu_assign a;
    char *json = round_trip(&g, 0, &a);
    /* 5 replicas: 4 on one GPU, 1 on the other; the sidecar takes the first */
    assert_int_equal(a.n, 2);
    assert_int_equal(rec->nctr, 3);
    assert_int_equal(rec->ctr[0].role, GS_ASSIGN_SIDECAR);
    assert_int_equal(rec->ctr[0].ndev, 1);
    assert_int_equal(rec->ctr[0].dev[0].replicas, 1);
    uint32_t reps = 0;
    for (uint16_t c = 0; c < rec->nctr; c++)
        for (uint8_t d = 0; d < rec->ctr[c].ndev; d++) {
            reps += rec->ctr[c].dev[d].replicas;
            assert_int_equal(rec->ctr[c].dev[d].milli, 0);
        }
    assert_int_equal(reps, 5);
    assert_non_null(strstr(json, "\"role\":\"sidecar\""));
    /* more replicas than the GPU has */
    rec->ctr[1].dev[0].replicas = 4;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_assign_check(rec, &g, NULL, 0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "replicas"));
    free(json);
    gs_node_gpus_free(&g);
    gs_snapshot_free(&snap);
}

static const char hami_yaml[] =
    NODE_HDR "  annotations:\n    hami.io/node-nvidia-register: '[{\"id\":\"" UUID0 "\",\"index\":0,"
    "\"count\":10,\"devmem\":32768,\"devcore\":100,\"type\":\"NVIDIA-Tesla V100-PCIE-32GB\","
    "\"numa\":0,\"health\":true},{\"id\":\"" UUID1 "\",\"index\":1,\"count\":10,\"devmem\":32768,"
    "\"devcore\":100,\"type\":\"NVIDIA-Tesla V100-PCIE-32GB\",\"numa\":0,\"health\":true}]'\n"
    "status:\n  allocatable: {nvidia.com/gpu: \"20\"}\n"
    POD("vgpu") "  uid: " UID "\nspec:\n  containers:\n  - name: c\n"
    "    resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 4000, nvidia.com/gpucores: 30}}\n"
    POD("vgpu2") "  uid: " UID2 "\nspec:\n  containers:\n  - name: c\n"
    "    resources: {limits: {nvidia.com/gpu: 2, nvidia.com/gpumem: 8000}}\n";

static void test_hami(void **state)
{
    (void)state;
    load(hami_yaml);
    gs_node_gpus g = inv();
    gs_gpu_assign a;
    char *json = round_trip(&g, 0, &a);
    assert_int_equal(rec->conv, GS_CONV_HAMI);
    assert_int_equal(rec->ctr[0].dev[0].milli, 300);
    assert_int_equal(rec->ctr[0].dev[0].mem_mib, 4000);
    assert_string_equal(rec->ctr[0].dev[0].uuid, a.dev[0] ? UUID1 : UUID0);
    assert_non_null(strstr(json, "\"uuid\":\"GPU-"));
    gs_gpu_bind(&g, &a);
    free(json);
    json = round_trip(&g, 1, &a);
    assert_int_equal(rec->ctr[0].ndev, 2);
    /* the record says another GPU than the one at that index */
    strcpy(rec->ctr[0].dev[0].uuid, rec->ctr[0].dev[0].gpu ? UUID0 : UUID1);
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_assign_check(rec, &g, NULL, 0, NULL, &err), -1);
    assert_string_equal(err.path, "containers[0].devices[0].uuid");
    free(json);
    gs_node_gpus_free(&g);
    gs_snapshot_free(&snap);
}

static const char gpushare_yaml[] =
    NODE_HDR "status:\n  allocatable: {aliyun.com/gpu-count: \"2\", aliyun.com/gpu-mem: \"30\"}\n"
    POD("gs") "  uid: " UID "\nspec:\n  containers:\n  - name: c\n"
    "    resources: {limits: {aliyun.com/gpu-mem: 4}}\n"
    POD("gs2") "  uid: " UID2 "\nspec:\n  containers:\n  - name: c\n"
    "    resources: {limits: {aliyun.com/gpu-mem: 2}}\n  - name: d\n"
    "    resources: {limits: {aliyun.com/gpu-mem: 2}}\n";

static void test_gpushare(void **state)
{
    (void)state;
    load(gpushare_yaml);
    gs_node_gpus g = inv();
    gs_gpu_assign a;
    char *json = round_trip(&g, 0, &a);
    assert_int_equal(rec->conv, GS_CONV_GPUSHARE);
    assert_int_equal(rec->ctr[0].dev[0].mem_mib, 4096);
    free(json);
    /* two containers sharing one gpushare GPU: not expressible exactly, refused */
    gs_gpu_request r = req(1);
    assert_int_equal(gs_gpu_fit_node(&g, &r, &a), GS_FIT_OK);
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_assign_from_pod(&snap.pods.v[1], &g, &r, &a, "gpu-a", T0, rec, &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_non_null(strstr(err.msg, "asks for 1 GPU units from unit 1"));
    gs_node_gpus_free(&g);
    gs_snapshot_free(&snap);
}

static void test_from_pod_mismatch(void **state)
{
    (void)state;
    load(whole_yaml);
    gs_node_gpus g = inv();
    gs_gpu_request r = req(0);
    gs_gpu_assign a;
    assert_int_equal(gs_gpu_fit_node(&g, &r, &a), GS_FIT_OK);
    /* a placement of 4 devices for a pod that asks for 3 */
    a.dev[a.n] = 3;
    a.mig[a.n] = 0xffff;
    a.milli[a.n] = 1000;
    a.mem[a.n] = 81920;
    a.slots[a.n] = 1;
    a.n++;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_assign_from_pod(&snap.pods.v[0], &g, &r, &a, "gpu-a", T0, rec, &err), -1);
    assert_non_null(strstr(err.msg, "do not add up"));
    /* a node name that is no DNS name */
    a.n--;
    assert_int_equal(gs_assign_from_pod(&snap.pods.v[0], &g, &r, &a, "GPU_A", T0, rec, &err), -1);
    assert_string_equal(err.path, "node");
    gs_node_gpus_free(&g);
    gs_snapshot_free(&snap);
}

/* ---------------------------------------------------------------- refusals */
#define HEAD "{\"v\":\"1.0\",\"node\":\"gpu-a\",\"uid\":\"" UID "\",\"time\":\"2026-01-02T03:04:05Z\","

static int dec(const char *json, gs_error *err)
{
    gs_error_clear(err);
    return gs_assign_decode(json, strlen(json), UID, rec, err);
}

static void test_decode_versions(void **state)
{
    (void)state;
    gs_error err;
    const char *ok = HEAD "\"kind\":\"share\",\"containers\":[{\"name\":\"c\",\"devices\":"
                          "[{\"gpu\":1,\"milli\":250}]}]}";
    assert_int_equal(dec(ok, &err), 0);
    assert_int_equal(rec->major, 1);
    assert_int_equal(rec->minor, 0);
    assert_int_equal(rec->conv, GS_CONV_NONE);
    /* a later minor with fields this reader does not know */
    const char *minor = "{\"v\":\"1.7\",\"node\":\"gpu-a\",\"uid\":\"" UID "\",\"time\":"
                        "\"2026-01-02T03:04:05.5+01:00\",\"kind\":\"share\",\"conv\":\"future\","
                        "\"lease\":{\"ttl\":30},\"containers\":[{\"name\":\"c\",\"devices\":"
                        "[{\"gpu\":1,\"milli\":250,\"nvlink\":[0,1]}],\"x\":null}]}";
    assert_int_equal(dec(minor, &err), 0);
    assert_int_equal(rec->minor, 7);
    assert_int_equal(rec->time, T0 - 3600);
    assert_int_equal(rec->conv, GS_CONV_NONE);
    /* another major */
    const char *major = "{\"v\":\"2.0\",\"node\":\"gpu-a\"}";
    assert_int_equal(dec(major, &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_string_equal(err.path, "v");
    assert_non_null(strstr(err.msg, "unsupported record version 2.0"));
    assert_int_equal(err.line, 1);
    assert_int_equal(err.col, 6);
    const char *const bad_v[] = {"{\"v\":1}", "{\"v\":\"1\"}", "{\"v\":\"1.x\"}", "{\"v\":\"-1.0\"}",
                                 "{\"node\":\"a\"}"};
    for (size_t i = 0; i < sizeof bad_v / sizeof *bad_v; i++) {
        assert_int_equal(dec(bad_v[i], &err), -1);
        assert_int_equal(err.code, GS_ERR_INVALID);
    }
}

static void test_decode_uid(void **state)
{
    (void)state;
    gs_error err;
    const char *ok = HEAD "\"kind\":\"share\",\"containers\":[{\"name\":\"c\",\"devices\":"
                          "[{\"gpu\":1,\"milli\":250}]}]}";
    gs_error_clear(&err);
    assert_int_equal(gs_assign_decode(ok, strlen(ok), UID2, rec, &err), -1);
    assert_string_equal(err.path, "uid");
    assert_non_null(strstr(err.msg, "copied records are refused"));
    assert_int_equal(gs_assign_decode(ok, strlen(ok), NULL, rec, &err), 0);
    /* not a UUID */
    const char *bad = "{\"v\":\"1.0\",\"node\":\"gpu-a\",\"uid\":\"pod-1\",\"time\":"
                      "\"2026-01-02T03:04:05Z\",\"kind\":\"share\",\"containers\":[{\"name\":\"c\","
                      "\"devices\":[{\"gpu\":1}]}]}";
    assert_int_equal(dec(bad, &err), -1);
    assert_string_equal(err.path, "uid");
}

static void test_decode_malformed(void **state)
{
    (void)state;
    gs_error err;
    /* syntax: line:col of the mistake */
    const char *syn = "{\n  \"v\": \"1.0\",\n  \"node\" \"gpu-a\"\n}";
    assert_int_equal(dec(syn, &err), -1);
    assert_int_equal(err.code, GS_ERR_PARSE);
    assert_string_equal(err.file, "gpusched.io/assignment");
    assert_int_equal(err.line, 3);
    assert_int_equal(err.col, 10);
    /* a value out of range points at it */
    const char *range = HEAD "\"kind\":\"share\",\"containers\":[{\"name\":\"c\",\n\"devices\":"
                             "[{\"gpu\":1,\n  \"milli\":2500}]}]}";
    assert_int_equal(dec(range, &err), -1);
    assert_string_equal(err.path, "containers[0].devices[0].milli");
    assert_int_equal(err.line, 3);
    assert_int_equal(err.col, 11);
    /* a structural rule found after reading also points into the document */
    const char *twice = HEAD "\"kind\":\"share\",\"containers\":[{\"name\":\"c\",\"devices\":"
                             "[{\"gpu\":1}]},\n{\"name\":\"c\",\"devices\":[{\"gpu\":2}]}]}";
    assert_int_equal(dec(twice, &err), -1);
    assert_string_equal(err.path, "containers[1].name");
    assert_int_equal(err.line, 2);
    assert_int_equal(err.col, 9);
    struct {
        const char *json;
        const char *path;
    } bad[] = {
        {"[]", ""},
        {HEAD "\"kind\":\"half\",\"containers\":[]}", "kind"},
        {HEAD "\"kind\":\"share\",\"containers\":[]}", "containers"},
        {HEAD "\"kind\":\"share\",\"containers\":[{\"name\":\"C\",\"devices\":[{\"gpu\":1}]}]}",
         "containers[0].name"},
        {HEAD "\"kind\":\"share\",\"containers\":[{\"name\":\"c\",\"devices\":[{\"gpu\":64}]}]}",
         "containers[0].devices[0].gpu"},
        {HEAD "\"kind\":\"share\",\"containers\":[{\"name\":\"c\",\"devices\":[{\"gpu\":1.5}]}]}",
         "containers[0].devices[0].gpu"},
        {HEAD "\"kind\":\"share\",\"containers\":[{\"name\":\"c\",\"devices\":[{\"gpu\":-1}]}]}",
         "containers[0].devices[0].gpu"},
        {HEAD "\"kind\":\"share\",\"containers\":[{\"name\":\"c\",\"devices\":[{\"gpu\":\"1\"}]}]}",
         "containers[0].devices[0].gpu"},
        {HEAD "\"kind\":\"share\",\"containers\":[{\"name\":\"c\",\"devices\":[{\"gpu\":1,"
              "\"uuid\":\"GPU-xyz\"}]}]}",
         "containers[0].devices[0].uuid"},
        {HEAD "\"kind\":\"share\",\"containers\":[{\"name\":\"c\",\"devices\":[{\"gpu\":1},"
              "{\"gpu\":1}]}]}",
         "containers[0].devices[1]"},
        {HEAD "\"kind\":\"share\",\"containers\":[{\"name\":\"c\",\"devices\":[{\"gpu\":1,"
              "\"mig\":{\"profile\":\"1g.10gb\",\"start\":0}}]}]}",
         "containers[0].devices[0].mig"},
        {HEAD "\"kind\":\"mig\",\"containers\":[{\"name\":\"c\",\"devices\":[{\"gpu\":1}]}]}",
         "containers[0].devices[0].mig"},
        {HEAD "\"kind\":\"mig\",\"containers\":[{\"name\":\"c\",\"devices\":[{\"gpu\":1,"
              "\"mig\":{\"profile\":\"1g.10gb\",\"start\":8}}]}]}",
         "containers[0].devices[0].start"},
        {HEAD "\"kind\":\"share\",\"containers\":[{\"name\":\"c\",\"devices\":[{\"gpu\":1}]},"
              "{\"name\":\"i\",\"role\":\"init\",\"devices\":[{\"gpu\":1}]}]}",
         "containers[1].role"},
        {HEAD "\"kind\":\"share\",\"containers\":[{\"name\":\"c\",\"role\":\"job\",\"devices\":"
              "[{\"gpu\":1}]}]}",
         "containers[0].role"},
        {"{\"v\":\"1.0\",\"node\":\"gpu-a\",\"uid\":\"" UID "\",\"time\":\"yesterday\",\"kind\":"
         "\"share\",\"containers\":[]}",
         "time"},
        {"{\"v\":\"1.0\",\"v\":\"1.0\"}", ""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (dec(bad[i].json, &err) != -1)
            fail_msg("accepted: %s", bad[i].json);
        if (strcmp(err.path, bad[i].path) != 0)
            fail_msg("case %zu: path \"%s\", expected \"%s\" (%s)", i, err.path, bad[i].path,
                     err.msg);
        assert_true(err.line >= 1);
    }
    /* too long */
    char *big = malloc(GS_ASSIGN_MAX_BYTES + 2);
    memset(big, ' ', GS_ASSIGN_MAX_BYTES + 1);
    big[GS_ASSIGN_MAX_BYTES + 1] = '\0';
    gs_error_clear(&err);
    assert_int_equal(gs_assign_decode(big, GS_ASSIGN_MAX_BYTES + 1, NULL, rec, &err), -1);
    assert_int_equal(err.code, GS_ERR_LIMIT);
    free(big);
}

static void test_unknown_device(void **state)
{
    (void)state;
    load(whole_yaml);
    gs_node_gpus g = inv();
    gs_error err;
    const char *js = HEAD "\"kind\":\"whole\",\"containers\":[{\"name\":\"a\",\"devices\":"
                          "[{\"gpu\":0,\"milli\":1000,\"mem\":81920,\"replicas\":1},{\"gpu\":7,"
                          "\"milli\":1000}]}]}";
    assert_int_equal(dec(js, &err), 0);
    assert_int_equal(gs_assign_check(rec, &g, "gpu-a", 0, NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_NOTFOUND);
    assert_string_equal(err.path, "containers[0].devices[1].gpu");
    /* a MIG instance on a GPU without MIG */
    js = HEAD "\"kind\":\"mig\",\"containers\":[{\"name\":\"a\",\"devices\":"
              "[{\"gpu\":0,\"mig\":{\"profile\":\"1g.10gb\",\"start\":0}}]}]}";
    assert_int_equal(dec(js, &err), 0);
    assert_int_equal(gs_assign_check(rec, &g, NULL, 0, NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_NOTFOUND);
    /* more memory than the device has */
    js = HEAD "\"kind\":\"share\",\"containers\":[{\"name\":\"a\",\"devices\":"
              "[{\"gpu\":0,\"milli\":100,\"mem\":90000}]}]}";
    assert_int_equal(dec(js, &err), 0);
    assert_int_equal(gs_assign_check(rec, &g, NULL, 0, NULL, &err), -1);
    assert_string_equal(err.path, "containers[0].devices[0].mem");
    gs_node_gpus_free(&g);
    gs_snapshot_free(&snap);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole),
        cmocka_unit_test(test_mig),
        cmocka_unit_test(test_mig_single),
        cmocka_unit_test(test_share),
        cmocka_unit_test(test_time_sliced),
        cmocka_unit_test(test_hami),
        cmocka_unit_test(test_gpushare),
        cmocka_unit_test(test_from_pod_mismatch),
        cmocka_unit_test(test_decode_versions),
        cmocka_unit_test(test_decode_uid),
        cmocka_unit_test(test_decode_malformed),
        cmocka_unit_test(test_unknown_device),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
