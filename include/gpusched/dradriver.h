/*
 * dradriver.h - the node agent as a DRA driver (kubelet plugin): the node side of Dynamic
 * Resource Allocation (docs/agent.md, "DRA driver").
 *
 *   ResourceSlice   the node's devices (whole GPUs, MIG devices) in one resource.k8s.io/v1
 *                   ResourceSlice of driver `gpu.nvidia.com` (NVIDIA's names and attributes),
 *                   pool = node name, published by server-side apply; healthy devices only
 *   registration    a pluginregistration.Registration server on
 *                   <plugins_registry>/<driver>-reg.sock for the kubelet's plugin watcher
 *   DRAPlugin       v1 and v1beta1 NodePrepareResources / NodeUnprepareResources on
 *                   <plugins>/<driver>/dra.sock: the claim is read from the API server, its
 *                   devices become a CDI spec file (kind gpusched.io/claim) and an entry in
 *                   a checkpoint file, so retries and restarts get the same answer
 *
 * The pure parts (device table, slice JSON, claim reader, CDI spec, checkpoint) are public
 * for the tests. The library never prints and never exits.
 */
#ifndef GPUSCHED_DRADRIVER_H
#define GPUSCHED_DRADRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/error.h"
#include "gpusched/inject.h"
#include "gpusched/live.h"
#include "gpusched/nvml.h"
#include "gpusched/util.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GS_DRV_DRIVER "gpu.nvidia.com"
#define GS_DRV_REGISTRY_DIR "/var/lib/kubelet/plugins_registry"
#define GS_DRV_PLUGINS_DIR "/var/lib/kubelet/plugins"
#define GS_DRV_CDI_DIR "/var/run/cdi"
#define GS_DRV_CDI_KIND "gpusched.io/claim"  /* CDI vendor/class of the claim specs */
#define GS_DRV_FIELD_MANAGER "gpusched-agent-dra"
#define GS_DRV_MAX_CALL_CLAIMS 256    /* claims in one NodePrepare/Unprepare call */
#define GS_DRV_MAX_PREPARED 4096      /* prepared claims kept (checkpoint) */
#define GS_DRV_MAX_RESULTS 32         /* allocation results of one claim (the API's bound) */
#define GS_DRV_MAX_CLAIM_JSON ((size_t)1 << 20) /* a ResourceClaim as read */
#define GS_DRV_MAX_CHECKPOINT ((size_t)64 << 20)

/* ---------------------------------------------------------------- devices */
typedef struct gs_drv_device {
    char name[64];                /* "gpu-0", "gpu-0-mig-1g10gb-9-0" (DNS label) */
    char uuid[GS_NVML_STR_MAX];
    bool mig;
    size_t gpu;                   /* index into inv->gpus (the parent for MIG) */
    size_t mig_index;             /* index into inv->gpus[gpu].mig when mig */
    char pcie_root[32];           /* "pci0000:00" from sysfs; "" unknown */
} gs_drv_device;

typedef struct gs_drv_devices {
    size_t n;
    gs_drv_device *v;
} gs_drv_devices;

/* The devices the driver offers: every GPU that is not lost and not in MIG mode, as
 * gpu-<minor>; every MIG device of a GPU in MIG mode as
 * gpu-<parent minor>-mig-<profile, dots and '+' left out>-<GI id>-<CI id>. A GPU without a
 * minor number is left out (no device node to give). sysfs_root: where the PCIe root is
 * read (<root>/bus/pci/devices/<bus id>, a symlink); NULL: /sys. */
int gs_drv_devices_build(const gs_nvml_inventory *inv, const char *sysfs_root, gs_drv_devices *out,
                         gs_error *err);
void gs_drv_devices_free(gs_drv_devices *d);
/* By name or by UUID; -1 when absent. */
ptrdiff_t gs_drv_device_find(const gs_drv_devices *d, const char *name);
ptrdiff_t gs_drv_device_by_uuid(const gs_drv_devices *d, const char *uuid);

/* "550.107.02" -> "550.107.2", "12.4" -> "12.4.0": a version attribute value (semver:
 * no leading zeros, three parts). false when s is not 1 to 3 dot-separated numbers. */
bool gs_drv_semver(const char *s, char *out, size_t cap);

/* ---------------------------------------------------------------- ResourceSlice */
/* The slice's name: "<node>-<driver>" (both DNS subdomains). 0, or -1 when too long. */
int gs_drv_slice_name(const char *node, const char *driver, char *out, size_t cap);
/* The ResourceSlice (apiVersion resource.k8s.io/v1) into out (reset first): spec.driver,
 * nodeName, pool {name: node, generation, resourceSliceCount: 1}, devices: those of devs
 * whose usable[i] is true (usable NULL: all). */
int gs_drv_slice_json(const gs_nvml_inventory *inv, const gs_drv_devices *devs, const bool *usable,
                      const char *driver, const char *node, int64_t generation, gs_strbuf *out,
                      gs_error *err);

/* ---------------------------------------------------------------- ResourceClaim */
typedef struct gs_drv_result {
    char request[128];            /* results[].request ("gpu", "gpu/sub") */
    char pool[254];
    char device[64];
} gs_drv_result;

typedef struct gs_drv_claim {
    char uid[64], namespace_[64], name[254];
    bool allocated;               /* status.allocation present */
    size_t n_results;             /* the results of our driver */
    gs_drv_result results[GS_DRV_MAX_RESULTS];
    size_t n_other;               /* results of other drivers (not ours to prepare) */
} gs_drv_claim;

