/* test_json.c - the library's JSON reader (lib/util/json.c): values, strictness, positions,
 * limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "util/json_int.h"

static int parse(const char *text, const gs_json_limits *lim, gs_arena *a, gs_jv *out, gs_error *err)
{
    gs_error_clear(err);
    return gs_json_parse("t.json", 1, text, strlen(text), lim, a, out, err);
}

static void test_values(void **state)
{
    (void)state;
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_jv v;
    gs_error err;
    assert_int_equal(parse(" {\"a\": [1, -2.5e3, true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\"],\n"
                           "  \"b\": {}, \"c\": [], \"\": 0}\n",
                           NULL, &a, &v, &err),
                     0);
    assert_int_equal(v.t, GS_JOBJ);
    assert_int_equal(v.n, 4);
    assert_int_equal(v.off, 1);
    const gs_jv *arr = gs_json_get(&v, "a");
    assert_non_null(arr);
    assert_int_equal(arr->t, GS_JARR);
    assert_int_equal(arr->n, 6);
    assert_int_equal(arr->kids[0].t, GS_JNUM);
    assert_string_equal(arr->kids[0].s, "1");
    assert_string_equal(arr->kids[1].s, "-2.5e3");
    assert_true(arr->kids[2].t == GS_JBOOL && arr->kids[2].b);
    assert_true(arr->kids[3].t == GS_JBOOL && !arr->kids[3].b);
    assert_int_equal(arr->kids[4].t, GS_JNULL);
    assert_int_equal(arr->kids[5].t, GS_JSTR);
    assert_string_equal(arr->kids[5].s, "x\xc3\xa9\xf0\x9f\x98\x80\n");
    assert_int_equal(arr->kids[5].n, 8);
    assert_int_equal(gs_json_get(&v, "b")->t, GS_JOBJ);
    assert_int_equal(gs_json_get(&v, "b")->n, 0);
    assert_int_equal(gs_json_get(&v, "c")->t, GS_JARR);
    assert_non_null(gs_json_get(&v, ""));
    assert_null(gs_json_get(&v, "zz"));
    assert_null(gs_json_get(arr, "a"));
    assert_null(gs_json_get(NULL, "a"));
    /* positions: "b" value is on line 2 */
    int line, col;
    gs_json_where("", 1, NULL, &line, &col);
    const char *text = " {\"a\": 1,\n  \"b\": {}}";
    assert_int_equal(parse(text, NULL, &a, &v, &err), 0);
    gs_json_where(text, 1, gs_json_get(&v, "b"), &line, &col);
    assert_int_equal(line, 2);
    assert_int_equal(col, 8);
    gs_json_where(text, 10, gs_json_get(&v, "b"), &line, &col);
    assert_int_equal(line, 11);
    /* scalars at the top level, with surrounding whitespace */
    assert_int_equal(parse("\t\"s\"\r\n", NULL, &a, &v, &err), 0);
    assert_int_equal(v.t, GS_JSTR);
    assert_int_equal(parse("0", NULL, &a, &v, &err), 0);
    assert_int_equal(parse("-0.0E+1", NULL, &a, &v, &err), 0);
    gs_arena_free(&a);
}

static void test_errors(void **state)
{
    (void)state;
    const struct {
        const char *text;
        int line, col;
        const char *msg;
    } cases[] = {
        {"", 1, 1, "expected a value"},
        {"   ", 1, 4, "expected a value"},
        {"{\"a\": 1,}", 1, 9, "expected a quoted key"},
        {"[1, 2,]", 1, 7, "unexpected character ']'"},
        {"[1 2]", 1, 4, "expected ',' or ']'"},
        {"{\"a\" 1}", 1, 6, "expected ':'"},
        {"{'a': 1}", 1, 2, "expected a quoted key"},
        {"\"abc", 1, 1, "unterminated string"},
        {"\"a\tb\"", 1, 3, "control character"},
        {"\"\\x\"", 1, 2, "bad escape \\x"},
        {"\"\\u12\"", 1, 2, "bad \\u escape"},
        {"\"\\ud800\"", 1, 2, "unpaired UTF-16 surrogate"},
        {"\"\\udc00\"", 1, 2, "unpaired UTF-16 surrogate"},
        {"\"\\u0000\"", 1, 2, "\\u0000 is not allowed"},
        /* the grammar is jscan's (gs_js_str_end, gs_js_unescape_why, gs_js_number,
         * gs_js_literal); the wording and the place stay this reader's */
        {"[\"ab\\", 1, 2, "unterminated string"},
        {"[\"a\\\n\"]", 1, 5, "control character"},
        {"\"x\\ud83dz\"", 1, 3, "unpaired UTF-16 surrogate"},
        {"\"\\ud83d\\u12x4\"", 1, 2, "unpaired UTF-16 surrogate"},
        {"\"ok\\n\\q\"", 1, 6, "bad escape \\q"},
        {"[\"a\", \"\\u00e9\\u0000\"]", 1, 14, "\\u0000 is not allowed"},
        {"-", 1, 1, "bad number"},
        {"[-x]", 1, 2, "bad number"},
        {"-01", 1, 1, "leading zero"},
        {"1.e5", 1, 1, "digits expected after '.'"},
        {"1e+", 1, 1, "exponent digits expected"},
        {"[0.5E-x]", 1, 2, "exponent digits expected"},
        {"truex", 1, 5, "text after the JSON value"},
        {"[nulL]", 1, 2, "unexpected character 'n'"},
        {"01", 1, 1, "leading zero"},
        {"+1", 1, 1, "unexpected character '+'"},
        {"1.", 1, 1, "digits expected after '.'"},
        {"1e", 1, 1, "exponent digits expected"},
        {".5", 1, 1, "unexpected character '.'"},
        {"tru", 1, 1, "unexpected character 't'"},
        {"nul", 1, 1, "unexpected character 'n'"},
        {"[1] x", 1, 5, "text after the JSON value"},
        {"{} {}", 1, 4, "text after the JSON value"},
        {"// c\n1", 1, 1, "unexpected character '/'"},
        {"[\n\n  1,\n  \"\xc3\x28\"]", 4, 4, "not valid UTF-8"},
        {"[\"\xe9\xbe\"]", 1, 3, "not valid UTF-8"},
        {"1234567890123456789012345678901234567890123456789012345678901234567890", 1, 1,
         "number longer than 64"},
    };
    gs_arena a;
    gs_arena_init(&a, 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gs_jv v;
        gs_error err;
        v.t = GS_JARR;
        if (parse(cases[i].text, NULL, &a, &v, &err) != -1 || err.code != GS_ERR_PARSE ||
            err.line != cases[i].line || err.col != cases[i].col || !strstr(err.msg, cases[i].msg))
            fail_msg("case %zu %s: got %d:%d %s", i, cases[i].text, err.line, err.col, err.msg);
        assert_string_equal(err.file, "t.json");
        assert_int_equal(v.t, GS_JNULL); /* nothing half-built is handed out */
    }
    gs_arena_free(&a);
}

