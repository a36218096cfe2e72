/*
 * read.c - the snapshot reader: files, directories and stdin in; typed objects out.
 *
 * Pipeline, one document at a time:
 *
 *   bytes --(JSON stream split)--> segments --(lib/util/yaml_tree.c)--> gs_yn tree
 *         --(decode by kind)--> gs_node / gs_pod / ... in the snapshot arena
 *
 * The tree is the library's one YAML tree (yaml_tree_int.h: 32 bytes a node, a position
 * on every node, aliases and duplicate keys refused, scalars pointing into the input when
 * libfyaml allows). Collections under keys no decoder reads are skipped while building.
 *
 * JSON streams: YAML requires "---" between documents, while `kubectl get -w -o json`
 * and friends print concatenated JSON values. When the input starts with '{' or '[',
 * each balanced top-level value is parsed as its own segment (positions are shifted
 * back to the file's coordinates); anything that does not look like a concatenation
 * is left to the YAML parser as one segment.
 *
 * Decoding follows Kubernetes' JSON rules as sigs.k8s.io/yaml applies them: integer and
 * boolean fields need unquoted scalars, quantities accept strings and numbers, null
 * means absent. String fields accept any scalar as its text (annotations are often
 * written unquoted). Unknown fields are ignored; unknown kinds are counted and skipped.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kube/read_int.h"
#include "util/jscan_int.h"
#include "util/map_int.h"

#define RD_DEFAULT_MAX_FILE ((size_t)0) /* no limit but memory */
#define RD_DEFAULT_MAX_OBJECTS 10000000u
#define RD_DEFAULT_MAX_REPLICAS 100000u
#define RD_MAX_DEPTH 128               /* YAML nesting */
#define RD_MAX_NODES_PER_DOC (32u << 20) /* tree nodes in one document (1 GiB of tree) */
#define RD_MAX_LIST_DEPTH 4            /* List inside List inside ... */
#define RD_MAX_DIR_DEPTH 32
#define RD_WINDOW ((size_t)32 << 20) /* mapped bytes resident behind the parser, at most */
#define RD_TEXT_SHOWN GS_YT_SHOWN      /* bytes of offending text quoted in messages */

/* ================================================================ lifecycle */

void gs_snapshot_init(gs_snapshot *s)
{
    memset(s, 0, sizeof *s);
    gs_arena_init(&s->arena, 0);
}

static gs_rd_state *state_of(gs_snapshot *s, gs_error *err)
{
    if (s->pending_daemonsets)
        return s->pending_daemonsets;
    gs_rd_state *st = calloc(1, sizeof *st);
    if (!st) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    gs_intern_init(&st->skipped_ids);
    gs_intern_init(&st->templated_ids);
    gs_intern_init(&st->strings);
    s->pending_daemonsets = st;
    return st;
}

void gs_snapshot_free(gs_snapshot *s)
{
    if (!s)
        return;
    gs_rd_state *st = s->pending_daemonsets;
    if (st) {
        gs_intern_free(&st->skipped_ids);
        gs_intern_free(&st->templated_ids);
        gs_intern_free(&st->strings);
        gs_vec_free(st->interned);
        gs_vec_free(st->objs);
        free(st);
    }
    gs_vec_free(s->nodes);
    gs_vec_free(s->pods);
    gs_vec_free(s->priority_classes);
    gs_vec_free(s->quotas);
    gs_vec_free(s->pdbs);
    gs_vec_free(s->namespaces);
    gs_vec_free(s->workloads);
    gs_vec_free(s->device_classes);
    gs_vec_free(s->claims);
    gs_vec_free(s->claim_templates);
    gs_vec_free(s->resource_slices);
    gs_vec_free(s->skipped);
    gs_vec_free(s->templated);
    gs_vec_free(s->input_errors);
    gs_vec_free(s->warnings);
    gs_arena_free(&s->arena);
    memset(s, 0, sizeof *s);
}

/* Objects of the same kind, namespace and name given twice: the API server keeps one
 * (kubectl apply: the last one given), while every reader of the snapshot sees both. */
static int duplicate_warnings(gs_snapshot *s, gs_rd_state *st, gs_error *err)
{
    if (st->objs.n < 2)
        return 0;
    gs_intern keys;
    gs_intern_init(&keys);
    GS_VEC(uint32_t) first = {NULL, 0, 0};
    gs_strbuf key = GS_STRBUF_INIT;
    int rc = 0;
    for (size_t i = 0; i < st->objs.n && rc == 0; i++) {
        const gs_rd_objrec *o = &st->objs.v[i];
        gs_strbuf_reset(&key);
        gs_strbuf_printf(&key, "%s\x1f%s\x1f%s", o->kind, o->ns, o->name);
        int32_t id = key.oom ? -1 : gs_intern_id(&keys, gs_strbuf_cstr(&key), key.len);
        if (id < 0) {
            rc = -1;
            break;
        }
        if ((size_t)id == first.n) {
            if (gs_vec_push(first, (uint32_t)i) < 0)
                rc = -1;
            continue;
        }
        const gs_rd_objrec *f = &st->objs.v[first.v[id]];
        gs_read_issue w;
        memset(&w, 0, sizeof w);
        w.src = o->src;
        w.code = GS_OK;
        w.object = gs_arena_printf(&s->arena, "%s %s%s%s", o->kind, o->ns, o->ns[0] ? "/" : "", o->name);
        w.message = gs_arena_printf(&s->arena,
                                    "given twice (first at %s:%u:%u); the API server keeps one object of a "
                                    "name (kubectl apply: the last one given), gpusched reads both",
                                    f->src.file, f->src.line, f->src.col);
        if (!w.object || !w.message || gs_vec_push(s->warnings, w) < 0)
            rc = -1;
    }
    gs_strbuf_free(&key);
    gs_vec_free(first);
    gs_intern_free(&keys);
    return rc < 0 ? gs_fail(err, GS_ERR_NOMEM, "out of memory") : 0;
}

int gs_rd_note_object(gs_rd *r, const char *kind, const gs_meta *m)
{
    if (!m->name[0])
        return 0;
    gs_rd_objrec o = {kind, m->namespace_, m->name, m->src};
    if (gs_vec_push(r->st->objs, o) < 0)
        return gs_rd_nomem(r);
    return 0;
}

int gs_snapshot_finish(gs_snapshot *s, gs_error *err)
{
    if (s->finished)
        return 0;
    gs_rd_state *st = s->pending_daemonsets;
    if (st && st->ds_head) {
        if (gs_rd_expand_daemonsets(s, st, err) < 0)
            return -1;
        st->ds_head = st->ds_tail = NULL;
    }
    if (st && duplicate_warnings(s, st, err) < 0)
        return -1;
    s->finished = true;
    return 0;
}

/* ================================================================ errors and paths */

/* Quote scalar text for a message: at most RD_TEXT_SHOWN bytes, control bytes as '?'. */
static const char *shown_text(const gs_yn *n, char *buf, size_t cap)
{
    return gs_yn_shown(n, buf, cap);
}

/* "a mapping", "a sequence" or the quoted scalar. */
static const char *describe(const gs_yn *n, char *buf, size_t cap)
{
    switch (n->type) {
    case GS_YN_MAP: return "a mapping";
    case GS_YN_SEQ: return "a sequence";
    default: return shown_text(n, buf, cap);
    }
}

int gs_rd_fail(gs_rd *r, const gs_yn *at, gs_code code, const char *fmt, ...)
{
    /* "object: path", truncated to what gs_error keeps */
    char full[GS_ERR_PATH_MAX];
    size_t n = 0;
    const char *parts[3] = {r->obj, r->obj[0] && r->plen ? ": " : "", r->path};
    for (int i = 0; i < 3; i++)
        for (const char *c = parts[i]; *c && n + 1 < sizeof full; c++)
            full[n++] = *c;
    full[n] = '\0';
    va_list ap;
    va_start(ap, fmt);
    bool pos = at && !r->no_positions;
    gs_error_setv(r->err, code, r->file, pos ? (int)at->line : 0, pos ? (int)at->col : 0,
                  full[0] ? full : NULL, fmt, ap);
    va_end(ap);
    return -1;
}

int gs_rd_nomem(gs_rd *r)
{
    return gs_rd_fail(r, NULL, GS_ERR_NOMEM, "out of memory");
}

static void path_append(gs_rd *r, const char *s, size_t n)
{
    size_t room = sizeof r->path - 1 - r->plen;
    if (n > room)
        n = room;
    memcpy(r->path + r->plen, s, n);
    r->plen += n;
    r->path[r->plen] = '\0';
}

size_t gs_rd_push(gs_rd *r, const char *field)
{
    size_t mark = r->plen;
    if (r->plen)
        path_append(r, ".", 1);
    path_append(r, field, strlen(field));
    return mark;
}

size_t gs_rd_push_index(gs_rd *r, uint32_t i)
{
    size_t mark = r->plen;
    char b[16];
    size_t n = sizeof b;
    b[--n] = ']';
    do {
        b[--n] = (char)('0' + i % 10);
        i /= 10;
    } while (i);
    b[--n] = '[';
    path_append(r, b + n, sizeof b - n);
    return mark;
}

size_t gs_rd_push_key(gs_rd *r, const char *k, size_t n)
{
    size_t mark = r->plen;
    path_append(r, "[", 1);
    path_append(r, k, n);
    path_append(r, "]", 1);
    return mark;
}

void gs_rd_pop(gs_rd *r, size_t mark)
{
    r->plen = mark;
    r->path[mark] = '\0';
}

/* ================================================================ tree building */

static int decode_document(gs_rd *r, const gs_yn *root);

/* Collection values under these keys are never decoded (container env, volumes,
 * probes, statuses, managedFields, node images, ConfigMap data, ...). kubectl dumps are
 * mostly made of them, so the tree builder replaces them with a null placeholder and
 * skips their events instead of building nodes nobody reads. No decoder uses any of
 * these names for a field it reads, at any depth. */
#define RD_K(s) {s, sizeof s - 1}
static const struct {
    const char *s;
    size_t n;
} unread_keys[] = {
    RD_K("managedFields"), RD_K("env"), RD_K("envFrom"), RD_K("volumeMounts"), RD_K("volumeDevices"),
    RD_K("volumes"), RD_K("command"), RD_K("args"), RD_K("ports"), RD_K("livenessProbe"),
    RD_K("readinessProbe"), RD_K("startupProbe"), RD_K("lifecycle"), RD_K("securityContext"),
    RD_K("containerStatuses"), RD_K("initContainerStatuses"), RD_K("ephemeralContainerStatuses"),
    RD_K("ephemeralContainers"), RD_K("images"), RD_K("volumesInUse"), RD_K("volumesAttached"),
    RD_K("data"), RD_K("binaryData"), RD_K("stringData"), RD_K("daemonEndpoints"), RD_K("nodeInfo"),
    RD_K("addresses"), RD_K("podIPs"), RD_K("hostIPs"), RD_K("dnsConfig"), RD_K("imagePullSecrets"),
    RD_K("readinessGates"), RD_K("topologySpreadConstraints"), RD_K("podAffinity"),
    RD_K("podAntiAffinity"), RD_K("finalizers"),
    RD_K("hostAliases"),
};
#undef RD_K

static bool is_unread_key(const gs_yn *key)
{
    for (size_t i = 0; i < sizeof unread_keys / sizeof *unread_keys; i++)
        if (key->len == unread_keys[i].n && key->u.text[0] == unread_keys[i].s[0] &&
            memcmp(key->u.text, unread_keys[i].s, unread_keys[i].n) == 0)
            return true;
    return false;
}

bool gs_read_key_unread(const char *key, size_t len)
{
    for (size_t i = 0; i < sizeof unread_keys / sizeof *unread_keys; i++)
        if (len == unread_keys[i].n && key[0] == unread_keys[i].s[0] && memcmp(key, unread_keys[i].s, len) == 0)
            return true;
    return false;
}

static bool skip_unread(void *ctx, const gs_yn *key)
{
    (void)ctx;
    return is_unread_key(key);
}

/* Each document's tree is decoded as soon as it is complete; the builder's arena is
 * scratch, reset per document. */
static int on_document(void *ctx, const gs_yn *root)
{
    gs_rd *r = ctx;
    if (r->list_spec) {
        /* a pipe's document streamed before its kind was known: when it is not a List
         * after all, parse_stream takes the items back and decodes the root alone */
        const gs_yn *k = gs_rd_get(root, "kind");
        r->list_spec = false;
        r->list_confirmed = k && k->type == GS_YN_SCALAR && k->len >= 4 &&
                            memcmp(k->u.text + k->len - 4, "List", 4) == 0;
        if (!r->list_confirmed) {
            r->spec_root = root;
            return 0;
        }
        r->list_kind = gs_rd_intern(r, k->u.text, k->len);
        r->list_inner = k->len == 4 ? NULL : gs_rd_intern(r, k->u.text, k->len - 4);
        if (!r->list_kind || (k->len > 4 && !r->list_inner))
            return gs_rd_nomem(r);
        return decode_document(r, root);
    }
    if (r->list_kind) {
        /* a streamed document: right when its own kind is the one planned (else the
         * caller takes its objects back and reads it again without streaming) */
        const gs_yn *k = gs_rd_get(root, "kind");
        r->list_confirmed = k && k->type == GS_YN_SCALAR && k->len == strlen(r->list_kind) &&
                            memcmp(k->u.text, r->list_kind, k->len) == 0;
        r->list_kind = NULL;
        if (!r->list_confirmed)
            return 0;
    }
    return decode_document(r, root);
}

/* End (exclusive) of the balanced JSON value starting at d[i] ('{' or '['), or 0 when
 * it does not close (gs_js_skip: strings and brackets). For the libfyaml fallback only. */
static size_t json_value_end(const char *d, size_t n, size_t i)
{
    const char *bad;
    bool deep;
    const char *e = gs_js_skip(d + i, d + n, 0, &bad, &deep);
    return e ? (size_t)(e - d) : 0;
}

static int decode_object(gs_rd *r, const gs_yn *obj, unsigned list_depth, const char *item_kind);

/* A List item streamed by the JSON path: decoded as decode_object would in its loop over
 * items. Every 32 MiB of mapped input the pages behind are let go (gs_map_release). */
