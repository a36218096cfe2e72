/*
 * replay.c - time-ordered replay on the real engine (include/gpusched/replay.h).
 *
 * Event loop, one timestamp at a time:
 *   1. departures due now: unbind, give quota back
 *   2. arrivals due now (ties in input order): admission (Priority, ResourceQuota), then the
 *      pending queue
 *   3. a scheduling round over the queue in the engine's order
 *   4. a sample when the sample clock is due
 *
 * The queue is kept per *queue class*: pods with the same shape (everything Filter and
 * Score read), priority and preemption policy get the same verdict on the same cluster
 * state, so only each class's head pod is tried. A full cycle still scores every node
 * and, when preemption is needed, dry-runs every potential node, exactly as
 * gs_schedule_run does; the class machinery only skips cycles whose outcome is known:
 *
 *  - Release log. Filter is monotone in a node's load: binding a pod never makes another
 *    pod fit where it did not, and never makes "fits once every lower-priority pod is
 *    gone" true either. So a failed class can only start to succeed on a node that
 *    *released* something (a departure or an eviction). The engine's change hook reports
 *    every bind and unbind, dry runs included; an unbind that is undone by a bind of the
 *    same pod on the same node within one operation (a dry run) cancels out, and only the
 *    nodes with a real release enter the log (flush_releases).
 *  - Exact re-check. A class that failed at log position F is re-checked only against the
 *    nodes released since F: Filter on that node and, for a preemption-eligible class,
 *    the pod against the node without its lower-priority pods (the first step of the
 *    victim dry run; if it fits there but not now, the node is a candidate). Either is
 *    exactly the condition under which a full cycle would now succeed, so skipping the
 *    cycle otherwise changes no decision (a failed cycle changes no state and draws no
 *    random number).
 *    A placement does not clear a class's failure: the next head of the class is
 *    re-checked against the same released nodes, because everywhere else the failure
 *    still holds (only binds happened there). Without this, every placement that a
 *    release allowed was followed by a failing full cycle for the next pod of the class,
 *    with a preemption dry run over every node.
 *  - Parking. A failed class leaves the heap and waits in the parked list; it returns
 *    only when a release makes the re-check pass, so an event that releases nothing costs
 *    nothing per waiting class. Releases in the middle of a round (evictions) re-check the
 *    parked classes that come later in queue order, as a full visit of every class would.
 *
 * Measured (bench_replay, docs/performance.md): the first version visited every class on
 * every event and counted dry-run binds as changes, which re-ran full preemption cycles
 * over every node almost every event.
 *
 * Heads are visited in queue order (priority desc, arrival, input order) through a binary
 * heap, so a freed GPU goes to the most important waiting pod first, as upstream's
 * PrioritySort queue does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"
#include "gpusched/replay.h"

void gs_replay_opts_defaults(gs_replay_opts *o)
{
    memset(o, 0, sizeof *o);
    gs_config_defaults(&o->cfg);
    o->requeue_preempted = true;
    o->sample_every = 0;
    o->horizon = 0;
    o->mig_dynamic = false;
    o->mig_delay = 120;
}

void gs_replay_result_free(gs_replay_result *r)
{
    free(r->pods);
    free(r->samples);
    if (r->strings_) {
        gs_intern_free(r->strings_);
        free(r->strings_);
    }
    memset(r, 0, sizeof *r);
}

/* ---------------------------------------------------------------- queue classes */
typedef struct qclass {
    GS_VEC(uint32_t) fifo; /* pending pods in arrival order */
    size_t head;           /* index of the first still-pending entry */
    size_t fail_pos;       /* change-log position at the last verified failure */
    bool failed;           /* the head failed at fail_pos */
    int32_t priority;
    bool preempt;          /* may preempt (preemption on and policy not Never) */
    uint64_t heap_key;     /* order key of the head, valid while queued in the heap */
    bool in_heap;
    bool parked;           /* waiting in rp.parked for a release */
    const char *reason;    /* last failure message */
    /* dynamic MIG */
    uint32_t mig_inflight; /* instances being created for this class */
    size_t mig_scan_pos;   /* 1 + release-log length at the last fruitless GPU search */
} qclass;

/* A MIG GPU being re-partitioned (dynamic MIG). */
typedef struct reconf {
    int64_t t;             /* when its new instances appear */
    uint32_t node;
    uint8_t dev, n;
    uint8_t pidx[8];       /* the new layout */
    uint32_t cls;          /* the class it was started for */
    uint32_t made;         /* instances of that class's profile in the new layout */
    const char *name;      /* the resource name that class asks for */
} reconf;

/* An unbind seen by the change hook, not yet known to be real or a dry run. */
typedef struct unbind_ev {
    uint32_t node, pod;
    bool undone;           /* the same pod was bound back on the same node */
} unbind_ev;

typedef struct rp {
    gs_cluster *c;
    const gs_replay_opts *o;
    gs_replay_result *res;
    const int64_t *arrival, *duration;
    int64_t now;
    /* order key per pod: (priority, arrival seq); arrival seq grows with time */
    uint64_t *seq;        /* per pod: arrival sequence number */
    uint64_t next_seq;
    uint32_t *cls;        /* per pod: queue class */
    gs_intern classes_key;
    GS_VEC(qclass) classes;
    /* heap of classes by head order */
    uint32_t *heap;
    uint32_t nheap, cap_heap;
    /* release log: nodes that released a pod for real (see the file comment) */
    GS_VEC(uint32_t) changes;
    uint32_t *stamp;      /* per node: round stamp for de-duplicating the log tail */
    uint32_t round;
    GS_VEC(unbind_ev) unbinds; /* unbinds since the last flush */
    uint32_t *open_unbind;     /* per pod: 1 + index into unbinds of its open unbind, 0 none */
    GS_VEC(uint32_t) parked;   /* failed classes waiting for a release */
    size_t parked_seen;        /* release-log length at the last parked scan */
    /* scratch of the preemption re-check */
    GS_VEC(uint32_t) scratch_pods;
    GS_VEC(uint32_t) scratch_order;
    GS_VEC(gs_gpu_assign) scratch_assign;
    /* departures: min-heap of (time, pod, generation) */
    struct dep {
        int64_t t;
        uint32_t pod;
        uint32_t gen;
    } *deps;
    uint32_t ndeps, cap_deps;
    uint32_t *gen;        /* per pod: generation (bumped when a planned departure is void) */
    /* live counters */
    int64_t alloc_micro;  /* allocated GPUs, in millionths */
    uint32_t nodes_used, gpu_nodes_used, running, pending;
    uint32_t *node_gpu_pods;
    int64_t *queued_at;   /* per pod: when it last entered the queue */
    gs_intern *reasons;   /* failure messages copied out of the cluster (result-owned) */
    uint32_t nsamples_cap;
    /* MIG */
    GS_VEC(uint32_t) mig_nodes;   /* nodes with MIG-enabled GPUs (mixed strategy or not) */
    GS_VEC(reconf) reconfs;       /* re-partitions in flight (dynamic MIG) */
    uint64_t *reconf_mask;        /* per node: its GPUs being re-partitioned */
    uint64_t *fresh_mask;         /* per node: GPUs whose re-partition ended at fresh_t */
    int64_t *fresh_t;
    int64_t mig_used_c;           /* compute slices in instances allocated to pods */
    int64_t mig_part_c;           /* compute slices in instances (all of them) */
    uint32_t *strand, *strand_ver;/* per node: stranded GPUs at node version strand_ver - 1 */
} rp;

