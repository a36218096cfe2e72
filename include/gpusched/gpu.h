/*
 * gpu.h - GPU devices: the MIG catalog, pod GPU requests in every convention users write,
 * node GPU inventories reconstructed from what the NVIDIA stack publishes, and the
 * per-node device state the engine filters, scores and binds against.
 *
 * Canonical request form (what every convention is translated into, docs/gpu-requests.md):
 *   kind WHOLE : count whole devices (nvidia.com/gpu: N)
 *   kind SHARE : count devices, each with a share: milli (thousandths of the device's
 *                compute) and/or mem_mib (MiB of device memory); a share never spans devices
 *   kind MIG   : count MIG instances of one profile (nvidia.com/mig-<profile>: N)
 *   plus models: allowed GPU models (card-model annotations); empty = any.
 * The canonical annotations gpusched.io/gpu-count, gpusched.io/gpu-milli,
 * gpusched.io/gpu-memory (MiB) and gpusched.io/gpu-model ("A|B") express the same thing.
 *
 * Device accounting never over-commits: per device, milli_used <= 1000,
 * mem_used <= mem_mib, slots_used <= slots. A share of `milli` also takes
 * milli*mem/1000 MiB, and a share of `mem_mib` also takes ceil(mem*1000/mem) milli, so
 * both views of a device agree whichever convention placed a pod on it.
 *
 * Memory: gs_node_gpus objects are plain values holding malloc'ed arrays; free them
 * with gs_node_gpus_free(). Catalog data is static and lives forever.
 */
#ifndef GPUSCHED_GPU_H
#define GPUSCHED_GPU_H

#include <stdbool.h>
#include <stdint.h>

#include "gpusched/error.h"
#include "gpusched/kube.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- MIG catalog */
typedef struct gs_mig_profile {
    const char *name;     /* "1g.10gb", "1g.10gb+me" */
    uint8_t id;           /* NVML profile id as nvidia-smi shows it (19, 20, 15, 14, 9, 5, 0) */
    uint8_t compute;      /* compute slices (the G in <G>g) */
    uint8_t mem_slices;   /* memory slices = placement size */
    uint8_t max_count;    /* instances per GPU */
    uint8_t starts;       /* bit i set = start slot i allowed */
    uint32_t mem_mib;     /* memory as NVML reports it, approximate; 0 when unknown */
    bool unverified;      /* the reference marks this profile's facts [U]/[I] */
} gs_mig_profile;

typedef struct gs_mig_model {
    const char *name;            /* canonical model name, "A100-SXM4-80GB" */
    const char *const *products; /* nvidia.com/gpu.product values that mean this model */
    uint16_t pci_device_ids[8];  /* 0-terminated */
    uint8_t compute_slices;      /* 7, or 4 on A30 and RTX PRO 6000 */
    uint8_t memory_slices;       /* 8, or 4 on A30 and RTX PRO 6000 */
    uint32_t mem_mib;            /* whole-GPU memory in MiB (approx.) */
    const gs_mig_profile *profiles;
    uint8_t nprofiles;
    bool unverified;             /* placements inferred, not observed */
} gs_mig_model;

/* All catalog models (static array). */
const gs_mig_model *gs_mig_models(uint32_t *count);
/* Match a gpu.product label value (also with "-MIG-<profile>" and "-SHARED" suffixes
 * and with or without the "NVIDIA-" prefix) or a catalog name. NULL if not MIG-capable. */
const gs_mig_model *gs_mig_model_find(const char *product);
const gs_mig_profile *gs_mig_profile_find(const gs_mig_model *m, const char *name);
/* Resource name for a profile under the mixed strategy: "nvidia.com/mig-1g.10gb.me". */
void gs_mig_resource_name(const gs_mig_profile *p, char *buf, size_t cap);
/* Parse "nvidia.com/mig-<profile>" (with '.me' for '+me'): writes the profile string
 * ("1g.10gb+me") into buf; false if name is not a MIG resource. */
