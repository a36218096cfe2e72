/*
 * test_live_write.c - the write layer (lib/live/write*.c) without a server: paths, the
 * requests each helper prepares (method, content type, query parameters, client-side
 * refusals), bodies (Binding, DeleteOptions, Event, Lease update) with hostile strings,
 * MicroTime, the Event recorder's dedup, series and heartbeat against a fake clock and a
 * recording send function, and leader-election decisions against an in-memory Lease
 * store that enforces resourceVersion like the API server (409 on a stale one).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/live_write.h"
#include "util/json_int.h"

#define S(lit) lit, sizeof lit - 1

/* ---------------------------------------------------------------- fakes */

typedef struct fclock {
    int64_t t; /* microseconds since the test began */
} fclock;
#define WALL0 1764627593000000LL /* 2025-12-01T22:19:53Z */
static int64_t f_now(void *c) { return WALL0 + ((fclock *)c)->t; }
static int64_t f_mono(void *c) { return ((fclock *)c)->t; }
static void f_sleep(void *c, int64_t us) { ((fclock *)c)->t += us; }

typedef struct sent {
    char method[8], path[256], ctype[64], query[256], body[4096];
} sent;

typedef struct recsrv {
    sent req[64];
    int n;
    int answer[64]; /* HTTP status for request i (0: 201/200) */
} recsrv;

static int answer_status(gs_live_response *rs, int code, const char *reason, const char *msg, const char *what,
                         gs_error *err)
{
    gs_strbuf_reset(&rs->body);
    rs->http = code;
    gs_strbuf_printf(&rs->body, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":");
    gs_strbuf_json_str(&rs->body, msg);
    gs_strbuf_printf(&rs->body, ",\"reason\":\"%s\",\"code\":%d}", reason, code);
    return gs_live_status_error(code, rs->body.buf, rs->body.len, what, &rs->status, err);
}

static void record_req(sent *s, const gs_live_request *rq)
{
    memset(s, 0, sizeof *s);
    snprintf(s->method, sizeof s->method, "%s", rq->method ? rq->method : "GET");
    snprintf(s->path, sizeof s->path, "%s", rq->path);
    snprintf(s->ctype, sizeof s->ctype, "%s", rq->content_type ? rq->content_type : "");
    for (size_t i = 0; i < rq->nquery; i++) {
        size_t l = strlen(s->query);
        snprintf(s->query + l, sizeof s->query - l, "%s%s=%s", i ? "&" : "", rq->query[i].name, rq->query[i].value);
    }
    snprintf(s->body, sizeof s->body, "%.*s", (int)rq->body_len, rq->body ? rq->body : "");
}

static int rec_send(void *ctx, const gs_live_request *rq, gs_live_response *rs, gs_error *err)
{
    recsrv *r = ctx;
    assert_true(r->n < 64);
    record_req(&r->req[r->n], rq);
    int code = r->answer[r->n++];
    if (code == 404)
        return answer_status(rs, 404, "NotFound", "events.events.k8s.io \"x\" not found", rq->path, err);
    if (code == 403)
        return answer_status(rs, 403, "Forbidden",
                             "events.events.k8s.io is forbidden: User \"gs-rbac-user\" cannot create resource "
                             "\"events\" in API group \"events.k8s.io\" in the namespace \"default\"",
                             rq->path, err);
    if (code == 409)
        return answer_status(rs, 409, "AlreadyExists", "already exists", rq->path, err);
    gs_strbuf_reset(&rs->body);
    rs->http = 201;
    gs_strbuf_puts(&rs->body, "{}");
    return 0;
}

/* ---------------------------------------------------------------- paths and requests */

static void test_paths(void **state)
{
    (void)state;
    gs_strbuf p = GS_STRBUF_INIT;
    gs_error err;
    assert_int_equal(gs_live_path(&p, "", "v1", "pods", "gpu", "train-0", "binding", &err), 0);
    assert_string_equal(p.buf, "/api/v1/namespaces/gpu/pods/train-0/binding");
    gs_strbuf_reset(&p);
    assert_int_equal(gs_live_path(&p, "coordination.k8s.io", "v1", "leases", "kube-system", NULL, NULL, &err), 0);
    assert_string_equal(p.buf, "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases");
    gs_strbuf_reset(&p);
    assert_int_equal(gs_live_path(&p, NULL, "v1", "nodes", NULL, "gpu 1?#", NULL, &err), 0);
    assert_string_equal(p.buf, "/api/v1/nodes/gpu%201%3F%23");
    gs_strbuf_reset(&p);
    assert_int_equal(gs_live_path(&p, "", "v1", "nodes", NULL, "a/b", NULL, &err), -1);
    assert_string_equal(err.msg, "invalid resource name \"a/b\": may not contain '/'");
    assert_int_equal(gs_live_path(&p, "", "v1", "pods", "..", "x", NULL, &err), -1);
    assert_string_equal(err.msg, "invalid namespace \"..\": may not be '..'");
    assert_int_equal(gs_live_path(&p, "", "v1", "pods", "ns", "50%", NULL, &err), -1);
    assert_string_equal(err.msg, "invalid resource name \"50%\": may not contain '%'");
    assert_int_equal(gs_live_path(&p, "", "v1", "pods", "ns", "", NULL, &err), -1);
    assert_int_equal(gs_live_path(&p, "", "v1", "pods", "ns", "x\n\"y", NULL, &err), 0);
    gs_strbuf_free(&p);
}

