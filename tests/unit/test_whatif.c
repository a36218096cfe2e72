/* test_whatif.c - what-if overrides on a snapshot (report.h part 3): the GPU taint added
 * and stripped, tolerations for GPU pods, CPU-only nodes dropped, the workload scaled,
 * PriorityClass values, and the parsers of their command-line values; plus the effect of
 * the taint on a replay (CPU-only pods stay off GPU nodes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpusched/gpu.h"
#include "gpusched/report.h"
#include "test_snapshot_util.h"

static const gs_node *node(const gs_snapshot *s, const char *name)
{
    for (uint32_t i = 0; i < s->nodes.n; i++)
        if (strcmp(s->nodes.v[i].meta.name, name) == 0)
            return &s->nodes.v[i];
    return NULL;
}

static const gs_pod *pod(const gs_snapshot *s, const char *name)
{
    for (uint32_t i = 0; i < s->pods.n; i++)
        if (strcmp(s->pods.v[i].meta.name, name) == 0)
            return &s->pods.v[i];
    return NULL;
}

static bool has_taint(const gs_node *n, const char *key, gs_effect e)
{
    for (uint32_t i = 0; i < n->ntaints; i++)
        if (strcmp(n->taints[i].key, key) == 0 && n->taints[i].effect == e)
            return true;
    return false;
}

#define GPU_NODE(name, extra)                                                              \
    "apiVersion: v1\nkind: Node\nmetadata: {name: " name "}\nspec:\n" extra                  \
    "status:\n  allocatable: {cpu: \"16\", memory: 64Gi, pods: \"110\", nvidia.com/gpu: "   \
    "\"2\"}\n---\n"
#define CPU_NODE(name)                                                                     \
    "apiVersion: v1\nkind: Node\nmetadata: {name: " name "}\nstatus:\n  allocatable: {cpu: " \
    "\"16\", memory: 64Gi, pods: \"110\"}\n---\n"
#define GPOD(name, extra)                                                                  \
    "apiVersion: v1\nkind: Pod\nmetadata: {name: " name "}\nspec:\n" extra                   \
    "  containers:\n  - {name: c, resources: {limits: {cpu: \"2\", nvidia.com/gpu: \"1\"}}}\n" \
    "---\n"
#define CPOD(name, extra)                                                                  \
    "apiVersion: v1\nkind: Pod\nmetadata: {name: " name "}\nspec:\n" extra                   \
    "  containers:\n  - {name: c, resources: {requests: {cpu: \"2\"}}}\n---\n"

static const char base_yaml[] =
    GPU_NODE("g1", "")
    GPU_NODE("g2", "  taints:\n  - {key: nvidia.com/gpu, value: present, effect: NoSchedule}\n"
                   "  - {key: team, value: a, effect: NoSchedule}\n")
    CPU_NODE("c1")
    GPOD("gpu-plain", "")
    GPOD("gpu-tol", "  tolerations:\n  - {key: nvidia.com/gpu, operator: Exists}\n")
    CPOD("cpu-only", "")
    "apiVersion: v1\nkind: Pod\nmetadata: {name: share, annotations: {gpu-milli: \"500\", "
    "gpu-count: \"1\"}}\nspec:\n  containers:\n  - {name: c}\n---\n";

static void test_taint_add(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, base_yaml);
    gs_whatif w;
    memset(&w, 0, sizeof w);
    w.gpu_taint = GS_TAINT_ADD;
    w.tolerate_gpu_pods = true;
    gs_whatif_stats st;
    gs_error err;
    assert_int_equal(gs_whatif_apply(&s, &w, &st, &err), 0);
    const gs_node *g1 = node(&s, "g1"), *g2 = node(&s, "g2"), *c1 = node(&s, "c1");
    assert_true(has_taint(g1, "nvidia.com/gpu", GS_EFFECT_NO_SCHEDULE));
    assert_string_equal(g1->taints[g1->ntaints - 1].value, "true");
    assert_int_equal(g2->ntaints, 2); /* already tainted with the key: unchanged */
    assert_int_equal(c1->ntaints, 0); /* CPU nodes keep no taint */
    assert_int_equal(st.nodes_tainted, 1);
    /* GPU pods in every convention get a toleration; CPU-only and tolerating pods do not */
    const gs_pod *plain = pod(&s, "gpu-plain"), *tol = pod(&s, "gpu-tol"),
                 *cpu = pod(&s, "cpu-only"), *share = pod(&s, "share");
    assert_int_equal(plain->ntolerations, 1);
    assert_string_equal(plain->tolerations[0].key, "nvidia.com/gpu");
    assert_int_equal(plain->tolerations[0].op, GS_TOL_EXISTS);
    assert_int_equal(plain->tolerations[0].effect, GS_EFFECT_NO_SCHEDULE);
    assert_int_equal(tol->ntolerations, 1);
    assert_int_equal(cpu->ntolerations, 0);
    assert_int_equal(share->ntolerations, 1);
    assert_int_equal(st.pods_tolerating, 2);
    gs_snapshot_free(&s);

    /* add-only: tolerations unchanged; a custom key */
    load(&s, base_yaml);
    memset(&w, 0, sizeof w);
    w.gpu_taint = GS_TAINT_ADD;
    w.taint_key = "example.com/gpu";
    w.taint_value = "yes";
    assert_int_equal(gs_whatif_apply(&s, &w, &st, &err), 0);
    assert_true(has_taint(node(&s, "g2"), "example.com/gpu", GS_EFFECT_NO_SCHEDULE));
    assert_int_equal(node(&s, "g2")->ntaints, 3);
    assert_int_equal(st.nodes_tainted, 2);
    assert_int_equal(pod(&s, "gpu-plain")->ntolerations, 0);
    gs_snapshot_free(&s);
}