bool gs_mig_parse_resource(const char *name, char *buf, size_t cap);
/* Layout validity: can `n` instances with the given profile indexes (into m->profiles)
 * coexist on one GPU? Exact search over legal starts; max counts enforced. On success
 * writes each instance's start slot into starts_out (may be NULL). */
bool gs_mig_layout_fits(const gs_mig_model *m, const uint8_t *profile_idx, uint32_t n,
                        uint8_t *starts_out);

/* NVML profile id not observed anywhere the reference cites (gs_mig_profile.id). */
#define GS_MIG_ID_UNKNOWN 0xFFu

/* Profile attributes as go-nvlib parses them (nvidia.md 1.1): "<name>+a[,b]" or "<name>-a". */
#define GS_MIG_ATTR_ME 0x01u     /* +me: media engines (at least one NVDEC/NVJPG/OFA) */
#define GS_MIG_ATTR_ME_ALL 0x02u /* +me.all: every media engine; only -me profiles may share
                                    the GPU with it */
#define GS_MIG_ATTR_NO_ME 0x04u  /* -me: no media engine */
#define GS_MIG_ATTR_GFX 0x08u    /* +gfx: graphics capable (GB20x / RTX PRO) */
#define GS_MIG_ATTR_OTHER 0x80u  /* an attribute the catalog does not know */
/* Attribute bits of a profile name ("1g.24gb+me.all", "1c.2g.48gb-me"); 0 for a plain one. */
unsigned gs_mig_profile_name_attrs(const char *name);
unsigned gs_mig_profile_attrs(const gs_mig_profile *p);

/* MIG slice amounts, the one rule: the fraction of a GPU one instance is, its compute
 * slices over the model's own (7, or 4 on A30 and RTX PRO). */
double gs_mig_profile_fraction(const gs_mig_model *m, const gs_mig_profile *p);
/* The same for a profile name a pod asks for ("2g.12gb", "1g.10gb+me"): on `hint` when it
 * offers the name, else on the catalog models that offer it when they agree, else G/7. */
double gs_mig_request_fraction(const char *profile, const gs_mig_model *hint);

/* ---------------------------------------------------------------- requests */
typedef enum gs_gpu_kind {
    GS_GPU_NONE = 0,
    GS_GPU_WHOLE,
    GS_GPU_SHARE,
    GS_GPU_MIG,
} gs_gpu_kind;

typedef enum gs_gpu_conv {
    GS_CONV_NONE = 0,
    GS_CONV_NVIDIA,    /* nvidia.com/gpu, nvidia.com/mig-* (device plugin) */
    GS_CONV_GPUSCHED,  /* gpusched.io/ annotations (canonical) */
    GS_CONV_HAMI,      /* nvidia.com/gpumem, gpumem-percentage, gpucores */
    GS_CONV_KAI,       /* gpu-fraction / gpu-memory annotations */
    GS_CONV_GPUSHARE,  /* aliyun.com/gpu-mem */
    GS_CONV_OPENB,     /* gpu-milli / gpu-count / gpu-card-model annotations (open-gpu-share) */
    GS_CONV_VOLCANO,   /* volcano.sh/gpu-number, volcano.sh/gpu-memory (Volcano GPU share) */
    GS_CONV_VOLCANO_VGPU, /* volcano.sh/vgpu-number, vgpu-memory, vgpu-cores (Volcano vGPU) */
} gs_gpu_conv;

/*
 * Resource families: which advertised resources a GPU request is accounted against. The
 * kube-scheduler matches extended resources by name only, so a request fits only nodes
 * whose inventory comes from a family the request accepts; elsewhere the node fails with
 * "Insufficient <request's resource>" (docs/gpu-requests.md, "Resource families").
 * A node holds a set of families (gs_node_gpus.families, bits 1 << GS_FAM_*), a request
 * the set it accepts (gs_gpu_request.families); gs_gpu_fit_node tests their intersection.
 */
