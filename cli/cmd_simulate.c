/*
 * cmd_simulate.c - `gpusched simulate [options] [MANIFEST...]` and
 * `gpusched simulate merge SHARD.json...` (docs/cli/simulate.md).
 *
 * A sweep is the list of runs variants x policies x seeds, in that order; run i of the
 * sweep has index i whatever the thread count or the shard split, and `--shard I/N` runs
 * the runs with index % N == I. Variants are the inputs as given, plus, with
 * --compare-taint, the same inputs with the GPU NoSchedule taint added (and GPU pods
 * tolerating it).
 *
 * Replay: every variant's snapshot is built once (manifests, openb CSVs, JSON-lines trace,
 * then the what-if overrides) and shared read-only by its runs; each run builds its own
 * cluster (gs_replay_run). FGD: one gs_fgd_workload shared by every run. Runs go to a
 * pool of -j pthreads; each writes only its own result slot. When all are done the
 * results are checked (the first error in run order wins: nothing is written), put in
 * index order, and every output is built from that report alone, so the JSON of the
 * shards merges into byte-identical outputs (`simulate merge`).
 *
 * A progress bar goes to stderr only when stderr is a terminal and --quiet is not given;
 * stdout never carries timings, so the same inputs give the same bytes.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "cmd_simulate.h"
#include "output.h"

#include "gpusched/live.h"
#include "gpusched/mig.h"
#include "gpusched/replay.h"
#include "gpusched/report.h"
#include "gpusched/sim.h"

#define SIM_MAX_RUNS 1000000u      /* runs in a sweep */
#define SIM_MAX_SHARD_RUNS 100000u /* runs in one invocation: more need --shard */
#define SIM_MAX_SEEDS 100000u
#define SIM_MAX_POLICIES 64
#define SIM_MAX_JOBS 256
#define CMP_MAX_COLS 16 /* variants side by side (--mig-config names) */
#define SIM_MAX_JSON_BYTES ((size_t)1 << 30)
#define VARIANT_TAINT "gpu-taint" /* "gpu-taint:KEY" when the key is not nvidia.com/gpu */

#define VARIANT_MIG "mig-dynamic"
#define VARIANT_MIG_CONFIG "mig-config:" /* "mig-config:NAME", "+mig-dynamic" when dynamic */

static bool is_taint_variant(const char *v)
{
    return strncmp(v, VARIANT_TAINT, 9) == 0 && (v[9] == '\0' || v[9] == ':');
}

static bool is_mig_variant(const char *v) { return strcmp(v, VARIANT_MIG) == 0; }

const char cli_simulate_usage[] =
    "usage: gpusched simulate [options] [MANIFEST...]\n"
    "       gpusched simulate merge [output options] SHARD.json...\n"
    "\n"
    "Replay a workload on a cluster with the scheduling engine (--method replay, the\n"
    "default): arrivals, departures, the pending queue, retries, preemption, quotas,\n"
    "taints and affinity. Or run the FGD paper's experiment on openb traces (--method fgd).\n"
    "Several policies and seeds run in parallel; results as text, JSON, CSV and HTML.\n"
    "\n"
    "Inputs (replay: any mix; fgd: --nodes and --pods):\n"
    "  MANIFEST...               manifests or kubectl -o json/yaml dumps (files, directories\n"
    "                            or -); pods carry gpusched.io/arrival (RFC3339 or seconds)\n"
    "                            and gpusched.io/duration (\"2h30m\", seconds; absent: forever)\n"
    "                            None of these (or --kubeconfig/--context): the cluster of\n"
    "                            the kubeconfig is the starting cluster (with --trace or\n"
    "                            --pods: the workload replayed on it)\n"
    "      --nodes FILE          openb node CSV (openb_node_list_*.csv)\n"
    "      --pods FILE           openb pod CSV: arrival = creation_time, duration from the\n"
    "                            deletion time\n"
    "      --trace FILE          JSON-lines trace, one pod per line\n"
    "      --workload NAME       name in the outputs (default: the pod or trace file name,\n"
    "                            else the manifests' directory or first file)\n"
    "\n"
    "Sweep:\n"
    "      --method NAME         replay (default) or fgd\n"
    "      --policy LIST         replay: default, binpack, spread, rtcr (default: default);\n"
    "                            fgd: random, dotprod, gpu-clustering, gpu-packing, bestfit,\n"
    "                            fgd, k8s-least, k8s-most (default: fgd)\n"
    "      --seeds LIST          e.g. 42, 42-51 or 1,5,9 (default 42); replay: the engine's\n"
    "                            tie-break seed\n"
    "      --tune R              fgd: total GPU request / capacity (default 1.3; 0: as is)\n"
    "  -j, --jobs N              runs in parallel (default 1)\n"
    "      --shard I/N           only the runs whose index modulo N is I\n"
    "\n"
    "Replay:\n"
    "      --lose-preempted      preempted pods are lost (default: requeued)\n"
    "      --no-preemption       never preempt lower-priority pods\n"
    "      --no-quota            ignore ResourceQuotas\n"
    "      --sample-every SECS   seconds between samples (default: span / 1000)\n"
    "      --horizon SECS        stop at this time (default: when nothing is left)\n"
    "      --keep-running        pods never leave once started (arrival order kept): the\n"
    "                            trace as a growing load, as the FGD experiment sees it\n"
    "      --mig POLICY          static (default): MIG layouts as given; dynamic: an idle\n"
    "                            MIG GPU is re-partitioned for a pending MIG profile\n"
    "      --mig-delay DURATION  dynamic MIG: time a re-partition takes (default 2m)\n"
    "      --compare-mig         run everything twice: static and dynamic MIG, side by side\n"
    "      --mig-config LIST     what-if: every MIG-capable GPU node gets this MIG config on\n"
    "                            all its GPUs (built-in: all-balanced, all-1g.10gb, ...; or\n"
    "                            from --mig-parted; label: the node's nvidia.com/mig.config);\n"
    "                            several: one run each, side by side\n"
    "      --mig-parted FILE     mig-parted file the --mig-config names are looked up in\n"
    "\n"
    "What-if overrides (replay):\n"
    "      --gpu-taint MODE      add: GPU nodes get KEY=true:NoSchedule and pods requesting\n"
    "                            GPUs tolerate it; add-only: the taint, tolerations unchanged;\n"
    "                            strip: remove KEY taints from GPU nodes\n"
    "      --gpu-taint-key KEY   the taint key (default nvidia.com/gpu)\n"
    "      --compare-taint       run everything twice: as given and with --gpu-taint add,\n"
    "                            side by side\n"
    "      --cpu-nodes MODE      include (default) or exclude nodes without GPUs\n"
    "      --scale F             workload scale: 0.5 keeps every other pod, 2 clones each\n"
    "      --priority-class LIST NAME=VALUE,... PriorityClass values\n"
    "      --qos-map LIST        openb qos to PriorityClass: QOS=CLASS:VALUE,... (default\n"
    "                            LS=latency-sensitive:10000,BE=best-effort:0,\n"
    "                            Burstable=burstable:1000,*=burstable:1000)\n"
    "\n"
    "Output:\n"
    "  -o, --output FORMAT       standard output: text (default), json, csv or html\n"
    "      --json FILE           the JSON report (what merge reads)\n"
    "      --csv FILE            allocation curves (analysis_allo_discrete.csv columns), and\n"
    "                            next to it BASE-frag.csv, BASE-frag-ratio.csv, BASE-fail.csv\n"
    "                            and (replay) BASE-pending.csv\n"
    "      --html FILE           the HTML report\n"
    "      --title TEXT          title of the HTML report\n"
    "  -q, --quiet               no progress bar (it is shown only on a terminal)\n"
    "  -v, --verbose             report the cluster read on stderr\n"
    "  -h, --help                show this help\n"
    "\n"
    "Cluster (read through the API server when no input is given, as kubectl):\n"
    "      --kubeconfig FILE     the kubeconfig file (default: $KUBECONFIG, ~/.kube/config,\n"
    "                            else the service account of the pod it runs in)\n"
    "      --context NAME        the kubeconfig context (default: its current-context)\n"
    "  -A, --all-namespaces      every namespace (the default; -n does not apply: the\n"
    "                            replay is of the whole cluster)\n"
    "      --request-timeout D   limit of each request (\"30s\", \"2m\"; default 60s; 0: none)\n"
    "\n"
    "Exit status: 0 success, 2 usage or input error, 3 internal error.\n";

static const char merge_usage[] =
    "usage: gpusched simulate merge [options] SHARD.json...\n"
    "\n"
    "Join the JSON outputs of the shards of one sweep (gpusched simulate --shard I/N --json)\n"
    "into the outputs a single run would have written.\n"
    "\n"
    "Options:\n"
    "  -o, --output FORMAT       standard output: text (default), json, csv or html\n"
    "      --json FILE  --csv FILE  --html FILE  --title TEXT   as for gpusched simulate\n"
    "  -q, --quiet               accepted for symmetry (merge shows no progress)\n"
    "  -h, --help                show this help\n";

