/*
 * fit.c - can a canonical GPU request be placed on one node's devices, which devices does
 * it take, and the exact bind / unbind of that choice.
 *
 * This is the scheduler's inner loop (every pending pod x every node), so it allocates
 * nothing, scans the node's device array a bounded number of times (O(devices) for one
 * device, O(count x devices) for count <= GS_GPU_ASSIGN_MAX) and returns as soon as the
 * answer is known. Verdicts distinguish "not now" (GS_FIT_INSUFFICIENT: usage blocks it,
 * preemption could help) from "not ever" (GS_FIT_NEVER: even the empty node is too small).
 */
#include <stdio.h>
#include <string.h>

#include "gpu_int.h"

/* ---------------------------------------------------------------- models */
bool gs_gpu_model_matches(const char *model, const char *node_model)
{
    if (!model || !node_model)
        return false;
    size_t mo, ml, no, nl;
    gs_gpu__model_core(model, gs_gpu_model_len(model), &mo, &ml);
    gs_gpu__model_core(node_model, strnlen(node_model, 256), &no, &nl);
    return ml > 0 && gs_gpu__ieq(model + mo, ml, node_model + no, nl);
}

static bool models_allow(const gs_node_gpus *g, const gs_gpu_request *r)
{
    if (!r->nmodels)
        return true;
    if (!g->model || !*g->model)
        return false;
    size_t no, nl; /* the node's side once, each requested model against it */
    gs_gpu__model_core(g->model, strnlen(g->model, 256), &no, &nl);
    for (uint8_t i = 0; i < r->nmodels && i < GS_GPU_MAX_MODELS; i++) {
        const char *m = r->models[i];
        if (!m)
            continue;
        size_t mo, ml;
        gs_gpu__model_core(m, gs_gpu_model_len(m), &mo, &ml);
        if (ml == nl && ml > 0 && gs_gpu__ieq(m + mo, ml, g->model + no, nl))
            return true;
    }
    return false;
}

static inline bool dev_usable(const gs_gpu_dev *d)
{
    return !(d->flags & (GS_DEV_MIG_ENABLED | GS_DEV_UNHEALTHY));
}

/* ---------------------------------------------------------------- HAMi selection */
/* Does the comma-separated list contain an item equal to s (exact, or a case-insensitive
 * substring of s when substr)? */
static bool list_hits(const char *list, const char *s, bool substr)
{
    size_t sn = strnlen(s, 256);
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        const char *b = p, *e = p + n;
        p = *e ? e + 1 : e;
        while (b < e && *b == ' ')
            b++;
        while (e > b && e[-1] == ' ')
            e--;
        size_t len = (size_t)(e - b);
        if (!len)
            continue;
        if (!substr) {
            if (len == sn && memcmp(b, s, len) == 0)
                return true;
            continue;
        }
        for (size_t i = 0; i + len <= sn; i++)
            if (gs_gpu__ieq(s + i, len, b, len))
                return true;
    }
    return false;
}

/* HAMi's device selection of a request, resolved once per fit */
typedef struct hami_sel {
    const char *use_type, *nouse_type, *use_uuid, *nouse_uuid;
} hami_sel;

/* True (and *s filled) when the request selects devices and the node is a vGPU node. */
static inline bool has_selection(const gs_node_gpus *g, const gs_gpu_request *r, hami_sel *s)
{
    if (!(r->hami & GS_HAMI_SELECT) ||
        !(g->families & ((1u << GS_FAM_HAMI) | (1u << GS_FAM_VOLCANO_VGPU))))
        return false;
    s->use_type = gs_gpu_request_hami(r, GS_HAMI_USE_TYPE);
    s->nouse_type = gs_gpu_request_hami(r, GS_HAMI_NOUSE_TYPE);
    s->use_uuid = gs_gpu_request_hami(r, GS_HAMI_USE_UUID);
    s->nouse_uuid = gs_gpu_request_hami(r, GS_HAMI_NOUSE_UUID);
    return true;
}

/* HAMi's nvidia.com/use-gputype, nouse-gputype (substrings of the device type, any case)
 * and use-gpuuuid, nouse-gpuuuid (exact UUIDs) on a vGPU node's device i. Devices without
 * a published type take the node's model; without a UUID no use-gpuuuid list selects
 * them. */
