/*
 * cmd_mig.c - `gpusched mig profiles | validate | plan` (docs/cli/mig.md).
 *
 *   profiles [MODEL]   the catalog: per model its profiles and legal placements; facts the
 *                      reference marks unverified carry '*', estimated sizes '~'
 *   validate FILE...   mig-parted files and MigPlan/MigInventory node layouts; one line per
 *                      checked entry; exit 0 valid, 1 some layout invalid, 2 unreadable
 *   plan FILE          right-sized profiles and per-GPU layouts; text report, -o json,
 *                      --mig-parted-config FILE (written atomically), kubectl label lines;
 *                      exit 0 every replica placed, 1 some could not be, 2 input errors
 *
 * All output is built in a buffer and written at once; errors go to stderr.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "cmd_mig.h"
#include "output.h"

#include "gpusched/mig.h"

const char cli_mig_usage[] =
    "usage: gpusched mig COMMAND [ARGS]\n"
    "\n"
    "Offline MIG tools: the profile catalog, mig-parted validation, and a planner that\n"
    "right-sizes MIG profiles for inference services and packs them onto GPUs.\n"
    "\n"
    "Commands:\n"
    "  profiles [MODEL]   profiles and legal placements of every MIG-capable GPU, or of one\n"
    "                     (a catalog name or an nvidia.com/gpu.product value)\n"
    "  validate FILE...   check mig-parted configs and node layouts against the placement rules\n"
    "  plan FILE          choose profiles and per-GPU layouts for inference services\n"
    "\n"
    "Run 'gpusched mig COMMAND --help' for the options of a command.\n";

static const char profiles_usage[] =
    "usage: gpusched mig profiles [MODEL] [-o text|json|yaml]\n"
    "\n"
    "List the MIG profiles of every GPU model in the catalog (A30, A100 40/80 GB, H100\n"
    "80/94/96 GB, H200, GH200, B200, GB200, B300, GB300, RTX PRO 6000 Blackwell Server\n"
    "Edition), or of MODEL: a catalog name (A100-80GB) or an\n"
    "nvidia.com/gpu.product label value (NVIDIA-A100-SXM4-80GB, NVIDIA-H100-80GB-HBM3-MIG-1g.10gb).\n"
    "Columns: profile name, NVML profile id, compute and memory slices, memory, instances\n"
    "per GPU, and the memory slices where an instance may start.\n"
    "\n"
    "Marks: '*' a fact the reference (nvidia.md) tags unverified or inferred - check it on\n"
    "hardware; '~' an estimated memory size (none was observed for this profile); ID '?'\n"
    "an NVML profile id nobody has observed.\n"
    "\n"
    "Options:\n"
    "  -o, --output FORMAT   text (default), json or yaml\n"
    "  -h, --help            show this help\n"
    "\n"
    "Exit status: 0, or 2 for an unknown MODEL or bad usage.\n";

static const char validate_usage[] =
    "usage: gpusched mig validate FILE... [--model MODEL] [--strict] [-o text|json|yaml] [-q]\n"
    "\n"
    "Check mig-parted configuration files (version: v1, mig-configs, devices, device-filter,\n"
    "mig-enabled, mig-devices) and the node layouts (currentConfig) of MigPlan or\n"
    "MigInventory documents. A mig-parted config may also be given as NVIDIA ships it: a\n"
    "ConfigMap holding it as a string under data (default-mig-parted-config, also as\n"
    "`kubectl get cm -o yaml|json` prints it), or in a multi-document file next to other\n"
    "objects, which are ignored; positions then point into the embedded config.\n"
    "Every entry's GPU instances must fit the placement rules of the GPU model it applies\n"
    "to: the profiles exist on it, per-profile maximum counts, at most one +me instance, a\n"
    "+me.all instance only next to -me ones, and non-overlapping legal start slots. Entries\n"
    "with a device-filter are checked against each catalog model the filter names; entries\n"
    "without one must fit at least one model that offers their profiles (or MODEL, when\n"
    "given). Entries for GPUs the catalog does not know (device-filter PCI ids, or profiles\n"
    "no catalog GPU offers) are noted as \"unknown model, not checked\".\n"
    "FILE '-' reads standard input.\n"
    "\n"
    "Options:\n"
    "  --model MODEL         check every entry against this GPU model (catalog name or\n"
    "                        nvidia.com/gpu.product value)\n"
    "  --strict              entries for unknown models fail (exit 1) instead of a note\n"
    "  -o, --output FORMAT   text (default; one line per checked entry: file:line:col,\n"
    "                        verdict, config path, model, placement), json or yaml\n"
    "  -q, --quiet           text: print only invalid entries and the summary\n"
    "  -h, --help            show this help\n"
    "\n"
    "Exit status: 0 every layout valid (unknown models noted), 1 some layout invalid (or,\n"
    "with --strict, for an unknown model), 2 unreadable input or usage (nothing on stdout).\n";

static const char plan_usage[] =
    "usage: gpusched mig plan FILE [--inventory FILE] [-o text|json|yaml]\n"
    "                         [--mig-parted-config FILE] [--ignore-current]\n"
    "                         [--exact-max-gpus N] [--state-budget N]\n"
    "\n"
    "Plan MIG partitions for inference services. FILE is a MigPlan document\n"
    "(apiVersion: gpusched.io/v1alpha1, docs/cli/mig.md): services with replicas, headroom\n"
    "and either memoryGiB (+ computeSlices) or a model shape (parameters, dtype, batchSize,\n"
    "sequenceLength, kvCache), and an inventory of nodes (product label value, GPU count,\n"
    "optional currentConfig). Each service gets the smallest profile that holds its memory\n"
    "with headroom; GPUs get layouts that host every replica with the fewest GPUs, then\n"
    "the least idle silicon, then the fewest re-partitioned GPUs. Pools of up to\n"
    "--exact-max-gpus GPUs are solved exactly; larger ones by greedy + local improvement,\n"
    "reported with a proven lower bound (docs/mig-planner.md).\n"
    "\n"
    "Output: the profile per service and model, the summary, per-GPU layouts with their\n"
    "placements, the waste of each layout compared with fixed configs (all-balanced,\n"
    "all-1g.*), and `kubectl label node` lines setting nvidia.com/mig.config.\n"
    "\n"
    "Options:\n"
    "  --inventory FILE          use this inventory instead of the one in FILE: a MigInventory\n"
    "                            YAML document or a CSV with gpu_model,gpu_capacity_num[,node_name]\n"
    "                            columns (as the spot2026 trace's node table)\n"
    "  --mig-parted-config FILE  write the mig-parted file for the plan to FILE (atomically;\n"
    "                            '-' for standard output instead of the report)\n"
    "  --ignore-current          plan as if no current layout were known\n"
    "  --exact-max-gpus N        exact search up to N GPUs (default 16, at most 64)\n"
    "  --state-budget N          states the exact search may memoise (default 500000)\n"
    "  -o, --output FORMAT       text (default), json or yaml\n"
    "  -h, --help                show this help\n"
    "\n"
    "Exit status: 0 every replica placed, 1 some replicas could not be placed, 2 input or\n"
    "usage error.\n";

enum { OPT_HELP, OPT_OUTPUT, OPT_MODEL, OPT_QUIET, OPT_INVENTORY, OPT_PARTED, OPT_IGNORE,
       OPT_EXACT, OPT_BUDGET, OPT_STRICT };

/* ---------------------------------------------------------------- shared */
static const gs_mig_model *find_model(const char *name, gs_error *err)
{
    const gs_mig_model *m = gs_mig_model_find(name);
    if (!m) {
        uint32_t n;
        const gs_mig_model *all = gs_mig_models(&n);
        char list[256];
        size_t o = 0;
        list[0] = '\0';
        for (uint32_t i = 0; i < n && o < sizeof list; i++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", all[i].name);
        gs_fail(err, GS_ERR_NOTFOUND, "\"%s\" is not a MIG-capable GPU in the catalog (models: %s)",
                name, list);
    }
    return m;
}

static int finish(gs_strbuf *sb, cli_emit *e, cli_format fmt, gs_error *err)
{
    if (fmt != CLI_FORMAT_TEXT && cli_emit_finish(e) != 0)
        return gs_fail(err, GS_ERR_INTERNAL, "unbalanced document emitter calls");
    return fmt == CLI_FORMAT_TEXT ? cli_write_text_output(sb, NULL, err) : cli_write_output(sb, NULL, err);
}

/* ---------------------------------------------------------------- profiles */
static void profiles_text(gs_strbuf *sb, const gs_mig_model *m, bool *any_unverified,
                          bool *any_estimated)
{
    gs_strbuf_textf(sb, "%s%s: %u compute / %u memory slices, %.1f GiB\n", m->name,
                     m->unverified ? " (placements inferred*)" : "", m->compute_slices,
                     m->memory_slices, m->mem_mib / 1024.0);
    gs_strbuf_puts(sb, "  gpu.product:");
    for (const char *const *p = m->products; *p; p++)
        gs_strbuf_textf(sb, " %s", *p);
    gs_strbuf_puts(sb, "\n  PCI device ids:");
    for (int i = 0; i < 8 && m->pci_device_ids[i]; i++)
        gs_strbuf_textf(sb, " 0x%04X", m->pci_device_ids[i]);
    gs_strbuf_puts(sb, "\n");
    cli_table t;
    cli_table_init(&t, 7);
    cli_table_cell(&t, "PROFILE");
    cli_table_cell(&t, "ID");
    cli_table_cell(&t, "COMPUTE");
    cli_table_cell(&t, "MEM SLICES");
    cli_table_cell(&t, "MEMORY");
    cli_table_cell(&t, "MAX");
    cli_table_cell(&t, "PLACEMENTS");
    for (uint8_t i = 0; i < m->nprofiles; i++) {
        const gs_mig_profile *p = &m->profiles[i];
        bool est;
        uint32_t mib = gs_mig_profile_mem(m, p, &est);
        char st[32];
        gs_mig_starts_text(m, p, st, sizeof st);
        cli_table_cell(&t, "%s%s", p->name, p->unverified ? "*" : "");
        if (p->id == GS_MIG_ID_UNKNOWN)
            cli_table_cell(&t, "?");
        else
            cli_table_cell(&t, "%u", p->id);
        cli_table_cell(&t, "%u", p->compute);
        cli_table_cell(&t, "%u", p->mem_slices);
        cli_table_cell(&t, "%s%.2f GiB", est ? "~" : "", mib / 1024.0);
        cli_table_cell(&t, "%u", p->max_count);
        cli_table_cell(&t, "%s%s", st, m->unverified ? "*" : "");
        *any_unverified = *any_unverified || p->unverified || m->unverified;
        *any_estimated = *any_estimated || est;
    }
    cli_table_render(&t, sb, "  ");
    cli_table_free(&t);
    gs_strbuf_puts(sb, "  built-in configs:");
    for (uint32_t b = 0; b < gs_mig_builtin_count(m); b++) {
        char name[64];
        gs_mig_builtin_name(m, b, name, sizeof name);
        gs_strbuf_textf(sb, " %s", name);
    }
    gs_strbuf_puts(sb, "\n");
}

static void profiles_doc(cli_emit *e, const gs_mig_model *m)
{
    cli_emit_begin_object(e);
    cli_emit_kv_str(e, "name", m->name);
    cli_emit_key(e, "products");
    cli_emit_begin_array(e);
    for (const char *const *p = m->products; *p; p++)
        cli_emit_str(e, *p);
    cli_emit_end_array(e);
    cli_emit_key(e, "pciDeviceIds");
    cli_emit_begin_array(e);
    for (int i = 0; i < 8 && m->pci_device_ids[i]; i++) {
        char id[16];
        snprintf(id, sizeof id, "0x%04X", m->pci_device_ids[i]);
        cli_emit_str(e, id);
    }
    cli_emit_end_array(e);
    cli_emit_kv_int(e, "computeSlices", m->compute_slices);
    cli_emit_kv_int(e, "memorySlices", m->memory_slices);
    cli_emit_kv_int(e, "memoryMiB", m->mem_mib);
    cli_emit_kv_bool(e, "placementsVerified", !m->unverified);
    cli_emit_key(e, "profiles");
    cli_emit_begin_array(e);
    for (uint8_t i = 0; i < m->nprofiles; i++) {
        const gs_mig_profile *p = &m->profiles[i];
        bool est;
        uint32_t mib = gs_mig_profile_mem(m, p, &est);
        uint8_t st[8];
        uint32_t ns = gs_mig_profile_starts(m, p, st);
        cli_emit_begin_object(e);
        cli_emit_kv_str(e, "name", p->name);
        cli_emit_key(e, "id");
        if (p->id == GS_MIG_ID_UNKNOWN)
            cli_emit_str(e, NULL);
        else
            cli_emit_int(e, p->id);
        cli_emit_kv_int(e, "computeSlices", p->compute);
        cli_emit_kv_int(e, "memorySlices", p->mem_slices);
        cli_emit_kv_int(e, "memoryMiB", mib);
        cli_emit_kv_bool(e, "memoryEstimated", est);
        cli_emit_kv_int(e, "maxCount", p->max_count);
        cli_emit_key(e, "placements");
        cli_emit_begin_array(e);
        for (uint32_t k = 0; k < ns; k++)
            cli_emit_int(e, st[k]);
        cli_emit_end_array(e);
        cli_emit_kv_bool(e, "verified", !p->unverified && !m->unverified);
        cli_emit_end_object(e);
    }
    cli_emit_end_array(e);
    cli_emit_key(e, "builtinConfigs");
    cli_emit_begin_array(e);
    for (uint32_t b = 0; b < gs_mig_builtin_count(m); b++) {
        char name[64];
        gs_mig_builtin_name(m, b, name, sizeof name);
        cli_emit_str(e, name);
    }
    cli_emit_end_array(e);
    cli_emit_end_object(e);
}

static int cmd_profiles(int argc, char **argv)
{
    static const cli_opt opts[] = {{"help", 'h', false, OPT_HELP}, {"output", 'o', true, OPT_OUTPUT}};
    cli_args a;
    cli_args_init(&a, argc, argv, 1, opts, sizeof opts / sizeof opts[0]);
    gs_error err;
    gs_error_clear(&err);
    cli_format fmt = CLI_FORMAT_TEXT;
    const char *model_name = NULL, *v;
    int id;
    while ((id = cli_args_next(&a, &v, &err)) != CLI_ARG_END) {
        if (id == CLI_ARG_ERROR)
            return cli_usage_error("mig profiles", &err);
        if (id == OPT_HELP)
            return cli_print_usage(profiles_usage);
        if (id == OPT_OUTPUT && cli_parse_format(v, &fmt, &err) != 0)
            return cli_usage_error("mig profiles", &err);
        if (id == CLI_ARG_POSITIONAL) {
            if (model_name) {
                gs_fail(&err, GS_ERR_USAGE, "mig profiles: expected at most one MODEL");
                return cli_usage_error("mig profiles", &err);
            }
            model_name = v;
        }
    }
    const gs_mig_model *only = NULL;
    if (model_name && !(only = find_model(model_name, &err)))
        return cli_report_error(&err);
    uint32_t n;
    const gs_mig_model *all = gs_mig_models(&n);
    gs_strbuf sb = GS_STRBUF_INIT;
    cli_emit e;
    cli_emit_init(&e, &sb, fmt);
    bool unverified = false, estimated = false;
    if (fmt != CLI_FORMAT_TEXT) {
        cli_emit_begin_object(&e);
        cli_emit_key(&e, "models");
        cli_emit_begin_array(&e);
    }
    bool first = true;
    for (uint32_t i = 0; i < n; i++) {
        if (only && &all[i] != only)
            continue;
        if (fmt == CLI_FORMAT_TEXT) {
            if (!first)
                gs_strbuf_puts(&sb, "\n");
            profiles_text(&sb, &all[i], &unverified, &estimated);
        } else {
            profiles_doc(&e, &all[i]);
        }
        first = false;
    }
    if (fmt != CLI_FORMAT_TEXT) {
        cli_emit_end_array(&e);
        cli_emit_end_object(&e);
    } else if (unverified || estimated) {
        gs_strbuf_puts(&sb, "\n");
        if (unverified)
            gs_strbuf_puts(&sb, "* unverified or inferred in the reference (nvidia.md [U]/[I]): "
                                "check on hardware\n");
        if (estimated)
            gs_strbuf_puts(&sb, "~ estimated: no observed memory size; scaled from the widest "
                                "known profile (or the model's share)\n");
    }
    int rc = finish(&sb, &e, fmt, &err) == 0 ? CLI_EXIT_OK : cli_report_error(&err);
    gs_strbuf_free(&sb);
    return rc;
}

/* ---------------------------------------------------------------- validate */
static const char *verdict_name(gs_mig_verdict v)
{
    return v == GS_MIG_OK            ? "ok"
           : v == GS_MIG_INVALID     ? "invalid"
           : v == GS_MIG_UNKNOWN_MODEL ? "unknown-model"
                                     : "skipped";
}

static void pos_prefix(gs_strbuf *sb, const gs_error *e, const char *file)
{
    gs_strbuf_text(sb, e->file[0] ? e->file : file);
    if (e->line > 0) {
        gs_strbuf_textf(sb, ":%d", e->line);
        if (e->col > 0)
            gs_strbuf_textf(sb, ":%d", e->col);
    }
    gs_strbuf_puts(sb, ": ");
}

static void models_ok_text(gs_strbuf *sb, uint32_t mask)
{
    uint32_t n;
    const gs_mig_model *all = gs_mig_models(&n);
    bool first = true;
    for (uint32_t i = 0; i < n && i < 32; i++)
        if (mask & (1u << i)) {
            gs_strbuf_textf(sb, "%s%s", first ? "" : ", ", all[i].name);
            first = false;
        }
}

static void check_text(gs_strbuf *sb, const gs_mig_check *c, const char *file, bool strict)
{
    pos_prefix(sb, &c->err, file);
    if (c->verdict == GS_MIG_UNKNOWN_MODEL)
        gs_strbuf_puts(sb, strict ? "invalid: " : "note: ");
    else
        gs_strbuf_textf(sb, "%s: ", verdict_name(c->verdict));
    if (c->err.path[0])
        gs_strbuf_textf(sb, "%s: ", c->err.path);
    if (c->verdict == GS_MIG_OK && c->model) {
        char lay[160];
        gs_mig_layout_text(c->model, &c->layout, true, lay, sizeof lay);
        if (c->models_ok && !c->layout.mig_enabled) {
            gs_strbuf_puts(sb, "mig disabled\n");
        } else if (c->models_ok) {
            gs_strbuf_puts(sb, "fits ");
            models_ok_text(sb, c->models_ok);
            gs_strbuf_textf(sb, " (on %s: %s)\n", c->model->name, lay);
        } else {
            gs_strbuf_textf(sb, "%s: %s\n", c->model->name, lay);
        }
        return;
    }
    if (c->model && c->verdict == GS_MIG_INVALID)
        gs_strbuf_textf(sb, "%s: ", c->model->name);
    gs_strbuf_textf(sb, "%s\n", c->err.msg);
}

static void check_doc(cli_emit *e, const gs_mig_check *c)
{
    cli_emit_begin_object(e);
    cli_emit_kv_str(e, "verdict", verdict_name(c->verdict));
    cli_emit_kv_str(e, "path", c->err.path);
    cli_emit_kv_int(e, "line", c->err.line);
    cli_emit_kv_int(e, "column", c->err.col);
    cli_emit_key(e, "model");
    cli_emit_str(e, c->model ? c->model->name : NULL);
    if (c->models_ok) {
        uint32_t n;
        const gs_mig_model *all = gs_mig_models(&n);
        cli_emit_key(e, "fitsModels");
        cli_emit_begin_array(e);
        for (uint32_t i = 0; i < n && i < 32; i++)
            if (c->models_ok & (1u << i))
                cli_emit_str(e, all[i].name);
        cli_emit_end_array(e);
    }
    if (c->verdict == GS_MIG_OK && c->model) {
        cli_emit_kv_bool(e, "migEnabled", c->layout.mig_enabled);
        cli_emit_key(e, "instances");
        cli_emit_begin_array(e);
        for (uint8_t i = 0; i < c->layout.n; i++) {
            cli_emit_begin_object(e);
            cli_emit_kv_str(e, "profile", c->model->profiles[c->layout.profile[i]].name);
            cli_emit_kv_int(e, "start", c->layout.start[i]);
            cli_emit_end_object(e);
        }
        cli_emit_end_array(e);
    } else {
        cli_emit_kv_str(e, "message", c->err.msg);
    }
    cli_emit_end_object(e);
}

/* Where the configs of a file came from, when not a bare mig-parted file. */
static void sources_text(gs_strbuf *sb, const gs_mig_parted *cfg, bool quiet)
{
    if (quiet)
        return;
    for (uint32_t i = 0; i < cfg->nsources; i++) {
        const gs_mig_source *s = &cfg->sources[i];
        gs_strbuf_textf(sb, "%s:%d:%d: note: mig-parted config from %s %s, data.%s", cfg->file,
                         s->line, s->col, s->kind, s->name[0] ? s->name : "(unnamed)", s->key);
        if (cfg->documents > 1)
            gs_strbuf_textf(sb, " (document %u)", s->document + 1);
        if (s->approximate)
            gs_strbuf_puts(sb, "; positions inside it are approximate (the string is not a "
                               "literal block or a one-line double-quoted string): they point "
                               "at the start of the string");
        gs_strbuf_puts(sb, "\n");
    }
    if (cfg->ignored)
        gs_strbuf_textf(sb, "%s: note: documents without a mig-parted config (not read): %u of %u\n",
                         cfg->file, cfg->ignored, cfg->documents);
}

static void sources_doc(cli_emit *e, const gs_mig_parted *cfg)
{
    cli_emit_kv_int(e, "documents", cfg->documents);
    cli_emit_kv_int(e, "ignoredDocuments", cfg->ignored);
    cli_emit_key(e, "sources");
    cli_emit_begin_array(e);
    for (uint32_t i = 0; i < cfg->nsources; i++) {
        const gs_mig_source *s = &cfg->sources[i];
        cli_emit_begin_object(e);
        cli_emit_kv_str(e, "kind", s->kind);
        cli_emit_kv_str(e, "name", s->name);
        cli_emit_kv_str(e, "key", s->key);
        cli_emit_kv_int(e, "document", s->document);
        cli_emit_kv_int(e, "line", s->line);
        cli_emit_kv_int(e, "column", s->col);
        cli_emit_kv_bool(e, "positionsApproximate", s->approximate);
        cli_emit_end_object(e);
    }
    cli_emit_end_array(e);
}

/* One gpusched document's node layouts: reading it validates every currentConfig (and,
 * for a MigPlan, its services too). */
static int validate_plan_doc(const char *file, const char *data, size_t len, gs_error *err)
{
    gs_mig_plan_input in;
    gs_mig_plan_input_init(&in);
    int rc = gs_mig_inventory_parse(&in, file, data, len, err);
    gs_mig_plan_input_free(&in);
    bool is_plan = false;
    for (size_t i = 0; i + 7 <= len && !is_plan; i++)
        is_plan = !memcmp(data + i, "MigPlan", 7);
    if (rc == 0 && is_plan) {
        gs_mig_plan_input_init(&in);
        rc = gs_mig_plan_input_parse(&in, file, data, len, err);
        gs_mig_plan_input_free(&in);
    }
    return rc;
}

static int cmd_validate(int argc, char **argv)
{
    static const cli_opt opts[] = {{"help", 'h', false, OPT_HELP},
                                   {"output", 'o', true, OPT_OUTPUT},
                                   {"model", 0, true, OPT_MODEL},
                                   {"quiet", 'q', false, OPT_QUIET},
                                   {"strict", 0, false, OPT_STRICT}};
    cli_args a;
    cli_args_init(&a, argc, argv, 1, opts, sizeof opts / sizeof opts[0]);
    gs_error err;
    gs_error_clear(&err);
    cli_format fmt = CLI_FORMAT_TEXT;
    const gs_mig_model *model = NULL;
    bool quiet = false, strict = false;
    const char *v;
    int id;
    GS_VEC(const char *) files = {NULL, 0, 0};
    while ((id = cli_args_next(&a, &v, &err)) != CLI_ARG_END) {
        if (id == CLI_ARG_ERROR || (id == OPT_OUTPUT && cli_parse_format(v, &fmt, &err) != 0)) {
            gs_vec_free(files);
            return cli_usage_error("mig validate", &err);
        }
        if (id == OPT_HELP) {
            gs_vec_free(files);
            return cli_print_usage(validate_usage);
        }
        if (id == OPT_QUIET)
            quiet = true;
        if (id == OPT_STRICT)
            strict = true;
        if (id == OPT_MODEL && !(model = find_model(v, &err))) {
            gs_vec_free(files);
            return cli_report_error(&err);
        }
        if (id == CLI_ARG_POSITIONAL && gs_vec_push(files, v) != 0) {
            gs_vec_free(files);
            return CLI_EXIT_INTERNAL;
        }
    }
    if (files.n == 0) {
        gs_fail(&err, GS_ERR_USAGE, "mig validate: expected at least one FILE");
        return cli_usage_error("mig validate", &err);
    }
    gs_strbuf sb = GS_STRBUF_INIT;
    cli_emit e;
    cli_emit_init(&e, &sb, fmt);
    if (fmt != CLI_FORMAT_TEXT) {
        cli_emit_begin_object(&e);
        cli_emit_key(&e, "files");
        cli_emit_begin_array(&e);
    }
    int status = CLI_EXIT_OK;
    uint32_t nok = 0, ninvalid = 0, nskipped = 0, nunknown = 0;
    for (size_t f = 0; f < files.n; f++) {
        const char *file = files.v[f];
        size_t len;
        gs_error ferr;
        gs_error_clear(&ferr);
        char *data = gs_read_file(file, GS_MIG_MAX_FILE_BYTES, &len, &ferr);
        bool parted = data && gs_mig_has_parted_config(data, len);
        if (fmt != CLI_FORMAT_TEXT) {
            cli_emit_begin_object(&e);
            cli_emit_kv_str(&e, "file", file);
            cli_emit_kv_str(&e, "kind", !data ? "unreadable" : parted ? "mig-parted" : "gpusched");
        }
        if (!data) {
            cli_report_error(&ferr);
            status = CLI_EXIT_USAGE;
            if (fmt != CLI_FORMAT_TEXT) {
                cli_emit_kv_str(&e, "error", ferr.msg);
                cli_emit_end_object(&e);
            }
            continue;
        }
        if (!parted) {
            int rc = validate_plan_doc(file, data, len, &ferr);
            bool invalid = rc != 0 && ferr.code == GS_ERR_INVALID;
            if (rc != 0 && !invalid) {
                cli_report_error(&ferr);
                status = CLI_EXIT_USAGE;
            } else if (invalid) {
                ninvalid++;
                if (status == CLI_EXIT_OK)
                    status = CLI_EXIT_FOUND;
            } else {
                nok++;
            }
            if (fmt == CLI_FORMAT_TEXT) {
                if (invalid) {
                    pos_prefix(&sb, &ferr, file);
                    gs_strbuf_textf(&sb, "invalid: %s%s%s\n", ferr.path, ferr.path[0] ? ": " : "",
                                     ferr.msg);
                } else if (rc == 0 && !quiet) {
                    gs_strbuf_textf(&sb, "%s: ok: node layouts valid\n", file);
                }
            } else {
                cli_emit_key(&e, "checks");
                cli_emit_begin_array(&e);
                if (rc == 0 || invalid) {
                    gs_mig_check c;
                    memset(&c, 0, sizeof c);
                    c.verdict = invalid ? GS_MIG_INVALID : GS_MIG_OK;
                    c.err = ferr;
                    if (!invalid)
                        snprintf(c.err.msg, sizeof c.err.msg, "node layouts valid");
                    check_doc(&e, &c);
                }
                cli_emit_end_array(&e);
                if (rc != 0 && !invalid)
                    cli_emit_kv_str(&e, "error", ferr.msg);
                cli_emit_end_object(&e);
            }
            free(data);
            continue;
        }
        gs_mig_parted cfg;
        int rc = gs_mig_parted_parse(&cfg, file, data, len, &ferr);
        free(data);
        gs_mig_report rep;
        memset(&rep, 0, sizeof rep);
        if (rc == 0)
            rc = gs_mig_parted_validate(&cfg, model, &rep, &ferr);
        if (rc != 0) {
            cli_report_error(&ferr);
            status = CLI_EXIT_USAGE;
            if (fmt != CLI_FORMAT_TEXT) {
                cli_emit_kv_str(&e, "error", ferr.msg);
                cli_emit_end_object(&e);
            }
            gs_mig_report_free(&rep);
            gs_mig_parted_free(&cfg);
            continue;
        }
        nok += rep.nok;
        ninvalid += rep.ninvalid;
        nskipped += rep.nskipped;
        nunknown += rep.nunknown;
        if ((rep.ninvalid || (strict && rep.nunknown)) && status == CLI_EXIT_OK)
            status = CLI_EXIT_FOUND;
        if (fmt == CLI_FORMAT_TEXT) {
            sources_text(&sb, &cfg, quiet);
            for (uint32_t i = 0; i < rep.n; i++)
                if (!quiet || rep.v[i].verdict == GS_MIG_INVALID ||
                    (strict && rep.v[i].verdict == GS_MIG_UNKNOWN_MODEL))
                    check_text(&sb, &rep.v[i], file, strict);
            if (cfg.problems_truncated)
                gs_strbuf_textf(&sb, "%s: more than %d problems; the rest are not shown\n", file,
                                 GS_MIG_MAX_PROBLEMS);
        } else {
            sources_doc(&e, &cfg);
            cli_emit_key(&e, "checks");
            cli_emit_begin_array(&e);
            for (uint32_t i = 0; i < rep.n; i++)
                check_doc(&e, &rep.v[i]);
            cli_emit_end_array(&e);
            cli_emit_end_object(&e);
        }
        gs_mig_report_free(&rep);
        gs_mig_parted_free(&cfg);
    }
    if (fmt != CLI_FORMAT_TEXT) {
        cli_emit_end_array(&e);
        cli_emit_key(&e, "summary");
        cli_emit_begin_object(&e);
        cli_emit_kv_int(&e, "ok", nok);
        cli_emit_kv_int(&e, "invalid", ninvalid);
        cli_emit_kv_int(&e, "skipped", nskipped);
        cli_emit_kv_int(&e, "unknownModel", nunknown);
        cli_emit_kv_bool(&e, "strict", strict);
        cli_emit_end_object(&e);
        cli_emit_end_object(&e);
    } else {
        gs_strbuf_textf(&sb, "%u ok, %u invalid, %u skipped", nok, ninvalid, nskipped);
        if (nunknown)
            gs_strbuf_textf(&sb, ", %u unknown model%s (%s)", nunknown, nunknown == 1 ? "" : "s",
                             strict ? "invalid with --strict" : "not checked");
        gs_strbuf_puts(&sb, "\n");
    }
    /* exit 2 (a file unreadable): the errors are on stderr and stdout stays empty, so
     * nothing half-checked is taken for a verdict */
    if (status == CLI_EXIT_USAGE) {
        if (fmt != CLI_FORMAT_TEXT)
            cli_emit_finish(&e);
    } else if (finish(&sb, &e, fmt, &err) != 0) {
        status = cli_report_error(&err);
    }
    gs_strbuf_free(&sb);
    gs_vec_free(files);
    return status;
}

/* ---------------------------------------------------------------- plan */
static const char *model_short(const gs_mig_model *m) { return m ? m->name : "-"; }

static void plan_services_text(gs_strbuf *sb, const gs_mig_plan_input *in, const gs_mig_plan *p,
                               const bool *present)
{
    uint32_t nm;
    const gs_mig_model *all = gs_mig_models(&nm);
    uint32_t ncols = 4;
    for (uint32_t c = 0; c < nm; c++)
        ncols += present[c];
    if (ncols > CLI_TABLE_MAX_COLS)
        ncols = CLI_TABLE_MAX_COLS;
    cli_table t;
    cli_table_init(&t, ncols);
    cli_table_cell(&t, "SERVICE");
    cli_table_cell(&t, "REPLICAS");
    cli_table_cell(&t, "NEED");
    uint32_t used = 3;
    for (uint32_t c = 0; c < nm && used + 1 < ncols; c++)
        if (present[c]) {
            cli_table_cell(&t, "%s", all[c].name);
            used++;
        }
    cli_table_cell(&t, "PLACED");
    for (uint32_t s = 0; s < in->nservices; s++) {
        const gs_mig_service *sv = &in->services[s];
        const gs_mig_service_plan *sp = &p->services[s];
        cli_table_cell(&t, "%s", sv->name);
        cli_table_cell(&t, "%u", sv->replicas);
        cli_table_cell(&t, "%.2f GiB", sv->need_gib);
        used = 3;
        for (uint32_t c = 0; c < nm && used + 1 < ncols; c++) {
            if (!present[c])
                continue;
            uint8_t pi = sp->profile[c];
            if (pi == GS_MIG_NO_PROFILE)
                cli_table_cell(&t, "none fits");
            else
                cli_table_cell(&t, "%s%s", sp->mem_estimated[c] ? "~" : "", all[c].profiles[pi].name);
            used++;
        }
        cli_table_cell(&t, "%u/%u", sp->placed, sv->replicas);
    }
    cli_table_render(&t, sb, "");
    cli_table_free(&t);
}

static void gpu_layout_text(gs_strbuf *sb, const gs_mig_plan_input *in, const gs_mig_gpu_plan *g)
{
    /* physical order */
    uint8_t idx[GS_MIG_MAX_INST];
    uint8_t n = g->layout.n;
    for (uint8_t i = 0; i < n; i++)
        idx[i] = i;
    for (uint8_t i = 1; i < n; i++) {
        uint8_t x = idx[i], j = i;
        while (j > 0 && g->layout.start[idx[j - 1]] > g->layout.start[x]) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = x;
    }
    if (!g->layout.mig_enabled) {
        gs_strbuf_puts(sb, "mig disabled");
        return;
    }
    for (uint8_t k = 0; k < n; k++) {
        uint8_t i = idx[k];
        gs_strbuf_textf(sb, "%s%s@%u=%s", k ? " " : "", g->model->profiles[g->layout.profile[i]].name,
                         g->layout.start[i],
                         g->service[i] == GS_MIG_NO_SERVICE ? "idle" : in->services[g->service[i]].name);
    }
}

static void plan_text(gs_strbuf *sb, const gs_mig_plan_input *in, const gs_mig_plan *p,
                      const gs_mig_emit *em, const gs_mig_waste *w, uint32_t nw)
{
    uint32_t nm;
    const gs_mig_model *all = gs_mig_models(&nm);
    bool present[GS_MIG_MAX_CATALOG] = {false};
    for (uint32_t i = 0; i < p->ngpus; i++) {
        int c = gs_mig_model_index(p->gpus[i].model);
        if (c >= 0 && c < GS_MIG_MAX_CATALOG)
            present[c] = true;
    }
    (void)all;
    plan_services_text(sb, in, p, present);

    uint32_t placed = 0, total = 0;
    for (uint32_t s = 0; s < in->nservices; s++) {
        placed += p->services[s].placed;
        total += in->services[s].replicas;
    }
    gs_strbuf_textf(sb, "\nPlan: %u of %u replicas placed on %u of %u MIG GPUs", placed, total,
                     p->cost.gpus, p->ngpus);
    if (in->nodes_skipped)
        gs_strbuf_textf(sb, " (%u node%s with %u GPUs %s not MIG-capable)", in->nodes_skipped,
                         in->nodes_skipped == 1 ? "" : "s", in->gpus_skipped,
                         in->nodes_skipped == 1 ? "is" : "are");
    gs_strbuf_puts(sb, "\n");
    if (p->complete) {
        if (p->method == GS_MIG_METHOD_EXACT)
            gs_strbuf_textf(sb, "  optimal (exact search, %llu states)\n",
                             (unsigned long long)p->states);
        else if (p->lower_bound >= p->cost.gpus)
            gs_strbuf_textf(sb, "  GPU count optimal: equals the lower bound %u (LP %.2f); "
                                 "heuristic for idle and changes\n",
                             p->lower_bound, p->lp_value);
        else
            gs_strbuf_textf(sb, "  heuristic: at most %u GPUs above optimal (lower bound %u, LP %.2f)\n",
                             p->cost.gpus - p->lower_bound, p->lower_bound, p->lp_value);
        if (p->method == GS_MIG_METHOD_HEURISTIC && p->lp_roundable)
            gs_strbuf_textf(sb, "  a-priori bound: at most %u above optimal (%u fractional LP layouts)\n",
                             p->lp_fractional ? p->lp_fractional - 1 : 0, p->lp_fractional);
    } else {
        gs_strbuf_puts(sb, "  INCOMPLETE: some replicas do not fit the inventory (see PLACED)\n");
    }
    gs_strbuf_textf(sb, "  %u GPUs re-partitioned; idle on used GPUs: %.3g GPUs of memory, "
                         "%.3g GPUs of compute\n",
                     p->cost.changed, p->cost.idle_mem / 8.0, p->cost.idle_compute / 28.0);

    /* per-GPU layouts: used or changed GPUs */
    cli_table t;
    cli_table_init(&t, 5);
    cli_table_cell(&t, "NODE");
    cli_table_cell(&t, "GPU");
    cli_table_cell(&t, "MODEL");
    cli_table_cell(&t, "CHANGE");
    cli_table_cell(&t, "LAYOUT (profile@start=service)");
    uint32_t shown = 0;
    for (uint32_t i = 0; i < p->ngpus; i++) {
        const gs_mig_gpu_plan *g = &p->gpus[i];
        if (!g->nassigned && !g->changed)
            continue;
        shown++;
        gs_strbuf lay = GS_STRBUF_INIT;
        gpu_layout_text(&lay, in, g);
        cli_table_cell(&t, "%s", in->nodes[g->node].name);
        cli_table_cell(&t, "%u", g->gpu);
        cli_table_cell(&t, "%s", model_short(g->model));
        cli_table_cell(&t, "%s", g->changed ? (g->known ? "re-partition" : "new") : "keep");
        cli_table_cell(&t, "%s", gs_strbuf_cstr(&lay));
        gs_strbuf_free(&lay);
    }
    gs_strbuf_puts(sb, "\n");
    if (shown)
        cli_table_render(&t, sb, "");
    cli_table_free(&t);
    if (p->ngpus > shown)
        gs_strbuf_textf(sb, "(%u other GPUs unused and unchanged)\n", p->ngpus - shown);

    /* waste */
    gs_strbuf_puts(sb, "\nWaste per layout, and fixed configs for the same replicas:\n");
    cli_table_init(&t, 7);
    cli_table_cell(&t, "LAYOUT");
    cli_table_cell(&t, "GPUS");
    cli_table_cell(&t, "IDLE MEM SLICES");
    cli_table_cell(&t, "IDLE COMPUTE SLICES");
    cli_table_cell(&t, "NEED GiB");
    cli_table_cell(&t, "ALLOCATED GiB");
    cli_table_cell(&t, "UNSERVED");
    for (uint32_t i = 0; i < nw; i++) {
        cli_table_cell(&t, "%s%s", w[i].kind == GS_MIG_WASTE_PLAN ? "= " : w[i].kind == GS_MIG_WASTE_FIXED ? "vs " : "",
                       w[i].name);
        cli_table_cell(&t, "%u", w[i].gpus);
        cli_table_cell(&t, "%u/%u", w[i].mem_idle, w[i].mem_slices);
        cli_table_cell(&t, "%u/%u", w[i].compute_idle, w[i].compute_slices);
        cli_table_cell(&t, "%.1f", w[i].need_gib);
        cli_table_cell(&t, "%.1f", w[i].alloc_gib);
        cli_table_cell(&t, "%u", w[i].unserved);
    }
    cli_table_render(&t, sb, "  ");
    cli_table_free(&t);

    gs_strbuf_puts(sb, "\nLabels:\n");
    uint32_t nl = 0;
    for (uint32_t i = 0; i < in->nnodes; i++)
        if (em->node_config[i]) {
            gs_strbuf_textf(sb, "kubectl label node %s nvidia.com/mig.config=%s --overwrite\n",
                             in->nodes[i].name, em->node_config[i]);
            nl++;
        }
    if (!nl)
        gs_strbuf_puts(sb, "(no node changes)\n");
}

static void plan_doc(cli_emit *e, const gs_mig_plan_input *in, const gs_mig_plan *p,
                     const gs_mig_emit *em, const gs_mig_waste *w, uint32_t nw)
{
    uint32_t nm;
    const gs_mig_model *all = gs_mig_models(&nm);
    cli_emit_begin_object(e);
    cli_emit_key(e, "services");
    cli_emit_begin_array(e);
    for (uint32_t s = 0; s < in->nservices; s++) {
        const gs_mig_service *sv = &in->services[s];
        const gs_mig_service_plan *sp = &p->services[s];
        cli_emit_begin_object(e);
        cli_emit_kv_str(e, "name", sv->name);
        cli_emit_kv_int(e, "replicas", sv->replicas);
        cli_emit_key(e, "memoryGiB");
        cli_emit_begin_object(e);
        cli_emit_key(e, "weights");
        cli_emit_double(e, sv->weights_gib, 3);
        cli_emit_key(e, "kvCache");
        cli_emit_double(e, sv->kv_gib, 3);
        cli_emit_key(e, "overhead");
        cli_emit_double(e, sv->extra_gib, 3);
        cli_emit_key(e, "total");
        cli_emit_double(e, sv->total_gib, 3);
        cli_emit_key(e, "withHeadroom");
        cli_emit_double(e, sv->need_gib, 3);
        cli_emit_end_object(e);
        cli_emit_kv_int(e, "computeSlices", sv->compute_slices);
        cli_emit_key(e, "profiles");
        cli_emit_begin_object(e);
        bool present[GS_MIG_MAX_CATALOG] = {false};
        for (uint32_t i = 0; i < p->ngpus; i++) {
            int c = gs_mig_model_index(p->gpus[i].model);
            if (c >= 0 && c < GS_MIG_MAX_CATALOG)
                present[c] = true;
        }
        for (uint32_t c = 0; c < nm && c < GS_MIG_MAX_CATALOG; c++) {
            if (!present[c])
                continue;
            cli_emit_key(e, all[c].name);
            cli_emit_str(e, sp->profile[c] == GS_MIG_NO_PROFILE ? NULL
                                                                : all[c].profiles[sp->profile[c]].name);
        }
        cli_emit_end_object(e);
        cli_emit_kv_int(e, "placed", sp->placed);
        cli_emit_kv_int(e, "unplaced", sp->unplaced);
        cli_emit_end_object(e);
    }
    cli_emit_end_array(e);
    cli_emit_key(e, "summary");
    cli_emit_begin_object(e);
    cli_emit_kv_str(e, "method", p->method == GS_MIG_METHOD_EXACT ? "exact" : "heuristic");
    cli_emit_kv_bool(e, "complete", p->complete);
    cli_emit_kv_bool(e, "optimal", p->optimal);
    cli_emit_kv_int(e, "gpusUsed", p->cost.gpus);
    cli_emit_kv_int(e, "gpusTotal", p->ngpus);
    cli_emit_kv_int(e, "lowerBound", p->lower_bound);
    cli_emit_key(e, "lpValue");
    cli_emit_double(e, p->lp_value, 4);
    cli_emit_kv_int(e, "lpFractionalLayouts", p->lp_fractional);
    cli_emit_kv_bool(e, "lpRoundable", p->lp_roundable);
    cli_emit_kv_int(e, "gpusRepartitioned", p->cost.changed);
    cli_emit_kv_int(e, "idleMemoryEighths", p->cost.idle_mem);
    cli_emit_kv_int(e, "idleComputeTwentyEighths", p->cost.idle_compute);
    cli_emit_kv_int(e, "searchEffort", (int64_t)p->states);
    cli_emit_end_object(e);
    cli_emit_key(e, "gpus");
    cli_emit_begin_array(e);
    for (uint32_t i = 0; i < p->ngpus; i++) {
        const gs_mig_gpu_plan *g = &p->gpus[i];
        if (!g->nassigned && !g->changed)
            continue;
        cli_emit_begin_object(e);
        cli_emit_kv_str(e, "node", in->nodes[g->node].name);
        cli_emit_kv_int(e, "gpu", g->gpu);
        cli_emit_kv_str(e, "model", g->model->name);
        cli_emit_kv_bool(e, "changed", g->changed);
        cli_emit_kv_bool(e, "migEnabled", g->layout.mig_enabled);
        cli_emit_key(e, "instances");
        cli_emit_begin_array(e);
        for (uint8_t k = 0; k < g->layout.n; k++) {
            cli_emit_begin_object(e);
            cli_emit_kv_str(e, "profile", g->model->profiles[g->layout.profile[k]].name);
            cli_emit_kv_int(e, "start", g->layout.start[k]);
            cli_emit_key(e, "service");
            cli_emit_str(e, g->service[k] == GS_MIG_NO_SERVICE ? NULL : in->services[g->service[k]].name);
            cli_emit_end_object(e);
        }
        cli_emit_end_array(e);
        cli_emit_end_object(e);
    }
    cli_emit_end_array(e);
    cli_emit_key(e, "waste");
    cli_emit_begin_array(e);
    for (uint32_t i = 0; i < nw; i++) {
        cli_emit_begin_object(e);
        cli_emit_kv_str(e, "kind", w[i].kind == GS_MIG_WASTE_LAYOUT ? "layout"
                                   : w[i].kind == GS_MIG_WASTE_PLAN ? "plan" : "fixed");
        cli_emit_kv_str(e, "name", w[i].name);
        cli_emit_kv_int(e, "gpus", w[i].gpus);
        cli_emit_kv_int(e, "memorySlices", w[i].mem_slices);
        cli_emit_kv_int(e, "memorySlicesIdle", w[i].mem_idle);
        cli_emit_kv_int(e, "computeSlices", w[i].compute_slices);
        cli_emit_kv_int(e, "computeSlicesIdle", w[i].compute_idle);
        cli_emit_key(e, "needGiB");
        cli_emit_double(e, w[i].need_gib, 2);
        cli_emit_key(e, "allocatedGiB");
        cli_emit_double(e, w[i].alloc_gib, 2);
        cli_emit_kv_int(e, "unserved", w[i].unserved);
        cli_emit_end_object(e);
    }
    cli_emit_end_array(e);
    cli_emit_key(e, "labels");
    cli_emit_begin_array(e);
    for (uint32_t i = 0; i < in->nnodes; i++) {
        if (!em->node_config[i])
            continue;
        cli_emit_begin_object(e);
        cli_emit_kv_str(e, "node", in->nodes[i].name);
        cli_emit_kv_str(e, "nvidia.com/mig.config", em->node_config[i]);
        cli_emit_end_object(e);
    }
    cli_emit_end_array(e);
    cli_emit_end_object(e);
}

static int read_input(const char *file, char **data, size_t *len, gs_error *err)
{
    *data = gs_read_file(file, GS_MIG_MAX_FILE_BYTES, len, err);
    return *data ? 0 : -1;
}

static int cmd_plan(int argc, char **argv)
{
    static const cli_opt opts[] = {
        {"help", 'h', false, OPT_HELP},           {"output", 'o', true, OPT_OUTPUT},
        {"inventory", 0, true, OPT_INVENTORY},    {"mig-parted-config", 0, true, OPT_PARTED},
        {"ignore-current", 0, false, OPT_IGNORE}, {"exact-max-gpus", 0, true, OPT_EXACT},
        {"state-budget", 0, true, OPT_BUDGET}};
    cli_args a;
    cli_args_init(&a, argc, argv, 1, opts, sizeof opts / sizeof opts[0]);
    gs_error err;
    gs_error_clear(&err);
    cli_format fmt = CLI_FORMAT_TEXT;
    const char *file = NULL, *inv_file = NULL, *parted_file = NULL, *v;
    gs_mig_plan_opts po;
    gs_mig_plan_opts_default(&po);
    int id;
    while ((id = cli_args_next(&a, &v, &err)) != CLI_ARG_END) {
        int64_t x;
        switch (id) {
        case CLI_ARG_ERROR:
            return cli_usage_error("mig plan", &err);
        case OPT_HELP:
            return cli_print_usage(plan_usage);
        case OPT_OUTPUT:
            if (cli_parse_format(v, &fmt, &err) != 0)
                return cli_usage_error("mig plan", &err);
            break;
        case OPT_INVENTORY:
            inv_file = v;
            break;
        case OPT_PARTED:
            parted_file = v;
            break;
        case OPT_IGNORE:
            po.ignore_current = true;
            break;
        case OPT_EXACT:
            if (cli_parse_int("--exact-max-gpus", v, 0, 64, &x, &err) != 0)
                return cli_usage_error("mig plan", &err);
            po.exact_max_gpus = (uint32_t)x;
            break;
        case OPT_BUDGET:
            if (cli_parse_int("--state-budget", v, 1, 100000000, &x, &err) != 0)
                return cli_usage_error("mig plan", &err);
            po.state_budget = (uint64_t)x;
            break;
        case CLI_ARG_POSITIONAL:
            if (file) {
                gs_fail(&err, GS_ERR_USAGE, "mig plan: expected one FILE");
                return cli_usage_error("mig plan", &err);
            }
            file = v;
            break;
        default:
            break;
        }
    }
    if (!file) {
        gs_fail(&err, GS_ERR_USAGE, "mig plan: expected a MigPlan FILE");
        return cli_usage_error("mig plan", &err);
    }
    gs_mig_plan_input in;
    gs_mig_plan_input_init(&in);
    gs_mig_plan plan;
    memset(&plan, 0, sizeof plan);
    gs_mig_emit em;
    memset(&em, 0, sizeof em);
    gs_mig_waste *w = NULL;
    uint32_t nw = 0;
    gs_strbuf sb = GS_STRBUF_INIT;
    char *data = NULL;
    size_t len;
    int status = CLI_EXIT_USAGE;
    if (read_input(file, &data, &len, &err) != 0 ||
        gs_mig_plan_input_parse(&in, file, data, len, &err) != 0)
        goto fail;
    free(data);
    data = NULL;
    if (inv_file && (read_input(inv_file, &data, &len, &err) != 0 ||
                     gs_mig_inventory_parse(&in, inv_file, data, len, &err) != 0))
        goto fail;
    if (in.ngpus == 0) {
        gs_error_set(&err, GS_ERR_INVALID, inv_file ? inv_file : file, 0, 0, NULL,
                     "the inventory has no MIG-capable GPU (%u nodes skipped)", in.nodes_skipped);
        goto fail;
    }
    if (gs_mig_plan_solve(&in, &po, &plan, &err) != 0 || gs_mig_plan_emit(&in, &plan, &em, &err) != 0 ||
        gs_mig_plan_waste(&in, &plan, &w, &nw, &err) != 0)
        goto fail;
    bool parted_stdout = parted_file && !strcmp(parted_file, "-");
    if (parted_file && !parted_stdout &&
        gs_write_file_atomic(parted_file, gs_strbuf_cstr(&em.yaml), em.yaml.len, &err) != 0)
        goto fail;
    if (parted_stdout) {
        if (cli_write_output(&em.yaml, NULL, &err) != 0)
            goto fail;
    } else {
        cli_emit e;
        cli_emit_init(&e, &sb, fmt);
        if (fmt == CLI_FORMAT_TEXT)
            plan_text(&sb, &in, &plan, &em, w, nw);
        else
            plan_doc(&e, &in, &plan, &em, w, nw);
        if (finish(&sb, &e, fmt, &err) != 0)
            goto fail;
    }
    if (parted_file && !parted_stdout)
        cli_eprintf("wrote %s (%u configs)\n", parted_file, em.nconfigs);
    status = plan.complete ? CLI_EXIT_OK : CLI_EXIT_FOUND;
    goto done;
fail:
    status = cli_report_error(&err);
done:
    free(data);
    free(w);
    gs_strbuf_free(&sb);
    gs_mig_emit_free(&em);
    gs_mig_plan_free(&plan);
    gs_mig_plan_input_free(&in);
    return status;
}

/* ---------------------------------------------------------------- dispatch */
int gs_cmd_mig(int argc, char **argv)
{
    if (argc < 2) {
        fputs(cli_mig_usage, stderr);
        return CLI_EXIT_USAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "-h") || !strcmp(sub, "--help") || !strcmp(sub, "help"))
        return cli_print_usage(cli_mig_usage);
    if (!strcmp(sub, "profiles"))
        return cmd_profiles(argc - 1, argv + 1);
    if (!strcmp(sub, "validate"))
        return cmd_validate(argc - 1, argv + 1);
    if (!strcmp(sub, "plan"))
        return cmd_plan(argc - 1, argv + 1);
    cli_eprintf("gpusched: error: unknown mig command '%s' (see 'gpusched mig --help')\n", sub);
    return CLI_EXIT_USAGE;
}