static int on_list_item(void *ctx, const gs_yn *it, uint32_t i, const char *done)
{
    gs_rd *r = ctx;
    if (r->list_spec) {
        /* a pipe's List whose kind is not known yet: an item that is not an object with
         * its own kind needs it; it and the items after it wait in the window */
        if (r->spec_hold)
            return 1;
        if (it->type != GS_YN_MAP || !gs_rd_get(it, "kind")) {
            r->spec_hold = true;
            r->hold_off = r->win->mark;
            r->hold_index = i;
            return 1;
        }
    }
    if (r->map && (size_t)(done - r->released) >= RD_WINDOW) {
        gs_map_release(r->map, done);
        r->released = done;
    }
    if (it->type != GS_YN_MAP) {
        char b[RD_TEXT_SHOWN + 8];
        r->obj[0] = '\0';
        r->plen = 0;
        r->path[0] = '\0';
        snprintf(r->obj, sizeof r->obj, "%.60s", r->list_kind ? r->list_kind : "List");
        gs_rd_push(r, "items");
        gs_rd_push_index(r, i);
        return gs_rd_fail(r, it, GS_ERR_INVALID, "expected a mapping (a Kubernetes object), got %s",
                          describe(it, b, sizeof b));
    }
    return decode_object(r, it, 1, r->list_inner);
}

/* The top-level "kind" of the last JSON value of the input when it is a List kind: kubectl
 * writes it after the items ({"apiVersion", "items", "kind", "metadata"}), so it is looked
 * for backwards from the end. A candidate `"kind": "...List"` counts only when the members
 * after it run to the input's last '}' (so it is a member of the outermost object, not of
 * an item, and not inside a string). Costs the last few members, not a pass over the
 * items. */
static bool tail_list_kind(const char *start, const char *end, const char **k, size_t *kl)
{
    while (end > start && (end[-1] == ' ' || end[-1] == '\n' || end[-1] == '\r' || end[-1] == '\t'))
        end--;
    if (end - start < 16 || end[-1] != '}')
        return false;
    const char *lo = end - start > 65536 ? end - 65536 : start, *bad;
    for (const char *c = end - 6; c > lo; c--) {
        if (*c != '"' || memcmp(c, "\"kind\"", 6) != 0 || c[-1] == '\\')
            continue;
        const char *q = gs_js_ws(c + 6, end), *v;
        if (q >= end || *q != ':')
            continue;
        q = gs_js_ws(q + 1, end);
        bool esc = false, deep;
        if (q >= end || *q != '"' || !(v = gs_js_str_end(q + 1, end, &esc, &bad)) || esc)
            continue;
        const char *kv = q + 1;
        size_t kn = (size_t)(v - kv);
        q = v + 1;
        for (;;) { /* the members after it, to the last '}' */
            q = gs_js_ws(q, end);
            if (q < end && *q == '}') {
                q++;
                break;
            }
            if (q >= end || *q != ',')
                break;
            q = gs_js_ws(q + 1, end);
            if (q >= end || *q != '"' || !(v = gs_js_str_end(q + 1, end, &esc, &bad)))
                break;
            q = gs_js_ws(v + 1, end);
            if (q >= end || *q != ':')
                break;
            q = gs_js_ws(q + 1, end);
            if (q < end && (*q == '{' || *q == '[')) {
                q = gs_js_skip(q, end, 0, &bad, &deep);
            } else if (q < end && *q == '"') {
                esc = false;
                q = gs_js_str_end(q + 1, end, &esc, &bad);
                q = q ? q + 1 : NULL;
            } else {
                while (q < end && *q != ',' && *q != '}')
                    q++;
            }
            if (!q)
                break;
        }
        if (q != end)
            continue;
        if (kn < 4 || kn > 100 || memcmp(kv + kn - 4, "List", 4) != 0)
            return false;
        *k = kv;
        *kl = kn;
        return true;
    }
    return false;
}

/* Before a JSON document: when the input's last value is a List (tail_list_kind), the
 * items of a document with that kind are decoded one at a time as they are built
 * (gs_yt_stream_items), so a dump of any size costs one item of tree. 1 when planned. */
static int plan_streaming(gs_rd *r, gs_yt *t, const char *p, const char *end)
{
    const char *k;
    size_t kl;
    r->list_kind = NULL;
    r->list_confirmed = false;
    if (*p != '{' || !tail_list_kind(p, end, &k, &kl))
        return 0;
    r->list_kind = gs_rd_intern(r, k, kl);
    r->list_inner = kl == 4 ? NULL : gs_rd_intern(r, k, kl - 4);
    if (!r->list_kind || (kl > 4 && !r->list_inner))
        return gs_rd_nomem(r);
    gs_yt_stream_items(t, true);
    return 1;
}

/* What a file may add to the snapshot, to take it back when the file fails (keep_going). */
typedef struct rd_mark {
    size_t nodes, pods, pcs, quotas, pdbs, namespaces, workloads, objs, skipped, templated;
    size_t device_classes, claims, claim_templates, resource_slices;
    uint32_t nskipped, ntemplated, next_index;
    uint32_t *counts; /* skipped counts, then templated counts */
    gs_rd_daemonset *ds_tail;
} rd_mark;

static int mark_take(gs_snapshot *s, gs_rd_state *st, rd_mark *m)
{
    memset(m, 0, sizeof m[0]);
    m->nodes = s->nodes.n;
    m->pods = s->pods.n;
    m->pcs = s->priority_classes.n;
    m->quotas = s->quotas.n;
    m->pdbs = s->pdbs.n;
    m->namespaces = s->namespaces.n;
    m->workloads = s->workloads.n;
    m->device_classes = s->device_classes.n;
    m->claims = s->claims.n;
    m->claim_templates = s->claim_templates.n;
    m->resource_slices = s->resource_slices.n;
    m->objs = st->objs.n;
    m->skipped = s->skipped.n;
    m->templated = s->templated.n;
    m->nskipped = s->nskipped;
    m->ntemplated = s->ntemplated;
    m->next_index = s->next_index;
    m->ds_tail = st->ds_tail;
    if (m->skipped + m->templated) {
        m->counts = malloc((m->skipped + m->templated) * sizeof *m->counts);
        if (!m->counts)
            return -1;
        for (size_t i = 0; i < m->skipped; i++)
            m->counts[i] = s->skipped.v[i].count;
        for (size_t i = 0; i < m->templated; i++)
            m->counts[m->skipped + i] = s->templated.v[i].count;
    }
    return 0;
}

/* The kind lists keep their first n entries; their intern tables are rebuilt to match. */
static int kinds_truncate(gs_intern *ids, void *vecp, size_t n, const uint32_t *counts)
{
    GS_VEC(gs_kind_count) *vec = vecp;
    vec->n = n;
    gs_intern_free(ids);
    gs_intern_init(ids);
    for (size_t i = 0; i < n; i++) {
        vec->v[i].count = counts[i];
        if (gs_intern_id(ids, vec->v[i].kind, strlen(vec->v[i].kind)) != (int32_t)i)
            return -1;
    }
    return 0;
}

static int mark_rollback(gs_snapshot *s, gs_rd_state *st, const rd_mark *m)
{
    s->nodes.n = m->nodes;
    s->pods.n = m->pods;
    s->priority_classes.n = m->pcs;
    s->quotas.n = m->quotas;
    s->pdbs.n = m->pdbs;
    s->namespaces.n = m->namespaces;
    s->workloads.n = m->workloads;
    s->device_classes.n = m->device_classes;
    s->claims.n = m->claims;
    s->claim_templates.n = m->claim_templates;
    s->resource_slices.n = m->resource_slices;
    st->objs.n = m->objs;
    s->nskipped = m->nskipped;
    s->ntemplated = m->ntemplated;
    s->next_index = m->next_index;
    st->ds_tail = m->ds_tail;
    if (m->ds_tail)
        m->ds_tail->next = NULL;
    else
        st->ds_head = NULL;
    if (kinds_truncate(&st->skipped_ids, &s->skipped, m->skipped, m->counts) < 0 ||
        kinds_truncate(&st->templated_ids, &s->templated, m->templated, m->counts ? m->counts + m->skipped : NULL) < 0)
        return -1;
    return 0;
}

/* gs_yt_check_text over the whole input; a mapped input is checked a window at a time,
 * each window's pages let go once checked (the parser faults them back in). */
static int check_input(gs_rd *r, const gs_yt_opts *o, const char *data, size_t len, uint32_t line0,
                       uint32_t col0)
{
    size_t off = 0;
    while (r->map && len - off > RD_WINDOW) {
        size_t n = RD_WINDOW;
        while (n > 0 && ((unsigned char)data[off + n] & 0xC0) == 0x80)
            n--; /* end the window before a character's first byte */
        if (gs_utf8_invalid_at(data + off, n) < n || memchr(data + off, '\0', n))
            break; /* the whole check says where */
        gs_map_release(r->map, data + off + n);
        off += n;
    }
    if (off == 0)
        return gs_yt_check_text(o, data, len, line0 - 1, col0 - 1, r->err);
    if (gs_utf8_invalid_at(data + off, len - off) == len - off && !memchr(data + off, '\0', len - off)) {
        gs_map_release(r->map, data + len);
        return 0;
    }
    return gs_yt_check_text(o, data, len, line0 - 1, col0 - 1, r->err);
}

/* JSON values (concatenated, as `kubectl get -w -o json` prints them) go through the
 * JSON path (gs_yt_parse_json); anything else, and any value that is not strict JSON,
 * through libfyaml as before: a value that closes (brackets and strings balanced) as its
 * own segment, otherwise the rest of the input as one YAML stream.
 *
 * The whole input is checked for well-formed UTF-8 (and no NUL byte) first, before any
 * segment is decoded: YAML and Kubernetes require it, and libfyaml 0.7.12 loops forever
 * on some malformed bytes. */
static void input_opts(gs_rd *r, gs_yt_opts *o)
{
    memset(o, 0, sizeof *o);
    o->file = r->file;
    o->what = "manifests";
    o->max_depth = RD_MAX_DEPTH;
    o->max_nodes = RD_MAX_NODES_PER_DOC;
    o->multi = true;
    o->text_checked = true;
    o->on_doc = on_document;
    o->on_item = on_list_item;
    o->skip = skip_unread;
    o->ctx = r;
}

/* data[0] sits at 1-based (line0, col0) (a pipe's rest after a streamed List). */
static int parse_input(gs_rd *r, const char *data, size_t len, uint32_t line0, uint32_t col0)
{
    gs_yt_opts o;
    input_opts(r, &o);
    size_t i = 0;
    if (line0 == 1 && col0 == 1 && len >= 3 && !memcmp(data, "\xEF\xBB\xBF", 3))
        i = 3; /* UTF-8 byte-order mark */
    if (check_input(r, &o, data + i, len - i, line0, col0) != 0)
        return -1;
    gs_arena scratch;
    gs_arena_init(&scratch, 256 * 1024);
    gs_yt *t = gs_yt_new(&o, &scratch, r->err);
    if (!t) {
        gs_arena_free(&scratch);
        return -1;
    }
    r->released = data;
    gs_jcur cur; /* the position of data[i] (the mark is invisible) */
    gs_jcur_init_text(&cur, data + i, data + len, line0, col0, false);
    const char *end = data + len;
    int rc = 0;
    for (;;) {
        const char *p = gs_js_ws(data + i, end);
        if (p >= end)
            break;
        gs_jcur_move(&cur, p);
        i = (size_t)(p - data);
        if (*p != '{' && *p != '[') {
            rc = gs_yt_parse(t, p, len - i, cur.line - 1, cur.col - 1); /* YAML */
            break;
        }
        size_t used = 0;
        rd_mark m;
        rc = plan_streaming(r, t, p, end);
        if (rc == 1) {
            if (mark_take(r->s, r->st, &m) < 0) {
                rc = gs_rd_nomem(r);
                break;
            }
            rc = gs_yt_parse_json(t, p, len - i, cur.line - 1, cur.col - 1, &used);
            if (rc == 0 && !r->list_confirmed) {
                /* the List kind belonged to a later value: read this one again */
                if (mark_rollback(r->s, r->st, &m) < 0)
                    rc = gs_rd_nomem(r);
                else
                    rc = gs_yt_parse_json(t, p, len - i, cur.line - 1, cur.col - 1, &used);
            }
            free(m.counts);
            r->list_kind = NULL;
        } else if (rc == 0) {
            rc = gs_yt_parse_json(t, p, len - i, cur.line - 1, cur.col - 1, &used);
        }
        if (rc < 0)
            break;
        if (rc == 1) {
            /* not strict JSON: libfyaml reads it (and says what is wrong) */
            used = json_value_end(data, len, i);
            if (used == 0) {
                rc = gs_yt_parse(t, p, len - i, cur.line - 1, cur.col - 1);
                break;
            }
            used -= i;
            rc = gs_yt_parse(t, p, used, cur.line - 1, cur.col - 1);
            if (rc < 0)
                break;
        }
        i += used;
    }
    gs_yt_free(t);
    gs_arena_free(&scratch);
    return rc;
}

/* Before a pipe's first value ('{' at w->buf[0]): walk its top-level members to the '['
 * of "items", reading on (the window doubling, so a long walk stays linear). 1: stream
 * it, with r->list_kind and r->list_inner set when a "kind" came before the items (the
 * order of the API server's own Lists) or r->list_spec when it comes after them
 * (kubectl's order: decided at the end, on_document). 0: read the pipe whole. */
static int plan_window(gs_rd *r, gs_window *w)
{
    for (;;) {
        const char *p = w->buf + 1, *end = w->buf + w->len, *q, *bad, *k = NULL;
        size_t kl = 0;
        bool esc, deep;
        for (;;) {
            p = gs_js_ws(p, end);
            if (p >= end)
                goto more;
            if (*p != '"')
                return 0;
            esc = false;
            if (!(q = gs_js_str_end(p + 1, end, &esc, &bad))) {
                if (bad >= end)
                    goto more;
                return 0;
            }
            const char *key = p + 1;
            size_t keyl = (size_t)(q - key);
            bool plain = !esc;
            p = gs_js_ws(q + 1, end);
            if (p >= end)
                goto more;
            if (*p != ':')
                return 0;
            p = gs_js_ws(p + 1, end);
            if (p >= end)
                goto more;
            if (plain && keyl == 5 && !memcmp(key, "items", 5)) {
                if (*p != '[')
                    return 0;
                if (k && (kl < 4 || memcmp(k + kl - 4, "List", 4) != 0))
                    return 0; /* not a List: read whole, as a file would be */
                if (k) {
                    r->list_kind = gs_rd_intern(r, k, kl);
                    r->list_inner = kl == 4 ? NULL : gs_rd_intern(r, k, kl - 4);
                    if (!r->list_kind || (kl > 4 && !r->list_inner))
                        return gs_rd_nomem(r);
                } else {
                    r->list_spec = true;
                }
                return 1;
            }
            if (*p == '{' || *p == '[') {
                if (!(q = gs_js_skip(p, end, 0, &bad, &deep))) {
                    if (bad >= end)
                        goto more;
                    return 0;
                }
            } else if (*p == '"') {
                esc = false;
                if (!(q = gs_js_str_end(p + 1, end, &esc, &bad))) {
                    if (bad >= end)
                        goto more;
                    return 0;
                }
                if (plain && keyl == 4 && !memcmp(key, "kind", 4)) {
                    k = esc ? NULL : p + 1;
                    kl = (size_t)(q - p - 1);
                    if (esc)
                        return 0;
                }
                q++;
            } else {
                q = p;
                while (q < end && *q != ',' && *q != '}' && *q != ' ' && *q != '\n' && *q != '\r' &&
                       *q != '\t')
                    q++;
            }
            p = gs_js_ws(q, end);
            if (p >= end)
                goto more;
            if (*p != ',')
                return 0;
            p++;
        }
    more:
        if (w->eof || w->bad)
            return 0;
        if (gs_window_fill(w, w->len * 2, r->err) != 0)
            return -1;
    }
}

