/* test_gpu_request.c - every GPU request convention -> the canonical gs_gpu_request, the
 * effective-request arithmetic (k8s-semantics 3.1) and the error cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/gpu.h"

/* ---------------------------------------------------------------- pod builder */
#define MAXC 4
#define MAXR 8
typedef struct tpod {
    gs_pod pod;
    gs_container c[MAXC], init[MAXC];
    gs_res res[MAXC][MAXR], ires[MAXC][MAXR];
    gs_kv ann[16];
} tpod;

static void tp_init(tpod *t, uint32_t ncontainers)
{
    memset(t, 0, sizeof *t);
    t->pod.meta.name = "p";
    t->pod.meta.namespace_ = "default";
    t->pod.meta.src.file = "pods.yaml";
    t->pod.meta.src.line = 3;
    t->pod.meta.src.col = 1;
    t->pod.containers = t->c;
    t->pod.ncontainers = ncontainers;
    t->pod.init_containers = t->init;
    t->pod.meta.annotations.items = t->ann;
    for (int i = 0; i < MAXC; i++) {
        t->c[i].requests.items = t->res[i];
        t->init[i].requests.items = t->ires[i];
    }
}

static int res_cmp(const void *a, const void *b)
{
    return strcmp(((const gs_res *)a)->name, ((const gs_res *)b)->name);
}

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const gs_kv *)a)->key, ((const gs_kv *)b)->key);
}

static void add_res(gs_reslist *l, const char *name, int64_t milli)
{
    l->items[l->n].name = name;
    l->items[l->n].q.nanos = (__int128)milli * 1000000;
    l->items[l->n].q.fmt = GS_QF_DECIMAL_SI;
    l->n++;
    qsort(l->items, l->n, sizeof *l->items, res_cmp);
}

/* request `units` (x1000 milli) in container i */
static void tp_req(tpod *t, uint32_t i, const char *name, int64_t units)
{
    add_res(&t->c[i].requests, name, units * 1000);
}

static void tp_req_milli(tpod *t, uint32_t i, const char *name, int64_t milli)
{
    add_res(&t->c[i].requests, name, milli);
}

static void tp_init_req(tpod *t, bool sidecar, const char *name, int64_t units)
{
    uint32_t i = t->pod.ninit++;
    t->init[i].sidecar = sidecar;
    add_res(&t->init[i].requests, name, units * 1000);
}

static void tp_ann(tpod *t, const char *key, const char *val)
{
    gs_labels *l = &t->pod.meta.annotations;
    t->ann[l->n].key = key;
    t->ann[l->n].val = val;
    l->n++;
    qsort(t->ann, l->n, sizeof *t->ann, kv_cmp);
}

static gs_gpu_request req_ok(const tpod *t)
{
    gs_gpu_request r;
    gs_error err;
    gs_error_clear(&err);
    int rc = gs_gpu_request_from_pod(&t->pod, &r, &err);
    if (rc != 0)
        fail_msg("unexpected error: %s", err.msg);
    return r;
}

static gs_error req_err(const tpod *t)
{
    gs_gpu_request r;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_gpu_request_from_pod(&t->pod, &r, &err), -1);
    assert_int_not_equal(err.code, GS_OK);
    assert_string_equal(err.path, "Pod default/p");
    assert_string_equal(err.file, "pods.yaml");
    assert_int_equal(err.line, 3);
    return err;
}

static void model_is(const gs_gpu_request *r, int i, const char *want)
{
    assert_string_equal(r->models[i], want); /* plain NUL-terminated strings */
}

/* ---------------------------------------------------------------- nvidia.com/gpu */
static void test_request_none(void **state)
{
    (void)state;
    tpod t;
    tp_init(&t, 1);
    tp_req(&t, 0, "cpu", 2);
    gs_gpu_request r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_NONE);
    assert_int_equal(r.conv, GS_CONV_NONE);
    /* a zero GPU request is no request */
    tp_req(&t, 0, "nvidia.com/gpu", 0);
    r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_NONE);
}

