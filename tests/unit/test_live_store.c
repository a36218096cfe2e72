/*
 * test_live_store.c - the live object store (lib/live/store.c): pruning keeps what the
 * reader reads and drops what it skips; keys, list order (etcd's bytewise order of
 * "namespace/name"), replace/relist semantics, deletes, change counting; a randomized run
 * against a plain model (hash growth, backward-shift deletion, log compaction); and the
 * snapshot: a store read gives the same objects as the same List read from a file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/live.h"

#define S(lit) lit, sizeof lit - 1

static const char pod_item[] =
    "{\"metadata\":{\"name\":\"train-0\",\"namespace\":\"ml\",\"resourceVersion\":\"42\","
    "\"labels\":{\"app\":\"train\"},"
    "\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":\"{\\\"big\\\":1}\",\"keep\":\"yes\"},"
    "\"managedFields\":[{\"manager\":\"kubectl\",\"fieldsV1\":{\"f:spec\":{}}}]},"
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"env\":[{\"name\":\"A\",\"value\":\"1\"}],"
    "\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"2\"}}}],\"volumes\":[{\"name\":\"v\"}]},"
    "\"status\":{\"phase\":\"Pending\",\"containerStatuses\":[{\"name\":\"c\"}]}}";

static void test_prune(void **state)
{
    (void)state;
    gs_error err;
    gs_live_store *st = gs_live_store_new(&err);
    assert_non_null(st);
    assert_int_equal(gs_live_store_put(st, GS_LIVE_POD, S(pod_item), &err), 0);
    gs_strbuf out = GS_STRBUF_INIT;
    assert_int_equal(gs_live_store_get(st, GS_LIVE_POD, "ml/train-0", &out), 0);
    assert_string_equal(out.buf,
                        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"train-0\",\"namespace\":\"ml\","
                        "\"resourceVersion\":\"42\",\"labels\":{\"app\":\"train\"},\"annotations\":{\"keep\":\"yes\"}},"
                        "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\","
                        "\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"2\"}}}]},"
                        "\"status\":{\"phase\":\"Pending\"}}");
    assert_int_equal(gs_live_store_get(st, GS_LIVE_POD, "ml/absent", &out), 1);
    gs_live_store_stats sts;
    gs_live_store_stats_get(st, GS_LIVE_POD, &sts);
    assert_int_equal(sts.objects, 1);
    assert_true(sts.bytes < sizeof pod_item - 1);
    assert_int_equal(sts.received, sizeof pod_item - 1);
    /* a watch object keeps its own kind and apiVersion; escapes in the name decode */
    static const char node[] = "{ \"kind\" : \"Node\", \"apiVersion\":\"v1\", \"metadata\": {\"name\":\"gpu\\u002d1\", "
                               "\"managedFields\": [] }, \"status\": {\"images\": [{\"names\":[\"a\"]}]} }";
    assert_int_equal(gs_live_store_put(st, GS_LIVE_NODE, S(node), &err), 0);
    assert_int_equal(gs_live_store_get(st, GS_LIVE_NODE, "gpu-1", &out), 0);
    assert_string_equal(out.buf, "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"gpu\\u002d1\"},"
                                 "\"status\":{}}");
    gs_strbuf_free(&out);
    gs_live_store_free(st);
}

static void test_bad_objects(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "[]",
        "{\"metadata\":{\"name\":\"x\"}",
        "{\"metadata\":{\"name\":\"x\"}} trailing",
        "{\"metadata\":{\"name\":\"x\",}}",
        "{\"metadata\":{\"name\":\"x\"},\"a\":01}",
        "{\"metadata\":{\"name\":\"x\"},\"a\":\"\\q\"}",
        "{\"metadata\":{\"name\":\"x\"},\"a\" 1}",
        "{\"metadata\":{\"namespace\":\"x\"}}",
        "{\"metadata\":{\"name\":\"\"}}",
        "{\"metadata\":{\"name\":\"x\"},\"env\":[1,}",
        "{\"metadata\":{\"name\":\"x\"},\"a\":tru}",
        "{\"metadata\":{\"name\":\"a\\u0000\"}}",
        "{\"metadata\":{\"name\":\"x\"},\"items\":",
    };
    gs_error err;
    gs_live_store *st = gs_live_store_new(&err);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gs_error_clear(&err);
        assert_int_equal(gs_live_store_put(st, GS_LIVE_POD, bad[i], strlen(bad[i]), &err), -1);
        assert_int_equal(err.code, GS_ERR_PARSE);
    }
    /* deep nesting is refused, not recursed into without bound */
    char deep[2000];
    size_t n = 0;
    n += (size_t)sprintf(deep, "{\"metadata\":{\"name\":\"x\"},\"a\":");
    for (int i = 0; i < 300; i++)
        deep[n++] = '[';
    for (int i = 0; i < 300; i++)
        deep[n++] = ']';
    deep[n++] = '}';
    assert_int_equal(gs_live_store_put(st, GS_LIVE_POD, deep, n, &err), -1);
    gs_live_store_stats sts;
    gs_live_store_stats_get(st, GS_LIVE_POD, &sts);
    assert_int_equal(sts.objects, 0);
    gs_live_store_free(st);
}

