/*
 * read_workloads.c - workload controllers expanded into the pods they would create.
 *
 * Deployment, ReplicaSet and StatefulSet create spec.replicas pods (default 1). A Job runs
 * min(parallelism, completions - status.succeeded) pods at once (parallelism defaults to
 * 1; without completions only parallelism counts; a suspended Job runs none). A CronJob
 * is read as the one Job its spec.jobTemplate describes (none while suspended).
 *
 * Every expanded pod is the decoded pod template (defaulted like a created pod: limits
 * become requests) with name "<workload>-<i>" (i from 0), the workload's namespace and
 * creationTimestamp, owner = the workload and workload = "Kind/name". The pods share the
 * template's arrays, which are immutable arena memory.
 *
 * Every controller is also kept as written in snapshot->workloads (metadata, pod count,
 * decoded template), so rules that judge templates see workloads with 0 replicas and
 * DaemonSets on inputs without nodes.
 *
 * DaemonSets need the nodes, so their templates wait for gs_snapshot_finish(). Like the
 * DaemonSet controller, the template first gains the automatic tolerations
 * (not-ready and unreachable NoExecute; disk-, memory-, pid-pressure and unschedulable
 * NoSchedule; network-unavailable NoSchedule with hostNetwork). A node gets a pod when
 * the template's nodeSelector and required node affinity match it and every NoSchedule /
 * NoExecute taint of the node is tolerated. The pod stays unbound (nodeName "") but its
 * required node affinity pins it with matchFields metadata.name In [node]: each term's
 * matchFields is replaced (or one term is created), as the controller does.
 */
#include <stdio.h>
#include <string.h>

#include "kube/read_int.h"

/* "<base>-<i>" in the arena, without printf (this runs once per expanded pod). */
char *gs_rd_pod_name(gs_arena *a, const char *base, uint64_t i)
{
    char digits[24];
    size_t nd = 0;
    do {
        digits[nd++] = (char)('0' + i % 10);
        i /= 10;
    } while (i);
    size_t bl = strlen(base);
    char *s = gs_arena_alloc(a, bl + 1 + nd + 1);
    if (!s)
        return NULL;
    memcpy(s, base, bl);
    s[bl] = '-';
    for (size_t k = 0; k < nd; k++)
        s[bl + 1 + k] = digits[nd - 1 - k];
    s[bl + 1 + nd] = '\0';
    return s;
}

/* Pods a Job runs at once; at and field name the node and field that decided the count. */
int gs_rd_job_active_pods(gs_rd *r, const gs_yn *jspec, int64_t succeeded, int64_t *count,
                          const gs_yn **at, const char **field)
{
    int64_t parallelism = 1, completions = 0;
    bool has_parallelism, has_completions, suspend = false;
    if (gs_rd_int(r, jspec, "parallelism", 0, INT32_MAX, &has_parallelism, &parallelism) < 0 ||
        gs_rd_int(r, jspec, "completions", 0, INT32_MAX, &has_completions, &completions) < 0 ||
        gs_rd_bool(r, jspec, "suspend", &suspend) < 0)
        return -1;
    if (!has_parallelism)
        parallelism = 1;
    int64_t n = parallelism;
    *at = has_parallelism ? gs_rd_get(jspec, "parallelism") : jspec;
    *field = "parallelism";
    if (has_completions) {
        int64_t remaining = completions - succeeded;
        if (remaining < 0)
            remaining = 0;
        if (remaining < n) {
            n = remaining;
            *at = gs_rd_get(jspec, "completions");
            *field = "completions";
        }
    }
    *count = suspend ? 0 : n;
    return 0;
}

static const struct {
    const char *key;
    gs_effect effect;
    bool host_network_only;
} ds_auto_tolerations[] = {
    {"node.kubernetes.io/not-ready", GS_EFFECT_NO_EXECUTE, false},
    {"node.kubernetes.io/unreachable", GS_EFFECT_NO_EXECUTE, false},
    {"node.kubernetes.io/disk-pressure", GS_EFFECT_NO_SCHEDULE, false},
    {"node.kubernetes.io/memory-pressure", GS_EFFECT_NO_SCHEDULE, false},
    {"node.kubernetes.io/pid-pressure", GS_EFFECT_NO_SCHEDULE, false},
    {"node.kubernetes.io/unschedulable", GS_EFFECT_NO_SCHEDULE, false},
    {"node.kubernetes.io/network-unavailable", GS_EFFECT_NO_SCHEDULE, true},
};
#define DS_AUTO_TOLERATIONS (sizeof ds_auto_tolerations / sizeof *ds_auto_tolerations)

