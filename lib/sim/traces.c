/*
 * traces.c - workload inputs of the replay method: openb rows turned into snapshot nodes
 * and pods, the JSON-lines trace format, and the arrival/duration annotations every pod of
 * a replay carries (gpusched.io/arrival, gpusched.io/duration).
 *
 * Objects are built the way the manifest reader builds them: every string and array lives
 * in snap->arena, labels/annotations and resource lists are sorted by key, meta.src points
 * at the input file and line, input_index counts in input order.
 *
 * The JSON-lines reader has its own small strict JSON parser (RFC 8259 values, one object
 * per line, depth <= 16, \u escapes with surrogate pairs, no NUL): a line is parsed into a
 * tree in a scratch arena reset per line, then decoded field by field with the column of
 * each value for errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/quantity.h"
#include "gpusched/replay.h"
#include "sim_int.h"
#include "util/json_int.h"

#define TR_DEFAULT_FILE_BYTES ((size_t)256 << 20)
#define TR_DEFAULT_LINE_BYTES (1u << 20)
#define TR_DEFAULT_PODS 10000000u
#define TR_MAX_DEPTH 16
#define TR_MAX_NAME 253
#define TR_MAX_NAMESPACE 63
#define TR_MAX_ITEMS 4096 /* labels, tolerations, models ... per pod */

#define R_OPENB_COUNT "alibabacloud.com/gpu-count"
#define R_OPENB_MILLI "alibabacloud.com/gpu-milli"
#define L_CARD_MODEL "alibabacloud.com/gpu-card-model"
#define A_OPENB_MILLI "gpu-milli"
#define A_OPENB_COUNT "gpu-count"
#define A_OPENB_MODEL "gpu-card-model"
#define A_GS_COUNT "gpusched.io/gpu-count"
#define A_GS_MILLI "gpusched.io/gpu-milli"
#define A_GS_MEMORY "gpusched.io/gpu-memory"
#define A_GS_MODEL "gpusched.io/gpu-model"

/* ================================================================ durations and times */

/* The Go-duration parser is gs_parse_duration (util); this name stays for sim.h's callers. */
int gs_trace_parse_duration(const char *s, int64_t *seconds) { return gs_parse_duration(s, seconds); }

int gs_trace_parse_time(const char *s, int64_t *seconds)
{
    if (!s || !*s)
        return -1;
    int64_t v;
    if (gs_parse_i64(s, strlen(s), &v) == 0) {
        if (v == INT64_MIN)
            return -1;
        *seconds = v;
        return 0;
    }
    return gs_parse_rfc3339(s, seconds);
}

static void pod_path(const gs_pod *p, char *buf, size_t cap)
{
    const char *ns = p->meta.namespace_ ? p->meta.namespace_ : "";
    snprintf(buf, cap, "Pod %.63s%s%.200s", ns, *ns ? "/" : "", p->meta.name ? p->meta.name : "");
}

int gs_trace_times(const gs_snapshot *snap, int64_t *arrival, int64_t *duration, gs_error *err)
{
    for (size_t i = 0; i < snap->pods.n; i++) {
        const gs_pod *p = &snap->pods.v[i];
        const char *a = gs_labels_get(&p->meta.annotations, GS_ANN_ARRIVAL);
        const char *d = gs_labels_get(&p->meta.annotations, GS_ANN_DURATION);
        char path[GS_ERR_PATH_MAX];
        if (p->node_name && p->node_name[0]) {
            arrival[i] = INT64_MIN;
        } else if (a) {
            if (gs_trace_parse_time(a, &arrival[i]) < 0) {
                pod_path(p, path, sizeof path);
                return gs_error_set(err, GS_ERR_INVALID, p->meta.src.file, (int)p->meta.src.line,
                                    (int)p->meta.src.col, path,
                                    "metadata.annotations[%s]: \"%.40s\" is neither an RFC3339 "
                                    "time nor integer seconds",
                                    GS_ANN_ARRIVAL, a);
            }
        } else {
            arrival[i] = p->meta.has_creation ? p->meta.creation : 0;
        }
        if (d) {
            if (gs_parse_duration(d, &duration[i]) < 0) {
                pod_path(p, path, sizeof path);
                return gs_error_set(err, GS_ERR_INVALID, p->meta.src.file, (int)p->meta.src.line,
                                    (int)p->meta.src.col, path,
                                    "metadata.annotations[%s]: \"%.40s\" is not a duration "
                                    "(\"2h30m\", \"90s\", \"1.5h\" or integer seconds)",
                                    GS_ANN_DURATION, d);
            }
        } else {
            duration[i] = GS_REPLAY_FOREVER;
        }
    }
    return 0;
}

/* ================================================================ object building */

static int nomem(gs_error *err) { return gs_fail(err, GS_ERR_NOMEM, "out of memory building objects"); }

static int cmp_kv(const void *a, const void *b)
{
    return strcmp(((const gs_kv *)a)->key, ((const gs_kv *)b)->key);
}

static int cmp_res(const void *a, const void *b)
{
    return strcmp(((const gs_res *)a)->name, ((const gs_res *)b)->name);
}

/* Copy kvs into the arena sorted by key; returns the duplicate key or NULL. */
static int make_labels(gs_arena *a, const gs_kv *kvs, uint32_t n, gs_labels *out,
                       const char **dup, gs_error *err)
{
    *dup = NULL;
    out->items = NULL;
    out->n = 0;
    if (!n)
        return 0;
    gs_kv *items = gs_arena_memdup(a, kvs, sizeof *items * n);
    if (!items)
        return nomem(err);
    qsort(items, n, sizeof *items, cmp_kv);
    for (uint32_t i = 1; i < n; i++)
        if (strcmp(items[i - 1].key, items[i].key) == 0) {
            *dup = items[i].key;
            return -1;
        }
    out->items = items;
    out->n = n;
    return 0;
}

