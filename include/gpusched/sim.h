/*
 * sim.h - `gpusched simulate`: the FGD-method experiment (the published GPU-sharing
 * simulator's procedure, docs/simulate-fgd.md), its fragmentation measure, the openb
 * trace readers, and the workload inputs of the time-ordered `replay` method.
 *
 * Four parts:
 *  1. openb CSV reader (openb.c): the node and pod lists of Alibaba's cluster-trace-gpu-v2023,
 *     read strictly (header-driven columns, RFC 4180 quoting, bounded sizes, errors with
 *     file:line:col and the column name) into plain rows.
 *  2. Fragmentation (frag.c): the target workload ("typical pods") and the per-node /
 *     per-cluster fragmentation amounts of the FGD paper, arithmetic in the same order as
 *     the reference simulator so float results agree bit for bit on equal states.
 *  3. FGD-method experiments (fgd.c, policies.c): seeded shuffle, tuning to a ratio of the
 *     cluster GPU capacity, strictly sequential greedy placement with one of the policies
 *     (gs_fgd_policies()), failed pods dropped, no departures; per-event arrays, the
 *     discrete curves of the artifact's merge scripts, failed pods by shape and the final
 *     InitSchedule summary.
 *  4. Replay inputs (traces.c): openb rows and JSON-lines traces turned into gs_snapshot
 *     objects whose pods carry gpusched.io/arrival and gpusched.io/duration, and
 *     gs_trace_times() that reads those annotations (also from plain manifests) into the
 *     arrays gs_replay_run() takes.
 *
 * Threads: nothing here has global mutable state. A gs_fgd_workload is immutable after
 * gs_fgd_workload_new() and may be shared by any number of threads running gs_fgd_run()
 * at once; every run owns its own state and result.
 *
 * Ownership is written per type below. Everything returns 0 / a pointer on success and -1 /
 * NULL with `err` filled on failure; nothing prints.
 */
#ifndef GPUSCHED_SIM_H
#define GPUSCHED_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/error.h"
#include "gpusched/kube.h"
#include "gpusched/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GPUs per node in the FGD node model (the openb maximum is 8). Nodes with more GPUs are
 * rejected by the readers with GS_ERR_LIMIT. */
#define GS_SIM_MAX_GPUS 16

/* ================================================================ 1. openb CSV */

/* One row of openb_node_list_*.csv. Strings live in the owning gs_openb's arena. */
typedef struct gs_openb_node {
    const char *name;   /* column sn */
    int64_t cpu_milli;  /* 0 .. 10^9 */
    int64_t memory_mib; /* 0 .. 2^40 */
    uint32_t gpus;      /* column gpu, 0 .. GS_SIM_MAX_GPUS */
    const char *model;  /* column model; "" for CPU-only nodes or when the column is absent */
    gs_src src;         /* file and line of the row (col 1) */
} gs_openb_node;

/* One row of openb_pod_list_*.csv, as written (gpu_milli is NOT clamped here). */
typedef struct gs_openb_pod {
    const char *name;
    int64_t cpu_milli;  /* 0 .. 10^9 */
    int64_t memory_mib; /* 0 .. 2^40 */
    uint32_t num_gpu;   /* 0 .. 1024 */
    int64_t gpu_milli;  /* per-GPU share in thousandths, any value in int32 range */
    const char *gpu_spec; /* allowed models "A|B"; "" = any (also when the column is absent) */
    const char *qos;      /* "" when empty or absent (the multigpu CSVs have 5 columns) */
    const char *phase;    /* pod_phase; "" when empty or absent */
    bool has_creation, has_deletion, has_scheduled; /* false: empty cell or no column */
    int64_t creation_time, deletion_time, scheduled_time; /* seconds */
    gs_src src;
} gs_openb_pod;

/* Bounds for the reader; zero fields take the defaults shown. */
typedef struct gs_openb_limits {
    size_t max_file_bytes;    /* 0 = 256 MiB */
    uint32_t max_rows;        /* per file; 0 = 10,000,000 */
    uint32_t max_field_bytes; /* 0 = 4096 */
} gs_openb_limits;

/* Rows read so far. Owns its arena (all strings) and the two row vectors; names are
 * unique per table (a duplicate is an error). Free with gs_openb_free(). */
typedef struct gs_openb {
    gs_arena arena;
    GS_VEC(gs_openb_node) nodes;
    GS_VEC(gs_openb_pod) pods;
    gs_intern node_names; /* duplicate detection */
    gs_intern pod_names;
} gs_openb;

