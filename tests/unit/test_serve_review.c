/* test_serve_review.c - the webhook's decisions and encoders (serve.h): validate over the
 * check rules (deny on errors with the rule ids, warnings capped at 120 bytes), mutate
 * (the GPU toleration of k8s-semantics section 7 and the default PriorityClass, as
 * JSONPatch), objects that do not decode, skipped operations, and the AdmissionReview v1
 * response / metav1.Status bodies (k8s-semantics section 9). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/serve.h"
#include "serve/serve_int.h"

/* ---------------------------------------------------------------- helpers */
static char *review_body(const char *operation, const char *kind, const char *object)
{
    const char *group = strcmp(kind, "Deployment") == 0 ? "apps" : "";
    size_t cap = strlen(object) + 1024;
    char *b = malloc(cap);
    assert_non_null(b);
    snprintf(b, cap,
             "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
             "\"uid\":\"uid-1\",\"kind\":{\"group\":\"%s\",\"version\":\"v1\",\"kind\":\"%s\"},"
             "\"namespace\":\"team-a\",\"name\":\"p\",\"operation\":\"%s\","
             "\"userInfo\":{\"username\":\"alice\"},\"object\":%s}}",
             group, kind, operation, object);
    return b;
}

static int run(const gs_webhook *wh, gs_review_endpoint ep, const char *operation, const char *kind,
               const char *object, gs_review *rv)
{
    char *body = review_body(operation, kind, object);
    gs_error err;
    gs_error_clear(&err);
    int rc = gs_review_run(wh, ep, body, strlen(body), rv, &err);
    if (rc != 0)
        print_error("review failed: %s\n", err.msg);
    free(body);
    return rc;
}

#define GPU_POD(spec_extra, limits)                                                               \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{" spec_extra \
    "\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"limits\":" limits "}}]}}"

static const char *patch_of(const gs_review *rv) { return rv->patch ? rv->patch : ""; }

/* ---------------------------------------------------------------- mutate */
typedef struct patch_case {
    const char *object;
    const char *operation;
    const char *expect; /* "" = no patch */
} patch_case;

static void check_patches(const gs_webhook *wh, const patch_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        gs_review rv;
        assert_int_equal(run(wh, GS_ENDPOINT_MUTATE, cases[i].operation, "Pod", cases[i].object, &rv), 0);
        if (strcmp(patch_of(&rv), cases[i].expect) != 0)
            print_error("case %zu:\n  got    %s\n  expect %s\n", i, patch_of(&rv), cases[i].expect);
        assert_string_equal(patch_of(&rv), cases[i].expect);
        assert_true(rv.allowed); /* mutate never denies */
        assert_int_equal(rv.patch_len, strlen(cases[i].expect));
        gs_review_free(&rv);
    }
}

#define TOL_GPU "{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}"

