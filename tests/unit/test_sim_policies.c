/* test_sim_policies.c - the FGD-method policies one by one: GpuPacking's upstream unit
 * values (48, 29, 25, 93), GpuClustering, DotProd, BestFit, FGD (score and GPU choice), the
 * Kubernetes strategies, Random, GPU selection, and the policy tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sim/sim_int.h"

static const gs_sim_policy *policy(const char *name)
{
    uint32_t n;
    const gs_sim_policy *t = gs_sim_policy_table(&n);
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0)
            return &t[i];
    fail_msg("no policy %s", name);
    return NULL;
}

static gs_sim_node node(int64_t cpu_left, int ngpus, const int *left)
{
    gs_sim_node n;
    memset(&n, 0, sizeof n);
    n.cpu_left = n.cpu_alloc = cpu_left;
    n.mem_left = 1 << 20;
    n.ngpus = (uint8_t)ngpus;
    for (int i = 0; i < ngpus; i++)
        n.left[i] = (uint16_t)left[i];
    /* recompute the summary fields the runner keeps */
    for (int i = 0; i < ngpus; i++) {
        n.gl += n.left[i];
        if (n.left[i] > n.max_left)
            n.max_left = n.left[i];
        n.nfree += n.left[i] == 1000;
    }
    return n;
}

static gs_sim_pod pod(int64_t cpu, int milli, int count)
{
    gs_sim_pod p;
    memset(&p, 0, sizeof p);
    p.cpu = p.cpu_nz = cpu;
    p.milli = (uint16_t)milli;
    p.count = (uint16_t)count;
    return p;
}

static int score(const char *name, const gs_sim_ctx *c, const gs_sim_node *n, const gs_sim_pod *p)
{
    uint8_t hint = 0;
    return policy(name)->score(c, n, p, &hint);
}

/* sim:pkg/simulator/plugin/gpu_packing_score_test.go */
static void test_gpu_packing_upstream(void **state)
{
    (void)state;
    gs_sim_ctx c = {0};
    static const int used[] = {200, 1000, 1000, 500};
    static const int full4[] = {1000, 1000, 1000, 1000};
    static const int full8[] = {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000};
    gs_sim_node n = node(1000, 4, used);
    gs_sim_pod two_whole = pod(100, 1000, 2), two_small = pod(100, 200, 2);
    assert_int_equal(score("gpu-packing", &c, &n, &two_whole), 48); /* case 2 */
    n = node(1000, 4, full4);
    assert_int_equal(score("gpu-packing", &c, &n, &two_whole), 29); /* case 3, 4 GPUs */
    n = node(1000, 8, full8);
    assert_int_equal(score("gpu-packing", &c, &n, &two_whole), 25); /* case 3, 8 GPUs */
    n = node(1000, 4, used);
    assert_int_equal(score("gpu-packing", &c, &n, &two_small), 93); /* case 1 */
    assert_int_equal(n.left[0], 200); /* the node is not changed */
    /* a sharing pod on a partly used GPU: 100 - floor(left/100) */
    gs_sim_pod share = pod(100, 300, 1);
    static const int part[] = {1000, 550};
    n = node(1000, 2, part);
    assert_int_equal(score("gpu-packing", &c, &n, &share), 95);
    gs_sim_pod cpu_only = pod(100, 0, 0);
    assert_int_equal(score("gpu-packing", &c, &n, &cpu_only), 0);
}

static void test_gpu_clustering(void **state)
{
    (void)state;
    gs_sim_ctx c = {0};
    static const int left[] = {1000, 1000, 1000, 1000, 1000, 1000, 1000, 500};
    gs_sim_node n = node(64000, 8, left); /* gL = 7500: b = 25 * 500 / 8000 = 1 */
    gs_sim_pod share = pod(1000, 500, 1), one = pod(1000, 1000, 1), cpu_only = pod(1000, 0, 0);
    assert_int_equal(score("gpu-clustering", &c, &n, &share), 1 + 25); /* no GPU pods */
    n.tags = 1u; /* only sharing pods */
    assert_int_equal(score("gpu-clustering", &c, &n, &share), 1 + 75);
    assert_int_equal(score("gpu-clustering", &c, &n, &one), 1);         /* only other tags */
    n.tags = 1u | 1u << 1;
    assert_int_equal(score("gpu-clustering", &c, &n, &share), 1 + 50);  /* own + other tags */
    assert_int_equal(score("gpu-clustering", &c, &n, &one), 1 + 50);
    assert_int_equal(score("gpu-clustering", &c, &n, &cpu_only), 0);
}

