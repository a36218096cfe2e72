/*
 * bench_fgd.c - speed and sanity figures of FGD-method experiments on openb traces.
 *
 * usage: bench_fgd [-j THREADS] [-s FIRST-LAST] [-t TUNE] [-p POLICY[,POLICY...]]
 *                  NODE_CSV POD_CSV [POD_CSV...]
 *   defaults: -j 2, -s 42-51, -t 1.3, the six paper policies.
 * For every pod CSV (a trace): the workload preparation time and the empty-cluster
 * fragmentation; one single-threaded experiment per policy on the first seed (its time and
 * final MilliGpu allocation); then all policies x seeds on THREADS threads sharing one
 * workload (wall time), with per-policy mean allocation at x = 100 and x = 130 over the
 * seeds and the mean final allocation. Output is plain text on stdout.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpusched/sim.h"

#include "bench_util.h"

#define MAX_POLICIES 16
#define MAX_SEEDS 1000

typedef struct task {
    const gs_fgd_workload *w;
    const char *policy;
    uint64_t seed;
    double tune;
    double x100, x130, final, seconds;
    int rc;
    char msg[GS_ERR_MSG_MAX];
} task;

typedef struct pool {
    task *tasks;
    uint32_t n;
    uint32_t next;
    pthread_mutex_t lock;
} pool;

static double cell(const gs_fgd_result *r, uint32_t x)
{
    return x < r->curves.nx ? r->curves.alloc[x] : NAN;
}

static void run_task(task *t)
{
    gs_fgd_opts o;
    gs_fgd_opts_defaults(&o);
    o.policy = t->policy;
    o.seed = t->seed;
    o.tune = t->tune;
    gs_fgd_result r;
    gs_error err;
    gs_error_clear(&err);
    double t0 = now();
    t->rc = gs_fgd_run(t->w, &o, &r, &err);
    t->seconds = now() - t0;
    if (t->rc < 0) {
        snprintf(t->msg, sizeof t->msg, "%s", err.msg);
        return;
    }
    t->x100 = cell(&r, 100);
    t->x130 = cell(&r, 130);
    t->final = 100.0 * (double)r.summary.milli_used / (double)r.summary.milli_total;
    gs_fgd_result_free(&r);
}

static void *worker(void *arg)
{
    pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        uint32_t i = p->next++;
        pthread_mutex_unlock(&p->lock);
        if (i >= p->n)
            return NULL;
        run_task(&p->tasks[i]);
    }
}

/* Strict integer argument (gs_parse_i64); -1 when malformed. */
static int64_t int_arg(const char *s)
{
    int64_t v;
    return gs_parse_i64(s, strlen(s), &v) == 0 && v >= 0 ? v : -1;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_fgd [-j THREADS] [-s FIRST-LAST] [-t TUNE] "
                    "[-p POLICY[,POLICY...]] NODE_CSV POD_CSV [POD_CSV...]\n");
}

