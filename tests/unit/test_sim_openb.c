/* test_sim_openb.c - the strict openb CSV reader: header-driven columns, quoting, line
 * endings, value checks with file:line:col and the column name, bounds, and rollback of a
 * failed file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gpusched/sim.h"

static int parse_nodes(gs_openb *t, const char *csv, gs_error *err)
{
    return gs_openb_parse_nodes(t, "nodes.csv", csv, strlen(csv), NULL, err);
}

static int parse_pods(gs_openb *t, const char *csv, gs_error *err)
{
    return gs_openb_parse_pods(t, "pods.csv", csv, strlen(csv), NULL, err);
}

static void test_nodes_basic(void **state)
{
    (void)state;
    gs_openb t;
    gs_openb_init(&t);
    gs_error err;
    gs_error_clear(&err);
    const char *csv = "sn,cpu_milli,memory_mib,gpu,model\n"
                      "n1,64000,262144,2,P100\r\n"
                      "\n"
                      "n0,32000,131072,0,\n"
                      "\"n,2\",96000,393216,8,\"G2\"";
    assert_int_equal(parse_nodes(&t, csv, &err), 0);
    assert_int_equal(t.nodes.n, 3);
    assert_string_equal(t.nodes.v[0].name, "n1");
    assert_int_equal(t.nodes.v[0].cpu_milli, 64000);
    assert_int_equal(t.nodes.v[0].memory_mib, 262144);
    assert_int_equal(t.nodes.v[0].gpus, 2);
    assert_string_equal(t.nodes.v[0].model, "P100");
    assert_int_equal(t.nodes.v[0].src.line, 2);
    assert_string_equal(t.nodes.v[0].src.file, "nodes.csv");
    assert_string_equal(t.nodes.v[1].model, "");
    assert_int_equal(t.nodes.v[1].src.line, 4);
    assert_string_equal(t.nodes.v[2].name, "n,2");
    assert_string_equal(t.nodes.v[2].model, "G2");
    gs_openb_free(&t);
}

static void test_header_driven(void **state)
{
    (void)state;
    gs_openb t;
    gs_openb_init(&t);
    gs_error err;
    gs_error_clear(&err);
    /* columns in another order, an unknown column, a BOM, no model column */
    const char *csv = "\xEF\xBB\xBFgpu,extra,sn,memory_mib,cpu_milli\n4,zzz,a,1024,8000\n";
    assert_int_equal(parse_nodes(&t, csv, &err), 0);
    assert_int_equal(t.nodes.n, 1);
    assert_string_equal(t.nodes.v[0].name, "a");
    assert_int_equal(t.nodes.v[0].gpus, 4);
    assert_int_equal(t.nodes.v[0].cpu_milli, 8000);
    assert_string_equal(t.nodes.v[0].model, "");
    gs_openb_free(&t);
}

static void test_pods_full_and_short(void **state)
{
    (void)state;
    gs_openb t;
    gs_openb_init(&t);
    gs_error err;
    gs_error_clear(&err);
    const char *full =
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "p0,12000,16384,1,1000,,LS,Running,0,12537496,0\n"
        "p1,6000,12288,1,460,V100M16|V100M32,BE,Pending,427061,12902960,\n"
        "p2,88000,0,8,1000,\"G2\",Burstable,Failed,,,\n";
    assert_int_equal(parse_pods(&t, full, &err), 0);
    assert_int_equal(t.pods.n, 3);
    const gs_openb_pod *p = &t.pods.v[1];
    assert_string_equal(p->name, "p1");
    assert_int_equal(p->gpu_milli, 460);
    assert_string_equal(p->gpu_spec, "V100M16|V100M32");
    assert_string_equal(p->qos, "BE");
    assert_string_equal(p->phase, "Pending");
    assert_true(p->has_creation);
    assert_int_equal(p->creation_time, 427061);
    assert_true(p->has_deletion);
    assert_false(p->has_scheduled);
    assert_false(t.pods.v[2].has_creation);
    assert_int_equal(t.pods.v[2].memory_mib, 0);
    /* the multigpu CSVs have only the first five columns */
    const char *shortcsv = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nq0,1000,10,2,1000\n";
    assert_int_equal(parse_pods(&t, shortcsv, &err), 0);
    assert_int_equal(t.pods.n, 4);
    assert_string_equal(t.pods.v[3].gpu_spec, "");
    assert_string_equal(t.pods.v[3].qos, "");
    assert_false(t.pods.v[3].has_creation);
    gs_openb_free(&t);
}

