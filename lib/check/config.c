/*
 * config.c - the check configuration: defaults, and the CheckConfig YAML/JSON file.
 *
 *   apiVersion: gpusched.io/v1alpha1        # optional; checked when present
 *   kind: CheckConfig                       # optional; checked when present
 *   rules:                                  # by id or name
 *     GS002: {enabled: false}
 *     gpu-node-untainted: {severity: warning}
 *     GS017: off                            # shorthand: off | error | warning | info
 *   gpuTaintKeys: [nvidia.com/gpu, dedicated]
 *   poolLabels: [node.kubernetes.io/instance-type, nvidia.com/gpu.product]
 *   migLabels: [nvidia.com/mig.strategy, nvidia.com/mig.config]
 *   roleLabel: gpusched.io/role
 *   defaultGpuPriorityClass: gpu-batch
 *   migStrategy: auto | none | single | mixed
 *   extendedResourceToleration: false
 *   hami: {forceOverwriteDefaultScheduler: true}   # HAMi's webhook rewrites schedulerName
 *
 * A list given in the file replaces the default list. A pool or MIG label entry may name
 * alternatives separated by '|' (any one of them satisfies it). Unknown keys, unknown
 * rules, wrong types, duplicate mapping keys and a rule configured twice (by id and by
 * name) are errors with file:line:col, so a typo never silently disables a check.
 *
 * Parsing: the library's one YAML tree reader (lib/util/yaml_tree.c), as for manifests and
 * MIG inputs: a position on every node, aliases refused, nesting and sizes bounded, one
 * document.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/check_int.h"
#include "util/yaml_tree_int.h"

#define CFG_MAX_BYTES ((size_t)1 << 20)
#define CFG_MAX_DEPTH 16
#define CFG_MAX_NODES 100000u
#define CFG_MAX_STRING 253 + 1 + 63 /* the longest qualified name */

/* ---------------------------------------------------------------- defaults */
static const char *const default_pool_labels[] = {
    "node.kubernetes.io/instance-type|beta.kubernetes.io/instance-type",
    "nvidia.com/gpu.product",
    "nvidia.com/cuda.driver-version.full|nvidia.com/cuda.driver.major",
};
static const char *const default_mig_labels[] = {
    "nvidia.com/mig.strategy",
    "nvidia.com/mig.config",
};

void gs_check_config_defaults(gs_check_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->gpu_taint_keys[0] = "nvidia.com/gpu";
    cfg->ngpu_taint_keys = 1;
    for (uint32_t i = 0; i < sizeof default_pool_labels / sizeof *default_pool_labels; i++)
        cfg->pool_labels[cfg->npool_labels++] = default_pool_labels[i];
    for (uint32_t i = 0; i < sizeof default_mig_labels / sizeof *default_mig_labels; i++)
        cfg->mig_labels[cfg->nmig_labels++] = default_mig_labels[i];
    cfg->role_label = "gpusched.io/role";
    cfg->default_gpu_priority_class = NULL;
    cfg->mig_strategy = GS_CHECK_MIG_INFER;
    cfg->extended_resource_toleration = false;
    cfg->hami_overwrites_default_scheduler = true; /* HAMi's chart default */
    gs_arena_init(&cfg->arena, 4096);
}

void gs_check_config_free(gs_check_config *cfg)
{
    if (!cfg)
        return;
    gs_arena_free(&cfg->arena);
}

/* ---------------------------------------------------------------- tree */
/* The shared YAML tree (lib/util/yaml_tree.c): positions on every node, aliases refused,
 * duplicate mapping keys refused (here `GS002: error` then `GS002: off` would silently
 * turn a rule off), UTF-8 checked before libfyaml sees the bytes, nesting and sizes
 * bounded. Scalars are NUL-terminated copies in cfg->arena. */
typedef struct cy_builder {
    const char *file;
    gs_error *err;
} cy_builder;

