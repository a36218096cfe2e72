/*
 * state.c - the extender's device state and its decisions (extender.h, "device state").
 *
 * Layout: nodes and pods live in vectors of slots (a removed pod's slot is reused), found
 * by name through small open-addressing maps (pod key "ns/name", pod UID, node name,
 * reservation UID). Per node: the inventory as built from the node (`base`, nothing held)
 * and the current state (`cur`: base + recorded pods + reservations + reconstructed pods),
 * recomputed from base whenever a pod or the node changes (one node per change); a
 * reservation taken or dropped binds / unbinds on `cur` directly.
 *
 * Objects are parsed (snapshot reader, record decode, inventory build) before the write
 * lock is taken; the lock covers the map and slot updates and the node's recompute.
 */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpusched/assign.h"
#include "gpusched/extender.h"
#include "gpusched/gpu.h"
#include "gpusched/kube.h"
#include "gpusched/live.h"
#include "gpusched/sim.h"
#include "gpusched/util.h"

/* ================================================================ string map */
typedef struct smap_ent {
    uint64_t h;
    const char *key; /* NULL empty; TOMB removed */
    int32_t val;
} smap_ent;

typedef struct smap {
    smap_ent *e;
    size_t cap, used, tombs; /* cap: power of two */
} smap;

static const char TOMB_[1];
#define TOMB (&TOMB_[0])

static uint64_t shash(const char *k, size_t n) { return gs_hash_bytes(k, n) | 1; }

static int32_t smap_get(const smap *m, const char *k, size_t n)
{
    if (!m->cap)
        return -1;
    uint64_t h = shash(k, n);
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        const smap_ent *x = &m->e[i];
        if (!x->key)
            return -1;
        if (x->key != TOMB && x->h == h && strncmp(x->key, k, n) == 0 && x->key[n] == 0)
            return x->val;
    }
}

static int smap_grow(smap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    if (m->used * 2 < m->cap)
        ncap = m->cap; /* only tombstones: rehash in place size */
    smap_ent *ne = calloc(ncap, sizeof *ne);
    if (!ne)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        smap_ent *x = &m->e[i];
        if (!x->key || x->key == TOMB)
            continue;
        size_t j = x->h & (ncap - 1);
        while (ne[j].key)
            j = (j + 1) & (ncap - 1);
        ne[j] = *x;
    }
    free(m->e);
    m->e = ne;
    m->cap = ncap;
    m->tombs = 0;
    return 0;
}

/* The map keeps its own copy of the key: owners' strings live in vectors that move when
 * they grow (a key pointing into one was read after free, found by ASan). */
static int smap_put(smap *m, const char *key, int32_t val)
{
    if ((m->used + m->tombs + 1) * 10 > m->cap * 7 && smap_grow(m))
        return -1;
    size_t n = strlen(key);
    uint64_t h = shash(key, n);
    size_t slot = SIZE_MAX;
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        smap_ent *x = &m->e[i];
        if (!x->key) {
            if (slot == SIZE_MAX)
                slot = i;
            break;
        }
        if (x->key == TOMB) {
            if (slot == SIZE_MAX)
                slot = i;
            continue;
        }
        if (x->h == h && strcmp(x->key, key) == 0) {
            x->val = val;
            return 0;
        }
    }
    char *copy = strdup(key);
    if (!copy)
        return -1;
    if (m->e[slot].key == TOMB)
        m->tombs--;
    m->e[slot] = (smap_ent){h, copy, val};
    m->used++;
    return 0;
}

static void smap_del(smap *m, const char *k)
{
    if (!m->cap)
        return;
    size_t n = strlen(k);
    uint64_t h = shash(k, n);
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        smap_ent *x = &m->e[i];
        if (!x->key)
            return;
        if (x->key != TOMB && x->h == h && strcmp(x->key, k) == 0) {
            free((char *)x->key);
            x->key = TOMB;
            m->used--;
            m->tombs++;
            return;
        }
    }
}

static void smap_free(smap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->e[i].key && m->e[i].key != TOMB)
            free((char *)m->e[i].key);
    free(m->e);
    memset(m, 0, sizeof *m);
}

/* ================================================================ state */
enum { HOLD_RECORD = 1, HOLD_RECON = 2 };

typedef struct xpod {
    bool live;
    char *key;          /* "ns/name" (owned) */
    char uid[40];
    uint64_t hash;      /* text hash (repeats skipped) */
    int32_t node;       /* node slot */
    int32_t priority;
    int64_t start;      /* GS_GPU_NO_START when unknown */
    uint8_t hold;       /* HOLD_RECORD (record checked) or HOLD_RECON */
    char *rec_json;     /* the record annotation's value (owned), NULL when none */
    char *text;         /* HOLD_RECON: the pod's text, parsed again at a recompute */
    size_t text_len;
    gs_gpu_assign assign; /* what it holds now */
} xpod;

typedef struct xresv {
    bool live;
    char uid[40];
    int32_t node;
    gs_gpu_assign assign;
    char *record;       /* record JSON (owned) */
    char *key;          /* the pod's "ns/name" (owned): a deleted pod ends its reservation */
    bool seen;          /* the informer delivered this UID: a delete of key is then its own */
    int64_t expires;    /* monotonic ms; INT64_MAX while the bind is in flight */
} xresv;

typedef struct xnode {
    char *name;         /* owned */
    bool present;       /* the Node object is held */
    uint64_t hash;
    bool has_inv;
    char *inv_strs;     /* the inventory's strings (model, resource, MIG resource names),
                           copied out of the node's snapshot */
    char *inv_error;    /* inventory refused: unresolvable with this message */
    gs_node_gpus base, cur;
    GS_VEC(int32_t) pods; /* pod slots bound here */
    GS_VEC(int32_t) resv; /* reservation slots here */
} xnode;

struct gs_ext_state {
    pthread_rwlock_t lock;
    gs_ext_state_opts o;
    int64_t ttl;
    atomic_bool ready;
    atomic_llong next_expiry; /* earliest reservation expiry (INT64_MAX: none) */
    GS_VEC(xnode) nodes;
    GS_VEC(xpod) pods;
    GS_VEC(int32_t) free_pods;
    GS_VEC(xresv) resv;
    GS_VEC(int32_t) free_resv;
    smap node_by_name, pod_by_key, pod_by_uid, resv_by_uid;
    gs_ext_state_stats st;
    pthread_mutex_t stmu; /* counters touched under the read lock */
    /* FGD's target workload (built under the read lock, guarded by fgdmu) */
    pthread_mutex_t fgdmu;
    struct fgd_target *fgd;   /* current one, NULL before the first build */
    int64_t fgd_built_ms;
    uint32_t fgd_built_pods;  /* st.pods when built */
    uint64_t fgd_builds;      /* stats (under fgdmu) */
    uint32_t fgd_pods, fgd_types;
};

/* A target workload shared by the prioritize calls using it (refs, under fgdmu). */
typedef struct fgd_target {
    gs_frag_target t;
    uint32_t refs; /* the state's own reference while current, plus one per call */
} fgd_target;

