/*
 * test_read_dra.c - the reader of resource.k8s.io objects (lib/kube/read_dra.c) and of the
 * DRA fields of pods (read.c): DeviceClass, ResourceClaim, ResourceClaimTemplate,
 * ResourceSlice in the v1, v1beta2 and v1beta1 shapes, pods' resourceClaims, container
 * claims and claim statuses; errors with positions; keep_going rollback; duplicates.
 *
 * Fixtures under $GS_TEST_DATA/dra follow the NVIDIA DRA driver's published conventions
 * (DeviceClasses, demo specs, the slices it publishes for an H100 node and for an A100
 * node with MIG devices) and the Kubernetes documentation's claim examples.
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

/* ---------------------------------------------------------------- helpers */

static int read_text(gs_snapshot *s, const char *text, const gs_read_opts *opts, gs_error *err)
{
    gs_error_clear(err);
    return gs_snapshot_read_buffer(s, "in.yaml", text, strlen(text), opts, err);
}

static void fail_with(const gs_error *err)
{
    char buf[1024];
    gs_error_format(err, buf, sizeof buf);
    print_error("unexpected error: %s\n", buf);
}

static void load(gs_snapshot *s, const char *text)
{
    gs_error err;
    gs_snapshot_init(s);
    int rc = read_text(s, text, NULL, &err);
    if (rc == 0)
        rc = gs_snapshot_finish(s, &err);
    if (rc != 0)
        fail_with(&err);
    assert_int_equal(rc, 0);
}

/* Read fixture dra/<rel> into s (initialised here); skips when GS_TEST_DATA is unset. */
static void load_file(gs_snapshot *s, const char *rel)
{
    const char *base = getenv("GS_TEST_DATA");
    if (!base)
        skip();
    char path[1024];
    snprintf(path, sizeof path, "%s/dra/%s", base, rel);
    gs_error err;
    gs_error_clear(&err);
    gs_snapshot_init(s);
    int rc = gs_snapshot_read_path(s, path, NULL, &err);
    if (rc == 0)
        rc = gs_snapshot_finish(s, &err);
    if (rc != 0)
        fail_with(&err);
    assert_int_equal(rc, 0);
}

static int mismatches; /* expect_error's, reported all at once by the test */

/* Reading text must fail with code, at line:col, with path and message containing the
 * given fragments. */
static void expect_error(const char *text, gs_code code, int line, int col, const char *path, const char *msg)
{
    gs_snapshot s;
    gs_error err;
    gs_snapshot_init(&s);
    int rc = read_text(&s, text, NULL, &err);
    if (rc == 0) {
        print_error("expected an error containing \"%s\"\n", msg);
        fail();
    }
    if (err.code != code || (line && err.line != line) || (col && err.col != col) || !strstr(err.path, path) ||
        !strstr(err.msg, msg)) {
        fail_with(&err);
        print_error("expected code %d at %d:%d, path \"%s\", message \"%s\"\n", code, line, col, path, msg);
        mismatches++;
    }
    assert_string_equal(err.file, "in.yaml");
    gs_snapshot_free(&s);
}

static const gs_dra_device *device_named(const gs_resource_slice *sl, const char *name)
{
    for (uint32_t i = 0; i < sl->ndevices; i++)
        if (!strcmp(sl->devices[i].name, name))
            return &sl->devices[i];
    return NULL;
}

static const gs_cel_attr *attr(const gs_dra_device *d, const char *domain, const char *name)
{
    for (uint32_t i = 0; i < d->nattrs; i++)
        if (!strcmp(d->attrs[i].domain, domain) && !strcmp(d->attrs[i].name, name))
            return &d->attrs[i];
    return NULL;
}

static int64_t cap_value(const gs_dra_device *d, const char *domain, const char *name)
{
    for (uint32_t i = 0; i < d->ncaps; i++)
        if (!strcmp(d->caps[i].domain, domain) && !strcmp(d->caps[i].name, name))
            return gs_quantity_value(&d->caps[i].value);
    return -1;
}

static void assert_attrs_sorted(const gs_dra_device *d)
{
    for (uint32_t i = 1; i < d->nattrs; i++) {
        int c = strcmp(d->attrs[i - 1].domain, d->attrs[i].domain);
        assert_true(c < 0 || (c == 0 && strcmp(d->attrs[i - 1].name, d->attrs[i].name) < 0));
    }
    for (uint32_t i = 1; i < d->ncaps; i++) {
        int c = strcmp(d->caps[i - 1].domain, d->caps[i].domain);
        assert_true(c < 0 || (c == 0 && strcmp(d->caps[i - 1].name, d->caps[i].name) < 0));
    }
}

static const gs_pod *pod_named(const gs_snapshot *s, const char *ns, const char *name)
{
    for (size_t i = 0; i < s->pods.n; i++)
        if (!strcmp(s->pods.v[i].meta.name, name) && !strcmp(s->pods.v[i].meta.namespace_, ns))
            return &s->pods.v[i];
    return NULL;
}

static const gs_resource_claim *template_named(const gs_snapshot *s, const char *name)
{
    for (size_t i = 0; i < s->claim_templates.n; i++)
        if (!strcmp(s->claim_templates.v[i].meta.name, name))
            return &s->claim_templates.v[i];
    return NULL;
}

/* ---------------------------------------------------------------- DeviceClass */

static void test_nvidia_classes(void **state)
{
    (void)state;
    gs_snapshot s;
    load_file(&s, "nvidia-classes.yaml");
    assert_int_equal(s.device_classes.n, 2);
    const gs_device_class *gpu = &s.device_classes.v[0], *mig = &s.device_classes.v[1];
    assert_string_equal(gpu->meta.name, "gpu.nvidia.com");
    assert_string_equal(gpu->meta.namespace_, "");
    assert_int_equal(gpu->nselectors, 1);
    assert_non_null(strstr(gpu->selectors[0].cel, "type == 'gpu'"));
    assert_int_equal(gpu->selectors[0].src.line, 11);
    assert_int_equal(gpu->selectors[0].src.col, 19);
    assert_string_equal(gpu->extended_resource_name, "nvidia.com/gpu");
    assert_string_equal(mig->meta.name, "mig.nvidia.com");
    assert_string_equal(mig->extended_resource_name, "");
    assert_non_null(strstr(mig->selectors[0].cel, "type == 'mig'"));
    assert_int_equal(s.nskipped, 0);
    /* input order and indexes */
    assert_true(gpu->meta.input_index < mig->meta.input_index);
    gs_snapshot_free(&s);
}

