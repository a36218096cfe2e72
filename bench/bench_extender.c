/*
 * bench_extender.c - the extender's device state (extender.h "device state"): filter and
 * prioritize latency for one pod over 1,000 and NODES node names (cache mode), reserves
 * per second, memory.
 *
 *   build/bench/bench_extender [NODES ITER]          (5000 2000)
 *
 * Nodes: 8x A100-SXM4-80GB each (GFD labels). Before measuring, every node gets three
 * pods bound with an assignment record (two 0.5 shares on GPU 0, one whole GPU), put as
 * the informer would see them after the bind (reserve, then the bound pod with its
 * record), and one pod bound without a record (1 GPU, reconstructed). Filter and
 * prioritize: a 0.25-share pod over the first 1,000 and over all NODES names, ITER calls
 * each, per-call wall time, p50 / p99 / max. Reserves: 0.1-share pods reserved one after
 * another (round robin over the nodes) for 2 s, each then forgotten on every second pod
 * (the state grows by half of them). Memory: the state's own estimate and the peak RSS.
 *
 * Prioritize is measured three ways: best fit (the state above), FGD on the same pods
 * (every node in the same state: the per-call memo measures it once), and FGD where every
 * node differs (two more shares per node, 10..970 milli on GPUs 2 and 3, so the memo
 * misses: the worst case, each node measured before and after placing).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "gpusched/extender.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void put(gs_ext_state *s, gs_live_kind k, const char *j)
{
    gs_error err;
    gs_error_clear(&err);
    if (gs_ext_state_put(s, k, j, strlen(j), &err) != 0) {
        fprintf(stderr, "put: %s\n", err.msg);
        exit(1);
    }
}

static size_t pod_json(char *b, size_t cap, long id, const char *res, const char *ann, const char *node)
{
    return (size_t)snprintf(b, cap,
                            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p%ld\","
                            "\"namespace\":\"ml\",\"uid\":\"0f6c2a9e-54b1-4c1e-9d7e-%012ld\",\"annotations\":{%s}},"
                            "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"main\",\"resources\":"
                            "{\"limits\":{%s}}}]},\"status\":{\"phase\":\"%s\",\"startTime\":\"2026-01-01T00:00:00Z\"}}",
                            id, id, ann, node, res, node[0] ? "Running" : "Pending");
}

static int read_pod(gs_snapshot *sn, const char *j)
{
    gs_error err;
    gs_error_clear(&err);
    if (gs_snapshot_read_buffer(sn, "pod", j, strlen(j), NULL, &err) != 0) {
        fprintf(stderr, "pod: %s\n", err.msg);
        exit(1);
    }
    return 0;
}

static void lat(const char *what, double *t, long n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    printf("%-28s p50 %8.1f us   p99 %8.1f us   max %8.1f us\n", what, t[n / 2] * 1e6,
           t[(size_t)((double)n * 0.99)] * 1e6, t[n - 1] * 1e6);
}

/* Reserve pod id on node, then put it bound with its record (as the informer sees it). */
static void bind_one(gs_ext_state *s, long id, const char *node, const char *res, const char *a, char *buf,
                     char *ann, gs_strbuf *rec)
{
    gs_error err;
    gs_error_clear(&err);
    pod_json(buf, 1 << 16, id, res, a, "");
    gs_snapshot sn;
    gs_snapshot_init(&sn);
    read_pod(&sn, buf);
    if (gs_ext_state_reserve(s, &sn.pods.v[0], node, rec, &err) != 0) {
        fprintf(stderr, "reserve: %s\n", err.msg);
        exit(1);
    }
    gs_snapshot_free(&sn);
    size_t o = (size_t)snprintf(ann, 1 << 16, "%s%s\"gpusched.io/assignment\":\"", a, a[0] ? "," : "");
    for (const char *c = gs_strbuf_cstr(rec); *c; c++) {
        if (*c == '"')
            ann[o++] = '\\';
        ann[o++] = *c;
    }
    ann[o++] = '"';
    ann[o] = 0;
    pod_json(buf, 1 << 16, id, res, ann, node);
    put(s, GS_LIVE_POD, buf);
}

