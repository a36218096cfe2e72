/*
 * explain.c - why a pod's claims cannot be allocated, with the smallest fix
 * (include/gpusched/dra.h "explain").
 *
 * Per request (for firstAvailable, the last alternative: the one asking least, as drivers
 * write them), the devices of every node are counted against the class and the request's
 * selectors: how many match and how many of those are free. The first reason that holds,
 * in the order of the enum, is reported: a missing class, no device of the class, none
 * passing the selectors, more asked than any node has, too few free (naming the claims
 * that hold them), or, with enough free, the claim's constraints.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dra/dra_int.h"

static void fmtcpy(char *dst, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fmtcpy(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
}

static bool dev_free(const gs_dra *d, uint32_t dev)
{
    const ddev *dd = &d->devs.v[dev];
    if (d->f.consumable_capacity && dd->dev->allow_multiple)
        return dd->used == 0;
    return dd->used == 0 && dd->ncap_allocs == 0;
}

/* The claims holding device dev (allocated results naming it), "ns/a, ns/b" */
static void holders(const gs_dra *d, uint32_t dev, char *buf, size_t cap, uint32_t *n)
{
    for (size_t c = 0; c < d->claims.n; c++) {
        const dclaim *cl = &d->claims.v[c];
        if (!cl->allocated)
            continue;
        for (uint32_t i = 0; i < cl->nres; i++)
            if (d->res.v[cl->res_first + i].dev == dev && !d->res.v[cl->res_first + i].admin) {
                size_t l = strlen(buf);
                if (*n < 4 && l + 2 < cap)
                    snprintf(buf + l, cap - l, "%s%s/%s", l ? ", " : "", cl->ns, cl->name);
                (*n)++;
                break;
            }
    }
}

/* What devices of the class are published: "NVIDIA H100 80GB HBM3 x8, 1g.10gb x2" */
static void offered(gs_dra *d, const dreq *cls_only, char *buf, size_t cap)
{
    const char *names[6];
    uint32_t counts[6];
    uint32_t k = 0, more = 0;
    for (size_t dev = 0; dev < d->devs.n; dev++) {
        if (gs__dra_selectable(d, cls_only, (uint32_t)dev, NULL, 0) != 1)
            continue;
        const ddev *dd = &d->devs.v[dev];
        const char *nm = NULL;
        for (uint32_t i = 0; i < dd->dev->nattrs && !nm; i++)
            if (!strcmp(dd->dev->attrs[i].name, "profile") && dd->dev->attrs[i].s)
                nm = dd->dev->attrs[i].s;
        for (uint32_t i = 0; i < dd->dev->nattrs && !nm; i++)
            if (!strcmp(dd->dev->attrs[i].name, "productName") && dd->dev->attrs[i].s)
                nm = dd->dev->attrs[i].s;
        if (!nm)
            nm = dd->slice->driver;
        uint32_t j = 0;
        while (j < k && strcmp(names[j], nm))
            j++;
        if (j == k) {
            if (k == 6) {
                more++;
                continue;
            }
            names[k] = nm;
            counts[k++] = 0;
        }
        counts[j]++;
    }
    buf[0] = 0;
    for (uint32_t j = 0; j < k; j++) {
        size_t l = strlen(buf);
        snprintf(buf + l, cap - l, "%s%s x%u", j ? ", " : "", names[j], counts[j]);
    }
    if (more) {
        size_t l = strlen(buf);
        snprintf(buf + l, cap - l, ", ...");
    }
}

static void selector_text(const dreq *r, char *buf, size_t cap)
{
    if (!r->ex->nselectors) {
        snprintf(buf, cap, "class %s", r->ex->class_name);
        return;
    }
    snprintf(buf, cap, "class %s and selector `%.200s`%s", r->ex->class_name, r->ex->selectors[0].cel,
             r->ex->nselectors > 1 ? " (and more)" : "");
}

