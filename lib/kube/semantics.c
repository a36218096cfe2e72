/*
 * semantics.c - Kubernetes matching rules over decoded objects: name syntax, resource
 * classification, toleration vs taint (and vs a taint key), the ExtendedResourceToleration
 * admission plugin, the Priority admission plugin's class resolution, node-selector
 * requirements/terms, metav1.LabelSelector. Each rule lives here once; the checker, the
 * engine and the webhook call these.
 *
 * Each function reproduces upstream's behaviour at match time, including the cases where
 * upstream first "parses" a selector and an invalid one silently matches nothing
 * (k8s-semantics.md sections 1.2, 2.4 and 4). All functions are pure and allocate nothing.
 */
#include <string.h>

#include "gpusched/kube.h"
#include "gpusched/util.h"

/* ---------------------------------------------------------------- name syntax */

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], the shape of a qualified name part and of a
 * non-empty label value. */
static bool is_name_part(const char *s, size_t n)
{
    if (n == 0 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++)
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

/* RFC 1123 subdomain: at most 253 characters, dot-separated labels of [a-z0-9-] that
 * start and end with [a-z0-9]. */
static bool is_dns1123_subdomain(const char *s, size_t n)
{
    if (n == 0 || n > 253)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.') {
            if (!is_lower_alnum(s[i]) && s[i] != '-')
                return false;
            continue;
        }
        if (i == start || !is_lower_alnum(s[start]) || !is_lower_alnum(s[i - 1]))
            return false;
        start = i + 1;
    }
    return true;
}

/* validation.IsQualifiedName: [DNS-subdomain prefix '/'] name part of 1..63 characters;
 * at most one '/'. */
static bool is_qualified_name_n(const char *s, size_t n)
{
    const char *slash = memchr(s, '/', n);
    if (!slash)
        return n <= 63 && is_name_part(s, n);
    size_t np = (size_t)(slash - s), npart = n - np - 1;
    if (memchr(slash + 1, '/', npart))
        return false;
    return is_dns1123_subdomain(s, np) && npart <= 63 && is_name_part(slash + 1, npart);
}

static bool is_qualified_name(const char *s) { return is_qualified_name_n(s, strlen(s)); }

/* validation.IsValidLabelValue: empty, or a name part of at most 63 characters. */
static bool is_label_value(const char *s)
{
    size_t n = strlen(s);
    return n == 0 || (n <= 63 && is_name_part(s, n));
}

bool gs_is_qualified_name(const char *s) { return s && is_qualified_name(s); }
bool gs_is_label_value(const char *s) { return s && is_label_value(s); }
bool gs_is_dns1123_subdomain(const char *s) { return s && is_dns1123_subdomain(s, strlen(s)); }

/* ---------------------------------------------------------------- resources */

/* helper.IsNativeResource: no '/' or inside the kubernetes.io/ domain (any name that
 * contains "kubernetes.io/", so "foo.kubernetes.io/x" is native too). */
bool gs_resource_is_native(const char *name)
{
    return !strchr(name, '/') || strstr(name, "kubernetes.io/") != NULL;
}

/* helper.IsExtendedResourceName: not native, not "requests."-prefixed, and
 * "requests.<name>" must be a qualified name (so the quota key for it is valid). */
bool gs_resource_is_extended(const char *name)
{
    static const char requests_prefix[] = "requests.";
    const size_t np = sizeof requests_prefix - 1;
    if (gs_resource_is_native(name) || strncmp(name, requests_prefix, np) == 0)
        return false;
    /* A qualified name is at most 253 + 1 + 63 bytes; anything longer is not one. */
    char quota_name[253 + 1 + 63 + 1];
    size_t n = strlen(name);
    if (np + n > sizeof quota_name - 1)
        return false;
    memcpy(quota_name, requests_prefix, np);
    memcpy(quota_name + np, name, n);
    return is_qualified_name_n(quota_name, np + n);
}

/* ---------------------------------------------------------------- tolerations */

/* The comparison-operator gate's integer syntax: "0", or an optional '-' then [1-9][0-9]*,
 * within int64. Rejects "+5", "05" and "-0" (which Go ParseInt would take), " 5", "". */
static bool parse_canonical_int(const char *s, int64_t *out)
{
    size_t n = strlen(s);
    if (n == 1 && s[0] == '0') {
        *out = 0;
        return true;
    }
    size_t i = s[0] == '-' ? 1 : 0;
    if (i >= n || s[i] < '1' || s[i] > '9')
        return false;
    return gs_parse_i64(s, n, out) == 0;
}

