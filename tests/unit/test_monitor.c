/*
 * test_monitor.c - the monitor's core (lib/monitor/monitor.c) driven through a live store
 * and its observer, as the informers drive it: each step changes objects, updates, and
 * checks the exact series of /metrics and the detail views.
 *   - a GPU pod pending for an untolerated taint, then (tolerated) fitting now, then
 *     bound: the histogram observes it once, even when the pod changes again, a relist
 *     puts everything again, or the world is re-read from the store;
 *   - a restarted monitor does not count pods scheduled before it began;
 *   - hygiene: an untainted GPU node with a non-GPU pod; device-plugin problems: a node
 *     whose GPUs drop to 0 (no GPUs advertised, capacity dropped) and back;
 *   - preemption counted once from the victim's DisruptionTarget condition and Events;
 *   - quota: a controller's FailedCreate Event for a GPU quota;
 *   - shapes: 50 pending pods of one shape cost one explain;
 *   - DRA: pods whose claims ask GPUs pending by explain's claim finding (class missing, no
 *     devices, too many devices), judged again as classes, slices and claims arrive or
 *     change; gpusched_claims_pending counts a shared claim once, a template's claim not
 *     made yet as <pod>-<claim>, and no allocated claim; also with the world re-read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/live.h"
#include "gpusched/monitor.h"

#define T0 1767225600000LL /* 2026-01-01T00:00:00Z */
#define START (T0 + 60000)  /* the monitor began a minute later */

typedef struct fx {
    gs_live_store *st;
    gs_monitor *m;
    gs_strbuf out;
    int64_t now;
} fx;

static void fx_open(fx *f, int64_t start, size_t reclaim)
{
    gs_error err;
    f->st = gs_live_store_new(&err);
    assert_non_null(f->st);
    gs_monitor_opts o = {.start_ms = start, .store = f->st, .reclaim_bytes = reclaim};
    f->m = gs_monitor_new(&o, &err);
    assert_non_null(f->m);
    gs_live_store_observe(f->st, gs_monitor_observer, f->m);
    f->out = (gs_strbuf)GS_STRBUF_INIT;
    f->now = START + 1000;
}

static const char *render(fx *f, gs_monitor_view v, gs_monitor_format fmt);

static void fx_close(fx *f)
{
    if (getenv("GS_MONITOR_DUMP")) /* GS_MONITOR_DUMP=1 build/tests/test_monitor: what was served */
        for (int v = 0; v < 4; v++)
            printf("%s\n", render(f, (gs_monitor_view)v, GS_MON_TEXT));
    gs_live_store_observe(f->st, NULL, NULL);
    gs_monitor_free(f->m);
    gs_live_store_free(f->st);
    gs_strbuf_free(&f->out);
}

static void put(fx *f, gs_live_kind k, const char *json)
{
    gs_error err;
    int rc = gs_live_store_put(f->st, k, json, strlen(json), &err);
    if (rc)
        fail_msg("put: %s", err.msg);
}

static void del(fx *f, gs_live_kind k, const char *json)
{
    gs_error err;
    assert_int_equal(gs_live_store_delete(f->st, k, json, strlen(json), &err), 0);
}

static void update(fx *f)
{
    gs_error err;
    f->now += 1000;
    int rc = gs_monitor_update(f->m, f->now, &err);
    if (rc < 0)
        fail_msg("update: %s", err.msg);
}

static const char *render(fx *f, gs_monitor_view v, gs_monitor_format fmt)
{
    gs_error err;
    assert_int_equal(gs_monitor_render(f->m, v, fmt, f->now, &f->out, &err), 0);
    return gs_strbuf_cstr(&f->out);
}

/* the value of one series line ("name{labels}"), or -1 when absent */
static double series(fx *f, const char *line)
{
    const char *t = render(f, GS_MON_METRICS, GS_MON_TEXT);
    size_t n = strlen(line);
    for (const char *p = t; (p = strstr(p, line)); p += n)
        if ((p == t || p[-1] == '\n') && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return -1;
}

static char *node(const char *name, int gpus, bool tainted, const char *extra_labels)
{
    char *b = malloc(2048);
    snprintf(b, 2048,
             "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%s\",\"labels\":{\"nvidia.com/gpu.product\":\"NVIDIA-A100-SXM4-80GB\","
             "\"nvidia.com/gpu.count\":\"8\",\"cloud.google.com/gke-nodepool\":\"a100\"%s}},"
             "\"spec\":{%s},"
             "\"status\":{\"capacity\":{\"cpu\":\"96\",\"memory\":\"1000Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"},"
             "\"allocatable\":{\"cpu\":\"96\",\"memory\":\"1000Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"},"
             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
             name, name, extra_labels ? extra_labels : "",
             tainted ? "\"taints\":[{\"key\":\"nvidia.com/gpu\",\"value\":\"present\",\"effect\":\"NoSchedule\"}]" : "",
             gpus, gpus);
    return b;
}