typedef enum gs_gpu_family {
    GS_FAM_NVIDIA = 0,    /* nvidia.com/gpu: device plugin whole GPUs, replicas, MIG single */
    GS_FAM_NVIDIA_SHARED, /* nvidia.com/gpu.shared (time-slicing/MPS with renameByDefault) */
    GS_FAM_NVIDIA_MIG,    /* nvidia.com/mig-<profile> (mixed strategy) */
    GS_FAM_HAMI,          /* HAMi vGPU: hami.io/node-nvidia-register, nvidia.com/gpu slots */
    GS_FAM_GPUSHARE,      /* aliyun.com/gpu-mem, aliyun.com/gpu-count */
    GS_FAM_OPENB,         /* alibabacloud.com/gpu-milli, alibabacloud.com/gpu-count */
    GS_FAM_VOLCANO,       /* volcano.sh/gpu-number, volcano.sh/gpu-memory */
    GS_FAM_VOLCANO_VGPU,  /* volcano.sh/vgpu-number, vgpu-memory (volcano-vgpu device plugin) */
    GS_FAM__COUNT
} gs_gpu_family;

#define GS_FAMS_ANY ((uint16_t)((1u << GS_FAM__COUNT) - 1u))
/* Human name of a family ("nvidia.com/gpu (device plugin)"). */
const char *gs_gpu_family_name(gs_gpu_family f);

#define GS_GPU_MAX_MODELS 8

typedef struct gs_gpu_request {
    gs_gpu_kind kind;
    gs_gpu_conv conv;
    uint16_t count;      /* devices (WHOLE, SHARE) or instances (MIG) */
    uint16_t milli;      /* SHARE: compute share per device, 0..1000 (0 = derive from memory) */
    uint32_t mem_mib;    /* SHARE: memory per device in MiB (0 = derive from milli) */
    uint8_t mem_pct;     /* SHARE: HAMi gpumem-percentage (0 = unset) */
    char mig_profile[32];/* MIG: "1g.10gb" */
    uint8_t nmodels;
    const char *models[GS_GPU_MAX_MODELS]; /* allowed models, NUL-terminated; strings live
                            in the snapshot or in a process-lifetime table of model names */
    const char *resource;/* the resource name that carried the request ("nvidia.com/gpu");
                            "Insufficient <resource>" names it (NULL: nvidia.com/gpu) */
    const char *scheduler_expected; /* scheduler that implements the convention; NULL = any */
    uint16_t families;   /* node families (1 << GS_FAM_*) the request may land on */
    uint32_t gpushare_units; /* GPUSHARE: the aliyun.com/gpu-mem amount as written (GiB, or
                            MiB on nodes whose gpushare plugin runs --memory-unit=MiB) */
    /* HAMi's pod annotations (GS_HAMI_* bits of those present) and the pod's annotations
     * they are read from (gs_gpu_request_hami; NULL when hami == 0). The selection keys
     * are comma-separated lists: types match a device's type as a case-insensitive
     * substring, UUIDs exactly; honoured on HAMi / Volcano vGPU nodes (which publish
     * per-device type and UUID). VGPU_MODE and GPU_POLICY are read, not modelled. */
    uint8_t hami;
    const gs_labels *hami_ann;
} gs_gpu_request;

#define GS_HAMI_USE_TYPE 0x01   /* nvidia.com/use-gputype */
#define GS_HAMI_NOUSE_TYPE 0x02 /* nvidia.com/nouse-gputype */
#define GS_HAMI_USE_UUID 0x04   /* nvidia.com/use-gpuuuid */
#define GS_HAMI_NOUSE_UUID 0x08 /* nvidia.com/nouse-gpuuuid */
#define GS_HAMI_SELECT 0x0f     /* any device selection */
#define GS_HAMI_VGPU_MODE 0x10  /* nvidia.com/vgpu-mode (not modelled) */
#define GS_HAMI_GPU_POLICY 0x20 /* hami.io/gpu-scheduler-policy (not modelled) */
/* The annotation key of one GS_HAMI_* bit, and its value in the request's pod (NULL when
 * absent). */
const char *gs_gpu_hami_key(unsigned bit);
const char *gs_gpu_request_hami(const gs_gpu_request *r, unsigned bit);

