/*
 * bench_replay_mig.c - speed and outcome of the replay's two MIG policies (replay.h):
 * static layouts against dynamic re-partitioning, on a generated H100 cluster and an
 * inference-style trace of single-instance pods.
 *
 * usage: bench_replay_mig [NODES [PODS [SEED [DELAY]]]]
 *   defaults: 500 20000 1 120
 * Cluster (YAML Nodes): NODES H100-80GB nodes with 8 GPUs each under the device plugin's
 * mixed strategy (128 cores, 2 TiB, 250 pods), cut into one of three static layouts in
 * turn: all-1g.10gb (56 x 1g.10gb), all-balanced (per GPU 2 x 1g.10gb, 2g.20gb, 3g.40gb)
 * and all-3g.40gb (2 per GPU, one compute slice left unpartitioned).
 * Trace (YAML bare Pods in namespace inf): each pod asks for cpu 1 and one MIG instance,
 * profile drawn as 1g.10gb 50 %, 2g.20gb 15 %, 3g.40gb 20 %, 4g.40gb 5 %, 7g.80gb 10 %
 * (the last two exist in no static layout). Arrivals uniform over PODS x 30 seconds;
 * durations exponential with the mean that offers 0.9 x the cluster's compute slices
 * (NODES x 8 x 7) on average. Arrival and duration go straight to gs_replay_run as arrays.
 * The replay runs twice on the same snapshot: static, then dynamic with DELAY seconds per
 * re-partition. Prints generation and read times, then per run its time, scheduling
 * cycles, re-partitions, pods that never started, mean and p95 pending time of the pods
 * that arrived and were admitted, and the time-averaged MIG compute slices allocated and
 * left idle or unpartitioned (samples as a step function), over the whole replay (which
 * includes the long drain after the last arrival) and between the first and the last
 * arrival; last the peak resident set size (getrusage). Deterministic for a seed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "gpusched/engine.h"
#include "gpusched/kube.h"
#include "gpusched/replay.h"
#include "gpusched/util.h"

#include "bench_util.h"

#define USAGE "usage: bench_replay_mig [NODES [PODS [SEED [DELAY]]]]\n"
#define POD_PREFIX "pod-"
#define ARRIVAL_GAP 30.0     /* mean seconds between arrivals */
#define OFFERED_LOAD 0.9     /* of the cluster's compute slices */
#define SLICES_PER_GPU 7     /* H100-80GB compute slices */
#define GPUS_PER_NODE 8

static void die_err(const char *what, const gs_error *err)
{
    char buf[1024];
    gs_error_format(err, buf, sizeof buf);
    fprintf(stderr, "bench_replay_mig: %s: %s\n", what, buf);
    exit(1);
}

static void die(const char *msg)
{
    fprintf(stderr, "bench_replay_mig: %s\n", msg);
    exit(1);
}

/* The three static layouts, node i taking layout i % 3: the allocatable
 * nvidia.com/mig-* counts the device plugin advertises for 8 GPUs. */
static const char *const layout_names[] = {"all-1g.10gb", "all-balanced", "all-3g.40gb"};
static const char *const layout_resources[] = {
    "nvidia.com/mig-1g.10gb: \"56\"",
    ("nvidia.com/mig-1g.10gb: \"16\", nvidia.com/mig-2g.20gb: \"8\", "
     "nvidia.com/mig-3g.40gb: \"8\""),
    "nvidia.com/mig-3g.40gb: \"16\"",
};

static void gen_nodes(gs_strbuf *sb, int nodes)
{
    for (int i = 0; i < nodes; i++) {
        int l = i % 3;
        gs_strbuf_printf(sb,
                         "---\n"
                         "apiVersion: v1\n"
                         "kind: Node\n"
                         "metadata:\n"
                         "  name: h100-%06d\n"
                         "  labels:\n"
                         "    nvidia.com/gpu.present: \"true\"\n"
                         "    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3\n"
                         "    nvidia.com/gpu.count: \"%d\"\n"
                         "    nvidia.com/mig.strategy: mixed\n"
                         "    nvidia.com/mig.config: %s\n"
                         "status:\n"
                         "  allocatable: {cpu: \"128\", memory: 2Ti, pods: \"250\", %s}\n",
                         i, GPUS_PER_NODE, layout_names[l], layout_resources[l]);
    }
}

