/* fake_nvml.c - a fake libnvidia-ml.so.1 for the agent's tests: the subset of the NVML ABI
 * that lib/agent/nvml.c calls, driven by a scenario file. Loaded through the same dlopen path
 * as the real library. Built twice (tests/CMakeLists.txt):
 *   fake_nvml      the current symbol names (nvmlInitWithFlags, nvmlInit_v2,
 *                  nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2,
 *                  nvmlDeviceGetPciInfo_v3, nvmlSystemGetCudaDriverVersion_v2, ...);
 *   fake_nvml_old  (-DFAKE_NVML_OLD) an old driver: only the unversioned nvmlInit,
 *                  nvmlDeviceGetCount, nvmlDeviceGetHandleByIndex, nvmlDeviceGetPciInfo (legacy
 *                  struct, busId[16] at offset 0, "0000:07:00.0"),
 *                  nvmlSystemGetCudaDriverVersion, and no
 *                  nvmlDeviceGetAttributes_v2.
 *
 * Scenario: the file named by the environment variable GS_FAKE_NVML, read by each first
 * nvmlInit* (init is reference counted, as NVML's is). One statement a line; '#' starts a
 * comment line; blank lines are ignored. Tokens are separated by blanks; `name=` must be
 * the last token of a `gpu` line and takes the rest of the line (GPU names have spaces).
 *
 *   driver <version>                 e.g. driver 550.107.02
 *   cuda <int>                       e.g. cuda 12040 (12.4)
 *   gpu uuid=<s> memory=<MiB> pci=<bus id> minor=<n> cc=<major>.<minor> [mig=<0|1>]
 *       [mig-pending=<0|1>] [lost] name=<model, rest of line>
 *   mig uuid=<s> gi=<n> ci=<n> memory=<MiB> [gi-slices=<n>] [ci-slices=<n>] [sms=<n>]
 *                                    a MIG device of the last gpu (at most 7 per GPU)
 *
 * `lost` makes every call on that GPU after nvmlDeviceGetHandleByIndex return
 * NVML_ERROR_GPU_IS_LOST (15), as a GPU that fell off the bus does. A GPU without mig= is
 * not MIG-capable (nvmlDeviceGetMigMode: NOT_SUPPORTED). At most 16 GPUs.
 *
 * A missing variable gives NVML_ERROR_LIBRARY_NOT_FOUND at init; a file that cannot be read
 * or parsed gives NVML_ERROR_UNKNOWN (999), and nvmlErrorString(999) then says which line
 * and why ("fake NVML: <file>:<line>: ..."). Nothing is printed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_UNKNOWN = 999,
};

typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
    char busIdLegacy[16];
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned multiprocessorCount, sharedCopyEngineCount, sharedDecoderCount,
        sharedEncoderCount, sharedJpegCount, sharedOfaCount, gpuInstanceSliceCount,
        computeInstanceSliceCount;
    unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

#define MAX_GPUS 16
#define MAX_MIG 7

struct nvmlDevice_st {
    int is_mig;
    struct nvmlDevice_st *parent;
    char uuid[96];
    char name[96];
    char pci[32];
    unsigned long long memory_mib;
    unsigned minor;
    int cc_major, cc_minor;
    int mig_capable;
    unsigned mig_current, mig_pending;
    int lost;
    unsigned gi, ci, gi_slices, ci_slices, sms;
    unsigned n_mig;
    struct nvmlDevice_st *mig[MAX_MIG];
};

static struct {
    int refs;
    char driver[80];
    int cuda;
    unsigned n_gpus;
    struct nvmlDevice_st gpus[MAX_GPUS];
    struct nvmlDevice_st migs[MAX_GPUS * MAX_MIG];
    unsigned n_migs;
    char error[512];
} fake;

/* The exported functions (declared here: no NVIDIA header). */
#define EXPORT __attribute__((visibility("default")))
EXPORT const char *nvmlErrorString(nvmlReturn_t rc);
EXPORT nvmlReturn_t nvmlShutdown(void);
EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned length);
EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned length);
EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned length);
EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t dev, unsigned *minor);
EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t dev, int *major, int *minor);
EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *mem);
EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t dev, unsigned *current, unsigned *pending);
EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t dev, unsigned *count);
EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t dev, unsigned index,
                                                       nvmlDevice_t *mig);
EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t dev, unsigned *id);
EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t dev, unsigned *id);
#ifdef FAKE_NVML_OLD
EXPORT nvmlReturn_t nvmlInit(void);
EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version);
EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned *count);
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned index, nvmlDevice_t *dev);
EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t dev, nvmlPciInfo_t *pci);
#else
EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned flags);
EXPORT nvmlReturn_t nvmlInit_v2(void);
EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version);
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count);
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *dev);
EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t *pci);
EXPORT nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t dev, nvmlDeviceAttributes_t *attr);
#endif

static nvmlReturn_t parse_fail(const char *file, int line, const char *what)
{
    snprintf(fake.error, sizeof fake.error, "fake NVML: %s:%d: %s", file, line, what);
    return NVML_ERROR_UNKNOWN;
}

static void copy(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src);
}

/* Parse an unsigned decimal; 0 on success. */
static int num(const char *s, unsigned long long max, unsigned long long *out)
{
    if (!*s)
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno || v > max || *s == '-')
        return -1;
    *out = v;
    return 0;
}

static nvmlReturn_t parse_gpu(char *rest, const char *file, int ln)
{
    if (fake.n_gpus >= MAX_GPUS)
        return parse_fail(file, ln, "more than 16 gpus");
    struct nvmlDevice_st *g = &fake.gpus[fake.n_gpus];
    memset(g, 0, sizeof *g);
    int have_uuid = 0, have_name = 0, have_memory = 0;
    char *p = rest;
    while (*p) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        if (strncmp(p, "name=", 5) == 0) {
            copy(g->name, sizeof g->name, p + 5);
            have_name = 1;
            break;
        }
        char *tok = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
        if (*p)
            *p++ = '\0';
        unsigned long long v;
        if (strcmp(tok, "lost") == 0) {
            g->lost = 1;
        } else if (strncmp(tok, "uuid=", 5) == 0 && tok[5]) {
            copy(g->uuid, sizeof g->uuid, tok + 5);
            have_uuid = 1;
        } else if (strncmp(tok, "memory=", 7) == 0) {
            if (num(tok + 7, 1ull << 40, &v))
                return parse_fail(file, ln, "memory= wants MiB as an unsigned integer");
            g->memory_mib = v;
            have_memory = 1;
        } else if (strncmp(tok, "pci=", 4) == 0) {
            copy(g->pci, sizeof g->pci, tok + 4);
        } else if (strncmp(tok, "minor=", 6) == 0) {
            if (num(tok + 6, 255, &v))
                return parse_fail(file, ln, "minor= wants 0..255");
            g->minor = (unsigned)v;
        } else if (strncmp(tok, "cc=", 3) == 0) {
            if (sscanf(tok + 3, "%d.%d", &g->cc_major, &g->cc_minor) != 2 || g->cc_major < 0 ||
                g->cc_minor < 0)
                return parse_fail(file, ln, "cc= wants <major>.<minor>");
        } else if (strncmp(tok, "mig=", 4) == 0) {
            if (num(tok + 4, 1, &v))
                return parse_fail(file, ln, "mig= wants 0 or 1");
            g->mig_capable = 1;
            g->mig_current = (unsigned)v;
        } else if (strncmp(tok, "mig-pending=", 12) == 0) {
            if (num(tok + 12, 1, &v))
                return parse_fail(file, ln, "mig-pending= wants 0 or 1");
            g->mig_capable = 1;
            g->mig_pending = (unsigned)v;
        } else {
            return parse_fail(file, ln, "unknown gpu field (uuid= memory= pci= minor= cc= mig= "
                                        "mig-pending= lost name=)");
        }
    }
    if (!have_uuid || !have_name || !have_memory)
        return parse_fail(file, ln, "gpu needs uuid=, memory= and name= (last)");
    fake.n_gpus++;
    return NVML_SUCCESS;
}

