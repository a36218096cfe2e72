/* test_gfd.c - GFD-compatible labels from NVML inventories (lib/agent/gfd.c): whole GPUs,
 * time-slicing and MPS, MIG mixed and single (uniform, non-uniform -> MIG-INVALID), a lost
 * GPU, the feature file and the NodeFeature / Node apply bodies; and the consistency test:
 * the engine's node inventory (gs_node_gpus_build) rebuilt from these labels and the device
 * plugin's advertised resources sees the devices NVML has. Inventories are built here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpusched/gfd.h"
#include "gpusched/gpu.h"

/* ---------------------------------------------------------------- inventories */
#define MAXG 8
typedef struct tinv {
    gs_nvml_inventory inv;
    gs_nvml_gpu gpus[MAXG];
    gs_nvml_mig_device migs[MAXG][7];
} tinv;

static void ti_init(tinv *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->inv.driver_version, sizeof t->inv.driver_version, "550.107.02");
    t->inv.cuda_driver_version = 12040;
    t->inv.cuda_major = 12;
    t->inv.cuda_minor = 4;
    t->inv.gpus = t->gpus;
}

static gs_nvml_gpu *ti_gpu(tinv *t, const char *name, unsigned long long mem, int ccmaj,
                           int ccmin, int mig_capable)
{
    size_t i = t->inv.n_gpus++;
    gs_nvml_gpu *g = &t->gpus[i];
    g->index = (unsigned)i;
    snprintf(g->uuid, sizeof g->uuid, "GPU-%08zx-0000-0000-0000-000000000000", i + 1);
    snprintf(g->name, sizeof g->name, "%s", name);
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "00000000:%02zX:00.0", 0x10 + i);
    g->minor = (int)i;
    g->cc_major = ccmaj;
    g->cc_minor = ccmin;
    g->memory_mib = mem;
    g->mig_capable = mig_capable;
    g->numa_node = -1;
    g->arch = -1;
    g->mig = t->migs[i];
    return g;
}

/* an A100-80GB MIG device of a profile (NVML's attribute values) */
static void ti_mig(tinv *t, gs_nvml_gpu *g, const char *profile)
{
    static const struct {
        const char *p;
        unsigned gi, ci, sms, mem, dec, jpg, ofa, ce;
    } tab[] = {
        {"1g.10gb", 1, 1, 14, 9856, 0, 0, 0, 1},  {"2g.20gb", 2, 2, 28, 19968, 1, 0, 0, 2},
        {"3g.40gb", 3, 3, 42, 40192, 2, 0, 0, 3}, {"4g.40gb", 4, 4, 56, 40192, 2, 0, 0, 4},
        {"7g.80gb", 7, 7, 98, 80384, 5, 1, 1, 7}, {"1g.10gb+me", 1, 1, 14, 9856, 1, 1, 1, 1},
    };
    g->mig_current = g->mig_pending = 1;
    size_t j = g->n_mig++;
    gs_nvml_mig_device *m = &g->mig[j];
    memset(m, 0, sizeof *m);
    m->index = (unsigned)j;
    snprintf(m->uuid, sizeof m->uuid, "MIG-%08x-%04zx-0000-0000-000000000000", g->index + 1, j);
    for (size_t k = 0; k < sizeof tab / sizeof tab[0]; k++)
        if (strcmp(tab[k].p, profile) == 0) {
            m->gpu_instance_id = (unsigned)(j + 1);
            m->compute_instance_id = 0;
            m->memory_mib = tab[k].mem;
            m->have_attributes = 1;
            m->gi_slices = tab[k].gi;
            m->ci_slices = tab[k].ci;
            m->multiprocessors = tab[k].sms;
            m->copy_engines = tab[k].ce;
            m->decoders = tab[k].dec;
            m->jpegs = tab[k].jpg;
            m->ofas = tab[k].ofa;
            snprintf(m->profile, sizeof m->profile, "%s", profile);
            return;
        }
    fail_msg("no profile %s in the test table", profile);
}

#define H100 "NVIDIA H100 80GB HBM3"
#define A100 "NVIDIA A100-SXM4-80GB"

static void ti_h100(tinv *t, int n)
{
    ti_init(t);
    for (int i = 0; i < n; i++)
        ti_gpu(t, H100, 81559, 9, 0, 1);
}

static gs_gfd_config cfg_none(void)
{
    gs_gfd_config c;
    memset(&c, 0, sizeof c);
    c.replicas = 1;
    return c;
}

