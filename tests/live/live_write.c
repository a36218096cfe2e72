/*
 * live_write.c - the write layer (lib/live/write*.c) against the real control plane of the
 * harness (tests/live/controlplane.py exec STATE -- live_write): Events and their series,
 * JSON merge and strategic merge patches, server-side apply with field managers and a
 * conflict, pods/binding, Lease leader election between candidates, delete with
 * preconditions, and RBAC's refusal of a write. Objects are named uniquely (one namespace
 * and one node per run) and removed at the end. Exit 0 pass, 1 fail, 77 outside the
 * harness.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpusched/live_write.h"
#include "util/json_int.h"

static int failures;
static char ns[64], node[64];

static void fail(const char *what, const gs_error *err)
{
    failures++;
    fprintf(stderr, "FAIL: %s%s%s\n", what, err ? ": " : "", err ? err->msg : "");
}

#define CHECK(cond, what)                                                                                              \
    do {                                                                                                               \
        if (cond)                                                                                                      \
            printf("ok: %s\n", what);                                                                                  \
        else                                                                                                           \
            fail(what, NULL);                                                                                          \
    } while (0)

static gs_live_client *client_for(const char *env, gs_live_config **cfg)
{
    gs_live_opts o = {.kubeconfig = getenv(env)};
    gs_error err;
    gs_error_clear(&err);
    *cfg = gs_live_config_load(&o, &err);
    if (!*cfg) {
        fail(env, &err);
        return NULL;
    }
    gs_live_client *c = gs_live_client_new(*cfg, NULL, &err);
    if (!c)
        fail(env, &err);
    return c;
}

/* A parsed answer: the arena holds it. */
typedef struct doc {
    gs_arena a;
    gs_jv root;
    bool ok;
} doc;

static void doc_parse(doc *d, const gs_strbuf *body)
{
    gs_arena_init(&d->a, 0);
    gs_error err;
    d->ok = gs_json_parse("answer", 1, gs_strbuf_cstr(body), body->len, NULL, &d->a, &d->root, &err) == 0;
    if (!d->ok)
        fail("the answer is not JSON", &err);
}

/* "a.b.c" (numbers index arrays) */
static const gs_jv *at(const gs_jv *v, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *k = buf, *next; v && k; k = next) {
        next = strchr(k, '.');
        if (next)
            *next++ = '\0';
        if (v->t == GS_JARR) {
            unsigned long i = strtoul(k, NULL, 10);
            v = i < v->n ? &v->kids[i] : NULL;
        } else {
            v = gs_json_get(v, k);
        }
    }
    return v;
}

static const char *str_at(const gs_jv *v, const char *path)
{
    v = at(v, path);
    return v && v->t == GS_JSTR ? v->s : "";
}

static int do_get(gs_live_client *c, const char *path, gs_live_response *rs, gs_error *err)
{
    gs_live_request rq = {.path = path};
    return gs_live_do(c, &rq, rs, err);
}

static gs_live_response rs_new(void)
{
    gs_live_response rs = {.body = GS_STRBUF_INIT, .retry_after = -1};
    return rs;
}

/* ---------------------------------------------------------------- objects of the run */

static char pod_uid[64], pod2_uid[64], node_uid[64];