static void test_request_whole_sum_containers(void **state)
{
    (void)state;
    tpod t;
    tp_init(&t, 2);
    tp_req(&t, 0, "nvidia.com/gpu", 1);
    tp_req(&t, 1, "nvidia.com/gpu", 2);
    gs_gpu_request r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_WHOLE);
    assert_int_equal(r.conv, GS_CONV_NVIDIA);
    assert_int_equal(r.count, 3);
    assert_string_equal(r.resource, "nvidia.com/gpu");
    assert_null(r.scheduler_expected);
    assert_int_equal(r.nmodels, 0);
}

/* k8s-semantics 3.1 examples, with GPUs as the resource */
static void test_request_effective_init_and_sidecars(void **state)
{
    (void)state;
    tpod t;
    /* init 4 / container 1 -> 4 */
    tp_init(&t, 1);
    tp_req(&t, 0, "nvidia.com/gpu", 1);
    tp_init_req(&t, false, "nvidia.com/gpu", 4);
    assert_int_equal(req_ok(&t).count, 4);
    /* init 5, sidecars 1,2,3, container 1 -> 7 */
    tp_init(&t, 1);
    tp_req(&t, 0, "nvidia.com/gpu", 1);
    tp_init_req(&t, false, "nvidia.com/gpu", 5);
    tp_init_req(&t, true, "nvidia.com/gpu", 1);
    tp_init_req(&t, true, "nvidia.com/gpu", 2);
    tp_init_req(&t, true, "nvidia.com/gpu", 3);
    assert_int_equal(req_ok(&t).count, 7);
    /* sidecar 1, sidecar 2, init 5 (runs next to 3 sidecar GPUs), container 1 -> 8 */
    tp_init(&t, 1);
    tp_req(&t, 0, "nvidia.com/gpu", 1);
    tp_init_req(&t, true, "nvidia.com/gpu", 1);
    tp_init_req(&t, true, "nvidia.com/gpu", 2);
    tp_init_req(&t, false, "nvidia.com/gpu", 5);
    assert_int_equal(req_ok(&t).count, 8);
    /* an init container alone asks for GPUs: the pod does */
    tp_init(&t, 1);
    tp_req(&t, 0, "cpu", 1);
    tp_init_req(&t, false, "nvidia.com/gpu", 2);
    gs_gpu_request r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_WHOLE);
    assert_int_equal(r.count, 2);
}

static void test_request_whole_fractional_is_error(void **state)
{
    (void)state;
    tpod t;
    tp_init(&t, 1);
    tp_req_milli(&t, 0, "nvidia.com/gpu", 500);
    gs_error e = req_err(&t);
    assert_int_equal(e.code, GS_ERR_INVALID);
    assert_non_null(strstr(e.msg, "nvidia.com/gpu must be a whole number"));
    /* negative */
    tp_init(&t, 1);
    tp_req(&t, 0, "nvidia.com/gpu", -1);
    e = req_err(&t);
    assert_non_null(strstr(e.msg, "greater than or equal to 0"));
    /* too many */
    tp_init(&t, 1);
    tp_req(&t, 0, "nvidia.com/gpu", 70000);
    e = req_err(&t);
    assert_int_equal(e.code, GS_ERR_LIMIT);
}

static void test_request_gpu_shared(void **state)
{
    (void)state;
    tpod t;
    tp_init(&t, 1);
    tp_req(&t, 0, "nvidia.com/gpu.shared", 1);
    gs_gpu_request r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_WHOLE);
    assert_string_equal(r.resource, "nvidia.com/gpu.shared");
    tp_req(&t, 0, "nvidia.com/gpu", 1);
    req_err(&t);
}