static void test_prepare(void **state)
{
    (void)state;
    gs_live_write_rq w = {.body = GS_STRBUF_INIT};
    gs_error err;
    const char *b = "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}";
    /* the content type of each kind */
    static const struct {
        gs_live_patch_type t;
        const char *ct;
    } kinds[] = {{GS_LIVE_PATCH_MERGE, "application/merge-patch+json"},
                 {GS_LIVE_PATCH_STRATEGIC, "application/strategic-merge-patch+json"},
                 {GS_LIVE_PATCH_JSON, "application/json-patch+json"}};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(gs_live_write_prepare(&w, "PATCH", "/api/v1/nodes/n", kinds[i].t, b, strlen(b), NULL, &err), 0);
        assert_string_equal(w.rq.content_type, kinds[i].ct);
        assert_int_equal(w.rq.nquery, 0);
        assert_string_equal(w.rq.method, "PATCH");
    }
    /* apply: fieldManager required; force, dryRun, fieldValidation in url.Values order */
    gs_live_write_opts o = {0};
    assert_int_equal(gs_live_write_prepare(&w, "PATCH", "/api/v1/nodes/n", GS_LIVE_PATCH_APPLY, b, strlen(b), &o, &err), -1);
    assert_string_equal(err.msg, "PATCH /api/v1/nodes/n: fieldManager is required for apply patch");
    o = (gs_live_write_opts){.field_manager = "gpusched-agent", .force = true, .dry_run = true,
                             .validation = GS_LIVE_VALIDATION_STRICT};
    assert_int_equal(gs_live_write_prepare(&w, "PATCH", "/api/v1/nodes/n", GS_LIVE_PATCH_APPLY, b, strlen(b), &o, &err), 0);
    assert_string_equal(w.rq.content_type, "application/apply-patch+yaml");
    assert_int_equal(w.rq.nquery, 4);
    assert_string_equal(w.rq.query[0].name, "dryRun");
    assert_string_equal(w.rq.query[0].value, "All");
    assert_string_equal(w.rq.query[1].name, "fieldManager");
    assert_string_equal(w.rq.query[1].value, "gpusched-agent");
    assert_string_equal(w.rq.query[2].name, "fieldValidation");
    assert_string_equal(w.rq.query[2].value, "Strict");
    assert_string_equal(w.rq.query[3].name, "force");
    assert_string_equal(w.rq.query[3].value, "true");
    /* force is for apply only */
    assert_int_equal(gs_live_write_prepare(&w, "PATCH", "/api/v1/nodes/n", GS_LIVE_PATCH_MERGE, b, strlen(b), &o, &err), -1);
    assert_string_equal(err.msg, "PATCH /api/v1/nodes/n: force may not be specified for non-apply patch");
    o.force = false;
    assert_int_equal(gs_live_write_prepare(&w, "POST", "/api/v1/namespaces/a/pods", GS_LIVE_PATCH_NONE, b, strlen(b), &o,
                                           &err),
                     0);
    assert_string_equal(w.rq.content_type, "application/json");
    assert_int_equal(w.rq.nquery, 3);
    /* bodies, kinds and methods that do not go together */
    assert_int_equal(gs_live_write_prepare(&w, "PUT", "/api/v1/nodes/n", GS_LIVE_PATCH_NONE, NULL, 0, NULL, &err), -1);
    assert_string_equal(err.msg, "PUT /api/v1/nodes/n: the request needs a body");
    assert_int_equal(gs_live_write_prepare(&w, "PUT", "/api/v1/nodes/n", GS_LIVE_PATCH_MERGE, b, strlen(b), NULL, &err), -1);
    assert_int_equal(gs_live_write_prepare(&w, "PATCH", "/api/v1/nodes/n", GS_LIVE_PATCH_NONE, b, strlen(b), NULL, &err), -1);
    assert_int_equal(gs_live_write_prepare(&w, "DELETE", "/api/v1/nodes/n", GS_LIVE_PATCH_NONE, NULL, 0, NULL, &err), 0);
    assert_null(w.rq.content_type);
    /* the field manager the API server would refuse */
    char longfm[140];
    memset(longfm, 'm', 129);
    longfm[129] = '\0';
    o = (gs_live_write_opts){.field_manager = longfm};
    assert_int_equal(gs_live_write_prepare(&w, "PATCH", "/x", GS_LIVE_PATCH_APPLY, b, strlen(b), &o, &err), -1);
    assert_string_equal(err.msg, "fieldManager: Too long: may not be more than 128 bytes");
    o.field_manager = "bad\nmanager";
    assert_int_equal(gs_live_write_prepare(&w, "PATCH", "/x", GS_LIVE_PATCH_APPLY, b, strlen(b), &o, &err), -1);
    assert_string_equal(err.msg, "fieldManager: Invalid value: must only contain printable characters");
    gs_live_write_rq_free(&w);
}

static void test_bodies(void **state)
{
    (void)state;
    gs_strbuf b = GS_STRBUF_INIT;
    gs_error err;
    assert_int_equal(gs_live_binding_body(&b, "gpu", "train-0", "6f1c-uid", "gpu-node-1", NULL, &err), 0);
    assert_string_equal(b.buf, "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"train-0\","
                               "\"namespace\":\"gpu\",\"uid\":\"6f1c-uid\"},\"target\":{\"kind\":\"Node\","
                               "\"name\":\"gpu-node-1\"}}");
    assert_int_equal(gs_live_binding_body(&b, "gpu", "p\"\\\n\x01", NULL, "n\xff\xe2\x80\xa8", NULL, &err), 0);
    assert_string_equal(b.buf, "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"p\\\"\\\\\\n\\u0001\","
                               "\"namespace\":\"gpu\"},\"target\":{\"kind\":\"Node\",\"name\":\"n\\ufffd\\u2028\"}}");
    assert_int_equal(gs_live_binding_body(&b, "gpu", "p", NULL, "", NULL, &err), -1);
    /* an Eviction (the agent's for a container that runs without its devices) */
    assert_int_equal(gs_live_eviction_body(&b, "ml", "train-0", "6f1c-uid", &err), 0);
    assert_string_equal(b.buf, "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":"
                               "\"train-0\",\"namespace\":\"ml\"},\"deleteOptions\":{\"preconditions\":"
                               "{\"uid\":\"6f1c-uid\"}}}");
    assert_int_equal(gs_live_eviction_body(&b, "ml", "p\"", NULL, &err), 0);
    assert_string_equal(b.buf, "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":"
                               "\"p\\\"\",\"namespace\":\"ml\"}}");
    assert_int_equal(gs_live_eviction_body(&b, "", "p", NULL, &err), -1);
    /* annotations travel in the Binding's metadata (merged onto the pod with the bind) */
    const char *ann[] = {"gpusched.io/assignment", "{\"v\":\"1.0\"}", "b", "2", NULL};
    assert_int_equal(gs_live_binding_body(&b, "gpu", "p", "u", "n", ann, &err), 0);
    assert_string_equal(b.buf, "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"p\","
                               "\"namespace\":\"gpu\",\"uid\":\"u\",\"annotations\":{\"gpusched.io/assignment\":"
                               "\"{\\\"v\\\":\\\"1.0\\\"}\",\"b\":\"2\"}},\"target\":{\"kind\":\"Node\",\"name\":\"n\"}}");
    const char *odd[] = {"k", NULL};
    assert_int_equal(gs_live_binding_body(&b, "gpu", "p", NULL, "n", odd, &err), -1);
    const char *none[] = {NULL};
    assert_int_equal(gs_live_binding_body(&b, "gpu", "p", NULL, "n", none, &err), 0);
    assert_null(strstr(b.buf, "annotations"));
    /* DeleteOptions */
    gs_live_delete_opts d = {.uid = "u-1", .resource_version = "42", .propagation = "Foreground", .has_grace = true};
    assert_int_equal(gs_live_delete_body(&b, &d, &err), 0);
    assert_string_equal(b.buf, "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"gracePeriodSeconds\":0,"
                               "\"preconditions\":{\"uid\":\"u-1\",\"resourceVersion\":\"42\"},"
                               "\"propagationPolicy\":\"Foreground\"}");
    d = (gs_live_delete_opts){.resource_version = "7"};
    assert_int_equal(gs_live_delete_body(&b, &d, &err), 0);
    assert_string_equal(b.buf, "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"preconditions\":{\"resourceVersion\":\"7\"}}");
    d = (gs_live_delete_opts){.dry_run = true};
    assert_int_equal(gs_live_delete_body(&b, &d, &err), 0);
    assert_int_equal(b.len, 0);
    d.propagation = "Sometimes";
    assert_int_equal(gs_live_delete_body(&b, &d, &err), -1);
    gs_strbuf_free(&b);
}