/* Pod profiles with their compute slices and cumulative weight in percent. */
typedef struct profile {
    const char *name;
    int slices;
    int cum_pct;
} profile;

static const profile profiles[] = {
    {"1g.10gb", 1, 50}, {"2g.20gb", 2, 65}, {"3g.40gb", 3, 85},
    {"4g.40gb", 4, 90}, {"7g.80gb", 7, 100},
};
#define NPROFILES (sizeof profiles / sizeof profiles[0])

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Pods named POD_PREFIX + generation index, in arrival order; arrival[] and duration[]
 * are indexed by generation index. Returns the mean duration drawn from. */
static double gen_pods(gs_strbuf *sb, int pods, uint64_t seed, int nodes, int64_t *arrival,
                     int64_t *duration)
{
    gs_rng r;
    gs_rng_seed(&r, seed);
    const double span = ARRIVAL_GAP * pods;
    for (int i = 0; i < pods; i++)
        arrival[i] = (int64_t)(gs_rng_double(&r) * span);
    qsort(arrival, (size_t)pods, sizeof *arrival, cmp_i64);
    double slices_asked = 0;
    for (int i = 0; i < pods; i++) {
        int pct = (int)gs_rng_below(&r, 100);
        size_t k = 0;
        while (pct >= profiles[k].cum_pct)
            k++;
        slices_asked += profiles[k].slices;
        gs_strbuf_printf(sb,
                         "---\n"
                         "apiVersion: v1\n"
                         "kind: Pod\n"
                         "metadata: {name: " POD_PREFIX "%07d, namespace: inf}\n"
                         "spec:\n"
                         "  containers:\n"
                         "  - name: server\n"
                         "    image: registry.example.com/infer:1.0\n"
                         "    resources:\n"
                         "      limits: {cpu: \"1\", nvidia.com/mig-%s: \"1\"}\n",
                         i, profiles[k].name);
    }
    /* offered load = arrival rate x mean duration x mean slices per pod
     *              = (pods / span) x mean_dur x (slices_asked / pods) */
    const double cluster_slices = (double)nodes * GPUS_PER_NODE * SLICES_PER_GPU;
    const double mean_dur = OFFERED_LOAD * cluster_slices * span / slices_asked;
    for (int i = 0; i < pods; i++) {
        double u = gs_rng_double(&r);
        duration[i] = (int64_t)(-log(1.0 - u) * mean_dur) + 1;
    }
    return mean_dur;
}

static int arg_int(int argc, char **argv, int i, int dflt, int min)
{
    if (argc <= i)
        return dflt;
    int64_t v;
    if (gs_parse_i64(argv[i], strlen(argv[i]), &v) || v < min || v > 10000000) {
        fprintf(stderr, USAGE);
        exit(1);
    }
    return (int)v;
}

/* Snapshot pod i -> generation index, from its name; fails unless it is a bijection. */
static void map_pods(const gs_snapshot *snap, int pods, const int64_t *gen_arrival,
                     const int64_t *gen_duration, int64_t *arrival, int64_t *duration)
{
    if (snap->pods.n != (size_t)pods)
        die("snapshot pod count differs from the generated count");
    unsigned char *seen = calloc((size_t)pods, 1);
    if (!seen)
        die("out of memory");
    const size_t plen = strlen(POD_PREFIX);
    for (size_t i = 0; i < snap->pods.n; i++) {
        const char *name = snap->pods.v[i].meta.name;
        int64_t j = -1;
        if (strncmp(name, POD_PREFIX, plen) != 0 ||
            gs_parse_i64(name + plen, strlen(name + plen), &j) || j < 0 || j >= pods || seen[j])
            die("snapshot pods do not match the generated names");
        seen[j] = 1;
        arrival[i] = gen_arrival[j];
        duration[i] = gen_duration[j];
    }
    free(seen);
}

/* Time averages of the MIG slice counts over [from, to). */
typedef struct slice_avg {
    double used, idle_unpart, reconfiguring;
} slice_avg;

typedef struct run_stats {
    double seconds;
    uint32_t never_started, admitted, rejected, done, running, pending;
    double wait_mean;
    int64_t wait_p95;
    slice_avg whole, arrivals; /* over the whole replay; between first and last arrival */
} run_stats;

