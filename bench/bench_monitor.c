/*
 * bench_monitor.c - the monitor's core at cluster scale (issue 12, section 5).
 *
 *   build/bench/bench_monitor [NODES PODS RATE SECONDS]     (5000 100000 1000 20)
 *
 * The objects go through a gs_live_store and its observer exactly as an informer puts
 * them (the store prunes, the monitor queues), without an API server: on this machine the
 * API server itself tops out near 400-500 writes/s (docs/performance.md, "Live clusters"),
 * below the 1,000 changes/s asked. Nodes: 80 % GPU nodes (8x H100, tainted, GFD labels,
 * four pools), 20 % CPU nodes. Pods: bound, 20 % with one GPU; plus pending GPU pods in
 * 40 shapes. Churn: RATE changes per second in ticks of 200 ms (the monitor's default
 * --update-interval), each tick's changes put then one gs_monitor_update: 90 % status
 * changes of bound pods (Ready flips, as kubelets write them), 5 % non-GPU pods replaced
 * (delete + create), 5 % GPU pods released and bound elsewhere. Each tick one new pending
 * GPU pod is put before the update (every 5th of a new shape, the others of a shape
 * already pending): "pending -> series" is the time from its put until a render shows its
 * series change (add up to one tick for the update interval).
 * Prints: initial apply, /metrics render time and size, CPU per second of churn, update
 * duration percentiles, pending->series latency, peak RSS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "gpusched/live.h"
#include "gpusched/monitor.h"

static long nnodes, npods;

static size_t node_json(char *b, size_t cap, long i)
{
    bool gpu = i % 5 != 4;
    if (!gpu)
        return (size_t)snprintf(
            b, cap,
            "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-%05ld\",\"uid\":\"n-%ld\","
            "\"labels\":{\"kubernetes.io/hostname\":\"node-%05ld\",\"cloud.google.com/gke-nodepool\":\"cpu\"}},"
            "\"spec\":{},\"status\":{\"capacity\":{\"cpu\":\"64\",\"memory\":\"256Gi\",\"pods\":\"110\"},"
            "\"allocatable\":{\"cpu\":\"63\",\"memory\":\"250Gi\",\"pods\":\"110\"},"
            "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
            i, i, i);
    return (size_t)snprintf(
        b, cap,
        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-%05ld\",\"uid\":\"n-%ld\",\"labels\":{"
        "\"kubernetes.io/hostname\":\"node-%05ld\",\"cloud.google.com/gke-nodepool\":\"h100-%ld\","
        "\"nvidia.com/gpu.present\":\"true\",\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\","
        "\"nvidia.com/gpu.count\":\"8\",\"nvidia.com/gpu.memory\":\"81559\"}},"
        "\"spec\":{\"taints\":[{\"key\":\"nvidia.com/gpu\",\"value\":\"present\",\"effect\":\"NoSchedule\"}]},"
        "\"status\":{\"capacity\":{\"cpu\":\"192\",\"memory\":\"2048Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"},"
        "\"allocatable\":{\"cpu\":\"191\",\"memory\":\"2000Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"},"
        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
        i, i, i, i % 4);
}

/* pod i: bound to node i % nnodes (GPU pods only to GPU nodes); gen changes its status */
static size_t pod_json(char *b, size_t cap, const char *ns, const char *name, long node, int gpus, bool ready,
                       long gen, const char *extra_req)
{
    char nodefield[64] = "";
    if (node >= 0)
        snprintf(nodefield, sizeof nodefield, "\"nodeName\":\"node-%05ld\",", node);
    char res[96] = "";
    if (gpus > 0)
        snprintf(res, sizeof res, ",\"nvidia.com/gpu\":\"%d\"", gpus);
    return (size_t)snprintf(
        b, cap,
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"%s-%s-%ld\","
        "\"creationTimestamp\":\"2026-12-01T00:00:00Z\",\"labels\":{\"app\":\"trainer\"},"
        "\"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"trainer-7d9c8f6b5d\",\"uid\":\"rs\"}]},"
        "\"spec\":{%s\"schedulerName\":\"default-scheduler\","
        "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],"
        "\"containers\":[{\"name\":\"main\",\"image\":\"registry.example.com/ml/trainer:2026.11.3\","
        "\"env\":[{\"name\":\"NCCL_DEBUG\",\"value\":\"WARN\"}],"
        "\"resources\":{\"requests\":{\"cpu\":\"%s\",\"memory\":\"%s\"%s%s},\"limits\":{\"memory\":\"%s\"%s}}}]},"
        "\"status\":{\"phase\":\"%s\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"%s\","
        "\"lastTransitionTime\":\"2026-12-01T00:01:00Z\"},{\"type\":\"Ready\",\"status\":\"%s\","
        "\"lastTransitionTime\":\"2026-12-01T00:02:%02ldZ\"}],"
        "\"containerStatuses\":[{\"name\":\"main\",\"ready\":%s,\"restartCount\":0,\"image\":\"x\"}]}}",
        name, ns, ns, name, gen, nodefield, gpus > 0 ? "8" : "500m", gpus > 0 ? "64Gi" : "1Gi", res,
        extra_req ? extra_req : "", gpus > 0 ? "64Gi" : "1Gi", res, node >= 0 ? "Running" : "Pending",
        node >= 0 ? "True" : "False", ready ? "True" : "False", gen % 60, ready ? "true" : "false");
}

