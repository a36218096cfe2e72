/*
 * cmd_check.c - `gpusched check`: run the GPU configuration rules (lib/check) over
 * manifests or a cluster dump and report findings as compiler-style text, JSON/YAML,
 * SARIF 2.1.0 or JUnit XML (docs/cli/check.md).
 *
 * The library gives findings already sorted (file, line, column, rule id, message) and
 * the objects each rule looked at; this file only formats. Every format is built in one
 * buffer and written at once. The summary line goes to stderr; the exit status is 1 when
 * an unsuppressed finding is at or above --fail-on (default error).
 */
#include "cmd_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "gpusched/check.h"
#include "gpusched/mig.h"
#include "output.h"

const char cli_check_usage[] =
    "usage: gpusched check [options] [INPUT...]\n"
    "\n"
    "Check manifests (files, directories, - for stdin; Helm and Kustomize output,\n"
    "kubectl get -o yaml|json dumps), or the cluster of the kubeconfig when no file is\n"
    "given, against the GPU configuration rules: GPU node taints and labels, GPU\n"
    "requests the API server or scheduler would reject or never place, tolerations, GPU\n"
    "daemons, quotas, priorities, sharing, and DRA claims, classes and selectors. Rules\n"
    "that relate objects see every object given.\n"
    "\n"
    "Options:\n"
    "  -o, --output FORMAT      text (default), json, yaml, sarif or junit\n"
    "      --output-file FILE   write the report to FILE (atomically) instead of stdout\n"
    "  -c, --config FILE        CheckConfig file: rules on/off and severities, GPU taint\n"
    "                           keys, pool labels, role label, MIG strategy\n"
    "      --fail-on LEVEL      exit 1 on findings at or above LEVEL: error (default),\n"
    "                           warning, info, or never\n"
    "      --enable RULES       enable rules (comma-separated ids or names)\n"
    "      --disable RULES      disable rules (comma-separated ids or names)\n"
    "      --gpu-taint-key KEY  a GPU taint key (repeatable; replaces the configured keys)\n"
    "      --mig-strategy S     the cluster's MIG strategy: auto (from the nodes), none,\n"
    "                           single or mixed\n"
    "      --extended-resource-toleration, --no-extended-resource-toleration\n"
    "                           the API server runs (or not) the ExtendedResourceToleration\n"
    "                           plugin; default: the configuration's, else on for GKE\n"
    "                           clusters (which run it), else off\n"
    "      --no-suppressed      text: do not list suppressed findings\n"
    "      --list-rules         print the rules (with the configuration applied) and exit\n"
    "  -v, --verbose            report skipped objects of unknown kinds (and the cluster\n"
    "                           read) on stderr\n"
    "  -h, --help               show this help\n"
    "\n"
    CLI_LIVE_USAGE("report only the objects of NS and cluster-scoped ones\n"
                   "                           (nodes, priority classes)\n")
    "\n"
    "Suppress a rule on one object with the annotation\n"
    "  gpusched.io/suppress: \"GS001,GS004: reason\"   (the reason is required)\n"
    "\n"
    "Exit status: 0 no finding at or above --fail-on, 1 findings at or above it,\n"
    "2 usage or input error, 3 internal error.\n";

enum {
    OPT_HELP,
    OPT_OUTPUT,
    OPT_OUTPUT_FILE,
    OPT_CONFIG,
    OPT_FAIL_ON,
    OPT_ENABLE,
    OPT_DISABLE,
    OPT_TAINT_KEY,
    OPT_MIG_STRATEGY,
    OPT_ERT,
    OPT_NO_ERT,
    OPT_NO_SUPPRESSED,
    OPT_LIST_RULES,
    OPT_VERBOSE,
};

static const cli_opt check_opts[] = {
    {"help", 'h', false, OPT_HELP},
    {"output", 'o', true, OPT_OUTPUT},
    {"output-file", 0, true, OPT_OUTPUT_FILE},
    {"config", 'c', true, OPT_CONFIG},
    {"fail-on", 0, true, OPT_FAIL_ON},
    {"enable", 0, true, OPT_ENABLE},
    {"disable", 0, true, OPT_DISABLE},
    {"gpu-taint-key", 0, true, OPT_TAINT_KEY},
    {"mig-strategy", 0, true, OPT_MIG_STRATEGY},
    {"extended-resource-toleration", 0, false, OPT_ERT},
    {"no-extended-resource-toleration", 0, false, OPT_NO_ERT},
    {"no-suppressed", 0, false, OPT_NO_SUPPRESSED},
    {"list-rules", 0, false, OPT_LIST_RULES},
    {"verbose", 'v', false, OPT_VERBOSE},
    CLI_LIVE_OPTS,
};

typedef enum check_format {
    FORMAT_TEXT = 0,
    FORMAT_JSON,
    FORMAT_YAML,
    FORMAT_SARIF,
    FORMAT_JUNIT,
} check_format;

#define FAIL_NEVER 3 /* above every severity */

typedef struct check_args {
    check_format format;
    const char *output_file;
    const char *config;
    int fail_on;                    /* gs_severity, or FAIL_NEVER */
    const char **rule_lists;        /* --enable / --disable values, in order */
    bool *rule_enable;
    size_t nrule_lists;
    const char **taint_keys;
    size_t ntaint_keys;
    int mig_strategy;
    bool has_mig_strategy;
    int ert; /* 1 on, 0 off, -1 unset */
    bool no_suppressed;
    bool list_rules;
    bool verbose;
    const char **inputs;
    size_t ninputs;
    cli_live live;
} check_args;

