/*
 * store.c - the object store under the one-shot cluster read and the informers: per kind,
 * the objects' pruned JSON texts in one append-only byte log, indexed by "namespace/name"
 * through an open-addressing hash table (linear probing, backward-shift deletion: no
 * tombstones). A replaced or deleted object leaves garbage in the log; the log is
 * compacted (live texts copied to a new buffer in one pass) when garbage exceeds the live
 * bytes. No allocation per object: entries live in one array with a free list.
 *
 * Pruning keeps what a reader may read and drops the rest in one copy: members whose key
 * is one gs_read_key_unread names (at any depth: the tree builder skips the same keys, so
 * the snapshot reader decodes exactly what it would decode from the full text) and the
 * annotation kubectl.kubernetes.io/last-applied-configuration (a second copy of the
 * object). The copy checks the JSON grammar (strings, numbers, literals, separators) and
 * refuses anything else: the store never holds text the reader would not parse.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpusched/live.h"
#include "live/live_int.h"
#include "util/jscan_int.h"

#define PRUNE_MAX_DEPTH 128
#define COMPACT_MIN_GARBAGE (1u << 20)

static const gs_live_kind_info kinds[GS_LIVE_NKINDS] = {
    [GS_LIVE_NODE] = {"Node", "v1", "nodes", false, false},
    [GS_LIVE_NAMESPACE] = {"Namespace", "v1", "namespaces", false, false},
    [GS_LIVE_PRIORITYCLASS] = {"PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", false, false},
    [GS_LIVE_RESOURCEQUOTA] = {"ResourceQuota", "v1", "resourcequotas", true, false},
    [GS_LIVE_PDB] = {"PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", true, false},
    [GS_LIVE_POD] = {"Pod", "v1", "pods", true, false},
    [GS_LIVE_DEVICECLASS] = {"DeviceClass", "resource.k8s.io/v1", "deviceclasses", false, true},
    [GS_LIVE_RESOURCECLAIM] = {"ResourceClaim", "resource.k8s.io/v1", "resourceclaims", true, true},
    [GS_LIVE_RESOURCECLAIMTEMPLATE] = {"ResourceClaimTemplate", "resource.k8s.io/v1", "resourceclaimtemplates",
                                       true, true},
    [GS_LIVE_RESOURCESLICE] = {"ResourceSlice", "resource.k8s.io/v1", "resourceslices", false, true},
    [GS_LIVE_EVENT] = {"Event", "events.k8s.io/v1", "events", true, false},
    [GS_LIVE_DAEMONSET] = {"DaemonSet", "apps/v1", "daemonsets", true, false},
    [GS_LIVE_DEPLOYMENT] = {"Deployment", "apps/v1", "deployments", true, false},
    [GS_LIVE_REPLICASET] = {"ReplicaSet", "apps/v1", "replicasets", true, false},
    [GS_LIVE_STATEFULSET] = {"StatefulSet", "apps/v1", "statefulsets", true, false},
    [GS_LIVE_JOB] = {"Job", "batch/v1", "jobs", true, false},
    [GS_LIVE_CRONJOB] = {"CronJob", "batch/v1", "cronjobs", true, false},
};

const gs_live_kind_info *gs_live_kind_get(gs_live_kind k)
{
    return (unsigned)k < GS_LIVE_NKINDS ? &kinds[k] : NULL;
}

int gs_live_kind_find(const char *name)
{
    if (!name)
        return -1;
    for (int k = 0; k < GS_LIVE_NKINDS; k++)
        if (!strcasecmp(name, kinds[k].resource) || !strcasecmp(name, kinds[k].kind))
            return k;
    return -1;
}

const char *gs_live_kind_path(gs_live_kind k, const char *ns, char *buf, size_t cap)
{
    const gs_live_kind_info *ki = gs_live_kind_get(k);
    if (!ki || !buf)
        return NULL;
    bool core = !strchr(ki->api_version, '/');
    int n;
    if (ki->namespaced && ns && *ns)
        n = snprintf(buf, cap, "/%s/%s/namespaces/%s/%s", core ? "api" : "apis", ki->api_version, ns,
                     ki->resource);
    else
        n = snprintf(buf, cap, "/%s/%s/%s", core ? "api" : "apis", ki->api_version, ki->resource);
    return n > 0 && (size_t)n < cap ? buf : NULL;
}

/* ---------------------------------------------------------------- pruning */

typedef struct prune {
    gs_strbuf *out;
    const char *end;
    const char *bad;          /* where the grammar broke */
    /* metadata of the top-level object, pointers into the input (string bodies) */
    const char *name, *ns;
    size_t name_len, ns_len;
    bool name_esc, ns_esc;
} prune;

static const char last_applied[] = "kubectl.kubernetes.io/last-applied-configuration";

/* p just after the opening quote: the closing quote, or NULL. */
static const char *str_close(prune *pr, const char *p, bool *esc)
{
    const char *bad = NULL;
    *esc = false; /* gs_js_str_end only ever sets it */
    const char *q = gs_js_str_end(p, pr->end, esc, &bad);
    if (!q) {
        pr->bad = bad ? bad : pr->end;
        return NULL;
    }
    if (*esc && gs_js_unescape(p, (size_t)(q - p), NULL, &bad) < 0) {
        pr->bad = bad;
        return NULL;
    }
    return q;
}