static void test_microtime(void **state)
{
    (void)state;
    char t[32];
    gs_live_microtime(t, WALL0 + 42);
    assert_string_equal(t, "2025-12-01T22:19:53.000042Z");
    gs_live_microtime(t, 0);
    assert_string_equal(t, "1970-01-01T00:00:00.000000Z");
    gs_live_microtime(t, 951782400LL * 1000000 + 999999);
    assert_string_equal(t, "2000-02-29T00:00:00.999999Z");
    gs_live_microtime(t, -1);
    assert_string_equal(t, "1969-12-31T23:59:59.999999Z");
    int64_t us;
    assert_int_equal(gs_live_microtime_parse("2025-12-01T22:19:53.000042Z", &us), 0);
    assert_true(us == WALL0 + 42);
    assert_int_equal(gs_live_microtime_parse("2025-12-01T22:19:53Z", &us), 0);
    assert_true(us == WALL0);
    assert_int_equal(gs_live_microtime_parse("2025-12-01T23:19:53.1234567+01:00", &us), 0);
    assert_true(us == WALL0 + 123456);
    assert_int_equal(gs_live_microtime_parse("2025-12-01 22:19", &us), -1);
    assert_int_equal(gs_live_microtime_parse("yesterday", &us), -1);
}

/* ---------------------------------------------------------------- events */

static const gs_live_objref pod_ref = {"v1", "Pod", "gpu", "train-0", "6f1c", "1234", NULL};
static const gs_live_objref node_ref = {"v1", "Node", NULL, "gpu-node-1", "9a9a", NULL, NULL};

static void test_event_body(void **state)
{
    (void)state;
    gs_strbuf b = GS_STRBUF_INIT;
    gs_error err;
    gs_live_event ev = {&pod_ref, &node_ref, GS_LIVE_EVENT_WARNING, "FailedScheduling", "Scheduling",
                        "0/2 nodes are available: \"quoted\"\n\t\x7f"};
    assert_int_equal(gs_live_event_body(&b, &ev, "train-0.1", "gpu", "gpusched.io/extender", "ext-1", WALL0 + 1, 0, 0,
                                        &err),
                     0);
    assert_string_equal(
        b.buf, "{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"train-0.1\","
               "\"namespace\":\"gpu\"},\"eventTime\":\"2025-12-01T22:19:53.000001Z\",\"reportingController\":"
               "\"gpusched.io/extender\",\"reportingInstance\":\"ext-1\",\"action\":\"Scheduling\",\"reason\":"
               "\"FailedScheduling\",\"regarding\":{\"kind\":\"Pod\",\"namespace\":\"gpu\",\"name\":\"train-0\","
               "\"uid\":\"6f1c\",\"apiVersion\":\"v1\",\"resourceVersion\":\"1234\"},\"related\":{\"kind\":\"Node\","
               "\"name\":\"gpu-node-1\",\"uid\":\"9a9a\",\"apiVersion\":\"v1\"},\"note\":\"0/2 nodes are available: "
               "\\\"quoted\\\"\\n\\t\\u007f\",\"type\":\"Warning\"}");
    /* read back with the library's reader */
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_live_event_info info;
    assert_int_equal(gs_live_event_parse(b.buf, b.len, &a, &info, &err), 0);
    assert_string_equal(info.name, "train-0.1");
    assert_string_equal(info.note, "0/2 nodes are available: \"quoted\"\n\t\x7f");
    assert_string_equal(info.regarding_uid, "6f1c");
    assert_true(info.event_time_us == WALL0 + 1);
    assert_int_equal(info.series_count, 0);
    /* with a series */
    assert_int_equal(gs_live_event_body(&b, &ev, "e", "gpu", "c", "i", WALL0, 3, WALL0 + 5000000, &err), 0);
    assert_non_null(strstr(b.buf, ",\"series\":{\"count\":3,\"lastObservedTime\":\"2025-12-01T22:19:58.000000Z\"},"));
    assert_int_equal(gs_live_event_parse(b.buf, b.len, &a, &info, &err), 0);
    assert_int_equal(info.series_count, 3);
    assert_true(info.series_last_observed_us == WALL0 + 5000000);
    /* refusals */
    ev.reason = "";
    assert_int_equal(gs_live_event_body(&b, &ev, "e", "gpu", "c", "i", WALL0, 0, 0, &err), -1);
    assert_string_equal(err.msg, "event: reason is required");
    ev.reason = "R";
    assert_int_equal(gs_live_event_body(&b, &ev, "e", "gpu", NULL, "i", WALL0, 0, 0, &err), -1);
    assert_string_equal(err.msg, "event: reportingController is required");
    char longns[300];
    memset(longns, 'n', 299);
    longns[299] = '\0';
    gs_live_objref far = {"v1", "Pod", longns, "p", NULL, NULL, NULL};
    gs_live_event ev4 = {&far, NULL, GS_LIVE_EVENT_NORMAL, "R", "A", NULL};
    assert_int_equal(gs_live_event_body(&b, &ev4, "e", "gpu", "c", "i", WALL0, 0, 0, &err), -1);
    assert_string_equal(err.msg, "event: regarding's namespace is longer than 253 bytes");
    /* answers that are not Events */
    assert_int_equal(gs_live_event_parse(S("[]"), &a, &info, &err), -1);
    assert_int_equal(gs_live_event_parse(S("{\"metadata\":{\"name\":\"x\"},\"series\":{\"count\":\"2\"}}"), &a, &info, &err), -1);
    assert_int_equal(err.line, 1);
    assert_int_equal(err.col, 44);
    assert_int_equal(gs_live_event_parse(S("{\"metadata\":{\"name\":\"x\"},\n\"eventTime\":\"now\"}"), &a, &info, &err), -1);
    assert_int_equal(err.line, 2);
    gs_arena_free(&a);
    gs_strbuf_free(&b);
}

