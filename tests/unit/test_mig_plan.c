/* test_mig_plan.c - the `mig plan` input, the planner and its outputs.
 *
 * The planner is checked against an independent brute force on small random pools
 * (every assignment of replicas to GPUs, costed from first principles with
 * gs_mig_layout_fits): the exact search must match the optimum on the whole objective,
 * the heuristic must stay feasible and never beat it, and the LP lower bound must never
 * exceed it. Every emitted layout must pass validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/mig.h"

/* ---------------------------------------------------------------- helpers */
static int parse(gs_mig_plan_input *in, const char *yaml, gs_error *err)
{
    gs_mig_plan_input_init(in);
    return gs_mig_plan_input_parse(in, "p.yaml", yaml, strlen(yaml), err);
}

static void expect_error(const char *yaml, int line, int col, const char *what)
{
    gs_mig_plan_input in;
    gs_error err;
    int rc = parse(&in, yaml, &err);
    gs_mig_plan_input_free(&in);
    assert_int_equal(rc, -1);
    if (err.line != line || err.col != col || !strstr(err.msg, what))
        fail_msg("got %d:%d \"%s\" (path %s), want %d:%d \"%s\"", err.line, err.col, err.msg,
                 err.path, line, col, what);
}

#define HEAD "apiVersion: gpusched.io/v1alpha1\nkind: MigPlan\n"

static void test_input_errors(void **state)
{
    (void)state;
    expect_error("apiVersion: v1\nkind: MigPlan\n", 1, 13, "unknown apiVersion");
    expect_error(HEAD "services: []\n", 3, 11, "services must be a non-empty list");
    expect_error(HEAD "services:\n  - replicas: 2\n    memoryGiB: 4\n", 4, 5,
                 "missing required field name");
    expect_error(HEAD "services:\n  - name: a\n    memoryGiB: 4\n    parameters: 7B\n", 6, 17,
                 "either memoryGiB or a model shape");
    expect_error(HEAD "services:\n  - name: a\n    parameters: 7B\n    dtype: fp6\n", 6, 12,
                 "unknown dtype");
    expect_error(HEAD "services:\n  - name: a\n    parameters: seven\n", 5, 17,
                 "expected a parameter count");
    expect_error(HEAD "services:\n  - name: a\n    parameters: 7B\n    kvCache: {layers: 32}\n",
                 6, 14, "missing required field kvHeads");
    expect_error(HEAD "services:\n  - {name: a, memoryGiB: 4}\n  - {name: a, memoryGiB: 5}\n", 5,
                 12, "duplicate service name");
    expect_error(HEAD "services:\n  - {name: a, memoryGiB: 4, replicas: -1}\n", 4, 39,
                 "out of range");
    expect_error(HEAD "services:\n  - {name: a, memoryGiB: 4, color: red}\n", 4, 29,
                 "unknown field \"color\"");
    /* node layouts are validated against the node's model, with positions */
    expect_error(HEAD "services:\n  - {name: a, memoryGiB: 4}\n"
                      "inventory:\n  nodes:\n"
                      "    - name: n\n      product: NVIDIA-A100-SXM4-80GB\n      gpus: 2\n"
                      "      currentConfig:\n"
                      "        - devices: all\n          mig-enabled: true\n"
                      "          mig-devices: {\"4g.40gb\": 2}\n",
                 13, 24, "4g.40gb x2: at most 1 per GPU");
    expect_error(HEAD "services:\n  - {name: a, memoryGiB: 4}\n"
                      "inventory:\n  nodes:\n"
                      "    - {name: n, product: NVIDIA-A30, gpus: 2, currentConfig: all-1g.10gb}\n",
                 7, 62, "not a built-in config of A30-24GB");
    expect_error(HEAD "services:\n  - {name: a, memoryGiB: 4}\n"
                      "inventory:\n  nodes:\n"
                      "    - name: n\n      product: NVIDIA-A30\n      gpus: 2\n"
                      "      currentConfig:\n        - devices: [2]\n          mig-enabled: false\n",
                 11, 11, "GPU 2 does not exist");
}

