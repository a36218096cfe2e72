/*
 * fuzz_devplugin_config.c - libFuzzer target for the device plugin's inputs: NVIDIA's
 * device plugin config file (gs_devplugin_config_parse) and the nvidia-caps table
 * (gs_devplugin_plan_set_mig_minors).
 *
 * The first byte picks what the rest is fed to:
 *   0 (even): the config parser; a config that parses is planned over a fixed inventory
 *      (two whole GPUs with NVLink between them, an A100 in MIG mode with three MIG
 *      devices), and for each resource GetPreferredAllocation and Allocate run on its
 *      first devices;
 *   1 (odd): the mig-minors parser on a plan of the same inventory.
 * Invariants (abort on violation): failures carry a parse/invalid/limit code, never an
 * internal one, and positions inside the input; a parsed config has valid enums, replicas
 * >= 1 and at least one list strategy; advertised IDs are at most 63 characters and
 * unique per resource; preferred answers have the size asked, must-include first, no
 * duplicate; Allocate on healthy devices either succeeds with NVIDIA_VISIBLE_DEVICES (or
 * a CDI device) set, or fails with invalid (failRequestsGreaterThanOne, caps minors).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/devplugin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static gs_nvml_gpu gpus[3];
static gs_nvml_mig_device migs[3];

static gs_nvml_inventory inventory(void)
{
    memset(gpus, 0, sizeof gpus);
    memset(migs, 0, sizeof migs);
    static const char *const uuid[] = {"GPU-00000000-1111-2222-3333-444444444444",
                                       "GPU-00000001-1111-2222-3333-444444444444",
                                       "GPU-00000002-1111-2222-3333-444444444444"};
    static const char *const bus[] = {"00000000:07:00.0", "00000000:0F:00.0", "00000000:47:00.0"};
    for (int i = 0; i < 3; i++) {
        gpus[i].index = (unsigned)i;
        strcpy(gpus[i].uuid, uuid[i]);
        strcpy(gpus[i].pci_bus_id, bus[i]);
        gpus[i].minor = i;
        gpus[i].memory_mib = 40960;
        gpus[i].numa_node = i / 2;
    }
    strcpy(gpus[0].nvlink_peer[0], bus[1]);
    gpus[0].n_nvlink = 1;
    strcpy(gpus[1].nvlink_peer[0], bus[0]);
    gpus[1].n_nvlink = 1;
    static const char *const prof[] = {"1g.5gb", "1g.5gb", "3g.20gb"};
    gpus[2].mig_current = 1;
    gpus[2].mig = migs;
    gpus[2].n_mig = 3;
    for (int j = 0; j < 3; j++) {
        migs[j].index = (unsigned)j;
        strcpy(migs[j].uuid, j == 0 ? "MIG-00000000-aaaa-bbbb-cccc-000000000000"
                             : j == 1 ? "MIG-00000000-aaaa-bbbb-cccc-000000000001"
                                      : "MIG-00000000-aaaa-bbbb-cccc-000000000002");
        migs[j].gpu_instance_id = (unsigned)(7 + j);
        migs[j].compute_instance_id = 0;
        strcpy(migs[j].profile, prof[j]);
    }
    gs_nvml_inventory inv;
    memset(&inv, 0, sizeof inv);
    inv.n_gpus = 3;
    inv.gpus = gpus;
    return inv;
}

static void check_code(const gs_error *e, size_t len, const char *text)
{
    if (e->code != GS_ERR_PARSE && e->code != GS_ERR_INVALID && e->code != GS_ERR_LIMIT)
        abort();
    if (e->line < 0 || e->col < 0)
        abort();
    size_t lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n' || text[i] == '\r';
    if ((size_t)e->line > lines + 1)
        abort();
}

static void exercise(const gs_devplugin_plan *plan, const gs_devplugin_config *cfg)
{
    for (size_t i = 0; i < plan->n_resources; i++) {
        const gs_devplugin_resource *r = &plan->resources[i];
        for (size_t j = 0; j < r->n_devices; j++) {
            if (strlen(r->devices[j].id) > 63)
                abort();
            for (size_t k = j + 1; k < r->n_devices && k < j + 64; k++)
                if (!strcmp(r->devices[j].id, r->devices[k].id))
                    abort();
        }
        size_t n = r->n_devices < 6 ? r->n_devices : 6;
        if (n == 0)
            continue;
        const char *avail[6], *out[6];
        for (size_t j = 0; j < n; j++)
            avail[j] = r->devices[j].id;
        gs_error err;
        size_t want = n > 1 ? 2 : 1;
        if (gs_devplugin_preferred(plan, cfg, r, avail + 1, n - 1, avail, 1, want, out, &err) != 0)
            abort();
        if (strcmp(out[0], avail[0]) != 0 || (want == 2 && !strcmp(out[0], out[1])))
            abort();
        gs_devplugin_alloc a;
        int rc = gs_devplugin_allocate(plan, cfg, r, out, want, &a, &err);
        if (rc != 0) {
            if (err.code != GS_ERR_INVALID)
                abort();
        } else if (!gs_devplugin_alloc_env(&a, "NVIDIA_VISIBLE_DEVICES") && a.n_cdi == 0 &&
                   a.n_annotations == 0) {
            abort();
        }
        gs_devplugin_alloc_free(&a);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t sel = data[0];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    gs_nvml_inventory inv = inventory();
    gs_error err;
    if (sel & 1) {
        gs_devplugin_plan plan;
        if (gs_devplugin_plan_build(&inv, NULL, &plan, &err) != 0)
            abort();
        if (gs_devplugin_plan_set_mig_minors(&plan, "mig-minors", text, len, &err) != 0)
            check_code(&err, len, text);
        gs_devplugin_plan_free(&plan);
        return 0;
    }
    gs_devplugin_config cfg;
    if (gs_devplugin_config_parse("fuzz", text, len, &cfg, &err) != 0) {
        check_code(&err, len, text);
        return 0;
    }
    if (cfg.mig_strategy > GS_MIG_MIXED || cfg.list_strategies == 0 || cfg.list_strategies > 15 ||
        cfg.n_replicated > GS_DP_MAX_REPLICATED || cfg.n_share > GS_DP_MAX_SHARE)
        abort();
    for (size_t i = 0; i < cfg.n_replicated; i++)
        if (cfg.replicated[i].replicas < 1)
            abort();
    gs_devplugin_plan plan;
    if (gs_devplugin_plan_build(&inv, &cfg, &plan, &err) != 0) {
        if (err.code != GS_ERR_INVALID)
            abort();
        return 0;
    }
    gs_devplugin_plan_set_injection(&plan, true);
    exercise(&plan, &cfg);
    gs_devplugin_plan_free(&plan);
    return 0;
}