static void test_note_truncation(void **state)
{
    (void)state;
    char note[3000];
    bool cut;
    memset(note, 'x', 1024);
    note[1024] = '\0';
    assert_int_equal(gs_live_note_len(note, &cut), 1024);
    assert_false(cut);
    note[1024] = 'y';
    note[1025] = '\0';
    assert_int_equal(gs_live_note_len(note, &cut), 1020);
    assert_true(cut);
    /* a 3-byte character across the cut: kept whole or not at all */
    memset(note, 'x', 1019);
    strcpy(note + 1019, "\xe2\x82\xac\xe2\x82\xac" "and more");
    assert_int_equal(gs_live_note_len(note, &cut), 1019);
    /* bytes that are no UTF-8 count as U+FFFD (3 bytes) */
    memset(note, '\xff', 400);
    note[400] = '\0';
    assert_int_equal(gs_live_note_len(note, &cut), 340);
    assert_true(cut);
    /* the body: at most 1024 bytes decoded, ending " ..." */
    memset(note, 'n', 2999);
    note[2999] = '\0';
    gs_live_event ev = {&pod_ref, NULL, GS_LIVE_EVENT_NORMAL, "Big", "Testing", note};
    gs_strbuf b = GS_STRBUF_INIT;
    gs_error err;
    assert_int_equal(gs_live_event_body(&b, &ev, "e", "gpu", "c", "i", WALL0, 0, 0, &err), 0);
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_live_event_info info;
    assert_int_equal(gs_live_event_parse(b.buf, b.len, &a, &info, &err), 0);
    assert_int_equal(strlen(info.note), 1024);
    assert_string_equal(info.note + 1020, " ...");
    gs_arena_free(&a);
    gs_strbuf_free(&b);
}

static gs_live_recorder *new_recorder(fclock *fc, gs_live_clock *clk, recsrv *srv, size_t cache)
{
    *clk = (gs_live_clock){f_now, f_mono, f_sleep, fc};
    gs_live_recorder_opts o = {.reporting_controller = "gpusched.io/monitor", .reporting_instance = "mon-1",
                               .cache_size = cache, .clock = clk, .send = rec_send, .send_ctx = srv};
    gs_error err;
    gs_live_recorder *r = gs_live_recorder_new(NULL, &o, &err);
    assert_non_null(r);
    return r;
}

static void test_recorder_series(void **state)
{
    (void)state;
    fclock fc = {0};
    gs_live_clock clk;
    recsrv *srv = calloc(1, sizeof *srv);
    gs_live_recorder *r = new_recorder(&fc, &clk, srv, 0);
    gs_error err;
    gs_live_event ev = {&pod_ref, NULL, GS_LIVE_EVENT_WARNING, "FailedScheduling", "Scheduling", "0/2 nodes"};
    /* first: a new Event */
    assert_int_equal(gs_live_recorder_event(r, &ev, &err), 0);
    assert_int_equal(srv->n, 1);
    assert_string_equal(srv->req[0].method, "POST");
    assert_string_equal(srv->req[0].path, "/apis/events.k8s.io/v1/namespaces/gpu/events");
    assert_string_equal(srv->req[0].ctype, "application/json");
    char name[64];
    snprintf(name, sizeof name, "train-0.%llx", (unsigned long long)WALL0 * 1000ull);
    assert_non_null(strstr(srv->req[0].body, name));
    assert_null(strstr(srv->req[0].body, "series"));
    /* second, 3 s later: series count 2 as a strategic merge patch of that Event */
    fc.t += 3000000;
    assert_int_equal(gs_live_recorder_event(r, &ev, &err), 0);
    assert_int_equal(srv->n, 2);
    assert_string_equal(srv->req[1].method, "PATCH");
    char path[128];
    snprintf(path, sizeof path, "/apis/events.k8s.io/v1/namespaces/gpu/events/%s", name);
    assert_string_equal(srv->req[1].path, path);
    assert_string_equal(srv->req[1].ctype, "application/strategic-merge-patch+json");
    assert_string_equal(srv->req[1].body, "{\"series\":{\"count\":2,\"lastObservedTime\":\"2025-12-01T22:19:56.000000Z\"}}");
    /* third and fourth: counted only */
    fc.t += 1000000;
    assert_int_equal(gs_live_recorder_event(r, &ev, &err), 0);
    fc.t += 1000000;
    assert_int_equal(gs_live_recorder_event(r, &ev, &err), 0);
    assert_int_equal(srv->n, 2);
    /* another note or type joins the series (client-go's eventKey leaves them out) */
    gs_live_event ev2 = ev;
    ev2.note = "1/2 nodes";
    ev2.type = GS_LIVE_EVENT_WARNING;
    assert_int_equal(gs_live_recorder_event(r, &ev2, &err), 0);
    assert_int_equal(srv->n, 2);
    /* another action, reason or related is another event */
    gs_live_event ev3 = ev;
    ev3.related = &node_ref;
    assert_int_equal(gs_live_recorder_event(r, &ev3, &err), 0);
    assert_int_equal(srv->n, 3);
    assert_string_equal(srv->req[2].method, "POST");
    gs_live_event ev4 = ev;
    ev4.action = "Other";
    assert_int_equal(gs_live_recorder_event(r, &ev4, &err), 0);
    assert_int_equal(srv->n, 4);
    /* the heartbeat, called every minute while the series goes on: nothing is sent before
     * 30 min (the single events leave the cache at the 12-minute finish check), then the
     * series with its count */
    assert_int_equal(gs_live_recorder_tick(r, &err), 0);
    assert_int_equal(srv->n, 4);
    for (int m = 1; m < 30; m++) {
        fc.t = m * 60LL * 1000000;
        assert_int_equal(gs_live_recorder_event(r, &ev, &err), 0);
        assert_int_equal(gs_live_recorder_tick(r, &err), 0);
    }
    assert_int_equal(srv->n, 4);
    gs_live_recorder_stats st;
    gs_live_recorder_stats_get(r, &st);
    assert_int_equal(st.cached, 1);
    assert_int_equal(st.finished, 2);
    fc.t = 30LL * 60 * 1000000;
    assert_int_equal(gs_live_recorder_tick(r, &err), 0);
    assert_int_equal(srv->n, 5);
    assert_string_equal(srv->req[4].method, "PATCH");
    assert_string_equal(srv->req[4].body, "{\"series\":{\"count\":34,\"lastObservedTime\":\"2025-12-01T22:48:53.000000Z\"}}");
    gs_live_recorder_stats_get(r, &st);
    assert_int_equal(st.recorded, 36);
    assert_int_equal(st.created, 3);
    assert_int_equal(st.patched, 2);
    assert_int_equal(st.aggregated, 32);
    assert_int_equal(st.failed, 0);
    /* the series ends: idle for 6 min at the 36-minute check; its count was sent */
    fc.t = 36LL * 60 * 1000000;
    assert_int_equal(gs_live_recorder_tick(r, &err), 0);
    gs_live_recorder_stats_get(r, &st);
    assert_int_equal(st.cached, 0);
    assert_int_equal(st.finished, 3);
    assert_int_equal(srv->n, 5);
    /* after the finish, the same event starts a new Event */
    assert_int_equal(gs_live_recorder_event(r, &ev, &err), 0);
    assert_int_equal(srv->n, 6);
    assert_string_equal(srv->req[5].method, "POST");
    gs_live_recorder_free(r);
    free(srv);
}