static void labels_ok(const tinv *t, const gs_gfd_config *c, gs_gfd_labels *l)
{
    gs_error err;
    gs_error_clear(&err);
    gs_gfd_labels_init(l);
    if (gs_gfd_labels(&t->inv, c, l, &err) != 0)
        fail_msg("gs_gfd_labels: %s", err.msg);
    for (size_t i = 1; i < l->n; i++)
        assert_true(strcmp(l->v[i - 1].key, l->v[i].key) < 0); /* sorted, unique */
}

static void expect(const gs_gfd_labels *l, const char *key, const char *value)
{
    const char *v = gs_gfd_labels_get(l, key);
    if (!value) {
        if (v)
            fail_msg("%s: expected absent, found \"%s\"", key, v);
        return;
    }
    if (!v)
        fail_msg("%s: absent, expected \"%s\"", key, value);
    if (strcmp(v, value) != 0)
        fail_msg("%s: \"%s\", expected \"%s\"", key, v, value);
}

/* ---------------------------------------------------------------- the engine's view */
typedef struct tnode {
    gs_node node;
    gs_kv labels[96];
    gs_res alloc[24];
    gs_res cap[24];
    char names[24][96];
    size_t nnames;
} tnode;

static int res_cmp(const void *a, const void *b)
{
    return strcmp(((const gs_res *)a)->name, ((const gs_res *)b)->name);
}

static void add_res(tnode *t, const char *name, int64_t units, bool alloc, bool cap)
{
    snprintf(t->names[t->nnames], sizeof t->names[0], "%s", name);
    const char *nm = t->names[t->nnames++];
    gs_reslist *ls[2] = {&t->node.allocatable, &t->node.capacity};
    bool on[2] = {alloc, cap};
    for (int k = 0; k < 2; k++) {
        if (!on[k])
            continue;
        gs_reslist *l = ls[k];
        l->items[l->n].name = nm;
        l->items[l->n].q.nanos = (__int128)units * 1000000000;
        l->n++;
        qsort(l->items, l->n, sizeof *l->items, res_cmp);
    }
}

/* The node the device plugin and these labels make: capacity/allocatable counted here from
 * the inventory as the plugin advertises it (nvidia.md 3.1, 3.2). */
static void node_of(tnode *t, const tinv *ti, const gs_gfd_config *c, const gs_gfd_labels *l)
{
    memset(t, 0, sizeof *t);
    t->node.meta.name = "gpu-node-1";
    t->node.meta.labels.items = t->labels;
    t->node.allocatable.items = t->alloc;
    t->node.capacity.items = t->cap;
    t->node.ready = true;
    assert_true(l->n <= sizeof t->labels / sizeof t->labels[0]);
    for (size_t i = 0; i < l->n; i++) { /* already sorted bytewise */
        t->labels[i].key = l->v[i].key;
        t->labels[i].val = l->v[i].value;
    }
    t->node.meta.labels.n = (uint32_t)l->n;

    const gs_nvml_inventory *inv = &ti->inv;
    unsigned rep = c->replicas;
    unsigned mrep = c->sharing == GS_SHARING_TIME_SLICING
                        ? (c->mig_replicas ? c->mig_replicas : c->replicas) : 1;
    const char *gpu_res = c->rename_by_default && rep > 1 ? "nvidia.com/gpu.shared"
                                                          : "nvidia.com/gpu";
    int64_t healthy = 0, total = 0;
    for (size_t i = 0; i < inv->n_gpus; i++) {
        const gs_nvml_gpu *g = &inv->gpus[i];
        bool mig = !g->lost && g->mig_current == 1;
        if (c->mig_strategy == GS_MIG_NONE || !mig) {
            if (c->mig_strategy == GS_MIG_SINGLE)
                continue; /* single over a MIG-disabled GPU: MIG-INVALID, nothing */
            total++;
            healthy += !g->lost;
        }
    }
    if (c->mig_strategy == GS_MIG_SINGLE) {
        const char *p = gs_gfd_labels_get(l, "nvidia.com/gpu.product");
        int64_t n = 0;
        if (p && !strstr(p, "-MIG-INVALID"))
            for (size_t i = 0; i < inv->n_gpus; i++)
                if (!inv->gpus[i].lost && inv->gpus[i].mig_current == 1)
                    n += (int64_t)inv->gpus[i].n_mig;
        add_res(t, "nvidia.com/gpu", n * rep, true, true);
        return;
    }
    add_res(t, gpu_res, healthy * rep, true, false);
    add_res(t, gpu_res, total * rep, false, true);
    if (c->mig_strategy == GS_MIG_MIXED) {
        char seen[16][32];
        int64_t cnt[16];
        size_t ns = 0;
        for (size_t i = 0; i < inv->n_gpus; i++) {
            const gs_nvml_gpu *g = &inv->gpus[i];
            if (g->lost || g->mig_current != 1)
                continue;
            for (size_t j = 0; j < g->n_mig; j++) {
                if (!gs_nvml_mig_whole_gi(&g->mig[j]))
                    continue; /* "1c.2g.20gb": not advertised */
                size_t k = 0;
                while (k < ns && strcmp(seen[k], g->mig[j].profile) != 0)
                    k++;
                if (k == ns) {
                    snprintf(seen[ns], sizeof seen[0], "%s", g->mig[j].profile);
                    cnt[ns++] = 0;
                }
                cnt[k]++;
            }
        }
        for (size_t k = 0; k < ns; k++) {
            char res[96];
            snprintf(res, sizeof res, "nvidia.com/mig-%s", seen[k]);
            for (char *p = res; *p; p++)
                if (*p == '+')
                    *p = '.';
            add_res(t, res, cnt[k] * mrep, true, true);
        }
    }
}

