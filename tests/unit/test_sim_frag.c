/* test_sim_frag.c - the FGD fragmentation measure: the check values of the reference's
 * frag_test (fgd-method.md "Check values" 1), categories, model admission and the target
 * workload (typical pods) construction. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gpusched/sim.h"

#define assert_near(a, b, eps)                                                             \
    do {                                                                                   \
        double a_ = (a), b_ = (b);                                                         \
        if (!(fabs(a_ - b_) <= (eps)))                                                     \
            fail_msg("%s = %.10g, expected %.10g (+-%g)", #a, a_, b_, (double)(eps));      \
    } while (0)

/* The reference unit test's 35-type target (CPU, milli per GPU, GPUs, type, percent). */
static const struct {
    int64_t cpu;
    int32_t milli, count;
    const char *type;
    double pct;
} typical_gpu[] = {
    {6000, 465, 1, "", 9.33},      {8000, 440, 1, "2080", 9.15},   {8000, 475, 1, "T4", 8.76},
    {8000, 440, 1, "P100", 8.72},  {2000, 465, 1, "", 8.68},       {12000, 900, 1, "", 8.65},
    {4000, 900, 1, "", 8.43},      {16000, 678, 1, "T4", 8.36},    {8000, 500, 1, "", 8.29},
    {6000, 511, 1, "", 8.11},      {14000, 1000, 2, "2080", 0.54}, {4000, 1000, 1, "2080", 0.43},
    {32000, 1000, 2, "T4", 0.43},  {16000, 1000, 1, "V100M16", 0.40}, {64000, 1000, 2, "", 0.40},
    {10000, 1000, 2, "", 0.40},    {11400, 1000, 1, "T4", 0.36},   {16000, 1000, 1, "T4", 0.36},
    {4000, 1000, 2, "", 0.36},     {14000, 1000, 2, "V100M16", 0.36}, {8000, 1000, 4, "", 0.36},
    {16000, 1000, 2, "", 0.32},    {2000, 1000, 1, "T4", 0.32},    {6000, 1000, 1, "", 0.32},
    {4000, 1000, 1, "", 0.32},     {5000, 1000, 1, "", 0.32},      {32000, 1000, 4, "V100M16", 0.32},
    {32000, 1000, 2, "", 0.32},    {24000, 1000, 8, "2080", 0.32}, {40000, 1000, 4, "", 0.29},
    {32000, 1000, 8, "", 0.29},    {32000, 1000, 1, "T4", 0.29},   {16000, 1000, 1, "", 0.25},
    {7000, 1000, 1, "V100M16", 0.25}, {24000, 1000, 1, "T4", 0.25},
};

/* The reference's target with CPU-only types (31 types). */
static const struct {
    int64_t cpu;
    int32_t milli, count;
    double pct;
} typical_mixed[] = {
    {15700, 1000, 1, 28.69}, {11900, 1000, 1, 18.93}, {11400, 1000, 1, 12.27}, {1000, 0, 0, 7.36},
    {18710, 1000, 1, 4.85},  {8200, 1000, 1, 3.79},   {16400, 1000, 1, 3.31},  {9810, 1000, 1, 1.97},
    {15200, 1000, 1, 1.87},  {11200, 1000, 1, 1.81},  {14200, 1000, 1, 1.76},  {12000, 0, 0, 1.65},
    {14900, 1000, 1, 1.39},  {60200, 1000, 4, 1.23},  {64200, 1000, 8, 1.07},  {32200, 1000, 4, 1.01},
    {17400, 1000, 2, 0.91},  {30200, 1000, 2, 0.69},  {16000, 1000, 1, 0.64},  {15000, 1000, 1, 0.59},
    {64000, 1000, 8, 0.53},  {15000, 0, 0, 0.53},     {11910, 1000, 1, 0.53},  {120200, 1000, 8, 0.48},
    {11300, 1000, 1, 0.37},  {30000, 1000, 2, 0.32},  {9800, 1000, 1, 0.32},   {8000, 1000, 1, 0.32},
    {2000, 1000, 1, 0.27},   {2000, 80, 1, 0.27},     {1000, 1000, 1, 0.27},
};

static void target_gpu(gs_frag_target *t)
{
    gs_frag_type types[64];
    uint32_t n = sizeof typical_gpu / sizeof typical_gpu[0];
    for (uint32_t i = 0; i < n; i++) {
        types[i].res.cpu_milli = typical_gpu[i].cpu;
        types[i].res.gpu_milli = typical_gpu[i].milli;
        types[i].res.num_gpu = typical_gpu[i].count;
        types[i].res.gpu_type = typical_gpu[i].type;
        types[i].weight = typical_gpu[i].pct / 100;
        types[i].count = 0;
    }
    assert_int_equal(gs_frag_target_from_list(types, n, t, NULL), 0);
}