/* Section 1.2, in upstream's order: effect, then key, then operator. */
bool gs_toleration_tolerates(const gs_toleration *tol, const gs_taint *taint, bool lt_gt_gate)
{
    if (tol->effect == GS_EFFECT_INVALID)
        return false;
    if (tol->effect != GS_EFFECT_ANY && tol->effect != taint->effect)
        return false;
    const char *tkey = tol->key ? tol->key : "";
    if (tkey[0] != '\0' && strcmp(tkey, taint->key ? taint->key : "") != 0)
        return false;
    const char *tol_value = tol->value ? tol->value : "";
    const char *taint_value = taint->value ? taint->value : "";
    switch (tol->op) {
    case GS_TOL_EQUAL:
        return strcmp(tol_value, taint_value) == 0;
    case GS_TOL_EXISTS:
        return true;
    case GS_TOL_LT:
    case GS_TOL_GT: {
        int64_t want, have;
        if (!lt_gt_gate || !parse_canonical_int(tol_value, &want) ||
            !parse_canonical_int(taint_value, &have))
            return false;
        return tol->op == GS_TOL_LT ? have < want : have > want;
    }
    case GS_TOL_OTHER:
        break;
    }
    return false;
}

/*
 * A toleration against every taint of one key and effect whose value is not known (a
 * rule without nodes, a webhook adding what is missing): every_value asks whether it
 * tolerates all of them (Exists), otherwise whether it tolerates at least one (Equal
 * too). An empty key matches every key only with Exists: the API server rejects it with
 * any other operator, so no running pod carries one. Lt/Gt never match (gate off).
 */
bool gs_toleration_tolerates_key(const gs_toleration *tol, const char *key, gs_effect effect,
                                 bool every_value)
{
    if (tol->effect == GS_EFFECT_INVALID || (tol->effect != GS_EFFECT_ANY && tol->effect != effect))
        return false;
    const char *tkey = tol->key ? tol->key : "";
    if (tkey[0] == '\0')
        return tol->op == GS_TOL_EXISTS;
    if (strcmp(tkey, key ? key : "") != 0)
        return false;
    return tol->op == GS_TOL_EXISTS || (!every_value && tol->op == GS_TOL_EQUAL);
}

bool gs_pod_tolerates_key(const gs_pod *p, const char *key, gs_effect effect, bool every_value)
{
    for (uint32_t i = 0; i < p->ntolerations; i++)
        if (gs_toleration_tolerates_key(&p->tolerations[i], key, effect, every_value))
            return true;
    return false;
}

/* ---------------------------------------------------------------- ExtendedResourceToleration */

/* Section 7: the extended resources in the requests of every container and init
 * container (after limits->requests defaulting), sorted, each once. Pod overhead and
 * pod-level resources do not count. */
uint32_t gs_ert_resources(const gs_pod *p, const char **names, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t pass = 0; pass < 2; pass++) {
        const gs_container *cs = pass ? p->init_containers : p->containers;
        uint32_t nc = pass ? p->ninit : p->ncontainers;
        for (uint32_t i = 0; i < nc; i++)
            for (uint32_t k = 0; k < cs[i].requests.n; k++) {
                const char *name = cs[i].requests.items[k].name;
                if (!name || !gs_resource_is_extended(name))
                    continue;
                uint32_t at = 0; /* insertion point in the sorted names */
                while (at < n && strcmp(names[at], name) < 0)
                    at++;
                if ((at < n && strcmp(names[at], name) == 0) || at >= cap)
                    continue;
                if (n == cap)
                    n--; /* full: the largest name gives way */
                memmove(names + at + 1, names + at, (n - at) * sizeof *names);
                names[at] = name;
                n++;
            }
    }
    return n;
}

bool gs_ert_tolerates(const gs_pod *p, const gs_taint *t)
{
    if (t->effect != GS_EFFECT_NO_SCHEDULE || !t->key || !gs_resource_is_extended(t->key))
        return false;
    for (uint32_t pass = 0; pass < 2; pass++) {
        const gs_container *cs = pass ? p->init_containers : p->containers;
        uint32_t nc = pass ? p->ninit : p->ncontainers;
        for (uint32_t i = 0; i < nc; i++)
            if (gs_reslist_get(&cs[i].requests, t->key))
                return true;
    }
    return false;
}

const gs_node *gs_ert_implied_by(const gs_snapshot *s)
{
    for (size_t i = 0; i < s->nodes.n; i++) {
        const gs_labels *l = &s->nodes.v[i].meta.labels;
        if (gs_labels_get(l, "cloud.google.com/gke-accelerator"))
            return &s->nodes.v[i];
    }
    return NULL;
}

/* ---------------------------------------------------------------- priority */

