/* test_sim_openb_traces.c - the FGD method on the shipped openb traces (read from
 * $GS_SHARED/data/openb, never copied into the project): empty-cluster fragmentation of six
 * traces against fgd-method.md "Check values" 2, the target workloads, determinism
 * (byte-identical CSV lines, also from concurrent threads on one shared workload), identical
 * allocation for every policy up to the first failed pod, and the openb -> snapshot
 * conversion for replay. Skips (exit 77) with a visible message when the traces are absent. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "gpusched/gpu.h"
#include "gpusched/sim.h"

static char openb_dir[1024];

static void path_of(char *buf, size_t cap, const char *file)
{
    snprintf(buf, cap, "%s/%s", openb_dir, file);
}

typedef struct loaded {
    gs_openb rows;
    gs_fgd_workload *w;
} loaded;

static void load_trace(loaded *l, const char *trace)
{
    char nodes[1200], pods[1200], name[128];
    gs_error err;
    gs_error_clear(&err);
    path_of(nodes, sizeof nodes, "openb_node_list_gpu_node.csv");
    snprintf(name, sizeof name, "openb_pod_list_%s.csv", trace);
    path_of(pods, sizeof pods, name);
    gs_openb_init(&l->rows);
    if (gs_openb_read_nodes(&l->rows, nodes, NULL, &err) < 0 ||
        gs_openb_read_pods(&l->rows, pods, NULL, &err) < 0)
        fail_msg("%s:%d: %s", err.file, err.line, err.msg);
    l->w = gs_fgd_workload_new(l->rows.nodes.v, (uint32_t)l->rows.nodes.n, l->rows.pods.v,
                               (uint32_t)l->rows.pods.n, NULL, &err);
    if (!l->w)
        fail_msg("%s", err.msg);
}

static void unload(loaded *l)
{
    gs_fgd_workload_free(l->w);
    gs_openb_free(&l->rows);
}

/* Check values 2: empty-cluster fragmentation in % of capacity, within 0.01. */
static void test_empty_cluster_frag(void **state)
{
    (void)state;
    static const struct {
        const char *trace;
        double pct;
    } want[] = {
        {"default", 13.945},  {"cpu050", 5.553},    {"cpu250", 25.874},
        {"gpushare100", 13.642}, {"gpuspec33", 35.487}, {"multigpu50", 14.731},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        loaded l;
        load_trace(&l, want[i].trace);
        double pct = 100.0 * gs_fgd_workload_empty_frag(l.w) / 1000.0 / gs_fgd_workload_gpus(l.w);
        if (fabs(pct - want[i].pct) > 0.01)
            fail_msg("%s: empty-cluster fragmentation %.4f%%, expected %.3f%%", want[i].trace, pct,
                     want[i].pct);
        unload(&l);
    }
}

static void test_default_workload(void **state)
{
    (void)state;
    loaded l;
    load_trace(&l, "default");
    assert_int_equal(gs_fgd_workload_nnodes(l.w), 1213);
    assert_int_equal(gs_fgd_workload_gpus(l.w), 6212);
    assert_int_equal(gs_fgd_workload_npods(l.w), 8152);
    /* 97.98% of 6212 GPUs */
    assert_true(fabs(100.0 * gs_fgd_workload_gpu_request(l.w) / 6212000.0 - 97.98) < 0.01);
    const gs_frag_target *t = gs_fgd_workload_target(l.w);
    assert_int_equal(t->nkeys, 91);
    assert_int_equal(t->ntypes, 35);
    assert_true(fabs(100 * t->coverage - 95.26) < 0.01);
    /* the first keys: (3152m, 810 x 1) 13.5%, then (11300m, 1 GPU) 11.3% and (11400m) 7.7% */
    assert_int_equal(t->types[0].res.cpu_milli, 3152);
    assert_int_equal(t->types[0].res.gpu_milli, 810);
    assert_true(fabs(100 * t->types[0].weight - 13.5) < 0.05);
    assert_int_equal(t->types[1].res.cpu_milli, 11300);
    assert_int_equal(t->types[2].res.cpu_milli, 11400);
    double cpu_only = 0;
    for (uint32_t i = 0; i < t->ntypes; i++)
        if (t->types[i].res.gpu_milli == 0)
            cpu_only += t->types[i].weight;
    assert_true(fabs(100 * cpu_only - 13.6) < 0.05);
    unload(&l);
    load_trace(&l, "gpuspec33");
    assert_int_equal(gs_fgd_workload_target(l.w)->ntypes, 127);
    unload(&l);
}

