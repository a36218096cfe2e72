/*
 * whatif.c - what-if overrides applied to a finished snapshot before a replay
 * (include/gpusched/report.h, part 3; docs/cli/simulate.md): CPU-only nodes dropped, the
 * GPU NoSchedule taint added to or stripped from GPU nodes, tolerations for GPU pods,
 * PriorityClass values, and the workload scaled up or down; plus the parsers of the
 * command-line values (scale factors, class values, the openb qos table).
 *
 * Objects are changed in place; new arrays and strings go into the snapshot's arena (the
 * old ones stay there, unreferenced, until the snapshot is freed). A GPU node is one with
 * any GPU signal (gs_node_gpus_build: capacity, MIG resources or GPU labels).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/gpu.h"
#include "gpusched/mig.h"
#include "gpusched/report.h"

#define WI_MAX_PODS 10000000u
#define WI_DEFAULT_TAINT_KEY "nvidia.com/gpu"
#define WI_DEFAULT_TAINT_VALUE "true"

static int nomem(gs_error *err) { return gs_fail(err, GS_ERR_NOMEM, "out of memory (what-if)"); }

static bool is_gpu_node(const gs_node *n)
{
    gs_node_gpus g;
    if (gs_node_gpus_build(n, &g, NULL) != 0)
        return true; /* an impossible GPU inventory is still a GPU signal */
    bool gpu = g.gpu_node || g.ndevs > 0;
    gs_node_gpus_free(&g);
    return gpu;
}

static bool pod_requests_gpu(const gs_pod *p)
{
    gs_gpu_request r;
    return gs_gpu_request_from_pod(p, &r, NULL) == 0 && r.kind != GS_GPU_NONE;
}

/* ---------------------------------------------------------------- MIG layouts */

static int cmp_res(const void *a, const void *b)
{
    return strcmp(((const gs_res *)a)->name, ((const gs_res *)b)->name);
}

static int cmp_kv(const void *a, const void *b)
{
    return strcmp(((const gs_kv *)a)->key, ((const gs_kv *)b)->key);
}

static bool is_mig_resource(const char *name)
{
    return strcmp(name, "nvidia.com/gpu") == 0 || strncmp(name, "nvidia.com/mig-", 15) == 0;
}

/* The node's GPU resources replaced by `add` (whole GPUs and MIG instances). */
static int rewrite_resources(gs_snapshot *snap, gs_reslist *l, const gs_res *add, uint32_t nadd,
                             bool keep_missing)
{
    if (!l->n && !keep_missing)
        return 0; /* capacity absent: allocatable stands for it */
    gs_res *v = gs_arena_alloc(&snap->arena, (l->n + nadd + 1) * sizeof *v);
    if (!v)
        return -1;
    uint32_t n = 0;
    for (uint32_t i = 0; i < l->n; i++)
        if (!is_mig_resource(l->items[i].name))
            v[n++] = l->items[i];
    for (uint32_t i = 0; i < nadd; i++)
        v[n++] = add[i];
    qsort(v, n, sizeof *v, cmp_res);
    l->items = v;
    l->n = n;
    return 0;
}

/* Labels: the MIG ones replaced, nvidia.com/mig.config and mig.strategy set, the product
 * without GFD's single-strategy "-MIG-<profile>" suffix (and, from a single-strategy node,
 * without its gpu.memory, which was one MIG device's). */
static int rewrite_labels(gs_snapshot *snap, gs_labels *l, const char *config, uint32_t gpus,
                          bool was_single)
{
    gs_kv *v = gs_arena_alloc(&snap->arena, (l->n + 3) * sizeof *v);
    char count[16];
    snprintf(count, sizeof count, "%u", gpus);
    const char *cnt = gs_arena_strdup(&snap->arena, count);
    if (!v || !cnt)
        return -1;
    uint32_t n = 0;
    for (uint32_t i = 0; i < l->n; i++) {
        const char *k = l->items[i].key;
        if (strncmp(k, "nvidia.com/mig-", 15) == 0 || strcmp(k, "nvidia.com/mig.config") == 0 ||
            strcmp(k, "nvidia.com/mig.strategy") == 0 || strcmp(k, "nvidia.com/gpu.count") == 0 ||
            (was_single && strcmp(k, "nvidia.com/gpu.memory") == 0))
            continue;
        v[n] = l->items[i];
        if (strcmp(k, "nvidia.com/gpu.product") == 0) {
            const char *mig = strstr(v[n].val, "-MIG-");
            if (mig) {
                v[n].val = gs_arena_strndup(&snap->arena, v[n].val, (size_t)(mig - v[n].val));
                if (!v[n].val)
                    return -1;
            }
        }
        n++;
    }
    v[n++] = (gs_kv){"nvidia.com/mig.config", config};
    v[n++] = (gs_kv){"nvidia.com/mig.strategy", "mixed"};
    v[n++] = (gs_kv){"nvidia.com/gpu.count", cnt};
    qsort(v, n, sizeof *v, cmp_kv);
    l->items = v;
    l->n = n;
    return 0;
}

