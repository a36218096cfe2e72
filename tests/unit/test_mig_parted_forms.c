/* test_mig_parted_forms.c - mig-parted configs in the forms NVIDIA ships them (the GPU
 * operator's default-mig-parted-config ConfigMap, `kubectl get cm -o yaml|json`, the
 * multi-document deployment example), positions translated into the outer file, profile
 * attributes as go-nvlib parses them (+me, +me.all, -me, +gfx), and configs for GPUs the
 * catalog does not know ("unknown model, not checked"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/mig.h"
#include "gpusched/util.h"

typedef struct result {
    gs_mig_parted cfg;
    gs_mig_report rep;
    int rc;
    gs_error err;
} result;

static void run(result *r, const char *text, size_t len, const char *model)
{
    memset(r, 0, sizeof *r);
    r->rc = gs_mig_parted_parse(&r->cfg, "t.yaml", text, len, &r->err);
    if (r->rc == 0) {
        const gs_mig_model *m = model ? gs_mig_model_find(model) : NULL;
        if (model)
            assert_non_null(m);
        assert_int_equal(gs_mig_parted_validate(&r->cfg, m, &r->rep, &r->err), 0);
    }
}

static void runs(result *r, const char *text) { run(r, text, strlen(text), NULL); }

static void done(result *r)
{
    gs_mig_report_free(&r->rep);
    gs_mig_parted_free(&r->cfg);
}

static char *read_data(const char *name, size_t *len)
{
    const char *dir = getenv("GS_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/mig/%s", dir ? dir : "tests/data", name);
    gs_error err;
    gs_error_clear(&err);
    char *d = gs_read_file(path, GS_MIG_MAX_FILE_BYTES, len, &err);
    if (!d)
        fail_msg("%s: %s", path, err.msg);
    return d;
}

/* 1-based line of the first line of text that contains `needle` (0 when none). */
static int line_of(const char *text, const char *needle)
{
    const char *p = strstr(text, needle);
    if (!p)
        return 0;
    int line = 1;
    for (const char *q = text; q < p; q++)
        line += *q == '\n';
    return line;
}

/* The only check of verdict v must be at line:col and mention `what`. */
static const gs_mig_check *only(const result *r, gs_mig_verdict v, int line, int col,
                                const char *what)
{
    const gs_mig_check *found = NULL;
    for (uint32_t i = 0; i < r->rep.n; i++) {
        const gs_mig_check *c = &r->rep.v[i];
        if (c->verdict != v)
            continue;
        if (found)
            fail_msg("two checks of verdict %d: %s and %s", v, found->err.msg, c->err.msg);
        found = c;
        if (c->err.line != line || c->err.col != col || !strstr(c->err.msg, what))
            fail_msg("got %d:%d \"%s\" (path %s), want %d:%d \"%s\"", c->err.line, c->err.col,
                     c->err.msg, c->err.path, line, col, what);
    }
    if (!found)
        fail_msg("no check of verdict %d", v);
    return found;
}

/* ---------------------------------------------------------------- default config */
/* Every entry of the hand-written ConfigMap of the operator's default config shape is
 * valid, nothing is unknown any more (B300, GB300 and RTX PRO 6000 are in the catalog),
 * and under every built-in config name of every model the file gives that model exactly
 * the built-in layout. */
