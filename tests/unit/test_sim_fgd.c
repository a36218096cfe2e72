/* test_sim_fgd.c - FGD-method runs on small synthetic clusters: determinism (identical
 * events and byte-identical CSV lines), the score cache, identical allocation curves for
 * every policy up to the first failed pod, the tuning rules (stop rule quirk, tune-down),
 * the discrete curves with their +-1 fallback, failed-pod shapes, filters and errors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpusched/sim.h"

typedef struct fixture {
    gs_openb rows;
    gs_fgd_workload *w;
} fixture;

static void load(fixture *f, const char *nodes, const char *pods)
{
    gs_error err;
    gs_error_clear(&err);
    gs_openb_init(&f->rows);
    if (gs_openb_parse_nodes(&f->rows, "nodes", nodes, strlen(nodes), NULL, &err) < 0 ||
        gs_openb_parse_pods(&f->rows, "pods", pods, strlen(pods), NULL, &err) < 0)
        fail_msg("parse: %s", err.msg);
    f->w = gs_fgd_workload_new(f->rows.nodes.v, (uint32_t)f->rows.nodes.n, f->rows.pods.v,
                               (uint32_t)f->rows.pods.n, NULL, &err);
    if (!f->w)
        fail_msg("workload: %s", err.msg);
}

static void unload(fixture *f)
{
    gs_fgd_workload_free(f->w);
    gs_openb_free(&f->rows);
}

/* A mixed cluster (T4 / G2 / CPU-light P100) and a pseudo-random trace that overloads it. */
static char *synthetic_nodes(void)
{
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_strbuf_puts(&sb, "sn,cpu_milli,memory_mib,gpu,model\n");
    for (int i = 0; i < 12; i++)
        gs_strbuf_printf(&sb, "t4-%02d,104000,524288,2,T4\n", i);
    for (int i = 0; i < 6; i++)
        gs_strbuf_printf(&sb, "g2-%02d,96000,393216,8,G2\n", i);
    for (int i = 0; i < 4; i++)
        gs_strbuf_printf(&sb, "p100-%02d,8000,61440,2,P100\n", i);
    return gs_strbuf_detach(&sb);
}