static void target_mixed(gs_frag_target *t)
{
    gs_frag_type types[64];
    uint32_t n = sizeof typical_mixed / sizeof typical_mixed[0];
    for (uint32_t i = 0; i < n; i++) {
        types[i].res.cpu_milli = typical_mixed[i].cpu;
        types[i].res.gpu_milli = typical_mixed[i].milli;
        types[i].res.num_gpu = typical_mixed[i].count;
        types[i].res.gpu_type = "";
        types[i].weight = typical_mixed[i].pct / 100;
        types[i].count = 0;
    }
    assert_int_equal(gs_frag_target_from_list(types, n, t, NULL), 0);
}

static gs_frag_node mknode(int64_t cpu_left, const char *model, uint32_t ngpus, const int *left)
{
    gs_frag_node n;
    memset(&n, 0, sizeof n);
    n.cpu_left = cpu_left;
    n.model = model;
    n.ngpus = ngpus;
    for (uint32_t i = 0; i < ngpus; i++)
        n.gpu_left[i] = (uint16_t)left[i];
    return n;
}

/* Check values 2566.62, 3802.40, 7604.80 and 251.91 (TestNodeGpuShareFragAmount). */
static void test_check_values_gpu_target(void **state)
{
    (void)state;
    gs_frag_target t;
    target_gpu(&t);
    static const int used[] = {200, 1000, 1000, 500};
    static const int full4[] = {1000, 1000, 1000, 1000};
    static const int full8[] = {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000};
    gs_frag_node n = mknode(1000, "1080", 4, used);
    assert_near(gs_frag_node_amount(&n, &t, NULL), 2566.62, 0.01);
    n = mknode(1000, "1080", 4, full4);
    assert_near(gs_frag_node_amount(&n, &t, NULL), 3802.40, 0.01);
    n = mknode(1000, "1080", 8, full8);
    assert_near(gs_frag_node_amount(&n, &t, NULL), 7604.80, 0.01);
    gs_frag_target_free(&t);

    /* one type (6000m, 465 x 1, any model) of weight 9.33%: the node lacks CPU */
    gs_frag_type one = {{6000, 465, 1, ""}, 9.33 / 100, 0};
    assert_int_equal(gs_frag_target_from_list(&one, 1, &t, NULL), 0);
    n = mknode(1000, "1080", 4, used);
    assert_int_equal(gs_frag_classify(&n, &one.res), GS_FRAG_Q4_LACK_CPU);
    double cats[GS_FRAG_NCAT];
    assert_near(gs_frag_node_amount(&n, &t, cats), 251.91, 0.01);
    assert_near(cats[GS_FRAG_Q4_LACK_CPU], 0.0933 * 2700, 1e-9);
    gs_frag_target_free(&t);
}

/* Check values 887.20, 554.4 and 4000 (TestNodeGpuShareFragAmountWithNonGpu). */
static void test_check_values_mixed_target(void **state)
{
    (void)state;
    gs_frag_target t;
    target_mixed(&t);
    static const int empty8[] = {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000};
    static const int halved[] = {1000, 1000, 1000, 1000, 0, 0, 0, 0};
    gs_frag_node n = mknode(64000, "P100", 8, empty8);
    assert_near(gs_frag_node_amount(&n, &t, NULL), 887.20, 0.01);
    n = mknode(32000, "P100", 8, halved);
    assert_near(gs_frag_node_amount(&n, &t, NULL), 554.4, 0.01);
    n = mknode(0, "P100", 8, halved);
    double cats[GS_FRAG_NCAT], idle = 0;
    assert_near(gs_frag_node_amount(&n, &t, cats), 4000, 0.01);
    /* with no CPU left every type lacks CPU: all 4000 idle milli are fragment */
    assert_near(cats[GS_FRAG_Q3_SATISFIED], 0.0, 1e-12);
    assert_near(gs_frag_cluster(&n, 1, &t, NULL, &idle), 4000, 0.01);
    assert_near(idle, 4000, 1e-6);
    /* a prepared target (one model for every node measured) gives the same amounts */
    gs_error err;
    gs_error_clear(&err);
    gs_frag_prepared *p = gs_frag_prepare(&t, "P100", &err);
    assert_non_null(p);
    static const int odd[] = {300, 1000, 0, 650, 1000, 120, 1000, 999};
    const int *lefts[] = {empty8, halved, odd};
    for (int k = 0; k < 3; k++)
        for (int64_t cpu = 0; cpu <= 64000; cpu += 16000) {
            n = mknode(cpu, "P100", 8, lefts[k]);
            assert_true(gs_frag_prepared_amount(p, &n) == gs_frag_node_amount(&n, &t, NULL));
        }
    gs_frag_prepared_free(p);
    gs_frag_prepared_free(NULL);
    gs_frag_target_free(&t);
}

