/*
 * assign.c - the device assignment record gpusched.io/assignment (include/gpusched/
 * assign.h, docs/extender.md "The assignment record"): built from the engine's
 * placement, written as compact JSON, read back strictly, and checked against a node's
 * inventory. The one rule that ties them together is the pod's accounting per device
 * (derive()): what the containers hold, combined as the kubelet combines effective
 * requests. The encoder proves it equals the engine's placement before it returns.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gpu_int.h"
#include "gpusched/assign.h"
#include "util/json_int.h"

#define FILE_NAME GS_ASSIGN_ANNOTATION
#define NANOS ((__int128)1000000000)

/* ---------------------------------------------------------------- names */
static const char *const kind_names[] = {NULL, "whole", "share", "mig"};
static const char *const conv_names[] = {NULL,       "nvidia",  "gpusched", "hami",
                                         "kai",      "gpushare", "openb",   "volcano",
                                         "volcano-vgpu"};
static const char *const role_names[] = {"app", "init", "sidecar"};

const char *gs_assign_kind_name(gs_gpu_kind k)
{
    return (unsigned)k < sizeof kind_names / sizeof *kind_names ? kind_names[k] : NULL;
}

const char *gs_assign_conv_name(gs_gpu_conv c)
{
    return (unsigned)c < sizeof conv_names / sizeof *conv_names ? conv_names[c] : NULL;
}

/* ---------------------------------------------------------------- syntax */
static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* 8-4-4-4-12 hex digits at s (exactly 36 characters read) */
static bool uuid36(const char *s)
{
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !is_hex(s[i]))
            return false;
    }
    return true;
}

static bool pod_uid_ok(const char *s)
{
    return strnlen(s, 40) == 36 && uuid36(s);
}

static bool digits_only(const char *s, size_t n)
{
    if (n == 0 || n > 5)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* GPU-<uuid>, MIG-<uuid>, MIG-GPU-<uuid>/<gi>/<ci> (NVML's forms, nvidia.md 3.1) */
static bool dev_uuid_ok(const char *s)
{
    size_t n = strnlen(s, 64);
    if (n == 40 && (strncmp(s, "GPU-", 4) == 0 || strncmp(s, "MIG-", 4) == 0))
        return uuid36(s + 4);
    if (n > 45 && n < 64 && strncmp(s, "MIG-GPU-", 8) == 0 && uuid36(s + 8) && s[44] == '/') {
        const char *gi = s + 45, *slash = strchr(gi, '/');
        return slash && digits_only(gi, (size_t)(slash - gi)) &&
               digits_only(slash + 1, strlen(slash + 1));
    }
    return false;
}

static bool dns_char(char c, bool dot)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || (dot && c == '.');
}

/* DNS label (dot = false, <= 63) or subdomain (dot = true, <= 253) */
static bool dns_ok(const char *s, size_t max, bool dot)
{
    size_t n = strnlen(s, max + 1);
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!dns_char(s[i], dot))
            return false;
    return s[0] != '-' && s[0] != '.' && s[n - 1] != '-' && s[n - 1] != '.';
}

static bool profile_ok(const char *s)
{
    size_t n = strnlen(s, 32);
    if (n == 0 || n > 31 || s[0] < '1' || s[0] > '9')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '.' ||
              s[i] == '+' || s[i] == '-'))
            return false;
    return true;
}

static bool resource_ok(const char *s)
{
    size_t n = strnlen(s, 64);
    const char *slash = memchr(s, '/', n);
    if (n == 0 || n > 63 || !slash || slash == s || slash == s + n - 1)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_' || c == '/'))
            return false;
    }
    return strchr(slash + 1, '/') == NULL;
}

/* ---------------------------------------------------------------- errors */
/* Where an error points inside the record: container ci, device di (-1 = none), field. */
typedef struct where {
    int ci, di;
    const char *field;
} where;

static void path_of(const where *w, char *buf, size_t cap)
{
    if (w->ci < 0)
        snprintf(buf, cap, "%s", w->field ? w->field : "");
    else if (w->di < 0)
        snprintf(buf, cap, "containers[%d]%s%s", w->ci, w->field ? "." : "",
                 w->field ? w->field : "");
    else
        snprintf(buf, cap, "containers[%d].devices[%d]%s%s", w->ci, w->di, w->field ? "." : "",
                 w->field ? w->field : "");
}

