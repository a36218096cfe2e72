/* test_promtext.c - the monitor's utilization input (lib/monitor/promtext.c): dcgm-exporter
 * scrapes in its text format (both host label spellings, MIG instances, pod mapping, DCGM
 * blanks), Prometheus query answers, limits and errors with their positions. Fixtures are in
 * tests/data/dcgm/. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/monitor.h"

static char *fixture(const char *name, size_t *len)
{
    const char *dir = getenv("GS_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/dcgm/%s", dir ? dir : "tests/data", name);
    gs_error err;
    gs_error_clear(&err);
    char *d = gs_read_file(path, 0, len, &err);
    if (!d)
        print_error("%s: %s\n", path, err.msg);
    assert_non_null(d);
    return d;
}

static void read_text_file(gs_util_set *s, const char *name)
{
    size_t len;
    char *d = fixture(name, &len);
    gs_error err;
    gs_error_clear(&err);
    int rc = gs_util_parse_promtext(s, name, d, len, NULL, &err);
    if (rc != 0)
        print_error("%s:%d:%d: %s\n", err.file, err.line, err.col, err.msg);
    assert_int_equal(rc, 0);
    free(d);
}

static const gs_util_sample *find(const gs_util_set *s, gs_util_metric m, int gpu, int gi,
                                  const char *pod)
{
    for (size_t i = 0; i < s->n; i++) {
        const gs_util_sample *x = &s->v[i];
        if (x->metric == m && x->gpu == gpu && x->mig_instance == gi &&
            (!pod || strcmp(x->pod, pod) == 0))
            return x;
    }
    return NULL;
}

static void test_whole_gpus_Hostname(void **state)
{
    (void)state;
    gs_util_set s;
    gs_util_set_init(&s);
    read_text_file(&s, "h100-8gpu-Hostname.prom");
    /* 13 families x 8 GPUs; 8 GPU_UTIL + 8 GR_ENGINE_ACTIVE samples */
    assert_int_equal(s.series, 13 * 8);
    assert_int_equal(s.n, 16);
    assert_int_equal(s.dropped, 0);
    static const int util[8] = {0, 0, 97, 100, 3, 45, 0, 12};
    for (int g = 0; g < 8; g++) {
        const gs_util_sample *x = find(&s, GS_UTIL_GPU_UTIL, g, -1, NULL);
        assert_non_null(x);
        assert_string_equal(x->node, "gpu-node-a");
        assert_string_equal(x->model, "NVIDIA H100 80GB HBM3");
        assert_string_equal(x->mig_profile, "");
        assert_string_equal(x->pod, "");
        assert_true(fabs(x->util - util[g] / 100.0) < 1e-12);
        char dev[16], uuid[64];
        snprintf(dev, sizeof dev, "nvidia%d", g);
        snprintf(uuid, sizeof uuid, "GPU-5f3e9a%02x-4d1c-%04x-9e2a-6c1f0b7d3a%02x", g, 0x1000 + g, g);
        assert_string_equal(x->device, dev);
        assert_string_equal(x->uuid, uuid);
        const gs_util_sample *r = find(&s, GS_UTIL_GR_ENGINE_ACTIVE, g, -1, NULL);
        assert_non_null(r);
        assert_true(fabs(r->util - util[g] / 100.0 * 0.93) < 1e-6);
    }
    /* equal strings are stored once */
    assert_ptr_equal(s.v[0].node, s.v[7].node);
    assert_ptr_equal(s.v[0].model, s.v[15].model);
    gs_util_set_free(&s);
}