static int mig_configure(gs_snapshot *snap, const gs_whatif *w, gs_whatif_stats *st,
                         gs_error *err)
{
    bool by_label = strcmp(w->mig_config, GS_WHATIF_MIG_LABEL) == 0;
    const char *fixed = by_label ? NULL : gs_arena_strdup(&snap->arena, w->mig_config);
    if (!by_label && !fixed)
        return nomem(err);
    for (size_t i = 0; i < snap->nodes.n; i++) {
        gs_node *n = &snap->nodes.v[i];
        /* "label": the config the node's own nvidia.com/mig.config label asks for */
        const char *config = fixed;
        if (by_label) {
            config = gs_labels_get(&n->meta.labels, "nvidia.com/mig.config");
            if (!config || !*config)
                continue;
        }
        gs_node_gpus g;
        if (gs_node_gpus_build(n, &g, NULL) != 0)
            continue; /* the replay reports the impossible inventory */
        const gs_mig_model *m = g.mig_model;
        uint32_t ngpus = g.ndevs;
        bool was_single = g.mig_strategy == GS_MIG_SINGLE;
        /* nodes that use MIG now: a strategy, MIG resources or a mig.config label */
        bool uses_mig = g.mig_strategy != GS_MIG_NONE ||
                        gs_labels_get(&n->meta.labels, "nvidia.com/mig.config") != NULL;
        gs_node_gpus_free(&g);
        if (!m || !ngpus || !uses_mig)
            continue;
        uint32_t whole = 0, counts[GS_MIG_MAX_PROFILES] = {0};
        for (uint32_t d = 0; d < ngpus; d++) {
            gs_mig_layout l;
            gs_error e;
            gs_error_clear(&e);
            int rc = gs_mig_parted_gpu_layout(w->mig_parted, config, m, d, &l, &e);
            if (rc < 0) {
                if (err) {
                    *err = e;
                    char msg[GS_ERR_MSG_MAX];
                    snprintf(msg, sizeof msg, "node %s: %s", n->meta.name, e.msg);
                    snprintf(err->msg, sizeof err->msg, "%s", msg);
                }
                return -1;
            }
            if (rc == 0)
                return gs_fail(err, GS_ERR_INVALID, "node %s: MIG config \"%s\" has no entry "
                               "for GPU %u of a %s", n->meta.name, config, d, m->name);
            if (!l.mig_enabled) {
                whole++;
                continue;
            }
            for (uint32_t k = 0; k < l.n; k++)
                if (l.profile[k] < GS_MIG_MAX_PROFILES)
                    counts[l.profile[k]]++;
        }
        gs_res add[GS_MIG_MAX_PROFILES + 1];
        uint32_t nadd = 0;
        if (whole)
            add[nadd++] = (gs_res){"nvidia.com/gpu", gs_quantity_from_int(whole, GS_QF_DECIMAL_SI)};
        for (uint32_t p = 0; p < GS_MIG_MAX_PROFILES && p < m->nprofiles; p++) {
            if (!counts[p])
                continue;
            char name[96];
            gs_mig_resource_name(&m->profiles[p], name, sizeof name);
            const char *nm = gs_arena_strdup(&snap->arena, name);
            if (!nm)
                return nomem(err);
            add[nadd++] = (gs_res){nm, gs_quantity_from_int(counts[p], GS_QF_DECIMAL_SI)};
        }
        if (rewrite_resources(snap, &n->allocatable, add, nadd, true) ||
            rewrite_resources(snap, &n->capacity, add, nadd, false) ||
            rewrite_labels(snap, &n->meta.labels, config, ngpus, was_single))
            return nomem(err);
        st->nodes_mig_configured++;
    }
    return 0;
}

/* ---------------------------------------------------------------- CPU-only nodes */