enum {
    OPT_HELP,
    OPT_NODES,
    OPT_PODS,
    OPT_TRACE,
    OPT_WORKLOAD,
    OPT_METHOD,
    OPT_POLICY,
    OPT_SEEDS,
    OPT_TUNE,
    OPT_JOBS,
    OPT_SHARD,
    OPT_LOSE,
    OPT_NO_PREEMPTION,
    OPT_NO_QUOTA,
    OPT_SAMPLE,
    OPT_HORIZON,
    OPT_KEEP_RUNNING,
    OPT_MIG,
    OPT_MIG_DELAY,
    OPT_COMPARE_MIG,
    OPT_MIG_CONFIG,
    OPT_MIG_PARTED,
    OPT_GPU_TAINT,
    OPT_TAINT_KEY,
    OPT_COMPARE,
    OPT_CPU_NODES,
    OPT_SCALE,
    OPT_PRIORITY_CLASS,
    OPT_QOS_MAP,
    OPT_OUTPUT,
    OPT_JSON,
    OPT_CSV,
    OPT_HTML,
    OPT_TITLE,
    OPT_QUIET,
    OPT_VERBOSE,
};

static const cli_opt sim_opts[] = {
    {"help", 'h', false, OPT_HELP},
    {"nodes", 0, true, OPT_NODES},
    {"pods", 0, true, OPT_PODS},
    {"trace", 0, true, OPT_TRACE},
    {"workload", 0, true, OPT_WORKLOAD},
    {"method", 0, true, OPT_METHOD},
    {"policy", 0, true, OPT_POLICY},
    {"seeds", 0, true, OPT_SEEDS},
    {"tune", 0, true, OPT_TUNE},
    {"jobs", 'j', true, OPT_JOBS},
    {"shard", 0, true, OPT_SHARD},
    {"lose-preempted", 0, false, OPT_LOSE},
    {"no-preemption", 0, false, OPT_NO_PREEMPTION},
    {"no-quota", 0, false, OPT_NO_QUOTA},
    {"sample-every", 0, true, OPT_SAMPLE},
    {"horizon", 0, true, OPT_HORIZON},
    {"keep-running", 0, false, OPT_KEEP_RUNNING},
    {"mig", 0, true, OPT_MIG},
    {"mig-delay", 0, true, OPT_MIG_DELAY},
    {"compare-mig", 0, false, OPT_COMPARE_MIG},
    {"mig-config", 0, true, OPT_MIG_CONFIG},
    {"mig-parted", 0, true, OPT_MIG_PARTED},
    {"gpu-taint", 0, true, OPT_GPU_TAINT},
    {"gpu-taint-key", 0, true, OPT_TAINT_KEY},
    {"compare-taint", 0, false, OPT_COMPARE},
    {"cpu-nodes", 0, true, OPT_CPU_NODES},
    {"scale", 0, true, OPT_SCALE},
    {"priority-class", 0, true, OPT_PRIORITY_CLASS},
    {"qos-map", 0, true, OPT_QOS_MAP},
    {"output", 'o', true, OPT_OUTPUT},
    {"json", 0, true, OPT_JSON},
    {"csv", 0, true, OPT_CSV},
    {"html", 0, true, OPT_HTML},
    {"title", 0, true, OPT_TITLE},
    {"quiet", 'q', false, OPT_QUIET},
    {"verbose", 'v', false, OPT_VERBOSE},
    CLI_LIVE_OPTS,
};

static const cli_opt merge_opts[] = {
    {"help", 'h', false, OPT_HELP},  {"output", 'o', true, OPT_OUTPUT},
    {"json", 0, true, OPT_JSON},     {"csv", 0, true, OPT_CSV},
    {"html", 0, true, OPT_HTML},     {"title", 0, true, OPT_TITLE},
    {"quiet", 'q', false, OPT_QUIET},
};

typedef enum out_format { OUT_TEXT = 0, OUT_JSON, OUT_CSV, OUT_HTML } out_format;

typedef struct outputs {
    out_format format;
    const char *json, *csv, *html, *title;
} outputs;

typedef struct sim_args {
    gs_sim_method method;
    const char **manifests;
    size_t nmanifests;
    const char *nodes, *pods, *trace, *workload;
    const char *policy_list;
    const char *policies[SIM_MAX_POLICIES];
    uint32_t npolicies;
    uint64_t *seeds;
    uint32_t nseeds;
    const char *seeds_text;
    double tune;
    bool has_tune;
    uint32_t jobs;
    uint32_t shard, nshards;
    bool lose, no_preemption, no_quota, keep_running;
    int64_t sample_every, horizon;
    gs_taint_override gpu_taint;
    bool taint_tolerate;
    const char *gpu_taint_text;
    const char *taint_key;
    bool compare;
    bool mig_dynamic, compare_mig;
    int64_t mig_delay;
    const char *mig_delay_text;
    const char *mig_configs[CMP_MAX_COLS]; /* --mig-config names */
    uint32_t nmig_configs;
    const char *mig_configs_text;
    const char *mig_parted;
    bool exclude_cpu_nodes;
    uint32_t scale_num, scale_den;
    const char *scale_text;
    gs_class_value *classes;
    uint32_t nclasses;
    const char *classes_text;
    gs_qos_class *qos;
    uint32_t nqos;
    const char *qos_text;
    outputs out;
    bool quiet;
    cli_live live;
    bool use_live;                 /* the starting cluster is the live cluster */
    struct gs_live_store *cluster; /* its objects, read once for every variant */
    gs_arena arena;
} sim_args;

/* ================================================================ argument parsing */

static int parse_format(const char *value, out_format *f, gs_error *err)
{
    static const char *const formats[] = {"text", "json", "csv", "html", NULL};
    int k = cli_parse_choice("--output", value, formats, err);
    if (k < 0)
        return -1;
    *f = (out_format)k;
    return 0;
}

/* "42", "42-51", "1,5,9", "1-3,7" */
static int parse_seeds(sim_args *a, const char *s, gs_error *err)
{
    GS_VEC(uint64_t) v = {NULL, 0, 0};
    const char *p = s;
    if (!*p)
        return gs_fail(err, GS_ERR_USAGE, "--seeds: empty list");
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *dash = memchr(p, '-', len);
        int64_t lo, hi;
        if (dash ? gs_parse_i64(p, (size_t)(dash - p), &lo) ||
                       gs_parse_i64(dash + 1, len - (size_t)(dash + 1 - p), &hi)
                 : gs_parse_i64(p, len, &lo) || (hi = lo, false)) {
            gs_vec_free(v);
            return gs_fail(err, GS_ERR_USAGE, "--seeds: expected N, A-B or a comma list, got \"%s\"", s);
        }
        if (lo < 0 || hi < lo || (uint64_t)(hi - lo) >= SIM_MAX_SEEDS ||
            v.n + (size_t)(hi - lo + 1) > SIM_MAX_SEEDS) {
            gs_vec_free(v);
            return gs_fail(err, GS_ERR_USAGE, "--seeds: \"%s\": seeds must be >= 0, ranges "
                           "ascending, at most %u seeds", s, SIM_MAX_SEEDS);
        }
        for (int64_t x = lo; x <= hi; x++)
            if (gs_vec_push(v, (uint64_t)x)) {
                gs_vec_free(v);
                return gs_fail(err, GS_ERR_NOMEM, "out of memory");
            }
        p += len;
        if (*p == ',' && !*++p) {
            gs_vec_free(v);
            return gs_fail(err, GS_ERR_USAGE, "--seeds: trailing comma");
        }
    }
    free(a->seeds);
    a->seeds = v.v;
    a->nseeds = (uint32_t)v.n;
    a->seeds_text = s;
    return 0;
}

static int parse_shard(sim_args *a, const char *s, gs_error *err)
{
    const char *slash = strchr(s, '/');
    int64_t i, n;
    if (!slash || gs_parse_i64(s, (size_t)(slash - s), &i) ||
        gs_parse_i64(slash + 1, strlen(slash + 1), &n) || n < 1 || n > SIM_MAX_RUNS || i < 0 ||
        i >= n)
        return gs_fail(err, GS_ERR_USAGE, "--shard: expected I/N with 0 <= I < N, got \"%s\"", s);
    a->shard = (uint32_t)i;
    a->nshards = (uint32_t)n;
    return 0;
}

static int parse_double(const char *what, const char *s, double lo, double hi, double *out,
                        gs_error *err)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (!*s || !end || *end || !(v >= lo && v <= hi))
        return gs_fail(err, GS_ERR_USAGE, "%s: expected a number from %g to %g, got \"%s\"", what,
                       lo, hi, s);
    *out = v;
    return 0;
}