static void test_hostname_and_blanks(void **state)
{
    (void)state;
    gs_util_set s;
    gs_util_set_init(&s);
    read_text_file(&s, "l4-2gpu-hostname.prom");
    /* GPU 0: GPU_UTIL is DCGM's blank (not supported), GR_ENGINE_ACTIVE NaN: both dropped */
    assert_int_equal(s.n, 2);
    assert_int_equal(s.dropped, 2);
    const gs_util_sample *u = find(&s, GS_UTIL_GPU_UTIL, 1, -1, NULL);
    assert_non_null(u);
    assert_string_equal(u->node, "gpu-node-b");
    assert_true(fabs(u->util - 0.62) < 1e-12);
    const gs_util_sample *r = find(&s, GS_UTIL_GR_ENGINE_ACTIVE, 1, -1, NULL);
    assert_non_null(r);
    assert_true(fabs(r->util - 0.5988) < 1e-12);
    assert_null(find(&s, GS_UTIL_GPU_UTIL, 0, -1, NULL));
    /* a second scrape appends to the same set */
    read_text_file(&s, "h100-8gpu-Hostname.prom");
    assert_int_equal(s.n, 18);
    assert_string_equal(s.v[17].node, "gpu-node-a");
    gs_util_set_reset(&s);
    assert_int_equal(s.n, 0);
    assert_int_equal(s.series, 0);
    gs_util_set_free(&s);
}

static void test_mig(void **state)
{
    (void)state;
    gs_util_set s;
    gs_util_set_init(&s);
    read_text_file(&s, "a100-mig-Hostname.prom");
    /* GPU_UTIL only for the whole GPU 1; GR_ENGINE_ACTIVE for three instances and GPU 1 */
    assert_int_equal(s.n, 5);
    const gs_util_sample *g = find(&s, GS_UTIL_GR_ENGINE_ACTIVE, 0, 5, NULL);
    assert_non_null(g);
    assert_string_equal(g->mig_profile, "2g.20gb");
    assert_string_equal(g->node, "gpu-node-mig");
    assert_string_equal(g->uuid, "GPU-c0ffee00-4d1c-1000-9e2a-6c1f0b7d3a00");
    assert_true(fabs(g->util - 0.412345) < 1e-12);
    g = find(&s, GS_UTIL_GR_ENGINE_ACTIVE, 0, 13, NULL);
    assert_non_null(g);
    assert_string_equal(g->mig_profile, "1g.10gb");
    assert_true(g->util == 0);
    assert_non_null(find(&s, GS_UTIL_GR_ENGINE_ACTIVE, 0, 1, NULL));
    assert_null(find(&s, GS_UTIL_GPU_UTIL, 0, 1, NULL));
    g = find(&s, GS_UTIL_GR_ENGINE_ACTIVE, 1, -1, NULL);
    assert_non_null(g);
    assert_string_equal(g->mig_profile, "");
    assert_true(fabs(g->util - 0.88) < 1e-12);
    gs_util_set_free(&s);
}

static void test_pod_mapping(void **state)
{
    (void)state;
    gs_util_set s;
    gs_util_set_init(&s);
    read_text_file(&s, "a10g-podmap-hostname.prom");
    assert_int_equal(s.n, 10); /* 5 series of each family: GPU 1 shared by two pods */
    const gs_util_sample *x = find(&s, GS_UTIL_GPU_UTIL, 0, -1, NULL);
    assert_non_null(x);
    assert_string_equal(x->ns, "ml-team");
    assert_string_equal(x->pod, "train-llm-0");
    assert_string_equal(x->container, "trainer");
    assert_true(x->util == 0);
    const gs_util_sample *a = find(&s, GS_UTIL_GPU_UTIL, 1, -1, "chat-7f9c-abcde");
    const gs_util_sample *b = find(&s, GS_UTIL_GPU_UTIL, 1, -1, "chat-7f9c-fghij");
    assert_non_null(a);
    assert_non_null(b);
    /* a shared GPU: each pod gets the whole GPU's value, not its own */
    assert_true(a->util == b->util);
    assert_string_equal(a->uuid, b->uuid);
    x = find(&s, GS_UTIL_GPU_UTIL, 3, -1, NULL);
    assert_non_null(x);
    assert_string_equal(x->pod, "");
    assert_string_equal(x->node, "gpu-node-c");
    gs_util_set_free(&s);
}

