/* test_dcgm.c - the utilization sources (lib/monitor/dcgm.c) without a server: dcgm-exporter
 * pods found in a store filled with pods as the GPU Operator, dcgm-exporter's Helm chart and
 * plain manifests label them; endpoint URLs (IPv4, IPv6, ports); the PromQL sent; options
 * refused; a closed port reported per endpoint without failing the round. The scrapes and
 * queries over loopback are in tests/monitor/dcgm_sources.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/dcgm.h"

/* Pods, as the API server sends them (the store prunes what it does not keep). */
static const char *const pods[] = {
    /* the GPU Operator's DaemonSet pod */
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"nvidia-dcgm-exporter-x7k2p\","
    "\"namespace\":\"gpu-operator\",\"labels\":{\"app\":\"nvidia-dcgm-exporter\","
    "\"controller-revision-hash\":\"6d8f7c9b5\",\"pod-template-generation\":\"1\"},"
    "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"name\":\"nvidia-dcgm-exporter\","
    "\"uid\":\"3c1e2d4f-0000-4000-8000-000000000001\",\"controller\":true}]},"
    "\"spec\":{\"nodeName\":\"gpu-node-a\",\"containers\":[{\"name\":\"nvidia-dcgm-exporter\","
    "\"image\":\"nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04\","
    "\"ports\":[{\"name\":\"metrics\",\"containerPort\":9400,\"protocol\":\"TCP\"}]}]},"
    "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.3.17\",\"podIPs\":[{\"ip\":\"10.0.3.17\"}],"
    "\"hostIP\":\"192.168.10.21\"}}",
    /* dcgm-exporter's Helm chart (IPv6 cluster) */
    "{\"metadata\":{\"name\":\"dcgm-exporter-4hq9z\",\"namespace\":\"monitoring\",\"labels\":"
    "{\"app.kubernetes.io/name\":\"dcgm-exporter\",\"app.kubernetes.io/instance\":\"dcgm-exporter\","
    "\"app.kubernetes.io/component\":\"dcgm-exporter\"}},"
    "\"spec\":{\"nodeName\":\"gpu-node-b\",\"containers\":[{\"name\":\"exporter\",\"image\":\"x\"}]},"
    "\"status\":{\"phase\":\"Running\",\"podIP\":\"fd00:10:244::1a\"}}",
    /* a hand-written manifest */
    "{\"metadata\":{\"name\":\"dcgm-exporter-plain\",\"namespace\":\"kube-system\",\"labels\":"
    "{\"app\":\"dcgm-exporter\"}},\"spec\":{\"nodeName\":\"gpu-node-c\",\"containers\":[]},"
    "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.5.3\"}}",
    /* exporter pods that cannot be scraped: pending without an IP, being deleted, failed */
    "{\"metadata\":{\"name\":\"nvidia-dcgm-exporter-pend1\",\"namespace\":\"gpu-operator\",\"labels\":"
    "{\"app\":\"nvidia-dcgm-exporter\"}},\"spec\":{\"nodeName\":\"gpu-node-d\",\"containers\":[]},"
    "\"status\":{\"phase\":\"Pending\"}}",
    "{\"metadata\":{\"name\":\"nvidia-dcgm-exporter-gone1\",\"namespace\":\"gpu-operator\","
    "\"deletionTimestamp\":\"2026-01-01T00:00:00Z\",\"labels\":{\"app\":\"nvidia-dcgm-exporter\"}},"
    "\"spec\":{\"nodeName\":\"gpu-node-e\",\"containers\":[]},"
    "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.6.9\"}}",
    "{\"metadata\":{\"name\":\"dcgm-exporter-failed\",\"namespace\":\"monitoring\",\"labels\":"
    "{\"app.kubernetes.io/name\":\"dcgm-exporter\"}},\"spec\":{\"nodeName\":\"gpu-node-f\",\"containers\":[]},"
    "\"status\":{\"phase\":\"Failed\",\"podIP\":\"10.0.7.1\"}}",
    /* gpusched's node agent (deploy/agent): dcgm-exporter's families on the same port */
    "{\"metadata\":{\"name\":\"gpusched-agent-q2x8z\",\"namespace\":\"gpusched-system\",\"labels\":"
    "{\"app.kubernetes.io/name\":\"gpusched\",\"app.kubernetes.io/component\":\"agent\"}},"
    "\"spec\":{\"nodeName\":\"gpu-node-g\",\"containers\":[]},"
    "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.9.4\"}}",
    /* not exporters: gpusched's monitor, a dashboard named after the exporter, a workload */
    "{\"metadata\":{\"name\":\"gpusched-monitor-0\",\"namespace\":\"gpusched-monitor\",\"labels\":"
    "{\"app.kubernetes.io/name\":\"gpusched\",\"app.kubernetes.io/component\":\"monitor\"}},"
    "\"spec\":{\"nodeName\":\"cpu-node-1\",\"containers\":[]},"
    "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.9.5\"}}",
    "{\"metadata\":{\"name\":\"dcgm-exporter-dashboard-0\",\"namespace\":\"monitoring\",\"labels\":"
    "{\"app\":\"dcgm-exporter-dashboard\",\"app.kubernetes.io/part-of\":\"dcgm-exporter\"}},"
    "\"spec\":{\"nodeName\":\"cpu-node-1\",\"containers\":[]},"
    "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.8.8\"}}",
    "{\"metadata\":{\"name\":\"train-llm-0\",\"namespace\":\"ml-team\",\"labels\":{\"app\":\"trainer\"}},"
    "\"spec\":{\"nodeName\":\"gpu-node-a\",\"containers\":[{\"name\":\"trainer\",\"image\":\"x\","
    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},"
    "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.3.40\"}}",
};

