/* fake_nvml.c - a fake libnvidia-ml.so.1 for the agent's tests: the subset of the NVML ABI
 * that lib/agent/nvml.c calls, driven by a scenario file. Loaded through the same dlopen path
 * as the real library. Built twice (tests/CMakeLists.txt):
 *   fake_nvml      the current symbol names (nvmlInitWithFlags, nvmlInit_v2,
 *                  nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2,
 *                  nvmlDeviceGetPciInfo_v3, nvmlSystemGetCudaDriverVersion_v2,
 *                  nvmlDeviceGetMemoryInfo_v2, nvmlDeviceGetNumaNodeId,
 *                  nvmlDeviceGetNvLinkRemotePciInfo_v2, nvmlEventSetWait_v2, ...);
 *   fake_nvml_old  (-DFAKE_NVML_OLD) an old driver: only the unversioned nvmlInit,
 *                  nvmlDeviceGetCount, nvmlDeviceGetHandleByIndex, nvmlDeviceGetPciInfo and
 *                  nvmlDeviceGetNvLinkRemotePciInfo (legacy struct, busId[16] at offset 0,
 *                  "0000:07:00.0"), nvmlSystemGetCudaDriverVersion, nvmlEventSetWait (the old
 *                  24-byte event data, no GI/CI ids), and no nvmlDeviceGetAttributes_v2,
 *                  nvmlDeviceGetMemoryInfo_v2 or nvmlDeviceGetNumaNodeId (NUMA comes from
 *                  sysfs then).
 *
 * Scenario: the file named by the environment variable GS_FAKE_NVML, read by each first
 * nvmlInit* (init is reference counted, as NVML's is). One statement a line; '#' starts a
 * comment line; blank lines are ignored. Tokens are separated by blanks; `name=` must be
 * the last token of a `gpu` line and takes the rest of the line (GPU names have spaces).
 *
 *   driver <version>                 e.g. driver 550.107.02
 *   cuda <int>                       e.g. cuda 12040 (12.4)
 *   gpu uuid=<s> memory=<MiB> pci=<bus id> minor=<n> cc=<major>.<minor> [mig=<0|1>]
 *       [mig-pending=<0|1>] [lost] [arch=<n>] [numa=<n>] [nvlink=<bus id|->,...]
 *       [util=<%>] [memutil=<%>] [fbused=<MiB>] [fbreserved=<MiB>] [temp=<C>] [power=<mW>]
 *       [energy=<mJ>] [ecc-sbe=<n>] [ecc-dbe=<n>] [remap=<corr>,<unc>,<pending>,<failure>]
 *       [sm-clock=<MHz>] [mem-clock=<MHz>] [replay=<n>] [events=none|fail]
 *       name=<model, rest of line>
 *   mig uuid=<s> gi=<n> ci=<n> memory=<MiB> [gi-slices=<n>] [ci-slices=<n>] [sms=<n>]
 *       [ce=<n>] [dec=<n>] [enc=<n>] [jpg=<n>] [ofa=<n>] [fbused=<MiB>]
 *                                    a MIG device of the last gpu (at most 7 per GPU)
 *   xid gpu=<index> code=<n> [gi=<id> ci=<id>]
 *                                    an XID event (nvmlEventTypeXidCriticalError)
 *   wait-error <NVML return code>    nvmlEventSetWait returns it (e.g. 999, 15)
 *
 * `lost` makes every call on that GPU after its handle return NVML_ERROR_GPU_IS_LOST (15),
 * as a GPU that fell off the bus does. A GPU without mig= is not MIG-capable
 * (nvmlDeviceGetMigMode: NOT_SUPPORTED). A sensor not given is NOT_SUPPORTED (the agent
 * reports -1); utilization is NOT_SUPPORTED on a MIG-enabled GPU, as NVML's is. nvlink=
 * lists links 0, 1, ... in order: a bus id is an active link to that peer, `-` an inactive
 * link; links past the list answer INVALID_ARGUMENT, a GPU without nvlink= NOT_SUPPORTED.
 * events=none: nvmlDeviceGetSupportedEventTypes is NOT_SUPPORTED; events=fail:
 * nvmlDeviceRegisterEvents fails with NVML_ERROR_UNKNOWN. At most 16 GPUs, 64 xid lines.
 *
 * Live scenario: nvmlDeviceGetHandleByIndex*, nvmlDeviceGetHandleByUUID and nvmlEventSetWait*
 * stat the file and read it again when its mtime, size or inode changed (tests replace it
 * with rename(2) to change values, make a GPU lost and un-lost). Each successful re-read is
 * a new generation: its xid lines are delivered again, once each, in file order, by
 * nvmlEventSetWait* to a set where that GPU is registered for XID events (an xid for a GPU
 * not so registered is dropped). The wait polls the file every 20 ms up to its timeout and
 * then returns NVML_ERROR_TIMEOUT. A re-read that fails to parse keeps the last good state.
 * Handles stay valid across re-reads (same GPU index, same MIG position).
 *
 * A missing variable gives NVML_ERROR_LIBRARY_NOT_FOUND at init; a file that cannot be read
 * or parsed gives NVML_ERROR_UNKNOWN (999), and nvmlErrorString(999) then says which line
 * and why ("fake NVML: <file>:<line>: ..."). Nothing is printed.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_UNKNOWN = 999,
};

#define EV_SBE 0x1ull
#define EV_DBE 0x2ull
#define EV_XID 0x8ull

typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
    unsigned version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

typedef struct {
    unsigned gpu, memory;
} nvmlUtilization_t;

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

typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType, eventData;
    unsigned gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

#define MAX_GPUS 16
#define MAX_MIG 7
#define MAX_XID 64
#define MAX_LINKS 18
#define MAX_SETS 8

struct nvmlDevice_st {
    int is_mig;
    struct nvmlDevice_st *parent;
    int parent_index, mig_index[MAX_MIG]; /* positions, to rebuild the pointers on a copy */
    char uuid[96];
    char name[96];
    char pci[32];
    unsigned long long memory_mib;
    unsigned minor;
    int cc_major, cc_minor;
    int mig_capable;
    unsigned mig_current, mig_pending;
    int lost;
    unsigned gi, ci, gi_slices, ci_slices, sms, ce, dec, enc, jpg, ofa;
    unsigned n_mig;
    struct nvmlDevice_st *mig[MAX_MIG];
    /* sensors: -1 = not given (NOT_SUPPORTED) */
    long long arch, numa, util, memutil, temp, power, energy, ecc_sbe, ecc_dbe, sm_clock,
        mem_clock, replay, remap[4];
    unsigned long long fbused, fbreserved;
    int n_links; /* -1: no NVLink (NOT_SUPPORTED) */
    char link[MAX_LINKS][32]; /* "" inactive */
    int events; /* 0 ok, 1 none, 2 fail */
};

