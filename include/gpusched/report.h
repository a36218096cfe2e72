/*
 * report.h - results of `gpusched simulate` (docs/simulate-replay.md, docs/cli/simulate.md):
 * one record per run of either method (the FGD experiment or the time-ordered replay),
 * the replay metrics, the writers (JSON, CSV in the FGD artifact's shapes, a
 * self-contained HTML report), reading the JSON back to merge the shards of a sweep, and
 * the what-if overrides applied to a snapshot before a replay (whatif.c).
 *
 * Three parts:
 *  1. Runs and reports (report.c). A gs_sim_run owns an arena with everything it points
 *     to, so runs can be built in parallel threads (one run per thread, nothing shared)
 *     and collected afterwards. A gs_sim_report is the ordered list of runs of one sweep
 *     (or of one shard of it) with the sweep's identity.
 *  2. Writers and the reader. The JSON document carries every field the other outputs are
 *     made from, so `merge` rebuilds byte-identical CSV, JSON and HTML from the shards'
 *     JSON files. Numbers are written in their shortest round-trip form.
 *  3. What-if overrides (whatif.c): the GPU NoSchedule taint added to or stripped from GPU
 *     nodes, CPU-only nodes dropped, the workload scaled, PriorityClass values and the
 *     openb qos table replaced.
 *
 * Determinism: every output depends only on the runs' contents (never on timing, thread
 * count or shard split). Nothing here prints or exits; errors go into gs_error.
 */
#ifndef GPUSCHED_REPORT_H
#define GPUSCHED_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "gpusched/error.h"
#include "gpusched/kube.h"
#include "gpusched/replay.h"
#include "gpusched/sim.h"
#include "gpusched/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================ 1. runs */

typedef enum gs_sim_method {
    GS_SIM_FGD = 0, /* the FGD experiment (sim.h, gs_fgd_run) */
    GS_SIM_REPLAY,  /* time-ordered replay on the engine (replay.h) */
} gs_sim_method;
const char *gs_sim_method_name(gs_sim_method m); /* "fgd", "replay" */

/* Largest x of a replay's discrete curve (arrived load in % of the GPUs); later
 * samples are left out of the curve (the time series keeps them). */
#define GS_REPORT_MAX_X 1000
/* Points kept of a replay's time series (evenly spaced samples, first and last kept). */
#define GS_REPORT_MAX_SERIES 400
/* Longest pending-reasons top list. */
#define GS_REPORT_MAX_REASONS 10

/* Pending time of a group of admitted pods: nearest-rank percentiles of each pod's total
 * time in the queue (seconds). Pods that never started count with their wait up to the
 * end of the replay (a lower bound) and are counted in never_started. */
typedef struct gs_wait_stats {
    const char *name;        /* PriorityClass name ("" when none) or GPU request shape */
    int32_t priority;        /* resolved priority (classes); 0 for shapes */
    uint32_t pods;           /* admitted pods in the group */
    uint32_t never_started;  /* still pending at the end */
    int64_t p50, p90, p95, p99, max;
    double mean;
    int64_t cdf[21];         /* wait at percentiles 0, 5, ..., 100 (nearest rank) */
} gs_wait_stats;

typedef struct gs_reason_stat {
    const char *reason;      /* scheduler or admission message */
    uint32_t pods;           /* pods that ended pending (or rejected) with it */
    bool rejected;           /* an admission rejection rather than a pending reason */
} gs_reason_stat;

