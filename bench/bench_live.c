/*
 * bench_live.c - the live client against a real API server (issue 11 section 5). Run it
 * through bench/bench-live.py, which starts the control plane of tests/live, populates it,
 * runs the real kubectl side by side and prints the table of docs/performance.md.
 *
 *   bench_live populate NODES PODS THREADS   create NODES GPU nodes (GFD labels, capacity in
 *                                            status) and PODS pods bound to them in
 *                                            namespaces of 1,000 pods, THREADS clients at once
 *   bench_live list [LIMIT]                  list every snapshot kind into a store (pages of
 *                                            LIMIT, default 500), then read the store into a
 *                                            snapshot: times, objects/s, bytes per cached pod,
 *                                            peak RSS (one line of key=value pairs)
 *   bench_live watch [SECONDS] [RATE] [THREADS]
 *                                            a Pod informer (initial sync timed), then THREADS
 *                                            clients patch a label of the populated pods at
 *                                            RATE patches/s in all (default 1000) for SECONDS
 *                                            (default 20): events/s the informer applied, and
 *                                            for every 20th patch the time from the server's
 *                                            answer to the change being in the store (p50,
 *                                            p99, max); at the end every pod in the store is
 *                                            compared with the last value written
 *
 * Credentials: $GS_KUBECONFIG_ADMIN (the harness's admin user). Exit 0, or 1 with the
 * error on stderr.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "gpusched/live.h"

static gs_live_client *connect_admin(gs_live_config **cfg)
{
    gs_error err;
    gs_live_opts o;
    memset(&o, 0, sizeof o);
    o.kubeconfig = getenv("GS_KUBECONFIG_ADMIN");
    if (!o.kubeconfig) {
        fprintf(stderr, "bench_live: GS_KUBECONFIG_ADMIN is not set (run it through bench/bench-live.py)\n");
        exit(1);
    }
    *cfg = gs_live_config_load(&o, &err);
    if (!*cfg) {
        fprintf(stderr, "bench_live: %s\n", err.msg);
        exit(1);
    }
    gs_live_client *c = gs_live_client_new(*cfg, NULL, &err);
    if (!c) {
        fprintf(stderr, "bench_live: %s\n", err.msg);
        exit(1);
    }
    return c;
}

static int post(gs_live_client *c, const char *path, const char *body, size_t len, bool tolerate_conflict)
{
    gs_live_request rq;
    memset(&rq, 0, sizeof rq);
    rq.method = "POST";
    rq.path = path;
    rq.body = body;
    rq.body_len = len;
    rq.content_type = "application/json";
    gs_live_response rs;
    memset(&rs, 0, sizeof rs);
    gs_error err;
    int rc = gs_live_do(c, &rq, &rs, &err);
    if (rc && tolerate_conflict && rs.http == 409)
        rc = 0;
    if (rc)
        fprintf(stderr, "bench_live: POST %s: %s\n", path, err.msg);
    gs_live_response_free(&rs);
    return rc;
}

static long nnodes, npods;
static atomic_long next_item;
static atomic_int failed;

#define PODS_PER_NS 1000

/* A node as a cloud GPU node looks: GFD labels, capacity and allocatable in status. */
static size_t node_json(char *b, size_t cap, long i)
{
    return (size_t)snprintf(
        b, cap,
        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"bench-gpu-%05ld\",\"labels\":{"
        "\"kubernetes.io/hostname\":\"bench-gpu-%05ld\",\"kubernetes.io/os\":\"linux\",\"kubernetes.io/arch\":\"amd64\","
        "\"node.kubernetes.io/instance-type\":\"p5.48xlarge\",\"topology.kubernetes.io/zone\":\"zone-%ld\","
        "\"nvidia.com/gpu.present\":\"true\",\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\","
        "\"nvidia.com/gpu.count\":\"8\",\"nvidia.com/gpu.memory\":\"81559\",\"nvidia.com/gpu.family\":\"hopper\","
        "\"nvidia.com/cuda.driver.major\":\"560\",\"nvidia.com/mig.capable\":\"true\",\"pool\":\"h100-%ld\"}},"
        "\"spec\":{\"taints\":[{\"key\":\"nvidia.com/gpu\",\"value\":\"present\",\"effect\":\"NoSchedule\"}]},"
        "\"status\":{\"capacity\":{\"cpu\":\"192\",\"memory\":\"2097152Mi\",\"pods\":\"110\","
        "\"ephemeral-storage\":\"3Ti\",\"nvidia.com/gpu\":\"8\"},\"allocatable\":{\"cpu\":\"191\","
        "\"memory\":\"2000000Mi\",\"pods\":\"110\",\"ephemeral-storage\":\"3Ti\",\"nvidia.com/gpu\":\"8\"}}}",
        i, i, i % 3, i % 4);
}

