/* test_health.c - the agent's health state machine and XID policy (lib/agent/health.c):
 * ignored XIDs, critical XIDs, the threshold within a window and its expiry, MIG attribution,
 * registration and wait failures, recovery after a quiet period with probes and none while
 * probes fail, the policy string and NVIDIA's DP_* variables, and the generation counter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/health.h"

#define S 1000 /* ms */

/* Two whole GPUs (0, 1), then GPU 2 in MIG mode with three MIG devices (GI 1/CI 0, GI 2/CI 0,
 * GI 2/CI 1), then GPU 3 lost at discovery. */
static gs_nvml_mig_device migs[3];
static gs_nvml_gpu gpus[4];
static gs_nvml_inventory inv;

static void build_inventory(void)
{
    memset(gpus, 0, sizeof gpus);
    memset(migs, 0, sizeof migs);
    for (int i = 0; i < 4; i++) {
        gpus[i].index = (unsigned)i;
        snprintf(gpus[i].uuid, sizeof gpus[i].uuid, "GPU-%d", i);
    }
    const unsigned gi[3] = {1, 2, 2}, ci[3] = {0, 0, 1};
    for (int j = 0; j < 3; j++) {
        migs[j].index = (unsigned)j;
        migs[j].gpu_instance_id = gi[j];
        migs[j].compute_instance_id = ci[j];
        snprintf(migs[j].uuid, sizeof migs[j].uuid, "MIG-%d", j);
    }
    gpus[2].mig_capable = 1;
    gpus[2].mig_current = 1;
    gpus[2].n_mig = 3;
    gpus[2].mig = migs;
    gpus[3].lost = 1;
    snprintf(gpus[3].lost_reason, sizeof gpus[3].lost_reason,
             "nvmlDeviceGetUUID: GPU is lost (NVML error 15)");
    inv.n_gpus = 4;
    inv.gpus = gpus;
}

static gs_health *new_health(const gs_health_policy *p)
{
    build_inventory();
    gs_health_policy def;
    if (!p) {
        gs_health_policy_default(&def);
        p = &def;
    }
    gs_health *h = gs_health_new(&inv, p);
    assert_non_null(h);
    return h;
}

static gs_nvml_event xid(int gpu, unsigned long long code)
{
    gs_nvml_event e = {gpu, GS_NVML_EVENT_XID, code, ~0u, ~0u, -1};
    return e;
}

static const gs_health_device *dev(gs_health *h, int gpu, int mig)
{
    long i = gs_health_find(h, gpu, mig);
    assert_true(i >= 0);
    return gs_health_get(h, (size_t)i);
}

static void devices_and_lost(void **state)
{
    gs_health *h = new_health(NULL);
    /* GPU 0, GPU 1, three MIG devices of GPU 2 (not GPU 2 itself), GPU 3 */
    assert_int_equal(gs_health_count(h), 6);
    assert_int_equal(gs_health_find(h, 2, -1), -1);
    assert_string_equal(dev(h, 2, 1)->uuid, "MIG-1");
    assert_int_equal(dev(h, 2, 2)->compute_instance_id, 1);
    const gs_health_device *lost = dev(h, 3, -1);
    assert_false(lost->healthy);
    assert_non_null(strstr(lost->reason, "lost at discovery: nvmlDeviceGetUUID: GPU is lost"));
    assert_int_equal(gs_health_unhealthy(h), 1);
    assert_int_equal(gs_health_generation(h), 0); /* a start state is not a transition */
    /* a device lost at discovery is due for a probe at once, and only it */
    size_t due[8];
    assert_int_equal(gs_health_probe_due(h, 0, due, 8), 1);
    assert_int_equal(due[0], (size_t)gs_health_find(h, 3, -1));
    assert_int_equal(gs_health_probe_due(h, 1 * S, due, 8), 0); /* moved one interval on */
    /* its probe succeeds: back (nothing bad happened since the start) */
    assert_int_equal(gs_health_probe_result(h, due[0], 1, NULL, 2 * S), 1);
    assert_true(dev(h, 3, -1)->healthy);
    assert_int_equal(gs_health_generation(h), 1);
    gs_health_free(h);
}

