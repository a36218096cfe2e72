/*
 * bench_schedule.c - placements per second of the engine on synthetic clusters.
 *
 * usage: bench_schedule [NODES [PODS_PER_NODE [SEED]]]
 *        bench_schedule --emit FILE [NODES [PODS_PER_NODE [SEED]]]
 *        (writes the generated YAML to FILE and exits: the input of `gpusched schedule FILE`
 *        end to end)
 * Cluster mix (per 10 nodes): 5 whole-GPU nodes (8x A100-80GB, tainted nvidia.com/gpu),
 * 1 MIG node (H100 80GB, mixed strategy: 1g.10gb x14 + 3g.40gb x2 + 4g.40gb x1 + 7g.80gb
 * x0 over 8 GPUs), 1 time-sliced T4 node (4 GPUs x 4 replicas), 3 CPU-only nodes.
 * Pod mix: 40% CPU-only, 25% whole GPU (1/2/4/8), 20% GPU shares (KAI gpu-fraction),
 * 10% MIG 1g.10gb, 5% with a required node affinity on the GPU product.
 * Every filter runs and every feasible node is scored exactly (percentage_of_nodes_to_score
 * = 0). Reports read time, schedule time, placements/s, state memory and a digest of every
 * decision (outcome, node, score, feasible count, devices, victims, message): equal
 * digests across builds mean identical decisions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "gpusched/engine.h"

#include "bench_util.h"

static void gen(gs_strbuf *sb, int nodes, int ppn, uint64_t seed)
{
    gs_rng r;
    gs_rng_seed(&r, seed);
    for (int i = 0; i < nodes; i++) {
        int kind = i % 10;
        if (kind < 5) {
            gs_strbuf_printf(sb,
                             "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: a100-%05d\n  labels:\n"
                             "    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n    nvidia.com/gpu.count: \"8\"\n"
                             "    nvidia.com/gpu.memory: \"81920\"\n    pool: a100\nspec:\n  taints:\n"
                             "  - {key: nvidia.com/gpu, value: \"true\", effect: NoSchedule}\nstatus:\n"
                             "  allocatable: {cpu: \"96\", memory: 1Ti, pods: \"110\", nvidia.com/gpu: \"8\"}\n",
                             i);
        } else if (kind == 5) {
            gs_strbuf_printf(sb,
                             "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: h100mig-%05d\n  labels:\n"
                             "    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3\n    nvidia.com/gpu.count: \"8\"\n"
                             "    nvidia.com/mig.strategy: mixed\nspec:\n  taints:\n"
                             "  - {key: nvidia.com/gpu, value: \"true\", effect: NoSchedule}\nstatus:\n"
                             "  allocatable: {cpu: \"96\", memory: 1Ti, pods: \"110\", nvidia.com/gpu: \"4\",\n"
                             "    nvidia.com/mig-1g.10gb: \"14\", nvidia.com/mig-3g.40gb: \"2\"}\n",
                             i);
        } else if (kind == 6) {
            gs_strbuf_printf(sb,
                             "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: t4-%05d\n  labels:\n"
                             "    nvidia.com/gpu.product: Tesla-T4\n    nvidia.com/gpu.count: \"4\"\n"
                             "    nvidia.com/gpu.replicas: \"4\"\n    nvidia.com/gpu.sharing-strategy: time-slicing\n"
                             "    nvidia.com/gpu.memory: \"15360\"\nspec:\n  taints:\n"
                             "  - {key: nvidia.com/gpu, value: \"true\", effect: NoSchedule}\nstatus:\n"
                             "  allocatable: {cpu: \"32\", memory: 128Gi, pods: \"110\", nvidia.com/gpu: \"16\"}\n",
                             i);
        } else {
            gs_strbuf_printf(sb,
                             "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: cpu-%05d\n"
                             "status:\n  allocatable: {cpu: \"64\", memory: 256Gi, pods: \"110\"}\n",
                             i);
        }
    }
    static const int whole[] = {1, 1, 1, 2, 2, 4, 8};
    int pods = nodes * ppn;
    for (int i = 0; i < pods; i++) {
        int k = (int)gs_rng_below(&r, 100);
        int cpu = 1 + (int)gs_rng_below(&r, 8);
        const char *tol = "  tolerations:\n  - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n";
        if (k < 40) {
            gs_strbuf_printf(sb,
                             "---\napiVersion: v1\nkind: Pod\nmetadata: {name: cpu-%06d, namespace: web}\n"
                             "spec:\n  containers:\n  - name: c\n    resources:\n      requests: {cpu: \"%d\", memory: %dGi}\n",
                             i, cpu, cpu * 2);
        } else if (k < 65) {
            gs_strbuf_printf(sb,
                             "---\napiVersion: v1\nkind: Pod\nmetadata: {name: gpu-%06d, namespace: ml}\n"
                             "spec:\n%s  containers:\n  - name: c\n    resources:\n      limits: {cpu: \"%d\", memory: %dGi, nvidia.com/gpu: \"%d\"}\n",
                             i, tol, cpu, cpu * 4, whole[gs_rng_below(&r, 7)]);
        } else if (k < 85) {
            static const char *const frac[] = {"0.25", "0.5", "0.5", "0.75"};
            gs_strbuf_printf(sb,
                             "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: share-%06d\n  namespace: ml\n"
                             "  annotations: {gpu-fraction: \"%s\"}\nspec:\n  schedulerName: kai-scheduler\n%s"
                             "  containers:\n  - name: c\n    resources:\n      requests: {cpu: \"%d\", memory: %dGi}\n",
                             i, frac[gs_rng_below(&r, 4)], tol, cpu, cpu * 2);
        } else if (k < 95) {
            gs_strbuf_printf(sb,
                             "---\napiVersion: v1\nkind: Pod\nmetadata: {name: mig-%06d, namespace: inf}\n"
                             "spec:\n%s  containers:\n  - name: c\n    resources:\n      limits: {cpu: \"1\", memory: 8Gi, nvidia.com/mig-1g.10gb: \"1\"}\n",
                             i, tol);
        } else {
            gs_strbuf_printf(sb,
                             "---\napiVersion: v1\nkind: Pod\nmetadata: {name: aff-%06d, namespace: ml}\n"
                             "spec:\n%s  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
                             "        nodeSelectorTerms:\n        - matchExpressions:\n"
                             "          - {key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-A100-SXM4-80GB]}\n"
                             "  containers:\n  - name: c\n    resources:\n      limits: {cpu: \"%d\", memory: 8Gi, nvidia.com/gpu: \"1\"}\n",
                             i, tol, cpu);
        }
    }
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

static uint64_t decisions_digest(const gs_cluster *c)
{
    uint64_t h = 1469598103934665603ULL;
    for (uint32_t i = 0; i < gs_cluster_ndecisions(c); i++) {
        const gs_decision *d = gs_cluster_decision(c, i);
        int64_t f[] = {d->pod, d->outcome, d->node, d->priority, d->score, d->feasible,
                       d->assign.n, d->nvictims, d->order};
        h = fnv(h, f, sizeof f);
        for (uint32_t k = 0; k < d->assign.n; k++) {
            int64_t g[] = {d->assign.dev[k], d->assign.mig[k], d->assign.milli[k], d->assign.mem[k]};
            h = fnv(h, g, sizeof g);
        }
        if (d->nvictims)
            h = fnv(h, d->victims, d->nvictims * sizeof *d->victims);
        if (d->message)
            h = fnv(h, d->message, strlen(d->message) + 1);
    }
    return h;
}

int main(int argc, char **argv)
{
    const char *emit = NULL;
    if (argc > 2 && strcmp(argv[1], "--emit") == 0) {
        emit = argv[2];
        argv += 2;
        argc -= 2;
    }
    int nodes = argc > 1 ? atoi(argv[1]) : 5000;
    int ppn = argc > 2 ? atoi(argv[2]) : 4;
    uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
    if (nodes <= 0 || ppn <= 0) {
        fprintf(stderr, "usage: bench_schedule [NODES [PODS_PER_NODE [SEED]]]\n");
        return 2;
    }
    gs_strbuf sb = GS_STRBUF_INIT;
    gen(&sb, nodes, ppn, seed);
    if (emit) {
        FILE *f = fopen(emit, "wb");
        if (!f || fwrite(sb.buf, 1, sb.len, f) != sb.len || fclose(f) != 0) {
            fprintf(stderr, "bench: cannot write %s\n", emit);
            return 2;
        }
        printf("wrote %s: %d nodes, %d pods, %.1f MiB\n", emit, nodes, nodes * ppn,
               (double)sb.len / 1048576.0);
        gs_strbuf_free(&sb);
        return 0;
    }
    gs_snapshot snap;
    gs_snapshot_init(&snap);
    gs_error err;
    gs_error_clear(&err);
    gs_read_opts opts = {0};
    double t0 = now();
    if (gs_snapshot_read_buffer(&snap, "bench", sb.buf, sb.len, &opts, &err) ||
        gs_snapshot_finish(&snap, &err)) {
        char buf[1024];
        gs_error_format(&err, buf, sizeof buf);
        fprintf(stderr, "bench: %s\n", buf);
        return 2;
    }
    double t1 = now();
    gs_config cfg;
    gs_config_defaults(&cfg);
    gs_cluster *c = gs_cluster_new(&snap, &cfg, &err);
    if (!c) {
        char buf[1024];
        gs_error_format(&err, buf, sizeof buf);
        fprintf(stderr, "bench: %s\n", buf);
        return 2;
    }
    double t2 = now();
    if (gs_schedule_run(c, &err)) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return 2;
    }
    double t3 = now();
    uint32_t placed = 0, failed = 0;
    for (uint32_t i = 0; i < gs_cluster_ndecisions(c); i++) {
        const gs_decision *d = gs_cluster_decision(c, i);
        placed += d->outcome == GS_OUT_SCHEDULED;
        failed += d->outcome == GS_OUT_UNSCHEDULABLE;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    uint32_t npods = (uint32_t)snap.pods.n;
    printf("nodes %d  pods %u  placed %u  unschedulable %u\n", nodes, npods, placed, failed);
    printf("read %.3f s (%.0f objects/s, %.1f MiB YAML)\n", t1 - t0, (nodes + npods) / (t1 - t0),
           (double)sb.len / 1048576.0);
    printf("cluster build %.3f s\n", t2 - t1);
    printf("schedule %.3f s  = %.0f pods/s (%.1f us/pod, %.1f ns per pod x node)\n", t3 - t2,
           npods / (t3 - t2), 1e6 * (t3 - t2) / npods, 1e9 * (t3 - t2) / ((double)npods * nodes));
    printf("snapshot arena %.1f MiB (%.0f B/object)\n", snap.arena.used_total / 1048576.0,
           (double)snap.arena.used_total / (nodes + npods));
    gs_cluster_mem mem;
    gs_cluster_memory(c, &mem);
    printf("cluster state %.1f MiB: %zu B/node + %zu B/pod fixed, shape cache %.1f MiB\n",
           mem.total / 1048576.0, mem.per_node, mem.per_pod, mem.shape_cache / 1048576.0);
    printf("decisions digest %016llx\n", (unsigned long long)decisions_digest(c));
    printf("peak RSS %.1f MiB\n", ru.ru_maxrss / 1024.0);
    gs_cluster_free(c);
    gs_snapshot_free(&snap);
    gs_strbuf_free(&sb);
    return 0;
}
