/*
 * cmd_schedule.c - `gpusched schedule`: admit and schedule every pending pod of a cluster
 * snapshot and print the decisions as a kubectl-like table, JSON or YAML.
 *
 * Which decisions are listed: every one except pods that were already bound and stay
 * bound (outcome bound) and pods the scheduler does not handle (skipped); --all lists
 * those too. Order is the engine's decision order (bound pods in input order, admission
 * rejections, then the scheduling queue). A preemption victim was bound in the input, so
 * it appears among the first rows with result "preempted" and no node.
 * The output format is documented in docs/cli/schedule.md and docs/output-json.md.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "gpusched/engine.h"
#include "output.h"

const char cli_schedule_usage[] =
    "usage: gpusched schedule [options] [CLUSTER...]\n"
    "\n"
    "Read a cluster snapshot (nodes, pods, workloads, PriorityClasses, ResourceQuotas,\n"
    "PodDisruptionBudgets) from files, directories or - (stdin), or from the cluster of\n"
    "the kubeconfig when no file is given, admit and schedule every pending pod with\n"
    "kube-scheduler's semantics, and print one decision per pod.\n"
    "\n"
    "Options:\n"
    "  -o, --output FORMAT      text (default), json or yaml\n"
    "      --output-file FILE   write the output to FILE (atomically) instead of stdout\n"
    "      --policy NAME        scoring policy: default, binpack, spread, rtcr\n"
    "      --seed N             seed of the tie-break between equal scores (default 0)\n"
    "      --no-preemption      never preempt lower-priority pods\n"
    "      --extended-resource-toleration, --no-extended-resource-toleration\n"
    "                           admission adds (or not) a toleration for every extended\n"
    "                           resource a pod requests, as the ExtendedResourceToleration\n"
    "                           plugin; default: on for GKE clusters (which run it), else off\n"
    "      --percentage-of-nodes-to-score P\n"
    "                           0 = every node (default), 1..100 as kube-scheduler's\n"
    "                           percentageOfNodesToScore, or 'adaptive'\n"
    "      --weights LIST       score plugin weights 0..100, e.g.\n"
    "                           taint=3,affinity=2,fit=1,balanced=1,gpushare=2\n"
    "      --all                also list pods already bound and pods skipped\n"
    "  -v, --verbose            report skipped objects of unknown kinds (and the cluster\n"
    "                           read) on stderr\n"
    "  -h, --help               show this help\n"
    "\n"
    CLI_LIVE_USAGE("list only the pods of NS (every pod is scheduled: they\n"
                   "                           share the nodes)\n")
    "\n"
    "Exit status: 0 every listed pod was scheduled, 1 some pod was not (unschedulable,\n"
    "rejected or preempted), 2 usage or input error, 3 internal error.\n";

enum {
    OPT_HELP,
    OPT_OUTPUT,
    OPT_OUTPUT_FILE,
    OPT_POLICY,
    OPT_SEED,
    OPT_NO_PREEMPTION,
    OPT_ERT,
    OPT_NO_ERT,
    OPT_PERCENTAGE,
    OPT_WEIGHTS,
    OPT_ALL,
    OPT_VERBOSE,
};

static const cli_opt schedule_opts[] = {
    {"help", 'h', false, OPT_HELP},
    {"output", 'o', true, OPT_OUTPUT},
    {"output-file", 0, true, OPT_OUTPUT_FILE},
    {"policy", 0, true, OPT_POLICY},
    {"seed", 0, true, OPT_SEED},
    {"no-preemption", 0, false, OPT_NO_PREEMPTION},
    {"extended-resource-toleration", 0, false, OPT_ERT},
    {"no-extended-resource-toleration", 0, false, OPT_NO_ERT},
    {"percentage-of-nodes-to-score", 0, true, OPT_PERCENTAGE},
    {"weights", 0, true, OPT_WEIGHTS},
    {"all", 0, false, OPT_ALL},
    {"verbose", 'v', false, OPT_VERBOSE},
    CLI_LIVE_OPTS,
};

typedef struct schedule_args {
    cli_format format;
    const char *output_file;
    const char *policy;
    bool has_seed;
    uint64_t seed;
    bool no_preemption;
    int ert; /* 1 on, 0 off, -1 unset (cli_ert) */
    bool has_percentage;
    int32_t percentage;
    const char *weights;
    bool all;
    bool verbose;
    const char **inputs; /* points into argv */
    size_t ninputs;
    cli_live live;
} schedule_args;

