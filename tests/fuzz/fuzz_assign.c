/*
 * fuzz_assign.c - libFuzzer target for the assignment record reader (lib/gpu/assign.c,
 * the pod annotation gpusched.io/assignment).
 *
 * The input is an annotation value. A rejected one must fail with GS_ERR_PARSE, INVALID or
 * LIMIT, positioned inside the input when a position is given. An accepted one must write
 * back (gs_assign_encode), read again to the same record and write to the same bytes; it
 * is then checked against two node inventories (whole/shared GPUs, MIG mixed), and a record
 * that passes the check must bind and unbind to the inventory it started from.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/assign.h"
#include "gpusched/engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char nodes_yaml[] =
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-a\n  labels: {nvidia.com/gpu.product: "
    "NVIDIA-A100-SXM4-40GB, nvidia.com/gpu.count: \"2\", nvidia.com/gpu.replicas: \"4\", "
    "nvidia.com/gpu.memory: \"40960\"}\nstatus:\n  allocatable: {nvidia.com/gpu: \"8\"}\n---\n"
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-b\n  labels: {nvidia.com/gpu.product: "
    "NVIDIA-A100-SXM4-80GB, nvidia.com/gpu.count: \"2\", nvidia.com/mig.strategy: mixed}\n"
    "status:\n  allocatable: {nvidia.com/gpu: \"1\", nvidia.com/mig-1g.10gb: \"7\"}\n";

static gs_snapshot snap;
static gs_node_gpus inv[2];
static bool ready;

static void init(void)
{
    gs_error err;
    gs_snapshot_init(&snap);
    if (gs_snapshot_read_buffer(&snap, "nodes.yaml", nodes_yaml, sizeof nodes_yaml - 1, NULL,
                                &err) ||
        gs_snapshot_finish(&snap, &err) || snap.nodes.n != 2 ||
        gs_node_gpus_build(&snap.nodes.v[0], &inv[0], &err) ||
        gs_node_gpus_build(&snap.nodes.v[1], &inv[1], &err))
        abort();
    ready = true;
}

static bool same_state(const gs_node_gpus *a, const gs_node_gpus *b)
{
    if (a->ndevs != b->ndevs || a->nmig != b->nmig)
        return false;
    for (uint32_t i = 0; i < a->ndevs; i++)
        if (memcmp(&a->devs[i], &b->devs[i], sizeof a->devs[i]) != 0)
            return false;
    for (uint32_t i = 0; i < a->nmig; i++)
        if (memcmp(&a->mig[i], &b->mig[i], sizeof a->mig[i]) != 0)
            return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ready)
        init();
    static gs_assign_record rec, back;
    gs_error err;
    gs_error_clear(&err);
    const char *text = (const char *)data;
    if (gs_assign_decode(text, size, NULL, &rec, &err) != 0) {
        if (err.code != GS_ERR_PARSE && err.code != GS_ERR_INVALID && err.code != GS_ERR_LIMIT &&
            err.code != GS_ERR_NOMEM)
            abort();
        if (err.line < 0 || err.col < 0 || (size_t)err.line > size + 1)
            abort();
        return 0;
    }
    gs_strbuf s1 = GS_STRBUF_INIT, s2 = GS_STRBUF_INIT;
    if (gs_assign_encode(&rec, &s1, &err) != 0)
        abort();
    if (gs_assign_decode(s1.buf, s1.len, rec.uid, &back, &err) != 0)
        abort();
    if (gs_assign_encode(&back, &s2, &err) != 0 || s1.len != s2.len ||
        memcmp(s1.buf, s2.buf, s1.len) != 0)
        abort();
    for (int k = 0; k < 2; k++) {
        gs_gpu_assign a;
        gs_error_clear(&err);
        if (gs_assign_check(&rec, &inv[k], NULL, GS_ASSIGN_CHECK_FREE, &a, &err) != 0) {
            if (err.code != GS_ERR_INVALID && err.code != GS_ERR_NOTFOUND)
                abort();
            continue;
        }
        gs_node_gpus before;
        if (gs_node_gpus_copy(&before, &inv[k]) != 0)
            abort();
        gs_gpu_bind(&inv[k], &a);
        /* bound once, a record holding a whole device or instance is no longer free */
        gs_gpu_unbind(&inv[k], &a);
        if (!same_state(&before, &inv[k]))
            abort();
        gs_node_gpus_free(&before);
    }
    gs_strbuf_free(&s1);
    gs_strbuf_free(&s2);
    return 0;
}