/* Where the value at p (after blanks) ends; copies it to out when copy. ctx: 0 plain,
 * 1 the top-level object, 2 its metadata, 3 metadata.annotations. */
static const char *value(prune *pr, const char *p, int depth, int ctx, bool copy);

/* After a member or an element, at p: past the ',' that announces another (p[-1] == ','),
 * or past the closing byte (copied when copy); NULL with pr->bad set on anything else. */
static const char *after_item(prune *pr, const char *p, char close, bool copy)
{
    p = gs_js_ws(p, pr->end);
    if (p < pr->end && *p == ',')
        return p + 1;
    if (p < pr->end && *p == close) {
        if (copy)
            gs_strbuf_putc(pr->out, close);
        return p + 1;
    }
    pr->bad = p;
    return NULL;
}

static const char *object(prune *pr, const char *p, int depth, int ctx, bool copy)
{
    /* p at '{' */
    if (copy)
        gs_strbuf_putc(pr->out, '{');
    p = gs_js_ws(p + 1, pr->end);
    bool first = true;
    if (p < pr->end && *p == '}') {
        if (copy)
            gs_strbuf_putc(pr->out, '}');
        return p + 1;
    }
    for (;;) {
        if (p >= pr->end || *p != '"') {
            pr->bad = p;
            return NULL;
        }
        const char *ks = p + 1;
        bool esc;
        const char *ke = str_close(pr, ks, &esc);
        if (!ke)
            return NULL;
        size_t kl = (size_t)(ke - ks);
        p = gs_js_ws(ke + 1, pr->end);
        if (p >= pr->end || *p != ':') {
            pr->bad = p;
            return NULL;
        }
        p = gs_js_ws(p + 1, pr->end);
        bool drop = !esc && (gs_read_key_unread(ks, kl) ||
                             (ctx == 3 && kl == sizeof last_applied - 1 && !memcmp(ks, last_applied, kl)));
        int sub = 0;
        if (!esc && ctx == 1 && kl == 8 && !memcmp(ks, "metadata", 8))
            sub = 2;
        else if (!esc && ctx == 2 && kl == 11 && !memcmp(ks, "annotations", 11))
            sub = 3;
        if (!esc && ctx == 2 && p < pr->end && *p == '"' &&
            ((kl == 4 && !memcmp(ks, "name", 4)) || (kl == 9 && !memcmp(ks, "namespace", 9)))) {
            bool vesc;
            const char *ve = str_close(pr, p + 1, &vesc);
            if (!ve)
                return NULL;
            if (kl == 4) {
                pr->name = p + 1;
                pr->name_len = (size_t)(ve - p - 1);
                pr->name_esc = vesc;
            } else {
                pr->ns = p + 1;
                pr->ns_len = (size_t)(ve - p - 1);
                pr->ns_esc = vesc;
            }
        }
        bool keep = copy && !drop;
        if (keep) {
            if (!first)
                gs_strbuf_putc(pr->out, ',');
            gs_strbuf_putc(pr->out, '"');
            gs_strbuf_add(pr->out, ks, kl);
            gs_strbuf_add(pr->out, "\":", 2);
            first = false;
        }
        p = value(pr, p, depth + 1, sub, keep);
        if (!p || !(p = after_item(pr, p, '}', copy)) || p[-1] != ',')
            return p;
        p = gs_js_ws(p, pr->end);
    }
}

static const char *array(prune *pr, const char *p, int depth, bool copy)
{
    if (copy)
        gs_strbuf_putc(pr->out, '[');
    p = gs_js_ws(p + 1, pr->end);
    if (p < pr->end && *p == ']') {
        if (copy)
            gs_strbuf_putc(pr->out, ']');
        return p + 1;
    }
    for (bool first = true;; first = false) {
        if (copy && !first)
            gs_strbuf_putc(pr->out, ',');
        p = value(pr, p, depth + 1, 0, copy);
        if (!p || !(p = after_item(pr, p, ']', copy)) || p[-1] != ',')
            return p;
        p = gs_js_ws(p, pr->end);
    }
}

static const char *value(prune *pr, const char *p, int depth, int ctx, bool copy)
{
    p = gs_js_ws(p, pr->end);
    if (p >= pr->end) {
        pr->bad = pr->end;
        return NULL;
    }
    if (depth > PRUNE_MAX_DEPTH) {
        pr->bad = p;
        return NULL;
    }
    const char *q;
    switch (*p) {
    case '{':
        return object(pr, p, depth, ctx, copy);
    case '[':
        return array(pr, p, depth, copy);
    case '"': {
        bool esc;
        q = str_close(pr, p + 1, &esc);
        if (!q)
            return NULL;
        q++;
        break;
    }
    default: {
        char kind;
        const char *bad = NULL;
        q = gs_js_literal(p, pr->end, &kind);
        if (!q)
            q = gs_js_number(p, pr->end, &bad);
        if (!q) {
            pr->bad = bad ? bad : p;
            return NULL;
        }
    }
    }
    if (copy)
        gs_strbuf_add(pr->out, p, (size_t)(q - p));
    return q;
}

