/*
 * test_live_watch.c - the watch stream's pure parts (lib/live/watch.c): event lines of
 * every type as the API server writes them, escapes in strings and keys, an ERROR's
 * Status, the streaming list's end bookmark, malformed, truncated and oversized lines; the
 * line splitter over pieces cut anywhere; a list page's resourceVersion.
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

static const char pod_added[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p1\","
    "\"namespace\":\"ns\",\"uid\":\"u\",\"resourceVersion\":\"1234\",\"labels\":{\"a\":\"b\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]},\"status\":{\"phase\":\"Pending\"}}}";

static void test_event_types(void **state)
{
    (void)state;
    gs_live_watch_event ev;
    gs_error err;
    assert_int_equal(gs_live_watch_event_parse(S(pod_added), &ev, &err), 0);
    assert_int_equal(ev.type, GS_LIVE_WATCH_ADDED);
    assert_string_equal(ev.resource_version, "1234");
    assert_false(ev.initial_events_end);
    /* the object's span: exactly the text between "object": and the final '}' */
    const char *o = strstr(pod_added, "{\"kind\"");
    assert_ptr_equal(ev.object, o);
    assert_int_equal(ev.object_len, strlen(o) - 1);
    assert_int_equal(ev.object[ev.object_len - 1], '}');

    static const char *const types[] = {"MODIFIED", "DELETED", "BOOKMARK"};
    for (int i = 0; i < 3; i++) {
        char line[256];
        snprintf(line, sizeof line,
                 " {\"object\":{\"metadata\":{\"resourceVersion\":\"9%d\"}}, \"type\" : \"%s\"}\r\n", i, types[i]);
        assert_int_equal(gs_live_watch_event_parse(line, strlen(line), &ev, &err), 0);
        assert_int_equal(ev.type, GS_LIVE_WATCH_MODIFIED + i);
        assert_string_equal(gs_live_watch_event_type_name(ev.type), types[i]);
        char rv[8];
        snprintf(rv, sizeof rv, "9%d", i);
        assert_string_equal(ev.resource_version, rv);
    }
}

static void test_bookmarks(void **state)
{
    (void)state;
    gs_live_watch_event ev;
    gs_error err;
    /* what kube-apiserver 1.37 sends at the end of a streaming list */
    static const char end[] =
        "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ServiceAccount\",\"apiVersion\":\"v1\",\"metadata\":"
        "{\"resourceVersion\":\"216\",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}";
    assert_int_equal(gs_live_watch_event_parse(S(end), &ev, &err), 0);
    assert_int_equal(ev.type, GS_LIVE_WATCH_BOOKMARK);
    assert_true(ev.initial_events_end);
    assert_string_equal(ev.resource_version, "216");
    /* a periodic bookmark has none; "false" is not the end */
    static const char plain[] = "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ServiceAccount\",\"apiVersion\":\"v1\","
                                "\"metadata\":{\"resourceVersion\":\"228\"}}}";
    assert_int_equal(gs_live_watch_event_parse(S(plain), &ev, &err), 0);
    assert_false(ev.initial_events_end);
    static const char f[] = "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\","
                            "\"annotations\":{\"x\":\"true\",\"k8s.io/initial-events-end\":\"false\"}}}}";
    assert_int_equal(gs_live_watch_event_parse(S(f), &ev, &err), 0);
    assert_false(ev.initial_events_end);
    /* the key written with escapes is the same key */
    static const char esc[] = "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\","
                              "\"annotations\":{\"k8s.io\\/initial-events-\\u0065nd\":\"tru\\u0065\"}}}}";
    assert_int_equal(gs_live_watch_event_parse(S(esc), &ev, &err), 0);
    assert_true(ev.initial_events_end);
    /* only a BOOKMARK ends the initial events: an object carrying the annotation does not */
    static const char mod[] = "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\","
                              "\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}";
    assert_int_equal(gs_live_watch_event_parse(S(mod), &ev, &err), 0);
    assert_false(ev.initial_events_end);
    /* nor do Status fields outside an ERROR */
    static const char notst[] = "{\"type\":\"ADDED\",\"object\":{\"code\":410,\"reason\":\"Expired\"}}";
    assert_int_equal(gs_live_watch_event_parse(S(notst), &ev, &err), 0);
    assert_int_equal(ev.code, 0);
    assert_string_equal(ev.reason, "");
}