static int str_qcmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "3g.40gb,3g.40gb" per GPU, profiles sorted */
static void layout_key(const char *const *names, size_t n, char *out, size_t cap)
{
    const char *v[8];
    memcpy(v, names, n * sizeof *v);
    qsort(v, n, sizeof *v, str_qcmp);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s%s", i ? "," : "", v[i]);
    }
}

/* The consistency test proper: the engine sees what NVML has. */
static void check_engine(const tinv *ti, const gs_gfd_config *c)
{
    gs_gfd_labels l;
    labels_ok(ti, c, &l);
    tnode t;
    node_of(&t, ti, c, &l);
    gs_node_gpus g;
    gs_error err;
    gs_error_clear(&err);
    if (gs_node_gpus_build(&t.node, &g, &err) != 0)
        fail_msg("gs_node_gpus_build: %s: %s", err.path, err.msg);
    const gs_nvml_inventory *inv = &ti->inv;

    assert_string_equal(g.model, gs_gfd_labels_get(&l, "nvidia.com/gpu.product"));
    assert_int_equal(g.mig_strategy, c->mig_strategy);
    gs_gpu_sharing want_sharing = c->replicas > 1 ? c->sharing : GS_SHARING_NONE;
    if (c->mig_strategy == GS_MIG_NONE)
        assert_int_equal(g.sharing, want_sharing);
    const char *prod = gs_gfd_labels_get(&l, "nvidia.com/gpu.product");
    if (prod && strstr(prod, "-MIG-INVALID")) {
        assert_true(g.mig_invalid);
        assert_int_equal(g.ndevs, 0);
        gs_node_gpus_free(&g);
        gs_gfd_labels_free(&l);
        return;
    }
    /* every GPU is a device, lost ones unhealthy */
    assert_int_equal(g.ndevs, inv->n_gpus);
    size_t lost = 0, mig_gpus = 0;
    for (size_t i = 0; i < inv->n_gpus; i++) {
        lost += inv->gpus[i].lost;
        mig_gpus += c->mig_strategy != GS_MIG_NONE && !inv->gpus[i].lost &&
                    inv->gpus[i].mig_current == 1;
    }
    size_t unhealthy = 0, eng_mig = 0;
    for (uint32_t d = 0; d < g.ndevs; d++) {
        unhealthy += (g.devs[d].flags & GS_DEV_UNHEALTHY) != 0;
        eng_mig += (g.devs[d].flags & GS_DEV_MIG_ENABLED) != 0;
    }
    assert_int_equal(unhealthy, lost);
    assert_int_equal(eng_mig, mig_gpus);
    /* whole devices: memory and sharing slots */
    for (uint32_t d = 0; d < g.ndevs; d++) {
        if (g.devs[d].flags & (GS_DEV_UNHEALTHY | GS_DEV_MIG_ENABLED))
            continue;
        const gs_nvml_gpu *first = NULL;
        for (size_t i = 0; i < inv->n_gpus && !first; i++)
            if (!inv->gpus[i].lost && inv->gpus[i].mig_current != 1)
                first = &inv->gpus[i];
        assert_non_null(first);
        assert_int_equal(g.devs[d].mem_mib, first->memory_mib);
        assert_int_equal(g.devs[d].slots, c->replicas);
    }
    /* MIG: the same layouts (as multisets of profiles per GPU) */
    if (mig_gpus) {
        char want[MAXG][256], have[MAXG][256];
        size_t nw = 0, nh = 0;
        for (size_t i = 0; i < inv->n_gpus; i++) {
            const gs_nvml_gpu *gg = &inv->gpus[i];
            if (gg->lost || gg->mig_current != 1)
                continue;
            const char *names[8];
            for (size_t j = 0; j < gg->n_mig; j++)
                names[j] = gg->mig[j].profile;
            layout_key(names, gg->n_mig, want[nw++], sizeof want[0]);
        }
        for (uint32_t d = 0; d < g.ndevs; d++) {
            if (!(g.devs[d].flags & GS_DEV_MIG_ENABLED))
                continue;
            const char *names[8];
            for (uint8_t k = 0; k < g.devs[d].nmig; k++)
                names[k] = g.mig_model->profiles[g.mig[g.devs[d].mig_first + k].profile].name;
            layout_key(names, g.devs[d].nmig, have[nh++], sizeof have[0]);
        }
        assert_int_equal(nw, nh);
        qsort(want, nw, sizeof want[0], (int (*)(const void *, const void *))strcmp);
        qsort(have, nh, sizeof have[0], (int (*)(const void *, const void *))strcmp);
        for (size_t k = 0; k < nw; k++)
            assert_string_equal(want[k], have[k]);
    }
    gs_node_gpus_free(&g);
    gs_gfd_labels_free(&l);
}