/* Samples as a step function: sample k holds from its time to the next sample's (the last
 * one to the result's end time); each weighs by the part of that span inside [from, to). */
static slice_avg sample_averages(const gs_replay_result *res, int64_t from, int64_t to)
{
    double used = 0, free_slices = 0, reconf = 0, total = 0;
    for (uint32_t k = 0; k < res->nsamples; k++) {
        const gs_replay_sample *s = &res->samples[k];
        int64_t lo = s->t > from ? s->t : from;
        int64_t hi = k + 1 < res->nsamples ? res->samples[k + 1].t : res->end_time;
        if (hi > to)
            hi = to;
        if (hi <= lo)
            continue;
        double w = (double)(hi - lo);
        used += w * s->mig_used;
        free_slices += w * ((double)s->mig_idle + s->mig_unpartitioned);
        reconf += w * s->mig_reconfiguring;
        total += w;
    }
    slice_avg a = {0, 0, 0};
    if (total > 0) {
        a.used = used / total;
        a.idle_unpart = free_slices / total;
        a.reconfiguring = reconf / total;
    }
    return a;
}

static void print_slices(const char *span, const slice_avg *a, double slices)
{
    printf("    %s: %.1f allocated (%.1f %%), %.1f idle or unpartitioned "
           "(%.1f %%), %.2f GPUs re-partitioning\n",
           span, a->used, 100.0 * a->used / slices, a->idle_unpart,
           100.0 * a->idle_unpart / slices, a->reconfiguring);
}

/* Pod counts and pending times of the admitted pods; first/last: their arrival span. */
static void pod_stats(const gs_replay_result *res, int64_t *waits, run_stats *st,
                      int64_t *first, int64_t *last)
{
    uint32_t n = 0;
    double sum = 0;
    for (uint32_t i = 0; i < res->npods; i++) {
        const gs_replay_pod *x = &res->pods[i];
        switch (x->state) {
        case GS_RP_REJECTED: st->rejected++; continue;
        case GS_RP_NOT_ARRIVED: continue;
        case GS_RP_DONE: st->done++; break;
        case GS_RP_RUNNING: st->running++; break;
        case GS_RP_PENDING: st->pending++; break;
        case GS_RP_LOST: break;
        }
        if (x->first_start < 0)
            st->never_started++;
        waits[n++] = x->waited;
        if (x->arrival < *first)
            *first = x->arrival;
        if (x->arrival > *last)
            *last = x->arrival;
        sum += (double)x->waited;
    }
    st->admitted = n;
    st->wait_mean = n ? sum / n : 0;
    st->wait_p95 = 0;
    if (n) {
        qsort(waits, n, sizeof *waits, cmp_i64);
        uint32_t rank = (uint32_t)ceil(0.95 * n); /* nearest rank */
        st->wait_p95 = waits[rank ? rank - 1 : 0];
    }
}

/* Runs one replay and prints its line; returns the MIG GPUs the replay saw. */
static uint32_t run_once(const char *label, const gs_snapshot *snap, const int64_t *arrival,
                         const int64_t *duration, bool dynamic, int delay, int64_t *waits)
{
    gs_replay_opts o;
    gs_replay_opts_defaults(&o);
    o.mig_dynamic = dynamic;
    o.mig_delay = delay;
    gs_replay_result res;
    gs_error err;
    gs_error_clear(&err);
    double t0 = now();
    if (gs_replay_run(snap, arrival, duration, &o, &res, &err))
        die_err("replay", &err);
    run_stats st = {0};
    st.seconds = now() - t0;
    int64_t first = INT64_MAX, last = INT64_MIN;
    pod_stats(&res, waits, &st, &first, &last);
    st.whole = sample_averages(&res, INT64_MIN, INT64_MAX);
    st.arrivals = sample_averages(&res, first, last);
    double slices = res.mig_slices ? (double)res.mig_slices : 1.0;
    printf("%s: replay %.2f s, %llu scheduling cycles, %u samples, %u re-partitions, "
           "end time %.1f h\n",
           label, st.seconds, (unsigned long long)res.schedule_attempts, res.nsamples,
           res.mig_reconfigs, (double)res.end_time / 3600.0);
    printf("  pods: %u admitted (%u rejected), %u never started; end state %u done, "
           "%u running, %u pending\n",
           st.admitted, st.rejected, st.never_started, st.done, st.running, st.pending);
    printf("  pending time: mean %.0f s (%.2f h), p95 %lld s (%.2f h)\n", st.wait_mean,
           st.wait_mean / 3600.0, (long long)st.wait_p95, (double)st.wait_p95 / 3600.0);
    printf("  time-averaged MIG slices of %u on %u GPUs:\n", res.mig_slices, res.mig_gpus);
    print_slices("whole replay ", &st.whole, slices);
    print_slices("arrival span ", &st.arrivals, slices);
    uint32_t mig_gpus = res.mig_gpus;
    gs_replay_result_free(&res);
    return mig_gpus;
}