/* ---------------------------------------------------------------- arguments */
static int parse_args(int argc, char **argv, check_args *a, bool *help, gs_error *err)
{
    static const char *const formats[] = {"text", "json", "yaml", "sarif", "junit", NULL};
    static const char *const levels[] = {"info", "warning", "error", "never", NULL};
    static const char *const strategies[] = {"none", "single", "mixed", "auto", NULL};
    cli_args it;
    cli_args_init(&it, argc, argv, 1, check_opts, sizeof check_opts / sizeof check_opts[0]);
    a->fail_on = GS_SEV_ERROR;
    const char *value;
    int id, k;
    while ((id = cli_args_next(&it, &value, err)) != CLI_ARG_END) {
        switch (id) {
        case CLI_ARG_ERROR: return -1;
        case CLI_ARG_POSITIONAL: a->inputs[a->ninputs++] = value; break;
        case OPT_HELP: *help = true; return 0;
        case OPT_OUTPUT:
            if ((k = cli_parse_choice("--output", value, formats, err)) < 0)
                return -1;
            a->format = (check_format)k;
            break;
        case OPT_OUTPUT_FILE: a->output_file = value; break;
        case OPT_CONFIG: a->config = value; break;
        case OPT_FAIL_ON:
            if ((k = cli_parse_choice("--fail-on", value, levels, err)) < 0)
                return -1;
            a->fail_on = k; /* info 0, warning 1, error 2, never 3 */
            break;
        case OPT_ENABLE:
        case OPT_DISABLE:
            a->rule_enable[a->nrule_lists] = id == OPT_ENABLE;
            a->rule_lists[a->nrule_lists++] = value;
            break;
        case OPT_TAINT_KEY:
            if (!value[0])
                return gs_fail(err, GS_ERR_USAGE, "--gpu-taint-key: empty key");
            if (a->ntaint_keys >= GS_CHECK_MAX_KEYS)
                return gs_fail(err, GS_ERR_USAGE, "--gpu-taint-key: at most %d keys", GS_CHECK_MAX_KEYS);
            a->taint_keys[a->ntaint_keys++] = value;
            break;
        case OPT_MIG_STRATEGY:
            if ((k = cli_parse_choice("--mig-strategy", value, strategies, err)) < 0)
                return -1;
            a->mig_strategy = k == 3 ? GS_CHECK_MIG_INFER : k;
            a->has_mig_strategy = true;
            break;
        case OPT_ERT: a->ert = 1; break;
        case OPT_NO_ERT: a->ert = 0; break;
        case OPT_NO_SUPPRESSED: a->no_suppressed = true; break;
        case OPT_LIST_RULES: a->list_rules = true; break;
        case OPT_VERBOSE: a->verbose = true; break;
        default: {
            int r = cli_live_parse_opt(&a->live, id, value, err);
            if (r < 0)
                return -1;
            if (r == 0)
                return gs_fail(err, GS_ERR_INTERNAL, "unhandled option %d", id);
            break;
        }
        }
    }
    if (!a->list_rules &&
        cli_live_validate(&a->live, a->ninputs, "manifest files, directories or - for stdin", err) != 0)
        return -1;
    if (a->list_rules && a->format == FORMAT_JUNIT)
        return gs_fail(err, GS_ERR_USAGE, "--list-rules prints text, json, yaml or sarif");
    return 0;
}