/* A failing parse: code, line, column and a message naming the column. */
static void expect_error(int (*parse)(gs_openb *, const char *, gs_error *), const char *csv,
                         gs_code code, int line, int col, const char *needle)
{
    gs_openb t;
    gs_openb_init(&t);
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(parse(&t, csv, &err), -1);
    if (err.code != code || err.line != line || err.col != col || !strstr(err.msg, needle)) {
        char buf[1024];
        gs_error_format(&err, buf, sizeof buf);
        fail_msg("for %s: got %s (code %d line %d col %d), wanted code %d at %d:%d with \"%s\"",
                 csv, buf, err.code, err.line, err.col, code, line, col, needle);
    }
    assert_string_equal(err.file, parse == parse_nodes ? "nodes.csv" : "pods.csv");
    assert_int_equal(t.nodes.n + t.pods.n, 0); /* nothing appended */
    gs_openb_free(&t);
}

static void test_errors(void **state)
{
    (void)state;
    const char *H = "sn,cpu_milli,memory_mib,gpu,model\n";
    char buf[512];
    snprintf(buf, sizeof buf, "%sn1,64000,262144,2,P100\nn2,abc,1,1,T4\n", H);
    expect_error(parse_nodes, buf, GS_ERR_INVALID, 3, 4, "column cpu_milli: expected an integer, got \"abc\"");
    snprintf(buf, sizeof buf, "%sn1,-5,1,1,T4\n", H);
    expect_error(parse_nodes, buf, GS_ERR_INVALID, 2, 4, "column cpu_milli: -5 is out of range");
    snprintf(buf, sizeof buf, "%sn1,5, 1,1,T4\n", H);
    expect_error(parse_nodes, buf, GS_ERR_INVALID, 2, 6, "column memory_mib");
    snprintf(buf, sizeof buf, "%sn1,5,1,,T4\n", H);
    expect_error(parse_nodes, buf, GS_ERR_INVALID, 2, 8, "column gpu: empty value");
    snprintf(buf, sizeof buf, "%sn1,5,1,17,T4\n", H);
    expect_error(parse_nodes, buf, GS_ERR_LIMIT, 2, 8, "at most 16");
    snprintf(buf, sizeof buf, "%sn1,5,1,1\n", H);
    expect_error(parse_nodes, buf, GS_ERR_PARSE, 2, 1, "row has 4 fields, the header has 5");
    snprintf(buf, sizeof buf, "%sn1,5,1,1,T4\nn1,5,1,1,T4\n", H);
    expect_error(parse_nodes, buf, GS_ERR_INVALID, 3, 1, "duplicate name \"n1\"");
    snprintf(buf, sizeof buf, "%s,5,1,1,T4\n", H);
    expect_error(parse_nodes, buf, GS_ERR_INVALID, 2, 1, "column sn: empty name");
    expect_error(parse_nodes, "sn,cpu_milli,gpu,model\nn1,1,1,T4\n", GS_ERR_INVALID, 1, 1,
                 "missing column memory_mib");
    expect_error(parse_nodes, "sn,cpu_milli,memory_mib,gpu,gpu\n", GS_ERR_INVALID, 1, 29,
                 "column gpu appears twice");
    expect_error(parse_nodes, "", GS_ERR_PARSE, 1, 1, "empty file");
    /* CSV syntax */
    snprintf(buf, sizeof buf, "%sn1,5,1,1,\"T4\n", H);
    expect_error(parse_nodes, buf, GS_ERR_PARSE, 2, 10, "unterminated quoted field");
    snprintf(buf, sizeof buf, "%sn1,5,1,1,T\"4\n", H);
    expect_error(parse_nodes, buf, GS_ERR_PARSE, 2, 11, "quote inside an unquoted field");
    snprintf(buf, sizeof buf, "%sn1,5,1,1,\"T4\"x\n", H);
    expect_error(parse_nodes, buf, GS_ERR_PARSE, 2, 14, "after a closing quote");
    snprintf(buf, sizeof buf, "%sn1,5,1,1,T4\rn2,5,1,1,T4\n", H);
    expect_error(parse_nodes, buf, GS_ERR_PARSE, 2, 12, "carriage return");
    /* a quoted field spanning lines moves the line count */
    snprintf(buf, sizeof buf, "%s\"n\n1\",5,1,1,T4\nn2,x,1,1,T4\n", H);
    expect_error(parse_nodes, buf, GS_ERR_INVALID, 4, 4, "column cpu_milli");
    /* pods */
    const char *P = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time\n";
    snprintf(buf, sizeof buf, "%sp,1000,10,1,500,12x\n", P);
    expect_error(parse_pods, buf, GS_ERR_INVALID, 2, 17, "column creation_time");
    snprintf(buf, sizeof buf, "%sp,1000,10,2000,500,1\n", P);
    expect_error(parse_pods, buf, GS_ERR_INVALID, 2, 11, "column num_gpu: 2000 is out of range");
    expect_error(parse_pods, "name,cpu_milli,memory_mib,num_gpu\n", GS_ERR_INVALID, 1, 1,
                 "missing column gpu_milli");
}

