/* test_devplugin.c - the device plugin's logic (lib/agent/devplugin.c): NVIDIA's config
 * file, the advertised resources and IDs per MIG strategy and sharing, health, the
 * preferred allocation (NVLink, NUMA, PCI distance, replicas) and the Allocate answer per
 * device list strategy, with inventories built here (no NVML). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/devplugin.h"

/* ---------------------------------------------------------------- fixtures */
#define NG 8
static gs_nvml_gpu gpus[NG];
static gs_nvml_mig_device migs[NG][8];

static const char *uuid_of(int i)
{
    static char u[NG][48];
    snprintf(u[i], sizeof u[i], "GPU-%08x-1111-2222-3333-444444444444", 0xa0u + (unsigned)i);
    return u[i];
}

/* n whole GPUs: index i, minor i, NUMA 0 for the first half, bus 0x07 + 0x10*i, 80 GiB. */
static gs_nvml_inventory inv_whole(size_t n)
{
    memset(gpus, 0, sizeof gpus);
    memset(migs, 0, sizeof migs);
    for (size_t i = 0; i < n; i++) {
        gs_nvml_gpu *g = &gpus[i];
        g->index = (unsigned)i;
        snprintf(g->uuid, sizeof g->uuid, "%s", uuid_of((int)i));
        snprintf(g->name, sizeof g->name, "NVIDIA A100-SXM4-80GB");
        snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "00000000:%02X:00.0", 0x07u + 0x10u * (unsigned)i);
        g->minor = (int)i;
        g->cc_major = 8;
        g->cc_minor = 0;
        g->memory_mib = 81920;
        g->mig_capable = 1;
        g->numa_node = i < n / 2 ? 0 : 1;
        g->arch = 7;
    }
    gs_nvml_inventory inv;
    memset(&inv, 0, sizeof inv);
    snprintf(inv.driver_version, sizeof inv.driver_version, "550.107.02");
    inv.n_gpus = n;
    inv.gpus = gpus;
    return inv;
}

static void add_mig(int g, const char *profile, unsigned gi, unsigned ci, unsigned gslices, unsigned cslices)
{
    gs_nvml_gpu *p = &gpus[g];
    p->mig_current = p->mig_pending = 1;
    p->mig = migs[g];
    gs_nvml_mig_device *m = &migs[g][p->n_mig];
    m->index = (unsigned)p->n_mig;
    snprintf(m->uuid, sizeof m->uuid, "MIG-%08x-aaaa-bbbb-cccc-%012x", 0xa0u + (unsigned)g, (unsigned)p->n_mig);
    m->gpu_instance_id = gi;
    m->compute_instance_id = ci;
    m->have_attributes = 1;
    m->gi_slices = gslices;
    m->ci_slices = cslices;
    snprintf(m->profile, sizeof m->profile, "%s", profile);
    p->n_mig++;
}

static void link_gpus(int a, int b, int links)
{
    for (int l = 0; l < links; l++) {
        memcpy(gpus[a].nvlink_peer[gpus[a].n_nvlink++], gpus[b].pci_bus_id, sizeof gpus[b].pci_bus_id);
        memcpy(gpus[b].nvlink_peer[gpus[b].n_nvlink++], gpus[a].pci_bus_id, sizeof gpus[a].pci_bus_id);
    }
}

static void cfg_parse_ok(const char *yaml, gs_devplugin_config *cfg)
{
    gs_error err;
    gs_error_clear(&err);
    if (gs_devplugin_config_parse("config.yaml", yaml, strlen(yaml), cfg, &err) != 0)
        fail_msg("parse: %d:%d %s: %s", err.line, err.col, err.path, err.msg);
}

static void cfg_parse_bad(const char *yaml, int line, int col, const char *path, const char *msg_part)
{
    gs_devplugin_config cfg;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_devplugin_config_parse("config.yaml", yaml, strlen(yaml), &cfg, &err), -1);
    if ((line && err.line != line) || (col && err.col != col))
        fail_msg("error at %d:%d (want %d:%d): %s: %s", err.line, err.col, line, col, err.path, err.msg);
    assert_string_equal(err.file, "config.yaml");
    if (path)
        assert_string_equal(err.path, path);
    if (!strstr(err.msg, msg_part))
        fail_msg("message \"%s\" lacks \"%s\"", err.msg, msg_part);
    /* the config is left at the defaults */
    assert_int_equal(cfg.sharing, GS_SHARING_NONE);
    assert_int_equal(cfg.n_replicated, 0);
}

static void plan_ok(const gs_nvml_inventory *inv, const gs_devplugin_config *cfg, gs_devplugin_plan *plan)
{
    gs_error err;
    gs_error_clear(&err);
    if (gs_devplugin_plan_build(inv, cfg, plan, &err) != 0)
        fail_msg("plan: %s", err.msg);
}

static bool notes_have(const gs_devplugin_plan *p, const char *part)
{
    for (size_t i = 0; i < p->n_notes; i++)
        if (strstr(p->notes[i], part))
            return true;
    return false;
}

/* ---------------------------------------------------------------- config */
static void config_defaults(void **state)
{
    (void)state;
    gs_devplugin_config cfg;
    cfg_parse_ok("", &cfg);
    assert_int_equal(cfg.mig_strategy, GS_MIG_NONE);
    assert_int_equal(cfg.id_strategy, GS_DP_ID_UUID);
    assert_int_equal(cfg.list_strategies, GS_DP_LIST_ENVVAR);
    assert_false(cfg.pass_device_specs);
    assert_string_equal(cfg.driver_root, "/");
    assert_string_equal(cfg.mps_root, "/run/nvidia/mps");
    assert_string_equal(cfg.cdi_annotation_prefix, "cdi.k8s.io/");
    assert_int_equal(cfg.sharing, GS_SHARING_NONE);
    assert_int_equal(cfg.replica_policy, GS_DP_DISTRIBUTED);
    assert_int_equal(cfg.n_share, 0);
    assert_int_equal(cfg.n_warnings, 0);
    cfg_parse_ok("version: v1\n", &cfg);
    assert_int_equal(cfg.list_strategies, GS_DP_LIST_ENVVAR);
    cfg_parse_ok("version: v1\nflags: {}\nsharing: {}\n", &cfg);
    assert_int_equal(cfg.sharing, GS_SHARING_NONE);
}