/* "GS001,gpu-node-missing-labels" -> config */
static int apply_rule_list(gs_check_config *cfg, const char *list, bool enable, gs_error *err)
{
    uint32_t nrules;
    const gs_rule_info *rules = gs_rules(&nrules);
    const char *p = list;
    const char *opt = enable ? "--enable" : "--disable";
    if (!*p)
        return gs_fail(err, GS_ERR_USAGE, "%s: empty list", opt);
    while (*p) {
        size_t n = strcspn(p, ",");
        char name[64];
        if (n == 0 || n >= sizeof name)
            return gs_fail(err, GS_ERR_USAGE, "%s: expected rule ids or names separated by commas, got \"%s\"",
                           opt, list);
        memcpy(name, p, n);
        name[n] = '\0';
        const gs_rule_info *ri = gs_rule_find(name);
        if (!ri)
            return gs_fail(err, GS_ERR_USAGE, "%s: unknown rule \"%s\" (see 'gpusched check --list-rules')",
                           opt, name);
        cfg->disabled[ri - rules] = !enable;
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}

static int build_config(const check_args *a, gs_check_config *cfg, gs_error *err)
{
    if (a->config && gs_check_config_read(cfg, a->config, err) != 0)
        return -1;
    for (size_t i = 0; i < a->nrule_lists; i++)
        if (apply_rule_list(cfg, a->rule_lists[i], a->rule_enable[i], err) != 0)
            return -1;
    if (a->ntaint_keys) {
        for (size_t i = 0; i < a->ntaint_keys; i++)
            cfg->gpu_taint_keys[i] = a->taint_keys[i];
        cfg->ngpu_taint_keys = (uint32_t)a->ntaint_keys;
    }
    if (a->has_mig_strategy)
        cfg->mig_strategy = a->mig_strategy;
    if (a->ert >= 0) {
        cfg->extended_resource_toleration = a->ert == 1;
        cfg->ert_configured = true;
    }
    return 0;
}

/* ---------------------------------------------------------------- input pseudo-rule */
/* A file of the input that cannot be read as Kubernetes objects (not YAML/JSON, broken
 * YAML rules such as duplicate keys, not a Kubernetes object, an invalid field) is a
 * finding of the pseudo-rule "input" on that file; the rest of the input is checked. It
 * is not in the rule registry: it cannot be disabled or suppressed, and it is always an
 * error. */
static const gs_rule_info input_rule = {
    "input", "input-unreadable", GS_SEV_ERROR,
    "file of the input that cannot be read as Kubernetes objects: nothing in it was checked",
    "docs/cli/check.md#input-findings", false,
};


/* The check result with one "input" finding per unreadable file, in the result's order
 * (file, line, column, rule id, message). merged owns the new findings array and their
 * messages; view shares the rest with res. */
typedef struct merged_result {
    gs_check_result view;
    gs_finding *findings;
    gs_strbuf text;  /* messages, NUL-separated */
    uint32_t ninput;
} merged_result;

/* A file the reader could not take that is a mig-parted configuration (checked by `mig
 * validate`, not by `check`). */
static bool looks_like_mig_parted(const char *path)
{
    if (!path || !path[0] || !strcmp(path, "-"))
        return false;
    gs_error err;
    gs_error_clear(&err);
    size_t len = 0;
    char *data = gs_read_file(path, (size_t)1 << 20, &len, &err);
    if (!data)
        return false;
    bool yes = gs_mig_looks_like_parted(data, len);
    free(data);
    return yes;
}

static int merge_input_findings(const gs_check_result *res, const gs_snapshot *snap, bool live, merged_result *m)
{
    memset(m, 0, sizeof *m);
    m->view = *res;
    m->ninput = (uint32_t)snap->input_errors.n;
    if (!m->ninput)
        return 0;
    size_t n = res->nfindings + snap->input_errors.n;
    m->findings = calloc(n, sizeof *m->findings);
    size_t *offs = calloc(snap->input_errors.n, sizeof *offs);
    if (!m->findings || !offs) {
        free(offs);
        return -1;
    }
    for (size_t i = 0; i < snap->input_errors.n; i++) {
        const gs_read_issue *e = &snap->input_errors.v[i];
        offs[i] = m->text.len;
        gs_strbuf_printf(&m->text, "%s%s%s; nothing in this file was checked", e->object, e->object[0] ? ": " : "",
                         e->message);
        if (!live && looks_like_mig_parted(e->src.file)) /* a cluster's name is no file */
            gs_strbuf_printf(&m->text, " (it is a mig-parted configuration: check it with gpusched mig validate %s)",
                             e->src.file);
        gs_strbuf_putc(&m->text, '\0');
    }
    if (m->text.oom) {
        free(offs);
        return -1;
    }
    if (res->nfindings)
        memcpy(m->findings, res->findings, res->nfindings * sizeof *m->findings);
    for (size_t i = 0; i < snap->input_errors.n; i++) {
        const gs_read_issue *e = &snap->input_errors.v[i];
        gs_finding *f = &m->findings[res->nfindings + i];
        f->rule = &input_rule;
        f->severity = GS_SEV_ERROR;
        f->kind = "File";
        f->namespace_ = "";
        f->name = e->src.file;
        f->src = e->src;
        f->message = m->text.buf + offs[i];
        f->suppress_reason = "";
    }
    free(offs);
    qsort(m->findings, n, sizeof *m->findings, gs_finding_cmp);
    m->view.findings = m->findings;
    m->view.nfindings = (uint32_t)n;
    return 0;
}

static void merged_free(merged_result *m)
{
    free(m->findings);
    gs_strbuf_free(&m->text);
}

/* ---------------------------------------------------------------- live clusters */
/*
 * A cluster's objects have no position (line 0): the library's order (position, rule id,
 * message) would sort their findings by rule id alone. They are put in the order a kubectl
 * dump of the same cluster gives them instead: the order the objects were read (nodes,
 * namespaces, priority classes, resource quotas, PDBs, pods; each kind in the API server's
 * order), then rule id and message. So `check` on a cluster and on its dump differ only in
 * the locations (tests/live/compare-test.py).
 */
typedef struct ordinal {
    const char *kind, *ns, *name;
    uint32_t index;
} ordinal;

static struct {
    ordinal *v;
    size_t n, cap;
    bool on; /* findings and objects are ordered by ordinal */
} ords;

static int ordinal_cmp(const void *pa, const void *pb)
{
    const ordinal *a = pa, *b = pb;
    int r = strcmp(a->kind, b->kind);
    if (!r)
        r = strcmp(a->ns, b->ns);
    if (!r)
        r = strcmp(a->name, b->name);
    return r;
}

static int ordinal_add(const char *kind, const gs_meta *m)
{
    if (ords.n == ords.cap) {
        size_t cap = ords.cap ? ords.cap * 2 : 256;
        ordinal *v = realloc(ords.v, cap * sizeof *v);
        if (!v)
            return -1;
        ords.v = v;
        ords.cap = cap;
    }
    ords.v[ords.n++] = (ordinal){kind, m->namespace_ ? m->namespace_ : "",
                                 m->name[0] ? m->name : m->generate_name, m->input_index};
    return 0;
}

static int ordinals_build(const gs_snapshot *s)
{
    int rc = 0;
    for (size_t i = 0; i < s->nodes.n && !rc; i++)
        rc = ordinal_add("Node", &s->nodes.v[i].meta);
    for (size_t i = 0; i < s->namespaces.n && !rc; i++)
        rc = ordinal_add("Namespace", &s->namespaces.v[i].meta);
    for (size_t i = 0; i < s->priority_classes.n && !rc; i++)
        rc = ordinal_add("PriorityClass", &s->priority_classes.v[i].meta);
    for (size_t i = 0; i < s->quotas.n && !rc; i++)
        rc = ordinal_add("ResourceQuota", &s->quotas.v[i].meta);
    for (size_t i = 0; i < s->pdbs.n && !rc; i++)
        rc = ordinal_add("PodDisruptionBudget", &s->pdbs.v[i].meta);
    for (size_t i = 0; i < s->pods.n && !rc; i++)
        rc = ordinal_add("Pod", &s->pods.v[i].meta);
    for (size_t i = 0; i < s->workloads.n && !rc; i++)
        rc = ordinal_add(s->workloads.v[i].kind, &s->workloads.v[i].meta);
    for (size_t i = 0; i < s->device_classes.n && !rc; i++)
        rc = ordinal_add("DeviceClass", &s->device_classes.v[i].meta);
    for (size_t i = 0; i < s->claim_templates.n && !rc; i++)
        rc = ordinal_add("ResourceClaimTemplate", &s->claim_templates.v[i].meta);
    for (size_t i = 0; i < s->claims.n && !rc; i++)
        rc = ordinal_add("ResourceClaim", &s->claims.v[i].meta);
    if (!rc && ords.n)
        qsort(ords.v, ords.n, sizeof *ords.v, ordinal_cmp);
    ords.on = !rc;
    return rc;
}

/* The reading order of an object; objects the snapshot does not hold go last. */
static uint32_t ordinal_of(const char *kind, const char *ns, const char *name)
{
    ordinal key = {kind, ns, name, 0};
    const ordinal *o = ords.n ? bsearch(&key, ords.v, ords.n, sizeof *ords.v, ordinal_cmp) : NULL;
    return o ? o->index : UINT32_MAX;
}

static int ordinal_cmp3(uint32_t a, uint32_t b) { return a < b ? -1 : a > b; }

static int live_finding_cmp(const void *pa, const void *pb)
{
    const gs_finding *a = pa, *b = pb;
    int r = ordinal_cmp3(ordinal_of(a->kind, a->namespace_, a->name), ordinal_of(b->kind, b->namespace_, b->name));
    return r ? r : gs_finding_cmp(a, b); /* same object: same (empty) position */
}

/* (ordinal when on, else position), kind, namespace, name: the order of r->checked */
static int object_key_cmp(const gs_check_object *o, const char *kind, const char *ns, const char *name,
                          const gs_src *src)
{
    int c = ords.on ? ordinal_cmp3(ordinal_of(o->kind, o->namespace_, o->name), ordinal_of(kind, ns, name))
                    : gs_src_cmp(&o->src, src);
    if (!c)
        c = strcmp(o->kind, kind);
    if (!c)
        c = strcmp(o->namespace_, ns);
    if (!c)
        c = strcmp(o->name, name);
    return c;
}

static int live_object_cmp(const void *pa, const void *pb)
{
    const gs_check_object *a = pa, *b = pb;
    return object_key_cmp(a, b->kind, b->namespace_, b->name, &b->src);
}

/* -n NS: the objects of NS, NS's Namespace object and the other cluster-scoped objects */
static bool in_scope(const cli_live *live, const char *kind, const char *ns, const char *name)
{
    if (live->namespace_ && strcmp(kind, "Namespace") == 0)
        return strcmp(name, live->namespace_) == 0;
    return cli_live_ns_match(live, ns);
}

/* -n: only findings and objects in scope; a live cluster's in reading order. view's
 * arrays are rearranged in place. */
static void scope_result(gs_check_result *view, const cli_live *live)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < view->nfindings; i++)
        if (in_scope(live, view->findings[i].kind, view->findings[i].namespace_, view->findings[i].name))
            view->findings[k++] = view->findings[i];
    view->nfindings = k;
    k = 0;
    for (uint32_t i = 0; i < view->nchecked; i++)
        if (in_scope(live, view->checked[i].kind, view->checked[i].namespace_, view->checked[i].name))
            view->checked[k++] = view->checked[i];
    view->nchecked = k;
    view->objects = k;
    if (ords.on) {
        if (view->nfindings)
            qsort(view->findings, view->nfindings, sizeof *view->findings, live_finding_cmp);
        if (view->nchecked)
            qsort(view->checked, view->nchecked, sizeof *view->checked, live_object_cmp);
    }
}