/* Translate a pod into its canonical GPU request. Containers' requests are summed (init
 * containers: max, as k8s effective requests). Returns 0; GS_ERR_INVALID with a clear
 * message for contradictory or impossible requests (fractional nvidia.com/gpu, fraction
 * > 1 with count > 1 in KAI, two conventions at once, several MIG profiles in one pod). */
int gs_gpu_request_from_pod(const gs_pod *pod, gs_gpu_request *out, gs_error *err);
/* Length of the first model of an "A|B" list (up to the next '|' or NUL). */
size_t gs_gpu_model_len(const char *model);
/* Does a node's model (product label or openb card model) satisfy one requested model?
 * Case-insensitive; an "NVIDIA-" prefix and GFD's "-MIG-<profile>" / "-SHARED" suffixes
 * are ignored on both sides; `model` ends at '|' or NUL. This is the rule
 * gs_gpu_fit_node applies (GS_FIT_MODEL). */
bool gs_gpu_model_matches(const char *model, const char *node_model);
/* True if `name` is a resource the GPU layer accounts for per device (so the generic
 * NodeResourcesFit scalar check skips it): nvidia.com/gpu, nvidia.com/mig-*,
 * nvidia.com/gpumem*, nvidia.com/gpucores, aliyun.com/gpu-mem, aliyun.com/gpu-count,
 * alibabacloud.com/gpu-..., and every gpusched.io/ name. */
bool gs_gpu_is_device_resource(const char *name);
/* Human text of a request: "1 GPU", "2x 0.5 GPU", "0.25 GPU (4096 MiB)", "1 MIG 1g.10gb". */
void gs_gpu_request_describe(const gs_gpu_request *r, char *buf, size_t cap);

/* ---------------------------------------------------------------- node inventory */
typedef enum gs_gpu_sharing {
    GS_SHARING_NONE = 0,
    GS_SHARING_TIME_SLICING,
    GS_SHARING_MPS,
    GS_SHARING_VGPU,  /* HAMi / Volcano vGPU: at most `slots` (split count) pods per device */
} gs_gpu_sharing;

typedef enum gs_mig_strategy {
    GS_MIG_NONE = 0,
    GS_MIG_SINGLE,
    GS_MIG_MIXED,
} gs_mig_strategy;

/* One physical GPU. Compact: the engine scans these in the hot loop. */
typedef struct gs_gpu_dev {
    uint16_t milli_used;  /* 0..1000 */
    uint16_t slots;       /* time-slicing replicas (1 = exclusive device) */
    uint16_t slots_used;
    uint16_t npods;       /* pods holding any part of this device */
    uint32_t mem_mib;     /* device memory; 0 = unknown */
    uint32_t mem_used;
    uint16_t mig_first;   /* index of its first MIG instance in gs_node_gpus.mig */
    uint8_t nmig;         /* MIG instances on this device (0 = MIG disabled) */
    uint8_t flags;        /* GS_DEV_* */
} gs_gpu_dev;

#define GS_DEV_MIG_ENABLED 0x01
#define GS_DEV_UNHEALTHY 0x02 /* present in labels, not in allocatable */

typedef struct gs_mig_inst {
    uint8_t profile;  /* index into model->profiles */
    uint8_t start;    /* memory slice where it starts */
    uint8_t dev;      /* index of the parent GPU */
    uint8_t used;     /* 0 free, 1 allocated */
} gs_mig_inst;

