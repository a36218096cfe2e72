/*
 * monitor.c - gpusched monitor's core (monitor.h, "the monitor").
 *
 * Data flow:
 *   informer threads -> gs_live_store -> gs_monitor_observer: a change is queued (key,
 *     pruned text, restart facts from the raw text) unless the monitor already holds the
 *     same content (a relist puts every object again: those are dropped here);
 *   gs_monitor_update (the monitor's loop thread): the queue is applied to the "world":
 *     one gs_snapshot holding every node, pod, quota, priority class, PDB and namespace
 *     parsed once per change (an update appends the new object and moves it into the old
 *     one's slot; the arena's garbage is reclaimed by re-reading the store when it
 *     outweighs the live objects), plus compact facts per pod and per node;
 *   pending GPU pods are grouped by shape (namespace, requests, GPU request, tolerations,
 *     selectors, affinity, priority): explain runs once per shape, on a view of the world
 *     holding the GPU nodes, the pods bound to them and one pod per shape, with the engine
 *     judging each shape against the bound pods alone (gs_config.evaluate_only). A shape's
 *     answer is kept until something it depends on changes: a GPU node's spec or labels,
 *     a quota, a priority class or a PDB invalidate every answer; pods bound or released
 *     on GPU nodes make only the answers that depend on free capacity stale, and those are
 *     refreshed at most once per explain interval (a new shape is explained at once);
 *   the published state (gauges, the pending list, hygiene, device-plugin problems, idle
 *     devices) is recounted from the facts after each update that changed something, and
 *     rendering reads it under the lock: a scrape never calls the API server (it may wait
 *     for an update in progress).
 *
 * Counting once: the scheduling-duration histogram and the preemption counters keep a
 * flag per pod; a pod whose PodScheduled (or DisruptionTarget) transition happened before
 * the monitor began was counted by an earlier run and is only marked.
 */
#define _GNU_SOURCE 1 /* memmem */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpusched/dra.h"
#include "gpusched/engine.h"
#include "gpusched/gpu.h"
#include "gpusched/kube.h"
#include "gpusched/monitor.h"
#include "util/json_int.h"

#define DEFAULT_MAX_SERIES 2000
#define RESTART_WINDOW_MS (10LL * 60 * 1000) /* a restart this recent counts as restarting */
#define QUOTA_EVENT_WINDOW_MS (10LL * 60 * 1000)
#define COMPACT_MIN_GARBAGE (64u << 20)

/* ================================================================ a u64 -> u64 map */
/* Open addressing, linear probing, backward-shift deletion. Key 0 is reserved (keys are
 * 64-bit hashes; a 0 hash is mapped to 1). */
typedef struct u64map {
    uint64_t *k, *v;
    size_t cap, n; /* cap: power of two */
} u64map;

static uint64_t nz(uint64_t h) { return h ? h : 1; }

static size_t u64map_find(const u64map *m, uint64_t key)
{
    size_t mask = m->cap - 1, i = (size_t)(key * 0x9E3779B97F4A7C15ull) & mask;
    while (m->k[i] && m->k[i] != key)
        i = (i + 1) & mask;
    return i;
}

static bool u64map_get(const u64map *m, uint64_t key, uint64_t *val)
{
    if (!m->cap)
        return false;
    size_t i = u64map_find(m, key);
    if (!m->k[i])
        return false;
    if (val)
        *val = m->v[i];
    return true;
}

static int u64map_put(u64map *m, uint64_t key, uint64_t val)
{
    if ((m->n + 1) * 4 > m->cap * 3) {
        size_t nc = m->cap ? m->cap * 2 : 1024;
        uint64_t *nk = calloc(nc, sizeof *nk), *nv = calloc(nc, sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return -1;
        }
        u64map o = *m;
        m->k = nk, m->v = nv, m->cap = nc;
        for (size_t i = 0; i < o.cap; i++)
            if (o.k[i]) {
                size_t j = u64map_find(m, o.k[i]);
                m->k[j] = o.k[i];
                m->v[j] = o.v[i];
            }
        free(o.k);
        free(o.v);
    }
    size_t i = u64map_find(m, key);
    if (!m->k[i]) {
        m->k[i] = key;
        m->n++;
    }
    m->v[i] = val;
    return 0;
}

static void u64map_del(u64map *m, uint64_t key)
{
    if (!m->cap)
        return;
    size_t mask = m->cap - 1, i = u64map_find(m, key);
    if (!m->k[i])
        return;
    m->k[i] = 0;
    m->n--;
    for (size_t j = (i + 1) & mask; m->k[j]; j = (j + 1) & mask) {
        size_t home = (size_t)(m->k[j] * 0x9E3779B97F4A7C15ull) & mask;
        /* move j back to i when its home is not in (i, j] cyclically */
        bool between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!between) {
            m->k[i] = m->k[j];
            m->v[i] = m->v[j];
            m->k[j] = 0;
            i = j;
        }
    }
}

static void u64map_free(u64map *m)
{
    free(m->k);
    free(m->v);
    memset(m, 0, sizeof *m);
}

/* ================================================================ reasons */
enum {
    R_TAINT = 0,
    R_QUOTA,
    R_MODEL,
    R_MIG_PROFILE,
    R_FAMILY,
    R_FRAGMENTATION,
    R_CPU_MEM,
    R_INSUFFICIENT,
    R_PREEMPTION,
    R_AFFINITY,
    R_GATED,
    R_OTHER,
    R_FITS_NOW,
    /* a claim of the pod cannot be allocated (explain's GS_FIX_CLAIM, by gs_dra_why_kind) */
    R_CLAIM_NO_CLASS,
    R_CLAIM_NO_DEVICES,
    R_CLAIM_NO_MATCH,
    R_CLAIM_TOO_MANY,
    R_CLAIM_ALLOCATED,
    R_CLAIM_CONSTRAINT,
    R_CLAIM_PINNED,
    R_CLAIM_ERROR,
    R__COUNT
};
static const char *const reason_names[R__COUNT] = {
    "untolerated_taint", "quota_exhausted", "no_node_of_model", "mig_profile_not_offered",
    "gpu_family_not_offered", "fragmentation", "cpu_memory_held_by_non_gpu_pods",
    "insufficient_gpus", "preemption_pending", "node_affinity", "scheduling_gated",
    "unschedulable_other", "fits_now",
    "claim_class_missing", "claim_no_devices", "claim_no_matching_device", "claim_too_many_devices",
    "claim_devices_allocated", "claim_constraint", "claim_pinned", "claim_selector_error",
};
/* answers that change when pods are bound or released on GPU nodes */
static bool reason_depends_on_binds(int r)
{
    return r == R_FRAGMENTATION || r == R_CPU_MEM || r == R_INSUFFICIENT || r == R_PREEMPTION ||
           r == R_OTHER || r == R_FITS_NOW || r == R_CLAIM_ALLOCATED || r == R_CLAIM_PINNED ||
           r == R_CLAIM_CONSTRAINT;
}

static const char *const kind_names[4] = {"", "whole", "mig", "share"};

/* ================================================================ facts */
enum { PF_HAS_GPU = 1u << 0,
       PF_TERMINAL = 1u << 1,
       PF_SCHEDULED = 1u << 2,  /* spec.nodeName set */
       PF_DELETING = 1u << 3,
       PF_GATED = 1u << 4,
       PF_READY = 1u << 5,
       PF_DS = 1u << 6,         /* owned by a DaemonSet */
       PF_PLUGIN = 1u << 7,     /* a device-plugin DaemonSet's pod */
       PF_CRASHLOOP = 1u << 8,
       PF_HIST_DONE = 1u << 9,  /* scheduling duration observed (or marked as before us) */
       PF_VICTIM_DONE = 1u << 10,
       PF_PREEMPTOR_DONE = 1u << 11,
       PF_SEEN_PENDING = 1u << 12,
       PF_GPU_INVALID = 1u << 13,
       PF_CLAIMS = 1u << 14,    /* the pod names ResourceClaims (spec.resourceClaims) */
       PF_CLAIM_GPU = 1u << 15  /* a GPU pod by its claims alone (gs_dra_pod_gpu_requests) */ };

typedef struct mpod {
    uint64_t keyh;      /* hash of "ns/name" */
    uint64_t uidh;      /* hash of metadata.uid (history survives a compaction, not a new pod) */
    int32_t node;       /* node id (interned name) of spec.nodeName, -1 */
    uint32_t flags;
    uint8_t kind;       /* 0 none, 1 whole, 2 mig, 3 share */
    uint8_t reason;     /* while pending */
    uint16_t count;     /* GPU devices or instances */
    int32_t mig;        /* interned MIG profile id, -1 */
    uint64_t shape;     /* a pending GPU pod's shape (pod_shape), 0 otherwise */
    uint32_t restarts;
    double units;       /* GPUs held when bound (shares as fractions; -1: by node sharing) */
    int64_t cpu_m, mem_b;
    int64_t created_ms, last_restart_ms, reason_since_ms;
    int64_t sched_ms, victim_ms; /* PodScheduled / DisruptionTarget transitions (counting) */
    int64_t arena_bytes; /* what parsing it took in the world's arena */
} mpod;

typedef struct mnode {
    int32_t slot;        /* index in world.nodes, -1 when the node object is absent */
    uint64_t uidh;
    uint64_t sig;        /* what the engine reads from it, hashed */
    int64_t arena_bytes;
    bool gpu_node, labels_gpu, tainted, mig_failed, labels_only;
    uint32_t devs;       /* GPUs of the inventory (labels and resources) */
    uint32_t advertised; /* of them, advertised in allocatable */
    uint32_t max_advertised; /* since the node (this uid) was first seen */
    uint32_t slots;      /* time-slicing/MPS replicas per GPU (1: none) */
    int32_t pool;        /* interned pool name */
    int64_t cpu_m, mem_b; /* allocatable */
    int32_t mig_prof[16]; /* interned profile ids offered, and their instances */
    uint32_t mig_n[16];
    uint32_t nmig;
    /* recount scratch */
    double alloc_units;
    int64_t cpu_used, mem_used;
    uint32_t non_gpu, plugin_pods, plugin_ready, plugin_restarting;
    uint32_t mig_used[16];
} mnode;

/* One claim finding of explain (a GS_FIX_CLAIM fix): the claim, its reason, cause and fix. */
typedef struct mfind {
    char *claim, *why, *fix; /* "ns/name" */
    uint8_t reason;
} mfind;
#define MAX_FINDS 8

typedef struct mclass {
    uint64_t key;
    uint64_t rep;         /* keyh of one of its pods */
    uint32_t npods;       /* recount */
    uint8_t reason;
    bool valid;
    bool claims;          /* its pods name ResourceClaims: DRA changes make it stale */
    char *why, *fix, *request;
    mfind finds[MAX_FINDS];
    uint32_t nfinds;
} mclass;

typedef struct quota_entry {
    uint64_t keyh;       /* the Event's key */
    char *ns, *workload, *resource, *note;
    uint8_t kind;
    int64_t first_ms, last_ms; /* the Event's first and latest occurrence */
} quota_entry;

typedef struct qent {
    uint8_t kind;
    bool del;
    uint32_t restarts;
    bool crashloop;
    size_t koff, klen, toff, tlen;
} qent;

typedef struct pool_row {
    const char *pool;
    uint32_t nodes, in_use, untainted, non_gpu;
    double allocatable, allocated, stranded, idle;
} pool_row;

typedef struct mig_row {
    const char *pool, *profile;
    uint32_t in_use, idle;
} mig_row;

typedef GS_VEC(qent) qvec;

typedef struct series_row { /* a published gauge row */
    const char *l[5];
    double v;
} series_row;

#define NBUCKETS 14
static const double hist_le[NBUCKETS] = {1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400};
static const char *const hist_le_s[NBUCKETS] = {"1", "5", "15", "30", "60", "120", "300", "600",
                                                "1800", "3600", "7200", "14400", "28800", "86400"};
typedef struct hist {
    uint64_t b[NBUCKETS + 1];
    double sum;
    uint64_t count;
} hist;

#define UPD_NBUCKETS 10
static const double upd_le[UPD_NBUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1};
static const char *const upd_le_s[UPD_NBUCKETS] = {"0.001", "0.0025", "0.005", "0.01", "0.025",
                                                   "0.05", "0.1", "0.25", "0.5", "1"};

struct gs_monitor {
    gs_monitor_opts o;
    const char *const *taint_keys;
    size_t ntaint_keys;
    pthread_mutex_t mu;  /* the world, the published state, the counters */
    pthread_mutex_t qmu; /* the queue and the dedup map */
    pthread_mutex_t umu; /* one update at a time */
    /* queue */
    qvec q;
    gs_strbuf qdata;
    u64map seen[GS_LIVE_NKINDS]; /* keyh -> content hash */
    uint64_t dropped_same;
    /* world */
    gs_snapshot w;
    u64map slot[GS_LIVE_NKINDS]; /* keyh -> index in the world's vector of the kind */
    GS_VEC(mpod) pods;           /* parallel to w.pods */
    GS_VEC(int64_t) obj_bytes[GS_LIVE_NKINDS]; /* arena bytes per slot (other kinds) */
    GS_VEC(uint64_t) obj_key[GS_LIVE_NKINDS];  /* keyh per slot (other kinds) */
    GS_VEC(int32_t) node_of_slot;              /* world.nodes index -> node id */
    GS_VEC(mnode) nodes;                       /* by node id */
    gs_intern node_names; /* node id -> name */
    gs_intern names;  /* pools, MIG profiles */
    int64_t garbage, live_bytes;
    gs_arena scratch; /* per-object JSON trees */
    gs_read_opts ro;
    gs_live_store *store;
    /* shapes */
    GS_VEC(mclass) classes;
    u64map class_of; /* shape key -> class index */
    bool nodes_dirty, binds_dirty, idle_changed;
    /* DRA: a DeviceClass, ResourceClaim(Template) or ResourceSlice changed (the index is
     * rebuilt, every pod naming claims is judged again); dra_devices: a DeviceClass or
     * ResourceSlice changed (the claim shapes are explained again at once); claims_stale: a
     * claim changed (allocations come and go with every bind: the claim shapes are
     * explained again at most once per explain interval, as answers made stale by binds);
     * claim_pods: a pod naming claims changed */
    bool dra_dirty, dra_devices, claims_stale, claim_pods;
    gs_dra_index *dra_idx; /* over the world's DRA objects, rebuilt when they change */
    int64_t last_recount_ms, last_explain_ms;
    /* quota refusals from FailedCreate Events */
    GS_VEC(quota_entry) quotas;
    /* counters */
    gs_intern hist_keys;  /* "ns\x1fkind" */
    GS_VEC(hist) hists;
    gs_intern preempt_keys; /* "ns\x1fpc\x1frole" */
    GS_VEC(uint64_t) preempts;
    uint64_t watch_events[GS_LIVE_NKINDS], relists[GS_LIVE_NKINDS], failures[GS_LIVE_NKINDS];
    bool synced[GS_LIVE_NKINDS], informed[GS_LIVE_NKINDS];
    uint64_t dropped_series[4]; /* device_plugin, gpus_missing, idle, pending_detail */
    bool leader;
    uint64_t events_written[3];
    uint64_t dcgm_errors[2];
    hist upd;
    /* idle devices as given, and their strings */
    GS_VEC(gs_idle_gpu) idle_in;
    gs_arena idle_arena;
    /* published state (recount) */
    GS_VEC(series_row) pending_rows, oldest_rows, dp_rows, missing_rows, idle_rows;
    GS_VEC(series_row) claim_rows, claim_oldest_rows; /* pending claims by namespace, reason */
    GS_VEC(pool_row) pools_pub;
    GS_VEC(mig_row) migs_pub;
    gs_arena pub; /* strings of the published rows */
    gs_monitor_stats st;
};

/* ================================================================ small helpers */
static uint64_t hash_key(const char *k, size_t n) { return nz(gs_hash_bytes(k, n)); }

static uint64_t hash_str(uint64_t h, const char *s)
{
    h = gs_hash_mix(h, s ? s : "", s ? strlen(s) : 0);
    return gs_hash_mix(h, "\x1f", 1);
}
static uint64_t hash_i64(uint64_t h, int64_t v) { return gs_hash_mix(h, &v, sizeof v); }

static int64_t ms_of_rfc3339(const char *s)
{
    int64_t t;
    if (!s || gs_parse_rfc3339(s, &t))
        return 0;
    return t * 1000;
}

