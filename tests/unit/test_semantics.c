/* test_semantics.c - toleration matching, node-selector requirements and terms, label
 * selectors and extended-resource classification (k8s-semantics.md 1.2, 2.4, 4). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gpusched/kube.h"

/* ---------------------------------------------------------------- helpers */

static gs_taint taint(const char *key, const char *value, gs_effect effect)
{
    gs_taint t = {key, value, effect};
    return t;
}

static gs_toleration tol(const char *key, gs_tol_op op, const char *value, gs_effect effect)
{
    gs_toleration t;
    memset(&t, 0, sizeof t);
    t.key = key;
    t.op = op;
    t.value = value;
    t.effect = effect;
    t.op_raw = "";
    return t;
}

/* Node labels used by the selector tests, sorted by key. */
static gs_kv node_kv[] = {
    {"example.com/rank", "0206"},
    {"gpu.count", "8"},
    {"kubernetes.io/hostname", "node-a"},
    {"neg", "-3"},
    {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
    {"plus", "+7"},
    {"text", "abc"},
    {"zone", "us-east-1a"},
};
static const gs_labels node_labels = {node_kv, sizeof node_kv / sizeof node_kv[0]};

static gs_sel_req req(const char *key, gs_sel_op op, const char **values, uint32_t n)
{
    gs_sel_req r = {key, op, values, n};
    return r;
}

static bool matches(const char *key, gs_sel_op op, const char **values, uint32_t n)
{
    gs_sel_req r = req(key, op, values, n);
    return gs_sel_req_matches_labels(&r, &node_labels);
}

/* ---------------------------------------------------------------- tolerations */

static void test_toleration_effect_and_key(void **state)
{
    (void)state;
    gs_taint gpu = taint("nvidia.com/gpu", "present", GS_EFFECT_NO_SCHEDULE);
    /* empty effect matches every effect; a different effect never matches */
    gs_toleration t = tol("nvidia.com/gpu", GS_TOL_EXISTS, "", GS_EFFECT_ANY);
    assert_true(gs_toleration_tolerates(&t, &gpu, false));
    t.effect = GS_EFFECT_NO_EXECUTE;
    assert_false(gs_toleration_tolerates(&t, &gpu, false));
    t.effect = GS_EFFECT_PREFER_NO_SCHEDULE;
    assert_false(gs_toleration_tolerates(&t, &gpu, false));
    t.effect = GS_EFFECT_NO_SCHEDULE;
    assert_true(gs_toleration_tolerates(&t, &gpu, false));
    t.effect = GS_EFFECT_INVALID;
    assert_false(gs_toleration_tolerates(&t, &gpu, false));
    /* empty key + Exists tolerates everything */
    t = tol("", GS_TOL_EXISTS, "", GS_EFFECT_ANY);
    assert_true(gs_toleration_tolerates(&t, &gpu, false));
    gs_taint other = taint("dedicated", "", GS_EFFECT_NO_EXECUTE);
    assert_true(gs_toleration_tolerates(&t, &other, false));
    /* a different key never matches */
    t = tol("nvidia.com/GPU", GS_TOL_EXISTS, "", GS_EFFECT_ANY);
    assert_false(gs_toleration_tolerates(&t, &gpu, false));
    /* empty key with Equal (API-invalid) still compares values against every key */
    t = tol("", GS_TOL_EQUAL, "present", GS_EFFECT_ANY);
    assert_true(gs_toleration_tolerates(&t, &gpu, false));
    assert_false(gs_toleration_tolerates(&t, &other, false));
}

static void test_toleration_equal_exists(void **state)
{
    (void)state;
    gs_taint gpu = taint("nvidia.com/gpu", "present", GS_EFFECT_NO_SCHEDULE);
    gs_toleration t = tol("nvidia.com/gpu", GS_TOL_EQUAL, "present", GS_EFFECT_ANY);
    assert_true(gs_toleration_tolerates(&t, &gpu, false));
    t.value = "Present"; /* case-sensitive */
    assert_false(gs_toleration_tolerates(&t, &gpu, false));
    t.value = "";
    assert_false(gs_toleration_tolerates(&t, &gpu, false));
    gs_taint bare = taint("nvidia.com/gpu", "", GS_EFFECT_NO_SCHEDULE);
    assert_true(gs_toleration_tolerates(&t, &bare, false)); /* "" == "" */
    /* Exists ignores the value */
    t = tol("nvidia.com/gpu", GS_TOL_EXISTS, "whatever", GS_EFFECT_ANY);
    assert_true(gs_toleration_tolerates(&t, &gpu, false));
    /* any other operator (e.g. "exists", "In") never matches */
    t = tol("nvidia.com/gpu", GS_TOL_OTHER, "", GS_EFFECT_ANY);
    t.op_raw = "exists";
    assert_false(gs_toleration_tolerates(&t, &gpu, true));
    t.op_raw = "In";
    t.value = "present";
    assert_false(gs_toleration_tolerates(&t, &gpu, true));
}

static void test_toleration_lt_gt(void **state)
{
    (void)state;
    gs_taint two = taint("rank", "2", GS_EFFECT_NO_SCHEDULE);
    gs_taint thousand = taint("rank", "1000", GS_EFFECT_NO_SCHEDULE);
    gs_toleration lt5 = tol("rank", GS_TOL_LT, "5", GS_EFFECT_ANY);
    gs_toleration gt800 = tol("rank", GS_TOL_GT, "800", GS_EFFECT_ANY);
    /* gate off: never */
    assert_false(gs_toleration_tolerates(&lt5, &two, false));
    assert_false(gs_toleration_tolerates(&gt800, &thousand, false));
    /* gate on: Lt matches iff taint < toleration; Gt iff taint > toleration */
    assert_true(gs_toleration_tolerates(&lt5, &two, true));
    assert_false(gs_toleration_tolerates(&lt5, &thousand, true));
    assert_true(gs_toleration_tolerates(&gt800, &thousand, true));
    assert_false(gs_toleration_tolerates(&gt800, &two, true));
    /* equal values never match */
    gs_taint five = taint("rank", "5", GS_EFFECT_NO_SCHEDULE);
    assert_false(gs_toleration_tolerates(&lt5, &five, true));
    gs_toleration gt5 = tol("rank", GS_TOL_GT, "5", GS_EFFECT_ANY);
    assert_false(gs_toleration_tolerates(&gt5, &five, true));
    /* negatives and zero are canonical */
    gs_taint neg = taint("rank", "-7", GS_EFFECT_NO_SCHEDULE);
    gs_toleration lt0 = tol("rank", GS_TOL_LT, "0", GS_EFFECT_ANY);
    assert_true(gs_toleration_tolerates(&lt0, &neg, true));
    gs_taint maxv = taint("rank", "9223372036854775807", GS_EFFECT_NO_SCHEDULE);
    assert_true(gs_toleration_tolerates(&gt800, &maxv, true));
    gs_taint over = taint("rank", "9223372036854775808", GS_EFFECT_NO_SCHEDULE);
    assert_false(gs_toleration_tolerates(&gt800, &over, true));
    /* non-canonical integers on either side never match */
    static const char *const bad[] = {"+5", "05", "-0", " 5", "5 ", "5.0", "1e3", "", "-", "abc",
                                      "00"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gs_taint t = taint("rank", bad[i], GS_EFFECT_NO_SCHEDULE);
        gs_toleration gt_low = tol("rank", GS_TOL_GT, "-100", GS_EFFECT_ANY);
        gs_toleration lt_high = tol("rank", GS_TOL_LT, "100", GS_EFFECT_ANY);
        if (gs_toleration_tolerates(&gt_low, &t, true) || gs_toleration_tolerates(&lt_high, &t, true))
            fail_msg("taint value \"%s\" must not be compared", bad[i]);
        gs_toleration tb = tol("rank", GS_TOL_LT, bad[i], GS_EFFECT_ANY);
        gs_taint small = taint("rank", "-100", GS_EFFECT_NO_SCHEDULE);
        if (gs_toleration_tolerates(&tb, &small, true))
            fail_msg("toleration value \"%s\" must not be compared", bad[i]);
    }
    /* effect and key are still checked first */
    gs_toleration lt5_exec = tol("rank", GS_TOL_LT, "5", GS_EFFECT_NO_EXECUTE);
    assert_false(gs_toleration_tolerates(&lt5_exec, &two, true));
    gs_toleration lt5_other = tol("other", GS_TOL_LT, "5", GS_EFFECT_ANY);
    assert_false(gs_toleration_tolerates(&lt5_other, &two, true));
}

/* ---------------------------------------------------------------- node selectors */

static void test_requirement_operators(void **state)
{
    (void)state;
    const char *zones[] = {"us-east-1b", "us-east-1a"};
    const char *other_zone[] = {"eu-west-1a"};
    assert_true(matches("zone", GS_SEL_IN, zones, 2));
    assert_false(matches("zone", GS_SEL_IN, other_zone, 1));
    assert_false(matches("missing", GS_SEL_IN, zones, 2));
    assert_false(matches("zone", GS_SEL_IN, NULL, 0)); /* In needs values */

    assert_false(matches("zone", GS_SEL_NOT_IN, zones, 2));
    assert_true(matches("zone", GS_SEL_NOT_IN, other_zone, 1));
    assert_true(matches("missing", GS_SEL_NOT_IN, zones, 2)); /* absent label matches */
    assert_false(matches("missing", GS_SEL_NOT_IN, NULL, 0));

    assert_true(matches("zone", GS_SEL_EXISTS, NULL, 0));
    assert_false(matches("missing", GS_SEL_EXISTS, NULL, 0));
    assert_false(matches("zone", GS_SEL_EXISTS, zones, 1)); /* values must be empty */
    assert_true(matches("missing", GS_SEL_DOES_NOT_EXIST, NULL, 0));
    assert_false(matches("zone", GS_SEL_DOES_NOT_EXIST, NULL, 0));
    assert_false(matches("missing", GS_SEL_DOES_NOT_EXIST, zones, 1));

    assert_false(matches("zone", GS_SEL_INVALID, zones, 2));
    /* invalid keys or values make the requirement invalid: never matches */
    const char *bad_value[] = {"us east"};
    assert_false(matches("zone", GS_SEL_NOT_IN, bad_value, 1));
    assert_false(matches("bad key", GS_SEL_DOES_NOT_EXIST, NULL, 0));
    assert_false(matches("", GS_SEL_DOES_NOT_EXIST, NULL, 0));
    assert_false(matches("a/b/c", GS_SEL_DOES_NOT_EXIST, NULL, 0));
    assert_false(matches("Example.com/x", GS_SEL_DOES_NOT_EXIST, NULL, 0));
    assert_true(matches("example.com/x", GS_SEL_DOES_NOT_EXIST, NULL, 0));
    /* prefixed keys work */
    const char *h100[] = {"NVIDIA-H100-80GB-HBM3"};
    assert_true(matches("nvidia.com/gpu.product", GS_SEL_IN, h100, 1));
}

static void test_requirement_gt_lt(void **state)
{
    (void)state;
    const char *v0204[] = {"0204"};
    const char *v7[] = {"7"}, *v8[] = {"8"}, *v9[] = {"9"};
    /* Go ParseInt: leading zeros accepted on both sides */
    assert_true(matches("example.com/rank", GS_SEL_GT, v0204, 1));
    assert_false(matches("example.com/rank", GS_SEL_LT, v0204, 1));
    assert_true(matches("gpu.count", GS_SEL_GT, v7, 1));
    assert_false(matches("gpu.count", GS_SEL_GT, v8, 1)); /* strict */
    assert_false(matches("gpu.count", GS_SEL_LT, v8, 1));
    assert_true(matches("gpu.count", GS_SEL_LT, v9, 1));
    /* the node's label may carry a sign (ParseInt accepts it) */
    const char *v0[] = {"0"};
    assert_true(matches("neg", GS_SEL_LT, v0, 1));
    assert_true(matches("plus", GS_SEL_GT, v0, 1));
    /* non-numeric or absent label: no match */
    assert_false(matches("text", GS_SEL_GT, v0, 1));
    assert_false(matches("text", GS_SEL_LT, v0, 1));
    assert_false(matches("missing", GS_SEL_LT, v9, 1));
    /* exactly one value, an int64, and a valid label value ("-5" and "+5" are not) */
    const char *two[] = {"1", "2"};
    const char *word[] = {"x"};
    const char *neg5[] = {"-5"}, *plus5[] = {"+5"}, *huge[] = {"99999999999999999999"};
    assert_false(matches("gpu.count", GS_SEL_GT, two, 2));
    assert_false(matches("gpu.count", GS_SEL_GT, NULL, 0));
    assert_false(matches("gpu.count", GS_SEL_GT, word, 1));
    assert_false(matches("gpu.count", GS_SEL_GT, neg5, 1));
    assert_false(matches("gpu.count", GS_SEL_GT, plus5, 1));
    assert_false(matches("gpu.count", GS_SEL_LT, huge, 1));
}

static void test_match_fields(void **state)
{
    (void)state;
    const char *a[] = {"node-a"}, *b[] = {"node-b"}, *ab[] = {"node-a", "node-b"};
    gs_sel_req r = req("metadata.name", GS_SEL_IN, a, 1);
    assert_true(gs_sel_req_matches_field(&r, "node-a"));
    assert_false(gs_sel_req_matches_field(&r, "node-b"));
    r = req("metadata.name", GS_SEL_NOT_IN, a, 1);
    assert_false(gs_sel_req_matches_field(&r, "node-a"));
    assert_true(gs_sel_req_matches_field(&r, "node-b"));
    /* exactly one value */
    r = req("metadata.name", GS_SEL_IN, ab, 2);
    assert_false(gs_sel_req_matches_field(&r, "node-a"));
    r = req("metadata.name", GS_SEL_NOT_IN, ab, 2);
    assert_false(gs_sel_req_matches_field(&r, "node-c"));
    /* only In / NotIn */
    r = req("metadata.name", GS_SEL_EXISTS, NULL, 0);
    assert_false(gs_sel_req_matches_field(&r, "node-a"));
    r = req("metadata.name", GS_SEL_GT, b, 1);
    assert_false(gs_sel_req_matches_field(&r, "node-a"));
    /* another key is not a field of the node: it reads as "" */
    r = req("metadata.labels", GS_SEL_IN, a, 1);
    assert_false(gs_sel_req_matches_field(&r, "node-a"));
}

static void test_terms_and_selectors(void **state)
{
    (void)state;
    const char *zone_a[] = {"us-east-1a"}, *zone_b[] = {"us-east-1b"};
    const char *name_a[] = {"node-a"}, *name_b[] = {"node-b"};
    gs_sel_req in_a = req("zone", GS_SEL_IN, zone_a, 1);
    gs_sel_req in_b = req("zone", GS_SEL_IN, zone_b, 1);
    gs_sel_req has_gpu = req("gpu.count", GS_SEL_EXISTS, NULL, 0);
    gs_sel_req bad = req("gpu.count", GS_SEL_EXISTS, zone_a, 1);
    gs_sel_req field_a = req("metadata.name", GS_SEL_IN, name_a, 1);
    gs_sel_req field_b = req("metadata.name", GS_SEL_IN, name_b, 1);

    gs_sel_req exprs_ok[] = {in_a, has_gpu};
    gs_sel_req exprs_fail[] = {in_a, in_b};
    gs_sel_req exprs_bad[] = {bad, in_b};
    gs_sel_req exprs_bad_first_ok[] = {in_a, bad};

    gs_sel_term empty = {NULL, 0, NULL, 0};
    assert_false(gs_sel_term_matches(&empty, &node_labels, "node-a"));
    gs_sel_term t_ok = {exprs_ok, 2, NULL, 0};
    assert_true(gs_sel_term_matches(&t_ok, &node_labels, "node-a"));
    gs_sel_term t_fail = {exprs_fail, 2, NULL, 0};
    assert_false(gs_sel_term_matches(&t_fail, &node_labels, "node-a"));
    gs_sel_term t_bad = {exprs_bad_first_ok, 2, NULL, 0};
    assert_false(gs_sel_term_matches(&t_bad, &node_labels, "node-a"));
    gs_sel_term t_fields = {NULL, 0, &field_a, 1};
    assert_true(gs_sel_term_matches(&t_fields, &node_labels, "node-a"));
    assert_false(gs_sel_term_matches(&t_fields, &node_labels, "node-b"));
    gs_sel_term t_both = {exprs_ok, 2, &field_b, 1}; /* exprs AND fields */
    assert_false(gs_sel_term_matches(&t_both, &node_labels, "node-a"));
    assert_true(gs_sel_term_matches(&t_both, &node_labels, "node-b"));

    /* terms are ORed; an invalid term does not stop the others */
    gs_sel_term terms[] = {{exprs_bad, 2, NULL, 0}, {exprs_fail, 2, NULL, 0}, {exprs_ok, 2, NULL, 0}};
    gs_node_selector ns = {terms, 3};
    assert_true(gs_node_selector_matches(&ns, &node_labels, "node-a"));
    ns.nterms = 2;
    assert_false(gs_node_selector_matches(&ns, &node_labels, "node-a"));
    /* empty list and a list of empty terms match nothing */
    gs_node_selector none = {NULL, 0};
    assert_false(gs_node_selector_matches(&none, &node_labels, "node-a"));
    gs_sel_term empties[] = {{NULL, 0, NULL, 0}, {NULL, 0, NULL, 0}};
    gs_node_selector only_empty = {empties, 2};
    assert_false(gs_node_selector_matches(&only_empty, &node_labels, "node-a"));
    /* an empty term next to a matching one is ignored */
    gs_sel_term mixed[] = {{NULL, 0, NULL, 0}, {exprs_ok, 2, NULL, 0}};
    gs_node_selector ns_mixed = {mixed, 2};
    assert_true(gs_node_selector_matches(&ns_mixed, &node_labels, "node-a"));
    /* NULL selector = no required affinity */
    assert_true(gs_node_selector_matches(NULL, &node_labels, "node-a"));
    /* a node without labels */
    gs_labels no_labels = {NULL, 0};
    gs_sel_req absent = req("zone", GS_SEL_NOT_IN, zone_a, 1);
    gs_sel_term t_absent = {&absent, 1, NULL, 0};
    assert_true(gs_sel_term_matches(&t_absent, &no_labels, "n"));
}

static void test_label_selector(void **state)
{
    (void)state;
    gs_kv pod_kv[] = {{"app", "train"}, {"team", "ml"}, {"tier", "gpu"}};
    gs_labels pod = {pod_kv, 3};

    gs_label_selector sel;
    memset(&sel, 0, sizeof sel);
    assert_false(gs_label_selector_matches(&sel, &pod)); /* absent: nothing */
    assert_false(gs_label_selector_matches(NULL, &pod));
    sel.present = true;
    assert_true(gs_label_selector_matches(&sel, &pod)); /* empty: everything */
    gs_labels none = {NULL, 0};
    assert_true(gs_label_selector_matches(&sel, &none));

    gs_kv want_kv[] = {{"app", "train"}, {"team", "ml"}};
    sel.match_labels.items = want_kv;
    sel.match_labels.n = 2;
    assert_true(gs_label_selector_matches(&sel, &pod));
    assert_false(gs_label_selector_matches(&sel, &none));
    want_kv[1].val = "ML";
    assert_false(gs_label_selector_matches(&sel, &pod));
    want_kv[1].val = "ml";

    const char *tiers[] = {"gpu", "cpu"}, *envs[] = {"prod"};
    gs_sel_req exprs[] = {
        {"tier", GS_SEL_IN, tiers, 2},
        {"env", GS_SEL_NOT_IN, envs, 1},
        {"team", GS_SEL_EXISTS, NULL, 0},
        {"canary", GS_SEL_DOES_NOT_EXIST, NULL, 0},
    };
    sel.exprs = exprs;
    sel.nexprs = 4;
    assert_true(gs_label_selector_matches(&sel, &pod)); /* matchLabels AND expressions */
    exprs[3].key = "app";
    assert_false(gs_label_selector_matches(&sel, &pod));
    exprs[3].key = "canary";

    /* Gt/Lt are not LabelSelector operators; invalid entries match nothing */
    const char *one[] = {"1"};
    gs_sel_req gt = {"tier", GS_SEL_GT, one, 1};
    gs_label_selector sel_gt = {true, {NULL, 0}, &gt, 1};
    assert_false(gs_label_selector_matches(&sel_gt, &pod));
    gs_sel_req in_empty = {"tier", GS_SEL_IN, NULL, 0};
    gs_label_selector sel_in_empty = {true, {NULL, 0}, &in_empty, 1};
    assert_false(gs_label_selector_matches(&sel_in_empty, &pod));
    gs_sel_req not_in_empty = {"tier", GS_SEL_NOT_IN, NULL, 0};
    gs_label_selector sel_not_in_empty = {true, {NULL, 0}, &not_in_empty, 1};
    assert_false(gs_label_selector_matches(&sel_not_in_empty, &pod));
    gs_kv bad_kv[] = {{"app", "not valid"}};
    gs_label_selector sel_bad = {true, {bad_kv, 1}, NULL, 0};
    assert_false(gs_label_selector_matches(&sel_bad, &pod));
}

/* ---------------------------------------------------------------- resources */

static void test_resource_classification(void **state)
{
    (void)state;
    static const char *const extended[] = {"nvidia.com/gpu", "amd.com/gpu", "example.com/foo",
                                           "nvidia.com/mig-1g.10gb", "a/b"};
    for (size_t i = 0; i < sizeof extended / sizeof extended[0]; i++) {
        if (!gs_resource_is_extended(extended[i]) || gs_resource_is_native(extended[i]))
            fail_msg("%s should be extended", extended[i]);
    }
    static const char *const native[] = {"cpu", "memory", "ephemeral-storage", "hugepages-2Mi",
                                         "pods", "kubernetes.io/foo", "foo.kubernetes.io/bar",
                                         "requests.cpu"};
    for (size_t i = 0; i < sizeof native / sizeof native[0]; i++) {
        if (gs_resource_is_extended(native[i]) || !gs_resource_is_native(native[i]))
            fail_msg("%s should be native", native[i]);
    }
    /* neither native nor extended */
    static const char *const neither[] = {"requests.foo/bar", "Nvidia.com/gpu", "nvidia.com/",
                                          "/gpu", "a/b/c", "nvidia.com/-gpu", "nvidia_com/gpu"};
    for (size_t i = 0; i < sizeof neither / sizeof neither[0]; i++) {
        if (gs_resource_is_extended(neither[i]) || gs_resource_is_native(neither[i]))
            fail_msg("%s should be neither", neither[i]);
    }
    /* length limits: the name part is at most 63, the prefix (with "requests.") 253 */
    char name[400];
    memset(name, 0, sizeof name);
    strcpy(name, "example.com/");
    memset(name + 12, 'x', 63);
    assert_true(gs_resource_is_extended(name));
    name[12 + 63] = 'x';
    assert_false(gs_resource_is_extended(name));
    memset(name, 0, sizeof name);
    memset(name, 'a', 244); /* 9 + 244 = 253 */
    strcpy(name + 244, "/g");
    assert_true(gs_resource_is_extended(name));
    memset(name, 'a', 245);
    strcpy(name + 245, "/g");
    assert_false(gs_resource_is_extended(name));
}

/* ---------------------------------------------------------------- one home for shared rules */

static void test_name_syntax(void **state)
{
    (void)state;
    assert_true(gs_is_qualified_name("nvidia.com/gpu"));
    assert_true(gs_is_qualified_name("dedicated"));
    assert_true(gs_is_qualified_name("example.com/a_b.c"));
    assert_false(gs_is_qualified_name(""));
    assert_false(gs_is_qualified_name(NULL));
    assert_false(gs_is_qualified_name("Nvidia.com/gpu"));   /* prefix is lowercase DNS */
    assert_false(gs_is_qualified_name("a/b/c"));
    assert_false(gs_is_qualified_name("-gpu"));
    assert_false(gs_is_qualified_name("nvidia.com/"));
    char long_part[80];
    memset(long_part, 'a', 64);
    long_part[64] = '\0';
    assert_false(gs_is_qualified_name(long_part));
    long_part[63] = '\0';
    assert_true(gs_is_qualified_name(long_part));
    assert_true(gs_is_label_value(""));
    assert_true(gs_is_label_value("present"));
    assert_false(gs_is_label_value("a b"));
    assert_false(gs_is_label_value("x."));
    assert_true(gs_is_dns1123_subdomain("kai.scheduler"));
    assert_false(gs_is_dns1123_subdomain("kai..scheduler"));
    assert_false(gs_is_dns1123_subdomain("KAI"));
}

/* The checker (some value) and the webhook (every value) ask the same function. */
static void test_toleration_by_key(void **state)
{
    (void)state;
    gs_toleration exists = tol("nvidia.com/gpu", GS_TOL_EXISTS, "", GS_EFFECT_NO_SCHEDULE);
    gs_toleration equal = tol("nvidia.com/gpu", GS_TOL_EQUAL, "present", GS_EFFECT_ANY);
    gs_toleration all = tol("", GS_TOL_EXISTS, "", GS_EFFECT_ANY);
    gs_toleration empty_equal = tol("", GS_TOL_EQUAL, "", GS_EFFECT_ANY);
    gs_toleration execute = tol("nvidia.com/gpu", GS_TOL_EXISTS, "", GS_EFFECT_NO_EXECUTE);
    gs_toleration gt = tol("nvidia.com/gpu", GS_TOL_GT, "1", GS_EFFECT_ANY);
    gs_toleration bad = tol("nvidia.com/gpu", GS_TOL_EXISTS, "", GS_EFFECT_INVALID);
    const char *k = "nvidia.com/gpu";
    assert_true(gs_toleration_tolerates_key(&exists, k, GS_EFFECT_NO_SCHEDULE, true));
    assert_true(gs_toleration_tolerates_key(&exists, k, GS_EFFECT_NO_SCHEDULE, false));
    assert_false(gs_toleration_tolerates_key(&exists, k, GS_EFFECT_NO_EXECUTE, false));
    assert_false(gs_toleration_tolerates_key(&exists, "dedicated", GS_EFFECT_NO_SCHEDULE, false));
    assert_false(gs_toleration_tolerates_key(&equal, k, GS_EFFECT_NO_SCHEDULE, true));
    assert_true(gs_toleration_tolerates_key(&equal, k, GS_EFFECT_NO_SCHEDULE, false));
    assert_true(gs_toleration_tolerates_key(&all, "anything", GS_EFFECT_NO_EXECUTE, true));
    assert_false(gs_toleration_tolerates_key(&empty_equal, k, GS_EFFECT_NO_SCHEDULE, false));
    assert_true(gs_toleration_tolerates_key(&execute, k, GS_EFFECT_NO_EXECUTE, true));
    assert_false(gs_toleration_tolerates_key(&gt, k, GS_EFFECT_NO_SCHEDULE, false));
    assert_false(gs_toleration_tolerates_key(&bad, k, GS_EFFECT_NO_SCHEDULE, false));

    gs_toleration tols[2] = {equal, execute};
    gs_pod pod;
    memset(&pod, 0, sizeof pod);
    pod.tolerations = tols;
    pod.ntolerations = 2;
    assert_true(gs_pod_tolerates_key(&pod, k, GS_EFFECT_NO_SCHEDULE, false));
    assert_false(gs_pod_tolerates_key(&pod, k, GS_EFFECT_NO_SCHEDULE, true));
    assert_true(gs_pod_tolerates_key(&pod, k, GS_EFFECT_NO_EXECUTE, true));
}

/* ExtendedResourceToleration: containers and init containers only, sorted, unique. */
/* NodeAffinity's filter: nodeSelector AND required affinity; the GPU taint test. */
static void test_pod_selects_node_and_gpu_taint(void **state)
{
    (void)state;
    static const char yaml[] =
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n  labels: {pool: gpu, zone: z1}\n---\n"
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: b\n  labels: {pool: gpu, zone: z2}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: any}\nspec:\n  containers: [{name: c}]\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: sel}\nspec:\n  nodeSelector: {pool: gpu}\n"
        "  containers: [{name: c}]\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: both}\nspec:\n  nodeSelector: {pool: gpu}\n"
        "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
        "        nodeSelectorTerms:\n        - matchExpressions: [{key: zone, operator: In, values: [z2]}]\n"
        "  containers: [{name: c}]\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: none}\nspec:\n  nodeSelector: {pool: cpu}\n"
        "  containers: [{name: c}]\n";
    gs_snapshot s;
    gs_error err;
    gs_error_clear(&err);
    gs_snapshot_init(&s);
    assert_int_equal(gs_snapshot_read_buffer(&s, "t.yaml", yaml, strlen(yaml), NULL, &err), 0);
    assert_int_equal(gs_snapshot_finish(&s, &err), 0);
    const gs_node *a = &s.nodes.v[0], *b = &s.nodes.v[1];
    assert_true(gs_pod_selects_node(&s.pods.v[0], a) && gs_pod_selects_node(&s.pods.v[0], b));
    assert_true(gs_pod_selects_node(&s.pods.v[1], a) && gs_pod_selects_node(&s.pods.v[1], b));
    assert_false(gs_pod_selects_node(&s.pods.v[2], a));
    assert_true(gs_pod_selects_node(&s.pods.v[2], b));
    assert_false(gs_pod_selects_node(&s.pods.v[3], a) || gs_pod_selects_node(&s.pods.v[3], b));
    gs_snapshot_free(&s);

    const char *keys[] = {"nvidia.com/gpu", NULL, "dedicated"};
    gs_taint ns = {"nvidia.com/gpu", "present", GS_EFFECT_NO_SCHEDULE};
    gs_taint ne = {"dedicated", "gpu", GS_EFFECT_NO_EXECUTE};
    gs_taint pref = {"nvidia.com/gpu", "", GS_EFFECT_PREFER_NO_SCHEDULE};
    gs_taint other = {"sku", "gpu", GS_EFFECT_NO_SCHEDULE};
    assert_true(gs_taint_is_gpu(&ns, keys, 3));
    assert_true(gs_taint_is_gpu(&ne, keys, 3));
    assert_false(gs_taint_is_gpu(&ne, keys, 1));
    assert_false(gs_taint_is_gpu(&pref, keys, 3));
    assert_false(gs_taint_is_gpu(&other, keys, 3));
}

