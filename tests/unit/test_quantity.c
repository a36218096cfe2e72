/* test_quantity.c - resource.Quantity parsing, canonical form, rounding and arithmetic,
 * with the vectors of k8s-semantics.md sections 2.1-2.3. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gpusched/quantity.h"

static gs_quantity parse_ok(const char *s)
{
    gs_quantity q;
    gs_error err;
    gs_error_clear(&err);
    int rc = gs_quantity_parse(s, strlen(s), &q, &err);
    if (rc != 0)
        fail_msg("parse of \"%s\" failed: %s", s, err.msg);
    return q;
}

typedef struct vector {
    const char *in;
    const char *canonical;
    gs_qformat fmt; /* format recorded by the parser */
} vector;

static const vector valid_vectors[] = {
    /* section 2.3 examples */
    {"1.5", "1500m", GS_QF_DECIMAL_SI},
    {"0.1", "100m", GS_QF_DECIMAL_SI},
    {"1000M", "1G", GS_QF_DECIMAL_SI},
    {"1080000000n", "1080m", GS_QF_DECIMAL_SI},
    {"1.1Ki", "1126400m", GS_QF_BINARY_SI},
    {".001Ki", "1024m", GS_QF_BINARY_SI},
    {"1024Mi", "1Gi", GS_QF_BINARY_SI},
    {"1.5Gi", "1536Mi", GS_QF_BINARY_SI},
    {"0.5Mi", "512Ki", GS_QF_BINARY_SI},
    {"1025Ki", "1025Ki", GS_QF_BINARY_SI},
    {"1.5Ki", "1536", GS_QF_BINARY_SI},
    {".001e12", "1e9", GS_QF_DECIMAL_EXP},
    {"0.001e0", "1e-3", GS_QF_DECIMAL_EXP},
    {"1.5e3", "1500", GS_QF_DECIMAL_EXP},
    /* section 2.2: rounding up to nanos, caps, BinarySI below 1 */
    {"0.5n", "1n", GS_QF_DECIMAL_SI},
    {"3.001n", "4n", GS_QF_DECIMAL_SI},
    {"0.00000012345", "124n", GS_QF_DECIMAL_SI},
    {"-0.5n", "-1n", GS_QF_DECIMAL_SI},
    {"8Ei", "9223372036854775807", GS_QF_BINARY_SI},
    {"9Ei", "9223372036854775807", GS_QF_BINARY_SI},
    {"-9Ei", "-9223372036854775807", GS_QF_BINARY_SI},
    {"9223372036854775807Ki", "9223372036854775807", GS_QF_BINARY_SI},
    {"7Ei", "7Ei", GS_QF_BINARY_SI},
    {"12E", "12E", GS_QF_DECIMAL_SI},
    {"10E", "10E", GS_QF_DECIMAL_SI},
    {"0.000000000001Ki", "2n", GS_QF_DECIMAL_SI},
    {"-0.000000000001Ki", "-2n", GS_QF_DECIMAL_SI},
    {"0.5Ki", "512", GS_QF_BINARY_SI},
    /* section 2.1: empty mantissas are zero */
    {"0", "0", GS_QF_DECIMAL_SI},
    {"-0", "0", GS_QF_DECIMAL_SI},
    {"+0", "0", GS_QF_DECIMAL_SI},
    {".", "0", GS_QF_DECIMAL_SI},
    {"-.", "0", GS_QF_DECIMAL_SI},
    {"+", "0", GS_QF_DECIMAL_SI},
    {"-", "0", GS_QF_DECIMAL_SI},
    {"0.", "0", GS_QF_DECIMAL_SI},
    {"e3", "0", GS_QF_DECIMAL_EXP},
    {"Ki", "0", GS_QF_BINARY_SI},
    {"Ti", "0", GS_QF_BINARY_SI},
    {"0e-10", "0", GS_QF_DECIMAL_EXP},
    {"000", "0", GS_QF_DECIMAL_SI},
    /* the "cached text" quirk is not reproduced: these print recomputed */
    {"+1", "1", GS_QF_DECIMAL_SI},
    {"1.", "1", GS_QF_DECIMAL_SI},
    {"1.G", "1G", GS_QF_DECIMAL_SI},
    {"100.035k", "100035", GS_QF_DECIMAL_SI},
    {"1e+3", "1e3", GS_QF_DECIMAL_EXP},
    {"1E3", "1e3", GS_QF_DECIMAL_EXP},
    /* E alone is exa; E with digits is an exponent */
    {"1E", "1E", GS_QF_DECIMAL_SI},
    {"1E-3", "1e-3", GS_QF_DECIMAL_EXP},
    {"1e-9", "1e-9", GS_QF_DECIMAL_EXP},
    {"5e-10", "1e-9", GS_QF_DECIMAL_EXP},
    {"1e0", "1", GS_QF_DECIMAL_EXP},
    {"10e1", "100", GS_QF_DECIMAL_EXP},
    {"1e2", "100", GS_QF_DECIMAL_EXP},
    {"1e-700", "1e-9", GS_QF_DECIMAL_EXP},
    /* the exponent is narrowed to int32 as upstream's int32() conversion does */
    {"1e4294967296", "1", GS_QF_DECIMAL_EXP},
    {"1e4294967299", "1e3", GS_QF_DECIMAL_EXP},
    /* plain decimal SI */
    {"1", "1", GS_QF_DECIMAL_SI},
    {"1000", "1k", GS_QF_DECIMAL_SI},
    {"1001", "1001", GS_QF_DECIMAL_SI},
    {"1000m", "1", GS_QF_DECIMAL_SI},
    {"100m", "100m", GS_QF_DECIMAL_SI},
    {"1000u", "1m", GS_QF_DECIMAL_SI},
    {"1u", "1u", GS_QF_DECIMAL_SI},
    {"10n", "10n", GS_QF_DECIMAL_SI},
    {"0.01", "10m", GS_QF_DECIMAL_SI},
    {"1234567k", "1234567k", GS_QF_DECIMAL_SI},
    {"1P", "1P", GS_QF_DECIMAL_SI},
    {"1000P", "1E", GS_QF_DECIMAL_SI},
    {"1000E", "1000E", GS_QF_DECIMAL_SI},
    {"-1.5", "-1500m", GS_QF_DECIMAL_SI},
    {"007", "7", GS_QF_DECIMAL_SI},
    {"123456789012345678901234567890", "123456789012345678901234567890", GS_QF_DECIMAL_SI},
    {"0.000000000000000000000000000000000000000000000001", "1n", GS_QF_DECIMAL_SI},
    {"1.0000000000000000000000000000000000000000000000001", "1000000001n", GS_QF_DECIMAL_SI},
    /* binary SI */
    {"1Ki", "1Ki", GS_QF_BINARY_SI},
    {"1024", "1024", GS_QF_DECIMAL_SI},
    {"1024Ki", "1Mi", GS_QF_BINARY_SI},
    {"1Mi", "1Mi", GS_QF_BINARY_SI},
    {"-1Ki", "-1Ki", GS_QF_BINARY_SI},
    {"-1.5Ki", "-1536", GS_QF_BINARY_SI},
    {"1023.5Ki", "1048064", GS_QF_BINARY_SI},
    {"0.999Ki", "1022976m", GS_QF_BINARY_SI},
    {"1Ei", "1Ei", GS_QF_BINARY_SI},
    {"4Ei", "4Ei", GS_QF_BINARY_SI},
    {"1.0000000000000000000000000000000000000001Ki", "1024000000001n", GS_QF_BINARY_SI},
    {"99999999999999999999999999999999999999999999Ei", "9223372036854775807",
     GS_QF_BINARY_SI},
};

