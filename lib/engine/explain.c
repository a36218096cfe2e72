/*
 * explain.c - the on-call view: why each pending GPU pod is pending, the smallest change
 * that would let it run, and cluster GPU hygiene.
 *
 * Per pending GPU pod (after gs_schedule_run on the snapshot):
 *   rejected by quota        -> raise quota Q by the missing amount
 *   unknown PriorityClass    -> create the class or fix the name
 *   untolerated taint T      -> re-run Filter with a toleration for T added; if nodes pass,
 *                               "tolerate T (N nodes would fit)"
 *   GPU model / MIG profile  -> offered models / profiles in the cluster when none matches
 *   fragmentation            -> free GPUs in the cluster add up, but not on one node
 *   preemption               -> a DefaultPreemption dry run names the victims
 *   capacity                 -> how many GPUs are missing
 * Hygiene: GPU nodes without a NoSchedule GPU taint (and the non-GPU pods on them),
 * GPU-labelled nodes advertising no GPUs (device plugin down), allocation per pool.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"

typedef GS_VEC(gs_fix) fix_vec;

static int add_fix(gs_cluster *c, fix_vec *v, gs_fix_kind kind, const char *object,
                   int64_t amount, const char *text)
{
    gs_fix f = {kind, gs_arena_strdup(&c->arena, text),
                object ? gs_arena_strdup(&c->arena, object) : NULL, amount, NULL};
    return gs_vec_push(*v, f);
}

/* The cause of the fix added last; also the pod's `why` when none is set yet. */
static void cause(fix_vec *v, const char **why, const char *text)
{
    if (v->n && !v->v[v->n - 1].cause)
        v->v[v->n - 1].cause = text;
    if (why && !*why)
        *why = text;
}

/* ---------------------------------------------------------------- quota */
static void quota_fixes(gs_cluster *c, uint32_t pod, fix_vec *fixes, const char **why)
{
    const gs_snapshot *s = c->snap;
    const gs_pod *p = c->pods[pod].obj;
    for (size_t qi = 0; qi < s->quotas.n; qi++) {
        const gs_quota *q = &s->quotas.v[qi];
        if (!gs__quota_matches(q, p))
            continue;
        for (uint32_t k = 0; k < q->hard.n; k++) {
            gs_quantity pu;
            if (!gs__quota_usage(p, q->hard.items[k].name, &pu) || gs_quantity_is_zero(&pu))
                continue;
            gs_quantity nu = gs_quantity_add(c->quota_used[qi][k], pu);
            if (gs_quantity_cmp(&nu, &q->hard.items[k].q) <= 0)
                continue;
            gs_quantity missing = gs_quantity_sub(nu, q->hard.items[k].q);
            char hb[GS_QUANTITY_STR_MAX], nb[GS_QUANTITY_STR_MAX], mb[GS_QUANTITY_STR_MAX];
            gs_quantity_format(&q->hard.items[k].q, hb, sizeof hb);
            gs_quantity_format(&nu, nb, sizeof nb);
            gs_quantity_format(&missing, mb, sizeof mb);
            char text[512];
            snprintf(text, sizeof text, "raise quota %s/%s %s from %s to %s (+%s)",
                     q->meta.namespace_, q->meta.name, q->hard.items[k].name, hb, nb, mb);
            add_fix(c, fixes, GS_FIX_RAISE_QUOTA, q->meta.name, gs_quantity_value(&missing), text);
            cause(fixes, why, gs_arena_printf(&c->arena, "quota %s in namespace %s is exhausted (%s)",
                                              q->meta.name, q->meta.namespace_,
                                              q->hard.items[k].name));
        }
    }
}

/* ---------------------------------------------------------------- taints */
typedef struct taint_hit {
    const gs_taint *t;
    uint32_t nodes;     /* nodes failing on it */
    uint32_t would_fit; /* nodes that pass once it is tolerated */
} taint_hit;

