/*
 * kube.h - typed Kubernetes objects decoded from YAML/JSON, and the snapshot that owns them.
 *
 * A gs_snapshot is immutable once gs_snapshot_finish() returned. Every string, array and
 * object in it lives in the snapshot's arena and dies with gs_snapshot_free(). Each object
 * keeps its source position (gs_src) so errors and findings can point at file:line:col.
 *
 * Arrays are (pointer, count) pairs; counts are uint32_t. Optional scalars have a has_*
 * flag. Strings are never NULL unless documented ("may be NULL").
 *
 * Reading (kube_read.c): any mix of files, directories (recursive, *.yaml *.yml *.json)
 * and "-" (stdin); multi-document YAML and JSON; `kind: List` (and any *List kind with
 * items, as `kubectl get -o json|yaml` prints).
 *
 * Kinds are matched by API group and kind (apiVersion "group/version"; an object without
 * apiVersion is taken as the built-in kind of that name). Decoded: v1 Node, Pod,
 * Namespace, ResourceQuota; scheduling.k8s.io PriorityClass; policy PodDisruptionBudget;
 * the workload controllers apps Deployment, ReplicaSet, StatefulSet, DaemonSet (also
 * extensions/v1beta1), batch Job and CronJob (expanded into the pods they would create;
 * DaemonSets at gs_snapshot_finish() because they need the nodes); and the workload
 * custom resources JobSet (jobset.x-k8s.io), LeaderWorkerSet (leaderworkerset.x-k8s.io),
 * Kubeflow PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob (kubeflow.org),
 * KubeRay RayCluster, RayJob, RayService (ray.io) and Volcano Job (batch.volcano.sh),
 * expanded like their controllers would (read_crd.c); and the DRA kinds of
 * resource.k8s.io DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice (v1,
 * v1beta2, v1beta1: read_dra.c; pods' resourceClaims and container claims with them).
 * Other kinds, and known kinds of
 * another group or an unknown version, are skipped and counted ("Kind.group"); those
 * whose spec carries a pod template are also counted in `templated`.
 *
 * Malformed input fails with GS_ERR_PARSE or GS_ERR_INVALID, file:line:col, the object
 * ("Pod default/x") and field path; with gs_read_opts.keep_going a file that fails is
 * recorded in `input_errors` instead, without any of its objects, and reading goes on.
 */
#ifndef GPUSCHED_KUBE_H
#define GPUSCHED_KUBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/cel.h"
#include "gpusched/error.h"
#include "gpusched/quantity.h"
#include "gpusched/util.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gs_src {
    const char *file; /* as given on the command line; "-" for stdin */
    uint32_t line, col; /* 1-based position of the object's mapping */
} gs_src;

/* Input order of two positions: file name, then line, then column. */
int gs_src_cmp(const gs_src *a, const gs_src *b);

typedef struct gs_kv {
    const char *key;
    const char *val;
} gs_kv;

/* Label / annotation map, sorted by key (bytewise), keys unique. */
typedef struct gs_labels {
    gs_kv *items;
    uint32_t n;
} gs_labels;
/* Value for key or NULL. Binary search. */
const char *gs_labels_get(const gs_labels *l, const char *key);

typedef struct gs_meta {
    const char *name;          /* "" if absent */
    const char *generate_name; /* "" if absent */
    const char *namespace_;    /* "" for cluster-scoped; "default" when a namespaced object omits it */
    const char *uid;           /* "" if absent */
    gs_labels labels;
    gs_labels annotations;
    bool has_creation;
    int64_t creation;          /* Unix seconds */
    bool deleting;             /* metadata.deletionTimestamp set */
    const char *owner_kind;    /* first ownerReference kind, or the expanding workload's kind; may be NULL */
    const char *owner_name;    /* may be NULL */
    gs_src src;
    uint32_t input_index;      /* order of appearance in the input (ties in queue order) */
} gs_meta;

/* ---------------------------------------------------------------- resources */
typedef struct gs_res {
    const char *name; /* "cpu", "memory", "nvidia.com/gpu", ... */
    gs_quantity q;
} gs_res;

typedef struct gs_reslist {
    gs_res *items; /* sorted by name, names unique */
    uint32_t n;
} gs_reslist;
const gs_quantity *gs_reslist_get(const gs_reslist *l, const char *name); /* NULL if absent */

