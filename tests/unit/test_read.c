/*
 * test_read.c - the snapshot reader (lib/kube/read.c, read_workloads.c).
 *
 * Inline YAML/JSON for most cases (so line numbers are visible next to the asserts);
 * files under $GS_TEST_DATA/read for kubectl List output and directory order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpusched/kube.h"

/* ---------------------------------------------------------------- helpers */

static int read_text(gs_snapshot *s, const char *text, const gs_read_opts *opts, gs_error *err)
{
    gs_error_clear(err);
    return gs_snapshot_read_buffer(s, "in.yaml", text, strlen(text), opts, err);
}

/* Read text into a fresh snapshot and finish it; fails the test on error. */
static void load(gs_snapshot *s, const char *text)
{
    gs_error err;
    gs_snapshot_init(s);
    int rc = read_text(s, text, NULL, &err);
    if (rc == 0)
        rc = gs_snapshot_finish(s, &err);
    if (rc != 0) {
        char buf[1024];
        gs_error_format(&err, buf, sizeof buf);
        print_error("unexpected error: %s\n", buf);
    }
    assert_int_equal(rc, 0);
}

static const gs_pod *pod_named(const gs_snapshot *s, const char *name)
{
    for (size_t i = 0; i < s->pods.n; i++)
        if (!strcmp(s->pods.v[i].meta.name, name))
            return &s->pods.v[i];
    return NULL;
}

static const gs_node *node_named(const gs_snapshot *s, const char *name)
{
    for (size_t i = 0; i < s->nodes.n; i++)
        if (!strcmp(s->nodes.v[i].meta.name, name))
            return &s->nodes.v[i];
    return NULL;
}

static int64_t res_value(const gs_reslist *l, const char *name)
{
    const gs_quantity *q = gs_reslist_get(l, name);
    return q ? gs_quantity_value(q) : -1;
}

static int64_t res_milli(const gs_reslist *l, const char *name)
{
    const gs_quantity *q = gs_reslist_get(l, name);
    return q ? gs_quantity_milli(q) : -1;
}

static const char *data_path(char *buf, size_t cap, const char *rel)
{
    const char *base = getenv("GS_TEST_DATA");
    if (!base)
        return NULL;
    snprintf(buf, cap, "%s/read/%s", base, rel);
    return buf;
}

/* ---------------------------------------------------------------- every kind */

static const char every_kind[] =
    "apiVersion: v1\n"                                   /* 1 */
    "kind: Node\n"                                       /* 2 */
    "metadata:\n"                                        /* 3 */
    "  name: gpu-1\n"                                    /* 4 */
    "  labels: {gpu: a100, zone: z1}\n"                  /* 5 */
    "spec:\n"                                            /* 6 */
    "  taints:\n"                                        /* 7 */
    "  - {key: nvidia.com/gpu, value: present, effect: NoSchedule}\n"
    "  - {key: maint, effect: PreferNoSchedule}\n"       /* 9 */
    "status:\n"                                          /* 10 */
    "  capacity: {cpu: \"32\", memory: 256Gi, nvidia.com/gpu: 8}\n"
    "  conditions:\n"                                    /* 12 */
    "  - {type: Ready, status: \"False\"}\n"             /* 13 */
    "---\n"                                              /* 14 */
    "apiVersion: v1\n"                                   /* 15 */
    "kind: Namespace\n"                                  /* 16 */
    "metadata: {name: ml, labels: {team: research}}\n"   /* 17 */
    "---\n"                                              /* 18 */
    "apiVersion: scheduling.k8s.io/v1\n"                 /* 19 */
    "kind: PriorityClass\n"                              /* 20 */
    "metadata: {name: high}\n"                           /* 21 */
    "value: 100000\n"                                    /* 22 */
    "globalDefault: true\n"                              /* 23 */
    "preemptionPolicy: Never\n"                          /* 24 */
    "---\n"                                              /* 25 */
    "apiVersion: v1\n"                                   /* 26 */
    "kind: ResourceQuota\n"                              /* 27 */
    "metadata: {name: gpu-quota, namespace: ml}\n"       /* 28 */
    "spec:\n"                                            /* 29 */
    "  hard: {requests.nvidia.com/gpu: \"4\", pods: 10}\n"
    "  scopes: [NotTerminating]\n"                       /* 31 */
    "  scopeSelector:\n"                                 /* 32 */
    "    matchExpressions:\n"                            /* 33 */
    "    - {scopeName: PriorityClass, operator: In, values: [high, low]}\n"
    "status:\n"                                          /* 35 */
    "  used: {requests.nvidia.com/gpu: \"3\"}\n"         /* 36 */
    "---\n"                                              /* 37 */
    "apiVersion: policy/v1\n"                            /* 38 */
    "kind: PodDisruptionBudget\n"                        /* 39 */
    "metadata: {name: train-pdb}\n"                      /* 40 */
    "spec:\n"                                            /* 41 */
    "  minAvailable: 50%\n"                              /* 42 */
    "  selector:\n"                                      /* 43 */
    "    matchLabels: {app: train}\n"                    /* 44 */
    "    matchExpressions: [{key: tier, operator: NotIn, values: [dev]}]\n"
    "status:\n"                                          /* 46 */
    "  disruptionsAllowed: 1\n"                          /* 47 */
    "  disruptedPods: {train-0: \"2024-05-01T10:00:00Z\"}\n"
    "---\n"                                              /* 49 */
    "apiVersion: v1\n"                                   /* 50 */
    "kind: Pod\n"                                        /* 51 */
    "metadata:\n"                                        /* 52 */
    "  name: train-0\n"                                  /* 53 */
    "  namespace: ml\n"                                  /* 54 */
    "  uid: u-1\n"                                       /* 55 */
    "  labels: {app: train}\n"                           /* 56 */
    "  annotations: {retries: 5, enabled: true, note: hi}\n"
    "  creationTimestamp: \"2024-05-01T10:00:00Z\"\n"    /* 58 */
    "  deletionTimestamp: \"2024-05-01T11:00:00Z\"\n"    /* 59 */
    "  ownerReferences: [{kind: Job, name: train}]\n"    /* 60 */
    "spec:\n"                                            /* 61 */
    "  schedulerName: gpu-scheduler\n"                   /* 62 */
    "  priorityClassName: high\n"                        /* 63 */
    "  priority: 100000\n"                               /* 64 */
    "  preemptionPolicy: PreemptLowerPriority\n"         /* 65 */
    "  nodeName: gpu-1\n"                                /* 66 */
    "  activeDeadlineSeconds: 3600\n"                    /* 67 */
    "  overhead: {cpu: 250m}\n"                          /* 68 */
    "  resources: {requests: {cpu: \"2\", memory: 1Gi}}\n"
    "  nodeSelector: {gpu: a100}\n"                      /* 70 */
    "  containers:\n"                                    /* 71 */
    "  - name: main\n"                                   /* 72 */
    "    resources:\n"                                   /* 73 */
    "      requests: {cpu: 500m}\n"                      /* 74 */
    "      limits: {cpu: \"1\", nvidia.com/gpu: 2}\n"    /* 75 */
    "---\n"                                              /* 76 */
    "apiVersion: v1\n"                                   /* 77 */
    "kind: ConfigMap\n"                                  /* 78 */
    "metadata: {name: cfg}\n"                            /* 79 */
    "data: {a: b}\n";                                    /* 80 */