static gs_live_store *store_with_pods(void)
{
    gs_error err;
    gs_error_clear(&err);
    gs_live_store *st = gs_live_store_new(&err);
    assert_non_null(st);
    for (size_t i = 0; i < sizeof pods / sizeof *pods; i++) {
        int rc = gs_live_store_put(st, GS_LIVE_POD, pods[i], strlen(pods[i]), &err);
        if (rc != 0)
            print_error("pod %zu: %s\n", i, err.msg);
        assert_int_equal(rc, 0);
    }
    return st;
}

static const gs_dcgm_endpoint *by_pod(const gs_dcgm_endpoints *e, const char *pod)
{
    for (size_t i = 0; i < e->n; i++)
        if (strcmp(e->v[i].pod, pod) == 0)
            return &e->v[i];
    return NULL;
}

static void test_discover(void **state)
{
    (void)state;
    gs_live_store *st = store_with_pods();
    gs_dcgm_endpoints e;
    gs_dcgm_endpoints_init(&e);
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_dcgm_discover(st, 0, &e, &err), 0);
    assert_int_equal(e.n, 4);
    assert_int_equal(e.skipped, 3); /* pending, deleting, failed */
    const gs_dcgm_endpoint *ag = by_pod(&e, "gpusched-system/gpusched-agent-q2x8z");
    assert_non_null(ag);
    assert_string_equal(ag->url, "http://10.0.9.4:9400/metrics");
    assert_string_equal(ag->node, "gpu-node-g");
    const gs_dcgm_endpoint *p = by_pod(&e, "gpu-operator/nvidia-dcgm-exporter-x7k2p");
    assert_non_null(p);
    assert_string_equal(p->url, "http://10.0.3.17:9400/metrics");
    assert_string_equal(p->node, "gpu-node-a");
    p = by_pod(&e, "monitoring/dcgm-exporter-4hq9z");
    assert_non_null(p);
    assert_string_equal(p->url, "http://[fd00:10:244::1a]:9400/metrics");
    assert_string_equal(p->node, "gpu-node-b");
    p = by_pod(&e, "kube-system/dcgm-exporter-plain");
    assert_non_null(p);
    assert_string_equal(p->url, "http://10.0.5.3:9400/metrics");
    assert_string_equal(p->node, "gpu-node-c");
    /* another port, and a second discovery after a reset */
    gs_dcgm_endpoints_reset(&e);
    assert_int_equal(gs_dcgm_discover(st, 9500, &e, &err), 0);
    assert_int_equal(e.n, 4);
    p = by_pod(&e, "gpu-operator/nvidia-dcgm-exporter-x7k2p");
    assert_non_null(p);
    assert_string_equal(p->url, "http://10.0.3.17:9500/metrics");
    /* the exporter pod goes away: so does its endpoint */
    gs_dcgm_endpoints_reset(&e);
    assert_int_equal(gs_live_store_delete(st, GS_LIVE_POD, pods[0], strlen(pods[0]), &err), 0);
    assert_int_equal(gs_dcgm_discover(st, 0, &e, &err), 0);
    assert_int_equal(e.n, 3);
    assert_null(by_pod(&e, "gpu-operator/nvidia-dcgm-exporter-x7k2p"));
    gs_dcgm_endpoints_free(&e);
    gs_live_store_free(st);
}

static void test_labels_and_urls(void **state)
{
    (void)state;
    assert_true(gs_dcgm_exporter_label("app", "nvidia-dcgm-exporter", 20));
    assert_true(gs_dcgm_exporter_label("app", "dcgm-exporter", 13));
    assert_true(gs_dcgm_exporter_label("app.kubernetes.io/name", "dcgm-exporter", 13));
    assert_false(gs_dcgm_exporter_label("app.kubernetes.io/name", "nvidia-dcgm-exporter-x", 22));
    assert_false(gs_dcgm_exporter_label("app", "dcgm-exporte", 12));
    assert_false(gs_dcgm_exporter_label("name", "dcgm-exporter", 13));
    char buf[64];
    assert_string_equal(gs_dcgm_endpoint_url("10.1.2.3", 0, buf, sizeof buf), "http://10.1.2.3:9400/metrics");
    assert_string_equal(gs_dcgm_endpoint_url("::1", 9401, buf, sizeof buf), "http://[::1]:9401/metrics");
    assert_null(gs_dcgm_endpoint_url("", 0, buf, sizeof buf));
    assert_null(gs_dcgm_endpoint_url("10.1.2.3", 0, buf, 10));
}