static int64_t mono_ms(gs_ext_state *s)
{
    if (s->o.clock_ms)
        return s->o.clock_ms(s->o.clock_ctx);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

gs_ext_state *gs_ext_state_new(const gs_ext_state_opts *o, gs_error *err)
{
    if (o && o->score != GS_EXT_SCORE_BESTFIT && o->score != GS_EXT_SCORE_FGD) {
        gs_fail(err, GS_ERR_INVALID, "unknown prioritize score %d", (int)o->score);
        return NULL;
    }
    gs_ext_state *s = calloc(1, sizeof *s);
    if (!s) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (o)
        s->o = *o;
    s->ttl = s->o.assume_ttl_ms > 0 ? s->o.assume_ttl_ms : GS_EXT_ASSUME_TTL_MS_DEFAULT;
    pthread_rwlock_init(&s->lock, NULL);
    pthread_mutex_init(&s->stmu, NULL);
    pthread_mutex_init(&s->fgdmu, NULL);
    atomic_store(&s->next_expiry, INT64_MAX);
    return s;
}

static void pod_clear(xpod *p)
{
    free(p->key);
    free(p->rec_json);
    free(p->text);
    memset(p, 0, sizeof *p);
}

void gs_ext_state_free(gs_ext_state *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nodes.n; i++) {
        xnode *n = &s->nodes.v[i];
        free(n->name);
        free(n->inv_error);
        free(n->inv_strs);
        if (n->has_inv) {
            gs_node_gpus_free(&n->base);
            gs_node_gpus_free(&n->cur);
        }
        gs_vec_free(n->pods);
        gs_vec_free(n->resv);
    }
    for (size_t i = 0; i < s->pods.n; i++)
        pod_clear(&s->pods.v[i]);
    for (size_t i = 0; i < s->resv.n; i++) {
        free(s->resv.v[i].record);
        free(s->resv.v[i].key);
    }
    gs_vec_free(s->nodes);
    gs_vec_free(s->pods);
    gs_vec_free(s->free_pods);
    gs_vec_free(s->resv);
    gs_vec_free(s->free_resv);
    smap_free(&s->node_by_name);
    smap_free(&s->pod_by_key);
    smap_free(&s->pod_by_uid);
    smap_free(&s->resv_by_uid);
    if (s->fgd) {
        gs_frag_target_free(&s->fgd->t);
        free(s->fgd);
    }
    pthread_rwlock_destroy(&s->lock);
    pthread_mutex_destroy(&s->stmu);
    pthread_mutex_destroy(&s->fgdmu);
    free(s);
}

void gs_ext_state_set_ready(gs_ext_state *s, bool ready) { atomic_store(&s->ready, ready); }
bool gs_ext_state_ready(gs_ext_state *s) { return atomic_load(&s->ready); }

/* ================================================================ helpers */
static void vec_remove_i32(int32_t *v, size_t *n, int32_t x)
{
    for (size_t i = 0; i < *n; i++)
        if (v[i] == x) {
            v[i] = v[--*n];
            return;
        }
}

static int32_t node_get_or_add(gs_ext_state *s, const char *name)
{
    int32_t id = smap_get(&s->node_by_name, name, strlen(name));
    if (id >= 0)
        return id;
    xnode fresh;
    memset(&fresh, 0, sizeof fresh);
    fresh.name = strdup(name);
    if (!fresh.name || gs_vec_push(s->nodes, fresh) < 0) {
        free(fresh.name);
        return -1;
    }
    id = (int32_t)(s->nodes.n - 1);
    if (smap_put(&s->node_by_name, s->nodes.v[id].name, id) < 0)
        return -1; /* the slot stays, unnamed in the map: harmless */
    return id;
}

/* Parse one object of kind k with the snapshot reader into a fresh snapshot. */
static int parse_one(gs_snapshot *snap, gs_live_kind k, const char *json, size_t len, gs_error *err)
{
    gs_snapshot_init(snap);
    gs_read_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.no_positions = true;
    if (gs_snapshot_read_buffer(snap, "cluster", json, len, &ro, err) != 0)
        return -1;
    if ((k == GS_LIVE_NODE && snap->nodes.n != 1) || (k == GS_LIVE_POD && snap->pods.n != 1))
        return gs_fail(err, GS_ERR_INVALID, "%s: not one object of the kind",
                       k == GS_LIVE_NODE ? "Node" : "Pod");
    return 0;
}

static bool pod_terminal(const gs_pod *p)
{
    return strcmp(p->phase, "Succeeded") == 0 || strcmp(p->phase, "Failed") == 0;
}

/* ================================================================ per-node recompute */
typedef struct recon_ent {
    int32_t pod;
    int64_t start;
    const char *key;
} recon_ent;

static int cmp_recon(const void *a, const void *b)
{
    const recon_ent *x = a, *y = b;
    int c = gs_gpu_bound_cmp(x->start, 0, y->start, 0);
    return c ? c : strcmp(x->key, y->key); /* list order: keys bytewise */
}

static void recompute_node(gs_ext_state *s, int32_t nid)
{
    xnode *n = &s->nodes.v[nid];
    if (!n->has_inv)
        return;
    gs_node_gpus *g = &n->cur;
    if (n->base.ndevs) /* a node may carry an inventory without devices */
        memcpy(g->devs, n->base.devs, n->base.ndevs * sizeof *g->devs);
    if (n->base.nmig)
        memcpy(g->mig, n->base.mig, n->base.nmig * sizeof *g->mig);
    uint32_t nrecon = 0;
    for (size_t i = 0; i < n->pods.n; i++) {
        xpod *p = &s->pods.v[n->pods.v[i]];
        if (p->hold == HOLD_RECORD)
            gs_gpu_bind(g, &p->assign);
        else
            nrecon++;
    }
    for (size_t i = 0; i < n->resv.n; i++)
        gs_gpu_bind(g, &s->resv.v[n->resv.v[i]].assign);
    if (!nrecon)
        return;
    recon_ent *list = malloc(nrecon * sizeof *list);
    if (!list)
        return;
    uint32_t k = 0;
    for (size_t i = 0; i < n->pods.n; i++) {
        xpod *p = &s->pods.v[n->pods.v[i]];
        if (p->hold != HOLD_RECORD)
            list[k++] = (recon_ent){n->pods.v[i], p->start, p->key};
    }
    qsort(list, nrecon, sizeof *list, cmp_recon);
    for (uint32_t i = 0; i < nrecon; i++) {
        xpod *p = &s->pods.v[list[i].pod];
        p->assign.n = 0;
        gs_snapshot snap;
        gs_error e;
        gs_error_clear(&e);
        if (p->text && parse_one(&snap, GS_LIVE_POD, p->text, p->text_len, &e) == 0) {
            gs_gpu_request r;
            if (gs_gpu_request_from_pod(&snap.pods.v[0], &r, &e) == 0 &&
                gs_gpu_fit_node(g, &r, &p->assign) == GS_FIT_OK)
                gs_gpu_bind(g, &p->assign);
            else
                p->assign.n = 0;
        }
        gs_snapshot_free(&snap);
    }
    free(list);
}

/* Check a pod's record against its node's inventory: HOLD_RECORD with the accounting, or
 * HOLD_RECON when the record is refused or the node is not known yet. */
static void pod_check_record(gs_ext_state *s, xpod *p, gs_assign_record *rec)
{
    xnode *n = &s->nodes.v[p->node];
    p->hold = HOLD_RECON;
    p->assign.n = 0;
    if (!p->rec_json || !n->has_inv)
        return;
    gs_error e;
    gs_error_clear(&e);
    if (gs_assign_holds(p->rec_json, p->uid, &n->base, n->name, rec, &p->assign, &e) == 0) {
        p->hold = HOLD_RECORD;
        return;
    }
    p->assign.n = 0;
    s->st.bad_records++;
}

/* ================================================================ reservations */
static void resv_drop(gs_ext_state *s, int32_t rid, bool unbind)
{
    xresv *r = &s->resv.v[rid];
    xnode *n = &s->nodes.v[r->node];
    if (unbind && n->has_inv)
        gs_gpu_unbind(&n->cur, &r->assign);
    vec_remove_i32(n->resv.v, &n->resv.n, rid);
    smap_del(&s->resv_by_uid, r->uid);
    free(r->record);
    free(r->key);
    memset(r, 0, sizeof *r);
    gs_vec_push(s->free_resv, rid);
    s->st.reservations--;
}