typedef struct {
    unsigned gpu, code, gi, ci;
} xid_line;

typedef struct {
    char driver[80];
    int cuda;
    unsigned n_gpus;
    struct nvmlDevice_st gpus[MAX_GPUS];
    struct nvmlDevice_st migs[MAX_GPUS * MAX_MIG];
    unsigned n_migs;
    unsigned n_xids;
    xid_line xids[MAX_XID];
    int wait_error;
} scenario;

struct nvmlEventSet_st {
    int used;
    unsigned long long mask[MAX_GPUS];
};

static struct {
    int refs;
    scenario cur, next;
    char path[1024];
    struct stat st;        /* of the file last read successfully */
    unsigned generation;   /* successful reads */
    unsigned xid_next;     /* the next xid line of this generation to deliver */
    struct nvmlEventSet_st sets[MAX_SETS];
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
EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *dev);
EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t dev, unsigned *arch);
EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned link, unsigned *active);
EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *u);
EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned *temp);
EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned *mw);
EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t dev, unsigned long long *mj);
EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, int type, int counter,
                                               unsigned long long *count);
EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t dev, unsigned *corr, unsigned *unc,
                                             unsigned *pending, unsigned *failure);
EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned *mhz);
EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t dev, unsigned *count);
EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set);
EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t dev, unsigned long long *types);
EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t dev, unsigned long long types,
                                            nvmlEventSet_t set);
EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set);
#ifdef FAKE_NVML_OLD
EXPORT nvmlReturn_t nvmlInit(void);
EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version);
EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned *count);
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned index, nvmlDevice_t *dev);
EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t dev, nvmlPciInfo_t *pci);
EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t dev, unsigned link,
                                                    nvmlPciInfo_t *pci);
EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned ms);
#else
EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned flags);
EXPORT nvmlReturn_t nvmlInit_v2(void);
EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version);
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count);
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *dev);
EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t *pci);
EXPORT nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t dev, nvmlDeviceAttributes_t *attr);
EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *mem);
EXPORT nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t dev, unsigned *node);
EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t dev, unsigned link,
                                                       nvmlPciInfo_t *pci);
EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned ms);
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

static void sensors_unset(struct nvmlDevice_st *d)
{
    d->arch = d->numa = d->util = d->memutil = d->temp = d->power = d->energy = -1;
    d->ecc_sbe = d->ecc_dbe = d->sm_clock = d->mem_clock = d->replay = -1;
    d->remap[0] = d->remap[1] = d->remap[2] = d->remap[3] = -1;
    d->n_links = -1;
}

/* A `key=<unsigned>` sensor of a gpu line; 1 when tok was one, -1 on a bad value. */
static int sensor(const char *tok, struct nvmlDevice_st *g)
{
    static const struct {
        const char *key;
        size_t off;
    } keys[] = {
        {"arch=", offsetof(struct nvmlDevice_st, arch)},
        {"numa=", offsetof(struct nvmlDevice_st, numa)},
        {"util=", offsetof(struct nvmlDevice_st, util)},
        {"memutil=", offsetof(struct nvmlDevice_st, memutil)},
        {"temp=", offsetof(struct nvmlDevice_st, temp)},
        {"power=", offsetof(struct nvmlDevice_st, power)},
        {"energy=", offsetof(struct nvmlDevice_st, energy)},
        {"ecc-sbe=", offsetof(struct nvmlDevice_st, ecc_sbe)},
        {"ecc-dbe=", offsetof(struct nvmlDevice_st, ecc_dbe)},
        {"sm-clock=", offsetof(struct nvmlDevice_st, sm_clock)},
        {"mem-clock=", offsetof(struct nvmlDevice_st, mem_clock)},
        {"replay=", offsetof(struct nvmlDevice_st, replay)},
    };
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        size_t len = strlen(keys[k].key);
        if (strncmp(tok, keys[k].key, len) != 0)
            continue;
        unsigned long long v;
        if (num(tok + len, 1ull << 62, &v))
            return -1;
        *(long long *)(void *)((char *)g + keys[k].off) = (long long)v;
        return 1;
    }
    return 0;
}