/* NVIDIA's documented time-slicing example (README "Shared Access to GPUs"). */
static void config_time_slicing(void **state)
{
    (void)state;
    gs_devplugin_config cfg;
    cfg_parse_ok("version: v1\n"
                 "flags:\n"
                 "  migStrategy: mixed\n"
                 "sharing:\n"
                 "  timeSlicing:\n"
                 "    renameByDefault: true\n"
                 "    failRequestsGreaterThanOne: true\n"
                 "    resources:\n"
                 "    - name: nvidia.com/gpu\n"
                 "      replicas: 4\n"
                 "    - name: nvidia.com/mig-1g.10gb\n"
                 "      replicas: 2\n",
                 &cfg);
    assert_int_equal(cfg.mig_strategy, GS_MIG_MIXED);
    assert_int_equal(cfg.sharing, GS_SHARING_TIME_SLICING);
    assert_true(cfg.rename_by_default);
    assert_true(cfg.fail_requests_gt_one);
    assert_int_equal(cfg.n_replicated, 2);
    assert_string_equal(cfg.replicated[0].name, "nvidia.com/gpu");
    assert_int_equal(cfg.replicated[0].replicas, 4);
    assert_string_equal(cfg.replicated[1].name, "nvidia.com/mig-1g.10gb");
    assert_int_equal(cfg.replicated[1].replicas, 2);
    assert_int_equal(cfg.n_warnings, 0);

    /* rename and devices: validated, not applied (NVIDIA), a warning each */
    cfg_parse_ok("sharing:\n  timeSlicing:\n    resources:\n"
                 "    - {name: nvidia.com/gpu, replicas: 2, rename: gpu-ts, devices: [0, \"1:0\", GPU-abc]}\n",
                 &cfg);
    assert_int_equal(cfg.n_warnings, 2);
    assert_non_null(strstr(cfg.warnings[0], "rename is not applied"));
    assert_false(cfg.fail_requests_gt_one);
}

static void config_mps_and_flags(void **state)
{
    (void)state;
    gs_devplugin_config cfg;
    cfg_parse_ok("version: v1\n"
                 "sharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 10\n",
                 &cfg);
    assert_int_equal(cfg.sharing, GS_SHARING_MPS);
    assert_true(cfg.fail_requests_gt_one); /* always for MPS */
    assert_int_equal(cfg.replicated[0].replicas, 10);

    cfg_parse_ok("version: v1\n"
                 "flags:\n"
                 "  migStrategy: single\n"
                 "  failOnInitError: true\n"
                 "  nvidiaDriverRoot: /run/nvidia/driver\n"
                 "  gdsEnabled: true\n"
                 "  mofedEnabled: false\n"
                 "  plugin:\n"
                 "    passDeviceSpecs: true\n"
                 "    deviceListStrategy: [envvar, cdi-cri]\n"
                 "    deviceIDStrategy: index\n"
                 "    sharedDevicesAllocationPolicy: packed\n"
                 "    nvidiaCTKPath: /usr/bin/nvidia-ctk\n"
                 "  gfd:\n    oneshot: false\n    sleepInterval: 60s\n"
                 "resources:\n  gpus: [{pattern: '*', name: gpu}]\n"
                 "something: else\n"
                 "gpusched:\n  shareResources: [aliyun.com/gpu-mem]\n",
                 &cfg);
    assert_int_equal(cfg.mig_strategy, GS_MIG_SINGLE);
    assert_string_equal(cfg.driver_root, "/run/nvidia/driver");
    assert_true(cfg.gds_enabled);
    assert_true(cfg.pass_device_specs);
    assert_int_equal(cfg.list_strategies, GS_DP_LIST_ENVVAR | GS_DP_LIST_CDI_CRI);
    assert_int_equal(cfg.id_strategy, GS_DP_ID_INDEX);
    assert_int_equal(cfg.replica_policy, GS_DP_PACKED);
    assert_int_equal(cfg.n_share, 1);
    assert_string_equal(cfg.share[0], "aliyun.com/gpu-mem");
    assert_int_equal(cfg.n_warnings, 1); /* "something" */
    assert_non_null(strstr(cfg.warnings[0], "\"something\" (line 19) is not read"));

    /* a single string, as the flag's value */
    cfg_parse_ok("flags: {plugin: {deviceListStrategy: volume-mounts}}\n", &cfg);
    assert_int_equal(cfg.list_strategies, GS_DP_LIST_VOLUME_MOUNTS);
    /* JSON works too */
    cfg_parse_ok("{\"version\":\"v1\",\"flags\":{\"migStrategy\":\"mixed\"}}", &cfg);
    assert_int_equal(cfg.mig_strategy, GS_MIG_MIXED);
}