static void test_every_kind(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, every_kind);
    assert_int_equal(s.nodes.n, 1);
    assert_int_equal(s.namespaces.n, 1);
    assert_int_equal(s.priority_classes.n, 1);
    assert_int_equal(s.quotas.n, 1);
    assert_int_equal(s.pdbs.n, 1);
    assert_int_equal(s.pods.n, 1);
    assert_int_equal(s.nskipped, 1);

    const gs_node *n = &s.nodes.v[0];
    assert_string_equal(n->meta.name, "gpu-1");
    assert_string_equal(n->meta.namespace_, "");
    assert_string_equal(gs_labels_get(&n->meta.labels, "gpu"), "a100");
    assert_int_equal(n->ntaints, 2);
    assert_string_equal(n->taints[0].key, "nvidia.com/gpu");
    assert_string_equal(n->taints[0].value, "present");
    assert_int_equal(n->taints[0].effect, GS_EFFECT_NO_SCHEDULE);
    assert_int_equal(n->taints[1].effect, GS_EFFECT_PREFER_NO_SCHEDULE);
    assert_string_equal(n->taints[1].value, "");
    assert_int_equal(res_value(&n->capacity, "nvidia.com/gpu"), 8);
    /* allocatable defaults to capacity */
    assert_int_equal(res_value(&n->allocatable, "memory"), 256LL << 30);
    assert_int_equal(n->allocatable.n, 3);
    assert_false(n->ready);
    assert_int_equal(n->meta.src.line, 1);
    assert_int_equal(n->meta.src.col, 1);
    assert_string_equal(n->meta.src.file, "in.yaml");

    const gs_namespace *ns = &s.namespaces.v[0];
    assert_string_equal(ns->meta.name, "ml");
    assert_string_equal(ns->meta.namespace_, "");
    assert_int_equal(ns->meta.src.line, 15);

    const gs_priority_class *pc = &s.priority_classes.v[0];
    assert_int_equal(pc->value, 100000);
    assert_true(pc->global_default);
    assert_int_equal(pc->preemption_policy, GS_PREEMPT_NEVER);

    const gs_quota *q = &s.quotas.v[0];
    assert_string_equal(q->meta.namespace_, "ml");
    assert_int_equal(q->hard.n, 2);
    assert_string_equal(q->hard.items[0].name, "pods"); /* sorted bytewise */
    assert_string_equal(q->hard.items[1].name, "requests.nvidia.com/gpu");
    assert_int_equal(res_value(&q->used, "requests.nvidia.com/gpu"), 3);
    assert_int_equal(q->scopes, GS_SCOPE_NOT_TERMINATING | GS_SCOPE_PRIORITY_CLASS);
    assert_int_equal(q->nscope_exprs, 1);
    assert_string_equal(q->scope_exprs[0].key, "PriorityClass");
    assert_int_equal(q->scope_exprs[0].op, GS_SEL_IN);
    assert_int_equal(q->scope_exprs[0].nvalues, 2);
    assert_string_equal(q->scope_exprs[0].values[1], "low");

    const gs_pdb *pdb = &s.pdbs.v[0];
    assert_string_equal(pdb->meta.namespace_, "default");
    assert_true(pdb->min_available.present);
    assert_true(pdb->min_available.is_percent);
    assert_int_equal(pdb->min_available.value, 50);
    assert_false(pdb->max_unavailable.present);
    assert_true(pdb->selector.present);
    assert_string_equal(gs_labels_get(&pdb->selector.match_labels, "app"), "train");
    assert_int_equal(pdb->selector.nexprs, 1);
    assert_int_equal(pdb->selector.exprs[0].op, GS_SEL_NOT_IN);
    assert_true(pdb->has_disruptions_allowed);
    assert_int_equal(pdb->disruptions_allowed, 1);
    assert_int_equal(pdb->ndisrupted, 1);
    assert_string_equal(pdb->disrupted_pods[0], "train-0");

    const gs_pod *p = &s.pods.v[0];
    assert_string_equal(p->meta.name, "train-0");
    assert_string_equal(p->meta.namespace_, "ml");
    assert_string_equal(p->meta.uid, "u-1");
    assert_string_equal(gs_labels_get(&p->meta.annotations, "retries"), "5");
    assert_string_equal(gs_labels_get(&p->meta.annotations, "enabled"), "true");
    assert_true(p->meta.has_creation);
    assert_int_equal(p->meta.creation, 1714557600);
    assert_true(p->meta.deleting);
    assert_string_equal(p->meta.owner_kind, "Job");
    assert_string_equal(p->meta.owner_name, "train");
    assert_string_equal(p->scheduler_name, "gpu-scheduler");
    assert_string_equal(p->priority_class_name, "high");
    assert_true(p->has_priority);
    assert_int_equal(p->priority, 100000);
    assert_int_equal(p->preemption_policy, GS_PREEMPT_LOWER_PRIORITY);
    assert_string_equal(p->node_name, "gpu-1");
    assert_true(p->has_active_deadline);
    assert_int_equal(res_milli(&p->overhead, "cpu"), 250);
    assert_int_equal(res_value(&p->pod_requests, "memory"), 1LL << 30);
    assert_string_equal(gs_labels_get(&p->node_selector, "gpu"), "a100");
    assert_null(p->workload);
    assert_int_equal(p->ncontainers, 1);
    /* requests keep 500m cpu; the gpu limit is copied into requests */
    assert_int_equal(res_milli(&p->containers[0].requests, "cpu"), 500);
    assert_int_equal(res_value(&p->containers[0].requests, "nvidia.com/gpu"), 2);
    assert_int_equal(p->containers[0].requests.n, 2);
    assert_string_equal(p->phase, "");
    assert_int_equal(p->meta.src.line, 50);

    /* input_index follows input order over all kinds */
    assert_int_equal(n->meta.input_index, 0);
    assert_int_equal(ns->meta.input_index, 1);
    assert_int_equal(pc->meta.input_index, 2);
    assert_int_equal(q->meta.input_index, 3);
    assert_int_equal(pdb->meta.input_index, 4);
    assert_int_equal(p->meta.input_index, 5);
    gs_snapshot_free(&s);
}

/* ---------------------------------------------------------------- pod details */

static void test_pod_defaults_and_sidecars(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s,
         "kind: Pod\n"
         "metadata: {name: p}\n"
         "spec:\n"
         "  initContainers:\n"
         "  - name: setup\n"
         "    resources: {limits: {cpu: \"2\"}}\n"
         "  - name: proxy\n"
         "    restartPolicy: Always\n"
         "    resources: {requests: {cpu: 100m}, limits: {cpu: 200m, memory: 64Mi}}\n"
         "  containers:\n"
         "  - name: a\n"
         "    resources:\n"
         "      requests: {memory: 1Gi}\n"
         "      limits: {memory: 2Gi, nvidia.com/gpu: \"1\", example.com/foo: 3}\n"
         "  - name: b\n");
    const gs_pod *p = pod_named(&s, "p");
    assert_non_null(p);
    assert_string_equal(p->meta.namespace_, "default");
    assert_string_equal(p->scheduler_name, "default-scheduler");
    assert_false(p->has_priority);
    assert_false(p->has_active_deadline);
    assert_null(p->required);
    assert_int_equal(p->ninit, 2);
    assert_false(p->init_containers[0].sidecar);
    assert_true(p->init_containers[1].sidecar);
    assert_int_equal(res_milli(&p->init_containers[0].requests, "cpu"), 2000);
    /* an existing request wins; other limits are copied per key */
    assert_int_equal(res_milli(&p->init_containers[1].requests, "cpu"), 100);
    assert_int_equal(res_value(&p->init_containers[1].requests, "memory"), 64LL << 20);
    const gs_container *a = &p->containers[0];
    assert_int_equal(res_value(&a->requests, "memory"), 1LL << 30);
    assert_int_equal(res_value(&a->limits, "memory"), 2LL << 30);
    assert_int_equal(res_value(&a->requests, "nvidia.com/gpu"), 1);
    assert_int_equal(a->requests.n, 3);
    /* sorted after the merge */
    assert_string_equal(a->requests.items[0].name, "example.com/foo");
    assert_string_equal(a->requests.items[1].name, "memory");
    assert_string_equal(a->requests.items[2].name, "nvidia.com/gpu");
    assert_int_equal(p->containers[1].requests.n, 0);
    assert_false(p->containers[1].sidecar);
    gs_snapshot_free(&s);
}