static int cy_fail(cy_builder *b, uint32_t line, uint32_t col, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int cy_fail(cy_builder *b, uint32_t line, uint32_t col, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gs_error_setv(b->err, GS_ERR_INVALID, b->file, (int)line, (int)col, path, fmt, ap);
    va_end(ap);
    return -1;
}

static int cy_parse(gs_arena *a, const char *file, const char *data, size_t len, const gs_yn **root,
                    gs_error *err)
{
    gs_yt_opts o;
    memset(&o, 0, sizeof o);
    o.file = file;
    o.what = "a check configuration";
    o.max_depth = CFG_MAX_DEPTH;
    o.max_nodes = CFG_MAX_NODES;
    o.copy_text = true;
    gs_yn *r;
    int rc = gs_yt_build(&o, a, data, len, &r, NULL, err);
    *root = r;
    return rc;
}

/* ---------------------------------------------------------------- decoding */
typedef struct cfg_reader {
    cy_builder *b;
    gs_check_config *cfg;
    const gs_yn *rule_key[64]; /* where each rule was configured (one entry per rule) */
} cfg_reader;

static const char *type_name(const gs_yn *n)
{
    return n->type == GS_YN_MAP ? "a mapping" : n->type == GS_YN_SEQ ? "a sequence" : "a scalar";
}

static int expect(cfg_reader *r, const gs_yn *n, uint8_t type, const char *path)
{
    if (n->type == type)
        return 0;
    return cy_fail(r->b, n->line, n->col, path, "expected %s, got %s",
                   type == GS_YN_MAP ? "a mapping" : type == GS_YN_SEQ ? "a sequence" : "a string",
                   type_name(n));
}

static bool is_true(const char *t)
{
    return !strcmp(t, "true") || !strcmp(t, "True") || !strcmp(t, "TRUE");
}

static bool is_false(const char *t)
{
    return !strcmp(t, "false") || !strcmp(t, "False") || !strcmp(t, "FALSE");
}

static int read_bool(cfg_reader *r, const gs_yn *n, const char *path, bool *out)
{
    if (n->type == GS_YN_SCALAR && n->plain && (is_true(n->u.text) || is_false(n->u.text))) {
        *out = is_true(n->u.text);
        return 0;
    }
    return cy_fail(r->b, n->line, n->col, path, "expected true or false, got %s%.60s%s",
                   n->type == GS_YN_SCALAR ? "\"" : "", n->type == GS_YN_SCALAR ? n->u.text : type_name(n),
                   n->type == GS_YN_SCALAR ? "\"" : "");
}

static int read_string(cfg_reader *r, const gs_yn *n, const char *path, const char **out)
{
    if (expect(r, n, GS_YN_SCALAR, path) < 0)
        return -1;
    if (n->len == 0 || n->len > CFG_MAX_STRING || strlen(n->u.text) != n->len)
        return cy_fail(r->b, n->line, n->col, path, "expected a non-empty string of at most %d bytes",
                       CFG_MAX_STRING);
    *out = n->u.text; /* the tree lives in cfg->arena */
    return 0;
}

static int read_list(cfg_reader *r, const gs_yn *n, const char *path, const char **items, uint32_t *count)
{
    if (expect(r, n, GS_YN_SEQ, path) < 0)
        return -1;
    if (n->len > GS_CHECK_MAX_KEYS)
        return cy_fail(r->b, n->line, n->col, path, "at most %d entries", GS_CHECK_MAX_KEYS);
    uint32_t k = 0;
    for (const gs_yn *it = n->u.first; it; it = it->next) {
        char p[64];
        snprintf(p, sizeof p, "%s[%u]", path, k);
        if (read_string(r, it, p, &items[k]) < 0)
            return -1;
        k++;
    }
    *count = k;
    return 0;
}

static int read_rule(cfg_reader *r, const gs_yn *key, const gs_yn *val)
{
    const gs_rule_info *ri = gs_rule_find(key->u.text);
    char path[96];
    snprintf(path, sizeof path, "rules[%.60s]", key->u.text);
    if (!ri)
        return cy_fail(r->b, key->line, key->col, path,
                       "unknown rule \"%.60s\" (see 'gpusched check --list-rules')", key->u.text);
    uint32_t nrules;
    uint32_t i = (uint32_t)(ri - gs_rules(&nrules));
    if (i < 64 && r->rule_key[i])
        return cy_fail(r->b, key->line, key->col, path,
                       "rule %s is configured twice (also as \"%.60s\" at line %u, column %u)", ri->id,
                       r->rule_key[i]->u.text, r->rule_key[i]->line, r->rule_key[i]->col);
    if (i < 64)
        r->rule_key[i] = key;
    gs_check_config *cfg = r->cfg;
    if (val->type == GS_YN_SCALAR) {
        /* shorthand: off | on | <severity> | false | true */
        if (!strcmp(val->u.text, "off") || (val->plain && is_false(val->u.text))) {
            cfg->disabled[i] = true;
        } else if (!strcmp(val->u.text, "on") || (val->plain && is_true(val->u.text))) {
            cfg->disabled[i] = false;
        } else if (gs_severity_parse(val->u.text, &cfg->severity[i]) == 0) {
            cfg->has_severity[i] = true;
            cfg->disabled[i] = false;
        } else {
            return cy_fail(r->b, val->line, val->col, path,
                           "expected off, on, error, warning, info or a mapping {enabled, severity}, "
                           "got \"%.60s\"", val->u.text);
        }
        return 0;
    }
    if (expect(r, val, GS_YN_MAP, path) < 0)
        return -1;
    for (const gs_yn *k = val->u.first; k && k->next; k = k->next->next) {
        const gs_yn *v = k->next;
        char p[sizeof path + 48];
        snprintf(p, sizeof p, "%s.%.40s", path, k->u.text);
        if (!strcmp(k->u.text, "enabled")) {
            bool on;
            if (read_bool(r, v, p, &on) < 0)
                return -1;
            cfg->disabled[i] = !on;
        } else if (!strcmp(k->u.text, "severity")) {
            if (expect(r, v, GS_YN_SCALAR, p) < 0)
                return -1;
            if (gs_severity_parse(v->u.text, &cfg->severity[i]) != 0)
                return cy_fail(r->b, v->line, v->col, p,
                               "unknown severity \"%.40s\" (expected error, warning or info)", v->u.text);
            cfg->has_severity[i] = true;
        } else {
            return cy_fail(r->b, k->line, k->col, p, "unknown field (expected enabled, severity)");
        }
    }
    return 0;
}

/* hami: {forceOverwriteDefaultScheduler: bool} - how HAMi is installed (GS012). */
static int read_hami(cfg_reader *r, const gs_yn *v)
{
    if (v->type == GS_YN_SCALAR && v->plain && !strcmp(v->u.text, "null"))
        return 0;
    if (expect(r, v, GS_YN_MAP, "hami") < 0)
        return -1;
    for (const gs_yn *k = v->u.first; k && k->next; k = k->next->next) {
        char p[64];
        snprintf(p, sizeof p, "hami.%.40s", k->u.text);
        if (!strcmp(k->u.text, "forceOverwriteDefaultScheduler")) {
            if (read_bool(r, k->next, p, &r->cfg->hami_overwrites_default_scheduler) < 0)
                return -1;
        } else {
            return cy_fail(r->b, k->line, k->col, p, "unknown field (expected forceOverwriteDefaultScheduler)");
        }
    }
    return 0;
}

static int decode(cfg_reader *r, const gs_yn *root)
{
    if (!root)
        return 0; /* an empty file keeps the defaults */
    if (root->type == GS_YN_SCALAR && root->plain && (root->len == 0 || !strcmp(root->u.text, "null") ||
                                                   !strcmp(root->u.text, "~")))
        return 0;
    if (expect(r, root, GS_YN_MAP, NULL) < 0)
        return -1;
    gs_check_config *cfg = r->cfg;
    for (const gs_yn *k = root->u.first; k && k->next; k = k->next->next) {
        const gs_yn *v = k->next;
        const char *key = k->u.text;
        if (!strcmp(key, "apiVersion")) {
            if (expect(r, v, GS_YN_SCALAR, key) < 0)
                return -1;
            if (strcmp(v->u.text, "gpusched.io/v1alpha1") != 0)
                return cy_fail(r->b, v->line, v->col, key,
                               "unsupported apiVersion \"%.60s\" (expected gpusched.io/v1alpha1)", v->u.text);
        } else if (!strcmp(key, "kind")) {
            if (expect(r, v, GS_YN_SCALAR, key) < 0)
                return -1;
            if (strcmp(v->u.text, "CheckConfig") != 0)
                return cy_fail(r->b, v->line, v->col, key, "expected kind CheckConfig, got \"%.60s\"",
                               v->u.text);
        } else if (!strcmp(key, "metadata")) {
            /* allowed, ignored: the file may be kept as a Kubernetes-style object */
        } else if (!strcmp(key, "rules")) {
            if (v->type == GS_YN_SCALAR && v->plain && !strcmp(v->u.text, "null"))
                continue;
            if (expect(r, v, GS_YN_MAP, key) < 0)
                return -1;
            for (const gs_yn *rk = v->u.first; rk && rk->next; rk = rk->next->next)
                if (read_rule(r, rk, rk->next) < 0)
                    return -1;
        } else if (!strcmp(key, "gpuTaintKeys")) {
            if (read_list(r, v, key, cfg->gpu_taint_keys, &cfg->ngpu_taint_keys) < 0)
                return -1;
        } else if (!strcmp(key, "poolLabels")) {
            if (read_list(r, v, key, cfg->pool_labels, &cfg->npool_labels) < 0)
                return -1;
        } else if (!strcmp(key, "migLabels")) {
            if (read_list(r, v, key, cfg->mig_labels, &cfg->nmig_labels) < 0)
                return -1;
        } else if (!strcmp(key, "roleLabel")) {
            if (read_string(r, v, key, &cfg->role_label) < 0)
                return -1;
        } else if (!strcmp(key, "defaultGpuPriorityClass")) {
            if (read_string(r, v, key, &cfg->default_gpu_priority_class) < 0)
                return -1;
        } else if (!strcmp(key, "migStrategy")) {
            static const char *const names[] = {"none", "single", "mixed"};
            if (expect(r, v, GS_YN_SCALAR, key) < 0)
                return -1;
            int found = -2;
            if (!strcmp(v->u.text, "auto"))
                found = GS_CHECK_MIG_INFER;
            for (int i = 0; i < 3; i++)
                if (!strcmp(v->u.text, names[i]))
                    found = i;
            if (found == -2)
                return cy_fail(r->b, v->line, v->col, key,
                               "unknown MIG strategy \"%.40s\" (expected auto, none, single or mixed)",
                               v->u.text);
            cfg->mig_strategy = found;
        } else if (!strcmp(key, "extendedResourceToleration")) {
            if (read_bool(r, v, key, &cfg->extended_resource_toleration) < 0)
                return -1;
            cfg->ert_configured = true;
        } else if (!strcmp(key, "hami")) {
            if (read_hami(r, v) < 0)
                return -1;
        } else {
            return cy_fail(r->b, k->line, k->col, NULL,
                           "unknown field \"%.60s\" (expected apiVersion, kind, rules, gpuTaintKeys, "
                           "poolLabels, migLabels, roleLabel, defaultGpuPriorityClass, migStrategy, "
                           "extendedResourceToleration, hami)",
                           key);
        }
    }
    if (cfg->ngpu_taint_keys == 0)
        return cy_fail(r->b, root->line, root->col, "gpuTaintKeys", "needs at least one taint key");
    return 0;
}

int gs_check_config_parse(gs_check_config *cfg, const char *name, const char *data, size_t len,
                          gs_error *err)
{
    if (len > CFG_MAX_BYTES)
        return gs_error_set(err, GS_ERR_LIMIT, name, 0, 0, NULL,
                            "config larger than the limit of %u bytes", (unsigned)CFG_MAX_BYTES);
    const char *file = gs_arena_strdup(&cfg->arena, name);
    if (!file)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    cy_builder b = {file, err};
    /* decode into a copy: a failed read leaves cfg as it was */
    gs_check_config tmp = *cfg;
    const gs_yn *root = NULL;
    int rc = cy_parse(&cfg->arena, file, data, len, &root, err);
    if (rc == 0) {
        cfg_reader r;
        memset(&r, 0, sizeof r);
        r.b = &b;
        r.cfg = &tmp;
        rc = decode(&r, root);
    }
    if (rc == 0) {
        tmp.arena = cfg->arena; /* the arena grew while parsing */
        *cfg = tmp;
    }
    return rc;
}

int gs_check_config_read(gs_check_config *cfg, const char *path, gs_error *err)
{
    size_t len = 0;
    char *data = gs_read_file(path, CFG_MAX_BYTES, &len, err);
    if (!data)
        return -1;
    int rc = gs_check_config_parse(cfg, path, data, len, err);
    free(data);
    return rc;
}