/* --weights taint=3,affinity=2,...: each name once or more (last wins), values 0..100. */
static int apply_weights(gs_config *cfg, const char *list, gs_error *err)
{
    static const struct {
        const char *name;
        size_t offset;
    } plugins[] = {
        {"taint", offsetof(gs_config, w_taint)},
        {"affinity", offsetof(gs_config, w_affinity)},
        {"fit", offsetof(gs_config, w_fit)},
        {"balanced", offsetof(gs_config, w_balanced)},
        {"gpushare", offsetof(gs_config, w_gpu_binpack)},
    };
    const char *p = list;
    if (!*p)
        return gs_fail(err, GS_ERR_USAGE, "--weights: empty list");
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (!eq)
            return gs_fail(err, GS_ERR_USAGE, "--weights: expected NAME=WEIGHT, got \"%.*s\"",
                           (int)len, p);
        size_t nlen = (size_t)(eq - p);
        size_t k = 0;
        while (k < sizeof plugins / sizeof plugins[0] &&
               !(strlen(plugins[k].name) == nlen && memcmp(plugins[k].name, p, nlen) == 0))
            k++;
        if (k == sizeof plugins / sizeof plugins[0])
            return gs_fail(err, GS_ERR_USAGE,
                           "--weights: unknown plugin \"%.*s\" (expected taint, affinity, fit, "
                           "balanced or gpushare)",
                           (int)nlen, p);
        char value[32];
        size_t vlen = len - nlen - 1;
        if (vlen >= sizeof value)
            vlen = sizeof value - 1;
        memcpy(value, eq + 1, vlen);
        value[vlen] = '\0';
        char what[48];
        snprintf(what, sizeof what, "--weights %s", plugins[k].name);
        int64_t w;
        if (cli_parse_int(what, value, 0, 100, &w, err) != 0)
            return -1;
        *(int32_t *)((char *)cfg + plugins[k].offset) = (int32_t)w;
        p += len;
        if (*p == ',') {
            p++;
            if (!*p)
                return gs_fail(err, GS_ERR_USAGE, "--weights: trailing comma");
        }
    }
    return 0;
}

static int parse_args(int argc, char **argv, schedule_args *a, bool *help, gs_error *err)
{
    cli_args it;
    cli_args_init(&it, argc, argv, 1, schedule_opts,
                  sizeof schedule_opts / sizeof schedule_opts[0]);
    a->policy = "default";
    const char *value;
    int id;
    int64_t v;
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
        case OPT_POLICY: a->policy = value; break;
        case OPT_SEED:
            if (cli_parse_int("--seed", value, 0, INT64_MAX, &v, err) != 0)
                return -1;
            a->has_seed = true;
            a->seed = (uint64_t)v;
            break;
        case OPT_NO_PREEMPTION: a->no_preemption = true; break;
        case OPT_ERT: a->ert = 1; break;
        case OPT_NO_ERT: a->ert = 0; break;
        case OPT_PERCENTAGE:
            a->has_percentage = true;
            if (strcmp(value, "adaptive") == 0) {
                a->percentage = -1;
                break;
            }
            if (cli_parse_int("--percentage-of-nodes-to-score", value, 0, 100, &v, err) != 0)
                return -1;
            a->percentage = (int32_t)v;
            break;
        case OPT_WEIGHTS: a->weights = value; break;
        case OPT_ALL: a->all = true; break;
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
    return cli_live_validate(&a->live, a->ninputs, "cluster files, directories or - for stdin", err);
}

/* ---------------------------------------------------------------- listing rules */
/* What is listed: --all, and -n (the pods of one namespace; all of them are scheduled). */
typedef struct listing {
    bool all;
    const char *ns;        /* NULL: every namespace */
    const gs_snapshot *s;
} listing;

static bool in_scope(const gs_decision *d, const listing *l)
{
    return !l->ns || strcmp(l->s->pods.v[d->pod].meta.namespace_, l->ns) == 0;
}

static bool listed(const gs_decision *d, const listing *l)
{
    return in_scope(d, l) && (l->all || (d->outcome != GS_OUT_BOUND && d->outcome != GS_OUT_SKIPPED));
}

/* The node a pod is on after the run: none for victims (evicted) and unplaced pods. */
static int32_t final_node(const gs_decision *d)
{
    if (d->outcome == GS_OUT_SCHEDULED || d->outcome == GS_OUT_BOUND)
        return d->node;
    return -1;
}