/* ---------------------------------------------------------------- taints, tolerations */
typedef enum gs_effect {
    GS_EFFECT_ANY = 0, /* toleration effect "" (matches every effect); never on a taint */
    GS_EFFECT_NO_SCHEDULE,
    GS_EFFECT_PREFER_NO_SCHEDULE,
    GS_EFFECT_NO_EXECUTE,
    GS_EFFECT_INVALID, /* an unknown string (kept for the checker; never matches) */
} gs_effect;

typedef struct gs_taint {
    const char *key;
    const char *value; /* "" if absent */
    gs_effect effect;
} gs_taint;

typedef enum gs_tol_op {
    GS_TOL_EQUAL = 0, /* also the empty operator */
    GS_TOL_EXISTS,
    GS_TOL_LT,
    GS_TOL_GT,
    GS_TOL_OTHER, /* anything else (wrong case, "In", ...): never matches */
} gs_tol_op;

typedef struct gs_toleration {
    const char *key;    /* "" = every key */
    const char *value;  /* "" if absent */
    const char *op_raw; /* operator as written ("" if absent) */
    gs_tol_op op;
    gs_effect effect;   /* GS_EFFECT_ANY when empty */
    bool has_seconds;
    int64_t seconds;
} gs_toleration;

/* ---------------------------------------------------------------- selectors */
typedef enum gs_sel_op {
    GS_SEL_IN = 0,
    GS_SEL_NOT_IN,
    GS_SEL_EXISTS,
    GS_SEL_DOES_NOT_EXIST,
    GS_SEL_GT,
    GS_SEL_LT,
    GS_SEL_INVALID, /* unknown operator: rejected at read time for node affinity (error) */
} gs_sel_op;

typedef struct gs_sel_req {
    const char *key;
    gs_sel_op op;
    const char **values;
    uint32_t nvalues;
} gs_sel_req;

typedef struct gs_sel_term {
    gs_sel_req *exprs;  /* matchExpressions (label requirements) */
    uint32_t nexprs;
    gs_sel_req *fields; /* matchFields (only metadata.name In/NotIn is meaningful) */
    uint32_t nfields;
} gs_sel_term;

typedef struct gs_node_selector {
    gs_sel_term *terms; /* ORed */
    uint32_t nterms;
} gs_node_selector;

typedef struct gs_pref_term {
    int32_t weight; /* 1..100 */
    gs_sel_term term;
} gs_pref_term;

/* metav1.LabelSelector (PDB, quota scope selectors use gs_sel_req too). */
typedef struct gs_label_selector {
    bool present;  /* false: selector absent (nil) */
    gs_labels match_labels;
    gs_sel_req *exprs;
    uint32_t nexprs;
} gs_label_selector;

/* ---------------------------------------------------------------- Pod */
typedef struct gs_container {
    const char *name;
    gs_reslist requests; /* after limits->requests defaulting (see below) */
    gs_reslist limits;
    bool sidecar;        /* init container with restartPolicy: Always */
    const char *image;   /* container image as written ("" if absent) */
    /* resources.claims[]: the pod claims (gs_pod.claims names) this container uses, and
     * the request of each ("" = all of the claim's requests) */
    const char **claims;
    const char **claim_requests;
    uint32_t nclaims;
} gs_container;

typedef enum gs_preempt_policy {
    GS_PREEMPT_UNSET = 0,
    GS_PREEMPT_LOWER_PRIORITY,
    GS_PREEMPT_NEVER,
} gs_preempt_policy;