static nvmlReturn_t parse_gpu(scenario *sc, char *rest, const char *file, int ln)
{
    if (sc->n_gpus >= MAX_GPUS)
        return parse_fail(file, ln, "more than 16 gpus");
    struct nvmlDevice_st *g = &sc->gpus[sc->n_gpus];
    memset(g, 0, sizeof *g);
    sensors_unset(g);
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
        int sr = sensor(tok, g);
        if (sr < 0)
            return parse_fail(file, ln, "a sensor value is not an unsigned integer");
        if (sr > 0)
            continue;
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
        } else if (strncmp(tok, "fbused=", 7) == 0) {
            if (num(tok + 7, 1ull << 40, &v))
                return parse_fail(file, ln, "fbused= wants MiB");
            g->fbused = v;
        } else if (strncmp(tok, "fbreserved=", 11) == 0) {
            if (num(tok + 11, 1ull << 40, &v))
                return parse_fail(file, ln, "fbreserved= wants MiB");
            g->fbreserved = v;
        } else if (strncmp(tok, "remap=", 6) == 0) {
            unsigned a, b, c, d;
            char extra;
            if (sscanf(tok + 6, "%u,%u,%u,%u%c", &a, &b, &c, &d, &extra) != 4)
                return parse_fail(file, ln, "remap= wants <corr>,<unc>,<pending>,<failure>");
            g->remap[0] = a, g->remap[1] = b, g->remap[2] = c, g->remap[3] = d;
        } else if (strncmp(tok, "nvlink=", 7) == 0) {
            g->n_links = 0;
            for (char *save = NULL, *l = strtok_r(tok + 7, ",", &save); l;
                 l = strtok_r(NULL, ",", &save)) {
                if (g->n_links >= MAX_LINKS)
                    return parse_fail(file, ln, "more than 18 nvlinks");
                copy(g->link[g->n_links++], sizeof g->link[0], strcmp(l, "-") == 0 ? "" : l);
            }
        } else if (strncmp(tok, "events=", 7) == 0) {
            if (strcmp(tok + 7, "none") == 0)
                g->events = 1;
            else if (strcmp(tok + 7, "fail") == 0)
                g->events = 2;
            else
                return parse_fail(file, ln, "events= wants none or fail");
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
                                        "mig-pending= lost, sensors, nvlink= events= name=)");
        }
    }
    if (!have_uuid || !have_name || !have_memory)
        return parse_fail(file, ln, "gpu needs uuid=, memory= and name= (last)");
    g->parent_index = (int)sc->n_gpus;
    sc->n_gpus++;
    return NVML_SUCCESS;
}

static nvmlReturn_t parse_mig(scenario *sc, char *rest, const char *file, int ln)
{
    if (sc->n_gpus == 0)
        return parse_fail(file, ln, "mig before any gpu");
    struct nvmlDevice_st *g = &sc->gpus[sc->n_gpus - 1];
    if (g->n_mig >= MAX_MIG)
        return parse_fail(file, ln, "more than 7 mig devices on one gpu");
    struct nvmlDevice_st *m = &sc->migs[sc->n_migs];
    memset(m, 0, sizeof *m);
    sensors_unset(m);
    m->is_mig = 1;
    m->parent_index = (int)(sc->n_gpus - 1);
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
        else if (strcmp(key, "fbused") == 0)
            m->fbused = v;
        else if (strcmp(key, "gi-slices") == 0)
            m->gi_slices = (unsigned)v;
        else if (strcmp(key, "ci-slices") == 0)
            m->ci_slices = (unsigned)v;
        else if (strcmp(key, "sms") == 0)
            m->sms = (unsigned)v;
        else if (strcmp(key, "ce") == 0)
            m->ce = (unsigned)v;
        else if (strcmp(key, "dec") == 0)
            m->dec = (unsigned)v;
        else if (strcmp(key, "enc") == 0)
            m->enc = (unsigned)v;
        else if (strcmp(key, "jpg") == 0)
            m->jpg = (unsigned)v;
        else if (strcmp(key, "ofa") == 0)
            m->ofa = (unsigned)v;
        else
            return parse_fail(file, ln, "unknown mig field (uuid gi ci memory fbused gi-slices "
                                        "ci-slices sms ce dec enc jpg ofa)");
    }
    if (!have_uuid)
        return parse_fail(file, ln, "mig needs uuid=");
    g->mig_index[g->n_mig++] = (int)sc->n_migs;
    sc->n_migs++;
    return NVML_SUCCESS;
}