static const gs_jv *jpath(const gs_jv *v, const char *a, const char *b)
{
    v = gs_json_get(v, a);
    return b ? gs_json_get(v, b) : v;
}
static const char *jstr(const gs_jv *v) { return v && v->t == GS_JSTR ? v->s : NULL; }

/* ================================================================ the observer */
/* Restart counts and CrashLoopBackOff live in containerStatuses, which the store prunes:
 * read them from the raw text (every "restartCount": N summed). */
static void raw_restarts(const char *raw, size_t len, uint32_t *restarts, bool *crashloop)
{
    static const char key[] = "\"restartCount\":";
    uint64_t sum = 0;
    const char *p = raw, *end = raw + len;
    while (p < end) {
        const char *q = memmem(p, (size_t)(end - p), key, sizeof key - 1);
        if (!q)
            break;
        q += sizeof key - 1;
        while (q < end && (*q == ' ' || *q == '\t'))
            q++;
        uint64_t v = 0;
        while (q < end && *q >= '0' && *q <= '9' && v < 1000000000)
            v = v * 10 + (uint64_t)(*q++ - '0');
        sum += v;
        p = q;
    }
    *restarts = sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
    *crashloop = memmem(raw, len, "\"CrashLoopBackOff\"", 18) != NULL;
}

static bool is_dra_kind(gs_live_kind k)
{
    return k == GS_LIVE_DEVICECLASS || k == GS_LIVE_RESOURCECLAIM || k == GS_LIVE_RESOURCECLAIMTEMPLATE ||
           k == GS_LIVE_RESOURCESLICE;
}

static bool kind_watched(gs_live_kind k)
{
    return k <= GS_LIVE_POD || k == GS_LIVE_EVENT || k == GS_LIVE_DAEMONSET || is_dra_kind(k);
}

void gs_monitor_observer(void *monitor, gs_live_kind k, const char *key, size_t klen, const char *raw,
                         size_t raw_len, const char *text, size_t text_len)
{
    gs_monitor *m = monitor;
    if ((unsigned)k >= GS_LIVE_NKINDS || !kind_watched(k))
        return;
    uint32_t restarts = 0;
    bool crash = false;
    if (text && k == GS_LIVE_POD)
        raw_restarts(raw, raw_len, &restarts, &crash);
    uint64_t kh = hash_key(key, klen);
    uint64_t ch = 0;
    if (text) {
        ch = gs_hash_bytes(text, text_len);
        ch = hash_i64(ch, (int64_t)restarts << 1 | crash);
    }
    pthread_mutex_lock(&m->qmu);
    uint64_t old;
    bool had = u64map_get(&m->seen[k], kh, &old);
    if (text ? (had && old == ch) : !had) {
        m->dropped_same++;
        pthread_mutex_unlock(&m->qmu);
        return;
    }
    int bad = 0;
    if (text)
        bad = u64map_put(&m->seen[k], kh, ch);
    else
        u64map_del(&m->seen[k], kh);
    qent e = {.kind = (uint8_t)k, .del = !text, .restarts = restarts, .crashloop = crash,
              .koff = m->qdata.len, .klen = klen};
    gs_strbuf_add(&m->qdata, key, klen);
    e.toff = m->qdata.len;
    e.tlen = text ? text_len : 0;
    if (text)
        gs_strbuf_add(&m->qdata, text, text_len);
    if (bad || m->qdata.oom || gs_vec_push(m->q, e) < 0)
        u64map_del(&m->seen[k], kh); /* out of memory: the next put of it is taken again */
    pthread_mutex_unlock(&m->qmu);
}

size_t gs_monitor_backlog(gs_monitor *m)
{
    pthread_mutex_lock(&m->qmu);
    size_t n = m->q.n;
    pthread_mutex_unlock(&m->qmu);
    return n;
}

/* ================================================================ life */
gs_monitor *gs_monitor_new(const gs_monitor_opts *o, gs_error *err)
{
    gs_monitor *m = calloc(1, sizeof *m);
    if (!m) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (o)
        m->o = *o;
    static const char *const dflt[] = {"nvidia.com/gpu", NULL};
    m->taint_keys = m->o.taint_keys ? m->o.taint_keys : dflt;
    while (m->taint_keys[m->ntaint_keys])
        m->ntaint_keys++;
    if (!m->o.max_problem_series)
        m->o.max_problem_series = DEFAULT_MAX_SERIES;
    if (m->o.idle_threshold <= 0)
        m->o.idle_threshold = 0.05;
    if (m->o.idle_window_ms <= 0)
        m->o.idle_window_ms = 30LL * 60 * 1000;
    if (!m->o.cluster_name)
        m->o.cluster_name = "cluster";
    if (!m->o.start_ms) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        m->o.start_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    }
    m->store = m->o.store;
    if (m->o.explain_interval_ms <= 0)
        m->o.explain_interval_ms = 2000;
    if (!m->o.reclaim_bytes)
        m->o.reclaim_bytes = COMPACT_MIN_GARBAGE;
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->qmu, NULL);
    pthread_mutex_init(&m->umu, NULL);
    m->qdata = (gs_strbuf)GS_STRBUF_INIT;
    gs_snapshot_init(&m->w);
    gs_intern_init(&m->names);
    gs_intern_init(&m->node_names);
    gs_intern_init(&m->hist_keys);
    gs_intern_init(&m->preempt_keys);
    gs_arena_init(&m->scratch, 0);
    gs_arena_init(&m->idle_arena, 0);
    gs_arena_init(&m->pub, 0);
    m->ro.no_positions = true;
    return m;
}

static void free_class(mclass *c)
{
    free(c->why);
    free(c->fix);
    free(c->request);
    c->why = c->fix = c->request = NULL;
    for (uint32_t i = 0; i < c->nfinds; i++) {
        free(c->finds[i].claim);
        free(c->finds[i].why);
        free(c->finds[i].fix);
    }
    c->nfinds = 0;
}

static void free_quota(quota_entry *q)
{
    free(q->ns);
    free(q->workload);
    free(q->resource);
    free(q->note);
}

static void free_world(gs_monitor *m)
{
    gs_snapshot_free(&m->w);
    for (int k = 0; k < GS_LIVE_NKINDS; k++) {
        u64map_free(&m->slot[k]);
        gs_vec_free(m->obj_bytes[k]);
        gs_vec_free(m->obj_key[k]);
    }
    gs_vec_free(m->pods);
    gs_vec_free(m->node_of_slot);
}

void gs_monitor_free(gs_monitor *m)
{
    if (!m)
        return;
    free_world(m);
    for (int k = 0; k < GS_LIVE_NKINDS; k++)
        u64map_free(&m->seen[k]);
    gs_vec_free(m->q);
    gs_strbuf_free(&m->qdata);
    gs_vec_free(m->nodes);
    gs_intern_free(&m->names);
    gs_intern_free(&m->node_names);
    gs_intern_free(&m->hist_keys);
    gs_intern_free(&m->preempt_keys);
    gs_vec_free(m->hists);
    gs_vec_free(m->preempts);
    for (size_t i = 0; i < m->classes.n; i++)
        free_class(&m->classes.v[i]);
    gs_vec_free(m->classes);
    u64map_free(&m->class_of);
    for (size_t i = 0; i < m->quotas.n; i++)
        free_quota(&m->quotas.v[i]);
    gs_vec_free(m->quotas);
    gs_vec_free(m->idle_in);
    gs_vec_free(m->pending_rows);
    gs_vec_free(m->oldest_rows);
    gs_vec_free(m->pools_pub);
    gs_vec_free(m->migs_pub);
    gs_vec_free(m->dp_rows);
    gs_vec_free(m->missing_rows);
    gs_vec_free(m->idle_rows);
    gs_vec_free(m->claim_rows);
    gs_vec_free(m->claim_oldest_rows);
    gs_dra_index_free(m->dra_idx);
    gs_arena_free(&m->scratch);
    gs_arena_free(&m->idle_arena);
    gs_arena_free(&m->pub);
    pthread_mutex_destroy(&m->mu);
    pthread_mutex_destroy(&m->qmu);
    pthread_mutex_destroy(&m->umu);
    free(m);
}

/* ================================================================ the world */
/* The world's vector of a kind: its base, element size and count. */
static void *kvec(gs_monitor *m, gs_live_kind k, size_t **n, size_t *elem)
{
    gs_snapshot *w = &m->w;
    switch (k) {
    case GS_LIVE_NODE: *n = &w->nodes.n; *elem = sizeof *w->nodes.v; return w->nodes.v;
    case GS_LIVE_NAMESPACE: *n = &w->namespaces.n; *elem = sizeof *w->namespaces.v; return w->namespaces.v;
    case GS_LIVE_PRIORITYCLASS:
        *n = &w->priority_classes.n;
        *elem = sizeof *w->priority_classes.v;
        return w->priority_classes.v;
    case GS_LIVE_RESOURCEQUOTA: *n = &w->quotas.n; *elem = sizeof *w->quotas.v; return w->quotas.v;
    case GS_LIVE_PDB: *n = &w->pdbs.n; *elem = sizeof *w->pdbs.v; return w->pdbs.v;
    case GS_LIVE_POD: *n = &w->pods.n; *elem = sizeof *w->pods.v; return w->pods.v;
    case GS_LIVE_DAEMONSET: *n = &w->workloads.n; *elem = sizeof *w->workloads.v; return w->workloads.v;
    case GS_LIVE_DEVICECLASS:
        *n = &w->device_classes.n;
        *elem = sizeof *w->device_classes.v;
        return w->device_classes.v;
    case GS_LIVE_RESOURCECLAIM: *n = &w->claims.n; *elem = sizeof *w->claims.v; return w->claims.v;
    case GS_LIVE_RESOURCECLAIMTEMPLATE:
        *n = &w->claim_templates.n;
        *elem = sizeof *w->claim_templates.v;
        return w->claim_templates.v;
    case GS_LIVE_RESOURCESLICE:
        *n = &w->resource_slices.n;
        *elem = sizeof *w->resource_slices.v;
        return w->resource_slices.v;
    default: *n = NULL; *elem = 0; return NULL;
    }
}

static size_t kcount(gs_monitor *m, gs_live_kind k)
{
    size_t *n, e;
    kvec(m, k, &n, &e);
    return n ? *n : 0;
}

/* Read one object into the world: it lands at the end of its kind's vector. 0 with its
 * index and the arena bytes it took; -1 when the reader refused it (nothing kept). */
static int world_read(gs_monitor *m, gs_live_kind k, const char *text, size_t len, size_t *idx,
                      int64_t *bytes, gs_error *err)
{
    size_t before = kcount(m, k);
    size_t used0 = m->w.arena.used_total;
    int rc = gs_snapshot_read_buffer(&m->w, m->o.cluster_name, text, len, &m->ro, err);
    size_t *n, e;
    kvec(m, k, &n, &e);
    if (rc || !n || *n != before + 1) {
        if (n && *n > before)
            *n = before;
        if (!rc)
            gs_fail(err, GS_ERR_INVALID, "%s: not one object of the kind", gs_live_kind_get(k)->kind);
        return -1;
    }
    *idx = before;
    *bytes = (int64_t)(m->w.arena.used_total - used0);
    m->live_bytes += *bytes;
    return 0;
}

static int32_t node_id(gs_monitor *m, const char *name)
{
    int32_t id = gs_intern_find(&m->node_names, name, strlen(name));
    if (id >= 0)
        return id;
    id = gs_intern_id(&m->node_names, name, strlen(name));
    if (id < 0)
        return -1;
    mnode fresh;
    memset(&fresh, 0, sizeof fresh);
    fresh.slot = -1;
    fresh.pool = -1;
    fresh.slots = 1;
    while (m->nodes.n <= (size_t)id)
        if (gs_vec_push(m->nodes, fresh) < 0)
            return -1;
    return id;
}

/* Slot bookkeeping shared by every kind: the element at `from` (the end) replaces the one
 * at `to`, or the element at the end moves into a removed one's place. */
static void slot_move(gs_monitor *m, gs_live_kind k, size_t from, size_t to)
{
    size_t *n, e;
    char *base = kvec(m, k, &n, &e);
    if (from != to)
        memcpy(base + to * e, base + from * e, e);
    if (k == GS_LIVE_POD) {
        m->pods.v[to] = m->pods.v[from];
        u64map_put(&m->slot[k], m->pods.v[to].keyh, to);
        m->pods.n = from; /* from is always the last */
    } else {
        m->obj_key[k].v[to] = m->obj_key[k].v[from];
        m->obj_bytes[k].v[to] = m->obj_bytes[k].v[from];
        u64map_put(&m->slot[k], m->obj_key[k].v[to], to);
        m->obj_key[k].n = m->obj_bytes[k].n = from;
        if (k == GS_LIVE_NODE) {
            m->node_of_slot.v[to] = m->node_of_slot.v[from];
            m->nodes.v[m->node_of_slot.v[to]].slot = (int32_t)to;
            m->node_of_slot.n = from;
        }
    }
    *n = from;
}

static int64_t slot_bytes(gs_monitor *m, gs_live_kind k, size_t i)
{
    return k == GS_LIVE_POD ? m->pods.v[i].arena_bytes : m->obj_bytes[k].v[i];
}

/* Remove the object at index i (its key already looked up). */
static void world_remove(gs_monitor *m, gs_live_kind k, uint64_t keyh, size_t i)
{
    size_t last = kcount(m, k) - 1;
    int64_t b = slot_bytes(m, k, i);
    m->garbage += b;
    m->live_bytes -= b;
    if (k == GS_LIVE_NODE)
        m->nodes.v[m->node_of_slot.v[i]].slot = -1;
    u64map_del(&m->slot[k], keyh);
    if (i != last) {
        slot_move(m, k, last, i); /* rewrites the moved one's map entry */
    } else {
        size_t *n, e;
        kvec(m, k, &n, &e);
        *n = last;
        if (k == GS_LIVE_POD)
            m->pods.n = last;
        else {
            m->obj_key[k].n = m->obj_bytes[k].n = last;
            if (k == GS_LIVE_NODE)
                m->node_of_slot.n = last;
        }
    }
}

/* ---------------------------------------------------------------- pods */
static bool has_device_resource(const gs_pod *p)
{
    for (uint32_t c = 0; c < p->ncontainers + p->ninit; c++) {
        const gs_container *ct = c < p->ncontainers ? &p->containers[c] : &p->init_containers[c - p->ncontainers];
        for (uint32_t i = 0; i < ct->requests.n; i++)
            if (gs_gpu_is_device_resource(ct->requests.items[i].name))
                return true;
    }
    return false;
}

/* cpu (milli) and memory (bytes) the pod asks for: containers summed, init containers
 * (the largest) and sidecars as upstream's effective requests, plus overhead; pod-level
 * requests win where given. */
static void pod_cpu_mem(const gs_pod *p, int64_t *cpu, int64_t *mem)
{
    int64_t c = 0, mm = 0, ic = 0, im = 0, sc = 0, sm = 0;
    for (uint32_t i = 0; i < p->ncontainers; i++) {
        const gs_quantity *q = gs_reslist_get(&p->containers[i].requests, "cpu");
        c += q ? gs_quantity_milli(q) : 0;
        q = gs_reslist_get(&p->containers[i].requests, "memory");
        mm += q ? gs_quantity_value(q) : 0;
    }
    for (uint32_t i = 0; i < p->ninit; i++) {
        const gs_container *ct = &p->init_containers[i];
        const gs_quantity *qc = gs_reslist_get(&ct->requests, "cpu");
        const gs_quantity *qm = gs_reslist_get(&ct->requests, "memory");
        int64_t vc = qc ? gs_quantity_milli(qc) : 0, vm = qm ? gs_quantity_value(qm) : 0;
        if (ct->sidecar) {
            sc += vc;
            sm += vm;
        } else {
            if (sc + vc > ic)
                ic = sc + vc;
            if (sm + vm > im)
                im = sm + vm;
        }
    }
    c += sc;
    mm += sm;
    if (ic > c)
        c = ic;
    if (im > mm)
        mm = im;
    const gs_quantity *q = gs_reslist_get(&p->pod_requests, "cpu");
    if (q)
        c = gs_quantity_milli(q);
    q = gs_reslist_get(&p->pod_requests, "memory");
    if (q)
        mm = gs_quantity_value(q);
    q = gs_reslist_get(&p->overhead, "cpu");
    c += q ? gs_quantity_milli(q) : 0;
    q = gs_reslist_get(&p->overhead, "memory");
    mm += q ? gs_quantity_value(q) : 0;
    *cpu = c;
    *mem = mm;
}