/* What a replay adds to its run record. */
typedef struct gs_replay_metrics {
    uint32_t arrived;        /* pods that arrived (bound ones included) */
    uint32_t started;        /* ran at least once */
    uint32_t done;           /* ran for their duration and left */
    uint32_t running;        /* running at the end */
    uint32_t pending;        /* pending at the end: never scheduled, or requeued victims */
    uint32_t never_started;  /* admitted, pending at the end and never ran */
    uint32_t never_started_gpu; /* of them, pods requesting GPUs */
    uint32_t rejected;       /* refused at admission */
    uint32_t lost;           /* preempted and not requeued */
    uint32_t preemptions;    /* evictions */
    uint32_t quota_rejections, other_rejections;
    int64_t t_start, t_end;  /* first arrival, end of the replay (seconds) */
    /* time averages over [t_start, t_end] (step function of the samples) and peaks */
    double alloc_mean_pct, alloc_peak_pct;   /* GPUs allocated in % of all GPUs */
    double stranded_mean;                    /* gs_replay_sample.gpus_stranded */
    uint32_t stranded_peak;
    double gpu_nodes_mean, nodes_mean;       /* nodes with GPUs allocated / any pod */
    uint32_t gpu_nodes_peak, nodes_peak;
    uint32_t gpu_nodes, nodes;               /* GPU nodes / nodes in the cluster */
    /* MIG (all zero when the cluster has no MIG-enabled GPU and the policy is static):
     * compute slices of the MIG GPUs, time averages and peaks of the samples' fields */
    bool mig_dynamic;                        /* re-partitioning policy (replay.h) */
    int64_t mig_delay;                       /* its delay, seconds */
    uint32_t mig_gpus, mig_slices, mig_reconfigs;
    double mig_used_mean, mig_idle_mean, mig_unpart_mean;
    uint32_t mig_idle_peak, mig_unpart_peak, mig_reconfiguring_peak;
    gs_wait_stats all;                       /* every admitted pod */
    gs_wait_stats *classes;  /* by priority descending, then name */
    uint32_t nclasses;
    gs_wait_stats *shapes;   /* by pods descending, then name */
    uint32_t nshapes;
    gs_replay_sample *series;/* at most GS_REPORT_MAX_SERIES samples */
    uint32_t nseries;
    gs_reason_stat *reasons; /* by pods descending, then text; at most GS_REPORT_MAX_REASONS */
    uint32_t nreasons;
} gs_replay_metrics;

/* One run. Strings and arrays live in `arena` (gs_sim_run_free releases them). */
typedef struct gs_sim_run {
    gs_arena arena;
    uint32_t index;          /* position in the sweep's run list (shards keep it) */
    gs_sim_method method;
    const char *workload;    /* workload name (pod CSV / trace base name) */
    const char *variant;     /* what-if variant ("" = as given, "gpu-taint", ...) */
    const char *policy;      /* policy name */
    const char *label;       /* sc_policy column: "06-FGD"; replay: the policy name */
    uint64_t seed;
    double tune;             /* FGD: tune ratio; replay: workload scale factor */
    uint32_t total_gpus;
    /* discrete curves over x = arrived GPU request in % of capacity (0..nx-1); NaN = a
     * missing cell. FGD: the artifact's curves; replay: alloc only (frag arrays NaN). */
    uint32_t nx;
    double *alloc, *frag, *frag_ratio;
    gs_fgd_fail_shape *fails;/* pods that never ran, by shape (analysis_fail.csv) */
    uint32_t nfails;
    uint32_t pods, scheduled, failed; /* pods tried / ever placed / never placed */
    double final_alloc_pct;  /* FGD: MilliGpu at the end; replay: allocation at the end */
    double final_frag_ratio; /* FGD: final fragmentation ratio; replay: NaN */
    bool has_replay;
    gs_replay_metrics replay;
} gs_sim_run;

void gs_sim_run_init(gs_sim_run *r);
void gs_sim_run_free(gs_sim_run *r);

/* Build a run record from an FGD result (copied; the result may be freed afterwards). */
int gs_sim_run_from_fgd(gs_sim_run *out, uint32_t index, const char *workload,
                        const char *variant, const gs_fgd_result *res, gs_error *err);

/* Build a run record from a replay: the metrics above, the allocation curve over arrived
 * load and the never-placed pods by shape. snap is what the replay ran on. */
int gs_sim_run_from_replay(gs_sim_run *out, uint32_t index, const char *workload,
                           const char *variant, const char *policy, uint64_t seed,
                           double scale, const gs_snapshot *snap, const gs_replay_result *res,
                           gs_error *err);

/* Replay metrics alone (the run builder calls it); arrays are allocated in `arena`. */
int gs_replay_metrics_compute(const gs_snapshot *snap, const gs_replay_result *res,
                              gs_arena *arena, gs_replay_metrics *out, gs_error *err);

/* Nearest-rank percentile of sorted values: v[ceil(p/100 * n) - 1] (v[0] for p = 0);
 * 0 when n == 0. */
int64_t gs_percentile(const int64_t *sorted, uint32_t n, double p);

/* A duration for people, at most two units, the second omitted when zero: "45s", "3m20s",
 * "40m", "2h5m", "3d4h" (truncated, not rounded). */