/* ---------------------------------------------------------------- MIG */
static void test_request_mig(void **state)
{
    (void)state;
    tpod t;
    tp_init(&t, 2);
    tp_req(&t, 0, "nvidia.com/mig-1g.10gb", 1);
    tp_req(&t, 1, "nvidia.com/mig-1g.10gb", 1);
    gs_gpu_request r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_MIG);
    assert_int_equal(r.conv, GS_CONV_NVIDIA);
    assert_int_equal(r.count, 2);
    assert_string_equal(r.mig_profile, "1g.10gb");
    assert_string_equal(r.resource, "nvidia.com/mig-1g.10gb");

    tp_init(&t, 1);
    tp_req(&t, 0, "nvidia.com/mig-1g.10gb.me", 1);
    r = req_ok(&t);
    assert_string_equal(r.mig_profile, "1g.10gb+me");

    /* two profiles in one pod */
    tp_init(&t, 2);
    tp_req(&t, 0, "nvidia.com/mig-1g.10gb", 1);
    tp_req(&t, 1, "nvidia.com/mig-3g.40gb", 1);
    gs_error e = req_err(&t);
    assert_non_null(strstr(e.msg, "several MIG profiles"));
    /* ... unless one of them is zero */
    tp_init(&t, 2);
    tp_req(&t, 0, "nvidia.com/mig-1g.10gb", 1);
    tp_req(&t, 1, "nvidia.com/mig-3g.40gb", 0);
    assert_int_equal(req_ok(&t).kind, GS_GPU_MIG);

    /* whole GPUs and MIG instances together */
    tp_init(&t, 2);
    tp_req(&t, 0, "nvidia.com/mig-1g.10gb", 1);
    tp_req(&t, 1, "nvidia.com/gpu", 1);
    e = req_err(&t);
    assert_non_null(strstr(e.msg, "not both"));

    /* fractional MIG request */
    tp_init(&t, 1);
    tp_req_milli(&t, 0, "nvidia.com/mig-1g.10gb", 1500);
    req_err(&t);
    /* malformed profile name */
    tp_init(&t, 1);
    tp_req(&t, 0, "nvidia.com/mig-abc", 1);
    req_err(&t);
}

/* ---------------------------------------------------------------- HAMi */
static void test_request_hami(void **state)
{
    (void)state;
    tpod t;
    tp_init(&t, 1);
    tp_req(&t, 0, "nvidia.com/gpu", 1);
    tp_req(&t, 0, "nvidia.com/gpumem", 3000);
    gs_gpu_request r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_SHARE);
    assert_int_equal(r.conv, GS_CONV_HAMI);
    assert_int_equal(r.count, 1);
    assert_int_equal(r.mem_mib, 3000);
    assert_int_equal(r.mem_pct, 0);
    assert_int_equal(r.milli, 0);
    assert_string_equal(r.scheduler_expected, "hami-scheduler");

    /* cores only: HAMi's default memory is 100% of the device */
    tp_init(&t, 1);
    tp_req(&t, 0, "nvidia.com/gpu", 2);
    tp_req(&t, 0, "nvidia.com/gpucores", 30);
    r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_SHARE);
    assert_int_equal(r.count, 2);
    assert_int_equal(r.milli, 300);
    assert_int_equal(r.mem_pct, 100);

    /* percentage and cores */
    tp_init(&t, 1);
    tp_req(&t, 0, "nvidia.com/gpu", 1);
    tp_req(&t, 0, "nvidia.com/gpumem-percentage", 50);
    tp_req(&t, 0, "nvidia.com/gpucores", 25);
    r = req_ok(&t);
    assert_int_equal(r.mem_pct, 50);
    assert_int_equal(r.milli, 250);
    assert_int_equal(r.mem_mib, 0);

    /* gpumem wins over the percentage */
    tp_req(&t, 0, "nvidia.com/gpumem", 1024);
    r = req_ok(&t);
    assert_int_equal(r.mem_mib, 1024);
    assert_int_equal(r.mem_pct, 0);

    /* HAMi keys without nvidia.com/gpu: one vGPU */
    tp_init(&t, 1);
    tp_req(&t, 0, "nvidia.com/gpumem", 2048);
    r = req_ok(&t);
    assert_int_equal(r.conv, GS_CONV_HAMI);
    assert_int_equal(r.count, 1);

    /* out of range */
    tp_init(&t, 1);
    tp_req(&t, 0, "nvidia.com/gpu", 1);
    tp_req(&t, 0, "nvidia.com/gpucores", 150);
    req_err(&t);
    tp_init(&t, 1);
    tp_req(&t, 0, "nvidia.com/gpu", 1);
    tp_req(&t, 0, "nvidia.com/gpumem-percentage", 101);
    req_err(&t);
    /* with MIG */
    tp_init(&t, 1);
    tp_req(&t, 0, "nvidia.com/mig-1g.10gb", 1);
    tp_req(&t, 0, "nvidia.com/gpumem", 1000);
    req_err(&t);
}

