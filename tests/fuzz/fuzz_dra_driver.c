/*
 * fuzz_dra_driver.c - libFuzzer target for what the agent's DRA driver reads from outside
 * (lib/agent/dradriver.c): a ResourceClaim as the API server sends it, and the checkpoint
 * file of prepared claims read at start.
 *
 * The first byte chooses: even, the rest is a ResourceClaim (gs_drv_claim_parse, then the
 * CDI spec over a fixed inventory of a whole GPU and a MIG device); odd, the rest is a
 * checkpoint (gs_drv_checkpoint_parse). Crashes, leaks and sanitizer reports are the
 * findings. Invariants checked: what parses is written back and read again to the same
 * claims (checkpoint round trip), and a refused input leaves no output behind.
 *
 * Seeds (tests/fuzz/corpus/fuzz_dra_driver/): an allocated claim with results of two
 * drivers, an unallocated claim, a checkpoint of two claims, a checkpoint of another driver.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/dradriver.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static gs_nvml_gpu gpus[2];
static gs_nvml_mig_device migs[1];
static gs_nvml_inventory inv = {.n_gpus = 2, .gpus = gpus};
static gs_drv_devices devs;
static int ready;

static void setup(void)
{
    for (unsigned i = 0; i < 2; i++) {
        gpus[i].index = i;
        snprintf(gpus[i].uuid, sizeof gpus[i].uuid, "GPU-8a9b0c1d-2e3f-4a5b-8c7d-9e0f1a2b3c4%u", i);
        gpus[i].minor = (int)i;
    }
    gpus[1].mig_current = 1;
    gpus[1].n_mig = 1;
    gpus[1].mig = migs;
    snprintf(migs[0].uuid, sizeof migs[0].uuid, "MIG-8a9b0c1d-2e3f-4a5b-8c7d-9e0f1a2b3c4d");
    migs[0].gpu_instance_id = 9;
    snprintf(migs[0].profile, sizeof migs[0].profile, "1g.10gb");
    gs_error err;
    if (gs_drv_devices_build(&inv, "/nonexistent", &devs, &err) != 0)
        abort();
    ready = 1;
}

static void same(const gs_drv_claim *a, const gs_drv_claim *b)
{
    if (strcmp(a->uid, b->uid) || strcmp(a->namespace_, b->namespace_) || strcmp(a->name, b->name) ||
        a->n_results != b->n_results)
        abort();
    for (size_t j = 0; j < a->n_results; j++)
        if (strcmp(a->results[j].request, b->results[j].request) || strcmp(a->results[j].pool, b->results[j].pool) ||
            strcmp(a->results[j].device, b->results[j].device))
            abort();
}

static void round_trip(const gs_drv_claim *v, size_t n)
{
    const gs_drv_claim **p = calloc(n ? n : 1, sizeof *p);
    if (!p)
        return;
    for (size_t i = 0; i < n; i++)
        p[i] = &v[i];
    gs_strbuf sb = {0};
    gs_drv_checkpoint_json(p, n, "gpu.nvidia.com", "node-a", &sb);
    gs_drv_claim *back = NULL;
    size_t nb = 0;
    gs_error err;
    if (gs_drv_checkpoint_parse(sb.buf, sb.len, "gpu.nvidia.com", &back, &nb, &err) != 0 || nb != n)
        abort();
    for (size_t i = 0; i < n; i++)
        same(&v[i], &back[i]);
    free(back);
    free(p);
    gs_strbuf_free(&sb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ready)
        setup();
    if (size < 1)
        return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    gs_error err;
    if ((data[0] & 1) == 0) {
        static gs_drv_claim c;
        if (gs_drv_claim_parse(text, len, "gpu.nvidia.com", &c, &err) != 0)
            return 0;
        gs_strbuf sb = {0};
        gs_inject_host host;
        gs_inject_host_init(&host);
        gs_drv_cdi_json(&c, &inv, &devs, &host, &sb, &err);
        gs_strbuf_free(&sb);
        /* a claim's uid may be empty: the checkpoint refuses those, so only round-trip others */
        if (c.uid[0])
            round_trip(&c, 1);
    } else {
        gs_drv_claim *v = (gs_drv_claim *)1;
        size_t n = 7;
        if (gs_drv_checkpoint_parse(text, len, "gpu.nvidia.com", &v, &n, &err) != 0) {
            if (v != NULL || n != 0)
                abort();
            return 0;
        }
        round_trip(v, n);
        free(v);
    }
    return 0;
}
