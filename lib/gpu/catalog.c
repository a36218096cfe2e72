/*
 * catalog.c - the static MIG catalog (every MIG-capable data-centre GPU of the reference
 * docs/nvidia.md 1.5), product-label matching, MIG resource names and the exact MIG
 * layout check.
 *
 * Facts come from nvidia.md sections 1.2-1.5 and 3.1. Profile memory (mem_mib) is what
 * NVML / nvidia-smi reported on real hardware: the "NVML MB" column where the reference has
 * one, else the observed GiB column converted to MiB (nvidia-smi prints GiB with two
 * decimals of a value that is a multiple of 1/16 GiB, so 9.62 means 9.625 = 9856 MiB);
 * 0 where the reference marks it unknown. `unverified` is set where the reference tags the
 * profile's facts [U] or [I]. The placements of H200, GH200 and B200/GB200 are inferred,
 * which the model-level flag records; profile flags mark ids or memory the reference
 * leaves unverified.
 *
 * B300, GB300 and RTX PRO 6000 Blackwell Server Edition (nvidia.md 1.5, last paragraph):
 * the reference has their profile names and counts from the GPU operator config and the
 * MIG guide [V], a few ids [O] and nothing else. Their placements are derived (B300/GB300
 * from the 8-memory-slice table every other Blackwell/Hopper part shares; RTX PRO from
 * the 4-slice A30 table: 1-slice anywhere, 2-slice at 0 or 2, 4-slice at 0), ids not
 * observed are GS_MIG_ID_UNKNOWN and memory sizes 0 (estimated from the name), so every
 * profile and the placements are marked unverified.
 */
#include <string.h>

#include "gpu_int.h"

/* ---------------------------------------------------------------- profile tables */
/* Starts are bit masks over memory slots: 0x7F = slots 0..6, 0x55 = 0,2,4,6,
 * 0x15 = 0,2,4, 0x11 = 0,4, 0x0F = 0..3, 0x05 = 0,2, 0x01 = 0 only. */
#define P_1G(nm, mib, unv) {nm, 19, 1, 1, 7, 0x7F, mib, unv}
#define P_1GME(nm, mib, unv) {nm, 20, 1, 1, 1, 0x7F, mib, unv}
#define P_1GD(nm, mib, unv) {nm, 15, 1, 2, 4, 0x55, mib, unv}
#define P_2G(nm, mib, unv) {nm, 14, 2, 2, 3, 0x15, mib, unv}
#define P_3G(nm, mib, unv) {nm, 9, 3, 4, 2, 0x11, mib, unv}
#define P_4G(nm, mib, unv) {nm, 5, 4, 4, 1, 0x01, mib, unv}
#define P_7G(nm, mib, unv) {nm, 0, 7, 8, 1, 0x01, mib, unv}
#define IDU GS_MIG_ID_UNKNOWN

static const gs_mig_profile a100_40_profiles[] = {
    P_1G("1g.5gb", 4864, false),    P_1GME("1g.5gb+me", 4864, false),
    P_1GD("1g.10gb", 9856, false),  P_2G("2g.10gb", 9856, false),
    P_3G("3g.20gb", 19968, false),  P_4G("4g.20gb", 19968, false),
    P_7G("7g.40gb", 40192, false),
};

static const gs_mig_profile a100_80_profiles[] = {
    P_1G("1g.10gb", 9856, false),   P_1GME("1g.10gb+me", 9856, false),
    P_1GD("1g.20gb", 19968, true),  P_2G("2g.20gb", 19968, false),
    P_3G("3g.40gb", 40192, false),  P_4G("4g.40gb", 40192, false),
    P_7G("7g.80gb", 80384, false),
};

/* A30: 4 compute and 4 memory slices; its own ids (nvidia.md 1.3). */
static const gs_mig_profile a30_profiles[] = {
    {"1g.6gb", 14, 1, 1, 4, 0x0F, 5952, false},
    {"1g.6gb+me", 21, 1, 1, 1, 0x0F, 5952, false},
    {"2g.12gb", 5, 2, 2, 2, 0x05, 11968, false},
    {"2g.12gb+me", 6, 2, 2, 1, 0x05, 11968, false},
    {"4g.24gb", 0, 4, 4, 1, 0x01, 24000, false},
};