/* A pod as a training or inference deployment makes them: labels, env, mounts, probes,
 * tolerations, resources; bound to a node (spec.nodeName) like a running cluster's pods. */
static size_t pod_json(char *b, size_t cap, long i)
{
    long node = nnodes ? i % nnodes : 0;
    bool gpu = i % 4 == 0;
    return (size_t)snprintf(
        b, cap,
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"worker-%07ld\",\"namespace\":\"bench-%ld\","
        "\"labels\":{\"app.kubernetes.io/name\":\"trainer\",\"app.kubernetes.io/instance\":\"run-%ld\","
        "\"pod-template-hash\":\"7d9c8f6b5d\",\"team\":\"ml-%ld\"},\"annotations\":{"
        "\"prometheus.io/scrape\":\"true\",\"prometheus.io/port\":\"9400\"}},"
        "\"spec\":{\"nodeName\":\"bench-gpu-%05ld\",\"schedulerName\":\"default-scheduler\","
        "\"priorityClassName\":\"\",\"serviceAccountName\":\"default\",\"automountServiceAccountToken\":false,"
        "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],"
        "\"containers\":[{\"name\":\"main\",\"image\":\"registry.example.com/ml/trainer:2026.11.3\","
        "\"command\":[\"python\",\"-m\",\"trainer\"],\"args\":[\"--config\",\"/etc/trainer/config.yaml\"],"
        "\"env\":[{\"name\":\"NCCL_DEBUG\",\"value\":\"WARN\"},{\"name\":\"RUN_ID\",\"value\":\"run-%ld\"},"
        "{\"name\":\"POD_NAME\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}}],"
        "\"ports\":[{\"name\":\"metrics\",\"containerPort\":9400}],"
        "\"resources\":{\"requests\":{\"cpu\":\"%s\",\"memory\":\"%s\"%s},\"limits\":{\"memory\":\"%s\"%s}},"
        "\"volumeMounts\":[{\"name\":\"config\",\"mountPath\":\"/etc/trainer\"},{\"name\":\"data\","
        "\"mountPath\":\"/data\"}],\"readinessProbe\":{\"httpGet\":{\"path\":\"/healthz\",\"port\":9400},"
        "\"periodSeconds\":10}}],"
        "\"volumes\":[{\"name\":\"config\",\"configMap\":{\"name\":\"trainer-config\"}},{\"name\":\"data\","
        "\"emptyDir\":{}}]}}",
        i, i / PODS_PER_NS, i / 100, i % 10, node, i / 100, gpu ? "8" : "500m", gpu ? "64Gi" : "1Gi",
        gpu ? ",\"nvidia.com/gpu\":\"2\"" : "", gpu ? "64Gi" : "1Gi", gpu ? ",\"nvidia.com/gpu\":\"2\"" : "");
}

static void *populate_worker(void *arg)
{
    (void)arg;
    gs_live_config *cfg;
    gs_live_client *c = connect_admin(&cfg);
    char body[4096], path[128];
    for (;;) {
        long i = atomic_fetch_add(&next_item, 1);
        if (i >= nnodes + npods || atomic_load(&failed))
            break;
        int rc;
        if (i < nnodes) {
            rc = post(c, "/api/v1/nodes", body, node_json(body, sizeof body, i), true);
        } else {
            long p = i - nnodes;
            snprintf(path, sizeof path, "/api/v1/namespaces/bench-%ld/pods", p / PODS_PER_NS);
            rc = post(c, path, body, pod_json(body, sizeof body, p), true);
        }
        if (rc)
            atomic_store(&failed, 1);
    }
    gs_live_client_free(c);
    gs_live_config_free(cfg);
    return NULL;
}

