/* test_report.c - simulate's run records and reports: percentiles, replay metrics (pending
 * time per class and shape, stranded GPUs, reasons, conservation), the allocation curve
 * over arrived load, JSON round trips, shard merging, CSV and HTML writers, determinism. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpusched/report.h"
#include "test_snapshot_util.h"

/* ---------------------------------------------------------------- fixtures */

/* One GPU node (2 GPUs, 8 cores); classes hi (1000) and lo (10). */
#define CLUSTER                                                                            \
    "apiVersion: v1\nkind: Node\nmetadata: {name: g1}\nstatus:\n  allocatable: {cpu: \"8\", " \
    "memory: 64Gi, pods: \"110\", nvidia.com/gpu: \"2\"}\n---\n"                             \
    "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: hi}\nvalue: "    \
    "1000\n---\n"                                                                             \
    "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: lo}\nvalue: "    \
    "10\n---\n"
#define GPOD(name, cls, gpus)                                                              \
    "apiVersion: v1\nkind: Pod\nmetadata: {name: " name ", namespace: ml}\nspec:\n"           \
    "  priorityClassName: " cls "\n  containers:\n  - {name: c, resources: {limits: {cpu: "  \
    "\"1\", nvidia.com/gpu: \"" gpus "\"}}}\n---\n"
#define CPOD(name, cls, cpu)                                                               \
    "apiVersion: v1\nkind: Pod\nmetadata: {name: " name ", namespace: web}\nspec:\n"          \
    "  priorityClassName: " cls "\n  containers:\n  - {name: c, resources: {requests: {cpu: " \
    "\"" cpu "\"}}}\n---\n"

/* a (lo, 2 GPUs, arrives 0, runs 100), b (lo, 1 GPU, arrives 10, runs 50), c (hi, 1 GPU,
 * arrives 20, runs 30; with preemption it evicts a), w (hi, CPU-only, 6 cores, arrives 30,
 * forever), x (lo, 1 GPU, arrives 40, forever). */
static void run_small(gs_snapshot *s, gs_replay_result *res, bool no_preemption)
{
    load(s, CLUSTER GPOD("a", "lo", "2") GPOD("b", "lo", "1") GPOD("c", "hi", "1")
                CPOD("w", "hi", "6") GPOD("x", "lo", "1"));
    int64_t arr[5], dur[5];
    const char *names[5] = {"a", "b", "c", "w", "x"};
    int64_t at[5] = {0, 10, 20, 30, 40}, du[5] = {100, 50, 30, GS_REPLAY_FOREVER, GS_REPLAY_FOREVER};
    for (int i = 0; i < 5; i++) {
        uint32_t k = pod_index(s, names[i]);
        arr[k] = at[i];
        dur[k] = du[i];
    }
    gs_replay_opts o;
    gs_replay_opts_defaults(&o);
    o.cfg.preemption = !no_preemption;
    o.sample_every = 10;
    gs_error err;
    if (gs_replay_run(s, arr, dur, &o, res, &err))
        fail_msg("replay: %s", err.msg);
}

/* ---------------------------------------------------------------- tests */