static char *csv_lines(const gs_fgd_result *r)
{
    gs_strbuf sb = GS_STRBUF_INIT;
    for (int k = 0; k < 3; k++) {
        gs_fgd_csv_row(r, (gs_fgd_csv)k, "default", &sb);
        gs_strbuf_putc(&sb, '\n');
    }
    gs_fgd_csv_fail_rows(r, "default", &sb);
    return gs_strbuf_detach(&sb);
}

typedef struct job {
    const gs_fgd_workload *w;
    const char *policy;
    uint64_t seed;
    char *lines;
    int rc;
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    gs_fgd_opts o;
    gs_fgd_opts_defaults(&o);
    o.policy = j->policy;
    o.seed = j->seed;
    gs_fgd_result r;
    j->rc = gs_fgd_run(j->w, &o, &r, NULL);
    if (j->rc == 0) {
        j->lines = csv_lines(&r);
        gs_fgd_result_free(&r);
    }
    return NULL;
}

/* Same input and seed: byte-identical CSV lines, sequentially and from parallel threads. */
static void test_determinism_threads(void **state)
{
    (void)state;
    loaded l;
    load_trace(&l, "default");
    static const char *const pols[] = {"fgd", "random", "gpu-packing", "fgd"};
    job seq[4], par[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        seq[i] = (job){l.w, pols[i], (uint64_t)(42 + (i == 3)), NULL, -1};
        run_job(&seq[i]);
        assert_int_equal(seq[i].rc, 0);
        par[i] = (job){l.w, pols[i], (uint64_t)(42 + (i == 3)), NULL, -1};
    }
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, run_job, &par[i]), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(par[i].rc, 0);
        assert_string_equal(seq[i].lines, par[i].lines);
    }
    assert_true(strcmp(seq[0].lines, seq[3].lines) != 0); /* seed 43 differs */
    for (int i = 0; i < 4; i++) {
        free(seq[i].lines);
        free(par[i].lines);
    }
    unload(&l);
}

/* Every policy, same seed: identical arrivals, and identical allocation until the first
 * failed pod; FGD allocates more than every baseline at x = 100 and 130. */
static void test_policies_on_default(void **state)
{
    (void)state;
    loaded l;
    load_trace(&l, "default");
    uint32_t np;
    const gs_fgd_policy_info *pol = gs_fgd_policies(&np);
    gs_fgd_result r[8];
    for (uint32_t i = 0; i < np && i < 8; i++) {
        gs_fgd_opts o;
        gs_fgd_opts_defaults(&o);
        o.policy = pol[i].name;
        gs_error err;
        if (gs_fgd_run(l.w, &o, &r[i], &err) < 0)
            fail_msg("%s", err.msg);
    }
    for (uint32_t i = 1; i < np; i++) {
        assert_int_equal(r[i].nevents, r[0].nevents);
        uint32_t upto = r[i].first_failure < r[0].first_failure ? r[i].first_failure
                                                                : r[0].first_failure;
        assert_true(upto > 500);
        for (uint32_t e = 0; e < r[0].nevents; e++) {
            assert_int_equal(r[i].events[e].arrived_milli, r[0].events[e].arrived_milli);
            if (e < upto)
                assert_int_equal(r[i].events[e].used_milli, r[0].events[e].used_milli);
        }
    }
    assert_int_equal(r[0].curves.nx, 131);
    for (uint32_t i = 0; i < 5; i++) {
        assert_true(r[5].curves.alloc[100] > r[i].curves.alloc[100]);
        assert_true(r[5].curves.alloc[130] > r[i].curves.alloc[130]);
    }
    for (uint32_t x = 0; x < 131; x++)
        assert_false(isnan(r[5].curves.alloc[x]));
    for (uint32_t i = 0; i < np; i++)
        gs_fgd_result_free(&r[i]);
    unload(&l);
}