/* A pod: gpus < 0 = no GPU; node NULL = pending; extra: more of status (after phase). */
static char *pod(const char *name, int gpus, bool tolerate, const char *nodename, const char *status_extra)
{
    char *b = malloc(4096);
    char res[128] = "";
    if (gpus >= 0)
        snprintf(res, sizeof res, ",\"nvidia.com/gpu\":\"%d\"", gpus);
    snprintf(b, 4096,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"uid\":\"uid-%s\","
             "\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
             "\"spec\":{%s%s%s\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"requests\":"
             "{\"cpu\":\"4\",\"memory\":\"16Gi\"%s},\"limits\":{\"cpu\":\"4\"%s}}}]%s},"
             "\"status\":{\"phase\":\"%s\"%s}}",
             name, name, nodename ? "\"nodeName\":\"" : "", nodename ? nodename : "", nodename ? "\"," : "", res, res,
             tolerate ? ",\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]"
                      : "",
             nodename ? "Running" : "Pending", status_extra ? status_extra : "");
    return b;
}

#define PENDING(reason) "gpusched_gpu_pods_pending{namespace=\"ml\",priority_class=\"\",request_kind=\"whole\",reason=\"" reason "\"}"
#define HCOUNT "gpusched_gpu_pod_scheduling_duration_seconds_count{namespace=\"ml\",request_kind=\"whole\"}"

static const char sched_cond[] =
    ",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\",\"lastTransitionTime\":\"2026-01-01T00:05:00Z\"},"
    "{\"type\":\"Ready\",\"status\":\"True\"}]";

static void test_pending_to_scheduled(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, START, 0);
    char *n1 = node("gpu-1", 8, true, NULL);
    put(&f, GS_LIVE_NODE, n1);
    char *p = pod("train-0", 2, false, NULL, NULL);
    put(&f, GS_LIVE_POD, p);
    update(&f);
    assert_true(series(&f, PENDING("untolerated_taint")) == 1);
    assert_true(series(&f, "gpusched_gpu_pod_oldest_pending_seconds{namespace=\"ml\"}") > 60);
    const char *pend = render(&f, GS_MON_PENDING, GS_MON_TEXT);
    assert_non_null(strstr(pend, "train-0"));
    assert_non_null(strstr(pend, "tolerate taint nvidia.com/gpu"));
    /* tolerated: the engine would place it now (no scheduler acts on it in this test) */
    free(p);
    p = pod("train-0", 2, true, NULL, NULL);
    put(&f, GS_LIVE_POD, p);
    update(&f);
    assert_true(series(&f, PENDING("untolerated_taint")) == -1);
    assert_true(series(&f, PENDING("fits_now")) == 1);
    /* bound: no longer pending, observed once (5 minutes after creation) */
    free(p);
    p = pod("train-0", 2, true, "gpu-1", sched_cond);
    put(&f, GS_LIVE_POD, p);
    update(&f);
    assert_true(series(&f, PENDING("fits_now")) == -1);
    assert_true(series(&f, HCOUNT) == 1);
    assert_true(series(&f, "gpusched_gpu_pod_scheduling_duration_seconds_bucket{namespace=\"ml\",request_kind=\"whole\",le=\"300\"}") == 1);
    assert_true(series(&f, "gpusched_gpu_pod_scheduling_duration_seconds_bucket{namespace=\"ml\",request_kind=\"whole\",le=\"120\"}") == 0);
    assert_true(series(&f, "gpusched_pool_gpus_allocated{pool=\"a100\"}") == 2);
    assert_true(series(&f, "gpusched_pool_gpu_nodes_in_use{pool=\"a100\"}") == 1);
    /* the pod changes again (a label), a relist puts everything again: still once */
    free(p);
    p = pod("train-0", 2, true, "gpu-1", ",\"podIP\":\"10.0.0.9\"");
    put(&f, GS_LIVE_POD, p);
    update(&f);
    gs_live_store_replace_begin(f.st, GS_LIVE_POD);
    put(&f, GS_LIVE_POD, p);
    gs_live_store_replace_end(f.st, GS_LIVE_POD);
    gs_live_store_replace_begin(f.st, GS_LIVE_NODE);
    put(&f, GS_LIVE_NODE, n1);
    gs_live_store_replace_end(f.st, GS_LIVE_NODE);
    update(&f);
    assert_true(series(&f, HCOUNT) == 1);
    gs_monitor_stats ms;
    gs_monitor_stats_get(f.m, &ms);
    assert_true(ms.dropped_same >= 2); /* the relist's unchanged objects */
    free(p);
    free(n1);
    fx_close(&f);
}