/* A held item, wrapped in brackets: the sequence's one child is the item. */
static int held_doc(void *ctx, const gs_yn *root)
{
    gs_rd *r = ctx;
    if (root->type != GS_YN_SEQ || root->len != 1)
        return gs_fail(r->err, GS_ERR_INTERNAL, "held List item read back wrong");
    return on_list_item(r, root->u.first, r->hold_index, NULL);
}

/* The items held in the window (r->spec_hold) once the List's kind is known: each read
 * again at its own position, in order, and decoded as on_list_item would have. The
 * document parsed already, so every item is strict JSON. */
static int read_held(gs_rd *r, gs_window *w)
{
    gs_yt_opts o;
    input_opts(r, &o);
    o.on_doc = held_doc;
    gs_arena scratch;
    gs_arena_init(&scratch, 64 * 1024);
    gs_yt *t = gs_yt_new(&o, &scratch, r->err);
    if (!t) {
        gs_arena_free(&scratch);
        return -1;
    }
    gs_jcur cur;
    gs_jcur_init_text(&cur, w->buf, w->buf + w->len, w->line, w->col, false);
    const char *p = w->buf + r->hold_off, *end = w->buf + w->len;
    char *copy = NULL;
    size_t cap = 0;
    int rc = 0;
    for (;;) {
        gs_js_scan sc = {0, GS_JSS_BEFORE};
        const char *q = gs_js_scan_feed(&sc, p, end), *e = q;
        if (!q)
            break;
        while (e > p && (e[-1] == ' ' || e[-1] == '\n' || e[-1] == '\r' || e[-1] == '\t'))
            e--;
        size_t n = (size_t)(e - p);
        if (n + 2 > cap) {
            char *c = realloc(copy, n + 2);
            if (!c) {
                rc = gs_rd_nomem(r);
                break;
            }
            copy = c;
            cap = n + 2;
        }
        copy[0] = '[';
        memcpy(copy + 1, p, n);
        copy[n + 1] = ']';
        gs_jcur_move(&cur, p);
        size_t used;
        /* the '[' one column before the item (columns wrap around: uint32_t) */
        rc = gs_yt_parse_json(t, copy, n + 2, cur.line - 1, cur.col - 2, &used);
        if (rc != 0) {
            if (rc == 1)
                rc = gs_fail(r->err, GS_ERR_INTERNAL, "held List item read back wrong");
            break;
        }
        r->hold_index++;
        if (*q != ',')
            break;
        p = gs_js_ws(q + 1, end);
    }
    free(copy);
    gs_yt_free(t);
    gs_arena_free(&scratch);
    return rc;
}

/* A pipe (gs_window): a JSON List streamed through the window (memory: the snapshot, one
 * item and one read), whatever else read whole, as parse_input reads a file. */
static int parse_stream(gs_rd *r, gs_window *w)
{
    if (gs_window_fill(w, 3, r->err) != 0)
        return -1;
    if (w->len >= 3 && !memcmp(w->buf, "\xEF\xBB\xBF", 3)) {
        gs_window_drop(w, 3);
        w->col = 1; /* the mark is invisible */
    }
    size_t i = 0;
    for (;;) {
        i = (size_t)(gs_js_ws(w->buf + i, w->buf + w->len) - w->buf);
        if (i < w->len || w->eof || w->bad)
            break;
        if (gs_window_more(w, r->err) != 0)
            return -1;
    }
    gs_window_drop(w, i);
    int plan = 0;
    r->list_kind = NULL;
    r->list_inner = NULL;
    r->list_spec = false;
    r->spec_root = NULL;
    r->spec_hold = false;
    r->win = w;
    r->list_confirmed = false;
    if (w->len && w->buf[0] == '{' && !w->bad && (plan = plan_window(r, w)) < 0)
        return -1;
    if (plan == 1) {
        gs_yt_opts o;
        input_opts(r, &o);
        gs_arena scratch;
        gs_arena_init(&scratch, 256 * 1024);
        gs_yt *t = gs_yt_new(&o, &scratch, r->err);
        if (!t) {
            gs_arena_free(&scratch);
            return -1;
        }
        rd_mark m;
        size_t end_off = 0;
        int rc = mark_take(r->s, r->st, &m) < 0 ? gs_rd_nomem(r) : 0;
        if (rc == 0) {
            gs_yt_stream_items(t, true);
            rc = gs_yt_parse_json_window(t, w, 0, w->line - 1, w->col - 1, &end_off);
        }
        if (rc == 0 && r->spec_root) {
            /* not a List after all: its items are taken back, the root decoded alone */
            if (mark_rollback(r->s, r->st, &m) < 0)
                rc = gs_rd_nomem(r);
            else
                rc = decode_document(r, r->spec_root);
        } else if (rc == 0 && r->spec_hold) {
            rc = read_held(r, w);
        }
        free(m.counts);
        gs_yt_free(t);
        gs_arena_free(&scratch);
        r->list_kind = NULL;
        r->list_spec = false;
        r->spec_root = NULL;
        r->spec_hold = false;
        if (rc < 0)
            return -1;
        if (rc == 0)
            gs_window_drop(w, end_off);
        /* rc 1: not strict JSON, nothing handed out or dropped: read whole below */
    }
    while (!w->eof && !w->bad)
        if (gs_window_more(w, r->err) != 0)
            return -1;
    return parse_input(r, w->buf ? w->buf : "", w->len, w->line, w->col);
}

/* ================================================================ field helpers */

static const gs_yn *lookup(const gs_yn *m, const char *key)
{
    if (!m || m->type != GS_YN_MAP)
        return NULL;
    size_t kl = strlen(key);
    for (const gs_yn *k = m->u.first; k; k = k->next->next)
        if (k->len == kl && memcmp(k->u.text, key, kl) == 0)
            return k->next;
    return NULL;
}

const gs_yn *gs_rd_get(const gs_yn *m, const char *key)
{
    const gs_yn *v = lookup(m, key);
    return v && !(v->type == GS_YN_SCALAR && v->null) ? v : NULL;
}

static int expect_type(gs_rd *r, const gs_yn *n, uint8_t type)
{
    if (n->type == type)
        return 0;
    char b[RD_TEXT_SHOWN + 8];
    return gs_rd_fail(r, n, GS_ERR_INVALID, "expected %s, got %s",
                      type == GS_YN_MAP ? "a mapping" : "a sequence", describe(n, b, sizeof b));
}

int gs_rd_expect_map(gs_rd *r, const gs_yn *n) { return expect_type(r, n, GS_YN_MAP); }

static int typed_field(gs_rd *r, const gs_yn *m, const char *key, uint8_t type, const gs_yn **out)
{
    const gs_yn *v = gs_rd_get(m, key);
    *out = NULL;
    if (!v)
        return 0;
    if (v->type != type) {
        gs_rd_push(r, key);
        return expect_type(r, v, type);
    }
    *out = v;
    return 0;
}

int gs_rd_map(gs_rd *r, const gs_yn *m, const char *key, const gs_yn **out)
{
    return typed_field(r, m, key, GS_YN_MAP, out);
}

int gs_rd_seq(gs_rd *r, const gs_yn *m, const char *key, const gs_yn **out)
{
    return typed_field(r, m, key, GS_YN_SEQ, out);
}

const char *gs_rd_intern(gs_rd *r, const char *s, size_t n)
{
    gs_rd_state *st = r->st;
    int32_t id = gs_intern_id(&st->strings, s, n);
    if (id < 0)
        return NULL;
    if ((size_t)id == st->interned.n) {
        char *c = gs_arena_strndup(&r->s->arena, s, n);
        if (!c || gs_vec_push(st->interned, c) < 0)
            return NULL;
    } else if ((size_t)id > st->interned.n) {
        return NULL; /* an earlier allocation failed half-way */
    }
    return st->interned.v[id];
}

/* Text of a scalar node as an arena string (interned or copied). */
static int node_text(gs_rd *r, const gs_yn *n, bool intern, const char **out)
{
    if (n->type != GS_YN_SCALAR) {
        char b[RD_TEXT_SHOWN + 8];
        return gs_rd_fail(r, n, GS_ERR_INVALID, "expected a string, got %s", describe(n, b, sizeof b));
    }
    if (n->null) {
        *out = "";
        return 0;
    }
    const char *s = intern ? gs_rd_intern(r, n->u.text, n->len)
                           : gs_arena_strndup(&r->s->arena, n->u.text, n->len);
    if (!s)
        return gs_rd_nomem(r);
    *out = s;
    return 0;
}

static int str_field(gs_rd *r, const gs_yn *m, const char *key, const char *dflt, bool intern,
                     const char **out)
{
    const gs_yn *v = gs_rd_get(m, key);
    if (!v) {
        *out = dflt;
        return 0;
    }
    size_t mark = gs_rd_push(r, key);
    if (node_text(r, v, intern, out) < 0)
        return -1;
    gs_rd_pop(r, mark);
    return 0;
}

int gs_rd_str(gs_rd *r, const gs_yn *m, const char *key, const char *dflt, const char **out)
{
    return str_field(r, m, key, dflt, false, out);
}

static bool text_is(const gs_yn *n, const char *s)
{
    size_t l = strlen(s);
    return n->type == GS_YN_SCALAR && n->len == l && memcmp(n->u.text, s, l) == 0;
}

/* Integer node: an unquoted decimal scalar within [min, max]. */
static int node_int(gs_rd *r, const gs_yn *v, int64_t min, int64_t max, int64_t *out)
{
    char b[RD_TEXT_SHOWN + 8];
    if (v->type != GS_YN_SCALAR)
        return gs_rd_fail(r, v, GS_ERR_INVALID, "expected an integer, got %s", describe(v, b, sizeof b));
    if (!v->plain)
        return gs_rd_fail(r, v, GS_ERR_INVALID, "expected an integer, got the string %s",
                          shown_text(v, b, sizeof b));
    int64_t x;
    if (gs_parse_i64(v->u.text, v->len, &x) < 0)
        return gs_rd_fail(r, v, GS_ERR_INVALID, "expected an integer, got %s", shown_text(v, b, sizeof b));
    if (x < min || x > max) {
        if (min == 0 && max >= INT32_MAX)
            return gs_rd_fail(r, v, GS_ERR_INVALID, "must be greater than or equal to 0, got %lld",
                              (long long)x);
        return gs_rd_fail(r, v, GS_ERR_INVALID, "must be between %lld and %lld, got %lld",
                          (long long)min, (long long)max, (long long)x);
    }
    *out = x;
    return 0;
}

int gs_rd_int(gs_rd *r, const gs_yn *m, const char *key, int64_t min, int64_t max, bool *has,
              int64_t *out)
{
    const gs_yn *v = gs_rd_get(m, key);
    if (has)
        *has = v != NULL;
    if (!v)
        return 0;
    size_t mark = gs_rd_push(r, key);
    if (node_int(r, v, min, max, out) < 0)
        return -1;
    gs_rd_pop(r, mark);
    return 0;
}

/* YAML 1.1 booleans as sigs.k8s.io/yaml accepts them. */
int gs_rd_bool(gs_rd *r, const gs_yn *m, const char *key, bool *out)
{
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N"};
    const gs_yn *v = gs_rd_get(m, key);
    if (!v)
        return 0;
    if (v->type == GS_YN_SCALAR && v->plain) {
        for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
            if (text_is(v, yes[i])) {
                *out = true;
                return 0;
            }
            if (text_is(v, no[i])) {
                *out = false;
                return 0;
            }
        }
    }
    char b[RD_TEXT_SHOWN + 8];
    gs_rd_push(r, key);
    return gs_rd_fail(r, v, GS_ERR_INVALID, "expected a boolean (true or false), got %s%s",
                      v->type == GS_YN_SCALAR && !v->plain ? "the string " : "", describe(v, b, sizeof b));
}

/* RFC3339 timestamp field. */
static int time_field(gs_rd *r, const gs_yn *m, const char *key, bool *has, int64_t *out)
{
    const gs_yn *v = gs_rd_get(m, key);
    *has = false;
    if (!v)
        return 0;
    char buf[64];
    if (v->type == GS_YN_SCALAR && v->len < sizeof buf) {
        memcpy(buf, v->u.text, v->len);
        buf[v->len] = '\0';
        if (strlen(buf) == v->len && gs_parse_rfc3339(buf, out) == 0) {
            *has = true;
            return 0;
        }
    }
    char b[RD_TEXT_SHOWN + 8];
    gs_rd_push(r, key);
    return gs_rd_fail(r, v, GS_ERR_INVALID,
                      "expected an RFC3339 timestamp like \"2024-05-01T10:00:00Z\", got %s",
                      describe(v, b, sizeof b));
}

int gs_rd_reserve_objects(gs_rd *r, const gs_yn *at, uint64_t n)
{
    if ((uint64_t)r->s->next_index + n > r->max_objects)
        return gs_rd_fail(r, at, GS_ERR_LIMIT, "more than %u objects (the max_objects limit)",
                          r->max_objects);
    return 0;
}

/* ================================================================ maps and lists */

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const gs_kv *)a)->key, ((const gs_kv *)b)->key);
}

static int res_cmp(const void *a, const void *b)
{
    return strcmp(((const gs_res *)a)->name, ((const gs_res *)b)->name);
}

/* Find the map key node whose text equals s (for positions of duplicate errors). */
static const gs_yn *key_node(const gs_yn *m, const char *s)
{
    size_t l = strlen(s);
    for (const gs_yn *k = m->u.first; k; k = k->next->next)
        if (k->len == l && memcmp(k->u.text, s, l) == 0)
            return k;
    return m;
}

/* String map (labels, annotations, nodeSelector, matchLabels): sorted by key. Values may be
 * any scalar (its text); null values read as "". */