static void test_recorder_finish_sends_count(void **state)
{
    (void)state;
    fclock fc = {0};
    gs_live_clock clk;
    recsrv *srv = calloc(1, sizeof *srv);
    gs_live_recorder *r = new_recorder(&fc, &clk, srv, 0);
    gs_error err;
    gs_live_event ev = {&pod_ref, NULL, GS_LIVE_EVENT_NORMAL, "Preempted", "Preempting", "by x"};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(gs_live_recorder_event(r, &ev, &err), 0);
        fc.t += 1000000;
    }
    assert_int_equal(srv->n, 2); /* create, count 2 */
    fc.t = 13LL * 60 * 1000000; /* idle > 6 min at a finish check, before the 30 min refresh */
    assert_int_equal(gs_live_recorder_tick(r, &err), 0);
    assert_int_equal(srv->n, 3);
    assert_string_equal(srv->req[2].body, "{\"series\":{\"count\":5,\"lastObservedTime\":\"2025-12-01T22:19:57.000000Z\"}}");
    gs_live_recorder_stats st;
    gs_live_recorder_stats_get(r, &st);
    assert_int_equal(st.cached, 0);
    /* flush sends nothing now */
    assert_int_equal(gs_live_recorder_flush(r, &err), 0);
    assert_int_equal(srv->n, 3);
    gs_live_recorder_free(r);
    free(srv);
}

static void test_recorder_patch_404_and_failures(void **state)
{
    (void)state;
    fclock fc = {0};
    gs_live_clock clk;
    recsrv *srv = calloc(1, sizeof *srv);
    gs_live_recorder *r = new_recorder(&fc, &clk, srv, 0);
    gs_error err;
    gs_live_event ev = {&pod_ref, NULL, GS_LIVE_EVENT_NORMAL, "Scheduled", "Binding", "assigned"};
    assert_int_equal(gs_live_recorder_event(r, &ev, &err), 0);
    srv->answer[1] = 404; /* the Event expired: created again with its series */
    fc.t += 1000;
    assert_int_equal(gs_live_recorder_event(r, &ev, &err), 0);
    assert_int_equal(srv->n, 3);
    assert_string_equal(srv->req[2].method, "POST");
    assert_non_null(strstr(srv->req[2].body, "\"series\":{\"count\":2,"));
    /* a forbidden create: the server's message, counted */
    gs_live_event ev2 = ev;
    ev2.reason = "Other";
    srv->answer[3] = 403;
    assert_int_equal(gs_live_recorder_event(r, &ev2, &err), -1);
    assert_non_null(strstr(err.msg, "cannot create resource \"events\""));
    gs_live_recorder_stats st;
    gs_live_recorder_stats_get(r, &st);
    assert_int_equal(st.failed, 1);
    assert_string_equal(st.last_error.msg, err.msg);
    /* a bad event is refused before any request */
    ev2.action = NULL;
    assert_int_equal(gs_live_recorder_event(r, &ev2, &err), -1);
    assert_string_equal(err.msg, "event: action is required");
    assert_int_equal(srv->n, 4);
    gs_live_recorder_stats_get(r, &st);
    assert_int_equal(st.failed, 2);
    gs_live_recorder_free(r);
    free(srv);
}

static void test_recorder_lru(void **state)
{
    (void)state;
    fclock fc = {0};
    gs_live_clock clk;
    recsrv *srv = calloc(1, sizeof *srv);
    gs_live_recorder *r = new_recorder(&fc, &clk, srv, 2);
    gs_error err;
    gs_live_event a = {&pod_ref, NULL, GS_LIVE_EVENT_NORMAL, "A", "Act", NULL};
    gs_live_event b = a, c = a;
    b.reason = "B";
    c.reason = "C";
    assert_int_equal(gs_live_recorder_event(r, &a, &err), 0); /* POST a */
    fc.t += 1;
    assert_int_equal(gs_live_recorder_event(r, &a, &err), 0); /* PATCH a 2 */
    fc.t += 1;
    assert_int_equal(gs_live_recorder_event(r, &a, &err), 0); /* a 3, unsent */
    fc.t += 1;
    assert_int_equal(gs_live_recorder_event(r, &b, &err), 0); /* POST b */
    fc.t += 1;
    assert_int_equal(gs_live_recorder_event(r, &b, &err), 0); /* PATCH b 2: b most recent */
    fc.t += 1;
    assert_int_equal(gs_live_recorder_event(r, &c, &err), 0); /* a evicted: PATCH a 3, POST c */
    assert_int_equal(srv->n, 6);
    assert_string_equal(srv->req[4].method, "PATCH");
    assert_non_null(strstr(srv->req[4].body, "\"count\":3"));
    assert_string_equal(srv->req[5].method, "POST");
    gs_live_recorder_stats st;
    gs_live_recorder_stats_get(r, &st);
    assert_int_equal(st.evicted, 1);
    assert_int_equal(st.cached, 2);
    assert_int_equal(st.cache_size, 2);
    /* a, forgotten, starts over */
    assert_int_equal(gs_live_recorder_event(r, &a, &err), 0);
    assert_string_equal(srv->req[6].method, "POST");
    /* a regarding name that makes no valid Event name: a UUID */
    gs_live_objref odd = {"v1", "Node", NULL, "GPU_Node", NULL, NULL, NULL};
    gs_live_event d = {&odd, NULL, GS_LIVE_EVENT_NORMAL, "D", "Act", NULL};
    assert_int_equal(gs_live_recorder_event(r, &d, &err), 0);
    const char *nm = strstr(srv->req[srv->n - 1].body, "\"name\":\"") + 8;
    assert_int_equal(strcspn(nm, "\""), 36);
    assert_int_equal(nm[14], '4');
    assert_string_equal(srv->req[srv->n - 1].path, "/apis/events.k8s.io/v1/namespaces/default/events");
    gs_live_recorder_free(r);
    free(srv);
}

