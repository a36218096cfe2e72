/*
 * bench_mig_plan.c - the MIG planner at fleet scale: 1,000 GPUs, 50 inference services.
 *
 * usage: bench_mig_plan [GPUS [SERVICES [SEED]]]        (defaults 1000 50 1)
 * Inventory (per 1,000 GPUs): 600 A100-80GB (75 nodes of 8, every other node currently
 * all-balanced), 320 H100-80GB (40 nodes of 8, unknown layout), 80 A30 (20 nodes of 4,
 * all-1g.6gb). Services: half given as model shapes (0.5B-34B parameters, fp16/bf16/
 * fp8/int8/int4, batch 1-8, context 1k-8k, GQA KV caches), half as memoryGiB; replicas
 * sized so demand fills about 70% of the pool. Reports parse and plan times, GPUs used
 * against the LP lower bound, re-partitions and the search effort. The target is a plan
 * in at most 1 s (exit status 1 beyond that).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpusched/mig.h"

#include "bench_util.h"

static void gen(gs_strbuf *sb, int gpus, int services, uint64_t seed)
{
    static const char *const dtypes[] = {"fp16", "bf16", "fp8", "int8", "int4"};
    static const double params[] = {0.5e9, 1.5e9, 3e9, 7e9, 8e9, 13e9, 14e9, 34e9};
    static const double mems[] = {2.5, 4, 6, 9, 12, 18, 24, 35, 45, 70};
    gs_rng r;
    gs_rng_seed(&r, seed);
    gs_strbuf_puts(sb, "apiVersion: gpusched.io/v1alpha1\nkind: MigPlan\nservices:\n");
    /* replicas: about 7 instances per GPU at most; aim at ~70% of the pool on average */
    int per_service = gpus * 3 / (services > 0 ? services : 1);
    for (int s = 0; s < services; s++) {
        int replicas = 1 + (int)gs_rng_below(&r, (uint64_t)(per_service > 1 ? per_service : 1));
        if (s % 2 == 0) {
            double p = params[gs_rng_below(&r, sizeof params / sizeof params[0])];
            /* 13B and up only quantised, so every service fits an 80 GB GPU */
            const char *dt = dtypes[p >= 13e9 ? 2 + gs_rng_below(&r, 3) : gs_rng_below(&r, 5)];
            unsigned layers = p < 2e9 ? 24 : p < 10e9 ? 32 : p < 20e9 ? 40 : 60;
            gs_strbuf_printf(sb,
                             "  - name: svc-%02d\n    replicas: %d\n    parameters: %g\n"
                             "    dtype: %s\n    batchSize: %u\n    sequenceLength: %u\n"
                             "    kvCache: {layers: %u, kvHeads: %u, headDim: 128}\n",
                             s, replicas / 4 + 1, p, dt, 1u << gs_rng_below(&r, 4),
                             1024u << gs_rng_below(&r, 4), layers, 8u);
        } else {
            gs_strbuf_printf(sb, "  - {name: svc-%02d, replicas: %d, memoryGiB: %g%s}\n", s,
                             replicas, mems[gs_rng_below(&r, sizeof mems / sizeof mems[0])],
                             gs_rng_below(&r, 8) == 0 ? ", computeSlices: 2" : "");
        }
    }
    int a100 = gpus * 6 / 10 / 8, h100 = gpus * 32 / 100 / 8;
    int a30 = (gpus - (a100 + h100) * 8) / 4;
    gs_strbuf_puts(sb, "inventory:\n  nodes:\n");
    for (int i = 0; i < a100; i++)
        gs_strbuf_printf(sb, "    - {name: a100-%03d, product: NVIDIA-A100-SXM4-80GB, gpus: 8%s}\n",
                         i, i % 2 ? "" : ", currentConfig: all-balanced");
    if (h100)
        gs_strbuf_printf(sb, "    - {name: h100, product: NVIDIA-H100-80GB-HBM3, gpus: 8, count: %d}\n",
                         h100);
    if (a30 > 0)
        gs_strbuf_printf(sb, "    - {name: a30, product: NVIDIA-A30, gpus: 4, count: %d,"
                             " currentConfig: all-1g.6gb}\n",
                         a30);
}

int main(int argc, char **argv)
{
    int gpus = argc > 1 ? atoi(argv[1]) : 1000;
    int services = argc > 2 ? atoi(argv[2]) : 50;
    uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
    if (gpus < 8 || services < 1 || services > GS_MIG_MAX_SERVICES) {
        fprintf(stderr, "usage: bench_mig_plan [GPUS>=8 [SERVICES [SEED]]]\n");
        return 2;
    }
    gs_strbuf sb = GS_STRBUF_INIT;
    gen(&sb, gpus, services, seed);
    gs_mig_plan_input in;
    gs_mig_plan_input_init(&in);
    gs_error err;
    double t0 = now();
    if (gs_mig_plan_input_parse(&in, "bench", gs_strbuf_cstr(&sb), sb.len, &err) != 0) {
        char buf[1024];
        gs_error_format(&err, buf, sizeof buf);
        fprintf(stderr, "bench_mig_plan: %s\n", buf);
        return 2;
    }
    double t1 = now();
    gs_mig_plan plan;
    if (gs_mig_plan_solve(&in, NULL, &plan, &err) != 0) {
        fprintf(stderr, "bench_mig_plan: %s\n", err.msg);
        return 2;
    }
    double t2 = now();
    gs_mig_emit em;
    gs_mig_waste *w = NULL;
    uint32_t nw = 0;
    if (gs_mig_plan_emit(&in, &plan, &em, &err) != 0 ||
        gs_mig_plan_waste(&in, &plan, &w, &nw, &err) != 0) {
        fprintf(stderr, "bench_mig_plan: %s\n", err.msg);
        return 2;
    }
    double t3 = now();
    uint64_t replicas = 0, placed = 0;
    for (uint32_t s = 0; s < in.nservices; s++) {
        replicas += in.services[s].replicas;
        placed += plan.services[s].placed;
    }
    printf("pool: %u MIG GPUs on %u nodes; %u services, %llu replicas\n", in.ngpus, in.nnodes,
           in.nservices, (unsigned long long)replicas);
    printf("parse: %.3f s  plan: %.3f s  emit+waste: %.3f s\n", t1 - t0, t2 - t1, t3 - t2);
    printf("placed %llu/%llu replicas on %u GPUs (lower bound %u, LP %.2f, %s), %u re-partitioned, "
           "%u configs, effort %llu\n",
           (unsigned long long)placed, (unsigned long long)replicas, plan.cost.gpus,
           plan.lower_bound, plan.lp_value,
           plan.method == GS_MIG_METHOD_EXACT ? "exact" : "heuristic", plan.cost.changed,
           em.nconfigs, (unsigned long long)plan.states);
    double total = t2 - t1;
    printf("%s: planning took %.3f s (target <= 1 s)\n", total <= 1.0 ? "OK" : "SLOW", total);
    free(w);
    gs_mig_emit_free(&em);
    gs_mig_plan_free(&plan);
    gs_mig_plan_input_free(&in);
    gs_strbuf_free(&sb);
    return total <= 1.0 ? 0 : 1;
}