static void test_query_json(void **state)
{
    (void)state;
    size_t len;
    char *d = fixture("query.json", &len);
    gs_util_set s;
    gs_util_set_init(&s);
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_util_parse_query_json(&s, "query.json", d, len, GS_UTIL_NONE, NULL, &err), 0);
    assert_int_equal(s.series, 4);
    assert_int_equal(s.n, 3); /* FB_USED skipped */
    const gs_util_sample *x = find(&s, GS_UTIL_GPU_UTIL, 0, -1, NULL);
    assert_non_null(x);
    /* exported_* (the workload) win over pod/namespace (the exporter's own pod) */
    assert_string_equal(x->pod, "train-llm-0");
    assert_string_equal(x->ns, "ml-team");
    assert_string_equal(x->container, "trainer");
    assert_string_equal(x->node, "gpu-node-a");
    assert_true(x->ts_ms == 1764632061337);
    assert_int_equal(x->line, 1);
    x = find(&s, GS_UTIL_GPU_UTIL, 1, -1, NULL);
    assert_non_null(x);
    assert_string_equal(x->pod, "nvidia-dcgm-exporter-x7k2p");
    assert_true(fabs(x->util - 0.97) < 1e-12);
    x = find(&s, GS_UTIL_GR_ENGINE_ACTIVE, 0, 13, NULL);
    assert_non_null(x);
    assert_string_equal(x->node, "gpu-node-mig");
    assert_string_equal(x->mig_profile, "1g.10gb");
    assert_string_equal(x->ns, "research");
    assert_true(fabs(x->util - 0.012) < 1e-12);
    free(d);

    /* a query that drops __name__: the caller says which family */
    const char *agg = "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
                      "{\"metric\":{\"Hostname\":\"n1\",\"gpu\":\"3\"},\"value\":[1700000000,\"4.5\"]}]}}";
    gs_util_set_reset(&s);
    assert_int_equal(gs_util_parse_query_json(&s, "q", agg, strlen(agg), GS_UTIL_NONE, NULL, &err), 0);
    assert_int_equal(s.n, 0);
    assert_int_equal(gs_util_parse_query_json(&s, "q", agg, strlen(agg), GS_UTIL_GPU_UTIL, NULL, &err), 0);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.v[0].gpu, 3);
    assert_true(fabs(s.v[0].util - 0.045) < 1e-12);
    assert_true(s.v[0].ts_ms == 1700000000000);
    gs_util_set_free(&s);
}

static void expect_json_error(const char *doc, gs_code code, int line, int col, const char *needle)
{
    gs_util_set s;
    gs_util_set_init(&s);
    gs_error err;
    gs_error_clear(&err);
    int rc = gs_util_parse_query_json(&s, "q.json", doc, strlen(doc), GS_UTIL_GPU_UTIL, NULL, &err);
    if (rc == 0 || err.code != code || err.line != line || err.col != col || !strstr(err.msg, needle))
        print_error("%s -> rc %d code %d %d:%d %s\n", doc, rc, err.code, err.line, err.col, err.msg);
    assert_int_equal(rc, -1);
    assert_int_equal(err.code, code);
    assert_int_equal(err.line, line);
    assert_int_equal(err.col, col);
    assert_non_null(strstr(err.msg, needle));
    assert_int_equal(s.n, 0);
    gs_util_set_free(&s);
}

static void test_query_json_errors(void **state)
{
    (void)state;
    expect_json_error("{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"parse error at char 5\"}",
                      GS_ERR_INVALID, 1, 11, "bad_data: parse error at char 5");
    expect_json_error("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}",
                      GS_ERR_INVALID, 1, 42, "expected \"vector\"");
    expect_json_error("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[\n"
                      "{\"metric\":{\"gpu\":\"0\"},\"value\":[1,\"0\"]},\n"
                      "{\"metric\":{\"gpu\":\"x\"},\"value\":[1,\"0\"]}]}}",
                      GS_ERR_INVALID, 3, 18, "data.result[1].metric.gpu");
    expect_json_error("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[\n"
                      "{\"metric\":{},\"value\":[1,0]}]}}",
                      GS_ERR_INVALID, 2, 22, "[timestamp, \"value\"]");
    expect_json_error("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[\n"
                      "{\"metric\":{},\"value\":[1,\"zero\"]}]}}",
                      GS_ERR_INVALID, 2, 25, "bad value \"zero\"");
    expect_json_error("{\"status\":\"success\",\n \"data\":{\"resultType\":\"vector\",\"result\":[}",
                      GS_ERR_PARSE, 2, 42, "unexpected character");
}