static void test_class_config_and_versions(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, "apiVersion: resource.k8s.io/v1beta1\n"
             "kind: DeviceClass\n"
             "metadata: {name: a}\n"
             "spec:\n"
             "  config:\n"
             "  - opaque: {driver: gpu.nvidia.com, parameters: {x: 1}}\n"
             "  - opaque: {driver: gpu.nvidia.com, parameters: {y: 2}}\n"
             "---\n"
             "apiVersion: resource.k8s.io/v1beta2\n"
             "kind: DeviceClass\n"
             "metadata: {name: b}\n"
             "---\n"
             "apiVersion: resource.k8s.io/v1alpha3\n"
             "kind: DeviceClass\n"
             "metadata: {name: c}\n");
    assert_int_equal(s.device_classes.n, 2);
    assert_int_equal(s.device_classes.v[0].nconfig, 2);
    assert_int_equal(s.device_classes.v[1].nselectors, 0);
    /* a version not read is counted as skipped, as for every kind */
    assert_int_equal(s.nskipped, 1);
    assert_string_equal(s.skipped.v[0].kind, "DeviceClass.resource.k8s.io/v1alpha3");
    gs_snapshot_free(&s);
}

/* ---------------------------------------------------------------- ResourceSlice */

static void test_h100_slice(void **state)
{
    (void)state;
    gs_snapshot s;
    load_file(&s, "h100-slice.yaml");
    assert_int_equal(s.resource_slices.n, 1);
    const gs_resource_slice *sl = &s.resource_slices.v[0];
    assert_string_equal(sl->driver, "gpu.nvidia.com");
    assert_string_equal(sl->pool, "h100-node-1");
    assert_int_equal(sl->generation, 1);
    assert_int_equal(sl->slice_count, 1);
    assert_string_equal(sl->node_name, "h100-node-1");
    assert_false(sl->all_nodes);
    assert_null(sl->node_selector);
    assert_int_equal(sl->ndevices, 8);
    for (uint32_t i = 0; i < 8; i++) {
        char name[16];
        snprintf(name, sizeof name, "gpu-%u", i);
        const gs_dra_device *d = device_named(sl, name);
        assert_non_null(d);
        assert_int_equal(d->nattrs, 11);
        assert_attrs_sorted(d);
        /* unqualified names in the driver's domain, qualified ones in their own */
        assert_string_equal(d->attrs[0].domain, "gpu.nvidia.com");
        assert_string_equal(d->attrs[0].name, "architecture");
        const gs_cel_attr *a = attr(d, "gpu.nvidia.com", "type");
        assert_non_null(a);
        assert_int_equal(a->kind, GS_CEL_ATTR_STRING);
        assert_string_equal(a->s, "gpu");
        a = attr(d, "gpu.nvidia.com", "cudaComputeCapability");
        assert_int_equal(a->kind, GS_CEL_ATTR_VERSION);
        assert_string_equal(a->s, "9.0.0");
        a = attr(d, "resource.kubernetes.io", "numaNode");
        assert_non_null(a);
        assert_int_equal(a->kind, GS_CEL_ATTR_INT);
        assert_int_equal(a->i, i < 4 ? 0 : 1);
        assert_non_null(attr(d, "resource.kubernetes.io", "pciBusID"));
        assert_int_equal(d->ncaps, 1);
        assert_string_equal(d->caps[0].domain, "gpu.nvidia.com");
        assert_int_equal(cap_value(d, "gpu.nvidia.com", "memory"), 81559LL << 20);
        assert_null(d->cap_policies);
        assert_string_equal(d->node_name, "");
    }
    gs_snapshot_free(&s);
}

static void test_a100_mig_slice_v1beta1(void **state)
{
    (void)state;
    gs_snapshot s;
    load_file(&s, "a100-mig-slice.yaml");
    assert_int_equal(s.resource_slices.n, 1);
    const gs_resource_slice *sl = &s.resource_slices.v[0];
    assert_int_equal(sl->generation, 3);
    assert_int_equal(sl->ndevices, 4);
    const gs_dra_device *full = device_named(sl, "gpu-0");
    assert_non_null(full);
    assert_int_equal(cap_value(full, "gpu.nvidia.com", "memory"), 40LL << 30);
    const gs_dra_device *m = device_named(sl, "gpu-1-mig-3g20gb-9-4");
    assert_non_null(m);
    assert_attrs_sorted(m);
    assert_string_equal(attr(m, "gpu.nvidia.com", "type")->s, "mig");
    assert_string_equal(attr(m, "gpu.nvidia.com", "profile")->s, "3g.20gb");
    assert_non_null(attr(m, "gpu.nvidia.com", "parentUUID"));
    assert_int_equal(cap_value(m, "gpu.nvidia.com", "multiprocessors"), 42);
    assert_int_equal(cap_value(m, "gpu.nvidia.com", "memory"), 19968LL << 20);
    for (int i = 4; i < 8; i++) {
        char name[16];
        snprintf(name, sizeof name, "memorySlice%d", i);
        assert_int_equal(cap_value(m, "gpu.nvidia.com", name), 1);
    }
    assert_int_equal(cap_value(m, "gpu.nvidia.com", "memorySlice3"), -1);
    assert_int_equal(m->ncaps, 11);
    const gs_dra_device *small = device_named(sl, "gpu-1-mig-1g5gb-19-1");
    assert_non_null(small);
    assert_int_equal(cap_value(small, "gpu.nvidia.com", "memorySlice1"), 1);
    gs_snapshot_free(&s);
}

/* v1 slice with partitionable devices (sharedCounters / consumesCounters), consumable
 * capacity policies, taints, per-device node selection. */
