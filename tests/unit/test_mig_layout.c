/* test_mig_layout.c - MIG listing data and layouts against the placement tables of
 * nvidia.md 1.3-1.5 and the built-in configs of 2.2: legal starts per profile, layouts that
 * must and must not fit (with the reason given), built-in named configs per model, memory
 * estimates and the profile a service gets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/mig.h"
#include "mig/mig_int.h"

static const gs_mig_model *model(const char *name)
{
    const gs_mig_model *m = gs_mig_model_find(name);
    assert_non_null(m);
    return m;
}

static const gs_mig_profile *prof(const gs_mig_model *m, const char *name)
{
    const gs_mig_profile *p = gs_mig_profile_find(m, name);
    assert_non_null(p);
    return p;
}

static void starts_are(const gs_mig_model *m, const char *profile, const char *want)
{
    char buf[64];
    gs_mig_starts_text(m, prof(m, profile), buf, sizeof buf);
    assert_string_equal(buf, want);
}

/* nvidia.md 1.3: the 8-slice table (ids 19/20/15/14/9/5/0) and the A30 table. */
static void test_starts_match_reference_tables(void **state)
{
    (void)state;
    static const char *const eight[] = {"A100-40GB", "A100-80GB", "H100-80GB", "H100-94GB",
                                        "H100-96GB", "H200-141GB", "GH200-144GB", "B200-180GB"};
    for (size_t i = 0; i < sizeof eight / sizeof eight[0]; i++) {
        const gs_mig_model *m = model(eight[i]);
        assert_int_equal(m->memory_slices, 8);
        assert_int_equal(m->compute_slices, 7);
        for (uint8_t k = 0; k < m->nprofiles; k++) {
            const gs_mig_profile *p = &m->profiles[k];
            char buf[64];
            gs_mig_starts_text(m, p, buf, sizeof buf);
            switch (p->id) {
            case 19:
            case 20:
                assert_string_equal(buf, "0,1,2,3,4,5,6");
                break;
            case 15:
                assert_string_equal(buf, "0,2,4,6");
                break;
            case 14:
                assert_string_equal(buf, "0,2,4");
                break;
            case 9:
                assert_string_equal(buf, "0,4");
                break;
            case 5:
            case 0:
                assert_string_equal(buf, "0");
                break;
            default:
                fail_msg("unexpected profile id %u on %s", p->id, m->name);
            }
        }
    }
    const gs_mig_model *a30 = model("NVIDIA-A30");
    starts_are(a30, "1g.6gb", "0,1,2,3");
    starts_are(a30, "1g.6gb+me", "0,1,2,3");
    starts_are(a30, "2g.12gb", "0,2");
    starts_are(a30, "4g.24gb", "0");
    uint8_t st[8];
    assert_int_equal(gs_mig_profile_starts(a30, prof(a30, "2g.12gb"), st), 2);
    assert_int_equal(st[1], 2);
}

static bool fits_counts(const gs_mig_model *m, gs_mig_layout *out, int n, ...)
{
    uint8_t counts[GS_MIG_MAX_PROFILES] = {0};
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        const char *name = va_arg(ap, const char *);
        int c = va_arg(ap, int);
        counts[prof(m, name) - m->profiles] = (uint8_t)c;
    }
    va_end(ap);
    gs_mig_layout tmp;
    return gs_mig_layout_from_counts(m, counts, out ? out : &tmp) == 0;
}

/* Independent check of a placed layout: legal starts, no overlap, slices within the GPU. */
static void assert_placed(const gs_mig_model *m, const gs_mig_layout *l)
{
    uint32_t used = 0, compute = 0;
    for (uint8_t i = 0; i < l->n; i++) {
        const gs_mig_profile *p = &m->profiles[l->profile[i]];
        assert_true(p->starts & (1u << l->start[i]));
        assert_true(l->start[i] + p->mem_slices <= m->memory_slices);
        uint32_t mask = ((1u << p->mem_slices) - 1u) << l->start[i];
        assert_int_equal(used & mask, 0);
        used |= mask;
        compute += p->compute;
    }
    assert_true(compute <= m->compute_slices);
}