static void test_canonical_vectors(void **state)
{
    (void)state;
    char buf[GS_QUANTITY_STR_MAX];
    for (size_t i = 0; i < sizeof valid_vectors / sizeof valid_vectors[0]; i++) {
        const vector *v = &valid_vectors[i];
        gs_quantity q = parse_ok(v->in);
        size_t n = gs_quantity_format(&q, buf, sizeof buf);
        if (strcmp(buf, v->canonical) != 0 || q.fmt != v->fmt || n != strlen(buf))
            fail_msg("\"%s\": got \"%s\" fmt %d, want \"%s\" fmt %d", v->in, buf, (int)q.fmt,
                     v->canonical, (int)v->fmt);
        /* the canonical form parses back to the same value */
        gs_quantity back = parse_ok(buf);
        assert_int_equal(gs_quantity_cmp(&q, &back), 0);
    }
}

typedef struct bad_vector {
    const char *in;
    gs_code code;
    const char *msg_prefix;
} bad_vector;

#define FORMAT_MSG "quantities must match the regular expression"
#define SUFFIX_MSG "unable to parse quantity's suffix"
#define NUMERIC_MSG "unable to parse quantity's numeric value"
#define LIMIT_MSG "quantity too large"

static const bad_vector invalid_vectors[] = {
    {"", GS_ERR_INVALID, FORMAT_MSG},
    {" 1", GS_ERR_INVALID, FORMAT_MSG},
    {"1 ", GS_ERR_INVALID, FORMAT_MSG},
    {"1 Gi", GS_ERR_INVALID, FORMAT_MSG},
    {"1KB", GS_ERR_INVALID, FORMAT_MSG},
    {"1Kib", GS_ERR_INVALID, FORMAT_MSG},
    {"1gi", GS_ERR_INVALID, FORMAT_MSG},
    {"1.2.3", GS_ERR_INVALID, FORMAT_MSG},
    {"1e3e", GS_ERR_INVALID, FORMAT_MSG},
    {"1_000", GS_ERR_INVALID, FORMAT_MSG},
    {"0x10", GS_ERR_INVALID, FORMAT_MSG},
    {"1,5", GS_ERR_INVALID, FORMAT_MSG},
    {"1µ", GS_ERR_INVALID, FORMAT_MSG},
    {"abc", GS_ERR_INVALID, FORMAT_MSG},
    {"K", GS_ERR_INVALID, SUFFIX_MSG},
    {"1K", GS_ERR_INVALID, SUFFIX_MSG},
    {"1i", GS_ERR_INVALID, SUFFIX_MSG},
    {"0.1mi", GS_ERR_INVALID, SUFFIX_MSG},
    {"1e", GS_ERR_INVALID, SUFFIX_MSG},
    {"1e+", GS_ERR_INVALID, SUFFIX_MSG},
    {"--1", GS_ERR_INVALID, SUFFIX_MSG},
    {"+-1", GS_ERR_INVALID, SUFFIX_MSG},
    {"1ee3", GS_ERR_INVALID, SUFFIX_MSG},
    {"1EE", GS_ERR_INVALID, SUFFIX_MSG},
    {"1Ki3", GS_ERR_INVALID, SUFFIX_MSG},
    {"1k3", GS_ERR_INVALID, SUFFIX_MSG},
    {"1MiB", GS_ERR_INVALID, FORMAT_MSG},
    {"1e99999999999999999999", GS_ERR_INVALID, SUFFIX_MSG},
    {"e-10", GS_ERR_INVALID, NUMERIC_MSG},
    {".e-12", GS_ERR_INVALID, NUMERIC_MSG},
    {"Pi", GS_ERR_INVALID, NUMERIC_MSG},
    {"-.Ei", GS_ERR_INVALID, NUMERIC_MSG},
    {"1e30", GS_ERR_LIMIT, LIMIT_MSG},
    {"-1e30", GS_ERR_LIMIT, LIMIT_MSG},
    {"1e2147483647", GS_ERR_LIMIT, LIMIT_MSG},
    {"170141183460469231731687303715884105728n", GS_ERR_LIMIT, LIMIT_MSG},
    {"170141183460469231731687303715884105727.1n", GS_ERR_LIMIT, LIMIT_MSG},
};