static void test_limits(void **state)
{
    (void)state;
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_jv v;
    gs_error err;
    /* depth: the default bounds hostile nesting without recursing further */
    char deep[100001];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = 0;
    assert_int_equal(parse(deep, NULL, &a, &v, &err), -1);
    assert_non_null(strstr(err.msg, "nesting deeper than 64 levels"));
    assert_int_equal(err.col, 65);
    gs_json_limits lim = {3, 2, 4, true};
    assert_int_equal(parse("[[[]]]", &lim, &a, &v, &err), 0);
    assert_int_equal(parse("[[[[]]]]", &lim, &a, &v, &err), -1);
    assert_non_null(strstr(err.msg, "nesting deeper than 3"));
    /* items */
    assert_int_equal(parse("[1,2]", &lim, &a, &v, &err), 0);
    assert_int_equal(parse("[1,2,3]", &lim, &a, &v, &err), -1);
    assert_non_null(strstr(err.msg, "more than 2 items"));
    assert_int_equal(parse("{\"a\":1,\"b\":2,\"c\":3}", &lim, &a, &v, &err), -1);
    /* strings, counted after decoding */
    assert_int_equal(parse("\"abcd\"", &lim, &a, &v, &err), 0);
    assert_int_equal(parse("\"\\u00e9\\u00e9\"", &lim, &a, &v, &err), 0);
    assert_int_equal(parse("\"abcde\"", &lim, &a, &v, &err), -1);
    assert_non_null(strstr(err.msg, "longer than 4 bytes"));
    assert_int_equal(parse("\"\\u00e9\\u00e9\\u00e9\"", &lim, &a, &v, &err), -1);
    /* duplicate keys: refused when asked, the first one wins otherwise */
    assert_int_equal(parse("{\"a\":1,\n\"a\":2}", &lim, &a, &v, &err), -1);
    assert_non_null(strstr(err.msg, "duplicate key \"a\""));
    assert_int_equal(err.line, 2);
    assert_int_equal(err.col, 1);
    /* a large object is checked when it closes; the error names the first repeat */
    char big[2000];
    size_t o = 0;
    o += (size_t)snprintf(big + o, sizeof big - o, "{");
    for (int i = 0; i < 40; i++)
        o += (size_t)snprintf(big + o, sizeof big - o, "%s\"k%d\":%d", i ? "," : "", i == 30 ? 7 : i == 35 ? 3 : i, i);
    snprintf(big + o, sizeof big - o, "}");
    gs_json_limits uniq = {0, 0, 0, true};
    assert_int_equal(parse(big, &uniq, &a, &v, &err), -1);
    assert_non_null(strstr(err.msg, "duplicate key \"k7\""));
    assert_int_equal(err.col, (int)(strstr(big, "\"k7\":30") - big) + 1);
    uniq.unique_keys = false;
    assert_int_equal(parse(big, &uniq, &a, &v, &err), 0);
    assert_int_equal(v.n, 40);
    assert_int_equal(parse("{\"a\":1,\"a\":2}", NULL, &a, &v, &err), 0);
    assert_string_equal(gs_json_get(&v, "a")->s, "1");
    gs_arena_free(&a);
}

static void test_type_names(void **state)
{
    (void)state;
    assert_string_equal(gs_json_type_name(GS_JOBJ), "an object");
    assert_string_equal(gs_json_type_name(GS_JARR), "an array");
    assert_string_equal(gs_json_type_name(GS_JSTR), "a string");
    assert_string_equal(gs_json_type_name(GS_JNULL), "null");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_type_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
