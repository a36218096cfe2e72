/*
 * fuzz_mig_config.c - libFuzzer target for the MIG inputs: mig-parted files, `mig plan`
 * documents and inventories (YAML, JSON, CSV).
 *
 * The first byte picks what the rest is fed to:
 *   0: gs_mig_parted_parse (bare files, ConfigMaps holding the config as a string, multi-
 *      document files) + gs_mig_parted_validate, without a model and with one, and
 *      gs_mig_parted_gpu_layout of the first configs on GPUs 0-3 of that model;
 *   1: gs_mig_plan_input_parse, then (small pools only) the planner, its mig-parted output
 *      and the waste report;
 *   2: gs_mig_inventory_parse.
 * Invariants (abort on violation): failures carry a parse/invalid/limit/io code, never
 * an internal one; configs read from a ConfigMap name a source, and their positions
 * (translated into the outer text) stay inside it; every check counted once; every planned GPU layout is placeable and
 * hosts only the profile its service was given; placed + unplaced = replicas; the emitted
 * mig-parted file parses without problems and validates with no invalid entry.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/mig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_code(const gs_error *e)
{
    if (e->code != GS_ERR_PARSE && e->code != GS_ERR_INVALID && e->code != GS_ERR_LIMIT &&
        e->code != GS_ERR_IO)
        abort();
}

static void fuzz_parted(const char *text, size_t len, uint8_t selector)
{
    gs_mig_parted cfg;
    gs_error err;
    if (gs_mig_parted_parse(&cfg, "fuzz", text, len, &err) != 0) {
        check_code(&err);
        gs_mig_parted_free(&cfg);
        return;
    }
    /* every config read from a ConfigMap names a source that exists */
    for (uint32_t c = 0; c < cfg.nconfigs; c++)
        if (cfg.configs[c].source != UINT32_MAX && cfg.configs[c].source >= cfg.nsources)
            abort();
    if (cfg.ignored > cfg.documents)
        abort();
    /* positions of configs (embedded ones translated into this text) stay inside it */
    /* YAML breaks lines at LF, CR and CRLF (libfyaml also at U+0085, U+2028, U+2029):
     * counting every LF, CR and the first byte of those three bounds the lines above */
    int lines = 1;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)text[i];
        lines += ch == '\n' || ch == '\r' ||
                 (ch == 0xC2 && i + 1 < len && (unsigned char)text[i + 1] == 0x85) ||
                 (ch == 0xE2 && i + 2 < len && (unsigned char)text[i + 1] == 0x80 &&
                  ((unsigned char)text[i + 2] == 0xA8 || (unsigned char)text[i + 2] == 0xA9));
    }
    for (uint32_t c = 0; c < cfg.nconfigs; c++)
        if (cfg.configs[c].line < 0 || cfg.configs[c].line > lines)
            abort();
    uint32_t n;
    const gs_mig_model *all = gs_mig_models(&n);
    const gs_mig_model *models[2] = {NULL, &all[selector % n]};
    for (int i = 0; i < 2; i++) {
        gs_mig_report rep;
        memset(&rep, 0, sizeof rep);
        if (gs_mig_parted_validate(&cfg, models[i], &rep, &err) != 0)
            abort();
        if (rep.nok + rep.ninvalid + rep.nskipped + rep.nunknown != rep.n)
            abort();
        for (uint32_t k = 0; k < rep.n; k++) {
            const gs_mig_check *c = &rep.v[k];
            if (c->verdict == GS_MIG_OK && c->model && c->layout.mig_enabled &&
                !gs_mig_layout_fits(c->model, c->layout.profile, c->layout.n, NULL))
                abort();
        }
        gs_mig_report_free(&rep);
    }
    /* the per-GPU layout simulate --mig-config applies: 1 = a placeable layout, 0 = no
     * entry, -1 = an input error */
    for (uint32_t c = 0; c < cfg.nconfigs && c < 8; c++) {
        for (uint32_t gpu = 0; gpu < 4; gpu++) {
            gs_mig_layout l;
            int rc = gs_mig_parted_gpu_layout(&cfg, cfg.configs[c].name, models[1], gpu, &l, &err);
            if (rc < 0)
                check_code(&err);
            else if (rc == 1 && l.mig_enabled &&
                     !gs_mig_layout_fits(models[1], l.profile, l.n, NULL))
                abort();
        }
    }
    gs_mig_parted_free(&cfg);
}

