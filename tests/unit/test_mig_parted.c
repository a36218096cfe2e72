/* test_mig_parted.c - mig-parted files (nvidia.md 2.1/2.2): the schema rules of
 * mig-parted's v1 decoder, validation of every entry against the placement rules of the
 * models it applies to, and file:line:col on every finding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/mig.h"

typedef struct result {
    gs_mig_parted cfg;
    gs_mig_report rep;
    int rc;
    gs_error err;
} result;

static void run(result *r, const char *yaml, const char *model)
{
    memset(r, 0, sizeof *r);
    r->rc = gs_mig_parted_parse(&r->cfg, "t.yaml", yaml, strlen(yaml), &r->err);
    if (r->rc == 0) {
        const gs_mig_model *m = model ? gs_mig_model_find(model) : NULL;
        if (model)
            assert_non_null(m);
        assert_int_equal(gs_mig_parted_validate(&r->cfg, m, &r->rep, &r->err), 0);
    }
}

static void done(result *r)
{
    gs_mig_report_free(&r->rep);
    gs_mig_parted_free(&r->cfg);
}

/* The only INVALID check must be at line:col and mention `what`. */
static void one_invalid_at(const result *r, int line, int col, const char *what)
{
    assert_int_equal(r->rc, 0);
    assert_int_equal(r->rep.ninvalid, 1);
    for (uint32_t i = 0; i < r->rep.n; i++) {
        const gs_mig_check *c = &r->rep.v[i];
        if (c->verdict != GS_MIG_INVALID)
            continue;
        assert_string_equal(c->err.file, "t.yaml");
        if (c->err.line != line || c->err.col != col || !strstr(c->err.msg, what))
            fail_msg("got %d:%d \"%s\" (path %s), want %d:%d \"%s\"", c->err.line, c->err.col,
                     c->err.msg, c->err.path, line, col, what);
    }
}

static void test_example_file_is_valid(void **state)
{
    (void)state;
    const char *dir = getenv("GS_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/../../examples/mig/mig-parted.yaml", dir ? dir : "tests/data");
    gs_error err;
    size_t len;
    char *data = gs_read_file(path, 1 << 20, &len, &err);
    if (!data)
        skip();
    result r;
    memset(&r, 0, sizeof r);
    assert_int_equal(gs_mig_parted_parse(&r.cfg, path, data, len, &r.err), 0);
    assert_int_equal(gs_mig_parted_validate(&r.cfg, NULL, &r.rep, &r.err), 0);
    assert_int_equal(r.rep.ninvalid, 0);
    assert_int_equal(r.rep.nskipped, 0);
    assert_int_equal(r.cfg.nconfigs, 4);
    /* the A30 entry of small-slices is checked on the A30 only */
    bool a30 = false;
    for (uint32_t i = 0; i < r.rep.n; i++)
        if (r.rep.v[i].model && !strcmp(r.rep.v[i].model->name, "A30-24GB"))
            a30 = r.rep.v[i].layout.n == 4;
    assert_true(a30);
    done(&r);
    free(data);
}

static void test_layout_errors_name_the_entry(void **state)
{
    (void)state;
    result r;
    /* max count: position of the mig-devices mapping (its first key) */
    run(&r,
        "version: v1\n"
        "mig-configs:\n"
        "  bad:\n"
        "    - devices: all\n"
        "      mig-enabled: true\n"
        "      mig-devices:\n"
        "        \"4g.40gb\": 2\n",
        "A100-80GB");
    one_invalid_at(&r, 7, 9, "4g.40gb x2: at most 1 per GPU on A100-80GB");
    assert_string_equal(r.rep.v[0].err.path, "mig-configs.bad[0].mig-devices");
    done(&r);
    /* unknown profile for the model: at its key */
    run(&r,
        "version: v1\n"
        "mig-configs:\n"
        "  x:\n"
        "    - devices: [0]\n"
        "      mig-enabled: true\n"
        "      mig-devices: {\"3g.40gb\": 1, 1g.5gb: 2}\n",
        "NVIDIA-H100-80GB-HBM3");
    one_invalid_at(&r, 6, 35, "profile 1g.5gb does not exist on H100-80GB");
    done(&r);
    /* compute over 7 */
    run(&r,
        "version: v1\n"
        "mig-configs:\n"
        "  x:\n"
        "    - devices: all\n"
        "      mig-enabled: true\n"
        "      mig-devices: {\"3g.40gb\": 2, \"2g.20gb\": 1}\n",
        "A100-80GB");
    one_invalid_at(&r, 6, 20, "needs 8 compute slices");
    done(&r);
}