/* Parse text; on success the samples as "metric/gpu/gi/util;" with 3 decimals. */
static int text(const char *t, const gs_util_limits *lim, char *out, size_t cap, gs_error *err)
{
    gs_util_set s;
    gs_util_set_init(&s);
    gs_error_clear(err);
    int rc = gs_util_parse_promtext(&s, "t.prom", t, strlen(t), lim, err);
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < s.n && rc == 0; i++)
        o += (size_t)snprintf(out + o, cap - o, "%d/%d/%d/%.3f/%s;", s.v[i].metric, s.v[i].gpu,
                              s.v[i].mig_instance, s.v[i].util, s.v[i].node);
    if (rc != 0)
        assert_int_equal(s.n, 0);
    gs_util_set_free(&s);
    return rc;
}

static void test_text_grammar(void **state)
{
    (void)state;
    char out[512];
    gs_error err;
    /* blanks around tokens, a trailing comma, escapes, timestamps, comments, empty label sets */
    const char *t = "# a plain comment\n"
                    "\n"
                    "   \t\n"
                    "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %). a \\\\ and \\n\n"
                    "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
                    "DCGM_FI_DEV_GPU_UTIL { gpu = \"1\" , Hostname=\"a\\\"b\\\\c\\nd\", } 50 1700000000000\n"
                    "DCGM_FI_DEV_GPU_UTIL{gpu=\"2\",hostname=\"h\"}25\n"
                    "DCGM_FI_DEV_GPU_UTIL{} +Inf\n"
                    "DCGM_FI_DEV_GPU_UTIL -1\n"
                    "DCGM_FI_DEV_GPU_UTIL 1e2\n"
                    "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"0\",GPU_I_ID=\"7\",node=\"n\"} 1.02 -5\n"
                    "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"0\"} 1.2\n"
                    "other_metric{weird=\"}{,\\\"\"} NaN\n"
                    "other:metric_2 .5e-3";
    assert_int_equal(text(t, NULL, out, sizeof out, &err), 0);
    assert_string_equal(out, "1/1/-1/0.500/a\"b\\c\nd;1/2/-1/0.250/h;1/-1/-1/1.000/;2/0/7/1.000/n;");
}

static void expect_text_error(const char *t, const gs_util_limits *lim, gs_code code, int line,
                              int col, const char *needle)
{
    char out[64];
    gs_error err;
    int rc = text(t, lim, out, sizeof out, &err);
    if (rc == 0 || err.code != code || err.line != line || err.col != col || !strstr(err.msg, needle))
        print_error("%s -> rc %d code %d %d:%d %s\n", t, rc, err.code, err.line, err.col, err.msg);
    assert_int_equal(rc, -1);
    assert_int_equal(err.code, code);
    assert_int_equal(err.line, line);
    assert_int_equal(err.col, col);
    assert_non_null(strstr(err.msg, needle));
    assert_string_equal(err.file, "t.prom");
}

