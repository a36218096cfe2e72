/*
 * read_crd.c - workload custom resources expanded into the pods their controllers create.
 *
 * Each pod template of a custom resource is decoded like a workload's (limits become
 * requests), kept in snapshot->workloads (one gs_workload per template: kind, role, the
 * template's own position) and expanded into pods named as the controller names them,
 * with the controller's identifying labels added to the template's, the resource's
 * namespace and creationTimestamp, owner = the resource, workload = "Kind/name" and the
 * template's position as source. Per resource the pods are bounded by max_replicas.
 *
 *   JobSet (jobset.x-k8s.io): spec.replicatedJobs[] each create `replicas` (default 1)
 *     Jobs "<jobset>-<rjob>-<j>" whose template.spec (a Job spec) runs its active pods
 *     (parallelism, completions); pods "<jobset>-<rjob>-<j>-<i>". spec.suspend: none.
 *   LeaderWorkerSet (leaderworkerset.x-k8s.io): spec.replicas groups (default 1) of
 *     leaderWorkerTemplate.size pods (default 1): leader "<lws>-<g>" from leaderTemplate
 *     (else workerTemplate), workers "<lws>-<g>-<w>", w = 1 .. size-1, from workerTemplate.
 *   Kubeflow PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob (kubeflow.org):
 *     spec.<x>ReplicaSpecs.<Type> (Master, Worker, Launcher, Chief, PS, ...) create
 *     `replicas` (default 1) pods "<job>-<type in lower case>-<i>"; runPolicy.suspend: none.
 *   KubeRay RayCluster (ray.io): headGroupSpec.template is one pod "<cluster>-head";
 *     workerGroupSpecs[] create replicas (absent: minReplicas; clamped to [minReplicas,
 *     maxReplicas]) x numOfHosts (default 1) pods "<cluster>-<group>-worker-<i>";
 *     spec.suspend or a group's suspend: none. RayJob (spec.rayClusterSpec; suspend) and
 *     RayService (spec.rayClusterConfig) are read as the RayCluster they create, named
 *     after themselves (the operator adds a random suffix; RayJob's submitter pod is not
 *     modelled).
 *   Volcano Job (batch.volcano.sh): spec.tasks[] create `replicas` pods
 *     "<job>-<task>-<i>" (a task without a name is "default<index>" as Volcano's webhook
 *     names it); pods without schedulerName get spec.schedulerName (default "volcano"),
 *     without priorityClassName the job's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/read_int.h"

typedef struct crd {
    gs_rd *r;
    const gs_yn *obj;
    const char *kind;  /* label: "PyTorchJob", "Job.batch.volcano.sh" */
    gs_meta wm;        /* the resource's metadata */
    const char *workload;
    uint32_t part;     /* templates stored so far */
    uint64_t pods;     /* pods expanded so far */
} crd;

typedef struct crd_label {
    const char *key;
    const char *val;
} crd_label;

/* ---------------------------------------------------------------- helpers */
static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const gs_kv *)a)->key, ((const gs_kv *)b)->key);
}

/* base labels with extra ones added (an extra key replaces the template's value). */
static int labels_with(gs_rd *r, const gs_labels *base, const crd_label *extra, uint32_t nextra, gs_labels *out)
{
    gs_kv *items = gs_arena_alloc(&r->s->arena, sizeof *items * (base->n + nextra + 1));
    if (!items)
        return gs_rd_nomem(r);
    uint32_t n = base->n;
    if (n)
        memcpy(items, base->items, sizeof *items * n);
    for (uint32_t i = 0; i < nextra; i++) {
        uint32_t k = 0;
        while (k < base->n && strcmp(items[k].key, extra[i].key) != 0)
            k++;
        if (k < base->n)
            items[k].val = extra[i].val;
        else
            items[n++] = (gs_kv){extra[i].key, extra[i].val};
    }
    qsort(items, n, sizeof *items, kv_cmp);
    out->items = items;
    out->n = n;
    return 0;
}

