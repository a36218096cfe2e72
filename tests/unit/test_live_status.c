/*
 * test_live_status.c - the pure parts of the request layer (lib/live/status.c, creds.c) on
 * canned API-server answers: a Status body into a gs_error carrying the server's message,
 * reason, code and retry delay; bodies that are not a Status; list pages (continue token,
 * resourceVersion, remainingItemCount); page collection restarting on a relist; the
 * ExecCredential an exec plugin prints.
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
#include "live/live_int.h"

#define S(lit) lit, sizeof lit - 1

static void test_status_forbidden(void **state)
{
    (void)state;
    static const char body[] =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"pods is forbidden: User \\\"system:serviceaccount:gpu:viewer\\\" cannot list resource "
        "\\\"pods\\\" in API group \\\"\\\" at the cluster scope\",\"reason\":\"Forbidden\","
        "\"details\":{\"kind\":\"pods\"},\"code\":403}\n";
    gs_live_status st;
    gs_error err;
    assert_int_equal(gs_live_status_error(403, S(body), "GET /api/v1/pods", &st, &err), -1);
    assert_string_equal(err.msg, "pods is forbidden: User \"system:serviceaccount:gpu:viewer\" cannot list "
                                 "resource \"pods\" in API group \"\" at the cluster scope");
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_int_equal(gs_code_exit_status(err.code), 2);
    assert_string_equal(st.reason, "Forbidden");
    assert_int_equal(st.code, 403);
    assert_int_equal(st.retry_after, -1);
}

static void test_status_kinds(void **state)
{
    (void)state;
    gs_live_status st;
    gs_error err;
    /* NotFound */
    assert_int_equal(gs_live_status_error(404, S("{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":"
                                                 "\"nodes \\\"gpu-9\\\" not found\",\"reason\":\"NotFound\","
                                                 "\"details\":{\"name\":\"gpu-9\",\"kind\":\"nodes\"},\"code\":404}"),
                                          NULL, &st, &err),
                     -1);
    assert_int_equal(err.code, GS_ERR_NOTFOUND);
    assert_string_equal(err.msg, "nodes \"gpu-9\" not found");
    /* an expired continue token */
    assert_int_equal(gs_live_status_error(410, S("{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":"
                                                 "\"The provided continue parameter is too old to display a consistent "
                                                 "list result.\",\"reason\":\"Expired\",\"metadata\":{\"continue\":\"x\"},"
                                                 "\"code\":410}"),
                                          NULL, &st, &err),
                     -1);
    assert_string_equal(st.reason, "Expired");
    assert_int_equal(st.code, 410);
    /* 429 from priority and fairness, retryAfterSeconds in the details */
    assert_int_equal(gs_live_status_error(429, S("{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"Too many "
                                                 "requests, please try again later.\",\"reason\":\"TooManyRequests\","
                                                 "\"details\":{\"retryAfterSeconds\":1},\"code\":429}"),
                                          NULL, &st, &err),
                     -1);
    assert_int_equal(err.code, GS_ERR_IO);
    assert_int_equal(st.retry_after, 1);
    assert_string_equal(st.reason, "TooManyRequests");
    /* a Status without a message */
    assert_int_equal(gs_live_status_error(401, S("{\"kind\":\"Status\",\"reason\":\"Unauthorized\",\"code\":401}"),
                                          "GET /api", &st, &err),
                     -1);
    assert_string_equal(err.msg, "GET /api: HTTP 401 Unauthorized");
    /* not a Status (a proxy's HTML page): the first line, made safe for a terminal */
    assert_int_equal(gs_live_status_error(502, S("<html>Bad\x1b[31m gateway</html>\nsecond line"), "GET /api/v1/nodes",
                                          &st, &err),
                     -1);
    assert_string_equal(err.msg, "GET /api/v1/nodes: HTTP 502: <html>Bad\\x1b[31m gateway</html>");
    assert_int_equal(err.code, GS_ERR_IO);
    assert_string_equal(st.reason, "");
    /* empty body, NULL st */
    assert_int_equal(gs_live_status_error(500, NULL, 0, NULL, NULL, &err), -1);
    assert_string_equal(err.msg, "request: HTTP 500");
    /* JSON of another kind: no message taken from it */
    assert_int_equal(gs_live_status_error(400, S("{\"kind\":\"Pod\",\"message\":\"not me\"}"), "GET /x", &st, &err), -1);
    assert_string_equal(err.msg, "GET /x: HTTP 400: {\"kind\":\"Pod\",\"message\":\"not me\"}");
}

