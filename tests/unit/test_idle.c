/* test_idle.c - idle tracking (lib/monitor/idle.c): the window's boundary, the threshold's,
 * a busy sample ending a stretch, devices forgotten when absent, sample timestamps, MIG
 * instance keys, whole GPUs with both families, shared GPUs (one series per pod), a change of
 * holder, the look-back of windowed rounds, staleness, and the dcgm-exporter fixtures of
 * tests/data/dcgm/ with both host label spellings. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/dcgm.h"
#include "gpusched/monitor.h"

#define MIN_MS 60000

/* ---------------------------------------------------------------- helpers */

typedef struct smp {
    const char *node, *uuid;
    int gpu, gi;
    gs_util_metric m;
    double util;
    int64_t ts;
    const char *ns, *pod;
} smp;

/* One round from literals (the strings stay valid: they are static). */
static void round_of(gs_util_set *s, const smp *v, size_t n)
{
    gs_util_set_reset(s);
    for (size_t i = 0; i < n; i++) {
        if (s->n == s->cap) {
            s->cap = s->cap ? s->cap * 2 : 16;
            s->v = realloc(s->v, s->cap * sizeof *s->v);
            assert_non_null(s->v);
        }
        gs_util_sample *o = &s->v[s->n++];
        memset(o, 0, sizeof *o);
        o->node = v[i].node ? v[i].node : "";
        o->uuid = v[i].uuid ? v[i].uuid : "";
        o->device = o->model = o->mig_profile = o->container = "";
        o->ns = v[i].ns ? v[i].ns : "";
        o->pod = v[i].pod ? v[i].pod : "";
        o->gpu = v[i].gpu;
        o->mig_instance = v[i].gi;
        o->metric = (uint8_t)(v[i].m ? v[i].m : GS_UTIL_GPU_UTIL);
        o->util = v[i].util;
        o->ts_ms = v[i].ts;
    }
}

static void observe(gs_idle_tracker *t, gs_util_set *s, const smp *v, size_t n, int64_t now)
{
    round_of(s, v, n);
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_idle_observe(t, s, now, &err), 0);
}

static gs_idle_tracker *tracker(double thr, int64_t window)
{
    gs_error err;
    gs_error_clear(&err);
    gs_idle_tracker *t = gs_idle_new(thr, window, &err);
    assert_non_null(t);
    return t;
}

static char *fixture(const char *name, size_t *len)
{
    const char *dir = getenv("GS_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/dcgm/%s", dir ? dir : "tests/data", name);
    gs_error err;
    gs_error_clear(&err);
    char *d = gs_read_file(path, 0, len, &err);
    if (!d)
        print_error("%s: %s\n", path, err.msg);
    assert_non_null(d);
    return d;
}

static void add_text(gs_util_set *s, const char *name)
{
    size_t len;
    char *d = fixture(name, &len);
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_util_parse_promtext(s, name, d, len, NULL, &err), 0);
    free(d);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---------------------------------------------------------------- tests */

static void test_window_boundary(void **state)
{
    (void)state;
    gs_idle_tracker *t = tracker(0.05, 30 * MIN_MS);
    gs_util_set s;
    gs_util_set_init(&s);
    const gs_idle_gpu *l;
    smp a[] = {{"n1", "GPU-a", 0, -1, GS_UTIL_GPU_UTIL, 0.0, 0, NULL, NULL}};
    int64_t t0 = 1700000000000;
    for (int64_t at = t0; at < t0 + 30 * MIN_MS; at += 30000) {
        observe(t, &s, a, 1, at);
        assert_int_equal(gs_idle_list(t, at, &l), 0);
    }
    /* the round one ms before the window's end does not count it; the one at the end does */
    observe(t, &s, a, 1, t0 + 30 * MIN_MS - 1);
    assert_int_equal(gs_idle_list(t, t0 + 30 * MIN_MS - 1, &l), 0);
    observe(t, &s, a, 1, t0 + 30 * MIN_MS);
    assert_int_equal(gs_idle_list(t, t0 + 30 * MIN_MS, &l), 1);
    assert_string_equal(l[0].node, "n1");
    assert_string_equal(l[0].gpu, "GPU-a");
    assert_string_equal(l[0].mig_instance, "");
    assert_string_equal(l[0].ns, "");
    assert_int_equal(l[0].idle_since_ms, t0);
    assert_int_equal(l[0].pods, 0);
    /* staleness: no round for longer than the window, nothing is said any more */
    assert_int_equal(gs_idle_list(t, t0 + 30 * MIN_MS + 30 * MIN_MS, &l), 1);
    assert_int_equal(gs_idle_list(t, t0 + 30 * MIN_MS + 30 * MIN_MS + 1, &l), 0);
    gs_util_set_free(&s);
    gs_idle_free(t);
}