static void test_mutate_toleration(void **state)
{
    (void)state;
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    gs_webhook wh = {.cfg = &cfg};
    const patch_case cases[] = {
        /* tolerations absent: the whole array is added */
        {GPU_POD("", "{\"nvidia.com/gpu\":\"1\"}"), "CREATE",
         "[{\"op\":\"add\",\"path\":\"/spec/tolerations\",\"value\":[" TOL_GPU "]}]"},
        /* null: "add" replaces the null */
        {GPU_POD("\"tolerations\":null,", "{\"nvidia.com/gpu\":\"2\"}"), "CREATE",
         "[{\"op\":\"add\",\"path\":\"/spec/tolerations\",\"value\":[" TOL_GPU "]}]"},
        /* an array (even empty): append */
        {GPU_POD("\"tolerations\":[],", "{\"nvidia.com/gpu\":\"1\"}"), "CREATE",
         "[{\"op\":\"add\",\"path\":\"/spec/tolerations/-\",\"value\":" TOL_GPU "}]"},
        {GPU_POD("\"tolerations\":[{\"key\":\"other\",\"operator\":\"Exists\"}],", "{\"nvidia.com/gpu\":\"1\"}"),
         "UPDATE", "[{\"op\":\"add\",\"path\":\"/spec/tolerations/-\",\"value\":" TOL_GPU "}]"},
        /* Equal covers one taint value only; NoExecute does not cover NoSchedule */
        {GPU_POD("\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Equal\",\"value\":\"present\","
                 "\"effect\":\"NoSchedule\"}],",
                 "{\"nvidia.com/gpu\":\"1\"}"),
         "CREATE", "[{\"op\":\"add\",\"path\":\"/spec/tolerations/-\",\"value\":" TOL_GPU "}]"},
        {GPU_POD("\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoExecute\"}],",
                 "{\"nvidia.com/gpu\":\"1\"}"),
         "CREATE", "[{\"op\":\"add\",\"path\":\"/spec/tolerations/-\",\"value\":" TOL_GPU "}]"},
        /* already tolerated: no patch */
        {GPU_POD("\"tolerations\":[" TOL_GPU "],", "{\"nvidia.com/gpu\":\"1\"}"), "CREATE", ""},
        {GPU_POD("\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}],", "{\"nvidia.com/gpu\":\"1\"}"),
         "CREATE", ""},
        {GPU_POD("\"tolerations\":[{\"operator\":\"Exists\"}],", "{\"nvidia.com/gpu\":\"1\"}"), "CREATE", ""},
        /* no GPU: nothing */
        {GPU_POD("", "{\"cpu\":\"2\",\"memory\":\"1Gi\"}"), "CREATE", ""},
        /* MIG and other conventions are GPU requests too */
        {GPU_POD("", "{\"nvidia.com/mig-1g.10gb\":\"1\"}"), "CREATE",
         "[{\"op\":\"add\",\"path\":\"/spec/tolerations\",\"value\":[" TOL_GPU "]}]"},
        /* DELETE is never mutated */
        {GPU_POD("", "{\"nvidia.com/gpu\":\"1\"}"), "DELETE", ""},
    };
    check_patches(&wh, cases, sizeof cases / sizeof cases[0]);
    gs_check_config_free(&cfg);
}

static void test_mutate_several_taint_keys(void **state)
{
    (void)state;
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    cfg.gpu_taint_keys[0] = "nvidia.com/gpu";
    cfg.gpu_taint_keys[1] = "example.com/accelerator";
    cfg.gpu_taint_keys[2] = "nvidia.com/gpu"; /* a repeated key is added once */
    cfg.ngpu_taint_keys = 3;
    gs_webhook wh = {.cfg = &cfg};
    const patch_case cases[] = {
        {GPU_POD("", "{\"nvidia.com/gpu\":\"1\"}"), "CREATE",
         "[{\"op\":\"add\",\"path\":\"/spec/tolerations\",\"value\":[" TOL_GPU
         ",{\"key\":\"example.com/accelerator\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]}]"},
        {GPU_POD("\"tolerations\":[" TOL_GPU "],", "{\"nvidia.com/gpu\":\"1\"}"), "CREATE",
         "[{\"op\":\"add\",\"path\":\"/spec/tolerations/-\",\"value\":"
         "{\"key\":\"example.com/accelerator\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}}]"},
    };
    check_patches(&wh, cases, sizeof cases / sizeof cases[0]);
    cfg.ngpu_taint_keys = 0;
    gs_check_config_free(&cfg);
}

static void test_mutate_priority_class(void **state)
{
    (void)state;
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    cfg.default_gpu_priority_class = "gpu-batch";
    gs_webhook wh = {.cfg = &cfg, .has_gpu_priority_value = true, .gpu_priority_value = 1000};
    const char *pc = ",{\"op\":\"add\",\"path\":\"/spec/priorityClassName\",\"value\":\"gpu-batch\"},"
                     "{\"op\":\"add\",\"path\":\"/spec/priority\",\"value\":1000}]";
    char with_tol[512];
    snprintf(with_tol, sizeof with_tol, "[{\"op\":\"add\",\"path\":\"/spec/tolerations\",\"value\":[" TOL_GPU "]}%s",
             pc);
    const patch_case cases[] = {
        {GPU_POD("", "{\"nvidia.com/gpu\":\"1\"}"), "CREATE", with_tol},
        /* tolerated already: only the class (the leading comma of pc is dropped) */
        {GPU_POD("\"tolerations\":[" TOL_GPU "],", "{\"nvidia.com/gpu\":\"1\"}"), "CREATE",
         "[{\"op\":\"add\",\"path\":\"/spec/priorityClassName\",\"value\":\"gpu-batch\"},"
         "{\"op\":\"add\",\"path\":\"/spec/priority\",\"value\":1000}]"},
        /* a class named by the pod is kept; spec.priority resolved by the API server too */
        {GPU_POD("\"tolerations\":[" TOL_GPU "],\"priorityClassName\":\"mine\",\"priority\":5,",
                 "{\"nvidia.com/gpu\":\"1\"}"),
         "CREATE", ""},
        /* UPDATE cannot change the class */
        {GPU_POD("\"tolerations\":[" TOL_GPU "],", "{\"nvidia.com/gpu\":\"1\"}"), "UPDATE", ""},
        /* not a GPU pod */
        {GPU_POD("", "{\"cpu\":\"1\"}"), "CREATE", ""},
    };
    check_patches(&wh, cases, sizeof cases / sizeof cases[0]);
    /* without the class's value the class is not set (spec.priority would disagree) */
    wh.has_gpu_priority_value = false;
    const patch_case no_value[] = {
        {GPU_POD("\"tolerations\":[" TOL_GPU "],", "{\"nvidia.com/gpu\":\"1\"}"), "CREATE", ""},
    };
    check_patches(&wh, no_value, 1);
    cfg.default_gpu_priority_class = NULL;
    gs_check_config_free(&cfg);
}

