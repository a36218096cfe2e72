/* test_gpu_fit.c - fitting canonical requests onto node devices: best fit for shares,
 * lowest-index whole devices, replica binpacking, MIG instances, model filter, NEVER vs
 * INSUFFICIENT, and the invariants (never over-commit; unbind(bind(x)) is the identity). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/gpu.h"

/* ---------------------------------------------------------------- node builder */
typedef struct tnode {
    gs_node node;
    gs_kv labels[16];
    gs_res alloc[16];
} tnode;

static int res_cmp(const void *a, const void *b)
{
    return strcmp(((const gs_res *)a)->name, ((const gs_res *)b)->name);
}

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const gs_kv *)a)->key, ((const gs_kv *)b)->key);
}

static void tn_init(tnode *t)
{
    memset(t, 0, sizeof *t);
    t->node.meta.name = "n";
    t->node.meta.labels.items = t->labels;
    t->node.allocatable.items = t->alloc;
}

static void tn_res(tnode *t, const char *name, int64_t units)
{
    gs_reslist *l = &t->node.allocatable;
    l->items[l->n].name = name;
    l->items[l->n].q.nanos = (__int128)units * 1000000000;
    l->n++;
    qsort(l->items, l->n, sizeof *l->items, res_cmp);
}

static void tn_label(tnode *t, const char *key, const char *val)
{
    gs_labels *l = &t->node.meta.labels;
    t->labels[l->n].key = key;
    t->labels[l->n].val = val;
    l->n++;
    qsort(t->labels, l->n, sizeof *t->labels, kv_cmp);
}

static gs_node_gpus build(const tnode *t)
{
    gs_node_gpus g;
    gs_error err;
    gs_error_clear(&err);
    if (gs_node_gpus_build(&t->node, &g, &err) != 0)
        fail_msg("build: %s", err.msg);
    return g;
}

/* 8x A100-80GB, 81920 MiB each */
static gs_node_gpus a100_node(uint32_t n)
{
    static const char *counts[] = {"0", "1", "2", "3", "4", "5", "6", "7", "8"};
    tnode t;
    tn_init(&t);
    tn_res(&t, "nvidia.com/gpu", n);
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB");
    tn_label(&t, "nvidia.com/gpu.memory", "81920");
    tn_label(&t, "nvidia.com/gpu.count", counts[n]);
    return build(&t);
}

static gs_gpu_request share(uint16_t count, uint16_t milli, uint32_t mem)
{
    gs_gpu_request r;
    memset(&r, 0, sizeof r);
    r.kind = GS_GPU_SHARE;
    r.conv = GS_CONV_GPUSCHED;
    r.count = count;
    r.milli = milli;
    r.mem_mib = mem;
    return r;
}

static gs_gpu_request whole(uint16_t count)
{
    gs_gpu_request r;
    memset(&r, 0, sizeof r);
    r.kind = GS_GPU_WHOLE;
    r.conv = GS_CONV_NVIDIA;
    r.count = count;
    r.resource = "nvidia.com/gpu";
    return r;
}

static gs_gpu_request mig(uint16_t count, const char *profile)
{
    gs_gpu_request r;
    memset(&r, 0, sizeof r);
    r.kind = GS_GPU_MIG;
    r.conv = GS_CONV_NVIDIA;
    r.count = count;
    strcpy(r.mig_profile, profile);
    return r;
}

static gs_gpu_assign place(gs_node_gpus *g, const gs_gpu_request *r)
{
    gs_gpu_assign a;
    gs_gpu_fit f = gs_gpu_fit_node(g, r, &a);
    if (f != GS_FIT_OK)
        fail_msg("fit failed: %d", f);
    gs_gpu_bind(g, &a);
    return a;
}