static const char *u64_text(gs_rd *r, uint64_t v)
{
    char b[24];
    int n = snprintf(b, sizeof b, "%llu", (unsigned long long)v);
    return gs_rd_intern(r, b, (size_t)n);
}

/* Optional count field in [0, INT32_MAX] with a default. */
static int count_field(gs_rd *r, const gs_yn *m, const char *key, int64_t dflt, int64_t *out, bool *has)
{
    bool h = false;
    if (gs_rd_int(r, m, key, 0, INT32_MAX, &h, out) < 0)
        return -1;
    if (!h)
        *out = dflt;
    if (has)
        *has = h;
    return 0;
}

/* Decode parent[key] (a PodTemplateSpec, required) as one template of the resource. */
static int crd_template(crd *c, const gs_yn *parent, const char *key, const char *what, gs_pod *pod)
{
    gs_rd *r = c->r;
    const gs_yn *tmpl;
    if (gs_rd_map(r, parent, key, &tmpl) < 0)
        return -1;
    if (!tmpl)
        return gs_rd_missing(r, parent, key, what);
    size_t mark = gs_rd_push(r, key);
    if (gs_rd_pod_template(r, tmpl, pod, NULL) < 0)
        return -1;
    gs_rd_pop(r, mark);
    pod->meta.name = pod->meta.generate_name = pod->meta.uid = "";
    pod->meta.namespace_ = c->wm.namespace_;
    pod->meta.has_creation = c->wm.has_creation;
    pod->meta.creation = c->wm.creation;
    pod->meta.owner_kind = c->kind;
    pod->meta.owner_name = c->wm.name;
    pod->meta.src = r->no_positions ? (gs_src){r->file, 0, 0} : (gs_src){r->file, tmpl->line, tmpl->col};
    pod->workload = c->workload;
    return 0;
}

/* Keep the template as a workload that creates `pods` pods. */
static int crd_store(crd *c, const gs_pod *pod, const char *role, uint64_t pods)
{
    gs_meta m = c->wm;
    m.src = pod->meta.src;
    return gs_rd_store_workload(c->r, &m, c->kind, pods > INT32_MAX ? INT32_MAX : (int32_t)pods, pod, role,
                                c->part++);
}

/* Bound the resource's pods before creating n more (error at node `at`, field pushed). */
static int crd_reserve(crd *c, const gs_yn *at, const char *field, uint64_t n)
{
    gs_rd *r = c->r;
    if (n > r->max_replicas || c->pods + n > r->max_replicas) {
        if (field)
            gs_rd_push(r, field);
        return gs_rd_fail(r, at, GS_ERR_LIMIT, "%llu pods exceed the limit of %u per workload (max_replicas)",
                          (unsigned long long)(c->pods + n), r->max_replicas);
    }
    if (gs_rd_reserve_objects(r, at, n) < 0)
        return -1;
    c->pods += n;
    return 0;
}

/* Pods "<prefix>-<first>" .. "<prefix>-<first+n-1>" from tmpl with the extra labels, and
 * index_key (when not NULL) set to each pod's index. Call crd_reserve first. */
static int crd_expand(crd *c, const gs_pod *tmpl, const char *prefix, uint64_t first, uint64_t n,
                      const crd_label *extra, uint32_t nextra, const char *index_key)
{
    gs_rd *r = c->r;
    gs_snapshot *s = r->s;
    if (!n)
        return 0;
    gs_labels base;
    if (labels_with(r, &tmpl->meta.labels, extra, nextra, &base) < 0)
        return -1;
    if (gs_vec_reserve(s->pods, s->pods.n + n) < 0)
        return gs_rd_nomem(r);
    for (uint64_t i = first; i < first + n; i++) {
        gs_pod p = *tmpl;
        p.meta.name = gs_rd_pod_name(&s->arena, prefix, i);
        if (!p.meta.name)
            return gs_rd_nomem(r);
        p.meta.labels = base;
        if (index_key) {
            crd_label ix = {index_key, u64_text(r, i)};
            if (!ix.val || labels_with(r, &base, &ix, 1, &p.meta.labels) < 0)
                return gs_rd_nomem(r);
        }
        p.meta.input_index = s->next_index++;
        s->pods.v[s->pods.n++] = p;
    }
    return 0;
}

