/*
 * test_check_core.c - the checker's machinery: the rule registry, the CheckConfig reader
 * (file:line:col errors), suppression annotations, which objects are judged (workloads
 * represent their pods), severity overrides, deterministic order, and concurrent runs
 * on one snapshot (the webhook's use).
 */
#include <pthread.h>
#include <unistd.h>

#include "test_check_util.h"

/* ---------------------------------------------------------------- registry */
static void test_registry(void **state)
{
    (void)state;
    uint32_t n;
    const gs_rule_info *rules = gs_rules(&n);
    assert_true(n >= 26 && n <= 64);
    for (uint32_t i = 0; i < n; i++) {
        char id[16];
        snprintf(id, sizeof id, "GS%03u", i + 1);
        assert_string_equal(rules[i].id, id); /* dense, in id order */
        char doc[48];
        snprintf(doc, sizeof doc, "docs/rules/%s.md", id);
        assert_string_equal(rules[i].doc, doc);
        assert_non_null(rules[i].summary);
        assert_ptr_equal(gs_rule_find(rules[i].name), &rules[i]);
        for (uint32_t k = 0; k < i; k++)
            assert_string_not_equal(rules[k].name, rules[i].name);
    }
    assert_ptr_equal(gs_rule_find("gs001"), &rules[0]);
    assert_string_equal(gs_rule_find("GS001")->name, "gpu-node-untainted");
    assert_null(gs_rule_find("GS999"));
    assert_null(gs_rule_find(""));
    gs_severity s;
    assert_int_equal(gs_severity_parse("warning", &s), 0);
    assert_int_equal(s, GS_SEV_WARNING);
    assert_int_equal(gs_severity_parse("fatal", &s), -1);
    assert_string_equal(gs_severity_name(GS_SEV_INFO), "info");
}