/* ---------------------------------------------------------------- KAI */
static void test_request_kai(void **state)
{
    (void)state;
    tpod t;
    tp_init(&t, 1);
    tp_ann(&t, "gpu-fraction", "0.5");
    gs_gpu_request r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_SHARE);
    assert_int_equal(r.conv, GS_CONV_KAI);
    assert_int_equal(r.count, 1);
    assert_int_equal(r.milli, 500);
    assert_string_equal(r.scheduler_expected, "kai-scheduler");

    static const struct {
        const char *v;
        int milli; /* -1 = error */
    } fr[] = {{"0.25", 250}, {".75", 750}, {"1", 1000}, {"1.0", 1000}, {"0.3333", 333},
              {"0.0005", 1}, {"0.0001", 1}, {"0.9996", 1000}, {"1.5", -1}, {"0", -1},
              {"0.0", -1}, {"abc", -1}, {"", -1}, {"-0.5", -1}, {"0.5x", -1}, {".", -1},
              {"1e-1", -1}, {" 0.5", -1}};
    for (size_t i = 0; i < sizeof fr / sizeof fr[0]; i++) {
        tp_init(&t, 1);
        tp_ann(&t, "gpu-fraction", fr[i].v);
        if (fr[i].milli < 0) {
            req_err(&t);
        } else {
            r = req_ok(&t);
            if (r.milli != fr[i].milli)
                fail_msg("gpu-fraction %s: milli %u, want %d", fr[i].v, r.milli, fr[i].milli);
        }
    }

    tp_init(&t, 1);
    tp_ann(&t, "gpu-fraction", "0.5");
    tp_ann(&t, "gpu-fraction-num-devices", "2");
    r = req_ok(&t);
    assert_int_equal(r.count, 2);
    assert_int_equal(r.milli, 500);

    tp_init(&t, 1);
    tp_ann(&t, "gpu-fraction", "1.5");
    tp_ann(&t, "gpu-fraction-num-devices", "2");
    gs_error e = req_err(&t);
    assert_non_null(strstr(e.msg, "(0, 1]"));

    tp_init(&t, 1);
    tp_ann(&t, "gpu-memory", "2000");
    r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_SHARE);
    assert_int_equal(r.mem_mib, 2000);
    assert_int_equal(r.milli, 0);

    tp_init(&t, 1);
    tp_ann(&t, "gpu-memory", "2000");
    tp_ann(&t, "gpu-fraction", "0.5");
    req_err(&t);
    tp_init(&t, 1);
    tp_ann(&t, "gpu-memory", "lots");
    req_err(&t);
    tp_init(&t, 1);
    tp_ann(&t, "gpu-fraction", "0.5");
    tp_ann(&t, "gpu-fraction-num-devices", "0");
    req_err(&t);
}

/* ---------------------------------------------------------------- gpushare */
static void test_request_gpushare(void **state)
{
    (void)state;
    tpod t;
    tp_init(&t, 2);
    tp_req(&t, 0, "aliyun.com/gpu-mem", 3);
    tp_req(&t, 1, "aliyun.com/gpu-mem", 1);
    gs_gpu_request r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_SHARE);
    assert_int_equal(r.conv, GS_CONV_GPUSHARE);
    assert_int_equal(r.count, 1);
    assert_int_equal(r.mem_mib, 4 * 1024);
    assert_null(r.scheduler_expected);
}

