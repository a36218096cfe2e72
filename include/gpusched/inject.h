/*
 * inject.h - device injection by pod identity: the pure rule the node agent's NRI plugin
 * (nri.h) applies when the container runtime creates a container (docs/agent.md,
 * "Injection by pod identity (NRI)"; the decision: docs/design.md, "Extender: how the
 * node learns a pod's devices").
 *
 * Input: the pod sandbox's UID and its gpusched.io/assignment annotation (the extender's
 * record, assign.h), the container's name, the container annotation our device plugin's
 * Allocate sets for the share resources it serves (GS_INJECT_SHARE_ANNOTATION), the node's
 * name, NVML's inventory and the host's device numbers. Output: the adjustment of the
 * container (environment, device nodes, mounts), or a refusal whose message the runtime
 * reports as the container's creation error.
 *
 *   record and container listed   NVIDIA_VISIBLE_DEVICES=<its UUIDs>, device nodes
 *   record, container not listed  NVIDIA_VISIBLE_DEVICES=void, no device node (no GPU)
 *   no record, share resource     refused: the devices the extender chose are unknown
 *   no record, no share resource  nothing (the container is not ours)
 *   record refused                refused with the decoder's message (another pod's UID,
 *                                 another node, a device the node does not have)
 *
 * No I/O, no clock, no allocation: the caller reads /proc/devices and the nvidia-caps
 * table (gs_inject_host_parse_*) once and passes the texts' results in.
 */
#ifndef GPUSCHED_INJECT_H
#define GPUSCHED_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/assign.h"
#include "gpusched/error.h"
#include "gpusched/nvml.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Set by the device plugin's Allocate for a share resource (value: the resource name); the
 * kubelet passes Allocate's annotations to the runtime as container annotations. */
#define GS_INJECT_SHARE_ANNOTATION "gpusched.io/share-resource"
#define GS_INJECT_NVIDIA_MAJOR 195 /* /dev/nvidia<minor>, /dev/nvidiactl (minor 255) */
#define GS_INJECT_CTL_MINOR 255
#define GS_INJECT_MAX_CAPS 512
#define GS_INJECT_MAX_ENV 6
#define GS_INJECT_MAX_NODES (3 + 2 * GS_ASSIGN_MAX_DEVICES + GS_ASSIGN_MAX_DEVICES)
#define GS_INJECT_MAX_MOUNTS 2

/* One line of /proc/driver/nvidia-caps/mig-minors: gpu<gpu>/gi<gi>/access (ci = -1) or
 * gpu<gpu>/gi<gi>/ci<ci>/access, and its nvidia-caps minor. */
typedef struct gs_inject_cap {
    int gpu_minor, gi, ci, minor;
} gs_inject_cap;

/* What the host's device numbering is (read once at start). */
typedef struct gs_inject_host {
    int64_t uvm_major;  /* "nvidia-uvm" in /proc/devices; -1 unknown: uvm nodes left out */
    int64_t caps_major; /* "nvidia-caps"; -1 unknown: MIG capability nodes left out */
    size_t n_caps;
    gs_inject_cap caps[GS_INJECT_MAX_CAPS];
    /* MPS: the host directory of the MPS control daemon's pipe (mounted at the same path,
     * CUDA_MPS_PIPE_DIRECTORY); NULL or "": shares are time-sliced (the device, no
     * isolation). */
    const char *mps_pipe_dir;
} gs_inject_host;

/* uvm_major = caps_major = -1, no caps, no MPS. */
void gs_inject_host_init(gs_inject_host *h);
/* /proc/devices text: the character majors of nvidia-uvm and nvidia-caps (absent: -1). */
void gs_inject_host_parse_devices(gs_inject_host *h, const char *text, size_t len);
/* /proc/driver/nvidia-caps/mig-minors text; lines other than gpuN/giN[/ciN]/access M
 * (config, monitor) are skipped. GS_ERR_PARSE with line:col on a malformed access line,
 * GS_ERR_LIMIT over GS_INJECT_MAX_CAPS. */
int gs_inject_host_parse_mig_minors(gs_inject_host *h, const char *file, const char *text, size_t len,
                                    gs_error *err);

