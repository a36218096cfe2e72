/* test_report_openb.c - simulate's reports on the real openb trace (GPU and CPU-only nodes,
 * the default pod list with its creation and deletion times): replay conservation and
 * determinism, the GPU-taint what-if (CPU-only pods leave the GPU nodes), FGD run records
 * equal to the artifact writers' rows. Needs $GS_SHARED/data/openb (CTest sets GS_SHARED);
 * prints "SKIP: ..." and exits 77 without it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "gpusched/report.h"

static char nodes_all[1024], nodes_gpu[1024], pods_default[1024];

typedef struct world {
    gs_snapshot snap;
    int64_t *arr, *dur;
} world;

static void build(world *w, bool taint, bool keep_running)
{
    gs_error err;
    gs_openb t;
    gs_openb_init(&t);
    gs_snapshot_init(&w->snap);
    gs_openb_pod_opts po;
    gs_openb_pod_opts_defaults(&po);
    if (gs_openb_read_nodes(&t, nodes_all, NULL, &err) || gs_openb_add_nodes(&w->snap, &t, &err) ||
        gs_openb_read_pods(&t, pods_default, NULL, &err) ||
        gs_openb_add_pods(&w->snap, &t, &po, &err) || gs_snapshot_finish(&w->snap, &err))
        fail_msg("openb: %s", err.msg);
    gs_openb_free(&t);
    gs_whatif wi;
    memset(&wi, 0, sizeof wi);
    wi.gpu_taint = taint ? GS_TAINT_ADD : GS_TAINT_KEEP;
    wi.tolerate_gpu_pods = true;
    gs_whatif_stats st;
    assert_int_equal(gs_whatif_apply(&w->snap, &wi, &st, &err), 0);
    assert_int_equal(st.nodes_tainted, taint ? 1213 : 0);
    w->arr = malloc(w->snap.pods.n * sizeof *w->arr);
    w->dur = malloc(w->snap.pods.n * sizeof *w->dur);
    assert_int_equal(gs_trace_times(&w->snap, w->arr, w->dur, &err), 0);
    if (keep_running)
        for (size_t i = 0; i < w->snap.pods.n; i++)
            w->dur[i] = GS_REPLAY_FOREVER;
}

static void drop(world *w)
{
    gs_snapshot_free(&w->snap);
    free(w->arr);
    free(w->dur);
}

static void replay(world *w, gs_sim_run *run, const char *variant)
{
    gs_replay_opts o;
    gs_replay_opts_defaults(&o);
    gs_replay_result res;
    gs_error err;
    assert_int_equal(gs_replay_run(&w->snap, w->arr, w->dur, &o, &res, &err), 0);
    assert_int_equal(gs_sim_run_from_replay(run, variant[0] ? 1 : 0, "openb_pod_list_default",
                                            variant, "default", 42, 1.0, &w->snap, &res, &err),
                     0);
    /* where every CPU-only pod ran */
    uint32_t cpu_on_gpu = 0;
    for (uint32_t i = 0; i < res.npods; i++) {
        const gs_replay_pod *p = &res.pods[i];
        if (p->node < 0 || gs_pod_gpu_amount(&w->snap.pods.v[p->pod]) > 0)
            continue;
        const gs_node *n = &w->snap.nodes.v[p->node];
        if (gs_reslist_get(&n->allocatable, "alibabacloud.com/gpu-count"))
            cpu_on_gpu++;
    }
    if (variant[0])
        assert_int_equal(cpu_on_gpu, 0); /* the taint keeps CPU-only pods off GPU nodes */
    else
        assert_true(cpu_on_gpu > 0); /* without it, some land there */
    gs_replay_result_free(&res);
}

static void test_taint_keep_running(void **state)
{
    (void)state;
    world plain, tainted;
    build(&plain, false, true);
    build(&tainted, true, true);
    gs_sim_run a, b;
    replay(&plain, &a, "");
    replay(&tainted, &b, "gpu-taint");
    const gs_replay_metrics *ma = &a.replay, *mb = &b.replay;
    assert_int_equal(ma->arrived, 8152);
    assert_int_equal(mb->arrived, 8152);
    assert_int_equal(ma->done + ma->running + ma->pending + ma->rejected + ma->lost, 8152);
    assert_int_equal(mb->done + mb->running + mb->pending + mb->rejected + mb->lost, 8152);
    assert_int_equal(ma->done, 0); /* nothing leaves */
    /* the taint moves GPUs from stranded to allocated and pushes CPU-only pods onto the
     * 310 CPU nodes, where some do not fit */
    assert_true(mb->stranded_peak < ma->stranded_peak);
    assert_true(b.final_alloc_pct > a.final_alloc_pct);
    assert_true(mb->never_started_gpu <= ma->never_started_gpu);
    assert_true(mb->never_started - mb->never_started_gpu >
                ma->never_started - ma->never_started_gpu);
    /* determinism: the same replay again gives the same JSON */
    gs_sim_run a2;
    replay(&plain, &a2, "");
    gs_sim_report r1, r2;
    gs_sim_report_init(&r1);
    gs_sim_report_init(&r2);
    gs_error err;
    assert_int_equal(gs_sim_report_add(&r1, &a, &err), 0);
    assert_int_equal(gs_sim_report_add(&r2, &a2, &err), 0);
    gs_strbuf j1 = GS_STRBUF_INIT, j2 = GS_STRBUF_INIT;
    gs_report_json(&r1, &j1);
    gs_report_json(&r2, &j2);
    assert_string_equal(gs_strbuf_cstr(&j1), gs_strbuf_cstr(&j2));
    gs_strbuf_free(&j1);
    gs_strbuf_free(&j2);
    gs_sim_report_free(&r1);
    gs_sim_report_free(&r2);
    gs_sim_run_free(&b);
    drop(&plain);
    drop(&tainted);
}

