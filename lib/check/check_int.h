/*
 * check_int.h - private interface of the rule checker (lib/check/).
 *
 * run.c builds one ck_ctx per gs_check_run() call (no globals: the webhook calls it from
 * several threads): the objects the rules judge, with their parsed suppressions; the
 * pods and workload templates ("subjects") with their canonical GPU requests; the node
 * GPU inventories; and the indexes the cross-object rules share. Each rule family
 * (rules_*.c) then walks what it needs and reports findings through ck_report(), which
 * applies the configured severity and the object's suppressions.
 *
 * Which pods are judged: workloads as written (their templates), and Pods that no
 * workload in the input owns (pods the reader expanded from workloads, and pods of a
 * kubectl dump whose controller is in the input, are represented by that controller),
 * so one mistake is reported once, on the object to fix.
 */
#ifndef GPUSCHED_CHECK_INT_H
#define GPUSCHED_CHECK_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "gpusched/check.h"
#include "gpusched/dra.h"
#include "gpusched/gpu.h"
#include "gpusched/kube.h"

/* Rule indexes: position in the registry table (registry.c), GS001 = 0. */
enum {
    CK_GPU_NODE_UNTAINTED = 0,          /* GS001 */
    CK_GPU_NODE_MISSING_LABELS,         /* GS002 */
    CK_GPU_NODE_INVENTORY_INVALID,      /* GS003 */
    CK_GPU_NODE_DEVICES_MISSING,        /* GS004 */
    CK_MIG_RECONFIG_FAILED,             /* GS005 */
    CK_TIME_SLICING_NO_MEMORY_LIMIT,    /* GS006 */
    CK_GPU_REQUEST_WITHOUT_LIMIT,       /* GS007 */
    CK_GPU_REQUEST_LIMIT_MISMATCH,      /* GS008 */
    CK_GPU_REQUEST_NOT_INTEGER,         /* GS009 */
    CK_MIG_RESOURCE_UNKNOWN,            /* GS010 */
    CK_MIG_STRATEGY_MISMATCH,           /* GS011 */
    CK_GPU_SCHEDULER_MISMATCH,          /* GS012 */
    CK_GPU_REQUEST_INVALID,             /* GS013 */
    CK_GPU_REQUEST_UNPLACEABLE,         /* GS014 */
    CK_GPU_SHARE_MEMORY_UNENFORCED,     /* GS015 */
    CK_GPU_WORKLOAD_UNTOLERATED,        /* GS016 */
    CK_NON_GPU_WORKLOAD_TOLERATES_GPU,  /* GS017 */
    CK_TOLERATION_INVALID,              /* GS018 */
    CK_GPU_DAEMON_UNTOLERATED,          /* GS019 */
    CK_GPU_DAEMON_NOT_CRITICAL,         /* GS020 */
    CK_GPU_NAMESPACE_WITHOUT_QUOTA,     /* GS021 */
    CK_QUOTA_KEY_NOT_ENFORCED,          /* GS022 */
    CK_GPU_WORKLOAD_WITHOUT_PRIORITY,   /* GS023 */
    CK_PRIORITY_CLASS_UNKNOWN,          /* GS024 */
    CK_INFERENCE_CANNOT_PREEMPT,        /* GS025 */
    CK_SUPPRESSION_INVALID,             /* GS026 */
    CK_DRA_CLASS_UNKNOWN,               /* GS027 */
    CK_DRA_CLAIM_UNKNOWN,               /* GS028 */
    CK_DRA_SELECTOR_UNSATISFIABLE,      /* GS029 */
    CK_DRA_SELECTOR_INVALID,            /* GS030 */
    CK_GPU_DEVICE_PLUGIN_AND_DRA,       /* GS031 */
    CK_DRA_REQUEST_EXCEEDS_NODE,        /* GS032 */
    CK_RULE_COUNT
};

#define CK_SUPPRESS_ANNOTATION "gpusched.io/suppress"
#define CK_MSG_MAX 1024

/* One "<ids>: <reason>" entry of a suppression annotation. */
typedef struct ck_suppress {
    uint64_t rules;     /* bit per rule index */
    const char *reason; /* trimmed, non-empty */
} ck_suppress;

