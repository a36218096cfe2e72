/*
 * dra_int.h - internals shared by lib/dra: a string map and the key joiner.
 */
#ifndef GPUSCHED_DRA_INT_H
#define GPUSCHED_DRA_INT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#endif