static void ignored_xids(void **state)
{
    gs_health *h = new_health(NULL);
    const unsigned long long app[] = {13, 31, 43, 45, 68, 109};
    for (int k = 0; k < 6; k++)
        for (int rep = 0; rep < 5; rep++) {
            gs_nvml_event e = xid(0, app[k]);
            assert_int_equal(gs_health_event(h, &e, (k * 5 + rep) * S), 0);
        }
    assert_true(dev(h, 0, -1)->healthy);
    assert_int_equal(dev(h, 0, -1)->last_xid, 109); /* seen, recorded, not held against it */
    assert_int_equal(gs_health_generation(h), 0);
    /* ECC events (not XIDs) change nothing either, as in NVIDIA's plugin */
    gs_nvml_event dbe = {0, GS_NVML_EVENT_DBE, 0, ~0u, ~0u, -1};
    assert_int_equal(gs_health_event(h, &dbe, 40 * S), 0);
    assert_true(dev(h, 0, -1)->healthy);
    gs_health_free(h);
}

static void critical_xid(void **state)
{
    gs_health *h = new_health(NULL);
    gs_nvml_event e = xid(1, 79);
    assert_int_equal(gs_health_event(h, &e, 5 * S), 1);
    const gs_health_device *d = dev(h, 1, -1);
    assert_false(d->healthy);
    assert_string_equal(d->reason, "XID 79 (GPU has fallen off the bus) at t=5.000s");
    assert_int_equal(d->since_ms, 5 * S);
    assert_int_equal(d->transitions, 1);
    assert_int_equal(d->last_xid, 79);
    assert_true(dev(h, 0, -1)->healthy); /* the other GPU is untouched */
    assert_int_equal(gs_health_generation(h), 1);
    /* a second critical XID while unhealthy: no transition, no generation change */
    e.xid = 48;
    assert_int_equal(gs_health_event(h, &e, 6 * S), 0);
    assert_int_equal(gs_health_generation(h), 1);
    assert_non_null(strstr(d->reason, "XID 48 (Double Bit ECC Error)"));
    /* epoch-millisecond clocks give an ISO time */
    e = xid(0, 95);
    gs_health_event(h, &e, INT64_C(1764657333000));
    assert_string_equal(dev(h, 0, -1)->reason,
                        "XID 95 (Uncontained ECC error) at 2025-12-02T06:35:33Z");
    gs_health_free(h);
}

static void threshold_in_window(void **state)
{
    gs_health *h = new_health(NULL); /* 3 within 10 min */
    gs_nvml_event e = xid(0, 32);    /* not ignored, not critical: counted */
    assert_int_equal(gs_health_event(h, &e, 0), 0);
    assert_int_equal(gs_health_event(h, &e, 60 * S), 0);
    assert_true(dev(h, 0, -1)->healthy);
    assert_int_equal(gs_health_event(h, &e, 120 * S), 1);
    const gs_health_device *d = dev(h, 0, -1);
    assert_false(d->healthy);
    assert_non_null(strstr(d->reason, "XID 32 (Invalid or corrupted push buffer stream) 3 "
                                      "times within 10m, the last at t=120.000s"));
    gs_health_free(h);
}

static void window_expiry(void **state)
{
    gs_health *h = new_health(NULL);
    gs_nvml_event e = xid(0, 32);
    /* one every 6 minutes: never 3 within 10 */
    for (int k = 0; k < 10; k++)
        assert_int_equal(gs_health_event(h, &e, (int64_t)k * 360 * S), 0);
    assert_true(dev(h, 0, -1)->healthy);
    /* 20 minutes later the old ones have left the window: two more are not enough... */
    const int64_t t = 9 * 360 * S + 1200 * S;
    assert_int_equal(gs_health_event(h, &e, t), 0);
    assert_int_equal(gs_health_event(h, &e, t + 30 * S), 0);
    assert_true(dev(h, 0, -1)->healthy);
    /* ...a third within the window is */
    assert_int_equal(gs_health_event(h, &e, t + 60 * S), 1);
    gs_health_free(h);

    /* a smaller window from the policy string */
    gs_health_policy p;
    gs_health_policy_default(&p);
    gs_error err;
    const char *s = "threshold=2 window=10s";
    assert_int_equal(gs_health_policy_parse(&p, s, strlen(s), &err), 0);
    h = new_health(&p);
    assert_int_equal(gs_health_event(h, &e, 0), 0);
    assert_int_equal(gs_health_event(h, &e, 10 * S), 0); /* 10 s apart: outside */
    assert_int_equal(gs_health_event(h, &e, 19 * S), 1);
    assert_non_null(strstr(dev(h, 0, -1)->reason, "2 times within 10s"));
    gs_health_free(h);
}