static void test_error_status(void **state)
{
    (void)state;
    gs_live_watch_event ev;
    gs_error err;
    /* as kube-apiserver sends it after a restart, to a watch from an older resourceVersion */
    static const char gone[] =
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
        "\"Failure\",\"message\":\"too old resource version: 216 (221)\",\"reason\":\"Expired\",\"code\":410}}";
    assert_int_equal(gs_live_watch_event_parse(S(gone), &ev, &err), 0);
    assert_int_equal(ev.type, GS_LIVE_WATCH_ERROR);
    assert_int_equal(ev.code, 410);
    assert_string_equal(ev.reason, "Expired");
    assert_string_equal(ev.message, "too old resource version: 216 (221)");
    assert_string_equal(ev.resource_version, "");
    /* escapes in the message are decoded; a long message is cut at a character */
    char big[2048];
    int n = snprintf(big, sizeof big, "{\"type\":\"ERROR\",\"object\":{\"code\":500,\"reason\":\"InternalError\","
                                      "\"message\":\"a \\\"quoted\\\" \\u00e9\\n");
    for (int i = 0; i < 300; i++)
        n += snprintf(big + n, sizeof big - (size_t)n, "\\u00e9");
    snprintf(big + n, sizeof big - (size_t)n, "\"}}");
    assert_int_equal(gs_live_watch_event_parse(big, strlen(big), &ev, &err), 0);
    assert_int_equal(ev.code, 500);
    assert_memory_equal(ev.message, "a \"quoted\" \xc3\xa9\n", 14);
    assert_true(strlen(ev.message) < sizeof ev.message);
    assert_int_equal(strlen(ev.message) % 2, 0); /* 14 bytes then whole two-byte characters */
}

static void expect_bad(const char *line, size_t len, gs_code code, const char *msg_part)
{
    gs_live_watch_event ev;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_live_watch_event_parse(line, len, &ev, &err), -1);
    assert_int_equal(err.code, code);
    if (!strstr(err.msg, msg_part))
        fail_msg("\"%.*s\": message \"%s\" lacks \"%s\"", (int)len, line, err.msg, msg_part);
    assert_int_equal(ev.type, 0);
    assert_null(ev.object);
}