static int parse_sim_args(int argc, char **argv, sim_args *a, bool *help, gs_error *err)
{
    cli_args it;
    cli_args_init(&it, argc, argv, 1, sim_opts, sizeof sim_opts / sizeof sim_opts[0]);
    const char *value;
    int id;
    int64_t v;
    a->method = GS_SIM_REPLAY;
    a->jobs = 1;
    a->nshards = 1;
    a->tune = 1.3;
    a->mig_delay = 120;
    while ((id = cli_args_next(&it, &value, err)) != CLI_ARG_END) {
        switch (id) {
        case CLI_ARG_ERROR: return -1;
        case CLI_ARG_POSITIONAL: a->manifests[a->nmanifests++] = value; break;
        case OPT_HELP: *help = true; return 0;
        case OPT_NODES: a->nodes = value; break;
        case OPT_PODS: a->pods = value; break;
        case OPT_TRACE: a->trace = value; break;
        case OPT_WORKLOAD:
            if (!*value)
                return gs_fail(err, GS_ERR_USAGE, "--workload: empty name");
            a->workload = value;
            break;
        case OPT_METHOD: {
            static const char *const methods[] = {"replay", "fgd", NULL};
            int k = cli_parse_choice("--method", value, methods, err);
            if (k < 0)
                return -1;
            a->method = k == 0 ? GS_SIM_REPLAY : GS_SIM_FGD;
            break;
        }
        case OPT_POLICY: a->policy_list = value; break;
        case OPT_SEEDS:
            if (parse_seeds(a, value, err))
                return -1;
            break;
        case OPT_TUNE:
            if (parse_double("--tune", value, 0, 100, &a->tune, err))
                return -1;
            a->has_tune = true;
            break;
        case OPT_JOBS:
            if (cli_parse_int("--jobs", value, 1, SIM_MAX_JOBS, &v, err))
                return -1;
            a->jobs = (uint32_t)v;
            break;
        case OPT_SHARD:
            if (parse_shard(a, value, err))
                return -1;
            break;
        case OPT_LOSE: a->lose = true; break;
        case OPT_NO_PREEMPTION: a->no_preemption = true; break;
        case OPT_NO_QUOTA: a->no_quota = true; break;
        case OPT_SAMPLE:
            if (cli_parse_int("--sample-every", value, 1, INT64_MAX / 4, &a->sample_every, err))
                return -1;
            break;
        case OPT_HORIZON:
            if (cli_parse_int("--horizon", value, 1, INT64_MAX / 4, &a->horizon, err))
                return -1;
            break;
        case OPT_KEEP_RUNNING: a->keep_running = true; break;
        case OPT_MIG: {
            static const char *const modes[] = {"static", "dynamic", NULL};
            int k = cli_parse_choice("--mig", value, modes, err);
            if (k < 0)
                return -1;
            a->mig_dynamic = k == 1;
            break;
        }
        case OPT_MIG_DELAY:
            if (gs_parse_duration(value, &a->mig_delay) || a->mig_delay > 366LL * 86400)
                return gs_fail(err, GS_ERR_USAGE,
                               "--mig-delay: expected a duration up to 366d (\"90s\", \"2m\", "
                               "seconds), got \"%s\"", value);
            a->mig_delay_text = value;
            break;
        case OPT_COMPARE_MIG: a->compare_mig = true; break;
        case OPT_MIG_CONFIG: {
            char *copy = gs_arena_strdup(&a->arena, value);
            if (!copy)
                return gs_fail(err, GS_ERR_NOMEM, "out of memory");
            a->nmig_configs = 0;
            a->mig_configs_text = value;
            for (char *q = copy; q;) {
                char *comma = strchr(q, ',');
                if (comma)
                    *comma = '\0';
                if (!*q)
                    return gs_fail(err, GS_ERR_USAGE, "--mig-config: empty name in \"%s\"", value);
                if (a->nmig_configs == CMP_MAX_COLS)
                    return gs_fail(err, GS_ERR_USAGE, "--mig-config: at most %d configs",
                                   CMP_MAX_COLS);
                for (uint32_t k = 0; k < a->nmig_configs; k++)
                    if (strcmp(a->mig_configs[k], q) == 0)
                        return gs_fail(err, GS_ERR_USAGE, "--mig-config: \"%s\" given twice", q);
                a->mig_configs[a->nmig_configs++] = q;
                q = comma ? comma + 1 : NULL;
            }
            break;
        }
        case OPT_MIG_PARTED: a->mig_parted = value; break;
        case OPT_GPU_TAINT: {
            static const char *const modes[] = {"add", "add-only", "strip", NULL};
            int k = cli_parse_choice("--gpu-taint", value, modes, err);
            if (k < 0)
                return -1;
            a->gpu_taint = k == 2 ? GS_TAINT_STRIP : GS_TAINT_ADD;
            a->taint_tolerate = k == 0;
            a->gpu_taint_text = modes[k];
            break;
        }
        case OPT_TAINT_KEY:
            if (!*value)
                return gs_fail(err, GS_ERR_USAGE, "--gpu-taint-key: empty key");
            a->taint_key = value;
            break;
        case OPT_COMPARE: a->compare = true; break;
        case OPT_CPU_NODES: {
            static const char *const modes[] = {"include", "exclude", NULL};
            int k = cli_parse_choice("--cpu-nodes", value, modes, err);
            if (k < 0)
                return -1;
            a->exclude_cpu_nodes = k == 1;
            break;
        }
        case OPT_SCALE:
            if (gs_whatif_parse_scale(value, &a->scale_num, &a->scale_den, err))
                return -1;
            a->scale_text = value;
            break;
        case OPT_PRIORITY_CLASS:
            if (gs_whatif_parse_classes(value, &a->arena, &a->classes, &a->nclasses, err))
                return -1;
            a->classes_text = value;
            break;
        case OPT_QOS_MAP:
            if (gs_whatif_parse_qos_map(value, &a->arena, &a->qos, &a->nqos, err))
                return -1;
            a->qos_text = value;
            break;
        case OPT_OUTPUT:
            if (parse_format(value, &a->out.format, err))
                return -1;
            break;
        case OPT_JSON: a->out.json = value; break;
        case OPT_CSV: a->out.csv = value; break;
        case OPT_HTML: a->out.html = value; break;
        case OPT_TITLE: a->out.title = value; break;
        case OPT_QUIET: a->quiet = true; break;
        case OPT_VERBOSE: a->live.verbose = true; break;
        default: {
            int r = cli_live_parse_opt(&a->live, id, value, err);
            if (r < 0)
                return -1;
            if (r == 0)
                return gs_fail(err, GS_ERR_INTERNAL, "unhandled option %d", id);
            break;
        }
        }
    }
    if (a->live.namespace_)
        return gs_fail(err, GS_ERR_USAGE,
                       "-n/--namespace does not apply: the replay is of the whole cluster (every pod "
                       "shares its nodes)");
    if (!a->nseeds && parse_seeds(a, "42", err))
        return -1;
    /* policies */
    const char *list = a->policy_list ? a->policy_list : a->method == GS_SIM_FGD ? "fgd" : "default";
    char *copy = gs_arena_strdup(&a->arena, list);
    if (!copy)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    for (char *p = copy; p;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (!*p)
            return gs_fail(err, GS_ERR_USAGE, "--policy: empty name in \"%s\"", list);
        if (a->npolicies == SIM_MAX_POLICIES)
            return gs_fail(err, GS_ERR_USAGE, "--policy: at most %d policies", SIM_MAX_POLICIES);
        for (uint32_t k = 0; k < a->npolicies; k++)
            if (strcmp(a->policies[k], p) == 0)
                return gs_fail(err, GS_ERR_USAGE, "--policy: \"%s\" given twice", p);
        if (a->method == GS_SIM_FGD) {
            if (gs_fgd_policy_find(p, err) < 0) {
                err->code = GS_ERR_USAGE;
                return -1;
            }
        } else {
            gs_config cfg;
            if (gs_config_policy(&cfg, p, err)) {
                err->code = GS_ERR_USAGE;
                return -1;
            }
        }
        a->policies[a->npolicies++] = p;
        p = comma ? comma + 1 : NULL;
    }
    /* method-specific rules */
    if (a->method == GS_SIM_FGD) {
        if (!a->nodes || !a->pods)
            return gs_fail(err, GS_ERR_USAGE, "--method fgd needs --nodes and --pods (openb CSVs)");
        if (a->nmanifests || a->trace || a->live.kubeconfig || a->live.context)
            return gs_fail(err, GS_ERR_USAGE,
                           "--method fgd reads openb CSVs only (no manifests, --trace or cluster)");
        if (a->gpu_taint != GS_TAINT_KEEP || a->compare || a->scale_text || a->classes_text ||
            a->qos_text || a->lose || a->no_preemption || a->no_quota || a->sample_every ||
            a->horizon || a->taint_key || a->keep_running || a->mig_dynamic || a->compare_mig ||
            a->mig_delay_text || a->nmig_configs || a->mig_parted)
            return gs_fail(err, GS_ERR_USAGE,
                           "--method fgd has no taints, priorities, quotas or time: the replay "
                           "options and --gpu-taint, --compare-taint, --scale (use --tune), "
                           "--priority-class, --qos-map do not apply");
    } else {
        /* the live cluster: asked for, or no input at all; manifests and --nodes describe
         * a cluster (mixing them with one is refused), --trace and --pods a workload */
        if ((a->nmanifests || a->nodes) &&
            cli_live_validate(&a->live, a->nmanifests + (a->nodes != NULL), "", err) != 0)
            return -1;
        a->use_live = a->live.kubeconfig || a->live.context ||
                      (!a->nmanifests && !a->nodes && !a->pods && !a->trace);
        if (a->use_live &&
            cli_live_validate(&a->live, 0, "manifests, --nodes/--pods openb CSVs or --trace", err) != 0)
            return -1;
        if (a->has_tune)
            return gs_fail(err, GS_ERR_USAGE, "--tune is for --method fgd (replay: --scale)");
        if (a->compare && a->gpu_taint != GS_TAINT_KEEP)
            return gs_fail(err, GS_ERR_USAGE, "--compare-taint and --gpu-taint exclude each other");
        if (a->compare_mig && a->mig_dynamic)
            return gs_fail(err, GS_ERR_USAGE, "--compare-mig runs both MIG policies: drop --mig");
        if ((a->compare_mig || a->mig_dynamic) && a->compare)
            return gs_fail(err, GS_ERR_USAGE, "compare one thing at a time: --compare-taint does "
                                              "not combine with --compare-mig or --mig dynamic");
        if (a->mig_delay_text && !a->compare_mig && !a->mig_dynamic)
            return gs_fail(err, GS_ERR_USAGE, "--mig-delay needs --mig dynamic or --compare-mig");
        if (a->mig_parted && !a->nmig_configs)
            return gs_fail(err, GS_ERR_USAGE, "--mig-parted needs --mig-config (the config names)");
        if (a->nmig_configs > 1 && (a->compare || a->compare_mig))
            return gs_fail(err, GS_ERR_USAGE, "compare one thing at a time: several --mig-config "
                                              "names do not combine with --compare-taint or "
                                              "--compare-mig");
    }
    uint64_t variants = a->compare || a->compare_mig ? 2 : a->nmig_configs > 1 ? a->nmig_configs : 1;
    uint64_t total = variants * a->npolicies * a->nseeds;
    if (total > SIM_MAX_RUNS)
        return gs_fail(err, GS_ERR_USAGE, "more than %u runs", SIM_MAX_RUNS);
    if ((total + a->nshards - 1) / a->nshards > SIM_MAX_SHARD_RUNS)
        return gs_fail(err, GS_ERR_USAGE,
                       "%llu runs in one invocation (at most %u): split the sweep with --shard",
                       (unsigned long long)((total + a->nshards - 1) / a->nshards),
                       SIM_MAX_SHARD_RUNS);
    return 0;
}