static const char slice_counters[] =
    "apiVersion: resource.k8s.io/v1\n"                   /* 1 */
    "kind: ResourceSlice\n"                              /* 2 */
    "metadata: {name: s1}\n"                             /* 3 */
    "spec:\n"                                            /* 4 */
    "  driver: gpu.nvidia.com\n"                         /* 5 */
    "  pool: {name: p, generation: 2, resourceSliceCount: 2}\n"
    "  perDeviceNodeSelection: true\n"                   /* 7 */
    "  sharedCounters:\n"                                /* 8 */
    "  - name: gpu-0-counter-set\n"                      /* 9 */
    "    counters:\n"                                    /* 10 */
    "      multiprocessors: {value: \"98\"}\n"           /* 11 */
    "      memory: {value: 40Gi}\n"                      /* 12 */
    "  devices:\n"                                       /* 13 */
    "  - name: gpu-0-mig-1g5gb-19-0\n"                   /* 14 */
    "    nodeName: n1\n"                                 /* 15 */
    "    attributes:\n"                                  /* 16 */
    "      example.com/zone: {string: a}\n"              /* 17 */
    "      healthy: {bool: true}\n"                      /* 18 */
    "    consumesCounters:\n"                            /* 19 */
    "    - counterSet: gpu-0-counter-set\n"              /* 20 */
    "      counters:\n"                                  /* 21 */
    "        memory: {value: 5Gi}\n"                     /* 22 */
    "        multiprocessors: {value: \"14\"}\n"         /* 23 */
    "    taints:\n"                                      /* 24 */
    "    - {key: example.com/ecc, value: \"1\", effect: NoSchedule}\n"
    "  - name: shared\n"                                 /* 26 */
    "    allNodes: true\n"                               /* 27 */
    "    allowMultipleAllocations: true\n"               /* 28 */
    "    bindsToNode: true\n"                            /* 29 */
    "    bindingConditions: [attached]\n"                /* 30 */
    "    capacity:\n"                                    /* 31 */
    "      memory:\n"                                    /* 32 */
    "        value: 80Gi\n"                              /* 33 */
    "        requestPolicy:\n"                           /* 34 */
    "          default: 1Gi\n"                           /* 35 */
    "          validRange: {min: 1Gi, max: 80Gi, step: 1Gi}\n"
    "      cores:\n"                                     /* 37 */
    "        value: \"8\"\n"                             /* 38 */
    "        requestPolicy: {validValues: [\"1\", \"2\", \"4\", \"8\"]}\n"
    "      example.com/bw: {value: 100G}\n"              /* 40 */
    "  - name: sel\n"                                    /* 41 */
    "    nodeSelector:\n"                                /* 42 */
    "      nodeSelectorTerms:\n"                         /* 43 */
    "      - matchExpressions: [{key: zone, operator: In, values: [a, b]}]\n";

static void test_slice_counters_policies(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, slice_counters);
    const gs_resource_slice *sl = &s.resource_slices.v[0];
    assert_true(sl->per_device_node_selection);
    assert_string_equal(sl->node_name, "");
    assert_int_equal(sl->slice_count, 2);
    assert_int_equal(sl->nshared_counters, 1);
    assert_string_equal(sl->shared_counters[0].name, "gpu-0-counter-set");
    assert_int_equal(sl->shared_counters[0].ncounters, 2);
    assert_string_equal(sl->shared_counters[0].counters[0].name, "memory"); /* sorted */
    assert_int_equal(gs_quantity_value(&sl->shared_counters[0].counters[0].value), 40LL << 30);
    assert_int_equal(gs_quantity_value(&sl->shared_counters[0].counters[1].value), 98);

    const gs_dra_device *d = &sl->devices[0];
    assert_string_equal(d->node_name, "n1");
    assert_int_equal(d->nattrs, 2);
    assert_string_equal(d->attrs[0].domain, "example.com"); /* "example.com" < "gpu.nvidia.com" */
    assert_string_equal(d->attrs[0].name, "zone");
    assert_string_equal(d->attrs[1].domain, "gpu.nvidia.com");
    assert_int_equal(d->attrs[1].kind, GS_CEL_ATTR_BOOL);
    assert_true(d->attrs[1].b);
    assert_int_equal(d->nconsumes, 1);
    assert_string_equal(d->consumes[0].name, "gpu-0-counter-set");
    assert_int_equal(gs_quantity_value(&d->consumes[0].counters[1].value), 14);
    assert_int_equal(d->ntaints, 1);
    assert_string_equal(d->taints[0].key, "example.com/ecc");
    assert_string_equal(d->taints[0].value, "1");
    assert_string_equal(d->taints[0].effect, "NoSchedule");
    assert_false(d->allow_multiple);

    d = &sl->devices[1];
    assert_true(d->all_nodes);
    assert_true(d->allow_multiple);
    assert_true(d->binds_to_node);
    assert_true(d->binding_conditions);
    assert_int_equal(d->ncaps, 3);
    assert_non_null(d->cap_policies);
    /* sorted: example.com/bw, gpu.nvidia.com/cores, gpu.nvidia.com/memory; policies follow */
    assert_string_equal(d->caps[0].name, "bw");
    assert_false(d->cap_policies[0].present);
    assert_string_equal(d->caps[1].name, "cores");
    assert_true(d->cap_policies[1].present);
    assert_int_equal(d->cap_policies[1].nvalid_values, 4);
    assert_int_equal(gs_quantity_value(&d->cap_policies[1].valid_values[3]), 8);
    assert_false(d->cap_policies[1].has_range);
    assert_string_equal(d->caps[2].name, "memory");
    assert_true(d->cap_policies[2].has_default);
    assert_int_equal(gs_quantity_value(&d->cap_policies[2].default_), 1LL << 30);
    assert_true(d->cap_policies[2].has_range);
    assert_true(d->cap_policies[2].has_max && d->cap_policies[2].has_step);
    assert_int_equal(gs_quantity_value(&d->cap_policies[2].max), 80LL << 30);

    d = &sl->devices[2];
    assert_non_null(d->node_selector);
    assert_int_equal(d->node_selector->nterms, 1);
    assert_int_equal(d->node_selector->terms[0].nexprs, 1);
    assert_string_equal(d->node_selector->terms[0].exprs[0].key, "zone");
    gs_snapshot_free(&s);
}

/* ---------------------------------------------------------------- claims */