/* A score exists only when scoring ran: more than one feasible node. */
static bool has_score(const gs_decision *d)
{
    return d->outcome == GS_OUT_SCHEDULED && d->feasible > 1;
}

typedef struct outcome_counts {
    uint32_t n[GS_OUT_SKIPPED + 1];
} outcome_counts;

static void count_outcomes(const gs_cluster *c, const listing *l, outcome_counts *oc)
{
    memset(oc, 0, sizeof *oc);
    for (uint32_t i = 0; i < gs_cluster_ndecisions(c); i++) {
        const gs_decision *d = gs_cluster_decision(c, i);
        if ((unsigned)d->outcome <= GS_OUT_SKIPPED && in_scope(d, l))
            oc->n[d->outcome]++;
    }
}

static uint32_t acted_on(const outcome_counts *oc)
{
    return oc->n[GS_OUT_SCHEDULED] + oc->n[GS_OUT_UNSCHEDULABLE] + oc->n[GS_OUT_REJECTED] +
           oc->n[GS_OUT_PREEMPTED];
}

static const gs_node_gpus *node_gpus(const gs_cluster *c, int32_t node)
{
    if (node < 0)
        return NULL;
    gs_node_view view;
    gs_cluster_node_view(c, (uint32_t)node, &view);
    return view.gpus;
}

/* ---------------------------------------------------------------- text */
static void claim_devices(const gs_cluster *c, uint32_t pod, char *buf, size_t cap);

static void format_text(const gs_cluster *c, const listing *l, gs_strbuf *sb, cli_table *t)
{
    const gs_snapshot *s = gs_cluster_snapshot(c);
    uint32_t nd = gs_cluster_ndecisions(c);
    outcome_counts oc;
    count_outcomes(c, l, &oc);

    cli_table_cell(t, "NAMESPACE");
    cli_table_cell(t, "POD");
    cli_table_cell(t, "PRIORITY");
    cli_table_cell(t, "RESULT");
    cli_table_cell(t, "NODE");
    cli_table_cell(t, "DEVICES");
    cli_table_cell(t, "SCORE");
    uint32_t rows = 0;
    for (uint32_t i = 0; i < nd; i++) {
        const gs_decision *d = gs_cluster_decision(c, i);
        if (!listed(d, l))
            continue;
        rows++;
        const gs_pod *p = &s->pods.v[d->pod];
        int32_t node = final_node(d);
        char devices[256] = "<none>";
        if (node >= 0 && d->assign.n) {
            const gs_node_gpus *g = node_gpus(c, node);
            if (g)
                gs_gpu_assign_describe(g, &d->assign, devices, sizeof devices);
        }
        if (node >= 0 && !d->assign.n)
            claim_devices(c, d->pod, devices, sizeof devices);
        cli_table_cell(t, "%s", p->meta.namespace_);
        cli_table_cell(t, "%s", p->meta.name);
        cli_table_cell(t, "%d", (int)d->priority);
        cli_table_cell(t, "%s", gs_outcome_name(d->outcome));
        cli_table_cell(t, "%s", node >= 0 ? s->nodes.v[node].meta.name : "<none>");
        cli_table_cell(t, "%s", devices);
        if (has_score(d))
            cli_table_cell(t, "%lld", (long long)d->score);
        else
            cli_table_cell(t, "-");
    }
    if (rows)
        cli_table_render(t, sb, "");

    /* why each listed pod is not placed */
    bool first = true;
    for (uint32_t i = 0; i < nd; i++) {
        const gs_decision *d = gs_cluster_decision(c, i);
        if (!listed(d, l) || (d->outcome != GS_OUT_UNSCHEDULABLE &&
                                d->outcome != GS_OUT_REJECTED && d->outcome != GS_OUT_SKIPPED))
            continue;
        const gs_pod *p = &s->pods.v[d->pod];
        if (first)
            gs_strbuf_putc(sb, '\n');
        first = false;
        gs_strbuf_textf(sb, "%s/%s: %s\n", p->meta.namespace_, p->meta.name,
                         d->message ? d->message : gs_outcome_name(d->outcome));
    }

    /* preemptions, in decision order of the preemptors */
    first = true;
    for (uint32_t i = 0; i < nd; i++) {
        const gs_decision *d = gs_cluster_decision(c, i);
        if (!d->nvictims || !listed(d, l))
            continue;
        const gs_pod *p = &s->pods.v[d->pod];
        const char *node = d->node >= 0 ? s->nodes.v[d->node].meta.name : "<none>";
        for (uint32_t k = 0; k < d->nvictims; k++) {
            const gs_pod *v = &s->pods.v[d->victims[k]];
            if (first)
                gs_strbuf_putc(sb, '\n');
            first = false;
            gs_strbuf_textf(sb, "%s/%s preempted %s/%s on %s\n", p->meta.namespace_,
                             p->meta.name, v->meta.namespace_, v->meta.name, node);
        }
    }

    uint32_t nw = gs_cluster_nwarnings(c);
    for (uint32_t i = 0; i < nw; i++) {
        if (i == 0)
            gs_strbuf_putc(sb, '\n');
        gs_strbuf_textf(sb, "warning: %s\n", gs_cluster_warning(c, i));
    }

    if (sb->len)
        gs_strbuf_putc(sb, '\n');
    gs_strbuf_textf(sb, "%u pod%s: %u scheduled, %u unschedulable, %u rejected, %u preempted",
                     acted_on(&oc), acted_on(&oc) == 1 ? "" : "s", oc.n[GS_OUT_SCHEDULED],
                     oc.n[GS_OUT_UNSCHEDULABLE], oc.n[GS_OUT_REJECTED], oc.n[GS_OUT_PREEMPTED]);
    if (l->all)
        gs_strbuf_textf(sb, "; %u bound, %u skipped", oc.n[GS_OUT_BOUND], oc.n[GS_OUT_SKIPPED]);
    gs_strbuf_putc(sb, '\n');
}