static void test_layouts_that_fit(void **state)
{
    (void)state;
    const gs_mig_model *m = model("NVIDIA-A100-SXM4-80GB");
    gs_mig_layout l;
    /* 4g + 3g: the 4g only at 0, the 3g at 4 (nvidia.md 1.4) */
    assert_true(fits_counts(m, &l, 2, "4g.40gb", 1, "3g.40gb", 1));
    assert_placed(m, &l);
    for (uint8_t i = 0; i < l.n; i++)
        assert_int_equal(l.start[i], m->profiles[l.profile[i]].compute == 4 ? 0 : 4);
    /* 3g + 3g (one SM slice idle) */
    assert_true(fits_counts(m, &l, 1, "3g.40gb", 2));
    assert_placed(m, &l);
    /* the MIG guide's -cgi 9,19,14,19 set (the guide got 1g@0, 1g@1, 2g@2, 3g@4; we place
     * widest first at the lowest legal start, an equally valid placement) */
    assert_true(fits_counts(m, &l, 3, "3g.40gb", 1, "2g.20gb", 1, "1g.10gb", 2));
    assert_placed(m, &l);
    char text[128];
    gs_mig_layout_text(m, &l, true, text, sizeof text);
    assert_string_equal(text, "2g.20gb@0 1g.10gb@2 1g.10gb@3 3g.40gb@4");
    gs_mig_layout_text(m, &l, false, text, sizeof text);
    assert_string_equal(text, "3g.40gb x1, 2g.20gb x1, 1g.10gb x2");
    /* three 2g and one 1g at slot 6 (compute 7, memory slot 7 unused) */
    assert_true(fits_counts(m, &l, 2, "2g.20gb", 3, "1g.10gb", 1));
    assert_placed(m, &l);
    /* four double-memory 1g use all 8 memory slices */
    assert_true(fits_counts(m, &l, 1, "1g.20gb", 4));
    assert_placed(m, &l);
    /* seven 1g, and the whole GPU */
    assert_true(fits_counts(m, &l, 1, "1g.10gb", 7));
    assert_true(fits_counts(m, &l, 1, "7g.80gb", 1));
    /* 3g@4 needs slots 4-7; with 1g.20gb at 0 and 2 it still fits */
    assert_true(fits_counts(m, &l, 2, "3g.40gb", 1, "1g.20gb", 2));
    assert_placed(m, &l);
}

static void explain_is(const gs_mig_model *m, const char *want_substring, int n, ...)
{
    uint8_t counts[GS_MIG_MAX_PROFILES] = {0};
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        const char *name = va_arg(ap, const char *);
        int c = va_arg(ap, int);
        counts[prof(m, name) - m->profiles] = (uint8_t)c;
    }
    va_end(ap);
    char msg[256];
    assert_true(gs_mig_layout_explain(m, counts, msg, sizeof msg));
    if (!strstr(msg, want_substring))
        fail_msg("explanation \"%s\" lacks \"%s\"", msg, want_substring);
    gs_mig_layout l;
    assert_int_equal(gs_mig_layout_from_counts(m, counts, &l), -1);
}

static void test_layouts_that_do_not_fit(void **state)
{
    (void)state;
    const gs_mig_model *m = model("A100-80GB");
    explain_is(m, "4g.40gb x2: at most 1 per GPU", 1, "4g.40gb", 2);
    explain_is(m, "2g.20gb x4: at most 3", 1, "2g.20gb", 4);
    explain_is(m, "1g.10gb x8: at most 7", 1, "1g.10gb", 8);
    explain_is(m, "needs 8 compute slices", 2, "2g.20gb", 3, "1g.10gb", 2);
    explain_is(m, "needs 8 compute slices", 2, "4g.40gb", 1, "2g.20gb", 2);
    explain_is(m, "needs 9 compute slices", 2, "7g.80gb", 1, "2g.20gb", 1);
    /* memory-only overflow: 3g (4 slices) + 1g.20gb x3 (6 slices), compute 6 */
    explain_is(m, "needs 10 memory slices", 2, "3g.40gb", 1, "1g.20gb", 3);
    /* A30: two 2g fill it; one +me instance per GPU even across profiles */
    const gs_mig_model *a30 = model("A30");
    assert_true(fits_counts(a30, NULL, 1, "2g.12gb", 2));
    assert_true(fits_counts(a30, NULL, 2, "2g.12gb", 1, "2g.12gb+me", 1));
    explain_is(a30, "compute", 2, "2g.12gb", 2, "1g.6gb", 1);
    explain_is(a30, "at most one +me", 2, "1g.6gb+me", 1, "2g.12gb+me", 1);
}