static bool dev_selected(const gs_node_gpus *g, const hami_sel *s, uint32_t i)
{
    const char *type = g->dev_type ? g->dev_type[i] : g->model ? g->model : "";
    const char *uuid = g->dev_uuid ? g->dev_uuid[i] : "";
    if (s->use_type && !list_hits(s->use_type, type, true))
        return false;
    if (s->nouse_type && list_hits(s->nouse_type, type, true))
        return false;
    if (s->use_uuid && (!*uuid || !list_hits(s->use_uuid, uuid, false)))
        return false;
    if (s->nouse_uuid && *uuid && list_hits(s->nouse_uuid, uuid, false))
        return false;
    return true;
}

uint32_t gs_gpu_selected_devices(const gs_node_gpus *g, const gs_gpu_request *r)
{
    uint32_t n = 0;
    hami_sel hs = {0};
    bool sel = has_selection(g, r, &hs);
    for (uint32_t i = 0; i < g->ndevs; i++)
        n += !(g->devs[i].flags & GS_DEV_UNHEALTHY) && (!sel || dev_selected(g, &hs, i));
    return n;
}

static inline bool dev_idle(const gs_gpu_dev *d)
{
    return d->npods == 0 && d->milli_used == 0 && d->mem_used == 0 && d->slots_used == 0;
}

static void entry(gs_gpu_assign *a, uint32_t dev, uint32_t mig, uint32_t milli, uint32_t mem,
                  uint32_t slots)
{
    uint8_t i = a->n++;
    a->dev[i] = (uint8_t)dev;
    a->mig[i] = (uint16_t)mig;
    a->milli[i] = (uint16_t)milli;
    a->mem[i] = mem;
    a->slots[i] = (uint16_t)slots;
}

/* ---------------------------------------------------------------- MIG instances */
/* `count` free instances of profile pidx (any profile when pidx < 0), lowest index first. */
static gs_gpu_fit fit_mig_instances(const gs_node_gpus *g, int pidx, uint32_t count,
                                    gs_gpu_assign *a)
{
    uint32_t total = 0, free_n = 0;
    for (uint32_t i = 0; i < g->nmig; i++) {
        const gs_mig_inst *m = &g->mig[i];
        if (pidx >= 0 && m->profile != pidx)
            continue;
        if (m->dev >= g->ndevs || (g->devs[m->dev].flags & GS_DEV_UNHEALTHY))
            continue;
        total++;
        if (!m->used)
            free_n++;
    }
    if (total == 0)
        return pidx >= 0 ? GS_FIT_MIG_PROFILE : GS_FIT_NO_GPU;
    if (count > total || count > GS_GPU_ASSIGN_MAX)
        return GS_FIT_NEVER;
    if (count > free_n)
        return GS_FIT_INSUFFICIENT;
    for (uint32_t i = 0; i < g->nmig && a->n < count; i++) {
        const gs_mig_inst *m = &g->mig[i];
        if ((pidx >= 0 && m->profile != pidx) || m->used || m->dev >= g->ndevs ||
            (g->devs[m->dev].flags & GS_DEV_UNHEALTHY))
            continue;
        entry(a, m->dev, i, 0, 0, 0);
    }
    return GS_FIT_OK;
}

static gs_gpu_fit fit_mig(const gs_node_gpus *g, const gs_gpu_request *r, gs_gpu_assign *a)
{
    if (g->nmig == 0 || g->mig_strategy == GS_MIG_SINGLE || !g->mig_model)
        return GS_FIT_NO_GPU;
    /* exact advertised name: the kubelet only matches resource names, never shapes */
    int pidx = -1;
    if (r->resource) {
        for (uint32_t k = 0; k < g->nmig_res && pidx < 0; k++)
            if (g->mig_res_name[k] && strcmp(g->mig_res_name[k], r->resource) == 0)
                pidx = g->mig_res_profile[k];
    } else {
        pidx = gs_gpu__profile_index(g->mig_model, r->mig_profile, strnlen(r->mig_profile, 32));
    }
    if (pidx < 0)
        return GS_FIT_MIG_PROFILE;
    return fit_mig_instances(g, pidx, r->count, a);
}

/* ---------------------------------------------------------------- whole devices */
/*
 * Time-sliced (or MPS) nodes hand out replicas, not devices: a pod asking for N gets N
 * slots, possibly several on one device. We binpack replicas: take the device with the
 * most slots already used that still has a free one, fill it, then the next. Each device
 * becomes one assignment entry with its slot count.
 */