static void test_input_shapes_and_counts(void **state)
{
    (void)state;
    gs_mig_plan_input in;
    gs_error err;
    int rc = parse(&in,
                   HEAD "services:\n"
                        "  - {name: a, parameters: 1.5b, dtype: bf16, headroom: 0}\n"
                        "  - {name: b, parameters: 70e9, dtype: int4, replicas: 0, overheadGiB: 0, headroom: 0,"
                        " activationFraction: 0}\n"
                        "inventory:\n  nodes:\n"
                        "    - {name: h, product: NVIDIA-H100-80GB-HBM3, gpus: 8, count: 3,"
                        " currentConfig: all-balanced}\n"
                        "    - {name: t, product: Tesla-T4, gpus: 4}\n",
                   &err);
    if (rc != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(in.nservices, 2);
    assert_true(in.services[0].parameters == 1.5e9);
    assert_true(in.services[0].need_gib > 1.5e9 * 2 / 1073741824.0 + 1.0);
    /* 70e9 x 0.5 bytes, nothing else */
    assert_true(in.services[1].need_gib > 32.59 && in.services[1].need_gib < 32.61);
    assert_int_equal(in.nnodes, 4);
    assert_string_equal(in.nodes[2].name, "h-2");
    assert_int_equal(in.ngpus, 24);
    assert_int_equal(in.nodes_skipped, 1);
    assert_int_equal(in.gpus_skipped, 4);
    assert_non_null(in.nodes[0].current);
    assert_int_equal(in.nodes[0].current[7].n, 4);
    gs_mig_plan_input_free(&in);
}

static void test_csv_inventory(void **state)
{
    (void)state;
    gs_mig_plan_input in;
    gs_error err;
    assert_int_equal(parse(&in, HEAD "services:\n  - {name: a, memoryGiB: 4}\n", &err), 0);
    const char *csv = "gpu_model,gpu_capacity_num,cpu_num,node_name\n"
                      "A100-SXM4-80GB,8,128,3\n"
                      "\"H800\",8,96,\"h800,x\"\n"
                      "A10,1,128,2\n"
                      "A800-SXM4-80GB,0,96,9\n";
    assert_int_equal(gs_mig_inventory_parse(&in, "i.csv", csv, strlen(csv), &err), 0);
    assert_int_equal(in.nnodes, 3);
    assert_string_equal(in.nodes[0].name, "node-3");
    assert_string_equal(in.nodes[1].name, "h800,x");
    assert_string_equal(in.nodes[1].model->name, "H100-80GB");
    assert_int_equal(in.ngpus, 16);
    assert_int_equal(in.nodes_skipped, 1);
    const char *bad = "gpu_model,gpu_capacity_num\nA100-SXM4-80GB,many\n";
    assert_int_equal(gs_mig_inventory_parse(&in, "i.csv", bad, strlen(bad), &err), -1);
    assert_int_equal(err.line, 2);
    gs_mig_plan_input_free(&in);

    /* the spot2026 trace: 4,278 nodes, 5,384 GPUs on MIG-capable A100/A800/H800 */
    const char *shared = getenv("GS_SHARED");
    char path[1024];
    snprintf(path, sizeof path, "%s/data/spot2026/node_info_df.csv", shared ? shared : "../shared");
    size_t len;
    char *data = gs_read_file(path, 1 << 24, &len, &err);
    if (!data) {
        print_message("SKIP: spot2026 inventory not found at %s (set GS_SHARED)\n", path);
        return;
    }
    assert_int_equal(parse(&in, HEAD "services:\n  - {name: a, memoryGiB: 4}\n", &err), 0);
    assert_int_equal(gs_mig_inventory_parse(&in, path, data, len, &err), 0);
    assert_int_equal(in.nnodes, 4278);
    assert_int_equal(in.ngpus, (432 + 22 + 219) * 8);
    assert_int_equal(in.nodes_skipped, 3605);
    free(data);
    gs_mig_plan_input_free(&in);
}

/* ---------------------------------------------------------------- brute force */
#define BF_MAX_GPUS 4
#define BF_MAX_SVC 4
#define BF_MAX_REP 3

typedef struct bf {
    const gs_mig_plan_input *in;
    const gs_mig_plan *plan;
    uint32_t ng;
    const gs_mig_model *model[BF_MAX_GPUS];
    bool known[BF_MAX_GPUS], enabled[BF_MAX_GPUS];
    uint8_t cur[BF_MAX_GPUS][GS_MIG_MAX_PROFILES];
    uint32_t ns;
    uint32_t rep[BF_MAX_SVC];
    uint8_t prof[BF_MAX_GPUS][BF_MAX_SVC]; /* service profile on each GPU's model */
    gs_mig_cost memo[BF_MAX_GPUS + 1][256];
    bool have[BF_MAX_GPUS + 1][256];
} bf;

static const gs_mig_cost BF_INF = {UINT32_MAX, 0, 0, 0};

static int cmp_cost(const gs_mig_cost *a, const gs_mig_cost *b)
{
    if (a->gpus != b->gpus)
        return a->gpus < b->gpus ? -1 : 1;
    if (a->idle_mem != b->idle_mem)
        return a->idle_mem < b->idle_mem ? -1 : 1;
    if (a->idle_compute != b->idle_compute)
        return a->idle_compute < b->idle_compute ? -1 : 1;
    if (a->changed != b->changed)
        return a->changed < b->changed ? -1 : 1;
    return 0;
}

static uint32_t encode(const bf *b, const uint32_t *rem)
{
    uint32_t x = 0;
    for (uint32_t s = b->ns; s-- > 0;)
        x = x * (BF_MAX_REP + 1) + rem[s];
    return x;
}

static gs_mig_cost bf_solve(bf *b, uint32_t j, uint32_t *rem);

/* Enumerate every vector c <= rem of replicas on GPU j. */
static void bf_enum(bf *b, uint32_t j, uint32_t *rem, uint32_t s, uint32_t *c, gs_mig_cost *best)
{
    if (s == b->ns) {
        const gs_mig_model *m = b->model[j];
        uint8_t idx[16], counts[GS_MIG_MAX_PROFILES] = {0};
        uint32_t n = 0, mem = 0, comp = 0;
        for (uint32_t k = 0; k < b->ns; k++)
            for (uint32_t r = 0; r < c[k]; r++) {
                if (n >= 16)
                    return;
                uint8_t p = b->prof[j][k];
                idx[n++] = p;
                counts[p]++;
                mem += m->profiles[p].mem_slices;
                comp += m->profiles[p].compute;
            }
        gs_mig_cost here = {0, 0, 0, 0};
        if (n) {
            if (!gs_mig_layout_fits(m, idx, n, NULL))
                return;
            bool subset = b->known[j] && b->enabled[j];
            for (int p = 0; p < GS_MIG_MAX_PROFILES && subset; p++)
                subset = counts[p] <= b->cur[j][p];
            here.gpus = 1;
            here.idle_mem = (m->memory_slices - mem) * (8u / m->memory_slices);
            here.idle_compute = (m->compute_slices - comp) * (28u / m->compute_slices);
            here.changed = subset ? 0 : 1;
        }
        for (uint32_t k = 0; k < b->ns; k++)
            rem[k] -= c[k];
        gs_mig_cost sub = bf_solve(b, j + 1, rem);
        for (uint32_t k = 0; k < b->ns; k++)
            rem[k] += c[k];
        if (sub.gpus == UINT32_MAX)
            return;
        here.gpus += sub.gpus;
        here.idle_mem += sub.idle_mem;
        here.idle_compute += sub.idle_compute;
        here.changed += sub.changed;
        if (cmp_cost(&here, best) < 0)
            *best = here;
        return;
    }
    for (c[s] = 0; c[s] <= rem[s]; c[s]++) {
        if (c[s] && b->prof[j][s] == GS_MIG_NO_PROFILE)
            break;
        bf_enum(b, j, rem, s + 1, c, best);
    }
    c[s] = 0;
}

static gs_mig_cost bf_solve(bf *b, uint32_t j, uint32_t *rem)
{
    uint32_t key = encode(b, rem);
    if (key == 0)
        return (gs_mig_cost){0, 0, 0, 0};
    if (j == b->ng)
        return BF_INF;
    if (b->have[j][key])
        return b->memo[j][key];
    gs_mig_cost best = BF_INF;
    uint32_t c[BF_MAX_SVC] = {0};
    bf_enum(b, j, rem, 0, c, &best);
    b->have[j][key] = true;
    b->memo[j][key] = best;
    return best;
}

/* Independent checks of a plan: placements legal, profiles as chosen, counts, cost. */
static void check_plan(const gs_mig_plan_input *in, const gs_mig_plan *p)
{
    uint32_t *placed = calloc(in->nservices, sizeof *placed);
    gs_mig_cost c = {0, 0, 0, 0};
    for (uint32_t i = 0; i < p->ngpus; i++) {
        const gs_mig_gpu_plan *g = &p->gpus[i];
        const gs_mig_model *m = g->model;
        int cat = gs_mig_model_index(m);
        uint32_t used = 0, comp = 0, mem_assigned = 0, comp_assigned = 0, n = 0;
        uint8_t counts[GS_MIG_MAX_PROFILES] = {0};
        for (uint8_t k = 0; k < g->layout.n; k++) {
            const gs_mig_profile *pr = &m->profiles[g->layout.profile[k]];
            assert_true(pr->starts & (1u << g->layout.start[k]));
            uint32_t mask = ((1u << pr->mem_slices) - 1u) << g->layout.start[k];
            assert_int_equal(used & mask, 0);
            assert_true(g->layout.start[k] + pr->mem_slices <= m->memory_slices);
            used |= mask;
            comp += pr->compute;
            if (g->service[k] != GS_MIG_NO_SERVICE) {
                uint16_t s = g->service[k];
                assert_int_equal(p->services[s].profile[cat], g->layout.profile[k]);
                placed[s]++;
                n++;
                counts[g->layout.profile[k]]++;
                mem_assigned += pr->mem_slices;
                comp_assigned += pr->compute;
            }
        }
        assert_true(comp <= m->compute_slices);
        assert_int_equal(n, g->nassigned);
        if (!g->changed && g->known)
            assert_memory_equal(&g->layout, &in->nodes[g->node].current[g->gpu], sizeof g->layout);
        if (n) {
            const gs_mig_layout *cur = g->known ? &in->nodes[g->node].current[g->gpu] : NULL;
            bool subset = cur && cur->mig_enabled;
            uint8_t cc[GS_MIG_MAX_PROFILES];
            if (cur)
                gs_mig_layout_counts(cur, cc);
            for (int q = 0; q < GS_MIG_MAX_PROFILES && subset; q++)
                subset = counts[q] <= cc[q];
            if (g->changed != !subset)
                fail_msg("GPU %u: changed %d but the current layout %s the instances", i,
                         g->changed, subset ? "contains" : "lacks");
            c.gpus++;
            c.idle_mem += (m->memory_slices - mem_assigned) * (8u / m->memory_slices);
            c.idle_compute += (m->compute_slices - comp_assigned) * (28u / m->compute_slices);
            c.changed += !subset;
        } else {
            assert_false(g->changed);
        }
    }
    assert_int_equal(cmp_cost(&c, &p->cost), 0);
    bool complete = true;
    for (uint32_t s = 0; s < in->nservices; s++) {
        assert_int_equal(placed[s], p->services[s].placed);
        assert_int_equal(placed[s] + p->services[s].unplaced, in->services[s].replicas);
        complete = complete && !p->services[s].unplaced;
    }
    assert_int_equal(complete, p->complete);
    free(placed);
}

/* The emitted mig-parted file parses, validates on every model present, and describes
 * each changed node's GPUs exactly. */
static void check_emit(const gs_mig_plan_input *in, const gs_mig_plan *p)
{
    gs_mig_emit em;
    gs_error err;
    assert_int_equal(gs_mig_plan_emit(in, p, &em, &err), 0);
    gs_mig_parted cfg;
    if (gs_mig_parted_parse(&cfg, "emit.yaml", em.yaml.buf, em.yaml.len, &err) != 0)
        fail_msg("emitted file does not parse: %s\n%s", err.msg, em.yaml.buf);
    assert_int_equal(cfg.nproblems, 0);
    gs_mig_report rep;
    memset(&rep, 0, sizeof rep);
    assert_int_equal(gs_mig_parted_validate(&cfg, NULL, &rep, &err), 0);
    assert_int_equal(rep.ninvalid, 0);
    gs_mig_report_free(&rep);
    uint32_t gi = 0;
    for (uint32_t ni = 0; ni < in->nnodes; ni++) {
        const gs_mig_node *nd = &in->nodes[ni];
        if (!nd->model)
            continue;
        memset(&rep, 0, sizeof rep);
        assert_int_equal(gs_mig_parted_validate(&cfg, nd->model, &rep, &err), 0);
        assert_int_equal(rep.ninvalid, 0);
        bool changed = false;
        for (uint16_t d = 0; d < nd->ngpus; d++)
            changed = changed || p->gpus[gi + d].changed;
        if (!changed) {
            assert_null(em.node_config[ni]);
        } else {
            /* find the config and check each GPU's instances */
            const char *name = em.node_config[ni];
            assert_non_null(name);
            const gs_mig_config *c = NULL;
            for (uint32_t k = 0; k < cfg.nconfigs && !c; k++)
                if (!strcmp(cfg.configs[k].name, name))
                    c = &cfg.configs[k];
            assert_non_null(c);
            for (uint16_t d = 0; d < nd->ngpus; d++) {
                const gs_mig_layout *want = &p->gpus[gi + d].layout;
                bool found = false;
                for (uint32_t r = 0; r < rep.n; r++) {
                    const gs_mig_check *ck = &rep.v[r];
                    if (ck->verdict != GS_MIG_OK || &cfg.configs[ck->config] != c)
                        continue;
                    const gs_mig_entry *e = &c->entries[ck->entry];
                    bool sel = e->all_devices;
                    for (uint32_t k = 0; k < e->ndevices; k++)
                        sel = sel || e->devices[k] == d;
                    if (!sel)
                        continue;
                    uint8_t a[GS_MIG_MAX_PROFILES], b2[GS_MIG_MAX_PROFILES];
                    gs_mig_layout_counts(&ck->layout, a);
                    gs_mig_layout_counts(want, b2);
                    assert_int_equal(ck->layout.mig_enabled, want->mig_enabled);
                    assert_memory_equal(a, b2, sizeof a);
                    found = true;
                }
                assert_true(found);
            }
        }
        gs_mig_report_free(&rep);
        gi += nd->ngpus;
    }
    gs_mig_parted_free(&cfg);
    gs_mig_emit_free(&em);
}

/* ---------------------------------------------------------------- random pools */
static const char *const models[] = {"NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3",
                                     "NVIDIA-A30", "NVIDIA-A100-SXM4-40GB"};
static const double sizes[] = {3.0, 4.5, 5.5, 9.0, 9.7, 11.0, 15.0, 19.0, 22.0, 30.0, 39.0, 45.0, 70.0};

static void gen_plan(gs_rng *r, gs_strbuf *sb, uint32_t *ngpus_out)
{
    gs_strbuf_reset(sb);
    gs_strbuf_puts(sb, HEAD "services:\n");
    uint32_t ns = 1 + (uint32_t)gs_rng_below(r, BF_MAX_SVC);
    for (uint32_t s = 0; s < ns; s++) {
        double gib = sizes[gs_rng_below(r, sizeof sizes / sizeof sizes[0])];
        gs_strbuf_printf(sb, "  - {name: s%u, replicas: %u, memoryGiB: %g, headroom: 0", s,
                         1 + (unsigned)gs_rng_below(r, BF_MAX_REP), gib);
        if (gs_rng_below(r, 5) == 0)
            gs_strbuf_printf(sb, ", computeSlices: %u", 2 + (unsigned)gs_rng_below(r, 2));
        gs_strbuf_puts(sb, "}\n");
    }
    gs_strbuf_puts(sb, "inventory:\n  nodes:\n");
    uint32_t left = 1 + (uint32_t)gs_rng_below(r, BF_MAX_GPUS), node = 0;
    bool mixed = gs_rng_below(r, 3) == 0;
    uint32_t m0 = (uint32_t)gs_rng_below(r, 4);
    *ngpus_out = left;
    while (left) {
        uint32_t g = 1 + (uint32_t)gs_rng_below(r, left);
        uint32_t m = mixed ? (uint32_t)gs_rng_below(r, 4) : m0;
        gs_strbuf_printf(sb, "    - {name: n%u, product: %s, gpus: %u", node++, models[m], g);
        static const char *const cur[] = {"all-balanced", "all-disabled", "all-enabled",
                                          "all-1g.10gb", "all-3g.40gb", "all-2g.20gb", "all-1g.6gb",
                                          "all-2g.12gb", "all-1g.5gb"};
        uint32_t pick = (uint32_t)gs_rng_below(r, 12);
        if (pick < 3 || (pick < 9 && ((m <= 1 && pick <= 5) || (m == 2 && (pick == 6 || pick == 7)) ||
                                      (m == 3 && (pick == 3 || pick == 8)))))
            gs_strbuf_printf(sb, ", currentConfig: %s", cur[pick]);
        gs_strbuf_puts(sb, "}\n");
        left -= g;
    }
}

static void setup_bf(bf *b, const gs_mig_plan_input *in, const gs_mig_plan *p)
{
    memset(b, 0, sizeof *b);
    b->in = in;
    b->plan = p;
    b->ns = in->nservices;
    for (uint32_t s = 0; s < in->nservices; s++)
        b->rep[s] = in->services[s].replicas;
    for (uint32_t ni = 0; ni < in->nnodes; ni++) {
        const gs_mig_node *nd = &in->nodes[ni];
        for (uint16_t d = 0; d < nd->ngpus; d++) {
            uint32_t j = b->ng++;
            b->model[j] = nd->model;
            if (nd->current) {
                b->known[j] = true;
                b->enabled[j] = nd->current[d].mig_enabled;
                gs_mig_layout_counts(&nd->current[d], b->cur[j]);
            }
            int cat = gs_mig_model_index(nd->model);
            for (uint32_t s = 0; s < in->nservices; s++)
                b->prof[j][s] = p->services[s].profile[cat];
        }
    }
}

static void test_exact_matches_brute_force(void **state)
{
    (void)state;
    gs_rng r;
    gs_rng_seed(&r, 20260501);
    gs_strbuf sb = GS_STRBUF_INIT;
    uint32_t feasible = 0, heuristic_gap = 0, heuristic_worst = 0;
    for (int iter = 0; iter < 400; iter++) {
        uint32_t ng;
        gen_plan(&r, &sb, &ng);
        gs_mig_plan_input in;
        gs_error err;
        if (parse(&in, sb.buf, &err) != 0)
            fail_msg("generated input does not parse: %s\n%s", err.msg, sb.buf);
        gs_mig_plan_opts o;
        gs_mig_plan_opts_default(&o);
        gs_mig_plan exact, heur;
        assert_int_equal(gs_mig_plan_solve(&in, &o, &exact, &err), 0);
        o.exact_max_gpus = 0;
        assert_int_equal(gs_mig_plan_solve(&in, &o, &heur, &err), 0);
        if (getenv("GS_MIG_TEST_VERBOSE"))
            fprintf(stderr, "--- iteration %d\n%s", iter, sb.buf);
        check_plan(&in, &exact);
        check_plan(&in, &heur);
        check_emit(&in, &exact);
        check_emit(&in, &heur);

        bf *b = calloc(1, sizeof *b);
        setup_bf(b, &in, &exact);
        uint32_t rem[BF_MAX_SVC];
        memcpy(rem, b->rep, sizeof rem);
        gs_mig_cost opt = bf_solve(b, 0, rem);
        free(b);
        if (opt.gpus == UINT32_MAX) {
            assert_false(exact.complete);
            assert_false(heur.complete);
        } else {
            feasible++;
            assert_true(exact.complete);
            assert_true(exact.optimal);
            assert_int_equal(exact.method, GS_MIG_METHOD_EXACT);
            if (cmp_cost(&exact.cost, &opt) != 0)
                fail_msg("exact %u/%u/%u/%u != brute force %u/%u/%u/%u for\n%s", exact.cost.gpus,
                         exact.cost.idle_mem, exact.cost.idle_compute, exact.cost.changed, opt.gpus,
                         opt.idle_mem, opt.idle_compute, opt.changed, sb.buf);
            assert_true(exact.lower_bound <= opt.gpus);
            assert_true(heur.complete);
            assert_true(heur.lower_bound <= opt.gpus);
            assert_true(cmp_cost(&heur.cost, &opt) >= 0);
            /* the a-priori bound of LP rounding */
            if (heur.lp_roundable)
                assert_true(heur.cost.gpus <= heur.lower_bound +
                                                  (heur.lp_fractional ? heur.lp_fractional - 1 : 0));
            uint32_t gap = heur.cost.gpus - opt.gpus;
            heuristic_gap += gap;
            if (gap > heuristic_worst)
                heuristic_worst = gap;
        }
        gs_mig_plan_free(&exact);
        gs_mig_plan_free(&heur);
        gs_mig_plan_input_free(&in);
    }
    /* the heuristic (greedy + exact tail) finds the optimal GPU count on these pools */
    assert_true(feasible > 150);
    assert_int_equal(heuristic_worst, 0);
    (void)heuristic_gap;
    gs_strbuf_free(&sb);
}

/* ---------------------------------------------------------------- behaviours */
static void plan_text(const char *yaml, gs_mig_plan_input *in, gs_mig_plan *p,
                      const gs_mig_plan_opts *o)
{
    gs_error err;
    if (parse(in, yaml, &err) != 0)
        fail_msg("%s", err.msg);
    if (gs_mig_plan_solve(in, o, p, &err) != 0)
        fail_msg("%s", err.msg);
    check_plan(in, p);
    check_emit(in, p);
}

static void test_current_layout_is_kept(void **state)
{
    (void)state;
    gs_mig_plan_input in;
    gs_mig_plan p;
    /* all-balanced already hosts 2x 1g + 2g + 3g per GPU: nothing changes */
    plan_text(HEAD "services:\n"
                   "  - {name: small, replicas: 4, memoryGiB: 8, headroom: 0}\n"
                   "  - {name: mid, replicas: 2, memoryGiB: 18, headroom: 0, computeSlices: 2}\n"
                   "  - {name: big, replicas: 2, memoryGiB: 35, headroom: 0}\n"
                   "inventory:\n  nodes:\n"
                   "    - {name: a, product: NVIDIA-A100-SXM4-80GB, gpus: 4,"
                   " currentConfig: all-balanced}\n",
              &in, &p, NULL);
    assert_true(p.complete);
    assert_int_equal(p.cost.gpus, 2);
    assert_int_equal(p.cost.changed, 0);
    gs_mig_emit em;
    gs_error err;
    assert_int_equal(gs_mig_plan_emit(&in, &p, &em, &err), 0);
    assert_null(em.node_config[0]);
    gs_mig_emit_free(&em);
    gs_mig_plan_free(&p);
    /* ignoring the current layout, both GPUs count as re-partitioned */
    gs_mig_plan_opts o;
    gs_mig_plan_opts_default(&o);
    o.ignore_current = true;
    assert_int_equal(gs_mig_plan_solve(&in, &o, &p, &err), 0);
    assert_int_equal(p.cost.gpus, 2);
    assert_int_equal(p.cost.changed, 2);
    gs_mig_plan_free(&p);
    gs_mig_plan_input_free(&in);
}

static void test_incomplete_plan(void **state)
{
    (void)state;
    gs_mig_plan_input in;
    gs_mig_plan p;
    plan_text(HEAD "services:\n"
                   "  - {name: big, replicas: 3, memoryGiB: 60, headroom: 0}\n"
                   "  - {name: huge, replicas: 1, memoryGiB: 500}\n"
                   "inventory:\n  nodes:\n"
                   "    - {name: a, product: NVIDIA-H100-80GB-HBM3, gpus: 2}\n",
              &in, &p, NULL);
    assert_false(p.complete);
    assert_int_equal(p.services[0].placed, 2);
    assert_int_equal(p.services[0].unplaced, 1);
    assert_int_equal(p.services[1].unplaced, 1);
    assert_int_equal(p.services[1].profile[gs_mig_model_index(gs_mig_model_find("H100-80GB"))],
                     GS_MIG_NO_PROFILE);
    gs_mig_plan_free(&p);
    gs_mig_plan_input_free(&in);
}

/* A pool beyond the exact limit: the heuristic is feasible, every layout valid, and the
 * LP bound certifies it within a GPU. */
static void test_large_pool_heuristic(void **state)
{
    (void)state;
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_strbuf_puts(&sb, HEAD "services:\n");
    gs_rng r;
    gs_rng_seed(&r, 7);
    for (int s = 0; s < 30; s++)
        gs_strbuf_printf(&sb, "  - {name: s%d, replicas: %u, memoryGiB: %g}\n", s,
                         1 + (unsigned)gs_rng_below(&r, 20),
                         sizes[gs_rng_below(&r, sizeof sizes / sizeof sizes[0] - 1)]);
    gs_strbuf_puts(&sb, "inventory:\n  nodes:\n"
                        "    - {name: a, product: NVIDIA-A100-SXM4-80GB, gpus: 8, count: 30,"
                        " currentConfig: all-balanced}\n"
                        "    - {name: h, product: NVIDIA-H100-80GB-HBM3, gpus: 8, count: 20}\n");
    gs_mig_plan_input in;
    gs_mig_plan p;
    plan_text(sb.buf, &in, &p, NULL);
    assert_true(p.complete);
    assert_int_equal(p.method, GS_MIG_METHOD_HEURISTIC);
    assert_true(p.lower_bound > 10);
    assert_true(p.cost.gpus >= p.lower_bound);
    assert_true(p.cost.gpus <= p.lower_bound + 1);
    assert_true(p.lp_roundable);
    assert_true(p.cost.gpus <= p.lower_bound + (p.lp_fractional ? p.lp_fractional - 1 : 0));
    /* deterministic */
    gs_mig_plan q;
    gs_error err;
    assert_int_equal(gs_mig_plan_solve(&in, NULL, &q, &err), 0);
    assert_int_equal(cmp_cost(&p.cost, &q.cost), 0);
    for (uint32_t i = 0; i < p.ngpus; i++)
        assert_memory_equal(&p.gpus[i], &q.gpus[i], sizeof p.gpus[i]);
    gs_mig_plan_free(&q);

    gs_mig_waste *w;
    uint32_t nw;
    assert_int_equal(gs_mig_plan_waste(&in, &p, &w, &nw, &err), 0);
    bool saw_plan = false, saw_balanced = false;
    for (uint32_t i = 0; i < nw; i++) {
        if (w[i].kind == GS_MIG_WASTE_PLAN) {
            saw_plan = true;
            assert_int_equal(w[i].gpus, p.cost.gpus);
            assert_int_equal(w[i].unserved, 0);
        }
        if (w[i].kind == GS_MIG_WASTE_FIXED && !strcmp(w[i].name, "all-balanced")) {
            saw_balanced = true;
            assert_true(w[i].mem_idle <= w[i].mem_slices);
        }
    }
    assert_true(saw_plan && saw_balanced);
    free(w);
    gs_mig_plan_free(&p);
    gs_mig_plan_input_free(&in);
    gs_strbuf_free(&sb);
}

static void test_example_plan(void **state)
{
    (void)state;
    const char *dir = getenv("GS_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/../../examples/mig/plan.yaml", dir ? dir : "tests/data");
    gs_error err;
    size_t len;
    char *data = gs_read_file(path, 1 << 20, &len, &err);
    if (!data)
        skip();
    gs_mig_plan_input in;
    gs_mig_plan_input_init(&in);
    assert_int_equal(gs_mig_plan_input_parse(&in, path, data, len, &err), 0);
    gs_mig_plan p;
    assert_int_equal(gs_mig_plan_solve(&in, NULL, &p, &err), 0);
    check_plan(&in, &p);
    check_emit(&in, &p);
    assert_true(p.complete && p.optimal);
    assert_int_equal(p.cost.gpus, 6);
    gs_mig_plan_free(&p);
    gs_mig_plan_input_free(&in);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_input_errors),
        cmocka_unit_test(test_input_shapes_and_counts),
        cmocka_unit_test(test_csv_inventory),
        cmocka_unit_test(test_exact_matches_brute_force),
        cmocka_unit_test(test_current_layout_is_kept),
        cmocka_unit_test(test_incomplete_plan),
        cmocka_unit_test(test_large_pool_heuristic),
        cmocka_unit_test(test_example_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