/* Every model: the validity table agrees with first principles on random count vectors,
 * and maximal layouts are few (the planner's premise). */
static void test_maximal_layouts_are_few(void **state)
{
    (void)state;
    uint32_t n;
    const gs_mig_model *all = gs_mig_models(&n);
    for (uint32_t i = 0; i < n; i++) {
        const gs_mig_model *m = &all[i];
        uint32_t maximal = 0, valid = 0;
        uint8_t c[GS_MIG_MAX_PROFILES] = {0};
        /* enumerate plain-profile count vectors up to the max counts */
        uint8_t plain[GS_MIG_MAX_PROFILES], np = 0;
        for (uint8_t p = 0; p < m->nprofiles; p++)
            if (gs_mig_profile_is_plain(&m->profiles[p]))
                plain[np++] = p;
        for (;;) {
            gs_mig_layout l;
            bool ok = gs_mig_layout_from_counts(m, c, &l) == 0;
            if (ok) {
                assert_placed(m, &l);
                valid++;
                bool is_max = true;
                for (uint8_t k = 0; k < np && is_max; k++) {
                    c[plain[k]]++;
                    gs_mig_layout l2;
                    if (gs_mig_layout_from_counts(m, c, &l2) == 0)
                        is_max = false;
                    c[plain[k]]--;
                }
                maximal += is_max;
            }
            uint8_t k = 0;
            while (k < np && ++c[plain[k]] > m->profiles[plain[k]].max_count)
                c[plain[k++]] = 0;
            if (k == np)
                break;
        }
        assert_true(valid >= 10);
        assert_true(maximal >= 3 && maximal <= 40);
    }
}

/* With the reference's start lists, a set of instances is placeable exactly when the
 * per-profile maximum counts, the single +me, and the compute and memory totals hold: the
 * compute limit already keeps 1-slice instances off memory slot 7 (nvidia.md 1.4). The
 * planner's optimality argument leans on this; check it on every catalog model. */
static void test_placement_reduces_to_totals(void **state)
{
    (void)state;
    uint32_t n;
    const gs_mig_model *all = gs_mig_models(&n);
    for (uint32_t i = 0; i < n; i++) {
        const gs_mig_model *m = &all[i];
        uint8_t c[GS_MIG_MAX_PROFILES] = {0};
        uint32_t checked = 0;
        for (;;) {
            uint32_t compute = 0, mem = 0, me = 0, me_all = 0, no_me = 0, inst = 0;
            bool counts_ok = true;
            for (uint8_t p = 0; p < m->nprofiles; p++) {
                compute += (uint32_t)c[p] * m->profiles[p].compute;
                mem += (uint32_t)c[p] * m->profiles[p].mem_slices;
                unsigned at = gs_mig_profile_attrs(&m->profiles[p]);
                me += (at & GS_MIG_ATTR_ME) ? c[p] : 0;
                me_all += (at & GS_MIG_ATTR_ME_ALL) ? c[p] : 0;
                no_me += (at & GS_MIG_ATTR_NO_ME) ? c[p] : 0;
                inst += c[p];
                counts_ok = counts_ok && c[p] <= m->profiles[p].max_count;
            }
            /* +me.all (RTX PRO) shares the GPU only with -me instances */
            bool media_ok = me <= 1 && (me_all == 0 || (me_all == 1 && me_all + no_me == inst));
            bool totals = counts_ok && media_ok && compute <= m->compute_slices &&
                          mem <= m->memory_slices;
            gs_mig_layout l;
            assert_int_equal(gs_mig_layout_from_counts(m, c, &l) == 0, totals);
            char msg[256];
            assert_int_equal(gs_mig_layout_explain(m, c, msg, sizeof msg), !totals);
            checked++;
            uint8_t k = 0;
            while (k < m->nprofiles && ++c[k] > m->profiles[k].max_count + 1)
                c[k++] = 0;
            if (k == m->nprofiles)
                break;
        }
        assert_true(checked > 100);
    }
}