/* Prune obj into out (appended; out NULL: check only, as for a delete, which needs the
 * key alone) and find its namespace and name (decoded into the caller's key buffer:
 * "ns/name" or "name"). -1 with err set on bad text. */
static int prune_object(const gs_live_kind_info *ki, const char *obj, size_t len, gs_strbuf *out,
                        gs_strbuf *key, gs_error *err)
{
    prune pr = {.out = out, .end = obj + len};
    bool copy = out != NULL;
    const char *p = gs_js_ws(obj, pr.end);
    if (p >= pr.end || *p != '{')
        return gs_fail(err, GS_ERR_PARSE, "%s: the object is not a JSON object", ki->kind);
    size_t start = copy ? out->len : 0;
    /* list items carry no kind and apiVersion: add them as kubectl does */
    const char *v;
    size_t vl;
    bool has_kind = !copy || gs_js_top_string(p, pr.end, "kind", &v, &vl);
    bool has_api = !copy || gs_js_top_string(p, pr.end, "apiVersion", &v, &vl);
    const char *e = object(&pr, p, 0, 1, copy);
    if (!e || gs_js_ws(e, pr.end) != pr.end) {
        if (copy)
            out->len = start;
        const char *at = e ? gs_js_ws(e, pr.end) : pr.bad;
        return gs_fail(err, GS_ERR_PARSE, "%s: malformed JSON at byte %zu of %zu", ki->kind,
                       (size_t)((at ? at : pr.end) - obj), len);
    }
    if (copy && out->oom)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    if ((!has_kind || !has_api) && out->len - start > 2) {
        /* insert after the '{' */
        gs_strbuf ins = GS_STRBUF_INIT;
        if (!has_api) {
            gs_strbuf_add(&ins, "\"apiVersion\":", 13);
            gs_strbuf_json_str(&ins, ki->api_version);
            gs_strbuf_putc(&ins, ',');
        }
        if (!has_kind) {
            gs_strbuf_add(&ins, "\"kind\":", 7);
            gs_strbuf_json_str(&ins, ki->kind);
            gs_strbuf_putc(&ins, ',');
        }
        size_t tail = out->len - start - 1;
        gs_strbuf_add(out, ins.buf, ins.len); /* grow */
        if (out->oom || ins.oom) {
            gs_strbuf_free(&ins);
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        }
        memmove(out->buf + start + 1 + ins.len, out->buf + start + 1, tail);
        memcpy(out->buf + start + 1, ins.buf, ins.len);
        gs_strbuf_free(&ins);
    }
    if (!pr.name || !pr.name_len)
        return gs_fail(err, GS_ERR_PARSE, "%s: the object has no metadata.name", ki->kind);
    gs_strbuf_reset(key);
    char tmp[512];
    const struct {
        const char *s;
        size_t n;
        bool esc;
    } parts[2] = {{pr.ns, pr.ns_len, pr.ns_esc}, {pr.name, pr.name_len, pr.name_esc}};
    for (int i = ki->namespaced ? 0 : 1; i < 2; i++) {
        if (i == 1 && ki->namespaced)
            gs_strbuf_putc(key, '/');
        if (!parts[i].s)
            continue;
        if (parts[i].n > sizeof tmp)
            return gs_fail(err, GS_ERR_PARSE, "%s: metadata.%s is too long", ki->kind, i ? "name" : "namespace");
        if (parts[i].esc) {
            const char *bad;
            long n = gs_js_unescape(parts[i].s, parts[i].n, tmp, &bad);
            if (n < 0)
                return gs_fail(err, GS_ERR_PARSE, "%s: bad escape in metadata", ki->kind);
            if (memchr(tmp, '\0', (size_t)n)) /* no Kubernetes name holds one; keys are C strings */
                return gs_fail(err, GS_ERR_PARSE, "%s: metadata.%s holds a NUL character", ki->kind,
                               i ? "name" : "namespace");
            gs_strbuf_add(key, tmp, (size_t)n);
        } else {
            gs_strbuf_add(key, parts[i].s, parts[i].n);
        }
    }
    if (key->oom)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    return 0;
}

/* ---------------------------------------------------------------- the per-kind table */

typedef struct entry {
    size_t off;        /* key then text in the log */
    uint32_t klen, len;
    uint32_t gen;      /* the replace generation that last put it */
    uint32_t hash;
    uint32_t next_free; /* free list (index + 1), when not live */
    bool live;
} entry;

typedef struct kstore {
    char *log;
    size_t log_len, log_cap, garbage;
    entry *ents;
    uint32_t nents, cap_ents, free_head; /* free_head: index + 1 */
    uint32_t *slots;   /* entry index + 1; 0 empty */
    uint32_t nslots;   /* power of two */
    uint32_t live;
    size_t live_bytes; /* texts only */
    uint32_t gen;
    bool replacing;
    size_t received;
    uint64_t changes;
    int refused;       /* an optional kind's last list: 404 or 403 (0: listed) */
} kstore;

