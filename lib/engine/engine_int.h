/*
 * engine_int.h - internals of the scheduling engine (not for faces).
 *
 * State layout (the hot loop walks these arrays):
 *   nodes[]        one gs_cnode per node, sorted by node name
 *   alloc[], used[] flat int64 arrays, R values per node (R = c->ndims): dim 0 cpu (milli),
 *                  1 memory (bytes), 2 ephemeral-storage (bytes), 3.. scalar resources that
 *                  the GPU layer does not manage (hugepages-*, other extended resources)
 *   pods[]         one gs_cpod per snapshot pod (same index), with its effective request in
 *                  req[] (R values per pod) and its canonical GPU request
 * Taints are interned into taint sets (identical taint lists share an id) so each pod
 * evaluates TaintToleration once per distinct set, not once per node.
 */
#ifndef GPUSCHED_ENGINE_INT_H
#define GPUSCHED_ENGINE_INT_H

#include "gpusched/dra.h"
#include "gpusched/engine.h"
#include "gpusched/util.h"

#define GS_DIM_CPU 0
#define GS_DIM_MEM 1
#define GS_DIM_EPH 2
#define GS_MAX_DIMS 32
#define GS_NZ_CPU 100                     /* non-zero default cpu request, milli */
#define GS_NZ_MEM (200LL * 1024 * 1024)   /* non-zero default memory request, bytes */

enum {
    GS_PS_NONE = 0,   /* not yet handled */
    GS_PS_BOUND,      /* occupies c->pods[i].node */
    GS_PS_PENDING,    /* unschedulable or waiting */
    GS_PS_REJECTED,
    GS_PS_PREEMPTED,
    GS_PS_SKIPPED,
};

typedef struct gs_taintset {
    const gs_taint *taints;
    uint32_t n;
    uint32_t n_prefer; /* PreferNoSchedule taints */
} gs_taintset;

typedef struct gs_cnode {
    uint32_t snap;         /* index into snapshot nodes */
    const gs_node *obj;
    uint32_t taintset;
    uint8_t unschedulable;
    uint32_t max_pods;
    uint32_t npods;
    int64_t nz_cpu, nz_mem; /* non-zero requested cpu/memory (scoring) */
    gs_node_gpus gpus;
    GS_VEC(uint32_t) pods;  /* pods bound here (cluster pod indexes) */
    int32_t min_prio;       /* lowest priority among pods (valid when pods.n > 0) */
    gs_gpu_free free_cache; /* gs_gpu_free_summary of gpus at node version free_ver - 1 */
    uint32_t free_ver;      /* 0 = none */
} gs_cnode;

typedef struct gs_cpod {
    const gs_pod *obj;
    int32_t node;           /* cluster node index or -1 */
    int32_t priority;
    uint8_t state;          /* GS_PS_* */
    uint8_t never_preempt;  /* preemptionPolicy Never */
    uint8_t has_gpu;        /* gpu.kind != NONE (device-plugin GPU accounting) */
    uint8_t uses_gpu;       /* a GPU pod: has_gpu, or its resource claims ask GPUs (dra.h) */
    uint8_t requests_nothing; /* cpu, memory, ephemeral and all scalars 0 */
    uint8_t existing;       /* came from the API server (uid/phase/nodeName) */
    int64_t start;          /* start time for preemption ordering */
    int64_t nz_cpu, nz_mem;
    const gs_toleration *tols;
    uint32_t ntols;
    gs_gpu_request gpu;
    gs_gpu_assign assign;
    uint32_t decision;      /* index into decisions, UINT32_MAX none */
    const char *reject;     /* admission/validation rejection message, or NULL */
    uint32_t shape;         /* pods with equal shape filter and score identically */
    uint32_t *pdbs;         /* matching PDB indexes */
    uint32_t npdbs;
    uint32_t dra;           /* index into c->dra_pods (a pod with resource claims or extended
                               resources a DeviceClass backs), or UINT32_MAX */
    gs_dra_ext *ext;        /* its extended resources a DeviceClass backs (DRAExtendedResource) */
    uint32_t next;
} gs_cpod;

