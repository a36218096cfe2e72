/* test_gpu_catalog.c - MIG catalog: placement rules (nvidia.md 1.3/1.4), per-model tables,
 * product-label matching and MIG resource names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/gpu.h"

static const gs_mig_model *model(const char *name)
{
    const gs_mig_model *m = gs_mig_model_find(name);
    assert_non_null(m);
    return m;
}

static uint8_t pidx(const gs_mig_model *m, const char *profile)
{
    const gs_mig_profile *p = gs_mig_profile_find(m, profile);
    assert_non_null(p);
    return (uint8_t)(p - m->profiles);
}

/* Does the list of profile names fit on one GPU? Starts (in list order) into starts. */
static bool fits(const gs_mig_model *m, uint8_t *starts, int n, ...)
{
    uint8_t idx[16];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        idx[i] = pidx(m, va_arg(ap, const char *));
    va_end(ap);
    return gs_mig_layout_fits(m, idx, (uint32_t)n, starts);
}

static void test_catalog_models_consistent(void **state)
{
    (void)state;
    uint32_t n;
    const gs_mig_model *ms = gs_mig_models(&n);
    assert_int_equal(n, 13);
    for (uint32_t i = 0; i < n; i++) {
        const gs_mig_model *m = &ms[i];
        assert_non_null(m->products);
        assert_non_null(m->products[0]);
        assert_int_not_equal(m->pci_device_ids[0], 0);
        assert_true(m->mem_mib > 0);
        /* every product string of a model finds that model, and its name too */
        for (const char *const *p = m->products; *p; p++)
            assert_ptr_equal(gs_mig_model_find(*p), m);
        assert_ptr_equal(gs_mig_model_find(m->name), m);
        for (uint8_t k = 0; k < m->nprofiles; k++) {
            const gs_mig_profile *p = &m->profiles[k];
            assert_true(p->compute >= 1 && p->compute <= m->compute_slices);
            assert_true(p->mem_slices >= 1 && p->mem_slices <= m->memory_slices);
            assert_true(p->starts != 0);
            assert_true(p->mem_mib == 0 || p->mem_mib < m->mem_mib);
            /* max_count copies fit, one more does not */
            uint8_t idx[9];
            memset(idx, k, sizeof idx);
            assert_true(gs_mig_layout_fits(m, idx, p->max_count, NULL));
            assert_false(gs_mig_layout_fits(m, idx, p->max_count + 1u, NULL));
            for (uint8_t j = k + 1; j < m->nprofiles; j++)
                assert_string_not_equal(p->name, m->profiles[j].name);
        }
    }
}

static void test_catalog_a100_placements(void **state)
{
    (void)state;
    const gs_mig_model *m = model("A100-SXM4-40GB");
    assert_string_equal(m->name, "A100-40GB");
    assert_int_equal(m->compute_slices, 7);
    assert_int_equal(m->memory_slices, 8);
    uint8_t st[8];

    /* 4g + 3g fits: 4g at 0, 3g at 4 (either order given) */
    assert_true(fits(m, st, 2, "4g.20gb", "3g.20gb"));
    assert_int_equal(st[0], 0);
    assert_int_equal(st[1], 4);
    assert_true(fits(m, st, 2, "3g.20gb", "4g.20gb"));
    assert_int_equal(st[0], 4);
    assert_int_equal(st[1], 0);
    /* 3g + 3g fits at 0 and 4 */
    assert_true(fits(m, st, 2, "3g.20gb", "3g.20gb"));
    assert_int_equal(st[0], 0);
    assert_int_equal(st[1], 4);
    /* 3x 2g + 1x 1g: 2g at 0,2,4 and the 1g at 6 */
    assert_true(fits(m, st, 4, "2g.10gb", "1g.5gb", "2g.10gb", "2g.10gb"));
    assert_int_equal(st[1], 6);
    /* 7x 1g fits, 8x 1g does not (no 1-slice start at 7) */
    assert_true(fits(m, NULL, 7, "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb",
                     "1g.5gb"));
    assert_false(fits(m, NULL, 8, "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb",
                      "1g.5gb", "1g.5gb"));
    /* 2x 4g does not (max 1, one start) */
    assert_false(fits(m, NULL, 2, "4g.20gb", "4g.20gb"));
    /* 4g + 2g + 2g: the second 2g would need start 6 */
    assert_false(fits(m, NULL, 3, "4g.20gb", "2g.10gb", "2g.10gb"));
    /* 4g + 2g + 1g = 7 compute slices */
    assert_true(fits(m, NULL, 3, "4g.20gb", "2g.10gb", "1g.5gb"));
    /* 3g + 3g + 1g: compute 7, but no memory slot is left */
    assert_false(fits(m, NULL, 3, "3g.20gb", "3g.20gb", "1g.5gb"));
    /* 7g alone; nothing next to it */
    assert_true(fits(m, NULL, 1, "7g.40gb"));
    assert_false(fits(m, NULL, 2, "7g.40gb", "1g.5gb"));
}

