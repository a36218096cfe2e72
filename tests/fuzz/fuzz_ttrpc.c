/*
 * fuzz_ttrpc.c - libFuzzer target for the NRI plugin's transport and service
 * (lib/agent/ttrpc.c, lib/agent/nri.c): arbitrary bytes fed as what the container runtime
 * sends on the plugin's socket (multiplexer frames carrying ttrpc messages) to a connection
 * served by the NRI plugin's handler (Configure, Synchronize, CreateContainer with the
 * injection rule over a two-GPU inventory). Answers are written to /dev/null.
 *
 * Crashes, leaks, hangs and sanitizer reports are the findings. Invariants checked: a
 * failing feed fails with a bound (GS_ERR_LIMIT) or no memory, never anything else; the
 * input cut in two at any point decodes to the same number of messages.
 *
 * Seeds (tests/fuzz/corpus/fuzz_ttrpc/): Configure, Synchronize with a container, a
 * CreateContainer with an assignment record (whole message and cut into small frames), a
 * response on connection 2, a frame of another connection, an over-long frame header, two
 * pods over-committing a GPU then one stopped (StopPodSandbox, RemovePodSandbox).
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/nri_int.h"
#include "agent/ttrpc_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static gs_nri *nri;
static gs_nvml_gpu gpus[2];
static gs_nvml_inventory inv = {.n_gpus = 2, .gpus = gpus};

static void setup(void)
{
    for (unsigned i = 0; i < 2; i++) {
        gpus[i].index = i;
        snprintf(gpus[i].uuid, sizeof gpus[i].uuid, "GPU-8a9b0c1d-2e3f-4a5b-8c7d-9e0f1a2b3c4%u", i);
        gpus[i].minor = (int)i;
    }
    gs_nri_opts o = {.node = "gpu-a", .inv = &inv, .proc_root = "/nonexistent"};
    gs_error err;
    if (gs_nri_open(&o, &nri, &err) != 0)
        abort();
}

static int count(void *ud, const gs_ttrpc_msg *m, gs_error *err)
{
    (void)m;
    (void)err;
    (*(size_t *)ud)++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!nri)
        setup();
    int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        abort();
    gs_ttrpc_conn c;
    gs_ttrpc_conn_init(&c, fd, -1, gs_nri_handle, nri);
    gs_error err;
    if (gs_ttrpc_conn_feed(&c, data, size, &err) < 0 && err.code != GS_ERR_LIMIT && err.code != GS_ERR_NOMEM)
        abort();
    gs_ttrpc_conn_close(&c);

    /* cut in two: the same messages */
    size_t whole = 0, parts = 0;
    gs_mux_decoder d;
    gs_mux_decoder_init(&d, 0);
    int r1 = gs_mux_feed(&d, data, size, count, &whole, &err);
    gs_mux_decoder_free(&d);
    size_t cut = size ? data[0] % (size + 1) : 0;
    gs_mux_decoder_init(&d, 0);
    int r2 = gs_mux_feed(&d, data, cut, count, &parts, &err);
    if (r2 == 0)
        r2 = gs_mux_feed(&d, data + cut, size - cut, count, &parts, &err);
    gs_mux_decoder_free(&d);
    if (r1 != r2 || (r1 == 0 && whole != parts))
        abort();
    return 0;
}