/*
 * Section 5.1. Upstream looks the class up among the cluster's PriorityClass objects,
 * which always include the two system classes; an input rarely carries them, so they
 * are known here by name when the input has no class of that name. An empty name means
 * the global default class; if several claim it (a race admission allows), the lowest
 * value wins, as in the Priority plugin; without one, priority 0.
 */
bool gs_priority_resolve(const gs_priority_class *classes, size_t n, const char *name, int32_t *prio,
                         gs_preempt_policy *policy)
{
    *prio = 0;
    *policy = GS_PREEMPT_UNSET;
    const gs_priority_class *found = NULL;
    if (!name || !name[0]) {
        for (size_t i = 0; i < n; i++)
            if (classes[i].global_default && (!found || classes[i].value < found->value))
                found = &classes[i];
        if (found) {
            *prio = found->value;
            *policy = found->preemption_policy;
        }
        return true;
    }
    for (size_t i = 0; i < n && !found; i++)
        if (classes[i].meta.name && strcmp(classes[i].meta.name, name) == 0)
            found = &classes[i];
    if (found) {
        *prio = found->value;
        *policy = found->preemption_policy;
        return true;
    }
    if (strcmp(name, "system-cluster-critical") == 0) {
        *prio = GS_PRIORITY_SYSTEM_CLUSTER_CRITICAL;
        return true;
    }
    if (strcmp(name, "system-node-critical") == 0) {
        *prio = GS_PRIORITY_SYSTEM_NODE_CRITICAL;
        return true;
    }
    return false;
}

/* ---------------------------------------------------------------- selectors */

/* Go strconv.ParseInt(s, 10, 64): optional sign, digits, leading zeros allowed. */
static bool parse_go_int(const char *s, int64_t *out) { return gs_parse_i64(s, strlen(s), out) == 0; }

static bool has_value(const gs_sel_req *r, const char *v)
{
    for (uint32_t i = 0; i < r->nvalues; i++)
        if (r->values[i] && strcmp(r->values[i], v) == 0)
            return true;
    return false;
}

/*
 * labels.NewRequirement's checks: a qualified-name key; In/NotIn need at least one value,
 * Exists/DoesNotExist none, Gt/Lt exactly one that ParseInt accepts; every value must be
 * a valid label value (so Gt "-5" or "+5" is invalid even though ParseInt takes it).
 * Upstream drops the whole selector when any requirement fails these checks.
 */
static bool requirement_is_valid(const gs_sel_req *r)
{
    if (!r->key || !is_qualified_name(r->key))
        return false;
    switch (r->op) {
    case GS_SEL_IN:
    case GS_SEL_NOT_IN:
        if (r->nvalues == 0)
            return false;
        break;
    case GS_SEL_EXISTS:
    case GS_SEL_DOES_NOT_EXIST:
        if (r->nvalues != 0)
            return false;
        break;
    case GS_SEL_GT:
    case GS_SEL_LT: {
        int64_t ignored;
        if (r->nvalues != 1 || !r->values[0] || !parse_go_int(r->values[0], &ignored))
            return false;
        break;
    }
    case GS_SEL_INVALID:
    default:
        return false;
    }
    for (uint32_t i = 0; i < r->nvalues; i++)
        if (!r->values[i] || !is_label_value(r->values[i]))
            return false;
    return true;
}

/* Requirement.Matches for a requirement already known to be valid. */
static bool requirement_matches(const gs_sel_req *r, const gs_labels *labels)
{
    const char *have = labels ? gs_labels_get(labels, r->key) : NULL;
    switch (r->op) {
    case GS_SEL_IN:
        return have && has_value(r, have);
    case GS_SEL_NOT_IN:
        return !have || !has_value(r, have);
    case GS_SEL_EXISTS:
        return have != NULL;
    case GS_SEL_DOES_NOT_EXIST:
        return have == NULL;
    case GS_SEL_GT:
    case GS_SEL_LT: {
        int64_t label_value, bound;
        if (!have || !parse_go_int(have, &label_value) || !parse_go_int(r->values[0], &bound))
            return false;
        return r->op == GS_SEL_GT ? label_value > bound : label_value < bound;
    }
    case GS_SEL_INVALID:
        break;
    }
    return false;
}

bool gs_sel_req_matches_labels(const gs_sel_req *r, const gs_labels *labels)
{
    return requirement_is_valid(r) && requirement_matches(r, labels);
}

/*
 * matchFields: In/NotIn with exactly one value, compared against the node's field set,
 * which holds only metadata.name. Like upstream's field selectors, a key other than
 * metadata.name reads as "" (so NotIn ["x"] on an unknown key matches; API validation,
 * not matching, rejects such keys).
 */