static void test_gpu_tests(void **state)
{
    (void)state;
    gs_snapshot s;
    load_file(&s, "gpu-tests.yaml");
    assert_int_equal(s.claim_templates.n, 2);
    assert_int_equal(s.claims.n, 1);
    assert_int_equal(s.pods.n, 3);

    const gs_resource_claim *t = template_named(&s, "single-gpu");
    assert_non_null(t);
    assert_true(t->is_template);
    assert_string_equal(t->meta.namespace_, "gpu-test1");
    assert_int_equal(t->spec.nrequests, 1);
    assert_string_equal(t->spec.requests[0].name, "gpu");
    assert_true(t->spec.requests[0].has_exactly);
    assert_string_equal(t->spec.requests[0].exactly.class_name, "gpu.nvidia.com");
    assert_string_equal(t->spec.requests[0].exactly.name, "gpu");
    assert_false(t->spec.requests[0].exactly.all);
    assert_int_equal(t->spec.requests[0].exactly.count, 1); /* defaulted */
    assert_false(t->spec.requests[0].exactly.has_admin_access);

    /* gpu-test1: the pod's claim from a template and the claim the controller made */
    const gs_pod *p = pod_named(&s, "gpu-test1", "pod1");
    assert_non_null(p);
    assert_int_equal(p->nclaims, 1);
    assert_string_equal(p->claims[0].name, "gpu");
    assert_string_equal(p->claims[0].template_name, "single-gpu");
    assert_string_equal(p->claims[0].claim_name, "");
    assert_string_equal(p->claims[0].status_claim, "pod1-gpu-7xk2q");
    assert_string_equal(p->extended_claim, "");
    assert_int_equal(p->containers[0].nclaims, 1);
    assert_string_equal(p->containers[0].claims[0], "gpu");
    assert_string_equal(p->containers[0].claim_requests[0], "");

    /* gpu-test2: two containers share one claim */
    p = pod_named(&s, "gpu-test2", "pod");
    assert_non_null(p);
    assert_int_equal(p->nclaims, 1);
    assert_string_equal(p->claims[0].status_claim, "");
    assert_int_equal(p->ncontainers, 2);
    assert_string_equal(p->containers[0].claims[0], "shared-gpu");
    assert_string_equal(p->containers[1].claims[0], "shared-gpu");

    /* gpu-test3: an allocated claim reserved for two pods */
    const gs_resource_claim *c = &s.claims.v[0];
    assert_false(c->is_template);
    assert_string_equal(c->meta.name, "single-gpu");
    assert_string_equal(c->meta.namespace_, "gpu-test3");
    assert_true(c->allocated);
    assert_int_equal(c->nresults, 1);
    assert_string_equal(c->results[0].request, "gpu");
    assert_string_equal(c->results[0].driver, "gpu.nvidia.com");
    assert_string_equal(c->results[0].pool, "h100-node-1");
    assert_string_equal(c->results[0].device, "gpu-3");
    assert_string_equal(c->results[0].share_id, "");
    assert_false(c->results[0].admin_access);
    assert_non_null(c->alloc_node_selector);
    assert_int_equal(c->alloc_node_selector->nterms, 1);
    assert_int_equal(c->alloc_node_selector->terms[0].nfields, 1);
    assert_string_equal(c->alloc_node_selector->terms[0].fields[0].key, "metadata.name");
    assert_string_equal(c->alloc_node_selector->terms[0].fields[0].values[0], "h100-node-1");
    assert_int_equal(c->nreserved, 2);
    assert_string_equal(c->reserved_for[1].resource, "pods");
    assert_string_equal(c->reserved_for[1].name, "pod1");
    assert_string_equal(c->reserved_for[1].uid, "2a1d0f63-4b8c-4e3f-9a72-1b0c9d8e7f62");
    p = pod_named(&s, "gpu-test3", "pod0");
    assert_string_equal(p->claims[0].claim_name, "single-gpu");
    assert_string_equal(p->claims[0].template_name, "");

    /* gpu-test4: firstAvailable and a constraint */
    t = template_named(&s, "mig-devices");
    assert_non_null(t);
    assert_int_equal(t->spec.nrequests, 2);
    const gs_dra_request *q = &t->spec.requests[0];
    assert_false(q->has_exactly);
    assert_int_equal(q->nfirst_available, 2);
    assert_string_equal(q->first_available[0].name, "1g");
    assert_string_equal(q->first_available[0].class_name, "mig.nvidia.com");
    assert_int_equal(q->first_available[0].count, 1);
    assert_int_equal(q->first_available[0].nselectors, 1);
    assert_string_equal(q->first_available[1].name, "2g");
    q = &t->spec.requests[1];
    assert_true(q->has_exactly);
    assert_int_equal(q->exactly.count, 2);
    assert_int_equal(t->spec.nconstraints, 1);
    assert_int_equal(t->spec.constraints[0].nrequests, 2);
    assert_string_equal(t->spec.constraints[0].requests[1], "mig-large");
    assert_string_equal(t->spec.constraints[0].match_attribute, "gpu.nvidia.com/parentUUID");
    assert_null(t->spec.constraints[0].distinct_attribute);
    gs_snapshot_free(&s);
}

static void test_upstream_claims(void **state)
{
    (void)state;
    gs_snapshot s;
    load_file(&s, "upstream-claims.yaml");
    assert_int_equal(s.claims.n, 2);
    /* v1beta1: the request's own fields are `exactly` */
    const gs_resource_claim *c = &s.claims.v[0];
    assert_string_equal(c->meta.namespace_, "default");
    assert_false(c->allocated);
    const gs_dra_request *q = &c->spec.requests[0];
    assert_string_equal(q->name, "single-gpu-claim");
    assert_true(q->has_exactly);
    assert_string_equal(q->exactly.class_name, "example-device-class");
    assert_true(q->exactly.all);
    assert_int_equal(q->exactly.count, 0);
    assert_int_equal(q->exactly.nselectors, 1);
    assert_non_null(strstr(q->exactly.selectors[0].cel, "quantity(\"64Gi\")"));
    /* v1beta2: `exactly` */
    c = &s.claims.v[1];
    assert_string_equal(c->meta.namespace_, "team-a");
    q = &c->spec.requests[0];
    assert_true(q->has_exactly);
    assert_int_equal(q->exactly.count, 2);
    assert_true(q->exactly.has_admin_access);
    assert_false(q->exactly.admin_access);
    assert_int_equal(q->exactly.ntolerations, 1);
    assert_string_equal(q->exactly.tolerations[0].key, "example.com/unhealthy");
    assert_string_equal(q->exactly.tolerations[0].op, "Exists");
    assert_string_equal(q->exactly.tolerations[0].value, "");
    assert_string_equal(q->exactly.tolerations[0].effect, "NoExecute");
    assert_int_equal(q->exactly.ncapacity, 1);
    assert_string_equal(q->exactly.capacity[0].name, "memory");
    assert_int_equal(gs_quantity_value(&q->exactly.capacity[0].value), 10LL << 30);
    assert_int_equal(c->spec.nconfig, 1);
    gs_snapshot_free(&s);
}