static void test_threshold_and_reset(void **state)
{
    (void)state;
    gs_idle_tracker *t = tracker(0.05, 1000);
    gs_util_set s;
    gs_util_set_init(&s);
    const gs_idle_gpu *l;
    /* 5 % read from DCGM_FI_DEV_GPU_UTIL is 5/100.0: at the threshold, busy */
    smp busy5[] = {{"n1", "GPU-a", 0, -1, GS_UTIL_GPU_UTIL, 5 / 100.0, 0, NULL, NULL}};
    smp low[] = {{"n1", "GPU-a", 0, -1, GS_UTIL_GPU_UTIL, 0.04, 0, NULL, NULL}};
    smp zero[] = {{"n1", "GPU-a", 0, -1, GS_UTIL_GPU_UTIL, 0.0, 0, NULL, NULL}};
    observe(t, &s, busy5, 1, 0);
    observe(t, &s, busy5, 1, 2000);
    assert_int_equal(gs_idle_list(t, 2000, &l), 0);
    observe(t, &s, zero, 1, 3000);
    observe(t, &s, low, 1, 3500);
    observe(t, &s, zero, 1, 4000);
    assert_int_equal(gs_idle_list(t, 4000, &l), 1);
    assert_int_equal(l[0].idle_since_ms, 3000);
    assert_true(fabs(l[0].max_util - 0.04) < 1e-12);
    assert_true(fabs(l[0].util - 0.0) < 1e-12);
    /* one busy sample ends the stretch; the next idle one starts a new one */
    observe(t, &s, busy5, 1, 4500);
    assert_int_equal(gs_idle_list(t, 4500, &l), 0);
    observe(t, &s, zero, 1, 5000);
    observe(t, &s, zero, 1, 5999);
    assert_int_equal(gs_idle_list(t, 5999, &l), 0);
    observe(t, &s, zero, 1, 6000);
    assert_int_equal(gs_idle_list(t, 6000, &l), 1);
    assert_int_equal(l[0].idle_since_ms, 5000);
    assert_true(fabs(l[0].max_util) < 1e-12); /* the new stretch's own maximum */
    gs_util_set_free(&s);
    gs_idle_free(t);
}

static void test_forget_when_absent(void **state)
{
    (void)state;
    gs_idle_tracker *t = tracker(0.05, 1000);
    gs_util_set s;
    gs_util_set_init(&s);
    const gs_idle_gpu *l;
    smp both[] = {{"n1", "GPU-a", 0, -1, 0, 0.0, 0, NULL, NULL}, {"n1", "GPU-b", 1, -1, 0, 0.0, 0, NULL, NULL}};
    observe(t, &s, both, 2, 0);
    assert_int_equal(gs_idle_devices(t), 2);
    observe(t, &s, both + 1, 1, 600); /* GPU-a missing from this round */
    assert_int_equal(gs_idle_devices(t), 1);
    observe(t, &s, both, 2, 1200);
    assert_int_equal(gs_idle_devices(t), 2);
    assert_int_equal(gs_idle_list(t, 1200, &l), 1);
    assert_string_equal(l[0].gpu, "GPU-b");
    observe(t, &s, both, 2, 2200);
    assert_int_equal(gs_idle_list(t, 2200, &l), 2);
    assert_string_equal(l[0].gpu, "GPU-a");
    assert_int_equal(l[0].idle_since_ms, 1200); /* started over when it came back */
    assert_int_equal(l[1].idle_since_ms, 0);
    /* an empty round forgets everything */
    observe(t, &s, NULL, 0, 2300);
    assert_int_equal(gs_idle_devices(t), 0);
    assert_int_equal(gs_idle_list(t, 2300, &l), 0);
    gs_util_set_free(&s);
    gs_idle_free(t);
}