static int make_reslist(gs_arena *a, const gs_res *res, uint32_t n, gs_reslist *out, gs_error *err)
{
    out->items = NULL;
    out->n = 0;
    if (!n)
        return 0;
    gs_res *items = gs_arena_memdup(a, res, sizeof *items * n);
    if (!items)
        return nomem(err);
    qsort(items, n, sizeof *items, cmp_res);
    out->items = items;
    out->n = n;
    return 0;
}

/* Names already in the snapshot: "ns/name" for pods, "name" for nodes. */
static int seen_pods(const gs_snapshot *snap, gs_intern *t, gs_error *err)
{
    char key[512];
    for (size_t i = 0; i < snap->pods.n; i++) {
        const gs_pod *p = &snap->pods.v[i];
        int n = snprintf(key, sizeof key, "%s/%s", p->meta.namespace_, p->meta.name);
        if (n < 0 || (size_t)n >= sizeof key)
            continue;
        if (gs_intern_id(t, key, (size_t)n) < 0)
            return nomem(err);
    }
    return 0;
}

/* Insert "ns/name"; 1 when it was already there. */
static int claim_pod_name(gs_intern *t, const char *ns, const char *name, gs_error *err)
{
    char key[512];
    int n = snprintf(key, sizeof key, "%s/%s", ns, name);
    if (n < 0 || (size_t)n >= sizeof key)
        return 0;
    if (gs_intern_find(t, key, (size_t)n) >= 0)
        return 1;
    if (gs_intern_id(t, key, (size_t)n) < 0)
        return nomem(err);
    return 0;
}

/* ================================================================ openb -> snapshot */

static const gs_qos_class default_qos[] = {
    {"LS", "latency-sensitive", 10000, GS_PREEMPT_UNSET},
    {"BE", "best-effort", 0, GS_PREEMPT_UNSET},
    {"Burstable", "burstable", 1000, GS_PREEMPT_UNSET},
    {"*", "burstable", 1000, GS_PREEMPT_UNSET},
};

const gs_qos_class *gs_openb_default_qos(uint32_t *count)
{
    if (count)
        *count = (uint32_t)(sizeof default_qos / sizeof default_qos[0]);
    return default_qos;
}

void gs_openb_pod_opts_defaults(gs_openb_pod_opts *o)
{
    memset(o, 0, sizeof *o);
    o->add_priority_classes = true;
    o->times = true;
}

int gs_openb_add_nodes(gs_snapshot *snap, const gs_openb *t, gs_error *err)
{
    if (snap->finished)
        return gs_fail(err, GS_ERR_USAGE,
                       "snapshot already finished; add openb nodes before gs_snapshot_finish()");
    gs_intern names;
    gs_intern_init(&names);
    int rc = -1;
    size_t old_nodes = snap->nodes.n;
    uint32_t old_index = snap->next_index;
    for (size_t i = 0; i < snap->nodes.n; i++)
        if (gs_intern_id(&names, snap->nodes.v[i].meta.name, strlen(snap->nodes.v[i].meta.name)) < 0) {
            nomem(err);
            goto out;
        }
    for (size_t i = 0; i < t->nodes.n; i++) {
        const gs_openb_node *row = &t->nodes.v[i];
        if (gs_intern_find(&names, row->name, strlen(row->name)) >= 0) {
            gs_error_set(err, GS_ERR_INVALID, row->src.file, (int)row->src.line, 1, NULL,
                         "node %.200s is already in the snapshot", row->name);
            goto out;
        }
        if (gs_intern_id(&names, row->name, strlen(row->name)) < 0) {
            nomem(err);
            goto out;
        }
        gs_node n;
        memset(&n, 0, sizeof n);
        gs_arena *a = &snap->arena;
        n.meta.name = gs_arena_strdup(a, row->name);
        n.meta.generate_name = "";
        n.meta.namespace_ = "";
        n.meta.uid = "";
        n.meta.src = row->src;
        n.meta.src.file = gs_arena_strdup(a, row->src.file ? row->src.file : "");
        n.ready = true;
        gs_res res[5];
        uint32_t nres = 0;
        res[nres++] = (gs_res){"cpu", gs_quantity_from_milli(row->cpu_milli, GS_QF_DECIMAL_SI)};
        res[nres++] = (gs_res){"memory", gs_quantity_from_int(row->memory_mib * 1048576LL,
                                                              GS_QF_BINARY_SI)};
        res[nres++] = (gs_res){"pods", gs_quantity_from_int(GS_SIM_MAX_PODS_PER_NODE, GS_QF_DECIMAL_SI)};
        if (row->gpus > 0) {
            res[nres++] = (gs_res){R_OPENB_COUNT, gs_quantity_from_int(row->gpus, GS_QF_DECIMAL_SI)};
            res[nres++] = (gs_res){R_OPENB_MILLI,
                                   gs_quantity_from_int((int64_t)row->gpus * 1000, GS_QF_DECIMAL_SI)};
            if (row->model && row->model[0]) {
                gs_kv label = {L_CARD_MODEL, gs_arena_strdup(a, row->model)};
                const char *dup;
                if (!label.val || make_labels(a, &label, 1, &n.meta.labels, &dup, err) < 0) {
                    nomem(err);
                    goto out;
                }
            }
        }
        if (!n.meta.name || !n.meta.src.file || make_reslist(a, res, nres, &n.capacity, err) < 0) {
            nomem(err);
            goto out;
        }
        n.allocatable = n.capacity;
        n.meta.input_index = snap->next_index;
        if (gs_vec_push(snap->nodes, n) < 0) {
            nomem(err);
            goto out;
        }
        snap->next_index++;
    }
    rc = 0;
out:
    if (rc < 0) { /* nothing of a failed call stays in the snapshot */
        snap->nodes.n = old_nodes;
        snap->next_index = old_index;
    }
    gs_intern_free(&names);
    return rc;
}