static bool contains_plugin(const char *s) { return s && strstr(s, "device-plugin") != NULL; }

/* The shape of a pending GPU pod: what explain's answer depends on (the engine's pod
 * shape, plus the namespace and priority for quotas and preemption). */
static uint64_t pod_shape(const gs_pod *p, const gs_gpu_request *g)
{
    uint64_t h = GS_HASH_INIT;
    h = hash_str(h, p->meta.namespace_);
    h = hash_str(h, p->priority_class_name);
    h = hash_i64(h, p->has_priority ? p->priority : INT64_MIN);
    h = hash_i64(h, p->preemption_policy);
    for (uint32_t c = 0; c < p->ncontainers + p->ninit; c++) {
        const gs_container *ct = c < p->ncontainers ? &p->containers[c] : &p->init_containers[c - p->ncontainers];
        h = hash_i64(h, (int64_t)c << 1 | ct->sidecar);
        for (uint32_t i = 0; i < ct->requests.n; i++) {
            h = hash_str(h, ct->requests.items[i].name);
            h = hash_i64(h, gs_quantity_milli(&ct->requests.items[i].q));
        }
    }
    for (uint32_t i = 0; i < p->overhead.n; i++) {
        h = hash_str(h, p->overhead.items[i].name);
        h = hash_i64(h, gs_quantity_milli(&p->overhead.items[i].q));
    }
    for (uint32_t i = 0; i < p->pod_requests.n; i++) {
        h = hash_str(h, p->pod_requests.items[i].name);
        h = hash_i64(h, gs_quantity_milli(&p->pod_requests.items[i].q));
    }
    int64_t gk[] = {(int64_t)g->kind, g->count, g->milli, g->mem_mib, g->mem_pct, (int64_t)g->conv,
                    g->families, g->gpushare_units, g->nmodels};
    h = gs_hash_mix(h, gk, sizeof gk);
    h = hash_str(h, g->mig_profile);
    h = hash_str(h, g->resource);
    for (uint32_t k = 0; k < g->nmodels; k++)
        h = hash_str(h, g->models[k]);
    for (unsigned bit = 1; bit <= GS_HAMI_NOUSE_UUID; bit <<= 1)
        h = hash_str(h, gs_gpu_request_hami(g, bit));
    for (uint32_t k = 0; k < p->ntolerations; k++) {
        const gs_toleration *t = &p->tolerations[k];
        h = hash_str(h, t->key);
        h = hash_str(h, t->value);
        h = hash_i64(h, (int64_t)t->op << 32 | (uint32_t)t->effect);
        h = hash_i64(h, t->has_seconds ? t->seconds : -1);
    }
    for (uint32_t k = 0; k < p->node_selector.n; k++) {
        h = hash_str(h, p->node_selector.items[k].key);
        h = hash_str(h, p->node_selector.items[k].val);
    }
    for (int pass = 0; pass < 2; pass++) {
        uint32_t nt = pass ? p->npreferred : (p->required ? p->required->nterms : 0);
        h = hash_i64(h, (int64_t)pass << 32 | nt);
        for (uint32_t t = 0; t < nt; t++) {
            const gs_sel_term *term = pass ? &p->preferred[t].term : &p->required->terms[t];
            if (pass)
                h = hash_i64(h, p->preferred[t].weight);
            for (uint32_t f = 0; f < 2; f++) {
                const gs_sel_req *r = f ? term->fields : term->exprs;
                uint32_t n = f ? term->nfields : term->nexprs;
                h = hash_i64(h, n);
                for (uint32_t i = 0; i < n; i++) {
                    h = hash_str(h, r[i].key);
                    h = hash_i64(h, (int64_t)r[i].op << 32 | r[i].nvalues);
                    for (uint32_t v = 0; v < r[i].nvalues; v++)
                        h = hash_str(h, r[i].values[v]);
                }
            }
        }
    }
    return nz(h);
}

/* The shape of a pending pod naming claims: the pod itself (explain names its claims, which
 * are its own or shared with few pods: one shape per pod). */
static uint64_t claim_shape(const gs_pod *p, uint8_t kind)
{
    uint64_t h = hash_str(GS_HASH_INIT, "claims");
    h = hash_str(h, p->meta.namespace_);
    h = hash_str(h, p->meta.name);
    h = hash_str(h, p->meta.uid);
    return nz(hash_i64(h, kind));
}

static hist *hist_for(gs_monitor *m, const char *ns, uint8_t kind)
{
    char key[600];
    int n = snprintf(key, sizeof key, "%s\x1f%s", ns, kind_names[kind]);
    if (n < 0 || (size_t)n >= sizeof key)
        return NULL;
    int32_t id = gs_intern_id(&m->hist_keys, key, (size_t)n);
    if (id < 0)
        return NULL;
    hist zero;
    memset(&zero, 0, sizeof zero);
    while (m->hists.n <= (size_t)id)
        if (gs_vec_push(m->hists, zero) < 0)
            return NULL;
    return &m->hists.v[id];
}

static void hist_observe(hist *h, const double *le, size_t nb, double v)
{
    size_t b = 0;
    while (b < nb && v > le[b])
        b++;
    h->b[b]++;
    h->sum += v;
    h->count++;
}

static void count_preemption(gs_monitor *m, const char *ns, const char *pc, const char *role)
{
    char key[800];
    int n = snprintf(key, sizeof key, "%s\x1f%s\x1f%s", ns, pc, role);
    if (n < 0 || (size_t)n >= sizeof key)
        return;
    int32_t id = gs_intern_id(&m->preempt_keys, key, (size_t)n);
    if (id < 0)
        return;
    while (m->preempts.n <= (size_t)id)
        if (gs_vec_push(m->preempts, 0) < 0)
            return;
    m->preempts.v[id]++;
}

static void pod_counts(gs_monitor *m, const gs_pod *p, mpod *f, const mpod *old, int64_t now);

/* Facts of a pod from its parsed form and its pruned JSON (conditions, scheduling gates). */
static void pod_facts(gs_monitor *m, const gs_pod *p, const char *text, size_t len, const mpod *old,
                      const qent *e, int64_t now, mpod *f)
{
    uint64_t uidh = hash_key(p->meta.uid, strlen(p->meta.uid));
    bool same = old && old->uidh == uidh;
    memset(f, 0, sizeof *f);
    f->uidh = uidh;
    f->node = p->node_name[0] ? node_id(m, p->node_name) : -1;
    f->mig = -1;
    f->created_ms = p->meta.has_creation ? p->meta.creation * 1000 : now;
    if (same)
        f->flags = old->flags & (PF_HIST_DONE | PF_VICTIM_DONE | PF_PREEMPTOR_DONE | PF_SEEN_PENDING);
    if (!strcmp(p->phase, "Succeeded") || !strcmp(p->phase, "Failed"))
        f->flags |= PF_TERMINAL;
    if (p->node_name[0])
        f->flags |= PF_SCHEDULED;
    if (p->meta.deleting)
        f->flags |= PF_DELETING;
    if (p->meta.owner_kind && !strcmp(p->meta.owner_kind, "DaemonSet")) {
        f->flags |= PF_DS;
        if (contains_plugin(p->meta.owner_name) ||
            contains_plugin(gs_labels_get(&p->meta.labels, "app.kubernetes.io/name")) ||
            contains_plugin(gs_labels_get(&p->meta.labels, "app")))
            f->flags |= PF_PLUGIN;
    }
    f->restarts = e->restarts;
    if (e->crashloop)
        f->flags |= PF_CRASHLOOP;
    f->last_restart_ms = same ? old->last_restart_ms : 0;
    if (same && e->restarts > old->restarts)
        f->last_restart_ms = now;
    pod_cpu_mem(p, &f->cpu_m, &f->mem_b);
    gs_gpu_request g;
    gs_error gerr;
    if (!gs_gpu_request_from_pod(p, &g, &gerr) && g.kind != GS_GPU_NONE) {
        f->flags |= PF_HAS_GPU;
        f->kind = g.kind == GS_GPU_WHOLE ? 1 : g.kind == GS_GPU_MIG ? 2 : 3;
        f->count = g.count;
        if (g.kind == GS_GPU_MIG) {
            f->mig = gs_intern_id(&m->names, g.mig_profile, strlen(g.mig_profile));
            f->units = g.count * gs_mig_request_fraction(g.mig_profile, NULL);
        } else if (g.kind == GS_GPU_WHOLE)
            f->units = -1; /* whole devices: a share on time-sliced nodes (recount) */
        else
            f->units = g.count * (g.milli ? g.milli / 1000.0 : 0.0);
        if (!(f->flags & (PF_TERMINAL | PF_SCHEDULED | PF_DELETING)))
            f->shape = pod_shape(p, &g);
    } else if (has_device_resource(p)) {
        f->flags |= PF_HAS_GPU | PF_GPU_INVALID;
        f->kind = 1;
        f->units = 0;
    }
    if (p->nclaims) {
        f->flags |= PF_CLAIMS;
        /* a GPU pod by its claims: kept from the last judgement until claim_facts judges
         * it again at the end of this update (the claims may not be known yet) */
        if (!(f->flags & PF_HAS_GPU) && same && (old->flags & PF_CLAIM_GPU)) {
            f->flags |= PF_HAS_GPU | PF_CLAIM_GPU;
            f->kind = old->kind;
            f->count = old->count;
            if (!(f->flags & (PF_TERMINAL | PF_SCHEDULED | PF_DELETING)))
                f->shape = claim_shape(p, old->kind);
        } else if (f->shape)
            f->shape = claim_shape(p, f->kind); /* device-plugin GPUs and claims */
    }
    /* conditions and gates from the JSON */
    int64_t sched_ms = 0, victim_ms = -1;
    gs_arena_reset(&m->scratch);
    gs_jv root;
    gs_error jerr;
    if (!gs_json_parse("pod", 1, text, len, NULL, &m->scratch, &root, &jerr)) {
        const gs_jv *gates = jpath(&root, "spec", "schedulingGates");
        if (gates && gates->t == GS_JARR && gates->n)
            f->flags |= PF_GATED;
        const gs_jv *conds = jpath(&root, "status", "conditions");
        for (uint32_t i = 0; conds && conds->t == GS_JARR && i < conds->n; i++) {
            const gs_jv *c = &conds->kids[i];
            const char *type = jstr(gs_json_get(c, "type")), *status = jstr(gs_json_get(c, "status"));
            if (!type || !status)
                continue;
            bool yes = !strcmp(status, "True");
            int64_t t = ms_of_rfc3339(jstr(gs_json_get(c, "lastTransitionTime")));
            if (!strcmp(type, "Ready") && yes)
                f->flags |= PF_READY;
            else if (!strcmp(type, "PodScheduled") && yes)
                sched_ms = t ? t : -1;
            else if (!strcmp(type, "DisruptionTarget") && yes) {
                const char *r = jstr(gs_json_get(c, "reason"));
                if (r && !strcmp(r, "PreemptionByScheduler"))
                    victim_ms = t ? t : now;
            }
        }
    }
    f->sched_ms = sched_ms;
    f->victim_ms = victim_ms;
    if (!(f->flags & PF_HAS_GPU))
        return;
    pod_counts(m, p, f, same ? old : NULL, now);
}

/* The scheduling-duration histogram and the preemption counters, once per GPU pod. old:
 * the pod's facts before this change (same uid), or NULL. */
static void pod_counts(gs_monitor *m, const gs_pod *p, mpod *f, const mpod *old, int64_t now)
{
    int64_t sched_ms = f->sched_ms, victim_ms = f->victim_ms;
    bool same = old != NULL;
    const char *pc = p->priority_class_name;
    /* scheduling duration, once per pod */
    if (!(f->flags & PF_HIST_DONE)) {
        if (f->flags & PF_SCHEDULED) {
            int64_t t = sched_ms > 0 ? sched_ms : now;
            if ((f->flags & PF_SEEN_PENDING) || t >= m->o.start_ms) {
                hist *h = hist_for(m, p->meta.namespace_, f->kind);
                double d = (double)(t - f->created_ms) / 1000.0;
                if (h)
                    hist_observe(h, hist_le, NBUCKETS, d < 0 ? 0 : d);
            }
            f->flags |= PF_HIST_DONE;
        } else if (!(f->flags & PF_TERMINAL))
            f->flags |= PF_SEEN_PENDING;
        else
            f->flags |= PF_HIST_DONE; /* ended without being scheduled */
    }
    /* preemptions, once per pod */
    if (victim_ms >= 0 && !(f->flags & PF_VICTIM_DONE)) {
        if (victim_ms >= m->o.start_ms)
            count_preemption(m, p->meta.namespace_, pc, "victim");
        f->flags |= PF_VICTIM_DONE;
    }
    if (p->nominated_node[0] && !(f->flags & (PF_PREEMPTOR_DONE | PF_SCHEDULED))) {
        if ((same && !(old->flags & PF_PREEMPTOR_DONE)) || f->created_ms >= m->o.start_ms)
            count_preemption(m, p->meta.namespace_, pc, "preemptor");
        f->flags |= PF_PREEMPTOR_DONE;
    }
}

/* ---------------------------------------------------------------- nodes */
static uint64_t labels_hash(uint64_t h, const gs_labels *l)
{
    for (uint32_t i = 0; i < l->n; i++) {
        h = hash_str(h, l->items[i].key);
        h = hash_str(h, l->items[i].val);
    }
    return h;
}

static uint64_t reslist_hash(uint64_t h, const gs_reslist *l)
{
    for (uint32_t i = 0; i < l->n; i++) {
        h = hash_str(h, l->items[i].name);
        h = hash_i64(h, gs_quantity_milli(&l->items[i].q));
    }
    return gs_hash_mix(h, "|", 1);
}

static void node_facts(gs_monitor *m, const gs_node *n, mnode *f)
{
    uint64_t uidh = hash_key(n->meta.uid, strlen(n->meta.uid));
    if (f->uidh != uidh)
        f->max_advertised = 0; /* a new node object under an old name */
    f->uidh = uidh;
    uint64_t h = GS_HASH_INIT;
    h = labels_hash(h, &n->meta.labels);
    h = labels_hash(h, &n->meta.annotations);
    for (uint32_t i = 0; i < n->ntaints; i++) {
        h = hash_str(h, n->taints[i].key);
        h = hash_str(h, n->taints[i].value);
        h = hash_i64(h, n->taints[i].effect);
    }
    h = reslist_hash(h, &n->capacity);
    h = reslist_hash(h, &n->allocatable);
    h = hash_i64(h, (int64_t)n->unschedulable << 1 | n->ready);
    f->sig = h;
    gs_node_gpus g;
    gs_error err;
    memset(&g, 0, sizeof g);
    bool inv = !gs_node_gpus_build(n, &g, &err);
    f->gpu_node = inv && g.gpu_node;
    f->labels_only = inv && g.labels_only;
    f->devs = inv ? g.ndevs : 0;
    f->advertised = 0;
    f->slots = 1;
    f->nmig = 0;
    for (uint32_t d = 0; inv && d < g.ndevs; d++) {
        if (!(g.devs[d].flags & GS_DEV_UNHEALTHY))
            f->advertised++;
        if ((g.sharing == GS_SHARING_TIME_SLICING || g.sharing == GS_SHARING_MPS) && g.devs[d].slots > 1)
            f->slots = g.devs[d].slots;
    }
    for (uint32_t i = 0; inv && g.mig_model && i < g.nmig; i++) {
        const char *pn = g.mig_model->profiles[g.mig[i].profile].name;
        int32_t id = gs_intern_id(&m->names, pn, strlen(pn));
        uint32_t k = 0;
        while (k < f->nmig && f->mig_prof[k] != id)
            k++;
        if (k == f->nmig) {
            if (k == 16)
                continue;
            f->mig_prof[k] = id;
            f->mig_n[k] = 0;
            f->nmig++;
        }
        f->mig_n[k]++;
    }
    if (f->advertised > f->max_advertised)
        f->max_advertised = f->advertised;
    const gs_labels *l = &n->meta.labels;
    const char *v;
    f->labels_gpu = ((v = gs_labels_get(l, "nvidia.com/gpu.present")) && !strcmp(v, "true")) ||
                    gs_labels_get(l, "nvidia.com/gpu.product") || gs_labels_get(l, "nvidia.com/gpu.count") ||
                    ((v = gs_labels_get(l, "feature.node.kubernetes.io/pci-10de.present")) && !strcmp(v, "true")) ||
                    gs_gpu_cloud_accelerator(l, NULL);
    f->mig_failed = (v = gs_labels_get(l, "nvidia.com/mig.config.state")) && !strcmp(v, "failed");
    f->tainted = false;
    for (uint32_t i = 0; i < n->ntaints && !f->tainted; i++)
        f->tainted = (n->taints[i].effect == GS_EFFECT_NO_SCHEDULE || n->taints[i].effect == GS_EFFECT_NO_EXECUTE) &&
                     gs_taint_is_gpu(&n->taints[i], m->taint_keys, m->ntaint_keys);
    const char *pool = gs_node_pool(l, inv ? g.model : NULL);
    f->pool = gs_intern_id(&m->names, pool, strlen(pool));
    const gs_quantity *q = gs_reslist_get(&n->allocatable, "cpu");
    f->cpu_m = q ? gs_quantity_milli(q) : 0;
    q = gs_reslist_get(&n->allocatable, "memory");
    f->mem_b = q ? gs_quantity_value(q) : 0;
    if (inv)
        gs_node_gpus_free(&g);
}

