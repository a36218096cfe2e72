/*
 * mig.h - the offline MIG toolkit: catalog listing data, mig-parted configuration files
 * (parse with file:line:col of every entry, validate against the placement rules), the
 * `gpusched mig plan` input format and the planner that right-sizes MIG profiles for
 * inference services and packs them onto GPUs (docs/mig-planner.md).
 *
 * The catalog itself (models, profiles, legal starts, gs_mig_layout_fits) lives in gpu.h;
 * this module builds on it and never changes it.
 *
 * Ownership:
 *  - gs_mig_parted, gs_mig_plan_input: every string and array they point to lives in their
 *    own arena and dies with gs_mig_parted_free() / gs_mig_plan_input_free().
 *  - gs_mig_report, gs_mig_plan, gs_mig_waste arrays: malloc'ed, freed by their _free().
 *  - gs_mig_model / gs_mig_profile pointers are static catalog data (live forever).
 * The library never prints and never exits; errors go into a gs_error with file, line,
 * column and an object path ("mig-configs.balanced[1].mig-devices").
 *
 * Input bounds (GS_ERR_LIMIT beyond): files of GS_MIG_MAX_FILE_BYTES, YAML nested
 * GS_MIG_MAX_DEPTH deep, GS_MIG_MAX_CONFIGS configs, GS_MIG_MAX_ENTRIES entries per config,
 * GS_MIG_MAX_SERVICES services, GS_MIG_MAX_NODES nodes, GS_MIG_MAX_GPUS_PER_NODE GPUs
 * per node, GS_MIG_MAX_GPUS GPUs in all, GS_MIG_MAX_REPLICAS replicas per service.
 */
#ifndef GPUSCHED_MIG_H
#define GPUSCHED_MIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/error.h"
#include "gpusched/gpu.h"
#include "gpusched/util.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GS_MIG_MAX_INST 8            /* GPU instances on one GPU (8 memory slices) */
#define GS_MIG_MAX_PROFILES 16       /* profiles of one model in the catalog (RTX PRO: 11) */
#define GS_MIG_MAX_CATALOG 16        /* catalog models (gs_mig_models() has 13) */
#define GS_MIG_MAX_FILE_BYTES (32u << 20)
#define GS_MIG_MAX_DEPTH 32
#define GS_MIG_MAX_CONFIGS 4096
#define GS_MIG_MAX_ENTRIES 256
#define GS_MIG_MAX_PROBLEMS 64       /* schema problems collected per file */
#define GS_MIG_MAX_SERVICES 1024
#define GS_MIG_MAX_NODES 20000
#define GS_MIG_MAX_GPUS_PER_NODE 64
#define GS_MIG_MAX_GPUS 65536
#define GS_MIG_MAX_REPLICAS 100000
#define GS_MIG_NO_SERVICE 0xffffu
#define GS_MIG_NO_PROFILE 0xffu

/* ---------------------------------------------------------------- catalog listing */
/* Legal start slots of a profile on its model, lowest first (a start s is legal when its
 * bit is set and s + mem_slices <= memory_slices). Returns the count (<= 8). */
uint32_t gs_mig_profile_starts(const gs_mig_model *m, const gs_mig_profile *p, uint8_t *starts);
/* "0,2,4,6" into buf (always NUL-terminated). Returns the length. */
size_t gs_mig_starts_text(const gs_mig_model *m, const gs_mig_profile *p, char *buf, size_t cap);
/* Memory of a profile in MiB. When the catalog does not know it (mem_mib 0), an estimate:
 * the largest known profile of the model scaled by memory slices, never above the
 * model's share (mem_mib * slices / memory_slices); *estimated is then set. */
uint32_t gs_mig_profile_mem(const gs_mig_model *m, const gs_mig_profile *p, bool *estimated);
/* True for the plain profiles ("3g.40gb"), false for attribute variants ("1g.10gb+me",
 * "1g.24gb+me.all", "1g.24gb-me", "1g.24gb+gfx"). */
bool gs_mig_profile_is_plain(const gs_mig_profile *p);
/* Index of a model in gs_mig_models(), or -1. */
int gs_mig_model_index(const gs_mig_model *m);

