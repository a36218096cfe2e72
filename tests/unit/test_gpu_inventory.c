/* test_gpu_inventory.c - node GPU inventories rebuilt from resources and labels: plain,
 * time-sliced, MIG mixed and single, openb, gpushare, labels-only and unhealthy nodes. */
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
    gs_kv labels[32];
    gs_res alloc[32];
    gs_res cap[32];
} tnode;

static int res_cmp(const void *a, const void *b)
{
    return strcmp(((const gs_res *)a)->name, ((const gs_res *)b)->name);
}

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const gs_kv *)a)->key, ((const gs_kv *)b)->key);
}

static void tn_init(tnode *t, const char *name)
{
    memset(t, 0, sizeof *t);
    t->node.meta.name = name;
    t->node.meta.src.file = "nodes.yaml";
    t->node.meta.src.line = 7;
    t->node.meta.labels.items = t->labels;
    t->node.allocatable.items = t->alloc;
    t->node.capacity.items = t->cap;
    t->node.ready = true;
}

static void add_res(gs_reslist *l, const char *name, int64_t milli)
{
    l->items[l->n].name = name;
    l->items[l->n].q.nanos = (__int128)milli * 1000000;
    l->n++;
    qsort(l->items, l->n, sizeof *l->items, res_cmp);
}

/* allocatable and capacity both */
static void tn_res(tnode *t, const char *name, int64_t units)
{
    add_res(&t->node.allocatable, name, units * 1000);
    add_res(&t->node.capacity, name, units * 1000);
}

static void tn_alloc(tnode *t, const char *name, int64_t units)
{
    add_res(&t->node.allocatable, name, units * 1000);
}

static void tn_cap(tnode *t, const char *name, int64_t units)
{
    add_res(&t->node.capacity, name, units * 1000);
}

static void tn_label(tnode *t, const char *key, const char *val)
{
    gs_labels *l = &t->node.meta.labels;
    t->labels[l->n].key = key;
    t->labels[l->n].val = val;
    l->n++;
    qsort(t->labels, l->n, sizeof *t->labels, kv_cmp);
}

static gs_node_gpus build_ok(const tnode *t)
{
    gs_node_gpus g;
    gs_error err;
    gs_error_clear(&err);
    if (gs_node_gpus_build(&t->node, &g, &err) != 0)
        fail_msg("unexpected error: %s: %s", err.path, err.msg);
    return g;
}

static gs_error build_err(const tnode *t)
{
    gs_node_gpus g;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_node_gpus_build(&t->node, &g, &err), -1);
    assert_int_not_equal(err.code, GS_OK);
    assert_non_null(strstr(err.path, "Node "));
    assert_string_equal(err.file, "nodes.yaml");
    assert_int_equal(err.line, 7);
    gs_node_gpus_free(&g);
    return err;
}

static uint32_t count_flag(const gs_node_gpus *g, uint8_t flag)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->ndevs; i++)
        if (g->devs[i].flags & flag)
            n++;
    return n;
}

/* ---------------------------------------------------------------- tests */
static void test_inventory_cpu_node(void **state)
{
    (void)state;
    tnode t;
    tn_init(&t, "cpu-1");
    tn_res(&t, "cpu", 8);
    gs_node_gpus g = build_ok(&t);
    assert_false(g.gpu_node);
    assert_false(g.labels_only);
    assert_int_equal(g.ndevs, 0);
    assert_null(g.devs);
    assert_string_equal(g.model, "");
    gs_node_gpus_free(&g);
}

