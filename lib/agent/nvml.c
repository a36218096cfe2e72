/* nvml.c - NVML through dlopen: symbol resolution with fallbacks, init, discovery.
 *
 * The NVML types used here are declared from the published layouts (LP64): nvml.h is
 * neither included nor vendored. Return codes: 0 SUCCESS, 3 NOT_SUPPORTED, 4 NO_PERMISSION,
 * 6 NOT_FOUND, 13 FUNCTION_NOT_FOUND, 15 GPU_IS_LOST, ... */
#include "gpusched/nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvml_ret;          /* nvmlReturn_t (a C enum) */
typedef void *nvml_dev;        /* nvmlDevice_t (struct nvmlDevice_st *) */

#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NO_PERMISSION 4
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_FUNCTION_NOT_FOUND 13
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

_Static_assert(sizeof(nvml_memory) == 24, "nvmlMemory_t layout");
_Static_assert(sizeof(nvml_pci_info) == 68, "nvmlPciInfo_t layout");
_Static_assert(offsetof(nvml_pci_info, bus_id) == 36, "nvmlPciInfo_t.busId offset");
_Static_assert(sizeof(nvml_attributes) == 40, "nvmlDeviceAttributes_t layout");
_Static_assert(offsetof(nvml_attributes, memory_size_mb) == 32, "memorySizeMB offset");

/* Every function this layer calls: its names, newest first. */
enum {
    S_INIT_FLAGS, S_INIT, S_SHUTDOWN, S_ERROR_STRING, S_DRIVER_VERSION, S_CUDA_VERSION,
    S_COUNT, S_HANDLE, S_NAME, S_UUID, S_MINOR, S_PCI, S_CC, S_MEMORY, S_MIG_MODE,
    S_MAX_MIG, S_MIG_HANDLE, S_GI_ID, S_CI_ID, S_ATTRIBUTES, S_N_
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
};

struct gs_nvml {
    void *dl;
    void *fn[S_N_];
    const char *used[S_N_]; /* the name that resolved, or NULL */
    int init_sym;           /* S_INIT_FLAGS or S_INIT */
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
    free(n);
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

static void discover_mig(const gs_nvml *n, nvml_dev dev, gs_nvml_gpu *g)
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
                if (!m->memory_mib)
                    m->memory_mib = a.memory_size_mb;
            }
        }
        g->n_mig++;
    }
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
    if (n->fn[S_MEMORY]) {
        nvml_memory mem = {0};
        rc = ((fn_dev_mem)n->fn[S_MEMORY])(dev, &mem);
        if (check(n, g, S_MEMORY, rc))
            return;
        if (rc == NVML_SUCCESS)
            g->memory_mib = mem.total >> 20;
    }
    if (n->fn[S_PCI]) {
        nvml_pci_info pci;
        memset(&pci, 0, sizeof pci);
        rc = ((fn_dev_pci)n->fn[S_PCI])(dev, &pci);
        if (check(n, g, S_PCI, rc))
            return;
        if (rc == NVML_SUCCESS) {
            /* the unversioned function fills the legacy struct: busId[16] at offset 0 */
            int legacy = strcmp(n->used[S_PCI], "nvmlDeviceGetPciInfo") == 0;
            if (legacy || !pci.bus_id[0])
                copy_bounded(g->pci_bus_id, sizeof g->pci_bus_id, pci.bus_id_legacy,
                             sizeof pci.bus_id_legacy);
            else
                copy_bounded(g->pci_bus_id, sizeof g->pci_bus_id, pci.bus_id, sizeof pci.bus_id);
            /* the legacy form has a 4-digit domain ("0000:07:00.0"): widen it to the
             * current 8-digit one ("00000000:07:00.0") so every driver gives one spelling */
            if (strlen(g->pci_bus_id) == 12 && g->pci_bus_id[4] == ':') {
                char wide[32];
                snprintf(wide, sizeof wide, "0000%s", g->pci_bus_id);
                copy_bounded(g->pci_bus_id, sizeof g->pci_bus_id, wide, sizeof wide);
            }
        }
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
    if (g->mig_capable && g->mig_current == 1)
        discover_mig(n, dev, g);
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
