/* test_extender_proto.c - kube-scheduler's extender protocol (extender.h, "protocol"):
 * ExtenderArgs, ExtenderBindingArgs and ExtenderPreemptionArgs decoded as Go's
 * encoding/json would (case-insensitive keys, unknown fields, nulls), the embedded Pod
 * and NodeList read by the snapshot reader, every way a body is refused (with the field
 * path or line:col), the limits, and the answers byte for byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/extender.h"
#include "gpusched/gpu.h"

/* A GPU pod as kube-scheduler sends it: its informer's object, no apiVersion/kind. */
#define POD_BODY                                                                                              \
    "{\"metadata\":{\"name\":\"train-0\",\"namespace\":\"team-a\",\"uid\":\"0b1c-uid\","                      \
    "\"managedFields\":[{\"manager\":\"kubectl\"}]},"                                                         \
    "\"spec\":{\"schedulerName\":\"gpusched\",\"containers\":[{\"name\":\"main\",\"image\":\"pytorch\","    \
    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\"}}}]},\"status\":{\"phase\":\"Pending\"}}"

static void clear(gs_arena *a, gs_error *err)
{
    gs_arena_init(a, 0);
    gs_error_clear(err);
}

/* ---------------------------------------------------------------- ExtenderArgs */
static void test_args_cache_mode(void **state)
{
    (void)state;
    const char *body = "{\"Pod\":" POD_BODY ",\"Nodes\":null,\"NodeNames\":[\"gpu-1\",\"gpu-2\",\"cpu-\\u00e9\"]}";
    gs_arena a;
    gs_error err;
    gs_ext_args x;
    clear(&a, &err);
    assert_int_equal(gs_ext_args_decode(body, strlen(body), NULL, &a, &x, &err), 0);
    assert_non_null(x.pod);
    assert_string_equal(x.pod->meta.name, "train-0");
    assert_string_equal(x.pod->meta.namespace_, "team-a");
    assert_string_equal(x.pod->meta.uid, "0b1c-uid");
    assert_string_equal(x.pod->scheduler_name, "gpusched");
    assert_int_equal(x.pod->ncontainers, 1);
    /* limits-only defaulting, as the file reader does */
    assert_non_null(gs_reslist_get(&x.pod->containers[0].requests, "nvidia.com/gpu"));
    assert_true(x.cache_mode);
    assert_false(x.has_nodes);
    assert_int_equal(x.nnode_names, 3);
    assert_string_equal(x.node_names[0], "gpu-1");
    assert_string_equal(x.node_names[2], "cpu-\xc3\xa9");
    assert_int_equal(x.nnodes, 0);
    assert_null(x.nodes_json);
    assert_int_equal(x.pod_json_len, strlen(POD_BODY));
    assert_memory_equal(x.pod_json, POD_BODY, x.pod_json_len);
    gs_ext_args_free(&x);
    gs_arena_free(&a);
}

/* Go's encoding/json matches keys case-insensitively (simple folding: U+017F is 's'),
 * ignores unknown keys and treats null as unset. */
static void test_args_keys_and_nulls(void **state)
{
    (void)state;
    const char *bodies[] = {
        "{\"pod\":" POD_BODY ",\"NODENAMES\":[\"n1\"]}",
        "{\"extra\":{\"deep\":[1,2.5e3,true,false,null,\"s\"]},\"pOD\":" POD_BODY ",\"nodeNames\":[\"n1\"],\"Other\":7}",
        "{\"Pod\":" POD_BODY ",\"NodeName\\u017f\":[\"n1\"]}",
        "{\"Pod\":" POD_BODY ",\"Node\\u004eames\":[\"n1\"]}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        gs_arena a;
        gs_error err;
        gs_ext_args x;
        clear(&a, &err);
        if (gs_ext_args_decode(bodies[i], strlen(bodies[i]), NULL, &a, &x, &err) != 0)
            fail_msg("body %zu: %s: %s", i, err.path, err.msg);
        assert_true(x.cache_mode);
        assert_int_equal(x.nnode_names, 1);
        assert_string_equal(x.node_names[0], "n1");
        assert_string_equal(x.pod->meta.name, "train-0");
        gs_ext_args_free(&x);
        gs_arena_free(&a);
    }
    /* null NodeNames: no cache mode; [] is cache mode with no candidates */
    const char *nul = "{\"Pod\":" POD_BODY ",\"Nodes\":null,\"NodeNames\":null}";
    const char *empty = "{\"Pod\":" POD_BODY ",\"NodeNames\":[]}";
    gs_arena a;
    gs_error err;
    gs_ext_args x;
    clear(&a, &err);
    assert_int_equal(gs_ext_args_decode(nul, strlen(nul), NULL, &a, &x, &err), 0);
    assert_false(x.cache_mode);
    assert_false(x.has_nodes);
    assert_int_equal(x.nnode_names, 0);
    gs_ext_args_free(&x);
    assert_int_equal(gs_ext_args_decode(empty, strlen(empty), NULL, &a, &x, &err), 0);
    assert_true(x.cache_mode);
    assert_int_equal(x.nnode_names, 0);
    gs_ext_args_free(&x);
    /* a null string in NodeNames is "" (Go's zero value) */
    const char *nulname = "{\"Pod\":" POD_BODY ",\"NodeNames\":[null,\"b\"]}";
    assert_int_equal(gs_ext_args_decode(nulname, strlen(nulname), NULL, &a, &x, &err), 0);
    assert_string_equal(x.node_names[0], "");
    assert_string_equal(x.node_names[1], "b");
    gs_ext_args_free(&x);
    gs_arena_free(&a);
}