/* ---------------------------------------------------------------- Events */
/* Two kinds of Events matter: the scheduler's "Preempted" on a victim (a second source
 * for preemptions, deduplicated with the pods' DisruptionTarget condition) and a
 * controller's "FailedCreate" whose note says the API server refused a GPU pod for
 * quota ("exceeded quota: q, requested: requests.nvidia.com/gpu=2, used: ..."). */
static void quota_forget(gs_monitor *m, uint64_t keyh)
{
    for (size_t i = 0; i < m->quotas.n; i++)
        if (m->quotas.v[i].keyh == keyh) {
            free_quota(&m->quotas.v[i]);
            m->quotas.v[i] = m->quotas.v[--m->quotas.n];
            return;
        }
}

static uint8_t resource_kind(const char *res)
{
    if (!strncmp(res, "nvidia.com/mig-", 15))
        return 2;
    if (!strcmp(res, "nvidia.com/gpu") || !strcmp(res, "amd.com/gpu") || !strcmp(res, "gpu.intel.com/i915") ||
        !strcmp(res, "alibabacloud.com/gpu-count") || !strcmp(res, "aliyun.com/gpu-count"))
        return 1;
    return 3;
}

static void apply_event(gs_monitor *m, uint64_t keyh, const char *text, size_t len, int64_t now)
{
    quota_forget(m, keyh);
    if (!text)
        return;
    gs_arena_reset(&m->scratch);
    gs_jv root;
    gs_error jerr;
    if (gs_json_parse("event", 1, text, len, NULL, &m->scratch, &root, &jerr))
        return;
    const char *reason = jstr(gs_json_get(&root, "reason"));
    const char *note = jstr(gs_json_get(&root, "note"));
    const gs_jv *reg = gs_json_get(&root, "regarding");
    const char *rkind = jstr(gs_json_get(reg, "kind"));
    if (!reason || !note || !rkind)
        return;
    if (!strcmp(reason, "Preempted") && !strcmp(rkind, "Pod")) {
        const char *ns = jstr(gs_json_get(reg, "namespace")), *name = jstr(gs_json_get(reg, "name"));
        if (!ns || !name)
            return;
        char key[512];
        int n = snprintf(key, sizeof key, "%s/%s", ns, name);
        uint64_t slot;
        if (n < 0 || (size_t)n >= sizeof key || !u64map_get(&m->slot[GS_LIVE_POD], hash_key(key, (size_t)n), &slot))
            return;
        mpod *f = &m->pods.v[slot];
        const gs_pod *p = &m->w.pods.v[slot];
        if ((f->flags & PF_HAS_GPU) && !(f->flags & PF_VICTIM_DONE)) {
            int64_t t = ms_of_rfc3339(jstr(gs_json_get(&root, "eventTime")));
            if (!t)
                t = ms_of_rfc3339(jstr(gs_json_get(&root, "deprecatedLastTimestamp")));
            if (!t || t >= m->o.start_ms)
                count_preemption(m, p->meta.namespace_, p->priority_class_name, "victim");
            f->flags |= PF_VICTIM_DONE;
        }
        return;
    }
    if (strcmp(reason, "FailedCreate") != 0 || !strstr(note, "exceeded quota"))
        return;
    /* the first GPU resource named after "requested: " */
    const char *req = strstr(note, "requested: ");
    if (!req)
        return;
    req += 11;
    char res[256] = "";
    while (*req && *req != ' ') {
        size_t n = strcspn(req, "=,");
        char name[256];
        if (n >= sizeof name)
            return;
        memcpy(name, req, n);
        name[n] = 0;
        const char *base = !strncmp(name, "requests.", 9) ? name + 9 : !strncmp(name, "limits.", 7) ? name + 7 : name;
        if (gs_gpu_is_device_resource(base) || !strcmp(base, "nvidia.com/gpu")) {
            snprintf(res, sizeof res, "%s", base);
            break;
        }
        req += n;
        req += strcspn(req, ",");
        if (*req == ',')
            req++;
        else
            break;
    }
    if (!res[0])
        return;
    int64_t first = ms_of_rfc3339(jstr(gs_json_get(&root, "eventTime")));
    if (!first)
        first = ms_of_rfc3339(jstr(gs_json_get(&root, "deprecatedFirstTimestamp")));
    const gs_jv *series = gs_json_get(&root, "series");
    int64_t t = ms_of_rfc3339(jstr(gs_json_get(series, "lastObservedTime")));
    if (!t)
        t = ms_of_rfc3339(jstr(gs_json_get(&root, "deprecatedLastTimestamp")));
    if (!t)
        t = first ? first : now;
    if (!first || first > t)
        first = t;
    const char *ns = jstr(gs_json_get(reg, "namespace")), *name = jstr(gs_json_get(reg, "name"));
    if (!ns || !name || m->quotas.n >= m->o.max_problem_series)
        return;
    quota_entry q = {.keyh = keyh, .kind = resource_kind(res), .first_ms = first, .last_ms = t};
    q.ns = strdup(ns);
    q.workload = malloc(strlen(rkind) + strlen(name) + 2);
    if (q.workload)
        sprintf(q.workload, "%s/%s", rkind, name);
    q.resource = strdup(res);
    q.note = strdup(note);
    if (!q.ns || !q.workload || !q.resource || !q.note || gs_vec_push(m->quotas, q) < 0)
        free_quota(&q);
}

/* ---------------------------------------------------------------- applying a change */
/* A pod that holds resources of a GPU node (what explain's answers depend on). */
static bool on_gpu_node(const gs_monitor *m, const mpod *f)
{
    return f->node >= 0 && !(f->flags & PF_TERMINAL) && m->nodes.v[f->node].gpu_node;
}

/* What a bound pod takes from its node: a change of it moves free capacity. */
static uint64_t occupancy(const mpod *f)
{
    int64_t v[] = {f->node, f->flags & PF_TERMINAL, f->cpu_m, f->mem_b, f->kind, f->count, f->mig,
                   (int64_t)(f->units * 1000)};
    return gs_hash_mix(GS_HASH_INIT, v, sizeof v);
}

static bool is_plugin_daemonset(const char *key, const char *text, size_t len)
{
    return strstr(key, "device-plugin") || (text && memmem(text, len, "device-plugin", 13));
}

/* hist: what an earlier world knew of the pod (a re-read), when the world has no such pod */
static int apply(gs_monitor *m, const qent *e, const char *key, const char *text, int64_t now,
                 const mpod *prior, gs_error *err)
{
    gs_live_kind k = (gs_live_kind)e->kind;
    uint64_t keyh = hash_key(key, e->klen);
    if (k == GS_LIVE_EVENT) {
        apply_event(m, keyh, e->del ? NULL : text, e->tlen, now);
        return 0;
    }
    uint64_t old = 0;
    bool had = u64map_get(&m->slot[k], keyh, &old);
    qent gone = {.kind = e->kind, .del = true, .klen = e->klen};
    if (k == GS_LIVE_DAEMONSET && !e->del && !is_plugin_daemonset(key, text, e->tlen)) {
        if (!had)
            return 0; /* only device-plugin DaemonSets are kept */
        e = &gone;
    }
    if (k == GS_LIVE_NODE || k == GS_LIVE_RESOURCEQUOTA || k == GS_LIVE_PRIORITYCLASS || k == GS_LIVE_PDB ||
        k == GS_LIVE_DAEMONSET)
        if (k != GS_LIVE_NODE)
            m->nodes_dirty = true;
    if (is_dra_kind(k))
        m->dra_dirty = true;
    if (k == GS_LIVE_DEVICECLASS || k == GS_LIVE_RESOURCESLICE)
        m->dra_devices = true;
    if (e->del) {
        if (!had)
            return 0;
        if (k == GS_LIVE_POD) {
            if (on_gpu_node(m, &m->pods.v[old]))
                m->binds_dirty = true;
            if (m->pods.v[old].flags & PF_CLAIMS)
                m->claim_pods = true; /* claims it held may be released */
        } else if (k == GS_LIVE_NODE) {
            const mnode *nf = &m->nodes.v[m->node_of_slot.v[old]];
            if (nf->gpu_node)
                m->nodes_dirty = true;
        }
        world_remove(m, k, keyh, old);
        return 0;
    }
    size_t idx;
    int64_t bytes;
    if (world_read(m, k, text, e->tlen, &idx, &bytes, err)) {
        /* refused by the reader: the object is not in the world (its old version goes) */
        if (had)
            world_remove(m, k, keyh, old);
        return -1;
    }
    if (k == GS_LIVE_POD) {
        mpod f;
        pod_facts(m, &m->w.pods.v[idx], text, e->tlen, had ? &m->pods.v[old] : prior, e, now, &f);
        f.keyh = keyh;
        f.arena_bytes = bytes;
        if (f.flags & PF_CLAIMS)
            m->claim_pods = true;
        if (had) {
            const mpod *o = &m->pods.v[old];
            if ((on_gpu_node(m, o) || on_gpu_node(m, &f)) && occupancy(o) != occupancy(&f))
                m->binds_dirty = true;
            if (o->shape == f.shape) {
                f.reason = o->reason;
                f.reason_since_ms = o->reason_since_ms;
            }
            m->garbage += o->arena_bytes;
            m->live_bytes -= o->arena_bytes;
            m->pods.v[old] = f;
            m->w.pods.v[old] = m->w.pods.v[idx];
            m->w.pods.n = idx;
        } else {
            if (on_gpu_node(m, &f))
                m->binds_dirty = true;
            if (gs_vec_push(m->pods, f) < 0 || u64map_put(&m->slot[k], keyh, idx)) {
                m->w.pods.n = idx;
                return gs_fail(err, GS_ERR_NOMEM, "out of memory");
            }
        }
        return 0;
    }
    size_t *n, elem;
    char *base = kvec(m, k, &n, &elem);
    size_t at = idx;
    if (had) {
        memcpy(base + old * elem, base + idx * elem, elem);
        *n = idx;
        m->garbage += m->obj_bytes[k].v[old];
        m->live_bytes -= m->obj_bytes[k].v[old];
        m->obj_bytes[k].v[old] = bytes;
        at = old;
    } else {
        if (gs_vec_push(m->obj_key[k], keyh) < 0 || gs_vec_push(m->obj_bytes[k], bytes) < 0 ||
            u64map_put(&m->slot[k], keyh, idx)) {
            *n = idx;
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        }
    }
    if (k == GS_LIVE_NODE) {
        const gs_node *nd = &m->w.nodes.v[at];
        int32_t id = node_id(m, nd->meta.name);
        if (id < 0)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        if (!had && gs_vec_push(m->node_of_slot, id) < 0)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        m->node_of_slot.v[at] = id;
        mnode *nf = &m->nodes.v[id];
        nf->slot = (int32_t)at;
        nf->arena_bytes = bytes;
        uint64_t sig = nf->sig;
        bool was_gpu = nf->gpu_node;
        node_facts(m, nd, nf);
        if ((nf->gpu_node || was_gpu) && (!had || sig != nf->sig))
            m->nodes_dirty = true;
    }
    return 0;
}

/* ---------------------------------------------------------------- reclaiming the arena */
typedef struct reread_ctx {
    gs_monitor *m;
    gs_live_kind k;
    int64_t now;
    gs_monitor *old; /* the facts before (pods, by key) */
} reread_ctx;

static int reread_one(void *ctx, const char *key, const char *obj, size_t len)
{
    reread_ctx *c = ctx;
    gs_monitor *m = c->m;
    qent e = {.kind = (uint8_t)c->k, .klen = strlen(key), .tlen = len};
    uint64_t keyh = hash_key(key, e.klen);
    const mpod *prior = NULL;
    uint64_t oi;
    if (c->k == GS_LIVE_POD && u64map_get(&c->old->slot[GS_LIVE_POD], keyh, &oi)) {
        prior = &c->old->pods.v[oi];
        e.restarts = prior->restarts;
        e.crashloop = (prior->flags & PF_CRASHLOOP) != 0;
    }
    gs_error err;
    (void)apply(m, &e, key, obj, c->now, prior, &err); /* a refused object stays out, as before */
    return 0;
}

/* Re-read every object from the store into a fresh world: the arena then holds only live
 * objects. The pods' history (counted once, restarts) follows them by key and uid. */
static int compact(gs_monitor *m, int64_t now, gs_error *err)
{
    if (!m->store)
        return 0;
    gs_monitor old;
    memcpy(&old, m, sizeof old); /* the old world's parts, freed below */
    gs_snapshot_init(&m->w);
    memset(m->slot, 0, sizeof m->slot);
    memset(&m->pods, 0, sizeof m->pods);
    memset(m->obj_bytes, 0, sizeof m->obj_bytes);
    memset(m->obj_key, 0, sizeof m->obj_key);
    memset(&m->node_of_slot, 0, sizeof m->node_of_slot);
    m->garbage = m->live_bytes = 0;
    for (size_t i = 0; i < m->nodes.n; i++)
        m->nodes.v[i].slot = -1;
    static const gs_live_kind order[] = {GS_LIVE_NODE, GS_LIVE_NAMESPACE, GS_LIVE_PRIORITYCLASS,
                                         GS_LIVE_RESOURCEQUOTA, GS_LIVE_PDB, GS_LIVE_DAEMONSET,
                                         GS_LIVE_DEVICECLASS, GS_LIVE_RESOURCECLAIM,
                                         GS_LIVE_RESOURCECLAIMTEMPLATE, GS_LIVE_RESOURCESLICE, GS_LIVE_POD};
    int rc = 0;
    for (size_t i = 0; i < sizeof order / sizeof order[0] && !rc; i++) {
        reread_ctx c = {m, order[i], now, &old};
        rc = gs_live_store_each(m->store, order[i], reread_one, &c);
    }
    /* pods keep the reason they were given and since when */
    for (size_t i = 0; i < m->pods.n; i++) {
        uint64_t oi;
        if (u64map_get(&old.slot[GS_LIVE_POD], m->pods.v[i].keyh, &oi) &&
            old.pods.v[oi].uidh == m->pods.v[i].uidh) {
            const mpod *o = &old.pods.v[oi];
            m->pods.v[i].reason = o->reason;
            m->pods.v[i].reason_since_ms = o->reason_since_ms;
        }
    }
    gs_snapshot_free(&old.w);
    for (int k = 0; k < GS_LIVE_NKINDS; k++) {
        u64map_free(&old.slot[k]);
        gs_vec_free(old.obj_bytes[k]);
        gs_vec_free(old.obj_key[k]);
    }
    gs_vec_free(old.pods);
    gs_vec_free(old.node_of_slot);
    m->st.rebuilds++;
    m->nodes_dirty = true;
    m->dra_dirty = true; /* the index points into the old world */
    if (rc)
        return gs_fail(err, GS_ERR_INTERNAL, "re-reading the store failed");
    return 0;
}

/* ---------------------------------------------------------------- pods naming claims */
/* request_kind of a GPU pod by its claims: mig when a request's class is a MIG class
 * (NVIDIA's mig.nvidia.com), else whole. */
static uint8_t claim_kind(const gs_dra_index *x, const gs_pod *p)
{
    for (uint32_t i = 0; i < p->nclaims; i++) {
        const gs_resource_claim *c = gs_dra_pod_claim_spec(x, p, i);
        for (uint32_t r = 0; c && r < c->spec.nrequests; r++) {
            const gs_dra_request *rq = &c->spec.requests[r];
            if (rq->has_exactly && rq->exactly.class_name && strstr(rq->exactly.class_name, "mig"))
                return 2;
            for (uint32_t a = 0; a < rq->nfirst_available; a++)
                if (rq->first_available[a].class_name && strstr(rq->first_available[a].class_name, "mig"))
                    return 2;
        }
    }
    return 1;
}