static void test_dotprod_bestfit(void **state)
{
    (void)state;
    gs_sim_ctx c = {0};
    static const int left[] = {1000, 1000, 1000, 1000};
    gs_sim_node n = node(64000, 4, left);
    gs_sim_pod p = pod(8000, 500, 1);
    /* (0.5 * 0.0625 + 0.5 * 0.0625) / 2 = 0.03125 -> int(96.875) */
    assert_int_equal(score("dotprod", &c, &n, &p), 96);
    /* 0.5 * 56000/128000 + 0.5 * 3500/8000 = 0.4375 -> int(56.25) */
    assert_int_equal(score("bestfit", &c, &n, &p), 56);
    gs_sim_pod big = pod(70000, 0, 0);
    assert_int_equal(score("dotprod", &c, &n, &big), 0); /* cL < cP */
}

static void test_k8s_strategies(void **state)
{
    (void)state;
    gs_sim_ctx c = {0};
    static const int left[] = {1000, 1000, 1000, 1000};
    gs_sim_node n = node(64000, 4, left);
    gs_sim_pod p = pod(8000, 500, 1), cpu_only = pod(16000, 0, 0);
    /* cpu (64000 - 8000) * 100 / 64000 = 87; gpu (4000 - 500) * 100 / 4000 = 87 */
    assert_int_equal(score("k8s-least", &c, &n, &p), 87);
    /* cpu 8000 * 100 / 64000 = 12; gpu 500 * 100 / 4000 = 12 */
    assert_int_equal(score("k8s-most", &c, &n, &p), 12);
    /* a CPU-only pod does not request gpu-milli: only cpu is counted */
    assert_int_equal(score("k8s-least", &c, &n, &cpu_only), 75);
    assert_int_equal(score("k8s-most", &c, &n, &cpu_only), 25);
    n.cpu_nz_used = 48000;
    n.left[0] = 0;
    n.gl = 3000;
    /* cpu 56000/64000 -> most 87, least 12; gpu (1000 + 500)/4000 -> most 37, least 62 */
    assert_int_equal(score("k8s-most", &c, &n, &p), (87 + 37) / 2);
    assert_int_equal(score("k8s-least", &c, &n, &p), (12 + 62) / 2);
}

/* FGD on a one-type target (1000m, 500 milli x 1, weight 1). */
static void test_fgd(void **state)
{
    (void)state;
    gs_frag_type type = {{1000, 500, 1, ""}, 1.0, 0};
    gs_frag_target t;
    assert_int_equal(gs_frag_target_from_list(&type, 1, &t, NULL), 0);
    gs_fgd_workload w;
    memset(&w, 0, sizeof w);
    gs_arena_init(&w.arena, 0);
    const char *models[] = {""};
    assert_int_equal(gs_ftypes_build(&w.ft, &t, models, 1, &w.arena, NULL), 0);
    gs_sim_ctx c = {&w, NULL, NULL};
    const gs_sim_policy *fgd = policy("fgd");
    static const int left[] = {600, 1000};
    gs_sim_node n = node(64000, 2, left);
    n.frag = gs_ftypes_frag(&w.ft, 0, n.cpu_left, n.left, n.ngpus); /* 0: both GPUs fit */
    assert_true(n.frag == 0.0);
    gs_sim_pod share = pod(1000, 500, 1);
    uint8_t hint = 9;
    /* GPU 0 -> {100, 1000}: frag 100, int(100 * sigmoid(-0.1)) = 47;
     * GPU 1 -> {600, 500}: frag 0, sigmoid(0) = 0.5 -> 50 */
    assert_int_equal(fgd->score(&c, &n, &share, &hint), 50);
    assert_int_equal(hint, 1);
    uint8_t out[GS_SIM_MAX_GPUS];
    fgd->pick_gpus(&c, &n, &share, hint, out);
    assert_int_equal(out[0], 1);
    /* equal maxima: the first GPU reaching it */
    static const int eq[] = {1000, 500};
    n = node(64000, 2, eq);
    n.frag = gs_ftypes_frag(&w.ft, 0, n.cpu_left, n.left, n.ngpus);
    assert_int_equal(fgd->score(&c, &n, &share, &hint), 50);
    assert_int_equal(hint, 0);
    /* a whole GPU: {600, 1000} -> {600, 0}, frag unchanged -> 50 */
    n = node(64000, 2, left);
    n.frag = 0.0;
    gs_sim_pod whole = pod(1000, 1000, 1);
    assert_int_equal(fgd->score(&c, &n, &whole, &hint), 50);
    fgd->pick_gpus(&c, &n, &whole, hint, out);
    assert_int_equal(out[0], 1);
    /* taking the node's last CPU leaves 1600 idle milli unusable: q4 -> int(100 * sigmoid(-1.6)) */
    n = node(1000, 2, left);
    n.frag = 0.0;
    gs_sim_pod cpu_only = pod(1000, 0, 0);
    assert_int_equal(fgd->score(&c, &n, &cpu_only, &hint), 16);
    gs_frag_target_free(&t);
    gs_arena_free(&w.arena);
}