/* ---------------------------------------------------------------- config */
static char *write_temp(const char *text)
{
    char *path = strdup("/tmp/gs-check-config-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t n = strlen(text);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    close(fd);
    return path;
}

static int read_config(gs_check_config *cfg, const char *text, gs_error *err)
{
    char *path = write_temp(text);
    gs_error_clear(err);
    int rc = gs_check_config_read(cfg, path, err);
    unlink(path);
    free(path);
    return rc;
}

static void test_config_defaults_and_file(void **state)
{
    (void)state;
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    assert_int_equal(cfg.ngpu_taint_keys, 1);
    assert_string_equal(cfg.gpu_taint_keys[0], "nvidia.com/gpu");
    assert_string_equal(cfg.role_label, "gpusched.io/role");
    assert_int_equal(cfg.mig_strategy, GS_CHECK_MIG_INFER);
    assert_true(cfg.npool_labels >= 3);
    gs_error err;
    assert_int_equal(read_config(&cfg,
                                 "apiVersion: gpusched.io/v1alpha1\nkind: CheckConfig\n"
                                 "rules:\n  GS002: {enabled: false}\n  gpu-node-untainted: {severity: warning}\n"
                                 "  GS017: off\n  GS018: info\n"
                                 "gpuTaintKeys: [nvidia.com/gpu, dedicated]\n"
                                 "poolLabels: [a, \"b|c\"]\nmigLabels: []\nroleLabel: team.io/role\n"
                                 "defaultGpuPriorityClass: gpu-low\nmigStrategy: mixed\n"
                                 "extendedResourceToleration: true\n",
                                 &err),
                     0);
    assert_true(cfg.disabled[1]);
    assert_true(cfg.has_severity[0]);
    assert_int_equal(cfg.severity[0], GS_SEV_WARNING);
    assert_true(cfg.disabled[16]);
    assert_int_equal(cfg.severity[17], GS_SEV_INFO);
    assert_false(cfg.disabled[17]);
    assert_int_equal(cfg.ngpu_taint_keys, 2);
    assert_string_equal(cfg.gpu_taint_keys[1], "dedicated");
    assert_int_equal(cfg.npool_labels, 2);
    assert_string_equal(cfg.pool_labels[1], "b|c");
    assert_int_equal(cfg.nmig_labels, 0);
    assert_string_equal(cfg.role_label, "team.io/role");
    assert_string_equal(cfg.default_gpu_priority_class, "gpu-low");
    assert_int_equal(cfg.mig_strategy, GS_CHECK_MIG_MIXED);
    assert_true(cfg.extended_resource_toleration);
    gs_check_config_free(&cfg);

    /* JSON is YAML; an empty file keeps the defaults */
    gs_check_config_defaults(&cfg);
    assert_int_equal(read_config(&cfg, "{\"gpuTaintKeys\": [\"x\"]}", &err), 0);
    assert_string_equal(cfg.gpu_taint_keys[0], "x");
    assert_int_equal(read_config(&cfg, "", &err), 0);
    assert_string_equal(cfg.gpu_taint_keys[0], "x");
    gs_check_config_free(&cfg);
}

static void expect_config_error(const char *text, int line, int col, const char *needle)
{
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    gs_error err;
    int rc = read_config(&cfg, text, &err);
    if (rc == 0 || err.line != line || err.col != col || !strstr(err.msg, needle))
        print_error("config %s -> rc %d %d:%d %s: %s\n", text, rc, err.line, err.col, err.path, err.msg);
    assert_int_not_equal(rc, 0);
    assert_int_equal(err.line, line);
    assert_int_equal(err.col, col);
    assert_non_null(strstr(err.msg, needle));
    assert_non_null(strstr(err.file, "/tmp/gs-check-config-"));
    /* a failed read leaves the configuration as it was */
    assert_string_equal(cfg.gpu_taint_keys[0], "nvidia.com/gpu");
    assert_false(cfg.disabled[0]);
    gs_check_config_free(&cfg);
}

/* Single-quoted scalars with '' escapes (libfyaml 0.7.12 reads 'a''''b' as "a'''"). */
static void test_config_single_quotes(void **state)
{
    (void)state;
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    gs_error err;
    assert_int_equal(read_config(&cfg,
                                 "apiVersion: gpusched.io/v1alpha1\nkind: CheckConfig\n"
                                 "roleLabel: 'team''''s/role'\n"
                                 "poolLabels: ['a''b', 'two\n  lines']\n",
                                 &err),
                     0);
    assert_string_equal(cfg.role_label, "team''s/role");
    assert_string_equal(cfg.pool_labels[0], "a'b");
    assert_string_equal(cfg.pool_labels[1], "two lines");
    gs_check_config_free(&cfg);
}

static void test_config_errors(void **state)
{
    (void)state;
    expect_config_error("gpuTaintKeys: [a]\nrulez: {}\n", 2, 1, "unknown field \"rulez\"");
    expect_config_error("rules:\n  GS001: {enabled: false}\n  GS999: off\n", 3, 3, "unknown rule \"GS999\"");
    expect_config_error("rules:\n  GS001: {severity: fatal}\n", 2, 21, "unknown severity");
    /* a quoted scalar is positioned at its opening quote, as in every reader */
    expect_config_error("rules:\n  GS001: {enabled: \"no\"}\n", 2, 20, "expected true or false");
    expect_config_error("rules:\n  GS001: {enable: true}\n", 2, 11, "unknown field");
    expect_config_error("gpuTaintKeys: nvidia.com/gpu\n", 1, 15, "expected a sequence");
    expect_config_error("gpuTaintKeys: []\n", 1, 1, "at least one taint key");
    expect_config_error("kind: Pod\n", 1, 7, "expected kind CheckConfig");
    expect_config_error("migStrategy: double\n", 1, 14, "unknown MIG strategy");
    expect_config_error("rules: [a\n", 2, 1, "invalid YAML");
    expect_config_error("a: &x 1\nb: *x\n", 2, 4, "aliases"); /* at the '*' */
    expect_config_error("gpuTaintKeys: [a]\n---\ngpuTaintKeys: [b]\n", 2, 1, "one YAML document");
    /* duplicate keys are errors, as in every other reader: GS002 is not silently turned off */
    expect_config_error("rules:\n  GS002: error\n  GS002: off\n", 3, 3, "duplicate mapping key \"GS002\"");
    expect_config_error("rules:\n  GS002: error\n  gpu-node-missing-labels: off\n", 3, 3,
                        "rule GS002 is configured twice (also as \"GS002\" at line 2, column 3)");
    expect_config_error("gpuTaintKeys: [a]\nroleLabel: x\ngpuTaintKeys: [b]\n", 3, 1, "duplicate mapping key");
    expect_config_error("rules: {GS001: {enabled: true, enabled: false}}\n", 1, 32, "duplicate mapping key \"enabled\"");
    expect_config_error("metadata: {name: a, name: b}\n", 1, 21, "duplicate mapping key \"name\"");
    expect_config_error("{\"migStrategy\": \"none\", \"migStrategy\": \"mixed\"}", 1, 25, "duplicate mapping key");
    /* HAMi's install (GS012) */
    expect_config_error("hami: {forceOverwriteDefaultScheduler: maybe}\n", 1, 40, "expected true or false");
    expect_config_error("hami: {schedulerName: x}\n", 1, 8, "unknown field (expected forceOverwriteDefaultScheduler)");
    expect_config_error("hami: true\n", 1, 7, "expected a mapping");
    /* malformed UTF-8 never reaches libfyaml (0.7.12 can loop on it after a directive) */
    expect_config_error("%YAML 1.2\nroleLabel: \"\xC3\x28\"\n", 2, 13, "invalid UTF-8");
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    gs_error err;
    gs_error_clear(&err);
    assert_int_not_equal(gs_check_config_read(&cfg, "/nonexistent/gs-check.yaml", &err), 0);
    assert_int_equal(err.code, GS_ERR_IO);
    gs_check_config_free(&cfg);
}

/* ---------------------------------------------------------------- suppressions */
#define UNTAINTED_NODE(name, annotation)                                                              \
    "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: " name "\n  annotations: {gpusched.io/suppress: " \
    annotation "}\nstatus: {allocatable: {nvidia.com/gpu: \"1\"}}\n"

static void test_suppressions(void **state)
{
    (void)state;
    checked c;
    check_text(&c, UNTAINTED_NODE("quiet", "\"GS001,gpu-node-missing-labels: draining this week; owned by infra\"")
                   UNTAINTED_NODE("noreason", "\"GS001\"")
                   UNTAINTED_NODE("empty", "\"GS001:   \"")
                   UNTAINTED_NODE("unknown", "\"GS001: ok; GS999: nope\"")
                   UNTAINTED_NODE("multi", "\"GS002: labels later\\nGS001: test pool\""));
    const gs_finding *f = find_rule(&c, "GS001", "quiet");
    assert_non_null(f);
    assert_true(f->suppressed);
    /* a ';' that does not start a rule belongs to the reason */
    assert_string_equal(f->suppress_reason, "draining this week; owned by infra");
    assert_true(find_rule(&c, "GS002", "quiet")->suppressed);
    assert_rule(&c, "GS026", "quiet", 0);

    assert_false(find_rule(&c, "GS001", "noreason")->suppressed);
    assert_rule(&c, "GS026", "noreason", 1);
    assert_non_null(strstr(find_rule(&c, "GS026", "noreason")->message, "has no reason"));
    assert_false(find_rule(&c, "GS001", "empty")->suppressed);
    assert_rule(&c, "GS026", "empty", 1);
    /* the valid entry still works, the unknown rule is reported */
    assert_true(find_rule(&c, "GS001", "unknown")->suppressed);
    assert_rule(&c, "GS026", "unknown", 1);
    assert_non_null(strstr(find_rule(&c, "GS026", "unknown")->message, "unknown rule \"GS999\""));
    assert_true(find_rule(&c, "GS001", "multi")->suppressed);
    assert_string_equal(find_rule(&c, "GS001", "multi")->suppress_reason, "test pool");
    assert_true(find_rule(&c, "GS002", "multi")->suppressed);
    checked_free(&c);

    /* on a workload: its own annotation or its pod template's */
    check_text(&c, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a, namespace: ml}\n"
                   "spec:\n  template:\n    metadata: {annotations: {gpusched.io/suppress: \"GS007: legacy\"}}\n"
                   "    spec: {containers: [{name: c, resources: {requests: {example.com/x: 1}}}]}\n");
    assert_true(find_rule(&c, "GS007", "a")->suppressed);
    assert_string_equal(find_rule(&c, "GS007", "a")->suppress_reason, "legacy");
    checked_free(&c);
}