static void config_errors(void **state)
{
    (void)state;
    cfg_parse_bad("version: v1\nflags:\n  plugin:\n    deviceIdStrategy: index\n", 4, 5,
                  "flags.plugin.deviceIdStrategy", "unknown field");
    cfg_parse_bad("flags:\n  migstrategy: mixed\n", 2, 3, "flags.migstrategy", "unknown field");
    cfg_parse_bad("flags:\n  migStrategy: both\n", 2, 16, "flags.migStrategy", "unknown MIG strategy \"both\"");
    cfg_parse_bad("sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 0\n", 5,
                  17, "sharing.timeSlicing.resources[0].replicas", "at least 1");
    cfg_parse_bad("sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: four\n",
                  5, 17, "sharing.timeSlicing.resources[0].replicas", "expected an integer");
    cfg_parse_bad("sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: -2\n",
                  5, 17, NULL, "expected an integer");
    cfg_parse_bad("sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n", 4, 7,
                  "sharing.timeSlicing.resources[0]", "no replicas specified");
    cfg_parse_bad("sharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replica: 2}\n", 4, 30,
                  "sharing.timeSlicing.resources[0].replica", "unknown field");
    cfg_parse_bad("sharing:\n  timeSlicing:\n    renameByDefault: true\n", 3, 5, "sharing.timeSlicing.resources",
                  "no resources specified");
    cfg_parse_bad("sharing:\n  mps:\n    resources:\n    - {name: nvidia.com/mig-1g.10gb, replicas: 2}\n", 4, 14,
                  NULL, "MPS shares whole GPUs only");
    cfg_parse_bad("sharing:\n  timeSlicing:\n    resources:\n    - {name: example.com/gpu, replicas: 2}\n", 4, 14,
                  NULL, "cannot share");
    cfg_parse_bad("sharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 2}]\n"
                  "  mps:\n    resources: [{name: nvidia.com/gpu, replicas: 2}]\n",
                  4, 3, "sharing.mps", "mutually exclusive");
    cfg_parse_bad("version: v2\n", 1, 10, "version", "unknown version \"v2\"");
    cfg_parse_bad("flags:\n  plugin:\n    passDeviceSpecs: yes-please\n", 3, 22, NULL, "expected true or false");
    cfg_parse_bad("flags:\n  plugin:\n    deviceListStrategy: [envvar, files]\n", 3, 34,
                  "flags.plugin.deviceListStrategy[1]", "unknown device list strategy");
    cfg_parse_bad("gpusched:\n  shareResources: [nvidia.com/gpumem]\n", 2, 20, "gpusched.shareResources[0]",
                  "unknown share resource");
    cfg_parse_bad("gpusched:\n  share: []\n", 2, 3, "gpusched.share", "unknown field");
    cfg_parse_bad("- a\n- b\n", 1, 1, NULL, "expected a mapping");
    /* syntax error: a parse error with a position */
    gs_devplugin_config cfg;
    gs_error err;
    gs_error_clear(&err);
    const char *bad = "flags:\n  migStrategy: [mixed\n";
    assert_int_equal(gs_devplugin_config_parse("c.yaml", bad, strlen(bad), &cfg, &err), -1);
    assert_int_equal(err.code, GS_ERR_PARSE);
    assert_true(err.line > 0);
}

/* ---------------------------------------------------------------- plan */
static void plan_none_8(void **state)
{
    (void)state;
    gs_nvml_inventory inv = inv_whole(8);
    add_mig(7, "7g.80gb", 0, 0, 8, 7); /* MIG mode is ignored under none */
    gpus[7].mig[0].ci_slices = 8;
    gs_devplugin_config cfg;
    gs_devplugin_config_defaults(&cfg);
    gs_devplugin_plan p;
    plan_ok(&inv, &cfg, &p);
    assert_int_equal(p.n_resources, 1);
    const gs_devplugin_resource *r = &p.resources[0];
    assert_string_equal(r->name, "nvidia.com/gpu");
    assert_string_equal(r->socket, "gpusched-gpu.sock");
    assert_int_equal(r->kind, GS_DP_RES_GPU);
    assert_true(r->preferred_available);
    assert_int_equal(r->n_devices, 8);
    for (int i = 0; i < 8; i++) {
        assert_string_equal(r->devices[i].id, uuid_of(i));
        assert_string_equal(r->devices[i].uuid, uuid_of(i));
        assert_int_equal(r->devices[i].gpu_index, i);
        assert_int_equal(r->devices[i].mig, -1);
        assert_int_equal(r->devices[i].replica, -1);
        assert_int_equal(r->devices[i].numa_node, i < 4 ? 0 : 1);
        assert_true(r->devices[i].healthy);
    }
    size_t h = 0;
    assert_int_equal(gs_devplugin_plan_capacity(&p, "nvidia.com/gpu", &h), 8);
    assert_int_equal(h, 8);
    assert_int_equal(gs_devplugin_plan_capacity(&p, "nvidia.com/mig-7g.80gb", NULL), 0);
    gs_devplugin_plan_free(&p);

    cfg.id_strategy = GS_DP_ID_INDEX;
    plan_ok(&inv, &cfg, &p);
    assert_string_equal(p.resources[0].devices[0].id, "0");
    assert_string_equal(p.resources[0].devices[7].id, "7");
    assert_string_equal(p.resources[0].devices[7].uuid, uuid_of(7));
    gs_devplugin_plan_free(&p);
}

static void plan_time_slicing(void **state)
{
    (void)state;
    gs_nvml_inventory inv = inv_whole(2);
    gs_devplugin_config cfg;
    cfg_parse_ok("sharing:\n  timeSlicing:\n    renameByDefault: true\n"
                 "    resources: [{name: nvidia.com/gpu, replicas: 4}]\n",
                 &cfg);
    gs_devplugin_plan p;
    plan_ok(&inv, &cfg, &p);
    assert_int_equal(p.n_resources, 1);
    const gs_devplugin_resource *r = &p.resources[0];
    assert_string_equal(r->name, "nvidia.com/gpu.shared");
    assert_string_equal(r->socket, "gpusched-gpu.shared.sock");
    assert_int_equal(r->sharing, GS_SHARING_TIME_SLICING);
    assert_int_equal(r->replicas, 4);
    assert_int_equal(r->n_devices, 8);
    char want[80];
    for (int i = 0; i < 8; i++) {
        snprintf(want, sizeof want, "%s::%d", uuid_of(i / 4), i % 4);
        assert_string_equal(r->devices[i].id, want);
        assert_string_equal(r->devices[i].base_id, uuid_of(i / 4));
        assert_int_equal(r->devices[i].replica, i % 4);
    }
    assert_int_equal(gs_devplugin_plan_capacity(&p, "nvidia.com/gpu.shared", NULL), 8);
    assert_int_equal(gs_devplugin_plan_capacity(&p, "nvidia.com/gpu", NULL), 0);
    gs_devplugin_plan_free(&p);

    /* without renameByDefault the name stays; index IDs get the suffix too */
    cfg.rename_by_default = false;
    cfg.id_strategy = GS_DP_ID_INDEX;
    plan_ok(&inv, &cfg, &p);
    assert_string_equal(p.resources[0].name, "nvidia.com/gpu");
    assert_string_equal(p.resources[0].devices[5].id, "1::1");
    gs_devplugin_plan_free(&p);
}

static void a100_mixed(void)
{
    /* GPU 0: 2 x 1g.10gb, 3g.40gb, 1c.2g.20gb (CI smaller than GI); GPU 1: MIG off */
    add_mig(0, "1g.10gb", 9, 0, 1, 1);
    add_mig(0, "1g.10gb", 10, 0, 1, 1);
    add_mig(0, "3g.40gb", 2, 0, 3, 3);
    add_mig(0, "1c.2g.20gb", 5, 0, 2, 1);
    add_mig(0, "1g.10gb+me", 13, 0, 1, 1);
}