/* ---------------------------------------------------------------- shares */
static void test_fit_two_halves_share_a_device(void **state)
{
    (void)state;
    gs_node_gpus g = a100_node(8);
    gs_gpu_request r = share(1, 500, 0);
    gs_gpu_assign a1 = place(&g, &r);
    assert_int_equal(a1.n, 1);
    assert_int_equal(a1.dev[0], 0);
    assert_int_equal(a1.milli[0], 500);
    assert_int_equal(a1.mem[0], 40960); /* half the compute also holds half the memory */
    assert_int_equal(a1.slots[0], 0);
    assert_int_equal(a1.mig[0], 0xffff);
    gs_gpu_assign a2 = place(&g, &r);
    assert_int_equal(a2.dev[0], 0); /* best fit: the half-used device */
    assert_int_equal(g.devs[0].milli_used, 1000);
    assert_int_equal(g.devs[0].mem_used, 81920);
    assert_int_equal(g.devs[0].npods, 2);
    /* the third half goes to device 1 */
    gs_gpu_assign a3 = place(&g, &r);
    assert_int_equal(a3.dev[0], 1);
    gs_node_gpus_free(&g);
}

static void test_fit_best_fit_prefers_tightest(void **state)
{
    (void)state;
    gs_node_gpus g = a100_node(4);
    g.devs[0].milli_used = 200;
    g.devs[1].milli_used = 600;
    g.devs[2].milli_used = 600;
    gs_gpu_request r = share(1, 300, 0);
    gs_gpu_assign a;
    assert_int_equal(gs_gpu_fit_node(&g, &r, &a), GS_FIT_OK);
    assert_int_equal(a.dev[0], 1); /* leaves 100; tie with dev 2 -> lowest index */
    /* 500 fits only on devs 0 (left 300) and 3 (left 500) */
    r = share(1, 500, 0);
    assert_int_equal(gs_gpu_fit_node(&g, &r, &a), GS_FIT_OK);
    assert_int_equal(a.dev[0], 0);
    /* two distinct devices, each best fit */
    r = share(2, 400, 0);
    assert_int_equal(gs_gpu_fit_node(&g, &r, &a), GS_FIT_OK);
    assert_int_equal(a.n, 2);
    assert_int_equal(a.dev[0], 1);
    assert_int_equal(a.dev[1], 2);
    /* fit does not change state */
    assert_int_equal(g.devs[1].milli_used, 600);
    assert_int_equal(g.devs[1].npods, 0);
    gs_node_gpus_free(&g);
}

static void test_fit_share_memory(void **state)
{
    (void)state;
    gs_node_gpus g = a100_node(2);
    /* 8192 MiB of an 81920 MiB device = ceil(100) milli */
    gs_gpu_request r = share(1, 0, 8192);
    gs_gpu_assign a;
    assert_int_equal(gs_gpu_fit_node(&g, &r, &a), GS_FIT_OK);
    assert_int_equal(a.milli[0], 100);
    assert_int_equal(a.mem[0], 8192);
    /* a non-round amount rounds the compute share up */
    r = share(1, 0, 1000);
    assert_int_equal(gs_gpu_fit_node(&g, &r, &a), GS_FIT_OK);
    assert_int_equal(a.milli[0], 13); /* 1000*1000/81920 = 12.2 */
    /* both given: the larger view wins on each axis */
    r = share(1, 500, 8192);
    assert_int_equal(gs_gpu_fit_node(&g, &r, &a), GS_FIT_OK);
    assert_int_equal(a.milli[0], 500);
    assert_int_equal(a.mem[0], 40960);
    /* percentage of memory */
    r = share(1, 0, 0);
    r.mem_pct = 25;
    assert_int_equal(gs_gpu_fit_node(&g, &r, &a), GS_FIT_OK);
    assert_int_equal(a.milli[0], 250);
    assert_int_equal(a.mem[0], 20480);
    /* bigger than a device: never */
    r = share(1, 0, 90000);
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_NEVER);
    /* memory nearly full blocks a small-compute share */
    g.devs[0].mem_used = 80000;
    g.devs[1].mem_used = 80000;
    r = share(1, 50, 0); /* 50 milli = 4096 MiB */
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_INSUFFICIENT);
    gs_node_gpus_free(&g);
}