typedef struct gs_pod {
    gs_meta meta;
    const char *node_name;           /* spec.nodeName, "" if unbound */
    const char *scheduler_name;      /* "default-scheduler" when absent */
    const char *priority_class_name; /* "" if absent */
    bool has_priority;
    int32_t priority;                /* spec.priority when has_priority */
    gs_preempt_policy preemption_policy;
    const char *phase;               /* status.phase, "" if absent */
    const char *nominated_node;      /* status.nominatedNodeName, "" if absent */
    bool has_start_time;
    int64_t start_time;              /* status.startTime, Unix seconds */
    bool has_active_deadline;        /* spec.activeDeadlineSeconds set */

    gs_container *containers;
    uint32_t ncontainers;
    gs_container *init_containers;
    uint32_t ninit;
    gs_reslist overhead;             /* spec.overhead */
    gs_reslist pod_requests;         /* spec.resources.requests (pod-level), cpu/memory/hugepages */

    gs_toleration *tolerations;
    uint32_t ntolerations;
    gs_labels node_selector;         /* spec.nodeSelector */
    const gs_node_selector *required; /* requiredDuringScheduling...; NULL = no constraint */
    gs_pref_term *preferred;
    uint32_t npreferred;

    const char *workload;            /* "Deployment/train" when expanded from a workload, else NULL */

    /* Dynamic Resource Allocation: spec.resourceClaims[] in order, each with the claim it
     * names or the template it is made from; status.resourceClaimStatuses[] give the claim
     * the resourceclaim controller generated from a template (status_claim, "" until then;
     * NULL when the status says no claim is needed) */
    struct gs_pod_claim *claims;
    uint32_t nclaims;
    /* status.extendedResourceClaimStatus.resourceClaimName: the claim kube-scheduler made
     * for the extended resources a DeviceClass maps (DRAExtendedResource); "" if none */
    const char *extended_claim;
} gs_pod;

typedef struct gs_pod_claim {
    const char *name;          /* spec.resourceClaims[].name, unique in the pod */
    const char *claim_name;    /* resourceClaimName, "" if absent */
    const char *template_name; /* resourceClaimTemplateName, "" if absent */
    const char *status_claim;  /* generated claim's name from status.resourceClaimStatuses,
                                  "" when not listed, NULL when listed without a name */
} gs_pod_claim;

/* Limits-only defaulting: when decoding a Pod (and pods expanded from templates, which
 * the API server defaults on creation), every resource present in a container's limits
 * but absent from its requests is copied into requests. */

/* ---------------------------------------------------------------- other kinds */
typedef struct gs_node {
    gs_meta meta;
    bool unschedulable;
    gs_taint *taints;
    uint32_t ntaints;
    gs_reslist capacity;
    gs_reslist allocatable; /* status.allocatable, or capacity when absent */
    bool ready;             /* Ready condition True, or no conditions given */
} gs_node;

typedef struct gs_priority_class {
    gs_meta meta;
    int32_t value;
    bool global_default;
    gs_preempt_policy preemption_policy;
} gs_priority_class;

typedef enum gs_quota_scope {
    GS_SCOPE_TERMINATING = 1u << 0,
    GS_SCOPE_NOT_TERMINATING = 1u << 1,
    GS_SCOPE_BEST_EFFORT = 1u << 2,
    GS_SCOPE_NOT_BEST_EFFORT = 1u << 3,
    GS_SCOPE_PRIORITY_CLASS = 1u << 4,             /* via scopeSelector */
    GS_SCOPE_CROSS_NAMESPACE_POD_AFFINITY = 1u << 5,
    GS_SCOPE_VOLUME_ATTRIBUTES_CLASS = 1u << 6,     /* PVC-only scope: never matches pods */
} gs_quota_scope;

typedef struct gs_quota {
    gs_meta meta;
    gs_reslist hard;    /* spec.hard, keys as written ("requests.nvidia.com/gpu") */
    gs_reslist used;    /* status.used, may be empty */
    uint32_t scopes;    /* gs_quota_scope bits from spec.scopes and scopeSelector */
    gs_sel_req *scope_exprs; /* scopeSelector.matchExpressions with scopeName PriorityClass
                                (key = "PriorityClass", values = class names) */
    uint32_t nscope_exprs;
} gs_quota;

typedef struct gs_intorpct {
    bool present;
    bool is_percent;
    int32_t value;      /* integer, or percent 0..100 */
} gs_intorpct;

typedef struct gs_pdb {
    gs_meta meta;
    gs_label_selector selector;
    gs_intorpct min_available;
    gs_intorpct max_unavailable;
    bool has_disruptions_allowed;
    int32_t disruptions_allowed; /* status.disruptionsAllowed */
    const char **disrupted_pods; /* status.disruptedPods keys */
    uint32_t ndisrupted;
} gs_pdb;

typedef struct gs_namespace {
    gs_meta meta;
} gs_namespace;