bool gs_sel_req_matches_field(const gs_sel_req *r, const char *node_name)
{
    if ((r->op != GS_SEL_IN && r->op != GS_SEL_NOT_IN) || r->nvalues != 1 || !r->values[0])
        return false;
    const char *field = "";
    if (r->key && strcmp(r->key, "metadata.name") == 0 && node_name)
        field = node_name;
    bool equal = strcmp(field, r->values[0]) == 0;
    return r->op == GS_SEL_IN ? equal : !equal;
}

/* A term is all its expressions AND all its fields. An empty term matches nothing; an
 * invalid requirement anywhere in it makes the whole term match nothing. */
bool gs_sel_term_matches(const gs_sel_term *t, const gs_labels *labels, const char *node_name)
{
    if (t->nexprs == 0 && t->nfields == 0)
        return false;
    for (uint32_t i = 0; i < t->nexprs; i++)
        if (!requirement_is_valid(&t->exprs[i]))
            return false;
    for (uint32_t i = 0; i < t->nexprs; i++)
        if (!requirement_matches(&t->exprs[i], labels))
            return false;
    for (uint32_t i = 0; i < t->nfields; i++)
        if (!gs_sel_req_matches_field(&t->fields[i], node_name))
            return false;
    return true;
}

/* Terms are ORed; an empty list matches nothing. A NULL selector is "no required
 * affinity" and therefore no constraint (matches every node). */
bool gs_node_selector_matches(const gs_node_selector *ns, const gs_labels *labels,
                              const char *node_name)
{
    if (!ns)
        return true;
    for (uint32_t i = 0; i < ns->nterms; i++)
        if (gs_sel_term_matches(&ns->terms[i], labels, node_name))
            return true;
    return false;
}

bool gs_pod_selects_node(const gs_pod *p, const gs_node *n)
{
    for (uint32_t i = 0; i < p->node_selector.n; i++) {
        const char *v = gs_labels_get(&n->meta.labels, p->node_selector.items[i].key);
        if (!v || strcmp(v, p->node_selector.items[i].val) != 0)
            return false;
    }
    return gs_node_selector_matches(p->required, &n->meta.labels, n->meta.name);
}

bool gs_taint_is_gpu(const gs_taint *t, const char *const *keys, size_t nkeys)
{
    if (t->effect != GS_EFFECT_NO_SCHEDULE && t->effect != GS_EFFECT_NO_EXECUTE)
        return false;
    for (size_t i = 0; i < nkeys; i++)
        if (keys[i] && t->key && strcmp(t->key, keys[i]) == 0)
            return true;
    return false;
}

const gs_taint *gs_node_custom_noschedule_taint(const gs_node *n)
{
    for (uint32_t i = 0; i < n->ntaints; i++) {
        const gs_taint *t = &n->taints[i];
        if (t->effect == GS_EFFECT_NO_SCHEDULE && t->key &&
            strncmp(t->key, "node.kubernetes.io/", 19) != 0 &&
            strncmp(t->key, "node.cloudprovider.kubernetes.io/", 33) != 0)
            return t;
    }
    return NULL;
}

/*
 * metav1.LabelSelectorAsSelector + Matches: absent selector -> nothing; present with no
 * matchLabels and no matchExpressions -> everything. matchLabels entries are Equals
 * requirements (key and value validated); matchExpressions allow only In, NotIn, Exists,
 * DoesNotExist. Any invalid entry makes the selector fail to convert: matches nothing.
 */
bool gs_label_selector_matches(const gs_label_selector *sel, const gs_labels *labels)
{
    if (!sel || !sel->present)
        return false;
    if (sel->match_labels.n == 0 && sel->nexprs == 0)
        return true;
    for (uint32_t i = 0; i < sel->match_labels.n; i++) {
        const gs_kv *kv = &sel->match_labels.items[i];
        if (!kv->key || !kv->val || !is_qualified_name(kv->key) || !is_label_value(kv->val))
            return false;
    }
    for (uint32_t i = 0; i < sel->nexprs; i++) {
        const gs_sel_req *r = &sel->exprs[i];
        if (r->op == GS_SEL_GT || r->op == GS_SEL_LT || !requirement_is_valid(r))
            return false;
    }
    for (uint32_t i = 0; i < sel->match_labels.n; i++) {
        const gs_kv *kv = &sel->match_labels.items[i];
        const char *have = labels ? gs_labels_get(labels, kv->key) : NULL;
        if (!have || strcmp(have, kv->val) != 0)
            return false;
    }
    for (uint32_t i = 0; i < sel->nexprs; i++)
        if (!requirement_matches(&sel->exprs[i], labels))
            return false;
    return true;
}