static void update_next_expiry(gs_ext_state *s)
{
    int64_t m = INT64_MAX;
    for (size_t i = 0; i < s->resv.n; i++)
        if (s->resv.v[i].live && s->resv.v[i].expires < m)
            m = s->resv.v[i].expires;
    atomic_store(&s->next_expiry, m);
}

/* write lock held */
static void expire_locked(gs_ext_state *s, int64_t now)
{
    if (atomic_load(&s->next_expiry) > now)
        return;
    for (size_t i = 0; i < s->resv.n; i++)
        if (s->resv.v[i].live && s->resv.v[i].expires <= now) {
            resv_drop(s, (int32_t)i, true);
            s->st.expired++;
        }
    update_next_expiry(s);
}

void gs_ext_state_expire(gs_ext_state *s)
{
    int64_t now = mono_ms(s);
    if (atomic_load(&s->next_expiry) > now)
        return;
    pthread_rwlock_wrlock(&s->lock);
    expire_locked(s, now);
    pthread_rwlock_unlock(&s->lock);
}

/* ================================================================ feeding */
static void pod_remove_locked(gs_ext_state *s, int32_t pid, int32_t *dirty)
{
    xpod *p = &s->pods.v[pid];
    xnode *n = &s->nodes.v[p->node];
    vec_remove_i32(n->pods.v, &n->pods.n, pid);
    *dirty = p->node;
    smap_del(&s->pod_by_key, p->key);
    if (p->uid[0] && smap_get(&s->pod_by_uid, p->uid, strlen(p->uid)) == pid)
        smap_del(&s->pod_by_uid, p->uid);
    s->st.pods--;
    if (p->hold == HOLD_RECORD)
        s->st.recorded--;
    else
        s->st.reconstructed--;
    pod_clear(p);
    gs_vec_push(s->free_pods, pid);
}

/* The pod with this UID is observed: settle its reservation. */
static void resv_observe(gs_ext_state *s, const char *uid, bool bound, const char *node,
                         const char *rec_json, bool terminal)
{
    int32_t rid = smap_get(&s->resv_by_uid, uid, strlen(uid));
    if (rid < 0)
        return;
    xresv *r = &s->resv.v[rid];
    r->seen = true;
    if (terminal) {
        resv_drop(s, rid, true);
        s->st.superseded++;
    } else if (bound) {
        bool same = rec_json && strcmp(rec_json, r->record) == 0 &&
                    strcmp(node, s->nodes.v[r->node].name) == 0;
        resv_drop(s, rid, true);
        if (same)
            s->st.confirmed++;
        else
            s->st.superseded++;
    }
    update_next_expiry(s);
}

static int pod_put(gs_ext_state *s, const char *json, size_t len, gs_error *err)
{
    uint64_t h = gs_hash_bytes(json, len);
    gs_snapshot snap;
    if (parse_one(&snap, GS_LIVE_POD, json, len, err) != 0) {
        gs_snapshot_free(&snap);
        pthread_mutex_lock(&s->stmu);
        s->st.bad_objects++;
        pthread_mutex_unlock(&s->stmu);
        return -1;
    }
    const gs_pod *po = &snap.pods.v[0];
    char key[600];
    snprintf(key, sizeof key, "%s/%s", po->meta.namespace_, po->meta.name);
    gs_gpu_request r;
    gs_error e;
    gs_error_clear(&e);
    if (gs_gpu_request_from_pod(po, &r, &e) != 0)
        r.kind = GS_GPU_NONE;
    const char *rec = gs_labels_get(&po->meta.annotations, GS_ASSIGN_ANNOTATION);
    bool terminal = pod_terminal(po);
    bool bound = po->node_name[0] != 0;
    bool holds = bound && !terminal && (r.kind != GS_GPU_NONE || rec);
    gs_assign_record *drec = holds && rec ? malloc(sizeof *drec) : NULL;
    if (holds && rec && !drec) {
        gs_snapshot_free(&snap);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }

    pthread_rwlock_wrlock(&s->lock);
    expire_locked(s, mono_ms(s));
    int32_t dirty[2] = {-1, -1};
    int32_t old = smap_get(&s->pod_by_key, key, strlen(key));
    if (old >= 0 && s->pods.v[old].hash == h) {
        s->st.skipped++;
        goto done;
    }
    s->st.events++;
    if (old >= 0)
        pod_remove_locked(s, old, &dirty[0]);
    if (po->meta.uid[0])
        resv_observe(s, po->meta.uid, bound, po->node_name, rec, terminal);
    if (holds && strlen(po->meta.uid) < sizeof s->pods.v[0].uid) {
        int32_t nid = node_get_or_add(s, po->node_name);
        int32_t pid;
        if (s->free_pods.n)
            pid = s->free_pods.v[--s->free_pods.n];
        else {
            xpod z;
            memset(&z, 0, sizeof z);
            if (nid < 0 || gs_vec_push(s->pods, z) < 0)
                goto done;
            pid = (int32_t)(s->pods.n - 1);
        }
        xpod *p = &s->pods.v[pid];
        memset(p, 0, sizeof *p);
        p->live = true;
        p->key = strdup(key);
        snprintf(p->uid, sizeof p->uid, "%s", po->meta.uid);
        p->hash = h;
        p->node = nid;
        p->priority = po->has_priority ? po->priority : 0;
        p->start = po->has_start_time ? po->start_time : GS_GPU_NO_START;
        p->rec_json = rec ? strdup(rec) : NULL;
        if (nid < 0 || !p->key || (rec && !p->rec_json)) {
            pod_clear(p);
            gs_vec_push(s->free_pods, pid);
            goto done;
        }
        pod_check_record(s, p, drec);
        if (p->hold == HOLD_RECON) {
            p->text = malloc(len + 1);
            if (p->text) {
                memcpy(p->text, json, len);
                p->text[len] = 0;
                p->text_len = len;
            }
        }
        smap_put(&s->pod_by_key, p->key, pid);
        if (p->uid[0])
            smap_put(&s->pod_by_uid, p->uid, pid);
        gs_vec_push(s->nodes.v[nid].pods, pid);
        s->st.pods++;
        if (p->hold == HOLD_RECORD)
            s->st.recorded++;
        else
            s->st.reconstructed++;
        dirty[1] = nid;
    }
done:
    if (dirty[0] >= 0)
        recompute_node(s, dirty[0]);
    if (dirty[1] >= 0 && dirty[1] != dirty[0])
        recompute_node(s, dirty[1]);
    pthread_rwlock_unlock(&s->lock);
    free(drec);
    gs_snapshot_free(&snap);
    return 0;
}

/* The inventory points at strings of the node's snapshot (model, resource names): copy
 * them into one block so the snapshot can go; the copy `cur` gets the same pointers. */
static char *own_strings(gs_node_gpus *g)
{
    size_t need = 0;
    const char *src[18];
    uint32_t ns = 0;
    src[ns++] = g->model ? g->model : "";
    src[ns++] = g->resource ? g->resource : "";
    for (uint32_t i = 0; i < g->nmig_res && i < 16; i++)
        src[ns++] = g->mig_res_name[i] ? g->mig_res_name[i] : "";
    for (uint32_t i = 0; i < ns; i++)
        need += strlen(src[i]) + 1;
    char *b = malloc(need), *o = b;
    if (!b)
        return NULL;
    const char **dst[18];
    uint32_t nd = 0;
    dst[nd++] = &g->model;
    dst[nd++] = &g->resource;
    for (uint32_t i = 0; i < g->nmig_res && i < 16; i++)
        dst[nd++] = &g->mig_res_name[i];
    for (uint32_t i = 0; i < ns; i++) {
        size_t l = strlen(src[i]) + 1;
        memcpy(o, src[i], l);
        bool was_null = i == 1 && !g->resource;
        *dst[i] = was_null ? NULL : o;
        o += l;
    }
    return b;
}