static void plan_mixed(void **state)
{
    (void)state;
    gs_nvml_inventory inv = inv_whole(2);
    a100_mixed();
    gs_devplugin_config cfg;
    cfg_parse_ok("flags: {migStrategy: mixed}\n", &cfg);
    gs_devplugin_plan p;
    plan_ok(&inv, &cfg, &p);
    assert_int_equal(p.n_resources, 4);
    assert_string_equal(p.resources[0].name, "nvidia.com/gpu");
    assert_int_equal(p.resources[0].n_devices, 1);
    assert_string_equal(p.resources[0].devices[0].uuid, uuid_of(1));
    assert_string_equal(p.resources[1].name, "nvidia.com/mig-1g.10gb");
    assert_string_equal(p.resources[1].socket, "gpusched-mig-1g.10gb.sock");
    assert_string_equal(p.resources[1].profile, "1g.10gb");
    assert_int_equal(p.resources[1].kind, GS_DP_RES_MIG);
    assert_int_equal(p.resources[1].n_devices, 2);
    assert_string_equal(p.resources[1].devices[1].id, migs[0][1].uuid);
    assert_int_equal(p.resources[1].devices[1].mig, 1);
    assert_string_equal(p.resources[2].name, "nvidia.com/mig-1g.10gb.me");
    assert_string_equal(p.resources[2].socket, "gpusched-mig-1g.10gb.me.sock");
    assert_string_equal(p.resources[3].name, "nvidia.com/mig-3g.40gb");
    assert_int_equal(p.resources[3].n_devices, 1);
    assert_true(notes_have(&p, "1c.2g.20gb has a compute instance smaller"));
    gs_devplugin_plan_free(&p);

    /* index IDs: gpu:mig */
    cfg.id_strategy = GS_DP_ID_INDEX;
    plan_ok(&inv, &cfg, &p);
    assert_string_equal(p.resources[1].devices[0].id, "0:0");
    assert_string_equal(p.resources[1].devices[1].id, "0:1");
    assert_string_equal(p.resources[3].devices[0].id, "0:2");
    assert_string_equal(p.resources[0].devices[0].id, "1");
    gs_devplugin_plan_free(&p);

    /* time-slicing a MIG profile */
    cfg_parse_ok("flags: {migStrategy: mixed}\nsharing:\n  timeSlicing:\n"
                 "    resources: [{name: nvidia.com/mig-1g.10gb, replicas: 3}]\n",
                 &cfg);
    plan_ok(&inv, &cfg, &p);
    const gs_devplugin_resource *r = gs_devplugin_plan_resource(&p, "nvidia.com/mig-1g.10gb");
    assert_non_null(r);
    assert_int_equal(r->n_devices, 6);
    assert_int_equal(r->replicas, 3);
    assert_int_equal(gs_devplugin_plan_capacity(&p, "nvidia.com/gpu", NULL), 1);
    gs_devplugin_plan_free(&p);
}

static void plan_single(void **state)
{
    (void)state;
    gs_nvml_inventory inv = inv_whole(2);
    for (int g = 0; g < 2; g++)
        for (unsigned k = 0; k < 7; k++)
            add_mig(g, "1g.10gb", 9 + k, 0, 1, 1);
    gs_devplugin_config cfg;
    cfg_parse_ok("flags: {migStrategy: single}\n", &cfg);
    gs_devplugin_plan p;
    plan_ok(&inv, &cfg, &p);
    assert_false(p.nothing);
    assert_int_equal(p.n_resources, 1);
    assert_string_equal(p.resources[0].name, "nvidia.com/gpu");
    assert_string_equal(p.resources[0].profile, "1g.10gb");
    assert_int_equal(p.resources[0].n_devices, 14);
    assert_string_equal(p.resources[0].devices[13].id, migs[1][6].uuid);
    assert_int_equal(p.resources[0].devices[13].gpu_index, 1);
    assert_int_equal(p.resources[0].devices[13].mig, 6);
    gs_devplugin_plan_free(&p);

    /* not uniform: nothing, and why */
    snprintf(migs[1][6].profile, sizeof migs[1][6].profile, "2g.20gb");
    plan_ok(&inv, &cfg, &p);
    assert_true(p.nothing);
    assert_int_equal(p.n_resources, 0);
    assert_true(notes_have(&p, "more than one MIG device type (1g.10gb and 2g.20gb)"));
    gs_devplugin_plan_free(&p);

    /* a MIG-disabled GPU next to MIG-enabled ones */
    inv = inv_whole(2);
    add_mig(0, "7g.80gb", 0, 0, 8, 8);
    plan_ok(&inv, &cfg, &p);
    assert_true(p.nothing);
    assert_true(notes_have(&p, "every GPU must have MIG enabled"));
    gs_devplugin_plan_free(&p);

    /* no MIG-enabled GPU: as none */
    inv = inv_whole(2);
    plan_ok(&inv, &cfg, &p);
    assert_false(p.nothing);
    assert_int_equal(p.mig_strategy, GS_MIG_NONE);
    assert_int_equal(gs_devplugin_plan_capacity(&p, "nvidia.com/gpu", NULL), 2);
    gs_devplugin_plan_free(&p);
}