static void test_timestamps(void **state)
{
    (void)state;
    gs_idle_tracker *t = tracker(0.05, 10000);
    gs_util_set s;
    gs_util_set_init(&s);
    const gs_idle_gpu *l;
    /* the exporter's clock is an hour behind the monitor's: its timestamps win */
    int64_t now = 1700000000000, ts = now - 3600000;
    smp a[] = {{"n1", "GPU-a", 0, -1, 0, 0.0, ts, NULL, NULL}};
    observe(t, &s, a, 1, now);
    a[0].ts = ts + 9999;
    observe(t, &s, a, 1, now + 60000); /* a minute of monitor time, 9.999 s of samples */
    assert_int_equal(gs_idle_list(t, now + 60000, &l), 0);
    a[0].ts = ts + 10000;
    observe(t, &s, a, 1, now + 61000);
    assert_int_equal(gs_idle_list(t, now + 61000, &l), 1);
    assert_int_equal(l[0].idle_since_ms, ts);
    /* two series of one device in a round: the latest timestamp is the round's */
    smp two[] = {{"n1", "GPU-a", 0, -1, GS_UTIL_GPU_UTIL, 0.0, ts + 20000, NULL, NULL},
                 {"n1", "GPU-a", 0, -1, GS_UTIL_GR_ENGINE_ACTIVE, 0.01, ts + 20500, NULL, NULL}};
    observe(t, &s, two, 2, now + 70000);
    assert_int_equal(gs_idle_list(t, now + 70000, &l), 1);
    assert_true(fabs(l[0].util - 0.01) < 1e-12);
    assert_true(fabs(l[0].max_util - 0.01) < 1e-12);
    gs_util_set_free(&s);
    gs_idle_free(t);
}

static void test_families_and_keys(void **state)
{
    (void)state;
    gs_idle_tracker *t = tracker(0.05, 0);
    gs_util_set s;
    gs_util_set_init(&s);
    const gs_idle_gpu *l;
    smp v[] = {
        /* whole GPU with both families: the higher wins (GR says busy) */
        {"n1", "GPU-a", 0, -1, GS_UTIL_GPU_UTIL, 0.0, 0, NULL, NULL},
        {"n1", "GPU-a", 0, -1, GS_UTIL_GR_ENGINE_ACTIVE, 0.2, 0, NULL, NULL},
        /* whole GPU with GR only (an exporter without GPU_UTIL): GR is used */
        {"n1", "GPU-b", 1, -1, GS_UTIL_GR_ENGINE_ACTIVE, 0.01, 0, NULL, NULL},
        /* no UUID: the index keys it (10 sorts after 2) */
        {"n2", NULL, 10, -1, GS_UTIL_GPU_UTIL, 0.0, 0, NULL, NULL},
        {"n2", NULL, 2, -1, GS_UTIL_GPU_UTIL, 0.0, 0, NULL, NULL},
        /* neither UUID nor index: no device */
        {"n2", NULL, -1, -1, GS_UTIL_GPU_UTIL, 0.0, 0, NULL, NULL},
        /* the same UUID on another node is another device (a bad label, kept apart) */
        {"n3", "GPU-a", 0, -1, GS_UTIL_GPU_UTIL, 0.0, 0, NULL, NULL},
    };
    observe(t, &s, v, N(v), 1000);
    assert_int_equal(gs_idle_devices(t), 5);
    assert_int_equal(gs_idle_list(t, 1000, &l), 4);
    assert_string_equal(l[0].node, "n1");
    assert_string_equal(l[0].gpu, "GPU-b");
    assert_string_equal(l[1].node, "n2");
    assert_string_equal(l[1].gpu, "2");
    assert_string_equal(l[2].gpu, "10");
    assert_string_equal(l[3].node, "n3");
    assert_string_equal(l[3].gpu, "GPU-a");
    gs_util_set_free(&s);
    gs_idle_free(t);
}