/* ---------------------------------------------------------------- layouts */
/* The GPU instances of one GPU. `start` is filled by gs_mig_layout_place(). Instances
 * are kept in canonical order: profile index ascending, then start ascending. */
typedef struct gs_mig_layout {
    bool mig_enabled;
    uint8_t n;
    uint8_t profile[GS_MIG_MAX_INST]; /* index into model->profiles */
    uint8_t start[GS_MIG_MAX_INST];
} gs_mig_layout;

/* Build a layout from per-profile counts (counts[i] for model->profiles[i]) and place it.
 * Returns 0, or -1 when the counts cannot coexist on one GPU (out is then still filled
 * with the instances, starts 0). */
int gs_mig_layout_from_counts(const gs_mig_model *m, const uint8_t *counts, gs_mig_layout *out);
/* Per-profile counts of a layout (counts must have GS_MIG_MAX_PROFILES entries). */
void gs_mig_layout_counts(const gs_mig_layout *l, uint8_t *counts);
/* Sort into canonical order and assign starts with gs_mig_layout_fits. 0 or -1. */
int gs_mig_layout_place(const gs_mig_model *m, gs_mig_layout *l);
/* Compute and memory slices the instances use. */
void gs_mig_layout_slices(const gs_mig_model *m, const gs_mig_layout *l, uint32_t *compute,
                          uint32_t *memory);
/* Text: with_starts "3g.40gb@4 2g.20gb@0" (canonical order), else "3g.40gb x2, 1g.10gb x1";
 * "mig disabled" / "mig enabled, empty". Returns the length. */
size_t gs_mig_layout_text(const gs_mig_model *m, const gs_mig_layout *l, bool with_starts,
                          char *buf, size_t cap);
/* Why a set of per-profile counts does not fit one GPU, in words ("4g.40gb x2: at most 1
 * per GPU"). Writes "" and returns false when it does fit. */
bool gs_mig_layout_explain(const gs_mig_model *m, const uint8_t *counts, char *buf, size_t cap);

/* The GPU operator's built-in named configs for a model (nvidia.md 2.2): "all-disabled",
 * "all-enabled", "all-balanced" (2x 1g + 1x 2g + 1x 3g on 7-slice GPUs, 2x 1g + 1x 2g on
 * A30, with the plain profile of each size that has the highest max count) and
 * "all-<profile>" at its max count with '+' written as '.'. Returns true and fills out when
 * `name` is one of them for this model. */
bool gs_mig_builtin_layout(const gs_mig_model *m, const char *name, gs_mig_layout *out);
/* Names of the built-in configs of a model, in the order above: index i < count. */
uint32_t gs_mig_builtin_count(const gs_mig_model *m);
void gs_mig_builtin_name(const gs_mig_model *m, uint32_t i, char *buf, size_t cap);

/* ---------------------------------------------------------------- mig-parted files */
/* One "profile: count" of mig-devices. CI-split names ("1c.3g.40gb") are kept as written;
 * ci_slices is then the C, else 0. */
typedef struct gs_mig_devcount {
    const char *profile;
    uint32_t count;
    uint8_t ci_slices;
    int line, col;
} gs_mig_devcount;

/* One entry of a named config. devices: all_devices, or the listed indexes.
 * filters: device-filter PCI ids as 0x<device><vendor> (subsystem ids ignored). */
typedef struct gs_mig_entry {
    int line, col;
    bool all_devices;
    uint16_t *devices;
    uint32_t ndevices;
    uint32_t *filters;
    uint32_t nfilters;
    int filter_line, filter_col;
    bool mig_enabled;
    gs_mig_devcount *mig_devices;
    uint32_t nmig_devices;
    int mig_devices_line, mig_devices_col;
} gs_mig_entry;

typedef struct gs_mig_config {
    const char *name;
    int line, col;
    gs_mig_entry *entries;
    uint32_t nentries;
    /* Where the config was read from when the file is not a bare mig-parted file: the
     * index into gs_mig_parted.sources (UINT32_MAX: the file itself). */
    uint32_t source;
} gs_mig_config;

/* A mig-parted config embedded in a Kubernetes object (the GPU operator ships it as the
 * ConfigMap default-mig-parted-config, the YAML as a string under data.<key>). Positions
 * of everything read from it are translated into the outer file: exactly for a literal
 * block scalar (`key: |`) and for a double-quoted string on one line (JSON, `kubectl get
 * cm -o json`); for other string styles (folded, multi-line quoted, plain) they point at
 * the start of the string and `approximate` is set. */