struct gs_live_store {
    pthread_mutex_t mu;
    kstore k[GS_LIVE_NKINDS];
    uint64_t version;
    gs_strbuf scratch, key;
    gs_live_store_observer observer;
    void *observer_ctx;
};

static uint32_t hash_key(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return (uint32_t)(h ^ (h >> 32));
}

static bool key_eq(const kstore *ks, const entry *e, const char *k, size_t kl)
{
    return e->klen == kl && !memcmp(ks->log + e->off, k, kl);
}

/* The slot holding key k, or the empty slot where it would go. */
static uint32_t find_slot(const kstore *ks, const char *k, size_t kl, uint32_t h)
{
    uint32_t m = ks->nslots - 1, i = h & m;
    for (;;) {
        uint32_t s = ks->slots[i];
        if (!s)
            return i;
        const entry *e = &ks->ents[s - 1];
        if (e->hash == h && key_eq(ks, e, k, kl))
            return i;
        i = (i + 1) & m;
    }
}

static int grow_slots(kstore *ks)
{
    uint32_t n = ks->nslots ? ks->nslots * 2 : 64;
    uint32_t *ns = calloc(n, sizeof *ns);
    if (!ns)
        return -1;
    for (uint32_t i = 0; i < ks->nslots; i++) {
        uint32_t s = ks->slots[i];
        if (!s)
            continue;
        uint32_t j = ks->ents[s - 1].hash & (n - 1);
        while (ns[j])
            j = (j + 1) & (n - 1);
        ns[j] = s;
    }
    free(ks->slots);
    ks->slots = ns;
    ks->nslots = n;
    return 0;
}

/* Backward-shift deletion of slot i (linear probing without tombstones). */
static void remove_slot(kstore *ks, uint32_t i)
{
    uint32_t m = ks->nslots - 1;
    ks->slots[i] = 0;
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & m;
        uint32_t s = ks->slots[j];
        if (!s)
            return;
        uint32_t home = ks->ents[s - 1].hash & m;
        /* can s move to i? yes unless its home lies cyclically in (i, j] */
        bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!in_range) {
            ks->slots[i] = s;
            ks->slots[j] = 0;
            i = j;
        }
    }
}

static int log_reserve(kstore *ks, size_t n)
{
    if (ks->log_len + n <= ks->log_cap)
        return 0;
    size_t cap = ks->log_cap ? ks->log_cap : 65536;
    while (cap < ks->log_len + n)
        cap *= 2;
    char *l = realloc(ks->log, cap);
    if (!l)
        return -1;
    ks->log = l;
    ks->log_cap = cap;
    return 0;
}

/* Copy the live texts to a fresh buffer: garbage gone, order of entries kept. */
static int compact(kstore *ks)
{
    size_t need = 0;
    for (uint32_t i = 0; i < ks->nents; i++)
        if (ks->ents[i].live)
            need += ks->ents[i].klen + ks->ents[i].len;
    size_t cap = 65536;
    while (cap < need + need / 4)
        cap *= 2;
    char *nl = malloc(cap);
    if (!nl)
        return -1;
    size_t o = 0;
    for (uint32_t i = 0; i < ks->nents; i++) {
        entry *e = &ks->ents[i];
        if (!e->live)
            continue;
        size_t n = e->klen + e->len;
        memcpy(nl + o, ks->log + e->off, n);
        e->off = o;
        o += n;
    }
    free(ks->log);
    ks->log = nl;
    ks->log_len = o;
    ks->log_cap = cap;
    ks->garbage = 0;
    return 0;
}

static void kill_entry(kstore *ks, uint32_t idx)
{
    entry *e = &ks->ents[idx];
    ks->garbage += e->klen + e->len;
    ks->live_bytes -= e->len;
    ks->live--;
    e->live = false;
    e->next_free = ks->free_head;
    ks->free_head = idx + 1;
}

static void maybe_compact(kstore *ks)
{
    if (ks->garbage > COMPACT_MIN_GARBAGE && ks->garbage > ks->log_len - ks->garbage)
        (void)compact(ks); /* on failure the garbage stays until the next try */
}

/* After a full list the log holds what the cluster holds: give back the doubling's slack
 * beyond 1/8 (the updates to come grow it again by doubling). */
static void trim(kstore *ks)
{
    size_t want = ks->log_len + ks->log_len / 8 + 65536;
    if (ks->log_cap > want + want / 4) {
        char *l = realloc(ks->log, want);
        if (l) {
            ks->log = l;
            ks->log_cap = want;
        }
    }
}