/* Pods naming claims are GPU pods when their claims ask GPUs (gs_dra_pod_gpu_requests, the
 * one rule). Judged after the changes of an update are applied (a pod may come before its
 * claim): every pod naming claims when a DRA object changed (the index is rebuilt and the
 * claim shapes are explained again), else only when such a pod changed. A pod asking
 * device-plugin GPUs is judged by those (its claims still go into its shape). */
static int claim_facts(gs_monitor *m, int64_t now)
{
    if (!m->dra_dirty && !m->claim_pods && m->dra_idx)
        return 0;
    if (m->dra_dirty || !m->dra_idx) {
        gs_dra_index_free(m->dra_idx);
        m->dra_idx = gs_dra_index_new(&m->w);
        if (!m->dra_idx)
            return -1;
        if (m->dra_devices) {
            for (size_t i = 0; i < m->classes.n; i++)
                if (m->classes.v[i].claims)
                    m->classes.v[i].valid = false;
        } else
            m->claims_stale = true;
        m->dra_devices = false;
    }
    for (size_t i = 0; i < m->pods.n; i++) {
        mpod *f = &m->pods.v[i];
        if (!(f->flags & PF_CLAIMS) || (f->flags & (PF_HAS_GPU | PF_CLAIM_GPU)) == PF_HAS_GPU)
            continue;
        const gs_pod *p = &m->w.pods.v[i];
        uint32_t n = gs_dra_pod_gpu_requests(m->dra_idx, p);
        bool was = (f->flags & PF_CLAIM_GPU) != 0;
        bool pending = !(f->flags & (PF_TERMINAL | PF_SCHEDULED | PF_DELETING));
        if (n) {
            uint8_t kind = claim_kind(m->dra_idx, p);
            f->flags |= PF_HAS_GPU | PF_CLAIM_GPU;
            f->kind = kind;
            f->count = n > UINT16_MAX ? UINT16_MAX : (uint16_t)n;
            f->units = 0; /* devices held are the claims' (not counted per pool yet) */
            f->shape = pending ? claim_shape(p, kind) : 0;
            if (!was) {
                if (on_gpu_node(m, f))
                    m->binds_dirty = true;
                pod_counts(m, p, f, NULL, now);
            }
        } else if (was) {
            f->flags &= ~(uint32_t)(PF_HAS_GPU | PF_CLAIM_GPU);
            f->kind = 0;
            f->count = 0;
            f->shape = 0;
        }
    }
    m->dra_dirty = m->claim_pods = false;
    return 0;
}

/* ================================================================ shapes and explain */
static bool pod_pending_gpu(const mpod *f)
{
    return (f->flags & PF_HAS_GPU) && !(f->flags & (PF_TERMINAL | PF_SCHEDULED | PF_DELETING));
}

/* A claim finding's reason (explain's GS_FIX_CLAIM carries a gs_dra_why_kind in amount). */
static int claim_reason(int64_t why)
{
    switch (why) {
    case GS_DRA_WHY_NO_CLASS: return R_CLAIM_NO_CLASS;
    case GS_DRA_WHY_NO_DEVICES: return R_CLAIM_NO_DEVICES;
    case GS_DRA_WHY_NO_MATCH: return R_CLAIM_NO_MATCH;
    case GS_DRA_WHY_TOO_MANY: return R_CLAIM_TOO_MANY;
    case GS_DRA_WHY_ALLOCATED: return R_CLAIM_ALLOCATED;
    case GS_DRA_WHY_CONSTRAINT: return R_CLAIM_CONSTRAINT;
    case GS_DRA_WHY_PINNED: return R_CLAIM_PINNED;
    case GS_DRA_WHY_ERROR: return R_CLAIM_ERROR;
    }
    return R_OTHER;
}

static int reason_of(const gs_explain_pod *ep, const gs_decision *d)
{
    if (d && d->outcome == GS_OUT_SCHEDULED)
        return R_FITS_NOW;
    if (!ep->nfixes)
        return ep->why && !strcmp(ep->why, "not enough free GPUs") ? R_INSUFFICIENT : R_OTHER;
    const gs_fix *f = &ep->fixes[0];
    switch (f->kind) {
    case GS_FIX_TOLERATE_TAINT: return R_TAINT;
    case GS_FIX_RAISE_QUOTA: return R_QUOTA;
    case GS_FIX_PREEMPT: return R_PREEMPTION;
    case GS_FIX_MODEL: return R_MODEL;
    case GS_FIX_MIG_PROFILE: return R_MIG_PROFILE;
    case GS_FIX_FRAGMENTATION: return R_FRAGMENTATION;
    case GS_FIX_ADD_CAPACITY: return R_INSUFFICIENT;
    case GS_FIX_AFFINITY: return R_AFFINITY;
    case GS_FIX_MOVE_NON_GPU_PODS: return R_CPU_MEM;
    case GS_FIX_PRIORITY_CLASS: return R_OTHER;
    case GS_FIX_CLAIM: return claim_reason(f->amount);
    case GS_FIX_OTHER:
        return f->cause && !strncmp(f->cause, "no node advertises", 18) ? R_FAMILY : R_OTHER;
    }
    return R_OTHER;
}

static void class_set(mclass *c, int reason, const char *why, const char *fix, const char *request)
{
    bool claims = c->claims;
    free_class(c);
    c->claims = claims;
    c->reason = (uint8_t)reason;
    c->why = strdup(why ? why : "");
    c->fix = strdup(fix ? fix : "");
    c->request = strdup(request ? request : "");
    c->valid = c->why && c->fix && c->request;
}

/* The claim findings of an explained pod (its GS_FIX_CLAIM fixes, in claim order). */
static void class_finds(mclass *c, const gs_explain_pod *ep)
{
    for (uint32_t i = 0; i < ep->nfixes && c->nfinds < MAX_FINDS; i++) {
        const gs_fix *fx = &ep->fixes[i];
        if (fx->kind != GS_FIX_CLAIM || !fx->object)
            continue;
        bool dup = false;
        for (uint32_t k = 0; k < c->nfinds && !dup; k++)
            dup = !strcmp(c->finds[k].claim, fx->object);
        if (dup)
            continue; /* the first finding of a claim is its reason */
        mfind *d = &c->finds[c->nfinds];
        d->claim = strdup(fx->object);
        /* the cause without explain's "claim ns/name: " (the finding names its claim) */
        const char *cause = fx->cause ? fx->cause : "";
        size_t ol = strlen(fx->object);
        if (!strncmp(cause, "claim ", 6) && !strncmp(cause + 6, fx->object, ol) && !strncmp(cause + 6 + ol, ": ", 2))
            cause += 6 + ol + 2;
        d->why = strdup(cause);
        d->fix = strdup(fx->text ? fx->text : "");
        d->reason = (uint8_t)claim_reason(fx->amount);
        c->nfinds++;
        if (!d->claim || !d->why || !d->fix) {
            c->valid = false; /* out of memory: explained again at the next update */
            return;
        }
    }
}

/* Group the pending GPU pods by shape: classes without pods go, new shapes get a class
 * (not yet explained). */
static int classes_sync(gs_monitor *m)
{
    for (size_t i = 0; i < m->classes.n; i++)
        m->classes.v[i].npods = 0;
    for (size_t i = 0; i < m->pods.n; i++) {
        mpod *f = &m->pods.v[i];
        if (!pod_pending_gpu(f) || !f->shape || (f->flags & PF_GATED) || m->w.pods.v[i].nominated_node[0])
            continue;
        uint64_t ci;
        if (!u64map_get(&m->class_of, f->shape, &ci)) {
            mclass c;
            memset(&c, 0, sizeof c);
            c.key = f->shape;
            ci = m->classes.n;
            if (gs_vec_push(m->classes, c) < 0 || u64map_put(&m->class_of, f->shape, ci))
                return -1;
        }
        mclass *c = &m->classes.v[ci];
        c->npods++;
        c->rep = f->keyh;
        if (f->flags & PF_CLAIMS)
            c->claims = true;
    }
    for (size_t i = 0; i < m->classes.n;) {
        if (m->classes.v[i].npods) {
            i++;
            continue;
        }
        u64map_del(&m->class_of, m->classes.v[i].key);
        free_class(&m->classes.v[i]);
        m->classes.v[i] = m->classes.v[--m->classes.n];
        if (i < m->classes.n)
            u64map_put(&m->class_of, m->classes.v[i].key, i);
    }
    return 0;
}

/* Explain the shapes whose answer is missing or stale: one engine run over the GPU nodes,
 * the pods bound to them and one pod per such shape, each judged against the bound pods
 * alone. */
static int explain_shapes(gs_monitor *m, int64_t now, gs_error *err)
{
    /* answers made stale by binds are refreshed at most once per explain interval; new
     * shapes and changes of nodes, quotas, priority classes and PDBs at once */
    bool due = now - m->last_explain_ms >= m->o.explain_interval_ms;
    bool refresh = m->binds_dirty && due, refresh_claims = m->claims_stale && due;
    size_t nneed = 0;
    for (size_t i = 0; i < m->classes.n; i++) {
        mclass *c = &m->classes.v[i];
        if (!c->valid || m->nodes_dirty || (refresh && reason_depends_on_binds(c->reason)) ||
            (refresh_claims && c->claims))
            c->valid = false, nneed++;
    }
    if (!nneed) {
        m->nodes_dirty = false;
        return 0;
    }
    /* this run judges every shape against the present: stale answers are refreshed too */
    for (size_t i = 0; i < m->classes.n && (m->binds_dirty || m->claims_stale); i++)
        if (m->classes.v[i].valid && ((m->binds_dirty && reason_depends_on_binds(m->classes.v[i].reason)) ||
                                      (m->claims_stale && m->classes.v[i].claims)))
            m->classes.v[i].valid = false, nneed++;
    m->nodes_dirty = m->binds_dirty = m->claims_stale = false;
    m->last_explain_ms = now;
    gs_snapshot v;
    memset(&v, 0, sizeof v);
    uint32_t *cls_of_rep = NULL;
    uint8_t *gpu_node = calloc(m->nodes.n ? m->nodes.n : 1, 1);
    v.nodes.v = malloc((m->w.nodes.n ? m->w.nodes.n : 1) * sizeof *v.nodes.v);
    v.pods.v = malloc((m->w.pods.n + nneed + 1) * sizeof *v.pods.v);
    cls_of_rep = malloc((nneed + 1) * sizeof *cls_of_rep);
    int rc = 0;
    if (!gpu_node || !v.nodes.v || !v.pods.v || !cls_of_rep) {
        rc = gs_fail(err, GS_ERR_NOMEM, "out of memory (explain)");
        goto out;
    }
    /* nodes with DRA devices count as GPU nodes here: the ones a ResourceSlice names, and
     * every node when a slice selects nodes otherwise (nodeSelector, allNodes, per device) */
    bool dra_all = false;
    for (size_t i = 0; i < m->w.resource_slices.n; i++) {
        const gs_resource_slice *sl = &m->w.resource_slices.v[i];
        if (sl->node_name && sl->node_name[0]) {
            int32_t id = gs_intern_find(&m->node_names, sl->node_name, strlen(sl->node_name));
            if (id >= 0 && (size_t)id < m->nodes.n)
                gpu_node[id] = 1;
        } else if (sl->all_nodes || sl->node_selector || sl->per_device_node_selection)
            dra_all = true;
    }
    for (size_t i = 0; i < m->w.nodes.n; i++) {
        int32_t id = m->node_of_slot.v[i];
        if (m->nodes.v[id].gpu_node || gpu_node[id] || dra_all) {
            gpu_node[id] = 1;
            v.nodes.v[v.nodes.n++] = m->w.nodes.v[i];
        }
    }
    for (size_t i = 0; i < m->w.pods.n; i++) {
        const mpod *f = &m->pods.v[i];
        if (f->node >= 0 && gpu_node[f->node] && !(f->flags & PF_TERMINAL))
            v.pods.v[v.pods.n++] = m->w.pods.v[i];
    }
    size_t nbound = v.pods.n, nrep = 0;
    for (size_t i = 0; i < m->classes.n; i++) {
        mclass *c = &m->classes.v[i];
        uint64_t slot;
        if (c->valid || !u64map_get(&m->slot[GS_LIVE_POD], c->rep, &slot))
            continue;
        cls_of_rep[nrep++] = (uint32_t)i;
        v.pods.v[v.pods.n++] = m->w.pods.v[slot];
    }
    v.priority_classes = m->w.priority_classes;
    v.quotas = m->w.quotas;
    v.pdbs = m->w.pdbs;
    v.namespaces = m->w.namespaces;
    v.device_classes = m->w.device_classes;
    v.claims = m->w.claims;
    v.claim_templates = m->w.claim_templates;
    v.resource_slices = m->w.resource_slices;
    v.finished = true;
    gs_config cfg;
    gs_config_defaults(&cfg);
    cfg.evaluate_only = true;
    gs_error cerr;
    gs_cluster *cl = gs_cluster_new(&v, &cfg, &cerr);
    const gs_explain *ex = NULL;
    if (!cl || gs_schedule_run(cl, &cerr) || gs_explain_run(cl, m->taint_keys, &ex, &cerr)) {
        for (size_t r = 0; r < nrep; r++)
            class_set(&m->classes.v[cls_of_rep[r]], R_OTHER, cerr.msg, "", "");
    } else {
        uint8_t *done = calloc(nrep + 1, 1);
        for (uint32_t i = 0; done && i < ex->npods; i++) {
            const gs_explain_pod *ep = &ex->pods[i];
            if (ep->pod < nbound || ep->pod >= nbound + nrep)
                continue;
            size_t r = ep->pod - nbound;
            const gs_decision *d = gs_cluster_decision_for_pod(cl, ep->pod);
            char req[128] = "";
            if (d)
                gs_gpu_request_describe(&d->gpu, req, sizeof req);
            uint64_t rs;
            const mpod *rf = u64map_get(&m->slot[GS_LIVE_POD], m->classes.v[cls_of_rep[r]].rep, &rs) ? &m->pods.v[rs] : NULL;
            if (rf && (rf->flags & PF_CLAIM_GPU))
                snprintf(req, sizeof req, "%u GPU request%s in ResourceClaims", rf->count, rf->count == 1 ? "" : "s");
            int reason = reason_of(ep, d);
            const char *why = ep->why;
            if (v.nodes.n == 0 && reason < R_CLAIM_NO_CLASS) {
                reason = R_INSUFFICIENT;
                why = "no GPU node in the cluster";
            }
            class_set(&m->classes.v[cls_of_rep[r]], reason, why, ep->nfixes ? ep->fixes[0].text : "", req);
            class_finds(&m->classes.v[cls_of_rep[r]], ep);
            done[r] = 1;
        }
        for (size_t r = 0; r < nrep; r++) {
            if (done && done[r])
                continue;
            const gs_decision *d = gs_cluster_decision_for_pod(cl, (uint32_t)(nbound + r));
            class_set(&m->classes.v[cls_of_rep[r]], R_OTHER,
                      d && d->message ? d->message : "not judged by the engine", "", "");
        }
        free(done);
    }
    gs_cluster_free(cl);
    m->st.explains++;
    m->st.shapes_explained += nrep;
out:
    free(gpu_node);
    free(v.nodes.v);
    free(v.pods.v);
    free(cls_of_rep);
    return rc;
}

/* ================================================================ the published state */
typedef struct pend_ref {
    int64_t created;
    uint32_t slot;
} pend_ref;
static pend_ref *pending_list(gs_monitor *m, size_t *n);

static const char *pub_str(gs_monitor *m, const char *s) { return gs_arena_strdup(&m->pub, s ? s : ""); }

/* Add v to the row with these labels (a linear map over a local index). */
typedef struct rowmap {
    u64map idx;
} rowmap;