void gs_openb_init(gs_openb *t);
void gs_openb_free(gs_openb *t);

/* Read a node / pod CSV file ("-" = stdin) and append its rows. Columns are found by the
 * header line: nodes need sn, cpu_milli, memory_mib, gpu (model optional); pods need name,
 * cpu_milli, memory_mib, num_gpu, gpu_milli (gpu_spec, qos, pod_phase, creation_time,
 * deletion_time, scheduled_time optional; empty time cells mean "unknown"). Unknown
 * columns are ignored; a column named twice is an error. Fields may be quoted ("a,b",
 * "say ""hi"""), lines end in LF or CRLF, empty lines are skipped. Errors (GS_ERR_PARSE for
 * CSV syntax, GS_ERR_INVALID for values, GS_ERR_LIMIT for bounds) carry file, line and
 * column and name the CSV column: "column cpu_milli: expected an integer, got \"x\"".
 * On error the rows of that file are not appended. */
int gs_openb_read_nodes(gs_openb *t, const char *path, const gs_openb_limits *lim, gs_error *err);
int gs_openb_read_pods(gs_openb *t, const char *path, const gs_openb_limits *lim, gs_error *err);
/* The same from a buffer (tests, fuzzers); `name` is used as the file in positions. */
int gs_openb_parse_nodes(gs_openb *t, const char *name, const char *data, size_t len,
                         const gs_openb_limits *lim, gs_error *err);
int gs_openb_parse_pods(gs_openb *t, const char *name, const char *data, size_t len,
                        const gs_openb_limits *lim, gs_error *err);

/* ================================================================ 2. fragmentation */

/* The seven categories, in the reference simulator's index order. */
typedef enum gs_frag_cat {
    GS_FRAG_Q1_LACK_BOTH = 0,
    GS_FRAG_Q2_LACK_GPU,
    GS_FRAG_Q3_SATISFIED,
    GS_FRAG_Q4_LACK_CPU,
    GS_FRAG_XL_SATISFIED,
    GS_FRAG_XR_LACK_CPU,
    GS_FRAG_NO_ACCESS,
    GS_FRAG_NCAT
} gs_frag_cat;

const char *gs_frag_cat_name(gs_frag_cat c); /* "q1_lack_both", ... as the simulator logs them */

/* The resource key of a pod: memory is deliberately not part of it. gpu_milli is the
 * clamped per-GPU share (0 for CPU-only pods, whose num_gpu is then 0 and gpu_type "").
 * cpu_milli is the non-zero request (100 when the trace says 0). */
typedef struct gs_frag_podres {
    int64_t cpu_milli;
    int32_t gpu_milli;    /* 0 .. 1000 */
    int32_t num_gpu;
    const char *gpu_type; /* "" = any model, else "A|B" (empty parts ignored, exact match) */
} gs_frag_podres;

/* One typical pod type with its popularity weight p_t (weights of a target sum to 1). */
typedef struct gs_frag_type {
    gs_frag_podres res;
    double weight;
    uint32_t count; /* pods of this key in the original trace (0 for hand-made targets) */
} gs_frag_type;

/* A target workload. Owns its arena (types array and type strings). */
typedef struct gs_frag_target {
    gs_frag_type *types; /* most popular first */
    uint32_t ntypes;
    uint32_t nkeys;      /* distinct keys in the trace */
    uint32_t npods;      /* pods counted */
    double coverage;     /* fraction of the pods whose key was taken, 0..1 */
    gs_arena arena;
} gs_frag_target;

/* Build the target workload as GetTypicalPods does with threshold `threshold_pct` (95 in
 * the experiments), step 1, CPU-only pods included, GPU weight 0: count pods per key, sort
 * by count descending (ties: larger cpu, then larger gpu_milli, larger num_gpu, larger
 * type string first), take keys until the cumulative count reaches threshold_pct% of the
 * pods, renormalise. `pods` entries must already be normalised keys (see gs_frag_podres).
 * npods == 0 gives an empty target. The target copies what it keeps. */
int gs_frag_target_workload(const gs_frag_podres *pods, uint32_t npods, double threshold_pct,
                            gs_frag_target *out, gs_error *err);
/* A target from an explicit list (weights used as given, e.g. the upstream unit tests). */
int gs_frag_target_from_list(const gs_frag_type *types, uint32_t ntypes, gs_frag_target *out,
                             gs_error *err);
void gs_frag_target_free(gs_frag_target *t);