static void taint_fixes(gs_cluster *c, uint32_t pod, fix_vec *fixes, const char **why,
                        uint32_t *taint_blocked)
{
    gs_cpod *p = &c->pods[pod];
    taint_hit hits[16];
    uint32_t nh = 0;
    *taint_blocked = 0;
    gs__reset_pod_cache(c);
    for (uint32_t node = 0; node < c->nnodes; node++) {
        const gs_taintset *ts = &c->taintsets[c->nodes[node].taintset];
        for (uint32_t k = 0; k < ts->n; k++) {
            const gs_taint *t = &ts->taints[k];
            if (t->effect != GS_EFFECT_NO_SCHEDULE && t->effect != GS_EFFECT_NO_EXECUTE)
                continue;
            bool ok = false;
            for (uint32_t j = 0; j < p->ntols && !ok; j++)
                ok = gs_toleration_tolerates(&p->tols[j], t, c->cfg.lt_gt_gate);
            if (ok)
                continue;
            (*taint_blocked)++;
            uint32_t h = 0;
            while (h < nh && !(strcmp(hits[h].t->key, t->key) == 0 &&
                               strcmp(hits[h].t->value, t->value) == 0 &&
                               hits[h].t->effect == t->effect))
                h++;
            if (h == nh && nh < 16)
                hits[nh++] = (taint_hit){t, 0, 0};
            if (h < nh)
                hits[h].nodes++;
            break;
        }
    }
    if (!nh)
        return;
    /* re-filter with one extra toleration per taint */
    const gs_toleration *orig = p->tols;
    uint32_t norig = p->ntols;
    gs_toleration *tols = malloc((norig + 1) * sizeof *tols);
    if (!tols)
        return;
    if (norig)
        memcpy(tols, orig, norig * sizeof *tols);
    for (uint32_t h = 0; h < nh; h++) {
        tols[norig] = (gs_toleration){hits[h].t->key, hits[h].t->value, "Equal", GS_TOL_EQUAL,
                                      hits[h].t->effect, false, 0};
        p->tols = tols;
        p->ntols = norig + 1;
        gs__reset_pod_cache(c);
        gs_gpu_assign a;
        for (uint32_t node = 0; node < c->nnodes; node++)
            if (gs__filter(c, pod, node, &a))
                hits[h].would_fit++;
        p->tols = orig;
        p->ntols = norig;
    }
    free(tols);
    gs__reset_pod_cache(c);
    for (uint32_t h = 0; h < nh; h++) {
        if (!hits[h].would_fit)
            continue;
        const gs_taint *t = hits[h].t;
        char text[512];
        snprintf(text, sizeof text,
                 "tolerate taint %s%s%s:%s (%u node%s would fit)", t->key, t->value[0] ? "=" : "",
                 t->value, gs_effect_name(t->effect), hits[h].would_fit,
                 hits[h].would_fit == 1 ? "" : "s");
        add_fix(c, fixes, GS_FIX_TOLERATE_TAINT, t->key, hits[h].would_fit, text);
        cause(fixes, why, gs_arena_printf(&c->arena, "untolerated taint %s:%s on %u node%s that would "
                                          "otherwise fit", t->key, gs_effect_name(t->effect),
                                          hits[h].would_fit, hits[h].would_fit == 1 ? "" : "s"));
    }
}

/* ---------------------------------------------------------------- models, MIG */
static void offered_models(gs_cluster *c, gs_strbuf *sb)
{
    /* "A100-SXM4-80GB (12 nodes), Tesla-T4 (3 nodes)" in first-seen (name) order */
    const char *names[32];
    uint32_t counts[32], n = 0;
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const char *m = c->nodes[i].gpus.model;
        if (!c->nodes[i].gpus.ndevs || !m || !m[0])
            continue;
        uint32_t k = 0;
        while (k < n && strcmp(names[k], m) != 0)
            k++;
        if (k == n && n < 32) {
            names[n] = m;
            counts[n++] = 0;
        }
        if (k < n)
            counts[k]++;
    }
    for (uint32_t k = 0; k < n; k++)
        gs_strbuf_printf(sb, "%s%s (%u node%s)", k ? ", " : "", names[k], counts[k],
                         counts[k] == 1 ? "" : "s");
    if (!n)
        gs_strbuf_puts(sb, "none");
}

static bool any_node_has_model(gs_cluster *c, const gs_gpu_request *r)
{
    for (uint32_t i = 0; i < c->nnodes; i++)
        for (uint32_t k = 0; k < r->nmodels; k++)
            if (c->nodes[i].gpus.ndevs && gs_gpu_model_matches(r->models[k], c->nodes[i].gpus.model))
                return true;
    return false;
}

static bool any_node_offers_profile(gs_cluster *c, const char *profile, gs_strbuf *offered)
{
    bool found = false;
    const char *seen[64];
    uint32_t ns = 0;
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const gs_node_gpus *g = &c->nodes[i].gpus;
        if (!g->mig_model)
            continue;
        for (uint32_t k = 0; k < g->nmig; k++) {
            const char *name = g->mig_model->profiles[g->mig[k].profile].name;
            if (strcmp(name, profile) == 0)
                found = true;
            uint32_t j = 0;
            while (j < ns && strcmp(seen[j], name) != 0)
                j++;
            if (j == ns && ns < 64) {
                seen[ns++] = name;
                gs_strbuf_printf(offered, "%s%s", offered->len ? ", " : "", name);
            }
        }
    }
    if (!ns)
        gs_strbuf_puts(offered, "none");
    return found;
}

