/*
 * proto.c - kube-scheduler's extender protocol: request decoders and answer encoders
 * (contract in extender.h, section "protocol"; wire facts in docs/extender.md).
 *
 * How decoding works: one recursive-descent pass over the body with the library's JSON
 * scanning primitives (lib/util/jscan.c). The extender types are walked field by field
 * (keys folded as Go's encoding/json folds them); values nobody reads are still checked
 * token by token (skip_value), so a body that decodes is strict JSON. The embedded
 * Kubernetes objects are checked the same way (the reader also accepts YAML flow
 * syntax, which a JSON body must not use), then their bytes go to the snapshot reader
 * inside a PodList / NodeList wrapper, which gives items without apiVersion/kind their
 * type; the reader's error positions are mapped back onto the body (the wrapper's prefix
 * is one line of ASCII, so only line-1 columns move).
 *
 * Limits: the body size, entries of NodeNames / Nodes.items / victim maps, victims per
 * node and nesting (GS_EXT_MAX_DEPTH, counted over the whole body) are checked while
 * scanning, before anything is built for them. Node names of a victims map are checked
 * for repeats with a small open-addressing set.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/extender.h"
#include "util/jscan_int.h"

/* ---------------------------------------------------------------- scanner state */
typedef struct px {
    const char *b, *end, *p;
    gs_arena *a;
    gs_error *err;
    uint32_t max_nodes, max_victims;
    size_t max_body;
    unsigned depth;
    char path[GS_ERR_PATH_MAX];
    size_t plen;
} px;

static void px_init(px *x, const char *body, size_t len, const gs_ext_limits *lim, gs_arena *a, gs_error *err)
{
    memset(x, 0, sizeof *x);
    x->b = body;
    x->p = body;
    x->end = body + len;
    x->a = a;
    x->err = err;
    x->max_body = lim && lim->max_body ? lim->max_body : GS_EXT_MAX_BODY_DEFAULT;
    x->max_nodes = lim && lim->max_nodes ? lim->max_nodes : GS_EXT_MAX_NODES_DEFAULT;
    x->max_victims = lim && lim->max_victims ? lim->max_victims : GS_EXT_MAX_VICTIMS_DEFAULT;
}