static void test_default_config_all_valid(void **state)
{
    (void)state;
    size_t len;
    char *text = read_data("default-mig-parted-config.yaml", &len);
    result r;
    run(&r, text, len, NULL);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.cfg.nproblems, 0);
    assert_int_equal(r.cfg.documents, 1);
    assert_int_equal(r.cfg.ignored, 0);
    assert_int_equal(r.cfg.nsources, 1);
    assert_string_equal(r.cfg.sources[0].name, "default-mig-parted-config");
    assert_string_equal(r.cfg.sources[0].key, "config.yaml");
    assert_false(r.cfg.sources[0].approximate);
    assert_int_equal(r.cfg.nconfigs, 78);
    uint32_t entries = 0;
    for (uint32_t c = 0; c < r.cfg.nconfigs; c++)
        entries += r.cfg.configs[c].nentries;
    assert_int_equal(entries, 91);
    assert_int_equal(r.rep.ninvalid, 0);
    assert_int_equal(r.rep.nunknown, 0);
    assert_int_equal(r.rep.nskipped, 0);
    assert_int_equal(r.rep.nok, r.rep.n);
    assert_true(r.rep.n >= entries); /* a filter naming two models is checked on each */
    /* what mig-parted gives GPU 0 of each catalog model under each of the model's built-in
     * config names is exactly the built-in layout (entries with and without device-filter) */
    uint32_t nm, compared = 0;
    const gs_mig_model *all = gs_mig_models(&nm);
    for (uint32_t i = 0; i < nm; i++) {
        const gs_mig_model *m = &all[i];
        for (uint32_t b = 0; b < gs_mig_builtin_count(m); b++) {
            char name[64];
            gs_mig_builtin_name(m, b, name, sizeof name);
            gs_mig_layout want, got;
            assert_true(gs_mig_builtin_layout(m, name, &want));
            gs_error err;
            int rc = gs_mig_parted_gpu_layout(&r.cfg, name, m, 0, &got, &err);
            if (rc != 1)
                fail_msg("%s on %s: rc %d (%s)", name, m->name, rc, err.msg);
            uint8_t a[GS_MIG_MAX_PROFILES], c[GS_MIG_MAX_PROFILES];
            gs_mig_layout_counts(&want, a);
            gs_mig_layout_counts(&got, c);
            if (memcmp(a, c, sizeof a) != 0 || want.mig_enabled != got.mig_enabled)
                fail_msg("%s on %s differs from the built-in layout", name, m->name);
            compared++;
        }
    }
    /* 3 (disabled, enabled, balanced) per model + a config per profile: 7 on 11 models,
     * 5 on A30, 11 on RTX PRO */
    assert_int_equal(compared, 3 * nm + 7 * 11 + 5 + 11);
    /* positions point into the outer file: the entry of all-1g.24gb.me.all is the line
     * after its name, at the column of "devices" */
    int name_line = line_of(text, "  all-1g.24gb.me.all:");
    assert_true(name_line > 0);
    bool seen = false;
    for (uint32_t i = 0; i < r.rep.n; i++) {
        const gs_mig_check *c = &r.rep.v[i];
        if (strcmp(r.cfg.configs[c->config].name, "all-1g.24gb.me.all") != 0)
            continue;
        assert_int_equal(c->err.line, name_line + 1);
        assert_int_equal(c->err.col, 11);
        assert_string_equal(c->model->name, "RTX-PRO-6000-96GB");
        seen = true;
    }
    assert_true(seen);
    done(&r);
    free(text);
}

/* ---------------------------------------------------------------- ConfigMap forms */
#define CM_HEAD                                                                            \
    "apiVersion: v1\n"                                                                     \
    "kind: ConfigMap\n"                                                                    \
    "metadata:\n"                                                                          \
    "  name: default-mig-parted-config\n"                                                  \
    "  namespace: gpu-operator\n"                                                          \
    "  resourceVersion: \"4711\"\n"                                                        \
    "  managedFields:\n"                                                                   \
    "  - apiVersion: v1\n"                                                                 \
    "    fieldsType: FieldsV1\n"                                                           \
    "    fieldsV1:\n"                                                                      \
    "      f:data:\n"                                                                      \
    "        .: {}\n"                                                                      \
    "        f:config.yaml: {}\n"                                                          \
    "    manager: helm\n"                                                                  \
    "    operation: Update\n"

static void test_configmap_literal_block(void **state)
{
    (void)state;
    /* as `kubectl get cm -o yaml` prints it: data after metadata, a literal block, and a
     * second data key that is not a mig-parted config */
    const char *y = CM_HEAD "data:\n"
                            "  README: just text\n"
                            "  config.yaml: |\n"           /* line 18 */
                            "    version: v1\n"            /* 19 */
                            "    mig-configs:\n"           /* 20 */
                            "      bad:\n"                 /* 21 */
                            "        - devices: all\n"     /* 22 */
                            "          device-filter: \"0x20B210DE\"\n"
                            "          mig-enabled: true\n"
                            "          mig-devices:\n"     /* 25 */
                            "            \"4g.40gb\": 1\n" /* 26 */
                            "            \"3g.40gb\": 2\n";
    result r;
    runs(&r, y);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.cfg.nsources, 1);
    assert_int_equal(r.cfg.sources[0].line, 18);
    assert_int_equal(r.cfg.sources[0].col, 3);
    assert_false(r.cfg.sources[0].approximate);
    assert_int_equal(r.cfg.configs[0].source, 0);
    only(&r, GS_MIG_INVALID, 26, 13, "needs 10 compute slices");
    done(&r);

    /* a kind: List of objects (kubectl get cm -o yaml without a name) */
    const char *list = "apiVersion: v1\nkind: List\nitems:\n"
                       "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: other}\n"
                       "  data: {a: b}\n"
                       "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: mig}\n"
                       "  data:\n"
                       "    config.yaml: |\n" /* line 12 */
                       "      version: v1\n"
                       "      mig-configs:\n"
                       "        a:\n"
                       "          - devices: [0, 0]\n" /* line 16 */
                       "            mig-enabled: false\n";
    runs(&r, list);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.cfg.nsources, 1);
    assert_string_equal(r.cfg.sources[0].name, "mig");
    assert_int_equal(r.cfg.nproblems, 1);
    assert_int_equal(r.cfg.problems[0].line, 16);
    assert_int_equal(r.cfg.problems[0].col, 26);
    assert_non_null(strstr(r.cfg.problems[0].msg, "GPU 0 is listed twice"));
    done(&r);
}

