/*
 * dra_int.h - internals shared by lib/dra: a string map and the key joiner.
 */
#ifndef GPUSCHED_DRA_INT_H
#define GPUSCHED_DRA_INT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/cel.h"
#include "gpusched/dra.h"
#include "gpusched/util.h"

#define NONE UINT32_MAX

/* ---------------------------------------------------------------- small hash map */
/* String keys (copied into the map's own block) to uint32 values; open addressing. */
typedef struct smap {
    gs_intern keys;      /* key -> dense id */
    uint32_t *val;       /* id -> value */
    uint32_t cap;
} smap;

static inline void smap_init(smap *m) { memset(m, 0, sizeof *m); gs_intern_init(&m->keys); }
static inline void smap_free(smap *m) { gs_intern_free(&m->keys); free(m->val); }
static inline int smap_put(smap *m, const char *k, size_t n, uint32_t v)
{
    int32_t id = gs_intern_id(&m->keys, k, n);
    if (id < 0)
        return -1;
    if ((uint32_t)id >= m->cap) {
        uint32_t nc = m->cap ? m->cap * 2 : 64;
        while (nc <= (uint32_t)id)
            nc *= 2;
        uint32_t *nv = realloc(m->val, nc * sizeof *nv);
        if (!nv)
            return -1;
        m->val = nv;
        m->cap = nc;
    }
    m->val[id] = v;
    return 0;
}
static inline uint32_t smap_get(const smap *m, const char *k, size_t n)
{
    int32_t id = gs_intern_find(&m->keys, k, n);
    return id < 0 ? NONE : m->val[id];
}