/* ---------------------------------------------------------------- openb */
static void test_request_openb(void **state)
{
    (void)state;
    tpod t;
    tp_init(&t, 1);
    tp_ann(&t, "gpu-milli", "500");
    tp_ann(&t, "gpu-count", "1");
    tp_ann(&t, "gpu-card-model", "V100M16|V100M32");
    gs_gpu_request r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_SHARE);
    assert_int_equal(r.conv, GS_CONV_OPENB);
    assert_int_equal(r.count, 1);
    assert_int_equal(r.milli, 500);
    assert_int_equal(r.nmodels, 2);
    model_is(&r, 0, "V100M16");
    model_is(&r, 1, "V100M32");

    /* 1000 milli = whole GPUs */
    tp_init(&t, 1);
    tp_ann(&t, "gpu-milli", "1000");
    tp_ann(&t, "gpu-count", "8");
    r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_WHOLE);
    assert_int_equal(r.count, 8);

    /* clamped like the trace converter */
    tp_init(&t, 1);
    tp_ann(&t, "gpu-milli", "1500");
    tp_ann(&t, "gpu-count", "1");
    assert_int_equal(req_ok(&t).kind, GS_GPU_WHOLE);
    tp_init(&t, 1);
    tp_ann(&t, "gpu-milli", "-3");
    tp_ann(&t, "gpu-count", "1");
    assert_int_equal(req_ok(&t).kind, GS_GPU_NONE);
    tp_init(&t, 1);
    tp_ann(&t, "gpu-milli", "0");
    tp_ann(&t, "gpu-count", "1");
    r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_NONE);
    assert_int_equal(r.conv, GS_CONV_OPENB);

    /* several shared GPUs */
    tp_init(&t, 1);
    tp_ann(&t, "gpu-milli", "300");
    tp_ann(&t, "gpu-count", "2");
    r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_SHARE);
    assert_int_equal(r.count, 2);

    /* empty parts dropped, duplicates kept once */
    tp_init(&t, 1);
    tp_ann(&t, "gpu-milli", "1000");
    tp_ann(&t, "gpu-count", "1");
    tp_ann(&t, "gpu-card-model", "|V100M16||V100M32|V100M32|");
    r = req_ok(&t);
    assert_int_equal(r.nmodels, 2);
    model_is(&r, 0, "V100M16");
    model_is(&r, 1, "V100M32");

    /* blanks trimmed; list parts are shared copies, a single model is used in place */
    tp_init(&t, 1);
    tp_ann(&t, "gpu-milli", "1000");
    tp_ann(&t, "gpu-card-model", " V100M32 |G2");
    gs_gpu_request r2 = req_ok(&t);
    assert_int_equal(r2.nmodels, 2);
    model_is(&r2, 0, "V100M32");
    model_is(&r2, 1, "G2");
    assert_ptr_equal(r2.models[0], r.models[1]);
    static const char single[] = "G3";
    tp_init(&t, 1);
    tp_ann(&t, "gpu-milli", "1000");
    tp_ann(&t, "gpu-card-model", single);
    r2 = req_ok(&t);
    assert_int_equal(r2.nmodels, 1);
    assert_ptr_equal(r2.models[0], single);
    assert_int_equal(gs_gpu_model_len("A100|H100"), 4);

    tp_init(&t, 1);
    tp_ann(&t, "gpu-milli", "1000");
    tp_ann(&t, "gpu-card-model", "A|B|C|D|E|F|G|H|I");
    gs_error e = req_err(&t);
    assert_int_equal(e.code, GS_ERR_LIMIT);

    tp_init(&t, 1);
    tp_ann(&t, "gpu-milli", "half");
    req_err(&t);

    /* the resource form */
    tp_init(&t, 1);
    tp_req(&t, 0, "alibabacloud.com/gpu-milli", 250);
    r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_SHARE);
    assert_int_equal(r.milli, 250);
    assert_int_equal(r.count, 1);
    tp_init(&t, 1);
    tp_req(&t, 0, "alibabacloud.com/gpu-count", 2);
    r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_WHOLE);
    assert_int_equal(r.count, 2);
}

