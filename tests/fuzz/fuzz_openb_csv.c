/*
 * fuzz_openb_csv.c - libFuzzer target for the simulator's trace readers.
 *
 * The first byte picks what the rest is: 0 = an openb node CSV (run against a fixed pod
 * list), 1 = an openb pod CSV (run against a fixed cluster), 2 = a JSON-lines trace. Every
 * accepted input then goes further: openb rows become snapshot objects and their replay
 * times are read back; small workloads run FGD-method experiments (fgd and random, with and
 * without tuning) whose results must keep the invariants below. A failure must be one of the
 * input error codes; anything else aborts.
 *
 * Invariants: one event per pod of the tuned list; A never decreases; 0 <= U <= A and U never
 * exceeds the capacity; fragmentation is finite and within [0, idle]; scheduled + failed =
 * events; curves have ceil(100 * tune) + 1 cells.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char fixed_nodes[] = "sn,cpu_milli,memory_mib,gpu,model\n"
                                  "a,32000,131072,4,V100M16\n"
                                  "b,96000,393216,8,G2\n"
                                  "c,8000,61440,1,P100\n";
static const char fixed_pods[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                                 "p0,4000,8192,1,500,\n"
                                 "p1,12000,16384,1,1000,G2\n"
                                 "p2,2000,4096,0,0,\n"
                                 "p3,16000,32768,2,1000,V100M16|G2\n"
                                 "p4,6000,12288,1,250,\n";

static void check_code(const gs_error *err)
{
    switch (err->code) {
    case GS_ERR_PARSE:
    case GS_ERR_INVALID:
    case GS_ERR_LIMIT:
    case GS_ERR_NOMEM:
        return;
    default:
        abort();
    }
}

static void check_run(const gs_fgd_workload *w, const char *policy, double tune)
{
    gs_fgd_opts o;
    gs_fgd_opts_defaults(&o);
    o.policy = policy;
    o.tune = tune;
    o.seed = 3;
    gs_fgd_result r;
    gs_error err;
    gs_error_clear(&err);
    if (gs_fgd_run(w, &o, &r, &err) < 0) {
        if (err.code != GS_ERR_LIMIT && err.code != GS_ERR_NOMEM)
            abort();
        return;
    }
    int64_t cap = (int64_t)gs_fgd_workload_gpus(w) * 1000, prev = 0;
    if (r.summary.scheduled + r.summary.failed != r.nevents)
        abort();
    for (uint32_t e = 0; e < r.nevents; e++) {
        const gs_fgd_event *ev = &r.events[e];
        if (ev->arrived_milli < prev || ev->used_milli < 0 || ev->used_milli > ev->arrived_milli ||
            ev->used_milli > cap)
            abort();
        double idle = (double)(cap - ev->used_milli);
        if (!isfinite(ev->frag_milli) || ev->frag_milli < -1e-6 || ev->frag_milli > idle + 1e-6)
            abort();
        prev = ev->arrived_milli;
    }
    if (tune > 0 && r.curves.nx != (uint32_t)ceil(tune * 100.0 - 1e-9) + 1)
        abort();
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_fgd_csv_row(&r, GS_FGD_CSV_ALLOC, "fuzz", &sb);
    gs_fgd_csv_fail_rows(&r, "fuzz", &sb);
    gs_strbuf_free(&sb);
    gs_fgd_result_free(&r);
}

static void to_snapshot(const gs_openb *t)
{
    gs_snapshot snap;
    gs_snapshot_init(&snap);
    gs_error err;
    gs_error_clear(&err);
    if (gs_openb_add_nodes(&snap, t, &err) == 0 && gs_openb_add_pods(&snap, t, NULL, &err) == 0) {
        int64_t *a = malloc(sizeof(int64_t) * (snap.pods.n + 1));
        int64_t *d = malloc(sizeof(int64_t) * (snap.pods.n + 1));
        if (a && d && gs_trace_times(&snap, a, d, &err) < 0)
            abort(); /* times written by gs_openb_add_pods always read back */
        free(a);
        free(d);
    } else {
        check_code(&err);
    }
    gs_snapshot_free(&snap);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0] % 3;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    gs_error err;
    gs_error_clear(&err);
    if (mode == 2) {
        gs_snapshot snap;
        gs_snapshot_init(&snap);
        gs_trace_limits lim = {0, 4096, 256};
        if (gs_trace_parse_jsonl(&snap, "fuzz.jsonl", text, len, &lim, &err) == 0) {
            int64_t *a = malloc(sizeof(int64_t) * (snap.pods.n + 1));
            int64_t *d = malloc(sizeof(int64_t) * (snap.pods.n + 1));
            if (a && d && gs_trace_times(&snap, a, d, &err) < 0)
                abort(); /* the reader wrote canonical times */
            free(a);
            free(d);
        } else {
            check_code(&err);
        }
        gs_snapshot_free(&snap);
        return 0;
    }
    gs_openb t;
    gs_openb_init(&t);
    gs_openb_limits lim = {0, 300, 256};
    int rc;
    if (mode == 0)
        rc = gs_openb_parse_nodes(&t, "fuzz.csv", text, len, &lim, &err);
    else
        rc = gs_openb_parse_nodes(&t, "nodes.csv", fixed_nodes, sizeof fixed_nodes - 1, NULL, &err);
    if (rc == 0) {
        if (mode == 1)
            rc = gs_openb_parse_pods(&t, "fuzz.csv", text, len, &lim, &err);
        else
            rc = gs_openb_parse_pods(&t, "pods.csv", fixed_pods, sizeof fixed_pods - 1, NULL, &err);
    }
    if (rc < 0) {
        check_code(&err);
        gs_openb_free(&t);
        return 0;
    }
    to_snapshot(&t);
    gs_fgd_workload *w = gs_fgd_workload_new(t.nodes.v, (uint32_t)t.nodes.n, t.pods.v,
                                             (uint32_t)t.pods.n, NULL, &err);
    if (!w) {
        check_code(&err);
    } else {
        check_run(w, "fgd", 0);
        check_run(w, "random", 0);
        /* tuning to 130% of a large cluster with tiny pods can take a million clones: bound */
        if ((int64_t)gs_fgd_workload_gpus(w) * 1000 <= 200000)
            check_run(w, "fgd", 1.3);
        gs_fgd_workload_free(w);
    }
    gs_openb_free(&t);
    return 0;
}
