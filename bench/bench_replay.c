/*
 * bench_replay.c - speed and memory of the time-ordered replay (replay.h) on a generated
 * openb-style cluster and trace.
 *
 * usage: bench_replay [NODES [PODS [SEED [LOAD [SHAPES]]]]]
 *   defaults: 5000 100000 1 0.9 160
 * Cluster (openb node CSV rows): 4 of every 5 nodes are GPU nodes with 8 GPUs (96 cores,
 * 768 GiB; models V100M32, T4, A10, G2, P100 in turn), the rest CPU-only (64 cores, 256 GiB).
 * Trace (openb pod CSV rows, read through the same converter as the real trace): pod
 * shapes drawn as 15 % CPU-only (1..8 cores), 35 % GPU shares (1 GPU, 100..900 milli),
 * 35 % one whole GPU, 10 % two GPUs, 3 % four, 2 % eight; 10 % of the GPU shapes name a
 * model; qos LS 60 %, BE 30 %, Burstable 10 % (LS preempts BE). Pods pick one of SHAPES
 * catalogue shapes with Zipf weights (real traces repeat few shapes), or with SHAPES 0
 * each pod draws its own (the worst case). Arrivals uniform over PODS minutes; durations
 * exponential with the mean that offers LOAD x the cluster's GPUs on average.
 * Prints the generation, conversion and replay times, the replay's counters and the peak
 * resident set size (getrusage), and a digest of every per-pod result and sample (equal
 * digests across builds: identical results). Targets (docs/performance.md): 100,000 pods on 5,000 nodes
 * in at most 30 s, peak memory under 1 GiB.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "gpusched/replay.h"
#include "gpusched/sim.h"

#include "bench_util.h"

/* FNV-1a over bytes: the results digest (a differential check between builds). */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

/* Every per-pod result field (state, priority, times, waits, preemptions, node, reason
 * text) and every sample field, in order. */
static uint64_t results_digest(const gs_replay_result *res)
{
    uint64_t h = 1469598103934665603ULL;
    for (uint32_t i = 0; i < res->npods; i++) {
        const gs_replay_pod *p = &res->pods[i];
        int64_t f[] = {p->pod, p->state, p->priority, p->arrival, p->duration, p->first_start,
                       p->last_start, p->end, p->waited, p->preemptions, p->node};
        h = fnv(h, f, sizeof f);
        if (p->reason)
            h = fnv(h, p->reason, strlen(p->reason) + 1);
    }
    for (uint32_t i = 0; i < res->nsamples; i++) {
        const gs_replay_sample *s = &res->samples[i];
        int64_t f[] = {s->t, (int64_t)(s->gpus_allocated * 1e6), s->nodes_used, s->gpu_nodes_used,
                       s->running, s->pending, s->gpus_stranded, s->mig_used, s->mig_idle,
                       s->mig_unpartitioned, s->mig_reconfiguring};
        h = fnv(h, f, sizeof f);
    }
    return h;
}

static const char *const models[] = {"V100M32", "T4", "A10", "G2", "P100"};