static int fail_at(gs_error *err, gs_code code, int line, int col, const where *w,
                   const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int fail_at(gs_error *err, gs_code code, int line, int col, const where *w,
                   const char *fmt, ...)
{
    if (!err)
        return -1;
    char path[GS_ERR_PATH_MAX];
    path_of(w, path, sizeof path);
    va_list ap;
    va_start(ap, fmt);
    gs_error_setv(err, code, line ? FILE_NAME : NULL, line, col, path, fmt, ap);
    va_end(ap);
    return -1;
}

#define FAIL(err, code, w, ...) fail_at((err), (code), 0, 0, (w), __VA_ARGS__)

/* ---------------------------------------------------------------- structural rules */
/* Every rule a record must satisfy on its own (no inventory). On failure *w says where. */
static int validate(const gs_assign_record *rec, where *w, gs_error *err)
{
    *w = (where){-1, -1, NULL};
    w->field = "v";
    if (rec->major != GS_ASSIGN_MAJOR)
        return FAIL(err, GS_ERR_INVALID, w,
                    "unsupported record version %u.%u (this reader knows %u.x)", rec->major,
                    rec->minor, GS_ASSIGN_MAJOR);
    w->field = "node";
    if (!dns_ok(rec->node, 253, true))
        return FAIL(err, GS_ERR_INVALID, w, "\"%.64s\" is not a node name (DNS subdomain)",
                    rec->node);
    w->field = "uid";
    if (!pod_uid_ok(rec->uid))
        return FAIL(err, GS_ERR_INVALID, w,
                    "\"%.40s\" is not a pod UID (36-character UUID)", rec->uid);
    w->field = "time";
    if (rec->time < 0 || rec->time > 253402300799LL)
        return FAIL(err, GS_ERR_INVALID, w, "time %lld is out of range", (long long)rec->time);
    w->field = "kind";
    if (!gs_assign_kind_name(rec->kind))
        return FAIL(err, GS_ERR_INVALID, w, "kind must be whole, share or mig");
    w->field = "containers";
    if (rec->nctr == 0 || rec->nctr > GS_ASSIGN_MAX_CONTAINERS)
        return FAIL(err, GS_ERR_LIMIT, w, "%u containers: between 1 and %d expected", rec->nctr,
                    GS_ASSIGN_MAX_CONTAINERS);
    /* distinct devices of the whole pod, to fit one gs_gpu_assign */
    uint16_t keys[GS_ASSIGN_MAX_CONTAINERS * GS_ASSIGN_MAX_DEVICES];
    uint32_t nkeys = 0;
    bool seen_app = false;
    for (uint16_t c = 0; c < rec->nctr; c++) {
        const gs_assign_ctr *ct = &rec->ctr[c];
        *w = (where){c, -1, "name"};
        if (!dns_ok(ct->name, 63, false))
            return FAIL(err, GS_ERR_INVALID, w,
                        "\"%.64s\" is not a container name (DNS label)", ct->name);
        for (uint16_t k = 0; k < c; k++)
            if (strcmp(rec->ctr[k].name, ct->name) == 0)
                return FAIL(err, GS_ERR_INVALID, w, "container %s is listed twice", ct->name);
        w->field = "role";
        if ((unsigned)ct->role > GS_ASSIGN_SIDECAR)
            return FAIL(err, GS_ERR_INVALID, w, "role must be app, init or sidecar");
        if (ct->role == GS_ASSIGN_APP)
            seen_app = true;
        else if (seen_app)
            return FAIL(err, GS_ERR_INVALID, w,
                        "init container %s after an app container: init containers come first, "
                        "in declaration order", ct->name);
        w->field = "devices";
        if (ct->ndev == 0 || ct->ndev > GS_ASSIGN_MAX_DEVICES)
            return FAIL(err, GS_ERR_LIMIT, w, "%u devices: between 1 and %d expected", ct->ndev,
                        GS_ASSIGN_MAX_DEVICES);
        for (uint8_t d = 0; d < ct->ndev; d++) {
            const gs_assign_dev *dv = &ct->dev[d];
            *w = (where){c, d, "gpu"};
            if (dv->gpu > GS_ASSIGN_MAX_GPU)
                return FAIL(err, GS_ERR_INVALID, w, "GPU index %u is out of range 0..%d",
                            dv->gpu, GS_ASSIGN_MAX_GPU);
            w->field = "uuid";
            if (dv->uuid[0] && !dev_uuid_ok(dv->uuid))
                return FAIL(err, GS_ERR_INVALID, w,
                            "\"%.64s\" is not a GPU or MIG UUID (GPU-<uuid>, MIG-<uuid>)",
                            dv->uuid);
            if (dv->uuid[0] && (strncmp(dv->uuid, "MIG-", 4) == 0) != dv->mig)
                return FAIL(err, GS_ERR_INVALID, w, "%s UUID on a %s device", dv->mig ? "GPU" : "MIG",
                            dv->mig ? "MIG" : "non-MIG");
            w->field = "milli";
            if (dv->milli > 1000)
                return FAIL(err, GS_ERR_INVALID, w, "milli %u is out of range 0..1000", dv->milli);
            w->field = "replicas";
            if (dv->replicas > GS_ASSIGN_MAX_REPLICAS)
                return FAIL(err, GS_ERR_INVALID, w, "replicas %u is out of range 0..%d",
                            dv->replicas, GS_ASSIGN_MAX_REPLICAS);
            w->field = "mig";
            if (dv->mig) {
                if (rec->kind == GS_GPU_SHARE)
                    return FAIL(err, GS_ERR_INVALID, w, "a MIG device in a share record");
                if (dv->milli || dv->mem_mib || dv->replicas)
                    return FAIL(err, GS_ERR_INVALID, w,
                                "a MIG device takes the whole instance: no milli, mem, replicas");
                w->field = "mig.profile";
                if (!profile_ok(dv->mig_profile))
                    return FAIL(err, GS_ERR_INVALID, w, "\"%.32s\" is not a MIG profile name",
                                dv->mig_profile);
                w->field = "mig.start";
                if (dv->mig_start > 7)
                    return FAIL(err, GS_ERR_INVALID, w, "start %u is out of range 0..7",
                                dv->mig_start);
                w->field = "mig.resource";
                if (dv->mig_resource[0] && !resource_ok(dv->mig_resource))
                    return FAIL(err, GS_ERR_INVALID, w, "\"%.64s\" is not a resource name",
                                dv->mig_resource);
            } else if (rec->kind == GS_GPU_MIG) {
                return FAIL(err, GS_ERR_INVALID, w, "a mig record whose device is not a MIG instance");
            }
            uint16_t key = (uint16_t)(dv->gpu << 4 | (dv->mig ? dv->mig_start : 0xf));
            w->field = NULL;
            for (uint8_t e = 0; e < d; e++) {
                const gs_assign_dev *o = &ct->dev[e];
                if (o->gpu == dv->gpu && o->mig == dv->mig &&
                    (!dv->mig || o->mig_start == dv->mig_start))
                    return FAIL(err, GS_ERR_INVALID, w,
                                "GPU %u%s is listed twice for container %s", dv->gpu,
                                dv->mig ? " (same MIG instance)" : "", ct->name);
            }
            /* a device listed by two containers must be described alike */
            for (uint16_t k = 0; k < c; k++)
                for (uint8_t e = 0; e < rec->ctr[k].ndev; e++) {
                    const gs_assign_dev *o = &rec->ctr[k].dev[e];
                    if (o->gpu != dv->gpu || o->mig != dv->mig ||
                        (dv->mig && o->mig_start != dv->mig_start))
                        continue;
                    if (strcmp(o->uuid, dv->uuid) != 0 ||
                        (dv->mig && (strcmp(o->mig_profile, dv->mig_profile) != 0 ||
                                     strcmp(o->mig_resource, dv->mig_resource) != 0)))
                        return FAIL(err, GS_ERR_INVALID, w,
                                    "GPU %u is described differently for containers %s and %s",
                                    dv->gpu, rec->ctr[k].name, ct->name);
                }
            bool known = false;
            for (uint32_t k = 0; k < nkeys && !known; k++)
                known = keys[k] == key;
            if (!known) {
                if (nkeys >= GS_ASSIGN_MAX_DEVICES)
                    return FAIL(err, GS_ERR_LIMIT, w,
                                "the pod holds more than %d distinct devices",
                                GS_ASSIGN_MAX_DEVICES);
                keys[nkeys++] = key;
            }
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- accounting */
typedef struct acc {
    const gs_assign_dev *dev; /* first description (container c0, device d0) */
    int c0, d0;
    uint32_t side[4], peak[4], app[4]; /* milli, mem, replicas, holders */
} acc;

static void amounts(const gs_assign_dev *d, uint32_t v[4])
{
    v[0] = d->milli;
    v[1] = d->mem_mib;
    v[2] = d->replicas;
    v[3] = 1;
}

/* MIG instance index on g for a record device, or -1 */
static int find_instance(const gs_node_gpus *g, const gs_assign_dev *d)
{
    if (!g->mig_model)
        return -1;
    int pidx = gs_gpu__profile_index(g->mig_model, d->mig_profile, strnlen(d->mig_profile, 32));
    if (pidx < 0)
        return -1;
    for (uint32_t i = 0; i < g->nmig; i++)
        if (g->mig[i].dev == d->gpu && g->mig[i].start == d->mig_start &&
            g->mig[i].profile == pidx)
            return (int)i;
    return -1;
}

/* The name a MIG instance's profile is advertised under on g. */
static void instance_resource(const gs_node_gpus *g, const gs_mig_inst *m, char *buf, size_t cap)
{
    if (g->mig_strategy == GS_MIG_SINGLE) {
        snprintf(buf, cap, "%s", g->resource ? g->resource : "nvidia.com/gpu");
        return;
    }
    for (uint8_t k = 0; k < g->nmig_res && k < 16; k++)
        if (g->mig_res_profile[k] == m->profile && g->mig_res_name[k]) {
            snprintf(buf, cap, "%s", g->mig_res_name[k]);
            return;
        }
    gs_mig_resource_name(&g->mig_model->profiles[m->profile], buf, cap);
}

int gs_assign_check(const gs_assign_record *rec, const gs_node_gpus *g, const char *node,
                    unsigned flags, gs_gpu_assign *out, gs_error *err)
{
    where w;
    if (validate(rec, &w, err))
        return -1;
    w = (where){-1, -1, "node"};
    if (node && strcmp(node, rec->node) != 0)
        return FAIL(err, GS_ERR_INVALID, &w, "the record is for node %s, not %s", rec->node,
                    node);
    acc accs[GS_ASSIGN_MAX_DEVICES];
    uint32_t nacc = 0;
    memset(accs, 0, sizeof accs);
    for (uint16_t c = 0; c < rec->nctr; c++) {
        const gs_assign_ctr *ct = &rec->ctr[c];
        for (uint8_t d = 0; d < ct->ndev; d++) {
            const gs_assign_dev *dv = &ct->dev[d];
            w = (where){c, d, "gpu"};
            if (dv->gpu >= g->ndevs)
                return FAIL(err, GS_ERR_NOTFOUND, &w, "node %s has no GPU %u (%u GPUs)",
                            rec->node, dv->gpu, g->ndevs);
            const gs_gpu_dev *gd = &g->devs[dv->gpu];
            const char *inv_uuid = g->dev_uuid ? g->dev_uuid[dv->gpu] : NULL;
            w.field = "uuid";
            if (!dv->mig && dv->uuid[0] && inv_uuid && dev_uuid_ok(inv_uuid) &&
                strcmp(inv_uuid, dv->uuid) != 0)
                return FAIL(err, GS_ERR_INVALID, &w, "GPU %u of node %s is %s, not %s", dv->gpu,
                            rec->node, inv_uuid, dv->uuid);
            w.field = "mig";
            if (dv->mig) {
                if (!(gd->flags & GS_DEV_MIG_ENABLED) || find_instance(g, dv) < 0)
                    return FAIL(err, GS_ERR_NOTFOUND, &w,
                                "GPU %u of node %s has no MIG %s instance at start %u",
                                dv->gpu, rec->node, dv->mig_profile, dv->mig_start);
                char res[64];
                instance_resource(g, &g->mig[find_instance(g, dv)], res, sizeof res);
                if (dv->mig_resource[0] && strcmp(res, dv->mig_resource) != 0)
                    return FAIL(err, GS_ERR_INVALID, &w,
                                "the instance is advertised as %s on node %s, not %s", res,
                                rec->node, dv->mig_resource);
            } else if (gd->flags & GS_DEV_MIG_ENABLED) {
                return FAIL(err, GS_ERR_INVALID, &w,
                            "GPU %u of node %s is MIG-enabled: only its MIG instances can be "
                            "assigned", dv->gpu, rec->node);
            }
            acc *a = NULL;
            for (uint32_t k = 0; k < nacc && !a; k++)
                if (accs[k].dev->gpu == dv->gpu && accs[k].dev->mig == dv->mig &&
                    (!dv->mig || accs[k].dev->mig_start == dv->mig_start))
                    a = &accs[k];
            if (!a) {
                a = &accs[nacc++]; /* validate() bounds the distinct devices */
                a->dev = dv;
                a->c0 = c;
                a->d0 = d;
            }
            uint32_t v[4];
            amounts(dv, v);
            for (int f = 0; f < 4; f++) {
                if (ct->role == GS_ASSIGN_SIDECAR)
                    a->side[f] += v[f];
                else if (ct->role == GS_ASSIGN_APP)
                    a->app[f] += v[f];
                else if (v[f] + a->side[f] > a->peak[f])
                    a->peak[f] = v[f] + a->side[f];
            }
        }
    }
    gs_gpu_assign pa;
    memset(&pa, 0, sizeof pa);
    for (uint32_t k = 0; k < nacc; k++) {
        acc *a = &accs[k];
        uint32_t tot[4];
        for (int f = 0; f < 4; f++) {
            uint32_t run = a->app[f] + a->side[f];
            tot[f] = run > a->peak[f] ? run : a->peak[f];
        }
        const gs_assign_dev *dv = a->dev;
        const gs_gpu_dev *gd = &g->devs[dv->gpu];
        w = (where){a->c0, a->d0, NULL};
        uint16_t mig = GS_GPU__NO_MIG;
        if (dv->mig) {
            int mi = find_instance(g, dv);
            if (tot[3] > 1)
                return FAIL(err, GS_ERR_INVALID, &w,
                            "MIG instance %s at start %u of GPU %u is held by %u containers "
                            "at once", dv->mig_profile, dv->mig_start, dv->gpu, tot[3]);
            if ((flags & GS_ASSIGN_CHECK_FREE) && g->mig[mi].used)
                return FAIL(err, GS_ERR_INVALID, &w,
                            "MIG instance %s at start %u of GPU %u is already in use",
                            dv->mig_profile, dv->mig_start, dv->gpu);
            mig = (uint16_t)mi;
        } else {
            bool fr = flags & GS_ASSIGN_CHECK_FREE;
            uint32_t mu = fr ? gd->milli_used : 0, bu = fr ? gd->mem_used : 0,
                     su = fr ? gd->slots_used : 0;
            w.field = "milli";
            if (tot[0] + mu > 1000)
                return FAIL(err, GS_ERR_INVALID, &w,
                            "GPU %u is over-committed: %u milli%s + %u held by this pod > 1000",
                            dv->gpu, mu, fr ? " in use" : "", tot[0]);
            w.field = "mem";
            if (gd->mem_mib ? tot[1] + bu > gd->mem_mib : tot[1] > 0)
                return FAIL(err, GS_ERR_INVALID, &w,
                            "GPU %u is over-committed: %u MiB%s + %u MiB held by this pod > "
                            "%u MiB%s", dv->gpu, bu, fr ? " in use" : "", tot[1], gd->mem_mib,
                            gd->mem_mib ? "" : " (memory unknown)");
            w.field = "replicas";
            uint32_t slots = gd->slots ? gd->slots : 1;
            if (tot[2] + su > slots)
                return FAIL(err, GS_ERR_INVALID, &w,
                            "GPU %u is over-committed: %u replicas%s + %u held by this pod > %u",
                            dv->gpu, su, fr ? " in use" : "", tot[2], slots);
            if (fr && g->sharing == GS_SHARING_VGPU && gd->npods >= slots)
                return FAIL(err, GS_ERR_INVALID, &w, "GPU %u already holds %u pods (split %u)",
                            dv->gpu, gd->npods, slots);
        }
        uint8_t i = pa.n++;
        pa.dev[i] = dv->gpu;
        pa.mig[i] = mig;
        pa.milli[i] = (uint16_t)tot[0];
        pa.mem[i] = tot[1];
        pa.slots[i] = (uint16_t)tot[2];
    }
    if (out)
        *out = pa;
    return 0;
}

/* ---------------------------------------------------------------- from the engine */
static int64_t whole_units(const gs_container *c, const char *name)
{
    const gs_quantity *q = gs_reslist_get(&c->requests, name);
    return q && q->nanos > 0 ? (int64_t)(q->nanos / NANOS) : 0;
}

static bool has_any(const gs_container *c, const char *const *names)
{
    for (; *names; names++) {
        const gs_quantity *q = gs_reslist_get(&c->requests, *names);
        if (q && q->nanos > 0)
            return true;
    }
    return false;
}

/* Units one container asks for: devices, MIG instances or replicas of the request. */
static int64_t ctr_units(const gs_container *c, const gs_gpu_request *r)
{
    static const char *const hami[] = {"nvidia.com/gpumem", "nvidia.com/gpumem-percentage",
                                       "nvidia.com/gpucores", NULL};
    static const char *const vgpu[] = {"volcano.sh/vgpu-memory", "volcano.sh/vgpu-cores", NULL};
    static const char *const vol[] = {"volcano.sh/gpu-memory", NULL};
    static const char *const gpushare[] = {"aliyun.com/gpu-mem", NULL};
    static const char *const openb[] = {"alibabacloud.com/gpu-milli", NULL};
    int64_t n;
    switch (r->conv) {
    case GS_CONV_NVIDIA: return whole_units(c, r->resource ? r->resource : "nvidia.com/gpu");
    case GS_CONV_HAMI:
        n = whole_units(c, "nvidia.com/gpu");
        return n ? n : has_any(c, hami);
    case GS_CONV_VOLCANO_VGPU:
        n = whole_units(c, "volcano.sh/vgpu-number");
        return n ? n : has_any(c, vgpu);
    case GS_CONV_VOLCANO:
        n = whole_units(c, "volcano.sh/gpu-number");
        return n ? n : has_any(c, vol);
    case GS_CONV_GPUSHARE: return has_any(c, gpushare);
    case GS_CONV_OPENB:
        n = whole_units(c, "alibabacloud.com/gpu-count");
        return n ? n : has_any(c, openb);
    default: return 0; /* annotations: the pod, not a container, asks */
    }
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

int gs_assign_from_pod(const gs_pod *pod, const gs_node_gpus *g, const gs_gpu_request *r,
                       const gs_gpu_assign *a, const char *node, int64_t now,
                       gs_assign_record *out, gs_error *err)
{
    where w = {-1, -1, NULL};
    memset(out, 0, sizeof *out);
    out->major = GS_ASSIGN_MAJOR;
    out->minor = GS_ASSIGN_MINOR;
    copy_str(out->node, sizeof out->node, node);
    copy_str(out->uid, sizeof out->uid, pod->meta.uid);
    out->time = now;
    out->kind = r->kind;
    out->conv = r->conv;
    if (r->kind == GS_GPU_NONE || a->n == 0 || a->n > GS_GPU_ASSIGN_MAX)
        return FAIL(err, GS_ERR_INVALID, &w, "nothing to record: the pod holds no GPU");
    if (pod->ninit + pod->ncontainers == 0)
        return FAIL(err, GS_ERR_INVALID, &w, "the pod has no containers");
    bool split = g->sharing == GS_SHARING_TIME_SLICING || g->sharing == GS_SHARING_MPS;
    /* units of the placement: entry e covers [cum[e], cum[e+1]) */
    uint32_t cum[GS_GPU_ASSIGN_MAX + 1];
    cum[0] = 0;
    for (uint8_t e = 0; e < a->n; e++) {
        if (a->dev[e] >= g->ndevs || (a->mig[e] != GS_GPU__NO_MIG && a->mig[e] >= g->nmig))
            return FAIL(err, GS_ERR_INVALID, &w, "placement entry %u names no device of the node", e);
        bool unit_split = split && a->mig[e] == GS_GPU__NO_MIG && a->slots[e] > 0;
        cum[e + 1] = cum[e] + (unit_split ? a->slots[e] : 1);
    }
    uint32_t total = cum[a->n];
    /* who asks for how many units */
    int64_t sum = 0;
    for (uint32_t i = 0; i < pod->ninit; i++)
        sum += ctr_units(&pod->init_containers[i], r);
    for (uint32_t i = 0; i < pod->ncontainers; i++)
        sum += ctr_units(&pod->containers[i], r);
    const gs_container *primary = NULL;
    if (sum == 0) {
        const char *want = gs_labels_get(&pod->meta.annotations, "gpu-fraction-container-name");
        for (uint32_t i = 0; want && i < pod->ncontainers && !primary; i++)
            if (pod->containers[i].name && strcmp(pod->containers[i].name, want) == 0)
                primary = &pod->containers[i];
        if (!primary && pod->ncontainers)
            primary = &pod->containers[0];
        if (!primary)
            return FAIL(err, GS_ERR_INVALID, &w, "the pod has no app container to give the GPU");
    }
    uint32_t side = 0; /* units of the sidecars declared so far */
    uint32_t side_total = 0;
    for (uint32_t i = 0; i < pod->ninit; i++)
        if (pod->init_containers[i].sidecar)
            side_total += (uint32_t)ctr_units(&pod->init_containers[i], r);
    uint32_t app_next = side_total;
    for (uint32_t pass = 0; pass < 2; pass++) {
        const gs_container *cs = pass ? pod->containers : pod->init_containers;
        uint32_t nc = pass ? pod->ncontainers : pod->ninit;
        for (uint32_t i = 0; i < nc; i++) {
            const gs_container *c = &cs[i];
            uint32_t lo, n;
            if (primary) {
                if (c != primary)
                    continue;
                lo = 0;
                n = total;
            } else {
                n = (uint32_t)ctr_units(c, r);
                if (!n)
                    continue;
                if (pass)
                    lo = app_next, app_next += n;
                else if (c->sidecar)
                    lo = side, side += n;
                else
                    lo = side;
            }
            w = (where){(int)out->nctr, -1, NULL};
            if (lo + n > total)
                return FAIL(err, GS_ERR_INVALID, &w,
                            "container %s asks for %u GPU units from unit %u, the placement "
                            "holds %u", c->name ? c->name : "", n, lo, total);
            if (out->nctr >= GS_ASSIGN_MAX_CONTAINERS)
                return FAIL(err, GS_ERR_LIMIT, &w, "more than %d containers hold a GPU",
                            GS_ASSIGN_MAX_CONTAINERS);
            gs_assign_ctr *ct = &out->ctr[out->nctr++];
            copy_str(ct->name, sizeof ct->name, c->name);
            ct->role = pass ? GS_ASSIGN_APP : c->sidecar ? GS_ASSIGN_SIDECAR : GS_ASSIGN_INIT;
            for (uint8_t e = 0; e < a->n; e++) {
                uint32_t b = cum[e] > lo ? cum[e] : lo;
                uint32_t t = cum[e + 1] < lo + n ? cum[e + 1] : lo + n;
                if (b >= t)
                    continue;
                gs_assign_dev *dv = &ct->dev[ct->ndev++];
                dv->gpu = a->dev[e];
                if (a->mig[e] != GS_GPU__NO_MIG) {
                    const gs_mig_inst *m = &g->mig[a->mig[e]];
                    dv->mig = true;
                    dv->gpu = m->dev;
                    if (g->mig_model && m->profile < g->mig_model->nprofiles)
                        copy_str(dv->mig_profile, sizeof dv->mig_profile,
                                 g->mig_model->profiles[m->profile].name);
                    dv->mig_start = m->start;
                    if (g->mig_model)
                        instance_resource(g, m, dv->mig_resource, sizeof dv->mig_resource);
                } else {
                    const char *u = g->dev_uuid ? g->dev_uuid[a->dev[e]] : NULL;
                    if (u && dev_uuid_ok(u))
                        copy_str(dv->uuid, sizeof dv->uuid, u);
                    bool unit_split = split && a->slots[e] > 0;
                    dv->milli = unit_split ? 0 : a->milli[e];
                    dv->mem_mib = unit_split ? 0 : a->mem[e];
                    dv->replicas = (uint16_t)(unit_split ? t - b : a->slots[e]);
                }
            }
        }
    }
    /* the proof: the record accounts exactly the engine's placement */
    gs_gpu_assign back;
    gs_error e2;
    gs_error_clear(&e2);
    if (gs_assign_check(out, g, NULL, 0, &back, &e2) != 0) {
        if (err)
            *err = e2;
        return -1;
    }
    w = (where){-1, -1, "containers"};
    bool same = back.n == a->n;
    for (uint8_t i = 0; same && i < a->n; i++) {
        bool hit = false;
        for (uint8_t k = 0; k < back.n && !hit; k++)
            hit = back.dev[k] == a->dev[i] && back.mig[k] == a->mig[i] &&
                  back.milli[k] == a->milli[i] && back.mem[k] == a->mem[i] &&
                  back.slots[k] == a->slots[i];
        same = hit;
    }
    if (!same)
        return FAIL(err, GS_ERR_INVALID, &w,
                    "the containers' GPU requests do not add up to the placement (%u units): "
                    "the record would account something else than the scheduler", total);
    return 0;
}

/* ---------------------------------------------------------------- encode */
static void put_time(gs_strbuf *sb, int64_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    char buf[32];
    if (!gmtime_r(&tt, &tm) || strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, sizeof buf, "1970-01-01T00:00:00Z");
    gs_strbuf_json_str(sb, buf);
}

int gs_assign_encode(const gs_assign_record *rec, gs_strbuf *sb, gs_error *err)
{
    where w;
    if (validate(rec, &w, err))
        return -1;
    gs_strbuf_printf(sb, "{\"v\":\"%u.%u\",\"node\":", GS_ASSIGN_MAJOR, GS_ASSIGN_MINOR);
    gs_strbuf_json_str(sb, rec->node);
    gs_strbuf_puts(sb, ",\"uid\":");
    gs_strbuf_json_str(sb, rec->uid);
    gs_strbuf_puts(sb, ",\"time\":");
    put_time(sb, rec->time);
    gs_strbuf_printf(sb, ",\"kind\":\"%s\"", gs_assign_kind_name(rec->kind));
    if (gs_assign_conv_name(rec->conv))
        gs_strbuf_printf(sb, ",\"conv\":\"%s\"", gs_assign_conv_name(rec->conv));
    gs_strbuf_puts(sb, ",\"containers\":[");
    for (uint16_t c = 0; c < rec->nctr; c++) {
        const gs_assign_ctr *ct = &rec->ctr[c];
        gs_strbuf_puts(sb, c ? ",{\"name\":" : "{\"name\":");
        gs_strbuf_json_str(sb, ct->name);
        if (ct->role != GS_ASSIGN_APP)
            gs_strbuf_printf(sb, ",\"role\":\"%s\"", role_names[ct->role]);
        gs_strbuf_puts(sb, ",\"devices\":[");
        for (uint8_t d = 0; d < ct->ndev; d++) {
            const gs_assign_dev *dv = &ct->dev[d];
            gs_strbuf_printf(sb, "%s{\"gpu\":%u", d ? "," : "", dv->gpu);
            if (dv->uuid[0]) {
                gs_strbuf_puts(sb, ",\"uuid\":");
                gs_strbuf_json_str(sb, dv->uuid);
            }
            if (dv->mig) {
                gs_strbuf_puts(sb, ",\"mig\":{\"profile\":");
                gs_strbuf_json_str(sb, dv->mig_profile);
                gs_strbuf_printf(sb, ",\"start\":%u", dv->mig_start);
                if (dv->mig_resource[0]) {
                    gs_strbuf_puts(sb, ",\"resource\":");
                    gs_strbuf_json_str(sb, dv->mig_resource);
                }
                gs_strbuf_putc(sb, '}');
            }
            if (dv->milli)
                gs_strbuf_printf(sb, ",\"milli\":%u", dv->milli);
            if (dv->mem_mib)
                gs_strbuf_printf(sb, ",\"mem\":%u", dv->mem_mib);
            if (dv->replicas)
                gs_strbuf_printf(sb, ",\"replicas\":%u", dv->replicas);
            gs_strbuf_putc(sb, '}');
        }
        gs_strbuf_puts(sb, "]}");
    }
    gs_strbuf_puts(sb, "]}");
    return 0;
}

/* ---------------------------------------------------------------- decode */
typedef struct dctx {
    const char *json;
    gs_error *err;
} dctx;

static int dfail(dctx *x, const gs_jv *v, gs_code code, const where *w, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int dfail(dctx *x, const gs_jv *v, gs_code code, const where *w, const char *fmt, ...)
{
    if (!x->err)
        return -1;
    int line = 0, col = 0;
    if (v)
        gs_json_where(x->json, 1, v, &line, &col);
    char path[GS_ERR_PATH_MAX];
    path_of(w, path, sizeof path);
    va_list ap;
    va_start(ap, fmt);
    gs_error_setv(x->err, code, FILE_NAME, line, col, path, fmt, ap);
    va_end(ap);
    return -1;
}

/* A required or optional member of the given type; NULL when absent (and optional). */
static int member(dctx *x, const gs_jv *obj, const char *key, gs_jtype t, bool required,
                  where w, const gs_jv **out)
{
    *out = NULL;
    const gs_jv *v = gs_json_get(obj, key);
    w.field = key;
    if (!v) {
        if (required)
            return dfail(x, obj, GS_ERR_INVALID, &w, "missing required field \"%s\"", key);
        return 0;
    }
    if (v->t != t)
        return dfail(x, v, GS_ERR_INVALID, &w, "%s expected, got %s", gs_json_type_name(t),
                     gs_json_type_name((gs_jtype)v->t));
    *out = v;
    return 0;
}

static int get_str(dctx *x, const gs_jv *obj, const char *key, bool required, where w,
                   char *dst, size_t cap)
{
    const gs_jv *v;
    if (member(x, obj, key, GS_JSTR, required, w, &v))
        return -1;
    if (!v)
        return 0;
    w.field = key;
    if (v->n >= cap || strlen(v->s) != v->n)
        return dfail(x, v, GS_ERR_INVALID, &w, "string of %u bytes: at most %zu expected", v->n,
                     cap - 1);
    memcpy(dst, v->s, v->n + 1);
    return 0;
}

static int get_int(dctx *x, const gs_jv *obj, const char *key, bool required, int64_t max,
                   where w, int64_t *dst)
{
    const gs_jv *v;
    if (member(x, obj, key, GS_JNUM, required, w, &v))
        return -1;
    if (!v)
        return 0;
    w.field = key;
    int64_t n;
    if (gs_parse_i64(v->s, v->n, &n) || n < 0 || n > max)
        return dfail(x, v, GS_ERR_INVALID, &w, "%.*s: an integer in 0..%lld expected",
                     (int)(v->n > 32 ? 32 : v->n), v->s, (long long)max);
    *dst = n;
    return 0;
}

static int decode_dev(dctx *x, const gs_jv *o, where w, gs_assign_dev *dv)
{
    int64_t n = 0;
    if (get_int(x, o, "gpu", true, GS_ASSIGN_MAX_GPU, w, &n))
        return -1;
    dv->gpu = (uint8_t)n;
    if (get_str(x, o, "uuid", false, w, dv->uuid, sizeof dv->uuid))
        return -1;
    const gs_jv *m;
    if (member(x, o, "mig", GS_JOBJ, false, w, &m))
        return -1;
    if (m) {
        dv->mig = true;
        where wm = w;
        if (get_str(x, m, "profile", true, wm, dv->mig_profile, sizeof dv->mig_profile) ||
            get_int(x, m, "start", true, 7, wm, &n) ||
            get_str(x, m, "resource", false, wm, dv->mig_resource, sizeof dv->mig_resource))
            return -1;
        dv->mig_start = (uint8_t)n;
    }
    n = 0;
    if (get_int(x, o, "milli", false, 1000, w, &n))
        return -1;
    dv->milli = (uint16_t)n;
    n = 0;
    if (get_int(x, o, "mem", false, UINT32_MAX, w, &n))
        return -1;
    dv->mem_mib = (uint32_t)n;
    n = 0;
    if (get_int(x, o, "replicas", false, GS_ASSIGN_MAX_REPLICAS, w, &n))
        return -1;
    dv->replicas = (uint16_t)n;
    return 0;
}

/* the object a validate() location points at */
static const gs_jv *locate(const gs_jv *root, const where *w)
{
    const gs_jv *v = root;
    if (w->ci >= 0) {
        const gs_jv *cs = gs_json_get(root, "containers");
        if (!cs || cs->t != GS_JARR || (uint32_t)w->ci >= cs->n)
            return root;
        v = &cs->kids[w->ci];
        if (w->di >= 0) {
            const gs_jv *ds = gs_json_get(v, "devices");
            if (!ds || ds->t != GS_JARR || (uint32_t)w->di >= ds->n)
                return v;
            v = &ds->kids[w->di];
        }
    }
    if (w->field) {
        char key[32];
        const char *dot = strchr(w->field, '.');
        size_t n = dot ? (size_t)(dot - w->field) : strlen(w->field);
        snprintf(key, sizeof key, "%.*s", (int)n, w->field);
        const gs_jv *f = gs_json_get(v, key);
        if (f && dot)
            f = gs_json_get(f, dot + 1) ? gs_json_get(f, dot + 1) : f;
        if (f)
            v = f;
    }
    return v;
}

int gs_assign_decode(const char *json, size_t len, const char *expect_uid,
                     gs_assign_record *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    if (!json || len > GS_ASSIGN_MAX_BYTES)
        return gs_error_set(err, GS_ERR_LIMIT, FILE_NAME, 0, 0, NULL,
                            "the record is %zu bytes: at most %d expected", json ? len : 0,
                            GS_ASSIGN_MAX_BYTES);
    gs_json_limits lim = {8, 256, 512, true};
    gs_arena ar;
    gs_arena_init(&ar, 0);
    gs_jv root;
    dctx x = {json, err};
    int rc = -1;
    where w = {-1, -1, NULL};
    if (gs_json_parse(FILE_NAME, 1, json, len, &lim, &ar, &root, err))
        goto done;
    if (root.t != GS_JOBJ) {
        dfail(&x, &root, GS_ERR_INVALID, &w, "an object expected, got %s",
              gs_json_type_name((gs_jtype)root.t));
        goto done;
    }
    /* the version first: a newer major may mean anything else */
    const gs_jv *v;
    if (member(&x, &root, "v", GS_JSTR, true, w, &v))
        goto done;
    {
        const char *dot = strchr(v->s, '.');
        int64_t ma = 0, mi = 0;
        w.field = "v";
        if (!dot || gs_parse_i64(v->s, (size_t)(dot - v->s), &ma) ||
            gs_parse_i64(dot + 1, strlen(dot + 1), &mi) || ma < 0 || mi < 0 || ma > 65535 ||
            mi > 65535 || v->s[0] == '+' || v->s[0] == '-' || dot[1] == '+' || dot[1] == '-') {
            dfail(&x, v, GS_ERR_INVALID, &w, "\"%.16s\" is not a version (<major>.<minor>)",
                  v->s);
            goto done;
        }
        if (ma != GS_ASSIGN_MAJOR) {
            dfail(&x, v, GS_ERR_INVALID, &w,
                  "unsupported record version %s (this reader knows %d.x)", v->s,
                  GS_ASSIGN_MAJOR);
            goto done;
        }
        out->major = (uint16_t)ma;
        out->minor = (uint16_t)mi;
    }
    w.field = NULL;
    if (get_str(&x, &root, "node", true, w, out->node, sizeof out->node) ||
        get_str(&x, &root, "uid", true, w, out->uid, sizeof out->uid))
        goto done;
    char tbuf[64];
    if (get_str(&x, &root, "time", true, w, tbuf, sizeof tbuf))
        goto done;
    if (gs_parse_rfc3339(tbuf, &out->time) || out->time < 0) {
        w.field = "time";
        dfail(&x, gs_json_get(&root, "time"), GS_ERR_INVALID, &w,
              "\"%s\" is not an RFC 3339 time", tbuf);
        goto done;
    }
    char kbuf[16];
    if (get_str(&x, &root, "kind", true, w, kbuf, sizeof kbuf))
        goto done;
    for (int k = GS_GPU_WHOLE; k <= GS_GPU_MIG; k++)
        if (strcmp(kbuf, kind_names[k]) == 0)
            out->kind = (gs_gpu_kind)k;
    if (out->kind == GS_GPU_NONE) {
        w.field = "kind";
        dfail(&x, gs_json_get(&root, "kind"), GS_ERR_INVALID, &w,
              "\"%s\": whole, share or mig expected", kbuf);
        goto done;
    }
    /* informative: a convention this reader does not know reads as none */
    char cbuf[32] = "";
    if (get_str(&x, &root, "conv", false, w, cbuf, sizeof cbuf))
        goto done;
    for (size_t k = 1; k < sizeof conv_names / sizeof *conv_names; k++)
        if (strcmp(cbuf, conv_names[k]) == 0)
            out->conv = (gs_gpu_conv)k;
    const gs_jv *cs;
    if (member(&x, &root, "containers", GS_JARR, true, w, &cs))
        goto done;
    w.field = "containers";
    if (cs->n == 0 || cs->n > GS_ASSIGN_MAX_CONTAINERS) {
        dfail(&x, cs, GS_ERR_LIMIT, &w, "%u containers: between 1 and %d expected", cs->n,
              GS_ASSIGN_MAX_CONTAINERS);
        goto done;
    }
    for (uint32_t c = 0; c < cs->n; c++) {
        const gs_jv *co = &cs->kids[c];
        where wc = {(int)c, -1, NULL};
        if (co->t != GS_JOBJ) {
            dfail(&x, co, GS_ERR_INVALID, &wc, "an object expected, got %s",
                  gs_json_type_name((gs_jtype)co->t));
            goto done;
        }
        gs_assign_ctr *ct = &out->ctr[out->nctr++];
        if (get_str(&x, co, "name", true, wc, ct->name, sizeof ct->name))
            goto done;
        char rbuf[16] = "app";
        if (get_str(&x, co, "role", false, wc, rbuf, sizeof rbuf))
            goto done;
        int role = -1;
        for (int k = 0; k < 3; k++)
            if (strcmp(rbuf, role_names[k]) == 0)
                role = k;
        if (role < 0) {
            wc.field = "role";
            dfail(&x, gs_json_get(co, "role"), GS_ERR_INVALID, &wc,
                  "\"%s\": app, init or sidecar expected", rbuf);
            goto done;
        }
        ct->role = (gs_assign_role)role;
        const gs_jv *ds;
        if (member(&x, co, "devices", GS_JARR, true, wc, &ds))
            goto done;
        wc.field = "devices";
        if (ds->n == 0 || ds->n > GS_ASSIGN_MAX_DEVICES) {
            dfail(&x, ds, GS_ERR_LIMIT, &wc, "%u devices: between 1 and %d expected", ds->n,
                  GS_ASSIGN_MAX_DEVICES);
            goto done;
        }
        for (uint32_t d = 0; d < ds->n; d++) {
            where wd = {(int)c, (int)d, NULL};
            if (ds->kids[d].t != GS_JOBJ) {
                dfail(&x, &ds->kids[d], GS_ERR_INVALID, &wd, "an object expected, got %s",
                      gs_json_type_name((gs_jtype)ds->kids[d].t));
                goto done;
            }
            if (decode_dev(&x, &ds->kids[d], wd, &ct->dev[ct->ndev++]))
                goto done;
        }
    }
    if (validate(out, &w, NULL)) {
        /* again with the error, pointing into the document */
        gs_error tmp;
        validate(out, &w, &tmp);
        dfail(&x, locate(&root, &w), tmp.code, &w, "%s", tmp.msg);
        goto done;
    }
    if (expect_uid && strcmp(expect_uid, out->uid) != 0) {
        w = (where){-1, -1, "uid"};
        dfail(&x, gs_json_get(&root, "uid"), GS_ERR_INVALID, &w,
              "the record belongs to pod %s, not to this pod (%.40s): copied records are refused",
              out->uid, expect_uid);
        goto done;
    }
    rc = 0;
done:
    gs_arena_free(&ar);
    return rc;
}

int gs_assign_holds(const char *text, const char *uid, const gs_node_gpus *g, const char *node,
                    gs_assign_record *rec, gs_gpu_assign *out, gs_error *err)
{
    if (gs_assign_decode(text, strlen(text), uid, rec, err) != 0)
        return -1;
    return gs_assign_check(rec, g, node, 0, out, err);
}