static uint64_t order_key(const rp *r, uint32_t pod)
{
    /* smaller = earlier: priority descending (high 32 bits), then arrival sequence */
    uint64_t prio = (uint64_t)((int64_t)INT32_MAX - r->c->pods[pod].priority);
    return (prio << 32) | (r->seq[pod] & 0xffffffffULL);
}

static bool heap_less(const rp *r, uint32_t a, uint32_t b)
{
    return r->classes.v[a].heap_key < r->classes.v[b].heap_key ||
           (r->classes.v[a].heap_key == r->classes.v[b].heap_key && a < b);
}

static int heap_push(rp *r, uint32_t cls)
{
    if (r->nheap == r->cap_heap) {
        uint32_t nc = r->cap_heap ? r->cap_heap * 2 : 64;
        uint32_t *nh = realloc(r->heap, nc * sizeof *nh);
        if (!nh)
            return -1;
        r->heap = nh;
        r->cap_heap = nc;
    }
    uint32_t i = r->nheap++;
    r->heap[i] = cls;
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!heap_less(r, r->heap[i], r->heap[p]))
            break;
        uint32_t t = r->heap[i];
        r->heap[i] = r->heap[p];
        r->heap[p] = t;
        i = p;
    }
    r->classes.v[cls].in_heap = true;
    return 0;
}

static uint32_t heap_pop(rp *r)
{
    uint32_t top = r->heap[0];
    r->heap[0] = r->heap[--r->nheap];
    uint32_t i = 0;
    for (;;) {
        uint32_t l = 2 * i + 1, rr = l + 1, m = i;
        if (l < r->nheap && heap_less(r, r->heap[l], r->heap[m]))
            m = l;
        if (rr < r->nheap && heap_less(r, r->heap[rr], r->heap[m]))
            m = rr;
        if (m == i)
            break;
        uint32_t t = r->heap[i];
        r->heap[i] = r->heap[m];
        r->heap[m] = t;
        i = m;
    }
    r->classes.v[top].in_heap = false;
    return top;
}

static int dep_push(rp *r, int64_t t, uint32_t pod)
{
    if (r->ndeps == r->cap_deps) {
        uint32_t nc = r->cap_deps ? r->cap_deps * 2 : 256;
        struct dep *nd = realloc(r->deps, nc * sizeof *nd);
        if (!nd)
            return -1;
        r->deps = nd;
        r->cap_deps = nc;
    }
    uint32_t i = r->ndeps++;
    r->deps[i] = (struct dep){t, pod, r->gen[pod]};
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (r->deps[p].t < r->deps[i].t ||
            (r->deps[p].t == r->deps[i].t && r->deps[p].pod <= r->deps[i].pod))
            break;
        struct dep x = r->deps[i];
        r->deps[i] = r->deps[p];
        r->deps[p] = x;
        i = p;
    }
    return 0;
}

static struct dep dep_pop(rp *r)
{
    struct dep top = r->deps[0];
    r->deps[0] = r->deps[--r->ndeps];
    uint32_t i = 0;
    for (;;) {
        uint32_t l = 2 * i + 1, rr = l + 1, m = i;
        if (l < r->ndeps && (r->deps[l].t < r->deps[m].t ||
                             (r->deps[l].t == r->deps[m].t && r->deps[l].pod < r->deps[m].pod)))
            m = l;
        if (rr < r->ndeps && (r->deps[rr].t < r->deps[m].t ||
                              (r->deps[rr].t == r->deps[m].t && r->deps[rr].pod < r->deps[m].pod)))
            m = rr;
        if (m == i)
            break;
        struct dep x = r->deps[i];
        r->deps[i] = r->deps[m];
        r->deps[m] = x;
        i = m;
    }
    return top;
}

/* ---------------------------------------------------------------- live counters */
static int64_t assign_micro(const gs_cluster *c, uint32_t node, const gs_gpu_assign *a)
{
    const gs_node_gpus *g = &c->nodes[node].gpus;
    int64_t s = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        if (a->mig[i] != 0xffff && a->mig[i] < g->nmig && g->mig_model) {
            const gs_mig_profile *p = &g->mig_model->profiles[g->mig[a->mig[i]].profile];
            /* k/7 and k/4 are never within 1e-6 of an integer: truncation is the floor */
            s += (int64_t)(gs_mig_profile_fraction(g->mig_model, p) * 1000000.0);
        } else if (a->dev[i] < g->ndevs && g->devs[a->dev[i]].slots > 1) {
            s += (int64_t)a->slots[i] * 1000000 / g->devs[a->dev[i]].slots;
        } else {
            s += (int64_t)a->milli[i] * 1000;
        }
    }
    return s;
}

/* Compute slices of the MIG instances an assignment holds. */
static int64_t assign_mig_compute(const gs_cluster *c, uint32_t node, const gs_gpu_assign *a)
{
    const gs_node_gpus *g = &c->nodes[node].gpus;
    int64_t s = 0;
    for (uint32_t i = 0; i < a->n; i++)
        if (a->mig[i] != 0xffff && a->mig[i] < g->nmig && g->mig_model)
            s += g->mig_model->profiles[g->mig[a->mig[i]].profile].compute;
    return s;
}

static void on_change(void *ctx, uint32_t pod, uint32_t node, bool bound)
{
    rp *r = ctx;
    gs_cluster *c = r->c;
    if (!bound) {
        unbind_ev ev = {node, pod, false};
        if (gs_vec_push(r->unbinds, ev) == 0)
            r->open_unbind[pod] = (uint32_t)r->unbinds.n;
        else
            gs_vec_push(r->changes, node); /* cannot track: count it as released now */
    } else if (r->open_unbind[pod]) {
        unbind_ev *ev = &r->unbinds.v[r->open_unbind[pod] - 1];
        if (ev->node == node)
            ev->undone = true;
        r->open_unbind[pod] = 0;
    }
    const gs_cpod *p = &c->pods[pod];
    int64_t micro = (p->has_gpu ? assign_micro(c, node, &p->assign) : 0) + gs__dra_gpu_micro(c, pod);
    int64_t migc = p->has_gpu && r->res->mig_gpus ? assign_mig_compute(c, node, &p->assign) : 0;
    r->mig_used_c += bound ? migc : -migc;
    uint32_t npods = c->nodes[node].npods;
    if (bound) {
        r->alloc_micro += micro;
        if (npods == 1)
            r->nodes_used++;
        if (p->uses_gpu && r->node_gpu_pods[node]++ == 0)
            r->gpu_nodes_used++;
    } else {
        r->alloc_micro -= micro;
        if (npods == 0)
            r->nodes_used--;
        if (p->uses_gpu && --r->node_gpu_pods[node] == 0)
            r->gpu_nodes_used--;
    }
}