static series_row *row_get(gs_monitor *m, void *vec, rowmap *rm, const char *const *l, int nl)
{
    GS_VEC(series_row) *rows = vec;
    uint64_t h = GS_HASH_INIT;
    for (int i = 0; i < nl; i++)
        h = hash_str(h, l[i]);
    h = nz(h);
    uint64_t at;
    if (rm && u64map_get(&rm->idx, h, &at))
        return &rows->v[at];
    series_row r;
    memset(&r, 0, sizeof r);
    for (int i = 0; i < nl; i++)
        if (!(r.l[i] = pub_str(m, l[i])))
            return NULL;
    if (gs_vec_push(*rows, r) < 0)
        return NULL;
    if (rm)
        u64map_put(&rm->idx, h, rows->n - 1);
    return &rows->v[rows->n - 1];
}

static const char *node_name(const gs_monitor *m, int32_t id) { return gs_intern_str(&m->node_names, id); }
static const char *pool_name(const gs_monitor *m, const mnode *n)
{
    return n->pool >= 0 ? gs_intern_str(&m->names, n->pool) : "(unknown model)";
}

static int pod_reason(const gs_monitor *m, size_t i)
{
    const mpod *f = &m->pods.v[i];
    if (f->flags & PF_GATED)
        return R_GATED;
    if (m->w.pods.v[i].nominated_node[0])
        return R_PREEMPTION;
    uint64_t ci;
    if (f->shape && u64map_get(&m->class_of, f->shape, &ci) && m->classes.v[ci].valid)
        return m->classes.v[ci].reason;
    return R_OTHER;
}

static double pod_units(const mpod *f, const mnode *n)
{
    if (f->units >= 0)
        return f->units;
    return n->slots > 1 ? (double)f->count / n->slots : f->count; /* whole on time-sliced GPUs */
}

/* Devices idle for the window, joined with the pods holding them. */
static void idle_join(gs_monitor *m, uint32_t max)
{
    for (size_t i = 0; i < m->idle_in.n; i++) {
        const gs_idle_gpu *d = &m->idle_in.v[i];
        int32_t id = gs_intern_find(&m->node_names, d->node, strlen(d->node));
        if (id < 0 || m->nodes.v[id].slot < 0)
            continue;
        const mnode *n = &m->nodes.v[id];
        bool held = false;
        if (d->pods > 1) /* a GPU shared by several pods, every one of them idle */
            held = true;
        else if (d->ns[0] && d->pod[0]) {
            char key[512];
            int kn = snprintf(key, sizeof key, "%s/%s", d->ns, d->pod);
            uint64_t slot;
            if (kn > 0 && (size_t)kn < sizeof key && u64map_get(&m->slot[GS_LIVE_POD], hash_key(key, (size_t)kn), &slot)) {
                const mpod *f = &m->pods.v[slot];
                held = f->node == id && (f->flags & PF_HAS_GPU) && !(f->flags & PF_TERMINAL);
            }
        } else if (d->mig_profile[0]) {
            int32_t prof = gs_intern_find(&m->names, d->mig_profile, strlen(d->mig_profile));
            for (uint32_t k = 0; k < n->nmig; k++)
                held |= n->mig_prof[k] == prof && n->mig_used[k] >= n->mig_n[k];
        } else
            held = n->advertised > 0 && n->alloc_units + 1e-9 >= n->advertised;
        if (!held)
            continue;
        const char *pool = pool_name(m, n);
        for (size_t p = 0; p < m->pools_pub.n; p++)
            if (!strcmp(m->pools_pub.v[p].pool, pool))
                m->pools_pub.v[p].idle++;
        if (m->idle_rows.n >= max) {
            m->dropped_series[2]++;
            continue;
        }
        char shared[48] = "";
        if (d->pods > 1)
            snprintf(shared, sizeof shared, "(shared by %u pods)", d->pods);
        const char *l[5] = {d->node, d->gpu, d->mig_instance, d->ns, d->pods > 1 ? shared : d->pod};
        series_row *row = row_get(m, &m->idle_rows, NULL, l, 5);
        if (row)
            row->v = d->util;
    }
}

/* The pending claims of pending GPU pod i: each pod claim that is not allocated (an
 * existing claim without status.allocation, or one the resourceclaim controller has not
 * made from its template yet, named as gpusched names it: <pod>-<claim>), with its reason:
 * explain's finding for that claim, else the pod's reason. fn returns non-zero to stop. */
typedef int (*claim_fn)(gs_monitor *m, size_t pod, const char *key, int reason, const mfind *fd, void *ctx);

static int pod_claims_each(gs_monitor *m, size_t i, claim_fn fn, void *ctx)
{
    const mpod *f = &m->pods.v[i];
    const gs_pod *p = &m->w.pods.v[i];
    if (!(f->flags & PF_CLAIMS) || !m->dra_idx)
        return 0;
    const mclass *c = NULL;
    uint64_t ci;
    if (f->shape && u64map_get(&m->class_of, f->shape, &ci) && m->classes.v[ci].valid)
        c = &m->classes.v[ci];
    for (uint32_t k = 0; k < p->nclaims; k++) {
        const gs_resource_claim *rc = gs_dra_pod_claim_spec(m->dra_idx, p, k);
        if (!rc || (!rc->is_template && rc->allocated))
            continue;
        char key[600];
        int n = rc->is_template ? snprintf(key, sizeof key, "%s/%s-%s", p->meta.namespace_, p->meta.name, p->claims[k].name)
                                : snprintf(key, sizeof key, "%s/%s", p->meta.namespace_, rc->meta.name);
        if (n < 0 || (size_t)n >= sizeof key)
            continue;
        const mfind *fd = NULL;
        for (uint32_t j = 0; c && j < c->nfinds && !fd; j++)
            if (!strcmp(c->finds[j].claim, key))
                fd = &c->finds[j];
        int r = fd ? fd->reason : f->reason;
        int rv = fn(m, i, key, r, fd, ctx);
        if (rv)
            return rv;
    }
    return 0;
}

typedef struct claim_count_ctx {
    u64map seen, rows, oldest;
} claim_count_ctx;

static int count_one_claim(gs_monitor *m, size_t i, const char *key, int reason, const mfind *fd, void *ctx)
{
    (void)fd;
    claim_count_ctx *cc = ctx;
    uint64_t h = hash_key(key, strlen(key));
    if (u64map_get(&cc->seen, h, NULL))
        return 0; /* shared with an older pending pod: counted once, with that pod's reason */
    u64map_put(&cc->seen, h, 1);
    const char *ns = m->w.pods.v[i].meta.namespace_;
    const char *l[2] = {ns, reason_names[reason]};
    rowmap rm = {cc->rows};
    series_row *row = row_get(m, &m->claim_rows, &rm, l, 2);
    cc->rows = rm.idx;
    if (row)
        row->v++;
    rm.idx = cc->oldest;
    row = row_get(m, &m->claim_oldest_rows, &rm, l, 1);
    cc->oldest = rm.idx;
    int64_t since = m->pods.v[i].created_ms;
    if (row && (row->v == 0 || (double)since < row->v))
        row->v = (double)since;
    return 0;
}

/* gpusched_claims_pending and gpusched_claim_oldest_pending_seconds: the pending claims of
 * the pending GPU pods, oldest pod first (a claim shared by two pending pods counts once,
 * pending since the older pod was created). */
static void count_claims(gs_monitor *m)
{
    claim_count_ctx cc;
    memset(&cc, 0, sizeof cc);
    size_t n;
    pend_ref *v = pending_list(m, &n);
    for (size_t k = 0; v && k < n; k++)
        (void)pod_claims_each(m, v[k].slot, count_one_claim, &cc);
    free(v);
    u64map_free(&cc.seen);
    u64map_free(&cc.rows);
    u64map_free(&cc.oldest);
}

static void recount(gs_monitor *m, int64_t now)
{
    gs_arena_reset(&m->pub);
    m->pending_rows.n = m->oldest_rows.n = m->pools_pub.n = m->migs_pub.n = 0;
    m->dp_rows.n = m->missing_rows.n = m->idle_rows.n = 0;
    m->claim_rows.n = m->claim_oldest_rows.n = 0;
    memset(m->dropped_series, 0, sizeof m->dropped_series);
    for (size_t i = 0; i < m->nodes.n; i++) {
        mnode *n = &m->nodes.v[i];
        n->alloc_units = 0;
        n->cpu_used = n->mem_used = 0;
        n->non_gpu = n->plugin_pods = n->plugin_ready = n->plugin_restarting = 0;
        memset(n->mig_used, 0, sizeof n->mig_used);
    }
    rowmap pend = {{0}}, oldest = {{0}};
    uint32_t npending = 0;
    for (size_t i = 0; i < m->pods.n; i++) {
        mpod *f = &m->pods.v[i];
        const gs_pod *p = &m->w.pods.v[i];
        if (f->node >= 0 && !(f->flags & PF_TERMINAL)) {
            mnode *n = &m->nodes.v[f->node];
            n->cpu_used += f->cpu_m;
            n->mem_used += f->mem_b;
            if (f->flags & PF_HAS_GPU) {
                n->alloc_units += pod_units(f, n);
                for (uint32_t k = 0; f->mig >= 0 && k < n->nmig; k++)
                    if (n->mig_prof[k] == f->mig)
                        n->mig_used[k] += f->count;
            } else if (!(f->flags & PF_DS))
                n->non_gpu++;
            if (f->flags & PF_PLUGIN) {
                n->plugin_pods++;
                if (f->flags & PF_READY)
                    n->plugin_ready++;
                if ((f->flags & PF_CRASHLOOP) || (f->last_restart_ms && now - f->last_restart_ms < RESTART_WINDOW_MS))
                    n->plugin_restarting++;
            }
        }
        if (!pod_pending_gpu(f))
            continue;
        npending++;
        int r = pod_reason(m, i);
        if (f->reason != r || !f->reason_since_ms) {
            f->reason = (uint8_t)r;
            f->reason_since_ms = now;
        }
        const char *l[4] = {p->meta.namespace_, p->priority_class_name, kind_names[f->kind], reason_names[r]};
        series_row *row = row_get(m, &m->pending_rows, &pend, l, 4);
        if (row)
            row->v++;
        row = row_get(m, &m->oldest_rows, &oldest, l, 1);
        if (row && (row->v == 0 || (double)f->created_ms < row->v))
            row->v = (double)f->created_ms; /* an epoch: the age is taken when rendered */
    }
    count_claims(m);
    for (size_t i = 0; i < m->quotas.n; i++) {
        const quota_entry *q = &m->quotas.v[i];
        if (now - q->last_ms > QUOTA_EVENT_WINDOW_MS)
            continue;
        const char *l[4] = {q->ns, "", kind_names[q->kind], reason_names[R_QUOTA]};
        series_row *row = row_get(m, &m->pending_rows, &pend, l, 4);
        if (row)
            row->v++;
        npending++;
        row = row_get(m, &m->oldest_rows, &oldest, l, 1);
        if (row && (row->v == 0 || (double)q->first_ms < row->v))
            row->v = (double)q->first_ms; /* refused since its first occurrence */
    }
    u64map_free(&pend.idx);
    u64map_free(&oldest.idx);
    /* pools, hygiene and device-plugin problems, per GPU node */
    rowmap pools = {{0}}, migs = {{0}};
    uint32_t gpu_nodes = 0, max = m->o.max_problem_series;
    for (size_t s = 0; s < m->w.nodes.n; s++) {
        int32_t id = m->node_of_slot.v[s];
        mnode *n = &m->nodes.v[id];
        const gs_node *nd = &m->w.nodes.v[s];
        if (!n->gpu_node && !n->labels_gpu)
            continue;
        gpu_nodes++;
        const char *pool = pool_name(m, n);
        uint64_t ph = nz(hash_str(GS_HASH_INIT, pool)), pi;
        if (!u64map_get(&pools.idx, ph, &pi)) {
            pool_row z;
            memset(&z, 0, sizeof z);
            z.pool = pub_str(m, pool);
            if (!z.pool || gs_vec_push(m->pools_pub, z) < 0)
                continue;
            pi = m->pools_pub.n - 1;
            u64map_put(&pools.idx, ph, pi);
        }
        pool_row *pr = &m->pools_pub.v[pi];
        pr->nodes++;
        pr->allocatable += n->advertised;
        pr->allocated += n->alloc_units;
        if (n->alloc_units > 0)
            pr->in_use++;
        if (!n->tainted)
            pr->untainted++;
        pr->non_gpu += n->non_gpu;
        /* stranded: free GPUs without their share of the node's cpu and memory */
        double free_gpus = floor((double)n->advertised - n->alloc_units + 1e-9);
        if (free_gpus > 0 && n->devs) {
            double per_cpu = (double)n->cpu_m / n->devs, per_mem = (double)n->mem_b / n->devs;
            double fc = per_cpu > 0 ? floor((double)(n->cpu_m - n->cpu_used) / per_cpu + 1e-9) : free_gpus;
            double fm = per_mem > 0 ? floor((double)(n->mem_b - n->mem_used) / per_mem + 1e-9) : free_gpus;
            double usable = fmin(free_gpus, fmax(0, fmin(fc, fm)));
            pr->stranded += free_gpus - usable;
        }
        for (uint32_t k = 0; k < n->nmig; k++) {
            const char *prof = gs_intern_str(&m->names, n->mig_prof[k]);
            uint64_t mh = nz(hash_str(hash_str(GS_HASH_INIT, pool), prof)), mi;
            if (!u64map_get(&migs.idx, mh, &mi)) {
                mig_row z = {pr->pool, pub_str(m, prof), 0, 0};
                if (!z.profile || gs_vec_push(m->migs_pub, z) < 0)
                    continue;
                mi = m->migs_pub.n - 1;
                u64map_put(&migs.idx, mh, mi);
            }
            uint32_t used = n->mig_used[k] < n->mig_n[k] ? n->mig_used[k] : n->mig_n[k];
            m->migs_pub.v[mi].in_use += used;
            m->migs_pub.v[mi].idle += n->mig_n[k] - used;
        }
        /* device plugin */
        const char *problems[8];
        int np = 0;
        if (n->labels_gpu && n->advertised == 0)
            problems[np++] = "no_gpus_advertised";
        else if (n->advertised < n->devs)
            problems[np++] = "gpus_missing";
        if (n->advertised < n->max_advertised)
            problems[np++] = "capacity_dropped";
        bool wanted = false;
        for (size_t w = 0; w < m->w.workloads.n && !wanted; w++)
            wanted = !strcmp(m->w.workloads.v[w].kind, "DaemonSet") &&
                     gs_daemon_pod_fits(&m->w.workloads.v[w].template_, nd);
        if (wanted && !n->plugin_pods)
            problems[np++] = "plugin_pod_missing";
        if (n->plugin_pods > n->plugin_ready)
            problems[np++] = "plugin_pod_not_ready";
        if (n->plugin_restarting)
            problems[np++] = "plugin_pod_restarting";
        if (n->mig_failed)
            problems[np++] = "mig_config_failed";
        for (int k = 0; k < np; k++) {
            if (m->dp_rows.n >= max) {
                m->dropped_series[0]++;
                continue;
            }
            const char *l[3] = {node_name(m, id), pool, problems[k]};
            series_row *row = row_get(m, &m->dp_rows, NULL, l, 3);
            if (row)
                row->v = 1;
        }
        if (n->devs > n->advertised && n->advertised > 0) {
            if (m->missing_rows.n >= max)
                m->dropped_series[1]++;
            else {
                const char *l[2] = {node_name(m, id), pool};
                series_row *row = row_get(m, &m->missing_rows, NULL, l, 2);
                if (row)
                    row->v = n->devs - n->advertised;
            }
        }
    }
    u64map_free(&pools.idx);
    u64map_free(&migs.idx);
    idle_join(m, max);
    m->st.gpu_nodes = gpu_nodes;
    m->st.pending_gpu_pods = npending;
}