void gs_format_duration(int64_t seconds, char *buf, size_t cap);

/* GPUs a pod requests, as a number of devices (whole: count; share: count x milli/1000;
 * MIG: count x gs_mig_request_fraction, the compute slices over the slices of the model
 * that offers the profile); 0 for none or an invalid request. */
double gs_pod_gpu_amount(const gs_pod *pod);

/* ================================================================ reports */

/* The sweep a report belongs to: what merge checks before joining shards. */
typedef struct gs_sim_sweep {
    const char *method;      /* "fgd" / "replay" */
    const char *fingerprint; /* the options that define the run list, as text */
    uint32_t total_runs;     /* runs in the whole sweep */
    uint32_t shard, nshards; /* this part: shard/nshards (0/1 for a whole sweep) */
} gs_sim_sweep;

typedef struct gs_sim_report {
    gs_arena arena;          /* the sweep strings */
    gs_sim_sweep sweep;
    GS_VEC(gs_sim_run) runs; /* in index order (gs_sim_report_sort) */
} gs_sim_report;

void gs_sim_report_init(gs_sim_report *rep);
void gs_sim_report_free(gs_sim_report *rep); /* frees the runs too */
/* Set the sweep identity (strings copied). */
int gs_sim_report_set_sweep(gs_sim_report *rep, const gs_sim_sweep *sweep, gs_error *err);
/* Move a run into the report (*run is reset; the report frees it). */
int gs_sim_report_add(gs_sim_report *rep, gs_sim_run *run, gs_error *err);
/* Sort runs by index; GS_ERR_INVALID when an index appears twice. */
int gs_sim_report_sort(gs_sim_report *rep, gs_error *err);

/* ================================================================ 2. writers, reader */

/* The JSON document (docs/cli/simulate.md): apiVersion, kind SimulationReport, the
 * sweep, then every run with all of its fields. Ends with a newline. */
void gs_report_json(const gs_sim_report *rep, gs_strbuf *sb);
/* Read a document written by gs_report_json (one shard's output) and append its runs;
 * the first document read sets the sweep, later ones must belong to the same sweep
 * (method, fingerprint, total runs, shard count). Errors carry file:line:col. */
int gs_report_read_json(gs_sim_report *rep, const char *name, const char *data, size_t len,
                        gs_error *err);
/* Join shards: the report must hold every index 0..total_runs-1 exactly once (else
 * GS_ERR_INVALID naming the missing runs); afterwards it reads as the whole sweep
 * (shard 0/1), so every writer gives the bytes a single unsharded run gives. */
int gs_report_merge_finish(gs_sim_report *rep, gs_error *err);

/* CSV files, each with a header line and one line per run (every line ends in '\n'):
 *   GS_FGD_CSV_ALLOC / FRAG / FRAG_RATIO: the artifact's analysis_*_discrete.csv columns
 *     (workload,sc_policy,tune,seed[,total_gpus],0..N), N the largest nx - 1 of the runs,
 *     shorter rows padded with empty cells; workload = name, or name+variant.
 * Missing cells (NaN) are empty. */
void gs_report_csv(const gs_sim_report *rep, gs_fgd_csv which, gs_strbuf *sb);
/* analysis_fail.csv columns, one line per (run, shape). */
void gs_report_csv_fail(const gs_sim_report *rep, gs_strbuf *sb);
/* Replay pending times: workload,policy,seed,group,name,priority,pods,never_started,
 * p50,p90,p95,p99,max,mean (seconds); group is "all", "class" or "shape". */
void gs_report_csv_pending(const gs_sim_report *rep, gs_strbuf *sb);

/* The HTML report: one self-contained page (inline CSS and SVG, no script needed to
 * read it, no network): a table of the headline numbers per run, allocation vs arrived
 * load per policy (mean over seeds), and for replays the pending-time CDF per priority
 * class, GPU allocation, stranded GPUs and GPU nodes in use over time, pending reasons;
 * for FGD runs the fragmentation ratio. Every string from the input is HTML-escaped. A small inline
 * script only marks the page as rendered (data-charts-rendered on <body>, the number of
 * charts whose drawing has a non-empty bounding box) for the headless-browser test. */
void gs_report_html(const gs_sim_report *rep, const char *title, gs_strbuf *sb);