/* The default workload name: the pod CSV's or trace's file name without directory and
 * extension; for manifests only, one directory's own name, else the directory they all
 * share ("examples/incident/a.yaml examples/incident/b.yaml" -> "incident"), else the
 * first one's file name. */
static const char *base_name(sim_args *a, const char *path, bool strip_ext)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    const char *s = path;
    for (size_t i = 0; i < n; i++)
        if (path[i] == '/')
            s = path + i + 1;
    size_t len = (size_t)(path + n - s);
    if (strip_ext) {
        const char *dot = NULL;
        for (const char *q = s; q < path + n; q++)
            if (*q == '.')
                dot = q;
        if (dot && dot != s)
            len = (size_t)(dot - s);
    }
    return gs_arena_strndup(&a->arena, s, len);
}

static const char *default_workload(sim_args *a)
{
    if (a->use_live) /* "context NAME": NAME; "in-cluster" */
        return strncmp(a->live.source, "context ", 8) == 0 ? a->live.source + 8 : a->live.source;
    if (a->pods || a->trace)
        return base_name(a, a->pods ? a->pods : a->trace, true);
    if (!a->nmanifests || strcmp(a->manifests[0], "-") == 0)
        return "stdin";
    const char *first = a->manifests[0];
    struct stat st;
    if (a->nmanifests == 1 && stat(first, &st) == 0 && S_ISDIR(st.st_mode))
        return base_name(a, first, false); /* one directory: its own name */
    const char *slash = strrchr(first, '/');
    size_t dirlen = slash ? (size_t)(slash - first) : 0;
    bool shared = slash != NULL && dirlen > 0;
    for (size_t i = 1; shared && i < a->nmanifests; i++) {
        const char *m = a->manifests[i];
        const char *ms = strrchr(m, '/');
        shared = ms && (size_t)(ms - m) == dirlen && memcmp(m, first, dirlen) == 0;
    }
    if (shared) {
        char *dir = gs_arena_strndup(&a->arena, first, dirlen);
        return dir && strcmp(dir, ".") != 0 && strcmp(dir, "..") != 0 ? base_name(a, dir, false)
                                                                     : base_name(a, first, true);
    }
    return base_name(a, first, true);
}

/* The options that define the sweep's runs and results (merge compares them). */
static const char *fingerprint(sim_args *a)
{
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_strbuf_printf(&sb, "method=%s", gs_sim_method_name(a->method));
    if (a->use_live)
        gs_strbuf_printf(&sb, " cluster=%s", a->live.source);
    for (size_t i = 0; i < a->nmanifests; i++)
        gs_strbuf_printf(&sb, " manifest=%s", a->manifests[i]);
    if (a->nodes)
        gs_strbuf_printf(&sb, " nodes=%s", a->nodes);
    if (a->pods)
        gs_strbuf_printf(&sb, " pods=%s", a->pods);
    if (a->trace)
        gs_strbuf_printf(&sb, " trace=%s", a->trace);
    gs_strbuf_printf(&sb, " workload=%s policy=", a->workload);
    for (uint32_t k = 0; k < a->npolicies; k++)
        gs_strbuf_printf(&sb, "%s%s", k ? "," : "", a->policies[k]);
    gs_strbuf_printf(&sb, " seeds=%s", a->seeds_text ? a->seeds_text : "42");
    if (a->method == GS_SIM_FGD)
        gs_strbuf_printf(&sb, " tune=%g", a->tune);
    if (a->lose)
        gs_strbuf_puts(&sb, " lose-preempted");
    if (a->no_preemption)
        gs_strbuf_puts(&sb, " no-preemption");
    if (a->no_quota)
        gs_strbuf_puts(&sb, " no-quota");
    if (a->sample_every)
        gs_strbuf_printf(&sb, " sample-every=%lld", (long long)a->sample_every);
    if (a->horizon)
        gs_strbuf_printf(&sb, " horizon=%lld", (long long)a->horizon);
    if (a->keep_running)
        gs_strbuf_puts(&sb, " keep-running");
    if (a->gpu_taint_text)
        gs_strbuf_printf(&sb, " gpu-taint=%s", a->gpu_taint_text);
    if (a->taint_key)
        gs_strbuf_printf(&sb, " gpu-taint-key=%s", a->taint_key);
    if (a->compare)
        gs_strbuf_puts(&sb, " compare-taint");
    if (a->mig_dynamic)
        gs_strbuf_puts(&sb, " mig=dynamic");
    if (a->compare_mig)
        gs_strbuf_puts(&sb, " compare-mig");
    if (a->mig_delay_text)
        gs_strbuf_printf(&sb, " mig-delay=%lld", (long long)a->mig_delay);
    if (a->mig_configs_text)
        gs_strbuf_printf(&sb, " mig-config=%s", a->mig_configs_text);
    if (a->mig_parted)
        gs_strbuf_printf(&sb, " mig-parted=%s", a->mig_parted);
    if (a->exclude_cpu_nodes)
        gs_strbuf_puts(&sb, " cpu-nodes=exclude");
    if (a->scale_text)
        gs_strbuf_printf(&sb, " scale=%u/%u", a->scale_num, a->scale_den);
    if (a->classes_text)
        gs_strbuf_printf(&sb, " priority-class=%s", a->classes_text);
    if (a->qos_text)
        gs_strbuf_printf(&sb, " qos-map=%s", a->qos_text);
    const char *s = sb.oom ? NULL : gs_arena_strdup(&a->arena, gs_strbuf_cstr(&sb));
    gs_strbuf_free(&sb);
    return s;
}

/* ================================================================ inputs */

typedef struct variant {
    const char *name;        /* "" as given, or the taint or MIG variant's name */
    const struct variant *base; /* the variant whose snapshot this one replays, or NULL */
    bool mig_dynamic;
    gs_whatif w;
    gs_snapshot snap;
    bool snap_init;
    int64_t *arrival, *duration;
    double scale;
} variant;

static int build_variant(sim_args *a, variant *v, gs_error *err)
{
    gs_snapshot_init(&v->snap);
    v->snap_init = true;
    if (a->cluster && cli_live_store_snapshot(&a->live, a->cluster, &v->snap, NULL, err))
        return -1;
    for (size_t i = 0; i < a->nmanifests; i++)
        if (gs_snapshot_read_path(&v->snap, a->manifests[i], NULL, err))
            return -1;
    gs_openb tab;
    gs_openb_init(&tab);
    int rc = -1;
    if (a->nodes && (gs_openb_read_nodes(&tab, a->nodes, NULL, err) ||
                     gs_openb_add_nodes(&v->snap, &tab, err)))
        goto done;
    if (a->pods) {
        gs_openb_pod_opts po;
        gs_openb_pod_opts_defaults(&po);
        po.qos = a->qos;
        po.nqos = a->nqos;
        if (gs_openb_read_pods(&tab, a->pods, NULL, err) || gs_openb_add_pods(&v->snap, &tab, &po, err))
            goto done;
    }
    if (a->trace && gs_trace_read_jsonl(&v->snap, a->trace, NULL, err))
        goto done;
    if (gs_snapshot_finish(&v->snap, err) || gs_whatif_apply(&v->snap, &v->w, NULL, err))
        goto done;
    size_t n = v->snap.pods.n ? v->snap.pods.n : 1;
    v->arrival = malloc(n * sizeof *v->arrival);
    v->duration = malloc(n * sizeof *v->duration);
    if (!v->arrival || !v->duration) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (gs_trace_times(&v->snap, v->arrival, v->duration, err))
        goto done;
    if (a->keep_running)
        for (size_t i = 0; i < v->snap.pods.n; i++)
            v->duration[i] = GS_REPLAY_FOREVER;
    rc = 0;
done:
    gs_openb_free(&tab);
    return rc;
}

static void free_variant(variant *v)
{
    if (v->snap_init)
        gs_snapshot_free(&v->snap);
    free(v->arrival);
    free(v->duration);
}

/* The --mig-parted file: parsed whole; a schema problem is an input error. */
static int read_parted(sim_args *a, gs_mig_parted *out, gs_error *err)
{
    size_t len = 0;
    char *data = gs_read_file(a->mig_parted, GS_MIG_MAX_FILE_BYTES, &len, err);
    if (!data)
        return -1;
    int rc = gs_mig_parted_parse(out, a->mig_parted, data, len, err);
    free(data);
    if (rc == 0 && out->nproblems) {
        *err = out->problems[0];
        rc = -1;
    }
    return rc;
}