static int node_put(gs_ext_state *s, const char *json, size_t len, gs_error *err)
{
    uint64_t h = gs_hash_bytes(json, len);
    gs_snapshot snap;
    if (parse_one(&snap, GS_LIVE_NODE, json, len, err) != 0) {
        gs_snapshot_free(&snap);
        pthread_mutex_lock(&s->stmu);
        s->st.bad_objects++;
        pthread_mutex_unlock(&s->stmu);
        return -1;
    }
    const gs_node *no = &snap.nodes.v[0];
    gs_node_gpus base, cur;
    memset(&base, 0, sizeof base);
    memset(&cur, 0, sizeof cur);
    gs_error e;
    gs_error_clear(&e);
    bool inv = gs_node_gpus_build(no, &base, &e) == 0;
    char *inv_error = NULL, *inv_strs = inv ? own_strings(&base) : NULL;
    if (inv && (!inv_strs || gs_node_gpus_copy(&cur, &base) != 0)) {
        gs_node_gpus_free(&base);
        free(inv_strs);
        gs_snapshot_free(&snap);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    if (!inv) {
        char buf[700];
        snprintf(buf, sizeof buf, "node's GPU inventory refused: %s", e.msg);
        inv_error = strdup(buf);
    }
    gs_assign_record *rec = malloc(sizeof *rec);

    pthread_rwlock_wrlock(&s->lock);
    int32_t nid = smap_get(&s->node_by_name, no->meta.name, strlen(no->meta.name));
    if (nid >= 0 && s->nodes.v[nid].present && s->nodes.v[nid].hash == h) {
        s->st.skipped++;
        pthread_rwlock_unlock(&s->lock);
        if (inv) {
            gs_node_gpus_free(&base);
            gs_node_gpus_free(&cur);
        }
        free(inv_strs);
        free(inv_error);
        free(rec);
        gs_snapshot_free(&snap);
        return 0;
    }
    if (nid < 0)
        nid = node_get_or_add(s, no->meta.name);
    if (nid < 0 || !rec) {
        pthread_rwlock_unlock(&s->lock);
        if (inv) {
            gs_node_gpus_free(&base);
            gs_node_gpus_free(&cur);
        }
        free(inv_strs);
        free(inv_error);
        free(rec);
        gs_snapshot_free(&snap);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    s->st.events++;
    xnode *n = &s->nodes.v[nid];
    if (!n->present)
        s->st.nodes++;
    if (n->has_inv) {
        if (n->base.ndevs)
            s->st.gpu_nodes--;
        gs_node_gpus_free(&n->base);
        gs_node_gpus_free(&n->cur);
    }
    free(n->inv_error);
    free(n->inv_strs);
    n->present = true;
    n->hash = h;
    n->has_inv = inv;
    n->inv_error = inv_error;
    n->inv_strs = inv_strs;
    if (inv) {
        n->base = base;
        n->cur = cur;
        if (base.ndevs)
            s->st.gpu_nodes++;
    }
    /* the records of its pods are checked against the new inventory */
    for (size_t i = 0; i < n->pods.n; i++) {
        xpod *p = &s->pods.v[n->pods.v[i]];
        uint8_t was = p->hold;
        pod_check_record(s, p, rec);
        if (was != p->hold) {
            if (p->hold == HOLD_RECORD) {
                s->st.recorded++;
                s->st.reconstructed--;
            } else {
                s->st.recorded--;
                s->st.reconstructed++;
            }
        }
    }
    recompute_node(s, nid);
    pthread_rwlock_unlock(&s->lock);
    free(rec);
    gs_snapshot_free(&snap);
    return 0;
}

int gs_ext_state_put(gs_ext_state *s, gs_live_kind k, const char *json, size_t len, gs_error *err)
{
    if (k == GS_LIVE_POD)
        return pod_put(s, json, len, err);
    if (k == GS_LIVE_NODE)
        return node_put(s, json, len, err);
    return 0;
}

void gs_ext_state_delete(gs_ext_state *s, gs_live_kind k, const char *key)
{
    if (k != GS_LIVE_POD && k != GS_LIVE_NODE)
        return;
    pthread_rwlock_wrlock(&s->lock);
    expire_locked(s, mono_ms(s));
    if (k == GS_LIVE_POD) {
        int32_t pid = smap_get(&s->pod_by_key, key, strlen(key));
        if (pid >= 0) {
            int32_t dirty = -1;
            char uid[40];
            memcpy(uid, s->pods.v[pid].uid, sizeof uid);
            pod_remove_locked(s, pid, &dirty);
            if (uid[0])
                resv_observe(s, uid, false, "", NULL, true);
            recompute_node(s, dirty);
            s->st.events++;
        }
        /* a pod deleted before it was seen bound (its bind done, the pod deleted at
         * once) still owns its reservation: found by key (reservations are few: in-flight
         * binds and those waiting for their pod to be observed). Only once the informer
         * has delivered the reservation's UID: until then the delete is of an older pod
         * of the same name (the stream is in order), and the reservation stays. */
        for (size_t i = 0; i < s->resv.n; i++) {
            xresv *r = &s->resv.v[i];
            if (r->live && r->seen && r->key && strcmp(r->key, key) == 0) {
                resv_drop(s, (int32_t)i, true);
                s->st.superseded++;
                update_next_expiry(s);
                s->st.events++;
            }
        }
    } else {
        int32_t nid = smap_get(&s->node_by_name, key, strlen(key));
        if (nid >= 0 && s->nodes.v[nid].present) {
            xnode *n = &s->nodes.v[nid];
            n->present = false;
            n->hash = 0;
            s->st.nodes--;
            if (n->has_inv) {
                if (n->base.ndevs)
                    s->st.gpu_nodes--;
                gs_node_gpus_free(&n->base);
                gs_node_gpus_free(&n->cur);
                n->has_inv = false;
            }
            free(n->inv_strs);
            n->inv_strs = NULL;
            free(n->inv_error);
            n->inv_error = NULL;
            for (size_t i = 0; i < n->pods.n; i++) {
                xpod *p = &s->pods.v[n->pods.v[i]];
                if (p->hold == HOLD_RECORD) {
                    p->hold = HOLD_RECON; /* checked again when the node comes back */
                    s->st.recorded--;
                    s->st.reconstructed++;
                }
            }
            s->st.events++;
        }
    }
    pthread_rwlock_unlock(&s->lock);
}

void gs_ext_state_observer(void *state, gs_live_kind k, const char *key, size_t klen, const char *raw,
                           size_t raw_len, const char *text, size_t text_len)
{
    (void)raw;
    (void)raw_len;
    gs_ext_state *s = state;
    if (k != GS_LIVE_POD && k != GS_LIVE_NODE)
        return;
    if (text) {
        gs_error e;
        gs_error_clear(&e);
        (void)gs_ext_state_put(s, k, text, text_len, &e); /* counted in bad_objects */
        return;
    }
    char buf[600];
    if (klen >= sizeof buf)
        return;
    memcpy(buf, key, klen);
    buf[klen] = 0;
    gs_ext_state_delete(s, k, buf);
}

typedef struct load_ctx {
    gs_ext_state *s;
    gs_live_kind k;
} load_ctx;

static int load_one(void *ctx, const char *key, const char *obj, size_t len)
{
    (void)key;
    load_ctx *c = ctx;
    gs_error e;
    gs_error_clear(&e);
    (void)gs_ext_state_put(c->s, c->k, obj, len, &e);
    return 0;
}

int gs_ext_state_load(gs_ext_state *s, gs_live_store *st, gs_error *err)
{
    (void)err;
    load_ctx c = {s, GS_LIVE_NODE};
    gs_live_store_each(st, GS_LIVE_NODE, load_one, &c);
    c.k = GS_LIVE_POD;
    gs_live_store_each(st, GS_LIVE_POD, load_one, &c);
    return 0;
}

/* ================================================================ decisions */
static void prefix_pod(gs_error *err, const gs_pod *pod)
{
    char buf[600];
    snprintf(buf, sizeof buf, "Pod %s/%s: ", pod->meta.namespace_, pod->meta.name);
    gs_error_prefix_path(err, buf);
}

static int decision_begin(gs_ext_state *s, const gs_pod *pod, gs_gpu_request *r, gs_error *err)
{
    if (!gs_ext_state_ready(s))
        return gs_fail(err, GS_ERR_IO, "not ready: the device state is still being built from the cluster");
    gs_ext_state_expire(s);
    if (gs_gpu_request_from_pod(pod, r, err) != 0) {
        prefix_pod(err, pod);
        return -1;
    }
    return 0;
}

/* The filter's message for a fit result; unresolvable set when no preemption can help. */
static const char *fit_message(gs_arena *a, const gs_gpu_request *r, gs_gpu_fit f, bool *unresolvable)
{
    const char *res = r->resource ? r->resource : "nvidia.com/gpu";
    *unresolvable = f != GS_FIT_INSUFFICIENT;
    switch (f) {
    case GS_FIT_MODEL: return "node(s) had no GPU of the requested model";
    case GS_FIT_MIG_PROFILE: return gs_arena_printf(a, "node(s) had no MIG %s instance", r->mig_profile);
    case GS_FIT_INSUFFICIENT:
        if (r->kind == GS_GPU_MIG)
            return gs_arena_printf(a, "no MIG %s instance free", r->mig_profile);
        return gs_arena_printf(a, "Insufficient %s", res);
    case GS_FIT_NEVER:
    case GS_FIT_NO_GPU:
    default: return gs_arena_printf(a, "Insufficient %s", res);
    }
}

static const xnode *node_find(gs_ext_state *s, const char *name)
{
    int32_t id = smap_get(&s->node_by_name, name, strlen(name));
    if (id < 0 || !s->nodes.v[id].present)
        return NULL;
    return &s->nodes.v[id];
}

int gs_ext_state_filter(gs_ext_state *s, const gs_pod *pod, const char *const *names, uint32_t n,
                        gs_arena *arena, gs_ext_filter_result *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    out->cache_mode = true;
    gs_gpu_request r;
    if (decision_begin(s, pod, &r, err) != 0)
        return -1;
    const char **pass = gs_arena_alloc(arena, (n ? n : 1) * sizeof *pass);
    gs_ext_node_msg *failed = gs_arena_alloc(arena, (n ? n : 1) * sizeof *failed);
    gs_ext_node_msg *unres = gs_arena_alloc(arena, (n ? n : 1) * sizeof *unres);
    if (!pass || !failed || !unres)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    if (r.kind == GS_GPU_NONE) {
        for (uint32_t i = 0; i < n; i++)
            pass[i] = names[i];
        out->nodes = pass;
        out->nnodes = n;
        return 0;
    }
    /* one message per outcome, made once */
    const char *msg[8] = {0};
    bool unr[8] = {0};
    pthread_rwlock_rdlock(&s->lock);
    for (uint32_t i = 0; i < n; i++) {
        const xnode *x = node_find(s, names[i]);
        if (!x) {
            unres[out->nunresolvable++] = (gs_ext_node_msg){names[i], "node(s) not in the GPU extender's cache"};
            continue;
        }
        if (!x->has_inv) {
            unres[out->nunresolvable++] = (gs_ext_node_msg){names[i], x->inv_error ? gs_arena_strdup(arena, x->inv_error) : "node(s) had no usable GPU inventory"};
            continue;
        }
        gs_gpu_fit f = gs_gpu_fit_node(&x->cur, &r, NULL);
        if (f == GS_FIT_OK) {
            pass[out->nnodes++] = names[i];
            continue;
        }
        unsigned fi = (unsigned)f & 7u;
        if (!msg[fi])
            msg[fi] = fit_message(arena, &r, f, &unr[fi]);
        if (unr[fi])
            unres[out->nunresolvable++] = (gs_ext_node_msg){names[i], msg[fi]};
        else
            failed[out->nfailed++] = (gs_ext_node_msg){names[i], msg[fi]};
    }
    pthread_rwlock_unlock(&s->lock);
    out->nodes = pass;
    out->failed = failed;
    out->unresolvable = unres;
    return 0;
}

/* ---------------------------------------------------------------- prioritize */
#define NO_MIG 0xffffu                 /* gs_gpu_assign.mig of a non-MIG entry */
#define FGD_CPU_LEFT (INT64_C(1) << 50) /* the state tracks no CPU: never short */
#define FGD_THRESHOLD_PCT 95.0         /* GetTypicalPods as in the experiments */

static int64_t clamp_priority(int64_t sc)
{
    return sc < GS_EXT_MIN_PRIORITY ? GS_EXT_MIN_PRIORITY : sc > GS_EXT_MAX_PRIORITY ? GS_EXT_MAX_PRIORITY : sc;
}

/* A device's left milli as the fragmentation measure sees it (extender.h, prioritize). */
static uint16_t fgd_dev_left(const gs_node_gpus *g, const gs_gpu_dev *d)
{
    if (d->flags & (GS_DEV_UNHEALTHY | GS_DEV_MIG_ENABLED))
        return 0;
    if (d->slots >= 1 && d->slots_used >= d->slots)
        return 0;
    if (g->sharing == GS_SHARING_VGPU && d->npods >= d->slots)
        return 0;
    int32_t left = d->milli_used >= 1000 ? 0 : 1000 - (int32_t)d->milli_used;
    if ((g->sharing == GS_SHARING_TIME_SLICING || g->sharing == GS_SHARING_MPS) && d->slots > 1) {
        int32_t by_slots = (int32_t)(1000u * (uint32_t)(d->slots - d->slots_used) / d->slots);
        if (by_slots < left)
            left = by_slots;
    }
    return (uint16_t)left;
}

/* Placements FGD measures: no MIG instance, at most GS_SIM_MAX_GPUS devices. */
static bool fgd_applies(const gs_node_gpus *g, const gs_gpu_assign *a)
{
    if (g->ndevs > GS_SIM_MAX_GPUS || a->n == 0)
        return false;
    for (uint32_t i = 0; i < a->n; i++)
        if (a->mig[i] != NO_MIG || a->dev[i] >= g->ndevs)
            return false;
    return true;
}

/* The node before and after placing a (left per device). */
static void fgd_views(const gs_node_gpus *g, const gs_gpu_assign *a, gs_frag_node *before, gs_frag_node *after)
{
    memset(before, 0, sizeof *before);
    before->cpu_left = FGD_CPU_LEFT;
    before->model = "";
    before->ngpus = g->ndevs;
    for (uint32_t i = 0; i < g->ndevs; i++)
        before->gpu_left[i] = fgd_dev_left(g, &g->devs[i]);
    *after = *before;
    for (uint32_t i = 0; i < a->n; i++) {
        gs_gpu_dev d = g->devs[a->dev[i]];
        for (uint32_t j = 0; j < i; j++) /* a device named twice: both entries apply */
            if (a->dev[j] == a->dev[i]) {
                d.milli_used = (uint16_t)(d.milli_used + a->milli[j]);
                d.slots_used = (uint16_t)(d.slots_used + a->slots[j]);
                d.npods++;
            }
        d.milli_used = (uint16_t)(d.milli_used + a->milli[i]);
        d.slots_used = (uint16_t)(d.slots_used + a->slots[i]);
        d.npods++;
        after->gpu_left[a->dev[i]] = fgd_dev_left(g, &d);
    }
}

/* One pod's key in the target workload; false for a placement FGD does not measure. */
static bool fgd_podres(const gs_gpu_assign *a, gs_frag_podres *out)
{
    if (a->n == 0)
        return false;
    int32_t milli = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        if (a->mig[i] != NO_MIG)
            return false;
        int32_t m = a->milli[i] ? a->milli[i] : a->slots[i] ? 1000 : 0;
        if (m > milli)
            milli = m;
    }
    if (milli <= 0)
        return false;
    *out = (gs_frag_podres){100, milli > 1000 ? 1000 : milli, a->n, ""};
    return true;
}

/* Read lock held. The current target (a reference the caller drops with fgd_release),
 * rebuilt first when stale; NULL while no pod holds a measured placement. */
static int fgd_acquire(gs_ext_state *s, fgd_target **out, gs_error *err)
{
    *out = NULL;
    int64_t now = mono_ms(s);
    int64_t every = s->o.fgd_refresh_ms > 0 ? s->o.fgd_refresh_ms : GS_EXT_FGD_REFRESH_MS_DEFAULT;
    int rc = 0;
    pthread_mutex_lock(&s->fgdmu);
    uint32_t np = s->st.pods, nb = s->fgd_built_pods;
    uint32_t diff = np > nb ? np - nb : nb - np;
    bool stale = !s->fgd || now - s->fgd_built_ms >= every || (uint64_t)diff * 10 > nb;
    if (stale) {
        gs_frag_podres *pr = malloc((s->pods.n ? s->pods.n : 1) * sizeof *pr);
        fgd_target *t = calloc(1, sizeof *t);
        uint32_t k = 0;
        if (!pr || !t) {
            rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
        } else {
            for (size_t i = 0; i < s->pods.n; i++)
                if (s->pods.v[i].live && fgd_podres(&s->pods.v[i].assign, &pr[k]))
                    k++;
            rc = gs_frag_target_workload(pr, k, FGD_THRESHOLD_PCT, &t->t, err);
        }
        free(pr);
        if (rc == 0) {
            t->refs = 1;
            if (s->fgd && --s->fgd->refs == 0) {
                gs_frag_target_free(&s->fgd->t);
                free(s->fgd);
            }
            s->fgd = t;
            s->fgd_built_ms = now;
            s->fgd_built_pods = np;
            s->fgd_builds++;
            s->fgd_pods = k;
            s->fgd_types = t->t.ntypes;
        } else {
            free(t);
        }
    }
    if (rc == 0 && s->fgd && s->fgd->t.ntypes) {
        s->fgd->refs++;
        *out = s->fgd;
    }
    pthread_mutex_unlock(&s->fgdmu);
    return rc;
}

static void fgd_release(gs_ext_state *s, fgd_target *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&s->fgdmu);
    if (--t->refs == 0) {
        gs_frag_target_free(&t->t);
        free(t);
    }
    pthread_mutex_unlock(&s->fgdmu);
}