static nvmlReturn_t parse_xid(scenario *sc, char *rest, const char *file, int ln)
{
    if (sc->n_xids >= MAX_XID)
        return parse_fail(file, ln, "more than 64 xid lines");
    xid_line *x = &sc->xids[sc->n_xids];
    x->gi = x->ci = 0xFFFFFFFFu;
    int have_gpu = 0, have_code = 0;
    for (char *save = NULL, *tok = strtok_r(rest, " \t", &save); tok;
         tok = strtok_r(NULL, " \t", &save)) {
        unsigned long long v;
        char *eq = strchr(tok, '=');
        if (!eq || num(eq + 1, 0xffffffffull, &v))
            return parse_fail(file, ln, "xid fields are key=<unsigned>");
        *eq = '\0';
        if (strcmp(tok, "gpu") == 0)
            x->gpu = (unsigned)v, have_gpu = 1;
        else if (strcmp(tok, "code") == 0)
            x->code = (unsigned)v, have_code = 1;
        else if (strcmp(tok, "gi") == 0)
            x->gi = (unsigned)v;
        else if (strcmp(tok, "ci") == 0)
            x->ci = (unsigned)v;
        else
            return parse_fail(file, ln, "unknown xid field (gpu code gi ci)");
    }
    if (!have_gpu || !have_code)
        return parse_fail(file, ln, "xid needs gpu= and code=");
    sc->n_xids++;
    return NVML_SUCCESS;
}

/* Parse file into sc; NVML_SUCCESS or UNKNOWN with fake.error set. */
static nvmlReturn_t parse(scenario *sc, const char *file)
{
    memset(sc, 0, sizeof *sc);
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
        unsigned long long v;
        if (strcmp(kw, "driver") == 0) {
            if (!*p || strchr(p, ' '))
                rc = parse_fail(file, ln, "driver wants one version string");
            else
                copy(sc->driver, sizeof sc->driver, p);
        } else if (strcmp(kw, "cuda") == 0) {
            if (num(p, 1000000, &v))
                rc = parse_fail(file, ln, "cuda wants an integer such as 12040");
            else
                sc->cuda = (int)v;
        } else if (strcmp(kw, "gpu") == 0) {
            rc = parse_gpu(sc, p, file, ln);
        } else if (strcmp(kw, "mig") == 0) {
            rc = parse_mig(sc, p, file, ln);
        } else if (strcmp(kw, "xid") == 0) {
            rc = parse_xid(sc, p, file, ln);
        } else if (strcmp(kw, "wait-error") == 0) {
            if (num(p, 999, &v) || v == 0)
                rc = parse_fail(file, ln, "wait-error wants an NVML return code 1..999");
            else
                sc->wait_error = (int)v;
        } else {
            rc = parse_fail(file, ln, "unknown statement (driver, cuda, gpu, mig, xid, "
                                      "wait-error)");
        }
    }
    fclose(f);
    return rc;
}

/* Copy fake.next over fake.cur in place (handles into cur stay valid) and rebuild the
 * pointers between GPUs and their MIG devices. */
static void commit(void)
{
    fake.cur = fake.next;
    scenario *sc = &fake.cur;
    for (unsigned i = 0; i < sc->n_gpus; i++)
        for (unsigned k = 0; k < sc->gpus[i].n_mig; k++)
            sc->gpus[i].mig[k] = &sc->migs[sc->gpus[i].mig_index[k]];
    for (unsigned j = 0; j < sc->n_migs; j++)
        sc->migs[j].parent = &sc->gpus[sc->migs[j].parent_index];
    fake.generation++;
    fake.xid_next = 0;
}

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static nvmlReturn_t load(void)
{
    memset(&fake.cur, 0, sizeof fake.cur);
    const char *file = getenv("GS_FAKE_NVML");
    if (!file || !*file) {
        copy(fake.error, sizeof fake.error, "fake NVML: GS_FAKE_NVML is not set");
        return NVML_ERROR_LIBRARY_NOT_FOUND;
    }
    copy(fake.path, sizeof fake.path, file);
    struct stat st;
    if (stat(file, &st) != 0)
        memset(&st, 0, sizeof st);
    nvmlReturn_t rc = parse(&fake.next, file);
    if (rc != NVML_SUCCESS)
        return rc;
    fake.st = st;
    commit();
    return NVML_SUCCESS;
}