/* ---------------------------------------------------------------- leases */

static const char lease_json[] =
    "{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\",\"metadata\":{\"name\":\"gs-lock\","
    "\"namespace\":\"gs-system\",\"resourceVersion\":\"77\",\"labels\":{\"keep\":\"me\"}},\"spec\":{"
    "\"holderIdentity\":\"a\",\"leaseDurationSeconds\":15,\"acquireTime\":\"2025-12-01T22:19:53.000000Z\","
    "\"renewTime\":\"2025-12-01T22:20:03.500000Z\",\"leaseTransitions\":3}}";

static void test_lease_parse_and_update_body(void **state)
{
    (void)state;
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_live_lease l;
    gs_error err;
    assert_int_equal(gs_live_lease_parse(S(lease_json), &a, &l, &err), 0);
    assert_string_equal(l.holder, "a");
    assert_string_equal(l.resource_version, "77");
    assert_int_equal(l.duration_s, 15);
    assert_int_equal(l.transitions, 3);
    assert_true(l.acquire_us == WALL0);
    assert_true(l.renew_us == WALL0 + 10500000);
    /* the update body keeps metadata (resourceVersion, labels) and replaces the spec */
    gs_live_lease_record rec = {"b\"\n", 15, WALL0, WALL0 + 1, 4};
    gs_strbuf b = GS_STRBUF_INIT;
    assert_int_equal(gs_live_lease_update_body(&b, S(lease_json), &rec, &err), 0);
    assert_string_equal(b.buf, "{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\",\"metadata\":{"
                               "\"name\":\"gs-lock\",\"namespace\":\"gs-system\",\"resourceVersion\":\"77\",\"labels\":"
                               "{\"keep\":\"me\"}},\"spec\":{\"holderIdentity\":\"b\\\"\\n\",\"leaseDurationSeconds\":15,"
                               "\"acquireTime\":\"2025-12-01T22:19:53.000000Z\",\"renewTime\":"
                               "\"2025-12-01T22:19:53.000001Z\",\"leaseTransitions\":4}}");
    assert_int_equal(gs_live_lease_parse(b.buf, b.len, &a, &l, &err), 0);
    assert_string_equal(l.holder, "b\"\n");
    assert_string_equal(l.resource_version, "77");
    /* spec not last, spec absent, an empty object */
    assert_int_equal(gs_live_lease_update_body(&b, S("{ \"spec\" : {\"x\":[1,{}]} ,\n \"metadata\":{\"name\":\"n\"} }\n"),
                                               &rec, &err),
                     0);
    assert_int_equal(gs_live_lease_parse(b.buf, b.len, &a, &l, &err), 0);
    assert_string_equal(l.name, "n");
    assert_int_equal(l.transitions, 4);
    assert_int_equal(gs_live_lease_update_body(&b, S("{\"metadata\":{\"name\":\"n\"}}"), &rec, &err), 0);
    assert_int_equal(gs_live_lease_parse(b.buf, b.len, &a, &l, &err), 0);
    assert_int_equal(l.transitions, 4);
    assert_int_equal(gs_live_lease_update_body(&b, S("{}"), &rec, &err), 0);
    assert_non_null(strstr(b.buf, "{\"spec\":{"));
    assert_int_equal(gs_live_lease_update_body(&b, S("[1]"), &rec, &err), -1);
    /* errors carry the position */
    assert_int_equal(gs_live_lease_parse(S("{\"metadata\":{\"name\":\"n\"},\n\"spec\":{\"leaseTransitions\":\"3\"}}"), &a, &l,
                                         &err),
                     -1);
    assert_int_equal(err.line, 2);
    assert_int_equal(err.col, 28);
    assert_string_equal(err.msg, "expected a 32-bit integer, got another string");
    assert_int_equal(gs_live_lease_parse(S("{\"metadata\":{\"name\":\"n\"},\"spec\":{\"renewTime\":\"soon\"}}"), &a, &l, &err), -1);
    assert_int_equal(gs_live_lease_parse(S("{\"metadata\":{}}"), &a, &l, &err), -1);
    /* no spec: holder "" */
    assert_int_equal(gs_live_lease_parse(S("{\"metadata\":{\"name\":\"n\"}}"), &a, &l, &err), 0);
    assert_string_equal(l.holder, "");
    gs_strbuf_free(&b);
    gs_arena_free(&a);
}

/* An in-memory Lease with the API server's optimistic concurrency. */
typedef struct leasesrv {
    bool exists;
    int rv;
    char holder[64];
    int32_t duration, transitions;
    int64_t acquire, renew;
    int gets, posts, puts, conflicts;
    int bump_before_put; /* another writer moves the resourceVersion before the next PUT */
    bool forbid;
    char last_put[2048];
} leasesrv;

static void lease_render(leasesrv *s, gs_strbuf *out)
{
    gs_strbuf_reset(out);
    gs_strbuf_printf(out, "{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\",\"metadata\":{\"name\":\"lock\","
                          "\"namespace\":\"gs\",\"resourceVersion\":\"%d\",\"labels\":{\"keep\":\"me\"}},\"spec\":",
                     s->rv);
    gs_live_lease_record r = {s->holder, s->duration, s->acquire, s->renew, s->transitions};
    gs_live_lease_spec_json(out, &r);
    gs_strbuf_putc(out, '}');
}