/* ---------------------------------------------------------------- shared helpers */
static gs_severity rule_severity(const gs_check_config *cfg, uint32_t i, const gs_rule_info *r)
{
    return cfg->has_severity[i] ? cfg->severity[i] : r->severity;
}

static const char *file_of(const gs_src *src)
{
    return src->file && src->file[0] ? src->file : "-";
}

/* "Node gpu-a1" / "Deployment ml/train"; human: names escaped for text (gs_strbuf_text),
 * else raw (SARIF's JSON escapes them itself) */
static void object_text(gs_strbuf *sb, const char *kind, const char *ns, const char *name, bool human)
{
    if (!human) {
        gs_strbuf_printf(sb, "%s %s%s%s", kind, ns, ns[0] ? "/" : "", name);
        return;
    }
    gs_strbuf_text(sb, kind);
    gs_strbuf_putc(sb, ' ');
    gs_strbuf_text(sb, ns);
    gs_strbuf_puts(sb, ns[0] ? "/" : "");
    gs_strbuf_text(sb, name);
}

/* "file:line:col: " (line/col omitted when unknown), the file name escaped */
static void position_text(gs_strbuf *sb, const gs_src *src)
{
    gs_strbuf_text(sb, file_of(src));
    if (src->line) {
        gs_strbuf_printf(sb, ":%u", src->line);
        if (src->col)
            gs_strbuf_printf(sb, ":%u", src->col);
    }
    gs_strbuf_puts(sb, ": ");
}

static bool counts_as_failure(const gs_finding *f, int fail_on)
{
    return !f->suppressed && fail_on != FAIL_NEVER && (int)f->severity >= fail_on;
}

typedef struct tally {
    uint32_t by_sev[3];
    uint32_t suppressed;
    bool failed;
} tally;

static void count(const gs_check_result *r, int fail_on, tally *t)
{
    memset(t, 0, sizeof *t);
    for (uint32_t i = 0; i < r->nfindings; i++) {
        const gs_finding *f = &r->findings[i];
        if (f->suppressed)
            t->suppressed++;
        else if ((unsigned)f->severity < 3)
            t->by_sev[f->severity]++;
        if (counts_as_failure(f, fail_on))
            t->failed = true;
    }
}

static const char *fail_on_name(int fail_on)
{
    return fail_on == FAIL_NEVER ? "never" : gs_severity_name((gs_severity)fail_on);
}

/* ---------------------------------------------------------------- text */
static void format_text(const gs_check_result *r, bool no_suppressed, gs_strbuf *sb)
{
    for (uint32_t i = 0; i < r->nfindings; i++) {
        const gs_finding *f = &r->findings[i];
        if (f->suppressed && no_suppressed)
            continue;
        position_text(sb, &f->src);
        gs_strbuf_printf(sb, "%s: [%s %s] ", f->suppressed ? "note" : gs_severity_name(f->severity), f->rule->id,
                         f->rule->name);
        object_text(sb, f->kind, f->namespace_, f->name, true);
        gs_strbuf_puts(sb, ": ");
        gs_strbuf_text(sb, f->message);
        if (f->suppressed) {
            gs_strbuf_printf(sb, " (suppressed %s: ", gs_severity_name(f->severity));
            gs_strbuf_text(sb, f->suppress_reason);
            gs_strbuf_putc(sb, ')');
        }
        gs_strbuf_putc(sb, '\n');
    }
}

/* ---------------------------------------------------------------- JSON / YAML */
static void emit_summary(cli_emit *e, const gs_check_result *r, const tally *t, int fail_on)
{
    cli_emit_key(e, "summary");
    cli_emit_begin_object(e);
    cli_emit_kv_int(e, "objects", r->objects);
    cli_emit_kv_int(e, "errors", t->by_sev[GS_SEV_ERROR]);
    cli_emit_kv_int(e, "warnings", t->by_sev[GS_SEV_WARNING]);
    cli_emit_kv_int(e, "info", t->by_sev[GS_SEV_INFO]);
    cli_emit_kv_int(e, "suppressed", t->suppressed);
    cli_emit_kv_str(e, "failOn", fail_on_name(fail_on));
    cli_emit_kv_bool(e, "failed", t->failed);
    cli_emit_end_object(e);
}