static void test_configmap_json_and_quoted(void **state)
{
    (void)state;
    /* `kubectl get cm -o json`: the config is one double-quoted line with \n and \"
     * escapes; positions inside it are exact columns of that line */
    size_t len;
    char *text = read_data("configmap-kubectl.json", &len);
    result r;
    run(&r, text, len, NULL);
    assert_int_equal(r.rc, 0);
    assert_false(r.cfg.sources[0].approximate);
    int line = line_of(text, "\"config.yaml\"");
    const char *ln = strstr(text, "\"config.yaml\"");
    const char *at = strstr(ln, "\\\"2g.12gb\\\": 3"); /* the bad entry's mig-devices */
    assert_non_null(at);
    const char *bol = ln;
    while (bol > text && bol[-1] != '\n')
        bol--;
    only(&r, GS_MIG_INVALID, line, (int)(at - bol) + 1, "2g.12gb x3: at most 2 per GPU");
    const char *flt = strstr(ln, "[\\\"0x3AB010DE");
    only(&r, GS_MIG_UNKNOWN_MODEL, line, (int)(flt - bol) + 1, "unknown model, not checked");
    assert_int_equal(r.rep.nok, 1);
    done(&r);
    free(text);

    /* a double-quoted string over several lines (folding): approximate, positions at the
     * start of the string */
    const char *q = CM_HEAD "data:\n"
                            "  config.yaml: \"version: v1\\nmig-configs:\\n  a:\\n    - devices: all\\n      mig-ena\\\n"
                            "    bled: true\\n      mig-devices: {\\\"7g.80gb\\\": 2}\\n\"\n";
    runs(&r, q);
    assert_int_equal(r.rc, 0);
    assert_true(r.cfg.sources[0].approximate);
    only(&r, GS_MIG_INVALID, 17, 16, "");
    done(&r);

    /* a YAML error inside the embedded config is reported at its outer position */
    const char *bad = CM_HEAD "data:\n"
                              "  config.yaml: |\n"
                              "    version: v1\n"
                              "    mig-configs:\n"
                              "      a: [\n";
    runs(&r, bad);
    assert_int_equal(r.rc, -1);
    assert_int_equal(r.err.code, GS_ERR_PARSE);
    assert_true(r.err.line >= 18);
    assert_non_null(strstr(r.err.msg, "ConfigMap default-mig-parted-config"));
    done(&r);
}

static void test_multi_document(void **state)
{
    (void)state;
    size_t len;
    char *text = read_data("mig-parted-deployment.yaml", &len);
    result r;
    run(&r, text, len, NULL);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.cfg.documents, 3);
    assert_int_equal(r.cfg.ignored, 2); /* the ServiceAccount and the DaemonSet */
    assert_int_equal(r.cfg.nsources, 1);
    assert_int_equal(r.cfg.sources[0].document, 1);
    assert_int_equal(r.cfg.nconfigs, 4);
    assert_int_equal(r.rep.ninvalid, 2); /* two-halves on A100-80GB and H100-80GB */
    assert_int_equal(r.rep.nunknown, 0);
    int two = line_of(text, "\"4g.40gb\": 2");
    for (uint32_t i = 0; i < r.rep.n; i++)
        if (r.rep.v[i].verdict == GS_MIG_INVALID)
            assert_int_equal(r.rep.v[i].err.line, two);
    done(&r);
    /* detection for the CLI: a ConfigMap or a multi-document file is mig-parted input,
     * though not a bare mig-parted file */
    assert_true(gs_mig_has_parted_config(text, len));
    assert_false(gs_mig_looks_like_parted(text, len));
    free(text);

    /* bare configs in several documents are merged, other objects skipped */
    runs(&r, "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n"
             "---\n"
             "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n"
             "---\n"
             "---\n"
             "version: v1\nmig-configs:\n  b:\n    - devices: all\n      mig-enabled: true\n"
             "      mig-devices: {\"7g.80gb\": 1}\n");
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.cfg.nconfigs, 2);
    assert_int_equal(r.cfg.documents, 3);
    assert_int_equal(r.cfg.ignored, 1);
    assert_int_equal(r.cfg.configs[1].line, 14);
    assert_int_equal(r.rep.ninvalid, 0);
    done(&r);

    /* no config anywhere: an input error */
    runs(&r, "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\n---\n"
             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\ndata: {a: b}\n");
    assert_int_equal(r.rc, -1);
    assert_int_equal(r.err.code, GS_ERR_INVALID);
    assert_non_null(strstr(r.err.msg, "no document has version and mig-configs"));
    done(&r);

    const char *plan = "apiVersion: gpusched.io/v1alpha1\nkind: MigPlan\nservices: []\n";
    assert_false(gs_mig_has_parted_config(plan, strlen(plan)));
    const char *bare = "version: v1\nmig-configs: {}\n";
    assert_true(gs_mig_looks_like_parted(bare, strlen(bare)));
    assert_true(gs_mig_has_parted_config(bare, strlen(bare)));
}