static int populate(long nodes, long pods, int threads)
{
    nnodes = nodes;
    npods = pods;
    gs_live_config *cfg;
    gs_live_client *c = connect_admin(&cfg);
    char body[256];
    for (long n = 0; n * PODS_PER_NS < pods; n++) {
        int len = snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"bench-%ld\"}}", n);
        if (post(c, "/api/v1/namespaces", body, (size_t)len, true))
            return 1;
    }
    gs_live_client_free(c);
    gs_live_config_free(cfg);
    double t0 = now();
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    for (int t = 0; t < threads; t++)
        pthread_create(&tid[t], NULL, populate_worker, NULL);
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    free(tid);
    double dt = now() - t0;
    printf("populate nodes=%ld pods=%ld threads=%d seconds=%.1f creates_per_s=%.0f\n", nodes, pods, threads, dt,
           (double)(nodes + pods) / dt);
    return atomic_load(&failed);
}

static int list(unsigned limit)
{
    gs_live_config *cfg;
    gs_live_client *c = connect_admin(&cfg);
    gs_error err;
    gs_live_store *st = gs_live_store_new(&err);
    long rss0 = peak_rss_kib();
    double t0 = now();
    for (int k = 0; k < GS_LIVE_NKINDS; k++) {
        if (!(GS_LIVE_SNAPSHOT_KINDS & GS_LIVE_KIND_BIT(k)))
            continue;
        char path[128];
        gs_live_kind_path((gs_live_kind)k, NULL, path, sizeof path);
        if (gs_live_store_list(c, st, (gs_live_kind)k, path, limit, NULL, 0, &err) < 0) {
            fprintf(stderr, "bench_live: %s\n", err.msg);
            return 1;
        }
    }
    double t_list = now() - t0;
    long rss_list = peak_rss_kib();
    gs_live_store_stats pod, node;
    gs_live_store_stats_get(st, GS_LIVE_POD, &pod);
    gs_live_store_stats_get(st, GS_LIVE_NODE, &node);
    size_t objects = 0, bytes = 0;
    for (int k = 0; k < GS_LIVE_NKINDS; k++) {
        gs_live_store_stats s;
        gs_live_store_stats_get(st, (gs_live_kind)k, &s);
        objects += s.objects;
        bytes += s.received;
    }
    double t1 = now();
    gs_snapshot snap;
    gs_snapshot_init(&snap);
    if (gs_live_store_snapshot(st, 0, &snap, "bench", NULL, &err) || gs_snapshot_finish(&snap, &err)) {
        fprintf(stderr, "bench_live: %s\n", err.msg);
        return 1;
    }
    double t_snap = now() - t1;
    printf("list limit=%u objects=%zu pods=%zu nodes=%zu objects_mb=%.1f list_s=%.2f objects_per_s=%.0f "
           "received_per_pod=%.0f kept_per_pod=%.0f store_overhead_per_pod=%.0f rss_before_mib=%.1f "
           "peak_rss_list_mib=%.1f snapshot_s=%.2f snapshot_pods=%zu peak_rss_mib=%.1f\n",
           limit ? limit : 500, objects, pod.objects, node.objects, (double)bytes / 1048576.0, t_list,
           (double)objects / t_list, pod.objects ? (double)pod.received / (double)pod.objects : 0,
           pod.objects ? (double)pod.bytes / (double)pod.objects : 0,
           pod.objects ? (double)pod.overhead / (double)pod.objects : 0, (double)rss0 / 1024.0,
           (double)rss_list / 1024.0, t_snap, snap.pods.n, (double)peak_rss_kib() / 1024.0);
    gs_snapshot_free(&snap);
    gs_live_store_free(st);
    gs_live_client_free(c);
    gs_live_config_free(cfg);
    return 0;
}

/* ---------------------------------------------------------------- watch */