static void test_inventory_plain_a100(void **state)
{
    (void)state;
    tnode t;
    tn_init(&t, "a100-1");
    tn_res(&t, "nvidia.com/gpu", 8);
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB");
    tn_label(&t, "nvidia.com/gpu.count", "8");
    tn_label(&t, "nvidia.com/gpu.memory", "81920");
    tn_label(&t, "nvidia.com/gpu.present", "true");
    gs_node_gpus g = build_ok(&t);
    assert_true(g.gpu_node);
    assert_false(g.labels_only);
    assert_int_equal(g.ndevs, 8);
    assert_int_equal(g.nmig, 0);
    assert_string_equal(g.model, "NVIDIA-A100-SXM4-80GB");
    assert_non_null(g.mig_model);
    assert_string_equal(g.mig_model->name, "A100-80GB");
    assert_int_equal(g.mig_strategy, GS_MIG_NONE);
    assert_int_equal(g.sharing, GS_SHARING_NONE);
    assert_string_equal(g.resource, "nvidia.com/gpu");
    for (uint32_t i = 0; i < 8; i++) {
        assert_int_equal(g.devs[i].slots, 1);
        assert_int_equal(g.devs[i].mem_mib, 81920);
        assert_int_equal(g.devs[i].flags, 0);
        assert_int_equal(g.devs[i].milli_used, 0);
        assert_int_equal(g.devs[i].npods, 0);
    }
    gs_node_gpus_free(&g);

    /* without the memory label the catalog knows the size */
    tn_init(&t, "a100-2");
    tn_res(&t, "nvidia.com/gpu", 2);
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB");
    g = build_ok(&t);
    assert_int_equal(g.ndevs, 2);
    assert_int_equal(g.devs[0].mem_mib, 40960);
    gs_node_gpus_free(&g);

    /* unknown model, no label: memory unknown */
    tn_init(&t, "t4");
    tn_res(&t, "nvidia.com/gpu", 1);
    tn_label(&t, "nvidia.com/gpu.product", "Tesla-T4");
    g = build_ok(&t);
    assert_null(g.mig_model);
    assert_int_equal(g.devs[0].mem_mib, 0);
    gs_node_gpus_free(&g);
}

static void test_inventory_time_sliced(void **state)
{
    (void)state;
    tnode t;
    tn_init(&t, "ts-1");
    tn_res(&t, "nvidia.com/gpu", 16);
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-SHARED");
    tn_label(&t, "nvidia.com/gpu.count", "4");
    tn_label(&t, "nvidia.com/gpu.replicas", "4");
    tn_label(&t, "nvidia.com/gpu.sharing-strategy", "time-slicing");
    gs_node_gpus g = build_ok(&t);
    assert_int_equal(g.ndevs, 4);
    assert_int_equal(g.sharing, GS_SHARING_TIME_SLICING);
    assert_string_equal(g.mig_model->name, "A100-40GB");
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(g.devs[i].slots, 4);
    assert_int_equal(count_flag(&g, GS_DEV_UNHEALTHY), 0);
    gs_node_gpus_free(&g);

    /* replicas without the strategy label; a partial last device */
    tn_init(&t, "ts-2");
    tn_res(&t, "nvidia.com/gpu", 14);
    tn_label(&t, "nvidia.com/gpu.replicas", "4");
    g = build_ok(&t);
    assert_int_equal(g.sharing, GS_SHARING_TIME_SLICING);
    assert_int_equal(g.ndevs, 4);
    assert_int_equal(g.devs[0].slots, 4);
    assert_int_equal(g.devs[3].slots, 2);
    gs_node_gpus_free(&g);

    /* MPS */
    tn_init(&t, "mps-1");
    tn_res(&t, "nvidia.com/gpu", 4);
    tn_label(&t, "nvidia.com/gpu.replicas", "2");
    tn_label(&t, "nvidia.com/gpu.sharing-strategy", "mps");
    g = build_ok(&t);
    assert_int_equal(g.sharing, GS_SHARING_MPS);
    assert_int_equal(g.ndevs, 2);
    assert_int_equal(g.devs[1].slots, 2);
    gs_node_gpus_free(&g);

    /* renameByDefault: nvidia.com/gpu.shared */
    tn_init(&t, "ts-3");
    tn_res(&t, "nvidia.com/gpu.shared", 8);
    tn_label(&t, "nvidia.com/gpu.replicas", "8");
    g = build_ok(&t);
    assert_string_equal(g.resource, "nvidia.com/gpu.shared");
    assert_int_equal(g.ndevs, 1);
    assert_int_equal(g.devs[0].slots, 8);
    gs_node_gpus_free(&g);
}