static void test_trace_times(void **state)
{
    (void)state;
    world plain;
    build(&plain, false, false);
    gs_sim_run a;
    replay(&plain, &a, "");
    const gs_replay_metrics *m = &a.replay;
    assert_int_equal(m->done + m->running + m->pending + m->rejected + m->lost, 8152);
    assert_true(m->done > 8000); /* the trace's own deletion times: almost everything leaves */
    assert_int_equal(m->never_started, 0);
    assert_int_equal(m->nclasses, 3); /* latency-sensitive, burstable, best-effort */
    assert_string_equal(m->classes[0].name, "latency-sensitive");
    gs_sim_run_free(&a);
    drop(&plain);
}

static void test_fgd_rows(void **state)
{
    (void)state;
    gs_openb t;
    gs_openb_init(&t);
    gs_error err;
    assert_int_equal(gs_openb_read_nodes(&t, nodes_gpu, NULL, &err), 0);
    assert_int_equal(gs_openb_read_pods(&t, pods_default, NULL, &err), 0);
    gs_fgd_workload *w = gs_fgd_workload_new(t.nodes.v, (uint32_t)t.nodes.n, t.pods.v,
                                             (uint32_t)t.pods.n, NULL, &err);
    assert_non_null(w);
    gs_fgd_opts o;
    gs_fgd_opts_defaults(&o);
    gs_fgd_result r;
    assert_int_equal(gs_fgd_run(w, &o, &r, &err), 0);
    gs_sim_report rep;
    gs_sim_report_init(&rep);
    gs_sim_run run;
    assert_int_equal(gs_sim_run_from_fgd(&run, 0, "openb_pod_list_default", "", &r, &err), 0);
    assert_int_equal(gs_sim_report_add(&rep, &run, &err), 0);
    for (int which = 0; which < 3; which++) {
        gs_strbuf want = GS_STRBUF_INIT, got = GS_STRBUF_INIT;
        gs_fgd_csv_header((gs_fgd_csv)which, r.curves.nx, &want);
        gs_strbuf_putc(&want, '\n');
        gs_fgd_csv_row(&r, (gs_fgd_csv)which, "openb_pod_list_default", &want);
        gs_strbuf_putc(&want, '\n');
        gs_report_csv(&rep, (gs_fgd_csv)which, &got);
        assert_string_equal(gs_strbuf_cstr(&got), gs_strbuf_cstr(&want));
        gs_strbuf_free(&want);
        gs_strbuf_free(&got);
    }
    gs_strbuf want = GS_STRBUF_INIT, got = GS_STRBUF_INIT;
    gs_fgd_csv_fail_header(&want);
    gs_strbuf_putc(&want, '\n');
    gs_fgd_csv_fail_rows(&r, "openb_pod_list_default", &want);
    gs_report_csv_fail(&rep, &got);
    assert_string_equal(gs_strbuf_cstr(&got), gs_strbuf_cstr(&want));
    gs_strbuf_free(&want);
    gs_strbuf_free(&got);
    assert_int_equal(r.curves.nx, 131);
    gs_sim_report_free(&rep);
    gs_fgd_result_free(&r);
    gs_fgd_workload_free(w);
    gs_openb_free(&t);
}

int main(void)
{
    const char *shared = getenv("GS_SHARED");
    if (!shared || !*shared)
        shared = "../shared";
    snprintf(nodes_all, sizeof nodes_all, "%s/data/openb/openb_node_list_all_node.csv", shared);
    snprintf(nodes_gpu, sizeof nodes_gpu, "%s/data/openb/openb_node_list_gpu_node.csv", shared);
    snprintf(pods_default, sizeof pods_default, "%s/data/openb/openb_pod_list_default.csv", shared);
    if (access(nodes_all, R_OK) != 0 || access(nodes_gpu, R_OK) != 0 ||
        access(pods_default, R_OK) != 0) {
        printf("SKIP: openb trace not found at %s/data/openb (set GS_SHARED)\n", shared);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_taint_keep_running),
        cmocka_unit_test(test_trace_times),
        cmocka_unit_test(test_fgd_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