typedef struct gs_mig_source {
    const char *kind;      /* "ConfigMap" */
    const char *name;      /* metadata.name ("" when absent) */
    const char *key;       /* the data key ("config.yaml") */
    uint32_t document;     /* 0-based document of the file */
    int line, col;         /* the data key in the outer file */
    bool approximate;
} gs_mig_source;

typedef struct gs_mig_parted {
    gs_arena arena;
    const char *file;
    gs_mig_config *configs;
    uint32_t nconfigs;
    gs_mig_source *sources;  /* embedded configs read (ConfigMap data strings) */
    uint32_t nsources;
    uint32_t documents;      /* YAML documents in the file */
    uint32_t ignored;        /* documents that hold no mig-parted config (a DaemonSet, ...) */
    /* Schema problems found while parsing (unknown or missing fields, wrong types). The
     * entry or config in question is left out; parsing goes on with the next one. */
    gs_error *problems;
    uint32_t nproblems;
    bool problems_truncated; /* more than GS_MIG_MAX_PROBLEMS */
} gs_mig_parted;

/* Parse a mig-parted configuration (`version: v1`, mig-configs) in the forms NVIDIA ships
 * it: a bare file; a ConfigMap whose data values hold the config as a string (also as
 * `kubectl get cm -o yaml|json` prints it, or inside a `kind: List`); a multi-document
 * file where such ConfigMaps or bare configs sit next to other objects (a DaemonSet, a
 * ServiceAccount: counted in `ignored`, not read). Configs of every document are merged
 * in file order. Returns 0 (problems may still be listed), or -1 with err for unreadable
 * input: YAML syntax errors (GS_ERR_PARSE), bounds (GS_ERR_LIMIT), input that holds no
 * mig-parted config at all (GS_ERR_INVALID). `file` names the input in errors. out must
 * be freed with gs_mig_parted_free() either way. */
int gs_mig_parted_parse(gs_mig_parted *out, const char *file, const char *data, size_t len,
                        gs_error *err);
void gs_mig_parted_free(gs_mig_parted *p);

/* The layout mig-parted gives GPU `gpu` of a `model` GPU node under config `name`: the
 * first entry of the config that selects the GPU (devices: all or the index) and the
 * model (no device-filter, or one naming a PCI id of the model). When cfg is NULL or has
 * no config of that name, the operator's built-in configs (gs_mig_builtin_layout) are used.
 * Returns 1 with *out filled (mig_enabled false: a whole GPU), 0 when no entry selects the
 * GPU, -1 with err when the config is unknown or its entry does not fit the model (file,
 * line and path of the entry). */
int gs_mig_parted_gpu_layout(const gs_mig_parted *cfg, const char *name, const gs_mig_model *model,
                             uint32_t gpu, gs_mig_layout *out, gs_error *err);

/* Does this data look like a bare mig-parted file (a top-level `mig-configs` or `version`
 * key before any `apiVersion`, or a JSON "mig-configs" key) rather than a Kubernetes
 * object or a gpusched document? Cheap textual test. */
bool gs_mig_looks_like_parted(const char *data, size_t len);
/* Does this data hold a mig-parted config in any form gs_mig_parted_parse reads: a bare
 * file, or a `mig-configs` key anywhere (a ConfigMap, a multi-document file) in a file
 * that is not a MigPlan / MigInventory? The `mig validate` dispatch test. */
bool gs_mig_has_parted_config(const char *data, size_t len);

typedef enum gs_mig_verdict {
    GS_MIG_OK = 0,
    GS_MIG_INVALID,
    GS_MIG_SKIPPED, /* not checked: the entry does not apply to the model asked for */
    GS_MIG_UNKNOWN_MODEL, /* not checked: the entry is for GPUs the catalog does not know
                             (its device-filter names no catalog GPU, or no catalog GPU
                             offers its profiles); a note, an error only when strict */
} gs_mig_verdict;

/* One checked (entry, model). Problems found by the parser appear as INVALID checks with
 * entry == UINT32_MAX when they concern a whole config or the file. */