/* A workload controller as written (Deployment, ReplicaSet, StatefulSet, Job, CronJob,
 * DaemonSet), kept besides the pods it expands into, for rules that judge templates
 * (a DaemonSet with no nodes in the input still has a template to check). */
typedef struct gs_workload {
    gs_meta meta;          /* the workload's own metadata and source position (custom
                              resources with pod templates: the position of this template) */
    const char *kind;      /* "Deployment", ..., "PyTorchJob", "Job.batch.volcano.sh" */
    int32_t replicas;      /* pods it creates (Job: active pods; DaemonSet: -1) */
    gs_pod template_;      /* spec.template (CronJob: spec.jobTemplate.spec.template) decoded
                              as a pod in the workload's namespace, defaulted like its pods */
    /* additions: custom resources hold several templates, one gs_workload each */
    const char *role;      /* the template's role ("Worker", "head", "workerGroupSpecs[gpu]",
                              "leader", ...); "" for the built-in controllers */
    uint32_t part;         /* 0 for an object's first (or only) template, then 1, 2, ... */
} gs_workload;

/* ---------------------------------------------------------------- DRA (resource.k8s.io)
 * DeviceClass, ResourceClaim, ResourceClaimTemplate and ResourceSlice, read from v1 and
 * from the v1beta1 / v1beta2 shapes still found in dumps (k8s-semantics 10), all into the
 * v1 model below. Attributes and capacities are kept as CEL sees them (gs_cel_attr /
 * gs_cel_capacity: split into domain and name, unqualified names in the driver's domain),
 * sorted by (domain, name). */
typedef struct gs_dra_counter {
    const char *name;
    gs_quantity value;
} gs_dra_counter;

/* A slice's sharedCounters[] entry, or a device's consumesCounters[] entry (name = the
 * counter set it draws from). Counters sorted by name. */
typedef struct gs_dra_counter_set {
    const char *name;
    gs_dra_counter *counters;
    uint32_t ncounters;
} gs_dra_counter_set;

/* Consumable capacity's requestPolicy of one capacity (DRAConsumableCapacity). */
typedef struct gs_dra_cap_policy {
    bool present;
    bool has_default;
    gs_quantity default_;
    gs_quantity *valid_values;  /* validValues, ascending as the API requires */
    uint32_t nvalid_values;
    bool has_range;
    gs_quantity min;            /* validRange.min */
    bool has_max, has_step;
    gs_quantity max, step;
} gs_dra_cap_policy;

typedef struct gs_dra_taint {
    const char *key;
    const char *value;          /* "" if absent */
    const char *effect;         /* "NoSchedule", "NoExecute", "None", or as written */
} gs_dra_taint;

typedef struct gs_dra_device {
    const char *name;
    gs_cel_attr *attrs;         /* sorted by (domain, name) */
    uint32_t nattrs;
    gs_cel_capacity *caps;      /* sorted by (domain, name) */
    gs_dra_cap_policy *cap_policies; /* ncaps entries, parallel to caps; NULL when none has one */
    uint32_t ncaps;
    gs_dra_counter_set *consumes; /* consumesCounters[] */
    uint32_t nconsumes;
    gs_dra_taint *taints;
    uint32_t ntaints;
    bool allow_multiple;        /* allowMultipleAllocations */
    bool binding_conditions;    /* bindingConditions given (DRADeviceBindingConditions) */
    bool binds_to_node;         /* bindsToNode */
    /* perDeviceNodeSelection: one of these (node_name "" and no all_nodes / selector: none) */
    const char *node_name;
    bool all_nodes;
    const gs_node_selector *node_selector;
} gs_dra_device;

typedef struct gs_resource_slice {
    gs_meta meta;
    const char *driver;
    const char *pool;           /* spec.pool.name */
    int64_t generation;         /* spec.pool.generation */
    int64_t slice_count;        /* spec.pool.resourceSliceCount */
    const char *node_name;      /* "" if absent */
    bool all_nodes;
    const gs_node_selector *node_selector; /* NULL if absent */
    bool per_device_node_selection;
    gs_dra_device *devices;
    uint32_t ndevices;
    gs_dra_counter_set *shared_counters;
    uint32_t nshared_counters;
} gs_resource_slice;

typedef struct gs_dra_selector {
    const char *cel;            /* cel.expression as written */
    gs_src src;                 /* position of the expression */
} gs_dra_selector;