static void test_fit_unknown_memory(void **state)
{
    (void)state;
    tnode t;
    tn_init(&t);
    tn_res(&t, "alibabacloud.com/gpu-count", 2);
    tn_label(&t, "alibabacloud.com/gpu-card-model", "T4");
    gs_node_gpus g = build(&t);
    gs_gpu_request r = share(1, 0, 4096);
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_NEVER);
    r = share(1, 300, 0);
    gs_gpu_assign a;
    assert_int_equal(gs_gpu_fit_node(&g, &r, &a), GS_FIT_OK);
    assert_int_equal(a.mem[0], 0);
    /* a percentage works without knowing the size: HAMi default 100% = a full device */
    r = share(1, 300, 0);
    r.mem_pct = 100;
    assert_int_equal(gs_gpu_fit_node(&g, &r, &a), GS_FIT_OK);
    assert_int_equal(a.milli[0], 1000);
    gs_node_gpus_free(&g);
}

/* ---------------------------------------------------------------- whole devices */
static void test_fit_whole_lowest_index(void **state)
{
    (void)state;
    gs_node_gpus g = a100_node(8);
    gs_gpu_request s = share(1, 100, 0);
    place(&g, &s); /* dev 0 partly used */
    gs_gpu_request r = whole(2);
    gs_gpu_assign a = place(&g, &r);
    assert_int_equal(a.n, 2);
    assert_int_equal(a.dev[0], 1);
    assert_int_equal(a.dev[1], 2);
    assert_int_equal(a.milli[0], 1000);
    assert_int_equal(a.mem[0], 81920);
    assert_int_equal(a.slots[0], 1);
    assert_int_equal(g.devs[1].milli_used, 1000);
    /* a share cannot use a whole-allocated device */
    gs_gpu_request s2 = share(1, 950, 0);
    gs_gpu_assign b = place(&g, &s2);
    assert_int_equal(b.dev[0], 3);
    gs_node_gpus_free(&g);
}

static void test_fit_never_vs_insufficient(void **state)
{
    (void)state;
    gs_node_gpus g = a100_node(8);
    gs_gpu_request r = whole(9);
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_NEVER);
    r = whole(8);
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_OK);
    gs_gpu_request s = share(1, 1, 0);
    gs_gpu_assign sa = place(&g, &s);
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_INSUFFICIENT);
    gs_gpu_unbind(&g, &sa);
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_OK);
    /* shares: more devices than exist */
    s = share(9, 100, 0);
    assert_int_equal(gs_gpu_fit_node(&g, &s, NULL), GS_FIT_NEVER);
    /* count of 0 asks for nothing */
    r = whole(0);
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_OK);
    gs_node_gpus_free(&g);

    /* a node without GPUs */
    gs_node_gpus none;
    memset(&none, 0, sizeof none);
    none.model = "";
    r = whole(1);
    assert_int_equal(gs_gpu_fit_node(&none, &r, NULL), GS_FIT_NO_GPU);
    s = share(1, 500, 0);
    assert_int_equal(gs_gpu_fit_node(&none, &s, NULL), GS_FIT_NO_GPU);
    gs_gpu_request m = mig(1, "1g.10gb");
    assert_int_equal(gs_gpu_fit_node(&none, &m, NULL), GS_FIT_NO_GPU);
    gs_gpu_request n;
    memset(&n, 0, sizeof n);
    assert_int_equal(gs_gpu_fit_node(&none, &n, NULL), GS_FIT_OK);
}