static const gs_mig_profile h100_80_profiles[] = {
    P_1G("1g.10gb", 9984, false),   P_1GME("1g.10gb+me", 9984, false),
    P_1GD("1g.20gb", 20096, false), P_2G("2g.20gb", 20096, false),
    P_3G("3g.40gb", 40448, false),  P_4G("4g.40gb", 40448, false),
    P_7G("7g.80gb", 81152, false),
};

static const gs_mig_profile h100_94_profiles[] = {
    P_1G("1g.12gb", 11008, false),  P_1GME("1g.12gb+me", 11008, false),
    P_1GD("1g.24gb", 22144, false), P_2G("2g.24gb", 22144, false),
    P_3G("3g.47gb", 47488, false),  P_4G("4g.47gb", 47488, true),
    P_7G("7g.94gb", 95360, false),
};

static const gs_mig_profile h100_96_profiles[] = {
    P_1G("1g.12gb", 11264, false),  P_1GME("1g.12gb+me", 11264, false),
    P_1GD("1g.24gb", 23552, false), P_2G("2g.24gb", 23552, false),
    P_3G("3g.48gb", 47616, false),  P_4G("4g.48gb", 47616, false),
    P_7G("7g.96gb", 95232, false),
};

static const gs_mig_profile gh200_144_profiles[] = {
    P_1G("1g.18gb", 17920, false),   P_1GME("1g.18gb+me", 17920, false),
    P_1GD("1g.36gb", 36096, false),  P_2G("2g.36gb", 36096, false),
    P_3G("3g.72gb", 0, true),       P_4G("4g.72gb", 0, true),
    P_7G("7g.144gb", 0, true),
};

static const gs_mig_profile h200_profiles[] = {
    P_1G("1g.18gb", 16384, false),   P_1GME("1g.18gb+me", 16384, false),
    P_1GD("1g.35gb", 33024, false),  P_2G("2g.35gb", 33024, false),
    P_3G("3g.71gb", 71168, false),   P_4G("4g.71gb", 71168, false),
    P_7G("7g.141gb", 143360, false),
};

static const gs_mig_profile b200_profiles[] = {
    P_1G("1g.23gb", 22528, false),   P_1GME("1g.23gb+me", 22528, false),
    P_1GD("1g.45gb", 45312, false),  P_2G("2g.45gb", 45312, false),
    P_3G("3g.90gb", 0, true),       P_4G("4g.90gb", 0, true),
    P_7G("7g.180gb", 0, true),
};

static const gs_mig_profile gb200_profiles[] = {
    P_1G("1g.23gb", 22528, false),   P_1GME("1g.23gb+me", 22528, false),
    P_1GD("1g.47gb", 46592, false),  P_2G("2g.47gb", 46592, false),
    P_3G("3g.93gb", 0, true),       P_4G("4g.93gb", 0, true),
    P_7G("7g.186gb", 0, true),
};

/* B300 (0x3182) and GB300 (0x31C2): names and counts [V] (operator config), ids [I] from
 * the shared 8-slice scheme, memory unknown. */
static const gs_mig_profile b300_profiles[] = {
    P_1G("1g.34gb", 0, true),        P_1GME("1g.34gb+me", 0, true),
    P_1GD("1g.67gb", 0, true),       P_2G("2g.67gb", 0, true),
    P_3G("3g.135gb", 0, true),       P_4G("4g.135gb", 0, true),
    P_7G("7g.269gb", 0, true),
};

static const gs_mig_profile gb300_profiles[] = {
    P_1G("1g.35gb", 0, true),        P_1GME("1g.35gb+me", 0, true),
    P_1GD("1g.70gb", 0, true),       P_2G("2g.70gb", 0, true),
    P_3G("3g.139gb", 0, true),       P_4G("4g.139gb", 0, true),
    P_7G("7g.278gb", 0, true),
};

/* RTX PRO 6000 Blackwell Server Edition (0x2BB5): 4 compute and 4 memory slices. Names and
 * counts per the MIG guide table [V]; the counts of the 2-slice variants are given as
 * "x2 (+gfx, +me.all, -me variants)", so +me.all (which takes every media engine and so
 * cannot exist twice) is 1 and the others 2 [I]. Ids observed: 1g.24gb 14, +me 21, +gfx 47,
 * +me.all 65 [O]; 2g.48gb 5 and 4g.96gb 0 follow A30's 4-slice ids [I]; the rest unknown.
 * "+me.all" blocks every other profile except "-me" ones (gs_mig_layout_fits). */