static void test_catalog_double_memory_1g(void **state)
{
    (void)state;
    const gs_mig_model *m = model("NVIDIA-A100-SXM4-40GB");
    const gs_mig_profile *p = gs_mig_profile_find(m, "1g.10gb");
    assert_non_null(p);
    assert_int_equal(p->id, 15);
    assert_int_equal(p->compute, 1);
    assert_int_equal(p->mem_slices, 2);
    assert_int_equal(p->max_count, 4);
    assert_int_equal(p->starts, 0x55); /* 0, 2, 4, 6 only */
    uint8_t st[8];
    assert_true(fits(m, st, 4, "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"));
    assert_int_equal(st[0], 0);
    assert_int_equal(st[1], 2);
    assert_int_equal(st[2], 4);
    assert_int_equal(st[3], 6);
    /* widest first, lowest starts first: the doubles take 0, 2, 4 and the 1g.5gb slot 6 */
    assert_true(fits(m, st, 4, "1g.5gb", "1g.10gb", "1g.10gb", "1g.10gb"));
    assert_int_equal(st[0], 6);
    assert_int_equal(st[1], 0);
    assert_int_equal(st[2], 2);
    assert_int_equal(st[3], 4);
    assert_false(fits(m, NULL, 5, "1g.5gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"));
    /* two 1g.5gb take slots 0 and 1: three doubles still fit at 2, 4, 6, four do not */
    assert_true(fits(m, NULL, 5, "1g.5gb", "1g.5gb", "1g.10gb", "1g.10gb", "1g.10gb"));
    assert_false(fits(m, NULL, 6, "1g.5gb", "1g.5gb", "1g.10gb", "1g.10gb", "1g.10gb",
                      "1g.10gb"));
    /* three 1g.5gb leave no aligned pair for the third double */
    assert_false(fits(m, NULL, 6, "1g.5gb", "1g.5gb", "1g.5gb", "1g.10gb", "1g.10gb",
                      "1g.10gb"));
    /* 3x 2g + double: the double at 6 covers slots 6 and 7 */
    assert_true(fits(m, st, 4, "2g.10gb", "2g.10gb", "2g.10gb", "1g.10gb"));
    assert_int_equal(st[3], 6);
    /* on the 80 GB part the double is 1g.20gb and 1g.10gb is the single-slice profile */
    const gs_mig_model *m80 = model("NVIDIA-A100-SXM4-80GB");
    assert_int_equal(gs_mig_profile_find(m80, "1g.20gb")->mem_slices, 2);
    assert_int_equal(gs_mig_profile_find(m80, "1g.10gb")->mem_slices, 1);
    assert_int_equal(gs_mig_profile_find(m80, "1g.10gb")->id, 19);
}