static void test_filters_select_models(void **state)
{
    (void)state;
    result r;
    /* as the GPU operator writes all-1g.10gb: 4 on A100-40GB, 7 on the 80 GB family */
    const char *op =
        "version: v1\n"
        "mig-configs:\n"
        "  all-1g.10gb:\n"
        "    - device-filter: [\"0x20B010DE\", \"0x20B110DE\", \"0x20F110DE\", \"0x20F610DE\"]\n"
        "      devices: all\n"
        "      mig-enabled: true\n"
        "      mig-devices:\n"
        "        \"1g.10gb\": 4\n"
        "    - device-filter: [\"0x233010DE\", \"0x233110DE\", \"0x232210DE\", \"0x20B210DE\"]\n"
        "      devices: all\n"
        "      mig-enabled: true\n"
        "      mig-devices:\n"
        "        \"1g.10gb\": 7\n";
    run(&r, op, NULL);
    assert_int_equal(r.rep.ninvalid, 0);
    assert_int_equal(r.rep.nok, 3); /* A100-40GB, then A100-80GB and H100-80GB */
    done(&r);
    /* the same counts swapped: 7 of A100-40GB's double-memory 1g.10gb cannot fit */
    run(&r,
        "version: v1\n"
        "mig-configs:\n"
        "  c:\n"
        "    - device-filter: \"0x20B010DE\"\n"
        "      devices: all\n"
        "      mig-enabled: true\n"
        "      mig-devices:\n"
        "        \"1g.10gb\": 7\n",
        NULL);
    one_invalid_at(&r, 8, 9, "1g.10gb x7: at most 4 per GPU on A100-40GB");
    done(&r);
    /* with a node's model: entries for other models are skipped, not errors */
    run(&r, op, "NVIDIA-A30");
    assert_int_equal(r.rep.nskipped, 2);
    assert_int_equal(r.rep.ninvalid, 0);
    done(&r);
    /* B300 is in the catalog now: its entry is checked */
    run(&r,
        "version: v1\n"
        "mig-configs:\n"
        "  b300:\n"
        "    - device-filter: 0x318210DE\n"
        "      devices: all\n"
        "      mig-enabled: true\n"
        "      mig-devices: {\"1g.34gb\": 7}\n",
        NULL);
    assert_int_equal(r.rep.nok, 1);
    assert_string_equal(r.rep.v[0].model->name, "B300-269GB");
    assert_int_equal(r.rep.ninvalid, 0);
    done(&r);
    /* a filter naming a GPU outside the catalog is "unknown model, not checked" */
    run(&r,
        "version: v1\n"
        "mig-configs:\n"
        "  future:\n"
        "    - device-filter: [\"0x3AB010DE\", \"0x20B210DE\"]\n"
        "      devices: all\n"
        "      mig-enabled: true\n"
        "      mig-devices: {\"1g.10gb\": 7}\n",
        NULL);
    assert_int_equal(r.rep.nunknown, 1);
    assert_int_equal(r.rep.nok, 1); /* the A100-80GB it also names is checked */
    assert_int_equal(r.rep.ninvalid, 0);
    assert_int_equal(r.rep.nskipped, 0);
    assert_int_equal(r.rep.v[1].verdict, GS_MIG_UNKNOWN_MODEL);
    assert_int_equal(r.rep.v[1].err.line, 4);
    assert_non_null(strstr(r.rep.v[1].err.msg, "unknown model, not checked: device-filter 0x3AB010DE"));
    done(&r);
}