static const gs_qos_class *qos_lookup(const gs_qos_class *tab, uint32_t n, const char *qos)
{
    const gs_qos_class *any = NULL;
    for (uint32_t i = 0; i < n; i++) {
        if (strcmp(tab[i].qos, "*") == 0) {
            if (!any)
                any = &tab[i];
        } else if (strcmp(tab[i].qos, qos) == 0) {
            return &tab[i];
        }
    }
    return any;
}

static int ensure_priority_class(gs_snapshot *snap, const gs_qos_class *c, gs_error *err)
{
    for (size_t i = 0; i < snap->priority_classes.n; i++)
        if (strcmp(snap->priority_classes.v[i].meta.name, c->class_name) == 0)
            return 0; /* the snapshot's own definition wins */
    gs_priority_class pc;
    memset(&pc, 0, sizeof pc);
    pc.meta.name = gs_arena_strdup(&snap->arena, c->class_name);
    pc.meta.generate_name = "";
    pc.meta.namespace_ = "";
    pc.meta.uid = "";
    pc.meta.src.file = "";
    pc.value = c->value;
    pc.preemption_policy = c->preemption;
    if (!pc.meta.name)
        return nomem(err);
    pc.meta.input_index = snap->next_index;
    if (gs_vec_push(snap->priority_classes, pc) < 0)
        return nomem(err);
    snap->next_index++;
    return 0;
}

int gs_openb_add_pods(gs_snapshot *snap, const gs_openb *t, const gs_openb_pod_opts *opts,
                      gs_error *err)
{
    gs_openb_pod_opts o;
    if (opts)
        o = *opts;
    else
        gs_openb_pod_opts_defaults(&o);
    if (!o.qos || !o.nqos)
        o.qos = gs_openb_default_qos(&o.nqos);
    const char *ns_in = o.namespace_ && o.namespace_[0] ? o.namespace_ : "default";
    if (snap->finished)
        return gs_fail(err, GS_ERR_USAGE,
                       "snapshot already finished; add openb pods before gs_snapshot_finish()");
    gs_arena *a = &snap->arena;
    const char *ns = gs_arena_strdup(a, ns_in);
    if (!ns)
        return nomem(err);
    gs_intern names;
    gs_intern_init(&names);
    int rc = -1;
    size_t old_pods = snap->pods.n, old_classes = snap->priority_classes.n;
    uint32_t old_index = snap->next_index;
    if (seen_pods(snap, &names, err) < 0)
        goto out;
    for (size_t i = 0; i < t->pods.n; i++) {
        const gs_openb_pod *row = &t->pods.v[i];
        int claimed = claim_pod_name(&names, ns, row->name, err);
        if (claimed < 0)
            goto out;
        if (claimed) {
            gs_error_set(err, GS_ERR_INVALID, row->src.file, (int)row->src.line, 1, NULL,
                         "pod %.63s/%.180s is already in the snapshot", ns, row->name);
            goto out;
        }
        const gs_qos_class *qc = qos_lookup(o.qos, o.nqos, row->qos ? row->qos : "");
        if (qc && o.add_priority_classes && ensure_priority_class(snap, qc, err) < 0)
            goto out;
        gs_pod p;
        memset(&p, 0, sizeof p);
        p.meta.name = gs_arena_strdup(a, row->name);
        p.meta.generate_name = "";
        p.meta.namespace_ = ns;
        p.meta.uid = "";
        p.meta.src = row->src;
        p.meta.src.file = gs_arena_strdup(a, row->src.file ? row->src.file : "");
        if (row->has_creation) {
            p.meta.has_creation = true;
            p.meta.creation = row->creation_time;
        }
        p.node_name = "";
        p.scheduler_name = "default-scheduler";
        p.priority_class_name = qc ? gs_arena_strdup(a, qc->class_name) : "";
        p.phase = "";
        p.nominated_node = "";
        gs_kv ann[8];
        uint32_t nann = 0;
        if (row->num_gpu != 0) {
            int64_t milli = row->gpu_milli > 1000 ? 1000 : row->gpu_milli < 0 ? 0 : row->gpu_milli;
            ann[nann++] = (gs_kv){A_OPENB_MILLI, gs_arena_printf(a, "%lld", (long long)milli)};
            ann[nann++] = (gs_kv){A_OPENB_COUNT, gs_arena_printf(a, "%u", row->num_gpu)};
            if (row->gpu_spec && row->gpu_spec[0]) {
                /* empty parts removed, duplicates kept, as the trace converter does */
                size_t n = strlen(row->gpu_spec), k = 0;
                char *spec = gs_arena_alloc(a, n + 1);
                if (!spec) {
                    nomem(err);
                    goto out;
                }
                for (const char *s = row->gpu_spec; *s;) {
                    const char *bar = strchr(s, '|');
                    size_t len = bar ? (size_t)(bar - s) : strlen(s);
                    if (len) {
                        if (k)
                            spec[k++] = '|';
                        memcpy(spec + k, s, len);
                        k += len;
                    }
                    s += len + (bar ? 1 : 0);
                }
                spec[k] = 0;
                if (k)
                    ann[nann++] = (gs_kv){A_OPENB_MODEL, spec};
            }
        }
        if (o.times) {
            int64_t arrival = row->has_creation ? row->creation_time : 0;
            ann[nann++] = (gs_kv){GS_ANN_ARRIVAL, gs_arena_printf(a, "%lld", (long long)arrival)};
            if (row->has_deletion) {
                int64_t start = row->has_scheduled ? row->scheduled_time
                                : row->has_creation ? row->creation_time
                                                    : 0;
                /* deleted before it started (never in the shipped traces): it leaves at once */
                int64_t d = row->deletion_time >= start ? row->deletion_time - start : 0;
                ann[nann++] = (gs_kv){GS_ANN_DURATION, gs_arena_printf(a, "%lld", (long long)d)};
            }
        }
        if (row->qos && row->qos[0])
            ann[nann++] = (gs_kv){GS_ANN_OPENB_QOS, gs_arena_strdup(a, row->qos)};
        for (uint32_t k = 0; k < nann; k++)
            if (!ann[k].val) {
                nomem(err);
                goto out;
            }
        const char *dup;
        gs_container *c = gs_arena_alloc(a, sizeof *c);
        if (!p.meta.name || !p.meta.src.file || !p.priority_class_name || !c ||
            make_labels(a, ann, nann, &p.meta.annotations, &dup, err) < 0) {
            nomem(err);
            goto out;
        }
        c->name = "main";
        gs_res res[2] = {
            {"cpu", gs_quantity_from_milli(row->cpu_milli, GS_QF_DECIMAL_SI)},
            {"memory", gs_quantity_from_int(row->memory_mib * 1048576LL, GS_QF_BINARY_SI)},
        };
        if (make_reslist(a, res, 2, &c->requests, err) < 0)
            goto out;
        c->limits = c->requests;
        p.containers = c;
        p.ncontainers = 1;
        p.meta.input_index = snap->next_index;
        if (gs_vec_push(snap->pods, p) < 0) {
            nomem(err);
            goto out;
        }
        snap->next_index++;
    }
    rc = 0;
out:
    if (rc < 0) { /* nothing of a failed call stays in the snapshot */
        snap->pods.n = old_pods;
        snap->priority_classes.n = old_classes;
        snap->next_index = old_index;
    }
    gs_intern_free(&names);
    return rc;
}