static void test_bad_lines(void **state)
{
    (void)state;
    expect_bad(S(""), GS_ERR_PARSE, "not an object");
    expect_bad(S("[]"), GS_ERR_PARSE, "not an object");
    expect_bad(S("{\"type\":\"ADDED\"}"), GS_ERR_PARSE, "no \"object\"");
    expect_bad(S("{\"object\":{}}"), GS_ERR_PARSE, "no \"type\"");
    expect_bad(S("{\"type\":\"UPDATED\",\"object\":{}}"), GS_ERR_PARSE, "unknown event type");
    expect_bad(S("{\"type\":1,\"object\":{}}"), GS_ERR_PARSE, "not a string");
    expect_bad(S("{\"type\":\"ADDED\",\"object\":[]}"), GS_ERR_PARSE, "not an object");
    expect_bad(S("{\"type\":\"ADDED\",\"object\":{}} x"), GS_ERR_PARSE, "bytes after");
    expect_bad(S("{\"type\":\"ADDED\",\"object\":{}}{\"type\":\"ADDED\",\"object\":{}}"), GS_ERR_PARSE, "bytes after");
    expect_bad(S("{\"type\":\"ADD\\qED\",\"object\":{}}"), GS_ERR_PARSE, "escape");
    expect_bad(S("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":12}}}"), GS_ERR_PARSE,
               "not a string");
    expect_bad(S("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\\u0000\"}}}"), GS_ERR_PARSE,
               "\\u0000");
    expect_bad(S("{\"type\":\"ADDED\" \"object\":{}}"), GS_ERR_PARSE, "',' or '}'");
    expect_bad(S("{\"type\":\"ADDED\",\"object\":{\"a\":tru}}"), GS_ERR_PARSE, "not a JSON value");
    /* truncated anywhere: every proper prefix of a good line is refused */
    for (size_t n = 0; n + 1 < sizeof pod_added - 1; n++) {
        gs_live_watch_event ev;
        gs_error err;
        if (gs_live_watch_event_parse(pod_added, n, &ev, &err) == 0)
            fail_msg("the prefix of %zu bytes parsed", n);
    }
    /* a resourceVersion longer than GS_LIVE_RV_MAX - 1 */
    char line[512];
    char rv[200];
    memset(rv, '7', sizeof rv - 1);
    rv[sizeof rv - 1] = '\0';
    snprintf(line, sizeof line, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"%s\"}}}", rv);
    expect_bad(line, strlen(line), GS_ERR_PARSE, "longer than 127");
    /* nesting is bounded */
    size_t deep = 3000, k = 0;
    char *d = malloc(deep * 2 + 64);
    k += (size_t)sprintf(d, "{\"type\":\"ADDED\",\"object\":");
    for (size_t i = 0; i < deep; i++)
        d[k++] = '[';
    for (size_t i = 0; i < deep; i++)
        d[k++] = ']';
    d[k++] = '}';
    expect_bad(d, k, GS_ERR_PARSE, "nested too deeply");
    d[sizeof "{\"type\":\"ADDED\",\"object\":" - 1] = '{'; /* {[[[...]]]} is not JSON either way */
    gs_live_watch_event ev;
    gs_error err;
    assert_int_equal(gs_live_watch_event_parse(d, k, &ev, &err), -1);
    free(d);
}

/* ---------------------------------------------------------------- lines */

typedef struct got {
    char lines[16][128];
    int n;
    int stop_at;
} got;

static int take(void *ctx, const char *line, size_t len, gs_error *err)
{
    got *g = ctx;
    if (g->n == g->stop_at)
        return gs_fail(err, GS_ERR_INVALID, "stop");
    assert_true(len < 128);
    memcpy(g->lines[g->n], line, len);
    g->lines[g->n][len] = '\0';
    g->n++;
    return 0;
}

static void test_lines_pieces(void **state)
{
    (void)state;
    static const char stream[] = "{\"a\":1}\n\n{\"b\":2}\r\n  \n{\"c\":\"x\\ny\"}\n{\"d\":4}";
    size_t len = sizeof stream - 1;
    /* every way of cutting the stream in three gives the same lines */
    for (size_t i = 0; i <= len; i++) {
        for (size_t j = i; j <= len; j += 3) {
            gs_live_lines l;
            gs_live_lines_init(&l, 64);
            got g = {.stop_at = -1};
            gs_error err;
            assert_int_equal(gs_live_lines_feed(&l, stream, i, take, &g, &err), 0);
            assert_int_equal(gs_live_lines_feed(&l, stream + i, j - i, take, &g, &err), 0);
            assert_int_equal(gs_live_lines_feed(&l, stream + j, len - j, take, &g, &err), 0);
            assert_int_equal(g.n, 3);
            assert_int_equal(gs_live_lines_finish(&l, take, &g, &err), 0);
            assert_int_equal(g.n, 4);
            assert_string_equal(g.lines[0], "{\"a\":1}");
            assert_string_equal(g.lines[1], "{\"b\":2}");
            assert_string_equal(g.lines[2], "{\"c\":\"x\\ny\"}");
            assert_string_equal(g.lines[3], "{\"d\":4}");
            assert_int_equal(l.lines, 4);
            gs_live_lines_free(&l);
        }
    }
}