static int labels_field(gs_rd *r, const gs_yn *parent, const char *key, gs_labels *out)
{
    const gs_yn *m;
    out->items = NULL;
    out->n = 0;
    if (gs_rd_map(r, parent, key, &m) < 0)
        return -1;
    if (!m || m->len == 0)
        return 0;
    size_t mark = gs_rd_push(r, key);
    gs_kv *items = gs_arena_alloc(&r->s->arena, sizeof *items * m->len);
    if (!items)
        return gs_rd_nomem(r);
    uint32_t i = 0;
    for (const gs_yn *k = m->u.first; k; k = k->next->next, i++) {
        const char *ks;
        if (node_text(r, k, true, &ks) < 0)
            return -1;
        size_t km = gs_rd_push_key(r, k->u.text, k->len);
        if (node_text(r, k->next, false, &items[i].val) < 0)
            return -1;
        gs_rd_pop(r, km);
        items[i].key = ks;
    }
    qsort(items, m->len, sizeof *items, kv_cmp);
    for (i = 1; i < m->len; i++)
        if (strcmp(items[i - 1].key, items[i].key) == 0) {
            gs_rd_push_key(r, items[i].key, strlen(items[i].key));
            return gs_rd_fail(r, key_node(m, items[i].key), GS_ERR_INVALID, "duplicate key");
        }
    out->items = items;
    out->n = m->len;
    gs_rd_pop(r, mark);
    return 0;
}

/* Resource list (requests, limits, capacity, hard, ...): name -> quantity, sorted. */
static int reslist_field(gs_rd *r, const gs_yn *parent, const char *key, gs_reslist *out)
{
    const gs_yn *m;
    out->items = NULL;
    out->n = 0;
    if (gs_rd_map(r, parent, key, &m) < 0)
        return -1;
    if (!m || m->len == 0)
        return 0;
    size_t mark = gs_rd_push(r, key);
    gs_res *items = gs_arena_alloc(&r->s->arena, sizeof *items * m->len);
    if (!items)
        return gs_rd_nomem(r);
    uint32_t i = 0;
    for (const gs_yn *k = m->u.first; k; k = k->next->next, i++) {
        const gs_yn *v = k->next;
        if (node_text(r, k, true, &items[i].name) < 0)
            return -1;
        size_t km = gs_rd_push_key(r, k->u.text, k->len);
        char b[RD_TEXT_SHOWN + 8];
        if (v->type != GS_YN_SCALAR)
            return gs_rd_fail(r, v, GS_ERR_INVALID, "expected a quantity (a string or number), got %s",
                              describe(v, b, sizeof b));
        if (v->null) {
            items[i].q = gs_quantity_from_int(0, GS_QF_DECIMAL_SI);
        } else {
            gs_error qe;
            gs_error_clear(&qe);
            if (gs_quantity_parse(v->u.text, v->len, &items[i].q, &qe) < 0)
                return gs_rd_fail(r, v, qe.code == GS_OK ? GS_ERR_INVALID : qe.code,
                                  "invalid quantity %s: %s", shown_text(v, b, sizeof b), qe.msg);
        }
        gs_rd_pop(r, km);
    }
    qsort(items, m->len, sizeof *items, res_cmp);
    for (i = 1; i < m->len; i++)
        if (strcmp(items[i - 1].name, items[i].name) == 0) {
            gs_rd_push_key(r, items[i].name, strlen(items[i].name));
            return gs_rd_fail(r, key_node(m, items[i].name), GS_ERR_INVALID, "duplicate resource");
        }
    out->items = items;
    out->n = m->len;
    gs_rd_pop(r, mark);
    return 0;
}

/* Limits-only defaulting: every limit without a request becomes the request too. Both
 * lists are sorted, so one merge pass builds the new request list. */
static int default_requests_from_limits(gs_rd *r, gs_reslist *req, const gs_reslist *lim)
{
    uint32_t missing = 0;
    for (uint32_t i = 0; i < lim->n; i++)
        if (!gs_reslist_get(req, lim->items[i].name))
            missing++;
    if (!missing)
        return 0;
    uint32_t n = req->n + missing;
    gs_res *out = gs_arena_alloc(&r->s->arena, sizeof *out * n);
    if (!out)
        return gs_rd_nomem(r);
    uint32_t a = 0, b = 0, o = 0;
    while (a < req->n || b < lim->n) {
        int c = a == req->n ? 1 : b == lim->n ? -1 : strcmp(req->items[a].name, lim->items[b].name);
        if (c < 0) {
            out[o++] = req->items[a++];
        } else if (c > 0) {
            out[o++] = lim->items[b++];
        } else {
            out[o++] = req->items[a++];
            b++;
        }
    }
    req->items = out;
    req->n = o;
    return 0;
}

/* Array of n elements of size sz in the arena, or NULL when n is 0. */
static void *arena_array(gs_rd *r, size_t n, size_t sz, bool *oom)
{
    *oom = false;
    if (!n)
        return NULL;
    void *p = gs_arena_alloc(&r->s->arena, n * sz);
    if (!p)
        *oom = true;
    return p;
}

/* ================================================================ selectors */

static const struct {
    const char *name;
    gs_sel_op op;
} sel_ops[] = {
    {"In", GS_SEL_IN},       {"NotIn", GS_SEL_NOT_IN}, {"Exists", GS_SEL_EXISTS},
    {"DoesNotExist", GS_SEL_DOES_NOT_EXIST}, {"Gt", GS_SEL_GT}, {"Lt", GS_SEL_LT},
};

/* One requirement {key|scopeName, operator, values}. with_gt_lt: node selectors accept Gt
 * and Lt; label and scope selectors do not. */
static int sel_req(gs_rd *r, const gs_yn *n, const char *key_field, bool with_gt_lt, gs_sel_req *out)
{
    if (gs_rd_expect_map(r, n) < 0)
        return -1;
    const gs_yn *k = gs_rd_get(n, key_field);
    if (!k) {
        gs_rd_push(r, key_field);
        return gs_rd_fail(r, n, GS_ERR_INVALID, "required field is missing");
    }
    if (str_field(r, n, key_field, "", true, &out->key) < 0)
        return -1;
    const gs_yn *o = gs_rd_get(n, "operator");
    size_t mark = gs_rd_push(r, "operator");
    if (!o)
        return gs_rd_fail(r, n, GS_ERR_INVALID, "required field is missing");
    size_t nops = with_gt_lt ? 6 : 4;
    out->op = GS_SEL_INVALID;
    for (size_t i = 0; i < nops; i++)
        if (text_is(o, sel_ops[i].name))
            out->op = sel_ops[i].op;
    if (out->op == GS_SEL_INVALID) {
        char b[RD_TEXT_SHOWN + 8];
        return gs_rd_fail(r, o, GS_ERR_INVALID, "unknown operator %s (expected In, NotIn, Exists, DoesNotExist%s)",
                          describe(o, b, sizeof b), with_gt_lt ? ", Gt, Lt" : "");
    }
    gs_rd_pop(r, mark);
    const gs_yn *vals;
    if (gs_rd_seq(r, n, "values", &vals) < 0)
        return -1;
    out->values = NULL;
    out->nvalues = 0;
    if (vals && vals->len) {
        bool oom;
        out->values = arena_array(r, vals->len, sizeof *out->values, &oom);
        if (oom)
            return gs_rd_nomem(r);
        mark = gs_rd_push(r, "values");
        uint32_t i = 0;
        for (const gs_yn *v = vals->u.first; v; v = v->next, i++) {
            size_t item_mark = gs_rd_push_index(r, i);
            if (node_text(r, v, false, &out->values[i]) < 0)
                return -1;
            gs_rd_pop(r, item_mark);
        }
        gs_rd_pop(r, mark);
        out->nvalues = vals->len;
    }
    return 0;
}

static int sel_reqs(gs_rd *r, const gs_yn *parent, const char *key, const char *key_field,
                    bool with_gt_lt, gs_sel_req **out, uint32_t *nout)
{
    const gs_yn *seq;
    *out = NULL;
    *nout = 0;
    if (gs_rd_seq(r, parent, key, &seq) < 0)
        return -1;
    if (!seq || !seq->len)
        return 0;
    bool oom;
    gs_sel_req *reqs = arena_array(r, seq->len, sizeof *reqs, &oom);
    if (oom)
        return gs_rd_nomem(r);
    size_t mark = gs_rd_push(r, key);
    uint32_t i = 0;
    for (const gs_yn *item = seq->u.first; item; item = item->next, i++) {
        size_t item_mark = gs_rd_push_index(r, i);
        if (sel_req(r, item, key_field, with_gt_lt, &reqs[i]) < 0)
            return -1;
        gs_rd_pop(r, item_mark);
    }
    gs_rd_pop(r, mark);
    *out = reqs;
    *nout = seq->len;
    return 0;
}

static int sel_term(gs_rd *r, const gs_yn *n, gs_sel_term *t)
{
    if (gs_rd_expect_map(r, n) < 0)
        return -1;
    if (sel_reqs(r, n, "matchExpressions", "key", true, &t->exprs, &t->nexprs) < 0)
        return -1;
    return sel_reqs(r, n, "matchFields", "key", true, &t->fields, &t->nfields);
}

static int label_selector(gs_rd *r, const gs_yn *parent, const char *key, gs_label_selector *out)
{
    const gs_yn *m;
    memset(out, 0, sizeof *out);
    if (gs_rd_map(r, parent, key, &m) < 0)
        return -1;
    if (!m)
        return 0;
    out->present = true;
    size_t mark = gs_rd_push(r, key);
    if (labels_field(r, m, "matchLabels", &out->match_labels) < 0 ||
        sel_reqs(r, m, "matchExpressions", "key", false, &out->exprs, &out->nexprs) < 0)
        return -1;
    gs_rd_pop(r, mark);
    return 0;
}

/* A core NodeSelector mapping {nodeSelectorTerms: [...]} (the path names it). */
static int node_selector(gs_rd *r, const gs_yn *req, gs_node_selector **out)
{
    gs_node_selector *ns = gs_arena_alloc(&r->s->arena, sizeof *ns);
    const gs_yn *terms;
    if (!ns)
        return gs_rd_nomem(r);
    memset(ns, 0, sizeof *ns);
    if (gs_rd_seq(r, req, "nodeSelectorTerms", &terms) < 0)
        return -1;
    if (terms && terms->len) {
        bool oom;
        ns->terms = arena_array(r, terms->len, sizeof *ns->terms, &oom);
        if (oom)
            return gs_rd_nomem(r);
        size_t m4 = gs_rd_push(r, "nodeSelectorTerms");
        uint32_t i = 0;
        for (const gs_yn *t = terms->u.first; t; t = t->next, i++) {
            size_t item_mark = gs_rd_push_index(r, i);
            if (sel_term(r, t, &ns->terms[i]) < 0)
                return -1;
            gs_rd_pop(r, item_mark);
        }
        gs_rd_pop(r, m4);
        ns->nterms = terms->len;
    }
    *out = ns;
    return 0;
}

/* ---------------------------------------------------------------- for read_dra.c */

const char *gs_rd_describe(const gs_yn *n, char *buf, size_t cap) { return describe(n, buf, cap); }
int gs_rd_text(gs_rd *r, const gs_yn *n, bool intern, const char **out) { return node_text(r, n, intern, out); }
int gs_rd_istr(gs_rd *r, const gs_yn *m, const char *key, const char *dflt, const char **out)
{
    return str_field(r, m, key, dflt, true, out);
}
bool gs_rd_text_is(const gs_yn *n, const char *s) { return text_is(n, s); }
void *gs_rd_array(gs_rd *r, size_t n, size_t sz, bool *oom) { return arena_array(r, n, sz, oom); }

int gs_rd_quantity(gs_rd *r, const gs_yn *v, gs_quantity *q)
{
    char b[RD_TEXT_SHOWN + 8];
    if (v->type != GS_YN_SCALAR || v->null)
        return gs_rd_fail(r, v, GS_ERR_INVALID, "expected a quantity (a string or number), got %s",
                          v->type == GS_YN_SCALAR ? "null" : describe(v, b, sizeof b));
    gs_error qe;
    gs_error_clear(&qe);
    if (gs_quantity_parse(v->u.text, v->len, q, &qe) < 0)
        return gs_rd_fail(r, v, qe.code == GS_OK ? GS_ERR_INVALID : qe.code, "invalid quantity %s: %s",
                          shown_text(v, b, sizeof b), qe.msg);
    return 0;
}

int gs_rd_node_selector(gs_rd *r, const gs_yn *m, const char *key, const gs_node_selector **out)
{
    const gs_yn *v;
    *out = NULL;
    if (gs_rd_map(r, m, key, &v) < 0)
        return -1;
    if (!v)
        return 0;
    size_t mark = gs_rd_push(r, key);
    gs_node_selector *ns;
    if (node_selector(r, v, &ns) < 0)
        return -1;
    gs_rd_pop(r, mark);
    *out = ns;
    return 0;
}

/* ================================================================ metadata */

void gs_rd_set_object(gs_rd *r, const char *kind, const gs_yn *obj, bool namespaced)
{
    const gs_yn *md = gs_rd_get(obj, "metadata");
    const gs_yn *name = gs_rd_get(md, "name");
    if (!name || name->type != GS_YN_SCALAR)
        name = gs_rd_get(md, "generateName");
    const gs_yn *ns = gs_rd_get(md, "namespace");
    const char *nm = "(unnamed)";
    size_t nl = 9;
    if (name && name->type == GS_YN_SCALAR) {
        nm = name->u.text;
        nl = name->len > 90 ? 90 : name->len;
    }
    const char *nsn = "default";
    size_t nsl = 7;
    if (ns && ns->type == GS_YN_SCALAR && ns->len) {
        nsn = ns->u.text;
        nsl = ns->len > 63 ? 63 : ns->len;
    }
    /* "Kind namespace/name" or "Kind name" (runs once per object: no printf) */
    size_t kl = strlen(kind) > 30 ? 30 : strlen(kind), o = 0;
    memcpy(r->obj, kind, kl);
    o = kl;
    r->obj[o++] = ' ';
    if (namespaced) {
        memcpy(r->obj + o, nsn, nsl);
        o += nsl;
        r->obj[o++] = '/';
    }
    memcpy(r->obj + o, nm, nl);
    o += nl;
    r->obj[o] = '\0';
    r->plen = 0;
    r->path[0] = '\0';
}

static int meta_labels(gs_rd *r, const gs_yn *md, gs_meta *m)
{
    if (labels_field(r, md, "labels", &m->labels) < 0)
        return -1;
    return labels_field(r, md, "annotations", &m->annotations);
}

int gs_rd_template_meta(gs_rd *r, const gs_yn *tmeta, gs_meta *m)
{
    if (!tmeta)
        return 0;
    size_t mark = gs_rd_push(r, "metadata");
    if (meta_labels(r, tmeta, m) < 0)
        return -1;
    gs_rd_pop(r, mark);
    return 0;
}