#define NODE_A                                                                                               \
    "{\"metadata\":{\"name\":\"gpu-a\",\"labels\":{\"nvidia.com/gpu.product\":\"NVIDIA-A100-SXM4-80GB\"}}," \
    "\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"8\",\"cpu\":\"64\"},\"allocatable\":{\"nvidia.com/gpu\":\"8\"}}}"
#define NODE_B "{\"metadata\":{\"name\":\"gpu-b\"},\"spec\":{\"unschedulable\":true}}"

static void test_args_nodelist_mode(void **state)
{
    (void)state;
    const char *body = "{\"Pod\":" POD_BODY ",\"Nodes\":{\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[" NODE_A
                       "," NODE_B "]},\"NodeNames\":null}";
    gs_arena a;
    gs_error err;
    gs_ext_args x;
    clear(&a, &err);
    if (gs_ext_args_decode(body, strlen(body), NULL, &a, &x, &err) != 0)
        fail_msg("%s: %s", err.path, err.msg);
    assert_false(x.cache_mode);
    assert_true(x.has_nodes);
    assert_int_equal(x.nnodes, 2);
    assert_string_equal(x.nodes[0].meta.name, "gpu-a");
    assert_string_equal(x.nodes[1].meta.name, "gpu-b");
    assert_true(x.nodes[1].unschedulable);
    assert_non_null(gs_reslist_get(&x.nodes[0].allocatable, "nvidia.com/gpu"));
    assert_int_equal(x.nnode_names, 2);
    assert_string_equal(x.node_names[0], "gpu-a");
    assert_string_equal(x.node_names[1], "gpu-b");
    assert_non_null(x.nodes_json);
    assert_int_equal(x.nodes_json[0], '{');
    assert_string_equal(x.pod->meta.name, "train-0");
    gs_ext_args_free(&x);
    /* items null: a NodeList with no nodes */
    const char *none = "{\"Pod\":" POD_BODY ",\"Nodes\":{\"items\":null}}";
    assert_int_equal(gs_ext_args_decode(none, strlen(none), NULL, &a, &x, &err), 0);
    assert_true(x.has_nodes);
    assert_int_equal(x.nnodes, 0);
    gs_ext_args_free(&x);
    gs_arena_free(&a);
}

/* ---------------------------------------------------------------- refusals */
typedef int (*decode_fn)(const char *, size_t, const gs_ext_limits *, gs_arena *, gs_error *);

static int dec_args(const char *b, size_t n, const gs_ext_limits *l, gs_arena *a, gs_error *e)
{
    gs_ext_args x;
    int rc = gs_ext_args_decode(b, n, l, a, &x, e);
    if (rc == 0)
        gs_ext_args_free(&x);
    else
        assert_null(x.pod);
    return rc;
}
static int dec_bind(const char *b, size_t n, const gs_ext_limits *l, gs_arena *a, gs_error *e)
{
    gs_ext_binding_args x;
    int rc = gs_ext_binding_args_decode(b, n, l, a, &x, e);
    if (rc != 0)
        assert_null(x.pod_uid);
    return rc;
}
static int dec_preempt(const char *b, size_t n, const gs_ext_limits *l, gs_arena *a, gs_error *e)
{
    gs_ext_preemption_args x;
    int rc = gs_ext_preemption_args_decode(b, n, l, a, &x, e);
    if (rc == 0)
        gs_ext_preemption_args_free(&x);
    else
        assert_null(x.pod);
    return rc;
}

/* The body must fail with code, err.path == path (NULL: not checked), a message holding
 * needle (NULL: not checked), and line/col (0: not checked). */
static void refuse(decode_fn fn, const char *body, const gs_ext_limits *lim, gs_code code, const char *path,
                   const char *needle, int line, int col)
{
    gs_arena a;
    gs_error err;
    clear(&a, &err);
    int rc = fn(body, strlen(body), lim, &a, &err);
    bool ok = rc == -1 && err.code == code && (!path || strcmp(err.path, path) == 0) &&
              (!needle || strstr(err.msg, needle)) && (!line || err.line == line) && (!col || err.col == col);
    if (!ok)
        fail_msg("body %s\n  rc %d code %d (want %d) path '%s' (want '%s') at %d:%d (want %d:%d) msg %s", body, rc,
                 err.code, code, err.path, path ? path : "*", err.line, err.col, line, col, err.msg);
    gs_arena_free(&a);
}

static int col_of(const char *body, const char *needle)
{
    const char *p = strstr(body, needle);
    assert_non_null(p);
    return (int)(p - body) + 1;
}