static int format_document(const gs_check_result *r, int fail_on, cli_format fmt, gs_strbuf *sb)
{
    tally t;
    count(r, fail_on, &t);
    cli_emit e;
    cli_emit_init(&e, sb, fmt);
    cli_emit_begin_object(&e);
    cli_emit_kv_str(&e, "apiVersion", "gpusched.io/v1alpha1");
    cli_emit_kv_str(&e, "kind", "CheckResult");
    emit_summary(&e, r, &t, fail_on);
    cli_emit_key(&e, "findings");
    cli_emit_begin_array(&e);
    for (uint32_t i = 0; i < r->nfindings; i++) {
        const gs_finding *f = &r->findings[i];
        cli_emit_begin_object(&e);
        cli_emit_kv_str(&e, "ruleId", f->rule->id);
        cli_emit_kv_str(&e, "rule", f->rule->name);
        cli_emit_kv_str(&e, "severity", gs_severity_name(f->severity));
        cli_emit_kv_str(&e, "file", file_of(&f->src));
        cli_emit_kv_int(&e, "line", f->src.line);
        cli_emit_kv_int(&e, "column", f->src.col);
        cli_emit_kv_str(&e, "kind", f->kind);
        cli_emit_kv_str(&e, "namespace", f->namespace_);
        cli_emit_kv_str(&e, "name", f->name);
        cli_emit_kv_str(&e, "message", f->message);
        cli_emit_kv_bool(&e, "suppressed", f->suppressed);
        cli_emit_kv_str(&e, "suppressReason", f->suppressed ? f->suppress_reason : NULL);
        cli_emit_kv_str(&e, "doc", f->rule->doc);
        cli_emit_end_object(&e);
    }
    cli_emit_end_array(&e);
    cli_emit_end_object(&e);
    return cli_emit_finish(&e);
}

static void emit_rules_list(cli_emit *e, const gs_check_config *cfg)
{
    uint32_t n;
    const gs_rule_info *rules = gs_rules(&n);
    cli_emit_begin_array(e);
    for (uint32_t i = 0; i < n; i++) {
        cli_emit_begin_object(e);
        cli_emit_kv_str(e, "id", rules[i].id);
        cli_emit_kv_str(e, "name", rules[i].name);
        cli_emit_kv_str(e, "severity", gs_severity_name(rule_severity(cfg, i, &rules[i])));
        cli_emit_kv_str(e, "defaultSeverity", gs_severity_name(rules[i].severity));
        cli_emit_kv_bool(e, "enabled", !cfg->disabled[i]);
        cli_emit_kv_bool(e, "crossObject", rules[i].cross_object);
        cli_emit_kv_str(e, "summary", rules[i].summary);
        cli_emit_kv_str(e, "doc", rules[i].doc);
        cli_emit_end_object(e);
    }
    cli_emit_end_array(e);
}

/* ---------------------------------------------------------------- SARIF 2.1.0 */
static const char *sarif_level(gs_severity s)
{
    return s == GS_SEV_ERROR ? "error" : s == GS_SEV_WARNING ? "warning" : "note";
}

/* A path as a relative URI reference: unreserved bytes and '/' kept, the rest %XX. */
static void uri_of(const char *path, gs_strbuf *out)
{
    static const char hex[] = "0123456789ABCDEF";
    gs_strbuf_reset(out);
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
            *p == '.' || *p == '_' || *p == '~' || *p == '/')
            gs_strbuf_putc(out, (char)*p);
        else {
            gs_strbuf_putc(out, '%');
            gs_strbuf_putc(out, hex[*p >> 4]);
            gs_strbuf_putc(out, hex[*p & 15]);
        }
    }
}

static void emit_sarif_rule(cli_emit *e, const gs_rule_info *rule, bool enabled, gs_severity sev)
{
    cli_emit_begin_object(e);
    cli_emit_kv_str(e, "id", rule->id);
    cli_emit_kv_str(e, "name", rule->name);
    cli_emit_key(e, "shortDescription");
    cli_emit_begin_object(e);
    cli_emit_kv_str(e, "text", rule->summary);
    cli_emit_end_object(e);
    cli_emit_kv_str(e, "helpUri", rule->doc);
    cli_emit_key(e, "defaultConfiguration");
    cli_emit_begin_object(e);
    cli_emit_kv_bool(e, "enabled", enabled);
    cli_emit_kv_str(e, "level", sarif_level(sev));
    cli_emit_end_object(e);
    cli_emit_end_object(e);
}

/* The registry's rules, then the "input" pseudo-rule (index n) when a file was unreadable. */
static void emit_sarif_rules(cli_emit *e, const gs_check_config *cfg, bool with_input)
{
    uint32_t n;
    const gs_rule_info *rules = gs_rules(&n);
    cli_emit_key(e, "rules");
    cli_emit_begin_array(e);
    for (uint32_t i = 0; i < n; i++)
        emit_sarif_rule(e, &rules[i], !cfg->disabled[i], rule_severity(cfg, i, &rules[i]));
    if (with_input)
        emit_sarif_rule(e, &input_rule, true, GS_SEV_ERROR);
    cli_emit_end_array(e);
}

