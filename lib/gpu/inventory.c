/*
 * inventory.c - reconstruct a node's physical GPUs (and their MIG instances) from what the
 * NVIDIA stack, gpushare and the openb trace publish on the Node object.
 *
 * Sources, in the order they are consulted (docs/gpu-requests.md "Nodes"):
 *   resources  nvidia.com/gpu (or nvidia.com/gpu.shared when renamed), nvidia.com/mig-<p>,
 *              alibabacloud.com/gpu-count (openb), aliyun.com/gpu-count + aliyun.com/gpu-mem
 *              (gpushare); allocatable first, capacity when allocatable lacks the name.
 *   labels     nvidia.com/gpu.product, .count, .replicas, .sharing-strategy, .memory,
 *              nvidia.com/mig.strategy, nvidia.com/mig-<p>.replicas, nvidia.com/gpu.present,
 *              alibabacloud.com/gpu-card-model.
 * Device order: healthy whole GPUs first, then MIG-enabled GPUs, then unhealthy ones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_int.h"
#include "util/json_int.h"

#define L_PRODUCT "nvidia.com/gpu.product"
#define L_COUNT "nvidia.com/gpu.count"
#define L_REPLICAS "nvidia.com/gpu.replicas"
#define L_SHARING "nvidia.com/gpu.sharing-strategy"
#define L_MEMORY "nvidia.com/gpu.memory"
#define L_PRESENT "nvidia.com/gpu.present"
#define L_MIG_STRATEGY "nvidia.com/mig.strategy"
#define L_CARD_MODEL "alibabacloud.com/gpu-card-model"
#define R_GPU "nvidia.com/gpu"
#define R_GPU_SHARED "nvidia.com/gpu.shared"
#define R_OPENB_COUNT "alibabacloud.com/gpu-count"
#define R_OPENB_MILLI "alibabacloud.com/gpu-milli"
#define R_ALIYUN_COUNT "aliyun.com/gpu-count"
#define R_ALIYUN_MEM "aliyun.com/gpu-mem"
#define MIG_PREFIX "nvidia.com/mig-"
#define R_VOLCANO_NUMBER "volcano.sh/gpu-number"
#define R_VOLCANO_MEM "volcano.sh/gpu-memory"
#define R_VGPU_NUMBER "volcano.sh/vgpu-number"
#define R_VGPU_MEM "volcano.sh/vgpu-memory"
#define A_HAMI_REGISTER "hami.io/node-nvidia-register"
#define A_VGPU_REGISTER "volcano.sh/node-vgpu-register"
#define FAM(f) ((uint16_t)(1u << (f)))
#define HAMI_DEFAULT_SPLIT 10 /* HAMi's deviceSplitCount default */
/* gpushare: a per-GPU aliyun.com/gpu-mem above this many units is MiB, not GiB (no GPU
 * has 512 GiB; the smallest GPU in MiB has more than 512) */
#define GPUSHARE_GIB_MAX 512

/* Values beyond this are certainly more than GS_GPU__MAX_DEVS devices of anything. */
#define VALUE_CAP 1000000000LL

typedef struct build_ctx {
    const gs_node *node;
    gs_error *err;
} build_ctx;