/* FGD inputs: the openb rows, CPU-only nodes filtered when asked. */
static gs_fgd_workload *build_fgd(sim_args *a, gs_error *err)
{
    gs_openb tab;
    gs_openb_init(&tab);
    gs_fgd_workload *w = NULL;
    if (gs_openb_read_nodes(&tab, a->nodes, NULL, err) || gs_openb_read_pods(&tab, a->pods, NULL, err))
        goto done;
    gs_openb_node *nodes = tab.nodes.v;
    uint32_t nn = (uint32_t)tab.nodes.n;
    gs_openb_node *kept = NULL;
    if (a->exclude_cpu_nodes) {
        kept = malloc((nn ? nn : 1) * sizeof *kept);
        if (!kept) {
            gs_fail(err, GS_ERR_NOMEM, "out of memory");
            goto done;
        }
        uint32_t k = 0;
        for (uint32_t i = 0; i < nn; i++)
            if (nodes[i].gpus)
                kept[k++] = nodes[i];
        nodes = kept;
        nn = k;
    }
    w = gs_fgd_workload_new(nodes, nn, tab.pods.v, (uint32_t)tab.pods.n, NULL, err);
    free(kept);
done:
    gs_openb_free(&tab);
    return w;
}

/* ================================================================ runs and threads */

typedef struct task {
    uint32_t index;    /* in the whole sweep */
    uint32_t variant, policy;
    uint64_t seed;
    gs_sim_run run;
    gs_error err;
    int rc;
} task;

typedef struct pool {
    sim_args *a;
    variant *variants;
    gs_fgd_workload *fgd;
    const char *workload;
    task *tasks;
    uint32_t ntasks;
    uint32_t next, done;
    bool progress;
    pthread_mutex_t lock;
} pool;

static void progress_draw(const pool *p)
{
    const int width = 30;
    int filled = p->ntasks ? (int)((uint64_t)p->done * width / p->ntasks) : width;
    char bar[64];
    for (int i = 0; i < width; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[width] = '\0';
    fprintf(stderr, "\rsimulate [%s] %u/%u runs", bar, p->done, p->ntasks);
    if (p->done == p->ntasks)
        fputc('\n', stderr);
    fflush(stderr);
}

static void run_task(pool *p, task *t)
{
    sim_args *a = p->a;
    gs_error_clear(&t->err);
    if (a->method == GS_SIM_FGD) {
        gs_fgd_opts o;
        gs_fgd_opts_defaults(&o);
        o.policy = a->policies[t->policy];
        o.seed = t->seed;
        o.tune = a->tune;
        gs_fgd_result r;
        t->rc = gs_fgd_run(p->fgd, &o, &r, &t->err);
        if (t->rc == 0) {
            t->rc = gs_sim_run_from_fgd(&t->run, t->index, p->workload, "", &r, &t->err);
            gs_fgd_result_free(&r);
        }
        return;
    }
    const variant *v = &p->variants[t->variant];
    const variant *sv = v->base ? v->base : v; /* the snapshot and times */
    gs_replay_opts o;
    gs_replay_opts_defaults(&o);
    if (gs_config_policy(&o.cfg, a->policies[t->policy], &t->err)) {
        t->rc = -1;
        return;
    }
    o.cfg.seed = t->seed;
    if (a->no_preemption)
        o.cfg.preemption = false;
    if (a->no_quota)
        o.cfg.quota = false;
    o.requeue_preempted = !a->lose;
    o.sample_every = a->sample_every;
    o.horizon = a->horizon;
    o.mig_dynamic = v->mig_dynamic;
    o.mig_delay = a->mig_delay;
    gs_replay_result res;
    t->rc = gs_replay_run(&sv->snap, sv->arrival, sv->duration, &o, &res, &t->err);
    if (t->rc == 0) {
        t->rc = gs_sim_run_from_replay(&t->run, t->index, p->workload, v->name,
                                       a->policies[t->policy], t->seed, sv->scale, &sv->snap,
                                       &res, &t->err);
        gs_replay_result_free(&res);
    }
}

static void *worker(void *arg)
{
    pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        uint32_t i = p->next < p->ntasks ? p->next++ : p->ntasks;
        pthread_mutex_unlock(&p->lock);
        if (i >= p->ntasks)
            return NULL;
        run_task(p, &p->tasks[i]);
        pthread_mutex_lock(&p->lock);
        p->done++;
        if (p->progress)
            progress_draw(p);
        pthread_mutex_unlock(&p->lock);
    }
}