static void test_builtin_configs(void **state)
{
    (void)state;
    gs_mig_layout l;
    char text[128];
    const gs_mig_model *a100_40 = model("NVIDIA-A100-SXM4-40GB");
    const gs_mig_model *a100_80 = model("NVIDIA-A100-SXM4-80GB");
    const gs_mig_model *a30 = model("NVIDIA-A30");
    const gs_mig_model *h200 = model("NVIDIA-H200");
    /* all-1g.10gb: 4 on A100-40GB (the double-memory 1g) but 7 on 80 GB parts (2.2) */
    assert_true(gs_mig_builtin_layout(a100_40, "all-1g.10gb", &l));
    assert_int_equal(l.n, 4);
    assert_true(gs_mig_builtin_layout(a100_80, "all-1g.10gb", &l));
    assert_int_equal(l.n, 7);
    /* all-balanced: 2x 1g + 1x 2g + 1x 3g; A30 2x 1g.6gb + 1x 2g.12gb */
    assert_true(gs_mig_builtin_layout(a100_40, "all-balanced", &l));
    gs_mig_layout_text(a100_40, &l, false, text, sizeof text);
    assert_string_equal(text, "3g.20gb x1, 2g.10gb x1, 1g.5gb x2");
    assert_true(gs_mig_builtin_layout(h200, "all-balanced", &l));
    gs_mig_layout_text(h200, &l, false, text, sizeof text);
    assert_string_equal(text, "3g.71gb x1, 2g.35gb x1, 1g.18gb x2");
    assert_true(gs_mig_builtin_layout(a30, "all-balanced", &l));
    gs_mig_layout_text(a30, &l, false, text, sizeof text);
    assert_string_equal(text, "2g.12gb x1, 1g.6gb x2");
    /* '+' is '.' in config names */
    assert_true(gs_mig_builtin_layout(a100_80, "all-1g.10gb.me", &l));
    assert_int_equal(l.n, 1);
    assert_false(gs_mig_builtin_layout(a100_80, "all-1g.10gb+me", &l));
    assert_true(gs_mig_builtin_layout(a100_80, "all-disabled", &l));
    assert_false(l.mig_enabled);
    assert_true(gs_mig_builtin_layout(a100_80, "all-enabled", &l));
    assert_true(l.mig_enabled);
    assert_int_equal(l.n, 0);
    assert_false(gs_mig_builtin_layout(a100_80, "all-1g.5gb", &l));
    assert_false(gs_mig_builtin_layout(a100_80, "balanced", &l));
    /* names listed for every model, and each one resolves */
    uint32_t n;
    const gs_mig_model *all = gs_mig_models(&n);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(gs_mig_builtin_count(&all[i]), 3u + all[i].nprofiles);
        for (uint32_t b = 0; b < gs_mig_builtin_count(&all[i]); b++) {
            char name[64];
            gs_mig_builtin_name(&all[i], b, name, sizeof name);
            assert_true(gs_mig_builtin_layout(&all[i], name, &l));
        }
    }
}

static void test_profile_memory(void **state)
{
    (void)state;
    bool est;
    const gs_mig_model *a100 = model("A100-80GB");
    assert_int_equal(gs_mig_profile_mem(a100, prof(a100, "3g.40gb"), &est), 40192);
    assert_false(est);
    /* GH200-144GB 3g/4g/7g have no observed size: estimated from 2g.36gb (36096 MiB) */
    const gs_mig_model *gh = model("GH200-144GB");
    assert_int_equal(gs_mig_profile_mem(gh, prof(gh, "3g.72gb"), &est), 72192);
    assert_true(est);
    assert_true(gs_mig_profile_mem(gh, prof(gh, "7g.144gb"), &est) <= gh->mem_mib);
}