static void test_tolerations_and_affinity(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s,
         "kind: Pod\n"
         "metadata: {name: p}\n"
         "spec:\n"
         "  tolerations:\n"
         "  - {key: a, operator: Equal, value: x, effect: NoSchedule}\n"
         "  - {key: b, value: y}\n"
         "  - {operator: Exists}\n"
         "  - {key: c, operator: Lt, value: \"5\", effect: NoExecute, tolerationSeconds: 60}\n"
         "  - {key: d, operator: Gt, value: \"1\"}\n"
         "  - {key: e, operator: exists, effect: Sometimes}\n"
         "  affinity:\n"
         "    nodeAffinity:\n"
         "      requiredDuringSchedulingIgnoredDuringExecution:\n"
         "        nodeSelectorTerms:\n"
         "        - matchExpressions:\n"
         "          - {key: gpu, operator: In, values: [a100, h100]}\n"
         "          - {key: mem, operator: Gt, values: [\"80\"]}\n"
         "          matchFields:\n"
         "          - {key: metadata.name, operator: NotIn, values: [bad-node]}\n"
         "        - matchExpressions: [{key: spot, operator: DoesNotExist}]\n"
         "      preferredDuringSchedulingIgnoredDuringExecution:\n"
         "      - weight: 40\n"
         "        preference:\n"
         "          matchExpressions: [{key: zone, operator: Exists}]\n");
    const gs_pod *p = pod_named(&s, "p");
    assert_int_equal(p->ntolerations, 6);
    const gs_toleration *t = p->tolerations;
    assert_int_equal(t[0].op, GS_TOL_EQUAL);
    assert_string_equal(t[0].op_raw, "Equal");
    assert_int_equal(t[0].effect, GS_EFFECT_NO_SCHEDULE);
    assert_int_equal(t[1].op, GS_TOL_EQUAL);
    assert_string_equal(t[1].op_raw, "");
    assert_int_equal(t[1].effect, GS_EFFECT_ANY);
    assert_string_equal(t[2].key, "");
    assert_int_equal(t[2].op, GS_TOL_EXISTS);
    assert_int_equal(t[3].op, GS_TOL_LT);
    assert_true(t[3].has_seconds);
    assert_int_equal(t[3].seconds, 60);
    assert_false(t[0].has_seconds);
    assert_int_equal(t[4].op, GS_TOL_GT);
    assert_int_equal(t[5].op, GS_TOL_OTHER);
    assert_string_equal(t[5].op_raw, "exists");
    assert_int_equal(t[5].effect, GS_EFFECT_INVALID);

    assert_non_null(p->required);
    assert_int_equal(p->required->nterms, 2);
    const gs_sel_term *t0 = &p->required->terms[0];
    assert_int_equal(t0->nexprs, 2);
    assert_string_equal(t0->exprs[0].key, "gpu");
    assert_int_equal(t0->exprs[0].op, GS_SEL_IN);
    assert_int_equal(t0->exprs[0].nvalues, 2);
    assert_string_equal(t0->exprs[0].values[1], "h100");
    assert_int_equal(t0->exprs[1].op, GS_SEL_GT);
    assert_int_equal(t0->nfields, 1);
    assert_string_equal(t0->fields[0].key, "metadata.name");
    assert_int_equal(t0->fields[0].op, GS_SEL_NOT_IN);
    assert_int_equal(p->required->terms[1].exprs[0].op, GS_SEL_DOES_NOT_EXIST);
    assert_int_equal(p->required->terms[1].exprs[0].nvalues, 0);
    assert_int_equal(p->npreferred, 1);
    assert_int_equal(p->preferred[0].weight, 40);
    assert_int_equal(p->preferred[0].term.exprs[0].op, GS_SEL_EXISTS);
    gs_snapshot_free(&s);
}

/* Scalar styles: single quotes are decoded by the reader itself (libfyaml 0.7.12 gets
 * runs of '' wrong), double quotes, block scalars and JSON escapes by libfyaml. */
static void test_scalar_styles(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s,
         "kind: Pod\n"
         "metadata:\n"
         "  name: p\n"
         "  annotations:\n"
         "    a: 'it''s'\n"
         "    b: 'x''''''''''''''''yy'\n"
         "    c: ' 1st non-empty\n"
         "\n"
         "       2nd non-empty \n"
         "      3rd non-empty '\n"
         "    d: \"tab\\there \\u00e9\"\n"
         "    e: |\n"
         "      line1\n"
         "      line2\n"
         "    f: >-\n"
         "      folded\n"
         "      text\n"
         "    g: ''\n"
         "    h: 'null'\n"
         "    i: plain\n"
         "      continued\n");
    const gs_labels *an = &s.pods.v[0].meta.annotations;
    assert_string_equal(gs_labels_get(an, "a"), "it's");
    assert_string_equal(gs_labels_get(an, "b"), "x''''''''yy");
    assert_string_equal(gs_labels_get(an, "c"), " 1st non-empty\n2nd non-empty 3rd non-empty ");
    assert_string_equal(gs_labels_get(an, "d"), "tab\there \xc3\xa9");
    assert_string_equal(gs_labels_get(an, "e"), "line1\nline2\n");
    assert_string_equal(gs_labels_get(an, "f"), "folded text");
    assert_string_equal(gs_labels_get(an, "g"), "");
    assert_string_equal(gs_labels_get(an, "h"), "null");
    assert_string_equal(gs_labels_get(an, "i"), "plain continued");
    gs_snapshot_free(&s);

    /* invalid UTF-8 is rejected before libfyaml sees it */
    gs_error err;
    gs_snapshot_init(&s);
    assert_int_equal(read_text(&s, "kind: Pod\nmetadata: {name: \"a\xd9\"}\n", NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_PARSE);
    assert_int_equal(err.line, 2);
    assert_int_equal(err.col, 20);
    assert_non_null(strstr(err.msg, "UTF-8"));
    gs_snapshot_free(&s);
}

/* ---------------------------------------------------------------- JSON */

static void test_kubectl_json_list(void **state)
{
    (void)state;
    char path[512];
    if (!data_path(path, sizeof path, "podlist.json"))
        skip();
    gs_snapshot s;
    gs_error err;
    gs_snapshot_init(&s);
    assert_int_equal(gs_snapshot_read_path(&s, path, NULL, &err), 0);
    assert_int_equal(gs_snapshot_finish(&s, &err), 0);
    assert_int_equal(s.pods.n, 2);
    assert_int_equal(s.nskipped, 0);
    const gs_pod *p = &s.pods.v[0];
    assert_string_equal(p->meta.name, "train-7d9f8c-abcde");
    assert_string_equal(p->meta.generate_name, "train-7d9f8c-");
    assert_string_equal(p->meta.namespace_, "ml");
    assert_string_equal(p->meta.owner_kind, "ReplicaSet");
    assert_string_equal(p->meta.owner_name, "train-7d9f8c");
    assert_string_equal(p->node_name, "gpu-node-1");
    assert_string_equal(p->phase, "Running");
    assert_true(p->has_start_time);
    assert_int_equal(p->start_time, 1714557605);
    assert_int_equal(p->priority, 1000);
    assert_int_equal(p->ntolerations, 2);
    assert_int_equal(p->tolerations[0].seconds, 300);
    assert_int_equal(res_value(&p->containers[0].requests, "nvidia.com/gpu"), 2);
    /* the item mapping starts at line 4, column 9 (its '{') */
    assert_int_equal(p->meta.src.line, 4);
    assert_int_equal(p->meta.src.col, 9);
    assert_string_equal(p->meta.src.file, path);
    const gs_pod *q = &s.pods.v[1];
    assert_string_equal(q->phase, "Pending");
    assert_string_equal(q->nominated_node, "gpu-node-2");
    assert_int_equal(res_value(&q->containers[0].requests, "nvidia.com/gpu"), 1);
    assert_int_equal(q->meta.input_index, 1);
    gs_snapshot_free(&s);
}

