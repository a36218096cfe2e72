/* test_csv.c - the shared RFC 4180 record splitter (lib/util/csv.c): fields, quoting,
 * positions, line ends, bounds and syntax errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "util/csv_int.h"

/* The records of text joined as "f1|f2;f1|f2;" with each field's line:col after it when
 * pos is set. */
static void records(const char *text, size_t len, bool pos, char *out, size_t cap)
{
    gs_csv c;
    gs_error err;
    gs_csv_init(&c, "t.csv", text, len, 0, 0, &err);
    size_t o = 0;
    out[0] = '\0';
    for (;;) {
        bool eof;
        assert_int_equal(gs_csv_next(&c, &eof), 0);
        if (eof)
            break;
        for (uint32_t i = 0; i < c.nfields; i++) {
            assert_int_equal(strlen(gs_csv_text(&c, i)), c.fields[i].len);
            o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? "|" : "", gs_csv_text(&c, i));
            if (pos)
                o += (size_t)snprintf(out + o, cap - o, "@%u:%u", c.fields[i].line, c.fields[i].col);
        }
        o += (size_t)snprintf(out + o, cap - o, ";");
    }
    gs_csv_free(&c);
}

static void test_fields(void **state)
{
    (void)state;
    char out[512];
    records("a,b,c\n1,,3\n", 11, false, out, sizeof out);
    assert_string_equal(out, "a|b|c;1||3;");
    /* no final line end; a trailing comma is an empty last field */
    records("a,b\nx,", 6, false, out, sizeof out);
    assert_string_equal(out, "a|b;x|;");
    /* quotes: commas, "" escapes, line ends inside */
    const char *q = "\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",\"\"\n";
    records(q, strlen(q), false, out, sizeof out);
    assert_string_equal(out, "a,b|say \"hi\"|two\nlines|;");
    /* CRLF, empty lines (counted), a byte-order mark */
    const char *crlf = "\xEF\xBB\xBFh1,h2\r\n\r\n\nv1,\"v\r\n2\"\r\nw1,w2";
    records(crlf, strlen(crlf), true, out, sizeof out);
    assert_string_equal(out, "h1@1:1|h2@1:4;v1@4:1|v\r\n2@4:4;w1@6:1|w2@6:4;");
    records("", 0, false, out, sizeof out);
    assert_string_equal(out, "");
    records("\n\r\n", 3, false, out, sizeof out);
    assert_string_equal(out, "");
}

static void expect_error(const char *text, size_t len, uint32_t max_fields, uint32_t max_bytes,
                         gs_code code, int line, int col, const char *needle)
{
    gs_csv c;
    gs_error err;
    gs_error_clear(&err);
    gs_csv_init(&c, "t.csv", text, len, max_fields, max_bytes, &err);
    int rc = 0;
    for (;;) {
        bool eof;
        rc = gs_csv_next(&c, &eof);
        if (rc != 0 || eof)
            break;
    }
    if (rc == 0 || err.code != code || err.line != line || err.col != col || !strstr(err.msg, needle))
        print_error("%s -> rc %d code %d %d:%d %s\n", text, rc, err.code, err.line, err.col, err.msg);
    assert_int_equal(rc, -1);
    assert_int_equal(err.code, code);
    assert_int_equal(err.line, line);
    assert_int_equal(err.col, col);
    assert_non_null(strstr(err.msg, needle));
    assert_string_equal(err.file, "t.csv");
    gs_csv_free(&c);
    /* without an error object the failure is still returned */
    gs_csv_init(&c, "t.csv", text, len, max_fields, max_bytes, NULL);
    for (;;) {
        bool eof;
        rc = gs_csv_next(&c, &eof);
        if (rc != 0 || eof)
            break;
    }
    assert_int_equal(rc, -1);
    gs_csv_free(&c);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("a,b\n1,\"x\n", 9, 0, 0, GS_ERR_PARSE, 2, 3, "unterminated quoted field");
    expect_error("a,b\n1,x\"y\n", 10, 0, 0, GS_ERR_PARSE, 2, 4, "quote inside an unquoted field");
    expect_error("a,\"b\"c\n", 7, 0, 0, GS_ERR_PARSE, 1, 6, "after a closing quote");
    expect_error("a\rb\n", 4, 0, 0, GS_ERR_PARSE, 1, 2, "carriage return");
    expect_error("a,b\0c\n", 6, 0, 0, GS_ERR_PARSE, 1, 4, "NUL byte");
    expect_error("a,\"b\0\"\n", 7, 0, 0, GS_ERR_PARSE, 1, 5, "NUL byte");
    /* a quoted field over lines moves the line count */
    expect_error("\"a\nb\",c\"\n", 9, 0, 0, GS_ERR_PARSE, 2, 5, "quote inside");
    /* bounds */
    expect_error("a,b,c,d\n", 8, 3, 0, GS_ERR_LIMIT, 1, 7, "more than 3 columns");
    expect_error("ab,abcdef\n", 10, 0, 4, GS_ERR_LIMIT, 1, 4, "field longer than 4 bytes");
    expect_error("\"abcdef\"\n", 9, 0, 4, GS_ERR_LIMIT, 1, 1, "field longer than 4 bytes");
    char wide[200];
    size_t n = 0;
    for (int i = 0; i < GS_CSV_MAX_FIELDS + 1; i++)
        n += (size_t)snprintf(wide + n, sizeof wide - n, "%sx", i ? "," : "");
    expect_error(wide, n, 1000, 0, GS_ERR_LIMIT, 1, 2 * GS_CSV_MAX_FIELDS + 1, "more than 64 columns");
}

/* Fields longer than the first buffer grow it; every field keeps its own text. */
static void test_large_record(void **state)
{
    (void)state;
    char text[20000];
    size_t n = 0;
    for (int i = 0; i < 8; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%s\"%0*d\"", i ? "," : "", 2000, i);
    gs_csv c;
    gs_error err;
    gs_csv_init(&c, "t.csv", text, n, 0, 0, &err);
    bool eof;
    assert_int_equal(gs_csv_next(&c, &eof), 0);
    assert_false(eof);
    assert_int_equal(c.nfields, 8);
    for (uint32_t i = 0; i < 8; i++) {
        assert_int_equal(c.fields[i].len, 2000);
        assert_int_equal(gs_csv_text(&c, i)[1999], (char)('0' + i));
        assert_int_equal(c.fields[i].col, 1 + i * 2003);
    }
    assert_int_equal(gs_csv_next(&c, &eof), 0);
    assert_true(eof);
    gs_csv_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_large_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