typedef struct gs_mig_check {
    uint32_t config;           /* index into configs (UINT32_MAX: file level) */
    uint32_t entry;            /* index into entries (UINT32_MAX: config level) */
    const gs_mig_model *model; /* the model checked; NULL when none could be named */
    uint32_t models_ok;        /* entries without filter or model: bit i = fits catalog model i */
    gs_mig_verdict verdict;
    gs_mig_layout layout;      /* OK: the GPU instances with a valid placement */
    gs_error err;              /* INVALID / SKIPPED: file:line:col, object path, reason */
} gs_mig_check;

typedef struct gs_mig_report {
    gs_mig_check *v;
    uint32_t n, cap;
    uint32_t nok, ninvalid, nskipped, nunknown;
} gs_mig_report;

/*
 * Validate every entry of every config. With `model` (a node's GPU model) each entry is
 * checked against it (SKIPPED when its device-filter excludes the model). Without one, an
 * entry with a device-filter is checked against each catalog model the filter names (PCI
 * ids outside the catalog give one UNKNOWN_MODEL check), and an entry without a filter is
 * valid when it fits at least one catalog model that offers all its profiles (models_ok
 * lists them; UNKNOWN_MODEL when no catalog model offers them). Rules: profiles must exist
 * for the model, per profile max counts, at most one +me instance, a +me.all instance
 * only next to -me ones, and a non-overlapping assignment of legal starts
 * (gs_mig_layout_fits). CI-split profiles "<C>c.<G>g.<GB>gb" need
 * ceil(count / floor(G / C)) GPU instances of "<G>g.<GB>gb". Duplicate device indexes in
 * one entry, or indexes claimed by two entries that can apply to the same GPU, are errors.
 * Appends to rep (zero-initialise it first); returns 0, or -1 on out of memory.
 */
int gs_mig_parted_validate(const gs_mig_parted *cfg, const gs_mig_model *model,
                           gs_mig_report *rep, gs_error *err);
void gs_mig_report_free(gs_mig_report *rep);

/* ---------------------------------------------------------------- plan input */
typedef enum gs_mig_dtype {
    GS_MIG_DT_UNSET = 0,
    GS_MIG_DT_FP32,
    GS_MIG_DT_FP16,
    GS_MIG_DT_BF16,
    GS_MIG_DT_FP8,
    GS_MIG_DT_INT8,
    GS_MIG_DT_INT4,
} gs_mig_dtype;

/* Bytes per element (int4: 0.5); 0 for UNSET. Name: "fp16", ... */
double gs_mig_dtype_bytes(gs_mig_dtype t);
const char *gs_mig_dtype_name(gs_mig_dtype t);

/* One inference service. Memory demand (GiB, 2^30 bytes), docs/mig-planner.md:
 *   weights  = parameters * bytes(dtype)
 *   kvCache  = 2 * layers * kvHeads * headDim * sequenceLength * batchSize * bytes(kv dtype)
 *   overhead = overheadGiB (default 1) + activationFraction (default 0.05) * (weights + kv)
 *   total    = weights + kvCache + overhead      (or memoryGiB when given directly)
 *   need     = total * (1 + headroom)            (headroom default 0.1) */
typedef struct gs_mig_service {
    const char *name;
    int line, col;
    uint32_t replicas;
    double headroom;
    bool from_shape;           /* model shape given (else memoryGiB) */
    double parameters;
    gs_mig_dtype dtype;
    uint32_t batch_size, sequence_length;
    uint32_t kv_layers, kv_heads, head_dim;
    gs_mig_dtype kv_dtype;     /* default fp16 (fp32 when dtype is fp32) */
    double overhead_gib;
    double activation_fraction;
    double memory_gib;         /* memoryGiB when the memory is given directly */
    uint8_t compute_slices;    /* asked for; 0 = what the memory-derived profile has */
    double weights_gib, kv_gib, extra_gib; /* from the shape (0 for memoryGiB) */
    double total_gib, need_gib;
} gs_mig_service;

/* Fill the derived fields (weights_gib ... need_gib) of a service from its inputs. */
void gs_mig_service_demand(gs_mig_service *s);

/* One node of the inventory. current: one layout per GPU when the current configuration
 * is known (currentConfig), else NULL. model NULL: the product is not MIG-capable (such
 * nodes are kept for reporting but never planned). */