static void test_text_errors(void **state)
{
    (void)state;
    expect_text_error("x 1\n{a=\"b\"} 1\n", NULL, GS_ERR_PARSE, 2, 1, "expected a metric name");
    expect_text_error("x{a=\"b} 1\n", NULL, GS_ERR_PARSE, 1, 5, "label value not closed");
    expect_text_error("x{a=\"\\t\"} 1\n", NULL, GS_ERR_PARSE, 1, 6, "bad escape");
    expect_text_error("x{a=b} 1\n", NULL, GS_ERR_PARSE, 1, 5, "expected '\"'");
    expect_text_error("x{a\"b\"} 1\n", NULL, GS_ERR_PARSE, 1, 4, "expected '='");
    expect_text_error("x{a=\"b\" c=\"d\"} 1\n", NULL, GS_ERR_PARSE, 1, 9, "expected ',' or '}'");
    expect_text_error("x{a=\"b\",", NULL, GS_ERR_PARSE, 1, 9, "not closed with '}'");
    expect_text_error("x{9=\"b\"} 1", NULL, GS_ERR_PARSE, 1, 3, "expected a label name");
    expect_text_error("x{a=\"b\"}\n", NULL, GS_ERR_PARSE, 1, 9, "expected a value");
    expect_text_error("x 1O\n", NULL, GS_ERR_PARSE, 1, 3, "bad value '1O'");
    expect_text_error("x 1 12.5\n", NULL, GS_ERR_PARSE, 1, 5, "bad timestamp");
    expect_text_error("x 1 12 z\n", NULL, GS_ERR_PARSE, 1, 8, "unexpected text after the timestamp");
    expect_text_error("x 1\r\n", NULL, GS_ERR_PARSE, 1, 4, "carriage return");
    expect_text_error("# TYPE x gauge\n# TYPE x counter\n", NULL, GS_ERR_PARSE, 2, 8, "second TYPE");
    expect_text_error("# TYPE x gauges\n", NULL, GS_ERR_PARSE, 1, 10, "expected counter, gauge");
    expect_text_error("# TYPE x gauge extra\n", NULL, GS_ERR_PARSE, 1, 16, "after the metric type");
    expect_text_error("# HELP x a \\t b\n", NULL, GS_ERR_PARSE, 1, 12, "bad escape in HELP");
    expect_text_error("# HELP 1x b\n", NULL, GS_ERR_PARSE, 1, 8, "expected a metric name");
    expect_text_error("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",gpu=\"1\"} 1\n", NULL, GS_ERR_PARSE, 1, 30,
                      "label gpu given twice");
    expect_text_error("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",GPU_I_ID=\"a\"} 1\n", NULL, GS_ERR_INVALID, 1,
                      40, "GPU_I_ID");
    {
        gs_util_set s;
        gs_util_set_init(&s);
        gs_error err;
        gs_error_clear(&err);
        assert_int_equal(gs_util_parse_promtext(&s, "t.prom", "x 1\nx\0 1\n", 9, NULL, &err), -1);
        assert_int_equal(err.line, 2);
        assert_int_equal(err.col, 2);
        assert_non_null(strstr(err.msg, "NUL byte"));
        gs_error_clear(&err);
        assert_int_equal(gs_util_parse_promtext(&s, "t.prom", "x{a=\"\xc3\xa9\xff\"} 1\n", 12, NULL, &err), -1);
        assert_int_equal(err.line, 1);
        assert_int_equal(err.col, 8);
        assert_non_null(strstr(err.msg, "invalid UTF-8"));
        gs_util_set_free(&s);
    }
    gs_util_limits lim = {.max_line = 16, .max_labels = 2, .max_series = 2};
    expect_text_error("x 1\nx{a=\"0123456789\"} 1\n", &lim, GS_ERR_LIMIT, 2, 17, "longer than 16");
    gs_util_limits lim2 = {.max_labels = 2};
    expect_text_error("x{a=\"\",b=\"\",c=\"\"} 1\n", &lim2, GS_ERR_LIMIT, 1, 13, "more than 2 labels");
    expect_text_error("x 1\ny 2\nz 3\n", &lim, GS_ERR_LIMIT, 3, 1, "more than 2 series");
}

static void test_malformed_fixture_keeps_set(void **state)
{
    (void)state;
    gs_util_set s;
    gs_util_set_init(&s);
    read_text_file(&s, "l4-2gpu-hostname.prom");
    size_t n = s.n;
    uint64_t series = s.series, dropped = s.dropped;
    size_t len;
    char *d = fixture("malformed-cut.prom", &len);
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_util_parse_promtext(&s, "malformed-cut.prom", d, len, NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_PARSE);
    assert_int_equal(err.line, 28);
    assert_int_equal(err.col, 135);
    assert_non_null(strstr(err.msg, "label value not closed"));
    /* the set is as it was: the samples read before the bad line are taken back */
    assert_int_equal(s.n, n);
    assert_int_equal(s.series, series);
    assert_int_equal(s.dropped, dropped);
    free(d);
    gs_util_set_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_gpus_Hostname),
        cmocka_unit_test(test_hostname_and_blanks),
        cmocka_unit_test(test_mig),
        cmocka_unit_test(test_pod_mapping),
        cmocka_unit_test(test_query_json),
        cmocka_unit_test(test_query_json_errors),
        cmocka_unit_test(test_text_grammar),
        cmocka_unit_test(test_text_errors),
        cmocka_unit_test(test_malformed_fixture_keeps_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
