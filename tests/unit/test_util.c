/* test_util.c - arena, strbuf, intern, RNG, strict parsers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gpusched/util.h"

static void test_arena(void **state)
{
    (void)state;
    gs_arena a;
    gs_arena_init(&a, 1024);
    char *s = gs_arena_strdup(&a, "hello");
    assert_string_equal(s, "hello");
    void *big = gs_arena_alloc(&a, 10000);
    assert_non_null(big);
    char *p = gs_arena_printf(&a, "%d-%s", 42, "x");
    assert_string_equal(p, "42-x");
    assert_string_equal(s, "hello");
    gs_arena_reset(&a);
    assert_non_null(gs_arena_alloc(&a, 8));
    gs_arena_free(&a);
}

static void test_strbuf_json(void **state)
{
    (void)state;
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_strbuf_json_str(&sb, "a\"b\\c\n\x01");
    assert_string_equal(gs_strbuf_cstr(&sb), "\"a\\\"b\\\\c\\n\\u0001\"");
    gs_strbuf_reset(&sb);
    for (int i = 0; i < 1000; i++)
        gs_strbuf_printf(&sb, "%d,", i);
    assert_true(sb.len > 3000);
    gs_strbuf_free(&sb);
}

static void test_intern(void **state)
{
    (void)state;
    gs_intern t;
    gs_intern_init(&t);
    char buf[32];
    for (int i = 0; i < 1000; i++) {
        int n = snprintf(buf, sizeof buf, "key-%d", i);
        assert_int_equal(gs_intern_id(&t, buf, (size_t)n), i);
    }
    assert_int_equal(gs_intern_id(&t, "key-7", 5), 7);
    assert_int_equal(gs_intern_find(&t, "nope", 4), -1);
    assert_string_equal(gs_intern_str(&t, 999), "key-999");
    gs_intern_free(&t);
}

static void test_rng(void **state)
{
    (void)state;
    gs_rng a, b;
    gs_rng_seed(&a, 42);
    gs_rng_seed(&b, 42);
    for (int i = 0; i < 100; i++)
        assert_int_equal(gs_rng_next(&a), gs_rng_next(&b));
    unsigned hist[5] = {0};
    for (int i = 0; i < 50000; i++)
        hist[gs_rng_below(&a, 5)]++;
    for (int i = 0; i < 5; i++)
        assert_true(hist[i] > 9000 && hist[i] < 11000);
}

static void test_parse_i64(void **state)
{
    (void)state;
    int64_t v;
    assert_int_equal(gs_parse_i64("123", 3, &v), 0);
    assert_int_equal(v, 123);
    assert_int_equal(gs_parse_i64("-9223372036854775808", 20, &v), 0);
    assert_true(v == INT64_MIN);
    assert_int_equal(gs_parse_i64("9223372036854775808", 19, &v), -1);
    assert_int_equal(gs_parse_i64("1 ", 2, &v), -1);
    assert_int_equal(gs_parse_i64("", 0, &v), -1);
    assert_int_equal(gs_parse_i64("-", 1, &v), -1);
}

static void test_rfc3339(void **state)
{
    (void)state;
    int64_t t;
    assert_int_equal(gs_parse_rfc3339("1970-01-01T00:00:00Z", &t), 0);
    assert_int_equal(t, 0);
    assert_int_equal(gs_parse_rfc3339("2024-05-01T10:00:00Z", &t), 0);
    assert_int_equal(t, 1714557600);
    assert_int_equal(gs_parse_rfc3339("2024-05-01T12:00:00.123+02:00", &t), 0);
    assert_int_equal(t, 1714557600);
    assert_int_equal(gs_parse_rfc3339("2024-05-01", &t), -1);
    int64_t d;
    assert_int_equal(gs_parse_duration("1h30m", &d), 0);
    assert_int_equal(d, 5400);
    assert_int_equal(gs_parse_duration("90", &d), 0);
    assert_int_equal(d, 90);
    assert_int_equal(gs_parse_duration("5x", &d), -1);
}

/* Well-formed UTF-8 (RFC 3629): the offset of the first bad byte. */
static void test_utf8(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        size_t bad;
    } v[] = {
        {"plain ascii", 11},
        {"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", 14}, /* 2-, 3-, 4-byte forms */
        {"a\xC0\xAF", 1},                /* overlong '/' */
        {"\xE0\x80\xAF", 0},            /* overlong, 3 bytes */
        {"\xF0\x80\x80\xAF", 0},        /* overlong, 4 bytes */
        {"ab\xED\xA0\x80", 2},           /* surrogate U+D800 */
        {"\xF4\x90\x80\x80", 0},        /* above U+10FFFF */
        {"x\xE2\x82", 1},                /* truncated */
        {"x\xE2(\xAC", 1},               /* not a continuation byte */
        {"\x80", 0},                      /* lone continuation byte */
        {"\xF8\x88\x80\x80\x80", 0},   /* 5-byte form */
        {"\xEF\xBF\xBF\xF4\x8F\xBF\xBF", 7}, /* U+FFFF and U+10FFFF are fine */
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        assert_int_equal(gs_utf8_invalid_at(v[i].s, strlen(v[i].s)), v[i].bad);
    assert_int_equal(gs_utf8_invalid_at(NULL, 0), 0);
    int line, col;
    const char *t = "ab\n\xC3\xA9t\xC3\xA9\nz";
    gs_text_line_col(t, 0, &line, &col);
    assert_int_equal(line, 1);
    assert_int_equal(col, 1);
    gs_text_line_col(t, 6, &line, &col); /* the second \xC3: line 2, after "et" */
    assert_int_equal(line, 2);
    assert_int_equal(col, 3);
    gs_text_line_col(t, 9, &line, &col);
    assert_int_equal(line, 3);
    assert_int_equal(col, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arena),     cmocka_unit_test(test_strbuf_json),
        cmocka_unit_test(test_intern),    cmocka_unit_test(test_rng),
        cmocka_unit_test(test_parse_i64), cmocka_unit_test(test_rfc3339),
        cmocka_unit_test(test_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