/* An object findings are reported on. */
typedef struct ck_object {
    const char *kind;
    const char *ns;     /* "" for cluster-scoped */
    const char *name;
    gs_src src;
    uint64_t rules;     /* rules that checked it */
    const ck_suppress *suppress;
    uint32_t nsuppress;
} ck_object;

/* GPU daemons recognised by image, name or labels (rules_daemon.c). */
typedef enum ck_daemon {
    CK_DAEMON_NONE = 0,
    CK_DAEMON_DEVICE_PLUGIN,
    CK_DAEMON_FEATURE_DISCOVERY,
    CK_DAEMON_DCGM_EXPORTER,
    CK_DAEMON_MIG_MANAGER,
    CK_DAEMON_GPUSCHED_AGENT,
} ck_daemon;

/* A pod or a workload's pod template. */
typedef struct ck_subject {
    const gs_pod *pod;
    const gs_labels *labels2;  /* workload: its own labels (the template's are in pod) */
    uint32_t obj;              /* index into ctx->objects */
    gs_gpu_request req;
    const char *req_error;     /* gs_gpu_request_from_pod's message, NULL when it succeeded */
    bool gpu;                  /* asks for a GPU (any convention, or a GPU resource, or a
                                  DRA claim request of a GPU class: dra_gpu > 0) */
    uint32_t dra_gpu;          /* requests of its claims that ask GPUs (gs_dra_pod_gpu_requests) */
    uint32_t dra_unknown;      /* pod claims whose ResourceClaim / template is not in the input */
    bool daemonset;            /* a DaemonSet or a pod owned by one */
    bool quantity_findings;    /* GS009 reported a non-integer / negative GPU quantity */
    ck_daemon daemon;
} ck_subject;

/* A node with its GPU inventory (built once, nothing bound). */
typedef struct ck_node {
    const gs_node *node;
    uint32_t obj;
    gs_node_gpus gpus;
    bool built;                /* gs_node_gpus_build succeeded */
    bool gpu;                  /* a GPU node (inventory signal, or any GPU signal if the
                                  inventory could not be built) */
    const char *build_error;
    uint32_t taintset;         /* index into ctx->taintsets (GPU nodes) */
} ck_node;

/* The NoSchedule/NoExecute taints with a configured GPU key of one or more GPU nodes. */
typedef struct ck_taintset {
    const gs_taint **taints;
    uint32_t n;
    uint32_t nodes;            /* GPU nodes with exactly this set */
} ck_taintset;

typedef struct ck_ctx {
    const gs_snapshot *snap;
    const gs_check_config *cfg;
    gs_arena *arena;           /* the result's arena */
    gs_error *err;
    bool failed;               /* out of memory somewhere: gs_check_run fails */

    GS_VEC(ck_object) objects;
    GS_VEC(gs_finding) findings;
    GS_VEC(uint32_t) finding_obj; /* object of each finding */

    ck_node *nodes;
    uint32_t nnodes;
    uint32_t ngpu_nodes;
    ck_taintset *taintsets;
    uint32_t ntaintsets;

    ck_subject *subjects;
    uint32_t nsubjects;

    uint32_t *pc_obj;          /* object of each PriorityClass (snapshot order) */
    int mig_strategy;          /* GS_CHECK_MIG_*: configured, or inferred from the nodes */
    bool mig_strategy_inferred;
    bool has_global_default;   /* a PriorityClass with globalDefault */

    gs_dra_index *dra;         /* DRA objects of the snapshot by name (GPU claims: dra.h) */
    bool dra_cluster;          /* the input has a DeviceClass or a ResourceSlice: a cluster
                                  dump, where a missing class or claim is a finding */
} ck_ctx;

