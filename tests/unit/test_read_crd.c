/*
 * test_read_crd.c - API groups and the workload custom resources of the reader
 * (lib/kube/read.c dispatch, lib/kube/read_crd.c), keep_going, duplicate warnings and
 * the count of unexpanded kinds with pod templates.
 *
 * The fixtures of tests/data/read/crd are read from GS_TEST_DATA: pod counts, names as
 * the controllers name them, labels, requests, positions and the workloads kept per
 * template.
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

static int read_text(gs_snapshot *s, const char *text, const gs_read_opts *opts, gs_error *err)
{
    gs_error_clear(err);
    int rc = gs_snapshot_read_buffer(s, "in.yaml", text, strlen(text), opts, err);
    if (rc == 0)
        rc = gs_snapshot_finish(s, err);
    return rc;
}

static void load_text(gs_snapshot *s, const char *text)
{
    gs_error err;
    gs_snapshot_init(s);
    int rc = read_text(s, text, NULL, &err);
    if (rc != 0) {
        char buf[1024];
        gs_error_format(&err, buf, sizeof buf);
        print_error("unexpected error: %s\n", buf);
    }
    assert_int_equal(rc, 0);
}

/* Read tests/data/read/crd/<name>; false (test skipped) without GS_TEST_DATA. */
static bool load_fixture(gs_snapshot *s, const char *name)
{
    const char *base = getenv("GS_TEST_DATA");
    if (!base)
        return false;
    char path[1024];
    snprintf(path, sizeof path, "%s/read/crd/%s", base, name);
    gs_error err;
    gs_error_clear(&err);
    gs_snapshot_init(s);
    int rc = gs_snapshot_read_path(s, path, NULL, &err);
    if (rc == 0)
        rc = gs_snapshot_finish(s, &err);
    if (rc != 0) {
        char buf[1024];
        gs_error_format(&err, buf, sizeof buf);
        print_error("unexpected error: %s\n", buf);
    }
    assert_int_equal(rc, 0);
    return true;
}

static const gs_pod *pod_named(const gs_snapshot *s, const char *name)
{
    for (size_t i = 0; i < s->pods.n; i++)
        if (!strcmp(s->pods.v[i].meta.name, name))
            return &s->pods.v[i];
    return NULL;
}

static int64_t gpus(const gs_pod *p)
{
    int64_t n = 0;
    for (uint32_t i = 0; i < p->ncontainers; i++) {
        const gs_quantity *q = gs_reslist_get(&p->containers[i].requests, "nvidia.com/gpu");
        if (q)
            n += gs_quantity_value(q);
    }
    return n;
}

static void assert_label(const gs_pod *p, const char *key, const char *val)
{
    const char *v = gs_labels_get(&p->meta.labels, key);
    if (!v)
        print_error("pod %s has no label %s\n", p->meta.name, key);
    assert_non_null(v);
    assert_string_equal(v, val);
}

#define SKIP_WITHOUT_DATA(s, f)    \
    do {                           \
        if (!load_fixture((s), f)) \
            skip();                \
    } while (0)