/* A node as the fragmentation measure sees it. */
typedef struct gs_frag_node {
    int64_t cpu_left;                   /* milli */
    const char *model;                  /* "" for none */
    uint32_t ngpus;                     /* 0 .. GS_SIM_MAX_GPUS */
    uint16_t gpu_left[GS_SIM_MAX_GPUS]; /* milli left per GPU index, 0 .. 1000 */
} gs_frag_node;

/* Category of the node for one target type (fgd-method.md section d). */
gs_frag_cat gs_frag_classify(const gs_frag_node *n, const gs_frag_podres *t);
/* Does the type string admit the node model? "" admits every model; otherwise the model
 * must equal one of the non-empty '|'-separated names, and "" never matches a name. */
bool gs_frag_type_admits(const char *gpu_type, const char *model);
/* Node fragmentation F_n (sum of every category except q3_satisfied), milli-GPU. When
 * cats is non-NULL it receives the 7 category amounts. This and gs_frag_cluster return
 * NaN (and NaN amounts) when a small scratch allocation fails. */
double gs_frag_node_amount(const gs_frag_node *n, const gs_frag_target *t,
                           double cats[GS_FRAG_NCAT]);
/* A target prepared once for measuring many nodes (gs_frag_node_amount prepares it at
 * every call): its columns and its admission row for the nodes' model, which must be the
 * same for every node measured with it. NULL with err when out of memory. */
typedef struct gs_frag_prepared gs_frag_prepared;
gs_frag_prepared *gs_frag_prepare(const gs_frag_target *t, const char *model, gs_error *err);
/* gs_frag_node_amount of n (whose model is the prepared one) without allocating. */
double gs_frag_prepared_amount(const gs_frag_prepared *p, const gs_frag_node *n);
void gs_frag_prepared_free(gs_frag_prepared *p); /* NULL is fine */
/* Cluster fragmentation amount (sum of node categories except q3), milli-GPU; cats (may
 * be NULL) gets the cluster category amounts and *idle (may be NULL) the idle GPU milli
 * (the sum of all 7 categories). The ratio is 100 * amount / idle. */
double gs_frag_cluster(const gs_frag_node *nodes, uint32_t nnodes, const gs_frag_target *t,
                       double cats[GS_FRAG_NCAT], double *idle);

/* The FGD rule, the one home of it (the "fgd" policy and `gpusched extender --score fgd`):
 * a node's score for a placement that takes its fragmentation amount (gs_frag_node_amount,
 * milli-GPU) from `before` to `after` is int(sigmoid((before - after) / 1000) * 100),
 * truncated toward zero: 0..100, 50 when the amount does not change, higher for a smaller
 * increase (a decrease scores above 50). */
int gs_fgd_score(double before, double after);

/* ================================================================ 3. FGD-method experiments */

/* Policies (one entry of the ops table in policies.c each): "random", "dotprod",
 * "gpu-clustering", "gpu-packing", "bestfit", "fgd", "k8s-least", "k8s-most". */
typedef struct gs_fgd_policy_info {
    const char *name;    /* command-line name */
    const char *label;   /* sc_policy column of the artifact CSVs: "06-FGD"; k8s ones "07-K8sLeast" */
    const char *summary; /* one line */
} gs_fgd_policy_info;
/* The policy list (static). The first six are the paper's, in its order. */
const gs_fgd_policy_info *gs_fgd_policies(uint32_t *count);
/* Index of a policy by name, or -1 with GS_ERR_NOTFOUND listing the names. */
int gs_fgd_policy_find(const char *name, gs_error *err);

/* Cluster + trace, prepared once and shared read-only by runs. Nodes with 0 GPUs are kept
 * (they take CPU-only pods and add 0 fragmentation); the experiments use the GPU-node list.
 * The pods are the original trace rows; the target workload is built from them. */
typedef struct gs_fgd_workload gs_fgd_workload;

typedef struct gs_fgd_workload_opts {
    double typical_threshold_pct; /* 0 = 95 */
} gs_fgd_workload_opts;

/* Copies what it needs from the rows (they may be freed afterwards). NULL opts = defaults.
 * Fails with GS_ERR_INVALID when there is no node, or with GS_ERR_LIMIT beyond 1,000,000
 * nodes or 10,000,000 pods. */
gs_fgd_workload *gs_fgd_workload_new(const gs_openb_node *nodes, uint32_t nnodes,
                                     const gs_openb_pod *pods, uint32_t npods,
                                     const gs_fgd_workload_opts *opts, gs_error *err);
