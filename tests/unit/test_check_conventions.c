/*
 * test_check_conventions.c - the rules as the peers' own conventions meet them: KAI-Scheduler
 * (schedulerName kai-scheduler, the kai.scheduler/queue and runai/queue labels, the
 * priorityClassName label, the gpu-fraction annotation), HAMi (nvidia.com/gpumem pods left
 * to HAMi's webhook with the default scheduler), and the device plugin's sample pod checked
 * alone (no nodes). Fixtures: tests/data/check/ (written here, in the shapes the peers'
 * docs publish) and inline YAML.
 *
 *   GS012  HAMi pod with default-scheduler: warning while HAMi's webhook rewrites it
 *          (config hami.forceOverwriteDefaultScheduler, default true), else error
 *   GS016  without GPU nodes in the input: a warning naming the assumed taint
 *   GS021  namespaces whose uncovered GPU workloads all run under KAI: info naming queues
 *   GS023  the priorityClassName label of a KAI workload is its priority class
 */
#include <unistd.h>

#include "test_check_util.h"

#define POD(name, ns, meta, spec)                                                                     \
    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: " name ", namespace: " ns meta "}\nspec:\n" spec
#define GPU1 "  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n"
#define HAMI "  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 3000}}}]\n"

static char *read_data(const char *name)
{
    const char *dir = getenv("GS_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/check/%s", dir ? dir : "tests/data", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        print_error("cannot open %s\n", path);
    assert_non_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

static void check_file(checked *c, const char *name, const gs_check_config *cfg)
{
    char *text = read_data(name);
    check_text_cfg(c, text, cfg);
    free(text);
}

static uint32_t count_at_least(const checked *c, gs_severity sev)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->res.nfindings; i++)
        n += c->res.findings[i].severity >= sev;
    return n;
}

/* ---------------------------------------------------------------- GS016 */
static void test_device_plugin_sample_alone(void **state)
{
    (void)state;
    checked c;
    check_file(&c, "device-plugin-pod.yaml", NULL);
    assert_rule(&c, "GS016", "cuda-vectoradd", 1);
    const gs_finding *f = find_rule(&c, "GS016", "cuda-vectoradd");
    assert_int_equal(f->severity, GS_SEV_WARNING);
    assert_non_null(strstr(f->message, "no GPU node is in the input"));
    assert_non_null(strstr(f->message, "nvidia.com/gpu:NoSchedule"));
    assert_non_null(strstr(f->message, "the NVIDIA GPU Operator and device plugin do not"));
    /* nothing at error level: `gpusched check` exits 0 with the default --fail-on */
    if (count_at_least(&c, GS_SEV_ERROR))
        dump(&c);
    assert_int_equal(count_at_least(&c, GS_SEV_ERROR), 0);
    checked_free(&c);

    /* a lower configured severity still applies; a higher one does not lift the variant */
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    cfg.has_severity[15] = true;
    cfg.severity[15] = GS_SEV_INFO;
    check_file(&c, "device-plugin-pod.yaml", &cfg);
    assert_int_equal(find_rule(&c, "GS016", NULL)->severity, GS_SEV_INFO);
    checked_free(&c);
    cfg.severity[15] = GS_SEV_ERROR;
    check_file(&c, "device-plugin-pod.yaml", &cfg);
    assert_int_equal(find_rule(&c, "GS016", NULL)->severity, GS_SEV_WARNING);
    checked_free(&c);
    gs_check_config_free(&cfg);

    /* with a tainted GPU node in the input the taint is a fact: still an error */
    check_text(&c, NODE_A100_TAINTED POD("cuda-vectoradd", "default", "", GPU1));
    assert_rule(&c, "GS016", "cuda-vectoradd", 1);
    assert_int_equal(find_rule(&c, "GS016", NULL)->severity, GS_SEV_ERROR);
    checked_free(&c);
    /* a GPU node as the device plugin leaves it (no taint): nothing to tolerate */
    check_text(&c, "apiVersion: v1\nkind: Node\nmetadata: {name: g}\n"
                   "status: {allocatable: {nvidia.com/gpu: \"8\"}}\n" POD("cuda-vectoradd", "default", "", GPU1));
    assert_rule(&c, "GS016", NULL, 0);
    checked_free(&c);
}