static void test_refuse_wrong_types(void **state)
{
    (void)state;
    refuse(dec_args, "{\"NodeNames\":[\"a\"]}", NULL, GS_ERR_INVALID, "Pod", "is missing", 0, 0);
    refuse(dec_args, "{\"Pod\":null,\"NodeNames\":[\"a\"]}", NULL, GS_ERR_INVALID, "Pod", "is null", 0, 0);
    refuse(dec_args, "{\"Pod\":[],\"NodeNames\":[\"a\"]}", NULL, GS_ERR_INVALID, "Pod", "must be an object", 1, 8);
    refuse(dec_args, "{\"Pod\":" POD_BODY ",\"NodeNames\":\"a\"}", NULL, GS_ERR_INVALID, "NodeNames",
           "must be an array", 0, 0);
    refuse(dec_args, "{\"Pod\":" POD_BODY ",\"NodeNames\":[\"a\",1]}", NULL, GS_ERR_INVALID, "NodeNames[1]",
           "must be a string, got a number", 0, 0);
    refuse(dec_args, "{\"Pod\":" POD_BODY ",\"Nodes\":[]}", NULL, GS_ERR_INVALID, "Nodes", "v1.NodeList", 0, 0);
    refuse(dec_args, "{\"Pod\":" POD_BODY ",\"Nodes\":{\"items\":{}}}", NULL, GS_ERR_INVALID, "Nodes.items",
           "must be an array", 0, 0);
    refuse(dec_args, "{\"Pod\":" POD_BODY ",\"Nodes\":{\"items\":[\"n1\"]}}", NULL, GS_ERR_INVALID, "Nodes.items[0]",
           "v1.Node", 0, 0);
    refuse(dec_args, "{\"Pod\":" POD_BODY ",\"Nodes\":{\"items\":[{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"}}]}}",
           NULL, GS_ERR_INVALID, "Nodes.items", "not v1 Nodes", 0, 0);
    refuse(dec_args, "[1]", NULL, GS_ERR_INVALID, NULL, "must be a JSON object", 1, 1);
    refuse(dec_args, "{\"Pod\":{\"kind\":\"Deployment\",\"spec\":{}}}", NULL, GS_ERR_INVALID, "Pod.kind",
           "expected a v1 Pod", 0, 0);
    /* the same key twice, in any case */
    refuse(dec_args, "{\"Pod\":" POD_BODY ",\"pod\":" POD_BODY "}", NULL, GS_ERR_INVALID, "Pod", "given twice", 0, 0);
    /* the pod itself is read by the snapshot reader: its own paths */
    refuse(dec_args,
           "{\"Pod\":{\"metadata\":{\"name\":\"x\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":"
           "{\"limits\":{\"nvidia.com/gpu\":\"lots\"}}}]}}}",
           NULL, GS_ERR_INVALID, NULL, NULL, 1, 0);
    gs_arena a;
    gs_error err;
    clear(&a, &err);
    const char *bad = "{\"Pod\":{\"metadata\":{\"name\":\"x\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":"
                      "{\"limits\":{\"nvidia.com/gpu\":\"lots\"}}}]}}}";
    assert_int_equal(dec_args(bad, strlen(bad), NULL, &a, &err), -1);
    assert_non_null(strstr(err.path, "Pod default/x"));
    assert_non_null(strstr(err.path, "spec.containers[0]"));
    assert_string_equal(err.file, "");
    gs_arena_free(&a);

    /* binding */
    refuse(dec_bind, "{\"PodName\":\"p\",\"PodNamespace\":\"ns\",\"PodUID\":5,\"Node\":\"n\"}", NULL, GS_ERR_INVALID,
           "PodUID", "must be a string", 1, 45);
    refuse(dec_bind, "{\"PodName\":\"p\",\"PodNamespace\":\"ns\",\"Node\":\"n\"}", NULL, GS_ERR_INVALID, "PodUID",
           "missing", 0, 0);
    /* preemption */
    refuse(dec_preempt, "{\"Pod\":" POD_BODY ",\"NodeNameToVictims\":{\"n1\":{\"NumPDBViolations\":\"1\"}}}", NULL,
           GS_ERR_INVALID, "NodeNameToVictims[n1].NumPDBViolations", "must be an integer", 0, 0);
    refuse(dec_preempt, "{\"Pod\":" POD_BODY ",\"NodeNameToVictims\":{\"n1\":{\"NumPDBViolations\":1.5}}}", NULL,
           GS_ERR_INVALID, "NodeNameToVictims[n1].NumPDBViolations", "must be an integer", 0, 0);
    refuse(dec_preempt,
           "{\"Pod\":" POD_BODY ",\"NodeNameToVictims\":{\"n1\":{\"NumPDBViolations\":9223372036854775808}}}", NULL,
           GS_ERR_INVALID, "NodeNameToVictims[n1].NumPDBViolations", "int64", 0, 0);
    refuse(dec_preempt, "{\"Pod\":" POD_BODY ",\"NodeNameToVictims\":{\"n1\":{\"Pods\":[{\"metadata\":{\"uid\":3}}]}}}",
           NULL, GS_ERR_INVALID, "NodeNameToVictims[n1].Pods[0].metadata.uid", "must be a string", 0, 0);
    refuse(dec_preempt, "{\"Pod\":" POD_BODY ",\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":[{\"uid\":\"\"}]}}}", NULL,
           GS_ERR_INVALID, "NodeNameToMetaVictims[n1].Pods[0].UID", "missing", 0, 0);
    refuse(dec_preempt, "{\"Pod\":" POD_BODY ",\"NodeNameToMetaVictims\":{\"n1\":{},\"n1\":{}}}", NULL, GS_ERR_INVALID,
           "NodeNameToMetaVictims[n1]", "given twice", 0, 0);
    refuse(dec_preempt, "{\"Pod\":" POD_BODY ",\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":[null]}}}", NULL,
           GS_ERR_INVALID, "NodeNameToMetaVictims[n1].Pods[0]", "MetaPod", 0, 0);
}