static void test_limits_and_rollback(void **state)
{
    (void)state;
    gs_openb t;
    gs_openb_init(&t);
    gs_error err;
    gs_error_clear(&err);
    gs_openb_limits lim = {0, 2, 10};
    const char *csv = "sn,cpu_milli,memory_mib,gpu\na,1,1,1\nb,1,1,1\nc,1,1,1\n";
    assert_int_equal(gs_openb_parse_nodes(&t, "x", csv, strlen(csv), &lim, &err), -1);
    assert_int_equal(err.code, GS_ERR_LIMIT);
    assert_int_equal(err.line, 4);
    const char *longf = "sn,cpu_milli,memory_mib,gpu\nabcdefghijk,1,1,1\n";
    assert_int_equal(gs_openb_parse_nodes(&t, "x", longf, strlen(longf), &lim, &err), -1);
    assert_int_equal(err.code, GS_ERR_LIMIT);
    assert_non_null(strstr(err.msg, "longer than 10"));
    assert_int_equal(t.nodes.n, 0);
    /* a name from a failed file is not remembered; one from a good file is */
    const char *bad = "sn,cpu_milli,memory_mib,gpu\nn1,1,1,1\nn2,x,1,1\n";
    const char *good = "sn,cpu_milli,memory_mib,gpu\nn1,1,1,1\n";
    assert_int_equal(gs_openb_parse_nodes(&t, "bad", bad, strlen(bad), NULL, &err), -1);
    assert_int_equal(gs_openb_parse_nodes(&t, "good", good, strlen(good), NULL, &err), 0);
    assert_int_equal(t.nodes.n, 1);
    assert_int_equal(gs_openb_parse_nodes(&t, "again", good, strlen(good), NULL, &err), -1);
    assert_non_null(strstr(err.msg, "duplicate name"));
    assert_int_equal(t.nodes.n, 1);
    /* NUL byte */
    const char nul[] = "sn,cpu_milli,memory_mib,gpu\nn\0,1,1,1\n";
    assert_int_equal(gs_openb_parse_nodes(&t, "nul", nul, sizeof nul - 1, NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_PARSE);
    assert_int_equal(err.col, 2);
    /* a missing file */
    assert_int_equal(gs_openb_read_nodes(&t, "/nonexistent/openb.csv", NULL, &err), -1);
    assert_int_equal(err.code, GS_ERR_IO);
    gs_openb_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nodes_basic),
        cmocka_unit_test(test_header_driven),
        cmocka_unit_test(test_pods_full_and_short),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_limits_and_rollback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