static int run_pool(pool *p, uint32_t jobs, gs_error *err)
{
    if (pthread_mutex_init(&p->lock, NULL) != 0)
        return gs_fail(err, GS_ERR_INTERNAL, "cannot create a mutex");
    if (jobs > p->ntasks)
        jobs = p->ntasks ? p->ntasks : 1;
    pthread_t *th = calloc(jobs, sizeof *th);
    uint32_t started = 0;
    if (th && jobs > 1)
        for (; started < jobs; started++)
            if (pthread_create(&th[started], NULL, worker, p) != 0)
                break;
    if (started == 0)
        worker(p); /* one job, or no thread could start: run here */
    for (uint32_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    free(th);
    pthread_mutex_destroy(&p->lock);
    return 0;
}

/* ================================================================ text output */

static void put_dur(cli_table *t, int64_t s)
{
    char buf[64];
    gs_format_duration(s, buf, sizeof buf);
    cli_table_cell(t, "%s", buf);
}

static const char *class_label(const char *name) { return name && *name ? name : "(no class)"; }

static void cluster_line(gs_strbuf *sb, const gs_sim_run *r)
{
    const gs_replay_metrics *m = &r->replay;
    char span[64];
    gs_format_duration(m->t_end - m->t_start, span, sizeof span);
    gs_strbuf_textf(sb, "cluster: %u nodes (%u with GPUs, %u GPUs); %u pods arrived over %s\n",
                     m->nodes, m->gpu_nodes, r->total_gpus, m->arrived, span);
}

static const gs_wait_stats *find_class(const gs_replay_metrics *m, const char *name,
                                       int32_t prio)
{
    for (uint32_t i = 0; i < m->nclasses; i++)
        if (m->classes[i].priority == prio && strcmp(m->classes[i].name, name) == 0)
            return &m->classes[i];
    return NULL;
}

static const gs_wait_stats *find_shape(const gs_replay_metrics *m, const char *name)
{
    for (uint32_t i = 0; i < m->nshapes; i++)
        if (strcmp(m->shapes[i].name, name) == 0)
            return &m->shapes[i];
    return NULL;
}

/* MIG slices of a run: "12.3 (peak 20)" */
static void put_slices(cli_table *t, double mean, uint32_t peak)
{
    cli_table_cell(t, "%.1f (peak %u)", mean, peak);
}

/* PODS, NEVER SCHEDULED, P50 ... MAX of a wait group */
static void put_wait_row(cli_table *t, const gs_wait_stats *w)
{
    cli_table_cell(t, "%u", w->pods);
    cli_table_cell(t, "%u", w->never_started);
    put_dur(t, w->p50);
    put_dur(t, w->p90);
    put_dur(t, w->p95);
    put_dur(t, w->p99);
    put_dur(t, w->max);
}

/* Render and free a table; out of memory marks sb. */
static void render_table(cli_table *t, gs_strbuf *sb, const char *indent)
{
    cli_table_render(t, sb, indent);
    if (t->oom)
        sb->oom = true;
    cli_table_free(t);
}

/* The column header of a variant in a comparison: its '+'-separated parts in words. */
static void variant_header(const char *v, const gs_sim_run *r, bool static_base, char *buf,
                           size_t cap)
{
    if (!v[0]) {
        snprintf(buf, cap, "%s", static_base ? "STATIC MIG LAYOUTS" : "AS GIVEN");
        return;
    }
    size_t o = 0;
    buf[0] = '\0';
    for (const char *p = v; *p && o + 1 < cap;) {
        const char *plus = strchr(p, '+');
        size_t len = plus ? (size_t)(plus - p) : strlen(p);
        char part[128];
        snprintf(part, sizeof part, "%.*s", (int)(len < 100 ? len : 100), p);
        char words[160];
        if (is_taint_variant(part)) {
            snprintf(words, sizeof words, "GPU NODES TAINTED %s:NoSchedule",
                     part[9] == ':' ? part + 10 : "nvidia.com/gpu");
        } else if (is_mig_variant(part)) {
            char d[64];
            gs_format_duration(r->replay.mig_delay, d, sizeof d);
            snprintf(words, sizeof words, "DYNAMIC MIG (RE-PARTITION %s)", d);
        } else if (strncmp(part, VARIANT_MIG_CONFIG, strlen(VARIANT_MIG_CONFIG)) == 0) {
            snprintf(words, sizeof words, "MIG %s", part + strlen(VARIANT_MIG_CONFIG));
        } else {
            snprintf(words, sizeof words, "%s", part);
        }
        int k = snprintf(buf + o, cap - o, "%s%s", o ? ", " : "", words);
        o += k > 0 ? (size_t)k : 0;
        if (o >= cap)
            o = cap - 1;
        p += len + (plus ? 1 : 0);
    }
}

static void put_wait_row_n(cli_table *t, const char *group, const gs_wait_stats *const *w,
                           uint32_t n, bool p95)
{
    cli_table_cell(t, "pending time %s, %s", p95 ? "p95" : "p50", group);
    for (uint32_t k = 0; k < n; k++) {
        if (w[k])
            put_dur(t, p95 ? w[k]->p95 : w[k]->p50);
        else
            cli_table_cell(t, "-");
    }
}

/* Variants side by side (--compare-taint, --compare-mig, several --mig-config): one table
 * per workload, policy and seed, a column per variant in sweep order. */
static void text_compare(const gs_sim_report *rep, gs_strbuf *sb)
{
    const char *first_variant = rep->runs.v[0].variant;
    bool static_base = false;
    for (size_t i = 0; i < rep->runs.n; i++)
        static_base |= is_mig_variant(rep->runs.v[i].variant);
    bool first = true;
    for (size_t i = 0; i < rep->runs.n; i++) {
        const gs_sim_run *a = &rep->runs.v[i];
        if (strcmp(a->variant, first_variant) != 0 || !a->has_replay)
            continue;
        const gs_sim_run *col[CMP_MAX_COLS];
        uint32_t ncol = 0;
        for (size_t k = 0; k < rep->runs.n && ncol < CMP_MAX_COLS; k++) {
            const gs_sim_run *x = &rep->runs.v[k];
            bool seen = false;
            for (uint32_t c = 0; c < ncol; c++)
                seen |= strcmp(col[c]->variant, x->variant) == 0;
            if (!seen && x->has_replay && strcmp(x->policy, a->policy) == 0 &&
                x->seed == a->seed && strcmp(x->workload, a->workload) == 0)
                col[ncol++] = x;
        }
        if (ncol < 2)
            continue;
        if (!first)
            gs_strbuf_putc(sb, '\n');
        first = false;
        gs_strbuf_textf(sb, "%s, policy %s, seed %llu\n", a->workload, a->policy,
                         (unsigned long long)a->seed);
        cluster_line(sb, a);
        gs_strbuf_putc(sb, '\n');
        bool mig = false, mig_policy = false, stranded = false;
        for (uint32_t c = 0; c < ncol; c++) {
            mig |= col[c]->replay.mig_gpus > 0;
            mig_policy |= col[c]->replay.mig_dynamic;
            stranded |= col[c]->replay.stranded_peak > 0;
        }
        stranded |= !mig;
        cli_table t;
        cli_table_init(&t, 1 + ncol);
        cli_table_cell(&t, "%s", "");
        for (uint32_t c = 0; c < ncol; c++) {
            char h[160];
            variant_header(col[c]->variant, col[c], static_base, h, sizeof h);
            cli_table_cell(&t, "%s", h);
        }
        const gs_wait_stats *w[CMP_MAX_COLS];
        /* per class, in priority order of the first column, then classes only in later ones */
        for (uint32_t src = 0; src < ncol; src++) {
            const gs_replay_metrics *ms = &col[src]->replay;
            for (uint32_t k = 0; k < ms->nclasses; k++) {
                const gs_wait_stats *ws = &ms->classes[k];
                bool earlier = false;
                for (uint32_t e = 0; e < src; e++)
                    earlier |= find_class(&col[e]->replay, ws->name, ws->priority) != NULL;
                if (earlier)
                    continue;
                for (uint32_t c = 0; c < ncol; c++)
                    w[c] = find_class(&col[c]->replay, ws->name, ws->priority);
                put_wait_row_n(&t, class_label(ws->name), w, ncol, false);
                put_wait_row_n(&t, class_label(ws->name), w, ncol, true);
            }
        }
        /* MIG: per requested profile (the shapes "1 MIG 3g.40gb", ...) */
        for (uint32_t src = 0; mig && src < ncol; src++) {
            const gs_replay_metrics *ms = &col[src]->replay;
            for (uint32_t k = 0; k < ms->nshapes; k++) {
                const char *nm = ms->shapes[k].name;
                bool earlier = false;
                for (uint32_t e = 0; e < src; e++)
                    earlier |= find_shape(&col[e]->replay, nm) != NULL;
                if (!strstr(nm, " MIG ") || earlier)
                    continue;
                for (uint32_t c = 0; c < ncol; c++)
                    w[c] = find_shape(&col[c]->replay, nm);
                put_wait_row_n(&t, nm, w, ncol, false);
                put_wait_row_n(&t, nm, w, ncol, true);
            }
        }
#define ROW(label, ...)                                                                    \
    do {                                                                                   \
        cli_table_cell(&t, "%s", label);                                                   \
        for (uint32_t c = 0; c < ncol; c++) {                                              \
            const gs_replay_metrics *m = &col[c]->replay;                                  \
            (void)m;                                                                       \
            __VA_ARGS__;                                                                   \
        }                                                                                  \
    } while (0)
        ROW("pods never scheduled", cli_table_cell(&t, "%u", m->never_started));
        ROW("  requesting GPUs", cli_table_cell(&t, "%u", m->never_started_gpu));
        ROW("  CPU-only", cli_table_cell(&t, "%u", m->never_started - m->never_started_gpu));
        if (mig) {
            ROW("MIG slices in use, time average",
                cli_table_cell(&t, "%.1f of %u", m->mig_used_mean, m->mig_slices));
            ROW("MIG slices idle in instances", put_slices(&t, m->mig_idle_mean, m->mig_idle_peak));
            ROW("MIG slices in no instance", put_slices(&t, m->mig_unpart_mean, m->mig_unpart_peak));
            ROW("MIG re-partitions", cli_table_cell(&t, "%u", m->mig_reconfigs));
        }
        if (stranded) {
            ROW("GPUs stranded, peak", cli_table_cell(&t, "%u", m->stranded_peak));
            ROW("GPUs stranded, time average", cli_table_cell(&t, "%.2f", m->stranded_mean));
        }
        ROW("GPU allocation, time average", cli_table_cell(&t, "%.1f%%", m->alloc_mean_pct));
        ROW("GPU allocation, peak", cli_table_cell(&t, "%.1f%%", m->alloc_peak_pct));
        ROW("preemptions", cli_table_cell(&t, "%u", m->preemptions));
        ROW("rejected at admission", cli_table_cell(&t, "%u", m->rejected));
#undef ROW
        render_table(&t, sb, "");
        if (mig_policy && !mig)
            gs_strbuf_puts(sb, "(no MIG-enabled GPU in this cluster: the MIG policy changes "
                               "nothing)\n");
    }
}

static void text_replay_details(const gs_sim_run *r, gs_strbuf *sb)
{
    const gs_replay_metrics *m = &r->replay;
    gs_strbuf_textf(sb, "\nrun %u (%s%s%s, seed %llu): pending time by priority class\n",
                     r->index, r->policy, r->variant[0] ? ", " : "", r->variant,
                     (unsigned long long)r->seed);
    cli_table t;
    cli_table_init(&t, 9);
    const char *head[] = {"CLASS", "PRIORITY", "PODS", "NEVER SCHEDULED", "P50", "P90", "P95", "P99", "MAX"};
    for (int i = 0; i < 9; i++)
        cli_table_cell(&t, "%s", head[i]);
    for (uint32_t c = 0; c <= m->nclasses; c++) {
        const gs_wait_stats *w = c < m->nclasses ? &m->classes[c] : &m->all;
        if (c == m->nclasses)
            cli_table_cell(&t, "all");
        else
            cli_table_cell(&t, "%s", class_label(w->name));
        if (c == m->nclasses)
            cli_table_cell(&t, "-");
        else
            cli_table_cell(&t, "%d", (int)w->priority);
        put_wait_row(&t, w);
    }
    render_table(&t, sb, "  ");
    if (m->mig_gpus) {
        char d[64] = "";
        if (m->mig_dynamic) {
            gs_format_duration(m->mig_delay, d, sizeof d);
            gs_strbuf_textf(sb, "MIG, dynamic (re-partition %s): ", d);
        } else {
            gs_strbuf_puts(sb, "MIG, static layouts: ");
        }
        gs_strbuf_textf(sb, "%u GPUs, %u compute slices, %u re-partition%s\n", m->mig_gpus,
                         m->mig_slices, m->mig_reconfigs, m->mig_reconfigs == 1 ? "" : "s");
        gs_strbuf_textf(sb, "  slices, time average (peak): %.1f in use, %.1f idle in instances "
                             "(%u), %.1f in no instance (%u)\n",
                         m->mig_used_mean, m->mig_idle_mean, m->mig_idle_peak,
                         m->mig_unpart_mean, m->mig_unpart_peak);
        cli_table_init(&t, 8);
        const char *h2[] = {"GPU REQUEST", "PODS", "NEVER SCHEDULED", "P50", "P90", "P95", "P99", "MAX"};
        for (int i = 0; i < 8; i++)
            cli_table_cell(&t, "%s", h2[i]);
        for (uint32_t k = 0; k < m->nshapes; k++) {
            cli_table_cell(&t, "%s", m->shapes[k].name);
            put_wait_row(&t, &m->shapes[k]);
        }
        render_table(&t, sb, "  ");
    }
    if (m->nreasons) {
        gs_strbuf_puts(sb, "why pods stayed pending (top):\n");
        for (uint32_t i = 0; i < m->nreasons && i < 3; i++)
            gs_strbuf_textf(sb, "  %u %s: %s\n", m->reasons[i].pods,
                             m->reasons[i].rejected ? "rejected" : "pending", m->reasons[i].reason);
    }
}

static void text_replay(const gs_sim_report *rep, gs_strbuf *sb)
{
    if (!rep->runs.n) {
        gs_strbuf_puts(sb, "no runs in this shard\n");
        return;
    }
    const gs_sim_run *r0 = &rep->runs.v[0];
    gs_strbuf_textf(sb, "replay: %s, %zu run%s\n", r0->workload, rep->runs.n,
                     rep->runs.n == 1 ? "" : "s");
    cluster_line(sb, r0);
    gs_strbuf_putc(sb, '\n');
    cli_table t;
    cli_table_init(&t, 10);
    const char *head[] = {"RUN",       "POLICY",          "SEED",     "PODS",
                          "NEVER SCHEDULED", "REJECTED",  "PREEMPTIONS", "GPU ALLOC",
                          "STRANDED (PEAK)", "PENDING P95"};
    for (int i = 0; i < 10; i++)
        cli_table_cell(&t, "%s", head[i]);
    for (size_t i = 0; i < rep->runs.n; i++) {
        const gs_sim_run *r = &rep->runs.v[i];
        const gs_replay_metrics *m = &r->replay;
        cli_table_cell(&t, "%u", r->index);
        cli_table_cell(&t, "%s", r->policy);
        cli_table_cell(&t, "%llu", (unsigned long long)r->seed);
        cli_table_cell(&t, "%u", m->arrived);
        cli_table_cell(&t, "%u", m->never_started);
        cli_table_cell(&t, "%u", m->rejected);
        cli_table_cell(&t, "%u", m->preemptions);
        cli_table_cell(&t, "%.1f%%", m->alloc_mean_pct);
        cli_table_cell(&t, "%u", m->stranded_peak);
        put_dur(&t, m->all.p95);
    }
    render_table(&t, sb, "");
    gs_strbuf_puts(sb, "(GPU ALLOC: time average of the GPUs allocated; STRANDED: whole GPUs "
                       "idle on nodes whose cpu or memory is full)\n");
    if (rep->runs.n <= 4)
        for (size_t i = 0; i < rep->runs.n; i++)
            text_replay_details(&rep->runs.v[i], sb);
}

static void text_fgd(const gs_sim_report *rep, gs_strbuf *sb)
{
    if (!rep->runs.n) {
        gs_strbuf_puts(sb, "no runs in this shard\n");
        return;
    }
    const gs_sim_run *r0 = &rep->runs.v[0];
    gs_strbuf_textf(sb, "fgd: %s, %zu run%s, tune ", r0->workload, rep->runs.n,
                     rep->runs.n == 1 ? "" : "s");
    gs_fgd_put_number(sb, r0->tune);
    gs_strbuf_textf(sb, ", %u GPUs\n\n", r0->total_gpus);
    cli_table t;
    cli_table_init(&t, 8);
    const char *head[] = {"POLICY",    "LABEL",        "SEEDS",           "ALLOC AT 100%",
                          "FINAL ALLOC", "FINAL FRAG RATIO", "FAILED PODS", "PODS"};
    for (int i = 0; i < 8; i++)
        cli_table_cell(&t, "%s", head[i]);
    for (size_t i = 0; i < rep->runs.n; i++) {
        const gs_sim_run *r = &rep->runs.v[i];
        bool seen = false;
        for (size_t k = 0; k < i; k++)
            seen |= strcmp(rep->runs.v[k].policy, r->policy) == 0 &&
                    strcmp(rep->runs.v[k].workload, r->workload) == 0;
        if (seen)
            continue;
        double a100 = 0, fa = 0, fr = 0, failed = 0, pods = 0;
        uint32_t n = 0, n100 = 0;
        for (size_t k = i; k < rep->runs.n; k++) {
            const gs_sim_run *x = &rep->runs.v[k];
            if (strcmp(x->policy, r->policy) != 0 || strcmp(x->workload, r->workload) != 0)
                continue;
            n++;
            if (x->nx > 100 && x->alloc[100] == x->alloc[100]) {
                a100 += x->alloc[100];
                n100++;
            }
            fa += x->final_alloc_pct;
            fr += x->final_frag_ratio;
            failed += x->failed;
            pods += x->pods;
        }
        cli_table_cell(&t, "%s", r->policy);
        cli_table_cell(&t, "%s", r->label);
        cli_table_cell(&t, "%u", n);
        if (n100)
            cli_table_cell(&t, "%.2f%%", a100 / n100);
        else
            cli_table_cell(&t, "-");
        cli_table_cell(&t, "%.2f%%", fa / n);
        cli_table_cell(&t, "%.2f%%", fr / n);
        cli_table_cell(&t, "%.1f", failed / n);
        cli_table_cell(&t, "%.0f", pods / n);
    }
    render_table(&t, sb, "");
    gs_strbuf_puts(sb, "(means over seeds; ALLOC AT 100%: GPUs allocated when the arrived GPU "
                       "request reaches the cluster's capacity)\n");
}

static void text_report(const gs_sim_report *rep, gs_strbuf *sb)
{
    bool variants = false, fgd = false;
    for (size_t i = 0; i < rep->runs.n; i++) {
        variants |= strcmp(rep->runs.v[i].variant, rep->runs.v[0].variant) != 0;
        fgd |= rep->runs.v[i].method == GS_SIM_FGD;
    }
    if (fgd)
        text_fgd(rep, sb);
    else if (variants)
        text_compare(rep, sb);
    else
        text_replay(rep, sb);
    if (rep->sweep.nshards > 1)
        gs_strbuf_textf(sb, "\nshard %u of %u: %zu of the sweep's %u runs; join the shards' "
                             "--json outputs with 'gpusched simulate merge'\n",
                         rep->sweep.shard, rep->sweep.nshards, rep->runs.n, rep->sweep.total_runs);
}

/* ================================================================ writing */

/* "dir/runs.csv" -> "dir/runs" + suffix */
static char *sibling(const char *path, const char *suffix)
{
    size_t n = strlen(path);
    if (n >= 4 && strcmp(path + n - 4, ".csv") == 0)
        n -= 4;
    size_t m = strlen(suffix);
    char *s = malloc(n + m + 1);
    if (s) {
        memcpy(s, path, n);
        memcpy(s + n, suffix, m + 1);
    }
    return s;
}

static int write_buf(const char *path, gs_strbuf *sb, gs_error *err)
{
    if (sb->oom)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory while formatting %s", path);
    return gs_write_file_atomic(path, gs_strbuf_cstr(sb), sb->len, err);
}

static int write_outputs(const gs_sim_report *rep, const outputs *o, gs_error *err)
{
    char default_title[300];
    snprintf(default_title, sizeof default_title, "Simulation of %s",
             rep->runs.n ? rep->runs.v[0].workload : "nothing");
    const char *title = o->title ? o->title : default_title;
    gs_strbuf out = GS_STRBUF_INIT, b = GS_STRBUF_INIT;
    int rc = -1;
    bool replay = false;
    for (size_t i = 0; i < rep->runs.n; i++)
        replay |= rep->runs.v[i].has_replay;
    /* stdout first into memory, so a failure writes nothing to it */
    switch (o->format) {
    case OUT_TEXT: text_report(rep, &out); break;
    case OUT_JSON: gs_report_json(rep, &out); break;
    case OUT_CSV: gs_report_csv(rep, GS_FGD_CSV_ALLOC, &out); break;
    case OUT_HTML: gs_report_html(rep, title, &out); break;
    }
    if (out.oom) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory while formatting the output");
        goto done;
    }
    if (o->json) {
        gs_report_json(rep, &b);
        if (write_buf(o->json, &b, err))
            goto done;
        gs_strbuf_reset(&b);
    }
    if (o->html) {
        gs_report_html(rep, title, &b);
        if (write_buf(o->html, &b, err))
            goto done;
        gs_strbuf_reset(&b);
    }
    if (o->csv) {
        static const struct {
            const char *suffix;
            int which; /* gs_fgd_csv, or -1 fail, -2 pending */
        } files[] = {{NULL, GS_FGD_CSV_ALLOC},
                     {"-frag.csv", GS_FGD_CSV_FRAG},
                     {"-frag-ratio.csv", GS_FGD_CSV_FRAG_RATIO},
                     {"-fail.csv", -1},
                     {"-pending.csv", -2}};
        for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
            if (files[k].which == -2 && !replay)
                continue;
            char *path = files[k].suffix ? sibling(o->csv, files[k].suffix) : NULL;
            if (files[k].suffix && !path) {
                gs_fail(err, GS_ERR_NOMEM, "out of memory");
                goto done;
            }
            if (files[k].which >= 0)
                gs_report_csv(rep, (gs_fgd_csv)files[k].which, &b);
            else if (files[k].which == -1)
                gs_report_csv_fail(rep, &b);
            else
                gs_report_csv_pending(rep, &b);
            int w = write_buf(path ? path : o->csv, &b, err);
            free(path);
            if (w)
                goto done;
            gs_strbuf_reset(&b);
        }
    }
    if ((o->format == OUT_TEXT ? cli_write_text_output : cli_write_output)(&out, NULL, err))
        goto done;
    rc = 0;