static int node_fail(const build_ctx *c, gs_code code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int node_fail(const build_ctx *c, gs_code code, const char *field, const char *fmt, ...)
{
    if (!c->err)
        return -1;
    char path[GS_ERR_PATH_MAX];
    const char *name = c->node->meta.name ? c->node->meta.name : "";
    snprintf(path, sizeof path, "Node %s%s%s", name, field ? ": " : "", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    gs_error_setv(c->err, code, c->node->meta.src.file, (int)c->node->meta.src.line,
                  (int)c->node->meta.src.col, path, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---------------------------------------------------------------- reading values */
static int quantity_count(const build_ctx *c, const char *list, const char *name,
                          const gs_quantity *q, int64_t *out)
{
    char field[160];
    snprintf(field, sizeof field, "status.%s[%s]", list, name);
    if (q->nanos < 0)
        return node_fail(c, GS_ERR_INVALID, field, "must be greater than or equal to 0");
    if (q->nanos % 1000000000)
        return node_fail(c, GS_ERR_INVALID, field, "must be an integer");
    __int128 v = q->nanos / 1000000000;
    *out = v > VALUE_CAP ? VALUE_CAP : (int64_t)v;
    return 0;
}

/* alloc: allocatable, else capacity; cap: capacity, else allocatable. Both 0 and
 * *present false when the node has neither. */
static int node_res(const build_ctx *c, const char *name, int64_t *alloc, int64_t *cap,
                    bool *present)
{
    const gs_quantity *qa = gs_reslist_get(&c->node->allocatable, name);
    const gs_quantity *qc = gs_reslist_get(&c->node->capacity, name);
    *alloc = *cap = 0;
    if (present)
        *present = qa || qc;
    if (qa && quantity_count(c, "allocatable", name, qa, alloc))
        return -1;
    if (qc && quantity_count(c, "capacity", name, qc, cap))
        return -1;
    if (!qa)
        *alloc = *cap;
    if (!qc)
        *cap = *alloc;
    return 0;
}

/* Integer label in [lo, hi]; *present false when absent. */
static int label_int(const build_ctx *c, const char *key, int64_t lo, int64_t hi, int64_t *out,
                     bool *present)
{
    const char *v = gs_labels_get(&c->node->meta.labels, key);
    *present = v != NULL;
    if (!v)
        return 0;
    char field[160];
    snprintf(field, sizeof field, "metadata.labels[%s]", key);
    size_t n = strnlen(v, 32);
    int64_t x;
    if (n == 0 || n >= 32 || gs_parse_i64(v, n, &x))
        return node_fail(c, GS_ERR_INVALID, field, "\"%.40s\" is not an integer", v);
    if (x < lo || x > hi)
        return node_fail(c, x > hi ? GS_ERR_LIMIT : GS_ERR_INVALID, field,
                         "%lld is out of range [%lld, %lld]", (long long)x, (long long)lo,
                         (long long)hi);
    *out = x;
    return 0;
}

static bool str_ieq(const char *a, const char *b)
{
    return a && gs_gpu__ieq(a, strlen(a), b, strlen(b));
}

/* ---------------------------------------------------------------- MIG profiles */
typedef struct mig_ask {
    char profile[32];
    const char *resource; /* the advertised resource name (snapshot string) */
    uint32_t count;
    int pidx;
} mig_ask;

#define MAX_MIG_NAMES 16

/* Collect nvidia.com/mig-<p> resources (allocatable, then capacity-only names). */
static int collect_mig(const build_ctx *c, mig_ask *asks, uint32_t *nasks, bool *any_present)
{
    *nasks = 0;
    *any_present = false;
    const gs_reslist *lists[2] = {&c->node->allocatable, &c->node->capacity};
    for (int li = 0; li < 2; li++) {
        const gs_reslist *l = lists[li];
        for (uint32_t k = 0; k < l->n; k++) {
            const char *nm = l->items[k].name;
            if (strncmp(nm, MIG_PREFIX, sizeof MIG_PREFIX - 1) != 0)
                continue;
            if (li == 1 && gs_reslist_get(&c->node->allocatable, nm))
                continue; /* already read from allocatable */
            char prof[32];
            if (!gs_mig_parse_resource(nm, prof, sizeof prof))
                continue;
            int64_t v = 0;
            if (quantity_count(c, li ? "capacity" : "allocatable", nm, &l->items[k].q, &v))
                return -1;
            /* the kubelet keeps a resource at 0 after its plugin stops advertising it: a
             * zero is stale, not a MIG signal */
            if (v > 0)
                *any_present = true;
            /* time-sliced MIG devices are advertised `replicas` times each */
            char key[96];
            snprintf(key, sizeof key, "%s.replicas", nm);
            int64_t rep = 1;
            bool has_rep;
            if (label_int(c, key, 1, GS_GPU__MAX_REPLICAS, &rep, &has_rep))
                return -1;
            v = (v + rep - 1) / rep;
            if (v == 0)
                continue;
            if (*nasks >= MAX_MIG_NAMES)
                return node_fail(c, GS_ERR_LIMIT, NULL, "more than %d MIG profiles",
                                 MAX_MIG_NAMES);
            if (v > (int64_t)GS_GPU__MAX_MIG)
                return node_fail(c, GS_ERR_LIMIT, NULL,
                                 "%s: %lld MIG instances (at most %u per node)", nm,
                                 (long long)v, GS_GPU__MAX_MIG);
            mig_ask *a = &asks[(*nasks)++];
            memcpy(a->profile, prof, sizeof a->profile);
            a->resource = nm;
            a->count = (uint32_t)v;
            a->pidx = -1;
        }
    }
    return 0;
}

/* The model whose profiles explain every advertised name exactly (first in catalog
 * order), for nodes without a usable product label. */
static const gs_mig_model *infer_model(const mig_ask *asks, uint32_t nasks)
{
    uint32_t nm;
    const gs_mig_model *ms = gs_mig_models(&nm);
    for (uint32_t i = 0; i < nm; i++) {
        bool all = true;
        for (uint32_t k = 0; k < nasks && all; k++)
            all = gs_mig_profile_find(&ms[i], asks[k].profile) != NULL;
        if (all)
            return &ms[i];
    }
    return NULL;
}

/* One GPU being filled by the layout. */
typedef struct mig_gpu {
    uint8_t pidx[GS_GPU__MAX_MIG_PER_GPU];
    uint8_t start[GS_GPU__MAX_MIG_PER_GPU];
    uint8_t n;
} mig_gpu;

/*
 * Mixed strategy layout: instances are placed largest profile first (memory slices, then
 * compute slices, then catalog order), each on the lowest-index GPU where the whole set
 * of that GPU still has a legal layout (gs_mig_layout_fits, lowest starts first); a new
 * GPU is opened when none has room. First-fit decreasing is deterministic and packs the
 * instances onto few GPUs, which is how mig-parted configs are written.
 */
/*
 * When first-fit decreasing needs more GPUs than the node has (gpu.count says how many
 * carry MIG), search for an assignment onto exactly `target` GPUs: instances in the same
 * widest-first order, each tried on every GPU already holding something plus one empty
 * GPU (empty GPUs are interchangeable), backtracking on gs_mig_layout_fits. Instances of
 * one profile are interchangeable too: each goes on the GPU of the previous one or a later
 * GPU, so no assignment is tried twice under another order. A step budget bounds the
 * search; if it runs out the first-fit result stands. Before searching, the uniform split
 * is tried: when every profile's count divides by the GPU count, the same set on every GPU
 * (how all-balanced and the all-<profile> configs are written). This finds e.g. the
 * all-balanced layout {3g,2g,1g,1g} x 8 that first-fit misses (it fills GPU 0 with 3g+3g
 * and then cannot place the 1g instances).
 */
typedef struct bt_ctx {
    const gs_mig_model *m;
    const uint8_t *items; /* profile index per instance, widest first */
    uint32_t nitems;
    uint8_t *at;          /* GPU each placed instance went to */
    const uint16_t *rest_c, *rest_m; /* compute / memory slices of items k.. */
    uint8_t comp[GS_GPU__MAX_DEVS], mem[GS_GPU__MAX_DEVS]; /* slices taken per GPU */
    mig_gpu *gpus;
    uint32_t target;
    uint32_t used;        /* GPUs holding something */
    uint32_t budget;
} bt_ctx;

static bool bt_place(bt_ctx *b, uint32_t k)
{
    if (k == b->nitems)
        return true;
    if (b->budget == 0)
        return false;
    b->budget--;
    /* capacity bound: a GPU whose memory (compute) slices are all taken cannot use its
     * free compute (memory) slices any more */
    uint32_t free_c = 0, free_m = 0;
    for (uint32_t g = 0; g < b->target; g++) {
        uint32_t fc = b->m->compute_slices - b->comp[g], fm = b->m->memory_slices - b->mem[g];
        if (fc && fm) {
            free_c += fc;
            free_m += fm;
        }
    }
    if (b->rest_c[k] > free_c || b->rest_m[k] > free_m)
        return false;
    uint32_t limit = b->used < b->target ? b->used + 1 : b->target;
    uint32_t from = k > 0 && b->items[k] == b->items[k - 1] ? b->at[k - 1] : 0;
    for (uint32_t g = from; g < limit; g++) {
        mig_gpu *G = &b->gpus[g];
        if (G->n >= GS_GPU__MAX_MIG_PER_GPU)
            continue;
        G->pidx[G->n] = b->items[k];
        if (!gs_mig_layout_fits(b->m, G->pidx, G->n + 1u, G->start))
            continue;
        G->n++;
        b->at[k] = (uint8_t)g;
        const gs_mig_profile *pf = &b->m->profiles[b->items[k]];
        b->comp[g] = (uint8_t)(b->comp[g] + pf->compute);
        b->mem[g] = (uint8_t)(b->mem[g] + pf->mem_slices);
        bool opened = g == b->used;
        if (opened)
            b->used++;
        if (bt_place(b, k + 1))
            return true;
        b->comp[g] = (uint8_t)(b->comp[g] - pf->compute);
        b->mem[g] = (uint8_t)(b->mem[g] - pf->mem_slices);
        G->n--;
        if (opened)
            b->used--;
    }
    return false;
}

static bool layout_exact(const gs_mig_model *m, const mig_ask *asks, uint32_t nasks,
                         uint32_t target, mig_gpu *gpus, uint32_t *ngpus)
{
    uint8_t items[GS_GPU__MAX_MIG];
    uint32_t n = 0;
    for (uint32_t k = 0; k < nasks; k++)
        for (uint32_t i = 0; i < asks[k].count && n < GS_GPU__MAX_MIG; i++)
            items[n++] = (uint8_t)asks[k].pidx;
    if (target == 0 || target > GS_GPU__MAX_DEVS)
        return false;
    mig_gpu trial[GS_GPU__MAX_DEVS];
    memset(trial, 0, sizeof trial);
    /* the uniform split: count / target of every profile on every GPU */
    bool uniform = true;
    uint32_t per = 0;
    for (uint32_t k = 0; k < nasks && uniform; k++) {
        uniform = asks[k].count % target == 0;
        per += asks[k].count / target;
    }
    if (uniform && per > 0 && per <= GS_GPU__MAX_MIG_PER_GPU) {
        mig_gpu one;
        memset(&one, 0, sizeof one);
        for (uint32_t k = 0; k < nasks; k++) /* widest first, as the asks are sorted */
            for (uint32_t i = 0; i < asks[k].count / target; i++)
                one.pidx[one.n++] = (uint8_t)asks[k].pidx;
        if (gs_mig_layout_fits(m, one.pidx, one.n, one.start)) {
            for (uint32_t g = 0; g < target; g++)
                gpus[g] = one;
            *ngpus = target;
            return true;
        }
    }
    uint8_t at[GS_GPU__MAX_MIG];
    uint16_t rest_c[GS_GPU__MAX_MIG + 1], rest_m[GS_GPU__MAX_MIG + 1];
    rest_c[n] = rest_m[n] = 0;
    for (uint32_t k = n; k-- > 0;) {
        rest_c[k] = (uint16_t)(rest_c[k + 1] + m->profiles[items[k]].compute);
        rest_m[k] = (uint16_t)(rest_m[k + 1] + m->profiles[items[k]].mem_slices);
    }
    bt_ctx b;
    memset(&b, 0, sizeof b);
    b.m = m;
    b.items = items;
    b.nitems = n;
    b.at = at;
    b.rest_c = rest_c;
    b.rest_m = rest_m;
    b.gpus = trial;
    b.target = target;
    b.budget = 200000;
    if (!bt_place(&b, 0))
        return false;
    for (uint32_t g = 0; g < b.used; g++) /* final starts for each GPU's set */
        gs_mig_layout_fits(m, trial[g].pidx, trial[g].n, trial[g].start);
    memcpy(gpus, trial, b.used * sizeof *gpus);
    *ngpus = b.used;
    return true;
}

static int layout_mixed(const build_ctx *c, const gs_mig_model *m, mig_ask *asks, uint32_t nasks,
                        mig_gpu *gpus, uint32_t *ngpus, uint32_t target)
{
    /* order the asks: widest first */
    for (uint32_t i = 1; i < nasks; i++) {
        mig_ask t = asks[i];
        const gs_mig_profile *pt = &m->profiles[t.pidx];
        uint32_t j = i;
        while (j > 0) {
            const gs_mig_profile *pj = &m->profiles[asks[j - 1].pidx];
            bool before = pt->mem_slices > pj->mem_slices ||
                          (pt->mem_slices == pj->mem_slices &&
                           (pt->compute > pj->compute ||
                            (pt->compute == pj->compute && t.pidx < asks[j - 1].pidx)));
            if (!before)
                break;
            asks[j] = asks[j - 1];
            j--;
        }
        asks[j] = t;
    }
    uint32_t total = 0;
    for (uint32_t k = 0; k < nasks; k++) {
        total += asks[k].count;
        if (total > GS_GPU__MAX_MIG)
            return node_fail(c, GS_ERR_LIMIT, NULL, "more than %u MIG instances",
                             GS_GPU__MAX_MIG);
    }
    *ngpus = 0;
    for (uint32_t k = 0; k < nasks; k++) {
        for (uint32_t i = 0; i < asks[k].count; i++) {
            uint8_t p = (uint8_t)asks[k].pidx;
            bool placed = false;
            for (uint32_t g = 0; g < *ngpus && !placed; g++) {
                mig_gpu *G = &gpus[g];
                if (G->n >= GS_GPU__MAX_MIG_PER_GPU)
                    continue;
                G->pidx[G->n] = p;
                if (gs_mig_layout_fits(m, G->pidx, G->n + 1u, G->start)) {
                    G->n++;
                    placed = true;
                }
            }
            if (placed)
                continue;
            if (*ngpus >= GS_GPU__MAX_DEVS)
                return node_fail(c, GS_ERR_LIMIT, NULL,
                                 "MIG instances need more than %u GPUs", GS_GPU__MAX_DEVS);
            mig_gpu *G = &gpus[(*ngpus)++];
            G->pidx[0] = p;
            G->n = 1;
            if (!gs_mig_layout_fits(m, G->pidx, 1, G->start))
                return node_fail(c, GS_ERR_INTERNAL, NULL, "MIG profile %s does not fit an "
                                 "empty GPU", m->profiles[p].name);
        }
    }
    if (target && *ngpus > target)
        layout_exact(m, asks, nasks, target, gpus, ngpus);
    return 0;
}

/* Single strategy: every GPU carries the same profile, as many as fit. */
static int layout_single(const build_ctx *c, const gs_mig_model *m, int pidx, uint32_t instances,
                         mig_gpu *gpus, uint32_t *ngpus, uint32_t *per_gpu_out)
{
    uint8_t idx[GS_GPU__MAX_MIG_PER_GPU];
    uint32_t per_gpu = 0;
    for (uint32_t k = 1; k <= GS_GPU__MAX_MIG_PER_GPU; k++) {
        memset(idx, (uint8_t)pidx, sizeof idx);
        if (!gs_mig_layout_fits(m, idx, k, NULL))
            break;
        per_gpu = k;
    }
    if (per_gpu == 0)
        return node_fail(c, GS_ERR_INTERNAL, NULL, "MIG profile does not fit an empty GPU");
    *per_gpu_out = per_gpu;
    if (instances > GS_GPU__MAX_MIG)
        return node_fail(c, GS_ERR_LIMIT, NULL, "%u MIG devices (at most %u per node)", instances,
                         GS_GPU__MAX_MIG);
    uint32_t n = (instances + per_gpu - 1) / per_gpu;
    if (n > GS_GPU__MAX_DEVS)
        return node_fail(c, GS_ERR_LIMIT, NULL, "MIG devices need more than %u GPUs",
                         GS_GPU__MAX_DEVS);
    *ngpus = n;
    for (uint32_t g = 0; g < n; g++) {
        uint32_t k = instances - g * per_gpu < per_gpu ? instances - g * per_gpu : per_gpu;
        memset(gpus[g].pidx, (uint8_t)pidx, sizeof gpus[g].pidx);
        gpus[g].n = (uint8_t)k;
        gs_mig_layout_fits(m, gpus[g].pidx, k, gpus[g].start);
    }
    return 0;
}

/* ---------------------------------------------------------------- managed clouds */
/* GPU model labels of managed Kubernetes services (no GFD there): the product name GFD
 * would write, and the memory NVML reports (MiB, approximate) */
typedef struct cloud_gpu {
    const char *value;
    const char *product;
    uint32_t mem_mib;
} cloud_gpu;

static const cloud_gpu cloud_gpus[] = {
    {"nvidia-tesla-k80", "Tesla-K80", 11441},
    {"nvidia-tesla-p4", "Tesla-P4", 7611},
    {"nvidia-tesla-p100", "Tesla-P100-PCIE-16GB", 16280},
    {"nvidia-tesla-v100", "Tesla-V100-SXM2-16GB", 16384},
    {"nvidia-tesla-t4", "Tesla-T4", 15360},
    {"nvidia-l4", "NVIDIA-L4", 23034},
    {"nvidia-a10g", "NVIDIA-A10G", 23028},
    {"nvidia-tesla-a100", "NVIDIA-A100-SXM4-40GB", 40960},
    {"nvidia-a100-80gb", "NVIDIA-A100-SXM4-80GB", 81920},
    {"nvidia-h100-80gb", "NVIDIA-H100-80GB-HBM3", 81559},
    {"nvidia-h100-mega-80gb", "NVIDIA-H100-80GB-HBM3", 81559},
    {"nvidia-h200-141gb", "NVIDIA-H200", 143771},
    {"nvidia-b200", "NVIDIA-B200", 183359},
    {"nvidia-gb200", "NVIDIA-GB200", 189471},
};

static const char *const cloud_labels[] = {"cloud.google.com/gke-accelerator",
                                           "k8s.amazonaws.com/accelerator",
                                           "kubernetes.azure.com/accelerator"};

const char *gs_gpu_cloud_accelerator(const gs_labels *labels, const char **key)
{
    for (size_t i = 0; i < sizeof cloud_labels / sizeof *cloud_labels; i++) {
        const char *v = gs_labels_get(labels, cloud_labels[i]);
        if (v && *v) {
            if (key)
                *key = cloud_labels[i];
            return v;
        }
    }
    return NULL;
}

/* The model a cloud accelerator label names: the GFD-style product when known, else the
 * value itself when it names more than the vendor ("nvidia-foo"), else "" (AKS writes
 * just "nvidia"). */
static const char *cloud_model(const char *v, uint32_t *mem)
{
    *mem = 0;
    size_t n = strnlen(v, 128);
    for (size_t i = 0; i < sizeof cloud_gpus / sizeof *cloud_gpus; i++)
        if (gs_gpu__ieq(v, n, cloud_gpus[i].value, strlen(cloud_gpus[i].value))) {
            *mem = cloud_gpus[i].mem_mib;
            return cloud_gpus[i].product;
        }
    return n > 7 && gs_gpu__iprefix(v, n, "nvidia-") ? v : "";
}

/* ---------------------------------------------------------------- vGPU register */
/*
 * HAMi's hami.io/node-nvidia-register (and volcano-vgpu's volcano.sh/node-vgpu-register):
 * one entry per physical GPU. Two encodings exist:
 *   JSON  [{"id":"GPU-..","index":0,"count":10,"devmem":32768,"devcore":100,
 *           "type":"NVIDIA-Tesla V100-PCIE-32GB","numa":0,"mode":"hami-core","health":true}]
 *   older "<uuid>,<count>,<devmem>,<devcore>,<type>,<numa>,<health>[,<index>,<mode>]:" per
 *          device, devices separated (and terminated) by ':'
 * The JSON form is read with the library's JSON reader (lib/util/json.c).
 */
typedef struct vgpu_dev {
    char uuid[96];
    char type[128];
    int64_t split, mem, cores;
    bool healthy;
} vgpu_dev;

static void copy_field(char *dst, size_t cap, const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

static bool parse_i64_field(const char *s, size_t n, int64_t *out)
{
    while (n && *s == ' ') {
        s++;
        n--;
    }
    while (n && s[n - 1] == ' ')
        n--;
    return n > 0 && n < 24 && gs_parse_i64(s, n, out) == 0;
}

static int register_fail(const build_ctx *c, const char *key, const char *what, uint32_t dev)
{
    char field[128];
    snprintf(field, sizeof field, "metadata.annotations[%s]", key);
    return node_fail(c, GS_ERR_INVALID, field, "device %u: %s", dev, what);
}

static int parse_register_text(const build_ctx *c, const char *key, const char *v,
                               vgpu_dev *devs, uint32_t *n)
{
    const char *p = v;
    while (*p) {
        size_t len = strcspn(p, ":");
        const char *e = p + len;
        const char *f[10];
        size_t fl[10];
        uint32_t nf = 0;
        const char *q = p;
        bool blank = true;
        for (const char *t = p; t < e; t++)
            blank = blank && (*t == ' ' || *t == '\n' || *t == '\t');
        if (!blank) {
            while (nf < 10) {
                const char *comma = memchr(q, ',', (size_t)(e - q));
                const char *fe = comma ? comma : e;
                f[nf] = q;
                fl[nf++] = (size_t)(fe - q);
                if (!comma)
                    break;
                q = comma + 1;
            }
            if (nf != 7 && nf != 9)
                return register_fail(c, key, "expected 7 or 9 comma-separated fields "
                                     "(uuid,count,devmem,devcore,type,numa,health[,index,mode])", *n);
            if (*n >= GS_GPU__MAX_DEVS)
                return node_fail(c, GS_ERR_LIMIT, NULL, "%s: more than %u GPUs", key,
                                 GS_GPU__MAX_DEVS);
            vgpu_dev *d = &devs[(*n)++];
            copy_field(d->uuid, sizeof d->uuid, f[0], fl[0]);
            copy_field(d->type, sizeof d->type, f[4], fl[4]);
            char h[8];
            copy_field(h, sizeof h, f[6], fl[6]);
            d->healthy = gs_gpu__ieq(h, strlen(h), "true", 4);
            if (!parse_i64_field(f[1], fl[1], &d->split) ||
                !parse_i64_field(f[2], fl[2], &d->mem) || !parse_i64_field(f[3], fl[3], &d->cores))
                return register_fail(c, key, "count, devmem and devcore must be integers", *n - 1);
        }
        p = *e ? e + 1 : e;
    }
    return 0;
}

/* Text of a scalar member (strings, numbers and booleans alike), NULL when absent or not a
 * scalar. */
static const char *json_str(const gs_jv *obj, const char *k, size_t *len)
{
    const gs_jv *v = gs_json_get(obj, k);
    if (!v)
        return NULL;
    switch (v->t) {
    case GS_JSTR:
    case GS_JNUM:
        *len = v->n;
        return v->s;
    case GS_JBOOL:
        *len = v->b ? 4 : 5;
        return v->b ? "true" : "false";
    default:
        return NULL;
    }
}

static int parse_register_json(const build_ctx *c, const char *key, const char *v,
                               vgpu_dev *devs, uint32_t *n)
{
    char field[128];
    snprintf(field, sizeof field, "metadata.annotations[%s]", key);
    static const gs_json_limits lim = {8, GS_GPU__MAX_DEVS + 1, 4096, false};
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_jv root;
    gs_error jerr;
    gs_error_clear(&jerr);
    int rc = 0;
    if (gs_json_parse(key, 1, v, strlen(v), &lim, &a, &root, &jerr) < 0) {
        if (jerr.code == GS_ERR_NOMEM)
            rc = node_fail(c, GS_ERR_NOMEM, NULL, "out of memory");
        else
            rc = node_fail(c, GS_ERR_INVALID, field, "not a JSON array of devices: column %d: %s",
                           jerr.col, jerr.msg);
    } else if (root.t != GS_JARR) {
        rc = node_fail(c, GS_ERR_INVALID, field, "not a JSON array of devices");
    }
    for (uint32_t i = 0; rc == 0 && i < root.n; i++) {
        const gs_jv *item = &root.kids[i];
        if (item->t != GS_JOBJ) {
            rc = register_fail(c, key, "not a JSON object", *n);
            break;
        }
        if (*n >= GS_GPU__MAX_DEVS) {
            rc = node_fail(c, GS_ERR_LIMIT, NULL, "%s: more than %u GPUs", key, GS_GPU__MAX_DEVS);
            break;
        }
        vgpu_dev *d = &devs[(*n)++];
        size_t l = 0;
        const char *s = json_str(item, "id", &l);
        copy_field(d->uuid, sizeof d->uuid, s ? s : "", s ? l : 0);
        s = json_str(item, "type", &l);
        copy_field(d->type, sizeof d->type, s ? s : "", s ? l : 0);
        s = json_str(item, "health", &l);
        d->healthy = !s || gs_gpu__ieq(s, l, "true", 4); /* absent: healthy */
        static const char *const nums[] = {"count", "devmem", "devcore"};
        int64_t *dst[] = {&d->split, &d->mem, &d->cores};
        for (int k = 0; k < 3 && rc == 0; k++) {
            s = json_str(item, nums[k], &l);
            *dst[k] = k == 2 ? 100 : 0;
            if (s && !parse_i64_field(s, l, dst[k]))
                rc = register_fail(c, key, "count, devmem and devcore must be integers", *n - 1);
        }
    }
    gs_arena_free(&a);
    return rc;
}

static int parse_register(const build_ctx *c, const char *key, const char *v, vgpu_dev *devs,
                          uint32_t *n)
{
    *n = 0;
    const char *p = v;
    while (*p == ' ' || *p == '\n' || *p == '\t')
        p++;
    int rc = *p == '[' ? parse_register_json(c, key, p, devs, n)
                       : parse_register_text(c, key, p, devs, n);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < *n; i++) {
        if (devs[i].split < 1 || devs[i].split > GS_GPU__MAX_REPLICAS)
            return register_fail(c, key, "count (split) must be 1..1024", i);
        if (devs[i].mem < 0 || devs[i].mem > UINT32_MAX || devs[i].cores < 0)
            return register_fail(c, key, "devmem and devcore must be non-negative", i);
    }
    return 0;
}

/* A HAMi or Volcano vGPU node: devices from the register annotation (or, for a Volcano
 * node without one, gpu.count / vgpu-number over the default split), each hosting at most
 * `split` pods. */
static int build_vgpu(const build_ctx *c, gs_node_gpus *out, const char *key, const char *reg,
                      int64_t fallback_devs, int64_t total_mem)
{
    vgpu_dev devs[GS_GPU__MAX_DEVS];
    uint32_t n = 0;
    if (reg && parse_register(c, key, reg, devs, &n))
        return -1;
    if (!reg) {
        if (fallback_devs > (int64_t)GS_GPU__MAX_DEVS)
            return node_fail(c, GS_ERR_LIMIT, NULL, "%lld GPUs (at most %u per node)",
                             (long long)fallback_devs, GS_GPU__MAX_DEVS);
        n = (uint32_t)fallback_devs;
        for (uint32_t i = 0; i < n; i++) {
            memset(&devs[i], 0, sizeof devs[i]);
            devs[i].split = HAMI_DEFAULT_SPLIT;
            devs[i].mem = total_mem > 0 ? total_mem / n : 0;
            devs[i].healthy = true;
        }
    }
    out->sharing = GS_SHARING_VGPU;
    out->labels_only = n == 0;
    if (n == 0)
        return 0;
    size_t strs = 0;
    if (reg)
        for (uint32_t i = 0; i < n; i++)
            strs += strlen(devs[i].uuid) + strlen(devs[i].type) + 2;
    out->devs = calloc(n, sizeof *out->devs);
    if (reg) {
        out->dev_type = calloc(n, sizeof *out->dev_type);
        out->dev_uuid = calloc(n, sizeof *out->dev_uuid);
        out->strs = malloc(strs);
    }
    if (!out->devs || (reg && (!out->dev_type || !out->dev_uuid || !out->strs))) {
        gs_node_gpus_free(out);
        return node_fail(c, GS_ERR_NOMEM, NULL, "out of memory");
    }
    out->ndevs = n;
    out->strs_len = (uint32_t)strs;
    size_t o = 0;
    for (uint32_t i = 0; i < n; i++) {
        gs_gpu_dev *d = &out->devs[i];
        d->slots = (uint16_t)devs[i].split;
        d->mem_mib = (uint32_t)devs[i].mem;
        if (!devs[i].healthy)
            d->flags = GS_DEV_UNHEALTHY;
        if (reg) {
            size_t lu = strlen(devs[i].uuid) + 1, lt = strlen(devs[i].type) + 1;
            memcpy(out->strs + o, devs[i].uuid, lu);
            out->dev_uuid[i] = out->strs + o;
            o += lu;
            memcpy(out->strs + o, devs[i].type, lt);
            out->dev_type[i] = out->strs + o;
            o += lt;
        }
    }
    if ((!out->model || !*out->model) && reg && out->dev_type[0][0]) {
        /* HAMi writes "NVIDIA-" + the NVML name, which may start with "NVIDIA " itself */
        const char *t = out->dev_type[0];
        out->model = gs_gpu__iprefix(t, strlen(t), "nvidia-nvidia") ? t + 7 : t;
    }
    if (!out->mig_model && out->model && *out->model)
        out->mig_model = gs_mig_model_find(out->model);
    return 0;
}

/* ---------------------------------------------------------------- build */
int gs_node_gpus_build(const gs_node *node, gs_node_gpus *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    out->model = "";
    out->resource = R_GPU;
    if (!node)
        return 0;
    build_ctx c = {node, err};
    const gs_labels *labels = &node->meta.labels;

    const char *product = gs_labels_get(labels, L_PRODUCT);
    const char *card_model = gs_labels_get(labels, L_CARD_MODEL);
    const char *cloud = gs_gpu_cloud_accelerator(labels, NULL);
    uint32_t cloud_mem = 0;
    if (product && *product)
        out->model = product;
    else if (card_model && *card_model)
        out->model = card_model;
    else if (cloud)
        out->model = cloud_model(cloud, &cloud_mem);

    /* -------- resources */
    int64_t gpu_alloc, gpu_cap, sh_alloc, sh_cap, ob_alloc, ob_cap, ay_alloc, ay_cap, aym_alloc,
        aym_cap, obm_alloc, obm_cap, vn_alloc, vn_cap, vm_alloc, vm_cap, gn_alloc, gn_cap,
        gm_alloc, gm_cap;
    bool gpu_present, sh_present, ob_present, ay_present, aym_present, obm_present, vn_present,
        vm_present, gn_present, gm_present;
    if (node_res(&c, R_GPU, &gpu_alloc, &gpu_cap, &gpu_present) ||
        node_res(&c, R_GPU_SHARED, &sh_alloc, &sh_cap, &sh_present) ||
        node_res(&c, R_OPENB_COUNT, &ob_alloc, &ob_cap, &ob_present) ||
        node_res(&c, R_OPENB_MILLI, &obm_alloc, &obm_cap, &obm_present) ||
        node_res(&c, R_ALIYUN_COUNT, &ay_alloc, &ay_cap, &ay_present) ||
        node_res(&c, R_ALIYUN_MEM, &aym_alloc, &aym_cap, &aym_present) ||
        node_res(&c, R_VOLCANO_NUMBER, &gn_alloc, &gn_cap, &gn_present) ||
        node_res(&c, R_VOLCANO_MEM, &gm_alloc, &gm_cap, &gm_present) ||
        node_res(&c, R_VGPU_NUMBER, &vn_alloc, &vn_cap, &vn_present) ||
        node_res(&c, R_VGPU_MEM, &vm_alloc, &vm_cap, &vm_present))
        return -1;
    /* families: what the node advertises with a positive amount (a kubelet keeps a
     * resource at 0 after its plugin stops: stale, it names no family) */
    if (gpu_alloc > 0 || gpu_cap > 0)
        out->families |= FAM(GS_FAM_NVIDIA);
    if (sh_alloc > 0 || sh_cap > 0)
        out->families |= FAM(GS_FAM_NVIDIA_SHARED);
    if (ob_alloc > 0 || ob_cap > 0 || obm_alloc > 0 || obm_cap > 0)
        out->families |= FAM(GS_FAM_OPENB);
    if (ay_alloc > 0 || ay_cap > 0 || aym_alloc > 0 || aym_cap > 0)
        out->families |= FAM(GS_FAM_GPUSHARE);
    if (gn_alloc > 0 || gn_cap > 0 || gm_alloc > 0 || gm_cap > 0)
        out->families |= FAM(GS_FAM_VOLCANO);
    if (gpu_alloc == 0 && gpu_cap == 0 && (sh_alloc > 0 || sh_cap > 0)) {
        /* renameByDefault: whole devices (replicas) are advertised as nvidia.com/gpu.shared
         * (a stale nvidia.com/gpu: 0 beside it is ignored) */
        out->resource = R_GPU_SHARED;
        gpu_alloc = sh_alloc;
        gpu_cap = sh_cap;
        gpu_present = true;
    }
    const char *present = gs_labels_get(labels, L_PRESENT);
    bool label_signal_base = str_ieq(present, "true") || (card_model && *card_model) ||
                             (product && *product) || cloud;

    /* -------- HAMi / Volcano vGPU: devices from the register annotation */
    const gs_labels *ann = &node->meta.annotations;
    const char *hami_reg = gs_labels_get(ann, A_HAMI_REGISTER);
    const char *vgpu_reg = gs_labels_get(ann, A_VGPU_REGISTER);
    if (hami_reg && !*hami_reg)
        hami_reg = NULL;
    if (vgpu_reg && !*vgpu_reg)
        vgpu_reg = NULL;
    if (hami_reg || vgpu_reg || vn_alloc > 0 || vn_cap > 0) {
        bool hami = hami_reg != NULL;
        /* nvidia.com/gpu counts vGPU slots on a HAMi node, not GPUs */
        out->families = (uint16_t)((out->families & ~FAM(GS_FAM_NVIDIA)) |
                                   FAM(hami ? GS_FAM_HAMI : GS_FAM_VOLCANO_VGPU));
        if (out->model && *out->model)
            out->mig_model = gs_mig_model_find(out->model);
        int64_t count_label = 0;
        bool has_count;
        if (label_int(&c, L_COUNT, 0, 1000000, &count_label, &has_count))
            return -1;
        int64_t slots = vn_alloc > 0 ? vn_alloc : vn_cap;
        int64_t fallback = has_count && count_label > 0 ? count_label
                                                        : (slots + HAMI_DEFAULT_SPLIT - 1) /
                                                              HAMI_DEFAULT_SPLIT;
        if (build_vgpu(&c, out, hami ? A_HAMI_REGISTER : A_VGPU_REGISTER,
                       hami ? hami_reg : vgpu_reg, fallback, vm_alloc > 0 ? vm_alloc : vm_cap))
            return -1;
        out->gpu_node = true;
        return 0;
    }

    mig_ask asks[MAX_MIG_NAMES];
    uint32_t nasks;
    bool mig_present;
    if (collect_mig(&c, asks, &nasks, &mig_present))
        return -1;
    if (nasks > 0)
        out->families |= FAM(GS_FAM_NVIDIA_MIG);

    /* -------- labels */
    int64_t count_label = 0, replicas = 1, mem_label = 0;
    bool has_count, has_replicas, has_mem;
    if (label_int(&c, L_COUNT, 0, 1000000, &count_label, &has_count) ||
        label_int(&c, L_REPLICAS, 0, GS_GPU__MAX_REPLICAS, &replicas, &has_replicas) ||
        label_int(&c, L_MEMORY, 0, UINT32_MAX, &mem_label, &has_mem))
        return -1;
    if (replicas < 1)
        replicas = 1;
    const char *sharing = gs_labels_get(labels, L_SHARING);
    const char *mig_strategy = gs_labels_get(labels, L_MIG_STRATEGY);
    bool shared_name = strcmp(out->resource, R_GPU_SHARED) == 0;
    bool ts_label = str_ieq(sharing, "time-slicing") || str_ieq(sharing, "mps");
    if (!has_replicas && has_count && count_label > 0 && gpu_alloc > count_label &&
        (ts_label || shared_name) && !mig_strategy) {
        /* replicas without GFD's gpu.replicas label: the advertised replicas over the
         * physical GPUs gpu.count names */
        int64_t r = (gpu_alloc + count_label - 1) / count_label;
        replicas = r > GS_GPU__MAX_REPLICAS ? GS_GPU__MAX_REPLICAS : r;
    }
    if (str_ieq(sharing, "mps"))
        out->sharing = GS_SHARING_MPS;
    else if (str_ieq(sharing, "time-slicing") || replicas > 1 || shared_name)
        out->sharing = GS_SHARING_TIME_SLICING;

    /* single strategy: the product names the MIG profile ("<model>-MIG-<profile>") */
    const char *single_profile = NULL;
    size_t single_len = 0;
    if (product) {
        size_t n = strnlen(product, 256);
        size_t off, len;
        gs_gpu__model_core(product, n, &off, &len);
        size_t e = off + len;
        if (e + 5 <= n && gs_gpu__iprefix(product + e, n - e, "-mig-")) {
            single_profile = product + e + 5;
            single_len = n - e - 5;
            static const char shared[] = "-shared";
            if (single_len >= sizeof shared - 1 &&
                gs_gpu__ieq(single_profile + single_len - (sizeof shared - 1), sizeof shared - 1,
                            shared, sizeof shared - 1))
                single_len -= sizeof shared - 1;
        }
    }
    /* GFD's labels decide the strategy (nvidia.com/mig.strategy, then a -MIG- product);
     * advertised MIG resources only when GFD says nothing. A "single" label without a
     * -MIG- product means whole GPUs. */
    bool label_single = str_ieq(mig_strategy, "single");
    bool label_mixed = str_ieq(mig_strategy, "mixed");
    if (single_profile && single_len == 7 && gs_gpu__ieq(single_profile, 7, "invalid", 7)) {
        /* GFD: single strategy over GPUs whose MIG devices differ (or some without MIG):
         * the plugin advertises nothing */
        out->mig_invalid = true;
        single_profile = NULL;
        out->mig_strategy = GS_MIG_SINGLE;
    } else if (label_mixed || (!label_single && (nasks > 0 || mig_present) && !single_profile)) {
        out->mig_strategy = GS_MIG_MIXED;
    } else if (single_profile) {
        out->mig_strategy = GS_MIG_SINGLE;
    } else if (nasks > 0) {
        out->mig_strategy = GS_MIG_MIXED; /* "single" label over mig-* resources: trust them */
    }
    if (out->mig_strategy == GS_MIG_SINGLE)
        nasks = 0; /* MIG resources beside a single strategy are left over from mixed */
    if (product)
        out->mig_model = gs_mig_model_find(product);
    else if (out->model && *out->model)
        out->mig_model = gs_mig_model_find(out->model);

    /* -------- MIG layout */
    mig_gpu gpus[GS_GPU__MAX_DEVS];
    uint32_t nmig_gpus = 0, unhealthy_mig_gpus = 0;
    if (out->mig_strategy == GS_MIG_MIXED && nasks > 0) {
        if (!out->mig_model)
            out->mig_model = infer_model(asks, nasks);
        if (!out->mig_model)
            return node_fail(&c, GS_ERR_INVALID, "metadata.labels[" L_PRODUCT "]",
                             "node advertises nvidia.com/mig-%s but its GPU model (%s) is not a "
                             "known MIG-capable GPU", asks[0].profile,
                             product ? product : "no product label");
        for (uint32_t k = 0; k < nasks; k++) {
            asks[k].pidx = gs_gpu__profile_resolve(out->mig_model, asks[k].profile);
            if (asks[k].pidx < 0)
                return node_fail(&c, GS_ERR_INVALID, "status.allocatable",
                                 "nvidia.com/mig-%s is not a MIG profile of %s", asks[k].profile,
                                 out->mig_model->name);
        }
        for (uint32_t k = 0; k < nasks && out->nmig_res < 16; k++) {
            out->mig_res_name[out->nmig_res] = asks[k].resource;
            out->mig_res_profile[out->nmig_res] = (uint8_t)asks[k].pidx;
            out->nmig_res++;
        }
        /* the same profile may appear twice under drifting names: merge */
        for (uint32_t k = 0; k < nasks; k++)
            for (uint32_t j = k + 1; j < nasks; j++)
                if (asks[j].pidx == asks[k].pidx && asks[j].count) {
                    asks[k].count += asks[j].count;
                    asks[j].count = 0;
                }
        int64_t whole_devs = (gpu_alloc + replicas - 1) / replicas;
        uint32_t target = has_count && count_label > whole_devs
                              ? (uint32_t)(count_label - whole_devs) : 0;
        if (layout_mixed(&c, out->mig_model, asks, nasks, gpus, &nmig_gpus, target))
            return -1;
    } else if (out->mig_strategy == GS_MIG_SINGLE) {
        int pidx = -1;
        if (out->mig_model && single_profile && single_len < 32) {
            char prof[32];
            memcpy(prof, single_profile, single_len);
            prof[single_len] = '\0';
            pidx = gs_gpu__profile_resolve(out->mig_model, prof);
        }
        int64_t instances = (gpu_alloc + replicas - 1) / replicas;
        if (pidx < 0) {
            if (instances > 0 && !out->mig_invalid)
                return node_fail(&c, GS_ERR_INVALID, "metadata.labels[" L_PRODUCT "]",
                                 "MIG single strategy, but the product label \"%.80s\" does not "
                                 "name a known model and profile (<model>-MIG-<profile>)",
                                 product ? product : "");
        } else {
            uint32_t per_gpu = 1;
            if (layout_single(&c, out->mig_model, pidx, (uint32_t)instances, gpus, &nmig_gpus,
                              &per_gpu))
                return -1;
            /* gpu.count counts MIG devices under single */
            if (has_count && count_label > instances) {
                int64_t want = (count_label + per_gpu - 1) / per_gpu;
                if (want > (int64_t)nmig_gpus)
                    unhealthy_mig_gpus = (uint32_t)(want - nmig_gpus);
            }
        }
    }

    /* -------- whole devices */
    uint32_t slots = (uint32_t)replicas;
    int64_t whole = 0, last_slots = slots, whole_cap = 0;
    if (out->mig_strategy != GS_MIG_SINGLE) {
        whole = (gpu_alloc + slots - 1) / slots;
        if (gpu_alloc % slots)
            last_slots = gpu_alloc % slots;
        whole_cap = (gpu_cap + slots - 1) / slots;
        int64_t other = ob_alloc > ay_alloc ? ob_alloc : ay_alloc;
        if (!ob_present && obm_alloc > 0 && obm_alloc / 1000 > other)
            other = obm_alloc / 1000; /* openb: gpu-milli = 1000 x GPUs */
        if (gn_alloc > other)
            other = gn_alloc;
        if (other > whole) {
            whole = other;
            last_slots = slots;
        }
        int64_t other_cap = ob_cap > ay_cap ? ob_cap : ay_cap;
        if (gn_cap > other_cap)
            other_cap = gn_cap;
        if (other_cap > whole_cap)
            whole_cap = other_cap;
    }
    int64_t unhealthy = unhealthy_mig_gpus;
    if (out->mig_strategy != GS_MIG_SINGLE) {
        if (has_count) {
            if (count_label > whole + (int64_t)nmig_gpus)
                unhealthy = count_label - whole - (int64_t)nmig_gpus;
        } else if (whole_cap > whole) {
            unhealthy = whole_cap - whole; /* capacity counts devices allocatable lost */
        }
    }
    int64_t ndevs = whole + (int64_t)nmig_gpus + unhealthy;
    if (ndevs > (int64_t)GS_GPU__MAX_DEVS)
        return node_fail(&c, GS_ERR_LIMIT, NULL, "%lld GPUs (at most %u per node)",
                         (long long)ndevs, GS_GPU__MAX_DEVS);

    /* -------- device memory: label, gpushare, catalog */
    /* gpushare: aliyun.com/gpu-mem per GPU is GiB unless it is too large for any GPU in
     * GiB, then the plugin runs with --memory-unit=MiB */
    int64_t ay_per = 0;
    if (aym_alloc > 0 && (ay_alloc > 0 || whole > 0)) {
        ay_per = aym_alloc / (ay_alloc > 0 ? ay_alloc : whole);
        out->gpushare_mib = ay_per > GPUSHARE_GIB_MAX;
        if (!out->gpushare_mib)
            ay_per *= 1024;
    }
    uint32_t dev_mem = 0;
    if (has_mem && out->mig_strategy != GS_MIG_SINGLE)
        dev_mem = (uint32_t)mem_label;
    else if (ay_per > 0)
        dev_mem = ay_per > UINT32_MAX ? UINT32_MAX : (uint32_t)ay_per;
    else if (gm_alloc > 0 && (gn_alloc > 0 || whole > 0)) {
        int64_t per = gm_alloc / (gn_alloc > 0 ? gn_alloc : whole); /* Volcano: MiB */
        dev_mem = per > UINT32_MAX ? UINT32_MAX : (uint32_t)per;
    } else if (out->mig_model)
        dev_mem = out->mig_model->mem_mib;
    else if (cloud_mem)
        dev_mem = cloud_mem;

    /* -------- GPU node flags */
    bool label_signal = label_signal_base || (has_count && count_label > 0);
    out->gpu_node = gpu_present || mig_present || ob_present || ay_present || aym_present ||
                    obm_present || gn_present || gm_present || label_signal ||
                    out->mig_invalid;
    uint32_t nmig_total = 0;
    for (uint32_t g = 0; g < nmig_gpus; g++)
        nmig_total += gpus[g].n;
    /* MIG-INVALID: GFD says why nothing is advertised; the device plugin is not down */
    out->labels_only = out->gpu_node && whole == 0 && nmig_total == 0 && !out->mig_invalid;

    if (ndevs == 0)
        return 0;

    /* -------- materialise */
    out->devs = calloc((size_t)ndevs, sizeof *out->devs);
    if (nmig_total)
        out->mig = calloc(nmig_total, sizeof *out->mig);
    if (!out->devs || (nmig_total && !out->mig)) {
        gs_node_gpus_free(out);
        out->model = "";
        return node_fail(&c, GS_ERR_NOMEM, NULL, "out of memory");
    }
    out->ndevs = (uint32_t)ndevs;
    out->nmig = nmig_total;
    uint32_t d = 0;
    for (int64_t i = 0; i < whole; i++, d++) {
        out->devs[d].slots = (uint16_t)(i == whole - 1 ? last_slots : slots);
        out->devs[d].mem_mib = dev_mem;
    }
    uint32_t mi = 0;
    for (uint32_t g = 0; g < nmig_gpus; g++, d++) {
        gs_gpu_dev *dv = &out->devs[d];
        dv->slots = 1;
        dv->mem_mib = dev_mem;
        dv->flags = GS_DEV_MIG_ENABLED;
        dv->mig_first = (uint16_t)mi;
        dv->nmig = gpus[g].n;
        /* instances of one GPU in start order */
        uint8_t order[GS_GPU__MAX_MIG_PER_GPU];
        for (uint8_t k = 0; k < gpus[g].n; k++) {
            uint8_t j = k;
            while (j > 0 && gpus[g].start[order[j - 1]] > gpus[g].start[k]) {
                order[j] = order[j - 1];
                j--;
            }
            order[j] = k;
        }
        for (uint8_t k = 0; k < gpus[g].n; k++, mi++) {
            out->mig[mi].profile = gpus[g].pidx[order[k]];
            out->mig[mi].start = gpus[g].start[order[k]];
            out->mig[mi].dev = (uint8_t)d;
        }
    }
    for (int64_t i = 0; i < unhealthy; i++, d++) {
        out->devs[d].slots = (uint16_t)slots;
        out->devs[d].mem_mib = dev_mem;
        out->devs[d].flags = GS_DEV_UNHEALTHY | (i < (int64_t)unhealthy_mig_gpus ?
                                                 GS_DEV_MIG_ENABLED : 0);
    }
    return 0;
}

void gs_node_gpus_free(gs_node_gpus *g)
{
    if (!g)
        return;
    free(g->devs);
    free(g->mig);
    free(g->dev_type);
    free(g->dev_uuid);
    free(g->strs);
    g->devs = NULL;
    g->mig = NULL;
    g->dev_type = g->dev_uuid = NULL;
    g->strs = NULL;
    g->strs_len = 0;
    g->ndevs = g->nmig = 0;
}

int gs_node_gpus_copy(gs_node_gpus *dst, const gs_node_gpus *src)
{
    *dst = *src;
    dst->devs = NULL;
    dst->mig = NULL;
    dst->dev_type = dst->dev_uuid = NULL;
    dst->strs = NULL;
    if (src->strs && src->dev_type && src->dev_uuid && src->ndevs) {
        dst->strs = malloc(src->strs_len ? src->strs_len : 1);
        dst->dev_type = malloc(src->ndevs * sizeof *dst->dev_type);
        dst->dev_uuid = malloc(src->ndevs * sizeof *dst->dev_uuid);
        if (!dst->strs || !dst->dev_type || !dst->dev_uuid)
            goto oom;
        memcpy(dst->strs, src->strs, src->strs_len);
        for (uint32_t i = 0; i < src->ndevs; i++) {
            dst->dev_type[i] = dst->strs + (src->dev_type[i] - src->strs);
            dst->dev_uuid[i] = dst->strs + (src->dev_uuid[i] - src->strs);
        }
        /* the model may point at the first device's type */
        uintptr_t m = (uintptr_t)src->model, b = (uintptr_t)src->strs;
        if (m >= b && m < b + src->strs_len)
            dst->model = dst->strs + (src->model - src->strs);
    }
    if (src->ndevs) {
        dst->devs = malloc(src->ndevs * sizeof *dst->devs);
        if (!dst->devs)
            goto oom;
        memcpy(dst->devs, src->devs, src->ndevs * sizeof *dst->devs);
    }
    if (src->nmig) {
        dst->mig = malloc(src->nmig * sizeof *dst->mig);
        if (!dst->mig)
            goto oom;
        memcpy(dst->mig, src->mig, src->nmig * sizeof *dst->mig);
    }
    return 0;
oom:
    gs_node_gpus_free(dst);
    return -1;
}

int gs_node_gpus_mig_relayout(gs_node_gpus *g, uint32_t dev, const uint8_t *pidx,
                              const uint8_t *starts, uint32_t n, const char *const *names,
                              uint16_t *remap)
{
    if (!g || dev >= g->ndevs || !(g->devs[dev].flags & GS_DEV_MIG_ENABLED) || !g->mig_model ||
        g->mig_strategy != GS_MIG_MIXED || n > GS_GPU__MAX_MIG_PER_GPU || (n && !pidx))
        return -1;
    gs_gpu_dev *d = &g->devs[dev];
    for (uint32_t i = d->mig_first; i < (uint32_t)d->mig_first + d->nmig && i < g->nmig; i++)
        if (g->mig[i].used)
            return -1;
    uint8_t start[GS_GPU__MAX_MIG_PER_GPU];
    if (n && !gs_mig_layout_fits(g->mig_model, pidx, n, start))
        return -1;
    if (starts)
        memcpy(start, starts, n);
    uint8_t order[GS_GPU__MAX_MIG_PER_GPU];
    for (uint8_t k = 0; k < n; k++) { /* new instances in start order */
        uint8_t j = k;
        while (j > 0 && start[order[j - 1]] > start[k]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = k;
    }
    uint32_t total = g->nmig - d->nmig + n;
    if (total > GS_GPU__MAX_MIG)
        return -1;
    gs_mig_inst *nm = total ? calloc(total, sizeof *nm) : NULL;
    if (total && !nm)
        return -1;
    /* GPUs keep their order in the array; instances of GPUs without MIG have none */
    uint32_t out = 0;
    for (uint32_t k = 0; k < g->ndevs; k++) {
        gs_gpu_dev *dk = &g->devs[k];
        if (!(dk->flags & GS_DEV_MIG_ENABLED) && dk->nmig == 0)
            continue;
        uint32_t first = out;
        if (k == dev) {
            for (uint32_t i = 0; i < d->nmig && remap; i++)
                remap[d->mig_first + i] = 0xffff;
            for (uint32_t i = 0; i < n; i++, out++) {
                nm[out].profile = pidx[order[i]];
                nm[out].start = start[order[i]];
                nm[out].dev = (uint8_t)dev;
            }
        } else {
            for (uint32_t i = 0; i < dk->nmig; i++, out++) {
                nm[out] = g->mig[dk->mig_first + i];
                if (remap)
                    remap[dk->mig_first + i] = (uint16_t)out;
            }
        }
        dk->mig_first = (uint16_t)first;
    }
    d->nmig = (uint8_t)n;
    free(g->mig);
    g->mig = nm;
    g->nmig = total;
    if (n)
        g->families |= FAM(GS_FAM_NVIDIA_MIG);
    for (uint32_t i = 0; i < n && names; i++) {
        bool known = false;
        for (uint32_t k = 0; k < g->nmig_res && !known; k++)
            known = g->mig_res_profile[k] == pidx[i];
        if (!known && names[i] && g->nmig_res < 16) {
            g->mig_res_name[g->nmig_res] = names[i];
            g->mig_res_profile[g->nmig_res] = pidx[i];
            g->nmig_res++;
        }
    }
    return 0;
}