/* Score parts (score.c). */
typedef struct res_plan {
    int32_t dim[GS_MAX_SCORE_RESOURCES]; /* dim index, RES_GPU, or RES_SKIP */
    int32_t weight[GS_MAX_SCORE_RESOURCES];
    uint32_t n;
} res_plan;

typedef struct gs_score_ctx {
    res_plan plan;
    bool do_bal, do_aff, do_taint, do_gpu;
} gs_score_ctx;

/* A node's score before normalisation: depends only on the pod's shape and the node. */
typedef struct gs_node_score {
    int64_t base;      /* weighted Fit + BalancedAllocation + GPUShareBinpack */
    int32_t raw_taint; /* untolerated PreferNoSchedule taints */
    int32_t raw_aff;   /* sum of matching preferred-term weights */
} gs_node_score;

/* Per-node filter verdict of the current pod (scratch). */
typedef struct gs_nstatus {
    uint16_t reasons[4];    /* reason ids (c->reasons) */
    uint8_t nreasons;
    uint8_t unresolvable;
} gs_nstatus;

struct gs_cluster {
    const gs_snapshot *snap;
    gs_config cfg;
    gs_arena arena;          /* strings and arrays that live as long as the cluster */
    gs_intern dims;          /* resource name -> dim */
    uint32_t ndims;
    gs_cnode *nodes;
    uint32_t nnodes;
    int64_t *alloc;          /* nnodes * ndims */
    int64_t *used;           /* nnodes * ndims */
    gs_cpod *pods;
    uint32_t npods;
    int64_t *req;            /* npods * ndims */
    gs_taintset *taintsets;
    uint32_t ntaintsets;
    int32_t *node_of_snap;   /* snapshot node index -> cluster node index */
    /* decisions */
    GS_VEC(gs_decision) decisions;
    gs_intern reasons;       /* reason strings -> ids */
    GS_VEC(char *) warnings;
    /* scratch for one scheduling cycle */
    gs_nstatus *status;      /* nnodes */
    int32_t *taint_verdict;  /* ntaintsets: -2 unknown, -1 ok, else untolerated taint index */
    int32_t *prefer_cache;   /* ntaintsets: -1 unknown, else untolerated PreferNoSchedule count */
    int32_t *taint_reason;   /* ntaintsets: reason id of the untolerated taint (with verdict) */
    int32_t *dim_reason;     /* ndims: reason id of "Insufficient <dim>" */
    int32_t reason_unschedulable, reason_affinity, reason_too_many_pods, reason_model;
    int32_t reason_no_victims, reason_not_helpful; /* preemption (preempt.c) */
    int32_t gpu_reason;      /* current pod: "Insufficient <its GPU resource>", -1 unknown */
    uint32_t cache_pod;      /* pod the per-pod caches above belong to, UINT32_MAX none */
    uint32_t *feasible;      /* nnodes */
    gs_node_score *nscore;   /* nnodes: unnormalised scores of the current pod */
    int64_t *score;          /* nnodes: final scores of the current pod */
    gs_gpu_assign *assign_scratch; /* nnodes */
    gs_rng rng;
    uint32_t next_start;     /* rotating start for percentageOfNodesToScore */
    gs_quantity **quota_used; /* per quota, per spec.hard entry */
    /* pod-shape cache (schedule.c): per recently used shape, per node, the filter verdict
     * and unnormalised score, valid while the node's version is unchanged */
    gs_intern shapes;
    uint32_t *nver;          /* nnodes: bumped on every real bind/unbind/re-partition */
    struct gs_shape_cache *scache;
    uint32_t nscache;
    uint64_t scache_clock;
    /* node-change log: every version bump appends the node; entry i has the absolute
     * position clog_base + i (shape caches catch up from their own position) */
    uint32_t *clog;
    uint32_t nclog, clog_cap;
    uint64_t clog_base;
    /* > 0 during a preemption dry run: binds and unbinds that will be undone exactly
     * leave the versions (and the log) alone; gs__dry_end drops the GPU free summary */
    uint32_t dry;
    /* preemption scratch (preempt.c), grown as needed */
    uint32_t *pre_lower;
    gs_gpu_assign *pre_saved;
    uint8_t *pre_viol, *pre_victim;
    uint32_t pre_cap;
    uint32_t *pre_defer;     /* nnodes: nodes the resource bound ruled out */
    int64_t *pre_freed;      /* ndims */
    uint16_t *pre_devpods;   /* 64 devices (preempt.c) */
    /* dynamic use (replay): told about every real bind (bound=true) and unbind; dry runs
     * (which restore the node exactly) are not reported */
    void (*on_change)(void *ctx, uint32_t pod, uint32_t node, bool bound);
    void *on_change_ctx;
    /* Dynamic Resource Allocation (NULL when the snapshot has no DRA objects and no pod
     * uses claims): per pod with claims, its resolved claims and the allocation it holds
     * (or held, while unbound by a dry run: dra_saved says a bind restores it) */
    gs_dra *dra;
    gs_dra_pod *dra_pods;
    gs_dra_alloc *dra_allocs;
    uint8_t *dra_saved;
    uint32_t ndra_pods;
    int32_t reason_dra_alloc, reason_dra_avail;
    const char *dra_error;   /* current pod: a DynamicResources filter error, or NULL */
    gs_explain explain;
    bool explained;
    bool ran;
};

