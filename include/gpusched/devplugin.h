/*
 * devplugin.h - the node agent's kubelet device plugin, as plain C: its configuration, the
 * resources and device IDs it advertises, GetPreferredAllocation and the Allocate answer.
 * No gRPC and no NVML calls here: the transport (lib/agent/grpc.c) turns these structs into
 * protobuf messages, and the plan is built from an inventory gs_nvml_discover() filled.
 *
 * Configuration: NVIDIA k8s-device-plugin's config file (`version: v1`, `flags`, `sharing`),
 * so an operator can point the agent at the ConfigMap they already have, plus gpusched's
 * own `gpusched:` section. Defaults are NVIDIA's. Unknown keys in the sections read here
 * are errors with file:line:col (a typo never silently turns a setting off); keys NVIDIA
 * knows but gpusched does not use are accepted and ignored, and unrelated top-level
 * sections (`resources`, `imex`, ...) are ignored. See docs/agent.md, "Device plugin:
 * resources, IDs, Allocate".
 *
 * Ownership: a config is a plain value (no pointers, nothing to free). A plan and an
 * allocation own all their memory (one arena each): free with gs_devplugin_plan_free /
 * gs_devplugin_alloc_free. The library never prints and never exits.
 */
#ifndef GPUSCHED_DEVPLUGIN_H
#define GPUSCHED_DEVPLUGIN_H

#include <stdbool.h>
#include <stddef.h>

#include "gpusched/error.h"
#include "gpusched/gpu.h"
#include "gpusched/nvml.h"
#include "gpusched/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- configuration */
#define GS_DP_NAME_MAX 64      /* a resource name: NVIDIA's MaxResourceNameLength 63 + NUL */
#define GS_DP_PATH_MAX 256
#define GS_DP_MAX_REPLICATED 16 /* sharing.*.resources entries */
#define GS_DP_MAX_SHARE 4       /* gpusched.shareResources entries */
#define GS_DP_MAX_WARN 8
#define GS_DP_WARN_MAX 160

typedef enum gs_dp_id_strategy {
    GS_DP_ID_UUID = 0, /* "GPU-...", "MIG-..." (NVIDIA's default) */
    GS_DP_ID_INDEX,    /* "0", "0:1" (GPU 0, MIG device 1) */
} gs_dp_id_strategy;

/* flags.plugin.deviceListStrategy: a set (a string or a list in the file). */
enum {
    GS_DP_LIST_ENVVAR = 1,
    GS_DP_LIST_VOLUME_MOUNTS = 2,
    GS_DP_LIST_CDI_ANNOTATIONS = 4,
    GS_DP_LIST_CDI_CRI = 8,
};

typedef enum gs_dp_replica_policy {
    GS_DP_DISTRIBUTED = 0, /* fewest used replicas first (NVIDIA's default) */
    GS_DP_PACKED,          /* fill one device first */
} gs_dp_replica_policy;

/* One sharing.{timeSlicing,mps}.resources[] entry. */
typedef struct gs_devplugin_replicated {
    char name[GS_DP_NAME_MAX]; /* "nvidia.com/gpu", "nvidia.com/mig-1g.10gb" */
    unsigned replicas;         /* >= 1 */
    /* `rename` and `devices` are validated and, as in NVIDIA's plugin, not applied (a
     * warning says so). */
} gs_devplugin_replicated;

typedef struct gs_devplugin_config {
    gs_mig_strategy mig_strategy;      /* flags.migStrategy; none */
    gs_dp_id_strategy id_strategy;     /* flags.plugin.deviceIDStrategy; uuid */
    unsigned list_strategies;          /* GS_DP_LIST_* bits; envvar */
    bool pass_device_specs;            /* flags.plugin.passDeviceSpecs; false */
    bool gds_enabled, mofed_enabled, gdrcopy_enabled; /* flags.{gds,mofed,gdrcopy}Enabled; false */
    gs_dp_replica_policy replica_policy; /* flags.plugin.sharedDevicesAllocationPolicy */
    char driver_root[GS_DP_PATH_MAX];  /* flags.nvidiaDriverRoot; "/" */
    char mps_root[GS_DP_PATH_MAX];     /* flags.mpsRoot; "/run/nvidia/mps" */
    char cdi_annotation_prefix[GS_DP_NAME_MAX]; /* flags.plugin.cdiAnnotationPrefix; "cdi.k8s.io/" */

    gs_gpu_sharing sharing;            /* NONE, TIME_SLICING or MPS */
    bool rename_by_default;            /* sharing.*.renameByDefault; false */
    bool fail_requests_gt_one;         /* sharing.*.failRequestsGreaterThanOne; false (MPS: true) */
    size_t n_replicated;
    gs_devplugin_replicated replicated[GS_DP_MAX_REPLICATED];

    /* gpusched's own section. `gpusched.shareResources`: the extender-managed share
     * resources to advertise, accounting only (design.md): "aliyun.com/gpu-mem" (GiB of
     * each GPU's memory) and "alibabacloud.com/gpu-milli" (1000 per GPU). Default none. */
    size_t n_share;
    char share[GS_DP_MAX_SHARE][GS_DP_NAME_MAX];

    size_t n_warnings;                 /* settings accepted but not applied */
    char warnings[GS_DP_MAX_WARN][GS_DP_WARN_MAX];
} gs_devplugin_config;

