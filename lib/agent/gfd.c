/*
 * gfd.c - gpu-feature-discovery's labels from the NVML inventory (gfd.h, docs/agent.md
 * "Labels (GFD-compatible)").
 *
 * The labels are built the way GFD merges its labelers (internal/lm): machine type, driver
 * and CUDA versions, MIG capability, then the full-GPU labels per model (MIG-enabled GPUs
 * first without sharing, then MIG-disabled ones with sharing, which win), then the MIG
 * strategy's labels (which win over the full-GPU ones under single). A later set of a key
 * replaces the earlier value; the result is sorted by key.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/gfd.h"

/* ---------------------------------------------------------------- label set */
void gs_gfd_labels_init(gs_gfd_labels *l)
{
    memset(l, 0, sizeof *l);
    gs_arena_init(&l->arena, 8192);
}

void gs_gfd_labels_free(gs_gfd_labels *l)
{
    if (!l)
        return;
    free(l->v);
    gs_arena_free(&l->arena);
    memset(l, 0, sizeof *l);
}

const char *gs_gfd_labels_get(const gs_gfd_labels *l, const char *key)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].key, key) == 0)
            return l->v[i].value;
    return NULL;
}

typedef struct bld {
    gs_gfd_labels *out;
    bool oom;
} bld;

static void set(bld *b, const char *key, const char *value)
{
    if (b->oom)
        return;
    gs_gfd_labels *l = b->out;
    char *v = gs_arena_strdup(&l->arena, value);
    if (!v) {
        b->oom = true;
        return;
    }
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].key, key) == 0) {
            l->v[i].value = v;
            return;
        }
    char *k = gs_arena_strdup(&l->arena, key);
    if (!k || gs_vec_push(*l, ((gs_gfd_label){k, v}))) {
        b->oom = true;
        return;
    }
}