int main(int argc, char **argv)
{
    int threads = 2;
    unsigned long first = 42, last = 51;
    double tune = 1.3;
    const char *policies[MAX_POLICIES];
    uint32_t npol = 0;
    char *policy_arg = NULL;
    int a = 1;
    for (; a < argc && argv[a][0] == '-'; a++) {
        if (a + 1 >= argc) {
            usage();
            return 2;
        }
        if (!strcmp(argv[a], "-j")) {
            int64_t v = int_arg(argv[++a]);
            threads = v > 0 && v <= 256 ? (int)v : -1;
        } else if (!strcmp(argv[a], "-s")) {
            const char *range = argv[++a], *dash = strchr(range, '-');
            char lo[32];
            if (!dash || (size_t)(dash - range) >= sizeof lo) {
                usage();
                return 2;
            }
            memcpy(lo, range, (size_t)(dash - range));
            lo[dash - range] = 0;
            int64_t f = int_arg(lo), l = int_arg(dash + 1);
            if (f < 0 || l < f || l - f >= MAX_SEEDS) {
                usage();
                return 2;
            }
            first = (unsigned long)f;
            last = (unsigned long)l;
        } else if (!strcmp(argv[a], "-t")) {
            char *end;
            tune = strtod(argv[++a], &end);
            if (*end || !(tune <= 1000)) {
                usage();
                return 2;
            }
        } else if (!strcmp(argv[a], "-p")) {
            policy_arg = argv[++a];
        } else {
            usage();
            return 2;
        }
    }
    if (argc - a < 2 || threads < 1 || threads > 256) {
        usage();
        return 2;
    }
    if (policy_arg) {
        for (char *s = strtok(policy_arg, ","); s && npol < MAX_POLICIES; s = strtok(NULL, ","))
            policies[npol++] = s;
    } else {
        uint32_t n;
        const gs_fgd_policy_info *info = gs_fgd_policies(&n);
        for (uint32_t i = 0; i < 6 && i < n; i++)
            policies[npol++] = info[i].name;
    }
    for (uint32_t i = 0; i < npol; i++)
        if (gs_fgd_policy_find(policies[i], NULL) < 0) {
            fprintf(stderr, "bench_fgd: unknown policy %s\n", policies[i]);
            return 2;
        }
    const char *node_csv = argv[a++];
    uint32_t nseeds = (uint32_t)(last - first + 1);
    int status = 0;
    for (; a < argc; a++) {
        gs_openb rows;
        gs_openb_init(&rows);
        gs_error err;
        gs_error_clear(&err);
        double t0 = now();
        if (gs_openb_read_nodes(&rows, node_csv, NULL, &err) < 0 ||
            gs_openb_read_pods(&rows, argv[a], NULL, &err) < 0) {
            char buf[1024];
            gs_error_format(&err, buf, sizeof buf);
            fprintf(stderr, "bench_fgd: %s\n", buf);
            gs_openb_free(&rows);
            status = 1;
            continue;
        }
        double t_read = now() - t0;
        t0 = now();
        gs_fgd_workload *w = gs_fgd_workload_new(rows.nodes.v, (uint32_t)rows.nodes.n, rows.pods.v,
                                                 (uint32_t)rows.pods.n, NULL, &err);
        double t_prep = now() - t0;
        if (!w) {
            fprintf(stderr, "bench_fgd: %s: %s\n", argv[a], err.msg);
            gs_openb_free(&rows);
            status = 1;
            continue;
        }
        const gs_frag_target *tg = gs_fgd_workload_target(w);
        printf("trace %s\n", argv[a]);
        printf("  %u nodes, %u GPUs, %u pods (GPU request %.2f%% of capacity), read %.3fs, "
               "prepare %.3fs\n",
               gs_fgd_workload_nnodes(w), gs_fgd_workload_gpus(w), gs_fgd_workload_npods(w),
               100.0 * (double)gs_fgd_workload_gpu_request(w) / (1000.0 * gs_fgd_workload_gpus(w)),
               t_read, t_prep);
        printf("  target workload: %u of %u keys cover %.2f%%; empty-cluster fragmentation "
               "%.3f%% of capacity\n",
               tg->ntypes, tg->nkeys, 100 * tg->coverage,
               100.0 * gs_fgd_workload_empty_frag(w) / 1000.0 / gs_fgd_workload_gpus(w));

        /* one experiment per policy, one thread */
        printf("  single run, seed %lu, tune %.2f, one thread:\n", first, tune);
        for (uint32_t i = 0; i < npol; i++) {
            task t = {w, policies[i], first, tune, 0, 0, 0, 0, 0, {0}};
            run_task(&t);
            if (t.rc < 0) {
                printf("    %-15s error: %s\n", policies[i], t.msg);
                status = 1;
                continue;
            }
            printf("    %-15s %7.3fs  x=100 %6.2f%%  x=130 %6.2f%%  final MilliGpu %6.2f%%\n",
                   policies[i], t.seconds, t.x100, t.x130, t.final);
        }

        /* all policies x seeds on the thread pool */
        pool p = {calloc((size_t)npol * nseeds, sizeof(task)), npol * nseeds, 0,
                  PTHREAD_MUTEX_INITIALIZER};
        if (!p.tasks) {
            fprintf(stderr, "bench_fgd: out of memory\n");
            return 1;
        }
        for (uint32_t i = 0; i < npol; i++)
            for (uint32_t s = 0; s < nseeds; s++)
                p.tasks[i * nseeds + s] = (task){w, policies[i], first + s, tune, 0, 0, 0, 0, 0, {0}};
        pthread_t *th = calloc((size_t)threads, sizeof *th);
        t0 = now();
        for (int k = 0; k < threads; k++)
            pthread_create(&th[k], NULL, worker, &p);
        for (int k = 0; k < threads; k++)
            pthread_join(th[k], NULL);
        double wall = now() - t0;
        printf("  %u policies x %u seeds (%lu..%lu) on %d threads: %.2fs wall\n", npol, nseeds,
               first, last, threads, wall);
        printf("    %-15s %9s %9s %9s %9s\n", "policy", "mean x100", "mean x130", "final", "cpu s/run");
        for (uint32_t i = 0; i < npol; i++) {
            double m100 = 0, m130 = 0, mf = 0, secs = 0;
            uint32_t ok = 0;
            for (uint32_t s = 0; s < nseeds; s++) {
                const task *t = &p.tasks[i * nseeds + s];
                if (t->rc < 0) {
                    status = 1;
                    continue;
                }
                m100 += t->x100;
                m130 += t->x130;
                mf += t->final;
                secs += t->seconds;
                ok++;
            }
            if (!ok)
                continue;
            printf("    %-15s %8.2f%% %8.2f%% %8.2f%% %9.3f\n", policies[i], m100 / ok, m130 / ok,
                   mf / ok, secs / ok);
        }
        free(th);
        free(p.tasks);
        gs_fgd_workload_free(w);
        gs_openb_free(&rows);
    }
    return status;
}