/* ---------------------------------------------------------------- gpusched.io */
static void test_request_canonical(void **state)
{
    (void)state;
    tpod t;
    tp_init(&t, 1);
    tp_ann(&t, "gpusched.io/gpu-count", "2");
    gs_gpu_request r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_WHOLE);
    assert_int_equal(r.conv, GS_CONV_GPUSCHED);
    assert_int_equal(r.count, 2);

    tp_init(&t, 1);
    tp_ann(&t, "gpusched.io/gpu-milli", "250");
    tp_ann(&t, "gpusched.io/gpu-memory", "4096");
    tp_ann(&t, "gpusched.io/gpu-model", "NVIDIA-A100-SXM4-80GB|H100-80GB");
    r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_SHARE);
    assert_int_equal(r.count, 1);
    assert_int_equal(r.milli, 250);
    assert_int_equal(r.mem_mib, 4096);
    assert_int_equal(r.nmodels, 2);
    model_is(&r, 0, "NVIDIA-A100-SXM4-80GB");
    model_is(&r, 1, "H100-80GB");

    tp_init(&t, 1);
    tp_ann(&t, "gpusched.io/gpu-memory", "8192");
    r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_SHARE);
    assert_int_equal(r.milli, 0);
    assert_int_equal(r.mem_mib, 8192);

    tp_init(&t, 1);
    tp_ann(&t, "gpusched.io/gpu-milli", "1000");
    tp_ann(&t, "gpusched.io/gpu-count", "3");
    r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_WHOLE);
    assert_int_equal(r.count, 3);

    tp_init(&t, 1);
    tp_ann(&t, "gpusched.io/gpu-milli", "1001");
    req_err(&t);
    tp_init(&t, 1);
    tp_ann(&t, "gpusched.io/gpu-count", "0");
    assert_int_equal(req_ok(&t).kind, GS_GPU_NONE);

    /* a model constraint combines with any convention */
    tp_init(&t, 1);
    tp_req(&t, 0, "nvidia.com/gpu", 1);
    tp_ann(&t, "gpusched.io/gpu-model", "A100-SXM4-80GB");
    r = req_ok(&t);
    assert_int_equal(r.kind, GS_GPU_WHOLE);
    assert_int_equal(r.conv, GS_CONV_NVIDIA);
    assert_int_equal(r.nmodels, 1);
}

/* ---------------------------------------------------------------- conflicts */
static void test_request_two_conventions(void **state)
{
    (void)state;
    tpod t;
    tp_init(&t, 1);
    tp_req(&t, 0, "nvidia.com/gpu", 1);
    tp_ann(&t, "gpu-fraction", "0.5");
    gs_error e = req_err(&t);
    assert_int_equal(e.code, GS_ERR_INVALID);
    assert_non_null(strstr(e.msg, "two GPU request conventions"));

    tp_init(&t, 1);
    tp_req(&t, 0, "aliyun.com/gpu-mem", 2);
    tp_ann(&t, "gpu-milli", "500");
    req_err(&t);

    tp_init(&t, 1);
    tp_ann(&t, "gpusched.io/gpu-count", "1");
    tp_ann(&t, "gpu-count", "1");
    req_err(&t);

    tp_init(&t, 1);
    tp_req(&t, 0, "nvidia.com/gpumem", 1000);
    tp_ann(&t, "gpu-memory", "1000");
    req_err(&t);

    /* NULL err is allowed */
    gs_gpu_request r;
    assert_int_equal(gs_gpu_request_from_pod(&t.pod, &r, NULL), -1);
}