void gs_fgd_workload_free(gs_fgd_workload *w);
const gs_frag_target *gs_fgd_workload_target(const gs_fgd_workload *w);
uint32_t gs_fgd_workload_gpus(const gs_fgd_workload *w);        /* GPUs in the cluster */
uint32_t gs_fgd_workload_nnodes(const gs_fgd_workload *w);
uint32_t gs_fgd_workload_npods(const gs_fgd_workload *w);       /* original pods */
int64_t gs_fgd_workload_gpu_request(const gs_fgd_workload *w);  /* sum num_gpu*milli, milli */
/* Fragmentation of the empty cluster against the target, milli-GPU (check value 2). */
double gs_fgd_workload_empty_frag(const gs_fgd_workload *w);

typedef struct gs_fgd_opts {
    const char *policy;     /* a gs_fgd_policies() name; default "fgd" */
    uint64_t seed;          /* default 42 */
    double tune;            /* target total GPU request / capacity; default 1.3; <= 0: no
                               tuning, the shuffled trace as is */
    bool shuffle;           /* seeded shuffle of the name-sorted pods (default true) */
    bool record_categories; /* fill gs_fgd_result.categories (default false) */
    bool no_score_cache;    /* evaluate every score from scratch (identical results, slower):
                               for testing the per-node score cache */
} gs_fgd_opts;
void gs_fgd_opts_defaults(gs_fgd_opts *o);

/* One pod event (every pod of the tuned list, scheduled or failed), in order. */
typedef struct gs_fgd_event {
    int64_t arrived_milli; /* A: GPU milli of all pods tried so far, failed ones included */
    int64_t used_milli;    /* U: GPU milli allocated after the event */
    double frag_milli;     /* F: cluster fragmentation amount after the event */
    double frag_ratio;     /* R: 100 * F / idle, unrounded; 0 when nothing is idle */
    uint32_t pod;          /* index of the original pod (workload order = name order) */
    uint32_t clone;        /* 0 for an original, i >= 1 for its tuned clone "-tuned-i" */
    int32_t node;          /* node index (name order), -1 when the pod failed */
    uint8_t ngpus;         /* GPUs taken (indexes in gpus[]) */
    uint8_t gpus[GS_SIM_MAX_GPUS];
} gs_fgd_event;

/* Discrete curves over x = 0..nx-1 (x = arrived GPU request in % of capacity); NaN marks a
 * missing cell (written as an empty CSV cell). */
typedef struct gs_fgd_curves {
    uint32_t nx;       /* ceil(100 * tune) + 1, or the largest event x + 1 without tuning */
    double *alloc;     /* mean of round(U/total/10, 2) per bucket, rounded to 2 decimals */
    double *frag;      /* round(100 * mean(F) / 1000 / total, 2) */
    double *frag_ratio;/* mean of R rounded to 2 decimals per event, unrounded mean */
} gs_fgd_curves;

/* Failed pods grouped by shape, as analysis_fail.csv counts them. */
typedef struct gs_fgd_fail_shape {
    uint32_t count;
    int64_t cpu_milli;    /* rounded to 10 milli as "%.2f cores" prints it */
    uint32_t num_gpu;
    uint32_t gpu_milli;
    const char *gpu_type; /* "<none>" when unconstrained; lives in the workload */
} gs_fgd_fail_shape;

/* The InitSchedule block printed after the run. Ratios in % are numerator / denominator. */
typedef struct gs_fgd_summary {
    int64_t cpu_used, cpu_total;     /* milli */
    int64_t mem_used, mem_total;     /* MiB */
    uint32_t gpus_used, gpus_total;  /* GPUs with any allocation / all GPUs */
    int64_t milli_used, milli_total; /* GPU milli */
    double frag_milli;               /* cluster fragmentation amount */
    double frag_ratio;               /* 100 * frag / idle */
    double categories[GS_FRAG_NCAT];
    uint32_t pods, scheduled, failed;
} gs_fgd_summary;

/* One experiment's result. All arrays are malloc'ed by gs_fgd_run and released by
 * gs_fgd_result_free(); strings point into the workload (it must outlive the result). */