/* cluster.c */
/* The GPU share (millionths of a GPU) the DRA devices a pod allocated hold (the record of
 * its last bind, or after an unbind of the devices it gave back). */
int64_t gs__dra_gpu_micro(const gs_cluster *c, uint32_t pod);
/* DRAExtendedResource: bit i set when node does not advertise the pod's ext[i] resource
 * (DRA serves it there), and the pod's claim record for that node (rec gets the
 * extended-resource claim when any bit is set and it has none yet). */
uint32_t gs__dra_ext_mask(const gs_cluster *c, uint32_t pod, uint32_t node);
void gs__dra_pod_on(gs_cluster *c, uint32_t pod, uint32_t node, gs_dra_pod *rec);
/* Does DRA serve the pod's device-plugin GPU resource on node (it does not advertise it)? */
bool gs__gpu_by_dra(const gs_cluster *c, uint32_t pod, uint32_t node);
/* Is `resource` among the pod's DRA-backed extended resources whose bit is set in mask? */
bool gs__dra_ext_has(const gs_cpod *p, uint32_t mask, const char *resource);
int gs__reason_id(gs_cluster *c, const char *reason);
int gs__add_warning(gs_cluster *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gs__bind(gs_cluster *c, uint32_t pod, uint32_t node, const gs_gpu_assign *a);
void gs__unbind(gs_cluster *c, uint32_t pod);
uint32_t gs__new_decision(gs_cluster *c, uint32_t pod, gs_outcome o);
int32_t gs__node_by_name(const gs_cluster *c, const char *name); /* cluster index or -1 */
/* Re-partition MIG GPU `dev` of `node` (none of its instances in use): see
 * gs_node_gpus_mig_relayout. The pods bound on the node keep their instances (their
 * assignments follow the moved indexes), profiles new to the node are advertised under
 * names[i] or, when NULL, the catalog's mixed-strategy name, and the node's version
 * moves (caches). 0, or -1 with nothing changed. */
int gs__mig_relayout(gs_cluster *c, uint32_t node, uint32_t dev, const uint8_t *pidx,
                     const uint8_t *starts, uint32_t n, const char *const *names);
static inline int64_t *gs__alloc(gs_cluster *c, uint32_t n) { return c->alloc + (size_t)n * c->ndims; }
static inline int64_t *gs__used(gs_cluster *c, uint32_t n) { return c->used + (size_t)n * c->ndims; }
static inline int64_t *gs__req(gs_cluster *c, uint32_t p) { return c->req + (size_t)p * c->ndims; }
/* A node's state changed for real: new version, logged for the shape caches. During a
 * dry run only the node's GPU free summary is dropped (the run restores the state). */
void gs__node_changed(gs_cluster *c, uint32_t node);
static inline void gs__dry_begin(gs_cluster *c) { c->dry++; }
static inline void gs__dry_end(gs_cluster *c, uint32_t node)
{
    c->dry--;
    c->nodes[node].free_ver = 0;
}
/* The node's GPU free summary, recomputed only when the node changed since (its version). */
static inline const gs_gpu_free *gs__gpu_free(gs_cluster *c, uint32_t node)
{
    gs_cnode *n = &c->nodes[node];
    if (n->free_ver == 0 || n->free_ver != c->nver[node] + 1) {
        gs_gpu_free_summary(&n->gpus, &n->free_cache);
        n->free_ver = c->nver[node] + 1;
    }
    return &n->free_cache;
}

/* requests.c: effective pod requests (k8s-semantics 3.1) */
/* Effective request of one resource name (requests, or limits when use_limits). */
gs_quantity gs__pod_effective(const gs_pod *pod, const char *name, bool use_limits);
/* Non-zero cpu (milli) and memory (bytes) for scoring. */
void gs__pod_nonzero(const gs_pod *pod, int64_t *cpu, int64_t *mem);
/* Visit every resource name the pod mentions in requests (or limits). */
typedef void (*gs_name_fn)(const char *name, void *ctx);
void gs__pod_resource_names(const gs_pod *pod, bool limits, gs_name_fn fn, void *ctx);

/* filter.c */
int gs__filter_init(gs_cluster *c); /* precompute reason ids; 0 or -1 (OOM) */
/* Run all filters of pod on node; fills c->status[node]; on success and when the pod has
 * a GPU request, writes the chosen devices into *assign. Returns true when feasible. */
bool gs__filter(gs_cluster *c, uint32_t pod, uint32_t node, gs_gpu_assign *assign);
/* Resource-only filters (NodeResourcesFit + GPU), used by preemption dry runs. */
bool gs__filter_resources(gs_cluster *c, uint32_t pod, uint32_t node, gs_gpu_assign *assign);
void gs__reset_pod_cache(gs_cluster *c);
/* Make the per-pod caches valid for pod (reset them when they belong to another). */
void gs__pod_cache_for(gs_cluster *c, uint32_t pod);
/* Upstream aggregated message "0/N nodes are available: ..." from c->status. */
char *gs__fit_error(gs_cluster *c, uint32_t nnodes_considered, gs_reason_count **out,
                    uint32_t *nout);

/* score.c */
void gs__score_prepare(gs_cluster *c, uint32_t pod, gs_score_ctx *ctx);
void gs__score_node(gs_cluster *c, const gs_score_ctx *ctx, uint32_t pod, uint32_t node,
                    const gs_gpu_assign *a, gs_node_score *out);


/* schedule.c */
void gs__shape_cache_free(gs_cluster *c);
size_t gs__shape_cache_entry_bytes(uint32_t nnodes); /* per resident shape */
/* One scheduling cycle for an admitted pod (decision recorded, preemption included).
 * Returns true when the pod was bound. */
bool gs__schedule_one(gs_cluster *c, uint32_t pod, uint32_t order);
/* Filter only, through the shape cache: is pod feasible on node now? */
bool gs__feasible_cached(gs_cluster *c, uint32_t pod, uint32_t node);

/* preempt.c */
/* DefaultPreemption PostFilter, called after a failed Filter pass (c->status holds the
 * per-node verdicts). Returns the chosen node (cluster index) with its victims (arena
 * array), or -1 with *message set to the "preemption: ..." text. Does not change state. */
int32_t gs__preempt(gs_cluster *c, uint32_t pod, uint32_t **victims, uint32_t *nvictims,
                    const char **message);

/* admission.c */
/* Priority + quota admission of a new pod: 0 admitted, -1 rejected with *message. */
int gs__admit(gs_cluster *c, uint32_t pod, const char **message);
/* Resolve the priority of a pod that already exists (spec.priority or its class). */
void gs__resolve_existing_priority(gs_cluster *c, uint32_t pod);
/* Usage of pod for one quota key ("requests.nvidia.com/gpu"); false if not tracked. */
bool gs__quota_usage(const gs_pod *pod, const char *key, gs_quantity *out);
/* Does quota q apply to pod (namespace and scopes)? */
bool gs__quota_matches(const gs_quota *q, const gs_pod *pod);
int gs__quota_init(gs_cluster *c, gs_error *err);
void gs__quota_charge(gs_cluster *c, uint32_t pod);
void gs__quota_free(gs_cluster *c);
/* Give back a pod's quota usage (it completed or was deleted). */
void gs__quota_release(gs_cluster *c, uint32_t pod);

#endif