static const gs_mig_profile rtx_pro_6000_profiles[] = {
    {"1g.24gb", 14, 1, 1, 4, 0x0F, 0, true},
    {"1g.24gb+me", 21, 1, 1, 1, 0x0F, 0, true},
    {"1g.24gb+gfx", 47, 1, 1, 4, 0x0F, 0, true},
    {"1g.24gb+me.all", 65, 1, 1, 1, 0x0F, 0, true},
    {"1g.24gb-me", IDU, 1, 1, 4, 0x0F, 0, true},
    {"2g.48gb", 5, 2, 2, 2, 0x05, 0, true},
    {"2g.48gb+gfx", IDU, 2, 2, 2, 0x05, 0, true},
    {"2g.48gb+me.all", IDU, 2, 2, 1, 0x05, 0, true},
    {"2g.48gb-me", IDU, 2, 2, 2, 0x05, 0, true},
    {"4g.96gb", 0, 4, 4, 1, 0x01, 0, true},
    {"4g.96gb+gfx", IDU, 4, 4, 1, 0x01, 0, true},
};

/* ---------------------------------------------------------------- product lists */
static const char *const a100_40_products[] = {
    "NVIDIA-A100-SXM4-40GB", "A100-SXM4-40GB", "NVIDIA-A100-PCIE-40GB", "A100-PCIE-40GB", NULL};
static const char *const a100_80_products[] = {
    "NVIDIA-A100-SXM4-80GB", "A100-SXM4-80GB", "NVIDIA-A100-80GB-PCIe", "A100-80GB-PCIe",
    "NVIDIA-A100-PCIE-80GB", NULL};
static const char *const a30_products[] = {"NVIDIA-A30", "A30", NULL};
static const char *const h100_80_products[] = {
    "NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-PCIe", "NVIDIA-H800", "NVIDIA-H800-PCIe", NULL};
static const char *const h100_94_products[] = {"NVIDIA-H100-NVL", "NVIDIA-H800-NVL", NULL};
static const char *const h100_96_products[] = {"NVIDIA-GH200-480GB", "NVIDIA-H100-96GB-HBM3",
                                               "NVIDIA-H20", NULL};
static const char *const gh200_144_products[] = {"NVIDIA-GH200-144G-HBM3e", NULL};
static const char *const h200_products[] = {"NVIDIA-H200", "NVIDIA-H200-NVL", NULL};
static const char *const b200_products[] = {"NVIDIA-B200", NULL};
static const char *const gb200_products[] = {"NVIDIA-GB200", NULL};
/* GFD product values of the newest parts are not in the reference; the family tokens
 * (gs_mig_model_find) match whatever SKU suffix the driver adds. */
static const char *const b300_products[] = {"NVIDIA-B300", NULL};
static const char *const gb300_products[] = {"NVIDIA-GB300", NULL};
static const char *const rtx_pro_6000_products[] = {
    "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", NULL};

#define NPROF(a) ((uint8_t)(sizeof(a) / sizeof((a)[0])))

/* Whole-GPU memory: the nvidia.com/gpu.memory value GFD writes for the A100/A30 parts;
 * for the others the memory NVML reports where known, else a conservative estimate no
 * larger than the sum of the observed instances (always overridden by the label). */
enum {
    M_A100_80 = 0,
    M_A100_40,
    M_A30,
    M_H100_80,
    M_H100_94,
    M_H100_96,
    M_H200,
    M_GH200_144,
    M_B200,
    M_GB200,
    M_B300,
    M_GB300,
    M_RTX_PRO_6000,
    M_COUNT_
};