/* A ResourceClaim (resource.k8s.io/v1 or v1beta1/v1beta2: status.allocation.devices.results
 * has the same shape) as the API server sends it: metadata.uid, namespace and name, and
 * the allocation results whose driver is `driver`. GS_ERR_PARSE for text that is not JSON
 * or a claim; GS_ERR_LIMIT beyond GS_DRV_MAX_RESULTS results or over-long strings. */
int gs_drv_claim_parse(const char *json, size_t len, const char *driver, gs_drv_claim *out,
                       gs_error *err);

/* ---------------------------------------------------------------- CDI */
/* "gpusched.io/claim=<uid>-<device>" */
void gs_drv_cdi_id(const char *uid, const char *device, char *out, size_t cap);
/* The CDI spec file name of a claim: "<dir>/gpusched.io-claim_<uid>.json". */
void gs_drv_cdi_path(const char *dir, const char *uid, char *out, size_t cap);
/* The claim's CDI spec (cdiVersion 0.6.0, kind GS_DRV_CDI_KIND), into out (reset first):
 * one CDI device per result, named <uid>-<device>, with its device nodes (/dev/nvidia<minor>,
 * for MIG the GPU- and compute-instance access nodes of host's nvidia-caps table); the
 * spec-wide edits add /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools and
 * NVIDIA_VISIBLE_DEVICES=<the claim's UUIDs>. GS_ERR_NOTFOUND for a device not in devs. */
int gs_drv_cdi_json(const gs_drv_claim *c, const gs_nvml_inventory *inv, const gs_drv_devices *devs,
                    const gs_inject_host *host, gs_strbuf *out, gs_error *err);

/* ---------------------------------------------------------------- checkpoint */
/* {"version":1,"driver":D,"node":N,"claims":[{uid,namespace,name,results:[{request,pool,
 * device}]}]} into out (reset first). */
void gs_drv_checkpoint_json(const gs_drv_claim *const *claims, size_t n, const char *driver,
                            const char *node, gs_strbuf *out);
/* Read a checkpoint: *out a heap array of *n claims (free()). Refused (GS_ERR_PARSE):
 * other versions, another driver, malformed entries; GS_ERR_LIMIT over GS_DRV_MAX_PREPARED
 * claims or GS_DRV_MAX_RESULTS results. */
int gs_drv_checkpoint_parse(const char *json, size_t len, const char *driver, gs_drv_claim **out,
                            size_t *n, gs_error *err);

/* ---------------------------------------------------------------- the running driver */
typedef struct gs_drv gs_drv;

/* Read ResourceClaim ns/name from the API server into body (the JSON object). 0, or -1
 * with err (the message goes into the claim's error). Called from the DRAPlugin thread. */
typedef int (*gs_drv_get_claim_fn)(void *ctx, const char *ns, const char *name, gs_strbuf *body,
                                   gs_error *err);
typedef void (*gs_drv_log_fn)(void *user, int warn, const char *line);

typedef struct gs_drv_opts {
    const char *driver;           /* NULL: GS_DRV_DRIVER */
    const char *node;             /* required: the pool and nodeName */
    const char *registry_dir;     /* NULL: GS_DRV_REGISTRY_DIR */
    const char *plugin_dir;       /* NULL: GS_DRV_PLUGINS_DIR/<driver> (dra.sock, checkpoint) */
    const char *cdi_dir;          /* NULL: GS_DRV_CDI_DIR */
    const char *host_root;        /* /proc and /sys under it (tests); NULL: "/" */
    const gs_nvml_inventory *inv; /* borrowed: must outlive the driver */
    gs_drv_get_claim_fn get_claim;
    void *claim_ctx;
    gs_drv_log_fn log;
    void *user;
} gs_drv_opts;

/* Build the device table, read the checkpoint (a missing file is an empty one; an
 * unreadable one is an error: nothing is forgotten silently), serve dra.sock, then the
 * registration socket. */
int gs_drv_start(const gs_drv_opts *o, gs_drv **out, gs_error *err);
/* Stop both servers (sockets removed). The checkpoint and CDI specs stay. */
void gs_drv_stop(gs_drv *d);
/* The health of a device changed (GPU or MIG UUID; a GPU's UUID also covers its MIG
 * devices): an unhealthy device leaves the slice (the generation moves). */
void gs_drv_set_health(gs_drv *d, const char *uuid, bool healthy);
/* Publish the slice when it changed since the last successful publication (or force):
 * server-side apply with field manager GS_DRV_FIELD_MANAGER. The first publication reads the
 * existing slice to continue its generation. 1 written, 0 nothing to do, -1 with err. */
int gs_drv_publish(gs_drv *d, gs_live_client *c, bool force, gs_error *err);
/* Delete the slice (clean shutdown); absent is success. */
int gs_drv_unpublish(gs_drv *d, gs_live_client *c, gs_error *err);
/* The slice's current generation (0 before the first publication). */
int64_t gs_drv_generation(gs_drv *d);
/* Registered: the kubelet's last NotifyRegistrationStatus said so. */
bool gs_drv_registered(gs_drv *d, gs_strbuf *why);
const gs_drv_devices *gs_drv_device_table(const gs_drv *d);
/* gpusched_agent_dra_* series. */
void gs_drv_metrics(gs_drv *d, gs_strbuf *out);

#ifdef __cplusplus
}
#endif
#endif