static void test_inventory_mig_mixed(void **state)
{
    (void)state;
    tnode t;
    tn_init(&t, "mig-mixed");
    tn_res(&t, "nvidia.com/gpu", 5);
    tn_res(&t, "nvidia.com/mig-1g.10gb", 7);
    tn_res(&t, "nvidia.com/mig-2g.20gb", 3);
    tn_res(&t, "nvidia.com/mig-3g.40gb", 2);
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB");
    tn_label(&t, "nvidia.com/gpu.count", "8");
    tn_label(&t, "nvidia.com/mig.strategy", "mixed");
    gs_node_gpus g = build_ok(&t);
    assert_int_equal(g.mig_strategy, GS_MIG_MIXED);
    assert_int_equal(g.ndevs, 8);
    assert_int_equal(g.nmig, 12);
    /* whole GPUs 0..4, then the MIG GPUs */
    for (uint32_t i = 0; i < 5; i++)
        assert_int_equal(g.devs[i].flags, 0);
    const gs_mig_model *m = g.mig_model;
    uint8_t p3 = (uint8_t)(gs_mig_profile_find(m, "3g.40gb") - m->profiles);
    uint8_t p2 = (uint8_t)(gs_mig_profile_find(m, "2g.20gb") - m->profiles);
    uint8_t p1 = (uint8_t)(gs_mig_profile_find(m, "1g.10gb") - m->profiles);
    /* largest first: GPU 5 = 3g@0 + 3g@4; GPU 6 = 2g@0,2,4 + 1g@6; GPU 7 = 1g@0..5 */
    assert_int_equal(g.devs[5].flags, GS_DEV_MIG_ENABLED);
    assert_int_equal(g.devs[5].nmig, 2);
    assert_int_equal(g.devs[6].nmig, 4);
    assert_int_equal(g.devs[7].nmig, 6);
    const gs_mig_inst *mi = &g.mig[g.devs[5].mig_first];
    assert_int_equal(mi[0].profile, p3);
    assert_int_equal(mi[0].start, 0);
    assert_int_equal(mi[1].profile, p3);
    assert_int_equal(mi[1].start, 4);
    assert_int_equal(mi[0].dev, 5);
    mi = &g.mig[g.devs[6].mig_first];
    assert_int_equal(mi[0].profile, p2);
    assert_int_equal(mi[0].start, 0);
    assert_int_equal(mi[1].start, 2);
    assert_int_equal(mi[2].start, 4);
    assert_int_equal(mi[3].profile, p1);
    assert_int_equal(mi[3].start, 6);
    mi = &g.mig[g.devs[7].mig_first];
    for (uint32_t k = 0; k < 6; k++) {
        assert_int_equal(mi[k].profile, p1);
        assert_int_equal(mi[k].start, k);
        assert_int_equal(mi[k].dev, 7);
        assert_int_equal(mi[k].used, 0);
    }
    /* each GPU's instances are a legal layout */
    for (uint32_t d = 5; d < 8; d++) {
        uint8_t idx[8];
        for (uint32_t k = 0; k < g.devs[d].nmig; k++)
            idx[k] = g.mig[g.devs[d].mig_first + k].profile;
        assert_true(gs_mig_layout_fits(m, idx, g.devs[d].nmig, NULL));
    }
    gs_node_gpus_free(&g);

    /* gpu.count above what is advertised: the two missing GPUs are unhealthy */
    tn_init(&t, "mig-mixed-2");
    tn_res(&t, "nvidia.com/mig-1g.10gb", 7);
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB");
    tn_label(&t, "nvidia.com/gpu.count", "3");
    g = build_ok(&t);
    assert_int_equal(g.ndevs, 3);
    assert_int_equal(g.nmig, 7);
    assert_int_equal(g.devs[0].flags, GS_DEV_MIG_ENABLED);
    assert_int_equal(count_flag(&g, GS_DEV_UNHEALTHY), 2);
    assert_false(g.labels_only);
    gs_node_gpus_free(&g);

    /* no product label: the model is inferred from the profile names */
    tn_init(&t, "mig-noproduct");
    tn_res(&t, "nvidia.com/mig-1g.10gb", 7);
    g = build_ok(&t);
    assert_non_null(g.mig_model);
    assert_string_equal(g.mig_model->name, "A100-80GB");
    assert_string_equal(g.model, "");
    assert_int_equal(g.ndevs, 1);
    gs_node_gpus_free(&g);

    /* a renamed profile (driver drift) maps to the nearest catalog profile */
    tn_init(&t, "mig-drift");
    tn_res(&t, "nvidia.com/mig-3g.39gb", 2);
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB");
    g = build_ok(&t);
    assert_int_equal(g.nmig, 2);
    assert_string_equal(g.mig_model->profiles[g.mig[0].profile].name, "3g.40gb");
    gs_node_gpus_free(&g);

    /* +me profiles and time-sliced MIG devices */
    tn_init(&t, "mig-me");
    tn_res(&t, "nvidia.com/mig-1g.10gb.me", 2);
    tn_res(&t, "nvidia.com/mig-3g.40gb", 4);
    tn_label(&t, "nvidia.com/mig-3g.40gb.replicas", "2");
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3");
    g = build_ok(&t);
    /* 4/2 = 2 x 3g fill GPU 0; one +me per GPU: GPUs 1 and 2 */
    assert_int_equal(g.nmig, 4);
    assert_int_equal(g.ndevs, 3);
    assert_int_equal(g.devs[0].nmig, 2);
    assert_int_equal(g.devs[1].nmig, 1);
    assert_int_equal(g.devs[2].nmig, 1);
    gs_node_gpus_free(&g);
}