/* ---------------------------------------------------------------- tests */
static const char h100_file[] =
    "nvidia.com/cuda.driver-version.full=550.107.02\n"
    "nvidia.com/cuda.driver-version.major=550\n"
    "nvidia.com/cuda.driver-version.minor=107\n"
    "nvidia.com/cuda.driver-version.revision=02\n"
    "nvidia.com/cuda.driver.major=550\n"
    "nvidia.com/cuda.driver.minor=107\n"
    "nvidia.com/cuda.driver.rev=02\n"
    "nvidia.com/cuda.runtime-version.full=12.4\n"
    "nvidia.com/cuda.runtime-version.major=12\n"
    "nvidia.com/cuda.runtime-version.minor=4\n"
    "nvidia.com/cuda.runtime.major=12\n"
    "nvidia.com/cuda.runtime.minor=4\n"
    "nvidia.com/gfd.timestamp=1764650000\n"
    "nvidia.com/gpu.compute.major=9\n"
    "nvidia.com/gpu.compute.minor=0\n"
    "nvidia.com/gpu.count=8\n"
    "nvidia.com/gpu.family=hopper\n"
    "nvidia.com/gpu.machine=DGX-H100\n"
    "nvidia.com/gpu.memory=81559\n"
    "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3\n"
    "nvidia.com/gpu.replicas=1\n"
    "nvidia.com/gpu.sharing-strategy=none\n"
    "nvidia.com/mig.capable=true\n"
    "nvidia.com/mps.capable=false\n";

static void test_h100_whole(void **state)
{
    (void)state;
    tinv t;
    ti_h100(&t, 8);
    gs_gfd_config c = cfg_none();
    c.machine = "DGX H100\n";
    c.with_timestamp = true;
    c.timestamp = 1764650000;
    gs_gfd_labels l;
    labels_ok(&t, &c, &l);
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_gfd_features_file(&l, &sb);
    assert_string_equal(gs_strbuf_cstr(&sb), h100_file);
    gs_strbuf_free(&sb);
    gs_gfd_labels_free(&l);
    check_engine(&t, &c);
}

static void test_time_slicing(void **state)
{
    (void)state;
    tinv t;
    ti_h100(&t, 8);
    gs_gfd_config c = cfg_none();
    c.sharing = GS_SHARING_TIME_SLICING;
    c.replicas = 4;
    gs_gfd_labels l;
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-SHARED");
    expect(&l, "nvidia.com/gpu.replicas", "4");
    expect(&l, "nvidia.com/gpu.count", "8");
    expect(&l, "nvidia.com/gpu.sharing-strategy", "time-slicing");
    expect(&l, "nvidia.com/mps.capable", "false");
    expect(&l, "nvidia.com/mig.strategy", NULL);
    expect(&l, "nvidia.com/gpu.machine", NULL);
    expect(&l, "nvidia.com/gfd.timestamp", NULL);
    gs_gfd_labels_free(&l);
    check_engine(&t, &c);

    /* renameByDefault: nvidia.com/gpu.shared, no -SHARED suffix */
    c.rename_by_default = true;
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3");
    expect(&l, "nvidia.com/gpu.replicas", "4");
    expect(&l, "nvidia.com/gpu.sharing-strategy", "time-slicing");
    gs_gfd_labels_free(&l);
    check_engine(&t, &c);

    /* MPS */
    c.rename_by_default = false;
    c.sharing = GS_SHARING_MPS;
    c.replicas = 2;
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-SHARED");
    expect(&l, "nvidia.com/gpu.sharing-strategy", "mps");
    expect(&l, "nvidia.com/mps.capable", "true");
    gs_gfd_labels_free(&l);
    check_engine(&t, &c);

    /* a sharing strategy with 1 replica shares nothing */
    c.sharing = GS_SHARING_TIME_SLICING;
    c.replicas = 1;
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3");
    expect(&l, "nvidia.com/gpu.sharing-strategy", "none");
    expect(&l, "nvidia.com/gpu.replicas", "1");
    gs_gfd_labels_free(&l);
}