/* Per-call memo of FGD scores by node state: the measure ignores the order of the GPUs
 * (and the model: the target's types admit any), so the sorted left vectors before and
 * after placing are the key. Nodes in the same state are measured once. */
typedef struct fgd_memo_ent {
    uint64_t h; /* 0: empty */
    uint8_t ng;
    int8_t score;
    uint16_t b[GS_SIM_MAX_GPUS], a[GS_SIM_MAX_GPUS];
} fgd_memo_ent;

typedef struct fgd_memo {
    fgd_memo_ent *e;
    uint32_t cap, used;
} fgd_memo;

static void sort_u16(uint16_t *v, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) {
        uint16_t x = v[i];
        uint32_t j = i;
        while (j > 0 && v[j - 1] > x) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

/* The FGD priority of a placement (0..10). */
static int fgd_priority(const gs_node_gpus *g, const gs_gpu_assign *a, const gs_frag_prepared *t, fgd_memo *m)
{
    gs_frag_node before, after;
    fgd_views(g, a, &before, &after);
    uint16_t kb[GS_SIM_MAX_GPUS] = {0}, ka[GS_SIM_MAX_GPUS] = {0};
    uint32_t ng = before.ngpus;
    memcpy(kb, before.gpu_left, ng * sizeof *kb);
    memcpy(ka, after.gpu_left, ng * sizeof *ka);
    sort_u16(kb, ng);
    sort_u16(ka, ng);
    uint64_t h = ng, w[2 * sizeof kb / 8];
    memcpy(w, kb, sizeof kb);
    memcpy(w + sizeof kb / 8, ka, sizeof ka);
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        h = (h ^ w[i]) * UINT64_C(0x9E3779B97F4A7C15);
        h ^= h >> 29;
    }
    h |= 1;
    fgd_memo_ent *slot = NULL;
    if (m->cap) {
        for (uint32_t i = (uint32_t)h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
            fgd_memo_ent *x = &m->e[i];
            if (!x->h) {
                slot = x;
                break;
            }
            if (x->h == h && x->ng == ng && memcmp(x->b, kb, sizeof kb) == 0 && memcmp(x->a, ka, sizeof ka) == 0)
                return x->score;
        }
    }
    double fb = gs_frag_prepared_amount(t, &before), fa = gs_frag_prepared_amount(t, &after);
    int score = (int)clamp_priority((gs_fgd_score(fb, fa) + 5) / 10);
    if (slot && (m->used + 1) * 10 <= m->cap * 7) {
        *slot = (fgd_memo_ent){.h = h, .ng = (uint8_t)ng, .score = (int8_t)score};
        memcpy(slot->b, kb, sizeof kb);
        memcpy(slot->a, ka, sizeof ka);
        m->used++;
    }
    return score;
}