static gs_gpu_fit fit_whole_slots(const gs_node_gpus *g, uint32_t count, gs_gpu_assign *a)
{
    uint32_t healthy = 0, total = 0, free_total = 0, max_slots = 0;
    for (uint32_t i = 0; i < g->ndevs; i++) {
        const gs_gpu_dev *d = &g->devs[i];
        if (!dev_usable(d))
            continue;
        healthy++;
        total += d->slots;
        if (d->slots > max_slots)
            max_slots = d->slots;
        if (d->slots_used < d->slots)
            free_total += d->slots - d->slots_used;
    }
    if (healthy == 0)
        return GS_FIT_NO_GPU;
    if (count > total || count > GS_GPU_ASSIGN_MAX * max_slots)
        return GS_FIT_NEVER;
    if (count > free_total)
        return GS_FIT_INSUFFICIENT;
    uint64_t chosen = 0;
    uint32_t need = count;
    while (need) {
        int best = -1;
        for (uint32_t i = 0; i < g->ndevs; i++) {
            const gs_gpu_dev *d = &g->devs[i];
            if (!dev_usable(d) || (chosen >> i & 1) || d->slots_used >= d->slots)
                continue;
            if (best < 0 || d->slots_used > g->devs[best].slots_used)
                best = (int)i;
        }
        if (best < 0 || a->n >= GS_GPU_ASSIGN_MAX)
            return GS_FIT_INSUFFICIENT;
        const gs_gpu_dev *d = &g->devs[best];
        uint32_t take = (uint32_t)(d->slots - d->slots_used);
        if (take > need)
            take = need;
        entry(a, (uint32_t)best, GS_GPU__NO_MIG, 0, 0, take);
        chosen |= 1ull << best;
        need -= take;
    }
    return GS_FIT_OK;
}

/* Exclusive devices: the `count` lowest-index devices with nothing allocated. */
static gs_gpu_fit fit_whole(const gs_node_gpus *g, const gs_gpu_request *r, gs_gpu_assign *a)
{
    if (g->mig_strategy == GS_MIG_SINGLE) /* every MIG device is an nvidia.com/gpu */
        return fit_mig_instances(g, -1, r->count, a);
    if (g->sharing == GS_SHARING_TIME_SLICING || g->sharing == GS_SHARING_MPS)
        return fit_whole_slots(g, r->count, a);
    /* exclusive devices; on a vGPU node a whole GPU is a vGPU with all its memory */
    hami_sel hs = {0};
    bool sel = has_selection(g, r, &hs);
    uint32_t healthy = 0, idle = 0;
    for (uint32_t i = 0; i < g->ndevs; i++) {
        const gs_gpu_dev *d = &g->devs[i];
        if (!dev_usable(d) || (sel && !dev_selected(g, &hs, i)))
            continue;
        healthy++;
        if (dev_idle(d))
            idle++;
    }
    if (healthy == 0)
        return GS_FIT_NO_GPU;
    if (r->count > healthy || r->count > GS_GPU_ASSIGN_MAX)
        return GS_FIT_NEVER;
    if (r->count > idle)
        return GS_FIT_INSUFFICIENT;
    for (uint32_t i = 0; i < g->ndevs && a->n < r->count; i++) {
        const gs_gpu_dev *d = &g->devs[i];
        if (dev_usable(d) && dev_idle(d) && !(sel && !dev_selected(g, &hs, i)))
            entry(a, i, GS_GPU__NO_MIG, 1000, d->mem_mib, d->slots ? d->slots : 1);
    }
    return GS_FIT_OK;
}

/* ---------------------------------------------------------------- shares */
/*
 * One share resolved against one device: a share of compute also reserves the same
 * fraction of memory and a share of memory the same fraction of compute, so that every
 * convention accounts in both units (gpu.h):
 *   milli_eff = max(milli, ceil(mem * 1000 / dev_mem), mem_pct * 10)
 *   mem_eff   = max(mem, milli * dev_mem / 1000, mem_pct * dev_mem / 100)
 * A device whose memory is unknown can host compute shares and percentages but not an
 * absolute amount of memory. Returns false if the share can never be on this device.
 *
 * On vGPU nodes (HAMi, Volcano vGPU) the two are independent, as HAMi-core enforces them
 * and HAMi's scheduler accounts them: gpucores reserve compute only, gpumem (or its
 * percentage) memory only.
 */