static void test_mig_fixture(void **state)
{
    (void)state;
    gs_idle_tracker *t = tracker(0.05, 60000);
    gs_util_set s;
    gs_util_set_init(&s);
    const gs_idle_gpu *l;
    gs_error err;
    gs_error_clear(&err);
    for (int i = 0; i <= 2; i++) {
        gs_util_set_reset(&s);
        add_text(&s, "a100-mig-Hostname.prom");
        assert_int_equal(gs_idle_observe(t, &s, i * 30000, &err), 0);
    }
    /* GPU 0 in MIG mode: instances 1, 5, 13 (GR only); GPU 1 whole (GPU_UTIL 88 %, GR 0.88) */
    assert_int_equal(gs_idle_devices(t), 4);
    assert_int_equal(gs_idle_list(t, 60000, &l), 2);
    for (int i = 0; i < 2; i++) {
        assert_string_equal(l[i].node, "gpu-node-mig");
        assert_string_equal(l[i].gpu, "GPU-c0ffee00-4d1c-1000-9e2a-6c1f0b7d3a00");
        assert_string_equal(l[i].model, "NVIDIA A100-SXM4-80GB");
        assert_int_equal(l[i].idle_since_ms, 0);
    }
    /* instances in numeric order */
    assert_string_equal(l[0].mig_instance, "1");
    assert_string_equal(l[0].mig_profile, "3g.40gb");
    assert_string_equal(l[1].mig_instance, "13");
    assert_string_equal(l[1].mig_profile, "1g.10gb");
    gs_util_set_free(&s);
    gs_idle_free(t);
}

static void test_both_spellings(void **state)
{
    (void)state;
    gs_idle_tracker *t = tracker(0.05, 0);
    gs_util_set s;
    gs_util_set_init(&s);
    const gs_idle_gpu *l;
    gs_error err;
    gs_error_clear(&err);
    add_text(&s, "h100-8gpu-Hostname.prom"); /* Hostname= */
    add_text(&s, "l4-2gpu-hostname.prom");   /* hostname= */
    assert_int_equal(gs_idle_observe(t, &s, 1000, &err), 0);
    /* H100: 8 GPUs; L4: GPU 0 has no data (blank, NaN), GPU 1 is busy */
    assert_int_equal(gs_idle_devices(t), 9);
    /* idle on gpu-node-a: GPUs 0, 1, 6 at 0 %, and 4 at 3 % with GR 0.0279 */
    assert_int_equal(gs_idle_list(t, 1000, &l), 4);
    static const int idle[4] = {0, 1, 4, 6};
    for (int i = 0; i < 4; i++) {
        char uuid[64];
        snprintf(uuid, sizeof uuid, "GPU-5f3e9a%02x-4d1c-%04x-9e2a-6c1f0b7d3a%02x", idle[i],
                 0x1000 + idle[i], idle[i]);
        assert_string_equal(l[i].node, "gpu-node-a");
        assert_string_equal(l[i].gpu, uuid);
    }
    assert_true(fabs(l[2].util - 0.03) < 1e-12); /* max(3 %, 0.0279) */
    /* hostname spelling: make the L4's busy GPU idle and see it under gpu-node-b */
    gs_util_set_reset(&s);
    size_t len;
    char *d = fixture("l4-2gpu-hostname.prom", &len);
    char *p = strstr(d, "} 62\n");
    assert_non_null(p);
    memcpy(p, "} 01\n", 5);
    p = strstr(d, "} 0.598800\n");
    assert_non_null(p);
    memcpy(p, "} 0.000000\n", 11);
    assert_int_equal(gs_util_parse_promtext(&s, "l4", d, len, NULL, &err), 0);
    free(d);
    assert_int_equal(gs_idle_observe(t, &s, 2000, &err), 0);
    assert_int_equal(gs_idle_devices(t), 1);
    assert_int_equal(gs_idle_list(t, 2000, &l), 1);
    assert_string_equal(l[0].node, "gpu-node-b");
    assert_string_equal(l[0].gpu, "GPU-a1b2c301-4d1c-1001-9e2a-6c1f0b7d3a01");
    gs_util_set_free(&s);
    gs_idle_free(t);
}