static void test_refuse_malformed(void **state)
{
    (void)state;
    /* truncated: the position is the end of the input */
    const char *t1 = "{\"Pod\":{\"metadata\":{}},\n\"NodeNames\":[\"a\"";
    refuse(dec_args, t1, NULL, GS_ERR_PARSE, NULL, "unexpected end", 2, 17);
    const char *t2 = "{\"Pod\":{\"metadata\":{\"name\":\"x";
    refuse(dec_args, t2, NULL, GS_ERR_PARSE, NULL, NULL, 1, (int)strlen(t2) + 1);
    refuse(dec_bind, "{\"PodName\":\"p\",", NULL, GS_ERR_PARSE, NULL, NULL, 1, 16);
    refuse(dec_preempt, "{\"Pod\":" POD_BODY ",\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":[{\"UID\":\"u\"}", NULL,
           GS_ERR_PARSE, NULL, "unexpected end", 0, 0);
    refuse(dec_args, "", NULL, GS_ERR_PARSE, NULL, "empty body", 0, 0);
    refuse(dec_args, "{\"Pod\":" POD_BODY ",}", NULL, GS_ERR_PARSE, NULL, "expected a string key", 0, 0);
    refuse(dec_args, "{\"Pod\":" POD_BODY "} {}", NULL, GS_ERR_PARSE, NULL, "content after", 0, 0);
    refuse(dec_args, "{\"x\":[1,],\"Pod\":" POD_BODY "}", NULL, GS_ERR_PARSE, NULL, "expected a value", 1, 9);
    refuse(dec_args, "{\"x\":\"\xff\"}", NULL, GS_ERR_PARSE, NULL, "UTF-8", 1, 7);
    refuse(dec_args, "{\"x\":\"\\ud800\"}", NULL, GS_ERR_PARSE, NULL, "escape", 0, 0);
    refuse(dec_args, "{\"x\":01}", NULL, GS_ERR_PARSE, NULL, "number", 0, 0);
    /* malformed inside the pod: found by the reader, placed on the body's line and column */
    const char *p1 = "{\"NodeNames\":[],\"Pod\":{\"metadata\":{\"name\":tru}}}";
    refuse(dec_args, p1, NULL, GS_ERR_PARSE, NULL, NULL, 1, col_of(p1, "tru}"));
    const char *p2 = "{\"NodeNames\":[],\n \"Pod\":{\n  \"metadata\":{\"name\":\"x\"},\n  \"spec\":{,}}}";
    refuse(dec_args, p2, NULL, GS_ERR_PARSE, NULL, NULL, 4, 11);
    /* a NUL in a string the decoder keeps */
    refuse(dec_bind, "{\"PodName\":\"a\\u0000b\",\"PodNamespace\":\"n\",\"PodUID\":\"u\",\"Node\":\"n\"}", NULL,
           GS_ERR_INVALID, "PodName", "NUL", 0, 0);
}

static void test_limits(void **state)
{
    (void)state;
    gs_ext_limits lim = {.max_body = 0, .max_nodes = 2, .max_victims = 1};
    refuse(dec_args, "{\"Pod\":" POD_BODY ",\"NodeNames\":[\"a\",\"b\",\"c\"]}", &lim, GS_ERR_LIMIT, "NodeNames[2]",
           "more than 2", 0, 0);
    refuse(dec_args, "{\"Pod\":" POD_BODY ",\"Nodes\":{\"items\":[" NODE_A "," NODE_A "," NODE_B "]}}", &lim,
           GS_ERR_LIMIT, "Nodes.items[2]", "more than 2", 0, 0);
    refuse(dec_preempt, "{\"Pod\":" POD_BODY ",\"NodeNameToMetaVictims\":{\"a\":{},\"b\":{},\"c\":{}}}", &lim,
           GS_ERR_LIMIT, "NodeNameToMetaVictims[c]", "more than 2", 0, 0);
    refuse(dec_preempt, "{\"Pod\":" POD_BODY ",\"NodeNameToMetaVictims\":{\"a\":{\"Pods\":[{\"UID\":\"1\"},{\"UID\":\"2\"}]}}}",
           &lim, GS_ERR_LIMIT, "NodeNameToMetaVictims[a].Pods[1]", "more than 1 victim", 0, 0);
    gs_ext_limits small = {.max_body = 64};
    refuse(dec_args, "{\"Pod\":" POD_BODY "}", &small, GS_ERR_LIMIT, NULL, "larger than the limit of 64", 0, 0);
    /* nesting, in an unknown field and inside the pod */
    char deep[600];
    size_t n = 0;
    n += (size_t)snprintf(deep, sizeof deep, "{\"x\":");
    for (int i = 0; i < 200; i++)
        deep[n++] = '[';
    for (int i = 0; i < 200; i++)
        deep[n++] = ']';
    deep[n++] = '}';
    deep[n] = '\0';
    refuse(dec_args, deep, NULL, GS_ERR_LIMIT, NULL, "nested deeper than 128", 0, 0);
    n = (size_t)snprintf(deep, sizeof deep, "{\"Pod\":{\"x\":");
    for (int i = 0; i < 200; i++)
        deep[n++] = '[';
    for (int i = 0; i < 200; i++)
        deep[n++] = ']';
    deep[n++] = '}';
    deep[n++] = '}';
    deep[n] = '\0';
    refuse(dec_args, deep, NULL, GS_ERR_LIMIT, NULL, "nested deeper than 128", 0, 0);
    /* exactly at the limits: accepted */
    gs_arena a;
    gs_error err;
    clear(&a, &err);
    const char *ok = "{\"Pod\":" POD_BODY ",\"NodeNames\":[\"a\",\"b\"]}";
    assert_int_equal(dec_args(ok, strlen(ok), &lim, &a, &err), 0);
    gs_arena_free(&a);
}

/* ---------------------------------------------------------------- GPU conventions */
/* The pod kube-scheduler sends decodes to the gs_pod the file reader gives for the same
 * object, for every GPU request convention the engine knows. */
static void same_pod(const gs_pod *x, const gs_pod *y)
{
    assert_string_equal(x->meta.name, y->meta.name);
    assert_string_equal(x->meta.namespace_, y->meta.namespace_);
    assert_string_equal(x->meta.uid, y->meta.uid);
    assert_int_equal(x->meta.annotations.n, y->meta.annotations.n);
    for (uint32_t i = 0; i < x->meta.annotations.n; i++) {
        assert_string_equal(x->meta.annotations.items[i].key, y->meta.annotations.items[i].key);
        assert_string_equal(x->meta.annotations.items[i].val, y->meta.annotations.items[i].val);
    }
    assert_string_equal(x->scheduler_name, y->scheduler_name);
    assert_int_equal(x->has_priority, y->has_priority);
    assert_int_equal(x->priority, y->priority);
    assert_int_equal(x->ncontainers, y->ncontainers);
    assert_int_equal(x->ninit, y->ninit);
    for (uint32_t c = 0; c < x->ncontainers; c++) {
        const gs_reslist *lists[2][2] = {{&x->containers[c].requests, &y->containers[c].requests},
                                         {&x->containers[c].limits, &y->containers[c].limits}};
        for (int k = 0; k < 2; k++) {
            assert_int_equal(lists[k][0]->n, lists[k][1]->n);
            for (uint32_t i = 0; i < lists[k][0]->n; i++) {
                assert_string_equal(lists[k][0]->items[i].name, lists[k][1]->items[i].name);
                assert_true(lists[k][0]->items[i].q.nanos == lists[k][1]->items[i].q.nanos);
            }
        }
    }
    gs_gpu_request rx, ry;
    gs_error ex, ey;
    int cx = gs_gpu_request_from_pod(x, &rx, &ex);
    int cy = gs_gpu_request_from_pod(y, &ry, &ey);
    assert_int_equal(cx, cy);
    if (cx == 0) {
        assert_int_equal(rx.kind, ry.kind);
        assert_int_equal(rx.conv, ry.conv);
        assert_int_equal(rx.count, ry.count);
        assert_int_equal(rx.milli, ry.milli);
        assert_int_equal(rx.mem_mib, ry.mem_mib);
        assert_int_equal(rx.mem_pct, ry.mem_pct);
        assert_string_equal(rx.mig_profile, ry.mig_profile);
        assert_int_not_equal(rx.kind, GS_GPU_NONE);
    }
}

static void test_gpu_conventions(void **state)
{
    (void)state;
    static const struct {
        const char *annotations; /* JSON object members, or "" */
        const char *limits;      /* JSON object members */
    } conv[] = {
        {"", "\"nvidia.com/gpu\":\"1\""},
        {"", "\"nvidia.com/mig-1g.10gb\":\"2\""},
        {"", "\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem\":\"8000\",\"nvidia.com/gpucores\":\"30\""},
        {"", "\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem-percentage\":\"50\""},
        {"\"gpu-fraction\":\"0.5\"", "\"cpu\":\"1\""},
        {"", "\"aliyun.com/gpu-mem\":\"8\""},
        {"\"alibabacloud.com/gpu-milli\":\"500\",\"alibabacloud.com/gpu-count\":\"1\"", "\"cpu\":\"1\""},
        {"\"gpusched.io/gpu-milli\":\"250\",\"gpusched.io/gpu-count\":\"1\"", "\"cpu\":\"1\""},
        {"", "\"volcano.sh/gpu-memory\":\"4096\""},
        {"", "\"volcano.sh/vgpu-number\":\"1\",\"volcano.sh/vgpu-memory\":\"2048\""},
    };
    for (size_t i = 0; i < sizeof conv / sizeof conv[0]; i++) {
        char pod[1024], file[1100], body[1200];
        snprintf(pod, sizeof pod,
                 "{\"metadata\":{\"name\":\"p%zu\",\"namespace\":\"ml\",\"uid\":\"u-%zu\",\"annotations\":{%s}},"
                 "\"spec\":{\"priority\":100,\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{%s}}}]}}",
                 i, i, conv[i].annotations, conv[i].limits);
        snprintf(file, sizeof file, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",%s", pod + 1);
        snprintf(body, sizeof body, "{\"Pod\":%s,\"NodeNames\":[\"n\"]}", pod);
        gs_snapshot s;
        gs_snapshot_init(&s);
        gs_error err;
        if (gs_snapshot_read_buffer(&s, "pod.json", file, strlen(file), NULL, &err) != 0)
            fail_msg("reader %zu: %s", i, err.msg);
        assert_int_equal(s.pods.n, 1);
        gs_arena a;
        gs_ext_args x;
        clear(&a, &err);
        if (gs_ext_args_decode(body, strlen(body), NULL, &a, &x, &err) != 0)
            fail_msg("convention %zu: %s: %s", i, err.path, err.msg);
        same_pod(x.pod, &s.pods.v[0]);
        gs_ext_args_free(&x);
        gs_arena_free(&a);
        gs_snapshot_free(&s);
    }
}

/* ---------------------------------------------------------------- bind, preempt */
static void test_binding_args(void **state)
{
    (void)state;
    /* the upstream compatibility encoding, and any key case */
    const char *wire = "{\"PodName\":\"pod\",\"PodNamespace\":\"ns\",\"PodUID\":\"uid\",\"Node\":\"node\"}";
    const char *lower = "{\"podname\":\"pod\",\"podnamespace\":\"ns\",\"poduid\":\"uid\",\"node\":\"node\",\"x\":[]}";
    const char *bodies[] = {wire, lower};
    for (int i = 0; i < 2; i++) {
        gs_arena a;
        gs_error err;
        gs_ext_binding_args b;
        clear(&a, &err);
        assert_int_equal(gs_ext_binding_args_decode(bodies[i], strlen(bodies[i]), NULL, &a, &b, &err), 0);
        assert_string_equal(b.pod_name, "pod");
        assert_string_equal(b.pod_namespace, "ns");
        assert_string_equal(b.pod_uid, "uid");
        assert_string_equal(b.node, "node");
        gs_strbuf sb = GS_STRBUF_INIT;
        gs_ext_binding_args_encode(&b, &sb);
        assert_string_equal(gs_strbuf_cstr(&sb), wire);
        gs_strbuf_free(&sb);
        gs_arena_free(&a);
    }
}

static void test_preemption_args(void **state)
{
    (void)state;
    const char *body = "{\"Pod\":" POD_BODY ",\"NodeNameToVictims\":{\"n2\":{\"Pods\":[{\"metadata\":{\"name\":\"low-0\","
                       "\"namespace\":\"batch\",\"uid\":\"v-1\",\"labels\":{\"a\":\"b\"}},\"spec\":{\"containers\":[]}},"
                       "{\"metadata\":{\"uid\":\"v-2\",\"name\":\"low-1\",\"namespace\":\"batch\"}}],"
                       "\"NumPDBViolations\":1},\"n1\":null},\"NodeNameToMetaVictims\":null}";
    gs_arena a;
    gs_error err;
    gs_ext_preemption_args x;
    clear(&a, &err);
    if (gs_ext_preemption_args_decode(body, strlen(body), NULL, &a, &x, &err) != 0)
        fail_msg("%s: %s", err.path, err.msg);
    assert_string_equal(x.pod->meta.name, "train-0");
    assert_true(x.has_victims);
    assert_false(x.has_meta_victims);
    assert_int_equal(x.nvictims, 2);
    assert_string_equal(x.victims[0].node, "n2"); /* order as sent */
    assert_int_equal(x.victims[0].npods, 2);
    assert_int_equal(x.victims[0].num_pdb_violations, 1);
    assert_string_equal(x.victims[0].pods[0].uid, "v-1");
    assert_string_equal(x.victims[0].pods[0].namespace_, "batch");
    assert_string_equal(x.victims[0].pods[0].name, "low-0");
    assert_string_equal(x.victims[0].pods[1].uid, "v-2");
    assert_string_equal(x.victims[1].node, "n1");
    assert_int_equal(x.victims[1].npods, 0);
    gs_ext_preemption_args_free(&x);

    const char *meta = "{\"pod\":" POD_BODY ",\"nodeNameToMetaVictims\":{\"n1\":{\"pods\":[{\"uid\":\"v-9\"}],"
                       "\"numPDBViolations\":-2}}}";
    assert_int_equal(gs_ext_preemption_args_decode(meta, strlen(meta), NULL, &a, &x, &err), 0);
    assert_true(x.has_meta_victims);
    assert_false(x.has_victims);
    assert_int_equal(x.nmeta_victims, 1);
    assert_string_equal(x.meta_victims[0].pods[0].uid, "v-9");
    assert_string_equal(x.meta_victims[0].pods[0].name, "");
    assert_int_equal(x.meta_victims[0].num_pdb_violations, -2);
    /* the answer is always the UID form */
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_ext_preemption_result_encode(x.meta_victims, x.nmeta_victims, &sb);
    assert_string_equal(gs_strbuf_cstr(&sb), "{\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":[{\"UID\":\"v-9\"}],"
                                             "\"NumPDBViolations\":-2}}}");
    gs_strbuf_free(&sb);
    gs_ext_preemption_args_free(&x);
    gs_arena_free(&a);
}

/* ---------------------------------------------------------------- answers */
static void test_encode_answers(void **state)
{
    (void)state;
    gs_strbuf sb = GS_STRBUF_INIT;
    /* live.md 2.3's cache-mode filter answer, with the "Nodes":null Go writes first */
    const char *pass[] = {"n2"};
    gs_ext_node_msg failed[] = {{"n1", "no GPU with 12 GiB free"}};
    gs_ext_filter_result fr = {.cache_mode = true, .nodes = pass, .nnodes = 1, .failed = failed, .nfailed = 1};
    gs_ext_filter_result_encode(&fr, &sb);
    assert_string_equal(gs_strbuf_cstr(&sb), "{\"Nodes\":null,\"NodeNames\":[\"n2\"],\"FailedNodes\":{\"n1\":\"no GPU with "
                                             "12 GiB free\"},\"FailedAndUnresolvableNodes\":null,\"Error\":\"\"}");
    gs_strbuf_reset(&sb);
    /* non-cache mode: a NodeList whose items carry the names; both maps; an error */
    const char *two[] = {"a", "b\"q"};
    gs_ext_node_msg un[] = {{"c", "MIG profile 7g.80gb not offered"}, {"d", "\x01\xff"}};
    gs_ext_filter_result nr = {.cache_mode = false, .nodes = two, .nnodes = 2, .unresolvable = un, .nunresolvable = 2,
                               .error = "boom"};
    gs_ext_filter_result_encode(&nr, &sb);
    assert_string_equal(gs_strbuf_cstr(&sb),
                        "{\"Nodes\":{\"metadata\":{},\"items\":[{\"metadata\":{\"name\":\"a\"}},{\"metadata\":{\"name\":"
                        "\"b\\\"q\"}}]},\"NodeNames\":null,\"FailedNodes\":null,\"FailedAndUnresolvableNodes\":{\"c\":"
                        "\"MIG profile 7g.80gb not offered\",\"d\":\"\\u0001\\ufffd\"},\"Error\":\"boom\"}");
    gs_strbuf_reset(&sb);
    gs_ext_filter_result none = {.cache_mode = true};
    gs_ext_filter_result_encode(&none, &sb);
    assert_string_equal(gs_strbuf_cstr(&sb), "{\"Nodes\":null,\"NodeNames\":[],\"FailedNodes\":null,"
                                             "\"FailedAndUnresolvableNodes\":null,\"Error\":\"\"}");
    gs_strbuf_reset(&sb);
    /* HostPriority: the upstream compatibility encoding; scores clamped to 0..10 */
    gs_ext_host_priority one = {"myhost", 1};
    gs_ext_priorities_encode(&one, 1, &sb);
    assert_string_equal(gs_strbuf_cstr(&sb), "[{\"Host\":\"myhost\",\"Score\":1}]");
    gs_strbuf_reset(&sb);
    gs_ext_host_priority clamp[] = {{"lo", -5}, {"hi", 99}, {"max", 10}, {"big", INT64_MAX}};
    gs_ext_priorities_encode(clamp, 4, &sb);
    assert_string_equal(gs_strbuf_cstr(&sb), "[{\"Host\":\"lo\",\"Score\":0},{\"Host\":\"hi\",\"Score\":10},"
                                             "{\"Host\":\"max\",\"Score\":10},{\"Host\":\"big\",\"Score\":10}]");
    gs_strbuf_reset(&sb);
    gs_ext_priorities_encode(NULL, 0, &sb);
    assert_string_equal(gs_strbuf_cstr(&sb), "[]");
    gs_strbuf_reset(&sb);
    gs_ext_binding_result_encode(NULL, &sb);
    assert_string_equal(gs_strbuf_cstr(&sb), "{\"Error\":\"\"}");
    gs_strbuf_reset(&sb);
    gs_ext_binding_result_encode("node n1 has no GPU 3", &sb);
    assert_string_equal(gs_strbuf_cstr(&sb), "{\"Error\":\"node n1 has no GPU 3\"}");
    gs_strbuf_reset(&sb);
    gs_ext_victim vp[] = {{"3f2a", "", ""}};
    gs_ext_victims vs[] = {{"n1", vp, 1, 0}};
    gs_ext_preemption_result_encode(vs, 1, &sb);
    assert_string_equal(gs_strbuf_cstr(&sb),
                        "{\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":[{\"UID\":\"3f2a\"}],\"NumPDBViolations\":0}}}");
    gs_strbuf_reset(&sb);
    gs_ext_preemption_result_encode(NULL, 0, &sb);
    assert_string_equal(gs_strbuf_cstr(&sb), "{\"NodeNameToMetaVictims\":{}}");
    gs_strbuf_free(&sb);
}

/* Requests encoded and decoded again give the same values. */
static void test_request_round_trip(void **state)
{
    (void)state;
    const char *body = "{\"Pod\":" POD_BODY ",\"Nodes\":{\"items\":[" NODE_A "]},\"NodeNames\":[\"x\\n\",\"y\"]}";
    gs_arena a;
    gs_error err;
    gs_ext_args x, y;
    clear(&a, &err);
    assert_int_equal(gs_ext_args_decode(body, strlen(body), NULL, &a, &x, &err), 0);
    assert_true(x.cache_mode && x.has_nodes);
    assert_int_equal(x.nnodes, 1);
    assert_string_equal(x.node_names[0], "x\n"); /* NodeNames wins for the names */
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_ext_args_encode(&x, &sb);
    assert_int_equal(gs_ext_args_decode(sb.buf, sb.len, NULL, &a, &y, &err), 0);
    assert_int_equal(y.nnode_names, 2);
    assert_string_equal(y.node_names[0], "x\n");
    assert_int_equal(y.nnodes, 1);
    assert_string_equal(y.nodes[0].meta.name, "gpu-a");
    assert_int_equal(y.pod_json_len, x.pod_json_len);
    same_pod(x.pod, y.pod);
    gs_ext_args_free(&x);
    gs_ext_args_free(&y);

    const char *pb = "{\"Pod\":" POD_BODY ",\"NodeNameToVictims\":{\"n\\u00e9\":{\"Pods\":[{\"metadata\":{\"name\":\"v\","
                     "\"namespace\":\"ns\",\"uid\":\"u1\"}}],\"NumPDBViolations\":3}},"
                     "\"NodeNameToMetaVictims\":{\"m\":{\"Pods\":[{\"UID\":\"u2\"}]}}}";
    gs_ext_preemption_args p, q;
    assert_int_equal(gs_ext_preemption_args_decode(pb, strlen(pb), NULL, &a, &p, &err), 0);
    gs_strbuf_reset(&sb);
    gs_ext_preemption_args_encode(&p, &sb);
    assert_string_equal(gs_strbuf_cstr(&sb),
                        "{\"Pod\":" POD_BODY ",\"NodeNameToVictims\":{\"n\xc3\xa9\":{\"Pods\":[{\"metadata\":{\"name\":"
                        "\"v\",\"namespace\":\"ns\",\"uid\":\"u1\"}}],\"NumPDBViolations\":3}},"
                        "\"NodeNameToMetaVictims\":{\"m\":{\"Pods\":[{\"UID\":\"u2\"}],\"NumPDBViolations\":0}}}");
    assert_int_equal(gs_ext_preemption_args_decode(sb.buf, sb.len, NULL, &a, &q, &err), 0);
    assert_int_equal(q.nvictims, 1);
    assert_string_equal(q.victims[0].node, "n\xc3\xa9");
    assert_string_equal(q.victims[0].pods[0].uid, "u1");
    assert_int_equal(q.victims[0].num_pdb_violations, 3);
    assert_string_equal(q.meta_victims[0].pods[0].uid, "u2");
    gs_ext_preemption_args_free(&p);
    gs_ext_preemption_args_free(&q);
    gs_strbuf_free(&sb);
    gs_arena_free(&a);
}

/* Bodies are read within len: the same body cut anywhere is refused, never over-read
 * (the copy has no NUL after it; ASan would see a read past it). */
static void test_cut_anywhere(void **state)
{
    (void)state;
    const char *body = "{\"Pod\":" POD_BODY ",\"NodeNames\":[\"a\",\"b\"]}";
    size_t n = strlen(body);
    for (size_t cut = 0; cut < n; cut++) {
        char *copy = malloc(cut ? cut : 1);
        memcpy(copy, body, cut);
        gs_arena a;
        gs_error err;
        gs_ext_args x;
        clear(&a, &err);
        int rc = gs_ext_args_decode(copy, cut, NULL, &a, &x, &err);
        assert_int_equal(rc, -1);
        assert_int_equal(err.code, GS_ERR_PARSE);
        free(copy);
        gs_arena_free(&a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_args_cache_mode),     cmocka_unit_test(test_args_keys_and_nulls),
        cmocka_unit_test(test_args_nodelist_mode),  cmocka_unit_test(test_refuse_wrong_types),
        cmocka_unit_test(test_refuse_malformed),    cmocka_unit_test(test_limits),
        cmocka_unit_test(test_gpu_conventions),     cmocka_unit_test(test_binding_args),
        cmocka_unit_test(test_preemption_args),     cmocka_unit_test(test_encode_answers),
        cmocka_unit_test(test_request_round_trip),  cmocka_unit_test(test_cut_anywhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