/* ================================================================ updating */
int gs_monitor_update(gs_monitor *m, int64_t now, gs_error *err)
{
    pthread_mutex_lock(&m->umu);
    pthread_mutex_lock(&m->qmu);
    qvec q = m->q;
    gs_strbuf data = m->qdata;
    memset(&m->q, 0, sizeof m->q);
    m->qdata = (gs_strbuf)GS_STRBUF_INIT;
    pthread_mutex_unlock(&m->qmu);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_mutex_lock(&m->mu);
    int rc = 0;
    for (size_t i = 0; i < q.n; i++) {
        const qent *e = &q.v[i];
        char key[GS_ERR_PATH_MAX * 2];
        if (e->klen >= sizeof key)
            continue;
        memcpy(key, data.buf + e->koff, e->klen);
        key[e->klen] = 0;
        gs_error aerr;
        if (apply(m, e, key, e->del ? NULL : data.buf + e->toff, now, NULL, &aerr) && aerr.code == GS_ERR_NOMEM) {
            rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
            break;
        }
        m->st.applied++;
    }
    size_t napplied = q.n;
    gs_vec_free(q);
    gs_strbuf_free(&data);
    if (!rc && m->garbage > (int64_t)m->o.reclaim_bytes && m->garbage > m->live_bytes)
        rc = compact(m, now, err);
    if (!rc && (m->dra_dirty || m->claim_pods) && claim_facts(m, now))
        rc = gs_fail(err, GS_ERR_NOMEM, "out of memory (DRA index)");
    bool changed = napplied || m->nodes_dirty || m->binds_dirty || m->claims_stale || m->idle_changed ||
                   now - m->last_recount_ms >= 5000;
    if (!rc && changed) {
        if (classes_sync(m))
            rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
        else
            rc = explain_shapes(m, now, err);
        recount(m, now);
        m->last_recount_ms = now;
        m->idle_changed = false;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double d = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        hist_observe(&m->upd, upd_le, UPD_NBUCKETS, d);
        m->st.last_update_s = d;
    }
    m->st.pods = (uint32_t)m->pods.n;
    m->st.nodes = (uint32_t)m->w.nodes.n;
    m->st.pending_shapes = (uint32_t)m->classes.n;
    m->st.bytes = m->w.arena.used_total + m->pods.cap * sizeof(mpod) + m->nodes.cap * sizeof(mnode);
    pthread_mutex_unlock(&m->mu);
    pthread_mutex_unlock(&m->umu);
    if (rc)
        return -1;
    return changed ? 1 : 0;
}

void gs_monitor_note_informer(gs_monitor *m, gs_live_kind k, const gs_live_informer_stats *st)
{
    if ((unsigned)k >= GS_LIVE_NKINDS || !st)
        return;
    pthread_mutex_lock(&m->mu);
    m->informed[k] = true;
    m->synced[k] = st->synced;
    m->watch_events[k] = st->events;
    m->relists[k] = st->relists;
    m->failures[k] = st->reconnects;
    pthread_mutex_unlock(&m->mu);
}

void gs_monitor_note_leader(gs_monitor *m, bool leader)
{
    pthread_mutex_lock(&m->mu);
    m->leader = leader;
    pthread_mutex_unlock(&m->mu);
}

void gs_monitor_note_event(gs_monitor *m, gs_monitor_event_result r)
{
    if ((unsigned)r > GS_MON_EVENT_FAILED)
        return;
    pthread_mutex_lock(&m->mu);
    m->events_written[r]++;
    pthread_mutex_unlock(&m->mu);
}

void gs_monitor_note_dcgm_error(gs_monitor *m, gs_monitor_util_source s)
{
    if ((unsigned)s > GS_MON_UTIL_PROMETHEUS)
        return;
    pthread_mutex_lock(&m->mu);
    m->dcgm_errors[s]++;
    pthread_mutex_unlock(&m->mu);
}

int gs_monitor_set_idle(gs_monitor *m, const gs_idle_gpu *v, size_t n, gs_error *err)
{
    pthread_mutex_lock(&m->mu);
    gs_arena_reset(&m->idle_arena);
    m->idle_in.n = 0;
    int rc = 0;
    if (gs_vec_reserve(m->idle_in, n ? n : 1))
        rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        gs_idle_gpu d = v[i];
        gs_arena *a = &m->idle_arena;
        d.node = gs_arena_strdup(a, v[i].node ? v[i].node : "");
        d.gpu = gs_arena_strdup(a, v[i].gpu ? v[i].gpu : "");
        d.mig_instance = gs_arena_strdup(a, v[i].mig_instance ? v[i].mig_instance : "");
        d.mig_profile = gs_arena_strdup(a, v[i].mig_profile ? v[i].mig_profile : "");
        d.model = gs_arena_strdup(a, v[i].model ? v[i].model : "");
        d.ns = gs_arena_strdup(a, v[i].ns ? v[i].ns : "");
        d.pod = gs_arena_strdup(a, v[i].pod ? v[i].pod : "");
        if (!d.node || !d.gpu || !d.mig_instance || !d.mig_profile || !d.model || !d.ns || !d.pod)
            rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
        else
            m->idle_in.v[m->idle_in.n++] = d;
    }
    m->idle_changed = true;
    pthread_mutex_unlock(&m->mu);
    return rc;
}

void gs_monitor_stats_get(gs_monitor *m, gs_monitor_stats *out)
{
    pthread_mutex_lock(&m->mu);
    *out = m->st;
    pthread_mutex_unlock(&m->mu);
    pthread_mutex_lock(&m->qmu);
    out->dropped_same = m->dropped_same;
    pthread_mutex_unlock(&m->qmu);
}

/* ================================================================ pending pods */

static int cmp_pend(const void *a, const void *b)
{
    const pend_ref *x = a, *y = b;
    if (x->created != y->created)
        return x->created < y->created ? -1 : 1;
    return (x->slot > y->slot) - (x->slot < y->slot);
}

/* The pending GPU pods, oldest first (caller frees). */
static pend_ref *pending_list(gs_monitor *m, size_t *n)
{
    pend_ref *v = malloc((m->pods.n ? m->pods.n : 1) * sizeof *v);
    *n = 0;
    if (!v)
        return NULL;
    for (size_t i = 0; i < m->pods.n; i++)
        if (pod_pending_gpu(&m->pods.v[i]))
            v[(*n)++] = (pend_ref){m->pods.v[i].created_ms, (uint32_t)i};
    qsort(v, *n, sizeof *v, cmp_pend);
    return v;
}

static void pending_fill(gs_monitor *m, uint32_t i, gs_monitor_pending *out, char *buf, size_t cap)
{
    const mpod *f = &m->pods.v[i];
    const gs_pod *p = &m->w.pods.v[i];
    memset(out, 0, sizeof *out);
    out->ns = p->meta.namespace_;
    out->name = p->meta.name;
    out->uid = p->meta.uid;
    out->priority_class = p->priority_class_name;
    out->request_kind = kind_names[f->kind];
    out->reason = reason_names[f->reason];
    out->created_ms = f->created_ms;
    out->reason_since_ms = f->reason_since_ms;
    out->why = "";
    out->fix = "";
    out->request = "";
    uint64_t ci;
    out->claim = "";
    if (f->shape && u64map_get(&m->class_of, f->shape, &ci) && m->classes.v[ci].valid) {
        out->request = m->classes.v[ci].request;
        out->why = m->classes.v[ci].why;
        out->fix = m->classes.v[ci].fix;
        if (m->classes.v[ci].nfinds)
            out->claim = m->classes.v[ci].finds[0].claim;
    }
    if (f->reason == R_GATED) {
        out->why = "held by a scheduling gate (spec.schedulingGates): the scheduler does not look at it yet";
        out->fix = "find the controller that set the gate (a queue such as Kueue) and why it holds the pod";
    } else if (f->reason == R_PREEMPTION && p->nominated_node[0]) {
        snprintf(buf, cap, "the scheduler preempted pods on node %s for it and waits for them to exit",
                 p->nominated_node);
        out->why = buf;
        out->fix = "none needed unless the victims do not terminate (check their grace periods and finalizers)";
    } else if (f->flags & PF_GPU_INVALID) {
        out->why = "its GPU request cannot be read (see gpusched explain)";
    }
}

