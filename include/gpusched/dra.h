/*
 * dra.h - Dynamic Resource Allocation: ResourceClaims allocated from ResourceSlices as
 * kube-scheduler's DynamicResources plugin and its structured allocator do it
 * (k8s-semantics 10; docs/dra.md "Allocation").
 *
 * A gs_dra is the cluster-wide DRA state built from a snapshot: the device classes with
 * their selectors compiled once, the ResourceSlices gathered into pools (the newest
 * generation of each, completeness and validity as upstream decides them), every device
 * of every slice in one table, the claims (the snapshot's, plus one per pod claim made
 * from a template that the resourceclaim controller has not instantiated yet) and what is
 * allocated: devices in use, counters consumed by partitionable devices, capacity
 * consumed on devices that allow several allocations.
 *
 * The engine asks it, per pod: resolve the pod's claims (PreEnqueue/PreFilter: missing
 * claims, deleted claims, claims in use, unknown device classes), then per node whether
 * the allocated claims are available there and the others can be allocated there
 * (Filter), and commits the chosen allocation when it binds the pod (Reserve/PreBind) or
 * releases it when the pod goes (the resourceclaim controller deallocates a claim nobody
 * reserves any more).
 *
 * Order (which devices a claim gets): upstream's allocator walks pools, then the slices
 * of a pool, then the devices of a slice, and takes the first full solution of a
 * depth-first search (claims in pod order, requests in claim order, subrequests of
 * firstAvailable in order, devices as combinations in that walk order). Upstream
 * gathers pools in Go map order (random) and slices in informer order; gpusched sorts
 * pools by (driver, pool name) and slices by name. Where a node's devices for a request
 * come from one slice, the choice is upstream's exactly.
 *
 * Thread safety: none; one gs_dra belongs to one engine.
 */
#ifndef GPUSCHED_DRA_H
#define GPUSCHED_DRA_H

#include <stdbool.h>
#include <stdint.h>

#include "gpusched/error.h"
#include "gpusched/gpu.h"
#include "gpusched/kube.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Features of the allocator (kube-scheduler feature gates; all on by default, as in
 * Kubernetes 1.37 with its defaults). */
typedef struct gs_dra_features {
    bool admin_access;          /* DRAAdminAccess */
    bool prioritized_list;      /* DRAPrioritizedList (firstAvailable) */
    bool partitionable;         /* DRAPartitionableDevices (counters) */
    bool device_taints;         /* DRADeviceTaints */
    bool consumable_capacity;   /* DRAConsumableCapacity */
    bool binding_conditions;    /* DRADeviceBindingConditions + DRAResourceClaimDeviceStatus */
} gs_dra_features;

void gs_dra_features_default(gs_dra_features *f);

#define GS_DRA_RESULTS_MAX 32   /* resource.k8s.io AllocationResultsMaxSize */
#define GS_DRA_RESERVED_MAX 256 /* ResourceClaimReservedForMaxSize */

typedef struct gs_dra gs_dra;

/* Build the state for `snap` and the nodes the engine knows (nodes[i] is the engine's
 * node i; slices are matched to them by name, selectors and allNodes). Allocated claims
 * of the snapshot occupy their devices. CEL compile errors are not fatal here: a request
 * whose class or selector does not compile fails when a pod needs it, as upstream. */
gs_dra *gs_dra_new(const gs_snapshot *snap, const gs_node *const *nodes, uint32_t nnodes,
                   const gs_dra_features *features, gs_error *err);
void gs_dra_free(gs_dra *d);
/* Does the snapshot hold anything DRA (slices, classes or claims)? */
bool gs_dra_active(const gs_dra *d);

/* ---------------------------------------------------------------- pods */
#define GS_DRA_POD_CLAIMS_MAX 32

/* A pod's claims, resolved (indexes into the state's claim table, in spec order; pod
 * claims that need no claim are left out). */
typedef struct gs_dra_pod {
    uint32_t n;
    uint32_t claim[GS_DRA_POD_CLAIMS_MAX];
    uint8_t podclaim[GS_DRA_POD_CLAIMS_MAX]; /* index into gs_pod.claims */
    uint32_t nalloc;                          /* of them, not allocated yet */
} gs_dra_pod;

typedef enum gs_dra_status {
    GS_DRA_OK = 0,
    GS_DRA_UNSCHEDULABLE,   /* PreFilter / Filter: Unschedulable with msg */
    GS_DRA_ERROR,           /* the scheduling attempt fails with an error (msg): a CEL
                               runtime error, an invalid request, "all" over an
                               incomplete pool */
} gs_dra_status;