/* ---------------------------------------------------------------- attributes */
static void test_profile_attributes(void **state)
{
    (void)state;
    assert_int_equal(gs_mig_profile_name_attrs("1g.24gb"), 0);
    assert_int_equal(gs_mig_profile_name_attrs("1g.10gb+me"), GS_MIG_ATTR_ME);
    assert_int_equal(gs_mig_profile_name_attrs("1g.24gb+me.all"), GS_MIG_ATTR_ME_ALL);
    assert_int_equal(gs_mig_profile_name_attrs("1g.24gb-me"), GS_MIG_ATTR_NO_ME);
    assert_int_equal(gs_mig_profile_name_attrs("4g.96gb+gfx"), GS_MIG_ATTR_GFX);
    assert_int_equal(gs_mig_profile_name_attrs("1c.2g.48gb+gfx,me"),
                     GS_MIG_ATTR_GFX | GS_MIG_ATTR_ME);
    assert_int_equal(gs_mig_profile_name_attrs("1g.24gb+foo"), GS_MIG_ATTR_OTHER);
    assert_int_equal(gs_mig_profile_name_attrs("1g.24gb-gfx"), GS_MIG_ATTR_OTHER);

    const gs_mig_model *rtx = gs_mig_model_find("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition");
    assert_non_null(rtx);
    /* resource names as the device plugin writes them: '+' becomes '.', '-' stays */
    static const char *const names[][2] = {
        {"1g.24gb+me.all", "nvidia.com/mig-1g.24gb.me.all"},
        {"1g.24gb-me", "nvidia.com/mig-1g.24gb-me"},
        {"2g.48gb+gfx", "nvidia.com/mig-2g.48gb.gfx"},
        {"1g.24gb+me", "nvidia.com/mig-1g.24gb.me"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const gs_mig_profile *p = gs_mig_profile_find(rtx, names[i][0]);
        assert_non_null(p);
        char res[96], back[64];
        gs_mig_resource_name(p, res, sizeof res);
        assert_string_equal(res, names[i][1]);
        assert_true(gs_mig_parse_resource(res, back, sizeof back));
        assert_string_equal(back, names[i][0]);
        assert_ptr_equal(gs_mig_profile_find(rtx, back), p);
        assert_ptr_equal(gs_mig_profile_find(rtx, res + strlen("nvidia.com/mig-")), p);
    }

    /* mig-devices keys: go-nvlib's grammar; good ones on RTX PRO, bad ones are schema
     * problems at the key */
    result r;
    runs(&r, "version: v1\nmig-configs:\n  a:\n"
             "    - device-filter: 0x2BB510DE\n      devices: all\n      mig-enabled: true\n"
             "      mig-devices: {\"1g.24gb+me.all\": 1, \"1g.24gb-me\": 1, \"1c.2g.48gb-me\": 1}\n"
             "  b:\n"
             "    - device-filter: 0x2BB510DE\n      devices: all\n      mig-enabled: true\n"
             "      mig-devices: {\"2g.48gb+gfx\": 1, \"1g.24gb+gfx\": 2}\n");
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.cfg.nproblems, 0);
    assert_int_equal(r.rep.nok, 2);
    done(&r);
    static const char *const bad[] = {"1g.24gb+", "1g.24gb-", "1g.24gb+.me", "1g.24gb+me.",
                                      "1g.24gb+me,me", "1g.24gb+me-me", "1g.24gb+1me",
                                      "1g.24gb+me,", "1g.24gb+me+gfx"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char y[512];
        snprintf(y, sizeof y,
                 "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
                 "      mig-devices:\n        \"%s\": 1\n",
                 bad[i]);
        runs(&r, y);
        assert_int_equal(r.rc, 0);
        if (r.cfg.nproblems != 1 || r.cfg.problems[0].line != 7)
            fail_msg("%s: %u problems", bad[i], r.cfg.nproblems);
        assert_non_null(strstr(r.cfg.problems[0].msg, "is not a MIG profile"));
        done(&r);
    }

    /* +me.all takes every media engine: only -me instances may share the GPU */
    runs(&r, "version: v1\nmig-configs:\n  a:\n"
             "    - device-filter: 0x2BB510DE\n      devices: all\n      mig-enabled: true\n"
             "      mig-devices:\n        \"1g.24gb+me.all\": 1\n        \"1g.24gb\": 1\n");
    only(&r, GS_MIG_INVALID, 8, 9, "1g.24gb+me.all takes every media engine");
    done(&r);
    runs(&r, "version: v1\nmig-configs:\n  a:\n"
             "    - device-filter: 0x2BB510DE\n      devices: all\n      mig-enabled: true\n"
             "      mig-devices:\n        \"2g.48gb+me.all\": 1\n        \"1g.24gb+me\": 1\n");
    only(&r, GS_MIG_INVALID, 8, 9, "takes every media engine");
    done(&r);
    runs(&r, "version: v1\nmig-configs:\n  a:\n"
             "    - device-filter: 0x2BB510DE\n      devices: all\n      mig-enabled: true\n"
             "      mig-devices:\n        \"2g.48gb+me.all\": 1\n        \"2g.48gb-me\": 1\n");
    assert_int_equal(r.rep.nok, 1);
    assert_int_equal(r.rep.ninvalid, 0);
    done(&r);
    /* gfx variants exist on RTX PRO only */
    runs(&r, "version: v1\nmig-configs:\n  a:\n"
             "    - device-filter: 0x20B210DE\n      devices: all\n      mig-enabled: true\n"
             "      mig-devices: {\"1g.10gb+gfx\": 1}\n");
    only(&r, GS_MIG_INVALID, 7, 21, "profile 1g.10gb+gfx does not exist on A100-80GB");
    done(&r);
}