/* NVIDIA's defaults (and no share resources). */
void gs_devplugin_config_defaults(gs_devplugin_config *cfg);

/* Parse a config file (YAML or JSON) into *cfg (defaults first). `file` names the input in
 * errors. Errors: GS_ERR_PARSE (syntax), GS_ERR_INVALID (unknown key, wrong type or value,
 * with file:line:col and the key path), GS_ERR_LIMIT (sizes). An empty file is the
 * defaults. */
int gs_devplugin_config_parse(const char *file, const char *data, size_t len,
                              gs_devplugin_config *cfg, gs_error *err);

/* ---------------------------------------------------------------- plan */
typedef enum gs_dp_kind {
    GS_DP_RES_GPU = 0, /* whole GPUs (and MIG devices under the single strategy) */
    GS_DP_RES_MIG,     /* nvidia.com/mig-<profile> (mixed strategy) */
    GS_DP_RES_SHARE,   /* an extender-managed share resource: accounting only */
} gs_dp_kind;

/* One advertised device (one Device in ListAndWatch). */
typedef struct gs_devplugin_device {
    const char *id;      /* advertised ID: UUID or index form, "::<k>" for a replica or unit */
    const char *base_id; /* the ID without "::<k>" */
    const char *uuid;    /* the physical device: "GPU-..." or "MIG-..." */
    int gpu;             /* position of the GPU in the inventory (gpus[]) */
    int gpu_index;       /* its NVML index */
    int mig;             /* MIG device index on the GPU, or -1 */
    int replica;         /* replica / unit number k, or -1 */
    int numa_node;       /* -1 unknown (TopologyInfo left empty) */
    bool healthy;
} gs_devplugin_device;

typedef struct gs_devplugin_resource {
    const char *name;    /* "nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb" */
    const char *socket;  /* "gpusched-gpu.sock", "gpusched-mig-1g.10gb.sock" */
    gs_dp_kind kind;
    const char *profile; /* MIG profile ("1g.10gb"), "" otherwise */
    gs_gpu_sharing sharing; /* NONE, TIME_SLICING or MPS */
    unsigned replicas;   /* per physical device; 1 when not shared */
    bool accounting_only;     /* Allocate gives no device (share resources) */
    bool preferred_available; /* register with GetPreferredAllocationAvailable */
    size_t n_devices;
    gs_devplugin_device *devices;
} gs_devplugin_resource;

typedef struct gs_dp_gpu_topo gs_dp_gpu_topo; /* private: per-GPU topology and minors */
typedef struct gs_dp_mig_minor gs_dp_mig_minor;

typedef struct gs_devplugin_plan {
    gs_mig_strategy mig_strategy;
    size_t n_resources;
    gs_devplugin_resource *resources;
    /* Why something is not advertised: lost GPUs, MIG devices left out, a single-strategy
     * layout that is not uniform ("nothing advertised: ..."). One line each. */
    size_t n_notes;
    const char **notes;
    bool nothing;        /* the strategy refused the node: no resource at all (notes say why) */
    bool injection_ready; /* share resources healthy only when true (the NRI plugin is
                           * registered); false at build */
    /* private */
    size_t n_gpus;
    gs_dp_gpu_topo *topo;
    size_t n_minors;
    gs_dp_mig_minor *minors;
    gs_arena arena;
} gs_devplugin_plan;

/* Build the plan: which resources, which devices, under the config's MIG strategy and
 * sharing. Lost GPUs are left out with a note. Errors: GS_ERR_INVALID for a config the
 * inventory cannot serve as NVIDIA's plugin would refuse it (MPS on MIG devices); a
 * single-strategy layout that is not uniform is not an error: plan->nothing with a note. */
int gs_devplugin_plan_build(const gs_nvml_inventory *inv, const gs_devplugin_config *cfg,
                            gs_devplugin_plan *out, gs_error *err);
void gs_devplugin_plan_free(gs_devplugin_plan *plan);