static void test_taint_strip(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, base_yaml);
    gs_whatif w;
    memset(&w, 0, sizeof w);
    w.gpu_taint = GS_TAINT_STRIP;
    gs_whatif_stats st;
    gs_error err;
    assert_int_equal(gs_whatif_apply(&s, &w, &st, &err), 0);
    const gs_node *g2 = node(&s, "g2");
    assert_int_equal(g2->ntaints, 1);
    assert_string_equal(g2->taints[0].key, "team"); /* other keys stay */
    assert_int_equal(st.nodes_untainted, 1);
    assert_int_equal(pod(&s, "gpu-tol")->ntolerations, 1); /* tolerations unchanged */
    gs_snapshot_free(&s);
}

static void test_drop_cpu_nodes(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, GPU_NODE("g1", "") CPU_NODE("c1") CPU_NODE("c2")
             "apiVersion: v1\nkind: Pod\nmetadata: {name: bound}\nspec:\n  nodeName: c1\n"
             "  containers:\n  - {name: c}\n---\n"
             "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent}\nspec:\n  selector:\n"
             "    matchLabels: {app: agent}\n  template:\n    metadata:\n      labels: {app: agent}\n"
             "    spec:\n      containers:\n      - {name: a}\n");
    assert_int_equal(s.pods.n, 4); /* bound + 3 DaemonSet pods */
    gs_whatif w;
    memset(&w, 0, sizeof w);
    w.drop_cpu_nodes = true;
    gs_whatif_stats st;
    gs_error err;
    assert_int_equal(gs_whatif_apply(&s, &w, &st, &err), 0);
    assert_int_equal(s.nodes.n, 1);
    assert_non_null(node(&s, "g1"));
    assert_int_equal(st.cpu_nodes_dropped, 2);
    assert_int_equal(st.pods_unbound, 1);
    assert_string_equal(pod(&s, "bound")->node_name, "");
    assert_int_equal(st.pods_dropped, 2); /* the DaemonSet pods of c1 and c2 */
    assert_int_equal(s.pods.n, 2);
    gs_snapshot_free(&s);
}