/* Move the real releases since the last flush into the release log (a node once per
 * flush); dry-run unbinds that were bound back cancel out. */
static int flush_releases(rp *r)
{
    r->round++;
    for (size_t i = 0; i < r->unbinds.n; i++) {
        const unbind_ev *ev = &r->unbinds.v[i];
        r->open_unbind[ev->pod] = 0;
        if (ev->undone || r->stamp[ev->node] == r->round)
            continue;
        r->stamp[ev->node] = r->round;
        if (gs_vec_push(r->changes, ev->node))
            return -1;
    }
    r->unbinds.n = 0;
    return 0;
}

/* GPUs idle on a node beyond what its free cpu and memory can feed at the node's own
 * cpu-per-GPU and memory-per-GPU ratios: stranded by whatever holds that cpu/memory. */
static uint32_t node_stranded(gs_cluster *c, uint32_t n)
{
    const gs_gpu_free *f = gs__gpu_free(c, n);
    if (!f->whole_free || !f->devices)
        return 0;
    const int64_t *al = c->alloc + (size_t)n * c->ndims;
    const int64_t *us = c->used + (size_t)n * c->ndims;
    uint64_t feedable = f->whole_free;
    for (int d = GS_DIM_CPU; d <= GS_DIM_MEM; d++) {
        if (al[d] <= 0)
            continue;
        int64_t per_gpu = al[d] / f->devices;
        int64_t free_ = al[d] - us[d];
        uint64_t k = per_gpu > 0 ? (uint64_t)(free_ > 0 ? free_ / per_gpu : 0) : feedable;
        if (k < feedable)
            feedable = k;
    }
    return f->whole_free - (uint32_t)feedable;
}

/* Sum over the nodes, each recomputed only when it changed since the last sample. */
static uint32_t stranded_gpus(rp *r)
{
    gs_cluster *c = r->c;
    uint32_t total = 0;
    for (uint32_t n = 0; n < c->nnodes; n++) {
        if (!c->nodes[n].gpus.ndevs)
            continue;
        if (r->strand_ver[n] == 0 || r->strand_ver[n] != c->nver[n] + 1) {
            r->strand[n] = node_stranded(c, n);
            r->strand_ver[n] = c->nver[n] + 1;
        }
        total += r->strand[n];
    }
    return total;
}

static inline bool mig_gpu(const gs_gpu_dev *d)
{
    return (d->flags & GS_DEV_MIG_ENABLED) && !(d->flags & GS_DEV_UNHEALTHY);
}

/* Compute slices of the MIG GPUs, kept by the change hook (in use) and the re-partitions
 * (in instances): in used instances, in idle ones, in none. */
static void mig_slices(const rp *r, gs_replay_sample *s)
{
    s->mig_used = (uint32_t)r->mig_used_c;
    s->mig_idle = (uint32_t)(r->mig_part_c - r->mig_used_c);
    s->mig_unpartitioned = (uint32_t)((int64_t)r->res->mig_slices - r->mig_part_c);
    s->mig_reconfiguring = (uint32_t)r->reconfs.n;
}

/* Compute slices in the instances of one GPU. */
static int64_t gpu_part_compute(const gs_node_gpus *g, const gs_gpu_dev *dv)
{
    int64_t part = 0;
    for (uint32_t i = dv->mig_first; i < (uint32_t)dv->mig_first + dv->nmig && i < g->nmig; i++)
        part += g->mig_model->profiles[g->mig[i].profile].compute;
    return part;
}

static int sample(rp *r)
{
    gs_replay_result *res = r->res;
    gs_replay_sample s;
    memset(&s, 0, sizeof s); /* padding too: results compare byte for byte */
    s.t = r->now;
    s.gpus_allocated = (double)r->alloc_micro / 1e6;
    s.nodes_used = r->nodes_used;
    s.gpu_nodes_used = r->gpu_nodes_used;
    s.running = r->running;
    s.pending = r->pending;
    s.gpus_stranded = stranded_gpus(r);
    if (res->mig_gpus)
        mig_slices(r, &s);
    if (res->nsamples && res->samples[res->nsamples - 1].t == r->now) {
        res->samples[res->nsamples - 1] = s;
        return 0;
    }
    if (res->nsamples == r->nsamples_cap) {
        uint32_t nc = r->nsamples_cap ? r->nsamples_cap * 2 : 256;
        gs_replay_sample *ns = realloc(res->samples, nc * sizeof *ns);
        if (!ns)
            return -1;
        res->samples = ns;
        r->nsamples_cap = nc;
    }
    res->samples[res->nsamples++] = s;
    return 0;
}

/* ---------------------------------------------------------------- pod transitions */
/* Messages live in the cluster's arena, which dies before the result: keep a copy. */
static const char *keep_reason(rp *r, const char *msg)
{
    if (!msg)
        return NULL;
    int32_t id = gs_intern_id(r->reasons, msg, strlen(msg));
    return id < 0 ? NULL : gs_intern_str(r->reasons, id);
}

static void started(rp *r, uint32_t pod)
{
    gs_replay_pod *rp_ = &r->res->pods[pod];
    gs_cpod *cp = &r->c->pods[pod];
    if (rp_->first_start < 0)
        rp_->first_start = r->now;
    rp_->waited += r->now - r->queued_at[pod];
    rp_->last_start = r->now;
    rp_->state = GS_RP_RUNNING;
    rp_->node = cp->node >= 0 ? (int32_t)r->c->nodes[cp->node].snap : -1;
    rp_->reason = NULL;
    cp->start = r->now; /* preemption importance: started now */
    r->running++;
    r->pending--;
    if (rp_->duration != GS_REPLAY_FOREVER)
        dep_push(r, r->now + rp_->duration, pod);
}

static int enqueue(rp *r, uint32_t pod);

