/* test_nvml.c - the agent's NVML discovery layer (lib/agent/nvml.c) against the fake NVML
 * (tests/fake-nvml/fake_nvml.c) loaded through the same dlopen path: two whole GPUs, a MIG
 * GPU with three MIG devices (and a hole in the MIG indices), a lost GPU among good ones, a
 * missing library, an old driver's unversioned symbols, a scenario that does not parse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/nvml.h"

static void scenario(const char *name)
{
    const char *data = getenv("GS_TEST_DATA");
    assert_non_null(data);
    char path[1024];
    snprintf(path, sizeof path, "%s/nvml/%s", data, name);
    assert_int_equal(setenv("GS_FAKE_NVML", path, 1), 0);
}

static gs_nvml *open_ok(const char *lib, const char *scn)
{
    scenario(scn);
    gs_nvml *n = NULL;
    gs_error err;
    gs_error_clear(&err);
    int rc = gs_nvml_open(lib, &n, &err);
    if (rc != 0)
        fail_msg("gs_nvml_open: %s", err.msg);
    assert_non_null(n);
    return n;
}

static void two_whole_gpus(void **state)
{
    gs_nvml *n = open_ok(FAKE_NVML, "two-gpus.scn");
    assert_string_equal(gs_nvml_resolved(n, "nvmlInit"), "nvmlInitWithFlags");
    assert_string_equal(gs_nvml_resolved(n, "nvmlDeviceGetCount"), "nvmlDeviceGetCount_v2");
    assert_string_equal(gs_nvml_resolved(n, "nvmlDeviceGetPciInfo"), "nvmlDeviceGetPciInfo_v3");
    assert_null(gs_nvml_resolved(n, "nvmlDeviceGetNoSuchThing"));
    gs_nvml_inventory inv;
    gs_error err;
    assert_int_equal(gs_nvml_discover(n, &inv, &err), 0);
    assert_string_equal(inv.driver_version, "550.107.02");
    assert_int_equal(inv.cuda_driver_version, 12040);
    assert_int_equal(inv.cuda_major, 12);
    assert_int_equal(inv.cuda_minor, 4);
    assert_int_equal(inv.n_gpus, 2);
    for (unsigned i = 0; i < 2; i++) {
        const gs_nvml_gpu *g = &inv.gpus[i];
        assert_int_equal(g->index, i);
        assert_false(g->lost);
        assert_string_equal(g->name, "NVIDIA H100 80GB HBM3");
        assert_int_equal(g->memory_mib, 81559);
        assert_int_equal(g->minor, (int)i);
        assert_int_equal(g->cc_major, 9);
        assert_int_equal(g->cc_minor, 0);
        assert_true(g->mig_capable);
        assert_int_equal(g->mig_current, 0);
        assert_int_equal(g->n_mig, 0);
    }
    assert_string_equal(inv.gpus[0].uuid, "GPU-0b5a3f1e-6c2d-4e8f-9a71-3d2c1b0a9f01");
    assert_string_equal(inv.gpus[1].uuid, "GPU-0b5a3f1e-6c2d-4e8f-9a71-3d2c1b0a9f02");
    assert_string_equal(inv.gpus[0].pci_bus_id, "00000000:18:00.0");
    assert_string_equal(inv.gpus[1].pci_bus_id, "00000000:2A:00.0");
    assert_int_equal(inv.gpus[0].mig_pending, 0);
    assert_int_equal(inv.gpus[1].mig_pending, 1); /* enabled, waiting for a reset */
    gs_nvml_inventory_free(&inv);
    assert_int_equal(inv.n_gpus, 0);
    gs_nvml_close(n);
}