static const gs_mig_model models[M_COUNT_] = {
    /* Catalog order matters only when a model is inferred from profile names alone
     * (inventory.c): the 80 GB A100 comes before the 40 GB one because "1g.10gb" alone
     * means the 80 GB part far more often. */
    [M_A100_80] = {"A100-80GB", a100_80_products, {0x20B2, 0x20B5, 0x20F3, 0x20F5, 0},
                   7, 8, 81920, a100_80_profiles, NPROF(a100_80_profiles), false},
    [M_A100_40] = {"A100-40GB", a100_40_products, {0x20B0, 0x20B1, 0x20F1, 0x20F6, 0},
                   7, 8, 40960, a100_40_profiles, NPROF(a100_40_profiles), false},
    [M_A30] = {"A30-24GB", a30_products, {0x20B7, 0}, 4, 4, 24576, a30_profiles,
               NPROF(a30_profiles), false},
    [M_H100_80] = {"H100-80GB", h100_80_products, {0x2330, 0x2331, 0x2322, 0x2324, 0},
                   7, 8, 81559, h100_80_profiles, NPROF(h100_80_profiles), false},
    [M_H100_94] = {"H100-94GB", h100_94_products, {0x2321, 0x233A, 0}, 7, 8, 95830,
                   h100_94_profiles, NPROF(h100_94_profiles), false},
    [M_H100_96] = {"H100-96GB", h100_96_products, {0x2342, 0x233D, 0x20B6, 0x2329, 0},
                   7, 8, 97871, h100_96_profiles, NPROF(h100_96_profiles), false},
    [M_H200] = {"H200-141GB", h200_products, {0x2335, 0x233B, 0}, 7, 8, 143771, h200_profiles,
                NPROF(h200_profiles), true},
    [M_GH200_144] = {"GH200-144GB", gh200_144_products, {0x2348, 0}, 7, 8, 144384,
                     gh200_144_profiles, NPROF(gh200_144_profiles), true},
    [M_B200] = {"B200-180GB", b200_products, {0x2901, 0}, 7, 8, 181248, b200_profiles,
                NPROF(b200_profiles), true},
    [M_GB200] = {"GB200-186GB", gb200_products, {0x2941, 0}, 7, 8, 186368, gb200_profiles,
                 NPROF(gb200_profiles), true},
    /* whole-GPU memory of the newest parts [I]: what makes go-nvlib's name of the full
     * profile come out as written (7g.269gb: 268 < GiB <= 269; 7g.278gb; 4g.96gb) */
    [M_B300] = {"B300-269GB", b300_products, {0x3182, 0}, 7, 8, 274944, b300_profiles,
                NPROF(b300_profiles), true},
    [M_GB300] = {"GB300-278GB", gb300_products, {0x31C2, 0}, 7, 8, 284160, gb300_profiles,
                 NPROF(gb300_profiles), true},
    [M_RTX_PRO_6000] = {"RTX-PRO-6000-96GB", rtx_pro_6000_products, {0x2BB5, 0}, 4, 4, 97792,
                        rtx_pro_6000_profiles, NPROF(rtx_pro_6000_profiles), true},
};

const gs_mig_model *gs_mig_models(uint32_t *count)
{
    if (count)
        *count = M_COUNT_;
    return models;
}

/* ---------------------------------------------------------------- product matching */
/*
 * GFD writes nvidia.com/gpu.product as the NVML name with spaces turned into '-'
 * ("NVIDIA-A100-SXM4-80GB", older drivers "A100-SXM4-40GB"), then "-MIG-<profile>" under
 * the single strategy and "-SHARED" with time-slicing. Names vary by SKU and driver, so we
 * match tokens, not whole strings: cut the suffixes, split on '-', '_' and ' ', then decide
 * by family token (A30, A100/A800, H100/H800, H20, H200, GH200, B200, GB200) and, where a
 * family has several memory sizes, by a "<N>GB"/"<N>G" token or "NVL".
 */
void gs_gpu__model_core(const char *s, size_t n, size_t *off, size_t *len)
{
    size_t b = 0;
    if (gs_gpu__iprefix(s, n, "nvidia") && n > 6 && (s[6] == '-' || s[6] == ' ' || s[6] == '_'))
        b = 7;
    size_t e = n;
    static const char shared[] = "-shared";
    if (e - b >= sizeof shared - 1 &&
        gs_gpu__ieq(s + e - (sizeof shared - 1), sizeof shared - 1, shared, sizeof shared - 1))
        e -= sizeof shared - 1;
    /* first "-MIG-" after the model name starts the single-strategy suffix */
    for (size_t i = b; i + 5 <= e; i++) {
        if (gs_gpu__iprefix(s + i, e - i, "-mig-")) {
            e = i;
            break;
        }
    }
    *off = b;
    *len = e - b;
}