static void test_yaml_node_list_infers_kind(void **state)
{
    (void)state;
    char path[512];
    if (!data_path(path, sizeof path, "nodelist.yaml"))
        skip();
    gs_snapshot s;
    gs_error err;
    gs_snapshot_init(&s);
    assert_int_equal(gs_snapshot_read_path(&s, path, NULL, &err), 0);
    assert_int_equal(gs_snapshot_finish(&s, &err), 0);
    assert_int_equal(s.nodes.n, 2);
    const gs_node *a = node_named(&s, "gpu-node-1"), *b = node_named(&s, "gpu-node-2");
    assert_non_null(a);
    assert_non_null(b);
    assert_true(a->ready);
    assert_int_equal(res_value(&a->allocatable, "cpu"), 94);
    assert_int_equal(res_value(&a->capacity, "cpu"), 96);
    assert_int_equal(a->meta.src.line, 3);
    assert_int_equal(a->meta.src.col, 3);
    assert_true(b->unschedulable);
    assert_false(b->ready);
    assert_int_equal(res_value(&b->allocatable, "nvidia.com/gpu"), 4);
    gs_snapshot_free(&s);
}

static void test_json_stream_positions(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"a\"}}\n"
             "  {\"kind\": \"Pod\", \"metadata\": {\"name\": \"b\"}}{\"kind\": \"Node\",\n"
             "\"metadata\": {\"name\": \"n\"}}\n");
    assert_int_equal(s.pods.n, 2);
    assert_int_equal(s.nodes.n, 1);
    assert_int_equal(s.pods.v[1].meta.src.line, 2);
    assert_int_equal(s.pods.v[1].meta.src.col, 3);
    assert_int_equal(s.nodes.v[0].meta.src.line, 2);
    assert_int_equal(s.nodes.v[0].meta.src.col, 45);
    gs_snapshot_free(&s);

    /* an error in the third value points into the file, not the segment */
    gs_error err;
    gs_snapshot_init(&s);
    assert_int_equal(read_text(&s,
                               "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"a\"}}\n"
                               "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"b\"}}\n"
                               "{\"kind\": \"Pod\", \"spec\": {\"priority\": \"x\"}}\n",
                               NULL, &err),
                     -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_int_equal(err.line, 3);
    assert_int_equal(err.col, 38);
    assert_string_equal(err.path, "Pod default/(unnamed): spec.priority");
    gs_snapshot_free(&s);
}

/* The JSON path (gs_yt_parse_json) and libfyaml read the same bytes the same way: a
 * leading comment line sends the same JSON through libfyaml, one line lower. */
static void test_json_path_matches_libfyaml(void **state)
{
    (void)state;
    const char *json =
        "{\"apiVersion\": \"v1\", \"items\": [\n"
        "  {\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"p\\u00e9\", "
        "\"namespace\": \"ml\", \"managedFields\": [{\"f:x\": {}}]},\n"
        "   \"spec\": {\"priority\": 7, \"containers\": [{\"name\": \"c\", \"env\": [{\"name\": \"A\"}], "
        "\"resources\": {\"requests\": {\"nvidia.com/gpu\": 2, \"cpu\": \"500m\"}}}]},\n"
        "   \"status\": {\"phase\": \"Running\", \"containerStatuses\": [{\"ready\": true}]}},\n"
        "  {\"kind\": \"Node\", \"metadata\": {\"name\": \"n\"}, \"status\": {\"allocatable\": "
        "{\"nvidia.com/gpu\": \"8\"}}}\n"
        "], \"kind\": \"List\", \"metadata\": {\"resourceVersion\": \"\"}}\n";
    char yaml[2048];
    snprintf(yaml, sizeof yaml, "# via libfyaml\n%s", json);
    gs_snapshot a, b;
    load(&a, json);
    load(&b, yaml);
    assert_int_equal(a.pods.n, 1);
    assert_int_equal(b.pods.n, 1);
    assert_int_equal(a.nodes.n, 1);
    assert_string_equal(a.pods.v[0].meta.name, "p\xc3\xa9");
    assert_string_equal(a.pods.v[0].meta.name, b.pods.v[0].meta.name);
    assert_int_equal(a.pods.v[0].priority, 7);
    assert_int_equal(res_value(&a.pods.v[0].containers[0].requests, "nvidia.com/gpu"), 2);
    assert_int_equal(res_value(&b.pods.v[0].containers[0].requests, "nvidia.com/gpu"), 2);
    assert_int_equal(a.pods.v[0].meta.src.line, 2);
    assert_int_equal(a.pods.v[0].meta.src.col, 3);
    assert_int_equal(b.pods.v[0].meta.src.line, 3);
    assert_int_equal(b.pods.v[0].meta.src.col, 3);
    assert_int_equal(a.nodes.v[0].meta.src.line, 5);
    assert_int_equal(b.nodes.v[0].meta.src.line, 6);
    gs_snapshot_free(&a);
    gs_snapshot_free(&b);
}

/* Errors inside a streamed List (kind written after the items, as kubectl does) keep
 * their object path and file position. */