static int create_fixtures(gs_live_client *c)
{
    gs_error err;
    gs_live_response rs = rs_new();
    char body[2048];
    snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ns);
    if (gs_live_create(c, "/api/v1/namespaces", body, strlen(body), NULL, &rs, &err)) {
        fail("create namespace", &err);
        return -1;
    }
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
             "\"nvidia.com/gpu.product\":\"NVIDIA-A100-SXM4-80GB\"}},\"status\":{\"capacity\":{\"cpu\":\"64\","
             "\"memory\":\"512Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"},\"allocatable\":{\"cpu\":\"64\","
             "\"memory\":\"512Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"}}}",
             node);
    if (gs_live_create(c, "/api/v1/nodes", body, strlen(body), NULL, &rs, &err)) {
        fail("create node", &err);
        return -1;
    }
    doc d;
    doc_parse(&d, &rs.body);
    snprintf(node_uid, sizeof node_uid, "%s", str_at(&d.root, "metadata.uid"));
    gs_arena_free(&d.a);
    /* pods for no running scheduler: they stay pending until bound here */
    const char *names[] = {"train-0", "train-1"};
    char *uids[] = {pod_uid, pod2_uid};
    for (int i = 0; i < 2; i++) {
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},"
                 "\"spec\":{\"schedulerName\":\"gs-nobody\",\"containers\":[{\"name\":\"c\",\"image\":\"busybox\","
                 "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}],\"tolerations\":["
                 "{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
                 "\"tolerationSeconds\":300},{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\","
                 "\"effect\":\"NoExecute\",\"tolerationSeconds\":300}]}}",
                 names[i], ns);
        char path[128];
        snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
        if (gs_live_create(c, path, body, strlen(body), NULL, &rs, &err)) {
            fail("create pod", &err);
            return -1;
        }
        doc_parse(&d, &rs.body);
        snprintf(uids[i], 64, "%s", str_at(&d.root, "metadata.uid"));
        gs_arena_free(&d.a);
    }
    gs_live_response_free(&rs);
    printf("ok: namespace %s, node %s, pods train-0 and train-1 created\n", ns, node);
    return 0;
}

/* ---------------------------------------------------------------- events */

static void check_events(gs_live_client *c)
{
    gs_live_recorder_opts o = {.reporting_controller = "gpusched.io/live-test", .reporting_instance = "live-write-1"};
    gs_error err;
    gs_live_recorder *r = gs_live_recorder_new(c, &o, &err);
    if (!r) {
        fail("recorder", &err);
        return;
    }
    gs_live_objref reg = {"v1", "Pod", ns, "train-0", pod_uid, NULL, NULL};
    gs_live_objref rel = {"v1", "Node", NULL, node, node_uid, NULL, NULL};
    gs_live_event ev = {&reg, &rel, GS_LIVE_EVENT_WARNING, "FailedScheduling", "Scheduling",
                        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. \"quoted\" \xe2\x82\xac"};
    if (gs_live_recorder_event(r, &ev, &err) || gs_live_recorder_event(r, &ev, &err))
        fail("record an event twice", &err);
    char path[256];
    snprintf(path, sizeof path, "/apis/events.k8s.io/v1/namespaces/%s/events", ns);
    gs_live_response rs = rs_new();
    if (do_get(c, path, &rs, &err)) {
        fail("list events", &err);
    } else {
        doc d;
        doc_parse(&d, &rs.body);
        const gs_jv *items = at(&d.root, "items");
        CHECK(items && items->n == 1, "two identical occurrences are one Event");
        const gs_jv *e0 = at(&d.root, "items.0");
        const gs_jv *count = at(e0, "series.count");
        CHECK(count && count->t == GS_JNUM && !strcmp(count->s, "2"), "its series.count is 2 (read back)");
        CHECK(!strcmp(str_at(e0, "note"), ev.note), "the note reads back byte for byte");
        CHECK(!strcmp(str_at(e0, "regarding.uid"), pod_uid) && !strcmp(str_at(e0, "related.name"), node),
              "regarding and related read back");
        CHECK(!strcmp(str_at(e0, "reportingController"), "gpusched.io/live-test") &&
                  !strcmp(str_at(e0, "type"), "Warning"),
              "reportingController and type read back");
        /* the deprecated core/v1 view of the same Event */
        printf("ok: event %s, eventTime %s, series.lastObservedTime %s\n", str_at(e0, "metadata.name"),
               str_at(e0, "eventTime"), str_at(e0, "series.lastObservedTime"));
        gs_arena_free(&d.a);
    }
    /* a third occurrence is counted locally; flush sends it */
    if (gs_live_recorder_event(r, &ev, &err) || gs_live_recorder_flush(r, &err))
        fail("third occurrence and flush", &err);
    if (!do_get(c, path, &rs, &err)) {
        doc d;
        doc_parse(&d, &rs.body);
        const gs_jv *count = at(&d.root, "items.0.series.count");
        CHECK(at(&d.root, "items")->n == 1 && count && !strcmp(count->s, "3"), "flush: series.count 3");
        gs_arena_free(&d.a);
    }
    /* a long note is cut to the API's 1024 bytes and accepted */
    char longnote[3000];
    memset(longnote, 'n', sizeof longnote - 1);
    longnote[sizeof longnote - 1] = '\0';
    gs_live_event big = {&reg, NULL, GS_LIVE_EVENT_NORMAL, "LongNote", "Testing", longnote};
    CHECK(gs_live_recorder_event(r, &big, &err) == 0, "a 3000-byte note is accepted (cut to 1024)");
    gs_live_recorder_stats st;
    gs_live_recorder_stats_get(r, &st);
    CHECK(st.created == 2 && st.patched == 2 && st.aggregated == 1 && st.failed == 0, "recorder counts");
    gs_live_recorder_free(r);
    gs_live_response_free(&rs);
}