/* ---------------------------------------------------------------- helpers (run.c) */
bool ck_enabled(const ck_ctx *c, uint32_t rule);
/* Record that `rule` judged object `obj` (JUnit testcases). */
void ck_checked(ck_ctx *c, uint32_t obj, uint32_t rule);
/* Report a finding of `rule` on object `obj`. Message: printf format, no object prefix. */
void ck_report(ck_ctx *c, uint32_t rule, uint32_t obj, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same, at most at severity `most` (a variant of the rule that is only a warning or
 * information: the configured severity applies when it is lower). */
void ck_report_at_most(ck_ctx *c, uint32_t rule, uint32_t obj, gs_severity most, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The same at another position than the object's (a field: a CEL expression). */
void ck_report_src(ck_ctx *c, uint32_t rule, uint32_t obj, gs_src src, gs_severity most, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Add an object (kind, ns, name borrowed; they must outlive the result). Returns its
 * index, or UINT32_MAX on OOM (c->failed set). annotations may be NULL. */
uint32_t ck_add_object(ck_ctx *c, const char *kind, const char *ns, const char *name, gs_src src,
                       const gs_labels *annotations, const gs_labels *annotations2);
/* "Kind ns/name" of an object into buf. */
const char *ck_object_label(const ck_ctx *c, uint32_t obj, char *buf, size_t cap);

/* Does taint key `key` belong to the configured GPU taint keys? */
bool ck_is_gpu_taint_key(const ck_ctx *c, const char *key);
/* Does a GPU node taint of this key keep pods off (NoSchedule / NoExecute)? */
bool ck_is_gpu_taint(const ck_ctx *c, const gs_taint *t);
/* Does the pod tolerate taint t, with the ExtendedResourceToleration plugin's automatic
 * tolerations when configured? */
bool ck_pod_tolerates(const ck_ctx *c, const ck_subject *s, const gs_taint *t);
/* Can the pod run on a node with these GPU taints (all tolerated)? */
bool ck_pod_tolerates_set(const ck_ctx *c, const ck_subject *s, const ck_taintset *ts);
/* Without GPU nodes in the input: does the pod tolerate a taint with configured key `key`
 * and effect NoSchedule, for some value (gs_pod_tolerates_key)? */
bool ck_pod_tolerates_key(const ck_ctx *c, const ck_subject *s, const char *key);
/* nodeSelector and required node affinity of the pod against a node. */

/* Resolved priority of a pod (gs_priority_resolve): its class's value, else spec.priority,
 * else the global default's or 0; Never when the pod or its class (the default class
 * included) says so. false when the class is unknown. */
bool ck_pod_priority(const ck_ctx *c, const gs_pod *p, int32_t *prio, gs_preempt_policy *policy);

/* KAI-Scheduler (docs/gpu-requests.md): its scheduler name, its queue label (and the label
 * of its Run:ai days), and the label it reads a workload's priority class from. */
#define CK_KAI_SCHEDULER "kai-scheduler"
#define CK_KAI_QUEUE_LABEL "kai.scheduler/queue"
#define CK_KAI_QUEUE_LABEL_OLD "runai/queue"
#define CK_KAI_PRIORITY_LABEL "priorityClassName"
/* A label of the subject: the workload's own, else its pod template's (or the pod's). */
const char *ck_label(const ck_subject *s, const char *key);
/* The KAI queue the subject names (NULL when none). */
const char *ck_kai_queue(const ck_subject *s);
/* Scheduled by KAI-Scheduler: schedulerName kai-scheduler, or a KAI queue label. */
bool ck_is_kai(const ck_subject *s);

/* "1 GPU", "2x 0.5 GPU", "1 MIG 1g.10gb" or "a GPU" when the request is unknown. */
void ck_describe_request(const ck_subject *s, char *buf, size_t cap);

/* Parse a suppression annotation value into entries (arena). Invalid entries are
 * described in *problems (arena string, NULL when none). Returns -1 on OOM. */
int ck_parse_suppress(gs_arena *a, const char *value, ck_suppress **out, uint32_t *nout,
                      const char **problems);

/* ---------------------------------------------------------------- rule families */
void ck_rules_node(ck_ctx *c);
void ck_rules_request(ck_ctx *c);
void ck_rules_taint(ck_ctx *c);
void ck_rules_daemon(ck_ctx *c);
void ck_rules_quota(ck_ctx *c);
void ck_rules_priority(ck_ctx *c);
void ck_rules_dra(ck_ctx *c);
/* Classification used by run.c when it builds the subjects. */
ck_daemon ck_daemon_of(const gs_pod *p, const char *workload_name, const gs_labels *labels2);
const char *ck_daemon_name(ck_daemon d);

#endif