static void test_json_list_streamed_errors(void **state)
{
    (void)state;
    gs_snapshot s;
    gs_error err;
    gs_snapshot_init(&s);
    assert_int_equal(read_text(&s,
                               "{\"items\": [{\"kind\": \"Pod\", \"metadata\": {\"name\": \"a\"}},\n"
                               "  {\"kind\": \"Pod\", \"metadata\": {\"name\": \"b\"}, \"spec\": {\"priority\": \"x\"}}],\n"
                               " \"kind\": \"PodList\"}\n",
                               NULL, &err),
                     -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_int_equal(err.line, 2);
    assert_int_equal(err.col, 67);
    assert_string_equal(err.path, "Pod default/b: spec.priority");
    gs_snapshot_free(&s);

    /* a scalar item */
    gs_snapshot_init(&s);
    assert_int_equal(read_text(&s, "{\"items\": [{\"kind\": \"Pod\"}, 3], \"kind\": \"PodList\"}", NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_string_equal(err.path, "PodList: items[1]");
    assert_int_equal(err.col, 29);
    gs_snapshot_free(&s);

    /* items without a kind take the List's: "PodList" items are Pods */
    load(&s, "{\"items\": [{\"metadata\": {\"name\": \"a\"}}, {\"metadata\": {\"name\": \"b\"}}],"
             " \"kind\": \"PodList\", \"metadata\": {\"kind\": \"x\"}}");
    assert_int_equal(s.pods.n, 2);
    assert_string_equal(s.pods.v[1].meta.name, "b");
    gs_snapshot_free(&s);

    /* a List kind at the end belongs to the last value only: an earlier value with items
     * is read again without streaming and its objects are not decoded as the List's */
    load(&s, "{\"items\": [{\"metadata\": {\"name\": \"a\"}}], \"kind\": \"Widget\"}\n"
             "{\"items\": [{\"metadata\": {\"name\": \"b\"}}], \"kind\": \"PodList\"}\n");
    assert_int_equal(s.pods.n, 1);
    assert_string_equal(s.pods.v[0].meta.name, "b");
    assert_int_equal(s.nskipped, 1);
    gs_snapshot_free(&s);

    /* broken JSON after streamed items: an error, never a partial List */
    gs_snapshot_init(&s);
    assert_int_equal(read_text(&s, "{\"items\": [{\"kind\": \"Pod\"}, {\"kind\": tru}], \"kind\": \"List\"}", NULL, &err),
                     -1);
    assert_int_equal(err.code, GS_ERR_PARSE);
    assert_non_null(strstr(err.msg, "JSON"));
    gs_snapshot_free(&s);
}

/* What is not strict JSON still reads as before (libfyaml): YAML flow style, comments,
 * single quotes; values under unread keys are checked for strings and brackets only. */
static void test_json_fallback_and_skips(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, "{kind: Pod, metadata: {name: 'a'}}\n");
    assert_int_equal(s.pods.n, 1);
    assert_string_equal(s.pods.v[0].meta.name, "a");
    gs_snapshot_free(&s);
    load(&s, "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"a\",}}\n");
    assert_int_equal(s.pods.n, 1);
    gs_snapshot_free(&s);
    /* a malformed value nobody reads (env) is not tokenized: accepted */
    load(&s, "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"a\"}, \"spec\": {\"containers\": "
             "[{\"name\": \"c\", \"env\": [1 2 {\"x\" \"y\"}]}]}}\n");
    assert_int_equal(s.pods.n, 1);
    gs_snapshot_free(&s);
    /* mismatched brackets, even in a skipped value: libfyaml's error */
    gs_error err;
    gs_snapshot_init(&s);
    assert_int_equal(read_text(&s, "{\"kind\": \"Pod\", \"spec\": {\"env\": [1, 2}}}\n", NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_PARSE);
    assert_non_null(strstr(err.msg, "invalid YAML"));
    gs_snapshot_free(&s);
    /* duplicate keys and depth: the same messages as libfyaml's */
    gs_snapshot_init(&s);
    assert_int_equal(read_text(&s, "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"a\", \"name\": \"b\"}}", NULL, &err),
                     -1);
    assert_string_equal(err.msg, "duplicate mapping key \"name\"");
    assert_int_equal(err.col, 43);
    gs_snapshot_free(&s);
}

/* A file larger than 256 MiB is no longer refused: only max_file_bytes bounds it. */
static void test_no_default_size_limit(void **state)
{
    (void)state;
    char path[] = "/tmp/gs-test-read-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs("{\"kind\": \"Pod\", \"metadata\": {\"name\": \"big\", \"annotations\": {\"a\": \"", f);
    /* a sparse hole would not do (NUL bytes): 260 MiB of 'x' in one string */
    static char chunk[1 << 20];
    memset(chunk, 'x', sizeof chunk);
    for (int i = 0; i < 260; i++)
        fwrite(chunk, 1, sizeof chunk, f);
    fputs("\"}}}\n", f);
    fclose(f);
    gs_snapshot s;
    gs_error err;
    gs_snapshot_init(&s);
    int rc = gs_snapshot_read_path(&s, path, NULL, &err);
    if (rc != 0)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_int_equal(s.pods.n, 1);
    gs_snapshot_free(&s);
    gs_read_opts tiny = {.max_file_bytes = 1 << 20};
    gs_snapshot_init(&s);
    assert_int_equal(gs_snapshot_read_path(&s, path, &tiny, &err), -1);
    assert_int_equal(err.code, GS_ERR_LIMIT);
    assert_non_null(strstr(err.msg, "larger than the limit"));
    gs_snapshot_free(&s);
    unlink(path);
}

/* ---------------------------------------------------------------- workloads */

static void test_workload_expansion(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s,
         "kind: Deployment\n"
         "metadata: {name: web, namespace: prod, creationTimestamp: \"2024-05-01T00:00:00Z\"}\n"
         "spec:\n"
         "  replicas: 3\n"
         "  template:\n"
         "    metadata: {labels: {app: web}, annotations: {a: b}}\n"
         "    spec:\n"
         "      priorityClassName: high\n"
         "      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n"
         "---\n"
         "kind: ReplicaSet\n"
         "metadata: {name: rs}\n"
         "spec: {replicas: 0, template: {spec: {containers: [{name: c}]}}}\n"
         "---\n"
         "kind: StatefulSet\n"
         "metadata: {name: db}\n"
         "spec: {template: {spec: {containers: [{name: c}]}}}\n");
    assert_int_equal(s.pods.n, 4);
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "web-%d", i);
        const gs_pod *p = pod_named(&s, name);
        assert_non_null(p);
        assert_string_equal(p->meta.namespace_, "prod");
        assert_string_equal(p->workload, "Deployment/web");
        assert_string_equal(p->meta.owner_kind, "Deployment");
        assert_string_equal(p->meta.owner_name, "web");
        assert_string_equal(gs_labels_get(&p->meta.labels, "app"), "web");
        assert_string_equal(gs_labels_get(&p->meta.annotations, "a"), "b");
        assert_true(p->meta.has_creation);
        assert_int_equal(p->meta.creation, 1714521600);
        assert_string_equal(p->priority_class_name, "high");
        assert_string_equal(p->node_name, "");
        assert_int_equal(res_value(&p->containers[0].requests, "nvidia.com/gpu"), 1);
        assert_int_equal(p->meta.input_index, (uint32_t)i);
        assert_int_equal(p->meta.src.line, 1);
    }
    const gs_pod *db = pod_named(&s, "db-0");
    assert_non_null(db);
    assert_string_equal(db->meta.namespace_, "default");
    assert_string_equal(db->workload, "StatefulSet/db");
    assert_false(db->meta.has_creation);
    assert_null(pod_named(&s, "rs-0"));
    gs_snapshot_free(&s);
}

static uint32_t job_pods(const char *spec_and_status)
{
    char buf[1024];
    snprintf(buf, sizeof buf,
             "kind: Job\nmetadata: {name: j}\n%s"
             "  template: {spec: {containers: [{name: c}]}}\n",
             spec_and_status);
    gs_snapshot s;
    load(&s, buf);
    uint32_t n = (uint32_t)s.pods.n;
    for (uint32_t i = 0; i < n; i++)
        assert_string_equal(s.pods.v[i].workload, "Job/j");
    gs_snapshot_free(&s);
    return n;
}

static void test_job_parallelism(void **state)
{
    (void)state;
    assert_int_equal(job_pods("spec:\n"), 1);
    assert_int_equal(job_pods("spec:\n  parallelism: 4\n"), 4);
    assert_int_equal(job_pods("spec:\n  parallelism: 4\n  completions: 2\n"), 2);
    assert_int_equal(job_pods("spec:\n  parallelism: 4\n  completions: 10\n"), 4);
    assert_int_equal(job_pods("status: {succeeded: 7}\nspec:\n  parallelism: 4\n  completions: 10\n"), 3);
    assert_int_equal(job_pods("status: {succeeded: 12}\nspec:\n  parallelism: 4\n  completions: 10\n"), 0);
    assert_int_equal(job_pods("spec:\n  completions: 5\n"), 1);
    assert_int_equal(job_pods("spec:\n  parallelism: 0\n"), 0);
    assert_int_equal(job_pods("spec:\n  parallelism: 3\n  suspend: true\n"), 0);
}