static void setf(bld *b, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void setf(bld *b, const char *key, const char *fmt, ...)
{
    char v[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    set(b, key, v);
}

/* "<prefix>.<suffix>" = value */
static void rset(bld *b, const char *prefix, const char *suffix, const char *value)
{
    char k[160];
    snprintf(k, sizeof k, "%s.%s", prefix, suffix);
    set(b, k, value);
}

static void rsetu(bld *b, const char *prefix, const char *suffix, unsigned long long v)
{
    char s[32];
    snprintf(s, sizeof s, "%llu", v);
    rset(b, prefix, suffix, s);
}

static int label_cmp(const void *a, const void *b)
{
    return strcmp(((const gs_gfd_label *)a)->key, ((const gs_gfd_label *)b)->key);
}

/* ---------------------------------------------------------------- formats */
void gs_gfd_sanitise(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    bool blank = false;
    if (!cap)
        return;
    for (const char *p = in ? in : ""; *p; p++) {
        char c = *p;
        bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
        if (c == ' ') {
            blank = o > 0;
            continue;
        }
        if (!keep)
            continue;
        if (blank && o + 1 < cap)
            out[o++] = '-';
        blank = false;
        if (o + 1 < cap)
            out[o++] = c;
    }
    out[o] = '\0';
}

const char *gs_gfd_family(int major, int minor)
{
    switch (major) {
    case 1: return "tesla";
    case 2: return "fermi";
    case 3: return "kepler";
    case 5: return "maxwell";
    case 6: return "pascal";
    case 7: return minor < 5 ? "volta" : "turing";
    case 8: return minor < 9 ? "ampere" : "ada-lovelace";
    case 9: return "hopper";
    case 10:
    case 12: return "blackwell";
    case 13: return "rubin";
    default: return "undefined";
    }
}

/* ---------------------------------------------------------------- labelers */
#define R_GPU "nvidia.com/gpu"

typedef struct res_lab {
    const char *prefix; /* resource name: "nvidia.com/gpu", "nvidia.com/mig-1g.10gb" */
    bool sharing_on;    /* GFD's config != nil (MIG-enabled GPUs' full labels: off) */
    unsigned replicas;  /* from the configuration for this resource */
    const char *strategy; /* "time-slicing" / "mps" */
    bool renamed;
} res_lab;

/* GFD's baseLabeler: product, count, replicas, sharing-strategy. parts: the product's
 * pieces (model [, "MIG", profile]); each sanitised, joined by '-'. */
static void base_labels(bld *b, const res_lab *r, unsigned long long count, const char *model,
                        const char *profile)
{
    char prod[256], part[128];
    gs_gfd_sanitise(model, prod, sizeof prod);
    if (profile) {
        gs_gfd_sanitise(profile, part, sizeof part);
        size_t n = strlen(prod);
        snprintf(prod + n, sizeof prod - n, "%sMIG-%s", n ? "-" : "", part);
    }
    unsigned replicas = r->sharing_on ? r->replicas : 0;
    if (r->sharing_on && r->replicas > 1 && !r->renamed) {
        size_t n = strlen(prod);
        snprintf(prod + n, sizeof prod - n, "-SHARED");
    }
    rset(b, r->prefix, "product", prod);
    rsetu(b, r->prefix, "count", count);
    rsetu(b, r->prefix, "replicas", replicas);
    rset(b, r->prefix, "sharing-strategy",
         r->sharing_on && r->replicas > 1 ? r->strategy : "none");
}

/* NewGPUResourceLabeler: base, memory (when known), architecture (when known). */
static void gpu_labels(bld *b, const res_lab *r, const gs_nvml_gpu *g, unsigned long long count)
{
    base_labels(b, r, count, g->name, NULL);
    if (g->memory_mib)
        rsetu(b, r->prefix, "memory", g->memory_mib);
    if (g->cc_major > 0) {
        rset(b, r->prefix, "family", gs_gfd_family(g->cc_major, g->cc_minor));
        rsetu(b, r->prefix, "compute.major", (unsigned long long)g->cc_major);
        rsetu(b, r->prefix, "compute.minor", (unsigned long long)(g->cc_minor < 0 ? 0 : g->cc_minor));
    }
}

/* NewMIGResourceLabeler: base (model-MIG-profile), then the MIG device's attributes. */
static void mig_labels(bld *b, const res_lab *r, const gs_nvml_gpu *parent,
                       const gs_nvml_mig_device *m, unsigned long long count)
{
    base_labels(b, r, count, parent->name, m->profile);
    if (m->memory_mib)
        rsetu(b, r->prefix, "memory", m->memory_mib);
    if (m->have_attributes) {
        rsetu(b, r->prefix, "multiprocessors", m->multiprocessors);
        rsetu(b, r->prefix, "slices.gi", m->gi_slices);
        rsetu(b, r->prefix, "slices.ci", m->ci_slices);
        rsetu(b, r->prefix, "engines.copy", m->copy_engines);
        rsetu(b, r->prefix, "engines.decoder", m->decoders);
        rsetu(b, r->prefix, "engines.encoder", m->encoders);
        rsetu(b, r->prefix, "engines.jpeg", m->jpegs);
        rsetu(b, r->prefix, "engines.ofa", m->ofas);
    }
}

static bool mig_on(const gs_nvml_gpu *g) { return !g->lost && g->mig_current == 1; }

/* driver "550.107.02" -> major, minor, rev ("" when two parts); false when not X.Y[.Z] */
static bool split_driver(const char *v, char *maj, char *min, char *rev, size_t cap)
{
    const char *d1 = strchr(v, '.');
    if (!d1 || d1 == v)
        return false;
    const char *d2 = strchr(d1 + 1, '.');
    if (d2 && strchr(d2 + 1, '.'))
        return false;
    size_t n1 = (size_t)(d1 - v), n2 = d2 ? (size_t)(d2 - d1 - 1) : strlen(d1 + 1);
    size_t n3 = d2 ? strlen(d2 + 1) : 0;
    if (n1 >= cap || n2 >= cap || n3 >= cap || n2 == 0)
        return false;
    memcpy(maj, v, n1);
    maj[n1] = '\0';
    memcpy(min, d1 + 1, n2);
    min[n2] = '\0';
    memcpy(rev, d2 ? d2 + 1 : "", n3);
    rev[n3] = '\0';
    return true;
}

/* The node's model: the NVML name carried by the most GPUs that are not lost (ties: the
 * lowest index). GFD labels each model with the same keys and the last one written wins
 * (Go map order); one deterministic choice is made here. */
static const gs_nvml_gpu *main_model(const gs_nvml_inventory *inv)
{
    const gs_nvml_gpu *best = NULL;
    size_t best_n = 0;
    for (size_t i = 0; i < inv->n_gpus; i++) {
        const gs_nvml_gpu *g = &inv->gpus[i];
        if (g->lost)
            continue;
        size_t n = 0;
        for (size_t j = 0; j < inv->n_gpus; j++)
            if (!inv->gpus[j].lost && strcmp(inv->gpus[j].name, g->name) == 0)
                n++;
        if (n > best_n) {
            best = g;
            best_n = n;
        }
    }
    return best;
}

/* MIG devices grouped by profile (mixed and single strategies). */
typedef struct mig_group {
    const char *profile;
    const gs_nvml_gpu *parent;
    const gs_nvml_mig_device *first;
    unsigned long long count;
} mig_group;

static size_t group_migs(const gs_nvml_inventory *inv, mig_group *gr, size_t cap, bool *unnamed)
{
    size_t n = 0;
    *unnamed = false;
    for (size_t i = 0; i < inv->n_gpus; i++) {
        const gs_nvml_gpu *g = &inv->gpus[i];
        if (!mig_on(g))
            continue;
        for (size_t j = 0; j < g->n_mig; j++) {
            const gs_nvml_mig_device *m = &g->mig[j];
            if (!m->profile[0] || !gs_nvml_mig_whole_gi(m)) {
                *unnamed = true; /* not advertised by the device plugin either */
                continue;
            }
            size_t k = 0;
            while (k < n && strcmp(gr[k].profile, m->profile) != 0)
                k++;
            if (k == n) {
                if (n == cap)
                    continue;
                gr[n++] = (mig_group){m->profile, g, m, 0};
            }
            gr[k].count++;
        }
    }
    return n;
}

#define MAX_GROUPS 64

int gs_gfd_labels_compute(const gs_nvml_inventory *inv, const gs_gfd_config *cfg,
                          gs_gfd_labels *out, gs_error *err)
{
    out->n = 0;
    gs_arena_reset(&out->arena);
    if (!cfg || cfg->replicas < 1)
        return gs_fail(err, GS_ERR_USAGE, "GPU labels: replicas must be at least 1");
    if (cfg->sharing != GS_SHARING_NONE && cfg->sharing != GS_SHARING_TIME_SLICING &&
        cfg->sharing != GS_SHARING_MPS)
        return gs_fail(err, GS_ERR_USAGE,
                       "GPU labels: sharing must be none, time-slicing or mps");
    if (cfg->sharing == GS_SHARING_NONE && (cfg->replicas > 1 || cfg->mig_replicas > 1))
        return gs_fail(err, GS_ERR_USAGE,
                       "GPU labels: %u replicas without a sharing strategy (time-slicing or mps)",
                       cfg->replicas > 1 ? cfg->replicas : cfg->mig_replicas);
    if (cfg->mig_strategy != GS_MIG_NONE && cfg->mig_strategy != GS_MIG_SINGLE &&
        cfg->mig_strategy != GS_MIG_MIXED)
        return gs_fail(err, GS_ERR_USAGE, "GPU labels: unknown MIG strategy %d",
                       (int)cfg->mig_strategy);
    if (!inv || inv->n_gpus == 0)
        return 0;
    bld b = {out, false};

    /* machine type, versions, capabilities */
    if (cfg->machine && *cfg->machine) {
        char m[256];
        gs_gfd_sanitise(cfg->machine, m, sizeof m);
        set(&b, "nvidia.com/gpu.machine", m);
    }
    char maj[32], min[32], rev[32];
    if (inv->driver_version[0] && split_driver(inv->driver_version, maj, min, rev, sizeof maj)) {
        set(&b, "nvidia.com/cuda.driver.major", maj);
        set(&b, "nvidia.com/cuda.driver.minor", min);
        set(&b, "nvidia.com/cuda.driver.rev", rev);
        set(&b, "nvidia.com/cuda.driver-version.major", maj);
        set(&b, "nvidia.com/cuda.driver-version.minor", min);
        set(&b, "nvidia.com/cuda.driver-version.revision", rev);
        set(&b, "nvidia.com/cuda.driver-version.full", inv->driver_version);
    }
    if (inv->cuda_driver_version > 0) {
        int cmaj = inv->cuda_driver_version / 1000, cmin = (inv->cuda_driver_version % 1000) / 10;
        setf(&b, "nvidia.com/cuda.runtime.major", "%d", cmaj);
        setf(&b, "nvidia.com/cuda.runtime.minor", "%d", cmin);
        setf(&b, "nvidia.com/cuda.runtime-version.major", "%d", cmaj);
        setf(&b, "nvidia.com/cuda.runtime-version.minor", "%d", cmin);
        setf(&b, "nvidia.com/cuda.runtime-version.full", "%d.%d", cmaj, cmin);
    }
    bool mig_capable = false;
    for (size_t i = 0; i < inv->n_gpus; i++)
        if (!inv->gpus[i].lost && inv->gpus[i].mig_capable)
            mig_capable = true;
    set(&b, "nvidia.com/mig.capable", mig_capable ? "true" : "false");
    set(&b, "nvidia.com/mps.capable", cfg->sharing == GS_SHARING_MPS ? "true" : "false");
    if (cfg->with_timestamp)
        setf(&b, "nvidia.com/gfd.timestamp", "%lld", (long long)cfg->timestamp);

    const char *strategy = cfg->sharing == GS_SHARING_MPS ? "mps" : "time-slicing";
    unsigned mig_rep = cfg->sharing == GS_SHARING_TIME_SLICING
                           ? (cfg->mig_replicas ? cfg->mig_replicas : cfg->replicas) : 1;

    /* full GPUs: the main model's GPUs, lost ones counted (they are present, and the
     * device plugin lists them Unhealthy: capacity, not allocatable) */
    const gs_nvml_gpu *model = main_model(inv);
    if (model) {
        unsigned long long count = 0;
        const gs_nvml_gpu *mig_dev = NULL, *full_dev = NULL;
        for (size_t i = 0; i < inv->n_gpus; i++) {
            const gs_nvml_gpu *g = &inv->gpus[i];
            if (g->lost) {
                count++;
                continue;
            }
            if (strcmp(g->name, model->name) != 0)
                continue;
            count++;
            if (mig_on(g) && !mig_dev)
                mig_dev = g;
            if (!mig_on(g) && !full_dev)
                full_dev = g;
        }
        if (mig_dev) {
            res_lab r = {R_GPU, false, 0, strategy, cfg->rename_by_default};
            gpu_labels(&b, &r, mig_dev, count);
        }
        if (full_dev) {
            res_lab r = {R_GPU, true, cfg->replicas, strategy, cfg->rename_by_default};
            gpu_labels(&b, &r, full_dev, count);
        }
    }

    /* the MIG strategy */
    mig_group gr[MAX_GROUPS];
    bool unnamed = false;
    if (cfg->mig_strategy == GS_MIG_SINGLE) {
        set(&b, "nvidia.com/mig.strategy", "single");
        const gs_nvml_gpu *first_on = NULL;
        bool any_off = false, any_empty = false;
        for (size_t i = 0; i < inv->n_gpus; i++) {
            const gs_nvml_gpu *g = &inv->gpus[i];
            if (g->lost)
                continue;
            if (mig_on(g)) {
                if (!first_on)
                    first_on = g;
                if (g->n_mig == 0)
                    any_empty = true;
            } else {
                any_off = true;
            }
        }
        if (first_on) {
            size_t ng = group_migs(inv, gr, MAX_GROUPS, &unnamed);
            if (any_empty || any_off || ng != 1 || unnamed) {
                /* newInvalidMigStrategyLabeler: no sharing, so no -SHARED */
                char prod[256];
                gs_gfd_sanitise(first_on->name, prod, sizeof prod);
                size_t n = strlen(prod);
                snprintf(prod + n, sizeof prod - n, "%sMIG-INVALID", n ? "-" : "");
                set(&b, R_GPU ".product", prod);
                set(&b, R_GPU ".count", "0");
                set(&b, R_GPU ".replicas", "0");
                set(&b, R_GPU ".memory", "0");
            } else {
                res_lab r = {R_GPU, true, cfg->replicas, strategy, cfg->rename_by_default};
                mig_labels(&b, &r, gr[0].parent, gr[0].first, gr[0].count);
            }
        }
    } else if (cfg->mig_strategy == GS_MIG_MIXED) {
        set(&b, "nvidia.com/mig.strategy", "mixed");
        size_t ng = group_migs(inv, gr, MAX_GROUPS, &unnamed);
        for (size_t k = 0; k < ng; k++) {
            char res[128];
            int n = snprintf(res, sizeof res, "nvidia.com/mig-%s", gr[k].profile);
            for (int i = 0; i < n && i < (int)sizeof res; i++)
                if (res[i] == '+')
                    res[i] = '.'; /* the device plugin's resource name (nvidia.md 3.1) */
            res_lab r = {res, true, mig_rep, "time-slicing", cfg->rename_by_default};
            mig_labels(&b, &r, gr[k].parent, gr[k].first, gr[k].count);
        }
    }

    if (b.oom) {
        out->n = 0;
        return gs_fail(err, GS_ERR_NOMEM, "GPU labels: out of memory");
    }
    qsort(out->v, out->n, sizeof *out->v, label_cmp);
    return 0;
}

/* ---------------------------------------------------------------- outputs */
void gs_gfd_features_file(const gs_gfd_labels *l, gs_strbuf *sb)
{
    for (size_t i = 0; i < l->n; i++) {
        gs_strbuf_puts(sb, l->v[i].key);
        gs_strbuf_putc(sb, '=');
        gs_strbuf_puts(sb, l->v[i].value);
        gs_strbuf_putc(sb, '\n');
    }
}

int gs_gfd_write_file(const char *path, const gs_gfd_labels *l, gs_error *err)
{
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_gfd_features_file(l, &sb);
    if (sb.oom) {
        gs_strbuf_free(&sb);
        return gs_fail(err, GS_ERR_NOMEM, "%s: out of memory", path);
    }
    int rc = gs_write_file_atomic(path, gs_strbuf_cstr(&sb), sb.len, err);
    gs_strbuf_free(&sb);
    return rc;
}

static void labels_obj(const gs_gfd_labels *l, gs_strbuf *sb)
{
    gs_strbuf_putc(sb, '{');
    for (size_t i = 0; i < l->n; i++) {
        if (i)
            gs_strbuf_putc(sb, ',');
        gs_strbuf_json_str(sb, l->v[i].key);
        gs_strbuf_putc(sb, ':');
        gs_strbuf_json_str(sb, l->v[i].value);
    }
    gs_strbuf_putc(sb, '}');
}

void gs_gfd_nodefeature_json(const gs_gfd_labels *l, const char *node, const char *ns,
                             gs_strbuf *sb)
{
    gs_strbuf_puts(sb, "{\"apiVersion\":\"" GS_GFD_NODEFEATURE_API "\",\"kind\":\"NodeFeature\","
                       "\"metadata\":{\"name\":");
    gs_strbuf sbn = GS_STRBUF_INIT;
    gs_strbuf_puts(&sbn, GS_GFD_NODEFEATURE_PREFIX);
    gs_strbuf_puts(&sbn, node ? node : "");
    gs_strbuf_json_str(sb, gs_strbuf_cstr(&sbn));
    gs_strbuf_free(&sbn);
    gs_strbuf_puts(sb, ",\"namespace\":");
    gs_strbuf_json_str(sb, ns ? ns : "");
    gs_strbuf_puts(sb, ",\"labels\":{\"" GS_GFD_NODE_NAME_LABEL "\":");
    gs_strbuf_json_str(sb, node ? node : "");
    gs_strbuf_puts(sb, "}},\"spec\":{\"labels\":");
    labels_obj(l, sb);
    gs_strbuf_puts(sb, "}}\n");
}

void gs_gfd_node_apply_json(const gs_gfd_labels *l, const char *node, gs_strbuf *sb)
{
    gs_strbuf_puts(sb, "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":");
    gs_strbuf_json_str(sb, node ? node : "");
    gs_strbuf_puts(sb, ",\"labels\":");
    labels_obj(l, sb);
    gs_strbuf_puts(sb, "}}\n");
}