typedef struct gs_node_gpus {
    const char *model;            /* product label value, or openb card model; "" unknown */
    const gs_mig_model *mig_model;/* catalog entry, NULL if not MIG-capable/unknown */
    gs_mig_strategy mig_strategy;
    gs_gpu_sharing sharing;
    const char *resource;         /* name whole devices are advertised under */
    gs_gpu_dev *devs;
    uint32_t ndevs;
    gs_mig_inst *mig;
    uint32_t nmig;
    /* MIG resources as the node advertises them (mixed strategy): a pod asking for
     * nvidia.com/mig-<p> may only take instances advertised under that exact name, even
     * when a driver-renamed profile ("3g.39gb") maps to a catalog one ("3g.40gb"). */
    const char *mig_res_name[16]; /* full resource names (strings of the snapshot) */
    uint8_t mig_res_profile[16];  /* the catalog profile index each name resolved to */
    uint8_t nmig_res;
    bool gpu_node;                /* any GPU signal: capacity, MIG resources, gpu.present label */
    bool labels_only;             /* labelled as GPU node but advertises no GPUs */
    bool mig_invalid;             /* GFD product "<model>-MIG-INVALID": single strategy over a
                                     mixed (or partly disabled) MIG layout, nothing advertised */
    bool gpushare_mib;            /* aliyun.com/gpu-mem is counted in MiB on this node */
    uint16_t families;            /* resource families advertised (1 << GS_FAM_*) */
    /* per-device type and UUID (HAMi / Volcano vGPU register annotation), ndevs entries
     * each, NULL otherwise; strings live in one block owned by the inventory */
    const char **dev_type;
    const char **dev_uuid;
    char *strs;
    uint32_t strs_len;
} gs_node_gpus;

/* Build the inventory of one node from allocatable/capacity resources and labels:
 * nvidia.com/gpu (with nvidia.com/gpu.replicas / sharing-strategy for time-slicing),
 * nvidia.com/mig-<profile> (mixed), single-strategy products ("<model>-MIG-<profile>"),
 * nvidia.com/gpu.product / .memory / .count, alibabacloud.com/gpu-count + gpu-milli +
 * label alibabacloud.com/gpu-card-model (openb), aliyun.com/gpu-count + gpu-mem.
 * MIG instances are laid out on their GPUs deterministically (largest profile first,
 * lowest legal start). Returns 0, or -1 with err for an impossible inventory. */
int gs_node_gpus_build(const gs_node *node, gs_node_gpus *out, gs_error *err);
/* The value of a managed-cloud accelerator label (GKE cloud.google.com/gke-accelerator,
 * EKS k8s.amazonaws.com/accelerator, AKS kubernetes.azure.com/accelerator), NULL if none;
 * *key (may be NULL) receives the label's name. Such a label names the GPU model where GFD
 * does not run (the inventory's model when nvidia.com/gpu.product is absent). */
const char *gs_gpu_cloud_accelerator(const gs_labels *labels, const char **key);
void gs_node_gpus_free(gs_node_gpus *g);
/* Deep copy (for what-if clones). */
int gs_node_gpus_copy(gs_node_gpus *dst, const gs_node_gpus *src);
/* Re-partition one MIG-enabled GPU (mixed strategy) that has no instance in use: its
 * instances become `n` instances of the catalog profiles pidx[0..n), at starts[0..n) when
 * given (a layout read back from this GPU, restored as it was), else at the lowest legal
 * starts (gs_mig_layout_fits); kept in start order; n = 0 leaves the GPU with no
 * instance (what it offers while mig-manager re-creates them). The node's instance array
 * keeps GPU order, so the instances of later GPUs move: remap (gs_node_gpus.nmig entries
 * before the call, may be NULL) receives each old instance's new index (0xffff for the
 * GPU's own old instances). A profile the node does not advertise yet gets names[i] as
 * its resource name (a string that must outlive g; NULL or names NULL: none; at most 16
 * names per node). Returns 0; -1 with g unchanged when the GPU is not MIG-enabled,
 * has an instance in use, the layout is not placeable or memory runs out. */
int gs_node_gpus_mig_relayout(gs_node_gpus *g, uint32_t dev, const uint8_t *pidx,
                              const uint8_t *starts, uint32_t n, const char *const *names,
                              uint16_t *remap);

/* ---------------------------------------------------------------- fit and bind */
#define GS_GPU_ASSIGN_MAX 16