static int put_text(gs_live_store *st, kstore *ks, const char *k, size_t kl, const char *t, size_t tl,
                    gs_error *err)
{
    if (kl > UINT32_MAX / 2 || tl > UINT32_MAX / 2)
        return gs_fail(err, GS_ERR_LIMIT, "object too large");
    if ((ks->live + 1) * 2 > ks->nslots && grow_slots(ks))
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    uint32_t h = hash_key(k, kl);
    uint32_t slot = find_slot(ks, k, kl, h);
    if (ks->slots[slot]) {
        entry *e = &ks->ents[ks->slots[slot] - 1];
        e->gen = ks->gen;
        if (e->len == tl && !memcmp(ks->log + e->off + e->klen, t, tl))
            return 0; /* nothing changed (a relist of the same object) */
        if (e->len >= tl) {
            /* fits in place: the tail becomes garbage */
            memcpy(ks->log + e->off + e->klen, t, tl);
            ks->garbage += e->len - tl;
            ks->live_bytes -= e->len - tl;
            e->len = (uint32_t)tl;
        } else {
            if (log_reserve(ks, kl + tl))
                return gs_fail(err, GS_ERR_NOMEM, "out of memory");
            ks->garbage += e->klen + e->len;
            ks->live_bytes += tl - e->len;
            e->off = ks->log_len;
            memcpy(ks->log + ks->log_len, k, kl);
            memcpy(ks->log + ks->log_len + kl, t, tl);
            ks->log_len += kl + tl;
            e->len = (uint32_t)tl;
        }
        ks->changes++;
        st->version++;
        maybe_compact(ks);
        return 0;
    }
    uint32_t idx;
    if (ks->free_head) {
        idx = ks->free_head - 1;
        ks->free_head = ks->ents[idx].next_free;
    } else {
        if (ks->nents == ks->cap_ents) {
            uint32_t nc = ks->cap_ents ? ks->cap_ents * 2 : 64;
            entry *ne = realloc(ks->ents, nc * sizeof *ne);
            if (!ne)
                return gs_fail(err, GS_ERR_NOMEM, "out of memory");
            ks->ents = ne;
            ks->cap_ents = nc;
        }
        idx = ks->nents++;
    }
    if (log_reserve(ks, kl + tl)) {
        ks->ents[idx].live = false;
        ks->ents[idx].next_free = ks->free_head;
        ks->free_head = idx + 1;
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    entry *e = &ks->ents[idx];
    *e = (entry){.off = ks->log_len, .klen = (uint32_t)kl, .len = (uint32_t)tl, .gen = ks->gen, .hash = h,
                 .live = true};
    memcpy(ks->log + ks->log_len, k, kl);
    memcpy(ks->log + ks->log_len + kl, t, tl);
    ks->log_len += kl + tl;
    ks->slots[slot] = idx + 1;
    ks->live++;
    ks->live_bytes += tl;
    ks->changes++;
    st->version++;
    return 0;
}

gs_live_store *gs_live_store_new(gs_error *err)
{
    gs_live_store *st = calloc(1, sizeof *st);
    if (!st) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&st->mu, NULL);
    st->scratch = (gs_strbuf)GS_STRBUF_INIT;
    st->key = (gs_strbuf)GS_STRBUF_INIT;
    return st;
}