static void test_restart_not_counted_again(void **state)
{
    (void)state;
    /* the pod was scheduled at 00:05; a monitor that began at 00:01 counts it, one that
     * began later (a restart) only marks it */
    fx f;
    fx_open(&f, T0 + 10 * 60000, 0);
    char *n1 = node("gpu-1", 8, true, NULL);
    put(&f, GS_LIVE_NODE, n1);
    char *p = pod("train-0", 2, true, "gpu-1", sched_cond);
    put(&f, GS_LIVE_POD, p);
    update(&f);
    assert_true(series(&f, HCOUNT) == -1);
    free(p);
    /* a pod scheduled after this start is counted */
    p = pod("train-1", 1, true, "gpu-1",
            ",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\",\"lastTransitionTime\":\"2026-01-01T00:15:00Z\"}]");
    put(&f, GS_LIVE_POD, p);
    update(&f);
    assert_true(series(&f, HCOUNT) == 1);
    free(p);
    free(n1);
    fx_close(&f);
}

static void test_hygiene_and_device_plugin(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, START, 0);
    char *n1 = node("gpu-1", 8, false, NULL);
    put(&f, GS_LIVE_NODE, n1);
    char *web = pod("web-0", -1, false, "gpu-1", NULL);
    put(&f, GS_LIVE_POD, web);
    update(&f);
    assert_true(series(&f, "gpusched_gpu_nodes_without_taint{pool=\"a100\"}") == 1);
    assert_true(series(&f, "gpusched_non_gpu_pods_on_gpu_nodes{pool=\"a100\"}") == 1);
    assert_non_null(strstr(render(&f, GS_MON_HYGIENE, GS_MON_TEXT), "ml/web-0 on gpu-1"));
    assert_non_null(strstr(render(&f, GS_MON_HYGIENE, GS_MON_JSON), "\"name\":\"web-0\""));
    assert_true(series(&f, "gpusched_device_plugin_problem{node=\"gpu-1\",pool=\"a100\",problem=\"no_gpus_advertised\"}") == -1);
    /* the device plugin stops advertising: 0 GPUs */
    char *n0 = node("gpu-1", 0, false, NULL);
    put(&f, GS_LIVE_NODE, n0);
    update(&f);
    assert_true(series(&f, "gpusched_device_plugin_problem{node=\"gpu-1\",pool=\"a100\",problem=\"no_gpus_advertised\"}") == 1);
    assert_true(series(&f, "gpusched_device_plugin_problem{node=\"gpu-1\",pool=\"a100\",problem=\"capacity_dropped\"}") == 1);
    /* 6 of the 8 GPUs the labels promise */
    char *n6 = node("gpu-1", 6, false, NULL);
    put(&f, GS_LIVE_NODE, n6);
    update(&f);
    assert_true(series(&f, "gpusched_device_plugin_problem{node=\"gpu-1\",pool=\"a100\",problem=\"no_gpus_advertised\"}") == -1);
    assert_true(series(&f, "gpusched_device_plugin_problem{node=\"gpu-1\",pool=\"a100\",problem=\"gpus_missing\"}") == 1);
    assert_true(series(&f, "gpusched_device_plugin_gpus_missing{node=\"gpu-1\",pool=\"a100\"}") == 2);
    assert_true(series(&f, "gpusched_pool_gpus_allocatable{pool=\"a100\"}") == 6); /* advertised, not promised */
    /* back to 8: every problem series is gone */
    put(&f, GS_LIVE_NODE, n1);
    update(&f);
    assert_null(strstr(render(&f, GS_MON_METRICS, GS_MON_TEXT), "gpusched_device_plugin_problem{"));
    /* MIG config failed */
    char *nf = node("gpu-1", 8, true, ",\"nvidia.com/mig.config.state\":\"failed\"");
    put(&f, GS_LIVE_NODE, nf);
    update(&f);
    assert_true(series(&f, "gpusched_device_plugin_problem{node=\"gpu-1\",pool=\"a100\",problem=\"mig_config_failed\"}") == 1);
    assert_true(series(&f, "gpusched_gpu_nodes_without_taint{pool=\"a100\"}") == 0);
    /* the node goes: its series go */
    del(&f, GS_LIVE_NODE, nf);
    update(&f);
    assert_null(strstr(render(&f, GS_MON_METRICS, GS_MON_TEXT), "gpu-1"));
    free(nf);
    free(n6);
    free(n0);
    free(web);
    free(n1);
    fx_close(&f);
}