static void test_cronjob(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s,
         "kind: CronJob\n"
         "metadata: {name: nightly, namespace: ml}\n"
         "spec:\n"
         "  schedule: \"0 0 * * *\"\n"
         "  jobTemplate:\n"
         "    spec:\n"
         "      parallelism: 2\n"
         "      template:\n"
         "        metadata: {labels: {job: nightly}}\n"
         "        spec: {containers: [{name: c}]}\n"
         "---\n"
         "kind: CronJob\n"
         "metadata: {name: paused}\n"
         "spec:\n"
         "  suspend: true\n"
         "  jobTemplate: {spec: {template: {spec: {containers: [{name: c}]}}}}\n");
    assert_int_equal(s.pods.n, 2);
    const gs_pod *p = pod_named(&s, "nightly-1");
    assert_non_null(p);
    assert_string_equal(p->workload, "CronJob/nightly");
    assert_string_equal(p->meta.owner_kind, "CronJob");
    assert_string_equal(p->meta.namespace_, "ml");
    assert_string_equal(gs_labels_get(&p->meta.labels, "job"), "nightly");
    gs_snapshot_free(&s);
}

static const char daemonset_cluster[] =
    "kind: Node\nmetadata: {name: plain, labels: {gpu: \"true\"}}\n"
    "---\n"
    "kind: Node\nmetadata: {name: tainted, labels: {gpu: \"true\"}}\n"
    "spec: {taints: [{key: nvidia.com/gpu, effect: NoSchedule}]}\n"
    "---\n"
    "kind: Node\nmetadata: {name: cordoned, labels: {gpu: \"true\"}}\n"
    "spec:\n"
    "  unschedulable: true\n"
    "  taints:\n"
    "  - {key: node.kubernetes.io/unschedulable, effect: NoSchedule}\n"
    "  - {key: node.kubernetes.io/not-ready, effect: NoExecute}\n"
    "  - {key: soft, effect: PreferNoSchedule}\n"
    "---\n"
    "kind: Node\nmetadata: {name: cpu-only}\n"
    "---\n"
    "kind: Node\nmetadata: {name: no-net, labels: {gpu: \"true\"}}\n"
    "spec: {taints: [{key: node.kubernetes.io/network-unavailable, effect: NoSchedule}]}\n";

static void test_daemonset(void **state)
{
    (void)state;
    char buf[4096];
    snprintf(buf, sizeof buf,
             "kind: DaemonSet\n"
             "metadata: {name: agent, namespace: kube-system}\n"
             "spec:\n"
             "  template:\n"
             "    spec:\n"
             "      nodeSelector: {gpu: \"true\"}\n"
             "      containers: [{name: c, resources: {requests: {cpu: 100m}}}]\n"
             "---\n%s"
             "---\n"
             "kind: DaemonSet\n"
             "metadata: {name: gpu-plugin}\n"
             "spec:\n"
             "  template:\n"
             "    spec:\n"
             "      hostNetwork: true\n"
             "      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"
             "      affinity:\n"
             "        nodeAffinity:\n"
             "          requiredDuringSchedulingIgnoredDuringExecution:\n"
             "            nodeSelectorTerms:\n"
             "            - matchExpressions: [{key: gpu, operator: Exists}]\n"
             "      containers: [{name: c}]\n",
             daemonset_cluster);
    gs_snapshot s;
    gs_error err;
    gs_snapshot_init(&s);
    assert_int_equal(read_text(&s, buf, NULL, &err), 0);
    assert_int_equal(s.pods.n, 0); /* held until finish */
    assert_int_equal(gs_snapshot_finish(&s, &err), 0);
    assert_true(s.finished);

    /* agent: gpu=true nodes whose NoSchedule/NoExecute taints are auto-tolerated:
     * plain and cordoned (unschedulable + not-ready are automatic); not tainted (gpu
     * taint), not cpu-only (selector), not no-net (no hostNetwork). */
    const gs_pod *a0 = pod_named(&s, "agent-0"), *a1 = pod_named(&s, "agent-1");
    assert_non_null(a0);
    assert_non_null(a1);
    assert_null(pod_named(&s, "agent-2"));
    assert_string_equal(a0->workload, "DaemonSet/agent");
    assert_string_equal(a0->meta.namespace_, "kube-system");
    assert_string_equal(a0->node_name, "");
    assert_int_equal(a0->ntolerations, 6);
    assert_non_null(a0->required);
    assert_int_equal(a0->required->nterms, 1);
    assert_int_equal(a0->required->terms[0].nfields, 1);
    assert_string_equal(a0->required->terms[0].fields[0].key, "metadata.name");
    assert_int_equal(a0->required->terms[0].fields[0].op, GS_SEL_IN);
    assert_string_equal(a0->required->terms[0].fields[0].values[0], "plain");
    assert_string_equal(a1->required->terms[0].fields[0].values[0], "cordoned");

    /* gpu-plugin tolerates the gpu taint and, with hostNetwork, network-unavailable;
     * its own matchExpressions stay in the pinned term */
    const char *expect[] = {"plain", "tainted", "cordoned", "no-net"};
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "gpu-plugin-%d", i);
        const gs_pod *p = pod_named(&s, name);
        assert_non_null(p);
        assert_int_equal(p->ntolerations, 8);
        assert_int_equal(p->required->nterms, 1);
        assert_int_equal(p->required->terms[0].nexprs, 1);
        assert_string_equal(p->required->terms[0].exprs[0].key, "gpu");
        assert_string_equal(p->required->terms[0].fields[0].values[0], expect[i]);
    }
    assert_null(pod_named(&s, "gpu-plugin-4"));
    assert_int_equal(s.pods.n, 6);

    /* reading after finish is a usage error */
    assert_int_equal(read_text(&s, "kind: Pod\n", NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_USAGE);
    gs_snapshot_free(&s);
}

/* ---------------------------------------------------------------- errors */

typedef struct bad_case {
    const char *what;
    const char *text;
    gs_code code;
    int line;
    const char *path; /* exact err.path, or NULL to skip */
    const char *msg;  /* substring of err.msg */
} bad_case;

