/*
 * read_dra.c - Dynamic Resource Allocation objects (resource.k8s.io) into the snapshot:
 * DeviceClass, ResourceClaim, ResourceClaimTemplate and ResourceSlice, from v1 and from
 * the v1beta2 and v1beta1 shapes still found in dumps, all into the v1 model of kube.h.
 *
 * Shapes. v1 and v1beta2 are the same where read here: a claim request is
 * {name, exactly: {...}} or {name, firstAvailable: [...]}, a slice's device carries its
 * attributes, capacity, counters, taints and node selection directly. v1beta1 puts the
 * fields of `exactly` on the request itself (firstAvailable beside them) and wraps a
 * device's fields in `basic: {...}`.
 *
 * Attributes and capacities are kept as the CEL environment sees them (gs_cel_attr,
 * gs_cel_capacity): a qualified name "domain/name" is split, an unqualified one belongs to
 * the slice's driver; both lists sorted by (domain, name), a name given twice (after
 * qualification) refused.
 *
 * Validation is the API server's where a wrong value would mislead the allocator: value
 * types (an attribute holds exactly one of int, bool, string, version; versions are
 * semver), quantities, counts and allocation modes, `exactly` XOR `firstAvailable`,
 * required names, the node selection of a slice, and the API's size limits (below).
 * Unknown fields are ignored, as everywhere in the reader.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/cel.h"
#include "kube/read_int.h"

/* Limits of resource.k8s.io/v1 (k8s.io/api/resource/v1/types.go). */
#define DRA_MAX_DEVICES 128                 /* ResourceSliceMaxDevices */
#define DRA_MAX_DEVICES_TAINTS_COUNTERS 64  /* ... when a device has taints or consumes counters */
#define DRA_MAX_ATTRS_AND_CAPS 32           /* ResourceSliceMaxAttributesAndCapacitiesPerDevice */
#define DRA_MAX_REQUESTS 32                 /* DeviceRequestsMaxSize */
#define DRA_MAX_SUBREQUESTS 8               /* FirstAvailableDeviceRequestMaxSize */
#define DRA_MAX_SELECTORS 32                /* DeviceSelectorsMaxSize */
#define DRA_MAX_CONSTRAINTS 32              /* DeviceConstraintsMaxSize */
#define DRA_MAX_CONFIG 32                   /* DeviceConfigMaxSize */
#define DRA_MAX_RESULTS 32                  /* AllocationResultsMaxSize */
#define DRA_MAX_RESERVED 256                /* ResourceClaimReservedForMaxSize */
#define DRA_MAX_TOLERATIONS 16              /* DeviceTolerationsMaxLength */
#define DRA_MAX_ID 32                       /* DeviceMaxIDLength: the name part of an attribute */
#define DRA_MAX_DOMAIN 63                   /* DeviceMaxDomainLength */
#define DRA_MAX_VALUE 64                    /* DeviceAttributeMaxValueLength (string, version) */
#define DRA_MAX_COUNTER_SETS 32             /* bound on sharedCounters / consumesCounters entries */
#define DRA_MAX_COUNTERS 32                 /* bound on counters in one set */

#define SHOWN (GS_YT_SHOWN + 8)

/* ---------------------------------------------------------------- small helpers */

/* Sequence field with at most max entries (GS_ERR_LIMIT naming the API's limit). */
static int seq_max(gs_rd *r, const gs_yn *m, const char *key, uint32_t max, const gs_yn **out)
{
    if (gs_rd_seq(r, m, key, out) < 0)
        return -1;
    if (*out && (*out)->len > max) {
        gs_rd_push(r, key);
        return gs_rd_fail(r, *out, GS_ERR_LIMIT, "%u entries, more than the %u the API allows", (*out)->len, max);
    }
    return 0;
}

/* Required non-empty string field. */
static int req_str(gs_rd *r, const gs_yn *m, const char *key, bool intern, const char *what, const char **out)
{
    if ((intern ? gs_rd_istr(r, m, key, "", out) : gs_rd_str(r, m, key, "", out)) < 0)
        return -1;
    if (!(*out)[0])
        return gs_rd_missing(r, gs_rd_get(m, key) ? gs_rd_get(m, key) : m, key, what);
    return 0;
}

/* A DNS label (request names, device names): lower-case alphanumerics and '-', at most
 * 63, starting and ending alphanumeric. */