/* GKE runs ExtendedResourceToleration; its GPU nodes say so by their accelerator label. */
static void test_ert_implied(void **state)
{
    (void)state;
    static const char yaml[] =
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: cpu-0\n"
        "  labels: {cloud.google.com/gke-nodepool: default-pool}\n---\n"
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-0\n"
        "  labels: {cloud.google.com/gke-accelerator: nvidia-l4}\n";
    gs_snapshot s;
    gs_error err;
    gs_error_clear(&err);
    gs_snapshot_init(&s);
    assert_int_equal(gs_snapshot_read_buffer(&s, "t.yaml", yaml, strlen(yaml), NULL, &err), 0);
    assert_int_equal(gs_snapshot_finish(&s, &err), 0);
    const gs_node *n = gs_ert_implied_by(&s);
    assert_non_null(n);
    assert_string_equal(n->meta.name, "gpu-0");
    gs_snapshot_free(&s);
    /* a node pool label alone (a CPU pool, or any cluster that reuses GKE's label names) is
     * not enough */
    gs_snapshot_init(&s);
    assert_int_equal(gs_snapshot_read_buffer(&s, "t.yaml", yaml, 106, NULL, &err), 0);
    assert_int_equal(gs_snapshot_finish(&s, &err), 0);
    assert_null(gs_ert_implied_by(&s));
    gs_snapshot_free(&s);
}