/* PreEnqueue + PreFilter for pod p (uid / namespace / name as its claims name it):
 * resolves its claims into *out, making claims from templates where the controller has
 * not (named "<pod>-<claim>"; kept in the state for later calls with the same pod).
 * GS_DRA_OK with out->n == 0: the pod uses no claims. Messages are upstream's:
 * `resourceclaim.resource.k8s.io "x" not found`, `resourceclaim "x" is being deleted`,
 * `resourceclaim in use`, `request r: device class c does not exist`. */
gs_dra_status gs_dra_pod_resolve(gs_dra *d, uint32_t pod_id, const gs_pod *p, gs_dra_pod *out,
                                 char *msg, size_t cap);

/* One claim's allocation as chosen by gs_dra_filter (device table indexes). */
typedef struct gs_dra_alloc_claim {
    uint16_t ndev;
    uint16_t first;            /* into gs_dra_alloc.dev / req */
} gs_dra_alloc_claim;

typedef struct gs_dra_alloc {
    uint32_t nclaims;          /* == pod->n */
    gs_dra_alloc_claim claim[GS_DRA_POD_CLAIMS_MAX];
    uint32_t ndev;
    uint32_t dev[GS_DRA_POD_CLAIMS_MAX * 4];   /* device table indexes */
    uint16_t req[GS_DRA_POD_CLAIMS_MAX * 4];   /* request (or flattened subrequest) index */
    uint8_t admin[GS_DRA_POD_CLAIMS_MAX * 4];  /* allocated with admin access */
    bool overflow;             /* more devices than this record holds: filter said no */
} gs_dra_alloc;

/* Filter: can the pod's claims be used on engine node `node`? Allocated claims must be
 * available there (else "resourceclaim not available on the node"), the others are
 * allocated together (else "cannot allocate all claims"). `out` (may be NULL) receives
 * the allocation. */
gs_dra_status gs_dra_filter(gs_dra *d, const gs_dra_pod *pod, uint32_t node, gs_dra_alloc *out,
                            char *msg, size_t cap);

/* Reserve/PreBind: the pod (engine pod id) reserves its claims on `node`; the claims
 * gs_dra_filter allocated get that allocation. Returns the pod claims (bit k = pod->claim[k])
 * that this call allocated (the others were allocated already: shared claims). */
uint32_t gs_dra_commit(gs_dra *d, const gs_dra_pod *pod, uint32_t pod_id, uint32_t node,
                       const gs_dra_alloc *a);
/* The pod goes: it no longer reserves its claims; a claim reserved by nobody is
 * deallocated (its devices, counters and capacity freed). The allocation it had is
 * written to `undo` (may be NULL) so a dry run can put it back with gs_dra_commit. */
void gs_dra_release(gs_dra *d, const gs_dra_pod *pod, uint32_t pod_id, uint32_t node,
                    gs_dra_alloc *undo);

/* ---------------------------------------------------------------- reading the state */
typedef struct gs_dra_result_view {
    const char *request;       /* "req" or "req/sub" */
    const char *driver;
    const char *pool;
    const char *device;
    bool admin_access;
} gs_dra_result_view;

/* The claim table: the name ("ns/name"), whether allocated, and its results. */
uint32_t gs_dra_nclaims(const gs_dra *d);
const char *gs_dra_claim_namespace(const gs_dra *d, uint32_t claim);
const char *gs_dra_claim_name(const gs_dra *d, uint32_t claim);
bool gs_dra_claim_generated(const gs_dra *d, uint32_t claim); /* made here from a template */
bool gs_dra_claim_allocated(const gs_dra *d, uint32_t claim);
uint32_t gs_dra_claim_results(const gs_dra *d, uint32_t claim, gs_dra_result_view *out, uint32_t cap);
/* The results an allocation record holds for pod claim i (as the claim would get them). */
uint32_t gs_dra_alloc_results(const gs_dra *d, const gs_dra_pod *pod, const gs_dra_alloc *a, uint32_t i,
                              gs_dra_result_view *out, uint32_t cap);

/* ---------------------------------------------------------------- one GPU inventory
 * DRA GPU devices share the engine's GPU inventory (gs_node_gpus) with device-plugin GPUs,
 * so a node that has both counts each GPU once: the GPU drivers' devices of type "gpu" are
 * the node's GPUs (in the order of their "index" attribute, else "minor", else walk order)
 * and type "mig" devices are parts of their parent (parentUUID = a GPU's uuid). Where the
 * device plugin advertises GPUs the DRA ones are linked to them by that order; where it
 * advertises none, the inventory's devices are made from the DRA ones (model from
 * productName, memory from the memory capacity). Called once per node by the engine;
 * returns -1 on OOM. */