static char *synthetic_pods(int n)
{
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_strbuf_puts(&sb, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n");
    uint64_t x = 12345;
    static const int shares[] = {250, 460, 500, 810, 1000};
    static const char *const specs[] = {"", "", "", "T4", "G2|P100"};
    for (int i = 0; i < n; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t r = (uint32_t)(x >> 33);
        int kind = r % 10;
        int cpu = 1000 * (1 + (int)(r >> 8) % 16);
        if (kind < 2)
            gs_strbuf_printf(&sb, "pod-%04d,%d,4096,0,0,\n", i, cpu);
        else if (kind < 8)
            gs_strbuf_printf(&sb, "pod-%04d,%d,8192,1,%d,%s\n", i, cpu, shares[(r >> 4) % 5],
                             specs[(r >> 12) % 5]);
        else
            gs_strbuf_printf(&sb, "pod-%04d,%d,16384,%d,1000,\n", i, cpu * 2, kind == 8 ? 2 : 4);
    }
    return gs_strbuf_detach(&sb);
}

static void run_ok(const gs_fgd_workload *w, const gs_fgd_opts *o, gs_fgd_result *r)
{
    gs_error err;
    gs_error_clear(&err);
    if (gs_fgd_run(w, o, r, &err) < 0)
        fail_msg("run: %s", err.msg);
}

static char *csv_lines(const gs_fgd_result *r)
{
    gs_strbuf sb = GS_STRBUF_INIT;
    for (int k = 0; k < 3; k++) {
        gs_fgd_csv_row(r, (gs_fgd_csv)k, "synthetic", &sb);
        gs_strbuf_putc(&sb, '\n');
    }
    gs_fgd_csv_fail_rows(r, "synthetic", &sb);
    return gs_strbuf_detach(&sb);
}

static void test_determinism_and_cache(void **state)
{
    (void)state;
    fixture f;
    char *nodes = synthetic_nodes(), *pods = synthetic_pods(100);
    load(&f, nodes, pods);
    uint32_t np;
    const gs_fgd_policy_info *pol = gs_fgd_policies(&np);
    for (uint32_t i = 0; i < np; i++) {
        gs_fgd_opts o;
        gs_fgd_opts_defaults(&o);
        o.policy = pol[i].name;
        o.seed = 7;
        o.record_categories = true;
        gs_fgd_result a, b, c;
        run_ok(f.w, &o, &a);
        run_ok(f.w, &o, &b);
        o.no_score_cache = true;
        run_ok(f.w, &o, &c);
        assert_true(a.nevents > 100); /* tuned up to 130% */
        assert_int_equal(a.nevents, b.nevents);
        assert_int_equal(a.nevents, c.nevents);
        assert_memory_equal(a.events, b.events, sizeof *a.events * a.nevents);
        assert_memory_equal(a.events, c.events, sizeof *a.events * a.nevents);
        assert_memory_equal(a.categories, b.categories, sizeof(double) * GS_FRAG_NCAT * a.nevents);
        char *la = csv_lines(&a), *lb = csv_lines(&b), *lc = csv_lines(&c);
        assert_string_equal(la, lb);
        assert_string_equal(la, lc);
        free(la);
        free(lb);
        free(lc);
        /* a different seed gives a different sequence */
        o.seed = 8;
        o.no_score_cache = false;
        gs_fgd_result d;
        run_ok(f.w, &o, &d);
        bool differ = d.nevents != a.nevents;
        for (uint32_t e = 0; !differ && e < a.nevents; e++)
            differ = a.events[e].pod != d.events[e].pod;
        assert_true(differ);
        gs_fgd_result_free(&a);
        gs_fgd_result_free(&b);
        gs_fgd_result_free(&c);
        gs_fgd_result_free(&d);
    }
    unload(&f);
    free(nodes);
    free(pods);
}

/* Same seed, same pod sequence: every policy allocates identically until a pod fails. */
static void test_identical_until_first_failure(void **state)
{
    (void)state;
    fixture f;
    char *nodes = synthetic_nodes(), *pods = synthetic_pods(100);
    load(&f, nodes, pods);
    uint32_t np;
    const gs_fgd_policy_info *pol = gs_fgd_policies(&np);
    gs_fgd_result res[16];
    for (uint32_t i = 0; i < np; i++) {
        gs_fgd_opts o;
        gs_fgd_opts_defaults(&o);
        o.policy = pol[i].name;
        o.seed = 42;
        run_ok(f.w, &o, &res[i]);
    }
    uint32_t any_failure = 0;
    for (uint32_t i = 1; i < np; i++) {
        assert_int_equal(res[i].nevents, res[0].nevents);
        uint32_t upto = res[0].first_failure < res[i].first_failure ? res[0].first_failure
                                                                    : res[i].first_failure;
        any_failure += upto < res[0].nevents;
        for (uint32_t e = 0; e < res[0].nevents; e++) {
            assert_int_equal(res[i].events[e].pod, res[0].events[e].pod);
            assert_int_equal(res[i].events[e].clone, res[0].events[e].clone);
            assert_int_equal(res[i].events[e].arrived_milli, res[0].events[e].arrived_milli);
            if (e < upto)
                assert_int_equal(res[i].events[e].used_milli, res[0].events[e].used_milli);
        }
        /* curve cells strictly before the first failure's x agree too */
        double total = res[0].total_gpus;
        double x_fail = rint((double)res[0].events[upto < res[0].nevents ? upto : 0].arrived_milli /
                             total / 10.0);
        for (uint32_t x = 0; upto < res[0].nevents && x + 1 < x_fail; x++)
            if (!isnan(res[0].curves.alloc[x]))
                assert_true(res[i].curves.alloc[x] == res[0].curves.alloc[x]);
    }
    assert_true(any_failure > 0); /* the trace overloads the cluster, so this is a real test */
    /* FGD should not be worse than Random on this overload */
    assert_true(res[5].summary.milli_used >= res[0].summary.milli_used);
    for (uint32_t i = 0; i < np; i++)
        gs_fgd_result_free(&res[i]);
    unload(&f);
    free(nodes);
    free(pods);
}

/* Tune-up stops at the first sampled pod whose PER-GPU milli would pass the target, so a
 * multi-GPU clone can overshoot. */
static void test_tune_up_stop_rule(void **state)
{
    (void)state;
    fixture f;
    load(&f, "sn,cpu_milli,memory_mib,gpu,model\nn,96000,393216,8,G2\n",
         "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,1,4,1000\n");
    gs_fgd_opts o;
    gs_fgd_opts_defaults(&o);
    gs_fgd_result r;
    run_ok(f.w, &o, &r);
    /* target 10400: 4000 (+1000 <= T) -> 8000 (+1000 <= T) -> 12000, then 13000 > T stops */
    assert_int_equal(r.clones_added, 2);
    assert_int_equal(r.nevents, 3);
    assert_int_equal(r.events[2].arrived_milli, 12000);
    assert_int_equal(r.events[2].clone, 2);
    assert_int_equal(r.summary.failed, 1); /* the third 4-GPU pod does not fit */
    assert_int_equal(r.first_failure, 2);
    assert_int_equal(r.events[2].node, -1);
    assert_int_equal(r.summary.milli_used, 8000);
    assert_int_equal(r.summary.gpus_used, 8);
    assert_int_equal(r.nfails, 1);
    assert_int_equal(r.fails[0].count, 1);
    assert_int_equal(r.fails[0].num_gpu, 4);
    assert_string_equal(r.fails[0].gpu_type, "<none>");
    /* GPU indexes: lowest-index free GPUs */
    assert_int_equal(r.events[0].ngpus, 4);
    assert_int_equal(r.events[0].gpus[0], 0);
    assert_int_equal(r.events[1].gpus[0], 4);
    gs_fgd_result_free(&r);
    unload(&f);
}

static void test_tune_down(void **state)
{
    (void)state;
    fixture f;
    load(&f, "sn,cpu_milli,memory_mib,gpu,model\nn,96000,393216,1,G2\n",
         "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,1,1,1000\nb,1000,1,1,1000\n"
         "c,1000,1,1,1000\nd,1000,1,1,1000\ne,1000,1,0,0\n");
    gs_fgd_opts o;
    gs_fgd_opts_defaults(&o);
    gs_fgd_result r;
    run_ok(f.w, &o, &r);
    /* 4000 milli against a target of 1300: random removals until <= 1300 */
    uint32_t gpu_pods = 0;
    for (uint32_t e = 0; e < r.nevents; e++)
        gpu_pods += r.events[e].arrived_milli > (e ? r.events[e - 1].arrived_milli : 0);
    assert_int_equal(gpu_pods, 1);
    assert_true(r.events[r.nevents - 1].arrived_milli == 1000);
    assert_int_equal(r.pods_removed + r.nevents, 5);
    gs_fgd_result_free(&r);
    unload(&f);
}

/* Discrete curves: x = round(A/total/10) half to even, alloc = round(U/total/10, 2), mean per
 * bucket, else the buckets x-1..x+1, else missing. */
static void test_curves(void **state)
{
    (void)state;
    fixture f;
    load(&f, "sn,cpu_milli,memory_mib,gpu,model\nn,96000,393216,1,G2\n",
         "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,1,1,300\nb,1000,1,1,300\n"
         "c,1000,1,1,250\nd,1000,1,1,900\n");
    gs_fgd_opts o;
    gs_fgd_opts_defaults(&o);
    o.tune = 0;       /* the trace as is */
    o.shuffle = false; /* name order */
    gs_fgd_result r;
    run_ok(f.w, &o, &r);
    assert_int_equal(r.nevents, 4);
    /* A = 300, 600, 850, 1750 -> x = 30, 60, 85 (84.99.. no: 85 exactly), 175 */
    assert_int_equal(r.curves.nx, 176);
    assert_true(r.curves.alloc[30] == 30.0);
    assert_true(r.curves.alloc[29] == 30.0); /* fallback to 30 */
    assert_true(r.curves.alloc[31] == 30.0);
    assert_true(isnan(r.curves.alloc[45]));
    assert_true(r.curves.alloc[60] == 60.0);
    assert_true(r.curves.alloc[85] == 85.0);
    assert_true(r.curves.alloc[175] == 85.0); /* d failed: U stays 850 */
    assert_true(r.curves.alloc[174] == 85.0);
    assert_true(isnan(r.curves.alloc[100]));
    assert_int_equal(r.first_failure, 3);
    /* a single type (1000m, 300) is 50% of the pods: after a, b, c the 150 left are below 300 */
    assert_true(r.curves.frag[85] > 0);
    /* CSV text */
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_fgd_csv_header(GS_FGD_CSV_ALLOC, 3, &sb);
    assert_string_equal(gs_strbuf_cstr(&sb), "workload,sc_policy,tune,seed,total_gpus,0,1,2");
    gs_strbuf_reset(&sb);
    gs_fgd_csv_row(&r, GS_FGD_CSV_ALLOC, "tiny", &sb);
    assert_true(strncmp(gs_strbuf_cstr(&sb), "tiny,06-FGD,0.0,42,1,,,", 23) == 0);
    assert_non_null(strstr(gs_strbuf_cstr(&sb), ",,30.0,30.0,30.0,,"));
    gs_strbuf_free(&sb);
    gs_fgd_result_free(&r);
    unload(&f);
}

static void test_filters_and_fail_shapes(void **state)
{
    (void)state;
    fixture f;
    load(&f, "sn,cpu_milli,memory_mib,gpu,model\nt4,16000,1024,2,T4\ncpu,64000,65536,0,\n",
         "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
         "a,3155,10,1,500,A10\n"     /* no A10 node */
         "b,3155,10,1,500,A10\n"
         "c,1000,2048,1,500,\n"      /* memory: only the CPU node has 2048 MiB, no GPU there */
         "d,1000,10,1,500,A10|T4\n"  /* fits the T4 node */
         "e,20000,10,0,0,\n"         /* CPU-only, only the CPU node has the CPU */
         "f,1000,10,3,1000,\n");     /* 3 GPUs: never */
    gs_fgd_opts o;
    gs_fgd_opts_defaults(&o);
    o.tune = 0;
    o.shuffle = false;
    o.policy = "bestfit";
    gs_fgd_result r;
    run_ok(f.w, &o, &r);
    assert_int_equal(r.events[0].node, -1);
    assert_int_equal(r.events[2].node, -1);
    assert_int_equal(r.events[3].node, 1); /* "t4" sorts after "cpu" */
    assert_int_equal(r.events[4].node, 0);
    assert_int_equal(r.events[5].node, -1);
    assert_int_equal(r.summary.failed, 4);
    assert_int_equal(r.summary.scheduled, 2);
    assert_int_equal(r.nfails, 3);
    /* by count, then cpu: 3.155 cores prints as 3.15 */
    assert_int_equal(r.fails[0].count, 2);
    assert_int_equal(r.fails[0].cpu_milli, 3150);
    assert_string_equal(r.fails[0].gpu_type, "A10");
    assert_int_equal(r.fails[1].cpu_milli, 1000);
    assert_int_equal(r.fails[1].num_gpu, 1);
    assert_int_equal(r.fails[2].num_gpu, 3);
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_fgd_csv_fail_rows(&r, "w", &sb);
    assert_true(strncmp(gs_strbuf_cstr(&sb), "0,w,05-BestFit,0.0,42,2,3150,1,500,A10\n", 39) == 0);
    gs_strbuf_free(&sb);
    assert_int_equal(r.summary.cpu_used, 21000);
    assert_int_equal(r.summary.cpu_total, 80000);
    assert_int_equal(r.summary.mem_used, 20);
    assert_int_equal(r.summary.gpus_used, 1);
    assert_int_equal(r.summary.gpus_total, 2);
    assert_int_equal(r.summary.milli_used, 500);
    gs_fgd_result_free(&r);
    unload(&f);
}

static void test_errors(void **state)
{
    (void)state;
    gs_error err;
    gs_error_clear(&err);
    assert_null(gs_fgd_workload_new(NULL, 0, NULL, 0, NULL, &err));
    assert_int_equal(err.code, GS_ERR_INVALID);
    fixture f;
    load(&f, "sn,cpu_milli,memory_mib,gpu,model\nn,96000,393216,1,G2\n",
         "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n");
    gs_fgd_opts o;
    gs_fgd_opts_defaults(&o);
    gs_fgd_result r;
    o.policy = "nope";
    assert_int_equal(gs_fgd_run(f.w, &o, &r, &err), -1);
    assert_int_equal(err.code, GS_ERR_NOTFOUND);
    o.policy = "fgd";
    o.tune = NAN;
    assert_int_equal(gs_fgd_run(f.w, &o, &r, &err), -1);
    assert_int_equal(err.code, GS_ERR_USAGE);
    o.tune = 1.3; /* no pods: an empty run */
    run_ok(f.w, &o, &r);
    assert_int_equal(r.nevents, 0);
    assert_int_equal(r.curves.nx, 131);
    assert_true(isnan(r.curves.alloc[0]));
    gs_fgd_result_free(&r);
    unload(&f);
}

static void put(double v, const char *want)
{
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_fgd_put_number(&sb, v);
    assert_string_equal(gs_strbuf_cstr(&sb), want);
    gs_strbuf_free(&sb);
}

static void test_numbers(void **state)
{
    (void)state;
    put(50.0, "50.0");
    put(49.95, "49.95");
    put(95.29, "95.29");
    put(100.0, "100.0");
    put(0.0, "0.0");
    put(-2.5, "-2.5");
    put(1.3, "1.3");
    put(0.0001, "0.0001");
    put(1e-05, "1e-05");
    put(1e16, "1e+16");
    put(1234567890123456.0, "1234567890123456.0");
    put(17.766666666666666, "17.766666666666666");
    put(NAN, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_determinism_and_cache),
        cmocka_unit_test(test_identical_until_first_failure),
        cmocka_unit_test(test_tune_up_stop_rule),
        cmocka_unit_test(test_tune_down),
        cmocka_unit_test(test_curves),
        cmocka_unit_test(test_filters_and_fail_shapes),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_numbers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