/* GetGpuFragMilliByNodeResAndPodRes: the too-small GPUs of a satisfied type (700, 0, 0, 0). */
static void test_q2_part_of_satisfied(void **state)
{
    (void)state;
    static const int used[] = {200, 1000, 1000, 500};
    static const int full4[] = {1000, 1000, 1000, 1000};
    static const int full8[] = {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000};
    gs_frag_target t;
    gs_frag_type two = {{100, 1000, 2, "1080"}, 1.0, 0};
    assert_int_equal(gs_frag_target_from_list(&two, 1, &t, NULL), 0);
    double cats[GS_FRAG_NCAT];
    gs_frag_node n = mknode(1000, "1080", 4, used);
    assert_int_equal(gs_frag_classify(&n, &two.res), GS_FRAG_Q3_SATISFIED);
    assert_near(gs_frag_node_amount(&n, &t, cats), 700, 1e-9);
    assert_near(cats[GS_FRAG_Q3_SATISFIED], 2000, 1e-9);
    n = mknode(1000, "1080", 4, full4);
    assert_near(gs_frag_node_amount(&n, &t, NULL), 0, 1e-9);
    n = mknode(1000, "1080", 8, full8);
    assert_near(gs_frag_node_amount(&n, &t, NULL), 0, 1e-9);
    gs_frag_target_free(&t);
    gs_frag_type small = {{100, 200, 2, "1080"}, 1.0, 0};
    assert_int_equal(gs_frag_target_from_list(&small, 1, &t, NULL), 0);
    n = mknode(1000, "1080", 4, used);
    assert_near(gs_frag_node_amount(&n, &t, NULL), 0, 1e-9);
    gs_frag_target_free(&t);
}

static void test_categories(void **state)
{
    (void)state;
    static const int left[] = {300, 1000};
    gs_frag_node n = mknode(4000, "T4", 2, left);
    gs_frag_podres cpu_small = {1000, 0, 0, ""}, cpu_big = {8000, 0, 0, ""};
    gs_frag_podres share = {1000, 500, 1, ""}, share_big_cpu = {9000, 500, 1, ""};
    gs_frag_podres two = {1000, 1000, 2, ""}, two_big_cpu = {9000, 1000, 2, ""};
    gs_frag_podres other_model = {1000, 500, 1, "V100M16|A10"}, listed = {1000, 500, 1, "A10|T4"};
    assert_int_equal(gs_frag_classify(&n, &cpu_small), GS_FRAG_XL_SATISFIED);
    assert_int_equal(gs_frag_classify(&n, &cpu_big), GS_FRAG_XR_LACK_CPU);
    assert_int_equal(gs_frag_classify(&n, &share), GS_FRAG_Q3_SATISFIED);
    assert_int_equal(gs_frag_classify(&n, &share_big_cpu), GS_FRAG_Q4_LACK_CPU);
    assert_int_equal(gs_frag_classify(&n, &two), GS_FRAG_Q2_LACK_GPU);
    assert_int_equal(gs_frag_classify(&n, &two_big_cpu), GS_FRAG_Q1_LACK_BOTH);
    assert_int_equal(gs_frag_classify(&n, &other_model), GS_FRAG_NO_ACCESS);
    assert_int_equal(gs_frag_classify(&n, &listed), GS_FRAG_Q3_SATISFIED);
    /* every category but q3 counts: xl_satisfied and no_access too */
    gs_frag_type types[3] = {{cpu_small, 0.5, 0}, {other_model, 0.25, 0}, {share, 0.25, 0}};
    gs_frag_target t;
    assert_int_equal(gs_frag_target_from_list(types, 3, &t, NULL), 0);
    double cats[GS_FRAG_NCAT];
    double f = gs_frag_node_amount(&n, &t, cats);
    assert_near(cats[GS_FRAG_XL_SATISFIED], 0.5 * 1300, 1e-9);
    assert_near(cats[GS_FRAG_NO_ACCESS], 0.25 * 1300, 1e-9);
    assert_near(cats[GS_FRAG_Q2_LACK_GPU], 0.25 * 300, 1e-9);
    assert_near(cats[GS_FRAG_Q3_SATISFIED], 0.25 * 1000, 1e-9);
    assert_near(f, 650 + 325 + 75, 1e-9);
    /* a node without idle GPUs has no fragmentation */
    static const int none[] = {0, 0};
    n = mknode(4000, "T4", 2, none);
    assert_near(gs_frag_node_amount(&n, &t, NULL), 0.0, 0.0);
    gs_frag_target_free(&t);
    assert_string_equal(gs_frag_cat_name(GS_FRAG_Q1_LACK_BOTH), "q1_lack_both");
    assert_string_equal(gs_frag_cat_name(GS_FRAG_NO_ACCESS), "no_access");
}

