/*
 * test_read_workloads.c - the workload controllers the reader keeps as written
 * (gs_snapshot.workloads, lib/kube/read_workloads.c) and container images (read.c).
 *
 * A workload keeps its own metadata and position, the pods it creates (DaemonSet: -1)
 * and its decoded template, also when it creates no pod (replicas 0, suspended CronJob,
 * DaemonSet on an input without nodes). Recording workloads must not change the pods'
 * input indexes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/kube.h"

static void load(gs_snapshot *s, const char *text)
{
    gs_error err;
    gs_error_clear(&err);
    gs_snapshot_init(s);
    int rc = gs_snapshot_read_buffer(s, "in.yaml", text, strlen(text), NULL, &err);
    if (rc == 0)
        rc = gs_snapshot_finish(s, &err);
    if (rc != 0) {
        char buf[1024];
        gs_error_format(&err, buf, sizeof buf);
        print_error("unexpected error: %s\n", buf);
    }
    assert_int_equal(rc, 0);
}

static const gs_workload *workload_named(const gs_snapshot *s, const char *name)
{
    for (size_t i = 0; i < s->workloads.n; i++)
        if (!strcmp(s->workloads.v[i].meta.name, name))
            return &s->workloads.v[i];
    return NULL;
}

static void test_every_kind_is_kept(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s,
         "kind: Deployment\n"
         "metadata: {name: web, namespace: prod, labels: {team: a},\n"
         "           annotations: {gpusched.io/suppress: \"GS001: ok\"}}\n"
         "spec:\n"
         "  replicas: 2\n"
         "  template:\n"
         "    metadata: {labels: {app: web}}\n"
         "    spec:\n"
         "      schedulerName: kai-scheduler\n"
         "      containers:\n"
         "      - {name: c, image: \"nvcr.io/nvidia/cuda:12.4\", resources: {limits: {nvidia.com/gpu: 1}}}\n"
         "---\n"
         "kind: StatefulSet\n"
         "metadata: {name: db}\n"
         "spec: {replicas: 0, template: {spec: {containers: [{name: c}]}}}\n"
         "---\n"
         "kind: Job\n"
         "metadata: {name: j}\n"
         "spec: {parallelism: 3, completions: 5, template: {spec: {containers: [{name: c}]}}}\n"
         "status: {succeeded: 4}\n"
         "---\n"
         "kind: CronJob\n"
         "metadata: {name: cj}\n"
         "spec:\n"
         "  suspend: true\n"
         "  jobTemplate: {spec: {template: {spec: {containers: [{name: c}]}}}}\n"
         "---\n"
         "kind: ReplicaSet\n"
         "metadata: {name: rs}\n"
         "spec: {template: {spec: {containers: [{name: c}]}}}\n");
    assert_int_equal(s.workloads.n, 5);
    /* input order */
    assert_string_equal(s.workloads.v[0].meta.name, "web");
    assert_string_equal(s.workloads.v[4].meta.name, "rs");

    const gs_workload *w = workload_named(&s, "web");
    assert_string_equal(w->kind, "Deployment");
    assert_int_equal(w->replicas, 2);
    assert_string_equal(w->meta.namespace_, "prod");
    assert_string_equal(gs_labels_get(&w->meta.labels, "team"), "a");
    assert_string_equal(gs_labels_get(&w->meta.annotations, "gpusched.io/suppress"), "GS001: ok");
    assert_int_equal(w->meta.src.line, 1);
    assert_int_equal(w->meta.src.col, 1);
    assert_string_equal(w->meta.src.file, "in.yaml");
    /* template: decoded like a pod of the workload, limits defaulted into requests */
    const gs_pod *t = &w->template_;
    assert_string_equal(t->meta.namespace_, "prod");
    assert_string_equal(gs_labels_get(&t->meta.labels, "app"), "web");
    assert_null(gs_labels_get(&t->meta.labels, "team"));
    assert_string_equal(t->scheduler_name, "kai-scheduler");
    assert_string_equal(t->workload, "Deployment/web");
    assert_int_equal(t->ncontainers, 1);
    assert_string_equal(t->containers[0].image, "nvcr.io/nvidia/cuda:12.4");
    assert_non_null(gs_reslist_get(&t->containers[0].requests, "nvidia.com/gpu"));

    assert_int_equal(workload_named(&s, "db")->replicas, 0);
    assert_int_equal(workload_named(&s, "j")->replicas, 1);  /* min(3, 5 - 4) */
    assert_int_equal(workload_named(&s, "cj")->replicas, 0); /* suspended */
    assert_string_equal(workload_named(&s, "cj")->kind, "CronJob");
    assert_int_equal(workload_named(&s, "rs")->replicas, 1); /* default */
    /* container without an image */
    assert_string_equal(workload_named(&s, "db")->template_.containers[0].image, "");
    /* pods: 2 + 0 + 1 + 0 + 1 */
    assert_int_equal(s.pods.n, 4);
    gs_snapshot_free(&s);
}