/* The live scenario: read the file again when it changed. Cheap when it did not (one stat). */
static void maybe_reload(void)
{
    if (fake.refs <= 0 || !fake.path[0])
        return;
    struct stat st;
    if (stat(fake.path, &st) != 0 || same_file(&st, &fake.st))
        return;
    char saved[sizeof fake.error];
    copy(saved, sizeof saved, fake.error);
    if (parse(&fake.next, fake.path) != NVML_SUCCESS) {
        copy(fake.error, sizeof fake.error, saved); /* keep the last good state; retry later */
        return;
    }
    fake.st = st;
    commit();
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
    if (!fake.cur.driver[0])
        return NVML_ERROR_NOT_SUPPORTED;
    if (strlen(fake.cur.driver) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    copy(version, length, fake.cur.driver);
    return NVML_SUCCESS;
}

static nvmlReturn_t cuda_version(int *version)
{
    if (fake.refs <= 0)
        return NVML_ERROR_UNINITIALIZED;
    if (!version)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!fake.cur.cuda)
        return NVML_ERROR_NOT_SUPPORTED;
    *version = fake.cur.cuda;
    return NVML_SUCCESS;
}

static nvmlReturn_t count(unsigned *n)
{
    if (fake.refs <= 0)
        return NVML_ERROR_UNINITIALIZED;
    if (!n)
        return NVML_ERROR_INVALID_ARGUMENT;
    *n = fake.cur.n_gpus;
    return NVML_SUCCESS;
}

static nvmlReturn_t handle(unsigned index, nvmlDevice_t *dev)
{
    if (fake.refs <= 0)
        return NVML_ERROR_UNINITIALIZED;
    maybe_reload();
    if (!dev || index >= fake.cur.n_gpus)
        return NVML_ERROR_INVALID_ARGUMENT;
    *dev = &fake.cur.gpus[index];
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
    attr->sharedCopyEngineCount = dev->ce;
    attr->sharedDecoderCount = dev->dec;
    attr->sharedEncoderCount = dev->enc;
    attr->sharedJpegCount = dev->jpg;
    attr->sharedOfaCount = dev->ofa;
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
    mem->used = (dev->fbused + dev->fbreserved) << 20; /* v1 counts reserved as used */
    mem->free = mem->total > mem->used ? mem->total - mem->used : 0;
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

/* ---- the live scenario's additions: handles by UUID, sensors, NVLink, events ---- */

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *dev)
{
    if (fake.refs <= 0)
        return NVML_ERROR_UNINITIALIZED;
    if (!uuid || !dev)
        return NVML_ERROR_INVALID_ARGUMENT;
    maybe_reload();
    scenario *sc = &fake.cur;
    for (unsigned i = 0; i < sc->n_gpus; i++) {
        if (strcmp(sc->gpus[i].uuid, uuid) == 0) {
            *dev = &sc->gpus[i];
            return NVML_SUCCESS;
        }
        for (unsigned k = 0; k < sc->gpus[i].n_mig; k++)
            if (strcmp(sc->gpus[i].mig[k]->uuid, uuid) == 0) {
                *dev = sc->gpus[i].mig[k];
                return NVML_SUCCESS;
            }
    }
    return NVML_ERROR_NOT_FOUND;
}