/* ---------------------------------------------------------------- unknown models */
static void test_unknown_models(void **state)
{
    (void)state;
    result r;
    /* profiles no catalog GPU offers, no filter: a GPU newer than the catalog */
    runs(&r, "version: v1\nmig-configs:\n  gen:\n    - devices: all\n      mig-enabled: true\n"
             "      mig-devices: {\"1g.40gb\": 8, \"2g.80gb\": 1}\n");
    assert_int_equal(r.rep.nunknown, 1);
    assert_int_equal(r.rep.ninvalid, 0);
    only(&r, GS_MIG_UNKNOWN_MODEL, 6, 20, "no GPU in the MIG catalog offers 1g.40gb, 2g.80gb");
    done(&r);
    /* a known profile next to an unknown one: no model offers both, an error */
    runs(&r, "version: v1\nmig-configs:\n  gen:\n    - devices: all\n      mig-enabled: true\n"
             "      mig-devices: {\"1g.10gb\": 2, \"1g.11gb\": 1}\n");
    assert_int_equal(r.rep.nunknown, 0);
    only(&r, GS_MIG_INVALID, 6, 20, "no GPU in the MIG catalog offers all of these profiles");
    done(&r);
    /* with a node's model, an unknown profile is an error as before */
    run(&r, "version: v1\nmig-configs:\n  gen:\n    - devices: all\n      mig-enabled: true\n"
            "      mig-devices: {\"1g.40gb\": 8}\n",
        strlen("version: v1\nmig-configs:\n  gen:\n    - devices: all\n      mig-enabled: true\n"
               "      mig-devices: {\"1g.40gb\": 8}\n"),
        "NVIDIA-B300");
    assert_int_equal(r.rep.ninvalid, 1);
    done(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_config_all_valid),
        cmocka_unit_test(test_configmap_literal_block),
        cmocka_unit_test(test_configmap_json_and_quoted),
        cmocka_unit_test(test_multi_document),
        cmocka_unit_test(test_profile_attributes),
        cmocka_unit_test(test_unknown_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