static int add_daemonset_tolerations(gs_rd *r, gs_pod *pod, bool host_network)
{
    gs_toleration *ts = gs_arena_alloc(&r->s->arena, sizeof *ts * (pod->ntolerations + DS_AUTO_TOLERATIONS));
    if (!ts)
        return gs_rd_nomem(r);
    uint32_t n = pod->ntolerations;
    if (n)
        memcpy(ts, pod->tolerations, sizeof *ts * n);
    for (size_t i = 0; i < DS_AUTO_TOLERATIONS; i++) {
        if (ds_auto_tolerations[i].host_network_only && !host_network)
            continue;
        bool present = false;
        for (uint32_t k = 0; k < pod->ntolerations && !present; k++)
            present = ts[k].op == GS_TOL_EXISTS && ts[k].effect == ds_auto_tolerations[i].effect &&
                      !strcmp(ts[k].key, ds_auto_tolerations[i].key);
        if (!present)
            ts[n++] = (gs_toleration){ds_auto_tolerations[i].key, "", "Exists", GS_TOL_EXISTS,
                                      ds_auto_tolerations[i].effect, false, 0};
    }
    pod->tolerations = ts;
    pod->ntolerations = n;
    return 0;
}

static int expand_replicas(gs_rd *r, const gs_yn *at, const gs_pod *tmpl, uint64_t count)
{
    gs_snapshot *s = r->s;
    if (gs_rd_reserve_objects(r, at, count) < 0)
        return -1;
    if (!count)
        return 0;
    if (gs_vec_reserve(s->pods, s->pods.n + count) < 0)
        return gs_rd_nomem(r);
    for (uint64_t i = 0; i < count; i++) {
        char *name = gs_rd_pod_name(&s->arena, tmpl->meta.owner_name, i);
        if (!name)
            return gs_rd_nomem(r);
        gs_pod *p = &s->pods.v[s->pods.n++];
        *p = *tmpl;
        p->meta.name = name;
        p->meta.input_index = s->next_index++;
    }
    return 0;
}

/* Keep the controller as written (snapshot->workloads): its own metadata, the pods it
 * creates and its template, which shares every array with the expanded pods. The
 * workload takes the input index of its first pod without consuming one, so pods keep
 * the indexes (and queue ties) they had before workloads were recorded. */
int gs_rd_store_workload(gs_rd *r, const gs_meta *wm, const char *kind, int32_t replicas,
                         const gs_pod *tmpl, const char *role, uint32_t part)
{
    gs_workload w;
    memset(&w, 0, sizeof w);
    w.meta = *wm;
    w.meta.input_index = r->s->next_index;
    w.kind = kind;
    w.replicas = replicas;
    w.template_ = *tmpl;
    w.role = role ? role : "";
    w.part = part;
    if (gs_vec_push(r->s->workloads, w) < 0)
        return gs_rd_nomem(r);
    return 0;
}

int gs_rd_missing(gs_rd *r, const gs_yn *at, const char *field, const char *what)
{
    gs_rd_push(r, field);
    return gs_rd_fail(r, at, GS_ERR_INVALID, "required field is missing (%s)", what);
}

/* A PodTemplateSpec (metadata labels and annotations, spec) decoded as a pod; the path
 * must name the template. */
int gs_rd_pod_template(gs_rd *r, const gs_yn *tmpl, gs_pod *pod, bool *host_network)
{
    const gs_yn *tmeta, *tspec;
    memset(pod, 0, sizeof *pod);
    if (gs_rd_expect_map(r, tmpl) < 0 || gs_rd_map(r, tmpl, "metadata", &tmeta) < 0 ||
        gs_rd_template_meta(r, tmeta, &pod->meta) < 0 || gs_rd_map(r, tmpl, "spec", &tspec) < 0)
        return -1;
    size_t mark = gs_rd_push(r, "spec");
    if (gs_rd_pod_spec(r, tspec, pod) < 0 ||
        (host_network && gs_rd_bool(r, tspec, "hostNetwork", host_network) < 0))
        return -1;
    gs_rd_pop(r, mark);
    return 0;
}