static bool tok_is(const char *t, size_t n, const char *word)
{
    return gs_gpu__ieq(t, n, word, strlen(word));
}

/* "80GB", "144G", "141gb" -> 80, 144, 141; 0 if the token is not a memory size. */
static unsigned tok_gb(const char *t, size_t n)
{
    size_t i = 0;
    unsigned v = 0;
    while (i < n && t[i] >= '0' && t[i] <= '9' && i < 5)
        v = v * 10 + (unsigned)(t[i++] - '0');
    if (i == 0)
        return 0;
    if (tok_is(t + i, n - i, "gb") || tok_is(t + i, n - i, "g"))
        return v;
    return 0;
}

const gs_mig_model *gs_mig_model_find(const char *product)
{
    if (!product)
        return NULL;
    size_t n = strnlen(product, 257);
    if (n == 0 || n > 256)
        return NULL;
    for (uint32_t i = 0; i < M_COUNT_; i++)
        if (gs_gpu__ieq(product, n, models[i].name, strlen(models[i].name)))
            return &models[i];

    size_t off, len;
    gs_gpu__model_core(product, n, &off, &len);
    const char *s = product + off;

    enum { F_NONE, F_A30, F_A100, F_H100, F_H20, F_H200, F_GH200, F_B200, F_GB200, F_B300,
           F_GB300 } fam = F_NONE;
    unsigned gb = 0;
    bool nvl = false, rtx = false, pro = false, n6000 = false, not_server = false;
    size_t i = 0;
    while (i < len) {
        while (i < len && (s[i] == '-' || s[i] == '_' || s[i] == ' '))
            i++;
        size_t st = i;
        while (i < len && s[i] != '-' && s[i] != '_' && s[i] != ' ')
            i++;
        const char *t = s + st;
        size_t tn = i - st;
        if (!tn)
            continue;
        if (fam == F_NONE) {
            if (tok_is(t, tn, "a30"))
                fam = F_A30;
            else if (tok_is(t, tn, "a100") || tok_is(t, tn, "a800"))
                fam = F_A100;
            else if (tok_is(t, tn, "h100") || tok_is(t, tn, "h800"))
                fam = F_H100;
            else if (tok_is(t, tn, "h20"))
                fam = F_H20;
            else if (tok_is(t, tn, "h200"))
                fam = F_H200;
            else if (tok_is(t, tn, "gh200"))
                fam = F_GH200;
            else if (tok_is(t, tn, "b200"))
                fam = F_B200;
            else if (tok_is(t, tn, "gb200"))
                fam = F_GB200;
            else if (tok_is(t, tn, "b300"))
                fam = F_B300;
            else if (tok_is(t, tn, "gb300"))
                fam = F_GB300;
        }
        rtx = rtx || tok_is(t, tn, "rtx");
        pro = pro || tok_is(t, tn, "pro");
        n6000 = n6000 || tok_is(t, tn, "6000");
        not_server = not_server || tok_is(t, tn, "workstation") || tok_is(t, tn, "max");
        if (tok_is(t, tn, "nvl"))
            nvl = true;
        unsigned g = tok_gb(t, tn);
        if (g && !gb)
            gb = g;
    }
    switch (fam) {
    case F_NONE:
        /* "RTX PRO 6000 Blackwell Server Edition": only the server part's MIG facts are in
         * the reference (the workstation and Max-Q editions are other boards) */
        return rtx && pro && n6000 && !not_server ? &models[M_RTX_PRO_6000] : NULL;
    case F_A30:
        return &models[M_A30];
    case F_A100:
        /* an A100 without a size token is the original 40 GB part */
        return gb == 80 ? &models[M_A100_80] : (gb == 40 || gb == 0) ? &models[M_A100_40] : NULL;
    case F_H100:
        if (nvl || gb == 94)
            return &models[M_H100_94];
        if (gb == 96)
            return &models[M_H100_96];
        return (gb == 80 || gb == 0) ? &models[M_H100_80] : NULL;
    case F_H20:
        /* H20 96 GB is grouped with the 96 GB H100; the 141 GB H20 uses H200 names */
        return (gb == 141) ? &models[M_H200] : &models[M_H100_96];
    case F_H200:
        return &models[M_H200];
    case F_GH200:
        /* GH200 with HBM3 is the H100-96GB; the HBM3e part is GH200-144GB */
        return (gb == 144) ? &models[M_GH200_144] : &models[M_H100_96];
    case F_B200:
        return &models[M_B200];
    case F_GB200:
        return &models[M_GB200];
    case F_B300:
        return &models[M_B300];
    case F_GB300:
        return &models[M_GB300];
    }
    return NULL;
}