static int lease_send(void *ctx, const gs_live_request *rq, gs_live_response *rs, gs_error *err)
{
    leasesrv *s = ctx;
    const char *m = rq->method ? rq->method : "GET";
    if (s->forbid)
        return answer_status(rs, 403, "Forbidden",
                             "leases.coordination.k8s.io \"lock\" is forbidden: User \"gs-rbac-user\" cannot get "
                             "resource \"leases\"",
                             rq->path, err);
    if (!strcmp(m, "GET")) {
        assert_string_equal(rq->path, "/apis/coordination.k8s.io/v1/namespaces/gs/leases/lock");
        s->gets++;
        if (!s->exists)
            return answer_status(rs, 404, "NotFound", "leases.coordination.k8s.io \"lock\" not found", rq->path, err);
        lease_render(s, &rs->body);
        rs->http = 200;
        return 0;
    }
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_live_lease l;
    gs_error e2;
    assert_int_equal(gs_live_lease_parse(rq->body, rq->body_len, &a, &l, &e2), 0);
    int rc = 0;
    if (!strcmp(m, "POST")) {
        assert_string_equal(rq->path, "/apis/coordination.k8s.io/v1/namespaces/gs/leases");
        s->posts++;
        if (s->exists) {
            rc = answer_status(rs, 409, "AlreadyExists", "leases.coordination.k8s.io \"lock\" already exists", rq->path, err);
            goto out;
        }
        s->exists = true;
    } else {
        assert_string_equal(m, "PUT");
        s->puts++;
        snprintf(s->last_put, sizeof s->last_put, "%.*s", (int)rq->body_len, rq->body);
        assert_non_null(strstr(s->last_put, "\"labels\":{\"keep\":\"me\"}"));
        if (s->bump_before_put) {
            s->bump_before_put--;
            s->rv++;
        }
        char want[16];
        snprintf(want, sizeof want, "%d", s->rv);
        if (!l.resource_version || strcmp(l.resource_version, want)) {
            s->conflicts++;
            rc = answer_status(rs, 409, "Conflict",
                               "Operation cannot be fulfilled on leases.coordination.k8s.io \"lock\": the object has been "
                               "modified; please apply your changes to the latest version and try again",
                               rq->path, err);
            goto out;
        }
    }
    s->rv++;
    snprintf(s->holder, sizeof s->holder, "%s", l.holder);
    s->duration = l.duration_s;
    s->transitions = l.transitions;
    s->acquire = l.acquire_us;
    s->renew = l.renew_us;
    lease_render(s, &rs->body);
    rs->http = 200;
out:
    gs_arena_free(&a);
    return rc;
}

static gs_live_elector *candidate(const char *id, leasesrv *srv, gs_live_clock *clk)
{
    gs_live_elector_opts o = {.namespace_ = "gs", .name = "lock", .identity = id, .clock = clk, .send = lease_send,
                              .send_ctx = srv, .release_on_cancel = true};
    gs_error err;
    gs_live_elector *e = gs_live_elector_new(NULL, &o, &err);
    assert_non_null(e);
    return e;
}

#define SEC 1000000LL

static void test_elector_decisions(void **state)
{
    (void)state;
    fclock fc = {0};
    gs_live_clock clk = {f_now, f_mono, f_sleep, &fc};
    leasesrv srv = {0};
    gs_live_elector *a = candidate("a", &srv, &clk), *b = candidate("b", &srv, &clk);
    gs_error err;
    /* no Lease: a creates it */
    assert_int_equal(gs_live_elector_try_acquire_or_renew(a, fc.t, &err), 1);
    assert_int_equal(srv.posts, 1);
    assert_string_equal(srv.holder, "a");
    assert_int_equal(srv.transitions, 0);
    assert_int_equal(srv.duration, 15);
    assert_true(gs_live_elector_is_leader(a));
    /* held by a and fresh: b waits, writes nothing */
    fc.t = 1 * SEC;
    assert_int_equal(gs_live_elector_try_acquire_or_renew(b, fc.t, &err), 0);
    assert_int_equal(srv.puts, 0);
    assert_string_equal(gs_live_elector_leader(b), "a");
    assert_false(gs_live_elector_is_leader(b));
    /* a renews at 10 s by the fast path (no GET): acquireTime and transitions kept */
    fc.t = 10 * SEC;
    int gets = srv.gets;
    assert_int_equal(gs_live_elector_try_acquire_or_renew(a, fc.t, &err), 1);
    assert_int_equal(srv.gets, gets);
    assert_int_equal(srv.puts, 1);
    assert_true(srv.renew == WALL0 + 10 * SEC);
    assert_true(srv.acquire == WALL0);
    /* b sees a new record at 12 s: its observation restarts there */
    fc.t = 12 * SEC;
    assert_int_equal(gs_live_elector_try_acquire_or_renew(b, fc.t, &err), 0);
    int64_t at;
    assert_true(gs_live_elector_observed(b, NULL, &at));
    assert_true(at == 12 * SEC);
    /* a stops renewing. 26 s: 14 s since b's observation, still fresh */
    fc.t = 26 * SEC;
    assert_int_equal(gs_live_elector_try_acquire_or_renew(b, fc.t, &err), 0);
    assert_true(gs_live_elector_observed(b, NULL, &at) && at == 12 * SEC);
    /* 27 s: 15 s without a change: b takes over, transitions + 1, acquireTime now */
    fc.t = 27 * SEC;
    assert_int_equal(gs_live_elector_try_acquire_or_renew(b, fc.t, &err), 1);
    assert_string_equal(srv.holder, "b");
    assert_int_equal(srv.transitions, 1);
    assert_true(srv.acquire == WALL0 + 27 * SEC);
    /* a comes back at 28 s: its lease expired by its own observation (10 s + 15 s); the
     * slow path sees b's fresh record: not ours */
    fc.t = 28 * SEC;
    assert_int_equal(gs_live_elector_try_acquire_or_renew(a, fc.t, &err), 0);
    assert_false(gs_live_elector_is_leader(a));
    assert_string_equal(gs_live_elector_leader(a), "b");
    /* b renews; a conflicting writer moves the resourceVersion first: the fast path
     * conflicts, the slow path reads again and renews */
    fc.t = 30 * SEC;
    srv.bump_before_put = 1;
    assert_int_equal(gs_live_elector_try_acquire_or_renew(b, fc.t, &err), 1);
    assert_int_equal(srv.transitions, 1);
    assert_true(srv.acquire == WALL0 + 27 * SEC);
    /* lost race: the resourceVersion moves between b's GET and PUT, twice -> 0, no error */
    fc.t = 50 * SEC; /* b's own lease expired by its observation: no fast path */
    srv.bump_before_put = 1;
    gs_error_clear(&err);
    gs_live_elector_stats st;
    gs_live_elector_stats_get(b, &st);
    uint64_t conflicts = st.conflicts;
    assert_int_equal(gs_live_elector_try_acquire_or_renew(b, fc.t, &err), 0);
    assert_int_equal(err.code, GS_OK);
    gs_live_elector_stats_get(b, &st);
    assert_int_equal(st.conflicts, conflicts + 1);
    assert_int_equal(st.failures, 0);
    /* b releases: holder "", 1 s, transitions kept; a takes over at once, transitions 2 */
    assert_int_equal(gs_live_elector_try_acquire_or_renew(b, fc.t, &err), 1);
    assert_int_equal(gs_live_elector_release(b, &err), 0);
    assert_string_equal(srv.holder, "");
    assert_int_equal(srv.duration, 1);
    assert_int_equal(srv.transitions, 1);
    assert_false(gs_live_elector_is_leader(b));
    assert_int_equal(gs_live_elector_try_acquire_or_renew(a, fc.t, &err), 1);
    assert_string_equal(srv.holder, "a");
    assert_int_equal(srv.transitions, 2);
    /* releasing when not the holder writes nothing */
    int puts = srv.puts;
    assert_int_equal(gs_live_elector_release(b, &err), 0);
    assert_int_equal(srv.puts, puts);
    /* errors other than a conflict are failures with the server's message */
    srv.forbid = true;
    fc.t = 100 * SEC;
    assert_int_equal(gs_live_elector_try_acquire_or_renew(b, fc.t, &err), -1);
    assert_non_null(strstr(err.msg, "cannot get resource \"leases\""));
    gs_live_elector_stats_get(b, &st);
    assert_int_equal(st.failures, 1);
    gs_live_elector_free(a);
    gs_live_elector_free(b);
}

