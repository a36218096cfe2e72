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
 * Also: gs_nvml_sample_read() (utilization, memory, temperature, power, energy, ECC,
 * remapped rows, clocks, PCIe replays), an NVML event set for XID and ECC events
 * (gs_nvml_events_*), and gs_nvml_probe() to ask whether a device answers again.
 *
 * The library never prints and never exits. See docs/agent.md.
 */
#ifndef GPUSCHED_NVML_H
#define GPUSCHED_NVML_H

#include <stdbool.h>
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
    size_t n_nvlink;                     /* active NVLinks whose remote PCI info was read */
    char nvlink_peer[GS_NVML_MAX_NVLINK][32]; /* their peers' PCI bus ids (one per link, in
                                          * the 8-digit-domain spelling of pci_bus_id); a
                                          * peer that is not a GPU of the inventory (an
                                          * NVSwitch) is recorded too: callers match */
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

/* Does the MIG device's compute instance span its whole GPU instance ("3g.40gb", not
 * "1c.3g.40gb")? Only those are advertised (device plugin) and labelled (GFD), as NVIDIA's
 * plugin does: the one rule both read. */
bool gs_nvml_mig_whole_gi(const gs_nvml_mig_device *m);

/* Read the sysfs NUMA fallback (<root>/bus/pci/devices/<bus id>/numa_node) under root
 * instead of /sys (tests). NULL restores /sys. The string is copied. */
void gs_nvml_set_sysfs_root(gs_nvml *nvml, const char *root_or_null);

/* The profile name of a MIG device from its attributes and its parent's total memory in
 * bytes, as NVIDIA's go-nvlib names it: "<G>g.<GB>gb" (C == G) or "<C>c.<G>g.<GB>gb", "+me"
 * when the instance holds an OFA engine without being the whole GPU. GB: memory_mb as a
 * fraction of the parent, rounded up to eighths, times the parent's GiB rounded up, rounded
 * to the nearest integer. Writes "" and returns -1 when gi_slices, ci_slices or a size is 0.
 */
int gs_nvml_mig_profile_name(unsigned gi_slices, unsigned ci_slices, unsigned long long memory_mb,
                             unsigned ofas, unsigned long long parent_total_bytes, char *out,
                             size_t cap);

/* Read every GPU's and MIG device's sensors (see gs_nvml_sample). out must be zeroed before
 * its first use; its arrays are reused when they already have the inventory's shape, so a
 * sampling loop allocates nothing after the first call. A GPU that does not answer (lost,
 * fallen off the bus) gets a sample of -1s, its MIG devices too, and the call still
 * succeeds; it fails only on allocation failure. Free with gs_nvml_samples_free. */
int gs_nvml_sample_read(gs_nvml *nvml, const gs_nvml_inventory *inv, gs_nvml_samples *out,
                        gs_error *err);
void gs_nvml_samples_free(gs_nvml_samples *s);

/* NVML event type bits (nvmlEventType*) */
#define GS_NVML_EVENT_SBE 0x1ull   /* SingleBitEccError */
#define GS_NVML_EVENT_DBE 0x2ull   /* DoubleBitEccError */
#define GS_NVML_EVENT_XID 0x8ull   /* XidCriticalError */
#define GS_NVML_EVENTS_HEALTH (GS_NVML_EVENT_XID | GS_NVML_EVENT_DBE | GS_NVML_EVENT_SBE)

typedef struct gs_nvml_events gs_nvml_events; /* an event set over an inventory's GPUs */

/* One event (nvmlEventData_t, attributed to the inventory). */
typedef struct gs_nvml_event {
    int gpu;                       /* index into inv->gpus; -1 when the device is unknown */
    unsigned long long type;       /* GS_NVML_EVENT_* bits */
    unsigned long long xid;        /* eventData: the XID for XID events (999 unknown) */
    unsigned gpu_instance_id;      /* ~0u when not attributable to a MIG instance */
    unsigned compute_instance_id;  /* ~0u when not attributable */
    int mig;                       /* index into inv->gpus[gpu].mig of the MIG device with
                                    * those GI/CI ids; -1 when not attributable or unknown */
} gs_nvml_event;

/* Registration outcome of one GPU (gs_nvml_events_registration). */
typedef enum gs_nvml_reg {
    GS_NVML_REG_SUPPORTED = 0,     /* events registered (mask says which) */
    GS_NVML_REG_NOT_SUPPORTED = 1, /* the driver/GPU has no events: stays healthy */
    GS_NVML_REG_FAILED = 2,        /* registration failed: reason says how */
} gs_nvml_reg;

/* Create an event set and register XID, DBE and SBE events (masked by the GPU's supported
 * types) on every GPU of inv (parent GPUs: MIG events come through them). Per-GPU failures
 * are recorded, not fatal. Fails (GS_ERR_IO/GS_ERR_NOTFOUND) when the set cannot be created
 * or the driver has no event functions. The inventory is copied (GI/CI ids, indices). */
int gs_nvml_events_open(gs_nvml *nvml, const gs_nvml_inventory *inv, gs_nvml_events **out,
                        gs_error *err);

/* How registration went for inv->gpus[gpu]: the outcome, the mask registered (may be NULL)
 * and a reason ("" when supported; NULL accepted). GS_NVML_REG_FAILED for an index out of
 * range. */
gs_nvml_reg gs_nvml_events_registration(const gs_nvml_events *ev, size_t gpu,
                                        unsigned long long *mask, const char **reason);

/* Wait up to timeout_ms for one event: 1 with *out filled, 0 on timeout, -1 with err (NVML's
 * error string and number) on any other outcome (the caller treats that as "health checks
 * failing" for every device). */
int gs_nvml_events_wait(gs_nvml_events *ev, unsigned timeout_ms, gs_nvml_event *out,
                        gs_error *err);

/* nvmlEventSetFree; NULL accepted. */
void gs_nvml_events_close(gs_nvml_events *ev);

/* Does the device with this UUID (GPU or MIG) answer again? Handle by UUID and one cheap
 * read (memory info). 0 when it does; -1 with err naming the call and NVML's reason. */
int gs_nvml_probe(gs_nvml *nvml, const char *uuid, gs_error *err);

#ifdef __cplusplus
}
#endif
#endif