static void test_shared_gpu_fixture(void **state)
{
    (void)state;
    gs_idle_tracker *t = tracker(0.05, 0);
    gs_util_set s;
    gs_util_set_init(&s);
    const gs_idle_gpu *l;
    gs_error err;
    gs_error_clear(&err);
    /* pod mapping: GPU 0 held by ml-team/train-llm-0 (idle), GPU 1 shared by two serving
     * pods (37 %: busy), GPUs 2 and 3 held by no pod (idle) */
    add_text(&s, "a10g-podmap-hostname.prom");
    assert_int_equal(gs_idle_observe(t, &s, 1000, &err), 0);
    assert_int_equal(gs_idle_devices(t), 4);
    assert_int_equal(gs_idle_list(t, 1000, &l), 3);
    assert_string_equal(l[0].node, "gpu-node-c");
    assert_string_equal(l[0].gpu, "GPU-0a10f000-4d1c-1000-9e2a-6c1f0b7d3a00");
    assert_string_equal(l[0].ns, "ml-team");
    assert_string_equal(l[0].pod, "train-llm-0");
    assert_int_equal(l[0].pods, 1); /* two families, one pod */
    assert_string_equal(l[1].pod, "");
    assert_int_equal(l[1].pods, 0);
    /* the shared GPU idle: one device, both pods counted, no pod named */
    smp v[] = {
        {"gpu-node-c", "GPU-s", 1, -1, GS_UTIL_GPU_UTIL, 0.0, 0, "serving", "chat-7f9c-abcde"},
        {"gpu-node-c", "GPU-s", 1, -1, GS_UTIL_GPU_UTIL, 0.0, 0, "serving", "chat-7f9c-fghij"},
        {"gpu-node-c", "GPU-s", 1, -1, GS_UTIL_GR_ENGINE_ACTIVE, 0.0, 0, "serving", "chat-7f9c-fghij"},
        {"gpu-node-c", "GPU-s", 1, -1, GS_UTIL_GR_ENGINE_ACTIVE, 0.01, 0, "serving", "chat-7f9c-abcde"},
        {"gpu-node-c", "GPU-s", 1, -1, GS_UTIL_GR_ENGINE_ACTIVE, 0.0, 0, "other", "chat-7f9c-abcde"},
    };
    observe(t, &s, v, N(v), 2000);
    assert_int_equal(gs_idle_list(t, 2000, &l), 1);
    assert_string_equal(l[0].gpu, "GPU-s");
    assert_string_equal(l[0].ns, "");
    assert_string_equal(l[0].pod, "");
    assert_int_equal(l[0].pods, 3);
    assert_true(fabs(l[0].util - 0.01) < 1e-12);
    /* one busy pod's series makes the whole shared GPU busy */
    v[4].util = 0.5;
    observe(t, &s, v, N(v), 3000);
    assert_int_equal(gs_idle_list(t, 3000, &l), 0);
    gs_util_set_free(&s);
    gs_idle_free(t);
}

static void test_holder_change(void **state)
{
    (void)state;
    gs_idle_tracker *t = tracker(0.05, 1000);
    gs_util_set s;
    gs_util_set_init(&s);
    const gs_idle_gpu *l;
    smp a[] = {{"n1", "GPU-a", 0, -1, 0, 0.0, 0, "ns1", "pod-a"}};
    observe(t, &s, a, 1, 0);
    observe(t, &s, a, 1, 1000);
    assert_int_equal(gs_idle_list(t, 1000, &l), 1);
    assert_string_equal(l[0].pod, "pod-a");
    /* another pod got the GPU: its own stretch */
    a[0].pod = "pod-b";
    observe(t, &s, a, 1, 1500);
    assert_int_equal(gs_idle_list(t, 1500, &l), 0);
    observe(t, &s, a, 1, 2500);
    assert_int_equal(gs_idle_list(t, 2500, &l), 1);
    assert_string_equal(l[0].ns, "ns1");
    assert_string_equal(l[0].pod, "pod-b");
    assert_int_equal(l[0].idle_since_ms, 1500);
    gs_util_set_free(&s);
    gs_idle_free(t);
}