static void test_beta1_first_available_and_status(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, "apiVersion: resource.k8s.io/v1beta1\n"
             "kind: ResourceClaim\n"
             "metadata: {name: c, namespace: ml}\n"
             "spec:\n"
             "  devices:\n"
             "    requests:\n"
             "    - name: r\n"
             "      firstAvailable:\n"
             "      - {name: big, deviceClassName: gpu.nvidia.com, count: 2}\n"
             "      - {name: small, deviceClassName: mig.nvidia.com, allocationMode: All}\n"
             "    constraints:\n"
             "    - {requests: [r/big], distinctAttribute: gpu.nvidia.com/uuid}\n"
             "status:\n"
             "  allocation:\n"
             "    devices:\n"
             "      results:\n"
             "      - request: r/big\n"
             "        driver: gpu.nvidia.com\n"
             "        pool: p\n"
             "        device: gpu-0\n"
             "        adminAccess: true\n"
             "        shareID: 6f3c\n"
             "        consumedCapacity: {memory: 4Gi, cores: \"2\"}\n"
             "  reservedFor: []\n");
    const gs_resource_claim *c = &s.claims.v[0];
    const gs_dra_request *q = &c->spec.requests[0];
    assert_false(q->has_exactly);
    assert_int_equal(q->nfirst_available, 2);
    assert_int_equal(q->first_available[0].count, 2);
    assert_true(q->first_available[1].all);
    assert_string_equal(c->spec.constraints[0].distinct_attribute, "gpu.nvidia.com/uuid");
    assert_null(c->spec.constraints[0].match_attribute);
    assert_true(c->allocated);
    assert_null(c->alloc_node_selector);
    assert_string_equal(c->results[0].request, "r/big");
    assert_true(c->results[0].admin_access);
    assert_string_equal(c->results[0].share_id, "6f3c");
    assert_int_equal(c->results[0].nconsumed, 2);
    assert_string_equal(c->results[0].consumed[0].name, "cores"); /* sorted */
    assert_int_equal(c->nreserved, 0);
    gs_snapshot_free(&s);
}

/* ---------------------------------------------------------------- pods */

static void test_pod_claims(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, "apiVersion: v1\n"
             "kind: Pod\n"
             "metadata: {name: p, namespace: ml}\n"
             "spec:\n"
             "  initContainers:\n"
             "  - name: init\n"
             "    resources: {claims: [{name: a, request: r1}]}\n"
             "  containers:\n"
             "  - name: c0\n"
             "    resources:\n"
             "      limits: {nvidia.com/gpu: 1}\n"
             "      claims: [{name: a, request: r1}, {name: a, request: r2}, {name: b}]\n"
             "  resourceClaims:\n"
             "  - {name: a, resourceClaimTemplateName: t}\n"
             "  - {name: b, resourceClaimName: shared}\n"
             "  - {name: c, resourceClaimTemplateName: t}\n"
             "status:\n"
             "  resourceClaimStatuses:\n"
             "  - {name: a, resourceClaimName: p-a-x1}\n"
             "  - {name: c}\n"
             "  extendedResourceClaimStatus:\n"
             "    resourceClaimName: p-extended-resources-k2\n"
             "    requestMappings: [{containerName: c0, resourceName: nvidia.com/gpu, requestName: container-0-request-0}]\n");
    const gs_pod *p = &s.pods.v[0];
    assert_int_equal(p->nclaims, 3);
    assert_string_equal(p->claims[0].status_claim, "p-a-x1");
    assert_string_equal(p->claims[1].status_claim, ""); /* not listed */
    assert_null(p->claims[2].status_claim);             /* listed without a claim: none needed */
    assert_string_equal(p->extended_claim, "p-extended-resources-k2");
    assert_int_equal(p->containers[0].nclaims, 3);
    assert_string_equal(p->containers[0].claim_requests[1], "r2");
    assert_string_equal(p->containers[0].claims[2], "b");
    assert_string_equal(p->containers[0].claim_requests[2], "");
    assert_int_equal(p->init_containers[0].nclaims, 1);
    gs_snapshot_free(&s);
}

/* Workload templates share the pod decoder: their pods carry the claims. */
static void test_workload_template_claims(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, "apiVersion: apps/v1\n"
             "kind: Deployment\n"
             "metadata: {name: d, namespace: ml}\n"
             "spec:\n"
             "  replicas: 2\n"
             "  template:\n"
             "    spec:\n"
             "      resourceClaims: [{name: gpu, resourceClaimTemplateName: gpu-4gi}]\n"
             "      containers:\n"
             "      - name: ctr\n"
             "        resources: {claims: [{name: gpu}]}\n");
    assert_int_equal(s.pods.n, 2);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(s.pods.v[i].nclaims, 1);
        assert_string_equal(s.pods.v[i].claims[0].template_name, "gpu-4gi");
        assert_string_equal(s.pods.v[i].containers[0].claims[0], "gpu");
    }
    gs_snapshot_free(&s);
}

/* ---------------------------------------------------------------- errors */

#define CLAIM_HEAD                                                                                               \
    "apiVersion: resource.k8s.io/v1\n"                                                                           \
    "kind: ResourceClaim\n"                                                                                      \
    "metadata: {name: c, namespace: ml}\n"                                                                       \
    "spec:\n"                                                                                                    \
    "  devices:\n"                                                                                               \
    "    requests:\n"
#define SLICE_HEAD                                                                                               \
    "apiVersion: resource.k8s.io/v1\n"                                                                           \
    "kind: ResourceSlice\n"                                                                                      \
    "metadata: {name: s}\n"                                                                                      \
    "spec:\n"                                                                                                    \
    "  driver: gpu.nvidia.com\n"                                                                                 \
    "  nodeName: n1\n"                                                                                           \
    "  pool: {name: p, generation: 1, resourceSliceCount: 1}\n"                                                  \
    "  devices:\n"

