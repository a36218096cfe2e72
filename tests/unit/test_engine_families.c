/*
 * test_engine_families.c - the cross-convention matrix: every GPU request convention
 * against every node inventory kind (tests/data/conventions), one pod on one node at a
 * time through the whole engine. A request fits only nodes of its resource family; on
 * the others the node fails with upstream's "Insufficient <the request's resource>".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpusched/engine.h"

#define MAX_DOCS 32

typedef struct docs {
    char *buf;
    const char *doc[MAX_DOCS];
    const char *name[MAX_DOCS]; /* metadata.name of each document */
    uint32_t n;
} docs;

static char *slurp(const char *file)
{
    const char *base = getenv("GS_TEST_DATA");
    if (!base)
        return NULL;
    char path[1024];
    snprintf(path, sizeof path, "%s/conventions/%s", base, file);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    if (b)
        b[n] = '\0';
    fclose(f);
    return b;
}

/* Split on "\n---\n"; each document's name is the value after its first "name: ". */
static void split_docs(docs *d, char *buf)
{
    d->buf = buf;
    d->n = 0;
    char *p = buf;
    while (p && *p && d->n < MAX_DOCS) {
        char *e = strstr(p, "\n---\n");
        if (e)
            e[1] = '\0';
        char *nm = strstr(p, "\n  name: ");
        if (nm) {
            nm += 9;
            char *end = strchr(nm, '\n');
            static char names[MAX_DOCS * 2][64];
            static uint32_t used;
            char *slot = names[used++ % (MAX_DOCS * 2)];
            size_t len = end ? (size_t)(end - nm) : strlen(nm);
            snprintf(slot, 64, "%.*s", (int)len, nm);
            d->doc[d->n] = p;
            d->name[d->n++] = slot;
        }
        p = e ? e + 5 : NULL;
    }
}

/* The engine's verdict for one pod alone on one node: NULL when it is scheduled, else the
 * FitError message. */
static char *verdict(const char *node, const char *pod)
{
    size_t n = strlen(node) + strlen(pod) + 8;
    char *yaml = malloc(n);
    assert_non_null(yaml);
    snprintf(yaml, n, "%s---\n%s", node, pod);
    gs_snapshot s;
    gs_error err;
    gs_error_clear(&err);
    gs_snapshot_init(&s);
    int rc = gs_snapshot_read_buffer(&s, "matrix.yaml", yaml, strlen(yaml), NULL, &err);
    if (rc == 0)
        rc = gs_snapshot_finish(&s, &err);
    char buf[1024];
    if (rc) {
        gs_error_format(&err, buf, sizeof buf);
        fail_msg("read failed: %s", buf);
    }
    gs_cluster *c = gs_cluster_new(&s, NULL, &err);
    if (!c) {
        gs_error_format(&err, buf, sizeof buf);
        fail_msg("cluster failed: %s", buf);
    }
    assert_int_equal(gs_schedule_run(c, &err), 0);
    const gs_decision *d = gs_cluster_decision_for_pod(c, 0);
    assert_non_null(d);
    char *out = NULL;
    if (d->outcome != GS_OUT_SCHEDULED)
        out = strdup(d->message ? d->message : "(no message)");
    gs_cluster_free(c);
    gs_snapshot_free(&s);
    free(yaml);
    return out;
}

typedef struct row {
    const char *pod;
    const char *fits;     /* space-separated node names where the pod fits */
    const char *resource; /* "Insufficient <resource>" everywhere else */
} row;

static const row matrix[] = {
    {"dp-whole", "nv-a100 nv-mig-single hami-v100 hami-a100 gke-l4", "nvidia.com/gpu"},
    {"dp-shared", "nv-shared", "nvidia.com/gpu.shared"},
    {"mig-3g", "nv-mig-mixed", "nvidia.com/mig-3g.40gb"},
    {"hami-mem", "hami-v100 hami-a100", "nvidia.com/gpumem"},
    {"hami-type", "hami-a100", "nvidia.com/gpumem-percentage"},
    {"kai-half", "nv-a100 gke-l4", "nvidia.com/gpu"},
    {"gpushare-4g", "gpushare-t4 gpushare-a10-mib", "aliyun.com/gpu-mem"},
    {"openb-half", "openb-v100", "alibabacloud.com/gpu-milli"},
    {"volcano-mem", "volcano-share", "volcano.sh/gpu-memory"},
    {"vgpu-half", "volcano-vgpu", "volcano.sh/vgpu-number"},
    /* gpusched.io annotations fit any inventory with a device that can hold a share */
    {"gs-quarter",
     "nv-a100 nv-shared hami-v100 hami-a100 gpushare-t4 gpushare-a10-mib openb-v100 "
     "volcano-share volcano-vgpu gke-l4",
     "nvidia.com/gpu"},
};

static bool in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