/* Workloads are not patched (their pods are, when they are created); an object that does
 * not decode is let through with a warning; a contradictory GPU request too. */
static void test_mutate_leaves_alone(void **state)
{
    (void)state;
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    gs_webhook wh = {.cfg = &cfg};
    gs_review rv;
    const char *deploy = "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},"
                         "\"spec\":{\"replicas\":2,\"selector\":{\"matchLabels\":{\"a\":\"b\"}},\"template\":{"
                         "\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
                         "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}}}";
    assert_int_equal(run(&wh, GS_ENDPOINT_MUTATE, "CREATE", "Deployment", deploy, &rv), 0);
    assert_true(rv.allowed);
    assert_null(rv.patch);
    gs_review_free(&rv);

    const char *broken = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                         "\"spec\":{\"containers\":\"not a list\"}}";
    assert_int_equal(run(&wh, GS_ENDPOINT_MUTATE, "CREATE", "Pod", broken, &rv), 0);
    assert_true(rv.allowed);
    assert_null(rv.patch);
    assert_non_null(rv.object_error);
    assert_int_equal(rv.nwarnings, 1);
    assert_non_null(strstr(rv.warnings[0], "gpusched: not mutated"));
    assert_true(strlen(rv.warnings[0]) <= GS_REVIEW_WARNING_MAX);
    gs_review_free(&rv);
    gs_check_config_free(&cfg);
}

/* ---------------------------------------------------------------- validate */
static const gs_review_finding *first_error(const gs_review *rv)
{
    for (uint32_t i = 0; i < rv->nfindings; i++)
        if (!rv->findings[i].suppressed && rv->findings[i].severity == GS_SEV_ERROR)
            return &rv->findings[i];
    return NULL;
}

/* A fractional nvidia.com/gpu is an error for the rules (the device plugin only hands
 * out whole devices). Whatever rules fire, the denial names each of them. */
#define BAD_GPU_POD GPU_POD("", "{\"nvidia.com/gpu\":\"0.5\"}")