/* Is the pod pinned (required matchFields metadata.name In) to one of the removed nodes
 * only, as a DaemonSet's pods are? */
static bool pinned_to_removed(const gs_pod *p, const gs_intern *removed)
{
    if (!p->required || !p->required->nterms)
        return false;
    for (uint32_t t = 0; t < p->required->nterms; t++) {
        const gs_sel_term *term = &p->required->terms[t];
        bool pinned = false;
        for (uint32_t f = 0; f < term->nfields; f++) {
            const gs_sel_req *r = &term->fields[f];
            if (strcmp(r->key, "metadata.name") != 0 || r->op != GS_SEL_IN)
                continue;
            pinned = true;
            for (uint32_t v = 0; v < r->nvalues; v++)
                if (gs_intern_find(removed, r->values[v], strlen(r->values[v])) < 0)
                    return false; /* a kept node is allowed */
        }
        if (!pinned)
            return false;
    }
    return true;
}

static int drop_cpu_nodes(gs_snapshot *snap, gs_whatif_stats *st, gs_error *err)
{
    gs_intern removed;
    gs_intern_init(&removed);
    size_t keep = 0;
    for (size_t i = 0; i < snap->nodes.n; i++) {
        gs_node *n = &snap->nodes.v[i];
        if (is_gpu_node(n)) {
            snap->nodes.v[keep++] = *n;
            continue;
        }
        if (gs_intern_id(&removed, n->meta.name, strlen(n->meta.name)) < 0) {
            gs_intern_free(&removed);
            return nomem(err);
        }
        st->cpu_nodes_dropped++;
    }
    snap->nodes.n = keep;
    if (removed.n) {
        size_t kp = 0;
        for (size_t i = 0; i < snap->pods.n; i++) {
            gs_pod *p = &snap->pods.v[i];
            if (p->workload && strncmp(p->workload, "DaemonSet/", 10) == 0 &&
                pinned_to_removed(p, &removed)) {
                st->pods_dropped++; /* a DaemonSet's pod for a node that is gone */
                continue;
            }
            if (p->node_name && p->node_name[0] &&
                gs_intern_find(&removed, p->node_name, strlen(p->node_name)) >= 0) {
                p->node_name = ""; /* its node is gone: it arrives again at the start */
                st->pods_unbound++;
            }
            snap->pods.v[kp++] = *p;
        }
        snap->pods.n = kp;
    }
    gs_intern_free(&removed);
    return 0;
}

/* ---------------------------------------------------------------- taint */

static int taint_nodes(gs_snapshot *snap, const gs_whatif *w, const char *key, const char *value,
                       gs_whatif_stats *st, gs_error *err)
{
    for (size_t i = 0; i < snap->nodes.n; i++) {
        gs_node *n = &snap->nodes.v[i];
        if (!is_gpu_node(n))
            continue;
        if (w->gpu_taint == GS_TAINT_ADD) {
            bool has = false;
            for (uint32_t k = 0; k < n->ntaints; k++)
                if (strcmp(n->taints[k].key, key) == 0 &&
                    n->taints[k].effect == GS_EFFECT_NO_SCHEDULE)
                    has = true;
            if (has)
                continue;
            gs_taint *t = gs_arena_alloc(&snap->arena, (n->ntaints + 1) * sizeof *t);
            if (!t)
                return nomem(err);
            if (n->ntaints)
                memcpy(t, n->taints, n->ntaints * sizeof *t);
            t[n->ntaints] = (gs_taint){key, value, GS_EFFECT_NO_SCHEDULE};
            n->taints = t;
            n->ntaints++;
            st->nodes_tainted++;
        } else if (w->gpu_taint == GS_TAINT_STRIP) {
            uint32_t kept = 0;
            gs_taint *t = gs_arena_alloc(&snap->arena, (n->ntaints ? n->ntaints : 1) * sizeof *t);
            if (!t)
                return nomem(err);
            for (uint32_t k = 0; k < n->ntaints; k++)
                if (strcmp(n->taints[k].key, key) != 0)
                    t[kept++] = n->taints[k];
            if (kept != n->ntaints) {
                n->taints = t;
                n->ntaints = kept;
                st->nodes_untainted++;
            }
        }
    }
    return 0;
}