/* ---------------------------------------------------------------- profiles */
int gs_gpu__profile_index(const gs_mig_model *m, const char *name, size_t n)
{
    if (!m || !name)
        return -1;
    for (uint8_t p = 0; p < m->nprofiles; p++) {
        const char *c = m->profiles[p].name;
        size_t i = 0, j = 0;
        while (c[j] && i < n) {
            if (c[j] == '+') {
                /* the attribute separator: '+', '.' or dropped by label sanitising */
                if (name[i] == '+' || name[i] == '.')
                    i++;
                j++;
                continue;
            }
            if (gs_gpu__lower(name[i]) != gs_gpu__lower(c[j]))
                break;
            i++;
            j++;
        }
        if (!c[j] && i == n)
            return p;
    }
    return -1;
}

/* "<G>g.<GB>gb[+attr]" -> G, GB and the attribute ("" or "me", ...). Returns false for
 * other shapes (CI-split names, garbage). */
static bool parse_profile_shape(const char *s, unsigned *g, unsigned *gb, const char **attr)
{
    unsigned a = 0, b = 0;
    size_t i = 0;
    while (s[i] >= '0' && s[i] <= '9' && i < 3)
        a = a * 10 + (unsigned)(s[i++] - '0');
    if (!i || s[i] != 'g' || s[i + 1] != '.')
        return false;
    i += 2;
    size_t st = i;
    while (s[i] >= '0' && s[i] <= '9' && i - st < 4)
        b = b * 10 + (unsigned)(s[i++] - '0');
    if (i == st || s[i] != 'g' || s[i + 1] != 'b')
        return false;
    i += 2;
    if (s[i] == '+' || s[i] == '.')
        i++;
    *g = a;
    *gb = b;
    *attr = s + i;
    return true;
}

/*
 * Profile of a model for an advertised name. Exact names first; otherwise the profile
 * with the same compute slices and attribute and the nearest memory size, because
 * drivers rename profiles when reported memory moves ("3g.39gb" for "3g.40gb",
 * nvidia.md 1.7). -1 when nothing is close.
 */
int gs_gpu__profile_resolve(const gs_mig_model *m, const char *name)
{
    if (!m || !name)
        return -1;
    int p = gs_gpu__profile_index(m, name, strnlen(name, 64));
    if (p >= 0)
        return p;
    unsigned g, gb;
    const char *attr;
    if (!parse_profile_shape(name, &g, &gb, &attr))
        return -1;
    int best = -1;
    unsigned best_d = 0;
    for (uint8_t k = 0; k < m->nprofiles; k++) {
        unsigned pg, pgb;
        const char *pattr;
        if (!parse_profile_shape(m->profiles[k].name, &pg, &pgb, &pattr))
            continue;
        if (pg != g || strcmp(pattr, attr) != 0)
            continue;
        unsigned d = pgb > gb ? pgb - gb : gb - pgb;
        if (d * 8 > pgb + 8) /* more than ~1/8 off: a different profile */
            continue;
        if (best < 0 || d < best_d) {
            best = k;
            best_d = d;
        }
    }
    return best;
}

const gs_mig_profile *gs_mig_profile_find(const gs_mig_model *m, const char *name)
{
    if (!m || !name)
        return NULL;
    int p = gs_gpu__profile_index(m, name, strnlen(name, 64));
    return p < 0 ? NULL : &m->profiles[p];
}

void gs_mig_resource_name(const gs_mig_profile *p, char *buf, size_t cap)
{
    if (!cap)
        return;
    static const char prefix[] = "nvidia.com/mig-";
    size_t o = 0;
    for (size_t i = 0; prefix[i] && o + 1 < cap; i++)
        buf[o++] = prefix[i];
    for (size_t i = 0; p && p->name[i] && o + 1 < cap; i++)
        buf[o++] = p->name[i] == '+' ? '.' : p->name[i];
    buf[o] = '\0';
}