/* ---------------------------------------------------------------- helpers */
static void test_request_is_device_resource(void **state)
{
    (void)state;
    static const char *yes[] = {"nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb",
                                "nvidia.com/gpumem", "nvidia.com/gpumem-percentage",
                                "nvidia.com/gpucores", "aliyun.com/gpu-mem",
                                "aliyun.com/gpu-count", "alibabacloud.com/gpu-milli",
                                "alibabacloud.com/gpu-count", "gpusched.io/gpu-milli"};
    static const char *no[] = {"cpu", "memory", "nvidia.com/gpux", "amd.com/gpu",
                               "example.com/foo", "nvidia.com/gpu-foo", ""};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (!gs_gpu_is_device_resource(yes[i]))
            fail_msg("%s should be a device resource", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (gs_gpu_is_device_resource(no[i]))
            fail_msg("%s should not be a device resource", no[i]);
    assert_false(gs_gpu_is_device_resource(NULL));
}

static void test_request_describe(void **state)
{
    (void)state;
    char buf[128];
    gs_gpu_request r;
    memset(&r, 0, sizeof r);
    r.kind = GS_GPU_WHOLE;
    r.count = 1;
    gs_gpu_request_describe(&r, buf, sizeof buf);
    assert_string_equal(buf, "1 GPU");
    r.count = 4;
    gs_gpu_request_describe(&r, buf, sizeof buf);
    assert_string_equal(buf, "4 GPUs");

    r.kind = GS_GPU_SHARE;
    r.count = 2;
    r.milli = 500;
    gs_gpu_request_describe(&r, buf, sizeof buf);
    assert_string_equal(buf, "2x 0.5 GPU");
    r.count = 1;
    r.milli = 250;
    r.mem_mib = 4096;
    gs_gpu_request_describe(&r, buf, sizeof buf);
    assert_string_equal(buf, "0.25 GPU (4096 MiB)");
    r.milli = 0;
    r.mem_mib = 0;
    r.mem_pct = 50;
    gs_gpu_request_describe(&r, buf, sizeof buf);
    assert_string_equal(buf, "GPU share (50% memory)");
    r.milli = 125;
    r.mem_pct = 0;
    gs_gpu_request_describe(&r, buf, sizeof buf);
    assert_string_equal(buf, "0.125 GPU");

    r.kind = GS_GPU_MIG;
    r.count = 1;
    strcpy(r.mig_profile, "1g.10gb");
    gs_gpu_request_describe(&r, buf, sizeof buf);
    assert_string_equal(buf, "1 MIG 1g.10gb");

    r.kind = GS_GPU_WHOLE;
    r.nmodels = 2;
    r.models[0] = "A100";
    r.models[1] = "H100";
    gs_gpu_request_describe(&r, buf, sizeof buf);
    assert_string_equal(buf, "1 GPU on A100|H100");

    gs_gpu_request_describe(&r, buf, 4); /* truncation stays terminated */
    assert_string_equal(buf, "1 G");

    r.kind = GS_GPU_NONE;
    gs_gpu_request_describe(&r, buf, sizeof buf);
    assert_string_equal(buf, "no GPU");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_none),
        cmocka_unit_test(test_request_whole_sum_containers),
        cmocka_unit_test(test_request_effective_init_and_sidecars),
        cmocka_unit_test(test_request_whole_fractional_is_error),
        cmocka_unit_test(test_request_gpu_shared),
        cmocka_unit_test(test_request_mig),
        cmocka_unit_test(test_request_hami),
        cmocka_unit_test(test_request_kai),
        cmocka_unit_test(test_request_gpushare),
        cmocka_unit_test(test_request_openb),
        cmocka_unit_test(test_request_canonical),
        cmocka_unit_test(test_request_two_conventions),
        cmocka_unit_test(test_request_is_device_resource),
        cmocka_unit_test(test_request_describe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