static gs_live_store *w_store;
static double w_rate, w_end;
static int w_threads;
static atomic_long w_seq, w_patches, w_failed;
static long *w_last;           /* per pod: the last value written */
static double *w_lat;          /* sampled latencies, seconds */
static atomic_long w_nlat;
#define W_MAX_LAT 200000

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void *churn_worker(void *arg)
{
    long t = (long)(intptr_t)arg;
    gs_live_config *cfg;
    gs_live_client *c = connect_admin(&cfg);
    gs_strbuf out = GS_STRBUF_INIT;
    char path[160], body[160], want[64];
    double per = (double)w_threads / w_rate, next = now();
    long sent = 0;
    while (now() < w_end) {
        long seq = atomic_fetch_add(&w_seq, 1);
        long i = seq % npods;
        snprintf(path, sizeof path, "/api/v1/namespaces/bench-%ld/pods/worker-%07ld", i / PODS_PER_NS, i);
        int n = snprintf(body, sizeof body, "{\"metadata\":{\"labels\":{\"bench-seq\":\"%d-%ld\"}}}", (int)getpid(),
                         seq);
        gs_live_request rq;
        memset(&rq, 0, sizeof rq);
        rq.method = "PATCH";
        rq.path = path;
        rq.body = body;
        rq.body_len = (size_t)n;
        rq.content_type = "application/merge-patch+json";
        gs_live_response rs;
        memset(&rs, 0, sizeof rs);
        gs_error err;
        if (gs_live_do(c, &rq, &rs, &err)) {
            atomic_fetch_add(&w_failed, 1);
            gs_live_response_free(&rs);
            continue;
        }
        gs_live_response_free(&rs);
        double answered = now();
        atomic_fetch_add(&w_patches, 1);
        /* per pod the writes are ordered only within one thread: pods are split by seq, and
         * a later seq of the same pod may be written by another thread; keep the max */
        long prev = w_last[i];
        while (prev < seq && !__atomic_compare_exchange_n(&w_last[i], &prev, seq, false, __ATOMIC_SEQ_CST,
                                                          __ATOMIC_SEQ_CST))
            ;
        if (seq % 20 == (long)t % 20) {
            char key[64];
            snprintf(key, sizeof key, "bench-%ld/worker-%07ld", i / PODS_PER_NS, i);
            snprintf(want, sizeof want, "\"bench-seq\":\"%d-%ld\"", (int)getpid(), seq);
            for (;;) {
                if (gs_live_store_get(w_store, GS_LIVE_POD, key, &out) == 0 && strstr(out.buf, want))
                    break;
                if (now() - answered > 10)
                    break;
                struct timespec ts = {0, 200000};
                nanosleep(&ts, NULL);
            }
            long k = atomic_fetch_add(&w_nlat, 1);
            if (k < W_MAX_LAT)
                w_lat[k] = now() - answered;
        }
        sent++;
        next += per;
        double d = next - now();
        if (d > 0) {
            struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
            nanosleep(&ts, NULL);
        }
    }
    gs_strbuf_free(&out);
    gs_live_client_free(c);
    gs_live_config_free(cfg);
    return NULL;
}