typedef struct walk {
    char keys[16][64];
    int n;
} walk;

static int collect(void *ctx, const char *key, const char *obj, size_t len)
{
    walk *w = ctx;
    (void)obj;
    (void)len;
    if (w->n < 16)
        snprintf(w->keys[w->n++], 64, "%s", key);
    return 0;
}

static void put_pod(gs_live_store *st, const char *ns, const char *name, const char *label)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf,
                     "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"labels\":{\"l\":\"%s\"}},\"spec\":{}}",
                     name, ns, label);
    gs_error err;
    assert_int_equal(gs_live_store_put(st, GS_LIVE_POD, buf, (size_t)n, &err), 0);
}

static void test_order_replace_delete(void **state)
{
    (void)state;
    gs_error err;
    gs_live_store *st = gs_live_store_new(&err);
    uint64_t v0 = gs_live_store_version(st);
    put_pod(st, "a", "x", "1");
    put_pod(st, "a-b", "x", "1");
    put_pod(st, "a", "x-1", "1");
    put_pod(st, "b", "a", "1");
    assert_int_equal(gs_live_store_version(st), v0 + 4);
    put_pod(st, "a", "x", "1"); /* the same text: no change */
    assert_int_equal(gs_live_store_version(st), v0 + 4);
    put_pod(st, "a", "x", "2"); /* modified */
    assert_int_equal(gs_live_store_version(st), v0 + 5);
    walk w = {0};
    assert_int_equal(gs_live_store_each(st, GS_LIVE_POD, collect, &w), 0);
    /* etcd's order of /registry/pods/<ns>/<name>: '-' (0x2d) sorts before '/' (0x2f) */
    assert_int_equal(w.n, 4);
    assert_string_equal(w.keys[0], "a-b/x");
    assert_string_equal(w.keys[1], "a/x");
    assert_string_equal(w.keys[2], "a/x-1");
    assert_string_equal(w.keys[3], "b/a");
    /* a relist that no longer has a/x-1 and b/a */
    gs_live_store_replace_begin(st, GS_LIVE_POD);
    put_pod(st, "a", "x", "2");
    put_pod(st, "a-b", "x", "3");
    gs_live_store_replace_end(st, GS_LIVE_POD);
    memset(&w, 0, sizeof w);
    gs_live_store_each(st, GS_LIVE_POD, collect, &w);
    assert_int_equal(w.n, 2);
    assert_string_equal(w.keys[0], "a-b/x");
    assert_string_equal(w.keys[1], "a/x");
    /* a delete needs only the metadata; deleting again is no error */
    static const char del[] = "{\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"a\",\"name\":\"x\"}}";
    uint64_t v1 = gs_live_store_version(st);
    assert_int_equal(gs_live_store_delete(st, GS_LIVE_POD, S(del), &err), 0);
    assert_int_equal(gs_live_store_version(st), v1 + 1);
    assert_int_equal(gs_live_store_delete(st, GS_LIVE_POD, S(del), &err), 0);
    assert_int_equal(gs_live_store_version(st), v1 + 1);
    gs_live_store_stats sts;
    gs_live_store_stats_get(st, GS_LIVE_POD, &sts);
    assert_int_equal(sts.objects, 1);
    gs_live_store_free(st);
}