static const bad_case bad_cases[] = {
    {"bad YAML", "kind: Pod\nmetadata:\n  name: a\n  labels: {app: x\n", GS_ERR_PARSE, 5, NULL, "invalid YAML"},
    {"tab-indented YAML", "kind: Pod\nmetadata:\n\tname: a\n", GS_ERR_PARSE, 3, NULL, "invalid YAML"},
    {"replicas as a word", "kind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: \"three\"\n", GS_ERR_INVALID, 4,
     "Deployment default/d: spec.replicas", "expected an integer, got the string \"three\""},
    {"replicas plain word", "kind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: three\n", GS_ERR_INVALID, 4,
     "Deployment default/d: spec.replicas", "expected an integer, got \"three\""},
    {"negative replicas", "kind: StatefulSet\nmetadata: {name: d, namespace: x}\nspec:\n  replicas: -1\n", GS_ERR_INVALID,
     4, "StatefulSet x/d: spec.replicas", "greater than or equal to 0"},
    {"invalid quantity",
     "kind: Pod\nmetadata: {name: train-0}\nspec:\n  containers:\n  - name: c\n    resources:\n"
     "      limits:\n        nvidia.com/gpu: 1.5.0\n",
     GS_ERR_INVALID, 8, "Pod default/train-0: spec.containers[0].resources.limits[nvidia.com/gpu]",
     "invalid quantity \"1.5.0\": quantities must match"},
    {"unknown selector operator",
     "kind: Pod\nmetadata: {name: p}\nspec:\n  affinity:\n    nodeAffinity:\n"
     "      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n"
     "        - matchExpressions:\n          - key: gpu\n            operator: Inn\n            values: [a]\n",
     GS_ERR_INVALID, 10,
     "Pod default/p: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
     "nodeSelectorTerms[0].matchExpressions[0].operator",
     "unknown operator \"Inn\" (expected In, NotIn, Exists, DoesNotExist, Gt, Lt)"},
    {"taint without key", "kind: Node\nmetadata: {name: n}\nspec:\n  taints:\n  - effect: NoSchedule\n",
     GS_ERR_INVALID, 5, "Node n: spec.taints[0].key", "required field is missing"},
    {"taint with bad effect", "kind: Node\nmetadata: {name: n}\nspec:\n  taints:\n  - key: a\n    effect: NoScheduler\n",
     GS_ERR_INVALID, 6, "Node n: spec.taints[0].effect", "unknown taint effect \"NoScheduler\""},
    {"taint without effect", "kind: Node\nmetadata: {name: n}\nspec:\n  taints:\n  - key: a\n", GS_ERR_INVALID, 5,
     "Node n: spec.taints[0].effect", "required field is missing"},
    {"resources as a list",
     "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources:\n    - cpu: 1\n",
     GS_ERR_INVALID, 7, "Pod default/p: spec.containers[0].resources", "expected a mapping, got a sequence"},
    {"non-integer priority value", "kind: PriorityClass\nmetadata: {name: high}\nvalue: 1.5\n", GS_ERR_INVALID, 3,
     "PriorityClass high: value", "expected an integer, got \"1.5\""},
    {"priority value out of int32", "kind: PriorityClass\nmetadata: {name: high}\nvalue: 3000000000\n",
     GS_ERR_INVALID, 3, "PriorityClass high: value", "must be between"},
    {"pod priority as string", "kind: Pod\nmetadata: {name: p}\nspec:\n  priority: \"10\"\n", GS_ERR_INVALID, 4,
     "Pod default/p: spec.priority", "the string \"10\""},
    {"missing kind", "apiVersion: v1\nmetadata: {name: x}\n", GS_ERR_INVALID, 1, "kind", "required field is missing"},
    {"kind not a string", "kind: [Pod]\n", GS_ERR_INVALID, 1, "kind", "expected a string, got a sequence"},
    {"document not a mapping", "kind: Pod\n---\n- a\n- b\n", GS_ERR_INVALID, 3, NULL, "expected a mapping"},
    {"label value a mapping", "kind: Pod\nmetadata:\n  name: p\n  labels:\n    app: {x: y}\n", GS_ERR_INVALID, 5,
     "Pod default/p: metadata.labels[app]", "expected a string, got a mapping"},
    {"annotation a sequence", "kind: Pod\nmetadata:\n  name: p\n  annotations:\n    note: [a]\n", GS_ERR_INVALID, 5,
     "Pod default/p: metadata.annotations[note]", "expected a string, got a sequence"},
    {"bad timestamp", "kind: Pod\nmetadata:\n  name: p\n  creationTimestamp: yesterday\n", GS_ERR_INVALID, 4,
     "Pod default/p: metadata.creationTimestamp", "RFC3339"},
    {"bad preemption policy", "kind: Pod\nmetadata: {name: p}\nspec:\n  preemptionPolicy: Sometimes\n",
     GS_ERR_INVALID, 4, "Pod default/p: spec.preemptionPolicy", "unknown preemption policy"},
    {"bad quota scope", "kind: ResourceQuota\nmetadata: {name: q}\nspec:\n  scopes: [Terminating, Weekend]\n",
     GS_ERR_INVALID, 4, "ResourceQuota default/q: spec.scopes[1]", "unknown quota scope \"Weekend\""},
    {"quota scope operator",
     "kind: ResourceQuota\nmetadata: {name: q}\nspec:\n  scopeSelector:\n    matchExpressions:\n"
     "    - {scopeName: BestEffort, operator: In, values: [x]}\n",
     GS_ERR_INVALID, 6, "ResourceQuota default/q: spec.scopeSelector.matchExpressions[0].operator", "must be Exists"},
    {"pdb percent over 100", "kind: PodDisruptionBudget\nmetadata: {name: b}\nspec:\n  maxUnavailable: 150%\n",
     GS_ERR_INVALID, 4, "PodDisruptionBudget default/b: spec.maxUnavailable", "invalid percentage"},
    {"pdb quoted number", "kind: PodDisruptionBudget\nmetadata: {name: b}\nspec:\n  minAvailable: \"2\"\n",
     GS_ERR_INVALID, 4, "PodDisruptionBudget default/b: spec.minAvailable", "percentage"},
    {"pdb Gt operator", "kind: PodDisruptionBudget\nmetadata: {name: b}\nspec:\n  selector:\n"
                        "    matchExpressions: [{key: a, operator: Gt, values: [\"1\"]}]\n",
     GS_ERR_INVALID, 5, "PodDisruptionBudget default/b: spec.selector.matchExpressions[0].operator",
     "(expected In, NotIn, Exists, DoesNotExist)"},
    {"boolean as string", "kind: Node\nmetadata: {name: n}\nspec:\n  unschedulable: \"yes\"\n", GS_ERR_INVALID, 4,
     "Node n: spec.unschedulable", "expected a boolean"},
    {"workload without template", "kind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 2\n", GS_ERR_INVALID, 4,
     "Deployment default/d: spec.template", "required field is missing"},
    {"template spec error path",
     "kind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    spec:\n      containers:\n"
     "      - name: c\n        resources: {requests: {cpu: lots}}\n",
     GS_ERR_INVALID, 8, "Deployment default/d: spec.template.spec.containers[0].resources.requests[cpu]",
     "invalid quantity \"lots\""},
    {"alias", "kind: Pod\nmetadata: &m {name: p}\nspec: *m\n", GS_ERR_INVALID, 3, NULL, "aliases are not supported"},
    {"duplicate key", "kind: Pod\nmetadata:\n  name: a\n  name: b\n", GS_ERR_PARSE, 4, NULL, "duplicate mapping key \"name\""},
    {"complex key", "kind: Pod\nmetadata:\n  ? [a]\n  : b\n", GS_ERR_INVALID, 3, NULL, "mapping keys must be scalars"},
    {"List items not a sequence", "kind: List\nitems: {a: b}\n", GS_ERR_INVALID, 2, "List: items", "expected a sequence"},
    {"toleration seconds", "kind: Pod\nmetadata: {name: p}\nspec:\n  tolerations:\n  - {key: a, tolerationSeconds: 1m}\n",
     GS_ERR_INVALID, 5, "Pod default/p: spec.tolerations[0].tolerationSeconds", "expected an integer"},
    {"preferred weight", "kind: Pod\nmetadata: {name: p}\nspec:\n  affinity:\n    nodeAffinity:\n"
                         "      preferredDuringSchedulingIgnoredDuringExecution:\n      - weight: 101\n",
     GS_ERR_INVALID, 7,
     "Pod default/p: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
     "must be between 0 and 100"},
};

static void test_malformed(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
        const bad_case *c = &bad_cases[i];
        gs_snapshot s;
        gs_error err;
        gs_snapshot_init(&s);
        int rc = read_text(&s, c->text, NULL, &err);
        char buf[1024];
        gs_error_format(&err, buf, sizeof buf);
        if (rc != -1 || err.code != c->code || err.line != c->line || (c->path && strcmp(err.path, c->path)) ||
            !strstr(err.msg, c->msg))
            print_error("case '%s': rc=%d code=%s got: %s\n", c->what, rc, gs_code_name(err.code), buf);
        assert_int_equal(rc, -1);
        assert_int_equal(err.code, c->code);
        assert_int_equal(err.line, c->line);
        assert_true(err.col > 0);
        assert_string_equal(err.file, "in.yaml");
        if (c->path)
            assert_string_equal(err.path, c->path);
        assert_non_null(strstr(err.msg, c->msg));
        gs_snapshot_free(&s);
    }
}