static void mig_attribution(void **state)
{
    gs_health *h = new_health(NULL);
    /* GI 2 / CI 1, resolved by the event layer to MIG index 2: only that one */
    gs_nvml_event e = {2, GS_NVML_EVENT_XID, 48, 2, 1, 2};
    assert_int_equal(gs_health_event(h, &e, S), 1);
    assert_true(dev(h, 2, 0)->healthy);
    assert_true(dev(h, 2, 1)->healthy); /* same GI, other CI */
    assert_false(dev(h, 2, 2)->healthy);
    /* GI/CI given but not resolved: matched on the ids */
    gs_nvml_event f = {2, GS_NVML_EVENT_XID, 48, 1, 0, -1};
    assert_int_equal(gs_health_event(h, &f, 2 * S), 1);
    assert_false(dev(h, 2, 0)->healthy);
    assert_true(dev(h, 2, 1)->healthy);
    /* ids matching no device: nothing, as NVIDIA's plugin does */
    gs_nvml_event g = {2, GS_NVML_EVENT_XID, 48, 7, 0, -1};
    assert_int_equal(gs_health_event(h, &g, 3 * S), 0);
    assert_true(dev(h, 2, 1)->healthy);
    /* no ids (~0u): every device of that GPU */
    gs_nvml_event w = xid(2, 79);
    assert_int_equal(gs_health_event(h, &w, 4 * S), 1); /* the one still healthy */
    assert_false(dev(h, 2, 1)->healthy);
    assert_true(dev(h, 0, -1)->healthy);
    /* an event from a device the layer could not attribute: every device */
    gs_nvml_event u = xid(-1, 79);
    assert_int_equal(gs_health_event(h, &u, 5 * S), 2); /* GPUs 0 and 1 */
    assert_int_equal(gs_health_unhealthy(h), 6);
    gs_health_free(h);
}

static void registration_and_wait_failures(void **state)
{
    gs_health *h = new_health(NULL);
    assert_int_equal(gs_health_registration(h, 0, GS_NVML_REG_NOT_SUPPORTED, "too old", S), 0);
    assert_true(dev(h, 0, -1)->healthy);
    assert_int_equal(gs_health_registration(h, 2, GS_NVML_REG_FAILED,
                                            "nvmlDeviceRegisterEvents: Unknown Error", S),
                     3);
    assert_non_null(strstr(dev(h, 2, 0)->reason, "health events could not be registered: "
                                                 "nvmlDeviceRegisterEvents: Unknown Error"));
    assert_int_equal(gs_health_wait_error(h, "nvmlEventSetWait_v2 failed: Unknown Error", 2 * S),
                     2); /* GPUs 0 and 1; the others were unhealthy already */
    assert_int_equal(gs_health_unhealthy(h), 6);
    assert_non_null(strstr(dev(h, 0, -1)->reason, "health checks failing: nvmlEventSetWait_v2"));
    gs_health_free(h);
}