static void test_scale(void **state)
{
    (void)state;
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_strbuf_puts(&sb, GPU_NODE("g1", "")
                   "apiVersion: v1\nkind: Pod\nmetadata: {name: bound}\nspec:\n  nodeName: g1\n"
                   "  containers:\n  - {name: c}\n---\n");
    for (int i = 0; i < 6; i++)
        gs_strbuf_printf(&sb, "apiVersion: v1\nkind: Pod\nmetadata: {name: p%d, annotations: "
                              "{gpusched.io/arrival: \"%d\"}}\nspec:\n  containers:\n  - {name: c}\n---\n",
                         i, 10 * i);
    const struct {
        uint32_t num, den;
        const char *names; /* pods after scaling, in order */
    } cases[] = {
        {1, 2, "bound p0 p2 p4"},
        {2, 1, "bound p0 p0-x1 p1 p1-x1 p2 p2-x1 p3 p3-x1 p4 p4-x1 p5 p5-x1"},
        {3, 2, "bound p0 p0-x1 p1 p2 p2-x1 p3 p4 p4-x1 p5"},
        {1, 3, "bound p0 p3"},
        {1, 1, "bound p0 p1 p2 p3 p4 p5"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        gs_snapshot s;
        load(&s, sb.buf);
        gs_whatif w;
        memset(&w, 0, sizeof w);
        w.scale_num = cases[c].num;
        w.scale_den = cases[c].den;
        gs_error err;
        assert_int_equal(gs_whatif_apply(&s, &w, NULL, &err), 0);
        gs_strbuf got = GS_STRBUF_INIT;
        for (uint32_t i = 0; i < s.pods.n; i++)
            gs_strbuf_printf(&got, "%s%s", i ? " " : "", s.pods.v[i].meta.name);
        assert_string_equal(gs_strbuf_cstr(&got), cases[c].names);
        /* clones keep the annotations (arrival) */
        const gs_pod *clone = pod(&s, "p2-x1");
        if (clone)
            assert_string_equal(gs_labels_get(&clone->meta.annotations, "gpusched.io/arrival"), "20");
        gs_strbuf_free(&got);
        gs_snapshot_free(&s);
    }
    gs_strbuf_free(&sb);
}

static void test_classes(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: web}\n"
             "value: 1000\n---\n"
             "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  priorityClassName: web\n"
             "  priority: 1000\n  containers:\n  - {name: c}\n---\n"
             "apiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec:\n  priorityClassName: web\n"
             "  containers:\n  - {name: c}\n");
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_class_value *cv;
    uint32_t n;
    gs_error err;
    assert_int_equal(gs_whatif_parse_classes("web=5,training=-7", &a, &cv, &n, &err), 0);
    assert_int_equal(n, 2);
    gs_whatif w;
    memset(&w, 0, sizeof w);
    w.classes = cv;
    w.nclasses = n;
    gs_whatif_stats st;
    assert_int_equal(gs_whatif_apply(&s, &w, &st, &err), 0);
    assert_int_equal(s.priority_classes.n, 2);
    assert_int_equal(s.priority_classes.v[0].value, 5);
    assert_string_equal(s.priority_classes.v[1].meta.name, "training");
    assert_int_equal(s.priority_classes.v[1].value, -7);
    assert_int_equal(pod(&s, "a")->priority, 5);
    assert_int_equal(st.pods_reprioritised, 1);
    assert_int_equal(st.classes_changed, 2);
    /* the engine resolves b's priority from the class */
    gs_config cfg;
    gs_config_defaults(&cfg);
    gs_cluster *c = gs_cluster_new(&s, &cfg, &err);
    assert_non_null(c);
    assert_int_equal(gs_schedule_run(c, &err), 0);
    uint32_t b = (uint32_t)(pod(&s, "b") - s.pods.v);
    assert_int_equal(gs_cluster_decision_for_pod(c, b)->priority, 5);
    gs_cluster_free(c);
    gs_snapshot_free(&s);
    assert_int_equal(gs_whatif_parse_classes("web", &a, &cv, &n, &err), -1);
    assert_int_equal(gs_whatif_parse_classes("web=x", &a, &cv, &n, &err), -1);
    assert_int_equal(gs_whatif_parse_classes("web=1,", &a, &cv, &n, &err), -1);
    assert_int_equal(gs_whatif_parse_classes("=1", &a, &cv, &n, &err), -1);
    assert_int_equal(err.code, GS_ERR_USAGE);
    gs_arena_free(&a);
}

static int64_t res_value(const gs_reslist *l, const char *name)
{
    const gs_quantity *q = gs_reslist_get(l, name);
    return q ? gs_quantity_value(q) : -1;
}

/* --mig-config: nodes that use MIG get the config on every GPU, advertised as the mixed
 * strategy does; whole-GPU nodes of MIG-capable models are left alone. */