static void test_validate_denies_with_rule_ids(void **state)
{
    (void)state;
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    gs_webhook wh = {.cfg = &cfg};
    gs_review rv;
    assert_int_equal(run(&wh, GS_ENDPOINT_VALIDATE, "CREATE", "Pod", BAD_GPU_POD, &rv), 0);
    assert_false(rv.allowed);
    assert_null(rv.patch); /* validating webhooks may not return a patch */
    if (rv.object_error) {
        /* the reader itself refused the quantity: a 422 with the reason */
        assert_int_equal(rv.status_code, 422);
        assert_string_equal(rv.reason, "Invalid");
        assert_non_null(strstr(rv.message, "gpusched cannot read Pod team-a/p"));
    } else {
        assert_int_equal(rv.status_code, 403);
        assert_string_equal(rv.reason, "Forbidden");
        assert_non_null(first_error(&rv));
        for (uint32_t i = 0; i < rv.nfindings; i++) {
            const gs_review_finding *f = &rv.findings[i];
            if (f->suppressed || f->severity != GS_SEV_ERROR)
                continue;
            char want[160];
            snprintf(want, sizeof want, "%s %s: ", f->rule_id, f->rule_name);
            assert_non_null(strstr(rv.message, want));
            assert_true(f->rule_index >= 0);
        }
        for (uint32_t i = 0; i < rv.nwarnings; i++)
            assert_true(strlen(rv.warnings[i]) <= GS_REVIEW_WARNING_MAX);
    }
    assert_true(strlen(rv.message) <= GS_REVIEW_MESSAGE_MAX);
    bool object_error = rv.object_error != NULL;
    gs_review_free(&rv);

    if (!object_error) {
        /* every rule turned into a warning: allowed, one warning per distinct finding
         * (at most GS_REVIEW_WARNINGS_MAX), each "<id>: ..." and at most 120 bytes */
        uint32_t nrules = 0;
        gs_rules(&nrules);
        for (uint32_t i = 0; i < nrules && i < 64; i++) {
            cfg.has_severity[i] = true;
            cfg.severity[i] = GS_SEV_WARNING;
        }
        assert_int_equal(run(&wh, GS_ENDPOINT_VALIDATE, "CREATE", "Pod", BAD_GPU_POD, &rv), 0);
        assert_true(rv.allowed);
        assert_null(rv.message);
        assert_true(rv.nwarnings >= 1);
        for (uint32_t i = 0; i < rv.nwarnings; i++) {
            assert_true(strlen(rv.warnings[i]) <= GS_REVIEW_WARNING_MAX);
            assert_true(strncmp(rv.warnings[i], "GS", 2) == 0 || strncmp(rv.warnings[i], "gpusched:", 9) == 0);
        }
        gs_review_free(&rv);

        /* every rule disabled: allowed, no findings */
        for (uint32_t i = 0; i < nrules && i < 64; i++)
            cfg.disabled[i] = true;
        assert_int_equal(run(&wh, GS_ENDPOINT_VALIDATE, "CREATE", "Pod", BAD_GPU_POD, &rv), 0);
        assert_true(rv.allowed);
        assert_int_equal(rv.nfindings, 0);
        assert_int_equal(rv.nwarnings, 0);
        gs_review_free(&rv);
    }
    gs_check_config_free(&cfg);
}

static void test_validate_skips(void **state)
{
    (void)state;
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    gs_webhook wh = {.cfg = &cfg};
    gs_review rv;
    assert_int_equal(run(&wh, GS_ENDPOINT_VALIDATE, "DELETE", "Pod", "null", &rv), 0);
    assert_true(rv.allowed);
    assert_string_equal(rv.skipped, "DELETE");
    assert_string_equal(rv.req.uid, "uid-1");
    gs_review_free(&rv);
    assert_int_equal(run(&wh, GS_ENDPOINT_VALIDATE, "CONNECT", "Pod", BAD_GPU_POD, &rv), 0);
    assert_true(rv.allowed);
    assert_string_equal(rv.skipped, "CONNECT");
    gs_review_free(&rv);
    /* subresources (pods/status, pods/ephemeralcontainers) are not judged */
    char *body = review_body("UPDATE", "Pod", BAD_GPU_POD);
    size_t cap = strlen(body) + 64;
    char *sub = malloc(cap);
    char *at = strstr(body, "\"operation\"");
    assert_non_null(sub);
    assert_non_null(at);
    snprintf(sub, cap, "%.*s\"subResource\":\"status\",%s", (int)(at - body), body, at);
    gs_error err;
    assert_int_equal(gs_review_run(&wh, GS_ENDPOINT_VALIDATE, sub, strlen(sub), &rv, &err), 0);
    assert_true(rv.allowed);
    assert_string_equal(rv.skipped, "subresource");
    gs_review_free(&rv);
    free(sub);
    free(body);
    gs_check_config_free(&cfg);
}

/* A pod whose GPU comes from a DRA claim: the review holds the pod without its claim, so
 * whether it asks GPUs cannot be told and GS017 stays silent; a CPU-only pod with the same
 * toleration is still warned (check's GS017 regression, the webhook side). */
static bool has_rule(const gs_review *rv, const char *id)
{
    for (uint32_t i = 0; i < rv->nfindings; i++)
        if (!strcmp(rv->findings[i].rule_id, id))
            return true;
    return false;
}

