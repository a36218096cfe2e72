/*
 * cmd_explain.c - `gpusched explain`: the on-call view of a cluster snapshot. Schedules it
 * without preemption (explain proposes preemption instead of doing it), then prints for
 * every pending GPU pod why it is pending and the smallest fixes, the GPU node hygiene
 * problems, and GPU allocation per node pool. Formats: text, JSON, YAML
 * (docs/cli/explain.md, docs/output-json.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "gpusched/engine.h"
#include "output.h"

const char cli_explain_usage[] =
    "usage: gpusched explain [options] [SNAPSHOT...]\n"
    "\n"
    "Read a cluster snapshot from files, directories or - (stdin), or from the cluster of\n"
    "the kubeconfig when no file is given, schedule it without preemption, and explain\n"
    "every pending GPU pod: why it is pending and the smallest changes that would let it\n"
    "run. Then report GPU node hygiene (GPU nodes without a NoSchedule GPU taint and the\n"
    "non-GPU pods on them, GPU nodes whose device plugin advertises no GPUs) and GPU\n"
    "allocation per node pool.\n"
    "\n"
    "Options:\n"
    "  -o, --output FORMAT      text (default), json or yaml\n"
    "      --output-file FILE   write the output to FILE (atomically) instead of stdout\n"
    "      --taint-key KEY      a taint key that marks GPU nodes (repeatable;\n"
    "                           default nvidia.com/gpu)\n"
    "      --policy NAME        scoring policy: default, binpack, spread, rtcr\n"
    "      --extended-resource-toleration, --no-extended-resource-toleration\n"
    "                           admission adds (or not) a toleration for every extended\n"
    "                           resource a pod requests, as the ExtendedResourceToleration\n"
    "                           plugin; default: on for GKE clusters (which run it), else off\n"
    "  -v, --verbose            report skipped objects of unknown kinds (and the cluster\n"
    "                           read) on stderr\n"
    "  -h, --help               show this help\n"
    "\n"
    CLI_LIVE_USAGE("explain only the pending GPU pods of NS (hygiene and\n"
                   "                           allocation stay cluster-wide: nodes are shared)\n")
    "\n"
    "Exit status: 0 nothing to report, 1 GPU pods that cannot run now or hygiene\n"
    "problems, 2 usage or input error, 3 internal error.\n";

#define EXPLAIN_MAX_TAINT_KEYS 32
#define EXPLAIN_MAX_LISTED_PODS 10 /* non-GPU pods named per node in the text output */

enum { OPT_HELP, OPT_OUTPUT, OPT_OUTPUT_FILE, OPT_TAINT_KEY, OPT_POLICY, OPT_ERT, OPT_NO_ERT, OPT_VERBOSE };

static const cli_opt explain_opts[] = {
    {"help", 'h', false, OPT_HELP},
    {"output", 'o', true, OPT_OUTPUT},
    {"output-file", 0, true, OPT_OUTPUT_FILE},
    {"taint-key", 0, true, OPT_TAINT_KEY},
    {"policy", 0, true, OPT_POLICY},
    {"extended-resource-toleration", 0, false, OPT_ERT},
    {"no-extended-resource-toleration", 0, false, OPT_NO_ERT},
    {"verbose", 'v', false, OPT_VERBOSE},
    CLI_LIVE_OPTS,
};

typedef struct explain_args {
    cli_format format;
    const char *output_file;
    const char *policy;
    const char *taint_keys[EXPLAIN_MAX_TAINT_KEYS + 1]; /* NULL-terminated */
    size_t ntaint_keys;
    bool verbose;
    int ert; /* 1 on, 0 off, -1 unset (cli_ert) */
    const char **inputs; /* points into argv */
    size_t ninputs;
    cli_live live;
} explain_args;