static const char *lower(gs_rd *r, const char *s)
{
    size_t n = strlen(s);
    char *o = gs_arena_alloc(&r->s->arena, n + 1);
    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i++)
        o[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
    o[n] = '\0';
    return o;
}

/* A required string field (any scalar). */
static int name_field(gs_rd *r, const gs_yn *m, const char *key, const char *what, const char **out)
{
    if (gs_rd_str(r, m, key, "", out) < 0)
        return -1;
    if (!(*out)[0])
        return gs_rd_missing(r, gs_rd_get(m, key) ? gs_rd_get(m, key) : m, key, what);
    return 0;
}

/* ---------------------------------------------------------------- JobSet */
static int jobset(crd *c, const gs_yn *spec)
{
    gs_rd *r = c->r;
    bool suspend = false;
    const gs_yn *rjobs;
    if (gs_rd_bool(r, spec, "suspend", &suspend) < 0 || gs_rd_seq(r, spec, "replicatedJobs", &rjobs) < 0)
        return -1;
    if (!rjobs)
        return gs_rd_missing(r, spec, "replicatedJobs", "a JobSet needs its replicated jobs");
    size_t m1 = gs_rd_push(r, "replicatedJobs");
    uint32_t i = 0;
    for (const gs_yn *rj = rjobs->u.first; rj; rj = rj->next, i++) {
        size_t m2 = gs_rd_push_index(r, i);
        const char *name;
        int64_t replicas;
        const gs_yn *jt, *js;
        if (gs_rd_expect_map(r, rj) < 0 || name_field(r, rj, "name", "a replicated job needs a name", &name) < 0 ||
            count_field(r, rj, "replicas", 1, &replicas, NULL) < 0 || gs_rd_map(r, rj, "template", &jt) < 0)
            return -1;
        if (!jt)
            return gs_rd_missing(r, rj, "template", "the Job template");
        size_t m3 = gs_rd_push(r, "template");
        if (gs_rd_map(r, jt, "spec", &js) < 0)
            return -1;
        if (!js)
            return gs_rd_missing(r, jt, "spec", "the Job spec");
        size_t m4 = gs_rd_push(r, "spec");
        int64_t per_job;
        const gs_yn *at;
        const char *field;
        if (gs_rd_job_active_pods(r, js, 0, &per_job, &at, &field) < 0)
            return -1;
        gs_pod pod;
        if (crd_template(c, js, "template", "the pod template", &pod) < 0)
            return -1;
        uint64_t total = suspend ? 0 : (uint64_t)replicas * (uint64_t)per_job;
        if (crd_store(c, &pod, name, total) < 0)
            return -1;
        gs_rd_pop(r, m4);
        gs_rd_pop(r, m3);
        if (crd_reserve(c, total && replicas > 1 ? gs_rd_get(rj, "replicas") : at,
                        total && replicas > 1 ? "replicas" : NULL, total) < 0)
            return -1;
        for (int64_t j = 0; total && j < replicas; j++) {
            const char *job = gs_arena_printf(&r->s->arena, "%s-%s-%lld", c->wm.name, name, (long long)j);
            const char *jix = u64_text(r, (uint64_t)j);
            if (!job || !jix)
                return gs_rd_nomem(r);
            crd_label l[] = {{"jobset.sigs.k8s.io/jobset-name", c->wm.name},
                             {"jobset.sigs.k8s.io/replicatedjob-name", name},
                             {"jobset.sigs.k8s.io/job-index", jix},
                             {"job-name", job}};
            if (crd_expand(c, &pod, job, 0, (uint64_t)per_job, l, 4, "batch.kubernetes.io/job-completion-index") < 0)
                return -1;
        }
        gs_rd_pop(r, m2);
    }
    gs_rd_pop(r, m1);
    return 0;
}