/* all-balanced on two H100s: first-fit decreasing would open a third GPU for the fourth
 * 1g; the exact search fits {3g,2g,1g,1g} on each of the two GPUs gpu.count names. */
static void test_inventory_mig_balanced(void **state)
{
    (void)state;
    tnode t;
    tn_init(&t, "mig-balanced");
    tn_res(&t, "nvidia.com/mig-1g.10gb", 4);
    tn_res(&t, "nvidia.com/mig-2g.20gb", 2);
    tn_res(&t, "nvidia.com/mig-3g.40gb", 2);
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3");
    tn_label(&t, "nvidia.com/gpu.count", "2");
    tn_label(&t, "nvidia.com/mig.strategy", "mixed");
    gs_node_gpus g = build_ok(&t);
    assert_int_equal(g.ndevs, 2);
    assert_int_equal(g.nmig, 8);
    assert_int_equal(g.devs[0].nmig + g.devs[1].nmig, 8);
    assert_int_equal(count_flag(&g, GS_DEV_UNHEALTHY), 0);
    /* every GPU's set is a legal layout */
    for (uint32_t d = 0; d < 2; d++) {
        uint8_t idx[8];
        for (uint32_t k = 0; k < g.devs[d].nmig; k++)
            idx[k] = g.mig[g.devs[d].mig_first + k].profile;
        assert_true(gs_mig_layout_fits(g.mig_model, idx, g.devs[d].nmig, NULL));
    }
    gs_node_gpus_free(&g);
}

static void check_layout(const gs_node_gpus *g, uint32_t gpus, uint32_t instances)
{
    assert_int_equal(g->ndevs, gpus);
    assert_int_equal(g->nmig, instances);
    assert_int_equal(count_flag(g, GS_DEV_UNHEALTHY), 0);
    uint32_t sum = 0;
    for (uint32_t d = 0; d < gpus; d++) {
        uint8_t idx[8];
        for (uint32_t k = 0; k < g->devs[d].nmig; k++)
            idx[k] = g->mig[g->devs[d].mig_first + k].profile;
        assert_true(gs_mig_layout_fits(g->mig_model, idx, g->devs[d].nmig, NULL));
        sum += g->devs[d].nmig;
    }
    assert_int_equal(sum, instances);
}

/* all-balanced on eight H100s (the uniform split), and a mix eight GPUs hold only one way
 * up to symmetry (seven balanced GPUs and {2g,2g,2g,1g}): the search finds it within its
 * budget because instances of one profile are not permuted. */
static void test_inventory_mig_eight_gpus(void **state)
{
    (void)state;
    static const int64_t counts[2][3] = {{16, 8, 8}, {15, 10, 7}};
    for (int c = 0; c < 2; c++) {
        tnode t;
        tn_init(&t, c ? "mig-mixed-8" : "mig-balanced-8");
        tn_res(&t, "nvidia.com/mig-1g.10gb", counts[c][0]);
        tn_res(&t, "nvidia.com/mig-2g.20gb", counts[c][1]);
        tn_res(&t, "nvidia.com/mig-3g.40gb", counts[c][2]);
        tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3");
        tn_label(&t, "nvidia.com/gpu.count", "8");
        tn_label(&t, "nvidia.com/mig.strategy", "mixed");
        gs_node_gpus g = build_ok(&t);
        check_layout(&g, 8, (uint32_t)(counts[c][0] + counts[c][1] + counts[c][2]));
        gs_node_gpus_free(&g);
    }
}