typedef struct gs_fgd_result {
    const char *policy;       /* name */
    const char *label;        /* "06-FGD" */
    uint64_t seed;
    double tune;
    uint32_t total_gpus;
    gs_fgd_event *events;
    uint32_t nevents;
    double *categories;       /* nevents * GS_FRAG_NCAT cluster amounts, or NULL */
    uint32_t first_failure;   /* index of the first failed event, nevents when none */
    gs_fgd_curves curves;
    gs_fgd_fail_shape *fails; /* by count descending, then cpu, num_gpu, gpu_milli, type */
    uint32_t nfails;
    gs_fgd_summary summary;
    uint32_t clones_added;    /* tune-up clones appended */
    uint32_t pods_removed;    /* tune-down removals */
    uint64_t score_evals;     /* policy score computations (cache misses), for benchmarks */
} gs_fgd_result;

/* Run one experiment: shuffle, tune, node tie-break permutation, then every pod in order.
 * Thread-safe for distinct `out` objects on a shared workload. */
int gs_fgd_run(const gs_fgd_workload *w, const gs_fgd_opts *opts, gs_fgd_result *out,
               gs_error *err);
void gs_fgd_result_free(gs_fgd_result *r);

/* Curve rows in the artifact CSV formats (no trailing newline is added by the row
 * functions; the header functions write the header line without newline either):
 *   GS_FGD_CSV_ALLOC:      workload,sc_policy,tune,seed,total_gpus,0..N   (allocation %)
 *   GS_FGD_CSV_FRAG:       workload,sc_policy,tune,seed,0..N              (frag % of capacity)
 *   GS_FGD_CSV_FRAG_RATIO: workload,sc_policy,tune,seed,0..N              (frag % of idle)
 * Numbers use the shortest text that reads back to the same double ("49.95", "50.0");
 * missing cells are empty. Appends to sb (check sb->oom). */
typedef enum gs_fgd_csv {
    GS_FGD_CSV_ALLOC = 0,
    GS_FGD_CSV_FRAG,
    GS_FGD_CSV_FRAG_RATIO,
} gs_fgd_csv;
void gs_fgd_csv_header(gs_fgd_csv which, uint32_t nx, gs_strbuf *sb);
void gs_fgd_csv_row(const gs_fgd_result *r, gs_fgd_csv which, const char *workload,
                    gs_strbuf *sb);
/* analysis_fail.csv rows: order,workload,sc_policy,tune,seed,num_pod,cpu_milli,num_gpu,
 * gpu_milli,gpu_type_req; one line per shape, each ended by '\n'. */
void gs_fgd_csv_fail_header(gs_strbuf *sb);
void gs_fgd_csv_fail_rows(const gs_fgd_result *r, const char *workload, gs_strbuf *sb);
/* Shortest round-trip text of a double ("50.0", "49.95", "" for NaN), as Python prints. */
void gs_fgd_put_number(gs_strbuf *sb, double v);

/* ================================================================ 4. replay inputs */

/* Annotations a replay reads per pod (gs_trace_times):
 *   gpusched.io/arrival:  RFC3339 timestamp or integer seconds (any epoch)
 *   gpusched.io/duration: Go duration ("2h30m", "90s", "1.5h", "300ms"; "d" = 24h also
 *                         accepted) or integer seconds; absent = runs forever */
#define GS_ANN_ARRIVAL "gpusched.io/arrival"
#define GS_ANN_DURATION "gpusched.io/duration"
/* Set on pods made from openb rows: the trace's qos value (informational). */
#define GS_ANN_OPENB_QOS "gpusched.io/openb-qos"

/* Trace qos -> PriorityClass. qos "*" matches every other value (and the empty one). */
typedef struct gs_qos_class {
    const char *qos;
    const char *class_name;
    int32_t value;
    gs_preempt_policy preemption; /* of the PriorityClass added for it */
} gs_qos_class;
/* The default table: LS -> latency-sensitive 10000, BE -> best-effort 0,
 * Burstable -> burstable 1000, "*" (Guaranteed, empty, anything else) -> burstable 1000.
 * A higher value preempts a lower one under the engine's DefaultPreemption. */
const gs_qos_class *gs_openb_default_qos(uint32_t *count);

typedef struct gs_openb_pod_opts {
    const gs_qos_class *qos;  /* NULL = gs_openb_default_qos() */
    uint32_t nqos;
    const char *namespace_;   /* NULL = "default" */
    bool add_priority_classes;/* add a PriorityClass per class used that the snapshot lacks
                                 (default true via gs_openb_pod_opts_defaults) */
    bool times;               /* set gpusched.io/arrival and /duration (default true) */
} gs_openb_pod_opts;
void gs_openb_pod_opts_defaults(gs_openb_pod_opts *o);