int gs_rd_workload(gs_rd *r, const gs_yn *obj, const char *kind)
{
    gs_rd_set_object(r, kind, obj, true);
    gs_meta wm;
    if (gs_rd_meta(r, obj, true, &wm) < 0 || gs_rd_note_object(r, kind, &wm) < 0)
        return -1;
    bool is_ds = !strcmp(kind, "DaemonSet"), is_job = !strcmp(kind, "Job");
    bool is_cron = !strcmp(kind, "CronJob");
    const gs_yn *spec, *status;
    if (gs_rd_map(r, obj, "spec", &spec) < 0 || gs_rd_map(r, obj, "status", &status) < 0)
        return -1;
    int64_t succeeded = 0;
    if (is_job && status) {
        size_t mark = gs_rd_push(r, "status");
        if (gs_rd_int(r, status, "succeeded", 0, INT32_MAX, NULL, &succeeded) < 0)
            return -1;
        gs_rd_pop(r, mark);
    }
    if (!spec)
        return gs_rd_missing(r, obj, "spec", "a workload needs a pod template");
    gs_rd_push(r, "spec");

    const gs_yn *template_parent = spec;
    int64_t count = 1;
    const gs_yn *count_at = spec;
    const char *count_field = "replicas";
    if (is_cron) {
        bool suspend = false;
        const gs_yn *jt, *js;
        if (gs_rd_bool(r, spec, "suspend", &suspend) < 0 || gs_rd_map(r, spec, "jobTemplate", &jt) < 0)
            return -1;
        if (!jt)
            return gs_rd_missing(r, spec, "jobTemplate", "a CronJob needs a job template");
        gs_rd_push(r, "jobTemplate");
        if (gs_rd_map(r, jt, "spec", &js) < 0)
            return -1;
        if (!js)
            return gs_rd_missing(r, jt, "spec", "a job template needs a spec");
        gs_rd_push(r, "spec");
        if (gs_rd_job_active_pods(r, js, 0, &count, &count_at, &count_field) < 0)
            return -1;
        if (suspend)
            count = 0;
        template_parent = js;
    } else if (is_job) {
        if (gs_rd_job_active_pods(r, spec, succeeded, &count, &count_at, &count_field) < 0)
            return -1;
    } else if (!is_ds) {
        bool has;
        if (gs_rd_int(r, spec, "replicas", 0, INT32_MAX, &has, &count) < 0)
            return -1;
        if (has)
            count_at = gs_rd_get(spec, "replicas");
        else
            count = 1;
    }
    if (!is_ds && count > (int64_t)r->max_replicas) {
        gs_rd_push(r, count_field);
        return gs_rd_fail(r, count_at, GS_ERR_LIMIT, "%lld pods exceed the limit of %u per workload (max_replicas)",
                          (long long)count, r->max_replicas);
    }

    const gs_yn *tmpl;
    if (gs_rd_map(r, template_parent, "template", &tmpl) < 0)
        return -1;
    if (!tmpl)
        return gs_rd_missing(r, template_parent, "template", "the pod template");
    gs_rd_push(r, "template");
    gs_pod pod;
    bool host_network = false;
    if (gs_rd_pod_template(r, tmpl, &pod, &host_network) < 0)
        return -1;

    pod.meta.name = pod.meta.generate_name = pod.meta.uid = "";
    pod.meta.namespace_ = wm.namespace_;
    pod.meta.has_creation = wm.has_creation;
    pod.meta.creation = wm.creation;
    pod.meta.owner_kind = kind;
    pod.meta.owner_name = wm.name;
    pod.meta.src = wm.src;
    pod.workload = gs_arena_printf(&r->s->arena, "%s/%s", kind, wm.name);
    if (!pod.workload)
        return gs_rd_nomem(r);

    if (is_ds && add_daemonset_tolerations(r, &pod, host_network) < 0)
        return -1;
    if (gs_rd_store_workload(r, &wm, kind, is_ds ? -1 : (int32_t)count, &pod, "", 0) < 0)
        return -1;
    if (!is_ds)
        return expand_replicas(r, count_at, &pod, (uint64_t)count);

    gs_rd_daemonset *d = gs_arena_alloc(&r->s->arena, sizeof *d);
    if (!d)
        return gs_rd_nomem(r);
    d->tmpl = pod;
    d->src = wm.src;
    if (r->st->ds_tail)
        r->st->ds_tail->next = d;
    else
        r->st->ds_head = d;
    r->st->ds_tail = d;
    return 0;
}

