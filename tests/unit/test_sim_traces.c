/* test_sim_traces.c - replay inputs: openb rows as snapshot nodes and pods (resources,
 * labels, annotations, priority classes from the qos table, arrival and duration), the
 * JSON-lines trace format, gs_trace_times on annotated manifests, and the duration / time
 * grammars. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpusched/gpu.h"
#include "gpusched/replay.h"
#include "gpusched/sim.h"

static void test_durations_and_times(void **state)
{
    (void)state;
    int64_t s = -1;
    assert_int_equal(gs_trace_parse_duration("2h30m", &s), 0);
    assert_int_equal(s, 9000);
    assert_int_equal(gs_trace_parse_duration("90", &s), 0);
    assert_int_equal(s, 90);
    assert_int_equal(gs_trace_parse_duration("1.5h", &s), 0);
    assert_int_equal(s, 5400);
    assert_int_equal(gs_trace_parse_duration("300ms", &s), 0);
    assert_int_equal(s, 1); /* rounded up to whole seconds */
    assert_int_equal(gs_trace_parse_duration("1m0.5s", &s), 0);
    assert_int_equal(s, 61);
    assert_int_equal(gs_trace_parse_duration("2d", &s), 0);
    assert_int_equal(s, 172800);
    assert_int_equal(gs_trace_parse_duration("0", &s), 0);
    assert_int_equal(s, 0);
    assert_int_equal(gs_trace_parse_duration("1\xC2\xB5s", &s), 0);
    assert_int_equal(s, 1);
    assert_int_equal(gs_trace_parse_duration("", &s), -1);
    assert_int_equal(gs_trace_parse_duration("-5s", &s), -1);
    assert_int_equal(gs_trace_parse_duration("-5", &s), -1);
    assert_int_equal(gs_trace_parse_duration("5", &s), 0);
    assert_int_equal(gs_trace_parse_duration("h", &s), -1);
    assert_int_equal(gs_trace_parse_duration("5x", &s), -1);
    assert_int_equal(gs_trace_parse_duration("1.h", &s), 0);
    assert_int_equal(gs_trace_parse_duration(".s", &s), -1);
    assert_int_equal(gs_trace_parse_duration("99999999999999999999h", &s), -1);
    assert_int_equal(gs_trace_parse_time("2024-05-01T10:00:00Z", &s), 0);
    assert_int_equal(s, 1714557600);
    assert_int_equal(gs_trace_parse_time("-30", &s), 0);
    assert_int_equal(s, -30);
    assert_int_equal(gs_trace_parse_time("yesterday", &s), -1);
}

static const char *NODES = "sn,cpu_milli,memory_mib,gpu,model\n"
                           "g,96000,393216,8,G2\n"
                           "c,32000,262144,0,\n";
static const char *PODS =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    "p-ls,6000,12288,1,460,|V100M16||T4|,LS,Running,100,1100,150\n"
    "p-be,1000,0,0,0,,BE,Pending,200,500,\n"
    "p-gu,88000,1024,8,1200,,Guaranteed,Running,300,,300\n"
    "p-neg,1000,10,1,-5,,Burstable,Failed,400,350,\n";