/* Mark a GPU (mig = -1: the GPU and everything on it) or one MIG device healthy or not,
 * in every resource (replicas and share units included). `gpu` is the NVML index.
 * Returns the number of devices whose health changed (0: no ListAndWatch update due). */
size_t gs_devplugin_plan_set_health(gs_devplugin_plan *plan, int gpu, int mig, bool healthy);

/* Whether injection works (NRI plugin registered): share resources are reported healthy
 * only then (design.md). Returns the number of devices whose health changed. */
size_t gs_devplugin_plan_set_injection(gs_devplugin_plan *plan, bool ready);

/* The advertised device count of a resource name (0 when not advertised); *healthy (may be
 * NULL): how many of them are healthy. For `agent check` and consistency tests. */
size_t gs_devplugin_plan_capacity(const gs_devplugin_plan *plan, const char *resource,
                                  size_t *healthy);

/* The resource of that name, or NULL. */
const gs_devplugin_resource *gs_devplugin_plan_resource(const gs_devplugin_plan *plan,
                                                        const char *name);

/* The device of `id` in `res`, or NULL. */
const gs_devplugin_device *gs_devplugin_find(const gs_devplugin_resource *res, const char *id);

/* /proc/driver/nvidia-caps/mig-minors text ("gpu0/gi1/access 12", "gpu0/gi1/ci0/access
 * 13", ...): the nvidia-caps minors Allocate passes for MIG devices with passDeviceSpecs
 * (nvidia.md 1.6). Replaces any table set before. Errors: GS_ERR_PARSE with line:col. */
int gs_devplugin_plan_set_mig_minors(gs_devplugin_plan *plan, const char *file, const char *data,
                                     size_t len, gs_error *err);

/* ---------------------------------------------------------------- GetPreferredAllocation */
/* Choose `size` IDs of `res` from available[0..n_avail), must_include[0..n_must) first.
 * Whole GPUs: the set with the most NVLink-connected pairs (then links), then the most
 * pairs on one NUMA node, then the lowest PCI bus distance; replicas: distributed or
 * packed (cfg->replica_policy) over the physical devices, a replica being "used" when it
 * is not available; MIG devices and share units: in plan order. Deterministic. out_ids
 * (size entries) point into the plan. Errors: GS_ERR_NOTFOUND (an unknown ID),
 * GS_ERR_INVALID (size larger than available, smaller than must_include, duplicates). */
int gs_devplugin_preferred(const gs_devplugin_plan *plan, const gs_devplugin_config *cfg,
                           const gs_devplugin_resource *res, const char *const *available,
                           size_t n_avail, const char *const *must_include, size_t n_must,
                           size_t size, const char **out_ids, gs_error *err);

/* ---------------------------------------------------------------- Allocate */
typedef struct gs_devplugin_kv {
    const char *key, *value;
} gs_devplugin_kv;

typedef struct gs_devplugin_mount {
    const char *container_path, *host_path;
    bool read_only;
} gs_devplugin_mount;

typedef struct gs_devplugin_devspec {
    const char *container_path, *host_path;
    const char *permissions; /* "rw" */
} gs_devplugin_devspec;

/* One ContainerAllocateResponse. */
typedef struct gs_devplugin_alloc {
    size_t n_envs;
    gs_devplugin_kv *envs;
    size_t n_mounts;
    gs_devplugin_mount *mounts;
    size_t n_devices;
    gs_devplugin_devspec *devices;
    size_t n_annotations;
    gs_devplugin_kv *annotations;
    size_t n_cdi;
    const char **cdi_devices; /* fully qualified CDI names */
    gs_arena arena;           /* owns everything above */
} gs_devplugin_alloc;

/* The answer for one container asking for ids[0..n) of `res`. Errors (the caller fails
 * the gRPC call with the message and pushes a ListAndWatch update): GS_ERR_NOTFOUND an
 * unknown ID; GS_ERR_INVALID an unhealthy device, an ID listed twice, no ID,
 * failRequestsGreaterThanOne with more than one replica, a device node or nvidia-caps
 * minor unknown while passDeviceSpecs is on. *out is cleared first and left empty on
 * error. */
int gs_devplugin_allocate(const gs_devplugin_plan *plan, const gs_devplugin_config *cfg,
                          const gs_devplugin_resource *res, const char *const *ids, size_t n,
                          gs_devplugin_alloc *out, gs_error *err);
void gs_devplugin_alloc_free(gs_devplugin_alloc *a);

/* The value of env `key` in an allocation, or NULL. */
const char *gs_devplugin_alloc_env(const gs_devplugin_alloc *a, const char *key);

#ifdef __cplusplus
}
#endif
#endif