/* ---------------------------------------------------------------- resource families */
/* No node advertises the request's resource family: say which families the nodes do
 * advertise. gpushare: a value too large for any GPU in GiB is probably MiB. */
static void family_fixes(gs_cluster *c, const gs_gpu_request *r, fix_vec *fixes,
                         const char **why)
{
    uint16_t want = r->families ? r->families : GS_FAMS_ANY;
    uint32_t per_fam[GS_FAM__COUNT] = {0};
    bool any = false, mib_node = false, selected = false;
    uint32_t fam_mem = 0;
    gs_strbuf types = GS_STRBUF_INIT;
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const gs_node_gpus *g = &c->nodes[i].gpus;
        if (g->families & want) {
            any = true;
            selected |= gs_gpu_selected_devices(g, r) > 0;
            for (uint32_t d = 0; d < g->ndevs; d++) {
                if (g->devs[d].mem_mib > fam_mem && !(g->devs[d].flags & GS_DEV_MIG_ENABLED))
                    fam_mem = g->devs[d].mem_mib;
                const char *t = g->dev_type ? g->dev_type[d] : NULL;
                if (t && *t && types.len < 200 && !strstr(gs_strbuf_cstr(&types), t))
                    gs_strbuf_printf(&types, "%s%s", types.len ? ", " : "", t);
            }
        }
        for (uint32_t f = 0; f < GS_FAM__COUNT; f++)
            per_fam[f] += (g->families >> f) & 1u;
        mib_node |= g->gpushare_mib;
    }
    const char *res = r->resource ? r->resource : "nvidia.com/gpu";
    char text[600];
    if (!any) {
        gs_strbuf sb = GS_STRBUF_INIT;
        for (uint32_t f = 0; f < GS_FAM__COUNT; f++)
            if (per_fam[f])
                gs_strbuf_printf(&sb, "%s%s (%u node%s)", sb.len ? ", " : "",
                                 gs_gpu_family_name((gs_gpu_family)f), per_fam[f],
                                 per_fam[f] == 1 ? "" : "s");
        snprintf(text, sizeof text,
                 "no node advertises %s, the resource of the pod's GPU convention; the nodes "
                 "offer: %s (ask in a convention the nodes run, or install that convention's "
                 "device plugin)",
                 res, sb.len ? gs_strbuf_cstr(&sb) : "no GPU resources");
        gs_strbuf_free(&sb);
        add_fix(c, fixes, GS_FIX_OTHER, res, 0, text);
        cause(fixes, why, gs_arena_printf(&c->arena, "no node advertises %s", res));
    } else if (!selected) {
        gs_strbuf sel = GS_STRBUF_INIT;
        for (unsigned bit = 1; bit <= GS_HAMI_NOUSE_UUID; bit <<= 1)
            if (gs_gpu_request_hami(r, bit))
                gs_strbuf_printf(&sel, "%s%s: %s", sel.len ? ", " : "", gs_gpu_hami_key(bit),
                                 gs_gpu_request_hami(r, bit));
        snprintf(text, sizeof text,
                 "no GPU passes the pod's HAMi device selection (%s); registered GPU types: %s",
                 gs_strbuf_cstr(&sel), types.len ? gs_strbuf_cstr(&types) : "none published");
        gs_strbuf_free(&sel);
        add_fix(c, fixes, GS_FIX_OTHER, NULL, 0, text);
        cause(fixes, why, "no GPU matches its HAMi device selection");
    } else if (r->kind == GS_GPU_SHARE && fam_mem && r->conv != GS_CONV_GPUSHARE &&
               r->mem_mib > fam_mem) {
        snprintf(text, sizeof text,
                 "the share asks %u MiB of GPU memory, more than any GPU it may use has (the "
                 "largest has %u MiB): ask for at most %u MiB",
                 r->mem_mib, fam_mem, fam_mem);
        add_fix(c, fixes, GS_FIX_OTHER, NULL, 0, text);
        cause(fixes, why, "its GPU memory share is larger than any GPU");
    }
    gs_strbuf_free(&types);
    if (r->conv == GS_CONV_GPUSHARE && !mib_node && fam_mem &&
        (uint64_t)r->gpushare_units * 1024 > fam_mem) {
        snprintf(text, sizeof text,
                 "aliyun.com/gpu-mem: %u is read as GiB (gpushare's default unit), more than any "
                 "gpushare GPU here (the largest has %u MiB): ask for at most %u, or, if %u means "
                 "MiB, run the gpushare device plugin with --memory-unit=MiB (its nodes then "
                 "advertise aliyun.com/gpu-mem in MiB)",
                 r->gpushare_units, fam_mem, fam_mem / 1024, r->gpushare_units);
        add_fix(c, fixes, GS_FIX_OTHER, "aliyun.com/gpu-mem", 0, text);
        cause(fixes, why, "aliyun.com/gpu-mem is larger than any GPU (GiB, or meant as MiB?)");
    }
}

