/*
 * check.h - GPU configuration rules: the CI gate (`gpusched check`) and the admission
 * webhook (`gpusched serve --webhook`) apply the same rules with the engine's semantics.
 *
 * A rule has a stable id ("GS001"), a short name ("gpu-node-untainted"), a default
 * severity and one doc page (docs/rules/<id>.md). Rules see every object given (cross-
 * object rules: e.g. "GPU workloads that tolerate none of the GPU taints in the input").
 * Findings carry the object's source position, the rule and a message; a finding
 * suppressed by the annotation `gpusched.io/suppress: "<id>[,<id>...]: <reason>"` on the
 * object is kept with suppressed = true and the reason, so reports can show it.
 *
 * Ownership: gs_check_result and everything in it is owned by the result (its arena) and
 * freed with gs_check_result_free(). The snapshot must outlive the result.
 */
#ifndef GPUSCHED_CHECK_H
#define GPUSCHED_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "gpusched/error.h"
#include "gpusched/kube.h"
#include "gpusched/util.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gs_severity {
    GS_SEV_INFO = 0,
    GS_SEV_WARNING,
    GS_SEV_ERROR,
} gs_severity;

const char *gs_severity_name(gs_severity s); /* "info", "warning", "error" */
int gs_severity_parse(const char *s, gs_severity *out);

typedef struct gs_rule_info {
    const char *id;        /* "GS001" */
    const char *name;      /* "gpu-node-untainted" */
    gs_severity severity;  /* default */
    const char *summary;   /* one line */
    const char *doc;       /* "docs/rules/GS001.md" */
    /* addition: the rule judges an object against other objects of the input (nodes,
     * quotas, PriorityClasses...); on a one-object snapshot it can only stay silent or
     * fall back to the configuration (the webhook may skip these) */
    bool cross_object;
} gs_rule_info;

/* All rules, in id order. */
const gs_rule_info *gs_rules(uint32_t *count);
const gs_rule_info *gs_rule_find(const char *id_or_name);

#define GS_CHECK_MAX_KEYS 16

typedef struct gs_check_config {
    /* per rule (index = position in gs_rules()): enabled and severity override */
    bool disabled[64];
    bool has_severity[64];
    gs_severity severity[64];
    const char *gpu_taint_keys[GS_CHECK_MAX_KEYS];  /* default {"nvidia.com/gpu"} */
    uint32_t ngpu_taint_keys;
    const char *pool_labels[GS_CHECK_MAX_KEYS];     /* labels GPU nodes must carry */
    uint32_t npool_labels;
    const char *role_label;                         /* default "gpusched.io/role" */
    const char *default_gpu_priority_class;         /* for the mutating webhook; may be NULL */
    gs_arena arena;                                 /* owns strings read from a config file */
    /* additions */
    const char *mig_labels[GS_CHECK_MAX_KEYS];      /* labels GPU nodes with MIG devices must
                                                       carry (default nvidia.com/mig.strategy,
                                                       nvidia.com/mig.config) */
    uint32_t nmig_labels;
    int mig_strategy;                /* GS_CHECK_MIG_* : the cluster's MIG strategy (migStrategy) */
    bool extended_resource_toleration; /* the API server runs ExtendedResourceToleration: GPU
                                          pods get tolerations for what they request */
    bool ert_configured;             /* extendedResourceToleration was set (configuration or
                                        command line); else faces infer it (gs_ert_implied_by) */
    bool hami_overwrites_default_scheduler; /* HAMi's admission webhook rewrites schedulerName
                                               default-scheduler of HAMi pods (its Helm value
                                               scheduler.forceOverwriteDefaultScheduler, default
                                               true; config `hami: {forceOverwriteDefaultScheduler}`) */
} gs_check_config;

/* gs_check_config.mig_strategy: infer from the GPU nodes in the input (default), or as
 * configured (the values of gs_mig_strategy in gpu.h). */
#define GS_CHECK_MIG_INFER (-1)
#define GS_CHECK_MIG_NONE 0
#define GS_CHECK_MIG_SINGLE 1
#define GS_CHECK_MIG_MIXED 2

void gs_check_config_defaults(gs_check_config *cfg);
/* Read a YAML config file (apiVersion gpusched.io/v1alpha1, kind CheckConfig): rules
 * {id: {enabled, severity}}, gpuTaintKeys, poolLabels, roleLabel, defaultGpuPriorityClass.
 * Errors with file:line:col. */
int gs_check_config_read(gs_check_config *cfg, const char *path, gs_error *err);
/* The same from a buffer (name is used in error positions). */
int gs_check_config_parse(gs_check_config *cfg, const char *name, const char *data, size_t len,
                          gs_error *err);
void gs_check_config_free(gs_check_config *cfg);

typedef struct gs_finding {
    const gs_rule_info *rule;
    gs_severity severity;     /* after config overrides */
    const char *kind;         /* object kind: "Node", "Pod", "Deployment", ... */
    const char *namespace_;   /* "" for cluster-scoped */
    const char *name;
    gs_src src;               /* position of the object (or of the field when known) */
    const char *message;
    bool suppressed;
    const char *suppress_reason;
} gs_finding;

/* addition: one object the rules looked at (JUnit reports one testcase per object and
 * rule). Namespaces that hold GPU workloads appear even without a Namespace object, at
 * the position of their first GPU workload. */
typedef struct gs_check_object {
    const char *kind;
    const char *namespace_;   /* "" for cluster-scoped */
    const char *name;
    gs_src src;
    uint64_t rules;           /* bit i set: rule gs_rules()[i] checked this object */
} gs_check_object;

typedef struct gs_check_result {
    gs_finding *findings;     /* deterministic order: file, line, col, rule id, message */
    uint32_t nfindings;
    uint32_t objects;         /* objects checked */
    gs_arena arena;
    /* additions */
    gs_check_object *checked; /* the objects, same order as findings (file, line, col) */
    uint32_t nchecked;
} gs_check_result;

/* qsort order of findings (gs_finding): position, rule id, message, object. */
int gs_finding_cmp(const void *a, const void *b);
/* Run every enabled rule over the snapshot (including its workload templates). */
int gs_check_run(const gs_snapshot *snap, const gs_check_config *cfg, gs_check_result *out,
                 gs_error *err);
void gs_check_result_free(gs_check_result *r);

#ifdef __cplusplus
}
#endif
#endif