static void test_device_plugin_pods(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, START, 0);
    char *n1 = node("gpu-1", 8, true, ",\"nvidia.com/gpu.deploy.device-plugin\":\"true\"");
    put(&f, GS_LIVE_NODE, n1);
    put(&f, GS_LIVE_DAEMONSET,
        "{\"metadata\":{\"name\":\"nvidia-device-plugin-daemonset\",\"namespace\":\"gpu-operator\"},"
        "\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"nvidia-device-plugin-daemonset\"}},"
        "\"template\":{\"metadata\":{\"labels\":{\"app\":\"nvidia-device-plugin-daemonset\"}},"
        "\"spec\":{\"nodeSelector\":{\"nvidia.com/gpu.deploy.device-plugin\":\"true\"},"
        "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],"
        "\"containers\":[{\"name\":\"p\",\"image\":\"x\"}]}}}}");
    update(&f);
    assert_true(series(&f, "gpusched_device_plugin_problem{node=\"gpu-1\",pool=\"a100\",problem=\"plugin_pod_missing\"}") == 1);
    static const char dp[] =
        "{\"metadata\":{\"name\":\"nvidia-device-plugin-daemonset-abcde\",\"namespace\":\"gpu-operator\",\"uid\":\"dp1\","
        "\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"name\":\"nvidia-device-plugin-daemonset\",\"uid\":\"x\"}],"
        "\"labels\":{\"app\":\"nvidia-device-plugin-daemonset\"}},"
        "\"spec\":{\"nodeName\":\"gpu-1\",\"containers\":[{\"name\":\"p\",\"image\":\"x\"}]},"
        "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}],"
        "\"containerStatuses\":[{\"name\":\"p\",\"restartCount\":%d%s}]}}";
    char b[2048];
    snprintf(b, sizeof b, dp, "False", 0, "");
    put(&f, GS_LIVE_POD, b);
    update(&f);
    assert_true(series(&f, "gpusched_device_plugin_problem{node=\"gpu-1\",pool=\"a100\",problem=\"plugin_pod_missing\"}") == -1);
    assert_true(series(&f, "gpusched_device_plugin_problem{node=\"gpu-1\",pool=\"a100\",problem=\"plugin_pod_not_ready\"}") == 1);
    /* a restart (only in containerStatuses, which the store prunes) is seen */
    snprintf(b, sizeof b, dp, "True", 1, ",\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\"}}");
    put(&f, GS_LIVE_POD, b);
    update(&f);
    assert_true(series(&f, "gpusched_device_plugin_problem{node=\"gpu-1\",pool=\"a100\",problem=\"plugin_pod_not_ready\"}") == -1);
    assert_true(series(&f, "gpusched_device_plugin_problem{node=\"gpu-1\",pool=\"a100\",problem=\"plugin_pod_restarting\"}") == 1);
    free(n1);
    fx_close(&f);
}