int gs_rd_meta(gs_rd *r, const gs_yn *obj, bool namespaced, gs_meta *m)
{
    memset(m, 0, sizeof *m);
    m->src = r->no_positions ? (gs_src){r->file, 0, 0} : (gs_src){r->file, obj->line, obj->col};
    m->name = m->generate_name = m->uid = "";
    m->namespace_ = namespaced ? "default" : "";
    const gs_yn *md;
    if (gs_rd_map(r, obj, "metadata", &md) < 0)
        return -1;
    if (!md)
        return 0;
    size_t mark = gs_rd_push(r, "metadata");
    if (gs_rd_str(r, md, "name", "", &m->name) < 0 ||
        gs_rd_str(r, md, "generateName", "", &m->generate_name) < 0 ||
        gs_rd_str(r, md, "uid", "", &m->uid) < 0)
        return -1;
    if (namespaced) {
        if (str_field(r, md, "namespace", "default", true, &m->namespace_) < 0)
            return -1;
        if (!m->namespace_[0])
            m->namespace_ = "default";
    }
    if (meta_labels(r, md, m) < 0 || time_field(r, md, "creationTimestamp", &m->has_creation, &m->creation) < 0)
        return -1;
    int64_t when;
    if (time_field(r, md, "deletionTimestamp", &m->deleting, &when) < 0)
        return -1;
    const gs_yn *owners;
    if (gs_rd_seq(r, md, "ownerReferences", &owners) < 0)
        return -1;
    if (owners && owners->len) {
        size_t om = gs_rd_push(r, "ownerReferences");
        gs_rd_push_index(r, 0);
        const gs_yn *o = owners->u.first;
        if (gs_rd_expect_map(r, o) < 0 || str_field(r, o, "kind", NULL, true, &m->owner_kind) < 0 ||
            gs_rd_str(r, o, "name", NULL, &m->owner_name) < 0)
            return -1;
        gs_rd_pop(r, om);
    }
    gs_rd_pop(r, mark);
    return 0;
}

/* ================================================================ Pod */

static int preempt_policy(gs_rd *r, const gs_yn *m, gs_preempt_policy *out)
{
    const gs_yn *v = gs_rd_get(m, "preemptionPolicy");
    *out = GS_PREEMPT_UNSET;
    if (!v)
        return 0;
    if (text_is(v, "PreemptLowerPriority")) {
        *out = GS_PREEMPT_LOWER_PRIORITY;
        return 0;
    }
    if (text_is(v, "Never")) {
        *out = GS_PREEMPT_NEVER;
        return 0;
    }
    char b[RD_TEXT_SHOWN + 8];
    gs_rd_push(r, "preemptionPolicy");
    return gs_rd_fail(r, v, GS_ERR_INVALID,
                      "unknown preemption policy %s (expected PreemptLowerPriority, Never)",
                      describe(v, b, sizeof b));
}

/* resources.claims[] {name, request}: which of the pod's claims the container uses (the
 * names are checked against spec.resourceClaims by pod_claims_check). */
static int container_claims(gs_rd *r, const gs_yn *res, gs_container *out)
{
    const gs_yn *seq;
    if (gs_rd_seq(r, res, "claims", &seq) < 0)
        return -1;
    if (!seq || !seq->len)
        return 0;
    bool oom;
    out->claims = arena_array(r, seq->len, sizeof *out->claims, &oom);
    if (oom || !(out->claim_requests = arena_array(r, seq->len, sizeof *out->claim_requests, &oom)))
        return gs_rd_nomem(r);
    size_t mark = gs_rd_push(r, "claims");
    uint32_t i = 0;
    for (const gs_yn *c = seq->u.first; c; c = c->next, i++) {
        size_t im = gs_rd_push_index(r, i);
        if (gs_rd_expect_map(r, c) < 0 || str_field(r, c, "name", "", true, &out->claims[i]) < 0 ||
            str_field(r, c, "request", "", true, &out->claim_requests[i]) < 0)
            return -1;
        if (!out->claims[i][0])
            return gs_rd_missing(r, gs_rd_get(c, "name") ? gs_rd_get(c, "name") : c, "name",
                                 "the name of one of the pod's spec.resourceClaims");
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(out->claims[j], out->claims[i]) && !strcmp(out->claim_requests[j], out->claim_requests[i]))
                return gs_rd_fail(r, c, GS_ERR_INVALID, "duplicate entry (claim \"%s\"%s%s%s)", out->claims[i],
                                  out->claim_requests[i][0] ? ", request \"" : "", out->claim_requests[i],
                                  out->claim_requests[i][0] ? "\"" : "");
        gs_rd_pop(r, im);
    }
    gs_rd_pop(r, mark);
    out->nclaims = seq->len;
    return 0;
}

static int container(gs_rd *r, const gs_yn *c, bool init, gs_container *out)
{
    if (gs_rd_expect_map(r, c) < 0 || gs_rd_str(r, c, "name", "", &out->name) < 0 ||
        str_field(r, c, "image", "", true, &out->image) < 0)
        return -1;
    const gs_yn *res;
    if (gs_rd_map(r, c, "resources", &res) < 0)
        return -1;
    if (res) {
        size_t mark = gs_rd_push(r, "resources");
        if (reslist_field(r, res, "requests", &out->requests) < 0 ||
            reslist_field(r, res, "limits", &out->limits) < 0 ||
            default_requests_from_limits(r, &out->requests, &out->limits) < 0 ||
            container_claims(r, res, out) < 0)
            return -1;
        gs_rd_pop(r, mark);
    }
    if (init) {
        const char *policy;
        if (gs_rd_str(r, c, "restartPolicy", "", &policy) < 0)
            return -1;
        out->sidecar = strcmp(policy, "Always") == 0;
    }
    return 0;
}

static int containers(gs_rd *r, const gs_yn *spec, const char *key, bool init, gs_container **out,
                      uint32_t *nout)
{
    const gs_yn *seq;
    *out = NULL;
    *nout = 0;
    if (gs_rd_seq(r, spec, key, &seq) < 0)
        return -1;
    if (!seq || !seq->len)
        return 0;
    bool oom;
    gs_container *cs = arena_array(r, seq->len, sizeof *cs, &oom);
    if (oom)
        return gs_rd_nomem(r);
    size_t mark = gs_rd_push(r, key);
    uint32_t i = 0;
    for (const gs_yn *item = seq->u.first; item; item = item->next, i++) {
        size_t item_mark = gs_rd_push_index(r, i);
        if (container(r, item, init, &cs[i]) < 0)
            return -1;
        gs_rd_pop(r, item_mark);
    }
    gs_rd_pop(r, mark);
    *out = cs;
    *nout = seq->len;
    return 0;
}

static gs_effect effect_of(const char *s)
{
    if (!s[0])
        return GS_EFFECT_ANY;
    if (!strcmp(s, "NoSchedule"))
        return GS_EFFECT_NO_SCHEDULE;
    if (!strcmp(s, "PreferNoSchedule"))
        return GS_EFFECT_PREFER_NO_SCHEDULE;
    if (!strcmp(s, "NoExecute"))
        return GS_EFFECT_NO_EXECUTE;
    return GS_EFFECT_INVALID;
}

static gs_tol_op tol_op_of(const char *s)
{
    if (!s[0] || !strcmp(s, "Equal"))
        return GS_TOL_EQUAL;
    if (!strcmp(s, "Exists"))
        return GS_TOL_EXISTS;
    if (!strcmp(s, "Lt"))
        return GS_TOL_LT;
    if (!strcmp(s, "Gt"))
        return GS_TOL_GT;
    return GS_TOL_OTHER;
}

static int tolerations(gs_rd *r, const gs_yn *spec, gs_pod *pod)
{
    const gs_yn *seq;
    if (gs_rd_seq(r, spec, "tolerations", &seq) < 0)
        return -1;
    if (!seq || !seq->len)
        return 0;
    bool oom;
    gs_toleration *ts = arena_array(r, seq->len, sizeof *ts, &oom);
    if (oom)
        return gs_rd_nomem(r);
    size_t mark = gs_rd_push(r, "tolerations");
    uint32_t i = 0;
    for (const gs_yn *t = seq->u.first; t; t = t->next, i++) {
        size_t item_mark = gs_rd_push_index(r, i);
        gs_toleration *o = &ts[i];
        const char *effect;
        if (gs_rd_expect_map(r, t) < 0 || str_field(r, t, "key", "", true, &o->key) < 0 ||
            str_field(r, t, "operator", "", true, &o->op_raw) < 0 ||
            gs_rd_str(r, t, "value", "", &o->value) < 0 || str_field(r, t, "effect", "", true, &effect) < 0 ||
            gs_rd_int(r, t, "tolerationSeconds", INT64_MIN, INT64_MAX, &o->has_seconds, &o->seconds) < 0)
            return -1;
        o->op = tol_op_of(o->op_raw);
        o->effect = effect_of(effect);
        gs_rd_pop(r, item_mark);
    }
    gs_rd_pop(r, mark);
    pod->tolerations = ts;
    pod->ntolerations = seq->len;
    return 0;
}

/* affinity.nodeAffinity (pod affinity and anti-affinity are not modelled). */
static int node_affinity(gs_rd *r, const gs_yn *aff, gs_pod *pod)
{
    const gs_yn *na;
    size_t m1 = gs_rd_push(r, "affinity");
    if (gs_rd_map(r, aff, "nodeAffinity", &na) < 0)
        return -1;
    if (!na) {
        gs_rd_pop(r, m1);
        return 0;
    }
    size_t m2 = gs_rd_push(r, "nodeAffinity");
    const gs_yn *req;
    if (gs_rd_map(r, na, "requiredDuringSchedulingIgnoredDuringExecution", &req) < 0)
        return -1;
    if (req) {
        size_t m3 = gs_rd_push(r, "requiredDuringSchedulingIgnoredDuringExecution");
        gs_node_selector *ns;
        if (node_selector(r, req, &ns) < 0)
            return -1;
        pod->required = ns;
        gs_rd_pop(r, m3);
    }
    const gs_yn *pref;
    if (gs_rd_seq(r, na, "preferredDuringSchedulingIgnoredDuringExecution", &pref) < 0)
        return -1;
    if (pref && pref->len) {
        bool oom;
        gs_pref_term *pt = arena_array(r, pref->len, sizeof *pt, &oom);
        if (oom)
            return gs_rd_nomem(r);
        size_t m3 = gs_rd_push(r, "preferredDuringSchedulingIgnoredDuringExecution");
        uint32_t i = 0;
        for (const gs_yn *p = pref->u.first; p; p = p->next, i++) {
            size_t item_mark = gs_rd_push_index(r, i);
            int64_t w = 0;
            const gs_yn *term;
            if (gs_rd_expect_map(r, p) < 0 || gs_rd_int(r, p, "weight", 0, 100, NULL, &w) < 0 ||
                gs_rd_map(r, p, "preference", &term) < 0)
                return -1;
            pt[i].weight = (int32_t)w;
            if (term) {
                size_t m5 = gs_rd_push(r, "preference");
                if (sel_term(r, term, &pt[i].term) < 0)
                    return -1;
                gs_rd_pop(r, m5);
            }
            gs_rd_pop(r, item_mark);
        }
        gs_rd_pop(r, m3);
        pod->preferred = pt;
        pod->npreferred = pref->len;
    }
    gs_rd_pop(r, m2);
    gs_rd_pop(r, m1);
    return 0;
}

/* spec.resourceClaims[] {name, resourceClaimName | resourceClaimTemplateName}. */
static int pod_claims(gs_rd *r, const gs_yn *spec, gs_pod *pod)
{
    const gs_yn *seq;
    if (gs_rd_seq(r, spec, "resourceClaims", &seq) < 0)
        return -1;
    if (!seq || !seq->len)
        return 0;
    bool oom;
    gs_pod_claim *pc = arena_array(r, seq->len, sizeof *pc, &oom);
    if (oom)
        return gs_rd_nomem(r);
    size_t mark = gs_rd_push(r, "resourceClaims");
    uint32_t i = 0;
    for (const gs_yn *c = seq->u.first; c; c = c->next, i++) {
        size_t im = gs_rd_push_index(r, i);
        if (gs_rd_expect_map(r, c) < 0 || str_field(r, c, "name", "", true, &pc[i].name) < 0 ||
            gs_rd_str(r, c, "resourceClaimName", "", &pc[i].claim_name) < 0 ||
            gs_rd_str(r, c, "resourceClaimTemplateName", "", &pc[i].template_name) < 0)
            return -1;
        pc[i].status_claim = "";
        if (!pc[i].name[0])
            return gs_rd_missing(r, gs_rd_get(c, "name") ? gs_rd_get(c, "name") : c, "name", "a pod claim needs a name");
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(pc[j].name, pc[i].name)) {
                gs_rd_push(r, "name");
                return gs_rd_fail(r, gs_rd_get(c, "name"), GS_ERR_INVALID, "duplicate pod claim name \"%s\"",
                                  pc[i].name);
            }
        if (!pc[i].claim_name[0] == !pc[i].template_name[0])
            return gs_rd_fail(r, c, GS_ERR_INVALID,
                              pc[i].claim_name[0] ? "resourceClaimName and resourceClaimTemplateName both given "
                                                    "(exactly one of them names the claim)"
                                                  : "exactly one of resourceClaimName and resourceClaimTemplateName "
                                                    "is required");
        gs_rd_pop(r, im);
    }
    gs_rd_pop(r, mark);
    pod->claims = pc;
    pod->nclaims = seq->len;
    return 0;
}

/* Each container's resources.claims[].name names one of the pod's claims (API validation:
 * "must be one of the pod's resource claims"). */
static int pod_claims_check(gs_rd *r, const gs_yn *spec, const gs_pod *pod)
{
    for (int init = 0; init < 2; init++) {
        const gs_container *cs = init ? pod->init_containers : pod->containers;
        uint32_t n = init ? pod->ninit : pod->ncontainers;
        const char *key = init ? "initContainers" : "containers";
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t k = 0; k < cs[i].nclaims; k++) {
                bool found = false;
                for (uint32_t j = 0; j < pod->nclaims && !found; j++)
                    found = !strcmp(pod->claims[j].name, cs[i].claims[k]);
                if (found)
                    continue;
                /* the node: containers[i].resources.claims[k] */
                const gs_yn *seq = gs_rd_get(spec, key), *at = spec;
                const gs_yn *c = seq && seq->type == GS_YN_SEQ ? seq->u.first : NULL;
                for (uint32_t x = 0; c && x < i; x++)
                    c = c->next;
                const gs_yn *cl = gs_rd_get(gs_rd_get(c, "resources"), "claims");
                const gs_yn *e = cl && cl->type == GS_YN_SEQ ? cl->u.first : NULL;
                for (uint32_t x = 0; e && x < k; x++)
                    e = e->next;
                if (e)
                    at = gs_rd_get(e, "name") ? gs_rd_get(e, "name") : e;
                gs_rd_push(r, key);
                gs_rd_push_index(r, i);
                gs_rd_push(r, "resources.claims");
                gs_rd_push_index(r, k);
                gs_rd_push(r, "name");
                return gs_rd_fail(r, at, GS_ERR_INVALID,
                                  "claim \"%s\" is not one of the pod's spec.resourceClaims", cs[i].claims[k]);
            }
    }
    return 0;
}