static bool resolve_share(const gs_gpu_dev *d, const gs_gpu_request *r, bool independent,
                          uint32_t *milli_eff, uint32_t *mem_eff)
{
    uint64_t dm = d->mem_mib;
    uint64_t milli = r->milli, mem = r->mem_mib, pct = r->mem_pct;
    if (pct > 100)
        pct = 100;
    if (independent) {
        uint64_t b = mem ? mem : pct * dm / 100;
        if (milli > 1000 || (dm == 0 && mem) || (dm && b > dm))
            return false;
        *milli_eff = (uint32_t)milli;
        *mem_eff = dm ? (uint32_t)b : 0;
        return true;
    }
    if (dm == 0) {
        if (mem)
            return false;
        *milli_eff = (uint32_t)(milli > pct * 10 ? milli : pct * 10);
        *mem_eff = 0;
        return *milli_eff <= 1000;
    }
    if (mem > dm)
        return false;
    uint64_t m = milli;
    uint64_t from_mem = (mem * 1000 + dm - 1) / dm;
    if (from_mem > m)
        m = from_mem;
    if (pct * 10 > m)
        m = pct * 10;
    uint64_t b = mem;
    uint64_t from_milli = milli * dm / 1000;
    if (from_milli > b)
        b = from_milli;
    uint64_t from_pct = pct * dm / 100;
    if (from_pct > b)
        b = from_pct;
    if (m > 1000 || b > dm)
        return false;
    *milli_eff = (uint32_t)m;
    *mem_eff = (uint32_t)b;
    return true;
}

/*
 * Best fit: among devices where the share fits now, the one left with the least free
 * compute after placement, ties to the lowest index; a share of count > 1 takes that many
 * distinct devices, each chosen the same way.
 */
static gs_gpu_fit fit_share(const gs_node_gpus *g, const gs_gpu_request *r, gs_gpu_assign *a)
{
    uint32_t count = r->count ? r->count : 1;
    gs_gpu_request mib;
    if (r->conv == GS_CONV_GPUSHARE && g->gpushare_mib) {
        /* --memory-unit=MiB: the pod's aliyun.com/gpu-mem is MiB on this node */
        mib = *r;
        mib.mem_mib = r->gpushare_units;
        r = &mib;
    }
    hami_sel hs = {0};
    bool sel = has_selection(g, r, &hs);
    bool vgpu = g->sharing == GS_SHARING_VGPU; /* at most `slots` pods per device */
    /* one pass resolves the share on every device and finds the best one; a share of
     * several devices re-scans the cached values */
    uint16_t eff_milli[GS_GPU__MAX_DEVS];
    uint32_t eff_mem[GS_GPU__MAX_DEVS];
    uint64_t fits_mask = 0;
    uint32_t healthy = 0, capable = 0, fits = 0;
    int best = -1;
    uint32_t best_left = 0;
    for (uint32_t i = 0; i < g->ndevs; i++) {
        const gs_gpu_dev *d = &g->devs[i];
        if (!dev_usable(d) || (sel && !dev_selected(g, &hs, i)))
            continue;
        healthy++;
        uint32_t me, be;
        if (!resolve_share(d, r, vgpu, &me, &be))
            continue;
        capable++;
        if (d->milli_used + me > 1000 || (d->mem_mib && d->mem_used + be > d->mem_mib))
            continue;
        /* HAMi's device rules: at most `split` pods; all the cores only on an idle device;
         * a pod without a core limit never lands where every core is taken */
        if (vgpu && (d->npods >= d->slots || (me == 1000 && d->npods > 0) ||
                     (me == 0 && d->milli_used >= 1000)))
            continue;
        fits++;
        fits_mask |= 1ull << i;
        eff_milli[i] = (uint16_t)me;
        eff_mem[i] = be;
        uint32_t left = 1000u - d->milli_used - me;
        if (best < 0 || left < best_left) {
            best = (int)i;
            best_left = left;
        }
    }
    if (healthy == 0)
        return GS_FIT_NO_GPU;
    if (count > capable || count > GS_GPU_ASSIGN_MAX)
        return GS_FIT_NEVER;
    if (count > fits)
        return GS_FIT_INSUFFICIENT;
    for (uint32_t k = 0; k < count; k++) {
        if (k > 0) {
            best = -1;
            for (uint64_t m = fits_mask; m; m &= m - 1) {
                uint32_t i = (uint32_t)__builtin_ctzll(m);
                uint32_t left = 1000u - g->devs[i].milli_used - eff_milli[i];
                if (best < 0 || left < best_left) {
                    best = (int)i;
                    best_left = left;
                }
            }
        }
        fits_mask &= ~(1ull << best);
        entry(a, (uint32_t)best, GS_GPU__NO_MIG, eff_milli[best], eff_mem[best], 0);
    }
    return GS_FIT_OK;
}