static void test_openb_snapshot(void **state)
{
    (void)state;
    gs_openb rows;
    gs_openb_init(&rows);
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_openb_parse_nodes(&rows, "n.csv", NODES, strlen(NODES), NULL, &err), 0);
    assert_int_equal(gs_openb_parse_pods(&rows, "p.csv", PODS, strlen(PODS), NULL, &err), 0);
    gs_snapshot snap;
    gs_snapshot_init(&snap);
    assert_int_equal(gs_openb_add_nodes(&snap, &rows, &err), 0);
    assert_int_equal(gs_openb_add_pods(&snap, &rows, NULL, &err), 0);
    /* nodes */
    const gs_node *g = &snap.nodes.v[0], *c = &snap.nodes.v[1];
    assert_string_equal(g->meta.name, "g");
    assert_string_equal(g->meta.src.file, "n.csv");
    assert_int_equal(g->meta.src.line, 2);
    assert_int_equal(g->allocatable.n, 5);
    static const char *const names[] = {"alibabacloud.com/gpu-count", "alibabacloud.com/gpu-milli",
                                        "cpu", "memory", "pods"};
    for (int i = 0; i < 5; i++)
        assert_string_equal(g->allocatable.items[i].name, names[i]);
    assert_int_equal(gs_quantity_milli(gs_reslist_get(&g->allocatable, "cpu")), 96000);
    assert_int_equal(gs_quantity_value(gs_reslist_get(&g->allocatable, "memory")), 393216LL << 20);
    assert_int_equal(gs_quantity_value(gs_reslist_get(&g->allocatable, "pods")), 1001);
    assert_int_equal(gs_quantity_value(gs_reslist_get(&g->allocatable, "alibabacloud.com/gpu-milli")), 8000);
    assert_string_equal(gs_labels_get(&g->meta.labels, "alibabacloud.com/gpu-card-model"), "G2");
    assert_int_equal(c->allocatable.n, 3); /* CPU-only: no GPU resources, no label */
    assert_int_equal(c->meta.labels.n, 0);
    gs_node_gpus inv;
    assert_int_equal(gs_node_gpus_build(g, &inv, &err), 0);
    assert_int_equal(inv.ndevs, 8);
    assert_string_equal(inv.model, "G2");
    gs_node_gpus_free(&inv);
    /* pods */
    assert_int_equal(snap.pods.n, 4);
    const gs_pod *ls = &snap.pods.v[0], *be = &snap.pods.v[1], *gu = &snap.pods.v[2],
                 *neg = &snap.pods.v[3];
    assert_string_equal(ls->meta.namespace_, "default");
    assert_string_equal(ls->priority_class_name, "latency-sensitive");
    assert_string_equal(be->priority_class_name, "best-effort");
    assert_string_equal(gu->priority_class_name, "burstable");
    assert_string_equal(gs_labels_get(&ls->meta.annotations, "gpu-milli"), "460");
    assert_string_equal(gs_labels_get(&ls->meta.annotations, "gpu-count"), "1");
    assert_string_equal(gs_labels_get(&ls->meta.annotations, "gpu-card-model"), "V100M16|T4");
    assert_string_equal(gs_labels_get(&gu->meta.annotations, "gpu-milli"), "1000"); /* clamped */
    assert_string_equal(gs_labels_get(&neg->meta.annotations, "gpu-milli"), "0");
    assert_null(gs_labels_get(&be->meta.annotations, "gpu-milli")); /* CPU-only */
    for (uint32_t i = 1; i < ls->meta.annotations.n; i++)
        assert_true(strcmp(ls->meta.annotations.items[i - 1].key, ls->meta.annotations.items[i].key) < 0);
    assert_int_equal(ls->ncontainers, 1);
    assert_int_equal(gs_quantity_milli(gs_reslist_get(&ls->containers[0].requests, "cpu")), 6000);
    assert_int_equal(gs_quantity_value(gs_reslist_get(&ls->containers[0].limits, "memory")),
                     12288LL << 20);
    gs_gpu_request req;
    assert_int_equal(gs_gpu_request_from_pod(ls, &req, &err), 0);
    assert_int_equal(req.kind, GS_GPU_SHARE);
    assert_int_equal(req.milli, 460);
    assert_int_equal(req.nmodels, 2);
    assert_int_equal(gs_gpu_request_from_pod(gu, &req, &err), 0);
    assert_int_equal(req.kind, GS_GPU_WHOLE);
    assert_int_equal(req.count, 8);
    /* priority classes added once each */
    assert_int_equal(snap.priority_classes.n, 3);
    assert_string_equal(snap.priority_classes.v[0].meta.name, "latency-sensitive");
    assert_int_equal(snap.priority_classes.v[0].value, 10000);
    assert_int_equal(snap.priority_classes.v[1].value, 0);
    assert_int_equal(snap.priority_classes.v[2].value, 1000);
    /* times */
    int64_t arrival[4], duration[4];
    assert_int_equal(gs_trace_times(&snap, arrival, duration, &err), 0);
    assert_int_equal(arrival[0], 100);
    assert_int_equal(duration[0], 1100 - 150);   /* from the scheduled time */
    assert_int_equal(duration[1], 500 - 200);    /* not scheduled: from creation */
    assert_int_equal(duration[2], GS_REPLAY_FOREVER); /* no deletion time */
    assert_int_equal(duration[3], 0); /* deleted before it was created: leaves at once */
    /* adding the same pods again is an error */
    assert_int_equal(gs_openb_add_pods(&snap, &rows, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "already in the snapshot"));
    assert_int_equal(gs_openb_add_nodes(&snap, &rows, &err), -1);
    assert_int_equal(snap.pods.n, 4); /* a failed call adds nothing */
    assert_int_equal(snap.nodes.n, 2);
    gs_snapshot_free(&snap);

    /* a caller's own qos table, a namespace, no times, existing PriorityClass kept */
    gs_snapshot_init(&snap);
    const char *pc = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
                     "metadata: {name: gold}\nvalue: 7\n";
    assert_int_equal(gs_snapshot_read_buffer(&snap, "pc.yaml", pc, strlen(pc), NULL, &err), 0);
    static const gs_qos_class mine[] = {{"*", "gold", 99, GS_PREEMPT_NEVER}};
    gs_openb_pod_opts o;
    gs_openb_pod_opts_defaults(&o);
    o.qos = mine;
    o.nqos = 1;
    o.namespace_ = "trace";
    o.times = false;
    assert_int_equal(gs_openb_add_pods(&snap, &rows, &o, &err), 0);
    assert_int_equal(snap.priority_classes.n, 1);
    assert_int_equal(snap.priority_classes.v[0].value, 7);
    assert_string_equal(snap.pods.v[0].meta.namespace_, "trace");
    assert_string_equal(snap.pods.v[0].priority_class_name, "gold");
    assert_null(gs_labels_get(&snap.pods.v[0].meta.annotations, GS_ANN_ARRIVAL));
    assert_int_equal(gs_trace_times(&snap, arrival, duration, &err), 0);
    assert_int_equal(arrival[0], 100); /* the creation timestamp */
    gs_snapshot_free(&snap);
    gs_openb_free(&rows);
}