static void gen_nodes(gs_strbuf *sb, int nodes)
{
    gs_strbuf_puts(sb, "sn,cpu_milli,memory_mib,gpu,model\n");
    for (int i = 0; i < nodes; i++) {
        if (i % 5 == 4)
            gs_strbuf_printf(sb, "node-%05d,64000,262144,0,\n", i);
        else
            gs_strbuf_printf(sb, "node-%05d,96000,786432,8,%s\n", i, models[i % 5]);
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* One pod shape of the catalogue. */
typedef struct shape {
    int64_t cpu;
    int mem, num_gpu, milli;
    const char *spec, *qos;
} shape;

static void draw_shape(gs_rng *r, shape *s)
{
    uint64_t k = gs_rng_below(r, 100);
    s->num_gpu = 0;
    s->milli = 0;
    s->cpu = 1000 * (int64_t)(1 + gs_rng_below(r, 8));
    s->mem = 4096 * (1 + (int)gs_rng_below(r, 8));
    if (k < 15) {
        s->num_gpu = 0;
    } else if (k < 50) {
        s->num_gpu = 1;
        s->milli = 100 * (int)(1 + gs_rng_below(r, 9));
    } else if (k < 85) {
        s->num_gpu = 1;
        s->milli = 1000;
    } else if (k < 95) {
        s->num_gpu = 2;
        s->milli = 1000;
    } else if (k < 98) {
        s->num_gpu = 4;
        s->milli = 1000;
    } else {
        s->num_gpu = 8;
        s->milli = 1000;
    }
    s->spec = s->num_gpu && gs_rng_below(r, 10) == 0 ? models[gs_rng_below(r, 5)] : "";
    uint64_t q = gs_rng_below(r, 10);
    s->qos = q < 6 ? "LS" : q < 9 ? "BE" : "Burstable";
}

/* shapes == 0: every pod draws its own shape (worst case for the engine's per-shape
 * caches); otherwise pods pick from a catalogue of `shapes` shapes with Zipf(1) weights,
 * like real traces (openb default: 8,152 pods, 162 distinct shapes with qos, the 50 most
 * common cover 95 % of the pods). */
static void gen_pods(gs_strbuf *sb, int pods, uint64_t seed, double load, int gpus, int shapes)
{
    gs_rng r;
    gs_rng_seed(&r, seed);
    const double span = 60.0 * pods;            /* one arrival a minute on average */
    const double gpus_per_pod = 0.85 * 1.02;    /* mean GPU request of the mix */
    const double mean_dur = load * gpus * span / (pods * gpus_per_pod);
    gs_strbuf_puts(sb, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                       "creation_time,deletion_time,scheduled_time\n");
    int64_t *arr = malloc((size_t)pods * sizeof *arr);
    shape *cat = malloc((size_t)(shapes > 0 ? shapes : 1) * sizeof *cat);
    double *cum = malloc((size_t)(shapes > 0 ? shapes : 1) * sizeof *cum);
    if (!arr || !cat || !cum) {
        free(arr);
        free(cat);
        free(cum);
        sb->oom = true;
        return;
    }
    double total = 0;
    for (int i = 0; i < shapes; i++) {
        draw_shape(&r, &cat[i]);
        total += 1.0 / (i + 1);
        cum[i] = total;
    }
    for (int i = 0; i < pods; i++)
        arr[i] = (int64_t)(gs_rng_double(&r) * span);
    qsort(arr, (size_t)pods, sizeof *arr, cmp_i64); /* by arrival, as the trace is */
    for (int i = 0; i < pods; i++) {
        shape own, *s = &own;
        if (shapes > 0) {
            double u = gs_rng_double(&r) * total;
            int lo = 0, hi = shapes - 1;
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                if (cum[mid] < u)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            s = &cat[lo];
        } else {
            draw_shape(&r, &own);
        }
        double u = gs_rng_double(&r);
        int64_t dur = (int64_t)(-log(1.0 - u) * mean_dur) + 1;
        gs_strbuf_printf(sb, "pod-%06d,%lld,%d,%d,%d,%s,%s,Running,%lld,%lld,%lld\n", i,
                         (long long)s->cpu, s->mem, s->num_gpu, s->milli, s->spec, s->qos,
                         (long long)arr[i], (long long)(arr[i] + dur), (long long)arr[i]);
    }
    free(arr);
    free(cat);
    free(cum);
}

static int arg_int(int argc, char **argv, int i, int dflt)
{
    if (argc <= i)
        return dflt;
    int64_t v;
    if (gs_parse_i64(argv[i], strlen(argv[i]), &v) || v < 1 || v > 10000000) {
        fprintf(stderr, "usage: bench_replay [NODES [PODS [SEED [LOAD [SHAPES]]]]]\n");
        exit(2);
    }
    return (int)v;
}

int main(int argc, char **argv)
{
    int nodes = arg_int(argc, argv, 1, 5000);
    int pods = arg_int(argc, argv, 2, 100000);
    int seed = arg_int(argc, argv, 3, 1);
    double load = argc > 4 ? strtod(argv[4], NULL) : 0.9;
    int shapes = argc > 5 ? (strcmp(argv[5], "0") == 0 ? 0 : arg_int(argc, argv, 5, 160)) : 160;
    if (!(load > 0 && load < 100)) {
        fprintf(stderr, "bench_replay: LOAD must be in (0, 100)\n");
        return 2;
    }
    int gpus = 0;
    for (int i = 0; i < nodes; i++)
        gpus += i % 5 == 4 ? 0 : 8;

    double t0 = now();
    gs_strbuf ncsv = GS_STRBUF_INIT, pcsv = GS_STRBUF_INIT;
    gen_nodes(&ncsv, nodes);
    gen_pods(&pcsv, pods, (uint64_t)seed, load, gpus, shapes);
    if (ncsv.oom || pcsv.oom) {
        fprintf(stderr, "bench_replay: out of memory\n");
        return 3;
    }
    double t_gen = now() - t0;

    gs_error err;
    gs_error_clear(&err);
    t0 = now();
    gs_openb tab;
    gs_openb_init(&tab);
    gs_snapshot snap;
    gs_snapshot_init(&snap);
    gs_openb_pod_opts po;
    gs_openb_pod_opts_defaults(&po);
    int64_t *arrival = NULL, *duration = NULL;
    if (gs_openb_parse_nodes(&tab, "nodes.csv", ncsv.buf, ncsv.len, NULL, &err) ||
        gs_openb_parse_pods(&tab, "pods.csv", pcsv.buf, pcsv.len, NULL, &err) ||
        gs_openb_add_nodes(&snap, &tab, &err) || gs_openb_add_pods(&snap, &tab, &po, &err) ||
        gs_snapshot_finish(&snap, &err)) {
        fprintf(stderr, "bench_replay: %s\n", err.msg);
        return 3;
    }
    gs_strbuf_free(&ncsv);
    gs_strbuf_free(&pcsv);
    gs_openb_free(&tab);
    arrival = malloc(snap.pods.n * sizeof *arrival);
    duration = malloc(snap.pods.n * sizeof *duration);
    if (!arrival || !duration || gs_trace_times(&snap, arrival, duration, &err)) {
        fprintf(stderr, "bench_replay: times: %s\n", err.msg);
        return 3;
    }
    double t_conv = now() - t0;
    long rss_before = peak_rss_kib();

    gs_replay_opts o;
    gs_replay_opts_defaults(&o);
    gs_replay_result res;
    t0 = now();
    if (gs_replay_run(&snap, arrival, duration, &o, &res, &err)) {
        fprintf(stderr, "bench_replay: replay: %s\n", err.msg);
        return 3;
    }
    double t_replay = now() - t0;

    uint32_t state[6] = {0};
    for (uint32_t i = 0; i < res.npods; i++)
        state[res.pods[i].state]++;
    printf("nodes %d (GPUs %u), pods %u, offered load %.2f, pod shapes %s%d\n", nodes,
           res.gpus_total, res.npods, load, shapes ? "" : "every pod its own: ", shapes ? shapes : pods);
    printf("generate %.2f s, convert (CSV -> snapshot) %.2f s\n", t_gen, t_conv);
    printf("replay %.2f s: %llu scheduling cycles, %u samples, %u preemptions, "
           "%u quota rejections, %u other rejections\n",
           t_replay, (unsigned long long)res.schedule_attempts, res.nsamples, res.preemptions,
           res.quota_rejections, res.other_rejections);
    printf("end state: %u done, %u running, %u pending, %u rejected, %u lost\n",
           state[GS_RP_DONE], state[GS_RP_RUNNING], state[GS_RP_PENDING], state[GS_RP_REJECTED],
           state[GS_RP_LOST]);
    printf("results digest %016llx (every per-pod result and sample)\n",
           (unsigned long long)results_digest(&res));
    printf("peak RSS %.1f MiB (%.1f MiB before the replay)\n", peak_rss_kib() / 1024.0,
           rss_before / 1024.0);
    gs_replay_result_free(&res);
    free(arrival);
    free(duration);
    gs_snapshot_free(&snap);
    return 0;
}