/* ---------------------------------------------------------------- patches and apply */

static void check_patches(gs_live_client *c)
{
    gs_error err;
    gs_live_response rs = rs_new();
    char path[256];
    snprintf(path, sizeof path, "/api/v1/nodes/%s", node);
    const char *mp = "{\"metadata\":{\"labels\":{\"gpusched.io/pool\":\"training\",\"nvidia.com/gpu.product\":null}}}";
    if (gs_live_patch(c, path, GS_LIVE_PATCH_MERGE, mp, strlen(mp), NULL, &rs, &err)) {
        fail("merge patch of node labels", &err);
    } else {
        doc d;
        doc_parse(&d, &rs.body);
        const gs_jv *labels = at(&d.root, "metadata.labels");
        const gs_jv *pool = gs_json_get(labels, "gpusched.io/pool"), *prod = gs_json_get(labels, "nvidia.com/gpu.product");
        CHECK(pool && !strcmp(pool->s, "training") && !prod, "merge patch: label added, null removed one");
        gs_arena_free(&d.a);
    }
    /* JSON patch (RFC 6902), '/' escaped as ~1 */
    const char *jp = "[{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":{}},"
                     "{\"op\":\"add\",\"path\":\"/metadata/annotations/gpusched.io~1note\",\"value\":\"json-patch\"}]";
    if (gs_live_patch(c, path, GS_LIVE_PATCH_JSON, jp, strlen(jp), NULL, &rs, &err)) {
        fail("json patch", &err);
    } else {
        doc d;
        doc_parse(&d, &rs.body);
        const gs_jv *a = gs_json_get(at(&d.root, "metadata.annotations"), "gpusched.io/note");
        CHECK(a && !strcmp(a->s, "json-patch"), "json patch: annotation added");
        gs_arena_free(&d.a);
    }
    /* strategic merge patch: a toleration added to the pod (tolerations are an atomic list:
     * the patch carries the whole list) and a container's image changed by its name key */
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/train-0", ns);
    const char *smp =
        "{\"spec\":{\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
        "\"effect\":\"NoExecute\",\"tolerationSeconds\":300},{\"key\":\"node.kubernetes.io/unreachable\","
        "\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300},{\"key\":\"nvidia.com/gpu\","
        "\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1.37\"}]}}";
    if (gs_live_patch(c, path, GS_LIVE_PATCH_STRATEGIC, smp, strlen(smp), NULL, &rs, &err)) {
        fail("strategic merge patch of a pod", &err);
    } else {
        doc d;
        doc_parse(&d, &rs.body);
        const gs_jv *tol = at(&d.root, "spec.tolerations");
        CHECK(tol && tol->n == 3 && !strcmp(str_at(tol, "2.key"), "nvidia.com/gpu"),
              "strategic merge patch: toleration nvidia.com/gpu added");
        CHECK(!strcmp(str_at(&d.root, "spec.containers.0.image"), "busybox:1.37") &&
                  at(&d.root, "spec.containers.0.resources.limits"),
              "strategic merge patch: container merged by name (image changed, resources kept)");
        gs_arena_free(&d.a);
    }
    gs_live_response_free(&rs);
}