int gs_ext_state_prioritize(gs_ext_state *s, const gs_pod *pod, const char *const *names, uint32_t n,
                            gs_arena *arena, gs_ext_host_priority **out, gs_error *err)
{
    *out = NULL;
    gs_gpu_request r;
    if (decision_begin(s, pod, &r, err) != 0)
        return -1;
    gs_ext_host_priority *v = gs_arena_alloc(arena, (n ? n : 1) * sizeof *v);
    if (!v)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    bool fgd = s->o.score == GS_EXT_SCORE_FGD && r.kind != GS_GPU_NONE && r.kind != GS_GPU_MIG;
    fgd_memo memo = {0};
    if (fgd) {
        uint32_t cap = 64;
        while (cap < 4096 && cap < 2 * n)
            cap *= 2;
        memo.e = gs_arena_alloc(arena, cap * sizeof *memo.e);
        if (!memo.e)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        memset(memo.e, 0, cap * sizeof *memo.e);
        memo.cap = cap;
    }
    fgd_target *tg = NULL;
    gs_frag_target dflt; /* the default target, made at the first node where the pod fits */
    bool have_dflt = false;
    gs_frag_prepared *prep = NULL; /* the target in use, prepared once for this call */
    int rc = 0;
    pthread_rwlock_rdlock(&s->lock);
    if (fgd)
        rc = fgd_acquire(s, &tg, err);
    if (rc == 0 && tg && !(prep = gs_frag_prepare(&tg->t, "", err)))
        rc = -1;
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        v[i].host = names[i];
        v[i].score = 0;
        if (r.kind == GS_GPU_NONE)
            continue;
        const xnode *x = node_find(s, names[i]);
        gs_gpu_assign a;
        if (!x || !x->has_inv || gs_gpu_fit_node(&x->cur, &r, &a) != GS_FIT_OK)
            continue;
        if (fgd && fgd_applies(&x->cur, &a)) {
            if (!prep) {
                gs_frag_podres self;
                if (!fgd_podres(&a, &self)) /* not reached: fgd_applies holds */
                    self = (gs_frag_podres){100, 1000, a.n, ""};
                if ((rc = gs_frag_target_workload(&self, 1, FGD_THRESHOLD_PCT, &dflt, err)) != 0)
                    break;
                have_dflt = true;
                if (!(prep = gs_frag_prepare(&dflt, "", err))) {
                    rc = -1;
                    break;
                }
            }
            v[i].score = fgd_priority(&x->cur, &a, prep, &memo);
            continue;
        }
        v[i].score = clamp_priority((gs_gpu_binpack_score(&x->cur, &r, &a) + 5) / 10);
    }
    pthread_rwlock_unlock(&s->lock);
    gs_frag_prepared_free(prep);
    fgd_release(s, tg);
    if (have_dflt)
        gs_frag_target_free(&dflt);
    if (rc != 0)
        return -1;
    *out = v;
    return 0;
}