/* ---------------------------------------------------------------- subjects */
static void test_owned_pods_are_not_repeated(void **state)
{
    (void)state;
    checked c;
    /* a kubectl dump: the Deployment, its ReplicaSet and its pod all carry the mistake */
    check_text(&c, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: ml}\n"
                   "spec:\n  replicas: 2\n  template:\n    spec: {containers: [{name: c, resources: {requests: {example.com/x: 1}}}]}\n"
                   "---\napiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: web-7d\n  namespace: ml\n"
                   "  ownerReferences: [{kind: Deployment, name: web}]\n"
                   "spec:\n  replicas: 2\n  template:\n    spec: {containers: [{name: c, resources: {requests: {example.com/x: 1}}}]}\n"
                   "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: web-7d-abc\n  namespace: ml\n"
                   "  ownerReferences: [{kind: ReplicaSet, name: web-7d}]\n"
                   "spec: {containers: [{name: c, resources: {requests: {example.com/x: 1}}}]}\n"
                   /* an orphan pod is judged */
                   "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: orphan\n  namespace: ml\n"
                   "  ownerReferences: [{kind: ReplicaSet, name: gone}]\n"
                   "spec: {containers: [{name: c, resources: {requests: {example.com/x: 1}}}]}\n");
    assert_rule(&c, "GS007", NULL, 2);
    assert_rule(&c, "GS007", "web", 1);
    assert_rule(&c, "GS007", "orphan", 1);
    assert_int_equal(c.res.objects, 2);
    checked_free(&c);
}