static void test_ert(void **state)
{
    (void)state;
    gs_res r1[] = {{"cpu", {0}}, {"nvidia.com/gpu", {0}}};
    gs_res r2[] = {{"example.com/fpga", {0}}, {"nvidia.com/gpu", {0}}};
    gs_res r3[] = {{"aaa.example/overhead", {0}}};
    gs_container cs[1], init[1];
    memset(cs, 0, sizeof cs);
    memset(init, 0, sizeof init);
    cs[0].requests = (gs_reslist){r1, 2};
    init[0].requests = (gs_reslist){r2, 2};
    gs_pod pod;
    memset(&pod, 0, sizeof pod);
    pod.containers = cs;
    pod.ncontainers = 1;
    pod.init_containers = init;
    pod.ninit = 1;
    pod.overhead = (gs_reslist){r3, 1}; /* not a container's request: no toleration */
    const char *names[4];
    assert_int_equal(gs_ert_resources(&pod, names, 4), 2);
    assert_string_equal(names[0], "example.com/fpga");
    assert_string_equal(names[1], "nvidia.com/gpu");
    assert_int_equal(gs_ert_resources(&pod, names, 1), 1);
    assert_string_equal(names[0], "example.com/fpga");
    gs_taint gpu = taint("nvidia.com/gpu", "present", GS_EFFECT_NO_SCHEDULE);
    gs_taint gpu_exec = taint("nvidia.com/gpu", "present", GS_EFFECT_NO_EXECUTE);
    gs_taint over = taint("aaa.example/overhead", "", GS_EFFECT_NO_SCHEDULE);
    gs_taint cpu = taint("cpu", "", GS_EFFECT_NO_SCHEDULE);
    assert_true(gs_ert_tolerates(&pod, &gpu));
    assert_false(gs_ert_tolerates(&pod, &gpu_exec));
    assert_false(gs_ert_tolerates(&pod, &over));
    assert_false(gs_ert_tolerates(&pod, &cpu));
}