static int64_t wall_now(gs_ext_state *s)
{
    return s->o.wall_s ? s->o.wall_s(s->o.clock_ctx) : (int64_t)time(NULL);
}

int gs_ext_state_reserve(gs_ext_state *s, const gs_pod *pod, const char *node, gs_strbuf *record,
                         gs_error *err)
{
    gs_strbuf_reset(record);
    gs_gpu_request r;
    if (decision_begin(s, pod, &r, err) != 0)
        return -1;
    const char *uid = pod->meta.uid;
    if (!uid[0] || strlen(uid) >= sizeof s->resv.v[0].uid)
        return gs_fail(err, GS_ERR_INVALID, "Pod %s/%s: metadata.uid is not a pod UID",
                       pod->meta.namespace_, pod->meta.name);
    if (r.kind == GS_GPU_NONE)
        return gs_fail(err, GS_ERR_INVALID, "Pod %s/%s asks for no GPU device", pod->meta.namespace_,
                       pod->meta.name);
    gs_assign_record *rec = malloc(sizeof *rec);
    if (!rec)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    int rc = -1;
    pthread_rwlock_wrlock(&s->lock);
    expire_locked(s, mono_ms(s));
    int32_t rid = smap_get(&s->resv_by_uid, uid, strlen(uid));
    if (rid >= 0) {
        const xresv *x = &s->resv.v[rid];
        if (strcmp(s->nodes.v[x->node].name, node) != 0) {
            gs_fail(err, GS_ERR_INVALID, "pod %s/%s is already reserved on node %s", pod->meta.namespace_,
                    pod->meta.name, s->nodes.v[x->node].name);
            goto out;
        }
        gs_strbuf_add(record, x->record, strlen(x->record));
        rc = 1;
        goto out;
    }
    int32_t pid = smap_get(&s->pod_by_uid, uid, strlen(uid));
    if (pid >= 0) {
        const xpod *p = &s->pods.v[pid];
        if (strcmp(s->nodes.v[p->node].name, node) != 0 || p->hold != HOLD_RECORD) {
            gs_fail(err, GS_ERR_INVALID, "pod %s/%s is already bound to node %s%s", pod->meta.namespace_,
                    pod->meta.name, s->nodes.v[p->node].name, p->hold == HOLD_RECORD ? "" : " without a record");
            goto out;
        }
        gs_strbuf_add(record, p->rec_json, strlen(p->rec_json));
        rc = 1;
        goto out;
    }
    int32_t nid = smap_get(&s->node_by_name, node, strlen(node));
    if (nid < 0 || !s->nodes.v[nid].present) {
        gs_fail(err, GS_ERR_NOTFOUND, "node %s is not in the GPU extender's cache", node);
        goto out;
    }
    xnode *x = &s->nodes.v[nid];
    if (!x->has_inv) {
        gs_fail(err, GS_ERR_INVALID, "node %s: %s", node, x->inv_error ? x->inv_error : "no GPU inventory");
        goto out;
    }
    gs_gpu_assign a;
    gs_gpu_fit f = gs_gpu_fit_node(&x->cur, &r, &a);
    if (f != GS_FIT_OK) {
        gs_arena ar;
        gs_arena_init(&ar, 1024);
        bool unr;
        gs_fail(err, GS_ERR_INVALID, "node %s: %s", node, fit_message(&ar, &r, f, &unr));
        gs_arena_free(&ar);
        goto out;
    }
    if (gs_assign_from_pod(pod, &x->cur, &r, &a, node, wall_now(s), rec, err) != 0 ||
        gs_assign_encode(rec, record, err) != 0) {
        prefix_pod(err, pod);
        goto out;
    }
    if (record->oom) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto out;
    }
    xresv nr;
    memset(&nr, 0, sizeof nr);
    nr.live = true;
    snprintf(nr.uid, sizeof nr.uid, "%s", uid);
    nr.node = nid;
    nr.assign = a;
    nr.record = strdup(gs_strbuf_cstr(record));
    nr.expires = INT64_MAX;
    size_t kl = strlen(pod->meta.namespace_) + strlen(pod->meta.name) + 2;
    nr.key = malloc(kl);
    if (!nr.record || !nr.key) {
        free(nr.record);
        free(nr.key);
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto out;
    }
    snprintf(nr.key, kl, "%s/%s", pod->meta.namespace_, pod->meta.name);
    if (s->free_resv.n)
        rid = s->free_resv.v[--s->free_resv.n];
    else if (gs_vec_push(s->resv, nr) == 0)
        rid = (int32_t)(s->resv.n - 1);
    if (rid < 0 || gs_vec_push(x->resv, rid) < 0) {
        free(nr.record);
        free(nr.key);
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto out;
    }
    s->resv.v[rid] = nr;
    smap_put(&s->resv_by_uid, s->resv.v[rid].uid, rid);
    gs_gpu_bind(&x->cur, &a);
    s->st.reservations++;
    s->st.reserved++;
    rc = 0;
out:
    pthread_rwlock_unlock(&s->lock);
    free(rec);
    if (rc < 0)
        gs_strbuf_reset(record);
    return rc;
}

int gs_ext_state_bind_done(gs_ext_state *s, const char *uid)
{
    pthread_rwlock_wrlock(&s->lock);
    int32_t rid = smap_get(&s->resv_by_uid, uid, strlen(uid));
    if (rid >= 0) {
        s->resv.v[rid].expires = mono_ms(s) + s->ttl;
        if (s->resv.v[rid].expires < atomic_load(&s->next_expiry))
            atomic_store(&s->next_expiry, s->resv.v[rid].expires);
    }
    pthread_rwlock_unlock(&s->lock);
    return rid >= 0 ? 0 : 1;
}

int gs_ext_state_forget(gs_ext_state *s, const char *uid)
{
    pthread_rwlock_wrlock(&s->lock);
    int32_t rid = smap_get(&s->resv_by_uid, uid, strlen(uid));
    if (rid >= 0) {
        resv_drop(s, rid, true);
        s->st.forgotten++;
        update_next_expiry(s);
    }
    pthread_rwlock_unlock(&s->lock);
    return rid >= 0 ? 0 : 1;
}

/* ---------------------------------------------------------------- preempt */
typedef struct vict {
    int32_t idx;   /* in the node's victim list; -1: added here */
    const xpod *p; /* NULL: holds nothing here */
} vict;

/* Most important first: higher priority, then earlier start, then key. */
static int cmp_important(const void *a, const void *b)
{
    const vict *x = a, *y = b;
    if (x->p->priority != y->p->priority)
        return x->p->priority > y->p->priority ? -1 : 1;
    int c = gs_gpu_bound_cmp(x->p->start, 0, y->p->start, 0);
    return c ? c : strcmp(x->p->key, y->p->key);
}

static int cmp_least_important(const void *a, const void *b)
{
    return cmp_important(b, a);
}