static void test_errors(void **state)
{
    (void)state;
    mismatches = 0;
    expect_error(SLICE_HEAD "  - name: gpu-0\n"
                            "    capacity:\n"
                            "      memory: {value: 80GG}\n",
                 GS_ERR_INVALID, 11, 23, "ResourceSlice s: spec.devices[0].capacity[memory].value",
                 "invalid quantity");
    expect_error(SLICE_HEAD "  - name: gpu-0\n"
                            "    attributes:\n"
                            "      type: {string: gpu, int: 3}\n",
                 GS_ERR_INVALID, 11, 32, "spec.devices[0].attributes[type].int", "exactly one of int, bool");
    expect_error(SLICE_HEAD "  - name: gpu-0\n"
                            "    attributes:\n"
                            "      type: {}\n",
                 GS_ERR_INVALID, 11, 13, "spec.devices[0].attributes[type]", "exactly one of int, bool");
    expect_error(SLICE_HEAD "  - name: gpu-0\n"
                            "    attributes:\n"
                            "      driverVersion: {version: \"550.54\"}\n",
                 GS_ERR_INVALID, 11, 32, "attributes[driverVersion].version", "not a semantic version");
    expect_error(SLICE_HEAD "  - name: gpu-0\n"
                            "    attributes:\n"
                            "      n: {int: \"3\"}\n",
                 GS_ERR_INVALID, 11, 16, "attributes[n].int", "expected an integer");
    expect_error(SLICE_HEAD "  - name: gpu-0\n"
                            "    attributes:\n"
                            "      bad-name: {int: 3}\n",
                 GS_ERR_INVALID, 11, 7, "attributes[bad-name]", "invalid name");
    expect_error(SLICE_HEAD "  - name: gpu-0\n"
                            "    attributes:\n"
                            "      uuid: {string: a}\n"
                            "      gpu.nvidia.com/uuid: {string: b}\n",
                 GS_ERR_INVALID, 12, 7, "spec.devices[0].attributes", "given twice");
    expect_error(SLICE_HEAD "  - name: GPU_0\n", GS_ERR_INVALID, 9, 11, "spec.devices[0].name", "DNS label");
    expect_error(SLICE_HEAD "  - name: a\n  - name: a\n", GS_ERR_INVALID, 10, 11, "spec.devices[1].name",
                 "duplicate device name");
    expect_error("apiVersion: resource.k8s.io/v1\n"
                 "kind: ResourceSlice\n"
                 "metadata: {name: s}\n"
                 "spec:\n"
                 "  driver: gpu.nvidia.com\n"
                 "  pool: {name: p, generation: 1, resourceSliceCount: 1}\n",
                 GS_ERR_INVALID, 5, 3, "ResourceSlice s: spec", "exactly one of nodeName, nodeSelector");
    expect_error("apiVersion: resource.k8s.io/v1\n"
                 "kind: ResourceSlice\n"
                 "metadata: {name: s}\n"
                 "spec:\n"
                 "  driver: gpu.nvidia.com\n"
                 "  nodeName: n\n"
                 "  allNodes: true\n"
                 "  pool: {name: p, generation: 1, resourceSliceCount: 1}\n",
                 GS_ERR_INVALID, 5, 3, "spec", "(2 given)");
    expect_error("apiVersion: resource.k8s.io/v1\n"
                 "kind: ResourceSlice\n"
                 "metadata: {name: s}\n"
                 "spec:\n"
                 "  nodeName: n\n"
                 "  pool: {name: p, generation: 1, resourceSliceCount: 1}\n",
                 GS_ERR_INVALID, 5, 3, "spec.driver", "required field is missing");
    expect_error(SLICE_HEAD "  - name: a\n    nodeName: n2\n", GS_ERR_INVALID, 9, 5, "spec.devices[0]",
                 "need perDeviceNodeSelection");

    expect_error(CLAIM_HEAD "    - name: r\n"
                            "      exactly: {deviceClassName: gpu.nvidia.com}\n"
                            "      firstAvailable: [{name: s, deviceClassName: gpu.nvidia.com}]\n",
                 GS_ERR_INVALID, 7, 7, "ResourceClaim ml/c: spec.devices.requests[0]",
                 "exactly and firstAvailable both given");
    expect_error(CLAIM_HEAD "    - name: r\n", GS_ERR_INVALID, 7, 7, "spec.devices.requests[0]",
                 "exactly one of exactly and firstAvailable is required");
    expect_error("apiVersion: resource.k8s.io/v1beta1\n"
                 "kind: ResourceClaim\n"
                 "metadata: {name: c, namespace: ml}\n"
                 "spec:\n"
                 "  devices:\n"
                 "    requests:\n"
                 "    - name: r\n"
                 "      deviceClassName: gpu.nvidia.com\n"
                 "      firstAvailable: [{name: s, deviceClassName: gpu.nvidia.com}]\n",
                 GS_ERR_INVALID, 7, 7, "spec.devices.requests[0]", "both given");
    expect_error(CLAIM_HEAD "    - name: r\n      exactly: {deviceClassName: g, count: 0}\n", GS_ERR_INVALID, 8, 44,
                 "spec.devices.requests[0].exactly.count", "greater than zero");
    expect_error(CLAIM_HEAD "    - name: r\n      exactly: {deviceClassName: g, allocationMode: Some}\n",
                 GS_ERR_INVALID, 8, 53, "exactly.allocationMode", "unknown allocation mode");
    expect_error(CLAIM_HEAD "    - name: r\n      exactly: {deviceClassName: g, allocationMode: All, count: 2}\n",
                 GS_ERR_INVALID, 0, 0, "exactly.count", "must not be specified when allocationMode is All");
    expect_error(CLAIM_HEAD "    - name: r\n      exactly: {count: 1}\n", GS_ERR_INVALID, 8, 16,
                 "exactly.deviceClassName", "required field is missing");
    expect_error(CLAIM_HEAD "    - name: r\n      exactly:\n        deviceClassName: g\n"
                            "        capacity: {requests: {memory: lots}}\n",
                 GS_ERR_INVALID, 10, 39, "exactly.capacity.requests[memory]", "invalid quantity");
    expect_error(CLAIM_HEAD "    - name: r\n      firstAvailable:\n"
                            "      - {name: s, deviceClassName: g, adminAccess: true}\n",
                 GS_ERR_INVALID, 9, 52, "firstAvailable[0].adminAccess", "not allowed");
    expect_error(CLAIM_HEAD "    - name: r\n      exactly: {deviceClassName: g}\n"
                            "    constraints: [{requests: [x], matchAttribute: gpu.nvidia.com/uuid}]\n",
                 GS_ERR_INVALID, 9, 31, "spec.devices.constraints[0].requests[0]", "names no request");
    expect_error(CLAIM_HEAD "    - name: r\n      exactly: {deviceClassName: g}\n"
                            "    constraints: [{matchAttribute: uuid}]\n",
                 GS_ERR_INVALID, 9, 36, "constraints[0].matchAttribute", "not fully qualified");
    expect_error(CLAIM_HEAD "    - name: r\n      exactly:\n        deviceClassName: g\n"
                            "        selectors: [{cel: {expression: \"\"}}]\n",
                 GS_ERR_INVALID, 10, 40, "exactly.selectors[0].cel.expression", "required field is missing");
    expect_error(CLAIM_HEAD "    - name: r\n      exactly: {deviceClassName: g}\n"
                            "status:\n  allocation:\n    devices:\n      results:\n      - {request: r, pool: p, "
                            "device: d}\n",
                 GS_ERR_INVALID, 13, 9, "status.allocation.devices.results[0].driver", "required field is missing");

    /* pods */
    expect_error("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                 "  containers:\n"
                 "  - name: c\n"
                 "    resources: {claims: [{name: gpu}, {name: other}]}\n"
                 "  resourceClaims: [{name: gpu, resourceClaimTemplateName: t}]\n",
                 GS_ERR_INVALID, 7, 46, "Pod default/p: spec.containers[0].resources.claims[1].name",
                 "claim \"other\" is not one of the pod's spec.resourceClaims");
    expect_error("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                 "  initContainers: [{name: i, resources: {claims: [{name: x}]}}]\n",
                 GS_ERR_INVALID, 5, 58, "spec.initContainers[0].resources.claims[0].name", "is not one of");
    expect_error("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                 "  resourceClaims: [{name: gpu, resourceClaimTemplateName: t, resourceClaimName: c}]\n",
                 GS_ERR_INVALID, 5, 20, "spec.resourceClaims[0]", "both given");
    expect_error("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                 "  resourceClaims: [{name: gpu}]\n",
                 GS_ERR_INVALID, 5, 20, "spec.resourceClaims[0]", "exactly one of resourceClaimName");
    expect_error("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                 "  resourceClaims: [{name: g, resourceClaimName: a}, {name: g, resourceClaimName: b}]\n",
                 GS_ERR_INVALID, 5, 60, "spec.resourceClaims[1].name", "duplicate pod claim name");
    expect_error("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                 "  resourceClaims: [{name: g, resourceClaimName: a}]\n"
                 "status:\n  resourceClaimStatuses: [{name: h, resourceClaimName: x}]\n",
                 GS_ERR_INVALID, 7, 34, "status.resourceClaimStatuses[0].name", "is not one of");
    /* a workload template's container claim is checked the same way */
    expect_error("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    spec:\n"
                 "      containers: [{name: c, resources: {claims: [{name: gpu}]}}]\n",
                 GS_ERR_INVALID, 7, 58, "Deployment default/d: spec.template.spec.containers[0].resources.claims[0].name",
                 "is not one of");
    assert_int_equal(mismatches, 0);
}

