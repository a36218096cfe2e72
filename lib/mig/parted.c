/*
 * parted.c - mig-parted configuration files (nvidia.md 2.1): a strict parser that keeps
 * file:line:col of every config, entry and mig-devices key, and the validator that checks
 * every entry's GPU instances against the placement rules of the models it applies to.
 *
 * Schema rules follow mig-parted's api/spec/v1 decoder: top level `version` (must be "v1")
 * and `mig-configs` (a non-empty map of non-empty entry lists) and nothing else; entries
 * have `devices` ("all" or a list of integers) and `mig-enabled` (bool), optionally
 * `device-filter` (a PCI id string or a list of them) and `mig-devices` (profile -> count;
 * required when mig-enabled is true, empty when it is false). Unknown fields are errors.
 * A schema problem skips the entry (or config) it is in and is reported; parsing goes on
 * so one run lists every problem of a file.
 */
#include <stdio.h>
#include <string.h>

#include "mig_int.h"

#define MAX_DEVICE_INDEX 255
#define MAX_FILTERS 64
#define MAX_DEVCOUNTS 64

/* ---------------------------------------------------------------- entries */
static const char *const entry_keys[] = {"devices", "device-filter", "mig-enabled", "mig-devices",
                                         NULL};

/* "0x20B010DE", "0x20B010DE:0x1234abcd" or decimal: the primary 32-bit id. */
static int parse_pci_id(const char *s, uint32_t *out)
{
    size_t n = strcspn(s, ":");
    if (s[n] == ':' && strchr(s + n + 1, ':'))
        return -1;
    uint64_t v = 0;
    size_t i = 0;
    bool hex = n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    if (hex)
        i = 2;
    if (i >= n)
        return -1;
    for (; i < n; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (hex && c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (hex && c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return -1;
        v = v * (hex ? 16 : 10) + d;
        if (v > UINT32_MAX)
            return -1;
    }
    if (s[n] == ':') { /* subsystem id: syntax only, we never see subsystems offline */
        uint32_t sub;
        if (parse_pci_id(s + n + 1, &sub) != 0)
            return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

static int parse_devices(gs_arena *a, const char *file, const gs_yn *v, const char *path,
                         gs_mig_entry *e, gs_error *err)
{
    if (v->type == GS_YN_SCALAR && !v->null) {
        if (strcmp(v->u.text, "all") != 0)
            return gs_mig__y_fail(err, file, v, GS_ERR_INVALID, path,
                                  "devices must be \"all\" or a list of GPU indexes, got \"%.40s\"",
                                  v->u.text);
        e->all_devices = true;
        return 0;
    }
    if (v->type != GS_YN_SEQ)
        return gs_mig__y_fail(err, file, v, GS_ERR_INVALID, path,
                              "devices must be \"all\" or a list of GPU indexes");
    if (v->len > MAX_DEVICE_INDEX + 1)
        return gs_mig__y_fail(err, file, v, GS_ERR_LIMIT, path, "more than %d devices",
                              MAX_DEVICE_INDEX + 1);
    e->devices = gs_arena_alloc(a, sizeof *e->devices * (v->len ? v->len : 1));
    if (!e->devices)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    uint8_t seen[(MAX_DEVICE_INDEX + 8) / 8] = {0};
    for (const gs_yn *it = v->u.first; it; it = it->next) {
        int64_t d;
        if (gs_mig__y_int(err, file, it, path, 0, MAX_DEVICE_INDEX, &d) != 0)
            return -1;
        if (seen[d / 8] & (1u << (d % 8)))
            return gs_mig__y_fail(err, file, it, GS_ERR_INVALID, path,
                                  "GPU %lld is listed twice", (long long)d);
        seen[d / 8] |= (uint8_t)(1u << (d % 8));
        e->devices[e->ndevices++] = (uint16_t)d;
    }
    return 0;
}

static int parse_filter(gs_arena *a, const char *file, const gs_yn *v, const char *path,
                        gs_mig_entry *e, gs_error *err)
{
    e->filter_line = v->line;
    e->filter_col = v->col;
    const gs_yn *one = v->type == GS_YN_SCALAR ? v : NULL;
    if (!one && v->type != GS_YN_SEQ)
        return gs_mig__y_fail(err, file, v, GS_ERR_INVALID, path,
                              "device-filter must be a PCI id string or a list of them");
    uint32_t n = one ? 1 : v->len;
    if (n > MAX_FILTERS)
        return gs_mig__y_fail(err, file, v, GS_ERR_LIMIT, path, "more than %d device filters",
                              MAX_FILTERS);
    e->filters = gs_arena_alloc(a, sizeof *e->filters * (n ? n : 1));
    if (!e->filters)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    for (const gs_yn *it = one ? one : v->u.first; it; it = one ? NULL : it->next) {
        const char *s;
        if (gs_mig__y_str(err, file, it, path, &s) != 0)
            return -1;
        if (!*s && one) /* an empty filter string means no filter, as in mig-parted */
            return 0;
        uint32_t id;
        if (parse_pci_id(s, &id) != 0)
            return gs_mig__y_fail(err, file, it, GS_ERR_INVALID, path,
                                  "\"%.40s\" is not a PCI id like 0x20B010DE", s);
        e->filters[e->nfilters++] = id;
    }
    return 0;
}

static int parse_mig_devices(gs_arena *a, const char *file, const gs_yn *v,
                             const char *path, gs_mig_entry *e, gs_error *err)
{
    e->mig_devices_line = v->line;
    e->mig_devices_col = v->col;
    if (v->type != GS_YN_MAP)
        return gs_mig__y_fail(err, file, v, GS_ERR_INVALID, path,
                              "mig-devices must be a mapping of profile to count");
    if (v->len > MAX_DEVCOUNTS)
        return gs_mig__y_fail(err, file, v, GS_ERR_LIMIT, path, "more than %d mig-devices",
                              MAX_DEVCOUNTS);
    e->mig_devices = gs_arena_alloc(a, sizeof *e->mig_devices * (v->len ? v->len : 1));
    if (!e->mig_devices)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    for (const gs_yn *k = v->u.first; k; k = k->next->next) {
        const char *name;
        if (gs_mig__y_str(err, file, k, path, &name) != 0)
            return -1;
        if (!gs_mig__devkey_syntax_ok(name))
            return gs_mig__y_fail(err, file, k, GS_ERR_INVALID, path,
                                  "\"%.40s\" is not a MIG profile ([<C>c.]<G>g.<GB>gb[+attr])",
                                  name);
        int64_t count;
        if (gs_mig__y_int(err, file, k->next, path, 0, 1000, &count) != 0)
            return -1;
        gs_mig_devcount *d = &e->mig_devices[e->nmig_devices++];
        d->profile = name;
        d->count = (uint32_t)count;
        d->line = k->line;
        d->col = k->col;
        size_t i = 0;
        while (name[i] >= '0' && name[i] <= '9')
            i++;
        if (name[i] == 'c') {
            unsigned c = 0;
            for (size_t j = 0; j < i; j++)
                c = c * 10 + (unsigned)(name[j] - '0');
            d->ci_slices = (uint8_t)c;
        }
    }
    return 0;
}

int gs_mig__parse_entry(gs_arena *a, const char *file, const gs_yn *map, const char *path,
                        gs_mig_entry *e, gs_error *err)
{
    memset(e, 0, sizeof *e);
    if (map->type != GS_YN_MAP)
        return gs_mig__y_fail(err, file, map, GS_ERR_INVALID, path,
                              "an entry must be a mapping with devices and mig-enabled");
    e->line = map->line;
    e->col = map->col;
    if (gs_mig__y_known_keys(err, file, map, path, entry_keys) != 0)
        return -1;
    const gs_yn *dev = gs_mig__y_get(map, "devices");
    const gs_yn *en = gs_mig__y_get(map, "mig-enabled");
    const gs_yn *flt = gs_mig__y_get(map, "device-filter");
    const gs_yn *md = gs_mig__y_get(map, "mig-devices");
    if (!dev)
        return gs_mig__y_fail(err, file, map, GS_ERR_INVALID, path, "missing required field devices");
    if (!en)
        return gs_mig__y_fail(err, file, map, GS_ERR_INVALID, path,
                              "missing required field mig-enabled");
    char sub[GS_ERR_PATH_MAX];
    snprintf(sub, sizeof sub, "%.200s.devices", path);
    if (parse_devices(a, file, dev, sub, e, err) != 0)
        return -1;
    snprintf(sub, sizeof sub, "%.200s.mig-enabled", path);
    if (gs_mig__y_bool(err, file, en, sub, &e->mig_enabled) != 0)
        return -1;
    if (flt && !flt->null) {
        snprintf(sub, sizeof sub, "%.200s.device-filter", path);
        if (parse_filter(a, file, flt, sub, e, err) != 0)
            return -1;
    }
    snprintf(sub, sizeof sub, "%.200s.mig-devices", path);
    if (md && !md->null) {
        if (parse_mig_devices(a, file, md, sub, e, err) != 0)
            return -1;
    } else if (e->mig_enabled) {
        return gs_mig__y_fail(err, file, map, GS_ERR_INVALID, path,
                              "missing required field mig-devices when mig-enabled is true "
                              "(write mig-devices: {} for no instances)");
    }
    if (!e->mig_enabled && e->nmig_devices)
        return gs_mig__y_fail(err, file, md, GS_ERR_INVALID, sub,
                              "MIG devices listed while mig-enabled is false");
    return 0;
}

/* ---------------------------------------------------------------- files */
static bool contains(const char *data, size_t len, const char *word)
{
    size_t wl = strlen(word);
    for (size_t i = 0; i + wl <= len; i++)
        if (data[i] == word[0] && !memcmp(data + i, word, wl))
            return true;
    return false;
}

bool gs_mig_looks_like_parted(const char *data, size_t len)
{
    /* a top-level key starts a line at column 0 */
    static const char *const keys[] = {"mig-configs:", "version:", "\"mig-configs\"", NULL};
    for (size_t i = 0; i < len; i++) {
        if (i && data[i - 1] != '\n')
            continue;
        if (len - i >= 11 && !memcmp(data + i, "apiVersion:", 11))
            return false;
        for (int k = 0; keys[k]; k++) {
            size_t kl = strlen(keys[k]);
            if (len - i >= kl && !memcmp(data + i, keys[k], kl))
                return true;
        }
    }
    /* JSON: look for the key anywhere */
    return contains(data, len, "\"mig-configs\"");
}

bool gs_mig_has_parted_config(const char *data, size_t len)
{
    if (gs_mig_looks_like_parted(data, len))
        return true;
    /* a ConfigMap or a multi-document file: a mig-configs key anywhere, unless the file is
     * a gpusched MIG document */
    return contains(data, len, "mig-configs") && !contains(data, len, "MigPlan") &&
           !contains(data, len, "MigInventory");
}

static int add_problem(gs_mig_parted *p, const gs_error *e)
{
    if (p->nproblems >= GS_MIG_MAX_PROBLEMS) {
        p->problems_truncated = true;
        return 0;
    }
    if (!p->problems) {
        p->problems = gs_arena_alloc(&p->arena, sizeof *p->problems * GS_MIG_MAX_PROBLEMS);
        if (!p->problems)
            return -1;
    }
    p->problems[p->nproblems++] = *e;
    return 0;
}

static const char *const top_keys[] = {"version", "mig-configs", NULL};

/* One mig-parted document (a mapping with version and mig-configs): its configs are
 * appended to out, schema problems listed. */
static int parse_config_root(gs_mig_parted *out, const gs_yn *root, uint32_t source,
                             gs_error *err)
{
    const char *file = out->file;
    if (root->type != GS_YN_MAP)
        return gs_mig__y_fail(err, file, root, GS_ERR_INVALID, NULL,
                              "not a mig-parted configuration: expected a mapping with "
                              "version and mig-configs");
    gs_error pe;
    if (gs_mig__y_known_keys(&pe, file, root, NULL, top_keys) != 0 && add_problem(out, &pe))
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    const gs_yn *ver = gs_mig__y_get(root, "version");
    const char *vs;
    if (!ver) {
        gs_mig__y_fail(&pe, file, root, GS_ERR_INVALID, "version", "missing required field version");
        if (add_problem(out, &pe))
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    } else if (gs_mig__y_str(&pe, file, ver, "version", &vs) != 0) {
        if (add_problem(out, &pe))
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    } else if (strcmp(vs, "v1") != 0) {
        gs_mig__y_fail(&pe, file, ver, GS_ERR_INVALID, "version",
                       "unknown version \"%.20s\" (expected v1)", vs);
        if (add_problem(out, &pe))
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    const gs_yn *cfgs = gs_mig__y_get(root, "mig-configs");
    if (!cfgs || cfgs->null || cfgs->type != GS_YN_MAP || cfgs->len == 0) {
        gs_mig__y_fail(&pe, file, cfgs ? cfgs : root, GS_ERR_INVALID, "mig-configs",
                       !cfgs ? "missing mig-configs"
                             : "mig-configs must be a mapping with at least one named config");
        if (add_problem(out, &pe))
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return 0;
    }
    if (cfgs->len > GS_MIG_MAX_CONFIGS)
        return gs_mig__y_fail(err, file, cfgs, GS_ERR_LIMIT, "mig-configs",
                              "more than %d configs", GS_MIG_MAX_CONFIGS);
    if (out->nconfigs + cfgs->len > GS_MIG_MAX_CONFIGS)
        return gs_mig__y_fail(err, file, cfgs, GS_ERR_LIMIT, "mig-configs",
                              "more than %d configs", GS_MIG_MAX_CONFIGS);
    gs_mig_config *grown =
        gs_arena_alloc(&out->arena, sizeof *out->configs * (out->nconfigs + cfgs->len));
    if (!grown)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    if (out->nconfigs)
        memcpy(grown, out->configs, sizeof *out->configs * out->nconfigs);
    out->configs = grown;
    for (const gs_yn *k = cfgs->u.first; k; k = k->next->next) {
        const gs_yn *v = k->next;
        const char *name;
        char path[GS_ERR_PATH_MAX];
        if (gs_mig__y_str(&pe, file, k, "mig-configs", &name) != 0) {
            if (add_problem(out, &pe))
                return gs_fail(err, GS_ERR_NOMEM, "out of memory");
            continue;
        }
        snprintf(path, sizeof path, "mig-configs.%.120s", name);
        if (v->type != GS_YN_SEQ || v->len == 0) {
            gs_mig__y_fail(&pe, file, v, GS_ERR_INVALID, path,
                           "a config must be a non-empty list of entries");
            if (add_problem(out, &pe))
                return gs_fail(err, GS_ERR_NOMEM, "out of memory");
            continue;
        }
        if (v->len > GS_MIG_MAX_ENTRIES)
            return gs_mig__y_fail(err, file, v, GS_ERR_LIMIT, path, "more than %d entries",
                                  GS_MIG_MAX_ENTRIES);
        gs_mig_config *c = &out->configs[out->nconfigs++];
        c->source = source;
        c->name = name;
        c->line = k->line;
        c->col = k->col;
        c->entries = gs_arena_alloc(&out->arena, sizeof *c->entries * v->len);
        if (!c->entries)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        uint32_t idx = 0;
        for (const gs_yn *it = v->u.first; it; it = it->next, idx++) {
            char epath[GS_ERR_PATH_MAX];
            snprintf(epath, sizeof epath, "%.200s[%u]", path, idx);
            gs_mig_entry e;
            if (gs_mig__parse_entry(&out->arena, file, it, epath, &e, &pe) != 0) {
                if (pe.code == GS_ERR_NOMEM)
                    return gs_fail(err, GS_ERR_NOMEM, "out of memory");
                if (add_problem(out, &pe))
                    return gs_fail(err, GS_ERR_NOMEM, "out of memory");
                /* keep the slot so entry indexes match the file; mark it unusable */
                memset(&e, 0, sizeof e);
                e.line = -1;
            }
            c->entries[c->nentries++] = e;
        }
    }
    return 0;
}

/* A document is a bare mig-parted config when it has none of a Kubernetes object's keys. */
static bool is_k8s_object(const gs_yn *doc)
{
    return gs_mig__y_get(doc, "apiVersion") || gs_mig__y_get(doc, "kind");
}

static const char *scalar_or(const gs_yn *n, const char *dflt)
{
    return n && n->type == GS_YN_SCALAR && !n->null && strlen(n->u.text) == n->len ? n->u.text
                                                                                   : dflt;
}

/* The mig-parted configs a ConfigMap holds as strings under data. Returns the number read
 * (>= 0) or -1 with err. */
static int parse_configmap(gs_mig_parted *out, const char *data, size_t len,
                           const gs_yn *obj, uint32_t doc, gs_error *err)
{
    const gs_yn *d = gs_mig__y_get(obj, "data");
    if (!d || d->type != GS_YN_MAP)
        return 0;
    const char *name = scalar_or(gs_mig__y_get(gs_mig__y_get(obj, "metadata"), "name"), "");
    int found = 0;
    for (const gs_yn *k = d->u.first; k; k = k->next->next) {
        const gs_yn *v = k->next;
        if (v->type != GS_YN_SCALAR || v->null || strlen(v->u.text) != v->len ||
            !gs_mig_looks_like_parted(v->u.text, v->len))
            continue;
        gs_mig_embed em;
        bool exact = gs_mig__y_embed_init(&em, v, data, len);
        gs_yn *root;
        if (gs_mig__yaml_parse(&out->arena, out->file, v->u.text, v->len, &root, err) != 0) {
            if (err) {
                gs_mig__y_embed_map(&em, &err->line, &err->col);
                char msg[GS_ERR_MSG_MAX];
                snprintf(msg, sizeof msg, "%s (in the config under data.%.60s of ConfigMap %.60s)",
                         err->msg, k->u.text, name);
                snprintf(err->msg, sizeof err->msg, "%s", msg);
            }
            return -1;
        }
        if (!root)
            continue;
        gs_mig__y_embed_tree(&em, root);
        if (out->nsources % 8 == 0) {
            gs_mig_source *g = gs_arena_alloc(&out->arena, sizeof *g * (out->nsources + 8));
            if (!g)
                return gs_fail(err, GS_ERR_NOMEM, "out of memory");
            if (out->nsources)
                memcpy(g, out->sources, sizeof *g * out->nsources);
            out->sources = g;
        }
        gs_mig_source *src = &out->sources[out->nsources];
        src->kind = "ConfigMap";
        src->name = name;
        src->key = k->u.text;
        src->document = doc;
        src->line = k->line;
        src->col = k->col;
        src->approximate = !exact;
        if (parse_config_root(out, root, out->nsources++, err) != 0)
            return -1;
        found++;
    }
    return found;
}

/* One document of the file: a bare config, a ConfigMap, a List of objects, or another
 * object (ignored). Returns the configs found (>= 0) or -1 with err. */
static int parse_document(gs_mig_parted *out, const char *data, size_t len, const gs_yn *doc,
                          uint32_t index, bool in_list, gs_error *err)
{
    if (doc->type != GS_YN_MAP)
        return 0;
    if (!is_k8s_object(doc)) {
        if (in_list)
            return 0;
        return parse_config_root(out, doc, UINT32_MAX, err) == 0 ? 1 : -1;
    }
    const char *kind = scalar_or(gs_mig__y_get(doc, "kind"), "");
    if (!strcmp(kind, "ConfigMap"))
        return parse_configmap(out, data, len, doc, index, err);
    if (!strcmp(kind, "List") && !in_list) {
        const gs_yn *items = gs_mig__y_get(doc, "items");
        int found = 0;
        if (items && items->type == GS_YN_SEQ)
            for (const gs_yn *it = items->u.first; it; it = it->next) {
                int k = parse_document(out, data, len, it, index, true, err);
                if (k < 0)
                    return -1;
                found += k;
            }
        return found;
    }
    return 0;
}

int gs_mig_parted_parse(gs_mig_parted *out, const char *file, const char *data, size_t len,
                        gs_error *err)
{
    memset(out, 0, sizeof *out);
    gs_arena_init(&out->arena, 0);
    out->file = gs_arena_strdup(&out->arena, file ? file : "-");
    if (!out->file)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    file = out->file;
    gs_yn *first;
    uint32_t ndocs;
    if (gs_mig__yaml_parse_docs(&out->arena, file, data, len, &first, &ndocs, err) != 0)
        return -1;
    if (!first)
        return gs_error_set(err, GS_ERR_INVALID, file, 0, 0, NULL,
                            "empty input: expected a mig-parted configuration");
    out->documents = ndocs;
    if (ndocs == 1 && first->type != GS_YN_MAP)
        return gs_mig__y_fail(err, file, first, GS_ERR_INVALID, NULL,
                              "not a mig-parted configuration: expected a mapping with "
                              "version and mig-configs");
    int found = 0;
    uint32_t i = 0;
    for (const gs_yn *doc = first; doc; doc = doc->next, i++) {
        int k = parse_document(out, data, len, doc, i, false, err);
        if (k < 0)
            return -1;
        if (k == 0)
            out->ignored++;
        found += k;
    }
    if (!found)
        return gs_mig__y_fail(err, file, first, GS_ERR_INVALID, NULL,
                              "not a mig-parted configuration: no document has version and "
                              "mig-configs, and no ConfigMap holds one as a string under data");
    return 0;
}

void gs_mig_parted_free(gs_mig_parted *p)
{
    if (!p)
        return;
    gs_arena_free(&p->arena);
    memset(p, 0, sizeof *p);
}

/* ---------------------------------------------------------------- validation */
static gs_mig_check *new_check(gs_mig_report *r, uint32_t config, uint32_t entry)
{
    if (r->n == r->cap) {
        uint32_t cap = r->cap ? r->cap * 2 : 16;
        gs_mig_check *v = realloc(r->v, sizeof *v * cap);
        if (!v)
            return NULL;
        r->v = v;
        r->cap = cap;
    }
    gs_mig_check *c = &r->v[r->n++];
    memset(c, 0, sizeof *c);
    c->config = config;
    c->entry = entry;
    return c;
}

static void count_verdict(gs_mig_report *r, const gs_mig_check *c)
{
    if (c->verdict == GS_MIG_OK)
        r->nok++;
    else if (c->verdict == GS_MIG_INVALID)
        r->ninvalid++;
    else if (c->verdict == GS_MIG_UNKNOWN_MODEL)
        r->nunknown++;
    else
        r->nskipped++;
}

static bool model_has_pci(const gs_mig_model *m, uint32_t filter)
{
    if ((filter & 0xffffu) != 0x10DEu)
        return false;
    uint16_t dev = (uint16_t)(filter >> 16);
    for (int i = 0; i < 8 && m->pci_device_ids[i]; i++)
        if (m->pci_device_ids[i] == dev)
            return true;
    return false;
}

static bool entry_selects_model(const gs_mig_entry *e, const gs_mig_model *m)
{
    if (e->nfilters == 0)
        return true;
    for (uint32_t i = 0; i < e->nfilters; i++)
        if (model_has_pci(m, e->filters[i]))
            return true;
    return false;
}

/* Check one entry on one model; fills the check's verdict, layout and err. Returns 1
 * when the verdict is INVALID because a profile does not exist on the model, else 0. */
static int check_on_model(const gs_mig_parted *cfg, const gs_mig_config *c, const gs_mig_entry *e,
                           const char *path, const gs_mig_model *m, gs_mig_check *ck)
{
    ck->model = m;
    if (!e->mig_enabled) {
        ck->verdict = GS_MIG_OK;
        gs_error_set(&ck->err, GS_OK, cfg->file, e->line, e->col, path, "MIG disabled");
        return 0;
    }
    uint8_t counts[GS_MIG_MAX_PROFILES];
    char msg[400];
    const gs_mig_devcount *bad = NULL;
    if (gs_mig__entry_counts(m, e, counts, msg, sizeof msg, &bad) != 0) {
        ck->verdict = GS_MIG_INVALID;
        char p2[GS_ERR_PATH_MAX];
        snprintf(p2, sizeof p2, "%.200s.mig-devices", path);
        gs_error_set(&ck->err, GS_ERR_INVALID, cfg->file, bad ? bad->line : e->line,
                     bad ? bad->col : e->col, p2, "%s", msg);
        return 1;
    }
    if (gs_mig_layout_explain(m, counts, msg, sizeof msg)) {
        ck->verdict = GS_MIG_INVALID;
        char p2[GS_ERR_PATH_MAX];
        snprintf(p2, sizeof p2, "%.200s.mig-devices", path);
        gs_error_set(&ck->err, GS_ERR_INVALID, cfg->file, e->mig_devices_line,
                     e->mig_devices_col, p2, "%s", msg);
        return 0;
    }
    gs_mig_layout_from_counts(m, counts, &ck->layout);
    ck->verdict = GS_MIG_OK;
    gs_error_set(&ck->err, GS_OK, cfg->file, e->line, e->col, path, "fits %s", m->name);
    (void)c;
    return 0;
}

/* Two entries describe the same GPU instances (mig-enabled and mig-devices as written). */
static bool same_request(const gs_mig_entry *a, const gs_mig_entry *b)
{
    if (a->mig_enabled != b->mig_enabled || a->nmig_devices != b->nmig_devices)
        return false;
    for (uint32_t i = 0; i < a->nmig_devices; i++) {
        bool found = false;
        for (uint32_t j = 0; j < b->nmig_devices && !found; j++)
            found = !strcmp(a->mig_devices[i].profile, b->mig_devices[j].profile) &&
                    a->mig_devices[i].count == b->mig_devices[j].count;
        if (!found)
            return false;
    }
    return true;
}

/* The lowest GPU index both entries select, or -1. */
static int devices_overlap(const gs_mig_entry *a, const gs_mig_entry *b)
{
    if (a->all_devices && b->all_devices)
        return 0;
    if (a->all_devices)
        return b->ndevices ? b->devices[0] : -1;
    if (b->all_devices)
        return a->ndevices ? a->devices[0] : -1;
    int best = -1;
    for (uint32_t i = 0; i < a->ndevices; i++)
        for (uint32_t j = 0; j < b->ndevices; j++)
            if (a->devices[i] == b->devices[j] && (best < 0 || a->devices[i] < best))
                best = a->devices[i];
    return best;
}

static bool filters_overlap(const gs_mig_entry *a, const gs_mig_entry *b, const gs_mig_model *m)
{
    if (m)
        return entry_selects_model(a, m) && entry_selects_model(b, m);
    if (!a->nfilters || !b->nfilters)
        return true;
    for (uint32_t i = 0; i < a->nfilters; i++)
        for (uint32_t j = 0; j < b->nfilters; j++)
            if (a->filters[i] == b->filters[j])
                return true;
    return false;
}

static int validate_entry(const gs_mig_parted *cfg, uint32_t ci, uint32_t ei,
                          const gs_mig_model *model, gs_mig_report *rep)
{
    const gs_mig_config *c = &cfg->configs[ci];
    const gs_mig_entry *e = &c->entries[ei];
    char path[GS_ERR_PATH_MAX];
    snprintf(path, sizeof path, "mig-configs.%.120s[%u]", c->name, ei);
    uint32_t nmodels;
    const gs_mig_model *all = gs_mig_models(&nmodels);

    /* entries overlapping an earlier one of the same config on some GPU */
    for (uint32_t j = 0; j < ei; j++) {
        const gs_mig_entry *o = &c->entries[j];
        if (o->line < 0)
            continue;
        int gpu = devices_overlap(o, e);
        if (gpu < 0 || !filters_overlap(o, e, model) || same_request(o, e))
            continue;
        gs_mig_check *ck = new_check(rep, ci, ei);
        if (!ck)
            return -1;
        ck->model = model;
        ck->verdict = GS_MIG_INVALID;
        gs_error_set(&ck->err, GS_ERR_INVALID, cfg->file, e->line, e->col, path,
                     "selects GPU %d like entry %u (line %d) with a different layout: mig-parted "
                     "applies both in order, so `mig-parted assert` can never succeed",
                     gpu, j, o->line);
        count_verdict(rep, ck);
        return 0;
    }

    if (model) {
        gs_mig_check *ck = new_check(rep, ci, ei);
        if (!ck)
            return -1;
        if (!entry_selects_model(e, model)) {
            ck->model = model;
            ck->verdict = GS_MIG_SKIPPED;
            gs_error_set(&ck->err, GS_OK, cfg->file, e->filter_line, e->filter_col, path,
                         "device-filter does not select %s", model->name);
        } else {
            check_on_model(cfg, c, e, path, model, ck);
        }
        count_verdict(rep, ck);
        return 0;
    }

    if (e->nfilters) {
        uint32_t checked = 0;
        for (uint32_t i = 0; i < nmodels; i++) {
            if (!entry_selects_model(e, &all[i]))
                continue;
            gs_mig_check *ck = new_check(rep, ci, ei);
            if (!ck)
                return -1;
            check_on_model(cfg, c, e, path, &all[i], ck);
            count_verdict(rep, ck);
            checked++;
        }
        /* PCI ids of GPUs the catalog does not know: not checked, said once */
        char ids[160];
        size_t o = 0;
        uint32_t unknown = 0;
        ids[0] = '\0';
        for (uint32_t f = 0; f < e->nfilters; f++) {
            bool known = false;
            for (uint32_t i = 0; i < nmodels && !known; i++)
                known = model_has_pci(&all[i], e->filters[f]);
            if (known)
                continue;
            if (unknown++ < 4 && o < sizeof ids)
                o += (size_t)snprintf(ids + o, sizeof ids - o, "%s0x%08X", o ? ", " : "",
                                      e->filters[f]);
        }
        if (unknown) {
            gs_mig_check *ck = new_check(rep, ci, ei);
            if (!ck)
                return -1;
            ck->verdict = GS_MIG_UNKNOWN_MODEL;
            gs_error_set(&ck->err, GS_OK, cfg->file, e->filter_line, e->filter_col, path,
                         "unknown model, not checked: device-filter %s%s %s no GPU in the MIG "
                         "catalog",
                         ids, unknown > 4 ? ", ..." : "", unknown > 1 ? "name" : "names");
            count_verdict(rep, ck);
        }
        (void)checked;
        return 0;
    }

    /* no filter and no model: valid when the layout fits some GPU that has its profiles */
    gs_mig_check *ck = new_check(rep, ci, ei);
    if (!ck)
        return -1;
    char why[GS_ERR_MSG_MAX];
    size_t o = 0;
    why[0] = '\0';
    bool any_offers = false, any_known = false;
    for (uint32_t i = 0; i < nmodels && i < 32; i++) {
        gs_mig_check tmp;
        memset(&tmp, 0, sizeof tmp);
        int unknown_profile = check_on_model(cfg, c, e, path, &all[i], &tmp);
        if (tmp.verdict == GS_MIG_OK) {
            if (!ck->models_ok) {
                ck->model = &all[i];
                ck->layout = tmp.layout;
                ck->err = tmp.err;
            }
            ck->models_ok |= 1u << i;
            continue;
        }
        if (unknown_profile) { /* this model does not offer the profiles: not a candidate */
            for (uint32_t d = 0; d < e->nmig_devices && !any_known; d++) {
                uint8_t pi, cs;
                any_known = gs_mig__devkey_parse(&all[i], e->mig_devices[d].profile, &pi, &cs) == 0;
            }
            continue;
        }
        any_offers = true;
        if (o < sizeof why)
            o += (size_t)snprintf(why + o, sizeof why - o, "%s%s", o ? "; " : "", tmp.err.msg);
    }
    if (ck->models_ok) {
        ck->verdict = GS_MIG_OK;
    } else if (!any_offers && !any_known) {
        /* profiles of a GPU the catalog does not know at all: not checked */
        char names[256];
        size_t k = 0;
        names[0] = '\0';
        for (uint32_t i = 0; i < e->nmig_devices && k < sizeof names; i++)
            k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", i ? ", " : "",
                                  e->mig_devices[i].profile);
        ck->verdict = GS_MIG_UNKNOWN_MODEL;
        gs_error_set(&ck->err, GS_OK, cfg->file, e->mig_devices_line, e->mig_devices_col, path,
                     "unknown model, not checked: no GPU in the MIG catalog offers %s (a GPU "
                     "newer than the catalog, or a misspelt profile)",
                     names);
    } else {
        ck->verdict = GS_MIG_INVALID;
        if (!any_offers) {
            char names[256];
            size_t k = 0;
            names[0] = '\0';
            for (uint32_t i = 0; i < e->nmig_devices && k < sizeof names; i++)
                k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", i ? ", " : "",
                                      e->mig_devices[i].profile);
            gs_error_set(&ck->err, GS_ERR_INVALID, cfg->file, e->mig_devices_line,
                         e->mig_devices_col, path,
                         "no GPU in the MIG catalog offers all of these profiles: %s", names);
        } else {
            gs_error_set(&ck->err, GS_ERR_INVALID, cfg->file, e->mig_devices_line,
                         e->mig_devices_col, path, "fits no GPU: %s", why);
        }
    }
    count_verdict(rep, ck);
    return 0;
}

int gs_mig_parted_validate(const gs_mig_parted *cfg, const gs_mig_model *model,
                           gs_mig_report *rep, gs_error *err)
{
    for (uint32_t i = 0; i < cfg->nproblems; i++) {
        gs_mig_check *ck = new_check(rep, UINT32_MAX, UINT32_MAX);
        if (!ck)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        ck->verdict = GS_MIG_INVALID;
        ck->err = cfg->problems[i];
        count_verdict(rep, ck);
    }
    for (uint32_t ci = 0; ci < cfg->nconfigs; ci++) {
        const gs_mig_config *c = &cfg->configs[ci];
        for (uint32_t ei = 0; ei < c->nentries; ei++) {
            if (c->entries[ei].line < 0)
                continue; /* already reported as a parse problem */
            if (validate_entry(cfg, ci, ei, model, rep) != 0)
                return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        }
    }
    return 0;
}

void gs_mig_report_free(gs_mig_report *rep)
{
    if (!rep)
        return;
    free(rep->v);
    memset(rep, 0, sizeof *rep);
}

/* ---------------------------------------------------------------- node layouts */
int gs_mig__parse_entries_for_node(gs_arena *a, const char *file, const gs_yn *seq,
                                   const char *path, const gs_mig_model *m, uint16_t ngpus,
                                   gs_mig_layout *layouts, gs_error *err)
{
    if (seq->type != GS_YN_SEQ)
        return gs_mig__y_fail(err, file, seq, GS_ERR_INVALID, path,
                              "currentConfig must be a built-in config name or a list of "
                              "mig-parted entries");
    if (seq->len > GS_MIG_MAX_ENTRIES)
        return gs_mig__y_fail(err, file, seq, GS_ERR_LIMIT, path, "more than %d entries",
                              GS_MIG_MAX_ENTRIES);
    /* GPUs no entry selects stay as they are: MIG disabled */
    for (uint16_t g = 0; g < ngpus; g++)
        memset(&layouts[g], 0, sizeof layouts[g]);
    int *set_by = calloc(ngpus ? ngpus : 1, sizeof *set_by);
    gs_mig_entry *prev = calloc(seq->len ? seq->len : 1, sizeof *prev);
    if (!set_by || !prev) {
        free(set_by);
        free(prev);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    int rc = 0;
    uint32_t idx = 0;
    for (const gs_yn *it = seq->u.first; it && rc == 0; it = it->next, idx++) {
        char epath[GS_ERR_PATH_MAX];
        snprintf(epath, sizeof epath, "%.200s[%u]", path, idx);
        gs_mig_entry *e = &prev[idx];
        if (gs_mig__parse_entry(a, file, it, epath, e, err) != 0) {
            rc = -1;
            break;
        }
        if (!entry_selects_model(e, m))
            continue;
        gs_mig_layout l;
        memset(&l, 0, sizeof l);
        if (e->mig_enabled) {
            uint8_t counts[GS_MIG_MAX_PROFILES];
            char msg[400];
            const gs_mig_devcount *bad = NULL;
            if (gs_mig__entry_counts(m, e, counts, msg, sizeof msg, &bad) != 0) {
                rc = gs_error_set(err, GS_ERR_INVALID, file, bad ? bad->line : e->line,
                                  bad ? bad->col : e->col, epath, "%s", msg);
                break;
            }
            if (gs_mig_layout_explain(m, counts, msg, sizeof msg)) {
                rc = gs_error_set(err, GS_ERR_INVALID, file, e->mig_devices_line,
                                  e->mig_devices_col, epath, "%s", msg);
                break;
            }
            gs_mig_layout_from_counts(m, counts, &l);
        }
        uint32_t nd = e->all_devices ? ngpus : e->ndevices;
        for (uint32_t k = 0; k < nd; k++) {
            uint32_t g = e->all_devices ? k : e->devices[k];
            if (g >= ngpus) {
                rc = gs_error_set(err, GS_ERR_INVALID, file, e->line, e->col, epath,
                                  "GPU %u does not exist: the node has %u GPUs", g, ngpus);
                break;
            }
            if (set_by[g] && !same_request(&prev[set_by[g] - 1], e)) {
                rc = gs_error_set(err, GS_ERR_INVALID, file, e->line, e->col, epath,
                                  "GPU %u is also selected by entry %d with a different layout",
                                  g, set_by[g] - 1);
                break;
            }
            set_by[g] = (int)idx + 1;
            layouts[g] = l;
        }
    }
    free(set_by);
    free(prev);
    return rc;
}

int gs_mig_parted_gpu_layout(const gs_mig_parted *cfg, const char *name, const gs_mig_model *model,
                             uint32_t gpu, gs_mig_layout *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    const gs_mig_config *c = NULL;
    for (uint32_t i = 0; cfg && i < cfg->nconfigs && !c; i++)
        if (strcmp(cfg->configs[i].name, name) == 0)
            c = &cfg->configs[i];
    if (!c) {
        if (gs_mig_builtin_layout(model, name, out))
            return 1;
        return gs_fail(err, GS_ERR_INVALID, "MIG config \"%s\" is %s for %s", name,
                       cfg ? "neither in the mig-parted file nor a built-in config"
                           : "not a built-in config",
                       model->name);
    }
    for (uint32_t k = 0; k < c->nentries; k++) {
        const gs_mig_entry *e = &c->entries[k];
        bool selects = e->all_devices;
        for (uint32_t d = 0; d < e->ndevices && !selects; d++)
            selects = e->devices[d] == gpu;
        if (!selects || !entry_selects_model(e, model))
            continue;
        char path[GS_ERR_PATH_MAX];
        snprintf(path, sizeof path, "mig-configs.%.100s[%u]", c->name, k);
        gs_mig_check ck;
        memset(&ck, 0, sizeof ck);
        check_on_model(cfg, c, e, path, model, &ck);
        if (ck.verdict != GS_MIG_OK) {
            if (err)
                *err = ck.err;
            return -1;
        }
        *out = ck.layout;
        out->mig_enabled = e->mig_enabled;
        return 1;
    }
    return 0;
}