static nvmlReturn_t parse_mig(char *rest, const char *file, int ln)
{
    if (fake.n_gpus == 0)
        return parse_fail(file, ln, "mig before any gpu");
    struct nvmlDevice_st *g = &fake.gpus[fake.n_gpus - 1];
    if (g->n_mig >= MAX_MIG)
        return parse_fail(file, ln, "more than 7 mig devices on one gpu");
    struct nvmlDevice_st *m = &fake.migs[fake.n_migs];
    memset(m, 0, sizeof *m);
    m->is_mig = 1;
    m->parent = g;
    int have_uuid = 0;
    for (char *save = NULL, *tok = strtok_r(rest, " \t", &save); tok;
         tok = strtok_r(NULL, " \t", &save)) {
        unsigned long long v;
        char *eq = strchr(tok, '=');
        if (!eq)
            return parse_fail(file, ln, "mig fields are key=value");
        *eq = '\0';
        const char *key = tok, *val = eq + 1;
        if (strcmp(key, "uuid") == 0 && *val) {
            copy(m->uuid, sizeof m->uuid, val);
            have_uuid = 1;
            continue;
        }
        if (num(val, 1ull << 40, &v))
            return parse_fail(file, ln, "mig field value is not an unsigned integer");
        if (strcmp(key, "gi") == 0)
            m->gi = (unsigned)v;
        else if (strcmp(key, "ci") == 0)
            m->ci = (unsigned)v;
        else if (strcmp(key, "memory") == 0)
            m->memory_mib = v;
        else if (strcmp(key, "gi-slices") == 0)
            m->gi_slices = (unsigned)v;
        else if (strcmp(key, "ci-slices") == 0)
            m->ci_slices = (unsigned)v;
        else if (strcmp(key, "sms") == 0)
            m->sms = (unsigned)v;
        else
            return parse_fail(file, ln, "unknown mig field (uuid gi ci memory gi-slices "
                                        "ci-slices sms)");
    }
    if (!have_uuid)
        return parse_fail(file, ln, "mig needs uuid=");
    g->mig[g->n_mig++] = m;
    fake.n_migs++;
    return NVML_SUCCESS;
}

static nvmlReturn_t load(void)
{
    memset(&fake, 0, sizeof fake);
    const char *file = getenv("GS_FAKE_NVML");
    if (!file || !*file) {
        copy(fake.error, sizeof fake.error, "fake NVML: GS_FAKE_NVML is not set");
        return NVML_ERROR_LIBRARY_NOT_FOUND;
    }
    FILE *f = fopen(file, "r");
    if (!f)
        return parse_fail(file, 0, strerror(errno));
    char line[1024];
    int ln = 0;
    nvmlReturn_t rc = NVML_SUCCESS;
    while (rc == NVML_SUCCESS && fgets(line, sizeof line, f)) {
        ln++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            rc = parse_fail(file, ln, "line too long");
            break;
        }
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' '))
            line[--len] = '\0';
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p || *p == '#')
            continue;
        char *kw = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
        if (*p)
            *p++ = '\0';
        while (*p == ' ' || *p == '\t')
            p++;
        if (strcmp(kw, "driver") == 0) {
            if (!*p || strchr(p, ' '))
                rc = parse_fail(file, ln, "driver wants one version string");
            else
                copy(fake.driver, sizeof fake.driver, p);
        } else if (strcmp(kw, "cuda") == 0) {
            unsigned long long v;
            if (num(p, 1000000, &v))
                rc = parse_fail(file, ln, "cuda wants an integer such as 12040");
            else
                fake.cuda = (int)v;
        } else if (strcmp(kw, "gpu") == 0) {
            rc = parse_gpu(p, file, ln);
        } else if (strcmp(kw, "mig") == 0) {
            rc = parse_mig(p, file, ln);
        } else {
            rc = parse_fail(file, ln, "unknown statement (driver, cuda, gpu, mig)");
        }
    }
    fclose(f);
    return rc;
}

static nvmlReturn_t init(void)
{
    if (fake.refs > 0) {
        fake.refs++;
        return NVML_SUCCESS;
    }
    nvmlReturn_t rc = load();
    if (rc == NVML_SUCCESS)
        fake.refs = 1;
    return rc;
}