done:
    gs_strbuf_free(&out);
    gs_strbuf_free(&b);
    return rc;
}

/* ================================================================ merge */

static int cmd_merge(int argc, char **argv)
{
    gs_error err;
    gs_error_clear(&err);
    outputs o;
    memset(&o, 0, sizeof o);
    const char **files = calloc((size_t)(argc > 0 ? argc : 1), sizeof *files);
    size_t nfiles = 0;
    if (!files) {
        gs_fail(&err, GS_ERR_NOMEM, "out of memory");
        return cli_report_error(&err);
    }
    cli_args it;
    cli_args_init(&it, argc, argv, 1, merge_opts, sizeof merge_opts / sizeof merge_opts[0]);
    const char *value;
    int id;
    while ((id = cli_args_next(&it, &value, &err)) != CLI_ARG_END) {
        switch (id) {
        case CLI_ARG_ERROR: free(files); return cli_usage_error("simulate merge", &err);
        case CLI_ARG_POSITIONAL: files[nfiles++] = value; break;
        case OPT_HELP: free(files); return cli_print_usage(merge_usage);
        case OPT_OUTPUT:
            if (parse_format(value, &o.format, &err)) {
                free(files);
                return cli_usage_error("simulate merge", &err);
            }
            break;
        case OPT_JSON: o.json = value; break;
        case OPT_CSV: o.csv = value; break;
        case OPT_HTML: o.html = value; break;
        case OPT_TITLE: o.title = value; break;
        default: break;
        }
    }
    if (!nfiles) {
        free(files);
        gs_fail(&err, GS_ERR_USAGE, "no shard files (give the --json outputs of the shards)");
        return cli_usage_error("simulate merge", &err);
    }
    gs_sim_report rep;
    gs_sim_report_init(&rep);
    int status = CLI_EXIT_OK;
    for (size_t i = 0; i < nfiles; i++) {
        size_t len;
        char *data = gs_read_file(files[i], SIM_MAX_JSON_BYTES, &len, &err);
        if (!data || gs_report_read_json(&rep, files[i], data, len, &err)) {
            free(data);
            status = cli_report_error(&err);
            goto done;
        }
        free(data);
    }
    if (gs_report_merge_finish(&rep, &err) ||
        write_outputs(&rep, &o, &err))
        status = cli_report_error(&err);
done:
    gs_sim_report_free(&rep);
    free(files);
    return status;
}