static void test_catalog_me_profiles(void **state)
{
    (void)state;
    const gs_mig_model *m = model("A100-SXM4-40GB");
    assert_true(fits(m, NULL, 1, "1g.5gb+me"));
    assert_false(fits(m, NULL, 2, "1g.5gb+me", "1g.5gb+me"));
    /* '.' spelling (as in resource names) and the sanitised label spelling */
    assert_ptr_equal(gs_mig_profile_find(m, "1g.5gb.me"), gs_mig_profile_find(m, "1g.5gb+me"));
    assert_ptr_equal(gs_mig_profile_find(m, "1g.5gbme"), gs_mig_profile_find(m, "1g.5gb+me"));
    assert_int_equal(gs_mig_profile_find(m, "1g.5gb+me")->id, 20);
    assert_null(gs_mig_profile_find(m, "1g.5gb+"));
    assert_null(gs_mig_profile_find(m, "1g.6gb"));
    assert_null(gs_mig_profile_find(m, ""));
    /* A30: its own +me profiles, at most one +me instance in total */
    const gs_mig_model *a30 = model("NVIDIA-A30");
    assert_false(fits(a30, NULL, 2, "1g.6gb+me", "2g.12gb+me"));
}

static void test_catalog_a30(void **state)
{
    (void)state;
    const gs_mig_model *m = model("NVIDIA-A30");
    assert_string_equal(m->name, "A30-24GB");
    assert_int_equal(m->compute_slices, 4);
    assert_int_equal(m->memory_slices, 4);
    assert_int_equal(gs_mig_profile_find(m, "1g.6gb")->id, 14);
    assert_int_equal(gs_mig_profile_find(m, "2g.12gb")->id, 5);
    assert_int_equal(gs_mig_profile_find(m, "4g.24gb")->id, 0);
    uint8_t st[4];
    assert_true(fits(m, st, 4, "1g.6gb", "1g.6gb", "1g.6gb", "1g.6gb"));
    assert_int_equal(st[3], 3); /* on A30 a 1-slice profile may start at the last slot */
    assert_false(fits(m, NULL, 5, "1g.6gb", "1g.6gb", "1g.6gb", "1g.6gb", "1g.6gb"));
    assert_true(fits(m, st, 2, "2g.12gb", "2g.12gb"));
    assert_true(fits(m, st, 3, "1g.6gb", "2g.12gb", "1g.6gb"));
    assert_int_equal(st[1], 0);
    assert_false(fits(m, NULL, 2, "4g.24gb", "1g.6gb"));
    assert_null(gs_mig_profile_find(m, "3g.20gb"));
}

static void test_catalog_unverified_flags(void **state)
{
    (void)state;
    assert_false(model("NVIDIA-H100-80GB-HBM3")->unverified);
    assert_true(model("NVIDIA-H200")->unverified);
    assert_true(model("NVIDIA-B200")->unverified);
    assert_true(model("NVIDIA-GB200")->unverified);
    assert_true(model("NVIDIA-GH200-144G-HBM3e")->unverified);
    const gs_mig_model *b = model("NVIDIA-B200");
    const gs_mig_profile *p = gs_mig_profile_find(b, "3g.90gb");
    assert_non_null(p);
    assert_int_equal(p->mem_mib, 0); /* unknown in the reference */
    assert_true(p->unverified);
    const gs_mig_model *a = model("NVIDIA-A100-SXM4-40GB");
    assert_int_equal(gs_mig_profile_find(a, "1g.5gb")->mem_mib, 4864);
    assert_false(gs_mig_profile_find(a, "1g.5gb")->unverified);
    assert_true(gs_mig_profile_find(model("A100-SXM4-80GB"), "1g.20gb")->unverified);
}