/* ---------------------------------------------------------------- LeaderWorkerSet */
static int leaderworkerset(crd *c, const gs_yn *spec)
{
    gs_rd *r = c->r;
    int64_t groups, size;
    const gs_yn *lwt;
    if (count_field(r, spec, "replicas", 1, &groups, NULL) < 0 || gs_rd_map(r, spec, "leaderWorkerTemplate", &lwt) < 0)
        return -1;
    if (!lwt)
        return gs_rd_missing(r, spec, "leaderWorkerTemplate", "the leader and worker templates");
    size_t m1 = gs_rd_push(r, "leaderWorkerTemplate");
    bool has_size;
    if (count_field(r, lwt, "size", 1, &size, &has_size) < 0)
        return -1;
    if (size < 1) {
        gs_rd_push(r, "size");
        return gs_rd_fail(r, gs_rd_get(lwt, "size"), GS_ERR_INVALID, "must be at least 1, got %lld", (long long)size);
    }
    gs_pod worker, leader;
    if (crd_template(c, lwt, "workerTemplate", "the worker pod template", &worker) < 0)
        return -1;
    bool own_leader = gs_rd_get(lwt, "leaderTemplate") != NULL;
    if (own_leader) {
        if (crd_template(c, lwt, "leaderTemplate", "the leader pod template", &leader) < 0 ||
            crd_store(c, &leader, "leader", (uint64_t)groups) < 0 ||
            crd_store(c, &worker, "worker", (uint64_t)groups * (uint64_t)(size - 1)) < 0)
            return -1;
    } else {
        leader = worker;
        if (crd_store(c, &worker, "leader and worker", (uint64_t)groups * (uint64_t)size) < 0)
            return -1;
    }
    gs_rd_pop(r, m1);
    const gs_yn *at = gs_rd_get(spec, "replicas");
    if (crd_reserve(c, at ? at : spec, at ? "replicas" : NULL, (uint64_t)groups * (uint64_t)size) < 0)
        return -1;
    for (int64_t g = 0; g < groups; g++) {
        const char *gix = u64_text(r, (uint64_t)g);
        const char *group = gs_rd_pod_name(&r->s->arena, c->wm.name, (uint64_t)g);
        if (!gix || !group)
            return gs_rd_nomem(r);
        crd_label l[] = {{"leaderworkerset.sigs.k8s.io/name", c->wm.name},
                         {"leaderworkerset.sigs.k8s.io/group-index", gix},
                         {"leaderworkerset.sigs.k8s.io/worker-index", "0"}};
        /* the leader: "<lws>-<g>" */
        if (crd_expand(c, &leader, c->wm.name, (uint64_t)g, 1, l, 3, NULL) < 0 ||
            crd_expand(c, &worker, group, 1, (uint64_t)size - 1, l, 2, "leaderworkerset.sigs.k8s.io/worker-index") < 0)
            return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- Kubeflow */
static const struct {
    const char *kind;
    const char *key;
} kubeflow_specs[] = {
    {"PyTorchJob", "pytorchReplicaSpecs"}, {"TFJob", "tfReplicaSpecs"},         {"MPIJob", "mpiReplicaSpecs"},
    {"XGBoostJob", "xgbReplicaSpecs"},     {"PaddleJob", "paddleReplicaSpecs"}, {"JAXJob", "jaxReplicaSpecs"},
};

static int kubeflow(crd *c, const gs_yn *spec)
{
    gs_rd *r = c->r;
    const char *key = NULL;
    for (size_t i = 0; i < sizeof kubeflow_specs / sizeof *kubeflow_specs; i++)
        if (!strcmp(kubeflow_specs[i].kind, c->kind))
            key = kubeflow_specs[i].key;
    if (!key)
        return gs_fail(r->err, GS_ERR_INTERNAL, "no replica specs known for %s", c->kind);
    bool suspend = false;
    const gs_yn *rp, *specs;
    if (gs_rd_map(r, spec, "runPolicy", &rp) < 0)
        return -1;
    if (rp) {
        size_t m = gs_rd_push(r, "runPolicy");
        if (gs_rd_bool(r, rp, "suspend", &suspend) < 0)
            return -1;
        gs_rd_pop(r, m);
    }
    if (gs_rd_map(r, spec, key, &specs) < 0)
        return -1;
    if (!specs)
        return gs_rd_missing(r, spec, key, "the replica specs");
    size_t m1 = gs_rd_push(r, key);
    for (const gs_yn *k = specs->u.first; k; k = k->next->next) {
        const gs_yn *rs = k->next;
        const char *type = gs_rd_intern(r, k->u.text, k->len);
        if (!type)
            return gs_rd_nomem(r);
        size_t m2 = gs_rd_push_key(r, k->u.text, k->len);
        int64_t replicas;
        if (gs_rd_expect_map(r, rs) < 0 || count_field(r, rs, "replicas", 1, &replicas, NULL) < 0)
            return -1;
        gs_pod pod;
        if (crd_template(c, rs, "template", "the pod template", &pod) < 0)
            return -1;
        uint64_t n = suspend ? 0 : (uint64_t)replicas;
        const gs_yn *at = gs_rd_get(rs, "replicas");
        if (crd_store(c, &pod, type, n) < 0 || crd_reserve(c, at ? at : rs, at ? "replicas" : NULL, n) < 0)
            return -1;
        const char *lt = lower(r, type);
        const char *prefix = lt ? gs_arena_printf(&r->s->arena, "%s-%s", c->wm.name, lt) : NULL;
        if (!prefix)
            return gs_rd_nomem(r);
        bool master = !strcmp(lt, "master") || !strcmp(lt, "chief") || !strcmp(lt, "launcher");
        crd_label l[] = {{"training.kubeflow.org/job-name", c->wm.name},
                         {"training.kubeflow.org/replica-type", lt},
                         {"training.kubeflow.org/job-role", "master"}};
        if (crd_expand(c, &pod, prefix, 0, n, l, master ? 3 : 2, "training.kubeflow.org/replica-index") < 0)
            return -1;
        gs_rd_pop(r, m2);
    }
    gs_rd_pop(r, m1);
    return 0;
}

/* ---------------------------------------------------------------- KubeRay */
/* A RayClusterSpec at cs (path already names it); cluster names the pods. */
static int ray_cluster_spec(crd *c, const gs_yn *cs, const char *cluster, bool suspend)
{
    gs_rd *r = c->r;
    const gs_yn *head, *groups;
    bool s2 = false;
    if (gs_rd_expect_map(r, cs) < 0 || gs_rd_bool(r, cs, "suspend", &s2) < 0 ||
        gs_rd_map(r, cs, "headGroupSpec", &head) < 0 || gs_rd_seq(r, cs, "workerGroupSpecs", &groups) < 0)
        return -1;
    suspend = suspend || s2;
    if (!head)
        return gs_rd_missing(r, cs, "headGroupSpec", "the head group");
    size_t m1 = gs_rd_push(r, "headGroupSpec");
    gs_pod hp;
    if (crd_template(c, head, "template", "the head pod template", &hp) < 0 ||
        crd_store(c, &hp, "head", suspend ? 0 : 1) < 0 || crd_reserve(c, head, NULL, suspend ? 0 : 1) < 0)
        return -1;
    crd_label hl[] = {{"ray.io/cluster", cluster}, {"ray.io/node-type", "head"}, {"ray.io/group", "headgroup"},
                      {"ray.io/is-ray-node", "yes"}};
    if (!suspend) {
        const char *name = gs_arena_printf(&r->s->arena, "%s-head", cluster);
        if (!name)
            return gs_rd_nomem(r);
        gs_pod p = hp;
        gs_labels l;
        if (labels_with(r, &hp.meta.labels, hl, 4, &l) < 0)
            return -1;
        p.meta.labels = l;
        p.meta.name = name;
        p.meta.input_index = r->s->next_index++;
        if (gs_vec_push(r->s->pods, p) < 0)
            return gs_rd_nomem(r);
    }
    gs_rd_pop(r, m1);
    if (!groups)
        return 0;
    size_t m2 = gs_rd_push(r, "workerGroupSpecs");
    uint32_t i = 0;
    for (const gs_yn *g = groups->u.first; g; g = g->next, i++) {
        size_t m3 = gs_rd_push_index(r, i);
        const char *gname;
        int64_t replicas, min, max, hosts;
        bool has_replicas, gsuspend = false;
        if (gs_rd_expect_map(r, g) < 0 || name_field(r, g, "groupName", "a worker group needs a name", &gname) < 0 ||
            count_field(r, g, "minReplicas", 0, &min, NULL) < 0 ||
            count_field(r, g, "maxReplicas", INT32_MAX, &max, NULL) < 0 ||
            count_field(r, g, "replicas", min, &replicas, &has_replicas) < 0 ||
            count_field(r, g, "numOfHosts", 1, &hosts, NULL) < 0 || gs_rd_bool(r, g, "suspend", &gsuspend) < 0)
            return -1;
        if (replicas < min)
            replicas = min;
        if (replicas > max)
            replicas = max;
        gs_pod wp;
        if (crd_template(c, g, "template", "the worker pod template", &wp) < 0)
            return -1;
        uint64_t n = suspend || gsuspend ? 0 : (uint64_t)replicas * (uint64_t)hosts;
        const gs_yn *at = gs_rd_get(g, "replicas");
        if (crd_store(c, &wp, gname, n) < 0 || crd_reserve(c, at ? at : g, at ? "replicas" : NULL, n) < 0)
            return -1;
        const char *prefix = gs_arena_printf(&r->s->arena, "%s-%s-worker", cluster, gname);
        if (!prefix)
            return gs_rd_nomem(r);
        crd_label l[] = {{"ray.io/cluster", cluster}, {"ray.io/node-type", "worker"}, {"ray.io/group", gname},
                         {"ray.io/is-ray-node", "yes"}};
        if (crd_expand(c, &wp, prefix, 0, n, l, 4, NULL) < 0)
            return -1;
        gs_rd_pop(r, m3);
    }
    gs_rd_pop(r, m2);
    return 0;
}

static int ray(crd *c, const gs_yn *spec, gs_rd_crd_kind which)
{
    gs_rd *r = c->r;
    if (which == GS_RD_CRD_RAYCLUSTER)
        return ray_cluster_spec(c, spec, c->wm.name, false);
    const char *key = which == GS_RD_CRD_RAYJOB ? "rayClusterSpec" : "rayClusterConfig";
    bool suspend = false;
    const gs_yn *cs;
    if ((which == GS_RD_CRD_RAYJOB && gs_rd_bool(r, spec, "suspend", &suspend) < 0) ||
        gs_rd_map(r, spec, key, &cs) < 0)
        return -1;
    if (!cs) /* a RayJob may run on an existing cluster (clusterSelector) */
        return which == GS_RD_CRD_RAYJOB ? 0 : gs_rd_missing(r, spec, key, "the RayCluster spec");
    size_t m = gs_rd_push(r, key);
    if (ray_cluster_spec(c, cs, c->wm.name, suspend) < 0)
        return -1;
    gs_rd_pop(r, m);
    return 0;
}

/* ---------------------------------------------------------------- Volcano Job */
static int volcano_job(crd *c, const gs_yn *spec)
{
    gs_rd *r = c->r;
    const char *sched, *prio, *queue;
    const gs_yn *tasks;
    if (gs_rd_str(r, spec, "schedulerName", "", &sched) < 0 ||
        gs_rd_str(r, spec, "priorityClassName", "", &prio) < 0 || gs_rd_str(r, spec, "queue", "", &queue) < 0 ||
        gs_rd_seq(r, spec, "tasks", &tasks) < 0)
        return -1;
    if (!sched[0])
        sched = "volcano";
    if (!queue[0])
        queue = "default";
    if (!tasks)
        return gs_rd_missing(r, spec, "tasks", "a Volcano Job needs its tasks");
    size_t m1 = gs_rd_push(r, "tasks");
    uint32_t i = 0;
    for (const gs_yn *t = tasks->u.first; t; t = t->next, i++) {
        size_t m2 = gs_rd_push_index(r, i);
        const char *tname;
        int64_t replicas;
        if (gs_rd_expect_map(r, t) < 0 || gs_rd_str(r, t, "name", "", &tname) < 0 ||
            count_field(r, t, "replicas", 0, &replicas, NULL) < 0)
            return -1;
        if (!tname[0]) {
            tname = gs_arena_printf(&r->s->arena, "default%u", i);
            if (!tname)
                return gs_rd_nomem(r);
        }
        gs_pod pod;
        if (crd_template(c, t, "template", "the pod template", &pod) < 0)
            return -1;
        const gs_yn *ts = gs_rd_get(gs_rd_get(t, "template"), "spec");
        const gs_yn *sn = gs_rd_get(ts, "schedulerName");
        if (!sn || (sn->type == GS_YN_SCALAR && !sn->len))
            pod.scheduler_name = sched;
        if (!pod.priority_class_name[0])
            pod.priority_class_name = prio;
        const gs_yn *at = gs_rd_get(t, "replicas");
        if (crd_store(c, &pod, tname, (uint64_t)replicas) < 0 ||
            crd_reserve(c, at ? at : t, at ? "replicas" : NULL, (uint64_t)replicas) < 0)
            return -1;
        const char *prefix = gs_arena_printf(&r->s->arena, "%s-%s", c->wm.name, tname);
        if (!prefix)
            return gs_rd_nomem(r);
        crd_label l[] = {{"volcano.sh/job-name", c->wm.name},
                         {"volcano.sh/job-namespace", c->wm.namespace_},
                         {"volcano.sh/task-spec", tname},
                         {"volcano.sh/queue-name", queue}};
        if (crd_expand(c, &pod, prefix, 0, (uint64_t)replicas, l, 4, NULL) < 0)
            return -1;
        gs_rd_pop(r, m2);
    }
    gs_rd_pop(r, m1);
    return 0;
}

/* ---------------------------------------------------------------- entry */
int gs_rd_crd(gs_rd *r, const gs_yn *obj, gs_rd_crd_kind which, const char *label)
{
    crd c;
    memset(&c, 0, sizeof c);
    c.r = r;
    c.obj = obj;
    c.kind = label;
    gs_rd_set_object(r, label, obj, true);
    if (gs_rd_meta(r, obj, true, &c.wm) < 0 || gs_rd_note_object(r, label, &c.wm) < 0)
        return -1;
    c.workload = gs_arena_printf(&r->s->arena, "%s/%s", label, c.wm.name);
    if (!c.workload)
        return gs_rd_nomem(r);
    const gs_yn *spec;
    if (gs_rd_map(r, obj, "spec", &spec) < 0)
        return -1;
    if (!spec)
        return gs_rd_missing(r, obj, "spec", "a workload needs its pod templates");
    gs_rd_push(r, "spec");
    switch (which) {
    case GS_RD_CRD_JOBSET: return jobset(&c, spec);
    case GS_RD_CRD_LWS: return leaderworkerset(&c, spec);
    case GS_RD_CRD_KUBEFLOW: return kubeflow(&c, spec);
    case GS_RD_CRD_RAYCLUSTER:
    case GS_RD_CRD_RAYJOB:
    case GS_RD_CRD_RAYSERVICE: return ray(&c, spec, which);
    case GS_RD_CRD_VOLCANO_JOB: return volcano_job(&c, spec);
    }
    return gs_fail(r->err, GS_ERR_INTERNAL, "unknown custom resource %d", (int)which);
}