static void test_jsonl(void **state)
{
    (void)state;
    const char *jl =
        "{\"name\": \"a\", \"arrival\": 10, \"duration\": \"2h30m\", \"cpu\": \"4\", "
        "\"memory\": \"16Gi\", \"gpu\": {\"count\": 1, \"milli\": 500, \"models\": [\"A100\", \"H100\"]}}\n"
        "\n"
        "  {\"name\": \"b\", \"namespace\": \"ml\", \"arrival\": \"2024-05-01T10:00:00Z\", "
        "\"cpu\": 0.5, \"memory\": 1073741824, \"gpu\": 2, \"priorityClassName\": \"high\", "
        "\"tolerations\": [{\"key\": \"nvidia.com/gpu\", \"operator\": \"Exists\", "
        "\"effect\": \"NoSchedule\"}], \"nodeSelector\": {\"pool\": \"a\\u00e9\"}, "
        "\"labels\": {\"team\": \"x\"}, \"duration\": null}\r\n"
        "{\"name\": \"c\", \"gpu\": {\"mig\": \"1g.10gb+me\", \"count\": 2}, \"nodeName\": \"n1\", "
        "\"priority\": -3}\n";
    gs_snapshot snap;
    gs_snapshot_init(&snap);
    gs_error err;
    gs_error_clear(&err);
    if (gs_trace_parse_jsonl(&snap, "t.jsonl", jl, strlen(jl), NULL, &err) < 0)
        fail_msg("%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
    assert_int_equal(snap.pods.n, 3);
    const gs_pod *a = &snap.pods.v[0], *b = &snap.pods.v[1], *c = &snap.pods.v[2];
    assert_string_equal(a->meta.namespace_, "default");
    assert_int_equal(a->meta.src.line, 1);
    assert_int_equal(b->meta.src.line, 3);
    assert_int_equal(b->meta.src.col, 3);
    assert_string_equal(gs_labels_get(&a->meta.annotations, "gpusched.io/gpu-milli"), "500");
    assert_string_equal(gs_labels_get(&a->meta.annotations, "gpusched.io/gpu-model"), "A100|H100");
    assert_int_equal(gs_quantity_milli(gs_reslist_get(&a->containers[0].requests, "cpu")), 4000);
    assert_int_equal(gs_quantity_milli(gs_reslist_get(&b->containers[0].limits, "cpu")), 500);
    assert_int_equal(gs_quantity_value(gs_reslist_get(&b->containers[0].requests, "memory")), 1073741824);
    gs_gpu_request req;
    assert_int_equal(gs_gpu_request_from_pod(a, &req, &err), 0);
    assert_int_equal(req.kind, GS_GPU_SHARE);
    assert_int_equal(req.milli, 500);
    assert_int_equal(gs_gpu_request_from_pod(b, &req, &err), 0);
    assert_int_equal(req.kind, GS_GPU_WHOLE);
    assert_int_equal(req.count, 2);
    assert_int_equal(gs_gpu_request_from_pod(c, &req, &err), 0);
    assert_int_equal(req.kind, GS_GPU_MIG);
    assert_int_equal(req.count, 2);
    assert_string_equal(req.mig_profile, "1g.10gb+me");
    assert_string_equal(b->priority_class_name, "high");
    assert_int_equal(b->ntolerations, 1);
    assert_int_equal(b->tolerations[0].op, GS_TOL_EXISTS);
    assert_int_equal(b->tolerations[0].effect, GS_EFFECT_NO_SCHEDULE);
    assert_string_equal(gs_labels_get(&b->node_selector, "pool"), "a\xC3\xA9");
    assert_string_equal(gs_labels_get(&b->meta.labels, "team"), "x");
    assert_true(c->has_priority);
    assert_int_equal(c->priority, -3);
    int64_t arrival[3], duration[3];
    assert_int_equal(gs_trace_times(&snap, arrival, duration, &err), 0);
    assert_int_equal(arrival[0], 10);
    assert_int_equal(duration[0], 9000);
    assert_int_equal(arrival[1], 1714557600);
    assert_int_equal(duration[1], GS_REPLAY_FOREVER);
    assert_int_equal(arrival[2], INT64_MIN); /* bound: present from the start */
    gs_snapshot_free(&snap);
}

static void expect_jsonl_error(const char *text, gs_code code, int line, int col, const char *needle)
{
    gs_snapshot snap;
    gs_snapshot_init(&snap);
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_trace_parse_jsonl(&snap, "bad.jsonl", text, strlen(text), NULL, &err), -1);
    if (err.code != code || err.line != line || err.col != col || !strstr(err.msg, needle))
        fail_msg("for %s: got code %d %d:%d \"%s\", wanted code %d %d:%d \"%s\"", text, err.code,
                 err.line, err.col, err.msg, code, line, col, needle);
    assert_int_equal(snap.pods.n, 0); /* nothing kept from a failed file */
    gs_snapshot_free(&snap);
}