typedef struct gs_mig_node {
    const char *name;
    const char *product;
    const gs_mig_model *model;
    int line, col;
    uint16_t ngpus;
    const char *current_name;  /* currentConfig when it was a config name, else NULL */
    gs_mig_layout *current;
} gs_mig_node;

typedef struct gs_mig_plan_input {
    gs_arena arena;
    const char *file;
    gs_mig_service *services;
    uint32_t nservices;
    gs_mig_node *nodes;
    uint32_t nnodes;
    uint32_t ngpus;            /* GPUs of MIG-capable nodes */
    uint32_t nodes_skipped;    /* nodes whose product is not MIG-capable */
    uint32_t gpus_skipped;
} gs_mig_plan_input;

void gs_mig_plan_input_init(gs_mig_plan_input *in);
/*
 * Parse a plan document (docs/cli/mig.md):
 *   apiVersion: gpusched.io/v1alpha1
 *   kind: MigPlan
 *   services: [{name, replicas, headroom, memoryGiB | parameters, dtype, batchSize,
 *               sequenceLength, kvCache: {layers, kvHeads, headDim, dtype}, overheadGiB,
 *               activationFraction; computeSlices}]
 *   inventory: {nodes: [{name, product, gpus, count, currentConfig}]}   (optional)
 * currentConfig is a built-in config name ("all-1g.10gb") or a list of mig-parted entries;
 * it must be valid for the node's model. Returns 0 or -1 with err (file:line:col).
 */
int gs_mig_plan_input_parse(gs_mig_plan_input *in, const char *file, const char *data,
                            size_t len, gs_error *err);
/* Replace the inventory with a separate file: YAML (`kind: MigInventory` with nodes, or a
 * MigPlan whose inventory is used) or CSV with a header naming a model column
 * (gpu_model | product) and a count column (gpu_capacity_num | gpus), node name optional
 * (node_name | name), as in the spot2026 trace. Returns 0 or -1 with err. */
int gs_mig_inventory_parse(gs_mig_plan_input *in, const char *file, const char *data,
                           size_t len, gs_error *err);
void gs_mig_plan_input_free(gs_mig_plan_input *in);

/* ---------------------------------------------------------------- planner */
typedef struct gs_mig_plan_opts {
    uint32_t exact_max_gpus;   /* exact search when the pool has at most this many GPUs (16) */
    uint64_t state_budget;     /* exact search gives up beyond this many states (500,000) */
    bool ignore_current;       /* plan as if no current layout were known */
} gs_mig_plan_opts;

void gs_mig_plan_opts_default(gs_mig_plan_opts *o);

typedef enum gs_mig_method {
    GS_MIG_METHOD_NONE = 0,
    GS_MIG_METHOD_EXACT,      /* exhaustive search over the pool: optimal */
    GS_MIG_METHOD_HEURISTIC,  /* greedy + local improvement; see lower_bound */
} gs_mig_method;

/* One GPU after the plan. */
typedef struct gs_mig_gpu_plan {
    uint32_t node;             /* index into input nodes */
    uint16_t gpu;              /* device index on the node */
    const gs_mig_model *model;
    gs_mig_layout layout;      /* the layout to apply (unchanged ones: the current layout) */
    uint16_t service[GS_MIG_MAX_INST]; /* per instance: service index or GS_MIG_NO_SERVICE */
    uint8_t nassigned;
    bool known;                /* the current layout was known */
    bool changed;              /* re-partitioned (new layout, or MIG turned on) */
} gs_mig_gpu_plan;

typedef struct gs_mig_service_plan {
    uint8_t profile[GS_MIG_MAX_CATALOG]; /* per catalog model: chosen profile or NO_PROFILE */
    bool mem_estimated[GS_MIG_MAX_CATALOG]; /* the chosen profile's memory is an estimate */
    uint32_t placed, unplaced;
} gs_mig_service_plan;

/* Objective, compared lexicographically: GPUs used, idle memory, idle compute, GPUs
 * re-partitioned. Idle is counted in 1/8 of a GPU's memory and 1/28 of its compute, so
 * A30 (4 slices) and 8-slice GPUs compare fairly. */