/* Append s HTML-escaped (& < > " ' and control bytes). */
void gs_html_escape(gs_strbuf *sb, const char *s);

/* ================================================================ 3. what-if overrides */

typedef enum gs_taint_override {
    GS_TAINT_KEEP = 0, /* nodes as given */
    GS_TAINT_ADD,      /* every GPU node gets KEY=VALUE:NoSchedule unless it has KEY:NoSchedule */
    GS_TAINT_STRIP,    /* taints with KEY (any effect) are removed from GPU nodes */
} gs_taint_override;

/* A PriorityClass value override: the class gets `value` (added when missing, with
 * preemptionPolicy PreemptLowerPriority) and pods naming it get that priority. */
typedef struct gs_class_value {
    const char *name;
    int32_t value;
} gs_class_value;

#define GS_WHATIF_MIG_LABEL "label"

typedef struct gs_whatif {
    gs_taint_override gpu_taint;
    const char *taint_key;     /* NULL = "nvidia.com/gpu" */
    const char *taint_value;   /* NULL = "true" */
    bool tolerate_gpu_pods;    /* with ADD: every pod requesting GPUs (any convention) that
                                  does not tolerate the taint gets {key: KEY, operator:
                                  Exists, effect: NoSchedule}, as ExtendedResourceToleration
                                  does for nvidia.com/gpu requests */
    bool drop_cpu_nodes;       /* remove nodes without GPUs; pods bound to them become
                                  unbound (they arrive at the start) */
    uint32_t scale_num, scale_den; /* workload scale num/den (0/0 or 1/1 = unchanged) */
    const gs_class_value *classes;
    uint32_t nclasses;
    /* MIG layouts: every node that uses MIG now (a MIG strategy, MIG resources or a
     * nvidia.com/mig.config label) and has a MIG-capable model gets config `mig_config` on
     * all its GPUs (a config of mig_parted, else a built-in one: "all-balanced",
     * "all-1g.10gb"), advertised as the device plugin's mixed strategy does; NULL = as given.
     * GS_WHATIF_MIG_LABEL: each such node gets the config its own nvidia.com/mig.config
     * label names (what mig-manager would apply; nodes without the label stay as given). */
    const char *mig_config;
    const struct gs_mig_parted *mig_parted;
} gs_whatif;

typedef struct gs_whatif_stats {
    uint32_t nodes_tainted, nodes_untainted, pods_tolerating;
    uint32_t cpu_nodes_dropped, pods_unbound;
    uint32_t pods_dropped, pods_cloned;
    uint32_t classes_changed, pods_reprioritised;
    uint32_t nodes_mig_configured;
} gs_whatif_stats;

/* Apply the overrides to a finished snapshot, in this order: CPU-only nodes, MIG config,
 * taint, tolerations, priority classes, scale. Scaling keeps pod i of the unbound pods (in
 * snapshot order) ceil((i+1) num/den) - ceil(i num/den) times: x0.5 keeps every other pod
 * (the first, third, ...), x2 adds a clone "<name>-x1" after each, x1.5 alternates 2 and 1.
 * Clones keep every field (annotations included). New objects live in the snapshot's
 * arena. stats may be NULL. */
int gs_whatif_apply(gs_snapshot *snap, const gs_whatif *w, gs_whatif_stats *stats,
                    gs_error *err);

/* "0.5", "2", "x1.25", "3/4" -> num/den (reduced; 0 < value <= 1000, up to 6 decimals).
 * GS_ERR_USAGE on anything else. */
int gs_whatif_parse_scale(const char *s, uint32_t *num, uint32_t *den, gs_error *err);
/* "NAME=VALUE[,NAME=VALUE...]" -> class overrides (names copied into arena). */
int gs_whatif_parse_classes(const char *s, gs_arena *arena, gs_class_value **out, uint32_t *n,
                            gs_error *err);
/* "QOS=CLASS:VALUE[,...]" -> an openb qos table (gs_openb_pod_opts.qos); QOS "*" matches
 * every other value. The default table's entries are kept for qos values not named.
 * Strings are copied into arena. */
int gs_whatif_parse_qos_map(const char *s, gs_arena *arena, gs_qos_class **out, uint32_t *n,
                            gs_error *err);

#ifdef __cplusplus
}
#endif
#endif