int gs_ext_state_preempt(gs_ext_state *s, const gs_pod *pod, const gs_ext_victims *in, uint32_t n,
                         gs_arena *arena, gs_ext_victims **out, uint32_t *nout, gs_error *err)
{
    *out = NULL;
    *nout = 0;
    gs_gpu_request r;
    if (decision_begin(s, pod, &r, err) != 0)
        return -1;
    int32_t prio = pod->has_priority ? pod->priority : 0;
    gs_ext_victims *res = gs_arena_alloc(arena, (n ? n : 1) * sizeof *res);
    if (!res)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    int rc = 0;
    pthread_rwlock_rdlock(&s->lock);
    for (uint32_t k = 0; k < n; k++) {
        const gs_ext_victims *v = &in[k];
        if (r.kind == GS_GPU_NONE) { /* nothing of ours to judge */
            res[(*nout)++] = *v;
            continue;
        }
        const xnode *x = node_find(s, v->node);
        if (!x || !x->has_inv || !v->npods)
            continue;
        /* room for the sent victims and every pod of the node */
        uint32_t cap = v->npods + (uint32_t)x->pods.n;
        vict *vs = gs_arena_alloc(arena, cap * sizeof *vs);
        bool *keep = gs_arena_alloc(arena, v->npods * sizeof *keep);
        gs_node_gpus g;
        if (!vs || !keep || gs_node_gpus_copy(&g, &x->cur) != 0) {
            rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
            break;
        }
        uint32_t ngpu = 0;
        for (uint32_t i = 0; i < v->npods; i++) {
            int32_t pid = smap_get(&s->pod_by_uid, v->pods[i].uid, strlen(v->pods[i].uid));
            const xpod *p = pid >= 0 ? &s->pods.v[pid] : NULL;
            if (p && (&s->nodes.v[p->node] != x || !p->assign.n))
                p = NULL;
            keep[i] = p == NULL; /* victims holding nothing here stay as sent */
            if (p) {
                vs[ngpu++] = (vict){(int32_t)i, p};
                gs_gpu_unbind(&g, &p->assign);
            }
        }
        uint32_t nsent = ngpu;
        bool fits = gs_gpu_fit_node(&g, &r, NULL) == GS_FIT_OK;
        if (!fits) {
            /* kube-scheduler's dry run counts node totals, not devices: add the node's
             * other lower-priority GPU pods, least important first, until the devices
             * free up (the reprieve below then keeps only what is needed) */
            uint32_t first = ngpu;
            for (size_t i = 0; i < x->pods.n; i++) {
                const xpod *p = &s->pods.v[x->pods.v[i]];
                if (!p->live || !p->assign.n || p->priority >= prio)
                    continue;
                bool sent = false;
                for (uint32_t j = 0; j < nsent && !sent; j++)
                    sent = vs[j].p == p;
                if (!sent)
                    vs[ngpu++] = (vict){-1, p};
            }
            qsort(vs + first, ngpu - first, sizeof *vs, cmp_least_important);
            uint32_t used = first;
            for (uint32_t i = first; i < ngpu && !fits; i++) {
                gs_gpu_unbind(&g, &vs[i].p->assign);
                used = i + 1;
                fits = gs_gpu_fit_node(&g, &r, NULL) == GS_FIT_OK;
            }
            ngpu = used;
        }
        if (ngpu == 0 || !fits) {
            gs_node_gpus_free(&g);
            continue; /* our devices do not free up here: drop the node */
        }
        /* reprieve: put back the most important first while the pod still fits */
        qsort(vs, ngpu, sizeof *vs, cmp_important);
        uint32_t nadd = 0;
        for (uint32_t i = 0; i < ngpu; i++) {
            gs_gpu_bind(&g, &vs[i].p->assign);
            if (gs_gpu_fit_node(&g, &r, NULL) != GS_FIT_OK) {
                gs_gpu_unbind(&g, &vs[i].p->assign);
                if (vs[i].idx >= 0)
                    keep[vs[i].idx] = true;
                else
                    nadd++;
            } else if (vs[i].idx < 0) {
                vs[i].p = NULL; /* an added pod put back: not a victim */
            }
        }
        gs_node_gpus_free(&g);
        uint32_t nk = nadd;
        for (uint32_t i = 0; i < v->npods; i++)
            nk += keep[i];
        if (!nk)
            continue; /* fits without evicting anything of ours: nothing to say */
        gs_ext_victim *pods = gs_arena_alloc(arena, nk * sizeof *pods);
        if (!pods) {
            rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
            break;
        }
        uint32_t j = 0;
        for (uint32_t i = 0; i < v->npods; i++)
            if (keep[i])
                pods[j++] = v->pods[i];
        for (uint32_t i = 0; i < ngpu; i++) {
            if (vs[i].idx >= 0 || !vs[i].p)
                continue;
            const char *uid = gs_arena_strdup(arena, vs[i].p->uid);
            if (!uid) {
                rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
                break;
            }
            pods[j++] = (gs_ext_victim){uid, "", ""};
        }
        if (rc)
            break;
        /* NumPDBViolations: kube-scheduler's count, capped at the victims it sent that
         * are kept (the state holds no PDBs: added victims count none) */
        int64_t nsent_kept = nk - nadd;
        res[*nout] = (gs_ext_victims){v->node, pods, nk,
                                      v->num_pdb_violations < nsent_kept ? v->num_pdb_violations : nsent_kept};
        (*nout)++;
    }
    pthread_rwlock_unlock(&s->lock);
    if (rc)
        *nout = 0;
    else
        *out = res;
    return rc;
}

/* ================================================================ inspection */
int gs_ext_state_node_gpus(gs_ext_state *s, const char *node, gs_node_gpus *out)
{
    memset(out, 0, sizeof *out);
    pthread_rwlock_rdlock(&s->lock);
    const xnode *x = node_find(s, node);
    int rc = x && x->has_inv ? (gs_node_gpus_copy(out, &x->cur) ? -1 : 0) : 1;
    pthread_rwlock_unlock(&s->lock);
    return rc;
}

void gs_ext_state_stats_get(gs_ext_state *s, gs_ext_state_stats *out)
{
    pthread_rwlock_rdlock(&s->lock);
    pthread_mutex_lock(&s->stmu);
    *out = s->st;
    pthread_mutex_unlock(&s->stmu);
    pthread_mutex_lock(&s->fgdmu);
    out->fgd_builds = s->fgd_builds;
    out->fgd_pods = s->fgd_pods;
    out->fgd_types = s->fgd_types;
    pthread_mutex_unlock(&s->fgdmu);
    size_t b = sizeof *s + s->nodes.cap * sizeof(xnode) + s->pods.cap * sizeof(xpod) +
               s->resv.cap * sizeof(xresv) +
               (s->node_by_name.cap + s->pod_by_key.cap + s->pod_by_uid.cap + s->resv_by_uid.cap) * sizeof(smap_ent);
    for (size_t i = 0; i < s->nodes.n; i++) {
        const xnode *x = &s->nodes.v[i];
        b += strlen(x->name) + 1 + (x->pods.cap + x->resv.cap) * sizeof(int32_t);
        if (x->has_inv)
            b += 2 * (x->base.ndevs * sizeof(gs_gpu_dev) + x->base.nmig * sizeof(gs_mig_inst) + x->base.strs_len);
    }
    for (size_t i = 0; i < s->pods.n; i++) {
        const xpod *p = &s->pods.v[i];
        if (!p->live)
            continue;
        b += strlen(p->key) + 1 + (p->rec_json ? strlen(p->rec_json) + 1 : 0) + p->text_len;
    }
    for (size_t i = 0; i < s->resv.n; i++)
        if (s->resv.v[i].live)
            b += strlen(s->resv.v[i].record) + 1;
    out->bytes = b;
    pthread_rwlock_unlock(&s->lock);
}