static void test_mig_config(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, "apiVersion: v1\nkind: Node\nmetadata:\n  name: mixed\n  labels: {nvidia.com/gpu.product: "
             "NVIDIA-H100-80GB-HBM3, nvidia.com/gpu.count: \"2\", nvidia.com/mig.strategy: mixed, "
             "nvidia.com/mig.config: all-1g.10gb, nvidia.com/mig-1g.10gb.count: \"14\"}\nstatus:\n"
             "  allocatable: {cpu: \"64\", memory: 512Gi, pods: \"110\", nvidia.com/mig-1g.10gb: "
             "\"14\"}\n  capacity: {cpu: \"64\", memory: 512Gi, pods: \"110\", "
             "nvidia.com/mig-1g.10gb: \"14\"}\n---\n"
             "apiVersion: v1\nkind: Node\nmetadata:\n  name: single\n  labels: {nvidia.com/gpu.product: "
             "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb, nvidia.com/gpu.count: \"7\", nvidia.com/gpu.memory: "
             "\"4864\", nvidia.com/mig.strategy: single}\nstatus:\n  allocatable: {cpu: \"64\", "
             "memory: 512Gi, pods: \"110\", nvidia.com/gpu: \"7\"}\n---\n"
             "apiVersion: v1\nkind: Node\nmetadata:\n  name: whole\n  labels: {nvidia.com/gpu.product: "
             "NVIDIA-A100-SXM4-80GB}\nstatus:\n  allocatable: {cpu: \"64\", memory: 512Gi, pods: "
             "\"110\", nvidia.com/gpu: \"8\"}\n---\n");
    gs_whatif w;
    memset(&w, 0, sizeof w);
    w.mig_config = "all-balanced";
    gs_whatif_stats st;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_whatif_apply(&s, &w, &st, &err), 0);
    assert_int_equal(st.nodes_mig_configured, 2);
    const gs_node *m = node(&s, "mixed");
    assert_int_equal(res_value(&m->allocatable, "nvidia.com/mig-1g.10gb"), 4);
    assert_int_equal(res_value(&m->allocatable, "nvidia.com/mig-2g.20gb"), 2);
    assert_int_equal(res_value(&m->allocatable, "nvidia.com/mig-3g.40gb"), 2);
    assert_int_equal(res_value(&m->capacity, "nvidia.com/mig-3g.40gb"), 2);
    assert_int_equal(res_value(&m->allocatable, "cpu"), 64);
    assert_string_equal(gs_labels_get(&m->meta.labels, "nvidia.com/mig.config"), "all-balanced");
    assert_null(gs_labels_get(&m->meta.labels, "nvidia.com/mig-1g.10gb.count"));
    /* the single-strategy node: one A100-40GB now mixed, its product label plain */
    const gs_node *sg = node(&s, "single");
    assert_int_equal(res_value(&sg->allocatable, "nvidia.com/gpu"), -1);
    assert_int_equal(res_value(&sg->allocatable, "nvidia.com/mig-1g.5gb"), 2);
    assert_string_equal(gs_labels_get(&sg->meta.labels, "nvidia.com/gpu.product"),
                        "NVIDIA-A100-SXM4-40GB");
    assert_string_equal(gs_labels_get(&sg->meta.labels, "nvidia.com/mig.strategy"), "mixed");
    assert_null(gs_labels_get(&sg->meta.labels, "nvidia.com/gpu.memory"));
    /* the whole-GPU node keeps its 8 GPUs */
    const gs_node *wh = node(&s, "whole");
    assert_int_equal(res_value(&wh->allocatable, "nvidia.com/gpu"), 8);
    assert_null(gs_labels_get(&wh->meta.labels, "nvidia.com/mig.config"));
    /* the engine reads the new layouts: 2 GPUs of {3g,2g,1g,1g} */
    gs_node_gpus g;
    assert_int_equal(gs_node_gpus_build(m, &g, &err), 0);
    assert_int_equal(g.ndevs, 2);
    assert_int_equal(g.nmig, 8);
    gs_node_gpus_free(&g);
    assert_int_equal(gs_node_gpus_build(sg, &g, &err), 0);
    assert_int_equal(g.mig_strategy, GS_MIG_MIXED);
    assert_int_equal(g.ndevs, 1);
    gs_node_gpus_free(&g);
    /* a config the model does not have: an error naming the node */
    gs_snapshot s2;
    load(&s2, "apiVersion: v1\nkind: Node\nmetadata:\n  name: mixed\n  labels: {nvidia.com/gpu.product: "
              "NVIDIA-H100-80GB-HBM3, nvidia.com/mig.strategy: mixed}\nstatus:\n  allocatable: "
              "{nvidia.com/mig-1g.10gb: \"7\"}\n");
    w.mig_config = "all-1g.5gb";
    assert_int_equal(gs_whatif_apply(&s2, &w, &st, &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_non_null(strstr(err.msg, "node mixed"));
    gs_snapshot_free(&s2);
    gs_snapshot_free(&s);
}

/* --mig-config label: what mig-manager would apply from each node's own label. */
static void test_mig_config_label(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, "apiVersion: v1\nkind: Node\nmetadata:\n  name: wedged\n  labels: {nvidia.com/gpu.product: "
             "NVIDIA-H100-80GB-HBM3, nvidia.com/mig.strategy: mixed, nvidia.com/mig.config: "
             "all-3g.40gb, nvidia.com/mig.config.state: failed}\nstatus:\n  allocatable: "
             "{nvidia.com/mig-1g.10gb: \"7\"}\n---\n"
             "apiVersion: v1\nkind: Node\nmetadata:\n  name: unlabelled\n  labels: {nvidia.com/gpu.product: "
             "NVIDIA-H100-80GB-HBM3, nvidia.com/mig.strategy: mixed}\nstatus:\n  allocatable: "
             "{nvidia.com/mig-1g.10gb: \"7\"}\n---\n");
    gs_whatif w;
    memset(&w, 0, sizeof w);
    w.mig_config = GS_WHATIF_MIG_LABEL;
    gs_whatif_stats st;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_whatif_apply(&s, &w, &st, &err), 0);
    assert_int_equal(st.nodes_mig_configured, 1);
    const gs_node *a = node(&s, "wedged");
    assert_int_equal(res_value(&a->allocatable, "nvidia.com/mig-3g.40gb"), 2);
    assert_int_equal(res_value(&a->allocatable, "nvidia.com/mig-1g.10gb"), -1);
    const gs_node *b = node(&s, "unlabelled");
    assert_int_equal(res_value(&b->allocatable, "nvidia.com/mig-1g.10gb"), 7);
    gs_snapshot_free(&s);
}