static int format_sarif(const gs_check_result *r, const gs_check_config *cfg, gs_strbuf *sb, bool rules_only,
                        bool with_input)
{
    uint32_t nrules;
    const gs_rule_info *rules = gs_rules(&nrules);
    gs_strbuf tmp = GS_STRBUF_INIT;
    cli_emit e;
    cli_emit_init(&e, sb, CLI_FORMAT_JSON);
    cli_emit_begin_object(&e);
    cli_emit_kv_str(&e, "$schema", "https://json.schemastore.org/sarif-2.1.0.json");
    cli_emit_kv_str(&e, "version", "2.1.0");
    cli_emit_key(&e, "runs");
    cli_emit_begin_array(&e);
    cli_emit_begin_object(&e);
    cli_emit_key(&e, "tool");
    cli_emit_begin_object(&e);
    cli_emit_key(&e, "driver");
    cli_emit_begin_object(&e);
    cli_emit_kv_str(&e, "name", CLI_PROGRAM);
    cli_emit_kv_str(&e, "version", CLI_VERSION);
    cli_emit_kv_str(&e, "semanticVersion", CLI_VERSION);
    emit_sarif_rules(&e, cfg, with_input);
    cli_emit_end_object(&e);
    cli_emit_end_object(&e);
    cli_emit_key(&e, "results");
    cli_emit_begin_array(&e);
    for (uint32_t i = 0; r && !rules_only && i < r->nfindings; i++) {
        const gs_finding *f = &r->findings[i];
        cli_emit_begin_object(&e);
        cli_emit_kv_str(&e, "ruleId", f->rule->id);
        cli_emit_kv_int(&e, "ruleIndex", f->rule == &input_rule ? nrules : f->rule - rules);
        cli_emit_kv_str(&e, "level", sarif_level(f->severity));
        cli_emit_key(&e, "message");
        cli_emit_begin_object(&e);
        gs_strbuf_reset(&tmp);
        object_text(&tmp, f->kind, f->namespace_, f->name, false);
        gs_strbuf_printf(&tmp, ": %s", f->message);
        cli_emit_kv_str(&e, "text", gs_strbuf_cstr(&tmp));
        cli_emit_end_object(&e);
        cli_emit_key(&e, "locations");
        cli_emit_begin_array(&e);
        cli_emit_begin_object(&e);
        cli_emit_key(&e, "physicalLocation");
        cli_emit_begin_object(&e);
        cli_emit_key(&e, "artifactLocation");
        cli_emit_begin_object(&e);
        uri_of(file_of(&f->src), &tmp);
        cli_emit_kv_str(&e, "uri", gs_strbuf_cstr(&tmp));
        cli_emit_end_object(&e);
        if (f->src.line) {
            cli_emit_key(&e, "region");
            cli_emit_begin_object(&e);
            cli_emit_kv_int(&e, "startLine", f->src.line);
            if (f->src.col)
                cli_emit_kv_int(&e, "startColumn", f->src.col);
            cli_emit_end_object(&e);
        }
        cli_emit_end_object(&e);
        cli_emit_key(&e, "logicalLocations");
        cli_emit_begin_array(&e);
        cli_emit_begin_object(&e);
        gs_strbuf_reset(&tmp);
        gs_strbuf_printf(&tmp, "%s%s%s", f->namespace_, f->namespace_[0] ? "/" : "", f->name);
        cli_emit_kv_str(&e, "name", gs_strbuf_cstr(&tmp));
        cli_emit_kv_str(&e, "kind", f->kind);
        cli_emit_end_object(&e);
        cli_emit_end_array(&e);
        cli_emit_end_object(&e);
        cli_emit_end_array(&e);
        if (f->suppressed) {
            cli_emit_key(&e, "suppressions");
            cli_emit_begin_array(&e);
            cli_emit_begin_object(&e);
            cli_emit_kv_str(&e, "kind", "inSource");
            cli_emit_kv_str(&e, "justification", f->suppress_reason);
            cli_emit_end_object(&e);
            cli_emit_end_array(&e);
        }
        cli_emit_end_object(&e);
    }
    cli_emit_end_array(&e);
    cli_emit_end_object(&e);
    cli_emit_end_array(&e);
    cli_emit_end_object(&e);
    if (tmp.oom)
        sb->oom = true;
    gs_strbuf_free(&tmp);
    return cli_emit_finish(&e);
}

/* ---------------------------------------------------------------- JUnit XML */
/* Character data (already escaped as human text where it quotes the input): no
 * character XML 1.0 forbids, no workflow command at a line start. */
static void xml_text(gs_strbuf *sb, const char *s) { gs_strbuf_xml(sb, s); }

/* An attribute value from the input: one line of escaped text, then XML. */
static void xml_attr(gs_strbuf *sb, const char *s)
{
    gs_strbuf one = GS_STRBUF_INIT;
    gs_strbuf_text(&one, s);
    gs_strbuf_xml(sb, gs_strbuf_cstr(&one));
    if (one.oom)
        sb->oom = true;
    gs_strbuf_free(&one);
}


/* The checked object of a finding: r->checked is sorted by (src, kind, ns, name), a live
 * cluster's by (ordinal, kind, ns, name). */