static void test_inventory_mig_single(void **state)
{
    (void)state;
    tnode t;
    tn_init(&t, "mig-single");
    tn_res(&t, "nvidia.com/gpu", 56);
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb");
    tn_label(&t, "nvidia.com/gpu.count", "56");
    tn_label(&t, "nvidia.com/gpu.memory", "4864");
    tn_label(&t, "nvidia.com/mig.strategy", "single");
    gs_node_gpus g = build_ok(&t);
    assert_int_equal(g.mig_strategy, GS_MIG_SINGLE);
    assert_string_equal(g.mig_model->name, "A100-40GB");
    assert_int_equal(g.ndevs, 8);
    assert_int_equal(g.nmig, 56);
    for (uint32_t d = 0; d < 8; d++) {
        assert_int_equal(g.devs[d].flags, GS_DEV_MIG_ENABLED);
        assert_int_equal(g.devs[d].nmig, 7);
        assert_int_equal(g.devs[d].mem_mib, 40960); /* the label is one MIG device's memory */
        for (uint32_t k = 0; k < 7; k++)
            assert_int_equal(g.mig[g.devs[d].mig_first + k].start, k);
    }
    gs_node_gpus_free(&g);

    /* one GPU's MIG devices missing from allocatable */
    tn_init(&t, "mig-single-2");
    tn_res(&t, "nvidia.com/gpu", 49);
    tn_label(&t, "nvidia.com/gpu.product", "A100-SXM4-40GB-MIG-1g.5gb");
    tn_label(&t, "nvidia.com/gpu.count", "56");
    g = build_ok(&t);
    assert_int_equal(g.ndevs, 8);
    assert_int_equal(g.nmig, 49);
    assert_int_equal(count_flag(&g, GS_DEV_UNHEALTHY), 1);
    assert_true(g.devs[7].flags & GS_DEV_UNHEALTHY);
    gs_node_gpus_free(&g);

    /* 3g on single: two per GPU */
    tn_init(&t, "mig-single-3");
    tn_res(&t, "nvidia.com/gpu", 3);
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb");
    g = build_ok(&t);
    assert_int_equal(g.ndevs, 2);
    assert_int_equal(g.devs[0].nmig, 2);
    assert_int_equal(g.devs[1].nmig, 1);
    gs_node_gpus_free(&g);

    /* MIG-INVALID with count 0: nothing advertised, and GFD says why (a layout the single
     * strategy cannot serve), so it is not "device plugin down" */
    tn_init(&t, "mig-invalid");
    tn_res(&t, "nvidia.com/gpu", 0);
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-INVALID");
    tn_label(&t, "nvidia.com/gpu.count", "0");
    tn_label(&t, "nvidia.com/mig.strategy", "single");
    g = build_ok(&t);
    assert_true(g.gpu_node);
    assert_false(g.labels_only);
    assert_true(g.mig_invalid);
    assert_int_equal(g.mig_strategy, GS_MIG_SINGLE);
    assert_int_equal(g.ndevs, 0);
    gs_node_gpus_free(&g);
}

static void test_inventory_openb(void **state)
{
    (void)state;
    tnode t;
    tn_init(&t, "openb-node-0001");
    tn_res(&t, "cpu", 96);
    tn_res(&t, "alibabacloud.com/gpu-count", 8);
    tn_res(&t, "alibabacloud.com/gpu-milli", 8000);
    tn_label(&t, "alibabacloud.com/gpu-card-model", "G2");
    gs_node_gpus g = build_ok(&t);
    assert_true(g.gpu_node);
    assert_int_equal(g.ndevs, 8);
    assert_string_equal(g.model, "G2");
    assert_null(g.mig_model);
    for (uint32_t i = 0; i < 8; i++) {
        assert_int_equal(g.devs[i].slots, 1);
        assert_int_equal(g.devs[i].mem_mib, 0);
        assert_int_equal(g.devs[i].flags, 0);
    }
    gs_node_gpus_free(&g);
}