/* ---------------------------------------------------------------- entry points */
gs_gpu_fit gs_gpu_fit_node(const gs_node_gpus *g, const gs_gpu_request *r, gs_gpu_assign *out)
{
    gs_gpu_assign a;
    a.n = 0;
    if (out)
        out->n = 0;
    if (r->kind == GS_GPU_NONE)
        return GS_FIT_OK;
    /* resource family first: NodeResourcesFit sees the request's resource name, and a node
     * that does not advertise it has none ("Insufficient <resource>") */
    if (!(g->families & (r->families ? r->families : GS_FAMS_ANY)))
        return GS_FIT_NO_GPU;
    if (!models_allow(g, r))
        return GS_FIT_MODEL;
    if (g->ndevs == 0 || g->ndevs > GS_GPU__MAX_DEVS)
        return GS_FIT_NO_GPU;
    if (r->count == 0 && r->kind != GS_GPU_SHARE)
        return GS_FIT_OK;
    gs_gpu_fit f;
    switch (r->kind) {
    case GS_GPU_WHOLE: f = fit_whole(g, r, &a); break;
    case GS_GPU_SHARE: f = fit_share(g, r, &a); break;
    case GS_GPU_MIG: f = fit_mig(g, r, &a); break;
    default: return GS_FIT_OK;
    }
    if (f == GS_FIT_OK && out)
        memcpy(out, &a, sizeof a);
    return f;
}

void gs_gpu_bind(gs_node_gpus *g, const gs_gpu_assign *a)
{
    for (uint32_t i = 0; i < a->n && i < GS_GPU_ASSIGN_MAX; i++) {
        if (a->dev[i] >= g->ndevs)
            continue;
        gs_gpu_dev *d = &g->devs[a->dev[i]];
        if (a->mig[i] != GS_GPU__NO_MIG) {
            if (a->mig[i] < g->nmig)
                g->mig[a->mig[i]].used = 1;
        } else {
            d->milli_used = (uint16_t)(d->milli_used + a->milli[i]);
            d->mem_used += a->mem[i];
            d->slots_used = (uint16_t)(d->slots_used + a->slots[i]);
        }
        d->npods++;
    }
}

void gs_gpu_unbind(gs_node_gpus *g, const gs_gpu_assign *a)
{
    for (uint32_t i = 0; i < a->n && i < GS_GPU_ASSIGN_MAX; i++) {
        if (a->dev[i] >= g->ndevs)
            continue;
        gs_gpu_dev *d = &g->devs[a->dev[i]];
        if (a->mig[i] != GS_GPU__NO_MIG) {
            if (a->mig[i] < g->nmig)
                g->mig[a->mig[i]].used = 0;
        } else {
            d->milli_used = (uint16_t)(d->milli_used - a->milli[i]);
            d->mem_used -= a->mem[i];
            d->slots_used = (uint16_t)(d->slots_used - a->slots[i]);
        }
        d->npods--;
    }
}

void gs_gpu_free_summary(const gs_node_gpus *g, gs_gpu_free *out)
{
    memset(out, 0, sizeof *out);
    for (uint32_t i = 0; i < g->ndevs; i++) {
        const gs_gpu_dev *d = &g->devs[i];
        if (d->flags & GS_DEV_UNHEALTHY)
            continue;
        out->devices++;
        if (d->flags & GS_DEV_MIG_ENABLED)
            continue;
        if (dev_idle(d))
            out->whole_free++;
        if (d->milli_used < 1000)
            out->milli_free += 1000u - d->milli_used;
    }
    for (uint32_t i = 0; i < g->nmig; i++) {
        const gs_mig_inst *m = &g->mig[i];
        if (!m->used && m->dev < g->ndevs && !(g->devs[m->dev].flags & GS_DEV_UNHEALTHY))
            out->mig_free++;
    }
}