static int32_t object_of(const gs_check_result *r, const gs_finding *f)
{
    uint32_t lo = 0, hi = r->nchecked;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const gs_check_object *o = &r->checked[mid];
        int c = object_key_cmp(o, f->kind, f->namespace_, f->name, &f->src);
        if (!c)
            return (int32_t)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* One testcase: object `obj` judged by rule `k`; its findings are fidx[lo..hi). */
static void junit_testcase(gs_strbuf *suite, const gs_check_result *r, const gs_rule_info *rule,
                           const gs_check_object *obj, const uint32_t *fidx, uint32_t lo, uint32_t hi,
                           uint32_t *failed, uint32_t *skipped)
{
    gs_strbuf name = GS_STRBUF_INIT;
    object_text(&name, obj->kind, obj->namespace_, obj->name, true);
    gs_strbuf_puts(suite, "    <testcase classname=\"");
    xml_text(suite, rule->id);
    gs_strbuf_putc(suite, '.');
    xml_text(suite, rule->name);
    gs_strbuf_puts(suite, "\" name=\"");
    xml_text(suite, gs_strbuf_cstr(&name));
    gs_strbuf_puts(suite, "\" file=\"");
    xml_attr(suite, file_of(&obj->src));
    gs_strbuf_putc(suite, '"');
    if (obj->src.line) /* a live cluster's objects have no line */
        gs_strbuf_printf(suite, " line=\"%u\"", obj->src.line);
    const gs_finding *first = NULL, *first_sup = NULL;
    for (uint32_t i = lo; i < hi; i++) {
        const gs_finding *f = &r->findings[fidx[i]];
        if (f->rule != rule)
            continue;
        if (f->suppressed && !first_sup)
            first_sup = f;
        if (!f->suppressed && !first)
            first = f;
    }
    if (first) {
        (*failed)++;
        gs_strbuf_puts(suite, ">\n      <failure type=\"");
        xml_text(suite, gs_severity_name(first->severity));
        gs_strbuf_puts(suite, "\" message=\"");
        xml_attr(suite, first->message);
        gs_strbuf_puts(suite, "\">");
        gs_strbuf line = GS_STRBUF_INIT;
        for (uint32_t i = lo; i < hi; i++) {
            const gs_finding *f = &r->findings[fidx[i]];
            if (f->rule != rule || f->suppressed)
                continue;
            gs_strbuf_reset(&line);
            position_text(&line, &f->src);
            gs_strbuf_printf(&line, "%s: [%s %s] %s: ", gs_severity_name(f->severity), f->rule->id,
                             f->rule->name, gs_strbuf_cstr(&name));
            gs_strbuf_text(&line, f->message);
            gs_strbuf_putc(&line, '\n');
            xml_text(suite, gs_strbuf_cstr(&line));
        }
        if (line.oom)
            suite->oom = true;
        gs_strbuf_free(&line);
        gs_strbuf_puts(suite, "</failure>\n    </testcase>\n");
    } else if (first_sup) {
        (*skipped)++;
        gs_strbuf_puts(suite, ">\n      <skipped message=\"suppressed: ");
        xml_attr(suite, first_sup->suppress_reason);
        gs_strbuf_puts(suite, "\"/>\n    </testcase>\n");
    } else {
        gs_strbuf_puts(suite, "/>\n");
    }
    if (name.oom)
        suite->oom = true;
    gs_strbuf_free(&name);
}

/*
 * JUnit: one testsuite per enabled rule, one testcase per object that rule checked, a
 * failure holding every unsuppressed finding of the pair, a skipped element for a pair
 * whose findings are all suppressed. Findings are bucketed by object first (counting
 * sort), so the report costs rules x objects + findings.
 */
static int format_junit(const gs_check_result *r, const gs_check_config *cfg, gs_strbuf *sb)
{
    uint32_t nrules;
    const gs_rule_info *rules = gs_rules(&nrules);
    uint32_t *start = calloc((size_t)r->nchecked + 2, sizeof *start);
    uint32_t *fidx = malloc((r->nfindings ? r->nfindings : 1) * sizeof *fidx);
    int32_t *obj_of = malloc((r->nfindings ? r->nfindings : 1) * sizeof *obj_of);
    if (!start || !fidx || !obj_of) {
        free(start);
        free(fidx);
        free(obj_of);
        sb->oom = true;
        return 0;
    }
    /* objects without a match (none expected) go to bucket nchecked */
    for (uint32_t i = 0; i < r->nfindings; i++) {
        obj_of[i] = object_of(r, &r->findings[i]);
        start[(obj_of[i] < 0 ? r->nchecked : (uint32_t)obj_of[i]) + 1]++;
    }
    for (uint32_t o = 0; o <= r->nchecked; o++)
        start[o + 1] += start[o];
    {
        uint32_t *fill = calloc((size_t)r->nchecked + 1, sizeof *fill);
        if (!fill) {
            free(start);
            free(fidx);
            free(obj_of);
            sb->oom = true;
            return 0;
        }
        for (uint32_t i = 0; i < r->nfindings; i++) {
            uint32_t b = obj_of[i] < 0 ? r->nchecked : (uint32_t)obj_of[i];
            fidx[start[b] + fill[b]++] = i;
        }
        free(fill);
    }

    uint32_t tests = 0, failures = 0, skipped = 0;
    gs_strbuf body = GS_STRBUF_INIT, suite = GS_STRBUF_INIT;
    for (uint32_t k = 0; k < nrules; k++) {
        if (cfg->disabled[k])
            continue;
        gs_strbuf_reset(&suite);
        uint32_t st = 0, sf = 0, ss = 0;
        for (uint32_t o = 0; o < r->nchecked; o++) {
            if (!(r->checked[o].rules & ((uint64_t)1 << k)))
                continue;
            st++;
            junit_testcase(&suite, r, &rules[k], &r->checked[o], fidx, start[o], start[o + 1], &sf, &ss);
        }
        gs_strbuf_puts(&body, "  <testsuite name=\"");
        xml_text(&body, rules[k].id);
        gs_strbuf_putc(&body, ' ');
        xml_text(&body, rules[k].name);
        gs_strbuf_printf(&body, "\" tests=\"%u\" failures=\"%u\" errors=\"0\" skipped=\"%u\"", st, sf, ss);
        if (!st) {
            gs_strbuf_puts(&body, "/>\n");
        } else {
            gs_strbuf_puts(&body, ">\n");
            gs_strbuf_add(&body, gs_strbuf_cstr(&suite), suite.len);
            gs_strbuf_puts(&body, "  </testsuite>\n");
        }
        if (suite.oom)
            body.oom = true;
        tests += st;
        failures += sf;
        skipped += ss;
    }
    /* the "input" pseudo-rule: one failed testcase per unreadable file */
    uint32_t ninput = 0;
    for (uint32_t i = 0; i < r->nfindings; i++)
        ninput += r->findings[i].rule == &input_rule;
    if (ninput) {
        gs_strbuf_puts(&body, "  <testsuite name=\"");
        xml_text(&body, input_rule.id);
        gs_strbuf_putc(&body, ' ');
        xml_text(&body, input_rule.name);
        gs_strbuf_printf(&body, "\" tests=\"%u\" failures=\"%u\" errors=\"0\" skipped=\"0\">\n", ninput, ninput);
        gs_strbuf line = GS_STRBUF_INIT;
        for (uint32_t i = 0; i < r->nfindings; i++) {
            const gs_finding *f = &r->findings[i];
            if (f->rule != &input_rule)
                continue;
            gs_strbuf_puts(&body, "    <testcase classname=\"");
            xml_text(&body, input_rule.id);
            gs_strbuf_putc(&body, '.');
            xml_text(&body, input_rule.name);
            gs_strbuf_puts(&body, "\" name=\"");
            gs_strbuf_reset(&line);
            object_text(&line, f->kind, f->namespace_, f->name, true);
            xml_text(&body, gs_strbuf_cstr(&line));
            gs_strbuf_puts(&body, "\" file=\"");
            xml_attr(&body, file_of(&f->src));
            gs_strbuf_putc(&body, '"');
            if (f->src.line)
                gs_strbuf_printf(&body, " line=\"%u\"", f->src.line);
            gs_strbuf_puts(&body, ">\n      <failure type=\"error\" message=\"");
            xml_attr(&body, f->message);
            gs_strbuf_puts(&body, "\">");
            gs_strbuf_reset(&line);
            position_text(&line, &f->src);
            gs_strbuf_printf(&line, "error: [%s %s] ", input_rule.id, input_rule.name);
            object_text(&line, f->kind, f->namespace_, f->name, true);
            gs_strbuf_puts(&line, ": ");
            gs_strbuf_text(&line, f->message);
            gs_strbuf_putc(&line, '\n');
            xml_text(&body, gs_strbuf_cstr(&line));
            gs_strbuf_puts(&body, "</failure>\n    </testcase>\n");
        }
        if (line.oom)
            body.oom = true;
        gs_strbuf_free(&line);
        gs_strbuf_puts(&body, "  </testsuite>\n");
        tests += ninput;
        failures += ninput;
    }
    gs_strbuf_puts(sb, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    gs_strbuf_printf(sb, "<testsuites name=\"gpusched check\" tests=\"%u\" failures=\"%u\" errors=\"0\" "
                         "skipped=\"%u\">\n",
                     tests, failures, skipped);
    gs_strbuf_add(sb, gs_strbuf_cstr(&body), body.len);
    gs_strbuf_puts(sb, "</testsuites>\n");
    if (body.oom)
        sb->oom = true;
    gs_strbuf_free(&suite);
    gs_strbuf_free(&body);
    free(start);
    free(fidx);
    free(obj_of);
    return 0;
}

/* ---------------------------------------------------------------- --list-rules */
static int list_rules(const check_args *a, const gs_check_config *cfg, gs_strbuf *sb)
{
    if (a->format == FORMAT_SARIF)
        return format_sarif(NULL, cfg, sb, true, false);
    if (a->format == FORMAT_JSON || a->format == FORMAT_YAML) {
        cli_emit e;
        cli_emit_init(&e, sb, a->format == FORMAT_JSON ? CLI_FORMAT_JSON : CLI_FORMAT_YAML);
        emit_rules_list(&e, cfg);
        return cli_emit_finish(&e);
    }
    uint32_t n;
    const gs_rule_info *rules = gs_rules(&n);
    cli_table t;
    cli_table_init(&t, 4);
    cli_table_cell(&t, "ID");
    cli_table_cell(&t, "NAME");
    cli_table_cell(&t, "SEVERITY");
    cli_table_cell(&t, "SUMMARY");
    for (uint32_t i = 0; i < n; i++) {
        cli_table_cell(&t, "%s", rules[i].id);
        cli_table_cell(&t, "%s", rules[i].name);
        cli_table_cell(&t, "%s", cfg->disabled[i] ? "off" : gs_severity_name(rule_severity(cfg, i, &rules[i])));
        cli_table_cell(&t, "%s", rules[i].summary);
    }
    cli_table_render(&t, sb, "");
    if (t.oom)
        sb->oom = true;
    cli_table_free(&t);
    return 0;
}

/* ---------------------------------------------------------------- command */
int gs_cmd_check(int argc, char **argv)
{
    check_args a;
    memset(&a, 0, sizeof a);
    a.ert = -1;
    gs_error err;
    gs_error_clear(&err);
    size_t slots = (size_t)(argc > 0 ? argc : 1);
    a.inputs = calloc(slots, sizeof *a.inputs);
    a.rule_lists = calloc(slots, sizeof *a.rule_lists);
    a.rule_enable = calloc(slots, sizeof *a.rule_enable);
    a.taint_keys = calloc(slots, sizeof *a.taint_keys);
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    gs_snapshot snap;
    gs_snapshot_init(&snap);
    gs_check_result res;
    memset(&res, 0, sizeof res);
    merged_result all;
    memset(&all, 0, sizeof all);
    gs_strbuf out = GS_STRBUF_INIT;
    int status = CLI_EXIT_OK;
    bool help = false;

    if (!a.inputs || !a.rule_lists || !a.rule_enable || !a.taint_keys) {
        gs_fail(&err, GS_ERR_NOMEM, "out of memory");
        status = cli_report_error(&err);
        goto done;
    }
    if (parse_args(argc, argv, &a, &help, &err) != 0) {
        status = err.code == GS_ERR_USAGE ? cli_usage_error("check", &err) : cli_report_error(&err);
        goto done;
    }
    if (help) {
        status = cli_print_usage(cli_check_usage);
        goto done;
    }
    if (build_config(&a, &cfg, &err) != 0) {
        status = err.code == GS_ERR_USAGE ? cli_usage_error("check", &err) : cli_report_error(&err);
        goto done;
    }
    if (a.list_rules) {
        if (list_rules(&a, &cfg, &out) != 0) {
            gs_fail(&err, GS_ERR_INTERNAL, "check: the rule list document is malformed");
            status = cli_report_error(&err);
        } else if (cli_write_output(&out, a.output_file, &err) != 0) {
            status = cli_report_error(&err);
        }
        goto done;
    }
    /* a file that cannot be read is a finding ("input"); the others are checked */
    gs_read_opts ropts;
    memset(&ropts, 0, sizeof ropts);
    ropts.keep_going = true;
    if (cli_read_cluster(&a.live, &snap, a.inputs, a.ninputs, &ropts, a.verbose, &err) != 0) {
        status = cli_report_error(&err);
        goto done;
    }
    cfg.extended_resource_toleration =
        cli_ert(&snap, cfg.ert_configured ? cfg.extended_resource_toleration : -1);
    if (gs_check_run(&snap, &cfg, &res, &err) != 0) {
        status = cli_report_error(&err);
        goto done;
    }
    if (merge_input_findings(&res, &snap, a.live.used, &all) != 0 || (a.live.used && ordinals_build(&snap) != 0)) {
        gs_fail(&err, GS_ERR_NOMEM, "out of memory");
        status = cli_report_error(&err);
        goto done;
    }
    scope_result(&all.view, &a.live);
    int rc = 0;
    switch (a.format) {
    case FORMAT_TEXT: format_text(&all.view, a.no_suppressed, &out); break; /* written as text below */
    case FORMAT_JSON: rc = format_document(&all.view, a.fail_on, CLI_FORMAT_JSON, &out); break;
    case FORMAT_YAML: rc = format_document(&all.view, a.fail_on, CLI_FORMAT_YAML, &out); break;
    case FORMAT_SARIF: rc = format_sarif(&all.view, &cfg, &out, false, all.ninput > 0); break;
    case FORMAT_JUNIT: rc = format_junit(&all.view, &cfg, &out); break;
    }
    if (rc != 0) {
        gs_fail(&err, GS_ERR_INTERNAL, "check: the output document is malformed");
        status = cli_report_error(&err);
        goto done;
    }
    if ((a.format == FORMAT_TEXT ? cli_write_text_output : cli_write_output)(&out, a.output_file, &err) != 0) {
        status = cli_report_error(&err);
        goto done;
    }
    tally t;
    count(&all.view, a.fail_on, &t);
    fprintf(stderr, "gpusched check: %u object%s, %u error%s, %u warning%s, %u info, %u suppressed\n",
            all.view.objects, all.view.objects == 1 ? "" : "s", t.by_sev[GS_SEV_ERROR], t.by_sev[GS_SEV_ERROR] == 1 ? "" : "s",
            t.by_sev[GS_SEV_WARNING], t.by_sev[GS_SEV_WARNING] == 1 ? "" : "s", t.by_sev[GS_SEV_INFO],
            t.suppressed);
    status = t.failed ? CLI_EXIT_FOUND : CLI_EXIT_OK;
done:
    free(ords.v);
    memset(&ords, 0, sizeof ords);
    gs_strbuf_free(&out);
    merged_free(&all);
    gs_check_result_free(&res);
    gs_snapshot_free(&snap);
    gs_check_config_free(&cfg);
    free(a.inputs);
    free(a.rule_lists);
    free(a.rule_enable);
    free(a.taint_keys);
    return status;
}