static void mig_gpu(void **state)
{
    gs_nvml *n = open_ok(FAKE_NVML, "mig.scn");
    gs_nvml_inventory inv;
    gs_error err;
    assert_int_equal(gs_nvml_discover(n, &inv, &err), 0);
    assert_int_equal(inv.cuda_major, 12);
    assert_int_equal(inv.cuda_minor, 2);
    assert_int_equal(inv.n_gpus, 2);
    const gs_nvml_gpu *a = &inv.gpus[0];
    assert_false(a->lost);
    assert_string_equal(a->name, "NVIDIA A100-SXM4-80GB");
    assert_int_equal(a->mig_current, 1);
    assert_int_equal(a->n_mig, 3);
    static const struct {
        const char *uuid;
        unsigned index, gi, mem, gis, cis, sms;
    } want[3] = {
        {"MIG-1f2e3d4c-5b6a-5978-8a9b-0c1d2e3f4a01", 0, 2, 40192, 4, 3, 42},
        {"MIG-1f2e3d4c-5b6a-5978-8a9b-0c1d2e3f4a02", 2, 3, 19968, 2, 2, 28}, /* index 1: hole */
        {"MIG-1f2e3d4c-5b6a-5978-8a9b-0c1d2e3f4a03", 3, 9, 9728, 1, 1, 14},
    };
    for (int k = 0; k < 3; k++) {
        const gs_nvml_mig_device *m = &a->mig[k];
        assert_string_equal(m->uuid, want[k].uuid);
        assert_int_equal(m->index, want[k].index);
        assert_int_equal(m->gpu_instance_id, want[k].gi);
        assert_int_equal(m->compute_instance_id, 0);
        assert_int_equal(m->memory_mib, want[k].mem);
        assert_true(m->have_attributes);
        assert_int_equal(m->gi_slices, want[k].gis);
        assert_int_equal(m->ci_slices, want[k].cis);
        assert_int_equal(m->multiprocessors, want[k].sms);
    }
    /* the A10 has no MIG: nvmlDeviceGetMigMode is NOT_SUPPORTED, not an error */
    const gs_nvml_gpu *b = &inv.gpus[1];
    assert_false(b->lost);
    assert_false(b->mig_capable);
    assert_int_equal(b->n_mig, 0);
    assert_int_equal(b->cc_minor, 6);
    gs_nvml_inventory_free(&inv);
    gs_nvml_close(n);
}

static void lost_gpu(void **state)
{
    gs_nvml *n = open_ok(FAKE_NVML, "lost.scn");
    gs_nvml_inventory inv;
    gs_error err;
    assert_int_equal(gs_nvml_discover(n, &inv, &err), 0);
    assert_int_equal(inv.n_gpus, 4);
    for (unsigned i = 0; i < 4; i++) {
        const gs_nvml_gpu *g = &inv.gpus[i];
        if (i == 2) {
            assert_true(g->lost);
            assert_non_null(strstr(g->lost_reason, "GPU is lost"));
            assert_non_null(strstr(g->lost_reason, "NVML error 15"));
            assert_non_null(strstr(g->lost_reason, "nvmlDeviceGetUUID"));
            continue;
        }
        assert_false(g->lost);
        assert_int_equal(g->minor, (int)i);
        assert_int_equal(g->memory_mib, 40960);
        char want[64];
        snprintf(want, sizeof want, "GPU-aaaaaaaa-0000-4000-8000-00000000000%u", i);
        assert_string_equal(g->uuid, want);
    }
    gs_nvml_inventory_free(&inv);
    gs_nvml_close(n);
}

static void missing_library(void **state)
{
    gs_nvml *n = (gs_nvml *)1;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_nvml_open("/nonexistent/dir/libnvidia-ml.so.1", &n, &err), -1);
    assert_null(n);
    assert_int_equal(err.code, GS_ERR_NOTFOUND);
    assert_non_null(strstr(err.msg, "cannot load the NVML library /nonexistent/dir/libnvidia-ml.so.1"));
    assert_non_null(strstr(err.msg, "NVIDIA driver"));
    /* dlerror()'s own text follows */
    assert_non_null(strstr(err.msg, "No such file or directory"));
}