static void test_type_admits(void **state)
{
    (void)state;
    assert_true(gs_frag_type_admits("", "T4"));
    assert_true(gs_frag_type_admits("", ""));
    assert_true(gs_frag_type_admits("T4", "T4"));
    assert_false(gs_frag_type_admits("T4", "t4"));           /* exact, case-sensitive */
    assert_false(gs_frag_type_admits("V100M16", "V100M1"));  /* whole names only */
    assert_true(gs_frag_type_admits("V100M16|V100M32", "V100M32"));
    assert_true(gs_frag_type_admits("|A10||G2|", "G2"));       /* empty parts ignored */
    assert_true(gs_frag_type_admits("||", "G2"));              /* only empty parts: any */
    assert_false(gs_frag_type_admits("T4", ""));               /* CPU node */
}

/* GetTypicalPods: counts per key, popularity order with key tie-breaks, 95% cut and
 * renormalisation. */
static void test_target_workload(void **state)
{
    (void)state;
    gs_frag_podres pods[20];
    uint32_t n = 0;
    for (int i = 0; i < 10; i++)
        pods[n++] = (gs_frag_podres){4000, 500, 1, ""};
    for (int i = 0; i < 5; i++)
        pods[n++] = (gs_frag_podres){2000, 0, 0, ""};
    for (int i = 0; i < 2; i++)
        pods[n++] = (gs_frag_podres){8000, 1000, 1, "T4"};
    pods[n++] = (gs_frag_podres){8000, 1000, 1, "A10"};
    pods[n++] = (gs_frag_podres){9000, 1000, 1, ""};
    pods[n++] = (gs_frag_podres){8000, 1000, 2, ""};
    gs_frag_target t;
    /* 80% of 20 pods = 16: 10 + 5 = 15 < 16, + 2 = 17 -> three keys */
    assert_int_equal(gs_frag_target_workload(pods, n, 80, &t, NULL), 0);
    assert_int_equal(t.nkeys, 6);
    assert_int_equal(t.ntypes, 3);
    assert_int_equal(t.types[0].res.cpu_milli, 4000);
    assert_int_equal(t.types[1].res.gpu_milli, 0);
    assert_string_equal(t.types[2].res.gpu_type, "T4");
    assert_near(t.types[0].weight, 10.0 / 17.0, 1e-12);
    assert_near(t.coverage, 17.0 / 20.0, 1e-12);
    gs_frag_target_free(&t);
    /* 100%: every key; equal counts ordered by larger cpu, milli, count, type */
    assert_int_equal(gs_frag_target_workload(pods, n, 100, &t, NULL), 0);
    assert_int_equal(t.ntypes, 6);
    assert_int_equal(t.types[3].res.cpu_milli, 9000);
    assert_int_equal(t.types[4].res.num_gpu, 2);
    assert_string_equal(t.types[5].res.gpu_type, "A10");
    double sum = 0;
    for (uint32_t i = 0; i < t.ntypes; i++)
        sum += t.types[i].weight;
    assert_near(sum, 1.0, 1e-12);
    gs_frag_target_free(&t);
    /* empty trace: empty target, zero fragmentation */
    assert_int_equal(gs_frag_target_workload(pods, 0, 95, &t, NULL), 0);
    assert_int_equal(t.ntypes, 0);
    static const int full[] = {1000};
    gs_frag_node node = mknode(1000, "T4", 1, full);
    assert_near(gs_frag_node_amount(&node, &t, NULL), 0.0, 0.0);
    gs_frag_target_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_values_gpu_target),
        cmocka_unit_test(test_check_values_mixed_target),
        cmocka_unit_test(test_q2_part_of_satisfied),
        cmocka_unit_test(test_categories),
        cmocka_unit_test(test_type_admits),
        cmocka_unit_test(test_target_workload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