static void evicted(rp *r, uint32_t pod)
{
    gs_replay_pod *x = &r->res->pods[pod];
    r->gen[pod]++; /* its planned departure is void */
    r->running--;
    x->preemptions++;
    r->res->preemptions++;
    gs__quota_release(r->c, pod);
    if (r->o->requeue_preempted) {
        /* the controller recreates it: a new pod goes through admission again */
        x->state = GS_RP_PENDING;
        r->queued_at[pod] = r->now;
        r->pending++;
        const char *msg;
        if (gs__admit(r->c, pod, &msg) != 0) {
            x->state = GS_RP_REJECTED;
            x->reason = keep_reason(r, msg);
            x->end = r->now;
            r->pending--;
            r->res->quota_rejections++;
            return;
        }
        enqueue(r, pod);
    } else {
        x->state = GS_RP_LOST;
        x->end = r->now;
    }
}

/* ---------------------------------------------------------------- classes */
static int32_t class_of(rp *r, uint32_t pod)
{
    const gs_cpod *p = &r->c->pods[pod];
    char key[64];
    int n = snprintf(key, sizeof key, "%u/%d/%d", p->shape, p->priority, p->never_preempt);
    int32_t id = gs_intern_id(&r->classes_key, key, (size_t)n);
    if (id < 0)
        return -1;
    while (r->classes.n <= (size_t)id) {
        qclass q;
        memset(&q, 0, sizeof q);
        q.priority = p->priority;
        q.preempt = r->o->cfg.preemption && !p->never_preempt;
        if (gs_vec_push(r->classes, q))
            return -1;
    }
    return id;
}

static int enqueue(rp *r, uint32_t pod)
{
    int32_t cls = class_of(r, pod);
    if (cls < 0)
        return -1;
    r->cls[pod] = (uint32_t)cls;
    r->seq[pod] = r->next_seq++;
    qclass *q = &r->classes.v[cls];
    if (gs_vec_push(q->fifo, pod))
        return -1;
    if (!q->in_heap && q->head == q->fifo.n - 1) {
        q->heap_key = order_key(r, pod);
        return heap_push(r, (uint32_t)cls);
    }
    return 0;
}

/* Would pod fit on node once every pod of lower priority than its class is gone? The
 * first step of DefaultPreemption's victim dry run, done with the change hook off, the
 * node's pod list order restored and its version left alone (a dry run), so nothing
 * observable changes and the engine's shape caches stay valid. */
static bool fits_without_lower(rp *r, const qclass *q, uint32_t pod, uint32_t node)
{
    gs_cluster *c = r->c;
    gs_cnode *n = &c->nodes[node];
    size_t np = n->pods.n;
    r->scratch_pods.n = r->scratch_order.n = r->scratch_assign.n = 0;
    if (gs_vec_reserve(r->scratch_pods, np) || gs_vec_reserve(r->scratch_order, np) ||
        gs_vec_reserve(r->scratch_assign, np))
        return true; /* cannot tell: let a full cycle decide */
    uint32_t nl = 0;
    for (size_t k = 0; k < np; k++) {
        uint32_t v = n->pods.v[k];
        r->scratch_order.v[k] = v;
        if (c->pods[v].priority < q->priority)
            r->scratch_pods.v[nl++] = v;
    }
    if (!nl)
        return false;
    void (*hook)(void *, uint32_t, uint32_t, bool) = c->on_change;
    c->on_change = NULL;
    gs__dry_begin(c); /* undone exactly below: the node keeps its version */
    for (uint32_t i = 0; i < nl; i++) {
        r->scratch_assign.v[i] = c->pods[r->scratch_pods.v[i]].assign;
        gs__unbind(c, r->scratch_pods.v[i]);
    }
    gs_gpu_assign a;
    gs__pod_cache_for(c, pod);
    bool ok = gs__filter(c, pod, node, &a);
    for (uint32_t i = nl; i-- > 0;) {
        const gs_gpu_assign *sa = &r->scratch_assign.v[i];
        gs__bind(c, r->scratch_pods.v[i], node, sa->n ? sa : NULL);
    }
    memcpy(n->pods.v, r->scratch_order.v, np * sizeof *n->pods.v);
    gs__dry_end(c, node);
    c->on_change = hook;
    return ok;
}

/* Is the class's last failure still the outcome of a full cycle? Only nodes released
 * since the failure can change it (file comment); each is re-checked exactly. */
static bool still_failing(rp *r, qclass *q, uint32_t head)
{
    if (!q->failed)
        return false;
    gs_cluster *c = r->c;
    size_t end = r->changes.n;
    if (q->fail_pos == end)
        return true;
    r->round++;
    for (size_t i = q->fail_pos; i < end; i++) {
        uint32_t node = r->changes.v[i];
        if (r->stamp[node] == r->round)
            continue;
        r->stamp[node] = r->round;
        gs_gpu_assign a;
        gs__pod_cache_for(c, head);
        if (gs__filter(c, head, node, &a))
            return false;
        if (q->preempt && !c->status[node].unresolvable && fits_without_lower(r, q, head, node))
            return false;
    }
    q->fail_pos = end;
    return true;
}

static int park(rp *r, uint32_t cls)
{
    if (gs_vec_push(r->parked, cls))
        return -1;
    r->classes.v[cls].parked = true;
    return 0;
}

/* Return to the heap the parked classes among parked[0..hi) that a release may have
 * unblocked; the others stay, in order, and entries from hi on move down behind them.
 * With `after` non-NULL (a release in the middle of a round) only classes that come after
 * the class just visited in queue order are considered: the others had their visit in
 * this round already. Returns the number kept from the range, or -1 (out of memory). */
static long unpark(rp *r, size_t hi, const uint32_t *after)
{
    size_t out = 0, kept_in_range = 0, n = r->parked.n;
    for (size_t i = 0; i < n; i++) {
        uint32_t cls = r->parked.v[i];
        if (i < hi) {
            qclass *q = &r->classes.v[cls];
            if ((!after || heap_less(r, *after, cls)) &&
                !still_failing(r, q, q->fifo.v[q->head])) {
                q->parked = false;
                q->heap_key = order_key(r, q->fifo.v[q->head]);
                if (heap_push(r, cls))
                    return -1;
                continue;
            }
            kept_in_range++;
        }
        r->parked.v[out++] = cls;
    }
    r->parked.n = out;
    return (long)kept_in_range;
}