/* Priority admission: named class, system classes, global default (lowest value wins). */
static void test_priority_resolve(void **state)
{
    (void)state;
    gs_priority_class pcs[4];
    memset(pcs, 0, sizeof pcs);
    pcs[0].meta.name = "high";
    pcs[0].value = 1000;
    pcs[0].global_default = true;
    pcs[1].meta.name = "low";
    pcs[1].value = 10;
    pcs[1].global_default = true;
    pcs[1].preemption_policy = GS_PREEMPT_NEVER;
    pcs[2].meta.name = "high";
    pcs[2].value = 5; /* a second class of the same name: the first wins */
    pcs[3].meta.name = "system-node-critical";
    pcs[3].value = 7; /* the input's own object wins over the built-in value */
    int32_t prio;
    gs_preempt_policy pol;
    assert_true(gs_priority_resolve(pcs, 4, "high", &prio, &pol));
    assert_int_equal(prio, 1000);
    assert_int_equal(pol, GS_PREEMPT_UNSET);
    assert_true(gs_priority_resolve(pcs, 4, "", &prio, &pol));
    assert_int_equal(prio, 10);
    assert_int_equal(pol, GS_PREEMPT_NEVER);
    assert_true(gs_priority_resolve(pcs, 4, "system-node-critical", &prio, &pol));
    assert_int_equal(prio, 7);
    assert_true(gs_priority_resolve(pcs, 2, "system-node-critical", &prio, &pol));
    assert_int_equal(prio, GS_PRIORITY_SYSTEM_NODE_CRITICAL);
    assert_true(gs_priority_resolve(NULL, 0, "system-cluster-critical", &prio, &pol));
    assert_int_equal(prio, GS_PRIORITY_SYSTEM_CLUSTER_CRITICAL);
    assert_true(gs_priority_resolve(NULL, 0, "", &prio, &pol));
    assert_int_equal(prio, 0);
    assert_false(gs_priority_resolve(pcs, 4, "missing", &prio, &pol));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_toleration_effect_and_key),
        cmocka_unit_test(test_toleration_equal_exists),
        cmocka_unit_test(test_toleration_lt_gt),
        cmocka_unit_test(test_requirement_operators),
        cmocka_unit_test(test_requirement_gt_lt),
        cmocka_unit_test(test_match_fields),
        cmocka_unit_test(test_terms_and_selectors),
        cmocka_unit_test(test_label_selector),
        cmocka_unit_test(test_resource_classification),
        cmocka_unit_test(test_name_syntax),
        cmocka_unit_test(test_toleration_by_key),
        cmocka_unit_test(test_ert),
        cmocka_unit_test(test_ert_implied),
        cmocka_unit_test(test_pod_selects_node_and_gpu_taint),
        cmocka_unit_test(test_priority_resolve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