static void test_random_and_selection(void **state)
{
    (void)state;
    gs_rng rng;
    gs_rng_seed(&rng, 7);
    gs_sim_ctx c = {NULL, &rng, NULL};
    const gs_sim_policy *rnd = policy("random");
    static const int left[] = {300, 1000, 700, 200};
    gs_sim_node a = node(1000, 4, left), b = node(1000, 4, left);
    const gs_sim_node *feas[2] = {&a, &b};
    rnd->prescore(&c, feas, 2);
    assert_true(c.chosen == &a || c.chosen == &b);
    gs_sim_pod share = pod(100, 300, 1);
    assert_int_equal(score("random", &c, c.chosen, &share), 100);
    assert_int_equal(score("random", &c, c.chosen == &a ? &b : &a, &share), 0);
    int seen[4] = {0};
    for (int i = 0; i < 200; i++) {
        uint8_t out[GS_SIM_MAX_GPUS];
        rnd->pick_gpus(&c, &a, &share, 0, out);
        assert_true(a.left[out[0]] >= 300);
        seen[out[0]]++;
    }
    assert_int_equal(seen[3], 0);
    assert_true(seen[0] > 0 && seen[1] > 0 && seen[2] > 0);
    /* best fit: the tightest GPU that fits */
    uint8_t out[GS_SIM_MAX_GPUS];
    gs_sim_pick_best(&a, &share, out);
    assert_int_equal(out[0], 0);
    gs_sim_pod share6 = pod(100, 600, 1);
    gs_sim_pick_best(&a, &share6, out);
    assert_int_equal(out[0], 2);
    /* whole GPUs: the lowest-index free ones */
    static const int mixed[] = {1000, 500, 1000, 1000};
    gs_sim_node m = node(1000, 4, mixed);
    gs_sim_pod two = pod(100, 1000, 2);
    gs_sim_pick_best(&m, &two, out);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], 2);
}

static void test_tables(void **state)
{
    (void)state;
    uint32_t n, m;
    const gs_sim_policy *ops = gs_sim_policy_table(&n);
    const gs_fgd_policy_info *info = gs_fgd_policies(&m);
    assert_int_equal(n, m);
    assert_int_equal(n, 8);
    for (uint32_t i = 0; i < n; i++) {
        assert_string_equal(ops[i].name, info[i].name);
        assert_string_equal(ops[i].label, info[i].label);
        assert_string_equal(ops[i].summary, info[i].summary);
        assert_non_null(ops[i].score);
        assert_non_null(ops[i].pick_gpus);
        assert_int_equal(gs_fgd_policy_find(info[i].name, NULL), (int)i);
    }
    assert_string_equal(info[5].label, "06-FGD");
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_fgd_policy_find("tetris", &err), -1);
    assert_int_equal(err.code, GS_ERR_NOTFOUND);
    assert_non_null(strstr(err.msg, "gpu-packing"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_packing_upstream),
        cmocka_unit_test(test_gpu_clustering),
        cmocka_unit_test(test_dotprod_bestfit),
        cmocka_unit_test(test_k8s_strategies),
        cmocka_unit_test(test_fgd),
        cmocka_unit_test(test_random_and_selection),
        cmocka_unit_test(test_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