static int tolerate_gpu_pods(gs_snapshot *snap, const char *key, const char *value,
                             gs_whatif_stats *st, gs_error *err)
{
    const gs_taint taint = {key, value, GS_EFFECT_NO_SCHEDULE};
    for (size_t i = 0; i < snap->pods.n; i++) {
        gs_pod *p = &snap->pods.v[i];
        if (!pod_requests_gpu(p))
            continue;
        bool tolerated = false;
        for (uint32_t k = 0; k < p->ntolerations && !tolerated; k++)
            tolerated = gs_toleration_tolerates(&p->tolerations[k], &taint, false);
        if (tolerated)
            continue;
        gs_toleration *t = gs_arena_alloc(&snap->arena, (p->ntolerations + 1) * sizeof *t);
        if (!t)
            return nomem(err);
        if (p->ntolerations)
            memcpy(t, p->tolerations, p->ntolerations * sizeof *t);
        gs_toleration *nt = &t[p->ntolerations];
        memset(nt, 0, sizeof *nt);
        nt->key = key;
        nt->value = "";
        nt->op_raw = "Exists";
        nt->op = GS_TOL_EXISTS;
        nt->effect = GS_EFFECT_NO_SCHEDULE;
        p->tolerations = t;
        p->ntolerations++;
        st->pods_tolerating++;
    }
    return 0;
}

/* ---------------------------------------------------------------- priority classes */