static void test_inventory_gpushare(void **state)
{
    (void)state;
    tnode t;
    tn_init(&t, "gpushare-1");
    tn_res(&t, "aliyun.com/gpu-count", 2);
    tn_res(&t, "aliyun.com/gpu-mem", 30);
    gs_node_gpus g = build_ok(&t);
    assert_true(g.gpu_node);
    assert_int_equal(g.ndevs, 2);
    assert_int_equal(g.devs[0].mem_mib, 15 * 1024);
    assert_int_equal(g.devs[1].mem_mib, 15 * 1024);
    gs_node_gpus_free(&g);
}

static void test_inventory_labels_only(void **state)
{
    (void)state;
    tnode t;
    tn_init(&t, "dp-down");
    tn_label(&t, "nvidia.com/gpu.present", "true");
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3");
    tn_label(&t, "nvidia.com/gpu.count", "4");
    gs_node_gpus g = build_ok(&t);
    assert_true(g.gpu_node);
    assert_true(g.labels_only);
    assert_int_equal(g.ndevs, 4);
    assert_int_equal(count_flag(&g, GS_DEV_UNHEALTHY), 4);
    gs_node_gpus_free(&g);

    tn_init(&t, "present-only");
    tn_label(&t, "nvidia.com/gpu.present", "true");
    g = build_ok(&t);
    assert_true(g.gpu_node);
    assert_true(g.labels_only);
    assert_int_equal(g.ndevs, 0);
    gs_node_gpus_free(&g);

    tn_init(&t, "openb-labelled");
    tn_label(&t, "alibabacloud.com/gpu-card-model", "T4");
    g = build_ok(&t);
    assert_true(g.gpu_node);
    assert_true(g.labels_only);
    gs_node_gpus_free(&g);
}

static void test_inventory_unhealthy(void **state)
{
    (void)state;
    tnode t;
    tn_init(&t, "sick-1");
    tn_res(&t, "nvidia.com/gpu", 7);
    tn_label(&t, "nvidia.com/gpu.count", "8");
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3");
    gs_node_gpus g = build_ok(&t);
    assert_int_equal(g.ndevs, 8);
    assert_false(g.labels_only);
    for (uint32_t i = 0; i < 7; i++)
        assert_int_equal(g.devs[i].flags, 0);
    assert_int_equal(g.devs[7].flags, GS_DEV_UNHEALTHY);
    gs_node_gpus_free(&g);

    /* capacity above allocatable, no count label */
    tn_init(&t, "sick-2");
    tn_alloc(&t, "nvidia.com/gpu", 6);
    tn_cap(&t, "nvidia.com/gpu", 8);
    g = build_ok(&t);
    assert_int_equal(g.ndevs, 8);
    assert_int_equal(count_flag(&g, GS_DEV_UNHEALTHY), 2);
    gs_node_gpus_free(&g);

    /* capacity only: allocatable falls back to it */
    tn_init(&t, "cap-only");
    tn_cap(&t, "nvidia.com/gpu", 2);
    g = build_ok(&t);
    assert_int_equal(g.ndevs, 2);
    assert_int_equal(count_flag(&g, GS_DEV_UNHEALTHY), 0);
    gs_node_gpus_free(&g);
}