static void test_entries_without_filter(void **state)
{
    (void)state;
    result r;
    /* 1g.5gb exists on A100-40GB only */
    run(&r,
        "version: v1\n"
        "mig-configs:\n"
        "  a:\n"
        "    - devices: all\n"
        "      mig-enabled: true\n"
        "      mig-devices: {\"1g.5gb\": 7}\n",
        NULL);
    assert_int_equal(r.rep.nok, 1);
    uint32_t n;
    const gs_mig_model *all = gs_mig_models(&n);
    const gs_mig_model *a40 = gs_mig_model_find("A100-40GB");
    assert_int_equal(r.rep.v[0].models_ok, 1u << (a40 - all));
    done(&r);
    /* 1g.10gb x7 fits the 80 GB parts (not A100-40GB, where it is the 4-max profile) */
    run(&r,
        "version: v1\n"
        "mig-configs:\n"
        "  a:\n"
        "    - devices: all\n"
        "      mig-enabled: true\n"
        "      mig-devices: {\"1g.10gb\": 7}\n",
        NULL);
    assert_int_equal(r.rep.nok, 1);
    assert_false(r.rep.v[0].models_ok & (1u << (a40 - all)));
    assert_true(r.rep.v[0].models_ok & (1u << (gs_mig_model_find("H100-80GB") - all)));
    done(&r);
    /* fits no GPU that offers it */
    run(&r,
        "version: v1\n"
        "mig-configs:\n"
        "  a:\n"
        "    - devices: all\n"
        "      mig-enabled: true\n"
        "      mig-devices: {\"7g.80gb\": 1, \"1g.10gb\": 1}\n",
        NULL);
    one_invalid_at(&r, 6, 20, "fits no GPU");
    done(&r);
    /* profiles no single GPU has */
    run(&r,
        "version: v1\n"
        "mig-configs:\n"
        "  a:\n"
        "    - devices: all\n"
        "      mig-enabled: true\n"
        "      mig-devices: {\"1g.5gb\": 1, \"1g.6gb\": 1}\n",
        NULL);
    one_invalid_at(&r, 6, 20, "no GPU in the MIG catalog offers all of these profiles");
    done(&r);
}

static void test_ci_split_profiles(void **state)
{
    (void)state;
    result r;
    /* three 1-slice CIs pack into one 3g GI; seven need three GIs (max 2) */
    run(&r,
        "version: v1\n"
        "mig-configs:\n"
        "  ok:\n"
        "    - devices: all\n"
        "      mig-enabled: true\n"
        "      mig-devices: {\"1c.3g.40gb\": 3, \"4g.40gb\": 1}\n"
        "  bad:\n"
        "    - devices: all\n"
        "      mig-enabled: true\n"
        "      mig-devices: {\"1c.3g.40gb\": 7}\n",
        "A100-80GB");
    one_invalid_at(&r, 10, 20, "3g.40gb x3: at most 2");
    done(&r);
    /* C larger than G is not a profile: a schema problem at the key */
    run(&r,
        "version: v1\n"
        "mig-configs:\n"
        "  a:\n"
        "    - devices: all\n"
        "      mig-enabled: true\n"
        "      mig-devices: {\"4c.3g.40gb\": 1}\n",
        "A100-80GB");
    one_invalid_at(&r, 6, 21, "is not a MIG profile");
    done(&r);
}

static void test_schema_problems(void **state)
{
    (void)state;
    result r;
    run(&r,
        "version: v2\n"
        "extra: 1\n"
        "mig-configs:\n"
        "  a:\n"
        "    - devices: [0, 0]\n"
        "      mig-enabled: false\n"
        "  b:\n"
        "    - devices: all\n"
        "      mig-enabled: yes\n"
        "  c:\n"
        "    - devices: all\n"
        "      mig-enabled: false\n"
        "      mig-devices: {\"1g.10gb\": 1}\n"
        "  d:\n"
        "    - devices: all\n"
        "      mig-enabled: true\n"
        "  e:\n"
        "    - devices: some\n"
        "      mig-enabled: false\n"
        "  f:\n"
        "    - devices: all\n"
        "      mig-enabled: false\n"
        "      mig-device: {}\n"
        "  g: []\n"
        "  h:\n"
        "    - devices: all\n"
        "      mig-enabled: true\n"
        "      mig-devices: {\"1g.10gb\": -1}\n",
        NULL);
    assert_int_equal(r.rc, 0);
    static const struct {
        int line, col;
        const char *what;
    } want[] = {
        {2, 1, "unknown field \"extra\""},
        {1, 10, "unknown version \"v2\""},
        {5, 20, "GPU 0 is listed twice"},
        {9, 20, "expected true or false"},
        {13, 20, "MIG devices listed while mig-enabled is false"},
        {15, 7, "missing required field mig-devices"},
        {18, 16, "devices must be \"all\""},
        {23, 7, "unknown field \"mig-device\""},
        {24, 6, "a config must be a non-empty list"},
        {28, 32, "out of range"},
    };
    assert_int_equal(r.cfg.nproblems, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const gs_error *e = &r.cfg.problems[i];
        if (e->line != want[i].line || e->col != want[i].col || !strstr(e->msg, want[i].what))
            fail_msg("problem %zu: got %d:%d \"%s\", want %d:%d \"%s\"", i, e->line, e->col,
                     e->msg, want[i].line, want[i].col, want[i].what);
    }
    /* problems surface as INVALID checks; nothing else in this file is checkable */
    assert_int_equal(r.rep.ninvalid, r.cfg.nproblems);
    done(&r);
}

