/*
 * idle.c - idle tracking (monitor.h, "idle tracking"; additions in dcgm.h): per device, since
 * when its utilization has stayed under the threshold.
 *
 * Device key: node + (GPU UUID, else the gpu index) + MIG GPU instance (GPU_I_ID, -1 for a
 * whole GPU). Per round, every series of a device is folded into one value, the highest:
 *  - a whole GPU may come with DCGM_FI_DEV_GPU_UTIL and DCGM_FI_PROF_GR_ENGINE_ACTIVE (both
 *    read as ratios): the higher wins (busy by either is busy); with one of them, that one;
 *  - a MIG instance only has DCGM_FI_PROF_GR_ENGINE_ACTIVE (DCGM does not report GPU_UTIL
 *    for MIG devices);
 *  - dcgm-exporter with pod mapping writes one series per pod sharing a GPU, each with the
 *    whole GPU's value: one device, the highest value, and the pods counted. With exactly
 *    one pod its namespace and name are kept; with several (a shared GPU) they are "" and
 *    gs_idle_gpu.pods says how many: the monitor reports it as "shared by N pods".
 * Stretch: a value strictly under the threshold is idle, at or above it busy. A busy value
 * ends the stretch; the next idle one starts a new one at its time (minus the look-back,
 * gs_idle_set_lookback). A change of the pods the mapping names (another pod, or another
 * number of them) starts the stretch over too: idleness is the holder's. A device absent
 * from a round is forgotten. Times are the samples' timestamps when given, else now_ms;
 * a stretch's length is measured between sample times (first to last), so the exporters'
 * clocks need not agree with the monitor's.
 *
 * Memory: one dense array of devices, an open-addressing hash table of indices into it
 * (rebuilt when devices are forgotten), strings in an arena that is compacted when more
 * than half of it is garbage; scratch for the pod count reused between rounds. Nothing is
 * allocated per sample once the arrays have grown to the number of devices.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/dcgm.h"
#include "gpusched/monitor.h"

typedef struct idev {
    /* key */
    const char *node, *uuid; /* arena */
    int32_t gpu, gi;         /* gpu index (-1 unknown); GPU_I_ID (-1 whole GPU) */
    uint64_t hash;
    /* what is reported */
    const char *model, *profile, *ns, *pod; /* arena */
    char gpu_txt[16], gi_txt[16];
    double util, max_util;
    int64_t idle_since; /* -1: not in an idle stretch */
    int64_t last_ms;    /* time of the last value */
    uint32_t pods;      /* pods named by the mapping in the last round */
    bool known;         /* seen in an earlier round */
    /* this round */
    uint32_t round;
    double r_val;
    int64_t r_ts;
    const char *r_ns, *r_pod; /* the round's strings (the set's), for one pod */
    uint32_t r_pods;
} idev;

typedef struct podref {
    uint32_t dev;
    const char *ns, *pod;
} podref;

struct gs_idle_tracker {
    double threshold;
    int64_t window_ms, lookback_ms;
    idev *dev;
    size_t n, cap;
    uint32_t *slot; /* index + 1; 0 empty */
    size_t nslot;   /* power of two */
    uint32_t round;
    int64_t last_now; /* now_ms of the last observe; -1 before the first */
    gs_arena arena;
    size_t live_bytes; /* arena bytes the devices' strings took at the last compaction */
    GS_VEC(podref) pods;
    GS_VEC(const idev *) order;
    GS_VEC(gs_idle_gpu) list;
    GS_VEC(uint32_t) list_pods;
};

#define ARENA_BLOCK 16384u
#define STALE_MIN_MS 300000 /* gs_idle_list: rounds older than max(window, this) say nothing */

gs_idle_tracker *gs_idle_new(double threshold, int64_t window_ms, gs_error *err)
{
    if (!(threshold >= 0 && threshold <= 1)) {
        gs_fail(err, GS_ERR_USAGE, "idle threshold %g: expected a ratio from 0 to 1", threshold);
        return NULL;
    }
    if (window_ms < 0) {
        gs_fail(err, GS_ERR_USAGE, "idle window %lld ms: expected 0 or more", (long long)window_ms);
        return NULL;
    }
    gs_idle_tracker *t = calloc(1, sizeof *t);
    if (!t) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    t->threshold = threshold;
    t->window_ms = window_ms;
    t->last_now = -1;
    gs_arena_init(&t->arena, ARENA_BLOCK);
    return t;
}