/* Which devices a placement took. For SHARE, each entry is a device with its share. */
typedef struct gs_gpu_assign {
    uint8_t n;
    uint8_t dev[GS_GPU_ASSIGN_MAX];     /* device index (WHOLE, SHARE) or parent device (MIG) */
    uint16_t mig[GS_GPU_ASSIGN_MAX];    /* MIG instance index, or 0xffff */
    uint16_t milli[GS_GPU_ASSIGN_MAX];  /* compute share taken on dev */
    uint32_t mem[GS_GPU_ASSIGN_MAX];    /* memory taken on dev, MiB */
    uint16_t slots[GS_GPU_ASSIGN_MAX];  /* time-slice replicas taken on dev */
} gs_gpu_assign;

typedef enum gs_gpu_fit {
    GS_FIT_OK = 0,
    GS_FIT_NO_GPU,         /* node has no GPUs of the requested kind at all */
    GS_FIT_MODEL,          /* model not allowed by the request */
    GS_FIT_INSUFFICIENT,   /* not enough free devices/shares now (resolvable by preemption) */
    GS_FIT_NEVER,          /* could never fit even on the empty node (count/size too large) */
    GS_FIT_MIG_PROFILE,    /* node does not offer that MIG profile */
} gs_gpu_fit;

/* Can the request be placed on this node now? If yes and `out` is non-NULL, choose the
 * devices (best fit: the tightest device that fits, ties to the lowest index; whole
 * devices: the lowest-index free ones) without changing state. */
gs_gpu_fit gs_gpu_fit_node(const gs_node_gpus *g, const gs_gpu_request *r, gs_gpu_assign *out);
/* Healthy devices of the node the request may use after HAMi's device selection
 * (use-gputype, nouse-gputype, use-gpuuuid, nouse-gpuuuid; applied on vGPU nodes only). */
uint32_t gs_gpu_selected_devices(const gs_node_gpus *g, const gs_gpu_request *r);
/* Apply / undo an assignment chosen by gs_gpu_fit_node. */
void gs_gpu_bind(gs_node_gpus *g, const gs_gpu_assign *a);
void gs_gpu_unbind(gs_node_gpus *g, const gs_gpu_assign *a);
/* Free capacity summary used by scores and explain. */
typedef struct gs_gpu_free {
    uint32_t devices;        /* devices */
    uint32_t whole_free;     /* devices with nothing allocated */
    uint32_t milli_free;     /* sum over devices of 1000 - milli_used (non-MIG) */
    uint32_t mig_free;       /* free MIG instances */
} gs_gpu_free;
void gs_gpu_free_summary(const gs_node_gpus *g, gs_gpu_free *out);
/* Human text of an assignment: "gpu 0,1", "gpu 3 (500m, 8192Mi)", "mig 1g.10gb gpu 0 @2". */
void gs_gpu_assign_describe(const gs_node_gpus *g, const gs_gpu_assign *a, char *buf, size_t cap);
/* Pods already bound (spec.nodeName) whose device assignment is unknown (no assignment
 * record: placed by another scheduler or by the device plugin alone) are given devices
 * deterministically, the one rule of the engine and the extender: per node, in the order
 * of this comparison (status.startTime, a pod without one last: start = GS_GPU_NO_START;
 * then input order, the API server's list order), each takes the devices
 * gs_gpu_fit_node chooses on the node's state after the pods before it; a pod that does
 * not fit is counted without devices. <0, 0, >0 as for qsort. */
#define GS_GPU_NO_START INT64_MAX
int gs_gpu_bound_cmp(int64_t start_a, uint64_t order_a, int64_t start_b, uint64_t order_b);

/* The device-level best-fit score of placing assignment a (of request r) on node g, whose
 * state does not include a yet: 0..100, higher = the devices end fuller. Shares: the mean
 * over the chosen devices of their compute used after placing (GPUShareBinpack, the
 * engine's score of GPU shares); whole GPUs: the part of the node's usable (healthy, not
 * MIG) devices busy after placing (time-sliced devices: of their replicas); MIG: the part
 * of the node's instances in use after placing. 0 when a is empty. */
int64_t gs_gpu_binpack_score(const gs_node_gpus *g, const gs_gpu_request *r, const gs_gpu_assign *a);

#ifdef __cplusplus
}
#endif
#endif