int gs_rd_pod_spec(gs_rd *r, const gs_yn *spec, gs_pod *pod)
{
    pod->node_name = "";
    pod->scheduler_name = "default-scheduler";
    pod->priority_class_name = "";
    pod->phase = "";
    pod->nominated_node = "";
    pod->extended_claim = "";
    if (!spec)
        return 0;
    int64_t v = 0;
    bool has;
    if (str_field(r, spec, "nodeName", "", true, &pod->node_name) < 0 ||
        str_field(r, spec, "schedulerName", "default-scheduler", true, &pod->scheduler_name) < 0 ||
        str_field(r, spec, "priorityClassName", "", true, &pod->priority_class_name) < 0 ||
        gs_rd_int(r, spec, "priority", INT32_MIN, INT32_MAX, &pod->has_priority, &v) < 0 ||
        preempt_policy(r, spec, &pod->preemption_policy) < 0)
        return -1;
    pod->priority = (int32_t)v;
    if (!pod->scheduler_name[0])
        pod->scheduler_name = "default-scheduler";
    if (gs_rd_int(r, spec, "activeDeadlineSeconds", 0, INT64_MAX, &has, &v) < 0)
        return -1;
    pod->has_active_deadline = has;
    if (containers(r, spec, "containers", false, &pod->containers, &pod->ncontainers) < 0 ||
        containers(r, spec, "initContainers", true, &pod->init_containers, &pod->ninit) < 0 ||
        reslist_field(r, spec, "overhead", &pod->overhead) < 0)
        return -1;
    const gs_yn *res;
    if (gs_rd_map(r, spec, "resources", &res) < 0)
        return -1;
    if (res) {
        size_t mark = gs_rd_push(r, "resources");
        if (reslist_field(r, res, "requests", &pod->pod_requests) < 0)
            return -1;
        gs_rd_pop(r, mark);
    }
    if (tolerations(r, spec, pod) < 0 || labels_field(r, spec, "nodeSelector", &pod->node_selector) < 0 ||
        pod_claims(r, spec, pod) < 0 || pod_claims_check(r, spec, pod) < 0)
        return -1;
    const gs_yn *aff;
    if (gs_rd_map(r, spec, "affinity", &aff) < 0)
        return -1;
    return aff ? node_affinity(r, aff, pod) : 0;
}

static int store_pod(gs_rd *r, const gs_yn *at, gs_pod *pod)
{
    if (gs_rd_reserve_objects(r, at, 1) < 0)
        return -1;
    pod->meta.input_index = r->s->next_index;
    if (gs_vec_push(r->s->pods, *pod) < 0)
        return gs_rd_nomem(r);
    r->s->next_index++;
    return 0;
}

/* status.resourceClaimStatuses[] {name, resourceClaimName}: the claims the resourceclaim
 * controller made from templates (no resourceClaimName: none needed, status_claim NULL);
 * status.extendedResourceClaimStatus.resourceClaimName. */
static int pod_claim_statuses(gs_rd *r, const gs_yn *status, gs_pod *pod)
{
    const gs_yn *seq, *ext;
    if (gs_rd_seq(r, status, "resourceClaimStatuses", &seq) < 0 ||
        gs_rd_map(r, status, "extendedResourceClaimStatus", &ext) < 0)
        return -1;
    if (ext) {
        size_t mark = gs_rd_push(r, "extendedResourceClaimStatus");
        if (gs_rd_str(r, ext, "resourceClaimName", "", &pod->extended_claim) < 0)
            return -1;
        gs_rd_pop(r, mark);
    }
    if (!seq)
        return 0;
    size_t mark = gs_rd_push(r, "resourceClaimStatuses");
    uint32_t i = 0;
    for (const gs_yn *c = seq->u.first; c; c = c->next, i++) {
        size_t im = gs_rd_push_index(r, i);
        const char *name, *claim;
        if (gs_rd_expect_map(r, c) < 0 || gs_rd_str(r, c, "name", "", &name) < 0 ||
            gs_rd_str(r, c, "resourceClaimName", NULL, &claim) < 0)
            return -1;
        gs_pod_claim *pc = NULL;
        for (uint32_t j = 0; j < pod->nclaims && !pc; j++)
            if (!strcmp(pod->claims[j].name, name))
                pc = &pod->claims[j];
        if (!pc) {
            gs_rd_push(r, "name");
            return gs_rd_fail(r, gs_rd_get(c, "name") ? gs_rd_get(c, "name") : c, GS_ERR_INVALID,
                              "\"%s\" is not one of the pod's spec.resourceClaims", name);
        }
        pc->status_claim = claim;
        gs_rd_pop(r, im);
    }
    gs_rd_pop(r, mark);
    return 0;
}

static int decode_pod(gs_rd *r, const gs_yn *obj)
{
    gs_pod pod;
    memset(&pod, 0, sizeof pod);
    gs_rd_set_object(r, "Pod", obj, true);
    if (gs_rd_meta(r, obj, true, &pod.meta) < 0 || gs_rd_note_object(r, "Pod", &pod.meta) < 0)
        return -1;
    const gs_yn *spec, *status;
    if (gs_rd_map(r, obj, "spec", &spec) < 0)
        return -1;
    size_t mark = gs_rd_push(r, "spec");
    if (gs_rd_pod_spec(r, spec, &pod) < 0)
        return -1;
    gs_rd_pop(r, mark);
    if (gs_rd_map(r, obj, "status", &status) < 0)
        return -1;
    if (status) {
        mark = gs_rd_push(r, "status");
        if (str_field(r, status, "phase", "", true, &pod.phase) < 0 ||
            str_field(r, status, "nominatedNodeName", "", true, &pod.nominated_node) < 0 ||
            time_field(r, status, "startTime", &pod.has_start_time, &pod.start_time) < 0 ||
            pod_claim_statuses(r, status, &pod) < 0)
            return -1;
        gs_rd_pop(r, mark);
    }
    return store_pod(r, obj, &pod);
}

/* ================================================================ Node */

static int taints(gs_rd *r, const gs_yn *spec, gs_node *node)
{
    const gs_yn *seq;
    if (gs_rd_seq(r, spec, "taints", &seq) < 0)
        return -1;
    if (!seq || !seq->len)
        return 0;
    bool oom;
    gs_taint *ts = arena_array(r, seq->len, sizeof *ts, &oom);
    if (oom)
        return gs_rd_nomem(r);
    size_t mark = gs_rd_push(r, "taints");
    uint32_t i = 0;
    for (const gs_yn *t = seq->u.first; t; t = t->next, i++) {
        size_t item_mark = gs_rd_push_index(r, i);
        const char *effect;
        if (gs_rd_expect_map(r, t) < 0 || str_field(r, t, "key", "", true, &ts[i].key) < 0 ||
            gs_rd_str(r, t, "value", "", &ts[i].value) < 0 || str_field(r, t, "effect", "", true, &effect) < 0)
            return -1;
        if (!ts[i].key[0]) {
            gs_rd_push(r, "key");
            return gs_rd_fail(r, gs_rd_get(t, "key") ? gs_rd_get(t, "key") : t, GS_ERR_INVALID,
                              "required field is missing (a taint needs a key)");
        }
        ts[i].effect = effect_of(effect);
        if (ts[i].effect == GS_EFFECT_ANY || ts[i].effect == GS_EFFECT_INVALID) {
            const gs_yn *e = gs_rd_get(t, "effect");
            char b[RD_TEXT_SHOWN + 8];
            gs_rd_push(r, "effect");
            if (!e)
                return gs_rd_fail(r, t, GS_ERR_INVALID,
                                  "required field is missing (expected NoSchedule, PreferNoSchedule, NoExecute)");
            return gs_rd_fail(r, e, GS_ERR_INVALID,
                              "unknown taint effect %s (expected NoSchedule, PreferNoSchedule, NoExecute)",
                              describe(e, b, sizeof b));
        }
        gs_rd_pop(r, item_mark);
    }
    gs_rd_pop(r, mark);
    node->taints = ts;
    node->ntaints = seq->len;
    return 0;
}

static int decode_node(gs_rd *r, const gs_yn *obj)
{
    gs_node node;
    memset(&node, 0, sizeof node);
    gs_rd_set_object(r, "Node", obj, false);
    if (gs_rd_meta(r, obj, false, &node.meta) < 0 || gs_rd_note_object(r, "Node", &node.meta) < 0)
        return -1;
    const gs_yn *spec, *status;
    if (gs_rd_map(r, obj, "spec", &spec) < 0)
        return -1;
    if (spec) {
        size_t mark = gs_rd_push(r, "spec");
        if (gs_rd_bool(r, spec, "unschedulable", &node.unschedulable) < 0 || taints(r, spec, &node) < 0)
            return -1;
        gs_rd_pop(r, mark);
    }
    node.ready = true;
    if (gs_rd_map(r, obj, "status", &status) < 0)
        return -1;
    if (status) {
        size_t mark = gs_rd_push(r, "status");
        if (reslist_field(r, status, "capacity", &node.capacity) < 0 ||
            reslist_field(r, status, "allocatable", &node.allocatable) < 0)
            return -1;
        if (!gs_rd_get(status, "allocatable"))
            node.allocatable = node.capacity;
        const gs_yn *conds;
        if (gs_rd_seq(r, status, "conditions", &conds) < 0)
            return -1;
        if (conds) {
            size_t cm = gs_rd_push(r, "conditions");
            uint32_t i = 0;
            for (const gs_yn *c = conds->u.first; c; c = c->next, i++) {
                size_t item_mark = gs_rd_push_index(r, i);
                const char *type, *cstatus;
                if (gs_rd_expect_map(r, c) < 0 || gs_rd_str(r, c, "type", "", &type) < 0 ||
                    gs_rd_str(r, c, "status", "", &cstatus) < 0)
                    return -1;
                if (!strcmp(type, "Ready"))
                    node.ready = !strcmp(cstatus, "True");
                gs_rd_pop(r, item_mark);
            }
            gs_rd_pop(r, cm);
        }
        gs_rd_pop(r, mark);
    }
    if (gs_rd_reserve_objects(r, obj, 1) < 0)
        return -1;
    node.meta.input_index = r->s->next_index;
    if (gs_vec_push(r->s->nodes, node) < 0)
        return gs_rd_nomem(r);
    r->s->next_index++;
    return 0;
}

/* ================================================================ other kinds */

static int decode_priority_class(gs_rd *r, const gs_yn *obj)
{
    gs_priority_class pc;
    memset(&pc, 0, sizeof pc);
    gs_rd_set_object(r, "PriorityClass", obj, false);
    int64_t v = 0;
    if (gs_rd_meta(r, obj, false, &pc.meta) < 0 || gs_rd_note_object(r, "PriorityClass", &pc.meta) < 0 ||
        gs_rd_int(r, obj, "value", INT32_MIN, INT32_MAX, NULL, &v) < 0 ||
        gs_rd_bool(r, obj, "globalDefault", &pc.global_default) < 0 ||
        preempt_policy(r, obj, &pc.preemption_policy) < 0 || gs_rd_reserve_objects(r, obj, 1) < 0)
        return -1;
    pc.value = (int32_t)v;
    pc.meta.input_index = r->s->next_index;
    if (gs_vec_push(r->s->priority_classes, pc) < 0)
        return gs_rd_nomem(r);
    r->s->next_index++;
    return 0;
}

static const struct {
    const char *name;
    uint32_t bit;
} quota_scopes[] = {
    {"Terminating", GS_SCOPE_TERMINATING},
    {"NotTerminating", GS_SCOPE_NOT_TERMINATING},
    {"BestEffort", GS_SCOPE_BEST_EFFORT},
    {"NotBestEffort", GS_SCOPE_NOT_BEST_EFFORT},
    {"PriorityClass", GS_SCOPE_PRIORITY_CLASS},
    {"CrossNamespacePodAffinity", GS_SCOPE_CROSS_NAMESPACE_POD_AFFINITY},
    {"VolumeAttributesClass", GS_SCOPE_VOLUME_ATTRIBUTES_CLASS},
};
#define QUOTA_SCOPES_EXPECTED \
    "expected Terminating, NotTerminating, BestEffort, NotBestEffort, PriorityClass, CrossNamespacePodAffinity, VolumeAttributesClass"

static int quota_scope_bit(gs_rd *r, const gs_yn *n, uint32_t *bit)
{
    for (size_t i = 0; i < sizeof quota_scopes / sizeof *quota_scopes; i++)
        if (text_is(n, quota_scopes[i].name)) {
            *bit = quota_scopes[i].bit;
            return 0;
        }
    char b[RD_TEXT_SHOWN + 8];
    return gs_rd_fail(r, n, GS_ERR_INVALID, "unknown quota scope %s (" QUOTA_SCOPES_EXPECTED ")",
                      describe(n, b, sizeof b));
}

/* spec.scopes and spec.scopeSelector. A PriorityClass scope keeps its requirement in
 * scope_exprs (key "PriorityClass"); in spec.scopes it means "has any class" (Exists).
 * The other scopes are plain bits and, as upstream validation requires, only take the
 * Exists operator in a scope selector. */