static void check_plan(const gs_mig_plan_input *in, const gs_mig_plan *p)
{
    uint32_t *placed = calloc(in->nservices + 1, sizeof *placed);
    if (!placed)
        return;
    for (uint32_t i = 0; i < p->ngpus; i++) {
        const gs_mig_gpu_plan *g = &p->gpus[i];
        if (g->layout.mig_enabled && !gs_mig_layout_fits(g->model, g->layout.profile, g->layout.n, NULL))
            abort();
        int cat = gs_mig_model_index(g->model);
        for (uint8_t k = 0; k < g->layout.n; k++) {
            uint16_t s = g->service[k];
            if (s == GS_MIG_NO_SERVICE)
                continue;
            if (s >= in->nservices || p->services[s].profile[cat] != g->layout.profile[k])
                abort();
            placed[s]++;
        }
    }
    for (uint32_t s = 0; s < in->nservices; s++)
        if (placed[s] != p->services[s].placed ||
            p->services[s].placed + p->services[s].unplaced != in->services[s].replicas)
            abort();
    free(placed);
}

static void fuzz_plan(const char *text, size_t len)
{
    gs_mig_plan_input in;
    gs_mig_plan_input_init(&in);
    gs_error err;
    if (gs_mig_plan_input_parse(&in, "fuzz", text, len, &err) != 0) {
        check_code(&err);
        gs_mig_plan_input_free(&in);
        return;
    }
    uint64_t replicas = 0;
    for (uint32_t s = 0; s < in.nservices; s++)
        replicas += in.services[s].replicas;
    if (in.ngpus == 0 || in.ngpus > 64 || replicas > 2000) {
        gs_mig_plan_input_free(&in);
        return;
    }
    gs_mig_plan_opts o;
    gs_mig_plan_opts_default(&o);
    o.state_budget = 20000; /* keep each input fast */
    gs_mig_plan p;
    if (gs_mig_plan_solve(&in, &o, &p, &err) != 0)
        abort();
    check_plan(&in, &p);
    if (p.complete && p.cost.gpus < p.lower_bound)
        abort();
    gs_mig_emit em;
    if (gs_mig_plan_emit(&in, &p, &em, &err) != 0)
        abort();
    gs_mig_parted cfg;
    if (gs_mig_parted_parse(&cfg, "emit", gs_strbuf_cstr(&em.yaml), em.yaml.len, &err) != 0 ||
        cfg.nproblems)
        abort();
    gs_mig_report rep;
    memset(&rep, 0, sizeof rep);
    if (gs_mig_parted_validate(&cfg, NULL, &rep, &err) != 0 || rep.ninvalid)
        abort();
    gs_mig_report_free(&rep);
    gs_mig_parted_free(&cfg);
    gs_mig_emit_free(&em);
    gs_mig_waste *w;
    uint32_t nw;
    if (gs_mig_plan_waste(&in, &p, &w, &nw, &err) != 0)
        abort();
    for (uint32_t i = 0; i < nw; i++)
        if (w[i].mem_idle > w[i].mem_slices || w[i].compute_idle > w[i].compute_slices)
            abort();
    free(w);
    gs_mig_plan_free(&p);
    gs_mig_plan_input_free(&in);
}

static void fuzz_inventory(const char *text, size_t len)
{
    gs_mig_plan_input in;
    gs_mig_plan_input_init(&in);
    gs_error err;
    if (gs_mig_inventory_parse(&in, "fuzz", text, len, &err) != 0)
        check_code(&err);
    else if (in.nnodes > GS_MIG_MAX_NODES || in.ngpus > GS_MIG_MAX_GPUS)
        abort();
    gs_mig_plan_input_free(&in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    uint8_t mode = data[0];
    /* a NUL-terminated copy: the parsers take lengths, the copy keeps tools honest */
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    switch (mode % 3) {
    case 0:
        fuzz_parted(text, size - 1, (uint8_t)(mode / 3));
        break;
    case 1:
        fuzz_plan(text, size - 1);
        break;
    default:
        fuzz_inventory(text, size - 1);
        break;
    }
    free(text);
    return 0;
}