/* ---------------------------------------------------------------- fixtures */
static void test_jobset(void **state)
{
    (void)state;
    gs_snapshot s;
    SKIP_WITHOUT_DATA(&s, "jobset.yaml");
    assert_int_equal(s.pods.n, 5); /* coordinator 1x1, workers 2 jobs x 2 pods */
    const gs_pod *c = pod_named(&s, "llm-pretrain-coordinator-0-0");
    const gs_pod *w = pod_named(&s, "llm-pretrain-workers-1-1");
    assert_non_null(c);
    assert_non_null(w);
    assert_non_null(pod_named(&s, "llm-pretrain-workers-0-0"));
    assert_int_equal(gpus(c), 0);
    assert_int_equal(gpus(w), 4);
    assert_string_equal(w->meta.namespace_, "research");
    assert_string_equal(w->workload, "JobSet/llm-pretrain");
    assert_string_equal(w->meta.owner_kind, "JobSet");
    assert_label(w, "app", "llm-pretrain"); /* the template's own */
    assert_label(w, "jobset.sigs.k8s.io/jobset-name", "llm-pretrain");
    assert_label(w, "jobset.sigs.k8s.io/replicatedjob-name", "workers");
    assert_label(w, "jobset.sigs.k8s.io/job-index", "1");
    assert_label(w, "batch.kubernetes.io/job-completion-index", "1");
    assert_label(w, "job-name", "llm-pretrain-workers-1");
    /* positions: the pod template of each replicated job */
    assert_int_equal(c->meta.src.line, 16);
    assert_int_equal(w->meta.src.line, 31);
    assert_int_equal(w->meta.src.col, 11);
    /* one workload per template */
    assert_int_equal(s.workloads.n, 2);
    assert_string_equal(s.workloads.v[0].kind, "JobSet");
    assert_string_equal(s.workloads.v[0].role, "coordinator");
    assert_int_equal(s.workloads.v[0].part, 0);
    assert_int_equal(s.workloads.v[1].replicas, 4);
    assert_int_equal(s.workloads.v[1].part, 1);
    assert_int_equal(s.workloads.v[1].meta.src.line, 31);
    gs_snapshot_free(&s);
}

static void test_leaderworkerset(void **state)
{
    (void)state;
    gs_snapshot s;
    SKIP_WITHOUT_DATA(&s, "leaderworkerset.yaml");
    assert_int_equal(s.pods.n, 6); /* 2 groups x size 3 */
    const char *names[] = {"vllm-70b-0", "vllm-70b-0-1", "vllm-70b-0-2", "vllm-70b-1", "vllm-70b-1-1", "vllm-70b-1-2"};
    for (size_t i = 0; i < 6; i++) {
        assert_string_equal(s.pods.v[i].meta.name, names[i]);
        assert_int_equal(gpus(&s.pods.v[i]), 8);
        assert_int_equal(s.pods.v[i].ntolerations, 1);
    }
    const gs_pod *leader = pod_named(&s, "vllm-70b-1");
    const gs_pod *worker = pod_named(&s, "vllm-70b-1-2");
    assert_label(leader, "role", "leader");
    assert_label(leader, "leaderworkerset.sigs.k8s.io/worker-index", "0");
    assert_label(leader, "leaderworkerset.sigs.k8s.io/group-index", "1");
    assert_label(worker, "leaderworkerset.sigs.k8s.io/worker-index", "2");
    assert_label(worker, "leaderworkerset.sigs.k8s.io/group-index", "1");
    assert_null(gs_labels_get(&worker->meta.labels, "role"));
    assert_int_equal(s.workloads.n, 2);
    assert_string_equal(s.workloads.v[0].role, "leader");
    assert_int_equal(s.workloads.v[0].replicas, 2);
    assert_string_equal(s.workloads.v[1].role, "worker");
    assert_int_equal(s.workloads.v[1].replicas, 4);
    gs_snapshot_free(&s);
}

static void test_kubeflow(void **state)
{
    (void)state;
    gs_snapshot s;
    SKIP_WITHOUT_DATA(&s, "pytorchjob.yaml");
    assert_int_equal(s.pods.n, 4);
    const gs_pod *m = pod_named(&s, "resnet50-ddp-master-0");
    const gs_pod *w = pod_named(&s, "resnet50-ddp-worker-2");
    assert_non_null(m);
    assert_non_null(w);
    assert_int_equal(gpus(m), 1); /* limits-only defaulting */
    assert_int_equal(m->ntolerations, 0);
    assert_int_equal(w->ntolerations, 1);
    assert_label(m, "training.kubeflow.org/job-role", "master");
    assert_label(w, "training.kubeflow.org/replica-type", "worker");
    assert_label(w, "training.kubeflow.org/replica-index", "2");
    assert_null(gs_labels_get(&w->meta.labels, "training.kubeflow.org/job-role"));
    assert_int_equal(s.workloads.n, 2);
    assert_string_equal(s.workloads.v[0].role, "Master");
    assert_string_equal(s.workloads.v[1].role, "Worker");
    assert_int_equal(s.workloads.v[1].replicas, 3);
    gs_snapshot_free(&s);

    SKIP_WITHOUT_DATA(&s, "mpijob.yaml");
    assert_int_equal(s.pods.n, 3);
    assert_non_null(pod_named(&s, "nccl-allreduce-launcher-0"));
    assert_int_equal(gpus(pod_named(&s, "nccl-allreduce-worker-1")), 8);
    assert_label(pod_named(&s, "nccl-allreduce-launcher-0"), "training.kubeflow.org/job-role", "master");
    gs_snapshot_free(&s);
}