static void test_unreadable_input(void **state)
{
    (void)state;
    result r;
    run(&r, "version: v1\nmig-configs:\n  a: [\n", NULL);
    assert_int_equal(r.rc, -1);
    assert_int_equal(r.err.code, GS_ERR_PARSE);
    assert_true(r.err.line >= 3);
    done(&r);
    run(&r, "- a\n- b\n", NULL);
    assert_int_equal(r.rc, -1);
    assert_int_equal(r.err.code, GS_ERR_INVALID);
    done(&r);
    run(&r, "version: v1\nversion: v1\n", NULL);
    assert_int_equal(r.rc, -1);
    assert_int_equal(r.err.code, GS_ERR_PARSE);
    assert_int_equal(r.err.line, 2);
    done(&r);
    run(&r, "a: &x 1\nb: *x\n", NULL);
    assert_int_equal(r.rc, -1);
    done(&r);
    run(&r, "", NULL);
    assert_int_equal(r.rc, -1);
    done(&r);
}

static void test_overlapping_entries(void **state)
{
    (void)state;
    result r;
    run(&r,
        "version: v1\n"
        "mig-configs:\n"
        "  x:\n"
        "    - devices: [0, 1]\n"
        "      mig-enabled: true\n"
        "      mig-devices: {\"3g.40gb\": 2}\n"
        "    - devices: [1, 2]\n"
        "      mig-enabled: false\n"
        "    - devices: [3]\n"
        "      mig-enabled: false\n",
        "A100-80GB");
    one_invalid_at(&r, 7, 7, "selects GPU 1 like entry 0");
    done(&r);
    /* identical requests may overlap; different filters never meet */
    run(&r,
        "version: v1\n"
        "mig-configs:\n"
        "  x:\n"
        "    - devices: all\n"
        "      mig-enabled: false\n"
        "    - devices: [0]\n"
        "      mig-enabled: false\n"
        "    - device-filter: 0x20B710DE\n"
        "      devices: all\n"
        "      mig-enabled: true\n"
        "      mig-devices: {}\n"
        "    - device-filter: 0x20B010DE\n"
        "      devices: all\n"
        "      mig-enabled: true\n"
        "      mig-devices: {\"7g.40gb\": 1}\n",
        NULL);
    /* entry 2 overlaps entry 0 (no filter) with a different request */
    assert_int_equal(r.rep.ninvalid, 2);
    done(&r);
}

/* Single-quoted names with '' escapes (libfyaml 0.7.12 reads 'a''''b' as "a'''" and leaks
 * on long runs of them; the reader decodes them itself). */
static void test_single_quoted_names(void **state)
{
    (void)state;
    result r;
    run(&r, "version: v1\nmig-configs:\n  'it''''s':\n    - devices: all\n      mig-enabled: false\n"
            "  '''''''''''''''''''''''''''''''''''''''''''':\n    - devices: all\n"
            "      mig-enabled: false\n",
        NULL);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.cfg.nconfigs, 2);
    assert_string_equal(r.cfg.configs[0].name, "it''s");
    assert_string_equal(r.cfg.configs[1].name, "'''''''''''''''''''''");
    done(&r);
}