/* "a\x1fb\x1fc" keys */
static inline size_t key3(char *buf, size_t cap, const char *a, const char *b, const char *c)
{
    int n = snprintf(buf, cap, "%s\x1f%s\x1f%s", a, b, c ? c : "");
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

/* ---------------------------------------------------------------- state */
typedef struct dprog {
    gs_cel_program *prog;     /* NULL: compile error (msg) */
    char *msg;
    uint8_t *match;           /* per device: 0 unknown, 1 match, 2 no match, 3 runtime error */
} dprog;

typedef struct dclass {
    const gs_device_class *obj;
    uint32_t prog_first, nprog; /* into d->class_progs */
} dclass;

typedef struct dctr {
    const char *set, *name;
    gs_quantity value;        /* sharedCounters value */
    gs_quantity used;         /* consumed by allocated devices */
} dctr;

typedef struct dpool {
    const char *driver, *name;
    int64_t generation;
    uint32_t nslices_seen;    /* slices of that generation */
    int64_t slice_count;
    bool incomplete, invalid;
    char *invalid_reason;
    uint32_t ctr_first, nctr; /* into d->ctr */
} dpool;

typedef struct ddev {
    const gs_resource_slice *slice;
    const gs_dra_device *dev;
    uint32_t pool;
    uint32_t used;            /* allocations holding it (not admin access) */
    uint32_t cons_first;      /* into d->cons (counter index, amount) */
    uint32_t ncons;
    gs_quantity *cap_used;    /* allow_multiple: consumed per capacity (ncaps), or NULL */
    uint32_t ncap_allocs;     /* allocations drawing on the capacity */
    int32_t gpu;              /* the inventory device it is or is part of, -1 none */
    uint16_t gpu_milli;
    uint32_t gpu_mem;
} ddev;

typedef struct dcons {
    uint32_t ctr;
    gs_quantity amount;
} dcons;

/* A flattened request of a claim: an exact request, or one subrequest of firstAvailable. */
typedef struct dreq {
    const gs_dra_exact *ex;
    const char *full;         /* "req" or "req/sub" (arena) */
    const char *claim_id;     /* the claim's "namespace/name" (arena) */
    const char *base;         /* the request's name */
    const char *sub;          /* the subrequest's name, or NULL */
    uint32_t request;         /* index in the claim's requests */
    uint32_t nalts;           /* subrequests of the parent (0 for exact) */
    uint32_t alt;             /* this subrequest's index */
    int32_t cls;              /* class index, -1 unknown */
    uint32_t prog_first, nprog; /* request selectors, into d->req_progs */
} dreq;

typedef struct dclaim {
    const char *ns, *name;
    const gs_resource_claim *obj; /* the claim, or the template it was made from */
    bool generated, deleting, allocated, ours;
    /* allocation */
    uint32_t res_first, nres; /* into d->res */
    int32_t node_only;        /* allocated by us on a node-local device: that node; else -1 */
    const gs_node_selector *sel;   /* input allocation.nodeSelector (or NULL) */
    uint32_t selp_first, nselp;    /* ours: single-term slice selectors, into d->selp */
    /* reservations */
    uint32_t nreserved;       /* input reservedFor entries still held + ours */
    GS_VEC(uint32_t) pods;    /* our reservations (engine pod ids) */
    uint8_t *in_released;     /* input reservedFor entries released (nreserved_in) */
    uint32_t nreserved_in;
    /* flattened requests (lazily) */
    dreq *reqs;
    uint32_t nreqs;
    bool reqs_done;
} dclaim;

typedef struct dres {
    uint32_t dev;             /* device table index, NONE when the device is unknown */
    const char *request, *driver, *pool, *device;
    bool admin;
    gs_quantity *consumed;    /* per device capacity (allow_multiple), or NULL */
} dres;

typedef struct dnode {
    uint32_t *devs;           /* candidate devices in walk order */
    uint32_t ndevs;
    int32_t bad_pool;         /* an incomplete or invalid pool relevant to the node, or -1 */
    bool invalid_pool;        /* one of them is invalid */
} dnode;

struct gs_dra {
    const gs_snapshot *snap;
    gs_dra_features f;
    gs_arena arena;
    const gs_node *const *nodes;
    uint32_t nnodes;
    smap node_by_name;
    /* classes and CEL */
    dclass *classes;
    uint32_t nclasses;
    smap class_by_name;
    GS_VEC(dprog) progs;
    smap prog_by_expr;
    GS_VEC(uint32_t) class_progs;
    GS_VEC(uint32_t) req_progs;
    /* pools, devices */
    GS_VEC(dpool) pools;
    GS_VEC(ddev) devs;
    GS_VEC(dctr) ctr;
    GS_VEC(dcons) cons;
    smap dev_by_id;           /* driver\x1fpool\x1fdevice -> device */
    dnode *nodemap;
    /* claims */
    GS_VEC(dclaim) claims;
    smap claim_by_name;       /* ns\x1fname -> claim */
    smap tmpl_by_name;        /* ns\x1fname -> snapshot template index */
    smap gen_by_pod;          /* pod id\x1fpodclaim -> generated claim */
    smap ext_by_pod;          /* pod id\x1fmask -> extended-resource claim */
    smap ext_class;           /* extended resource name -> class index */
    GS_VEC(dres) res;
    GS_VEC(const gs_node_selector *) selp;
    /* search scratch */
    uint32_t *s_mask;         /* per node device (local index): claims allocating it (bits) */
    uint32_t s_cap;
    GS_VEC(uint32_t) s_ctr_alloc_idx;
    gs_quantity *s_ctr_alloc; /* per counter: consumed by devices being allocated */
    uint32_t s_nctr;
    void *scratch;            /* alloc.c's search state, kept between filter calls */
    bool active;
};

/* alloc.c, shared with explain.c */
int gs__dra_flatten(gs_dra *d, dclaim *c);
/* 1 the device is selectable for the request (class and request selectors), 0 not,
 * -1 a CEL error (msg) */
int gs__dra_selectable(gs_dra *d, const dreq *r, uint32_t dev, char *msg, size_t cap);

#endif