static void old_driver_fallback(void **state)
{
    gs_nvml *n = open_ok(FAKE_NVML_OLD, "two-gpus.scn");
    assert_string_equal(gs_nvml_resolved(n, "nvmlInit"), "nvmlInit");
    assert_string_equal(gs_nvml_resolved(n, "nvmlDeviceGetCount"), "nvmlDeviceGetCount");
    assert_string_equal(gs_nvml_resolved(n, "nvmlDeviceGetHandleByIndex"),
                        "nvmlDeviceGetHandleByIndex");
    assert_string_equal(gs_nvml_resolved(n, "nvmlDeviceGetPciInfo"), "nvmlDeviceGetPciInfo");
    assert_string_equal(gs_nvml_resolved(n, "nvmlSystemGetCudaDriverVersion"),
                        "nvmlSystemGetCudaDriverVersion");
    assert_null(gs_nvml_resolved(n, "nvmlDeviceGetAttributes"));
    gs_nvml_inventory inv;
    gs_error err;
    assert_int_equal(gs_nvml_discover(n, &inv, &err), 0);
    assert_int_equal(inv.cuda_driver_version, 12040);
    assert_int_equal(inv.n_gpus, 2);
    assert_false(inv.gpus[1].lost);
    assert_string_equal(inv.gpus[1].uuid, "GPU-0b5a3f1e-6c2d-4e8f-9a71-3d2c1b0a9f02");
    /* the legacy PCI struct: the bus id read from its first 16 bytes */
    assert_string_equal(inv.gpus[1].pci_bus_id, "00000000:2A:00.0");
    gs_nvml_inventory_free(&inv);
    gs_nvml_close(n);
}

static void mig_without_attributes(void **state)
{
    /* an old driver lacks nvmlDeviceGetAttributes_v2: MIG devices still found, no slices */
    gs_nvml *n = open_ok(FAKE_NVML_OLD, "mig.scn");
    gs_nvml_inventory inv;
    gs_error err;
    assert_int_equal(gs_nvml_discover(n, &inv, &err), 0);
    assert_int_equal(inv.gpus[0].n_mig, 3);
    assert_false(inv.gpus[0].mig[1].have_attributes);
    assert_int_equal(inv.gpus[0].mig[1].memory_mib, 19968);
    gs_nvml_inventory_free(&inv);
    gs_nvml_close(n);
}

static void bad_scenario(void **state)
{
    scenario("bad.scn");
    gs_nvml *n = NULL;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_nvml_open(FAKE_NVML, &n, &err), -1);
    assert_null(n);
    assert_int_equal(err.code, GS_ERR_IO);
    assert_non_null(strstr(err.msg, "nvmlInitWithFlags failed"));
    assert_non_null(strstr(err.msg, "bad.scn:2: memory= wants MiB"));
    assert_non_null(strstr(err.msg, "NVML error 999"));

    /* no scenario at all: the fake's LIBRARY_NOT_FOUND, still no crash */
    unsetenv("GS_FAKE_NVML");
    assert_int_equal(gs_nvml_open(FAKE_NVML, &n, &err), -1);
    assert_non_null(strstr(err.msg, "GS_FAKE_NVML is not set"));
    assert_non_null(strstr(err.msg, "NVML error 12"));
}

static void not_nvml(void **state)
{
    /* a library that loads but is not NVML (libm has none of the symbols) */
    gs_nvml *n = NULL;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_nvml_open("libm.so.6", &n, &err), -1);
    assert_null(n);
    assert_int_equal(err.code, GS_ERR_NOTFOUND);
    assert_non_null(strstr(err.msg, "not a usable NVML library"));
}

static void two_opens(void **state)
{
    /* init is reference counted: two handles, closed in either order */
    gs_nvml *a = open_ok(FAKE_NVML, "two-gpus.scn");
    gs_nvml *b = open_ok(FAKE_NVML, "two-gpus.scn");
    gs_nvml_close(a);
    gs_nvml_inventory inv;
    gs_error err;
    assert_int_equal(gs_nvml_discover(b, &inv, &err), 0);
    assert_int_equal(inv.n_gpus, 2);
    gs_nvml_inventory_free(&inv);
    gs_nvml_close(b);
    gs_nvml_close(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_whole_gpus),   cmocka_unit_test(mig_gpu),
        cmocka_unit_test(lost_gpu),         cmocka_unit_test(missing_library),
        cmocka_unit_test(old_driver_fallback), cmocka_unit_test(mig_without_attributes),
        cmocka_unit_test(bad_scenario),     cmocka_unit_test(not_nvml),
        cmocka_unit_test(two_opens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