static void test_preemption_once(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, START, 0);
    char *n1 = node("gpu-1", 8, true, NULL);
    put(&f, GS_LIVE_NODE, n1);
    char *v = pod("victim", 8, true, "gpu-1",
                  ",\"conditions\":[{\"type\":\"DisruptionTarget\",\"status\":\"True\",\"reason\":\"PreemptionByScheduler\","
                  "\"lastTransitionTime\":\"2026-01-01T00:20:00Z\"}]");
    put(&f, GS_LIVE_POD, v);
    update(&f);
    static const char ev[] =
        "{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"victim.1\",\"namespace\":\"ml\"},"
        "\"reason\":\"Preempted\",\"note\":\"Preempted by pod uid-hi on node gpu-1\",\"type\":\"Normal\","
        "\"eventTime\":\"2026-01-01T00:20:00.000000Z\","
        "\"regarding\":{\"kind\":\"Pod\",\"namespace\":\"ml\",\"name\":\"victim\",\"uid\":\"uid-victim\"}}";
    put(&f, GS_LIVE_EVENT, ev);
    update(&f);
    assert_true(series(&f, "gpusched_gpu_preemptions_total{namespace=\"ml\",priority_class=\"\",role=\"victim\"}") == 1);
    /* the preemptor gets nominated */
    char *hi = pod("hi", 8, true, NULL, NULL);
    put(&f, GS_LIVE_POD, hi);
    update(&f);
    free(hi);
    hi = pod("hi", 8, true, NULL, ",\"nominatedNodeName\":\"gpu-1\"");
    put(&f, GS_LIVE_POD, hi);
    update(&f);
    assert_true(series(&f, "gpusched_gpu_preemptions_total{namespace=\"ml\",priority_class=\"\",role=\"preemptor\"}") == 1);
    assert_true(series(&f, PENDING("preemption_pending")) == 1);
    put(&f, GS_LIVE_POD, hi);
    update(&f);
    assert_true(series(&f, "gpusched_gpu_preemptions_total{namespace=\"ml\",priority_class=\"\",role=\"preemptor\"}") == 1);
    free(hi);
    free(v);
    free(n1);
    fx_close(&f);
}

static void test_quota_refusal(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, START, 0);
    f.now = T0 + 30 * 60000;
    static const char ev[] =
        "{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"train.2\",\"namespace\":\"ml\"},"
        "\"reason\":\"FailedCreate\",\"type\":\"Warning\",\"eventTime\":\"2026-01-01T00:09:00.000000Z\","
        "\"series\":{\"count\":40,\"lastObservedTime\":\"2026-01-01T00:29:00.000000Z\"},"
        "\"note\":\"Error creating: pods \\\"train-x\\\" is forbidden: exceeded quota: gpu, requested: "
        "requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=8, limited: requests.nvidia.com/gpu=8\","
        "\"regarding\":{\"kind\":\"Job\",\"namespace\":\"ml\",\"name\":\"train\"}}";
    put(&f, GS_LIVE_EVENT, ev);
    update(&f);
    assert_true(series(&f, PENDING("quota_exhausted")) == 1);
    /* refused since 00:09 (its first occurrence), the update ran at 00:30:01 */
    assert_true(series(&f, "gpusched_gpu_pod_oldest_pending_seconds{namespace=\"ml\"}") == 21 * 60 + 1);
    assert_non_null(strstr(render(&f, GS_MON_PENDING, GS_MON_JSON), "\"workload\":\"Job/train\""));
    /* ten minutes later without a new refusal: gone */
    f.now += 11 * 60000;
    update(&f);
    assert_true(series(&f, PENDING("quota_exhausted")) == -1);
    fx_close(&f);
}

static void test_shapes_and_reclaim(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, START, 1); /* reclaim as soon as replaced objects outweigh live ones */
    char *n1 = node("gpu-1", 8, true, NULL);
    put(&f, GS_LIVE_NODE, n1);
    char name[32];
    for (int i = 0; i < 50; i++) {
        snprintf(name, sizeof name, "w-%02d", i);
        char *p = pod(name, 4, false, NULL, NULL);
        put(&f, GS_LIVE_POD, p);
        free(p);
    }
    update(&f);
    gs_monitor_stats ms;
    gs_monitor_stats_get(f.m, &ms);
    assert_int_equal(ms.pending_shapes, 1);
    assert_int_equal(ms.shapes_explained, 1);
    assert_true(series(&f, PENDING("untolerated_taint")) == 50);
    /* a non-GPU pod elsewhere changes nothing explain depends on */
    char *web = pod("web", -1, false, NULL, NULL);
    put(&f, GS_LIVE_POD, web);
    update(&f);
    gs_monitor_stats_get(f.m, &ms);
    assert_int_equal(ms.shapes_explained, 1);
    /* replace every pod twice: the world is re-read, the answers stay */
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 50; i++) {
            snprintf(name, sizeof name, "w-%02d", i);
            char *p = pod(name, 4, false, NULL, r ? ",\"podIP\":\"10.1.1.1\"" : ",\"podIP\":\"10.1.1.2\"");
            put(&f, GS_LIVE_POD, p);
            free(p);
        }
    update(&f);
    gs_monitor_stats_get(f.m, &ms);
    assert_true(ms.rebuilds >= 1);
    assert_int_equal(ms.pods, 51);
    assert_true(series(&f, PENDING("untolerated_taint")) == 50);
    free(web);
    free(n1);
    fx_close(&f);
}

