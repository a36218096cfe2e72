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
#include <unistd.h>

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
        unsigned index, gi, mem, gis, cis, sms, ce, dec, jpg, ofa;
        const char *profile;
    } want[3] = {
        {"MIG-1f2e3d4c-5b6a-5978-8a9b-0c1d2e3f4a01", 0, 2, 40192, 3, 3, 42, 3, 2, 0, 0,
         "3g.40gb"},
        {"MIG-1f2e3d4c-5b6a-5978-8a9b-0c1d2e3f4a02", 2, 3, 19968, 2, 1, 14, 2, 1, 0, 0,
         "1c.2g.20gb"}, /* index 1: hole */
        {"MIG-1f2e3d4c-5b6a-5978-8a9b-0c1d2e3f4a03", 3, 9, 9728, 1, 1, 14, 1, 1, 1, 1,
         "1g.10gb+me"},
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
        assert_int_equal(m->copy_engines, want[k].ce);
        assert_int_equal(m->decoders, want[k].dec);
        assert_int_equal(m->jpegs, want[k].jpg);
        assert_int_equal(m->ofas, want[k].ofa);
        assert_string_equal(m->profile, want[k].profile);
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
    assert_string_equal(inv.gpus[0].mig[1].profile, ""); /* no attributes: no name */
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

/* ---- extended discovery, sampling, events, probes (issue 14) ---- */

static gs_nvml_inventory discover_ok(gs_nvml *n)
{
    gs_nvml_inventory inv;
    gs_error err;
    gs_error_clear(&err);
    if (gs_nvml_discover(n, &inv, &err) != 0)
        fail_msg("gs_nvml_discover: %s", err.msg);
    return inv;
}

static void profile_names(void **state)
{
    /* GB from memorySizeMB as a fraction of the parent rounded up to eighths, times the
     * parent's GiB rounded up (go-nvlib); parents as NVML reports their totals */
    const unsigned long long a100_40 = 40960ull << 20, a100_80 = 81920ull << 20,
                             h100 = 81559ull << 20, h200 = 143771ull << 20;
    static const struct {
        unsigned g, c;
        unsigned long long mb;
        unsigned ofa;
        int parent;
        const char *want;
    } cases[] = {
        {1, 1, 4864, 0, 0, "1g.5gb"},     {1, 1, 4864, 1, 0, "1g.5gb+me"},
        {7, 7, 40192, 1, 0, "7g.40gb"},   {1, 1, 9856, 0, 1, "1g.10gb"},
        {1, 1, 19968, 0, 1, "1g.20gb"},   {3, 3, 40192, 0, 1, "3g.40gb"},
        {7, 7, 80384, 1, 1, "7g.80gb"},   {3, 1, 40192, 0, 1, "1c.3g.40gb"},
        {1, 1, 9984, 0, 2, "1g.10gb"},    {1, 1, 20096, 0, 2, "1g.20gb"},
        {7, 7, 81152, 1, 2, "7g.80gb"},   {1, 1, 16384, 0, 3, "1g.18gb"},
        {1, 1, 16384, 1, 3, "1g.18gb+me"}, {1, 1, 33024, 0, 3, "1g.35gb"},
        {3, 3, 71168, 0, 3, "3g.71gb"},   {7, 7, 143360, 1, 3, "7g.141gb"},
    };
    const unsigned long long parents[] = {a100_40, a100_80, h100, h200};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char name[32];
        assert_int_equal(gs_nvml_mig_profile_name(cases[k].g, cases[k].c, cases[k].mb,
                                                  cases[k].ofa, parents[cases[k].parent], name,
                                                  sizeof name),
                         0);
        if (strcmp(name, cases[k].want) != 0)
            fail_msg("case %zu: got %s, want %s", k, name, cases[k].want);
    }
    char name[8];
    assert_int_equal(gs_nvml_mig_profile_name(0, 1, 4864, 0, a100_40, name, sizeof name), -1);
    assert_string_equal(name, "");
    assert_int_equal(gs_nvml_mig_profile_name(1, 1, 4864, 0, 0, name, sizeof name), -1);
    assert_int_equal(gs_nvml_mig_profile_name(3, 1, 40192, 0, a100_80, name, 8), -1); /* fits not */
}