static gs_mig_service svc(double gib, uint8_t compute)
{
    gs_mig_service s;
    memset(&s, 0, sizeof s);
    s.name = "s";
    s.replicas = 1;
    s.memory_gib = gib;
    s.compute_slices = compute;
    s.headroom = 0.0;
    gs_mig_service_demand(&s);
    return s;
}

static const char *chosen(const gs_mig_model *m, double gib, uint8_t compute)
{
    gs_mig_service s = svc(gib, compute);
    uint8_t p = gs_mig__choose_profile(m, &s, NULL);
    return p == GS_MIG_NO_PROFILE ? "none" : m->profiles[p].name;
}

static void test_profile_choice(void **state)
{
    (void)state;
    const gs_mig_model *a100 = model("A100-80GB");
    assert_string_equal(chosen(a100, 4.0, 0), "1g.10gb");
    assert_string_equal(chosen(a100, 9.625, 0), "1g.10gb");   /* 9856 MiB exactly */
    assert_string_equal(chosen(a100, 9.7, 0), "1g.20gb");     /* same memory as 2g, less compute */
    assert_string_equal(chosen(a100, 9.7, 2), "2g.20gb");     /* computeSlices asks for more */
    assert_string_equal(chosen(a100, 4.0, 3), "3g.40gb");
    assert_string_equal(chosen(a100, 4.0, 4), "4g.40gb");
    assert_string_equal(chosen(a100, 30.0, 0), "3g.40gb");    /* 3g before 4g: less compute */
    assert_string_equal(chosen(a100, 60.0, 0), "7g.80gb");
    assert_string_equal(chosen(a100, 79.0, 0), "none");
    /* never a +me profile */
    assert_string_equal(chosen(model("A30"), 5.0, 0), "1g.6gb");
    assert_string_equal(chosen(model("A30"), 5.9, 0), "2g.12gb");
    /* H100 80 GB 1g holds 9.75 GiB where the A100's holds 9.625 */
    assert_string_equal(chosen(model("H100-80GB"), 9.7, 0), "1g.10gb");
}

static void test_demand_formula(void **state)
{
    (void)state;
    gs_mig_service s;
    memset(&s, 0, sizeof s);
    s.from_shape = true;
    s.parameters = 7e9;
    s.dtype = GS_MIG_DT_FP16;
    s.kv_dtype = GS_MIG_DT_FP16;
    s.batch_size = 8;
    s.sequence_length = 4096;
    s.kv_layers = 32;
    s.kv_heads = 32;
    s.head_dim = 128;
    s.overhead_gib = 1.0;
    s.activation_fraction = 0.05;
    s.headroom = 0.1;
    gs_mig_service_demand(&s);
    /* 7e9 x 2 bytes = 13.04 GiB; KV 2*32*32*128*4096*8*2 bytes = 16 GiB exactly */
    assert_true(s.weights_gib > 13.03 && s.weights_gib < 13.05);
    assert_true(s.kv_gib > 15.999 && s.kv_gib < 16.001);
    double extra = 1.0 + 0.05 * (s.weights_gib + s.kv_gib);
    assert_true(s.extra_gib > extra - 1e-9 && s.extra_gib < extra + 1e-9);
    assert_true(s.need_gib > s.total_gib * 1.1 - 1e-9 && s.need_gib < s.total_gib * 1.1 + 1e-9);
    s.dtype = GS_MIG_DT_INT4;
    gs_mig_service_demand(&s);
    assert_true(s.weights_gib > 3.25 && s.weights_gib < 3.27);
    assert_true(gs_mig_dtype_bytes(GS_MIG_DT_FP8) == 1.0);
    assert_string_equal(gs_mig_dtype_name(GS_MIG_DT_BF16), "bf16");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_starts_match_reference_tables),
        cmocka_unit_test(test_layouts_that_fit),
        cmocka_unit_test(test_layouts_that_do_not_fit),
        cmocka_unit_test(test_maximal_layouts_are_few),
        cmocka_unit_test(test_placement_reduces_to_totals),
        cmocka_unit_test(test_builtin_configs),
        cmocka_unit_test(test_profile_memory),
        cmocka_unit_test(test_profile_choice),
        cmocka_unit_test(test_demand_formula),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