bool gs_mig_parse_resource(const char *name, char *buf, size_t cap)
{
    static const char prefix[] = "nvidia.com/mig-";
    if (!name || strncmp(name, prefix, sizeof prefix - 1) != 0)
        return false;
    const char *p = name + sizeof prefix - 1;
    size_t n = strnlen(p, 64);
    if (n == 0 || n >= 64 || n + 1 > cap || p[0] < '0' || p[0] > '9')
        return false;
    /* must look like [<C>c.]<G>g.<GB>gb[.attr]: letters, digits, '.', '-' only */
    bool has_g = false;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '.' || c == '-'))
            return false;
        if (c == 'g' && i + 1 < n && p[i + 1] == '.')
            has_g = true;
    }
    if (!has_g)
        return false;
    memcpy(buf, p, n);
    buf[n] = '\0';
    /* "+" is written as "." in resource names: the first '.' after "<GB>gb" is it */
    for (size_t i = 0; i + 2 < n; i++) {
        if (buf[i] >= '0' && buf[i] <= '9' && buf[i + 1] == 'g' && buf[i + 2] == 'b' &&
            i + 3 < n && buf[i + 3] == '.') {
            buf[i + 3] = '+';
            break;
        }
    }
    return true;
}

/* ---------------------------------------------------------------- attributes, amounts */
/* One attribute word of a profile name. */
static unsigned attr_word(const char *w, size_t n, bool negative)
{
    if (negative)
        return (n == 2 && !memcmp(w, "me", 2)) ? GS_MIG_ATTR_NO_ME : GS_MIG_ATTR_OTHER;
    if (n == 2 && !memcmp(w, "me", 2))
        return GS_MIG_ATTR_ME;
    if (n == 6 && !memcmp(w, "me.all", 6))
        return GS_MIG_ATTR_ME_ALL;
    if (n == 3 && !memcmp(w, "gfx", 3))
        return GS_MIG_ATTR_GFX;
    return GS_MIG_ATTR_OTHER;
}

unsigned gs_mig_profile_name_attrs(const char *name)
{
    if (!name)
        return 0;
    /* the attributes start after the "gb" of "<G>g.<GB>gb" (or "<C>c.<G>g.<GB>gb") */
    const char *s = NULL;
    for (const char *q = name; q[0] && q[1]; q++)
        if (q[0] == 'g' && q[1] == 'b' && q > name && q[-1] >= '0' && q[-1] <= '9') {
            s = q + 2;
            break;
        }
    if (!s || !*s)
        return 0;
    if (*s != '+' && *s != '-')
        return GS_MIG_ATTR_OTHER;
    bool negative = *s == '-';
    unsigned a = 0;
    s++;
    for (;;) {
        size_t n = strcspn(s, ",");
        a |= n ? attr_word(s, n, negative) : GS_MIG_ATTR_OTHER;
        if (!s[n])
            break;
        s += n + 1;
    }
    return a;
}

unsigned gs_mig_profile_attrs(const gs_mig_profile *p)
{
    return p ? gs_mig_profile_name_attrs(p->name) : 0;
}

double gs_mig_profile_fraction(const gs_mig_model *m, const gs_mig_profile *p)
{
    if (!m || !p || !m->compute_slices)
        return 0;
    return (double)p->compute / (double)m->compute_slices;
}

double gs_mig_request_fraction(const char *profile, const gs_mig_model *hint)
{
    if (!profile)
        return 0;
    if (hint) {
        const gs_mig_profile *p = gs_mig_profile_find(hint, profile);
        if (p)
            return gs_mig_profile_fraction(hint, p);
    }
    /* the catalog models that offer the name: their fraction when they all agree */
    double f = -1;
    bool agree = true;
    for (uint32_t i = 0; i < M_COUNT_; i++) {
        const gs_mig_profile *p = gs_mig_profile_find(&models[i], profile);
        if (!p)
            continue;
        double g = gs_mig_profile_fraction(&models[i], p);
        if (f >= 0 && g != f)
            agree = false;
        f = g;
    }
    if (f >= 0 && agree)
        return f;
    /* unknown or ambiguous name: its G of the usual 7 compute slices */
    unsigned g = 0;
    for (size_t i = 0; profile[i] >= '0' && profile[i] <= '9' && i < 3; i++)
        g = g * 10 + (unsigned)(profile[i] - '0');
    return (g > 0 && g <= 7 ? g : 1) / 7.0;
}