static void test_idle_join(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, START, 0);
    char *n1 = node("gpu-1", 2, true, NULL);
    put(&f, GS_LIVE_NODE, n1);
    char *p = pod("train-0", 1, true, "gpu-1", NULL);
    put(&f, GS_LIVE_POD, p);
    update(&f);
    gs_idle_gpu d[3] = {
        {.node = "gpu-1", .gpu = "GPU-a", .mig_instance = "", .ns = "ml", .pod = "train-0", .pods = 1, .util = 0.01},
        {.node = "gpu-1", .gpu = "GPU-b", .mig_instance = "", .ns = "ml", .pod = "gone", .pods = 1, .util = 0},
        {.node = "gpu-1", .gpu = "GPU-c", .mig_instance = "", .ns = "", .pod = "", .util = 0},
    };
    gs_error err;
    assert_int_equal(gs_monitor_set_idle(f.m, d, 3, &err), 0);
    update(&f);
    /* the mapped pod holds its GPU; a pod that is not there does not; without a mapping
     * the node still has a free GPU, so the idle GPU may be free: not reported */
    assert_true(series(&f, "gpusched_gpu_allocated_idle{node=\"gpu-1\",gpu=\"GPU-a\",mig_instance=\"\",namespace=\"ml\",pod=\"train-0\"}") == 1);
    assert_null(strstr(render(&f, GS_MON_METRICS, GS_MON_TEXT), "GPU-b"));
    assert_null(strstr(render(&f, GS_MON_METRICS, GS_MON_TEXT), "GPU-c"));
    assert_true(series(&f, "gpusched_pool_gpus_allocated_idle{pool=\"a100\"}") == 1);
    /* the node's second GPU allocated too: the unmapped idle GPU is held by someone */
    char *q = pod("train-1", 1, true, "gpu-1", NULL);
    put(&f, GS_LIVE_POD, q);
    update(&f);
    assert_non_null(strstr(render(&f, GS_MON_METRICS, GS_MON_TEXT), "gpu=\"GPU-c\""));
    assert_non_null(strstr(render(&f, GS_MON_IDLE, GS_MON_TEXT), "train-0"));
    assert_non_null(strstr(render(&f, GS_MON_IDLE, GS_MON_JSON), "\"pod\":\"train-0\""));
    free(q);
    free(p);
    free(n1);
    fx_close(&f);
}

/* ---------------------------------------------------------------- DRA: pending claims */
static char *claim(const char *name, const char *cls, int count)
{
    char *b = malloc(1024);
    snprintf(b, 1024,
             "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"ml\",\"uid\":\"uc-%s\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"r\","
             "\"exactly\":{\"deviceClassName\":\"%s\",\"count\":%d}}]}}}",
             name, name, cls, count);
    return b;
}

/* A pending pod with one claim (pod claim "r" naming the ResourceClaim). */
static char *claim_pod(const char *name, const char *claim_name)
{
    char *b = malloc(2048);
    snprintf(b, 2048,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"uid\":\"uid-%s\","
             "\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
             "\"spec\":{\"resourceClaims\":[{\"name\":\"r\",\"resourceClaimName\":\"%s\"}],"
             "\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":\"1\"},"
             "\"claims\":[{\"name\":\"r\"}]}}]},\"status\":{\"phase\":\"Pending\"}}",
             name, name, claim_name);
    return b;
}

static const char dra_node[] =
    "{\"metadata\":{\"name\":\"dra-1\",\"uid\":\"u-dra-1\"},\"spec\":{},\"status\":{\"capacity\":{\"cpu\":\"32\","
    "\"memory\":\"256Gi\",\"pods\":\"110\"},\"allocatable\":{\"cpu\":\"32\",\"memory\":\"256Gi\",\"pods\":\"110\"},"
    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}";
