/* nvml.c - NVML through dlopen: symbol resolution with fallbacks, init, discovery.
 *
 * The NVML types used here are declared from the published layouts (LP64): nvml.h is
 * neither included nor vendored. Return codes: 0 SUCCESS, 3 NOT_SUPPORTED, 4 NO_PERMISSION,
 * 6 NOT_FOUND, 13 FUNCTION_NOT_FOUND, 15 GPU_IS_LOST, ... */
#include "gpusched/nvml.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int nvml_ret;          /* nvmlReturn_t (a C enum) */
typedef void *nvml_dev;        /* nvmlDevice_t (struct nvmlDevice_st *) */

#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NO_PERMISSION 4
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_TIMEOUT 10
#define NVML_ERROR_FUNCTION_NOT_FOUND 13
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_INIT_FLAG_NO_GPUS 1u

typedef struct { /* nvmlMemory_t, 24 bytes */
    unsigned long long total, free, used;
} nvml_memory;

typedef struct { /* nvmlPciInfo_t (v2/v3), 68 bytes; the legacy one has busId[16] at 0 */
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
} nvml_pci_info;

typedef struct { /* nvmlDeviceAttributes_t, 40 bytes */
    unsigned multiprocessor_count, shared_copy_engine_count, shared_decoder_count,
        shared_encoder_count, shared_jpeg_count, shared_ofa_count, gpu_instance_slice_count,
        compute_instance_slice_count;
    unsigned long long memory_size_mb;
} nvml_attributes;

typedef struct { /* nvmlMemory_v2_t, 40 bytes */
    unsigned version;
    unsigned long long total, reserved, free, used;
} nvml_memory_v2;
#define NVML_MEMORY_V2_VERSION (unsigned)(sizeof(nvml_memory_v2) | (2u << 24))

typedef struct { /* nvmlUtilization_t */
    unsigned gpu, memory;
} nvml_utilization;

typedef struct { /* nvmlEventData_t (the _v2 wait); the old wait fills the first 24 bytes */
    nvml_dev device;
    unsigned long long event_type, event_data;
    unsigned gpu_instance_id, compute_instance_id;
} nvml_event_data;

_Static_assert(sizeof(nvml_memory_v2) == 40, "nvmlMemory_v2_t layout");
_Static_assert(offsetof(nvml_memory_v2, total) == 8, "nvmlMemory_v2_t.total offset");
_Static_assert(sizeof(nvml_utilization) == 8, "nvmlUtilization_t layout");
_Static_assert(sizeof(nvml_event_data) == 32, "nvmlEventData_t layout");
_Static_assert(offsetof(nvml_event_data, gpu_instance_id) == 24, "gpuInstanceId offset");
_Static_assert(sizeof(nvml_memory) == 24, "nvmlMemory_t layout");
_Static_assert(sizeof(nvml_pci_info) == 68, "nvmlPciInfo_t layout");
_Static_assert(offsetof(nvml_pci_info, bus_id) == 36, "nvmlPciInfo_t.busId offset");
_Static_assert(sizeof(nvml_attributes) == 40, "nvmlDeviceAttributes_t layout");
_Static_assert(offsetof(nvml_attributes, memory_size_mb) == 32, "memorySizeMB offset");

/* Every function this layer calls: its names, newest first. */
enum {
    S_INIT_FLAGS, S_INIT, S_SHUTDOWN, S_ERROR_STRING, S_DRIVER_VERSION, S_CUDA_VERSION,
    S_COUNT, S_HANDLE, S_NAME, S_UUID, S_MINOR, S_PCI, S_CC, S_MEMORY, S_MIG_MODE,
    S_MAX_MIG, S_MIG_HANDLE, S_GI_ID, S_CI_ID, S_ATTRIBUTES, S_HANDLE_UUID, S_NUMA, S_ARCH,
    S_NVLINK_STATE, S_NVLINK_PCI, S_UTIL, S_MEMORY_V2, S_TEMP, S_POWER, S_ENERGY, S_ECC,
    S_REMAP, S_CLOCK, S_REPLAY, S_EV_CREATE, S_EV_SUPPORTED, S_EV_REGISTER, S_EV_WAIT,
    S_EV_FREE, S_N_
};

