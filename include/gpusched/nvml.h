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
#include <stdint.h>

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
    unsigned copy_engines, decoders, encoders, jpegs, ofas; /* shared engines (attributes) */
    char profile[32];                /* "1g.10gb", "1c.2g.20gb", "1g.10gb+me"; "" unknown */
} gs_nvml_mig_device;

#define GS_NVML_MAX_NVLINK 18 /* NVML_NVLINK_MAX_LINKS */

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
    int numa_node;                       /* NUMA node of the GPU; -1 when unknown */
    int arch;                            /* nvmlDeviceArchitecture_t; -1 when unknown */
    size_t n_nvlink;                     /* active NVLinks with a GPU at the other end */
    char nvlink_peer[GS_NVML_MAX_NVLINK][32]; /* their peers' PCI bus ids (one per link) */
    size_t n_mig;
    gs_nvml_mig_device *mig;             /* n_mig entries when mig_current == 1 */
} gs_nvml_gpu;

/* One sample of a GPU's or a MIG device's sensors (gs_nvml_sample_read). A value NVML does
 * not give for this device (not supported, MIG device, lost) is -1. */
typedef struct gs_nvml_sample {
    int gpu_util;                  /* %, last sample period; -1 on MIG devices/MIG-enabled GPUs */
    int mem_copy_util;             /* % */
    long long fb_used_mib, fb_free_mib, fb_reserved_mib;
    int temp_c;                    /* GPU core */
    long long power_mw;            /* board power, milliwatts */
    long long energy_mj;           /* total since driver load, millijoules */
    long long ecc_sbe_volatile, ecc_dbe_volatile; /* ECC errors since driver load */
    long long remapped_correctable, remapped_uncorrectable;
    int remap_pending, remap_failure; /* 0/1 */
    int sm_clock_mhz, mem_clock_mhz;
    long long pcie_replay;         /* PCIe replay counter */
} gs_nvml_sample;

/* Samples for an inventory: gpu[i] for inv->gpus[i]; mig[i][j] for its MIG devices. */
typedef struct gs_nvml_samples {
    size_t n_gpus;
    gs_nvml_sample *gpu;
    gs_nvml_sample **mig;
    int64_t taken_ms;              /* CLOCK_MONOTONIC milliseconds when read */
} gs_nvml_samples;

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