static int watch(double seconds, double rate, int threads)
{
    gs_error err;
    gs_live_opts o;
    memset(&o, 0, sizeof o);
    o.kubeconfig = getenv("GS_KUBECONFIG_ADMIN");
    gs_live_config *cfg = gs_live_config_load(&o, &err);
    if (!cfg) {
        fprintf(stderr, "bench_live: %s\n", err.msg);
        return 1;
    }
    w_store = gs_live_store_new(&err);
    gs_live_informer_opts io;
    memset(&io, 0, sizeof io);
    io.kinds = GS_LIVE_KIND_BIT(GS_LIVE_POD);
    double t0 = now();
    gs_live_informer *inf = gs_live_informer_new(cfg, w_store, &io, &err);
    if (!inf || gs_live_informer_start(inf, &err) ||
        gs_live_informer_wait_synced(inf, io.kinds, 600000) != 0) {
        fprintf(stderr, "bench_live: informer: %s\n", err.msg[0] ? err.msg : "did not sync");
        return 1;
    }
    double t_sync = now() - t0;
    double rss_sync = (double)peak_rss_kib() / 1024.0; /* before the load generator's clients */
    gs_live_informer_stats s0;
    gs_live_informer_stats_get(inf, GS_LIVE_POD, &s0);
    gs_live_store_stats ss;
    gs_live_store_stats_get(w_store, GS_LIVE_POD, &ss);
    npods = (long)ss.objects;
    if (npods <= 0) {
        fprintf(stderr, "bench_live: no pods (run populate first)\n");
        return 1;
    }
    w_last = calloc((size_t)npods, sizeof *w_last);
    for (long i = 0; i < npods; i++)
        w_last[i] = -1;
    w_lat = calloc(W_MAX_LAT, sizeof *w_lat);
    w_rate = rate;
    w_threads = threads;
    double t1 = now();
    w_end = t1 + seconds;
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    for (long t = 0; t < threads; t++)
        pthread_create(&tid[t], NULL, churn_worker, (void *)(intptr_t)t);
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    double t_churn = now() - t1;
    /* quiet: wait until every written value is in the store (at most 30 s) */
    long behind = 0;
    gs_strbuf out = GS_STRBUF_INIT;
    double t_quiet = now();
    for (;;) {
        behind = 0;
        for (long i = 0; i < npods; i++) {
            if (w_last[i] < 0)
                continue;
            char key[64], want[64];
            snprintf(key, sizeof key, "bench-%ld/worker-%07ld", i / PODS_PER_NS, i);
            snprintf(want, sizeof want, "\"bench-seq\":\"%d-%ld\"", (int)getpid(), w_last[i]);
            if (gs_live_store_get(w_store, GS_LIVE_POD, key, &out) != 0 || !strstr(out.buf, want))
                behind++;
        }
        if (!behind || now() - t_quiet > 30)
            break;
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    gs_strbuf_free(&out);
    gs_live_informer_stats s1;
    gs_live_informer_stats_get(inf, GS_LIVE_POD, &s1);
    long nl = atomic_load(&w_nlat);
    if (nl > W_MAX_LAT)
        nl = W_MAX_LAT;
    qsort(w_lat, (size_t)nl, sizeof *w_lat, cmp_double);
    double p50 = nl ? w_lat[nl / 2] : 0, p99 = nl ? w_lat[(nl * 99) / 100] : 0, mx = nl ? w_lat[nl - 1] : 0;
    printf("watch pods=%ld sync_s=%.2f watch_list=%d patches=%ld failed=%ld churn_s=%.1f patches_per_s=%.0f "
           "events=%llu events_per_s=%.0f relists=%llu reconnects=%llu samples=%ld latency_p50_ms=%.1f "
           "latency_p99_ms=%.1f latency_max_ms=%.1f behind_at_end=%ld rss_synced_mib=%.1f peak_rss_mib=%.1f\n",
           npods, t_sync, s0.watch_list, atomic_load(&w_patches), atomic_load(&w_failed), t_churn,
           (double)atomic_load(&w_patches) / t_churn, (unsigned long long)(s1.events - s0.events),
           (double)(s1.events - s0.events) / t_churn, (unsigned long long)s1.relists,
           (unsigned long long)s1.reconnects, nl, p50 * 1e3, p99 * 1e3, mx * 1e3, behind, rss_sync,
           (double)peak_rss_kib() / 1024.0);
    gs_live_informer_stop(inf);
    gs_live_informer_free(inf);
    gs_live_store_free(w_store);
    gs_live_config_free(cfg);
    free(tid);
    free(w_last);
    free(w_lat);
    return behind ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && !strcmp(argv[1], "populate"))
        return populate(atol(argv[2]), atol(argv[3]), atoi(argv[4]));
    if (argc >= 2 && !strcmp(argv[1], "list"))
        return list(argc >= 3 ? (unsigned)atoi(argv[2]) : 0);
    if (argc >= 2 && !strcmp(argv[1], "watch"))
        return watch(argc >= 3 ? atof(argv[2]) : 20, argc >= 4 ? atof(argv[3]) : 1000, argc >= 5 ? atoi(argv[4]) : 16);
    fprintf(stderr, "usage: bench_live populate NODES PODS THREADS | list [LIMIT] | watch [SECONDS] [RATE] [THREADS]\n");
    return 2;
}