/* openb rows as snapshot objects for the replay method. */
static void test_snapshot_conversion(void **state)
{
    (void)state;
    char nodes[1200], pods[1200];
    path_of(nodes, sizeof nodes, "openb_node_list_all_node.csv");
    path_of(pods, sizeof pods, "openb_pod_list_default.csv");
    gs_openb rows;
    gs_openb_init(&rows);
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_openb_read_nodes(&rows, nodes, NULL, &err), 0);
    assert_int_equal(gs_openb_read_pods(&rows, pods, NULL, &err), 0);
    gs_snapshot snap;
    gs_snapshot_init(&snap);
    assert_int_equal(gs_openb_add_nodes(&snap, &rows, &err), 0);
    assert_int_equal(gs_openb_add_pods(&snap, &rows, NULL, &err), 0);
    assert_int_equal(gs_snapshot_finish(&snap, &err), 0);
    assert_int_equal(snap.nodes.n, 1523);
    assert_int_equal(snap.pods.n, 8152);
    assert_int_equal(snap.priority_classes.n, 3);
    uint32_t gpus = 0, cpu_nodes = 0;
    for (size_t i = 0; i < snap.nodes.n; i++) {
        gs_node_gpus g;
        if (gs_node_gpus_build(&snap.nodes.v[i], &g, &err) < 0)
            fail_msg("%s: %s", snap.nodes.v[i].meta.name, err.msg);
        gpus += g.ndevs;
        if (!gs_reslist_get(&snap.nodes.v[i].allocatable, "alibabacloud.com/gpu-count")) {
            cpu_nodes++;
            assert_int_equal(g.ndevs, 0);
        }
        gs_node_gpus_free(&g);
    }
    assert_int_equal(gpus, 6212);
    assert_int_equal(cpu_nodes, 310);
    int64_t *arrival = malloc(sizeof(int64_t) * snap.pods.n);
    int64_t *duration = malloc(sizeof(int64_t) * snap.pods.n);
    assert_int_equal(gs_trace_times(&snap, arrival, duration, &err), 0);
    /* openb-pod-0001: 6000m, 1 x 460, LS, created 427061, deleted 12902960, scheduled 427061 */
    const gs_pod *p = &snap.pods.v[1];
    assert_string_equal(p->meta.name, "openb-pod-0001");
    assert_string_equal(p->priority_class_name, "latency-sensitive");
    assert_int_equal(arrival[1], 427061);
    assert_int_equal(duration[1], 12902960 - 427061);
    gs_gpu_request req;
    assert_int_equal(gs_gpu_request_from_pod(p, &req, &err), 0);
    assert_int_equal(req.kind, GS_GPU_SHARE);
    assert_int_equal(req.milli, 460);
    assert_int_equal(req.count, 1);
    free(arrival);
    free(duration);
    gs_snapshot_free(&snap);
    gs_openb_free(&rows);
}

int main(void)
{
    const char *shared = getenv("GS_SHARED");
    snprintf(openb_dir, sizeof openb_dir, "%s/data/openb", shared && *shared ? shared : "../shared");
    char probe[1200];
    path_of(probe, sizeof probe, "openb_pod_list_default.csv");
    if (access(probe, R_OK) != 0) {
        printf("SKIP: openb trace not found at %s (set GS_SHARED to the shared folder)\n",
               openb_dir);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_cluster_frag),
        cmocka_unit_test(test_default_workload),
        cmocka_unit_test(test_determinism_threads),
        cmocka_unit_test(test_policies_on_default),
        cmocka_unit_test(test_snapshot_conversion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