static int set_classes(gs_snapshot *snap, const gs_whatif *w, gs_whatif_stats *st, gs_error *err)
{
    for (uint32_t c = 0; c < w->nclasses; c++) {
        const gs_class_value *cv = &w->classes[c];
        bool found = false;
        for (size_t i = 0; i < snap->priority_classes.n; i++) {
            gs_priority_class *pc = &snap->priority_classes.v[i];
            if (strcmp(pc->meta.name, cv->name) == 0) {
                pc->value = cv->value;
                found = true;
            }
        }
        if (!found) {
            gs_priority_class pc;
            memset(&pc, 0, sizeof pc);
            pc.meta.name = gs_arena_strdup(&snap->arena, cv->name);
            pc.meta.generate_name = pc.meta.namespace_ = pc.meta.uid = "";
            pc.meta.src.file = "";
            pc.meta.input_index = snap->next_index++;
            pc.value = cv->value;
            pc.preemption_policy = GS_PREEMPT_LOWER_PRIORITY;
            if (!pc.meta.name || gs_vec_push(snap->priority_classes, pc))
                return nomem(err);
        }
        st->classes_changed++;
        for (size_t i = 0; i < snap->pods.n; i++) {
            gs_pod *p = &snap->pods.v[i];
            if (p->priority_class_name && strcmp(p->priority_class_name, cv->name) == 0 &&
                p->has_priority) {
                p->priority = cv->value; /* as admission resolved it from the class */
                st->pods_reprioritised++;
            }
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- scale */

static int scale_pods(gs_snapshot *snap, uint64_t num, uint64_t den, gs_whatif_stats *st,
                      gs_error *err)
{
    /* the new pod count first, to bound it */
    uint64_t eligible = 0, bound = 0;
    for (size_t i = 0; i < snap->pods.n; i++) {
        const gs_pod *p = &snap->pods.v[i];
        if (p->node_name && p->node_name[0])
            bound++;
        else
            eligible++;
    }
    uint64_t after = bound + (eligible * num + den - 1) / den;
    if (after > WI_MAX_PODS)
        return gs_fail(err, GS_ERR_LIMIT, "scaling gives %llu pods (more than %u)",
                       (unsigned long long)after, WI_MAX_PODS);
    gs_pod *out = malloc((after ? after : 1) * sizeof *out);
    if (!out)
        return nomem(err);
    size_t o = 0;
    uint64_t i = 0;
    for (size_t k = 0; k < snap->pods.n; k++) {
        const gs_pod *p = &snap->pods.v[k];
        if (p->node_name && p->node_name[0]) {
            out[o++] = *p;
            continue;
        }
        /* copies of eligible pod i: ceil((i+1) num/den) - ceil(i num/den) */
        uint64_t copies = ((i + 1) * num + den - 1) / den - (i * num + den - 1) / den;
        i++;
        if (!copies) {
            st->pods_dropped++;
            continue;
        }
        out[o++] = *p;
        for (uint64_t c = 1; c < copies; c++) {
            gs_pod clone = *p;
            clone.meta.name = gs_arena_printf(&snap->arena, "%s-x%llu", p->meta.name,
                                              (unsigned long long)c);
            clone.meta.uid = "";
            clone.meta.input_index = snap->next_index++;
            if (!clone.meta.name) {
                free(out);
                return nomem(err);
            }
            out[o++] = clone;
            st->pods_cloned++;
        }
    }
    if (gs_vec_reserve(snap->pods, o)) {
        free(out);
        return nomem(err);
    }
    memcpy(snap->pods.v, out, o * sizeof *out);
    snap->pods.n = o;
    free(out);
    return 0;
}

/* ---------------------------------------------------------------- apply */

int gs_whatif_apply(gs_snapshot *snap, const gs_whatif *w, gs_whatif_stats *stats,
                    gs_error *err)
{
    gs_whatif_stats local;
    gs_whatif_stats *st = stats ? stats : &local;
    memset(st, 0, sizeof *st);
    const char *key = w->taint_key && w->taint_key[0] ? w->taint_key : WI_DEFAULT_TAINT_KEY;
    const char *value = w->taint_value ? w->taint_value : WI_DEFAULT_TAINT_VALUE;
    key = gs_arena_strdup(&snap->arena, key);
    value = gs_arena_strdup(&snap->arena, value);
    if (!key || !value)
        return nomem(err);
    if (w->drop_cpu_nodes && drop_cpu_nodes(snap, st, err))
        return -1;
    if (w->mig_config && mig_configure(snap, w, st, err))
        return -1;
    if (w->gpu_taint != GS_TAINT_KEEP && taint_nodes(snap, w, key, value, st, err))
        return -1;
    if (w->tolerate_gpu_pods && tolerate_gpu_pods(snap, key, value, st, err))
        return -1;
    if (w->nclasses && set_classes(snap, w, st, err))
        return -1;
    uint32_t num = w->scale_num, den = w->scale_den;
    if (num && den && num != den && scale_pods(snap, num, den, st, err))
        return -1;
    return 0;
}

/* ---------------------------------------------------------------- parsers */

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Non-negative decimal with at most `maxfrac` fraction digits as value * 10^maxfrac. */
static int parse_fixed(const char *s, size_t n, int maxfrac, uint64_t *out)
{
    uint64_t v = 0;
    int frac = -1;
    bool digits = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '.' && frac < 0) {
            frac = 0;
            continue;
        }
        if (c < '0' || c > '9')
            return -1;
        if (frac >= 0 && ++frac > maxfrac)
            return -1;
        if (v > 100000000000ULL)
            return -1;
        v = v * 10 + (uint64_t)(c - '0');
        digits = true;
    }
    if (!digits)
        return -1;
    for (int f = frac < 0 ? 0 : frac; f < maxfrac; f++)
        v *= 10;
    *out = v;
    return 0;
}

int gs_whatif_parse_scale(const char *s, uint32_t *num, uint32_t *den, gs_error *err)
{
    const char *p = s;
    if (*p == 'x' || *p == 'X')
        p++;
    uint64_t n, d;
    const char *slash = strchr(p, '/');
    int bad;
    if (slash) {
        bad = parse_fixed(p, (size_t)(slash - p), 0, &n) || parse_fixed(slash + 1, strlen(slash + 1), 0, &d);
    } else {
        bad = parse_fixed(p, strlen(p), 6, &n);
        d = 1000000;
    }
    if (bad || d == 0 || n == 0 || n > 1000 * d)
        return gs_fail(err, GS_ERR_USAGE,
                       "--scale: expected a factor in (0, 1000] such as 0.5, x2, 1.25 or 3/4, got \"%s\"",
                       s);
    uint64_t g = gcd64(n, d);
    n /= g;
    d /= g;
    if (n > UINT32_MAX || d > UINT32_MAX)
        return gs_fail(err, GS_ERR_USAGE, "--scale: \"%s\" is too fine", s);
    *num = (uint32_t)n;
    *den = (uint32_t)d;
    return 0;
}

/* Split "a,b,c" and call fn on each non-empty item; an empty item is an error. */
typedef int (*item_fn)(const char *item, size_t len, void *ctx, gs_error *err);

static int each_item(const char *what, const char *s, item_fn fn, void *ctx, gs_error *err)
{
    if (!*s)
        return gs_fail(err, GS_ERR_USAGE, "%s: empty list", what);
    while (*s) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (!len)
            return gs_fail(err, GS_ERR_USAGE, "%s: empty item", what);
        if (fn(s, len, ctx, err))
            return -1;
        s += len;
        if (*s == ',') {
            s++;
            if (!*s)
                return gs_fail(err, GS_ERR_USAGE, "%s: trailing comma", what);
        }
    }
    return 0;
}