/* A100-80GB x4: GPU0 2x 3g.40gb, GPU1 3g.40gb + 2g.20gb + 2x 1g.10gb, GPU2 MIG off,
 * GPU3 7x 1g.10gb */
static void ti_mixed(tinv *t, bool gpu2_mig)
{
    ti_init(t);
    gs_nvml_gpu *g0 = ti_gpu(t, A100, 81920, 8, 0, 1);
    gs_nvml_gpu *g1 = ti_gpu(t, A100, 81920, 8, 0, 1);
    gs_nvml_gpu *g2 = ti_gpu(t, A100, 81920, 8, 0, 1);
    gs_nvml_gpu *g3 = ti_gpu(t, A100, 81920, 8, 0, 1);
    ti_mig(t, g0, "3g.40gb");
    ti_mig(t, g0, "3g.40gb");
    ti_mig(t, g1, "3g.40gb");
    ti_mig(t, g1, "2g.20gb");
    ti_mig(t, g1, "1g.10gb");
    ti_mig(t, g1, "1g.10gb");
    if (gpu2_mig)
        ti_mig(t, g2, "7g.80gb");
    for (int i = 0; i < 7; i++)
        ti_mig(t, g3, "1g.10gb");
}

static void test_mig_mixed(void **state)
{
    (void)state;
    tinv t;
    ti_mixed(&t, false);
    gs_gfd_config c = cfg_none();
    c.mig_strategy = GS_MIG_MIXED;
    gs_gfd_labels l;
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/mig.strategy", "mixed");
    expect(&l, "nvidia.com/mig.capable", "true");
    expect(&l, "nvidia.com/gpu.count", "4"); /* every GPU of the model, MIG or not */
    expect(&l, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB");
    expect(&l, "nvidia.com/gpu.replicas", "1"); /* a MIG-disabled GPU: sharing labels */
    expect(&l, "nvidia.com/gpu.memory", "81920");
    expect(&l, "nvidia.com/gpu.family", "ampere");
    expect(&l, "nvidia.com/mig-3g.40gb.count", "3");
    expect(&l, "nvidia.com/mig-3g.40gb.product", "NVIDIA-A100-SXM4-80GB-MIG-3g.40gb");
    expect(&l, "nvidia.com/mig-3g.40gb.memory", "40192");
    expect(&l, "nvidia.com/mig-3g.40gb.multiprocessors", "42");
    expect(&l, "nvidia.com/mig-3g.40gb.slices.gi", "3");
    expect(&l, "nvidia.com/mig-3g.40gb.slices.ci", "3");
    expect(&l, "nvidia.com/mig-3g.40gb.engines.copy", "3");
    expect(&l, "nvidia.com/mig-3g.40gb.engines.decoder", "2");
    expect(&l, "nvidia.com/mig-3g.40gb.engines.encoder", "0");
    expect(&l, "nvidia.com/mig-3g.40gb.engines.jpeg", "0");
    expect(&l, "nvidia.com/mig-3g.40gb.engines.ofa", "0");
    expect(&l, "nvidia.com/mig-3g.40gb.replicas", "1");
    expect(&l, "nvidia.com/mig-3g.40gb.sharing-strategy", "none");
    expect(&l, "nvidia.com/mig-2g.20gb.count", "1");
    expect(&l, "nvidia.com/mig-1g.10gb.count", "9");
    expect(&l, "nvidia.com/mig-1g.10gb.memory", "9856");
    expect(&l, "nvidia.com/gpu.multiprocessors", NULL); /* single strategy only */
    gs_gfd_labels_free(&l);
    check_engine(&t, &c);

    /* every GPU MIG-enabled: the full-GPU labels come without sharing (replicas 0) */
    ti_mixed(&t, true);
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/gpu.replicas", "0");
    expect(&l, "nvidia.com/gpu.count", "4");
    expect(&l, "nvidia.com/mig-7g.80gb.count", "1");
    gs_gfd_labels_free(&l);
    check_engine(&t, &c);

    /* a lost GPU beside MIG GPUs: counted in gpu.count, the engine's unhealthy device */
    t.gpus[2].lost = 1;
    t.gpus[2].n_mig = 0;
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/gpu.count", "4");
    expect(&l, "nvidia.com/mig-7g.80gb.count", NULL);
    gs_gfd_labels_free(&l);
    check_engine(&t, &c);
    ti_mixed(&t, true);

    /* time-sliced MIG devices */
    c.sharing = GS_SHARING_TIME_SLICING;
    c.replicas = 2;
    c.mig_replicas = 3;
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/mig-1g.10gb.replicas", "3");
    expect(&l, "nvidia.com/mig-1g.10gb.sharing-strategy", "time-slicing");
    expect(&l, "nvidia.com/mig-1g.10gb.product", "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb-SHARED");
    expect(&l, "nvidia.com/gpu.replicas", "0");
    gs_gfd_labels_free(&l);
    check_engine(&t, &c);

    /* +me profiles: the resource name's '.' (label keys cannot hold '+') */
    ti_init(&t);
    gs_nvml_gpu *g = ti_gpu(&t, A100, 81920, 8, 0, 1);
    ti_mig(&t, g, "1g.10gb+me");
    ti_mig(&t, g, "1g.10gb");
    c = cfg_none();
    c.mig_strategy = GS_MIG_MIXED;
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/mig-1g.10gb.me.count", "1");
    expect(&l, "nvidia.com/mig-1g.10gb.me.product", "NVIDIA-A100-SXM4-80GB-MIG-1g.10gbme");
    expect(&l, "nvidia.com/mig-1g.10gb.count", "1");
    gs_gfd_labels_free(&l);
}

static void test_mig_single(void **state)
{
    (void)state;
    tinv t;
    ti_init(&t);
    for (int i = 0; i < 2; i++) {
        gs_nvml_gpu *g = ti_gpu(&t, A100, 81920, 8, 0, 1);
        for (int k = 0; k < 7; k++)
            ti_mig(&t, g, "1g.10gb");
    }
    gs_gfd_config c = cfg_none();
    c.mig_strategy = GS_MIG_SINGLE;
    gs_gfd_labels l;
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/mig.strategy", "single");
    expect(&l, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb");
    expect(&l, "nvidia.com/gpu.count", "14");
    expect(&l, "nvidia.com/gpu.memory", "9856");
    expect(&l, "nvidia.com/gpu.replicas", "1");
    expect(&l, "nvidia.com/gpu.sharing-strategy", "none");
    expect(&l, "nvidia.com/gpu.multiprocessors", "14");
    expect(&l, "nvidia.com/gpu.slices.gi", "1");
    expect(&l, "nvidia.com/gpu.slices.ci", "1");
    expect(&l, "nvidia.com/gpu.engines.copy", "1");
    expect(&l, "nvidia.com/gpu.family", "ampere"); /* from the full-GPU labels */
    expect(&l, "nvidia.com/mig-1g.10gb.count", NULL);
    gs_gfd_labels_free(&l);
    check_engine(&t, &c);

    /* shared: -SHARED after the profile */
    c.sharing = GS_SHARING_TIME_SLICING;
    c.replicas = 2;
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb-SHARED");
    expect(&l, "nvidia.com/gpu.replicas", "2");
    gs_gfd_labels_free(&l);
    check_engine(&t, &c);

    /* non-uniform: MIG-INVALID */
    c = cfg_none();
    c.mig_strategy = GS_MIG_SINGLE;
    t.gpus[1].mig[6].profile[0] = '\0';
    snprintf(t.gpus[1].mig[6].profile, sizeof t.gpus[1].mig[6].profile, "2g.20gb");
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB-MIG-INVALID");
    expect(&l, "nvidia.com/gpu.count", "0");
    expect(&l, "nvidia.com/gpu.replicas", "0");
    expect(&l, "nvidia.com/gpu.memory", "0");
    expect(&l, "nvidia.com/gpu.multiprocessors", NULL);
    gs_gfd_labels_free(&l);
    check_engine(&t, &c);

    /* one GPU with MIG disabled: MIG-INVALID too */
    snprintf(t.gpus[1].mig[6].profile, sizeof t.gpus[1].mig[6].profile, "1g.10gb");
    t.gpus[1].mig_current = 0;
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB-MIG-INVALID");
    gs_gfd_labels_free(&l);
    check_engine(&t, &c);

    /* a MIG-enabled GPU without MIG devices: MIG-INVALID */
    t.gpus[1].mig_current = 1;
    t.gpus[1].n_mig = 0;
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB-MIG-INVALID");
    gs_gfd_labels_free(&l);

    /* a +me profile: GFD's sanitising drops the '+' ("1g.10gbme"); the engine still
     * resolves it to the catalog's 1g.10gb+me */
    ti_init(&t);
    for (int i = 0; i < 2; i++)
        ti_mig(&t, ti_gpu(&t, A100, 81920, 8, 0, 1), "1g.10gb+me");
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB-MIG-1g.10gbme");
    expect(&l, "nvidia.com/gpu.count", "2");
    expect(&l, "nvidia.com/gpu.engines.ofa", "1");
    gs_gfd_labels_free(&l);
    check_engine(&t, &c);

    /* single over GPUs none of which has MIG on: the whole-GPU labels */
    ti_h100(&t, 2);
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/mig.strategy", "single");
    expect(&l, "nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3");
    expect(&l, "nvidia.com/gpu.count", "2");
    gs_gfd_labels_free(&l);
}

static void test_lost_gpu(void **state)
{
    (void)state;
    tinv t;
    ti_h100(&t, 8);
    gs_nvml_gpu *g = &t.gpus[3];
    g->lost = 1;
    snprintf(g->lost_reason, sizeof g->lost_reason, "nvmlDeviceGetName: GPU is lost (15)");
    g->name[0] = '\0';
    g->uuid[0] = '\0';
    g->memory_mib = 0;
    g->cc_major = g->cc_minor = -1;
    gs_gfd_config c = cfg_none();
    gs_gfd_labels l;
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/gpu.count", "8"); /* present, advertised Unhealthy */
    expect(&l, "nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3");
    expect(&l, "nvidia.com/gpu.memory", "81559");
    gs_gfd_labels_free(&l);
    check_engine(&t, &c); /* 8 devices, 1 unhealthy */

    /* every GPU lost: no model to label, versions only */
    for (int i = 0; i < 8; i++)
        t.gpus[i].lost = 1;
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/gpu.product", NULL);
    expect(&l, "nvidia.com/gpu.count", NULL);
    expect(&l, "nvidia.com/cuda.driver.major", "550");
    expect(&l, "nvidia.com/mig.capable", "false");
    gs_gfd_labels_free(&l);
}

static void test_formats(void **state)
{
    (void)state;
    char b[64];
    gs_gfd_sanitise("NVIDIA H100 80GB HBM3", b, sizeof b);
    assert_string_equal(b, "NVIDIA-H100-80GB-HBM3");
    gs_gfd_sanitise("  Tesla  T4 (rev*2) ", b, sizeof b);
    assert_string_equal(b, "Tesla-T4-rev2");
    gs_gfd_sanitise("PowerEdge XE9680/x_y.z", b, sizeof b);
    assert_string_equal(b, "PowerEdge-XE9680x_y.z");
    gs_gfd_sanitise("NVIDIA H100", b, 7);
    assert_string_equal(b, "NVIDIA");
    assert_string_equal(gs_gfd_family(8, 0), "ampere");
    assert_string_equal(gs_gfd_family(8, 6), "ampere");
    assert_string_equal(gs_gfd_family(8, 9), "ada-lovelace");
    assert_string_equal(gs_gfd_family(9, 0), "hopper");
    assert_string_equal(gs_gfd_family(10, 0), "blackwell");
    assert_string_equal(gs_gfd_family(12, 0), "blackwell");
    assert_string_equal(gs_gfd_family(7, 0), "volta");
    assert_string_equal(gs_gfd_family(7, 5), "turing");
    assert_string_equal(gs_gfd_family(4, 0), "undefined");

    /* driver version without a revision; unknown CUDA version; no GPUs */
    tinv t;
    ti_h100(&t, 1);
    snprintf(t.inv.driver_version, sizeof t.inv.driver_version, "560.35");
    t.inv.cuda_driver_version = 0;
    gs_gfd_config c = cfg_none();
    gs_gfd_labels l;
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/cuda.driver.rev", "");
    expect(&l, "nvidia.com/cuda.driver-version.revision", "");
    expect(&l, "nvidia.com/cuda.driver-version.full", "560.35");
    expect(&l, "nvidia.com/cuda.runtime.major", NULL);
    gs_gfd_labels_free(&l);
    snprintf(t.inv.driver_version, sizeof t.inv.driver_version, "garbage");
    labels_ok(&t, &c, &l);
    expect(&l, "nvidia.com/cuda.driver.major", NULL);
    gs_gfd_labels_free(&l);
    t.inv.n_gpus = 0;
    labels_ok(&t, &c, &l);
    assert_int_equal(l.n, 0);
    gs_gfd_labels_free(&l);
}

static void test_config_errors(void **state)
{
    (void)state;
    tinv t;
    ti_h100(&t, 1);
    gs_gfd_labels l;
    gs_gfd_labels_init(&l);
    gs_error err;
    gs_gfd_config c = cfg_none();
    c.replicas = 0;
    gs_error_clear(&err);
    assert_int_equal(gs_gfd_labels(&t.inv, &c, &l, &err), -1);
    assert_int_equal(err.code, GS_ERR_USAGE);
    assert_non_null(strstr(err.msg, "replicas"));
    c = cfg_none();
    c.replicas = 4;
    gs_error_clear(&err);
    assert_int_equal(gs_gfd_labels(&t.inv, &c, &l, &err), -1);
    assert_non_null(strstr(err.msg, "without a sharing strategy"));
    c = cfg_none();
    c.sharing = GS_SHARING_VGPU;
    gs_error_clear(&err);
    assert_int_equal(gs_gfd_labels(&t.inv, &c, &l, &err), -1);
    assert_int_equal(err.code, GS_ERR_USAGE);
    gs_gfd_labels_free(&l);
}

static void test_outputs(void **state)
{
    (void)state;
    tinv t;
    ti_h100(&t, 2);
    gs_gfd_config c = cfg_none();
    gs_gfd_labels l;
    labels_ok(&t, &c, &l);
    /* keep three labels for a short exact body */
    gs_gfd_labels s;
    gs_gfd_labels_init(&s);
    gs_gfd_label keep[3] = {
        {"nvidia.com/gpu.count", gs_gfd_labels_get(&l, "nvidia.com/gpu.count")},
        {"nvidia.com/gpu.machine", "a\"b\\c"},
        {"nvidia.com/gpu.product", gs_gfd_labels_get(&l, "nvidia.com/gpu.product")},
    };
    s.v = keep;
    s.n = 3;
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_gfd_nodefeature_json(&s, "gpu-node-1", "gpusched-system", &sb);
    assert_string_equal(gs_strbuf_cstr(&sb),
                        "{\"apiVersion\":\"nfd.k8s-sigs.io/v1alpha1\",\"kind\":\"NodeFeature\","
                        "\"metadata\":{\"name\":\"gpusched-features-for-gpu-node-1\","
                        "\"namespace\":\"gpusched-system\",\"labels\":"
                        "{\"nfd.node.kubernetes.io/node-name\":\"gpu-node-1\"}},"
                        "\"spec\":{\"labels\":{\"nvidia.com/gpu.count\":\"2\","
                        "\"nvidia.com/gpu.machine\":\"a\\\"b\\\\c\","
                        "\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\"}}}\n");
    gs_strbuf_reset(&sb);
    gs_gfd_node_apply_json(&s, "gpu-node-1", &sb);
    assert_string_equal(gs_strbuf_cstr(&sb),
                        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":"
                        "\"gpu-node-1\",\"labels\":{\"nvidia.com/gpu.count\":\"2\","
                        "\"nvidia.com/gpu.machine\":\"a\\\"b\\\\c\","
                        "\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\"}}}\n");
    gs_strbuf_free(&sb);
    s.v = NULL; /* not owned */
    gs_gfd_labels_free(&s);

    /* the feature file, written atomically and read back */
    char dir[] = "/tmp/gs-gfd-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/gfd", dir);
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_gfd_write_file(path, &l, &err), 0);
    size_t len;
    char *d = gs_read_file(path, 0, &len, &err);
    assert_non_null(d);
    gs_strbuf want = GS_STRBUF_INIT;
    gs_gfd_features_file(&l, &want);
    assert_string_equal(d, gs_strbuf_cstr(&want));
    assert_non_null(strstr(d, "nvidia.com/gpu.count=2\n"));
    free(d);
    gs_strbuf_free(&want);
    unlink(path);
    /* a directory that does not exist: an I/O error, nothing left behind */
    snprintf(path, sizeof path, "%s/missing/gfd", dir);
    gs_error_clear(&err);
    assert_int_equal(gs_gfd_write_file(path, &l, &err), -1);
    assert_int_equal(err.code, GS_ERR_IO);
    rmdir(dir);
    gs_gfd_labels_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h100_whole),   cmocka_unit_test(test_time_slicing),
        cmocka_unit_test(test_mig_mixed),    cmocka_unit_test(test_mig_single),
        cmocka_unit_test(test_lost_gpu),     cmocka_unit_test(test_formats),
        cmocka_unit_test(test_config_errors), cmocka_unit_test(test_outputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