const char *nvmlErrorString(nvmlReturn_t rc)
{
    switch (rc) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
    case NVML_ERROR_UNKNOWN: return fake.error[0] ? fake.error : "Unknown Error";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlShutdown(void)
{
    if (fake.refs <= 0)
        return NVML_ERROR_UNINITIALIZED;
    fake.refs--;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned length)
{
    if (fake.refs <= 0)
        return NVML_ERROR_UNINITIALIZED;
    if (!version)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!fake.driver[0])
        return NVML_ERROR_NOT_SUPPORTED;
    if (strlen(fake.driver) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    copy(version, length, fake.driver);
    return NVML_SUCCESS;
}

static nvmlReturn_t cuda_version(int *version)
{
    if (fake.refs <= 0)
        return NVML_ERROR_UNINITIALIZED;
    if (!version)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!fake.cuda)
        return NVML_ERROR_NOT_SUPPORTED;
    *version = fake.cuda;
    return NVML_SUCCESS;
}

static nvmlReturn_t count(unsigned *n)
{
    if (fake.refs <= 0)
        return NVML_ERROR_UNINITIALIZED;
    if (!n)
        return NVML_ERROR_INVALID_ARGUMENT;
    *n = fake.n_gpus;
    return NVML_SUCCESS;
}

static nvmlReturn_t handle(unsigned index, nvmlDevice_t *dev)
{
    if (fake.refs <= 0)
        return NVML_ERROR_UNINITIALIZED;
    if (!dev || index >= fake.n_gpus)
        return NVML_ERROR_INVALID_ARGUMENT;
    *dev = &fake.gpus[index];
    return NVML_SUCCESS;
}

/* The checks every device call makes: initialised, a handle, the GPU not lost. */
static nvmlReturn_t dev_ok(nvmlDevice_t dev, const void *out)
{
    if (fake.refs <= 0)
        return NVML_ERROR_UNINITIALIZED;
    if (!dev || !out)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct nvmlDevice_st *g = dev->is_mig ? dev->parent : dev;
    if (g->lost)
        return NVML_ERROR_GPU_IS_LOST;
    return NVML_SUCCESS;
}

static nvmlReturn_t pci_info(nvmlDevice_t dev, nvmlPciInfo_t *pci, int legacy)
{
    nvmlReturn_t rc = dev_ok(dev, pci);
    if (rc != NVML_SUCCESS)
        return rc;
    if (dev->is_mig)
        dev = dev->parent;
    if (legacy) {
        /* the legacy struct: busId[16] first, then the ids; nothing beyond 52 bytes */
        /* with the legacy format's 4-digit domain ("%04X:%02X:%02X.0") */
        memset(pci, 0, 52);
        const char *id = dev->pci;
        if (strlen(id) == 16 && id[8] == ':')
            id += 4;
        copy(pci->busIdLegacy, sizeof pci->busIdLegacy, id);
    } else {
        memset(pci, 0, sizeof *pci);
        copy(pci->busIdLegacy, sizeof pci->busIdLegacy, dev->pci);
        copy(pci->busId, sizeof pci->busId, dev->pci);
    }
    pci->pciDeviceId = 0x233010DEu;
    return NVML_SUCCESS;
}

#ifdef FAKE_NVML_OLD
nvmlReturn_t nvmlInit(void) { return init(); }
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version) { return cuda_version(version); }
nvmlReturn_t nvmlDeviceGetCount(unsigned *n) { return count(n); }
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned index, nvmlDevice_t *dev)
{
    return handle(index, dev);
}
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
    return pci_info(dev, pci, 1);
}
#else
nvmlReturn_t nvmlInitWithFlags(unsigned flags) { return init(); }
nvmlReturn_t nvmlInit_v2(void) { return init(); }
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version) { return cuda_version(version); }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n) { return count(n); }
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *dev)
{
    return handle(index, dev);
}
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
    return pci_info(dev, pci, 0);
}
nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t dev, nvmlDeviceAttributes_t *attr)
{
    nvmlReturn_t rc = dev_ok(dev, attr);
    if (rc != NVML_SUCCESS)
        return rc;
    if (!dev->is_mig)
        return NVML_ERROR_NOT_SUPPORTED; /* attributes are a MIG-handle query here */
    memset(attr, 0, sizeof *attr);
    attr->multiprocessorCount = dev->sms;
    attr->gpuInstanceSliceCount = dev->gi_slices;
    attr->computeInstanceSliceCount = dev->ci_slices;
    attr->memorySizeMB = dev->memory_mib;
    return NVML_SUCCESS;
}
#endif