void gs_live_store_free(gs_live_store *st)
{
    if (!st)
        return;
    for (int i = 0; i < GS_LIVE_NKINDS; i++) {
        free(st->k[i].log);
        free(st->k[i].ents);
        free(st->k[i].slots);
    }
    gs_strbuf_free(&st->scratch);
    gs_strbuf_free(&st->key);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

static kstore *kind_store(gs_live_store *st, gs_live_kind k, gs_error *err)
{
    if (!st || (unsigned)k >= GS_LIVE_NKINDS) {
        gs_fail(err, GS_ERR_USAGE, "no such kind");
        return NULL;
    }
    return &st->k[k];
}

static int put_locked(gs_live_store *st, gs_live_kind k, const char *obj, size_t len, gs_error *err)
{
    kstore *ks = &st->k[k];
    ks->received += len;
    gs_strbuf_reset(&st->scratch);
    if (prune_object(&kinds[k], obj, len, &st->scratch, &st->key, err))
        return -1;
    if (put_text(st, ks, st->key.buf, st->key.len, st->scratch.buf, st->scratch.len, err))
        return -1;
    if (st->observer)
        st->observer(st->observer_ctx, k, st->key.buf, st->key.len, obj, len, st->scratch.buf,
                     st->scratch.len);
    return 0;
}

int gs_live_store_put(gs_live_store *st, gs_live_kind k, const char *obj, size_t len, gs_error *err)
{
    if (!kind_store(st, k, err))
        return -1;
    pthread_mutex_lock(&st->mu);
    int rc = put_locked(st, k, obj, len, err);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int gs_live_store_delete(gs_live_store *st, gs_live_kind k, const char *obj, size_t len, gs_error *err)
{
    kstore *ks = kind_store(st, k, err);
    if (!ks)
        return -1;
    pthread_mutex_lock(&st->mu);
    int rc = prune_object(&kinds[k], obj, len, NULL, &st->key, err);
    if (!rc && ks->nslots) {
        uint32_t h = hash_key(st->key.buf, st->key.len);
        uint32_t slot = find_slot(ks, st->key.buf, st->key.len, h);
        if (ks->slots[slot]) {
            uint32_t idx = ks->slots[slot] - 1;
            remove_slot(ks, slot);
            kill_entry(ks, idx);
            ks->changes++;
            st->version++;
            if (st->observer)
                st->observer(st->observer_ctx, k, st->key.buf, st->key.len, NULL, 0, NULL, 0);
            maybe_compact(ks);
        }
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* The items of a List: calls put_locked for each element of the top-level "items". */
static int put_list_locked(gs_live_store *st, gs_live_kind k, const char *page, size_t len, gs_error *err)
{
    const char *end = page + len;
    const char *p = gs_js_ws(page, end);
    if (p >= end || *p != '{')
        return gs_fail(err, GS_ERR_PARSE, "%s list: not a JSON object", kinds[k].resource);
    p = gs_js_ws(p + 1, end);
    while (p < end && *p == '"') {
        bool esc = false;
        const char *bad;
        const char *ke = gs_js_str_end(p + 1, end, &esc, &bad);
        if (!ke)
            break;
        bool items = !esc && ke - p - 1 == 5 && !memcmp(p + 1, "items", 5);
        p = gs_js_ws(ke + 1, end);
        if (p >= end || *p != ':')
            break;
        p = gs_js_ws(p + 1, end);
        if (items && p < end && *p == 'n') /* "items": null (an empty list in some encoders) */
            return 0;
        if (items) {
            if (p >= end || *p != '[')
                break;
            p = gs_js_ws(p + 1, end);
            if (p < end && *p == ']')
                return 0;
            for (;;) {
                if (p >= end || *p != '{')
                    goto bad;
                bool deep;
                const char *q = gs_js_skip(p, end, 0, &bad, &deep);
                if (!q)
                    goto bad;
                if (put_locked(st, k, p, (size_t)(q - p), err))
                    return -1;
                p = gs_js_ws(q, end);
                if (p < end && *p == ',') {
                    p = gs_js_ws(p + 1, end);
                    continue;
                }
                if (p < end && *p == ']')
                    return 0;
                goto bad;
            }
        }
        /* pass over another member (checked, not copied) */
        prune skip = {.end = end};
        const char *q = value(&skip, p, 1, 0, false);
        if (!q)
            break;
        p = gs_js_ws(q, end);
        if (p < end && *p == ',')
            p = gs_js_ws(p + 1, end);
    }
bad:
    return gs_fail(err, GS_ERR_PARSE, "%s list: malformed page (no items array)", kinds[k].resource);
}

int gs_live_store_put_list(gs_live_store *st, gs_live_kind k, const char *page, size_t len, gs_error *err)
{
    if (!kind_store(st, k, err))
        return -1;
    pthread_mutex_lock(&st->mu);
    int rc = put_list_locked(st, k, page, len, err);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

void gs_live_store_replace_begin(gs_live_store *st, gs_live_kind k)
{
    if (!st || (unsigned)k >= GS_LIVE_NKINDS)
        return;
    pthread_mutex_lock(&st->mu);
    st->k[k].gen++;
    st->k[k].replacing = true;
    pthread_mutex_unlock(&st->mu);
}

void gs_live_store_replace_end(gs_live_store *st, gs_live_kind k)
{
    if (!st || (unsigned)k >= GS_LIVE_NKINDS)
        return;
    pthread_mutex_lock(&st->mu);
    kstore *ks = &st->k[k];
    if (ks->replacing) {
        ks->replacing = false;
        for (uint32_t i = 0; i < ks->nents; i++) {
            entry *e = &ks->ents[i];
            if (!e->live || e->gen == ks->gen)
                continue;
            uint32_t slot = find_slot(ks, ks->log + e->off, e->klen, e->hash);
            if (ks->slots[slot] == i + 1)
                remove_slot(ks, slot);
            if (st->observer) /* the text stays in the log until maybe_compact below */
                st->observer(st->observer_ctx, k, ks->log + e->off, e->klen, NULL, 0, NULL, 0);
            kill_entry(ks, i);
            ks->changes++;
            st->version++;
        }
        maybe_compact(ks);
        trim(ks);
    }
    pthread_mutex_unlock(&st->mu);
}

void gs_live_store_stats_get(gs_live_store *st, gs_live_kind k, gs_live_store_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!st || (unsigned)k >= GS_LIVE_NKINDS)
        return;
    pthread_mutex_lock(&st->mu);
    const kstore *ks = &st->k[k];
    out->objects = ks->live;
    out->bytes = ks->live_bytes;
    out->overhead = (ks->log_cap - ks->live_bytes) + (size_t)ks->cap_ents * sizeof(entry) +
                    (size_t)ks->nslots * sizeof(uint32_t);
    out->received = ks->received;
    out->changes = ks->changes;
    pthread_mutex_unlock(&st->mu);
}

void gs_live_store_observe(gs_live_store *st, gs_live_store_observer fn, void *ctx)
{
    if (!st)
        return;
    pthread_mutex_lock(&st->mu);
    st->observer = fn;
    st->observer_ctx = ctx;
    pthread_mutex_unlock(&st->mu);
}

uint64_t gs_live_store_version(gs_live_store *st)
{
    if (!st)
        return 0;
    pthread_mutex_lock(&st->mu);
    uint64_t v = st->version;
    pthread_mutex_unlock(&st->mu);
    return v;
}

/* Live entries of a kind sorted by key (bytewise, shorter first on a common prefix:
 * etcd's order of /registry/<resource>/<key>). */
static const kstore *sort_ks;
static int cmp_entry(const void *a, const void *b)
{
    const entry *x = &sort_ks->ents[*(const uint32_t *)a], *y = &sort_ks->ents[*(const uint32_t *)b];
    size_t n = x->klen < y->klen ? x->klen : y->klen;
    int c = memcmp(sort_ks->log + x->off, sort_ks->log + y->off, n);
    return c ? c : (x->klen > y->klen) - (x->klen < y->klen);
}

static pthread_mutex_t sort_mu = PTHREAD_MUTEX_INITIALIZER;

static uint32_t *sorted(const kstore *ks)
{
    uint32_t *ix = malloc(((size_t)ks->live + 1) * sizeof *ix);
    if (!ix)
        return NULL;
    uint32_t n = 0;
    for (uint32_t i = 0; i < ks->nents; i++)
        if (ks->ents[i].live)
            ix[n++] = i;
    pthread_mutex_lock(&sort_mu); /* qsort has no context argument in C17 */
    sort_ks = ks;
    qsort(ix, n, sizeof *ix, cmp_entry);
    sort_ks = NULL;
    pthread_mutex_unlock(&sort_mu);
    return ix;
}

int gs_live_store_each(gs_live_store *st, gs_live_kind k, gs_live_store_fn fn, void *ctx)
{
    if (!st || (unsigned)k >= GS_LIVE_NKINDS)
        return -1;
    pthread_mutex_lock(&st->mu);
    const kstore *ks = &st->k[k];
    uint32_t *ix = sorted(ks);
    int rc = ix ? 0 : -1;
    gs_strbuf key = GS_STRBUF_INIT;
    for (uint32_t i = 0; ix && i < ks->live && !rc; i++) {
        const entry *e = &ks->ents[ix[i]];
        gs_strbuf_reset(&key);
        gs_strbuf_add(&key, ks->log + e->off, e->klen);
        if (key.oom) {
            rc = -1;
            break;
        }
        rc = fn(ctx, key.buf, ks->log + e->off + e->klen, e->len);
    }
    gs_strbuf_free(&key);
    free(ix);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int gs_live_store_get(gs_live_store *st, gs_live_kind k, const char *key, gs_strbuf *out)
{
    gs_strbuf_reset(out);
    if (!st || (unsigned)k >= GS_LIVE_NKINDS || !key)
        return 1;
    pthread_mutex_lock(&st->mu);
    const kstore *ks = &st->k[k];
    int rc = 1;
    if (ks->nslots) {
        size_t kl = strlen(key);
        uint32_t slot = find_slot(ks, key, kl, hash_key(key, kl));
        if (ks->slots[slot]) {
            const entry *e = &ks->ents[ks->slots[slot] - 1];
            gs_strbuf_add(out, ks->log + e->off + e->klen, e->len);
            rc = out->oom ? -1 : 0;
        }
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* A snapshot reads the store as Lists of at most this much object text each: the copy
 * costs one chunk of memory, not a second store. */
#define SNAPSHOT_CHUNK (8u << 20)

static const char list_head[] = "{\"apiVersion\":\"v1\",\"items\":[";
static const char list_tail[] = "],\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"\"}}";

int gs_live_store_snapshot(gs_live_store *st, uint32_t kinds_mask, gs_snapshot *s, const char *name,
                           const gs_read_opts *ro, gs_error *err)
{
    if (!st || !s)
        return gs_fail(err, GS_ERR_USAGE, "no store or snapshot");
    if (!kinds_mask)
        kinds_mask = GS_LIVE_SNAPSHOT_KINDS;
    gs_read_opts o;
    if (ro)
        o = *ro;
    else
        memset(&o, 0, sizeof o);
    o.no_positions = true;
    o.max_file_bytes = 0;
    if (!name)
        name = "cluster";
    /* Lists of kubectl's form (`kubectl get <kinds> -A -o json`), each kind's objects in key
     * order, read chunk by chunk with the lock held: one consistent view */
    gs_strbuf doc = GS_STRBUF_INIT;
    int rc = 0;
    pthread_mutex_lock(&st->mu);
    for (int k = 0; k < GS_LIVE_NKINDS && !rc; k++) {
        if (!(kinds_mask & GS_LIVE_KIND_BIT(k)))
            continue;
        const kstore *ks = &st->k[k];
        uint32_t *ix = sorted(ks);
        if (!ix) {
            rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
            break;
        }
        for (uint32_t i = 0; i < ks->live && !rc;) {
            gs_strbuf_reset(&doc);
            gs_strbuf_add(&doc, list_head, sizeof list_head - 1);
            for (bool first = true; i < ks->live && (first || doc.len < SNAPSHOT_CHUNK); i++, first = false) {
                const entry *e = &ks->ents[ix[i]];
                if (!first)
                    gs_strbuf_putc(&doc, ',');
                gs_strbuf_add(&doc, ks->log + e->off + e->klen, e->len);
            }
            gs_strbuf_add(&doc, list_tail, sizeof list_tail - 1);
            if (doc.oom)
                rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
            else
                rc = gs_snapshot_read_buffer(s, name, doc.buf, doc.len, &o, err);
        }
        free(ix);
    }
    /* optional kinds refused: one warning per answer */
    for (int http = 403; !rc && http <= 404; http++) {
        gs_strbuf_reset(&doc);
        const char *group = NULL;
        for (int k = 0; k < GS_LIVE_NKINDS; k++) {
            if (!(kinds_mask & GS_LIVE_KIND_BIT(k)) || st->k[k].refused != http)
                continue;
            gs_strbuf_puts(&doc, group ? ", " : "");
            if (!group || strcmp(group, kinds[k].api_version) != 0) {
                gs_strbuf_puts(&doc, kinds[k].api_version);
                gs_strbuf_putc(&doc, ' ');
            }
            group = kinds[k].api_version;
            gs_strbuf_puts(&doc, kinds[k].resource);
        }
        if (!doc.len)
            continue;
        gs_strbuf_puts(&doc, http == 404 ? ": not served by this cluster (HTTP 404: Kubernetes before 1.34, or "
                                           "the API turned off); read as none"
                                         : ": listing them is not allowed (HTTP 403); read as none");
        gs_read_issue w;
        memset(&w, 0, sizeof w);
        w.src.file = gs_arena_strdup(&s->arena, name);
        w.code = GS_OK;
        w.object = "";
        w.message = doc.oom ? NULL : gs_arena_strdup(&s->arena, gs_strbuf_cstr(&doc));
        if (!w.src.file || !w.message || gs_vec_push(s->warnings, w) < 0)
            rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_unlock(&st->mu);
    gs_strbuf_free(&doc);
    return rc;
}

/* ---------------------------------------------------------------- one-shot read */

typedef struct list_ctx {
    gs_live_store *st;
    gs_live_kind k;
    char *rv;
    size_t rv_cap;
} list_ctx;

static int on_page(void *ctx, const char *page, size_t len, unsigned index, gs_error *err)
{
    list_ctx *lc = ctx;
    if (index == 0) /* the first page, or a restart after an expired continue token */
        gs_live_store_replace_begin(lc->st, lc->k);
    if (lc->rv && (index == 0 || !lc->rv[0]))
        gs_live_list_rv(page, len, lc->rv, lc->rv_cap);
    return gs_live_store_put_list(lc->st, lc->k, page, len, err);
}

int gs_live_store_list(gs_live_client *c, gs_live_store *st, gs_live_kind k, const char *path, unsigned limit,
                       char *rv, size_t rv_cap, gs_error *err)
{
    if (!kind_store(st, k, err))
        return -1;
    if (rv && rv_cap)
        rv[0] = '\0';
    list_ctx lc = {st, k, rv && rv_cap ? rv : NULL, rv_cap};
    int http = 0;
    gs_error e;
    gs_error_clear(&e);
    if (gs_live_list_http(c, path, NULL, 0, limit, on_page, &lc, &http, &e)) {
        if (kinds[k].optional && (http == 404 || http == 403)) {
            /* not served, or not allowed: none of them (the store notes which answer) */
            gs_live_store_replace_begin(st, k);
            gs_live_store_replace_end(st, k);
            pthread_mutex_lock(&st->mu);
            st->k[k].refused = http;
            pthread_mutex_unlock(&st->mu);
            return 1;
        }
        if (err)
            *err = e;
        return -1;
    }
    gs_live_store_replace_end(st, k);
    pthread_mutex_lock(&st->mu);
    st->k[k].refused = 0;
    pthread_mutex_unlock(&st->mu);
    return 0;
}

int gs_live_read_snapshot(gs_live_client *c, const gs_live_read_opts *o, gs_snapshot *s,
                          const gs_read_opts *ro, gs_error *err)
{
    uint32_t mask = o && o->kinds ? o->kinds : GS_LIVE_SNAPSHOT_KINDS;
    const char *ns = o && o->namespace_ && *o->namespace_ ? o->namespace_ : NULL;
    gs_live_store *st = gs_live_store_new(err);
    if (!st)
        return -1;
    int rc = 0;
    for (int k = 0; k < GS_LIVE_NKINDS && !rc; k++) {
        if (!(mask & GS_LIVE_KIND_BIT(k)))
            continue;
        char path[512];
        if (!gs_live_kind_path((gs_live_kind)k, ns, path, sizeof path)) {
            rc = gs_fail(err, GS_ERR_USAGE, "namespace name too long");
            break;
        }
        rc = gs_live_store_list(c, st, (gs_live_kind)k, path, o ? o->limit : 0, NULL, 0, err) < 0 ? -1 : 0;
    }
    if (!rc)
        rc = gs_live_store_snapshot(st, mask, s, o && o->name ? o->name : "cluster", ro, err);
    gs_live_store_free(st);
    return rc;
}