/* ---------------------------------------------------------------- the incident */
/* GPU nodes whose devices would fit the pod but whose cpu/memory/pod slots are taken by
 * pods that request no GPU: the smallest such eviction (dry run: unbind the non-GPU pods
 * of the node, one at a time in reverse importance, until the pod fits; rebind all). */
static void non_gpu_fixes(gs_cluster *c, uint32_t pod, fix_vec *fixes, const char **why)
{
    const gs_cpod *p = &c->pods[pod];
    int32_t best_node = -1;
    uint32_t best_n = UINT32_MAX, best_total = 0, nodes_blocked = 0;
    uint32_t best_list[16];
    for (uint32_t node = 0; node < c->nnodes; node++) {
        gs_cnode *n = &c->nodes[node];
        if (gs_gpu_fit_node(&n->gpus, &p->gpu, NULL) != GS_FIT_OK)
            continue;
        gs__reset_pod_cache(c);
        if (gs__filter(c, pod, node, NULL))
            continue;
        const gs_nstatus *st = &c->status[node];
        bool only_resources = st->nreasons > 0;
        for (uint32_t k = 0; k < st->nreasons; k++) {
            const char *r = gs_intern_str(&c->reasons, st->reasons[k]);
            if (strcmp(r, "Insufficient cpu") != 0 && strcmp(r, "Insufficient memory") != 0 &&
                strcmp(r, "Too many pods") != 0)
                only_resources = false;
        }
        if (!only_resources)
            continue;
        uint32_t list[16], nl = 0, total = 0;
        for (size_t i = 0; i < n->pods.n; i++)
            if (!c->pods[n->pods.v[i]].uses_gpu)
                total++;
        if (!total)
            continue;
        nodes_blocked++;
        /* unbind non-GPU pods (lowest priority first) until the pod fits */
        uint32_t removed[64];
        uint32_t nr = 0;
        bool fits = false;
        while (!fits && nr < 64) {
            int32_t pick = -1;
            for (size_t i = 0; i < n->pods.n; i++) {
                uint32_t q = n->pods.v[i];
                if (c->pods[q].uses_gpu)
                    continue;
                if (pick < 0 || c->pods[q].priority < c->pods[pick].priority ||
                    (c->pods[q].priority == c->pods[pick].priority && q > (uint32_t)pick))
                    pick = (int32_t)q;
            }
            if (pick < 0)
                break;
            gs__unbind(c, (uint32_t)pick);
            removed[nr++] = (uint32_t)pick;
            if (nl < 16)
                list[nl++] = (uint32_t)pick;
            fits = gs__filter_resources(c, pod, node, NULL);
        }
        for (uint32_t i = 0; i < nr; i++)
            gs__bind(c, removed[i], node, NULL);
        if (fits && nr < best_n) {
            best_n = nr;
            best_node = (int32_t)node;
            best_total = total;
            memcpy(best_list, list, nl * sizeof *list);
        }
    }
    if (best_node < 0)
        return;
    gs_strbuf sb = GS_STRBUF_INIT;
    for (uint32_t i = 0; i < best_n && i < 16; i++) {
        const gs_pod *v = c->pods[best_list[i]].obj;
        gs_strbuf_printf(&sb, "%s%s/%s", i ? (i + 1 == best_n ? " and " : ", ") : "",
                         v->meta.namespace_, v->meta.name);
    }
    char text[800];
    snprintf(text, sizeof text,
             "move %s off GPU node %s (%u non-GPU pod%s there hold the cpu/memory it needs), "
             "then taint GPU nodes NoSchedule so ordinary pods stay off them",
             gs_strbuf_cstr(&sb), c->nodes[best_node].obj->meta.name, best_total,
             best_total == 1 ? "" : "s");
    gs_strbuf_free(&sb);
    add_fix(c, fixes, GS_FIX_MOVE_NON_GPU_PODS, c->nodes[best_node].obj->meta.name, best_n, text);
    cause(fixes, why, gs_arena_printf(&c->arena,
                               "%u GPU node%s with free GPUs %s no cpu/memory left: non-GPU pods "
                               "hold it",
                               nodes_blocked, nodes_blocked == 1 ? "" : "s",
                               nodes_blocked == 1 ? "has" : "have"));
}

/* ---------------------------------------------------------------- capacity */
typedef struct cap_view {
    uint32_t nodes_eligible;  /* nodes passing unschedulable/taint/affinity/model */
    int64_t free_units;       /* whole GPUs free (WHOLE), milli free (SHARE), instances (MIG) */
    int64_t best_node_units;  /* the most free on one eligible node */
} cap_view;