static void plan_lost_and_health(void **state)
{
    (void)state;
    gs_nvml_inventory inv = inv_whole(4);
    gpus[2].lost = 1;
    snprintf(gpus[2].lost_reason, sizeof gpus[2].lost_reason, "nvmlDeviceGetMemoryInfo: GPU is lost (15)");
    gs_devplugin_config cfg;
    gs_devplugin_config_defaults(&cfg);
    gs_devplugin_plan p;
    plan_ok(&inv, &cfg, &p);
    assert_int_equal(p.resources[0].n_devices, 3);
    assert_null(gs_devplugin_find(&p.resources[0], uuid_of(2)));
    assert_true(notes_have(&p, "GPU 2 (GPU-000000a2-1111-2222-3333-444444444444) is not advertised: lost: "
                               "nvmlDeviceGetMemoryInfo: GPU is lost (15)"));

    size_t h;
    assert_int_equal(gs_devplugin_plan_set_health(&p, 1, -1, false), 1);
    assert_int_equal(gs_devplugin_plan_set_health(&p, 1, -1, false), 0);
    assert_int_equal(gs_devplugin_plan_capacity(&p, "nvidia.com/gpu", &h), 3);
    assert_int_equal(h, 2);
    assert_false(gs_devplugin_find(&p.resources[0], uuid_of(1))->healthy);
    assert_int_equal(gs_devplugin_plan_set_health(&p, 1, -1, true), 1); /* recovers */
    assert_int_equal(gs_devplugin_plan_set_health(&p, 2, -1, false), 0); /* not advertised */
    gs_devplugin_plan_free(&p);

    /* replicas follow their GPU; a MIG device alone */
    cfg_parse_ok("flags: {migStrategy: mixed}\nsharing:\n  timeSlicing:\n"
                 "    resources: [{name: nvidia.com/gpu, replicas: 4}]\n",
                 &cfg);
    inv = inv_whole(2);
    a100_mixed();
    plan_ok(&inv, &cfg, &p);
    assert_int_equal(gs_devplugin_plan_set_health(&p, 1, -1, false), 4);
    assert_int_equal(gs_devplugin_plan_set_health(&p, 0, 1, false), 1);
    const gs_devplugin_resource *r = gs_devplugin_plan_resource(&p, "nvidia.com/mig-1g.10gb");
    assert_true(r->devices[0].healthy);
    assert_false(r->devices[1].healthy);
    assert_int_equal(gs_devplugin_plan_set_health(&p, 0, -1, false), 3); /* the other MIG devices */
    assert_int_equal(gs_devplugin_plan_set_health(&p, 0, -1, true), 4);
    gs_devplugin_plan_free(&p);
}

static void plan_share_resources(void **state)
{
    (void)state;
    gs_nvml_inventory inv = inv_whole(2);
    gs_devplugin_config cfg;
    cfg_parse_ok("gpusched:\n  shareResources: [aliyun.com/gpu-mem, alibabacloud.com/gpu-milli]\n", &cfg);
    gs_devplugin_plan p;
    plan_ok(&inv, &cfg, &p);
    assert_int_equal(p.n_resources, 3);
    const gs_devplugin_resource *mem = gs_devplugin_plan_resource(&p, "aliyun.com/gpu-mem");
    const gs_devplugin_resource *milli = gs_devplugin_plan_resource(&p, "alibabacloud.com/gpu-milli");
    assert_non_null(mem);
    assert_non_null(milli);
    assert_string_equal(mem->socket, "gpusched-gpu-mem.sock");
    assert_string_equal(milli->socket, "gpusched-gpu-milli.sock");
    assert_true(mem->accounting_only);
    assert_false(mem->preferred_available);
    assert_int_equal(mem->n_devices, 160); /* 80 GiB x 2 */
    assert_int_equal(milli->n_devices, 2000);
    char want[80];
    snprintf(want, sizeof want, "%s::79", uuid_of(0));
    assert_string_equal(mem->devices[79].id, want);
    assert_int_equal(mem->devices[80].gpu_index, 1);
    /* unhealthy until the NRI plugin is registered */
    size_t h;
    assert_int_equal(gs_devplugin_plan_capacity(&p, "aliyun.com/gpu-mem", &h), 160);
    assert_int_equal(h, 0);
    assert_int_equal(gs_devplugin_plan_capacity(&p, "nvidia.com/gpu", &h), 2);
    assert_int_equal(h, 2);
    assert_int_equal(gs_devplugin_plan_set_injection(&p, true), 2160);
    assert_int_equal(gs_devplugin_plan_set_health(&p, 1, -1, false), 1 + 80 + 1000);

    gs_devplugin_alloc a;
    gs_error err;
    const char *ids1[] = {mem->devices[0].id, mem->devices[1].id};
    assert_int_equal(gs_devplugin_allocate(&p, &cfg, mem, ids1, 2, &a, &err), 0);
    assert_int_equal(a.n_envs, 1);
    assert_string_equal(a.envs[0].key, "NVIDIA_VISIBLE_DEVICES");
    assert_string_equal(a.envs[0].value, "void");
    assert_int_equal(a.n_mounts + a.n_devices + a.n_cdi, 0);
    assert_int_equal(a.n_annotations, 1); /* for the NRI plugin: this container asks for a share */
    assert_string_equal(a.annotations[0].key, "gpusched.io/share-resource");
    assert_string_equal(a.annotations[0].value, "aliyun.com/gpu-mem");
    gs_devplugin_alloc_free(&a);
    const char *ids2[] = {mem->devices[100].id}; /* GPU 1: unhealthy */
    assert_int_equal(gs_devplugin_allocate(&p, &cfg, mem, ids2, 1, &a, &err), -1);
    assert_non_null(strstr(err.msg, "is unhealthy"));
    gs_devplugin_plan_set_injection(&p, false);
    assert_int_equal(gs_devplugin_allocate(&p, &cfg, mem, ids1, 1, &a, &err), -1);
    assert_non_null(strstr(err.msg, "NRI plugin is not registered"));
    gs_devplugin_plan_free(&p);

    /* MIG-enabled GPUs carry no share units */
    cfg.mig_strategy = GS_MIG_MIXED;
    a100_mixed();
    plan_ok(&inv, &cfg, &p);
    assert_int_equal(gs_devplugin_plan_capacity(&p, "aliyun.com/gpu-mem", NULL), 80);
    gs_devplugin_plan_free(&p);
}