/* ---------------------------------------------------------------- paths and errors */
static size_t path_add(px *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t path_add(px *x, const char *fmt, ...)
{
    size_t old = x->plen;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(x->path + old, sizeof x->path - old, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    x->plen = old + (size_t)n < sizeof x->path ? old + (size_t)n : sizeof x->path - 1;
    return old;
}

static size_t path_field(px *x, const char *name)
{
    return x->plen ? path_add(x, ".%s", name) : path_add(x, "%s", name);
}

static void path_back(px *x, size_t old)
{
    x->plen = old;
    x->path[old] = '\0';
}

static void where(const px *x, const char *at, int *line, int *col)
{
    if (at > x->end)
        at = x->end;
    gs_text_line_col(x->b, (size_t)(at - x->b), line, col);
}

static int perr(px *x, const char *at, const char *what)
{
    int line, col;
    where(x, at, &line, &col);
    return gs_error_set(x->err, GS_ERR_PARSE, NULL, line, col, NULL, "malformed JSON: %s", what);
}

static int fail_at(px *x, gs_code code, const char *at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail_at(px *x, gs_code code, const char *at, const char *fmt, ...)
{
    int line = 0, col = 0;
    if (at)
        where(x, at, &line, &col);
    va_list ap;
    va_start(ap, fmt);
    gs_error_setv(x->err, code, NULL, line, col, x->path[0] ? x->path : NULL, fmt, ap);
    va_end(ap);
    return -1;
}

static int nomem(px *x)
{
    return gs_fail(x->err, GS_ERR_NOMEM, "out of memory decoding the extender request");
}

static const char *type_name(char c)
{
    switch (c) {
    case '{': return "an object";
    case '[': return "an array";
    case '"': return "a string";
    case 't':
    case 'f': return "a boolean";
    case 'n': return "null";
    default: return "a number";
    }
}

/* ---------------------------------------------------------------- tokens */
static void ws(px *x)
{
    x->p = gs_js_ws(x->p, x->end);
}

/* After ws: the next byte, or fail at the end of input. */
static int peek(px *x, char *c)
{
    ws(x);
    if (x->p >= x->end)
        return perr(x, x->p, "unexpected end of input");
    *c = *x->p;
    return 0;
}

/* x->p at '"': check the string (and decode it into the arena when out != NULL). */
static int read_str(px *x, char **out, size_t *outlen)
{
    const char *s = x->p + 1, *bad = NULL;
    bool esc = false;
    const char *q = gs_js_str_end(s, x->end, &esc, &bad);
    if (!q)
        return perr(x, bad, bad >= x->end ? "unterminated string" : "control character in a string");
    size_t n = (size_t)(q - s);
    if (esc && gs_js_unescape(s, n, NULL, &bad) < 0)
        return perr(x, bad, "invalid escape (or a lone surrogate)");
    if (out) {
        char *d = gs_arena_alloc(x->a, n + 1);
        if (!d)
            return nomem(x);
        size_t m = n;
        if (esc) {
            long r = gs_js_unescape(s, n, d, &bad);
            if (r < 0)
                return perr(x, bad, "invalid escape");
            m = (size_t)r;
        } else {
            memcpy(d, s, n);
        }
        d[m] = '\0';
        if (memchr(d, '\0', m))
            return fail_at(x, GS_ERR_INVALID, x->p, "contains a NUL character");
        *out = d;
        if (outlen)
            *outlen = m;
    }
    x->p = q + 1;
    return 0;
}

/* A literal or a number at x->p (no container, no string). */
static int read_scalar(px *x, const char **start, size_t *len)
{
    const char *p = x->p, *q, *bad = NULL;
    char kind;
    if ((q = gs_js_literal(p, x->end, &kind)) == NULL) {
        if (*p != '-' && (*p < '0' || *p > '9'))
            return perr(x, p, "expected a value");
        if ((q = gs_js_number(p, x->end, &bad)) == NULL)
            return perr(x, bad, "invalid number");
    }
    if (start)
        *start = p;
    if (len)
        *len = (size_t)(q - p);
    x->p = q;
    return 0;
}

/* A `null` at x->p (after ws) is consumed: true. */
static bool take_null(px *x)
{
    ws(x);
    if (x->end - x->p >= 4 && memcmp(x->p, "null", 4) == 0) {
        x->p += 4;
        return true;
    }
    return false;
}

static int open_container(px *x)
{
    if (x->depth >= GS_EXT_MAX_DEPTH)
        return fail_at(x, GS_ERR_LIMIT, x->p, "JSON nested deeper than %d levels", GS_EXT_MAX_DEPTH);
    x->depth++;
    x->p++;
    return 0;
}

/* Inside an object (x->p after '{' or after a member's value): 1 when a member follows
 * (x->p at its key's '"'), 0 when the '}' was consumed. */
static int obj_next(px *x, bool *first)
{
    char c = 0;
    if (peek(x, &c) < 0)
        return -1;
    if (c == '}') {
        x->p++;
        x->depth--;
        return 0;
    }
    if (!*first) {
        if (c != ',')
            return perr(x, x->p, "expected ',' or '}'");
        x->p++;
        if (peek(x, &c) < 0)
            return -1;
    }
    *first = false;
    if (c != '"')
        return perr(x, x->p, "expected a string key");
    return 1;
}

/* Inside an array: 1 when an item follows (x->p at it), 0 when the ']' was consumed. */
static int arr_next(px *x, bool *first)
{
    char c = 0;
    if (peek(x, &c) < 0)
        return -1;
    if (*first && c == ']') {
        x->p++;
        x->depth--;
        return 0;
    }
    if (!*first) {
        if (c == ']') {
            x->p++;
            x->depth--;
            return 0;
        }
        if (c != ',')
            return perr(x, x->p, "expected ',' or ']'");
        x->p++;
        if (peek(x, &c) < 0)
            return -1;
    }
    *first = false;
    return 1;
}

static int colon(px *x)
{
    ws(x);
    if (x->p >= x->end || *x->p != ':')
        return perr(x, x->p, x->p >= x->end ? "unexpected end of input" : "expected ':'");
    x->p++;
    ws(x);
    return 0;
}

/* Any value, checked strictly, kept nowhere. */
static int skip_value(px *x)
{
    char c = 0;
    if (peek(x, &c) < 0)
        return -1;
    if (c == '"')
        return read_str(x, NULL, NULL);
    if (c != '{' && c != '[')
        return read_scalar(x, NULL, NULL);
    if (open_container(x) < 0)
        return -1;
    bool first = true;
    int r;
    if (c == '{') {
        while ((r = obj_next(x, &first)) == 1)
            if (read_str(x, NULL, NULL) < 0 || colon(x) < 0 || skip_value(x) < 0)
                return -1;
    } else {
        while ((r = arr_next(x, &first)) == 1)
            if (skip_value(x) < 0)
                return -1;
    }
    return r;
}

/* An object or array whose bytes are handed on to the reader: checked strictly here
 * (the reader also takes YAML flow syntax, which JSON bodies must not use), its extent
 * kept. x->p at '{' or '['. */
static int take_extent(px *x, const char **start, size_t *len)
{
    const char *s = x->p;
    if (skip_value(x) < 0)
        return -1;
    *start = s;
    *len = (size_t)(x->p - s);
    return 0;
}

/* ---------------------------------------------------------------- keys */
/* Go's encoding/json key match: simple Unicode case folding, which for the ASCII names
 * of the extender types means ASCII case plus U+212A KELVIN SIGN for 'k' and U+017F
 * LATIN SMALL LETTER LONG S for 's'. */
static bool fold_eq(const char *k, size_t n, const char *want)
{
    size_t i = 0;
    const unsigned char *u = (const unsigned char *)k;
    for (; *want; want++) {
        char w = *want >= 'A' && *want <= 'Z' ? (char)(*want + 32) : *want;
        if (i >= n)
            return false;
        unsigned char c = u[i];
        if (c < 0x80) {
            char l = c >= 'A' && c <= 'Z' ? (char)(c + 32) : (char)c;
            if (l != w)
                return false;
            i++;
        } else if (n - i >= 3 && c == 0xE2 && u[i + 1] == 0x84 && u[i + 2] == 0xAA) {
            if (w != 'k')
                return false;
            i += 3;
        } else if (n - i >= 2 && c == 0xC5 && u[i + 1] == 0xBF) {
            if (w != 's')
                return false;
            i += 2;
        } else {
            return false;
        }
    }
    return i == n;
}

#define KEY_UNKNOWN (-1)

/* x->p at a key's '"': read it and the ':' after it; *id = index in names (folded, or
 * exact when `exact`) or KEY_UNKNOWN. A known key seen before (bit in *seen) fails. */
static int field_key(px *x, const char *const *names, bool exact, uint32_t *seen, int *id)
{
    const char *at = x->p, *s = x->p + 1, *bad = NULL;
    bool esc = false;
    const char *q = gs_js_str_end(s, x->end, &esc, &bad);
    if (!q)
        return perr(x, bad, bad >= x->end ? "unterminated string" : "control character in a string");
    size_t n = (size_t)(q - s);
    char kb[128];
    const char *k = s;
    *id = KEY_UNKNOWN;
    if (esc) {
        if (gs_js_unescape(s, n, NULL, &bad) < 0)
            return perr(x, bad, "invalid escape (or a lone surrogate)");
        if (n <= sizeof kb) {
            n = (size_t)gs_js_unescape(s, n, kb, &bad);
            k = kb;
        } else {
            n = 0; /* longer than any known name even decoded: unknown */
            k = NULL;
        }
    }
    if (k) {
        for (int i = 0; names[i]; i++) {
            bool eq = exact ? strlen(names[i]) == n && memcmp(names[i], k, n) == 0 : fold_eq(k, n, names[i]);
            if (eq) {
                *id = i;
                break;
            }
        }
    }
    x->p = q + 1;
    if (*id != KEY_UNKNOWN) {
        if (*seen & (1u << *id)) {
            size_t old = path_field(x, names[*id]);
            int rc = fail_at(x, GS_ERR_INVALID, at, "is given twice");
            path_back(x, old);
            return rc;
        }
        *seen |= 1u << *id;
    }
    return colon(x);
}

/* ---------------------------------------------------------------- name set */
typedef struct nameset {
    const char **slot;
    uint32_t cap, n;
} nameset;

static uint32_t name_hash(const char *s)
{
    uint64_t h = gs_hash_bytes(s, strlen(s));
    return (uint32_t)(h ^ (h >> 32));
}

/* 1 when s was in the set already, 0 when added, -1 out of memory. */
static int nameset_add(nameset *ns, gs_arena *a, const char *s)
{
    if ((ns->n + 1) * 2 > ns->cap) {
        uint32_t cap = ns->cap ? ns->cap * 2 : 64;
        const char **slot = gs_arena_alloc(a, (size_t)cap * sizeof *slot);
        if (!slot)
            return -1;
        for (uint32_t i = 0; i < ns->cap; i++) {
            if (!ns->slot[i])
                continue;
            uint32_t j = name_hash(ns->slot[i]) & (cap - 1);
            while (slot[j])
                j = (j + 1) & (cap - 1);
            slot[j] = ns->slot[i];
        }
        ns->slot = slot;
        ns->cap = cap;
    }
    uint32_t j = name_hash(s) & (ns->cap - 1);
    while (ns->slot[j]) {
        if (strcmp(ns->slot[j], s) == 0)
            return 1;
        j = (j + 1) & (ns->cap - 1);
    }
    ns->slot[j] = s;
    ns->n++;
    return 0;
}

/* ---------------------------------------------------------------- growing arrays */
/* Arena arrays that double; the old block stays in the arena (bounded by 2x). */
static void *grow(px *x, void *v, uint32_t n, uint32_t *cap, size_t elem)
{
    if (n < *cap)
        return v;
    uint32_t nc = *cap ? *cap * 2 : 16;
    void *nv = gs_arena_alloc(x->a, (size_t)nc * elem);
    if (!nv)
        return NULL;
    if (n)
        memcpy(nv, v, (size_t)n * elem);
    *cap = nc;
    return nv;
}

/* ---------------------------------------------------------------- scalars of fields */
/* A string field: null leaves "" (Go leaves the zero value). */
static int field_string(px *x, const char **dst)
{
    char c = 0;
    if (peek(x, &c) < 0)
        return -1;
    if (take_null(x)) {
        *dst = "";
        return 0;
    }
    if (c != '"')
        return fail_at(x, GS_ERR_INVALID, x->p, "must be a string, got %s", type_name(c));
    char *s;
    if (read_str(x, &s, NULL) < 0)
        return -1;
    *dst = s;
    return 0;
}

/* An int64 field (Go: an integer literal in range; null leaves 0). */
static int field_int64(px *x, int64_t *dst)
{
    char c = 0;
    if (peek(x, &c) < 0)
        return -1;
    if (take_null(x)) {
        *dst = 0;
        return 0;
    }
    if (c != '-' && (c < '0' || c > '9'))
        return fail_at(x, GS_ERR_INVALID, x->p, "must be an integer, got %s", type_name(c));
    const char *at = x->p, *t;
    size_t n;
    if (read_scalar(x, &t, &n) < 0)
        return -1;
    bool neg = t[0] == '-';
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (size_t i = neg ? 1 : 0; i < n; i++) {
        if (t[i] < '0' || t[i] > '9')
            return fail_at(x, GS_ERR_INVALID, at, "must be an integer, got %.*s", (int)(n > 40 ? 40 : n), t);
        uint64_t d = (uint64_t)(t[i] - '0');
        if (v > (lim - d) / 10)
            return fail_at(x, GS_ERR_INVALID, at, "integer out of the int64 range");
        v = v * 10 + d;
    }
    *dst = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

/* ---------------------------------------------------------------- embedded objects */
#define POD_PREFIX "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":["
#define POD_SUFFIX "]}"
#define NODES_PREFIX "{\"apiVersion\":\"v1\",\"kind\":\"NodeList\",\"items\":"
#define NODES_SUFFIX "}"

/* The reader's error at (line, col) of wrapper + body[start..): onto the body. */
static void map_reader_error(px *x, const char *start, size_t prefix_len)
{
    gs_error *e = x->err;
    if (!e)
        return;
    e->file[0] = '\0';
    if (e->line <= 0)
        return;
    int l0, c0;
    where(x, start, &l0, &c0);
    if (e->line == 1) {
        int c = e->col - (int)prefix_len;
        e->line = l0;
        e->col = c0 + (c < 1 ? 1 : c) - 1;
    } else {
        e->line = l0 + e->line - 1;
    }
}

static bool snap_empty_but(const gs_snapshot *s, uint32_t pods, uint32_t nodes)
{
    return s->pods.n == pods && s->nodes.n == nodes && s->workloads.n == 0 && s->priority_classes.n == 0 &&
           s->quotas.n == 0 && s->pdbs.n == 0 && s->namespaces.n == 0 && s->nskipped == 0;
}

/* Read the Pod's bytes body[start..start+len) into snap. */
static int read_pod(px *x, gs_snapshot *snap, const char *start, size_t len, const char **json_out)
{
    const char *v;
    size_t vl;
    int rc;
    size_t old;
    if (gs_js_top_string(start, start + len, "kind", &v, &vl) && !(vl == 3 && memcmp(v, "Pod", 3) == 0)) {
        old = path_field(x, "Pod.kind");
        rc = fail_at(x, GS_ERR_INVALID, start, "is \"%.*s\": expected a v1 Pod", (int)(vl > 60 ? 60 : vl), v);
        path_back(x, old);
        return rc;
    }
    if (gs_js_top_string(start, start + len, "apiVersion", &v, &vl) && !(vl == 2 && memcmp(v, "v1", 2) == 0)) {
        old = path_field(x, "Pod.apiVersion");
        rc = fail_at(x, GS_ERR_INVALID, start, "is \"%.*s\": expected v1", (int)(vl > 60 ? 60 : vl), v);
        path_back(x, old);
        return rc;
    }
    size_t pl = sizeof POD_PREFIX - 1, sl = sizeof POD_SUFFIX - 1;
    char *buf = malloc(pl + len + sl);
    if (!buf)
        return nomem(x);
    memcpy(buf, POD_PREFIX, pl);
    memcpy(buf + pl, start, len);
    memcpy(buf + pl + len, POD_SUFFIX, sl);
    gs_read_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.max_objects = 2;
    ro.max_replicas = 1;
    rc = gs_snapshot_read_buffer(snap, "request", buf, pl + len + sl, &ro, x->err);
    free(buf);
    if (rc < 0) {
        map_reader_error(x, start, pl);
        return -1;
    }
    if (!snap_empty_but(snap, 1, 0)) {
        old = path_field(x, "Pod");
        rc = fail_at(x, GS_ERR_INVALID, start, "is not a v1 Pod");
        path_back(x, old);
        return rc;
    }
    char *j = gs_arena_strndup(x->a, start, len);
    if (!j)
        return nomem(x);
    *json_out = j;
    return 0;
}

/* The value of a "Pod" field: the object's extent (NULL when null). */
static int field_pod(px *x, const char **start, size_t *len)
{
    char c = 0;
    if (peek(x, &c) < 0)
        return -1;
    *start = NULL;
    *len = 0;
    if (take_null(x))
        return 0;
    if (c != '{')
        return fail_at(x, GS_ERR_INVALID, x->p, "must be an object (a v1.Pod), got %s", type_name(c));
    return take_extent(x, start, len);
}

typedef struct pod_field {
    bool seen;
    const char *start; /* NULL: absent or null */
    size_t len;
} pod_field;

static int finish_pod(px *x, const pod_field *pf, gs_snapshot *snap, const gs_pod **pod, const char **json,
                      size_t *json_len)
{
    if (!pf->start) {
        size_t old = path_field(x, "Pod");
        int rc = fail_at(x, GS_ERR_INVALID, NULL, pf->seen ? "is null: the pod to schedule is required"
                                                             : "is missing: the pod to schedule is required");
        path_back(x, old);
        return rc;
    }
    if (read_pod(x, snap, pf->start, pf->len, json) < 0)
        return -1;
    *pod = &snap->pods.v[0];
    *json_len = pf->len;
    return 0;
}

/* ---------------------------------------------------------------- entry checks */
static int body_start(px *x, const char *what)
{
    size_t len = (size_t)(x->end - x->b);
    if (len > x->max_body)
        return gs_fail(x->err, GS_ERR_LIMIT, "request body of %zu bytes is larger than the limit of %zu bytes", len,
                       x->max_body);
    size_t bad = gs_utf8_invalid_at(x->b, len);
    if (bad < len) {
        int line, col;
        gs_text_line_col(x->b, bad, &line, &col);
        return gs_error_set(x->err, GS_ERR_PARSE, NULL, line, col, NULL,
                            "malformed JSON: invalid UTF-8 (byte 0x%02X)", (unsigned char)x->b[bad]);
    }
    ws(x);
    if (x->p >= x->end)
        return gs_fail(x->err, GS_ERR_PARSE, "empty body: expected an %s JSON object", what);
    if (*x->p != '{') {
        const char *at = x->p;
        if (skip_value(x) < 0)
            return -1;
        return fail_at(x, GS_ERR_INVALID, at, "an %s must be a JSON object, got %s", what, type_name(*at));
    }
    return open_container(x);
}

static int body_end(px *x)
{
    ws(x);
    if (x->p < x->end)
        return perr(x, x->p, "content after the JSON object");
    return 0;
}

/* ---------------------------------------------------------------- ExtenderArgs */
enum { AK_POD = 0, AK_NODES, AK_NODENAMES };
static const char *const args_keys[] = {"Pod", "Nodes", "NodeNames", NULL};

/* NodeNames: [string] or null. */
static int field_node_names(px *x, gs_ext_args *o)
{
    char c = 0;
    if (peek(x, &c) < 0)
        return -1;
    if (take_null(x))
        return 0;
    if (c != '[')
        return fail_at(x, GS_ERR_INVALID, x->p, "must be an array of node names, got %s", type_name(c));
    if (open_container(x) < 0)
        return -1;
    o->cache_mode = true;
    const char **v = NULL;
    uint32_t n = 0, cap = 0;
    bool first = true;
    int r;
    while ((r = arr_next(x, &first)) == 1) {
        size_t old = path_add(x, "[%u]", n);
        if (n >= x->max_nodes) {
            int rc = fail_at(x, GS_ERR_LIMIT, x->p, "more than %u node names", x->max_nodes);
            path_back(x, old);
            return rc;
        }
        if (!(v = grow(x, v, n, &cap, sizeof *v)))
            return nomem(x);
        if (field_string(x, &v[n]) < 0)
            return -1;
        path_back(x, old);
        n++;
    }
    if (r < 0)
        return -1;
    o->node_names = v;
    o->nnode_names = n;
    return 0;
}

/* Nodes: a v1.NodeList or null. Its items' extent is kept in *items (NULL: none). */
static int field_nodes(px *x, gs_ext_args *o, const char **items, size_t *items_len, uint32_t *count)
{
    char c = 0;
    if (peek(x, &c) < 0)
        return -1;
    if (take_null(x))
        return 0;
    if (c != '{')
        return fail_at(x, GS_ERR_INVALID, x->p, "must be an object (a v1.NodeList), got %s", type_name(c));
    const char *obj = x->p;
    o->has_nodes = true;
    if (open_container(x) < 0)
        return -1;
    static const char *const list_keys[] = {"items", NULL};
    uint32_t seen = 0;
    bool first = true;
    int r, id;
    while ((r = obj_next(x, &first)) == 1) {
        if (field_key(x, list_keys, true, &seen, &id) < 0)
            return -1;
        if (id == KEY_UNKNOWN) {
            if (skip_value(x) < 0)
                return -1;
            continue;
        }
        size_t old = path_field(x, "items");
        if (peek(x, &c) < 0)
            return -1;
        if (take_null(x)) {
            path_back(x, old);
            continue;
        }
        if (c != '[')
            return fail_at(x, GS_ERR_INVALID, x->p, "must be an array of v1.Node, got %s", type_name(c));
        const char *arr = x->p;
        if (open_container(x) < 0)
            return -1;
        bool f2 = true;
        uint32_t n = 0;
        while ((r = arr_next(x, &f2)) == 1) {
            size_t o2 = path_add(x, "[%u]", n);
            if (n >= x->max_nodes)
                return fail_at(x, GS_ERR_LIMIT, x->p, "more than %u nodes", x->max_nodes);
            if (*x->p != '{')
                return fail_at(x, GS_ERR_INVALID, x->p, "must be an object (a v1.Node), got %s", type_name(*x->p));
            const char *s;
            size_t l;
            if (take_extent(x, &s, &l) < 0)
                return -1;
            path_back(x, o2);
            n++;
        }
        if (r < 0)
            return -1;
        *items = arr;
        *items_len = (size_t)(x->p - arr);
        *count = n;
        path_back(x, old);
    }
    if (r < 0)
        return -1;
    char *j = gs_arena_strndup(x->a, obj, (size_t)(x->p - obj));
    if (!j)
        return nomem(x);
    o->nodes_json = j;
    o->nodes_json_len = (size_t)(x->p - obj);
    return 0;
}

static int read_nodes(px *x, gs_ext_args *o, const char *items, size_t len, uint32_t count)
{
    size_t pl = sizeof NODES_PREFIX - 1, sl = sizeof NODES_SUFFIX - 1;
    char *buf = malloc(pl + len + sl);
    if (!buf)
        return nomem(x);
    memcpy(buf, NODES_PREFIX, pl);
    memcpy(buf + pl, items, len);
    memcpy(buf + pl + len, NODES_SUFFIX, sl);
    gs_read_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.max_objects = count + 2;
    ro.max_replicas = 1;
    uint32_t pods = o->snap.pods.n;
    int rc = gs_snapshot_read_buffer(&o->snap, "request", buf, pl + len + sl, &ro, x->err);
    free(buf);
    if (rc < 0) {
        map_reader_error(x, items, pl);
        if (x->err && x->err->path[0])
            gs_error_prefix_path(x->err, "Nodes.items: ");
        return -1;
    }
    if (!snap_empty_but(&o->snap, pods, count)) {
        size_t old = path_field(x, "Nodes.items");
        rc = fail_at(x, GS_ERR_INVALID, items, "holds objects that are not v1 Nodes");
        path_back(x, old);
        return rc;
    }
    return 0;
}

int gs_ext_args_decode(const char *body, size_t len, const gs_ext_limits *lim, gs_arena *arena,
                       gs_ext_args *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    gs_snapshot_init(&out->snap);
    px x;
    px_init(&x, body, len, lim, arena, err);
    pod_field pf = {0};
    const char *items = NULL;
    size_t items_len = 0;
    uint32_t count = 0;
    uint32_t seen = 0;
    bool first = true;
    int r, id;
    if (body_start(&x, "ExtenderArgs") < 0)
        goto fail;
    while ((r = obj_next(&x, &first)) == 1) {
        if (field_key(&x, args_keys, false, &seen, &id) < 0)
            goto fail;
        if (id == KEY_UNKNOWN) {
            if (skip_value(&x) < 0)
                goto fail;
            continue;
        }
        size_t old = path_field(&x, args_keys[id]);
        int rc = 0;
        switch (id) {
        case AK_POD:
            pf.seen = true;
            rc = field_pod(&x, &pf.start, &pf.len);
            break;
        case AK_NODES: rc = field_nodes(&x, out, &items, &items_len, &count); break;
        case AK_NODENAMES: rc = field_node_names(&x, out); break;
        default: break;
        }
        if (rc < 0)
            goto fail;
        path_back(&x, old);
    }
    if (r < 0 || body_end(&x) < 0)
        goto fail;
    if (finish_pod(&x, &pf, &out->snap, &out->pod, &out->pod_json, &out->pod_json_len) < 0)
        goto fail;
    if (items) {
        if (read_nodes(&x, out, items, items_len, count) < 0)
            goto fail;
        out->pod = &out->snap.pods.v[0];
        out->nodes = out->snap.nodes.v;
        out->nnodes = out->snap.nodes.n;
    }
    if (!out->cache_mode && out->nnodes) {
        const char **v = gs_arena_alloc(arena, (size_t)out->nnodes * sizeof *v);
        if (!v) {
            nomem(&x);
            goto fail;
        }
        for (uint32_t i = 0; i < out->nnodes; i++)
            v[i] = out->nodes[i].meta.name;
        out->node_names = v;
        out->nnode_names = out->nnodes;
    }
    return 0;
fail:
    gs_ext_args_free(out);
    return -1;
}

void gs_ext_args_free(gs_ext_args *a)
{
    if (!a)
        return;
    gs_snapshot_free(&a->snap);
    memset(a, 0, sizeof *a);
}

/* ---------------------------------------------------------------- ExtenderBindingArgs */
enum { BK_NAME = 0, BK_NAMESPACE, BK_UID, BK_NODE };
static const char *const binding_keys[] = {"PodName", "PodNamespace", "PodUID", "Node", NULL};

int gs_ext_binding_args_decode(const char *body, size_t len, const gs_ext_limits *lim, gs_arena *arena,
                               gs_ext_binding_args *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    px x;
    px_init(&x, body, len, lim, arena, err);
    const char *v[4] = {"", "", "", ""};
    uint32_t seen = 0;
    bool first = true;
    int r, id;
    if (body_start(&x, "ExtenderBindingArgs") < 0)
        goto fail;
    while ((r = obj_next(&x, &first)) == 1) {
        if (field_key(&x, binding_keys, false, &seen, &id) < 0)
            goto fail;
        if (id == KEY_UNKNOWN) {
            if (skip_value(&x) < 0)
                goto fail;
            continue;
        }
        size_t old = path_field(&x, binding_keys[id]);
        if (field_string(&x, &v[id]) < 0)
            goto fail;
        path_back(&x, old);
    }
    if (r < 0 || body_end(&x) < 0)
        goto fail;
    for (int i = 0; i < 4; i++) {
        if (!v[i][0]) {
            size_t old = path_field(&x, binding_keys[i]);
            fail_at(&x, GS_ERR_INVALID, NULL, "is missing or empty: a binding needs the pod's name, namespace "
                                              "and UID and the node");
            path_back(&x, old);
            goto fail;
        }
    }
    out->pod_name = v[BK_NAME];
    out->pod_namespace = v[BK_NAMESPACE];
    out->pod_uid = v[BK_UID];
    out->node = v[BK_NODE];
    return 0;
fail:
    memset(out, 0, sizeof *out);
    return -1;
}

/* ---------------------------------------------------------------- ExtenderPreemptionArgs */
enum { PK_POD = 0, PK_VICTIMS, PK_META };
static const char *const preempt_keys[] = {"Pod", "NodeNameToVictims", "NodeNameToMetaVictims", NULL};
enum { VK_PODS = 0, VK_PDB };
static const char *const victims_keys[] = {"Pods", "NumPDBViolations", NULL};
static const char *const metapod_keys[] = {"UID", NULL};
static const char *const pod_keys[] = {"metadata", NULL};
static const char *const meta_keys[] = {"uid", "namespace", "name", NULL};

/* One victim: a MetaPod {UID} (meta) or a v1.Pod (metadata.uid, namespace, name). */
static int victim(px *x, bool meta, gs_ext_victim *v)
{
    char c = 0;
    const char *at = x->p;
    if (peek(x, &c) < 0)
        return -1;
    v->uid = v->namespace_ = v->name = "";
    if (c != '{')
        return fail_at(x, GS_ERR_INVALID, x->p, "must be an object (%s), got %s", meta ? "a MetaPod" : "a v1.Pod",
                       type_name(c));
    if (open_container(x) < 0)
        return -1;
    uint32_t seen = 0;
    bool first = true;
    int r, id;
    while ((r = obj_next(x, &first)) == 1) {
        if (field_key(x, meta ? metapod_keys : pod_keys, !meta, &seen, &id) < 0)
            return -1;
        if (id == KEY_UNKNOWN) {
            if (skip_value(x) < 0)
                return -1;
            continue;
        }
        if (meta) {
            size_t old = path_field(x, "UID");
            if (field_string(x, &v->uid) < 0)
                return -1;
            path_back(x, old);
            continue;
        }
        size_t old = path_field(x, "metadata");
        if (take_null(x)) {
            path_back(x, old);
            continue;
        }
        if (peek(x, &c) < 0)
            return -1;
        if (c != '{')
            return fail_at(x, GS_ERR_INVALID, x->p, "must be an object, got %s", type_name(c));
        if (open_container(x) < 0)
            return -1;
        uint32_t s2 = 0;
        bool f2 = true;
        int id2;
        while ((r = obj_next(x, &f2)) == 1) {
            if (field_key(x, meta_keys, true, &s2, &id2) < 0)
                return -1;
            if (id2 == KEY_UNKNOWN) {
                if (skip_value(x) < 0)
                    return -1;
                continue;
            }
            size_t o2 = path_field(x, meta_keys[id2]);
            const char **dst = id2 == 0 ? &v->uid : id2 == 1 ? &v->namespace_ : &v->name;
            if (field_string(x, dst) < 0)
                return -1;
            path_back(x, o2);
        }
        if (r < 0)
            return -1;
        path_back(x, old);
    }
    if (r < 0)
        return -1;
    if (!v->uid[0]) {
        size_t old = path_field(x, meta ? "UID" : "metadata.uid");
        int rc = fail_at(x, GS_ERR_INVALID, at, "is missing or empty: victims are named by UID");
        path_back(x, old);
        return rc;
    }
    return 0;
}

/* Victims / MetaVictims of one node (x->p at the value; null = none). */
static int victims_value(px *x, bool meta, gs_ext_victims *vs)
{
    char c = 0;
    if (peek(x, &c) < 0)
        return -1;
    if (take_null(x))
        return 0;
    if (c != '{')
        return fail_at(x, GS_ERR_INVALID, x->p, "must be an object (%s), got %s", meta ? "MetaVictims" : "Victims",
                       type_name(c));
    if (open_container(x) < 0)
        return -1;
    uint32_t seen = 0;
    bool first = true;
    int r, id;
    while ((r = obj_next(x, &first)) == 1) {
        if (field_key(x, victims_keys, false, &seen, &id) < 0)
            return -1;
        if (id == KEY_UNKNOWN) {
            if (skip_value(x) < 0)
                return -1;
            continue;
        }
        size_t old = path_field(x, victims_keys[id]);
        if (id == VK_PDB) {
            if (field_int64(x, &vs->num_pdb_violations) < 0)
                return -1;
            path_back(x, old);
            continue;
        }
        if (take_null(x)) {
            path_back(x, old);
            continue;
        }
        if (peek(x, &c) < 0)
            return -1;
        if (c != '[')
            return fail_at(x, GS_ERR_INVALID, x->p, "must be an array, got %s", type_name(c));
        if (open_container(x) < 0)
            return -1;
        uint32_t n = 0, cap = 0;
        gs_ext_victim *v = NULL;
        bool f2 = true;
        while ((r = arr_next(x, &f2)) == 1) {
            size_t o2 = path_add(x, "[%u]", n);
            if (n >= x->max_victims)
                return fail_at(x, GS_ERR_LIMIT, x->p, "more than %u victim pods on one node", x->max_victims);
            if (!(v = grow(x, v, n, &cap, sizeof *v)))
                return nomem(x);
            if (victim(x, meta, &v[n]) < 0)
                return -1;
            path_back(x, o2);
            n++;
        }
        if (r < 0)
            return -1;
        vs->pods = v;
        vs->npods = n;
        path_back(x, old);
    }
    return r;
}

/* NodeNameToVictims / NodeNameToMetaVictims: {node: ...} or null. */
static int victims_map(px *x, bool meta, bool *has, gs_ext_victims **out, uint32_t *nout)
{
    char c = 0;
    if (peek(x, &c) < 0)
        return -1;
    if (take_null(x))
        return 0;
    if (c != '{')
        return fail_at(x, GS_ERR_INVALID, x->p, "must be an object (node name -> %s), got %s",
                       meta ? "MetaVictims" : "Victims", type_name(c));
    if (open_container(x) < 0)
        return -1;
    *has = true;
    nameset ns = {0};
    gs_ext_victims *v = NULL;
    uint32_t n = 0, cap = 0;
    bool first = true;
    int r;
    while ((r = obj_next(x, &first)) == 1) {
        const char *at = x->p;
        char *node;
        if (read_str(x, &node, NULL) < 0 || colon(x) < 0)
            return -1;
        size_t old = path_add(x, "[%.64s]", node);
        if (n >= x->max_nodes)
            return fail_at(x, GS_ERR_LIMIT, at, "more than %u nodes", x->max_nodes);
        int dup = nameset_add(&ns, x->a, node);
        if (dup < 0)
            return nomem(x);
        if (dup)
            return fail_at(x, GS_ERR_INVALID, at, "node is given twice");
        if (!(v = grow(x, v, n, &cap, sizeof *v)))
            return nomem(x);
        memset(&v[n], 0, sizeof v[n]);
        v[n].node = node;
        if (victims_value(x, meta, &v[n]) < 0)
            return -1;
        path_back(x, old);
        n++;
    }
    if (r < 0)
        return -1;
    *out = v;
    *nout = n;
    return 0;
}

int gs_ext_preemption_args_decode(const char *body, size_t len, const gs_ext_limits *lim, gs_arena *arena,
                                  gs_ext_preemption_args *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    gs_snapshot_init(&out->snap);
    px x;
    px_init(&x, body, len, lim, arena, err);
    pod_field pf = {0};
    uint32_t seen = 0;
    bool first = true;
    int r, id;
    if (body_start(&x, "ExtenderPreemptionArgs") < 0)
        goto fail;
    while ((r = obj_next(&x, &first)) == 1) {
        if (field_key(&x, preempt_keys, false, &seen, &id) < 0)
            goto fail;
        if (id == KEY_UNKNOWN) {
            if (skip_value(&x) < 0)
                goto fail;
            continue;
        }
        size_t old = path_field(&x, preempt_keys[id]);
        int rc = 0;
        switch (id) {
        case PK_POD:
            pf.seen = true;
            rc = field_pod(&x, &pf.start, &pf.len);
            break;
        case PK_VICTIMS: rc = victims_map(&x, false, &out->has_victims, &out->victims, &out->nvictims); break;
        case PK_META:
            rc = victims_map(&x, true, &out->has_meta_victims, &out->meta_victims, &out->nmeta_victims);
            break;
        default: break;
        }
        if (rc < 0)
            goto fail;
        path_back(&x, old);
    }
    if (r < 0 || body_end(&x) < 0)
        goto fail;
    if (finish_pod(&x, &pf, &out->snap, &out->pod, &out->pod_json, &out->pod_json_len) < 0)
        goto fail;
    return 0;
fail:
    gs_ext_preemption_args_free(out);
    return -1;
}

void gs_ext_preemption_args_free(gs_ext_preemption_args *a)
{
    if (!a)
        return;
    gs_snapshot_free(&a->snap);
    memset(a, 0, sizeof *a);
}

/* ================================================================ encoders */
static void put_msg_map(gs_strbuf *sb, const gs_ext_node_msg *m, uint32_t n)
{
    if (!n) {
        gs_strbuf_puts(sb, "null");
        return;
    }
    gs_strbuf_putc(sb, '{');
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            gs_strbuf_putc(sb, ',');
        gs_strbuf_json_str(sb, m[i].node);
        gs_strbuf_putc(sb, ':');
        gs_strbuf_json_str(sb, m[i].message);
    }
    gs_strbuf_putc(sb, '}');
}

static void put_names(gs_strbuf *sb, const char *const *v, uint32_t n)
{
    gs_strbuf_putc(sb, '[');
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            gs_strbuf_putc(sb, ',');
        gs_strbuf_json_str(sb, v[i]);
    }
    gs_strbuf_putc(sb, ']');
}

void gs_ext_filter_result_encode(const gs_ext_filter_result *r, gs_strbuf *sb)
{
    gs_strbuf_puts(sb, "{\"Nodes\":");
    if (r->cache_mode) {
        gs_strbuf_puts(sb, "null,\"NodeNames\":");
        put_names(sb, r->nodes, r->nnodes);
    } else {
        gs_strbuf_puts(sb, "{\"metadata\":{},\"items\":[");
        for (uint32_t i = 0; i < r->nnodes; i++) {
            gs_strbuf_puts(sb, i ? ",{\"metadata\":{\"name\":" : "{\"metadata\":{\"name\":");
            gs_strbuf_json_str(sb, r->nodes[i]);
            gs_strbuf_puts(sb, "}}");
        }
        gs_strbuf_puts(sb, "]},\"NodeNames\":null");
    }
    gs_strbuf_puts(sb, ",\"FailedNodes\":");
    put_msg_map(sb, r->failed, r->nfailed);
    gs_strbuf_puts(sb, ",\"FailedAndUnresolvableNodes\":");
    put_msg_map(sb, r->unresolvable, r->nunresolvable);
    gs_strbuf_puts(sb, ",\"Error\":");
    gs_strbuf_json_str(sb, r->error ? r->error : "");
    gs_strbuf_putc(sb, '}');
}

void gs_ext_priorities_encode(const gs_ext_host_priority *v, uint32_t n, gs_strbuf *sb)
{
    gs_strbuf_putc(sb, '[');
    for (uint32_t i = 0; i < n; i++) {
        int64_t s = v[i].score;
        if (s < GS_EXT_MIN_PRIORITY)
            s = GS_EXT_MIN_PRIORITY;
        if (s > GS_EXT_MAX_PRIORITY)
            s = GS_EXT_MAX_PRIORITY;
        gs_strbuf_puts(sb, i ? ",{\"Host\":" : "{\"Host\":");
        gs_strbuf_json_str(sb, v[i].host);
        gs_strbuf_printf(sb, ",\"Score\":%d}", (int)s);
    }
    gs_strbuf_putc(sb, ']');
}

void gs_ext_binding_result_encode(const char *error, gs_strbuf *sb)
{
    gs_strbuf_puts(sb, "{\"Error\":");
    gs_strbuf_json_str(sb, error ? error : "");
    gs_strbuf_putc(sb, '}');
}

/* {node: {"Pods":[...],"NumPDBViolations":n}}; full: victim pods as v1.Pod metadata. */
static void put_victims_map(gs_strbuf *sb, const gs_ext_victims *v, uint32_t n, bool full)
{
    gs_strbuf_putc(sb, '{');
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            gs_strbuf_putc(sb, ',');
        gs_strbuf_json_str(sb, v[i].node);
        gs_strbuf_puts(sb, ":{\"Pods\":[");
        for (uint32_t j = 0; j < v[i].npods; j++) {
            const gs_ext_victim *p = &v[i].pods[j];
            if (j)
                gs_strbuf_putc(sb, ',');
            if (full) {
                gs_strbuf_puts(sb, "{\"metadata\":{\"name\":");
                gs_strbuf_json_str(sb, p->name);
                gs_strbuf_puts(sb, ",\"namespace\":");
                gs_strbuf_json_str(sb, p->namespace_);
                gs_strbuf_puts(sb, ",\"uid\":");
                gs_strbuf_json_str(sb, p->uid);
                gs_strbuf_puts(sb, "}}");
            } else {
                gs_strbuf_puts(sb, "{\"UID\":");
                gs_strbuf_json_str(sb, p->uid);
                gs_strbuf_putc(sb, '}');
            }
        }
        gs_strbuf_printf(sb, "],\"NumPDBViolations\":%lld}", (long long)v[i].num_pdb_violations);
    }
    gs_strbuf_putc(sb, '}');
}

void gs_ext_preemption_result_encode(const gs_ext_victims *v, uint32_t n, gs_strbuf *sb)
{
    gs_strbuf_puts(sb, "{\"NodeNameToMetaVictims\":");
    put_victims_map(sb, v, n, false);
    gs_strbuf_putc(sb, '}');
}

/* ---------------------------------------------------------------- request encoders */
static void put_raw_or_null(gs_strbuf *sb, const char *json, size_t len)
{
    if (json)
        gs_strbuf_add(sb, json, len);
    else
        gs_strbuf_puts(sb, "null");
}

void gs_ext_args_encode(const gs_ext_args *a, gs_strbuf *sb)
{
    gs_strbuf_puts(sb, "{\"Pod\":");
    put_raw_or_null(sb, a->pod_json, a->pod_json_len);
    gs_strbuf_puts(sb, ",\"Nodes\":");
    put_raw_or_null(sb, a->has_nodes ? a->nodes_json : NULL, a->nodes_json_len);
    gs_strbuf_puts(sb, ",\"NodeNames\":");
    if (a->cache_mode)
        put_names(sb, a->node_names, a->nnode_names);
    else
        gs_strbuf_puts(sb, "null");
    gs_strbuf_putc(sb, '}');
}

void gs_ext_binding_args_encode(const gs_ext_binding_args *a, gs_strbuf *sb)
{
    gs_strbuf_puts(sb, "{\"PodName\":");
    gs_strbuf_json_str(sb, a->pod_name);
    gs_strbuf_puts(sb, ",\"PodNamespace\":");
    gs_strbuf_json_str(sb, a->pod_namespace);
    gs_strbuf_puts(sb, ",\"PodUID\":");
    gs_strbuf_json_str(sb, a->pod_uid);
    gs_strbuf_puts(sb, ",\"Node\":");
    gs_strbuf_json_str(sb, a->node);
    gs_strbuf_putc(sb, '}');
}

void gs_ext_preemption_args_encode(const gs_ext_preemption_args *a, gs_strbuf *sb)
{
    gs_strbuf_puts(sb, "{\"Pod\":");
    put_raw_or_null(sb, a->pod_json, a->pod_json_len);
    gs_strbuf_puts(sb, ",\"NodeNameToVictims\":");
    if (a->has_victims)
        put_victims_map(sb, a->victims, a->nvictims, true);
    else
        gs_strbuf_puts(sb, "null");
    gs_strbuf_puts(sb, ",\"NodeNameToMetaVictims\":");
    if (a->has_meta_victims)
        put_victims_map(sb, a->meta_victims, a->nmeta_victims, false);
    else
        gs_strbuf_puts(sb, "null");
    gs_strbuf_putc(sb, '}');
}