int gs_monitor_pending_each(gs_monitor *m, gs_monitor_pending_fn fn, void *ctx)
{
    pthread_mutex_lock(&m->mu);
    size_t n;
    pend_ref *v = pending_list(m, &n);
    int rc = 0;
    char buf[512];
    for (size_t i = 0; v && i < n && !rc; i++) {
        gs_monitor_pending p;
        pending_fill(m, v[i].slot, &p, buf, sizeof buf);
        rc = fn(ctx, &p);
    }
    free(v);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* ================================================================ rendering */
static void esc_label(gs_strbuf *sb, const char *v)
{
    for (const char *p = v ? v : ""; *p; p++) {
        if (*p == '\\')
            gs_strbuf_puts(sb, "\\\\");
        else if (*p == '"')
            gs_strbuf_puts(sb, "\\\"");
        else if (*p == '\n')
            gs_strbuf_puts(sb, "\\n");
        else
            gs_strbuf_putc(sb, *p);
    }
}

static void labels(gs_strbuf *sb, const char *const *names, const char *const *vals, int n)
{
    if (!n)
        return;
    gs_strbuf_putc(sb, '{');
    for (int i = 0; i < n; i++) {
        gs_strbuf_printf(sb, "%s%s=\"", i ? "," : "", names[i]);
        esc_label(sb, vals[i]);
        gs_strbuf_putc(sb, '"');
    }
    gs_strbuf_putc(sb, '}');
}

static void family(gs_strbuf *sb, const char *name, const char *type, const char *help)
{
    gs_strbuf_printf(sb, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(gs_strbuf *sb, const char *name, const char *const *names, const char *const *vals, int n,
                   double v)
{
    gs_strbuf_puts(sb, name);
    labels(sb, names, vals, n);
    if (v == floor(v) && fabs(v) < 1e15)
        gs_strbuf_printf(sb, " %.0f\n", v);
    else
        gs_strbuf_printf(sb, " %.6g\n", v);
}

static void histogram(gs_strbuf *sb, const char *name, const char *const *names, const char *const *vals, int n,
                      const hist *h, const char *const *le_s, size_t nb)
{
    const char *ln[8], *lv[8];
    for (int i = 0; i < n; i++)
        ln[i] = names[i], lv[i] = vals[i];
    ln[n] = "le";
    char bucket[128];
    snprintf(bucket, sizeof bucket, "%s_bucket", name);
    uint64_t cum = 0;
    for (size_t b = 0; b <= nb; b++) {
        cum += h->b[b];
        lv[n] = b < nb ? le_s[b] : "+Inf";
        sample(sb, bucket, ln, lv, n + 1, (double)cum);
    }
    char nm[128];
    snprintf(nm, sizeof nm, "%s_sum", name);
    gs_strbuf_puts(sb, nm);
    labels(sb, names, vals, n);
    gs_strbuf_printf(sb, " %.9g\n", h->sum);
    snprintf(nm, sizeof nm, "%s_count", name);
    sample(sb, nm, names, vals, n, (double)h->count);
}

/* split "a\x1fb\x1fc" into parts (in buf) */
static int split_key(const char *key, char *buf, size_t cap, const char **parts, int max)
{
    snprintf(buf, cap, "%s", key);
    int n = 0;
    char *p = buf;
    while (n < max) {
        parts[n++] = p;
        char *q = strchr(p, '\x1f');
        if (!q)
            break;
        *q = 0;
        p = q + 1;
    }
    return n;
}

static void render_metrics(gs_monitor *m, int64_t now, gs_strbuf *sb)
{
    static const char *const pend_l[] = {"namespace", "priority_class", "request_kind", "reason"};
    family(sb, "gpusched_gpu_pods_pending", "gauge", "GPU pods pending now, by explain's reason.");
    for (size_t i = 0; i < m->pending_rows.n; i++)
        sample(sb, "gpusched_gpu_pods_pending", pend_l, m->pending_rows.v[i].l, 4, m->pending_rows.v[i].v);
    static const char *const ns_l[] = {"namespace"};
    family(sb, "gpusched_gpu_pod_oldest_pending_seconds", "gauge",
           "Age of the oldest pending GPU pod of the namespace.");
    for (size_t i = 0; i < m->oldest_rows.n; i++) {
        double age = ((double)now - m->oldest_rows.v[i].v) / 1000.0;
        sample(sb, "gpusched_gpu_pod_oldest_pending_seconds", ns_l, m->oldest_rows.v[i].l, 1, age < 0 ? 0 : floor(age));
    }
    static const char *const claim_l[] = {"namespace", "reason"};
    family(sb, "gpusched_claims_pending", "gauge",
           "ResourceClaims of pending GPU pods not allocated, by explain's reason (a shared claim counted once).");
    for (size_t i = 0; i < m->claim_rows.n; i++)
        sample(sb, "gpusched_claims_pending", claim_l, m->claim_rows.v[i].l, 2, m->claim_rows.v[i].v);
    family(sb, "gpusched_claim_oldest_pending_seconds", "gauge",
           "Age of the oldest pending GPU pod of the namespace with a ResourceClaim not allocated.");
    for (size_t i = 0; i < m->claim_oldest_rows.n; i++) {
        double age = ((double)now - m->claim_oldest_rows.v[i].v) / 1000.0;
        sample(sb, "gpusched_claim_oldest_pending_seconds", ns_l, m->claim_oldest_rows.v[i].l, 1,
               age < 0 ? 0 : floor(age));
    }
    static const char *const hist_l[] = {"namespace", "request_kind"};
    family(sb, "gpusched_gpu_pod_scheduling_duration_seconds", "histogram",
           "Time from creation to scheduled of GPU pods, observed once per pod.");
    for (size_t i = 0; i < m->hists.n; i++) {
        char buf[600];
        const char *parts[2] = {"", ""};
        split_key(gs_intern_str(&m->hist_keys, (int32_t)i), buf, sizeof buf, parts, 2);
        histogram(sb, "gpusched_gpu_pod_scheduling_duration_seconds", hist_l, parts, 2, &m->hists.v[i], hist_le_s,
                  NBUCKETS);
    }
    static const char *const pool_l[] = {"pool"};
    static const struct {
        const char *name, *help;
        int field;
    } pf[] = {
        {"gpusched_pool_gpu_nodes", "GPU nodes of the pool.", 0},
        {"gpusched_pool_gpu_nodes_in_use", "GPU nodes with at least one GPU allocated.", 1},
        {"gpusched_pool_gpus_allocatable", "GPUs of the pool's nodes (MIG-partitioned GPUs counted as GPUs).", 2},
        {"gpusched_pool_gpus_allocated", "GPUs allocated to pods (shares as fractions).", 3},
        {"gpusched_pool_gpus_stranded", "Free GPUs without their share of their node's cpu or memory.", 4},
        {"gpusched_gpu_nodes_without_taint", "GPU nodes without a NoSchedule or NoExecute GPU taint.", 5},
        {"gpusched_non_gpu_pods_on_gpu_nodes", "Pods requesting no GPU running on GPU nodes (DaemonSet pods excluded).", 6},
        {"gpusched_pool_gpus_allocated_idle", "GPUs (or MIG instances) allocated to pods and idle for the window.", 7},
    };
    for (size_t f = 0; f < sizeof pf / sizeof pf[0]; f++) {
        family(sb, pf[f].name, "gauge", pf[f].help);
        for (size_t i = 0; i < m->pools_pub.n; i++) {
            const pool_row *r = &m->pools_pub.v[i];
            double v[] = {r->nodes, r->in_use, r->allocatable, r->allocated, r->stranded, r->untainted, r->non_gpu, r->idle};
            sample(sb, pf[f].name, pool_l, &r->pool, 1, v[pf[f].field]);
        }
    }
    static const char *const mig_l[] = {"pool", "profile", "state"};
    family(sb, "gpusched_pool_mig_slices", "gauge", "MIG instances of the pool, in use and idle.");
    for (size_t i = 0; i < m->migs_pub.n; i++) {
        const mig_row *r = &m->migs_pub.v[i];
        const char *a[3] = {r->pool, r->profile, "in_use"}, *b[3] = {r->pool, r->profile, "idle"};
        sample(sb, "gpusched_pool_mig_slices", mig_l, a, 3, r->in_use);
        sample(sb, "gpusched_pool_mig_slices", mig_l, b, 3, r->idle);
    }
    static const char *const pre_l[] = {"namespace", "priority_class", "role"};
    family(sb, "gpusched_gpu_preemptions_total", "counter",
           "GPU pods preempted (victim) and GPU pods that preempted others (preemptor).");
    for (size_t i = 0; i < m->preempts.n; i++) {
        char buf[800];
        const char *parts[3] = {"", "", ""};
        split_key(gs_intern_str(&m->preempt_keys, (int32_t)i), buf, sizeof buf, parts, 3);
        sample(sb, "gpusched_gpu_preemptions_total", pre_l, parts, 3, (double)m->preempts.v[i]);
    }
    static const char *const dp_l[] = {"node", "pool", "problem"};
    family(sb, "gpusched_device_plugin_problem", "gauge",
           "1 for each device-plugin problem of a GPU node, while it lasts.");
    for (size_t i = 0; i < m->dp_rows.n; i++)
        sample(sb, "gpusched_device_plugin_problem", dp_l, m->dp_rows.v[i].l, 3, 1);
    family(sb, "gpusched_device_plugin_gpus_missing", "gauge",
           "GPUs the node's labels promise minus GPUs it advertises, while above 0.");
    for (size_t i = 0; i < m->missing_rows.n; i++)
        sample(sb, "gpusched_device_plugin_gpus_missing", dp_l, m->missing_rows.v[i].l, 2, m->missing_rows.v[i].v);
    static const char *const idle_l[] = {"node", "gpu", "mig_instance", "namespace", "pod"};
    char help[200];
    snprintf(help, sizeof help,
             "1 for each GPU or MIG instance allocated to a pod with utilization under %.0f%% for %lld s.",
             m->o.idle_threshold * 100, (long long)(m->o.idle_window_ms / 1000));
    family(sb, "gpusched_gpu_allocated_idle", "gauge", help);
    for (size_t i = 0; i < m->idle_rows.n; i++)
        sample(sb, "gpusched_gpu_allocated_idle", idle_l, m->idle_rows.v[i].l, 5, 1);
    static const char *const src_l[] = {"source"};
    static const char *const srcs[2] = {"endpoint", "prometheus"};
    family(sb, "gpusched_dcgm_scrape_errors_total", "counter", "Failed dcgm-exporter scrapes or Prometheus queries.");
    for (int i = 0; i < 2; i++)
        sample(sb, "gpusched_dcgm_scrape_errors_total", src_l, &srcs[i], 1, (double)m->dcgm_errors[i]);
    /* the monitor itself */
    static const char *const kind_l[] = {"kind"};
    family(sb, "gpusched_monitor_informer_synced", "gauge", "1 once the kind's cache synced.");
    for (int k = 0; k < GS_LIVE_NKINDS; k++)
        if (m->informed[k]) {
            const char *r = gs_live_kind_get((gs_live_kind)k)->resource;
            sample(sb, "gpusched_monitor_informer_synced", kind_l, &r, 1, m->synced[k]);
        }
    family(sb, "gpusched_monitor_watch_events_total", "counter", "Watch events applied to the cache.");
    for (int k = 0; k < GS_LIVE_NKINDS; k++)
        if (m->informed[k]) {
            const char *r = gs_live_kind_get((gs_live_kind)k)->resource;
            sample(sb, "gpusched_monitor_watch_events_total", kind_l, &r, 1, (double)m->watch_events[k]);
        }
    family(sb, "gpusched_monitor_relists_total", "counter", "Relists (after a 410 or a broken watch).");
    for (int k = 0; k < GS_LIVE_NKINDS; k++)
        if (m->informed[k]) {
            const char *r = gs_live_kind_get((gs_live_kind)k)->resource;
            sample(sb, "gpusched_monitor_relists_total", kind_l, &r, 1, (double)m->relists[k]);
        }
    family(sb, "gpusched_monitor_watch_failures_total", "counter",
           "Lists and watches that failed and were retried after a backoff (forbidden, unreachable, ...).");
    for (int k = 0; k < GS_LIVE_NKINDS; k++)
        if (m->informed[k]) {
            const char *r = gs_live_kind_get((gs_live_kind)k)->resource;
            sample(sb, "gpusched_monitor_watch_failures_total", kind_l, &r, 1, (double)m->failures[k]);
        }
    family(sb, "gpusched_monitor_update_duration_seconds", "histogram",
           "Time to bring the metrics up to date after changes.");
    histogram(sb, "gpusched_monitor_update_duration_seconds", NULL, NULL, 0, &m->upd, upd_le_s, UPD_NBUCKETS);
    static const char *const fam_l[] = {"family"};
    static const char *const fams[3] = {"device_plugin_problem", "device_plugin_gpus_missing", "gpu_allocated_idle"};
    family(sb, "gpusched_monitor_series_dropped", "gauge",
           "Per-problem series not served now because of --max-problem-series.");
    for (int i = 0; i < 3; i++)
        sample(sb, "gpusched_monitor_series_dropped", fam_l, &fams[i], 1, (double)m->dropped_series[i]);
    family(sb, "gpusched_monitor_leader", "gauge", "1 when this replica holds the Lease (writes Events).");
    sample(sb, "gpusched_monitor_leader", NULL, NULL, 0, m->leader);
    static const char *const res_l[] = {"result"};
    static const char *const results[3] = {"created", "patched", "failed"};
    family(sb, "gpusched_monitor_events_written_total", "counter", "Kubernetes Events written.");
    for (int i = 0; i < 3; i++)
        sample(sb, "gpusched_monitor_events_written_total", res_l, &results[i], 1, (double)m->events_written[i]);
}

static void fmt_wait(char *buf, size_t cap, int64_t ms)
{
    int64_t s = ms < 0 ? 0 : ms / 1000;
    if (s < 120)
        snprintf(buf, cap, "%llds", (long long)s);
    else if (s < 7200)
        snprintf(buf, cap, "%lldm", (long long)(s / 60));
    else if (s < 172800)
        snprintf(buf, cap, "%lldh%02lldm", (long long)(s / 3600), (long long)(s / 60 % 60));
    else
        snprintf(buf, cap, "%lldd", (long long)(s / 86400));
}

static void iso_time(char *buf, size_t cap, int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void json_kv(gs_strbuf *sb, const char *k, const char *v, bool comma)
{
    gs_strbuf_printf(sb, "%s\"%s\":", comma ? "," : "", k);
    gs_strbuf_json_str(sb, v);
}

/* A pending claim in the pending view: JSON {"claim","reason","why","fix"}, or a text line
 * under its pod ("  claim ml/x  claim_class_missing  <why>; fix: <fix>"). */
typedef struct claim_out {
    gs_strbuf *sb;
    bool json, first;
} claim_out;

static int claim_line(gs_monitor *m, size_t i, const char *key, int reason, const mfind *fd, void *ctx)
{
    (void)m;
    (void)i;
    claim_out *co = ctx;
    gs_strbuf *sb = co->sb;
    const char *why = fd ? fd->why : "", *fix = fd ? fd->fix : "";
    if (co->json) {
        gs_strbuf_puts(sb, co->first ? "{" : ",{");
        json_kv(sb, "claim", key, false);
        json_kv(sb, "reason", reason_names[reason], true);
        json_kv(sb, "why", why, true);
        json_kv(sb, "fix", fix, true);
        gs_strbuf_putc(sb, '}');
    } else {
        gs_strbuf_printf(sb, "  claim %-53s %-26s ", key, reason_names[reason]);
        gs_strbuf_text(sb, why[0] ? why : "not allocated (the pod's reason)");
        if (fix[0]) {
            gs_strbuf_puts(sb, "; fix: ");
            gs_strbuf_text(sb, fix);
        }
        gs_strbuf_putc(sb, '\n');
    }
    co->first = false;
    return 0;
}

static void render_pending(gs_monitor *m, gs_monitor_format f, int64_t now, gs_strbuf *sb)
{
    size_t n;
    pend_ref *v = pending_list(m, &n);
    char buf[512], wait[32], since[32];
    if (f == GS_MON_JSON) {
        gs_strbuf_puts(sb, "{\"pending\":[");
        for (size_t i = 0; v && i < n; i++) {
            gs_monitor_pending p;
            pending_fill(m, v[i].slot, &p, buf, sizeof buf);
            iso_time(since, sizeof since, p.created_ms);
            gs_strbuf_puts(sb, i ? ",{" : "{");
            json_kv(sb, "namespace", p.ns, false);
            json_kv(sb, "name", p.name, true);
            json_kv(sb, "uid", p.uid, true);
            json_kv(sb, "priority_class", p.priority_class, true);
            json_kv(sb, "request_kind", p.request_kind, true);
            json_kv(sb, "request", p.request, true);
            json_kv(sb, "reason", p.reason, true);
            json_kv(sb, "why", p.why, true);
            json_kv(sb, "fix", p.fix, true);
            json_kv(sb, "created", since, true);
            gs_strbuf_printf(sb, ",\"wait_seconds\":%lld", (long long)((now - p.created_ms) / 1000));
            if (m->pods.v[v[i].slot].flags & PF_CLAIMS) {
                claim_out co = {sb, true, true};
                gs_strbuf_puts(sb, ",\"claims\":[");
                (void)pod_claims_each(m, v[i].slot, claim_line, &co);
                gs_strbuf_putc(sb, ']');
            }
            gs_strbuf_putc(sb, '}');
        }
        gs_strbuf_puts(sb, "],\"not_created\":[");
        bool first = true;
        for (size_t i = 0; i < m->quotas.n; i++) {
            const quota_entry *q = &m->quotas.v[i];
            if (now - q->last_ms > QUOTA_EVENT_WINDOW_MS)
                continue;
            iso_time(since, sizeof since, q->last_ms);
            gs_strbuf_puts(sb, first ? "{" : ",{");
            first = false;
            json_kv(sb, "namespace", q->ns, false);
            json_kv(sb, "workload", q->workload, true);
            json_kv(sb, "request_kind", kind_names[q->kind], true);
            json_kv(sb, "resource", q->resource, true);
            json_kv(sb, "reason", reason_names[R_QUOTA], true);
            json_kv(sb, "why", q->note, true);
            json_kv(sb, "last_seen", since, true);
            gs_strbuf_putc(sb, '}');
        }
        gs_strbuf_puts(sb, "]}\n");
        free(v);
        return;
    }
    gs_strbuf_printf(sb, "%-20s %-40s %-8s %-16s %-6s %-26s %s\n", "NAMESPACE", "NAME", "WAIT", "PRIORITY-CLASS",
                     "KIND", "REASON", "WHY / FIX");
    for (size_t i = 0; v && i < n; i++) {
        gs_monitor_pending p;
        pending_fill(m, v[i].slot, &p, buf, sizeof buf);
        fmt_wait(wait, sizeof wait, now - p.created_ms);
        gs_strbuf_printf(sb, "%-20s %-40s %-8s %-16s %-6s %-26s ", p.ns, p.name, wait,
                         p.priority_class[0] ? p.priority_class : "-", p.request_kind, p.reason);
        gs_strbuf_text(sb, p.why);
        if (p.fix[0]) {
            gs_strbuf_puts(sb, "; fix: ");
            gs_strbuf_text(sb, p.fix);
        }
        gs_strbuf_putc(sb, '\n');
        claim_out co = {sb, false, true};
        (void)pod_claims_each(m, v[i].slot, claim_line, &co);
    }
    for (size_t i = 0; i < m->quotas.n; i++) {
        const quota_entry *q = &m->quotas.v[i];
        if (now - q->last_ms > QUOTA_EVENT_WINDOW_MS)
            continue;
        fmt_wait(wait, sizeof wait, now - q->last_ms);
        gs_strbuf_printf(sb, "%-20s %-40s %-8s %-16s %-6s %-26s ", q->ns, q->workload, wait, "-", kind_names[q->kind],
                         reason_names[R_QUOTA]);
        gs_strbuf_puts(sb, "pods not created: ");
        gs_strbuf_text(sb, q->note);
        gs_strbuf_putc(sb, '\n');
    }
    free(v);
}

static void render_hygiene(gs_monitor *m, gs_monitor_format f, gs_strbuf *sb)
{
    bool json = f == GS_MON_JSON;
    gs_strbuf_puts(sb, json ? "{\"untainted_gpu_nodes\":[" : "GPU NODES WITHOUT A GPU TAINT (NoSchedule/NoExecute)\n");
    bool first = true;
    for (size_t s = 0; s < m->w.nodes.n; s++) {
        const mnode *n = &m->nodes.v[m->node_of_slot.v[s]];
        if ((!n->gpu_node && !n->labels_gpu) || n->tainted)
            continue;
        const char *name = m->w.nodes.v[s].meta.name;
        if (json) {
            gs_strbuf_puts(sb, first ? "{" : ",{");
            json_kv(sb, "node", name, false);
            json_kv(sb, "pool", pool_name(m, n), true);
            gs_strbuf_putc(sb, '}');
        } else
            gs_strbuf_printf(sb, "  %-40s pool %s\n", name, pool_name(m, n));
        first = false;
    }
    gs_strbuf_puts(sb, json ? "],\"non_gpu_pods_on_gpu_nodes\":[" : "\nPODS WITHOUT GPUS ON GPU NODES (DaemonSet pods excluded)\n");
    first = true;
    for (size_t i = 0; i < m->pods.n; i++) {
        const mpod *fp = &m->pods.v[i];
        if (fp->node < 0 || (fp->flags & (PF_HAS_GPU | PF_DS | PF_TERMINAL)))
            continue;
        const mnode *n = &m->nodes.v[fp->node];
        if (n->slot < 0 || (!n->gpu_node && !n->labels_gpu))
            continue;
        const gs_pod *p = &m->w.pods.v[i];
        if (json) {
            gs_strbuf_puts(sb, first ? "{" : ",{");
            json_kv(sb, "namespace", p->meta.namespace_, false);
            json_kv(sb, "name", p->meta.name, true);
            json_kv(sb, "node", node_name(m, fp->node), true);
            json_kv(sb, "pool", pool_name(m, n), true);
            json_kv(sb, "owner", p->meta.owner_kind ? p->meta.owner_kind : "", true);
            gs_strbuf_putc(sb, '}');
        } else
            gs_strbuf_printf(sb, "  %s/%s on %s (pool %s)\n", p->meta.namespace_, p->meta.name, node_name(m, fp->node),
                             pool_name(m, n));
        first = false;
    }
    gs_strbuf_puts(sb, json ? "],\"device_plugin_problems\":[" : "\nDEVICE-PLUGIN PROBLEMS\n");
    for (size_t i = 0; i < m->dp_rows.n; i++) {
        const series_row *r = &m->dp_rows.v[i];
        if (json) {
            gs_strbuf_puts(sb, i ? ",{" : "{");
            json_kv(sb, "node", r->l[0], false);
            json_kv(sb, "pool", r->l[1], true);
            json_kv(sb, "problem", r->l[2], true);
            gs_strbuf_putc(sb, '}');
        } else
            gs_strbuf_printf(sb, "  %-40s %-24s pool %s\n", r->l[0], r->l[2], r->l[1]);
    }
    gs_strbuf_puts(sb, json ? "]}\n" : "");
}

static void render_idle(gs_monitor *m, gs_monitor_format f, gs_strbuf *sb)
{
    if (f == GS_MON_JSON) {
        gs_strbuf_printf(sb, "{\"threshold\":%.4g,\"window_seconds\":%lld,\"idle\":[", m->o.idle_threshold,
                         (long long)(m->o.idle_window_ms / 1000));
        for (size_t i = 0; i < m->idle_rows.n; i++) {
            const series_row *r = &m->idle_rows.v[i];
            gs_strbuf_puts(sb, i ? ",{" : "{");
            json_kv(sb, "node", r->l[0], false);
            json_kv(sb, "gpu", r->l[1], true);
            json_kv(sb, "mig_instance", r->l[2], true);
            json_kv(sb, "namespace", r->l[3], true);
            json_kv(sb, "pod", r->l[4], true);
            gs_strbuf_printf(sb, ",\"utilization\":%.4g}", r->v);
        }
        gs_strbuf_puts(sb, "]}\n");
        return;
    }
    gs_strbuf_printf(sb, "%-32s %-44s %-4s %-20s %-40s %s\n", "NODE", "GPU", "MIG", "NAMESPACE", "POD", "UTIL");
    for (size_t i = 0; i < m->idle_rows.n; i++) {
        const series_row *r = &m->idle_rows.v[i];
        gs_strbuf_printf(sb, "%-32s %-44s %-4s %-20s %-40s %.0f%%\n", r->l[0], r->l[1], r->l[2][0] ? r->l[2] : "-",
                         r->l[3][0] ? r->l[3] : "-", r->l[4][0] ? r->l[4] : "(all GPUs of the node allocated)",
                         r->v * 100);
    }
}

int gs_monitor_render(gs_monitor *m, gs_monitor_view v, gs_monitor_format f, int64_t now, gs_strbuf *out,
                      gs_error *err)
{
    gs_strbuf_reset(out);
    pthread_mutex_lock(&m->mu);
    switch (v) {
    case GS_MON_METRICS: render_metrics(m, now, out); break;
    case GS_MON_PENDING: render_pending(m, f, now, out); break;
    case GS_MON_HYGIENE: render_hygiene(m, f, out); break;
    case GS_MON_IDLE: render_idle(m, f, out); break;
    }
    pthread_mutex_unlock(&m->mu);
    if (out->oom)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    return 0;
}