static void check_apply(gs_live_client *c)
{
    gs_error err;
    gs_live_response rs = rs_new();
    char path[256], body[512];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/configmaps/gs-applied", ns);
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"gs-applied\",\"namespace\":\"%s\"},"
             "\"data\":{\"owner\":\"a\"}}",
             ns);
    gs_live_write_opts a = {.field_manager = "gs-manager-a"};
    if (gs_live_apply(c, path, body, strlen(body), &a, &rs, &err))
        fail("apply by manager a", &err);
    else
        printf("ok: server-side apply by gs-manager-a created the ConfigMap\n");
    /* dry run: validated, not persisted */
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"gs-applied\",\"namespace\":\"%s\"},"
             "\"data\":{\"owner\":\"a\",\"dry\":\"run\"}}",
             ns);
    a.dry_run = true;
    if (gs_live_apply(c, path, body, strlen(body), &a, &rs, &err))
        fail("dry-run apply", &err);
    a.dry_run = false;
    /* an unknown field in an apply: refused whatever fieldValidation says, as a 500 (the
     * server fails to build the typed patch) */
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"gs-applied\",\"namespace\":\"%s\"},"
             "\"data\":{\"owner\":\"a\"},\"bogus\":1}",
             ns);
    if (gs_live_apply(c, path, body, strlen(body), &a, &rs, &err) == 0)
        fail("apply accepted an unknown field", NULL);
    else
        CHECK(rs.http == 500 && strstr(err.msg, ".bogus: field not declared in schema"),
              "apply with an unknown field: the server's 500 \"field not declared in schema\"");
    printf("    server: HTTP %d %s\n", rs.http, err.msg);
    /* fieldValidation on a merge patch: Strict refuses an unknown field (422), Ignore drops it */
    const char *bogus = "{\"bogus\":1,\"data\":{\"merged\":\"yes\"}}";
    gs_live_write_opts strict = {.validation = GS_LIVE_VALIDATION_STRICT};
    if (gs_live_patch(c, path, GS_LIVE_PATCH_MERGE, bogus, strlen(bogus), &strict, &rs, &err) == 0)
        fail("fieldValidation=Strict accepted an unknown field", NULL);
    else
        CHECK(rs.http == 422 && !strcmp(rs.status.reason, "Invalid") &&
                  strstr(gs_strbuf_cstr(&rs.body), "strict decoding error: unknown field \\\"bogus\\\""),
              "fieldValidation=Strict: unknown field refused (422 Invalid, strict decoding error)");
    printf("    server: HTTP %d %.120s...\n", rs.http, err.msg);
    strict.validation = GS_LIVE_VALIDATION_IGNORE;
    CHECK(gs_live_patch(c, path, GS_LIVE_PATCH_MERGE, bogus, strlen(bogus), &strict, &rs, &err) == 0,
          "fieldValidation=Ignore: the same patch is accepted");
    /* a second manager claims the field: 409 naming the first */
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"gs-applied\",\"namespace\":\"%s\"},"
             "\"data\":{\"owner\":\"b\"}}",
             ns);
    gs_live_write_opts b = {.field_manager = "gs-manager-b"};
    if (gs_live_apply(c, path, body, strlen(body), &b, &rs, &err) == 0) {
        fail("a conflicting apply was accepted", NULL);
    } else {
        CHECK(rs.http == 409 && !strcmp(rs.status.reason, "Conflict") && strstr(err.msg, "conflict with \"gs-manager-a\""),
              "conflicting apply: 409 Conflict naming gs-manager-a");
        printf("    server: %s\n", err.msg);
    }
    b.force = true;
    if (gs_live_apply(c, path, body, strlen(body), &b, &rs, &err)) {
        fail("forced apply", &err);
    } else {
        doc d;
        doc_parse(&d, &rs.body);
        const gs_jv *mf = at(&d.root, "metadata.managedFields");
        bool b_owns = false;
        for (uint32_t i = 0; mf && i < mf->n; i++)
            if (!strcmp(str_at(&mf->kids[i], "manager"), "gs-manager-b") &&
                strstr(str_at(&mf->kids[i], "operation"), "Apply"))
                b_owns = true;
        CHECK(!strcmp(str_at(&d.root, "data.owner"), "b") && !at(&d.root, "data.dry") && b_owns,
              "forced apply: gs-manager-b owns data.owner = b (the dry run left nothing)");
        gs_arena_free(&d.a);
    }
    /* the client refuses an apply without a field manager before sending */
    b.field_manager = NULL;
    b.force = false;
    CHECK(gs_live_apply(c, path, body, strlen(body), &b, &rs, &err) == -1 && strstr(err.msg, "fieldManager is required"),
          "apply without a field manager refused by the client");
    gs_live_response_free(&rs);
}