typedef struct gs_mig_cost {
    uint32_t gpus, idle_mem, idle_compute, changed;
} gs_mig_cost;

typedef struct gs_mig_plan {
    gs_mig_gpu_plan *gpus;     /* every GPU of MIG-capable nodes, in inventory order */
    uint32_t ngpus;
    gs_mig_service_plan *services;
    uint32_t nservices;
    gs_mig_cost cost;
    uint32_t lower_bound;      /* proven lower bound on GPUs used (LP relaxation) */
    double lp_value;           /* the LP optimum the bound is the ceiling of */
    uint32_t lp_fractional;    /* heuristic plans: fractional layouts F in the LP's basic
                                  optimum; when every model has room to round them up,
                                  gpus <= optimum + max(0, F - 1) (docs/mig-planner.md) */
    bool lp_roundable;         /* that room existed, so the a-priori bound above holds */
    gs_mig_method method;
    bool complete;             /* every replica placed */
    bool optimal;              /* exact search finished: optimal for the whole objective */
    uint64_t states;           /* search effort (exact states / heuristic steps) */
} gs_mig_plan;

/*
 * Plan: choose each service's profile per GPU model (the smallest plain profile with
 * memory >= need and compute >= computeSlices), then per-GPU layouts that host every
 * replica, minimising the objective above. Pools of at most exact_max_gpus GPUs are
 * solved exactly; larger ones by greedy + local improvement with a certified lower bound
 * (docs/mig-planner.md). Replicas that cannot be placed are counted in unplaced and
 * complete is false; that is not an error. Returns 0 or -1 (out of memory, bad input).
 */
int gs_mig_plan_solve(const gs_mig_plan_input *in, const gs_mig_plan_opts *opts,
                      gs_mig_plan *out, gs_error *err);
void gs_mig_plan_free(gs_mig_plan *p);

/* ---------------------------------------------------------------- plan output */
/* The mig-parted file of a plan and the nvidia.com/mig.config value per node.
 * node_config[i] is the config name for node i, or NULL when the node is not touched
 * (no GPU changed). Names: a built-in name when every GPU of the node has the same layout
 * and it equals the built-in one, else "gpusched-<8 hex digits of the layout's hash>".
 * The file holds all-disabled, all-enabled, every built-in config of the inventory's
 * models and the planned configs; entries are device-filtered by the model's PCI ids. */
typedef struct gs_mig_emit {
    gs_strbuf yaml;            /* the mig-parted file (version: v1) */
    const char **node_config;  /* nnodes entries, strings owned by `names` */
    uint32_t nnodes;
    uint32_t nconfigs;         /* distinct configs in the file */
    gs_arena names;
} gs_mig_emit;

int gs_mig_plan_emit(const gs_mig_plan_input *in, const gs_mig_plan *plan, gs_mig_emit *out,
                     gs_error *err);
void gs_mig_emit_free(gs_mig_emit *e);

/* Waste report rows: one per distinct planned layout (kind LAYOUT), the plan total (PLAN),
 * and what fixed configs would need for the same replicas on the same pool (FIXED: each
 * of "all-balanced" and the all-1g configs, GPUs taken in inventory order). Slices are
 * summed in each model's own units. unserved: replicas a fixed config cannot host. */
typedef enum gs_mig_waste_kind { GS_MIG_WASTE_LAYOUT, GS_MIG_WASTE_PLAN, GS_MIG_WASTE_FIXED } gs_mig_waste_kind;

typedef struct gs_mig_waste {
    gs_mig_waste_kind kind;
    char name[96];             /* "A100-80GB: 3g.40gb x2", "plan", "all-balanced" */
    const gs_mig_model *model; /* LAYOUT rows */
    uint32_t gpus;
    uint32_t mem_slices, mem_idle;         /* total and idle memory slices on those GPUs */
    uint32_t compute_slices, compute_idle; /* total and idle compute slices */
    double need_gib, alloc_gib; /* replicas' need vs memory of the instances hosting them */
    uint32_t unserved;
} gs_mig_waste;

int gs_mig_plan_waste(const gs_mig_plan_input *in, const gs_mig_plan *plan, gs_mig_waste **rows,
                      uint32_t *nrows, gs_error *err);

#ifdef __cplusplus
}
#endif
#endif