static void test_elector_remote_clock_ignored(void **state)
{
    (void)state;
    fclock fc = {0};
    gs_live_clock clk = {f_now, f_mono, f_sleep, &fc};
    /* a Lease whose renewTime is an hour old by our clock (the holder's clock is behind):
     * still fresh until 15 s of our own observation pass */
    leasesrv srv = {.exists = true, .rv = 5, .holder = "x", .duration = 15, .transitions = 7,
                    .acquire = WALL0 - 3600 * SEC, .renew = WALL0 - 3600 * SEC};
    gs_live_elector *c = candidate("c", &srv, &clk);
    gs_error err;
    assert_int_equal(gs_live_elector_try_acquire_or_renew(c, fc.t, &err), 0);
    fc.t = 14 * SEC;
    assert_int_equal(gs_live_elector_try_acquire_or_renew(c, fc.t, &err), 0);
    fc.t = 15 * SEC;
    assert_int_equal(gs_live_elector_try_acquire_or_renew(c, fc.t, &err), 1);
    assert_int_equal(srv.transitions, 8);
    gs_live_elector_free(c);
}

static void test_elector_validation(void **state)
{
    (void)state;
    gs_error err;
    leasesrv srv = {0};
    gs_live_elector_opts o = {.namespace_ = "gs", .name = "lock", .identity = "a", .send = lease_send, .send_ctx = &srv,
                              .lease_duration_us = 10 * SEC, .renew_deadline_us = 10 * SEC};
    assert_null(gs_live_elector_new(NULL, &o, &err));
    assert_string_equal(err.msg, "leader election: leaseDuration must be greater than renewDeadline");
    o.lease_duration_us = 15 * SEC;
    o.retry_period_us = 9 * SEC;
    assert_null(gs_live_elector_new(NULL, &o, &err));
    assert_string_equal(err.msg, "leader election: renewDeadline must be greater than retryPeriod*JitterFactor");
    o.retry_period_us = 0;
    o.identity = "";
    assert_null(gs_live_elector_new(NULL, &o, &err));
    assert_string_equal(err.msg, "leader election: Lock identity is empty");
    o.identity = "a";
    o.name = "a/b";
    assert_null(gs_live_elector_new(NULL, &o, &err));
}

typedef struct runlog {
    fclock *fc;
    leasesrv *srv;
    char events[256];
    int64_t stop_at;
} runlog;

static void on_started(void *ctx) { strcat(((runlog *)ctx)->events, "started;"); }
static void on_stopped(void *ctx) { strcat(((runlog *)ctx)->events, "stopped;"); }
static void on_leader(void *ctx, const char *id)
{
    runlog *l = ctx;
    strcat(l->events, "leader=");
    strcat(l->events, id);
    strcat(l->events, ";");
}
static bool keep_running(void *ctx)
{
    runlog *l = ctx;
    return l->fc->t < l->stop_at;
}

static void test_elector_run(void **state)
{
    (void)state;
    fclock fc = {0};
    gs_live_clock clk = {f_now, f_mono, f_sleep, &fc};
    /* held by x, never renewed: acquired after 15 s, renewed every 2 s, released at stop */
    leasesrv srv = {.exists = true, .rv = 1, .holder = "x", .duration = 15, .acquire = WALL0, .renew = WALL0};
    gs_live_elector *e = candidate("me", &srv, &clk);
    runlog log = {&fc, &srv, "", 40 * SEC};
    gs_live_elector_callbacks cb = {on_started, on_stopped, on_leader, keep_running, &log};
    assert_int_equal(gs_live_elector_run(e, &cb), 0);
    assert_string_equal(log.events, "leader=x;leader=me;started;leader=;stopped;");
    assert_string_equal(srv.holder, "");
    assert_int_equal(srv.transitions, 1);
    gs_live_elector_stats st;
    gs_live_elector_stats_get(e, &st);
    assert_int_equal(st.acquired, 1);
    assert_int_equal(st.released, 1);
    /* taken at >= 15 s, then a renew every 2 s until 40 s */
    assert_true(st.renewed >= 8 && st.renewed <= 13);
    gs_live_elector_free(e);

    /* renewals failing for the renew deadline lose the lease: run returns 1 */
    fclock fc2 = {0};
    gs_live_clock clk2 = {f_now, f_mono, f_sleep, &fc2};
    leasesrv srv2 = {0};
    gs_live_elector *e2 = candidate("me", &srv2, &clk2);
    runlog log2 = {&fc2, &srv2, "", 1000 * SEC};
    gs_live_elector_callbacks cb2 = {on_started, on_stopped, on_leader, keep_running, &log2};
    srv2.bump_before_put = 1000000; /* every update conflicts from now on */
    assert_int_equal(gs_live_elector_run(e2, &cb2), 1);
    assert_string_equal(log2.events, "leader=me;started;stopped;");
    assert_true(fc2.t >= 10 * SEC && fc2.t < 20 * SEC);
    gs_live_elector_free(e2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_prepare),
        cmocka_unit_test(test_bodies),
        cmocka_unit_test(test_microtime),
        cmocka_unit_test(test_event_body),
        cmocka_unit_test(test_note_truncation),
        cmocka_unit_test(test_recorder_series),
        cmocka_unit_test(test_recorder_finish_sends_count),
        cmocka_unit_test(test_recorder_patch_404_and_failures),
        cmocka_unit_test(test_recorder_lru),
        cmocka_unit_test(test_lease_parse_and_update_body),
        cmocka_unit_test(test_elector_decisions),
        cmocka_unit_test(test_elector_remote_clock_ignored),
        cmocka_unit_test(test_elector_validation),
        cmocka_unit_test(test_elector_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