static int quota_scopes_of(gs_rd *r, const gs_yn *spec, gs_quota *q)
{
    const gs_yn *scopes, *sel, *exprs = NULL;
    if (gs_rd_seq(r, spec, "scopes", &scopes) < 0 || gs_rd_map(r, spec, "scopeSelector", &sel) < 0)
        return -1;
    if (sel) {
        size_t mark = gs_rd_push(r, "scopeSelector");
        if (gs_rd_seq(r, sel, "matchExpressions", &exprs) < 0)
            return -1;
        gs_rd_pop(r, mark);
    }
    uint32_t cap = (scopes ? scopes->len : 0) + (exprs ? exprs->len : 0);
    bool oom;
    q->scope_exprs = arena_array(r, cap, sizeof *q->scope_exprs, &oom);
    if (oom)
        return gs_rd_nomem(r);
    if (scopes) {
        size_t mark = gs_rd_push(r, "scopes");
        uint32_t i = 0;
        for (const gs_yn *s = scopes->u.first; s; s = s->next, i++) {
            size_t item_mark = gs_rd_push_index(r, i);
            uint32_t bit = 0;
            if (quota_scope_bit(r, s, &bit) < 0)
                return -1;
            q->scopes |= bit;
            if (bit == GS_SCOPE_PRIORITY_CLASS)
                q->scope_exprs[q->nscope_exprs++] = (gs_sel_req){"PriorityClass", GS_SEL_EXISTS, NULL, 0};
            gs_rd_pop(r, item_mark);
        }
        gs_rd_pop(r, mark);
    }
    if (exprs) {
        size_t mark = gs_rd_push(r, "scopeSelector");
        gs_rd_push(r, "matchExpressions");
        uint32_t i = 0;
        for (const gs_yn *e = exprs->u.first; e; e = e->next, i++) {
            size_t item_mark = gs_rd_push_index(r, i);
            gs_sel_req req;
            uint32_t bit = 0;
            if (sel_req(r, e, "scopeName", false, &req) < 0)
                return -1;
            size_t sm = gs_rd_push(r, "scopeName");
            if (quota_scope_bit(r, gs_rd_get(e, "scopeName"), &bit) < 0)
                return -1;
            gs_rd_pop(r, sm);
            q->scopes |= bit;
            if (bit == GS_SCOPE_PRIORITY_CLASS) {
                req.key = "PriorityClass";
                q->scope_exprs[q->nscope_exprs++] = req;
            } else if (req.op != GS_SEL_EXISTS) {
                gs_rd_push(r, "operator");
                return gs_rd_fail(r, gs_rd_get(e, "operator"), GS_ERR_INVALID,
                                  "must be Exists when the scope is %s", req.key);
            }
            gs_rd_pop(r, item_mark);
        }
        gs_rd_pop(r, mark);
    }
    return 0;
}

static int decode_quota(gs_rd *r, const gs_yn *obj)
{
    gs_quota q;
    memset(&q, 0, sizeof q);
    gs_rd_set_object(r, "ResourceQuota", obj, true);
    if (gs_rd_meta(r, obj, true, &q.meta) < 0 || gs_rd_note_object(r, "ResourceQuota", &q.meta) < 0)
        return -1;
    const gs_yn *spec, *status;
    if (gs_rd_map(r, obj, "spec", &spec) < 0 || gs_rd_map(r, obj, "status", &status) < 0)
        return -1;
    if (spec) {
        size_t mark = gs_rd_push(r, "spec");
        if (reslist_field(r, spec, "hard", &q.hard) < 0 || quota_scopes_of(r, spec, &q) < 0)
            return -1;
        gs_rd_pop(r, mark);
    }
    if (status) {
        size_t mark = gs_rd_push(r, "status");
        if (reslist_field(r, status, "used", &q.used) < 0)
            return -1;
        gs_rd_pop(r, mark);
    }
    if (gs_rd_reserve_objects(r, obj, 1) < 0)
        return -1;
    q.meta.input_index = r->s->next_index;
    if (gs_vec_push(r->s->quotas, q) < 0)
        return gs_rd_nomem(r);
    r->s->next_index++;
    return 0;
}

/* IntOrString for minAvailable / maxUnavailable: an unquoted integer >= 0, or "N%" with
 * 0 <= N <= 100. A quoted number is a string without '%', which upstream rejects. */
static int int_or_percent(gs_rd *r, const gs_yn *m, const char *key, gs_intorpct *out)
{
    const gs_yn *v = gs_rd_get(m, key);
    memset(out, 0, sizeof *out);
    if (!v)
        return 0;
    size_t mark = gs_rd_push(r, key);
    char b[RD_TEXT_SHOWN + 8];
    if (v->type == GS_YN_SCALAR && v->len > 1 && v->u.text[v->len - 1] == '%') {
        int64_t p;
        if (gs_parse_i64(v->u.text, v->len - 1, &p) < 0 || p < 0 || p > 100 || v->u.text[0] == '+' ||
            v->u.text[0] == '-')
            return gs_rd_fail(r, v, GS_ERR_INVALID, "invalid percentage %s (expected 0%% to 100%%)",
                              shown_text(v, b, sizeof b));
        out->is_percent = true;
        out->value = (int32_t)p;
    } else if (v->type == GS_YN_SCALAR && v->plain) {
        int64_t x = 0;
        if (node_int(r, v, 0, INT32_MAX, &x) < 0)
            return -1;
        out->value = (int32_t)x;
    } else {
        return gs_rd_fail(r, v, GS_ERR_INVALID,
                          "expected an integer or a percentage like \"50%%\", got %s%s",
                          v->type == GS_YN_SCALAR ? "the string " : "", describe(v, b, sizeof b));
    }
    out->present = true;
    gs_rd_pop(r, mark);
    return 0;
}

static int decode_pdb(gs_rd *r, const gs_yn *obj)
{
    gs_pdb p;
    memset(&p, 0, sizeof p);
    gs_rd_set_object(r, "PodDisruptionBudget", obj, true);
    if (gs_rd_meta(r, obj, true, &p.meta) < 0 || gs_rd_note_object(r, "PodDisruptionBudget", &p.meta) < 0)
        return -1;
    const gs_yn *spec, *status;
    if (gs_rd_map(r, obj, "spec", &spec) < 0 || gs_rd_map(r, obj, "status", &status) < 0)
        return -1;
    if (spec) {
        size_t mark = gs_rd_push(r, "spec");
        if (label_selector(r, spec, "selector", &p.selector) < 0 ||
            int_or_percent(r, spec, "minAvailable", &p.min_available) < 0 ||
            int_or_percent(r, spec, "maxUnavailable", &p.max_unavailable) < 0)
            return -1;
        gs_rd_pop(r, mark);
    }
    if (status) {
        size_t mark = gs_rd_push(r, "status");
        int64_t v = 0;
        const gs_yn *dp;
        if (gs_rd_int(r, status, "disruptionsAllowed", 0, INT32_MAX, &p.has_disruptions_allowed, &v) < 0 ||
            gs_rd_map(r, status, "disruptedPods", &dp) < 0)
            return -1;
        p.disruptions_allowed = (int32_t)v;
        if (dp && dp->len) {
            bool oom;
            p.disrupted_pods = arena_array(r, dp->len, sizeof *p.disrupted_pods, &oom);
            if (oom)
                return gs_rd_nomem(r);
            uint32_t i = 0;
            size_t dm = gs_rd_push(r, "disruptedPods");
            for (const gs_yn *k = dp->u.first; k; k = k->next->next)
                if (node_text(r, k, false, &p.disrupted_pods[i++]) < 0)
                    return -1;
            gs_rd_pop(r, dm);
            p.ndisrupted = dp->len;
        }
        gs_rd_pop(r, mark);
    }
    if (gs_rd_reserve_objects(r, obj, 1) < 0)
        return -1;
    p.meta.input_index = r->s->next_index;
    if (gs_vec_push(r->s->pdbs, p) < 0)
        return gs_rd_nomem(r);
    r->s->next_index++;
    return 0;
}

static int decode_namespace(gs_rd *r, const gs_yn *obj)
{
    gs_namespace ns;
    gs_rd_set_object(r, "Namespace", obj, false);
    if (gs_rd_meta(r, obj, false, &ns.meta) < 0 || gs_rd_note_object(r, "Namespace", &ns.meta) < 0 ||
        gs_rd_reserve_objects(r, obj, 1) < 0)
        return -1;
    ns.meta.input_index = r->s->next_index;
    if (gs_vec_push(r->s->namespaces, ns) < 0)
        return gs_rd_nomem(r);
    r->s->next_index++;
    return 0;
}

/* ================================================================ dispatch */

/* Count one object in a kind list (skipped or templated): vec and ids stay parallel. */
static int count_kind(gs_rd *r, gs_intern *ids, void *vecp, const char *label)
{
    GS_VEC(gs_kind_count) *vec = vecp;
    int32_t id = gs_intern_id(ids, label, strlen(label));
    if (id < 0)
        return gs_rd_nomem(r);
    if ((size_t)id == vec->n) {
        gs_kind_count kc = {label, 0};
        if (gs_vec_push(*vec, kc) < 0)
            return gs_rd_nomem(r);
    } else if ((size_t)id > vec->n) {
        return gs_rd_nomem(r);
    }
    vec->v[id].count++;
    return 0;
}

/* A pod template under n: a mapping key "template" whose value has spec.containers (a
 * sequence). Searched through mappings and sequences, at most `depth` levels down. */
static bool has_pod_template(const gs_yn *n, int depth)
{
    if (!n || depth < 0)
        return false;
    if (n->type == GS_YN_SEQ) {
        for (const gs_yn *c = n->u.first; c; c = c->next)
            if (has_pod_template(c, depth - 1))
                return true;
        return false;
    }
    if (n->type != GS_YN_MAP)
        return false;
    for (const gs_yn *k = n->u.first; k; k = k->next->next) {
        const gs_yn *v = k->next;
        if (text_is(k, "template") && v->type == GS_YN_MAP) {
            const gs_yn *c = gs_rd_get(gs_rd_get(v, "spec"), "containers");
            if (c && c->type == GS_YN_SEQ)
                return true;
        }
        if (has_pod_template(v, depth - 1))
            return true;
    }
    return false;
}

static int skip_kind(gs_rd *r, const gs_yn *obj, const char *label)
{
    gs_snapshot *s = r->s;
    if (count_kind(r, &r->st->skipped_ids, &s->skipped, label) < 0)
        return -1;
    s->nskipped++;
    if (has_pod_template(gs_rd_get(obj, "spec"), 12)) {
        if (count_kind(r, &r->st->templated_ids, &s->templated, label) < 0)
            return -1;
        s->ntemplated++;
    }
    return 0;
}

/* ---------------------------------------------------------------- kinds by API group */
typedef enum rd_decoder {
    RD_POD = 1,
    RD_NODE,
    RD_NAMESPACE,
    RD_PRIORITY_CLASS,
    RD_QUOTA,
    RD_PDB,
    RD_WORKLOAD,
    RD_CRD,
    RD_DRA,
} rd_decoder;

/* Every kind the reader decodes: API group, kind, the versions read (space-separated:
 * what API servers serve or served with the fields read here), and the decoder. An
 * object without apiVersion takes the first row of its kind. */
static const struct {
    const char *group;
    const char *kind;
    const char *versions;
    rd_decoder decoder;
    int crd;           /* RD_CRD: a gs_rd_crd_kind; RD_DRA: a gs_rd_dra_kind */
    const char *label; /* the kind as findings and workloads name it */
} rd_kinds[] = {
    {"", "Pod", "v1", RD_POD, 0, "Pod"},
    {"", "Node", "v1", RD_NODE, 0, "Node"},
    {"", "Namespace", "v1", RD_NAMESPACE, 0, "Namespace"},
    {"", "ResourceQuota", "v1", RD_QUOTA, 0, "ResourceQuota"},
    {"scheduling.k8s.io", "PriorityClass", "v1 v1beta1 v1alpha1", RD_PRIORITY_CLASS, 0, "PriorityClass"},
    {"policy", "PodDisruptionBudget", "v1 v1beta1", RD_PDB, 0, "PodDisruptionBudget"},
    {"apps", "Deployment", "v1 v1beta2 v1beta1", RD_WORKLOAD, 0, "Deployment"},
    {"apps", "ReplicaSet", "v1 v1beta2", RD_WORKLOAD, 0, "ReplicaSet"},
    {"apps", "StatefulSet", "v1 v1beta2 v1beta1", RD_WORKLOAD, 0, "StatefulSet"},
    {"apps", "DaemonSet", "v1 v1beta2", RD_WORKLOAD, 0, "DaemonSet"},
    {"extensions", "Deployment", "v1beta1", RD_WORKLOAD, 0, "Deployment"},
    {"extensions", "ReplicaSet", "v1beta1", RD_WORKLOAD, 0, "ReplicaSet"},
    {"extensions", "DaemonSet", "v1beta1", RD_WORKLOAD, 0, "DaemonSet"},
    {"batch", "Job", "v1", RD_WORKLOAD, 0, "Job"},
    {"batch", "CronJob", "v1 v1beta1 v2alpha1", RD_WORKLOAD, 0, "CronJob"},
    {"jobset.x-k8s.io", "JobSet", "v1alpha2", RD_CRD, GS_RD_CRD_JOBSET, "JobSet"},
    {"leaderworkerset.x-k8s.io", "LeaderWorkerSet", "v1", RD_CRD, GS_RD_CRD_LWS, "LeaderWorkerSet"},
    {"kubeflow.org", "PyTorchJob", "v1", RD_CRD, GS_RD_CRD_KUBEFLOW, "PyTorchJob"},
    {"kubeflow.org", "TFJob", "v1", RD_CRD, GS_RD_CRD_KUBEFLOW, "TFJob"},
    {"kubeflow.org", "MPIJob", "v2beta1 v1", RD_CRD, GS_RD_CRD_KUBEFLOW, "MPIJob"},
    {"kubeflow.org", "XGBoostJob", "v1", RD_CRD, GS_RD_CRD_KUBEFLOW, "XGBoostJob"},
    {"kubeflow.org", "PaddleJob", "v1", RD_CRD, GS_RD_CRD_KUBEFLOW, "PaddleJob"},
    {"kubeflow.org", "JAXJob", "v1", RD_CRD, GS_RD_CRD_KUBEFLOW, "JAXJob"},
    {"ray.io", "RayCluster", "v1 v1alpha1", RD_CRD, GS_RD_CRD_RAYCLUSTER, "RayCluster"},
    {"ray.io", "RayJob", "v1 v1alpha1", RD_CRD, GS_RD_CRD_RAYJOB, "RayJob"},
    {"ray.io", "RayService", "v1 v1alpha1", RD_CRD, GS_RD_CRD_RAYSERVICE, "RayService"},
    {"batch.volcano.sh", "Job", "v1alpha1", RD_CRD, GS_RD_CRD_VOLCANO_JOB, "Job.batch.volcano.sh"},
    {"resource.k8s.io", "DeviceClass", "v1 v1beta2 v1beta1", RD_DRA, GS_RD_DRA_CLASS, "DeviceClass"},
    {"resource.k8s.io", "ResourceClaim", "v1 v1beta2 v1beta1", RD_DRA, GS_RD_DRA_CLAIM, "ResourceClaim"},
    {"resource.k8s.io", "ResourceClaimTemplate", "v1 v1beta2 v1beta1", RD_DRA, GS_RD_DRA_CLAIM_TEMPLATE,
     "ResourceClaimTemplate"},
    {"resource.k8s.io", "ResourceSlice", "v1 v1beta2 v1beta1", RD_DRA, GS_RD_DRA_SLICE, "ResourceSlice"},
};
#define RD_NKINDS (sizeof rd_kinds / sizeof *rd_kinds)