static const char gpu_class[] =
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":\"gpu.nvidia.com\","
    "\"uid\":\"udc\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":\"device.driver == 'gpu.nvidia.com'\"}}]}}";
static const char gpu_slice[] =
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"dra-1-gpus\","
    "\"uid\":\"us1\"},\"spec\":{\"driver\":\"gpu.nvidia.com\",\"nodeName\":\"dra-1\",\"pool\":{\"name\":\"dra-1\","
    "\"generation\":1,\"resourceSliceCount\":1},\"devices\":["
    "{\"name\":\"gpu-0\",\"attributes\":{\"type\":{\"string\":\"gpu\"},\"uuid\":{\"string\":\"GPU-0\"}}},"
    "{\"name\":\"gpu-1\",\"attributes\":{\"type\":{\"string\":\"gpu\"},\"uuid\":{\"string\":\"GPU-1\"}}}]}}";

#define CLAIMS(reason) "gpusched_claims_pending{namespace=\"ml\",reason=\"" reason "\"}"

/* Pods whose claims ask GPUs are pending GPU pods; their claims are counted by explain's
 * finding, once per claim; a DRA change judges them again (the class, then the devices
 * arrive); a pod whose claim asks no GPU is not a GPU pod. */
static void claims_by_reason(size_t reclaim)
{
    fx f;
    fx_open(&f, START, reclaim);
    put(&f, GS_LIVE_NODE, dra_node);
    char *c1 = claim("c-one", "gpu.nvidia.com", 1), *c4 = claim("c-big", "gpu.nvidia.com", 4);
    char *cn = claim("c-nic", "nic.example.com", 1);
    char *p1 = claim_pod("one", "c-one"), *pa = claim_pod("big-a", "c-big"), *pb = claim_pod("big-b", "c-big");
    char *pn = claim_pod("nic", "c-nic");
    /* the pods first: their claims come later in the same update */
    put(&f, GS_LIVE_POD, p1);
    put(&f, GS_LIVE_POD, pa);
    put(&f, GS_LIVE_POD, pb);
    put(&f, GS_LIVE_POD, pn);
    put(&f, GS_LIVE_RESOURCECLAIM, c1);
    put(&f, GS_LIVE_RESOURCECLAIM, c4);
    put(&f, GS_LIVE_RESOURCECLAIM, cn);
    update(&f);
    /* no DeviceClass: the class is missing (its name names a GPU driver: GPU pods) */
    assert_true(series(&f, PENDING("claim_class_missing")) == 3);
    assert_true(series(&f, CLAIMS("claim_class_missing")) == 2); /* c-big shared: once */
    assert_true(series(&f, "gpusched_claim_oldest_pending_seconds{namespace=\"ml\"}") > 0);
    const char *t = render(&f, GS_MON_PENDING, GS_MON_JSON);
    assert_non_null(strstr(t, "\"claims\":[{\"claim\":\"ml/c-big\",\"reason\":\"claim_class_missing\",\"why\":\""));
    assert_null(strstr(t, "\"name\":\"nic\"")); /* a NIC claim: not a GPU pod */
    /* the class arrives: no device of it is published */
    put(&f, GS_LIVE_DEVICECLASS, gpu_class);
    update(&f);
    assert_true(series(&f, CLAIMS("claim_no_devices")) == 2);
    assert_true(series(&f, CLAIMS("claim_class_missing")) == -1);
    /* two GPUs on dra-1: c-one fits, c-big asks more than any node has */
    put(&f, GS_LIVE_RESOURCESLICE, gpu_slice);
    update(&f);
    assert_true(series(&f, PENDING("claim_too_many_devices")) == 2);
    assert_true(series(&f, CLAIMS("claim_too_many_devices")) == 1);
    assert_true(series(&f, CLAIMS("fits_now")) == 1);
    for (int i = 0; reclaim && i < 20; i++) { /* garbage: the slice replaced (a new uid each time) */
        char sl[sizeof gpu_slice + 8], *u;
        snprintf(sl, sizeof sl, "%s", gpu_slice);
        u = strstr(sl, "\"us1\"");
        u[3] = (char)('a' + i); /* "usa", "usb", ... */
        put(&f, GS_LIVE_RESOURCESLICE, sl);
    }
    update(&f);
    assert_true(series(&f, CLAIMS("claim_too_many_devices")) == 1);
    assert_true(series(&f, CLAIMS("fits_now")) == 1);
    t = render(&f, GS_MON_PENDING, GS_MON_TEXT);
    assert_non_null(strstr(t, "  claim ml/c-big"));
    assert_non_null(strstr(t, "asks 4 devices"));
    /* the claim is fixed: asks 2 */
    char *c2 = claim("c-big", "gpu.nvidia.com", 2);
    put(&f, GS_LIVE_RESOURCECLAIM, c2);
    update(&f);
    f.now += 1000; /* a claim change refreshes the claim answers within the explain interval (2 s) */
    update(&f);
    assert_true(series(&f, CLAIMS("claim_too_many_devices")) == -1);
    assert_true(series(&f, CLAIMS("fits_now")) == 2);
    /* a template's claim not made yet counts as <pod>-<claim>; an allocated claim does not */
    static const char tmpl[] =
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaimTemplate\",\"metadata\":{\"name\":\"t-gpu\","
        "\"namespace\":\"ml\",\"uid\":\"ut\"},\"spec\":{\"spec\":{\"devices\":{\"requests\":[{\"name\":\"r\","
        "\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\",\"count\":8}}]}}}}";
    static const char tpod[] =
        "{\"metadata\":{\"name\":\"tp\",\"namespace\":\"ml\",\"uid\":\"uid-tp\",\"creationTimestamp\":"
        "\"2026-01-01T00:00:00Z\"},\"spec\":{\"resourceClaims\":[{\"name\":\"r\",\"resourceClaimTemplateName\":"
        "\"t-gpu\"}],\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"claims\":[{\"name\":"
        "\"r\"}]}}]},\"status\":{\"phase\":\"Pending\"}}";
    static const char done[] =
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c-one\","
        "\"namespace\":\"ml\",\"uid\":\"uc-c-one\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"r\","
        "\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\",\"count\":1}}]}},\"status\":{\"allocation\":"
        "{\"devices\":{\"results\":[{\"request\":\"r\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"dra-1\","
        "\"device\":\"gpu-0\"}]}}}}";
    put(&f, GS_LIVE_RESOURCECLAIMTEMPLATE, tmpl);
    put(&f, GS_LIVE_POD, tpod);
    put(&f, GS_LIVE_RESOURCECLAIM, done);
    update(&f);
    assert_true(series(&f, CLAIMS("claim_too_many_devices")) == 1);
    assert_true(series(&f, CLAIMS("claim_devices_allocated")) == 1); /* c-big: gpu-0 is c-one's now */
    assert_true(series(&f, CLAIMS("fits_now")) == -1);               /* c-one is allocated */
    assert_non_null(strstr(render(&f, GS_MON_PENDING, GS_MON_JSON), "\"claim\":\"ml/tp-r\",\"reason\":\"claim_too_many_devices\""));
    assert_true(series(&f, PENDING("claim_too_many_devices")) == 1);
    del(&f, GS_LIVE_POD, tpod);
    /* bound: not pending; the claim no longer counted once the pods are gone */
    del(&f, GS_LIVE_POD, pa);
    del(&f, GS_LIVE_POD, pb);
    del(&f, GS_LIVE_POD, p1);
    update(&f);
    assert_true(series(&f, CLAIMS("fits_now")) == -1);
    assert_true(series(&f, "gpusched_claim_oldest_pending_seconds{namespace=\"ml\"}") == -1);
    gs_monitor_stats st;
    gs_monitor_stats_get(f.m, &st);
    if (reclaim)
        assert_true(st.rebuilds > 0);
    free(c1), free(c2), free(c4), free(cn), free(p1), free(pa), free(pb), free(pn);
    fx_close(&f);
}

static void test_claims_by_reason(void **state)
{
    (void)state;
    claims_by_reason(0);
}

/* the same with the world re-read from the store at every update (DRA objects included) */
static void test_claims_reread(void **state)
{
    (void)state;
    claims_by_reason(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pending_to_scheduled),  cmocka_unit_test(test_restart_not_counted_again),
        cmocka_unit_test(test_hygiene_and_device_plugin), cmocka_unit_test(test_device_plugin_pods),
        cmocka_unit_test(test_preemption_once),      cmocka_unit_test(test_quota_refusal),
        cmocka_unit_test(test_shapes_and_reclaim),   cmocka_unit_test(test_idle_join),
        cmocka_unit_test(test_claims_by_reason),      cmocka_unit_test(test_claims_reread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