typedef struct gs_device_class {
    gs_meta meta;
    gs_dra_selector *selectors;
    uint32_t nselectors;
    const char *extended_resource_name; /* spec.extendedResourceName, "" if absent */
    uint32_t nconfig;           /* spec.config[] entries (opaque; counted only) */
} gs_device_class;

typedef struct gs_dra_toleration {
    const char *key;            /* "" = every key */
    const char *op;             /* "Equal" (also absent) or "Exists", or as written */
    const char *value;
    const char *effect;         /* "" = every effect */
} gs_dra_toleration;

typedef struct gs_dra_capacity_req {
    const char *name;           /* qualified as written ("memory", "example.com/x") */
    gs_quantity value;
} gs_dra_capacity_req;

/* An ExactDeviceRequest, or one firstAvailable[] subrequest (admin access never set). */
typedef struct gs_dra_exact {
    const char *name;           /* subrequest name; for `exactly`, the request's name */
    const char *class_name;     /* deviceClassName */
    gs_dra_selector *selectors;
    uint32_t nselectors;
    bool all;                   /* allocationMode All (else ExactCount) */
    int64_t count;              /* ExactCount: count (default 1) */
    bool has_admin_access;
    bool admin_access;
    gs_dra_toleration *tolerations;
    uint32_t ntolerations;
    gs_dra_capacity_req *capacity; /* capacity.requests, sorted by name */
    uint32_t ncapacity;
} gs_dra_exact;

typedef struct gs_dra_request {
    const char *name;
    bool has_exactly;           /* exactly (v1beta1: the request's own fields) */
    gs_dra_exact exactly;
    gs_dra_exact *first_available;
    uint32_t nfirst_available;
} gs_dra_request;

typedef struct gs_dra_constraint {
    const char **requests;      /* empty = all requests */
    uint32_t nrequests;
    const char *match_attribute;    /* fully qualified, NULL if absent */
    const char *distinct_attribute; /* fully qualified, NULL if absent */
} gs_dra_constraint;

typedef struct gs_dra_claim_spec {
    gs_dra_request *requests;
    uint32_t nrequests;
    gs_dra_constraint *constraints;
    uint32_t nconstraints;
    uint32_t nconfig;           /* devices.config[] entries (opaque; counted only) */
} gs_dra_claim_spec;

/* status.allocation.devices.results[] entry */
typedef struct gs_dra_result {
    const char *request;        /* "req" or "req/sub" */
    const char *driver;
    const char *pool;
    const char *device;
    bool admin_access;
    const char *share_id;       /* "" if absent */
    gs_dra_capacity_req *consumed; /* consumedCapacity, sorted by name */
    uint32_t nconsumed;
} gs_dra_result;

typedef struct gs_dra_consumer {
    const char *resource;       /* "pods" */
    const char *name;
    const char *uid;
} gs_dra_consumer;

/* A ResourceClaim, or a ResourceClaimTemplate (is_template; its spec.spec, no status). */
typedef struct gs_resource_claim {
    gs_meta meta;
    bool is_template;
    gs_dra_claim_spec spec;
    bool allocated;             /* status.allocation present */
    gs_dra_result *results;
    uint32_t nresults;
    const gs_node_selector *alloc_node_selector; /* status.allocation.nodeSelector, NULL if none */
    gs_dra_consumer *reserved_for;
    uint32_t nreserved;
} gs_resource_claim;

/* ---------------------------------------------------------------- snapshot */
typedef struct gs_kind_count {
    const char *kind; /* "ConfigMap" (core group), "Foo.example.com" (Kind.group), or
                         "Job.batch/v9" for a known group and kind of an unknown version */
    uint32_t count;
} gs_kind_count;

/* A problem found while reading: with keep_going, a file that could not be read (code,
 * position of the error, message); or a warning (duplicate objects, code GS_OK). */
typedef struct gs_read_issue {
    gs_src src;           /* file (snapshot arena), line and column; 0 when unknown */
    gs_code code;         /* GS_ERR_PARSE, GS_ERR_INVALID, GS_ERR_LIMIT; GS_OK for warnings */
    const char *object;   /* "Pod default/x: spec.containers[0]" or "" */
    const char *message;
} gs_read_issue;

