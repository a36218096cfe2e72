/* test_serve_admission.c - the AdmissionReview v1 request decoder (serve.h): fields taken
 * from the request (k8s-semantics section 9), the object sliced out of the body with the
 * namespace / apiVersion / kind spliced in, and every way a body can be refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/serve.h"

/* Decode s; on success the fields live in *arena (freed by the caller). */
static int decode(const char *s, gs_arena *arena, gs_admission *out, gs_error *err)
{
    gs_arena_init(arena, 0);
    gs_error_clear(err);
    return gs_admission_decode(s, strlen(s), arena, out, err);
}

static void expect_fail(const char *s, gs_code code, const char *needle)
{
    gs_arena a;
    gs_admission rq;
    gs_error err;
    int rc = decode(s, &a, &rq, &err);
    if (rc == 0 || err.code != code || (needle && !strstr(err.msg, needle)))
        print_error("input %s\n  rc %d code %d msg %s\n", s, rc, err.code, err.msg);
    assert_int_equal(rc, -1);
    assert_int_equal(err.code, code);
    if (needle)
        assert_non_null(strstr(err.msg, needle));
    assert_null(rq.uid); /* nothing half-decoded is left behind */
    gs_arena_free(&a);
}

#define REVIEW_HEAD "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","

static void test_full_request(void **state)
{
    (void)state;
    const char *body =
        REVIEW_HEAD "\"request\":{\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\","
        "\"kind\":{\"group\":\"apps\",\"version\":\"v1\",\"kind\":\"Deployment\"},"
        "\"resource\":{\"group\":\"apps\",\"version\":\"v1\",\"resource\":\"deployments\"},"
        "\"name\":\"train\",\"namespace\":\"team-a\",\"operation\":\"UPDATE\","
        "\"userInfo\":{\"username\":\"alice@example.com\",\"groups\":[\"system:authenticated\"],"
        "\"extra\":{\"k\":[\"v\"]}},"
        "\"object\":{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"train\","
        "\"namespace\":\"team-a\"},\"spec\":{\"replicas\":1}},"
        "\"oldObject\":{\"kind\":\"Deployment\"},\"dryRun\":true,\"options\":null}}";
    gs_arena a;
    gs_admission rq;
    gs_error err;
    assert_int_equal(decode(body, &a, &rq, &err), 0);
    assert_string_equal(rq.api_version, "admission.k8s.io/v1");
    assert_string_equal(rq.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
    assert_string_equal(rq.group, "apps");
    assert_string_equal(rq.version, "v1");
    assert_string_equal(rq.kind, "Deployment");
    assert_string_equal(rq.operation, "UPDATE");
    assert_string_equal(rq.username, "alice@example.com");
    assert_string_equal(rq.namespace_, "team-a");
    assert_string_equal(rq.name, "train");
    assert_string_equal(rq.sub_resource, "");
    assert_true(rq.dry_run);
    /* the object already names everything: its bytes are passed on unchanged */
    const char *obj = strstr(body, "\"object\":") + strlen("\"object\":");
    size_t objlen = (size_t)(strstr(obj, ",\"oldObject\"") - obj);
    assert_int_equal(rq.object_len, objlen);
    assert_memory_equal(rq.object, obj, objlen);
    assert_int_equal(rq.object[rq.object_len], '\0');
    assert_int_equal(rq.tolerations, GS_TOLS_ABSENT);
    gs_arena_free(&a);
}

/* The API server sends CREATE objects without metadata.namespace; the reader would put
 * them in "default". The decoder adds request.namespace (and apiVersion/kind when the
 * object lacks them) so rules and messages see the real namespace. */
static void test_splice_namespace_and_kind(void **state)
{
    (void)state;
    struct {
        const char *object;
        const char *expect;
    } cases[] = {
        {"{\"metadata\":{\"name\":\"p\"},\"spec\":{}}",
         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"team-a\",\"name\":\"p\"},\"spec\":{}}"},
        {"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{}}",
         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"team-a\"}}"},
        {"{\"kind\":\"Pod\",\"spec\":{}}",
         "{\"apiVersion\":\"v1\",\"metadata\":{\"namespace\":\"team-a\"},\"kind\":\"Pod\",\"spec\":{}}"},
        {"{}", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"team-a\"}}"},
        {"{ \"apiVersion\" : \"v1\" , \"kind\":\"Pod\", \"metadata\" : { \"namespace\":\"other\" } }",
         "{ \"apiVersion\" : \"v1\" , \"kind\":\"Pod\", \"metadata\" : { \"namespace\":\"other\" } }"},
        /* metadata that is not a mapping is left alone (the reader reports it) */
        {"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":null}",
         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":null}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char body[1024];
        snprintf(body, sizeof body,
                 REVIEW_HEAD "\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\","
                             "\"kind\":\"Pod\"},\"namespace\":\"team-a\",\"operation\":\"CREATE\","
                             "\"object\":%s}}",
                 cases[i].object);
        gs_arena a;
        gs_admission rq;
        gs_error err;
        assert_int_equal(decode(body, &a, &rq, &err), 0);
        assert_non_null(rq.object);
        if (strcmp(rq.object, cases[i].expect) != 0)
            print_error("case %zu: got %s\n", i, rq.object);
        assert_string_equal(rq.object, cases[i].expect);
        assert_int_equal(rq.object_len, strlen(cases[i].expect));
        gs_arena_free(&a);
    }
}

/* A namespace with characters JSON must escape is escaped where it is spliced in. */
static void test_splice_escapes(void **state)
{
    (void)state;
    const char *body = REVIEW_HEAD "\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"x.io\",\"version\":\"v2\","
                                   "\"kind\":\"K\\\"q\"},\"namespace\":\"a\\\\b\",\"object\":{\"metadata\":{}}}}";
    gs_arena a;
    gs_admission rq;
    gs_error err;
    assert_int_equal(decode(body, &a, &rq, &err), 0);
    assert_string_equal(rq.kind, "K\"q");
    assert_string_equal(rq.namespace_, "a\\b");
    assert_string_equal(rq.object,
                        "{\"apiVersion\":\"x.io/v2\",\"kind\":\"K\\\"q\",\"metadata\":{\"namespace\":\"a\\\\b\"}}");
    gs_arena_free(&a);
}

static void test_tolerations_shape(void **state)
{
    (void)state;
    struct {
        const char *spec;
        gs_tolerations_shape shape;
    } cases[] = {
        {"{}", GS_TOLS_ABSENT},
        {"{\"tolerations\":null}", GS_TOLS_NULL},
        {"{\"tolerations\":[]}", GS_TOLS_ARRAY},
        {"{\"tolerations\":[{\"key\":\"a\",\"operator\":\"Exists\"}],\"containers\":[]}", GS_TOLS_ARRAY},
        {"{\"tolerations\":\"x\"}", GS_TOLS_OTHER},
        {"{\"tolerations\":{}}", GS_TOLS_OTHER},
        /* a "tolerations" member elsewhere does not count */
        {"{\"template\":{\"spec\":{\"tolerations\":[]}}}", GS_TOLS_ABSENT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char body[512];
        snprintf(body, sizeof body, REVIEW_HEAD "\"request\":{\"uid\":\"u\",\"object\":{\"spec\":%s}}}",
                 cases[i].spec);
        gs_arena a;
        gs_admission rq;
        gs_error err;
        assert_int_equal(decode(body, &a, &rq, &err), 0);
        assert_int_equal(rq.tolerations, cases[i].shape);
        gs_arena_free(&a);
    }
}

static void test_delete_without_object(void **state)
{
    (void)state;
    const char *bodies[] = {
        REVIEW_HEAD "\"request\":{\"uid\":\"u\",\"operation\":\"DELETE\",\"object\":null,\"oldObject\":{}}}",
        REVIEW_HEAD "\"request\":{\"uid\":\"u\",\"operation\":\"DELETE\"}}",
    };
    for (size_t i = 0; i < 2; i++) {
        gs_arena a;
        gs_admission rq;
        gs_error err;
        assert_int_equal(decode(bodies[i], &a, &rq, &err), 0);
        assert_null(rq.object);
        assert_int_equal(rq.object_len, 0);
        assert_string_equal(rq.operation, "DELETE");
        assert_string_equal(rq.kind, ""); /* absent fields are "", never NULL */
        assert_string_equal(rq.username, "");
        gs_arena_free(&a);
    }
}

static void test_not_json(void **state)
{
    (void)state;
    expect_fail("", GS_ERR_PARSE, "empty body");
    expect_fail("   \n", GS_ERR_PARSE, "empty body");
    expect_fail("{\"apiVersion\":", GS_ERR_PARSE, "malformed JSON");
    expect_fail("{\"a\":1,}", GS_ERR_PARSE, "malformed JSON");
    expect_fail("apiVersion: admission.k8s.io/v1\nkind: AdmissionReview\n", GS_ERR_PARSE, "'{'");
    expect_fail("[1,2]", GS_ERR_PARSE, "'{'");
    expect_fail("{\"a\":1} {\"b\":2}", GS_ERR_PARSE, "malformed JSON");
    expect_fail("{\"a\": tru}", GS_ERR_PARSE, "malformed JSON");
    expect_fail("{\"a\":\"\xC3\x28\"}", GS_ERR_PARSE, "UTF-8");
    expect_fail("{\"a\":\"\xED\xA0\x80\"}", GS_ERR_PARSE, "UTF-8"); /* encoded surrogate */
    expect_fail(REVIEW_HEAD "\"request\":{\"uid\":\"\\ud800\"}}", GS_ERR_PARSE, NULL); /* lone surrogate */
    /* position of the error */
    gs_arena a;
    gs_admission rq;
    gs_error err;
    assert_int_equal(decode("{\n  \"a\": \xff}", &a, &rq, &err), -1);
    assert_int_equal(err.line, 2);
    assert_int_equal(err.col, 8);
    gs_arena_free(&a);
}

static void test_not_an_admission_review(void **state)
{
    (void)state;
    expect_fail("{}", GS_ERR_INVALID, "apiVersion and kind are required");
    expect_fail("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{}}", GS_ERR_INVALID,
                "wrong kind \"Pod\"");
    expect_fail("{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}}",
                GS_ERR_INVALID, "admissionReviewVersions");
    expect_fail(REVIEW_HEAD "\"response\":{\"uid\":\"u\"}}", GS_ERR_INVALID, "without a request");
    expect_fail(REVIEW_HEAD "\"request\":null}", GS_ERR_INVALID, "without a request");
    expect_fail(REVIEW_HEAD "\"request\":[]}", GS_ERR_INVALID, "request must be an object");
    expect_fail(REVIEW_HEAD "\"request\":{}}", GS_ERR_INVALID, "request.uid is missing");
    expect_fail(REVIEW_HEAD "\"request\":{\"uid\":\"\"}}", GS_ERR_INVALID, "request.uid is missing");
    expect_fail(REVIEW_HEAD "\"request\":{\"uid\":42}}", GS_ERR_INVALID, "request.uid must be a string");
    expect_fail(REVIEW_HEAD "\"request\":{\"uid\":{\"a\":1}}}", GS_ERR_INVALID, "request.uid must be a string");
    expect_fail(REVIEW_HEAD "\"request\":{\"uid\":\"a\",\"uid\":\"b\"}}", GS_ERR_INVALID, "given twice");
    expect_fail("{\"kind\":\"AdmissionReview\",\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\"}",
                GS_ERR_INVALID, "given twice");
    expect_fail(REVIEW_HEAD "\"request\":{\"uid\":\"u\",\"dryRun\":\"yes\"}}", GS_ERR_INVALID,
                "dryRun must be true or false");
    expect_fail(REVIEW_HEAD "\"request\":{\"uid\":\"u\",\"object\":[1]}}", GS_ERR_INVALID,
                "request.object must be an object");
    expect_fail(REVIEW_HEAD "\"request\":{\"uid\":\"u\",\"object\":\"x\"}}", GS_ERR_INVALID,
                "request.object must be an object");
    expect_fail(REVIEW_HEAD "\"request\":{\"uid\":\"a\\u0000b\"}}", GS_ERR_INVALID, "NUL");
    expect_fail(REVIEW_HEAD "\"request\":{\"uid\":\"u\",\"userInfo\":{\"username\":7}}}", GS_ERR_INVALID,
                "request.userInfo.username must be a string");
}

/* Unknown members anywhere, deep nesting in skipped values, nulls for optional strings. */
static void test_tolerant_of_extra_members(void **state)
{
    (void)state;
    char body[8192];
    int n = snprintf(body, sizeof body, REVIEW_HEAD "\"extra\":");
    for (int i = 0; i < 40; i++)
        n += snprintf(body + n, sizeof body - (size_t)n, "[{\"x\":");
    n += snprintf(body + n, sizeof body - (size_t)n, "1");
    for (int i = 0; i < 40; i++)
        n += snprintf(body + n, sizeof body - (size_t)n, "}]");
    snprintf(body + n, sizeof body - (size_t)n,
             ",\"request\":{\"uid\":\"u\",\"name\":null,\"subResource\":\"status\",\"future\":{\"a\":[1,{}]}}}");
    gs_arena a;
    gs_admission rq;
    gs_error err;
    assert_int_equal(decode(body, &a, &rq, &err), 0);
    assert_string_equal(rq.uid, "u");
    assert_string_equal(rq.name, "");
    assert_string_equal(rq.sub_resource, "status");
    gs_arena_free(&a);
}

/* Very deep nesting (in a member nobody reads) neither crashes nor recurses: libfyaml's
 * event parser keeps its own stack and we only count depth. */
static void test_deep_nesting(void **state)
{
    (void)state;
    size_t depth = 100000;
    char *body = malloc(depth * 2 + 64);
    assert_non_null(body);
    size_t n = 0;
    memcpy(body, "{\"a\":", 5);
    n = 5;
    for (size_t i = 0; i < depth; i++)
        body[n++] = '[';
    for (size_t i = 0; i < depth; i++)
        body[n++] = ']';
    body[n++] = '}';
    gs_arena a;
    gs_admission rq;
    gs_error err;
    gs_arena_init(&a, 0);
    int rc = gs_admission_decode(body, n, &a, &rq, &err);
    free(body);
    gs_arena_free(&a);
    assert_int_equal(rc, -1);
    assert_true(err.code == GS_ERR_PARSE || err.code == GS_ERR_INVALID);
}

/* Depth 128 (the bound of check) while scanning: deeper inside request.object the value
 * is passed over and the object handed on (the reader refuses it with its own limit);
 * deeper anywhere else the body is refused. Malformed JSON inside the object and a lone
 * surrogate anywhere are refused as malformed. */
static void test_depth_limit(void **state)
{
    (void)state;
    char *body = malloc(1 << 20);
    assert_non_null(body);
    for (int where = 0; where < 2; where++) {
        size_t n = (size_t)snprintf(body, 1 << 20, "%s", REVIEW_HEAD "\"request\":{\"uid\":\"u\",");
        n += (size_t)snprintf(body + n, (1 << 20) - n, "%s",
                              where ? "\"object\":{\"kind\":\"Pod\",\"spec\":{\"x\":" : "\"extra\":");
        for (int i = 0; i < 200000; i++)
            body[n++] = '[';
        for (int i = 0; i < 200000; i++)
            body[n++] = ']';
        n += (size_t)snprintf(body + n, (1 << 20) - n, "%s", where ? "}}}}" : "}}");
        gs_arena a;
        gs_admission rq;
        gs_error err;
        gs_arena_init(&a, 0);
        gs_error_clear(&err);
        int rc = gs_admission_decode(body, n, &a, &rq, &err);
        if (where == 0) {
            assert_int_equal(rc, -1);
            assert_int_equal(err.code, GS_ERR_INVALID);
            assert_non_null(strstr(err.msg, "deeper than 128"));
        } else {
            assert_int_equal(rc, 0);
            assert_non_null(rq.object);
            assert_string_equal(rq.uid, "u");
        }
        gs_arena_free(&a);
    }
    free(body);
    /* exactly 128 levels outside the object are fine */
    char ok[600];
    size_t n = (size_t)snprintf(ok, sizeof ok, "%s", REVIEW_HEAD "\"request\":{\"uid\":\"u\",\"x\":");
    for (int i = 0; i < 126; i++)
        ok[n++] = '[';
    for (int i = 0; i < 126; i++)
        ok[n++] = ']';
    snprintf(ok + n, sizeof ok - n, "}}");
    gs_arena a;
    gs_admission rq;
    gs_error err;
    assert_int_equal(decode(ok, &a, &rq, &err), 0);
    gs_arena_free(&a);
    expect_fail(REVIEW_HEAD "\"request\":{\"uid\":\"u\",\"object\":{\"a\":[1 2]}}}", GS_ERR_PARSE, "malformed JSON");
    expect_fail(REVIEW_HEAD "\"request\":{\"uid\":\"u\",\"x\":\"\\udc00\"}}", GS_ERR_PARSE, "malformed JSON");
    expect_fail(REVIEW_HEAD "\"request\":{\"uid\":\"u\",\"x\":01}}", GS_ERR_PARSE, "malformed JSON");
    /* an escaped key is compared decoded */
    assert_int_equal(decode(REVIEW_HEAD "\"request\":{\"\\u0075id\":\"v\"}}", &a, &rq, &err), 0);
    assert_string_equal(rq.uid, "v");
    gs_arena_free(&a);
}

/* The decoder never reads past len: a body cut anywhere fails cleanly. */
static void test_every_prefix(void **state)
{
    (void)state;
    const char *body = REVIEW_HEAD "\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\","
                                   "\"kind\":\"Pod\"},\"namespace\":\"n\",\"object\":{\"metadata\":{\"name\":\"p\"},"
                                   "\"spec\":{\"tolerations\":[]}}}}";
    size_t len = strlen(body);
    for (size_t cut = 0; cut < len; cut++) {
        char *copy = malloc(cut ? cut : 1); /* exact size: ASan catches any overread */
        assert_non_null(copy);
        memcpy(copy, body, cut);
        gs_arena a;
        gs_admission rq;
        gs_error err;
        gs_arena_init(&a, 0);
        assert_int_equal(gs_admission_decode(copy, cut, &a, &rq, &err), -1);
        assert_true(err.code == GS_ERR_PARSE || err.code == GS_ERR_INVALID);
        gs_arena_free(&a);
        free(copy);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_request),
        cmocka_unit_test(test_splice_namespace_and_kind),
        cmocka_unit_test(test_splice_escapes),
        cmocka_unit_test(test_tolerations_shape),
        cmocka_unit_test(test_delete_without_object),
        cmocka_unit_test(test_not_json),
        cmocka_unit_test(test_not_an_admission_review),
        cmocka_unit_test(test_tolerant_of_extra_members),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_every_prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
