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
 * state, so only each class's head pod is tried. A class that failed at change-log
 * position F is skipped while nothing changed, and on later rounds only the nodes changed
 * since F are re-checked (Filter through the shape cache; for preemption-eligible classes,
 * a victim dry run on those nodes) before a full cycle is run. A full cycle still scores
 * every node and, when preemption is needed, dry-runs every potential node, exactly as
 * gs_schedule_run does; the class machinery only skips cycles whose outcome is known.
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
    const char *reason;    /* last failure message */
} qclass;

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
    /* change log: nodes touched by binds/unbinds */
    GS_VEC(uint32_t) changes;
    uint32_t *stamp;      /* per node: round stamp for de-duplicating the log tail */
    uint32_t round;
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
            s += (int64_t)p->compute * 1000000 / g->mig_model->compute_slices;
        } else if (a->dev[i] < g->ndevs && g->devs[a->dev[i]].slots > 1) {
            s += (int64_t)a->slots[i] * 1000000 / g->devs[a->dev[i]].slots;
        } else {
            s += (int64_t)a->milli[i] * 1000;
        }
    }
    return s;
}

static void on_change(void *ctx, uint32_t pod, uint32_t node, bool bound)
{
    rp *r = ctx;
    gs_cluster *c = r->c;
    gs_vec_push(r->changes, node);
    const gs_cpod *p = &c->pods[pod];
    int64_t micro = p->has_gpu ? assign_micro(c, node, &p->assign) : 0;
    uint32_t npods = c->nodes[node].npods;
    if (bound) {
        r->alloc_micro += micro;
        if (npods == 1)
            r->nodes_used++;
        if (p->has_gpu && r->node_gpu_pods[node]++ == 0)
            r->gpu_nodes_used++;
    } else {
        r->alloc_micro -= micro;
        if (npods == 0)
            r->nodes_used--;
        if (p->has_gpu && --r->node_gpu_pods[node] == 0)
            r->gpu_nodes_used--;
    }
}

/* GPUs idle on a node beyond what its free cpu and memory can feed at the node's own
 * cpu-per-GPU and memory-per-GPU ratios: stranded by whatever holds that cpu/memory. */
static uint32_t stranded_gpus(const gs_cluster *c)
{
    uint32_t total = 0;
    for (uint32_t n = 0; n < c->nnodes; n++) {
        const gs_node_gpus *g = &c->nodes[n].gpus;
        if (!g->ndevs)
            continue;
        gs_gpu_free f;
        gs_gpu_free_summary(g, &f);
        if (!f.whole_free || !f.devices)
            continue;
        const int64_t *al = c->alloc + (size_t)n * c->ndims;
        const int64_t *us = c->used + (size_t)n * c->ndims;
        uint64_t feedable = f.whole_free;
        for (int d = GS_DIM_CPU; d <= GS_DIM_MEM; d++) {
            if (al[d] <= 0)
                continue;
            int64_t per_gpu = al[d] / f.devices;
            int64_t free_ = al[d] - us[d];
            uint64_t k = per_gpu > 0 ? (uint64_t)(free_ > 0 ? free_ / per_gpu : 0) : feedable;
            if (k < feedable)
                feedable = k;
        }
        total += f.whole_free - (uint32_t)feedable;
    }
    return total;
}

static int sample(rp *r)
{
    gs_replay_result *res = r->res;
    gs_replay_sample s = {
        .t = r->now,
        .gpus_allocated = (double)r->alloc_micro / 1e6,
        .nodes_used = r->nodes_used,
        .gpu_nodes_used = r->gpu_nodes_used,
        .running = r->running,
        .pending = r->pending,
        .gpus_stranded = stranded_gpus(r->c),
    };
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

/* Nothing worth a full cycle has changed for this class since its last failure? */
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
        if (gs__feasible_cached(c, head, node))
            return false;
        if (q->preempt) {
            /* a lower-priority pod on a changed node may now be a victim */
            const gs_cnode *n = &c->nodes[node];
            for (size_t k = 0; k < n->pods.n; k++)
                if (c->pods[n->pods.v[k]].priority < q->priority)
                    return false;
        }
    }
    q->fail_pos = end;
    return true;
}

static int round_robin(rp *r)
{
    gs_cluster *c = r->c;
    /* visit class heads in queue order; classes that still fail are parked until the
     * round ends, then go back into the heap */
    uint32_t *parked = NULL;
    size_t nparked = 0, cap = 0;
    int rc = 0;
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
                q->head++;
                q->failed = false;
                started(r, pod);
                /* victims of a preemption */
                const gs_decision *d = gs_cluster_decision_for_pod(c, pod);
                for (uint32_t v = 0; d && v < d->nvictims; v++)
                    evicted(r, d->victims[v]);
            } else {
                q->failed = true;
                q->fail_pos = r->changes.n;
                const gs_decision *d = gs_cluster_decision_for_pod(c, pod);
                q->reason = d ? keep_reason(r, d->message) : NULL;
            }
        }
        if (q->head >= q->fifo.n) {
            /* drained: release the fifo memory */
            gs_vec_free(q->fifo);
            q->head = 0;
            continue;
        }
        if (!placed) {
            for (size_t k = q->head; k < q->fifo.n; k++)
                r->res->pods[q->fifo.v[k]].reason = q->reason;
            if (nparked == cap) {
                cap = cap ? cap * 2 : 64;
                uint32_t *np = realloc(parked, cap * sizeof *np);
                if (!np) {
                    rc = -1;
                    break;
                }
                parked = np;
            }
            parked[nparked++] = cls;
            continue;
        }
        q->heap_key = order_key(r, q->fifo.v[q->head]);
        if (heap_push(r, cls)) {
            rc = -1;
            break;
        }
    }
    for (size_t i = 0; i < nparked && rc == 0; i++)
        if (heap_push(r, parked[i]))
            rc = -1;
    free(parked);
    return rc;
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
    r.reasons = calloc(1, sizeof *r.reasons);
    if (r.reasons)
        gs_intern_init(r.reasons);
    out->strings_ = r.reasons;
    arr *arrivals = calloc(np, sizeof *arrivals);
    int rc = -1;
    if (!out->pods || !r.seq || !r.cls || !r.gen || !r.stamp || !r.node_gpu_pods || !arrivals ||
        !r.queued_at || !r.reasons) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory (replay)");
        goto done;
    }
    /* counters for the pods bound at the start (they were bound before the hook) */
    for (uint32_t n = 0; n < c->nnodes; n++) {
        out->gpus_total += c->nodes[n].gpus.ndevs;
        for (size_t k = 0; k < c->nodes[n].pods.n; k++) {
            const gs_cpod *cp = &c->pods[c->nodes[n].pods.v[k]];
            if (!cp->has_gpu)
                continue;
            r.alloc_micro += assign_micro(c, n, &cp->assign);
            r.node_gpu_pods[n]++;
        }
        r.nodes_used += c->nodes[n].npods > 0;
        r.gpu_nodes_used += r.node_gpu_pods[n] > 0;
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
    /* pods still pending: account their wait up to the end */
    out->end_time = r.now;
    for (uint32_t i = 0; i < c->npods; i++) {
        gs_replay_pod *x = &out->pods[i];
        if (x->state == GS_RP_PENDING)
            x->waited += r.now - r.queued_at[i];
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