/* ---------------------------------------------------------------- KAI */
static void test_kai_priority_label_and_queues(void **state)
{
    (void)state;
    checked c;
    check_file(&c, "kai-workloads.yaml", NULL);
    /* priorityClassName labels (pod, workload) are KAI's priority classes */
    assert_rule(&c, "GS023", NULL, 0);
    assert_rule(&c, "GS012", NULL, 0);
    /* the namespace's GPU quota is KAI's queue: information, naming it */
    assert_rule(&c, "GS021", "team-a", 1);
    const gs_finding *f = find_rule(&c, "GS021", "team-a");
    assert_int_equal(f->severity, GS_SEV_INFO);
    assert_non_null(strstr(f->message, "Pod/train-pod in queue team-a"));
    assert_non_null(strstr(f->message, "KAI enforces GPU quota through its Queues"));
    checked_free(&c);

    check_text(&c,
               /* KAI by schedulerName only: the default queue; no label: GS023 says where to put it */
               POD("bare", "ml", "", "  schedulerName: kai-scheduler\n" GPU1)
               /* the label means nothing to kube-scheduler */
               POD("plain", "other", ", labels: {priorityClassName: train}", GPU1)
               /* runai/queue (KAI's older label) with the default scheduler: still KAI's queue */
               POD("old", "legacy", ", labels: {runai/queue: research, priorityClassName: train}", GPU1)
               /* the label on a workload, not its template */
               "---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: ml, labels: "
               "{priorityClassName: train, kai.scheduler/queue: ml}}\n"
               "spec:\n  template:\n    spec:\n      schedulerName: kai-scheduler\n      restartPolicy: Never\n"
               "      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 2}}}]\n");
    assert_rule(&c, "GS023", "bare", 1);
    assert_non_null(strstr(find_rule(&c, "GS023", "bare")->message, "label priorityClassName"));
    assert_rule(&c, "GS023", "plain", 1);
    assert_null(strstr(find_rule(&c, "GS023", "plain")->message, "KAI"));
    assert_rule(&c, "GS023", "old", 0);
    assert_rule(&c, "GS023", "j", 0);
    f = find_rule(&c, "GS021", "ml");
    assert_non_null(f);
    assert_int_equal(f->severity, GS_SEV_INFO);
    assert_non_null(strstr(f->message, "Pod/bare in KAI's default queue"));
    assert_non_null(strstr(f->message, "Job/j in queue ml"));
    assert_int_equal(find_rule(&c, "GS021", "legacy")->severity, GS_SEV_INFO);
    assert_non_null(strstr(find_rule(&c, "GS021", "legacy")->message, "queue research"));
    assert_int_equal(find_rule(&c, "GS021", "other")->severity, GS_SEV_WARNING);
    checked_free(&c);

    /* a namespace that also runs pods kube-scheduler places keeps its warning, about them */
    check_text(&c, POD("kai", "mixed", ", labels: {kai.scheduler/queue: q}", "  schedulerName: kai-scheduler\n" GPU1)
                   POD("vanilla", "mixed", "", GPU1));
    assert_rule(&c, "GS021", "mixed", 1);
    f = find_rule(&c, "GS021", "mixed");
    assert_int_equal(f->severity, GS_SEV_WARNING);
    assert_non_null(strstr(f->message, "(Pod/vanilla)"));
    assert_null(strstr(f->message, "Pod/kai"));
    checked_free(&c);

    /* KAI's gpu-fraction with the default scheduler is still an error (no webhook helps) */
    check_text(&c, POD("frac", "ml", ", annotations: {gpu-fraction: \"0.5\"}", "  containers: [{name: c}]\n"));
    assert_rule(&c, "GS012", "frac", 1);
    assert_int_equal(find_rule(&c, "GS012", "frac")->severity, GS_SEV_ERROR);
    checked_free(&c);
}