/* ---------------------------------------------------------------- describe */
static void put(char *buf, size_t cap, size_t *o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t cap, size_t *o, const char *fmt, ...)
{
    if (*o + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *o, cap - *o, fmt, ap);
    va_end(ap);
    if (n > 0)
        *o = (*o + (size_t)n < cap) ? *o + (size_t)n : cap - 1;
}

void gs_gpu_assign_describe(const gs_node_gpus *g, const gs_gpu_assign *a, char *buf, size_t cap)
{
    if (!buf || !cap)
        return;
    buf[0] = '\0';
    size_t o = 0;
    if (a->n == 0) {
        put(buf, cap, &o, "none");
        return;
    }
    bool in_whole = false; /* inside a "gpu a,b" run of whole devices */
    for (uint32_t i = 0; i < a->n && i < GS_GPU_ASSIGN_MAX; i++) {
        unsigned dev = a->dev[i];
        const gs_gpu_dev *d = dev < g->ndevs ? &g->devs[dev] : NULL;
        if (a->mig[i] != GS_GPU__NO_MIG) {
            const gs_mig_inst *m = a->mig[i] < g->nmig ? &g->mig[a->mig[i]] : NULL;
            const char *pname = (m && g->mig_model && m->profile < g->mig_model->nprofiles)
                                    ? g->mig_model->profiles[m->profile].name
                                    : "?";
            put(buf, cap, &o, "%smig %s gpu %u @%u", i ? ", " : "", pname, dev,
                m ? m->start : 0);
            in_whole = false;
        } else if (a->slots[i] && d && (d->slots <= 1 || a->slots[i] == d->slots) &&
                   a->milli[i] == 1000) { /* an exclusive device (a whole vGPU node GPU too) */
            if (in_whole)
                put(buf, cap, &o, ",%u", dev);
            else
                put(buf, cap, &o, "%sgpu %u", i ? ", " : "", dev);
            in_whole = true;
        } else if (a->slots[i]) {
            put(buf, cap, &o, "%sgpu %u (%u slot%s)", i ? ", " : "", dev, a->slots[i],
                a->slots[i] == 1 ? "" : "s");
            in_whole = false;
        } else {
            put(buf, cap, &o, "%sgpu %u (%um", i ? ", " : "", dev, a->milli[i]);
            if (a->mem[i])
                put(buf, cap, &o, ", %uMi", a->mem[i]);
            put(buf, cap, &o, ")");
            in_whole = false;
        }
    }
}

/* ---------------------------------------------------------------- bound pods, scores */
int gs_gpu_bound_cmp(int64_t start_a, uint64_t order_a, int64_t start_b, uint64_t order_b)
{
    if (start_a != start_b)
        return start_a < start_b ? -1 : 1;
    return (order_a > order_b) - (order_a < order_b);
}

int64_t gs_gpu_binpack_score(const gs_node_gpus *g, const gs_gpu_request *r, const gs_gpu_assign *a)
{
    if (!a->n)
        return 0;
    if (r->kind == GS_GPU_MIG) {
        uint32_t total = 0, used = 0;
        for (uint32_t i = 0; i < g->nmig; i++) {
            const gs_mig_inst *m = &g->mig[i];
            if (m->dev >= g->ndevs || (g->devs[m->dev].flags & GS_DEV_UNHEALTHY))
                continue;
            total++;
            used += m->used != 0;
        }
        used += a->n;
        return total ? (int64_t)(used > total ? total : used) * 100 / total : 0;
    }
    if (r->kind == GS_GPU_WHOLE) {
        uint64_t total = 0, used = 0;
        for (uint32_t i = 0; i < g->ndevs; i++) {
            const gs_gpu_dev *d = &g->devs[i];
            if (!dev_usable(d))
                continue;
            total += d->slots ? d->slots : 1;
            used += d->slots_used;
        }
        for (uint32_t i = 0; i < a->n; i++)
            used += a->slots[i];
        return total ? (int64_t)((used > total ? total : used) * 100 / total) : 0;
    }
    int64_t s = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        if (a->dev[i] >= g->ndevs)
            continue;
        int64_t used = g->devs[a->dev[i]].milli_used + a->milli[i];
        s += (used > 1000 ? 1000 : used) / 10;
    }
    return s / a->n;
}
