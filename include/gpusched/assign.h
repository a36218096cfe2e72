/*
 * assign.h - the device assignment record: the pod annotation gpusched.io/assignment that
 * the extender writes before the Binding and the node side reads when the container is
 * created (docs/extender.md "The assignment record", decision in docs/design.md
 * "Extender: how the node learns a pod's devices").
 *
 * One record per pod: version, node, pod UID, time, request kind, and per container that
 * holds a device (init containers and sidecars included, in declaration order) the
 * devices it gets: GPU index (+ UUID when known), MIG instance (profile, placement start,
 * resource name) or share (milli, MiB, time-slicing replicas).
 *
 * What the pod holds on a device (its accounting) follows from the containers as the
 * kubelet's effective requests do: per device and per amount, the larger of (app
 * containers + sidecars) and, for each ordinary init container, its own amount plus the
 * sidecars declared before it. gs_assign_from_pod deals a placement to the containers so
 * that this equals the placement exactly; gs_assign_check returns it as a gs_gpu_assign
 * ready for gs_gpu_bind.
 *
 * Memory: gs_assign_record is a plain value (about 90 KiB: allocate it, do not put it on
 * a small stack); it holds no pointers. The library never prints; errors name the field
 * ("containers[1].devices[0].mem") and, for decoding, line:col in the annotation value.
 */
#ifndef GPUSCHED_ASSIGN_H
#define GPUSCHED_ASSIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/error.h"
#include "gpusched/gpu.h"
#include "gpusched/kube.h"
#include "gpusched/util.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GS_ASSIGN_ANNOTATION "gpusched.io/assignment"
#define GS_ASSIGN_MAJOR 1              /* readers refuse any other major version */
#define GS_ASSIGN_MINOR 0              /* readers accept any minor of their major */
#define GS_ASSIGN_MAX_BYTES 65536      /* a longer annotation value is refused */
#define GS_ASSIGN_MAX_CONTAINERS 32    /* containers holding a device */
#define GS_ASSIGN_MAX_DEVICES GS_GPU_ASSIGN_MAX /* per container, and distinct per pod */
#define GS_ASSIGN_MAX_GPU 63           /* GPU indexes 0..63 (the inventory's bound) */
#define GS_ASSIGN_MAX_REPLICAS 1024    /* time-slicing replicas per device */

typedef enum gs_assign_role {
    GS_ASSIGN_APP = 0, /* spec.containers[] */
    GS_ASSIGN_INIT,    /* spec.initContainers[] (runs to completion) */
    GS_ASSIGN_SIDECAR, /* spec.initContainers[] with restartPolicy: Always */
} gs_assign_role;

/* One device one container gets. */
typedef struct gs_assign_dev {
    uint8_t gpu;           /* GPU index on the node (gs_node_gpus.devs) */
    char uuid[64];         /* "GPU-<uuid>" / "MIG-<uuid>" / "MIG-GPU-<uuid>/<gi>/<ci>"; "" = unknown */
    bool mig;              /* a MIG instance of that GPU */
    char mig_profile[32];  /* catalog profile name, "1g.10gb" */
    uint8_t mig_start;     /* placement start (memory slice), as gs_mig_inst.start */
    char mig_resource[64]; /* resource it is advertised under, "nvidia.com/mig-1g.10gb" */
    uint16_t milli;        /* compute share 0..1000 (1000 = the whole device) */
    uint32_t mem_mib;      /* device memory, MiB */
    uint16_t replicas;     /* time-slicing / MPS replicas (or vGPU slots of a whole GPU) */
} gs_assign_dev;

typedef struct gs_assign_ctr {
    char name[64];         /* container name (DNS label) */
    gs_assign_role role;
    uint8_t ndev;
    gs_assign_dev dev[GS_ASSIGN_MAX_DEVICES];
} gs_assign_ctr;

typedef struct gs_assign_record {
    uint16_t major, minor; /* version read ("1.0"); encode writes GS_ASSIGN_MAJOR.MINOR */
    char node[254];        /* node name (DNS subdomain) */
    char uid[40];          /* pod metadata.uid (UUID, 36 characters) */
    int64_t time;          /* Unix seconds the extender chose the devices */
    gs_gpu_kind kind;      /* GS_GPU_WHOLE / SHARE / MIG */
    gs_gpu_conv conv;      /* the convention the pod used; GS_CONV_NONE if unknown */
    uint16_t nctr;
    gs_assign_ctr ctr[GS_ASSIGN_MAX_CONTAINERS]; /* init containers first, declaration order */
} gs_assign_record;