static void extended_discovery(void **state)
{
    gs_nvml *n = open_ok(FAKE_NVML, "node.scn");
    gs_nvml_set_sysfs_root(n, "/nonexistent-sysfs"); /* the A10's NUMA: not from this host */
    gs_nvml_inventory inv = discover_ok(n);
    assert_int_equal(inv.n_gpus, 3);
    const gs_nvml_gpu *a = &inv.gpus[0], *b = &inv.gpus[1], *c = &inv.gpus[2];
    assert_int_equal(a->arch, 9); /* HOPPER */
    assert_int_equal(a->numa_node, 0);
    assert_int_equal(b->numa_node, 1);
    /* links 0 and 2 to the other H100, link 1 down (skipped), link 3 to an NVSwitch */
    assert_int_equal(a->n_nvlink, 3);
    assert_string_equal(a->nvlink_peer[0], "00000000:2A:00.0");
    assert_string_equal(a->nvlink_peer[1], "00000000:2A:00.0");
    assert_string_equal(a->nvlink_peer[2], "00000000:E5:00.0");
    assert_int_equal(b->n_nvlink, 2);
    assert_string_equal(b->nvlink_peer[1], "00000000:18:00.0");
    /* the A10: NOT_SUPPORTED everywhere is quiet, not lost */
    assert_false(c->lost);
    assert_int_equal(c->arch, -1);
    assert_int_equal(c->numa_node, -1);
    assert_int_equal(c->n_nvlink, 0);
    assert_string_equal(gs_nvml_resolved(n, "nvmlDeviceGetNvLinkRemotePciInfo"),
                        "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    gs_nvml_inventory_free(&inv);
    gs_nvml_close(n);
}

static char tmpdir[256];

static void mkdirs(const char *path)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
    assert_int_equal(system(cmd), 0);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void old_driver_numa_from_sysfs(void **state)
{
    /* no nvmlDeviceGetNumaNodeId: sysfs's numa_node under the 4-digit lowercase bus id */
    snprintf(tmpdir, sizeof tmpdir, "%s/gs-nvml-sysfs-%d", getenv("TMPDIR") ? getenv("TMPDIR")
                                                                           : "/tmp",
             (int)getpid());
    char p[512];
    snprintf(p, sizeof p, "%s/bus/pci/devices/0000:18:00.0", tmpdir);
    mkdirs(p);
    strcat(p, "/numa_node");
    write_file(p, "1\n");
    snprintf(p, sizeof p, "%s/bus/pci/devices/0000:2a:00.0", tmpdir);
    mkdirs(p);
    strcat(p, "/numa_node");
    write_file(p, "-1\n"); /* no affinity: stays -1 */
    gs_nvml *n = open_ok(FAKE_NVML_OLD, "node.scn");
    assert_null(gs_nvml_resolved(n, "nvmlDeviceGetNumaNodeId"));
    gs_nvml_set_sysfs_root(n, tmpdir);
    gs_nvml_inventory inv = discover_ok(n);
    assert_int_equal(inv.gpus[0].numa_node, 1);
    assert_int_equal(inv.gpus[1].numa_node, -1);
    assert_int_equal(inv.gpus[2].numa_node, -1); /* no file */
    /* the legacy remote PCI struct, widened like the GPU's own bus id */
    assert_string_equal(gs_nvml_resolved(n, "nvmlDeviceGetNvLinkRemotePciInfo"),
                        "nvmlDeviceGetNvLinkRemotePciInfo");
    assert_int_equal(inv.gpus[0].n_nvlink, 3);
    assert_string_equal(inv.gpus[0].nvlink_peer[0], "00000000:2A:00.0");
    gs_nvml_inventory_free(&inv);
    gs_nvml_close(n);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    assert_int_equal(system(cmd), 0);
}

static void sampling(void **state)
{
    gs_nvml *n = open_ok(FAKE_NVML, "node.scn");
    gs_nvml_inventory inv = discover_ok(n);
    gs_nvml_samples s;
    memset(&s, 0, sizeof s);
    gs_error err;
    assert_int_equal(gs_nvml_sample_read(n, &inv, &s, &err), 0);
    assert_int_equal(s.n_gpus, 3);
    assert_true(s.taken_ms > 0);
    const gs_nvml_sample *a = &s.gpu[0];
    assert_int_equal(a->gpu_util, 87);
    assert_int_equal(a->mem_copy_util, 41);
    assert_int_equal(a->fb_used_mib, 40000);
    assert_int_equal(a->fb_reserved_mib, 512);
    assert_int_equal(a->fb_free_mib, 81559 - 40000 - 512);
    assert_int_equal(a->temp_c, 64);
    assert_int_equal(a->power_mw, 512345);
    assert_int_equal(a->energy_mj, 987654321012LL);
    assert_int_equal(a->ecc_sbe_volatile, 2);
    assert_int_equal(a->ecc_dbe_volatile, 0);
    assert_int_equal(a->remapped_correctable, 1);
    assert_int_equal(a->remapped_uncorrectable, 0);
    assert_int_equal(a->remap_pending, 1);
    assert_int_equal(a->remap_failure, 0);
    assert_int_equal(a->sm_clock_mhz, 1980);
    assert_int_equal(a->mem_clock_mhz, 2619);
    assert_int_equal(a->pcie_replay, 3);
    /* the A10 gives only memory: everything else -1 */
    const gs_nvml_sample *c = &s.gpu[2];
    assert_int_equal(c->gpu_util, -1);
    assert_int_equal(c->temp_c, -1);
    assert_int_equal(c->power_mw, -1);
    assert_int_equal(c->ecc_dbe_volatile, -1);
    assert_int_equal(c->pcie_replay, -1);
    assert_int_equal(c->fb_used_mib, 0);
    assert_int_equal(c->fb_free_mib, 23028);
    /* a second read reuses the arrays */
    const gs_nvml_sample *before = s.gpu;
    assert_int_equal(gs_nvml_sample_read(n, &inv, &s, &err), 0);
    assert_ptr_equal(s.gpu, before);
    gs_nvml_samples_free(&s);
    assert_null(s.gpu);
    gs_nvml_inventory_free(&inv);
    gs_nvml_close(n);
}

static void sampling_mig_and_old_driver(void **state)
{
    gs_nvml *n = open_ok(FAKE_NVML, "mig.scn");
    gs_nvml_inventory inv = discover_ok(n);
    gs_nvml_samples s;
    memset(&s, 0, sizeof s);
    gs_error err;
    assert_int_equal(gs_nvml_sample_read(n, &inv, &s, &err), 0);
    /* MIG-enabled GPU: no utilization (NVML does not attribute it), memory and temperature */
    assert_int_equal(s.gpu[0].gpu_util, -1);
    assert_int_equal(s.gpu[0].temp_c, 50);
    assert_int_equal(s.gpu[0].fb_used_mib, 30000);
    /* MIG devices: memory through the MIG handle, the rest -1 */
    assert_int_equal(s.mig[0][0].fb_used_mib, 20000);
    assert_int_equal(s.mig[0][0].fb_free_mib, 40192 - 20000);
    assert_int_equal(s.mig[0][1].fb_used_mib, 512);
    assert_int_equal(s.mig[0][2].fb_used_mib, 0);
    assert_int_equal(s.mig[0][0].temp_c, -1);
    assert_int_equal(s.mig[0][0].gpu_util, -1);
    gs_nvml_samples_free(&s);
    gs_nvml_inventory_free(&inv);
    gs_nvml_close(n);

    /* an old driver: nvmlDeviceGetMemoryInfo (v1) counts reserved as used; reserved -1 */
    n = open_ok(FAKE_NVML_OLD, "node.scn");
    assert_null(gs_nvml_resolved(n, "nvmlDeviceGetMemoryInfo_v2"));
    inv = discover_ok(n);
    memset(&s, 0, sizeof s);
    assert_int_equal(gs_nvml_sample_read(n, &inv, &s, &err), 0);
    assert_int_equal(s.gpu[0].fb_used_mib, 40512);
    assert_int_equal(s.gpu[0].fb_reserved_mib, -1);
    assert_int_equal(s.gpu[0].gpu_util, 87);
    gs_nvml_samples_free(&s);
    gs_nvml_inventory_free(&inv);
    gs_nvml_close(n);
}

/* A scenario in a temporary file the test rewrites (write + rename: the fake sees a new
 * inode, as a live scenario expects). */
static char live_path[512];

static void live_write(const char *text)
{
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.new", live_path);
    write_file(tmp, text);
    assert_int_equal(rename(tmp, live_path), 0);
}

static const char *live_base =
    "driver 550.107.02\n"
    "cuda 12040\n"
    "gpu uuid=GPU-L0 memory=81920 pci=00000000:07:00.0 minor=0 cc=8.0 mig=1 temp=50 "
    "name=NVIDIA A100-SXM4-80GB\n"
    "mig uuid=MIG-L0a gi=1 ci=0 memory=40192 gi-slices=3 ci-slices=3\n"
    "mig uuid=MIG-L0b gi=2 ci=0 memory=40192 gi-slices=3 ci-slices=3\n"
    "gpu uuid=GPU-L1 memory=81920 pci=00000000:0F:00.0 minor=1 cc=8.0 temp=45 util=10 "
    "%s name=NVIDIA A100-SXM4-80GB\n"
    "%s";

static void live_scenario(const char *gpu1_extra, const char *tail)
{
    char text[2048];
    snprintf(text, sizeof text, live_base, gpu1_extra, tail);
    live_write(text);
}

static gs_nvml *live_open(const char *lib)
{
    snprintf(live_path, sizeof live_path, "%s/gs-nvml-live-%d.scn",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    live_scenario("", "");
    assert_int_equal(setenv("GS_FAKE_NVML", live_path, 1), 0);
    gs_nvml *n = NULL;
    gs_error err;
    if (gs_nvml_open(lib, &n, &err) != 0)
        fail_msg("gs_nvml_open: %s", err.msg);
    return n;
}

static void events_live(void **state)
{
    gs_nvml *n = live_open(FAKE_NVML);
    gs_nvml_inventory inv = discover_ok(n);
    assert_int_equal(inv.gpus[0].n_mig, 2);
    gs_nvml_events *ev = NULL;
    gs_error err;
    assert_int_equal(gs_nvml_events_open(n, &inv, &ev, &err), 0);
    unsigned long long mask = 0;
    const char *why = NULL;
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(gs_nvml_events_registration(ev, i, &mask, &why), GS_NVML_REG_SUPPORTED);
        assert_int_equal(mask, GS_NVML_EVENTS_HEALTH); /* PState, also supported, not asked */
        assert_string_equal(why, "");
    }
    assert_int_equal(gs_nvml_events_registration(ev, 7, NULL, NULL), GS_NVML_REG_FAILED);
    gs_nvml_event e;
    assert_int_equal(gs_nvml_events_wait(ev, 30, &e, &err), 0); /* nothing: timeout */

    /* the scenario gains three XIDs: delivered once each, in file order */
    live_scenario("", "xid gpu=1 code=79\n"
                      "xid gpu=0 code=48 gi=2 ci=0\n"
                      "xid gpu=0 code=31 gi=5 ci=0\n"
                      "xid gpu=0 code=13\n");
    assert_int_equal(gs_nvml_events_wait(ev, 1000, &e, &err), 1);
    assert_int_equal(e.gpu, 1);
    assert_int_equal(e.type, GS_NVML_EVENT_XID);
    assert_int_equal(e.xid, 79);
    assert_int_equal(e.gpu_instance_id, ~0u);
    assert_int_equal(e.mig, -1);
    assert_int_equal(gs_nvml_events_wait(ev, 1000, &e, &err), 1);
    assert_int_equal(e.gpu, 0);
    assert_int_equal(e.xid, 48);
    assert_int_equal(e.gpu_instance_id, 2);
    assert_int_equal(e.compute_instance_id, 0);
    assert_int_equal(e.mig, 1); /* GI 2 is the second MIG device */
    assert_int_equal(gs_nvml_events_wait(ev, 1000, &e, &err), 1);
    assert_int_equal(e.gpu_instance_id, 5);
    assert_int_equal(e.mig, -1); /* no MIG device with GI 5 */
    assert_int_equal(gs_nvml_events_wait(ev, 1000, &e, &err), 1);
    assert_int_equal(e.xid, 13);
    assert_int_equal(e.mig, -1);
    assert_int_equal(gs_nvml_events_wait(ev, 50, &e, &err), 0);

    /* an XID written while waiting arrives within the wait (polled every ~20 ms) */
    live_scenario("", "xid gpu=0 code=94\n");
    assert_int_equal(gs_nvml_events_wait(ev, 1000, &e, &err), 1);
    assert_int_equal(e.xid, 94);

    /* the wait itself fails: -1 with NVML's reason */
    live_scenario("", "wait-error 999\n");
    gs_error_clear(&err);
    assert_int_equal(gs_nvml_events_wait(ev, 50, &e, &err), -1);
    assert_non_null(strstr(err.msg, "nvmlEventSetWait_v2 failed"));
    assert_non_null(strstr(err.msg, "NVML error 999"));
    gs_nvml_events_close(ev);
    gs_nvml_events_close(NULL);
    gs_nvml_inventory_free(&inv);
    gs_nvml_close(n);
    unlink(live_path);
}

static void events_registration_outcomes(void **state)
{
    gs_nvml *n = live_open(FAKE_NVML);
    live_scenario("events=none", "");
    gs_nvml_inventory inv = discover_ok(n);
    gs_nvml_events *ev = NULL;
    gs_error err;
    const char *why;
    assert_int_equal(gs_nvml_events_open(n, &inv, &ev, &err), 0);
    assert_int_equal(gs_nvml_events_registration(ev, 1, NULL, &why), GS_NVML_REG_NOT_SUPPORTED);
    assert_non_null(strstr(why, "Not Supported"));
    gs_nvml_events_close(ev);

    live_scenario("events=fail", "");
    assert_int_equal(gs_nvml_events_open(n, &inv, &ev, &err), 0);
    assert_int_equal(gs_nvml_events_registration(ev, 0, NULL, &why), GS_NVML_REG_SUPPORTED);
    assert_int_equal(gs_nvml_events_registration(ev, 1, NULL, &why), GS_NVML_REG_FAILED);
    assert_non_null(strstr(why, "nvmlDeviceRegisterEvents"));
    assert_non_null(strstr(why, "registration refused"));
    gs_nvml_events_close(ev);

    /* a lost GPU cannot register: FAILED with GPU_IS_LOST */
    live_scenario("lost", "");
    assert_int_equal(gs_nvml_events_open(n, &inv, &ev, &err), 0);
    assert_int_equal(gs_nvml_events_registration(ev, 1, NULL, &why), GS_NVML_REG_FAILED);
    assert_non_null(strstr(why, "GPU is lost"));
    gs_nvml_events_close(ev);
    gs_nvml_inventory_free(&inv);
    gs_nvml_close(n);
    unlink(live_path);
}

static void lost_and_recovered(void **state)
{
    gs_nvml *n = live_open(FAKE_NVML);
    gs_nvml_inventory inv = discover_ok(n);
    gs_nvml_samples s;
    memset(&s, 0, sizeof s);
    gs_error err;
    assert_int_equal(gs_nvml_probe(n, "GPU-L1", &err), 0);
    assert_int_equal(gs_nvml_probe(n, "MIG-L0b", &err), 0);
    assert_int_equal(gs_nvml_sample_read(n, &inv, &s, &err), 0);
    assert_int_equal(s.gpu[1].temp_c, 45);

    /* GPU 1 falls off the bus: its sample is all -1, the call still succeeds, the others read */
    live_scenario("lost", "xid gpu=1 code=79\n");
    assert_int_equal(gs_nvml_sample_read(n, &inv, &s, &err), 0);
    const gs_nvml_sample *l = &s.gpu[1];
    assert_int_equal(l->temp_c, -1);
    assert_int_equal(l->gpu_util, -1);
    assert_int_equal(l->fb_used_mib, -1);
    assert_int_equal(l->fb_free_mib, -1);
    assert_int_equal(l->power_mw, -1);
    assert_int_equal(s.gpu[0].temp_c, 50);
    gs_error_clear(&err);
    assert_int_equal(gs_nvml_probe(n, "GPU-L1", &err), -1);
    assert_non_null(strstr(err.msg, "nvmlDeviceGetMemoryInfo(GPU-L1): GPU is lost (NVML error 15)"));
    assert_int_equal(gs_nvml_probe(n, "GPU-NOPE", &err), -1);
    assert_non_null(strstr(err.msg, "nvmlDeviceGetHandleByUUID(GPU-NOPE): Not Found"));

    /* it comes back: the probe answers, the sensors read again */
    live_scenario("temp=47", "");
    assert_int_equal(gs_nvml_probe(n, "GPU-L1", &err), 0);
    assert_int_equal(gs_nvml_sample_read(n, &inv, &s, &err), 0);
    assert_int_equal(s.gpu[1].temp_c, 47);
    gs_nvml_samples_free(&s);
    gs_nvml_inventory_free(&inv);
    gs_nvml_close(n);
    unlink(live_path);
}

static void old_driver_events(void **state)
{
    /* the plain nvmlEventSetWait fills the old 24-byte struct: GI/CI not attributable */
    gs_nvml *n = live_open(FAKE_NVML_OLD);
    gs_nvml_inventory inv = discover_ok(n);
    gs_nvml_events *ev = NULL;
    gs_error err;
    assert_string_equal(gs_nvml_resolved(n, "nvmlEventSetWait"), "nvmlEventSetWait");
    assert_int_equal(gs_nvml_events_open(n, &inv, &ev, &err), 0);
    live_scenario("", "xid gpu=0 code=48 gi=2 ci=0\n");
    gs_nvml_event e;
    assert_int_equal(gs_nvml_events_wait(ev, 1000, &e, &err), 1);
    assert_int_equal(e.gpu, 0);
    assert_int_equal(e.xid, 48);
    assert_int_equal(e.gpu_instance_id, ~0u);
    assert_int_equal(e.compute_instance_id, ~0u);
    assert_int_equal(e.mig, -1);
    gs_nvml_events_close(ev);
    gs_nvml_inventory_free(&inv);
    gs_nvml_close(n);
    unlink(live_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_whole_gpus),   cmocka_unit_test(mig_gpu),
        cmocka_unit_test(lost_gpu),         cmocka_unit_test(missing_library),
        cmocka_unit_test(old_driver_fallback), cmocka_unit_test(mig_without_attributes),
        cmocka_unit_test(bad_scenario),     cmocka_unit_test(not_nvml),
        cmocka_unit_test(two_opens),        cmocka_unit_test(profile_names),
        cmocka_unit_test(extended_discovery), cmocka_unit_test(old_driver_numa_from_sysfs),
        cmocka_unit_test(sampling),         cmocka_unit_test(sampling_mig_and_old_driver),
        cmocka_unit_test(events_live),      cmocka_unit_test(events_registration_outcomes),
        cmocka_unit_test(lost_and_recovered), cmocka_unit_test(old_driver_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