static void test_pod_indexes_unchanged(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s,
         "kind: Pod\nmetadata: {name: p0}\nspec: {containers: [{name: c}]}\n"
         "---\n"
         "kind: Deployment\nmetadata: {name: d}\n"
         "spec: {replicas: 2, template: {spec: {containers: [{name: c}]}}}\n"
         "---\n"
         "kind: Pod\nmetadata: {name: p3}\nspec: {containers: [{name: c}]}\n");
    assert_int_equal(s.pods.n, 4);
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(s.pods.v[i].meta.input_index, i);
    assert_int_equal(s.workloads.n, 1);
    assert_int_equal(s.workloads.v[0].meta.input_index, 1); /* its first pod */
    assert_int_equal(s.next_index, 4);
    gs_snapshot_free(&s);
}

static void test_daemonset_without_nodes(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s,
         "kind: DaemonSet\n"
         "metadata: {name: nvidia-device-plugin-daemonset, namespace: kube-system}\n"
         "spec:\n"
         "  template:\n"
         "    spec:\n"
         "      priorityClassName: system-node-critical\n"
         "      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"
         "      containers:\n"
         "      - {name: dp, image: \"nvcr.io/nvidia/k8s-device-plugin:v0.15.0\"}\n");
    assert_int_equal(s.pods.n, 0);
    assert_int_equal(s.workloads.n, 1);
    const gs_workload *w = &s.workloads.v[0];
    assert_string_equal(w->kind, "DaemonSet");
    assert_int_equal(w->replicas, -1);
    assert_string_equal(w->template_.containers[0].image, "nvcr.io/nvidia/k8s-device-plugin:v0.15.0");
    assert_string_equal(w->template_.priority_class_name, "system-node-critical");
    /* the user's toleration first, then the DaemonSet controller's automatic ones */
    assert_true(w->template_.ntolerations > 1);
    assert_string_equal(w->template_.tolerations[0].key, "nvidia.com/gpu");
    bool unschedulable = false;
    for (uint32_t i = 0; i < w->template_.ntolerations; i++)
        unschedulable |= !strcmp(w->template_.tolerations[i].key, "node.kubernetes.io/unschedulable");
    assert_true(unschedulable);
    gs_snapshot_free(&s);
}

static void test_daemonset_with_nodes(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s,
         "kind: Node\nmetadata: {name: n1}\n"
         "---\n"
         "kind: Node\nmetadata: {name: n2}\nspec: {taints: [{key: nvidia.com/gpu, effect: NoSchedule}]}\n"
         "---\n"
         "kind: DaemonSet\nmetadata: {name: logs}\n"
         "spec: {template: {spec: {containers: [{name: c, image: fluent-bit}]}}}\n");
    assert_int_equal(s.workloads.n, 1);
    assert_int_equal(s.workloads.v[0].replicas, -1);
    assert_int_equal(s.pods.n, 1); /* only the untainted node */
    assert_string_equal(s.pods.v[0].containers[0].image, "fluent-bit");
    gs_snapshot_free(&s);
}

static void test_list_items_and_json(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s,
         "{\"kind\": \"List\", \"items\": [\n"
         "  {\"kind\": \"Deployment\", \"metadata\": {\"name\": \"a\"},\n"
         "   \"spec\": {\"replicas\": 0, \"template\": {\"spec\": {\"containers\": [{\"name\": \"c\"}]}}}},\n"
         "  {\"kind\": \"Job\", \"metadata\": {\"name\": \"b\"},\n"
         "   \"spec\": {\"template\": {\"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"x\"}]}}}}\n"
         "]}\n");
    assert_int_equal(s.workloads.n, 2);
    assert_string_equal(s.workloads.v[0].kind, "Deployment");
    assert_int_equal(s.workloads.v[0].meta.src.line, 2);
    assert_int_equal(s.workloads.v[0].meta.src.col, 3);
    assert_string_equal(s.workloads.v[1].template_.containers[0].image, "x");
    gs_snapshot_free(&s);
}

static void test_failed_read_frees(void **state)
{
    (void)state;
    /* a workload stored before a later document fails: freeing must release everything */
    gs_snapshot s;
    gs_snapshot_init(&s);
    gs_error err;
    const char *text = "kind: Deployment\nmetadata: {name: a}\n"
                       "spec: {template: {spec: {containers: [{name: c}]}}}\n"
                       "---\n"
                       "kind: Deployment\nmetadata: {name: b}\nspec: {replicas: many}\n";
    assert_int_not_equal(gs_snapshot_read_buffer(&s, "in.yaml", text, strlen(text), NULL, &err), 0);
    assert_int_equal(s.workloads.n, 1);
    gs_snapshot_free(&s);
    assert_null(s.workloads.v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kind_is_kept),
        cmocka_unit_test(test_pod_indexes_unchanged),
        cmocka_unit_test(test_daemonset_without_nodes),
        cmocka_unit_test(test_daemonset_with_nodes),
        cmocka_unit_test(test_list_items_and_json),
        cmocka_unit_test(test_failed_read_frees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