/* ---------------------------------------------------------------- binding */

static void check_binding(gs_live_client *c)
{
    gs_error err;
    gs_live_response rs = rs_new();
    if (gs_live_bind(c, ns, "train-0", pod_uid, node, NULL, NULL, &rs, &err)) {
        fail("bind train-0", &err);
    } else {
        char path[256];
        snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/train-0", ns);
        if (do_get(c, path, &rs, &err)) {
            fail("get train-0", &err);
        } else {
            doc d;
            doc_parse(&d, &rs.body);
            CHECK(!strcmp(str_at(&d.root, "spec.nodeName"), node), "bound: spec.nodeName reads back");
            gs_arena_free(&d.a);
        }
    }
    if (gs_live_bind(c, ns, "train-0", pod_uid, node, NULL, NULL, &rs, &err) == 0) {
        fail("a second bind was accepted", NULL);
    } else {
        CHECK(rs.http == 409 && strstr(err.msg, "is already assigned to node"), "second bind: the server's 409");
        printf("    server: %s (reason %s)\n", err.msg, rs.status.reason);
    }
    /* a uid that is not the pod's: the precondition fails */
    if (gs_live_bind(c, ns, "train-1", "00000000-0000-0000-0000-000000000000", node, NULL, NULL, &rs, &err) == 0) {
        fail("a bind with a wrong uid was accepted", NULL);
    } else {
        CHECK(rs.http == 409 && strstr(err.msg, "Precondition failed"), "bind with a stale uid: precondition failed");
        printf("    server: %s\n", err.msg);
    }
    gs_live_response_free(&rs);
}

/* ---------------------------------------------------------------- leases */

static int64_t mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static gs_live_elector *cand(gs_live_client *c, const char *id, gs_live_send_fn send, void *ctx)
{
    gs_live_elector_opts o = {.namespace_ = ns, .name = "gs-leader", .identity = id, .lease_duration_us = 2000000,
                              .renew_deadline_us = 1500000, .retry_period_us = 500000, .send = send, .send_ctx = ctx,
                              .release_on_cancel = true};
    gs_error err;
    gs_live_elector *e = gs_live_elector_new(c, &o, &err);
    if (!e)
        fail("elector", &err);
    return e;
}

static void lease_state(gs_live_client *c, gs_live_lease *l, gs_arena *a)
{
    char path[256];
    snprintf(path, sizeof path, "/apis/coordination.k8s.io/v1/namespaces/%s/leases/gs-leader", ns);
    gs_live_response rs = rs_new();
    gs_error err;
    memset(l, 0, sizeof *l);
    if (do_get(c, path, &rs, &err) || gs_live_lease_parse(rs.body.buf, rs.body.len, a, l, &err))
        fail("read the lease", &err);
    gs_live_response_free(&rs);
}

/* C's requests go through this: before C's PUT, B renews (a real race, refereed by the
 * API server's resourceVersion check). */
typedef struct racer {
    gs_live_client *c;
    gs_live_elector *b;
    int b_result;
    bool done;
} racer;

static int racing_send(void *ctx, const gs_live_request *rq, gs_live_response *rs, gs_error *err)
{
    racer *r = ctx;
    if (rq->method && !strcmp(rq->method, "PUT") && !r->done) {
        r->done = true;
        gs_error e2;
        r->b_result = gs_live_elector_try_acquire_or_renew(r->b, mono_now(), &e2);
    }
    return gs_live_do(r->c, rq, rs, err);
}