/* The benchmark's cluster; distinct: two more shares per node, a different pair on each. */
static gs_ext_state *fill(long nnodes, char **names, gs_ext_score score, bool distinct)
{
    gs_error err;
    gs_error_clear(&err);
    gs_ext_state_opts o;
    memset(&o, 0, sizeof o);
    o.score = score;
    gs_ext_state *s = gs_ext_state_new(&o, &err);
    gs_ext_state_set_ready(s, true);
    char *buf = malloc(1 << 16), *ann = malloc(1 << 16);
    gs_strbuf rec = GS_STRBUF_INIT;
    for (long i = 0; i < nnodes; i++) {
        snprintf(buf, 1 << 16,
                 "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
                 "\"nvidia.com/gpu.product\":\"NVIDIA-A100-SXM4-80GB\",\"nvidia.com/gpu.memory\":\"81920\","
                 "\"nvidia.com/gpu.count\":\"8\"}},\"status\":{\"allocatable\":{\"cpu\":\"96\",\"nvidia.com/gpu\":\"8\"}}}",
                 names[i]);
        put(s, GS_LIVE_NODE, buf);
    }
    long id = 1;
    for (long i = 0; i < nnodes; i++) {
        for (int k = 0; k < 3; k++, id++) {
            const char *res = k == 2 ? "\"nvidia.com/gpu\":1" : "";
            const char *a = k == 2 ? "" : "\"gpusched.io/gpu-milli\":\"500\"";
            bind_one(s, id, names[i], res, a, buf, ann, &rec);
        }
        pod_json(buf, 1 << 16, id++, "\"nvidia.com/gpu\":1", "", names[i]);
        put(s, GS_LIVE_POD, buf);
        if (distinct) {
            /* 970 and 960 first: the two take GPUs 2 and 3 (best fit on the idle ones) */
            char a[64];
            snprintf(a, sizeof a, "\"gpusched.io/gpu-milli\":\"%ld\"", 970 - 10 * (i % 97));
            bind_one(s, id++, names[i], "", a, buf, ann, &rec);
            snprintf(a, sizeof a, "\"gpusched.io/gpu-milli\":\"%ld\"", 960 - 10 * ((i / 97) % 89));
            bind_one(s, id++, names[i], "", a, buf, ann, &rec);
        }
    }
    free(buf);
    free(ann);
    gs_strbuf_free(&rec);
    return s;
}

static int measure_prioritize(gs_ext_state *s, const gs_pod *pod, char **names, long n, long iter, double *t,
                              gs_arena *ar, const char *label)
{
    gs_error err;
    gs_error_clear(&err);
    gs_ext_host_priority *pr;
    for (long i = 0; i < iter; i++) {
        gs_arena_reset(ar);
        double a = now();
        if (gs_ext_state_prioritize(s, pod, (const char *const *)names, (uint32_t)n, ar, &pr, &err) != 0) {
            fprintf(stderr, "prioritize: %s\n", err.msg);
            return 1;
        }
        t[i] = now() - a;
    }
    char what[64];
    snprintf(what, sizeof what, "prioritize %s %ld nodes", label, n);
    lat(what, t, iter);
    return 0;
}

