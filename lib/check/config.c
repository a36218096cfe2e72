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
 * Parsing: libfyaml's event stream into a small tree with a position on every node (the
 * same reason as the snapshot reader: document nodes carry no positions in 0.7.12).
 * Aliases are refused, nesting and sizes are bounded.
 */
#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/check_int.h"
#include "util/fy_int.h"

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
enum { CY_SCALAR = 1, CY_MAP, CY_SEQ };

typedef struct cy {
    struct cy *first, *next; /* children: key, value, key, value... for maps */
    const char *text;        /* scalars, NUL-terminated (arena) */
    size_t len;
    uint32_t n;              /* children */
    uint32_t line, col;
    uint8_t type;
    bool plain;
} cy;

typedef struct cy_builder {
    gs_arena *a;
    const char *file;
    gs_error *err;
    cy *root;
    cy *stack[CFG_MAX_DEPTH];
    cy *tail[CFG_MAX_DEPTH];
    int depth;
    uint32_t nodes;
    int docs;
    const char *in; /* the text being parsed (scalar marks are offsets into it) */
    size_t in_len;
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

/* YAML forbids duplicate keys, and every other reader of the project rejects them: here
 * `GS002: error` then `GS002: off` would silently turn a rule off. Small mappings compare
 * pairwise; larger ones sort an array of key pointers. */
static int cy_key_cmp(const void *pa, const void *pb)
{
    const cy *a = *(const cy *const *)pa, *b = *(const cy *const *)pb;
    size_t n = a->len < b->len ? a->len : b->len;
    int r = memcmp(a->text, b->text, n);
    if (r)
        return r;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    return (a->col > b->col) - (a->col < b->col);
}

static bool cy_same_key(const cy *a, const cy *b)
{
    return a->len == b->len && memcmp(a->text, b->text, a->len) == 0;
}

static int cy_check_duplicates(cy_builder *b, const cy *map)
{
    uint32_t n = map->n / 2;
    if (n < 2)
        return 0;
    const cy *dup = NULL;
    if (n <= 16) {
        for (const cy *k = map->first; k && k->next && !dup; k = k->next->next)
            for (const cy *j = k->next->next; j && j->next; j = j->next->next)
                if (cy_same_key(k, j)) {
                    dup = j;
                    break;
                }
    } else {
        const cy **keys = gs_arena_alloc(b->a, sizeof *keys * n);
        if (!keys)
            return gs_error_set(b->err, GS_ERR_NOMEM, b->file, 0, 0, NULL, "out of memory");
        uint32_t i = 0;
        for (const cy *k = map->first; k && k->next && i < n; k = k->next->next)
            keys[i++] = k;
        qsort(keys, i, sizeof *keys, cy_key_cmp);
        for (uint32_t j = 1; j < i && !dup; j++)
            if (cy_same_key(keys[j - 1], keys[j]))
                dup = keys[j];
    }
    if (!dup)
        return 0;
    return cy_fail(b, dup->line, dup->col, NULL, "duplicate mapping key \"%.60s\"", dup->text);
}

static int cy_event(cy_builder *b, struct fy_event *ev)
{
    const struct fy_mark *m = fy_event_start_mark(ev);
    uint32_t line = m && m->line >= 0 ? (uint32_t)m->line + 1 : 0;
    uint32_t col = m && m->column >= 0 ? (uint32_t)m->column + 1 : 0;
    uint8_t type = 0;
    switch (ev->type) {
    case FYET_DOCUMENT_START:
        if (++b->docs > 1)
            return cy_fail(b, line, col, NULL, "a check configuration is one YAML document");
        return 0;
    case FYET_ALIAS:
        return cy_fail(b, line, col, NULL, "YAML aliases are not allowed in a check configuration");
    case FYET_MAPPING_START: type = CY_MAP; break;
    case FYET_SEQUENCE_START: type = CY_SEQ; break;
    case FYET_SCALAR: type = CY_SCALAR; break;
    case FYET_MAPPING_END:
        if (b->depth > 0 && cy_check_duplicates(b, b->stack[b->depth - 1]) < 0)
            return -1;
        b->depth--;
        return 0;
    case FYET_SEQUENCE_END:
        b->depth--;
        return 0;
    default: return 0;
    }
    if (++b->nodes > CFG_MAX_NODES)
        return cy_fail(b, line, col, NULL, "configuration has more than %u YAML nodes", CFG_MAX_NODES);
    cy *n = gs_arena_alloc(b->a, sizeof *n);
    if (!n)
        return gs_error_set(b->err, GS_ERR_NOMEM, b->file, 0, 0, NULL, "out of memory");
    n->type = type;
    n->line = line;
    n->col = col;
    if (type == CY_SCALAR) {
        size_t len = 0;
        bool in_arena;
        const char *t = gs__fy_scalar_text(ev->scalar.value, b->in, b->in_len, b->a, &len,
                                           &in_arena);
        if (!t) {
            t = "";
            len = 0;
        }
        n->text = gs_arena_strndup(b->a, t, len);
        if (!n->text)
            return gs_error_set(b->err, GS_ERR_NOMEM, b->file, 0, 0, NULL, "out of memory");
        n->len = len;
        n->plain = fy_token_scalar_style(ev->scalar.value) == FYSS_PLAIN;
    }
    if (b->depth == 0) {
        b->root = n;
    } else {
        cy *parent = b->stack[b->depth - 1];
        if (parent->type == CY_MAP && parent->n % 2 == 0 && type != CY_SCALAR)
            return cy_fail(b, line, col, NULL, "mapping keys must be scalars");
        if (b->tail[b->depth - 1])
            b->tail[b->depth - 1]->next = n;
        else
            parent->first = n;
        b->tail[b->depth - 1] = n;
        parent->n++;
    }
    if (type != CY_SCALAR) {
        if (b->depth >= CFG_MAX_DEPTH)
            return cy_fail(b, line, col, NULL, "configuration nested deeper than %d levels", CFG_MAX_DEPTH);
        b->stack[b->depth] = n;
        b->tail[b->depth] = NULL;
        b->depth++;
    }
    return 0;
}

/* libfyaml 0.7.12 loops forever on some malformed bytes (an unknown directive followed by
 * an invalid sequence; the snapshot reader found it first), so malformed UTF-8 never
 * reaches it. */
static int cy_parse(cy_builder *b, const char *data, size_t len)
{
    size_t bad = gs_utf8_invalid_at(data, len);
    if (bad < len) {
        int line, col;
        gs_text_line_col(data, bad, &line, &col);
        return gs_error_set(b->err, GS_ERR_PARSE, b->file, line, col, NULL,
                            "invalid UTF-8 (byte 0x%02X); a configuration must be UTF-8 text",
                            (unsigned char)data[bad]);
    }
    struct fy_diag *diag = gs__fy_quiet_diag();
    if (!diag)
        return gs_error_set(b->err, GS_ERR_NOMEM, b->file, 0, 0, NULL, "out of memory");
    struct fy_parse_cfg pcfg;
    memset(&pcfg, 0, sizeof pcfg);
    pcfg.flags = FYPCF_QUIET;
    pcfg.diag = diag;
    struct fy_parser *p = fy_parser_create(&pcfg);
    if (!p) {
        fy_diag_destroy(diag);
        return gs_error_set(b->err, GS_ERR_NOMEM, b->file, 0, 0, NULL, "out of memory");
    }
    int rc = 0;
    b->in = data;
    b->in_len = len;
    if (fy_parser_set_string(p, data, len) != 0) {
        rc = gs_error_set(b->err, GS_ERR_NOMEM, b->file, 0, 0, NULL, "out of memory");
    } else {
        struct fy_event *ev;
        while ((ev = fy_parser_parse(p)) != NULL) {
            rc = cy_event(b, ev);
            fy_parser_event_free(p, ev);
            if (rc < 0)
                break;
        }
        if (rc == 0 && fy_parser_get_stream_error(p)) {
            struct fy_diag_error *first = gs__fy_first_error(diag);
            rc = gs_error_set(b->err, GS_ERR_PARSE, b->file, first ? first->line : 0,
                              first ? first->column : 0, NULL, "invalid YAML: %s",
                              first && first->msg ? first->msg : "syntax error");
        }
    }
    fy_parser_destroy(p);
    fy_diag_destroy(diag);
    return rc;
}

/* ---------------------------------------------------------------- decoding */
typedef struct cfg_reader {
    cy_builder *b;
    gs_check_config *cfg;
    const cy *rule_key[64]; /* where each rule was configured (one entry per rule) */
} cfg_reader;

static const char *type_name(const cy *n)
{
    return n->type == CY_MAP ? "a mapping" : n->type == CY_SEQ ? "a sequence" : "a scalar";
}

static int expect(cfg_reader *r, const cy *n, uint8_t type, const char *path)
{
    if (n->type == type)
        return 0;
    return cy_fail(r->b, n->line, n->col, path, "expected %s, got %s",
                   type == CY_MAP ? "a mapping" : type == CY_SEQ ? "a sequence" : "a string",
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

static int read_bool(cfg_reader *r, const cy *n, const char *path, bool *out)
{
    if (n->type == CY_SCALAR && n->plain && (is_true(n->text) || is_false(n->text))) {
        *out = is_true(n->text);
        return 0;
    }
    return cy_fail(r->b, n->line, n->col, path, "expected true or false, got %s%.60s%s",
                   n->type == CY_SCALAR ? "\"" : "", n->type == CY_SCALAR ? n->text : type_name(n),
                   n->type == CY_SCALAR ? "\"" : "");
}

static int read_string(cfg_reader *r, const cy *n, const char *path, const char **out)
{
    if (expect(r, n, CY_SCALAR, path) < 0)
        return -1;
    if (n->len == 0 || n->len > CFG_MAX_STRING || strlen(n->text) != n->len)
        return cy_fail(r->b, n->line, n->col, path, "expected a non-empty string of at most %d bytes",
                       CFG_MAX_STRING);
    *out = n->text; /* the tree lives in cfg->arena */
    return 0;
}

static int read_list(cfg_reader *r, const cy *n, const char *path, const char **items, uint32_t *count)
{
    if (expect(r, n, CY_SEQ, path) < 0)
        return -1;
    if (n->n > GS_CHECK_MAX_KEYS)
        return cy_fail(r->b, n->line, n->col, path, "at most %d entries", GS_CHECK_MAX_KEYS);
    uint32_t k = 0;
    for (const cy *it = n->first; it; it = it->next) {
        char p[64];
        snprintf(p, sizeof p, "%s[%u]", path, k);
        if (read_string(r, it, p, &items[k]) < 0)
            return -1;
        k++;
    }
    *count = k;
    return 0;
}

static int read_rule(cfg_reader *r, const cy *key, const cy *val)
{
    const gs_rule_info *ri = gs_rule_find(key->text);
    char path[96];
    snprintf(path, sizeof path, "rules[%.60s]", key->text);
    if (!ri)
        return cy_fail(r->b, key->line, key->col, path,
                       "unknown rule \"%.60s\" (see 'gpusched check --list-rules')", key->text);
    uint32_t nrules;
    uint32_t i = (uint32_t)(ri - gs_rules(&nrules));
    if (i < 64 && r->rule_key[i])
        return cy_fail(r->b, key->line, key->col, path,
                       "rule %s is configured twice (also as \"%.60s\" at line %u, column %u)", ri->id,
                       r->rule_key[i]->text, r->rule_key[i]->line, r->rule_key[i]->col);
    if (i < 64)
        r->rule_key[i] = key;
    gs_check_config *cfg = r->cfg;
    if (val->type == CY_SCALAR) {
        /* shorthand: off | on | <severity> | false | true */
        if (!strcmp(val->text, "off") || (val->plain && is_false(val->text))) {
            cfg->disabled[i] = true;
        } else if (!strcmp(val->text, "on") || (val->plain && is_true(val->text))) {
            cfg->disabled[i] = false;
        } else if (gs_severity_parse(val->text, &cfg->severity[i]) == 0) {
            cfg->has_severity[i] = true;
            cfg->disabled[i] = false;
        } else {
            return cy_fail(r->b, val->line, val->col, path,
                           "expected off, on, error, warning, info or a mapping {enabled, severity}, "
                           "got \"%.60s\"", val->text);
        }
        return 0;
    }
    if (expect(r, val, CY_MAP, path) < 0)
        return -1;
    for (const cy *k = val->first; k && k->next; k = k->next->next) {
        const cy *v = k->next;
        char p[sizeof path + 48];
        snprintf(p, sizeof p, "%s.%.40s", path, k->text);
        if (!strcmp(k->text, "enabled")) {
            bool on;
            if (read_bool(r, v, p, &on) < 0)
                return -1;
            cfg->disabled[i] = !on;
        } else if (!strcmp(k->text, "severity")) {
            if (expect(r, v, CY_SCALAR, p) < 0)
                return -1;
            if (gs_severity_parse(v->text, &cfg->severity[i]) != 0)
                return cy_fail(r->b, v->line, v->col, p,
                               "unknown severity \"%.40s\" (expected error, warning or info)", v->text);
            cfg->has_severity[i] = true;
        } else {
            return cy_fail(r->b, k->line, k->col, p, "unknown field (expected enabled, severity)");
        }
    }
    return 0;
}

/* hami: {forceOverwriteDefaultScheduler: bool} - how HAMi is installed (GS012). */
static int read_hami(cfg_reader *r, const cy *v)
{
    if (v->type == CY_SCALAR && v->plain && !strcmp(v->text, "null"))
        return 0;
    if (expect(r, v, CY_MAP, "hami") < 0)
        return -1;
    for (const cy *k = v->first; k && k->next; k = k->next->next) {
        char p[64];
        snprintf(p, sizeof p, "hami.%.40s", k->text);
        if (!strcmp(k->text, "forceOverwriteDefaultScheduler")) {
            if (read_bool(r, k->next, p, &r->cfg->hami_overwrites_default_scheduler) < 0)
                return -1;
        } else {
            return cy_fail(r->b, k->line, k->col, p, "unknown field (expected forceOverwriteDefaultScheduler)");
        }
    }
    return 0;
}

static int decode(cfg_reader *r, const cy *root)
{
    if (!root)
        return 0; /* an empty file keeps the defaults */
    if (root->type == CY_SCALAR && root->plain && (root->len == 0 || !strcmp(root->text, "null") ||
                                                   !strcmp(root->text, "~")))
        return 0;
    if (expect(r, root, CY_MAP, NULL) < 0)
        return -1;
    gs_check_config *cfg = r->cfg;
    for (const cy *k = root->first; k && k->next; k = k->next->next) {
        const cy *v = k->next;
        const char *key = k->text;
        if (!strcmp(key, "apiVersion")) {
            if (expect(r, v, CY_SCALAR, key) < 0)
                return -1;
            if (strcmp(v->text, "gpusched.io/v1alpha1") != 0)
                return cy_fail(r->b, v->line, v->col, key,
                               "unsupported apiVersion \"%.60s\" (expected gpusched.io/v1alpha1)", v->text);
        } else if (!strcmp(key, "kind")) {
            if (expect(r, v, CY_SCALAR, key) < 0)
                return -1;
            if (strcmp(v->text, "CheckConfig") != 0)
                return cy_fail(r->b, v->line, v->col, key, "expected kind CheckConfig, got \"%.60s\"",
                               v->text);
        } else if (!strcmp(key, "metadata")) {
            /* allowed, ignored: the file may be kept as a Kubernetes-style object */
        } else if (!strcmp(key, "rules")) {
            if (v->type == CY_SCALAR && v->plain && !strcmp(v->text, "null"))
                continue;
            if (expect(r, v, CY_MAP, key) < 0)
                return -1;
            for (const cy *rk = v->first; rk && rk->next; rk = rk->next->next)
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
            if (expect(r, v, CY_SCALAR, key) < 0)
                return -1;
            int found = -2;
            if (!strcmp(v->text, "auto"))
                found = GS_CHECK_MIG_INFER;
            for (int i = 0; i < 3; i++)
                if (!strcmp(v->text, names[i]))
                    found = i;
            if (found == -2)
                return cy_fail(r->b, v->line, v->col, key,
                               "unknown MIG strategy \"%.40s\" (expected auto, none, single or mixed)",
                               v->text);
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
    cy_builder b;
    memset(&b, 0, sizeof b);
    b.a = &cfg->arena;
    b.file = file;
    b.err = err;
    /* decode into a copy: a failed read leaves cfg as it was */
    gs_check_config tmp = *cfg;
    int rc = cy_parse(&b, data, len);
    if (rc == 0) {
        cfg_reader r;
        memset(&r, 0, sizeof r);
        r.b = &b;
        r.cfg = &tmp;
        rc = decode(&r, b.root);
    }
    if (rc == 0) {
        tmp.arena = cfg->arena; /* the arena grew through b.a */
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