typedef struct runctx {
    gs_live_elector *e;
    uint64_t renewed0;
    int rounds;
} runctx;
static bool stop_after_renewals(void *ctx)
{
    runctx *r = ctx;
    gs_live_elector_stats st;
    gs_live_elector_stats_get(r->e, &st);
    return st.renewed < r->renewed0 + 2 && ++r->rounds < 1000;
}

static void check_leases(gs_live_client *c)
{
    gs_error err;
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_live_lease l;
    gs_live_elector *A = cand(c, "candidate-a", NULL, NULL), *B = cand(c, "candidate-b", NULL, NULL);
    racer rc = {c, B, 0, false};
    gs_live_elector *C = cand(c, "candidate-c", racing_send, &rc);
    if (!A || !B || !C)
        return;
    CHECK(gs_live_elector_try_acquire_or_renew(A, mono_now(), &err) == 1, "a acquires (creates the Lease)");
    CHECK(gs_live_elector_try_acquire_or_renew(B, mono_now(), &err) == 0, "b is refused while the lease is fresh");
    usleep(1000000);
    CHECK(gs_live_elector_try_acquire_or_renew(A, mono_now(), &err) == 1, "a renews within its deadline");
    CHECK(gs_live_elector_try_acquire_or_renew(B, mono_now(), &err) == 0, "b sees the renewal: still refused");
    lease_state(c, &l, &a);
    CHECK(!strcmp(l.holder, "candidate-a") && l.transitions == 0 && l.duration_s == 2, "lease: held by a, 0 transitions");
    usleep(2300000); /* a stops renewing */
    CHECK(gs_live_elector_try_acquire_or_renew(B, mono_now(), &err) == 1, "b takes over the expired lease");
    lease_state(c, &l, &a);
    CHECK(!strcmp(l.holder, "candidate-b") && l.transitions == 1, "lease: held by b, 1 transition");
    CHECK(gs_live_elector_try_acquire_or_renew(A, mono_now(), &err) == 0 && !gs_live_elector_is_leader(A),
          "a, back, finds b's lease fresh: not the leader");
    /* a race: c and b update the same resourceVersion; the server lets one win */
    CHECK(gs_live_elector_try_acquire_or_renew(C, mono_now(), &err) == 0, "c observes b's lease");
    usleep(2300000);
    gs_error_clear(&err);
    int cr = gs_live_elector_try_acquire_or_renew(C, mono_now(), &err);
    gs_live_elector_stats st;
    gs_live_elector_stats_get(C, &st);
    CHECK(rc.done && rc.b_result == 1 && cr == 0 && st.conflicts == 1 && st.failures == 0 && err.code == GS_OK,
          "race: b renews first, c's update is a 409 (lost, no error)");
    lease_state(c, &l, &a);
    CHECK(!strcmp(l.holder, "candidate-b") && l.transitions == 1, "lease: still b's, still 1 transition");
    /* b releases; a takes it at once */
    CHECK(gs_live_elector_release(B, &err) == 0, "b releases");
    lease_state(c, &l, &a);
    CHECK(!strcmp(l.holder, "") && l.duration_s == 1 && l.transitions == 1, "released: holder \"\", 1 s");
    CHECK(gs_live_elector_try_acquire_or_renew(A, mono_now(), &err) == 1, "a takes the released lease at once");
    lease_state(c, &l, &a);
    CHECK(!strcmp(l.holder, "candidate-a") && l.transitions == 2, "lease: a's, 2 transitions");
    /* the loop: b waits for a's lease to expire, leads, renews twice, releases */
    gs_live_elector_stats_get(B, &st);
    runctx rx = {B, st.renewed, 0};
    gs_live_elector_callbacks cb = {.keep_running = stop_after_renewals, .ctx = &rx};
    int64_t t0 = mono_now();
    int run = gs_live_elector_run(B, &cb);
    gs_live_elector_stats_get(B, &st);
    lease_state(c, &l, &a);
    CHECK(run == 0 && st.renewed >= rx.renewed0 + 2 && !strcmp(l.holder, "") && l.transitions == 3 && mono_now() - t0 >= 1500000,
          "run loop: b acquired after expiry, renewed, released on stop");
    gs_live_elector_free(A);
    gs_live_elector_free(B);
    gs_live_elector_free(C);
    gs_arena_free(&a);
}