static int parse_i32(const char *s, size_t n, int32_t *out)
{
    int64_t v;
    if (gs_parse_i64(s, n, &v) || v < INT32_MIN || v > INT32_MAX)
        return -1;
    *out = (int32_t)v;
    return 0;
}

typedef struct class_ctx {
    gs_arena *arena;
    GS_VEC(gs_class_value) v;
} class_ctx;

static int class_item(const char *s, size_t len, void *ctx, gs_error *err)
{
    class_ctx *c = ctx;
    const char *eq = memchr(s, '=', len);
    if (!eq || eq == s)
        return gs_fail(err, GS_ERR_USAGE, "--priority-class: expected NAME=VALUE, got \"%.*s\"",
                       (int)len, s);
    gs_class_value cv;
    if (parse_i32(eq + 1, len - (size_t)(eq + 1 - s), &cv.value))
        return gs_fail(err, GS_ERR_USAGE, "--priority-class: \"%.*s\": the value must be a 32-bit integer",
                       (int)len, s);
    cv.name = gs_arena_strndup(c->arena, s, (size_t)(eq - s));
    if (!cv.name || gs_vec_push(c->v, cv))
        return nomem(err);
    return 0;
}

int gs_whatif_parse_classes(const char *s, gs_arena *arena, gs_class_value **out, uint32_t *n,
                            gs_error *err)
{
    class_ctx c = {arena, {NULL, 0, 0}};
    if (each_item("--priority-class", s, class_item, &c, err)) {
        gs_vec_free(c.v);
        return -1;
    }
    *out = gs_arena_memdup(arena, c.v.v, c.v.n * sizeof *c.v.v);
    *n = (uint32_t)c.v.n;
    gs_vec_free(c.v);
    return *out ? 0 : nomem(err);
}

typedef struct qos_ctx {
    gs_arena *arena;
    GS_VEC(gs_qos_class) v;
} qos_ctx;

static int qos_item(const char *s, size_t len, void *ctx, gs_error *err)
{
    qos_ctx *c = ctx;
    const char *eq = memchr(s, '=', len);
    const char *colon = eq ? memchr(eq, ':', len - (size_t)(eq - s)) : NULL;
    if (!eq || !colon || eq == s || colon == eq + 1)
        return gs_fail(err, GS_ERR_USAGE, "--qos-map: expected QOS=CLASS:VALUE, got \"%.*s\"",
                       (int)len, s);
    gs_qos_class q;
    memset(&q, 0, sizeof q);
    if (parse_i32(colon + 1, len - (size_t)(colon + 1 - s), &q.value))
        return gs_fail(err, GS_ERR_USAGE, "--qos-map: \"%.*s\": the value must be a 32-bit integer",
                       (int)len, s);
    q.qos = gs_arena_strndup(c->arena, s, (size_t)(eq - s));
    q.class_name = gs_arena_strndup(c->arena, eq + 1, (size_t)(colon - eq - 1));
    q.preemption = GS_PREEMPT_UNSET;
    if (!q.qos || !q.class_name)
        return nomem(err);
    for (size_t i = 0; i < c->v.n; i++)
        if (strcmp(c->v.v[i].qos, q.qos) == 0) {
            c->v.v[i] = q; /* named again: replace */
            return 0;
        }
    if (gs_vec_push(c->v, q)) /* "*" is only a fallback wherever it stands */
        return nomem(err);
    return 0;
}

int gs_whatif_parse_qos_map(const char *s, gs_arena *arena, gs_qos_class **out, uint32_t *n,
                            gs_error *err)
{
    qos_ctx c = {arena, {NULL, 0, 0}};
    uint32_t nd;
    const gs_qos_class *dflt = gs_openb_default_qos(&nd);
    for (uint32_t i = 0; i < nd; i++)
        if (gs_vec_push(c.v, dflt[i])) {
            gs_vec_free(c.v);
            return nomem(err);
        }
    if (each_item("--qos-map", s, qos_item, &c, err)) {
        gs_vec_free(c.v);
        return -1;
    }
    *out = gs_arena_memdup(arena, c.v.v, c.v.n * sizeof *c.v.v);
    *n = (uint32_t)c.v.n;
    gs_vec_free(c.v);
    return *out ? 0 : nomem(err);
}