typedef struct gs_snapshot {
    gs_arena arena;
    GS_VEC(gs_node) nodes;
    GS_VEC(gs_pod) pods;
    GS_VEC(gs_priority_class) priority_classes;
    GS_VEC(gs_quota) quotas;
    GS_VEC(gs_pdb) pdbs;
    GS_VEC(gs_namespace) namespaces;
    GS_VEC(gs_workload) workloads; /* workload controllers as written, input order */
    GS_VEC(gs_device_class) device_classes;   /* resource.k8s.io, input order */
    GS_VEC(gs_resource_claim) claims;         /* ResourceClaims, input order */
    GS_VEC(gs_resource_claim) claim_templates; /* ResourceClaimTemplates, input order */
    GS_VEC(gs_resource_slice) resource_slices; /* input order */
    GS_VEC(gs_kind_count) skipped; /* unknown kinds with counts, in first-seen order */
    uint32_t nskipped;             /* total skipped objects */
    GS_VEC(gs_kind_count) templated; /* the skipped kinds whose objects carry a pod template
                                        (a template.spec.containers under spec), counts */
    uint32_t ntemplated;           /* total skipped objects with a pod template */
    GS_VEC(gs_read_issue) input_errors; /* keep_going: files that failed, in reading order */
    GS_VEC(gs_read_issue) warnings;     /* filled by gs_snapshot_finish(): objects of the
                                           same kind, namespace and name given twice */
    uint32_t next_index;           /* input_index counter */
    /* DaemonSets are held until finish (they need nodes): internal */
    void *pending_daemonsets;
    bool finished;
} gs_snapshot;

typedef struct gs_read_opts {
    size_t max_file_bytes; /* 0 = no limit but memory (files are mapped) */
    uint32_t max_objects;  /* 0 = 10,000,000 */
    uint32_t max_replicas; /* per workload; 0 = 100,000 */
    bool keep_going;       /* a file with malformed content (GS_ERR_PARSE, GS_ERR_INVALID,
                              GS_ERR_LIMIT) is recorded in snapshot->input_errors, none of
                              its objects are kept, and the read goes on (returns 0) */
    bool no_positions;     /* objects (and errors) get no line and column (0): the input is
                              not a file the user can open (a live cluster's objects) */
} gs_read_opts;

void gs_snapshot_init(gs_snapshot *s);
/* Read one path (file, directory or "-"); may be called repeatedly. */
int gs_snapshot_read_path(gs_snapshot *s, const char *path, const gs_read_opts *opts, gs_error *err);
/* Read from a buffer (tests, fuzzers, webhook bodies). name is used in error positions. */
int gs_snapshot_read_buffer(gs_snapshot *s, const char *name, const char *data, size_t len,
                            const gs_read_opts *opts, gs_error *err);
/* Expand DaemonSets over the nodes read so far; call once after all reads. */
int gs_snapshot_finish(gs_snapshot *s, gs_error *err);
void gs_snapshot_free(gs_snapshot *s);
/* Keys whose values no decoder reads, at any depth (managedFields, env, volumes, probes,
 * container statuses, node images, ConfigMap data, ...): the tree builder skips them, and
 * the live store drops them before it keeps an object (one list, here). */
bool gs_read_key_unread(const char *key, size_t len);

/* ---------------------------------------------------------------- semantics helpers */
/* Resource classification (k8s-semantics 2.4). */
bool gs_resource_is_extended(const char *name);
bool gs_resource_is_native(const char *name);

/* Toleration vs taint (k8s-semantics 1.2); lt_gt_gate enables the alpha Lt/Gt operators. */
bool gs_toleration_tolerates(const gs_toleration *tol, const gs_taint *taint, bool lt_gt_gate);
/* One node-selector requirement against labels (and the node name for matchFields). */
bool gs_sel_req_matches_labels(const gs_sel_req *r, const gs_labels *labels);
bool gs_sel_req_matches_field(const gs_sel_req *r, const char *node_name);
/* A term (all exprs AND all fields); an empty term matches nothing. */
bool gs_sel_term_matches(const gs_sel_term *t, const gs_labels *labels, const char *node_name);
/* Node selector: terms ORed; empty list matches nothing. */
bool gs_node_selector_matches(const gs_node_selector *ns, const gs_labels *labels,
                              const char *node_name);