/* ---------------------------------------------------------------- HAMi */
static void test_hami_default_scheduler(void **state)
{
    (void)state;
    checked c;
    check_file(&c, "hami-vgpu.yaml", NULL);
    assert_rule(&c, "GS012", "gpu-pod", 1);
    assert_rule(&c, "GS012", "infer", 1);
    const gs_finding *f = find_rule(&c, "GS012", "gpu-pod");
    assert_int_equal(f->severity, GS_SEV_WARNING);
    assert_non_null(strstr(f->message, "HAMi's admission webhook"));
    assert_non_null(strstr(f->message, "forceOverwriteDefaultScheduler"));
    assert_int_equal(count_at_least(&c, GS_SEV_ERROR), 0);
    checked_free(&c);

    /* an install whose webhook leaves default-scheduler alone: the pod never runs */
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    gs_error err;
    gs_error_clear(&err);
    const char *yaml = "hami: {forceOverwriteDefaultScheduler: false}\n";
    assert_int_equal(gs_check_config_parse(&cfg, "c.yaml", yaml, strlen(yaml), &err), 0);
    assert_false(cfg.hami_overwrites_default_scheduler);
    check_file(&c, "hami-vgpu.yaml", &cfg);
    f = find_rule(&c, "GS012", "gpu-pod");
    assert_int_equal(f->severity, GS_SEV_ERROR);
    assert_non_null(strstr(f->message, "hami.forceOverwriteDefaultScheduler false"));
    checked_free(&c);
    gs_check_config_free(&cfg);

    /* the webhook's selectors skip pods and namespaces labelled hami.io/webhook=ignore;
     * another scheduler name is never rewritten */
    check_text(&c, "apiVersion: v1\nkind: Namespace\nmetadata: {name: skip, labels: {hami.io/webhook: ignore}}\n"
                   POD("ns", "skip", "", HAMI)
                   POD("pod", "ml", ", labels: {hami.io/webhook: ignore}", HAMI)
                   POD("volcano", "ml", "", "  schedulerName: volcano\n" HAMI)
                   POD("ok", "ml", "", "  schedulerName: hami-scheduler\n" HAMI)
                   POD("rewritten", "ml", ", labels: {hami.io/webhook: enabled}", HAMI));
    assert_int_equal(find_rule(&c, "GS012", "ns")->severity, GS_SEV_ERROR);
    assert_non_null(strstr(find_rule(&c, "GS012", "ns")->message, "hami.io/webhook=ignore"));
    assert_int_equal(find_rule(&c, "GS012", "pod")->severity, GS_SEV_ERROR);
    assert_int_equal(find_rule(&c, "GS012", "volcano")->severity, GS_SEV_ERROR);
    assert_rule(&c, "GS012", "ok", 0);
    assert_int_equal(find_rule(&c, "GS012", "rewritten")->severity, GS_SEV_WARNING);
    checked_free(&c);
}

/* ---------------------------------------------------------------- priority resolution */
/* The checker resolves priorities with gs_priority_resolve: a pod without a class gets
 * the global default's preemptionPolicy (GS025 missed a default class with Never). */
static void test_default_class_policy(void **state)
{
    (void)state;
    checked c;
    check_text(&c, "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: calm}\n"
                   "value: 1000\nglobalDefault: true\npreemptionPolicy: Never\n"
                   "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: batch-training}\n"
                   "value: 10\n"
                   POD("serving", "ml", ", labels: {gpusched.io/role: inference}", GPU1)
                   POD("trainer", "ml", ", labels: {gpusched.io/role: training}",
                       "  priorityClassName: batch-training\n" GPU1));
    assert_rule(&c, "GS025", "serving", 1);
    assert_non_null(strstr(find_rule(&c, "GS025", "serving")->message, "preemption policy is Never"));
    checked_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_plugin_sample_alone),
        cmocka_unit_test(test_kai_priority_label_and_queues),
        cmocka_unit_test(test_hami_default_scheduler),
        cmocka_unit_test(test_default_class_policy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