/*
 * Deal a placement (gs_gpu_fit_node on g for request r of pod) to the pod's containers
 * and fill *out. Each container takes as many units as it asks for (devices, MIG
 * instances or time-slicing replicas) of the request's resource; sidecars take the
 * first units in order, app containers the next ones, an init container reuses units
 * from just after the sidecars declared before it (the kubelet's reuse). Conventions
 * written as pod annotations (gpusched.io/, KAI, open-gpu-share annotations) give every
 * unit to one container: the one KAI's gpu-fraction-container-name names, else the first
 * app container. UUIDs come from the inventory where it has them (HAMi register).
 * Returns 0; -1 with GS_ERR_INVALID when the containers' asks do not add up to the
 * placement exactly (the record would account something else than the engine), or when
 * pod uid / node name are not valid.
 */
int gs_assign_from_pod(const gs_pod *pod, const gs_node_gpus *g, const gs_gpu_request *r,
                       const gs_gpu_assign *a, const char *node, int64_t now,
                       gs_assign_record *out, gs_error *err);

/* Validate *rec (the rules of gs_assign_decode) and append its compact JSON to sb.
 * Returns 0, or -1 with err naming the bad field. */
int gs_assign_encode(const gs_assign_record *rec, gs_strbuf *sb, gs_error *err);

/*
 * Decode and validate one annotation value. Strict: JSON syntax (GS_ERR_PARSE with
 * line:col), version (another major: GS_ERR_INVALID), required fields, types, ranges,
 * counts, UUID and name syntax, unique containers and devices; unknown fields are
 * ignored. expect_uid (may be NULL) is the UID of the pod the value was read from: a
 * record naming another pod is refused. Errors carry file "gpusched.io/assignment" and
 * the field path; the caller may gs_error_prefix_path("Pod ns/name: ").
 */
int gs_assign_decode(const char *json, size_t len, const char *expect_uid,
                     gs_assign_record *out, gs_error *err);

/* gs_assign_check flags */
#define GS_ASSIGN_CHECK_FREE 0x1u /* also require the devices free now (g's usage) */

/*
 * Check a decoded record against a node's inventory: the node name (NULL: not checked),
 * each GPU index exists, a UUID matches the inventory's where both are known, a MIG
 * device names an existing instance of that profile at that start on that GPU (and a
 * non-MIG device is not on a MIG-enabled GPU), and what the pod holds per device stays
 * within the device's capacity (milli <= 1000, memory <= the device's, replicas <=
 * its slots; with GS_ASSIGN_CHECK_FREE within what is free now, MIG instances unused).
 * On success writes the pod's accounting to *out (may be NULL) for gs_gpu_bind.
 * Returns 0, or -1 with GS_ERR_INVALID (GS_ERR_NOTFOUND for a device or instance the
 * node does not have) naming the field.
 */
int gs_assign_check(const gs_assign_record *rec, const gs_node_gpus *g, const char *node,
                    unsigned flags, gs_gpu_assign *out, gs_error *err);

/*
 * What a bound pod holds by its record: gs_assign_decode of the annotation's value with
 * the pod's UID (NULL: not checked), then gs_assign_check against its node's inventory,
 * capacity only. The rule the offline engine and the extender's device state share
 * (records first, reconstruction for the rest). rec is scratch space. 0 with *out the
 * accounting, or -1 with err (the record is refused).
 */
int gs_assign_holds(const char *text, const char *uid, const gs_node_gpus *g, const char *node,
                    gs_assign_record *rec, gs_gpu_assign *out, gs_error *err);

/* "whole", "share", "mig" (NULL for GS_GPU_NONE) and the convention names written in
 * the record ("nvidia", "gpusched", "hami", "kai", "gpushare", "openb", "volcano",
 * "volcano-vgpu"; NULL for GS_CONV_NONE). */
const char *gs_assign_kind_name(gs_gpu_kind k);
const char *gs_assign_conv_name(gs_gpu_conv c);

#ifdef __cplusplus
}
#endif
#endif