static void test_rejects(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof invalid_vectors / sizeof invalid_vectors[0]; i++) {
        const bad_vector *v = &invalid_vectors[i];
        gs_quantity q = {42, GS_QF_BINARY_SI};
        gs_error err;
        gs_error_clear(&err);
        int rc = gs_quantity_parse(v->in, strlen(v->in), &q, &err);
        if (rc != -1 || err.code != v->code || strncmp(err.msg, v->msg_prefix, strlen(v->msg_prefix)))
            fail_msg("\"%s\": rc %d code %d msg \"%s\"", v->in, rc, (int)err.code, err.msg);
        assert_string_equal(err.file, "");
        assert_int_equal(err.line, 0);
    }
    /* the full upstream wording of the format error */
    gs_quantity q;
    gs_error err;
    assert_int_equal(gs_quantity_parse("1 ", 2, &q, &err), -1);
    assert_string_equal(err.msg, "quantities must match the regular expression "
                                 "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
    /* NULL err is allowed; embedded NUL is just a bad byte */
    assert_int_equal(gs_quantity_parse("1", 0, &q, NULL), -1);
    assert_int_equal(gs_quantity_parse("1\0", 2, &q, NULL), -1);
}

static void test_limits_exact(void **state)
{
    (void)state;
    gs_quantity q = parse_ok("170141183460469231731687303715884105727n");
    char buf[GS_QUANTITY_STR_MAX];
    gs_quantity_format(&q, buf, sizeof buf);
    assert_string_equal(buf, "170141183460469231731687303715884105727n");
    q = parse_ok("-170141183460469231731687303715884105727n");
    gs_quantity_format(&q, buf, sizeof buf);
    assert_string_equal(buf, "-170141183460469231731687303715884105727n");
    assert_int_equal(gs_quantity_value(&q), INT64_MIN);
    /* the BinarySI cap is exactly 2^63-1 units */
    q = parse_ok("8Ei");
    assert_int_equal(gs_quantity_value(&q), INT64_MAX);
    gs_quantity under = parse_ok("9223372036854775806Ki");
    assert_int_equal(gs_quantity_cmp(&under, &q), 0);
    gs_quantity exact = parse_ok("9223372036854775807");
    assert_int_equal(gs_quantity_cmp(&exact, &q), 0);
    /* 12E is above int64 and is not capped */
    q = parse_ok("12E");
    gs_quantity big = parse_ok("12000000000000000000");
    assert_int_equal(gs_quantity_cmp(&q, &big), 0);
    assert_int_equal(gs_quantity_cmp(&q, &exact), 1);
}