/* The devices a pod's claims hold: "claim gpu: gpu-0,gpu-1" (claims in spec order, ";"
 * between them); unchanged when it has none allocated. */
static void claim_devices(const gs_cluster *c, uint32_t pod, char *buf, size_t cap)
{
    uint32_t ncl = gs_cluster_pod_nclaims(c, pod);
    size_t len = 0;
    for (uint32_t k = 0; k <= ncl && len + 1 < cap; k++) {
        gs_claim_view v;
        gs_dra_result_view res[GS_DRA_RESULTS_MAX];
        if (k < ncl)
            gs_cluster_pod_claim(c, pod, k, &v, res, GS_DRA_RESULTS_MAX);
        else if (!gs_cluster_pod_ext_claim(c, pod, &v, res, GS_DRA_RESULTS_MAX))
            break;
        if (!v.allocated || !v.nresults)
            continue;
        int n = snprintf(buf + len, cap - len, "%sclaim %s:", len ? "; " : "", v.name ? v.name : "(extended resources)");
        if (n < 0 || (size_t)n >= cap - len)
            break;
        len += (size_t)n;
        for (uint32_t r = 0; r < v.nresults && r < GS_DRA_RESULTS_MAX && len + 1 < cap; r++) {
            n = snprintf(buf + len, cap - len, "%s%s", r ? "," : " ", res[r].device);
            if (n < 0 || (size_t)n >= cap - len)
                break;
            len += (size_t)n;
        }
    }
}

/* ---------------------------------------------------------------- JSON / YAML */
/* A claim's allocation results as kube-scheduler writes them into status.allocation. */
static void emit_results(cli_emit *e, const gs_claim_view *v, const gs_dra_result_view *res)
{
    cli_emit_key(e, "results");
    cli_emit_begin_array(e);
    for (uint32_t r = 0; r < v->nresults && r < GS_DRA_RESULTS_MAX; r++) {
        cli_emit_begin_object(e);
        cli_emit_kv_str(e, "request", res[r].request);
        cli_emit_kv_str(e, "driver", res[r].driver);
        cli_emit_kv_str(e, "pool", res[r].pool);
        cli_emit_kv_str(e, "device", res[r].device);
        cli_emit_kv_bool(e, "adminAccess", res[r].admin_access);
        cli_emit_end_object(e);
    }
    cli_emit_end_array(e);
}