static void test_put_list(void **state)
{
    (void)state;
    static const char page[] =
        "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"9\",\"continue\":\"x\"},"
        "\"items\":[{\"metadata\":{\"name\":\"p1\",\"namespace\":\"n\"}},{\"metadata\":{\"name\":\"p0\",\"namespace\":\"n\"}}]}";
    gs_error err;
    gs_live_store *st = gs_live_store_new(&err);
    assert_int_equal(gs_live_store_put_list(st, GS_LIVE_POD, S(page), &err), 0);
    walk w = {0};
    gs_live_store_each(st, GS_LIVE_POD, collect, &w);
    assert_int_equal(w.n, 2);
    assert_string_equal(w.keys[0], "n/p0");
    static const char empty[] = "{\"kind\":\"PodList\",\"items\":[]}";
    static const char null_items[] = "{\"kind\":\"PodList\",\"items\":null}";
    assert_int_equal(gs_live_store_put_list(st, GS_LIVE_POD, S(empty), &err), 0);
    assert_int_equal(gs_live_store_put_list(st, GS_LIVE_POD, S(null_items), &err), 0);
    static const char truncated[] = "{\"kind\":\"PodList\",\"items\":";
    assert_int_equal(gs_live_store_put_list(st, GS_LIVE_POD, S(truncated), &err), -1);
    static const char noitems[] = "{\"kind\":\"Status\",\"code\":500}";
    assert_int_equal(gs_live_store_put_list(st, GS_LIVE_POD, S(noitems), &err), -1);
    assert_int_equal(err.code, GS_ERR_PARSE);
    gs_live_store_free(st);
}

static void test_kinds(void **state)
{
    (void)state;
    char buf[128];
    assert_string_equal(gs_live_kind_path(GS_LIVE_POD, NULL, buf, sizeof buf), "/api/v1/pods");
    assert_string_equal(gs_live_kind_path(GS_LIVE_POD, "ml", buf, sizeof buf), "/api/v1/namespaces/ml/pods");
    assert_string_equal(gs_live_kind_path(GS_LIVE_NODE, "ml", buf, sizeof buf), "/api/v1/nodes");
    assert_string_equal(gs_live_kind_path(GS_LIVE_PRIORITYCLASS, NULL, buf, sizeof buf),
                        "/apis/scheduling.k8s.io/v1/priorityclasses");
    assert_string_equal(gs_live_kind_path(GS_LIVE_EVENT, "x", buf, sizeof buf),
                        "/apis/events.k8s.io/v1/namespaces/x/events");
    assert_null(gs_live_kind_path(GS_LIVE_POD, "ml", buf, 10));
    assert_int_equal(gs_live_kind_find("pods"), GS_LIVE_POD);
    assert_int_equal(gs_live_kind_find("PodDisruptionBudget"), GS_LIVE_PDB);
    assert_int_equal(gs_live_kind_find("configmaps"), -1);
    assert_null(gs_live_kind_get(GS_LIVE_NKINDS));
}

/* Random puts, re-puts, deletes and relists against a plain array model. */
static void test_random_model(void **state)
{
    (void)state;
    enum { N = 3000 };
    static int model[N]; /* -1 absent, else the label value */
    for (int i = 0; i < N; i++)
        model[i] = -1;
    gs_error err;
    gs_live_store *st = gs_live_store_new(&err);
    srand(7);
    char name[32], label[32], buf[256];
    for (int step = 0; step < 60000; step++) {
        int i = rand() % N, op = rand() % 10;
        snprintf(name, sizeof name, "p%d", i);
        if (op < 6) {
            int v = rand() % 1000;
            /* vary the length so texts grow and shrink in place */
            snprintf(label, sizeof label, "%0*d", 1 + v % 9, v);
            put_pod(st, "ns", name, label);
            model[i] = v;
        } else {
            int n = snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\"}}", name);
            assert_int_equal(gs_live_store_delete(st, GS_LIVE_POD, buf, (size_t)n, &err), 0);
            model[i] = -1;
        }
        if (step % 20000 == 19999) {
            /* a relist with the model's objects minus every third */
            gs_live_store_replace_begin(st, GS_LIVE_POD);
            for (int j = 0; j < N; j++) {
                if (model[j] < 0)
                    continue;
                if (j % 3 == 0) {
                    model[j] = -1;
                    continue;
                }
                snprintf(name, sizeof name, "p%d", j);
                snprintf(label, sizeof label, "%0*d", 1 + model[j] % 9, model[j]);
                put_pod(st, "ns", name, label);
            }
            gs_live_store_replace_end(st, GS_LIVE_POD);
        }
    }
    gs_strbuf out = GS_STRBUF_INIT;
    size_t live = 0;
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "ns/p%d", i);
        int rc = gs_live_store_get(st, GS_LIVE_POD, name, &out);
        if (model[i] < 0) {
            assert_int_equal(rc, 1);
            continue;
        }
        live++;
        assert_int_equal(rc, 0);
        snprintf(label, sizeof label, "\"l\":\"%0*d\"", 1 + model[i] % 9, model[i]);
        assert_non_null(strstr(out.buf, label));
    }
    gs_live_store_stats sts;
    gs_live_store_stats_get(st, GS_LIVE_POD, &sts);
    assert_int_equal(sts.objects, live);
    gs_strbuf_free(&out);
    gs_live_store_free(st);
}