/* ---------------------------------------------------------------- RBAC */

static void check_rbac(void)
{
    gs_live_config *cfg;
    gs_live_client *c = client_for("GS_KUBECONFIG_RBAC", &cfg);
    if (!c) {
        gs_live_config_free(cfg);
        return;
    }
    gs_error err;
    gs_live_response rs = rs_new();
    char path[256];
    snprintf(path, sizeof path, "/api/v1/nodes/%s", node);
    const char *mp = "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}";
    if (gs_live_patch(c, path, GS_LIVE_PATCH_MERGE, mp, strlen(mp), NULL, &rs, &err) == 0) {
        fail("the RBAC user patched a node", NULL);
    } else {
        CHECK(rs.http == 403 && strstr(err.msg, "is forbidden: User \"gs-rbac-user\" cannot patch resource \"nodes\""),
              "RBAC: a patch by the restricted user is forbidden");
        printf("    server: %s\n", err.msg);
    }
    gs_live_recorder_opts o = {.reporting_controller = "gpusched.io/live-test", .reporting_instance = "rbac"};
    gs_live_recorder *r = gs_live_recorder_new(c, &o, &err);
    gs_live_objref reg = {"v1", "Node", NULL, node, NULL, NULL, NULL};
    gs_live_event ev = {&reg, NULL, GS_LIVE_EVENT_NORMAL, "Denied", "Testing", NULL};
    if (r && gs_live_recorder_event(r, &ev, &err) == 0) {
        fail("the RBAC user created an event", NULL);
    } else if (r) {
        gs_live_recorder_stats st;
        gs_live_recorder_stats_get(r, &st);
        CHECK(strstr(err.msg, "forbidden") && strstr(err.msg, "cannot create resource \"events\"") && st.failed == 1,
              "RBAC: an event by the restricted user is forbidden and counted");
    }
    gs_live_recorder_free(r);
    gs_live_response_free(&rs);
    gs_live_client_free(c);
    gs_live_config_free(cfg);
}

static void cleanup(gs_live_client *c)
{
    gs_error err;
    gs_live_response rs = rs_new();
    char path[256];
    snprintf(path, sizeof path, "/api/v1/nodes/%s", node);
    gs_live_delete_opts wrong = {.uid = "00000000-0000-0000-0000-000000000000"};
    if (gs_live_delete(c, path, &wrong, &rs, &err) == 0)
        fail("delete with a wrong uid precondition succeeded", NULL);
    else
        CHECK(rs.http == 409 && strstr(err.msg, "the UID in the precondition"), "delete with a stale uid: 409 precondition");
    printf("    server: HTTP %d %s\n", rs.http, err.msg);
    gs_live_delete_opts d = {.uid = node_uid, .propagation = "Background"};
    if (gs_live_delete(c, path, &d, &rs, &err))
        fail("delete node", &err);
    snprintf(path, sizeof path, "/api/v1/namespaces/%s", ns);
    if (gs_live_delete(c, path, NULL, &rs, &err))
        fail("delete namespace", &err);
    gs_live_response_free(&rs);
}

int main(void)
{
    if (!getenv("GS_KUBECONFIG_ADMIN")) {
        printf("SKIP: not run inside the control-plane harness (tests/live/controlplane.py exec)\n");
        return 77;
    }
    unsigned tag = (unsigned)getpid() ^ (unsigned)time(NULL);
    snprintf(ns, sizeof ns, "gs-write-%x", tag);
    snprintf(node, sizeof node, "gs-write-node-%x", tag);
    gs_live_config *cfg;
    gs_live_client *c = client_for("GS_KUBECONFIG_ADMIN", &cfg);
    if (c && create_fixtures(c) == 0) {
        check_events(c);
        check_patches(c);
        check_apply(c);
        check_binding(c);
        check_leases(c);
        check_rbac();
        cleanup(c);
    }
    gs_live_client_free(c);
    gs_live_config_free(cfg);
    printf("%s\n", failures ? "live write: FAILED" : "live write: all checks passed");
    return failures ? 1 : 0;
}