/* ================================================================ JSON-lines pods */

typedef GS_VEC(gs_kv) kv_vec;

typedef struct jl {
    const char *file;
    uint32_t line;
    const char *text; /* the line being read: columns are counted in it */
    gs_arena *scratch;
    gs_snapshot *snap;
    gs_error *err;
    char obj[320]; /* "Pod ns/name" once known */
} jl;

static int jl_fail(jl *d, const gs_jv *at, gs_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int jl_fail(jl *d, const gs_jv *at, gs_code code, const char *fmt, ...)
{
    if (!d->err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int line = (int)d->line, col = 1;
    if (at)
        gs_json_where(d->text, (int)d->line, at, &line, &col);
    gs_error_setv(d->err, code, d->file, line, col,
                  d->obj[0] ? d->obj : NULL, fmt, ap);
    va_end(ap);
    return -1;
}

static int want(jl *d, const gs_jv *v, gs_jtype t, const char *field)
{
    if (v->t == t)
        return 0;
    return jl_fail(d, v, GS_ERR_INVALID, "%s: expected %s, got %s", field, gs_json_type_name(t),
                   gs_json_type_name(v->t));
}

static int jint(jl *d, const gs_jv *v, const char *field, int64_t lo, int64_t hi, int64_t *out)
{
    if (want(d, v, GS_JNUM, field) < 0)
        return -1;
    int64_t x;
    if (gs_parse_i64(v->s, v->n, &x) < 0)
        return jl_fail(d, v, GS_ERR_INVALID, "%s: expected an integer, got %s", field, v->s);
    if (x < lo || x > hi)
        return jl_fail(d, v, GS_ERR_INVALID, "%s: %lld is out of range [%lld, %lld]", field,
                       (long long)x, (long long)lo, (long long)hi);
    *out = x;
    return 0;
}

static int jquantity(jl *d, const gs_jv *v, const char *field, gs_quantity *q)
{
    if (v->t != GS_JSTR && v->t != GS_JNUM)
        return jl_fail(d, v, GS_ERR_INVALID, "%s: expected a quantity (\"500m\", \"16Gi\" or a number), got %s",
                       field, gs_json_type_name(v->t));
    gs_error qe;
    gs_error_clear(&qe);
    if (gs_quantity_parse(v->s, v->n, q, &qe) < 0)
        return jl_fail(d, v, qe.code ? qe.code : GS_ERR_INVALID, "%s: %s", field, qe.msg);
    if (q->nanos < 0)
        return jl_fail(d, v, GS_ERR_INVALID, "%s: must not be negative", field);
    return 0;
}

static const char *keep(jl *d, const char *s)
{
    const char *c = gs_arena_strdup(&d->snap->arena, s);
    if (!c)
        gs_fail(d->err, GS_ERR_NOMEM, "out of memory reading %s", d->file);
    return c;
}

/* Object of strings -> kv list (strings kept in the snapshot arena). */
static int jstrmap(jl *d, const gs_jv *v, const char *field, kv_vec *out)
{
    if (want(d, v, GS_JOBJ, field) < 0)
        return -1;
    for (uint32_t i = 0; i < v->n; i++) {
        const gs_jv *k = &v->kids[2 * i], *val = &v->kids[2 * i + 1];
        if (val->t != GS_JSTR)
            return jl_fail(d, val, GS_ERR_INVALID, "%s[%s]: expected a string, got %s", field,
                           k->s, gs_json_type_name(val->t));
        gs_kv kv = {keep(d, k->s), keep(d, val->s)};
        if (!kv.key || !kv.val)
            return -1;
        if (gs_vec_push(*out, kv) < 0)
            return gs_fail(d->err, GS_ERR_NOMEM, "out of memory");
    }
    return 0;
}

static int jtolerations(jl *d, const gs_jv *v, gs_pod *pod)
{
    if (want(d, v, GS_JARR, "tolerations") < 0)
        return -1;
    if (!v->n)
        return 0;
    gs_toleration *tols = gs_arena_alloc(&d->snap->arena, sizeof *tols * v->n);
    if (!tols)
        return gs_fail(d->err, GS_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < v->n; i++) {
        const gs_jv *t = &v->kids[i];
        gs_toleration *tol = &tols[i];
        memset(tol, 0, sizeof *tol);
        tol->key = tol->value = tol->op_raw = "";
        if (want(d, t, GS_JOBJ, "tolerations[]") < 0)
            return -1;
        const char *effect = "";
        for (uint32_t k = 0; k < t->n; k++) {
            const char *key = t->kids[2 * k].s;
            const gs_jv *val = &t->kids[2 * k + 1];
            if (strcmp(key, "tolerationSeconds") == 0) {
                if (val->t == GS_JNULL)
                    continue;
                int64_t s;
                if (jint(d, val, "tolerations[].tolerationSeconds", INT64_MIN + 1, INT64_MAX, &s) < 0)
                    return -1;
                tol->has_seconds = true;
                tol->seconds = s;
                continue;
            }
            const char **dst = strcmp(key, "key") == 0        ? &tol->key
                               : strcmp(key, "value") == 0    ? &tol->value
                               : strcmp(key, "operator") == 0 ? &tol->op_raw
                               : strcmp(key, "effect") == 0   ? &effect
                                                              : NULL;
            if (!dst)
                return jl_fail(d, &t->kids[2 * k], GS_ERR_INVALID,
                               "tolerations[]: unknown key \"%.40s\" (key, operator, value, "
                               "effect, tolerationSeconds)",
                               key);
            if (val->t == GS_JNULL)
                continue;
            if (want(d, val, GS_JSTR, "tolerations[]") < 0 || !(*dst = keep(d, val->s)))
                return -1;
        }
        if (!tol->op_raw[0] || strcmp(tol->op_raw, "Equal") == 0)
            tol->op = GS_TOL_EQUAL;
        else if (strcmp(tol->op_raw, "Exists") == 0)
            tol->op = GS_TOL_EXISTS;
        else if (strcmp(tol->op_raw, "Lt") == 0)
            tol->op = GS_TOL_LT;
        else if (strcmp(tol->op_raw, "Gt") == 0)
            tol->op = GS_TOL_GT;
        else
            tol->op = GS_TOL_OTHER;
        if (!effect[0])
            tol->effect = GS_EFFECT_ANY;
        else if (strcmp(effect, "NoSchedule") == 0)
            tol->effect = GS_EFFECT_NO_SCHEDULE;
        else if (strcmp(effect, "PreferNoSchedule") == 0)
            tol->effect = GS_EFFECT_PREFER_NO_SCHEDULE;
        else if (strcmp(effect, "NoExecute") == 0)
            tol->effect = GS_EFFECT_NO_EXECUTE;
        else
            tol->effect = GS_EFFECT_INVALID;
    }
    pod->tolerations = tols;
    pod->ntolerations = v->n;
    return 0;
}

/* "gpu": a number (whole GPUs) or the canonical object. Adds annotations or a MIG
 * resource. */
static int jgpu(jl *d, const gs_jv *v, kv_vec *ann, gs_res *res, uint32_t *nres)
{
    gs_arena *a = &d->snap->arena;
    int64_t count = 1, milli = -1, mem = -1;
    const char *models = NULL, *mig = NULL;
    if (v->t == GS_JNULL)
        return 0;
    if (v->t == GS_JNUM) {
        if (jint(d, v, "gpu", 0, UINT16_MAX, &count) < 0)
            return -1;
    } else {
        if (want(d, v, GS_JOBJ, "gpu") < 0)
            return -1;
        for (uint32_t k = 0; k < v->n; k++) {
            const char *key = v->kids[2 * k].s;
            const gs_jv *val = &v->kids[2 * k + 1];
            if (strcmp(key, "count") == 0) {
                if (jint(d, val, "gpu.count", 0, UINT16_MAX, &count) < 0)
                    return -1;
            } else if (strcmp(key, "milli") == 0) {
                if (jint(d, val, "gpu.milli", 0, 1000, &milli) < 0)
                    return -1;
            } else if (strcmp(key, "memory") == 0) {
                if (jint(d, val, "gpu.memory", 0, UINT32_MAX, &mem) < 0)
                    return -1;
            } else if (strcmp(key, "mig") == 0) {
                if (want(d, val, GS_JSTR, "gpu.mig") < 0)
                    return -1;
                if (!val->n || val->n > 24 || strspn(val->s, "0123456789abcdefghijklmnopqrstuvwxyz.+") != val->n)
                    return jl_fail(d, val, GS_ERR_INVALID, "gpu.mig: \"%.40s\" is not a MIG profile name (\"1g.10gb\")",
                                   val->s);
                mig = val->s;
            } else if (strcmp(key, "models") == 0) {
                if (val->t == GS_JSTR) {
                    models = val->s;
                } else {
                    if (want(d, val, GS_JARR, "gpu.models") < 0)
                        return -1;
                    gs_strbuf sb = GS_STRBUF_INIT;
                    for (uint32_t i = 0; i < val->n; i++) {
                        const gs_jv *m = &val->kids[i];
                        if (m->t != GS_JSTR || strchr(m->s, '|') || !m->n) {
                            gs_strbuf_free(&sb);
                            return jl_fail(d, m, GS_ERR_INVALID,
                                           "gpu.models[]: expected a non-empty model name "
                                           "without '|'");
                        }
                        if (i)
                            gs_strbuf_putc(&sb, '|');
                        gs_strbuf_puts(&sb, m->s);
                    }
                    if (sb.oom) {
                        gs_strbuf_free(&sb);
                        return gs_fail(d->err, GS_ERR_NOMEM, "out of memory");
                    }
                    models = gs_arena_strdup(d->scratch, gs_strbuf_cstr(&sb));
                    gs_strbuf_free(&sb);
                    if (!models)
                        return gs_fail(d->err, GS_ERR_NOMEM, "out of memory");
                }
            } else {
                return jl_fail(d, &v->kids[2 * k], GS_ERR_INVALID,
                               "gpu: unknown key \"%.40s\" (count, milli, memory, models, mig)", key);
            }
        }
    }
    if (count == 0)
        return 0;
    if (mig) {
        if (milli >= 0 || mem >= 0)
            return jl_fail(d, v, GS_ERR_INVALID, "gpu: a MIG request takes no milli or memory");
        char *name = gs_arena_printf(a, "nvidia.com/mig-%s", mig);
        if (!name)
            return gs_fail(d->err, GS_ERR_NOMEM, "out of memory");
        for (char *s = name; *s; s++)
            if (*s == '+')
                *s = '.';
        res[(*nres)++] = (gs_res){name, gs_quantity_from_int(count, GS_QF_DECIMAL_SI)};
    } else {
        gs_kv kv = {A_GS_COUNT, gs_arena_printf(a, "%lld", (long long)count)};
        if (!kv.val || gs_vec_push(*ann, kv) < 0)
            return gs_fail(d->err, GS_ERR_NOMEM, "out of memory");
        if (milli >= 0) {
            kv = (gs_kv){A_GS_MILLI, gs_arena_printf(a, "%lld", (long long)milli)};
            if (!kv.val || gs_vec_push(*ann, kv) < 0)
                return gs_fail(d->err, GS_ERR_NOMEM, "out of memory");
        }
        if (mem >= 0) {
            kv = (gs_kv){A_GS_MEMORY, gs_arena_printf(a, "%lld", (long long)mem)};
            if (!kv.val || gs_vec_push(*ann, kv) < 0)
                return gs_fail(d->err, GS_ERR_NOMEM, "out of memory");
        }
    }
    if (models && models[0]) {
        gs_kv kv = {A_GS_MODEL, keep(d, models)};
        if (!kv.val || gs_vec_push(*ann, kv) < 0)
            return gs_fail(d->err, GS_ERR_NOMEM, "out of memory");
    }
    return 0;
}

static int jl_pod(jl *d, const gs_jv *root, gs_intern *names)
{
    gs_arena *a = &d->snap->arena;
    gs_pod pod;
    memset(&pod, 0, sizeof pod);
    kv_vec ann = {0}, labels = {0}, selector = {0};
    gs_res res[4];
    uint32_t nres = 0;
    int rc = -1;
    const gs_jv *name = NULL, *ns = NULL;
    int64_t arrival = 0;
    bool has_duration = false;
    int64_t duration = 0;
    bool has_cpu = false, has_mem = false;
    gs_quantity cpu, mem;
    d->obj[0] = 0;
    if (root->t != GS_JOBJ) {
        jl_fail(d, root, GS_ERR_INVALID, "a line must hold one JSON object (a pod)");
        goto out;
    }
    pod.meta.generate_name = "";
    pod.meta.uid = "";
    pod.node_name = "";
    pod.scheduler_name = "default-scheduler";
    pod.priority_class_name = "";
    pod.phase = "";
    pod.nominated_node = "";
    for (uint32_t k = 0; k < root->n; k++)
        for (uint32_t m = 0; m < k; m++)
            if (strcmp(root->kids[2 * k].s, root->kids[2 * m].s) == 0) {
                jl_fail(d, &root->kids[2 * k], GS_ERR_INVALID, "key \"%.40s\" given twice",
                        root->kids[2 * k].s);
                goto out;
            }
    for (uint32_t k = 0; k < root->n; k++) {
        const char *key = root->kids[2 * k].s;
        const gs_jv *v = &root->kids[2 * k + 1];
        if (strcmp(key, "name") == 0) {
            name = v;
        } else if (strcmp(key, "namespace") == 0) {
            ns = v;
        }
    }
    if (!name) {
        jl_fail(d, root, GS_ERR_INVALID, "missing \"name\"");
        goto out;
    }
    if (want(d, name, GS_JSTR, "name") < 0)
        goto out;
    if (ns && want(d, ns, GS_JSTR, "namespace") < 0)
        goto out;
    const char *nsname = ns ? ns->s : "default";
    if (!name->n || name->n > TR_MAX_NAME) {
        jl_fail(d, name, GS_ERR_INVALID, "name: must be 1..%d bytes", TR_MAX_NAME);
        goto out;
    }
    if (!nsname[0] || strlen(nsname) > TR_MAX_NAMESPACE) {
        jl_fail(d, ns, GS_ERR_INVALID, "namespace: must be 1..%d bytes", TR_MAX_NAMESPACE);
        goto out;
    }
    snprintf(d->obj, sizeof d->obj, "Pod %s/%s", nsname, name->s);
    int claimed = claim_pod_name(names, nsname, name->s, d->err);
    if (claimed < 0)
        goto out;
    if (claimed) {
        jl_fail(d, name, GS_ERR_INVALID, "a pod with this namespace and name already exists");
        goto out;
    }
    if (!(pod.meta.name = keep(d, name->s)) || !(pod.meta.namespace_ = keep(d, nsname)))
        goto out;
    for (uint32_t k = 0; k < root->n; k++) {
        const char *key = root->kids[2 * k].s;
        const gs_jv *v = &root->kids[2 * k + 1];
        if (strcmp(key, "name") == 0 || strcmp(key, "namespace") == 0)
            continue;
        if (strcmp(key, "arrival") == 0) {
            if (v->t == GS_JNUM) {
                if (jint(d, v, "arrival", INT64_MIN + 1, INT64_MAX, &arrival) < 0)
                    goto out;
            } else if (v->t == GS_JSTR) {
                if (gs_trace_parse_time(v->s, &arrival) < 0) {
                    jl_fail(d, v, GS_ERR_INVALID,
                            "arrival: \"%.40s\" is neither an RFC3339 time nor integer seconds", v->s);
                    goto out;
                }
            } else {
                jl_fail(d, v, GS_ERR_INVALID, "arrival: expected seconds or an RFC3339 string, got %s",
                        gs_json_type_name(v->t));
                goto out;
            }
        } else if (strcmp(key, "duration") == 0) {
            if (v->t == GS_JNULL)
                continue;
            if (v->t == GS_JNUM) {
                if (jint(d, v, "duration", 0, INT64_MAX, &duration) < 0)
                    goto out;
            } else if (v->t == GS_JSTR) {
                if (gs_parse_duration(v->s, &duration) < 0) {
                    jl_fail(d, v, GS_ERR_INVALID,
                            "duration: \"%.40s\" is not a duration (\"2h30m\", \"90s\" or seconds)", v->s);
                    goto out;
                }
            } else {
                jl_fail(d, v, GS_ERR_INVALID, "duration: expected seconds, a duration string or null, got %s",
                        gs_json_type_name(v->t));
                goto out;
            }
            has_duration = true;
        } else if (strcmp(key, "cpu") == 0) {
            if (jquantity(d, v, "cpu", &cpu) < 0)
                goto out;
            has_cpu = true;
        } else if (strcmp(key, "memory") == 0) {
            if (jquantity(d, v, "memory", &mem) < 0)
                goto out;
            has_mem = true;
        } else if (strcmp(key, "gpu") == 0) {
            if (jgpu(d, v, &ann, res, &nres) < 0)
                goto out;
        } else if (strcmp(key, "priorityClassName") == 0) {
            if (want(d, v, GS_JSTR, key) < 0 || !(pod.priority_class_name = keep(d, v->s)))
                goto out;
        } else if (strcmp(key, "schedulerName") == 0) {
            if (want(d, v, GS_JSTR, key) < 0 || !(pod.scheduler_name = keep(d, v->s[0] ? v->s : "default-scheduler")))
                goto out;
        } else if (strcmp(key, "nodeName") == 0) {
            if (want(d, v, GS_JSTR, key) < 0 || !(pod.node_name = keep(d, v->s)))
                goto out;
        } else if (strcmp(key, "priority") == 0) {
            int64_t pr;
            if (jint(d, v, "priority", INT32_MIN, INT32_MAX, &pr) < 0)
                goto out;
            pod.has_priority = true;
            pod.priority = (int32_t)pr;
        } else if (strcmp(key, "tolerations") == 0) {
            if (jtolerations(d, v, &pod) < 0)
                goto out;
        } else if (strcmp(key, "nodeSelector") == 0) {
            if (jstrmap(d, v, "nodeSelector", &selector) < 0)
                goto out;
        } else if (strcmp(key, "labels") == 0) {
            if (jstrmap(d, v, "labels", &labels) < 0)
                goto out;
        } else if (strcmp(key, "annotations") == 0) {
            if (jstrmap(d, v, "annotations", &ann) < 0)
                goto out;
        } else {
            jl_fail(d, &root->kids[2 * k], GS_ERR_INVALID,
                    "unknown key \"%.40s\" (name, namespace, arrival, duration, cpu, memory, gpu, "
                    "priorityClassName, priority, schedulerName, nodeName, tolerations, "
                    "nodeSelector, labels, annotations)",
                    key);
            goto out;
        }
    }
    {
        gs_kv kv = {GS_ANN_ARRIVAL, gs_arena_printf(a, "%lld", (long long)arrival)};
        if (!kv.val || gs_vec_push(ann, kv) < 0) {
            gs_fail(d->err, GS_ERR_NOMEM, "out of memory");
            goto out;
        }
        if (has_duration) {
            kv = (gs_kv){GS_ANN_DURATION, gs_arena_printf(a, "%lld", (long long)duration)};
            if (!kv.val || gs_vec_push(ann, kv) < 0) {
                gs_fail(d->err, GS_ERR_NOMEM, "out of memory");
                goto out;
            }
        }
    }
    const char *dup;
    if (make_labels(a, ann.v, (uint32_t)ann.n, &pod.meta.annotations, &dup, d->err) < 0) {
        if (dup)
            jl_fail(d, root, GS_ERR_INVALID, "annotation %.60s is given twice (directly and by a field)",
                    dup);
        goto out;
    }
    if (make_labels(a, labels.v, (uint32_t)labels.n, &pod.meta.labels, &dup, d->err) < 0 ||
        make_labels(a, selector.v, (uint32_t)selector.n, &pod.node_selector, &dup, d->err) < 0) {
        if (dup)
            jl_fail(d, root, GS_ERR_INVALID, "key %.60s is given twice", dup);
        goto out;
    }
    if (has_cpu)
        res[nres++] = (gs_res){"cpu", cpu};
    if (has_mem)
        res[nres++] = (gs_res){"memory", mem};
    gs_container *c = gs_arena_alloc(a, sizeof *c);
    if (!c) {
        gs_fail(d->err, GS_ERR_NOMEM, "out of memory");
        goto out;
    }
    c->name = "main";
    if (make_reslist(a, res, nres, &c->requests, d->err) < 0)
        goto out;
    c->limits = c->requests;
    pod.containers = c;
    pod.ncontainers = 1;
    pod.meta.src.file = d->file;
    pod.meta.src.line = d->line;
    pod.meta.src.col = 1;
    {
        int l, col;
        gs_json_where(d->text, (int)d->line, root, &l, &col);
        pod.meta.src.col = col;
    }
    pod.meta.input_index = d->snap->next_index;
    if (gs_vec_push(d->snap->pods, pod) < 0) {
        gs_fail(d->err, GS_ERR_NOMEM, "out of memory");
        goto out;
    }
    d->snap->next_index++;
    rc = 0;
out:
    gs_vec_free(ann);
    gs_vec_free(labels);
    gs_vec_free(selector);
    return rc;
}

int gs_trace_parse_jsonl(gs_snapshot *snap, const char *name, const char *data, size_t len,
                         const gs_trace_limits *lim, gs_error *err)
{
    if (snap->finished)
        return gs_fail(err, GS_ERR_USAGE,
                       "snapshot already finished; read traces before gs_snapshot_finish()");
    uint32_t max_line = lim && lim->max_line_bytes ? lim->max_line_bytes : TR_DEFAULT_LINE_BYTES;
    uint32_t max_pods = lim && lim->max_pods ? lim->max_pods : TR_DEFAULT_PODS;
    const char *file = gs_arena_strdup(&snap->arena, name ? name : "");
    if (!file)
        return nomem(err);
    gs_arena scratch;
    gs_arena_init(&scratch, 0);
    static const gs_json_limits jlim = {TR_MAX_DEPTH, TR_MAX_ITEMS, 0, false};
    jl d;
    memset(&d, 0, sizeof d);
    d.file = file;
    d.scratch = &scratch;
    d.snap = snap;
    d.err = err;
    gs_intern names;
    gs_intern_init(&names);
    size_t old_pods = snap->pods.n;
    uint32_t old_index = snap->next_index;
    uint32_t pods = 0;
    int rc = -1;
    if (seen_pods(snap, &names, err) < 0)
        goto out;
    const char *p = data, *end = data + len;
    if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)
        p += 3;
    for (uint32_t line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        d.line = line;
        d.text = p;
        if ((size_t)(le - p) > max_line) {
            gs_error_set(err, GS_ERR_LIMIT, file, (int)line, 1, NULL, "line longer than %u bytes",
                         max_line);
            goto out;
        }
        if (memchr(p, 0, (size_t)(le - p))) {
            gs_error_set(err, GS_ERR_PARSE, file, (int)line,
                         (int)((const char *)memchr(p, 0, (size_t)(le - p)) - p) + 1, NULL,
                         "NUL byte");
            goto out;
        }
        const char *q = p;
        while (q < le && (*q == ' ' || *q == '\t' || *q == '\r'))
            q++;
        if (q < le) {
            if (++pods > max_pods) {
                gs_error_set(err, GS_ERR_LIMIT, file, (int)line, 1, NULL, "more than %u pods",
                             max_pods);
                goto out;
            }
            gs_jv root;
            memset(&root, 0, sizeof root);
            if (gs_json_parse(file, (int)line, p, (size_t)(le - p), &jlim, &scratch, &root, err) < 0)
                goto out;
            if (jl_pod(&d, &root, &names) < 0)
                goto out;
        }
        gs_arena_reset(&scratch);
        p = nl ? nl + 1 : end;
    }
    rc = 0;
out:
    if (rc < 0) {
        snap->pods.n = old_pods;
        snap->next_index = old_index;
    }
    gs_arena_free(&scratch);
    gs_intern_free(&names);
    return rc;
}

int gs_trace_read_jsonl(gs_snapshot *snap, const char *path, const gs_trace_limits *lim,
                        gs_error *err)
{
    size_t max = lim && lim->max_file_bytes ? lim->max_file_bytes : TR_DEFAULT_FILE_BYTES;
    size_t len = 0;
    char *data = gs_read_file(path, max, &len, err);
    if (!data)
        return -1;
    int rc = gs_trace_parse_jsonl(snap, path, data, len, lim, err);
    free(data);
    return rc;
}