static void capacity(gs_cluster *c, uint32_t pod, cap_view *cv)
{
    const gs_cpod *p = &c->pods[pod];
    memset(cv, 0, sizeof *cv);
    for (uint32_t node = 0; node < c->nnodes; node++) {
        const gs_cnode *n = &c->nodes[node];
        gs_gpu_fit f = gs_gpu_fit_node(&n->gpus, &p->gpu, NULL);
        if (f == GS_FIT_MODEL || f == GS_FIT_NO_GPU || f == GS_FIT_MIG_PROFILE)
            continue;
        gs__filter(c, pod, node, NULL);
        const gs_nstatus *st = &c->status[node];
        bool hard = false;
        for (uint32_t k = 0; k < st->nreasons; k++) {
            const char *r = gs_intern_str(&c->reasons, st->reasons[k]);
            if (strncmp(r, "Insufficient", 12) != 0 && strcmp(r, "Too many pods") != 0)
                hard = true;
        }
        if (hard)
            continue;
        cv->nodes_eligible++;
        gs_gpu_free fr;
        gs_gpu_free_summary(&n->gpus, &fr);
        int64_t units = p->gpu.kind == GS_GPU_WHOLE  ? fr.whole_free
                        : p->gpu.kind == GS_GPU_MIG  ? 0
                                                     : fr.milli_free;
        if (p->gpu.kind == GS_GPU_MIG) {
            for (uint32_t k = 0; k < n->gpus.nmig; k++)
                if (!n->gpus.mig[k].used &&
                    strcmp(n->gpus.mig_model->profiles[n->gpus.mig[k].profile].name,
                           p->gpu.mig_profile) == 0)
                    units++;
        }
        cv->free_units += units;
        if (units > cv->best_node_units)
            cv->best_node_units = units;
    }
}

/* ---------------------------------------------------------------- resource claims */
/* Why the pod's claims cannot be allocated (lib/dra's analysis), one fix per finding. */
static void claim_fixes(gs_cluster *c, uint32_t pod, fix_vec *fixes, const char **why)
{
    const gs_cpod *p = &c->pods[pod];
    gs_dra_why w[8];
    uint32_t n = gs_dra_explain(c->dra, &c->dra_pods[p->dra], w, 8);
    for (uint32_t i = 0; i < n && i < 8; i++) {
        add_fix(c, fixes, GS_FIX_CLAIM, w[i].claim, (int64_t)w[i].kind, w[i].fix);
        cause(fixes, why, gs_arena_printf(&c->arena, "claim %s: %s", w[i].claim, w[i].text));
    }
}