static gs_live_store *st;
static gs_monitor *mon;
static char buf[8192];

static void put_pod(const char *ns, const char *name, long node, int gpus, bool ready, long gen, const char *extra)
{
    size_t n = pod_json(buf, sizeof buf, ns, name, node, gpus, ready, gen, extra);
    gs_error err;
    if (gs_live_store_put(st, GS_LIVE_POD, buf, n, &err)) {
        fprintf(stderr, "put: %s\n", err.msg);
        exit(1);
    }
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* the sum of the values of the series lines starting with prefix */
static long pending_sum(const char *text, const char *prefix)
{
    long sum = 0;
    size_t n = strlen(prefix);
    for (const char *p = text; (p = strstr(p, prefix)); p += n)
        if (p == text || p[-1] == '\n') {
            const char *sp = strchr(p, ' ');
            if (sp)
                sum += atol(sp + 1);
        }
    return sum;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static long gpu_node_of(long i)
{
    long n = i % nnodes;
    if (n % 5 == 4)
        n = (n + 1) % nnodes;
    return n;
}

int main(int argc, char **argv)
{
    nnodes = argc > 1 ? atol(argv[1]) : 5000;
    npods = argc > 2 ? atol(argv[2]) : 100000;
    long rate = argc > 3 ? atol(argv[3]) : 1000;
    long seconds = argc > 4 ? atol(argv[4]) : 20;
    if (nnodes < 5 || npods < 1 || rate < 5 || seconds < 1) {
        fprintf(stderr, "usage: bench_monitor [NODES PODS RATE SECONDS]\n");
        return 2;
    }
    srand(7);
    gs_error err;
    st = gs_live_store_new(&err);
    gs_monitor_opts o = {.store = st};
    mon = gs_monitor_new(&o, &err);
    gs_live_store_observe(st, gs_monitor_observer, mon);
    double t0 = now(), c0 = cpu_seconds();
    for (long i = 0; i < nnodes; i++) {
        size_t n = node_json(buf, sizeof buf, i);
        if (gs_live_store_put(st, GS_LIVE_NODE, buf, n, &err))
            return fprintf(stderr, "node: %s\n", err.msg), 1;
    }
    char name[64], ns[64];
    for (long i = 0; i < npods; i++) {
        bool gpu = i % 5 == 0;
        snprintf(name, sizeof name, "worker-%07ld", i);
        snprintf(ns, sizeof ns, "team-%ld", i % 50);
        put_pod(ns, name, gpu ? gpu_node_of(i) : i % nnodes, gpu ? 1 : 0, true, 0, NULL);
    }
    /* pending GPU pods in 40 shapes: 8 GPUs (nothing has 8 free), in 40 namespaces */
    long npending = 1000;
    for (long i = 0; i < npending; i++) {
        snprintf(name, sizeof name, "big-%05ld", i);
        snprintf(ns, sizeof ns, "queue-%ld", i % 40);
        put_pod(ns, name, -1, 8, false, 0, NULL);
    }
    double tput = now() - t0;
    if (gs_monitor_update(mon, wall_ms(), &err) < 0)
        return fprintf(stderr, "update: %s\n", err.msg), 1;
    double tinit = now() - t0, cinit = cpu_seconds() - c0;
    gs_monitor_stats ms;
    gs_monitor_stats_get(mon, &ms);
    printf("objects: %ld nodes, %ld pods (+%ld pending GPU pods in 40 shapes)\n", nnodes, npods, npending);
    printf("initial: store puts %.2f s, first update %.2f s (apply + explain), cpu %.2f s, %u pending shapes, "
           "monitor memory %.1f MiB, peak RSS %.1f MiB\n",
           tput, tinit - tput, cinit, ms.pending_shapes, ms.bytes / 1048576.0, peak_rss_kib() / 1024.0);
    gs_strbuf out = GS_STRBUF_INIT;
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
        double a = now();
        gs_monitor_render(mon, GS_MON_METRICS, GS_MON_TEXT, wall_ms(), &out, &err);
        double d = now() - a;
        if (d < best)
            best = d;
    }
    size_t metrics_size = out.len;
    double a = now();
    gs_monitor_render(mon, GS_MON_PENDING, GS_MON_JSON, wall_ms(), &out, &err);
    printf("render: /metrics %.2f ms, %zu bytes; /pending JSON %.2f ms, %zu bytes\n", best * 1000, metrics_size,
           (now() - a) * 1000, out.len);
    /* churn */
    long ticks = seconds * 5, per_tick = rate / 5;
    double *upd = calloc((size_t)ticks, sizeof *upd);
    double *lat_new = calloc((size_t)ticks, sizeof *lat_new), *lat_old = calloc((size_t)ticks, sizeof *lat_old);
    long nlat_new = 0, nlat_old = 0;
    long replaced = 0, moved = 0, flips = 0, gen = 1;
    double c1 = cpu_seconds(), w1 = now();
    for (long t = 0; t < ticks; t++) {
        double tick_start = now();
        for (long k = 0; k < per_tick; k++, gen++) {
            int dice = rand() % 100;
            long i = (long)(((unsigned long)rand() << 16 ^ (unsigned long)rand()) % (unsigned long)npods);
            bool gpu = i % 5 == 0;
            snprintf(ns, sizeof ns, "team-%ld", i % 50);
            if (dice < 90) {
                snprintf(name, sizeof name, "worker-%07ld", i);
                put_pod(ns, name, gpu ? gpu_node_of(i) : i % nnodes, gpu ? 1 : 0, gen % 2, gen, NULL);
                flips++;
            } else if (dice < 95 && !gpu) {
                snprintf(name, sizeof name, "worker-%07ld", i);
                size_t n = pod_json(buf, sizeof buf, ns, name, i % nnodes, 0, true, 0, NULL);
                gs_live_store_delete(st, GS_LIVE_POD, buf, n, &err);
                put_pod(ns, name, (i + gen) % nnodes, 0, false, gen, NULL);
                replaced++;
            } else if (gpu) {
                snprintf(name, sizeof name, "worker-%07ld", i);
                put_pod(ns, name, gpu_node_of(i + gen), 1, true, gen, NULL);
                moved++;
            }
        }
        /* a new pending pod: every 5th tick of a new shape (a request of its own), else of
         * an existing shape (8 GPUs in a queue namespace) */
        bool fresh = t % 5 == 0;
        if (fresh)
            snprintf(ns, sizeof ns, "lat-%ld", t);
        else
            snprintf(ns, sizeof ns, "queue-%ld", t % 40);
        snprintf(name, sizeof name, "probe-%ld", t);
        char extra[64] = "";
        if (fresh)
            snprintf(extra, sizeof extra, ",\"ephemeral-storage\":\"%ldMi\"", t + 1);
        double p0 = now();
        put_pod(ns, name, -1, 8, false, t, extra);
        double u0 = now();
        if (gs_monitor_update(mon, wall_ms(), &err) < 0)
            return fprintf(stderr, "update: %s\n", err.msg), 1;
        upd[t] = now() - u0;
        gs_monitor_render(mon, GS_MON_METRICS, GS_MON_TEXT, wall_ms(), &out, &err);
        char want[160];
        double l;
        if (fresh) {
            snprintf(want, sizeof want, "namespace=\"lat-%ld\"", t);
            l = strstr(gs_strbuf_cstr(&out), want) ? now() - p0 : -1;
        } else { /* the queue's pending count went up by one */
            snprintf(want, sizeof want, "gpusched_gpu_pods_pending{namespace=\"queue-%ld\",", t % 40);
            l = pending_sum(gs_strbuf_cstr(&out), want) == npending / 40 + 1 ? now() - p0 : -1;
        }
        if (fresh)
            lat_new[nlat_new++] = l;
        else
            lat_old[nlat_old++] = l;
        put_pod(ns, name, gpu_node_of(t), 8, true, t, extra); /* bound: it leaves the queue */
        double spent = now() - tick_start;
        if (spent < 0.2)
            usleep((useconds_t)((0.2 - spent) * 1e6));
    }
    double wall = now() - w1, cpu = cpu_seconds() - c1;
    gs_monitor_stats_get(mon, &ms);
    qsort(upd, (size_t)ticks, sizeof *upd, cmp_d);
    long missed = 0;
    for (long t = 0; t < nlat_new; t++)
        missed += lat_new[t] < 0;
    for (long t = 0; t < nlat_old; t++)
        missed += lat_old[t] < 0;
    qsort(lat_new, (size_t)nlat_new, sizeof *lat_new, cmp_d);
    qsort(lat_old, (size_t)nlat_old, sizeof *lat_old, cmp_d);
    printf("churn: %ld s at %ld changes/s (%ld status changes, %ld pods replaced, %ld GPU pods moved), "
           "wall %.1f s\n",
           seconds, rate, flips, replaced, moved, wall);
    printf("cpu: %.3f s per second of churn (puts + updates + renders)\n", cpu / wall);
    printf("update: p50 %.1f ms, p99 %.1f ms, max %.1f ms; explain runs %llu, shapes explained %llu, "
           "re-reads %llu\n",
           upd[ticks / 2] * 1000, upd[ticks * 99 / 100] * 1000, upd[ticks - 1] * 1000,
           (unsigned long long)ms.explains, (unsigned long long)ms.shapes_explained,
           (unsigned long long)ms.rebuilds);
    printf("pending -> series (+ up to one 200 ms update interval): new shape p50 %.1f ms, max %.1f ms; "
           "known shape p50 %.1f ms, max %.1f ms; %ld not seen\n",
           nlat_new ? lat_new[nlat_new / 2] * 1000 : 0, nlat_new ? lat_new[nlat_new - 1] * 1000 : 0,
           nlat_old ? lat_old[nlat_old / 2] * 1000 : 0, nlat_old ? lat_old[nlat_old - 1] * 1000 : 0, missed);
    printf("memory: monitor %.1f MiB; peak RSS %.1f MiB\n", ms.bytes / 1048576.0, peak_rss_kib() / 1024.0);
    gs_strbuf_free(&out);
    free(upd);
    free(lat_new);
    free(lat_old);
    gs_live_store_observe(st, NULL, NULL);
    gs_monitor_free(mon);
    gs_live_store_free(st);
    return missed ? 1 : 0;
}