static void test_fit_unhealthy_never_used(void **state)
{
    (void)state;
    tnode t;
    tn_init(&t);
    tn_res(&t, "nvidia.com/gpu", 1);
    tn_label(&t, "nvidia.com/gpu.count", "2");
    gs_node_gpus g = build(&t);
    assert_int_equal(g.ndevs, 2);
    gs_gpu_request r = whole(2);
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_NEVER);
    r = whole(1);
    gs_gpu_assign a = place(&g, &r);
    assert_int_equal(a.dev[0], 0);
    gs_gpu_request s = share(1, 100, 0);
    assert_int_equal(gs_gpu_fit_node(&g, &s, NULL), GS_FIT_INSUFFICIENT);
    gs_node_gpus_free(&g);

    /* labels only: every device unhealthy */
    tn_init(&t);
    tn_label(&t, "nvidia.com/gpu.count", "4");
    tn_label(&t, "nvidia.com/gpu.present", "true");
    g = build(&t);
    assert_true(g.labels_only);
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_NO_GPU);
    gs_node_gpus_free(&g);
}

static void test_fit_time_sliced_binpack(void **state)
{
    (void)state;
    tnode t;
    tn_init(&t);
    tn_res(&t, "nvidia.com/gpu", 8);
    tn_label(&t, "nvidia.com/gpu.replicas", "4");
    tn_label(&t, "nvidia.com/gpu.count", "2");
    gs_node_gpus g = build(&t);
    assert_int_equal(g.sharing, GS_SHARING_TIME_SLICING);
    gs_gpu_request r = whole(1);
    gs_gpu_assign a1 = place(&g, &r);
    gs_gpu_assign a2 = place(&g, &r);
    assert_int_equal(a1.dev[0], 0);
    assert_int_equal(a2.dev[0], 0); /* replicas binpacked */
    assert_int_equal(a1.slots[0], 1);
    assert_int_equal(a1.milli[0], 0);
    assert_int_equal(g.devs[0].slots_used, 2);
    /* 3 replicas: 2 left on dev 0, then 1 on dev 1 */
    r = whole(3);
    gs_gpu_assign a3 = place(&g, &r);
    assert_int_equal(a3.n, 2);
    assert_int_equal(a3.dev[0], 0);
    assert_int_equal(a3.slots[0], 2);
    assert_int_equal(a3.dev[1], 1);
    assert_int_equal(a3.slots[1], 1);
    /* the next one prefers dev 1 (most used with a free slot) */
    r = whole(1);
    gs_gpu_assign a4;
    assert_int_equal(gs_gpu_fit_node(&g, &r, &a4), GS_FIT_OK);
    assert_int_equal(a4.dev[0], 1);
    r = whole(4);
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_INSUFFICIENT);
    r = whole(9);
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_NEVER);
    /* the renamed resource is a different resource */
    r = whole(1);
    r.resource = "nvidia.com/gpu.shared";
    r.families = 1u << GS_FAM_NVIDIA_SHARED;
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_NO_GPU);
    gs_node_gpus_free(&g);
}

/* ---------------------------------------------------------------- MIG */
static gs_node_gpus mixed_node(void)
{
    tnode t;
    tn_init(&t);
    tn_res(&t, "nvidia.com/gpu", 1);
    tn_res(&t, "nvidia.com/mig-1g.10gb", 7);
    tn_res(&t, "nvidia.com/mig-3g.40gb", 2);
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB");
    return build(&t);
}