static void test_value_rounding(void **state)
{
    (void)state;
    gs_quantity q = parse_ok("1.5");
    assert_int_equal(gs_quantity_value(&q), 2);
    assert_int_equal(gs_quantity_milli(&q), 1500);
    q = parse_ok("-1.5");
    assert_int_equal(gs_quantity_value(&q), -2);
    assert_int_equal(gs_quantity_milli(&q), -1500);
    q = parse_ok("0.1m");
    assert_int_equal(gs_quantity_milli(&q), 1);
    assert_int_equal(gs_quantity_value(&q), 1);
    q = parse_ok("-0.1m");
    assert_int_equal(gs_quantity_milli(&q), -1);
    q = parse_ok("1n");
    assert_int_equal(gs_quantity_value(&q), 1);
    assert_int_equal(gs_quantity_milli(&q), 1);
    q = parse_ok("2");
    assert_int_equal(gs_quantity_value(&q), 2);
    assert_int_equal(gs_quantity_milli(&q), 2000);
    q = parse_ok("1Gi");
    assert_int_equal(gs_quantity_value(&q), 1073741824);
    q = parse_ok("12E");
    assert_int_equal(gs_quantity_value(&q), INT64_MAX);
    assert_int_equal(gs_quantity_milli(&q), INT64_MAX);
    q = parse_ok("-12E");
    assert_int_equal(gs_quantity_value(&q), INT64_MIN);
    q = parse_ok("9223372036854775807");
    assert_int_equal(gs_quantity_value(&q), INT64_MAX);
    assert_int_equal(gs_quantity_milli(&q), INT64_MAX);
    q = parse_ok("-9223372036854775808");
    assert_int_equal(gs_quantity_value(&q), INT64_MIN);
    q = parse_ok("-9223372036854775809");
    assert_int_equal(gs_quantity_value(&q), INT64_MIN);
    q = parse_ok("0");
    assert_int_equal(gs_quantity_value(&q), 0);
    assert_true(gs_quantity_is_zero(&q));
}