static void test_inventory_errors(void **state)
{
    (void)state;
    tnode t;
    tn_init(&t, "huge");
    tn_res(&t, "nvidia.com/gpu", 65);
    gs_error e = build_err(&t);
    assert_int_equal(e.code, GS_ERR_LIMIT);

    tn_init(&t, "frac");
    add_res(&t.node.allocatable, "nvidia.com/gpu", 1500);
    e = build_err(&t);
    assert_int_equal(e.code, GS_ERR_INVALID);
    assert_non_null(strstr(e.path, "nvidia.com/gpu"));

    tn_init(&t, "neg");
    tn_res(&t, "nvidia.com/gpu", -1);
    build_err(&t);

    tn_init(&t, "mig-t4");
    tn_res(&t, "nvidia.com/mig-1g.10gb", 1);
    tn_label(&t, "nvidia.com/gpu.product", "Tesla-T4");
    tn_label(&t, "nvidia.com/gpu.count", "1");
    /* T4 is not MIG-capable, but the profile name alone identifies a model */
    gs_node_gpus g = build_ok(&t);
    assert_string_equal(g.mig_model->name, "A100-80GB");
    gs_node_gpus_free(&g);

    tn_init(&t, "mig-unknown");
    tn_res(&t, "nvidia.com/mig-5g.99gb", 1);
    e = build_err(&t);
    assert_int_equal(e.code, GS_ERR_INVALID);

    tn_init(&t, "mig-wrong-profile");
    tn_res(&t, "nvidia.com/mig-1g.5gb", 1);
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3");
    e = build_err(&t);
    assert_non_null(strstr(e.msg, "not a MIG profile of H100-80GB"));

    tn_init(&t, "bad-replicas");
    tn_res(&t, "nvidia.com/gpu", 4);
    tn_label(&t, "nvidia.com/gpu.replicas", "four");
    e = build_err(&t);
    assert_non_null(strstr(e.path, "nvidia.com/gpu.replicas"));

    tn_init(&t, "too-many-replicas");
    tn_res(&t, "nvidia.com/gpu", 4);
    tn_label(&t, "nvidia.com/gpu.replicas", "100000");
    e = build_err(&t);
    assert_int_equal(e.code, GS_ERR_LIMIT);

    tn_init(&t, "too-many-mig");
    tn_res(&t, "nvidia.com/mig-1g.10gb", 449);
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB");
    e = build_err(&t);
    assert_int_equal(e.code, GS_ERR_LIMIT);

    tn_init(&t, "single-unknown");
    tn_res(&t, "nvidia.com/gpu", 4);
    tn_label(&t, "nvidia.com/gpu.product", "Tesla-T4-MIG-1g.5gb");
    build_err(&t);

    /* at the bounds: 64 GPUs and 448 MIG instances are fine */
    tn_init(&t, "big");
    tn_res(&t, "nvidia.com/gpu", 64);
    g = build_ok(&t);
    assert_int_equal(g.ndevs, 64);
    gs_node_gpus_free(&g);
    tn_init(&t, "big-mig");
    tn_res(&t, "nvidia.com/mig-1g.10gb", 448);
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB");
    g = build_ok(&t);
    assert_int_equal(g.nmig, 448);
    assert_int_equal(g.ndevs, 64);
    gs_node_gpus_free(&g);
}

static void test_inventory_copy(void **state)
{
    (void)state;
    tnode t;
    tn_init(&t, "mig-copy");
    tn_res(&t, "nvidia.com/gpu", 2);
    tn_res(&t, "nvidia.com/mig-3g.40gb", 2);
    tn_label(&t, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB");
    gs_node_gpus g = build_ok(&t);
    gs_node_gpus c;
    assert_int_equal(gs_node_gpus_copy(&c, &g), 0);
    assert_int_equal(c.ndevs, g.ndevs);
    assert_int_equal(c.nmig, g.nmig);
    assert_ptr_not_equal(c.devs, g.devs);
    assert_ptr_not_equal(c.mig, g.mig);
    assert_memory_equal(c.devs, g.devs, g.ndevs * sizeof *g.devs);
    assert_memory_equal(c.mig, g.mig, g.nmig * sizeof *g.mig);
    c.devs[0].milli_used = 500;
    c.mig[0].used = 1;
    assert_int_equal(g.devs[0].milli_used, 0);
    assert_int_equal(g.mig[0].used, 0);
    gs_node_gpus_free(&c);
    gs_node_gpus_free(&g);
    gs_node_gpus_free(&g); /* idempotent */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inventory_cpu_node),
        cmocka_unit_test(test_inventory_plain_a100),
        cmocka_unit_test(test_inventory_time_sliced),
        cmocka_unit_test(test_inventory_mig_mixed),
        cmocka_unit_test(test_inventory_mig_balanced),
        cmocka_unit_test(test_inventory_mig_eight_gpus),
        cmocka_unit_test(test_inventory_mig_single),
        cmocka_unit_test(test_inventory_openb),
        cmocka_unit_test(test_inventory_gpushare),
        cmocka_unit_test(test_inventory_labels_only),
        cmocka_unit_test(test_inventory_unhealthy),
        cmocka_unit_test(test_inventory_errors),
        cmocka_unit_test(test_inventory_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