static void test_catalog_product_matching(void **state)
{
    (void)state;
    static const struct {
        const char *product;
        const char *model; /* NULL: not MIG-capable */
    } cases[] = {
        {"NVIDIA-A100-SXM4-80GB", "A100-80GB"},
        {"A100-SXM4-40GB", "A100-40GB"},
        {"NVIDIA-A100-PCIE-40GB", "A100-40GB"},
        {"NVIDIA-A100-80GB-PCIe", "A100-80GB"},
        {"nvidia-a100-sxm4-80gb", "A100-80GB"},
        {"NVIDIA A100-SXM4-80GB", "A100-80GB"},
        {"NVIDIA-A800-SXM4-80GB", "A100-80GB"},
        {"NVIDIA-H100-80GB-HBM3", "H100-80GB"},
        {"NVIDIA-H100-PCIe", "H100-80GB"},
        {"NVIDIA-H800", "H100-80GB"},
        {"NVIDIA-H100-NVL", "H100-94GB"},
        {"NVIDIA-H100-SXM5-94GB", "H100-94GB"},
        {"NVIDIA-GH200-480GB", "H100-96GB"},
        {"NVIDIA-H100-96GB-HBM3", "H100-96GB"},
        {"NVIDIA-GH200-144G-HBM3e", "GH200-144GB"},
        {"NVIDIA-H200", "H200-141GB"},
        {"NVIDIA-H200-NVL", "H200-141GB"},
        {"NVIDIA-B200", "B200-180GB"},
        {"NVIDIA-GB200", "GB200-186GB"},
        {"NVIDIA-A30", "A30-24GB"},
        {"A100-SXM4-40GB-MIG-1g.5gb", "A100-40GB"},
        {"NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED", "A100-40GB"},
        {"NVIDIA-H100-80GB-HBM3-SHARED", "H100-80GB"},
        {"NVIDIA-H100-80GB-HBM3-MIG-3g.40gb", "H100-80GB"},
        {"Tesla-T4", NULL},
        {"NVIDIA-L4", NULL},
        {"NVIDIA-A10", NULL},
        {"NVIDIA-A100X", NULL},
        {"NVIDIA-RTX-A6000", NULL},
        {"Tesla-V100-SXM2-16GB", NULL},
        {"NVIDIA-L40S", NULL},
        {"G2", NULL},
        {"", NULL},
        {"-MIG-1g.5gb", NULL},
        {"NVIDIA-", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const gs_mig_model *m = gs_mig_model_find(cases[i].product);
        if (!cases[i].model) {
            if (m)
                fail_msg("%s matched %s", cases[i].product, m->name);
        } else {
            if (!m)
                fail_msg("%s matched nothing", cases[i].product);
            assert_string_equal(m->name, cases[i].model);
        }
    }
    assert_null(gs_mig_model_find(NULL));
    char longp[400];
    memset(longp, 'A', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    assert_null(gs_mig_model_find(longp));
}

static void test_catalog_resource_names(void **state)
{
    (void)state;
    uint32_t n;
    const gs_mig_model *ms = gs_mig_models(&n);
    char res[64], prof[32];
    for (uint32_t i = 0; i < n; i++) {
        for (uint8_t k = 0; k < ms[i].nprofiles; k++) {
            gs_mig_resource_name(&ms[i].profiles[k], res, sizeof res);
            assert_null(strchr(res, '+'));
            assert_true(gs_mig_parse_resource(res, prof, sizeof prof));
            assert_string_equal(prof, ms[i].profiles[k].name);
        }
    }
    const gs_mig_model *m = model("A100-SXM4-80GB");
    gs_mig_resource_name(gs_mig_profile_find(m, "1g.10gb+me"), res, sizeof res);
    assert_string_equal(res, "nvidia.com/mig-1g.10gb.me");
    gs_mig_resource_name(gs_mig_profile_find(m, "1g.10gb+me"), res, 10); /* truncates */
    assert_string_equal(res, "nvidia.co");

    assert_true(gs_mig_parse_resource("nvidia.com/mig-3g.40gb", prof, sizeof prof));
    assert_string_equal(prof, "3g.40gb");
    assert_true(gs_mig_parse_resource("nvidia.com/mig-1g.24gb.me.all", prof, sizeof prof));
    assert_string_equal(prof, "1g.24gb+me.all");
    assert_true(gs_mig_parse_resource("nvidia.com/mig-1c.3g.20gb", prof, sizeof prof));
    assert_string_equal(prof, "1c.3g.20gb");
    assert_false(gs_mig_parse_resource("nvidia.com/gpu", prof, sizeof prof));
    assert_false(gs_mig_parse_resource("nvidia.com/mig-", prof, sizeof prof));
    assert_false(gs_mig_parse_resource("nvidia.com/mig.strategy", prof, sizeof prof));
    assert_false(gs_mig_parse_resource("nvidia.com/mig-foo", prof, sizeof prof));
    assert_false(gs_mig_parse_resource("nvidia.com/mig-1g.10gb", prof, 4)); /* too small */
    assert_false(gs_mig_parse_resource(NULL, prof, sizeof prof));
}

static void test_catalog_layout_bad_input(void **state)
{
    (void)state;
    const gs_mig_model *m = model("A100-SXM4-40GB");
    uint8_t idx[10] = {0};
    assert_true(gs_mig_layout_fits(m, idx, 0, NULL));
    assert_false(gs_mig_layout_fits(NULL, idx, 1, NULL));
    idx[0] = 200; /* out of range */
    assert_false(gs_mig_layout_fits(m, idx, 1, NULL));
    memset(idx, 0, sizeof idx);
    assert_false(gs_mig_layout_fits(m, idx, 10, NULL));
}

/* B300, GB300 and RTX PRO 6000 Blackwell Server Edition (nvidia.md 1.5, last paragraph):
 * names, counts and PCI ids from the reference, placements derived and marked unverified;
 * RTX PRO has 4 slices and the +me.all / -me / +gfx variants. */
static void test_catalog_newest_parts(void **state)
{
    (void)state;
    const gs_mig_model *b300 = model("NVIDIA-B300-SXM6-AC");
    assert_string_equal(b300->name, "B300-269GB");
    assert_int_equal(b300->pci_device_ids[0], 0x3182);
    assert_true(b300->unverified);
    assert_int_equal(b300->compute_slices, 7);
    assert_int_equal(gs_mig_profile_find(b300, "1g.34gb")->max_count, 7);
    assert_int_equal(gs_mig_profile_find(b300, "1g.67gb")->max_count, 4);
    assert_int_equal(gs_mig_profile_find(b300, "3g.135gb")->max_count, 2);
    assert_true(gs_mig_profile_find(b300, "7g.269gb")->unverified);
    const gs_mig_model *gb300 = model("NVIDIA-GB300");
    assert_string_equal(gb300->name, "GB300-278GB");
    assert_int_equal(gb300->pci_device_ids[0], 0x31C2);
    assert_non_null(gs_mig_profile_find(gb300, "1g.35gb+me"));
    assert_int_equal(gs_mig_profile_find(gb300, "2g.70gb")->max_count, 3);

    const gs_mig_model *rtx = model("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition");
    assert_ptr_equal(model("NVIDIA RTX PRO 6000 Blackwell Server Edition-MIG-1g.24gb"), rtx);
    assert_ptr_equal(model("RTX-PRO-6000-96GB"), rtx);
    assert_null(gs_mig_model_find("NVIDIA-RTX-PRO-6000-Blackwell-Workstation-Edition"));
    assert_null(gs_mig_model_find("NVIDIA-RTX-6000-Ada-Generation"));
    assert_int_equal(rtx->pci_device_ids[0], 0x2BB5);
    assert_int_equal(rtx->compute_slices, 4);
    assert_int_equal(rtx->memory_slices, 4);
    assert_int_equal(rtx->nprofiles, 11);
    assert_true(rtx->unverified);
    assert_int_equal(gs_mig_profile_find(rtx, "1g.24gb")->id, 14);
    assert_int_equal(gs_mig_profile_find(rtx, "1g.24gb+me")->id, 21);
    assert_int_equal(gs_mig_profile_find(rtx, "1g.24gb+gfx")->id, 47);
    assert_int_equal(gs_mig_profile_find(rtx, "1g.24gb+me.all")->id, 65);
    assert_int_equal(gs_mig_profile_find(rtx, "1g.24gb-me")->id, GS_MIG_ID_UNKNOWN);
    assert_int_equal(gs_mig_profile_find(rtx, "1g.24gb-me")->max_count, 4);
    assert_int_equal(gs_mig_profile_find(rtx, "2g.48gb+me.all")->max_count, 1);
    assert_int_equal(gs_mig_profile_find(rtx, "4g.96gb+gfx")->max_count, 1);
    uint8_t st[8];
    /* 4 slices as on A30: 1-slice anywhere, 2-slice at 0 or 2, 4-slice at 0 */
    assert_true(fits(rtx, st, 3, "2g.48gb", "1g.24gb", "1g.24gb"));
    assert_int_equal(st[0], 0);
    assert_false(fits(rtx, st, 2, "2g.48gb", "4g.96gb"));
    /* +me.all shares the GPU with -me instances only (nvml.h) */
    assert_true(fits(rtx, st, 4, "1g.24gb+me.all", "1g.24gb-me", "1g.24gb-me", "1g.24gb-me"));
    assert_true(fits(rtx, st, 2, "2g.48gb+me.all", "2g.48gb-me"));
    assert_false(fits(rtx, st, 2, "1g.24gb+me.all", "1g.24gb"));
    assert_false(fits(rtx, st, 2, "1g.24gb+me.all", "1g.24gb+gfx"));
    assert_false(fits(rtx, st, 2, "1g.24gb+me.all", "1g.24gb+me"));
    assert_false(fits(rtx, st, 2, "1g.24gb+me.all", "2g.48gb+me.all"));
    assert_false(fits(rtx, st, 2, "1g.24gb+me", "2g.48gb+me.all"));
    /* the other attributes do not limit each other */
    assert_true(fits(rtx, st, 3, "2g.48gb+gfx", "1g.24gb+gfx", "1g.24gb-me"));
    assert_true(fits(rtx, st, 3, "2g.48gb-me", "1g.24gb+me", "1g.24gb"));
}

/* MIG slice amounts, one rule: compute slices over the model's own. */
static void test_catalog_fractions(void **state)
{
    (void)state;
    const gs_mig_model *a30 = model("NVIDIA-A30");
    const gs_mig_model *a100 = model("NVIDIA-A100-SXM4-80GB");
    const gs_mig_model *rtx = model("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition");
    const gs_mig_model *h96 = model("NVIDIA-H100-96GB-HBM3");
    assert_true(gs_mig_profile_fraction(a30, gs_mig_profile_find(a30, "2g.12gb")) == 0.5);
    assert_true(gs_mig_profile_fraction(a100, gs_mig_profile_find(a100, "3g.40gb")) == 3.0 / 7);
    assert_true(gs_mig_profile_fraction(NULL, NULL) == 0);
    /* by name: the model that offers it, or the hint when several disagree */
    assert_true(gs_mig_request_fraction("2g.12gb", NULL) == 0.5);
    assert_true(gs_mig_request_fraction("1g.6gb+me", NULL) == 0.25);
    assert_true(gs_mig_request_fraction("3g.40gb", NULL) == 3.0 / 7);
    assert_true(gs_mig_request_fraction("1g.24gb", rtx) == 0.25);
    assert_true(gs_mig_request_fraction("1g.24gb", h96) == 1.0 / 7);
    assert_true(gs_mig_request_fraction("1g.24gb", NULL) == 1.0 / 7); /* ambiguous: G/7 */
    assert_true(gs_mig_request_fraction("2g.12gb", a100) == 0.5);     /* hint lacks it */
    assert_true(gs_mig_request_fraction("4g.99gb", NULL) == 4.0 / 7); /* unknown: G/7 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_catalog_models_consistent),
        cmocka_unit_test(test_catalog_a100_placements),
        cmocka_unit_test(test_catalog_double_memory_1g),
        cmocka_unit_test(test_catalog_me_profiles),
        cmocka_unit_test(test_catalog_a30),
        cmocka_unit_test(test_catalog_unverified_flags),
        cmocka_unit_test(test_catalog_product_matching),
        cmocka_unit_test(test_catalog_resource_names),
        cmocka_unit_test(test_catalog_layout_bad_input),
        cmocka_unit_test(test_catalog_newest_parts),
        cmocka_unit_test(test_catalog_fractions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