static void test_percentile(void **state)
{
    (void)state;
    int64_t v[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    assert_int_equal(gs_percentile(v, 10, 0), 1);
    assert_int_equal(gs_percentile(v, 10, 50), 5);
    assert_int_equal(gs_percentile(v, 10, 90), 9);
    assert_int_equal(gs_percentile(v, 10, 95), 10);
    assert_int_equal(gs_percentile(v, 10, 100), 10);
    assert_int_equal(gs_percentile(v, 0, 50), 0);
    int64_t h[100];
    for (int i = 0; i < 100; i++)
        h[i] = i + 1;
    assert_int_equal(gs_percentile(h, 100, 99), 99);
    assert_int_equal(gs_percentile(h, 100, 95), 95);
    int64_t one = 7;
    assert_int_equal(gs_percentile(&one, 1, 99), 7);
}

static void test_format_duration(void **state)
{
    (void)state;
    char b[32];
    const struct {
        int64_t s;
        const char *want;
    } cases[] = {{0, "0s"},        {45, "45s"},        {200, "3m20s"},   {2400, "40m"},
                 {3600, "1h"},     {7500, "2h5m"},     {86400, "1d"},    {273600, "3d4h"},
                 {-90, "-1m30s"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gs_format_duration(cases[i].s, b, sizeof b);
        assert_string_equal(b, cases[i].want);
    }
}

static void test_pod_gpu_amount(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, GPOD("two", "lo", "2") CPOD("cpu", "lo", "1")
         "apiVersion: v1\nkind: Pod\nmetadata: {name: share, annotations: {gpu-milli: \"250\", "
         "gpu-count: \"1\"}}\nspec:\n  containers:\n  - {name: c}\n---\n"
         "apiVersion: v1\nkind: Pod\nmetadata: {name: mig}\nspec:\n  containers:\n  - {name: c, "
         "resources: {limits: {nvidia.com/mig-3g.40gb: \"1\"}}}\n");
    assert_true(fabs(gs_pod_gpu_amount(&s.pods.v[pod_index(&s, "two")]) - 2.0) < 1e-12);
    assert_true(gs_pod_gpu_amount(&s.pods.v[pod_index(&s, "cpu")]) == 0.0);
    assert_true(fabs(gs_pod_gpu_amount(&s.pods.v[pod_index(&s, "share")]) - 0.25) < 1e-12);
    assert_true(fabs(gs_pod_gpu_amount(&s.pods.v[pod_index(&s, "mig")]) - 3.0 / 7.0) < 1e-12);
    gs_snapshot_free(&s);
}

static const gs_wait_stats *cls(const gs_replay_metrics *m, const char *name)
{
    for (uint32_t i = 0; i < m->nclasses; i++)
        if (strcmp(m->classes[i].name, name) == 0)
            return &m->classes[i];
    fail_msg("no class %s", name);
    return NULL;
}

static const gs_wait_stats *shape(const gs_replay_metrics *m, const char *name)
{
    for (uint32_t i = 0; i < m->nshapes; i++)
        if (strcmp(m->shapes[i].name, name) == 0)
            return &m->shapes[i];
    fail_msg("no shape %s", name);
    return NULL;
}

static void test_metrics(void **state)
{
    (void)state;
    gs_snapshot s;
    gs_replay_result res;
    run_small(&s, &res, true); /* no preemption: c waits for a GPU */
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_replay_metrics m;
    gs_error err;
    assert_int_equal(gs_replay_metrics_compute(&s, &res, &a, &m, &err), 0);
    /* a runs 0..100 on both GPUs; b (t=10) and c (t=20) wait; at 100 c (hi) goes first, then
     * b takes the second GPU; x (t=40) never gets one while b and c ... c leaves at 130,
     * then x starts at 130 */
    assert_int_equal(m.arrived, 5);
    assert_int_equal(m.rejected, 0);
    assert_int_equal(m.done + m.running + m.pending + m.rejected + m.lost, m.arrived);
    const gs_wait_stats *hi = cls(&m, "hi"), *lo = cls(&m, "lo");
    assert_int_equal(m.nclasses, 2);
    assert_string_equal(m.classes[0].name, "hi"); /* priority descending */
    assert_int_equal(hi->priority, 1000);
    assert_int_equal(hi->pods, 2);
    assert_int_equal(hi->max, 80); /* c: 20 -> 100 */
    assert_int_equal(lo->pods, 3);
    uint32_t b = pod_index(&s, "b"), x = pod_index(&s, "x");
    assert_int_equal(res.pods[b].waited, 90);
    assert_int_equal(res.pods[x].first_start, 130);
    assert_int_equal(lo->max, 90);
    assert_int_equal(lo->p50, 90);   /* waits {0, 90, 90}: nearest rank 2 of 3 */
    assert_int_equal(lo->cdf[0], 0);
    assert_int_equal(lo->cdf[20], 90);
    assert_int_equal(m.all.pods, 5);
    /* shapes */
    assert_int_equal(shape(&m, "1 GPU")->pods, 3);
    assert_int_equal(shape(&m, "2 GPUs")->pods, 1);
    assert_int_equal(shape(&m, "no GPU")->pods, 1);
    assert_string_equal(m.shapes[0].name, "1 GPU"); /* most pods first */
    /* the series is sampled every 10 s and time-averaged */
    assert_true(m.nseries > 10);
    assert_true(m.alloc_peak_pct == 100.0);
    assert_int_equal(m.gpu_nodes, 1);
    assert_int_equal(m.nodes, 1);
    gs_arena_free(&a);
    gs_replay_result_free(&res);
    gs_snapshot_free(&s);
}

static void test_stranded_and_reasons(void **state)
{
    (void)state;
    /* a CPU-only pod takes 7 of the node's 8 cores: both GPUs are stranded (one GPU needs
     * 4 cores at the node's ratio); the GPU pod asks 2 cores and stays pending */
    gs_snapshot s;
    load(&s, CLUSTER CPOD("w", "hi", "7")
         "apiVersion: v1\nkind: Pod\nmetadata: {name: g, namespace: ml}\nspec:\n"
         "  priorityClassName: lo\n  containers:\n  - {name: c, resources: {limits: {cpu: "
         "\"2\", nvidia.com/gpu: \"1\"}}}\n");
    uint32_t w = pod_index(&s, "w");
    int64_t arr[2], dur[2];
    arr[w] = 0;
    arr[1 - w] = 10;
    dur[w] = GS_REPLAY_FOREVER;
    dur[1 - w] = 50;
    gs_replay_opts o;
    gs_replay_opts_defaults(&o);
    gs_replay_result res;
    gs_error err;
    assert_int_equal(gs_replay_run(&s, arr, dur, &o, &res, &err), 0);
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_replay_metrics m;
    assert_int_equal(gs_replay_metrics_compute(&s, &res, &a, &m, &err), 0);
    assert_int_equal(m.stranded_peak, 2);
    assert_int_equal(m.never_started, 1);
    assert_int_equal(m.never_started_gpu, 1);
    assert_int_equal(m.nreasons, 1);
    assert_false(m.reasons[0].rejected);
    assert_int_equal(m.reasons[0].pods, 1);
    assert_non_null(strstr(m.reasons[0].reason, "Insufficient cpu"));
    assert_int_equal(cls(&m, "lo")->never_started, 1);
    gs_arena_free(&a);
    gs_replay_result_free(&res);
    gs_snapshot_free(&s);
}

static void test_curve(void **state)
{
    (void)state;
    /* 4 one-GPU pods on a 4-GPU node arriving at 0, 10, 20, 30, forever: arrived load 25,
     * 50, 75, 100 % with allocation equal to it */
    gs_snapshot s;
    load(&s, "apiVersion: v1\nkind: Node\nmetadata: {name: g1}\nstatus:\n  allocatable: {cpu: "
             "\"8\", memory: 64Gi, pods: \"110\", nvidia.com/gpu: \"4\"}\n---\n"
             "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: lo}\n"
             "value: 10\n---\n" GPOD("p0", "lo", "1") GPOD("p1", "lo", "1") GPOD("p2", "lo", "1")
             GPOD("p3", "lo", "1"));
    int64_t arr[4], dur[4];
    for (int i = 0; i < 4; i++) {
        char n[4] = {'p', (char)('0' + i), 0, 0};
        arr[pod_index(&s, n)] = 10 * i;
        dur[i] = GS_REPLAY_FOREVER;
    }
    gs_replay_opts o;
    gs_replay_opts_defaults(&o);
    o.sample_every = 10;
    gs_replay_result res;
    gs_error err;
    assert_int_equal(gs_replay_run(&s, arr, dur, &o, &res, &err), 0);
    gs_sim_run run;
    assert_int_equal(gs_sim_run_from_replay(&run, 3, "w", "", "default", 7, 1.0, &s, &res, &err), 0);
    assert_int_equal(run.nx, 101);
    assert_true(run.alloc[25] == 25.0);
    assert_true(run.alloc[24] == 25.0); /* no event at 24: the neighbours 23..25 */
    assert_true(run.alloc[26] == 25.0);
    assert_true(isnan(run.alloc[27]));
    assert_true(run.alloc[100] == 100.0);
    assert_true(isnan(run.alloc[10]));
    assert_true(run.alloc[0] == 0.0 || isnan(run.alloc[0]));
    assert_true(isnan(run.frag[50]));
    assert_int_equal(run.index, 3);
    assert_int_equal(run.seed, 7);
    assert_int_equal(run.pods, 4);
    assert_int_equal(run.failed, 0);
    assert_true(run.final_alloc_pct == 100.0);
    gs_sim_run_free(&run);
    gs_replay_result_free(&res);
    gs_snapshot_free(&s);
}

/* A small FGD run on hand-made openb rows. */
static void fgd_run(gs_sim_run *out, uint32_t index, const char *policy, uint64_t seed)
{
    static const char nodes[] = "sn,cpu_milli,memory_mib,gpu,model\n"
                                "n1,32000,131072,2,V100M16\nn2,32000,131072,4,T4\n"
                                "n3,16000,65536,0,\n";
    static const char pods[] =
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos\n"
        "p1,4000,8192,1,500,,LS\np2,8000,8192,1,1000,,BE\np3,2000,4096,0,0,,BE\n"
        "p4,4000,8192,2,1000,T4,LS\np5,4000,8192,1,250,V100M16|T4,LS\n";
    gs_openb t;
    gs_openb_init(&t);
    gs_error err;
    if (gs_openb_parse_nodes(&t, "n.csv", nodes, strlen(nodes), NULL, &err) ||
        gs_openb_parse_pods(&t, "p.csv", pods, strlen(pods), NULL, &err))
        fail_msg("openb: %s", err.msg);
    gs_fgd_workload *w = gs_fgd_workload_new(t.nodes.v, (uint32_t)t.nodes.n, t.pods.v,
                                             (uint32_t)t.pods.n, NULL, &err);
    assert_non_null(w);
    gs_fgd_opts o;
    gs_fgd_opts_defaults(&o);
    o.policy = policy;
    o.seed = seed;
    o.tune = 1.3;
    gs_fgd_result r;
    assert_int_equal(gs_fgd_run(w, &o, &r, &err), 0);
    assert_int_equal(gs_sim_run_from_fgd(out, index, "tiny", "", &r, &err), 0);
    assert_int_equal(out->nx, r.curves.nx);
    assert_string_equal(out->label, r.label);
    /* the CSV row is the artifact's own */
    gs_strbuf a = GS_STRBUF_INIT;
    gs_fgd_csv_row(&r, GS_FGD_CSV_ALLOC, "tiny", &a);
    gs_sim_report rep;
    gs_sim_report_init(&rep);
    gs_sim_run copy;
    assert_int_equal(gs_sim_run_from_fgd(&copy, 0, "tiny", "", &r, &err), 0);
    assert_int_equal(gs_sim_report_add(&rep, &copy, &err), 0);
    gs_strbuf b = GS_STRBUF_INIT;
    gs_report_csv(&rep, GS_FGD_CSV_ALLOC, &b);
    const char *row = strchr(gs_strbuf_cstr(&b), '\n') + 1;
    assert_memory_equal(row, a.buf, a.len);
    assert_int_equal(row[a.len], '\n');
    gs_sim_report_free(&rep);
    gs_strbuf_free(&a);
    gs_strbuf_free(&b);
    gs_fgd_result_free(&r);
    gs_fgd_workload_free(w);
    gs_openb_free(&t);
}

/* A report of 4 runs: 2 FGD, 2 replay (indexes 0..3), sweep as given. */
static void build_report(gs_sim_report *rep, uint32_t shard, uint32_t nshards)
{
    gs_sim_report_init(rep);
    gs_error err;
    gs_sim_sweep sw = {"mixed", "test sweep", 4, shard, nshards};
    assert_int_equal(gs_sim_report_set_sweep(rep, &sw, &err), 0);
    for (uint32_t i = 0; i < 4; i++) {
        if (i % nshards != shard)
            continue;
        gs_sim_run r;
        if (i < 2) {
            fgd_run(&r, i, i ? "bestfit" : "fgd", 42);
        } else {
            gs_snapshot s;
            gs_replay_result res;
            run_small(&s, &res, i == 3);
            assert_int_equal(gs_sim_run_from_replay(&r, i, "small<&>\"x\"", i == 3 ? "gpu-taint" : "",
                                                    "default", 42, 0.5, &s, &res, &err),
                             0);
            gs_replay_result_free(&res);
            gs_snapshot_free(&s);
        }
        assert_int_equal(gs_sim_report_add(rep, &r, &err), 0);
    }
    assert_int_equal(gs_sim_report_sort(rep, &err), 0);
}

static char *json_of(const gs_sim_report *rep)
{
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_report_json(rep, &sb);
    assert_false(sb.oom);
    return gs_strbuf_detach(&sb);
}

static void test_json_roundtrip(void **state)
{
    (void)state;
    gs_sim_report rep;
    build_report(&rep, 0, 1);
    char *j1 = json_of(&rep);
    gs_sim_report back;
    gs_sim_report_init(&back);
    gs_error err;
    gs_error_clear(&err);
    if (gs_report_read_json(&back, "r.json", j1, strlen(j1), &err))
        fail_msg("read back: %s:%d:%d: %s", err.file, err.line, err.col, err.msg);
    assert_int_equal(back.runs.n, 4);
    char *j2 = json_of(&back);
    assert_string_equal(j1, j2);
    /* every other writer gives the same bytes from the read-back report */
    for (int w = 0; w < 5; w++) {
        gs_strbuf a = GS_STRBUF_INIT, b = GS_STRBUF_INIT;
        if (w < 3) {
            gs_report_csv(&rep, (gs_fgd_csv)w, &a);
            gs_report_csv(&back, (gs_fgd_csv)w, &b);
        } else if (w == 3) {
            gs_report_csv_fail(&rep, &a);
            gs_report_csv_fail(&back, &b);
        } else {
            gs_report_html(&rep, "t", &a);
            gs_report_html(&back, "t", &b);
        }
        assert_string_equal(gs_strbuf_cstr(&a), gs_strbuf_cstr(&b));
        gs_strbuf_free(&a);
        gs_strbuf_free(&b);
    }
    gs_strbuf p = GS_STRBUF_INIT;
    gs_report_csv_pending(&back, &p);
    assert_non_null(strstr(gs_strbuf_cstr(&p), "\"small<&>\"\"x\"\"\",default,42,class,hi,1000,2,"));
    gs_strbuf_free(&p);
    free(j1);
    free(j2);
    gs_sim_report_free(&back);
    gs_sim_report_free(&rep);
}

/* A MIG replay (static and dynamic): the "mig" object and the MIG series columns go
 * through JSON and back unchanged, and feed the HTML report's MIG table. */
static void test_json_roundtrip_mig(void **state)
{
    (void)state;
    static const char yaml[] =
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: h1\n  labels: {nvidia.com/gpu.product: "
        "NVIDIA-H100-80GB-HBM3, nvidia.com/gpu.count: \"1\", nvidia.com/mig.strategy: mixed}\n"
        "status:\n  allocatable: {cpu: \"8\", memory: 64Gi, pods: \"110\", "
        "nvidia.com/mig-1g.10gb: \"7\"}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: big, namespace: inf}\nspec:\n  containers:\n"
        "  - {name: c, resources: {limits: {cpu: \"1\", nvidia.com/mig-7g.80gb: \"1\"}}}\n";
    gs_snapshot s;
    load(&s, yaml);
    int64_t arr[1] = {0}, dur[1] = {100};
    gs_sim_report rep;
    gs_sim_report_init(&rep);
    gs_error err;
    gs_error_clear(&err);
    gs_sim_sweep sw = {"replay", "mig sweep", 2, 0, 1};
    assert_int_equal(gs_sim_report_set_sweep(&rep, &sw, &err), 0);
    for (uint32_t i = 0; i < 2; i++) {
        gs_replay_opts o;
        gs_replay_opts_defaults(&o);
        o.mig_dynamic = i == 1;
        o.mig_delay = 30;
        o.sample_every = 10;
        gs_replay_result res;
        assert_int_equal(gs_replay_run(&s, arr, dur, &o, &res, &err), 0);
        gs_sim_run r;
        assert_int_equal(gs_sim_run_from_replay(&r, i, "mig", i ? "mig-dynamic" : "", "default",
                                                42, 1, &s, &res, &err),
                         0);
        assert_int_equal(r.replay.mig_gpus, 1);
        assert_int_equal(r.replay.mig_slices, 7);
        assert_int_equal(r.replay.mig_reconfigs, i);
        assert_true(r.replay.mig_dynamic == (i == 1));
        gs_replay_result_free(&res);
        assert_int_equal(gs_sim_report_add(&rep, &r, &err), 0);
    }
    assert_int_equal(gs_sim_report_sort(&rep, &err), 0);
    /* static: the 7g pod never runs, the seven 1g instances idle all along */
    assert_true(rep.runs.v[0].replay.mig_idle_mean == 7.0);
    assert_int_equal(rep.runs.v[0].replay.mig_reconfiguring_peak, 0);
    assert_int_equal(rep.runs.v[1].replay.mig_reconfiguring_peak, 1);
    char *j1 = json_of(&rep);
    assert_non_null(strstr(j1, "\"policy\": \"dynamic\""));
    assert_non_null(strstr(j1, "\"delay\": 30"));
    assert_non_null(strstr(j1, "\"migUnpartitioned\""));
    gs_sim_report back;
    gs_sim_report_init(&back);
    if (gs_report_read_json(&back, "r.json", j1, strlen(j1), &err))
        fail_msg("read back: %s:%d:%d: %s", err.file, err.line, err.col, err.msg);
    char *j2 = json_of(&back);
    assert_string_equal(j1, j2);
    gs_strbuf a = GS_STRBUF_INIT, b = GS_STRBUF_INIT;
    gs_report_html(&rep, "t", &a);
    gs_report_html(&back, "t", &b);
    assert_string_equal(gs_strbuf_cstr(&a), gs_strbuf_cstr(&b));
    assert_non_null(strstr(gs_strbuf_cstr(&a), "<h2>MIG</h2>"));
    assert_non_null(strstr(gs_strbuf_cstr(&a), "dynamic, 30s"));
    gs_strbuf_free(&a);
    gs_strbuf_free(&b);
    /* a bad policy is refused with its position */
    char *bad = strstr(j1, "\"policy\": \"dynamic\"");
    memcpy(bad + 11, "dynamix", 7);
    gs_sim_report m;
    gs_sim_report_init(&m);
    assert_int_equal(gs_report_read_json(&m, "bad.json", j1, strlen(j1), &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_non_null(strstr(err.msg, "static or dynamic"));
    gs_sim_report_free(&m);
    free(j1);
    free(j2);
    gs_sim_report_free(&back);
    gs_sim_report_free(&rep);
    gs_snapshot_free(&s);
}

static void test_merge(void **state)
{
    (void)state;
    gs_sim_report whole, s0, s1;
    build_report(&whole, 0, 1);
    build_report(&s0, 0, 2);
    build_report(&s1, 1, 2);
    char *jw = json_of(&whole), *j0 = json_of(&s0), *j1 = json_of(&s1);
    gs_sim_report m;
    gs_sim_report_init(&m);
    gs_error err;
    assert_int_equal(gs_report_read_json(&m, "s1.json", j1, strlen(j1), &err), 0);
    assert_int_equal(gs_report_read_json(&m, "s0.json", j0, strlen(j0), &err), 0);
    assert_int_equal(gs_report_merge_finish(&m, &err), 0);
    char *jm = json_of(&m);
    assert_string_equal(jm, jw);
    free(jm);
    gs_sim_report_free(&m);

    /* a missing shard */
    gs_sim_report_init(&m);
    assert_int_equal(gs_report_read_json(&m, "s0.json", j0, strlen(j0), &err), 0);
    assert_int_equal(gs_report_merge_finish(&m, &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_non_null(strstr(err.msg, "runs 1, 3"));
    gs_sim_report_free(&m);

    /* the same shard twice */
    gs_sim_report_init(&m);
    assert_int_equal(gs_report_read_json(&m, "s0.json", j0, strlen(j0), &err), 0);
    assert_int_equal(gs_report_read_json(&m, "s0.json", j0, strlen(j0), &err), 0);
    assert_int_equal(gs_report_merge_finish(&m, &err), -1);
    assert_non_null(strstr(err.msg, "twice"));
    gs_sim_report_free(&m);

    /* another sweep */
    gs_sim_report other;
    build_report(&other, 1, 2);
    other.sweep.fingerprint = "other options";
    char *jo = json_of(&other);
    gs_sim_report_init(&m);
    assert_int_equal(gs_report_read_json(&m, "s0.json", j0, strlen(j0), &err), 0);
    assert_int_equal(gs_report_read_json(&m, "o.json", jo, strlen(jo), &err), -1);
    assert_non_null(strstr(err.msg, "another sweep"));
    assert_string_equal(err.file, "o.json");
    gs_sim_report_free(&m);
    gs_sim_report_free(&other);
    free(jo);
    free(jw);
    free(j0);
    free(j1);
    gs_sim_report_free(&whole);
    gs_sim_report_free(&s0);
    gs_sim_report_free(&s1);
}

static void test_json_errors(void **state)
{
    (void)state;
    const struct {
        const char *text;
        gs_code code;
        int line, col;
    } cases[] = {
        {"{\"kind\": \"SimulationReport\",\n \"sweep\": [1,}", GS_ERR_PARSE, 2, 14},
        {"{\"kind\": \"Other\"}", GS_ERR_INVALID, 1, 1},
        {"{\"kind\": \"SimulationReport\"}", GS_ERR_INVALID, 1, 1},
        {"[1, 2] x", GS_ERR_PARSE, 1, 8},
        {"{\"a\": \"\\u0000\"}", GS_ERR_PARSE, 1, 8},
        {"", GS_ERR_PARSE, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gs_sim_report m;
        gs_sim_report_init(&m);
        gs_error err;
        gs_error_clear(&err);
        assert_int_equal(gs_report_read_json(&m, "bad.json", cases[i].text, strlen(cases[i].text), &err), -1);
        assert_int_equal(err.code, cases[i].code);
        assert_int_equal(err.line, cases[i].line);
        assert_int_equal(err.col, cases[i].col);
        assert_string_equal(err.file, "bad.json");
        gs_sim_report_free(&m);
    }
    /* deep nesting is bounded */
    char deep[400];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = 0;
    gs_sim_report m;
    gs_sim_report_init(&m);
    gs_error err;
    assert_int_equal(gs_report_read_json(&m, "deep.json", deep, strlen(deep), &err), -1);
    assert_non_null(strstr(err.msg, "deeper"));
    gs_sim_report_free(&m);
}

static void test_html(void **state)
{
    (void)state;
    gs_strbuf e = GS_STRBUF_INIT;
    gs_html_escape(&e, "<a href='x'>&\"\x01");
    assert_string_equal(gs_strbuf_cstr(&e), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&#65533;");
    gs_strbuf_free(&e);
    gs_sim_report rep;
    build_report(&rep, 0, 1);
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_report_html(&rep, "<script>alert(1)</script>", &sb);
    const char *h = gs_strbuf_cstr(&sb);
    assert_null(strstr(h, "<script>alert"));
    assert_non_null(strstr(h, "&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_null(strstr(h, "small<&>"));
    assert_non_null(strstr(h, "small&lt;&amp;&gt;&quot;x&quot;"));
    /* self-contained: no external reference */
    assert_null(strstr(h, "src="));
    assert_null(strstr(h, "href="));
    assert_null(strstr(h, "@import"));
    assert_null(strstr(h, "https:"));
    /* charts: allocation, fragmentation, a CDF per replay group, three over time */
    int charts = 0;
    for (const char *p = h; (p = strstr(p, "<svg class=\"chart\"")); p++)
        charts++;
    assert_int_equal(charts, 7);
    assert_non_null(strstr(h, "<g class=\"plot\">\n<path stroke="));
    assert_non_null(strstr(h, "Why pods stayed pending"));
    assert_true(strncmp(h, "<!DOCTYPE html>", 15) == 0);
    assert_non_null(strstr(h, "</html>\n"));
    gs_strbuf_free(&sb);
    gs_sim_report_free(&rep);
}

static void test_determinism(void **state)
{
    (void)state;
    gs_sim_report a, b;
    build_report(&a, 0, 1);
    build_report(&b, 0, 1);
    char *ja = json_of(&a), *jb = json_of(&b);
    assert_string_equal(ja, jb);
    gs_strbuf ha = GS_STRBUF_INIT, hb = GS_STRBUF_INIT;
    gs_report_html(&a, "t", &ha);
    gs_report_html(&b, "t", &hb);
    assert_string_equal(gs_strbuf_cstr(&ha), gs_strbuf_cstr(&hb));
    gs_strbuf_free(&ha);
    gs_strbuf_free(&hb);
    free(ja);
    free(jb);
    gs_sim_report_free(&a);
    gs_sim_report_free(&b);
}

/* Random workloads: every arrival ends placed, pending, rejected, lost or departed, and
 * the metrics count each pod exactly once. */
static void test_conservation(void **state)
{
    (void)state;
    gs_rng rng;
    gs_rng_seed(&rng, 11);
    for (int round = 0; round < 4; round++) {
        gs_strbuf sb = GS_STRBUF_INIT;
        gs_strbuf_puts(&sb, CLUSTER
                       "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: ml}\n"
                       "spec:\n  hard: {requests.nvidia.com/gpu: \"3\"}\n---\n");
        int n = 40;
        int64_t *arr = calloc((size_t)n, sizeof *arr), *dur = calloc((size_t)n, sizeof *dur);
        for (int i = 0; i < n; i++)
            gs_strbuf_printf(&sb,
                             "apiVersion: v1\nkind: Pod\nmetadata: {name: p%02d, namespace: %s}\n"
                             "spec:\n  priorityClassName: %s\n  containers:\n  - {name: c, "
                             "resources: {limits: {cpu: \"%d\", nvidia.com/gpu: \"%d\"}}}\n---\n",
                             i, gs_rng_below(&rng, 2) ? "ml" : "web",
                             gs_rng_below(&rng, 3) ? "lo" : "hi", 1 + (int)gs_rng_below(&rng, 4),
                             (int)gs_rng_below(&rng, 3));
        gs_snapshot s;
        load(&s, sb.buf);
        for (uint32_t i = 0; i < s.pods.n; i++) {
            arr[i] = (int64_t)gs_rng_below(&rng, 500);
            dur[i] = gs_rng_below(&rng, 4) ? 10 + (int64_t)gs_rng_below(&rng, 300) : GS_REPLAY_FOREVER;
        }
        gs_replay_opts o;
        gs_replay_opts_defaults(&o);
        o.requeue_preempted = round % 2 == 0;
        gs_replay_result res;
        gs_error err;
        assert_int_equal(gs_replay_run(&s, arr, dur, &o, &res, &err), 0);
        gs_sim_run run;
        assert_int_equal(gs_sim_run_from_replay(&run, 0, "r", "", "default", 1, 1, &s, &res, &err), 0);
        const gs_replay_metrics *m = &run.replay;
        assert_int_equal(m->arrived, (uint32_t)n);
        assert_int_equal(m->done + m->running + m->pending + m->rejected + m->lost, m->arrived);
        uint32_t class_pods = 0, shape_pods = 0, never = 0;
        for (uint32_t k = 0; k < m->nclasses; k++) {
            class_pods += m->classes[k].pods;
            never += m->classes[k].never_started;
        }
        for (uint32_t k = 0; k < m->nshapes; k++)
            shape_pods += m->shapes[k].pods;
        assert_int_equal(class_pods, m->arrived - m->rejected);
        assert_int_equal(shape_pods, m->arrived - m->rejected);
        assert_int_equal(never, m->never_started);
        assert_int_equal(m->quota_rejections + m->other_rejections, m->rejected);
        uint32_t failed = 0;
        for (uint32_t k = 0; k < run.nfails; k++)
            failed += run.fails[k].count;
        assert_int_equal(failed, run.failed); /* never ran: pending or rejected */
        gs_sim_run_free(&run);
        gs_replay_result_free(&res);
        gs_snapshot_free(&s);
        gs_strbuf_free(&sb);
        free(arr);
        free(dur);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_percentile),   cmocka_unit_test(test_format_duration),
        cmocka_unit_test(test_pod_gpu_amount), cmocka_unit_test(test_metrics),
        cmocka_unit_test(test_stranded_and_reasons), cmocka_unit_test(test_curve),
        cmocka_unit_test(test_json_roundtrip), cmocka_unit_test(test_json_roundtrip_mig),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_json_errors),  cmocka_unit_test(test_html),
        cmocka_unit_test(test_determinism),  cmocka_unit_test(test_conservation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