int main(int argc, char **argv)
{
    if (argc > 5) {
        fprintf(stderr, USAGE);
        return 1;
    }
    int nodes = arg_int(argc, argv, 1, 500, 1);
    int pods = arg_int(argc, argv, 2, 20000, 1);
    int seed = arg_int(argc, argv, 3, 1, 0);
    int delay = arg_int(argc, argv, 4, 120, 0);

    int64_t *gen_arrival = malloc((size_t)pods * sizeof *gen_arrival);
    int64_t *gen_duration = malloc((size_t)pods * sizeof *gen_duration);
    int64_t *arrival = malloc((size_t)pods * sizeof *arrival);
    int64_t *duration = malloc((size_t)pods * sizeof *duration);
    int64_t *waits = malloc((size_t)pods * sizeof *waits);
    if (!gen_arrival || !gen_duration || !arrival || !duration || !waits)
        die("out of memory");

    double t0 = now();
    gs_strbuf yaml = GS_STRBUF_INIT;
    gen_nodes(&yaml, nodes);
    double mean_dur = gen_pods(&yaml, pods, (uint64_t)seed, nodes, gen_arrival, gen_duration);
    if (yaml.oom)
        die("out of memory");
    double t_gen = now() - t0;

    gs_error err;
    gs_error_clear(&err);
    t0 = now();
    gs_snapshot snap;
    gs_snapshot_init(&snap);
    if (gs_snapshot_read_buffer(&snap, "bench.yaml", yaml.buf, yaml.len, NULL, &err) ||
        gs_snapshot_finish(&snap, &err))
        die_err("read", &err);
    double t_read = now() - t0;
    size_t yaml_bytes = yaml.len;
    gs_strbuf_free(&yaml);
    map_pods(&snap, pods, gen_arrival, gen_duration, arrival, duration);
    free(gen_arrival);
    free(gen_duration);
    long rss_before = peak_rss_kib();

    printf("nodes %d (H100 x %d, mixed MIG), pods %d, seed %d, re-partition delay %d s\n",
           nodes, GPUS_PER_NODE, pods, seed, delay);
    printf("arrivals over %.1f h, mean duration %.1f h (offered load %.2f of %d slices)\n",
           ARRIVAL_GAP * pods / 3600.0, mean_dur / 3600.0, OFFERED_LOAD,
           nodes * GPUS_PER_NODE * SLICES_PER_GPU);
    printf("generate %.2f s (%.1f MiB YAML), read %.2f s\n", t_gen,
           (double)yaml_bytes / (1024.0 * 1024.0), t_read);
    uint32_t mig_gpus = run_once("static ", &snap, arrival, duration, false, delay, waits);
    run_once("dynamic", &snap, arrival, duration, true, delay, waits);
    if (mig_gpus != (uint32_t)nodes * GPUS_PER_NODE)
        printf("note: the replay counts %u MIG GPUs, the nodes have %d (gpu.count %d each); "
               "durations assume %d\n",
               mig_gpus, nodes * GPUS_PER_NODE, GPUS_PER_NODE, nodes * GPUS_PER_NODE);
    printf("peak RSS %.1f MiB (%.1f MiB before the replays)\n", peak_rss_kib() / 1024.0,
           rss_before / 1024.0);

    free(arrival);
    free(duration);
    free(waits);
    gs_snapshot_free(&snap);
    if (fflush(stdout) != 0 || ferror(stdout))
        die("write error on stdout");
    return 0;
}