static void test_is_integer(void **state)
{
    (void)state;
    gs_quantity q = parse_ok("2");
    assert_true(gs_quantity_is_integer(&q));
    q = parse_ok("1.5");
    assert_false(gs_quantity_is_integer(&q));
    q = parse_ok("0.0001");
    assert_false(gs_quantity_is_integer(&q));
    q = parse_ok("2000m");
    assert_true(gs_quantity_is_integer(&q));
    /* upstream's MilliValue() % 1000 rounds up first: 1.9999999 -> 2000m counts */
    q = parse_ok("1.9999999");
    assert_true(gs_quantity_is_integer(&q));
    q = parse_ok("-3");
    assert_true(gs_quantity_is_integer(&q));
    q = parse_ok("12E");
    assert_true(gs_quantity_is_integer(&q));
}

static void test_cmp_add_sub(void **state)
{
    (void)state;
    gs_quantity gi = parse_ok("1Gi"), plain = parse_ok("1073741824"), g = parse_ok("1G");
    assert_int_equal(gs_quantity_cmp(&gi, &plain), 0);
    assert_int_equal(gs_quantity_cmp(&gi, &g), 1);
    assert_int_equal(gs_quantity_cmp(&g, &gi), -1);
    gs_quantity exp = parse_ok("1e9");
    assert_int_equal(gs_quantity_cmp(&g, &exp), 0);
    gs_quantity milli = parse_ok("1500m"), dec = parse_ok("1.5");
    assert_int_equal(gs_quantity_cmp(&milli, &dec), 0);

    char buf[GS_QUANTITY_STR_MAX];
    gs_quantity sum = gs_quantity_add(gi, parse_ok("512Mi"));
    assert_int_equal(sum.fmt, GS_QF_BINARY_SI);
    gs_quantity_format(&sum, buf, sizeof buf);
    assert_string_equal(buf, "1536Mi");
    gs_quantity diff = gs_quantity_sub(parse_ok("1"), parse_ok("1500m"));
    gs_quantity_format(&diff, buf, sizeof buf);
    assert_string_equal(buf, "-500m");
    diff = gs_quantity_sub(parse_ok("3"), parse_ok("3000m"));
    assert_true(gs_quantity_is_zero(&diff));
    gs_quantity_format(&diff, buf, sizeof buf);
    assert_string_equal(buf, "0");
    /* exact at nano precision */
    sum = gs_quantity_add(parse_ok("1n"), parse_ok("1E"));
    gs_quantity_format(&sum, buf, sizeof buf);
    assert_string_equal(buf, "1000000000000000000000000001n");
    /* beyond int64, still exact */
    sum = gs_quantity_add(parse_ok("8E"), parse_ok("8E"));
    gs_quantity_format(&sum, buf, sizeof buf);
    assert_string_equal(buf, "16E");
    /* 128-bit saturation instead of wrap-around */
    gs_quantity top = parse_ok("170141183460469231731687303715884105727n");
    sum = gs_quantity_add(top, parse_ok("1n"));
    assert_int_equal(gs_quantity_cmp(&sum, &top), 0);
    diff = gs_quantity_sub(gs_quantity_sub(parse_ok("0"), top), parse_ok("5"));
    assert_true(diff.nanos < 0);
    assert_int_equal(gs_quantity_value(&diff), INT64_MIN);
}