static void recovery_after_quiet_period(void **state)
{
    gs_health *h = new_health(NULL); /* probe every 30 s, 60 s quiet */
    gs_nvml_event e = xid(0, 79);
    gs_health_event(h, &e, 0);
    size_t i = (size_t)gs_health_find(h, 0, -1), due[8];
    assert_int_equal(gs_health_probe_due(h, 29 * S, due, 8), 1); /* only GPU 3 (lost) */
    assert_int_equal(due[0], (size_t)gs_health_find(h, 3, -1));
    gs_health_probe_result(h, due[0], 0, "GPU is lost", 29 * S);
    assert_int_equal(gs_health_probe_due(h, 30 * S, due, 8), 1);
    assert_int_equal(due[0], i);
    /* the probe at 30 s works, but the quiet period has not passed: still unhealthy */
    assert_int_equal(gs_health_probe_result(h, i, 1, NULL, 30 * S), 0);
    assert_false(dev(h, 0, -1)->healthy);
    assert_int_equal(dev(h, 0, -1)->probe_ok, 1);
    assert_int_equal(gs_health_tick(h, 59 * S), 0);
    /* 60 s after the XID with a good probe: healthy, one generation step */
    uint64_t gen = gs_health_generation(h);
    assert_int_equal(gs_health_tick(h, 60 * S), 1);
    const gs_health_device *d = dev(h, 0, -1);
    assert_true(d->healthy);
    assert_string_equal(d->reason, "");
    assert_int_equal(d->since_ms, 60 * S);
    assert_int_equal(d->transitions, 2);
    assert_int_equal(gs_health_generation(h), gen + 1);
    assert_int_equal(gs_health_tick(h, 61 * S), 0);
    assert_int_equal(gs_health_generation(h), gen + 1);

    /* a critical XID after a good probe: that probe no longer counts */
    gs_health_event(h, &e, 100 * S);
    assert_int_equal(gs_health_probe_due(h, 130 * S, due, 8), 2); /* GPU 0 and lost GPU 3 */
    assert_int_equal(gs_health_probe_result(h, i, 1, NULL, 130 * S), 0);
    gs_health_event(h, &e, 140 * S); /* again: quiet restarts, the probe is void */
    assert_int_equal(gs_health_tick(h, 200 * S), 0);
    assert_int_equal(dev(h, 0, -1)->probe_ok, -1);
    assert_int_equal(gs_health_probe_result(h, i, 1, NULL, 201 * S), 1); /* 61 s quiet */
    gs_health_free(h);
}

static void no_recovery_while_probes_fail(void **state)
{
    gs_health *h = new_health(NULL);
    gs_nvml_event e = xid(1, 79);
    gs_health_event(h, &e, 0);
    size_t i = (size_t)gs_health_find(h, 1, -1), due[8];
    for (int64_t t = 30 * S; t <= 600 * S; t += 30 * S) {
        size_t n = gs_health_probe_due(h, t, due, 8);
        int seen = 0;
        for (size_t k = 0; k < n; k++)
            if (due[k] == i) {
                seen = 1;
                gs_health_probe_result(h, i, 0,
                                       "nvmlDeviceGetHandleByUUID(GPU-1): GPU is lost (NVML "
                                       "error 15)",
                                       t);
            }
        assert_true(seen);
        assert_int_equal(gs_health_tick(h, t + 1), 0);
        assert_false(dev(h, 1, -1)->healthy);
    }
    assert_int_equal(dev(h, 1, -1)->probe_ok, 0);
    assert_non_null(strstr(dev(h, 1, -1)->probe_reason, "GPU is lost"));
    /* it comes back on the bus: the first good probe starts the quiet period's end... */
    assert_int_equal(gs_health_probe_result(h, i, 1, NULL, 630 * S), 0); /* 30 s after a fail */
    assert_int_equal(gs_health_tick(h, 659 * S), 0);
    assert_int_equal(gs_health_tick(h, 660 * S), 1); /* 60 s after the last failed probe */
    assert_true(dev(h, 1, -1)->healthy);
    gs_health_free(h);
}