void gs_idle_free(gs_idle_tracker *t)
{
    if (!t)
        return;
    free(t->dev);
    free(t->slot);
    gs_arena_free(&t->arena);
    gs_vec_free(t->pods);
    gs_vec_free(t->order);
    gs_vec_free(t->list);
    gs_vec_free(t->list_pods);
    free(t);
}

void gs_idle_set_lookback(gs_idle_tracker *t, int64_t lookback_ms)
{
    t->lookback_ms = lookback_ms > 0 ? lookback_ms : 0;
}

size_t gs_idle_devices(const gs_idle_tracker *t) { return t->n; }

size_t gs_idle_bytes(const gs_idle_tracker *t)
{
    return sizeof *t + t->cap * sizeof *t->dev + t->nslot * sizeof *t->slot + t->arena.used_total +
           t->pods.cap * sizeof *t->pods.v + t->order.cap * sizeof *t->order.v +
           t->list.cap * sizeof *t->list.v + t->list_pods.cap * sizeof *t->list_pods.v;
}


/* ---------------------------------------------------------------- keys and the table */


/* A sample's key: the GPU index counts only when there is no UUID. */
static uint64_t key_hash(const char *node, const char *uuid, int32_t gpu, int32_t gi)
{
    uint64_t h = GS_HASH_INIT;
    h = gs_hash_mix(h, node, strlen(node) + 1);
    h = gs_hash_mix(h, uuid, strlen(uuid) + 1);
    int32_t g = uuid[0] ? -1 : gpu;
    h = gs_hash_mix(h, &g, sizeof g);
    h = gs_hash_mix(h, &gi, sizeof gi);
    return h;
}

static bool key_eq(const idev *d, const char *node, const char *uuid, int32_t gpu, int32_t gi)
{
    if (d->gi != gi || strcmp(d->node, node) != 0 || strcmp(d->uuid, uuid) != 0)
        return false;
    return uuid[0] || d->gpu == gpu;
}