static void test_lookback_and_query(void **state)
{
    (void)state;
    gs_idle_tracker *t = tracker(0.05, 30 * MIN_MS);
    gs_idle_set_lookback(t, 30 * MIN_MS);
    gs_util_set s;
    gs_util_set_init(&s);
    const gs_idle_gpu *l;
    gs_error err;
    gs_error_clear(&err);
    /* a Prometheus answer of windowed maxima: one round covers the window */
    size_t len;
    char *d = fixture("query.json", &len);
    assert_int_equal(gs_util_parse_query_json(&s, "query.json", d, len, GS_UTIL_NONE, NULL, &err), 0);
    free(d);
    int64_t ts = 1764632061337;
    assert_int_equal(gs_idle_observe(t, &s, ts + 5000, &err), 0);
    assert_int_equal(gs_idle_list(t, ts + 5000, &l), 2);
    /* sorted by node: gpu-node-a (GPU 0, 0 %), gpu-node-mig (instance 13, 0.012) */
    assert_string_equal(l[0].node, "gpu-node-a");
    assert_string_equal(l[0].ns, "ml-team"); /* exported_namespace wins */
    assert_string_equal(l[0].pod, "train-llm-0");
    assert_int_equal(l[0].idle_since_ms, ts - 30 * MIN_MS);
    assert_string_equal(l[1].node, "gpu-node-mig");
    assert_string_equal(l[1].mig_instance, "13");
    assert_string_equal(l[1].pod, "nb-ab12");
    gs_util_set_free(&s);
    gs_idle_free(t);
}

static void test_churn_bounded(void **state)
{
    (void)state;
    gs_idle_tracker *t = tracker(0.05, 0);
    gs_util_set s;
    gs_util_set_init(&s);
    const gs_idle_gpu *l;
    gs_error err;
    gs_error_clear(&err);
    static char names[2][512][24];
    size_t bytes10 = 0, max_bytes = 0;
    for (int r = 0; r < 300; r++) {
        gs_util_set_reset(&s);
        char(*nm)[24] = names[r & 1];
        for (int i = 0; i < 512; i++) {
            /* a new node name and pod every round: everything of the last round is forgotten */
            snprintf(nm[i], sizeof nm[i], "node-%d-%d", r, i / 8);
            if (s.n == s.cap) {
                s.cap = s.cap ? s.cap * 2 : 16;
                s.v = realloc(s.v, s.cap * sizeof *s.v);
            }
            gs_util_sample *o = &s.v[s.n++];
            memset(o, 0, sizeof *o);
            o->node = nm[i];
            o->uuid = o->device = o->model = o->mig_profile = o->container = "";
            o->ns = "ns";
            o->pod = nm[i];
            o->gpu = i % 8;
            o->mig_instance = -1;
            o->metric = GS_UTIL_GPU_UTIL;
            o->util = (i % 3) ? 0.0 : 0.9;
        }
        assert_int_equal(gs_idle_observe(t, &s, 1000 + r, &err), 0);
        assert_int_equal(gs_idle_devices(t), 512);
        size_t n = gs_idle_list(t, 1000 + r, &l);
        assert_int_equal(n, 512 - 171);
        assert_string_equal(l[0].pod, l[0].node);
        assert_string_equal(l[0].ns, "ns");
        if (r == 10)
            bytes10 = gs_idle_bytes(t);
        if (r > 10 && gs_idle_bytes(t) > max_bytes)
            max_bytes = gs_idle_bytes(t);
    }
    /* strings of forgotten devices are reclaimed: memory stays within a small factor of
     * what one round's devices need */
    assert_true(bytes10 > 0);
    assert_true(max_bytes <= 3 * bytes10);
    gs_util_set_free(&s);
    gs_idle_free(t);
}

static void test_bad_args(void **state)
{
    (void)state;
    gs_error err;
    gs_error_clear(&err);
    assert_null(gs_idle_new(1.5, 1000, &err));
    assert_int_equal(err.code, GS_ERR_USAGE);
    gs_error_clear(&err);
    assert_null(gs_idle_new(NAN, 1000, &err));
    assert_int_equal(err.code, GS_ERR_USAGE);
    gs_error_clear(&err);
    assert_null(gs_idle_new(0.05, -1, &err));
    assert_int_equal(err.code, GS_ERR_USAGE);
    gs_idle_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_boundary),
        cmocka_unit_test(test_threshold_and_reset),
        cmocka_unit_test(test_forget_when_absent),
        cmocka_unit_test(test_timestamps),
        cmocka_unit_test(test_families_and_keys),
        cmocka_unit_test(test_mig_fixture),
        cmocka_unit_test(test_both_spellings),
        cmocka_unit_test(test_shared_gpu_fixture),
        cmocka_unit_test(test_holder_change),
        cmocka_unit_test(test_lookback_and_query),
        cmocka_unit_test(test_churn_bounded),
        cmocka_unit_test(test_bad_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