static bool word_in(const char *list, const char *w, size_t n)
{
    for (const char *p = list; *p;) {
        size_t l = strcspn(p, " ");
        if (l == n && !memcmp(p, w, n))
            return true;
        p += l;
        while (*p == ' ')
            p++;
    }
    return false;
}

/* Decode obj as the kind its apiVersion and kind name, or count it as skipped. */
static int decode_kind(gs_rd *r, const gs_yn *obj, const char *kind)
{
    char b[RD_TEXT_SHOWN + 8];
    const gs_yn *av = gs_rd_get(obj, "apiVersion");
    const char *group = NULL, *version = NULL;
    size_t glen = 0, vlen = 0;
    if (av) {
        if (av->type != GS_YN_SCALAR) {
            gs_rd_push(r, "apiVersion");
            return gs_rd_fail(r, av, GS_ERR_INVALID, "expected a string, got %s", describe(av, b, sizeof b));
        }
        const char *slash = memchr(av->u.text, '/', av->len);
        if (slash) {
            group = av->u.text;
            glen = (size_t)(slash - av->u.text);
            version = slash + 1;
            vlen = av->len - glen - 1;
        } else {
            group = "";
            version = av->u.text;
            vlen = av->len;
        }
    }
    bool group_known = false;
    for (size_t i = 0; i < RD_NKINDS; i++) {
        if (strcmp(rd_kinds[i].kind, kind) != 0)
            continue;
        if (group) {
            if (strlen(rd_kinds[i].group) != glen || memcmp(rd_kinds[i].group, group, glen) != 0)
                continue;
            group_known = true;
            if (!word_in(rd_kinds[i].versions, version, vlen))
                continue;
        }
        switch (rd_kinds[i].decoder) {
        case RD_POD: return decode_pod(r, obj);
        case RD_NODE: return decode_node(r, obj);
        case RD_NAMESPACE: return decode_namespace(r, obj);
        case RD_PRIORITY_CLASS: return decode_priority_class(r, obj);
        case RD_QUOTA: return decode_quota(r, obj);
        case RD_PDB: return decode_pdb(r, obj);
        case RD_WORKLOAD: return gs_rd_workload(r, obj, rd_kinds[i].label);
        case RD_CRD: return gs_rd_crd(r, obj, (gs_rd_crd_kind)rd_kinds[i].crd, rd_kinds[i].label);
        case RD_DRA: return gs_rd_dra(r, obj, (gs_rd_dra_kind)rd_kinds[i].crd);
        }
    }
    /* skipped: "Kind" (core group or no apiVersion), "Kind.group", or for a known kind
     * and group of a version not read here "Kind.group/version" */
    const char *label = kind;
    if (group && (glen || group_known)) {
        char buf[200];
        int n = group_known ? snprintf(buf, sizeof buf, "%s.%.*s/%.*s", kind, (int)(glen < 80 ? glen : 80),
                                       group, (int)(vlen < 40 ? vlen : 40), version)
                            : snprintf(buf, sizeof buf, "%s.%.*s", kind, (int)(glen < 120 ? glen : 120), group);
        if (!glen && group_known)
            n = snprintf(buf, sizeof buf, "%s/%.*s", kind, (int)(vlen < 40 ? vlen : 40), version);
        label = gs_rd_intern(r, buf, n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
        if (!label)
            return gs_rd_nomem(r);
    }
    return skip_kind(r, obj, label);
}

static bool ends_with_list(const char *kind)
{
    size_t n = strlen(kind);
    return n >= 4 && !strcmp(kind + n - 4, "List");
}

/* One object (a document root or a List item). item_kind: the kind implied by a typed
 * list ("PodList" items are Pods) for items that omit their own. */
static int decode_object(gs_rd *r, const gs_yn *obj, unsigned list_depth, const char *item_kind)
{
    r->obj[0] = '\0';
    r->plen = 0;
    r->path[0] = '\0';
    char b[RD_TEXT_SHOWN + 8];
    if (obj->type != GS_YN_MAP)
        return gs_rd_fail(r, obj, GS_ERR_INVALID, "expected a mapping (a Kubernetes object), got %s",
                          describe(obj, b, sizeof b));
    const gs_yn *kn = gs_rd_get(obj, "kind");
    const char *kind = item_kind;
    if (kn) {
        gs_rd_push(r, "kind");
        if (kn->type != GS_YN_SCALAR)
            return gs_rd_fail(r, kn, GS_ERR_INVALID, "expected a string, got %s", describe(kn, b, sizeof b));
        kind = gs_rd_intern(r, kn->u.text, kn->len);
        if (!kind)
            return gs_rd_nomem(r);
        gs_rd_pop(r, 0);
    }
    if (!kind && !gs_rd_get(obj, "apiVersion"))
        return gs_rd_fail(r, obj, GS_ERR_INVALID,
                          "not a Kubernetes object: no apiVersion and no kind (a configuration file, Helm values?)");
    if (!kind || !kind[0]) {
        gs_rd_push(r, "kind");
        return gs_rd_fail(r, kn ? kn : obj, GS_ERR_INVALID, "required field is missing (every object needs a kind)");
    }
    if (ends_with_list(kind)) {
        const gs_yn *items = lookup(obj, "items");
        if (items || !strcmp(kind, "List")) {
            if (list_depth >= RD_MAX_LIST_DEPTH)
                return gs_rd_fail(r, obj, GS_ERR_LIMIT, "Lists nested deeper than %d levels", RD_MAX_LIST_DEPTH);
            if (!items || (items->type == GS_YN_SCALAR && items->null))
                return 0;
            if (items->type != GS_YN_SEQ) {
                snprintf(r->obj, sizeof r->obj, "%.60s", kind);
                gs_rd_push(r, "items");
                return expect_type(r, items, GS_YN_SEQ);
            }
            const char *inner = NULL;
            if (strcmp(kind, "List") != 0) {
                inner = gs_rd_intern(r, kind, strlen(kind) - 4);
                if (!inner)
                    return gs_rd_nomem(r);
            }
            uint32_t i = 0;
            for (const gs_yn *it = items->u.first; it; it = it->next, i++) {
                if (it->type != GS_YN_MAP) {
                    snprintf(r->obj, sizeof r->obj, "%.60s", kind);
                    gs_rd_push(r, "items");
                    gs_rd_push_index(r, i);
                    return gs_rd_fail(r, it, GS_ERR_INVALID, "expected a mapping (a Kubernetes object), got %s",
                                      describe(it, b, sizeof b));
                }
                if (decode_object(r, it, list_depth + 1, inner) < 0)
                    return -1;
            }
            return 0;
        }
    }
    return decode_kind(r, obj, kind);
}

static int decode_document(gs_rd *r, const gs_yn *root)
{
    return decode_object(r, root, 0, NULL);
}

/* ================================================================ input */

/* keep_going: a file whose content failed is recorded and reading goes on. */
static bool kept_going(const gs_error *e)
{
    return e->code == GS_ERR_PARSE || e->code == GS_ERR_INVALID || e->code == GS_ERR_LIMIT;
}

static int record_input_error(gs_snapshot *s, const char *name, const gs_error *e, gs_error *err)
{
    gs_read_issue is;
    memset(&is, 0, sizeof is);
    is.src.file = gs_arena_strdup(&s->arena, e->file[0] ? e->file : name);
    is.src.line = e->line > 0 ? (uint32_t)e->line : 0;
    is.src.col = e->col > 0 ? (uint32_t)e->col : 0;
    is.code = e->code;
    is.object = gs_arena_strdup(&s->arena, e->path);
    is.message = gs_arena_strdup(&s->arena, e->msg);
    if (!is.src.file || !is.object || !is.message || gs_vec_push(s->input_errors, is) < 0)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    return 0;
}

/* The mapping read_one_file is reading (for gs_map_release), NULL for buffers. */
static _Thread_local const gs_mapped *cur_map;

static int read_buffer(gs_snapshot *s, gs_rd_state *st, const char *name, const char *data, size_t len,
                       gs_window *w, const gs_read_opts *opts, gs_error *err)
{
    size_t max_file = opts && opts->max_file_bytes ? opts->max_file_bytes : RD_DEFAULT_MAX_FILE;
    if (max_file && len > max_file)
        return gs_error_set(err, GS_ERR_LIMIT, name, 0, 0, NULL,
                            "input larger than the limit of %zu bytes", max_file);
    gs_rd *r = calloc(1, sizeof *r);
    if (!r)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    r->s = s;
    r->st = st;
    r->err = err;
    r->map = cur_map && cur_map->data == data ? cur_map : NULL;
    r->max_objects = opts && opts->max_objects ? opts->max_objects : RD_DEFAULT_MAX_OBJECTS;
    r->max_replicas = opts && opts->max_replicas ? opts->max_replicas : RD_DEFAULT_MAX_REPLICAS;
    r->no_positions = opts && opts->no_positions;
    st->max_objects = r->max_objects;
    int rc;
    r->file = gs_arena_strdup(&s->arena, name);
    if (!r->file)
        rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
    else
        rc = w ? parse_stream(r, w) : parse_input(r, data, len, 1, 1);
    free(r);
    return rc;
}

static int read_input(gs_snapshot *s, const char *name, const char *data, size_t len, gs_window *w,
                      const gs_read_opts *opts, gs_error *err)
{
    if (!name)
        name = "";
    if (s->finished)
        return gs_error_set(err, GS_ERR_USAGE, name, 0, 0, NULL,
                            "snapshot already finished; read every input before gs_snapshot_finish()");
    gs_rd_state *st = state_of(s, err);
    if (!st)
        return -1;
    if (!opts || !opts->keep_going)
        return read_buffer(s, st, name, data, len, w, opts, err);
    rd_mark m;
    if (mark_take(s, st, &m) < 0)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    gs_error e;
    gs_error_clear(&e);
    int rc = read_buffer(s, st, name, data, len, w, opts, &e);
    if (rc != 0) {
        if (!kept_going(&e)) {
            if (err)
                *err = e;
        } else if (mark_rollback(s, st, &m) < 0) {
            rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
        } else {
            rc = record_input_error(s, name, &e, err);
        }
    }
    free(m.counts);
    return rc;
}

int gs_snapshot_read_buffer(gs_snapshot *s, const char *name, const char *data, size_t len,
                            const gs_read_opts *opts, gs_error *err)
{
    return read_input(s, name, data, len, NULL, opts, err);
}

static int read_one_file(gs_snapshot *s, const char *path, const gs_read_opts *opts, gs_error *err)
{
    size_t max_file = opts && opts->max_file_bytes ? opts->max_file_bytes : RD_DEFAULT_MAX_FILE;
    gs_error e;
    gs_error_clear(&e);
    gs_mapped m;
    gs_window w;
    int mrc = gs_map_or_window(path, max_file, &m, &w, &e);
    if (mrc == 1) {
        /* a pipe: streamed through a window (parse_stream) */
        int rc = read_input(s, path, NULL, 0, &w, opts, err);
        gs_window_close(&w);
        return rc;
    }
    if (mrc != 0) {
        if (opts && opts->keep_going && e.code == GS_ERR_LIMIT && !s->finished)
            return record_input_error(s, path, &e, err);
        if (err)
            *err = e;
        return -1;
    }
    cur_map = &m;
    int rc = gs_snapshot_read_buffer(s, path, m.data, m.len, opts, err);
    cur_map = NULL;
    gs_unmap_input(&m);
    return rc;
}

static bool has_manifest_ext(const char *name)
{
    size_t n = strlen(name);
    return (n > 5 && !strcmp(name + n - 5, ".yaml")) || (n > 4 && !strcmp(name + n - 4, ".yml")) ||
           (n > 5 && !strcmp(name + n - 5, ".json"));
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Directories: entries sorted bytewise by name, hidden entries (".git") skipped,
 * subdirectories read in place (depth-first), files kept by extension. */
static int read_dir(gs_snapshot *s, const char *dir, const gs_read_opts *opts, gs_error *err, int depth)
{
    if (depth > RD_MAX_DIR_DEPTH)
        return gs_error_set(err, GS_ERR_LIMIT, dir, 0, 0, NULL, "directories nested deeper than %d levels",
                            RD_MAX_DIR_DEPTH);
    DIR *d = opendir(dir);
    if (!d)
        return gs_error_set(err, GS_ERR_IO, dir, 0, 0, NULL, "cannot open directory: %s", strerror(errno));
    GS_VEC(char *) names = {NULL, 0, 0};
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char *nm = strdup(de->d_name);
        if (!nm || gs_vec_push(names, nm) < 0) {
            free(nm);
            rc = gs_fail(err, GS_ERR_NOMEM, "out of memory listing %s", dir);
            break;
        }
    }
    closedir(d);
    if (rc == 0 && names.n)
        qsort(names.v, names.n, sizeof *names.v, name_cmp);
    size_t dl = strlen(dir);
    bool slash = dl && dir[dl - 1] == '/';
    for (size_t i = 0; rc == 0 && i < names.n; i++) {
        size_t pl = dl + 1 + strlen(names.v[i]) + 1;
        char *path = malloc(pl);
        if (!path) {
            rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
            break;
        }
        snprintf(path, pl, "%s%s%s", dir, slash ? "" : "/", names.v[i]);
        struct stat sb;
        if (stat(path, &sb) != 0)
            rc = gs_error_set(err, GS_ERR_IO, path, 0, 0, NULL, "cannot stat: %s", strerror(errno));
        else if (S_ISDIR(sb.st_mode))
            rc = read_dir(s, path, opts, err, depth + 1);
        else if (S_ISREG(sb.st_mode) && has_manifest_ext(names.v[i]))
            rc = read_one_file(s, path, opts, err);
        free(path);
    }
    for (size_t i = 0; i < names.n; i++)
        free(names.v[i]);
    gs_vec_free(names);
    return rc;
}

int gs_snapshot_read_path(gs_snapshot *s, const char *path, const gs_read_opts *opts, gs_error *err)
{
    if (s->finished)
        return gs_error_set(err, GS_ERR_USAGE, path, 0, 0, NULL,
                            "snapshot already finished; read every input before gs_snapshot_finish()");
    if (!strcmp(path, "-"))
        return read_one_file(s, path, opts, err);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return gs_error_set(err, GS_ERR_IO, path, 0, 0, NULL, "cannot open: %s", strerror(errno));
    if (S_ISDIR(sb.st_mode))
        return read_dir(s, path, opts, err, 0);
    return read_one_file(s, path, opts, err);
}