/* ================================================================ command */

int gs_cmd_simulate(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "merge") == 0)
        return cmd_merge(argc - 1, argv + 1);
    gs_error err;
    gs_error_clear(&err);
    sim_args a;
    memset(&a, 0, sizeof a);
    gs_arena_init(&a.arena, 4096);
    a.manifests = calloc((size_t)(argc > 0 ? argc : 1), sizeof *a.manifests);
    int status = CLI_EXIT_OK;
    variant *variants = NULL;
    uint32_t nvariants = 0;
    gs_mig_parted parted;
    memset(&parted, 0, sizeof parted);
    gs_fgd_workload *fgd = NULL;
    task *tasks = NULL;
    uint32_t ntasks_made = 0;
    gs_sim_report rep;
    gs_sim_report_init(&rep);
    if (!a.manifests) {
        gs_fail(&err, GS_ERR_NOMEM, "out of memory");
        status = cli_report_error(&err);
        goto done;
    }
    bool help = false;
    if (parse_sim_args(argc, argv, &a, &help, &err)) {
        status = err.code == GS_ERR_USAGE ? cli_usage_error("simulate", &err) : cli_report_error(&err);
        goto done;
    }
    if (help) {
        status = cli_print_usage(cli_simulate_usage);
        goto done;
    }
    if (a.use_live) { /* the starting cluster, read once for every variant */
        a.live.quiet = a.quiet;
        if (cli_live_fetch(&a.live, &a.cluster, &err)) {
            status = cli_report_error(&err);
            goto done;
        }
    }
    if (!a.workload)
        a.workload = default_workload(&a);
    const char *fp = a.workload ? fingerprint(&a) : NULL;
    if (!fp) {
        gs_fail(&err, GS_ERR_NOMEM, "out of memory");
        status = cli_report_error(&err);
        goto done;
    }

    /* inputs */
    if (a.method == GS_SIM_FGD) {
        if (!(fgd = build_fgd(&a, &err))) {
            status = cli_report_error(&err);
            goto done;
        }
        nvariants = 1;
    } else {
        nvariants = a.compare || a.compare_mig ? 2 : a.nmig_configs > 1 ? a.nmig_configs : 1;
        variants = calloc(nvariants, sizeof *variants);
        if (!variants) {
            gs_fail(&err, GS_ERR_NOMEM, "out of memory");
            status = cli_report_error(&err);
            goto done;
        }
        if (a.mig_parted && read_parted(&a, &parted, &err)) {
            status = cli_report_error(&err);
            goto done;
        }
        for (uint32_t v = 0; v < nvariants; v++) {
            variant *x = &variants[v];
            /* the name: its parts joined by '+' ("" = as given) */
            const char *config = a.nmig_configs ? a.mig_configs[a.nmig_configs > 1 ? v : 0] : NULL;
            bool tainted = a.compare && v == 1;
            x->mig_dynamic = a.mig_dynamic || (a.compare_mig && v == 1);
            gs_strbuf nm = GS_STRBUF_INIT;
            if (config)
                gs_strbuf_printf(&nm, "%s%s", VARIANT_MIG_CONFIG, config);
            if (tainted) {
                gs_strbuf_puts(&nm, nm.len ? "+" : "");
                if (a.taint_key && strcmp(a.taint_key, "nvidia.com/gpu") != 0)
                    gs_strbuf_printf(&nm, "%s:%s", VARIANT_TAINT, a.taint_key);
                else
                    gs_strbuf_puts(&nm, VARIANT_TAINT);
            }
            if (x->mig_dynamic)
                gs_strbuf_printf(&nm, "%s%s", nm.len ? "+" : "", VARIANT_MIG);
            x->name = nm.oom ? NULL : gs_arena_strdup(&a.arena, gs_strbuf_cstr(&nm));
            gs_strbuf_free(&nm);
            if (!x->name) {
                gs_fail(&err, GS_ERR_NOMEM, "out of memory");
                status = cli_report_error(&err);
                goto done;
            }
            if (a.compare_mig && v == 1) {
                x->base = &variants[0]; /* MIG policies replay the same snapshot */
                continue;
            }
            x->w.gpu_taint = tainted ? GS_TAINT_ADD : a.gpu_taint;
            x->w.tolerate_gpu_pods = tainted ? true : a.taint_tolerate;
            x->w.taint_key = a.taint_key;
            x->w.drop_cpu_nodes = a.exclude_cpu_nodes;
            x->w.scale_num = a.scale_num;
            x->w.scale_den = a.scale_den;
            x->w.classes = a.classes;
            x->w.nclasses = a.nclasses;
            x->w.mig_config = config;
            x->w.mig_parted = a.mig_parted ? &parted : NULL;
            x->scale = a.scale_den ? (double)a.scale_num / a.scale_den : 1.0;
            if (build_variant(&a, x, &err)) {
                status = cli_report_error(&err);
                goto done;
            }
        }
    }

    /* the sweep and this shard's runs */
    uint32_t total = nvariants * a.npolicies * a.nseeds;
    uint32_t in_shard = 0;
    for (uint32_t i = 0; i < total; i++)
        in_shard += i % a.nshards == a.shard;
    tasks = calloc(in_shard ? in_shard : 1, sizeof *tasks);
    if (!tasks) {
        gs_fail(&err, GS_ERR_NOMEM, "out of memory");
        status = cli_report_error(&err);
        goto done;
    }
    uint32_t ntasks = 0;
    ntasks_made = in_shard;
    for (uint32_t v = 0; v < nvariants; v++)
        for (uint32_t p = 0; p < a.npolicies; p++)
            for (uint32_t s = 0; s < a.nseeds; s++) {
                uint32_t index = (v * a.npolicies + p) * a.nseeds + s;
                if (index % a.nshards != a.shard)
                    continue;
                task *t = &tasks[ntasks++];
                t->index = index;
                t->variant = v;
                t->policy = p;
                t->seed = a.seeds[s];
            }
    pool pl;
    memset(&pl, 0, sizeof pl);
    pl.a = &a;
    pl.variants = variants;
    pl.fgd = fgd;
    pl.workload = a.workload;
    pl.tasks = tasks;
    pl.ntasks = ntasks;
    pl.progress = !a.quiet && isatty(STDERR_FILENO);
    if (run_pool(&pl, a.jobs, &err)) {
        status = cli_report_error(&err);
        goto done;
    }
    for (uint32_t i = 0; i < ntasks; i++)
        if (tasks[i].rc) {
            status = cli_report_error(&tasks[i].err);
            goto done;
        }
    gs_sim_sweep sw = {gs_sim_method_name(a.method), fp, total, a.shard, a.nshards};
    if (gs_sim_report_set_sweep(&rep, &sw, &err)) {
        status = cli_report_error(&err);
        goto done;
    }
    for (uint32_t i = 0; i < ntasks; i++)
        if (gs_sim_report_add(&rep, &tasks[i].run, &err)) {
            status = cli_report_error(&err);
            goto done;
        }
    if (gs_sim_report_sort(&rep, &err)) {
        status = cli_report_error(&err);
        goto done;
    }
    if (write_outputs(&rep, &a.out, &err))
        status = cli_report_error(&err);
done:
    gs_sim_report_free(&rep);
    if (tasks) {
        /* runs not moved into the report (on errors) */
        for (uint32_t i = 0; i < ntasks_made; i++)
            if (tasks[i].run.workload)
                gs_sim_run_free(&tasks[i].run);
    }
    free(tasks);
    for (uint32_t v = 0; variants && v < nvariants; v++)
        free_variant(&variants[v]);
    free(variants);
    if (fgd)
        gs_fgd_workload_free(fgd);
    gs_mig_parted_free(&parted);
    if (a.cluster)
        gs_live_store_free(a.cluster);
    free(a.seeds);
    free(a.manifests);
    gs_arena_free(&a.arena);
    return status;
}