static void plan_mps_on_mig_refused(void **state)
{
    (void)state;
    gs_nvml_inventory inv = inv_whole(1);
    add_mig(0, "3g.40gb", 1, 0, 3, 3);
    gs_devplugin_config cfg;
    cfg_parse_ok("flags: {migStrategy: single}\nsharing:\n  mps:\n"
                 "    resources: [{name: nvidia.com/gpu, replicas: 2}]\n",
                 &cfg);
    gs_devplugin_plan p;
    gs_error err;
    assert_int_equal(gs_devplugin_plan_build(&inv, &cfg, &p, &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_non_null(strstr(err.msg, "MPS is not supported for MIG devices"));
}

/* ---------------------------------------------------------------- preferred */
static void pref(const gs_devplugin_plan *p, const gs_devplugin_config *cfg, const gs_devplugin_resource *r,
                 const char *const *avail, size_t na, const char *const *must, size_t nm, size_t size,
                 const char **out)
{
    gs_error err;
    gs_error_clear(&err);
    if (gs_devplugin_preferred(p, cfg, r, avail, na, must, nm, size, out, &err) != 0)
        fail_msg("preferred: %s", err.msg);
}

static void preferred_nvlink(void **state)
{
    (void)state;
    /* two NVLink pairs: 0-2 and 1-3 (so the lowest indices, 0 and 1, are the wrong answer) */
    gs_nvml_inventory inv = inv_whole(4);
    for (int i = 0; i < 4; i++)
        gpus[i].numa_node = 0;
    link_gpus(0, 2, 4);
    link_gpus(1, 3, 4);
    gs_devplugin_config cfg;
    gs_devplugin_config_defaults(&cfg);
    cfg.id_strategy = GS_DP_ID_INDEX;
    gs_devplugin_plan p;
    plan_ok(&inv, &cfg, &p);
    const gs_devplugin_resource *r = &p.resources[0];
    const char *all[] = {"0", "1", "2", "3"};
    const char *out[4];
    pref(&p, &cfg, r, all, 4, NULL, 0, 2, out);
    assert_string_equal(out[0], "0");
    assert_string_equal(out[1], "2");
    /* must include 1: its partner 3 */
    const char *must[] = {"1"};
    const char *avail[] = {"0", "2", "3"};
    pref(&p, &cfg, r, avail, 3, must, 1, 2, out);
    assert_string_equal(out[0], "1");
    assert_string_equal(out[1], "3");
    /* 3 of 4: a pair plus the nearest */
    pref(&p, &cfg, r, all, 4, NULL, 0, 3, out);
    assert_string_equal(out[0], "0");
    assert_string_equal(out[1], "1");
    assert_string_equal(out[2], "2");
    /* errors */
    gs_error err;
    const char *unknown[] = {"0", "9"};
    assert_int_equal(gs_devplugin_preferred(&p, &cfg, r, unknown, 2, NULL, 0, 1, out, &err), -1);
    assert_int_equal(err.code, GS_ERR_NOTFOUND);
    assert_int_equal(gs_devplugin_preferred(&p, &cfg, r, all, 2, NULL, 0, 3, out, &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    gs_devplugin_plan_free(&p);
}

static void preferred_numa_and_pci(void **state)
{
    (void)state;
    gs_nvml_inventory inv = inv_whole(4);
    int numa[] = {0, 1, 0, 1};
    for (int i = 0; i < 4; i++)
        gpus[i].numa_node = numa[i];
    gs_devplugin_config cfg;
    gs_devplugin_config_defaults(&cfg);
    cfg.id_strategy = GS_DP_ID_INDEX;
    gs_devplugin_plan p;
    plan_ok(&inv, &cfg, &p);
    const char *all[] = {"0", "1", "2", "3"};
    const char *out[4];
    pref(&p, &cfg, &p.resources[0], all, 4, NULL, 0, 2, out);
    assert_string_equal(out[0], "0");
    assert_string_equal(out[1], "2");
    gs_devplugin_plan_free(&p);

    /* one NUMA node: the closest buses (0x40, 0x41) */
    inv = inv_whole(4);
    const char *bus[] = {"00000000:07:00.0", "00000000:40:00.0", "00000000:0C:00.0", "00000000:41:00.0"};
    for (int i = 0; i < 4; i++) {
        gpus[i].numa_node = 0;
        snprintf(gpus[i].pci_bus_id, sizeof gpus[i].pci_bus_id, "%s", bus[i]);
    }
    plan_ok(&inv, &cfg, &p);
    pref(&p, &cfg, &p.resources[0], all, 4, NULL, 0, 2, out);
    assert_string_equal(out[0], "1");
    assert_string_equal(out[1], "3");
    gs_devplugin_plan_free(&p);
}

static void preferred_replicas(void **state)
{
    (void)state;
    gs_nvml_inventory inv = inv_whole(2);
    gs_devplugin_config cfg;
    cfg_parse_ok("flags: {plugin: {deviceIDStrategy: index}}\n"
                 "sharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 4}]\n",
                 &cfg);
    gs_devplugin_plan p;
    plan_ok(&inv, &cfg, &p);
    const gs_devplugin_resource *r = &p.resources[0];
    /* 0::0 is in use */
    const char *avail[] = {"0::1", "0::2", "0::3", "1::0", "1::1", "1::2", "1::3"};
    const char *out[4];
    pref(&p, &cfg, r, avail, 7, NULL, 0, 2, out);
    assert_string_equal(out[0], "1::0"); /* GPU 1 has no replica used */
    assert_string_equal(out[1], "0::1"); /* then a tie: plan order */
    cfg.replica_policy = GS_DP_PACKED;
    pref(&p, &cfg, r, avail, 7, NULL, 0, 2, out);
    assert_string_equal(out[0], "0::1");
    assert_string_equal(out[1], "0::2");
    /* must include counts as used */
    const char *must[] = {"1::3"};
    const char *avail2[] = {"0::1", "0::2", "0::3", "1::0", "1::1", "1::2"};
    pref(&p, &cfg, r, avail2, 6, must, 1, 3, out);
    assert_string_equal(out[0], "1::3");
    assert_string_equal(out[1], "0::1");
    assert_string_equal(out[2], "0::2");
    cfg.replica_policy = GS_DP_DISTRIBUTED;
    pref(&p, &cfg, r, avail2, 6, must, 1, 3, out);
    assert_string_equal(out[0], "1::3");
    assert_string_equal(out[1], "0::1"); /* tie 1:1, plan order */
    assert_string_equal(out[2], "1::0"); /* GPU 0 has 2 used now, GPU 1 one */
    gs_devplugin_plan_free(&p);
}

/* ---------------------------------------------------------------- allocate */
static void alloc_ok(const gs_devplugin_plan *p, const gs_devplugin_config *cfg, const gs_devplugin_resource *r,
                     const char *const *ids, size_t n, gs_devplugin_alloc *a)
{
    gs_error err;
    gs_error_clear(&err);
    if (gs_devplugin_allocate(p, cfg, r, ids, n, a, &err) != 0)
        fail_msg("allocate: %s", err.msg);
}

static void allocate_strategies(void **state)
{
    (void)state;
    gs_nvml_inventory inv = inv_whole(2);
    gs_devplugin_config cfg;
    gs_devplugin_config_defaults(&cfg);
    gs_devplugin_plan p;
    plan_ok(&inv, &cfg, &p);
    const gs_devplugin_resource *r = &p.resources[0];
    const char *ids[] = {uuid_of(1), uuid_of(0)};
    char both[128];
    snprintf(both, sizeof both, "%s,%s", uuid_of(1), uuid_of(0));
    gs_devplugin_alloc a;

    /* envvar (default) */
    alloc_ok(&p, &cfg, r, ids, 2, &a);
    assert_int_equal(a.n_envs, 1);
    assert_string_equal(gs_devplugin_alloc_env(&a, "NVIDIA_VISIBLE_DEVICES"), both);
    assert_int_equal(a.n_mounts + a.n_devices + a.n_annotations + a.n_cdi, 0);
    gs_devplugin_alloc_free(&a);

    /* volume-mounts */
    cfg.list_strategies = GS_DP_LIST_VOLUME_MOUNTS;
    alloc_ok(&p, &cfg, r, ids, 2, &a);
    assert_string_equal(gs_devplugin_alloc_env(&a, "NVIDIA_VISIBLE_DEVICES"), "/var/run/nvidia-container-devices");
    assert_int_equal(a.n_mounts, 2);
    char cp[128];
    snprintf(cp, sizeof cp, "/var/run/nvidia-container-devices/%s", uuid_of(1));
    assert_string_equal(a.mounts[0].container_path, cp);
    assert_string_equal(a.mounts[0].host_path, "/dev/null");
    assert_false(a.mounts[0].read_only);
    gs_devplugin_alloc_free(&a);

    /* cdi-annotations + cdi-cri */
    cfg.list_strategies = GS_DP_LIST_CDI_ANNOTATIONS | GS_DP_LIST_CDI_CRI;
    alloc_ok(&p, &cfg, r, ids, 2, &a);
    assert_int_equal(a.n_envs, 0);
    assert_int_equal(a.n_cdi, 2);
    char n1[128], n0[128], joined[300];
    snprintf(n1, sizeof n1, "k8s.device-plugin.nvidia.com/gpu=%s", uuid_of(1));
    snprintf(n0, sizeof n0, "k8s.device-plugin.nvidia.com/gpu=%s", uuid_of(0));
    snprintf(joined, sizeof joined, "%s,%s", n1, n0);
    assert_string_equal(a.cdi_devices[0], n1);
    assert_string_equal(a.cdi_devices[1], n0);
    assert_int_equal(a.n_annotations, 1);
    assert_string_equal(a.annotations[0].key, "cdi.k8s.io/gpusched-device-plugin_gpu");
    assert_string_equal(a.annotations[0].value, joined);
    gs_devplugin_alloc_free(&a);

    /* index IDs, device specs under the driver root, GDS */
    gs_devplugin_plan_free(&p);
    cfg_parse_ok("flags:\n  nvidiaDriverRoot: /run/nvidia/driver\n  gdsEnabled: true\n"
                 "  plugin: {deviceIDStrategy: index, passDeviceSpecs: true}\n",
                 &cfg);
    plan_ok(&inv, &cfg, &p);
    const char *idx[] = {"1"};
    alloc_ok(&p, &cfg, &p.resources[0], idx, 1, &a);
    assert_string_equal(gs_devplugin_alloc_env(&a, "NVIDIA_VISIBLE_DEVICES"), "1");
    assert_string_equal(gs_devplugin_alloc_env(&a, "NVIDIA_GDS"), "enabled");
    assert_int_equal(a.n_devices, 5);
    const char *want[] = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset",
                          "/dev/nvidia1"};
    for (int i = 0; i < 5; i++) {
        char host[96];
        snprintf(host, sizeof host, "/run/nvidia/driver%s", want[i]);
        assert_string_equal(a.devices[i].container_path, want[i]);
        assert_string_equal(a.devices[i].host_path, host);
        assert_string_equal(a.devices[i].permissions, "rw");
    }
    gs_devplugin_alloc_free(&a);
    gs_devplugin_plan_free(&p);
}

static void allocate_replicas_and_mps(void **state)
{
    (void)state;
    gs_nvml_inventory inv = inv_whole(2);
    gs_devplugin_config cfg;
    cfg_parse_ok("sharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 4}]\n", &cfg);
    gs_devplugin_plan p;
    plan_ok(&inv, &cfg, &p);
    const gs_devplugin_resource *r = &p.resources[0];
    const char *ids[] = {r->devices[0].id, r->devices[2].id, r->devices[5].id};
    gs_devplugin_alloc a;
    alloc_ok(&p, &cfg, r, ids, 3, &a);
    char both[128];
    snprintf(both, sizeof both, "%s,%s", uuid_of(0), uuid_of(1));
    assert_string_equal(gs_devplugin_alloc_env(&a, "NVIDIA_VISIBLE_DEVICES"), both);
    gs_devplugin_alloc_free(&a);

    gs_error err;
    cfg.fail_requests_gt_one = true;
    assert_int_equal(gs_devplugin_allocate(&p, &cfg, r, ids, 2, &a, &err), -1);
    assert_string_equal(err.msg,
                        "request for 'nvidia.com/gpu: 2' too large: maximum request size for shared resources is 1");
    alloc_ok(&p, &cfg, r, ids, 1, &a);
    gs_devplugin_alloc_free(&a);
    gs_devplugin_plan_free(&p);

    /* MPS */
    cfg_parse_ok("flags: {mpsRoot: /run/nvidia/mps}\n"
                 "sharing:\n  mps:\n    renameByDefault: true\n"
                 "    resources: [{name: nvidia.com/gpu, replicas: 2}]\n",
                 &cfg);
    plan_ok(&inv, &cfg, &p);
    r = &p.resources[0];
    assert_string_equal(r->name, "nvidia.com/gpu.shared");
    assert_int_equal(r->sharing, GS_SHARING_MPS);
    ids[0] = r->devices[0].id;
    ids[1] = r->devices[1].id;
    alloc_ok(&p, &cfg, r, ids, 1, &a);
    assert_string_equal(gs_devplugin_alloc_env(&a, "NVIDIA_VISIBLE_DEVICES"), uuid_of(0));
    assert_string_equal(gs_devplugin_alloc_env(&a, "CUDA_MPS_PIPE_DIRECTORY"), "/mps/nvidia.com/gpu.shared/pipe");
    assert_int_equal(a.n_mounts, 2);
    assert_string_equal(a.mounts[0].container_path, "/mps/nvidia.com/gpu.shared/pipe");
    assert_string_equal(a.mounts[0].host_path, "/run/nvidia/mps/nvidia.com/gpu.shared/pipe");
    assert_string_equal(a.mounts[1].container_path, "/dev/shm");
    assert_string_equal(a.mounts[1].host_path, "/run/nvidia/mps/shm");
    gs_devplugin_alloc_free(&a);
    assert_int_equal(gs_devplugin_allocate(&p, &cfg, r, ids, 2, &a, &err), -1); /* MPS: 1 at most */
    gs_devplugin_plan_free(&p);
}

static void allocate_mig_caps(void **state)
{
    (void)state;
    gs_nvml_inventory inv = inv_whole(2);
    a100_mixed();
    gpus[0].minor = 3;
    gs_devplugin_config cfg;
    cfg_parse_ok("flags: {migStrategy: mixed, plugin: {passDeviceSpecs: true}}\n", &cfg);
    gs_devplugin_plan p;
    plan_ok(&inv, &cfg, &p);
    const gs_devplugin_resource *r = gs_devplugin_plan_resource(&p, "nvidia.com/mig-1g.10gb");
    const char *ids[] = {r->devices[1].id}; /* GI 10, CI 0 */
    gs_devplugin_alloc a;
    gs_error err;
    assert_int_equal(gs_devplugin_allocate(&p, &cfg, r, ids, 1, &a, &err), -1);
    assert_non_null(strstr(err.msg, "no nvidia-caps minor for gpu3/gi10/access"));

    const char *minors = "config 1\nmonitor 2\ngpu3/gi9/access 30\ngpu3/gi9/ci0/access 31\n"
                         "gpu3/gi10/access 39\ngpu3/gi10/ci0/access 40\n";
    assert_int_equal(gs_devplugin_plan_set_mig_minors(&p, "mig-minors", minors, strlen(minors), &err), 0);
    alloc_ok(&p, &cfg, r, ids, 1, &a);
    assert_string_equal(gs_devplugin_alloc_env(&a, "NVIDIA_VISIBLE_DEVICES"), migs[0][1].uuid);
    assert_int_equal(a.n_devices, 7);
    assert_string_equal(a.devices[4].container_path, "/dev/nvidia3");
    assert_string_equal(a.devices[5].container_path, "/dev/nvidia-caps/nvidia-cap39");
    assert_string_equal(a.devices[6].container_path, "/dev/nvidia-caps/nvidia-cap40");
    assert_string_equal(a.devices[6].host_path, "/dev/nvidia-caps/nvidia-cap40");
    gs_devplugin_alloc_free(&a);

    const char *bad = "gpu3/gi10/access 39\ngpu3/gi10/cx0/access 40\n";
    assert_int_equal(gs_devplugin_plan_set_mig_minors(&p, "mig-minors", bad, strlen(bad), &err), -1);
    assert_int_equal(err.code, GS_ERR_PARSE);
    assert_int_equal(err.line, 2);
    gs_devplugin_plan_free(&p);
}

static void allocate_errors(void **state)
{
    (void)state;
    gs_nvml_inventory inv = inv_whole(2);
    gs_devplugin_config cfg;
    gs_devplugin_config_defaults(&cfg);
    gs_devplugin_plan p;
    plan_ok(&inv, &cfg, &p);
    const gs_devplugin_resource *r = &p.resources[0];
    gs_devplugin_alloc a;
    gs_error err;
    const char *unknown[] = {"GPU-nope"};
    assert_int_equal(gs_devplugin_allocate(&p, &cfg, r, unknown, 1, &a, &err), -1);
    assert_int_equal(err.code, GS_ERR_NOTFOUND);
    assert_string_equal(err.msg, "invalid allocation request for 'nvidia.com/gpu': unknown device: GPU-nope");
    assert_int_equal(a.n_envs, 0);
    const char *twice[] = {uuid_of(0), uuid_of(0)};
    assert_int_equal(gs_devplugin_allocate(&p, &cfg, r, twice, 2, &a, &err), -1);
    assert_non_null(strstr(err.msg, "listed twice"));
    assert_int_equal(gs_devplugin_allocate(&p, &cfg, r, twice, 0, &a, &err), -1);
    assert_non_null(strstr(err.msg, "no device"));
    gs_devplugin_plan_set_health(&p, 0, -1, false);
    assert_int_equal(gs_devplugin_allocate(&p, &cfg, r, twice, 1, &a, &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_non_null(strstr(err.msg, "is unhealthy"));
    gs_devplugin_plan_set_health(&p, 0, -1, true);
    /* device specs without a minor number */
    gs_devplugin_plan_free(&p);
    gpus[0].minor = -1;
    cfg.pass_device_specs = true;
    plan_ok(&inv, &cfg, &p);
    assert_int_equal(gs_devplugin_allocate(&p, &cfg, &p.resources[0], twice, 1, &a, &err), -1);
    assert_non_null(strstr(err.msg, "minor number of GPU 0 is unknown"));
    gs_devplugin_plan_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(config_defaults),
        cmocka_unit_test(config_time_slicing),
        cmocka_unit_test(config_mps_and_flags),
        cmocka_unit_test(config_errors),
        cmocka_unit_test(plan_none_8),
        cmocka_unit_test(plan_time_slicing),
        cmocka_unit_test(plan_mixed),
        cmocka_unit_test(plan_single),
        cmocka_unit_test(plan_lost_and_health),
        cmocka_unit_test(plan_share_resources),
        cmocka_unit_test(plan_mps_on_mig_refused),
        cmocka_unit_test(preferred_nvlink),
        cmocka_unit_test(preferred_numa_and_pci),
        cmocka_unit_test(preferred_replicas),
        cmocka_unit_test(allocate_strategies),
        cmocka_unit_test(allocate_replicas_and_mps),
        cmocka_unit_test(allocate_mig_caps),
        cmocka_unit_test(allocate_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