/* The API's size limits, each one over. */
static void test_limits(void **state)
{
    (void)state;
    mismatches = 0;
    gs_strbuf b = GS_STRBUF_INIT;
    /* 129 devices */
    gs_strbuf_puts(&b, SLICE_HEAD);
    for (int i = 0; i < 129; i++)
        gs_strbuf_printf(&b, "  - name: d%d\n", i);
    expect_error(gs_strbuf_cstr(&b), GS_ERR_LIMIT, 9, 3, "ResourceSlice s: spec.devices", "more than the 128");
    /* 65 devices when one has taints */
    gs_strbuf_reset(&b);
    gs_strbuf_puts(&b, SLICE_HEAD "  - name: t\n    taints: [{key: k, effect: NoSchedule}]\n");
    for (int i = 0; i < 64; i++)
        gs_strbuf_printf(&b, "  - name: d%d\n", i);
    expect_error(gs_strbuf_cstr(&b), GS_ERR_LIMIT, 9, 3, "spec.devices", "more than the 64");
    /* 128 devices read */
    gs_strbuf_reset(&b);
    gs_strbuf_puts(&b, SLICE_HEAD);
    for (int i = 0; i < 128; i++)
        gs_strbuf_printf(&b, "  - name: d%d\n", i);
    gs_snapshot s;
    load(&s, gs_strbuf_cstr(&b));
    assert_int_equal(s.resource_slices.v[0].ndevices, 128);
    gs_snapshot_free(&s);
    /* 33 attributes and capacities */
    gs_strbuf_reset(&b);
    gs_strbuf_puts(&b, SLICE_HEAD "  - name: d\n    attributes:\n");
    for (int i = 0; i < 20; i++)
        gs_strbuf_printf(&b, "      a%d: {int: %d}\n", i, i);
    gs_strbuf_puts(&b, "    capacity:\n");
    for (int i = 0; i < 13; i++)
        gs_strbuf_printf(&b, "      c%d: {value: \"1\"}\n", i);
    expect_error(gs_strbuf_cstr(&b), GS_ERR_LIMIT, 9, 5, "spec.devices[0]", "33 attributes and capacities");
    /* 33 requests */
    gs_strbuf_reset(&b);
    gs_strbuf_puts(&b, CLAIM_HEAD);
    for (int i = 0; i < 33; i++)
        gs_strbuf_printf(&b, "    - {name: r%d, exactly: {deviceClassName: g}}\n", i);
    expect_error(gs_strbuf_cstr(&b), GS_ERR_LIMIT, 7, 5, "spec.devices.requests", "more than the 32");
    /* 9 subrequests */
    gs_strbuf_reset(&b);
    gs_strbuf_puts(&b, CLAIM_HEAD "    - name: r\n      firstAvailable:\n");
    for (int i = 0; i < 9; i++)
        gs_strbuf_printf(&b, "      - {name: s%d, deviceClassName: g}\n", i);
    expect_error(gs_strbuf_cstr(&b), GS_ERR_LIMIT, 9, 7, "requests[0].firstAvailable", "more than the 8");
    /* 33 selectors */
    gs_strbuf_reset(&b);
    gs_strbuf_puts(&b, "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: x}\nspec:\n  selectors:\n");
    for (int i = 0; i < 33; i++)
        gs_strbuf_printf(&b, "  - cel: {expression: \"true\"}\n");
    expect_error(gs_strbuf_cstr(&b), GS_ERR_LIMIT, 6, 3, "DeviceClass x: spec.selectors", "more than the 32");
    /* 257 reservedFor */
    gs_strbuf_reset(&b);
    gs_strbuf_puts(&b, CLAIM_HEAD "    - {name: r, exactly: {deviceClassName: g}}\nstatus:\n  reservedFor:\n");
    for (int i = 0; i < 257; i++)
        gs_strbuf_printf(&b, "  - {resource: pods, name: p%d, uid: u%d}\n", i, i);
    expect_error(gs_strbuf_cstr(&b), GS_ERR_LIMIT, 10, 3, "status.reservedFor", "more than the 256");
    /* 33 results */
    gs_strbuf_reset(&b);
    gs_strbuf_puts(&b, CLAIM_HEAD "    - {name: r, exactly: {deviceClassName: g}}\nstatus:\n  allocation:\n"
                                  "    devices:\n      results:\n");
    for (int i = 0; i < 33; i++)
        gs_strbuf_printf(&b, "      - {request: r, driver: d, pool: p, device: x%d}\n", i);
    expect_error(gs_strbuf_cstr(&b), GS_ERR_LIMIT, 12, 7, "status.allocation.devices.results", "more than the 32");
    /* an expression over 10 KiB */
    gs_strbuf_reset(&b);
    gs_strbuf_puts(&b, "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: x}\nspec:\n"
                       "  selectors:\n  - cel:\n      expression: \"true");
    for (int i = 0; i < 2600; i++)
        gs_strbuf_puts(&b, "&&!0");
    gs_strbuf_puts(&b, "\"\n");
    expect_error(gs_strbuf_cstr(&b), GS_ERR_LIMIT, 7, 19, "spec.selectors[0].cel.expression", "longer than the 10240");
    gs_strbuf_free(&b);
    assert_int_equal(mismatches, 0);
}