typedef struct gs_inject_request {
    const char *pod_uid;       /* PodSandbox.uid */
    const char *pod_namespace; /* for messages; may be NULL */
    const char *pod_name;      /* for messages; may be NULL */
    const char *assignment;    /* the sandbox's gpusched.io/assignment value; NULL: none */
    size_t assignment_len;
    const char *container;     /* container name */
    const char *share_resource; /* container annotation GS_INJECT_SHARE_ANNOTATION; NULL none */
} gs_inject_request;

typedef enum gs_inject_action {
    GS_INJECT_NONE = 0, /* not ours: leave the container as it is */
    GS_INJECT_VOID,     /* the pod has a record, this container gets no GPU */
    GS_INJECT_DEVICES,  /* the container's devices */
} gs_inject_action;

typedef struct gs_inject_env { char key[48]; char value[GS_ASSIGN_MAX_DEVICES * 80 + 16]; } gs_inject_env;
typedef struct gs_inject_node {
    char path[64];     /* path in the container (= on the host) */
    int64_t major, minor;
} gs_inject_node;      /* character device, mode 0666 */
typedef struct gs_inject_mount { char source[256]; char destination[256]; } gs_inject_mount;

typedef struct gs_inject_result {
    gs_inject_action action;
    size_t n_env;
    gs_inject_env env[GS_INJECT_MAX_ENV];
    size_t n_nodes;
    gs_inject_node nodes[GS_INJECT_MAX_NODES];
    size_t n_mounts;
    gs_inject_mount mounts[GS_INJECT_MAX_MOUNTS];
    /* One line for the log: what was decided ("ns/pod main: GPU-...,GPU-... (2 nodes left
     * out: ...)"). */
    char summary[640];
} gs_inject_result;

/*
 * The rule. rec is scratch space (about 90 KiB; the caller keeps one). node may be NULL
 * (not checked). Returns 0 with *out, or -1 with err: GS_ERR_INVALID for a record that is
 * refused (decoder's message: another pod's UID, bad syntax, another node, a device whose
 * UUID differs from NVML's or whose GPU is lost) or a share container without a record;
 * GS_ERR_NOTFOUND for a device or MIG instance the node does not have. The message names
 * the pod and container.
 */
int gs_inject_decide(const gs_inject_request *req, const char *node, const gs_nvml_inventory *inv,
                     const gs_inject_host *host, gs_assign_record *rec, gs_inject_result *out,
                     gs_error *err);

/*
 * What the live pods of the node hold by their records (design.md: a record that would
 * over-commit a device is refused, so a stale or edited record fails loudly instead of
 * sharing a GPU twice). The devices are NVML's GPUs (memory from NVML, 1000 milli each);
 * a pod is admitted at its first container creation with gs_assign_check(...,
 * GS_ASSIGN_CHECK_FREE) against the pods admitted before it, and released when its sandbox
 * stops. Compute (milli) and memory are checked; time-slicing replicas are the kubelet's
 * (it counts the advertised replicas itself); records with MIG devices are booked without
 * a check (MIG instances are whole devices the kubelet counts).
 */
typedef struct gs_inject_book gs_inject_book;

/* NULL when out of memory. inv is read once. */
gs_inject_book *gs_inject_book_new(const gs_nvml_inventory *inv);
void gs_inject_book_free(gs_inject_book *b);
/* Forget every pod (before a Synchronize rebuilds the book). */
void gs_inject_book_clear(gs_inject_book *b);
/* Admit the pod of a decoded record. 0 admitted now, 1 admitted before (its other
 * containers), -1 with err: the record would over-commit a device (GS_ERR_INVALID naming
 * the device and the amounts), names a device the book does not know (GS_ERR_NOTFOUND), or
 * no memory. */
int gs_inject_book_admit(gs_inject_book *b, const gs_assign_record *rec, const char *node, gs_error *err);
/* Release a pod by UID; true when it was booked. */
bool gs_inject_book_release(gs_inject_book *b, const char *uid);
size_t gs_inject_book_pods(const gs_inject_book *b);
/* Held on GPU index gpu by the booked pods (milli, MiB); false for an unknown index. */
bool gs_inject_book_used(const gs_inject_book *b, unsigned gpu, unsigned *milli, unsigned *mem_mib);

#ifdef __cplusplus
}
#endif
#endif