static void test_lines_limits(void **state)
{
    (void)state;
    gs_live_lines l;
    gs_error err;
    got g = {.stop_at = -1};
    /* a line of exactly max_line bytes passes, one byte more fails, in one piece or many */
    char buf[40];
    memset(buf, 'x', sizeof buf);
    gs_live_lines_init(&l, 16);
    buf[16] = '\n';
    assert_int_equal(gs_live_lines_feed(&l, buf, 17, take, &g, &err), 0);
    assert_int_equal(g.n, 1);
    assert_int_equal(strlen(g.lines[0]), 16);
    for (int i = 0; i < 17; i++)
        if (gs_live_lines_feed(&l, "y", 1, take, &g, &err))
            break;
    assert_true(l.failed);
    assert_int_equal(err.code, GS_ERR_LIMIT);
    assert_non_null(strstr(err.msg, "longer than 16 bytes"));
    /* failed stays failed */
    assert_int_equal(gs_live_lines_feed(&l, "\n", 1, take, &g, &err), -1);
    assert_int_equal(gs_live_lines_finish(&l, take, &g, &err), 0);
    assert_int_equal(g.n, 1);
    gs_live_lines_free(&l);
    /* the callback's error stops the feed and is returned */
    gs_live_lines_init(&l, 0);
    got h = {.stop_at = 1};
    assert_int_equal(gs_live_lines_feed(&l, S("a\nb\nc\n"), take, &h, &err), -1);
    assert_int_equal(h.n, 1);
    assert_string_equal(err.msg, "stop");
    gs_live_lines_free(&l);
}

static void test_list_rv(void **state)
{
    (void)state;
    char rv[GS_LIVE_RV_MAX];
    static const char page[] = "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"continue\":\"x\","
                               "\"resourceVersion\":\"4711\"},\"items\":[{\"metadata\":{\"resourceVersion\":\"1\"}}]}";
    assert_int_equal(gs_live_list_rv(S(page), rv, sizeof rv), 0);
    assert_string_equal(rv, "4711");
    assert_int_equal(gs_live_list_rv(S("{\"items\":[]}"), rv, sizeof rv), -1);
    assert_string_equal(rv, "");
    assert_int_equal(gs_live_list_rv(S("{\"metadata\":{\"resourceVersion\":\"1\""), rv, sizeof rv), -1);
}

/* The rate limiter: burst tokens at once, then one every 1/qps, reserved in order. */
static void test_rate_limiter(void **state)
{
    (void)state;
    static const char kc[] = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "
                             "https://127.0.0.1:6443\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n"
                             "  context: {cluster: c, user: u}\ncurrent-context: x\n";
    gs_error err;
    gs_live_config *cfg = gs_live_config_load_text("kc.yaml", S(kc), NULL, &err);
    assert_non_null(cfg);
    /* the default: 100 at once */
    for (int i = 0; i < 100; i++)
        assert_int_equal(gs_live_rate_take(cfg), 0);
    assert_true(gs_live_rate_take(cfg) > 0);
    gs_live_config_set_rate(cfg, 10, 2);
    assert_int_equal(gs_live_rate_take(cfg), 0);
    assert_int_equal(gs_live_rate_take(cfg), 0);
    long w3 = gs_live_rate_take(cfg), w4 = gs_live_rate_take(cfg);
    assert_true(w3 > 80 && w3 <= 101);  /* the next token in 100 ms */
    assert_true(w4 > 180 && w4 <= 201); /* and the one after it reserved behind */
    gs_live_config_set_rate(cfg, 0, 0); /* unlimited */
    for (int i = 0; i < 1000; i++)
        assert_int_equal(gs_live_rate_take(cfg), 0);
    gs_live_config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_types),  cmocka_unit_test(test_bookmarks),    cmocka_unit_test(test_error_status),
        cmocka_unit_test(test_bad_lines),    cmocka_unit_test(test_lines_pieces), cmocka_unit_test(test_lines_limits),
        cmocka_unit_test(test_list_rv),      cmocka_unit_test(test_rate_limiter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