/* The layout one GPU gets under a config name (what simulate --mig-config applies). */
static void test_gpu_layout(void **state)
{
    (void)state;
    static const char yaml[] =
        "version: v1\n"
        "mig-configs:\n"
        "  split:\n"
        "    - devices: [0, 1]\n"
        "      mig-enabled: true\n"
        "      mig-devices: {\"3g.40gb\": 2}\n"
        "    - devices: [2]\n"
        "      mig-enabled: false\n"
        "  a30-only:\n"
        "    - device-filter: \"0x20B710DE\"\n"
        "      devices: all\n"
        "      mig-enabled: true\n"
        "      mig-devices: {\"1g.6gb\": 4}\n"
        "  too-big:\n"
        "    - devices: all\n"
        "      mig-enabled: true\n"
        "      mig-devices: {\"4g.40gb\": 2}\n";
    result r;
    run(&r, yaml, NULL);
    assert_int_equal(r.rc, 0);
    const gs_mig_model *h100 = gs_mig_model_find("NVIDIA-H100-80GB-HBM3");
    const gs_mig_model *a30 = gs_mig_model_find("NVIDIA-A30");
    gs_mig_layout l;
    gs_error err;
    gs_error_clear(&err);
    /* listed devices: two 3g.40gb on GPUs 0 and 1, MIG off on 2, nothing for 3 */
    assert_int_equal(gs_mig_parted_gpu_layout(&r.cfg, "split", h100, 1, &l, &err), 1);
    assert_true(l.mig_enabled);
    assert_int_equal(l.n, 2);
    assert_string_equal(h100->profiles[l.profile[0]].name, "3g.40gb");
    assert_int_equal(gs_mig_parted_gpu_layout(&r.cfg, "split", h100, 2, &l, &err), 1);
    assert_false(l.mig_enabled);
    assert_int_equal(gs_mig_parted_gpu_layout(&r.cfg, "split", h100, 3, &l, &err), 0);
    /* device-filter: selects the A30 only */
    assert_int_equal(gs_mig_parted_gpu_layout(&r.cfg, "a30-only", a30, 0, &l, &err), 1);
    assert_int_equal(l.n, 4);
    assert_int_equal(gs_mig_parted_gpu_layout(&r.cfg, "a30-only", h100, 0, &l, &err), 0);
    /* an entry that does not fit the model: the entry's line */
    assert_int_equal(gs_mig_parted_gpu_layout(&r.cfg, "too-big", h100, 0, &l, &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_int_equal(err.line, 17);
    /* built-in names when the file has no such config, or without a file */
    assert_int_equal(gs_mig_parted_gpu_layout(&r.cfg, "all-balanced", h100, 5, &l, &err), 1);
    assert_int_equal(l.n, 4);
    assert_int_equal(gs_mig_parted_gpu_layout(NULL, "all-1g.10gb", h100, 0, &l, &err), 1);
    assert_int_equal(l.n, 7);
    assert_int_equal(gs_mig_parted_gpu_layout(NULL, "all-disabled", h100, 0, &l, &err), 1);
    assert_false(l.mig_enabled);
    assert_int_equal(gs_mig_parted_gpu_layout(&r.cfg, "nope", h100, 0, &l, &err), -1);
    assert_non_null(strstr(err.msg, "neither in the mig-parted file nor a built-in config"));
    assert_int_equal(gs_mig_parted_gpu_layout(NULL, "all-1g.5gb", h100, 0, &l, &err), -1);
    done(&r);
}

static void test_json_and_detection(void **state)
{
    (void)state;
    result r;
    const char *json = "{\"version\": \"v1\", \"mig-configs\": {\"a\": [{\"devices\": [0, 1], "
                       "\"mig-enabled\": true, \"mig-devices\": {\"2g.24gb\": 3}}]}}";
    run(&r, json, "NVIDIA-H100-NVL");
    assert_int_equal(r.rep.nok, 1);
    assert_int_equal(r.rep.v[0].layout.n, 3);
    done(&r);
    assert_true(gs_mig_looks_like_parted(json, strlen(json)));
    const char *y = "# c\nversion: v1\n";
    assert_true(gs_mig_looks_like_parted(y, strlen(y)));
    const char *p = "apiVersion: gpusched.io/v1alpha1\nkind: MigPlan\n";
    assert_false(gs_mig_looks_like_parted(p, strlen(p)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_file_is_valid),
        cmocka_unit_test(test_layout_errors_name_the_entry),
        cmocka_unit_test(test_filters_select_models),
        cmocka_unit_test(test_entries_without_filter),
        cmocka_unit_test(test_ci_split_profiles),
        cmocka_unit_test(test_schema_problems),
        cmocka_unit_test(test_unreadable_input),
        cmocka_unit_test(test_overlapping_entries),
        cmocka_unit_test(test_single_quoted_names),
        cmocka_unit_test(test_gpu_layout),
        cmocka_unit_test(test_json_and_detection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