static nvmlReturn_t str_out(const char *s, char *buf, unsigned length)
{
    if (strlen(s) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    copy(buf, length, s);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned length)
{
    nvmlReturn_t rc = dev_ok(dev, name);
    if (rc != NVML_SUCCESS)
        return rc;
    return str_out(dev->is_mig ? dev->parent->name : dev->name, name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned length)
{
    nvmlReturn_t rc = dev_ok(dev, uuid);
    return rc != NVML_SUCCESS ? rc : str_out(dev->uuid, uuid, length);
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t dev, unsigned *minor)
{
    nvmlReturn_t rc = dev_ok(dev, minor);
    if (rc != NVML_SUCCESS)
        return rc;
    if (dev->is_mig)
        return NVML_ERROR_NOT_SUPPORTED;
    *minor = dev->minor;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t dev, int *major, int *minor)
{
    nvmlReturn_t rc = dev_ok(dev, major);
    if (rc != NVML_SUCCESS)
        return rc;
    if (!minor)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct nvmlDevice_st *g = dev->is_mig ? dev->parent : dev;
    *major = g->cc_major;
    *minor = g->cc_minor;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *mem)
{
    nvmlReturn_t rc = dev_ok(dev, mem);
    if (rc != NVML_SUCCESS)
        return rc;
    mem->total = dev->memory_mib << 20;
    mem->used = 0;
    mem->free = mem->total;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t dev, unsigned *current, unsigned *pending)
{
    nvmlReturn_t rc = dev_ok(dev, current);
    if (rc != NVML_SUCCESS)
        return rc;
    if (!pending)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (dev->is_mig || !dev->mig_capable)
        return NVML_ERROR_NOT_SUPPORTED;
    *current = dev->mig_current;
    *pending = dev->mig_pending;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t dev, unsigned *n)
{
    nvmlReturn_t rc = dev_ok(dev, n);
    if (rc != NVML_SUCCESS)
        return rc;
    if (dev->is_mig)
        return NVML_ERROR_NOT_SUPPORTED;
    *n = dev->mig_capable ? MAX_MIG : 0;
    return NVML_SUCCESS;
}

/* With fewer than 7 MIG devices index 1 is a hole (NOT_FOUND) and the rest follow from 2,
 * as after a destroyed instance: callers must skip holes. */
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t dev, unsigned index,
                                                nvmlDevice_t *mig)
{
    nvmlReturn_t rc = dev_ok(dev, mig);
    if (rc != NVML_SUCCESS)
        return rc;
    if (dev->is_mig || !dev->mig_capable)
        return NVML_ERROR_NOT_SUPPORTED;
    if (index >= MAX_MIG)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned k = index;
    if (dev->n_mig < MAX_MIG && index >= 1) {
        if (index == 1)
            return NVML_ERROR_NOT_FOUND;
        k = index - 1;
    }
    if (k >= dev->n_mig)
        return NVML_ERROR_NOT_FOUND;
    *mig = dev->mig[k];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t dev, unsigned *id)
{
    nvmlReturn_t rc = dev_ok(dev, id);
    if (rc != NVML_SUCCESS)
        return rc;
    if (!dev->is_mig)
        return NVML_ERROR_NOT_SUPPORTED;
    *id = dev->gi;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t dev, unsigned *id)
{
    nvmlReturn_t rc = dev_ok(dev, id);
    if (rc != NVML_SUCCESS)
        return rc;
    if (!dev->is_mig)
        return NVML_ERROR_NOT_SUPPORTED;
    *id = dev->ci;
    return NVML_SUCCESS;
}