int gs_dra_link_node_gpus(gs_dra *d, uint32_t node, gs_node_gpus *g);
/* The inventory device a DRA device takes when allocated, and how much of it (whole GPU:
 * 1000 milli and its memory; MIG: the profile's share and memory); false: not a GPU. */
bool gs_dra_device_gpu(const gs_dra *d, uint32_t dev, uint32_t *gpu, uint16_t *milli, uint32_t *mem_mib);

/* Devices the slices give engine node `node` (whatever the driver), and of them in use. */
void gs_dra_node_devices(const gs_dra *d, uint32_t node, uint32_t *total, uint32_t *in_use);


/* ---------------------------------------------------------------- explain
 * Why a pod's claims cannot be allocated, per request, with the smallest fix: the device
 * class does not exist; no published device matches (class and selectors) on any node;
 * the request asks more devices than any node has; every matching device is allocated
 * (to the claims named); a constraint cannot be met by the free devices; an allocated
 * claim pins the pod to a node. Findings come in claim and request order. */
typedef enum gs_dra_why_kind {
    GS_DRA_WHY_NO_CLASS = 0,
    GS_DRA_WHY_NO_DEVICES,      /* no device of the class is published at all */
    GS_DRA_WHY_NO_MATCH,        /* devices of the class exist, none passes the selectors */
    GS_DRA_WHY_TOO_MANY,        /* more devices than any node has that match */
    GS_DRA_WHY_ALLOCATED,       /* enough match, too few are free */
    GS_DRA_WHY_CONSTRAINT,      /* enough free, the claim's constraints cannot be met */
    GS_DRA_WHY_PINNED,          /* an allocated claim restricts the pod to its node */
    GS_DRA_WHY_ERROR,           /* a selector fails to compile or evaluate */
} gs_dra_why_kind;

typedef struct gs_dra_why {
    gs_dra_why_kind kind;
    char claim[320];            /* "namespace/name" */
    char request[200];          /* "req" or "req/sub" */
    char text[600];             /* the cause in words */
    char fix[600];              /* the smallest fix */
    uint32_t matching, free;    /* devices matching on the best node, free of them */
} gs_dra_why;

/* Findings for pod (resolved with gs_dra_pod_resolve); at most cap written, the number
 * found returned. */
uint32_t gs_dra_explain(gs_dra *d, const gs_dra_pod *pod, gs_dra_why *out, uint32_t cap);

/* ---------------------------------------------------------------- GPU claims (one rule)
 * Which DRA requests are GPUs, for the faces that tell GPU pods from the others (check's
 * toleration rules, explain's non-GPU pods, the GPU inventory): a DeviceClass is a GPU
 * class when its name or one of its selectors names a GPU DRA driver (gpu.nvidia.com,
 * NVIDIA's class mig.nvidia.com, gpu.amd.com, gpu.intel.com) or it maps an extended
 * resource the GPU layer accounts (extendedResourceName nvidia.com/gpu, ...). */
bool gs_dra_class_is_gpu(const gs_device_class *c);

/* Look-ups by name over a snapshot's DRA objects (built once: hash maps). */
typedef struct gs_dra_index gs_dra_index;
gs_dra_index *gs_dra_index_new(const gs_snapshot *s); /* NULL on OOM */
void gs_dra_index_free(gs_dra_index *x);
const gs_device_class *gs_dra_index_class(const gs_dra_index *x, const char *name);
const gs_resource_claim *gs_dra_index_claim(const gs_dra_index *x, const char *ns, const char *name);
const gs_resource_claim *gs_dra_index_template(const gs_dra_index *x, const char *ns, const char *name);
/* The ResourceClaim pod claim i uses (claim name, or the claim the status names), else its
 * template when the claim is not made yet; NULL when none is found or none is needed. */
const gs_resource_claim *gs_dra_pod_claim_spec(const gs_dra_index *x, const gs_pod *p, uint32_t i);
/* Requests of the pod's claims that ask for GPUs through a GPU class (a request with
 * firstAvailable counts when any alternative does); 0 = none. */
uint32_t gs_dra_pod_gpu_requests(const gs_dra_index *x, const gs_pod *p);

#ifdef __cplusplus
}
#endif
#endif