static void test_jsonl_errors(void **state)
{
    (void)state;
    expect_jsonl_error("{\"name\": \"a\"}\n{\"name\": \"b\", \"cpu\": \"x\"}\n", GS_ERR_INVALID, 2, 22,
                       "cpu: ");
    expect_jsonl_error("{\"name\": \"a\", \"gpus\": 1}\n", GS_ERR_INVALID, 1, 15, "unknown key \"gpus\"");
    expect_jsonl_error("{\"cpu\": \"1\"}\n", GS_ERR_INVALID, 1, 1, "missing \"name\"");
    expect_jsonl_error("{\"name\": \"a\"}\n{\"name\": \"a\"}\n", GS_ERR_INVALID, 2, 10, "already exists");
    expect_jsonl_error("{\"name\": \"a\", \"name\": \"b\"}\n", GS_ERR_INVALID, 1, 15, "given twice");
    expect_jsonl_error("{\"name\": \"a\",}\n", GS_ERR_PARSE, 1, 14, "expected a quoted key");
    expect_jsonl_error("{\"name\": \"a\"} x\n", GS_ERR_PARSE, 1, 15, "text after the JSON value");
    expect_jsonl_error("{\"name\": \"a\n", GS_ERR_PARSE, 1, 10, "unterminated string");
    expect_jsonl_error("{\"name\": \"\\u0000\"}\n", GS_ERR_PARSE, 1, 11, "\\u0000");
    expect_jsonl_error("{\"name\": \"\\ud800\"}\n", GS_ERR_PARSE, 1, 11, "surrogate");
    expect_jsonl_error("{\"name\": \"a\", \"arrival\": 1.5}\n", GS_ERR_INVALID, 1, 26, "expected an integer");
    expect_jsonl_error("{\"name\": \"a\", \"duration\": \"soon\"}\n", GS_ERR_INVALID, 1, 27, "not a duration");
    expect_jsonl_error("{\"name\": \"a\", \"gpu\": {\"milli\": 1500}}\n", GS_ERR_INVALID, 1, 32, "gpu.milli");
    expect_jsonl_error("{\"name\": \"a\", \"gpu\": {\"mig\": \"1g\", \"milli\": 5}}\n", GS_ERR_INVALID, 1, 22,
                       "MIG request takes no milli");
    expect_jsonl_error("{\"name\": \"a\", \"memory\": \"-1Gi\"}\n", GS_ERR_INVALID, 1, 25, "negative");
    expect_jsonl_error("[1]\n", GS_ERR_INVALID, 1, 1, "one JSON object");
    expect_jsonl_error("{\"name\": \"a\", \"annotations\": {\"gpusched.io/arrival\": \"5\"}}\n",
                       GS_ERR_INVALID, 1, 1, "given twice");
    expect_jsonl_error("{\"name\": \"a\", \"tolerations\": [{\"keys\": \"x\"}]}\n", GS_ERR_INVALID, 1, 32,
                       "unknown key \"keys\"");
    char deep[200];
    size_t n = 0;
    n += (size_t)snprintf(deep + n, sizeof deep - n, "{\"name\": \"a\", \"labels\": ");
    for (int i = 0; i < 20; i++)
        deep[n++] = '[';
    deep[n] = 0;
    expect_jsonl_error(deep, GS_ERR_PARSE, 1, 40, "nesting deeper");
    /* annotation errors through gs_trace_times on manifests */
    const char *pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  annotations:\n"
                      "    gpusched.io/duration: later\nspec:\n  containers: [{name: c}]\n";
    gs_snapshot snap;
    gs_snapshot_init(&snap);
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_snapshot_read_buffer(&snap, "pod.yaml", pod, strlen(pod), NULL, &err), 0);
    int64_t a[1], d[1];
    assert_int_equal(gs_trace_times(&snap, a, d, &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_string_equal(err.file, "pod.yaml");
    assert_non_null(strstr(err.msg, "gpusched.io/duration"));
    assert_non_null(strstr(err.path, "Pod default/x"));
    gs_snapshot_free(&snap);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations_and_times),
        cmocka_unit_test(test_openb_snapshot),
        cmocka_unit_test(test_jsonl),
        cmocka_unit_test(test_jsonl_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
