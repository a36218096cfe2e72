/*
 * nvml.h - the node agent's discovery layer: NVIDIA's NVML loaded at run time.
 *
 * libnvidia-ml.so.1 is dlopen()ed (no link-time dependency), each function is resolved by
 * its versioned symbol name with a fallback to the older name (a symbol absent in both is
 * "unsupported on this driver"), and NVML is initialised with nvmlInitWithFlags(NO_GPUS)
 * when the driver has it, else nvmlInit_v2, else nvmlInit. NVIDIA's nvml.h is not used:
 * the few types are declared in lib/agent/nvml.c from the published layouts.
 *
 * gs_nvml_discover() reads the driver and CUDA driver versions and every GPU: identity,
 * memory, PCI bus id, minor number, compute capability, MIG mode and, when MIG is on, the
 * MIG devices. A failure on one device (GPU_IS_LOST, ...) marks that device lost with the
 * NVML error string; the others are still discovered.
 *
 * The library never prints and never exits. See docs/agent.md (issue 14, being built).
 */
#ifndef GPUSCHED_NVML_H
#define GPUSCHED_NVML_H

#include <stddef.h>

#include "gpusched/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GS_NVML_LIBRARY "libnvidia-ml.so.1"
#define GS_NVML_STR_MAX 96 /* NVML's V2 name/UUID buffer size: MIG UUIDs fit */
#define GS_NVML_REASON_MAX 192

typedef struct gs_nvml gs_nvml; /* an open, initialised NVML */

typedef struct gs_nvml_mig_device {
    unsigned index;                  /* the MIG device index on its parent */
    char uuid[GS_NVML_STR_MAX];      /* "MIG-..." */
    unsigned gpu_instance_id;        /* GI id, or ~0u when unknown */
    unsigned compute_instance_id;    /* CI id, or ~0u when unknown */
    unsigned long long memory_mib;   /* 0 when unknown */
    int have_attributes;             /* 1 when the fields below were read */
    unsigned gi_slices;              /* GPU-instance (memory) slices of the profile */
    unsigned ci_slices;              /* compute-instance slices */
    unsigned multiprocessors;
} gs_nvml_mig_device;

typedef struct gs_nvml_gpu {
    unsigned index;                      /* NVML index */
    int lost;                            /* 1: a call failed; lost_reason says which and why */
    char lost_reason[GS_NVML_REASON_MAX];
    char uuid[GS_NVML_STR_MAX];          /* "GPU-..." ("" when lost before it was read) */
    char name[GS_NVML_STR_MAX];          /* model, e.g. "NVIDIA H100 80GB HBM3" */
    char pci_bus_id[32];                 /* "00000000:07:00.0"; "" when unknown */
    int minor;                           /* /dev/nvidia<minor>; -1 when unknown */
    int cc_major, cc_minor;              /* compute capability; -1 when unknown */
    unsigned long long memory_mib;       /* total framebuffer; 0 when unknown */
    int mig_capable;                     /* 0 when nvmlDeviceGetMigMode is not supported */
    unsigned mig_current, mig_pending;   /* 0 disabled, 1 enabled */
    size_t n_mig;
    gs_nvml_mig_device *mig;             /* n_mig entries when mig_current == 1 */
} gs_nvml_gpu;

typedef struct gs_nvml_inventory {
    char driver_version[80];   /* e.g. "550.107.02"; "" when unknown */
    int cuda_driver_version;   /* e.g. 12040; 0 when unknown */
    int cuda_major, cuda_minor; /* 12, 4 */
    size_t n_gpus;
    gs_nvml_gpu *gpus;
} gs_nvml_inventory;

/* Open NVML: dlopen(path or GS_NVML_LIBRARY), resolve the symbols, initialise. On a node
 * without the driver: GS_ERR_NOTFOUND naming the library and dlerror()'s text. An
 * initialisation failure: GS_ERR_IO with NVML's error string. */
int gs_nvml_open(const char *path_or_null, gs_nvml **out, gs_error *err);

/* nvmlShutdown and dlclose. NULL is accepted. */
void gs_nvml_close(gs_nvml *nvml);

/* The symbol name resolved for an NVML function given by its plain name (e.g.
 * "nvmlDeviceGetCount" -> "nvmlDeviceGetCount_v2" or "nvmlDeviceGetCount"; "nvmlInit" ->
 * the init function used), or NULL when the driver has none of its names or the name is
 * not one this layer uses. */
const char *gs_nvml_resolved(const gs_nvml *nvml, const char *plain_name);

/* Fill *out (cleared first; free with gs_nvml_inventory_free). Fails only when the
 * system-wide calls fail (device count); per-device failures mark the device lost. */
int gs_nvml_discover(gs_nvml *nvml, gs_nvml_inventory *out, gs_error *err);

void gs_nvml_inventory_free(gs_nvml_inventory *inv);

#ifdef __cplusplus
}
#endif
#endif
