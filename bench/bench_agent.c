/*
 * bench_agent.c - the node agent's per-request work without the transport (issue 14,
 * section 5): /metrics rendering, Allocate and GetPreferredAllocation.
 *
 *   build/bench/bench_agent FAKE_NVML_LIBRARY [ITERATIONS]       (10000)
 *
 * FAKE_NVML_LIBRARY: the fake libnvidia-ml.so.1 built with the tests
 * (build/tests/fake_nvml/libnvidia-ml.so.1); the scenario is written to a temporary file.
 * Two nodes, each discovered and sampled through the agent's own NVML layer:
 *   mig    8 x H100 80GB, 7 x 1g.10gb each, --mig-strategy mixed; 56 holders (one pod per
 *          MIG device), so every MIG series carries namespace/pod/container
 *   whole  8 x H100 80GB, each NVLink-connected to the 7 others; 8 holders
 * Times per call, ITERATIONS each: gs_exporter_render (the body /metrics serves),
 * gs_devplugin_allocate (one device; whole: 2), gs_devplugin_preferred (mig: 1 of 56;
 * whole: 4 of 8, the NVLink/NUMA scoring), and gs_nvml_sample_read (the fake's cost
 * included: an upper bound of the agent's own part). Prints peak RSS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "gpusched/devplugin.h"
#include "gpusched/exporter.h"
#include "gpusched/nvml.h"

#define NGPU 8
#define NMIG 7

static const int bus[NGPU] = {0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB};

static void write_scenario(const char *path, int mig)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fprintf(f, "driver 550.107.02\ncuda 12040\n");
    for (int i = 0; i < NGPU; i++) {
        fprintf(f,
                "gpu uuid=GPU-b0a0c0d0-0000-4000-8000-%012d memory=81559 pci=00000000:%02X:00.0 minor=%d cc=9.0 "
                "arch=9 numa=%d temp=%d power=%d energy=%d ecc-sbe=0 ecc-dbe=0 sm-clock=1980 mem-clock=2619 "
                "replay=0 ",
                i, bus[i], i, i / 4, 40 + i, 300000 + 1000 * i, 1000000000 + i);
        if (mig) {
            fprintf(f, "mig=1 fbused=7000 name=NVIDIA H100 80GB HBM3\n");
            for (int j = 0; j < NMIG; j++)
                fprintf(f,
                        "mig uuid=MIG-b0a0c0d0-%04d-5000-8000-%012d gi=%d ci=0 memory=9856 gi-slices=1 "
                        "ci-slices=1 sms=16 ce=1 dec=1 jpg=1 fbused=1000\n",
                        i, j, 7 + j);
        } else {
            fprintf(f, "mig=0 nvlink=");
            for (int k = 0, n = 0; k < NGPU; k++)
                if (k != i)
                    fprintf(f, "%s00000000:%02X:00.0", n++ ? "," : "", bus[k]);
            fprintf(f, " util=%d memutil=%d fbused=%d name=NVIDIA H100 80GB HBM3\n", 10 * i, 5 * i, 2000 * (i + 1));
        }
    }
    fclose(f);
}

static void die(const char *what, const gs_error *err)
{
    fprintf(stderr, "bench_agent: %s: %s\n", what, err->msg);
    exit(1);
}

static void run(const char *lib, const char *scn, int mig, long iters)
{
    gs_error err;
    gs_error_clear(&err);
    write_scenario(scn, mig);
    gs_nvml *nvml = NULL;
    gs_nvml_inventory inv;
    gs_nvml_samples samples;
    memset(&samples, 0, sizeof samples);
    if (gs_nvml_open(lib, &nvml, &err) != 0)
        die("gs_nvml_open", &err);
    if (gs_nvml_discover(nvml, &inv, &err) != 0)
        die("gs_nvml_discover", &err);
    double t0 = now();
    for (long i = 0; i < iters / 10 + 1; i++)
        if (gs_nvml_sample_read(nvml, &inv, &samples, &err) != 0)
            die("gs_nvml_sample_read", &err);
    double t_sample = (now() - t0) / (double)(iters / 10 + 1);

    /* holders: one pod per advertised device */
    gs_exporter_holder holders[NGPU * NMIG];
    char names[NGPU * NMIG][32];
    size_t nh = 0;
    for (size_t g = 0; g < inv.n_gpus; g++) {
        if (mig) {
            for (size_t m = 0; m < inv.gpus[g].n_mig; m++, nh++) {
                snprintf(names[nh], sizeof names[nh], "job-%zu-%zu", g, m);
                holders[nh] = (gs_exporter_holder){"nvidia.com/mig-1g.10gb", inv.gpus[g].mig[m].uuid, "ml",
                                                   names[nh], "main"};
            }
        } else {
            snprintf(names[nh], sizeof names[nh], "train-%zu", g);
            holders[nh] = (gs_exporter_holder){"nvidia.com/gpu", inv.gpus[g].uuid, "ml", names[nh], "main"};
            nh++;
        }
    }
    gs_exporter_input in = {&inv, &samples, NULL, holders, nh};
    gs_exporter_opts o = {"bench-node", GS_EXPORTER_HOST_LOWER, false};
    gs_strbuf sb = {0};
    t0 = now();
    for (long i = 0; i < iters; i++) {
        gs_strbuf_reset(&sb);
        if (gs_exporter_render(&in, &o, &sb, &err) != 0)
            die("gs_exporter_render", &err);
    }
    double t_render = (now() - t0) / (double)iters;
    size_t body = sb.len;

    gs_devplugin_config cfg;
    gs_devplugin_config_defaults(&cfg);
    cfg.mig_strategy = mig ? GS_MIG_MIXED : GS_MIG_NONE;
    gs_devplugin_plan plan;
    t0 = now();
    if (gs_devplugin_plan_build(&inv, &cfg, &plan, &err) != 0)
        die("gs_devplugin_plan_build", &err);
    double t_plan = now() - t0;
    const gs_devplugin_resource *res =
        gs_devplugin_plan_resource(&plan, mig ? "nvidia.com/mig-1g.10gb" : "nvidia.com/gpu");
    if (!res) {
        fprintf(stderr, "bench_agent: the plan has no %s\n", mig ? "nvidia.com/mig-1g.10gb" : "nvidia.com/gpu");
        exit(1);
    }
    const char *avail[NGPU * NMIG];
    for (size_t d = 0; d < res->n_devices; d++)
        avail[d] = res->devices[d].id;
    const char *ids[2] = {res->devices[mig ? 25 : 2].id, res->devices[3].id};
    size_t nids = mig ? 1 : 2, size = mig ? 1 : 4;
    t0 = now();
    for (long i = 0; i < iters; i++) {
        gs_devplugin_alloc a;
        if (gs_devplugin_allocate(&plan, &cfg, res, ids, nids, &a, &err) != 0)
            die("gs_devplugin_allocate", &err);
        gs_devplugin_alloc_free(&a);
    }
    double t_alloc = (now() - t0) / (double)iters;
    const char *pick[4];
    t0 = now();
    for (long i = 0; i < iters; i++)
        if (gs_devplugin_preferred(&plan, &cfg, res, avail, res->n_devices, NULL, 0, size, pick, &err) != 0)
            die("gs_devplugin_preferred", &err);
    double t_pref = (now() - t0) / (double)iters;

    printf("%-5s %2zu GPUs, %2zu devices | render %7.1f us (%zu bytes, %zu holders) | sample_read %7.1f us | "
           "plan %7.1f us | allocate %5.2f us | preferred %zu of %zu %6.2f us\n",
           mig ? "mig" : "whole", inv.n_gpus, res->n_devices, t_render * 1e6, body, nh, t_sample * 1e6,
           t_plan * 1e6, t_alloc * 1e6, size, res->n_devices, t_pref * 1e6);
    gs_devplugin_plan_free(&plan);
    gs_strbuf_free(&sb);
    gs_nvml_samples_free(&samples);
    gs_nvml_inventory_free(&inv);
    gs_nvml_close(nvml);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: bench_agent FAKE_NVML_LIBRARY [ITERATIONS]\n");
        return 2;
    }
    long iters = argc > 2 ? atol(argv[2]) : 10000;
    if (iters < 1)
        iters = 1;
    char scn[] = "/tmp/gs-bench-agent-XXXXXX";
    int fd = mkstemp(scn);
    if (fd < 0) {
        perror("mkstemp");
        return 1;
    }
    close(fd);
    setenv("GS_FAKE_NVML", scn, 1);
    run(argv[1], scn, 1, iters);
    run(argv[1], scn, 0, iters);
    unlink(scn);
    printf("peak RSS %.1f MiB, %ld iterations each\n", (double)peak_rss_kib() / 1024.0, iters);
    return 0;
}