static void test_promql(void **state)
{
    (void)state;
    char b[256];
    assert_string_equal(gs_dcgm_promql(GS_UTIL_GPU_UTIL, 0, b, sizeof b), "DCGM_FI_DEV_GPU_UTIL");
    assert_string_equal(gs_dcgm_promql(GS_UTIL_GR_ENGINE_ACTIVE, 1800000, b, sizeof b),
                        "max_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[1800s]) and "
                        "DCGM_FI_PROF_GR_ENGINE_ACTIVE offset 1800s");
    assert_string_equal(gs_dcgm_promql(GS_UTIL_GPU_UTIL, 1500, b, sizeof b),
                        "max_over_time(DCGM_FI_DEV_GPU_UTIL[1500ms]) and DCGM_FI_DEV_GPU_UTIL offset 1500ms");
    assert_null(gs_dcgm_promql(GS_UTIL_NONE, 0, b, sizeof b));
    assert_null(gs_dcgm_promql(GS_UTIL_GPU_UTIL, 1800000, b, 20));
    gs_dcgm_opts o = {.mode = GS_DCGM_PROMETHEUS, .window_ms = 1800000};
    assert_int_equal(gs_dcgm_lookback_ms(&o), 1800000);
    o.mode = GS_DCGM_DISCOVER;
    assert_int_equal(gs_dcgm_lookback_ms(&o), 0);
}

static void test_bad_options(void **state)
{
    (void)state;
    gs_util_set s;
    gs_util_set_init(&s);
    gs_error err;
    gs_error_clear(&err);
    gs_dcgm_opts o = {.mode = GS_DCGM_URLS};
    assert_int_equal(gs_dcgm_collect(NULL, &o, &s, NULL, NULL, NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_USAGE);
    o = (gs_dcgm_opts){.mode = GS_DCGM_PROMETHEUS, .prometheus = "prometheus:9090"};
    gs_error_clear(&err);
    assert_int_equal(gs_dcgm_collect(NULL, &o, &s, NULL, NULL, NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_USAGE);
    assert_non_null(strstr(err.msg, "expected http://"));
    o = (gs_dcgm_opts){.mode = GS_DCGM_PROMETHEUS, .prometheus = "http://p:9090", .window_ms = -1};
    gs_error_clear(&err);
    assert_int_equal(gs_dcgm_collect(NULL, &o, &s, NULL, NULL, NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_USAGE);
    o = (gs_dcgm_opts){.mode = GS_DCGM_DISCOVER};
    gs_error_clear(&err);
    assert_int_equal(gs_dcgm_collect(NULL, &o, &s, NULL, NULL, NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_USAGE);
    gs_util_set_free(&s);
}

typedef struct seen {
    int calls;
    gs_monitor_util_source src;
    char target[256];
    gs_error e;
} seen;

static void on_error(void *ctx, gs_monitor_util_source src, const char *target, const gs_error *e)
{
    seen *s = ctx;
    s->calls++;
    s->src = src;
    snprintf(s->target, sizeof s->target, "%s", target);
    s->e = *e;
}

/* A closed port: the endpoint is reported, the round is not an error. */
static void test_closed_port(void **state)
{
    (void)state;
    gs_util_set s;
    gs_util_set_init(&s);
    gs_error err;
    gs_error_clear(&err);
    const char *urls[] = {"http://127.0.0.1:1/metrics", "ftp://127.0.0.1/metrics"};
    gs_dcgm_opts o = {.mode = GS_DCGM_URLS, .urls = urls, .nurls = 2, .timeout_ms = 3000};
    seen sn = {0};
    gs_dcgm_round info;
    assert_int_equal(gs_dcgm_collect(NULL, &o, &s, &info, on_error, &sn, &err), 0);
    assert_int_equal(sn.calls, 2);
    assert_int_equal(info.sources, 2);
    assert_int_equal(info.ok, 0);
    assert_int_equal(info.failed, 2);
    assert_int_equal(sn.src, GS_MON_UTIL_ENDPOINT);
    assert_int_equal(sn.e.code, GS_ERR_IO);
    assert_int_equal(s.n, 0);
    gs_util_set_free(&s);
}

/* Discovery with no exporter in the store: nothing scraped, nothing failed. */
static void test_discover_none(void **state)
{
    (void)state;
    gs_error err;
    gs_error_clear(&err);
    gs_live_store *st = gs_live_store_new(&err);
    assert_non_null(st);
    assert_int_equal(gs_live_store_put(st, GS_LIVE_POD, pods[7], strlen(pods[7]), &err), 0);
    gs_util_set s;
    gs_util_set_init(&s);
    gs_dcgm_opts o = {.mode = GS_DCGM_DISCOVER};
    gs_dcgm_round info;
    seen sn = {0};
    assert_int_equal(gs_dcgm_collect(st, &o, &s, &info, on_error, &sn, &err), 0);
    assert_int_equal(info.sources, 0);
    assert_int_equal(sn.calls, 0);
    gs_util_set_free(&s);
    gs_live_store_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_discover),
        cmocka_unit_test(test_labels_and_urls),
        cmocka_unit_test(test_promql),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_closed_port),
        cmocka_unit_test(test_discover_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