/* A whole-GPU sensor: NOT_SUPPORTED on MIG handles and when the scenario does not give it. */
static nvmlReturn_t gpu_value(nvmlDevice_t dev, const void *out, long long v)
{
    nvmlReturn_t rc = dev_ok(dev, out);
    if (rc != NVML_SUCCESS)
        return rc;
    if (dev->is_mig || v < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t dev, unsigned *arch)
{
    nvmlReturn_t rc = gpu_value(dev, arch, dev ? dev->arch : -1);
    if (rc == NVML_SUCCESS)
        *arch = (unsigned)dev->arch;
    return rc;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned link, unsigned *active)
{
    nvmlReturn_t rc = gpu_value(dev, active, dev ? dev->n_links : -1);
    if (rc != NVML_SUCCESS)
        return rc;
    if (link >= (unsigned)dev->n_links)
        return NVML_ERROR_INVALID_ARGUMENT;
    *active = dev->link[link][0] != '\0';
    return NVML_SUCCESS;
}

static nvmlReturn_t link_pci(nvmlDevice_t dev, unsigned link, nvmlPciInfo_t *pci, int legacy)
{
    nvmlReturn_t rc = gpu_value(dev, pci, dev ? dev->n_links : -1);
    if (rc != NVML_SUCCESS)
        return rc;
    if (link >= (unsigned)dev->n_links)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->link[link][0])
        return NVML_ERROR_NOT_FOUND;
    const char *id = dev->link[link];
    if (legacy) {
        memset(pci, 0, 52);
        if (strlen(id) == 16 && id[8] == ':')
            id += 4;
        copy(pci->busIdLegacy, sizeof pci->busIdLegacy, id);
    } else {
        memset(pci, 0, sizeof *pci);
        copy(pci->busIdLegacy, sizeof pci->busIdLegacy, id);
        copy(pci->busId, sizeof pci->busId, id);
    }
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *u)
{
    nvmlReturn_t rc = gpu_value(dev, u, dev ? dev->util : -1);
    if (rc != NVML_SUCCESS)
        return rc;
    if (dev->mig_current == 1)
        return NVML_ERROR_NOT_SUPPORTED; /* "not supported on MIG-enabled GPUs" (nvml.h) */
    u->gpu = (unsigned)dev->util;
    u->memory = dev->memutil >= 0 ? (unsigned)dev->memutil : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor_type, unsigned *temp)
{
    nvmlReturn_t rc = gpu_value(dev, temp, dev ? dev->temp : -1);
    if (rc != NVML_SUCCESS)
        return rc;
    if (sensor_type != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    *temp = (unsigned)dev->temp;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned *mw)
{
    nvmlReturn_t rc = gpu_value(dev, mw, dev ? dev->power : -1);
    if (rc == NVML_SUCCESS)
        *mw = (unsigned)dev->power;
    return rc;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t dev, unsigned long long *mj)
{
    nvmlReturn_t rc = gpu_value(dev, mj, dev ? dev->energy : -1);
    if (rc == NVML_SUCCESS)
        *mj = (unsigned long long)dev->energy;
    return rc;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, int type, int counter,
                                         unsigned long long *count)
{
    long long v = !dev ? -1 : type == 0 ? dev->ecc_sbe : type == 1 ? dev->ecc_dbe : -2;
    if (v == -2 || (counter != 0 && counter != 1))
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t rc = gpu_value(dev, count, v);
    if (rc == NVML_SUCCESS)
        *count = (unsigned long long)v;
    return rc;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t dev, unsigned *corr, unsigned *unc,
                                       unsigned *pending, unsigned *failure)
{
    nvmlReturn_t rc = gpu_value(dev, corr, dev ? dev->remap[0] : -1);
    if (rc != NVML_SUCCESS)
        return rc;
    if (!unc || !pending || !failure)
        return NVML_ERROR_INVALID_ARGUMENT;
    *corr = (unsigned)dev->remap[0];
    *unc = (unsigned)dev->remap[1];
    *pending = (unsigned)dev->remap[2];
    *failure = (unsigned)dev->remap[3];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned *mhz)
{
    long long v = !dev ? -1 : type == 1 ? dev->sm_clock : type == 2 ? dev->mem_clock : -1;
    nvmlReturn_t rc = gpu_value(dev, mhz, v);
    if (rc == NVML_SUCCESS)
        *mhz = (unsigned)v;
    return rc;
}

nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t dev, unsigned *count)
{
    nvmlReturn_t rc = gpu_value(dev, count, dev ? dev->replay : -1);
    if (rc == NVML_SUCCESS)
        *count = (unsigned)dev->replay;
    return rc;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    if (fake.refs <= 0)
        return NVML_ERROR_UNINITIALIZED;
    if (!set)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < MAX_SETS; i++)
        if (!fake.sets[i].used) {
            memset(&fake.sets[i], 0, sizeof fake.sets[i]);
            fake.sets[i].used = 1;
            *set = &fake.sets[i];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_UNKNOWN;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    if (!set || !set->used)
        return NVML_ERROR_INVALID_ARGUMENT;
    set->used = 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t dev, unsigned long long *types)
{
    nvmlReturn_t rc = dev_ok(dev, types);
    if (rc != NVML_SUCCESS)
        return rc;
    if (dev->is_mig || dev->events == 1)
        return NVML_ERROR_NOT_SUPPORTED;
    *types = EV_SBE | EV_DBE | EV_XID | 0x4ull /* PState */;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t dev, unsigned long long types,
                                      nvmlEventSet_t set)
{
    nvmlReturn_t rc = dev_ok(dev, set);
    if (rc != NVML_SUCCESS)
        return rc;
    if (dev->is_mig || dev->events == 1)
        return NVML_ERROR_NOT_SUPPORTED;
    if (dev->events == 2) {
        copy(fake.error, sizeof fake.error, "fake NVML: registration refused (events=fail)");
        return NVML_ERROR_UNKNOWN;
    }
    set->mask[dev - fake.cur.gpus] |= types;
    return NVML_SUCCESS;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Deliver the next xid line of this generation for a GPU registered in set; bytes: how much
 * of nvmlEventData_t the caller's version has (24 old, 32 v2). */
static nvmlReturn_t event_wait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned ms,
                               size_t bytes)
{
    if (fake.refs <= 0)
        return NVML_ERROR_UNINITIALIZED;
    if (!set || !set->used || !data)
        return NVML_ERROR_INVALID_ARGUMENT;
    long long deadline = now_ms() + ms;
    for (;;) {
        maybe_reload();
        scenario *sc = &fake.cur;
        if (sc->wait_error) {
            if (sc->wait_error == NVML_ERROR_UNKNOWN)
                copy(fake.error, sizeof fake.error, "fake NVML: wait-error 999");
            return sc->wait_error;
        }
        while (fake.xid_next < sc->n_xids) {
            const xid_line *x = &sc->xids[fake.xid_next++];
            if (x->gpu >= sc->n_gpus || !(set->mask[x->gpu] & EV_XID))
                continue; /* not registered: dropped, as NVML does not queue it */
            nvmlEventData_t d = {&sc->gpus[x->gpu], EV_XID, x->code, x->gi, x->ci};
            memcpy(data, &d, bytes);
            return NVML_SUCCESS;
        }
        long long left = deadline - now_ms();
        if (left <= 0)
            return NVML_ERROR_TIMEOUT;
        sleep_ms(left < 20 ? left : 20);
    }
}

#ifdef FAKE_NVML_OLD
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t dev, unsigned link, nvmlPciInfo_t *pci)
{
    return link_pci(dev, link, pci, 1);
}
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned ms)
{
    return event_wait(set, data, ms, 24);
}
#else
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t dev, unsigned link,
                                                 nvmlPciInfo_t *pci)
{
    return link_pci(dev, link, pci, 0);
}
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned ms)
{
    return event_wait(set, data, ms, sizeof *data);
}
nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t dev, unsigned *node)
{
    nvmlReturn_t rc = gpu_value(dev, node, dev ? dev->numa : -1);
    if (rc == NVML_SUCCESS)
        *node = (unsigned)dev->numa;
    return rc;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *mem)
{
    nvmlReturn_t rc = dev_ok(dev, mem);
    if (rc != NVML_SUCCESS)
        return rc;
    if (mem->version != (unsigned)(sizeof *mem | (2u << 24)))
        return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
    mem->total = dev->memory_mib << 20;
    mem->reserved = dev->fbreserved << 20;
    mem->used = dev->fbused << 20;
    unsigned long long taken = mem->used + mem->reserved;
    mem->free = mem->total > taken ? mem->total - taken : 0;
    return NVML_SUCCESS;
}
#endif