static bool is_dns_label(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

static int label_name(gs_rd *r, const gs_yn *m, const char *key, const char *what, const char **out)
{
    if (req_str(r, m, key, false, what, out) < 0)
        return -1;
    if (!is_dns_label(*out)) {
        gs_rd_push(r, key);
        return gs_rd_fail(r, gs_rd_get(m, key), GS_ERR_INVALID,
                          "\"%.80s\" is not a DNS label (lower-case letters, digits and '-', at most 63)", *out);
    }
    return 0;
}

/* C identifier of at most DRA_MAX_ID bytes (the name part of an attribute or capacity). */
static bool is_dra_id(const char *s, size_t n)
{
    if (!n || n > DRA_MAX_ID || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_'))
            return false;
    return true;
}

/* Split key k (a map key node: attribute or capacity name) into domain and name; an
 * unqualified name belongs to `driver`. */
static int qualified_name(gs_rd *r, const gs_yn *k, const char *driver, const char **domain, const char **name)
{
    const char *t = k->u.text, *slash = memchr(t, '/', k->len);
    size_t dl = slash ? (size_t)(slash - t) : 0;
    const char *n = slash ? slash + 1 : t;
    size_t nl = slash ? k->len - dl - 1 : k->len;
    char dom[DRA_MAX_DOMAIN + 1];
    bool ok = is_dra_id(n, nl);
    if (ok && slash) {
        ok = dl > 0 && dl <= DRA_MAX_DOMAIN;
        if (ok) {
            memcpy(dom, t, dl);
            dom[dl] = '\0';
            ok = gs_is_dns1123_subdomain(dom);
        }
    }
    if (!ok) {
        char b[SHOWN];
        return gs_rd_fail(r, k, GS_ERR_INVALID,
                          "invalid name %s (a C identifier of at most %d characters, optionally after a DNS "
                          "domain and '/')",
                          gs_rd_describe(k, b, sizeof b), DRA_MAX_ID);
    }
    *domain = slash ? gs_rd_intern(r, t, dl) : driver;
    *name = gs_rd_intern(r, n, nl);
    if (!*domain || !*name)
        return gs_rd_nomem(r);
    return 0;
}

/* A fully qualified attribute name ("gpu.nvidia.com/productName"), for constraints. */
static int full_attr(gs_rd *r, const gs_yn *m, const char *key, const char **out)
{
    const gs_yn *v = gs_rd_get(m, key);
    *out = NULL;
    if (!v)
        return 0;
    size_t mark = gs_rd_push(r, key);
    if (gs_rd_text(r, v, true, out) < 0)
        return -1;
    const char *dom, *name;
    if (!strchr(*out, '/'))
        return gs_rd_fail(r, v, GS_ERR_INVALID, "\"%.80s\" is not fully qualified (expected \"domain/name\")", *out);
    if (qualified_name(r, v, "", &dom, &name) < 0)
        return -1;
    gs_rd_pop(r, mark);
    return 0;
}

/* ---------------------------------------------------------------- selectors, tolerations */

static int selectors(gs_rd *r, const gs_yn *m, gs_dra_selector **out, uint32_t *nout)
{
    const gs_yn *seq;
    *out = NULL;
    *nout = 0;
    if (seq_max(r, m, "selectors", DRA_MAX_SELECTORS, &seq) < 0)
        return -1;
    if (!seq || !seq->len)
        return 0;
    bool oom;
    gs_dra_selector *sel = gs_rd_array(r, seq->len, sizeof *sel, &oom);
    if (oom)
        return gs_rd_nomem(r);
    size_t mark = gs_rd_push(r, "selectors");
    uint32_t i = 0;
    for (const gs_yn *s = seq->u.first; s; s = s->next, i++) {
        size_t im = gs_rd_push_index(r, i);
        const gs_yn *cel;
        if (gs_rd_expect_map(r, s) < 0 || gs_rd_map(r, s, "cel", &cel) < 0)
            return -1;
        if (!cel)
            return gs_rd_missing(r, s, "cel", "a selector is {cel: {expression: ...}}");
        size_t cm = gs_rd_push(r, "cel");
        const gs_yn *e = gs_rd_get(cel, "expression");
        if (req_str(r, cel, "expression", false, "a CEL expression", &sel[i].cel) < 0)
            return -1;
        if (strlen(sel[i].cel) > GS_CEL_MAX_LEN) {
            gs_rd_push(r, "expression");
            return gs_rd_fail(r, e, GS_ERR_LIMIT, "expression of %zu bytes, longer than the %d the API allows",
                              strlen(sel[i].cel), GS_CEL_MAX_LEN);
        }
        sel[i].src.file = r->file;
        sel[i].src.line = r->no_positions ? 0 : e->line;
        sel[i].src.col = r->no_positions ? 0 : e->col;
        gs_rd_pop(r, cm);
        gs_rd_pop(r, im);
    }
    gs_rd_pop(r, mark);
    *out = sel;
    *nout = seq->len;
    return 0;
}

static int tolerations(gs_rd *r, const gs_yn *m, gs_dra_toleration **out, uint32_t *nout)
{
    const gs_yn *seq;
    *out = NULL;
    *nout = 0;
    if (seq_max(r, m, "tolerations", DRA_MAX_TOLERATIONS, &seq) < 0)
        return -1;
    if (!seq || !seq->len)
        return 0;
    bool oom;
    gs_dra_toleration *t = gs_rd_array(r, seq->len, sizeof *t, &oom);
    if (oom)
        return gs_rd_nomem(r);
    size_t mark = gs_rd_push(r, "tolerations");
    uint32_t i = 0;
    for (const gs_yn *n = seq->u.first; n; n = n->next, i++) {
        size_t im = gs_rd_push_index(r, i);
        if (gs_rd_expect_map(r, n) < 0 || gs_rd_istr(r, n, "key", "", &t[i].key) < 0 ||
            gs_rd_istr(r, n, "operator", "Equal", &t[i].op) < 0 || gs_rd_str(r, n, "value", "", &t[i].value) < 0 ||
            gs_rd_istr(r, n, "effect", "", &t[i].effect) < 0)
            return -1;
        if (!t[i].op[0])
            t[i].op = "Equal";
        if (strcmp(t[i].op, "Equal") != 0 && strcmp(t[i].op, "Exists") != 0) {
            gs_rd_push(r, "operator");
            return gs_rd_fail(r, gs_rd_get(n, "operator"), GS_ERR_INVALID,
                              "unknown operator \"%.60s\" (expected Equal, Exists)", t[i].op);
        }
        gs_rd_pop(r, im);
    }
    gs_rd_pop(r, mark);
    *out = t;
    *nout = seq->len;
    return 0;
}

static int capreq_cmp(const void *a, const void *b)
{
    return strcmp(((const gs_dra_capacity_req *)a)->name, ((const gs_dra_capacity_req *)b)->name);
}

/* {name: quantity} into a sorted list (capacity.requests, consumedCapacity). */
static int capacity_map(gs_rd *r, const gs_yn *parent, const char *key, gs_dra_capacity_req **out, uint32_t *nout)
{
    const gs_yn *m;
    *out = NULL;
    *nout = 0;
    if (gs_rd_map(r, parent, key, &m) < 0)
        return -1;
    if (!m || !m->len)
        return 0;
    bool oom;
    gs_dra_capacity_req *c = gs_rd_array(r, m->len, sizeof *c, &oom);
    if (oom)
        return gs_rd_nomem(r);
    size_t mark = gs_rd_push(r, key);
    uint32_t i = 0;
    for (const gs_yn *k = m->u.first; k; k = k->next->next, i++) {
        size_t km = gs_rd_push_key(r, k->u.text, k->len);
        if (gs_rd_text(r, k, true, &c[i].name) < 0 || gs_rd_quantity(r, k->next, &c[i].value) < 0)
            return -1;
        gs_rd_pop(r, km);
    }
    qsort(c, m->len, sizeof *c, capreq_cmp);
    gs_rd_pop(r, mark);
    *out = c;
    *nout = m->len;
    return 0;
}

/* ---------------------------------------------------------------- claims */

/* The fields of an ExactDeviceRequest (v1 `exactly`, a v1beta1 request itself) or of a
 * firstAvailable subrequest (sub: adminAccess not allowed). */
static int exact_fields(gs_rd *r, const gs_yn *m, bool sub, gs_dra_exact *e)
{
    if (req_str(r, m, "deviceClassName", true, "the DeviceClass the devices come from", &e->class_name) < 0 ||
        selectors(r, m, &e->selectors, &e->nselectors) < 0 || tolerations(r, m, &e->tolerations, &e->ntolerations) < 0)
        return -1;
    const gs_yn *mode = gs_rd_get(m, "allocationMode");
    if (mode && !gs_rd_text_is(mode, "ExactCount") && !gs_rd_text_is(mode, "All")) {
        char b[SHOWN];
        gs_rd_push(r, "allocationMode");
        return gs_rd_fail(r, mode, GS_ERR_INVALID, "unknown allocation mode %s (expected ExactCount, All)",
                          gs_rd_describe(mode, b, sizeof b));
    }
    e->all = mode && gs_rd_text_is(mode, "All");
    bool has_count;
    int64_t count = 1;
    if (gs_rd_int(r, m, "count", INT64_MIN, INT64_MAX, &has_count, &count) < 0)
        return -1;
    if (has_count && e->all) {
        gs_rd_push(r, "count");
        return gs_rd_fail(r, gs_rd_get(m, "count"), GS_ERR_INVALID,
                          "must not be specified when allocationMode is All");
    }
    if (has_count && count < 1) {
        gs_rd_push(r, "count");
        return gs_rd_fail(r, gs_rd_get(m, "count"), GS_ERR_INVALID, "must be greater than zero, got %lld",
                          (long long)count);
    }
    e->count = e->all ? 0 : count;
    if (gs_rd_get(m, "adminAccess")) {
        if (sub) {
            gs_rd_push(r, "adminAccess");
            return gs_rd_fail(r, gs_rd_get(m, "adminAccess"), GS_ERR_INVALID,
                              "not allowed in a firstAvailable subrequest");
        }
        e->has_admin_access = true;
        if (gs_rd_bool(r, m, "adminAccess", &e->admin_access) < 0)
            return -1;
    }
    const gs_yn *cap;
    if (gs_rd_map(r, m, "capacity", &cap) < 0)
        return -1;
    if (cap) {
        size_t mark = gs_rd_push(r, "capacity");
        if (capacity_map(r, cap, "requests", &e->capacity, &e->ncapacity) < 0)
            return -1;
        gs_rd_pop(r, mark);
    }
    return 0;
}

static bool has_exact_fields(const gs_yn *m)
{
    static const char *const keys[] = {"deviceClassName", "selectors", "allocationMode", "count",
                                       "adminAccess",     "tolerations", "capacity"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (gs_rd_get(m, keys[i]))
            return true;
    return false;
}

static int first_available(gs_rd *r, const gs_yn *fa, gs_dra_request *q)
{
    size_t mark = gs_rd_push(r, "firstAvailable");
    if (!fa->len)
        return gs_rd_fail(r, fa, GS_ERR_INVALID, "must have at least one subrequest");
    if (fa->len > DRA_MAX_SUBREQUESTS)
        return gs_rd_fail(r, fa, GS_ERR_LIMIT, "%u subrequests, more than the %d the API allows", fa->len,
                          DRA_MAX_SUBREQUESTS);
    bool oom;
    q->first_available = gs_rd_array(r, fa->len, sizeof *q->first_available, &oom);
    if (oom)
        return gs_rd_nomem(r);
    memset(q->first_available, 0, fa->len * sizeof *q->first_available);
    uint32_t i = 0;
    for (const gs_yn *s = fa->u.first; s; s = s->next, i++) {
        size_t im = gs_rd_push_index(r, i);
        gs_dra_exact *e = &q->first_available[i];
        if (gs_rd_expect_map(r, s) < 0 || label_name(r, s, "name", "a subrequest needs a name", &e->name) < 0 ||
            exact_fields(r, s, true, e) < 0)
            return -1;
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(q->first_available[j].name, e->name)) {
                gs_rd_push(r, "name");
                return gs_rd_fail(r, gs_rd_get(s, "name"), GS_ERR_INVALID, "duplicate subrequest name \"%s\"",
                                  e->name);
            }
        gs_rd_pop(r, im);
    }
    q->nfirst_available = fa->len;
    gs_rd_pop(r, mark);
    return 0;
}

static int request(gs_rd *r, const gs_yn *n, bool beta1, gs_dra_request *q)
{
    memset(q, 0, sizeof *q);
    if (gs_rd_expect_map(r, n) < 0 || label_name(r, n, "name", "a request needs a name", &q->name) < 0)
        return -1;
    const gs_yn *fa, *ex = NULL;
    if (gs_rd_seq(r, n, "firstAvailable", &fa) < 0)
        return -1;
    if (beta1) {
        if (fa && has_exact_fields(n))
            return gs_rd_fail(r, n, GS_ERR_INVALID,
                              "firstAvailable and deviceClassName (or the other fields of an exact request) "
                              "both given: exactly one is required");
        if (!fa)
            ex = n;
    } else {
        if (gs_rd_map(r, n, "exactly", &ex) < 0)
            return -1;
        if (ex && fa)
            return gs_rd_fail(r, n, GS_ERR_INVALID, "exactly and firstAvailable both given: exactly one is required");
    }
    if (!ex && !fa)
        return gs_rd_fail(r, n, GS_ERR_INVALID, beta1 ? "exactly one of deviceClassName and firstAvailable is required"
                                                      : "exactly one of exactly and firstAvailable is required");
    if (ex) {
        size_t mark = beta1 ? 0 : gs_rd_push(r, "exactly");
        q->has_exactly = true;
        q->exactly.name = q->name;
        if ((!beta1 && gs_rd_expect_map(r, ex) < 0) || exact_fields(r, ex, false, &q->exactly) < 0)
            return -1;
        if (!beta1)
            gs_rd_pop(r, mark);
        return 0;
    }
    return first_available(r, fa, q);
}

/* Whether `name` ("req" or "req/sub") names a request of the spec. */
static bool names_request(const gs_dra_claim_spec *sp, const char *name)
{
    const char *slash = strchr(name, '/');
    size_t rl = slash ? (size_t)(slash - name) : strlen(name);
    for (uint32_t i = 0; i < sp->nrequests; i++) {
        const gs_dra_request *q = &sp->requests[i];
        if (strlen(q->name) != rl || memcmp(q->name, name, rl) != 0)
            continue;
        if (!slash)
            return true;
        for (uint32_t j = 0; j < q->nfirst_available; j++)
            if (!strcmp(q->first_available[j].name, slash + 1))
                return true;
    }
    return false;
}

static int constraints(gs_rd *r, const gs_yn *dev, gs_dra_claim_spec *sp)
{
    const gs_yn *seq;
    if (seq_max(r, dev, "constraints", DRA_MAX_CONSTRAINTS, &seq) < 0)
        return -1;
    if (!seq || !seq->len)
        return 0;
    bool oom;
    sp->constraints = gs_rd_array(r, seq->len, sizeof *sp->constraints, &oom);
    if (oom)
        return gs_rd_nomem(r);
    size_t mark = gs_rd_push(r, "constraints");
    uint32_t i = 0;
    for (const gs_yn *c = seq->u.first; c; c = c->next, i++) {
        size_t im = gs_rd_push_index(r, i);
        gs_dra_constraint *k = &sp->constraints[i];
        memset(k, 0, sizeof *k);
        const gs_yn *reqs;
        if (gs_rd_expect_map(r, c) < 0 || seq_max(r, c, "requests", DRA_MAX_REQUESTS, &reqs) < 0 ||
            full_attr(r, c, "matchAttribute", &k->match_attribute) < 0 ||
            full_attr(r, c, "distinctAttribute", &k->distinct_attribute) < 0)
            return -1;
        if (!k->match_attribute == !k->distinct_attribute)
            return gs_rd_fail(r, c, GS_ERR_INVALID,
                              k->match_attribute ? "matchAttribute and distinctAttribute both given"
                                                 : "one of matchAttribute and distinctAttribute is required");
        if (reqs && reqs->len) {
            k->requests = gs_rd_array(r, reqs->len, sizeof *k->requests, &oom);
            if (oom)
                return gs_rd_nomem(r);
            size_t rm = gs_rd_push(r, "requests");
            uint32_t j = 0;
            for (const gs_yn *q = reqs->u.first; q; q = q->next, j++) {
                size_t jm = gs_rd_push_index(r, j);
                if (gs_rd_text(r, q, true, &k->requests[j]) < 0)
                    return -1;
                if (!names_request(sp, k->requests[j]))
                    return gs_rd_fail(r, q, GS_ERR_INVALID, "\"%.80s\" names no request of this claim",
                                      k->requests[j]);
                gs_rd_pop(r, jm);
            }
            gs_rd_pop(r, rm);
            k->nrequests = reqs->len;
        }
        gs_rd_pop(r, im);
    }
    gs_rd_pop(r, mark);
    sp->nconstraints = seq->len;
    return 0;
}

/* A ResourceClaimSpec (the path names it). */
static int claim_spec(gs_rd *r, const gs_yn *spec, bool beta1, gs_dra_claim_spec *sp)
{
    memset(sp, 0, sizeof *sp);
    const gs_yn *dev, *seq, *cfg;
    if (!spec)
        return 0;
    if (gs_rd_expect_map(r, spec) < 0 || gs_rd_map(r, spec, "devices", &dev) < 0)
        return -1;
    if (!dev)
        return 0;
    size_t mark = gs_rd_push(r, "devices");
    if (seq_max(r, dev, "requests", DRA_MAX_REQUESTS, &seq) < 0 ||
        seq_max(r, dev, "config", DRA_MAX_CONFIG, &cfg) < 0)
        return -1;
    sp->nconfig = cfg ? cfg->len : 0;
    if (seq && seq->len) {
        bool oom;
        sp->requests = gs_rd_array(r, seq->len, sizeof *sp->requests, &oom);
        if (oom)
            return gs_rd_nomem(r);
        size_t rm = gs_rd_push(r, "requests");
        uint32_t i = 0;
        for (const gs_yn *q = seq->u.first; q; q = q->next, i++) {
            size_t im = gs_rd_push_index(r, i);
            if (request(r, q, beta1, &sp->requests[i]) < 0)
                return -1;
            for (uint32_t j = 0; j < i; j++)
                if (!strcmp(sp->requests[j].name, sp->requests[i].name)) {
                    gs_rd_push(r, "name");
                    return gs_rd_fail(r, gs_rd_get(q, "name"), GS_ERR_INVALID, "duplicate request name \"%s\"",
                                      sp->requests[i].name);
                }
            gs_rd_pop(r, im);
        }
        gs_rd_pop(r, rm);
        sp->nrequests = seq->len;
    }
    if (constraints(r, dev, sp) < 0)
        return -1;
    gs_rd_pop(r, mark);
    return 0;
}

static int results(gs_rd *r, const gs_yn *devs, gs_resource_claim *c)
{
    const gs_yn *seq;
    if (seq_max(r, devs, "results", DRA_MAX_RESULTS, &seq) < 0)
        return -1;
    if (!seq || !seq->len)
        return 0;
    bool oom;
    c->results = gs_rd_array(r, seq->len, sizeof *c->results, &oom);
    if (oom)
        return gs_rd_nomem(r);
    size_t mark = gs_rd_push(r, "results");
    uint32_t i = 0;
    for (const gs_yn *n = seq->u.first; n; n = n->next, i++) {
        size_t im = gs_rd_push_index(r, i);
        gs_dra_result *x = &c->results[i];
        memset(x, 0, sizeof *x);
        if (gs_rd_expect_map(r, n) < 0 || req_str(r, n, "request", true, "the request it satisfies", &x->request) < 0 ||
            req_str(r, n, "driver", true, "the driver of the device", &x->driver) < 0 ||
            req_str(r, n, "pool", true, "the pool of the device", &x->pool) < 0 ||
            req_str(r, n, "device", false, "the device's name", &x->device) < 0 ||
            gs_rd_bool(r, n, "adminAccess", &x->admin_access) < 0 || gs_rd_str(r, n, "shareID", "", &x->share_id) < 0 ||
            capacity_map(r, n, "consumedCapacity", &x->consumed, &x->nconsumed) < 0)
            return -1;
        gs_rd_pop(r, im);
    }
    gs_rd_pop(r, mark);
    c->nresults = seq->len;
    return 0;
}

static int reserved_for(gs_rd *r, const gs_yn *status, gs_resource_claim *c)
{
    const gs_yn *seq;
    if (seq_max(r, status, "reservedFor", DRA_MAX_RESERVED, &seq) < 0)
        return -1;
    if (!seq || !seq->len)
        return 0;
    bool oom;
    c->reserved_for = gs_rd_array(r, seq->len, sizeof *c->reserved_for, &oom);
    if (oom)
        return gs_rd_nomem(r);
    size_t mark = gs_rd_push(r, "reservedFor");
    uint32_t i = 0;
    for (const gs_yn *n = seq->u.first; n; n = n->next, i++) {
        size_t im = gs_rd_push_index(r, i);
        gs_dra_consumer *x = &c->reserved_for[i];
        if (gs_rd_expect_map(r, n) < 0 || req_str(r, n, "resource", true, "the consumer's resource", &x->resource) < 0 ||
            req_str(r, n, "name", false, "the consumer's name", &x->name) < 0 ||
            req_str(r, n, "uid", false, "the consumer's uid", &x->uid) < 0)
            return -1;
        gs_rd_pop(r, im);
    }
    gs_rd_pop(r, mark);
    c->nreserved = seq->len;
    return 0;
}

static int claim_status(gs_rd *r, const gs_yn *status, gs_resource_claim *c)
{
    const gs_yn *alloc;
    if (gs_rd_map(r, status, "allocation", &alloc) < 0)
        return -1;
    if (alloc) {
        c->allocated = true;
        size_t am = gs_rd_push(r, "allocation");
        const gs_yn *devs;
        if (gs_rd_map(r, alloc, "devices", &devs) < 0)
            return -1;
        if (devs) {
            size_t dm = gs_rd_push(r, "devices");
            if (results(r, devs, c) < 0)
                return -1;
            gs_rd_pop(r, dm);
        }
        if (gs_rd_node_selector(r, alloc, "nodeSelector", &c->alloc_node_selector) < 0)
            return -1;
        gs_rd_pop(r, am);
    }
    return reserved_for(r, status, c);
}

/* ---------------------------------------------------------------- slices */

static int attr_cmp(const void *a, const void *b)
{
    const gs_cel_attr *x = a, *y = b;
    int c = strcmp(x->domain, y->domain);
    return c ? c : strcmp(x->name, y->name);
}

/* caps and their policies sort together */
typedef struct cap_pair {
    gs_cel_capacity cap;
    gs_dra_cap_policy pol;
} cap_pair;

static int cap_cmp(const void *a, const void *b)
{
    const cap_pair *x = a, *y = b;
    int c = strcmp(x->cap.domain, y->cap.domain);
    return c ? c : strcmp(x->cap.name, y->cap.name);
}

/* The later key of mapping m that names (domain, name) once qualified with driver (the
 * position of a "given twice" error). */
static const gs_yn *key_at(const gs_yn *m, const char *domain, const char *name, const char *driver)
{
    const gs_yn *found = m;
    int seen = 0;
    for (const gs_yn *k = m->u.first; k && seen < 2; k = k->next->next) {
        const char *slash = memchr(k->u.text, '/', k->len);
        const char *d = slash ? k->u.text : driver;
        size_t dl = slash ? (size_t)(slash - k->u.text) : strlen(driver);
        const char *n = slash ? slash + 1 : k->u.text;
        size_t nl = slash ? k->len - dl - 1 : k->len;
        if (dl == strlen(domain) && !memcmp(d, domain, dl) && nl == strlen(name) && !memcmp(n, name, nl)) {
            found = k;
            seen++;
        }
    }
    return found;
}

static int attributes(gs_rd *r, const gs_yn *m, const char *driver, gs_dra_device *d)
{
    const gs_yn *map;
    if (gs_rd_map(r, m, "attributes", &map) < 0)
        return -1;
    if (!map || !map->len)
        return 0;
    bool oom;
    gs_cel_attr *a = gs_rd_array(r, map->len, sizeof *a, &oom);
    if (oom)
        return gs_rd_nomem(r);
    size_t mark = gs_rd_push(r, "attributes");
    uint32_t i = 0;
    for (const gs_yn *k = map->u.first; k; k = k->next->next, i++) {
        const gs_yn *v = k->next;
        size_t km = gs_rd_push_key(r, k->u.text, k->len);
        memset(&a[i], 0, sizeof a[i]);
        if (qualified_name(r, k, driver, &a[i].domain, &a[i].name) < 0 || gs_rd_expect_map(r, v) < 0)
            return -1;
        static const char *const types[] = {"int", "bool", "string", "version"};
        const gs_yn *tv = NULL;
        int which = -1;
        for (const gs_yn *tk = v->u.first; tk; tk = tk->next->next) {
            int t = 0;
            while (t < 4 && !gs_rd_text_is(tk, types[t]))
                t++;
            if (t == 4 || (tk->next->type == GS_YN_SCALAR && tk->next->null))
                continue;
            if (tv) {
                gs_rd_push(r, types[t]);
                return gs_rd_fail(r, tk->next, GS_ERR_INVALID,
                                  "an attribute holds exactly one of int, bool, string and version; "
                                  "%s and %s both given",
                                  types[which], types[t]);
            }
            tv = tk->next;
            which = t;
        }
        if (!tv)
            return gs_rd_fail(r, v, GS_ERR_INVALID, "exactly one of int, bool, string and version is required");
        if (which == 0) {
            a[i].kind = GS_CEL_ATTR_INT;
            if (gs_rd_int(r, v, "int", INT64_MIN, INT64_MAX, NULL, &a[i].i) < 0)
                return -1;
        } else if (which == 1) {
            a[i].kind = GS_CEL_ATTR_BOOL;
            if (gs_rd_bool(r, v, "bool", &a[i].b) < 0)
                return -1;
        } else {
            size_t tm = gs_rd_push(r, types[which]);
            a[i].kind = which == 2 ? GS_CEL_ATTR_STRING : GS_CEL_ATTR_VERSION;
            if (gs_rd_text(r, tv, which == 3, &a[i].s) < 0)
                return -1;
            size_t len = strlen(a[i].s);
            if (len > DRA_MAX_VALUE)
                return gs_rd_fail(r, tv, GS_ERR_LIMIT, "%zu bytes, longer than the %d the API allows", len,
                                  DRA_MAX_VALUE);
            if (which == 3 && !gs_cel_semver_valid(a[i].s, len))
                return gs_rd_fail(r, tv, GS_ERR_INVALID,
                                  "\"%.64s\" is not a semantic version (semver 2.0: MAJOR.MINOR.PATCH[-pre][+build])",
                                  a[i].s);
            gs_rd_pop(r, tm);
        }
        gs_rd_pop(r, km);
    }
    qsort(a, map->len, sizeof *a, attr_cmp);
    for (i = 1; i < map->len; i++)
        if (!attr_cmp(&a[i - 1], &a[i])) {
            gs_rd_push(r, "attributes");
            return gs_rd_fail(r, key_at(map, a[i].domain, a[i].name, driver), GS_ERR_INVALID,
                              "attribute %s/%s given twice", a[i].domain, a[i].name);
        }
    gs_rd_pop(r, mark);
    d->attrs = a;
    d->nattrs = map->len;
    return 0;
}

static int opt_quantity(gs_rd *r, const gs_yn *m, const char *key, bool *has, gs_quantity *q)
{
    const gs_yn *v = gs_rd_get(m, key);
    *has = v != NULL;
    if (!v)
        return 0;
    size_t mark = gs_rd_push(r, key);
    if (gs_rd_quantity(r, v, q) < 0)
        return -1;
    gs_rd_pop(r, mark);
    return 0;
}

static int request_policy(gs_rd *r, const gs_yn *pm, gs_dra_cap_policy *p)
{
    p->present = true;
    const gs_yn *vv, *rng;
    if (gs_rd_expect_map(r, pm) < 0 || opt_quantity(r, pm, "default", &p->has_default, &p->default_) < 0 ||
        gs_rd_seq(r, pm, "validValues", &vv) < 0 || gs_rd_map(r, pm, "validRange", &rng) < 0)
        return -1;
    if (vv && rng)
        return gs_rd_fail(r, pm, GS_ERR_INVALID, "validValues and validRange both given: at most one is allowed");
    if (vv && vv->len) {
        bool oom;
        p->valid_values = gs_rd_array(r, vv->len, sizeof *p->valid_values, &oom);
        if (oom)
            return gs_rd_nomem(r);
        size_t mark = gs_rd_push(r, "validValues");
        uint32_t i = 0;
        for (const gs_yn *v = vv->u.first; v; v = v->next, i++) {
            size_t im = gs_rd_push_index(r, i);
            if (gs_rd_quantity(r, v, &p->valid_values[i]) < 0)
                return -1;
            if (i && gs_quantity_cmp(&p->valid_values[i - 1], &p->valid_values[i]) >= 0)
                return gs_rd_fail(r, v, GS_ERR_INVALID, "validValues must be sorted ascending without duplicates");
            gs_rd_pop(r, im);
        }
        gs_rd_pop(r, mark);
        p->nvalid_values = vv->len;
    }
    if (rng) {
        size_t mark = gs_rd_push(r, "validRange");
        bool has_min;
        if (opt_quantity(r, rng, "min", &has_min, &p->min) < 0 ||
            opt_quantity(r, rng, "max", &p->has_max, &p->max) < 0 ||
            opt_quantity(r, rng, "step", &p->has_step, &p->step) < 0)
            return -1;
        if (!has_min)
            return gs_rd_missing(r, rng, "min", "the smallest value of the range");
        if (p->has_max && gs_quantity_cmp(&p->max, &p->min) < 0) {
            gs_rd_push(r, "max");
            return gs_rd_fail(r, gs_rd_get(rng, "max"), GS_ERR_INVALID, "smaller than min");
        }
        p->has_range = true;
        gs_rd_pop(r, mark);
    }
    return 0;
}

static int capacities(gs_rd *r, const gs_yn *m, const char *driver, gs_dra_device *d)
{
    const gs_yn *map;
    if (gs_rd_map(r, m, "capacity", &map) < 0)
        return -1;
    if (!map || !map->len)
        return 0;
    cap_pair *pairs = calloc(map->len, sizeof *pairs);
    bool oom, any_policy = false;
    if (!pairs)
        return gs_rd_nomem(r);
    int rc = -1;
    size_t mark = gs_rd_push(r, "capacity");
    uint32_t i = 0;
    for (const gs_yn *k = map->u.first; k; k = k->next->next, i++) {
        const gs_yn *v = k->next, *pm;
        size_t km = gs_rd_push_key(r, k->u.text, k->len);
        if (qualified_name(r, k, driver, &pairs[i].cap.domain, &pairs[i].cap.name) < 0 || gs_rd_expect_map(r, v) < 0)
            goto out;
        const gs_yn *val = gs_rd_get(v, "value");
        if (!val) {
            gs_rd_missing(r, v, "value", "the capacity's quantity");
            goto out;
        }
        size_t vm = gs_rd_push(r, "value");
        if (gs_rd_quantity(r, val, &pairs[i].cap.value) < 0)
            goto out;
        gs_rd_pop(r, vm);
        if (gs_rd_map(r, v, "requestPolicy", &pm) < 0)
            goto out;
        if (pm) {
            size_t pmk = gs_rd_push(r, "requestPolicy");
            if (request_policy(r, pm, &pairs[i].pol) < 0)
                goto out;
            gs_rd_pop(r, pmk);
            any_policy = true;
        }
        gs_rd_pop(r, km);
    }
    qsort(pairs, map->len, sizeof *pairs, cap_cmp);
    for (i = 1; i < map->len; i++)
        if (!cap_cmp(&pairs[i - 1], &pairs[i])) {
            gs_rd_fail(r, key_at(map, pairs[i].cap.domain, pairs[i].cap.name, driver), GS_ERR_INVALID,
                       "capacity %s/%s given twice", pairs[i].cap.domain, pairs[i].cap.name);
            goto out;
        }
    d->caps = gs_rd_array(r, map->len, sizeof *d->caps, &oom);
    if (oom || (any_policy && !(d->cap_policies = gs_rd_array(r, map->len, sizeof *d->cap_policies, &oom)))) {
        gs_rd_nomem(r);
        goto out;
    }
    for (i = 0; i < map->len; i++) {
        d->caps[i] = pairs[i].cap;
        if (any_policy)
            d->cap_policies[i] = pairs[i].pol;
    }
    d->ncaps = map->len;
    gs_rd_pop(r, mark);
    rc = 0;
out:
    free(pairs);
    return rc;
}

static int counter_cmp(const void *a, const void *b)
{
    return strcmp(((const gs_dra_counter *)a)->name, ((const gs_dra_counter *)b)->name);
}

/* [{<name_key>, counters: {name: {value: qty}}}] */
static int counter_sets(gs_rd *r, const gs_yn *m, const char *key, const char *name_key, gs_dra_counter_set **out,
                        uint32_t *nout)
{
    const gs_yn *seq;
    *out = NULL;
    *nout = 0;
    if (seq_max(r, m, key, DRA_MAX_COUNTER_SETS, &seq) < 0)
        return -1;
    if (!seq || !seq->len)
        return 0;
    bool oom;
    gs_dra_counter_set *cs = gs_rd_array(r, seq->len, sizeof *cs, &oom);
    if (oom)
        return gs_rd_nomem(r);
    size_t mark = gs_rd_push(r, key);
    uint32_t i = 0;
    for (const gs_yn *n = seq->u.first; n; n = n->next, i++) {
        size_t im = gs_rd_push_index(r, i);
        const gs_yn *cm;
        memset(&cs[i], 0, sizeof cs[i]);
        if (gs_rd_expect_map(r, n) < 0 || req_str(r, n, name_key, true, "the counter set's name", &cs[i].name) < 0 ||
            gs_rd_map(r, n, "counters", &cm) < 0)
            return -1;
        for (uint32_t j = 0; j < i && !strcmp(key, "sharedCounters"); j++)
            if (!strcmp(cs[j].name, cs[i].name)) {
                gs_rd_push(r, name_key);
                return gs_rd_fail(r, gs_rd_get(n, name_key), GS_ERR_INVALID, "duplicate counter set \"%s\"",
                                  cs[i].name);
            }
        if (!cm || !cm->len)
            return gs_rd_missing(r, cm ? cm : n, "counters", "at least one counter");
        size_t ck = gs_rd_push(r, "counters");
        if (cm->len > DRA_MAX_COUNTERS)
            return gs_rd_fail(r, cm, GS_ERR_LIMIT, "%u counters, more than the %d the API allows", cm->len,
                              DRA_MAX_COUNTERS);
        cs[i].counters = gs_rd_array(r, cm->len, sizeof *cs[i].counters, &oom);
        if (oom)
            return gs_rd_nomem(r);
        uint32_t j = 0;
        for (const gs_yn *k = cm->u.first; k; k = k->next->next, j++) {
            size_t km = gs_rd_push_key(r, k->u.text, k->len);
            const gs_yn *v = k->next, *val;
            if (gs_rd_text(r, k, true, &cs[i].counters[j].name) < 0 || gs_rd_expect_map(r, v) < 0)
                return -1;
            if (!(val = gs_rd_get(v, "value")))
                return gs_rd_missing(r, v, "value", "the counter's quantity");
            size_t vm = gs_rd_push(r, "value");
            if (gs_rd_quantity(r, val, &cs[i].counters[j].value) < 0)
                return -1;
            gs_rd_pop(r, vm);
            gs_rd_pop(r, km);
        }
        qsort(cs[i].counters, cm->len, sizeof *cs[i].counters, counter_cmp);
        cs[i].ncounters = cm->len;
        gs_rd_pop(r, ck);
        gs_rd_pop(r, im);
    }
    gs_rd_pop(r, mark);
    *out = cs;
    *nout = seq->len;
    return 0;
}

static int device_taints(gs_rd *r, const gs_yn *m, gs_dra_device *d)
{
    const gs_yn *seq;
    if (seq_max(r, m, "taints", DRA_MAX_TOLERATIONS, &seq) < 0)
        return -1;
    if (!seq || !seq->len)
        return 0;
    bool oom;
    d->taints = gs_rd_array(r, seq->len, sizeof *d->taints, &oom);
    if (oom)
        return gs_rd_nomem(r);
    size_t mark = gs_rd_push(r, "taints");
    uint32_t i = 0;
    for (const gs_yn *n = seq->u.first; n; n = n->next, i++) {
        size_t im = gs_rd_push_index(r, i);
        gs_dra_taint *t = &d->taints[i];
        if (gs_rd_expect_map(r, n) < 0 || req_str(r, n, "key", true, "a taint needs a key", &t->key) < 0 ||
            gs_rd_str(r, n, "value", "", &t->value) < 0 ||
            req_str(r, n, "effect", true, "NoSchedule, NoExecute or None", &t->effect) < 0)
            return -1;
        gs_rd_pop(r, im);
    }
    gs_rd_pop(r, mark);
    d->ntaints = seq->len;
    return 0;
}

/* Node selection (nodeName, nodeSelector, allNodes) of m into the three outputs; how
 * many were given. */
static int node_selection(gs_rd *r, const gs_yn *m, const char **node_name, const gs_node_selector **sel,
                          bool *all, int *given)
{
    if (gs_rd_istr(r, m, "nodeName", "", node_name) < 0 || gs_rd_node_selector(r, m, "nodeSelector", sel) < 0 ||
        gs_rd_bool(r, m, "allNodes", all) < 0)
        return -1;
    *given = ((*node_name)[0] != 0) + (*sel != NULL) + (*all ? 1 : 0);
    if (*sel && (*sel)->nterms != 1) {
        gs_rd_push(r, "nodeSelector.nodeSelectorTerms");
        return gs_rd_fail(r, gs_rd_get(m, "nodeSelector"), GS_ERR_INVALID, "must have exactly one term, got %u",
                          (*sel)->nterms);
    }
    return 0;
}

static int device(gs_rd *r, const gs_yn *n, bool beta1, const gs_resource_slice *sl, gs_dra_device *d)
{
    memset(d, 0, sizeof *d);
    d->node_name = "";
    if (gs_rd_expect_map(r, n) < 0 || label_name(r, n, "name", "a device needs a name", &d->name) < 0)
        return -1;
    const gs_yn *b = n;
    size_t mark = 0;
    if (beta1) {
        if (gs_rd_map(r, n, "basic", &b) < 0)
            return -1;
        if (!b)
            return 0;
        mark = gs_rd_push(r, "basic");
    }
    int given = 0;
    if (attributes(r, b, sl->driver, d) < 0 || capacities(r, b, sl->driver, d) < 0 ||
        counter_sets(r, b, "consumesCounters", "counterSet", &d->consumes, &d->nconsumes) < 0 ||
        device_taints(r, b, d) < 0 || gs_rd_bool(r, b, "allowMultipleAllocations", &d->allow_multiple) < 0 ||
        gs_rd_bool(r, b, "bindsToNode", &d->binds_to_node) < 0 ||
        node_selection(r, b, &d->node_name, &d->node_selector, &d->all_nodes, &given) < 0)
        return -1;
    const gs_yn *bc;
    if (gs_rd_seq(r, b, "bindingConditions", &bc) < 0)
        return -1;
    d->binding_conditions = bc && bc->len;
    if (d->nattrs + d->ncaps > DRA_MAX_ATTRS_AND_CAPS)
        return gs_rd_fail(r, b, GS_ERR_LIMIT,
                          "%u attributes and capacities, more than the %d the API allows for one device",
                          d->nattrs + d->ncaps, DRA_MAX_ATTRS_AND_CAPS);
    if (sl->per_device_node_selection && given != 1)
        return gs_rd_fail(r, b, GS_ERR_INVALID,
                          "the slice sets perDeviceNodeSelection: exactly one of nodeName, nodeSelector and "
                          "allNodes is required on each device (%d given)",
                          given);
    if (!sl->per_device_node_selection && given)
        return gs_rd_fail(r, b, GS_ERR_INVALID,
                          "nodeName, nodeSelector and allNodes on a device need perDeviceNodeSelection on the slice");
    if (beta1)
        gs_rd_pop(r, mark);
    return 0;
}

/* ---------------------------------------------------------------- objects */

static bool is_beta1(const gs_yn *obj)
{
    const gs_yn *av = gs_rd_get(obj, "apiVersion");
    return av && gs_rd_text_is(av, "resource.k8s.io/v1beta1");
}

static int store_index(gs_rd *r, const gs_yn *obj, gs_meta *m)
{
    if (gs_rd_reserve_objects(r, obj, 1) < 0)
        return -1;
    m->input_index = r->s->next_index++;
    return 0;
}

static int decode_class(gs_rd *r, const gs_yn *obj)
{
    gs_device_class c;
    memset(&c, 0, sizeof c);
    c.extended_resource_name = "";
    gs_rd_set_object(r, "DeviceClass", obj, false);
    const gs_yn *spec, *cfg;
    if (gs_rd_meta(r, obj, false, &c.meta) < 0 || gs_rd_note_object(r, "DeviceClass", &c.meta) < 0 ||
        gs_rd_map(r, obj, "spec", &spec) < 0)
        return -1;
    if (spec) {
        size_t mark = gs_rd_push(r, "spec");
        if (selectors(r, spec, &c.selectors, &c.nselectors) < 0 ||
            gs_rd_istr(r, spec, "extendedResourceName", "", &c.extended_resource_name) < 0 ||
            seq_max(r, spec, "config", DRA_MAX_CONFIG, &cfg) < 0)
            return -1;
        c.nconfig = cfg ? cfg->len : 0;
        gs_rd_pop(r, mark);
    }
    if (store_index(r, obj, &c.meta) < 0)
        return -1;
    if (gs_vec_push(r->s->device_classes, c) < 0)
        return gs_rd_nomem(r);
    return 0;
}

static int decode_claim(gs_rd *r, const gs_yn *obj, bool tmpl)
{
    const char *kind = tmpl ? "ResourceClaimTemplate" : "ResourceClaim";
    bool beta1 = is_beta1(obj);
    gs_resource_claim c;
    memset(&c, 0, sizeof c);
    c.is_template = tmpl;
    gs_rd_set_object(r, kind, obj, true);
    const gs_yn *spec, *status;
    if (gs_rd_meta(r, obj, true, &c.meta) < 0 || gs_rd_note_object(r, kind, &c.meta) < 0 ||
        gs_rd_map(r, obj, "spec", &spec) < 0)
        return -1;
    if (spec) {
        size_t mark = gs_rd_push(r, "spec");
        if (tmpl) {
            const gs_yn *inner;
            if (gs_rd_map(r, spec, "spec", &inner) < 0)
                return -1;
            if (!inner)
                return gs_rd_missing(r, spec, "spec", "the spec of the claims made from the template");
            gs_rd_push(r, "spec");
            spec = inner;
        }
        if (claim_spec(r, spec, beta1, &c.spec) < 0)
            return -1;
        gs_rd_pop(r, mark);
    }
    if (!tmpl) {
        if (gs_rd_map(r, obj, "status", &status) < 0)
            return -1;
        if (status) {
            size_t mark = gs_rd_push(r, "status");
            if (claim_status(r, status, &c) < 0)
                return -1;
            gs_rd_pop(r, mark);
        }
    }
    if (store_index(r, obj, &c.meta) < 0)
        return -1;
    if ((tmpl ? gs_vec_push(r->s->claim_templates, c) : gs_vec_push(r->s->claims, c)) < 0)
        return gs_rd_nomem(r);
    return 0;
}

static int decode_slice(gs_rd *r, const gs_yn *obj)
{
    bool beta1 = is_beta1(obj);
    gs_resource_slice sl;
    memset(&sl, 0, sizeof sl);
    gs_rd_set_object(r, "ResourceSlice", obj, false);
    const gs_yn *spec, *pool, *devs;
    if (gs_rd_meta(r, obj, false, &sl.meta) < 0 || gs_rd_note_object(r, "ResourceSlice", &sl.meta) < 0 ||
        gs_rd_map(r, obj, "spec", &spec) < 0)
        return -1;
    if (!spec)
        return gs_rd_missing(r, obj, "spec", "a ResourceSlice needs its driver, pool and devices");
    size_t mark = gs_rd_push(r, "spec");
    int given = 0;
    if (req_str(r, spec, "driver", true, "the DRA driver's name", &sl.driver) < 0 || gs_rd_map(r, spec, "pool", &pool) < 0)
        return -1;
    if (!gs_is_dns1123_subdomain(sl.driver)) {
        gs_rd_push(r, "driver");
        return gs_rd_fail(r, gs_rd_get(spec, "driver"), GS_ERR_INVALID, "\"%.80s\" is not a DNS subdomain", sl.driver);
    }
    if (!pool)
        return gs_rd_missing(r, spec, "pool", "the pool's name, generation and resourceSliceCount");
    size_t pm = gs_rd_push(r, "pool");
    if (req_str(r, pool, "name", true, "the pool's name", &sl.pool) < 0 ||
        gs_rd_int(r, pool, "generation", 0, INT64_MAX, NULL, &sl.generation) < 0 ||
        gs_rd_int(r, pool, "resourceSliceCount", 1, INT64_MAX, NULL, &sl.slice_count) < 0)
        return -1;
    if (!gs_rd_get(pool, "resourceSliceCount"))
        return gs_rd_missing(r, pool, "resourceSliceCount", "the number of slices in the pool, at least 1");
    gs_rd_pop(r, pm);
    if (node_selection(r, spec, &sl.node_name, &sl.node_selector, &sl.all_nodes, &given) < 0 ||
        gs_rd_bool(r, spec, "perDeviceNodeSelection", &sl.per_device_node_selection) < 0)
        return -1;
    given += sl.per_device_node_selection;
    if (given != 1)
        return gs_rd_fail(r, spec, GS_ERR_INVALID,
                          "exactly one of nodeName, nodeSelector, allNodes and perDeviceNodeSelection is required "
                          "(%d given)",
                          given);
    if (counter_sets(r, spec, "sharedCounters", "name", &sl.shared_counters, &sl.nshared_counters) < 0 ||
        gs_rd_seq(r, spec, "devices", &devs) < 0)
        return -1;
    if (devs && devs->len) {
        size_t dm = gs_rd_push(r, "devices");
        if (devs->len > DRA_MAX_DEVICES)
            return gs_rd_fail(r, devs, GS_ERR_LIMIT, "%u devices, more than the %d the API allows in one slice",
                              devs->len, DRA_MAX_DEVICES);
        bool oom, taints_or_counters = false;
        sl.devices = gs_rd_array(r, devs->len, sizeof *sl.devices, &oom);
        if (oom)
            return gs_rd_nomem(r);
        uint32_t i = 0;
        for (const gs_yn *n = devs->u.first; n; n = n->next, i++) {
            size_t im = gs_rd_push_index(r, i);
            if (device(r, n, beta1, &sl, &sl.devices[i]) < 0)
                return -1;
            for (uint32_t j = 0; j < i; j++)
                if (!strcmp(sl.devices[j].name, sl.devices[i].name)) {
                    gs_rd_push(r, "name");
                    return gs_rd_fail(r, gs_rd_get(n, "name"), GS_ERR_INVALID, "duplicate device name \"%s\"",
                                      sl.devices[i].name);
                }
            taints_or_counters |= sl.devices[i].ntaints || sl.devices[i].nconsumes;
            gs_rd_pop(r, im);
        }
        if (taints_or_counters && devs->len > DRA_MAX_DEVICES_TAINTS_COUNTERS)
            return gs_rd_fail(r, devs, GS_ERR_LIMIT,
                              "%u devices, more than the %d the API allows in one slice when a device has taints or "
                              "consumes counters",
                              devs->len, DRA_MAX_DEVICES_TAINTS_COUNTERS);
        sl.ndevices = devs->len;
        gs_rd_pop(r, dm);
    }
    gs_rd_pop(r, mark);
    if (store_index(r, obj, &sl.meta) < 0)
        return -1;
    if (gs_vec_push(r->s->resource_slices, sl) < 0)
        return gs_rd_nomem(r);
    return 0;
}

int gs_rd_dra(gs_rd *r, const gs_yn *obj, gs_rd_dra_kind which)
{
    switch (which) {
    case GS_RD_DRA_CLASS: return decode_class(r, obj);
    case GS_RD_DRA_CLAIM: return decode_claim(r, obj, false);
    case GS_RD_DRA_CLAIM_TEMPLATE: return decode_claim(r, obj, true);
    case GS_RD_DRA_SLICE: return decode_slice(r, obj);
    }
    return gs_rd_fail(r, obj, GS_ERR_INTERNAL, "unknown DRA kind %d", (int)which);
}