static void test_error_in_second_document(void **state)
{
    (void)state;
    gs_snapshot s;
    gs_error err;
    gs_snapshot_init(&s);
    const char *text = "kind: Pod\n"
                       "metadata: {name: ok}\n"
                       "---\n"
                       "kind: Pod\n"
                       "metadata: {name: train-0}\n"
                       "spec:\n"
                       "  containers:\n"
                       "  - name: c\n"
                       "    resources:\n"
                       "      limits: {cpu: \"1\", nvidia.com/gpu: 1.5.0}\n";
    assert_int_equal(read_text(&s, text, NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_int_equal(err.line, 10);
    assert_int_equal(err.col, 42);
    assert_string_equal(err.path, "Pod default/train-0: spec.containers[0].resources.limits[nvidia.com/gpu]");
    char buf[1024];
    gs_error_format(&err, buf, sizeof buf);
    assert_non_null(strstr(buf, "in.yaml:10:42: error: Pod default/train-0: spec.containers[0]"));
    /* the first document was read before the error */
    assert_int_equal(s.pods.n, 1);
    gs_snapshot_free(&s);
}

/* ---------------------------------------------------------------- misc */

static void test_unknown_kinds_and_empty_documents(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, "---\n"
             "# nothing here\n"
             "---\n"
             "kind: ConfigMap\nmetadata: {name: a}\n"
             "---\n"
             "kind: Service\nmetadata: {name: b}\n"
             "---\n"
             "kind: ConfigMap\nmetadata: {name: c}\n"
             "---\n"
             "~\n"
             "---\n"
             "kind: List\nitems:\n- {kind: Widget, apiVersion: example.com/v1}\n- {kind: Pod, metadata: {name: p}}\n"
             "---\n"
             "kind: FooList\nmetadata: {}\n"
             "---\n"
             "kind: List\n"
             "...\n");
    assert_int_equal(s.nskipped, 5);
    assert_int_equal(s.skipped.n, 4);
    assert_string_equal(s.skipped.v[0].kind, "ConfigMap");
    assert_int_equal(s.skipped.v[0].count, 2);
    assert_string_equal(s.skipped.v[1].kind, "Service");
    assert_string_equal(s.skipped.v[2].kind, "Widget.example.com");
    assert_string_equal(s.skipped.v[3].kind, "FooList");
    assert_int_equal(s.pods.n, 1);
    assert_int_equal(s.pods.v[0].meta.input_index, 0); /* skipped objects take no index */
    gs_snapshot_free(&s);
}

static void test_directory_order(void **state)
{
    (void)state;
    char path[512];
    if (!data_path(path, sizeof path, "dir"))
        skip();
    gs_snapshot s;
    gs_error err;
    gs_snapshot_init(&s);
    assert_int_equal(gs_snapshot_read_path(&s, path, NULL, &err), 0);
    assert_int_equal(gs_snapshot_finish(&s, &err), 0);
    /* bytewise order: a.yml, b.yaml (2 docs), ba/d.yaml, c.json; hidden and .txt skipped */
    const char *expect[] = {"a", "b", "b2", "ba-d", "c"};
    assert_int_equal(s.namespaces.n, 5);
    for (int i = 0; i < 5; i++) {
        assert_string_equal(s.namespaces.v[i].meta.name, expect[i]);
        assert_int_equal(s.namespaces.v[i].meta.input_index, (uint32_t)i);
    }
    assert_non_null(strstr(s.namespaces.v[3].meta.src.file, "dir/ba/d.yaml"));
    assert_int_equal(s.namespaces.v[2].meta.src.line, 4);
    gs_snapshot_free(&s);

    /* a missing path is an I/O error naming the path */
    gs_snapshot_init(&s);
    data_path(path, sizeof path, "does-not-exist.yaml");
    assert_int_equal(gs_snapshot_read_path(&s, path, NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_IO);
    assert_string_equal(err.file, path);
    gs_snapshot_free(&s);
}

static void test_limits(void **state)
{
    (void)state;
    gs_snapshot s;
    gs_error err;
    gs_read_opts opts = {.max_replicas = 5};
    gs_snapshot_init(&s);
    assert_int_equal(read_text(&s,
                               "kind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 6\n"
                               "  template: {spec: {containers: [{name: c}]}}\n",
                               &opts, &err),
                     -1);
    assert_int_equal(err.code, GS_ERR_LIMIT);
    assert_int_equal(err.line, 4);
    assert_string_equal(err.path, "Deployment default/d: spec.replicas");
    gs_snapshot_free(&s);

    gs_read_opts few = {.max_objects = 3};
    gs_snapshot_init(&s);
    assert_int_equal(read_text(&s, "kind: Pod\n---\nkind: Pod\n---\nkind: Node\n---\nkind: Pod\n", &few, &err), -1);
    assert_int_equal(err.code, GS_ERR_LIMIT);
    assert_int_equal(err.line, 7);
    assert_int_equal(s.next_index, 3);
    gs_snapshot_free(&s);

    gs_read_opts tiny = {.max_file_bytes = 16};
    gs_snapshot_init(&s);
    assert_int_equal(read_text(&s, "kind: Pod\nmetadata: {name: p}\n", &tiny, &err), -1);
    assert_int_equal(err.code, GS_ERR_LIMIT);
    gs_snapshot_free(&s);

    /* deep nesting is bounded */
    char deep[2048];
    size_t o = 0;
    for (int i = 0; i < 600; i++)
        deep[o++] = '[';
    deep[o] = '\0';
    gs_snapshot_init(&s);
    assert_int_equal(read_text(&s, deep, NULL, &err), -1);
    assert_true(err.code == GS_ERR_LIMIT || err.code == GS_ERR_PARSE);
    gs_snapshot_free(&s);
}

static void test_several_reads_accumulate(void **state)
{
    (void)state;
    gs_snapshot s;
    gs_error err;
    gs_snapshot_init(&s);
    assert_int_equal(gs_snapshot_read_buffer(&s, "nodes.yaml", daemonset_cluster, strlen(daemonset_cluster), NULL, &err),
                     0);
    const char *ds = "kind: DaemonSet\nmetadata: {name: all}\n"
                     "spec: {template: {spec: {tolerations: [{operator: Exists}], containers: [{name: c}]}}}\n";
    assert_int_equal(gs_snapshot_read_buffer(&s, "ds.yaml", ds, strlen(ds), NULL, &err), 0);
    assert_int_equal(gs_snapshot_read_buffer(&s, "more.yaml", "kind: Node\nmetadata: {name: late}\n", 34, NULL, &err),
                     0);
    assert_int_equal(gs_snapshot_finish(&s, &err), 0);
    assert_int_equal(gs_snapshot_finish(&s, &err), 0); /* idempotent */
    /* a tolerate-everything DaemonSet lands on all 6 nodes, including one read after it */
    assert_int_equal(s.pods.n, 6);
    assert_string_equal(s.pods.v[5].required->terms[0].fields[0].values[0], "late");
    assert_string_equal(s.pods.v[0].meta.src.file, "ds.yaml");
    assert_string_equal(s.nodes.v[5].meta.src.file, "more.yaml");
    gs_snapshot_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kind),
        cmocka_unit_test(test_pod_defaults_and_sidecars),
        cmocka_unit_test(test_tolerations_and_affinity),
        cmocka_unit_test(test_scalar_styles),
        cmocka_unit_test(test_kubectl_json_list),
        cmocka_unit_test(test_yaml_node_list_infers_kind),
        cmocka_unit_test(test_json_stream_positions),
        cmocka_unit_test(test_json_path_matches_libfyaml),
        cmocka_unit_test(test_json_list_streamed_errors),
        cmocka_unit_test(test_json_fallback_and_skips),
        cmocka_unit_test(test_no_default_size_limit),
        cmocka_unit_test(test_workload_expansion),
        cmocka_unit_test(test_job_parallelism),
        cmocka_unit_test(test_cronjob),
        cmocka_unit_test(test_daemonset),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_error_in_second_document),
        cmocka_unit_test(test_unknown_kinds_and_empty_documents),
        cmocka_unit_test(test_directory_order),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_several_reads_accumulate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