static void test_fit_mig(void **state)
{
    (void)state;
    gs_node_gpus g = mixed_node();
    /* dev 0 whole, dev 1 = 3g@0 + 3g@4, dev 2 = 7x 1g */
    assert_int_equal(g.ndevs, 3);
    gs_gpu_request r = mig(2, "1g.10gb");
    gs_gpu_assign a = place(&g, &r);
    assert_int_equal(a.n, 2);
    assert_int_equal(a.dev[0], 2);
    assert_int_equal(g.mig[a.mig[0]].start, 0);
    assert_int_equal(g.mig[a.mig[1]].start, 1);
    assert_int_equal(g.mig[a.mig[0]].used, 1);
    assert_int_equal(g.devs[2].npods, 2);
    assert_int_equal(g.devs[2].milli_used, 0);
    /* 6 more do not fit now, 8 never */
    r = mig(6, "1g.10gb");
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_INSUFFICIENT);
    r = mig(8, "1g.10gb");
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_NEVER);
    /* not offered on this node / not a profile of the model */
    r = mig(1, "4g.40gb");
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_MIG_PROFILE);
    r = mig(1, "1g.5gb");
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_MIG_PROFILE);
    r = mig(1, "3g.40gb");
    gs_gpu_assign b = place(&g, &r);
    assert_int_equal(b.dev[0], 1);
    /* whole and share requests ignore MIG GPUs */
    gs_gpu_request w = whole(2);
    assert_int_equal(gs_gpu_fit_node(&g, &w, NULL), GS_FIT_NEVER);
    gs_gpu_request s = share(2, 100, 0);
    assert_int_equal(gs_gpu_fit_node(&g, &s, NULL), GS_FIT_NEVER);
    gs_node_gpus_free(&g);

    /* a MIG request on a node without MIG */
    g = a100_node(2);
    r = mig(1, "1g.10gb");
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_NO_GPU);
    gs_node_gpus_free(&g);
}

static void test_fit_mig_single_whole(void **state)
{
    (void)state;
    tnode t;
    tn_init(&t);
    tn_res(&t, "nvidia.com/gpu", 14);
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb");
    gs_node_gpus g = build(&t);
    gs_gpu_request r = whole(3);
    gs_gpu_assign a = place(&g, &r);
    assert_int_equal(a.n, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(a.mig[i], i);
        assert_int_equal(a.dev[i], 0);
    }
    r = whole(12);
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_INSUFFICIENT);
    r = whole(15);
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_NEVER);
    r = mig(1, "1g.5gb"); /* nvidia.com/mig-* is not advertised under single */
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_NO_GPU);
    gs_gpu_free fr;
    gs_gpu_free_summary(&g, &fr);
    assert_int_equal(fr.devices, 2);
    assert_int_equal(fr.mig_free, 11);
    assert_int_equal(fr.whole_free, 0);
    assert_int_equal(fr.milli_free, 0);
    gs_node_gpus_free(&g);
}

/* ---------------------------------------------------------------- models */
static void test_fit_model_filter(void **state)
{
    (void)state;
    gs_node_gpus g = a100_node(2);
    gs_gpu_request r = whole(1);
    const char *models = "A100-SXM4-80GB";
    r.nmodels = 1;
    r.models[0] = models;
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_OK);
    r.models[0] = "nvidia-a100-sxm4-80gb";
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_OK);
    const char *two = "H100-80GB|NVIDIA-A100-SXM4-80GB";
    r.nmodels = 2;
    r.models[0] = two;
    r.models[1] = two + 10;
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_OK);
    r.nmodels = 1; /* only "H100-80GB" (ends at '|') */
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_MODEL);
    r.models[0] = "A100";
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_MODEL);
    gs_node_gpus_free(&g);

    assert_true(gs_gpu_model_matches("A100-SXM4-40GB", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED"));
    assert_true(gs_gpu_model_matches("G2|T4", "G2"));
    assert_false(gs_gpu_model_matches("T4", "G2"));
    assert_false(gs_gpu_model_matches("", "G2"));
    assert_false(gs_gpu_model_matches("G2", NULL));

    /* openb: exact model among the allowed ones */
    tnode t;
    tn_init(&t);
    tn_res(&t, "alibabacloud.com/gpu-count", 8);
    tn_label(&t, "alibabacloud.com/gpu-card-model", "G2");
    g = build(&t);
    const char *spec = "V100M16|V100M32";
    r = share(1, 500, 0);
    r.nmodels = 2;
    r.models[0] = spec;
    r.models[1] = spec + 8;
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_MODEL);
    r.models[1] = "G2";
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_OK);
    gs_node_gpus_free(&g);

    /* an unknown node model never satisfies a model constraint */
    tn_init(&t);
    tn_res(&t, "nvidia.com/gpu", 1);
    g = build(&t);
    assert_int_equal(gs_gpu_fit_node(&g, &r, NULL), GS_FIT_MODEL);
    gs_node_gpus_free(&g);
}