int main(int argc, char **argv)
{
    long nnodes = argc > 1 ? atol(argv[1]) : 5000;
    long iter = argc > 2 ? atol(argv[2]) : 2000;
    if (nnodes < 1000)
        nnodes = 1000;
    gs_error err;
    gs_error_clear(&err);
    char **names = calloc((size_t)nnodes, sizeof *names);
    char *buf = malloc(1 << 16), *ann = malloc(1 << 16);
    gs_strbuf rec = GS_STRBUF_INIT;
    for (long i = 0; i < nnodes; i++) {
        names[i] = malloc(32);
        snprintf(names[i], 32, "node-%05ld", i);
    }
    double t0 = now();
    gs_ext_state *s = fill(nnodes, names, GS_EXT_SCORE_BESTFIT, false);
    double t_fill = now() - t0;
    gs_ext_state_stats st;
    gs_ext_state_stats_get(s, &st);
    printf("state: %ld nodes, %u pods holding (%u recorded, %u reconstructed), filled in %.2f s "
           "(%.1f us per object)\n",
           nnodes, st.pods, st.recorded, st.reconstructed, t_fill, t_fill * 1e6 / (double)(nnodes + st.pods));

    pod_json(buf, 1 << 16, 999999999, "", "\"gpusched.io/gpu-milli\":\"250\"", "");
    gs_snapshot ps;
    gs_snapshot_init(&ps);
    read_pod(&ps, buf);
    const gs_pod *pod = &ps.pods.v[0];
    double *t = malloc((size_t)iter * sizeof *t);
    gs_arena ar;
    gs_arena_init(&ar, 1 << 20);
    long sizes[2] = {1000, nnodes};
    for (int z = 0; z < 2; z++) {
        long n = sizes[z];
        gs_ext_filter_result fr;
        for (long i = 0; i < iter; i++) {
            gs_arena_reset(&ar);
            double a = now();
            if (gs_ext_state_filter(s, pod, (const char *const *)names, (uint32_t)n, &ar, &fr, &err) != 0)
                return 1;
            t[i] = now() - a;
        }
        char what[64];
        snprintf(what, sizeof what, "filter %ld nodes", n);
        lat(what, t, iter);
        if (fr.nnodes != (uint32_t)n) {
            fprintf(stderr, "unexpected: %u of %ld pass\n", fr.nnodes, n);
            return 1;
        }
        if (measure_prioritize(s, pod, names, n, iter, t, &ar, "best-fit"))
            return 1;
    }
    /* reserves per second */
    enum { NRES = 20000 };
    gs_snapshot rs;
    gs_snapshot_init(&rs);
    for (long i = 0; i < NRES; i++) {
        pod_json(buf, 1 << 16, 2000000 + i, "", "\"gpusched.io/gpu-milli\":\"100\"", "");
        read_pod(&rs, buf);
    }
    long done = 0, failed = 0;
    double a = now();
    for (long i = 0; i < NRES; i++) {
        const gs_pod *p = &rs.pods.v[i];
        if (gs_ext_state_reserve(s, p, names[i % nnodes], &rec, &err) < 0) {
            failed++;
            continue;
        }
        gs_ext_state_bind_done(s, p->meta.uid);
        if (i & 1)
            gs_ext_state_forget(s, p->meta.uid);
        done++;
    }
    double el = now() - a;
    printf("reserve (+ bind_done, forget every 2nd): %ld in %.3f s = %.0f per second (%ld refused)\n", done, el,
           (double)done / el, failed);
    gs_ext_state_stats_get(s, &st);
    printf("memory: state %.1f MiB (estimate), peak RSS %.1f MiB (the bench's parsed pods included)\n",
           (double)st.bytes / 1048576.0, (double)peak_rss_kib() / 1024.0);
    /* FGD after the memory line: its two states would count in the peak RSS */
    gs_ext_state *sf = fill(nnodes, names, GS_EXT_SCORE_FGD, false);
    gs_ext_state *sd = fill(nnodes, names, GS_EXT_SCORE_FGD, true);
    for (int z = 0; z < 2; z++) {
        if (measure_prioritize(sf, pod, names, sizes[z], iter, t, &ar, "fgd") ||
            measure_prioritize(sd, pod, names, sizes[z], iter, t, &ar, "fgd distinct"))
            return 1;
    }
    gs_ext_state_stats fst;
    gs_ext_state_stats_get(sd, &fst);
    printf("fgd target: %u pods, %u types (%llu built)\n", fst.fgd_pods, fst.fgd_types,
           (unsigned long long)fst.fgd_builds);
    gs_ext_state_free(sf);
    gs_ext_state_free(sd);
    gs_snapshot_free(&rs);
    gs_snapshot_free(&ps);
    gs_arena_free(&ar);
    gs_strbuf_free(&rec);
    for (long i = 0; i < nnodes; i++)
        free(names[i]);
    free(names);
    free(t);
    free(buf);
    free(ann);
    gs_ext_state_free(s);
    return 0;
}