static void test_page_parse(void **state)
{
    (void)state;
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_live_page_info pi;
    gs_error err;
    assert_int_equal(gs_live_page_parse(S("{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
                                          "\"1042\",\"continue\":\"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTA0Mn0\","
                                          "\"remainingItemCount\":3},\"items\":[{\"metadata\":{\"name\":\"a\"}},"
                                          "{\"metadata\":{\"name\":\"b\"}}]}"),
                                        &a, &pi, &err),
                     0);
    assert_string_equal(pi.continue_token, "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTA0Mn0");
    assert_string_equal(pi.resource_version, "1042");
    assert_int_equal(pi.items, 2);
    assert_int_equal(pi.remaining, 3);
    /* the last page: empty continue */
    assert_int_equal(gs_live_page_parse(S("{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"1042\","
                                          "\"continue\":\"\"},\"items\":[]}"),
                                        &a, &pi, &err),
                     0);
    assert_null(pi.continue_token);
    assert_int_equal(pi.items, 0);
    assert_int_equal(pi.remaining, -1);
    /* items null (an empty list from some servers) */
    assert_int_equal(gs_live_page_parse(S("{\"kind\":\"NodeList\",\"metadata\":{},\"items\":null}"), &a, &pi, &err), 0);
    assert_int_equal(pi.items, 0);
    /* not a list; not JSON */
    assert_int_equal(gs_live_page_parse(S("{\"kind\":\"Status\",\"code\":200}"), &a, &pi, &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_int_equal(gs_live_page_parse(S("{\"items\":[1,}"), &a, &pi, &err), -1);
    assert_int_equal(err.code, GS_ERR_PARSE);
    assert_int_equal(err.line, 1);
    gs_arena_free(&a);
}

static void test_pages_collect_restart(void **state)
{
    (void)state;
    gs_live_pages p = {0};
    gs_error err;
    assert_int_equal(gs_live_pages_add(&p, S("{\"page\":1}"), 0, &err), 0);
    assert_int_equal(gs_live_pages_add(&p, S("{\"page\":2}"), 1, &err), 0);
    assert_int_equal(p.page.n, 2);
    assert_string_equal(p.page.v[1], "{\"page\":2}");
    assert_int_equal(p.len.v[1], 10);
    /* 410 Expired: the list restarts at index 0, the old pages go */
    assert_int_equal(gs_live_pages_add(&p, S("{\"page\":\"1b\"}"), 0, &err), 0);
    assert_int_equal(p.page.n, 1);
    assert_int_equal(p.len.n, 1);
    assert_string_equal(p.page.v[0], "{\"page\":\"1b\"}");
    gs_live_pages_free(&p);
}

static void test_exec_credential(void **state)
{
    (void)state;
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_live_execcred ec;
    gs_error err;
    const char *v1 = "client.authentication.k8s.io/v1";
    assert_int_equal(gs_live_execcred_parse("plugin", v1,
                                            S("{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":"
                                              "\"ExecCredential\",\"status\":{\"clientCertificateData\":\"-----BEGIN "
                                              "CERTIFICATE-----\\nA\\n-----END CERTIFICATE-----\\n\",\"clientKeyData\":"
                                              "\"K\",\"expirationTimestamp\":\"2030-01-01T00:00:00Z\"}}"),
                                            &a, &ec, &err),
                     0);
    assert_null(ec.token);
    assert_string_equal(ec.cert_pem, "-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----\n");
    assert_string_equal(ec.key_pem, "K");
    assert_int_equal(ec.expires, 1893456000);
    static const struct {
        const char *json, *msg;
        int col;
    } bad[] = {
        {"{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}",
         "exec plugin is configured to use API version client.authentication.k8s.io/v1, plugin returned version "
         "client.authentication.k8s.io/v1beta1",
         15},
        {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\"}",
         "exec plugin didn't return a status field", 1},
        {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{}}",
         "exec plugin didn't return a token or cert/key pair", 82},
        {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"clientKeyData\":\"k\"}}",
         "exec plugin returned only a key, not both", 99},
        {"{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\","
         "\"expirationTimestamp\":\"soon\"}}",
         "exec plugin: expirationTimestamp is not an RFC 3339 time", 117},
        {"{\"kind\":\"Secret\"}", "exec plugin: kind is \"Secret\", expected ExecCredential", 9},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gs_error_clear(&err);
        assert_int_equal(gs_live_execcred_parse("plugin", v1, bad[i].json, strlen(bad[i].json), &a, &ec, &err), -1);
        if (strcmp(err.msg, bad[i].msg) || err.line != 1 || err.col != bad[i].col)
            fail_msg("case %zu: %d:%d %s", i, err.line, err.col, err.msg);
        assert_string_equal(err.file, "plugin");
    }
    assert_int_equal(gs_live_execcred_parse("plugin", v1, S("not json"), &a, &ec, &err), -1);
    assert_int_equal(err.code, GS_ERR_PARSE);
    gs_arena_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_forbidden),
        cmocka_unit_test(test_status_kinds),
        cmocka_unit_test(test_page_parse),
        cmocka_unit_test(test_pages_collect_restart),
        cmocka_unit_test(test_exec_credential),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