static void emit_decision(cli_emit *e, const gs_cluster *c, const gs_decision *d)
{
    const gs_snapshot *s = gs_cluster_snapshot(c);
    const gs_pod *p = &s->pods.v[d->pod];
    int32_t node = final_node(d);
    cli_emit_begin_object(e);
    cli_emit_kv_str(e, "namespace", p->meta.namespace_);
    cli_emit_kv_str(e, "name", p->meta.name);
    cli_emit_kv_str(e, "workload", p->workload);
    cli_emit_kv_int(e, "priority", d->priority);
    cli_emit_kv_str(e, "result", gs_outcome_name(d->outcome));
    cli_emit_kv_str(e, "node", node >= 0 ? s->nodes.v[node].meta.name : NULL);
    cli_emit_key(e, "score");
    if (has_score(d))
        cli_emit_int(e, d->score);
    else
        cli_emit_null(e);
    cli_emit_kv_int(e, "feasibleNodes", d->feasible);
    cli_emit_key(e, "gpuRequest");
    cli_emit_gpu_request(e, &d->gpu);
    cli_emit_key(e, "devices");
    if (node >= 0)
        cli_emit_devices(e, node_gpus(c, node), &d->assign);
    else
        cli_emit_devices(e, NULL, NULL);
    cli_emit_key(e, "victims");
    cli_emit_begin_array(e);
    for (uint32_t k = 0; k < d->nvictims; k++) {
        const gs_pod *v = &s->pods.v[d->victims[k]];
        cli_emit_begin_object(e);
        cli_emit_kv_str(e, "namespace", v->meta.namespace_);
        cli_emit_kv_str(e, "name", v->meta.name);
        cli_emit_end_object(e);
    }
    cli_emit_end_array(e);
    cli_emit_kv_str(e, "message", d->message);
    cli_emit_key(e, "reasons");
    cli_emit_begin_array(e);
    for (uint32_t k = 0; k < d->nreasons; k++) {
        cli_emit_begin_object(e);
        cli_emit_kv_str(e, "reason", d->reasons[k].reason);
        cli_emit_kv_int(e, "count", d->reasons[k].count);
        cli_emit_end_object(e);
    }
    cli_emit_end_array(e);
    cli_emit_key(e, "claims");
    cli_emit_begin_array(e);
    uint32_t ncl = gs_cluster_pod_nclaims(c, d->pod);
    for (uint32_t k = 0; k < ncl; k++) {
        gs_claim_view v;
        gs_dra_result_view res[GS_DRA_RESULTS_MAX];
        gs_cluster_pod_claim(c, d->pod, k, &v, res, GS_DRA_RESULTS_MAX);
        cli_emit_begin_object(e);
        cli_emit_kv_str(e, "name", v.name);
        cli_emit_key(e, "claim");
        if (v.claim_name) {
            char buf[600];
            snprintf(buf, sizeof buf, "%s/%s", v.claim_namespace, v.claim_name);
            cli_emit_str(e, buf);
        } else {
            cli_emit_null(e);
        }
        cli_emit_kv_bool(e, "generated", v.generated);
        cli_emit_kv_bool(e, "allocated", v.allocated);
        emit_results(e, &v, res);
        cli_emit_end_object(e);
    }
    cli_emit_end_array(e);
    cli_emit_key(e, "extendedResourceClaim");
    gs_claim_view xv;
    gs_dra_result_view xres[GS_DRA_RESULTS_MAX];
    if (gs_cluster_pod_ext_claim(c, d->pod, &xv, xres, GS_DRA_RESULTS_MAX) && xv.allocated) {
        cli_emit_begin_object(e);
        char buf[600];
        snprintf(buf, sizeof buf, "%s/%s", xv.claim_namespace, xv.claim_name);
        cli_emit_kv_str(e, "claim", buf);
        cli_emit_kv_bool(e, "generated", xv.generated);
        emit_results(e, &xv, xres);
        cli_emit_end_object(e);
    } else {
        cli_emit_null(e);
    }
    cli_emit_end_object(e);
}