/* ---------------------------------------------------------------- invariants */
static void test_fit_unbind_restores_bytes(void **state)
{
    (void)state;
    gs_node_gpus g = mixed_node();
    gs_node_gpus before;
    assert_int_equal(gs_node_gpus_copy(&before, &g), 0);
    gs_gpu_request reqs[] = {share(1, 300, 0), share(1, 200, 8192), mig(3, "1g.10gb"),
                             mig(1, "3g.40gb")};
    gs_gpu_assign as[4];
    for (int i = 0; i < 4; i++)
        as[i] = place(&g, &reqs[i]);
    for (int i = 3; i >= 0; i--)
        gs_gpu_unbind(&g, &as[i]);
    assert_memory_equal(g.devs, before.devs, g.ndevs * sizeof *g.devs);
    assert_memory_equal(g.mig, before.mig, g.nmig * sizeof *g.mig);
    gs_node_gpus_free(&before);
    gs_node_gpus_free(&g);
}

static void check_invariants(const gs_node_gpus *g)
{
    for (uint32_t i = 0; i < g->ndevs; i++) {
        const gs_gpu_dev *d = &g->devs[i];
        assert_true(d->milli_used <= 1000);
        if (d->mem_mib)
            assert_true(d->mem_used <= d->mem_mib);
        assert_true(d->slots_used <= d->slots);
        if (d->flags & GS_DEV_UNHEALTHY)
            assert_int_equal(d->npods, 0);
        if (d->flags & GS_DEV_MIG_ENABLED)
            assert_int_equal(d->milli_used, 0);
    }
    for (uint32_t i = 0; i < g->nmig; i++)
        assert_true(g->mig[i].used <= 1);
}

static void random_loop(gs_node_gpus *g, uint64_t seed)
{
    gs_rng rng;
    gs_rng_seed(&rng, seed);
    gs_node_gpus before;
    assert_int_equal(gs_node_gpus_copy(&before, g), 0);
    enum { MAXB = 256 };
    gs_gpu_assign bound[MAXB];
    uint32_t nb = 0, binds = 0;
    for (int step = 0; step < 4000; step++) {
        if (nb > 0 && (nb == MAXB || gs_rng_below(&rng, 3) == 0)) {
            uint32_t k = (uint32_t)gs_rng_below(&rng, nb);
            gs_gpu_unbind(g, &bound[k]);
            bound[k] = bound[--nb];
        } else {
            gs_gpu_request r;
            switch (gs_rng_below(&rng, 5)) {
            case 0: r = whole((uint16_t)(1 + gs_rng_below(&rng, 3))); break;
            case 1: r = share((uint16_t)(1 + gs_rng_below(&rng, 2)),
                              (uint16_t)(1 + gs_rng_below(&rng, 1000)), 0); break;
            case 2: r = share(1, 0, (uint32_t)(1 + gs_rng_below(&rng, 90000))); break;
            case 3:
                r = share(1, (uint16_t)gs_rng_below(&rng, 600),
                          (uint32_t)gs_rng_below(&rng, 30000));
                r.mem_pct = (uint8_t)gs_rng_below(&rng, 60);
                break;
            default: r = mig((uint16_t)(1 + gs_rng_below(&rng, 2)),
                             gs_rng_below(&rng, 2) ? "1g.10gb" : "3g.40gb"); break;
            }
            gs_gpu_assign a;
            if (gs_gpu_fit_node(g, &r, &a) == GS_FIT_OK) {
                gs_gpu_bind(g, &a);
                bound[nb++] = a;
                binds++;
            }
        }
        check_invariants(g);
    }
    assert_true(binds > 500); /* the loop really exercised placements */
    while (nb)
        gs_gpu_unbind(g, &bound[--nb]);
    assert_memory_equal(g->devs, before.devs, g->ndevs * sizeof *g->devs);
    if (g->nmig)
        assert_memory_equal(g->mig, before.mig, g->nmig * sizeof *g->mig);
    gs_node_gpus_free(&before);
}