/* The store's snapshot is the file reader's snapshot of the same objects. */
static void test_snapshot_same_as_file(void **state)
{
    (void)state;
    static const char dump[] =
        "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":["
        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu-1\",\"labels\":"
        "{\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\"}},\"spec\":{\"taints\":[{\"key\":\"nvidia.com/gpu\","
        "\"value\":\"present\",\"effect\":\"NoSchedule\"}]},\"status\":{\"allocatable\":{\"cpu\":\"64\",\"memory\":"
        "\"512Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"},\"capacity\":{\"cpu\":\"64\",\"memory\":\"512Gi\","
        "\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"},\"images\":[{\"names\":[\"x\"],\"sizeBytes\":1}]}},"
        "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":{\"name\":\"high\"},"
        "\"value\":1000},"
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"namespace\":\"ml\"},\"spec\":"
        "{\"nodeName\":\"gpu-1\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},"
        "\"status\":{\"phase\":\"Running\"}},"
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"b\",\"namespace\":\"ml\"},\"spec\":"
        "{\"priorityClassName\":\"high\",\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
        "{\"nvidia.com/gpu\":\"2\"}}}]},\"status\":{\"phase\":\"Pending\"}}]}";
    gs_error err;
    gs_snapshot file, live;
    gs_snapshot_init(&file);
    gs_snapshot_init(&live);
    assert_int_equal(gs_snapshot_read_buffer(&file, "dump.json", S(dump), NULL, &err), 0);
    assert_int_equal(gs_snapshot_finish(&file, &err), 0);
    gs_live_store *st = gs_live_store_new(&err);
    /* the objects arrive in another order, one kind as list items without kind */
    assert_int_equal(gs_live_store_put(st, GS_LIVE_POD, S("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{"
                                                           "\"name\":\"b\",\"namespace\":\"ml\"},\"spec\":{"
                                                           "\"priorityClassName\":\"high\",\"containers\":[{\"name\":"
                                                           "\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\""
                                                           "}}}]},\"status\":{\"phase\":\"Pending\"}}"),
                                       &err),
                     0);
    assert_int_equal(gs_live_store_put_list(st, GS_LIVE_PRIORITYCLASS,
                                            S("{\"items\":[{\"metadata\":{\"name\":\"high\"},\"value\":1000}]}"), &err),
                     0);
    assert_int_equal(gs_live_store_put(st, GS_LIVE_POD, S("{\"metadata\":{\"name\":\"a\",\"namespace\":\"ml\"},"
                                                           "\"spec\":{\"nodeName\":\"gpu-1\",\"containers\":[{\"name\":"
                                                           "\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},"
                                                           "\"status\":{\"phase\":\"Running\"}}"),
                                       &err),
                     0);
    const char *node = strstr(dump, "{\"apiVersion\":\"v1\",\"kind\":\"Node\"");
    const char *node_end = strstr(dump, ",{\"apiVersion\":\"scheduling");
    assert_int_equal(gs_live_store_put(st, GS_LIVE_NODE, node, (size_t)(node_end - node), &err), 0);
    assert_int_equal(gs_live_store_snapshot(st, 0, &live, "context test", NULL, &err), 0);
    assert_int_equal(gs_snapshot_finish(&live, &err), 0);
    assert_int_equal(live.nodes.n, file.nodes.n);
    assert_int_equal(live.pods.n, file.pods.n);
    assert_int_equal(live.priority_classes.n, 1);
    for (size_t i = 0; i < live.pods.n; i++) {
        const gs_pod *a = &live.pods.v[i], *b = &file.pods.v[i];
        assert_string_equal(a->meta.name, b->meta.name);
        assert_string_equal(a->meta.namespace_, b->meta.namespace_);
        assert_string_equal(a->node_name, b->node_name);
        assert_int_equal(a->meta.src.line, 0);
        assert_string_equal(a->meta.src.file, "context test");
        assert_int_equal(a->priority, b->priority);
    }
    assert_string_equal(live.nodes.v[0].meta.name, "gpu-1");
    assert_int_equal(live.nodes.v[0].ntaints, file.nodes.v[0].ntaints);
    gs_live_store_free(st);
    gs_snapshot_free(&file);
    gs_snapshot_free(&live);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prune),          cmocka_unit_test(test_bad_objects),
        cmocka_unit_test(test_order_replace_delete), cmocka_unit_test(test_put_list),
        cmocka_unit_test(test_kinds),          cmocka_unit_test(test_random_model),
        cmocka_unit_test(test_snapshot_same_as_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