static int format_document(const gs_cluster *c, const listing *l, cli_format fmt, gs_strbuf *sb)
{
    const gs_config *cfg = gs_cluster_config(c);
    outcome_counts oc;
    count_outcomes(c, l, &oc);
    cli_emit e;
    cli_emit_init(&e, sb, fmt);
    cli_emit_begin_object(&e);
    cli_emit_kv_str(&e, "apiVersion", "gpusched.io/v1alpha1");
    cli_emit_kv_str(&e, "kind", "ScheduleResult");
    cli_emit_kv_str(&e, "policy", cfg->policy);
    cli_emit_key(&e, "seed");
    cli_emit_uint(&e, cfg->seed);
    cli_emit_key(&e, "summary");
    cli_emit_begin_object(&e);
    cli_emit_kv_int(&e, "pods", acted_on(&oc));
    cli_emit_kv_int(&e, "scheduled", oc.n[GS_OUT_SCHEDULED]);
    cli_emit_kv_int(&e, "unschedulable", oc.n[GS_OUT_UNSCHEDULABLE]);
    cli_emit_kv_int(&e, "rejected", oc.n[GS_OUT_REJECTED]);
    cli_emit_kv_int(&e, "preempted", oc.n[GS_OUT_PREEMPTED]);
    cli_emit_kv_int(&e, "bound", oc.n[GS_OUT_BOUND]);
    cli_emit_end_object(&e);
    cli_emit_key(&e, "decisions");
    cli_emit_begin_array(&e);
    for (uint32_t i = 0; i < gs_cluster_ndecisions(c); i++) {
        const gs_decision *d = gs_cluster_decision(c, i);
        if (listed(d, l))
            emit_decision(&e, c, d);
    }
    cli_emit_end_array(&e);
    cli_emit_key(&e, "warnings");
    cli_emit_begin_array(&e);
    for (uint32_t i = 0; i < gs_cluster_nwarnings(c); i++)
        cli_emit_str(&e, gs_cluster_warning(c, i));
    cli_emit_end_array(&e);
    cli_emit_end_object(&e);
    return cli_emit_finish(&e);
}

/* ---------------------------------------------------------------- command */
static int build_config(const schedule_args *a, gs_config *cfg, gs_error *err)
{
    if (gs_config_policy(cfg, a->policy, err) != 0) {
        err->code = GS_ERR_USAGE;
        return -1;
    }
    if (a->has_seed)
        cfg->seed = a->seed;
    if (a->no_preemption)
        cfg->preemption = false;
    if (a->has_percentage)
        cfg->percentage_of_nodes_to_score = a->percentage;
    if (a->weights && apply_weights(cfg, a->weights, err) != 0)
        return -1;
    return 0;
}

int cmd_schedule(int argc, char **argv)
{
    schedule_args a;
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
        (!help && build_config(&a, &cfg, &err) != 0)) {
        free(a.inputs);
        return err.code == GS_ERR_USAGE ? cli_usage_error("schedule", &err)
                                        : cli_report_error(&err);
    }
    if (help) {
        free(a.inputs);
        return cli_print_usage(cli_schedule_usage);
    }

    int status = CLI_EXIT_OK;
    gs_snapshot snap;
    gs_snapshot_init(&snap);
    gs_cluster *c = NULL;
    gs_strbuf out = GS_STRBUF_INIT;
    cli_table table;
    cli_table_init(&table, 7);
    if (cli_read_cluster(&a.live, &snap, a.inputs, a.ninputs, NULL, a.verbose, &err) != 0) {
        status = cli_report_error(&err);
        goto done;
    }
    listing lst = {a.all, a.live.namespace_, &snap};
    cfg.extended_resource_toleration = cli_ert(&snap, a.ert);
    if (!(c = gs_cluster_new(&snap, &cfg, &err)) || gs_schedule_run(c, &err) != 0) {
        status = cli_report_error(&err);
        goto done;
    }
    if (a.format == CLI_FORMAT_TEXT) {
        format_text(c, &lst, &out, &table);
        if (table.oom)
            out.oom = true;
    } else if (format_document(c, &lst, a.format, &out) != 0) {
        gs_fail(&err, GS_ERR_INTERNAL, "schedule: the output document is malformed");
        status = cli_report_error(&err);
        goto done;
    }
    if ((a.format == CLI_FORMAT_TEXT ? cli_write_text_output : cli_write_output)(&out, a.output_file, &err) != 0) {
        status = cli_report_error(&err);
        goto done;
    }
    for (uint32_t i = 0; i < gs_cluster_ndecisions(c); i++) {
        const gs_decision *d = gs_cluster_decision(c, i);
        if (listed(d, &lst) && (d->outcome == GS_OUT_UNSCHEDULABLE ||
                                 d->outcome == GS_OUT_REJECTED || d->outcome == GS_OUT_PREEMPTED))
            status = CLI_EXIT_FOUND;
    }
done:
    cli_table_free(&table);
    gs_strbuf_free(&out);
    gs_cluster_free(c);
    gs_snapshot_free(&snap);
    free(a.inputs);
    return status;
}