static int round_robin(rp *r)
{
    gs_cluster *c = r->c;
    /* a release since the last scan may have unblocked parked classes */
    if (r->changes.n > r->parked_seen) {
        if (unpark(r, r->parked.n, NULL) < 0)
            return -1;
        r->parked_seen = r->changes.n;
    }
    size_t old_parked = r->parked.n; /* parked[0..old_parked) were parked before this round */
    size_t round_seen = r->changes.n;
    while (r->nheap) {
        uint32_t cls = heap_pop(r);
        qclass *q = &r->classes.v[cls];
        if (q->head >= q->fifo.n)
            continue;
        uint32_t pod = q->fifo.v[q->head];
        bool placed = false;
        if (!still_failing(r, q, pod)) {
            r->res->schedule_attempts++;
            placed = gs__schedule_one(c, pod, (uint32_t)(r->res->schedule_attempts & 0x7fffffff));
            if (placed) {
                /* q->failed stays as it was: the class's earlier failure still holds on
                 * every node not released since (binds only make things worse), so the
                 * next head is re-checked on the released nodes only */
                q->head++;
                started(r, pod);
                /* victims of a preemption */
                const gs_decision *d = gs_cluster_decision_for_pod(c, pod);
                for (uint32_t v = 0; d && v < d->nvictims; v++)
                    evicted(r, d->victims[v]);
            } else {
                q->failed = true;
                const gs_decision *d = gs_cluster_decision_for_pod(c, pod);
                q->reason = d ? keep_reason(r, d->message) : NULL;
            }
            if (flush_releases(r))
                return -1;
            if (!placed)
                q->fail_pos = r->changes.n;
        }
        if (q->head >= q->fifo.n) {
            /* drained: release the fifo memory */
            gs_vec_free(q->fifo);
            q->head = 0;
        } else if (!placed) {
            if (park(r, cls))
                return -1;
        } else {
            q->heap_key = order_key(r, q->fifo.v[q->head]);
            if (heap_push(r, cls))
                return -1;
        }
        if (r->changes.n > round_seen) {
            /* an eviction released a node mid-round: classes parked before this round
             * that come later in queue order get their visit, as in a full pass */
            long kept = unpark(r, old_parked, &cls);
            if (kept < 0)
                return -1;
            old_parked = (size_t)kept;
            round_seen = r->changes.n;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- dynamic MIG */
/*
 * After each round, every class still pending whose pods ask for MIG instances (mixed
 * strategy, nvidia.com/mig-<profile>) and whose demand (pending pods x instances per pod)
 * exceeds the instances already being created for it gets idle GPUs re-partitioned:
 *
 *  - a candidate is a healthy MIG-enabled GPU of a mixed-strategy node whose model has the
 *    profile, with no instance in use and no re-partition in flight;
 *  - its new layout is the class's profile as many times as the uncovered demand asks and
 *    the placement rules allow, then the GPU's old instances that still fit, largest first
 *    (so the GPU keeps serving what it served);
 *  - candidates are taken in order of the compute slices of old instances they lose (least
 *    first), then node and GPU order; one is used only if the class's head pod passes every
 *    filter on its node with the new layout in place (taints, affinity, cpu, memory, pods);
 *  - the GPU then offers nothing for mig_delay seconds, as while mig-manager stops the GPU
 *    clients and re-creates the instances; afterwards the new instances appear and the node
 *    counts as released, so waiting classes are re-checked there.
 *
 * A search that found nothing is not repeated until a node releases something (only a
 * release can make a GPU idle or let the pod pass a node's filters). With a zero delay, a
 * GPU whose re-partition ended at the current time is not taken again at that time (two
 * classes could otherwise hand it back and forth without time moving); the search is then
 * repeated at the next event.
 */
static int mig_profile_of(const gs_node_gpus *g, const gs_gpu_request *rq)
{
    if (rq->resource)
        for (uint32_t k = 0; k < g->nmig_res; k++)
            if (g->mig_res_name[k] && strcmp(g->mig_res_name[k], rq->resource) == 0)
                return g->mig_res_profile[k];
    const gs_mig_profile *p = gs_mig_profile_find(g->mig_model, rq->mig_profile);
    return p ? (int)(p - g->mig_model->profiles) : -1;
}

typedef struct mig_cand {
    uint32_t node, lost;
    uint8_t dev, n, made;
    uint8_t pidx[8];
} mig_cand;

typedef GS_VEC(mig_cand) cand_vec;
typedef GS_VEC(uint32_t) u32_vec;

static int cmp_cand(const void *a, const void *b)
{
    const mig_cand *x = a, *y = b;
    if (x->lost != y->lost)
        return x->lost < y->lost ? -1 : 1;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return (x->dev > y->dev) - (x->dev < y->dev);
}

/* The new layout of an idle GPU for `want` instances of profile p (see above). */
static bool mig_target(const gs_node_gpus *g, const gs_gpu_dev *dv, uint8_t p, uint64_t want,
                       mig_cand *out)
{
    const gs_mig_model *m = g->mig_model;
    out->n = out->made = 0;
    out->lost = 0;
    while (out->made < want && out->n < 8) {
        out->pidx[out->n] = p;
        if (!gs_mig_layout_fits(m, out->pidx, out->n + 1u, NULL))
            break;
        out->n++;
        out->made++;
    }
    if (!out->made)
        return false;
    /* old instances, largest compute first (stable) */
    uint8_t old[8];
    uint32_t nold = 0;
    for (uint32_t i = 0; i < dv->nmig && nold < 8; i++) {
        uint8_t q = g->mig[dv->mig_first + i].profile;
        uint32_t j = nold++;
        while (j > 0 && m->profiles[old[j - 1]].compute < m->profiles[q].compute) {
            old[j] = old[j - 1];
            j--;
        }
        old[j] = q;
    }
    out->lost = 0;
    uint32_t kept_same = 0; /* old instances of profile p the new layout still holds */
    for (uint32_t i = 0; i < nold; i++) {
        if (old[i] == p && kept_same < out->made) {
            kept_same++;
            continue;
        }
        bool ok = false;
        if (out->n < 8) {
            out->pidx[out->n] = old[i];
            ok = gs_mig_layout_fits(m, out->pidx, out->n + 1u, NULL);
        }
        if (ok)
            out->n++;
        else
            out->lost += m->profiles[old[i]].compute;
    }
    /* a layout equal to the old one changes nothing */
    return !(out->lost == 0 && out->n == nold);
}

static int mig_search(rp *r, uint32_t cls, cand_vec *cands, bool *skipped)
{
    gs_cluster *c = r->c;
    qclass *q = &r->classes.v[cls];
    uint32_t head = q->fifo.v[q->head];
    const gs_cpod *hp = &c->pods[head];
    uint64_t demand = (uint64_t)(q->fifo.n - q->head) * hp->gpu.count;
    cands->n = 0;
    /* GPUs with the same old layout (and model) get the same new one: computed once */
    struct memo {
        const gs_mig_model *m;
        uint8_t n, old[8];
        bool ok;
        mig_cand cd;
    } memo[16];
    uint32_t nmemo = 0;
    for (size_t k = 0; k < r->mig_nodes.n; k++) {
        uint32_t n = r->mig_nodes.v[k];
        const gs_node_gpus *g = &c->nodes[n].gpus;
        if (g->mig_strategy != GS_MIG_MIXED)
            continue;
        int p = mig_profile_of(g, &hp->gpu);
        if (p < 0)
            continue;
        for (uint32_t d = 0; d < g->ndevs && d < 64; d++) {
            const gs_gpu_dev *dv = &g->devs[d];
            uint64_t bit = 1ULL << d;
            if (!mig_gpu(dv) || (r->reconf_mask[n] & bit))
                continue;
            if (r->fresh_t[n] == r->now && (r->fresh_mask[n] & bit)) {
                *skipped = true;
                continue;
            }
            bool idle = true;
            for (uint32_t i = 0; i < dv->nmig && idle; i++)
                idle = !g->mig[dv->mig_first + i].used;
            if (!idle)
                continue;
            uint8_t old[8] = {0}, on = dv->nmig < 8 ? dv->nmig : 8;
            for (uint32_t i = 0; i < on; i++)
                old[i] = g->mig[dv->mig_first + i].profile;
            uint32_t e = 0;
            while (e < nmemo && !(memo[e].m == g->mig_model && memo[e].n == on &&
                                  memcmp(memo[e].old, old, on) == 0))
                e++;
            mig_cand cd;
            bool ok;
            if (e < nmemo) {
                ok = memo[e].ok;
                cd = memo[e].cd;
            } else {
                ok = mig_target(g, dv, (uint8_t)p, demand - q->mig_inflight, &cd);
                if (nmemo < 16) {
                    memo[nmemo] = (struct memo){g->mig_model, on, {0}, ok, cd};
                    memcpy(memo[nmemo].old, old, on);
                    nmemo++;
                }
            }
            if (!ok)
                continue;
            cd.node = n;
            cd.dev = (uint8_t)d;
            if (gs_vec_push(*cands, cd))
                return -1;
        }
    }
    /* the first candidate in cmp_cand order on whose node the head passes every filter:
     * usually the first one, so the best is selected in one pass and the list is sorted
     * only when a few have failed */
    for (size_t i = 0; i < cands->n; i++) {
        if (i == 4 && cands->n > 5)
            qsort(cands->v + i, cands->n - i, sizeof *cands->v, cmp_cand);
        if (i < 4) {
            size_t best = i;
            for (size_t j = i + 1; j < cands->n; j++)
                if (cmp_cand(&cands->v[j], &cands->v[best]) < 0)
                    best = j;
            mig_cand t = cands->v[i];
            cands->v[i] = cands->v[best];
            cands->v[best] = t;
        }
        mig_cand *cd = &cands->v[i];
        gs_node_gpus *g = &c->nodes[cd->node].gpus;
        gs_gpu_dev *dv = &g->devs[cd->dev];
        uint8_t op[8], os[8], on = dv->nmig;
        for (uint32_t k = 0; k < on; k++) {
            op[k] = g->mig[dv->mig_first + k].profile;
            os[k] = g->mig[dv->mig_first + k].start;
        }
        const char *names[8] = {0};
        for (uint32_t k = 0; k < cd->made; k++)
            names[k] = hp->gpu.resource;
        if (gs__mig_relayout(c, cd->node, cd->dev, cd->pidx, NULL, cd->n, names))
            continue;
        gs_gpu_assign a;
        gs__pod_cache_for(c, head);
        bool ok = gs__filter(c, head, cd->node, &a);
        int64_t old_part = 0;
        for (uint32_t k = 0; k < on; k++)
            old_part += g->mig_model->profiles[op[k]].compute;
        /* back to the old layout, or (when it passes) to none while re-partitioned */
        if (gs__mig_relayout(c, cd->node, cd->dev, op, os, ok ? 0 : on, NULL))
            return -1;
        if (!ok)
            continue;
        reconf rc;
        memset(&rc, 0, sizeof rc);
        rc.t = r->now + (r->o->mig_delay > 0 ? r->o->mig_delay : 0);
        rc.node = cd->node;
        rc.dev = cd->dev;
        rc.n = cd->n;
        memcpy(rc.pidx, cd->pidx, sizeof rc.pidx);
        rc.cls = cls;
        rc.made = cd->made;
        rc.name = hp->gpu.resource;
        if (gs_vec_push(r->reconfs, rc))
            return -1;
        r->reconf_mask[cd->node] |= 1ULL << cd->dev;
        r->mig_part_c -= old_part;
        q->mig_inflight += cd->made;
        r->res->mig_reconfigs++;
        return 1;
    }
    return 0;
}

static int mig_dynamic(rp *r, cand_vec *cands, u32_vec *todo)
{
    gs_cluster *c = r->c;
    todo->n = 0;
    for (size_t i = 0; i < r->parked.n; i++) {
        uint32_t cls = r->parked.v[i];
        qclass *q = &r->classes.v[cls];
        if (q->head >= q->fifo.n)
            continue;
        const gs_cpod *hp = &c->pods[q->fifo.v[q->head]];
        if (hp->gpu.kind != GS_GPU_MIG || !hp->gpu.count)
            continue;
        if (q->mig_scan_pos == r->changes.n + 1)
            continue; /* nothing released since the last fruitless search */
        uint64_t demand = (uint64_t)(q->fifo.n - q->head) * hp->gpu.count;
        if (q->mig_inflight >= demand)
            continue;
        q->heap_key = order_key(r, q->fifo.v[q->head]);
        if (gs_vec_push(*todo, cls))
            return -1;
    }
    /* queue order: the most important waiting pod gets the first GPU */
    for (size_t i = 1; i < todo->n; i++) {
        uint32_t x = todo->v[i];
        size_t j = i;
        while (j > 0 && heap_less(r, x, todo->v[j - 1])) {
            todo->v[j] = todo->v[j - 1];
            j--;
        }
        todo->v[j] = x;
    }
    for (size_t i = 0; i < todo->n; i++) {
        uint32_t cls = todo->v[i];
        qclass *q = &r->classes.v[cls];
        const gs_cpod *hp = &c->pods[q->fifo.v[q->head]];
        uint64_t demand = (uint64_t)(q->fifo.n - q->head) * hp->gpu.count;
        while (q->mig_inflight < demand) {
            bool skipped = false;
            int got = mig_search(r, cls, cands, &skipped);
            if (got < 0)
                return -1;
            if (got == 0) {
                if (!skipped) /* a GPU left out for now must be looked at again */
                    q->mig_scan_pos = r->changes.n + 1;
                break;
            }
        }
    }
    return 0;
}

/* Re-partitions due now: the new instances appear and the node counts as released. */
static int mig_complete(rp *r)
{
    size_t out = 0;
    for (size_t i = 0; i < r->reconfs.n; i++) {
        reconf *rc = &r->reconfs.v[i];
        if (rc->t > r->now) {
            r->reconfs.v[out++] = *rc;
            continue;
        }
        const char *names[8] = {0};
        for (uint32_t k = 0; k < rc->n; k++)
            names[k] = rc->name;
        /* cannot fail: the GPU has no instance and the layout was placed before */
        gs__mig_relayout(r->c, rc->node, rc->dev, rc->pidx, NULL, rc->n, names);
        const gs_node_gpus *g = &r->c->nodes[rc->node].gpus;
        r->mig_part_c += gpu_part_compute(g, &g->devs[rc->dev]);
        r->reconf_mask[rc->node] &= ~(1ULL << rc->dev);
        if (r->o->mig_delay > 0) {
            /* time moves between two re-partitions of one GPU: nothing can loop */
        } else if (r->fresh_t[rc->node] != r->now) {
            r->fresh_t[rc->node] = r->now;
            r->fresh_mask[rc->node] = 1ULL << rc->dev;
        } else {
            r->fresh_mask[rc->node] |= 1ULL << rc->dev;
        }
        qclass *q = &r->classes.v[rc->cls];
        q->mig_inflight = q->mig_inflight > rc->made ? q->mig_inflight - rc->made : 0;
        if (gs_vec_push(r->changes, rc->node))
            return -1;
    }
    r->reconfs.n = out;
    return 0;
}

static int64_t mig_next(const rp *r)
{
    int64_t t = INT64_MAX;
    for (size_t i = 0; i < r->reconfs.n; i++)
        if (r->reconfs.v[i].t < t)
            t = r->reconfs.v[i].t;
    return t;
}

/* ---------------------------------------------------------------- driver */
typedef struct arr {
    int64_t t;
    uint32_t pod;
} arr;

static int cmp_arr(const void *a, const void *b)
{
    const arr *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->pod > y->pod) - (x->pod < y->pod);
}

int gs_replay_run(const gs_snapshot *snap, const int64_t *arrival, const int64_t *duration,
                  const gs_replay_opts *opts, gs_replay_result *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    gs_replay_opts dflt;
    if (!opts) {
        gs_replay_opts_defaults(&dflt);
        opts = &dflt;
    }
    gs_cluster *c = gs_cluster_new(snap, &opts->cfg, err);
    if (!c)
        return -1;
    c->ran = true;
    rp r;
    memset(&r, 0, sizeof r);
    r.c = c;
    r.o = opts;
    r.res = out;
    r.arrival = arrival;
    r.duration = duration;
    gs_intern_init(&r.classes_key);
    uint32_t np = c->npods ? c->npods : 1, nn = c->nnodes ? c->nnodes : 1;
    out->npods = c->npods;
    out->pods = calloc(np, sizeof *out->pods);
    r.seq = calloc(np, sizeof *r.seq);
    r.cls = calloc(np, sizeof *r.cls);
    r.gen = calloc(np, sizeof *r.gen);
    r.stamp = calloc(nn, sizeof *r.stamp);
    r.node_gpu_pods = calloc(nn, sizeof *r.node_gpu_pods);
    r.queued_at = calloc(np, sizeof *r.queued_at);
    r.open_unbind = calloc(np, sizeof *r.open_unbind);
    r.reconf_mask = calloc(nn, sizeof *r.reconf_mask);
    r.fresh_mask = calloc(nn, sizeof *r.fresh_mask);
    r.fresh_t = calloc(nn, sizeof *r.fresh_t);
    r.strand = calloc(nn, sizeof *r.strand);
    r.strand_ver = calloc(nn, sizeof *r.strand_ver);
    cand_vec cands = {0};
    u32_vec todo = {0};
    r.reasons = calloc(1, sizeof *r.reasons);
    if (r.reasons)
        gs_intern_init(r.reasons);
    out->strings_ = r.reasons;
    out->mig_dynamic = opts->mig_dynamic;
    out->mig_delay = opts->mig_dynamic ? opts->mig_delay : 0;
    arr *arrivals = calloc(np, sizeof *arrivals);
    int rc = -1;
    if (!out->pods || !r.seq || !r.cls || !r.gen || !r.stamp || !r.node_gpu_pods || !arrivals ||
        !r.queued_at || !r.open_unbind || !r.reasons || !r.reconf_mask || !r.fresh_mask ||
        !r.fresh_t || !r.strand || !r.strand_ver) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory (replay)");
        goto done;
    }
    /* counters for the pods bound at the start (they were bound before the hook) */
    for (uint32_t n = 0; n < c->nnodes; n++) {
        out->gpus_total += c->nodes[n].gpus.ndevs;
        for (size_t k = 0; k < c->nodes[n].pods.n; k++) {
            const gs_cpod *cp = &c->pods[c->nodes[n].pods.v[k]];
            if (!cp->uses_gpu)
                continue;
            r.alloc_micro += assign_micro(c, n, &cp->assign) + gs__dra_gpu_micro(c, c->nodes[n].pods.v[k]);
            r.mig_used_c += assign_mig_compute(c, n, &cp->assign);
            r.node_gpu_pods[n]++;
        }
        r.nodes_used += c->nodes[n].npods > 0;
        r.gpu_nodes_used += r.node_gpu_pods[n] > 0;
        /* MIG GPUs */
        const gs_node_gpus *g = &c->nodes[n].gpus;
        r.fresh_t[n] = INT64_MIN;
        uint32_t mg = 0;
        for (uint32_t d = 0; g->mig_model && d < g->ndevs; d++)
            if (mig_gpu(&g->devs[d])) {
                mg++;
                out->mig_slices += g->mig_model->compute_slices;
                r.mig_part_c += gpu_part_compute(g, &g->devs[d]);
            }
        if (mg) {
            out->mig_gpus += mg;
            if (gs_vec_push(r.mig_nodes, n)) {
                gs_fail(err, GS_ERR_NOMEM, "out of memory (replay)");
                goto done;
            }
        }
    }
    c->on_change = on_change;
    c->on_change_ctx = &r;

    /* initial state and the arrival list */
    int64_t t0 = INT64_MAX;
    uint32_t narr = 0;
    for (uint32_t i = 0; i < c->npods; i++) {
        gs_replay_pod *x = &out->pods[i];
        gs_cpod *cp = &c->pods[i];
        x->pod = i;
        x->first_start = x->last_start = x->end = -1;
        x->node = -1;
        x->arrival = arrival ? arrival[i] : INT64_MIN;
        x->duration = duration ? duration[i] : GS_REPLAY_FOREVER;
        if (x->duration < 0)
            x->duration = GS_REPLAY_FOREVER;
        if (x->arrival != INT64_MIN && x->arrival < t0)
            t0 = x->arrival;
        if (cp->state == GS_PS_BOUND || cp->state == GS_PS_SKIPPED)
            continue;
        arrivals[narr].t = x->arrival;
        arrivals[narr].pod = i;
        narr++;
    }
    if (t0 == INT64_MAX)
        t0 = 0;
    for (uint32_t i = 0; i < narr; i++)
        if (arrivals[i].t == INT64_MIN)
            arrivals[i].t = t0;
    qsort(arrivals, narr, sizeof *arrivals, cmp_arr);
    r.now = t0;
    for (uint32_t i = 0; i < c->npods; i++) {
        gs_cpod *cp = &c->pods[i];
        gs_replay_pod *x = &out->pods[i];
        x->priority = cp->priority;
        if (cp->state == GS_PS_BOUND) {
            x->state = GS_RP_RUNNING;
            x->arrival = t0;
            x->first_start = x->last_start = t0;
            x->node = (int32_t)c->nodes[cp->node].snap;
            cp->start = t0;
            r.running++;
            if (x->duration != GS_REPLAY_FOREVER && dep_push(&r, t0 + x->duration, i)) {
                gs_fail(err, GS_ERR_NOMEM, "out of memory (replay)");
                goto done;
            }
        }
    }
    int64_t every = opts->sample_every;
    if (every <= 0) {
        int64_t t_end = narr ? arrivals[narr - 1].t : t0;
        every = (t_end - t0) / 1000;
        if (every < 1)
            every = 1;
        /* arrivals close together and long runs (one pod of a day: a sample a second)
         * would sample without end: at most GS_REPLAY_MAX_AUTO_SAMPLES up to the last
         * planned departure */
        int64_t t_hi = t_end;
        for (uint32_t i = 0; i < c->npods; i++) {
            int64_t a = out->pods[i].arrival == INT64_MIN ? t0 : out->pods[i].arrival;
            int64_t d = out->pods[i].duration;
            if (d != GS_REPLAY_FOREVER && a <= INT64_MAX / 4 && d <= INT64_MAX / 4 && a + d > t_hi)
                t_hi = a + d;
        }
        if ((t_hi - t0) / every > GS_REPLAY_MAX_AUTO_SAMPLES)
            every = (t_hi - t0) / GS_REPLAY_MAX_AUTO_SAMPLES + 1;
    }
    int64_t next_sample = t0;
    uint32_t ai = 0;
    for (;;) {
        int64_t t = INT64_MAX;
        if (ai < narr)
            t = arrivals[ai].t;
        while (r.ndeps && r.deps[0].gen != r.gen[r.deps[0].pod])
            dep_pop(&r); /* void departures */
        if (r.ndeps && r.deps[0].t < t)
            t = r.deps[0].t;
        int64_t tm = mig_next(&r);
        if (tm < t)
            t = tm;
        if (t == INT64_MAX)
            break;
        if (opts->horizon && t > opts->horizon)
            break;
        while (next_sample < t) { /* samples between events keep the state of the last one */
            int64_t keep = r.now;
            r.now = next_sample;
            if (sample(&r)) {
                gs_fail(err, GS_ERR_NOMEM, "out of memory (samples)");
                goto done;
            }
            r.now = keep;
            next_sample += every;
        }
        r.now = t;
        /* 1. departures */
        while (r.ndeps && r.deps[0].t == t) {
            struct dep d = dep_pop(&r);
            if (d.gen != r.gen[d.pod])
                continue;
            gs__unbind(c, d.pod);
            gs__quota_release(c, d.pod);
            gs_replay_pod *x = &out->pods[d.pod];
            x->state = GS_RP_DONE;
            x->end = t;
            r.running--;
        }
        if (r.reconfs.n && mig_complete(&r)) {
            gs_fail(err, GS_ERR_NOMEM, "out of memory (release log)");
            goto done;
        }
        if (flush_releases(&r)) {
            gs_fail(err, GS_ERR_NOMEM, "out of memory (release log)");
            goto done;
        }
        /* 2. arrivals */
        while (ai < narr && arrivals[ai].t == t) {
            uint32_t pod = arrivals[ai++].pod;
            gs_cpod *cp = &c->pods[pod];
            gs_replay_pod *x = &out->pods[pod];
            cp->existing = 0; /* created now: goes through admission */
            const char *msg = cp->reject;
            if (msg || gs__admit(c, pod, &msg) != 0) {
                x->state = GS_RP_REJECTED;
                x->reason = keep_reason(&r, msg);
                x->end = t;
                x->priority = cp->priority;
                if (msg && strstr(msg, "quota"))
                    out->quota_rejections++;
                else
                    out->other_rejections++;
                continue;
            }
            x->priority = cp->priority;
            x->state = GS_RP_PENDING;
            r.queued_at[pod] = t;
            r.pending++;
            if (enqueue(&r, pod)) {
                gs_fail(err, GS_ERR_NOMEM, "out of memory (queue)");
                goto done;
            }
        }
        /* 3. scheduling round */
        if (round_robin(&r)) {
            gs_fail(err, GS_ERR_NOMEM, "out of memory (round)");
            goto done;
        }
        if (opts->mig_dynamic && r.parked.n && mig_dynamic(&r, &cands, &todo)) {
            gs_fail(err, GS_ERR_NOMEM, "out of memory (dynamic MIG)");
            goto done;
        }
        /* 4. sample */
        if (t >= next_sample) {
            if (sample(&r)) {
                gs_fail(err, GS_ERR_NOMEM, "out of memory (samples)");
                goto done;
            }
            while (next_sample <= t)
                next_sample += every;
        }
    }
    /* pods still pending: account their wait up to the end; their reason is their
     * class's last failure */
    out->end_time = r.now;
    for (uint32_t i = 0; i < c->npods; i++) {
        gs_replay_pod *x = &out->pods[i];
        if (x->state == GS_RP_PENDING) {
            x->waited += r.now - r.queued_at[i];
            const qclass *q = &r.classes.v[r.cls[i]];
            if (q->failed)
                x->reason = q->reason;
        }
    }
    rc = 0;
done:
    free(arrivals);
    free(r.seq);
    free(r.cls);
    free(r.gen);
    free(r.stamp);
    free(r.node_gpu_pods);
    free(r.queued_at);
    free(r.open_unbind);
    free(r.reconf_mask);
    free(r.fresh_mask);
    free(r.fresh_t);
    free(r.strand);
    free(r.strand_ver);
    gs_vec_free(r.mig_nodes);
    gs_vec_free(r.reconfs);
    gs_vec_free(cands);
    gs_vec_free(todo);
    gs_vec_free(r.unbinds);
    gs_vec_free(r.parked);
    gs_vec_free(r.scratch_pods);
    gs_vec_free(r.scratch_order);
    gs_vec_free(r.scratch_assign);
    free(r.heap);
    free(r.deps);
    gs_vec_free(r.changes);
    for (size_t i = 0; i < r.classes.n; i++)
        gs_vec_free(r.classes.v[i].fifo);
    gs_vec_free(r.classes);
    gs_intern_free(&r.classes_key);
    gs_cluster_free(c);
    if (rc != 0)
        gs_replay_result_free(out);
    return rc;
}