static void test_raycluster(void **state)
{
    (void)state;
    gs_snapshot s;
    SKIP_WITHOUT_DATA(&s, "raycluster.yaml");
    assert_int_equal(s.pods.n, 3);
    const gs_pod *h = pod_named(&s, "ray-gpu-head");
    const gs_pod *w = pod_named(&s, "ray-gpu-gpu-group-worker-1");
    assert_non_null(h);
    assert_non_null(w);
    assert_int_equal(gpus(h), 0);
    assert_int_equal(gpus(w), 1);
    assert_label(h, "ray.io/node-type", "head");
    assert_label(w, "ray.io/node-type", "worker");
    assert_label(w, "ray.io/group", "gpu-group");
    assert_label(w, "ray.io/cluster", "ray-gpu");
    assert_int_equal(s.workloads.n, 2);
    assert_string_equal(s.workloads.v[0].role, "head");
    assert_string_equal(s.workloads.v[1].role, "gpu-group");
    gs_snapshot_free(&s);
}

static void test_volcano_job(void **state)
{
    (void)state;
    gs_snapshot s;
    SKIP_WITHOUT_DATA(&s, "volcano-job.yaml");
    assert_int_equal(s.pods.n, 3);
    const gs_pod *ps = pod_named(&s, "tf-dist-ps-0");
    const gs_pod *w = pod_named(&s, "tf-dist-worker-1");
    assert_non_null(ps);
    assert_non_null(w);
    assert_int_equal(gpus(w), 2);
    assert_string_equal(w->scheduler_name, "volcano");
    assert_string_equal(w->workload, "Job.batch.volcano.sh/tf-dist");
    assert_label(w, "volcano.sh/job-name", "tf-dist");
    assert_label(w, "volcano.sh/task-spec", "worker");
    assert_label(w, "volcano.sh/queue-name", "default");
    assert_int_equal(s.workloads.n, 2);
    assert_string_equal(s.workloads.v[0].kind, "Job.batch.volcano.sh");
    assert_int_equal(s.nskipped, 0);
    gs_snapshot_free(&s);
}