/* NodeAffinity's Filter (k8s-semantics 4): the pod's nodeSelector (every pair equal) and
 * its required node affinity both select the node. Used by the scheduler's filter, the
 * check rules and DaemonSet expansion. */
bool gs_pod_selects_node(const gs_pod *p, const gs_node *n);
/* Would the DaemonSet controller run a pod of template t on node (k8s-semantics: its node
 * selector and required affinity match, and every NoSchedule/NoExecute taint is tolerated)?
 * The rule DaemonSets are expanded with, and the monitor's "plugin pod missing". */
bool gs_daemon_pod_fits(const gs_pod *t, const gs_node *node);
/* A taint that keeps pods off a GPU node: effect NoSchedule or NoExecute and a key among
 * keys[0..nkeys) (the configured GPU taint keys, default nvidia.com/gpu). */
bool gs_taint_is_gpu(const gs_taint *t, const char *const *keys, size_t nkeys);
/* The node's first NoSchedule taint that the system does not set (keys outside
 * node.kubernetes.io/ and node.cloudprovider.kubernetes.io/), or NULL: on a GPU node without
 * the GPU taint it is probably the cluster's own GPU taint (AKS documents sku=gpu). */
const gs_taint *gs_node_custom_noschedule_taint(const gs_node *n);
/* metav1.LabelSelector against labels; absent selector matches nothing, empty matches all. */
bool gs_label_selector_matches(const gs_label_selector *sel, const gs_labels *labels);

const char *gs_effect_name(gs_effect e); /* "NoSchedule", ... "" for ANY */

/* ---------------------------------------------------------------- semantics: one home each
 * (lib/kube/semantics.c; the checker, the engine and the webhook share them) */
/* Name syntax (apimachinery validation): IsQualifiedName (label/taint keys), IsValidLabelValue
 * (empty allowed), IsDNS1123Subdomain. NULL is invalid. */
bool gs_is_qualified_name(const char *s);
bool gs_is_label_value(const char *s);
bool gs_is_dns1123_subdomain(const char *s);
/* A toleration against the taints of one key and effect, value unknown: every_value asks
 * whether it tolerates all of them (Exists), else at least one (Equal too). An empty key
 * matches every key only with Exists; Lt/Gt never match. */
bool gs_toleration_tolerates_key(const gs_toleration *tol, const char *key, gs_effect effect,
                                 bool every_value);
/* Some toleration of the pod does (the pod's own tolerations only). */
bool gs_pod_tolerates_key(const gs_pod *p, const char *key, gs_effect effect, bool every_value);
/* ExtendedResourceToleration admission plugin (k8s-semantics 7): the extended resources the
 * containers and init containers request, sorted and unique (at most cap, the smallest);
 * returns how many were written. Each gets {key: <name>, operator: Exists, effect: NoSchedule}. */
uint32_t gs_ert_resources(const gs_pod *p, const char **names, uint32_t cap);
/* Does a toleration that plugin adds to the pod tolerate taint t? */
bool gs_ert_tolerates(const gs_pod *p, const gs_taint *t);
/* A node of the snapshot that shows the cluster runs that plugin, or NULL: GKE enables it on
 * every cluster and taints its GPU node pools nvidia.com/gpu=present:NoSchedule; those
 * nodes carry cloud.google.com/gke-accelerator. Faces use it as the default when the user
 * says neither on nor off. */
const gs_node *gs_ert_implied_by(const gs_snapshot *s);
/* Priority admission plugin (k8s-semantics 5.1): the value and preemption policy (UNSET when
 * the class sets none) of class `name` among classes (the first of that name), else of the
 * built-in system-cluster-critical / system-node-critical; an empty name gives the global
 * default class (the lowest value if several) or 0. false: no such class (admission rejects
 * the pod with "no PriorityClass with name X was found"). */
#define GS_PRIORITY_SYSTEM_CLUSTER_CRITICAL 2000000000
#define GS_PRIORITY_SYSTEM_NODE_CRITICAL 2000001000
bool gs_priority_resolve(const gs_priority_class *classes, size_t n, const char *name, int32_t *prio,
                         gs_preempt_policy *policy);

#ifdef __cplusplus
}
#endif
#endif