static int parse_args(int argc, char **argv, explain_args *a, bool *help, gs_error *err)
{
    cli_args it;
    cli_args_init(&it, argc, argv, 1, explain_opts,
                  sizeof explain_opts / sizeof explain_opts[0]);
    a->policy = "default";
    const char *value;
    int id;
    while ((id = cli_args_next(&it, &value, err)) != CLI_ARG_END) {
        switch (id) {
        case CLI_ARG_ERROR: return -1;
        case CLI_ARG_POSITIONAL: a->inputs[a->ninputs++] = value; break;
        case OPT_HELP: *help = true; return 0;
        case OPT_OUTPUT:
            if (cli_parse_format(value, &a->format, err))
                return -1;
            break;
        case OPT_OUTPUT_FILE: a->output_file = value; break;
        case OPT_TAINT_KEY:
            if (!value[0])
                return gs_fail(err, GS_ERR_USAGE, "--taint-key: empty key");
            if (a->ntaint_keys == EXPLAIN_MAX_TAINT_KEYS)
                return gs_fail(err, GS_ERR_USAGE, "--taint-key: at most %d keys",
                               EXPLAIN_MAX_TAINT_KEYS);
            a->taint_keys[a->ntaint_keys++] = value;
            a->taint_keys[a->ntaint_keys] = NULL;
            break;
        case OPT_POLICY: a->policy = value; break;
        case OPT_ERT: a->ert = 1; break;
        case OPT_NO_ERT: a->ert = 0; break;
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
    return cli_live_validate(&a->live, a->ninputs, "snapshot files, directories or - for stdin", err);
}

static const char *fix_kind_name(gs_fix_kind k)
{
    switch (k) {
    case GS_FIX_TOLERATE_TAINT: return "tolerate-taint";
    case GS_FIX_RAISE_QUOTA: return "raise-quota";
    case GS_FIX_PREEMPT: return "preempt";
    case GS_FIX_MODEL: return "model";
    case GS_FIX_MIG_PROFILE: return "mig-profile";
    case GS_FIX_FRAGMENTATION: return "fragmentation";
    case GS_FIX_ADD_CAPACITY: return "add-capacity";
    case GS_FIX_AFFINITY: return "affinity";
    case GS_FIX_PRIORITY_CLASS: return "priority-class";
    case GS_FIX_MOVE_NON_GPU_PODS: return "move-non-gpu-pods";
    case GS_FIX_OTHER: return "other";
    case GS_FIX_CLAIM: return "claim";
    default: break; /* a kind newer than this face: still valid output */
    }
    return "other";
}

/* A pending GPU pod blocks (exit 1) unless the run found it a node: then it would run as
 * soon as its scheduler looks at it. */
static bool pod_blocked(const gs_cluster *c, const gs_explain_pod *ep)
{
    const gs_decision *d = gs_cluster_decision_for_pod(c, ep->pod);
    return !d || d->outcome != GS_OUT_SCHEDULED;
}

static bool found_problems(const gs_cluster *c, const gs_explain *ex)
{
    if (ex->nhygiene)
        return true;
    for (uint32_t i = 0; i < ex->npods; i++)
        if (pod_blocked(c, &ex->pods[i]))
            return true;
    return false;
}

/* ---------------------------------------------------------------- text */
static void text_taint_keys(gs_strbuf *sb, const char *const *keys)
{
    if (!keys || !keys[0]) {
        gs_strbuf_puts(sb, "nvidia.com/gpu");
        return;
    }
    if (!keys[1]) {
        gs_strbuf_puts(sb, keys[0]);
        return;
    }
    gs_strbuf_puts(sb, "any of ");
    for (size_t i = 0; keys[i]; i++)
        gs_strbuf_textf(sb, "%s%s", i ? ", " : "", keys[i]);
}

static void text_pending(const gs_cluster *c, const gs_explain *ex, gs_strbuf *sb)
{
    const gs_snapshot *s = gs_cluster_snapshot(c);
    gs_strbuf_textf(sb, "PENDING GPU PODS (%u)\n", ex->npods);
    if (!ex->npods)
        gs_strbuf_puts(sb, "  none\n");
    for (uint32_t i = 0; i < ex->npods; i++) {
        const gs_explain_pod *ep = &ex->pods[i];
        const gs_pod *p = &s->pods.v[ep->pod];
        const gs_decision *d = gs_cluster_decision_for_pod(c, ep->pod);
        char req[160];
        gs_gpu_request_describe(d ? &d->gpu : &(gs_gpu_request){0}, req, sizeof req);
        uint32_t ncl = gs_cluster_pod_nclaims(c, ep->pod);
        if (ncl && (!d || d->gpu.kind == GS_GPU_NONE)) {
            /* DRA: the claims it uses */
            size_t len = (size_t)snprintf(req, sizeof req, "claim%s", ncl == 1 ? "" : "s");
            for (uint32_t k = 0; k < ncl && len + 1 < sizeof req; k++) {
                gs_claim_view v;
                gs_cluster_pod_claim(c, ep->pod, k, &v, NULL, 0);
                int w = v.claim_name ? snprintf(req + len, sizeof req - len, "%s %s", k ? "," : "", v.claim_name)
                                     : snprintf(req + len, sizeof req - len, "%s %s (not made yet)", k ? "," : "", v.name);
                if (w < 0 || (size_t)w >= sizeof req - len)
                    break;
                len += (size_t)w;
            }
        }
        gs_strbuf_textf(sb, "  %s/%s  (%s, priority %d)\n", p->meta.namespace_, p->meta.name,
                         req, d ? (int)d->priority : 0);
        gs_strbuf_textf(sb, "    why:  %s\n", ep->why ? ep->why : "unknown");
        if (ep->message)
            gs_strbuf_textf(sb, "    scheduler: %s\n", ep->message);
        for (uint32_t k = 0; k < ep->nfixes; k++)
            gs_strbuf_textf(sb, "    fix:  %s\n", ep->fixes[k].text);
    }
}

static void text_hygiene(const gs_cluster *c, const gs_explain *ex, const char *const *keys,
                         gs_strbuf *sb)
{
    const gs_snapshot *s = gs_cluster_snapshot(c);
    gs_strbuf_puts(sb, "GPU HYGIENE\n");
    if (!ex->nhygiene)
        gs_strbuf_puts(sb, "  no problems found\n");
    for (uint32_t i = 0; i < ex->nhygiene; i++) {
        const gs_hygiene_node *h = &ex->hygiene[i];
        gs_strbuf_textf(sb, "  %s: ", s->nodes.v[h->node].meta.name);
        const char *sep = "";
        if (h->untainted_gpu_node) {
            gs_strbuf_puts(sb, "GPU node without a NoSchedule taint on ");
            text_taint_keys(sb, keys);
            const gs_taint *other = gs_node_custom_noschedule_taint(&s->nodes.v[h->node]);
            if (other)
                gs_strbuf_textf(sb, " (it has the NoSchedule taint %s%s%s: if that key marks GPU nodes, "
                                     "pass --taint-key %s)",
                                 other->key, other->value && other->value[0] ? "=" : "",
                                 other->value ? other->value : "", other->key);
            sep = "; ";
            if (h->nnon_gpu_pods) {
                gs_strbuf_textf(sb, "; %u non-GPU pod%s on it: ", h->nnon_gpu_pods,
                                 h->nnon_gpu_pods == 1 ? "" : "s");
                for (uint32_t k = 0; k < h->nnon_gpu_pods && k < EXPLAIN_MAX_LISTED_PODS; k++) {
                    const gs_pod *p = &s->pods.v[h->non_gpu_pods[k]];
                    gs_strbuf_textf(sb, "%s%s/%s", k ? ", " : "", p->meta.namespace_,
                                     p->meta.name);
                }
                if (h->nnon_gpu_pods > EXPLAIN_MAX_LISTED_PODS)
                    gs_strbuf_textf(sb, " and %u more",
                                     h->nnon_gpu_pods - EXPLAIN_MAX_LISTED_PODS);
            }
        }
        if (h->device_plugin_down) {
            gs_strbuf_textf(sb, "%slabelled as a GPU node but advertises no GPUs (device "
                                 "plugin down?)",
                             sep);
            sep = "; ";
        }
        if (h->problem)
            gs_strbuf_textf(sb, "%s%s", sep, h->problem);
        gs_strbuf_putc(sb, '\n');
    }
}

static void text_pools(const gs_explain *ex, gs_strbuf *sb, cli_table *t)
{
    gs_strbuf_puts(sb, "GPU ALLOCATION BY POOL\n");
    if (!ex->npools) {
        gs_strbuf_puts(sb, "  no GPU nodes\n");
        return;
    }
    cli_table_cell(t, "POOL");
    cli_table_cell(t, "NODES");
    cli_table_cell(t, "GPUS");
    cli_table_cell(t, "ALLOCATED");
    cli_table_cell(t, "MIG (USED/TOTAL)");
    uint32_t mig = 0, mig_used = 0;
    for (uint32_t i = 0; i < ex->npools; i++) {
        const gs_pool_usage *pu = &ex->pools[i];
        cli_table_cell(t, "%s", pu->pool);
        cli_table_cell(t, "%u", pu->nodes);
        cli_table_cell(t, "%u", pu->gpus);
        cli_table_cell(t, "%.2f", pu->gpus_allocated);
        cli_table_cell(t, "%u/%u", pu->mig_used, pu->mig_instances);
        mig += pu->mig_instances;
        mig_used += pu->mig_used;
    }
    cli_table_cell(t, "total");
    cli_table_cell(t, "%u", ex->gpu_nodes);
    cli_table_cell(t, "%u", ex->gpus_total);
    cli_table_cell(t, "%.2f", ex->gpus_allocated);
    cli_table_cell(t, "%u/%u", mig_used, mig);
    cli_table_render(t, sb, "  ");
}

/* ---------------------------------------------------------------- JSON / YAML */
static int format_document(const gs_cluster *c, const gs_explain *ex, cli_format fmt,
                           gs_strbuf *sb)
{
    const gs_snapshot *s = gs_cluster_snapshot(c);
    cli_emit e;
    cli_emit_init(&e, sb, fmt);
    cli_emit_begin_object(&e);
    cli_emit_kv_str(&e, "apiVersion", "gpusched.io/v1alpha1");
    cli_emit_kv_str(&e, "kind", "Explanation");
    cli_emit_key(&e, "pendingGpuPods");
    cli_emit_begin_array(&e);
    for (uint32_t i = 0; i < ex->npods; i++) {
        const gs_explain_pod *ep = &ex->pods[i];
        const gs_pod *p = &s->pods.v[ep->pod];
        const gs_decision *d = gs_cluster_decision_for_pod(c, ep->pod);
        cli_emit_begin_object(&e);
        cli_emit_kv_str(&e, "namespace", p->meta.namespace_);
        cli_emit_kv_str(&e, "name", p->meta.name);
        cli_emit_kv_int(&e, "priority", d ? d->priority : 0);
        cli_emit_kv_str(&e, "result", d ? gs_outcome_name(d->outcome) : NULL);
        cli_emit_key(&e, "gpuRequest");
        cli_emit_gpu_request(&e, d ? &d->gpu : &(gs_gpu_request){0});
        cli_emit_kv_str(&e, "why", ep->why);
        cli_emit_kv_str(&e, "message", ep->message);
        cli_emit_key(&e, "fixes");
        cli_emit_begin_array(&e);
        for (uint32_t k = 0; k < ep->nfixes; k++) {
            const gs_fix *f = &ep->fixes[k];
            cli_emit_begin_object(&e);
            cli_emit_kv_str(&e, "kind", fix_kind_name(f->kind));
            cli_emit_kv_str(&e, "text", f->text);
            cli_emit_kv_str(&e, "object", f->object);
            cli_emit_kv_int(&e, "amount", f->amount);
            cli_emit_kv_str(&e, "cause", f->cause);
            cli_emit_end_object(&e);
        }
        cli_emit_end_array(&e);
        cli_emit_end_object(&e);
    }
    cli_emit_end_array(&e);

    cli_emit_key(&e, "hygiene");
    cli_emit_begin_array(&e);
    for (uint32_t i = 0; i < ex->nhygiene; i++) {
        const gs_hygiene_node *h = &ex->hygiene[i];
        cli_emit_begin_object(&e);
        cli_emit_kv_str(&e, "node", s->nodes.v[h->node].meta.name);
        cli_emit_kv_bool(&e, "untaintedGpuNode", h->untainted_gpu_node);
        cli_emit_kv_bool(&e, "devicePluginDown", h->device_plugin_down);
        if (h->problem)
            cli_emit_kv_str(&e, "problem", h->problem);
        cli_emit_key(&e, "nonGpuPods");
        cli_emit_begin_array(&e);
        for (uint32_t k = 0; k < h->nnon_gpu_pods; k++) {
            const gs_pod *p = &s->pods.v[h->non_gpu_pods[k]];
            cli_emit_begin_object(&e);
            cli_emit_kv_str(&e, "namespace", p->meta.namespace_);
            cli_emit_kv_str(&e, "name", p->meta.name);
            cli_emit_end_object(&e);
        }
        cli_emit_end_array(&e);
        cli_emit_end_object(&e);
    }
    cli_emit_end_array(&e);

    cli_emit_key(&e, "pools");
    cli_emit_begin_array(&e);
    for (uint32_t i = 0; i < ex->npools; i++) {
        const gs_pool_usage *pu = &ex->pools[i];
        cli_emit_begin_object(&e);
        cli_emit_kv_str(&e, "pool", pu->pool);
        cli_emit_kv_int(&e, "nodes", pu->nodes);
        cli_emit_kv_int(&e, "gpus", pu->gpus);
        cli_emit_key(&e, "gpusAllocated");
        cli_emit_double(&e, pu->gpus_allocated, 3);
        cli_emit_kv_int(&e, "migInstances", pu->mig_instances);
        cli_emit_kv_int(&e, "migUsed", pu->mig_used);
        cli_emit_end_object(&e);
    }
    cli_emit_end_array(&e);

    cli_emit_key(&e, "totals");
    cli_emit_begin_object(&e);
    cli_emit_kv_int(&e, "gpuNodes", ex->gpu_nodes);
    cli_emit_kv_int(&e, "gpus", ex->gpus_total);
    cli_emit_key(&e, "gpusAllocated");
    cli_emit_double(&e, ex->gpus_allocated, 3);
    cli_emit_end_object(&e);
    cli_emit_end_object(&e);
    return cli_emit_finish(&e);
}

/* ---------------------------------------------------------------- command */
int cmd_explain(int argc, char **argv)
{
    explain_args a;
    memset(&a, 0, sizeof a);
    a.ert = -1;
    gs_error err;
    gs_error_clear(&err);
    a.inputs = calloc((size_t)(argc > 0 ? argc : 1), sizeof *a.inputs);
    if (!a.inputs) {
        gs_fail(&err, GS_ERR_NOMEM, "out of memory");
        return cli_report_error(&err);
    }
    bool help = false;
    gs_config cfg;
    if (parse_args(argc, argv, &a, &help, &err) != 0 ||
        (!help && gs_config_policy(&cfg, a.policy, &err) != 0)) {
        free(a.inputs);
        if (err.code == GS_ERR_NOTFOUND)
            err.code = GS_ERR_USAGE;
        return err.code == GS_ERR_USAGE ? cli_usage_error("explain", &err)
                                        : cli_report_error(&err);
    }
    if (help) {
        free(a.inputs);
        return cli_print_usage(cli_explain_usage);
    }
    cfg.preemption = false; /* explain proposes preemption, it does not act on it */
    const char *const *keys = a.ntaint_keys ? a.taint_keys : NULL;

    int status = CLI_EXIT_OK;
    gs_snapshot snap;
    gs_snapshot_init(&snap);
    gs_cluster *c = NULL;
    const gs_explain *ex = NULL;
    gs_explain scoped;
    memset(&scoped, 0, sizeof scoped);
    gs_strbuf out = GS_STRBUF_INIT;
    cli_table table;
    cli_table_init(&table, 5);
    if (cli_read_cluster(&a.live, &snap, a.inputs, a.ninputs, NULL, a.verbose, &err) != 0) {
        status = cli_report_error(&err);
        goto done;
    }
    cfg.extended_resource_toleration = cli_ert(&snap, a.ert);
    if (!(c = gs_cluster_new(&snap, &cfg, &err)) || gs_schedule_run(c, &err) != 0 ||
        gs_explain_run(c, keys, &ex, &err) != 0) {
        status = cli_report_error(&err);
        goto done;
    }
    if (a.live.namespace_) { /* -n: the pending GPU pods of that namespace */
        scoped = *ex;
        scoped.pods = calloc(ex->npods ? ex->npods : 1, sizeof *scoped.pods);
        if (!scoped.pods) {
            gs_fail(&err, GS_ERR_NOMEM, "out of memory");
            status = cli_report_error(&err);
            goto done;
        }
        scoped.npods = 0;
        for (uint32_t i = 0; i < ex->npods; i++)
            if (strcmp(snap.pods.v[ex->pods[i].pod].meta.namespace_, a.live.namespace_) == 0)
                scoped.pods[scoped.npods++] = ex->pods[i];
        ex = &scoped;
    }
    if (a.format == CLI_FORMAT_TEXT) {
        text_pending(c, ex, &out);
        gs_strbuf_putc(&out, '\n');
        text_hygiene(c, ex, keys, &out);
        gs_strbuf_putc(&out, '\n');
        text_pools(ex, &out, &table);
        if (table.oom)
            out.oom = true;
    } else if (format_document(c, ex, a.format, &out) != 0) {
        gs_fail(&err, GS_ERR_INTERNAL, "explain: the output document is malformed");
        status = cli_report_error(&err);
        goto done;
    }
    if ((a.format == CLI_FORMAT_TEXT ? cli_write_text_output : cli_write_output)(&out, a.output_file, &err) != 0) {
        status = cli_report_error(&err);
        goto done;
    }
    if (found_problems(c, ex))
        status = CLI_EXIT_FOUND;
done:
    free(scoped.pods);
    cli_table_free(&table);
    gs_strbuf_free(&out);
    gs_cluster_free(c);
    gs_snapshot_free(&snap);
    free(a.inputs);
    return status;
}