static void test_cross_convention_matrix(void **state)
{
    (void)state;
    char *nb = slurp("nodes.yaml"), *pb = slurp("pods.yaml");
    if (!nb || !pb) {
        free(nb);
        free(pb);
        skip();
    }
    docs nodes, pods;
    split_docs(&nodes, nb);
    split_docs(&pods, pb);
    assert_int_equal(nodes.n, 12);
    assert_int_equal(pods.n, sizeof matrix / sizeof *matrix);
    uint32_t checked = 0;
    for (size_t r = 0; r < sizeof matrix / sizeof *matrix; r++) {
        const row *m = &matrix[r];
        uint32_t pi = 0;
        while (pi < pods.n && strcmp(pods.name[pi], m->pod) != 0)
            pi++;
        assert_true(pi < pods.n);
        for (uint32_t ni = 0; ni < nodes.n; ni++) {
            char *v = verdict(nodes.doc[ni], pods.doc[pi]);
            bool want_fit = in_list(m->fits, nodes.name[ni]);
            if (want_fit && v)
                fail_msg("%s on %s: expected to fit, got: %s", m->pod, nodes.name[ni], v);
            if (!want_fit) {
                /* unresolvable: the node does not advertise the resource at all */
                char want[256];
                snprintf(want, sizeof want,
                         "0/1 nodes are available: 1 Insufficient %s. preemption: 0/1 nodes are "
                         "available: 1 Preemption is not helpful for scheduling.",
                         m->resource);
                if (!v)
                    fail_msg("%s on %s: expected \"%s\", got scheduled", m->pod,
                             nodes.name[ni], want);
                if (strcmp(v, want) != 0)
                    fail_msg("%s on %s: expected \"%s\", got \"%s\"", m->pod, nodes.name[ni],
                             want, v);
            }
            free(v);
            checked++;
        }
    }
    assert_int_equal(checked, 12 * (sizeof matrix / sizeof *matrix));
    free(nb);
    free(pb);
}

/* ---------------------------------------------------------------- explain */
static gs_cluster *build(gs_snapshot *s, const char *yaml)
{
    gs_error err;
    gs_error_clear(&err);
    gs_snapshot_init(s);
    assert_int_equal(gs_snapshot_read_buffer(s, "t.yaml", yaml, strlen(yaml), NULL, &err), 0);
    assert_int_equal(gs_snapshot_finish(s, &err), 0);
    gs_cluster *c = gs_cluster_new(s, NULL, &err);
    assert_non_null(c);
    assert_int_equal(gs_schedule_run(c, &err), 0);
    return c;
}

static const gs_explain_pod *explained(const gs_explain *ex, const gs_snapshot *s,
                                       const char *name)
{
    for (uint32_t i = 0; i < ex->npods; i++)
        if (strcmp(s->pods.v[ex->pods[i].pod].meta.name, name) == 0)
            return &ex->pods[i];
    fail_msg("pod %s not explained", name);
    return NULL;
}

static bool has_fix(const gs_explain_pod *ep, const char *needle)
{
    for (uint32_t i = 0; i < ep->nfixes; i++)
        if (strstr(ep->fixes[i].text, needle))
            return true;
    return false;
}

static void test_explain_conventions(void **state)
{
    (void)state;
    gs_snapshot s;
    gs_cluster *c = build(&s,
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: nv\n"
        "  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"
        "spec:\n  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]\n"
        "status:\n  allocatable: {cpu: \"8\", memory: 64Gi, pods: \"110\", nvidia.com/gpu: \"4\"}\n---\n"
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: ali\n"
        "spec:\n  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]\n"
        "status:\n  allocatable: {cpu: \"8\", memory: 64Gi, pods: \"110\", aliyun.com/gpu-count: \"1\","
        " aliyun.com/gpu-mem: \"16\"}\n---\n"
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: inv\n"
        "  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB-MIG-INVALID, nvidia.com/gpu.count: \"0\","
        " nvidia.com/mig.strategy: single}\n"
        "spec:\n  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]\n"
        "status:\n  allocatable: {cpu: \"8\", memory: 64Gi, pods: \"110\", nvidia.com/gpu: \"0\"}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: hami\n  namespace: ml\n"
        "  annotations: {nvidia.com/vgpu-mode: hami-core}\nspec:\n"
        "  tolerations: [{key: nvidia.com/gpu, operator: Exists}]\n  containers:\n  - name: c\n"
        "    resources: {limits: {nvidia.com/gpu: \"1\", nvidia.com/gpumem: \"4000\"}}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: mib\n  namespace: ml\nspec:\n"
        "  tolerations: [{key: nvidia.com/gpu, operator: Exists}]\n  containers:\n  - name: c\n"
        "    resources: {limits: {aliyun.com/gpu-mem: \"8192\"}}\n");
    gs_error err;
    gs_error_clear(&err);
    const gs_explain *ex;
    assert_int_equal(gs_explain_run(c, NULL, &ex, &err), 0);
    /* a HAMi pod on a cluster without HAMi: never "fits now", says no node advertises it */
    const gs_explain_pod *ep = explained(ex, &s, "hami");
    assert_null(strstr(ep->why, "fits now"));
    assert_string_equal(ep->why, "no node advertises nvidia.com/gpumem");
    assert_true(has_fix(ep, "the nodes offer: nvidia.com/gpu (NVIDIA device plugin) (1 node), "
                            "gpushare (aliyun.com/gpu-mem) (1 node)"));
    /* gpushare: 8192 GiB is larger than any GPU: a hint about MiB */
    ep = explained(ex, &s, "mib");
    assert_true(has_fix(ep, "--memory-unit=MiB"));
    assert_true(has_fix(ep, "aliyun.com/gpu-mem: 8192 is read as GiB"));
    /* MIG-INVALID: a hygiene finding with its fix, not "device plugin down" */
    bool seen = false;
    for (uint32_t i = 0; i < ex->nhygiene; i++) {
        const gs_hygiene_node *h = &ex->hygiene[i];
        if (strcmp(s.nodes.v[h->node].meta.name, "inv") != 0)
            continue;
        seen = true;
        assert_false(h->device_plugin_down);
        assert_non_null(h->problem);
        assert_non_null(strstr(h->problem, "migStrategy mixed"));
    }
    assert_true(seen);
    /* the unmodelled HAMi annotation is said, not dropped */
    bool warned = false;
    for (uint32_t i = 0; i < gs_cluster_nwarnings(c); i++)
        warned |= strstr(gs_cluster_warning(c, i), "nvidia.com/vgpu-mode") != NULL;
    assert_true(warned);
    gs_cluster_free(c);
    gs_snapshot_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cross_convention_matrix),
        cmocka_unit_test(test_explain_conventions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