static void test_parse_scale(void **state)
{
    (void)state;
    const struct {
        const char *s;
        uint32_t num, den;
    } ok[] = {{"0.5", 1, 2}, {"x2", 2, 1}, {"2", 2, 1},   {"1.25", 5, 4},
              {"3/4", 3, 4}, {"X1", 1, 1}, {"1000", 1000, 1}, {"0.000001", 1, 1000000}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint32_t n, d;
        gs_error err;
        assert_int_equal(gs_whatif_parse_scale(ok[i].s, &n, &d, &err), 0);
        assert_int_equal(n, ok[i].num);
        assert_int_equal(d, ok[i].den);
    }
    const char *bad[] = {"0", "-1", "abc", "1001", "0.0000001", "", "x", "1/0", "1.2.3", " 1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint32_t n, d;
        gs_error err;
        assert_int_equal(gs_whatif_parse_scale(bad[i], &n, &d, &err), -1);
        assert_int_equal(err.code, GS_ERR_USAGE);
    }
}

static void test_parse_qos(void **state)
{
    (void)state;
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_qos_class *q;
    uint32_t n;
    gs_error err;
    assert_int_equal(gs_whatif_parse_qos_map("BE=batch:50,Guaranteed=gold:20000", &a, &q, &n, &err), 0);
    assert_int_equal(n, 5); /* the 4 defaults, BE replaced, Guaranteed added */
    bool be = false, gold = false, ls = false;
    for (uint32_t i = 0; i < n; i++) {
        if (strcmp(q[i].qos, "BE") == 0) {
            be = true;
            assert_string_equal(q[i].class_name, "batch");
            assert_int_equal(q[i].value, 50);
        }
        if (strcmp(q[i].qos, "Guaranteed") == 0)
            gold = q[i].value == 20000;
        if (strcmp(q[i].qos, "LS") == 0)
            ls = strcmp(q[i].class_name, "latency-sensitive") == 0;
    }
    assert_true(be && gold && ls);
    /* the table drives the openb converter */
    static const char pods[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,qos\n"
                               "a,1000,1024,0,0,BE\nb,1000,1024,0,0,Guaranteed\nc,1000,1024,0,0,X\n";
    gs_openb t;
    gs_openb_init(&t);
    assert_int_equal(gs_openb_parse_pods(&t, "p.csv", pods, strlen(pods), NULL, &err), 0);
    gs_snapshot s;
    gs_snapshot_init(&s);
    gs_openb_pod_opts po;
    gs_openb_pod_opts_defaults(&po);
    po.qos = q;
    po.nqos = n;
    assert_int_equal(gs_openb_add_pods(&s, &t, &po, &err), 0);
    assert_int_equal(gs_snapshot_finish(&s, &err), 0);
    assert_string_equal(pod(&s, "a")->priority_class_name, "batch");
    assert_string_equal(pod(&s, "b")->priority_class_name, "gold");
    assert_string_equal(pod(&s, "c")->priority_class_name, "burstable");
    gs_snapshot_free(&s);
    gs_openb_free(&t);
    const char *bad[] = {"BE", "BE=x", "BE=x:", "=x:1", "BE=:1", "BE=x:y", "BE=x:1,"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(gs_whatif_parse_qos_map(bad[i], &a, &q, &n, &err), -1);
        assert_int_equal(err.code, GS_ERR_USAGE);
    }
    gs_arena_free(&a);
}

/* The incident in miniature: without the taint the CPU-only pod lands on the roomy GPU
 * node, strands half of its GPUs and blocks training; with it, the pod goes to the CPU
 * node. */
static void test_taint_replay(void **state)
{
    (void)state;
    static const char yaml[] =
        "apiVersion: v1\nkind: Node\nmetadata: {name: gpu}\nstatus:\n  allocatable: {cpu: "
        "\"64\", memory: 512Gi, pods: \"110\", nvidia.com/gpu: \"4\"}\n---\n"
        "apiVersion: v1\nkind: Node\nmetadata: {name: cpu}\nstatus:\n  allocatable: {cpu: "
        "\"32\", memory: 64Gi, pods: \"110\"}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - {name: c, "
        "resources: {requests: {cpu: \"30\", memory: 8Gi}}}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: train, annotations: {gpusched.io/arrival: "
        "\"10\"}}\nspec:\n  containers:\n  - {name: c, resources: {limits: {cpu: \"40\", "
        "nvidia.com/gpu: \"4\"}}}\n";
    for (int tainted = 0; tainted < 2; tainted++) {
        gs_snapshot s;
        load(&s, yaml);
        gs_whatif w;
        memset(&w, 0, sizeof w);
        w.gpu_taint = tainted ? GS_TAINT_ADD : GS_TAINT_KEEP;
        w.tolerate_gpu_pods = true;
        gs_error err;
        assert_int_equal(gs_whatif_apply(&s, &w, NULL, &err), 0);
        int64_t arr[2], dur[2];
        assert_int_equal(gs_trace_times(&s, arr, dur, &err), 0);
        gs_replay_opts o;
        gs_replay_opts_defaults(&o);
        gs_replay_result res;
        assert_int_equal(gs_replay_run(&s, arr, dur, &o, &res, &err), 0);
        const gs_replay_pod *web = &res.pods[pod(&s, "web") - s.pods.v];
        const gs_replay_pod *train = &res.pods[pod(&s, "train") - s.pods.v];
        assert_string_equal(s.nodes.v[web->node].meta.name, tainted ? "cpu" : "gpu");
        assert_int_equal(train->state, tainted ? GS_RP_RUNNING : GS_RP_PENDING);
        uint32_t stranded = 0;
        for (uint32_t i = 0; i < res.nsamples; i++)
            if (res.samples[i].gpus_stranded > stranded)
                stranded = res.samples[i].gpus_stranded;
        assert_int_equal(stranded, tainted ? 0 : 2); /* 34 free cores feed 2 GPUs at 16 each */
        gs_replay_result_free(&res);
        gs_snapshot_free(&s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_taint_add),     cmocka_unit_test(test_taint_strip),
        cmocka_unit_test(test_drop_cpu_nodes), cmocka_unit_test(test_scale),
        cmocka_unit_test(test_classes),       cmocka_unit_test(test_parse_scale),
        cmocka_unit_test(test_parse_qos),     cmocka_unit_test(test_taint_replay),
        cmocka_unit_test(test_mig_config),    cmocka_unit_test(test_mig_config_label),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