static void test_fit_random_never_overcommits(void **state)
{
    (void)state;
    gs_node_gpus g = a100_node(8);
    random_loop(&g, 1);
    gs_node_gpus_free(&g);
    g = mixed_node();
    random_loop(&g, 2);
    gs_node_gpus_free(&g);
    tnode t;
    tn_init(&t);
    tn_res(&t, "nvidia.com/gpu", 10);
    tn_label(&t, "nvidia.com/gpu.replicas", "4");
    tn_label(&t, "nvidia.com/gpu.memory", "16384");
    g = build(&t);
    random_loop(&g, 3);
    gs_node_gpus_free(&g);
}

/* ---------------------------------------------------------------- summary, describe */
static void test_fit_summary_and_describe(void **state)
{
    (void)state;
    gs_node_gpus g = mixed_node();
    char buf[160];
    gs_gpu_request w = whole(1);
    gs_gpu_assign a = place(&g, &w);
    gs_gpu_assign_describe(&g, &a, buf, sizeof buf);
    assert_string_equal(buf, "gpu 0");
    gs_gpu_request m = mig(2, "1g.10gb");
    a = place(&g, &m);
    gs_gpu_assign_describe(&g, &a, buf, sizeof buf);
    assert_string_equal(buf, "mig 1g.10gb gpu 2 @0, mig 1g.10gb gpu 2 @1");
    gs_gpu_free fr;
    gs_gpu_free_summary(&g, &fr);
    assert_int_equal(fr.devices, 3);
    assert_int_equal(fr.whole_free, 0);
    assert_int_equal(fr.milli_free, 0);
    assert_int_equal(fr.mig_free, 7);
    gs_node_gpus_free(&g);

    g = a100_node(4);
    gs_gpu_request r = whole(2);
    a = place(&g, &r);
    gs_gpu_assign_describe(&g, &a, buf, sizeof buf);
    assert_string_equal(buf, "gpu 0,1");
    gs_gpu_request s = share(1, 500, 0);
    a = place(&g, &s);
    gs_gpu_assign_describe(&g, &a, buf, sizeof buf);
    assert_string_equal(buf, "gpu 2 (500m, 40960Mi)");
    gs_gpu_free_summary(&g, &fr);
    assert_int_equal(fr.devices, 4);
    assert_int_equal(fr.whole_free, 1);
    assert_int_equal(fr.milli_free, 1500);
    gs_gpu_assign_describe(&g, &a, buf, 8);
    assert_string_equal(buf, "gpu 2 (");
    a.n = 0;
    gs_gpu_assign_describe(&g, &a, buf, sizeof buf);
    assert_string_equal(buf, "none");
    gs_node_gpus_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_two_halves_share_a_device),
        cmocka_unit_test(test_fit_best_fit_prefers_tightest),
        cmocka_unit_test(test_fit_share_memory),
        cmocka_unit_test(test_fit_unknown_memory),
        cmocka_unit_test(test_fit_whole_lowest_index),
        cmocka_unit_test(test_fit_never_vs_insufficient),
        cmocka_unit_test(test_fit_unhealthy_never_used),
        cmocka_unit_test(test_fit_time_sliced_binpack),
        cmocka_unit_test(test_fit_mig),
        cmocka_unit_test(test_fit_mig_single_whole),
        cmocka_unit_test(test_fit_model_filter),
        cmocka_unit_test(test_fit_unbind_restores_bytes),
        cmocka_unit_test(test_fit_random_never_overcommits),
        cmocka_unit_test(test_fit_summary_and_describe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