/* Mappings larger than the pairwise limit sort their keys to find duplicates. */
static void test_config_duplicates_large(void **state)
{
    (void)state;
    char text[4096];
    size_t o = (size_t)snprintf(text, sizeof text, "metadata:\n");
    for (int i = 0; i < 40; i++)
        o += (size_t)snprintf(text + o, sizeof text - o, "  k%02d: v\n", i);
    o += (size_t)snprintf(text + o, sizeof text - o, "  k17: again\n");
    expect_config_error(text, 42, 3, "duplicate mapping key \"k17\"");
    /* the same without the duplicate reads */
    text[o - 12] = '\0';
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    gs_error err;
    assert_int_equal(read_config(&cfg, text, &err), 0);
    assert_true(cfg.hami_overwrites_default_scheduler);
    assert_int_equal(read_config(&cfg, "hami: {forceOverwriteDefaultScheduler: false}\n", &err), 0);
    assert_false(cfg.hami_overwrites_default_scheduler);
    gs_check_config_free(&cfg);
}

static void test_config_in_run(void **state)
{
    (void)state;
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    const char *text = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {nvidia.com/gpu: \"1\"}}\n";
    cfg.disabled[1] = true; /* GS002 */
    cfg.has_severity[0] = true;
    cfg.severity[0] = GS_SEV_INFO;
    checked c;
    check_text_cfg(&c, text, &cfg);
    assert_rule(&c, "GS002", NULL, 0);
    assert_int_equal(find_rule(&c, "GS001", "n")->severity, GS_SEV_INFO);
    /* a disabled rule checks nothing */
    for (uint32_t i = 0; i < c.res.nchecked; i++)
        assert_false(c.res.checked[i].rules & 2u);
    checked_free(&c);
    gs_check_config_free(&cfg);
}

static void test_order_and_empty(void **state)
{
    (void)state;
    gs_snapshot s;
    gs_snapshot_init(&s);
    gs_error err;
    /* b.yaml is read first, but findings sort by file name, line, column, rule */
    const char *b = "apiVersion: v1\nkind: Node\nmetadata: {name: b}\nstatus: {allocatable: {nvidia.com/gpu: \"1\"}}\n";
    const char *a = "# comment\n\napiVersion: v1\nkind: Node\nmetadata: {name: a2}\n"
                    "status: {allocatable: {nvidia.com/gpu: \"1\"}}\n"
                    "---\napiVersion: v1\nkind: Node\nmetadata: {name: a1}\nstatus: {allocatable: {nvidia.com/gpu: \"1\"}}\n";
    assert_int_equal(gs_snapshot_read_buffer(&s, "b.yaml", b, strlen(b), NULL, &err), 0);
    assert_int_equal(gs_snapshot_read_buffer(&s, "a.yaml", a, strlen(a), NULL, &err), 0);
    assert_int_equal(gs_snapshot_finish(&s, &err), 0);
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    gs_check_result r;
    assert_int_equal(gs_check_run(&s, &cfg, &r, &err), 0);
    assert_true(r.nfindings >= 6);
    for (uint32_t i = 1; i < r.nfindings; i++) {
        const gs_finding *p = &r.findings[i - 1], *q = &r.findings[i];
        int cmp = strcmp(p->src.file, q->src.file);
        if (!cmp)
            cmp = p->src.line < q->src.line ? -1 : p->src.line > q->src.line;
        if (!cmp)
            cmp = strcmp(p->rule->id, q->rule->id);
        assert_true(cmp <= 0);
    }
    assert_string_equal(r.findings[0].name, "a2");
    assert_string_equal(r.findings[r.nfindings - 1].name, "b");
    gs_check_result_free(&r);
    gs_snapshot_free(&s);

    /* an empty input checks nothing and finds nothing */
    gs_snapshot_init(&s);
    assert_int_equal(gs_snapshot_finish(&s, &err), 0);
    assert_int_equal(gs_check_run(&s, &cfg, &r, &err), 0);
    assert_int_equal(r.nfindings, 0);
    assert_int_equal(r.objects, 0);
    gs_check_result_free(&r);
    gs_snapshot_free(&s);
    gs_check_config_free(&cfg);
}

/* ---------------------------------------------------------------- threads */
typedef struct run_arg {
    const gs_snapshot *snap;
    const gs_check_config *cfg;
    uint32_t nfindings;
    uint64_t digest;
    int rc;
} run_arg;

static void *run_many(void *p)
{
    run_arg *a = p;
    for (int k = 0; k < 20; k++) {
        gs_check_result r;
        gs_error err;
        a->rc |= gs_check_run(a->snap, a->cfg, &r, &err);
        uint64_t h = 0;
        for (uint32_t i = 0; i < r.nfindings; i++)
            h = h * 31 + gs_hash_bytes(r.findings[i].message, strlen(r.findings[i].message));
        a->nfindings = r.nfindings;
        a->digest = h;
        gs_check_result_free(&r);
    }
    return NULL;
}

static void test_concurrent_runs(void **state)
{
    (void)state;
    checked c;
    check_text(&c, NODE_A100_TAINTED
                   "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml, annotations: {gpusched.io/gpu-model: "
                   "\"A100|H100\", gpusched.io/gpu-count: \"2\"}}\nspec: {containers: [{name: c}]}\n"
                   "---\napiVersion: v1\nkind: Pod\nmetadata: {name: q, namespace: ml}\n"
                   "spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 16}}}]}\n");
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    run_arg args[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (run_arg){&c.snap, &cfg, 0, 0, 0};
        assert_int_equal(pthread_create(&th[i], NULL, run_many, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(args[i].rc, 0);
        assert_int_equal(args[i].nfindings, c.res.nfindings);
        assert_true(args[i].digest == args[0].digest);
    }
    gs_check_config_free(&cfg);
    checked_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_config_defaults_and_file),
        cmocka_unit_test(test_config_single_quotes),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_config_duplicates_large),
        cmocka_unit_test(test_suppressions),
        cmocka_unit_test(test_owned_pods_are_not_repeated),
        cmocka_unit_test(test_config_in_run),
        cmocka_unit_test(test_order_and_empty),
        cmocka_unit_test(test_concurrent_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