static void test_constructors_and_format_cap(void **state)
{
    (void)state;
    char buf[GS_QUANTITY_STR_MAX];
    gs_quantity q = gs_quantity_from_int(3, GS_QF_DECIMAL_SI);
    gs_quantity_format(&q, buf, sizeof buf);
    assert_string_equal(buf, "3");
    q = gs_quantity_from_int(2048, GS_QF_BINARY_SI);
    gs_quantity_format(&q, buf, sizeof buf);
    assert_string_equal(buf, "2Ki");
    q = gs_quantity_from_milli(1500, GS_QF_DECIMAL_SI);
    gs_quantity_format(&q, buf, sizeof buf);
    assert_string_equal(buf, "1500m");
    q = gs_quantity_from_milli(-250, GS_QF_DECIMAL_EXP);
    gs_quantity_format(&q, buf, sizeof buf);
    assert_string_equal(buf, "-250e-3");
    q = gs_quantity_from_int(INT64_MIN, GS_QF_DECIMAL_SI);
    assert_int_equal(gs_quantity_value(&q), INT64_MIN);
    /* truncation: writes cap-1 bytes and a NUL, returns what it wrote */
    q = gs_quantity_from_milli(1500, GS_QF_DECIMAL_SI);
    char small[3] = {'x', 'x', 'x'};
    assert_int_equal(gs_quantity_format(&q, small, sizeof small), 2);
    assert_string_equal(small, "15");
    assert_int_equal(gs_quantity_format(&q, small, 0), 0);
    /* the longest possible output fits */
    q.nanos = -(__int128)(((unsigned __int128)1 << 127) - 1) - 1;
    q.fmt = GS_QF_DECIMAL_EXP;
    size_t n = gs_quantity_format(&q, buf, sizeof buf);
    assert_true(n < GS_QUANTITY_STR_MAX);
    assert_string_equal(buf, "-170141183460469231731687303715884105728e-9");
}

static void test_round_trip_sweep(void **state)
{
    (void)state;
    /* Every format, every scale: canonical text re-parses to the same value. */
    static const char *const suffixes[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E",
                                           "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e-7", "e5"};
    static const char *const mantissas[] = {"1", "7", "1.5", "0.001", "999.999", "123456789",
                                            "-3.25", ".0000001", "1023", "1024", "4096.5"};
    char in[64], buf[GS_QUANTITY_STR_MAX];
    for (size_t i = 0; i < sizeof mantissas / sizeof mantissas[0]; i++)
        for (size_t j = 0; j < sizeof suffixes / sizeof suffixes[0]; j++) {
            snprintf(in, sizeof in, "%s%s", mantissas[i], suffixes[j]);
            gs_quantity q = parse_ok(in);
            gs_quantity_format(&q, buf, sizeof buf);
            gs_quantity back = parse_ok(buf);
            if (gs_quantity_cmp(&q, &back) != 0)
                fail_msg("\"%s\" -> \"%s\" does not round-trip", in, buf);
            /* formatting is idempotent */
            char again[GS_QUANTITY_STR_MAX];
            back.fmt = q.fmt;
            gs_quantity_format(&back, again, sizeof again);
            assert_string_equal(buf, again);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_canonical_vectors),
        cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_limits_exact),
        cmocka_unit_test(test_value_rounding),
        cmocka_unit_test(test_is_integer),
        cmocka_unit_test(test_cmp_add_sub),
        cmocka_unit_test(test_constructors_and_format_cap),
        cmocka_unit_test(test_round_trip_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