/* ---------------------------------------------------------------- inline cases */
static void test_api_groups(void **state)
{
    (void)state;
    gs_snapshot s;
    load_text(&s,
              "apiVersion: apps.kruise.io/v1beta1\n"
              "kind: StatefulSet\n"
              "metadata: {name: k}\n"
              "spec: {replicas: 3, template: {spec: {containers: [{name: c}]}}}\n"
              "---\n"
              "apiVersion: batch/v9\n"
              "kind: Job\n"
              "metadata: {name: j}\n"
              "spec: {template: {spec: {containers: [{name: c}]}}}\n"
              "---\n"
              "apiVersion: v2\n"
              "kind: Pod\n"
              "metadata: {name: p}\n"
              "---\n"
              "apiVersion: example.com/v1\n"
              "kind: Widget\n"
              "spec: {size: 3}\n"
              "---\n"
              "apiVersion: apps/v1beta2\n"
              "kind: Deployment\n"
              "metadata: {name: old}\n"
              "spec: {replicas: 2, template: {spec: {containers: [{name: c}]}}}\n"
              "---\n"
              "apiVersion: extensions/v1beta1\n"
              "kind: DaemonSet\n"
              "metadata: {name: ds}\n"
              "spec: {template: {spec: {containers: [{name: c}]}}}\n"
              "---\n"
              "apiVersion: policy/v1beta1\n"
              "kind: PodDisruptionBudget\n"
              "metadata: {name: pdb}\n"
              "---\n"
              "kind: Job\n" /* no apiVersion: the built-in kind */
              "metadata: {name: bare}\n"
              "spec: {template: {spec: {containers: [{name: c}]}}}\n");
    assert_int_equal(s.nskipped, 4);
    assert_int_equal(s.skipped.n, 4);
    assert_string_equal(s.skipped.v[0].kind, "StatefulSet.apps.kruise.io");
    assert_string_equal(s.skipped.v[1].kind, "Job.batch/v9");
    assert_string_equal(s.skipped.v[2].kind, "Pod/v2");
    assert_string_equal(s.skipped.v[3].kind, "Widget.example.com");
    /* pod templates among the skipped: the Kruise StatefulSet and the batch/v9 Job */
    assert_int_equal(s.ntemplated, 2);
    assert_int_equal(s.templated.n, 2);
    assert_string_equal(s.templated.v[0].kind, "StatefulSet.apps.kruise.io");
    assert_int_equal(s.templated.v[0].count, 1);
    assert_string_equal(s.templated.v[1].kind, "Job.batch/v9");
    assert_int_equal(s.pods.n, 3); /* old-0, old-1, bare-0 (no nodes for the DaemonSet) */
    assert_non_null(pod_named(&s, "old-1"));
    assert_non_null(pod_named(&s, "bare-0"));
    assert_int_equal(s.pdbs.n, 1);
    assert_int_equal(s.workloads.n, 3);
    gs_snapshot_free(&s);

    gs_error err;
    gs_snapshot_init(&s);
    assert_int_equal(read_text(&s, "apiVersion: [v1]\nkind: Pod\n", NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_string_equal(err.path, "apiVersion");
    gs_snapshot_free(&s);
}

/* Without the CRD support a Volcano Job was decoded as a batch Job and failed the input. */
static void test_volcano_is_not_batch(void **state)
{
    (void)state;
    gs_snapshot s;
    load_text(&s, "apiVersion: batch.volcano.sh/v1alpha1\n"
                  "kind: Job\n"
                  "metadata: {name: mpi, namespace: hpc}\n"
                  "spec:\n"
                  "  schedulerName: kai-scheduler\n"
                  "  priorityClassName: high\n"
                  "  tasks:\n"
                  "  - replicas: 2\n"
                  "    template:\n"
                  "      spec:\n"
                  "        schedulerName: custom\n"
                  "        containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n"
                  "  - replicas: 1\n"
                  "    template:\n"
                  "      spec:\n"
                  "        priorityClassName: low\n"
                  "        containers: [{name: c}]\n");
    assert_int_equal(s.pods.n, 3);
    const gs_pod *a = pod_named(&s, "mpi-default0-1");
    const gs_pod *b = pod_named(&s, "mpi-default1-0");
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(a->scheduler_name, "custom");
    assert_string_equal(a->priority_class_name, "high");
    assert_string_equal(b->scheduler_name, "kai-scheduler");
    assert_string_equal(b->priority_class_name, "low");
    assert_string_equal(a->meta.namespace_, "hpc");
    gs_snapshot_free(&s);
}

static void test_crd_counts_and_defaults(void **state)
{
    (void)state;
    gs_snapshot s;
    /* RayJob: its cluster; replicas absent -> minReplicas; numOfHosts; suspended group */
    load_text(&s, "apiVersion: ray.io/v1\n"
                  "kind: RayJob\n"
                  "metadata: {name: rj}\n"
                  "spec:\n"
                  "  entrypoint: python train.py\n"
                  "  rayClusterSpec:\n"
                  "    headGroupSpec: {template: {spec: {containers: [{name: h}]}}}\n"
                  "    workerGroupSpecs:\n"
                  "    - {groupName: tpu, minReplicas: 2, numOfHosts: 2,\n"
                  "       template: {spec: {containers: [{name: w}]}}}\n"
                  "    - {groupName: off, replicas: 3, suspend: true,\n"
                  "       template: {spec: {containers: [{name: w}]}}}\n"
                  "    - {groupName: capped, replicas: 9, maxReplicas: 1,\n"
                  "       template: {spec: {containers: [{name: w}]}}}\n"
                  "---\n"
                  "apiVersion: ray.io/v1\n"
                  "kind: RayJob\n"
                  "metadata: {name: existing}\n"
                  "spec: {clusterSelector: {ray.io/cluster: shared}}\n"
                  "---\n"
                  "apiVersion: ray.io/v1\n"
                  "kind: RayService\n"
                  "metadata: {name: svc}\n"
                  "spec:\n"
                  "  rayClusterConfig:\n"
                  "    headGroupSpec: {template: {spec: {containers: [{name: h}]}}}\n");
    assert_int_equal(s.pods.n, 1 + 4 + 0 + 1 + 1);
    assert_non_null(pod_named(&s, "rj-head"));
    assert_non_null(pod_named(&s, "rj-tpu-worker-3"));
    assert_null(pod_named(&s, "rj-tpu-worker-4"));
    assert_null(pod_named(&s, "rj-off-worker-0"));
    assert_non_null(pod_named(&s, "rj-capped-worker-0"));
    assert_null(pod_named(&s, "rj-capped-worker-1"));
    assert_non_null(pod_named(&s, "svc-head"));
    assert_int_equal(s.workloads.n, 5);
    gs_snapshot_free(&s);

    /* suspended JobSet and Kubeflow job: templates kept, no pods; LWS without a leader
     * template: one workload, size pods per group */
    load_text(&s, "apiVersion: jobset.x-k8s.io/v1alpha2\n"
                  "kind: JobSet\n"
                  "metadata: {name: js}\n"
                  "spec:\n"
                  "  suspend: true\n"
                  "  replicatedJobs:\n"
                  "  - {name: w, replicas: 4, template: {spec: {template: {spec: {containers: [{name: c}]}}}}}\n"
                  "---\n"
                  "apiVersion: kubeflow.org/v1\n"
                  "kind: TFJob\n"
                  "metadata: {name: tf}\n"
                  "spec:\n"
                  "  runPolicy: {suspend: true}\n"
                  "  tfReplicaSpecs:\n"
                  "    Chief: {template: {spec: {containers: [{name: c}]}}}\n"
                  "---\n"
                  "apiVersion: leaderworkerset.x-k8s.io/v1\n"
                  "kind: LeaderWorkerSet\n"
                  "metadata: {name: l}\n"
                  "spec:\n"
                  "  leaderWorkerTemplate:\n"
                  "    size: 2\n"
                  "    workerTemplate: {spec: {containers: [{name: c}]}}\n");
    assert_int_equal(s.pods.n, 2);
    assert_non_null(pod_named(&s, "l-0"));
    assert_non_null(pod_named(&s, "l-0-1"));
    assert_int_equal(s.workloads.n, 3);
    assert_int_equal(s.workloads.v[0].replicas, 0);
    assert_int_equal(s.workloads.v[1].replicas, 0);
    assert_string_equal(s.workloads.v[1].role, "Chief");
    assert_int_equal(s.workloads.v[2].replicas, 2);
    gs_snapshot_free(&s);
}

static void test_crd_errors_and_limits(void **state)
{
    (void)state;
    gs_snapshot s;
    gs_error err;
    gs_read_opts few = {.max_replicas = 10};
    gs_snapshot_init(&s);
    /* 3 groups x 4 = 12 pods > 10 */
    assert_int_equal(read_text(&s,
                               "apiVersion: leaderworkerset.x-k8s.io/v1\n"
                               "kind: LeaderWorkerSet\n"
                               "metadata: {name: big}\n"
                               "spec:\n"
                               "  replicas: 3\n"
                               "  leaderWorkerTemplate: {size: 4, workerTemplate: {spec: {containers: [{name: c}]}}}\n",
                               &few, &err),
                     -1);
    assert_int_equal(err.code, GS_ERR_LIMIT);
    assert_int_equal(err.line, 5);
    assert_string_equal(err.path, "LeaderWorkerSet default/big: spec.replicas");
    gs_snapshot_free(&s);

    gs_snapshot_init(&s);
    assert_int_equal(read_text(&s,
                               "apiVersion: kubeflow.org/v1\n"
                               "kind: PyTorchJob\n"
                               "metadata: {name: p}\n"
                               "spec:\n"
                               "  pytorchReplicaSpecs:\n"
                               "    Worker: {replicas: 2}\n",
                               NULL, &err),
                     -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_int_equal(err.line, 6);
    assert_string_equal(err.path, "PyTorchJob default/p: spec.pytorchReplicaSpecs[Worker].template");
    gs_snapshot_free(&s);

    gs_snapshot_init(&s);
    assert_int_equal(read_text(&s,
                               "apiVersion: batch.volcano.sh/v1alpha1\n"
                               "kind: Job\n"
                               "metadata: {name: v}\n"
                               "spec:\n"
                               "  tasks:\n"
                               "  - {name: t, replicas: 1, template: {spec: {containers: [{name: c,\n"
                               "      resources: {limits: {nvidia.com/gpu: lots}}}]}}}\n",
                               NULL, &err),
                     -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_int_equal(err.line, 7);
    assert_string_equal(err.path, "Job.batch.volcano.sh default/v: "
                                  "spec.tasks[0].template.spec.containers[0].resources.limits[nvidia.com/gpu]");
    gs_snapshot_free(&s);
}

/* ---------------------------------------------------------------- keep_going, duplicates */
static void test_keep_going(void **state)
{
    (void)state;
    gs_snapshot s;
    gs_error err;
    gs_read_opts kg = {.keep_going = true};
    gs_snapshot_init(&s);
    const char *good = "kind: Pod\nmetadata: {name: a}\n---\nkind: ConfigMap\n";
    const char *half = "kind: Pod\nmetadata: {name: b}\n---\n"
                       "kind: Deployment\nmetadata: {name: d}\nspec: {template: {spec: {containers: [{name: c}]}}}\n---\n"
                       "kind: DaemonSet\nmetadata: {name: ds}\nspec: {template: {spec: {containers: [{name: c}]}}}\n---\n"
                       "kind: Widget\n---\n"
                       "apiVersion: x.io/v1\nkind: T\nspec: {template: {spec: {containers: []}}}\n---\n"
                       "kind: Pod\nmetadata: {name: bad}\nspec: {priority: high}\n";
    const char *config = "version: v1\nmig-configs: {}\n";
    const char *dupkeys = "kind: Pod\nmetadata: {name: x}\nmetadata: {name: y}\n";
    assert_int_equal(gs_snapshot_read_buffer(&s, "good.yaml", good, strlen(good), &kg, &err), 0);
    assert_int_equal(gs_snapshot_read_buffer(&s, "half.yaml", half, strlen(half), &kg, &err), 0);
    assert_int_equal(gs_snapshot_read_buffer(&s, "config.yaml", config, strlen(config), &kg, &err), 0);
    assert_int_equal(gs_snapshot_read_buffer(&s, "dup.yaml", dupkeys, strlen(dupkeys), &kg, &err), 0);
    const char *late = "kind: Widget\n---\nkind: Node\nmetadata: {name: n}\n";
    assert_int_equal(gs_snapshot_read_buffer(&s, "late.yaml", late, strlen(late), &kg, &err), 0);
    assert_int_equal(gs_snapshot_finish(&s, &err), 0);
    /* nothing of half.yaml is kept: its pods, workloads, DaemonSet, skipped counts */
    assert_int_equal(s.pods.n, 0 + 1);
    assert_string_equal(s.pods.v[0].meta.name, "a");
    assert_int_equal(s.workloads.n, 0);
    assert_int_equal(s.nodes.n, 1);
    assert_int_equal(s.nskipped, 2); /* ConfigMap (good.yaml), Widget (late.yaml) */
    assert_int_equal(s.skipped.n, 2);
    assert_string_equal(s.skipped.v[0].kind, "ConfigMap");
    assert_string_equal(s.skipped.v[1].kind, "Widget");
    assert_int_equal(s.skipped.v[1].count, 1);
    assert_int_equal(s.ntemplated, 0);
    assert_int_equal(s.templated.n, 0);
    assert_int_equal(s.next_index, 2);
    assert_int_equal(s.input_errors.n, 3);
    const gs_read_issue *e = &s.input_errors.v[0];
    assert_string_equal(e->src.file, "half.yaml");
    assert_int_equal(e->src.line, 20);
    assert_int_equal(e->code, GS_ERR_INVALID);
    assert_string_equal(e->object, "Pod default/bad: spec.priority");
    e = &s.input_errors.v[1];
    assert_string_equal(e->src.file, "config.yaml");
    assert_int_equal(e->src.line, 1);
    assert_non_null(strstr(e->message, "not a Kubernetes object"));
    e = &s.input_errors.v[2];
    assert_int_equal(e->code, GS_ERR_PARSE);
    assert_int_equal(e->src.line, 3);
    assert_non_null(strstr(e->message, "duplicate mapping key"));
    gs_snapshot_free(&s);

    /* without keep_going the first bad file fails the read */
    gs_snapshot_init(&s);
    assert_int_equal(gs_snapshot_read_buffer(&s, "config.yaml", config, strlen(config), NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_int_equal(s.input_errors.n, 0);
    gs_snapshot_free(&s);
}

static void test_duplicate_warnings(void **state)
{
    (void)state;
    gs_snapshot s;
    load_text(&s, "kind: Pod\nmetadata: {name: p, namespace: a}\n"
                  "---\nkind: Pod\nmetadata: {name: p, namespace: b}\n"  /* other namespace */
                  "---\nkind: Node\nmetadata: {name: p}\n"                /* other kind */
                  "---\nkind: Pod\nmetadata: {name: p, namespace: a}\n"  /* duplicate */
                  "---\nkind: Pod\nmetadata: {generateName: g-}\n"
                  "---\nkind: Pod\nmetadata: {generateName: g-}\n"       /* unnamed: not compared */
                  "---\napiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: j}\n"
                  "spec: {pytorchReplicaSpecs: {Master: {template: {spec: {}}}, Worker: {template: {spec: {}}}}}\n"
                  "---\nkind: Deployment\nmetadata: {name: d}\nspec: {template: {spec: {}}}\n"
                  "---\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 0, template: {spec: {}}}\n");
    assert_int_equal(s.warnings.n, 2);
    assert_string_equal(s.warnings.v[0].object, "Pod a/p");
    assert_int_equal(s.warnings.v[0].src.line, 10);
    assert_non_null(strstr(s.warnings.v[0].message, "first at in.yaml:1:1"));
    assert_string_equal(s.warnings.v[1].object, "Deployment default/d");
    assert_int_equal(s.warnings.v[1].code, GS_OK);
    gs_snapshot_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jobset),
        cmocka_unit_test(test_leaderworkerset),
        cmocka_unit_test(test_kubeflow),
        cmocka_unit_test(test_raycluster),
        cmocka_unit_test(test_volcano_job),
        cmocka_unit_test(test_api_groups),
        cmocka_unit_test(test_volcano_is_not_batch),
        cmocka_unit_test(test_crd_counts_and_defaults),
        cmocka_unit_test(test_crd_errors_and_limits),
        cmocka_unit_test(test_keep_going),
        cmocka_unit_test(test_duplicate_warnings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