static uint32_t explain_request(gs_dra *d, const dclaim *cl, const dreq *r, gs_dra_why *w)
{
    memset(w, 0, sizeof *w);
    fmtcpy(w->claim, sizeof w->claim, "%s/%s", cl->ns, cl->name);
    fmtcpy(w->request, sizeof w->request, "%s", r->full);
    if (r->cls < 0) {
        w->kind = GS_DRA_WHY_NO_CLASS;
        fmtcpy(w->text, sizeof w->text, "request %s: device class %s does not exist", r->full, r->ex->class_name);
        fmtcpy(w->fix, sizeof w->fix, "create DeviceClass %s (its DRA driver installs it) or fix deviceClassName",
               r->ex->class_name);
        return 1;
    }
    dreq cls_only = *r;
    cls_only.nprog = 0;
    uint32_t want = r->ex->all ? 1 : (r->ex->count > 0 && r->ex->count < 100000 ? (uint32_t)r->ex->count : 100000);
    uint32_t class_total = 0, best_match = 0, best_free = 0, total_match = 0;
    int32_t best_node = -1, best_free_node = -1;
    char err[GS_ERR_MSG_MAX] = "";
    for (uint32_t n = 0; n < d->nnodes; n++) {
        const dnode *dn = &d->nodemap[n];
        uint32_t m = 0, f = 0;
        for (uint32_t i = 0; i < dn->ndevs; i++) {
            uint32_t dev = dn->devs[i];
            if (gs__dra_selectable(d, &cls_only, dev, NULL, 0) == 1)
                class_total++;
            int x = gs__dra_selectable(d, r, dev, err, sizeof err);
            if (x < 0) {
                w->kind = GS_DRA_WHY_ERROR;
                fmtcpy(w->text, sizeof w->text, "%s", err);
                fmtcpy(w->fix, sizeof w->fix, "fix the selector of request %s (CEL)", r->full);
                return 1;
            }
            if (x == 1) {
                m++;
                f += dev_free(d, dev);
            }
        }
        total_match += m;
        if (m > best_match) {
            best_match = m;
            best_node = (int32_t)n;
        }
        if (f > best_free) {
            best_free = f;
            best_free_node = (int32_t)n;
        }
    }
    char sel[400];
    selector_text(r, sel, sizeof sel);
    if (!class_total) {
        w->kind = GS_DRA_WHY_NO_DEVICES;
        fmtcpy(w->text, sizeof w->text, "no published device belongs to class %s on any node", r->ex->class_name);
        fmtcpy(w->fix, sizeof w->fix,
               "run the DRA driver that publishes %s devices on the GPU nodes (no ResourceSlice offers one), or use a class whose devices are published",
               r->ex->class_name);
        return 1;
    }
    if (!total_match) {
        char off[300];
        offered(d, &cls_only, off, sizeof off);
        w->kind = GS_DRA_WHY_NO_MATCH;
        fmtcpy(w->text, sizeof w->text, "no device matches %s on any node", sel);
        fmtcpy(w->fix, sizeof w->fix, "relax the selector of request %s: class %s offers %s", r->full,
               r->ex->class_name, off);
        return 1;
    }
    w->matching = best_match;
    w->free = best_free;
    if (!r->ex->all && want > best_match) {
        w->kind = GS_DRA_WHY_TOO_MANY;
        fmtcpy(w->text, sizeof w->text, "request %s asks %u devices; the most any node has that match is %u (node %s)",
               r->full, want, best_match, d->nodes[best_node]->meta.name);
        fmtcpy(w->fix, sizeof w->fix, "ask for at most %u devices in request %s, or split the claim across pods",
               best_match, r->full);
        return 1;
    }
    if (want > best_free) {
        /* the claims holding matching devices on the node with the most matches */
        const dnode *dn = &d->nodemap[best_node];
        char who[300] = "";
        uint32_t nwho = 0;
        for (uint32_t i = 0; i < dn->ndevs; i++) {
            uint32_t dev = dn->devs[i];
            if (gs__dra_selectable(d, r, dev, NULL, 0) == 1 && !dev_free(d, dev))
                holders(d, dev, who, sizeof who, &nwho);
        }
        w->kind = GS_DRA_WHY_ALLOCATED;
        fmtcpy(w->text, sizeof w->text,
               "all matching devices are allocated: request %s needs %u, node %s has %u matching, %u free (held by %s%s)",
               r->full, want, d->nodes[best_node]->meta.name, best_match,
               best_free_node == best_node ? best_free : 0, nwho ? who : "claims", nwho > 4 ? ", ..." : "");
        fmtcpy(w->fix, sizeof w->fix, "free %u matching device%s on one node: end or preempt the pods of %s",
               want - (best_free_node == best_node ? best_free : 0),
               want - (best_free_node == best_node ? best_free : 0) == 1 ? "" : "s", nwho ? who : "the claims holding them");
        return 1;
    }
    if (cl->obj->spec.nconstraints) {
        const gs_dra_constraint *k = &cl->obj->spec.constraints[0];
        const char *attr = k->match_attribute ? k->match_attribute : k->distinct_attribute;
        w->kind = GS_DRA_WHY_CONSTRAINT;
        fmtcpy(w->text, sizeof w->text, "%u free devices match request %s on node %s, but the claim's %s %s cannot be met by them",
               best_free, r->full, d->nodes[best_free_node]->meta.name,
               k->match_attribute ? "matchAttribute" : "distinctAttribute", attr ? attr : "");
        fmtcpy(w->fix, sizeof w->fix, "drop or relax the constraint on %s, or free devices that %s it", attr ? attr : "the attribute",
               k->match_attribute ? "share" : "differ in");
        return 1;
    }
    return 0;
}

uint32_t gs_dra_explain(gs_dra *d, const gs_dra_pod *pod, gs_dra_why *out, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < pod->n; k++) {
        dclaim *cl = &d->claims.v[pod->claim[k]];
        if (cl->allocated) {
            if (cl->node_only >= 0 || cl->sel) {
                gs_dra_why w;
                memset(&w, 0, sizeof w);
                w.kind = GS_DRA_WHY_PINNED;
                fmtcpy(w.claim, sizeof w.claim, "%s/%s", cl->ns, cl->name);
                const char *where = cl->node_only >= 0 ? d->nodes[cl->node_only]->meta.name : NULL;
                if (where)
                    fmtcpy(w.text, sizeof w.text, "claim %s is allocated on node %s: the pod can run only there", w.claim, where);
                else
                    fmtcpy(w.text, sizeof w.text, "claim %s is allocated: the pod can run only on the nodes its devices reach", w.claim);
                fmtcpy(w.fix, sizeof w.fix, "make room for the pod on %s, or give it its own claim", where ? where : "those nodes");
                if (n < cap)
                    out[n] = w;
                n++;
            }
            continue;
        }
        if (gs__dra_flatten(d, cl) < 0)
            continue;
        for (uint32_t q = 0; q < cl->nreqs; q++) {
            const dreq *r = &cl->reqs[q];
            if (r->nalts && r->alt + 1 != r->nalts)
                continue; /* alternatives: the last one speaks for the request */
            gs_dra_why w;
            if (!explain_request(d, cl, r, &w))
                continue;
            if (r->nalts) {
                char t[sizeof w.text];
                fmtcpy(t, sizeof t, "none of the %u alternatives of request %s can be met; the last: %s", r->nalts, r->base,
                       w.text);
                memcpy(w.text, t, sizeof t);
            }
            if (n < cap)
                out[n] = w;
            n++;
        }
    }
    return n;
}