static void test_validate_claim_pod(void **state)
{
    (void)state;
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    gs_webhook wh = {.cfg = &cfg};
    gs_review rv;
    const char *claim_pod =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{"
        "\"tolerations\":[" TOL_GPU "],"
        "\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}],"
        "\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"one-gpu\"}]}}";
    const char *cpu_pod =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{"
        "\"tolerations\":[" TOL_GPU "],"
        "\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}";
    assert_int_equal(run(&wh, GS_ENDPOINT_VALIDATE, "CREATE", "Pod", claim_pod, &rv), 0);
    assert_true(rv.allowed);
    assert_false(has_rule(&rv, "GS017"));
    assert_false(has_rule(&rv, "GS028")); /* a review is no cluster dump */
    gs_review_free(&rv);
    assert_int_equal(run(&wh, GS_ENDPOINT_VALIDATE, "CREATE", "Pod", cpu_pod, &rv), 0);
    assert_true(rv.allowed);
    assert_true(has_rule(&rv, "GS017"));
    gs_review_free(&rv);
    gs_check_config_free(&cfg);
}

static void test_validate_unreadable_object(void **state)
{
    (void)state;
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    gs_webhook wh = {.cfg = &cfg};
    gs_review rv;
    const char *broken = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                         "\"spec\":{\"containers\":\"not a list\"}}";
    assert_int_equal(run(&wh, GS_ENDPOINT_VALIDATE, "CREATE", "Pod", broken, &rv), 0);
    assert_false(rv.allowed);
    assert_int_equal(rv.status_code, 422);
    assert_string_equal(rv.reason, "Invalid");
    assert_non_null(strstr(rv.message, "gpusched cannot read Pod team-a/p: "));
    assert_non_null(rv.object_error);
    gs_review_free(&rv);

    /* beyond a webhook limit (replicas expanded per workload): allowed, with a warning */
    wh.read_opts.max_replicas = 3;
    const char *big = "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},"
                      "\"spec\":{\"replicas\":4,\"selector\":{\"matchLabels\":{\"a\":\"b\"}},\"template\":{"
                      "\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}}}";
    assert_int_equal(run(&wh, GS_ENDPOINT_VALIDATE, "CREATE", "Deployment", big, &rv), 0);
    assert_true(rv.allowed);
    assert_int_equal(rv.nwarnings, 1);
    assert_non_null(strstr(rv.warnings[0], "gpusched: not checked: "));
    gs_review_free(&rv);
    gs_check_config_free(&cfg);
}

/* A body that is not an AdmissionReview fails the call (the server answers 400). */
static void test_review_bad_body(void **state)
{
    (void)state;
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    gs_webhook wh = {.cfg = &cfg};
    gs_review rv;
    gs_error err;
    const char *body = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}";
    assert_int_equal(gs_review_run(&wh, GS_ENDPOINT_VALIDATE, body, strlen(body), &rv, &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_int_equal(gs_review_run(&wh, GS_ENDPOINT_MUTATE, "{", 1, &rv, &err), -1);
    assert_int_equal(err.code, GS_ERR_PARSE);
    gs_check_config_free(&cfg);
}

/* ---------------------------------------------------------------- encoders */
static void test_base64(void **state)
{
    (void)state;
    /* RFC 4648 section 10 test vectors */
    const char *in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    const char *out[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (int i = 0; i < 7; i++) {
        gs_strbuf sb = GS_STRBUF_INIT;
        gs_base64_encode(in[i], strlen(in[i]), &sb);
        assert_string_equal(gs_strbuf_cstr(&sb), out[i]);
        gs_strbuf_free(&sb);
    }
    const unsigned char bin[] = {0xfb, 0xff, 0x00, 0x3e};
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_base64_encode(bin, sizeof bin, &sb);
    assert_string_equal(gs_strbuf_cstr(&sb), "+/8APg==");
    gs_strbuf_free(&sb);
}

static void test_encode_responses(void **state)
{
    (void)state;
    gs_review rv;
    memset(&rv, 0, sizeof rv);
    rv.req.uid = "u-\"1";
    rv.allowed = true;
    rv.endpoint = GS_ENDPOINT_VALIDATE;
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_review_encode(&rv, &sb);
    assert_string_equal(gs_strbuf_cstr(&sb), "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                                             "\"response\":{\"uid\":\"u-\\\"1\",\"allowed\":true}}");
    gs_strbuf_reset(&sb);

    gs_review_finding f[4] = {
        {"GS009", "gpu-request-not-integer", 8, GS_SEV_ERROR, "fractional", false},
        {"GS015", "w", 14, GS_SEV_WARNING, "warn", false},
        {"GS009", "gpu-request-not-integer", 8, GS_SEV_ERROR, "other words", false},
        {"GS020", "s", 19, GS_SEV_ERROR, "suppressed", true},
    };
    const char *warnings[] = {"GS015: warn"};
    rv.allowed = false;
    rv.status_code = 403;
    rv.reason = "Forbidden";
    rv.message = "GS009 gpu-request-not-integer: fractional";
    rv.warnings = warnings;
    rv.nwarnings = 1;
    rv.findings = f;
    rv.nfindings = 4;
    rv.patch = "[]"; /* a validating response never carries a patch */
    rv.patch_len = 2;
    gs_review_encode(&rv, &sb);
    assert_string_equal(gs_strbuf_cstr(&sb),
                        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"response\":{"
                        "\"uid\":\"u-\\\"1\",\"allowed\":false,\"status\":{\"code\":403,\"reason\":\"Forbidden\","
                        "\"message\":\"GS009 gpu-request-not-integer: fractional\"},\"warnings\":[\"GS015: warn\"],"
                        "\"auditAnnotations\":{\"findings\":\"GS009,GS015\"}}}");
    gs_strbuf_reset(&sb);

    memset(&rv, 0, sizeof rv);
    rv.req.uid = "u";
    rv.allowed = true;
    rv.endpoint = GS_ENDPOINT_MUTATE;
    rv.patch = "[{\"op\":\"add\"}]";
    rv.patch_len = strlen(rv.patch);
    gs_review_encode(&rv, &sb);
    assert_string_equal(gs_strbuf_cstr(&sb), "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                                             "\"response\":{\"uid\":\"u\",\"allowed\":true,\"patchType\":\"JSONPatch\","
                                             "\"patch\":\"W3sib3AiOiJhZGQifV0=\"}}");
    gs_strbuf_free(&sb);
}

static void test_status_body(void **state)
{
    (void)state;
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_serve_status_body(413, "too \"big\"", &sb);
    assert_string_equal(gs_strbuf_cstr(&sb), "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                                             "\"status\":\"Failure\",\"message\":\"too \\\"big\\\"\","
                                             "\"reason\":\"RequestEntityTooLarge\",\"code\":413}");
    gs_strbuf_reset(&sb);
    gs_serve_status_body(400, "x", &sb);
    assert_non_null(strstr(gs_strbuf_cstr(&sb), "\"reason\":\"BadRequest\",\"code\":400}"));
    gs_strbuf_reset(&sb);
    gs_serve_status_body(401, "no client certificate", &sb); /* mTLS: the caller is not the API server */
    assert_non_null(strstr(gs_strbuf_cstr(&sb), "\"reason\":\"Unauthorized\",\"code\":401}"));
    gs_strbuf_free(&sb);
}

/* Cutting never splits a UTF-8 sequence. */
static void test_utf8_cut(void **state)
{
    (void)state;
    const char *s = "ab\xC3\xA9\xE2\x82\xAC"; /* a b é € */
    assert_int_equal(gs_serve_utf8_cut(s, 7, 7), 7);
    assert_int_equal(gs_serve_utf8_cut(s, 7, 6), 4);
    assert_int_equal(gs_serve_utf8_cut(s, 7, 5), 4);
    assert_int_equal(gs_serve_utf8_cut(s, 7, 4), 4);
    assert_int_equal(gs_serve_utf8_cut(s, 7, 3), 2);
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_serve_put_capped(&sb, s, 6);
    assert_string_equal(gs_strbuf_cstr(&sb), "ab...");
    gs_strbuf_free(&sb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mutate_toleration),
        cmocka_unit_test(test_mutate_several_taint_keys),
        cmocka_unit_test(test_mutate_priority_class),
        cmocka_unit_test(test_mutate_leaves_alone),
        cmocka_unit_test(test_validate_denies_with_rule_ids),
        cmocka_unit_test(test_validate_skips),
        cmocka_unit_test(test_validate_claim_pod),
        cmocka_unit_test(test_validate_unreadable_object),
        cmocka_unit_test(test_review_bad_body),
        cmocka_unit_test(test_base64),
        cmocka_unit_test(test_encode_responses),
        cmocka_unit_test(test_status_body),
        cmocka_unit_test(test_utf8_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