/* ---------------------------------------------------------------- layout check */
/*
 * Can these instances coexist on one GPU (nvidia.md 1.4)? Each instance needs a legal
 * start for its profile such that the memory-slice ranges [start, start+size) do not
 * overlap; compute slices must total <= compute_slices; per-profile max counts hold; at
 * most one "+me" instance exists (the reference leaves +me next to other instances [U],
 * we only enforce the per-GPU limit of one); and a "+me.all" instance, which takes every
 * media engine, shares the GPU only with "-me" instances (nvidia.md 1.4).
 *
 * Search: instances sorted by size, widest first (they have the fewest starts), then a
 * depth-first search trying starts lowest first with a memory-slice bit mask. With at
 * most 8 instances and 8 starts it visits a few hundred states at worst. Because
 * instances are tried widest first and starts lowest first, the first solution found is
 * the lexicographically lowest one in that order, which inventory.c relies on for a
 * deterministic layout.
 */
typedef struct layout_ctx {
    const gs_mig_model *m;
    uint8_t order[GS_GPU__MAX_MIG_PER_GPU]; /* instance positions, widest first */
    uint8_t start[GS_GPU__MAX_MIG_PER_GPU]; /* per position in the caller's order */
    const uint8_t *pidx;
    uint32_t n;
} layout_ctx;

static bool layout_search(layout_ctx *c, uint32_t k, uint32_t used_mask)
{
    if (k == c->n)
        return true;
    uint32_t inst = c->order[k];
    const gs_mig_profile *p = &c->m->profiles[c->pidx[inst]];
    uint32_t size_mask = (1u << p->mem_slices) - 1u;
    for (uint32_t s = 0; s < 8; s++) {
        if (!(p->starts & (1u << s)))
            continue;
        if (s + p->mem_slices > c->m->memory_slices)
            continue;
        uint32_t m = size_mask << s;
        if (used_mask & m)
            continue;
        c->start[inst] = (uint8_t)s;
        if (layout_search(c, k + 1, used_mask | m))
            return true;
    }
    return false;
}

bool gs_mig_layout_fits(const gs_mig_model *m, const uint8_t *profile_idx, uint32_t n,
                        uint8_t *starts_out)
{
    if (!m)
        return false;
    if (n == 0)
        return true;
    if (!profile_idx || n > GS_GPU__MAX_MIG_PER_GPU || n > m->memory_slices)
        return false;
    uint8_t per_profile[32] = {0};
    uint32_t compute = 0, mem = 0, me = 0, me_all = 0, no_me = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (profile_idx[i] >= m->nprofiles || profile_idx[i] >= 32)
            return false;
        const gs_mig_profile *p = &m->profiles[profile_idx[i]];
        if (++per_profile[profile_idx[i]] > p->max_count)
            return false;
        compute += p->compute;
        mem += p->mem_slices;
        unsigned at = gs_mig_profile_attrs(p);
        me += (at & GS_MIG_ATTR_ME) != 0;
        me_all += (at & GS_MIG_ATTR_ME_ALL) != 0;
        no_me += (at & GS_MIG_ATTR_NO_ME) != 0;
    }
    if (compute > m->compute_slices || mem > m->memory_slices || me > 1)
        return false;
    if (me_all && (me_all > 1 || me_all + no_me != n))
        return false;

    layout_ctx c;
    c.m = m;
    c.pidx = profile_idx;
    c.n = n;
    /* stable insertion sort of positions by memory slices, widest first */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = i;
        uint8_t w = m->profiles[profile_idx[i]].mem_slices;
        while (j > 0 && m->profiles[profile_idx[c.order[j - 1]]].mem_slices < w) {
            c.order[j] = c.order[j - 1];
            j--;
        }
        c.order[j] = (uint8_t)i;
    }
    if (!layout_search(&c, 0, 0))
        return false;
    if (starts_out)
        memcpy(starts_out, c.start, n);
    return true;
}