static void policy_string(void **state)
{
    gs_health_policy p;
    gs_health_policy_default(&p);
    assert_int_equal(gs_health_xid_class(&p, 13), GS_XID_IGNORED);
    assert_int_equal(gs_health_xid_class(&p, 79), GS_XID_CRITICAL);
    assert_int_equal(gs_health_xid_class(&p, 94), GS_XID_COUNTED);
    assert_int_equal(gs_health_xid_class(&p, 100000), GS_XID_COUNTED);
    assert_int_equal(p.threshold, 3);
    assert_int_equal(p.window_ms, 600 * S);
    assert_int_equal(p.probe_interval_ms, 30 * S);
    assert_int_equal(p.quiet_ms, 60 * S);
    gs_error err;
    const char *s = "ignore=94, critical=32,8;counted=79 probe=5s;quiet=2m window=1h "
                    "threshold=5";
    assert_int_equal(gs_health_policy_parse(&p, s, strlen(s), &err), 0);
    assert_int_equal(gs_health_xid_class(&p, 94), GS_XID_IGNORED);
    assert_int_equal(gs_health_xid_class(&p, 32), GS_XID_CRITICAL);
    assert_int_equal(gs_health_xid_class(&p, 8), GS_XID_CRITICAL);
    assert_int_equal(gs_health_xid_class(&p, 79), GS_XID_COUNTED);
    assert_int_equal(p.probe_interval_ms, 5 * S);
    assert_int_equal(p.quiet_ms, 120 * S);
    assert_int_equal(p.window_ms, 3600 * S);
    assert_int_equal(p.threshold, 5);

    static const struct {
        const char *in, *msg;
    } bad[] = {
        {"threshold=0", "threshold=0: a count from 1 to 1000"},
        {"window=10", "window=10: a duration from 1ms to 168h"},
        {"quiet=5d", "quiet=5d: a duration"},
        {"probe=0s", "probe=0s: a duration"},
        {"ignore=13,x1", "ignore: \"x1\" is not an XID"},
        {"critical=5000", "critical: XID 5000 is out of range"},
        {"bogus=1", "unknown health policy key \"bogus\""},
        {"ignore", "health policy item \"ignore\" is not key=value"},
        {"enable=1,two", "DP_ENABLE_HEALTHCHECKS: \"two\" is not an XID"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        gs_health_policy before = p;
        gs_error_clear(&err);
        assert_int_equal(gs_health_policy_parse(&p, bad[k].in, strlen(bad[k].in), &err), -1);
        assert_int_equal(err.code, GS_ERR_INVALID);
        if (!strstr(err.msg, bad[k].msg))
            fail_msg("%s: got \"%s\"", bad[k].in, err.msg);
        assert_memory_equal(&before, &p, sizeof p); /* unchanged on error */
    }
    /* len bounds the input: no terminator needed */
    gs_health_policy_default(&p);
    assert_int_equal(gs_health_policy_parse(&p, "threshold=7XYZ", 11, &err), 0);
    assert_int_equal(p.threshold, 7);
}

static void dp_compatibility(void **state)
{
    gs_health_policy p;
    gs_error err;
    /* a list: ignored in addition to the defaults */
    gs_health_policy_default(&p);
    assert_int_equal(gs_health_policy_dp(&p, " 79, 48 ,", NULL, &err), 0);
    assert_int_equal(gs_health_xid_class(&p, 79), GS_XID_IGNORED);
    assert_int_equal(gs_health_xid_class(&p, 48), GS_XID_IGNORED);
    assert_int_equal(gs_health_xid_class(&p, 13), GS_XID_IGNORED);
    assert_true(p.checks);
    /* "all" and anything with "xids": checks off */
    const char *off[] = {"all", "ALL", "xids", "foo,xids"};
    for (int k = 0; k < 4; k++) {
        gs_health_policy_default(&p);
        assert_int_equal(gs_health_policy_dp(&p, off[k], "", &err), 0);
        assert_false(p.checks);
    }
    gs_health *h = new_health(&p);
    gs_nvml_event e = xid(0, 79);
    assert_int_equal(gs_health_event(h, &e, S), 0);
    assert_int_equal(gs_health_wait_error(h, "x", S), 0);
    assert_int_equal(gs_health_registration(h, 0, GS_NVML_REG_FAILED, "x", S), 0);
    assert_true(dev(h, 0, -1)->healthy);
    gs_health_free(h);
    /* enable wins over disable: 13 is checked (critical) although ignored by default */
    gs_health_policy_default(&p);
    assert_int_equal(gs_health_policy_dp(&p, "13", "13", &err), 0);
    assert_int_equal(gs_health_xid_class(&p, 13), GS_XID_CRITICAL);
    /* all disabled but a few enabled: only those count */
    gs_health_policy_default(&p);
    assert_int_equal(gs_health_policy_dp(&p, "all", "79", &err), 0);
    assert_true(p.checks);
    assert_int_equal(gs_health_xid_class(&p, 79), GS_XID_CRITICAL);
    assert_int_equal(gs_health_xid_class(&p, 48), GS_XID_IGNORED);
    assert_int_equal(gs_health_xid_class(&p, 32), GS_XID_IGNORED);
    /* enable=all: the ignore list is dropped; critical ones stay critical */
    gs_health_policy_default(&p);
    assert_int_equal(gs_health_policy_dp(&p, NULL, "all", &err), 0);
    assert_int_equal(gs_health_xid_class(&p, 13), GS_XID_COUNTED);
    assert_int_equal(gs_health_xid_class(&p, 79), GS_XID_CRITICAL);
    /* the same through the policy string */
    gs_health_policy_default(&p);
    const char *s = "disable=all enable=79,48";
    assert_int_equal(gs_health_policy_parse(&p, s, strlen(s), &err), 0);
    assert_int_equal(gs_health_xid_class(&p, 48), GS_XID_CRITICAL);
    assert_int_equal(gs_health_xid_class(&p, 64), GS_XID_IGNORED);
    /* a bad list leaves p unchanged */
    gs_health_policy before = p;
    assert_int_equal(gs_health_policy_dp(&p, "13,abc", NULL, &err), -1);
    assert_non_null(strstr(err.msg, "DP_DISABLE_HEALTHCHECKS: \"abc\" is not an XID"));
    assert_memory_equal(&before, &p, sizeof p);
}

static void generation_only_on_transitions(void **state)
{
    gs_health *h = new_health(NULL);
    uint64_t g0 = gs_health_generation(h);
    gs_nvml_event ign = xid(0, 13), cnt = xid(0, 32), crit = xid(0, 79);
    gs_health_event(h, &ign, S);
    gs_health_event(h, &cnt, S);
    gs_health_event(h, &cnt, 2 * S);
    assert_int_equal(gs_health_generation(h), g0); /* below the threshold */
    gs_health_event(h, &crit, 3 * S);
    assert_int_equal(gs_health_generation(h), g0 + 1);
    gs_health_event(h, &crit, 4 * S);
    gs_health_event(h, &cnt, 5 * S);
    size_t i = (size_t)gs_health_find(h, 0, -1);
    gs_health_probe_result(h, i, 0, "no", 10 * S);
    gs_health_probe_result(h, i, 1, NULL, 20 * S);
    gs_health_tick(h, 30 * S);
    assert_int_equal(gs_health_generation(h), g0 + 1); /* no transition: no change */
    gs_health_tick(h, 80 * S);                          /* quiet since the failed probe */
    assert_int_equal(gs_health_generation(h), g0 + 2);
    assert_true(dev(h, 0, -1)->healthy);
    /* after recovery the counted history starts again: two more do not trip it */
    gs_health_event(h, &cnt, 81 * S);
    gs_health_event(h, &cnt, 82 * S);
    assert_true(dev(h, 0, -1)->healthy);
    assert_int_equal(gs_health_generation(h), g0 + 2);
    gs_health_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(devices_and_lost),
        cmocka_unit_test(ignored_xids),
        cmocka_unit_test(critical_xid),
        cmocka_unit_test(threshold_in_window),
        cmocka_unit_test(window_expiry),
        cmocka_unit_test(mig_attribution),
        cmocka_unit_test(registration_and_wait_failures),
        cmocka_unit_test(recovery_after_quiet_period),
        cmocka_unit_test(no_recovery_while_probes_fail),
        cmocka_unit_test(policy_string),
        cmocka_unit_test(dp_compatibility),
        cmocka_unit_test(generation_only_on_transitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