/* ================================================================ DaemonSets at finish */

bool gs_daemon_pod_fits(const gs_pod *t, const gs_node *node)
{
    if (!gs_pod_selects_node(t, node))
        return false;
    for (uint32_t i = 0; i < node->ntaints; i++) {
        const gs_taint *taint = &node->taints[i];
        if (taint->effect != GS_EFFECT_NO_SCHEDULE && taint->effect != GS_EFFECT_NO_EXECUTE)
            continue;
        bool tolerated = false;
        for (uint32_t k = 0; k < t->ntolerations && !tolerated; k++)
            tolerated = gs_toleration_tolerates(&t->tolerations[k], taint, false);
        if (!tolerated)
            return false;
    }
    return true;
}

/* The template's required node affinity with matchFields metadata.name In [node]. */
static const gs_node_selector *pin_to_node(gs_arena *a, const gs_node_selector *orig, const char *node)
{
    gs_node_selector *ns = gs_arena_alloc(a, sizeof *ns);
    gs_sel_req *req = gs_arena_alloc(a, sizeof *req);
    const char **values = gs_arena_alloc(a, sizeof *values);
    uint32_t nterms = orig && orig->nterms ? orig->nterms : 1;
    gs_sel_term *terms = gs_arena_alloc(a, sizeof *terms * nterms);
    if (!ns || !req || !values || !terms)
        return NULL;
    values[0] = node;
    *req = (gs_sel_req){"metadata.name", GS_SEL_IN, values, 1};
    for (uint32_t i = 0; i < nterms; i++) {
        if (orig && orig->nterms)
            terms[i] = orig->terms[i];
        terms[i].fields = req;
        terms[i].nfields = 1;
    }
    ns->terms = terms;
    ns->nterms = nterms;
    return ns;
}

static int daemonset_fail(gs_error *err, const gs_rd_daemonset *d, gs_code code, const char *msg)
{
    char obj[GS_ERR_PATH_MAX];
    snprintf(obj, sizeof obj, "DaemonSet %.100s/%.100s", d->tmpl.meta.namespace_, d->tmpl.meta.owner_name);
    return gs_error_set(err, code, d->src.file, (int)d->src.line, (int)d->src.col, obj, "%s", msg);
}

int gs_rd_expand_daemonsets(gs_snapshot *s, gs_rd_state *st, gs_error *err)
{
    for (const gs_rd_daemonset *d = st->ds_head; d; d = d->next) {
        const gs_pod *t = &d->tmpl;
        uint64_t made = 0;
        for (size_t j = 0; j < s->nodes.n; j++) {
            const gs_node *node = &s->nodes.v[j];
            if (!gs_daemon_pod_fits(t, node))
                continue;
            if (s->next_index >= st->max_objects)
                return daemonset_fail(err, d, GS_ERR_LIMIT, "daemon pods exceed the max_objects limit");
            gs_pod p = *t;
            p.meta.name = gs_rd_pod_name(&s->arena, t->meta.owner_name, made);
            p.required = pin_to_node(&s->arena, t->required, node->meta.name);
            if (!p.meta.name || !p.required)
                return daemonset_fail(err, d, GS_ERR_NOMEM, "out of memory");
            p.meta.input_index = s->next_index;
            if (gs_vec_push(s->pods, p) < 0)
                return daemonset_fail(err, d, GS_ERR_NOMEM, "out of memory");
            s->next_index++;
            made++;
        }
    }
    return 0;
}