/* Append openb nodes to a snapshot (before gs_snapshot_finish): allocatable = capacity =
 * cpu <cpu_milli>m, memory <memory_mib>Mi, pods 1001, and for GPU nodes
 * alibabacloud.com/gpu-count = gpus, alibabacloud.com/gpu-milli = 1000*gpus with label
 * alibabacloud.com/gpu-card-model = model. CPU-only rows (gpu 0) get no GPU resources and
 * no label. meta.src = the CSV file and line. Names must not already be in the snapshot.
 * On error nothing is added. */
int gs_openb_add_nodes(gs_snapshot *snap, const gs_openb *t, gs_error *err);
/* Append openb pods: one container "main" with requests = limits = cpu <cpu_milli>m and
 * memory <memory_mib>Mi; when num_gpu != 0 the annotations gpu-milli (clamped to 0..1000),
 * gpu-count and gpu-card-model (gpu_spec with empty parts removed, when non-empty), as the
 * trace converter writes them; priorityClassName from the qos table; and, when opts->times,
 * gpusched.io/arrival = creation_time and gpusched.io/duration = deletion_time -
 * scheduled_time (deletion_time - creation_time when not scheduled; 0 when that is
 * negative; absent, i.e. runs forever, when the deletion time is unknown). On error
 * nothing is added. */
int gs_openb_add_pods(gs_snapshot *snap, const gs_openb *t, const gs_openb_pod_opts *opts,
                      gs_error *err);

/* JSON-lines trace: one pod per line (blank lines skipped), docs/simulate-fgd.md:
 *   {"name": "train-1",                 required, <= 253 bytes
 *    "namespace": "team-a",             default "default"
 *    "arrival": 120 | "2024-05-01T10:00:00Z",       default 0
 *    "duration": 3600 | "2h30m" | null,             absent/null = forever
 *    "cpu": "4" | 0.5 | "500m",         quantity (JSON numbers are cores)
 *    "memory": "16Gi" | 1073741824,     quantity (JSON numbers are bytes)
 *    "gpu": 2 | {"count": 1, "milli": 500, "memory": 8192, "models": "A100|H100" or [..],
 *            "mig": "1g.10gb"},         canonical request (gpu.h); a number = whole GPUs
 *    "priorityClassName": "high", "priority": 100, "schedulerName": "...",
 *    "nodeName": "n1",                  already bound (present from the start)
 *    "tolerations": [{"key","operator","value","effect","tolerationSeconds"}],
 *    "nodeSelector": {..}, "labels": {..}, "annotations": {..}}
 * Unknown keys are errors. Whole and shared GPUs become the canonical annotations
 * gpusched.io/gpu-count, -milli, -memory, -model; MIG becomes the resource
 * nvidia.com/mig-<profile> in requests and limits. Errors carry file:line:col. */
typedef struct gs_trace_limits {
    size_t max_file_bytes; /* 0 = 256 MiB */
    uint32_t max_line_bytes; /* 0 = 1 MiB */
    uint32_t max_pods;     /* 0 = 10,000,000 */
} gs_trace_limits;
int gs_trace_read_jsonl(gs_snapshot *snap, const char *path, const gs_trace_limits *lim,
                        gs_error *err);
int gs_trace_parse_jsonl(gs_snapshot *snap, const char *name, const char *data, size_t len,
                         const gs_trace_limits *lim, gs_error *err);

/* Arrival and duration of every snapshot pod, for gs_replay_run(): arrival and duration
 * must hold snap->pods.n entries each. Bound pods (spec.nodeName set) arrive at INT64_MIN
 * (present from the start). Otherwise arrival = gpusched.io/arrival, else the creation
 * timestamp, else 0. duration = gpusched.io/duration, else GS_REPLAY_FOREVER (INT64_MAX).
 * A malformed annotation fails with GS_ERR_INVALID and the pod's position. */
int gs_trace_times(const gs_snapshot *snap, int64_t *arrival, int64_t *duration, gs_error *err);

/* Go duration grammar ([0-9]+(.[0-9]*)?|.[0-9]+)(ns|us|µs|ms|s|m|h|d), repeated; or an
 * integer of seconds. Negative values are rejected. Rounded up to whole seconds. */
int gs_trace_parse_duration(const char *s, int64_t *seconds);
/* RFC3339 timestamp (Unix seconds) or integer seconds. */
int gs_trace_parse_time(const char *s, int64_t *seconds);

#ifdef __cplusplus
}
#endif
#endif