static void describe_pod(gs_cluster *c, uint32_t pod, gs_explain_pod *ep, fix_vec *fixes)
{
    gs_cpod *p = &c->pods[pod];
    const gs_decision *d = &c->decisions.v[p->decision];
    const char *why = NULL;
    ep->pod = pod;
    ep->message = d->message;
    char text[600];
    if (d->outcome == GS_OUT_REJECTED) {
        if (d->message && strstr(d->message, "exceeded quota"))
            quota_fixes(c, pod, fixes, &why);
        else if (d->message && strstr(d->message, "no PriorityClass")) {
            snprintf(text, sizeof text, "create PriorityClass %s or fix priorityClassName",
                     p->obj->priority_class_name);
            add_fix(c, fixes, GS_FIX_PRIORITY_CLASS, p->obj->priority_class_name, 0, text);
            cause(fixes, &why, "its PriorityClass does not exist");
        } else {
            add_fix(c, fixes, GS_FIX_OTHER, NULL, 0, "fix the pod spec (see the message)");
            cause(fixes, &why, "the API server would refuse it");
        }
        ep->why = why ? why : "refused at admission";
        return;
    }
    if (d->outcome == GS_OUT_SCHEDULED) {
        ep->why = gs_arena_printf(&c->arena, "fits now on node %s: if it stays pending, check "
                                  "that its scheduler (%s) is running",
                                  c->snap->nodes.v[d->node].meta.name, p->obj->scheduler_name);
        return;
    }
    const gs_gpu_request *r = &p->gpu;
    char req[128];
    gs_gpu_request_describe(r, req, sizeof req);
    if (p->dra != UINT32_MAX && c->dra && d->outcome == GS_OUT_UNSCHEDULABLE)
        claim_fixes(c, pod, fixes, &why);
    if (p->has_gpu && r->nmodels && !any_node_has_model(c, r)) {
        gs_strbuf sb = GS_STRBUF_INIT;
        offered_models(c, &sb);
        snprintf(text, sizeof text, "no node has a GPU of model %s%s; offered: %s", r->models[0],
                 r->nmodels > 1 ? " (or the other listed models)" : "", gs_strbuf_cstr(&sb));
        gs_strbuf_free(&sb);
        add_fix(c, fixes, GS_FIX_MODEL, r->models[0], 0, text);
        cause(fixes, &why, gs_arena_printf(&c->arena, "no node of the wanted GPU model %s",
                                           r->models[0]));
    }
    if (p->has_gpu)
        family_fixes(c, r, fixes, &why);
    if (r->kind == GS_GPU_MIG) {
        gs_strbuf off = GS_STRBUF_INIT;
        if (!any_node_offers_profile(c, r->mig_profile, &off)) {
            snprintf(text, sizeof text,
                     "no node offers MIG profile %s; offered: %s (re-partition a GPU with "
                     "nvidia.com/mig.config or request an offered profile)",
                     r->mig_profile, gs_strbuf_cstr(&off));
            add_fix(c, fixes, GS_FIX_MIG_PROFILE, r->mig_profile, 0, text);
            cause(fixes, &why, gs_arena_printf(&c->arena, "MIG profile %s is not offered anywhere",
                                               r->mig_profile));
        }
        gs_strbuf_free(&off);
    }
    if (d->outcome == GS_OUT_UNSCHEDULABLE)
        non_gpu_fixes(c, pod, fixes, &why);
    uint32_t taint_blocked = 0;
    taint_fixes(c, pod, fixes, &why, &taint_blocked);
    /* affinity: every node fails on node affinity/selector */
    gs__reset_pod_cache(c);
    uint32_t aff_fail = 0;
    for (uint32_t node = 0; node < c->nnodes; node++) {
        gs__filter(c, pod, node, NULL);
        const gs_nstatus *st = &c->status[node];
        if (st->nreasons &&
            strcmp(gs_intern_str(&c->reasons, st->reasons[0]),
                   "node(s) didn't match Pod's node affinity/selector") == 0)
            aff_fail++;
    }
    if (c->nnodes && aff_fail == c->nnodes) {
        add_fix(c, fixes, GS_FIX_AFFINITY, NULL, 0,
                "no node matches the pod's nodeSelector/node affinity: relax it or label nodes");
        cause(fixes, &why, "no node matches its node selector/affinity");
    }
    /* capacity and fragmentation */
    cap_view cv;
    capacity(c, pod, &cv);
    int64_t need = r->kind == GS_GPU_WHOLE ? r->count
                   : r->kind == GS_GPU_MIG ? r->count
                                           : (int64_t)r->count * (r->milli ? r->milli : 1);
    if (cv.nodes_eligible && p->has_gpu) {
        if (cv.free_units >= need && cv.best_node_units < need) {
            if (r->kind == GS_GPU_SHARE)
                snprintf(text, sizeof text,
                         "fragmentation: %.2f GPUs free across %u eligible nodes, but no "
                         "device has room for %s",
                         (double)cv.free_units / 1000.0, cv.nodes_eligible, req);
            else
                snprintf(text, sizeof text,
                         "fragmentation: %lld %s free in the cluster, at most %lld on one node "
                         "(the pod needs %lld on one node): drain or defragment a node",
                         (long long)cv.free_units, r->kind == GS_GPU_MIG ? "instances" : "GPUs",
                         (long long)cv.best_node_units, (long long)need);
            add_fix(c, fixes, GS_FIX_FRAGMENTATION, NULL, need - cv.best_node_units, text);
            cause(fixes, &why, gs_arena_printf(&c->arena, "GPUs are fragmented: %lld free, at most %lld "
                                      "on one node",
                                      (long long)(r->kind == GS_GPU_SHARE ? cv.free_units / 1000
                                                                          : cv.free_units),
                                      (long long)(r->kind == GS_GPU_SHARE ? cv.best_node_units / 1000
                                                                          : cv.best_node_units)));
        } else if (cv.free_units < need && r->kind != GS_GPU_SHARE) {
            int64_t missing = need - cv.best_node_units;
            snprintf(text, sizeof text, "add capacity: %lld more %s on one eligible node",
                     (long long)missing, r->kind == GS_GPU_MIG ? "MIG instances" : "free GPUs");
            add_fix(c, fixes, GS_FIX_ADD_CAPACITY, NULL, missing, text);
            cause(fixes, &why, "not enough free GPUs on any eligible node");
        }
    }
    /* preemption dry run (explain runs without acting on it) */
    if (d->outcome == GS_OUT_UNSCHEDULABLE) {
        gs__reset_pod_cache(c);
        gs_gpu_assign a;
        bool any = false;
        for (uint32_t node = 0; node < c->nnodes; node++)
            any |= gs__filter(c, pod, node, &a);
        if (!any) {
            bool saved = p->never_preempt;
            p->never_preempt = 0;
            uint32_t *victims, nv;
            const char *pm;
            int32_t node = gs__preempt(c, pod, &victims, &nv, &pm);
            p->never_preempt = saved;
            if (node >= 0 && nv) {
                gs_strbuf sb = GS_STRBUF_INIT;
                for (uint32_t i = 0; i < nv && i < 8; i++) {
                    const gs_pod *v = c->pods[victims[i]].obj;
                    gs_strbuf_printf(&sb, "%s%s/%s", i ? (i + 1 == nv ? " and " : ", ") : "",
                                     v->meta.namespace_, v->meta.name);
                }
                if (nv > 8)
                    gs_strbuf_printf(&sb, " and %u more", nv - 8);
                snprintf(text, sizeof text, "preempt %s on node %s%s", gs_strbuf_cstr(&sb),
                         c->nodes[node].obj->meta.name,
                         saved ? " (the pod has preemptionPolicy: Never)" : "");
                gs_strbuf_free(&sb);
                add_fix(c, fixes, GS_FIX_PREEMPT, c->nodes[node].obj->meta.name, nv, text);
                cause(fixes, &why, p->has_gpu ? "GPUs are held by lower-priority pods"
                                              : "its devices are held by lower-priority pods");
            }
        }
    }
    if (!why) {
        if (cv.free_units < need && p->has_gpu)
            why = "not enough free GPUs";
        else
            why = "no node passes every filter";
    }
    ep->why = why;
}