/* ---------------------------------------------------------------- keep_going, duplicates */

static void test_keep_going_rollback(void **state)
{
    (void)state;
    static const char good[] = "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu.nvidia.com}\n"
                               "---\n" SLICE_HEAD "  - name: gpu-0\n";
    /* every DRA kind, then a bad document: the whole file is taken back */
    static const char bad[] = "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: other}\n"
                              "---\n" CLAIM_HEAD "    - {name: r, exactly: {deviceClassName: g}}\n"
                              "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"
                              "metadata: {name: t}\nspec: {spec: {}}\n"
                              "---\n" SLICE_HEAD "  - name: gpu-1\n"
                              "---\n" SLICE_HEAD "  - name: gpu-2\n    attributes: {v: {version: x}}\n";
    gs_snapshot s;
    gs_snapshot_init(&s);
    gs_read_opts o = {.keep_going = true};
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_snapshot_read_buffer(&s, "good.yaml", good, strlen(good), &o, &err), 0);
    assert_int_equal(gs_snapshot_read_buffer(&s, "bad.yaml", bad, strlen(bad), &o, &err), 0);
    assert_int_equal(s.input_errors.n, 1);
    assert_string_equal(s.input_errors.v[0].src.file, "bad.yaml");
    assert_int_equal(s.input_errors.v[0].src.line, 37);
    assert_int_equal(s.input_errors.v[0].src.col, 31);
    assert_non_null(strstr(s.input_errors.v[0].message, "not a semantic version"));
    assert_int_equal(s.device_classes.n, 1);
    assert_int_equal(s.claims.n, 0);
    assert_int_equal(s.claim_templates.n, 0);
    assert_int_equal(s.resource_slices.n, 1);
    /* the same bad file's objects again, now fine: indexes continue from the mark */
    static const char again[] = "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: other}\n";
    assert_int_equal(gs_snapshot_read_buffer(&s, "again.yaml", again, strlen(again), &o, &err), 0);
    assert_int_equal(s.device_classes.v[1].meta.input_index, s.resource_slices.v[0].meta.input_index + 1);
    assert_int_equal(gs_snapshot_finish(&s, &err), 0);
    assert_int_equal(s.warnings.n, 0); /* "other" was taken back: not a duplicate */
    gs_snapshot_free(&s);
}

static void test_duplicates(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: a}\n---\n"
             "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: a}\n---\n"
             SLICE_HEAD "---\n" SLICE_HEAD "---\n"
             "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: x}\n---\n"
             "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: y}\n---\n"
             "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: c, namespace: x}\n"
             "spec: {spec: {}}\n---\n"
             "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: c, namespace: x}\n"
             "spec: {spec: {}}\n");
    assert_int_equal(s.warnings.n, 3);
    assert_string_equal(s.warnings.v[0].object, "DeviceClass a");
    assert_string_equal(s.warnings.v[1].object, "ResourceSlice s");
    assert_string_equal(s.warnings.v[2].object, "ResourceClaimTemplate x/c");
    gs_snapshot_free(&s);
}

/* A JSON List as kubectl dumps it (the live path reads the same): same objects. */
static void test_json_list(void **state)
{
    (void)state;
    gs_snapshot s;
    load(&s, "{\"apiVersion\":\"v1\",\"items\":["
             "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":\"gpu.nvidia.com\"},"
             "\"spec\":{\"selectors\":[{\"cel\":{\"expression\":\"device.driver == 'gpu.nvidia.com'\"}}]}},"
             "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"s\"},"
             "\"spec\":{\"driver\":\"gpu.nvidia.com\",\"nodeName\":\"n\",\"pool\":{\"name\":\"n\",\"generation\":0,"
             "\"resourceSliceCount\":1},\"devices\":[{\"name\":\"gpu-0\",\"attributes\":{\"index\":{\"int\":0}},"
             "\"capacity\":{\"memory\":{\"value\":\"80Gi\"}}}]}}"
             "],\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"\"}}");
    assert_int_equal(s.device_classes.n, 1);
    assert_int_equal(s.resource_slices.n, 1);
    assert_int_equal(s.resource_slices.v[0].devices[0].attrs[0].i, 0);
    assert_int_equal(s.device_classes.v[0].selectors[0].src.line, 1);
    gs_snapshot_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nvidia_classes),
        cmocka_unit_test(test_class_config_and_versions),
        cmocka_unit_test(test_h100_slice),
        cmocka_unit_test(test_a100_mig_slice_v1beta1),
        cmocka_unit_test(test_slice_counters_policies),
        cmocka_unit_test(test_gpu_tests),
        cmocka_unit_test(test_upstream_claims),
        cmocka_unit_test(test_beta1_first_available_and_status),
        cmocka_unit_test(test_pod_claims),
        cmocka_unit_test(test_workload_template_claims),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_keep_going_rollback),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_json_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