static const struct {
    const char *plain;
    const char *names[3];
} syms[S_N_] = {
    [S_INIT_FLAGS] = {"nvmlInitWithFlags", {"nvmlInitWithFlags"}},
    [S_INIT] = {"nvmlInit", {"nvmlInit_v2", "nvmlInit"}},
    [S_SHUTDOWN] = {"nvmlShutdown", {"nvmlShutdown"}},
    [S_ERROR_STRING] = {"nvmlErrorString", {"nvmlErrorString"}},
    [S_DRIVER_VERSION] = {"nvmlSystemGetDriverVersion", {"nvmlSystemGetDriverVersion"}},
    [S_CUDA_VERSION] = {"nvmlSystemGetCudaDriverVersion",
                        {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"}},
    [S_COUNT] = {"nvmlDeviceGetCount", {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}},
    [S_HANDLE] = {"nvmlDeviceGetHandleByIndex",
                  {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}},
    [S_NAME] = {"nvmlDeviceGetName", {"nvmlDeviceGetName"}},
    [S_UUID] = {"nvmlDeviceGetUUID", {"nvmlDeviceGetUUID"}},
    [S_MINOR] = {"nvmlDeviceGetMinorNumber", {"nvmlDeviceGetMinorNumber"}},
    [S_PCI] = {"nvmlDeviceGetPciInfo",
               {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"}},
    [S_CC] = {"nvmlDeviceGetCudaComputeCapability", {"nvmlDeviceGetCudaComputeCapability"}},
    [S_MEMORY] = {"nvmlDeviceGetMemoryInfo", {"nvmlDeviceGetMemoryInfo"}},
    [S_MIG_MODE] = {"nvmlDeviceGetMigMode", {"nvmlDeviceGetMigMode"}},
    [S_MAX_MIG] = {"nvmlDeviceGetMaxMigDeviceCount", {"nvmlDeviceGetMaxMigDeviceCount"}},
    [S_MIG_HANDLE] = {"nvmlDeviceGetMigDeviceHandleByIndex",
                      {"nvmlDeviceGetMigDeviceHandleByIndex"}},
    [S_GI_ID] = {"nvmlDeviceGetGpuInstanceId", {"nvmlDeviceGetGpuInstanceId"}},
    [S_CI_ID] = {"nvmlDeviceGetComputeInstanceId", {"nvmlDeviceGetComputeInstanceId"}},
    /* the unversioned nvmlDeviceGetAttributes filled an older struct: no fallback */
    [S_ATTRIBUTES] = {"nvmlDeviceGetAttributes", {"nvmlDeviceGetAttributes_v2"}},
    [S_HANDLE_UUID] = {"nvmlDeviceGetHandleByUUID", {"nvmlDeviceGetHandleByUUID"}},
    [S_NUMA] = {"nvmlDeviceGetNumaNodeId", {"nvmlDeviceGetNumaNodeId"}},
    [S_ARCH] = {"nvmlDeviceGetArchitecture", {"nvmlDeviceGetArchitecture"}},
    [S_NVLINK_STATE] = {"nvmlDeviceGetNvLinkState", {"nvmlDeviceGetNvLinkState"}},
    /* the plain one fills the legacy PCI struct, as nvmlDeviceGetPciInfo does */
    [S_NVLINK_PCI] = {"nvmlDeviceGetNvLinkRemotePciInfo",
                      {"nvmlDeviceGetNvLinkRemotePciInfo_v2", "nvmlDeviceGetNvLinkRemotePciInfo"}},
    [S_UTIL] = {"nvmlDeviceGetUtilizationRates", {"nvmlDeviceGetUtilizationRates"}},
    [S_MEMORY_V2] = {"nvmlDeviceGetMemoryInfo_v2", {"nvmlDeviceGetMemoryInfo_v2"}},
    [S_TEMP] = {"nvmlDeviceGetTemperature", {"nvmlDeviceGetTemperature"}},
    [S_POWER] = {"nvmlDeviceGetPowerUsage", {"nvmlDeviceGetPowerUsage"}},
    [S_ENERGY] = {"nvmlDeviceGetTotalEnergyConsumption", {"nvmlDeviceGetTotalEnergyConsumption"}},
    [S_ECC] = {"nvmlDeviceGetTotalEccErrors", {"nvmlDeviceGetTotalEccErrors"}},
    [S_REMAP] = {"nvmlDeviceGetRemappedRows", {"nvmlDeviceGetRemappedRows"}},
    [S_CLOCK] = {"nvmlDeviceGetClockInfo", {"nvmlDeviceGetClockInfo"}},
    [S_REPLAY] = {"nvmlDeviceGetPcieReplayCounter", {"nvmlDeviceGetPcieReplayCounter"}},
    [S_EV_CREATE] = {"nvmlEventSetCreate", {"nvmlEventSetCreate"}},
    [S_EV_SUPPORTED] = {"nvmlDeviceGetSupportedEventTypes", {"nvmlDeviceGetSupportedEventTypes"}},
    [S_EV_REGISTER] = {"nvmlDeviceRegisterEvents", {"nvmlDeviceRegisterEvents"}},
    /* the plain wait fills the old 24-byte nvmlEventData_t (no GI/CI ids) */
    [S_EV_WAIT] = {"nvmlEventSetWait", {"nvmlEventSetWait_v2", "nvmlEventSetWait"}},
    [S_EV_FREE] = {"nvmlEventSetFree", {"nvmlEventSetFree"}},
};

struct gs_nvml {
    void *dl;
    void *fn[S_N_];
    const char *used[S_N_]; /* the name that resolved, or NULL */
    int init_sym;           /* S_INIT_FLAGS or S_INIT */
    char *sysfs_root;       /* NULL: /sys */
};

typedef nvml_ret (*fn_void)(void);
typedef nvml_ret (*fn_flags)(unsigned);
typedef const char *(*fn_errstr)(nvml_ret);
typedef nvml_ret (*fn_str)(char *, unsigned);
typedef nvml_ret (*fn_intp)(int *);
typedef nvml_ret (*fn_uintp)(unsigned *);
typedef nvml_ret (*fn_handle)(unsigned, nvml_dev *);
typedef nvml_ret (*fn_dev_str)(nvml_dev, char *, unsigned);
typedef nvml_ret (*fn_dev_uint)(nvml_dev, unsigned *);
typedef nvml_ret (*fn_dev_pci)(nvml_dev, nvml_pci_info *);
typedef nvml_ret (*fn_dev_cc)(nvml_dev, int *, int *);
typedef nvml_ret (*fn_dev_mem)(nvml_dev, nvml_memory *);
typedef nvml_ret (*fn_dev_mig_mode)(nvml_dev, unsigned *, unsigned *);
typedef nvml_ret (*fn_dev_mig_handle)(nvml_dev, unsigned, nvml_dev *);
typedef nvml_ret (*fn_dev_attr)(nvml_dev, nvml_attributes *);
typedef nvml_ret (*fn_uuid_handle)(const char *, nvml_dev *);
typedef nvml_ret (*fn_dev_link_uint)(nvml_dev, unsigned, unsigned *);
typedef nvml_ret (*fn_dev_link_pci)(nvml_dev, unsigned, nvml_pci_info *);
typedef nvml_ret (*fn_dev_util)(nvml_dev, nvml_utilization *);
typedef nvml_ret (*fn_dev_mem2)(nvml_dev, nvml_memory_v2 *);
typedef nvml_ret (*fn_dev_enum_uint)(nvml_dev, int, unsigned *);
typedef nvml_ret (*fn_dev_ull)(nvml_dev, unsigned long long *);
typedef nvml_ret (*fn_dev_ecc)(nvml_dev, int, int, unsigned long long *);
typedef nvml_ret (*fn_dev_remap)(nvml_dev, unsigned *, unsigned *, unsigned *, unsigned *);
typedef nvml_ret (*fn_set_create)(void **);
typedef nvml_ret (*fn_dev_register)(nvml_dev, unsigned long long, void *);
typedef nvml_ret (*fn_set_wait)(void *, nvml_event_data *, unsigned);
typedef nvml_ret (*fn_set_free)(void *);

static const char *err_string(const gs_nvml *n, nvml_ret rc)
{
    if (n->fn[S_ERROR_STRING]) {
        const char *s = ((fn_errstr)n->fn[S_ERROR_STRING])(rc);
        if (s)
            return s;
    }
    return "unknown NVML error";
}

static void copy_bounded(char *dst, size_t cap, const char *src, size_t src_cap)
{
    size_t n = strnlen(src, src_cap);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

int gs_nvml_open(const char *path_or_null, gs_nvml **out, gs_error *err)
{
    const char *path = path_or_null ? path_or_null : GS_NVML_LIBRARY;
    *out = NULL;
    dlerror();
    void *dl = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    if (!dl) {
        const char *why = dlerror();
        return gs_error_set(err, GS_ERR_NOTFOUND, NULL, 0, 0, path,
                            "cannot load the NVML library %s (is the NVIDIA driver installed and "
                            "its library mounted?): %s",
                            path, why ? why : "unknown dlopen error");
    }
    gs_nvml *n = calloc(1, sizeof *n);
    if (!n) {
        dlclose(dl);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    n->dl = dl;
    for (int s = 0; s < S_N_; s++) {
        for (int k = 0; k < 3 && syms[s].names[k]; k++) {
            void *p = dlsym(dl, syms[s].names[k]);
            if (p) {
                n->fn[s] = p;
                n->used[s] = syms[s].names[k];
                break;
            }
        }
    }
    if ((!n->fn[S_INIT_FLAGS] && !n->fn[S_INIT]) || !n->fn[S_SHUTDOWN] || !n->fn[S_COUNT] ||
        !n->fn[S_HANDLE]) {
        dlclose(dl);
        free(n);
        return gs_error_set(err, GS_ERR_NOTFOUND, NULL, 0, 0, path,
                            "%s is not a usable NVML library: it has none of nvmlInitWithFlags, "
                            "nvmlInit_v2, nvmlInit, or lacks nvmlShutdown, nvmlDeviceGetCount or "
                            "nvmlDeviceGetHandleByIndex",
                            path);
    }
    nvml_ret rc;
    if (n->fn[S_INIT_FLAGS]) {
        n->init_sym = S_INIT_FLAGS;
        rc = ((fn_flags)n->fn[S_INIT_FLAGS])(NVML_INIT_FLAG_NO_GPUS);
    } else {
        n->init_sym = S_INIT;
        rc = ((fn_void)n->fn[S_INIT])();
    }
    if (rc != NVML_SUCCESS) {
        gs_error_set(err, GS_ERR_IO, NULL, 0, 0, path, "%s failed: %s (NVML error %d)",
                     n->used[n->init_sym], err_string(n, rc), rc);
        dlclose(dl);
        free(n);
        return -1;
    }
    *out = n;
    return 0;
}

void gs_nvml_close(gs_nvml *n)
{
    if (!n)
        return;
    ((fn_void)n->fn[S_SHUTDOWN])();
    dlclose(n->dl);
    free(n->sysfs_root);
    free(n);
}

void gs_nvml_set_sysfs_root(gs_nvml *n, const char *root)
{
    if (!n)
        return;
    free(n->sysfs_root);
    n->sysfs_root = root ? strdup(root) : NULL;
}

const char *gs_nvml_resolved(const gs_nvml *n, const char *plain)
{
    if (!n || !plain)
        return NULL;
    if (strcmp(plain, "nvmlInit") == 0)
        return n->used[n->init_sym];
    for (int s = 0; s < S_N_; s++)
        if (strcmp(syms[s].plain, plain) == 0)
            return n->used[s];
    return NULL;
}

/* Codes that mean "this field is not available here", not "this device is broken". */
static int soft(nvml_ret rc)
{
    return rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_NO_PERMISSION ||
           rc == NVML_ERROR_FUNCTION_NOT_FOUND;
}

/* Record the first hard failure on g; returns 1 when the device is lost. */
static int check(const gs_nvml *n, gs_nvml_gpu *g, int sym, nvml_ret rc)
{
    if (rc == NVML_SUCCESS || soft(rc))
        return 0;
    g->lost = 1;
    snprintf(g->lost_reason, sizeof g->lost_reason, "%s: %s (NVML error %d)", n->used[sym],
             err_string(n, rc), rc);
    return 1;
}

/* The bus id of a PCI info struct in one spelling: the unversioned functions fill the legacy
 * struct (busId[16] at offset 0, 4-digit domain "0000:07:00.0"), widened here to the current
 * 8-digit form ("00000000:07:00.0") so every driver gives one spelling. */
static void pci_bus_id(const nvml_pci_info *pci, int legacy, char *out, size_t cap)
{
    if (legacy || !pci->bus_id[0])
        copy_bounded(out, cap, pci->bus_id_legacy, sizeof pci->bus_id_legacy);
    else
        copy_bounded(out, cap, pci->bus_id, sizeof pci->bus_id);
    if (strlen(out) == 12 && out[4] == ':') {
        char wide[32];
        snprintf(wide, sizeof wide, "0000%s", out);
        copy_bounded(out, cap, wide, sizeof wide);
    }
}

int gs_nvml_mig_profile_name(unsigned gi_slices, unsigned ci_slices, unsigned long long memory_mb,
                             unsigned ofas, unsigned long long parent_total_bytes, char *out,
                             size_t cap)
{
    if (cap)
        out[0] = '\0';
    if (!gi_slices || !ci_slices || !memory_mb || !parent_total_bytes || cap == 0)
        return -1;
    double fraction = (double)memory_mb * 1048576.0 / (double)parent_total_bytes;
    fraction = ceil(fraction * 8.0) / 8.0;
    double total_gib = (double)((parent_total_bytes + (1ull << 30) - 1) >> 30);
    unsigned long long gb = (unsigned long long)llround(fraction * total_gib);
    /* +me: the instance holds the (single) OFA engine without being the whole GPU, which is
     * what the media-extension GI profiles (1_SLICE_REV1, 2_SLICE_REV1) add */
    const char *suffix = ofas > 0 && fraction < 1.0 ? "+me" : "";
    int w;
    if (ci_slices == gi_slices)
        w = snprintf(out, cap, "%ug.%llugb%s", gi_slices, gb, suffix);
    else
        w = snprintf(out, cap, "%uc.%ug.%llugb%s", ci_slices, gi_slices, gb, suffix);
    if (w < 0 || (size_t)w >= cap) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

static void discover_mig(const gs_nvml *n, nvml_dev dev, gs_nvml_gpu *g,
                         unsigned long long parent_total)
{
    if (!n->fn[S_MAX_MIG] || !n->fn[S_MIG_HANDLE])
        return;
    unsigned max = 0;
    nvml_ret rc = ((fn_dev_uint)n->fn[S_MAX_MIG])(dev, &max);
    if (check(n, g, S_MAX_MIG, rc) || rc != NVML_SUCCESS || max == 0)
        return;
    if (max > 64)
        max = 64; /* 7 on every MIG-capable GPU so far; a bound against a broken driver */
    g->mig = calloc(max, sizeof *g->mig);
    if (!g->mig) {
        g->lost = 1;
        snprintf(g->lost_reason, sizeof g->lost_reason, "out of memory");
        return;
    }
    for (unsigned j = 0; j < max; j++) {
        nvml_dev mig = NULL;
        rc = ((fn_dev_mig_handle)n->fn[S_MIG_HANDLE])(dev, j, &mig);
        if (rc == NVML_ERROR_NOT_FOUND)
            continue; /* a hole: no MIG device at this index */
        if (check(n, g, S_MIG_HANDLE, rc))
            return;
        if (rc != NVML_SUCCESS)
            continue;
        gs_nvml_mig_device *m = &g->mig[g->n_mig];
        memset(m, 0, sizeof *m);
        m->index = j;
        m->gpu_instance_id = m->compute_instance_id = ~0u;
        char buf[GS_NVML_STR_MAX] = {0};
        if (n->fn[S_UUID]) {
            rc = ((fn_dev_str)n->fn[S_UUID])(mig, buf, sizeof buf);
            if (check(n, g, S_UUID, rc))
                return;
            if (rc == NVML_SUCCESS)
                copy_bounded(m->uuid, sizeof m->uuid, buf, sizeof buf);
        }
        if (n->fn[S_GI_ID]) {
            rc = ((fn_dev_uint)n->fn[S_GI_ID])(mig, &m->gpu_instance_id);
            if (check(n, g, S_GI_ID, rc))
                return;
        }
        if (n->fn[S_CI_ID]) {
            rc = ((fn_dev_uint)n->fn[S_CI_ID])(mig, &m->compute_instance_id);
            if (check(n, g, S_CI_ID, rc))
                return;
        }
        if (n->fn[S_MEMORY]) {
            nvml_memory mem = {0};
            rc = ((fn_dev_mem)n->fn[S_MEMORY])(mig, &mem);
            if (check(n, g, S_MEMORY, rc))
                return;
            if (rc == NVML_SUCCESS)
                m->memory_mib = mem.total >> 20;
        }
        if (n->fn[S_ATTRIBUTES]) {
            nvml_attributes a = {0};
            rc = ((fn_dev_attr)n->fn[S_ATTRIBUTES])(mig, &a);
            if (check(n, g, S_ATTRIBUTES, rc))
                return;
            if (rc == NVML_SUCCESS) {
                m->have_attributes = 1;
                m->gi_slices = a.gpu_instance_slice_count;
                m->ci_slices = a.compute_instance_slice_count;
                m->multiprocessors = a.multiprocessor_count;
                m->copy_engines = a.shared_copy_engine_count;
                m->decoders = a.shared_decoder_count;
                m->encoders = a.shared_encoder_count;
                m->jpegs = a.shared_jpeg_count;
                m->ofas = a.shared_ofa_count;
                if (!m->memory_mib)
                    m->memory_mib = a.memory_size_mb;
                gs_nvml_mig_profile_name(m->gi_slices, m->ci_slices, a.memory_size_mb, m->ofas,
                                         parent_total, m->profile, sizeof m->profile);
            }
        }
        g->n_mig++;
    }
}

/* The NUMA node: nvmlDeviceGetNumaNodeId, else sysfs's numa_node of the PCI device (-1 there
 * means "no NUMA affinity" and stays -1). Returns 1 when the device turned out lost. */
static int discover_numa(const gs_nvml *n, nvml_dev dev, gs_nvml_gpu *g)
{
    if (n->fn[S_NUMA]) {
        unsigned node = 0;
        nvml_ret rc = ((fn_dev_uint)n->fn[S_NUMA])(dev, &node);
        if (check(n, g, S_NUMA, rc))
            return 1;
        if (rc == NVML_SUCCESS) {
            g->numa_node = node < 0x7fffffffu ? (int)node : -1;
            return 0;
        }
    }
    unsigned domain, bus, device, function;
    if (sscanf(g->pci_bus_id, "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4)
        return 0;
    char path[512];
    snprintf(path, sizeof path, "%s/bus/pci/devices/%04x:%02x:%02x.%x/numa_node",
             n->sysfs_root ? n->sysfs_root : "/sys", domain, bus, device, function);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int node = -1;
    if (fscanf(f, "%d", &node) == 1 && node >= 0)
        g->numa_node = node;
    fclose(f);
    return 0;
}

/* NVLink peers: each link 0..17 that is active and whose remote PCI info reads. NOT_SUPPORTED,
 * INVALID_ARGUMENT (no such link) and the other soft codes end the scan quietly; GPU_IS_LOST
 * marks the device lost (returns 1). */
static int discover_nvlink(const gs_nvml *n, nvml_dev dev, gs_nvml_gpu *g)
{
    if (!n->fn[S_NVLINK_STATE] || !n->fn[S_NVLINK_PCI])
        return 0;
    int legacy = strcmp(n->used[S_NVLINK_PCI], "nvmlDeviceGetNvLinkRemotePciInfo") == 0;
    for (unsigned link = 0; link < GS_NVML_MAX_NVLINK; link++) {
        unsigned active = 0;
        nvml_ret rc = ((fn_dev_link_uint)n->fn[S_NVLINK_STATE])(dev, link, &active);
        if (rc == NVML_ERROR_GPU_IS_LOST)
            return check(n, g, S_NVLINK_STATE, rc);
        if (rc != NVML_SUCCESS)
            break;
        if (!active)
            continue;
        nvml_pci_info pci;
        memset(&pci, 0, sizeof pci);
        rc = ((fn_dev_link_pci)n->fn[S_NVLINK_PCI])(dev, link, &pci);
        if (rc == NVML_ERROR_GPU_IS_LOST)
            return check(n, g, S_NVLINK_PCI, rc);
        if (rc != NVML_SUCCESS)
            break;
        pci_bus_id(&pci, legacy, g->nvlink_peer[g->n_nvlink], sizeof g->nvlink_peer[0]);
        if (g->nvlink_peer[g->n_nvlink][0])
            g->n_nvlink++;
    }
    return 0;
}

static void discover_gpu(const gs_nvml *n, unsigned i, gs_nvml_gpu *g)
{
    g->index = i;
    g->minor = g->cc_major = g->cc_minor = -1;
    g->numa_node = g->arch = -1;
    nvml_dev dev = NULL;
    nvml_ret rc = ((fn_handle)n->fn[S_HANDLE])(i, &dev);
    if (rc != NVML_SUCCESS) {
        g->lost = 1;
        snprintf(g->lost_reason, sizeof g->lost_reason, "%s: %s (NVML error %d)",
                 n->used[S_HANDLE], err_string(n, rc), rc);
        return;
    }
    char buf[GS_NVML_STR_MAX];
    if (n->fn[S_UUID]) {
        memset(buf, 0, sizeof buf);
        rc = ((fn_dev_str)n->fn[S_UUID])(dev, buf, sizeof buf);
        if (check(n, g, S_UUID, rc))
            return;
        if (rc == NVML_SUCCESS)
            copy_bounded(g->uuid, sizeof g->uuid, buf, sizeof buf);
    }
    if (n->fn[S_NAME]) {
        memset(buf, 0, sizeof buf);
        rc = ((fn_dev_str)n->fn[S_NAME])(dev, buf, sizeof buf);
        if (check(n, g, S_NAME, rc))
            return;
        if (rc == NVML_SUCCESS)
            copy_bounded(g->name, sizeof g->name, buf, sizeof buf);
    }
    unsigned long long total_bytes = 0;
    if (n->fn[S_MEMORY]) {
        nvml_memory mem = {0};
        rc = ((fn_dev_mem)n->fn[S_MEMORY])(dev, &mem);
        if (check(n, g, S_MEMORY, rc))
            return;
        if (rc == NVML_SUCCESS) {
            total_bytes = mem.total;
            g->memory_mib = mem.total >> 20;
        }
    }
    if (n->fn[S_PCI]) {
        nvml_pci_info pci;
        memset(&pci, 0, sizeof pci);
        rc = ((fn_dev_pci)n->fn[S_PCI])(dev, &pci);
        if (check(n, g, S_PCI, rc))
            return;
        if (rc == NVML_SUCCESS)
            pci_bus_id(&pci, strcmp(n->used[S_PCI], "nvmlDeviceGetPciInfo") == 0, g->pci_bus_id,
                       sizeof g->pci_bus_id);
    }
    if (n->fn[S_MINOR]) {
        unsigned minor = 0;
        rc = ((fn_dev_uint)n->fn[S_MINOR])(dev, &minor);
        if (check(n, g, S_MINOR, rc))
            return;
        if (rc == NVML_SUCCESS)
            g->minor = (int)minor;
    }
    if (n->fn[S_CC]) {
        int major = -1, minor = -1;
        rc = ((fn_dev_cc)n->fn[S_CC])(dev, &major, &minor);
        if (check(n, g, S_CC, rc))
            return;
        if (rc == NVML_SUCCESS) {
            g->cc_major = major;
            g->cc_minor = minor;
        }
    }
    if (n->fn[S_MIG_MODE]) {
        unsigned cur = 0, pend = 0;
        rc = ((fn_dev_mig_mode)n->fn[S_MIG_MODE])(dev, &cur, &pend);
        if (check(n, g, S_MIG_MODE, rc))
            return;
        if (rc == NVML_SUCCESS) {
            g->mig_capable = 1;
            g->mig_current = cur;
            g->mig_pending = pend;
        }
    }
    if (n->fn[S_ARCH]) {
        unsigned arch = 0;
        rc = ((fn_dev_uint)n->fn[S_ARCH])(dev, &arch);
        if (check(n, g, S_ARCH, rc))
            return;
        if (rc == NVML_SUCCESS && arch < 0x7fffffffu) /* 0xffffffff: UNKNOWN */
            g->arch = (int)arch;
    }
    if (discover_numa(n, dev, g) || discover_nvlink(n, dev, g))
        return;
    if (g->mig_capable && g->mig_current == 1)
        discover_mig(n, dev, g, total_bytes);
}

int gs_nvml_discover(gs_nvml *n, gs_nvml_inventory *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    nvml_ret rc;
    if (n->fn[S_DRIVER_VERSION]) {
        char buf[80] = {0};
        rc = ((fn_str)n->fn[S_DRIVER_VERSION])(buf, sizeof buf);
        if (rc == NVML_SUCCESS)
            copy_bounded(out->driver_version, sizeof out->driver_version, buf, sizeof buf);
    }
    if (n->fn[S_CUDA_VERSION]) {
        int v = 0;
        rc = ((fn_intp)n->fn[S_CUDA_VERSION])(&v);
        if (rc == NVML_SUCCESS && v > 0) {
            out->cuda_driver_version = v;
            out->cuda_major = v / 1000;
            out->cuda_minor = (v % 1000) / 10;
        }
    }
    unsigned count = 0;
    rc = ((fn_uintp)n->fn[S_COUNT])(&count);
    if (rc != NVML_SUCCESS)
        return gs_fail(err, GS_ERR_IO, "%s failed: %s (NVML error %d)", n->used[S_COUNT],
                       err_string(n, rc), rc);
    if (count > 1024)
        return gs_fail(err, GS_ERR_LIMIT, "%s reported %u GPUs (at most 1024 are read)",
                       n->used[S_COUNT], count);
    if (count) {
        out->gpus = calloc(count, sizeof *out->gpus);
        if (!out->gpus)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    out->n_gpus = count;
    for (unsigned i = 0; i < count; i++)
        discover_gpu(n, i, &out->gpus[i]);
    return 0;
}

void gs_nvml_inventory_free(gs_nvml_inventory *inv)
{
    if (!inv)
        return;
    for (size_t i = 0; i < inv->n_gpus; i++)
        free(inv->gpus[i].mig);
    free(inv->gpus);
    memset(inv, 0, sizeof *inv);
}

/* ---- sampling ---------------------------------------------------------------------------- */

static void sample_unknown(gs_nvml_sample *s)
{
    s->gpu_util = s->mem_copy_util = -1;
    s->fb_used_mib = s->fb_free_mib = s->fb_reserved_mib = -1;
    s->temp_c = -1;
    s->power_mw = s->energy_mj = -1;
    s->ecc_sbe_volatile = s->ecc_dbe_volatile = -1;
    s->remapped_correctable = s->remapped_uncorrectable = -1;
    s->remap_pending = s->remap_failure = -1;
    s->sm_clock_mhz = s->mem_clock_mhz = -1;
    s->pcie_replay = -1;
}

/* A call's outcome while sampling: 1 read, 0 not available here, -1 the device is lost (any
 * hard error: GPU_IS_LOST, UNKNOWN, ...). */
static int sample_rc(nvml_ret rc)
{
    if (rc == NVML_SUCCESS)
        return 1;
    if (soft(rc) || rc == NVML_ERROR_NOT_FOUND || rc == NVML_ERROR_INVALID_ARGUMENT)
        return 0;
    return -1;
}

/* Memory of a GPU or MIG handle: v2 (with reserved) first, then v1. -1 when lost. */
static int sample_memory(const gs_nvml *n, nvml_dev dev, gs_nvml_sample *s)
{
    if (n->fn[S_MEMORY_V2]) {
        nvml_memory_v2 m;
        memset(&m, 0, sizeof m);
        m.version = NVML_MEMORY_V2_VERSION;
        int r = sample_rc(((fn_dev_mem2)n->fn[S_MEMORY_V2])(dev, &m));
        if (r < 0)
            return -1;
        if (r > 0) {
            s->fb_used_mib = (long long)(m.used >> 20);
            s->fb_free_mib = (long long)(m.free >> 20);
            s->fb_reserved_mib = (long long)(m.reserved >> 20);
            return 0;
        }
    }
    if (n->fn[S_MEMORY]) {
        nvml_memory m = {0};
        int r = sample_rc(((fn_dev_mem)n->fn[S_MEMORY])(dev, &m));
        if (r < 0)
            return -1;
        if (r > 0) {
            s->fb_used_mib = (long long)(m.used >> 20);
            s->fb_free_mib = (long long)(m.free >> 20);
        }
    }
    return 0;
}

/* Every sensor of a whole GPU. -1 when the GPU stopped answering. */
static int sample_gpu(const gs_nvml *n, nvml_dev dev, gs_nvml_sample *s)
{
    int r;
    if (n->fn[S_UTIL]) {
        nvml_utilization u = {0, 0};
        if ((r = sample_rc(((fn_dev_util)n->fn[S_UTIL])(dev, &u))) < 0)
            return -1;
        if (r) {
            s->gpu_util = (int)u.gpu;
            s->mem_copy_util = (int)u.memory;
        }
    }
    if (sample_memory(n, dev, s) < 0)
        return -1;
    unsigned v = 0;
    if (n->fn[S_TEMP]) {
        if ((r = sample_rc(((fn_dev_enum_uint)n->fn[S_TEMP])(dev, 0 /* TEMPERATURE_GPU */, &v))) < 0)
            return -1;
        if (r)
            s->temp_c = (int)v;
    }
    if (n->fn[S_POWER]) {
        if ((r = sample_rc(((fn_dev_uint)n->fn[S_POWER])(dev, &v))) < 0)
            return -1;
        if (r)
            s->power_mw = v;
    }
    unsigned long long ull = 0;
    if (n->fn[S_ENERGY]) {
        if ((r = sample_rc(((fn_dev_ull)n->fn[S_ENERGY])(dev, &ull))) < 0)
            return -1;
        if (r)
            s->energy_mj = (long long)ull;
    }
    if (n->fn[S_ECC]) {
        /* nvmlMemoryErrorType_t CORRECTED 0 / UNCORRECTED 1; nvmlEccCounterType_t VOLATILE 0 */
        if ((r = sample_rc(((fn_dev_ecc)n->fn[S_ECC])(dev, 0, 0, &ull))) < 0)
            return -1;
        if (r)
            s->ecc_sbe_volatile = (long long)ull;
        if ((r = sample_rc(((fn_dev_ecc)n->fn[S_ECC])(dev, 1, 0, &ull))) < 0)
            return -1;
        if (r)
            s->ecc_dbe_volatile = (long long)ull;
    }
    if (n->fn[S_REMAP]) {
        unsigned corr = 0, unc = 0, pend = 0, fail = 0;
        if ((r = sample_rc(((fn_dev_remap)n->fn[S_REMAP])(dev, &corr, &unc, &pend, &fail))) < 0)
            return -1;
        if (r) {
            s->remapped_correctable = corr;
            s->remapped_uncorrectable = unc;
            s->remap_pending = pend != 0;
            s->remap_failure = fail != 0;
        }
    }
    if (n->fn[S_CLOCK]) {
        /* nvmlClockType_t SM 1, MEM 2 */
        if ((r = sample_rc(((fn_dev_enum_uint)n->fn[S_CLOCK])(dev, 1, &v))) < 0)
            return -1;
        if (r)
            s->sm_clock_mhz = (int)v;
        if ((r = sample_rc(((fn_dev_enum_uint)n->fn[S_CLOCK])(dev, 2, &v))) < 0)
            return -1;
        if (r)
            s->mem_clock_mhz = (int)v;
    }
    if (n->fn[S_REPLAY]) {
        if ((r = sample_rc(((fn_dev_uint)n->fn[S_REPLAY])(dev, &v))) < 0)
            return -1;
        if (r)
            s->pcie_replay = v;
    }
    return 0;
}

/* The hidden capacity of out->mig[i] lives after the n_gpus pointers of the same block. */
static size_t *mig_caps(const gs_nvml_samples *s)
{
    return (size_t *)(void *)(s->mig + s->n_gpus);
}

static int samples_shape(gs_nvml_samples *out, const gs_nvml_inventory *inv)
{
    if (out->gpu && out->n_gpus != inv->n_gpus)
        gs_nvml_samples_free(out);
    if (!out->gpu && inv->n_gpus) {
        out->gpu = calloc(inv->n_gpus, sizeof *out->gpu);
        out->mig = calloc(inv->n_gpus, sizeof *out->mig + sizeof(size_t));
        if (!out->gpu || !out->mig) {
            free(out->gpu);
            free(out->mig);
            out->gpu = NULL;
            out->mig = NULL;
            return -1;
        }
        out->n_gpus = inv->n_gpus;
    }
    for (size_t i = 0; i < inv->n_gpus; i++) {
        size_t need = inv->gpus[i].n_mig;
        if (need > mig_caps(out)[i]) {
            gs_nvml_sample *m = realloc(out->mig[i], need * sizeof *m);
            if (!m)
                return -1;
            out->mig[i] = m;
            mig_caps(out)[i] = need;
        }
    }
    return 0;
}

int gs_nvml_sample_read(gs_nvml *n, const gs_nvml_inventory *inv, gs_nvml_samples *out,
                        gs_error *err)
{
    if (samples_shape(out, inv) != 0)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    out->taken_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    for (size_t i = 0; i < inv->n_gpus; i++) {
        const gs_nvml_gpu *g = &inv->gpus[i];
        gs_nvml_sample *s = &out->gpu[i];
        sample_unknown(s);
        for (size_t j = 0; j < g->n_mig; j++)
            sample_unknown(&out->mig[i][j]);
        nvml_dev dev = NULL;
        if (((fn_handle)n->fn[S_HANDLE])(g->index, &dev) != NVML_SUCCESS)
            continue;
        if (sample_gpu(n, dev, s) < 0) {
            sample_unknown(s);
            continue;
        }
        if (!n->fn[S_MIG_HANDLE])
            continue;
        for (size_t j = 0; j < g->n_mig; j++) {
            nvml_dev mig = NULL;
            nvml_ret rc = ((fn_dev_mig_handle)n->fn[S_MIG_HANDLE])(dev, g->mig[j].index, &mig);
            if (rc != NVML_SUCCESS || sample_memory(n, mig, &out->mig[i][j]) < 0)
                sample_unknown(&out->mig[i][j]);
        }
    }
    return 0;
}

void gs_nvml_samples_free(gs_nvml_samples *s)
{
    if (!s)
        return;
    if (s->mig)
        for (size_t i = 0; i < s->n_gpus; i++)
            free(s->mig[i]);
    free(s->mig);
    free(s->gpu);
    memset(s, 0, sizeof *s);
}

/* ---- events ------------------------------------------------------------------------------ */

typedef struct {
    unsigned gi, ci;
} ev_mig;

typedef struct {
    nvml_dev dev;        /* NULL when the handle could not be had */
    gs_nvml_reg reg;
    unsigned long long mask;
    char reason[GS_NVML_REASON_MAX];
    size_t n_mig;
    ev_mig *mig;
} ev_gpu;

struct gs_nvml_events {
    gs_nvml *n;
    void *set;
    int old_wait; /* the plain nvmlEventSetWait: no GI/CI ids */
    size_t n_gpus;
    ev_gpu *gpus;
};

void gs_nvml_events_close(gs_nvml_events *ev)
{
    if (!ev)
        return;
    if (ev->set && ev->n->fn[S_EV_FREE])
        ((fn_set_free)ev->n->fn[S_EV_FREE])(ev->set);
    for (size_t i = 0; i < ev->n_gpus; i++)
        free(ev->gpus[i].mig);
    free(ev->gpus);
    free(ev);
}

static void reg_failed(const gs_nvml *n, ev_gpu *e, int sym, nvml_ret rc)
{
    e->reg = GS_NVML_REG_FAILED;
    snprintf(e->reason, sizeof e->reason, "%s: %s (NVML error %d)", n->used[sym],
             err_string(n, rc), rc);
}

int gs_nvml_events_open(gs_nvml *n, const gs_nvml_inventory *inv, gs_nvml_events **out,
                        gs_error *err)
{
    *out = NULL;
    if (!n->fn[S_EV_CREATE] || !n->fn[S_EV_REGISTER] || !n->fn[S_EV_WAIT])
        return gs_fail(err, GS_ERR_NOTFOUND,
                       "this NVML has no event functions (nvmlEventSetCreate, "
                       "nvmlDeviceRegisterEvents, nvmlEventSetWait_v2): the driver is too old "
                       "for XID health checks");
    gs_nvml_events *ev = calloc(1, sizeof *ev);
    if (!ev || (inv->n_gpus && !(ev->gpus = calloc(inv->n_gpus, sizeof *ev->gpus)))) {
        free(ev);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    ev->n = n;
    ev->n_gpus = inv->n_gpus;
    ev->old_wait = strcmp(n->used[S_EV_WAIT], "nvmlEventSetWait") == 0;
    nvml_ret rc = ((fn_set_create)n->fn[S_EV_CREATE])(&ev->set);
    if (rc != NVML_SUCCESS) {
        ev->set = NULL;
        gs_nvml_events_close(ev);
        return gs_fail(err, GS_ERR_IO, "nvmlEventSetCreate failed: %s (NVML error %d)",
                       err_string(n, rc), rc);
    }
    for (size_t i = 0; i < inv->n_gpus; i++) {
        const gs_nvml_gpu *g = &inv->gpus[i];
        ev_gpu *e = &ev->gpus[i];
        if (g->n_mig) {
            e->mig = calloc(g->n_mig, sizeof *e->mig);
            if (!e->mig) {
                gs_nvml_events_close(ev);
                return gs_fail(err, GS_ERR_NOMEM, "out of memory");
            }
            e->n_mig = g->n_mig;
            for (size_t j = 0; j < g->n_mig; j++) {
                e->mig[j].gi = g->mig[j].gpu_instance_id;
                e->mig[j].ci = g->mig[j].compute_instance_id;
            }
        }
        rc = ((fn_handle)n->fn[S_HANDLE])(g->index, &e->dev);
        if (rc != NVML_SUCCESS) {
            e->dev = NULL;
            reg_failed(n, e, S_HANDLE, rc);
            continue;
        }
        unsigned long long supported = GS_NVML_EVENTS_HEALTH;
        if (n->fn[S_EV_SUPPORTED]) {
            rc = ((fn_dev_ull)n->fn[S_EV_SUPPORTED])(e->dev, &supported);
            if (rc == NVML_ERROR_NOT_SUPPORTED) {
                e->reg = GS_NVML_REG_NOT_SUPPORTED;
                snprintf(e->reason, sizeof e->reason,
                         "%s: Not Supported (the GPU or driver is too old for health events)",
                         n->used[S_EV_SUPPORTED]);
                continue;
            }
            if (rc != NVML_SUCCESS) {
                reg_failed(n, e, S_EV_SUPPORTED, rc);
                continue;
            }
        }
        unsigned long long mask = supported & GS_NVML_EVENTS_HEALTH;
        if (!mask) {
            e->reg = GS_NVML_REG_NOT_SUPPORTED;
            snprintf(e->reason, sizeof e->reason,
                     "none of the XID, double-bit and single-bit ECC events is supported");
            continue;
        }
        rc = ((fn_dev_register)n->fn[S_EV_REGISTER])(e->dev, mask, ev->set);
        if (rc == NVML_ERROR_NOT_SUPPORTED) {
            e->reg = GS_NVML_REG_NOT_SUPPORTED;
            snprintf(e->reason, sizeof e->reason, "%s: Not Supported", n->used[S_EV_REGISTER]);
            continue;
        }
        if (rc != NVML_SUCCESS) {
            reg_failed(n, e, S_EV_REGISTER, rc);
            continue;
        }
        e->reg = GS_NVML_REG_SUPPORTED;
        e->mask = mask;
    }
    *out = ev;
    return 0;
}

gs_nvml_reg gs_nvml_events_registration(const gs_nvml_events *ev, size_t gpu,
                                        unsigned long long *mask, const char **reason)
{
    if (!ev || gpu >= ev->n_gpus) {
        if (mask)
            *mask = 0;
        if (reason)
            *reason = "no such GPU in the event set";
        return GS_NVML_REG_FAILED;
    }
    if (mask)
        *mask = ev->gpus[gpu].mask;
    if (reason)
        *reason = ev->gpus[gpu].reason;
    return ev->gpus[gpu].reg;
}

int gs_nvml_events_wait(gs_nvml_events *ev, unsigned timeout_ms, gs_nvml_event *out,
                        gs_error *err)
{
    const gs_nvml *n = ev->n;
    nvml_event_data d;
    memset(&d, 0, sizeof d);
    /* the old wait writes 24 bytes: GI/CI stay "not attributable" */
    d.gpu_instance_id = d.compute_instance_id = ~0u;
    nvml_ret rc = ((fn_set_wait)n->fn[S_EV_WAIT])(ev->set, &d, timeout_ms);
    if (rc == NVML_ERROR_TIMEOUT)
        return 0;
    if (rc != NVML_SUCCESS)
        return gs_fail(err, GS_ERR_IO, "%s failed: %s (NVML error %d)", n->used[S_EV_WAIT],
                       err_string(n, rc), rc);
    if (ev->old_wait)
        d.gpu_instance_id = d.compute_instance_id = ~0u;
    out->gpu = -1;
    out->mig = -1;
    out->type = d.event_type;
    out->xid = d.event_data;
    out->gpu_instance_id = d.gpu_instance_id;
    out->compute_instance_id = d.compute_instance_id;
    for (size_t i = 0; i < ev->n_gpus; i++) {
        if (!ev->gpus[i].dev || ev->gpus[i].dev != d.device)
            continue;
        out->gpu = (int)i;
        if (d.gpu_instance_id == ~0u || d.compute_instance_id == ~0u)
            break;
        for (size_t j = 0; j < ev->gpus[i].n_mig; j++)
            if (ev->gpus[i].mig[j].gi == d.gpu_instance_id &&
                ev->gpus[i].mig[j].ci == d.compute_instance_id) {
                out->mig = (int)j;
                break;
            }
        break;
    }
    return 1;
}

int gs_nvml_probe(gs_nvml *n, const char *uuid, gs_error *err)
{
    if (!n->fn[S_HANDLE_UUID])
        return gs_fail(err, GS_ERR_NOTFOUND,
                       "this NVML has no nvmlDeviceGetHandleByUUID: devices cannot be probed");
    nvml_dev dev = NULL;
    nvml_ret rc = ((fn_uuid_handle)n->fn[S_HANDLE_UUID])(uuid, &dev);
    if (rc != NVML_SUCCESS)
        return gs_error_set(err, GS_ERR_IO, NULL, 0, 0, uuid,
                            "nvmlDeviceGetHandleByUUID(%s): %s (NVML error %d)", uuid,
                            err_string(n, rc), rc);
    nvml_memory mem = {0};
    rc = n->fn[S_MEMORY] ? ((fn_dev_mem)n->fn[S_MEMORY])(dev, &mem) : NVML_SUCCESS;
    if (rc != NVML_SUCCESS && !soft(rc))
        return gs_error_set(err, GS_ERR_IO, NULL, 0, 0, uuid,
                            "nvmlDeviceGetMemoryInfo(%s): %s (NVML error %d)", uuid,
                            err_string(n, rc), rc);
    return 0;
}

bool gs_nvml_mig_whole_gi(const gs_nvml_mig_device *m)
{
    if (m->have_attributes && m->gi_slices && m->ci_slices)
        return m->gi_slices == m->ci_slices;
    /* "1c.2g.20gb": a compute instance smaller than its GPU instance */
    const char *c = m->profile;
    while (*c >= '0' && *c <= '9')
        c++;
    return !(c != m->profile && *c == 'c' && c[1] == '.');
}