static int table_build(gs_idle_tracker *t, size_t want)
{
    size_t ns = 16;
    while (ns < want * 2)
        ns *= 2;
    if (ns != t->nslot) {
        uint32_t *s = calloc(ns, sizeof *s);
        if (!s)
            return -1;
        free(t->slot);
        t->slot = s;
        t->nslot = ns;
    } else {
        memset(t->slot, 0, ns * sizeof *t->slot);
    }
    for (size_t i = 0; i < t->n; i++) {
        size_t j = (size_t)t->dev[i].hash & (t->nslot - 1);
        while (t->slot[j])
            j = (j + 1) & (t->nslot - 1);
        t->slot[j] = (uint32_t)i + 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- strings */

static const char *keep(gs_idle_tracker *t, const char *s, const char *prev)
{
    if (!s[0])
        return "";
    if (prev && strcmp(prev, s) == 0)
        return prev;
    return gs_arena_strdup(&t->arena, s);
}

/* Copy every device's strings into a fresh arena when the arena has grown past twice what
 * the strings took at the last compaction (forgotten devices and changed pods leave garbage
 * behind; growth without garbage doubles the mark, so copying stays O(1) per byte). Equal
 * neighbouring strings (the node of a node's GPUs) are shared again. */
static int compact(gs_idle_tracker *t)
{
    if (t->arena.used_total <= 2 * t->live_bytes + 4 * ARENA_BLOCK)
        return 0;
    gs_arena na;
    gs_arena_init(&na, ARENA_BLOCK);
    size_t live = 0;
    const char *pn = NULL, *pm = NULL, *pp = NULL, *pns = NULL; /* previous copies */
    const char *on = NULL, *om = NULL, *op = NULL, *ons = NULL; /* their originals */
    for (size_t i = 0; i < t->n; i++) {
        idev *d = &t->dev[i];
        const char **f[6] = {&d->node, &d->uuid, &d->model, &d->profile, &d->ns, &d->pod};
        for (int k = 0; k < 6; k++) {
            const char *s = *f[k];
            if (!s[0])
                continue;
            const char **pc = k == 0 ? &pn : k == 2 ? &pm : k == 3 ? &pp : k == 4 ? &pns : NULL;
            const char **po = k == 0 ? &on : k == 2 ? &om : k == 3 ? &op : k == 4 ? &ons : NULL;
            if (pc && *po == s) {
                *f[k] = *pc;
                continue;
            }
            char *c = gs_arena_strdup(&na, s);
            if (!c) {
                gs_arena_free(&na);
                return -1;
            }
            live += (strlen(s) + 16) & ~(size_t)15; /* the arena's 16-byte rounding */
            if (pc) {
                *po = s;
                *pc = c;
            }
            *f[k] = c;
        }
    }
    gs_arena_free(&t->arena);
    t->arena = na;
    t->live_bytes = live;
    return 0;
}

/* ---------------------------------------------------------------- observe */

static int podref_cmp(const void *a, const void *b)
{
    const podref *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    int c = strcmp(x->ns, y->ns);
    return c ? c : strcmp(x->pod, y->pod);
}

/* The device of sample s, added when new; NULL on OOM. */
static idev *device_of(gs_idle_tracker *t, const gs_util_sample *s, const idev *prev)
{
    uint64_t h = key_hash(s->node, s->uuid, s->gpu, s->mig_instance);
    size_t j = (size_t)h & (t->nslot - 1);
    for (; t->slot[j]; j = (j + 1) & (t->nslot - 1)) {
        idev *d = &t->dev[t->slot[j] - 1];
        if (d->hash == h && key_eq(d, s->node, s->uuid, s->gpu, s->mig_instance))
            return d;
    }
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 64;
        idev *nv = realloc(t->dev, nc * sizeof *nv);
        if (!nv)
            return NULL;
        t->dev = nv;
        t->cap = nc;
        prev = NULL; /* it pointed into the old array */
    }
    idev *d = &t->dev[t->n];
    memset(d, 0, sizeof *d);
    d->hash = h;
    d->gpu = s->gpu;
    d->gi = s->mig_instance;
    d->node = keep(t, s->node, prev ? prev->node : NULL);
    d->uuid = keep(t, s->uuid, NULL);
    d->model = keep(t, s->model, prev ? prev->model : NULL);
    d->profile = keep(t, s->mig_profile, prev ? prev->profile : NULL);
    d->ns = d->pod = "";
    if (!d->node || !d->uuid || !d->model || !d->profile)
        return NULL;
    if (!d->uuid[0])
        snprintf(d->gpu_txt, sizeof d->gpu_txt, "%d", (int)d->gpu);
    if (d->gi >= 0)
        snprintf(d->gi_txt, sizeof d->gi_txt, "%d", (int)d->gi);
    d->idle_since = -1;
    t->slot[j] = (uint32_t)t->n + 1;
    t->n++;
    if (t->n * 2 > t->nslot && table_build(t, t->n) < 0)
        return NULL;
    return &t->dev[t->n - 1];
}

int gs_idle_observe(gs_idle_tracker *t, const gs_util_set *round, int64_t now_ms, gs_error *err)
{
    if (!t->slot && table_build(t, 16) < 0)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    t->round++;
    if (t->round == 0) { /* wrapped: no device may look seen in this round */
        for (size_t i = 0; i < t->n; i++)
            t->dev[i].round = 0;
        t->round = 1;
    }
    t->pods.n = 0;
    t->list.n = 0;
    t->list_pods.n = 0;
    idev *prev = NULL;
    for (size_t i = 0; i < round->n; i++) {
        const gs_util_sample *s = &round->v[i];
        if (!s->uuid[0] && s->gpu < 0)
            continue; /* neither UUID nor index: no device to put it on */
        idev *d = device_of(t, s, prev);
        if (!d)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        prev = d;
        if (d->round != t->round) {
            d->round = t->round;
            d->r_val = s->util;
            d->r_ts = s->ts_ms;
            d->r_pods = 0;
            d->r_ns = d->r_pod = "";
        } else {
            if (s->util > d->r_val)
                d->r_val = s->util;
            if (s->ts_ms > d->r_ts)
                d->r_ts = s->ts_ms;
        }
        if (s->pod[0]) {
            podref pr = {(uint32_t)(d - t->dev), s->ns, s->pod};
            if (gs_vec_push(t->pods, pr) < 0)
                return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        }
    }
    /* pods per device: distinct (namespace, name) pairs; series of several families and
     * containers name the same pod more than once */
    if (t->pods.n > 1)
        qsort(t->pods.v, t->pods.n, sizeof *t->pods.v, podref_cmp);
    for (size_t i = 0; i < t->pods.n; i++) {
        const podref *p = &t->pods.v[i];
        if (i > 0 && p->dev == t->pods.v[i - 1].dev && !strcmp(p->ns, t->pods.v[i - 1].ns) &&
            !strcmp(p->pod, t->pods.v[i - 1].pod))
            continue;
        idev *d = &t->dev[p->dev];
        if (d->r_pods++ == 0) {
            d->r_ns = p->ns;
            d->r_pod = p->pod;
        }
    }
    /* the stretches; devices absent from this round are forgotten */
    size_t w = 0;
    bool removed = false, oom = false;
    for (size_t i = 0; i < t->n; i++) {
        idev *d = &t->dev[i];
        if (d->round != t->round) {
            removed = true;
            continue;
        }
        int64_t at = d->r_ts > 0 ? d->r_ts : now_ms;
        const char *ns = d->r_pods == 1 ? d->r_ns : "", *pod = d->r_pods == 1 ? d->r_pod : "";
        if (d->known && (d->r_pods != d->pods || strcmp(ns, d->ns) != 0 || strcmp(pod, d->pod) != 0))
            d->idle_since = -1; /* another holder: its own stretch */
        if (strcmp(ns, d->ns) != 0 && !(d->ns = keep(t, ns, NULL))) {
            d->ns = ""; /* finish the round consistently, then fail */
            oom = true;
        }
        if (strcmp(pod, d->pod) != 0 && !(d->pod = keep(t, pod, NULL))) {
            d->pod = "";
            oom = true;
        }
        d->pods = d->r_pods;
        d->known = true;
        if (d->r_val >= t->threshold) {
            d->idle_since = -1;
        } else if (d->idle_since < 0) {
            d->idle_since = at - t->lookback_ms;
            d->max_util = d->r_val;
        } else if (d->r_val > d->max_util) {
            d->max_util = d->r_val;
        }
        d->util = d->r_val;
        d->last_ms = at;
        if (w != i)
            t->dev[w] = *d;
        w++;
    }
    t->n = w;
    t->last_now = now_ms;
    if (oom || (removed && table_build(t, t->n) < 0))
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    if (compact(t) < 0)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    return 0;
}

/* ---------------------------------------------------------------- list */

static int dev_cmp(const void *a, const void *b)
{
    const idev *x = *(const idev *const *)a, *y = *(const idev *const *)b;
    int c = strcmp(x->node, y->node);
    if (c)
        return c;
    if (x->uuid[0] && y->uuid[0])
        c = strcmp(x->uuid, y->uuid);
    else if (!x->uuid[0] && !y->uuid[0])
        c = (x->gpu > y->gpu) - (x->gpu < y->gpu);
    else
        c = x->uuid[0] ? 1 : -1; /* indexes before UUIDs */
    if (c)
        return c;
    return (x->gi > y->gi) - (x->gi < y->gi);
}

size_t gs_idle_list(gs_idle_tracker *t, int64_t now_ms, const gs_idle_gpu **out)
{
    *out = NULL;
    t->list.n = 0;
    t->list_pods.n = 0;
    /* no round for longer than the window (at least STALE_MIN_MS): the sources went
     * quiet and the last data no longer says anything about now */
    int64_t stale = t->window_ms > STALE_MIN_MS ? t->window_ms : STALE_MIN_MS;
    if (t->last_now < 0 || now_ms - t->last_now > stale)
        return 0;
    t->order.n = 0;
    for (size_t i = 0; i < t->n; i++) {
        const idev *d = &t->dev[i];
        if (d->idle_since >= 0 && d->last_ms - d->idle_since >= t->window_ms &&
            gs_vec_push(t->order, d) < 0)
            return 0;
    }
    size_t m = t->order.n;
    if (!m || gs_vec_reserve(t->list, m) || gs_vec_reserve(t->list_pods, m))
        return 0;
    qsort(t->order.v, m, sizeof *t->order.v, dev_cmp);
    for (size_t i = 0; i < m; i++) {
        const idev *d = t->order.v[i];
        t->list_pods.v[i] = d->pods;
        gs_idle_gpu g = {
            .node = d->node,
            .gpu = d->uuid[0] ? d->uuid : d->gpu_txt,
            .mig_instance = d->gi_txt,
            .mig_profile = d->profile,
            .model = d->model,
            .ns = d->ns,
            .pod = d->pod,
            .pods = d->pods,
            .util = d->util,
            .max_util = d->max_util,
            .idle_since_ms = d->idle_since,
        };
        t->list.v[i] = g;
    }
    t->list.n = m;
    t->list_pods.n = m;
    *out = t->list.v;
    return m;
}