/* Smallest change first: edit the pod, then quota/classes, then disrupt others, then
 * re-partition or add hardware. Stable (insertion sort; lists are short). */
static int fix_rank(gs_fix_kind k)
{
    switch (k) {
    case GS_FIX_TOLERATE_TAINT: return 0;
    case GS_FIX_RAISE_QUOTA:
    case GS_FIX_PRIORITY_CLASS: return 1;
    case GS_FIX_AFFINITY: return 2;
    case GS_FIX_PREEMPT: return 3;
    case GS_FIX_MOVE_NON_GPU_PODS: return 4;
    case GS_FIX_MIG_PROFILE:
    case GS_FIX_MODEL: return 5;
    case GS_FIX_FRAGMENTATION: return 6;
    case GS_FIX_ADD_CAPACITY: return 7;
    case GS_FIX_CLAIM: return 2;
    case GS_FIX_OTHER: break;
    }
    return 8;
}

static void sort_fixes(gs_fix *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        gs_fix x = v[i];
        size_t j = i;
        while (j > 0 && fix_rank(v[j - 1].kind) > fix_rank(x.kind)) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

const char *gs_node_pool(const gs_labels *labels, const char *model)
{
    static const char *const pool_labels[] = {
        "cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup", "karpenter.sh/nodepool",
        "kubernetes.azure.com/agentpool", "agentpool", NULL};
    for (const char *const *l = pool_labels; *l; l++) {
        const char *v = gs_labels_get(labels, *l);
        if (v)
            return v;
    }
    return model && model[0] ? model : "(unknown model)";
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

int gs_explain_run(gs_cluster *c, const char *const *taint_keys, const gs_explain **out,
                   gs_error *err)
{
    static const char *const dflt[] = {"nvidia.com/gpu", NULL};
    if (!taint_keys)
        taint_keys = dflt;
    size_t ntaint_keys = 0; /* taint_keys is NULL-terminated */
    while (taint_keys[ntaint_keys])
        ntaint_keys++;
    if (c->explained) {
        *out = &c->explain;
        return 0;
    }
    gs_explain *ex = &c->explain;
    memset(ex, 0, sizeof *ex);
    /* pending GPU pods: pods that were pending in the input (not bound) and request GPUs */
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->npods; i++) {
        const gs_cpod *p = &c->pods[i];
        if (p->decision == UINT32_MAX || !p->uses_gpu)
            continue;
        gs_outcome o = c->decisions.v[p->decision].outcome;
        if (o == GS_OUT_UNSCHEDULABLE || o == GS_OUT_REJECTED || o == GS_OUT_SCHEDULED)
            n++;
    }
    ex->pods = gs_arena_alloc(&c->arena, (n ? n : 1) * sizeof *ex->pods);
    if (!ex->pods)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory (explain)");
    for (uint32_t i = 0; i < c->npods; i++) {
        const gs_cpod *p = &c->pods[i];
        if (p->decision == UINT32_MAX || !p->uses_gpu)
            continue;
        gs_outcome o = c->decisions.v[p->decision].outcome;
        if (o != GS_OUT_UNSCHEDULABLE && o != GS_OUT_REJECTED && o != GS_OUT_SCHEDULED)
            continue;
        fix_vec fixes = {0};
        gs_explain_pod *ep = &ex->pods[ex->npods++];
        describe_pod(c, i, ep, &fixes);
        sort_fixes(fixes.v, fixes.n);
        if (fixes.n && fixes.v[0].cause)
            ep->why = fixes.v[0].cause;
        ep->fixes = fixes.n ? gs_arena_memdup(&c->arena, fixes.v, fixes.n * sizeof(gs_fix)) : NULL;
        ep->nfixes = (uint32_t)fixes.n;
        gs_vec_free(fixes);
    }
    /* hygiene */
    ex->hygiene = gs_arena_alloc(&c->arena, (c->nnodes ? c->nnodes : 1) * sizeof *ex->hygiene);
    if (!ex->hygiene)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory (explain)");
    for (uint32_t node = 0; node < c->nnodes; node++) {
        const gs_cnode *cn = &c->nodes[node];
        if (!cn->gpus.gpu_node)
            continue;
        ex->gpu_nodes++;
        const gs_taintset *ts = &c->taintsets[cn->taintset];
        bool tainted = false;
        for (uint32_t k = 0; k < ts->n && !tainted; k++)
            tainted = gs_taint_is_gpu(&ts->taints[k], taint_keys, ntaint_keys);
        bool down = cn->gpus.labels_only;
        bool invalid = cn->gpus.mig_invalid;
        if (tainted && !down && !invalid)
            continue;
        gs_hygiene_node *h = &ex->hygiene[ex->nhygiene++];
        memset(h, 0, sizeof *h); /* arena memory is not zeroed */
        h->node = cn->snap;
        h->untainted_gpu_node = !tainted;
        h->device_plugin_down = down;
        if (invalid)
            h->problem = gs_arena_printf(
                &c->arena,
                "GPU feature discovery reports %s: the MIG strategy is single but the GPUs do "
                "not all carry the same MIG layout, so the device plugin advertises no GPU; give "
                "every GPU one layout (nvidia.com/mig.config, e.g. all-1g.10gb) or run the device "
                "plugin and GFD with migStrategy mixed",
                cn->gpus.model && cn->gpus.model[0] ? cn->gpus.model : "a -MIG-INVALID product");
        if (!tainted) {
            uint32_t *list = gs_arena_alloc(&c->arena, (cn->pods.n ? cn->pods.n : 1) * sizeof *list);
            if (!list)
                return gs_fail(err, GS_ERR_NOMEM, "out of memory (explain)");
            for (size_t i = 0; i < cn->pods.n; i++)
                if (!c->pods[cn->pods.v[i]].uses_gpu)
                    list[h->nnon_gpu_pods++] = cn->pods.v[i];
            qsort(list, h->nnon_gpu_pods, sizeof *list, cmp_u32);
            h->non_gpu_pods = list;
        }
    }
    /* pools */
    ex->pools = gs_arena_alloc(&c->arena, (c->nnodes ? c->nnodes : 1) * sizeof *ex->pools);
    if (!ex->pools)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory (explain)");
    for (uint32_t node = 0; node < c->nnodes; node++) {
        const gs_cnode *cn = &c->nodes[node];
        if (!cn->gpus.gpu_node)
            continue;
        const char *pool = gs_node_pool(&cn->obj->meta.labels, cn->gpus.model);
        uint32_t k = 0;
        while (k < ex->npools && strcmp(ex->pools[k].pool, pool) != 0)
            k++;
        if (k == ex->npools) {
            memset(&ex->pools[k], 0, sizeof ex->pools[k]);
            ex->pools[k].pool = pool;
            ex->npools++;
        }
        gs_pool_usage *pu = &ex->pools[k];
        pu->nodes++;
        double alloc = 0;
        for (uint32_t d = 0; d < cn->gpus.ndevs; d++) {
            const gs_gpu_dev *dv = &cn->gpus.devs[d];
            if (dv->flags & GS_DEV_MIG_ENABLED)
                continue;
            if (dv->slots > 1 && (cn->gpus.sharing == GS_SHARING_TIME_SLICING ||
                                  cn->gpus.sharing == GS_SHARING_MPS))
                alloc += (double)dv->slots_used / dv->slots;
            else
                alloc += dv->milli_used / 1000.0;
        }
        for (uint32_t m = 0; m < cn->gpus.nmig; m++) {
            const gs_mig_inst *mi = &cn->gpus.mig[m];
            pu->mig_instances++;
            if (mi->used) {
                pu->mig_used++;
                alloc += gs_mig_profile_fraction(cn->gpus.mig_model,
                                                 &cn->gpus.mig_model->profiles[mi->profile]);
            }
        }
        pu->gpus += cn->gpus.ndevs;
        pu->gpus_allocated += alloc;
        ex->gpus_total += cn->gpus.ndevs;
        ex->gpus_allocated += alloc;
    }
    c->explained = true;
    *out = ex;
    return 0;
}
